//! The NUMA memory contention section in the table formats: the summary
//! (Eq. 13, the bottleneck node, the sampler), the model per node
//! (Eq. 1–13), the remote latencies (Eq. 12), what-if placements
//! (Eq. 14), the migration plan (Section 3) and the hottest pages.

use super::report::{NumaReport, WhatIfRow};
use crate::report::compared::metrics;
use crate::report::layout::{take_top, Body, Cell, Column, Panel, Row, Table};
use crate::report::{Comparable, MetricGroup, RenderOptions, ReportSection, Unit};

impl ReportSection for NumaReport {
    fn key(&self) -> &'static str {
        "numa"
    }

    fn layout(&self, opts: &RenderOptions) -> Vec<Panel> {
        panels(self, opts)
    }

    fn headlines(&self) -> Vec<String> {
        headlines(self)
    }

    fn glance_metrics(&self) -> Vec<(&'static str, &'static str)> {
        vec![(
            "numa.overhead_ns",
            "Time lost to memory contention (NUMA model)",
        )]
    }

    fn layout_comparison(
        &self,
        part: &crate::report::compared::ComparedPart<'_>,
        opts: &RenderOptions,
    ) -> Vec<Panel> {
        crate::report::layout::titled_comparison_panels(
            part,
            opts,
            &[(
                MetricGroup("numa"),
                "NUMA memory contention",
                "Time lost to memory contention, the local share of accesses, the samples and the pages the \
                 migration plan moves, of each run (docs/numa.md), and their change relative to the first run.",
            )],
        )
    }

    fn comparable(&self) -> Option<Comparable> {
        let mut rows = Vec::new();
        if let Some(o) = self.overhead_ns {
            rows.push((
                "overhead_ns",
                "Time lost to contention (Eq. 13)",
                Unit::Ns,
                o as f64,
            ));
        }
        if let Some(s) = self.overhead_share {
            rows.push((
                "overhead_share",
                "Share of run time lost",
                Unit::Fraction,
                s,
            ));
        }
        let (local, total) = self.nodes.iter().fold((0.0, 0.0), |(l, t), n| {
            let l_i = n
                .local_accesses
                .or(n.local_samples.map(|s| s as f64))
                .unwrap_or(0.0);
            let r_i = n
                .remote_accesses
                .or(n.remote_samples.map(|s| s as f64))
                .unwrap_or(0.0);
            (l + l_i, t + l_i + r_i)
        });
        if total > 0.0 {
            rows.push((
                "local_share",
                "Local share of accesses",
                Unit::Fraction,
                local / total,
            ));
        }
        if let Some(s) = &self.sampler {
            rows.push(("sampler.samples", "Samples", Unit::Count, s.samples as f64));
        }
        rows.push((
            "migrations",
            "Pages the plan moves",
            Unit::Count,
            self.migrations.len() as f64,
        ));
        Some(Comparable {
            metrics: metrics(MetricGroup("numa"), "numa.", rows),
            ..Comparable::default()
        })
    }
}

fn field(key: &str, label: &str, cell: Cell) -> Row {
    Row {
        key: key.to_string(),
        cells: vec![Cell::Text(label.to_string()), cell],
    }
}

/// A signed nanosecond figure: a duration, or `−` and a duration.
fn signed_ns(v: i64) -> Cell {
    if v >= 0 {
        Cell::Ns(v as u64)
    } else {
        Cell::Text(format!("−{} ns", v.unsigned_abs()))
    }
}

fn opt_ns(v: Option<i64>) -> Cell {
    v.map_or(Cell::Empty, signed_ns)
}

fn count(v: Option<f64>) -> Cell {
    match v {
        None => Cell::Empty,
        Some(x) if x.fract() == 0.0 && x >= 0.0 => Cell::Count(x as u64),
        Some(x) => Cell::Decimal(x, 1),
    }
}

/// What single-node reports show where a remote figure would be.
fn absent() -> Cell {
    Cell::Text("— (one node)".into())
}

