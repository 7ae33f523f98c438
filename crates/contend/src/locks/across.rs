//! The critical path across recorders: pthread hand-overs
//! ([`super::critical_path`]), futex hand-overs (a woken `FUTEX_WAIT` and
//! the `FUTEX_WAKE` that ended it, [`crate::futex::match_wakers`]) and
//! OpenMP hand-overs (critical section or OpenMP lock release → the next
//! acquisition; a barrier's last arriving thread → the waiters,
//! [`crate::openmp::sync`]), walked as one path after Chen & Stenström
//! (SC'12), as the thesis's mutex tool does for pthread mutexes (Venter
//! 2016, Section 3.2.2.2, Listing 3.5). docs/critical-path.md gives the
//! rules.
//!
//! Every event of every source is a step of its thread, ordered by the
//! time the thread went on after it (acquired, or the wait's return). The
//! walk starts at the end of the thread whose last recorded operation is
//! the latest and goes backward: each event met is on the path; at an
//! event with a waker it continues on the waker's thread from the moment
//! it let the waiter go (a release, a barrier arrival, the start of the
//! `FUTEX_WAKE` call). A futex wake is a point in time, not an event: the
//! walk lands at it and goes on with the events before it. Each event is
//! marked once, so the walk ends after at most one step per event:
//! O(n log n) with the sorting.
//!
//! With no futex or OpenMP event the walk is [`super::mark_critical_path`]
//! exactly (the same wakers, the same order), and the analysis uses that.

use std::collections::HashMap;

use serde::Serialize;

use super::critical_path::{lock_wake_time, lock_wakers, CriticalPath, EventMarks};
use super::events::{EventSet, Outcome};
use crate::futex::FutexEvents;
use crate::openmp::sync::OmpSyncEvent;

/// Which recorder an event of the path comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// A pthread lock, condition, barrier or semaphore event.
    Lock,
    /// A futex wait (`syscall(SYS_futex, …)`).
    Futex,
    /// An OpenMP mutex acquisition or barrier wait.
    Openmp,
}

/// One hand-over on the path: the thread that waited and the one that
/// let it go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HandOver {
    /// Recorder of both events.
    pub source: Source,
    /// The waiting event: index into `set.events`, `futex.waits` or the
    /// OpenMP events.
    pub waiting: u32,
    /// The waking event: index into `set.events`, `futex.wakes` or the
    /// OpenMP events.
    pub waking: u32,
    /// (pid, tid) of the waking thread.
    pub from: (u32, u32),
    /// (pid, tid) of the waiting thread.
    pub to: (u32, u32),
    /// When the waker let the waiter go, CLOCK_MONOTONIC ns.
    pub at_ns: u64,
}

/// The critical path over all sources.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AcrossPath {
    /// The pthread events on it, in the form of [`super::mark_critical_path`]
    /// (its `jumps` and `hand_overs` are the pthread hand-overs only).
    pub locks: CriticalPath,
    /// `futex_on_path[i]`: wait `i` of the futex events is on the path.
    pub futex_on_path: Vec<bool>,
    /// `omp_on_path[i]`: OpenMP event `i` is on the path.
    pub omp_on_path: Vec<bool>,
    /// Every hand-over, from the end of the run backward.
    pub hand_overs: Vec<HandOver>,
    /// (pid, tid) of the thread the walk started on (finished last).
    pub start: Option<(u32, u32)>,
    /// Where the path ends: the start thread's last recorded operation, ns.
    pub end_ns: u64,
    /// Where the recorded path begins: the earliest of the events' starts
    /// (requests, calls) on it and of the hand-over moments, ns.
    pub begin_ns: u64,
}

impl AcrossPath {
    /// end − begin, ns: the span of the run the recorded path explains.
    pub fn length_ns(&self) -> u64 {
        self.end_ns.saturating_sub(self.begin_ns)
    }
}

/// One event of a thread on the path's time line: 12 bytes (its time in
/// two halves, its source in the top 2 bits of its index), one per event of
/// every source (5 million for an OpenMP recording of 5 million
/// acquisitions: 60 MB, against 80 MB for a 16-byte node).
#[derive(Clone, Copy)]
struct Node {
    /// Time the thread went on after it, ns: low and high halves.
    key: [u32; 2],
    /// `source << 30 | index`.
    tagged: u32,
}

