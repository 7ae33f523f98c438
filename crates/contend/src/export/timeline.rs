//! The timeline that the trace-viewer exports draw (Perfetto's protobuf
//! trace, Chrome's trace-event JSON): one walk over a recording's
//! per-event results that hands tracks, slices, instants, flows and
//! counter values to a [`TimelineSink`], one at a time, so that a writer
//! needs no memory that grows with the trace.
//!
//! What the walk produces (docs/usage.md, "Exports"):
//!
//! * a process track per traced process (lock traces, MPI ranks, sampled
//!   processes) and a thread track per thread, named as the kernel named
//!   the thread (its comm, kept in the lock trace's chunk headers) where
//!   the recording has it, else by its process and tid; an MPI rank's
//!   track as `rank N (pid P) program`;
//! * per lock event a `wait` slice (requested → acquired, when it waited)
//!   and a `hold` slice (acquired → released), named after the lock, with
//!   the call site, the kind, the contended and critical-path flags as
//!   arguments; failed attempts (busy, timed out, error) one slice;
//!   condition, barrier and semaphore waits one `wait` slice, `sem_post`
//!   an instant;
//! * a flow from the waking thread to the woken one for every contended
//!   hand-over on the critical path ([`CriticalPath::hand_overs`]): from
//!   the releaser's `hold` slice (the barrier's last arrival, the
//!   `sem_post`) to the woken thread's `hold` slice, or to a `woken`
//!   instant at the end of a condition, barrier or semaphore wait;
//! * per futex wait a `wait <word>` slice, per wake call a `wake <word>`
//!   instant, a flow from the wake to each wait it ended (every pair the
//!   futex analysis makes); per OpenMP mutex acquisition a `wait` and a
//!   `hold` slice, per barrier wait a slice, a flow from the release or
//!   last arrival to the thread it let go ([`futex_events`],
//!   [`openmp_events`]);
//! * per MPI call a slice on its rank's thread, each wait state (late
//!   sender, …) a slice inside it from the call's entry, lasting the wait,
//!   with the causing rank as argument; a flow per matched message from
//!   the posting send to the completing receive;
//! * counter tracks from the service-time samples, per interval: active
//!   threads (Σ τ / max τ: the service time all threads received over the
//!   longest any one received, Venter 2016, Listing 3.3), CPUs busy (the
//!   service time ÷ the interval), the run-queue length, and each
//!   thread's CPU time rate (its service time ÷ interval).
//!
//! Timestamps are CLOCK_MONOTONIC ns: lock traces through the recording's
//! clock fit, MPI traces on rank 0's clock (corrected across nodes), the
//! samples as taken, so processes and ranks line up. Slices on one track
//! come in start order and nest properly: events of a thread that
//! overlap without nesting (locks released in another order than taken)
//! go to an extra lane, a child track of the thread's.

use std::collections::hash_map::Entry;
use std::io;

use contend_trace::mpi::{MpiEventRef, MpiRecording, Peer};
use contend_trace::Primitive;
use rustc_hash::FxHashMap;

use super::{ExportError, ExportOptions, ExportSummary};
use crate::analysis::Analysis;
use crate::futex::{FutexEvents, FutexReport, ShownSites, WaitOutcome};
use crate::locks::{LockEvents, Outcome, Selection};
use crate::mpi::{comm_name, MapsSiteResolver, MpiEvents, SiteResolver};

/// A track's id, unique within one export (Perfetto's track uuid).
pub(crate) type TrackId = u64;

/// What a track shows.
pub(crate) enum TrackKind<'a> {
    /// A process.
    Process {
        /// Process id.
        pid: u32,
        /// Its name (command name, or `rank N`).
        name: &'a str,
        /// Its command line, when known.
        cmdline: &'a [String],
    },
    /// A thread of a process (its parent track).
    Thread {
        /// Process id.
        pid: u32,
        /// Thread id.
        tid: u32,
        /// Its name.
        name: &'a str,
    },
    /// An extra lane of a thread, for its events that overlap without
    /// nesting (its parent is the thread's track).
    Lane {
        /// Process id.
        pid: u32,
        /// Thread id.
        tid: u32,
        /// Lane number, from 1.
        lane: u32,
        /// Its name.
        name: &'a str,
    },
    /// A counter (its parent is a process or thread track, or none).
    Counter {
        /// Process id of the parent, 0 for a counter of the whole system.
        pid: u32,
        /// Its name.
        name: &'a str,
        /// Unit of its values.
        unit: &'static str,
    },
}

/// One track.
pub(crate) struct Track<'a> {
    /// Its id.
    pub id: TrackId,
    /// The track it belongs to (a thread's process, a lane's thread).
    pub parent: Option<TrackId>,
    /// What it shows.
    pub kind: TrackKind<'a>,
}

/// A slice argument's value.
#[derive(Clone, Copy)]
pub(crate) enum Arg<'a> {
    /// Text.
    Str(&'a str),
    /// An unsigned number.
    U64(u64),
    /// A flag.
    Bool(bool),
}

/// A slice (or, with `start_ns == end_ns` and `instant`, an instant).
pub(crate) struct Slice<'a> {
    /// Its track.
    pub track: TrackId,
    /// Begin, CLOCK_MONOTONIC ns.
    pub start_ns: u64,
    /// End, ns (≥ `start_ns`).
    pub end_ns: u64,
    /// Its name.
    pub name: &'a str,
    /// Its category (`lock.wait`, `lock.hold`, `mpi`, `mpi.wait`, …).
    pub category: &'static str,
    /// Its arguments.
    pub args: &'a [(&'static str, Arg<'a>)],
    /// Flows starting at this slice.
    pub flows_out: &'a [u64],
    /// Flows ending at this slice.
    pub flows_in: &'a [u64],
}

