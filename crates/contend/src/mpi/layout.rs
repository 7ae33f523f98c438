//! The MPI section in the table formats and in comparisons (Venter 2016,
//! Tables 4.13–4.18).
//!
//! Report: an overview (ranks, library, thresholds, matching), the wait
//! states per pattern beside all point-to-point and collective calls
//! (Table 4.13), the most and least delayed and late ranks per pattern
//! (Table 4.13's per-process rows), per rank (delay experienced, lateness
//! caused) and per call site (Tables 4.14 and 4.15). Comparison: per class
//! and pattern (Tables 4.16–4.18), per rank and per call site, each value
//! beside the first run's with the change.

use super::{MpiPatternSummary, MpiRankRow, MpiReport, MpiSiteRow, Pattern, RankNs};
use crate::report::compared::{
    metrics, Comparable, ComparedPart, Item, ItemList, Metric, MetricGroup, Unit,
};
use crate::report::layout::{
    compared_cells, compared_columns, compared_list_panel, Body, Cell, Column, Panel, Row, Table,
};
use crate::report::{RenderOptions, ReportSection};

/// Metric group of all point-to-point or collective calls (Table 4.16).
pub const MPI_CLASS: MetricGroup = MetricGroup("mpi_class");
/// Metric group of one wait-state pattern (Tables 4.17 and 4.18).
pub const MPI_PATTERN: MetricGroup = MetricGroup("mpi_pattern");
/// Metric group of one rank.
pub const MPI_RANK: MetricGroup = MetricGroup("mpi_rank");
/// Metric group of one MPI call site.
pub const MPI_SITE: MetricGroup = MetricGroup("mpi_site");

/// A count or nanoseconds as a metric value.
fn n(v: u64) -> f64 {
    v as f64
}

fn section(id: &'static str, title: &str, caption: &str, table: Table) -> Panel {
    Panel::new(id, title, caption, Body::Table(table))
}

fn top<T>(rows: &[T], top: usize) -> (&[T], usize) {
    if top == 0 || rows.len() <= top {
        (rows, 0)
    } else {
        (&rows[..top], rows.len() - top)
    }
}