/// Events of one source a [`Node`] can index: 2^30.
pub const MAX_EVENTS_PER_SOURCE: usize = 1 << 30;

impl Node {
    #[inline]
    fn new(key: u64, source: Source, index: usize) -> Node {
        debug_assert!(index < MAX_EVENTS_PER_SOURCE);
        Node {
            key: [key as u32, (key >> 32) as u32],
            tagged: ((source as u32) << 30) | index as u32,
        }
    }

    /// Time the thread went on after it, ns.
    #[inline]
    fn key(&self) -> u64 {
        (u64::from(self.key[1]) << 32) | u64::from(self.key[0])
    }

    #[inline]
    fn source(&self) -> Source {
        match self.tagged >> 30 {
            0 => Source::Lock,
            1 => Source::Futex,
            _ => Source::Openmp,
        }
    }

    /// Index of the event in its source's events.
    #[inline]
    fn index(&self) -> u32 {
        self.tagged & ((1 << 30) - 1)
    }
}

/// Sorts one thread's nodes, pushed source after source (Lock, Futex,
/// Openmp) and each source's by index, by key; at equal keys in the order
/// pushed, as a stable sort by key would, but in place (the tag orders
/// by source, then index).
fn sort_nodes(list: &mut [Node]) {
    list.sort_unstable_by_key(|n| (n.key(), n.tagged));
}

/// Whether [`mark_across`] can take these events: fewer than
/// [`MAX_EVENTS_PER_SOURCE`] of each source.
pub fn fits(set: &EventSet, futex: &FutexEvents, omp: &[OmpSyncEvent]) -> bool {
    set.events.len() < MAX_EVENTS_PER_SOURCE
        && futex.waits.len() < MAX_EVENTS_PER_SOURCE
        && omp.len() < MAX_EVENTS_PER_SOURCE
}

/// The thread index of OpenMP events met in runs of one thread: it is
/// looked up once per run.
#[derive(Default)]
struct ThreadRun {
    last: Option<((u32, u32), usize)>,
}

impl ThreadRun {
    /// `e`'s thread index: the last one's when `e` has the same (process,
    /// thread), else what `look_up` gives for it.
    #[inline]
    fn thread(&mut self, e: &OmpSyncEvent, look_up: impl FnOnce((u32, u32)) -> usize) -> usize {
        let key = (e.process, e.tid);
        match self.last {
            Some((k, u)) if k == key => u,
            _ => {
                let u = look_up(key);
                self.last = Some((key, u));
                u
            }
        }
    }
}

