//! # contend
//!
//! The offline side of the `contend` contention profiler: a recording read
//! once, the analyses, the report, its renderings, the exports and the
//! comparison of runs. The pipeline runs one way, and the modules follow
//! it:
//!
//! ```text
//! recording ─▶ analysis (locks, service, counters, mpi, …) ─▶ report ─▶ render (text, md, latex, csv, json)
//!  (read once)  ANALYZERS, each returns its own section        │        compare (several reports)
//!                and keeps its per-event results ─────────────┴──────▶ export (folded, …)
//! ```
//!
//! - [`recording`]: [`Recording::open`](recording::Recording::open) reads
//!   every part of a recording directory once (formats of `contend-trace`).
//! - [`analysis`]: [`analyze`] runs every registered
//!   [`Analyzer`](analysis::Analyzer) ([`locks`] with the critical path,
//!   [`service`] time, [`counters`], [`mpi`] wait states, [`sci`]
//!   interference of blocks of code) with the shared
//!   [`symbols`], assembles the [`report::Report`] and keeps the per-event
//!   results for exporters in an [`analysis::Analysis`].
//! - [`report`]: the report model, the section trait and the
//!   format-neutral table layout; [`render`]: text, Markdown, LaTeX, CSV,
//!   JSON; [`compare`]: several reports side by side; [`export`]: formats
//!   written from the per-event results; [`speedup`]: the speed-up loss
//!   model of a scale directory, its own document; [`numa`]: memory
//!   contention on NUMA machines (Nikolopoulos Eq. 1–14, page migration),
//!   a report section and its own document; [`config`]:
//!   `contend.toml` and durations.
//!
//! Design constraints: nothing here runs or controls a process (that is
//! `contend-record`), so this crate builds without a C compiler and reads
//! recordings made on other machines; analyses never see command-line
//! parsing (the binary turns flags into the plain structs here); every
//! error names the file and the problem; a damaged trace is analysed as far
//! as it goes and the damage is reported, never hidden. docs/architecture.md
//! says where each concept lives.
#![deny(missing_docs)]

pub mod analysis;
mod chunked_sort;
pub mod compare;
pub mod config;
pub mod counters;
pub mod export;
pub mod futex;
pub mod locks;
pub mod meters;
pub mod mpi;
pub mod numa;
pub mod openmp;
pub mod recording;
pub mod recording_cost;
pub mod render;
pub mod report;
pub mod sci;
pub mod service;
pub mod speedup;
pub mod symbols;

pub use analysis::{analyze, Analysis, AnalysisOptions, NoProgress, Progress};
pub use recording::Recording;

/// xorshift64 (Marsaglia, "Xorshift RNGs", J. Stat. Softw. 2003, shifts
/// 13, 7, 17) for the unit tests' random cases: the same cases on every
/// run, no dependency.
#[cfg(test)]
pub(crate) struct TestRng(pub(crate) u64);

#[cfg(test)]
impl TestRng {
    /// The next 64-bit value.
    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// The next value modulo `n` (`n` > 0).
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}
