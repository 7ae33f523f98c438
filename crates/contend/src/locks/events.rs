//! Pairing of recorded operations into lock events.
//!
//! A lock event is one acquisition attempt and, when it succeeded, its
//! release (Venter 2016, Section 3.2.2.2: "matches each acquisition of a
//! mutex to a release of a mutex to form a mutex event"). Per event:
//!
//! * wait time = acquired − requested,
//! * hold time = released − acquired,
//! * event duration = wait + hold,
//! * contended = the acquisition did not succeed at once.
//!
//! Pairing is per thread and per object, last acquired first released, so
//! nested locks, recursive mutexes (lock, lock, unlock, unlock) and read
//! locks held by several threads at once (each thread pairs its own) all
//! come out right. A release with no open acquisition in its thread (a lock
//! taken before the collector started, or a mutex unlocked by another
//! thread) is counted as unmatched; an acquisition never released is held
//! until the thread's last recorded operation and counted as unreleased.
//!
//! Two additions of trace format version 2: the wake cost, the time inside
//! an unlock (or `sem_post`) that found waiters, from its RELEASE to its
//! RELEASED record (Huang et al., HaLock, PACT 2012, Section 4.3: unlock
//! time, which includes waking waiters, is not negligible), summed per
//! object ([`WakeCost`]); and light recordings, whose uncontended
//! acquisitions were counted per object, site and thread instead of
//! recorded ([`CountedAcquisitions`]; they are not events; past a thread's
//! 256th (object, site) pair per site and thread, without the object), and
//! whose UNTIMED records (a counted hold whose release woke a waiter)
//! become events acquired at their release (hold 0, its true hold
//! unknown).

use contend_trace::{ClockFit, Counted, LockTrace, Phase, Primitive, RawOp, ThreadTrace};
use rayon::prelude::*;
use std::mem::MaybeUninit;

use rustc_hash::{FxHashMap, FxHashSet};

/// How an acquisition attempt ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// Acquired (or, for a barrier or condition wait, woken).
    Acquired,
    /// A try-lock found the object busy.
    Busy,
    /// A timed wait timed out.
    TimedOut,
    /// The call returned an error (EDEADLK, EPERM, EINVAL, …), or the
    /// thread's trace ended while it was still waiting.
    Error,
    /// A `sem_post`: not an acquisition; kept so the critical path can find
    /// the thread that woke a semaphore waiter. Excluded from every count.
    Post,
}

/// One lock event, packed into 32 bytes (the analysis of a large recording
/// holds every event at once: docs/benchmarks.md, "Analysis memory").
/// Times are CLOCK_MONOTONIC ns: the request in full, wait and hold time as
/// 48-bit durations (up to 2^48 − 1 ns ≈ 78 hours; a longer one is kept at
/// that limit), the thread index in 24 bits (up to 16,777,215 threads per
/// analysis; [`pair_operations`] leaves out the events of threads beyond).
/// The rare parts live beside the events in the [`EventSet`]: the mutex a
/// condition wait re-acquired ([`EventSet::cond_mutex`]) and the recorded
/// call stack ([`EventSet::stack_of`]). [`LockEventFields`] is the unpacked
/// form.
#[derive(Clone, Copy, PartialEq, Eq)]
#[repr(C)]
pub struct LockEvent {
    requested_ns: u64,
    wait_lo: u32,
    hold_lo: u32,
    /// Bits 0–15: wait bits 32–47; bits 16–31: hold bits 32–47.
    high: u32,
    /// Bits 0–23 thread; 24–26 primitive; 27–29 outcome; 30 contended; 31
    /// unreleased.
    thread_flags: u32,
    /// Index of the object in [`EventSet::objects`].
    pub object: u32,
    /// Index of the call site in [`EventSet::sites`].
    pub site: u32,
}

/// The largest wait or hold time a [`LockEvent`] keeps, ns (2^48 − 1).
pub const MAX_EVENT_DURATION_NS: u64 = (1 << 48) - 1;
/// The largest thread index a [`LockEvent`] keeps (2^24 − 1).
pub const MAX_EVENT_THREAD: u32 = (1 << 24) - 1;

/// A [`LockEvent`] unpacked: what is built and read field by field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LockEventFields {
    /// Index of the thread in [`EventSet::threads`] (≤ [`MAX_EVENT_THREAD`]).
    pub thread: u32,
    /// Index of the object in [`EventSet::objects`].
    pub object: u32,
    /// Index of the call site in [`EventSet::sites`].
    pub site: u32,
    /// Primitive and mode.
    pub primitive: Primitive,
    /// How the attempt ended.
    pub outcome: Outcome,
    /// The attempt began, ns.
    pub requested_ns: u64,
    /// Acquired (or the attempt ended, for a failed one), ns; ≥ `requested_ns`.
    pub acquired_ns: u64,
    /// Released, ns (≥ `acquired_ns`); equals `acquired_ns` for failed
    /// attempts and for primitives without a hold (condition, barrier,
    /// semaphore waits).
    pub released_ns: u64,
    /// The acquisition did not succeed at once.
    pub contended: bool,
    /// Still held when the thread's trace ended.
    pub unreleased: bool,
}

/// The primitives by their 3-bit code in an event: the trace format's
/// operation codes 1..=7, then [`Primitive::Join`] (code 8, from join
/// records).
const PRIMITIVES: [Primitive; 8] = Primitive::EVERY;
const OUTCOMES: [Outcome; 5] = [
    Outcome::Acquired,
    Outcome::Busy,
    Outcome::TimedOut,
    Outcome::Error,
    Outcome::Post,
];

#[inline]
fn primitive_code(p: Primitive) -> u32 {
    // the trace format's codes 1..=7 and Join's 8, in the order of PRIMITIVES
    p as u32 - 1
}

#[inline]
fn outcome_code(o: Outcome) -> u32 {
    match o {
        Outcome::Acquired => 0,
        Outcome::Busy => 1,
        Outcome::TimedOut => 2,
        Outcome::Error => 3,
        Outcome::Post => 4,
    }
}

impl LockEventFields {
    /// The packed event (durations beyond [`MAX_EVENT_DURATION_NS`] kept at
    /// that limit, a thread beyond [`MAX_EVENT_THREAD`] at that index).
    #[inline]
    pub fn pack(&self) -> LockEvent {
        let mut e = LockEvent {
            requested_ns: self.requested_ns,
            wait_lo: 0,
            hold_lo: 0,
            high: 0,
            thread_flags: self.thread.min(MAX_EVENT_THREAD)
                | primitive_code(self.primitive) << 24
                | outcome_code(self.outcome) << 27
                | u32::from(self.contended) << 30
                | u32::from(self.unreleased) << 31,
            object: self.object,
            site: self.site,
        };
        let acquired = self.acquired_ns.max(self.requested_ns);
        e.set_wait(acquired - self.requested_ns);
        e.set_hold(self.released_ns.saturating_sub(acquired));
        e
    }
}

impl std::fmt::Debug for LockEvent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.fields().fmt(f)
    }
}

impl LockEvent {
    #[inline]
    fn set_wait(&mut self, ns: u64) {
        let ns = ns.min(MAX_EVENT_DURATION_NS);
        self.wait_lo = ns as u32;
        self.high = (self.high & 0xffff_0000) | (ns >> 32) as u32;
    }
    #[inline]
    fn set_hold(&mut self, ns: u64) {
        let ns = ns.min(MAX_EVENT_DURATION_NS);
        self.hold_lo = ns as u32;
        self.high = (self.high & 0x0000_ffff) | ((ns >> 32) as u32) << 16;
    }
    /// The event unpacked.
    pub fn fields(&self) -> LockEventFields {
        LockEventFields {
            thread: self.thread(),
            object: self.object,
            site: self.site,
            primitive: self.primitive(),
            outcome: self.outcome(),
            requested_ns: self.requested_ns,
            acquired_ns: self.acquired_ns(),
            released_ns: self.released_ns(),
            contended: self.contended(),
            unreleased: self.unreleased(),
        }
    }
    /// Index of the thread in [`EventSet::threads`].
    #[inline]
    pub fn thread(&self) -> u32 {
        self.thread_flags & MAX_EVENT_THREAD
    }
    /// Primitive and mode.
    #[inline]
    pub fn primitive(&self) -> Primitive {
        PRIMITIVES[((self.thread_flags >> 24) & 7) as usize % PRIMITIVES.len()]
    }
    /// How the attempt ended.
    #[inline]
    pub fn outcome(&self) -> Outcome {
        OUTCOMES[((self.thread_flags >> 27) & 7) as usize % OUTCOMES.len()]
    }
    /// The acquisition did not succeed at once.
    #[inline]
    pub fn contended(&self) -> bool {
        self.thread_flags & (1 << 30) != 0
    }
    /// Still held when the thread's trace ended.
    #[inline]
    pub fn unreleased(&self) -> bool {
        self.thread_flags & (1 << 31) != 0
    }
    /// Marks the event as still held when the thread's trace ended.
    #[inline]
    pub fn set_unreleased(&mut self, unreleased: bool) {
        self.thread_flags = (self.thread_flags & !(1 << 31)) | u32::from(unreleased) << 31;
    }
    /// The attempt began, ns.
    #[inline]
    pub fn requested_ns(&self) -> u64 {
        self.requested_ns
    }
    /// Acquired (or the attempt ended, for a failed one), ns.
    #[inline]
    pub fn acquired_ns(&self) -> u64 {
        self.requested_ns + self.wait_ns()
    }
    /// Released, ns; equals [`LockEvent::acquired_ns`] for failed attempts
    /// and for primitives without a hold.
    #[inline]
    pub fn released_ns(&self) -> u64 {
        self.acquired_ns() + self.hold_ns()
    }
    /// Sets the release time, ns (kept at the acquisition when earlier).
    #[inline]
    pub fn set_released_ns(&mut self, ns: u64) {
        let acquired = self.acquired_ns();
        self.set_hold(ns.saturating_sub(acquired));
    }
    /// Wait time, ns.
    #[inline]
    pub fn wait_ns(&self) -> u64 {
        u64::from(self.wait_lo) | u64::from(self.high & 0xffff) << 32
    }
    /// Hold time, ns.
    #[inline]
    pub fn hold_ns(&self) -> u64 {
        u64::from(self.hold_lo) | u64::from(self.high >> 16) << 32
    }
    /// Event duration = wait + hold, ns.
    #[inline]
    pub fn duration_ns(&self) -> u64 {
        self.wait_ns() + self.hold_ns()
    }
    /// True for mutex, rwlock and spinlock events (the "lock events" of the summary).
    #[inline]
    pub fn is_lock(&self) -> bool {
        self.primitive().is_lock()
    }
}

