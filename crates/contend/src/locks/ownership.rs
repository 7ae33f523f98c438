//! Ownership changes per lock: how often a lock was acquired by a thread
//! other than the one that acquired it before (mutrace's "Changed" column,
//! Poettering 2009). A lock that changes hands often moves its cache line
//! and its protected data between cores on every hand-over, even when no
//! acquisition waits; a lock taken by one thread again and again does not.

use std::cmp::Reverse;
use std::collections::binary_heap::{BinaryHeap, PeekMut};

use super::critical_path::ThreadOrder;
use super::events::{EventSet, Outcome};
use crate::chunked_sort::{least_head, merge_head, EXHAUSTED};

/// Threads up to which [`ownership_changes`] merges without a heap.
const FEW_THREADS: usize = 16;

/// Per object of `set` (`changes[i]` for `set.objects[i]`): the number of
/// successful acquisitions whose thread differs from the thread of the
/// previous successful acquisition of the same object, in acquisition-time
/// order (at equal times, in thread-index order). Mutexes, rwlocks
/// (readers and writers alike) and spinlocks only; condition, barrier and
/// semaphore objects count 0. Counted over the whole recording, whatever
/// the report's filters select (like the critical path). An object
/// acquired by one thread only counts 0.
///
/// One merge of the threads' acquisitions by (acquisition time, thread)
/// (each thread's events are already in acquisition order, nearly always
/// as they lie in `set.events`), remembering the last acquiring thread of
/// every object: up to 16 threads the least head is taken without a branch
/// per thread (O(n · threads), faster there than a heap, whose winner is as
/// good as random), else from a heap (O(n log threads)); one `u32` of
/// memory per object and one head per thread; no copy of the acquisitions
/// and no sort.
pub fn ownership_changes(set: &EventSet) -> Vec<u64> {
    let objects = set.objects.len();
    let order = ThreadOrder::build(set);
    let events = &set.events;
    // The thread's next successful lock acquisition at or after position
    // `k` of its order: (acquisition time, position).
    let next = |t: usize, mut k: usize| -> Option<(u64, usize)> {
        while k < order.len(t) {
            let e = &events[order.at(t, k)];
            if e.is_lock() && e.outcome() == Outcome::Acquired {
                return Some((e.acquired_ns(), k));
            }
            k += 1;
        }
        None
    };
    let object = |t: usize, k: usize| events[order.at(t, k)].object as usize;
    let threads = set.threads.len();
    // With few threads, the least head is taken without a branch per
    // thread (chunked_sort::least_head); otherwise (or should a time be
    // too large for a merge head, counting again) from a heap.
    let mut owners = Owners::new(objects);
    let merged = threads <= FEW_THREADS
        && merge_by_least_head(threads, next, |t, k| owners.acquired(object(t, k), t));
    if !merged {
        owners = Owners::new(objects);
        merge_by_heap(threads, next, |t, k| owners.acquired(object(t, k), t));
    }
    owners.changes
}

/// Each object's ownership changes so far and its last acquiring thread.
struct Owners {
    changes: Vec<u64>,
    last_thread: Vec<u32>,
}

impl Owners {
    fn new(objects: usize) -> Owners {
        Owners {
            changes: vec![0; objects],
            last_thread: vec![u32::MAX; objects],
        }
    }

    /// A successful acquisition of object `o` by thread `t`, in time
    /// order: a hand-over when another thread acquired it last.
    #[inline]
    fn acquired(&mut self, o: usize, t: usize) {
        let last = &mut self.last_thread[o];
        self.changes[o] += u64::from(*last != u32::MAX && *last != t as u32);
        *last = t as u32;
    }
}

/// Calls `visit(thread, position)` for every acquisition `next` gives
/// (`next(t, k)`: thread `t`'s next one at or after position `k`, with its
/// time), in (time, thread) order, taking the least head without a branch
/// per thread (at most [`FEW_THREADS`]). False, after visiting a prefix,
/// when a time is too large for a merge head.
fn merge_by_least_head(
    threads: usize,
    next: impl Fn(usize, usize) -> Option<(u64, usize)>,
    mut visit: impl FnMut(usize, usize),
) -> bool {
    let mut heads: Vec<u64> = vec![EXHAUSTED; threads.max(1)];
    let mut at = vec![0usize; threads];
    for t in 0..threads {
        if let Some((time, k)) = next(t, 0) {
            let Some(h) = merge_head(time, t) else {
                return false;
            };
            (heads[t], at[t]) = (h, k);
        }
    }
    loop {
        let (t, least) = least_head(&heads);
        if least == EXHAUSTED {
            return true;
        }
        visit(t, at[t]);
        heads[t] = match next(t, at[t] + 1) {
            Some((time, k)) => {
                at[t] = k;
                let Some(h) = merge_head(time, t) else {
                    return false;
                };
                h
            }
            None => EXHAUSTED,
        };
    }
}

