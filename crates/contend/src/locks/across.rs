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

use rustc_hash::FxHashMap;

use serde::Serialize;

use super::critical_path::{lock_wake_time, lock_wakers, CriticalPath, EventMarks, Lane};
use super::events::{EventSet, Outcome};
use crate::futex::{FutexEvents, FutexWait, FutexWake};
use crate::openmp::sync::OmpSyncEvents;

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

/// The lanes of `n` events of one source over `threads` threads
/// (`thread_of(i)` < `threads`), `key(i)` the time the thread went on
/// after event `i`, ns: per thread, its events by (key, index). A thread
/// whose events are contiguous and in key order gets a range (no memory:
/// a thread's events are collected together, in time order, nearly
/// always); the others a list of 4-byte indices, sorted. Two passes over
/// the events (three with lists). (A node of 12 bytes per event, time and
/// index, took 60 MB for an OpenMP recording of 5 million acquisitions.)
fn lanes_of(
    threads: usize,
    n: usize,
    thread_of: impl Fn(usize) -> usize,
    key: impl Fn(usize) -> u64,
) -> Vec<Lane> {
    let (mut first, mut last, mut count) = (
        vec![usize::MAX; threads],
        vec![0usize; threads],
        vec![0usize; threads],
    );
    for i in 0..n {
        let u = thread_of(i);
        first[u] = first[u].min(i);
        last[u] = i;
        count[u] += 1;
    }
    let mut lanes: Vec<Lane> = (0..threads)
        .map(|u| {
            if count[u] == 0 {
                return Lane::Range { start: 0, end: 0 };
            }
            let range = first[u]..last[u] + 1;
            if range.len() == count[u] && range.clone().is_sorted_by_key(&key) {
                Lane::Range {
                    start: range.start,
                    end: range.end,
                }
            } else {
                Lane::List(Vec::with_capacity(count[u]))
            }
        })
        .collect();
    if lanes.iter().any(|l| matches!(l, Lane::List(_))) {
        for i in 0..n {
            if let Lane::List(list) = &mut lanes[thread_of(i)] {
                list.push(i as u32);
            }
        }
        for lane in &mut lanes {
            if let Lane::List(list) = lane {
                list.sort_unstable_by_key(|&i| (key(i as usize), i));
            }
        }
    }
    lanes
}

/// Each thread's events of every source on the path's time line, walked
/// backward: a position is one count per source (how many of the
/// thread's events of that source come before it), and the event before
/// it is the latest by (key, source, index) of the sources' events there.
struct Timelines<'a> {
    /// `lanes[source][thread]`, sources in the order Lock, Futex, Openmp.
    lanes: [Vec<Lane>; 3],
    set: &'a EventSet,
    futex: &'a FutexEvents,
    omp: &'a OmpSyncEvents,
}

const SOURCES: [Source; 3] = [Source::Lock, Source::Futex, Source::Openmp];

impl Timelines<'_> {
    /// The time the thread went on after event `i` of `source`, ns.
    #[inline]
    fn key(&self, source: Source, i: usize) -> u64 {
        match source {
            Source::Lock => self.set.events[i].acquired_ns(),
            Source::Futex => self.futex.waits[i].end_ns,
            Source::Openmp => self.omp.acquired_ns(i),
        }
    }

    /// The position on `thread` after its events with key ≤ `t`.
    fn position(&self, thread: usize, t: u64) -> [usize; 3] {
        let mut at = [0; 3];
        for (s, source) in SOURCES.into_iter().enumerate() {
            at[s] = self.lanes[s][thread].partition_point(|i| self.key(source, i) <= t);
        }
        at
    }

    /// Steps `at` back over the event before it on `thread`: its source
    /// and index; `None` at the thread's beginning.
    #[inline]
    fn previous(&self, thread: usize, at: &mut [usize; 3]) -> Option<(Source, usize)> {
        let mut best: Option<(u64, usize, usize)> = None;
        for (s, source) in SOURCES.into_iter().enumerate() {
            if at[s] > 0 {
                let i = self.lanes[s][thread].at(at[s] - 1);
                best = best.max(Some((self.key(source, i), s, i)));
            }
        }
        let (_, s, i) = best?;
        at[s] -= 1;
        Some((SOURCES[s], i))
    }
}

