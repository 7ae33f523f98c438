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

use super::events::{EventSet, LockEvent, Outcome};
use crate::chunked_sort;

/// One mark per event, a bit each: which events lie on the critical path
/// (1 bit per event instead of a `bool`'s byte: 0.9 bytes less per event
/// at the analysis's peak, 2.7 MB for memcached's 3.1 million events).
/// Indexing gives the mark (`marks[i]`, panics past the end like a slice).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EventMarks {
    /// Bit `i % 64` of word `i / 64` is event `i`'s mark.
    words: Vec<u64>,
    /// Events marked or not.
    len: usize,
}

impl EventMarks {
    /// `len` events, none marked.
    pub fn new(len: usize) -> EventMarks {
        EventMarks {
            words: vec![0; len.div_ceil(64)],
            len,
        }
    }

    /// Events (marked or not).
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when there are no events.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Event `i`'s mark; `None` past the end.
    #[inline]
    pub fn get(&self, i: usize) -> Option<bool> {
        (i < self.len).then(|| self.bit(i))
    }

    /// Bit `i` (`i` < `len`).
    #[inline]
    fn bit(&self, i: usize) -> bool {
        self.words[i / 64] >> (i % 64) & 1 == 1
    }

    /// Marks event `i` (panics past the end).
    #[inline]
    pub fn set(&mut self, i: usize) {
        assert!(i < self.len, "event {i} of {}", self.len);
        self.words[i / 64] |= 1 << (i % 64);
    }

    /// Marked events.
    pub fn count(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// Every event's mark, in order.
    pub fn iter(&self) -> impl Iterator<Item = bool> + '_ {
        (0..self.len).map(|i| self.bit(i))
    }

    /// The marks as one `bool` per event.
    pub fn to_vec(&self) -> Vec<bool> {
        self.iter().collect()
    }
}

impl std::ops::Index<usize> for EventMarks {
    type Output = bool;

    #[inline]
    fn index(&self, i: usize) -> &bool {
        match self.get(i) {
            Some(true) => &true,
            Some(false) => &false,
            None => panic!("event {i} of {}", self.len),
        }
    }
}

/// Result of marking.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CriticalPath {
    /// `on_path[i]` is true when `set.events[i]` is on the critical path.
    pub on_path: EventMarks,
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

const NONE: u32 = u32::MAX;

/// Every event that can wake a waiter, per object, sorted by the time it
/// did (stably: at equal times in event order): the release of a lock
/// acquisition, a `sem_post`, a barrier arrival. One `u32` per such event
/// in one flat array, `start[o]..start[o + 1]` for object `o`: built by a
/// counting sort on the object (in chunks of the events side by side; it
/// keeps each thread's events in order) and a stable sort of each
/// object's part by wake time, in parallel over objects, skipped where
/// the part is in order already; a large part's runs (one per thread that
/// woke waiters on it) are merged ([`merge_wake_runs`]), or, for the walk
/// of [`mark_critical_path`], left as they are ([`WakeRun`]): its lookups
/// come backward in time, so a cursor per run moving backward finds the
/// waker without the merge. The walk also sorts only the parts of the
/// objects it looks up, when it first does ([`Wakes::placed`]).
struct Wakes {
    start: Vec<u32>,
    events: Vec<u32>,
    /// Per object, `NONE` or the index in `runs` of its part's runs.
    run_slot: Vec<u32>,
    /// The large parts left unmerged: each a list of runs, one per thread,
    /// each in wake-time order (checked as the parts were placed).
    runs: Vec<Vec<WakeRun>>,
    /// Per object, whether its part is ordered (sorted by wake time, or
    /// left as its runs): every part after [`Wakes::build`], only those
    /// looked up after [`Wakes::placed`] ([`Wakes::waker_ordering`]).
    ordered: Vec<bool>,
}

/// One thread's wake events on one object, in time order: positions
/// `start..end` of [`Wakes::events`].
#[derive(Debug, Clone, Copy)]
struct WakeRun {
    start: u32,
    end: u32,
    thread: u32,
}

/// Where successive waker lookups left off ([`Wakes::waker`]): a position
/// per object for the galloping search of a merged part, and for a part
/// left as runs, each run's position.
struct WakeCursor {
    near: Vec<u32>,
    runs: Vec<RunCursor>,
}

/// The positions of one unmerged part's runs for lookups at or before
/// time `hi`: in run `r`, `at[r]` is the end of its wakes at or before
/// `hi`, and `head[r]` the time of the wake before `at[r]` (meaningless
/// when `at[r]` is the run's start).
struct RunCursor {
    hi: u64,
    at: Vec<u32>,
    head: Vec<u64>,
}

/// Per chunk of the events and per object, the first and last wake event
/// (thread, time) the chunk places and whether each thread's wakes in it
/// came in time order ([`Wakes::build`]).
#[derive(Debug, Clone, Copy)]
struct PlacedOrder {
    first: (u32, u64),
    last: (u32, u64),
    ordered: bool,
}

impl PlacedOrder {
    /// Notes the next wake event on the object in the chunk: by `thread`,
    /// at `time` (ns).
    #[inline]
    fn note(&mut self, thread: u32, time: u64) {
        self.ordered &= self.last.0 != thread || time >= self.last.1;
        if self.first.0 == NONE {
            self.first = (thread, time);
        }
        self.last = (thread, time);
    }

    /// Per object (`objects` of them), whether every thread's wakes on it
    /// came in time order, from each chunk's notes (`chunks[c][o]`, the
    /// chunks in event order): each chunk's did, and no thread's go back in
    /// time from one chunk to the next that has wakes on the object.
    fn objects_in_order(chunks: &[Vec<PlacedOrder>], objects: usize) -> Vec<bool> {
        (0..objects)
            .map(|o| {
                let mut last = (NONE, 0u64);
                let mut ordered = true;
                for chunk in chunks {
                    let p = &chunk[o];
                    if p.first.0 == NONE {
                        continue;
                    }
                    ordered &= p.ordered && (p.first.0 != last.0 || p.first.1 >= last.1);
                    last = p.last;
                }
                ordered
            })
            .collect()
    }
}

impl Default for PlacedOrder {
    fn default() -> PlacedOrder {
        PlacedOrder {
            first: (NONE, 0),
            last: (NONE, 0),
            ordered: true,
        }
    }
}

/// What waiting event `i` waited for, if it waited: the object whose wake
/// let it go (a condition wait's mutex), and the earliest and latest time
/// that wake can have come at, ns (module docs).
#[inline]
fn wait_of(set: &EventSet, i: usize) -> Option<(u32, u64, u64)> {
    let e = &set.events[i];
    if !(e.contended() && e.outcome() == Outcome::Acquired && e.acquired_ns() > e.requested_ns()) {
        return None;
    }
    let (object, lo) = match e.primitive() {
        Primitive::Cond => (set.cond_mutex(i)?, e.requested_ns()),
        // Only a thread arriving after this one can have held it up;
        // only a thread ending during the join can have held up the
        // joining one (one that ended before it was joined did not).
        Primitive::Barrier | Primitive::Join => (e.object, e.requested_ns()),
        _ => (e.object, 0),
    };
    Some((object, lo, e.acquired_ns()))
}

