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
//! per pattern, rank and call site ([`report`]); [`add_mpi_to_report`] puts
//! the result into a [`Report`]. The exact definitions, in terms of the
//! enter and exit timestamps of the calls, are in `docs/mpi-wait-states.md`.

pub mod analysis;
pub mod report;

use std::path::Path;

use contend_trace::mpi::MpiRecording;

pub use analysis::{analyze, comm_name, MatchStats, Message, MpiAnalysis, Pattern, WaitState};
pub use report::{
    build_report, MapsSiteResolver, MpiClassSummary, MpiOptions, MpiPatternSummary, MpiRankRow,
    MpiReport, MpiSiteRow, MpiThresholds, RankNs, SiteResolver,
};

use crate::report::model::Report;

/// Analyses `mpi` and adds the result to `report`: sets `report.mpi` and
/// appends the analysis's warnings (each prefixed `MPI: `) to
/// `report.warnings`. When the recording has no lock traces at all, the
/// lock section's "no events" reason says that this is an MPI recording
/// rather than suggesting a failed preload.
pub fn add_mpi_to_report(
    mpi: &MpiRecording,
    report: &mut Report,
    opts: &MpiOptions,
    resolver: &mut dyn SiteResolver,
) {
    let analysis = analyze(mpi);
    let r = build_report(mpi, &analysis, opts, resolver);
    report
        .warnings
        .extend(analysis.warnings.iter().map(|w| format!("MPI: {w}")));
    if report.run.processes == 0 && report.locks.summary.events == 0 {
        report.locks.no_events_reason = Some(format!(
            "No lock trace was recorded; this recording holds the MPI traces of {} rank(s), analysed in the MPI sections.",
            r.ranks_traced
        ));
    }
    report.mpi = Some(r);
}

/// Reads `<dir>/mpi/` with the MPI trace reader and, when it holds traces,
/// adds the wait-state analysis to `report` ([`add_mpi_to_report`]), call
/// sites resolved through `<dir>/maps/<pid>.maps`. A recording without an
/// `mpi/` directory leaves `report` unchanged; an `mpi/` directory that
/// cannot be read becomes a warning naming it.
pub fn add_to_report(dir: &Path, report: &mut Report, opts: &MpiOptions) {
    match contend_trace::read_mpi_recording(dir) {
        Ok(None) => {}
        Ok(Some(mpi)) => {
            let mut resolver = MapsSiteResolver::new(dir, contend_symbolize::Symbolizer::new());
            add_mpi_to_report(&mpi, report, opts, &mut resolver);
            report
                .warnings
                .extend(resolver.warnings.iter().map(|w| format!("MPI: {w}")));
        }
        Err(e) => report.warnings.push(format!("MPI: {e}; no MPI analysis")),
    }
}