/// Where the walk hands what it finds, in this order: tracks before
/// anything on them; per track, slices in start order, properly nested.
pub(crate) trait TimelineSink {
    /// A new track.
    fn track(&mut self, t: &Track<'_>) -> io::Result<()>;
    /// A slice with a duration.
    fn slice(&mut self, s: &Slice<'_>) -> io::Result<()>;
    /// An instant (`start_ns == end_ns`).
    fn instant(&mut self, s: &Slice<'_>) -> io::Result<()>;
    /// A counter's value from `t_ns` on.
    fn counter(&mut self, track: TrackId, t_ns: u64, value: f64) -> io::Result<()>;
    /// No more slices on `track` for now (the next ones, if any, start
    /// after every slice given so far on it ends).
    fn end_track(&mut self, track: TrackId) -> io::Result<()>;
    /// The end: flush everything.
    fn finish(&mut self) -> io::Result<()>;
}

/// What the walk wrote, for the summary.
#[derive(Default)]
struct Counts {
    slices: u64,
    instants: u64,
    flows: u64,
    counter_values: u64,
}

/// Tracks by process and thread, created on first use.
struct Tracks {
    next: TrackId,
    processes: FxHashMap<u32, TrackId>,
    threads: FxHashMap<(u32, u32), TrackId>,
    /// Extra lanes of a thread track, by (thread track, lane).
    lanes: FxHashMap<(TrackId, u32), TrackId>,
    /// Thread names as the kernel had them (comm), by (pid, tid), from the
    /// lock traces' chunk headers: a thread track takes this name, whoever
    /// creates it (lock events, MPI calls, service samples).
    comms: FxHashMap<(u32, u32), String>,
}

impl Tracks {
    fn new() -> Tracks {
        Tracks {
            next: 1,
            processes: FxHashMap::default(),
            threads: FxHashMap::default(),
            lanes: FxHashMap::default(),
            comms: FxHashMap::default(),
        }
    }

    fn fresh(&mut self) -> TrackId {
        let id = self.next;
        self.next += 1;
        id
    }

    fn process(
        &mut self,
        sink: &mut dyn TimelineSink,
        pid: u32,
        name: &str,
        cmdline: &[String],
    ) -> io::Result<TrackId> {
        if let Some(&id) = self.processes.get(&pid) {
            return Ok(id);
        }
        let id = self.fresh();
        self.processes.insert(pid, id);
        sink.track(&Track {
            id,
            parent: None,
            kind: TrackKind::Process { pid, name, cmdline },
        })?;
        Ok(id)
    }

    fn thread(
        &mut self,
        sink: &mut dyn TimelineSink,
        pid: u32,
        tid: u32,
        name: &str,
    ) -> io::Result<TrackId> {
        if let Some(&id) = self.threads.get(&(pid, tid)) {
            return Ok(id);
        }
        let parent = self.process(sink, pid, &format!("pid {pid}"), &[])?;
        let id = self.fresh();
        self.threads.insert((pid, tid), id);
        let name = self.comms.get(&(pid, tid)).map_or(name, String::as_str);
        sink.track(&Track {
            id,
            parent: Some(parent),
            kind: TrackKind::Thread { pid, tid, name },
        })?;
        Ok(id)
    }

    /// Lane `lane` of a thread track (0 is the thread track itself).
    fn lane(
        &mut self,
        sink: &mut dyn TimelineSink,
        thread: TrackId,
        pid: u32,
        tid: u32,
        lane: u32,
    ) -> io::Result<TrackId> {
        if lane == 0 {
            return Ok(thread);
        }
        if let Some(&id) = self.lanes.get(&(thread, lane)) {
            return Ok(id);
        }
        let id = self.fresh();
        self.lanes.insert((thread, lane), id);
        sink.track(&Track {
            id,
            parent: Some(thread),
            kind: TrackKind::Lane {
                pid,
                tid,
                lane,
                name: &format!("tid {tid} (overlapping, lane {lane})"),
            },
        })?;
        Ok(id)
    }

    /// Every lane of `thread`, itself first.
    fn lanes_of(&self, thread: TrackId) -> Vec<TrackId> {
        let mut v: Vec<(u32, TrackId)> = self
            .lanes
            .iter()
            .filter(|((t, _), _)| *t == thread)
            .map(|((_, l), id)| (*l, *id))
            .collect();
        v.sort_unstable();
        std::iter::once(thread)
            .chain(v.into_iter().map(|(_, id)| id))
            .collect()
    }
}

/// Flow ids by event index, for a walk that visits the events mostly in
/// increasing index order: the (event, id) pairs sorted, and a cursor
/// that moves forward (a step back, or a long jump, is a binary search).
/// A hash map here cost a cache miss per event, the largest single cost of
/// the Perfetto export in a CPU profile (docs/benchmarks.md).
struct FlowIds {
    /// Event indices, ascending (an event with several flows repeats).
    events: Vec<u32>,
    /// Their flow ids, aligned with `events`.
    ids: Vec<u64>,
    /// Where the last lookup ended: the first entry of its event or after.
    at: usize,
}

impl FlowIds {
    fn new(mut pairs: Vec<(u32, u64)>) -> FlowIds {
        pairs.sort_unstable();
        pairs.dedup();
        FlowIds {
            events: pairs.iter().map(|p| p.0).collect(),
            ids: pairs.iter().map(|p| p.1).collect(),
            at: 0,
        }
    }

    /// The flow ids of event `i` (empty: none).
    fn get(&mut self, i: u32) -> &[u64] {
        let ev = &self.events;
        if self.at > 0 && ev[self.at - 1] >= i {
            self.at = ev.partition_point(|&e| e < i);
        } else {
            let mut steps = 0;
            while self.at < ev.len() && ev[self.at] < i && steps < 16 {
                self.at += 1;
                steps += 1;
            }
            if self.at < ev.len() && ev[self.at] < i {
                self.at += ev[self.at..].partition_point(|&e| e < i);
            }
        }
        let end = self.at + ev[self.at..].iter().take_while(|&&e| e == i).count();
        &self.ids[self.at..end]
    }
}

/// Assigns intervals of one thread, given in start order, to lanes so
/// that each lane's intervals nest properly (greedy: the first lane where
/// the interval fits inside the innermost open one, or after it).
#[derive(Default)]
struct Lanes {
    /// Per lane, the end times of its open intervals, outermost first.
    open: Vec<Vec<u64>>,
}

impl Lanes {
    fn place(&mut self, start: u64, end: u64) -> u32 {
        for (k, stack) in self.open.iter_mut().enumerate() {
            while stack.last().is_some_and(|&e| e <= start) {
                stack.pop();
            }
            if stack.last().is_none_or(|&e| e >= end) {
                stack.push(end);
                return k as u32;
            }
        }
        self.open.push(vec![end]);
        (self.open.len() - 1) as u32
    }
}

/// The process's display name: its command's base name.
fn process_name(cmdline: &[String], exe: &str) -> String {
    let name = cmdline.first().map(String::as_str).unwrap_or(exe);
    name.rsplit('/').next().unwrap_or(name).to_string()
}

/// The program process `pid` ran, as the kernel names it (comm: the base
/// name of the executable, at most 15 bytes), when the recording knows
/// it: from its lock trace's command line, else from its memory maps (the
/// first file-backed mapping of its latest snapshot, the executable; the
/// latest exec generation first). `None` when neither was recorded.
pub(crate) fn program_of(recording: &crate::recording::Recording, pid: u32) -> Option<String> {
    if let Some(p) = recording.processes.iter().find(|p| p.trace.pid == pid) {
        return Some(process_name(&p.trace.cmdline, &p.trace.exe_path));
    }
    recording
        .maps_of_pid(pid)
        .into_iter()
        .flatten()
        .find_map(|m| {
            let path = m
                .snapshots
                .last()?
                .mappings
                .iter()
                .find(|m| m.is_file_backed())?
                .path
                .as_deref()?;
            let base = path.rsplit('/').next().unwrap_or(path);
            // comm is the base name cut to 15 bytes (at a character boundary).
            let mut end = base.len().min(15);
            while !base.is_char_boundary(end) {
                end -= 1;
            }
            Some(base[..end].to_string())
        })
}

/// The name of an MPI rank's process track: `rank R (pid P)`, then the
/// program when known ([`program_of`]) and the host when recorded, e.g.
/// `rank 3 (pid 1234) ring on node7`.
fn rank_name(rank: u32, pid: u32, program: Option<&str>, host: &str) -> String {
    let mut name = format!("rank {rank} (pid {pid})");
    if let Some(p) = program.filter(|p| !p.is_empty()) {
        name.push(' ');
        name.push_str(p);
    }
    if !host.is_empty() {
        name.push_str(" on ");
        name.push_str(host);
    }
    name
}

/// How a lock event's primitive and mode read in an argument.
fn primitive_name(p: Primitive) -> &'static str {
    match p {
        Primitive::Mutex => "mutex",
        Primitive::RwlockRead => "rwlock (read)",
        Primitive::RwlockWrite => "rwlock (write)",
        Primitive::Spin => "spinlock",
        Primitive::Cond => "condition wait",
        Primitive::Barrier => "barrier",
        Primitive::Semaphore => "semaphore",
        Primitive::Join => "thread join",
    }
}

/// Walks `analysis` and hands the timeline to `sink` (module docs).
///
/// `options.filter` selects the lock events (`--min-duration`,
/// `--critical-only`, `--lock`, `--site`, `--thread`); MPI calls and
/// wait states are kept when they last at least `--min-duration` (a call
/// shorter than that is dropped with its wait states) and are all dropped
/// by `--critical-only` (the critical path is of lock events).
///
/// Errors: writing failed; the recording holds neither lock events, MPI
/// traces nor service samples ([`ExportError::Nothing`]).
pub(crate) fn walk(
    analysis: &Analysis<'_>,
    options: &ExportOptions,
    sink: &mut dyn TimelineSink,
    what: &'static str,
) -> Result<ExportSummary, ExportError> {
    let recording = analysis.recording;
    let locks = analysis
        .events::<LockEvents>()
        .filter(|l| !l.set.events.is_empty());
    let mpi = match (&recording.mpi, analysis.events::<MpiEvents>()) {
        (Some(Ok(m)), Some(ev)) => Some((m, ev)),
        _ => None,
    };
    let samples = match &recording.service {
        Some(Ok(s)) if !s.ticks.is_empty() => Some(s),
        _ => None,
    };
    let futex =
        crate::futex::events_of(analysis).filter(|f| !f.waits.is_empty() || !f.wakes.is_empty());
    let has_omp = recording
        .processes
        .iter()
        .any(|p| p.trace.threads.iter().any(|t| t.omp_count() > 0));
    if locks.is_none() && futex.is_none() && !has_omp && mpi.is_none() && samples.is_none() {
        return Err(ExportError::Nothing(
            "the recording holds no lock events, no futex calls, no OpenMP events, no MPI traces and no service samples: nothing to draw on a timeline".into(),
        ));
    }
    let mut notes = Vec::new();
    let mut tracks = Tracks::new();
    tracks.comms.extend(
        recording
            .named_threads()
            .into_iter()
            .map(|(key, name)| (key, name.to_string())),
    );
    let mut counts = Counts::default();
    // Processes first: MPI ranks by rank, pid and program; the others
    // named after their command.
    if let Some((m, _)) = mpi {
        for r in &m.ranks {
            let program = program_of(recording, r.pid);
            let name = rank_name(r.rank, r.pid, program.as_deref(), &r.host);
            let cmdline = recording
                .processes
                .iter()
                .find(|p| p.trace.pid == r.pid)
                .map_or(&[][..], |p| &p.trace.cmdline[..]);
            tracks.process(sink, r.pid, &name, cmdline)?;
        }
    }
    for p in &recording.processes {
        let name = process_name(&p.trace.cmdline, &p.trace.exe_path);
        tracks.process(sink, p.trace.pid, &name, &p.trace.cmdline)?;
    }
    match locks {
        Some(ev) => lock_events(analysis, ev, options, sink, &mut tracks, &mut counts)?,
        None => {
            if let Some(why) = analysis
                .report
                .section::<crate::locks::LockReport>()
                .and_then(|l| l.no_events_reason.clone())
                .filter(|_| mpi.is_none())
            {
                notes.push(format!("no lock events: {why}"));
            }
        }
    }
    if let Some(f) = futex {
        futex_events(analysis, f, options, sink, &mut tracks, &mut counts)?;
    }
    let omp = crate::openmp::sync::events_of(analysis);
    if !omp.is_empty() {
        openmp_events(analysis, &omp, options, sink, &mut tracks, &mut counts)?;
    }
    if let Some((m, ev)) = mpi {
        mpi_events(analysis, m, ev, options, sink, &mut tracks, &mut counts)?;
        if options.filter.critical_only {
            notes.push(
                "--critical-only selects lock events on the critical path: MPI calls are left out"
                    .into(),
            );
        }
    }
    match samples {
        Some(s) => service_counters(recording, s, sink, &mut tracks, &mut counts)?,
        None => notes.push(match &recording.service {
            Some(Err(e)) => format!("no counter tracks: the service samples cannot be read ({e})"),
            _ => "no counter tracks: the recording holds no service-time samples".into(),
        }),
    }
    sink.finish()?;
    let filters = options.filter.describe();
    if !filters.is_empty() {
        notes.push(format!("lock events selected: {}", filters.join("; ")));
    }
    notes.push(format!(
        "{} slices, {} instants, {} flows, {} counter values",
        counts.slices, counts.instants, counts.flows, counts.counter_values
    ));
    Ok(ExportSummary {
        records: counts.slices + counts.instants + counts.counter_values,
        what,
        notes,
    })
}

/// The lock events: per thread, in start order, on its lanes.
fn lock_events(
    analysis: &Analysis<'_>,
    ev: &LockEvents,
    options: &ExportOptions,
    sink: &mut dyn TimelineSink,
    tracks: &mut Tracks,
    counts: &mut Counts,
) -> Result<(), ExportError> {
    let recording = analysis.recording;
    let set = &ev.set;
    let selection = Selection::new(&options.filter, set, &ev.critical_path, &ev.names);
    // Flow ids of the critical path's hand-overs: the waiting event's
    // index + 1, on both ends (kept only when both ends are exported).
    // A waker that let several threads go (a barrier's last arrival, a
    // broadcast) starts a flow to each.
    let mut flow_out: Vec<(u32, u64)> = Vec::new();
    let mut flow_in: Vec<(u32, u64)> = Vec::new();
    for &(waiter, waker) in &ev.critical_path.hand_overs {
        let (we, ke) = (&set.events[waiter as usize], &set.events[waker as usize]);
        let waker_kept = ke.outcome() == Outcome::Post || selection.keeps(waker as usize, ke);
        if selection.keeps(waiter as usize, we) && waker_kept {
            let id = u64::from(waiter) + 1;
            flow_out.push((waker, id));
            flow_in.push((waiter, id));
        }
    }
    let mut flow_out = FlowIds::new(flow_out);
    let mut flow_in = FlowIds::new(flow_in);
    counts.flows += flow_in.ids.len() as u64;
    // Slice names per (object, primitive), made on first use.
    let mut names: Vec<Option<(String, String)>> = vec![None; set.objects.len() * 8];
    let kinds: Vec<&'static str> = set.object_kinds.iter().map(|k| k.object_kind()).collect();
    // Per thread: its events' index range, in start order.
    for (thread, range) in set.runs_by_thread() {
        let start = range.start;
        let info = &set.threads[thread as usize];
        let pname = recording
            .processes
            .get(info.process as usize)
            .map(|p| process_name(&p.trace.cmdline, &p.trace.exe_path))
            .unwrap_or_default();
        let name = if info.tid == info.pid {
            format!("{pname} {} (main)", info.tid)
        } else {
            format!("{pname} {}", info.tid)
        };
        let track = tracks.thread(sink, info.pid, info.tid, &name)?;
        let sorted = set.events[range.clone()].is_sorted_by_key(|e| e.requested_ns());
        let order: Vec<u32> = if sorted {
            Vec::new()
        } else {
            let mut v: Vec<u32> = range.clone().map(|i| i as u32).collect();
            v.sort_by_key(|&i| set.events[i as usize].requested_ns());
            v
        };
        let mut lanes = Lanes::default();
        for k in range.clone() {
            let i = if sorted { k } else { order[k - start] as usize };
            let e = &set.events[i];
            let is_post = e.outcome() == Outcome::Post;
            let out = flow_out.get(i as u32);
            if !is_post && !selection.keeps(i, e) {
                continue;
            }
            if is_post && out.is_empty() && options.filter.critical_only {
                continue;
            }
            let lane = lanes.place(e.requested_ns(), e.released_ns().max(e.acquired_ns()));
            let t = tracks.lane(sink, track, info.pid, info.tid, lane)?;
            let lock = ev.names.objects[e.object as usize].as_str();
            let site = &ev.names.sites[e.site as usize].display;
            let on_path = ev.critical_path.on_path[i];
            let (wait_name, hold_name) = names
                [e.object as usize * 8 + (e.primitive() as usize & 7)]
                .get_or_insert_with(|| (format!("wait {lock}"), format!("hold {lock}")));
            let args = [
                ("lock", Arg::Str(lock)),
                ("kind", Arg::Str(primitive_name(e.primitive()))),
                ("site", Arg::Str(site)),
                ("contended", Arg::Bool(e.contended())),
                ("critical_path", Arg::Bool(on_path)),
            ];
            let inn = flow_in.get(i as u32);
            if is_post {
                sink.instant(&Slice {
                    track: t,
                    start_ns: e.released_ns(),
                    end_ns: e.released_ns(),
                    name: "sem_post",
                    category: "semaphore",
                    args: &[("lock", Arg::Str(lock)), ("site", Arg::Str(site))],
                    flows_out: out,
                    flows_in: &[],
                })?;
                counts.instants += 1;
                continue;
            }
            let category = kinds[e.object as usize];
            if e.is_lock() && e.outcome() == Outcome::Acquired {
                if e.acquired_ns() > e.requested_ns() {
                    sink.slice(&Slice {
                        track: t,
                        start_ns: e.requested_ns(),
                        end_ns: e.acquired_ns(),
                        name: wait_name,
                        category: "lock.wait",
                        args: &args,
                        flows_out: &[],
                        flows_in: &[],
                    })?;
                    counts.slices += 1;
                }
                sink.slice(&Slice {
                    track: t,
                    start_ns: e.acquired_ns(),
                    end_ns: e.released_ns(),
                    name: hold_name,
                    category: "lock.hold",
                    args: &args,
                    flows_out: out,
                    flows_in: inn,
                })?;
                counts.slices += 1;
            } else if e.is_lock() {
                let why = match e.outcome() {
                    Outcome::Busy => "busy",
                    Outcome::TimedOut => "timed out",
                    _ => "error",
                };
                sink.slice(&Slice {
                    track: t,
                    start_ns: e.requested_ns(),
                    end_ns: e.acquired_ns(),
                    name: &format!("{wait_name} ({why})"),
                    category: "lock.failed",
                    args: &args,
                    flows_out: out,
                    flows_in: &[],
                })?;
                counts.slices += 1;
            } else {
                // Condition, barrier, semaphore: a wait; the barrier's
                // last arrival lets the others go.
                sink.slice(&Slice {
                    track: t,
                    start_ns: e.requested_ns(),
                    end_ns: e.acquired_ns(),
                    name: wait_name,
                    category,
                    args: &args,
                    flows_out: out,
                    flows_in: &[],
                })?;
                counts.slices += 1;
                if !inn.is_empty() {
                    sink.instant(&Slice {
                        track: t,
                        start_ns: e.acquired_ns(),
                        end_ns: e.acquired_ns(),
                        name: "woken",
                        category,
                        args: &[("lock", Arg::Str(lock))],
                        flows_out: &[],
                        flows_in: inn,
                    })?;
                    counts.instants += 1;
                }
            }
        }
        for l in tracks.lanes_of(track) {
            sink.end_track(l)?;
        }
    }
    Ok(())
}

/// True when a futex wait or OpenMP event of thread `tid`, lasting
/// `duration_ns` (a futex wait: its wait; an OpenMP mutex acquisition:
/// wait + hold, as a lock event's duration; a barrier: its wait), passes
/// the filters that apply to it: `--min-duration`, `--max-duration`,
/// `--thread`, and `--critical-only` (`on_path`: on the critical path
/// across recorders). `--lock` and `--site` name pthread locks and sites
/// and leave these alone.
pub(crate) fn keeps_sync(
    filter: &crate::locks::EventFilter,
    tid: u32,
    duration_ns: u64,
    on_path: bool,
) -> bool {
    filter.min_duration_ns.is_none_or(|m| duration_ns >= m)
        && filter.max_duration_ns.is_none_or(|m| duration_ns <= m)
        && (filter.threads.is_empty() || filter.threads.contains(&tid))
        && (!filter.critical_only || on_path)
}

/// [`keeps_sync`] for futex wait `i` of `ev`: its thread, its wait, and
/// whether it lies on the critical path across recorders (`on_path`, as
/// [`futex_on_path`] gives it).
pub(crate) fn keeps_futex_wait(
    filter: &crate::locks::EventFilter,
    ev: &FutexEvents,
    on_path: &[bool],
    i: usize,
) -> bool {
    let w = &ev.waits[i];
    let tid = ev.threads[w.thread() as usize].tid;
    keeps_sync(filter, tid, w.wait_ns(), on_path.get(i) == Some(&true))
}

/// [`keeps_sync`] for OpenMP synchronisation event `e`, index `i` of its
/// events: its thread, its wait + hold, and whether it lies on the
/// critical path across recorders (`on_path`, as [`openmp_on_path`] gives
/// it).
pub(crate) fn keeps_omp_event(
    filter: &crate::locks::EventFilter,
    e: &crate::openmp::sync::OmpSyncEvent,
    on_path: &[bool],
    i: usize,
) -> bool {
    keeps_sync(
        filter,
        e.tid,
        e.wait_ns() + e.hold_ns(),
        on_path.get(i) == Some(&true),
    )
}

/// Per futex wait of the futex analysis (`waits` of them), whether it lies
/// on the critical path across recorders (`locks.critical_path.across`,
/// [`crate::locks::across`]); empty when that path was not computed for
/// these waits (then no wait is on it).
pub(crate) fn futex_on_path<'a>(analysis: &'a Analysis<'_>, waits: usize) -> &'a [bool] {
    analysis
        .events::<LockEvents>()
        .and_then(|l| l.across.as_ref())
        .map(|a| &a.futex_on_path[..])
        .filter(|p| p.len() == waits)
        .unwrap_or(&[])
}

/// Per OpenMP synchronisation event ([`crate::openmp::sync::collect`],
/// `events` of them), whether it lies on the critical path across
/// recorders; empty when that path was not computed for these events.
pub(crate) fn openmp_on_path<'a>(analysis: &'a Analysis<'_>, events: usize) -> &'a [bool] {
    analysis
        .events::<LockEvents>()
        .and_then(|l| l.across.as_ref())
        .map(|a| &a.omp_on_path[..])
        .filter(|p| p.len() == events)
        .unwrap_or(&[])
}

/// The report's futex words (`futex.by_word`) by (pid, address), so that
/// exports name and classify a word as the report does.
pub(crate) fn futex_word_rows<'a>(
    analysis: &'a Analysis<'_>,
) -> FxHashMap<(u32, u64), &'a crate::futex::FutexWordRow> {
    analysis
        .report
        .section::<FutexReport>()
        .map(FutexReport::rows_by_address)
        .unwrap_or_default()
}

