//! The report data model: what every output format renders and what
//! `--format json` serialises. The JSON shape is a stable contract
//! (docs/json.md): keys are only ever added. All times are integer
//! nanoseconds (`*_ns`); shares are fractions in [0, 1]; addresses are
//! hexadecimal strings (`"0x7f3a…"`) because JSON numbers above 2^53 lose
//! precision in many readers.

use serde::Serialize;

/// A full report of one recording.
#[derive(Debug, Clone, Serialize, Default)]
pub struct Report {
    /// The run that was recorded.
    pub run: RunInfo,
    /// Lock and wait analysis (Venter 2016, Section 3.2.2.2, Tables 4.9–4.12).
    pub locks: LockReport,
    /// Everything the reader found wrong or missing, one sentence each.
    pub warnings: Vec<String>,
    /// Service time of the target's threads and the average number of
    /// active threads, from the sampler's `service.csamp` (Venter 2016,
    /// Sections 3.1.2 and 3.2.2.1, Listings 3.3 and 3.4). Absent (no key
    /// in JSON) when the recording has no samples.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub service: Option<ServiceReport>,
    /// Performance counters of the target and the work measure (cycles,
    /// or CPU time where there are no cycles), from `meta.json`
    /// (`crate::counters`; Venter 2016, Sections 3.1.1 and 3.2.1.1).
    /// Absent (no key in JSON) for recordings made before counters existed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub counters: Option<CountersReport>,
    /// The speed-up loss model of a scale directory (`contend scale`;
    /// Venter 2016, Eq. 3.1–3.8, Tables 4.1–4.8 and 4.11; docs/model.md).
    /// Absent (no key in JSON) for a single recording.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub speedup: Option<crate::speedup::SpeedupReport>,
    /// MPI wait states (late sender, late receiver, collective waits) per
    /// pattern, rank and call site, from `<recording>/mpi/` (`crate::mpi`;
    /// Venter 2016, Section 3.2.2.3, Tables 4.13–4.15; Geimer et al. 2009).
    /// Absent (no key in JSON) when the recording has no MPI traces.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mpi: Option<crate::mpi::MpiReport>,
}

/// Performance counters of one recording and the work measure C(n) of the
/// speed-up model (docs/metrics.md, "Counters").
#[derive(Debug, Clone, Serialize, Default, PartialEq)]
pub struct CountersReport {
    /// The work measure: `"cycles"` when cycles were counted, else
    /// `"cpu time"` (the target's CPU time, the fallback on machines
    /// without a hardware PMU).
    pub work_measure: String,
    /// Why the fallback was used, e.g. `"fallback: no hardware PMU"`;
    /// empty with cycles.
    pub work_measure_note: String,
    /// The work C: cycles (a count) or CPU time (s), as `work_measure`
    /// says; `None` when neither is known.
    pub work: Option<f64>,
    /// CPU time of the target, s: the `task_clock` counter where it was
    /// measured, else `wait4` resource usage; `None` when neither is known.
    pub cpu_s: Option<f64>,
    /// Measured counters by name (`cycles`, `instructions`,
    /// `llc_references`, `llc_misses`, `stalled_cycles_backend`,
    /// `task_clock`): scaled value, raw count, time enabled and running,
    /// ns.
    pub available: std::collections::BTreeMap<String, contend_trace::counters::CounterValue>,
    /// Counters that could not be measured, with the reason.
    pub missing: Vec<contend_trace::counters::MissingCounter>,
    /// What the counts cover when not the whole run of the target (attach
    /// mode), one sentence; `None` otherwise.
    pub scope: Option<String>,
}

/// Service-time results of one recording (docs/metrics.md, "Service
/// time"). Unlike the rest of the report, times here are seconds as
/// floating-point numbers (`*_s`), the unit of the thesis's service-time
/// tables.
#[derive(Debug, Clone, Serialize, Default, PartialEq)]
pub struct ServiceReport {
    /// Wall time covered by the samples: from the target's start to the
    /// last sample (taken when it had ended), s.
    pub wall_s: f64,
    /// Total service (CPU) time of all sampled threads, s.
    pub cpu_s: f64,
    /// `cpu_s / wall_s`: CPUs kept busy on average (0 when `wall_s` is 0).
    pub cpu_per_wall: f64,
    /// Average number of active threads A measured, Σ τ / Σ ΔT_cp over the
    /// sampling intervals (Venter 2016, Listing 3.3).
    pub active_threads: f64,
    /// Average number of active threads A modelled for `cpus` CPUs,
    /// Σ τ / Σ (τ / min(n, τ / ΔT_cp)) (Venter 2016, Listing 3.4).
    pub active_threads_modelled: f64,
    /// n: CPUs the target could use (its affinity mask when sampling began).
    pub cpus: u32,
    /// Samples (ticks) read.
    pub samples: u64,
    /// Sampling interval asked for, ms.
    pub interval_ms: f64,
    /// Mean system run-queue length over the samples (runnable tasks on
    /// all CPUs, the sampler itself included).
    pub run_queue_mean: f64,
    /// Largest run-queue length sampled.
    pub run_queue_max: u32,
    /// Processes sampled (the target and its descendants).
    pub processes: u32,
    /// Threads whose service time came from `stat` (clock-tick
    /// resolution) because `schedstat` was unavailable.
    pub stat_fallback_threads: u32,
    /// Per thread, most service time first.
    pub threads: Vec<ServiceThreadRow>,
}

