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

use std::borrow::Cow;
use std::collections::HashMap;
use std::mem::MaybeUninit;

use rayon::prelude::*;
use rustc_hash::FxHashMap;

use contend_trace::format::omp as ev;
use contend_trace::OmpOp;

use crate::chunked_sort::partition_point_near;
use crate::recording::Recording;

/// One OpenMP synchronisation of one thread, unpacked: an acquisition of
/// an OpenMP mutex or a wait at a barrier, as [`OmpSyncEvents::get`] gives
/// it (the events are held packed, 32 bytes each); its process id is its
/// process's ([`OmpSyncEvent::pid`]).
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
}

impl OmpSyncEvent {
    /// An event, its request, acquisition and release at `t` (ns).
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
        }
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

/// The largest wait or hold time an OpenMP event keeps, ns (2^48 − 1,
/// about 78 hours; a longer one is kept at that limit, as for a lock
/// event: [`crate::locks::MAX_EVENT_DURATION_NS`]).
pub const MAX_SYNC_DURATION_NS: u64 = (1 << 48) - 1;

/// Threads an [`OmpSyncEvents`] can name (2^24); the events of threads
/// beyond are left out.
const MAX_SYNC_THREADS: usize = 1 << 24;

/// The largest OMPT kind an event keeps: a kind above (no OMPT kind is)
/// is kept as this one, which is no kind either and has the same name.
const MAX_SYNC_KIND: u8 = 127;

/// One event packed, 32 bytes (one per acquisition and barrier wait:
/// millions): the request time in full, wait and hold as 48-bit
/// durations, the thread, object and site as indices into the tables of
/// its [`OmpSyncEvents`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(C)]
struct PackedSync {
    requested_ns: u64,
    wait_lo: u32,
    hold_lo: u32,
    /// Bits 0–15: wait bits 32–47; bits 16–31: hold bits 32–47.
    high: u32,
    /// Bits 0–23: thread index; 24–30: kind; 31: barrier.
    thread_kind: u32,
    object: u32,
    site: u32,
}

impl PackedSync {
    /// `e` packed with thread, object and site indices, its acquisition
    /// and release at its request (then set with [`PackedSync::set_times`]).
    #[inline]
    fn new(e: &OmpSyncEvent, thread: u32, object: u32, site: u32) -> PackedSync {
        PackedSync {
            requested_ns: e.requested_ns,
            wait_lo: 0,
            hold_lo: 0,
            high: 0,
            thread_kind: thread
                | u32::from(e.kind.min(MAX_SYNC_KIND)) << 24
                | u32::from(e.barrier) << 31,
            object,
            site,
        }
    }

    #[inline]
    fn wait_ns(&self) -> u64 {
        u64::from(self.wait_lo) | u64::from(self.high & 0xffff) << 32
    }
    #[inline]
    fn hold_ns(&self) -> u64 {
        u64::from(self.hold_lo) | u64::from(self.high >> 16) << 32
    }
    #[inline]
    fn acquired_ns(&self) -> u64 {
        self.requested_ns + self.wait_ns()
    }
    #[inline]
    fn released_ns(&self) -> u64 {
        self.acquired_ns() + self.hold_ns()
    }
    #[inline]
    fn thread(&self) -> u32 {
        self.thread_kind & 0x00ff_ffff
    }
    #[inline]
    fn kind(&self) -> u8 {
        ((self.thread_kind >> 24) & 0x7f) as u8
    }
    #[inline]
    fn barrier(&self) -> bool {
        self.thread_kind >> 31 == 1
    }
    /// Sets the acquisition and release times, ns (each kept at the one
    /// before when earlier).
    #[inline]
    fn set_times(&mut self, acquired_ns: u64, released_ns: u64) {
        let acquired = acquired_ns.max(self.requested_ns);
        let wait = (acquired - self.requested_ns).min(MAX_SYNC_DURATION_NS);
        let hold = released_ns
            .saturating_sub(acquired)
            .min(MAX_SYNC_DURATION_NS);
        self.wait_lo = wait as u32;
        self.hold_lo = hold as u32;
        self.high = (wait >> 32) as u32 | ((hold >> 32) as u32) << 16;
    }
}

