//! The report model: what the analyses produce and every output format
//! draws from.
//!
//! A [`Report`] ([`model`]) is the run header, the warnings and one
//! [`ReportSection`] per analysis. A section knows its JSON key, lays
//! itself out as format-neutral tables ([`layout`]: panels of tables,
//! lists and paragraphs whose cells keep raw values), and says which of
//! its numbers `contend compare` puts side by side ([`compared`]). The
//! renderers (`crate::render`) turn panels into text, Markdown, LaTeX or
//! CSV and serialise the model as JSON; they know no section by name.
//!
//! This module imports nothing of the analyses: they implement
//! [`ReportSection`] for their own types, in their own `layout` module.

pub mod compared;
pub mod figure;
pub(crate) mod fmt;
pub mod layout;
pub mod model;

use std::any::Any;
use std::fmt as stdfmt;
use std::str::FromStr;

pub use compared::{Comparable, ComparedPart, ItemList, Metric, MetricGroup, Unit};
pub use figure::Figure;
pub use layout::Panel;
pub use model::{RecordingLimits, Report, RunInfo};

/// One analysis's part of a [`Report`]: its aggregated results, serialised
/// under [`ReportSection::key`] in JSON, laid out as tables for the other
/// formats, compared across runs by `contend compare`.
///
/// Implemented by each analysis for its report type, in the analysis's own
/// `layout` module (e.g. `crate::locks::LockReport`).
pub trait ReportSection: erased_serde::Serialize + stdfmt::Debug + Send + Sync + Any {
    /// Its key in the JSON report and in messages (`locks`, `service`,
    /// `counters`, `mpi`). Unique among the registered analyses.
    fn key(&self) -> &'static str;

    /// Its panels for the table formats, in display order. `opts.top`
    /// limits the rows of long tables (the panel says how many were left
    /// out).
    fn layout(&self, opts: &RenderOptions) -> Vec<Panel>;

    /// Whether the table formats put this section after all others (the
    /// per-lock, per-site and per-thread tables, the longest, end a
    /// report). Default: no, sections appear in registration order.
    fn closes_report(&self) -> bool {
        false
    }

    /// What a reader should see first of this section: its largest waits
    /// and losses, one sentence each (at most about three), each giving
    /// the figure and where it was, in the units the section's tables use.
    /// The table formats list every section's headlines, in registration
    /// order (those of [`ReportSection::headlines_follow`] sections last),
    /// in the report's "At a glance" panel under the run header
    /// ([`layout::report_panels`]); JSON does not carry them (its
    /// sections hold the same numbers). Default: none.
    fn headlines(&self) -> Vec<String> {
        Vec::new()
    }

    /// Whether this section's headlines come after those of the sections
    /// that lead "At a glance" (in registration order within each group):
    /// what it says is not where a reader should start (the recording's
    /// own cost; the lock section of a program without lock events, whose
    /// lines are about joins and condition waits while its futex waits
    /// hold the contention). Default: no.
    fn headlines_follow(&self) -> bool {
        false
    }

    /// The metrics of [`ReportSection::comparable`] that a comparison's
    /// "At a glance" lines up, most telling first: (metric key, the name
    /// its line gives it, e.g. `("locks.summary.wait_ns", "Lock wait")`).
    /// Default: none.
    fn glance_metrics(&self) -> Vec<(&'static str, &'static str)> {
        Vec::new()
    }

    /// Filters that selected what this section counts, one phrase each,
    /// for the run header (`event duration >= 10000 ns`). Default: none.
    fn filters(&self) -> Vec<String> {
        Vec::new()
    }

    /// The numbers `contend compare` lines up across runs; `None` (the
    /// default) leaves the section out of comparisons.
    fn comparable(&self) -> Option<Comparable> {
        None
    }

    /// Sentences about this run that a comparison lists among its
    /// warnings (for example why a run has no lock events). Default: none.
    fn comparison_notes(&self) -> Vec<String> {
        Vec::new()
    }

