//! The `openmp` section in the table formats: critical sections and locks,
//! barriers, and parallel regions with their threads' work, implicit-barrier
//! waits and load imbalance.

use super::OpenMpReport;
use crate::report::layout::{take_top, Body, Cell, Column, Panel, Row, Table};
use crate::report::{RenderOptions, ReportSection};

impl ReportSection for OpenMpReport {
    fn key(&self) -> &'static str {
        "openmp"
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
}