/// A thread as the analysis sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadInfo {
    /// Process id.
    pub pid: u32,
    /// Kernel thread id.
    pub tid: u32,
    /// Index of the process in the recording.
    pub process: u32,
    /// First recorded operation, ns.
    pub first_ns: u64,
    /// Last recorded operation, ns.
    pub last_ns: u64,
    /// Its name as the kernel had it (comm, from the trace's chunk
    /// headers); `None` for hand-built input and traces written before the
    /// collector recorded names.
    pub name: Option<String>,
}

#[cfg(test)]
impl ThreadInfo {
    /// Thread `tid` of pid 1 (process 0), unnamed, with no recorded span:
    /// for hand-built event sets.
    pub(crate) fn of_tid(tid: u32) -> ThreadInfo {
        ThreadInfo {
            pid: 1,
            tid,
            process: 0,
            first_ns: 0,
            last_ns: 0,
            name: None,
        }
    }
}

/// A synchronisation object (address within one process).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ObjectKey {
    /// Index of the process in the recording.
    pub process: u32,
    /// Address.
    pub address: u64,
}

/// A call site (return address within one process).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SiteKey {
    /// Index of the process in the recording.
    pub process: u32,
    /// Return address.
    pub address: u64,
}

/// All events of a recording with their index tables.
#[derive(Debug, Clone, Default)]
pub struct EventSet {
    /// Events, grouped by thread, each thread's in program order.
    pub events: Vec<LockEvent>,
    /// Threads referenced by [`LockEvent::thread`].
    pub threads: Vec<ThreadInfo>,
    /// Objects referenced by [`LockEvent::object`].
    pub objects: Vec<ObjectKey>,
    /// Primitive kind seen first on each object (`object_kinds[i]` for `objects[i]`).
    pub object_kinds: Vec<Primitive>,
    /// Call sites referenced by [`LockEvent::site`].
    pub sites: Vec<SiteKey>,
    /// Releases with no open acquisition in the same thread.
    pub unmatched_releases: u64,
    /// Light recordings: uncontended acquisitions counted, not recorded
    /// (no times), per thread, object and site; empty otherwise.
    pub counted: Vec<CountedAcquisitions>,
    /// The wake cost per object that had releases with waiters (trace
    /// format version 2), in object order.
    pub wake_costs: Vec<WakeCost>,
    /// Events made from UNTIMED records (light mode): counted holds whose
    /// release woke a waiter, acquired at that release (hold unknown, 0).
    pub untimed_events: u64,
    /// Mutex re-acquisitions at the end of condition waits that took the
    /// mutex at once (IMMEDIATE right after the wait, at its call site):
    /// recorded, not counted, in light recordings too.
    pub cond_reacquisitions: u64,
    /// True when some thread's trace is a light recording (`--light`):
    /// uncontended acquisitions were counted ([`EventSet::counted`]).
    pub light: bool,
    /// For condition waits whose mutex is known: (event index, index of
    /// that mutex in [`EventSet::objects`]), by event index.
    pub cond_mutexes: Vec<(u32, u32)>,
    /// For events recorded with a call stack (`--stack-every`): (event
    /// index, index into its process trace's stacks), by event index.
    pub stacks: Vec<(u32, u32)>,
    /// Where [`pair_operations`] put each thread's events:
    /// `thread_ranges[t]` is the range of [`EventSet::events`] that holds
    /// every event of thread `t` (empty when it has none). Empty when the
    /// set was built otherwise; passes that need the threads' ranges then
    /// find them by reading the events.
    pub thread_ranges: Vec<std::ops::Range<usize>>,
    /// Per thread (as [`EventSet::thread_ranges`]): whether
    /// [`pair_operations`] wrote its events in acquisition-time order (as
    /// nearly always), noted as it wrote them. Empty when the set was built
    /// otherwise; passes that need the order then check it by reading the
    /// events.
    pub thread_in_acquisition_order: Vec<bool>,
    /// Per thread (as [`EventSet::thread_ranges`]): whether
    /// [`pair_operations`] wrote its events in request-time order (as
    /// calls that do not nest within a thread come), noted as it wrote
    /// them; empty when the set was built otherwise.
    pub thread_in_request_order: Vec<bool>,
    /// Per thread (as [`EventSet::thread_ranges`]), its events that can
    /// wake a waiter (releases of locks, posts, barrier arrivals: what the
    /// critical path looks wakers up among) per object (`[t][o]`, every
    /// list `objects.len()` long), counted by [`pair_operations`] as it
    /// wrote them, when threads × objects is small for the events (one
    /// entry per [`EVENTS_PER_WAKE_COUNT`] events at most, or 65,536).
    /// Empty otherwise; the critical path then counts them itself.
    pub thread_wake_counts: Vec<Vec<u32>>,
}

/// Events per entry of the wake counts [`pair_operations`] keeps at most
/// ([`EventSet::thread_wake_counts`], 4 bytes an entry): half a byte per
/// event.
pub const EVENTS_PER_WAKE_COUNT: usize = 8;

impl EventSet {
    /// The runs of consecutive events of one thread, in event order: (the
    /// thread's index in [`EventSet::threads`], the range of its events in
    /// [`EventSet::events`]). After [`pair_operations`] each thread is one
    /// run; a set built otherwise may give a thread several.
    pub fn runs_by_thread(&self) -> impl Iterator<Item = (u32, std::ops::Range<usize>)> + '_ {
        let mut start = 0usize;
        std::iter::from_fn(move || {
            let thread = self.events.get(start)?.thread();
            let end = start
                + self.events[start..]
                    .iter()
                    .take_while(|e| e.thread() == thread)
                    .count();
            let run = start..end;
            start = end;
            Some((thread, run))
        })
    }

    /// True when [`EventSet::thread_ranges`] says where every thread's
    /// events are, as [`pair_operations`] leaves it: one range per
    /// thread, in thread order, each starting where the one before ended,
    /// together covering the events. Passes that take each thread's events
    /// from their range check this first, and otherwise read the events.
    pub fn threads_in_ranges(&self) -> bool {
        if self.thread_ranges.len() != self.threads.len() {
            return false;
        }
        let mut at = 0;
        for r in &self.thread_ranges {
            if r.start != at || r.end < r.start {
                return false;
            }
            at = r.end;
        }
        at == self.events.len()
    }

    /// The events of each group of whole threads (`groups`: ranges of
    /// thread indices in order, as [`crate::chunked_sort::thread_groups`]
    /// makes them), as ranges of [`EventSet::events`] from the first
    /// thread's first event to the last thread's last, one after another
    /// (an empty group: an empty range where the one before ended). For a
    /// set whose threads lie in their ranges
    /// ([`EventSet::threads_in_ranges`]).
    pub(crate) fn events_of_thread_groups(
        &self,
        groups: &[std::ops::Range<usize>],
    ) -> Vec<std::ops::Range<usize>> {
        let mut end = 0;
        groups
            .iter()
            .map(|g| {
                let ranges = &self.thread_ranges[g.clone()];
                let start = ranges.first().map_or(end, |r| r.start);
                end = ranges.last().map_or(end, |r| r.end);
                start..end
            })
            .collect()
    }

    /// The mutex that condition wait `event` (an index into
    /// [`EventSet::events`]) re-acquired on return, if known.
    pub fn cond_mutex(&self, event: usize) -> Option<u32> {
        side_lookup(&self.cond_mutexes, event)
    }
    /// Index of the call stack recorded with event `event` (an index into
    /// [`EventSet::events`]) in its process trace's `stacks`, if any.
    pub fn stack_of(&self, event: usize) -> Option<u32> {
        side_lookup(&self.stacks, event)
    }
}

impl EventSet {
    /// Every event with its index and its recorded stack's index (as
    /// [`EventSet::stack_of`]), in order: one pass over the side table.
    pub fn events_with_stacks(&self) -> impl Iterator<Item = (usize, &LockEvent, Option<u32>)> {
        let mut next = self.stacks.iter().peekable();
        self.events.iter().enumerate().map(move |(i, e)| {
            while next.next_if(|&&(k, _)| (k as usize) < i).is_some() {}
            let stack = next.next_if(|&&(k, _)| k as usize == i).map(|&(_, s)| s);
            (i, e, stack)
        })
    }
}

