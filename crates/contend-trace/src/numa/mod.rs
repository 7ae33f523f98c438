//! The NUMA files: what `contend numa calibrate` and `contend record
//! --numa` write, what a user may bring instead, and what the NUMA
//! analysis of `contend` reads (docs/numa.md describes every field).
//!
//! - [`latency`]: the calibrated latencies, `latency.json`
//!   ([`LatencyTable`]): `l_nocont`, `l_cont(m)`, `r_ki,nocont`,
//!   `r_ki,cont(m)` of Nikolopoulos (Section 2.3, Eq. 11 and 12), the time
//!   window of Eq. 2 and how they were measured.
//! - [`histogram`]: access histograms as CSV, per node pair
//!   (`from_node,to_node,accesses`, the N + 1 histograms of Section 2.3)
//!   and per page (`page,from_node,to_node,accesses`, for the migration
//!   algorithm of Section 3), and the sample file of a recording
//!   (`numa/samples.csv`: `pid,page,from_node,to_node,samples`), and the
//!   migration plans of `contend numa balance` (`pid,page,from_node,to_node,accesses`).
//! - [`sampler`]: `numa/sampler.json`, how a recording's samples were
//!   taken (method, period, what a sample stands for, what was lost), and
//!   [`read_numa_recording`], the NUMA part of a recording read at once.
//!
//! Reading never panics: a missing, truncated or malformed file is a
//! [`NumaFileError`] naming the file (and the line of a CSV) and the
//! problem.

pub mod histogram;
pub mod latency;
pub mod sampler;

use std::path::PathBuf;

pub use histogram::{NodeAccesses, PageAccesses, PageSamples, PlannedMove};
pub use latency::{Calibration, CurvePoint, LatencyTable};
pub use sampler::{read_numa_recording, NumaRecording, PeriodUnit, SamplerInfo, SamplingMethod};

/// The NUMA subdirectory of a recording.
pub const NUMA_DIR: &str = "numa";
/// The samples of a recording, inside [`NUMA_DIR`].
pub const SAMPLES_FILE: &str = "samples.csv";
/// How the samples were taken, inside [`NUMA_DIR`].
pub const SAMPLER_FILE: &str = "sampler.json";
/// A calibration copied into a recording (`contend record --numa
/// --numa-latency L.json`), inside [`NUMA_DIR`].
pub const LATENCY_FILE: &str = "latency.json";

/// Errors reading or writing a NUMA file. Every message names the file.
#[derive(Debug, thiserror::Error)]
pub enum NumaFileError {
    /// The file cannot be opened, read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The file is not JSON of the expected shape.
    #[error("{}: not a valid {what}: {source}", path.display())]
    Json {
        /// The file.
        path: PathBuf,
        /// What it should have been (`latency table (docs/numa.md)`).
        what: &'static str,
        /// The parser's message (with line and column).
        source: serde_json::Error,
    },
    /// The file parses but its content is inconsistent (wrong shapes,
    /// negative latencies, a missing header).
    #[error("{}: {problem}", path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        problem: String,
    },
    /// One line of a CSV file is wrong.
    #[error("{}:{line}: {problem}", path.display())]
    Row {
        /// The file.
        path: PathBuf,
        /// The line, counted from 1 (the header is line 1).
        line: usize,
        /// What is wrong with it.
        problem: String,
    },
}
