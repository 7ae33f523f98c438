//! The `openmp` section in the table formats: critical sections and locks,
//! barriers, and parallel regions with their threads' work, implicit-barrier
//! waits and load imbalance.

use super::OpenMpReport;
use crate::report::compared::{
    metrics, Comparable, ComparedPart, Item, ItemList, Metric, MetricGroup, Unit,
};
use crate::report::layout::{
    take_top, titled_comparison_panels, Body, Cell, Column, Panel, Row, Table,
};
use crate::report::{RenderOptions, ReportSection};

/// The table of the OpenMP section's run-wide metrics in a comparison.
pub const OPENMP: MetricGroup = MetricGroup("openmp");

impl ReportSection for OpenMpReport {
    fn key(&self) -> &'static str {
        "openmp"
    }

    fn headlines(&self) -> Vec<String> {
        headlines(self)
    }

    fn glance_metrics(&self) -> Vec<(&'static str, &'static str)> {
        vec![
            ("openmp.summary.barrier_wait_ns", "OpenMP barrier wait"),
            (
                "openmp.summary.mutex_wait_ns",
                "OpenMP critical and lock wait",
            ),
        ]
    }

    fn layout(&self, opts: &RenderOptions) -> Vec<Panel> {
        let mut out = Vec::new();
        let (rows, omitted) = take_top(&self.mutexes, opts.top);
        out.push(Panel::new(
            "openmp_mutexes",
            "OpenMP critical sections and locks",
            &format!(
                "Per critical section (by name), OpenMP lock, atomic or ordered region: acquisitions, the wait before each (acquire → acquired) and the hold. {}",
                self.note
            ),
            Body::Table(Table {
                columns: vec![
                    Column::text("Name", "name"),
                    Column::text("Kind", "kind"),
                    Column::num("Events", "events"),
                    Column::num("Wait", "wait_ns"),
                    Column::num("Max wait", "max_wait_ns"),
                    Column::num("Hold", "hold_ns"),
                    Column::num("CP wait", "critical_wait_ns").explained("wait of its acquisitions on the critical path (docs/critical-path.md)"),
                    Column::text("Site", "site"),
                ],
                rows: rows
                    .iter()
                    .map(|m| Row {
                        key: format!("{}:{}:{}", m.pid, m.address, m.kind),
                        cells: vec![
                            Cell::Text(m.name.clone()),
                            Cell::Text(m.kind.clone()),
                            Cell::Count(m.events),
                            Cell::Ns(m.wait_ns),
                            Cell::Ns(m.max_wait_ns),
                            Cell::Ns(m.hold_ns),
                            Cell::Ns(m.critical_wait_ns),
                            Cell::Text(m.sites.first().cloned().unwrap_or_default()),
                        ],
                    })
                    .collect(),
                omitted,
                bars: vec![3],
                ..Table::default()
            }),
        ));
        let (rows, omitted) = take_top(&self.barriers, opts.top);
        out.push(Panel::new(
            "openmp_barriers",
            "OpenMP barriers",
            "Waits in implicit and explicit barriers, taskwait and taskgroup, per kind and construct (wait at barrier).",
            Body::Table(Table {
                columns: vec![
                    Column::text("Construct", "name"),
                    Column::text("Kind", "kind"),
                    Column::num("Waits", "events"),
                    Column::num("Wait", "wait_ns"),
                    Column::num("Max wait", "max_wait_ns"),
                    Column::num("CP wait", "critical_wait_ns").explained("wait of its waits on the critical path (docs/critical-path.md)"),
                ],
                rows: rows
                    .iter()
                    .map(|b| Row {
                        key: format!("{}:{}:{}", b.pid, b.kind, b.name),
                        cells: vec![
                            Cell::Text(b.name.clone()),
                            Cell::Text(b.kind.clone()),
                            Cell::Count(b.events),
                            Cell::Ns(b.wait_ns),
                            Cell::Ns(b.max_wait_ns),
                            Cell::Ns(b.critical_wait_ns),
                        ],
                    })
                    .collect(),
                omitted,
                bars: vec![3],
                ..Table::default()
            }),
        ));
        let (regions, omitted) = take_top(&self.regions, opts.top);
        let mut rows = Vec::new();
        for r in regions {
            rows.push(Row {
                key: format!("{}:{}", r.pid, r.name),
                cells: vec![
                    Cell::Text(r.name.clone()),
                    Cell::Empty,
                    Cell::Count(r.events),
                    Cell::Empty,
                    Cell::Ns(r.wait_ns),
                    Cell::Ns(r.imbalance_ns),
                ],
            });
            for t in &r.threads {
                rows.push(Row {
                    key: format!("{}:{}:{}", r.pid, r.name, t.thread),
                    cells: vec![
                        Cell::Text(String::new()),
                        Cell::Count(u64::from(t.thread)),
                        Cell::Empty,
                        Cell::Ns(t.work_ns),
                        Cell::Ns(t.wait_ns),
                        Cell::Empty,
                    ],
                });
            }
        }
        out.push(Panel::new(
            "openmp_regions",
            "OpenMP parallel regions",
            "Per parallel construct: instances, and per thread of the team its work and its wait in the region's implicit barrier; imbalance = Σ over instances of (max − mean) work time.",
            Body::Table(Table {
                columns: vec![
                    Column::text("Construct", "name"),
                    Column::num("Thread", "thread"),
                    Column::num("Instances", "events"),
                    Column::num("Work", "work_ns"),
                    Column::num("Barrier wait", "wait_ns")
                        .explained("wait in the implicit barrier at the region's end"),
                    Column::num("Imbalance", "imbalance_ns")
                        .explained("Σ over instances of max − mean work time of the team"),
                ],
                rows,
                omitted,
                ..Table::default()
            }),
        ));
        out
    }

    /// The summary ([`openmp_metrics`]; a run without OpenMP events has no
    /// values there), the critical sections and locks matched by name,
    /// the barriers and the parallel regions by construct.
    fn comparable(&self) -> Option<Comparable> {
        use Unit::{Count, Ns};
        let list = |key, title, caption, item_heading, items| ItemList {
            key,
            title,
            caption,
            item_heading,
            kind_heading: "Kind",
            always: false,
            items,
        };
        Some(Comparable {
            metrics: openmp_metrics(self),
            missing_is_zero: false,
            lists: vec![
                list(
                    "openmp_by_mutex",
                    "OpenMP critical sections and locks",
                    "Per critical section, OpenMP lock, atomic or ordered region, matched by name; blank where a run has no such one.",
                    "Name",
                    self.mutexes
                        .iter()
                        .map(|m| Item {
                            name: m.name.clone(),
                            kind: m.kind.clone(),
                            metrics: metrics(
                                OPENMP,
                                "",
                                vec![
                                    ("events", "Acquisitions", Count, m.events as f64),
                                    ("wait_ns", "Wait", Ns, m.wait_ns as f64),
                                    ("max_wait_ns", "Max wait", Ns, m.max_wait_ns as f64),
                                    ("hold_ns", "Hold", Ns, m.hold_ns as f64),
                                    ("critical_wait_ns", "CP wait", Ns, m.critical_wait_ns as f64),
                                ],
                            ),
                        })
                        .collect(),
                ),
                list(
                    "openmp_by_barrier",
                    "OpenMP barriers",
                    "Per barrier or task-wait construct, matched by construct; blank where a run has no such one.",
                    "Construct",
                    self.barriers
                        .iter()
                        .map(|b| Item {
                            name: b.name.clone(),
                            kind: b.kind.clone(),
                            metrics: metrics(
                                OPENMP,
                                "",
                                vec![
                                    ("events", "Waits", Count, b.events as f64),
                                    ("wait_ns", "Wait", Ns, b.wait_ns as f64),
                                    ("max_wait_ns", "Max wait", Ns, b.max_wait_ns as f64),
                                    ("critical_wait_ns", "CP wait", Ns, b.critical_wait_ns as f64),
                                ],
                            ),
                        })
                        .collect(),
                ),
                list(
                    "openmp_by_region",
                    "OpenMP parallel regions",
                    "Per parallel construct, matched by construct: instances, implicit-barrier wait and load imbalance; blank where a run has no such one.",
                    "Construct",
                    self.regions
                        .iter()
                        .map(|r| Item {
                            name: r.name.clone(),
                            kind: r.kind.clone(),
                            metrics: metrics(
                                OPENMP,
                                "",
                                vec![
                                    ("events", "Instances", Count, r.events as f64),
                                    ("wait_ns", "Barrier wait", Ns, r.wait_ns as f64),
                                    ("imbalance_ns", "Imbalance", Ns, r.imbalance_ns as f64),
                                ],
                            ),
                        })
                        .collect(),
                ),
            ],
        })
    }

    fn layout_comparison(&self, part: &ComparedPart<'_>, opts: &RenderOptions) -> Vec<Panel> {
        titled_comparison_panels(
            part,
            opts,
            &[(
                OPENMP,
                "OpenMP",
                "OpenMP critical sections and locks, barrier waits and parallel regions of each run and their change relative to the first run.",
            )],
        )
    }
}

