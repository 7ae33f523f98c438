//! Interference analysis: the SCI score (Slowdown Caused by Interference)
//! of blocks of code, after Mosli Bouksiaa et al., "Using differential
//! execution analysis to identify thread interference", IEEE TPDS 30(12),
//! 2019 (ISPOT).
//!
//! The fastest execution of a block is taken as (almost) free of
//! interference; every slower execution lost the difference to
//! interference of some kind (a lock, a cache line shared falsely, a
//! saturated disk, the scheduler). SCI(b, t) = Σ_j (d_j − d_min(b)) / T_t
//! ([`metric`], Section 2). Blocks come from three sources in one
//! recording ([`sources`]): the lock operations already recorded, the
//! manual regions of `contend/region.h`, and functions (uprobes with
//! `contend record --function`, or `-finstrument-functions` hooks with
//! `--instrumented-functions`). [`SciAnalyzer`] scores them into a
//! [`SciReport`] (JSON key `sci`); [`layout`] draws it. docs/sci.md has the
//! definitions and decisions.

pub mod layout;
pub mod metric;
pub mod sources;

use serde::Serialize;

use crate::analysis::{AnalysisOutput, Analyzer, Context};

pub use metric::{
    score, score_executions, score_executions_streamed, BlockDef, BlockKind, BlockSite,
    BlockThreadScore, DurationBucket, DurationHistogram, DurationSource, Execution, Quantile,
    Quantiles, SciBlock, SciThread, ScoreInput, StreamedLocks, ThreadDef, MIN_OCCURRENCES,
};
pub use sources::{gather, gather_with, FrameMatcher, Gathered, MatchCounts, NameMatcher};

/// The interference analysis (registered in [`crate::analysis::ANALYZERS`]).
pub struct SciAnalyzer;

/// Run-wide figures of the interference section (JSON `sci.summary`).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct SciSummary {
    /// Rows (block and key) with at least one execution or an unfinished one.
    pub blocks: u64,
    /// Rows with a score (at least [`MIN_OCCURRENCES`] executions).
    pub scored_blocks: u64,
    /// Executions scored, all sources.
    pub executions: u64,
    /// Executions of lock blocks (acquisition calls, cond, barrier and
    /// semaphore waits).
    pub lock_executions: u64,
    /// Executions of regions.
    pub region_executions: u64,
    /// Executions of functions (uprobes and hooks).
    pub function_executions: u64,
    /// Threads with executions or lock operations.
    pub threads: u32,
    /// Threads whose duration T_t came from the kernel's task events (the
    /// others: first to last recorded event).
    pub threads_with_lifetimes: u32,
    /// Largest SCI of any block.
    pub max_sci: Option<f64>,
    /// Ends with no open entry.
    pub unmatched_ends: u64,
    /// Entries closed without their end (longjmp, exceptions, skipped ENDs).
    pub abandoned: u64,
    /// Entries still open when their thread's trace ended.
    pub unfinished: u64,
}

/// The interference section of a report (JSON key `sci`; docs/json.md).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct SciReport {
    /// Run-wide figures.
    pub summary: SciSummary,
    /// Rows ranked by SCI, largest first (unscored rows last, by excess).
    #[serde(serialize_with = "crate::render::json::table_elements")]
    pub blocks: Vec<SciBlock>,
    /// Threads, most excess first.
    pub threads: Vec<SciThread>,
    /// How to read this run's numbers (thread durations, matching problems).
    pub notes: Vec<String>,
}