/// The value for `event` in a side table sorted by event index.
fn side_lookup(table: &[(u32, u32)], event: usize) -> Option<u32> {
    let event = u32::try_from(event).ok()?;
    table
        .binary_search_by_key(&event, |&(i, _)| i)
        .ok()
        .map(|k| table[k].1)
}

/// Uncontended acquisitions of a light recording ([`contend_trace::Counted`])
/// with the event set's indices.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CountedAcquisitions {
    /// Index in [`EventSet::threads`].
    pub thread: u32,
    /// Index in [`EventSet::objects`]; `None` for acquisitions counted by
    /// call site without their locks ([`contend_trace::Counted::by_site`]:
    /// the thread took more (lock, call site) pairs than its count table
    /// keeps one by one).
    pub object: Option<u32>,
    /// Index in [`EventSet::sites`] (the acquiring call).
    pub site: u32,
    /// Primitive acquired.
    pub primitive: Primitive,
    /// Number of acquisitions.
    pub count: u64,
}

/// The time spent inside unlock (or `sem_post`) calls that found waiters on
/// one object: from the RELEASE record before the real call to the
/// RELEASED record after it (HaLock, Section 4.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WakeCost {
    /// Index in [`EventSet::objects`].
    pub object: u32,
    /// Releases that found waiters.
    pub releases: u64,
    /// Σ time inside those calls, ns.
    pub total_ns: u64,
    /// Longest such call, ns.
    pub max_ns: u64,
}

/// Input to pairing: one thread's operations as recorded.
pub struct ThreadInput<'a> {
    /// Process index.
    pub process: u32,
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// Operations in program order, times in trace ticks.
    pub ops: OpSource<'a>,
    /// Ticks → CLOCK_MONOTONIC ns.
    pub clock: TimeMap,
}

/// Where a thread's operations come from.
#[derive(Clone, Copy)]
pub enum OpSource<'a> {
    /// Decoded on the fly from a trace file (no copy of the operations).
    Trace(&'a LockTrace, &'a ThreadTrace),
    /// Already in memory (hand-built input).
    Slice(&'a [RawOp]),
}

impl ThreadInput<'_> {
    /// The thread's counted uncontended acquisitions (light recordings).
    pub fn counted(&self) -> &[Counted] {
        match self.ops {
            OpSource::Trace(_, t) => &t.counted,
            OpSource::Slice(_) => &[],
        }
    }
}

impl OpSource<'_> {
    /// Number of operations.
    pub fn len(&self) -> usize {
        match self {
            OpSource::Trace(_, t) => t.op_count,
            OpSource::Slice(s) => s.len(),
        }
    }

    /// True when there are no operations.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Calls `step` with each operation in program order and its object
    /// and site table slots (`NONE` for operations from memory). `step` is
    /// called by the trace reader's loop itself, where pairing's passes
    /// keep their state in registers.
    #[inline(always)]
    fn for_each_op(&self, mut step: impl FnMut(&RawOp, u32, u32)) {
        match *self {
            OpSource::Trace(trace, thread) => trace.for_each_op(thread, step),
            OpSource::Slice(ops) => ops.iter().for_each(|op| step(op, NONE, NONE)),
        }
    }
}

/// How a trace's ticks become CLOCK_MONOTONIC ns.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum TimeMap {
    /// Ticks are already ns (a CLOCK_MONOTONIC trace, or hand-built input).
    Identity,
    /// TSC ticks through a fitted line.
    Fit(ClockFit),
}

impl TimeMap {
    /// Converts ticks to ns.
    #[inline]
    pub fn ns(&self, ticks: u64) -> u64 {
        match self {
            TimeMap::Identity => ticks,
            TimeMap::Fit(f) => f.to_ns(ticks),
        }
    }
}

/// Sentinel for "no index" in `u32` index fields and slot maps.
const NONE: u32 = u32::MAX;

/// Builds the event set from every thread's operations.
///
/// Pairing rules are in the module documentation; `docs/metrics.md` states
/// them for users. Two passes over each thread's operations, both in
/// parallel over threads: the first counts the thread's events and lists
/// its objects and sites in first-seen order (so the global index tables
/// are numbered as if the threads were paired one after another); the
/// second pairs, writing events with their global indices straight into
/// the thread's slice of the one flat event vector. O(operations) work, and
/// the event memory is written once.
pub fn pair_operations(threads: &[ThreadInput<'_>]) -> EventSet {
    pair_surveyed(threads, survey_operations(threads))
}

/// The first of [`pair_operations`]' two passes on its own: every
/// thread's events counted and its objects and sites listed, in parallel
/// over threads. Little memory (the lists), so the analysis runs it
/// beside the call sites' resolution, which holds the debug information
/// on one core ([`super::LockAnalyzer`]).
pub fn survey_operations(threads: &[ThreadInput<'_>]) -> Surveys {
    Surveys(threads.par_iter().map(survey).collect())
}

/// What [`survey_operations`] found, one entry per thread input, for
/// [`pair_surveyed`].
pub struct Surveys(Vec<Survey>);

/// [`pair_operations`] after its first pass: `surveys` must come from
/// [`survey_operations`] of the same `threads` (the second pass checks
/// each thread's count as it writes: a trace that changed in between
/// gives placeholders or drops events, as a file cut short does, never a
/// panic).
pub fn pair_surveyed(threads: &[ThreadInput<'_>], surveys: Surveys) -> EventSet {
    let Surveys(mut surveys) = surveys;
    if surveys.len() != threads.len() {
        // not this input's survey: made again rather than misnumbered
        surveys = survey_operations(threads).0;
    }
    let mut set = EventSet::default();
    let mut object_index: FxHashMap<ObjectKey, u32> = FxHashMap::default();
    let mut site_index: FxHashMap<SiteKey, u32> = FxHashMap::default();
    // Table slot → global index, per process trace.
    let mut slot_maps: Vec<SlotMap<'_>> = Vec::new();
    let mut thread_map: Vec<Option<usize>> = Vec::with_capacity(threads.len());
    for (input, survey) in threads.iter().zip(&surveys) {
        let process = input.process;
        for &(address, primitive) in &survey.objects {
            let key = ObjectKey { process, address };
            object_index.entry(key).or_insert_with(|| {
                set.objects.push(key);
                set.object_kinds.push(primitive);
                (set.objects.len() - 1) as u32
            });
        }
        for &address in &survey.sites {
            let key = SiteKey { process, address };
            site_index.entry(key).or_insert_with(|| {
                set.sites.push(key);
                (set.sites.len() - 1) as u32
            });
        }
        let OpSource::Trace(trace, _) = input.ops else {
            thread_map.push(None);
            continue;
        };
        let m = match slot_maps
            .iter()
            .position(|m| m.process == process && std::ptr::eq(m.trace, trace))
        {
            Some(m) => m,
            None => {
                slot_maps.push(SlotMap {
                    process,
                    trace,
                    objects: Vec::new(),
                    sites: Vec::new(),
                });
                slot_maps.len() - 1
            }
        };
        let map = &mut slot_maps[m];
        for &slot in &survey.object_slots {
            let address = trace.object_table()[slot as usize];
            let global = object_index[&ObjectKey { process, address }];
            set_slot(&mut map.objects, slot, global);
        }
        for &slot in &survey.site_slots {
            let address = trace.site_table()[slot as usize];
            let global = site_index[&SiteKey { process, address }];
            set_slot(&mut map.sites, slot, global);
        }
        thread_map.push(Some(m));
    }
    let counts: Vec<usize> = surveys.iter().map(|s| s.events).collect();
    drop(surveys);
    let total: usize = counts.iter().sum();
    let mut events: Vec<LockEvent> = Vec::with_capacity(total);
    // every event is written: the pages faulted in at once, on both cores
    crate::analysis::populate_for_write(&mut events.spare_capacity_mut()[..total]);
    // Disjoint, uninitialised slices of the flat vector, one per thread,
    // in thread order.
    let mut slices: Vec<&mut [MaybeUninit<LockEvent>]> = Vec::with_capacity(threads.len());
    let mut rest = &mut events.spare_capacity_mut()[..total];
    for &n in &counts {
        let (head, tail) = rest.split_at_mut(n);
        slices.push(head);
        rest = tail;
    }
    // The wake events per thread and object, counted as they are written,
    // when the table is small beside the events.
    let wake_objects = if threads.len().saturating_mul(set.objects.len())
        <= (total / EVENTS_PER_WAKE_COUNT).max(1 << 16)
    {
        set.objects.len()
    } else {
        0
    };
    let mut paired: Vec<Paired> = threads
        .par_iter()
        .zip(slices)
        .enumerate()
        .map(|(k, (input, out))| {
            let maps = Maps {
                objects: &object_index,
                sites: &site_index,
                slots: thread_map[k].map(|m| &slot_maps[m]),
            };
            pair_thread(input, k as u32, &maps, out, wake_objects)
        })
        .collect();
    // SAFETY: each thread's slice was fully written: `pair_thread` writes
    // the surveyed number of events, padding with placeholders when the
    // second pass over a trace gave fewer (a file cut short between the
    // passes).
    unsafe { events.set_len(total) };
    let short = paired.iter().zip(&counts).any(|(p, &n)| p.written < n);
    // Each thread's events, once the placeholders are dropped.
    let mut at = 0usize;
    set.thread_ranges = paired
        .iter()
        .map(|p| {
            at += p.written;
            at - p.written..at
        })
        .collect();
    set.thread_in_acquisition_order = paired.iter().map(|p| p.in_acquisition_order).collect();
    set.thread_in_request_order = paired.iter().map(|p| p.in_request_order).collect();
    if wake_objects > 0 || set.objects.is_empty() {
        set.thread_wake_counts = paired
            .iter_mut()
            .map(|p| std::mem::take(&mut p.wake_counts))
            .collect();
    }
    // The side entries, by index in the flat vector (as it is once the
    // placeholders are dropped).
    for (p, range) in paired.iter().zip(&set.thread_ranges) {
        let at = range.start;
        for &(i, v) in &p.cond_mutexes {
            if let Ok(i) = u32::try_from(at + i as usize) {
                set.cond_mutexes.push((i, v));
            }
        }
        for &(i, v) in &p.stacks {
            if let Ok(i) = u32::try_from(at + i as usize) {
                set.stacks.push((i, v));
            }
        }
    }
    if short {
        // Drop the placeholders: keep each thread's first `written` events.
        let mut kept = Vec::with_capacity(total);
        let mut at = 0;
        for (p, &n) in paired.iter().zip(&counts) {
            kept.extend_from_slice(&events[at..at + p.written]);
            at += n;
        }
        events = kept;
    }
    set.events = events;
    set.light = threads
        .iter()
        .any(|t| matches!(t.ops, OpSource::Trace(trace, _) if trace.light()));
    let mut wakes: FxHashMap<u32, WakeCost> = FxHashMap::default();
    for (k, p) in paired.into_iter().enumerate() {
        set.unmatched_releases += p.unmatched;
        set.untimed_events += p.untimed;
        set.cond_reacquisitions += p.cond_reacquisitions;
        set.threads.push(p.info);
        let process = threads[k].process;
        for c in threads[k].counted() {
            set.counted.push(CountedAcquisitions {
                thread: k as u32,
                object: (!c.by_site()).then(|| {
                    object_index[&ObjectKey {
                        process,
                        address: c.object,
                    }]
                }),
                site: site_index[&SiteKey {
                    process,
                    address: c.site,
                }],
                primitive: c.primitive,
                count: c.count,
            });
        }
        for w in p.wakes {
            let e = wakes.entry(w.object).or_insert(WakeCost {
                object: w.object,
                ..WakeCost::default()
            });
            e.releases += w.releases;
            e.total_ns += w.total_ns;
            e.max_ns = e.max_ns.max(w.max_ns);
        }
    }
    set.wake_costs = wakes.into_values().collect();
    set.wake_costs.sort_by_key(|w| w.object);
    set
}

/// What pairing one thread gives besides its events.
struct Paired {
    info: ThreadInfo,
    /// Releases without an open acquisition.
    unmatched: u64,
    /// Events written into the thread's slice.
    written: usize,
    /// Wake costs per object (global index).
    wakes: Vec<WakeCost>,
    /// Events made from UNTIMED records.
    untimed: u64,
    /// Mutexes re-acquired at once at the end of a condition wait.
    cond_reacquisitions: u64,
    /// Condition waits' mutexes, by index in the thread's slice.
    cond_mutexes: Vec<(u32, u32)>,
    /// Recorded stacks, by index in the thread's slice.
    stacks: Vec<(u32, u32)>,
    /// Whether the events written are in acquisition-time order.
    in_acquisition_order: bool,
    /// Whether the events written are in request-time order.
    in_request_order: bool,
    /// Its wake events per object (empty: not counted).
    wake_counts: Vec<u32>,
}

/// Writes `value` at `slot`, growing `map` with [`NONE`] as needed.
fn set_slot(map: &mut Vec<u32>, slot: u32, value: u32) {
    let s = slot as usize;
    if map.len() <= s {
        map.resize(s + 1, NONE);
    }
    map[s] = value;
}

/// One process trace's table slots → global object and site indices.
struct SlotMap<'a> {
    process: u32,
    trace: &'a LockTrace,
    objects: Vec<u32>,
    sites: Vec<u32>,
}

/// Global index lookups for the pairing pass.
struct Maps<'a> {
    objects: &'a FxHashMap<ObjectKey, u32>,
    sites: &'a FxHashMap<SiteKey, u32>,
    /// Slot maps of the thread's trace (`None` for in-memory input).
    slots: Option<&'a SlotMap<'a>>,
}

impl Maps<'_> {
    #[inline]
    fn object(&self, process: u32, address: u64, slot: u32) -> u32 {
        if let Some(&i) = self.slots.and_then(|m| m.objects.get(slot as usize)) {
            if i != NONE {
                return i;
            }
        }
        self.objects[&ObjectKey { process, address }]
    }
    #[inline]
    fn site(&self, process: u32, address: u64, slot: u32) -> u32 {
        if let Some(&i) = self.slots.and_then(|m| m.sites.get(slot as usize)) {
            if i != NONE {
                return i;
            }
        }
        self.sites[&SiteKey { process, address }]
    }
}