/// Events of one source the walk across recorders takes: 2^30 (a
/// recording with more gets the pthread path alone, and a warning).
pub const MAX_EVENTS_PER_SOURCE: usize = 1 << 30;

/// Whether [`mark_across`] can take these events: fewer than
/// [`MAX_EVENTS_PER_SOURCE`] of each source.
pub fn fits(set: &EventSet, futex: &FutexEvents, omp: &OmpSyncEvents) -> bool {
    set.events.len() < MAX_EVENTS_PER_SOURCE
        && futex.waits.len() < MAX_EVENTS_PER_SOURCE
        && omp.len() < MAX_EVENTS_PER_SOURCE
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
    omp: &OmpSyncEvents,
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
    let mut index: FxHashMap<(u32, u32), usize> = FxHashMap::default();
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
    // A futex event names its thread by an index into the events' thread
    // table; numbered here in the order of their first waits, then wakes.
    let mut futex_ids: Vec<u32> = vec![u32::MAX; futex.threads.len()];
    for k in futex
        .waits
        .iter()
        .map(FutexWait::thread)
        .chain(futex.wakes.iter().map(FutexWake::thread))
    {
        let slot = &mut futex_ids[k as usize];
        if *slot == u32::MAX {
            let t = &futex.threads[k as usize];
            *slot = thread_u32(t.process, t.tid, t.pid);
        }
    }
    let futex_thread = |i: usize| futex_ids[futex.waits[i].thread() as usize];
    let wake_thread = |i: usize| futex_ids[futex.wakes[i].thread() as usize];
    // An OpenMP event names its thread by an index into the events'
    // thread table, in the order of their first events.
    let omp_threads: Vec<u32> = omp
        .threads()
        .iter()
        .map(|&(process, tid)| thread_u32(process, tid, pids[process as usize]))
        .collect();
    let n_threads = ids.len();
    let mut has_events = vec![false; n_threads];
    for (t, &u) in lock_threads.iter().enumerate() {
        pthread_index[u] = Some(t as u32);
    }
    for e in &set.events {
        has_events[lock_threads[e.thread() as usize]] = true;
    }
    for (t, info) in set.threads.iter().enumerate() {
        let u = lock_threads[t];
        last[u] = last[u].max(info.last_ns);
    }
    for (i, w) in futex.waits.iter().enumerate() {
        let u = futex_thread(i) as usize;
        has_events[u] = true;
        last[u] = last[u].max(w.end_ns);
    }
    for (i, w) in futex.wakes.iter().enumerate() {
        let u = wake_thread(i) as usize;
        last[u] = last[u].max(w.end_ns);
    }
    for (i, e) in omp.iter().enumerate() {
        let u = omp_threads[omp.thread_of(i)] as usize;
        has_events[u] = true;
        last[u] = last[u].max(e.released_ns);
    }
    let timelines = Timelines {
        lanes: [
            lanes_of(
                n_threads,
                set.events.len(),
                |i| lock_threads[set.events[i].thread() as usize],
                |i| set.events[i].acquired_ns(),
            ),
            lanes_of(
                n_threads,
                futex.waits.len(),
                |i| futex_thread(i) as usize,
                |i| futex.waits[i].end_ns,
            ),
            lanes_of(
                n_threads,
                omp.len(),
                |i| omp_threads[omp.thread_of(i)] as usize,
                |i| omp.acquired_ns(i),
            ),
        ],
        set,
        futex,
        omp,
    };
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
    let mut at = timelines.position(thread, path.end_ns);
    while let Some((source, i)) = timelines.previous(thread, &mut at) {
        let seen = match source {
            Source::Lock => path.locks.on_path[i],
            Source::Futex => path.futex_on_path[i],
            Source::Openmp => path.omp_on_path[i],
        };
        if seen {
            break;
        }
        if source == Source::Lock && set.events[i].outcome() == Outcome::Post {
            continue;
        }
        match source {
            Source::Lock => path.locks.on_path.set(i),
            Source::Futex => path.futex_on_path[i] = true,
            Source::Openmp => path.omp_on_path[i] = true,
        }
        // The waker: (its thread, the moment it let the waiter go, its index).
        let waker = match source {
            Source::Lock => Some(lock_waker[i]).filter(|&w| w != u32::MAX).map(|w| {
                let t = lock_threads[set.events[w as usize].thread() as usize];
                (t, lock_wake_time(set, w as usize), w)
            }),
            Source::Futex => futex.waits[i].waker().map(|k| {
                let w = k as usize;
                (wake_thread(w) as usize, futex.wakes[w].start_ns, k)
            }),
            Source::Openmp => omp.waker(i).map(|k| {
                let u = omp_threads[omp.thread_of(k)] as usize;
                (u, omp.get(k).wake_ns(), k as u32)
            }),
        };
        let Some((to_thread, at_ns, w)) = waker else {
            // its start (request, call), read from its source
            let start = match source {
                Source::Lock => set.events[i].requested_ns(),
                Source::Futex => futex.waits[i].start_ns,
                Source::Openmp => omp.get(i).requested_ns,
            };
            path.begin_ns = path.begin_ns.min(start);
            continue;
        };
        path.begin_ns = path.begin_ns.min(at_ns);
        if source == Source::Lock {
            path.locks.hand_overs.push((i as u32, w));
            path.locks.jumps += 1;
        }
        path.hand_overs.push(HandOver {
            source,
            waiting: i as u32,
            waking: w,
            from: ids[to_thread],
            to: ids[thread],
            at_ns,
        });
        thread = to_thread;
        at = timelines.position(thread, at_ns);
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
    /// The object: lock (its name in the lock tables), futex word (its
    /// name in the futex section, see [`name_section_objects`]), OpenMP
    /// mutex (kind and its name in the OpenMP section, `critical update`,
    /// `lock at main._omp_fn.0 (app.c:31)`, see [`name_section_objects`];
    /// kind and symbol or address without one),
    /// OpenMP barrier (its kind: `implicit barrier`).
    pub object: String,
    /// Process id.
    pub pid: u32,
    /// The waking thread.
    pub from_tid: u32,
    /// The waiting thread.
    pub to_tid: u32,
    /// The waking thread's name as the kernel had it (comm), when the
    /// recording has it ([`crate::Recording::named_threads`]).
    pub from_name: Option<String>,
    /// The waiting thread's name, the same way.
    pub to_name: Option<String>,
    /// Hand-overs.
    pub count: u64,
    /// Σ wait of the waiting events, ns.
    pub wait_ns: u64,
    /// An OpenMP mutex or a futex word, by which [`name_section_objects`]
    /// gives it the name its own section gives it; `None` for other
    /// objects. Not in JSON.
    #[serde(skip)]
    pub section_object: Option<SectionObject>,
}

/// An object of a hand-over row that another section names
/// ([`name_section_objects`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SectionObject {
    /// An OpenMP mutex: its kind name and address (wait id), named as in
    /// `openmp.mutexes`.
    OpenmpMutex(&'static str, u64),
    /// A futex word's address, named as in `futex.by_word`.
    FutexWord(u64),
}

/// What a hand-over row says of its object: its name and, for an OpenMP
/// mutex or a futex word, what its section names
/// ([`HandOverRow::section_object`]).
pub type HandOverObject = (String, Option<SectionObject>);

/// (source, object, pid, from tid, to tid) of a hand-over row.
type HandOverKey = (Source, HandOverObject, u32, u32, u32);

/// Sums a marked path into its report form; `object` names the object of
/// a hand-over (its source and the waiting event's index).
pub fn summarize(
    path: &AcrossPath,
    set: &EventSet,
    futex: &FutexEvents,
    omp: &OmpSyncEvents,
    mut object: impl FnMut(Source, u32) -> HandOverObject,
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
        s.openmp_wait_ns += omp.get(i).wait_ns();
    }
    let mut rows: FxHashMap<HandOverKey, (u64, u64)> = FxHashMap::default();
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
                omp.get(h.waiting as usize).wait_ns()
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
            |((source, (object, section_object), pid, from_tid, to_tid), (count, wait_ns))| {
                HandOverRow {
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
                    from_name: None,
                    to_name: None,
                    count,
                    wait_ns,
                    section_object,
                }
            },
        )
        .collect();
    sort_hand_overs(&mut rows);
    s.hand_overs = rows;
    s
}