/// Whether an event of `primitive` that ended as `outcome` can wake a
/// waiter: a lock's release (of an acquisition), a post (`sem_post`, a
/// thread's end), a barrier arrival. The events the wake lists hold, and
/// what pairing counts for them ([`EventSet::thread_wake_counts`]).
#[inline]
pub(super) fn can_wake(primitive: Primitive, outcome: Outcome) -> bool {
    (outcome == Outcome::Acquired && primitive.is_lock())
        || (outcome == Outcome::Post && primitive.is_post())
        || primitive == Primitive::Barrier
}

/// The time at which event `e` can wake a waiter, if it can
/// ([`can_wake`]): a barrier arrival's request, else the release.
#[inline]
fn wake_time_of(e: &LockEvent) -> Option<u64> {
    let p = e.primitive();
    can_wake(p, e.outcome()).then(|| {
        if p == Primitive::Barrier {
            e.requested_ns()
        } else {
            e.released_ns()
        }
    })
}

impl Wakes {
    /// The wake lists of `set`. With `keep_runs`, a large part whose
    /// per-thread runs are each in time order (at most
    /// [`MERGE_RUNS_MAX`]) is left as its runs, for lookups that come
    /// backward in time (the walk of [`mark_critical_path`]); other
    /// lookups are answered too, by a galloping search per run
    /// ([`Wakes::waker_in_runs`]).
    fn build(set: &EventSet, keep_runs: bool) -> Wakes {
        let mut wakes = Wakes::placed(set, keep_runs);
        wakes.order_all(set);
        wakes
    }

    /// The wake lists of `set` placed by object, each part in event order
    /// (with `keep_runs`, a large part in order by thread already left as
    /// its runs, as [`Wakes::build`] does): the counting sort without the
    /// sorting by wake time, which [`Wakes::order_all`] does for every
    /// part and [`Wakes::waker_ordering`] for the parts it looks up. The
    /// critical-path walk meets few locks on some runs (39 events and one
    /// hand-over of a memcached recording with 4,386 locks), and sorting
    /// every lock's part cost more than the rest of the walk there.
    fn placed(set: &EventSet, keep_runs: bool) -> Wakes {
        // The runs are the threads' ranges of the events: without them
        // every part is merged or sorted.
        let keep_runs = keep_runs && set.threads_in_ranges();
        let objects = set.objects.len();
        // The counting sort by object in parts of the events side by side
        // (a count array per part, then each part writes its own
        // positions), which keeps each object's wake events in event
        // order. The counts are pairing's when it kept them (groups of
        // whole threads), else a pass of their own; should pairing's not
        // match the events (a set changed since), counted again.
        let (start, events, orders) = wake_counts_of_pairing(set)
            .and_then(|(bounds, counts)| place_wakes(set, &bounds, counts, keep_runs))
            .or_else(|| {
                let (bounds, counts) = count_wakes(set);
                place_wakes(set, &bounds, counts, keep_runs)
            })
            .expect("wake events placed by their own counts");
        let ordered = PlacedOrder::objects_in_order(&orders, if keep_runs { objects } else { 0 });
        drop(orders);
        // Each object's part, sorted by wake time; stable, and the parts are
        // runs of per-thread ascending times, which the merge sort exploits.
        // Large parts in order by thread are left as their runs.
        let mut run_slot = vec![NONE; objects];
        let mut runs: Vec<Vec<WakeRun>> = Vec::new();
        if keep_runs {
            for o in 0..objects {
                let (a, b) = (start[o] as usize, start[o + 1] as usize);
                if b - a <= LARGE_PART || !ordered[o] {
                    continue;
                }
                if let Some(list) = thread_runs(set, &events[a..b], a) {
                    run_slot[o] = runs.len() as u32;
                    runs.push(list);
                }
            }
        }
        // A part of one wake is in order; so is one left as runs.
        let ordered = (0..objects)
            .map(|o| run_slot[o] != NONE || start[o + 1] - start[o] < 2)
            .collect();
        Wakes {
            start,
            events,
            run_slot,
            runs,
            ordered,
        }
    }

    /// Orders every part not ordered yet (the rest of [`Wakes::build`]).
    fn order_all(&mut self, set: &EventSet) {
        let mut parts: Vec<&mut [u32]> = Vec::with_capacity(self.ordered.len());
        let mut rest = self.events.as_mut_slice();
        for (o, ordered) in self.ordered.iter_mut().enumerate() {
            let (head, tail) = rest.split_at_mut((self.start[o + 1] - self.start[o]) as usize);
            if !*ordered {
                parts.push(head);
                *ordered = true;
            }
            rest = tail;
        }
        // Small parts side by side. Large ones (a lock most of the run's
        // events use) side by side too, their runs merged without a keyed
        // copy; one of more runs is then sorted on its own, by both cores,
        // so that only one large part's keyed copy is held at a time.
        let (large, small): (Vec<_>, Vec<_>) =
            parts.into_iter().partition(|part| part.len() > LARGE_PART);
        small
            .into_par_iter()
            .for_each(|part| sort_by_wake_time(set, part));
        let unmerged: Vec<&mut [u32]> = large
            .into_par_iter()
            .filter_map(|part| (!merge_wake_runs(set, part)).then_some(part))
            .collect();
        for part in unmerged {
            sort_by_wake_time(set, part);
        }
    }

    /// Orders the part of `object` if it is not yet, as [`Wakes::order_all`]
    /// would (the same order: both sorts are stable, the merge gives a
    /// stable sort's order).
    fn order(&mut self, set: &EventSet, object: u32) {
        let o = object as usize;
        if self.ordered.get(o).is_none_or(|&done| done) {
            return;
        }
        let part = &mut self.events[self.start[o] as usize..self.start[o + 1] as usize];
        if part.len() <= LARGE_PART || !merge_wake_runs(set, part) {
            sort_by_wake_time(set, part);
        }
        self.ordered[o] = true;
    }

    /// [`Wakes::waker`], ordering first the part of the object that event
    /// `i` waited for (for wake lists made by [`Wakes::placed`]).
    fn waker_ordering(&mut self, set: &EventSet, i: usize, cursor: &mut WakeCursor) -> u32 {
        if let Some((object, _, _)) = wait_of(set, i) {
            self.order(set, object);
        }
        self.waker(set, i, cursor)
    }

    /// The events that can wake a waiter on `object`, by wake time.
    #[inline]
    fn of(&self, object: u32) -> &[u32] {
        let o = object as usize;
        match (self.start.get(o), self.start.get(o + 1)) {
            (Some(&a), Some(&b)) => &self.events[a as usize..b as usize],
            _ => &[],
        }
    }