/// What the first pass learns about one thread.
struct Survey {
    /// Number of events pairing will produce.
    events: usize,
    /// Objects (address, first primitive seen) in first-seen order.
    objects: Vec<(u64, Primitive)>,
    /// Sites (return addresses) in first-seen order.
    sites: Vec<u64>,
    /// Object table slots used by the thread.
    object_slots: Vec<u32>,
    /// Site table slots used by the thread.
    site_slots: Vec<u32>,
}

/// First-seen detection of addresses, fast for records that refer to a
/// table slot (a slot's address never changes).
struct Seen {
    slots: Vec<u64>,
    addresses: FxHashSet<u64>,
    last: Option<u64>,
    used_slots: Vec<u32>,
}

impl Seen {
    fn new() -> Self {
        Seen {
            slots: Vec::new(),
            addresses: FxHashSet::default(),
            last: None,
            used_slots: Vec::new(),
        }
    }

    /// True when `address` (reached through `slot`, or `NONE`) is new.
    /// A slot seen before (nearly every record) is answered inline.
    #[inline(always)]
    fn first(&mut self, address: u64, slot: u32) -> bool {
        if slot != NONE {
            let (w, b) = ((slot / 64) as usize, slot % 64);
            if self.slots.get(w).is_some_and(|&bits| bits & (1 << b) != 0) {
                return false;
            }
        }
        self.first_of_new_slot(address, slot)
    }

    /// [`Seen::first`] past its inline test.
    #[inline(never)]
    fn first_of_new_slot(&mut self, address: u64, slot: u32) -> bool {
        if slot != NONE {
            let (w, b) = ((slot / 64) as usize, slot % 64);
            if w >= self.slots.len() {
                self.slots.resize(w + 1, 0);
            }
            self.slots[w] |= 1 << b;
            self.used_slots.push(slot);
        }
        if self.last == Some(address) {
            return false;
        }
        self.last = Some(address);
        self.addresses.insert(address)
    }
}

/// The first pass over one thread: counts the events pairing will produce
/// (mirroring [`ThreadPairing::step`] and [`ThreadPairing::finish`]) and
/// lists objects and sites in first-seen order.
fn survey(input: &ThreadInput<'_>) -> Survey {
    let mut s = Surveying {
        events: 0,
        pending: None,
        objects: Vec::new(),
        sites: Vec::new(),
        seen_objects: Seen::new(),
        seen_sites: Seen::new(),
    };
    input
        .ops
        .for_each_op(|op, object_slot, site_slot| s.step(op, object_slot, site_slot));
    let Surveying {
        mut events,
        pending,
        mut objects,
        mut sites,
        mut seen_objects,
        mut seen_sites,
    } = s;
    events += usize::from(pending.is_some());
    for c in input.counted() {
        if !c.by_site() && seen_objects.first(c.object, NONE) {
            objects.push((c.object, c.primitive));
        }
        if seen_sites.first(c.site, NONE) {
            sites.push(c.site);
        }
    }
    Survey {
        events,
        objects,
        sites,
        object_slots: seen_objects.used_slots,
        site_slots: seen_sites.used_slots,
    }
}

/// The state of [`survey`]'s pass over one thread.
struct Surveying {
    /// Events counted so far.
    events: usize,
    /// Object address of the pending REQUEST.
    pending: Option<u64>,
    objects: Vec<(u64, Primitive)>,
    sites: Vec<u64>,
    seen_objects: Seen,
    seen_sites: Seen,
}

impl Surveying {
    /// One operation (its table slots, or `NONE`). Inlined into the trace
    /// reader's loop, so that the state stays in registers.
    #[inline(always)]
    fn step(&mut self, op: &RawOp, object_slot: u32, site_slot: u32) {
        if self.seen_objects.first(op.object, object_slot) {
            self.objects.push((op.object, op.primitive));
        }
        if self.seen_sites.first(op.site, site_slot) {
            self.sites.push(op.site);
        }
        match op.phase {
            Phase::Request => {
                self.events += usize::from(self.pending.replace(op.object).is_some());
            }
            Phase::Acquired | Phase::Busy | Phase::Error => {
                if self.pending == Some(op.object) {
                    self.pending = None;
                }
                self.events += 1;
            }
            Phase::Immediate | Phase::Untimed => self.events += 1,
            Phase::Release => self.events += usize::from(op.primitive.is_post()),
            Phase::Released => {}
        }
    }
}

