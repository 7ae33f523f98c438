//! The scheduler-event source of the service-time sampler
//! ([`crate::sampler`]): per-thread service time from the kernel's
//! context-switch and wake-up events instead of one `pread` of
//! `/proc/<pid>/task/<tid>/schedstat` per thread and tick, so that its cost
//! follows the context switches of the target, not its thread count
//! (issue 15, "a sampler under 1% of a core").
//!
//! Events, opened with `perf_event_open(2)` once per CPU for the whole
//! machine where the kernel allows it ([`SchedEvents::open_system_wide`]:
//! the records of processes outside the target's tree are dropped, a
//! process joining the tree when a process of it forks it), else on every
//! thread of the target and inherited by every thread and process they
//! start ([`SchedEvents::open`]; the kernel then also switches each
//! thread's events with it, which costs about a fifth more per record:
//! docs/benchmarks.md, "The sampler's scheduler events for the whole
//! machine"), all written into one ring buffer per CPU (the ring reader of
//! [`crate::probes`]), timestamps on CLOCK_MONOTONIC:
//! - a software `dummy` event with `context_switch` and `task`: a
//!   `PERF_RECORD_SWITCH` each time a thread of the target is switched in
//!   or out (out flagged `PERF_RECORD_MISC_SWITCH_OUT_PREEMPT` when it was
//!   still runnable; `PERF_RECORD_SWITCH_CPU_WIDE` from system-wide
//!   events), and `PERF_RECORD_FORK` / `PERF_RECORD_EXIT` for its
//!   threads;
//! - the tracepoints `sched:sched_wakeup` and `sched:sched_wakeup_new`
//!   (raw data: the woken pid at offset 24 of
//!   `events/sched/sched_wakeup/format`), delivered to the woken thread's
//!   events whoever wakes it.
//!
//! Per thread created after the events exist (seen in a fork record, so
//! its counters start at 0, as `schedstat`'s do) the source keeps the same
//! three figures as `schedstat` (Venter 2016, Section 3.2.1.1):
//! - run time, ns: the sum of (switch-out − switch-in);
//! - run-queue wait, ns: the sum of (switch-in − the moment it became
//!   runnable: its wake-up, or a preempted switch-out), the kernel's
//!   `run_delay`;
//! - time slices: the number of switch-ins (`pcount`).
//!
//! At a tick a running thread's run time (a waiting thread's wait) counts
//! up to the tick, so there is no kernel-tick lag as with `schedstat`.
//! Records are processed in time order up to [`SLACK_NS`] before the tick
//! (a record may reach its CPU's ring a little after its timestamp); the
//! figures of a tick are taken at that moment. Threads that already ran
//! when the events were opened keep being read from `schedstat` by the
//! sampler (their counters do not start at 0).
//!
//! Who may: the tracepoint ids are read from tracefs (root only by
//! default) and raw tracepoint data needs `kernel.perf_event_paranoid`
//! ≤ -1 or `CAP_PERFMON`; when refused, [`SchedEvents::open`] says why and
//! the sampler reads `schedstat` as before.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::thread::JoinHandle;

use contend_trace::service::{Entry, ENTRY_FROM_EVENTS, ENTRY_NEW};
use rustc_hash::{FxHashMap, FxHashSet};

use crate::probes::{
    ioctl, is_switch, lost_count, perf_open, records, sample_fields, switch_fields, task_fields,
    Attr, ProcessTree, Ring, ThreadEventsScope, F_CONTEXT_SWITCH, F_EXCLUDE_HV, F_EXCLUDE_KERNEL,
    F_INHERIT, F_SAMPLE_ID_ALL, F_TASK, F_USE_CLOCKID, F_WATERMARK, IOC_ID, IOC_SET_OUTPUT,
    REC_EXIT, REC_FORK, REC_LOST, REC_SAMPLE, SAMPLE_IDENTIFIER, SAMPLE_RAW, SAMPLE_TID,
    SAMPLE_TIME, SW_DUMMY, TYPE_SOFTWARE, TYPE_TRACEPOINT,
};

/// Records are processed up to this long before a tick, ns: a record
/// reaches its CPU's ring a little after its timestamp.
pub const SLACK_NS: u64 = 2_000_000;
/// Ring buffer pages per CPU (512 KiB: about 25 ms of 512 threads each
/// waking every millisecond).
const RING_PAGES: usize = 128;
/// Ring buffer pages per CPU of system-wide events (1 MiB): room for the
/// rest of the machine's switches between two drains ([`DRAIN_NS`]; a
/// CPU switching 200,000 times a second writes about 700 KiB in 20 ms).
const SYSTEM_WIDE_RING_PAGES: usize = 256;
/// The sampler drains the rings at least this often, ns, whatever its
/// interval ([`SchedEvents::drain`]), except while it sleeps through ticks
/// (`contend_record::sampler::COAST_NS`), when the rings' watermarks
/// ([`WATERMARK_PARTS`]) wake it instead: system-wide events carry the whole
/// machine's switches, which can fill a ring in a tick of 100 ms. (With
/// the default interval of 10 ms the ticks come first.) A machine that
/// fills a ring faster is drained more often, down to [`MIN_DRAIN_NS`]
/// (`contend_record::sampler`'s ring reads: each read plans the next one
/// for when the fullest ring would be a quarter full at the rate just
/// seen). A quiet machine's rate can jump twentyfold within a period (a
/// ping-pong beside the program moving both its threads onto one CPU:
/// a ring 5 % full after 20 ms, full 20 ms later, 3,819 records lost), so
/// this longest period is a third of the fastest fill seen (30 ms on the
/// Intel guest of docs/benchmarks.md).
pub const DRAIN_NS: u64 = 10_000_000;
/// The shortest time between two drains of the rings, ns. Two threads
/// passing a byte over pipes on one CPU of the Intel guest of
/// docs/benchmarks.md fill a 1 MiB ring in about 30 ms (some 700,000
/// records a second).
pub const MIN_DRAIN_NS: u64 = 2_000_000;

/// The kernel wakes a poll of a ring (see
/// [`SchedEvents::ring_fds`]) each time a `1/WATERMARK_PARTS` of the
/// ring's bytes were written to it (its watermark): a sampler that sleeps
/// longer than a ring takes to fill is woken to drain it in time, however
/// suddenly the machine's switch rate jumps.
pub const WATERMARK_PARTS: usize = 4;

/// Gives `attrs` the rings' watermark: the kernel wakes a poll of a ring
/// of `ring_pages` pages each time a `1/WATERMARK_PARTS` of its bytes
/// were written to it ([`SchedEvents::ring_fds`]).
fn set_watermark(attrs: &mut [Attr], ring_pages: usize) {
    for a in attrs {
        a.flags |= F_WATERMARK;
        a.wakeup = (ring_pages * 4096 / WATERMARK_PARTS) as u32;
    }
}

