//! `--format svg --chart NAME`: one figure alone, as a standalone SVG file
//! with a white background (for papers and slides; LaTeX includes it with
//! the `svg` package's `\includesvg`, see the `latex` format).

use super::{chart, Document, Renderer};
use crate::report::{Figure, RenderOptions};

/// The SVG renderer.
pub(crate) struct Svg;

/// A chart name that the document does not have, or none given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChartError {
    /// `--format svg` without `--chart`.
    #[error("--format svg draws one chart: name it with --chart NAME (this report has: {})", list(.available))]
    NoneGiven {
        /// The document's chart names.
        available: Vec<String>,
    },
    /// An unknown name.
    #[error("unknown chart `{given}`; this report has: {}", list(.available))]
    Unknown {
        /// The name given.
        given: String,
        /// The document's chart names.
        available: Vec<String>,
    },
}

fn list(v: &[String]) -> String {
    if v.is_empty() {
        "no charts (nothing was recorded that a chart shows)".into()
    } else {
        v.join(", ")
    }
}

/// The figure of `doc` named `name`.
///
/// Errors: no name given, or a name the document has no figure of
/// ([`ChartError`], listing the valid names).
pub fn select_chart(doc: &Document<'_>, name: Option<&str>) -> Result<Figure, ChartError> {
    let figures = doc.figures();
    let available: Vec<String> = figures.iter().map(|f| f.name.clone()).collect();
    let Some(name) = name else {
        return Err(ChartError::NoneGiven { available });
    };
    figures
        .into_iter()
        .find(|f| f.name == name)
        .ok_or(ChartError::Unknown {
            given: name.to_string(),
            available,
        })
}

impl Renderer for Svg {
    /// The chart `opts.chart`; when it is missing or unknown, an SVG that
    /// says so and lists the document's charts (the command line checks
    /// the name first, with [`select_chart`]).
    fn render(&self, doc: &Document<'_>, opts: &RenderOptions) -> String {
        let mut out = match select_chart(doc, opts.chart.as_deref()) {
            Ok(f) => chart::svg(&f, true),
            Err(e) => format!(
                "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"760\" height=\"40\"><text x=\"8\" y=\"24\">{}</text></svg>",
                chart::xml_escape(&e.to_string())
            ),
        };
        out.push('\n');
        out
    }
}