/// Pairs one thread's operations into `out` (sized to the surveyed number
/// of events). Returns the thread's info, its unmatched releases and the
/// number of events written. The trace is read a second time here; should
/// that pass give fewer events than the survey counted (the file was cut
/// short in between), the rest of `out` is filled with placeholders for
/// the caller to drop, and events beyond `out` are dropped: damage, never
/// a panic.
fn pair_thread(
    input: &ThreadInput<'_>,
    thread: u32,
    maps: &Maps<'_>,
    out: &mut [MaybeUninit<LockEvent>],
    wake_objects: usize,
) -> Paired {
    let out = Out {
        buf: out,
        len: 0,
        cond_mutexes: Vec::new(),
        stacks: Vec::new(),
        acquisitions: TimeOrder::default(),
        requests: TimeOrder::default(),
        wake_counts: vec![0; wake_objects],
    };
    let p = ThreadPairing {
        thread,
        open: OpenHolds::default(),
        pending: None,
        released_mutex: None,
        released_stack: contend_trace::NO_STACK,
        last_cond: None,
        unmatched_releases: 0,
        last_release: None,
        wakes: Vec::new(),
        untimed: 0,
        cond_reacquisitions: 0,
    };
    let info = ThreadInfo {
        pid: input.pid,
        tid: input.tid,
        process: input.process,
        first_ns: u64::MAX,
        last_ns: 0,
        name: match input.ops {
            OpSource::Trace(_, t) => t.name.clone(),
            OpSource::Slice(_) => None,
        },
    };
    let mut pass = PairingPass {
        clock: &input.clock,
        maps,
        process: input.process,
        info,
        p,
        out,
    };
    input
        .ops
        .for_each_op(|op, object_slot, site_slot| pass.step(op, object_slot, site_slot));
    let PairingPass {
        mut info,
        mut p,
        mut out,
        ..
    } = pass;
    p.finish(&mut out, info.last_ns);
    let written = out.len.min(out.buf.len());
    for slot in &mut out.buf[written..] {
        slot.write(PLACEHOLDER);
    }
    if info.first_ns == u64::MAX {
        info.first_ns = 0;
    }
    Paired {
        info,
        unmatched: p.unmatched_releases,
        written,
        wakes: p.wakes,
        untimed: p.untimed,
        cond_reacquisitions: p.cond_reacquisitions,
        in_acquisition_order: out.acquisitions.in_order,
        in_request_order: out.requests.in_order,
        wake_counts: out.wake_counts,
        cond_mutexes: out.cond_mutexes,
        stacks: out.stacks,
    }
}

/// [`pair_thread`]'s pass over one thread: what converts and maps its
/// operations, its pairing state, its part of the events and its info.
struct PairingPass<'a, 'o> {
    clock: &'a TimeMap,
    maps: &'a Maps<'a>,
    process: u32,
    info: ThreadInfo,
    p: ThreadPairing,
    out: Out<'o>,
}

impl PairingPass<'_, '_> {
    /// One operation (its table slots, or `NONE`). Inlined into the trace
    /// reader's loop, so that the pairing state stays in registers.
    #[inline(always)]
    fn step(&mut self, op: &RawOp, object_slot: u32, site_slot: u32) {
        let t = self.clock.ns(op.ticks);
        self.info.first_ns = self.info.first_ns.min(t);
        self.info.last_ns = self.info.last_ns.max(t);
        let object = self.maps.object(self.process, op.object, object_slot);
        let site = self.maps.site(self.process, op.site, site_slot);
        self.p.step(&mut self.out, op, t, object, site);
    }
}

/// For tests: `threads`' operations as inputs, each list one thread of
/// process 0 (pid 1, thread ids from `first_tid` up), from memory.
#[cfg(test)]
pub(crate) fn inputs_from_memory(threads: &[Vec<RawOp>], first_tid: u32) -> Vec<ThreadInput<'_>> {
    threads
        .iter()
        .enumerate()
        .map(|(k, ops)| ThreadInput {
            process: 0,
            pid: 1,
            tid: first_tid + k as u32,
            ops: OpSource::Slice(ops),
            clock: TimeMap::Identity,
        })
        .collect()
}

/// For tests: [`inputs_from_memory`] paired.
#[cfg(test)]
pub(crate) fn pair_threads_from_memory(threads: &[Vec<RawOp>], first_tid: u32) -> EventSet {
    pair_operations(&inputs_from_memory(threads, first_tid))
}

/// Fills the slots of events a second pass did not produce (dropped by
/// [`pair_operations`] before anyone sees them).
const PLACEHOLDER: LockEvent = LockEvent {
    requested_ns: 0,
    wait_lo: 0,
    hold_lo: 0,
    high: 0,
    thread_flags: 3 << 27, // Outcome::Error
    object: 0,
    site: 0,
};

/// A thread's slice of the event vector, filled from the front, and the
/// side entries of its events (by index in the slice).
struct Out<'a> {
    buf: &'a mut [MaybeUninit<LockEvent>],
    len: usize,
    cond_mutexes: Vec<(u32, u32)>,
    stacks: Vec<(u32, u32)>,
    /// Whether the events written so far are in acquisition-time order.
    acquisitions: TimeOrder,
    /// Whether the events written so far are in request-time order.
    requests: TimeOrder,
    /// The wake events written, per object (empty: not counted).
    wake_counts: Vec<u32>,
}

/// Whether times seen one after another (ns) never went back.
struct TimeOrder {
    last_ns: u64,
    in_order: bool,
}

impl Default for TimeOrder {
    fn default() -> TimeOrder {
        TimeOrder {
            last_ns: 0,
            in_order: true,
        }
    }
}

impl TimeOrder {
    /// The next time, ns.
    #[inline]
    fn note(&mut self, ns: u64) {
        self.in_order &= ns >= self.last_ns;
        self.last_ns = ns;
    }
}

impl Out<'_> {
    /// Writes `e` and returns its index; `None` when the slice is full
    /// (more events than surveyed only come from a trace that changed
    /// between the passes: the extra ones are dropped).
    #[inline]
    fn push(&mut self, e: LockEvent) -> Option<usize> {
        let slot = self.buf.get_mut(self.len)?;
        // (an event's request and acquisition times are final when it is
        // written)
        self.acquisitions.note(e.acquired_ns());
        self.requests.note(e.requested_ns());
        slot.write(e);
        self.len += 1;
        Some(self.len - 1)
    }
    /// The `i`-th event written.
    #[inline]
    fn get_mut(&mut self, i: usize) -> &mut LockEvent {
        assert!(i < self.len);
        // SAFETY: events below `len` were written by `push`.
        unsafe { self.buf[i].assume_init_mut() }
    }
}

/// A thread's open holds (acquired, not yet released), innermost last per
/// object: a short stack searched from the top, or, once many holds are
/// open at once, a map per object.
enum OpenHolds {
    Stack(Vec<(u32, u32)>),
    Map(FxHashMap<u32, Vec<u32>>),
}

impl Default for OpenHolds {
    fn default() -> Self {
        OpenHolds::Stack(Vec::new())
    }
}

impl OpenHolds {
    /// Open holds beyond which the stack becomes a map.
    const STACK_MAX: usize = 32;

    #[inline]
    fn push(&mut self, object: u32, event: u32) {
        match self {
            OpenHolds::Stack(v) => {
                v.push((object, event));
                if v.len() > Self::STACK_MAX {
                    let mut m: FxHashMap<u32, Vec<u32>> = FxHashMap::default();
                    for &(o, e) in v.iter() {
                        m.entry(o).or_default().push(e);
                    }
                    *self = OpenHolds::Map(m);
                }
            }
            OpenHolds::Map(m) => m.entry(object).or_default().push(event),
        }
    }

    /// Removes and returns the innermost open hold of `object`.
    #[inline]
    fn pop(&mut self, object: u32) -> Option<u32> {
        match self {
            OpenHolds::Stack(v) => {
                let k = v.iter().rposition(|&(o, _)| o == object)?;
                // nearly always the innermost: a pop, not a shift
                if k + 1 == v.len() {
                    v.pop().map(|(_, e)| e)
                } else {
                    Some(v.remove(k).1)
                }
            }
            OpenHolds::Map(m) => m.get_mut(&object)?.pop(),
        }
    }

    /// Every hold still open.
    fn all(&self) -> Vec<u32> {
        match self {
            OpenHolds::Stack(v) => v.iter().map(|&(_, e)| e).collect(),
            OpenHolds::Map(m) => m.values().flatten().copied().collect(),
        }
    }
}

/// A blocking call that has been entered but not yet returned.
#[derive(Clone, Copy)]
struct Pending {
    object: u32,
    site: u32,
    primitive: Primitive,
    requested_ns: u64,
    stack: u32,
}