/// The source of the service-time samples, chosen with the environment
/// variable `CONTEND_SERVICE_SOURCE` (`schedstat` or `sched-events`;
/// unset or anything else: [`ServiceSource::Auto`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ServiceSource {
    /// Scheduler events where allowed, else `schedstat`.
    #[default]
    Auto,
    /// `/proc/<pid>/task/<tid>/schedstat` of every thread, every tick.
    Schedstat,
    /// Scheduler events (`schedstat` for the threads that ran before them,
    /// and for all of them when the events are refused).
    SchedEvents,
}

impl ServiceSource {
    /// The source `CONTEND_SERVICE_SOURCE` asks for.
    pub fn from_env() -> ServiceSource {
        match std::env::var("CONTEND_SERVICE_SOURCE").as_deref() {
            Ok("schedstat") => ServiceSource::Schedstat,
            Ok("sched-events") => ServiceSource::SchedEvents,
            _ => ServiceSource::Auto,
        }
    }
}

/// Scheduling state of a traced thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sched {
    /// Blocked (switched out without being runnable), or not yet woken.
    Sleeping,
    /// Runnable, waiting in a run queue since `since`.
    Ready,
    /// On a CPU since `since`.
    Running,
}

/// One scheduler record as [`SchedEvents`] keeps it: decoded from a ring
/// without allocating (the wake-up's raw tracepoint data is read for the
/// woken thread only), 24 bytes and `Copy`, so that sorting and keeping
/// the records between ticks moves little memory (issue 15, "a sampler
/// under 1% of a core"). Times are CLOCK_MONOTONIC ns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SchedRec {
    /// Thread `tid` of process `pid` was switched in or out (`preempt`:
    /// out while still runnable).
    Switch {
        pid: u32,
        tid: u32,
        time: u64,
        out: bool,
        preempt: bool,
    },
    /// `sched_wakeup` or `sched_wakeup_new` of thread `woken` (0 when the
    /// raw data was too short to name it), written in the context of
    /// process `pid` (the waker's).
    Wakeup { pid: u32, woken: u32, time: u64 },
    /// Thread `tid` of process `pid` was started by process `ppid`.
    Fork {
        pid: u32,
        ppid: u32,
        tid: u32,
        time: u64,
    },
    /// Thread `tid` of process `pid` ended.
    Exit { pid: u32, tid: u32, time: u64 },
    /// The kernel dropped this many records (a ring was full).
    Lost(u64),
}

const _: () = assert!(std::mem::size_of::<SchedRec>() <= 24);

impl SchedRec {
    /// The record's time (0 for a loss count, which has none).
    fn time(&self) -> u64 {
        match *self {
            SchedRec::Switch { time, .. }
            | SchedRec::Wakeup { time, .. }
            | SchedRec::Fork { time, .. }
            | SchedRec::Exit { time, .. } => time,
            SchedRec::Lost(_) => 0,
        }
    }
}

/// Decodes the scheduler records of `bytes` (whole records from a ring;
/// `sample_type_of`: each event's sample type by id) into `out`: switches,
/// wake-ups, forks, exits and losses; the rest (thread names, exec and
/// mmap records, which the events also bring) is skipped.
fn decode_sched(bytes: &[u8], sample_type_of: &FxHashMap<u64, u64>, out: &mut Vec<SchedRec>) {
    for (kind, misc, r) in records(bytes) {
        match kind {
            REC_SAMPLE => {
                let f = sample_fields(r, sample_type_of);
                out.push(SchedRec::Wakeup {
                    pid: f.pid,
                    woken: woken_tid(&r[f.raw]).unwrap_or(0),
                    time: f.time,
                });
            }
            REC_FORK => {
                let (pid, ppid, tid, _, time) = task_fields(r);
                out.push(SchedRec::Fork {
                    pid,
                    ppid,
                    tid,
                    time,
                });
            }
            REC_EXIT => {
                let (pid, _, tid, _, time) = task_fields(r);
                out.push(SchedRec::Exit { pid, tid, time });
            }
            REC_LOST => out.push(SchedRec::Lost(lost_count(r))),
            k if is_switch(k) => {
                if let Some((pid, tid, time, out_, preempt)) = switch_fields(k, misc, r) {
                    out.push(SchedRec::Switch {
                        pid,
                        tid,
                        time,
                        out: out_,
                        preempt,
                    });
                }
            }
            _ => {}
        }
    }
}

/// One thread followed by events.
#[derive(Debug, Clone)]
struct Thread {
    pid: u32,
    run_ns: u64,
    wait_ns: u64,
    slices: u32,
    state: Sched,
    since: u64,
    exited: bool,
    /// The figures of its last entry.
    reported: Option<(u64, u64, u32)>,
    /// Listed in [`SchedEvents`]' `touched`.
    touched: bool,
}

impl Thread {
    fn new(pid: u32, time: u64) -> Thread {
        Thread {
            pid,
            run_ns: 0,
            wait_ns: 0,
            slices: 0,
            state: Sched::Sleeping,
            since: time,
            exited: false,
            reported: None,
            touched: false,
        }
    }

    /// The figures at `at`: what is committed plus the running (or
    /// waiting) stretch up to `at`.
    fn at(&self, at: u64) -> (u64, u64, u32) {
        let open = at.saturating_sub(self.since);
        match self.state {
            Sched::Running if !self.exited => (self.run_ns + open, self.wait_ns, self.slices),
            Sched::Ready if !self.exited => (self.run_ns, self.wait_ns + open, self.slices),
            _ => (self.run_ns, self.wait_ns, self.slices),
        }
    }
}

