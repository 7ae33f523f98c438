//! Critical-path marking after Chen & Stenström (SC'12), as used by the
//! thesis's mutex tool (Venter 2016, Section 3.2.2.2, Listing 3.5).
//!
//! The walk starts at the end of the thread that finished last (its last
//! recorded operation) and goes backward in time. On the current thread,
//! every lock event met is on the critical path. At a contended acquisition
//! the thread was blocked until another thread let it go, so the path
//! continues on that thread, backward from the moment it did:
//!
//! * mutex, spinlock, rwlock: the latest release of the same object by
//!   another thread at or before the acquisition ("the previous owner");
//! * semaphore: the latest `sem_post` of it by another thread;
//! * barrier: the thread that arrived last, at its arrival;
//! * condition wait: the latest release, by another thread and during the
//!   wait, of the mutex the waiter re-acquires (the signaller unlocks it
//!   after signalling; the signal itself is not recorded).
//!
//! When no such thread is found (the lock was released before recording
//! began) the walk stays on the current thread. It ends at the beginning of
//! a thread's recorded operations. Thread creation and `pthread_join` are
//! not recorded, so the path does not cross them; see docs/critical-path.md.
//! Every step marks a new event, so the walk is O(events · log events).

use contend_trace::Primitive;
use rayon::prelude::*;
use rustc_hash::FxHashMap;

use super::events::{EventSet, Outcome};

/// Result of marking.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CriticalPath {
    /// `on_path[i]` is true when `set.events[i]` is on the critical path.
    pub on_path: Vec<bool>,
    /// Jumps from a waiting thread to the thread that let it go.
    pub jumps: u64,
    /// Thread index where the walk started (the one that finished last).
    pub start_thread: Option<u32>,
    /// Every jump as (waiting event, waking event), indices into
    /// `set.events`: the contended hand-overs on the critical path, from the
    /// end of the run backward (exporters draw them as flow arrows from the
    /// waking thread to the woken one).
    pub hand_overs: Vec<(u32, u32)>,
}

/// A point in time on one thread that can wake a waiter on one object.
#[derive(Clone, Copy)]
struct Wake {
    time_ns: u64,
    thread: u32,
    /// The event that woke (its release, post or arrival).
    event: u32,
}

/// A waiting event looking for the thread that let it go.
#[derive(Clone, Copy)]
struct Query {
    /// Latest acceptable wake time (the acquisition), ns.
    hi: u64,
    /// Earliest acceptable wake time, ns.
    lo: u64,
    thread: u32,
    event: u32,
}

const NONE: u32 = u32::MAX;

/// The thread that let each waiting event go, as the index of the waking
/// event (`NONE` where there is none or the event did not wait).
///
/// For every object, its wakes (sorted by time) and its queries (sorted by
/// acquisition) are swept together once, keeping the latest wake and the
/// latest wake of any other thread: O(n log n) for the sorts, then linear,
/// with sequential memory access, in parallel over objects.
fn find_wakers(set: &EventSet) -> Vec<u32> {
    let objects = set.objects.len();
    let mut wakes: Vec<Vec<Wake>> = vec![Vec::new(); objects];
    let mut queries: Vec<Vec<Query>> = vec![Vec::new(); objects];
    for (i, e) in set.events.iter().enumerate() {
        let wake_time = match (e.primitive, e.outcome) {
            (p, Outcome::Acquired) if p.is_lock() => Some(e.released_ns),
            (Primitive::Semaphore, Outcome::Post) => Some(e.released_ns),
            (Primitive::Barrier, _) => Some(e.requested_ns),
            _ => None,
        };
        if let Some(time_ns) = wake_time {
            wakes[e.object as usize].push(Wake {
                time_ns,
                thread: e.thread,
                event: i as u32,
            });
        }
        if !(e.contended && e.outcome == Outcome::Acquired && e.acquired_ns > e.requested_ns) {
            continue;
        }
        let (object, lo) = match e.primitive {
            Primitive::Cond if e.cond_mutex != NONE => (e.cond_mutex, e.requested_ns),
            Primitive::Cond => continue,
            // Only a thread arriving after this one can have held it up.
            Primitive::Barrier => (e.object, e.requested_ns),
            _ => (e.object, 0),
        };
        queries[object as usize].push(Query {
            hi: e.acquired_ns,
            lo,
            thread: e.thread,
            event: i as u32,
        });
    }
    let found: Vec<Vec<(u32, u32)>> = wakes
        .into_par_iter()
        .zip(queries.into_par_iter())
        .map(|(mut wakes, mut queries)| {
            if queries.is_empty() {
                return Vec::new();
            }
            // Stable sorts: threads' runs are already in order.
            wakes.sort_by_key(|w| w.time_ns);
            queries.sort_by_key(|q| q.hi);
            let mut out = Vec::with_capacity(queries.len());
            let (mut latest, mut other): (Option<Wake>, Option<Wake>) = (None, None);
            let mut j = 0;
            for q in queries {
                while j < wakes.len() && wakes[j].time_ns <= q.hi {
                    let w = wakes[j];
                    match latest {
                        Some(l) if l.thread == w.thread => latest = Some(w),
                        _ => {
                            other = latest;
                            latest = Some(w);
                        }
                    }
                    j += 1;
                }
                let candidate = match latest {
                    Some(l) if l.thread != q.thread => Some(l),
                    _ => other,
                };
                if let Some(w) = candidate.filter(|w| w.time_ns >= q.lo) {
                    out.push((q.event, w.event));
                }
            }
            out
        })
        .collect();
    let mut waker = vec![NONE; set.events.len()];
    for (event, w) in found.into_iter().flatten() {
        waker[event as usize] = w;
    }
    waker
}

