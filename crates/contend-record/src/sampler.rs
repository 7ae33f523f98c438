//! The service-time sampler of `contend record`: a thread of the launcher
//! that reads, every interval, the cumulative service time of every thread
//! of the target and of its descendant processes, and the system run-queue
//! length, into `service.csamp` (format: [`contend_trace::service`];
//! Venter 2016, Section 3.2.1.1, "Gathering service time information").
//!
//! Per thread it reads `/proc/<pid>/task/<tid>/schedstat` (run time ns,
//! run-queue wait ns, time slices), falling back to
//! `/proc/<pid>/task/<tid>/stat` `utime + stime` (clock ticks, converted
//! to ns) when `schedstat` cannot be opened. The run-queue length is the
//! running count of `/proc/loadavg`, the same kernel counter
//! (`nr_running()`) as `procs_running` in `/proc/stat`, in a file a
//! fraction of the size.
//!
//! Accuracy: the kernel brings a *running* thread's `schedstat` run time up
//! to date only at its scheduler tick (every `1/HZ`, 4 ms with `HZ=250`)
//! and at context switches, so a read lags by the time since the last
//! kernel tick. Read at random phases, that lag makes per-interval service
//! times noisy, and the maximum of noisy values (ΔT_cp of Listing 3.3) is
//! biased upwards (by 7% with two busy threads at 10 ms / `HZ=250`). The
//! sampler therefore takes its ticks on a grid of kernel ticks, half a
//! kernel tick after one (the grid's phase comes from
//! `CLOCK_MONOTONIC_COARSE`, which advances at kernel ticks; its
//! resolution is the tick length): each tick lands on the multiple of the
//! kernel tick nearest to `start + k·interval`, so the lag is about the same
//! at every read and cancels in the differences. The intervals then
//! alternate around the one asked for (8 and 12 ms for 10 ms at `HZ=250`);
//! their mean is the one asked for. The sampling thread's timer slack is
//! set to 1 ns.
//!
//! Two sources (`CONTEND_SERVICE_SOURCE`, [`ServiceSource`]): where the
//! kernel allows them (root, or `kernel.perf_event_paranoid` -1 with
//! tracefs readable), the threads the target starts after the sampler
//! began are followed through scheduler events ([`crate::sched_events`]:
//! context switches and wake-ups in per-CPU perf rings, drained at each
//! tick), whose cost follows context switches instead of thread count;
//! while the events follow every thread, the sampler wakes only
//! every [`COAST_NS`] and makes the ticks it slept through from the
//! events' timestamps, flagged [`TICK_FROM_EVENTS`] (no run queue is read
//! for them);
//! their entries are flagged
//! [`contend_trace::service::ENTRY_FROM_EVENTS`]. The threads that
//! already ran when the events were opened, and every thread when the
//! events are refused (the reason is in [`SamplerStats::source_note`]),
//! are read from `schedstat` as below. With events, new threads are known
//! from the kernel's fork records, so the task directories are listed only
//! until a listing finds no thread the events do not cover. By default
//! (`auto`) the sampler leaves the events for `schedstat` for good when
//! they cost the target more than `schedstat` would cost the sampler
//! ([`leaves_events`]: few threads that switch very often); each thread's
//! figures then continue from `schedstat`, never below its last entry from
//! the events ([`SamplerStats::switched`] says when).
//!
//! Keeping a `schedstat` tick cheap (measured in `bench/sampler_overhead.sh`,
//! docs/benchmarks.md):
//! - every file is opened once and re-read with `pread` at offset 0; a
//!   thread whose file then fails with `ESRCH`/`ENOENT` has ended (that is
//!   normal, not an error);
//! - new threads and processes are looked for only when the kernel's last
//!   allocated pid (the last field of `/proc/loadavg`) changed since the
//!   previous tick: no pid allocated means no thread or process was
//!   created, anywhere. Then the task directories of the tracked processes
//!   are listed and every thread's `children` file
//!   (`/proc/<pid>/task/<tid>/children`) is read; where the kernel has no
//!   `children` files, `/proc/*/stat` parent pids are scanned instead;
//! - only threads that are new or whose counters changed are written, and
//!   ticks are appended in batches, at least every [`FLUSH_NS`] (100 ms);
//! - the soft open-file limit is raised to the hard limit once; beyond the
//!   remaining budget files are opened for each read.

use std::collections::HashSet;
use std::fmt::Write as _;
use std::fs::File;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::thread::JoinHandle;
use std::time::Duration;

use contend_trace::service::{
    Entry, Header, SampleWriter, TickHeader, ENTRY_FROM_STAT, ENTRY_NEW, TICK_FINAL,
    TICK_FROM_EVENTS,
};
use contend_trace::TraceError;
use rustc_hash::FxHashMap;

use crate::host::{clock_ns, monotonic_ns, thread_cpu_ns};
pub use crate::sched_events::SchedEvents;
pub use crate::sched_events::ServiceSource;
use crate::sched_events::{DRAIN_NS, MIN_DRAIN_NS, SLACK_NS};

/// Ticks are written to the file at least this often, ns (and at once
/// when [`FLUSH_BYTES`] are buffered, and at the end): a killed launcher
/// loses at most the last 100 ms of samples.
pub const FLUSH_NS: u64 = 100_000_000;
/// Buffered tick bytes that force a write.
pub const FLUSH_BYTES: usize = 64 * 1024;

/// While the scheduler events follow every thread of the target
/// (no thread is read from `schedstat`), the sampler wakes only this
/// often, ns (or every interval, when that is longer), and makes the ticks
/// it slept through from the events' timestamps afterwards (flagged
/// [`TICK_FROM_EVENTS`]; they read no run queue): waking costs this KVM
/// guest 37–47 µs of CPU time however short the sleep, half of the
/// sampler's cost at 10 ms ticks (docs/benchmarks.md, "Waking every 50
/// ms"). The rings' watermarks ([`SchedEvents::ring_fds`]) wake it
/// sooner when the machine fills them.
pub const COAST_NS: u64 = 50_000_000;