/// The OpenMP synchronisation events of a recording ([`collect`]), packed:
/// 32 bytes per event, its thread, object and site in tables, the wakers
/// (few: most acquisitions do not wait) beside them. Indexed like the
/// events were collected; [`OmpSyncEvents::get`] unpacks one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OmpSyncEvents {
    packed: Vec<PackedSync>,
    /// (process index, tid) by thread index.
    threads: Vec<(u32, u32)>,
    /// Wait ids and region instances by object index.
    objects: Vec<u64>,
    /// Sites by site index.
    sites: Vec<u64>,
    /// (event, its waker), by event: the event that let it go (module
    /// docs), indices into the events.
    wakers: Vec<(u32, u32)>,
}

impl OmpSyncEvents {
    /// Number of events.
    pub fn len(&self) -> usize {
        self.packed.len()
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.packed.is_empty()
    }

    /// Event `i`, unpacked (panics past the end, like a slice).
    #[inline]
    pub fn get(&self, i: usize) -> OmpSyncEvent {
        self.unpack(&self.packed[i])
    }

    #[inline]
    fn unpack(&self, p: &PackedSync) -> OmpSyncEvent {
        let (process, tid) = self.threads[p.thread() as usize];
        OmpSyncEvent {
            process,
            tid,
            barrier: p.barrier(),
            kind: p.kind(),
            object: self.objects[p.object as usize],
            site: self.sites[p.site as usize],
            requested_ns: p.requested_ns,
            acquired_ns: p.acquired_ns(),
            released_ns: p.released_ns(),
        }
    }

    /// Every event, unpacked, in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = OmpSyncEvent> + '_ {
        self.packed.iter().map(|p| self.unpack(p))
    }

    /// Event `i`'s thread: an index into [`OmpSyncEvents::threads`].
    #[inline]
    pub fn thread_of(&self, i: usize) -> usize {
        self.packed[i].thread() as usize
    }

    /// The threads of the events, (process index, tid), in the order of
    /// their first events.
    pub fn threads(&self) -> &[(u32, u32)] {
        &self.threads
    }

    /// Event `i`'s [`OmpSyncEvent::acquired_ns`], without unpacking the rest.
    #[inline]
    pub fn acquired_ns(&self, i: usize) -> u64 {
        self.packed[i].acquired_ns()
    }

    /// Index of the event that let event `i` go (module docs), when found.
    pub fn waker(&self, i: usize) -> Option<usize> {
        let i = u32::try_from(i).ok()?;
        let k = self.wakers.binary_search_by_key(&i, |&(e, _)| e).ok()?;
        Some(self.wakers[k].1 as usize)
    }

    /// Every (event, waker) pair, by event.
    pub fn wakers(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        self.wakers.iter().map(|&(e, w)| (e as usize, w as usize))
    }
}

/// Barrier kinds whose waits end at the last arrival of the team.
fn is_team_barrier(kind: u8) -> bool {
    matches!(kind, 1 | 2 | 3 | 4 | 8 | 9 | 10)
}

fn is_implicit(kind: u8) -> bool {
    matches!(kind, 2 | 8 | 9)
}

/// The events [`pair_thread`] collects, with what it collects beside
/// them: the construct site of each parallel region instance, by
/// (process, instance). [`finish`] completes them.
#[derive(Debug, Default)]
pub struct OmpSyncBuilder {
    events: OmpSyncEvents,
    /// (process, region instance) → construct site.
    pub region_site: HashMap<(u32, u64), u64>,
    thread_index: FxHashMap<(u32, u32), u32>,
    object_index: FxHashMap<u64, u32>,
    site_index: FxHashMap<u64, u32>,
}

/// The index of `value` in `table`, added when new.
fn intern(index: &mut FxHashMap<u64, u32>, table: &mut Vec<u64>, value: u64) -> u32 {
    *index.entry(value).or_insert_with(|| {
        table.push(value);
        (table.len() - 1) as u32
    })
}

impl OmpSyncBuilder {
    /// Adds `e` (durations kept at [`MAX_SYNC_DURATION_NS`]); its index,
    /// or `None` when its thread is beyond the 2^24 an event can name.
    pub fn push(&mut self, e: OmpSyncEvent) -> Option<usize> {
        let thread = self.thread(e.process, e.tid)?;
        let object = intern(&mut self.object_index, &mut self.events.objects, e.object);
        let site = intern(&mut self.site_index, &mut self.events.sites, e.site);
        let mut p = PackedSync::new(&e, thread, object, site);
        p.set_times(e.acquired_ns, e.released_ns);
        self.events.packed.push(p);
        Some(self.events.packed.len() - 1)
    }

