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

use rustc_hash::FxHashMap;

use contend_trace::format::omp as ev;
use contend_trace::OmpOp;

use crate::chunked_sort::partition_point_near;
use crate::recording::Recording;

/// One OpenMP synchronisation of one thread: an acquisition of an OpenMP
/// mutex or a wait at a barrier. 56 bytes (one per acquisition: millions);
/// its process id is its process's ([`OmpSyncEvent::pid`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OmpSyncEvent {
    /// Index of the process in [`Recording::processes`].
    pub process: u32,
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
    /// [`OmpSyncEvent::waker`], [`NO_WAKER`] for none.
    waker: u32,
}

/// [`OmpSyncEvent`]'s stored waker when it has none.
const NO_WAKER: u32 = u32::MAX;

impl OmpSyncEvent {
    /// An event without a waker, its request, acquisition and release at
    /// `t` (ns).
    pub fn new(
        process: u32,
        tid: u32,
        barrier: bool,
        kind: u8,
        object: u64,
        site: u64,
        t: u64,
    ) -> Self {
        OmpSyncEvent {
            process,
            tid,
            barrier,
            kind,
            object,
            site,
            requested_ns: t,
            acquired_ns: t,
            released_ns: t,
            waker: NO_WAKER,
        }
    }

    /// Index into the events of the event that let this one go (module
    /// docs), when found.
    pub fn waker(&self) -> Option<usize> {
        (self.waker != NO_WAKER).then_some(self.waker as usize)
    }

    /// Sets [`OmpSyncEvent::waker`]; an index that does not fit below
    /// `u32::MAX` (4 billion events) is no waker.
    pub fn set_waker(&mut self, waker: Option<usize>) {
        self.waker = waker
            .and_then(|k| u32::try_from(k).ok())
            .unwrap_or(NO_WAKER);
    }

    /// Its process id: that of process [`OmpSyncEvent::process`] of
    /// `recording`.
    pub fn pid(&self, recording: &Recording) -> u32 {
        recording.processes[self.process as usize].trace.pid
    }

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
    tid: u32,
    ops: impl IntoIterator<Item = OmpOp>,
    to_ns: impl Fn(u64) -> u64,
    out: &mut OmpSyncBuilder,
) {
    // object → (acquire ns, site), and object → index of the held event
    let mut acquiring: FxHashMap<u64, (u64, u64)> = FxHashMap::default();
    let mut held: FxHashMap<u64, usize> = FxHashMap::default();
    let mut waiting: Option<(OmpOp, u64)> = None;
    let new = |barrier, kind, object, site, t: u64| {
        OmpSyncEvent::new(process, tid, barrier, kind, object, site, t)
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
            ev::SYNC_WAIT_BEGIN => waiting = Some((op, now)),
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
                events[i].set_waker(Some(last));
            }
        }
    }
    // Mutexes: per (process, object), its acquisitions, which are also the
    // releases that can wake them, by release time.
    // Positions are 4 bytes and each list is made at its size, counted
    // first: grown by doubling, lists of 8-byte positions held 67 MB for
    // 5 million acquisitions of one lock, at the peak of the analyses that
    // collect these events. (A waker is stored in 4 bytes anyway: events
    // past 2^32 − 1 get none.)
    let mut sizes: FxHashMap<(u32, u64), u32> = FxHashMap::default();
    for e in events.iter().filter(|e| !e.barrier) {
        *sizes.entry((e.process, e.object)).or_default() += 1;
    }
    let mut releases: FxHashMap<(u32, u64), Vec<u32>> = sizes
        .into_iter()
        .map(|(key, n)| (key, Vec::with_capacity(n as usize)))
        .collect();
    for (i, e) in events.iter().enumerate() {
        if e.barrier {
            continue;
        }
        if let (Ok(i), Some(list)) = (u32::try_from(i), releases.get_mut(&(e.process, e.object))) {
            list.push(i);
        }
    }
    for list in releases.values_mut() {
        list.sort_by_key(|&i| (events[i as usize].released_ns, i));
        // Where the run of releases by one thread that ends at each
        // position begins: the latest release by another thread before
        // position p is then p itself or the one before p's run, found in
        // constant time (a backward search is quadratic when one thread
        // takes an uncontended lock millions of times).
        let mut run_start: Vec<u32> = Vec::with_capacity(list.len());
        for (p, &k) in list.iter().enumerate() {
            let same = p > 0 && events[list[p - 1] as usize].tid == events[k as usize].tid;
            run_start.push(if same { run_start[p - 1] } else { p as u32 });
        }
        // The releases at or before each acquisition: the list is in
        // release order, and a mutex's acquisitions nearly always come in
        // that order too, so each search starts where the one before ended
        // (galloping, either way). A binary search of the whole list for
        // every acquisition was 16 % of the report's time for 5 million
        // acquisitions of one lock.
        let mut before_n = 0usize;
        for &i in list.iter() {
            let i = i as usize;
            let e = events[i];
            if e.acquired_ns <= e.requested_ns {
                continue;
            }
            let n = partition_point_near(list, before_n, |&k| {
                events[k as usize].released_ns <= e.acquired_ns
            });
            before_n = n;
            let found = latest_by_other_thread(list, &run_start, n, e.tid, |k| events[k].tid);
            if let Some(k) = found.filter(|&k| events[k].released_ns >= e.requested_ns) {
                events[i].set_waker(Some(k));
            }
        }
    }
    events
}