/// What a sampler did, returned by [`Sampler::stop`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SamplerStats {
    /// Ticks written (including the first, taken at once, and the final).
    pub ticks: u64,
    /// Thread entries written.
    pub entries: u64,
    /// Distinct threads seen (a reused tid counts again).
    pub threads: u64,
    /// Distinct processes seen (the target included).
    pub processes: u64,
    /// Ticks that looked for new threads and processes (the last allocated
    /// pid had changed).
    pub discoveries: u64,
    /// CPU time the sampling thread used, ns (its `CLOCK_THREAD_CPUTIME_ID`).
    pub cpu_ns: u64,
    /// Why sampling stopped early (writing the file failed), if it did.
    pub error: Option<String>,
    /// The source used: `"sched-events"` (scheduler events, with
    /// `schedstat` for the threads that ran before them) or `"schedstat"`.
    pub source: &'static str,
    /// Why the scheduler events were not used, when they were not and
    /// were not refused by `CONTEND_SERVICE_SOURCE=schedstat`.
    pub source_note: Option<String>,
    /// How the scheduler events were opened, when they were used:
    /// `"system-wide"` (one of each per CPU, the machine's other records
    /// dropped) or `"per-task"` (inherited by every thread of the target).
    pub event_scope: Option<&'static str>,
    /// Why the scheduler events hold the context switches alone, without
    /// the wake-up tracepoints (refused, [`SchedEvents::wakeups_refused`]):
    /// the run-queue wait then counts the waits after preemptions only.
    pub event_wakeups_refused: Option<String>,
    /// Threads followed by scheduler events.
    pub event_threads: u64,
    /// Scheduler event records processed.
    pub event_records: u64,
    /// Scheduler event records the kernel dropped (a ring was full); the
    /// service time of the threads concerned is then short.
    pub event_records_lost: u64,
    /// The most time the sampler thread waited for a CPU between two
    /// reads of the event rings (a tick or a drain, [`RingReads`]), ns;
    /// `None` without events. Long only when other work kept this thread
    /// off the CPU, which is when a busy machine fills a ring.
    pub event_longest_run_delay_ns: Option<u64>,
    /// Ticks made after they were due from the scheduler events'
    /// timestamps ([`TICK_FROM_EVENTS`], [`COAST_NS`]), of `ticks`.
    pub ticks_from_events: u64,
    /// Wake-ups by a ring's watermark (a quarter of it written,
    /// [`SchedEvents::ring_fds`]), whether the sampler was sleeping through
    /// ticks ([`COAST_NS`]) or waiting for the next one.
    pub watermark_wakeups: u64,
    /// The shortest time planned between two reads of the event rings,
    /// ns ([`RingReads`]; `DRAIN_NS` unless the machine filled them
    /// faster); `None` without events.
    pub event_shortest_drain_ns: Option<u64>,
    /// When the sampler left the scheduler events for `schedstat` because
    /// they cost the target more than reading `schedstat` would
    /// ([`leaves_events`]); `None` when it did not.
    pub switched: Option<SourceSwitch>,
}

impl SamplerStats {
    /// What `meta.json` keeps of them; the sentences for the recording's
    /// warnings (sampling stopped early, the scheduler events refused
    /// although `source` asked for them by name, records lost) are
    /// appended to `warnings`.
    pub fn into_meta(
        self,
        source: ServiceSource,
        warnings: &mut Vec<String>,
    ) -> contend_trace::meta::SamplerMeta {
        if let Some(error) = &self.error {
            warnings.push(format!("service-time sampling stopped early: {error}"));
        }
        if let (ServiceSource::SchedEvents, Some(note)) = (source, &self.source_note) {
            warnings.push(format!("service time read from schedstat: {note}"));
        }
        if self.event_records_lost > 0 {
            let unread = self
                .event_longest_run_delay_ns
                .filter(|&ns| ns > MIN_DRAIN_NS)
                .map(|ns| {
                    format!(
                        "; the sampler thread waited up to {:.0} ms for a CPU between two reads",
                        ns as f64 / 1e6
                    )
                })
                .unwrap_or_default();
            warnings.push(format!(
                "the kernel dropped {} scheduler event records (a ring was full{unread}): the service \
                 time of some threads is short",
                self.event_records_lost
            ));
        }
        contend_trace::meta::SamplerMeta {
            source: self.source.to_string(),
            source_note: self.source_note,
            event_scope: self.event_scope.map(str::to_string),
            event_wakeups_refused: self.event_wakeups_refused,
            event_records: self.event_records,
            event_records_lost: self.event_records_lost,
            event_longest_run_delay_ns: self.event_longest_run_delay_ns,
            event_shortest_drain_ns: self.event_shortest_drain_ns,
            ticks_from_events: self.ticks_from_events,
            watermark_wakeups: self.watermark_wakeups,
            switched_at_ns: self.switched.map(|s| s.at_ns),
            switched_records_per_s: self.switched.map(|s| s.records_per_s),
            switched_threads: self.switched.map(|s| s.threads),
        }
    }
}

/// The moment the sampler left the scheduler events for `schedstat`
/// ([`leaves_events`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SourceSwitch {
    /// When, CLOCK_MONOTONIC ns.
    pub at_ns: u64,
    /// Scheduler event records per second over the tick before, records/s.
    pub records_per_s: u64,
    /// Threads the events followed then.
    pub threads: u64,
}

pub use contend_trace::meta::EVENT_RECORD_COST_NS;

/// What reading one thread's `schedstat` costs the sampler per tick, ns
/// (one `pread` of a file kept open; docs/benchmarks.md, "Service-time
/// sampler": 0.6–2.2 µs per thread on the two guests measured).
pub const SCHEDSTAT_READ_COST_NS: u64 = 2_000;

/// Consecutive ticks in which the scheduler events must cost more than
/// `schedstat` would before the sampler leaves them ([`leaves_events`]), so
/// that a burst (the program starting its threads) does not decide it.
pub const SWITCH_AFTER_TICKS: u32 = 5;

/// The least the scheduler events must cost the program, as a share of
/// one CPU over a tick, before the sampler leaves them: 1 % (the
/// sampler's own goal, issue 15). Below it they stay, even where
/// `schedstat` would cost less, because only they follow a thread to its
/// exit: `schedstat` loses a thread's run time since the last tick when
/// it ends, all of it for a thread shorter than the interval (60 threads
/// of 3 ms each: 72 ms sampled of 188 ms once the sampler had left the
/// events at 2,917 records per second).
pub const EVENTS_COST_FLOOR: f64 = 0.01;

/// Whether the scheduler events cost more than `schedstat` in one tick of
/// `tick_ns`: `records` records at [`EVENT_RECORD_COST_NS`] each (in the
/// target) against one `schedstat` read per followed thread at
/// [`SCHEDSTAT_READ_COST_NS`] (in the sampler), and more than
/// [`EVENTS_COST_FLOOR`] of one CPU over the tick. The event source pays
/// per context switch and `schedstat` per thread, so a program with few
/// threads that switch often (one that yields or blocks tens of thousands
/// of times a second or more) is cheaper to follow through `schedstat`,
/// and one with many mostly idle threads through events. With
/// `CONTEND_SERVICE_SOURCE=auto` (the default) the sampler leaves the
/// events for good after [`SWITCH_AFTER_TICKS`] such ticks in a row.
pub fn leaves_events(records: u64, threads: u64, tick_ns: u64) -> bool {
    let cost_ns = records.saturating_mul(EVENT_RECORD_COST_NS);
    cost_ns > threads.max(1).saturating_mul(SCHEDSTAT_READ_COST_NS)
        && cost_ns as f64 > EVENTS_COST_FLOOR * tick_ns as f64
}

/// A running sampler thread; [`Sampler::stop`] ends it (and so does
/// dropping it, without the final tick's statistics).
#[derive(Debug)]
pub struct Sampler {
    /// An eventfd the thread polls: written to stop it.
    stop: OwnedFd,
    thread: Option<JoinHandle<SamplerStats>>,
}

/// Writes 1 to eventfd `fd` (the stop signal of [`Sampler`]).
fn signal(fd: &OwnedFd) {
    let one = 1u64.to_ne_bytes();
    // SAFETY: an 8-byte write from a stack buffer to an eventfd we own.
    let _ = unsafe { libc::write(fd.as_raw_fd(), one.as_ptr().cast(), 8) };
}