/// Service time of one thread.
#[derive(Debug, Clone, Serialize, Default, PartialEq)]
pub struct ServiceThreadRow {
    /// Process id.
    pub pid: u32,
    /// Kernel thread id (a reused tid is one row).
    pub tid: u32,
    /// Service (CPU) time received while sampled, s.
    pub cpu_s: f64,
    /// Time spent runnable but waiting for a CPU, s (`schedstat`; 0 with
    /// the `stat` fallback).
    pub run_queue_wait_s: f64,
    /// Time slices run (`schedstat`; 0 with the `stat` fallback).
    pub slices: u64,
}

/// Facts about the recorded run (from `meta.json` and the traces).
#[derive(Debug, Clone, Serialize, Default)]
pub struct RunInfo {
    /// Recording directory.
    pub recording: String,
    /// Command and arguments.
    pub command: Vec<String>,
    /// Exit status of the command; `None` if killed by a signal or unknown.
    pub exit_code: Option<i32>,
    /// Signal that ended the command, if any.
    pub signal: Option<i32>,
    /// Wall-clock duration of the run, ns (launcher start to end; if the
    /// launcher's end is unknown, the span of the recorded events).
    pub wall_ns: u64,
    /// Host name.
    pub host: String,
    /// CPU model.
    pub cpu_model: String,
    /// Online CPUs.
    pub cpus: u32,
    /// Start time, RFC 3339 UTC.
    pub start_utc: String,
    /// contend version that recorded.
    pub tool_version: String,
    /// Traced processes.
    pub processes: u32,
    /// Traced threads (a reused thread id counts again).
    pub threads: u32,
}

/// Results of the lock analysis.
#[derive(Debug, Clone, Serialize, Default)]
pub struct LockReport {
    /// Totals over lock events: mutex, rwlock and spinlock acquisitions (Table 4.9).
    pub summary: LockSummary,
    /// Totals over lock events on the critical path (Table 4.10).
    pub critical_path: CriticalPathSummary,
    /// Condition, barrier and semaphore waits, one row per kind present.
    pub other_waits: Vec<WaitKindRow>,
    /// Per synchronisation object, sorted by wait time, largest first (Table 4.12).
    pub by_lock: Vec<LockRow>,
    /// Per call site, sorted by wait time, largest first.
    pub by_site: Vec<SiteRow>,
    /// Per thread, sorted by wait time, largest first.
    pub by_thread: Vec<ThreadRow>,
    /// Wait time per log2 duration bucket (Figures 4.1 and 4.2); only
    /// buckets with events, ascending.
    pub wait_histogram: Vec<HistogramBucket>,
    /// Filters applied to the events before aggregation (empty = none).
    pub filters: Vec<String>,
    /// Why there is nothing to report, when no lock operation was recorded.
    pub no_events_reason: Option<String>,
    /// Modules whose call sites could not be resolved to file:line.
    pub sites_without_debug_info: Vec<String>,
}

/// Table 4.9 of Venter 2016, over the selected lock events.
#[derive(Debug, Clone, Serialize, Default, PartialEq)]
pub struct LockSummary {
    /// Program duration, ns (= `run.wall_ns`).
    pub program_ns: u64,
    /// Lock events: acquisition attempts of mutexes, rwlocks and spinlocks.
    pub events: u64,
    /// Events whose acquisition did not succeed at once.
    pub contended_events: u64,
    /// Attempts that never acquired (failed trylock, timeout, error).
    pub failed_events: u64,
    /// Σ wait time (acquired − requested), ns.
    pub wait_ns: u64,
    /// Σ hold time (released − acquired), ns.
    pub hold_ns: u64,
    /// Σ event duration (wait + hold), every event counted, ns.
    pub duration_ns: u64,
    /// Event duration counted once per thread where events overlap (nesting), ns.
    pub duration_once_ns: u64,
    /// wait_ns / duration_ns (0 when there are no events).
    pub wait_share: f64,
    /// duration_once_ns / events, ns (the thesis's "average mutex duration").
    pub mean_event_ns: u64,
    /// Largest single wait, ns.
    pub max_wait_ns: u64,
    /// Events still held when their thread's trace ended (held to its end).
    pub unreleased_events: u64,
    /// Releases with no matching acquisition in the same thread.
    pub unmatched_releases: u64,
}