/// The panels of the section, in order.
pub fn panels(r: &NumaReport, opts: &RenderOptions) -> Vec<Panel> {
    let mut out = vec![summary_panel(r)];
    out.push(nodes_panel(r));
    if !r.single_node && r.nodes.iter().any(|n| !n.remote.is_empty()) {
        out.push(remote_panel(r, opts.top));
    }
    if !r.what_if.is_empty() {
        out.push(what_if_panel(&r.what_if));
    }
    if let Some(p) = &r.plan {
        let rows = vec![
            field(
                "pages_moved",
                "Pages to move",
                Cell::Count(p.pages_moved as u64),
            ),
            field(
                "passes",
                "Passes of Figure 8 kept",
                Cell::Count(p.passes.into()),
            ),
            field(
                "competitive_moves",
                "Moves by lines 2–7 (to the node with more remote latency)",
                Cell::Count(p.competitive_moves),
            ),
            field(
                "balancing_moves",
                "Moves by lines 8–16 (to the least loaded node)",
                Cell::Count(p.balancing_moves),
            ),
            field(
                "max_remote_load_before_ns",
                "Largest remote latency load before (max Σ R′·r)",
                signed_ns(p.max_remote_load_before_ns),
            ),
            field(
                "max_remote_load_after_ns",
                "Largest remote latency load after",
                signed_ns(p.max_remote_load_after_ns),
            ),
        ];
        out.push(Panel::new(
            "numa_plan",
            "Page migration plan",
            "The page-migration algorithm of Nikolopoulos (Section 3.2, Figure 8), run until the largest \
             remote latency load of a node cannot be lowered further.",
            Body::Table(Table {
                columns: vec![Column::label("Metric", "metric"), Column::num("Value", "value")],
                rows,
                ..Table::default()
            }),
        ));
        if !r.migrations.is_empty() {
            let (shown, omitted) = take_top(&r.migrations, opts.top);
            let rows = shown
                .iter()
                .map(|m| Row {
                    key: match m.pid {
                        Some(pid) => format!("{pid}:{:#x}", m.page.0),
                        None => format!("{:#x}", m.page.0),
                    },
                    cells: vec![
                        m.pid.map_or(Cell::Empty, |p| Cell::Count(p.into())),
                        Cell::Text(format!("{:#x}", m.page.0)),
                        Cell::Count(m.from_node.into()),
                        Cell::Count(m.to_node.into()),
                        count(Some(m.accesses.round())),
                    ],
                })
                .collect();
            out.push(Panel::new(
                "numa_migrations",
                "Pages to migrate",
                "The plan's pages, the most accessed first.",
                Body::Table(Table {
                    columns: vec![
                        Column::num("PID", "pid"),
                        Column::text("Page", "page"),
                        Column::num("From node", "from_node"),
                        Column::num("To node", "to_node"),
                        Column::num("Accesses", "accesses"),
                    ],
                    rows,
                    omitted,
                    ..Table::default()
                }),
            ));
        }
    }
    if !r.hot_pages.is_empty() {
        let (shown, omitted) = take_top(&r.hot_pages, opts.top);
        let samples = shown.iter().any(|p| p.samples.is_some());
        let accesses = shown.iter().any(|p| p.accesses.is_some());
        let mut columns = vec![
            Column::num("PID", "pid"),
            Column::text("Page", "page"),
            Column::num("Node", "node"),
        ];
        if samples {
            columns.push(Column::num("Samples", "samples"));
        }
        if accesses {
            columns.push(Column::num("Accesses", "accesses"));
        }
        columns.push(Column::num("Local", "local_share"));
        let rows = shown
            .iter()
            .map(|p| {
                let mut cells = vec![
                    p.pid.map_or(Cell::Empty, |x| Cell::Count(x.into())),
                    Cell::Text(format!("{:#x}", p.page.0)),
                    Cell::Count(p.node.into()),
                ];
                if samples {
                    cells.push(p.samples.map_or(Cell::Empty, Cell::Count));
                }
                if accesses {
                    cells.push(count(p.accesses.map(f64::round)));
                }
                cells.push(Cell::Fraction(p.local_share));
                Row {
                    key: format!("{:#x}", p.page.0),
                    cells,
                }
            })
            .collect();
        out.push(Panel::new(
            "numa_hot_pages",
            "Most accessed pages",
            "Pages by accesses (or samples), most first; local = share from CPUs of the page's own node.",
            Body::Table(Table {
                columns,
                rows,
                omitted,
                ..Table::default()
            }),
        ));
    }
    if !r.notes.is_empty() {
        out.push(Panel::new(
            "numa_notes",
            "NUMA notes",
            "What to keep in mind reading this section.",
            Body::List(r.notes.clone()),
        ));
    }
    out
}

