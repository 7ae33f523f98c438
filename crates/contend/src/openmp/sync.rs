//! OpenMP synchronisation as hand-overs, for the critical path across
//! recorders ([`crate::locks::across`]; docs/critical-path.md). Built from
//! the OpenMP records of the analysis's model (trace_format.h, "OpenMP
//! records": written by the OMPT tool and by any other recorder of the
//! same records), not from a runtime:
//!
//! * a critical section, OpenMP lock, atomic or ordered region (OMPT
//!   mutex): one event per acquisition, `mutex_acquire` → `mutex_acquired`
//!   the wait, → `mutex_released` the hold; its waker is the latest
//!   release of the same wait id by another thread *during* the wait
//!   (released at or after the acquire, at or before the acquired): the
//!   previous owner, as for a pthread mutex (Venter 2016, Section
//!   3.2.2.2). A release before the wait began did not hold it up.
//! * a barrier (explicit, implementation, teams, or a parallel region's
//!   implicit barrier): the k-th barrier of a kind (explicit or implicit)
//!   met by each thread of a region instance is one barrier; it completes
//!   at its last arrival. Each thread's wait runs from its arrival to its
//!   recorded end (explicit) or to the last arrival (implicit: a worker's
//!   end is recorded only when the next region starts); its waker is the
//!   thread that arrived last, at its arrival, when that is another
//!   thread that arrived after it (Chen & Stenström, SC'12: the last
//!   arriving thread holds the others up).
//!
//! Task waits and task groups wait for tasks, not for a thread's arrival:
//! they are events without a waker.

use std::collections::HashMap;

use contend_trace::format::omp as ev;
use contend_trace::OmpOp;

use crate::recording::Recording;

/// One OpenMP synchronisation of one thread: an acquisition of an OpenMP
/// mutex or a wait at a barrier.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OmpSyncEvent {
    /// Index of the process in [`Recording::processes`].
    pub process: u32,
    /// Process id.
    pub pid: u32,
    /// Kernel thread id.
    pub tid: u32,
    /// True for a barrier (or task) wait, false for a mutex acquisition.
    pub barrier: bool,
    /// The OMPT kind: `ompt_mutex_t` for a mutex, `ompt_sync_region_t` for
    /// a wait (2 for every implicit barrier).
    pub kind: u8,
    /// The OMPT wait id (mutex) or the parallel region instance (barrier).
    pub object: u64,
    /// The site of the report row the event belongs to: the acquisition's
    /// site (mutex), the construct's code pointer (explicit barrier), the
    /// parallel construct's site (implicit barrier).
    pub site: u64,
    /// Acquire, or arrival at the barrier, CLOCK_MONOTONIC ns.
    pub requested_ns: u64,
    /// Acquired, or end of the barrier wait, ns.
    pub acquired_ns: u64,
    /// Released (mutex); `acquired_ns` for a barrier. ns.
    pub released_ns: u64,
    /// Index into the events of the event that let this one go (module
    /// docs), when found.
    pub waker: Option<usize>,
}

impl OmpSyncEvent {
    /// Wait, ns.
    pub fn wait_ns(&self) -> u64 {
        self.acquired_ns.saturating_sub(self.requested_ns)
    }

    /// Hold (mutex), 0 for a barrier, ns.
    pub fn hold_ns(&self) -> u64 {
        self.released_ns.saturating_sub(self.acquired_ns)
    }

    /// Its kind as the OpenMP section names it: `critical`, `lock`,
    /// `nest_lock`, `atomic`, `ordered`; `implicit barrier`, `explicit
    /// barrier`, `taskwait`, …
    pub fn kind_name(&self) -> &'static str {
        if self.barrier {
            super::sync_kind(self.kind)
        } else {
            super::mutex_kind(self.kind)
        }
    }

    /// The time at which this event can let a waiter go: the release of a
    /// mutex, the arrival at a barrier, ns.
    pub fn wake_ns(&self) -> u64 {
        if self.barrier {
            self.requested_ns
        } else {
            self.released_ns
        }
    }
}

/// Barrier kinds whose waits end at the last arrival of the team.
fn is_team_barrier(kind: u8) -> bool {
    matches!(kind, 1 | 2 | 3 | 4 | 8 | 9 | 10)
}

fn is_implicit(kind: u8) -> bool {
    matches!(kind, 2 | 8 | 9)
}

