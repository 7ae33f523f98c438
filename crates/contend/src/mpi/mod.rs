//! MPI wait-state analysis (the thesis's message-passing tool, Venter 2016,
//! Sections 3.1.2.2, 3.2.2.3 and 4.3.2, Listing 3.6, Tables 4.13–4.18),
//! with the pattern definitions of Geimer et al. (Parallel Computing 2009)
//! as Scalasca's analyser uses them, extended where it stops: the `v`/`w`
//! collectives are analysed, and unmatched messages, missing ranks and
//! aborted ranks are reported instead of blocking the analysis.
//!
//! Pipeline: the MPI trace reader (`contend_trace::mpi`) gives one
//! [`MpiRecording`]; [`analyze`] matches point-to-point messages and
//! collective instances and finds every wait state with the rank that
//! caused it ([`analysis`]); [`build_report`] applies the thresholds and sums
//! per pattern, rank and call site ([`report`]); [`layout`] draws it;
//! [`MpiAnalyzer`] runs it all on a recording. The exact definitions, in terms of the
//! enter and exit timestamps of the calls, are in `docs/mpi-wait-states.md`.

pub mod analysis;
pub mod critical_path;
pub mod delay;
pub mod figures;
pub mod hybrid;
pub mod layout;
pub mod panels;
pub mod report;
pub mod statistics;
pub mod timeline;

use contend_trace::mpi::MpiRecording;

pub use analysis::{
    analyze, comm_name, CollectiveInstance, MatchStats, Message, MpiAnalysis, Pattern, WaitState,
};
pub use critical_path::{critical_path, CriticalPathAnalysis, MpiCriticalPathReport};
pub use delay::{delay_analysis, DelayAnalysis, MpiDelayReport, MpiRegionName};
pub use report::{
    build_report, build_report_with, site_matches, MapsSiteResolver, MpiClassSummary, MpiOptions,
    MpiPasses, MpiPatternSummary, MpiRankRow, MpiReport, MpiSiteRow, MpiThresholds, RankNs,
    SiteResolver,
};
pub use timeline::{Region, SiteTable, Timeline};

use crate::analysis::{AnalysisOutput, Analyzer, Context};

/// The MPI wait-state analysis of a recording (registered in
/// [`crate::analysis::ANALYZERS`]): absent without `mpi/`; an `mpi/` that
/// cannot be read is a warning. Its warnings are prefixed `MPI: `.
pub struct MpiAnalyzer;

/// What the MPI analysis keeps per event, for exporters: the matched
/// messages and collectives and every wait state with the rank that caused
/// it (the events themselves are in [`crate::recording::Recording::mpi`]).
#[derive(Debug)]
pub struct MpiEvents {
    /// Matches and wait states ([`MpiAnalysis`]), indexed like the
    /// recording's rank traces.
    pub analysis: MpiAnalysis,
    /// The call sites, the delay analysis (root cause of every counted
    /// wait state) and the critical path across ranks.
    pub passes: MpiPasses,
}

impl Analyzer for MpiAnalyzer {
    fn name(&self) -> &'static str {
        "MPI"
    }

    fn analyze(&self, cx: &Context<'_>) -> Option<AnalysisOutput> {
        let mpi: &MpiRecording = match cx.recording.mpi.as_ref()? {
            Ok(m) => m,
            Err(e) => {
                return Some(AnalysisOutput {
                    section: None,
                    warnings: vec![format!("MPI: {e}; no MPI analysis")],
                    events: None,
                    span_ns: None,
                })
            }
        };
        cx.progress.stage("analysing MPI wait states", 1);
        let analysis = analyze(mpi);
        let mut resolver = MapsSiteResolver::new(cx.recording, cx.symbols);
        let (report, passes) = build_report_with(
            mpi,
            &analysis,
            &cx.options.mpi,
            &mut resolver,
            cx.options.locks.site_pattern.as_ref(),
        );
        let mut report = report;
        if let Some(locks) = cx.earlier::<crate::locks::LockEvents>() {
            // the time lines again (the report's are gone with its memory)
            let tl = timeline::Timeline::new(mpi, &analysis, &passes.sites, &cx.options.mpi);
            report.critical_path.locks = hybrid::locks_on_path(
                mpi,
                &tl,
                &passes.critical_path,
                locks,
                report.critical_path.length_ns,
            );
        }
        let mut warnings: Vec<String> = analysis
            .warnings
            .iter()
            .map(|w| format!("MPI: {w}"))
            .collect();
        warnings.extend(resolver.warnings.iter().map(|w| format!("MPI: {w}")));
        cx.progress.advance(1);
        Some(AnalysisOutput {
            section: Some(Box::new(report)),
            warnings,
            events: Some(Box::new(MpiEvents { analysis, passes })),
            span_ns: None,
        })
    }
}