    /// The event that let waiting event `i` go (module docs), or `NONE`:
    /// the latest wake on the object it waited for, at or before its
    /// acquisition, by another thread, and not before `lo`. `cursor` holds
    /// a position per object from the previous lookups: successive
    /// lookups at nearby times (a walk backward in time, a thread's events
    /// forward) gallop from there instead of searching the whole list.
    fn waker(&self, set: &EventSet, i: usize, cursor: &mut WakeCursor) -> u32 {
        let Some((object, lo, hi)) = wait_of(set, i) else {
            return NONE;
        };
        debug_assert!(
            self.ordered.get(object as usize).is_none_or(|&done| done),
            "the wake list of object {object} is not ordered"
        );
        let e = &set.events[i];
        if let Some(&slot) = self.run_slot.get(object as usize).filter(|&&s| s != NONE) {
            let runs = &self.runs[slot as usize];
            let at = &mut cursor.runs[slot as usize];
            return self.waker_in_runs(set, runs, at, e.thread(), lo, hi);
        }
        let wakes = self.of(object);
        // First position whose wake is after `hi`, galloping from the cursor.
        let c = &mut cursor.near[object as usize];
        let mut k = chunked_sort::partition_point_near(wakes, *c as usize, |&w| {
            wake_time(set, w as usize) <= hi
        });
        *c = k as u32;
        while k > 0 {
            k -= 1;
            let w = wakes[k];
            let we = &set.events[w as usize];
            if we.thread() != e.thread() {
                return if wake_time(set, w as usize) >= lo {
                    w
                } else {
                    NONE
                };
            }
        }
        NONE
    }

    /// [`Wakes::waker`] on a part left as runs: each run's position moves
    /// to its last wake at or before `hi` (a step per wake passed when `hi`
    /// is at or before the previous lookup's and the wakes passed are few,
    /// as in the backward walk; a galloping search otherwise), and the
    /// latest of the runs' wakes there by a thread other than `thread` is
    /// the waker, at equal times the later run's (the order of a stable
    /// merge). In a walk backward over the whole run each wake is read
    /// about once.
    fn waker_in_runs(
        &self,
        set: &EventSet,
        runs: &[WakeRun],
        cursor: &mut RunCursor,
        thread: u32,
        lo: u64,
        hi: u64,
    ) -> u32 {
        let time = |k: u32| wake_time(set, self.events[k as usize] as usize);
        let later = hi > cursor.hi;
        for (r, run) in runs.iter().enumerate() {
            let (at, head) = (&mut cursor.at[r], &mut cursor.head[r]);
            // Back a wake at a time (with the head's time kept, one read
            // per wake passed), a few at most; further, or forward, by a
            // galloping search from the run's position.
            let mut steps = if later { 0 } else { BACK_STEPS };
            while steps > 0 && *at > run.start && *head > hi {
                *at -= 1;
                steps -= 1;
                if *at > run.start {
                    *head = time(*at - 1);
                }
            }
            if later || (*at > run.start && *head > hi) {
                let list = &self.events[run.start as usize..run.end as usize];
                let k =
                    chunked_sort::partition_point_near(list, (*at - run.start) as usize, |&w| {
                        wake_time(set, w as usize) <= hi
                    });
                *at = run.start + k as u32;
                if *at > run.start {
                    *head = time(*at - 1);
                }
            }
        }
        cursor.hi = hi;
        let mut best: Option<(u64, u32)> = None;
        for (r, run) in runs.iter().enumerate() {
            let at = cursor.at[r];
            if run.thread == thread || at == run.start {
                continue;
            }
            let t = cursor.head[r];
            if best.is_none_or(|(bt, _)| t >= bt) {
                best = Some((t, at - 1));
            }
        }
        match best {
            Some((t, k)) if t >= lo => self.events[k as usize],
            _ => NONE,
        }
    }

    /// A fresh cursor for [`Wakes::waker`].
    fn cursor(&self, set: &EventSet) -> WakeCursor {
        WakeCursor {
            near: self.start.windows(2).map(|w| w[1] - w[0]).collect(),
            runs: self
                .runs
                .iter()
                .map(|runs| RunCursor {
                    hi: u64::MAX,
                    at: runs.iter().map(|r| r.end).collect(),
                    head: runs
                        .iter()
                        .map(|r| wake_time(set, self.events[r.end as usize - 1] as usize))
                        .collect(),
                })
                .collect(),
        }
    }
}

/// Each part's first event (the last entry the end) and its wake events
/// per object (`counts[part][object]`), from pairing's counts per thread
/// ([`EventSet::thread_wake_counts`]) summed over groups of whole threads;
/// `None` when pairing kept none.
fn wake_counts_of_pairing(set: &EventSet) -> Option<(Vec<usize>, Vec<Vec<usize>>)> {
    let objects = set.objects.len();
    let per_thread = &set.thread_wake_counts;
    if !set.threads_in_ranges()
        || per_thread.len() != set.threads.len()
        || per_thread.iter().any(|c| c.len() != objects)
    {
        return None;
    }
    let work: Vec<usize> = set.thread_ranges.iter().map(|r| r.len()).collect();
    let groups =
        chunked_sort::thread_groups(&work, objects, rayon::current_num_threads().clamp(1, 8));
    let mut bounds = vec![0usize];
    bounds.extend(set.events_of_thread_groups(&groups).iter().map(|r| r.end));
    let mut counts = Vec::with_capacity(groups.len());
    for g in groups {
        let mut c = vec![0usize; objects];
        for t in g {
            for (sum, &n) in c.iter_mut().zip(&per_thread[t]) {
                *sum += n as usize;
            }
        }
        counts.push(c);
    }
    Some((bounds, counts))
}

/// Each part's first event (the last entry the end) and its wake events
/// per object, counted in a pass over the events in parts side by side
/// ([`chunked_sort::part_bounds`]).
fn count_wakes(set: &EventSet) -> (Vec<usize>, Vec<Vec<usize>>) {
    let objects = set.objects.len();
    let bounds = chunked_sort::part_bounds(set.events.len(), objects);
    let counts = (0..bounds.len() - 1)
        .into_par_iter()
        .map(|k| {
            let mut c = vec![0usize; objects];
            for e in &set.events[bounds[k]..bounds[k + 1]] {
                if wake_time_of(e).is_some() {
                    c[e.object as usize] += 1;
                }
            }
            c
        })
        .collect();
    (bounds, counts)
}

/// The wake events placed by object: each object's first position in the
/// list (`objects + 1` entries), the list (event indices, each object's
/// in event order), and with `keep_runs` each part's notes of the order
/// of each thread's wakes ([`PlacedOrder`]); from the parts of the events
/// (`bounds`) and their wake counts per object, side by side. `None` when
/// a part finds more or fewer wake events of an object than counted.
#[allow(clippy::type_complexity)]
fn place_wakes(
    set: &EventSet,
    bounds: &[usize],
    counts: Vec<Vec<usize>>,
    keep_runs: bool,
) -> Option<(Vec<u32>, Vec<u32>, Vec<Vec<PlacedOrder>>)> {
    let objects = set.objects.len();
    let (starts, firsts) = chunked_sort::chunk_starts(&counts, objects);
    let start: Vec<u32> = starts.iter().map(|&s| s as u32).collect();
    let mut events = vec![0u32; starts[objects]];
    let out = chunked_sort::DisjointWrites::new(&mut events);
    // With `keep_runs`, each part also notes whether each thread's wakes
    // on each object come in time order (the event is read for its object
    // anyway; its wake time is in the same cache line).
    let placed: Vec<Option<Vec<PlacedOrder>>> = firsts
        .into_par_iter()
        .zip(counts)
        .enumerate()
        .map(|(k, (mut next, count))| {
            // Part k's positions of object o end here: past them it would
            // write another part's.
            let ends: Vec<usize> = next.iter().zip(&count).map(|(f, c)| f + c).collect();
            let mut order = vec![PlacedOrder::default(); if keep_runs { objects } else { 0 }];
            for i in bounds[k]..bounds[k + 1] {
                let e = &set.events[i];
                if let Some(t) = wake_time_of(e) {
                    let o = e.object as usize;
                    let at = next.get_mut(o)?;
                    if *at >= ends[o] {
                        return None;
                    }
                    // SAFETY: part k writes only its own positions of each
                    // object o, firsts[k][o] .. ends[o] (checked above),
                    // which no other part writes.
                    unsafe { out.write(*at, i as u32) };
                    *at += 1;
                    if keep_runs {
                        order[o].note(e.thread(), t);
                    }
                }
            }
            (next == ends).then_some(order)
        })
        .collect();
    let orders = placed.into_iter().collect::<Option<Vec<_>>>()?;
    Some((start, events, orders))
}

