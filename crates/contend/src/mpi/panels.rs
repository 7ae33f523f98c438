//! The panels of the root-cause, critical-path and mpiP-style tables of
//! the MPI section ([`super::delay`], [`mod@super::critical_path`],
//! [`super::statistics`]), drawn after the wait-state panels of
//! [`super::layout`].

use super::delay::MpiDelayReport;
use super::report::MpiReport;
use super::statistics::SizeBucket;
use crate::report::layout::{take_top, Body, Cell, Column, Panel, Row, Table};

fn table(id: &'static str, title: &str, caption: &str, table: Table) -> Panel {
    Panel::new(id, title, caption, Body::Table(table))
}

/// The panels, in report order; a run without wait states gets the
/// critical path and the statistics only.
pub fn panels(m: &MpiReport, top: usize) -> Vec<Panel> {
    let mut out = Vec::new();
    if m.delay.wait_ns > 0 {
        out.push(delay_by_rank(&m.delay, top));
        out.push(delay_by_region(&m.delay, top));
        out.push(root_causes(&m.delay, top));
    }
    if m.critical_path.length_ns > 0 {
        out.push(critical_path_overview(m));
        out.push(critical_path_regions(m, top));
        if let Some(l) = &m.critical_path.locks {
            out.push(critical_path_locks(l, top));
        }
    }
    if !m.wait_matrix.is_empty() {
        out.push(wait_matrix(m, top));
    }
    if !m.messages_by_site.is_empty() {
        out.push(messages_by_site(m, top));
    }
    if !m.by_site_rank.is_empty() {
        out.push(by_site_rank(m, top));
    }
    out
}

fn delay_by_rank(d: &MpiDelayReport, top: usize) -> Panel {
    let (rows, omitted) = take_top(&d.by_rank, top);
    table(
        "mpi_root_causes_by_rank",
        "MPI root causes per rank",
        "Delay analysis (Böhme et al., TOPC 2016): every wait state's waiting is charged to the excess time \
         the late rank spent since the two ranks last synchronised (its delay). Short-term cost = waiting \
         caused directly; long-term cost = waiting caused through propagation (wait states that made \
         their rank late in turn); root of = wait states whose root cause lies on the rank. The rank with \
         the largest cost is the root cause of the waiting, even when its neighbours were the ranks \
         others waited for directly.",
        Table {
            columns: vec![
                Column::num("Rank", "rank"),
                Column::num("Short-term", "short_term_ns"),
                Column::num("Long-term", "long_term_ns"),
                Column::num("Cost", "cost_ns"),
                Column::num("Share", "share"),
                Column::num("Root of", "root_of"),
            ],
            rows: rows
                .iter()
                .map(|r| Row {
                    key: r.rank.to_string(),
                    cells: vec![
                        Cell::Count(r.rank.into()),
                        Cell::Ns(r.short_term_ns),
                        Cell::Ns(r.long_term_ns),
                        Cell::Ns(r.cost_ns),
                        Cell::Fraction(r.share),
                        Cell::Count(r.root_of),
                    ],
                })
                .collect(),
            omitted,
            bars: vec![3],
            ..Table::default()
        },
    )
}

fn delay_by_region(d: &MpiDelayReport, top: usize) -> Panel {
    let (rows, omitted) = take_top(&d.by_rank_region, top);
    table(
        "mpi_root_causes_by_region",
        "MPI root causes per rank and region",
        "Where the late ranks spent their excess time: a computation interval between two MPI calls of \
         the rank, or an MPI call outside its wait state; with the short-term and long-term costs of \
         that delay (Böhme et al., TOPC 2016).",
        Table {
            columns: vec![
                Column::num("Rank", "rank"),
                Column::wrapped("Region", "region"),
                Column::num("Short-term", "short_term_ns"),
                Column::num("Long-term", "long_term_ns"),
                Column::num("Cost", "cost_ns"),
                Column::num("Share", "share"),
            ],
            rows: rows
                .iter()
                .map(|r| Row {
                    key: format!("{}:{}", r.rank.unwrap_or(0), r.name.region),
                    cells: vec![
                        r.rank.map_or(Cell::Empty, |x| Cell::Count(x.into())),
                        Cell::Text(r.name.region.clone()),
                        Cell::Ns(r.short_term_ns),
                        Cell::Ns(r.long_term_ns),
                        Cell::Ns(r.cost_ns),
                        Cell::Fraction(r.share),
                    ],
                })
                .collect(),
            omitted,
            ..Table::default()
        },
    )
}

