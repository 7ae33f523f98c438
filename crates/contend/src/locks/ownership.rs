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
/// O(n log n) in the acquisitions of objects used by more than one thread
/// (sorted per object, in parallel over objects); 16 bytes of memory per
/// such acquisition.
pub fn ownership_changes(set: &EventSet) -> Vec<u64> {
    let objects = set.objects.len();
    // First thread seen per object, and whether a second one appeared: only
    // objects used by several threads need their acquisitions sorted.
    let mut first_thread: Vec<u32> = vec![u32::MAX; objects];
    let mut shared: Vec<bool> = vec![false; objects];
    for e in &set.events {
        if !e.is_lock() || e.outcome() != Outcome::Acquired {
            continue;
        }
        let o = e.object as usize;
        if first_thread[o] == u32::MAX {
            first_thread[o] = e.thread();
        } else if first_thread[o] != e.thread() {
            shared[o] = true;
        }
    }
    // The shared objects' acquisitions grouped by object (a counting sort
    // of event indices, 4 bytes each); each object's (time, thread) pairs
    // are then made at their exact number, sorted and counted on their
    // own, one object after another, so only one object's acquisitions
    // take 16 bytes each at a time.
    let mut counts = vec![0usize; objects + 1];
    for e in &set.events {
        if e.is_lock() && e.outcome() == Outcome::Acquired && shared[e.object as usize] {
            counts[e.object as usize + 1] += 1;
        }
    }
    for o in 0..objects {
        counts[o + 1] += counts[o];
    }
    let starts = counts.clone();
    let mut order = vec![0u32; counts[objects]];
    for (i, e) in set.events.iter().enumerate() {
        if e.is_lock() && e.outcome() == Outcome::Acquired && shared[e.object as usize] {
            let k = &mut counts[e.object as usize];
            order[*k] = i as u32;
            *k += 1;
        }
    }
    (0..objects)
        .map(|o| {
            let indices = &order[starts[o]..starts[o + 1]];
            let mut v: Vec<(u64, u32)> = indices
                .iter()
                .map(|&i| {
                    let e = &set.events[i as usize];
                    (e.acquired_ns(), e.thread())
                })
                .collect();
            // Ties in time are ordered by thread: a change is counted at
            // most once for a pair of simultaneous acquisitions. A large
            // object is sorted by both cores in place.
            if v.len() > 1 << 16 {
                v.par_sort_unstable();
            } else {
                v.sort_unstable();
            }
            v.windows(2).filter(|w| w[0].1 != w[1].1).count() as u64
        })
        .collect()
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
}
