//! Lock-contention analysis (the thesis's mutex tool, Venter 2016,
//! Sections 3.2.2.2 and 4.3.1): pairing of operations into lock events
//! ([`events`]), critical-path marking after Chen & Stenström
//! ([`critical_path`]), and aggregation into the report tables
//! ([`aggregate`]). [`analyze`] runs the three on a [`Recording`].

pub mod aggregate;
pub mod critical_path;
pub mod events;

use rayon::prelude::*;

use crate::recording::Recording;
use crate::report::model::{LockReport, Report, RunInfo};
use contend_symbolize::{DebugInfoSource, Symbolizer};

pub use aggregate::{EventFilter, ResolvedSite, Resolver};
pub use critical_path::{mark_critical_path, CriticalPath};
pub use events::{pair_operations, EventSet, LockEvent, OpSource, Outcome, ThreadInput, TimeMap};

/// Progress of a long analysis, for a progress bar. Calls come from one
/// thread. The default methods do nothing.
pub trait Progress {
    /// A new stage begins with `total` units of work.
    fn stage(&self, _name: &str, _total: u64) {}
    /// `n` more units are done.
    fn advance(&self, _n: u64) {}
}

/// A [`Progress`] that ignores everything.
pub struct NoProgress;
impl Progress for NoProgress {}

/// Resolves objects and sites of a recording with the DWARF symbolizer.
pub struct RecordingResolver<'a> {
    recording: &'a Recording,
    symbolizer: Symbolizer,
}

impl<'a> RecordingResolver<'a> {
    /// A resolver over the maps snapshots of `recording`.
    pub fn new(recording: &'a Recording, symbolizer: Symbolizer) -> Self {
        RecordingResolver {
            recording,
            symbolizer,
        }
    }
}

/// Resolves the call-site address `address` through a process's memory
/// `maps` (`None`: no maps known, the site is shown as the bare address)
/// and attributes it to the user's frame ([`attribute_to_user_frame`]).
/// Shared by the lock analysis and the MPI call sites.
pub fn resolve_site(
    symbolizer: &mut Symbolizer,
    maps: Option<&contend_symbolize::ProcessMaps>,
    address: u64,
) -> ResolvedSite {
    let Some(maps) = maps else {
        return ResolvedSite {
            offset: address,
            debug: "none",
            display: format!("{address:#x}"),
            ..ResolvedSite::default()
        };
    };
    let mut loc = symbolizer.resolve_code(maps, address);
    attribute_to_user_frame(&mut loc);
    ResolvedSite {
        display: loc.display_short(),
        function: loc.function,
        file: loc.file,
        line: loc.line,
        module: loc.module,
        offset: loc.module_offset,
        debug: match loc.debug {
            DebugInfoSource::Dwarf => "dwarf",
            DebugInfoSource::SymbolTable => "symbols",
            DebugInfoSource::None => "none",
        },
    }
}

impl Resolver for RecordingResolver<'_> {
    fn site(&mut self, process: u32, address: u64) -> ResolvedSite {
        let maps = self
            .recording
            .processes
            .get(process as usize)
            .and_then(|p| p.maps.as_ref());
        resolve_site(&mut self.symbolizer, maps, address)
    }

    fn object(&mut self, process: u32, address: u64) -> Option<String> {
        let maps = self
            .recording
            .processes
            .get(process as usize)?
            .maps
            .as_ref()?;
        self.symbolizer
            .resolve_data(maps, address)
            .map(|d| d.display_short())
    }
}

/// True for source files of the compiler's and the C library's headers
/// (`/usr/include/…`, `/usr/lib/gcc/…`, libstdc++'s `c++/` tree).
pub fn is_system_header(file: &str) -> bool {
    file.starts_with("/usr/include/")
        || file.starts_with("/usr/lib/gcc/")
        || file.starts_with("/usr/lib/llvm")
        || file.contains("/include/c++/")
}

/// Moves a call site that lies in code inlined from a system header (a
/// `std::lock_guard` → `std::mutex::lock` → `__gthread_mutex_lock` chain)
/// to the outermost inlining frame in the user's code, so the site is the
/// line the user wrote. Sites outside system headers are left alone.
pub fn attribute_to_user_frame(loc: &mut contend_symbolize::CodeLocation) {
    if !loc.file.as_deref().is_some_and(is_system_header) {
        return;
    }
    if let Some(k) = loc
        .inlined_into
        .iter()
        .position(|f| f.file.as_deref().is_some_and(|f| !is_system_header(f)))
    {
        let frame = loc.inlined_into[k].clone();
        loc.function = frame.function;
        loc.file = frame.file;
        loc.line = frame.line;
        loc.column = frame.column;
        loc.function_offset = None;
        loc.inlined_into.drain(..=k);
    }
}

