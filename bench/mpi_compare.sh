#!/usr/bin/env bash
# Two builds of the MPI reader and analysis against each other in one run,
# alternated (this guest runs at two speeds minutes apart): OLD_CONTEND and
# OLD_EXAMPLE are the `contend` binary and the `mpi_synthetic` example of
# the build before (e.g. from a `git worktree` of it); the build of this
# tree is the other side. On the recording of bench/mpi_analysis.sh
# (REC, default bench/out/hpcc/rec.data; run that script first): ROUNDS ×
# `mpi_synthetic --read` (read and analysis, medians of 5 inside each) and
# `contend report --format json` (wall, CPU, peak RSS); then the synthetic
# program (EVENTS calls on RANKS ranks, one round: analysis and peak RSS).
source "$(dirname "$0")/common.sh"
: "${OLD_CONTEND:?the contend binary of the build before}"
: "${OLD_EXAMPLE:?its mpi_synthetic example}"
REC=${REC:-$OUT/hpcc/rec.data}
ROUNDS=${ROUNDS:-3}
EVENTS=${EVENTS:-1000000}
RANKS=${RANKS:-16}
(cd "$ROOT" && cargo build --release --quiet -p contend --example mpi_synthetic)
NEW_EXAMPLE="$ROOT/target/release/examples/mpi_synthetic"
[ -d "$REC/mpi" ] || { echo "$REC: no mpi/ (run bench/mpi_analysis.sh first)" >&2; exit 1; }
machine
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
for _ in $(seq "$ROUNDS"); do
  echo "old: $("$OLD_EXAMPLE" --read "$REC" 5 | head -1)"
  echo "new: $("$NEW_EXAMPLE" --read "$REC" 5 | head -1)"
done
for _ in $(seq "$ROUNDS"); do
  for side in old new; do
    bin=$OLD_CONTEND
    [ "$side" = new ] && bin=$CONTEND
    /usr/bin/time -f "report $side: wall %e s, user %U s, sys %S s, peak RSS %M KiB" \
      "$bin" report "$REC" --format json 2>&1 >/dev/null | tail -1
  done
done
for _ in $(seq "$ROUNDS"); do
  for side in old new; do
    bin=$OLD_EXAMPLE
    [ "$side" = new ] && bin=$NEW_EXAMPLE
    /usr/bin/time -f "synthetic $side: whole process %e s, peak RSS %M KiB" \
      "$bin" "$EVENTS" "$RANKS" 1 2>&1 | grep -E "^analysis of|^synthetic $side"
  done
done
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