/// Pairing state of one thread.
struct ThreadPairing {
    thread: u32,
    /// Open holds (event positions in the thread's slice).
    open: OpenHolds,
    /// The pending REQUEST (calls do not nest within a thread).
    pending: Option<Pending>,
    /// Mutex released by the latest record, if it was a RELEASE: a
    /// condition wait that follows at once belongs to this mutex.
    released_mutex: Option<u32>,
    /// The stack recorded with that RELEASE (`--stack-every`): the
    /// collector records a condition wait's stack with the release of its
    /// mutex, so the wait (and the mutex taken again after it) carry it.
    released_stack: u32,
    /// Site and stack of the condition wait that ended with the latest
    /// record: the mutex re-acquisition that follows at once has them.
    last_cond: Option<(u32, u32)>,
    /// Releases with no open acquisition.
    unmatched_releases: u64,
    /// Object and time of the latest record when it was a RELEASE (its
    /// RELEASED, if any, comes next).
    last_release: Option<(u32, u64)>,
    /// Wake costs of the thread per object, few: searched linearly.
    wakes: Vec<WakeCost>,
    /// Events made from UNTIMED records.
    untimed: u64,
    /// Mutexes re-acquired at once at the end of a condition wait.
    cond_reacquisitions: u64,
}

impl ThreadPairing {
    /// Adds one wake (a RELEASED `ns` after its RELEASE) on `object`.
    fn wake(&mut self, object: u32, ns: u64) {
        let w = match self.wakes.iter_mut().find(|w| w.object == object) {
            Some(w) => w,
            None => {
                self.wakes.push(WakeCost {
                    object,
                    ..WakeCost::default()
                });
                self.wakes.last_mut().expect("just pushed")
            }
        };
        w.releases += 1;
        w.total_ns += ns;
        w.max_ns = w.max_ns.max(ns);
    }

    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn push(
        &mut self,
        out: &mut Out<'_>,
        pending: Pending,
        end_ns: u64,
        outcome: Outcome,
        contended: bool,
        cond_mutex: u32,
    ) {
        let written = out.push(
            LockEventFields {
                thread: self.thread,
                object: pending.object,
                site: pending.site,
                primitive: pending.primitive,
                outcome,
                requested_ns: pending.requested_ns.min(end_ns),
                acquired_ns: end_ns,
                released_ns: end_ns,
                contended,
                unreleased: false,
            }
            .pack(),
        );
        if let Some(i) = written {
            if super::critical_path::can_wake(pending.primitive, outcome) {
                if let Some(c) = out.wake_counts.get_mut(pending.object as usize) {
                    *c += 1;
                }
            }
            if cond_mutex != NONE {
                out.cond_mutexes.push((i as u32, cond_mutex));
            }
            if pending.stack != contend_trace::NO_STACK {
                out.stacks.push((i as u32, pending.stack));
            }
        }
        if let Some(i) =
            written.filter(|_| outcome == Outcome::Acquired && pending.primitive.is_lock())
        {
            self.open.push(pending.object, i as u32);
        }
    }

    #[inline(always)]
    fn step(&mut self, set: &mut Out<'_>, op: &RawOp, t: u64, object: u32, site: u32) {
        let mut here = Pending {
            object,
            site,
            primitive: op.primitive,
            requested_ns: t,
            stack: op.stack,
        };
        let released_mutex = self.released_mutex.take();
        let last_cond = self.last_cond.take();
        let last_release = self.last_release.take();
        match op.phase {
            Phase::Request => {
                if op.primitive == Primitive::Cond
                    && here.stack == contend_trace::NO_STACK
                    && released_mutex.is_some()
                {
                    here.stack = self.released_stack;
                }
                if let Some(lost) = self.pending.replace(here) {
                    // The previous call never reported its return: keep it
                    // as an error attempt ending where the next call began.
                    self.push(set, lost, t, Outcome::Error, true, u32::MAX);
                }
                if op.primitive == Primitive::Cond {
                    self.released_mutex = released_mutex;
                }
            }
            Phase::Acquired | Phase::Busy | Phase::Error => {
                let cond_mutex = if op.primitive == Primitive::Cond {
                    // set when the REQUEST was recorded right after a RELEASE
                    self.released_mutex
                        .take()
                        .or(released_mutex)
                        .unwrap_or(u32::MAX)
                } else {
                    u32::MAX
                };
                match self.pending.take() {
                    Some(req) if req.object == object => {
                        let outcome = match op.phase {
                            Phase::Acquired => Outcome::Acquired,
                            Phase::Busy => Outcome::TimedOut,
                            _ => Outcome::Error,
                        };
                        self.push(set, req, t, outcome, true, cond_mutex);
                        if op.primitive == Primitive::Cond {
                            self.last_cond = Some((req.site, req.stack));
                        }
                    }
                    other => {
                        // No matching request: a try that failed at once
                        // (or a completion whose request was lost).
                        self.pending = other;
                        let outcome = match op.phase {
                            Phase::Acquired => Outcome::Acquired,
                            Phase::Busy => Outcome::Busy,
                            _ => Outcome::Error,
                        };
                        self.push(
                            set,
                            here,
                            t,
                            outcome,
                            outcome != Outcome::Acquired,
                            cond_mutex,
                        );
                    }
                }
            }
            Phase::Immediate => {
                // the mutex taken back at once at the end of a condition
                // wait (recorded at the wait's call site)
                if let Some((_, stack)) = last_cond.filter(|&(cond_site, _)| cond_site == site) {
                    self.cond_reacquisitions += 1;
                    if here.stack == contend_trace::NO_STACK {
                        here.stack = stack;
                    }
                }
                self.push(set, here, t, Outcome::Acquired, false, u32::MAX);
            }
            Phase::Untimed => {
                self.untimed += 1;
                self.push(set, here, t, Outcome::Acquired, false, u32::MAX);
            }
            Phase::Released => {
                if let Some((o, t0)) = last_release.filter(|&(o, _)| o == object) {
                    self.wake(o, t.saturating_sub(t0));
                }
            }
            Phase::Release => {
                self.last_release = Some((object, t));
                if op.primitive.is_post() {
                    // sem_post, a thread's end: a semaphore is not owned;
                    // the post is kept so the critical path can find who
                    // woke a waiter (a joining thread: the joined one).
                    self.push(set, here, t, Outcome::Post, false, u32::MAX);
                    return;
                }
                match self.open.pop(object) {
                    Some(idx) => set.get_mut(idx as usize).set_released_ns(t),
                    None => self.unmatched_releases += 1,
                }
                if op.primitive == Primitive::Mutex {
                    self.released_mutex = Some(object);
                    self.released_stack = op.stack;
                }
            }
        }
    }