/// Marks the critical path across pthread, futex and OpenMP events (module
/// docs). `futex` must have its wakers matched
/// ([`crate::futex::match_wakers`]), `omp` from [`crate::openmp::sync`];
/// `pids[p]` is the process id of process index `p` (an OpenMP event names
/// its process by index; empty when `omp` is).
///
/// Panics when a source has [`MAX_EVENTS_PER_SOURCE`] events or more
/// (check with [`fits`]).
pub fn mark_across(
    set: &EventSet,
    futex: &FutexEvents,
    omp: &[OmpSyncEvent],
    pids: &[u32],
) -> AcrossPath {
    assert!(
        fits(set, futex, omp),
        "more than {MAX_EVENTS_PER_SOURCE} events of one source"
    );
    let mut path = AcrossPath {
        locks: CriticalPath {
            on_path: EventMarks::new(set.events.len()),
            ..CriticalPath::default()
        },
        futex_on_path: vec![false; futex.waits.len()],
        omp_on_path: vec![false; omp.len()],
        ..AcrossPath::default()
    };
    // Threads: pthread threads first, in their order, then the others.
    let mut index: HashMap<(u32, u32), usize> = HashMap::new();
    let mut ids: Vec<(u32, u32)> = Vec::new();
    let mut last: Vec<u64> = Vec::new();
    let mut pthread_index: Vec<Option<u32>> = Vec::new();
    let mut thread_of = |process: u32, tid: u32, pid: u32| -> usize {
        *index.entry((process, tid)).or_insert_with(|| {
            ids.push((pid, tid));
            last.push(0);
            pthread_index.push(None);
            ids.len() - 1
        })
    };
    let lock_threads: Vec<usize> = set
        .threads
        .iter()
        .map(|t| thread_of(t.process, t.tid, t.pid))
        .collect();
    // thread per event as u32 (one per OpenMP event: millions)
    let mut thread_u32 = |process: u32, tid: u32, pid: u32| thread_of(process, tid, pid) as u32;
    let futex_threads: Vec<u32> = futex
        .waits
        .iter()
        .map(|w| thread_u32(w.process, w.tid, w.pid))
        .collect();
    let wake_threads: Vec<u32> = futex
        .wakes
        .iter()
        .map(|w| thread_u32(w.process, w.tid, w.pid))
        .collect();
    // OpenMP events come thread by thread (`openmp::sync::collect`), so a
    // thread is looked up once per run of its events, and not stored per
    // event (4 bytes each: 20 MB for 5 million acquisitions).
    let mut registering = ThreadRun::default();
    for e in omp {
        registering.thread(e, |(process, tid)| {
            thread_of(process, tid, pids[process as usize])
        });
    }
    let n_threads = ids.len();
    let mut omp_run = ThreadRun::default();
    let mut omp_thread = |e: &OmpSyncEvent| omp_run.thread(e, |key| index[&key]);
    // Each thread's nodes at their final size (grown by doubling they took
    // up to twice it).
    let mut counts = vec![0usize; n_threads];
    for e in &set.events {
        counts[lock_threads[e.thread() as usize]] += 1;
    }
    for &u in &futex_threads {
        counts[u as usize] += 1;
    }
    for e in omp {
        counts[omp_thread(e)] += 1;
    }
    let mut nodes: Vec<Vec<Node>> = counts.into_iter().map(Vec::with_capacity).collect();
    let mut has_events = vec![false; n_threads];
    for (t, &u) in lock_threads.iter().enumerate() {
        pthread_index[u] = Some(t as u32);
    }
    for (i, e) in set.events.iter().enumerate() {
        let u = lock_threads[e.thread() as usize];
        nodes[u].push(Node::new(e.acquired_ns(), Source::Lock, i));
        has_events[u] = true;
    }
    for (t, info) in set.threads.iter().enumerate() {
        let u = lock_threads[t];
        last[u] = last[u].max(info.last_ns);
    }
    for (i, w) in futex.waits.iter().enumerate() {
        let u = futex_threads[i] as usize;
        nodes[u].push(Node::new(w.end_ns, Source::Futex, i));
        has_events[u] = true;
        last[u] = last[u].max(w.end_ns);
    }
    for (i, w) in futex.wakes.iter().enumerate() {
        let u = wake_threads[i] as usize;
        last[u] = last[u].max(w.end_ns);
    }
    for (i, e) in omp.iter().enumerate() {
        let u = omp_thread(e);
        nodes[u].push(Node::new(e.acquired_ns, Source::Openmp, i));
        has_events[u] = true;
        last[u] = last[u].max(e.released_ns);
    }
    // By key; at equal keys in the order pushed (sources in the order
    // Lock, Futex, Openmp, each by index), the order a stable sort by key
    // gives, without its buffer of half the list.
    for list in &mut nodes {
        sort_nodes(list);
    }
    let lock_waker = lock_wakers(set);

    let Some(start) = (0..n_threads)
        .filter(|&t| has_events[t])
        .max_by_key(|&t| (last[t], std::cmp::Reverse(t)))
    else {
        return path;
    };
    path.start = Some(ids[start]);
    path.locks.start_thread = pthread_index[start];
    path.end_ns = last[start];
    path.begin_ns = path.end_ns;
    let mut thread = start;
    let mut pos = nodes[thread].partition_point(|n| n.key() <= path.end_ns);
    while pos > 0 {
        pos -= 1;
        let node = nodes[thread][pos];
        let i = node.index() as usize;
        let seen = match node.source() {
            Source::Lock => path.locks.on_path[i],
            Source::Futex => path.futex_on_path[i],
            Source::Openmp => path.omp_on_path[i],
        };
        if seen {
            break;
        }
        if node.source() == Source::Lock && set.events[i].outcome() == Outcome::Post {
            continue;
        }
        match node.source() {
            Source::Lock => path.locks.on_path.set(i),
            Source::Futex => path.futex_on_path[i] = true,
            Source::Openmp => path.omp_on_path[i] = true,
        }
        // The waker: (its thread, the moment it let the waiter go, its index).
        let waker = match node.source() {
            Source::Lock => Some(lock_waker[i]).filter(|&w| w != u32::MAX).map(|w| {
                let t = lock_threads[set.events[w as usize].thread() as usize];
                (t, lock_wake_time(set, w as usize), w)
            }),
            Source::Futex => futex.waits[i]
                .waker
                .map(|k| (wake_threads[k] as usize, futex.wakes[k].start_ns, k as u32)),
            Source::Openmp => omp[i].waker().map(|k| {
                (
                    index[&(omp[k].process, omp[k].tid)],
                    omp[k].wake_ns(),
                    k as u32,
                )
            }),
        };
        let Some((to_thread, at, w)) = waker else {
            // its start (request, call), read from its source: a node is
            // 16 bytes, one per event of every source (millions)
            let start = match node.source() {
                Source::Lock => set.events[i].requested_ns(),
                Source::Futex => futex.waits[i].start_ns,
                Source::Openmp => omp[i].requested_ns,
            };
            path.begin_ns = path.begin_ns.min(start);
            continue;
        };
        path.begin_ns = path.begin_ns.min(at);
        if node.source() == Source::Lock {
            path.locks.hand_overs.push((i as u32, w));
            path.locks.jumps += 1;
        }
        path.hand_overs.push(HandOver {
            source: node.source(),
            waiting: i as u32,
            waking: w,
            from: ids[to_thread],
            to: ids[thread],
            at_ns: at,
        });
        thread = to_thread;
        pos = nodes[thread].partition_point(|n| n.key() <= at);
    }
    path
}