/// What [`pair_thread`] collects beside the events: the construct site
/// of each parallel region instance, by (process, instance).
#[derive(Debug, Default)]
pub struct OmpSyncBuilder {
    /// The events paired so far.
    pub events: Vec<OmpSyncEvent>,
    /// (process, region instance) → construct site.
    pub region_site: HashMap<(u32, u64), u64>,
}

/// Pairs one thread's OpenMP records (in time order; `to_ns` converts
/// ticks to ns) into mutex acquisitions and barrier waits. An implicit
/// barrier's wait end is filled in by [`finish`]; an acquisition never
/// released keeps its acquired time as release.
pub fn pair_thread(
    process: u32,
    pid: u32,
    tid: u32,
    ops: &[OmpOp],
    to_ns: impl Fn(u64) -> u64,
    out: &mut OmpSyncBuilder,
) {
    // object → (acquire ns, site), and object → index of the held event
    let mut acquiring: HashMap<u64, (u64, u64)> = HashMap::new();
    let mut held: HashMap<u64, usize> = HashMap::new();
    let mut waiting: Option<(OmpOp, u64)> = None;
    let new = |barrier, kind, object, site, t: u64| OmpSyncEvent {
        process,
        pid,
        tid,
        barrier,
        kind,
        object,
        site,
        requested_ns: t,
        acquired_ns: t,
        released_ns: t,
        waker: None,
    };
    for op in ops {
        let now = to_ns(op.ticks);
        match op.event {
            ev::MUTEX_ACQUIRE => {
                acquiring.insert(op.object, (now, op.site));
            }
            ev::MUTEX_ACQUIRED => {
                let Some((start, site)) = acquiring.remove(&op.object) else {
                    continue;
                };
                let mut e = new(false, op.kind, op.object, site, start);
                e.acquired_ns = now.max(start);
                e.released_ns = e.acquired_ns;
                held.insert(op.object, out.events.len());
                out.events.push(e);
            }
            ev::MUTEX_RELEASED => {
                if let Some(i) = held.remove(&op.object) {
                    let e = &mut out.events[i];
                    e.released_ns = now.max(e.acquired_ns);
                }
            }
            ev::SYNC_WAIT_BEGIN if is_implicit(op.kind) => {
                waiting = None;
                out.events.push(new(true, 2, op.object, 0, now));
            }
            ev::SYNC_WAIT_BEGIN => waiting = Some((*op, now)),
            ev::SYNC_WAIT_END => {
                let Some((begin, start)) = waiting.take() else {
                    continue;
                };
                let mut e = new(true, begin.kind, begin.object, begin.site, start);
                e.acquired_ns = now.max(start);
                e.released_ns = e.acquired_ns;
                out.events.push(e);
            }
            ev::PARALLEL_BEGIN => {
                out.region_site.insert((process, op.object), op.site);
            }
            _ => {}
        }
    }
}

/// Completes the barriers (the k-th explicit and the k-th implicit
/// barrier of each thread of a region instance form one barrier; an
/// implicit wait ends at its last arrival and carries the parallel
/// construct's site) and finds every event's waker (module docs).
pub fn finish(b: OmpSyncBuilder) -> Vec<OmpSyncEvent> {
    let OmpSyncBuilder {
        mut events,
        region_site,
    } = b;
    // Barriers: (process, region, implicit, k) → member events.
    let mut seen: HashMap<(u32, u64, bool, u32), u32> = HashMap::new();
    let mut instances: HashMap<(u32, u64, bool, u32), Vec<usize>> = HashMap::new();
    for (i, e) in events.iter().enumerate() {
        if !(e.barrier && is_team_barrier(e.kind)) {
            continue;
        }
        let implicit = is_implicit(e.kind);
        let k = seen
            .entry((e.process, e.object, implicit, e.tid))
            .or_insert(0);
        instances
            .entry((e.process, e.object, implicit, *k))
            .or_default()
            .push(i);
        *k += 1;
    }
    for ((process, region, implicit, _), members) in &instances {
        let Some(&last) = members
            .iter()
            .max_by_key(|&&i| (events[i].requested_ns, std::cmp::Reverse(i)))
        else {
            continue;
        };
        let last_arrival = events[last].requested_ns;
        for &i in members {
            let e = &mut events[i];
            if *implicit {
                e.acquired_ns = e.acquired_ns.max(last_arrival);
                e.released_ns = e.acquired_ns;
                e.site = region_site.get(&(*process, *region)).copied().unwrap_or(0);
            }
            if events[last].tid != events[i].tid
                && last_arrival >= events[i].requested_ns
                && events[i].acquired_ns > events[i].requested_ns
            {
                events[i].waker = Some(last);
            }
        }
    }
    // Mutexes: per (process, object), releases by time.
    let mut releases: HashMap<(u32, u64), Vec<usize>> = HashMap::new();
    for (i, e) in events.iter().enumerate() {
        if !e.barrier {
            releases.entry((e.process, e.object)).or_default().push(i);
        }
    }
    for list in releases.values_mut() {
        list.sort_by_key(|&i| (events[i].released_ns, i));
    }
    for i in 0..events.len() {
        let e = events[i];
        if e.barrier || e.acquired_ns <= e.requested_ns {
            continue;
        }
        let list = &releases[&(e.process, e.object)];
        let n = list.partition_point(|&k| events[k].released_ns <= e.acquired_ns);
        let found = list[..n]
            .iter()
            .rev()
            .copied()
            .find(|&k| events[k].tid != e.tid);
        if let Some(k) = found.filter(|&k| events[k].released_ns >= e.requested_ns) {
            events[i].waker = Some(k);
        }
    }
    events
}

