//! The critical path of a hybrid MPI + threads run (`contend record --mpi
//! --locks`): the MPI critical path across ranks
//! ([`mod@super::critical_path`]) joined with the lock critical path inside
//! each rank's process (Chen & Stenström, [`crate::locks::critical_path`]).
//!
//! The MPI critical path says which rank determined the run's length at
//! every moment, and which of its calls or computation intervals lay on
//! it. Inside such a stretch of rank r, from `start` to `end`, the threads
//! of r's process may have waited for each other's locks: the lock
//! critical path of the process is walked backward from the thread that
//! made the stretch's MPI call, at `end`, to `start`
//! ([`WindowWalker`]). The lock
//! events met lie on the run's critical path across both: their waiting is
//! time the whole run lost to lock contention (Böhme et al. 2012 combine
//! the MPI and OpenMP paths of hybrid programs the same way, Section
//! III.D). The lock analysis's own critical path (`locks.critical_path`)
//! stays as it is: it starts at the thread that finished last, in whichever
//! process that was.

use rustc_hash::FxHashMap;
use serde::Serialize;

use super::critical_path::CriticalPathAnalysis;
use super::timeline::Timeline;
use crate::locks::critical_path::WindowWalker;
use crate::locks::LockEvents;
use contend_trace::mpi::MpiRecording;

/// One lock call site on the hybrid critical path.
#[derive(Debug, Clone, Serialize, Default, PartialEq)]
pub struct MpiPathLockSite {
    /// World rank whose process it is in.
    pub rank: u32,
    /// The lock (symbol or address).
    pub lock: String,
    /// The call site, e.g. `worker (hybrid.c:40)`.
    pub site: String,
    /// Lock events there on the path.
    pub events: u64,
    /// Their waiting, ns.
    pub wait_ns: u64,
    /// Their holding, ns.
    pub hold_ns: u64,
}

/// The lock events on the critical path across ranks (JSON
/// `mpi.critical_path.locks`; present for recordings with both MPI and
/// lock traces).
#[derive(Debug, Clone, Serialize, Default, PartialEq)]
pub struct MpiPathLocks {
    /// Ranks whose process has a lock trace.
    pub ranks_with_locks: u32,
    /// Lock events on the path.
    pub events: u64,
    /// Of them, contended.
    pub contended: u64,
    /// Their waiting, ns: time the run lost to lock contention.
    pub wait_ns: u64,
    /// Their holding, ns.
    pub hold_ns: u64,
    /// `wait_ns` over the length of the critical path, a fraction.
    pub wait_share: f64,
    /// Per lock and call site, most waiting first.
    pub by_site: Vec<MpiPathLockSite>,
}

/// The lock events of `locks` on the critical path `cp` of `rec`, found on
/// the time lines `tl` (see the module docs); `None` when no rank's
/// process has a lock trace.
pub fn locks_on_path(
    rec: &MpiRecording,
    tl: &Timeline<'_>,
    cp: &CriticalPathAnalysis,
    locks: &LockEvents,
    path_ns: u64,
) -> Option<MpiPathLocks> {
    let set = &locks.set;
    // (pid, tid) → thread index
    let threads: FxHashMap<(u32, u32), usize> = set
        .threads
        .iter()
        .enumerate()
        .map(|(i, t)| ((t.pid, t.tid), i))
        .collect();
    let pids: rustc_hash::FxHashSet<u32> = set.threads.iter().map(|t| t.pid).collect();
    let ranks_with_locks = rec.ranks.iter().filter(|t| pids.contains(&t.pid)).count() as u32;
    if ranks_with_locks == 0 {
        return None;
    }
    let walker = WindowWalker::new(set);
    let mut on_path: rustc_hash::FxHashSet<usize> = Default::default();
    cp.for_each_segment(tl, |s| {
        let t = &rec.ranks[s.ri as usize];
        let Some(e) = t.events.get(s.event as usize) else {
            return;
        };
        let Some(&th) = threads.get(&(t.pid, e.tid)) else {
            return;
        };
        // The lock trace is on the rank's own clock; the MPI time line
        // is rank 0's (the offset measured at MPI_Init; 0 on one node).
        let local = |x: u64| x.saturating_add_signed(-t.clock_offset_ns.0);
        walker.walk(th, local(s.start_ns), local(s.end_ns), |i| {
            on_path.insert(i);
        });
    });
    let mut out = MpiPathLocks {
        ranks_with_locks,
        ..MpiPathLocks::default()
    };
    let rank_of: FxHashMap<u32, u32> = rec.ranks.iter().map(|t| (t.pid, t.rank)).collect();
    let mut sites: FxHashMap<(u32, u32, u32), MpiPathLockSite> = FxHashMap::default();
    for &i in &on_path {
        let e = &set.events[i];
        out.events += 1;
        out.contended += e.contended() as u64;
        out.wait_ns += e.wait_ns();
        out.hold_ns += e.hold_ns();
        let rank = rank_of
            .get(&set.threads[e.thread() as usize].pid)
            .copied()
            .unwrap_or(u32::MAX);
        let row = sites
            .entry((rank, e.object, e.site))
            .or_insert_with(|| MpiPathLockSite {
                rank,
                lock: locks
                    .names
                    .objects
                    .get(e.object as usize)
                    .cloned()
                    .unwrap_or_default(),
                site: locks
                    .names
                    .sites
                    .get(e.site as usize)
                    .map(|s| s.display.clone())
                    .unwrap_or_default(),
                ..MpiPathLockSite::default()
            });
        row.events += 1;
        row.wait_ns += e.wait_ns();
        row.hold_ns += e.hold_ns();
    }
    out.wait_share = if path_ns > 0 {
        out.wait_ns as f64 / path_ns as f64
    } else {
        0.0
    };
    out.by_site = sites.into_values().collect();
    out.by_site.sort_by(|a, b| {
        b.wait_ns
            .cmp(&a.wait_ns)
            .then(b.hold_ns.cmp(&a.hold_ns))
            .then(a.rank.cmp(&b.rank))
            .then(a.site.cmp(&b.site))
            .then(a.lock.cmp(&b.lock))
    });
    Some(out)
}
