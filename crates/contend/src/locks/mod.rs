//! Lock-contention analysis (the thesis's mutex tool, Venter 2016,
//! Sections 3.2.2.2 and 4.3.1): pairing of operations into lock events
//! ([`events`]), critical-path marking after Chen & Stenström
//! ([`critical_path`]), aggregation into the report tables ([`aggregate`],
//! [`model`]) and their layout ([`layout`]). [`LockAnalyzer`] runs the
//! three on a recording and keeps the events ([`LockEvents`]).

pub mod aggregate;
pub mod critical_path;
pub mod events;
pub mod layout;
pub mod model;
pub mod ownership;

use crate::analysis::{AnalysisOutput, Analyzer, Context};
use crate::recording::Recording;
use crate::symbols::{is_system_site, ResolvedSite, Resolver, Symbols};

pub use aggregate::{
    aggregate, aggregate_named, filters_matching_nothing, resolve_names, EventFilter, Names,
};
pub use critical_path::{mark_critical_path, CriticalPath};
pub use events::{
    pair_operations, CountedAcquisitions, EventSet, LockEvent, OpSource, Outcome, ThreadInput,
    TimeMap, WakeCost,
};
pub use model::{
    CriticalPathSummary, HistogramBucket, LightNote, LockReport, LockRow, LockSummary, SiteRow,
    ThreadRow, WaitKindRow,
};
pub use ownership::ownership_changes;

/// The lock analysis of a recording (registered in
/// [`crate::analysis::ANALYZERS`]): every recording gets a lock section,
/// which explains itself when there are no lock events.
pub struct LockAnalyzer;

/// What the lock analysis keeps per event, for exporters: the paired
/// events of every traced thread, their critical-path marks, and the names
/// of their objects and call sites.
#[derive(Debug)]
pub struct LockEvents {
    /// Every lock event, condition, barrier and semaphore wait, in thread
    /// order ([`EventSet`]).
    pub set: EventSet,
    /// The critical path over all events.
    pub critical_path: CriticalPath,
    /// Object and site names, by index into `set.objects` / `set.sites`.
    pub names: Names,
}

/// Resolves objects and sites of the lock-traced processes of a recording
/// (by process index) through the shared [`Symbols`].
pub struct ProcessResolver<'a> {
    recording: &'a Recording,
    symbols: &'a Symbols,
}

impl<'a> ProcessResolver<'a> {
    /// A resolver over the maps snapshots of `recording`.
    pub fn new(recording: &'a Recording, symbols: &'a Symbols) -> Self {
        ProcessResolver { recording, symbols }
    }
}

impl Resolver for ProcessResolver<'_> {
    fn site(&mut self, process: u32, address: u64) -> ResolvedSite {
        self.symbols
            .site(self.recording.process_maps(process), address)
    }

    fn object(&mut self, process: u32, address: u64) -> Option<String> {
        self.symbols
            .object(self.recording.process_maps(process), address)
    }
}

impl Analyzer for LockAnalyzer {
    fn name(&self) -> &'static str {
        "locks"
    }

    /// Converts ticks to ns and pairs each thread's operations (in
    /// parallel over threads), marks the critical path over all events,
    /// resolves objects and sites, aggregates the selected events.
    fn analyze(&self, cx: &Context<'_>) -> Option<AnalysisOutput> {
        let recording = cx.recording;
        let progress = cx.progress;
        let ops: u64 = recording
            .processes
            .iter()
            .map(|p| p.trace.op_count() as u64)
            .sum();
        progress.stage("pairing lock operations", ops);
        let inputs: Vec<ThreadInput<'_>> = recording
            .processes
            .iter()
            .enumerate()
            .flat_map(|(pi, p)| {
                let clock = if p.trace.clock == contend_trace::format::CLOCK_MONOTONIC {
                    TimeMap::Identity
                } else {
                    TimeMap::Fit(recording.clock)
                };
                p.trace.threads.iter().map(move |t| ThreadInput {
                    process: pi as u32,
                    pid: p.trace.pid,
                    tid: t.tid,
                    ops: OpSource::Trace(&p.trace, t),
                    clock,
                })
            })
            .collect();
        let mut set = pair_operations(&inputs);
        progress.advance(ops);
        let mut resolver = ProcessResolver::new(recording, cx.symbols);
        attribute_sites_through_stacks(&mut set, recording, &mut resolver);
        progress.stage("marking the critical path", 1);
        let path = mark_critical_path(&set);
        progress.advance(1);
        progress.stage("resolving call sites", 1);
        let span = event_span(&set);
        let program_ns = recording.wall_ns().unwrap_or(match span {
            Some((a, b)) if b > a => b - a,
            _ => 0,
        });
        let names = resolve_names(&set, &mut resolver);
        let mut locks = aggregate_named(&set, &path, &names, &cx.options.locks, program_ns);
        progress.advance(1);
        if set.events.is_empty() {
            locks.no_events_reason = Some(no_events_reason(recording));
        }
        let mut warnings = filters_matching_nothing(&set, &names, &cx.options.locks);
        if locks.summary.unmatched_releases > 0 {
            warnings.push(format!(
                "{} release(s) had no acquisition in the same thread (locks taken before recording began, or a mutex unlocked by another thread)",
                locks.summary.unmatched_releases
            ));
        }
        if locks.summary.unreleased_events > 0 {
            warnings.push(format!(
                "{} lock(s) were still held when their thread's trace ended; their hold time runs to the thread's last recorded operation",
                locks.summary.unreleased_events
            ));
        }
        Some(AnalysisOutput {
            section: Some(Box::new(locks)),
            warnings,
            events: Some(Box::new(LockEvents {
                set,
                critical_path: path,
                names,
            })),
            span_ns: span,
        })
    }
}