/// The open scheduler events of one target and the threads they follow.
pub struct SchedEvents {
    rings: Vec<Ring>,
    events: Vec<OwnedFd>,
    /// CPU of each ring.
    cpus: Vec<u32>,
    /// The event attributes: context switches, then (unless refused) the
    /// `sched_wakeup` and `sched_wakeup_new` tracepoints.
    attrs: Vec<Attr>,
    /// Why the wake-up tracepoints are not among the events, when they are
    /// not ([`SchedEvents::open`]): then a thread's run-queue wait counts
    /// only the waits after a preemption.
    pub wakeups_refused: Option<String>,
    sample_type_of: FxHashMap<u64, u64>,
    threads: FxHashMap<u32, Thread>,
    /// Decoded records not yet processed (later than the cut).
    pending: Vec<SchedRec>,
    /// `pending[..drained]` were kept by a [`SchedEvents::drain`] for good
    /// (the target's): later drains look only at the records after them,
    /// so that draining often between two ticks costs per record read,
    /// not per record pending.
    drained: usize,
    /// Reused buffers of [`SchedEvents::drain`]: the records read since
    /// the last drain, and those it could not judge yet.
    fresh: Vec<SchedRec>,
    undecided: Vec<SchedRec>,
    /// Threads whose fork record is pending.
    pending_forks: FxHashSet<u32>,
    /// Threads whose figures may have changed since their last entry
    /// (records came for them, or they are running or waiting), each once:
    /// a thread is listed while its `touched` flag is set, so that a
    /// record marks its thread without a hash insertion.
    touched: Vec<u32>,
    /// Reused buffer of [`SchedEvents::entries`].
    scratch: Vec<u32>,
    raw: Vec<u8>,
    /// Processes seen starting (fork records of a new process), until
    /// the caller takes them.
    pub new_processes: Vec<u32>,
    /// Threads seen starting (pid, tid), until the caller takes them.
    pub new_threads: Vec<(u32, u32)>,
    /// Threads the events were opened on explicitly (with system-wide
    /// events: whose processes were added to `tree`).
    attached: FxHashSet<u32>,
    /// Per-task events (inherited) or one of each per CPU for the whole
    /// machine.
    scope: ThreadEventsScope,
    /// With system-wide events: the processes of the target, from the
    /// start and from fork records (a new process joins when a process of
    /// the tree forked it); the records of every other process are
    /// dropped.
    tree: ProcessTree,
    /// Records the kernel dropped (rings full).
    pub lost: u64,
    /// The largest share of its ring that one ring held at the last
    /// [`SchedEvents::refresh`] (0–1): how close the fullest CPU's ring
    /// came to dropping records since the read before.
    pub fullest_ring_share: f64,
    /// Records processed.
    pub records: u64,
    /// Threads followed by events so far.
    pub threads_seen: u64,
}

/// The id of tracepoint `sched:<name>` from tracefs (mounted first where
/// it is not and the recorder may: [`crate::tracefs`]).
fn tracepoint_id(name: &str) -> Result<u64, String> {
    let mut last = None;
    for base in crate::tracefs::places() {
        let p = base.join("events/sched").join(name).join("id");
        match std::fs::read_to_string(&p) {
            Ok(t) => {
                return t
                    .trim()
                    .parse()
                    .map_err(|_| format!("{}: not a number", p.display()))
            }
            Err(e) => last = Some(format!("{}: {e}", p.display())),
        }
    }
    let why = match crate::tracefs::ensure_mounted() {
        crate::tracefs::Mount::Missing(why) => why.clone(),
        _ => "tracefs is mounted, but the tracepoint is not in it".into(),
    };
    Err(format!(
        "the sched:{name} tracepoint id cannot be read ({}; {why})",
        last.unwrap_or_default()
    ))
}

/// The thread a `sched_wakeup` / `sched_wakeup_new` sample woke: the pid
/// (a thread id) at offset 24 of its raw data.
fn woken_tid(raw: &[u8]) -> Option<u32> {
    raw.get(24..28)
        .map(|b| u32::from_le_bytes(b.try_into().unwrap()))
}

/// Lists thread `tid` (`t`) in `touched` unless it is listed already.
fn touch(touched: &mut Vec<u32>, tid: u32, t: &mut Thread) {
    if !t.touched {
        t.touched = true;
        touched.push(tid);
    }
}

/// Thread `tid` of `threads` if it is followed and has not ended (a tid
/// reused after its exit is another thread's).
fn followed(threads: &mut FxHashMap<u32, Thread>, tid: u32) -> Option<&mut Thread> {
    threads.get_mut(&tid).filter(|t| !t.exited)
}

/// The sentence for a `perf_event_open` of the scheduler events refused
/// with `errno`.
fn refused(errno: i32) -> String {
    crate::futex_trace::not_allowed(
        errno,
        "perf_event_open of the scheduler events (context switches, sched:sched_wakeup)",
    )
    .replacen(
        "futex waits are not traced",
        "scheduler events are not used",
        1,
    )
}

impl SchedEvents {
    /// The state before any event is opened: the CPUs to open them on and
    /// the event attributes (context switches, then `sched_wakeup` and
    /// `sched_wakeup_new` unless refused); no rings, no threads.
    fn unopened(cpus: Vec<u32>, attrs: Vec<Attr>) -> SchedEvents {
        SchedEvents {
            rings: Vec::new(),
            events: Vec::new(),
            cpus,
            attrs,
            wakeups_refused: None,
            sample_type_of: FxHashMap::default(),
            threads: FxHashMap::default(),
            pending: Vec::new(),
            drained: 0,
            fresh: Vec::new(),
            undecided: Vec::new(),
            pending_forks: FxHashSet::default(),
            touched: Vec::new(),
            scratch: Vec::new(),
            raw: Vec::new(),
            new_processes: Vec::new(),
            new_threads: Vec::new(),
            attached: FxHashSet::default(),
            scope: ThreadEventsScope::PerTask,
            tree: ProcessTree::default(),
            lost: 0,
            fullest_ring_share: 0.0,
            records: 0,
            threads_seen: 0,
        }
    }

    /// Opens the events on every thread in `tids` (the running target's
    /// threads) on every online CPU. Where the wake-up tracepoints are
    /// refused (tracefs is root-only; the kernel allows a user's own
    /// threads' context switches under `kernel.perf_event_paranoid` 2),
    /// the context switches alone, with the reason in
    /// [`SchedEvents::wakeups_refused`]: run time and time slices stay
    /// exact, the run-queue wait holds the waits after preemptions only.
    /// Errors: a sentence naming what was refused and why
    /// (`perf_event_open` refused with `kernel.perf_event_paranoid`, a
    /// ring that cannot be mapped).
    pub fn open(tids: &[u32]) -> Result<SchedEvents, String> {
        let (mut attrs, wakeups_refused) = match Self::attrs() {
            Ok(a) => (a, None),
            Err(why) => (vec![Self::switch_attr()], Some(why)),
        };
        set_watermark(&mut attrs, RING_PAGES);
        let mut s = SchedEvents::unopened(crate::cpus::online_cpu_list(), attrs);
        s.wakeups_refused = wakeups_refused;
        let mut opened = false;
        for &tid in tids {
            match s.attach(0, tid) {
                Ok(()) => opened = true,
                Err(libc::ESRCH) => {}
                Err(e) => return Err(refused(e)),
            }
        }
        if !opened {
            return Err("scheduler events: the target has no thread left to open them on".into());
        }
        Ok(s)
    }

    /// Opens the events once per CPU for every process of the machine
    /// (`pid` −1, not inherited), following the processes `pids` and
    /// those they start: a thread's context switches then cost it only
    /// the record, not a switch of its own perf events at each of them as
    /// per-task events do (docs/benchmarks.md, "The sampler's scheduler
    /// events for the whole machine"). Errors: as [`SchedEvents::open`];
    /// the kernel refuses system-wide events without `CAP_PERFMON` (or
    /// root) under `kernel.perf_event_paranoid` > 0.
    pub fn open_system_wide(pids: &[u32]) -> Result<SchedEvents, String> {
        let mut attrs = Self::attrs()?;
        for a in &mut attrs {
            a.flags &= !F_INHERIT;
        }
        set_watermark(&mut attrs, SYSTEM_WIDE_RING_PAGES);
        let mut s = SchedEvents::unopened(crate::cpus::online_cpu_list(), attrs);
        s.scope = ThreadEventsScope::SystemWide;
        s.open_on(-1).map_err(refused)?;
        s.tree.extend(pids.iter().copied());
        Ok(s)
    }