/// The critical path across recorders in the report (JSON
/// `locks.critical_path.across`, present only when futex or OpenMP events
/// were recorded; docs/json.md).
#[derive(Debug, Clone, Serialize, Default, PartialEq)]
pub struct AcrossSummary {
    /// Process id of the thread the walk started on (finished last).
    pub start_pid: u32,
    /// Its thread id.
    pub start_tid: u32,
    /// end − begin of the recorded path, ns: from the earliest event start
    /// or hand-over on it to the last recorded operation of the run.
    pub length_ns: u64,
    /// Events on the path, every source.
    pub events: u64,
    /// Hand-overs (jumps) on the path, every source.
    pub jumps: u64,
    /// pthread events on the path.
    pub lock_events: u64,
    /// pthread hand-overs on the path.
    pub lock_jumps: u64,
    /// Futex waits on the path.
    pub futex_events: u64,
    /// Σ their wait, ns.
    pub futex_wait_ns: u64,
    /// Futex hand-overs (wake → woken wait) on the path.
    pub futex_jumps: u64,
    /// OpenMP mutex acquisitions and barrier waits on the path.
    pub openmp_events: u64,
    /// Σ their wait, ns.
    pub openmp_wait_ns: u64,
    /// OpenMP hand-overs (release → acquisition, last arrival → waiter) on
    /// the path.
    pub openmp_jumps: u64,
    /// The hand-overs on the path per source, object and pair of threads,
    /// most first.
    pub hand_overs: Vec<HandOverRow>,
}

/// Hand-overs on the critical path between two threads through one
/// object.
#[derive(Debug, Clone, Serialize, Default, PartialEq)]
pub struct HandOverRow {
    /// `lock`, `futex` or `openmp`.
    pub source: String,
    /// The object: lock or futex word (symbol, else address), OpenMP
    /// mutex (kind and symbol or wait id: `critical 0x…`), OpenMP barrier
    /// (its kind: `implicit barrier`).
    pub object: String,
    /// Process id.
    pub pid: u32,
    /// The waking thread.
    pub from_tid: u32,
    /// The waiting thread.
    pub to_tid: u32,
    /// Hand-overs.
    pub count: u64,
    /// Σ wait of the waiting events, ns.
    pub wait_ns: u64,
}

/// (source, object name, pid, from tid, to tid) of a hand-over row.
type HandOverKey = (Source, String, u32, u32, u32);