    /// Closes what is still open when the thread's trace ends at `last_ns`.
    fn finish(&mut self, set: &mut Out<'_>, last_ns: u64) {
        for idx in self.open.all() {
            let e = set.get_mut(idx as usize);
            e.set_released_ns(last_ns);
            e.set_unreleased(true);
        }
        // A request that never returned: the thread was still waiting when
        // its trace ended (killed or deadlocked while blocked).
        if let Some(req) = self.pending.take() {
            self.push(
                set,
                req,
                last_ns.max(req.requested_ns),
                Outcome::Error,
                true,
                u32::MAX,
            );
            if let Some(last) = set.len.checked_sub(1) {
                set.get_mut(last).set_unreleased(true);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The runs of one thread's consecutive events, in event order; a
    /// thread whose events come apart gives a run for each part.
    #[test]
    fn runs_by_thread_follow_the_events() {
        let on = |thread: u32| {
            LockEventFields {
                thread,
                ..PLACEHOLDER.fields()
            }
            .pack()
        };
        let set = EventSet {
            events: [0, 0, 1, 1, 1, 0, 2].into_iter().map(on).collect(),
            ..EventSet::default()
        };
        let runs: Vec<_> = set.runs_by_thread().collect();
        assert_eq!(runs, vec![(0, 0..2), (1, 2..5), (0, 5..6), (2, 6..7)]);
        assert_eq!(EventSet::default().runs_by_thread().count(), 0);
    }

    /// Ranges say where the threads' events are only when there is one per
    /// thread, each where the one before ended, covering every event.
    #[test]
    fn threads_in_ranges_needs_one_covering_range_per_thread() {
        let set = |ranges: Vec<std::ops::Range<usize>>, threads: usize, events: usize| EventSet {
            events: vec![PLACEHOLDER; events],
            threads: (0..threads).map(|_| ThreadInfo::of_tid(1)).collect(),
            thread_ranges: ranges,
            ..EventSet::default()
        };
        assert!(set(vec![0..2, 2..2, 2..5], 3, 5).threads_in_ranges());
        assert!(set(vec![], 0, 0).threads_in_ranges());
        // none given, one missing, a gap, an overlap, short of the end
        assert!(!set(vec![], 2, 5).threads_in_ranges());
        assert!(!set(std::iter::once(0..5).collect(), 2, 5).threads_in_ranges());
        assert!(!set(vec![0..2, 3..5], 2, 5).threads_in_ranges());
        assert!(!set(vec![0..3, 2..5], 2, 5).threads_in_ranges());
        assert!(!set(vec![0..2, 2..4], 2, 5).threads_in_ranges());
    }

    /// The packed event is 32 bytes and gives back what it was built from;
    /// durations past 48 bits and thread indices past 24 bits are kept at
    /// their limits.
    #[test]
    fn a_packed_event_is_32_bytes_and_unpacks_to_its_fields() {
        assert_eq!(std::mem::size_of::<LockEvent>(), 32);
        for &primitive in &PRIMITIVES {
            for &outcome in &OUTCOMES {
                for (contended, unreleased) in
                    [(false, false), (true, false), (false, true), (true, true)]
                {
                    let f = LockEventFields {
                        thread: MAX_EVENT_THREAD,
                        object: u32::MAX,
                        site: 7,
                        primitive,
                        outcome,
                        requested_ns: u64::MAX - (3 << 48),
                        acquired_ns: u64::MAX - (3 << 48) + (1 << 40) + 5,
                        released_ns: u64::MAX - (3 << 48) + (1 << 40) + 5 + (1 << 47) + 9,
                        contended,
                        unreleased,
                    };
                    assert_eq!(f.pack().fields(), f);
                }
            }
        }
        let long = LockEventFields {
            thread: u32::MAX,
            object: 1,
            site: 2,
            primitive: Primitive::Cond,
            outcome: Outcome::Acquired,
            requested_ns: 10,
            acquired_ns: 10 + (1 << 50),
            released_ns: 10 + (1 << 50) + (1 << 49),
            contended: true,
            unreleased: false,
        }
        .pack();
        assert_eq!(long.thread(), MAX_EVENT_THREAD);
        assert_eq!(long.wait_ns(), MAX_EVENT_DURATION_NS);
        assert_eq!(long.hold_ns(), MAX_EVENT_DURATION_NS);
        let mut e = long;
        e.set_released_ns(5); // before the acquisition: no hold
        assert_eq!(e.released_ns(), e.acquired_ns());
        e.set_unreleased(true);
        assert!(e.unreleased() && e.contended());
        assert_eq!(e.primitive(), Primitive::Cond);
    }

    fn op(ticks: u64, phase: Phase) -> RawOp {
        RawOp {
            ticks,
            object: 0x1000,
            site: 0x2000,
            primitive: Primitive::Mutex,
            phase,
            stack: contend_trace::NO_STACK,
        }
    }

    /// Objects and sites get their global indices thread after thread, each
    /// thread's in the order it first used them, objects only counted
    /// last; the events, condition waits' mutexes and wake costs carry
    /// the global indices. Thread 0 (process 0) uses objects B then A,
    /// thread 1 (process 0) C then A, thread 2 (process 1) A: the objects
    /// are B, A, C of process 0 and A of process 1.
    #[test]
    fn objects_and_sites_are_numbered_thread_after_thread() {
        use contend_trace::Phase::{Acquired, Release, Released, Request};
        let (a, b, c) = (0x1000, 0x2000, 0x3000);
        let on = |object: u64, site: u64, ticks: u64, phase: Phase| RawOp {
            object,
            site,
            ..op(ticks, phase)
        };
        let cond = |ticks: u64, phase: Phase| RawOp {
            primitive: Primitive::Cond,
            ..on(c, 0x30, ticks, phase)
        };
        let t0 = [
            on(b, 0x20, 1, Request),
            on(b, 0x20, 2, Acquired),
            on(b, 0x20, 3, Release),
            on(b, 0x20, 4, Released),
            on(a, 0x10, 5, Request),
            on(a, 0x10, 6, Acquired),
            on(a, 0x10, 7, Release),
        ];
        // A condition wait on C with mutex A.
        let t1 = [
            on(a, 0x10, 1, Request),
            on(a, 0x10, 2, Acquired),
            on(a, 0x10, 3, Release),
            cond(3, Request),
            cond(9, Acquired),
        ];
        let t2 = [
            on(a, 0x10, 1, Request),
            on(a, 0x10, 2, Acquired),
            on(a, 0x10, 3, Release),
            on(a, 0x10, 5, Released),
        ];
        let input = |process: u32, ops: &'static [RawOp]| ThreadInput {
            process,
            pid: 1 + process,
            tid: 1,
            ops: OpSource::Slice(ops),
            clock: TimeMap::Identity,
        };
        let (t0, t1, t2): (&'static [RawOp], &'static [RawOp], &'static [RawOp]) = (
            Box::leak(Box::new(t0)),
            Box::leak(Box::new(t1)),
            Box::leak(Box::new(t2)),
        );
        let set = pair_operations(&[input(0, t0), input(0, t1), input(1, t2)]);
        let key = |process, address| ObjectKey { process, address };
        assert_eq!(
            set.objects,
            vec![key(0, b), key(0, a), key(0, c), key(1, a)]
        );
        assert_eq!(
            set.object_kinds,
            vec![
                Primitive::Mutex,
                Primitive::Mutex,
                Primitive::Cond,
                Primitive::Mutex
            ]
        );
        let site = |process, address| SiteKey { process, address };
        assert_eq!(
            set.sites,
            vec![site(0, 0x20), site(0, 0x10), site(0, 0x30), site(1, 0x10)]
        );
        let got: Vec<(u32, u32, u32)> = set
            .events
            .iter()
            .map(|e| (e.thread(), e.object, e.site))
            .collect();
        assert_eq!(
            got,
            vec![(0, 0, 0), (0, 1, 1), (1, 1, 1), (1, 2, 2), (2, 3, 3)]
        );
        assert_eq!(set.thread_ranges, vec![0..2, 2..4, 4..5]);
        // The condition wait (event 3) names its mutex A of process 0.
        assert_eq!(set.cond_mutexes, vec![(3, 1)]);
        // One wake each on B (1 ns after its release) and on A of process
        // 1 (2 ns), each its thread's first object.
        let wakes: Vec<(u32, u64, u64)> = set
            .wake_costs
            .iter()
            .map(|w| (w.object, w.releases, w.total_ns))
            .collect();
        assert_eq!(wakes, vec![(0, 1, 1), (3, 1, 2)]);
    }

    /// Groups of whole threads as ranges of events: from the group's
    /// first thread's start to its last thread's end, a thread without
    /// events and an empty group included.
    #[test]
    fn events_of_thread_groups_follow_the_threads_ranges() {
        let set = EventSet {
            thread_ranges: vec![0..3, 3..3, 3..7],
            ..EventSet::default()
        };
        assert_eq!(
            set.events_of_thread_groups(&[0..1, 1..3, 3..3]),
            vec![0..3, 3..7, 7..7]
        );
        assert_eq!(
            set.events_of_thread_groups(std::slice::from_ref(&(0..3))),
            vec![0..7]
        );
    }

    /// The first pass run on its own (as the analysis runs it beside the
    /// call sites' resolution) and the second after it give the set
    /// pairing gives; a survey of other inputs (another number of
    /// threads) is made again, not used for the wrong threads.
    #[test]
    fn pairing_after_a_separate_survey_is_pairing() {
        use contend_trace::Phase::{Acquired, Immediate, Release, Request};
        let on = |object: u64, site: u64, ticks: u64, phase: Phase| RawOp {
            object,
            site,
            ..op(ticks, phase)
        };
        let threads = [
            vec![on(0xa, 0x10, 1, Immediate), on(0xa, 0x10, 2, Release)],
            vec![
                on(0xb, 0x20, 1, Request),
                on(0xb, 0x20, 3, Acquired),
                on(0xb, 0x20, 4, Release),
                on(0xa, 0x10, 5, Immediate),
                on(0xa, 0x10, 7, Release),
            ],
            vec![on(0xb, 0x30, 2, Immediate), on(0xb, 0x30, 3, Release)],
        ];
        let inputs = inputs_from_memory(&threads, 10);
        let shape = |s: &EventSet| {
            let events: Vec<_> = s
                .events
                .iter()
                .map(|e| {
                    (
                        e.thread(),
                        e.object,
                        e.site,
                        e.requested_ns(),
                        e.wait_ns(),
                        e.hold_ns(),
                    )
                })
                .collect();
            (
                s.objects.clone(),
                s.sites.clone(),
                events,
                s.thread_ranges.clone(),
            )
        };
        let whole = shape(&pair_operations(&inputs));
        assert_eq!(whole.2.len(), 4, "{whole:?}");
        assert_eq!(
            shape(&pair_surveyed(&inputs, survey_operations(&inputs))),
            whole
        );
        let other = survey_operations(&inputs[..2]);
        assert_eq!(shape(&pair_surveyed(&inputs, other)), whole);
    }

    /// A second pass over a trace that gives fewer events than the survey
    /// (a file cut short between the passes) or more (a file that grew)
    /// is damage, not a panic: the missing slots are placeholders the
    /// caller drops, the extra events are dropped.
    #[test]
    fn pairing_survives_a_trace_that_changed_between_passes() {
        use contend_trace::Phase::{Acquired, Release, Request};
        let ops = [
            op(10, Request),
            op(20, Acquired),
            op(30, Release),
            op(40, Request),
            op(50, Acquired),
            op(60, Release),
        ];
        let input = ThreadInput {
            process: 0,
            pid: 1,
            tid: 1,
            ops: OpSource::Slice(&ops),
            clock: TimeMap::Identity,
        };
        let objects: FxHashMap<ObjectKey, u32> = [(
            ObjectKey {
                process: 0,
                address: 0x1000,
            },
            0,
        )]
        .into_iter()
        .collect();
        let sites: FxHashMap<SiteKey, u32> = [(
            SiteKey {
                process: 0,
                address: 0x2000,
            },
            0,
        )]
        .into_iter()
        .collect();
        let maps = Maps {
            objects: &objects,
            sites: &sites,
            slots: None,
        };
        for room in [0usize, 1, 2, 3, 5] {
            let mut buf = vec![MaybeUninit::<LockEvent>::uninit(); room];
            let written = pair_thread(&input, 0, &maps, &mut buf, 0).written;
            assert_eq!(written, room.min(2), "room for {room}");
        }
        // The whole pipeline on the true count.
        let set = pair_operations(&[input]);
        assert_eq!(set.events.len(), 2);
        assert_eq!(set.events[1].released_ns(), 60);
    }

    /// The collector records a condition wait's stack (`--stack-every`)
    /// with the RELEASE of its mutex; the wait and the mutex taken again
    /// after it get that stack, so stacks can move them out of a header.
    /// Ops: lock m (stack 0), release m (stack 1) + request c, acquired c +
    /// immediate m, release m; the events: m (stack 0), c (stack 1), m
    /// again (stack 1).
    #[test]
    fn a_condition_wait_carries_the_stack_of_its_release() {
        use contend_trace::Phase::{Acquired, Immediate, Release, Request};
        let m = |ticks, phase, stack| RawOp {
            stack,
            ..op(ticks, phase)
        };
        let c = |ticks, phase| RawOp {
            object: 0x3000,
            primitive: Primitive::Cond,
            ..op(ticks, phase)
        };
        let none = contend_trace::NO_STACK;
        let ops = [
            m(10, Request, 0),
            m(11, Acquired, none),
            m(20, Release, 1),
            c(20, Request),
            c(50, Acquired),
            m(50, Immediate, none),
            m(60, Release, none),
        ];
        let input = ThreadInput {
            process: 0,
            pid: 1,
            tid: 1,
            ops: OpSource::Slice(&ops),
            clock: TimeMap::Identity,
        };
        let set = pair_operations(&[input]);
        let got: Vec<(Primitive, Option<u32>)> = set
            .events
            .iter()
            .enumerate()
            .map(|(i, e)| (e.primitive(), set.stack_of(i)))
            .collect();
        assert_eq!(
            got,
            vec![
                (Primitive::Mutex, Some(0)),
                (Primitive::Cond, Some(1)),
                (Primitive::Mutex, Some(1)),
            ]
        );
    }

    /// Pairing a trace's threads (decoded from the file, chunk by chunk,
    /// with table slots) gives what pairing the same operations from
    /// memory gives, survey and events: random operation sequences on 1 to
    /// 3 objects and on 2,000, written in chunks of 4 KiB (about 250
    /// operations) and 64 KiB, so that requests stay pending across
    /// chunks; semaphores among them (their releases are events).
    #[test]
    fn pairing_a_trace_equals_pairing_its_operations_from_memory() {
        use contend_trace::{TraceBuilder, NO_STACK};
        let phases = [
            Phase::Request,
            Phase::Request,
            Phase::Acquired,
            Phase::Acquired,
            Phase::Immediate,
            Phase::Release,
            Phase::Release,
            Phase::Released,
            Phase::Busy,
            Phase::Error,
            Phase::Untimed,
        ];
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        for round in 0..40 {
            let threads: Vec<(u32, Vec<RawOp>)> = (0..1 + next(3) as u32)
                .map(|k| {
                    let many = next(3) == 0;
                    let objects = if many { 2000 } else { 1 + next(3) };
                    let mut ticks = 1_000u64;
                    let ops = (0..if many { 2000 + next(4000) } else { next(1500) })
                        .map(|_| {
                            ticks += 1 + next(50);
                            let object = 0x1000 + 0x40 * next(objects);
                            RawOp {
                                ticks,
                                object,
                                site: 0x40_0000 + 0x10 * next(4),
                                primitive: if object % 0x200 == 0x1040 {
                                    Primitive::Semaphore
                                } else {
                                    Primitive::Mutex
                                },
                                phase: phases[next(phases.len() as u64) as usize],
                                stack: NO_STACK,
                            }
                        })
                        .collect();
                    (100 + k, ops)
                })
                .collect();
            let bytes = TraceBuilder {
                threads: threads.clone(),
                chunk_size: if round % 2 == 0 { 4096 } else { 65536 },
                ..TraceBuilder::default()
            }
            .to_bytes();
            let trace = LockTrace::decode(std::path::Path::new("random.ctrace"), &bytes)
                .expect("a built trace reads");
            fn input(tid: u32, ops: OpSource<'_>) -> ThreadInput<'_> {
                ThreadInput {
                    process: 0,
                    pid: 1000,
                    tid,
                    ops,
                    clock: TimeMap::Identity,
                }
            }
            let from_trace: Vec<ThreadInput<'_>> = trace
                .threads
                .iter()
                .map(|t| input(t.tid, OpSource::Trace(&trace, t)))
                .collect();
            // the same threads in the trace's order
            let from_memory: Vec<ThreadInput<'_>> = trace
                .threads
                .iter()
                .map(|t| {
                    let (_, ops) = threads
                        .iter()
                        .find(|(tid, _)| *tid == t.tid)
                        .expect("its ops");
                    input(t.tid, OpSource::Slice(ops))
                })
                .collect();
            assert_eq!(
                from_memory.len(),
                threads.iter().filter(|(_, ops)| !ops.is_empty()).count()
            );
            // the surveys themselves (pairing drops what a survey counted
            // too many, so equal events alone would not show an excess)
            for (t, m) in from_trace.iter().zip(&from_memory) {
                let (st, sm) = (survey(t), survey(m));
                assert_eq!(st.events, sm.events, "round {round}, thread {}", t.tid);
                assert_eq!(st.objects, sm.objects, "round {round}, thread {}", t.tid);
                assert_eq!(st.sites, sm.sites, "round {round}, thread {}", t.tid);
            }
            let (a, b) = (pair_operations(&from_trace), pair_operations(&from_memory));
            assert!(a.events == b.events, "round {round}: events differ");
            assert_eq!(a.objects, b.objects, "round {round}");
            assert_eq!(a.object_kinds, b.object_kinds, "round {round}");
            assert_eq!(a.sites, b.sites, "round {round}");
            assert_eq!(a.thread_ranges, b.thread_ranges, "round {round}");
            assert_eq!(a.unmatched_releases, b.unmatched_releases, "round {round}");
        }
    }

    /// Pairing notes, per thread, whether it wrote the thread's events in
    /// acquisition-time order, and counts its wake events per object: the
    /// same answers as reading the events back, for threads whose clock
    /// sometimes steps back (lost requests, failed tries, condition waits,
    /// semaphores, barriers and unmatched releases among the operations).
    #[test]
    fn pairing_notes_which_threads_it_wrote_in_acquisition_order() {
        let phases = [
            Phase::Request,
            Phase::Acquired,
            Phase::Acquired,
            Phase::Release,
            Phase::Released,
            Phase::Busy,
            Phase::Immediate,
        ];
        let mut rng = crate::TestRng(0x51_7cc1_b727_220a);
        let (mut ordered, mut unordered, mut all_wakes, mut requests_unordered) = (0, 0, 0, 0);
        for round in 0..200 {
            let back_every = 1 + rng.below(400);
            let threads: Vec<Vec<RawOp>> = (0..1 + rng.below(4))
                .map(|_| {
                    let mut ticks = 10_000u64;
                    (0..rng.below(300))
                        .map(|_| {
                            // now and then the clock steps back
                            if rng.below(back_every) == 0 {
                                ticks = ticks.saturating_sub(rng.below(200));
                            } else {
                                ticks += rng.below(30);
                            }
                            RawOp {
                                ticks,
                                object: 0x1000 + 0x40 * rng.below(3),
                                site: 0x40_0000,
                                primitive: match rng.below(16) {
                                    0 | 1 => Primitive::Cond,
                                    2 => Primitive::Semaphore,
                                    3 => Primitive::Barrier,
                                    _ => Primitive::Mutex,
                                },
                                phase: phases[rng.below(phases.len() as u64) as usize],
                                stack: contend_trace::NO_STACK,
                            }
                        })
                        .collect()
                })
                .collect();
            let set = pair_threads_from_memory(&threads, 1);
            assert!(set.threads_in_ranges(), "round {round}");
            assert_eq!(set.thread_in_acquisition_order.len(), set.threads.len());
            assert_eq!(set.thread_wake_counts.len(), set.threads.len());
            for (t, r) in set.thread_ranges.iter().enumerate() {
                let mut counted = vec![0u32; set.objects.len()];
                for e in &set.events[r.clone()] {
                    if super::super::critical_path::can_wake(e.primitive(), e.outcome()) {
                        counted[e.object as usize] += 1;
                    }
                }
                assert_eq!(
                    set.thread_wake_counts[t], counted,
                    "round {round}, thread {t}"
                );
                all_wakes += counted.iter().sum::<u32>();
                assert_eq!(
                    set.thread_in_request_order[t],
                    set.events[r.clone()].is_sorted_by_key(|e| e.requested_ns()),
                    "round {round}, thread {t}"
                );
                requests_unordered += usize::from(!set.thread_in_request_order[t]);
                let read = set.events[r.clone()].is_sorted_by_key(|e| e.acquired_ns());
                assert_eq!(
                    set.thread_in_acquisition_order[t], read,
                    "round {round}, thread {t}"
                );
                if r.len() > 1 {
                    if read {
                        ordered += 1;
                    } else {
                        unordered += 1;
                    }
                }
            }
        }
        // both answers were met, and wake events counted
        assert!(ordered > 20 && unordered > 20, "{ordered} {unordered}");
        assert!(all_wakes > 1000, "{all_wakes}");
        assert!(requests_unordered > 20, "{requests_unordered}");
    }
}