impl Drop for Sampler {
    fn drop(&mut self) {
        if self.thread.is_some() {
            signal(&self.stop);
        }
    }
}

impl Sampler {
    /// Creates the sample file `path` and starts sampling process `pid`
    /// (and every process it starts) every `interval` (at least 1 ms).
    /// `start_ns` is the CLOCK_MONOTONIC time the target was started, ns:
    /// the start of the first interval. The first tick is taken at once.
    ///
    /// Errors: the file cannot be created ([`TraceError::Io`], naming it).
    pub fn start(
        path: &Path,
        pid: u32,
        interval: Duration,
        start_ns: u64,
    ) -> Result<Sampler, TraceError> {
        Self::start_with(
            path,
            pid,
            interval,
            start_ns,
            ServiceSource::from_env(),
            None,
        )
    }

    /// [`Sampler::start`] with the source given instead of taken from
    /// `CONTEND_SERVICE_SOURCE`, and the scheduler events when they were
    /// opened on the target before its exec (a [`crate::sched_events::Prepared`]);
    /// without them (`None`) they are opened on the target's threads now.
    ///
    /// Errors: the file cannot be created ([`TraceError::Io`], naming it).
    pub fn start_with(
        path: &Path,
        pid: u32,
        interval: Duration,
        start_ns: u64,
        source: ServiceSource,
        events: Option<Result<SchedEvents, String>>,
    ) -> Result<Sampler, TraceError> {
        let interval = interval.max(Duration::from_millis(1));
        let header = Header {
            start_ns,
            interval_ns: u64::try_from(interval.as_nanos()).unwrap_or(u64::MAX),
            cpus: allowed_cpus(pid),
            clk_tck: clk_tck(),
            kernel_tick_ns: kernel_tick_ns(),
        };
        let writer = SampleWriter::create(path, &header)?;
        let io = |source| TraceError::Io {
            path: path.to_path_buf(),
            source,
        };
        // SAFETY: eventfd takes no pointers; a non-negative result is a
        // new descriptor we own.
        let raw = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if raw < 0 {
            return Err(io(std::io::Error::last_os_error()));
        }
        // SAFETY: see above.
        let stop = unsafe { OwnedFd::from_raw_fd(raw) };
        let theirs = stop.try_clone().map_err(io)?;
        let thread = std::thread::Builder::new()
            .name("contend-sampler".into())
            .spawn(move || run(writer, pid, interval, header, theirs, source, events))
            .map_err(io)?;
        Ok(Sampler {
            stop,
            thread: Some(thread),
        })
    }

    /// Takes a final tick (flagged [`TICK_FINAL`]) and ends the thread.
    /// Call it once the target has ended but before it is reaped, so that
    /// the final tick can still read its main thread.
    pub fn stop(mut self) -> SamplerStats {
        signal(&self.stop);
        let thread = self.thread.take();
        thread
            .and_then(|t| t.join().ok())
            .unwrap_or_else(|| SamplerStats {
                error: Some("the sampling thread panicked".into()),
                ..SamplerStats::default()
            })
    }
}

/// When the sampler reads the rings of the scheduler events
/// ([`SchedEvents::drain`] between ticks, [`SchedEvents::advance`] at a
/// tick): a ring holds 1 MiB of records with system-wide events, and the
/// rest of the machine can fill it faster than every
/// [`DRAIN_NS`](crate::sched_events::DRAIN_NS) (a pipe ping-pong on one CPU
/// of the Intel guest of docs/benchmarks.md, some 700,000 records a second,
/// filled one in 30 ms and the kernel dropped 500,000 records in 1.5 s).
/// Each read sees how full the fullest ring got since the read before and
/// plans the next for when it would be a quarter full at that rate,
/// between [`MIN_DRAIN_NS`](crate::sched_events::MIN_DRAIN_NS) and
/// `DRAIN_NS`; the drains cost per record, so reading more often costs
/// little more. A ring still fills when the sampler thread waits for a
/// CPU (other work on the machine): each read also takes the thread's
/// run delay (the second field of its `schedstat`, ns spent runnable on
/// a run queue) and keeps the most it grew between two reads.
#[derive(Debug)]
struct RingReads {
    /// The last read, CLOCK_MONOTONIC ns.
    read_at: u64,
    /// Planned time between reads, ns.
    period_ns: u64,
    /// The shortest `period_ns` planned, ns.
    shortest_period_ns: u64,
    /// The sampler thread's `/proc/thread-self/schedstat`, when it opens.
    schedstat: Option<File>,
    /// Its run delay at the last read, ns.
    run_delay_ns: Option<u64>,
    /// The most the run delay grew between two reads, ns.
    longest_run_delay_ns: u64,
}

impl RingReads {
    /// Reads from `now` (CLOCK_MONOTONIC ns), the first a quarter of
    /// `DRAIN_NS` later; to be made on the thread that reads.
    fn new(now: u64) -> RingReads {
        let period_ns = (DRAIN_NS / 4).max(MIN_DRAIN_NS);
        let schedstat = File::open("/proc/thread-self/schedstat").ok();
        let mut reads = RingReads {
            read_at: now,
            period_ns,
            shortest_period_ns: period_ns,
            schedstat,
            run_delay_ns: None,
            longest_run_delay_ns: 0,
        };
        reads.run_delay_ns = reads.run_delay();
        reads
    }

    /// This thread's run delay so far, ns.
    fn run_delay(&self) -> Option<u64> {
        let mut buf = [0u8; 96];
        let n = self.schedstat.as_ref()?.read_at(&mut buf, 0).ok()?;
        parse_schedstat(&buf[..n]).map(|(_, wait, _)| wait)
    }

    /// A read of the rings at `now` that found the fullest ring holding
    /// `fullest_share` of its size (0–1).
    fn read(&mut self, now: u64, fullest_share: f64) {
        if let Some(delay) = self.run_delay() {
            if let Some(before) = self.run_delay_ns {
                self.longest_run_delay_ns =
                    self.longest_run_delay_ns.max(delay.saturating_sub(before));
            }
            self.run_delay_ns = Some(delay);
        }
        let elapsed = now.saturating_sub(self.read_at);
        self.period_ns = if fullest_share > 0.0 && elapsed > 0 {
            // time to fill the ring at the rate just seen, a quarter of it
            let fill_ns = elapsed as f64 / fullest_share;
            ((fill_ns / 4.0) as u64).clamp(MIN_DRAIN_NS, DRAIN_NS)
        } else {
            DRAIN_NS
        };
        self.shortest_period_ns = self.shortest_period_ns.min(self.period_ns);
        self.read_at = now;
    }

    /// When to wake for the next read, CLOCK_MONOTONIC ns, with the next
    /// tick at `tick`: the tick itself when it comes no later than half a
    /// period after the read is due (a drain just before a tick doubled
    /// the reads at 10 ms ticks: docs/benchmarks.md, "The sampler's
    /// scheduler events for the whole machine").
    fn next_drain(&self, tick: u64) -> u64 {
        let due = self.read_at + self.period_ns;
        if tick <= due + self.period_ns / 2 {
            tick
        } else {
            due
        }
    }
}

