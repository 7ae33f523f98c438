//! # contend-record
//!
//! Everything `contend` does while a program runs: the launcher that
//! preloads the in-process collector and writes a recording directory
//! ([`launch`], `contend record -- CMD`), attaching to a running process
//! ([`mod@attach`], `contend record -p PID`), the service-time [`sampler`],
//! the performance [`counters`] (`perf_event_open`), the thread lifetimes
//! and function uprobes of the interference analysis ([`probes`], with
//! [`functions`] resolving `--function` names and [`hot`] choosing
//! `--hot-functions`), the scale runner
//! ([`scale_run`], `contend scale`), the memory contention generator
//! ([`stress`], `contend stress memory`) and the NUMA measurements
//! ([`numa`]: latency calibration, data-address sampling, page moves).
//! [`buildid`] records the build ID of every mapped object of a recording
//! and copies the files into the build-id cache.
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
pub mod buildid;
pub mod chunk_prep;
pub mod counters;
pub mod cpus;
pub mod executable;
pub mod functions;
pub mod futex_trace;
pub mod host;
pub mod hot;
pub mod launch;
pub mod mpi;
pub mod numa;
pub mod probes;
pub mod sampler;
pub mod scale_run;
pub mod sched_events;
mod shared_map;
pub mod signals;
pub mod sparse;
pub mod stress;
pub mod tracefs;

pub use attach::{attach, AttachOptions};
pub use contend_collector::install_region_header;
pub use launch::{record, record_observed, RecordError, RecordOptions, RecordOutcome, RunObserver};
pub use signals::Interrupt;