/// The runs of one object's wake events (`part`, at position `offset` of
/// [`Wakes::events`], in event order), one per thread with wakes on it,
/// found by a binary search per thread's range of the events
/// ([`EventSet::thread_ranges`]); `None` when they are more than
/// [`MERGE_RUNS_MAX`] (the part is then sorted). For the walk's runs and
/// for [`merge_wake_runs`].
fn thread_runs(set: &EventSet, part: &[u32], offset: usize) -> Option<Vec<WakeRun>> {
    let mut runs = Vec::new();
    let mut start = 0;
    for (th, r) in set.thread_ranges.iter().enumerate() {
        let end = start + part[start..].partition_point(|&w| (w as usize) < r.end);
        if end > start {
            if runs.len() == MERGE_RUNS_MAX {
                return None;
            }
            runs.push(WakeRun {
                start: (offset + start) as u32,
                end: (offset + end) as u32,
                thread: th as u32,
            });
        }
        start = end;
    }
    Some(runs)
}

/// Wake events of one object beyond which its part is sorted on its own
/// by both cores ([`Wakes::build`]).
const LARGE_PART: usize = 1 << 16;

/// Wakes a run's position steps back one at a time in a lookup before it
/// searches ([`Wakes::waker_in_runs`]): in the backward walk a lookup
/// passes about one wake per run.
const BACK_STEPS: u32 = 8;

/// Runs of ascending wake times beyond which [`merge_wake_runs`] leaves a
/// part to [`sort_by_wake_time`].
const MERGE_RUNS_MAX: usize = 16;

/// Sorts one object's wake events by wake time, stably, when they form at
/// most [`MERGE_RUNS_MAX`] runs of ascending times. A part lists its events
/// in event order, so where pairing says where each thread's events are
/// ([`EventSet::thread_ranges`]) the runs are taken to be the threads'
/// (nearly always each thread's wakes on an object come in time order),
/// found by a binary search of the part per thread, and checked as they
/// are merged; otherwise they are found in a pass over the keys. The runs
/// are merged by taking, at each step, the least (time, run) of their
/// heads, reading each run's keys in order (no keyed copy; the output, 4
/// bytes per event, replaces the part). Equal times come out in run order
/// and a run's own in position order: the order of a stable sort. Returns
/// false, with `part` untouched, when the runs are more (or a thread's
/// wakes are not in time order). O(n · runs).
fn merge_wake_runs(set: &EventSet, part: &mut [u32]) -> bool {
    let key = |i: u32| wake_time(set, i as usize);
    let n = part.len();
    if n < 2 {
        return true;
    }
    // (first position, end) of each run
    let mut runs: Vec<(usize, usize)> = Vec::new();
    let by_thread = set.threads_in_ranges() && part.is_sorted();
    if by_thread {
        let Some(list) = thread_runs(set, part, 0) else {
            return false;
        };
        runs.extend(list.iter().map(|r| (r.start as usize, r.end as usize)));
    } else {
        let (mut start, mut prev) = (0, key(part[0]));
        for (k, &i) in part.iter().enumerate().skip(1) {
            let t = key(i);
            if t < prev {
                if runs.len() + 1 >= MERGE_RUNS_MAX {
                    return false;
                }
                runs.push((start, k));
                start = k;
            }
            prev = t;
        }
        runs.push((start, n));
    }
    if runs.len() == 1 && !by_thread {
        return true;
    }
    let head = |r: usize, at: usize| chunked_sort::merge_head(key(part[at]), r);
    // (None: a time a merge head cannot hold; sorted instead)
    let Some(mut heads) = runs
        .iter()
        .enumerate()
        .map(|(r, &(first, _))| head(r, first))
        .collect::<Option<Vec<u64>>>()
    else {
        return false;
    };
    let mut merged: Vec<u32> = Vec::with_capacity(n);
    for _ in 0..n {
        let (best, least) = chunked_sort::least_head(&heads);
        let (at, end) = &mut runs[best];
        merged.push(part[*at]);
        *at += 1;
        heads[best] = if *at < *end {
            let Some(next) = head(best, *at) else {
                return false;
            };
            if next < least {
                // a thread's wakes out of time order: sort instead
                return false;
            }
            next
        } else {
            chunked_sort::EXHAUSTED
        };
    }
    part.copy_from_slice(&merged);
    true
}

/// Sorts one object's wake events by wake time, stably. They come as runs
/// already in order (each thread's wakes on the object, in the thread's
/// event order): the keys are read once, in that order, into a transient
/// (time, event) array whose merge sort finds the runs and merges them
/// with sequential memory access; then the events are written back.
fn sort_by_wake_time(set: &EventSet, part: &mut [u32]) {
    let key = |i: u32| wake_time(set, i as usize);
    let large = part.len() > LARGE_PART;
    // The keys are read once (by both cores for a large part: the reads
    // wait on memory), then the order checked on the copy.
    let mut keyed: Vec<(u64, u32)> = if large {
        part.par_iter().map(|&i| (key(i), i)).collect()
    } else {
        part.iter().map(|&i| (key(i), i)).collect()
    };
    if keyed.is_sorted_by_key(|&(t, _)| t) {
        return;
    }
    if large {
        keyed.par_sort_by_key(|&(t, _)| t);
    } else {
        keyed.sort_by_key(|&(t, _)| t);
    }
    for (slot, (_, i)) in part.iter_mut().zip(keyed) {
        *slot = i;
    }
}

/// The time at which waking event `e` let a waiter go.
fn wake_time(set: &EventSet, w: usize) -> u64 {
    let e = &set.events[w];
    if e.primitive() == Primitive::Barrier {
        e.requested_ns()
    } else {
        e.released_ns()
    }
}

/// Marks the lock events on the critical path (module docs give the rules).
pub fn mark_critical_path(set: &EventSet) -> CriticalPath {
    mark_with(set, true)
}

/// [`mark_critical_path`], with a large lock's wake events left as the
/// threads' runs (`keep_runs`, as the analysis does) or merged (the same
/// path: tested).
fn mark_with(set: &EventSet, keep_runs: bool) -> CriticalPath {
    mark_using(set, Wakes::placed(set, keep_runs))
}