/// The OpenMP synchronisation events of every traced thread of
/// `recording`, paired and with their wakers.
pub fn collect(recording: &Recording) -> Vec<OmpSyncEvent> {
    let mut b = OmpSyncBuilder::default();
    for (pi, p) in recording.processes.iter().enumerate() {
        let trace = &p.trace;
        for t in &trace.threads {
            if t.omp.is_empty() {
                continue;
            }
            pair_thread(
                pi as u32,
                trace.pid,
                t.tid,
                &t.omp,
                |ticks| recording.to_ns(trace, ticks),
                &mut b,
            );
        }
    }
    finish(b)
}

/// Adds the events on the critical path across recorders to the rows of
/// an OpenMP section: `events` from [`collect`] of the same recording,
/// `path.omp_on_path` indexed like them (nothing is added when the lengths
/// differ). A mutex event belongs to the row of its process, wait id and
/// kind; a barrier wait to the row of its process, kind and construct.
pub fn mark_report(
    report: &mut super::OpenMpReport,
    recording: &Recording,
    symbols: &crate::symbols::Symbols,
    events: &[OmpSyncEvent],
    path: &crate::locks::across::AcrossPath,
) {
    if path.omp_on_path.len() != events.len() {
        return;
    }
    let handed: std::collections::HashSet<u32> = path
        .hand_overs
        .iter()
        .filter(|h| h.source == crate::locks::across::Source::Openmp)
        .map(|h| h.waiting)
        .collect();
    // rows by identity: mutex (pid, kind, address), barrier (pid, kind, name)
    let mutex_row: HashMap<(u32, String, String), usize> = report
        .mutexes
        .iter()
        .enumerate()
        .map(|(k, r)| ((r.pid, r.kind.clone(), r.address.clone()), k))
        .collect();
    let barrier_row: HashMap<(u32, String, String), usize> = report
        .barriers
        .iter()
        .enumerate()
        .map(|(k, r)| ((r.pid, r.kind.clone(), r.name.clone()), k))
        .collect();
    let mut sites: HashMap<(u32, u64), String> = HashMap::new();
    for (i, e) in events.iter().enumerate() {
        if !path.omp_on_path[i] {
            continue;
        }
        let (wait, hold) = (e.wait_ns(), e.hold_ns());
        report.summary.critical_events += 1;
        report.summary.critical_wait_ns += wait;
        report.summary.critical_handovers += u64::from(handed.contains(&(i as u32)));
        if e.barrier {
            let name = sites
                .entry((e.process, e.site))
                .or_insert_with(|| {
                    symbols
                        .site(recording.process_maps(e.process), e.site)
                        .display
                })
                .clone();
            let key = (e.pid, super::sync_kind(e.kind).to_string(), name);
            if let Some(&k) = barrier_row.get(&key) {
                let row = &mut report.barriers[k];
                row.critical_events += 1;
                row.critical_wait_ns += wait;
            }
        } else {
            let key = (
                e.pid,
                super::mutex_kind(e.kind).to_string(),
                format!("{:#x}", e.object),
            );
            if let Some(&k) = mutex_row.get(&key) {
                let row = &mut report.mutexes[k];
                row.critical_events += 1;
                row.critical_wait_ns += wait;
                row.critical_hold_ns += hold;
            }
        }
    }
}