    /// System-wide events ([`SchedEvents::open_system_wide`]) where the
    /// kernel allows them and `CONTEND_SCHED_EVENTS=per-task` does not ask
    /// otherwise, else per-task ones on `tids`
    /// ([`SchedEvents::open`]). `pids`: the target's processes; `tids`:
    /// their threads.
    pub fn open_for(pids: &[u32], tids: &[u32]) -> Result<SchedEvents, String> {
        if !ThreadEventsScope::per_task_requested("CONTEND_SCHED_EVENTS") {
            if let Ok(s) = Self::open_system_wide(pids) {
                return Ok(s);
            }
        }
        Self::open(tids)
    }

    /// The scope the events were opened with.
    pub fn scope(&self) -> ThreadEventsScope {
        self.scope
    }

    /// The descriptors to `poll` (`POLLIN`) for the rings' watermarks, one
    /// per CPU: the kernel makes one readable each time a quarter of its
    /// ring was written ([`WATERMARK_PARTS`]), so a sampler that polls them
    /// may sleep for longer than a ring takes to fill. With per-task
    /// events a ring's descriptor is the event of the thread it was first
    /// opened on, and it reports a hang-up (`POLLHUP`) once that thread has
    /// ended: the sampler then stops polling them.
    pub fn ring_fds(&self) -> Vec<RawFd> {
        self.rings.iter().map(|r| r.leader.as_raw_fd()).collect()
    }

    /// The context-switch event (with fork and exit records), inherited.
    fn switch_attr() -> Attr {
        Attr {
            kind: TYPE_SOFTWARE,
            size: 128,
            config: SW_DUMMY,
            sample_period: 1,
            sample_type: SAMPLE_IDENTIFIER | SAMPLE_TID | SAMPLE_TIME,
            flags: F_INHERIT
                | F_TASK
                | F_CONTEXT_SWITCH
                | F_EXCLUDE_KERNEL
                | F_EXCLUDE_HV
                | F_USE_CLOCKID
                | F_SAMPLE_ID_ALL,
            clockid: libc::CLOCK_MONOTONIC,
            ..Attr::default()
        }
    }

    /// The three event attributes (context switches, `sched_wakeup`,
    /// `sched_wakeup_new`), inherited. Errors: the tracepoints' ids cannot
    /// be read (tracefs is root-only by default), or
    /// `CONTEND_SCHED_WAKEUPS=0` turned them off (for tests of the
    /// switches alone).
    fn attrs() -> Result<Vec<Attr>, String> {
        if std::env::var("CONTEND_SCHED_WAKEUPS").is_ok_and(|v| v == "0") {
            return Err("the wake-up tracepoints were turned off (CONTEND_SCHED_WAKEUPS=0)".into());
        }
        let wakeup = tracepoint_id("sched_wakeup")?;
        let wakeup_new = tracepoint_id("sched_wakeup_new")?;
        let sid = SAMPLE_IDENTIFIER | SAMPLE_TID | SAMPLE_TIME;
        let clock = F_USE_CLOCKID | F_SAMPLE_ID_ALL;
        let tp = |config| Attr {
            kind: TYPE_TRACEPOINT,
            size: 128,
            config,
            sample_period: 1,
            sample_type: sid | SAMPLE_RAW,
            flags: F_INHERIT | clock,
            clockid: libc::CLOCK_MONOTONIC,
            ..Attr::default()
        };
        Ok(vec![Self::switch_attr(), tp(wakeup), tp(wakeup_new)])
    }

    /// Follows thread `tid` of process `pid` too: per-task events are
    /// opened on it (one of each per CPU, into that CPU's ring);
    /// system-wide ones follow its process from now on. Errors: the errno
    /// of `perf_event_open` (ESRCH: the thread has ended) or of mapping a
    /// ring.
    pub fn attach(&mut self, pid: u32, tid: u32) -> Result<(), i32> {
        if self.scope == ThreadEventsScope::SystemWide {
            self.tree.insert(pid);
        } else {
            self.open_on(tid as i32)?;
        }
        self.attached.insert(tid);
        Ok(())
    }

    /// Opens the three events for `pid` (a thread, or −1: every process)
    /// on every CPU, each into that CPU's ring (the first opening makes
    /// the rings).
    fn open_on(&mut self, pid: i32) -> Result<(), i32> {
        let first = self.rings.is_empty();
        let mut fds = Vec::new();
        for (ci, &cpu) in self.cpus.iter().enumerate() {
            for attr in &self.attrs {
                let fd = perf_open(attr, pid, cpu as i32)?;
                let mut id = 0u64;
                let _ = ioctl(fd.as_raw_fd(), IOC_ID, &mut id as *mut u64 as libc::c_ulong);
                self.sample_type_of.insert(id, attr.sample_type);
                fds.push((ci, fd));
            }
        }
        for (ci, fd) in fds {
            if first && self.rings.len() == ci {
                let pages = if self.scope == ThreadEventsScope::SystemWide {
                    SYSTEM_WIDE_RING_PAGES
                } else {
                    RING_PAGES
                };
                match Ring::map(fd, pages) {
                    Ok(r) => self.rings.push(r),
                    Err((_, e)) => return Err(e),
                }
                continue;
            }
            ioctl(
                fd.as_raw_fd(),
                IOC_SET_OUTPUT,
                self.rings[ci].leader.as_raw_fd() as libc::c_ulong,
            )
            .map_err(|e| e.raw_os_error().unwrap_or(libc::EIO))?;
            self.events.push(fd);
        }
        Ok(())
    }

    /// Whether thread `tid` is followed by events (or its fork record is
    /// waiting to be processed).
    pub fn covers(&self, tid: u32) -> bool {
        self.threads.contains_key(&tid) || self.pending_forks.contains(&tid)
    }

    /// Follows thread `tid` of process `pid`, which ran before the events
    /// were opened and is blocked now (a child of the launcher waiting in
    /// [`ChildPart::handshake`] for them), from its `schedstat` figures
    /// now: the events then carry it on from its next wake-up, and the
    /// sampler need not read its `schedstat` at every tick. Returns
    /// false (and follows nothing) when the file cannot be read.
    pub fn follow_blocked(&mut self, pid: u32, tid: u32) -> bool {
        let path = format!("/proc/{pid}/task/{tid}/schedstat");
        let Some((run_ns, wait_ns, slices)) = std::fs::read(&path)
            .ok()
            .and_then(|text| crate::sampler::parse_schedstat(&text))
        else {
            return false;
        };
        let mut t = Thread::new(pid, crate::host::monotonic_ns());
        t.run_ns = run_ns;
        t.wait_ns = wait_ns;
        t.slices = slices;
        touch(&mut self.touched, tid, &mut t);
        self.threads.insert(tid, t);
        self.threads_seen += 1;
        if self.scope == ThreadEventsScope::SystemWide {
            self.tree.insert(pid);
        }
        self.attached.insert(tid);
        true
    }