/// The report's OpenMP mutex names (`openmp.mutexes`) by (pid, kind,
/// address), so that exports name a critical section or lock as the
/// report does.
pub(crate) fn openmp_mutex_names<'a>(
    analysis: &'a Analysis<'_>,
) -> FxHashMap<(u32, &'a str, u64), &'a str> {
    analysis
        .report
        .section::<crate::openmp::OpenMpReport>()
        .map(|r| r.mutex_names())
        .unwrap_or_default()
}

/// How a futex wait ended, as its `result` argument reads.
fn futex_result(o: WaitOutcome) -> &'static str {
    match o {
        WaitOutcome::Woken => "woken",
        WaitOutcome::TimedOut => "timed out",
        WaitOutcome::ValueChanged => "value changed (EAGAIN)",
        WaitOutcome::Interrupted => "interrupted (EINTR)",
        WaitOutcome::Error => "error",
        WaitOutcome::Unfinished => "unfinished",
    }
}

/// The futex waits and wakes (`syscall(SYS_futex, …)` or the futex
/// tracepoints): per thread, in start order, each wait a `wait <word>`
/// slice (word, kind, site, result, critical-path flag), each wake a
/// `wake <word>` instant; a flow from the wake to every wait the futex
/// analysis pairs with it ([`crate::futex::match_wakers`]). On a thread
/// that already has a track with other events, they go to a child track
/// `futex` (slices of one track come in start order). The filters apply
/// as [`keeps_sync`] says (`--critical-only`: the waits on the critical
/// path across recorders, `locks.critical_path.across`); a wake is kept
/// when it starts a kept flow, or when no filter would drop it.
///
/// Memory beyond the analysis: 4 bytes per futex call (the per-thread
/// order), 12 per hand-over (flow ids), and names per word and site.
fn futex_events(
    analysis: &Analysis<'_>,
    ev: &FutexEvents,
    options: &ExportOptions,
    sink: &mut dyn TimelineSink,
    tracks: &mut Tracks,
    counts: &mut Counts,
) -> Result<(), ExportError> {
    let on_path = futex_on_path(analysis, ev.waits.len());
    let critical = |i: usize| on_path.get(i).copied().unwrap_or(false);
    let keep_wait = |i: usize| keeps_futex_wait(&options.filter, ev, on_path, i);
    // Words' names and kinds as the report gives them, by (pid, address).
    let words = futex_word_rows(analysis);
    // Flows: id = 2^61 + wait index, from the waking call to the wait.
    let mut flow_out: Vec<(u32, u64)> = Vec::new();
    let mut flow_in: Vec<(u32, u64)> = Vec::new();
    for (i, w) in ev.waits.iter().enumerate() {
        if let Some(k) = w.waker().filter(|_| keep_wait(i)) {
            let id = (1u64 << 61) + i as u64;
            flow_out.push((k, id));
            flow_in.push((i as u32, id));
        }
    }
    let mut flow_out = FlowIds::new(flow_out);
    let mut flow_in = FlowIds::new(flow_in);
    counts.flows += flow_in.ids.len() as u64;
    // Every call, by thread and start: waits as their index, wakes with
    // the top bit set.
    const WAKE: u32 = 1 << 31;
    let key = |c: u32| {
        if c & WAKE == 0 {
            let w = &ev.waits[c as usize];
            let t = &ev.threads[w.thread() as usize];
            (t.pid, t.tid, w.start_ns)
        } else {
            let w = &ev.wakes[(c & !WAKE) as usize];
            let t = &ev.threads[w.thread() as usize];
            (t.pid, t.tid, w.start_ns)
        }
    };
    let mut order: Vec<u32> = (0..ev.waits.len() as u32)
        .chain((0..ev.wakes.len() as u32).map(|k| k | WAKE))
        .collect();
    order.sort_by_key(|&c| (key(c), c));
    let mut sites = ShownSites::new(analysis.recording, &analysis.symbols, ev);
    let mut names: FxHashMap<(u32, u64), (String, String)> = FxHashMap::default();
    let mut start = 0;
    while start < order.len() {
        let (pid, tid, _) = key(order[start]);
        let mut end = start;
        while end < order.len() && key(order[end]).0 == pid && key(order[end]).1 == tid {
            end += 1;
        }
        let mut lanes = RecorderLanes::open(analysis, sink, tracks, pid, tid, "futex", FUTEX_LANE)?;
        for &c in &order[start..end] {
            let wake = c & WAKE != 0;
            let i = (c & !WAKE) as usize;
            let (c, s_ns, e_ns) = if wake {
                let w = &ev.wakes[i];
                (ev.wake_info(w), w.start_ns, w.end_ns)
            } else {
                let w = &ev.waits[i];
                (ev.wait_info(w), w.start_ns, w.end_ns)
            };
            let (process, word, site, stack) = (c.process, c.word, c.site, c.stack);
            let out = if wake { flow_out.get(i as u32) } else { &[] };
            if wake && out.is_empty() && !keeps_sync(&options.filter, tid, 0, false) {
                continue;
            }
            if !wake && !keep_wait(i) {
                continue;
            }
            let t = lanes.track(sink, tracks, s_ns, e_ns.max(s_ns))?;
            let (word_name, kind) = words.get(&(pid, word)).map_or((None, "futex"), |r| {
                (Some(r.name.as_str()), r.kind.as_str())
            });
            let (wait_name, wake_name) = names.entry((pid, word)).or_insert_with(|| {
                let n = word_name.map_or_else(|| format!("{word:#x}"), str::to_string);
                (format!("wait {n}"), format!("wake {n}"))
            });
            let word_arg = &wait_name[5..];
            let site = &sites.site(process, site, stack).1.display;
            if wake {
                let w = &ev.wakes[i];
                sink.instant(&Slice {
                    track: t,
                    start_ns: s_ns,
                    end_ns: s_ns,
                    name: wake_name,
                    category: "futex.wake",
                    args: &[
                        ("word", Arg::Str(word_arg)),
                        ("site", Arg::Str(site)),
                        ("woken", Arg::U64(u64::from(w.woken))),
                    ],
                    flows_out: out,
                    flows_in: &[],
                })?;
                counts.instants += 1;
            } else {
                let w = &ev.waits[i];
                sink.slice(&Slice {
                    track: t,
                    start_ns: s_ns,
                    end_ns: e_ns.max(s_ns),
                    name: wait_name,
                    category: "futex.wait",
                    args: &[
                        ("word", Arg::Str(word_arg)),
                        ("kind", Arg::Str(kind)),
                        ("site", Arg::Str(site)),
                        ("result", Arg::Str(futex_result(w.outcome()))),
                        ("critical_path", Arg::Bool(critical(i))),
                    ],
                    flows_out: &[],
                    flows_in: flow_in.get(i as u32),
                })?;
                counts.slices += 1;
            }
        }
        lanes.end(sink)?;
        start = end;
    }
    Ok(())
}

