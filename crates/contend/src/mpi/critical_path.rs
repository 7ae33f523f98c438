//! The critical path across ranks (Böhme, de Supinski, Geimer, Schulz,
//! Wolf, "Scalable Critical-Path Based Performance Analysis", IPDPS 2012):
//! the chain of computation and communication that determines how long the
//! run took, followed backward through messages and collectives.
//!
//! The walk starts at the rank that finished last (the latest exit of its
//! last MPI call, ties to the lowest rank) and goes backward in time over
//! the regions of [`super::timeline`]. On the current rank every
//! computation interval and every MPI call outside its wait state is on
//! the path. At a call with a wait state the rank was held up by the late
//! rank of that wait state, so the path continues on the late rank,
//! backward from the entry of its late call (the send of a late sender,
//! the receive of a late receiver, the last member's entry into a
//! collective, the root of a late broadcast …): the waiting itself is
//! never on the path (Section III.A). The walk ends at the beginning of a
//! rank's trace. When the late rank has no trace, or its late call is not
//! earlier than where the path already was on that rank (clocks out of
//! step), the walk stays and the wait is on the path as time in the call.
//! Every step moves to an earlier call, so the walk is O(events).
//!
//! Reported (Section III.B–C): the path's length; its **critical-path
//! profile**, the time per rank and per region on it; and per region the
//! **critical-path imbalance** `max(0, cp(r) − avg_p t_p(r))`, its time
//! on the path minus the average time the ranks spent in it outside wait
//! states, summed into the **critical-path imbalance indicator** (the
//! time the run would save if each region's work were spread evenly).

use rayon::prelude::*;
use rustc_hash::FxHashMap;
use serde::Serialize;

use super::delay::MpiRegionName;
use super::timeline::{Region, RegionSums, Timeline, NO_SITE};

/// One stretch of the critical path on one rank.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PathSegment {
    /// Rank index (into the recording's rank traces).
    pub ri: u32,
    /// The region.
    pub region: Region,
    /// Start and end on the common time line, ns.
    pub start_ns: u64,
    /// End, ns.
    pub end_ns: u64,
    /// The event of the region: the call (for a call) or the call it ends
    /// at (for a computation), index in the rank's events.
    pub event: u32,
}

/// The critical path of a recording ([`critical_path`]), summed as it is
/// walked: the segments themselves are not kept (for the 2.2 million calls
/// of docs/benchmarks.md's hpcc recording they took 44 MB at 40 bytes
/// each); [`CriticalPathAnalysis::for_each_segment`] walks the path again
/// for a caller that needs them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CriticalPathAnalysis {
    /// Segments on the path.
    pub segments: u64,
    /// Jumps from a waiting rank to the late rank.
    pub jumps: u64,
    /// Rank index where the walk started (the one that finished last).
    pub end_ri: Option<usize>,
    /// Rank index of the path's first segment (where it begins in time).
    pub start_ri: Option<usize>,
    /// Per world rank on the path: its time inside MPI calls (outside
    /// wait states) and computing between them, ns.
    pub by_rank: FxHashMap<u32, (u64, u64)>,
    /// Per region on the path: its time on the path, ns, and the world
    /// ranks whose part of the path passes through it.
    pub by_region: FxHashMap<Region, (u64, Vec<u32>)>,
    /// Per rank index: its time per region outside wait states, ns (the
    /// per-process profile the imbalance is measured against).
    pub profiles: Vec<FxHashMap<Region, u64>>,
    /// Where the backward walk starts: rank index and time, ns.
    start: Option<(usize, u64)>,
}

impl CriticalPathAnalysis {
    /// Walks the path again over `tl` (the time lines it was found on) and
    /// gives every segment to `f`, latest first. O(events of the ranks on
    /// the path), no memory per segment.
    pub fn for_each_segment(&self, tl: &Timeline<'_>, f: impl FnMut(PathSegment)) {
        if let Some(start) = self.start {
            walk_path(tl, start, f);
        }
    }
}

