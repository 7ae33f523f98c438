#!/usr/bin/env bash
# MPI wait-state analysis time for EVENTS MPI events (default one million)
# on RANKS ranks: a synthetic ring halo exchange with Allreduce and Barrier
# built in memory by crates/contend/examples/mpi_synthetic.rs, analysed
# (matching, patterns, per-rank and per-site report) ROUNDS times; the
# median is reported, with the peak memory of the whole process.
source "$(dirname "$0")/common.sh"
EVENTS=${EVENTS:-1000000}
RANKS=${RANKS:-16}
ROUNDS=${ROUNDS:-5}
(cd "$ROOT" && cargo build --release --quiet -p contend --example mpi_synthetic)
machine
/usr/bin/time -f "%e %M" -o "$OUT/mpi_time.txt" \
  "$ROOT/target/release/examples/mpi_synthetic" "$EVENTS" "$RANKS" "$ROUNDS"
read -r w m <"$OUT/mpi_time.txt"
echo "whole process (build + $ROUNDS analyses): wall ${w} s, peak RSS ${m} KiB"