fn run(
    mut writer: SampleWriter,
    pid: u32,
    interval: Duration,
    header: Header,
    stop: OwnedFd,
    source: ServiceSource,
    prepared: Option<Result<SchedEvents, String>>,
) -> SamplerStats {
    // SAFETY: prctl with an integer argument; affects this thread only.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };
    let mut stats = SamplerStats {
        source: "schedstat",
        ..SamplerStats::default()
    };
    // The events first, then the first listing: a thread either inherits
    // them or is listed (and then read from schedstat).
    let events = match source {
        ServiceSource::Schedstat => None,
        ServiceSource::Auto | ServiceSource::SchedEvents => {
            let opened = prepared.unwrap_or_else(|| {
                let threads = crate::attach::tree_threads(pid);
                let mut pids: Vec<u32> = threads.iter().map(|&(p, _)| p).collect();
                pids.dedup();
                let tids: Vec<u32> = threads.iter().map(|&(_, t)| t).collect();
                SchedEvents::open_for(&pids, &tids)
            });
            match opened {
                Ok(ev) => {
                    stats.source = "sched-events";
                    stats.event_scope = Some(ev.scope().name());
                    stats.event_wakeups_refused = ev.wakeups_refused.clone();
                    Some(ev)
                }
                Err(e) => {
                    stats.source_note = Some(e);
                    None
                }
            }
        }
    };
    let mut state = State::new(pid, header.clk_tck, header.interval_ns);
    state.events = events;
    state.may_leave_events = source == ServiceSource::Auto;
    let mut grid = Grid::new(
        u64::try_from(interval.as_nanos()).unwrap_or(u64::MAX),
        u64::from(header.kernel_tick_ns),
        monotonic_ns(),
        clock_ns(libc::CLOCK_MONOTONIC_COARSE),
    );
    let mut last = false;
    let mut flushed_at = 0;
    let mut reads = RingReads::new(monotonic_ns());
    let interval_ns = u64::try_from(interval.as_nanos()).unwrap_or(u64::MAX);
    // deadlines slept through, whose ticks are made from the events
    let mut slept: Vec<u64> = Vec::new();
    // false once a ring's descriptor reported an error: no more coasting
    let mut rings_pollable = true;
    loop {
        let flags = if last { TICK_FINAL } else { 0 };
        let tick_at = monotonic_ns();
        // (a stop before them leaves the later ones untaken)
        for d in slept.drain(..).filter(|&d| d <= tick_at) {
            let tick = state.tick_from_events(d);
            stats.ticks += 1;
            stats.ticks_from_events += 1;
            stats.entries += state.entries.len() as u64;
            writer.push_tick(&tick, &state.entries);
        }
        let tick = state.tick(flags);
        if let Some(ev) = &state.events {
            reads.read(tick_at, ev.fullest_ring_share);
        }
        stats.ticks += 1;
        stats.entries += state.entries.len() as u64;
        writer.push_tick(&tick, &state.entries);
        if last
            || writer.buffered() >= FLUSH_BYTES
            || tick.monotonic_ns.saturating_sub(flushed_at) >= FLUSH_NS
        {
            flushed_at = tick.monotonic_ns;
            if let Err(e) = writer.flush() {
                stats.error = Some(e.to_string());
                break;
            }
        }
        if last {
            break;
        }
        let mut next = grid.next_after(monotonic_ns());
        let ring_fds = match &state.events {
            Some(ev) if rings_pollable => ev.ring_fds(),
            _ => Vec::new(),
        };
        // Coasting: every thread is followed by events whose rings wake
        // the sampler when they fill, so it sleeps through the deadlines
        // of the next COAST_NS and makes their ticks from the events.
        let coasting = !ring_fds.is_empty() && state.coasts();
        if coasting {
            // (with an interval of COAST_NS or more, none)
            while next.saturating_add(interval_ns) <= tick_at.saturating_add(COAST_NS) {
                slept.push(next);
                next = grid.next_after(next);
            }
        }
        // the rings are drained between ticks too (RingReads, or their
        // watermarks when coasting), but not just before a tick, which
        // reads them anyway
        loop {
            let wake = if state.events.is_some() && !coasting {
                reads.next_drain(next)
            } else {
                next
            };
            match sleep_until(&stop, &ring_fds, wake) {
                Woken::Timeout => {}
                Woken::Stop => {
                    last = true;
                    break;
                }
                Woken::Watermark => stats.watermark_wakeups += 1,
                Woken::RingError => {
                    // take the ticks now and wake at every tick from here
                    rings_pollable = false;
                    break;
                }
            }
            let now = monotonic_ns();
            if now >= next {
                break;
            }
            if let Some(ev) = &mut state.events {
                ev.drain(now);
                reads.read(now, ev.fullest_ring_share);
            }
        }
    }
    stats.threads = state.threads_seen;
    stats.processes = state.processes_seen;
    stats.discoveries = state.discoveries;
    let (mut threads, mut records, mut lost) = state.left_events;
    if let Some(ev) = &state.events {
        threads += ev.threads_seen;
        records += ev.records;
        lost += ev.lost;
    }
    stats.threads += threads;
    stats.event_threads = threads;
    stats.event_records = records;
    stats.event_records_lost = lost;
    if stats.source == "sched-events" {
        stats.event_longest_run_delay_ns = Some(reads.longest_run_delay_ns);
        stats.event_shortest_drain_ns = Some(reads.shortest_period_ns);
    }
    stats.switched = state.switched;
    stats.cpu_ns = thread_cpu_ns();
    stats
}

/// Why [`sleep_until`] returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Woken {
    /// The deadline came (or a signal interrupted the sleep).
    Timeout,
    /// The stop signal was written.
    Stop,
    /// A ring reached its watermark.
    Watermark,
    /// A ring's descriptor reported an error or a hang-up: it cannot be
    /// polled any more.
    RingError,
}