/// [`merge_by_least_head`]'s visits, in the same order, taking the least
/// head from a heap (any number of threads, any time).
fn merge_by_heap(
    threads: usize,
    next: impl Fn(usize, usize) -> Option<(u64, usize)>,
    mut visit: impl FnMut(usize, usize),
) {
    let mut heads: BinaryHeap<Reverse<(u64, u32, usize)>> = BinaryHeap::with_capacity(threads);
    for t in 0..threads {
        if let Some((time, k)) = next(t, 0) {
            heads.push(Reverse((time, t as u32, k)));
        }
    }
    while let Some(mut top) = heads.peek_mut() {
        let Reverse((_, t, k)) = *top;
        visit(t as usize, k);
        match next(t as usize, k + 1) {
            Some((time, k)) => *top = Reverse((time, t, k)),
            None => {
                PeekMut::pop(top);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::locks::events::{LockEvent, LockEventFields, ObjectKey, ThreadInfo};
    use contend_trace::Primitive;

    fn event(thread: u32, object: u32, acquired_ns: u64, primitive: Primitive) -> LockEvent {
        LockEventFields {
            thread,
            object,
            site: 0,
            primitive,
            outcome: Outcome::Acquired,
            requested_ns: acquired_ns,
            acquired_ns,
            released_ns: acquired_ns + 1,
            contended: false,
            unreleased: false,
        }
        .pack()
    }

    fn set(events: Vec<LockEvent>, objects: usize, threads: usize) -> EventSet {
        EventSet {
            events,
            threads: (0..threads)
                .map(|t| ThreadInfo {
                    pid: 1,
                    tid: 10 + t as u32,
                    process: 0,
                    first_ns: 0,
                    last_ns: 100,
                    name: None,
                })
                .collect(),
            objects: (0..objects)
                .map(|o| ObjectKey {
                    process: 0,
                    address: 0x1000 + o as u64,
                })
                .collect(),
            object_kinds: vec![Primitive::Mutex; objects],
            ..EventSet::default()
        }
    }

    /// Worked by hand: lock 0 is acquired by threads A A B A B B (in time
    /// order, though the events are stored thread by thread): A→B, B→A,
    /// A→B = 3 changes. Lock 1 only by B: 0. A failed try-lock by A on
    /// lock 1 is no acquisition and changes nothing.
    #[test]
    fn counts_hand_overs_in_time_order() {
        let m = Primitive::Mutex;
        let failed = LockEventFields {
            outcome: Outcome::Busy,
            ..event(0, 1, 25, m).fields()
        }
        .pack();
        let s = set(
            vec![
                // Thread A (0): times 10, 20, 40 on lock 0.
                event(0, 0, 10, m),
                event(0, 0, 20, m),
                event(0, 0, 40, m),
                failed,
                // Thread B (1): times 30, 50, 60 on lock 0; 5, 15 on lock 1.
                event(1, 0, 30, m),
                event(1, 0, 50, m),
                event(1, 0, 60, m),
                event(1, 1, 5, m),
                event(1, 1, 15, m),
            ],
            2,
            2,
        );
        assert_eq!(ownership_changes(&s), vec![3, 0]);
    }

    /// Condition waits are no acquisitions of a lock: 0 whatever the threads.
    #[test]
    fn waits_are_not_acquisitions() {
        let c = Primitive::Cond;
        let s = set(
            vec![event(0, 0, 1, c), event(1, 0, 2, c), event(0, 0, 3, c)],
            1,
            2,
        );
        assert_eq!(ownership_changes(&s), vec![0]);
    }

    /// Ownership changes of one mutex acquired by two threads at
    /// `(thread, time)`, stored in the order given.
    fn one_lock(acquisitions: &[(u32, u64)]) -> u64 {
        let events = acquisitions
            .iter()
            .map(|&(t, at)| event(t, 0, at, Primitive::Mutex))
            .collect();
        ownership_changes(&set(events, 1, 2))[0]
    }

    /// Worked by hand: simultaneous acquisitions are ordered by thread
    /// index. Lock 0: A@10, B@10, B@20, A@20 → (10 A) (10 B) (20 A) (20 B):
    /// 3 changes, whatever order the events are stored in.
    #[test]
    fn equal_times_are_ordered_by_thread() {
        assert_eq!(one_lock(&[(1, 10), (1, 20), (0, 10), (0, 20)]), 3);
    }

    /// Times a merge head cannot hold (2^60 ns and more: a clock gone
    /// wrong) are merged all the same, by the heap, from the start or
    /// after the merge met the first of them: the cases above, shifted.
    #[test]
    fn times_past_a_merge_heads_reach_are_merged_by_the_heap() {
        for shift in [1u64 << 61, u64::MAX / 2] {
            let at = |t: u64| shift + t;
            assert_eq!(
                one_lock(&[(1, at(10)), (1, at(20)), (0, at(10)), (0, at(20))]),
                3
            );
            assert_eq!(
                one_lock(&[(0, at(30)), (0, at(10)), (1, at(20)), (1, at(40))]),
                3
            );
        }
        // the first acquisitions in reach, a later one not
        assert_eq!(one_lock(&[(0, 10), (0, 1 << 62), (1, 20), (1, 30)]), 2);
        assert_eq!(one_lock(&[(0, 10), (1, 20), (0, 30), (1, 1 << 62)]), 3);
    }

    /// A thread whose events are not stored in acquisition order (A's at
    /// 30 then 10) is merged by time: A@10, B@20, A@30 → 2 changes; with
    /// B@40 added, A10 B20 A30 B40 → 3.
    #[test]
    fn threads_out_of_acquisition_order_are_merged_by_time() {
        assert_eq!(one_lock(&[(0, 30), (0, 10), (1, 20)]), 2);
        assert_eq!(one_lock(&[(0, 30), (0, 10), (1, 20), (1, 40)]), 3);
    }
}
