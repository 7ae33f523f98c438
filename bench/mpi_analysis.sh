#!/usr/bin/env bash
# MPI wait-state analysis time for EVENTS MPI events (default one million)
# on RANKS ranks: a synthetic ring halo exchange with Allreduce and Barrier
# built in memory by crates/contend/examples/mpi_synthetic.rs, analysed
# (matching, patterns, per-rank and per-site report, and the root-cause,
# critical-path and statistics passes, each also timed alone) ROUNDS times; the
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

# A real recording: Debian's hpcc (bench/mpi_hpccinf.txt: HPL N=600 on a 2x2 grid, the other HPC
# Challenge tests at their defaults), 4 Open MPI ranks oversubscribed,
# recorded with `contend record --mpi`; reading mpi/ and analysing it timed
# separately (medians of ROUNDS), then the whole `contend report`.
if command -v hpcc >/dev/null && command -v mpirun.openmpi >/dev/null; then
  H="$OUT/hpcc"
  rm -rf "$H" && mkdir -p "$H"
  cp "$ROOT/bench/mpi_hpccinf.txt" "$H/hpccinf.txt"
  (cd "$H" && timeout 600 "$CONTEND" record --mpi -o rec.data -- mpirun.openmpi --allow-run-as-root \
    --oversubscribe --mca mpi_yield_when_idle 1 -np 4 hpcc >/dev/null)
  echo "hpcc trace: $(du -sh "$H/rec.data/mpi" | cut -f1) in mpi/"
  "$ROOT/target/release/examples/mpi_synthetic" --read "$H/rec.data" "$ROUNDS"
  /usr/bin/time -f "%e %M" -o "$OUT/mpi_time.txt" "$CONTEND" report "$H/rec.data" --format json >/dev/null
  read -r w m <"$OUT/mpi_time.txt"
  echo "contend report of the hpcc recording (locks, service, MPI): wall ${w} s, peak RSS ${m} KiB"
else
  echo "hpcc or mpirun.openmpi not installed: real-trace part skipped"
fi