/// Sleeps until CLOCK_MONOTONIC `until` (ns), the eventfd `stop` is
/// written, or a descriptor of `rings` is readable (a scheduler-event
/// ring reached its watermark), whichever comes first (`ppoll`, to the
/// ns).
fn sleep_until(stop: &OwnedFd, rings: &[RawFd], until: u64) -> Woken {
    let mut fds = Vec::with_capacity(1 + rings.len());
    fds.push(libc::pollfd {
        fd: stop.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    });
    fds.extend(rings.iter().map(|&fd| libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    }));
    let left = until.saturating_sub(monotonic_ns());
    let timeout = libc::timespec {
        tv_sec: (left / 1_000_000_000) as libc::time_t,
        tv_nsec: (left % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: `fds` is a valid array of `fds.len()` pollfds and `timeout`
    // a valid timespec; no signal mask is given.
    let n = unsafe {
        libc::ppoll(
            fds.as_mut_ptr(),
            fds.len() as libc::nfds_t,
            &timeout,
            std::ptr::null(),
        )
    };
    if n <= 0 {
        return Woken::Timeout;
    }
    if fds[0].revents != 0 {
        return Woken::Stop;
    }
    if fds[1..]
        .iter()
        .any(|f| f.revents & (libc::POLLERR | libc::POLLHUP | libc::POLLNVAL) != 0)
    {
        return Woken::RingError;
    }
    Woken::Watermark
}

/// Absolute sampling deadlines: `origin + round(k·interval / tick)·tick`,
/// where `origin` lies half a kernel tick after a kernel tick. Without a
/// known kernel tick, plain multiples of the interval.
#[derive(Debug, Clone)]
struct Grid {
    interval: u64,
    tick: u64,
    origin: u64,
    k: u64,
    last: u64,
}

impl Grid {
    /// `now` is CLOCK_MONOTONIC, `coarse` CLOCK_MONOTONIC_COARSE (the
    /// time of the last kernel tick) read just after it.
    fn new(interval: u64, tick: u64, now: u64, coarse: u64) -> Grid {
        let interval = interval.max(1);
        // Align only to a plausible tick (HZ from 10 to 10 000) no longer
        // than the interval.
        let tick = if (100_000..=100_000_000).contains(&tick) && tick <= interval {
            tick
        } else {
            0
        };
        let origin = if tick > 0 && coarse <= now + tick {
            let mut o = coarse + tick / 2;
            while o < now {
                o += tick;
            }
            o
        } else {
            now
        };
        Grid {
            interval,
            tick,
            origin,
            k: 0,
            last: now,
        }
    }

    /// The first deadline later than both `now` and the previous one;
    /// deadlines missed by an overrunning tick are skipped.
    fn next_after(&mut self, now: u64) -> u64 {
        loop {
            self.k += 1;
            let ideal = self.k.saturating_mul(self.interval);
            let offset = match (ideal + self.tick / 2).checked_div(self.tick) {
                Some(ticks) => ticks * self.tick,
                None => ideal,
            };
            let d = self.origin.saturating_add(offset);
            if d > now && d > self.last {
                self.last = d;
                return d;
            }
            if self.k > 1 << 40 {
                return now + self.interval;
            }
        }
    }
}

/// One tracked thread.
struct Task {
    pid: u32,
    tid: u32,
    /// `schedstat` (or `stat` when `from_stat`), kept open when the budget
    /// allows.
    counters: Option<File>,
    from_stat: bool,
    /// `children`, kept open when the budget allows.
    children: Option<File>,
    last: (u64, u64, u32),
    written: bool,
    /// Figures never reported below these: the last entry the scheduler
    /// events gave for this thread before the sampler left them.
    floor: (u64, u64, u32),
}

/// Everything the sampler keeps between ticks.
struct State {
    clk_tck: u32,
    tasks: FxHashMap<(u32, u32), Task>,
    /// Tracked processes; a process is dropped when its task directory is
    /// gone.
    procs: Vec<u32>,
    proc_set: HashSet<u32>,
    loadavg: Option<File>,
    last_pid: Option<u64>,
    children_files: bool,
    /// Files we may still keep open.
    fd_budget: usize,
    threads_seen: u64,
    processes_seen: u64,
    discoveries: u64,
    /// The entries of the current tick.
    entries: Vec<Entry>,
    /// Threads found ended in the current tick (reused buffer).
    gone: Vec<(u32, u32)>,
    buf: Vec<u8>,
    path: String,
    /// The scheduler events, when used.
    events: Option<SchedEvents>,
    /// With events: a listing found no thread they do not cover.
    settled: bool,
    /// The events may be left for `schedstat` when they cost more
    /// (`CONTEND_SERVICE_SOURCE` unset or `auto`).
    may_leave_events: bool,
    /// Ticks in a row in which the events cost more ([`leaves_events`]).
    costly_ticks: u32,
    /// The sampling interval, ns.
    interval_ns: u64,
    /// Records processed and time at the previous tick.
    records_before: u64,
    tick_before_ns: u64,
    /// Set when the events were left.
    switched: Option<SourceSwitch>,
    /// (threads seen, records, lost) of the events when they were left.
    left_events: (u64, u64, u64),
}

impl State {
    fn new(pid: u32, clk_tck: u32, interval_ns: u64) -> State {
        let children_files = Path::new(&format!("/proc/{pid}/task/{pid}/children")).exists()
            || Path::new("/proc/thread-self/children").exists();
        let mut s = State {
            clk_tck: clk_tck.max(1),
            tasks: FxHashMap::default(),
            procs: Vec::new(),
            proc_set: HashSet::new(),
            loadavg: File::open("/proc/loadavg").ok(),
            last_pid: None,
            children_files,
            fd_budget: raise_fd_limit().saturating_sub(64),
            threads_seen: 0,
            processes_seen: 0,
            discoveries: 0,
            entries: Vec::new(),
            gone: Vec::new(),
            buf: vec![0; 4096],
            path: String::new(),
            events: None,
            settled: false,
            may_leave_events: false,
            costly_ticks: 0,
            interval_ns,
            records_before: 0,
            tick_before_ns: 0,
            switched: None,
            left_events: (0, 0, 0),
        };
        s.add_proc(pid);
        s
    }

    fn add_proc(&mut self, pid: u32) {
        if self.proc_set.insert(pid) {
            self.procs.push(pid);
            self.processes_seen += 1;
        }
    }

    /// Takes one tick: fills `self.entries` and returns the tick header.
    fn tick(&mut self, flags: u32) -> TickHeader {
        self.entries.clear();
        let monotonic_ns = monotonic_ns();
        // The figures of the event source are taken SLACK_NS earlier (all
        // of them at the end).
        let events_at = if flags & TICK_FINAL != 0 {
            monotonic_ns
        } else {
            monotonic_ns.saturating_sub(SLACK_NS)
        };
        if let Some(ev) = &mut self.events {
            ev.advance(if flags & TICK_FINAL != 0 {
                u64::MAX
            } else {
                events_at
            });
            for p in std::mem::take(&mut ev.new_processes) {
                if self.proc_set.insert(p) {
                    self.procs.push(p);
                    self.processes_seen += 1;
                }
            }
            // A thread listed (and read from schedstat) before its fork
            // record was processed stays with schedstat.
            for (pid, tid) in std::mem::take(&mut ev.new_threads) {
                if self.tasks.contains_key(&(pid, tid)) {
                    ev.forget(tid);
                }
            }
        }
        let (run_queue, last_pid) = self.read_loadavg();
        let discover = match &self.events {
            Some(_) => !self.settled,
            None => last_pid.is_none() || last_pid != self.last_pid,
        };
        self.last_pid = last_pid;

        // Known threads first: a tid reused since the last tick reads as
        // gone here and as new in the listing below.
        let mut gone = std::mem::take(&mut self.gone);
        for (key, task) in self.tasks.iter_mut() {
            if !sample_task(
                task,
                &mut self.buf,
                &mut self.path,
                self.clk_tck,
                &mut self.entries,
            ) {
                gone.push(*key);
            }
        }
        for key in gone.drain(..) {
            self.forget(key);
        }
        self.gone = gone;
        if discover {
            self.discoveries += 1;
            self.discover();
        }
        if let Some(ev) = &mut self.events {
            ev.entries(events_at, &mut self.entries);
        }
        if flags & TICK_FINAL == 0 {
            self.maybe_leave_events(monotonic_ns);
        }
        TickHeader {
            monotonic_ns,
            run_queue,
            flags,
        }
    }

    /// Whether the sampler may sleep through ticks and make them from the
    /// events afterwards ([`COAST_NS`]): the events follow every thread
    /// (no thread is read from `schedstat`, no listing is due), and the
    /// last tick did not find them costlier than `schedstat` (the ticks
    /// that decide whether to leave them come at every interval).
    fn coasts(&self) -> bool {
        self.events.is_some() && self.settled && self.tasks.is_empty() && self.costly_ticks == 0
    }

    /// A tick at `at_ns` (CLOCK_MONOTONIC, past) made from the scheduler
    /// events alone, as [`State::tick`] would have made it then (their
    /// figures [`SLACK_NS`] earlier), flagged [`TICK_FROM_EVENTS`]: no run
    /// queue is read. Fills `self.entries`.
    fn tick_from_events(&mut self, at_ns: u64) -> TickHeader {
        self.entries.clear();
        let events_at = at_ns.saturating_sub(SLACK_NS);
        if let Some(ev) = &mut self.events {
            ev.advance(events_at);
            ev.entries(events_at, &mut self.entries);
        }
        TickHeader {
            monotonic_ns: at_ns,
            run_queue: 0,
            flags: TICK_FROM_EVENTS,
        }
    }

    /// Leaves the scheduler events for `schedstat` after
    /// [`SWITCH_AFTER_TICKS`] ticks in a row in which they cost more
    /// ([`leaves_events`]): every thread they followed is read from its
    /// `schedstat` from the next tick on, never below its last entry
    /// (both count from the thread's start), and closing the events
    /// removes them from every thread of the target.
    fn maybe_leave_events(&mut self, now_ns: u64) {
        let Some(ev) = &self.events else {
            return;
        };
        let records = ev.records.saturating_sub(self.records_before);
        let tick_ns = now_ns.saturating_sub(self.tick_before_ns);
        self.records_before = ev.records;
        self.tick_before_ns = now_ns;
        if !self.may_leave_events {
            return;
        }
        let threads = ev.followed() as u64;
        // a stretch slept through holds several intervals, and `schedstat`
        // would be read once in each: judged per interval
        let interval = self.interval_ns.max(1);
        let (records, tick_ns) = if tick_ns > interval + interval / 2 {
            let per_interval = u128::from(records) * u128::from(interval) / u128::from(tick_ns);
            (u64::try_from(per_interval).unwrap_or(u64::MAX), interval)
        } else {
            (records, tick_ns)
        };
        if leaves_events(records, threads, tick_ns) {
            self.costly_ticks += 1;
        } else {
            self.costly_ticks = 0;
        }
        if self.costly_ticks < SWITCH_AFTER_TICKS {
            return;
        }
        let Some(ev) = self.events.take() else {
            return;
        };
        for (pid, tid, figures) in ev.reported() {
            if self.tasks.contains_key(&(pid, tid)) {
                continue;
            }
            let mut task = self.open_task(pid, tid);
            task.last = figures;
            task.floor = figures;
            task.written = true;
            self.tasks.insert((pid, tid), task);
        }
        self.left_events = (ev.threads_seen, ev.records, ev.lost);
        self.switched = Some(SourceSwitch {
            at_ns: now_ns,
            records_per_s: u64::try_from(
                u128::from(records) * 1_000_000_000 / u128::from(tick_ns.max(1)),
            )
            .unwrap_or(u64::MAX),
            threads,
        });
        // closing takes the kernel tens of ms: not on the ticks' time
        ev.close_aside();
        // list the task directories at the next tick: threads the events
        // followed without an entry yet are read from their start
        self.settled = false;
        self.last_pid = None;
    }

    /// Reads one known thread and records an entry if it is new or
    /// changed; forgets it when it has ended.
    fn sample(&mut self, key: (u32, u32)) {
        let Some(task) = self.tasks.get_mut(&key) else {
            return;
        };
        if !sample_task(
            task,
            &mut self.buf,
            &mut self.path,
            self.clk_tck,
            &mut self.entries,
        ) {
            self.forget(key);
        }
    }

    /// Drops an ended thread and closes its files.
    fn forget(&mut self, key: (u32, u32)) {
        if let Some(mut task) = self.tasks.remove(&key) {
            if task.counters.take().is_some() {
                self.fd_budget += 1;
            }
            if task.children.take().is_some() {
                self.fd_budget += 1;
            }
        }
    }

    /// Lists the threads of every tracked process and finds new child
    /// processes; new threads are sampled at once.
    fn discover(&mut self) {
        let mut uncovered = false;
        let mut i = 0;
        while i < self.procs.len() {
            let pid = self.procs[i];
            self.path.clear();
            let _ = write!(self.path, "/proc/{pid}/task");
            let rd = match std::fs::read_dir(&self.path) {
                Ok(rd) => rd,
                Err(_) => {
                    // The process has ended (and been reaped).
                    self.procs.swap_remove(i);
                    self.proc_set.remove(&pid);
                    continue;
                }
            };
            for e in rd.flatten() {
                let Some(tid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
                    continue;
                };
                if let Some(ev) = &mut self.events {
                    if !ev.covers(tid) && !self.tasks.contains_key(&(pid, tid)) {
                        // its fork record may have come since the tick began
                        ev.refresh();
                    }
                    if ev.covers(tid) {
                        continue;
                    }
                    if !ev.attached(tid) {
                        // Started before the events reached its creator:
                        // its own threads are to inherit them.
                        uncovered = true;
                        let _ = ev.attach(pid, tid);
                    }
                }
                if !self.tasks.contains_key(&(pid, tid)) {
                    let task = self.open_task(pid, tid);
                    self.tasks.insert((pid, tid), task);
                    self.threads_seen += 1;
                    self.sample((pid, tid));
                }
            }
            if self.children_files {
                let tids: Vec<u32> = self
                    .tasks
                    .values()
                    .filter(|t| t.pid == pid)
                    .map(|t| t.tid)
                    .collect();
                for tid in tids {
                    for child in self.read_children(pid, tid) {
                        self.add_proc(child);
                    }
                }
            }
            i += 1;
        }
        if !self.children_files {
            for child in scan_descendants(&self.proc_set) {
                self.add_proc(child);
            }
            // New processes are listed at the next discovery; make sure
            // there is one.
            self.last_pid = None;
            uncovered = true;
        }
        self.settled = !uncovered;
    }

    fn open_task(&mut self, pid: u32, tid: u32) -> Task {
        let mut task = Task {
            pid,
            tid,
            counters: None,
            from_stat: false,
            children: None,
            last: (0, 0, 0),
            written: false,
            floor: (0, 0, 0),
        };
        if self.fd_budget > 0 {
            self.path.clear();
            let _ = write!(self.path, "/proc/{pid}/task/{tid}/schedstat");
            match File::open(&self.path) {
                Ok(f) => {
                    task.counters = Some(f);
                    self.fd_budget -= 1;
                }
                Err(_) => {
                    self.path.clear();
                    let _ = write!(self.path, "/proc/{pid}/task/{tid}/stat");
                    if let Ok(f) = File::open(&self.path) {
                        task.counters = Some(f);
                        task.from_stat = true;
                        self.fd_budget -= 1;
                    }
                }
            }
        } else {
            self.path.clear();
            let _ = write!(self.path, "/proc/{pid}/task/{tid}/schedstat");
            task.from_stat = !Path::new(&self.path).exists();
        }
        task
    }

    /// Child pids of thread `tid` of `pid` (empty when it has ended).
    fn read_children(&mut self, pid: u32, tid: u32) -> Vec<u32> {
        let Some(task) = self.tasks.get_mut(&(pid, tid)) else {
            return Vec::new();
        };
        if task.children.is_none() && self.fd_budget > 0 {
            self.path.clear();
            let _ = write!(self.path, "/proc/{pid}/task/{tid}/children");
            if let Ok(f) = File::open(&self.path) {
                task.children = Some(f);
                self.fd_budget -= 1;
            }
        }
        let n = match &task.children {
            Some(f) => f.read_at(&mut self.buf, 0),
            None => {
                self.path.clear();
                let _ = write!(self.path, "/proc/{pid}/task/{tid}/children");
                File::open(&self.path).and_then(|f| f.read_at(&mut self.buf, 0))
            }
        };
        match n {
            Ok(n) => parse_pids(&self.buf[..n]),
            Err(_) => Vec::new(),
        }
    }

    /// Run-queue length and last allocated pid from `/proc/loadavg`.
    fn read_loadavg(&mut self) -> (u32, Option<u64>) {
        let Some(f) = &self.loadavg else {
            return (0, None);
        };
        match f.read_at(&mut self.buf, 0) {
            Ok(n) => parse_loadavg(&self.buf[..n]),
            Err(_) => (0, None),
        }
    }
}

/// Reads one thread's counters into `entries` if it is new or changed;
/// false when it has ended.
fn sample_task(
    task: &mut Task,
    buf: &mut [u8],
    path: &mut String,
    clk_tck: u32,
    entries: &mut Vec<Entry>,
) -> bool {
    let n = match &task.counters {
        Some(f) => f.read_at(buf, 0),
        None => {
            path.clear();
            let name = if task.from_stat { "stat" } else { "schedstat" };
            let _ = write!(path, "/proc/{}/task/{}/{name}", task.pid, task.tid);
            File::open(&*path).and_then(|f| f.read_at(buf, 0))
        }
    };
    let Ok(n) = n else {
        return false;
    };
    let text = &buf[..n];
    let parsed = if task.from_stat {
        parse_stat(text).map(|ticks| {
            let ns = u128::from(ticks) * 1_000_000_000 / u128::from(clk_tck);
            (u64::try_from(ns).unwrap_or(u64::MAX), 0, 0)
        })
    } else {
        parse_schedstat(text)
    };
    let Some(now) = parsed else {
        return false;
    };
    let f = task.floor;
    let now = (now.0.max(f.0), now.1.max(f.1), now.2.max(f.2));
    let new = !task.written;
    if new || now != task.last {
        let mut flags = if task.from_stat { ENTRY_FROM_STAT } else { 0 };
        if new {
            flags |= ENTRY_NEW;
        }
        entries.push(Entry {
            pid: task.pid,
            tid: task.tid,
            run_ns: now.0,
            wait_ns: now.1,
            slices: now.2,
            flags,
        });
        task.last = now;
        task.written = true;
    }
    true
}

/// `"run wait slices\n"` of `schedstat`.
/// The three fields of a `schedstat` file: (run ns, run-queue wait ns,
/// time slices); `None` when they cannot be parsed.
pub(crate) fn parse_schedstat(text: &[u8]) -> Option<(u64, u64, u32)> {
    let s = std::str::from_utf8(text).ok()?;
    let mut it = s.split_ascii_whitespace().map(|f| f.parse::<u64>().ok());
    let run = it.next()??;
    let wait = it.next()??;
    let slices = it.next()??;
    Some((run, wait, u32::try_from(slices).unwrap_or(u32::MAX)))
}

/// `utime + stime` (fields 14 and 15, clock ticks) of a `stat` line; the
/// command name in parentheses may hold spaces and parentheses.
fn parse_stat(text: &[u8]) -> Option<u64> {
    let s = std::str::from_utf8(text).ok()?;
    let rest = &s[s.rfind(')')? + 1..];
    let mut it = rest.split_ascii_whitespace().skip(11);
    let utime: u64 = it.next()?.parse().ok()?;
    let stime: u64 = it.next()?.parse().ok()?;
    Some(utime.saturating_add(stime))
}

/// Parent pid (field 4) of a `stat` line.
fn parse_ppid(text: &[u8]) -> Option<u32> {
    let s = std::str::from_utf8(text).ok()?;
    let rest = &s[s.rfind(')')? + 1..];
    rest.split_ascii_whitespace().nth(1)?.parse().ok()
}

/// Space-separated pids of a `children` file.
fn parse_pids(text: &[u8]) -> Vec<u32> {
    std::str::from_utf8(text)
        .unwrap_or("")
        .split_ascii_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

/// `"0.50 0.40 0.30 running/total last_pid"`: the running count and the
/// last allocated pid.
fn parse_loadavg(text: &[u8]) -> (u32, Option<u64>) {
    let s = std::str::from_utf8(text).unwrap_or("");
    let mut it = s.split_ascii_whitespace().skip(3);
    let running = it
        .next()
        .and_then(|f| f.split('/').next())
        .and_then(|r| r.parse().ok())
        .unwrap_or(0);
    let last_pid = it.next().and_then(|p| p.parse().ok());
    (running, last_pid)
}

/// Processes whose parent chain leads into `roots` (not the roots
/// themselves), from every `/proc/<pid>/stat`: the fallback for kernels
/// without `children` files.
fn scan_descendants(roots: &HashSet<u32>) -> Vec<u32> {
    let mut parent_of = Vec::new();
    let mut buf = vec![0u8; 1024];
    if let Ok(rd) = std::fs::read_dir("/proc") {
        for e in rd.flatten() {
            let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
                continue;
            };
            let Ok(f) = File::open(e.path().join("stat")) else {
                continue;
            };
            if let Some(ppid) = f
                .read_at(&mut buf, 0)
                .ok()
                .and_then(|n| parse_ppid(&buf[..n]))
            {
                parent_of.push((pid, ppid));
            }
        }
    }
    let mut known: HashSet<u32> = roots.clone();
    let mut out = Vec::new();
    loop {
        let before = out.len();
        for &(pid, ppid) in &parent_of {
            if known.contains(&ppid) && known.insert(pid) {
                out.push(pid);
            }
        }
        if out.len() == before {
            return out;
        }
    }
}

/// CPUs process `pid` may run on (its affinity mask), else the online
/// CPUs.
pub fn allowed_cpus(pid: u32) -> u32 {
    // SAFETY: sched_getaffinity fills the zeroed set it is given.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(
            pid as libc::pid_t,
            std::mem::size_of::<libc::cpu_set_t>(),
            &mut set,
        ) == 0
        {
            let n = libc::CPU_COUNT(&set);
            if n > 0 {
                return n as u32;
            }
        }
        u32::try_from(libc::sysconf(libc::_SC_NPROCESSORS_ONLN)).unwrap_or(1)
    }
}

