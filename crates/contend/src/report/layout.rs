//! Format-neutral layout: what every table format (text, Markdown, LaTeX,
//! CSV) draws. A report is a list of [`Panel`]s (a titled table, list,
//! warnings or paragraph); cells keep raw values (counts, nanoseconds,
//! fractions) and each format decides how to print them. The sections of
//! the analyses build their panels with these types and helpers; the
//! run header, the warnings and the comparison tables are built here.

use super::compared::{
    ComparedItem, ComparedList, ComparedMetric, ComparedPart, Metric, MetricGroup, Unit,
};
use super::fmt::{self, Style};
use super::model::{Report, RunInfo};
use super::{RenderOptions, TimeUnit};

/// One table cell.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    /// Nothing (an item missing from a run).
    Empty,
    /// Free text (names, paths); formats escape it.
    Text(String),
    /// A count.
    Count(u64),
    /// A duration, ns.
    Ns(u64),
    /// A share in [0, 1].
    Fraction(f64),
    /// A real number shown with two decimals (an average number of
    /// threads, a run-queue length).
    Real(f64),
    /// A per cent change; `None` = undefined (base 0), printed `n/a`.
    Change(Option<f64>),
    /// A real number with the given decimals, sign kept (ω, seconds of
    /// the speed-up model, which may be negative).
    Decimal(f64, usize),
}

impl Cell {
    /// A value of the given unit; `None` gives an empty cell.
    pub fn metric(value: Option<f64>, unit: Unit) -> Cell {
        match (value, unit) {
            (None, _) => Cell::Empty,
            (Some(v), Unit::Count) => Cell::Count(v.round() as u64),
            (Some(v), Unit::Ns) => Cell::Ns(v.round() as u64),
            (Some(v), Unit::Fraction) => Cell::Fraction(v),
            (Some(v), Unit::Number) => Cell::Real(v),
        }
    }

    /// Human form; `escape` is applied to free text only.
    pub(crate) fn display(
        &self,
        unit: TimeUnit,
        st: &Style,
        escape: impl Fn(&str) -> String,
    ) -> String {
        match self {
            Cell::Empty => String::new(),
            Cell::Text(s) => escape(s),
            Cell::Count(n) => fmt::int(*n, st),
            Cell::Ns(ns) => fmt::duration(*ns as f64, unit, st),
            Cell::Fraction(f) => fmt::percent(*f, st),
            Cell::Real(x) => format!("{x:.2}"),
            Cell::Change(c) => fmt::change(*c, st),
            Cell::Decimal(x, d) => {
                // A value that rounds to zero has no sign (never "-0.00").
                let s = format!("{x:.d$}");
                match s.strip_prefix('-') {
                    Some(rest) if rest.chars().all(|c| c == '0' || c == '.') => rest.to_string(),
                    _ => s,
                }
            }
        }
    }

    /// Human form in plain typography and automatic time units, as a
    /// sentence quotes it (`1.499 ms`, `3,228,304`, `0.01 %`).
    pub(crate) fn plain(&self) -> String {
        self.display(TimeUnit::Auto, &fmt::PLAIN, str::to_string)
    }

    /// Machine form: integers, raw nanoseconds, fractions; empty for
    /// nothing and for an undefined change.
    pub fn raw(&self) -> String {
        match self {
            Cell::Empty | Cell::Change(None) => String::new(),
            Cell::Text(s) => s.clone(),
            Cell::Count(n) | Cell::Ns(n) => n.to_string(),
            Cell::Fraction(f) | Cell::Real(f) | Cell::Decimal(f, _) => f.to_string(),
            Cell::Change(Some(c)) => c.to_string(),
        }
    }
}