fn root_causes(d: &MpiDelayReport, top: usize) -> Panel {
    let (rows, omitted) = take_top(&d.wait_states, top);
    // rows the report did not keep (beyond `--root-causes`) are left out too
    let omitted = omitted + (d.wait_states_total as usize).saturating_sub(d.wait_states.len());
    table(
        "mpi_root_causes_longest_waits",
        "MPI longest wait states and their root causes",
        "The longest wait states: who waited where, for whom directly, how much of it the late rank only \
         passed on (indirect), how much later waiting it caused (propagated), and the rank and region \
         it goes back to.",
        Table {
            columns: vec![
                Column::num("Rank", "rank"),
                Column::wrapped("Call", "call"),
                Column::num("Wait", "wait_ns"),
                Column::num("Waited for", "cause"),
                Column::num("Indirect", "indirect_ns"),
                Column::num("Propagated", "propagated_ns"),
                Column::num("Root rank", "root_rank"),
                Column::wrapped("Root region", "root"),
            ],
            rows: rows
                .iter()
                .map(|w| Row {
                    key: format!("{}@{}", w.rank, w.enter_ns),
                    cells: vec![
                        Cell::Count(w.rank.into()),
                        Cell::Text(w.call.clone()),
                        Cell::Ns(w.wait_ns),
                        Cell::Count(w.cause.into()),
                        Cell::Ns(w.indirect_ns),
                        Cell::Ns(w.propagated_ns),
                        w.root_rank.map_or(Cell::Empty, |r| Cell::Count(r.into())),
                        w.root
                            .as_ref()
                            .map_or(Cell::Empty, |r| Cell::Text(r.region.clone())),
                    ],
                })
                .collect(),
            omitted,
            ..Table::default()
        },
    )
}

fn critical_path_overview(m: &MpiReport) -> Panel {
    let cp = &m.critical_path;
    let opt_rank = |r: Option<u32>| r.map_or(Cell::Empty, |x| Cell::Count(x.into()));
    let mut rows: Vec<(&str, String, Cell)> = vec![
        ("length_ns", "Length".into(), Cell::Ns(cp.length_ns)),
        (
            "end_rank",
            "Ends on rank (finished last)".into(),
            opt_rank(cp.end_rank),
        ),
        (
            "start_rank",
            "Begins on rank".into(),
            opt_rank(cp.start_rank),
        ),
        ("jumps", "Jumps between ranks".into(), Cell::Count(cp.jumps)),
        ("mpi_ns", "In MPI calls".into(), Cell::Ns(cp.mpi_ns)),
        ("compute_ns", "Computing".into(), Cell::Ns(cp.compute_ns)),
        (
            "imbalance_ns",
            "Critical-path imbalance".into(),
            Cell::Ns(cp.imbalance_ns),
        ),
        (
            "imbalance_share",
            "Imbalance, share of the path".into(),
            Cell::Fraction(cp.imbalance_share),
        ),
    ];
    for r in &cp.by_rank {
        rows.push((
            "rank",
            format!(
                "Rank {} on the path ({:.1} % of it)",
                r.rank,
                r.share * 100.0
            ),
            Cell::Ns(r.ns),
        ));
    }
    table(
        "mpi_critical_path",
        "MPI critical path",
        "The chain of computation and communication across ranks that determined the run's length \
         (Böhme et al., IPDPS 2012), followed backward from the rank that finished last through every \
         wait state to the rank waited for. Critical-path imbalance: Σ over regions of the time on the \
         path above the ranks' average time there, i.e. what evening out the work would save.",
        Table {
            columns: vec![
                Column::label("Critical path", "field"),
                Column::text("Value", "value"),
            ],
            rows: rows
                .into_iter()
                .map(|(key, label, cell)| Row {
                    key: key.to_string(),
                    cells: vec![Cell::Text(label), cell],
                })
                .collect(),
            ..Table::default()
        },
    )
}

fn critical_path_regions(m: &MpiReport, top: usize) -> Panel {
    let (rows, omitted) = take_top(&m.critical_path.by_region, top);
    table(
        "mpi_critical_path_regions",
        "MPI critical path per region",
        "Time of each region on the critical path, its share of the path, the ranks' average time there \
         (outside wait states) and the critical-path imbalance (on the path minus average, at least 0).",
        Table {
            columns: vec![
                Column::wrapped("Region", "region"),
                Column::num("On path", "ns"),
                Column::num("Share", "share"),
                Column::num("Avg rank", "avg_rank_ns"),
                Column::num("Imbalance", "imbalance_ns"),
                Column::num("Ranks", "ranks"),
            ],
            rows: rows
                .iter()
                .map(|r| Row {
                    key: r.name.region.clone(),
                    cells: vec![
                        Cell::Text(r.name.region.clone()),
                        Cell::Ns(r.ns),
                        Cell::Fraction(r.share),
                        Cell::Ns(r.avg_rank_ns),
                        Cell::Ns(r.imbalance_ns),
                        Cell::Count(r.ranks.into()),
                    ],
                })
                .collect(),
            omitted,
            ..Table::default()
        },
    )
}