    /// The index of thread (`process`, `tid`), added when new; `None`
    /// beyond the [`MAX_SYNC_THREADS`] an event can name.
    fn thread(&mut self, process: u32, tid: u32) -> Option<u32> {
        let threads = &mut self.events.threads;
        match self.thread_index.get(&(process, tid)) {
            Some(&t) => Some(t),
            None if threads.len() < MAX_SYNC_THREADS => {
                threads.push((process, tid));
                let t = (threads.len() - 1) as u32;
                self.thread_index.insert((process, tid), t);
                Some(t)
            }
            None => None,
        }
    }
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
    pair_thread_into(process, tid, ops, to_ns, out);
}

/// Where [`pair_thread_into`] puts one thread's events: the whole
/// recording's [`OmpSyncBuilder`], or the thread's own part of the
/// event vector ([`ThreadPart`], when the threads are paired side by
/// side).
trait SyncSink {
    /// Adds `e`; its index, to give to [`SyncSink::release`], or `None`
    /// when it was left out.
    fn push(&mut self, e: OmpSyncEvent) -> Option<usize>;
    /// Event `i` (an index `push` gave) was released at `released_ns`.
    fn release(&mut self, i: usize, released_ns: u64);
    /// The construct site of parallel region instance `instance`.
    fn region_site(&mut self, process: u32, instance: u64, site: u64);
}

impl SyncSink for OmpSyncBuilder {
    fn push(&mut self, e: OmpSyncEvent) -> Option<usize> {
        OmpSyncBuilder::push(self, e)
    }

    fn release(&mut self, i: usize, released_ns: u64) {
        let e = &mut self.events.packed[i];
        e.set_times(e.acquired_ns(), released_ns);
    }

    fn region_site(&mut self, process: u32, instance: u64, site: u64) {
        self.region_site.insert((process, instance), site);
    }
}

/// What one thread's OpenMP records say, as [`visit_thread`] pairs them
/// for the OpenMP analyses (this module's events, the section's sums).
/// Times are ns.
pub(crate) trait OmpVisitor {
    /// A mutex acquisition of `op.object`, kind `op.kind`: requested at
    /// `start` at `site`, acquired at `acquired`. Returns a token for its
    /// release, or `None` when it was left out.
    fn acquired(&mut self, op: &OmpOp, site: u64, start: u64, acquired: u64) -> Option<usize>;
    /// The acquisition `token` gave was released at `now` (acquired at
    /// `acquired`).
    fn released(&mut self, token: usize, acquired: u64, now: u64);
    /// An arrival at an implicit barrier of region instance `op.object`.
    fn arrival(&mut self, op: &OmpOp, now: u64);
    /// A wait of another kind (explicit barrier, taskwait, …), begun by
    /// `begin`, from `start` to `end`.
    fn wait(&mut self, begin: &OmpOp, start: u64, end: u64);
    /// The thread's implicit task in region instance `op.object` began
    /// (`op.value` its number in the team).
    fn task_begin(&mut self, op: &OmpOp, now: u64);
    /// Region instance `op.object` began, at construct `op.site`.
    fn parallel_begin(&mut self, op: &OmpOp);
}

