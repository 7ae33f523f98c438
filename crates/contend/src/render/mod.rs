//! The output formats of `contend report` and `contend compare`: every
//! format implements [`Renderer`]; [`OutputFormat`] lists them (the one
//! list, which the command line parses).
//!
//! The table formats (text, Markdown, LaTeX, CSV) draw the panels a
//! [`Document`] lays out ([`crate::report::layout`]): for a report, the run
//! header, the warnings first and prominent, then each analysis's section
//! ([`crate::report::ReportSection::layout`]); for a comparison, the runs
//! and each section's compared tables; for a scale directory, the speed-up
//! loss model. JSON is the model itself (`serde_json`), never truncated.
//!
//! Adding a format is one new file: implement [`Renderer`] and add a
//! variant to [`OutputFormat`] and an arm to [`renderer`].

pub mod chart;
mod csv;
mod html;
pub(crate) mod json;
mod latex;
mod markdown;
pub mod svg;
mod text;

use std::fmt as stdfmt;
use std::str::FromStr;

use crate::analysis::Analysis;
use crate::compare::Comparison;
use crate::report::{Figure, Panel, ParseNameError, RenderOptions, Report};
use crate::speedup::ScaleReport;

/// What can be rendered: a report, a comparison of reports, or the
/// speed-up report of a scale directory.
#[derive(Clone, Copy)]
pub enum Document<'a> {
    /// `contend report DIR` of a recording.
    Report(&'a Report),
    /// `contend report DIR` of a recording, with the per-event results
    /// (the HTML report and `--format svg` draw timelines from them; the
    /// other formats render its report).
    Analysis(&'a Analysis<'a>),
    /// `contend compare A B …`.
    Comparison(&'a Comparison),
    /// `contend report DIR` of a scale directory.
    Scale(&'a ScaleReport),
    /// `contend numa estimate` and `contend numa balance`.
    Numa(&'a crate::numa::NumaDocument),
}

impl stdfmt::Debug for Document<'_> {
    fn fmt(&self, f: &mut stdfmt::Formatter<'_>) -> stdfmt::Result {
        match self {
            Document::Report(r) => f.debug_tuple("Report").field(r).finish(),
            Document::Analysis(a) => f.debug_tuple("Analysis").field(&a.report).finish(),
            Document::Comparison(c) => f.debug_tuple("Comparison").field(c).finish(),
            Document::Scale(s) => f.debug_tuple("Scale").field(s).finish(),
            Document::Numa(n) => f.debug_tuple("Numa").field(&n.numa).finish(),
        }
    }
}

impl Document<'_> {
    /// The panels the table formats draw, in display order.
    pub fn panels(&self, opts: &RenderOptions) -> Vec<Panel> {
        match self {
            Document::Report(r) => crate::report::layout::report_panels(r, opts),
            Document::Analysis(a) => crate::report::layout::report_panels(&a.report, opts),
            Document::Comparison(c) => c.panels(opts),
            Document::Scale(s) => crate::speedup::layout::panels(s),
            Document::Numa(n) => n.panels(opts),
        }
    }

    /// The document as JSON (docs/json.md), ending with a newline: the
    /// outer levels indented, each element of a table on one line
    /// ([`json::OutlineFormatter`]).
    pub fn to_json(&self) -> String {
        let mut out = Vec::new();
        // Serialising these plain structs (string keys, finite or
        // non-finite floats written as null) into memory cannot fail.
        self.write_json(&mut out)
            .expect("report structs serialise to JSON");
        String::from_utf8(out).expect("serde_json writes UTF-8")
    }

    /// [`Document::to_json`] written to `out` as it is serialised, without
    /// the whole text in memory.
    ///
    /// # Errors
    ///
    /// What writing to `out` returns.
    pub fn write_json(&self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        fn outline<T: serde::Serialize + ?Sized>(
            out: &mut dyn std::io::Write,
            value: &T,
        ) -> std::io::Result<()> {
            // The serialiser writes every token (a key, a number, a line's
            // indentation) on its own: into a buffer of a concrete type
            // those writes are inlined copies, where through `dyn Write`
            // each was a call (a quarter of the report's time for
            // memcached's 71 MB of JSON); `out` gets 64 KiB at a time.
            use std::io::Write as _;
            let mut buffered = std::io::BufWriter::with_capacity(1 << 16, &mut *out);
            let _compact = json::ElementsCompact::mark();
            let mut ser = serde_json::Serializer::with_formatter(
                &mut buffered,
                json::OutlineFormatter::new(json::OUTLINE_LEVELS),
            );
            serde::Serialize::serialize(value, &mut ser).map_err(std::io::Error::from)?;
            buffered.write_all(b"\n")?;
            buffered.flush()
        }
        match self {
            Document::Report(r) => outline(out, r),
            Document::Analysis(a) => outline(out, &a.report),
            Document::Comparison(c) => outline(out, c),
            Document::Scale(s) => outline(out, s),
            Document::Numa(n) => outline(out, n),
        }
    }
}

impl Document<'_> {
    /// The figures of the document, in display order: each section's
    /// ([`crate::report::ReportSection::figures`]); with the per-event
    /// results also the lock timeline (after the lock figures) and the
    /// service time over time (after the service section's place); for a
    /// comparison, grouped bars of the compared durations; for a scale
    /// directory, the speed-up loss chart.
    pub fn figures(&self) -> Vec<Figure> {
        match self {
            Document::Report(r) => r.sections().iter().flat_map(|s| s.figures()).collect(),
            Document::Analysis(a) => {
                let mut out = Vec::new();
                let mut service_done = false;
                for s in a.report.sections() {
                    out.extend(s.figures());
                    match s.key() {
                        "locks" => {
                            out.extend(
                                a.events::<crate::locks::LockEvents>()
                                    .and_then(crate::locks::figures::timeline),
                            );
                        }
                        "service" => {
                            service_done = true;
                            if let Some(Ok(file)) = &a.recording.service {
                                out.extend(crate::service::figures::over_time(file));
                            }
                        }
                        _ => {}
                    }
                }
                if !service_done {
                    if let Some(Ok(file)) = &a.recording.service {
                        out.extend(crate::service::figures::over_time(file));
                    }
                }
                out
            }
            Document::Comparison(c) => {
                let runs: Vec<String> = c.runs.iter().map(|r| r.label.clone()).collect();
                let mut keys: Vec<(&'static str, crate::report::MetricGroup)> = Vec::new();
                for m in &c.metrics {
                    if !keys.contains(&(m.section, m.group)) {
                        keys.push((m.section, m.group));
                    }
                }
                keys.into_iter()
                    .filter_map(|(section, group)| {
                        let metrics: Vec<&crate::report::compared::ComparedMetric> =
                            c.metrics.iter().filter(|m| m.section == section).collect();
                        crate::report::figure::comparison_bars(section, &runs, &metrics, group)
                    })
                    .collect()
            }
            Document::Scale(s) => crate::speedup::figures::figures(s),
            Document::Numa(n) => crate::report::ReportSection::figures(&n.numa),
        }
    }

    /// The names of the document's figures, for `--chart` and its errors.
    pub fn figure_names(&self) -> Vec<String> {
        self.figures().into_iter().map(|f| f.name).collect()
    }
}

/// An output format of `contend report` and `contend compare`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum OutputFormat {
    /// Tables for an 80–100 column terminal, optionally coloured.
    Text,
    /// GitHub-flavoured Markdown tables.
    #[cfg_attr(feature = "clap", value(alias = "md"))]
    Markdown,
    /// LaTeX `table` environments with booktabs rules.
    #[cfg_attr(feature = "clap", value(alias = "tex"))]
    Latex,
    /// Long-format CSV, `section,key,column,value` (see the `csv` module).
    Csv,
    /// The model as pretty-printed JSON (docs/json.md).
    Json,
    /// One self-contained HTML page: every table (sortable) and every
    /// figure as inline SVG; no network.
    Html,
    /// One figure alone as SVG (`--chart NAME`), for papers and slides.
    Svg,
}