/// Walks the critical path of `tl` (see the module docs).
pub fn critical_path(tl: &Timeline<'_>) -> CriticalPathAnalysis {
    let ranks = &tl.rec.ranks;
    // the per-rank profiles, and where each rank's time line ends, are
    // independent: one rank per core at a time
    let (profiles, last_exits): (Vec<_>, Vec<_>) = (0..ranks.len())
        .into_par_iter()
        .map(|ri| {
            // summed in dense tables: no hash lookup per call
            let mut sums = RegionSums::default();
            let mut last_exit = None;
            if tl.index.get(&ranks[ri].rank) == Some(&ri) {
                tl.walk(ri, None, None, |r, ns| sums.add(r, ns), |_, _| {});
                let evs = &ranks[ri].events;
                last_exit = (0..evs.len())
                    .map(|i| evs.exit_ns(i).max(evs.enter_ns(i)))
                    .max();
            }
            (sums.iter().collect::<FxHashMap<Region, u64>>(), last_exit)
        })
        .unzip();
    let mut out = CriticalPathAnalysis {
        profiles,
        ..CriticalPathAnalysis::default()
    };
    let Some(start) = last_exits
        .iter()
        .enumerate()
        .filter_map(|(ri, t)| t.map(|t| (ri, t)))
        .max_by_key(|&(ri, t)| (t, std::cmp::Reverse(ranks[ri].rank)))
    else {
        return out;
    };
    out.end_ri = Some(start.0);
    out.start = Some(start);
    // per rank index, and calls per site id, in dense tables during the
    // walk; computations (a pair of sites) in a map
    let mut per_ri: Vec<(u64, u64)> = vec![(0, 0); ranks.len()];
    let mut calls: Vec<(u64, Vec<u32>)> = Vec::new();
    let mut by_region: FxHashMap<Region, (u64, Vec<u32>)> = FxHashMap::default();
    let (mut segments, mut first) = (0u64, None);
    out.jumps = walk_path(tl, start, |s| {
        segments += 1;
        first = Some(s.ri as usize); // latest first: the last one begins the path
        let d = s.end_ns - s.start_ns;
        let rank = ranks[s.ri as usize].rank;
        let e = &mut per_ri[s.ri as usize];
        match s.region {
            Region::Call(_) => e.0 += d,
            Region::Compute(..) => e.1 += d,
        }
        let e: &mut (u64, Vec<u32>) = match s.region {
            Region::Call(site) if site != NO_SITE => {
                let i = site as usize;
                if calls.len() <= i {
                    calls.resize_with(i + 1, Default::default);
                }
                &mut calls[i]
            }
            r => by_region.entry(r).or_default(),
        };
        e.0 += d;
        if !e.1.contains(&rank) {
            e.1.push(rank);
        }
    });
    for (site, e) in calls.into_iter().enumerate() {
        if !e.1.is_empty() {
            by_region.insert(Region::Call(site as u32), e);
        }
    }
    let mut by_rank: FxHashMap<u32, (u64, u64)> = FxHashMap::default();
    for (ri, &(m, c)) in per_ri.iter().enumerate() {
        if m > 0 || c > 0 {
            let e = by_rank.entry(ranks[ri].rank).or_default();
            e.0 += m;
            e.1 += c;
        }
    }
    out.segments = segments;
    out.start_ri = first;
    out.by_rank = by_rank;
    out.by_region = by_region;
    out
}

