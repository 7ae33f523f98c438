//! OTF2 (the Open Trace Format 2 of Score-P, Vampir and Scalasca).
//!
//! An OTF2 trace is an archive of files (an anchor file, definitions and
//! one event file per location), written through libotf2, a C library.
//! This crate builds without a C compiler, so it does not write OTF2
//! itself: the `contend-otf2` crate does (the `contend` binary links it),
//! from the content this module lays out.

use std::io::Write;

use super::{ExportError, ExportOptions, ExportSummary, Exporter};
use crate::analysis::Analysis;

/// The [`Exporter`] of [`super::ExportFormat::Otf2`]: OTF2 is an archive,
/// not a stream, so this says how it is written instead.
pub(crate) struct NotAStream;

impl Exporter for NotAStream {
    fn export(
        &self,
        _analysis: &Analysis<'_>,
        _options: &ExportOptions,
        _out: &mut dyn Write,
    ) -> Result<ExportSummary, ExportError> {
        Err(ExportError::Unsupported(
            "OTF2 is an archive of files, not a stream: write it with `contend export --format otf2 -o DIR` (the contend-otf2 crate)".into(),
        ))
    }
}