impl OutputFormat {
    /// Every format, in the order the help text lists them.
    pub const ALL: [OutputFormat; 7] = [
        OutputFormat::Text,
        OutputFormat::Markdown,
        OutputFormat::Latex,
        OutputFormat::Csv,
        OutputFormat::Json,
        OutputFormat::Html,
        OutputFormat::Svg,
    ];

    /// Canonical name (`text`, `markdown`, `latex`, `csv`, `json`).
    pub fn name(self) -> &'static str {
        match self {
            OutputFormat::Text => "text",
            OutputFormat::Markdown => "markdown",
            OutputFormat::Latex => "latex",
            OutputFormat::Csv => "csv",
            OutputFormat::Json => "json",
            OutputFormat::Html => "html",
            OutputFormat::Svg => "svg",
        }
    }
}

impl stdfmt::Display for OutputFormat {
    fn fmt(&self, f: &mut stdfmt::Formatter<'_>) -> stdfmt::Result {
        f.write_str(self.name())
    }
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
            "html" => Ok(OutputFormat::Html),
            "svg" => Ok(OutputFormat::Svg),
            _ => Err(ParseNameError {
                what: "output format",
                given: s.to_string(),
                valid: "text, markdown (md), latex (tex), csv, json, html, svg",
            }),
        }
    }
}

