#!/usr/bin/env bash
# Added cost per block execution of the interference (SCI) sources: a
# contend/region.h BEGIN+END pair, a -finstrument-functions entry+exit
# (--instrumented-functions), a uprobe+uretprobe pair (--function, needs
# root or CAP_PERFMON); and the analysis throughput on the region
# recording. Runs bench/sci_overhead.c alternately without and with
# recording (ROUNDS times each) and reports medians and the differences
# of the CPU time per execution (the thread's own, user + kernel: time it
# spent preempted by other programs does not count).
#
# CONTEND=path/to/contend skips the release build (the collector is built
# at -O2 in every profile, so the recording cost is the same; the analysis
# throughput is only meaningful with a release build).
if [ -n "${CONTEND:-}" ]; then
  set -euo pipefail
  ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  OUT="$ROOT/bench/out"
  mkdir -p "$OUT"
  machine() {
    echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) CPUs, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -sr), clocksource $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)"
  }
  median() { sort -g | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
else
  source "$(dirname "$0")/common.sh"
fi
ROUNDS=${ROUNDS:-5}
PAIRS=${PAIRS:-5000000}
PROBES=${PROBES:-200000}
INC=$("$CONTEND" include-dir)
gcc -std=c11 -Wall -Wextra -Werror -O2 -g -pthread -I "$INC" -o "$OUT/sci_overhead" "$ROOT/bench/sci_overhead.c"
gcc -std=c11 -Wall -Wextra -Werror -O2 -g -pthread -I "$INC" -finstrument-functions \
  -o "$OUT/sci_overhead_hooks" "$ROOT/bench/sci_overhead.c"
machine
ns() { sed -n 's/^ns=\([0-9.]*\).*/\1/p'; }
measure() { # $1 label, $2 binary, $3 mode, $4 count, rest: contend record flags
  local label=$1 bin=$2 mode=$3 n=$4
  shift 4
  local base=() rec=() mb mr
  for _ in $(seq "$ROUNDS"); do
    base+=("$("$bin" "$mode" "$n" | ns)")
    rec+=("$("$CONTEND" record --force -o "$OUT/sci.data" "$@" -- "$bin" "$mode" "$n" 2>/dev/null | ns)")
  done
  mb=$(printf '%s\n' "${base[@]}" | median)
  mr=$(printf '%s\n' "${rec[@]}" | median)
  echo "$label: without recording ${mb} ns, with recording ${mr} ns; added $(awk -v a="$mr" -v b="$mb" 'BEGIN {printf "%.1f", a-b}') ns (medians of $ROUNDS runs of $n)"
  echo "  runs without: ${base[*]}"
  echo "  runs with:    ${rec[*]}"
}
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
measure "uprobe + uretprobe pair (--function probed)" "$OUT/sci_overhead" call "$PROBES" --function probed
measure "-finstrument-functions entry + exit (--instrumented-functions)" "$OUT/sci_overhead_hooks" call "$PAIRS" --instrumented-functions
measure "region BEGIN + END pair" "$OUT/sci_overhead" region "$PAIRS"
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
# Analysis throughput on the last recording (PAIRS region executions), wall
# time; bench/sci_analysis_throughput.sh measures it in CPU time beside the
# lock analysis.
t0=$(date +%s.%N)
"$CONTEND" report "$OUT/sci.data" --format json >"$OUT/sci.json"
t1=$(date +%s.%N)
python3 - "$OUT/sci.json" "$t0" "$t1" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
n = r["sci"]["summary"]["executions"]
s = float(sys.argv[3]) - float(sys.argv[2])
print(f"contend report of {n} region executions: {s:.2f} s, {n / s / 1e6:.2f} million blocks/s (whole report)")
PY
