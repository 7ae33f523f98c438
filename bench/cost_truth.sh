#!/usr/bin/env bash
# The recording-cost estimate against the cost a program measures itself,
# in the same process (tests/programs/cost_truth.c): one thread alternates
# rounds of lock + unlock pairs through the interposed pthread functions
# (recorded) with rounds through glibc's own functions (never recorded),
# on MUTEXES distinct mutexes taken in a fixed pseudo-random order, each
# round timed with the thread's CPU clock; the fastest round of each kind
# counts. Measured cost per pair = fastest interposed − fastest direct. The
# report's estimates for that thread, per pair: the sampled one
# (`by_thread[].estimated_ns`) and the calibrated one (records ×
# `calibration.multi_threaded_record_ns` — the measured thread runs in a
# process with two threads; `record_ns` in recordings made before it
# existed — + the thread's slow path). Unlike whole-program
# CPU time, the alternation within one process keeps a guest whose speed
# changes from minute to minute from deciding the result.
# The program also gives the difference of the two kinds' means over every
# round (warm-up included): the recording's average cost over the same pairs
# the estimate covers, disturbed or not; both ratios are printed.
# REPS runs per mutex count; medians of the per-run ratios.
source "$(dirname "$0")/common.sh"
REPS=${REPS:-3}
PAIRS=${PAIRS:-100000}
ROUNDS=${ROUNDS:-6}
COUNTS=${COUNTS:-"1 64 4096 16384 32768"}
gcc -std=c11 -Wall -Wextra -Werror -O2 -pthread -o "$OUT/cost_truth" "$ROOT/tests/programs/cost_truth.c" -ldl
machine
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
for n in $COUNTS; do
  rows=()
  for r in $(seq "$REPS"); do
    line=$("$CONTEND" record --force -o "$OUT/cost_truth.data" -- "$OUT/cost_truth" "$n" "$PAIRS" "$ROUNDS" 2>/dev/null | grep '^{')
    rows+=("$("$CONTEND" report "$OUT/cost_truth.data" --format json | python3 -c '
import json, sys
truth = json.loads(sys.argv[1])
r = json.load(sys.stdin)["recording"]
t = [t for t in r["by_thread"] if t["tid"] == truth["tid"]][0]
pairs = truth["pairs_interposed"]
est = t["estimated_ns"] / pairs
k = r["calibration"]
cal = (t["records"] * (k.get("multi_threaded_record_ns") or k["record_ns"]) + t["slow_path_ns"]) / pairs
m = truth["truth_ns_per_pair"]
a = truth["truth_mean_ns_per_pair"]
print("%.1f,%.1f,%.1f,%.2f,%.2f,%.2f,%.1f,%.2f,%.2f" % (m, est, cal, est / m, cal / m, truth["interposed_spread"], a, est / a, cal / a))
' "$line")")
  done
  echo "$n mutexes, $PAIRS pairs x $ROUNDS rounds (+1 warm-up): runs (measured ns/pair, sampled estimate, calibrated estimate, sampled/measured, calibrated/measured, spread, measured from the means, sampled/that, calibrated/that): ${rows[*]}"
  printf '%s\n' "${rows[@]}" | awk -F, '{print $4}' | median | xargs printf "  fastest rounds: median sampled/measured %s; "
  printf '%s\n' "${rows[@]}" | awk -F, '{print $5}' | median | xargs printf "calibrated/measured %s\n"
  printf '%s\n' "${rows[@]}" | awk -F, '{print $8}' | median | xargs printf "  all rounds' means: median sampled/measured %s; "
  printf '%s\n' "${rows[@]}" | awk -F, '{print $9}' | median | xargs printf "calibrated/measured %s\n"
done
rm -rf "$OUT/cost_truth.data"
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
