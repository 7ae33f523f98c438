//! The sections every table format draws, built once from a [`Report`] or a
//! [`Comparison`]. Cells keep raw values (counts, nanoseconds, fractions);
//! each format decides how to print them.

use super::fmt::{self, Style};
use super::model::{CountersReport, Report, ServiceReport};
use super::{RenderOptions, TimeUnit};
use crate::compare::{
    summary_metrics, ComparedItem, ComparedMetric, Comparison, Metric, MetricGroup, Unit,
};

/// One table cell.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Cell {
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
        }
    }

    /// Human form; `escape` is applied to free text only.
    pub fn display(&self, unit: TimeUnit, st: &Style, escape: impl Fn(&str) -> String) -> String {
        match self {
            Cell::Empty => String::new(),
            Cell::Text(s) => escape(s),
            Cell::Count(n) => fmt::int(*n, st),
            Cell::Ns(ns) => fmt::duration(*ns as f64, unit, st),
            Cell::Fraction(f) => fmt::percent(*f, st),
            Cell::Real(x) => format!("{x:.2}"),
            Cell::Change(c) => fmt::change(*c, st),
            Cell::Decimal(x, d) => format!("{x:.d$}"),
        }
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
pub(crate) struct Column {
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
}

impl Column {
    pub(crate) fn text(title: &str, key: &str) -> Column {
        Column {
            title: title.to_string(),
            key: key.to_string(),
            numeric: false,
            detail: false,
            label: false,
        }
    }

    pub(crate) fn num(title: &str, key: &str) -> Column {
        Column {
            numeric: true,
            ..Column::text(title, key)
        }
    }

    pub(crate) fn label(title: &str, key: &str) -> Column {
        Column {
            label: true,
            ..Column::text(title, key)
        }
    }
}

/// A table row.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Row {
    /// Identity of the row within its section (CSV `key`).
    pub key: String,
    /// One cell per column.
    pub cells: Vec<Cell>,
}

/// A table.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Table {
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

/// What a section holds.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Body {
    /// A table.
    Table(Table),
    /// Warnings: shown first and prominently.
    Warnings(Vec<String>),
    /// A plain list.
    List(Vec<String>),
    /// A sentence shown instead of tables.
    Paragraph(String),
}

/// A titled part of a report.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Section {
    /// Machine name (CSV `section`, LaTeX label).
    pub id: &'static str,
    /// Short heading.
    pub title: String,
    /// A sentence explaining the section (LaTeX caption, Markdown note).
    pub caption: String,
    /// Content.
    pub body: Body,
}

impl Section {
    fn new(id: &'static str, title: &str, caption: &str, body: Body) -> Section {
        Section {
            id,
            title: title.to_string(),
            caption: caption.to_string(),
            body,
        }
    }
}

/// The rows of `rows` that `top` keeps, and how many it leaves out.
fn take_top<T>(rows: &[T], top: usize) -> (&[T], usize) {
    if top == 0 || rows.len() <= top {
        (rows, 0)
    } else {
        (&rows[..top], rows.len() - top)
    }
}