    /// Whether the events were opened on thread `tid` explicitly.
    pub fn attached(&self, tid: u32) -> bool {
        self.attached.contains(&tid)
    }

    /// Stops following thread `tid` (the sampler reads its `schedstat`).
    pub fn forget(&mut self, tid: u32) {
        self.threads.remove(&tid);
        self.pending_forks.remove(&tid);
    }

    /// Reads every ring and processes the records up to `cut` (all of
    /// them when `cut` is `u64::MAX`), in time order.
    pub fn advance(&mut self, cut: u64) {
        self.refresh();
        self.pending.sort_by_key(SchedRec::time);
        let n = self.pending.partition_point(|r| r.time() <= cut);
        // processed in place: the buffer keeps its capacity from tick to
        // tick (a split-off one grew again from nothing at every tick)
        let mut pending = std::mem::take(&mut self.pending);
        for r in pending.drain(..n) {
            self.apply(r);
        }
        self.pending = pending;
        self.drained = 0;
    }

    /// Reads every ring into the pending records, without processing them
    /// (so that [`SchedEvents::covers`] knows the threads just started).
    pub fn refresh(&mut self) {
        let from = self.pending.len();
        let mut fullest: f64 = 0.0;
        for r in &mut self.rings {
            self.raw.clear();
            r.drain(&mut self.raw);
            fullest = fullest.max(self.raw.len() as f64 / r.data_size().max(1) as f64);
            decode_sched(&self.raw, &self.sample_type_of, &mut self.pending);
        }
        self.fullest_ring_share = fullest;
        for r in &self.pending[from..] {
            if let SchedRec::Fork { tid, .. } = r {
                self.pending_forks.insert(*tid);
            }
        }
    }

    /// Whether a fork record of `pid` from process `ppid` belongs to the
    /// target: with per-task events every record does; with system-wide
    /// ones as [`ProcessTree::has_fork`] says.
    fn fork_in_tree(&self, pid: u32, ppid: u32) -> bool {
        self.scope == ThreadEventsScope::PerTask || self.tree.has_fork(pid, ppid)
    }

    /// Reads every ring (as [`SchedEvents::refresh`]) and, with
    /// system-wide events, drops the pending records that cannot concern
    /// the target, so that neither the rings nor the pending records grow
    /// with the rest of the machine's activity between two ticks: the
    /// forks outside the tree (the tree grows here already, in time
    /// order), the switches and exits of other processes, and the
    /// wake-ups that no process of the tree wrote and that woke no
    /// followed thread. `now_ns` (CLOCK_MONOTONIC, taken before the
    /// call): a record later than `now_ns` − [`SLACK_NS`] is kept even so,
    /// since the fork record that makes its thread known may still be in a
    /// ring drained earlier in this call; it is looked at again at the
    /// next drain.
    pub fn drain(&mut self, now_ns: u64) {
        self.refresh();
        if self.scope != ThreadEventsScope::SystemWide {
            return;
        }
        let settled = now_ns.saturating_sub(SLACK_NS);
        // the records read since the last drain, and those it left undecided
        let mut fresh = std::mem::take(&mut self.fresh);
        fresh.extend(self.pending.drain(self.drained.min(self.pending.len())..));
        fresh.sort_by_key(SchedRec::time);
        let mut undecided = std::mem::take(&mut self.undecided);
        for r in fresh.drain(..) {
            let keep = match r {
                SchedRec::Fork { pid, ppid, tid, .. } => {
                    if self.fork_in_tree(pid, ppid) {
                        self.tree.insert(pid);
                        true
                    } else {
                        if r.time() < settled {
                            self.pending_forks.remove(&tid);
                        }
                        false
                    }
                }
                SchedRec::Switch { pid, .. } | SchedRec::Exit { pid, .. } => {
                    self.tree.contains(pid)
                }
                SchedRec::Wakeup { pid, woken, .. } => {
                    self.tree.contains(pid)
                        || self.threads.contains_key(&woken)
                        || self.pending_forks.contains(&woken)
                }
                SchedRec::Lost(_) => true,
            };
            if keep {
                self.pending.push(r);
            } else if r.time() >= settled {
                undecided.push(r);
            }
        }
        self.drained = self.pending.len();
        self.pending.append(&mut undecided);
        self.undecided = undecided;
        self.fresh = fresh;
    }

    /// Whether record `r` was written in the target's context, so that it
    /// cost the target (what [`SchedEvents::records`] counts): every record
    /// of per-task events; of system-wide ones, those whose writer (the
    /// task the sample id names: the thread switched, the thread that
    /// woke another, forked or exited) is a process of the tree, followed
    /// thread or not; and the losses.
    fn written_by_target(&self, r: &SchedRec) -> bool {
        if self.scope == ThreadEventsScope::PerTask {
            return true;
        }
        match *r {
            SchedRec::Fork { pid, ppid, .. } => self.fork_in_tree(pid, ppid),
            SchedRec::Switch { pid, .. }
            | SchedRec::Exit { pid, .. }
            | SchedRec::Wakeup { pid, .. } => self.tree.contains(pid),
            SchedRec::Lost(_) => true,
        }
    }

    /// One record. With system-wide events, the rest of the machine's are
    /// dropped here.
    fn apply(&mut self, r: SchedRec) {
        if self.written_by_target(&r) {
            self.records += 1;
        }
        match r {
            SchedRec::Fork { pid, ppid, tid, .. } if !self.fork_in_tree(pid, ppid) => {
                self.pending_forks.remove(&tid);
            }
            SchedRec::Fork { pid, tid, time, .. } => {
                self.tree.insert(pid);
                self.pending_forks.remove(&tid);
                if pid == tid {
                    self.new_processes.push(pid);
                }
                self.new_threads.push((pid, tid));
                // A reused tid starts again.
                let mut t = Thread::new(pid, time);
                touch(&mut self.touched, tid, &mut t);
                self.threads.insert(tid, t);
                self.threads_seen += 1;
            }
            SchedRec::Switch {
                tid,
                time,
                out,
                preempt,
                ..
            } => {
                let Some(t) = followed(&mut self.threads, tid) else {
                    return;
                };
                touch(&mut self.touched, tid, t);
                if out {
                    if t.state == Sched::Running {
                        t.run_ns += time.saturating_sub(t.since);
                    }
                    t.state = if preempt {
                        Sched::Ready
                    } else {
                        Sched::Sleeping
                    };
                } else {
                    if t.state == Sched::Ready {
                        t.wait_ns += time.saturating_sub(t.since);
                    }
                    if t.state != Sched::Running {
                        t.slices = t.slices.saturating_add(1);
                    }
                    t.state = Sched::Running;
                }
                t.since = time;
            }
            SchedRec::Wakeup { woken, time, .. } => {
                if let Some(t) = followed(&mut self.threads, woken) {
                    if t.state == Sched::Sleeping {
                        t.state = Sched::Ready;
                        t.since = time;
                        touch(&mut self.touched, woken, t);
                    }
                }
            }
            SchedRec::Exit { tid, time, .. } => {
                if let Some(t) = followed(&mut self.threads, tid) {
                    touch(&mut self.touched, tid, t);
                    if t.state == Sched::Running {
                        t.run_ns += time.saturating_sub(t.since);
                    }
                    t.state = Sched::Sleeping;
                    t.since = time;
                    t.exited = true;
                }
            }
            SchedRec::Lost(n) => self.lost += n,
        }
    }

