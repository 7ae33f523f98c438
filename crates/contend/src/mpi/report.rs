//! The MPI section of a report (JSON key `mpi`): wait states per
//! pattern, per rank and per call site (Venter 2016, Tables 4.13–4.15), and
//! how it is built from an [`MpiAnalysis`].

use std::collections::HashMap;

use contend_trace::mpi::{MpiOp, MpiRecording};
use serde::Serialize;

use regex::Regex;
use rustc_hash::FxHashMap;

use super::analysis::{is_p2p_op, MatchStats, MpiAnalysis, Pattern};
use super::critical_path::{
    critical_path, critical_path_report, CriticalPathAnalysis, MpiCriticalPathReport,
};
use super::delay::{
    delay_analysis, delay_report_rows, DelayAnalysis, MpiDelayReport, ROOT_CAUSE_ROWS,
};
use super::statistics::{
    message_statistics, site_rank_statistics, wait_matrix, MpiMessageSiteRow, MpiMessageSizes,
    MpiSiteRankRow, MpiWaitPairRow,
};
use super::timeline::{SiteTable, Timeline};
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
    /// How many of the longest wait states `mpi.delay.wait_states` lists
    /// with their root causes (`--root-causes N|all`): `None` for the
    /// default, [`super::delay::ROOT_CAUSE_ROWS`]; `Some(usize::MAX)` for
    /// every one.
    pub root_cause_rows: Option<usize>,
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
    /// Σ duration of its calls other than `MPI_Init`, `MPI_Init_thread` and
    /// `MPI_Finalize`, ns: the time in MPI the program's own calls took
    /// (mpiP's MPI time).
    pub mpi_ns: u64,
    /// Σ duration of `MPI_Init`, `MPI_Init_thread` and `MPI_Finalize`, ns
    /// (shown apart: start-up and shut-down, not the program's
    /// communication).
    pub init_finalize_ns: u64,
    /// `mpi_ns` over the running time between the end of `MPI_Init` and
    /// the start of `MPI_Finalize` (`span_ns` when the rank has neither), a
    /// fraction (mpiP's MPI%).
    pub mpi_share: f64,
    /// Waiting whose root cause lies on this rank: its delay costs,
    /// short- and long-term (`mpi.delay.by_rank[].cost_ns`), ns.
    pub root_cause_ns: u64,
    /// Its time on the critical path (`mpi.critical_path.by_rank[].ns`), ns.
    pub critical_path_ns: u64,
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
    /// Root causes of the wait states: the delay analysis with short- and
    /// long-term costs (Böhme et al., TOPC 2016).
    pub delay: MpiDelayReport,
    /// The critical path across ranks, its profile and the critical-path
    /// imbalance (Böhme et al., IPDPS 2012).
    pub critical_path: MpiCriticalPathReport,
    /// Who waited for whom: per waiting and causing rank, ascending.
    pub wait_matrix: Vec<MpiWaitPairRow>,
    /// Bytes sent per call site (point to point and collective), most
    /// bytes first.
    pub messages_by_site: Vec<MpiMessageSiteRow>,
    /// All point-to-point sends: count, bytes, size histogram.
    pub message_sizes: MpiMessageSizes,
    /// Per call site and rank (mpiP's per-callsite-per-rank view), most
    /// time first.
    pub by_site_rank: Vec<MpiSiteRankRow>,
    /// The `--site` pattern the per-site tables were filtered by (`by_site`,
    /// `by_site_rank`, `messages_by_site`, the regions of `delay` and
    /// `critical_path`); totals are over all sites. `None`: not filtered.
    pub site_filter: Option<String>,
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

/// What the root-cause and critical-path passes computed, kept for
/// exporters beside the report ([`build_report_with`]).
#[derive(Debug, Clone, Default)]
pub struct MpiPasses {
    /// The call sites of every event, identified across ranks.
    pub sites: SiteTable,
    /// The delay analysis (root causes, costs) of the counted wait states.
    pub delay: DelayAnalysis,
    /// The critical path across ranks.
    pub critical_path: CriticalPathAnalysis,
}

/// True when the call site `s` matches `re` (its display form, function,
/// `file:line` or module, like the lock tables' `--site`).
pub fn site_matches(re: &Regex, s: &ResolvedSite) -> bool {
    re.is_match(&s.display)
        || s.function.as_deref().is_some_and(|f| re.is_match(f))
        || s.file
            .as_deref()
            .is_some_and(|f| re.is_match(&format!("{f}:{}", s.line.unwrap_or(0))))
        || s.module.as_deref().is_some_and(|m| re.is_match(m))
}