/// A table column.
#[derive(Debug, Clone, PartialEq)]
pub struct Column {
    /// Heading shown to people.
    pub title: String,
    /// Machine name (CSV `column`): the model's field name where there is one.
    pub key: String,
    /// Right-aligned numbers.
    pub numeric: bool,
    /// Long free text (a lock's call sites): the text format lists it below
    /// the table instead of in a column.
    pub detail: bool,
    /// A human label of the row whose key already names it (a metric's
    /// label): left out of CSV.
    pub label: bool,
    /// What the heading means, with its unit, in one line (`A meas.` →
    /// average number of active threads measured, …): the text format
    /// prints it under the first table that uses the heading.
    pub legend: Option<String>,
    /// Long names (MPI call sites and regions): the text format wraps them
    /// over several lines of the column instead of shortening them.
    pub wrap: bool,
}

impl Column {
    /// A column of free text (left-aligned).
    pub fn text(title: &str, key: &str) -> Column {
        Column {
            title: title.to_string(),
            key: key.to_string(),
            numeric: false,
            detail: false,
            label: false,
            legend: None,
            wrap: false,
        }
    }

    /// A column of long names that the text format wraps rather than
    /// shortens.
    pub fn wrapped(title: &str, key: &str) -> Column {
        Column {
            wrap: true,
            ..Column::text(title, key)
        }
    }

    /// The column with a legend: what its heading means and its unit.
    pub fn explained(mut self, legend: &str) -> Column {
        self.legend = Some(legend.to_string());
        self
    }

    /// A column of numbers (right-aligned).
    pub fn num(title: &str, key: &str) -> Column {
        Column {
            numeric: true,
            ..Column::text(title, key)
        }
    }

    /// The human label of a row whose key already names it (left out of
    /// CSV).
    pub fn label(title: &str, key: &str) -> Column {
        Column {
            label: true,
            ..Column::text(title, key)
        }
    }
}

/// A table row.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// Identity of the row within its section (CSV `key`).
    pub key: String,
    /// One cell per column.
    pub cells: Vec<Cell>,
}

/// A table.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Table {
    /// Columns.
    pub columns: Vec<Column>,
    /// Rows, each with one cell per column.
    pub rows: Vec<Row>,
    /// Rows left out by `top`.
    pub omitted: usize,
    /// Columns of nanoseconds the text format also draws as bars, all on
    /// one scale.
    pub bars: Vec<usize>,
    /// A field/value list (the run header): text prints it without a
    /// heading row or rules.
    pub fields: bool,
}

/// What a panel holds.
#[derive(Debug, Clone, PartialEq)]
pub enum Body {
    /// A table.
    Table(Table),
    /// Warnings: shown first and prominently.
    Warnings(Vec<String>),
    /// A plain list.
    List(Vec<String>),
    /// A sentence shown instead of tables.
    Paragraph(String),
}

/// A titled part of a report as the table formats draw it: a table, a
/// list, warnings or a paragraph.
#[derive(Debug, Clone, PartialEq)]
pub struct Panel {
    /// Machine name (CSV `section`, LaTeX label).
    pub id: &'static str,
    /// Short heading.
    pub title: String,
    /// A sentence explaining the section (LaTeX caption, Markdown note).
    pub caption: String,
    /// Content.
    pub body: Body,
}

impl Panel {
    /// A panel; `id` is its machine name (CSV `section`, LaTeX label).
    pub fn new(id: &'static str, title: &str, caption: &str, body: Body) -> Panel {
        Panel {
            id,
            title: title.to_string(),
            caption: caption.to_string(),
            body,
        }
    }
}

impl Table {
    /// The table without its columns in which every cell is empty (a
    /// spread over repeats that were not made, a model that has no value):
    /// the human formats leave them out.
    pub fn without_empty_columns(&self) -> Table {
        let keep: Vec<usize> = (0..self.columns.len())
            .filter(|&j| {
                self.rows.is_empty()
                    || self
                        .rows
                        .iter()
                        .any(|r| r.cells.get(j).is_some_and(|c| *c != Cell::Empty))
            })
            .collect();
        if keep.len() == self.columns.len() {
            return self.clone();
        }
        Table {
            columns: keep.iter().map(|&j| self.columns[j].clone()).collect(),
            rows: self
                .rows
                .iter()
                .map(|r| Row {
                    key: r.key.clone(),
                    cells: keep.iter().map(|&j| r.cells[j].clone()).collect(),
                })
                .collect(),
            omitted: self.omitted,
            bars: keep
                .iter()
                .enumerate()
                .filter(|(_, &j)| self.bars.contains(&j))
                .map(|(i, _)| i)
                .collect(),
            fields: self.fields,
        }
    }
}