/// The time at which waking event `e` let a waiter go.
fn wake_time(set: &EventSet, w: usize) -> u64 {
    let e = &set.events[w];
    if e.primitive == Primitive::Barrier {
        e.requested_ns
    } else {
        e.released_ns
    }
}

/// Marks the lock events on the critical path (module docs give the rules).
pub fn mark_critical_path(set: &EventSet) -> CriticalPath {
    let n = set.events.len();
    let mut path = CriticalPath {
        on_path: vec![false; n],
        ..CriticalPath::default()
    };
    if n == 0 {
        return path;
    }
    // Each thread's events ordered by acquisition time. Pairing leaves a
    // thread's events contiguous and (nearly always) in that order already,
    // so most threads need no index list at all.
    let by_thread = ThreadOrder::build(set);
    let acquired = |i: usize| set.events[i].acquired_ns;
    let waker = find_wakers(set);

    let Some(start) = (0..set.threads.len())
        .filter(|&t| by_thread.len(t) > 0)
        .max_by_key(|&t| (set.threads[t].last_ns, std::cmp::Reverse(t)))
    else {
        return path;
    };
    path.start_thread = Some(start as u32);
    let mut thread = start;
    let t_end = set.threads[start].last_ns;
    // Position (exclusive) in by_thread[thread] of events not yet walked.
    let mut pos = by_thread.partition_point(thread, |i| acquired(i) <= t_end);
    while pos > 0 {
        pos -= 1;
        let i = by_thread.at(thread, pos);
        if path.on_path[i] {
            break;
        }
        if set.events[i].outcome == Outcome::Post {
            continue;
        }
        path.on_path[i] = true;
        let w = waker[i];
        if w == NONE {
            continue;
        }
        path.hand_overs.push((i as u32, w));
        thread = set.events[w as usize].thread as usize;
        let t_hi = wake_time(set, w as usize);
        // Continue from the waking event: past it while later events were
        // acquired by then (nested inside its hold), before it while it was
        // acquired after (a barrier arrival).
        let len = by_thread.len(thread);
        pos = by_thread.position(thread, w as usize);
        while pos < len && acquired(by_thread.at(thread, pos)) <= t_hi {
            pos += 1;
        }
        while pos > 0 && acquired(by_thread.at(thread, pos - 1)) > t_hi {
            pos -= 1;
        }
        path.jumps += 1;
    }
    path
}

/// Each thread's events in acquisition order: a contiguous, sorted range of
/// `set.events` (the common case, no memory), or an explicit index list.
struct ThreadOrder {
    threads: Vec<Order>,
}

enum Order {
    Range {
        start: usize,
        len: usize,
    },
    List {
        list: Vec<u32>,
        position: FxHashMap<u32, u32>,
    },
}

