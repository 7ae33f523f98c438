//! The MPI section of a report (JSON key `mpi`): wait states per
//! pattern, per rank and per call site (Venter 2016, Tables 4.13–4.15), and
//! how it is built from an [`MpiAnalysis`].

use std::collections::HashMap;

use contend_trace::mpi::{MpiOp, MpiRecording};
use serde::Serialize;

use super::analysis::{is_p2p_op, MatchStats, MpiAnalysis, Pattern};
use crate::recording::Recording;
use crate::symbols::{ResolvedSite, Symbols};
use contend_symbolize::ProcessMaps;

/// Thresholds of the wait-state report (the thesis's MPITool.conf, Venter
/// 2016, Section 3.2.2.3): a wait shorter than its threshold is not counted
/// as a wait state. Both 0 by default (every positive wait counts).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MpiOptions {
    /// Threshold of the point-to-point patterns (late sender, late
    /// receiver), ns (`--threshold-p2p`, `mpi.threshold_p2p`).
    pub threshold_p2p_ns: u64,
    /// Threshold of the collective patterns, ns (`--threshold-collective`,
    /// `mpi.threshold_collective`).
    pub threshold_collective_ns: u64,
}

impl MpiOptions {
    /// The threshold that applies to `p`, ns.
    pub fn threshold(&self, p: Pattern) -> u64 {
        if p.is_p2p() {
            self.threshold_p2p_ns
        } else {
            self.threshold_collective_ns
        }
    }
}

/// A rank and a time, ns: the extreme of a per-rank total.
#[derive(Debug, Clone, Copy, Serialize, Default, PartialEq, Eq)]
pub struct RankNs {
    /// World rank.
    pub rank: u32,
    /// The rank's total, ns.
    pub ns: u64,
}

/// One wait-state pattern over the whole run (a column of Venter 2016,
/// Table 4.13).
#[derive(Debug, Clone, Serialize, Default, PartialEq)]
pub struct MpiPatternSummary {
    /// Wait states counted (waits > 0 and at least the threshold).
    pub count: u64,
    /// Σ wait, ns (the thesis's "total time delay", equal to its "total
    /// late time": every wait has one late rank).
    pub wait_ns: u64,
    /// Σ duration of the calls that waited, ns.
    pub duration_ns: u64,
    /// `duration_ns / count`, ns (0 without events).
    pub avg_duration_ns: u64,
    /// Shortest such call, ns.
    pub min_duration_ns: u64,
    /// Longest such call, ns.
    pub max_duration_ns: u64,
    /// `wait_ns / count`, ns.
    pub avg_wait_ns: u64,
    /// Shortest wait counted, ns.
    pub min_wait_ns: u64,
    /// Longest wait, ns.
    pub max_wait_ns: u64,
    /// The traced rank that waited least in this pattern (its total).
    pub least_delayed: Option<RankNs>,
    /// The rank that waited most in this pattern (its total).
    pub most_delayed: Option<RankNs>,
    /// The traced rank that caused the least wait in this pattern.
    pub least_late: Option<RankNs>,
    /// The rank that caused the most wait in this pattern ("lateness").
    pub most_late: Option<RankNs>,
}

/// All calls of one class, point to point or collective (columns P2P and
/// Collective of Venter 2016, Table 4.13).
#[derive(Debug, Clone, Serialize, Default, PartialEq)]
pub struct MpiClassSummary {
    /// Calls.
    pub events: u64,
    /// Σ call duration, ns.
    pub duration_ns: u64,
    /// `duration_ns / events`, ns.
    pub avg_duration_ns: u64,
    /// Shortest call, ns.
    pub min_duration_ns: u64,
    /// Longest call, ns.
    pub max_duration_ns: u64,
    /// Wait states counted in the class.
    pub wait_states: u64,
    /// Σ wait of those, ns.
    pub wait_ns: u64,
    /// `duration_ns` / Σ over traced ranks of their span (the thesis's
    /// "total duration of events as a % of total running time for all
    /// processes"), a fraction.
    pub share_of_runtime: f64,
}

