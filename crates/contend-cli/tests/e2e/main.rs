//! End-to-end tests of the `contend` binary: small C, C++, Fortran and
//! MPI programs (`tests/programs/`) built at test time, recorded with
//! `contend record`, reported with `contend report --format json`, their
//! numbers checked against what the programs measured themselves; the
//! golden JSON of the bundled examples; bad input and damaged recordings.
//! One test binary, so the suite links once; `common` holds the helpers.

#[macro_use]
mod common;

mod accuracy;
mod attach;
mod chunk_prep;
mod cli_messages;
mod counters;
mod creation_stacks;
mod critical_path_across;
mod cxx_functions;
mod damaged_traces;
mod export;
mod futex;
mod futex_exports;
mod futex_tracepoints;
mod glibc_locks;
mod go_programs;
mod golden;
mod heap_locks;
mod html_report;
mod light;
mod limits;
mod mariadb;
mod meters;
mod meters_record;
mod mpi_accuracy;
mod mpi_completeness;
mod mpi_f08;
mod mpi_real_apps;
mod mpi_record;
mod mpi_root_causes;
mod numa;
mod openmp;
mod openmp_gomp;
mod placement;
mod real_programs;
mod rebuild;
mod recording_cost;
mod robustness;
mod scale;
mod sci;
mod service;
mod service_sources;
mod sites;
mod thread_events;
mod thread_names;
mod viewer_exports;