/// Lane numbers of the futex child tracks of a thread (the first, then its
/// overlapping lanes): apart from the lock events' lanes (1, 2, …) and
/// the OpenMP ones, as Chrome's export makes a thread id of each lane.
const FUTEX_LANE: u32 = 1 << 12;
/// Lane numbers of the OpenMP child tracks of a thread.
const OPENMP_LANE: u32 = 2 << 12;

/// The tracks of one thread's events of one recorder (`what`: `futex`,
/// `openmp`): the thread's own track when nothing was on it yet, else a
/// child track of it, lane `lane_base` (slices of one track come in start
/// order, and those of other recorders were given already); events that
/// overlap go to further child tracks, lanes `lane_base + 1`, ….
struct RecorderLanes<'a> {
    what: &'a str,
    pid: u32,
    tid: u32,
    thread: TrackId,
    lane_base: u32,
    placer: Lanes,
    /// Track of each lane, the first one first.
    tracks: Vec<TrackId>,
}

impl<'a> RecorderLanes<'a> {
    fn open(
        analysis: &Analysis<'_>,
        sink: &mut dyn TimelineSink,
        tracks: &mut Tracks,
        pid: u32,
        tid: u32,
        what: &'a str,
        lane_base: u32,
    ) -> io::Result<RecorderLanes<'a>> {
        let existed = tracks.threads.contains_key(&(pid, tid));
        let pname = program_of(analysis.recording, pid).unwrap_or_default();
        let tname = if tid == pid {
            format!("{pname} {tid} (main)")
        } else {
            format!("{pname} {tid}")
        };
        let thread = tracks.thread(sink, pid, tid, &tname)?;
        let first = if existed {
            let id = tracks.fresh();
            sink.track(&Track {
                id,
                parent: Some(thread),
                kind: TrackKind::Lane {
                    pid,
                    tid,
                    lane: lane_base,
                    name: &format!("tid {tid} {what}"),
                },
            })?;
            id
        } else {
            thread
        };
        Ok(RecorderLanes {
            what,
            pid,
            tid,
            thread,
            lane_base,
            placer: Lanes::default(),
            tracks: vec![first],
        })
    }

    /// The track of an event from `start_ns` to `end_ns`: the first lane
    /// whose open events it nests in, made when new.
    fn track(
        &mut self,
        sink: &mut dyn TimelineSink,
        tracks: &mut Tracks,
        start_ns: u64,
        end_ns: u64,
    ) -> io::Result<TrackId> {
        let lane = self.placer.place(start_ns, end_ns) as usize;
        while self.tracks.len() <= lane {
            let n = self.tracks.len();
            let id = tracks.fresh();
            sink.track(&Track {
                id,
                parent: Some(self.thread),
                kind: TrackKind::Lane {
                    pid: self.pid,
                    tid: self.tid,
                    lane: self.lane_base + n as u32,
                    name: &format!("tid {} {} (overlapping, lane {n})", self.tid, self.what),
                },
            })?;
            self.tracks.push(id);
        }
        Ok(self.tracks[lane])
    }

    /// Ends every track of these lanes.
    fn end(&self, sink: &mut dyn TimelineSink) -> io::Result<()> {
        for &l in &self.tracks {
            sink.end_track(l)?;
        }
        Ok(())
    }
}