    /// Lays out the comparison of this kind of section across runs, from
    /// the lined-up numbers `part` (called on any one of the compared
    /// sections). Default: one table per metric group, then one per item
    /// list.
    fn layout_comparison(&self, part: &ComparedPart<'_>, opts: &RenderOptions) -> Vec<Panel> {
        layout::default_comparison_panels(part, opts)
    }

    /// Its charts for the HTML report and `--format svg --chart NAME`
    /// ([`figure`]), in display order. Default: none.
    fn figures(&self) -> Vec<Figure> {
        Vec::new()
    }
}

erased_serde::serialize_trait_object!(ReportSection);

/// An unknown format or unit name; the message lists the valid names.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {what} `{given}`; expected one of: {valid}")]
pub struct ParseNameError {
    /// What was parsed (`output format`, `time unit`).
    pub what: &'static str,
    /// The name given.
    pub given: String,
    /// The accepted names, comma-separated.
    pub valid: &'static str,
}

/// Unit of durations in text, Markdown and LaTeX (CSV and JSON always
/// carry raw nanoseconds).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum TimeUnit {
    /// The most readable unit per value, 4 significant digits (`1.234 ms`, `12.50 s`).
    #[default]
    Auto,
    /// Nanoseconds, integers.
    Ns,
    /// Microseconds, 3 decimals.
    Us,
    /// Milliseconds, 3 decimals.
    Ms,
    /// Seconds, 3 decimals.
    S,
}

impl TimeUnit {
    /// Name as accepted by [`FromStr`] (`auto`, `ns`, `us`, `ms`, `s`).
    pub fn name(self) -> &'static str {
        match self {
            TimeUnit::Auto => "auto",
            TimeUnit::Ns => "ns",
            TimeUnit::Us => "us",
            TimeUnit::Ms => "ms",
            TimeUnit::S => "s",
        }
    }
}

impl stdfmt::Display for TimeUnit {
    fn fmt(&self, f: &mut stdfmt::Formatter<'_>) -> stdfmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for TimeUnit {
    type Err = ParseNameError;

    /// Accepts `auto`, `ns`, `us` (or `µs`), `ms`, `s`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "auto" => Ok(TimeUnit::Auto),
            "ns" => Ok(TimeUnit::Ns),
            "us" | "µs" => Ok(TimeUnit::Us),
            "ms" => Ok(TimeUnit::Ms),
            "s" => Ok(TimeUnit::S),
            _ => Err(ParseNameError {
                what: "time unit",
                given: s.to_string(),
                valid: "auto, ns, us, ms, s",
            }),
        }
    }
}

/// How to render; built by the binary from its flags and environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenderOptions {
    /// ANSI colour in the text format (the binary sets it from `NO_COLOR`
    /// and whether standard output is a terminal). Other formats ignore it.
    pub color: bool,
    /// Rows per table (locks, sites, threads; compared items); 0 = all.
    /// JSON is never truncated.
    pub top: usize,
    /// Unit of durations in text, Markdown and LaTeX.
    pub unit: TimeUnit,
    /// Width of the terminal the text format is drawn for, characters:
    /// tables wider than this wrap long names onto more lines (numbers are
    /// never cut). `None` (output into a file or pipe): no limit, every
    /// name on one line, in full.
    pub width: Option<usize>,
    /// Under each table of the text format, the meaning of its abbreviated
    /// headings (the first time a heading appears); `--no-legend` turns
    /// them off.
    pub legend: bool,
    /// The figure `--format svg` draws (`--chart NAME`, one of
    /// [`crate::render::Document::figure_names`]).
    pub chart: Option<String>,
    /// LaTeX: the directory the figures are written to as SVG (`--figures
    /// DIR`); the output then includes each with `\includesvg`.
    pub figures_dir: Option<String>,
}

impl Default for RenderOptions {
    /// No colour, 20 rows per table, automatic units, no width limit,
    /// legends.
    fn default() -> Self {
        RenderOptions {
            color: false,
            top: 20,
            unit: TimeUnit::Auto,
            width: None,
            legend: true,
            chart: None,
            figures_dir: None,
        }
    }
}