/// Pairs one thread's OpenMP records (in time order; `to_ns` converts
/// ticks to ns) for `v`: a mutex's acquire, acquired and released records
/// by wait id; an implicit barrier's wait begin is the arrival (its end
/// is recorded only when the next region starts); another wait's begin
/// and end; a record without its partner is dropped.
pub(crate) fn visit_thread(
    ops: impl IntoIterator<Item = OmpOp>,
    to_ns: impl Fn(u64) -> u64,
    v: &mut impl OmpVisitor,
) {
    // object → (acquire ns, site), and object → (token, acquired ns)
    let mut acquiring: FxHashMap<u64, (u64, u64)> = FxHashMap::default();
    let mut held: FxHashMap<u64, (usize, u64)> = FxHashMap::default();
    let mut waiting: Option<(OmpOp, u64)> = None;
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
                if let Some(token) = v.acquired(&op, site, start, now) {
                    held.insert(op.object, (token, now));
                }
            }
            ev::MUTEX_RELEASED => {
                if let Some((token, acquired)) = held.remove(&op.object) {
                    v.released(token, acquired, now);
                }
            }
            ev::SYNC_WAIT_BEGIN if is_implicit(op.kind) => {
                waiting = None;
                v.arrival(&op, now);
            }
            ev::SYNC_WAIT_BEGIN => waiting = Some((op, now)),
            ev::SYNC_WAIT_END => {
                if let Some((begin, start)) = waiting.take() {
                    v.wait(&begin, start, now);
                }
            }
            ev::TASK_BEGIN => v.task_begin(&op, now),
            ev::PARALLEL_BEGIN => v.parallel_begin(&op),
            _ => {}
        }
    }
}

/// [`pair_thread`] into any [`SyncSink`].
fn pair_thread_into(
    process: u32,
    tid: u32,
    ops: impl IntoIterator<Item = OmpOp>,
    to_ns: impl Fn(u64) -> u64,
    out: &mut impl SyncSink,
) {
    visit_thread(ops, to_ns, &mut Pairing { process, tid, out });
}

/// [`pair_thread`]'s [`OmpVisitor`]: one event per acquisition, implicit
/// barrier arrival and other wait, into `out`.
struct Pairing<'s, S> {
    process: u32,
    tid: u32,
    out: &'s mut S,
}

impl<S: SyncSink> Pairing<'_, S> {
    /// A barrier or mutex event of this thread, requested at `t`.
    fn event(&self, barrier: bool, kind: u8, object: u64, site: u64, t: u64) -> OmpSyncEvent {
        OmpSyncEvent::new(self.process, self.tid, barrier, kind, object, site, t)
    }
}

impl<S: SyncSink> OmpVisitor for Pairing<'_, S> {
    fn acquired(&mut self, op: &OmpOp, site: u64, start: u64, acquired: u64) -> Option<usize> {
        let mut e = self.event(false, op.kind, op.object, site, start);
        e.acquired_ns = acquired.max(start);
        e.released_ns = e.acquired_ns;
        self.out.push(e)
    }

    fn released(&mut self, token: usize, _acquired: u64, now: u64) {
        self.out.release(token, now);
    }

    fn arrival(&mut self, op: &OmpOp, now: u64) {
        let e = self.event(true, 2, op.object, 0, now);
        self.out.push(e);
    }

    fn wait(&mut self, begin: &OmpOp, start: u64, end: u64) {
        let mut e = self.event(true, begin.kind, begin.object, begin.site, start);
        e.acquired_ns = end.max(start);
        e.released_ns = e.acquired_ns;
        self.out.push(e);
    }

    fn task_begin(&mut self, _op: &OmpOp, _now: u64) {}

    fn parallel_begin(&mut self, op: &OmpOp) {
        self.out.region_site(self.process, op.object, op.site);
    }
}

