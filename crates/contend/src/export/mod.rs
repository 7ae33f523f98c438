//! Exports: formats written from the per-event results of an
//! [`Analysis`] (the paired lock events with their critical-path marks,
//! the MPI matches and wait states, the service samples), for the tools
//! performance engineers already use.
//!
//! Every format implements [`Exporter`] and writes to any
//! [`std::io::Write`]; [`ExportFormat`] lists them (the one list, which the
//! command line parses). Adding a format is one new file implementing
//! [`Exporter`] plus its variant and arm in [`ExportFormat`].
//!
//! The formats: `folded` stacks and their flame graph (`flamegraph`,
//! SVG), the trace viewers' timelines (`perfetto` protobuf and
//! `chrome` JSON, both drawn from one walk, `timeline`), `pprof`
//! profiles, and the OTF2 archive ([`otf2`]: its content here, written by
//! a libotf2 backend outside this crate).

mod chrome;
mod flamegraph;
mod folded;
pub mod otf2;
mod perfetto;
mod pprof;
mod timeline;

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
    /// The format is written otherwise (an archive of files, by a backend
    /// this crate does not hold); the message says how.
    #[error("{0}")]
    Unsupported(String),
    /// A writer outside this crate (libotf2) failed; its message.
    #[error("writing the export: {0}")]
    Writer(String),
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
    /// Time lost in MPI wait states (late sender, wait at barrier, …), ns.
    MpiWait,
}

impl Weight {
    /// Its name on the command line (`wait`, `hold`, `mpi-wait`).
    pub fn name(self) -> &'static str {
        match self {
            Weight::Wait => "wait",
            Weight::Hold => "hold",
            Weight::MpiWait => "mpi-wait",
        }
    }
}

/// Options of an export.
#[derive(Debug, Clone, Default)]
pub struct ExportOptions {
    /// The quantity a profile-like export is weighted by (folded stacks,
    /// flame graph).
    pub weight: Weight,
    /// Which lock events are exported (`--min-duration`, `--lock`,
    /// `--site`, `--thread`, `--critical-only`): the same selection as the
    /// report's tables ([`crate::locks::Selection`]). The timelines also
    /// leave out MPI calls shorter than `min_duration_ns`.
    pub filter: crate::locks::EventFilter,
    /// The MPI thresholds: wait states below them are not counted (as in
    /// the report's MPI section).
    pub mpi: crate::mpi::MpiOptions,
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
    /// Perfetto's protobuf trace (ui.perfetto.dev, `trace_processor`):
    /// process, thread and counter tracks, lock and MPI slices, flows.
    Perfetto,
    /// Chrome trace-event JSON (`chrome://tracing`, Speedscope): the same
    /// timeline as `perfetto`, as far as that format allows.
    Chrome,
    /// pprof `profile.proto`, gzip-compressed (`go tool pprof`):
    /// contentions, delay and hold per call stack.
    Pprof,
    /// Folded stacks (`frame;frame;frame value`, Brendan Gregg's format
    /// for flame graphs), weighted by lock wait or hold time or MPI wait
    /// time in ns.
    Folded,
    /// An interactive flame graph (SVG, drawn by `inferno`) of the folded
    /// stacks.
    Svg,
    /// An OTF2 trace archive (Vampir, Scalasca, Score-P tools): MPI calls,
    /// messages and collectives with their communicators, lock events as
    /// OTF2 locks. A directory; written through libotf2.
    Otf2,
}

impl ExportFormat {
    /// Every format, in the order the help lists them.
    pub const ALL: [ExportFormat; 6] = [
        ExportFormat::Perfetto,
        ExportFormat::Chrome,
        ExportFormat::Pprof,
        ExportFormat::Folded,
        ExportFormat::Svg,
        ExportFormat::Otf2,
    ];

    /// Canonical name (`perfetto`, `chrome`, `pprof`, `folded`, `svg`,
    /// `otf2`).
    pub fn name(self) -> &'static str {
        match self {
            ExportFormat::Perfetto => "perfetto",
            ExportFormat::Chrome => "chrome",
            ExportFormat::Pprof => "pprof",
            ExportFormat::Folded => "folded",
            ExportFormat::Svg => "svg",
            ExportFormat::Otf2 => "otf2",
        }
    }

    /// The file (for `otf2` the directory) an export is written to when
    /// none is given.
    pub fn default_file_name(self) -> &'static str {
        match self {
            ExportFormat::Perfetto => "contend.pftrace",
            ExportFormat::Chrome => "contend.trace.json",
            ExportFormat::Pprof => "contend.pb.gz",
            ExportFormat::Folded => "contend.folded",
            ExportFormat::Svg => "contend.svg",
            ExportFormat::Otf2 => "contend-otf2",
        }
    }

    /// True for formats written as a directory of files (OTF2), which
    /// [`export`] cannot write to a stream.
    pub fn is_archive(self) -> bool {
        self == ExportFormat::Otf2
    }

    /// The exporter of this format.
    pub fn exporter(self) -> &'static dyn Exporter {
        match self {
            ExportFormat::Perfetto => &perfetto::Perfetto,
            ExportFormat::Chrome => &chrome::Chrome,
            ExportFormat::Pprof => &pprof::Pprof,
            ExportFormat::Folded => &folded::Folded,
            ExportFormat::Svg => &flamegraph::FlameGraph,
            ExportFormat::Otf2 => &otf2::NotAStream,
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