/// True when a resolved call site is not the user's code: a system header
/// (code inlined or instantiated from libstdc++ or glibc headers), or a
/// system library without line information (`libstdc++.so`'s
/// `std::condition_variable::wait` calling `pthread_cond_wait`).
fn is_system_site(site: &ResolvedSite) -> bool {
    match (&site.file, &site.module) {
        (Some(f), _) => is_system_header(f),
        (None, Some(m)) => m.starts_with("/usr/lib/") || m.starts_with("/lib/"),
        (None, None) => false,
    }
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

/// Analyses the lock traces of `recording` into a report.
///
/// Steps: convert ticks to ns and pair each thread's operations (in
/// parallel over processes), mark the critical path over all events,
/// resolve objects and sites, aggregate the selected events. Never fails:
/// problems of the recording are carried into `Report::warnings`.
pub fn analyze(
    recording: &Recording,
    filter: &EventFilter,
    resolver: &mut dyn Resolver,
    progress: &dyn Progress,
) -> Report {
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
    attribute_sites_through_stacks(&mut set, recording, resolver);
    progress.stage("marking the critical path", 1);
    let path = mark_critical_path(&set);
    progress.advance(1);
    progress.stage("resolving call sites", 1);

    let run = run_info(recording, &set);
    let mut locks: LockReport = aggregate::aggregate(&set, &path, filter, resolver, run.wall_ns);
    progress.advance(1);
    if set.events.is_empty() {
        locks.no_events_reason = Some(no_events_reason(recording));
    }
    let mut warnings = recording.warnings.clone();
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
    Report {
        run,
        locks,
        warnings,
        service: None,
        counters: None,
        speedup: None,
        mpi: None,
    }
}

/// Facts about the run, from `meta.json` where present, else the traces.
fn run_info(recording: &Recording, set: &EventSet) -> RunInfo {
    let first = set
        .threads
        .iter()
        .map(|t| t.first_ns)
        .filter(|&t| t > 0)
        .min();
    let last = set.threads.iter().map(|t| t.last_ns).max();
    let span = match (first, last) {
        (Some(a), Some(b)) if b > a => b - a,
        _ => 0,
    };
    let mut info = RunInfo {
        recording: recording.dir.display().to_string(),
        processes: recording.processes.len() as u32,
        threads: set.threads.len() as u32,
        wall_ns: span,
        ..RunInfo::default()
    };
    if let Some(m) = &recording.meta {
        info.command = m.command.clone();
        info.exit_code = m.exit_code;
        info.signal = m.signal;
        info.wall_ns = m.wall_ns.unwrap_or(span);
        info.host = m.host.clone();
        info.cpu_model = m.cpu_model.clone();
        info.cpus = m.cpus;
        info.start_utc = m.start_utc.clone();
        info.tool_version = m.tool_version.clone();
    } else if let Some(p) = recording.processes.first() {
        info.command = p.trace.cmdline.clone();
    }
    info
}

/// Explains an empty recording instead of reporting zero contention.
fn no_events_reason(recording: &Recording) -> String {
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
    "No lock operation was recorded although the collector was loaded. \
     The program may not use pthread locks: it may use raw futexes, its own spinlocks or atomics, \
     or a runtime with its own mutexes (Go, some JVM and OpenMP runtimes), or it ran single-threaded \
     without taking locks. This is not evidence of zero contention."
        .to_string()
}

/// Analyses `recording` with the default symbolizer and no progress bar.
pub fn analyze_default(recording: &Recording, filter: &EventFilter) -> Report {
    let mut resolver = RecordingResolver::new(recording, Symbolizer::new());
    analyze(recording, filter, &mut resolver, &NoProgress)
}

/// Number of operations in a recording (to decide whether to show progress).
pub fn operation_count(recording: &Recording) -> u64 {
    recording
        .processes
        .par_iter()
        .map(|p| p.trace.op_count() as u64)
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use contend_symbolize::{CodeLocation, InlinedFrame};

    fn frame(function: &str, file: &str, line: u32) -> InlinedFrame {
        InlinedFrame {
            function: Some(function.into()),
            file: Some(file.into()),
            line: Some(line),
            column: None,
        }
    }

    #[test]
    fn std_mutex_site_moves_to_the_users_line() {
        let mut loc = CodeLocation::bare(0x1234, Some("/bin/app".into()), 0x234);
        loc.function = Some("__gthread_mutex_lock".into());
        loc.file = Some("/usr/include/x86_64-linux-gnu/c++/12/bits/gthr-default.h".into());
        loc.line = Some(749);
        loc.inlined_into = vec![
            frame(
                "std::mutex::lock",
                "/usr/include/c++/12/bits/std_mutex.h",
                100,
            ),
            frame("worker", "/src/app.cpp", 42),
            frame("main", "/src/app.cpp", 80),
        ];
        attribute_to_user_frame(&mut loc);
        assert_eq!(loc.function.as_deref(), Some("worker"));
        assert_eq!(loc.file.as_deref(), Some("/src/app.cpp"));
        assert_eq!(loc.line, Some(42));
        assert_eq!(loc.inlined_into.len(), 1);
        // A user site is left alone.
        let before = loc.clone();
        attribute_to_user_frame(&mut loc);
        assert_eq!(loc, before);
    }
}