/// Completes the barriers (the k-th explicit and the k-th implicit
/// barrier of each thread of a region instance form one barrier; an
/// implicit wait ends at its last arrival and carries the parallel
/// construct's site) and finds every event's waker (module docs).
pub fn finish(b: OmpSyncBuilder) -> OmpSyncEvents {
    let OmpSyncBuilder {
        mut events,
        region_site,
        mut site_index,
        ..
    } = b;
    let mut wakers: Vec<(u32, u32)> = Vec::new();
    // (event, waker), for a waker index that fits in 4 bytes
    let mut woken = |i: usize, waker: usize| {
        if let (Ok(i), Ok(w)) = (u32::try_from(i), u32::try_from(waker)) {
            if w != u32::MAX {
                wakers.push((i, w));
            }
        }
    };
    // Barriers: (thread, region, implicit) → barriers met so far, and
    // (process, region, implicit, k) → member events. A thread index names
    // its process, and an object index its value.
    let mut seen: HashMap<(u32, u32, bool), u32> = HashMap::new();
    let mut instances: HashMap<(u32, u32, bool, u32), Vec<usize>> = HashMap::new();
    for (i, p) in events.packed.iter().enumerate() {
        if !(p.barrier() && is_team_barrier(p.kind())) {
            continue;
        }
        let implicit = is_implicit(p.kind());
        let k = seen.entry((p.thread(), p.object, implicit)).or_insert(0);
        let process = events.threads[p.thread() as usize].0;
        instances
            .entry((process, p.object, implicit, *k))
            .or_default()
            .push(i);
        *k += 1;
    }
    for ((process, region, implicit, _), members) in &instances {
        let packed = &mut events.packed;
        let Some(&last) = members
            .iter()
            .max_by_key(|&&i| (packed[i].requested_ns, std::cmp::Reverse(i)))
        else {
            continue;
        };
        let last_arrival = packed[last].requested_ns;
        // an implicit barrier's: the parallel construct's site
        let implicit_site = implicit.then(|| {
            let region = events.objects[*region as usize];
            let site = region_site.get(&(*process, region)).copied().unwrap_or(0);
            intern(&mut site_index, &mut events.sites, site)
        });
        for &i in members {
            let e = &mut packed[i];
            if let Some(site) = implicit_site {
                let acquired = e.acquired_ns().max(last_arrival);
                e.set_times(acquired, acquired);
                e.site = site;
            }
            let e = packed[i];
            if packed[last].thread() != e.thread()
                && last_arrival >= e.requested_ns
                && e.acquired_ns() > e.requested_ns
            {
                woken(i, last);
            }
        }
    }
    let packed = &events.packed;
    // Mutexes: per object (an object index names its process's wait id
    // only if the process is the same: per (process, object)), its
    // acquisitions, which are also the releases that can wake them, by
    // release time. Positions are 4 bytes and each list is made at its
    // size, counted first: grown by doubling, lists of 8-byte positions
    // held 67 MB for 5 million acquisitions of one lock, at the peak of
    // the analyses that collect these events. (A waker is stored in 4
    // bytes anyway: events past 2^32 − 1 get none.)
    let process_of = |p: &PackedSync| events.threads[p.thread() as usize].0;
    // Per (process, object): its acquisitions, and its thread, or SHARED
    // once a second thread took it (only another thread's release wakes
    // an acquisition: an object one thread takes alone needs no list).
    const SHARED: u32 = u32::MAX;
    let mut sizes: FxHashMap<(u32, u32), (u32, u32)> = FxHashMap::default();
    for p in packed.iter().filter(|p| !p.barrier()) {
        let (n, thread) = sizes
            .entry((process_of(p), p.object))
            .or_insert((0, p.thread()));
        *n += 1;
        if *thread != p.thread() {
            *thread = SHARED;
        }
    }
    let mut releases: FxHashMap<(u32, u32), Vec<u32>> = sizes
        .into_iter()
        .filter(|&(_, (_, thread))| thread == SHARED)
        .map(|(key, (n, _))| (key, Vec::with_capacity(n as usize)))
        .collect();
    for (i, p) in packed.iter().enumerate() {
        if p.barrier() {
            continue;
        }
        if let (Ok(i), Some(list)) = (
            u32::try_from(i),
            releases.get_mut(&(process_of(p), p.object)),
        ) {
            list.push(i);
        }
    }
    for list in releases.values_mut() {
        list.sort_by_key(|&i| (packed[i as usize].released_ns(), i));
        // Where each run of releases by one thread begins (positions, in
        // order): the latest release by another thread before position p
        // is then p itself or the one before p's run (a backward search is
        // quadratic when one thread takes a lock millions of times). One
        // entry per run, not per release.
        let mut run_starts: Vec<u32> = Vec::new();
        for (p, &k) in list.iter().enumerate() {
            if p == 0 || packed[list[p - 1] as usize].thread() != packed[k as usize].thread() {
                run_starts.push(p as u32);
            }
        }
        // The releases at or before each acquisition: the list is in
        // release order, and a mutex's acquisitions nearly always come in
        // that order too, so each search starts where the one before ended
        // (galloping, either way). A binary search of the whole list for
        // every acquisition was 16 % of the report's time for 5 million
        // acquisitions of one lock.
        let (mut before_n, mut run) = (0usize, 0usize);
        for &i in list.iter() {
            let i = i as usize;
            let e = packed[i];
            let (requested, acquired) = (e.requested_ns, e.acquired_ns());
            if acquired <= requested {
                continue;
            }
            let n = partition_point_near(list, before_n, |&k| {
                packed[k as usize].released_ns() <= acquired
            });
            before_n = n;
            let found = latest_by_other_thread(list, &run_starts, &mut run, n, e.thread(), |k| {
                packed[k].thread()
            });
            if let Some(k) = found.filter(|&k| packed[k].released_ns() >= requested) {
                woken(i, k);
            }
        }
    }
    wakers.sort_unstable();
    events.wakers = wakers;
    events
}

