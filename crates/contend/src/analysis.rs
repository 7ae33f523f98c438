//! The one way through a recording: [`analyze`] runs every registered
//! [`Analyzer`] on a [`Recording`], assembles the [`Report`] from the
//! sections they return, and keeps what they computed per event (paired
//! lock events with their critical-path marks, MPI matches and wait
//! states) in the [`Analysis`] for exporters.
//!
//! An analysis is a module with a unit struct implementing [`Analyzer`]:
//! it reads the parts of the recording it needs, knows nothing of the
//! other analyses or of output formats, and returns an [`AnalysisOutput`]: its
//! [`ReportSection`] (the aggregated tables, serialised under the
//! section's JSON key), its warnings, and optionally its per-event results.
//! Adding one is its module plus one line in [`ANALYZERS`]
//! (docs/architecture.md shows an example).

use std::any::Any;

use crate::locks::EventFilter;
use crate::mpi::MpiOptions;
use crate::recording::Recording;
use crate::report::model::RunInfo;
use crate::report::{Report, ReportSection};
use crate::symbols::Symbols;

/// Every analysis of a recording, in the order they run and their sections
/// appear in JSON. The one place an analysis is registered.
pub static ANALYZERS: &[&dyn Analyzer] = &[
    &crate::locks::LockAnalyzer,
    &crate::service::ServiceAnalyzer,
    &crate::counters::CountersAnalyzer,
    &crate::mpi::MpiAnalyzer,
    &crate::numa::NumaAnalyzer,
    &crate::sci::SciAnalyzer,
    &crate::futex::FutexAnalyzer,
    &crate::openmp::OpenMpAnalyzer,
    &crate::recording_cost::RecordingCostAnalyzer,
    &crate::meters::MetersAnalyzer,
];

/// What the analyses are asked to do; built by the binary from flags and
/// `contend.toml` ([`crate::config`]).
#[derive(Debug, Clone, Default)]
pub struct AnalysisOptions {
    /// Which lock events enter the lock tables (`--min-duration`,
    /// `--lock`, `--site`, `--thread`, `--critical-only`, `--from/--to`).
    pub locks: EventFilter,
    /// Thresholds of the MPI wait states (`--threshold-p2p`,
    /// `--threshold-collective`).
    pub mpi: MpiOptions,
    /// The latency table and the form of Eq. 9 of the NUMA section
    /// (`--numa-latency`, `--numa-variant`).
    pub numa: crate::numa::NumaOptions,
}

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

/// What every analysis gets: the recording, the options, the shared
/// symbolizer and the progress display.
pub struct Context<'a> {
    /// The recording, read once.
    pub recording: &'a Recording,
    /// The options.
    pub options: &'a AnalysisOptions,
    /// Names for addresses, shared by all analyses of the recording.
    pub symbols: &'a Symbols,
    /// Where long stages report progress.
    pub progress: &'a dyn Progress,
    /// The per-event results of the analyses that ran before this one (in
    /// [`ANALYZERS`] order), for an analysis that relates its results to
    /// theirs (the MPI critical path to the lock critical path of hybrid
    /// runs); see [`Context::earlier`].
    pub earlier: &'a [Box<dyn Any + Send + Sync>],
}

impl Context<'_> {
    /// The per-event results of type `T` of an analysis that ran before
    /// this one, if it ran and kept some.
    pub fn earlier<T: Any>(&self) -> Option<&T> {
        self.earlier.iter().find_map(|e| e.downcast_ref::<T>())
    }
}