/// Sums a marked path into its report form; `object` names the object of
/// a hand-over (its source and the waiting event's index).
pub fn summarize(
    path: &AcrossPath,
    set: &EventSet,
    futex: &FutexEvents,
    omp: &[OmpSyncEvent],
    mut object: impl FnMut(Source, u32) -> String,
) -> AcrossSummary {
    let mut s = AcrossSummary::default();
    if let Some((pid, tid)) = path.start {
        s.start_pid = pid;
        s.start_tid = tid;
    }
    s.length_ns = path.length_ns();
    s.lock_events = path.locks.on_path.count() as u64;
    s.lock_jumps = path.locks.jumps;
    for (i, _) in path.futex_on_path.iter().enumerate().filter(|x| *x.1) {
        s.futex_events += 1;
        s.futex_wait_ns += futex.waits[i].wait_ns();
    }
    for (i, _) in path.omp_on_path.iter().enumerate().filter(|x| *x.1) {
        s.openmp_events += 1;
        s.openmp_wait_ns += omp[i].wait_ns();
    }
    let mut rows: HashMap<HandOverKey, (u64, u64)> = HashMap::new();
    for h in &path.hand_overs {
        let wait = match h.source {
            Source::Lock => {
                let e = &set.events[h.waiting as usize];
                e.acquired_ns().saturating_sub(e.requested_ns())
            }
            Source::Futex => {
                s.futex_jumps += 1;
                futex.waits[h.waiting as usize].wait_ns()
            }
            Source::Openmp => {
                s.openmp_jumps += 1;
                omp[h.waiting as usize].wait_ns()
            }
        };
        let r = rows
            .entry((
                h.source,
                object(h.source, h.waiting),
                h.to.0,
                h.from.1,
                h.to.1,
            ))
            .or_default();
        r.0 += 1;
        r.1 += wait;
    }
    s.events = s.lock_events + s.futex_events + s.openmp_events;
    s.jumps = path.hand_overs.len() as u64;
    let mut rows: Vec<HandOverRow> = rows
        .into_iter()
        .map(
            |((source, object, pid, from_tid, to_tid), (count, wait_ns))| HandOverRow {
                source: match source {
                    Source::Lock => "lock",
                    Source::Futex => "futex",
                    Source::Openmp => "openmp",
                }
                .to_string(),
                object,
                pid,
                from_tid,
                to_tid,
                count,
                wait_ns,
            },
        )
        .collect();
    rows.sort_by(|a, b| {
        b.count
            .cmp(&a.count)
            .then(b.wait_ns.cmp(&a.wait_ns))
            .then(a.source.cmp(&b.source))
            .then(a.object.cmp(&b.object))
            .then(a.from_tid.cmp(&b.from_tid))
            .then(a.to_tid.cmp(&b.to_tid))
    });
    s.hand_overs = rows;
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A node is 12 bytes: one per event of every source, millions for an
    /// OpenMP recording (its start is read from the source when needed);
    /// it gives back the time, source and index it was made from, at the
    /// edges of its split key and its 30-bit index.
    #[test]
    fn a_node_is_12_bytes_and_keeps_what_it_was_given() {
        assert_eq!(std::mem::size_of::<Node>(), 12);
        for key in [0, u64::from(u32::MAX), 1 << 32, u64::MAX] {
            for source in [Source::Lock, Source::Futex, Source::Openmp] {
                for index in [0, 1, MAX_EVENTS_PER_SOURCE - 1] {
                    let n = Node::new(key, source, index);
                    assert_eq!(
                        (n.key(), n.source(), n.index() as usize),
                        (key, source, index)
                    );
                }
            }
        }
    }

    /// Random lists pushed as `mark_across` pushes them, with many equal
    /// keys: the in-place sort gives the stable sort's order.
    #[test]
    fn nodes_sort_as_a_stable_sort_by_key() {
        let mut rng = crate::TestRng(0x9E37_79B9_7F4A_7C15);
        let mut next = move || rng.next();
        for _ in 0..300 {
            let mut list = Vec::new();
            for source in [Source::Lock, Source::Futex, Source::Openmp] {
                for index in 0..next() % 20 {
                    // Keys in both halves of the node's split key, with ties.
                    let key = ((next() % 3) << 32) | (next() % 3);
                    list.push(Node::new(key, source, index as usize * 3));
                }
            }
            let mut stable = list.clone();
            stable.sort_by_key(|n| n.key());
            sort_nodes(&mut list);
            let order = |l: &[Node]| {
                l.iter()
                    .map(|n| (n.key(), n.source(), n.index()))
                    .collect::<Vec<_>>()
            };
            assert_eq!(order(&list), order(&stable));
        }
    }
}