/// The numbers of the OpenMP summary that `contend compare` lines up
/// (keys are JSON paths, `openmp.summary.…`): acquisitions, waits and
/// holds of critical sections and locks (ns), barrier waits (ns), parallel
/// region instances and their load imbalance (ns), and the critical path
/// across recorders through OpenMP events.
pub fn openmp_metrics(r: &OpenMpReport) -> Vec<Metric> {
    use Unit::{Count, Ns};
    let s = &r.summary;
    metrics(
        OPENMP,
        "openmp.summary.",
        vec![
            (
                "mutex_events",
                "Critical and lock acquisitions",
                Count,
                s.mutex_events as f64,
            ),
            (
                "mutex_wait_ns",
                "Critical and lock wait",
                Ns,
                s.mutex_wait_ns as f64,
            ),
            (
                "mutex_hold_ns",
                "Critical and lock hold",
                Ns,
                s.mutex_hold_ns as f64,
            ),
            (
                "barrier_events",
                "Barrier and task waits",
                Count,
                s.barrier_events as f64,
            ),
            (
                "barrier_wait_ns",
                "Barrier and task wait time",
                Ns,
                s.barrier_wait_ns as f64,
            ),
            (
                "parallel_regions",
                "Parallel region instances",
                Count,
                s.parallel_regions as f64,
            ),
            ("imbalance_ns", "Load imbalance", Ns, s.imbalance_ns as f64),
            (
                "critical_events",
                "Events on the critical path",
                Count,
                s.critical_events as f64,
            ),
            (
                "critical_wait_ns",
                "Their wait",
                Ns,
                s.critical_wait_ns as f64,
            ),
        ],
    )
}