/// One analysis of a recording (the locks, the service time, the MPI wait
/// states …). Implemented by a unit struct of the analysis's module and
/// registered in [`ANALYZERS`].
pub trait Analyzer: Sync {
    /// Short name, for messages (`locks`, `service time`, `MPI`).
    fn name(&self) -> &'static str;
    /// Analyses `cx.recording`. `None` when the recording holds nothing
    /// this analysis reads (no service samples, no MPI traces): its
    /// section is then absent from the report. Never fails: problems of
    /// the recording become warnings of the outcome.
    fn analyze(&self, cx: &Context<'_>) -> Option<AnalysisOutput>;
}

/// What one analysis returns.
pub struct AnalysisOutput {
    /// Its section of the report; `None` when it found nothing to report
    /// but warnings (a sample file without samples).
    pub section: Option<Box<dyn ReportSection>>,
    /// Problems it found, one sentence each, in the order found.
    pub warnings: Vec<String>,
    /// Its per-event results for exporters (its own type, found again with
    /// [`Analysis::events`]), when it has any.
    pub events: Option<Box<dyn Any + Send + Sync>>,
    /// First and last instant of the events it saw, CLOCK_MONOTONIC ns:
    /// the run's duration when `meta.json` does not give it.
    pub span_ns: Option<(u64, u64)>,
}

impl AnalysisOutput {
    /// An outcome with a section and nothing else.
    pub fn new(section: impl ReportSection) -> AnalysisOutput {
        AnalysisOutput {
            section: Some(Box::new(section)),
            warnings: Vec::new(),
            events: None,
            span_ns: None,
        }
    }
}

/// A recording analysed: the report, and what the analyses computed per
/// event.
pub struct Analysis<'r> {
    /// The recording analysed.
    pub recording: &'r Recording,
    /// The aggregated report (what table formats render and JSON holds).
    pub report: Report,
    /// The symbolizer the analyses used, with its caches, for exporters
    /// that resolve further addresses (call stacks).
    pub symbols: Symbols,
    /// Per-event results of the analyses that keep them.
    events: Vec<Box<dyn Any + Send + Sync>>,
}

impl Analysis<'_> {
    /// The per-event results of type `T` (e.g. `crate::locks::LockEvents`),
    /// when the analysis that makes them ran and kept some.
    pub fn events<T: Any>(&self) -> Option<&T> {
        self.events.iter().find_map(|e| e.downcast_ref::<T>())
    }

    /// The report alone, dropping the per-event results.
    pub fn into_report(self) -> Report {
        self.report
    }
}

/// Runs every analysis of [`ANALYZERS`] on `recording` and assembles the
/// report: the run header from `meta.json` (or the traces), the warnings of
/// the recording and then of each analysis in order, one section per
/// analysis that found something to analyse.
pub fn analyze<'r>(
    recording: &'r Recording,
    options: &AnalysisOptions,
    progress: &dyn Progress,
) -> Analysis<'r> {
    analyze_with(recording, options, Symbols::new(), progress)
}

/// [`analyze`] with the given symbolizer (for example
/// [`Symbols::unresolved`] when only totals are needed).
pub fn analyze_with<'r>(
    recording: &'r Recording,
    options: &AnalysisOptions,
    symbols: Symbols,
    progress: &dyn Progress,
) -> Analysis<'r> {
    analyze_using(recording, options, symbols, ANALYZERS, progress)
}

/// [`analyze_with`] running the given analyses instead of [`ANALYZERS`]
/// (tools and tests that add an analysis of their own, or run a subset).
pub fn analyze_using<'r>(
    recording: &'r Recording,
    options: &AnalysisOptions,
    symbols: Symbols,
    analyzers: &[&dyn Analyzer],
    progress: &dyn Progress,
) -> Analysis<'r> {
    if let Some(modules) = &recording.modules {
        symbols.use_recorded_modules(modules);
    }
    let mut events: Vec<Box<dyn Any + Send + Sync>> = Vec::new();
    let mut outcomes: Vec<AnalysisOutput> = Vec::new();
    for a in analyzers {
        let cx = Context {
            recording,
            options,
            symbols: &symbols,
            progress,
            earlier: &events,
        };
        if let Some(mut o) = a.analyze(&cx) {
            events.extend(o.events.take());
            outcomes.push(o);
        }
        // The next analysis's peak without this one's debug information.
        symbols.release_debug_info();
    }
    let span = outcomes
        .iter()
        .filter_map(|o| o.span_ns)
        .reduce(|a, b| (a.0.min(b.0), a.1.max(b.1)));
    let mut report = Report::new(run_info(recording, span));
    report.warnings = recording.warnings.clone();
    for o in outcomes {
        report.warnings.extend(o.warnings);
        if let Some(section) = o.section {
            report.push(section);
        }
    }
    report.warnings.extend(symbols.module_warnings());
    // One name per OpenMP lock across the sections.
    crate::locks::name_hand_overs_by_sections(&mut report);
    Analysis {
        recording,
        report,
        symbols,
        events,
    }
}

/// Sets the C library allocator's policy for analysing large recordings;
/// call once at start-up, before other threads allocate. glibc only
/// (elsewhere it does nothing): blocks of 128 KiB and more are always
/// mapped on their own and unmapped when freed (`M_MMAP_THRESHOLD` set to
/// its default, which also turns off glibc's raising of that threshold to
/// the size of the largest block freed so far). Otherwise a stage's large
/// transient arrays, once freed, stay resident in the free lists of the
/// worker threads' arenas, in the peak of every stage after it: the report
/// of the 10-million-event synthetic recording peaked at 397 MB instead of
/// 381 MB, memcached's (3.1 million events) at 183 MB instead of 173 MB
/// (docs/benchmarks.md, "Merges without branches, large blocks unmapped,
/// zero SCI durations counted").
pub fn configure_allocator() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt changes a tunable of the allocator; a refusal
    // (return 0) leaves the default policy, which is only slower to give
    // memory back.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 128 * 1024);
    }
}

