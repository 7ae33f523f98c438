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

use std::collections::HashMap;

use contend_trace::Primitive;

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
}

/// A point in time on one thread that can wake a waiter on one object.
#[derive(Clone, Copy)]
struct Wake {
    time_ns: u64,
    thread: u32,
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
    // Each thread's events ordered by acquisition time.
    let mut by_thread: Vec<Vec<usize>> = vec![Vec::new(); set.threads.len()];
    for (i, e) in set.events.iter().enumerate() {
        by_thread[e.thread as usize].push(i);
    }
    for v in &mut by_thread {
        v.sort_by_key(|&i| set.events[i].acquired_ns);
    }
    // Wake-up points per object: releases (locks), posts (semaphores),
    // arrivals (barriers).
    let mut wakes: HashMap<u32, Vec<Wake>> = HashMap::new();
    for e in &set.events {
        let time_ns = match (e.primitive, e.outcome) {
            (p, Outcome::Acquired) if p.is_lock() => e.released_ns,
            (Primitive::Semaphore, Outcome::Post) => e.released_ns,
            (Primitive::Barrier, _) => e.requested_ns,
            _ => continue,
        };
        wakes.entry(e.object).or_default().push(Wake {
            time_ns,
            thread: e.thread,
        });
    }
    for v in wakes.values_mut() {
        v.sort_by_key(|w| w.time_ns);
    }
    // Latest wake of `object` by a thread other than `thread`, in [lo, hi].
    let find_wake = |object: u32, thread: u32, lo: u64, hi: u64| -> Option<Wake> {
        let v = wakes.get(&object)?;
        let end = v.partition_point(|w| w.time_ns <= hi);
        v[..end]
            .iter()
            .rev()
            .take_while(|w| w.time_ns >= lo)
            .take(4096)
            .find(|w| w.thread != thread)
            .copied()
    };

    let Some(start) = (0..set.threads.len())
        .filter(|&t| !by_thread[t].is_empty())
        .max_by_key(|&t| (set.threads[t].last_ns, std::cmp::Reverse(t)))
    else {
        return path;
    };
    path.start_thread = Some(start as u32);
    let mut thread = start;
    let mut t_hi = set.threads[start].last_ns;
    // Position (exclusive) in by_thread[thread] of events not yet walked.
    let mut pos = by_thread[thread].partition_point(|&i| set.events[i].acquired_ns <= t_hi);
    while pos > 0 {
        pos -= 1;
        let i = by_thread[thread][pos];
        if path.on_path[i] {
            break;
        }
        let e = &set.events[i];
        if e.outcome == Outcome::Post {
            continue;
        }
        path.on_path[i] = true;
        if !(e.contended && e.outcome == Outcome::Acquired && e.acquired_ns > e.requested_ns) {
            continue;
        }
        let waker = match e.primitive {
            Primitive::Cond if e.cond_mutex != u32::MAX => {
                find_wake(e.cond_mutex, e.thread, e.requested_ns, e.acquired_ns)
            }
            Primitive::Cond => None,
            // Only a thread arriving after this one can have held it up.
            Primitive::Barrier => find_wake(e.object, e.thread, e.requested_ns, e.acquired_ns),
            _ => find_wake(e.object, e.thread, 0, e.acquired_ns),
        };
        if let Some(w) = waker {
            thread = w.thread as usize;
            t_hi = w.time_ns;
            pos = by_thread[thread].partition_point(|&k| set.events[k].acquired_ns <= t_hi);
            path.jumps += 1;
        }
    }
    path
}
