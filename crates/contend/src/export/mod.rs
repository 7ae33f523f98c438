//! Exports: formats written from the per-event results of an
//! [`Analysis`] (the paired lock events with their critical-path marks,
//! the MPI matches and wait states, the service samples), for the tools
//! performance engineers already use.
//!
//! Every format implements [`Exporter`] and writes to any
//! [`std::io::Write`]; [`ExportFormat`] lists them (the one list, which the
//! command line parses). Adding a format is one new file implementing
//! [`Exporter`] plus its variant and arm in [`ExportFormat`].

mod folded;

use std::io::Write;

use crate::analysis::Analysis;

/// Errors of an export. Messages say what could not be written.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// Writing the output failed.
    #[error("writing the export: {0}")]
    Io(#[from] std::io::Error),
    /// The recording holds nothing this format can show.
    #[error("{0}")]
    Nothing(String),
}

/// What an export wrote, for the command's closing line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExportSummary {
    /// Records written (stacks, events, samples: the format says which).
    pub records: u64,
    /// What the records are, plural (`stacks`).
    pub what: &'static str,
    /// Parts of the recording the format cannot show or that were missing,
    /// one sentence each.
    pub notes: Vec<String>,
}

/// Which quantity weights a profile-like export.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Weight {
    /// Time waited to acquire, ns (contended acquisitions and other waits).
    #[default]
    Wait,
    /// Time held, ns.
    Hold,
}

/// Options of an export.
#[derive(Debug, Clone, Default)]
pub struct ExportOptions {
    /// The quantity a profile-like export is weighted by.
    pub weight: Weight,
    /// Only events on the critical path.
    pub critical_only: bool,
}

/// One export format.
pub trait Exporter {
    /// Writes the export of `analysis` to `out`.
    ///
    /// Errors: writing failed ([`ExportError::Io`]), or the recording holds
    /// nothing this format shows ([`ExportError::Nothing`], saying why).
    fn export(
        &self,
        analysis: &Analysis<'_>,
        options: &ExportOptions,
        out: &mut dyn Write,
    ) -> Result<ExportSummary, ExportError>;
}

/// An export format of `contend export`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum ExportFormat {
    /// Folded stacks (`frame;frame;frame value`, Brendan Gregg's format
    /// for flame graphs), weighted by lock wait or hold time in ns.
    Folded,
}

impl ExportFormat {
    /// Canonical name (`folded`).
    pub fn name(self) -> &'static str {
        match self {
            ExportFormat::Folded => "folded",
        }
    }

    /// The file name an export is written to when none is given.
    pub fn default_file_name(self) -> &'static str {
        match self {
            ExportFormat::Folded => "contend.folded",
        }
    }

    /// The exporter of this format.
    pub fn exporter(self) -> &'static dyn Exporter {
        match self {
            ExportFormat::Folded => &folded::Folded,
        }
    }
}

/// Writes the export of `analysis` in `format` to `out`.
///
/// Errors: as [`Exporter::export`].
pub fn export(
    analysis: &Analysis<'_>,
    format: ExportFormat,
    options: &ExportOptions,
    out: &mut dyn Write,
) -> Result<ExportSummary, ExportError> {
    format.exporter().export(analysis, options, out)
}
