#!/usr/bin/env bash
# Time and peak memory of `contend report --format json` on an OpenMP
# recording: bench/omp_overhead.c built with clang -fopenmp (libomp, the
# OMPT tool), PAIRS uncontended omp_set_lock/omp_unset_lock pairs and
# REGIONS 2-thread parallel regions, recorded once. ROUNDS rounds, medians;
# peak memory per OpenMP event (the report's OpenMP mutex acquisitions and
# barrier waits). BASELINE=/path/to/an/older/contend runs that binary too,
# alternating with this one in every round. CONTEND_BIN=/path/to/contend
# measures that binary instead (with BENCH_NO_BUILD=1: nothing is built).
# KEEP_RECORDING=1 reuses $OUT/omp.data when it is there.
source "$(dirname "$0")/common.sh"
CONTEND=${CONTEND_BIN:-$CONTEND}
ROUNDS=${ROUNDS:-3}
PAIRS=${PAIRS:-5000000}
REGIONS=${REGIONS:-20000}
BASELINE=${BASELINE:-}
if [ -z "${KEEP_RECORDING:-}" ] || [ ! -d "$OUT/omp.data" ]; then
  clang -O2 -fopenmp -o "$OUT/omp_overhead" "$ROOT/bench/omp_overhead.c"
  "$CONTEND" record -o "$OUT/omp.data" --force -- "$OUT/omp_overhead" "$PAIRS" "$REGIONS" >/dev/null
fi
machine
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
events=$("$CONTEND" report "$OUT/omp.data" --format json 2>/dev/null |
  python3 -c 'import json,sys; s=json.load(sys.stdin)["openmp"]["summary"]; print(s["mutex_events"] + s["barrier_events"])')
echo "OpenMP events (mutex acquisitions and barrier waits): $events"
report_binaries
report_rounds "$OUT/omp.data" omp_times
report_summary omp_times "$events" "OpenMP events" event