/// The walk of [`critical_path`] from rank index and time `start`,
/// backwards: gives each segment to `emit`, latest first; returns the
/// jumps.
fn walk_path(tl: &Timeline<'_>, start: (usize, u64), mut emit: impl FnMut(PathSegment)) -> u64 {
    let ranks = &tl.rec.ranks;
    let mut jumps = 0;
    let mut ri = start.0;
    let mut t = start.1;
    let mut pos = ranks[ri].events.len();
    // Per rank: the earliest call the path has reached there.
    let mut floor: Vec<usize> = ranks.iter().map(|r| r.events.len() + 1).collect();
    floor[ri] = pos;
    // Per rank: where in its wait list the walk is (it goes backward on
    // every rank, so each list is passed once).
    let mut cursor: Vec<usize> = (0..ranks.len()).map(|r| tl.wait_list(r).len()).collect();
    let mut next_site = NO_SITE;
    while pos > 0 {
        let i = pos - 1;
        let (enter_ns, exit_ns) = (ranks[ri].events.enter_ns(i), ranks[ri].events.exit_ns(i));
        let site = tl.site(ri, i);
        let exit = exit_ns.max(enter_ns);
        if t > exit && next_site != NO_SITE {
            emit(PathSegment {
                ri: ri as u32,
                region: Region::Compute(site, next_site),
                start_ns: exit,
                end_ns: t,
                event: (i + 1) as u32,
            });
        }
        t = t.min(exit);
        let k = wait_cursor(tl.wait_list(ri), &mut cursor[ri], i);
        let wait = k.map_or(0, |k| {
            tl.waits[k].wait_ns.min(exit_ns.saturating_sub(enter_ns))
        });
        let jump = k.and_then(|k| {
            let w = &tl.waits[k];
            let di = *tl.index.get(&w.cause)?;
            let ed = w.cause_event?;
            (ed < floor[di] && ed < ranks[di].events.len()).then_some((di, ed))
        });
        let call_from = if jump.is_some() {
            enter_ns + wait
        } else {
            enter_ns
        };
        if t > call_from {
            emit(PathSegment {
                ri: ri as u32,
                region: Region::Call(site),
                start_ns: call_from,
                end_ns: t,
                event: i as u32,
            });
        }
        floor[ri] = i;
        match jump {
            Some((di, ed)) => {
                jumps += 1;
                ri = di;
                pos = ed;
                floor[di] = ed;
                t = ranks[di].events.enter_ns(ed);
                next_site = tl.site(di, ed);
            }
            None => {
                t = t.min(enter_ns);
                pos = i;
                next_site = site;
            }
        }
    }
    jumps
}

/// The wait state counted in call `i` of a rank whose wait list is
/// `list` ([`Timeline::wait_list`]): its index in [`Timeline::waits`].
/// `cur` is where the previous lookup left off: moving it to `i` costs the
/// number of wait states passed, so a walk in one direction costs
/// O(calls + wait states) in all.
fn wait_cursor(list: &[(u32, u32)], cur: &mut usize, i: usize) -> Option<usize> {
    while *cur < list.len() && list[*cur].0 as usize <= i {
        *cur += 1;
    }
    while *cur > 0 && list[*cur - 1].0 as usize > i {
        *cur -= 1;
    }
    match list.get(cur.checked_sub(1)?) {
        Some(&(e, k)) if e as usize == i => Some(k as usize),
        _ => None,
    }
}

/// One rank on the critical path (JSON `mpi.critical_path.by_rank[]`).
#[derive(Debug, Clone, Serialize, Default, PartialEq)]
pub struct MpiPathRankRow {
    /// World rank.
    pub rank: u32,
    /// Time on the critical path, ns.
    pub ns: u64,
    /// Of it, inside MPI calls, ns.
    pub mpi_ns: u64,
    /// Of it, computing between MPI calls, ns.
    pub compute_ns: u64,
    /// `ns` over the path's length, a fraction.
    pub share: f64,
}

/// One region on the critical path (JSON `mpi.critical_path.by_region[]`).
#[derive(Debug, Clone, Serialize, Default, PartialEq)]
pub struct MpiPathRegionRow {
    /// The region.
    #[serde(flatten)]
    pub name: MpiRegionName,
    /// Time on the critical path, ns.
    pub ns: u64,
    /// `ns` over the path's length, a fraction.
    pub share: f64,
    /// Average time per traced rank in this region outside wait states, ns.
    pub avg_rank_ns: u64,
    /// Critical-path imbalance: `max(0, ns − avg_rank_ns)`, ns.
    pub imbalance_ns: u64,
    /// Ranks whose part of the path passes through it.
    pub ranks: u32,
}