fn ranks_list(ranks: &[u32]) -> String {
    ranks
        .iter()
        .map(|r| r.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

impl ReportSection for MpiReport {
    fn figures(&self) -> Vec<crate::report::Figure> {
        super::figures::report_figures(self)
    }

    fn key(&self) -> &'static str {
        "mpi"
    }

    fn headlines(&self) -> Vec<String> {
        headlines(self)
    }

    fn glance_metrics(&self) -> Vec<(&'static str, &'static str)> {
        vec![
            ("mpi.p2p.wait_ns", "MPI point-to-point wait"),
            ("mpi.collective.wait_ns", "MPI collective wait"),
        ]
    }

    fn layout(&self, opts: &RenderOptions) -> Vec<Panel> {
        let mut out = vec![
            overview(self),
            patterns(self),
            extremes(self),
            by_rank(self, opts.top),
            by_site(self, opts.top),
        ];
        out.extend(super::panels::panels(self, opts.top));
        out
    }

    /// Per class and pattern ([`mpi_metrics`]; a run without MPI traces
    /// has no values there), per rank matched by rank (`rank 3`), per call
    /// site matched by operation and site (`MPI_Send at main (app.c:12)`).
    fn comparable(&self) -> Option<Comparable> {
        Some(Comparable {
            metrics: mpi_metrics(self),
            missing_is_zero: false,
            lists: vec![
                ItemList {
                    key: "mpi_by_rank",
                    title: "MPI per rank",
                    caption: "Per-rank numbers matched by rank; blank where a run has no such rank.",
                    item_heading: "Rank",
                    kind_heading: "Host",
                    always: false,
                    items: self
                        .by_rank
                        .iter()
                        .map(|row| Item {
                            name: format!("rank {}", row.rank),
                            kind: row.host.clone(),
                            metrics: mpi_rank_metrics(row),
                        })
                        .collect(),
                },
                ItemList {
                    key: "mpi_by_site",
                    title: "MPI per call site",
                    caption: "Per-call-site numbers matched by MPI function and site; blank where a run has no such site.",
                    item_heading: "Call site",
                    kind_heading: "Operation",
                    always: false,
                    items: self
                        .by_site
                        .iter()
                        .map(|row| Item {
                            name: format!("{} at {}", row.operation, row.display),
                            kind: row.operation.clone(),
                            metrics: mpi_site_metrics(row),
                        })
                        .collect(),
                },
            ],
        })
    }

    fn layout_comparison(&self, part: &ComparedPart<'_>, opts: &RenderOptions) -> Vec<Panel> {
        let mut out = vec![
            section(
                "mpi_classes",
                "MPI calls",
                "All point-to-point and collective calls of each run and their change (cf. Venter 2016, \
                 Table 4.16); blank where a run has no MPI traces.",
                metric_table(part, MPI_CLASS),
            ),
            section(
                "mpi_patterns",
                "MPI wait states",
                "Wait states per pattern of each run and their change (cf. Venter 2016, Tables 4.17 and 4.18); \
                 patterns without wait states in any run are left out.",
                metric_table(part, MPI_PATTERN),
            ),
        ];
        out.extend(
            part.lists
                .iter()
                .map(|l| compared_list_panel(part, l, opts)),
        );
        out
    }
}

fn overview(m: &MpiReport) -> Panel {
    let mut fields: Vec<(&str, &str, Cell)> = vec![
        (
            "ranks",
            "Ranks (MPI_COMM_WORLD)",
            Cell::Count(m.ranks.into()),
        ),
        (
            "ranks_traced",
            "Ranks with a trace",
            Cell::Count(m.ranks_traced.into()),
        ),
    ];
    if !m.missing_ranks.is_empty() {
        fields.push((
            "missing_ranks",
            "Ranks without a trace",
            Cell::Text(ranks_list(&m.missing_ranks)),
        ));
    }
    if !m.aborted_ranks.is_empty() {
        fields.push((
            "aborted_ranks",
            "Ranks that ended inside a call",
            Cell::Text(ranks_list(&m.aborted_ranks)),
        ));
    }
    if !m.library.is_empty() {
        fields.push(("library", "MPI library", Cell::Text(m.library.clone())));
    }
    let s = &m.matching;
    fields.extend([
        (
            "threshold_p2p_ns",
            "Threshold, point to point",
            Cell::Ns(m.thresholds.p2p_ns),
        ),
        (
            "threshold_collective_ns",
            "Threshold, collective",
            Cell::Ns(m.thresholds.collective_ns),
        ),
        (
            "p2p_share_of_runtime",
            "P2P calls, share of running time",
            Cell::Fraction(m.p2p.share_of_runtime),
        ),
        (
            "collective_share_of_runtime",
            "Collective calls, share of running time",
            Cell::Fraction(m.collective.share_of_runtime),
        ),
        ("messages", "Messages matched", Cell::Count(s.messages)),
        (
            "unmatched_sends",
            "Sends never matched",
            Cell::Count(s.unmatched_sends),
        ),
        (
            "unmatched_receives",
            "Receives never matched",
            Cell::Count(s.unmatched_receives + s.unplaced_receives),
        ),
        (
            "collectives",
            "Collective calls matched",
            Cell::Count(s.collectives),
        ),
        (
            "skipped_collectives",
            "Collective calls skipped",
            Cell::Count(s.skipped_collectives),
        ),
    ]);
    let rows = fields
        .into_iter()
        .map(|(key, label, cell)| Row {
            key: key.to_string(),
            cells: vec![Cell::Text(label.to_string()), cell],
        })
        .collect();
    section(
        "mpi",
        "MPI",
        "The MPI ranks recorded and how their calls were matched into messages and collective calls.",
        Table {
            columns: vec![Column::label("MPI run", "field"), Column::text("Value", "value")],
            rows,
            ..Table::default()
        },
    )
}

fn patterns(m: &MpiReport) -> Panel {
    let class_row = |key: &str, label: &str, c: &crate::mpi::MpiClassSummary| Row {
        key: key.to_string(),
        cells: vec![
            Cell::Text(label.to_string()),
            Cell::Count(c.events),
            Cell::Ns(c.duration_ns),
            Cell::Ns(c.avg_duration_ns),
            Cell::Ns(c.min_duration_ns),
            Cell::Ns(c.max_duration_ns),
            Cell::Ns(c.wait_ns),
            Cell::Empty,
            Cell::Empty,
        ],
    };
    let mut rows = vec![
        class_row("p2p", "P2P calls", &m.p2p),
        class_row("collective", "Coll. calls", &m.collective),
    ];
    for p in Pattern::ALL {
        let s: &MpiPatternSummary = m.pattern(p);
        rows.push(Row {
            key: p.key().to_string(),
            cells: vec![
                Cell::Text(p.label().to_string()),
                Cell::Count(s.count),
                Cell::Ns(s.duration_ns),
                Cell::Ns(s.avg_duration_ns),
                Cell::Ns(s.min_duration_ns),
                Cell::Ns(s.max_duration_ns),
                Cell::Ns(s.wait_ns),
                Cell::Ns(s.avg_wait_ns),
                Cell::Ns(s.max_wait_ns),
            ],
        });
    }
    section(
        "mpi_patterns",
        "MPI wait states",
        "Wait states per pattern beside all point-to-point (P2P) and collective (coll.) calls (cf. Venter 2016, Table 4.13; \
         Geimer et al. 2009). Events = calls, or for a pattern the calls that waited at least the threshold; \
         duration = their time in the call; wait = time lost waiting for a late rank (definitions: \
         docs/mpi-wait-states.md).",
        Table {
            columns: vec![
                Column::text("Pattern", "pattern"),
                Column::num("Events", "count"),
                Column::num("Duration", "duration_ns"),
                Column::num("Avg duration", "avg_duration_ns"),
                Column::num("Min duration", "min_duration_ns"),
                Column::num("Max duration", "max_duration_ns"),
                Column::num("Wait", "wait_ns"),
                Column::num("Avg wait", "avg_wait_ns"),
                Column::num("Max wait", "max_wait_ns"),
            ],
            rows,
            ..Table::default()
        },
    )
}

fn rank_cells(x: Option<RankNs>) -> [Cell; 2] {
    match x {
        Some(x) => [Cell::Count(x.rank.into()), Cell::Ns(x.ns)],
        None => [Cell::Empty, Cell::Empty],
    }
}

fn extremes(m: &MpiReport) -> Panel {
    let rows = Pattern::ALL
        .iter()
        .filter(|p| m.pattern(**p).count > 0)
        .map(|&p| {
            let s = m.pattern(p);
            let mut cells = vec![Cell::Text(p.label().to_string())];
            for x in [s.most_delayed, s.least_delayed, s.most_late, s.least_late] {
                cells.extend(rank_cells(x));
            }
            Row {
                key: p.key().to_string(),
                cells,
            }
        })
        .collect();
    section(
        "mpi_rank_extremes",
        "MPI delay and lateness by rank",
        "Per pattern, the ranks with the largest and smallest total delay experienced (wait) and lateness \
         caused (the waits of others they were late for) (cf. Venter 2016, Table 4.13).",
        Table {
            columns: vec![
                Column::text("Pattern", "pattern"),
                Column::num("Most delayed", "most_delayed.rank"),
                Column::num("Delay", "most_delayed.ns"),
                Column::num("Least delayed", "least_delayed.rank"),
                Column::num("Delay", "least_delayed.ns"),
                Column::num("Most late", "most_late.rank"),
                Column::num("Lateness", "most_late.ns"),
                Column::num("Least late", "least_late.rank"),
                Column::num("Lateness", "least_late.ns"),
            ],
            rows,
            ..Table::default()
        },
    )
}

fn by_rank(m: &MpiReport, n: usize) -> Panel {
    let (ranks, omitted) = top(&m.by_rank, n);
    let rows = ranks
        .iter()
        .map(|r| Row {
            key: r.rank.to_string(),
            cells: vec![
                Cell::Count(r.rank.into()),
                Cell::Text(format!("{}/{}", r.host, r.pid)),
                Cell::Count(r.events),
                Cell::Ns(r.mpi_ns),
                Cell::Fraction(r.mpi_share),
                Cell::Ns(r.init_finalize_ns),
                Cell::Ns(r.span_ns),
                Cell::Ns(r.wait_ns),
                Cell::Ns(r.p2p_wait_ns),
                Cell::Ns(r.collective_wait_ns),
                Cell::Ns(r.caused_ns),
                Cell::Ns(r.root_cause_ns),
                Cell::Ns(r.critical_path_ns),
                Cell::Text(match (&r.aborted_in, r.finalized) {
                    (Some(op), _) => format!("ended in {op}"),
                    (None, true) => "finalized".to_string(),
                    (None, false) => "no MPI_Finalize".to_string(),
                }),
            ],
        })
        .collect();
    section(
        "mpi_by_rank",
        "MPI per rank",
        "Per rank: calls, time in MPI without MPI_Init and MPI_Finalize and its share of the time between \
         them (MPI %), the time in MPI_Init and MPI_Finalize (shown apart), running time (first to last \
         call), the wait it experienced (point to point, collective), the wait it caused others by being \
         late (directly: cf. Venter 2016, Table 4.13), the waiting whose root cause lies on it (delay \
         costs, short- and long-term) and its time on the critical path.",
        Table {
            columns: vec![
                Column::num("Rank", "rank"),
                Column::text("Host/pid", "host_pid"),
                Column::num("Calls", "events"),
                Column::num("In MPI", "mpi_ns"),
                Column::num("MPI %", "mpi_share"),
                Column::num("Init+Fin.", "init_finalize_ns"),
                Column::num("Running", "span_ns"),
                Column::num("Wait", "wait_ns"),
                Column::num("P2P wait", "p2p_wait_ns"),
                Column::num("Coll. wait", "collective_wait_ns"),
                Column::num("Caused", "caused_ns"),
                Column::num("Root cause", "root_cause_ns"),
                Column::num("Critical path", "critical_path_ns"),
                Column::text("End", "end"),
            ],
            rows,
            omitted,
            bars: vec![7],
            ..Table::default()
        },
    )
}

/// `file:line`, else `module+offset`, else the display form.
fn location(s: &MpiSiteRow) -> String {
    let short = |p: &str| {
        let parts: Vec<&str> = p.rsplitn(3, '/').collect();
        match parts.as_slice() {
            [file, dir, _] | [file, dir] if !dir.is_empty() => format!("{dir}/{file}"),
            _ => p.to_string(),
        }
    };
    match (&s.file, s.line, &s.module) {
        (Some(f), Some(l), _) => format!("{}:{l}", short(f)),
        (Some(f), None, _) => short(f),
        (None, _, Some(m)) => format!("{}+{}", m.rsplit('/').next().unwrap_or(m), s.offset),
        (None, _, None) => s.display.clone(),
    }
}

fn by_site(m: &MpiReport, n: usize) -> Panel {
    let (sites, omitted) = top(&m.by_site, n);
    let rows = sites
        .iter()
        .map(|s| Row {
            key: format!(
                "{}@{}+{}",
                s.operation,
                s.module.as_deref().unwrap_or(""),
                s.offset
            ),
            cells: vec![
                Cell::Text(s.operation.clone()),
                Cell::Text(s.function.clone().unwrap_or_else(|| "??".to_string())),
                Cell::Text(location(s)),
                Cell::Count(s.events),
                Cell::Ns(s.duration_ns),
                Cell::Ns(s.avg_duration_ns),
                Cell::Count(s.wait_states),
                Cell::Ns(s.wait_ns),
                Cell::Ns(s.avg_wait_ns),
                Cell::Count(s.ranks.into()),
            ],
        })
        .collect();
    section(
        "mpi_by_site",
        "MPI per call site",
        "Per call site and MPI function, over all ranks: calls, total and average duration, wait states \
         and wait, most wait first (cf. Venter 2016, Tables 4.14 and 4.15).",
        Table {
            columns: vec![
                Column::text("Operation", "operation"),
                Column::wrapped("Function", "function"),
                Column::wrapped("Location", "location"),
                Column::num("Calls", "events"),
                Column::num("Duration", "duration_ns"),
                Column::num("Avg", "avg_duration_ns"),
                Column::num("Waits", "wait_states"),
                Column::num("Wait", "wait_ns"),
                Column::num("Avg wait", "avg_wait_ns"),
                Column::num("Ranks", "ranks"),
            ],
            rows,
            omitted,
            ..Table::default()
        },
    )
}

// ------------------------------------------------------------- comparison

fn metric_table(part: &ComparedPart<'_>, group: MetricGroup) -> Table {
    let mut columns = vec![Column::label("Metric", "metric")];
    columns.extend(compared_columns(part.runs));
    // A pattern no run has a wait state of is left out (its rows are all 0).
    let absent: Vec<String> = Pattern::ALL
        .iter()
        .map(|p| format!("mpi.{}.", p.key()))
        .filter(|prefix| {
            part.metrics
                .iter()
                .find(|m| m.key == format!("{prefix}count"))
                .is_some_and(|m| m.values.iter().all(|v| v.unwrap_or(0.0) == 0.0))
        })
        .collect();
    let rows = part
        .metrics
        .iter()
        .filter(|m| m.group == group)
        .filter(|m| {
            !absent
                .iter()
                .any(|prefix| m.key.starts_with(prefix.as_str()))
        })
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

/// The MPI numbers of a report compared across runs (Venter 2016, Tables
/// 4.16–4.18): per class (`mpi.p2p.*`, `mpi.collective.*`: events, total
/// duration, wait) and per pattern (`mpi.late_sender.*` …: wait states,
/// total duration, total wait, average and longest wait). Keys are the JSON
/// paths of the values. Empty when the report has no MPI part.
pub fn mpi_metrics(m: &MpiReport) -> Vec<Metric> {
    use Unit::{Count, Ns};
    let mut out = Vec::new();
    for (key, label, c) in [
        ("p2p", "Point to point", &m.p2p),
        ("collective", "Collective", &m.collective),
    ] {
        #[rustfmt::skip]
        let rows = [
            ("events", "calls", Count, n(c.events)),
            ("duration_ns", "total duration", Ns, n(c.duration_ns)),
            ("wait_states", "wait states", Count, n(c.wait_states)),
            ("wait_ns", "total wait", Ns, n(c.wait_ns)),
        ];
        out.extend(
            metrics(MPI_CLASS, &format!("mpi.{key}."), rows)
                .into_iter()
                .map(|mut metric| {
                    metric.label = format!("{label}: {}", metric.label);
                    metric
                }),
        );
    }
    for p in Pattern::ALL {
        let s = m.pattern(p);
        #[rustfmt::skip]
        let rows = [
            ("count", "wait states", Count, n(s.count)),
            ("duration_ns", "total duration", Ns, n(s.duration_ns)),
            ("wait_ns", "total wait", Ns, n(s.wait_ns)),
            ("avg_wait_ns", "average wait", Ns, n(s.avg_wait_ns)),
            ("max_wait_ns", "longest wait", Ns, n(s.max_wait_ns)),
        ];
        out.extend(
            metrics(MPI_PATTERN, &format!("mpi.{}.", p.key()), rows)
                .into_iter()
                .map(|mut metric| {
                    metric.label = format!("{}: {}", p.label(), metric.label);
                    metric
                }),
        );
    }
    // added later: after the first version's metrics
    #[rustfmt::skip]
    let causes = [
        ("delay.short_term_ns", "Root causes: short-term delay costs", Ns, n(m.delay.short_term_ns)),
        ("delay.long_term_ns", "Root causes: long-term delay costs", Ns, n(m.delay.long_term_ns)),
        ("critical_path.length_ns", "Critical path: length", Ns, n(m.critical_path.length_ns)),
        ("critical_path.imbalance_ns", "Critical path: imbalance", Ns, n(m.critical_path.imbalance_ns)),
    ];
    out.extend(metrics(MPI_CLASS, "mpi.", causes));
    out
}

/// The compared numbers of one MPI rank (keys are the
/// [`MpiRankRow`] field names).
pub fn mpi_rank_metrics(row: &MpiRankRow) -> Vec<Metric> {
    use Unit::{Count, Ns};
    #[rustfmt::skip]
    let rows = [
        ("events", "Calls", Count, n(row.events)),
        ("duration_ns", "Time in MPI", Ns, n(row.duration_ns)),
        ("wait_ns", "Wait experienced", Ns, n(row.wait_ns)),
        ("caused_ns", "Wait caused (lateness)", Ns, n(row.caused_ns)),
        ("root_cause_ns", "Waiting rooted here (delay cost)", Ns, n(row.root_cause_ns)),
        ("critical_path_ns", "On the critical path", Ns, n(row.critical_path_ns)),
    ];
    metrics(MPI_RANK, "", rows)
}

/// The compared numbers of one MPI call site (keys are the
/// [`MpiSiteRow`] field names).
pub fn mpi_site_metrics(row: &MpiSiteRow) -> Vec<Metric> {
    use Unit::{Count, Ns};
    #[rustfmt::skip]
    let rows = [
        ("events", "Calls", Count, n(row.events)),
        ("duration_ns", "Total duration", Ns, n(row.duration_ns)),
        ("avg_duration_ns", "Average duration", Ns, n(row.avg_duration_ns)),
        ("wait_ns", "Total wait", Ns, n(row.wait_ns)),
    ];
    metrics(MPI_SITE, "", rows)
}

/// The MPI section's lines of "At a glance": the ranks' time in MPI
/// (mpiP's MPI%), the wait states and the pattern with the most wait
/// (Geimer et al. 2009), who waited and who caused it, the rank whose
/// delays cost the most waiting (Böhme et al., TOPC 2016) and the critical
/// path's imbalance (Böhme et al., IPDPS 2012).
fn headlines(m: &MpiReport) -> Vec<String> {
    use crate::report::fmt::{duration_plain as time, int, percent, PLAIN};
    if m.by_rank.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    let shares: Vec<f64> = m.by_rank.iter().map(|r| r.mpi_share).collect();
    let mean = shares.iter().sum::<f64>() / shares.len() as f64;
    let (lo, hi) = shares.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), &x| {
        (lo.min(x), hi.max(x))
    });
    let wait: u64 = Pattern::ALL.iter().map(|&p| m.pattern(p).wait_ns).sum();
    let mut line = format!(
        "MPI: {} ranks spent {} of their time in MPI calls on average (from {} to {})",
        m.by_rank.len(),
        percent(mean, &PLAIN),
        percent(lo, &PLAIN),
        percent(hi, &PLAIN)
    );
    let top = Pattern::ALL
        .iter()
        .map(|&p| (p, m.pattern(p)))
        .max_by_key(|(_, s)| s.wait_ns)
        .filter(|(_, s)| s.wait_ns > 0);
    match top {
        Some((p, s)) => {
            line.push_str(&format!(
                "; wait states {}, the largest pattern {}: {} in {} wait{}.",
                time(wait),
                p.label(),
                time(s.wait_ns),
                int(s.count, &PLAIN),
                if s.count == 1 { "" } else { "s" }
            ));
            out.push(line);
            if let (Some(d), Some(l)) = (&s.most_delayed, &s.most_late) {
                out.push(format!(
                    "{}: rank {} waited the most ({}), rank {} caused the most ({}).",
                    p.label(),
                    d.rank,
                    time(d.ns),
                    l.rank,
                    time(l.ns)
                ));
            }
        }
        None => {
            line.push_str("; no wait states.");
            out.push(line);
        }
    }
    if let Some(r) = m
        .delay
        .by_rank
        .iter()
        .max_by_key(|r| r.cost_ns)
        .filter(|r| r.cost_ns > 0)
    {
        let mut line = format!(
            "Root cause: delays on rank {} cost {} of waiting ({} of the waiting attributed)",
            r.rank,
            time(r.cost_ns),
            percent(r.share, &PLAIN)
        );
        if let Some(g) = m
            .delay
            .by_region
            .iter()
            .max_by_key(|g| g.cost_ns)
            .filter(|g| g.cost_ns > 0)
        {
            line.push_str(&format!(
                "; the costliest region over all ranks: {} ({})",
                g.name.region,
                time(g.cost_ns)
            ));
        }
        line.push('.');
        out.push(line);
    }
    let cp = &m.critical_path;
    if cp.length_ns > 0 {
        let mut line = format!("Critical path: {}", time(cp.length_ns));
        if let Some(r) = cp.end_rank {
            line.push_str(&format!(", ending on rank {r}"));
        }
        line.push_str(&format!(
            "; its imbalance {} ({} of it).",
            time(cp.imbalance_ns),
            percent(cp.imbalance_share, &PLAIN)
        ));
        out.push(line);
    }
    out
}
