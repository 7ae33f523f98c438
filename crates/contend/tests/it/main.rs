//! Integration tests of the `contend` library: hand-built operation
//! sequences and traces with results worked out by hand (pairing, critical
//! path, MPI matching and wait states, the speed-up model), randomised
//! equivalence with reference implementations, and the renderers. One test
//! binary, so the suite links once.

mod architecture;
mod at_a_glance;
mod critical_path_across;
mod damaged_trace;
mod exports;
mod light_and_wake;
mod locks_analysis;
mod locks_equivalence;
mod mpi_analysis;
mod mpi_builders;
mod mpi_nonblocking;
mod mpi_root_causes;
mod numa_model;
mod pipeline;
mod recording_cost_sampled;
mod report_formats;
mod sci_metric;
mod sci_reuse;
mod site_attribution;
mod speedup_model;