/// The OpenMP synchronisation events ([`crate::openmp::sync::collect`]:
/// critical sections, OpenMP locks, atomic, ordered, barrier waits): per
/// thread, in start order, a mutex acquisition as a `wait <kind> <name>`
/// slice (acquire → acquired, when it waited) and a `hold <kind> <name>`
/// slice (acquired → released), a barrier wait as a `wait <kind> at
/// <site>` slice, with kind, site and critical-path flag as arguments
/// (names as in the report's `openmp.mutexes` and `openmp.barriers`). A
/// flow from the event that let a waiter go (the release's `hold` slice,
/// the barrier's last arrival) to the waiter's `hold` slice or barrier
/// wait. The filters apply as [`keeps_sync`] says (duration: wait + hold);
/// a flow is drawn when both its ends are kept.
///
/// Memory beyond the analysis: the events (collected again, as the
/// critical path did), 4 bytes per event for the order, names per object.
fn openmp_events(
    analysis: &Analysis<'_>,
    ev: &crate::openmp::sync::OmpSyncEvents,
    options: &ExportOptions,
    sink: &mut dyn TimelineSink,
    tracks: &mut Tracks,
    counts: &mut Counts,
) -> Result<(), ExportError> {
    let recording = analysis.recording;
    let on_path = openmp_on_path(analysis, ev.len());
    let critical = |i: usize| on_path.get(i).copied().unwrap_or(false);
    let keep = |i: usize| keeps_omp_event(&options.filter, &ev.get(i), on_path, i);
    // Mutex names as the report gives them, by (pid, kind, address).
    let mutex_names = openmp_mutex_names(analysis);
    let mut flow_out: Vec<(u32, u64)> = Vec::new();
    let mut flow_in: Vec<(u32, u64)> = Vec::new();
    for (i, k) in ev.wakers() {
        if keep(i) && keep(k) {
            let id = (1u64 << 60) + i as u64;
            flow_out.push((k as u32, id));
            flow_in.push((i as u32, id));
        }
    }
    let mut flow_out = FlowIds::new(flow_out);
    let mut flow_in = FlowIds::new(flow_in);
    counts.flows += flow_in.ids.len() as u64;
    let mut order: Vec<u32> = (0..ev.len() as u32).collect();
    order.sort_by_key(|&i| {
        let e = ev.get(i as usize);
        (e.pid(recording), e.tid, e.requested_ns, i)
    });
    let mut sites: FxHashMap<(u32, u64), String> = FxHashMap::default();
    let mut names: FxHashMap<(u32, bool, u8, u64), (String, String)> = FxHashMap::default();
    let mut start = 0;
    while start < order.len() {
        let first = ev.get(order[start] as usize);
        let (pid, tid) = (first.pid(recording), first.tid);
        let mut end = start;
        while end < order.len() && {
            let e = ev.get(order[end] as usize);
            e.pid(recording) == pid && e.tid == tid
        } {
            end += 1;
        }
        let mut lanes =
            RecorderLanes::open(analysis, sink, tracks, pid, tid, "openmp", OPENMP_LANE)?;
        for &i in &order[start..end] {
            let i = i as usize;
            let e = ev.get(i);
            if !keep(i) {
                continue;
            }
            let t = lanes.track(
                sink,
                tracks,
                e.requested_ns,
                e.released_ns.max(e.acquired_ns),
            )?;
            let site = sites
                .entry((e.process, e.site))
                .or_insert_with(|| {
                    analysis
                        .symbols
                        .site(recording.process_maps(e.process), e.site)
                        .display
                })
                .as_str();
            let kind = e.kind_name();
            let object = if e.barrier { e.site } else { e.object };
            let (wait_name, hold_name) = names
                .entry((e.process, e.barrier, e.kind, object))
                .or_insert_with(|| {
                    if e.barrier {
                        (format!("wait {kind} at {site}"), String::new())
                    } else {
                        let label = mutex_names.get(&(pid, kind, e.object)).map_or_else(
                            || format!("{kind} {:#x}", e.object),
                            |n| crate::openmp::mutex_label(kind, n),
                        );
                        (format!("wait {label}"), format!("hold {label}"))
                    }
                });
            let args = [
                ("kind", Arg::Str(kind)),
                ("site", Arg::Str(site)),
                ("critical_path", Arg::Bool(critical(i))),
            ];
            let (out, inn) = (flow_out.get(i as u32), flow_in.get(i as u32));
            if e.barrier {
                sink.slice(&Slice {
                    track: t,
                    start_ns: e.requested_ns,
                    end_ns: e.acquired_ns.max(e.requested_ns),
                    name: wait_name,
                    category: "openmp.barrier",
                    args: &args,
                    flows_out: out,
                    flows_in: inn,
                })?;
                counts.slices += 1;
                continue;
            }
            if e.acquired_ns > e.requested_ns {
                sink.slice(&Slice {
                    track: t,
                    start_ns: e.requested_ns,
                    end_ns: e.acquired_ns,
                    name: wait_name,
                    category: "openmp.wait",
                    args: &args,
                    flows_out: &[],
                    flows_in: &[],
                })?;
                counts.slices += 1;
            }
            sink.slice(&Slice {
                track: t,
                start_ns: e.acquired_ns,
                end_ns: e.released_ns.max(e.acquired_ns),
                name: hold_name,
                category: "openmp.hold",
                args: &args,
                flows_out: out,
                flows_in: inn,
            })?;
            counts.slices += 1;
        }
        lanes.end(sink)?;
        start = end;
    }
    Ok(())
}

