//! An interactive flame graph (SVG with its own small script: click to
//! zoom, search, hover for values), drawn by the `inferno` crate from the
//! [`folded`](super::folded) stacks: lock wait (the default), lock hold
//! (`--weight hold`) or MPI wait (`--weight mpi-wait`), in ns. The frames
//! are exactly the folded stacks' frames; widths are their weights.

use std::io::Write;

use super::folded::fold;
use super::{ExportError, ExportOptions, ExportSummary, Exporter, Weight};
use crate::analysis::Analysis;

/// The flame-graph exporter.
pub(crate) struct FlameGraph;

impl Exporter for FlameGraph {
    fn export(
        &self,
        analysis: &Analysis<'_>,
        options: &ExportOptions,
        out: &mut dyn Write,
    ) -> Result<ExportSummary, ExportError> {
        let (folded, mut notes) = fold(analysis, options)?;
        if folded.is_empty() {
            return Err(ExportError::Nothing(format!(
                "nothing to draw: {}",
                notes.join("; ")
            )));
        }
        let lines: Vec<String> = folded.iter().map(|(s, v)| format!("{s} {v}")).collect();
        let mut opt = inferno::flamegraph::Options::default();
        opt.title = match options.weight {
            Weight::Wait => "Lock wait time",
            Weight::Hold => "Lock hold time",
            Weight::MpiWait => "MPI wait time",
        }
        .to_string();
        opt.subtitle = Some(format!(
            "contend: {} (widths are ns)",
            analysis.recording.dir.display()
        ));
        opt.count_name = "ns".to_string();
        opt.deterministic = true;
        // Every frame of the folded stacks is drawn, however narrow.
        opt.min_width = 0.0;
        inferno::flamegraph::from_lines(&mut opt, lines.iter().map(String::as_str), &mut *out)
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::InvalidData => {
                    ExportError::Nothing(format!("the flame graph could not be drawn: {e}"))
                }
                _ => ExportError::Io(e),
            })?;
        notes.push(format!("{} stacks", folded.len()));
        Ok(ExportSummary {
            records: folded.len() as u64,
            what: "stacks",
            notes,
        })
    }
}