/// The last of `list[..n]` whose thread (`thread_of`) is not `thread`:
/// `run_starts` are the positions where a run of entries by one thread
/// begins, in order; `run` a guess of the run of position `n − 1` (the
/// previous call's, updated), from which the run is found by galloping.
/// O(log distance of the guess).
fn latest_by_other_thread(
    list: &[u32],
    run_starts: &[u32],
    run: &mut usize,
    n: usize,
    thread: u32,
    thread_of: impl Fn(usize) -> u32,
) -> Option<usize> {
    let p = n.checked_sub(1)?;
    if thread_of(list[p] as usize) != thread {
        return Some(list[p] as usize);
    }
    // runs beginning at or before p: the last of them is p's
    let r = partition_point_near(run_starts, *run + 1, |&start| start as usize <= p);
    *run = r.saturating_sub(1);
    let before = (run_starts[*run] as usize).checked_sub(1)?;
    Some(list[before] as usize)
}

/// The OpenMP events of an analysed recording, for the exports: those
/// the lock analysis collected for the critical path across recorders
/// ([`crate::locks::LockEvents::across_omp`]), else collected now
/// ([`collect`]; the OpenMP analysis keeps none of its own).
pub fn events_of<'a>(analysis: &'a crate::analysis::Analysis<'_>) -> Cow<'a, OmpSyncEvents> {
    match analysis
        .events::<crate::locks::LockEvents>()
        .and_then(|l| l.across_omp.as_ref())
    {
        Some(omp) => Cow::Borrowed(omp),
        None => Cow::Owned(collect(analysis.recording)),
    }
}

/// The OpenMP synchronisation events of every traced thread of
/// `recording`, paired and with their wakers.
pub fn collect(recording: &Recording) -> OmpSyncEvents {
    // Each thread's events are at most one per acquired record, implicit
    // barrier arrival and explicit barrier's wait end ([`pair_thread`]
    // makes no other), here bounded by the acquired, wait begin and wait
    // end records the reader counted, which exceed the events by the
    // explicit barriers' arrivals and the implicit barriers' wait ends.
    // (Counting them exactly would read every record once more: the
    // records are not kept in memory.)
    let threads = super::threads_with_records(recording);
    let bounds: Vec<usize> = threads
        .iter()
        .map(|(_, _, t)| {
            t.omp_by_event[usize::from(ev::MUTEX_ACQUIRED)]
                + t.omp_by_event[usize::from(ev::SYNC_WAIT_BEGIN)]
                + t.omp_by_event[usize::from(ev::SYNC_WAIT_END)]
        })
        .collect();
    // Room for every event at once (a vector grown by doubling held up to
    // twice its length, 604 MB for a 5-million-pair recording), each
    // thread paired into its own part of it on both cores, then the parts
    // moved together, in thread order, with their threads, objects and
    // sites numbered as one pass over the threads in that order would.
    let total: usize = bounds.iter().sum();
    let mut packed: Vec<PackedSync> = Vec::with_capacity(total);
    let mut slices: Vec<&mut [MaybeUninit<PackedSync>]> = Vec::with_capacity(threads.len());
    let mut rest = &mut packed.spare_capacity_mut()[..total];
    for &bound in &bounds {
        let (head, tail) = rest.split_at_mut(bound);
        slices.push(head);
        rest = tail;
    }
    let records: usize = threads.iter().map(|t| t.2.omp_count()).sum();
    let parts: Vec<ThreadTables> = threads
        .par_iter()
        .zip(slices)
        .map(|(&(pi, trace, t), out)| {
            let mut part = ThreadPart {
                out,
                tables: ThreadTables::default(),
            };
            super::with_omp_records(trace, t, records, |ops| {
                pair_thread_into(
                    pi,
                    t.tid,
                    ops,
                    |ticks| recording.to_ns(trace, ticks),
                    &mut part,
                )
            });
            part.tables
        })
        .collect();
    let mut b = OmpSyncBuilder::default();
    let base = packed.as_mut_ptr();
    let (mut at, mut start) = (0usize, 0usize);
    for ((part, &(pi, _, t)), bound) in parts.into_iter().zip(&threads).zip(bounds) {
        let thread = (part.written > 0).then(|| b.thread(pi, t.tid)).flatten();
        if let Some(thread) = thread {
            let objects: Vec<u32> = part
                .objects
                .iter()
                .map(|&o| intern(&mut b.object_index, &mut b.events.objects, o))
                .collect();
            let sites: Vec<u32> = part
                .sites
                .iter()
                .map(|&s| intern(&mut b.site_index, &mut b.events.sites, s))
                .collect();
            for k in start..start + part.written {
                // SAFETY: the part wrote its first `written` places
                // (start..start + written, inside the vector's capacity),
                // and the events move down (at <= k): each is read before
                // a later write can reach its place.
                unsafe {
                    let mut e = base.add(k).read();
                    e.thread_kind |= thread;
                    e.object = objects[e.object as usize];
                    e.site = sites[e.site as usize];
                    base.add(at).write(e);
                }
                at += 1;
            }
        }
        for (key, site) in part.region_sites {
            b.region_site.insert(key, site);
        }
        start += bound;
    }
    // SAFETY: places 0..at were written above.
    unsafe { packed.set_len(at) };
    b.events.packed = packed;
    finish(b)
}