fn summary_panel(r: &NumaReport) -> Panel {
    let mut rows = vec![
        field("source", "Histograms from", Cell::Text(r.source.clone())),
        field(
            "node_count",
            "NUMA nodes",
            if r.single_node {
                Cell::Text("1 (no remote memory)".into())
            } else {
                Cell::Count(r.node_count as u64)
            },
        ),
        field("time_ns", "Run time t_ex", opt_ns(r.time_ns)),
        field(
            "latency",
            "Latencies from",
            Cell::Text(
                r.latency
                    .clone()
                    .unwrap_or_else(|| "none (no model)".into()),
            ),
        ),
        field(
            "variant",
            "Form of Eq. 9",
            Cell::Text(r.variant.name().into()),
        ),
        field(
            "overhead_ns",
            "Time lost to contention (Eq. 13)",
            opt_ns(r.overhead_ns),
        ),
        field(
            "overhead_share",
            "Share of the run time",
            r.overhead_share.map_or(Cell::Empty, Cell::Fraction),
        ),
        field(
            "bottleneck_node",
            "Bottleneck node (Eq. 13's maximum)",
            r.bottleneck_node
                .map_or(Cell::Empty, |b| Cell::Count(b.into())),
        ),
    ];
    if let Some(s) = &r.sampler {
        let unit = match s.period_unit {
            contend_trace::numa::PeriodUnit::Ns => "ns of CPU time",
            contend_trace::numa::PeriodUnit::Events => "events",
        };
        rows.push(field(
            "sampler.event",
            "Sampler",
            Cell::Text(
                format!("{} ({:?}), every {} {unit}", s.event, s.method, s.period).to_lowercase(),
            ),
        ));
        rows.push(field("sampler.samples", "Samples", Cell::Count(s.samples)));
        rows.push(field(
            "sampler.resolved",
            "Samples with a data address and its node",
            Cell::Count(s.resolved),
        ));
        rows.push(field(
            "sampler.no_memory_operand",
            "Samples at instructions without memory operand",
            Cell::Count(s.no_memory_operand),
        ));
        rows.push(field(
            "sampler.unresolved",
            "Samples unresolved",
            Cell::Count(s.unresolved),
        ));
        rows.push(field("sampler.lost", "Samples lost", Cell::Count(s.lost)));
    }
    Panel::new(
        "numa",
        "NUMA memory contention",
        "Time lost to contention at memory modules, estimated from access histograms and calibrated \
         latencies (Nikolopoulos, Eq. 1–13).",
        Body::Table(Table {
            columns: vec![Column::label("Metric", "metric"), Column::num("Value", "value")],
            rows,
            ..Table::default()
        }),
    )
}

fn nodes_panel(r: &NumaReport) -> Panel {
    let samples = r.nodes.iter().any(|n| n.local_samples.is_some());
    let accesses = r.nodes.iter().any(|n| n.local_accesses.is_some());
    let model = r.nodes.iter().any(|n| n.mu.is_some());
    let mut columns = vec![Column::num("Node", "node")];
    if accesses {
        columns.push(Column::num("Local accesses", "local_accesses"));
        columns.push(Column::num("Remote accesses", "remote_accesses"));
    }
    if samples {
        columns.push(Column::num("Local samples", "local_samples"));
        columns.push(Column::num("Remote samples", "remote_samples"));
    }
    if model {
        columns.push(Column::num("μ (Eq. 2)", "mu"));
        columns.push(Column::num("P(contention)", "p_cont"));
        columns.push(Column::num("l_nocont", "nocont_latency_ns"));
        columns.push(Column::num("l_i (Eq. 11)", "local_latency_ns"));
        columns.push(Column::num("Added (Eq. 13)", "added_latency_ns"));
        columns.push(Column::num("Remote load", "remote_load_ns"));
    }
    let rows = r
        .nodes
        .iter()
        .map(|n| {
            let mut cells = vec![Cell::Count(n.node.into())];
            if accesses {
                cells.push(count(n.local_accesses.map(f64::round)));
                cells.push(if r.single_node {
                    absent()
                } else {
                    count(n.remote_accesses.map(f64::round))
                });
            }
            if samples {
                cells.push(n.local_samples.map_or(Cell::Empty, Cell::Count));
                cells.push(if r.single_node {
                    absent()
                } else {
                    n.remote_samples.map_or(Cell::Empty, Cell::Count)
                });
            }
            if model {
                cells.push(n.mu.map_or(Cell::Empty, |m| Cell::Decimal(m, 6)));
                cells.push(n.p_cont.map_or(Cell::Empty, Cell::Fraction));
                cells.push(opt_ns(n.nocont_latency_ns));
                cells.push(opt_ns(n.local_latency_ns));
                cells.push(opt_ns(n.added_latency_ns));
                cells.push(if r.single_node {
                    absent()
                } else {
                    opt_ns(n.remote_load_ns)
                });
            }
            Row {
                key: n.node.to_string(),
                cells,
            }
        })
        .collect();
    Panel::new(
        "numa_nodes",
        "NUMA nodes",
        "Per memory node i: accesses to it from its own CPUs (L_i) and from other nodes (R_i, Eq. 1), the \
         mean number of accesses arriving in one window (μ_i, Eq. 2), the chance an access meets contention \
         (Σ p_cont, Eq. 10), the expected local latency (Eq. 11), the added latency of all accesses to the \
         node (Eq. 13) and the remote latency load Σ R′_ki r_ki (Section 3).",
        Body::Table(Table {
            columns,
            rows,
            ..Table::default()
        }),
    )
}

