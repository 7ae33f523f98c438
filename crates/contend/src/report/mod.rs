//! Reports: the data [`model`] and its renderings.
//!
//! Every output format implements [`Renderer`]; [`OutputFormat`] picks one.
//! All table formats (text, Markdown, LaTeX, CSV) draw the same sections,
//! built once in `layout` from the [`Report`] or [`Comparison`]:
//!
//! 1. run header (command, exit status, wall time, processes, threads, …);
//! 2. warnings, first and prominent;
//! 3. the lock summary (Venter 2016, Table 4.9) and the critical-path summary
//!    (Table 4.10), both from [`summary_metrics`](crate::compare::summary_metrics);
//! 4. other waits (cond, barrier, semaphore);
//! 5. per lock (Table 4.12), per call site and per thread, `top` rows each,
//!    in the order the model gives (largest wait first);
//! 6. the wait-time histogram per log2 bucket, all events beside those on
//!    the critical path (Figures 4.1 and 4.2);
//! 7. modules without debug information.
//!
//! When `locks.no_events_reason` is set, the reason replaces the lock
//! tables. JSON is the model itself (`serde_json`), never truncated.
//!
//! Adding a format is one new file: implement [`Renderer`] over the shared
//! sections and add a variant to [`OutputFormat`].

pub mod model;

mod csv;
mod fmt;
mod json;
mod latex;
mod layout;
mod markdown;
mod mpi_layout;
mod speedup_layout;
mod text;

use std::fmt as stdfmt;
use std::str::FromStr;

use crate::compare::Comparison;
pub use model::Report;

/// An output format of `contend report` and `contend compare`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OutputFormat {
    /// Tables for an 80–100 column terminal, optionally coloured.
    Text,
    /// GitHub-flavoured Markdown tables.
    Markdown,
    /// LaTeX `table` environments with booktabs rules.
    Latex,
    /// Long-format CSV, `section,key,column,value` (see the `csv` module).
    Csv,
    /// The model as pretty-printed JSON (docs/json.md).
    Json,
}

impl OutputFormat {
    /// Every format, in the order the help text lists them.
    pub const ALL: [OutputFormat; 5] = [
        OutputFormat::Text,
        OutputFormat::Markdown,
        OutputFormat::Latex,
        OutputFormat::Csv,
        OutputFormat::Json,
    ];

    /// Canonical name (`text`, `markdown`, `latex`, `csv`, `json`).
    pub fn name(self) -> &'static str {
        match self {
            OutputFormat::Text => "text",
            OutputFormat::Markdown => "markdown",
            OutputFormat::Latex => "latex",
            OutputFormat::Csv => "csv",
            OutputFormat::Json => "json",
        }
    }
}

impl stdfmt::Display for OutputFormat {
    fn fmt(&self, f: &mut stdfmt::Formatter<'_>) -> stdfmt::Result {
        f.write_str(self.name())
    }
}

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

impl FromStr for OutputFormat {
    type Err = ParseNameError;

    /// Accepts `text`, `markdown`/`md`, `latex`/`tex`, `csv`, `json`,
    /// in any case.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "text" => Ok(OutputFormat::Text),
            "markdown" | "md" => Ok(OutputFormat::Markdown),
            "latex" | "tex" => Ok(OutputFormat::Latex),
            "csv" => Ok(OutputFormat::Csv),
            "json" => Ok(OutputFormat::Json),
            _ => Err(ParseNameError {
                what: "output format",
                given: s.to_string(),
                valid: "text, markdown (md), latex (tex), csv, json",
            }),
        }
    }
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
}

impl Default for RenderOptions {
    /// No colour, 20 rows per table, automatic units.
    fn default() -> Self {
        RenderOptions {
            color: false,
            top: 20,
            unit: TimeUnit::Auto,
        }
    }
}

/// One output format.
pub trait Renderer {
    /// Renders one report; the result ends with a newline.
    fn report(&self, r: &Report, opts: &RenderOptions) -> String;
    /// Renders a comparison of runs; the result ends with a newline.
    fn comparison(&self, c: &Comparison, opts: &RenderOptions) -> String;
}

/// The renderer of `format`.
pub fn renderer(format: OutputFormat) -> &'static dyn Renderer {
    match format {
        OutputFormat::Text => &text::Text,
        OutputFormat::Markdown => &markdown::Markdown,
        OutputFormat::Latex => &latex::Latex,
        OutputFormat::Csv => &csv::Csv,
        OutputFormat::Json => &json::Json,
    }
}

/// Renders `r` in `format`.
pub fn render_report(r: &Report, format: OutputFormat, opts: &RenderOptions) -> String {
    renderer(format).report(r, opts)
}

/// Renders the comparison `c` in `format`.
pub fn render_comparison(c: &Comparison, format: OutputFormat, opts: &RenderOptions) -> String {
    renderer(format).comparison(c, opts)
}
