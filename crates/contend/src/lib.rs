//! # contend
//!
//! Analyses and reports of the `contend` contention profiler. The pipeline is
//! visible in the modules: a [`recording`] directory (written by
//! [`record`] and the in-process collector, described by [`meta`]) is read
//! through `contend_trace`, addresses are resolved by [`symbolize`], the
//! [`locks`] analysis pairs operations into lock events and marks the
//! critical path, and [`report`] renders results in text, Markdown, LaTeX,
//! CSV or JSON, alone or as a [`compare`] of several runs; [`config`] reads
//! `contend.toml`.
//!
//! Design constraints: analyses never see command-line parsing (the binary
//! turns flags into the plain structs here); every error names the file and
//! the problem; a damaged trace is analysed as far as it goes and the damage
//! is reported, never hidden.
#![deny(missing_docs)]

pub mod compare;
pub mod config;
pub mod counters;
pub mod locks;
pub mod mpi;
pub mod recording;
pub mod report;
pub mod service;
pub mod speedup;