/// The OpenMP section's line of "At a glance": the wait at barriers and
/// for critical sections and locks, the parallel regions' load imbalance,
/// and what of the wait lies on the critical path.
fn headlines(r: &OpenMpReport) -> Vec<String> {
    use crate::report::fmt::duration_plain as time;
    let s = &r.summary;
    if s.barrier_events == 0 && s.mutex_events == 0 && s.parallel_regions == 0 {
        return Vec::new();
    }
    let mut line = format!(
        "OpenMP: {} waiting at barriers, {} for critical sections and locks",
        time(s.barrier_wait_ns),
        time(s.mutex_wait_ns)
    );
    if s.parallel_regions > 0 {
        line.push_str(&format!(
            "; load imbalance of the parallel regions {}",
            time(s.imbalance_ns)
        ));
    }
    if s.critical_wait_ns > 0 {
        line.push_str(&format!(
            "; {} of the wait on the critical path",
            time(s.critical_wait_ns)
        ));
    }
    if let Some(b) = r
        .barriers
        .iter()
        .max_by_key(|b| b.wait_ns)
        .filter(|b| b.wait_ns > 0 && b.wait_ns >= s.mutex_wait_ns)
    {
        line.push_str(&format!("; the most at {} ({})", b.name, time(b.wait_ns)));
    } else if let Some(m) = r
        .mutexes
        .iter()
        .max_by_key(|m| m.wait_ns)
        .filter(|m| m.wait_ns > 0)
    {
        line.push_str(&format!("; the most at {} ({})", m.name, time(m.wait_ns)));
    }
    line.push('.');
    vec![line]
}