/// The kernel tick (`1/HZ`), ns: the resolution of
/// `CLOCK_MONOTONIC_COARSE`; 0 when it cannot be read.
fn kernel_tick_ns() -> u32 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid out-pointer.
    if unsafe { libc::clock_getres(libc::CLOCK_MONOTONIC_COARSE, &mut ts) } != 0 || ts.tv_sec != 0 {
        return 0;
    }
    u32::try_from(ts.tv_nsec).unwrap_or(0)
}

fn clk_tck() -> u32 {
    // SAFETY: sysconf has no memory effects.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    u32::try_from(t).ok().filter(|&t| t > 0).unwrap_or(100)
}

/// Raises the soft open-file limit to the hard limit (at most 2^20);
/// returns the soft limit now in force.
fn raise_fd_limit() -> usize {
    // SAFETY: getrlimit/setrlimit with valid pointers.
    unsafe {
        let mut r: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) != 0 {
            return 256;
        }
        let want = r.rlim_max.min(1 << 20);
        if r.rlim_cur < want {
            let new = libc::rlimit {
                rlim_cur: want,
                rlim_max: r.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &new) == 0 {
                r.rlim_cur = want;
            }
        }
        // Leave room for the launcher's own files.
        usize::try_from(r.rlim_cur).unwrap_or(usize::MAX) / 2
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Worked by hand: the first read comes a quarter of `DRAIN_NS` (10 ms)
    /// after the start; a ring half full 10 ms after the last read fills
    /// in 20 ms, so the next read comes 5 ms later; an empty one puts it
    /// back to 10 ms (`DRAIN_NS`); a ring filled in 5 ms asks for 1.25 ms,
    /// held at `MIN_DRAIN_NS` (2 ms). A tick within half a period after
    /// the drain is due takes its place.
    #[test]
    fn ring_reads_are_planned_for_a_quarter_of_the_fill_time() {
        let ms = 1_000_000;
        let mut r = RingReads::new(0);
        assert_eq!(r.period_ns, ms * 5 / 2);
        r.read(10 * ms, 0.5);
        assert_eq!(r.period_ns, 5 * ms);
        r.read(15 * ms, 0.0);
        assert_eq!(r.period_ns, DRAIN_NS);
        r.read(35 * ms, 1.0);
        assert_eq!(r.period_ns, 5 * ms);
        r.read(40 * ms, 1.0);
        assert_eq!(r.period_ns, MIN_DRAIN_NS);
        assert_eq!(r.shortest_period_ns, MIN_DRAIN_NS);
        // due at 42 ms: a tick at 42.5 ms reads instead, one at 50 ms not
        assert_eq!(r.next_drain(42 * ms + ms / 2), 42 * ms + ms / 2);
        assert_eq!(r.next_drain(50 * ms), 42 * ms);
        // this thread's run delay is read (schedstat exists on Linux)
        assert!(r.run_delay_ns.is_some());
    }

    /// Worked by hand with 500 ns per record, 2 µs per schedstat read and
    /// a 10 ms tick (the floor is 100 µs: 200 records).
    #[test]
    fn the_events_are_left_when_they_cost_more_and_over_one_percent() {
        let tick = 10_000_000;
        // pingpong: 780 records a tick, 2 threads: 390 µs > 4 µs and > 100 µs
        assert!(leaves_events(780, 2, tick));
        // 30 records (15 µs) against one thread (2 µs): cheaper by
        // schedstat, but under the floor, so the events stay
        assert!(!leaves_events(30, 1, tick));
        // 201 records: 100.5 µs, just over the floor
        assert!(leaves_events(201, 1, tick));
        assert!(!leaves_events(200, 1, tick));
        // many idle threads: schedstat costs more
        assert!(!leaves_events(300, 100, tick));
    }

    #[test]
    fn parsers() {
        assert_eq!(parse_schedstat(b"359247 12 3\n"), Some((359_247, 12, 3)));
        assert_eq!(parse_schedstat(b"1 2\n"), None);
        assert_eq!(parse_schedstat(b""), None);
        let stat = b"42 (a) b) c) R 1 42 42 0 -1 4194560 100 0 0 0 7 5 0 0 20 0 1 0 1 1 1";
        assert_eq!(parse_stat(stat), Some(12));
        assert_eq!(parse_ppid(stat), Some(1));
        assert_eq!(parse_stat(b"garbage"), None);
        assert_eq!(parse_pids(b"12 13 \n"), vec![12, 13]);
        assert_eq!(parse_pids(b""), Vec::<u32>::new());
        assert_eq!(
            parse_loadavg(b"2.73 1.92 1.51 5/109 5813\n"),
            (5, Some(5813))
        );
        assert_eq!(parse_loadavg(b"x"), (0, None));
    }

    #[test]
    fn grid_keeps_the_kernel_tick_phase() {
        let ms = 1_000_000;
        // HZ=250, 10 ms asked; the last kernel tick was at 1003 ms, now is
        // 1004.5 ms: origin at 1005 ms, then 8/12 ms steps, all ≡ 1 (mod 4).
        let mut g = Grid::new(10 * ms, 4 * ms, 1004 * ms + ms / 2, 1003 * ms);
        let mut now = 1005 * ms;
        let mut ds = Vec::new();
        for _ in 0..6 {
            let d = g.next_after(now);
            ds.push(d);
            now = d;
        }
        assert_eq!(
            ds,
            [1017, 1025, 1037, 1045, 1057, 1065]
                .map(|x| x * ms)
                .to_vec()
        );
        // An overrun skips missed deadlines, keeping the phase.
        let d = g.next_after(1100 * ms);
        assert_eq!(d, 1105 * ms);
        // Without a kernel tick: plain multiples.
        let mut g = Grid::new(10 * ms, 0, 7 * ms, 0);
        assert_eq!(g.next_after(7 * ms), 17 * ms);
        assert_eq!(g.next_after(50 * ms), 57 * ms);
        // An interval shorter than the tick is not aligned.
        let mut g = Grid::new(ms, 4 * ms, 0, 0);
        assert_eq!(g.next_after(0), ms);
    }

    #[test]
    fn samples_a_child_with_threads() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.csamp");
        // A shell that starts a busy child process.
        let mut child = std::process::Command::new("sh")
            .arg("-c")
            .arg("i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done & wait")
            .spawn()
            .unwrap();
        let s =
            Sampler::start(&path, child.id(), Duration::from_millis(5), monotonic_ns()).unwrap();
        // Wait for the child to end without reaping it.
        crate::launch::wait_exited(child.id()).unwrap();
        let stats = s.stop();
        child.wait().unwrap();
        assert_eq!(stats.error, None);
        assert!(stats.processes >= 2, "{stats:?}");
        let f = contend_trace::service::SampleFile::read(&path).unwrap();
        assert_eq!(f.truncated, None);
        assert_eq!(f.ticks.len() as u64, stats.ticks);
        assert_eq!(f.ticks.last().unwrap().header.flags, TICK_FINAL);
        let pids: HashSet<u32> = f
            .ticks
            .iter()
            .flat_map(|t| t.entries.iter().map(|e| e.pid))
            .collect();
        assert!(pids.contains(&child.id()));
        assert!(pids.len() >= 2, "the busy child was not followed: {pids:?}");
    }
}