/// [`mark_with`] with the wake lists given (ordered or only placed: the
/// walk orders the parts it looks up).
fn mark_using(set: &EventSet, mut wakes: Wakes) -> CriticalPath {
    let n = set.events.len();
    let mut path = CriticalPath {
        on_path: EventMarks::new(n),
        ..CriticalPath::default()
    };
    if n == 0 {
        return path;
    }
    // Each thread's events ordered by acquisition time. Pairing leaves a
    // thread's events contiguous and (nearly always) in that order already,
    // so most threads need no index list at all.
    let by_thread = ThreadOrder::build(set);
    let acquired = |i: usize| set.events[i].acquired_ns();
    // Wakers are looked up only for the events the walk meets, with one
    // cursor: the walk goes backward in time.
    let mut cursor = wakes.cursor(set);

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
        if set.events[i].outcome() == Outcome::Post {
            continue;
        }
        path.on_path.set(i);
        let w = wakes.waker_ordering(set, i, &mut cursor);
        if w == NONE {
            continue;
        }
        path.hand_overs.push((i as u32, w));
        thread = set.events[w as usize].thread() as usize;
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

/// One thread's events (of one source) in time order: a contiguous range
/// of the events that is in that order already (the common case: no
/// memory), or a list of their indices. Used by [`ThreadOrder`] and by the
/// critical path across recorders ([`super::across`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Lane {
    Range { start: usize, end: usize },
    List(Vec<u32>),
}

impl Lane {
    /// Its events.
    #[inline]
    pub(super) fn len(&self) -> usize {
        match self {
            Lane::Range { start, end } => end - start,
            Lane::List(list) => list.len(),
        }
    }

    /// The index of its `k`-th event.
    #[inline]
    pub(super) fn at(&self, k: usize) -> usize {
        match self {
            Lane::Range { start, .. } => start + k,
            Lane::List(list) => list[k] as usize,
        }
    }

    /// First position whose event does not satisfy `pred` (`pred` true
    /// for a prefix of the lane): a binary search.
    pub(super) fn partition_point(&self, pred: impl Fn(usize) -> bool) -> usize {
        let (mut lo, mut hi) = (0, self.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if pred(self.at(mid)) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }
}

/// Each thread's events in acquisition order ([`Lane`]), and for a thread
/// listed, where each of its events is in the list. Used by the critical
/// path and by [`super::ownership`].
pub(super) struct ThreadOrder {
    threads: Vec<(Lane, FxHashMap<u32, u32>)>,
}

impl ThreadOrder {
    pub(super) fn build(set: &EventSet) -> ThreadOrder {
        let t = set.threads.len();
        let (mut first, mut last, mut count) =
            (vec![usize::MAX; t], vec![0usize; t], vec![0usize; t]);
        if set.threads_in_ranges() {
            // Pairing says where each thread's events are.
            for (th, r) in set.thread_ranges.iter().enumerate() {
                if !r.is_empty() {
                    (first[th], last[th], count[th]) = (r.start, r.end - 1, r.len());
                }
            }
        } else {
            for (i, e) in set.events.iter().enumerate() {
                let th = e.thread() as usize;
                first[th] = first[th].min(i);
                last[th] = i;
                count[th] += 1;
            }
        }
        let acquired = |i: usize| set.events[i].acquired_ns();
        // Pairing noted which threads it wrote in acquisition order.
        let noted = set.threads_in_ranges() && set.thread_in_acquisition_order.len() == t;
        let threads = (0..t)
            .into_par_iter()
            .map(|th| {
                if count[th] == 0 {
                    return (Lane::Range { start: 0, end: 0 }, FxHashMap::default());
                }
                let (start, len) = (first[th], count[th]);
                let contiguous = last[th] + 1 - start == len;
                let in_order = if noted {
                    set.thread_in_acquisition_order[th]
                } else {
                    (start..start + len).is_sorted_by_key(acquired)
                };
                if contiguous && in_order {
                    let end = start + len;
                    return (Lane::Range { start, end }, FxHashMap::default());
                }
                let mut list: Vec<u32> = (first[th]..=last[th])
                    .filter(|&i| set.events[i].thread() as usize == th)
                    .map(|i| i as u32)
                    .collect();
                list.sort_by_key(|&i| acquired(i as usize));
                let position = list
                    .iter()
                    .enumerate()
                    .map(|(k, &i)| (i, k as u32))
                    .collect();
                (Lane::List(list), position)
            })
            .collect();
        ThreadOrder { threads }
    }

    pub(super) fn len(&self, thread: usize) -> usize {
        self.threads[thread].0.len()
    }

    /// Event index at position `k` of `thread`'s order.
    #[inline]
    pub(super) fn at(&self, thread: usize, k: usize) -> usize {
        self.threads[thread].0.at(k)
    }

    /// Position of event `i` (of `thread`) in `thread`'s order.
    fn position(&self, thread: usize, i: usize) -> usize {
        match &self.threads[thread] {
            (Lane::Range { start, .. }, _) => i - start,
            (Lane::List(_), position) => position[&(i as u32)] as usize,
        }
    }

    /// First position whose event does not satisfy `pred` (`pred` true
    /// for a prefix of the order).
    fn partition_point(&self, thread: usize, pred: impl Fn(usize) -> bool) -> usize {
        self.threads[thread].0.partition_point(pred)
    }
}

/// The lock critical path inside a window of time, for relating it to
/// another critical path (the MPI critical path across ranks of a hybrid
/// `--mpi --locks` run, [`crate::mpi::hybrid`]): the rules of
/// [`mark_critical_path`] (Chen & Stenström), but starting at a given
/// thread and time and stopping at the start of the window. The wake
/// events of every object are sorted once ([`WindowWalker::new`]); a walk
/// looks up the waker of each event it meets, galloping from the previous
/// lookup's position (one cursor shared by the walks, behind a lock).
pub struct WindowWalker<'s> {
    set: &'s EventSet,
    by_thread: ThreadOrder,
    wakes: Wakes,
    cursor: std::sync::Mutex<WakeCursor>,
}

