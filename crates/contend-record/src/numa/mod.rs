//! Everything NUMA that runs on the live machine (Nikolopoulos,
//! "Quantifying Contention and Balancing Memory Load on Hardware DSM
//! Multiprocessors"): the machine's nodes ([`topology`]), the kernel's
//! memory-policy calls ([`memory`]: `mbind`, `move_pages` query and
//! apply), the latency micro-benchmark of `contend numa calibrate`
//! ([`mod@calibrate`], the seed's Section 2.2 and Figure 1), the data-address
//! sampler of `contend record --numa` ([`sampler`], software or, where the
//! PMU has it, hardware: [`pmu`]).
//!
//! The model that uses what these measure is offline, in `contend::numa`;
//! the files they write are `contend_trace::numa`.

pub mod calibrate;
pub mod memory;
pub mod pmu;
pub mod sampler;
pub mod topology;

pub use calibrate::{calibrate, CalibrateError, CalibrateOptions};
pub use sampler::{MethodChoice, NumaSampler, NumaSamplerOptions, SampleSet};
pub use topology::Topology;

/// What `contend record --numa` records.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NumaRecordOptions {
    /// The sampler.
    pub sampler: NumaSamplerOptions,
    /// A latency table to store with the recording (`numa/latency.json`),
    /// so that `contend report` applies the model without being told.
    pub latency: Option<std::path::PathBuf>,
}
