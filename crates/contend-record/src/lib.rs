//! # contend-record
//!
//! Everything `contend` does while a program runs: the launcher that
//! preloads the in-process collector and writes a recording directory
//! ([`launch`], `contend record -- CMD`), attaching to a running process
//! ([`attach`], `contend record -p PID`), the service-time [`sampler`],
//! the performance [`counters`] (`perf_event_open`), the scale runner
//! ([`scale_run`], `contend scale`) and the memory contention generator
//! ([`stress`], `contend stress memory`).
//!
//! Design constraints: this crate controls live processes (fork, exec,
//! signals, affinity, `perf_event_open`), so nearly all of `contend`'s
//! `unsafe` code lives here, each block with its reason; it writes the
//! files of `contend-trace` and knows nothing of the analyses. The
//! collector libraries it preloads are built from C by `contend-collector`
//! and embedded, so building this crate needs a C compiler; the offline
//! analyses (`contend`) do not depend on it.
#![deny(missing_docs)]

pub mod attach;
pub mod counters;
pub mod cpus;
pub mod executable;
pub mod host;
pub mod launch;
pub mod mpi;
pub mod sampler;
pub mod scale_run;
pub mod signals;
pub mod stress;

pub use attach::{attach, AttachOptions};
pub use launch::{record, record_observed, RecordError, RecordOptions, RecordOutcome, RunObserver};
pub use signals::Interrupt;