impl<'s> WindowWalker<'s> {
    /// Prepares walks over `set`.
    pub fn new(set: &'s EventSet) -> WindowWalker<'s> {
        let wakes = Wakes::build(set, false);
        let cursor = std::sync::Mutex::new(wakes.cursor(set));
        WindowWalker {
            set,
            by_thread: ThreadOrder::build(set),
            wakes,
            cursor,
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
        let acquired = |i: usize| set.events[i].acquired_ns();
        let mut thread = thread;
        let mut pos = self
            .by_thread
            .partition_point(thread, |i| acquired(i) <= t_end);
        let mut seen: rustc_hash::FxHashSet<usize> = Default::default();
        let mut cursor = self.cursor.lock().unwrap_or_else(|e| e.into_inner());
        while pos > 0 {
            pos -= 1;
            let i = self.by_thread.at(thread, pos);
            let e = &set.events[i];
            if e.acquired_ns() < t_start || !seen.insert(i) {
                break;
            }
            if e.outcome() == Outcome::Post {
                continue;
            }
            visit(i);
            let w = self.wakes.waker(set, i, &mut cursor);
            if w == NONE || wake_time(set, w as usize) < t_start {
                continue;
            }
            thread = set.events[w as usize].thread() as usize;
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

/// The event that let each event of `set` go, by the rules of
/// [`mark_critical_path`] (module docs): `result[i]` is an index into
/// `set.events`, or `u32::MAX` when event `i` did not wait or its waker
/// was not recorded. For walks that combine the lock hand-overs with
/// those of other recorders ([`crate::locks::across`]). O(n log n).
pub fn lock_wakers(set: &EventSet) -> Vec<u32> {
    let wakes = Wakes::build(set, false);
    let mut cursor = wakes.cursor(set);
    (0..set.events.len())
        .map(|i| wakes.waker(set, i, &mut cursor))
        .collect()
}

/// The time at which waking event `w` (an index into `set.events`) let its
/// waiter go: a release, a `sem_post`, a barrier arrival, ns.
pub fn lock_wake_time(set: &EventSet, w: usize) -> u64 {
    wake_time(set, w)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::locks::events::LockEventFields;

    /// The wake lists placed from pairing's wake counts are those placed
    /// from a count of their own, with the runs kept or not; and counts
    /// that no longer match the events (one too many, one moved to another
    /// object, one too few) are counted again, with the same lists.
    #[test]
    fn wakes_placed_from_pairings_counts_equal_those_counted_again() {
        use contend_trace::{Phase, RawOp};
        let phases = [
            Phase::Request,
            Phase::Acquired,
            Phase::Release,
            Phase::Immediate,
        ];
        let mut rng = crate::TestRng(0x3c6e_f372_fe94_f82b);
        let lists = |w: &Wakes| {
            let runs: Vec<Vec<(u32, u32, u32)>> = w
                .runs
                .iter()
                .map(|r| r.iter().map(|r| (r.start, r.end, r.thread)).collect())
                .collect();
            (
                w.start.clone(),
                w.events.clone(),
                w.run_slot.clone(),
                w.ordered.clone(),
                runs,
            )
        };
        let mut checked = 0;
        for round in 0..60 {
            let objects = 1 + rng.below(if round % 3 == 0 { 40 } else { 4 });
            let threads: Vec<Vec<RawOp>> = (0..1 + rng.below(6))
                .map(|_| {
                    let mut ticks = 1_000u64;
                    (0..rng.below(3000))
                        .map(|_| {
                            ticks += rng.below(20);
                            RawOp {
                                ticks,
                                object: 0x1000 + 0x40 * rng.below(objects),
                                site: 0x40_0000,
                                primitive: match rng.below(12) {
                                    0 => Primitive::Semaphore,
                                    1 => Primitive::Barrier,
                                    _ => Primitive::Mutex,
                                },
                                phase: phases[rng.below(phases.len() as u64) as usize],
                                stack: contend_trace::NO_STACK,
                            }
                        })
                        .collect()
                })
                .collect();
            let set = crate::locks::events::pair_threads_from_memory(&threads, 1);
            if set.objects.is_empty() {
                continue;
            }
            assert_eq!(
                set.thread_wake_counts.len(),
                set.threads.len(),
                "round {round}"
            );
            let uncounted = EventSet {
                thread_wake_counts: Vec::new(),
                ..set.clone()
            };
            for keep_runs in [true, false] {
                let want = lists(&Wakes::placed(&uncounted, keep_runs));
                assert_eq!(
                    lists(&Wakes::placed(&set, keep_runs)),
                    want,
                    "round {round}"
                );
                // counts that do not match the events
                let (t, o) = (
                    rng.below(set.threads.len() as u64) as usize,
                    rng.below(set.objects.len() as u64) as usize,
                );
                let mut more = set.clone();
                more.thread_wake_counts[t][o] += 1;
                assert_eq!(
                    lists(&Wakes::placed(&more, keep_runs)),
                    want,
                    "round {round}"
                );
                let mut moved = more.clone();
                let other = (o + 1) % set.objects.len();
                if other != o && moved.thread_wake_counts[t][other] > 0 {
                    moved.thread_wake_counts[t][other] -= 1;
                    assert_eq!(
                        lists(&Wakes::placed(&moved, keep_runs)),
                        want,
                        "round {round}"
                    );
                }
                if set.thread_wake_counts[t][o] > 0 {
                    let mut fewer = set.clone();
                    fewer.thread_wake_counts[t][o] -= 1;
                    assert_eq!(
                        lists(&Wakes::placed(&fewer, keep_runs)),
                        want,
                        "round {round}"
                    );
                    checked += 1;
                }
            }
        }
        assert!(checked > 20, "{checked}");
    }

    /// Marks read back as a `bool` per event would, across word edges
    /// (63, 64, 65 events), with nothing marked past the end.
    #[test]
    fn event_marks_match_a_bool_per_event() {
        for n in [0usize, 1, 63, 64, 65, 130] {
            let mut marks = EventMarks::new(n);
            let mut want = vec![false; n];
            for i in (0..n).filter(|i| i % 3 == 0 || i % 64 == 63) {
                marks.set(i);
                want[i] = true;
            }
            assert_eq!(marks.len(), n);
            assert_eq!(marks.to_vec(), want, "{n} events");
            assert_eq!(marks.count(), want.iter().filter(|&&b| b).count());
            for (i, &b) in want.iter().enumerate() {
                assert_eq!(marks[i], b, "event {i} of {n}");
                assert_eq!(marks.get(i), Some(b));
            }
            assert_eq!(marks.get(n), None);
        }
    }

    /// A set of mutex acquisitions released at `released` (ns), one each.
    fn released_at(released: &[u64]) -> EventSet {
        let events = released
            .iter()
            .map(|&r| {
                LockEventFields {
                    thread: 0,
                    object: 0,
                    site: 0,
                    primitive: Primitive::Mutex,
                    outcome: Outcome::Acquired,
                    requested_ns: 0,
                    acquired_ns: 0,
                    released_ns: r,
                    contended: false,
                    unreleased: false,
                }
                .pack()
            })
            .collect();
        EventSet {
            events,
            ..EventSet::default()
        }
    }

    /// Positions `0..n` cut into `runs` ascending runs of times drawn from
    /// a few values (so that equal times meet inside and across runs).
    fn runs_of(seed: u64, n: usize, runs: usize) -> Vec<u64> {
        let mut rng = crate::TestRng(seed | 1);
        let mut times: Vec<u64> = (0..n).map(|_| rng.below(20)).collect();
        let cut = n.div_ceil(runs.max(1));
        for run in times.chunks_mut(cut.max(1)) {
            run.sort_unstable();
        }
        times
    }

    /// `set` with its events cut into threads of `cut` events each (the
    /// last shorter), as pairing says where each thread's events are.
    fn in_threads(mut set: EventSet, cut: usize) -> EventSet {
        let n = set.events.len();
        let cut = cut.max(1);
        set.thread_ranges = (0..n.div_ceil(cut))
            .map(|t| t * cut..((t + 1) * cut).min(n))
            .collect();
        set.threads = set
            .thread_ranges
            .iter()
            .map(|_| crate::locks::events::ThreadInfo::of_tid(1))
            .collect();
        set
    }

    /// A large lock's wake events left as the threads' runs give the same
    /// wakers as the merged list, for lookups backward in time (as the walk
    /// makes them: each run's position steps back), forward and in random
    /// order (a search per run), and the same critical path; with 4 and 12
    /// threads (runs kept), 20 (more runs than kept: merged or sorted) and
    /// 4 of which one takes the lock again inside its hold (its wakes out
    /// of time order: merged or sorted). Times are coarse, so that equal
    /// wake times are common within and across threads.
    #[test]
    fn wake_runs_give_the_wakers_and_path_of_the_merged_list() {
        use crate::locks::events::{pair_operations, OpSource, ThreadInput, TimeMap};
        use contend_trace::{Phase, RawOp, NO_STACK};
        for (threads, per_thread, nested, kept, ties) in [
            (4u32, 20_000u64, false, true, false),
            (4, 20_000, false, true, true),
            (12, 7_000, false, true, false),
            (12, 7_000, false, true, true),
            (20, 4_000, false, false, false),
            (4, 20_000, true, false, false),
        ] {
            // Two locks taken in turn: the thread whose next request is
            // earliest gets the lock it asks for when that is free
            // (waiting until then: contended) and holds it 8 to 24 ns, or,
            // with `ties`, 0 to 16 ns (equal wake times, which cut the
            // walk short: the path is compared, its length not asserted).
            let mut rng = crate::TestRng(0x2545_f491_4f6c_dd1d ^ u64::from(threads));
            let mut next_request: Vec<u64> =
                (0..threads).map(|_| 1000 + rng.below(20) * 8).collect();
            let mut thread_ops: Vec<Vec<RawOp>> = vec![Vec::new(); threads as usize];
            let mut free_at = [0u64; 2];
            for _ in 0..u64::from(threads) * per_thread {
                let t = (0..threads as usize)
                    .min_by_key(|&t| next_request[t])
                    .unwrap();
                let k = usize::from(rng.below(7) == 3);
                let op = |ticks, phase| RawOp {
                    ticks,
                    object: 0x1000 + 0x1000 * k as u64,
                    site: 0x40_0000,
                    primitive: Primitive::Mutex,
                    phase,
                    stack: NO_STACK,
                };
                let ops = &mut thread_ops[t];
                let request = next_request[t];
                let acquired = request.max(free_at[k]);
                if acquired > request {
                    ops.push(op(request, Phase::Request));
                    ops.push(op(acquired, Phase::Acquired));
                } else {
                    ops.push(op(request, Phase::Immediate));
                }
                let mut released = acquired + 8 * (rng.below(3) + u64::from(!ties));
                if nested && t == 0 && rng.below(50) == 0 {
                    // the lock again inside the hold, released first
                    ops.push(op(released, Phase::Immediate));
                    released += 8;
                    ops.push(op(released, Phase::Release));
                    released += 8;
                }
                ops.push(op(released, Phase::Release));
                free_at[k] = released;
                next_request[t] = released + 8 * (rng.below(4) + u64::from(!ties));
            }
            let ops: Vec<(u32, Vec<RawOp>)> = (100..).zip(thread_ops).collect();
            let inputs: Vec<ThreadInput<'_>> = ops
                .iter()
                .map(|(tid, ops)| ThreadInput {
                    process: 0,
                    pid: 1,
                    tid: *tid,
                    ops: OpSource::Slice(ops),
                    clock: TimeMap::Identity,
                })
                .collect();
            let set = pair_operations(&inputs);
            let case = format!("{threads} threads, nested {nested}, ties {ties}");
            let runs = Wakes::build(&set, true);
            let merged = Wakes::build(&set, false);
            assert!(merged.runs.is_empty(), "{case}");
            assert_eq!(!runs.runs.is_empty(), kept, "{case}: runs kept");
            let n = set.events.len();
            let mut backward: Vec<usize> = (0..n).collect();
            backward.sort_by_key(|&i| std::cmp::Reverse(set.events[i].acquired_ns()));
            let forward: Vec<usize> = backward.iter().rev().copied().collect();
            let mut shuffled: Vec<usize> = (0..n).collect();
            for k in (1..n).rev() {
                shuffled.swap(k, rng.below(k as u64 + 1) as usize);
            }
            for (order, list) in [
                ("backward", &backward),
                ("forward", &forward),
                ("random", &shuffled),
            ] {
                let (mut a, mut b) = (runs.cursor(&set), merged.cursor(&set));
                let mut found = 0;
                for &i in list {
                    let w = runs.waker(&set, i, &mut a);
                    assert_eq!(
                        w,
                        merged.waker(&set, i, &mut b),
                        "{case}, {order}, event {i}"
                    );
                    found += usize::from(w != NONE);
                }
                assert!(found > 1000, "{case}: {found} wakers");
            }
            let path = mark_with(&set, true);
            assert_eq!(path, mark_with(&set, false), "{case}");
            assert!(ties || path.jumps > 1000, "{case}: {} jumps", path.jumps);
        }
    }

    /// Wake lists only placed, then ordered part by part as they are
    /// looked up, answer as the lists [`Wakes::build`] orders at once, in
    /// any order of lookups, and the critical path is the same; the walk
    /// orders only the parts it looks up. 64 locks, 6 threads, every
    /// acquisition of a random lock (contended when it is held), with and
    /// without runs kept.
    #[test]
    fn wake_lists_ordered_when_first_looked_up_answer_as_the_lists_ordered_at_once() {
        use contend_trace::{Phase, RawOp, NO_STACK};
        const LOCKS: u64 = 64;
        let threads = 6usize;
        let mut rng = crate::TestRng(0x9e37_79b9_7f4a_7c15);
        let mut next_request: Vec<u64> = (0..threads).map(|_| 1000 + rng.below(50)).collect();
        let mut thread_ops: Vec<Vec<RawOp>> = vec![Vec::new(); threads];
        let mut free_at = [0u64; LOCKS as usize];
        for _ in 0..threads * 3000 {
            let t = (0..threads).min_by_key(|&t| next_request[t]).unwrap();
            let k = rng.below(LOCKS) as usize;
            let op = |ticks, phase| RawOp {
                ticks,
                object: 0x1000 * (k as u64 + 1),
                site: 0x40_0000,
                primitive: Primitive::Mutex,
                phase,
                stack: NO_STACK,
            };
            let request = next_request[t];
            let acquired = request.max(free_at[k]);
            let ops = &mut thread_ops[t];
            if acquired > request {
                ops.push(op(request, Phase::Request));
                ops.push(op(acquired, Phase::Acquired));
            } else {
                ops.push(op(acquired, Phase::Immediate));
            }
            let released = acquired + 5 + rng.below(200);
            ops.push(op(released, Phase::Release));
            free_at[k] = released;
            next_request[t] = released + 1 + rng.below(100);
        }
        let set = crate::locks::events::pair_threads_from_memory(&thread_ops, 100);
        let waiting: Vec<usize> = (0..set.events.len())
            .filter(|&i| wait_of(&set, i).is_some())
            .collect();
        assert!(waiting.len() > 500, "{} contended events", waiting.len());
        for keep_runs in [false, true] {
            let all = Wakes::build(&set, keep_runs);
            assert!(all.ordered.iter().all(|&o| o));
            let mut shuffled = waiting.clone();
            for k in (1..shuffled.len()).rev() {
                shuffled.swap(k, rng.below(k as u64 + 1) as usize);
            }
            // A few lookups order a few parts, and only those.
            let mut lazy = Wakes::placed(&set, keep_runs);
            let unordered = lazy.ordered.iter().filter(|&&o| !o).count();
            assert!(unordered > 32, "{unordered} parts to order");
            let (mut a, mut b) = (all.cursor(&set), lazy.cursor(&set));
            let mut objects = std::collections::BTreeSet::new();
            for &i in &shuffled[..5] {
                objects.insert(wait_of(&set, i).unwrap().0);
                assert_eq!(
                    lazy.waker_ordering(&set, i, &mut b),
                    all.waker(&set, i, &mut a)
                );
            }
            let newly = unordered - lazy.ordered.iter().filter(|&&o| !o).count();
            assert!(
                newly <= objects.len(),
                "{newly} parts ordered for {objects:?}"
            );
            // Then every lookup, in random order and backward in time.
            for &i in &shuffled {
                assert_eq!(
                    lazy.waker_ordering(&set, i, &mut b),
                    all.waker(&set, i, &mut a),
                    "event {i}"
                );
            }
            let mut lazy = Wakes::placed(&set, keep_runs);
            let mut b = lazy.cursor(&set);
            let mut a = all.cursor(&set);
            for &i in waiting.iter().rev() {
                assert_eq!(
                    lazy.waker_ordering(&set, i, &mut b),
                    all.waker(&set, i, &mut a),
                    "event {i}"
                );
            }
            let path = mark_with(&set, keep_runs);
            assert_eq!(path, mark_using(&set, Wakes::build(&set, keep_runs)));
            assert!(path.jumps > 10, "{} jumps", path.jumps);
        }
    }

    /// The order check of [`Wakes::build`] on one object's wake events
    /// (each thread's together, as pairing places them) cut into chunks at
    /// every place (and into three): in order exactly when no thread's wake
    /// time goes back from one of its wakes to its next, in a chunk or
    /// across chunks, chunks without a wake between them included.
    #[test]
    fn wakes_in_order_by_thread_across_chunks() {
        let cases: [&[(u32, u64)]; 6] = [
            &[(0, 1), (0, 1), (0, 5), (1, 2), (1, 3), (2, 0)],
            &[(0, 1), (0, 5), (0, 4), (1, 2)],
            &[(0, 1), (0, 5), (1, 2), (1, 1)],
            &[(0, 5), (1, 1), (1, 0)],
            &[(0, 5), (1, 1), (1, 1), (2, 5)],
            &[],
        ];
        for wakes in cases {
            let expected = (0..wakes.len()).all(|k| {
                wakes[..k]
                    .iter()
                    .rev()
                    .find(|w| w.0 == wakes[k].0)
                    .is_none_or(|w| w.1 <= wakes[k].1)
            });
            let chunk = |part: &[(u32, u64)]| {
                let mut p = PlacedOrder::default();
                for &(thread, time) in part {
                    p.note(thread, time);
                }
                // object 0 only; object 1 never woken
                vec![p, PlacedOrder::default()]
            };
            for cut in 0..=wakes.len() {
                for cut2 in cut..=wakes.len() {
                    let chunks = [
                        chunk(&wakes[..cut]),
                        chunk(&[]),
                        chunk(&wakes[cut..cut2]),
                        chunk(&wakes[cut2..]),
                    ];
                    assert_eq!(
                        PlacedOrder::objects_in_order(&chunks, 2),
                        vec![expected, true],
                        "{wakes:?} cut at {cut}, {cut2}"
                    );
                }
            }
        }
    }

    /// Merging the runs gives the order of a stable sort by wake time,
    /// equal times in position order, for every number of runs up to the
    /// limit, found from the keys or taken from the threads' ranges; beyond
    /// the limit, or when a thread's wakes are out of time order, the part
    /// is left as it was.
    #[test]
    fn merged_runs_are_in_the_order_of_a_stable_sort() {
        for seed in 1..200u64 {
            let n = (seed as usize * 7) % 300;
            let runs = 1 + (seed as usize % (MERGE_RUNS_MAX - 1));
            let times = runs_of(seed, n, runs);
            let cut = n.div_ceil(runs.max(1));
            for set in [released_at(&times), in_threads(released_at(&times), cut)] {
                let threads = set.thread_ranges.len();
                let mut part: Vec<u32> = (0..n as u32).collect();
                let mut expected = part.clone();
                expected.sort_by_key(|&i| wake_time(&set, i as usize));
                assert!(
                    merge_wake_runs(&set, &mut part),
                    "seed {seed}: {runs} runs, {threads} threads"
                );
                assert_eq!(
                    part, expected,
                    "seed {seed}: {runs} runs of {n}, {threads} threads"
                );
            }
            // threads that cut across the runs: some thread's wakes are
            // out of time order (when the times are not all equal)
            let set = in_threads(released_at(&times), cut + 1);
            let mut part: Vec<u32> = (0..n as u32).collect();
            if merge_wake_runs(&set, &mut part) {
                let mut expected: Vec<u32> = (0..n as u32).collect();
                expected.sort_by_key(|&i| wake_time(&set, i as usize));
                assert_eq!(part, expected, "seed {seed}: threads across runs");
            } else {
                assert_eq!(part, (0..n as u32).collect::<Vec<_>>(), "seed {seed}");
            }
        }
        // one more run than the limit, found from the keys or one per
        // thread: untouched
        let n = 2 * MERGE_RUNS_MAX;
        let times: Vec<u64> = (0..n as u64).map(|i| (n as u64 - i) / 2).collect();
        for set in [released_at(&times), in_threads(released_at(&times), 1)] {
            let mut part: Vec<u32> = (0..n as u32).collect();
            assert!(!merge_wake_runs(&set, &mut part));
            assert_eq!(part, (0..n as u32).collect::<Vec<_>>());
        }
        // a thread whose wakes go back in time: untouched
        let set = in_threads(released_at(&[1, 5, 3, 7, 2, 8]), 3);
        let mut part: Vec<u32> = (0..6).collect();
        assert!(!merge_wake_runs(&set, &mut part));
        assert_eq!(part, (0..6).collect::<Vec<_>>());
        // a time a merge head cannot hold (2^60 ns or more), first in its
        // run or later: untouched (sorted instead)
        for times in [[2u64, 3, 1 << 61, 1 << 62], [1, 1 << 61, 2, 3]] {
            let mut set = released_at(&[0; 4]);
            for (e, &t) in set.events.iter_mut().zip(&times) {
                // requested, acquired and released at t (a lock event
                // holds its request time in full, durations in 48 bits)
                *e = LockEventFields {
                    requested_ns: t,
                    acquired_ns: t,
                    released_ns: t,
                    ..e.fields()
                }
                .pack();
            }
            let set = in_threads(set, 2);
            let mut part: Vec<u32> = (0..4).collect();
            assert!(!merge_wake_runs(&set, &mut part), "{times:?}");
            assert_eq!(part, (0..4).collect::<Vec<_>>());
        }
    }
}