/// One rank (Venter 2016, Table 4.13: delay experienced, lateness caused).
#[derive(Debug, Clone, Serialize, Default, PartialEq)]
pub struct MpiRankRow {
    /// World rank.
    pub rank: u32,
    /// Process id.
    pub pid: u32,
    /// Host it ran on.
    pub host: String,
    /// MPI calls recorded.
    pub events: u64,
    /// Σ call duration, ns.
    pub duration_ns: u64,
    /// First call's enter to last call's exit, ns (the rank's running time).
    pub span_ns: u64,
    /// Σ wait this rank experienced (all patterns), ns.
    pub wait_ns: u64,
    /// Σ wait this rank caused others (its lateness), ns.
    pub caused_ns: u64,
    /// Of `wait_ns`: point to point.
    pub p2p_wait_ns: u64,
    /// Of `wait_ns`: collective.
    pub collective_wait_ns: u64,
    /// Of `caused_ns`: point to point.
    pub p2p_caused_ns: u64,
    /// Of `caused_ns`: collective.
    pub collective_caused_ns: u64,
    /// The rank returned from `MPI_Finalize`.
    pub finalized: bool,
    /// The call the rank ended in without returning (aborted, killed,
    /// crashed), e.g. `MPI_Recv`; `None` when it did not.
    pub aborted_in: Option<String>,
}

/// One call site (`MPI_Reduce at is.c:main:1066`; Venter 2016, Tables
/// 4.14 and 4.15), summed over all ranks.
#[derive(Debug, Clone, Serialize, Default, PartialEq)]
pub struct MpiSiteRow {
    /// Function containing the call, `None` if unknown.
    pub function: Option<String>,
    /// Source file, `None` without debug information.
    pub file: Option<String>,
    /// Source line, `None` without debug information.
    pub line: Option<u32>,
    /// Module (executable or library) path.
    pub module: Option<String>,
    /// Offset of the return address in the module, hexadecimal.
    pub offset: String,
    /// `dwarf`, `symbols` or `none`.
    pub debug: String,
    /// Short display form, e.g. `main (is.c:1066)`.
    pub display: String,
    /// The MPI function called there, e.g. `MPI_Reduce`.
    pub operation: String,
    /// Calls at this site (all ranks).
    pub events: u64,
    /// Σ call duration, ns.
    pub duration_ns: u64,
    /// `duration_ns / events`, ns.
    pub avg_duration_ns: u64,
    /// Wait states counted at this site.
    pub wait_states: u64,
    /// Σ wait, ns.
    pub wait_ns: u64,
    /// `wait_ns / events`, ns.
    pub avg_wait_ns: u64,
    /// Longest wait, ns.
    pub max_wait_ns: u64,
    /// Ranks that called here.
    pub ranks: u32,
}

/// Thresholds as applied, ns.
#[derive(Debug, Clone, Copy, Serialize, Default, PartialEq, Eq)]
pub struct MpiThresholds {
    /// Point-to-point threshold, ns.
    pub p2p_ns: u64,
    /// Collective threshold, ns.
    pub collective_ns: u64,
}

/// The MPI wait-state report (JSON key `mpi`; docs/json.md,
/// docs/mpi-wait-states.md).
#[derive(Debug, Clone, Serialize, Default, PartialEq)]
pub struct MpiReport {
    /// Size of `MPI_COMM_WORLD`.
    pub ranks: u32,
    /// Ranks with a readable trace.
    pub ranks_traced: u32,
    /// Ranks without a trace.
    pub missing_ranks: Vec<u32>,
    /// Ranks that ended inside an MPI call.
    pub aborted_ranks: Vec<u32>,
    /// MPI library name and version (first rank's).
    pub library: String,
    /// Thresholds applied.
    pub thresholds: MpiThresholds,
    /// All point-to-point calls.
    pub p2p: MpiClassSummary,
    /// All collective calls.
    pub collective: MpiClassSummary,
    /// Late sender (Geimer et al. 2009).
    pub late_sender: MpiPatternSummary,
    /// Late receiver.
    pub late_receiver: MpiPatternSummary,
    /// Wait at barrier.
    pub wait_at_barrier: MpiPatternSummary,
    /// Wait at N×N.
    pub wait_at_nxn: MpiPatternSummary,
    /// Late broadcast.
    pub late_broadcast: MpiPatternSummary,
    /// Early reduce.
    pub early_reduce: MpiPatternSummary,
    /// Early scan.
    pub early_scan: MpiPatternSummary,
    /// What matching found (messages, unmatched, skipped collectives).
    pub matching: MatchStats,
    /// Per traced rank, ascending by rank.
    pub by_rank: Vec<MpiRankRow>,
    /// Per call site and operation, most wait first (then most duration).
    pub by_site: Vec<MpiSiteRow>,
}

impl MpiReport {
    /// The summary of pattern `p`.
    pub fn pattern(&self, p: Pattern) -> &MpiPatternSummary {
        match p {
            Pattern::LateSender => &self.late_sender,
            Pattern::LateReceiver => &self.late_receiver,
            Pattern::WaitAtBarrier => &self.wait_at_barrier,
            Pattern::WaitAtNxN => &self.wait_at_nxn,
            Pattern::LateBroadcast => &self.late_broadcast,
            Pattern::EarlyReduce => &self.early_reduce,
            Pattern::EarlyScan => &self.early_scan,
        }
    }