/// Builds the report from `analysis` of `rec`: applies the thresholds,
/// sums per pattern, rank and call site (resolved by `resolver`), and runs
/// the delay analysis and the critical path. [`build_report_with`] with no
/// site filter, without the per-event results of the passes.
pub fn build_report(
    rec: &MpiRecording,
    analysis: &MpiAnalysis,
    opts: &MpiOptions,
    resolver: &mut dyn SiteResolver,
) -> MpiReport {
    build_report_with(rec, analysis, opts, resolver, None).0
}

/// [`build_report`], listing in the per-site tables only the call sites
/// matching `site_filter` (`--site`; [`site_matches`]), and returning what
/// the passes computed per event.
pub fn build_report_with(
    rec: &MpiRecording,
    analysis: &MpiAnalysis,
    opts: &MpiOptions,
    resolver: &mut dyn SiteResolver,
    site_filter: Option<&Regex>,
) -> (MpiReport, MpiPasses) {
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
        site_filter: site_filter.map(|re| re.as_str().to_string()),
        ..MpiReport::default()
    };
    let sites = SiteTable::resolve(rec, resolver);
    let mut tl = Timeline::new(rec, analysis, &sites, opts);
    if let Some(re) = site_filter {
        tl.keep_sites(|s| site_matches(re, s));
    }
    let tl = tl;
    let index = &tl.index;

    let mut per_pattern: HashMap<Pattern, (Acc, Acc)> = HashMap::new();
    let mut wait_by: HashMap<(Pattern, u32), u64> = HashMap::new();
    let mut caused_by: HashMap<(Pattern, u32), u64> = HashMap::new();
    for w in &tl.waits {
        let ri = index[&w.rank];
        let e = rec.ranks[ri].events.at(w.event);
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

    // Classes, ranks and sites in one pass over the events: ranks,
    // classes and sites in a partial report, and each rank's running time
    // and time in MPI (by world rank).
    let rank_pass = || {
        let mut part = MpiReport::default();
        // Classes, ranks and sites in one pass over the events.
        let (mut p2p, mut coll) = (Acc::default(), Acc::default());
        let (mut p2p_waits, mut coll_waits) = (Acc::default(), Acc::default());
        let mut total_span = 0u64;
        // site id → row, ranks seen
        let mut site_rows: Vec<(MpiSiteRow, Vec<u32>)> =
            vec![Default::default(); sites.sites.len()];
        let mut caused_p2p: HashMap<u32, u64> = HashMap::new();
        let mut caused_coll: HashMap<u32, u64> = HashMap::new();
        for (&(p, rank), &ns) in &caused_by {
            if p.is_p2p() {
                *caused_p2p.entry(rank).or_default() += ns;
            } else {
                *caused_coll.entry(rank).or_default() += ns;
            }
        }
        let mut span_of: FxHashMap<u32, u64> = FxHashMap::default();
        let mut mpi_of: FxHashMap<u32, u64> = FxHashMap::default();
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
            let n = t.events.len();
            // span and the program's own running time (from the end of
            // MPI_Init to the start of MPI_Finalize, where the rank has them),
            // found in the same pass as the sums
            let (mut first, mut last) = (None::<u64>, None::<u64>);
            let (mut init_end, mut fin_start) = (None::<u64>, None::<u64>);
            for c in tl.calls(ri, 0..n) {
                first = Some(first.map_or(c.enter_ns, |f| f.min(c.enter_ns)));
                let end = c.exit_ns.max(c.enter_ns);
                last = Some(last.map_or(end, |l| l.max(end)));
                match c.op {
                    MpiOp::Init | MpiOp::InitThread => {
                        init_end = Some(init_end.map_or(c.exit_ns, |e| e.max(c.exit_ns)));
                    }
                    MpiOp::Finalize => {
                        fin_start = Some(fin_start.map_or(c.enter_ns, |f| f.min(c.enter_ns)));
                    }
                    _ => {}
                }
                let d = c.duration_ns();
                row.duration_ns += d;
                if matches!(c.op, MpiOp::Init | MpiOp::InitThread | MpiOp::Finalize) {
                    row.init_finalize_ns += d;
                } else {
                    row.mpi_ns += d;
                }
                let waited = c.wait.map(|(k, _)| &tl.waits[k]);
                let wait = waited.map(|w| w.wait_ns);
                if is_p2p_op(c.op) {
                    p2p.add(d);
                } else if c.op.is_collective() {
                    coll.add(d);
                }
                // by pattern: a nonblocking collective waits in a Wait* call
                match waited {
                    Some(w) if w.pattern.is_p2p() => {
                        p2p_waits.add(w.wait_ns);
                        row.p2p_wait_ns += w.wait_ns;
                    }
                    Some(w) => {
                        coll_waits.add(w.wait_ns);
                        row.collective_wait_ns += w.wait_ns;
                    }
                    None => {}
                }
                let (srow, ranks) = &mut site_rows[c.site as usize];
                srow.events += 1;
                srow.duration_ns += d;
                if let Some(w) = wait {
                    srow.wait_states += 1;
                    srow.wait_ns += w;
                    srow.max_wait_ns = srow.max_wait_ns.max(w);
                }
                if ranks.last() != Some(&t.rank) {
                    ranks.push(t.rank);
                }
            }
            if let (Some(a), Some(b)) = (first, last) {
                row.span_ns = b.saturating_sub(a);
            }
            total_span += row.span_ns;
            let app_ns = match (init_end.or(first), fin_start.or(last)) {
                (Some(a), Some(b)) if b > a => b - a,
                _ => row.span_ns,
            };
            row.mpi_share = if app_ns > 0 {
                row.mpi_ns as f64 / app_ns as f64
            } else {
                0.0
            };
            row.wait_ns = row.p2p_wait_ns + row.collective_wait_ns;
            span_of.insert(t.rank, app_ns);
            mpi_of.insert(t.rank, row.mpi_ns);
            part.by_rank.push(row);
        }
        part.by_rank.sort_by_key(|row| row.rank);
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
        part.p2p = class(&p2p, &p2p_waits);
        part.collective = class(&coll, &coll_waits);

        part.by_site = site_rows
            .into_iter()
            .enumerate()
            .filter(|(id, (row, _))| row.events > 0 && tl.keeps_site(*id as u32))
            .map(|(id, (mut row, mut ranks))| {
                let (op, s) = &sites.sites[id];
                row.function = s.function.clone();
                row.file = s.file.clone();
                row.line = s.line;
                row.module = s.module.clone();
                row.offset = format!("{:#x}", s.offset);
                row.debug = s.debug.to_string();
                row.display = s.display.clone();
                row.operation = op.name().to_string();
                ranks.sort_unstable();
                ranks.dedup();
                row.ranks = ranks.len() as u32;
                row.avg_duration_ns = row.duration_ns.checked_div(row.events).unwrap_or(0);
                row.avg_wait_ns = row.wait_ns.checked_div(row.events).unwrap_or(0);
                row
            })
            .collect();
        part.by_site.sort_by(|a, b| {
            b.wait_ns
                .cmp(&a.wait_ns)
                .then(b.duration_ns.cmp(&a.duration_ns))
                .then(a.display.cmp(&b.display))
                .then(a.operation.cmp(&b.operation))
        });

        (part, span_of, mpi_of)
    };

    // Root causes, critical path and the mpiP-style tables.
    // Two halves of about equal time side by side: the delay analysis, the
    // rank pass and the per-site-and-rank table; the critical path and the
    // message statistics.
    let ((delay, delay_rows, part, site_rank), (cp, cp_report, wait_matrix_rows, messages)) =
        rayon::join(
            || {
                let delay = delay_analysis(&tl, analysis);
                let rows =
                    delay_report_rows(&tl, &delay, opts.root_cause_rows.unwrap_or(ROOT_CAUSE_ROWS));
                let (part, span_of, mpi_of) = rank_pass();
                let site_rank = site_rank_statistics(&tl, &span_of, &mpi_of);
                (delay, rows, part, site_rank)
            },
            || {
                let cp = critical_path(&tl);
                let report = critical_path_report(&tl, &cp);
                (cp, report, wait_matrix(&tl), message_statistics(&tl))
            },
        );
    r.by_rank = part.by_rank;
    r.p2p = part.p2p;
    r.collective = part.collective;
    r.by_site = part.by_site;
    r.delay = delay_rows;
    r.critical_path = cp_report;
    for row in &mut r.by_rank {
        row.root_cause_ns = r
            .delay
            .by_rank
            .iter()
            .find(|x| x.rank == row.rank)
            .map_or(0, |x| x.cost_ns);
        row.critical_path_ns = r
            .critical_path
            .by_rank
            .iter()
            .find(|x| x.rank == row.rank)
            .map_or(0, |x| x.ns);
    }
    r.wait_matrix = wait_matrix_rows;
    let (by_site, sizes) = messages;
    r.messages_by_site = by_site;
    r.message_sizes = sizes;
    r.by_site_rank = site_rank;
    (
        r,
        MpiPasses {
            sites,
            delay,
            critical_path: cp,
        },
    )
}