    /// Appends an entry (flagged [`ENTRY_FROM_EVENTS`], and [`ENTRY_NEW`]
    /// the first time) for every followed thread that is new or whose
    /// figures at `at` changed since its last entry; threads that have
    /// ended are dropped after their last entry. Figures never decrease
    /// from one entry to the next.
    pub fn entries(&mut self, at: u64, out: &mut Vec<Entry>) {
        let mut tids = std::mem::take(&mut self.scratch);
        tids.clear();
        std::mem::swap(&mut tids, &mut self.touched);
        for &tid in &tids {
            // a thread forgotten, or listed twice (forgotten and its tid
            // reused): at most one entry
            let Some(t) = self.threads.get_mut(&tid).filter(|t| t.touched) else {
                continue;
            };
            t.touched = false;
            let mut now = t.at(at);
            if let Some(r) = t.reported {
                now = (now.0.max(r.0), now.1.max(r.1), now.2.max(r.2));
            }
            if t.reported != Some(now) {
                out.push(Entry {
                    pid: t.pid,
                    tid,
                    run_ns: now.0,
                    wait_ns: now.1,
                    slices: now.2,
                    flags: ENTRY_FROM_EVENTS | if t.reported.is_none() { ENTRY_NEW } else { 0 },
                });
                t.reported = Some(now);
            }
            if t.exited {
                self.threads.remove(&tid);
            } else if t.state != Sched::Sleeping {
                // still changing
                touch(&mut self.touched, tid, t);
            }
        }
        self.scratch = tids;
    }

    /// Stops the events at once and closes them on a thread of their own.
    /// Closing a tracepoint's perf events waits for the kernel to retire
    /// its probes (RCU grace periods): 77–116 ms measured on the KVM guest
    /// of docs/benchmarks.md, during which a sampler that closed them
    /// itself missed its ticks, and the run time of threads that ended
    /// in that gap was lost with them. Disabling (`PERF_EVENT_IOC_DISABLE`)
    /// is immediate, so the program stops paying for the records now.
    /// Where no thread can be started, they are closed here, by the caller.
    pub fn close_aside(self) {
        for fd in self.rings.iter().map(|r| &r.leader).chain(&self.events) {
            let _ = crate::probes::ioctl(fd.as_raw_fd(), crate::probes::IOC_DISABLE, 0);
        }
        // where the thread cannot be started, the closure, and the events
        // with it, is dropped (closed) here
        let _ = std::thread::Builder::new()
            .name("contend-close".into())
            .spawn(move || drop(self));
    }

    /// Threads followed now.
    pub fn followed(&self) -> usize {
        self.threads.len()
    }

    /// The threads followed now that have had an entry, with the figures
    /// of their last one: (pid, tid, (run ns, run-queue wait ns, time
    /// slices)). A source that takes a thread over must never report
    /// less ([`crate::sampler`] does so when it leaves the events for
    /// `schedstat`).
    pub fn reported(&self) -> Vec<(u32, u32, (u64, u64, u32))> {
        self.threads
            .iter()
            .filter(|(_, t)| !t.exited)
            .filter_map(|(&tid, t)| t.reported.map(|r| (t.pid, tid, r)))
            .collect()
    }
}

/// Opens the events on a child of the launcher before its `exec`, so that
/// every thread the program starts inherits them: the child's `pre_exec`
/// hook ([`ChildPart::handshake`]) sends its pid and waits until a helper
/// thread has opened them.
pub struct Prepared {
    /// The child's end of the socket (the launcher drops its copy after
    /// spawning, so the helper sees the end if the child never reports).
    theirs: Option<OwnedFd>,
    helper: JoinHandle<Result<SchedEvents, String>>,
}

/// What the child's `pre_exec` hook runs (`Copy`: no allocation there).
#[derive(Debug, Clone, Copy)]
pub struct ChildPart {
    sock: RawFd,
}

impl ChildPart {
    /// Sends the child's pid to the helper and waits for its answer.
    /// Runs between fork and exec: system calls only; never fails
    /// (without an answer the program runs and its threads are read from
    /// `schedstat`).
    pub fn handshake(&self) {
        if self.sock < 0 {
            return;
        }
        crate::probes::send_pid_and_wait(self.sock);
    }
}