/// Up to this many ranks the wait matrix is drawn as a matrix; larger
/// runs get the list of rank pairs.
const MATRIX_RANKS: usize = 12;

fn wait_matrix(m: &MpiReport, top: usize) -> Panel {
    let caption = "Who waited for whom: the waiting of each rank (rows) for each late rank (columns →r), all \
                   patterns, and each rank's total.";
    let mut ranks: Vec<u32> = m
        .wait_matrix
        .iter()
        .flat_map(|p| [p.rank, p.cause])
        .collect();
    ranks.sort_unstable();
    ranks.dedup();
    if ranks.len() <= MATRIX_RANKS {
        let mut columns = vec![Column::num("Rank", "rank")];
        let titles: Vec<String> = ranks.iter().map(|r| format!("→{r}")).collect();
        for t in &titles {
            columns.push(Column::num(t, t));
        }
        columns.push(Column::num("Total", "wait_ns"));
        let rows = ranks
            .iter()
            .filter(|&&w| m.wait_matrix.iter().any(|p| p.rank == w))
            .map(|&w| {
                let mut cells = vec![Cell::Count(w.into())];
                let mut total = 0;
                for &c in &ranks {
                    match m.wait_matrix.iter().find(|p| p.rank == w && p.cause == c) {
                        Some(p) => {
                            total += p.wait_ns;
                            cells.push(Cell::Ns(p.wait_ns));
                        }
                        None => cells.push(Cell::Empty),
                    }
                }
                cells.push(Cell::Ns(total));
                Row {
                    key: w.to_string(),
                    cells,
                }
            })
            .collect();
        return table(
            "mpi_wait_matrix",
            "MPI waits by rank pair",
            caption,
            Table {
                columns,
                rows,
                ..Table::default()
            },
        );
    }
    let mut pairs: Vec<&super::statistics::MpiWaitPairRow> = m.wait_matrix.iter().collect();
    pairs.sort_by(|a, b| {
        b.wait_ns
            .cmp(&a.wait_ns)
            .then(a.rank.cmp(&b.rank))
            .then(a.cause.cmp(&b.cause))
    });
    let (pairs, omitted) = take_top(&pairs, top);
    table(
        "mpi_wait_matrix",
        "MPI waits by rank pair",
        caption,
        Table {
            columns: vec![
                Column::num("Rank", "rank"),
                Column::num("Waited for", "cause"),
                Column::num("Waits", "wait_states"),
                Column::num("Wait", "wait_ns"),
                Column::num("P2P", "p2p_wait_ns"),
                Column::num("Coll.", "collective_wait_ns"),
            ],
            rows: pairs
                .iter()
                .map(|p| Row {
                    key: format!("{}>{}", p.rank, p.cause),
                    cells: vec![
                        Cell::Count(p.rank.into()),
                        Cell::Count(p.cause.into()),
                        Cell::Count(p.wait_states),
                        Cell::Ns(p.wait_ns),
                        Cell::Ns(p.p2p_wait_ns),
                        Cell::Ns(p.collective_wait_ns),
                    ],
                })
                .collect(),
            omitted,
            bars: vec![3],
            ..Table::default()
        },
    )
}