/// First and last instant of the recorded operations, ns (threads whose
/// first operation has time 0 are left out of the start).
fn event_span(set: &EventSet) -> Option<(u64, u64)> {
    let first = set
        .threads
        .iter()
        .map(|t| t.first_ns)
        .filter(|&t| t > 0)
        .min()?;
    let last = set.threads.iter().map(|t| t.last_ns).max()?;
    Some((first, last))
}

/// Moves events whose call site is in system code to the first caller in
/// the user's code, using the call stacks recorded with `--stack-every N`.
///
/// A program built without optimisation calls `pthread_mutex_lock` from an
/// out-of-line `__gthread_mutex_lock` in a libstdc++ header, so every
/// `std::mutex` user shares that one site; the stack (return addresses,
/// innermost first, the site itself first) names the real caller. Only
/// events that carry a stack move; the others keep the system site.
pub fn attribute_sites_through_stacks(
    set: &mut EventSet,
    recording: &Recording,
    resolver: &mut dyn Resolver,
) {
    if !set.events.iter().any(|e| e.stack_index().is_some()) {
        return;
    }
    let system: Vec<bool> = set
        .sites
        .iter()
        .map(|k| is_system_site(&resolver.site(k.process, k.address)))
        .collect();
    let mut site_index: std::collections::HashMap<events::SiteKey, u32> = set
        .sites
        .iter()
        .enumerate()
        .map(|(i, k)| (*k, i as u32))
        .collect();
    // (process, stack) → user site index, or u32::MAX when none is found.
    let mut moved: std::collections::HashMap<(u32, u32), u32> = Default::default();
    for i in 0..set.events.len() {
        let e = set.events[i];
        let Some(stack) = e.stack_index() else {
            continue;
        };
        if !system[e.site as usize] {
            continue;
        }
        let process = set.threads[e.thread as usize].process;
        let target = *moved.entry((process, stack)).or_insert_with(|| {
            let frames = recording
                .processes
                .get(process as usize)
                .and_then(|p| p.trace.stacks.get(stack as usize));
            let Some(frames) = frames else {
                return u32::MAX;
            };
            for &address in frames.iter().skip(1) {
                if is_system_site(&resolver.site(process, address)) {
                    continue;
                }
                let key = events::SiteKey { process, address };
                return *site_index.entry(key).or_insert_with(|| {
                    set.sites.push(key);
                    (set.sites.len() - 1) as u32
                });
            }
            u32::MAX
        });
        if target != u32::MAX {
            set.events[i].site = target;
        }
    }
}

/// Explains an empty recording instead of reporting zero contention.
fn no_events_reason(recording: &Recording) -> String {
    if recording.processes.is_empty() {
        if let Some(Ok(mpi)) = &recording.mpi {
            return format!(
                "No lock trace was recorded; this recording holds the MPI traces of {} rank(s), analysed in the MPI sections.",
                mpi.ranks.len()
            );
        }
    }
    if let Some(a) = recording.meta.as_ref().and_then(|m| m.attach.as_ref()) {
        return a.no_lock_tracing_reason.clone();
    }
    if recording.processes.is_empty() {
        let mut s =
            String::from("No lock trace was written, so no lock operation could be observed. ");
        s.push_str(
            "Likely causes: the program is statically linked or setuid (the loader ignores LD_PRELOAD), \
             it cleared LD_PRELOAD before starting its workers, or it exited before taking any lock.",
        );
        return s;
    }
    if recording
        .processes
        .iter()
        .any(|p| p.trace.threads.iter().any(|t| !t.futex.is_empty()))
    {
        return "No pthread lock operation was recorded; the program's futex waits and wakes \
                (syscall(SYS_futex): Rust's std::sync, hand-written locks) are in the futex section."
            .to_string();
    }
    "No lock operation was recorded although the collector was loaded. \
     The program may not use pthread locks: it may use raw futexes, its own spinlocks or atomics, \
     or a runtime with its own mutexes (Go, some JVM and OpenMP runtimes), or it ran single-threaded \
     without taking locks. This is not evidence of zero contention."
        .to_string()
}
