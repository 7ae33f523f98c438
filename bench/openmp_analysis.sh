#!/usr/bin/env bash
# Time and peak memory of `contend report --format json` on an OpenMP
# recording: bench/omp_overhead.c built with clang -fopenmp (libomp, the
# OMPT tool), PAIRS uncontended omp_set_lock/omp_unset_lock pairs and
# REGIONS 2-thread parallel regions, recorded once. ROUNDS rounds, medians;
# peak memory per OpenMP event (the report's OpenMP mutex acquisitions and
# barrier waits). Then the same for bench/omp_two_threads.c, whose two
# threads each take PAIRS2 lock pairs (the threads' records analysed side
# by side). BASELINE=/path/to/an/older/contend runs that binary too,
# alternating with this one in every round. CONTEND_BIN=/path/to/contend
# measures that binary instead (with BENCH_NO_BUILD=1: nothing is built).
# KEEP_RECORDING=1 reuses $OUT/omp.data when it is there.
source "$(dirname "$0")/common.sh"
CONTEND=${CONTEND_BIN:-$CONTEND}
ROUNDS=${ROUNDS:-3}
PAIRS=${PAIRS:-5000000}
REGIONS=${REGIONS:-20000}
PAIRS2=${PAIRS2:-2500000}
BASELINE=${BASELINE:-}
if [ -z "${KEEP_RECORDING:-}" ] || [ ! -d "$OUT/omp.data" ]; then
  clang -O2 -fopenmp -o "$OUT/omp_overhead" "$ROOT/bench/omp_overhead.c"
  "$CONTEND" record -o "$OUT/omp.data" --force -- "$OUT/omp_overhead" "$PAIRS" "$REGIONS" >/dev/null
fi
if [ -z "${KEEP_RECORDING:-}" ] || [ ! -d "$OUT/omp2.data" ]; then
  clang -O2 -fopenmp -o "$OUT/omp_two_threads" "$ROOT/bench/omp_two_threads.c"
  "$CONTEND" record -o "$OUT/omp2.data" --force -- "$OUT/omp_two_threads" "$PAIRS2" >/dev/null
fi
machine
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
# OpenMP events (mutex acquisitions and barrier waits) of a recording.
events_of() {
  "$CONTEND" report "$1" --format json 2>/dev/null |
    python3 -c 'import json,sys; s=json.load(sys.stdin)["openmp"]["summary"]; print(s["mutex_events"] + s["barrier_events"])'
}
events=$(events_of "$OUT/omp.data")
echo "OpenMP events (mutex acquisitions and barrier waits): $events"
report_binaries
report_rounds "$OUT/omp.data" omp_times
report_summary omp_times "$events" "OpenMP events" event
events2=$(events_of "$OUT/omp2.data")
echo "two threads taking locks: OpenMP events $events2"
report_rounds "$OUT/omp2.data" omp2_times
report_summary omp2_times "$events2" "OpenMP events" event