/// The rows of `rows` that `top` keeps, and how many it leaves out.
pub fn take_top<T>(rows: &[T], top: usize) -> (&[T], usize) {
    if top == 0 || rows.len() <= top {
        (rows, 0)
    } else {
        (&rows[..top], rows.len() - top)
    }
}

/// Shell-like display of a command line.
pub fn command_line(args: &[String]) -> String {
    args.iter()
        .map(|a| {
            if !a.is_empty()
                && a.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c))
            {
                a.clone()
            } else {
                format!("'{}'", a.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// `0`, `killed by signal 9 (SIGKILL)` or `unknown`.
pub fn exit_status(exit_code: Option<i32>, signal: Option<i32>) -> String {
    match (exit_code, signal) {
        (Some(c), _) => c.to_string(),
        (None, Some(s)) => match signal_name(s) {
            Some(name) => format!("killed by signal {s} ({name})"),
            None => format!("killed by signal {s}"),
        },
        (None, None) => "unknown".to_string(),
    }
}

fn signal_name(sig: i32) -> Option<&'static str> {
    Some(match sig {
        1 => "SIGHUP",
        2 => "SIGINT",
        3 => "SIGQUIT",
        4 => "SIGILL",
        5 => "SIGTRAP",
        6 => "SIGABRT",
        7 => "SIGBUS",
        8 => "SIGFPE",
        9 => "SIGKILL",
        11 => "SIGSEGV",
        13 => "SIGPIPE",
        14 => "SIGALRM",
        15 => "SIGTERM",
        _ => return None,
    })
}

/// The run header: command, exit status, wall time, processes, threads,
/// CPUs, host, …, and the filters applied (one phrase each).
pub fn run_panel(run: &RunInfo, filters: &[String]) -> Panel {
    let texts = [
        ("host", "Host", run.host.clone()),
        ("cpu_model", "CPU model", run.cpu_model.clone()),
        ("start_utc", "Started (UTC)", run.start_utc.clone()),
        ("recording", "Recording", run.recording.clone()),
        ("tool_version", "contend version", run.tool_version.clone()),
        ("filters", "Filters", filters.join("; ")),
        (
            "limits",
            "Recorded",
            run.limits
                .as_ref()
                .map(|l| l.describe())
                .unwrap_or_default(),
        ),
    ];
    let mut fields = vec![
        ("command", "Command", Cell::Text(command_line(&run.command))),
        (
            "exit_status",
            "Exit status",
            Cell::Text(exit_status(run.exit_code, run.signal)),
        ),
        ("wall_ns", "Wall time", Cell::Ns(run.wall_ns)),
        (
            "processes",
            "Processes with lock traces",
            Cell::Count(run.processes.into()),
        ),
        (
            "threads",
            "Threads with lock operations",
            Cell::Count(run.threads.into()),
        ),
    ];
    if run.cpus > 0 {
        fields.push(("cpus", "CPUs", Cell::Count(run.cpus.into())));
    }
    fields.extend(
        texts
            .into_iter()
            .filter(|(_, _, v)| !v.is_empty())
            .map(|(k, l, v)| (k, l, Cell::Text(v))),
    );
    let rows = fields
        .into_iter()
        .map(|(key, label, cell)| Row {
            key: key.to_string(),
            cells: vec![Cell::Text(label.to_string()), cell],
        })
        .collect();
    let table = Table {
        columns: vec![
            Column::label("Field", "field"),
            Column::text("Value", "value"),
        ],
        rows,
        fields: true,
        ..Table::default()
    };
    Panel::new("run", "Run", "The recorded run.", Body::Table(table))
}

/// A two-column table (metric, value) of the metrics of `group`.
pub fn metric_table(metrics: &[Metric], group: MetricGroup) -> Table {
    let rows = metrics
        .iter()
        .filter(|m| m.group == group)
        .map(|m| Row {
            key: m.key.clone(),
            cells: vec![
                Cell::Text(m.label.clone()),
                Cell::metric(Some(m.value), m.unit),
            ],
        })
        .collect();
    Table {
        columns: vec![
            Column::label("Metric", "metric"),
            Column::num("Value", "value"),
        ],
        rows,
        ..Table::default()
    }
}

/// Seconds → a nanosecond cell.
pub fn seconds(s: f64) -> Cell {
    Cell::Ns((s.max(0.0) * 1e9).round() as u64)
}

/// Cells `value₁ value₂ change₂ value₃ change₃ …` of one compared metric:
/// the change is blank where either value is missing, `n/a` for base 0.
pub fn compared_cells(m: &ComparedMetric) -> Vec<Cell> {
    let mut cells = Vec::with_capacity(m.values.len() * 2);
    for (i, v) in m.values.iter().enumerate() {
        cells.push(Cell::metric(*v, m.unit));
        if i > 0 {
            let both = m.values[0].is_some() && v.is_some();
            cells.push(if both {
                Cell::Change(m.change_pct[i])
            } else {
                Cell::Empty
            });
        }
    }
    cells
}

/// Columns `label₁ label₂ Change label₃ Change …`.
pub fn compared_columns(runs: &[String]) -> Vec<Column> {
    let mut cols = Vec::new();
    for (i, run) in runs.iter().enumerate() {
        cols.push(Column::num(run, run));
        if i > 0 {
            cols.push(Column::num("Change", &format!("{run}:change_pct")));
        }
    }
    cols
}

/// A comparison table of the metrics of `group` in `part`: one row per
/// metric, the runs' values and changes as columns.
pub fn compared_metric_table(part: &ComparedPart<'_>, group: MetricGroup) -> Table {
    let mut columns = vec![Column::label("Metric", "metric")];
    columns.extend(compared_columns(part.runs));
    let rows = part
        .metrics
        .iter()
        .filter(|m| m.group == group)
        .map(|m| {
            let mut cells = vec![Cell::Text(m.label.clone())];
            cells.extend(compared_cells(m));
            Row {
                key: m.key.clone(),
                cells,
            }
        })
        .collect();
    Table {
        columns,
        rows,
        ..Table::default()
    }
}

/// A comparison table of items (locks, call sites, ranks): one row per
/// item and metric, the item's name and `kind` on its first row, the top
/// `top` items by their first metric. `what` and `kind` are the headers of
/// the first two columns.
pub fn compared_item_table(
    runs: &[String],
    items: &[ComparedItem],
    what: &str,
    kind: &str,
    top: usize,
) -> Table {
    let mut columns = vec![
        Column::text(what, "name"),
        Column::text(kind, "kind"),
        Column::text("Metric", "metric"),
    ];
    columns.extend(compared_columns(runs));
    let shown: Vec<&ComparedItem> = items.iter().filter(|it| it.in_top(top)).collect();
    let mut rows = Vec::new();
    for item in &shown {
        for (j, m) in item.metrics.iter().enumerate() {
            let (name, kind) = if j == 0 {
                (Cell::Text(item.name.clone()), Cell::Text(item.kind.clone()))
            } else {
                (Cell::Empty, Cell::Empty)
            };
            let mut cells = vec![name, kind, Cell::Text(m.label.clone())];
            cells.extend(compared_cells(m));
            rows.push(Row {
                key: format!("{}/{}", item.name, m.key),
                cells,
            });
        }
    }
    Table {
        columns,
        rows,
        omitted: items.len() - shown.len(),
        ..Table::default()
    }
}

/// The id of the "At a glance" panel of reports and comparisons, which
/// HTML shows before the figures and CSV leaves out.
pub const AT_A_GLANCE: &str = "at_a_glance";

/// The "At a glance" panel listing `lines` under `caption`; none without
/// lines.
pub fn at_a_glance(caption: &str, lines: Vec<String>) -> Option<Panel> {
    (!lines.is_empty()).then(|| Panel::new(AT_A_GLANCE, "At a glance", caption, Body::List(lines)))
}

/// The panels of a report, in display order: the run header, the
/// warnings, "At a glance" (every section's
/// [`super::ReportSection::headlines`], when any has some, those of
/// sections whose headlines follow last), then each
/// section's panels in registration order, those that close a report
/// ([`super::ReportSection::closes_report`]) last.
pub fn report_panels(r: &Report, opts: &RenderOptions) -> Vec<Panel> {
    let filters: Vec<String> = r.sections().iter().flat_map(|s| s.filters()).collect();
    let mut out = vec![run_panel(&r.run, &filters)];
    if !r.warnings.is_empty() {
        out.push(Panel::new(
            "warnings",
            "Warnings",
            "Problems found while reading the recording.",
            Body::Warnings(r.warnings.clone()),
        ));
    }
    let mut glance: Vec<String> = Vec::new();
    for follow in [false, true] {
        for s in r
            .sections()
            .iter()
            .filter(|s| s.headlines_follow() == follow)
        {
            glance.extend(s.headlines());
        }
    }
    out.extend(at_a_glance(
        "The largest waits and losses of each analysis; the sections below give the detail.",
        glance,
    ));
    for closing in [false, true] {
        for s in r.sections().iter().filter(|s| s.closes_report() == closing) {
            out.extend(s.layout(opts));
        }
    }
    out
}

/// The default comparison layout of a section: one table per metric group
/// (in order of first appearance), then one table per item list; each
/// group's table titled by its key ([`titled_comparison_panels`] names
/// them).
pub fn default_comparison_panels(part: &ComparedPart<'_>, opts: &RenderOptions) -> Vec<Panel> {
    titled_comparison_panels(part, opts, &[])
}

/// The default comparison layout, with the (group, title, caption) of
/// `titles` for the tables of those groups (a group not in it is titled
/// by its key, with a generic caption).
pub fn titled_comparison_panels(
    part: &ComparedPart<'_>,
    opts: &RenderOptions,
    titles: &[(MetricGroup, &str, &str)],
) -> Vec<Panel> {
    let mut groups: Vec<MetricGroup> = Vec::new();
    for m in part.metrics {
        if !groups.contains(&m.group) {
            groups.push(m.group);
        }
    }
    let mut out: Vec<Panel> = groups
        .into_iter()
        .map(|g| {
            let (title, caption) = titles.iter().find(|&&(group, ..)| group == g).map_or(
                (g.0, "Each run and its change relative to the first."),
                |&(_, t, c)| (t, c),
            );
            Panel::new(
                g.0,
                title,
                caption,
                Body::Table(compared_metric_table(part, g)),
            )
        })
        .collect();
    out.extend(
        part.lists
            .iter()
            .map(|l| compared_list_panel(part, l, opts)),
    );
    out
}

/// The panel of one lined-up item list (its title, caption and column
/// headings from the [`super::ItemList`]).
pub fn compared_list_panel(
    part: &ComparedPart<'_>,
    l: &ComparedList,
    opts: &RenderOptions,
) -> Panel {
    Panel::new(
        l.list.key,
        l.list.title,
        l.list.caption,
        Body::Table(compared_item_table(
            part.runs,
            &l.items,
            l.list.item_heading,
            l.list.kind_heading,
            opts.top,
        )),
    )
}

/// The busiest of `counted` (count, text) as one phrase for a warning:
/// the `shown` texts with the largest counts (ties in text order), joined
/// by `sep`, then " and N more" for the rest. Every warning that names
/// the sites it counts (system headers, library futex sites, lock
/// wrappers) names them so.
pub(crate) fn busiest(mut counted: Vec<(u64, String)>, shown: usize, sep: &str) -> String {
    counted.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    let more = counted.len().saturating_sub(shown);
    let mut phrase = counted
        .into_iter()
        .take(shown)
        .map(|(_, t)| t)
        .collect::<Vec<_>>()
        .join(sep);
    if more > 0 {
        phrase.push_str(&format!(" and {more} more"));
    }
    phrase
}
