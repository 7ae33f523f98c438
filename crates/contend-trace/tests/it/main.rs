//! Integration tests of `contend-trace`: the readers on traces written by
//! the builder and by the collector, damaged, truncated, sparse and
//! unreadable files, and the Rust mirrors of the format headers checked
//! against the C headers themselves. One test binary.

mod damaged_indices;
mod file_reading;
mod format_layout;
mod reader;
mod trace_versions;
