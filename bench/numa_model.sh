#!/usr/bin/env bash
# Speed of the NUMA model (docs/benchmarks.md, "NUMA model"): Eq. 1-13 for
# 8 and 64 nodes, and the migration algorithm (Section 3.2) on a million
# pages over 8 and 64 nodes (example crates/contend/examples/numa_model.rs).
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
(cd "$ROOT" && cargo build --release --quiet --example numa_model -p contend)
machine
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
"$ROOT/target/release/examples/numa_model" "${REPEATS:-20}"