    fn pattern_mut(&mut self, p: Pattern) -> &mut MpiPatternSummary {
        match p {
            Pattern::LateSender => &mut self.late_sender,
            Pattern::LateReceiver => &mut self.late_receiver,
            Pattern::WaitAtBarrier => &mut self.wait_at_barrier,
            Pattern::WaitAtNxN => &mut self.wait_at_nxn,
            Pattern::LateBroadcast => &mut self.late_broadcast,
            Pattern::EarlyReduce => &mut self.early_reduce,
            Pattern::EarlyScan => &mut self.early_scan,
        }
    }
}

/// Resolves MPI call sites (return addresses in a rank's process).
pub trait SiteResolver {
    /// The call site with return address `address` in process `pid`.
    fn site(&mut self, pid: u32, address: u64) -> ResolvedSite;
}

/// Resolves MPI call sites through the memory-map snapshots of the
/// recording (`maps/<pid>.maps`, and `<pid>.<n>.maps`, the n-th program
/// the process exec'd: a rank started by `mpirun` is usually its
/// launcher's child exec'ing the program; docs/trace-format.md) and the
/// shared symbolizer, moving sites in system headers to the user's frame
/// like lock call sites. An address is resolved in the latest generation
/// whose maps cover it.
pub struct MapsSiteResolver<'a> {
    recording: &'a Recording,
    symbols: &'a Symbols,
    /// Pids already looked up (their warnings said once).
    seen: std::collections::HashSet<u32>,
    /// Processes whose maps could not be read, one sentence each.
    pub warnings: Vec<String>,
}

impl<'a> MapsSiteResolver<'a> {
    /// A resolver over the maps snapshots of `recording`.
    pub fn new(recording: &'a Recording, symbols: &'a Symbols) -> MapsSiteResolver<'a> {
        MapsSiteResolver {
            recording,
            symbols,
            seen: Default::default(),
            warnings: Vec::new(),
        }
    }
}

impl SiteResolver for MapsSiteResolver<'_> {
    fn site(&mut self, pid: u32, address: u64) -> ResolvedSite {
        let all = self.recording.maps_of_pid(pid);
        if self.seen.insert(pid) {
            for m in &all {
                if let Err(e) = m {
                    self.warnings.push(format!(
                        "{e}; MPI call sites of pid {pid} in it are shown as addresses"
                    ));
                }
            }
            if all.is_empty() {
                self.warnings.push(format!(
                    "{}: no maps file of pid {pid}; its MPI call sites are shown as addresses",
                    self.recording.dir.join("maps").display()
                ));
            }
        }
        let readable: Vec<&ProcessMaps> = all.into_iter().filter_map(Result::ok).collect();
        let maps = readable
            .iter()
            .find(|m| m.find(address).is_some())
            .or(readable.first())
            .copied();
        self.symbols.site(maps, address)
    }
}

#[derive(Default)]
struct Acc {
    n: u64,
    sum: u64,
    min: u64,
    max: u64,
}

impl Acc {
    fn add(&mut self, v: u64) {
        if self.n == 0 || v < self.min {
            self.min = v;
        }
        self.max = self.max.max(v);
        self.n += 1;
        self.sum += v;
    }
    fn avg(&self) -> u64 {
        self.sum.checked_div(self.n).unwrap_or(0)
    }
}