fn histogram_text(h: &[SizeBucket]) -> String {
    let size = |b: u64| {
        if b >= 1 << 30 {
            format!("{}G", b >> 30)
        } else if b >= 1 << 20 {
            format!("{}M", b >> 20)
        } else if b >= 1 << 10 {
            format!("{}K", b >> 10)
        } else {
            b.to_string()
        }
    };
    h.iter()
        .map(|b| {
            if b.min_bytes == b.max_bytes {
                format!("{}: {}", size(b.min_bytes), b.count)
            } else {
                format!(
                    "{}–{}: {}",
                    size(b.min_bytes),
                    size(b.max_bytes + 1),
                    b.count
                )
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn messages_by_site(m: &MpiReport, top: usize) -> Panel {
    let (rows, omitted) = take_top(&m.messages_by_site, top);
    let s = &m.message_sizes;
    table(
        "mpi_messages_by_site",
        "MPI messages per call site",
        &format!(
            "Bytes sent per call site (cf. mpiP's \"Callsite Message Sent statistics\"): point-to-point \
             sends posted there, or for a collective the bytes each call contributed; sizes in power-of-two \
             buckets (from–below: count). All point-to-point sends: {} messages, {} bytes, {}.",
            s.messages,
            s.bytes,
            histogram_text(&s.histogram)
        ),
        Table {
            columns: vec![
                Column::text("Operation", "operation"),
                Column::wrapped("Call site", "site"),
                Column::num("Messages", "messages"),
                Column::num("Bytes", "bytes"),
                Column::num("Min", "min_bytes"),
                Column::num("Avg", "avg_bytes"),
                Column::num("Max", "max_bytes"),
                Column::wrapped("Sizes", "histogram"),
                Column::num("Ranks", "ranks"),
            ],
            rows: rows
                .iter()
                .map(|r| Row {
                    key: format!("{}@{}:{}", r.operation, r.site, r.kind),
                    cells: vec![
                        Cell::Text(r.operation.clone()),
                        Cell::Text(r.site.clone()),
                        Cell::Count(r.messages),
                        Cell::Count(r.bytes),
                        Cell::Count(r.min_bytes),
                        Cell::Count(r.avg_bytes),
                        Cell::Count(r.max_bytes),
                        Cell::Text(histogram_text(&r.histogram)),
                        Cell::Count(r.ranks.into()),
                    ],
                })
                .collect(),
            omitted,
            ..Table::default()
        },
    )
}

fn by_site_rank(m: &MpiReport, top: usize) -> Panel {
    let (rows, omitted) = take_top(&m.by_site_rank, top);
    table(
        "mpi_by_site_rank",
        "MPI per call site and rank",
        "Each call site on each rank (cf. mpiP's \"Callsite Time statistics\"): calls, total, smallest, \
         average and largest duration, wait, and the share of the rank's running time (App %, from the \
         end of MPI_Init to MPI_Finalize) and of its time in MPI (MPI %). Most time first.",
        Table {
            columns: vec![
                Column::text("Operation", "operation"),
                Column::wrapped("Call site", "site"),
                Column::num("Rank", "rank"),
                Column::num("Calls", "events"),
                Column::num("Time", "duration_ns"),
                Column::num("Min", "min_ns"),
                Column::num("Avg", "avg_ns"),
                Column::num("Max", "max_ns"),
                Column::num("Wait", "wait_ns"),
                Column::num("App %", "app_share"),
                Column::num("MPI %", "mpi_share"),
            ],
            rows: rows
                .iter()
                .map(|r| Row {
                    key: format!("{}@{}:{}", r.operation, r.site, r.rank),
                    cells: vec![
                        Cell::Text(r.operation.clone()),
                        Cell::Text(r.site.clone()),
                        Cell::Count(r.rank.into()),
                        Cell::Count(r.events),
                        Cell::Ns(r.duration_ns),
                        Cell::Ns(r.min_ns),
                        Cell::Ns(r.avg_ns),
                        Cell::Ns(r.max_ns),
                        Cell::Ns(r.wait_ns),
                        Cell::Fraction(r.app_share),
                        Cell::Fraction(r.mpi_share),
                    ],
                })
                .collect(),
            omitted,
            ..Table::default()
        },
    )
}

fn critical_path_locks(l: &super::hybrid::MpiPathLocks, top: usize) -> Panel {
    let (rows, omitted) = take_top(&l.by_site, top);
    table(
        "mpi_critical_path_locks",
        "MPI critical path: lock waits",
        &format!(
            "Hybrid run: the lock events of the ranks' threads on the critical path across ranks (the lock \
             critical path of each rank's process, walked inside every stretch of the MPI critical path on \
             that rank): {} events ({} contended), {} ns of waiting, {:.2} % of the path; {} rank(s) with a \
             lock trace.",
            l.events,
            l.contended,
            l.wait_ns,
            l.wait_share * 100.0,
            l.ranks_with_locks
        ),
        Table {
            columns: vec![
                Column::num("Rank", "rank"),
                Column::wrapped("Lock", "lock"),
                Column::wrapped("Call site", "site"),
                Column::num("Events", "events"),
                Column::num("Wait", "wait_ns"),
                Column::num("Hold", "hold_ns"),
            ],
            rows: rows
                .iter()
                .map(|r| Row {
                    key: format!("{}:{}@{}", r.rank, r.lock, r.site),
                    cells: vec![
                        Cell::Count(r.rank.into()),
                        Cell::Text(r.lock.clone()),
                        Cell::Text(r.site.clone()),
                        Cell::Count(r.events),
                        Cell::Ns(r.wait_ns),
                        Cell::Ns(r.hold_ns),
                    ],
                })
                .collect(),
            omitted,
            bars: vec![4],
            ..Table::default()
        },
    )
}