impl ThreadOrder {
    fn build(set: &EventSet) -> ThreadOrder {
        let t = set.threads.len();
        let (mut first, mut last, mut count) =
            (vec![usize::MAX; t], vec![0usize; t], vec![0usize; t]);
        for (i, e) in set.events.iter().enumerate() {
            let th = e.thread as usize;
            first[th] = first[th].min(i);
            last[th] = i;
            count[th] += 1;
        }
        let acquired = |i: usize| set.events[i].acquired_ns;
        let threads = (0..t)
            .into_par_iter()
            .map(|th| {
                if count[th] == 0 {
                    return Order::Range { start: 0, len: 0 };
                }
                let (start, len) = (first[th], count[th]);
                let contiguous = last[th] + 1 - start == len;
                if contiguous && (start..start + len).is_sorted_by_key(acquired) {
                    return Order::Range { start, len };
                }
                let mut list: Vec<u32> = (first[th]..=last[th])
                    .filter(|&i| set.events[i].thread as usize == th)
                    .map(|i| i as u32)
                    .collect();
                list.sort_by_key(|&i| acquired(i as usize));
                let position = list
                    .iter()
                    .enumerate()
                    .map(|(k, &i)| (i, k as u32))
                    .collect();
                Order::List { list, position }
            })
            .collect();
        ThreadOrder { threads }
    }

    fn len(&self, thread: usize) -> usize {
        match &self.threads[thread] {
            Order::Range { len, .. } => *len,
            Order::List { list, .. } => list.len(),
        }
    }

    /// Event index at position `k` of `thread`'s order.
    #[inline]
    fn at(&self, thread: usize, k: usize) -> usize {
        match &self.threads[thread] {
            Order::Range { start, .. } => start + k,
            Order::List { list, .. } => list[k] as usize,
        }
    }

    /// Position of event `i` (of `thread`) in `thread`'s order.
    fn position(&self, thread: usize, i: usize) -> usize {
        match &self.threads[thread] {
            Order::Range { start, .. } => i - start,
            Order::List { position, .. } => position[&(i as u32)] as usize,
        }
    }

    /// First position whose event does not satisfy `pred` (`pred` true
    /// for a prefix of the order).
    fn partition_point(&self, thread: usize, pred: impl Fn(usize) -> bool) -> usize {
        let (mut lo, mut hi) = (0, self.len(thread));
        while lo < hi {
            let mid = (lo + hi) / 2;
            if pred(self.at(thread, mid)) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }
}

/// The lock critical path inside a window of time, for relating it to
/// another critical path (the MPI critical path across ranks of a hybrid
/// `--mpi --locks` run, [`crate::mpi::hybrid`]): the rules of
/// [`mark_critical_path`] (Chen & Stenström), but starting at a given
/// thread and time and stopping at the start of the window. The wakers of
/// all events are found once ([`WindowWalker::new`], O(n log n)); each walk
/// costs O(events on it · log events).
pub struct WindowWalker<'s> {
    set: &'s EventSet,
    by_thread: ThreadOrder,
    waker: Vec<u32>,
}

impl<'s> WindowWalker<'s> {
    /// Prepares walks over `set`.
    pub fn new(set: &'s EventSet) -> WindowWalker<'s> {
        WindowWalker {
            set,
            by_thread: ThreadOrder::build(set),
            waker: find_wakers(set),
        }
    }

    /// Walks backward from time `t_end` on thread index `thread` (of
    /// `set.threads`) until `t_start`: `visit(i)` for every event `i` on
    /// the path, in the order met (latest first). At a contended
    /// acquisition the walk continues on the thread that let it go, as
    /// [`mark_critical_path`] does, when that happened inside the window.
    pub fn walk(&self, thread: usize, t_start: u64, t_end: u64, mut visit: impl FnMut(usize)) {
        let set = self.set;
        if thread >= set.threads.len() || t_end < t_start {
            return;
        }
        let acquired = |i: usize| set.events[i].acquired_ns;
        let mut thread = thread;
        let mut pos = self
            .by_thread
            .partition_point(thread, |i| acquired(i) <= t_end);
        let mut seen: rustc_hash::FxHashSet<usize> = Default::default();
        while pos > 0 {
            pos -= 1;
            let i = self.by_thread.at(thread, pos);
            let e = &set.events[i];
            if e.acquired_ns < t_start || !seen.insert(i) {
                break;
            }
            if e.outcome == Outcome::Post {
                continue;
            }
            visit(i);
            let w = self.waker[i];
            if w == NONE || wake_time(set, w as usize) < t_start {
                continue;
            }
            thread = set.events[w as usize].thread as usize;
            let t_hi = wake_time(set, w as usize);
            let len = self.by_thread.len(thread);
            pos = self.by_thread.position(thread, w as usize);
            while pos < len && acquired(self.by_thread.at(thread, pos)) <= t_hi {
                pos += 1;
            }
            while pos > 0 && acquired(self.by_thread.at(thread, pos - 1)) > t_hi {
                pos -= 1;
            }
        }
    }
}