/// The last of `list[..n]` whose thread (`tid_of`) is not `tid`:
/// `run_start[p]` is the first position of the run of entries by one thread
/// that ends at `p`. O(1).
fn latest_by_other_thread(
    list: &[u32],
    run_start: &[u32],
    n: usize,
    tid: u32,
    tid_of: impl Fn(usize) -> u32,
) -> Option<usize> {
    let p = n.checked_sub(1)?;
    if tid_of(list[p] as usize) != tid {
        return Some(list[p] as usize);
    }
    let before = (run_start[p] as usize).checked_sub(1)?;
    Some(list[before] as usize)
}

/// The OpenMP synchronisation events of every traced thread of
/// `recording`, paired and with their wakers.
pub fn collect(recording: &Recording) -> Vec<OmpSyncEvent> {
    let mut b = OmpSyncBuilder::default();
    // Room for every event at once (a vector grown by doubling held up to
    // twice its length, 604 MB for a 5-million-pair recording): at most
    // one per acquired record, implicit barrier arrival and explicit
    // barrier's wait end ([`pair_thread`] makes no other), here bounded by
    // the acquired, wait begin and wait end records the reader counted,
    // which exceed the events by the explicit barriers' arrivals and the
    // implicit barriers' wait ends. (Counting them exactly would read every
    // record once more: the records are not kept in memory.)
    let most: usize = recording
        .processes
        .iter()
        .flat_map(|p| &p.trace.threads)
        .map(|t| {
            t.omp_by_event[usize::from(ev::MUTEX_ACQUIRED)]
                + t.omp_by_event[usize::from(ev::SYNC_WAIT_BEGIN)]
                + t.omp_by_event[usize::from(ev::SYNC_WAIT_END)]
        })
        .sum();
    b.events.reserve_exact(most);
    for (pi, p) in recording.processes.iter().enumerate() {
        let trace = &p.trace;
        for t in &trace.threads {
            if t.omp_count() == 0 {
                continue;
            }
            pair_thread(
                pi as u32,
                t.tid,
                trace.omp_ops(t),
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
            let key = (e.pid(recording), super::sync_kind(e.kind).to_string(), name);
            if let Some(&k) = barrier_row.get(&key) {
                let row = &mut report.barriers[k];
                row.critical_events += 1;
                row.critical_wait_ns += wait;
            }
        } else {
            let key = (
                e.pid(recording),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn mutex(tid: u32, object: u64, requested: u64, acquired: u64, released: u64) -> OmpSyncEvent {
        let mut e = OmpSyncEvent::new(0, tid, false, 1, object, 0, requested);
        e.acquired_ns = acquired;
        e.released_ns = released;
        e
    }

    /// 56 bytes: one per acquisition and barrier wait, millions (the
    /// process id comes from the process, the waker is a `u32`).
    #[test]
    fn an_event_is_56_bytes_and_keeps_its_waker() {
        assert_eq!(std::mem::size_of::<OmpSyncEvent>(), 56);
        let mut e = OmpSyncEvent::new(0, 1, false, 1, 0x10, 0x20, 5);
        assert_eq!(e.waker(), None);
        e.set_waker(Some(7));
        assert_eq!(e.waker(), Some(7));
        e.set_waker(Some(u32::MAX as usize));
        assert_eq!(e.waker(), None, "an index past u32 is no waker");
        e.set_waker(None);
        assert_eq!(e.waker(), None);
    }

    /// The waker rule of the module docs, searched backwards as written.
    fn wakers_by_search(events: &[OmpSyncEvent]) -> Vec<Option<usize>> {
        events
            .iter()
            .map(|e| {
                if e.acquired_ns <= e.requested_ns {
                    return None;
                }
                (0..events.len())
                    .filter(|&k| events[k].object == e.object)
                    .filter(|&k| events[k].released_ns <= e.acquired_ns)
                    .max_by_key(|&k| (events[k].tid != e.tid, events[k].released_ns, k))
                    .filter(|&k| events[k].tid != e.tid)
                    .filter(|&k| events[k].released_ns >= e.requested_ns)
            })
            .collect()
    }

    #[test]
    fn a_waker_is_the_latest_release_by_another_thread_during_the_wait() {
        // by hand: thread 1 takes the lock three times (10–20, 20–30,
        // 30–40); thread 2 waits 15 → 41: woken by thread 1's release at
        // 40; thread 1 then waits 41 → 50 for thread 2's release at 50,
        // and again 50 → 55 (released by itself at 52 and by 2 at 50:
        // thread 2's at 50 is the latest by another thread)
        let events = vec![
            mutex(1, 7, 10, 10, 20),
            mutex(1, 7, 20, 20, 30),
            mutex(1, 7, 30, 30, 40),
            mutex(2, 7, 15, 41, 50),
            mutex(1, 7, 41, 50, 52),
            mutex(1, 7, 50, 55, 60),
        ];
        let found: Vec<Option<usize>> = finish(OmpSyncBuilder {
            events,
            region_site: HashMap::new(),
        })
        .iter()
        .map(|e| e.waker())
        .collect();
        assert_eq!(found, vec![None, None, None, Some(2), Some(3), Some(3)]);
    }

    #[test]
    fn wakers_agree_with_the_backward_search_on_random_runs() {
        let mut rng = crate::TestRng(0x9e37_79b9_7f4a_7c15);
        let mut next = |m: u64| rng.below(m);
        let (mut matched, mut unmatched) = (0, 0);
        for round in 0..200 {
            let threads = 1 + (round % 4) as u64;
            let mut events = Vec::new();
            let mut t = 0;
            for _ in 0..(20 + next(60)) {
                t += next(5);
                let requested = t;
                let acquired = requested + next(3) * next(10);
                let released = acquired + next(8);
                events.push(mutex(
                    next(threads) as u32 + 1,
                    next(2),
                    requested,
                    acquired,
                    released,
                ));
            }
            let expected = wakers_by_search(&events);
            let found: Vec<Option<usize>> = finish(OmpSyncBuilder {
                events,
                region_site: HashMap::new(),
            })
            .iter()
            .map(|e| e.waker())
            .collect();
            assert_eq!(found, expected, "round {round}");
            matched += found.iter().filter(|w| w.is_some()).count();
            unmatched += found.iter().filter(|w| w.is_none()).count();
        }
        assert!(
            matched > 100 && unmatched > 100,
            "{matched} with a waker, {unmatched} without"
        );
    }
}