impl Prepared {
    /// Starts the helper thread. Errors: the socket pair or the thread
    /// cannot be created.
    pub fn new() -> std::io::Result<Prepared> {
        let mut fds = [0 as RawFd; 2];
        // SAFETY: valid out-pointer for two descriptors.
        if unsafe {
            libc::socketpair(
                libc::AF_UNIX,
                libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC,
                0,
                fds.as_mut_ptr(),
            )
        } != 0
        {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: fresh descriptors we own.
        let (ours, theirs) =
            unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        let helper = std::thread::Builder::new()
            .name("contend-sched-open".into())
            .spawn(move || {
                let mut buf = [0u8; 4];
                let n = loop {
                    // SAFETY: recv into a stack buffer.
                    let n = unsafe { libc::recv(ours.as_raw_fd(), buf.as_mut_ptr().cast(), 4, 0) };
                    if n >= 0
                        || std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted
                    {
                        break n;
                    }
                };
                if n != 4 {
                    return Err("the program never reached exec".to_string());
                }
                let pid = u32::from_le_bytes(buf);
                let mut opened = SchedEvents::open_for(&[pid], &[pid]);
                if let Ok(ev) = &mut opened {
                    // the child waits for the answer below: blocked
                    ev.follow_blocked(pid, pid);
                }
                // SAFETY: one byte from a static buffer.
                unsafe {
                    libc::send(
                        ours.as_raw_fd(),
                        b"g".as_ptr().cast(),
                        1,
                        libc::MSG_NOSIGNAL,
                    )
                };
                opened
            })?;
        Ok(Prepared {
            theirs: Some(theirs),
            helper,
        })
    }

    /// The part for the child's `pre_exec` hook.
    pub fn child_part(&self) -> ChildPart {
        ChildPart {
            sock: self.theirs.as_ref().map_or(-1, |f| f.as_raw_fd()),
        }
    }

    /// Call right after spawning (whether it worked or not): returns the
    /// events, or why there are none.
    pub fn events(mut self) -> Result<SchedEvents, String> {
        self.theirs = None;
        self.helper
            .join()
            .unwrap_or_else(|_| Err("the thread opening the scheduler events panicked".into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn empty() -> SchedEvents {
        SchedEvents::unopened(Vec::new(), vec![Attr::default(); 3])
    }

    fn switch(tid: u32, time: u64, out: bool, preempt: bool) -> SchedRec {
        SchedRec::Switch {
            pid: 0,
            tid,
            time,
            out,
            preempt,
        }
    }

    /// A switch of thread `tid` of process `pid` (system-wide records
    /// name the process).
    fn switch_of(pid: u32, tid: u32, time: u64, out: bool) -> SchedRec {
        SchedRec::Switch {
            pid,
            tid,
            time,
            out,
            preempt: false,
        }
    }

    fn wakeup(woken: u32, time: u64) -> SchedRec {
        wakeup_by(1, woken, time)
    }

    /// A wake-up of `woken` written in the context of process `waker`.
    fn wakeup_by(waker: u32, woken: u32, time: u64) -> SchedRec {
        SchedRec::Wakeup {
            pid: waker,
            woken,
            time,
        }
    }

    /// A fork record of thread `tid` of process `pid` by process `ppid`.
    fn fork(pid: u32, ppid: u32, tid: u32, time: u64) -> SchedRec {
        SchedRec::Fork {
            pid,
            ppid,
            tid,
            time,
        }
    }

    /// One ring record: header (type, misc, size) and body.
    fn ring_record(kind: u32, misc: u16, body: &[u8]) -> Vec<u8> {
        let mut b = kind.to_le_bytes().to_vec();
        b.extend_from_slice(&misc.to_le_bytes());
        b.extend_from_slice(&((body.len() + 8) as u16).to_le_bytes());
        b.extend_from_slice(body);
        b
    }

    /// A sample id trailer (pid, tid, time, id).
    fn sample_id(pid: u32, tid: u32, time: u64) -> Vec<u8> {
        let mut b = pid.to_le_bytes().to_vec();
        b.extend_from_slice(&tid.to_le_bytes());
        b.extend_from_slice(&time.to_le_bytes());
        b.extend_from_slice(&5u64.to_le_bytes());
        b
    }

    /// Hand-built ring bytes in the layouts of perf_event_open(2): a
    /// per-task switch-out (preempted), a CPU-wide switch-in, an idle
    /// task's switch (skipped), a wake-up sample of thread 42 by process
    /// 3, a fork, a thread name (skipped), an exit and a loss.
    #[test]
    fn ring_records_decode_into_compact_records() {
        let mut bytes = Vec::new();
        bytes.extend(ring_record(
            14,
            (1 << 13) | (1 << 14),
            &sample_id(3, 4, 100),
        ));
        let mut wide = vec![0u8; 8];
        wide.extend(sample_id(3, 4, 110));
        bytes.extend(ring_record(15, 0, &wide));
        bytes.extend(ring_record(
            15,
            1 << 13,
            &[vec![0u8; 8], sample_id(0, 0, 115)].concat(),
        ));
        let mut sample = 9u64.to_le_bytes().to_vec(); // identifier
        sample.extend_from_slice(&3u32.to_le_bytes());
        sample.extend_from_slice(&5u32.to_le_bytes());
        sample.extend_from_slice(&120u64.to_le_bytes());
        let mut raw = vec![0u8; 36];
        raw[24..28].copy_from_slice(&42u32.to_le_bytes());
        sample.extend_from_slice(&(raw.len() as u32).to_le_bytes());
        sample.extend_from_slice(&raw);
        bytes.extend(ring_record(9, 0, &sample));
        let task = |pid: u32, ppid: u32, tid: u32, time: u64| {
            let mut b = Vec::new();
            for v in [pid, ppid, tid, ppid] {
                b.extend_from_slice(&v.to_le_bytes());
            }
            b.extend_from_slice(&time.to_le_bytes());
            b.extend(sample_id(pid, tid, time));
            b
        };
        bytes.extend(ring_record(7, 0, &task(3, 3, 43, 130)));
        bytes.extend(ring_record(
            3,
            0,
            &[
                vec![0u8; 8],
                b"name\0\0\0\0".to_vec(),
                sample_id(3, 43, 131),
            ]
            .concat(),
        ));
        bytes.extend(ring_record(4, 0, &task(3, 3, 43, 140)));
        bytes.extend(ring_record(
            2,
            0,
            &[5u64.to_le_bytes(), 7u64.to_le_bytes()].concat(),
        ));
        let mut types = FxHashMap::default();
        types.insert(
            9u64,
            SAMPLE_IDENTIFIER | SAMPLE_TID | SAMPLE_TIME | SAMPLE_RAW,
        );
        let mut out = Vec::new();
        decode_sched(&bytes, &types, &mut out);
        assert_eq!(
            out,
            vec![
                SchedRec::Switch {
                    pid: 3,
                    tid: 4,
                    time: 100,
                    out: true,
                    preempt: true
                },
                SchedRec::Switch {
                    pid: 3,
                    tid: 4,
                    time: 110,
                    out: false,
                    preempt: false
                },
                wakeup_by(3, 42, 120),
                fork(3, 3, 43, 130),
                SchedRec::Exit {
                    pid: 3,
                    tid: 43,
                    time: 140
                },
                SchedRec::Lost(7),
            ]
        );
        // a torn last record ends the decoding there
        out.clear();
        decode_sched(&bytes[..bytes.len() - 4], &types, &mut out);
        assert_eq!(out.len(), 5);
    }

    #[test]
    fn run_wait_and_slices_follow_the_switches() {
        let mut s = empty();
        // Thread 7 forked at 100, woken at 110, runs 130..180 (wait 20),
        // preempted at 180, runs again 200..250 (wait 20), sleeps, woken
        // at 300, runs 310..(tick at 330): run 50 + 50 + 20 = 120, wait
        // 20 + 20 + 10 = 50, 3 slices.
        s.pending = vec![
            fork(1, 1, 7, 100),
            wakeup(7, 110),
            switch(7, 130, false, false),
            switch(7, 180, true, true),
            switch(7, 200, false, false),
            switch(7, 250, true, false),
            wakeup(7, 300),
            // a wake-up of a thread not followed is ignored
            wakeup(9, 305),
            switch(7, 310, false, false),
            // later than the cut: kept for the next tick
            switch(7, 400, true, false),
        ];
        s.advance(330);
        assert!(s.covers(7) && !s.covers(9));
        let mut out = Vec::new();
        s.entries(330, &mut out);
        assert_eq!(out.len(), 1);
        let e = out[0];
        assert_eq!((e.pid, e.tid), (1, 7));
        assert_eq!((e.run_ns, e.wait_ns, e.slices), (120, 50, 3));
        assert_eq!(e.flags, ENTRY_FROM_EVENTS | ENTRY_NEW);
        // Nothing changed up to 330: no entry.
        out.clear();
        s.entries(330, &mut out);
        assert!(out.is_empty());
        // Next tick: the switch-out at 400 and an exit: run 120 + 70.
        s.pending.push(SchedRec::Exit {
            pid: 1,
            tid: 7,
            time: 450,
        });
        s.advance(u64::MAX);
        s.entries(500, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!((out[0].run_ns, out[0].wait_ns, out[0].slices), (190, 50, 3));
        assert_eq!(out[0].flags, ENTRY_FROM_EVENTS);
        // The ended thread is dropped after its last entry.
        assert_eq!(s.followed(), 0);
    }

    /// System-wide events bring every process's records; only the
    /// target's (process 10 and what it starts) are followed and counted.
    /// Worked by hand: process 10 (its main thread running before the
    /// events, so not followed) starts thread 11 and process 20; process
    /// 30 (not the target's) starts thread 31 and process 40. Thread 11
    /// runs 100..150 and exits at 160; its tid is then reused by a thread
    /// of process 30, whose switches 170..200 are not 11's. Followed: 11
    /// (run 50, 1 slice) and 20 (woken by process 10 at 120, runs
    /// 130..140: wait 10, run 10). Records counted (written by the
    /// target's threads): the forks of 11 and 20, the main thread's
    /// switch, 11's two switches and its exit, the wake-up of 20 and 20's
    /// two switches: 9.
    #[test]
    fn system_wide_events_follow_only_the_target() {
        let mut s = empty();
        s.scope = ThreadEventsScope::SystemWide;
        s.tree.insert(10);
        s.pending = vec![
            fork(10, 10, 11, 90),
            fork(20, 10, 20, 95),
            fork(30, 30, 31, 96),
            fork(40, 30, 40, 97),
            switch_of(10, 10, 98, true),
            switch_of(10, 11, 100, false),
            switch_of(30, 31, 105, false),
            wakeup_by(10, 20, 120),
            wakeup_by(30, 40, 121),
            switch_of(20, 20, 130, false),
            switch_of(20, 20, 140, true),
            switch_of(10, 11, 150, true),
            SchedRec::Exit {
                pid: 10,
                tid: 11,
                time: 160,
            },
            fork(30, 30, 11, 165),
            switch_of(30, 11, 170, false),
            switch_of(30, 11, 200, true),
        ];
        s.advance(u64::MAX);
        assert!(s.covers(11) && s.covers(20));
        assert!(!s.covers(31) && !s.covers(40));
        assert_eq!(s.new_processes, vec![20]);
        assert_eq!(s.new_threads, vec![(10, 11), (20, 20)]);
        assert_eq!(s.records, 9);
        let mut out = Vec::new();
        s.entries(300, &mut out);
        out.sort_by_key(|e| e.tid);
        let got: Vec<_> = out
            .iter()
            .map(|e| (e.pid, e.tid, e.run_ns, e.wait_ns, e.slices))
            .collect();
        assert_eq!(got, vec![(10, 11, 50, 0, 1), (20, 20, 10, 10, 1)]);
    }

    /// Draining system-wide events between ticks drops what cannot concern
    /// the target and keeps what is recent (its thread's fork record may be
    /// in a ring not yet read). Worked by hand, the drain at 10 ms (so
    /// records before 8 ms are settled), tree {10}: kept are the target's
    /// fork of 11 and the switch and wake-up of 11, the loss count, and
    /// the recent fork of 51 and switch of 61; dropped are process 30's
    /// fork of 31 and 31's switch and wake-up (exec and thread-name
    /// records are not decoded at all).
    #[test]
    fn draining_system_wide_events_drops_other_processes_records() {
        let mut s = empty();
        s.scope = ThreadEventsScope::SystemWide;
        s.tree.insert(10);
        let now = 10_000_000;
        let recent = now - 1_000;
        s.pending = vec![
            fork(10, 10, 11, 1_000),
            fork(30, 30, 31, 1_000),
            fork(50, 50, 51, recent),
            switch_of(30, 31, 1_100, false),
            switch_of(10, 11, 1_100, false),
            wakeup(31, 1_200),
            wakeup(11, 1_200),
            SchedRec::Lost(2),
            switch_of(60, 61, recent + 1, false),
        ];
        s.pending_forks.extend([11, 31, 51]);
        s.drain(now);
        let kept: Vec<(u64, &'static str)> = s
            .pending
            .iter()
            .map(|r| {
                let kind = match r {
                    SchedRec::Fork { .. } => "fork",
                    SchedRec::Switch { .. } => "switch",
                    SchedRec::Wakeup { .. } => "wakeup",
                    SchedRec::Lost(_) => "lost",
                    SchedRec::Exit { .. } => "exit",
                };
                (r.time(), kind)
            })
            .collect();
        assert_eq!(
            kept,
            vec![
                (0, "lost"),
                (1_000, "fork"),
                (1_100, "switch"),
                (1_200, "wakeup"),
                (recent, "fork"),
                (recent + 1, "switch"),
            ]
        );
        assert!(s.pending_forks.contains(&11) && s.pending_forks.contains(&51));
        assert!(!s.pending_forks.contains(&31));
        // the kept records still pair up as the target's
        s.advance(u64::MAX);
        assert!(s.covers(11) && !s.covers(31));
    }

    /// Per-task events bring only the target's records: every one counts,
    /// as the cost the leave rule weighs.
    #[test]
    fn per_task_events_count_every_record() {
        let mut s = empty();
        s.pending = vec![
            fork(10, 10, 11, 90),
            switch(11, 100, false, false),
            wakeup(12, 110),
            switch(11, 150, true, false),
        ];
        s.advance(u64::MAX);
        assert_eq!(s.records, 4);
        assert!(s.covers(11));
    }

    #[test]
    fn figures_never_decrease() {
        let mut s = empty();
        s.pending = vec![fork(1, 1, 8, 0), switch(8, 10, false, false)];
        s.advance(100);
        let mut out = Vec::new();
        // Running since 10: 90 at 100.
        s.entries(100, &mut out);
        assert_eq!(out[0].run_ns, 90);
        // Its switch-out at 60 arrives late: 50 committed, but the next
        // entry keeps 90 (the figure already written).
        s.pending.push(switch(8, 60, true, false));
        s.advance(200);
        out.clear();
        s.entries(200, &mut out);
        assert!(out.is_empty(), "{out:?}");
    }
}