/// Builds the report from `analysis` of `rec`: applies the thresholds,
/// sums per pattern, rank and call site (resolved by `resolver`).
pub fn build_report(
    rec: &MpiRecording,
    analysis: &MpiAnalysis,
    opts: &MpiOptions,
    resolver: &mut dyn SiteResolver,
) -> MpiReport {
    let mut r = MpiReport {
        ranks: rec
            .world_size
            .max(rec.ranks.iter().map(|t| t.rank + 1).max().unwrap_or(0)),
        ranks_traced: rec.ranks.len() as u32,
        missing_ranks: rec.missing_ranks.clone(),
        aborted_ranks: rec
            .ranks
            .iter()
            .filter(|t| t.aborted_in.is_some())
            .map(|t| t.rank)
            .collect(),
        library: rec
            .ranks
            .iter()
            .map(|t| t.library.clone())
            .find(|l| !l.is_empty())
            .unwrap_or_default(),
        thresholds: MpiThresholds {
            p2p_ns: opts.threshold_p2p_ns,
            collective_ns: opts.threshold_collective_ns,
        },
        matching: analysis.stats.clone(),
        ..MpiReport::default()
    };
    let index: HashMap<u32, usize> = rec
        .ranks
        .iter()
        .enumerate()
        .rev()
        .map(|(i, t)| (t.rank, i))
        .collect();

    // Counted waits per (rank index, event).
    let mut counted: HashMap<(usize, usize), (Pattern, u64)> = HashMap::new();
    let mut per_pattern: HashMap<Pattern, (Acc, Acc)> = HashMap::new();
    let mut wait_by: HashMap<(Pattern, u32), u64> = HashMap::new();
    let mut caused_by: HashMap<(Pattern, u32), u64> = HashMap::new();
    for w in &analysis.waits {
        if w.wait_ns == 0 || w.wait_ns < opts.threshold(w.pattern) {
            continue;
        }
        let Some(&ri) = index.get(&w.rank) else {
            continue;
        };
        let Some(e) = rec.ranks[ri].events.get(w.event) else {
            continue;
        };
        counted.insert((ri, w.event), (w.pattern, w.wait_ns));
        let (waits, durs) = per_pattern.entry(w.pattern).or_default();
        waits.add(w.wait_ns);
        durs.add(e.exit_ns.saturating_sub(e.enter_ns));
        *wait_by.entry((w.pattern, w.rank)).or_default() += w.wait_ns;
        *caused_by.entry((w.pattern, w.cause)).or_default() += w.wait_ns;
    }
    let traced: Vec<u32> = rec.ranks.iter().map(|t| t.rank).collect();
    for p in Pattern::ALL {
        let Some((waits, durs)) = per_pattern.get(&p) else {
            continue;
        };
        let extremes = |m: &HashMap<(Pattern, u32), u64>| {
            let mut least: Option<RankNs> = None;
            let mut most: Option<RankNs> = None;
            for &rank in &traced {
                let ns = m.get(&(p, rank)).copied().unwrap_or(0);
                if least.is_none_or(|l| ns < l.ns) {
                    least = Some(RankNs { rank, ns });
                }
                if most.is_none_or(|l| ns > l.ns) {
                    most = Some(RankNs { rank, ns });
                }
            }
            // A cause may be a rank without a trace.
            for (&(q, rank), &ns) in m {
                if q == p && most.is_none_or(|l| ns > l.ns) {
                    most = Some(RankNs { rank, ns });
                }
            }
            (least, most)
        };
        let (least_delayed, most_delayed) = extremes(&wait_by);
        let (least_late, most_late) = extremes(&caused_by);
        *r.pattern_mut(p) = MpiPatternSummary {
            count: waits.n,
            wait_ns: waits.sum,
            duration_ns: durs.sum,
            avg_duration_ns: durs.avg(),
            min_duration_ns: durs.min,
            max_duration_ns: durs.max,
            avg_wait_ns: waits.avg(),
            min_wait_ns: waits.min,
            max_wait_ns: waits.max,
            least_delayed,
            most_delayed,
            least_late,
            most_late,
        };
    }

    // Classes, ranks and sites in one pass over the events.
    let (mut p2p, mut coll) = (Acc::default(), Acc::default());
    let (mut p2p_waits, mut coll_waits) = (Acc::default(), Acc::default());
    let mut total_span = 0u64;
    let mut resolved: HashMap<(u32, u64), usize> = HashMap::new();
    let mut site_info: Vec<ResolvedSite> = Vec::new();
    // (resolved site, op) → row, ranks seen
    let mut sites: HashMap<(usize, MpiOp), (MpiSiteRow, Vec<u32>)> = HashMap::new();
    let mut caused_p2p: HashMap<u32, u64> = HashMap::new();
    let mut caused_coll: HashMap<u32, u64> = HashMap::new();
    for (&(p, rank), &ns) in &caused_by {
        if p.is_p2p() {
            *caused_p2p.entry(rank).or_default() += ns;
        } else {
            *caused_coll.entry(rank).or_default() += ns;
        }
    }
    for (ri, t) in rec.ranks.iter().enumerate() {
        if index.get(&t.rank) != Some(&ri) {
            continue;
        }
        let mut row = MpiRankRow {
            rank: t.rank,
            pid: t.pid,
            host: t.host.clone(),
            events: t.events.len() as u64,
            finalized: t.finalized,
            aborted_in: t.aborted_in.map(|i| {
                t.events
                    .get(i)
                    .map(|e| e.op.name())
                    .unwrap_or("?")
                    .to_string()
            }),
            p2p_caused_ns: caused_p2p.get(&t.rank).copied().unwrap_or(0),
            collective_caused_ns: caused_coll.get(&t.rank).copied().unwrap_or(0),
            ..MpiRankRow::default()
        };
        row.caused_ns = row.p2p_caused_ns + row.collective_caused_ns;
        let first = t.events.iter().map(|e| e.enter_ns).min();
        let last = t.events.iter().map(|e| e.exit_ns.max(e.enter_ns)).max();
        if let (Some(a), Some(b)) = (first, last) {
            row.span_ns = b.saturating_sub(a);
        }
        total_span += row.span_ns;
        for (ei, e) in t.events.iter().enumerate() {
            let d = e.exit_ns.saturating_sub(e.enter_ns);
            row.duration_ns += d;
            let wait = counted.get(&(ri, ei));
            if is_p2p_op(e.op) {
                p2p.add(d);
                if let Some(&(_, w)) = wait {
                    p2p_waits.add(w);
                    row.p2p_wait_ns += w;
                }
            } else if e.op.is_collective() {
                coll.add(d);
                if let Some(&(_, w)) = wait {
                    coll_waits.add(w);
                    row.collective_wait_ns += w;
                }
            }
            let si = *resolved.entry((t.pid, e.site)).or_insert_with(|| {
                site_info.push(if e.site == 0 {
                    ResolvedSite {
                        debug: "none",
                        display: "unknown".into(),
                        ..ResolvedSite::default()
                    }
                } else {
                    resolver.site(t.pid, e.site)
                });
                site_info.len() - 1
            });
            let (srow, ranks) = sites.entry((si, e.op)).or_default();
            srow.events += 1;
            srow.duration_ns += d;
            if let Some(&(_, w)) = wait {
                srow.wait_states += 1;
                srow.wait_ns += w;
                srow.max_wait_ns = srow.max_wait_ns.max(w);
            }
            if ranks.last() != Some(&t.rank) {
                ranks.push(t.rank);
            }
        }
        row.wait_ns = row.p2p_wait_ns + row.collective_wait_ns;
        r.by_rank.push(row);
    }
    r.by_rank.sort_by_key(|row| row.rank);
    let class = |a: &Acc, w: &Acc| MpiClassSummary {
        events: a.n,
        duration_ns: a.sum,
        avg_duration_ns: a.avg(),
        min_duration_ns: a.min,
        max_duration_ns: a.max,
        wait_states: w.n,
        wait_ns: w.sum,
        share_of_runtime: if total_span == 0 {
            0.0
        } else {
            a.sum as f64 / total_span as f64
        },
    };
    r.p2p = class(&p2p, &p2p_waits);
    r.collective = class(&coll, &coll_waits);

    // Sites with the same resolved location (several ranks run the same
    // binary at different addresses) are one row.
    let mut merged: HashMap<(String, String, String), (MpiSiteRow, Vec<u32>)> = HashMap::new();
    for ((si, op), (row, ranks)) in sites {
        let s = &site_info[si];
        let key = (
            s.display.clone(),
            s.module.clone().unwrap_or_default(),
            op.name().to_string(),
        );
        let entry = merged.entry(key).or_insert_with(|| {
            (
                MpiSiteRow {
                    function: s.function.clone(),
                    file: s.file.clone(),
                    line: s.line,
                    module: s.module.clone(),
                    offset: format!("{:#x}", s.offset),
                    debug: s.debug.to_string(),
                    display: s.display.clone(),
                    operation: op.name().to_string(),
                    ..MpiSiteRow::default()
                },
                Vec::new(),
            )
        });
        entry.0.events += row.events;
        entry.0.duration_ns += row.duration_ns;
        entry.0.wait_states += row.wait_states;
        entry.0.wait_ns += row.wait_ns;
        entry.0.max_wait_ns = entry.0.max_wait_ns.max(row.max_wait_ns);
        entry.1.extend(ranks);
    }
    r.by_site = merged
        .into_values()
        .map(|(mut row, mut ranks)| {
            ranks.sort_unstable();
            ranks.dedup();
            row.ranks = ranks.len() as u32;
            row.avg_duration_ns = row.duration_ns.checked_div(row.events).unwrap_or(0);
            row.avg_wait_ns = row.wait_ns.checked_div(row.events).unwrap_or(0);
            row
        })
        .collect();
    r.by_site.sort_by(|a, b| {
        b.wait_ns
            .cmp(&a.wait_ns)
            .then(b.duration_ns.cmp(&a.duration_ns))
            .then(a.display.cmp(&b.display))
            .then(a.operation.cmp(&b.operation))
    });
    r
}