/// Shell-like display of a command line.
pub(crate) fn command_line(args: &[String]) -> String {
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
pub(crate) fn exit_status(exit_code: Option<i32>, signal: Option<i32>) -> String {
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

fn run_section(r: &Report) -> Section {
    let run = &r.run;
    let texts = [
        ("host", "Host", run.host.clone()),
        ("cpu_model", "CPU model", run.cpu_model.clone()),
        ("start_utc", "Started (UTC)", run.start_utc.clone()),
        ("recording", "Recording", run.recording.clone()),
        ("tool_version", "contend version", run.tool_version.clone()),
        ("filters", "Filters", r.locks.filters.join("; ")),
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
    Section::new("run", "Run", "The recorded run.", Body::Table(table))
}

fn metric_table(metrics: &[Metric], group: MetricGroup) -> Table {
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

/// The sections of a report, in display order.
pub(crate) fn report_sections(r: &Report, opts: &RenderOptions) -> Vec<Section> {
    if let Some(s) = &r.speedup {
        return super::speedup_layout::report_sections(r, s);
    }
    let l = &r.locks;
    let mut out = vec![run_section(r)];
    if !r.warnings.is_empty() {
        out.push(Section::new(
            "warnings",
            "Warnings",
            "Problems found while reading the recording.",
            Body::Warnings(r.warnings.clone()),
        ));
    }
    if let Some(service) = &r.service {
        out.push(service_section(service));
        out.push(service_thread_section(service, opts.top));
    }
    if let Some(counters) = &r.counters {
        out.push(counters_section(counters));
    }
    out.extend(super::mpi_layout::report_sections(r, opts));
    let metrics = summary_metrics(r);
    if let Some(reason) = &l.no_events_reason {
        out.push(Section::new(
            "no_events",
            "No lock events",
            "Why there is nothing to report.",
            Body::Paragraph(reason.clone()),
        ));
    } else {
        out.push(Section::new(
            "summary",
            "Lock summary",
            "Lock events (mutex, rwlock and spinlock acquisitions) of the whole run (cf. Venter 2016, Table 4.9). \
             An event lasts from the request to the release: its wait ends when the lock is acquired, its hold \
             when it is released.",
            Body::Table(metric_table(&metrics, MetricGroup::Summary)),
        ));
        out.push(Section::new(
            "critical_path",
            "Critical path",
            "Lock events on the critical path of execution (cf. Venter 2016, Table 4.10); shares are of all \
             lock events.",
            Body::Table(metric_table(&metrics, MetricGroup::CriticalPath)),
        ));
    }
    if !l.other_waits.is_empty() {
        let rows = l
            .other_waits
            .iter()
            .map(|w| Row {
                key: w.kind.clone(),
                cells: vec![
                    Cell::Text(w.kind.clone()),
                    Cell::Count(w.events),
                    Cell::Count(w.contended_events),
                    Cell::Ns(w.wait_ns),
                    Cell::Ns(w.critical_wait_ns),
                    Cell::Count(w.timeouts),
                ],
            })
            .collect();
        let table = Table {
            columns: vec![
                Column::text("Kind", "kind"),
                Column::num("Waits", "events"),
                Column::num("Waited", "contended_events"),
                Column::num("Wait", "wait_ns"),
                Column::num("CP wait", "critical_wait_ns"),
                Column::num("Timeouts", "timeouts"),
            ],
            rows,
            ..Table::default()
        };
        out.push(Section::new(
            "other_waits",
            "Other waits",
            "Condition variable, barrier and semaphore waits; CP = on the critical path.",
            Body::Table(table),
        ));
    }
    if l.no_events_reason.is_none() {
        out.push(lock_section(r, opts.top));
        out.push(site_section(r, opts.top));
        out.push(thread_section(r, opts.top));
        out.push(histogram_section(r));
    }
    if !l.sites_without_debug_info.is_empty() {
        out.push(Section::new(
            "sites_without_debug_info",
            "Modules without debug information",
            "Call sites in these modules are shown as module+offset; install their debug symbols for file:line.",
            Body::List(l.sites_without_debug_info.clone()),
        ));
    }
    out
}

/// Seconds → a nanosecond cell.
fn seconds(s: f64) -> Cell {
    Cell::Ns((s.max(0.0) * 1e9).round() as u64)
}

fn service_section(s: &ServiceReport) -> Section {
    let fields = [
        ("wall_ns", "Wall time", seconds(s.wall_s)),
        ("cpu_ns", "Service (CPU) time", seconds(s.cpu_s)),
        (
            "cpu_per_wall",
            "CPU time / wall time",
            Cell::Real(s.cpu_per_wall),
        ),
        (
            "active_threads",
            "Active threads A, measured (Listing 3.3)",
            Cell::Real(s.active_threads),
        ),
        (
            "active_threads_modelled",
            "Active threads A, modelled on n CPUs (Listing 3.4)",
            Cell::Real(s.active_threads_modelled),
        ),
        ("cpus", "CPUs available (n)", Cell::Count(s.cpus.into())),
        (
            "run_queue_mean",
            "Run queue, mean",
            Cell::Real(s.run_queue_mean),
        ),
        (
            "run_queue_max",
            "Run queue, max",
            Cell::Count(s.run_queue_max.into()),
        ),
        (
            "processes",
            "Processes sampled",
            Cell::Count(s.processes.into()),
        ),
        (
            "threads",
            "Threads sampled",
            Cell::Count(s.threads.len() as u64),
        ),
        ("samples", "Samples", Cell::Count(s.samples)),
        (
            "interval_ns",
            "Sampling interval",
            Cell::Ns((s.interval_ms * 1e6).round() as u64),
        ),
    ];
    let mut rows: Vec<Row> = fields
        .into_iter()
        .map(|(key, label, cell)| Row {
            key: key.to_string(),
            cells: vec![Cell::Text(label.to_string()), cell],
        })
        .collect();
    if s.stat_fallback_threads > 0 {
        rows.push(Row {
            key: "stat_fallback_threads".into(),
            cells: vec![
                Cell::Text("Threads read from stat (tick resolution)".into()),
                Cell::Count(s.stat_fallback_threads.into()),
            ],
        });
    }
    let table = Table {
        columns: vec![
            Column::label("Metric", "metric"),
            Column::num("Value", "value"),
        ],
        rows,
        ..Table::default()
    };
    Section::new(
        "service",
        "Service time",
        "CPU time the target's threads received, sampled from /proc every interval, and the average number \
         of threads active while any ran (cf. Venter 2016, Sections 3.1.2 and 3.2.2.1, Listings 3.3 and 3.4).",
        Body::Table(table),
    )
}

fn counters_section(c: &CountersReport) -> Section {
    let mut measure = c.work_measure.clone();
    if !c.work_measure_note.is_empty() {
        measure = format!("{measure} ({})", c.work_measure_note);
    }
    let mut rows = vec![Row {
        key: "work_measure".into(),
        cells: vec![
            Cell::Text("Work measure C".into()),
            Cell::Empty,
            Cell::Text(measure),
        ],
    }];
    if let Some(cpu) = c.cpu_s {
        let source = if c.available.contains_key("task_clock") {
            "task_clock counter"
        } else {
            "wait4 resource usage"
        };
        rows.push(Row {
            key: "cpu_ns".into(),
            cells: vec![
                Cell::Text("CPU time".into()),
                seconds(cpu),
                Cell::Text(source.into()),
            ],
        });
    }
    for (name, v) in &c.available {
        let mut notes = Vec::new();
        if v.time_running_ns < v.time_enabled_ns {
            notes.push(format!(
                "scaled: counted {:.0}% of the time",
                100.0 * v.time_running_ns as f64 / v.time_enabled_ns.max(1) as f64
            ));
        }
        if v.user_only {
            notes.push("user mode only".to_string());
        }
        let value = if name == "task_clock" {
            Cell::Ns(v.value)
        } else {
            Cell::Count(v.value)
        };
        rows.push(Row {
            key: name.clone(),
            cells: vec![
                Cell::Text(name.clone()),
                value,
                Cell::Text(notes.join("; ")),
            ],
        });
    }
    for m in &c.missing {
        rows.push(Row {
            key: m.name.clone(),
            cells: vec![
                Cell::Text(m.name.clone()),
                Cell::Text("missing".into()),
                Cell::Text(m.reason.clone()),
            ],
        });
    }
    if let Some(scope) = &c.scope {
        rows.push(Row {
            key: "scope".into(),
            cells: vec![
                Cell::Text("Scope".into()),
                Cell::Empty,
                Cell::Text(scope.clone()),
            ],
        });
    }
    let table = Table {
        columns: vec![
            Column::text("Counter", "counter"),
            Column::num("Value", "value"),
            Column::text("Note", "note"),
        ],
        rows,
        ..Table::default()
    };
    Section::new(
        "counters",
        "Counters",
        "Performance counters of the target and its threads (perf_event_open, inherited), and the work \
         measure C of the speed-up model: cycles where the CPU counts them, else CPU time \
         (cf. Venter 2016, Sections 3.1.1 and 3.2.1.1).",
        Body::Table(table),
    )
}

fn service_thread_section(s: &ServiceReport, top: usize) -> Section {
    let (threads, omitted) = take_top(&s.threads, top);
    let rows = threads
        .iter()
        .map(|t| Row {
            key: format!("{}:{}", t.pid, t.tid),
            cells: vec![
                Cell::Text(format!("{}/{}", t.pid, t.tid)),
                seconds(t.cpu_s),
                Cell::Fraction(if s.cpu_s > 0.0 {
                    t.cpu_s / s.cpu_s
                } else {
                    0.0
                }),
                seconds(t.run_queue_wait_s),
                Cell::Count(t.slices),
            ],
        })
        .collect();
    let table = Table {
        columns: vec![
            Column::text("pid/tid", "thread"),
            Column::num("CPU time", "cpu_ns"),
            Column::num("Share", "cpu_share"),
            Column::num("Run-queue wait", "run_queue_wait_ns"),
            Column::num("Slices", "slices"),
        ],
        rows,
        omitted,
        bars: vec![1],
        ..Table::default()
    };
    Section::new(
        "service_threads",
        "Service time per thread",
        "CPU time per thread, most first; share = of all threads' CPU time; run-queue wait = runnable \
         but waiting for a CPU.",
        Body::Table(table),
    )
}

fn lock_section(r: &Report, top: usize) -> Section {
    let (locks, omitted) = take_top(&r.locks.by_lock, top);
    let rows = locks
        .iter()
        .map(|k| Row {
            key: format!("{}:{}", k.pid, k.address),
            cells: vec![
                Cell::Text(k.name.clone()),
                Cell::Text(k.kind.clone()),
                Cell::Count(k.events),
                Cell::Count(k.contended_events),
                Cell::Ns(k.wait_ns),
                Cell::Ns(k.hold_ns),
                Cell::Ns(k.max_wait_ns),
                Cell::Count(k.critical_events),
                Cell::Ns(k.critical_wait_ns),
                Cell::Text(k.sites.join(", ")),
            ],
        })
        .collect();
    let mut sites = Column::text("Call sites", "sites");
    sites.detail = true;
    let table = Table {
        columns: vec![
            Column::text("Lock", "name"),
            Column::text("Kind", "kind"),
            Column::num("Events", "events"),
            Column::num("Contended", "contended_events"),
            Column::num("Wait", "wait_ns"),
            Column::num("Hold", "hold_ns"),
            Column::num("Max wait", "max_wait_ns"),
            Column::num("CP events", "critical_events"),
            Column::num("CP wait", "critical_wait_ns"),
            sites,
        ],
        rows,
        omitted,
        ..Table::default()
    };
    Section::new(
        "by_lock",
        "Per lock",
        "Lock events per synchronisation object, most waiting first (cf. Venter 2016, Table 4.12); \
         CP = on the critical path.",
        Body::Table(table),
    )
}

/// `file:line`, else `module+offset`, else the offset.
fn site_location(s: &super::model::SiteRow) -> String {
    match (&s.file, s.line, &s.module) {
        (Some(f), Some(l), _) => format!("{}:{l}", short_path(f)),
        (Some(f), None, _) => short_path(f),
        (None, _, Some(m)) => format!("{}+{}", m.rsplit('/').next().unwrap_or(m), s.offset),
        (None, _, None) => s.offset.clone(),
    }
}

/// A source path as a reader wants it in a table: its last two components
/// (`sharequeue/queue.c`); the full path is in the JSON and CSV output.
fn short_path(path: &str) -> String {
    let parts: Vec<&str> = path.rsplitn(3, '/').collect();
    match parts.as_slice() {
        [file, dir, _] | [file, dir] if !dir.is_empty() => format!("{dir}/{file}"),
        _ => path.to_string(),
    }
}

fn site_section(r: &Report, top: usize) -> Section {
    let (sites, omitted) = take_top(&r.locks.by_site, top);
    let rows = sites
        .iter()
        .map(|s| Row {
            key: format!("{}+{}", s.module.as_deref().unwrap_or(""), s.offset),
            cells: vec![
                Cell::Text(s.function.clone().unwrap_or_else(|| "??".to_string())),
                Cell::Text(site_location(s)),
                Cell::Text(s.kinds.join(", ")),
                Cell::Count(s.events),
                Cell::Count(s.contended_events),
                Cell::Ns(s.wait_ns),
                Cell::Ns(s.hold_ns),
                Cell::Ns(s.critical_wait_ns),
            ],
        })
        .collect();
    let table = Table {
        columns: vec![
            Column::text("Function", "function"),
            Column::text("Location", "location"),
            Column::text("Kinds", "kinds"),
            Column::num("Events", "events"),
            Column::num("Contended", "contended_events"),
            Column::num("Wait", "wait_ns"),
            Column::num("Hold", "hold_ns"),
            Column::num("CP wait", "critical_wait_ns"),
        ],
        rows,
        omitted,
        ..Table::default()
    };
    Section::new(
        "by_site",
        "Per call site",
        "Lock events per call site (function, file:line or module+offset), most waiting first; \
         CP = on the critical path.",
        Body::Table(table),
    )
}

fn thread_section(r: &Report, top: usize) -> Section {
    let (threads, omitted) = take_top(&r.locks.by_thread, top);
    let rows = threads
        .iter()
        .map(|t| Row {
            key: format!("{}:{}", t.pid, t.tid),
            cells: vec![
                Cell::Text(format!("{}/{}", t.pid, t.tid)),
                Cell::Count(t.events),
                Cell::Count(t.contended_events),
                Cell::Ns(t.wait_ns),
                Cell::Ns(t.hold_ns),
                Cell::Count(t.critical_events),
                Cell::Ns(t.span_ns),
                Cell::Fraction(crate::compare::fraction(t.wait_ns, t.span_ns)),
            ],
        })
        .collect();
    let table = Table {
        columns: vec![
            Column::text("pid/tid", "thread"),
            Column::num("Events", "events"),
            Column::num("Contended", "contended_events"),
            Column::num("Wait", "wait_ns"),
            Column::num("Hold", "hold_ns"),
            Column::num("CP events", "critical_events"),
            Column::num("Span", "span_ns"),
            Column::num("Waiting", "wait_share_of_span"),
        ],
        rows,
        omitted,
        ..Table::default()
    };
    Section::new(
        "by_thread",
        "Per thread",
        "Lock events and waits per thread, most waiting first; span = first to last recorded operation, \
         waiting = wait / span.",
        Body::Table(table),
    )
}

fn histogram_section(r: &Report) -> Section {
    let rows = r
        .locks
        .wait_histogram
        .iter()
        .map(|b| Row {
            key: b.lower_ns.to_string(),
            cells: vec![
                Cell::Ns(b.lower_ns),
                Cell::Ns(b.upper_ns),
                Cell::Count(b.events),
                Cell::Ns(b.wait_ns),
                Cell::Count(b.critical_events),
                Cell::Ns(b.critical_wait_ns),
            ],
        })
        .collect();
    let table = Table {
        columns: vec![
            Column::num("Wait from", "lower_ns"),
            Column::num("to below", "upper_ns"),
            Column::num("Events", "events"),
            Column::num("Σ wait", "wait_ns"),
            Column::num("CP events", "critical_events"),
            Column::num("CP Σ wait", "critical_wait_ns"),
        ],
        rows,
        bars: vec![3, 5],
        ..Table::default()
    };
    Section::new(
        "wait_histogram",
        "Wait-time histogram",
        "Lock events by the duration of their wait, in log2 buckets: the total wait of all events and of \
         those on the critical path (CP) (cf. Venter 2016, Figures 4.1 and 4.2).",
        Body::Table(table),
    )
}

/// Cells `value₁ value₂ change₂ value₃ change₃ …` of one compared metric:
/// the change is blank where either value is missing, `n/a` for base 0.
pub(crate) fn compared_cells(m: &ComparedMetric) -> Vec<Cell> {
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
pub(crate) fn compared_columns(c: &Comparison) -> Vec<Column> {
    let mut cols = Vec::new();
    for (i, run) in c.runs.iter().enumerate() {
        cols.push(Column::num(&run.label, &run.label));
        if i > 0 {
            cols.push(Column::num("Change", &format!("{}:change_pct", run.label)));
        }
    }
    cols
}

fn compared_metric_table(c: &Comparison, group: MetricGroup) -> Table {
    let mut columns = vec![Column::label("Metric", "metric")];
    columns.extend(compared_columns(c));
    let rows = c
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
pub(crate) fn compared_item_table(
    c: &Comparison,
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
    columns.extend(compared_columns(c));
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

/// The sections of a comparison, in display order.
pub(crate) fn comparison_sections(c: &Comparison, opts: &RenderOptions) -> Vec<Section> {
    let rows = c
        .runs
        .iter()
        .map(|run| {
            let r = &run.report;
            Row {
                key: run.label.clone(),
                cells: vec![
                    Cell::Text(run.label.clone()),
                    Cell::Text(command_line(&r.run.command)),
                    Cell::Text(exit_status(r.run.exit_code, r.run.signal)),
                    Cell::Ns(r.run.wall_ns),
                    Cell::Count(r.run.processes.into()),
                    Cell::Count(r.run.threads.into()),
                    Cell::Count(r.warnings.len() as u64),
                ],
            }
        })
        .collect();
    let runs = Table {
        columns: vec![
            Column::text("Run", "label"),
            Column::text("Command", "command"),
            Column::text("Exit", "exit_status"),
            Column::num("Wall time", "wall_ns"),
            Column::num("Processes", "processes"),
            Column::num("Threads", "threads"),
            Column::num("Warnings", "warnings"),
        ],
        rows,
        ..Table::default()
    };
    let mut out = vec![Section::new(
        "runs",
        "Runs",
        "The compared runs; every change is relative to the first (cf. Venter 2016, Section 3.2.3).",
        Body::Table(runs),
    )];

    let mut warnings = Vec::new();
    for run in &c.runs {
        if let Some(reason) = &run.report.locks.no_events_reason {
            warnings.push(format!("{}: no lock events: {reason}", run.label));
        }
        warnings.extend(
            run.report
                .warnings
                .iter()
                .map(|w| format!("{}: {w}", run.label)),
        );
    }
    if !warnings.is_empty() {
        out.push(Section::new(
            "warnings",
            "Warnings",
            "Problems found while reading the recordings.",
            Body::Warnings(warnings),
        ));
    }

    let groups = [
        (MetricGroup::Summary, "summary", "Lock summary", "Lock events of each run and their change (cf. Venter 2016, Tables 4.9 and 4.16)."),
        (MetricGroup::CriticalPath, "critical_path", "Critical path", "Lock events on the critical path of each run and their change (cf. Venter 2016, Table 4.10)."),
        (MetricGroup::OtherWaits, "other_waits", "Other waits", "Condition variable, barrier and semaphore waits of each run and their change."),
    ];
    for (group, id, title, caption) in groups {
        let table = compared_metric_table(c, group);
        if !table.rows.is_empty() {
            out.push(Section::new(id, title, caption, Body::Table(table)));
        }
    }
    out.push(Section::new(
        "by_lock",
        "Per lock",
        "Per-lock numbers matched by lock name; blank where a run has no such lock.",
        Body::Table(compared_item_table(c, &c.by_lock, "Lock", "Kind", opts.top)),
    ));
    out.push(Section::new(
        "by_site",
        "Per call site",
        "Per-call-site numbers matched by site; blank where a run has no such site.",
        Body::Table(compared_item_table(
            c,
            &c.by_site,
            "Call site",
            "Kind",
            opts.top,
        )),
    ));
    out.extend(super::mpi_layout::comparison_sections(c, opts));
    out
}