fn remote_panel(r: &NumaReport, top: usize) -> Panel {
    let mut all: Vec<(u32, &super::report::RemoteRow)> = r
        .nodes
        .iter()
        .flat_map(|n| n.remote.iter().map(move |x| (n.node, x)))
        .collect();
    all.sort_by(|a, b| {
        let w = |x: &super::report::RemoteRow| {
            x.accesses.or(x.samples.map(|s| s as f64)).unwrap_or(0.0)
        };
        w(b.1)
            .total_cmp(&w(a.1))
            .then((a.0, a.1.from_node).cmp(&(b.0, b.1.from_node)))
    });
    let (shown, omitted) = take_top(&all, top);
    let rows = shown
        .iter()
        .map(|(to, x)| Row {
            key: format!("{}->{}", x.from_node, to),
            cells: vec![
                Cell::Count(x.from_node.into()),
                Cell::Count((*to).into()),
                count(x.accesses.map(f64::round)),
                x.samples.map_or(Cell::Empty, Cell::Count),
                opt_ns(x.nocont_latency_ns),
                opt_ns(x.latency_ns),
            ],
        })
        .collect();
    Panel::new(
        "numa_remote",
        "Remote accesses",
        "Accesses R′_ki from CPUs of node k to memory of node i, most first, with the latency without \
         contention and the expected latency under contention r_ki (Eq. 12).",
        Body::Table(Table {
            columns: vec![
                Column::num("From node k", "from_node"),
                Column::num("To node i", "to_node"),
                Column::num("Accesses", "accesses"),
                Column::num("Samples", "samples"),
                Column::num("r_ki,nocont", "nocont_latency_ns"),
                Column::num("r_ki (Eq. 12)", "latency_ns"),
            ],
            rows,
            omitted,
            ..Table::default()
        }),
    )
}

fn what_if_panel(w: &[WhatIfRow]) -> Panel {
    let rows = w
        .iter()
        .map(|x| Row {
            key: x.placement.clone(),
            cells: vec![
                Cell::Text(x.description.clone()),
                signed_ns(x.time_ns),
                Cell::Decimal(x.change * 100.0, 1),
                x.slowest_node
                    .map_or(Cell::Empty, |k| Cell::Count(k.into())),
                signed_ns(x.overhead_ns),
                Cell::Fraction(x.local_share),
            ],
        })
        .collect();
    Panel::new(
        "numa_what_if",
        "Other placements (what-if)",
        "The run time estimated for the same program with its pages placed otherwise (Nikolopoulos Eq. 14, \
         generalised): change in per cent of the measured time; slowest node = the source node whose accesses \
         gain the most.",
        Body::Table(Table {
            columns: vec![
                Column::text("Placement", "placement"),
                Column::num("Estimated time", "time_ns"),
                Column::num("Change %", "change_pct"),
                Column::num("Slowest node", "slowest_node"),
                Column::num("Eq. 13 after", "overhead_ns"),
                Column::num("Local share", "local_share"),
            ],
            rows,
            ..Table::default()
        }),
    )
}

/// The NUMA section's lines of "At a glance": the time Eq. 13 estimates
/// was lost to memory contention and where (the bottleneck node), and what
/// the migration plan (Section 3) moves and gains.
fn headlines(r: &NumaReport) -> Vec<String> {
    use crate::report::fmt::{duration_plain as time, int, percent, PLAIN};
    let mut out = Vec::new();
    if let Some(ns) = r.overhead_ns {
        let mut line = format!(
            "Memory contention (NUMA model, Eq. 13): an estimated {} lost",
            time(ns.max(0) as u64)
        );
        if let Some(share) = r.overhead_share {
            line.push_str(&format!(", {} of the run's time", percent(share, &PLAIN)));
        }
        match (r.single_node, r.bottleneck_node) {
            (true, _) => line.push_str(" (one node: no remote memory)"),
            (false, Some(n)) if ns > 0 => line.push_str(&format!(", the most at node {n}")),
            _ => {}
        }
        line.push('.');
        out.push(line);
    }
    if let Some(p) = r.plan.as_ref().filter(|p| p.pages_moved > 0) {
        out.push(format!(
            "Page migration plan: {} page{} to move; the largest remote load {} → {}.",
            int(p.pages_moved as u64, &PLAIN),
            if p.pages_moved == 1 { "" } else { "s" },
            time(p.max_remote_load_before_ns.max(0) as u64),
            time(p.max_remote_load_after_ns.max(0) as u64)
        ));
    }
    out
}