/// One thread's part of the event vector while the threads are paired
/// side by side ([`collect`]): its events are written with thread index 0
/// and with object and site indices into the thread's own tables, which
/// the move into place renumbers.
struct ThreadPart<'a> {
    out: &'a mut [MaybeUninit<PackedSync>],
    tables: ThreadTables,
}

/// What a [`ThreadPart`] keeps beside its events.
#[derive(Default)]
struct ThreadTables {
    /// Events written, the first places of its part.
    written: usize,
    /// Objects and sites by the thread's own indices, in first-seen order.
    objects: Vec<u64>,
    object_index: FxHashMap<u64, u32>,
    sites: Vec<u64>,
    site_index: FxHashMap<u64, u32>,
    /// [`SyncSink::region_site`]s, in order.
    region_sites: Vec<((u32, u64), u64)>,
}

impl SyncSink for ThreadPart<'_> {
    fn push(&mut self, e: OmpSyncEvent) -> Option<usize> {
        let t = &mut self.tables;
        // (more events than the reader counted records: the file changed
        // since; the rest is left out)
        let slot = self.out.get_mut(t.written)?;
        let object = intern(&mut t.object_index, &mut t.objects, e.object);
        let site = intern(&mut t.site_index, &mut t.sites, e.site);
        let mut p = PackedSync::new(&e, 0, object, site);
        p.set_times(e.acquired_ns, e.released_ns);
        slot.write(p);
        t.written += 1;
        Some(t.written - 1)
    }

    fn release(&mut self, i: usize, released_ns: u64) {
        if i < self.tables.written {
            // SAFETY: places below `written` were written by `push`.
            let e = unsafe { self.out[i].assume_init_mut() };
            e.set_times(e.acquired_ns(), released_ns);
        }
    }

    fn region_site(&mut self, process: u32, instance: u64, site: u64) {
        self.tables.region_sites.push(((process, instance), site));
    }
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
    events: &OmpSyncEvents,
    path: &crate::locks::across::AcrossPath,
) {
    if path.omp_on_path.len() != events.len() {
        return;
    }
    let handed: rustc_hash::FxHashSet<u32> = path
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
    // Each event's row by (process, barrier, kind, object or site), the
    // identity above looked up once per such key (not once per event: a
    // name and an address made for each of millions of events on the path
    // took a tenth of an OpenMP report's time).
    let mut row_of: FxHashMap<(u32, bool, u8, u64), Option<usize>> = FxHashMap::default();
    for (i, _) in path.omp_on_path.iter().enumerate().filter(|(_, &on)| on) {
        let e = events.get(i);
        let (wait, hold) = (e.wait_ns(), e.hold_ns());
        report.summary.critical_events += 1;
        report.summary.critical_wait_ns += wait;
        report.summary.critical_handovers += u64::from(handed.contains(&(i as u32)));
        let which = if e.barrier { e.site } else { e.object };
        let row = *row_of
            .entry((e.process, e.barrier, e.kind, which))
            .or_insert_with(|| {
                if e.barrier {
                    let name = symbols
                        .site(recording.process_maps(e.process), e.site)
                        .display;
                    let key = (e.pid(recording), super::sync_kind(e.kind).to_string(), name);
                    barrier_row.get(&key).copied()
                } else {
                    let key = (
                        e.pid(recording),
                        super::mutex_kind(e.kind).to_string(),
                        format!("{:#x}", e.object),
                    );
                    mutex_row.get(&key).copied()
                }
            });
        let Some(k) = row else {
            continue;
        };
        if e.barrier {
            let row = &mut report.barriers[k];
            row.critical_events += 1;
            row.critical_wait_ns += wait;
        } else {
            let row = &mut report.mutexes[k];
            row.critical_events += 1;
            row.critical_wait_ns += wait;
            row.critical_hold_ns += hold;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mutex(tid: u32, object: u64, requested: u64, acquired: u64, released: u64) -> OmpSyncEvent {
        OmpSyncEvent {
            acquired_ns: acquired,
            released_ns: released,
            ..OmpSyncEvent::new(0, tid, false, 1, object, 0, requested)
        }
    }

    /// The events of `events`, completed by [`finish`].
    fn finished(events: &[OmpSyncEvent]) -> OmpSyncEvents {
        let mut b = OmpSyncBuilder::default();
        for &e in events {
            b.push(e);
        }
        finish(b)
    }

    /// The wakers of every event of `events`.
    fn wakers_of(events: &OmpSyncEvents) -> Vec<Option<usize>> {
        (0..events.len()).map(|i| events.waker(i)).collect()
    }

    /// 32 bytes each (one per acquisition and barrier wait: millions),
    /// unpacked as they were given: threads, objects and sites from the
    /// tables, kinds, durations up to 2^48 − 1 ns and the request time in
    /// full; a longer duration is kept at that limit.
    #[test]
    fn an_event_is_32_bytes_and_unpacks_as_given() {
        assert_eq!(std::mem::size_of::<PackedSync>(), 32);
        let long = MAX_SYNC_DURATION_NS;
        let given = [
            OmpSyncEvent::new(0, 11, false, 5, 0x10, 0x20, 5),
            OmpSyncEvent {
                acquired_ns: u64::MAX / 4 + 7,
                released_ns: u64::MAX / 4 + 9,
                ..OmpSyncEvent::new(1, 12, true, 10, u64::MAX, 0x30, u64::MAX / 4)
            },
            OmpSyncEvent {
                acquired_ns: 100 + long,
                released_ns: 100 + 2 * long,
                ..OmpSyncEvent::new(0, 11, false, 1, 0x10, 0x20, 100)
            },
            OmpSyncEvent::new(2, 13, true, MAX_SYNC_KIND, 0, 0, 1),
        ];
        let mut b = OmpSyncBuilder::default();
        for (i, &e) in given.iter().enumerate() {
            assert_eq!(b.push(e), Some(i));
        }
        let events = b.events;
        assert_eq!(events.len(), given.len());
        assert_eq!(events.iter().collect::<Vec<_>>(), given);
        // shared tables: the first and third event's thread, object, site
        assert_eq!(
            (
                events.threads.len(),
                events.objects.len(),
                events.sites.len()
            ),
            (3, 3, 3)
        );
        let beyond = OmpSyncEvent {
            acquired_ns: 5 + long + 1,
            released_ns: 5 + 3 * long,
            ..OmpSyncEvent::new(0, 11, false, 200, 0x10, 0x20, 5)
        };
        let mut b = OmpSyncBuilder::default();
        b.push(beyond);
        let kept = b.events.get(0);
        assert_eq!((kept.wait_ns(), kept.hold_ns()), (long, long));
        assert_eq!(kept.kind, MAX_SYNC_KIND, "a kind past any OMPT kind");
        assert_eq!(kept.kind_name(), beyond.kind_name());
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
        let found = wakers_of(&finished(&events));
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
            let found = wakers_of(&finished(&events));
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
