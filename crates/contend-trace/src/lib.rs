//! # contend-trace
//!
//! Every file of a recording directory and of a scale directory: the binary
//! trace formats of `contend` and their readers, the run description
//! [`meta`] (`meta.json`, with the [`counters`] measured) and the
//! [`scale`] manifest (`scale.json`). The launcher (`contend-record`)
//! writes them and the analyses (`contend`) read them; neither defines a
//! file of its own. One definition of
//! the on-disk layout lives in `collector/include/contend/trace_format.h`;
//! [`mod@format`] mirrors it and `docs/trace-format.md` explains it. The MPI
//! rank traces (`mpi/rank-<r>.cmpi`, one definition in
//! `collector/include/contend/mpi_trace_format.h`) are mirrored by
//! [`mpi_format`] and read into the model of [`mpi`] by [`mpi_reader`]
//! ([`read_mpi_recording`]). The service-time samples (`service.csamp`)
//! are [`service`]. The NUMA files (calibrated latencies, access
//! histograms, a recording's data-address samples) are [`numa`].
//! [`modules`] (`modules.json`) records the build ID, size and modification
//! time of every mapped object, and [`buildid_cache`] is the cache of their
//! copies that recordings refer to.
//! The region traces of the interference (SCI) analysis
//! (`regions/<pid>.creg`, one definition in
//! `collector/include/contend/region_format.h`) are mirrored by
//! [`region_format`] and read by [`regions`]; the thread lifetimes and
//! function probes the launcher records through `perf_event_open`
//! (`probes/`) are [`probes`].
//! The meter time series of `contend record --meters` (`meters.cmts`) is
//! [`meters`]. The futex calls seen by the kernel's futex tracepoints
//! (`futex/`) are [`futex_calls`].
//!
//! Design constraints: reading never panics on damaged input; a trace cut
//! short by a crash or `SIGKILL` is read up to its last complete record and
//! the damage is described ([`reader::Damage`]) rather than hidden.
#![deny(missing_docs)]

pub mod buildid_cache;
pub mod clock;
pub mod control;
pub mod counters;
pub mod format;
pub mod futex_calls;
mod json_file;
pub mod meta;
pub mod meters;
pub mod modules;
pub mod mpi;
pub mod mpi_events;
pub mod mpi_format;
pub mod mpi_reader;
pub mod numa;
pub mod probes;
pub mod reader;
pub mod region_format;
pub mod regions;
pub mod scale;
pub mod service;
pub mod thread_names;
pub mod writer;

use std::path::{Path, PathBuf};

pub use clock::{CalibrationPoint, ClockFit};
pub use format::{Phase, Primitive};
pub use mpi_reader::{decode_rank_trace, read_mpi_recording, read_rank_trace};
pub use reader::{
    CostSamples, Counted, Creation, CreationKind, Damage, ExtensionRecords, FutexOp, FutexOps,
    LockTrace, OmpOp, OmpOps, Ops, RawOp, RecordsAhead, ThreadTrace, NO_SLOT, NO_STACK, OMP_EVENTS,
};
pub use writer::{BuiltSamples, BuiltStack, TraceBuilder};

/// Errors reading a trace. Every message names the file.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// The file could not be opened or read.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The file is not a trace this version of contend can read.
    #[error("{}: {problem}", path.display())]
    Format {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        problem: String,
    },
}

impl TraceError {
    pub(crate) fn format(path: &Path, problem: impl Into<String>) -> TraceError {
        TraceError::Format {
            path: path.to_path_buf(),
            problem: problem.into(),
        }
    }
}

/// The whole of `path`, read (not mapped: a file on a full file system
/// cannot kill the reader); `None` when it does not exist.
pub(crate) fn read_if_present(path: &Path) -> Result<Option<Vec<u8>>, TraceError> {
    match std::fs::read(path) {
        Ok(b) => Ok(Some(b)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(TraceError::Io {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// The head the recorder's side files share (the probe events, the futex
/// calls), `header_size` bytes: `magic`, the format version and the header
/// size (u32 LE each), zeros after (a format puts its own fields there).
/// [`side_file_header`] checks it.
pub(crate) fn side_file_head(magic: &[u8; 8], version: u32, header_size: usize) -> Vec<u8> {
    let mut h = vec![0u8; header_size.max(16)];
    h[0..8].copy_from_slice(magic);
    h[8..12].copy_from_slice(&version.to_le_bytes());
    h[12..16].copy_from_slice(&(header_size as u32).to_le_bytes());
    h
}

/// A side file of the recorder written in whole-record batches: records
/// are queued in memory and written 64 KiB at a time with one `write(2)`,
/// so a reader of a file cut short (the recorder killed) sees whole records
/// up to the last batch.
#[derive(Debug)]
pub(crate) struct BatchWriter {
    file: std::fs::File,
    path: std::path::PathBuf,
    buf: Vec<u8>,
}

impl BatchWriter {
    /// Bytes queued before a batch is written.
    const BATCH: usize = 64 * 1024;

    /// Creates `path` (it must not exist) and writes `head`. Errors: it
    /// cannot be created or written.
    pub(crate) fn create(path: &Path, head: &[u8]) -> Result<BatchWriter, TraceError> {
        use std::io::Write;
        let io = |source| TraceError::Io {
            path: path.to_path_buf(),
            source,
        };
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path)
            .map_err(io)?;
        file.write_all(head).map_err(io)?;
        Ok(BatchWriter {
            file,
            path: path.to_path_buf(),
            buf: Vec::with_capacity(Self::BATCH),
        })
    }

    /// Queues one record, encoded by `encode` into the batch; writes the
    /// batch when it is full.
    pub(crate) fn push(&mut self, encode: impl FnOnce(&mut Vec<u8>)) -> Result<(), TraceError> {
        encode(&mut self.buf);
        if self.buf.len() >= Self::BATCH {
            self.flush()?;
        }
        Ok(())
    }

    /// Writes the queued records with one `write(2)`.
    pub(crate) fn flush(&mut self) -> Result<(), TraceError> {
        use std::io::Write;
        if self.buf.is_empty() {
            return Ok(());
        }
        let r = self.file.write_all(&self.buf);
        self.buf.clear();
        r.map_err(|source| TraceError::Io {
            path: self.path.clone(),
            source,
        })
    }
}

/// Checks the head the recorder's side files share (the probe events, the
/// futex calls): 8 bytes of `magic`, the format version (u32 LE) that must
/// be `version`, and the header's size in bytes (u32 LE), at least
/// `min_header` and within the file. Returns the header size. `what` names
/// the kind of file in the errors ("probe-event").
pub(crate) fn side_file_header(
    path: &Path,
    bytes: &[u8],
    magic: &[u8; 8],
    version: u32,
    min_header: usize,
    what: &str,
) -> Result<usize, TraceError> {
    let u32_at = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap());
    if bytes.len() < min_header.max(16) || &bytes[0..8] != magic {
        return Err(TraceError::format(
            path,
            format!("not a contend {what} file (bad magic)"),
        ));
    }
    let found = u32_at(8);
    if found != version {
        return Err(TraceError::format(
            path,
            format!("{what} format version {found}, this contend reads version {version}"),
        ));
    }
    let header = u32_at(12) as usize;
    if header < min_header || header > bytes.len() {
        return Err(TraceError::format(
            path,
            format!("unsupported header size {header}"),
        ));
    }
    Ok(header)
}