/// Most hand-overs first, then most wait; ties by source, object and
/// threads.
fn sort_hand_overs(rows: &mut [HandOverRow]) {
    rows.sort_by(|a, b| {
        b.count
            .cmp(&a.count)
            .then(b.wait_ns.cmp(&a.wait_ns))
            .then(a.source.cmp(&b.source))
            .then(a.object.cmp(&b.object))
            .then(a.from_tid.cmp(&b.from_tid))
            .then(a.to_tid.cmp(&b.to_tid))
    });
}

/// Names the OpenMP mutexes and futex words of the hand-over rows as
/// their sections do, so that one object has one name in the report: an
/// OpenMP mutex by `openmp` ((pid, kind name, address) → name, the
/// section's `openmp.mutexes`), labelled as the exports' slices are
/// ([`crate::openmp::mutex_label`]); a futex word by `futex` ((pid,
/// address) → name, `futex.by_word`). A lock or word without a symbol is
/// then named after its site (`lock at <site>`, `mutex waited on at
/// <site>`) instead of its address, which changes from run to run. Rows
/// that come to name the same object (two locks first taken at one site)
/// are added together; the order is made again.
pub fn name_section_objects(
    s: &mut AcrossSummary,
    openmp: &FxHashMap<(u32, &str, u64), &str>,
    futex: &FxHashMap<(u32, u64), &str>,
) {
    let mut renamed = false;
    for row in &mut s.hand_overs {
        let name = match row.section_object {
            Some(SectionObject::OpenmpMutex(kind, address)) => openmp
                .get(&(row.pid, kind, address))
                .map(|name| crate::openmp::mutex_label(kind, name)),
            Some(SectionObject::FutexWord(word)) => {
                futex.get(&(row.pid, word)).map(|name| name.to_string())
            }
            None => None,
        };
        if let Some(name) = name {
            renamed |= name != row.object;
            row.object = name;
        }
    }
    if !renamed {
        return;
    }
    let mut at: FxHashMap<(String, String, u32, u32, u32), usize> = FxHashMap::default();
    let mut rows: Vec<HandOverRow> = Vec::with_capacity(s.hand_overs.len());
    for row in std::mem::take(&mut s.hand_overs) {
        let key = (
            row.source.clone(),
            row.object.clone(),
            row.pid,
            row.from_tid,
            row.to_tid,
        );
        match at.get(&key) {
            Some(&i) => {
                rows[i].count += row.count;
                rows[i].wait_ns += row.wait_ns;
            }
            None => {
                at.insert(key, rows.len());
                rows.push(row);
            }
        }
    }
    sort_hand_overs(&mut rows);
    s.hand_overs = rows;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two stack locks first taken at one site (addresses 0x10, 0x20)
    /// get the section's one name and their rows between the same threads
    /// add up (2 + 3 hand-overs, 5 + 7 ns); a lock the section has no
    /// row for keeps its name, as do a pthread lock and a barrier; the
    /// rows are in order again (most hand-overs first).
    #[test]
    fn openmp_mutexes_take_the_sections_names() {
        use SectionObject::OpenmpMutex;
        let row = |source: &str, object: &str, mutex, from_tid, count, wait_ns| HandOverRow {
            source: source.into(),
            object: object.into(),
            pid: 7,
            from_tid,
            to_tid: 9,
            from_name: None,
            to_name: None,
            count,
            wait_ns,
            section_object: mutex,
        };
        let mut s = AcrossSummary {
            hand_overs: vec![
                row("lock", "queue", None, 1, 4, 40),
                row(
                    "openmp",
                    "lock 0x10",
                    Some(OpenmpMutex("lock", 0x10)),
                    1,
                    3,
                    7,
                ),
                row(
                    "openmp",
                    "lock 0x20",
                    Some(OpenmpMutex("lock", 0x20)),
                    1,
                    2,
                    5,
                ),
                row(
                    "openmp",
                    "lock 0x20",
                    Some(OpenmpMutex("lock", 0x20)),
                    2,
                    2,
                    1,
                ),
                row("openmp", "implicit barrier", None, 1, 1, 9),
                row(
                    "openmp",
                    "critical 0x30",
                    Some(OpenmpMutex("critical", 0x30)),
                    1,
                    1,
                    2,
                ),
            ],
            ..AcrossSummary::default()
        };
        let names: FxHashMap<(u32, &str, u64), &str> = [
            ((7, "lock", 0x10), "lock at f (a.c:3)"),
            ((7, "lock", 0x20), "lock at f (a.c:3)"),
            // another process's lock at the same address
            ((8, "critical", 0x30), "update"),
        ]
        .into_iter()
        .collect();
        name_section_objects(&mut s, &names, &FxHashMap::default());
        let got: Vec<(&str, &str, u32, u64, u64)> = s
            .hand_overs
            .iter()
            .map(|r| {
                (
                    r.source.as_str(),
                    r.object.as_str(),
                    r.from_tid,
                    r.count,
                    r.wait_ns,
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                ("openmp", "lock at f (a.c:3)", 1, 5, 12),
                ("lock", "queue", 1, 4, 40),
                ("openmp", "lock at f (a.c:3)", 2, 2, 1),
                ("openmp", "implicit barrier", 1, 1, 9),
                ("openmp", "critical 0x30", 1, 1, 2),
            ]
        );
    }

    /// Futex words take the futex section's names: two heap words waited
    /// on at one line become one row per pair of threads (4 + 1
    /// hand-overs); a word the section does not name keeps its address,
    /// as does an OpenMP mutex named by neither map.
    #[test]
    fn futex_words_take_the_futex_sections_names() {
        let row = |object: &str, word, from_tid, count| HandOverRow {
            source: "futex".into(),
            object: object.into(),
            pid: 7,
            from_tid,
            to_tid: 9,
            from_name: None,
            to_name: None,
            count,
            wait_ns: count * 10,
            section_object: Some(SectionObject::FutexWord(word)),
        };
        let mut s = AcrossSummary {
            hand_overs: vec![
                row("0x10", 0x10, 1, 4),
                row("0x20", 0x20, 1, 1),
                row("0x30", 0x30, 1, 3),
                HandOverRow {
                    source: "openmp".into(),
                    section_object: Some(SectionObject::OpenmpMutex("lock", 0x40)),
                    ..row("lock 0x40", 0, 2, 2)
                },
            ],
            ..AcrossSummary::default()
        };
        let futex: FxHashMap<(u32, u64), &str> = [
            ((7, 0x10), "mutex waited on at q.rs:4 (q::pop)"),
            ((7, 0x20), "mutex waited on at q.rs:4 (q::pop)"),
            ((8, 0x30), "another process's word"),
        ]
        .into_iter()
        .collect();
        name_section_objects(&mut s, &FxHashMap::default(), &futex);
        let got: Vec<(&str, u64, u64)> = s
            .hand_overs
            .iter()
            .map(|r| (r.object.as_str(), r.count, r.wait_ns))
            .collect();
        assert_eq!(
            got,
            vec![
                ("mutex waited on at q.rs:4 (q::pop)", 5, 50),
                ("0x30", 3, 30),
                ("lock 0x40", 2, 20),
            ]
        );
    }

    /// Random events of `threads` threads (keys from few values, so that
    /// equal keys meet), either each thread's together and in key order
    /// or shuffled: `(thread, key)` per event.
    fn random_events(rng: &mut crate::TestRng, threads: u64, grouped: bool) -> Vec<(usize, u64)> {
        let mut events: Vec<(usize, u64)> = (0..rng.below(30))
            .map(|_| (rng.below(threads) as usize, rng.below(6)))
            .collect();
        if grouped {
            events.sort();
        }
        events
    }

    /// Each thread's lane lists its events by (key, index): a range
    /// where they are together and in order already, else a list.
    #[test]
    fn a_lane_lists_a_threads_events_by_key_and_index() {
        let mut rng = crate::TestRng(0x9E37_79B9_7F4A_7C15);
        let (mut ranges, mut lists) = (0, 0);
        for round in 0..400 {
            let threads = 1 + rng.below(4);
            let events = random_events(&mut rng, threads, round % 2 == 0);
            let lanes = lanes_of(
                threads as usize,
                events.len(),
                |i| events[i].0,
                |i| events[i].1,
            );
            for (u, lane) in lanes.iter().enumerate() {
                let mut want: Vec<usize> =
                    (0..events.len()).filter(|&i| events[i].0 == u).collect();
                want.sort_by_key(|&i| events[i].1);
                let got: Vec<usize> = (0..lane.len()).map(|k| lane.at(k)).collect();
                assert_eq!(got, want, "round {round}, thread {u}: {events:?}");
                match lane {
                    Lane::Range { .. } => ranges += 1,
                    Lane::List(_) => lists += 1,
                }
            }
        }
        assert!(
            ranges > 200 && lists > 200,
            "{ranges} ranges, {lists} lists"
        );
    }

    /// Walked backward from any time, a thread's time line gives its
    /// events of the three sources by (key, source, index), latest first:
    /// the order of one list of them all, sorted.
    #[test]
    fn a_thread_is_walked_back_in_the_order_of_its_events_of_every_source() {
        use crate::futex::{FutexCallAt, WaitOutcome};
        use crate::locks::events::LockEventFields;
        use crate::openmp::sync::{finish, OmpSyncBuilder, OmpSyncEvent};
        use contend_trace::Primitive;
        let mut rng = crate::TestRng(0x2545_F491_4F6C_DD1D);
        for round in 0..300 {
            let threads = 1 + rng.below(3);
            let grouped = |rng: &mut crate::TestRng| rng.below(2) == 0;
            let g = grouped(&mut rng);
            let locks = random_events(&mut rng, threads, g);
            let g = grouped(&mut rng);
            let futexes = random_events(&mut rng, threads, g);
            let g = grouped(&mut rng);
            let omps = random_events(&mut rng, threads, g);
            let set = EventSet {
                events: locks
                    .iter()
                    .map(|&(t, key)| {
                        LockEventFields {
                            thread: t as u32,
                            object: 0,
                            site: 0,
                            primitive: Primitive::Mutex,
                            outcome: Outcome::Acquired,
                            requested_ns: key,
                            acquired_ns: key,
                            released_ns: key,
                            contended: false,
                            unreleased: false,
                        }
                        .pack()
                    })
                    .collect(),
                ..EventSet::default()
            };
            let mut futex = FutexEvents::default();
            futex.waits = futexes
                .iter()
                .map(|&(t, key)| {
                    let at = FutexCallAt {
                        thread: t as u32,
                        word: 0,
                        call: 0,
                        start_ns: key,
                        end_ns: key,
                    };
                    FutexWait::new(at, WaitOutcome::Woken, None)
                })
                .collect();
            let mut b = OmpSyncBuilder::default();
            for &(t, key) in &omps {
                b.push(OmpSyncEvent::new(0, t as u32, false, 1, 0, 0, key));
            }
            let omp = finish(b);
            let omp_thread: Vec<usize> = omp.threads().iter().map(|&(_, t)| t as usize).collect();
            let n = threads as usize;
            let timelines = Timelines {
                lanes: [
                    lanes_of(n, locks.len(), |i| locks[i].0, |i| locks[i].1),
                    lanes_of(n, futexes.len(), |i| futexes[i].0, |i| futexes[i].1),
                    lanes_of(
                        n,
                        omps.len(),
                        |i| omp_thread[omp.thread_of(i)],
                        |i| omp.acquired_ns(i),
                    ),
                ],
                set: &set,
                futex: &futex,
                omp: &omp,
            };
            for u in 0..n {
                let mut all: Vec<(u64, usize, usize)> = Vec::new();
                for (s, events) in [&locks, &futexes, &omps].into_iter().enumerate() {
                    for (i, &(t, key)) in events.iter().enumerate() {
                        if t == u {
                            all.push((key, s, i));
                        }
                    }
                }
                all.sort();
                for from in 0..7 {
                    let mut at = timelines.position(u, from);
                    let mut walked = Vec::new();
                    while let Some((source, i)) = timelines.previous(u, &mut at) {
                        walked.push((timelines.key(source, i), source as usize, i));
                    }
                    let want: Vec<_> = all.iter().rev().filter(|e| e.0 <= from).copied().collect();
                    assert_eq!(walked, want, "round {round}, thread {u}, from {from}");
                }
            }
        }
    }
}
