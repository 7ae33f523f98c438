//! The lock section of a report (JSON key `locks`; docs/json.md): the
//! summary (Venter 2016, Table 4.9), the critical path (Table 4.10), other
//! waits, per lock (Table 4.12), per call site, per thread and the
//! wait-time histogram (Figures 4.1/4.2). Definitions: docs/metrics.md.

use serde::Serialize;

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
    /// Set for a light recording (`contend record --light`): which figures
    /// are exact and which are not; `null` for a full recording.
    pub light: Option<LightNote>,
}

/// What a light recording (`contend record --light`) measured exactly and
/// what not (JSON `locks.light`). Uncontended acquisitions were counted per
/// object, call site and thread, without times (HaLock's point that only
/// contended acquisitions need full timing: Huang et al., PACT 2012); past
/// a thread's 256th (object, call site) pair, per call site and thread.
#[derive(Debug, Clone, Serialize, Default, PartialEq)]
pub struct LightNote {
    /// Uncontended acquisitions counted, not recorded (included in
    /// `summary.events` and the per-lock, per-site and per-thread events).
    pub counted_events: u64,
    /// Of `counted_events`, those counted by call site without their lock
    /// (the thread's count table already kept
    /// `contend_trace::format::count::LOCK_ENTRIES` (lock, call site)
    /// pairs): in `summary.events`, the per-site and per-thread events, not
    /// in any lock's row.
    pub counted_by_site_events: u64,
    /// Of the recorded events, counted holds whose release found waiters:
    /// recorded at that release, with hold 0 (the true hold is unknown).
    pub untimed_events: u64,
    /// Of the recorded events, uncontended lock acquisitions recorded in
    /// full all the same (request, acquisition and release times, as
    /// without `--light`): their thread had no count entry for them (it
    /// took more (lock, call site) pairs than its largest count table
    /// holds, docs/trace-format.md) or no count table.
    pub recorded_uncontended_events: u64,
    /// Figures that are exact, one phrase each.
    pub exact: Vec<String>,
    /// Figures that are not, and how they are approximated, one phrase each.
    pub approximate: Vec<String>,
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
    /// Releases (unlock, `sem_post`) that found waiters (trace format
    /// version 2; 0 for older recordings).
    pub releases_with_waiters: u64,
    /// Σ time inside those release calls, ns: the wake cost (Huang et al.,
    /// HaLock, PACT 2012, Section 4.3).
    pub wake_ns: u64,
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
    /// Wait on the path by other primitives (cond, barrier, semaphore,
    /// `pthread_join`), ns.
    pub other_wait_ns: u64,
    /// The critical path across pthread, futex and OpenMP hand-overs
    /// (docs/critical-path.md), present only when futex waits or OpenMP
    /// synchronisation were recorded; the fields above are then its
    /// pthread events.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub across: Option<super::across::AcrossSummary>,
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
    /// Times a thread other than the previous owner acquired it, over the
    /// whole recording whatever the filters (mutrace's "changed" count;
    /// [`super::ownership::ownership_changes`]).
    pub ownership_changes: u64,
    /// Call sites that acquired it, most waiting first (short form).
    pub sites: Vec<String>,
    /// Its releases that found waiters.
    pub releases_with_waiters: u64,
    /// Σ time inside those release calls (the wake cost), ns.
    pub wake_ns: u64,
    /// Longest such release call, ns.
    pub max_wake_ns: u64,
    /// Light recordings: of `events`, uncontended acquisitions counted
    /// without times.
    pub counted_events: u64,
    /// Where it was created: its init call, else its first use (absent
    /// without a creation record: recordings made before them). A lock
    /// with no symbol is named after it (`mutex created at cache.c:41
    /// (cache_new)`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created_at: Option<super::creation::CreatedAt>,
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
    /// Light recordings: of `events`, uncontended acquisitions counted
    /// without times.
    pub counted_events: u64,
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
    /// Light recordings: of `events`, uncontended acquisitions counted
    /// without times.
    pub counted_events: u64,
    /// The thread's name as the kernel had it (comm, at most 15 bytes),
    /// `None` when the recording has none (hand-built input, traces from
    /// before names were recorded).
    pub name: Option<String>,
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

/// Locks as the tables and charts name them: by name, and, where other locks of the
/// report have the same name (heap locks created at one call site: `mutex
/// created in memcached+0x1a486`), with the address after it, so that
/// their rows (and the call-site lists keyed by them) can be told apart.
pub(crate) struct ShownNames<'a> {
    shared: rustc_hash::FxHashSet<&'a str>,
}

impl<'a> ShownNames<'a> {
    /// The rule over `names`: those that come more than once are shown
    /// with their addresses.
    pub(crate) fn among(names: impl IntoIterator<Item = &'a str>) -> ShownNames<'a> {
        let mut seen = rustc_hash::FxHashSet::default();
        let shared = names.into_iter().filter(|n| !seen.insert(*n)).collect();
        ShownNames { shared }
    }

    /// The rule over the report's lock rows.
    pub(crate) fn of(l: &'a LockReport) -> ShownNames<'a> {
        ShownNames::among(l.by_lock.iter().map(|k| k.name.as_str()))
    }

    /// `name`, or `name @ address` where other locks share the name.
    pub(crate) fn shown(&self, name: &str, address: &str) -> String {
        if self.shared.contains(name) {
            format!("{name} @ {address}")
        } else {
            name.to_string()
        }
    }

    /// The name of row `k`.
    pub(crate) fn name(&self, k: &LockRow) -> String {
        self.shown(&k.name, &k.address)
    }
}
