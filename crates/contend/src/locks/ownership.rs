//! Ownership changes per lock: how often a lock was acquired by a thread
//! other than the one that acquired it before (mutrace's "Changed" column,
//! Poettering 2009). A lock that changes hands often moves its cache line
//! and its protected data between cores on every hand-over, even when no
//! acquisition waits; a lock taken by one thread again and again does not.

use rayon::prelude::*;

use super::events::{EventSet, Outcome};

/// Per object of `set` (`changes[i]` for `set.objects[i]`): the number of
/// successful acquisitions whose thread differs from the thread of the
/// previous successful acquisition of the same object, in acquisition-time
/// order. Mutexes, rwlocks (readers and writers alike) and spinlocks only;
/// condition, barrier and semaphore objects count 0. Counted over the
/// whole recording, whatever the report's filters select (like the
/// critical path). An object acquired by one thread only counts 0.
///
/// O(n log k) in the acquisitions of objects used by more than one thread,
/// k the runs already in time order (each thread's acquisitions; merged
/// per object, in parallel over objects); 4 bytes of memory per such
/// acquisition (O(n log n) and 16 bytes more for an object whose
/// acquisitions come in more than 64 runs).
pub fn ownership_changes(set: &EventSet) -> Vec<u64> {
    let objects = set.objects.len();
    // First thread seen per object, and whether a second one appeared: only
    // objects used by several threads need their acquisitions sorted.
    let mut first_thread: Vec<u32> = vec![u32::MAX; objects];
    let mut shared: Vec<bool> = vec![false; objects];
    for e in &set.events {
        if !e.is_lock() || e.outcome != Outcome::Acquired {
            continue;
        }
        let o = e.object as usize;
        if first_thread[o] == u32::MAX {
            first_thread[o] = e.thread;
        } else if first_thread[o] != e.thread {
            shared[o] = true;
        }
    }
    // The acquisitions of each shared object as event indices, 4 bytes
    // each, in one flat array (a counting sort on the object, which keeps
    // event order), `start[o]..start[o + 1]` for object `o`.
    let counts_as = |e: &super::events::LockEvent| {
        e.is_lock() && e.outcome == Outcome::Acquired && shared[e.object as usize]
    };
    let mut start = vec![0usize; objects + 1];
    for e in &set.events {
        if counts_as(e) {
            start[e.object as usize + 1] += 1;
        }
    }
    for o in 0..objects {
        start[o + 1] += start[o];
    }
    let mut indices = vec![0u32; start[objects]];
    let mut next = start[..objects].to_vec();
    for (i, e) in set.events.iter().enumerate() {
        if counts_as(e) {
            let at = &mut next[e.object as usize];
            indices[*at] = i as u32;
            *at += 1;
        }
    }
    let mut parts: Vec<&[u32]> = Vec::with_capacity(objects);
    let mut rest = indices.as_slice();
    for o in 0..objects {
        let (head, tail) = rest.split_at(start[o + 1] - start[o]);
        parts.push(head);
        rest = tail;
    }
    parts
        .into_par_iter()
        .map(|part| changes_in_order(set, part))
        .collect()
}

/// Most runs [`changes_in_order`] merges through a heap of run heads;
/// beyond, it sorts a copy.
const MERGE_RUNS_MAX: usize = 64;

/// The thread changes along one object's acquisitions (`part`, event
/// indices in event order) ordered by (acquisition time, thread): ties in
/// time are ordered by thread, so a change is counted at most once for a
/// pair of simultaneous acquisitions. The acquisitions come as runs
/// already in that order (each thread's, in its event order); with at most
/// [`MERGE_RUNS_MAX`] runs they are merged through a heap of run heads
/// without a copy, else a (time, thread) copy is sorted.
fn changes_in_order(set: &EventSet, part: &[u32]) -> u64 {
    let key = |i: u32| {
        let e = &set.events[i as usize];
        (e.acquired_ns, e.thread)
    };
    let mut runs: Vec<(usize, usize)> = Vec::new();
    let mut begin = 0;
    for k in 1..part.len() {
        if key(part[k]) < key(part[k - 1]) {
            runs.push((begin, k));
            begin = k;
            if runs.len() > MERGE_RUNS_MAX {
                break;
            }
        }
    }
    if runs.len() > MERGE_RUNS_MAX {
        let mut v: Vec<(u64, u32)> = part.iter().map(|&i| key(i)).collect();
        v.sort_unstable();
        return v.windows(2).filter(|w| w[0].1 != w[1].1).count() as u64;
    }
    runs.push((begin, part.len()));
    use std::cmp::Reverse;
    let mut heap: std::collections::BinaryHeap<Reverse<((u64, u32), u32)>> = runs
        .iter()
        .enumerate()
        .filter(|(_, &(a, b))| a < b)
        .map(|(r, &(a, _))| Reverse((key(part[a]), r as u32)))
        .collect();
    let mut next: Vec<usize> = runs.iter().map(|&(a, _)| a).collect();
    let mut previous: Option<u32> = None;
    let mut changes = 0u64;
    while let Some(mut top) = heap.peek_mut() {
        let ((_, thread), r) = top.0;
        let r = r as usize;
        changes += u64::from(previous.is_some_and(|p| p != thread));
        previous = Some(thread);
        next[r] += 1;
        if next[r] < runs[r].1 {
            top.0 .0 = key(part[next[r]]);
        } else {
            std::collections::binary_heap::PeekMut::pop(top);
        }
    }
    changes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::locks::events::{LockEvent, ObjectKey, ThreadInfo};
    use contend_trace::Primitive;

    fn event(thread: u32, object: u32, acquired_ns: u64, primitive: Primitive) -> LockEvent {
        LockEvent {
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
            cond_mutex: u32::MAX,
            stack: contend_trace::NO_STACK,
        }
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
        let mut failed = event(0, 1, 25, m);
        failed.outcome = Outcome::Busy;
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

    /// The merge of runs and the sort it falls back on give the same
    /// count. Thread A's acquisitions of lock 0 at 10, 30, then (out of
    /// order) 20, 40 are two runs; thread B's at 30 (tied with A's: by
    /// thread, A first) and 35. In (time, thread) order: A10 A20 A30 B30
    /// B35 A40 = 2 changes (A→B, B→A). Lock 1: 70 runs of one acquisition
    /// each, alternating A and B backward in time (more runs than are
    /// merged, so sorted): 69 changes.
    #[test]
    fn runs_out_of_order_are_merged_or_sorted() {
        let m = Primitive::Mutex;
        let mut events = vec![
            event(0, 0, 10, m),
            event(0, 0, 30, m),
            event(0, 0, 20, m),
            event(0, 0, 40, m),
            event(1, 0, 30, m),
            event(1, 0, 35, m),
        ];
        let (a, b): (Vec<LockEvent>, Vec<LockEvent>) = (0..70u64)
            .map(|k| event((k % 2) as u32, 1, 1000 - k, m))
            .partition(|e| e.thread == 0);
        events.extend(a);
        events.extend(b);
        let s = set(events, 2, 2);
        assert_eq!(ownership_changes(&s), vec![2, 69]);
    }
}