/// One output format.
pub trait Renderer {
    /// Renders `doc`; the result ends with a newline.
    fn render(&self, doc: &Document<'_>, opts: &RenderOptions) -> String;

    /// Writes what [`Renderer::render`] gives to `out`, ending with a
    /// newline. A renderer that can write as it goes (JSON) overrides this
    /// and never holds the whole text in memory (a large report's JSON is
    /// tens of MB, and a growing string twice that).
    ///
    /// # Errors
    ///
    /// What writing to `out` returns.
    fn render_to(
        &self,
        doc: &Document<'_>,
        opts: &RenderOptions,
        out: &mut dyn std::io::Write,
    ) -> std::io::Result<()> {
        let text = self.render(doc, opts);
        out.write_all(text.as_bytes())?;
        if !text.ends_with('\n') {
            out.write_all(b"\n")?;
        }
        Ok(())
    }
}

/// The renderer of `format`.
pub fn renderer(format: OutputFormat) -> &'static dyn Renderer {
    match format {
        OutputFormat::Text => &text::Text,
        OutputFormat::Markdown => &markdown::Markdown,
        OutputFormat::Latex => &latex::Latex,
        OutputFormat::Csv => &csv::Csv,
        OutputFormat::Json => &json::Json,
        OutputFormat::Html => &html::Html,
        OutputFormat::Svg => &svg::Svg,
    }
}

/// Renders `doc` in `format`.
pub fn render(doc: &Document<'_>, format: OutputFormat, opts: &RenderOptions) -> String {
    renderer(format).render(doc, opts)
}

/// Writes `doc` in `format` to `out` ([`Renderer::render_to`]); `out` is
/// best buffered.
///
/// # Errors
///
/// What writing to `out` returns.
pub fn render_to(
    doc: &Document<'_>,
    format: OutputFormat,
    opts: &RenderOptions,
    out: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    renderer(format).render_to(doc, opts, out)
}

/// Renders the report `r` in `format`.
pub fn render_report(r: &Report, format: OutputFormat, opts: &RenderOptions) -> String {
    render(&Document::Report(r), format, opts)
}

/// Renders the comparison `c` in `format`.
pub fn render_comparison(c: &Comparison, format: OutputFormat, opts: &RenderOptions) -> String {
    render(&Document::Comparison(c), format, opts)
}

/// Renders the report of a scale directory `s` in `format`.
pub fn render_scale(s: &ScaleReport, format: OutputFormat, opts: &RenderOptions) -> String {
    render(&Document::Scale(s), format, opts)
}