/// A short description of an MPI call's peer, for its arguments.
fn peer(p: Peer) -> String {
    match p {
        Peer::Rank(r) => r.to_string(),
        Peer::Any => "MPI_ANY_SOURCE".into(),
        Peer::Null => "MPI_PROC_NULL".into(),
    }
}

/// The MPI calls, wait states and messages.
#[allow(clippy::too_many_arguments)]
fn mpi_events(
    analysis: &Analysis<'_>,
    rec: &MpiRecording,
    ev: &MpiEvents,
    options: &ExportOptions,
    sink: &mut dyn TimelineSink,
    tracks: &mut Tracks,
    counts: &mut Counts,
) -> Result<(), ExportError> {
    if options.filter.critical_only {
        return Ok(());
    }
    let min = options.filter.min_duration_ns.unwrap_or(0);
    let a = &ev.analysis;
    let keep = |e: MpiEventRef<'_>| e.exit_ns.saturating_sub(e.enter_ns) >= min;
    let event_of = |rank: u32, i: usize| -> Option<MpiEventRef<'_>> {
        rec.ranks
            .iter()
            .find(|t| t.rank == rank)
            .and_then(|t| t.events.get(i))
    };
    // Flows of messages: id = 2^62 + message index, on the posting send
    // and on the completing receive (or the posting one).
    let mut outs: FxHashMap<(u32, usize), Vec<u64>> = FxHashMap::default();
    let mut ins: FxHashMap<(u32, usize), Vec<u64>> = FxHashMap::default();
    for (k, m) in a.messages.iter().enumerate() {
        let recv = m.recv_complete.unwrap_or(m.recv_post);
        let both = event_of(m.source, m.send_post).is_some_and(keep)
            && event_of(m.dest, recv).is_some_and(keep);
        if both {
            let id = (1u64 << 62) + k as u64;
            outs.entry((m.source, m.send_post)).or_default().push(id);
            ins.entry((m.dest, recv)).or_default().push(id);
            counts.flows += 1;
        }
    }
    // Wait states by (rank, event).
    let mut waits: FxHashMap<(u32, usize), Vec<usize>> = FxHashMap::default();
    for (k, w) in a.waits.iter().enumerate() {
        waits.entry((w.rank, w.event)).or_default().push(k);
    }
    // Several wait states of one call all start at its entry: longest
    // first, so that they nest.
    for v in waits.values_mut() {
        v.sort_by_key(|&k| std::cmp::Reverse(a.waits[k].wait_ns));
    }
    let mut resolver = MapsSiteResolver::new(analysis.recording, &analysis.symbols);
    let mut sites: FxHashMap<(u32, u64), String> = FxHashMap::default();
    for t in &rec.ranks {
        let comm_names: FxHashMap<u64, String> = t
            .comms
            .iter()
            .map(|c| (c.id, comm_name(c.id, Some(&c.world_ranks))))
            .collect();
        // Per thread of the rank: lanes.
        let mut lanes: FxHashMap<u32, (TrackId, Lanes)> = FxHashMap::default();
        for (i, e) in t.events.iter().enumerate() {
            if !keep(e) {
                continue;
            }
            let (thread, placer) = match lanes.entry(e.tid) {
                Entry::Occupied(o) => o.into_mut(),
                Entry::Vacant(v) => {
                    let name = if e.tid == t.pid {
                        format!("rank {} {} (main)", t.rank, e.tid)
                    } else {
                        format!("rank {} {}", t.rank, e.tid)
                    };
                    let id = tracks.thread(sink, t.pid, e.tid, &name)?;
                    v.insert((id, Lanes::default()))
                }
            };
            let lane = placer.place(e.enter_ns, e.exit_ns);
            let track = tracks.lane(sink, *thread, t.pid, e.tid, lane)?;
            let site = sites
                .entry((t.pid, e.site))
                .or_insert_with(|| resolver.site(t.pid, e.site).display);
            let comm = comm_names
                .get(&e.comm)
                .cloned()
                .unwrap_or_else(|| comm_name(e.comm, None));
            let mut args: Vec<(&'static str, Arg<'_>)> = vec![
                ("rank", Arg::U64(t.rank.into())),
                ("site", Arg::Str(site)),
                ("communicator", Arg::Str(&comm)),
            ];
            let (dest, src);
            if let Some(s) = &e.send {
                dest = peer(s.dest);
                args.push(("dest", Arg::Str(&dest)));
                args.push(("tag", Arg::U64(s.tag as u64)));
                args.push(("bytes", Arg::U64(s.bytes)));
            }
            if let Some(r) = &e.recv {
                src = peer(r.source);
                args.push(("source", Arg::Str(&src)));
            }
            if let Some(root) = e.root {
                args.push(("root", Arg::U64(root.into())));
            }
            if e.op.is_collective() {
                args.push(("bytes_sent", Arg::U64(e.coll_bytes_sent)));
                args.push(("bytes_received", Arg::U64(e.coll_bytes_recv)));
            }
            let empty = Vec::new();
            sink.slice(&Slice {
                track,
                start_ns: e.enter_ns,
                end_ns: e.exit_ns,
                name: e.op.name(),
                category: "mpi",
                args: &args,
                flows_out: outs.get(&(t.rank, i)).unwrap_or(&empty),
                flows_in: ins.get(&(t.rank, i)).unwrap_or(&empty),
            })?;
            counts.slices += 1;
            for &k in waits.get(&(t.rank, i)).map(Vec::as_slice).unwrap_or(&[]) {
                let w = &a.waits[k];
                let end = (e.enter_ns + w.wait_ns).min(e.exit_ns.max(e.enter_ns));
                sink.slice(&Slice {
                    track,
                    start_ns: e.enter_ns,
                    end_ns: end,
                    name: w.pattern.label(),
                    category: "mpi.wait",
                    args: &[
                        ("pattern", Arg::Str(w.pattern.key())),
                        ("wait_ns", Arg::U64(w.wait_ns)),
                        ("caused_by_rank", Arg::U64(w.cause.into())),
                        ("site", Arg::Str(site)),
                    ],
                    flows_out: &[],
                    flows_in: &[],
                })?;
                counts.slices += 1;
            }
        }
        for (thread, _) in lanes.values() {
            for l in tracks.lanes_of(*thread) {
                sink.end_track(l)?;
            }
        }
    }
    Ok(())
}