/// The critical path in the report (JSON `mpi.critical_path`;
/// docs/json.md, docs/mpi-wait-states.md "Critical path").
#[derive(Debug, Clone, Serialize, Default, PartialEq)]
pub struct MpiCriticalPathReport {
    /// Length of the path, ns (the run from the first call on the path to
    /// the last exit).
    pub length_ns: u64,
    /// The rank the path ends on (it finished last).
    pub end_rank: Option<u32>,
    /// The rank the path begins on.
    pub start_rank: Option<u32>,
    /// Jumps from a waiting rank to the rank it waited for.
    pub jumps: u64,
    /// Of the length: inside MPI calls (outside wait states), ns.
    pub mpi_ns: u64,
    /// Of the length: computation between MPI calls, ns.
    pub compute_ns: u64,
    /// The critical-path imbalance indicator: Σ over regions of
    /// `max(0, cp − average)`, ns (Böhme et al. 2012, Section III.C).
    pub imbalance_ns: u64,
    /// `imbalance_ns / length_ns`, a fraction.
    pub imbalance_share: f64,
    /// Per rank on the path, most time first.
    pub by_rank: Vec<MpiPathRankRow>,
    /// Per region on the path, most time first.
    pub by_region: Vec<MpiPathRegionRow>,
    /// For hybrid runs (`--mpi --locks`): the lock events of the ranks'
    /// threads on this path ([`super::hybrid`]); `None` without lock
    /// traces of the ranks' processes.
    pub locks: Option<super::hybrid::MpiPathLocks>,
}

/// The report of `cp`, computed on `tl`.
pub fn critical_path_report(tl: &Timeline<'_>, cp: &CriticalPathAnalysis) -> MpiCriticalPathReport {
    let ranks = &tl.rec.ranks;
    let mut r = MpiCriticalPathReport {
        jumps: cp.jumps,
        end_rank: cp.end_ri.map(|ri| ranks[ri].rank),
        start_rank: cp.start_ri.map(|ri| ranks[ri].rank),
        ..MpiCriticalPathReport::default()
    };
    for &(m, c) in cp.by_rank.values() {
        r.mpi_ns += m;
        r.compute_ns += c;
    }
    r.length_ns = r.mpi_ns + r.compute_ns;
    let len = r.length_ns;
    let share = |x: u64| if len > 0 { x as f64 / len as f64 } else { 0.0 };
    r.by_rank = cp
        .by_rank
        .iter()
        .map(|(&rank, &(m, c))| MpiPathRankRow {
            rank,
            ns: m + c,
            mpi_ns: m,
            compute_ns: c,
            share: share(m + c),
        })
        .collect();
    r.by_rank
        .sort_by(|a, b| b.ns.cmp(&a.ns).then(a.rank.cmp(&b.rank)));
    let traced = cp
        .profiles
        .iter()
        .enumerate()
        .filter(|(ri, _)| tl.index.get(&ranks[*ri].rank) == Some(ri))
        .count()
        .max(1) as u64;
    let mut regions: Vec<(&Region, &(u64, Vec<u32>))> = cp.by_region.iter().collect();
    regions.sort_by(|a, b| b.1 .0.cmp(&a.1 .0).then(a.0.cmp(b.0)));
    r.by_region = regions
        .into_iter()
        .filter_map(|(&reg, (ns, rs))| {
            let ns = *ns;
            let total: u64 = cp.profiles.iter().filter_map(|p| p.get(&reg)).sum();
            let avg = total / traced;
            let imbalance = ns.saturating_sub(avg);
            r.imbalance_ns += imbalance;
            tl.keeps_region(reg).then(|| MpiPathRegionRow {
                name: MpiRegionName::of(tl, reg),
                ns,
                share: share(ns),
                avg_rank_ns: avg,
                imbalance_ns: imbalance,
                ranks: rs.len() as u32,
            })
        })
        .collect();
    r.imbalance_share = share(r.imbalance_ns);
    r
}
