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

use contend_trace::{ClockFit, LockTrace, Phase, Primitive, RawOp, ThreadTrace};
use rayon::prelude::*;
use rustc_hash::FxHashMap;

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

/// One lock event. Times are CLOCK_MONOTONIC ns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LockEvent {
    /// Index of the thread in [`EventSet::threads`].
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
    /// Acquired (or the attempt ended, for a failed one), ns.
    pub acquired_ns: u64,
    /// Released, ns; equals `acquired_ns` for failed attempts and for
    /// primitives without a hold (condition, barrier, semaphore waits).
    pub released_ns: u64,
    /// The acquisition did not succeed at once.
    pub contended: bool,
    /// Still held when the thread's trace ended.
    pub unreleased: bool,
    /// For a condition wait: index of the mutex re-acquired on return
    /// (`u32::MAX` if unknown).
    pub cond_mutex: u32,
    /// Index into the process trace's stacks, or [`contend_trace::NO_STACK`].
    pub stack: u32,
}

impl LockEvent {
    /// Wait time, ns.
    #[inline]
    pub fn wait_ns(&self) -> u64 {
        self.acquired_ns - self.requested_ns
    }
    /// Hold time, ns.
    #[inline]
    pub fn hold_ns(&self) -> u64 {
        self.released_ns - self.acquired_ns
    }
    /// Event duration = wait + hold, ns.
    #[inline]
    pub fn duration_ns(&self) -> u64 {
        self.released_ns - self.requested_ns
    }
    /// True for mutex, rwlock and spinlock events (the "lock events" of the summary).
    #[inline]
    pub fn is_lock(&self) -> bool {
        self.primitive.is_lock()
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

/// One thread paired on its own, with thread-local object and site indices.
struct LocalPairing {
    events: Vec<LockEvent>,
    info: ThreadInfo,
    /// Local object index → (address, first primitive seen).
    objects: Vec<(u64, Primitive)>,
    /// Local site index → return address.
    sites: Vec<u64>,
    unmatched_releases: u64,
}

/// Builds the event set from every thread's operations.
///
/// Pairing rules are in the module documentation; `docs/metrics.md` states
/// them for users. Threads are paired in parallel with thread-local index
/// tables, then merged: O(operations) work.
pub fn pair_operations(threads: &[ThreadInput<'_>]) -> EventSet {
    let locals: Vec<LocalPairing> = threads.par_iter().map(pair_thread).collect();
    let total: usize = locals.iter().map(|l| l.events.len()).sum();
    let mut set = EventSet {
        events: Vec::with_capacity(total),
        ..EventSet::default()
    };
    let mut object_index: FxHashMap<ObjectKey, u32> = FxHashMap::default();
    let mut site_index: FxHashMap<SiteKey, u32> = FxHashMap::default();
    for (thread, local) in locals.into_iter().enumerate() {
        let process = local.info.process;
        let objects: Vec<u32> = local
            .objects
            .iter()
            .map(|&(address, primitive)| {
                let key = ObjectKey { process, address };
                *object_index.entry(key).or_insert_with(|| {
                    set.objects.push(key);
                    set.object_kinds.push(primitive);
                    (set.objects.len() - 1) as u32
                })
            })
            .collect();
        let sites: Vec<u32> = local
            .sites
            .iter()
            .map(|&address| {
                let key = SiteKey { process, address };
                *site_index.entry(key).or_insert_with(|| {
                    set.sites.push(key);
                    (set.sites.len() - 1) as u32
                })
            })
            .collect();
        set.events.extend(local.events.into_iter().map(|mut e| {
            e.thread = thread as u32;
            e.object = objects[e.object as usize];
            e.site = sites[e.site as usize];
            if e.cond_mutex != u32::MAX {
                e.cond_mutex = objects[e.cond_mutex as usize];
            }
            e
        }));
        set.unmatched_releases += local.unmatched_releases;
        set.threads.push(local.info);
    }
    set
}

/// Address → dense local index, with a one-entry cache in front (a lock
/// and its unlock usually follow each other).
struct Interner<T> {
    index: FxHashMap<u64, u32>,
    items: Vec<T>,
    last: Option<(u64, u32)>,
}

impl<T> Interner<T> {
    fn new() -> Self {
        Interner {
            index: FxHashMap::default(),
            items: Vec::new(),
            last: None,
        }
    }
    #[inline]
    fn get(&mut self, address: u64, item: impl FnOnce() -> T) -> u32 {
        if let Some((a, i)) = self.last {
            if a == address {
                return i;
            }
        }
        let items = &mut self.items;
        let i = *self.index.entry(address).or_insert_with(|| {
            items.push(item());
            (items.len() - 1) as u32
        });
        self.last = Some((address, i));
        i
    }
}

fn pair_thread(input: &ThreadInput<'_>) -> LocalPairing {
    let mut set = EventSet {
        events: Vec::with_capacity(input.ops.len() / 2 + 1),
        ..EventSet::default()
    };
    let mut p = ThreadPairing {
        thread: 0,
        open: Vec::new(),
        pending: None,
        released_mutex: None,
    };
    let mut info = ThreadInfo {
        pid: input.pid,
        tid: input.tid,
        process: input.process,
        first_ns: u64::MAX,
        last_ns: 0,
    };
    let mut objects: Interner<(u64, Primitive)> = Interner::new();
    let mut sites: Interner<u64> = Interner::new();
    let mut step = |op: &RawOp| {
        let t = input.clock.ns(op.ticks);
        info.first_ns = info.first_ns.min(t);
        info.last_ns = info.last_ns.max(t);
        let object = objects.get(op.object, || (op.object, op.primitive));
        let site = sites.get(op.site, || op.site);
        p.step(&mut set, op, t, object, site);
    };
    match input.ops {
        OpSource::Trace(trace, thread) => trace.ops(thread).for_each(|op| step(&op)),
        OpSource::Slice(ops) => ops.iter().for_each(step),
    }
    p.finish(&mut set, info.last_ns);
    if info.first_ns == u64::MAX {
        info.first_ns = 0;
    }
    LocalPairing {
        events: set.events,
        info,
        objects: objects.items,
        sites: sites.items,
        unmatched_releases: set.unmatched_releases,
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
    /// Open holds per (thread-local, dense) object index, innermost last.
    open: Vec<Vec<usize>>,
    /// The pending REQUEST (calls do not nest within a thread).
    pending: Option<Pending>,
    /// Mutex released by the latest record, if it was a RELEASE: a
    /// condition wait that follows at once belongs to this mutex.
    released_mutex: Option<u32>,
}

impl ThreadPairing {
    #[allow(clippy::too_many_arguments)]
    fn push(
        &mut self,
        set: &mut EventSet,
        pending: Pending,
        end_ns: u64,
        outcome: Outcome,
        contended: bool,
        cond_mutex: u32,
    ) {
        set.events.push(LockEvent {
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
            cond_mutex,
            stack: pending.stack,
        });
        if outcome == Outcome::Acquired && pending.primitive.is_lock() {
            let o = pending.object as usize;
            if self.open.len() <= o {
                self.open.resize_with(o + 1, Vec::new);
            }
            self.open[o].push(set.events.len() - 1);
        }
    }

    fn step(&mut self, set: &mut EventSet, op: &RawOp, t: u64, object: u32, site: u32) {
        let here = Pending {
            object,
            site,
            primitive: op.primitive,
            requested_ns: t,
            stack: op.stack,
        };
        let released_mutex = self.released_mutex.take();
        match op.phase {
            Phase::Request => {
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
                self.push(set, here, t, Outcome::Acquired, false, u32::MAX);
            }
            Phase::Release => {
                if op.primitive == Primitive::Semaphore {
                    // sem_post: a semaphore is not owned; the post is kept
                    // so the critical path can find who woke a waiter.
                    self.push(set, here, t, Outcome::Post, false, u32::MAX);
                    return;
                }
                match self.open.get_mut(object as usize).and_then(|v| v.pop()) {
                    Some(idx) => {
                        let e = &mut set.events[idx];
                        e.released_ns = t.max(e.acquired_ns);
                    }
                    None => set.unmatched_releases += 1,
                }
                if op.primitive == Primitive::Mutex {
                    self.released_mutex = Some(object);
                }
            }
        }
    }

    /// Closes what is still open when the thread's trace ends at `last_ns`.
    fn finish(&mut self, set: &mut EventSet, last_ns: u64) {
        for idxs in &self.open {
            for &idx in idxs {
                let e = &mut set.events[idx];
                e.released_ns = last_ns.max(e.acquired_ns);
                e.unreleased = true;
            }
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
            if let Some(e) = set.events.last_mut() {
                e.unreleased = true;
            }
        }
    }
}