/// Counter tracks of the service-time samples (module docs).
fn service_counters(
    recording: &crate::recording::Recording,
    file: &contend_trace::service::SampleFile,
    sink: &mut dyn TimelineSink,
    tracks: &mut Tracks,
    counts: &mut Counts,
) -> io::Result<()> {
    use contend_trace::service::ENTRY_NEW;
    let active = tracks.fresh();
    sink.track(&Track {
        id: active,
        parent: None,
        kind: TrackKind::Counter {
            pid: 0,
            name: "Active threads (service time / longest thread's)",
            unit: "threads",
        },
    })?;
    let busy = tracks.fresh();
    sink.track(&Track {
        id: busy,
        parent: None,
        kind: TrackKind::Counter {
            pid: 0,
            name: "CPUs busy (service time / interval)",
            unit: "CPUs",
        },
    })?;
    let queue = tracks.fresh();
    sink.track(&Track {
        id: queue,
        parent: None,
        kind: TrackKind::Counter {
            pid: 0,
            name: "Run queue (runnable tasks, system)",
            unit: "tasks",
        },
    })?;
    // Per thread: its counter track, last cumulative run time, last rate,
    // the last tick that had an entry of it.
    let mut threads: FxHashMap<(u32, u32), (TrackId, u64, f64, usize)> = FxHashMap::default();
    let mut prev_t = file.header.start_ns;
    let names: FxHashMap<u32, String> = recording
        .processes
        .iter()
        .map(|p| {
            (
                p.trace.pid,
                process_name(&p.trace.cmdline, &p.trace.exe_path),
            )
        })
        .collect();
    for (n, tick) in file.ticks.iter().enumerate() {
        let t = tick.header.monotonic_ns;
        let dt = t.saturating_sub(prev_t);
        let (mut total, mut longest) = (0u64, 0u64);
        for e in &tick.entries {
            let key = (e.pid, e.tid);
            let slot = match threads.entry(key) {
                Entry::Occupied(o) => o.into_mut(),
                Entry::Vacant(v) => {
                    let pname = names.get(&e.pid).cloned().unwrap_or_default();
                    let main = if e.tid == e.pid { " (main)" } else { "" };
                    let tname = if pname.is_empty() {
                        format!("{}{main}", e.tid)
                    } else {
                        format!("{pname} {}{main}", e.tid)
                    };
                    let thread = tracks.thread(sink, e.pid, e.tid, &tname)?;
                    let id = tracks.fresh();
                    sink.track(&Track {
                        id,
                        parent: Some(thread),
                        kind: TrackKind::Counter {
                            pid: e.pid,
                            name: &format!("CPU time rate {}", e.tid),
                            unit: "CPU s/s",
                        },
                    })?;
                    v.insert((id, 0, 0.0, n))
                }
            };
            let tau = if e.flags & ENTRY_NEW == 0 && e.run_ns >= slot.1 {
                e.run_ns - slot.1
            } else {
                e.run_ns
            };
            slot.1 = e.run_ns;
            slot.3 = n;
            total += tau;
            longest = longest.max(tau);
            if dt > 0 {
                let rate = tau as f64 / dt as f64;
                sink.counter(slot.0, prev_t, rate)?;
                slot.2 = rate;
                counts.counter_values += 1;
            }
        }
        // Threads that ran before but not in this interval: rate 0.
        if dt > 0 {
            for slot in threads.values_mut() {
                if slot.2 != 0.0 && slot.3 != n {
                    sink.counter(slot.0, prev_t, 0.0)?;
                    slot.2 = 0.0;
                    counts.counter_values += 1;
                }
            }
            let a = crate::service::interval_active_threads(total, longest);
            sink.counter(active, prev_t, a)?;
            sink.counter(busy, prev_t, total as f64 / dt as f64)?;
            counts.counter_values += 2;
        }
        if let Some(rq) = tick.header.run_queue_read() {
            sink.counter(queue, t, f64::from(rq))?;
            counts.counter_values += 1;
        }
        prev_t = prev_t.max(t);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flow_ids_in_order_backwards_and_with_jumps() {
        // Event 3 starts two flows (a barrier's last arrival), 7 one, 40 one.
        let mut f = FlowIds::new(vec![(7, 8), (3, 5), (40, 41), (3, 2), (3, 5)]);
        // In index order, as the walk goes through a thread's sorted events.
        assert_eq!(f.get(0), &[] as &[u64]);
        assert_eq!(f.get(3), &[2, 5]); // sorted, the duplicate (3, 5) once
        assert_eq!(f.get(3), &[2, 5]); // asked again
        assert_eq!(f.get(4), &[] as &[u64]);
        assert_eq!(f.get(7), &[8]);
        // A step back (a thread whose events are not in start order).
        assert_eq!(f.get(3), &[2, 5]);
        // A jump forward past everything but the last, then past the end.
        assert_eq!(f.get(40), &[41]);
        assert_eq!(f.get(41), &[] as &[u64]);
        assert_eq!(f.get(2), &[] as &[u64]);
        // A long run: the cursor goes more than 16 steps at once.
        let mut g = FlowIds::new((0..100).map(|i| (i * 2, u64::from(i))).collect());
        assert_eq!(g.get(0), &[0]);
        assert_eq!(g.get(150), &[75]);
        assert_eq!(g.get(151), &[] as &[u64]);
        assert_eq!(g.get(198), &[99]);
        assert_eq!(g.get(10), &[5]);
    }

    #[test]
    fn rank_names() {
        assert_eq!(
            rank_name(3, 1234, Some("ring"), "node7"),
            "rank 3 (pid 1234) ring on node7"
        );
        assert_eq!(rank_name(0, 9, None, ""), "rank 0 (pid 9)");
        assert_eq!(rank_name(1, 9, Some(""), "h"), "rank 1 (pid 9) on h");
    }
}