/// Faults in, on both cores, the pages of a large array about to be
/// written all over (`array`: its elements, or its uninitialised capacity
/// as `MaybeUninit`s), with
/// `MADV_POPULATE_WRITE` (Linux 5.14) over each half: the kernel then
/// makes every page present in one call instead of one page fault (a trap
/// into the kernel and back) per 4 KiB first written. The memory is the
/// same (every page is written anyway). On the 10-million-event synthetic
/// recording the pairing stage, which fills the 320 MB event array, went
/// from 0.376 to 0.353 s (docs/benchmarks.md, "Event array faulted in by
/// the kernel"). Does nothing for arrays under 1 MiB, on other systems or
/// kernels that refuse the advice (the pages then fault as they are
/// written).
pub(crate) fn populate_for_write<T>(array: &mut [T]) {
    #[cfg(target_os = "linux")]
    {
        const PAGE: usize = 4096;
        const MADV_POPULATE_WRITE: libc::c_int = 23;
        let len = std::mem::size_of_val(array);
        if len < 1 << 20 {
            return;
        }
        let base = array.as_mut_ptr() as usize;
        let start = base.div_ceil(PAGE) * PAGE;
        let end = (base + len) / PAGE * PAGE;
        let mid = start + (end - start) / 2 / PAGE * PAGE;
        let populate = |from: usize, to: usize| {
            // SAFETY: [from, to) lies inside `array`, memory this process
            // owns and has not handed out; populating it changes no
            // contents (fresh pages read as zeros, present ones are left
            // as they are). A refusal (EINVAL on an older kernel) is fine.
            unsafe {
                libc::madvise(from as *mut libc::c_void, to - from, MADV_POPULATE_WRITE);
            }
        };
        rayon::join(|| populate(start, mid), || populate(mid, end));
    }
}

/// Facts about the run, from `meta.json` where present, else the traces;
/// `span` (first and last event, ns) gives the wall time when `meta.json`
/// does not.
pub fn run_info(recording: &Recording, span: Option<(u64, u64)>) -> RunInfo {
    let span = match span {
        Some((a, b)) if b > a => b - a,
        _ => 0,
    };
    let mut info = RunInfo {
        recording: recording.dir.display().to_string(),
        processes: recording.processes.len() as u32,
        threads: recording
            .processes
            .iter()
            .map(|p| p.trace.threads.len() as u32)
            .sum(),
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
        info.limits = m.limits.as_ref().map(|l| {
            let after = |t: u64| t.saturating_sub(m.start_monotonic_ns);
            crate::report::RecordingLimits {
                start_after_ns: l.start_after_ns,
                duration_ns: l.duration_ns,
                window_start_ns: l.window_opened_ns.map(after),
                window_end_ns: l.window_closed_ns.map(after),
                max_bytes: l.max_bytes,
                capped_at_ns: l.capped_ns.map(after),
            }
        });
    } else if let Some(p) = recording.processes.first() {
        info.command = p.trace.cmdline.clone();
    }
    info
}

#[cfg(test)]
mod tests {
    use super::populate_for_write;

    /// Populating changes no contents: an array already written keeps its
    /// values, and fresh capacity is as writable as before (3 MiB, over the
    /// 1 MiB below which nothing is done; odd ends, not page-aligned).
    #[test]
    fn populating_keeps_what_is_written() {
        let n = 3 * (1 << 20) / 8 + 5;
        let mut written: Vec<u64> = (0..n as u64).map(|i| i.wrapping_mul(0x9e37_79b9)).collect();
        populate_for_write(&mut written[3..]);
        assert!(written
            .iter()
            .enumerate()
            .all(|(i, &v)| v == (i as u64).wrapping_mul(0x9e37_79b9)));
        let mut fresh: Vec<u64> = Vec::with_capacity(n);
        populate_for_write(&mut fresh.spare_capacity_mut()[..n]);
        fresh.extend((0..n as u64).rev());
        assert_eq!(fresh.len(), n);
        assert!(fresh.iter().rev().enumerate().all(|(i, &v)| v == i as u64));
    }
}