/// Table 4.10 of Venter 2016: lock events on the critical path.
#[derive(Debug, Clone, Serialize, Default, PartialEq)]
pub struct CriticalPathSummary {
    /// Lock events on the critical path.
    pub events: u64,
    /// Of which contended.
    pub contended_events: u64,
    /// Σ wait time of those events, ns.
    pub wait_ns: u64,
    /// Σ hold time of those events, ns.
    pub hold_ns: u64,
    /// Σ (wait + hold), ns.
    pub duration_ns: u64,
    /// Duration counted once per thread where events overlap, ns.
    pub duration_once_ns: u64,
    /// events / all selected events.
    pub event_share: f64,
    /// wait_ns / duration of all selected events.
    pub wait_share: f64,
    /// Jumps from a waiting thread to the thread that released the lock.
    pub jumps: u64,
    /// Wait on the path by other primitives (cond, barrier, semaphore), ns.
    pub other_wait_ns: u64,
}

/// Summary of one kind of non-lock wait.
#[derive(Debug, Clone, Serialize, Default, PartialEq)]
pub struct WaitKindRow {
    /// `cond`, `barrier` or `semaphore`.
    pub kind: String,
    /// Wait operations.
    pub events: u64,
    /// Of which had to wait (did not succeed at once).
    pub contended_events: u64,
    /// Σ wait time, ns.
    pub wait_ns: u64,
    /// Wait time of those on the critical path, ns.
    pub critical_wait_ns: u64,
    /// Timed waits that timed out.
    pub timeouts: u64,
}

/// One synchronisation object (Table 4.12).
#[derive(Debug, Clone, Serialize, Default, PartialEq)]
pub struct LockRow {
    /// Symbol of a global/static object (`queue_lock`, `cache+0x40`), else the address.
    pub name: String,
    /// Address, hexadecimal.
    pub address: String,
    /// Process that owns it.
    pub pid: u32,
    /// `mutex`, `rwlock`, `spinlock`, `cond`, `barrier` or `semaphore`.
    pub kind: String,
    /// Events on this object.
    pub events: u64,
    /// Contended events.
    pub contended_events: u64,
    /// Σ wait, ns.
    pub wait_ns: u64,
    /// Σ hold, ns.
    pub hold_ns: u64,
    /// Σ (wait + hold), ns.
    pub duration_ns: u64,
    /// Largest single wait, ns.
    pub max_wait_ns: u64,
    /// Events on the critical path.
    pub critical_events: u64,
    /// Wait on the critical path, ns.
    pub critical_wait_ns: u64,
    /// Hold on the critical path, ns.
    pub critical_hold_ns: u64,
    /// Call sites that acquired it, most waiting first (short form).
    pub sites: Vec<String>,
}

/// One call site, resolved to function and file:line where possible.
#[derive(Debug, Clone, Serialize, Default, PartialEq)]
pub struct SiteRow {
    /// Function name (demangled), `None` if unknown.
    pub function: Option<String>,
    /// Source file, `None` without debug information.
    pub file: Option<String>,
    /// Source line, `None` without debug information.
    pub line: Option<u32>,
    /// Module (executable or library) path.
    pub module: Option<String>,
    /// Offset in the module, hexadecimal.
    pub offset: String,
    /// `dwarf`, `symbols` or `none`: how the site was resolved.
    pub debug: String,
    /// Short display form, e.g. `dequeue (queue.c:82)`.
    pub display: String,
    /// Events acquired here.
    pub events: u64,
    /// Contended events.
    pub contended_events: u64,
    /// Σ wait, ns.
    pub wait_ns: u64,
    /// Σ hold, ns.
    pub hold_ns: u64,
    /// Wait on the critical path, ns.
    pub critical_wait_ns: u64,
    /// Kinds of objects acquired here.
    pub kinds: Vec<String>,
}

/// One thread.
#[derive(Debug, Clone, Serialize, Default, PartialEq)]
pub struct ThreadRow {
    /// Process id.
    pub pid: u32,
    /// Kernel thread id.
    pub tid: u32,
    /// Lock events.
    pub events: u64,
    /// Contended events.
    pub contended_events: u64,
    /// Σ wait (locks and other waits), ns.
    pub wait_ns: u64,
    /// Σ hold, ns.
    pub hold_ns: u64,
    /// Events on the critical path.
    pub critical_events: u64,
    /// Time from the thread's first to its last recorded operation, ns.
    pub span_ns: u64,
}

/// A log2 bucket of wait durations: [lower_ns, upper_ns).
#[derive(Debug, Clone, Serialize, Default, PartialEq)]
pub struct HistogramBucket {
    /// Inclusive lower bound, ns (0 for the first bucket).
    pub lower_ns: u64,
    /// Exclusive upper bound, ns.
    pub upper_ns: u64,
    /// Lock events whose wait falls in the bucket.
    pub events: u64,
    /// Σ their wait, ns.
    pub wait_ns: u64,
    /// Of which on the critical path.
    pub critical_events: u64,
    /// Σ wait of those, ns.
    pub critical_wait_ns: u64,
}
