//! Memory contention on NUMA machines after D. S. Nikolopoulos,
//! "Quantifying Contention and Balancing Memory Load on Hardware DSM
//! Multiprocessors": how much execution time a program loses to contention
//! at memory modules, where, and which pages to move.
//!
//! - [`model`]: Eq. 1–13 (per node: μ_i, p_i(m), p_r, p_lr, p_cont, the
//!   expected local and remote latencies l_i and r_ki, the added latency;
//!   the time lost, Eq. 13, and its bottleneck node), with the sums of
//!   Eq. 8–9 as elementary symmetric sums ([`symmetric`], O(N²));
//! - [`whatif`]: Eq. 14 generalised: the time under another placement
//!   (every page on one node, interleaved, after a migration plan);
//! - [`balance`]: the page-migration algorithm (Section 3.2, Figure 8);
//! - [`input`]: histograms from CSV files or from a recording's samples;
//! - [`report`]: the section (`numa` in JSON) built by [`report::analyse`];
//!   `layout`: its tables.
//!
//! [`NumaAnalyzer`] adds the section to `contend report` for recordings
//! made with `contend record --numa`; `contend numa estimate` and `contend
//! numa balance` apply the same code to files ([`NumaDocument`]). The
//! latencies come from `contend numa calibrate` (crate `contend-record`);
//! the formats are `contend_trace::numa`. docs/numa.md explains the model,
//! the formats and the decisions taken where the paper is ambiguous.

pub mod balance;
pub mod input;
mod layout;
pub mod model;
pub mod report;
pub mod symmetric;
pub mod whatif;

use serde::Serialize;

use crate::analysis::{AnalysisOutput, Analyzer, Context};
use crate::report::{Panel, RenderOptions};
use contend_trace::numa::LatencyTable;

pub use input::NumaInput;
pub use model::{estimate, Estimate, Histogram, ModelError, Variant};
pub use report::{analyse, NumaReport, NumaRequest};
pub use whatif::WhatIfSpec;

/// What `contend report` needs for the NUMA section (`--numa-latency`,
/// `--numa-variant`).
#[derive(Debug, Clone, Default)]
pub struct NumaOptions {
    /// The latency table and its file name; `None`: the one stored in the
    /// recording (`numa/latency.json`), if any.
    pub latency: Option<(String, LatencyTable)>,
    /// The form of Eq. 9.
    pub variant: Variant,
}

/// The NUMA analysis of a recording made with `contend record --numa`.
pub struct NumaAnalyzer;

impl Analyzer for NumaAnalyzer {
    fn name(&self) -> &'static str {
        "NUMA"
    }

    fn analyze(&self, cx: &Context<'_>) -> Option<AnalysisOutput> {
        let part = cx.recording.numa.as_ref()?;
        let rec = match part {
            Ok(r) => r,
            Err(e) => {
                return Some(AnalysisOutput {
                    section: None,
                    warnings: vec![format!("{e}; the NUMA section is left out")],
                    events: None,
                    span_ns: None,
                })
            }
        };
        let mut warnings = Vec::new();
        let stored = match &rec.latency {
            Some(Ok(t)) => Some((
                "numa/latency.json (stored with the recording)".to_string(),
                t.clone(),
            )),
            Some(Err(e)) => {
                warnings.push(format!("{e}; the stored calibration is not used"));
                None
            }
            None => None,
        };
        let latency = cx.options.numa.latency.clone().or(stored);
        let name = cx.recording.dir.display().to_string();
        let input = match NumaInput::from_recording(
            &name,
            rec,
            latency.as_ref().map(|l| &l.1),
            cx.recording.wall_ns(),
        ) {
            Ok(i) => i,
            Err(e) => {
                warnings.push(format!("NUMA: {e}"));
                return Some(AnalysisOutput {
                    section: None,
                    warnings,
                    events: None,
                    span_ns: None,
                });
            }
        };
        let req = NumaRequest {
            latency: latency.as_ref().map(|(n, t)| (n.as_str(), t)),
            variant: cx.options.numa.variant,
            what_if: Vec::new(),
            plan: true,
        };
        match analyse(&input, &req) {
            Ok((section, w)) => {
                warnings.extend(w);
                let mut out = AnalysisOutput::new(section);
                out.warnings = warnings;
                Some(out)
            }
            Err(e) => {
                warnings.push(format!("NUMA: {e}"));
                Some(AnalysisOutput {
                    section: None,
                    warnings,
                    events: None,
                    span_ns: None,
                })
            }
        }
    }
}

/// The output of `contend numa estimate` and `contend numa balance`: the
/// section with the warnings found. JSON: `{"numa": {…}, "warnings": […]}`.
#[derive(Debug, Clone, Serialize)]
pub struct NumaDocument {
    /// The section.
    pub numa: NumaReport,
    /// Problems and guesses, one sentence each.
    pub warnings: Vec<String>,
}

impl NumaDocument {
    /// The panels the table formats draw: the warnings, then the section.
    pub fn panels(&self, opts: &RenderOptions) -> Vec<Panel> {
        let mut out = Vec::new();
        if !self.warnings.is_empty() {
            out.push(Panel::new(
                "warnings",
                "Warnings",
                "Problems found in the inputs.",
                crate::report::layout::Body::Warnings(self.warnings.clone()),
            ));
        }
        out.extend(layout::panels(&self.numa, opts));
        out
    }
}