impl SciReport {
    /// Scores a gathered input into the section.
    pub fn from_gathered(mut g: Gathered<'_>) -> SciReport {
        let executions = std::mem::take(&mut g.input.executions);
        let (blocks, threads) =
            score_executions_streamed(&g.input, executions, g.streamed.as_ref());
        let mut notes = Vec::new();
        if let Some(n) = &g.lifetime_note {
            notes.push(n.clone());
        }
        let counted: u64 = g.input.counted.iter().map(|c| c.count).sum();
        let without_lock = g.counted_without_lock;
        if counted > 0 {
            let counted = crate::report::fmt::int_plain(counted);
            notes.push(format!(
                "light recording: {counted} uncontended acquisition(s) counted without times are scored as \
                 executions of 0 ns of their lock blocks, as a full recording times them (request = \
                 acquisition): they add no excess, and the executions, the fastest and the quantiles are \
                 those of a full recording"
            ));
        }
        if without_lock > 0 {
            let without_lock = crate::report::fmt::int_plain(without_lock);
            notes.push(format!(
                "light recording: {without_lock} uncontended acquisition(s) counted by call site without \
                 their lock are in no block (a block is a lock at a call site): the executions of the lock \
                 blocks at those sites are lower bounds, their excess is exact"
            ));
        }
        let c = g.counts;
        if c.unmatched_ends > 0 {
            notes.push(format!(
                "{} end(s) had no open entry (a region ended that did not begin in the thread, or a function return \
                 whose entry was not recorded)",
                c.unmatched_ends
            ));
        }
        if c.abandoned > 0 {
            notes.push(format!(
                "{} entr(ies) were closed without their end (frames left by longjmp or an exception, or a region \
                 whose END was skipped); they are not scored",
                c.abandoned
            ));
        }
        if c.unfinished > 0 {
            notes.push(format!(
                "{} entr(ies) were still open when their thread's trace ended (the program exited or crashed inside \
                 them); they are not scored",
                c.unfinished
            ));
        }
        let summary = SciSummary {
            blocks: blocks.len() as u64,
            scored_blocks: blocks.iter().filter(|b| b.sci.is_some()).count() as u64,
            executions: blocks.iter().map(|b| b.occurrences).sum(),
            lock_executions: g.executions[0],
            region_executions: g.executions[1],
            function_executions: g.executions[2],
            threads: g.input.threads.len() as u32,
            threads_with_lifetimes: g.threads_with_lifetimes,
            max_sci: blocks
                .iter()
                .filter_map(|b| b.sci)
                .max_by(|a, b| a.total_cmp(b)),
            unmatched_ends: c.unmatched_ends,
            abandoned: c.abandoned,
            unfinished: c.unfinished,
        };
        SciReport {
            summary,
            blocks,
            threads,
            notes,
        }
    }
}

impl Analyzer for SciAnalyzer {
    fn name(&self) -> &'static str {
        "interference (SCI)"
    }

    /// Gathers every execution (the lock analysis's events, regions,
    /// functions),
    /// scores them; no section when the recording has no block at all.
    fn analyze(&self, cx: &Context<'_>) -> Option<AnalysisOutput> {
        let rec = cx.recording;
        if rec.processes.is_empty() && rec.regions.is_none() && rec.probes.is_none() {
            return None;
        }
        cx.progress.stage("scoring blocks (SCI)", 1);
        // The lock analysis's events, unless `--wrapper` moved their call
        // sites (this analysis attributes sites through stacks alone).
        let locks = cx.earlier::<crate::locks::LockEvents>();
        let paired = locks
            .filter(|_| cx.options.locks.wrappers.is_empty())
            .map(|l| &l.set);
        // lock blocks keyed by the names the lock tables give their locks
        let names = locks.map(crate::locks::LockEvents::shown_object_names);
        let g = gather_with(rec, cx.symbols, paired, names.as_ref());
        let warnings = g.warnings.clone();
        let report = SciReport::from_gathered(g);
        cx.progress.advance(1);
        if report.blocks.is_empty() {
            let probes_asked = matches!(&rec.probes, Some(Ok(p)) if !p.manifest.probes.is_empty() || !p.manifest.refused.is_empty());
            if !probes_asked && rec.regions.is_none() {
                // Nothing but a lock trace without lock events: the lock
                // section already explains that.
                return (!warnings.is_empty()).then(|| AnalysisOutput {
                    section: None,
                    warnings,
                    events: None,
                    span_ns: None,
                });
            }
        }
        Some(AnalysisOutput {
            section: Some(Box::new(report)),
            warnings,
            events: None,
            span_ns: None,
        })
    }
}
