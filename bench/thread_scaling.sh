#!/usr/bin/env bash
# Thread scaling of the recording's perturbation (HaLock, Huang et al. PACT
# 2012, Figure 6) and the non-temporal-store experiment: bench/thread_scaling.c
# (each thread streams through its own part of TOTAL_MIB, taking a shared
# mutex every BLOCK_KIB) at each of THREADS, run plainly, under `contend
# record`, under `contend record --light`, and under `contend record` with
# non-temporal record stores (CONTEND_NT_STORES=1). Within a round the four
# modes run back to back; ROUNDS rounds. The program measures itself, so
# the launcher and the trace's finishing are not in its figures: its CPU
# time (all threads, user + system; what the overhead is computed from, as
# it leaves out time descheduled for other work on this shared machine)
# and its wall time (first worker's start to last worker's end).
# Overhead = median recorded / median plain − 1, per thread count; then
# the paired per-round overheads (CPU time, and wall time, which shows
# work a mode moves before the workers start) with 90 % bootstrap
# intervals, and the goal's ratio (overhead at the most threads over that
# at the fewest).
# MODES chooses the recorded modes (default "default light nt"); `old` and
# `old-light` run the binary CONTEND_OLD names, for a before/after in one
# run (e.g. MODES="old default old-light light"); `noprep` and
# `light-noprep` are the two modes without the launcher's chunk preparer
# (CONTEND_PREPARE_CHUNKS=0); `noslots` and `light-noslots` the two modes
# with every thread claiming chunks of its own (CONTEND_SLOTS=0: no slot
# chunks, trace_format.h); `schedstat` and `light-schedstat` the two
# modes with the sampler on schedstat instead of the scheduler events
# (CONTEND_SERVICE_SOURCE=schedstat); `preload` and `preload-light` the
# collector alone, without the launcher.
source "$(dirname "$0")/common.sh"
ROUNDS=${ROUNDS:-5}
THREADS=${THREADS:-"2 8 32 128 512"}
TOTAL_MIB=${TOTAL_MIB:-2048}
BLOCK_KIB=${BLOCK_KIB:-32}
gcc -std=c11 -Wall -Wextra -Werror -O2 -g -pthread -o "$OUT/thread_scaling" "$ROOT/bench/thread_scaling.c"
machine
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
# `preload` and `preload-light`: the collector alone, preloaded with the
# environment `contend record` gives a program, without the launcher (no
# sampler, no scheduler events, no chunk preparer).
read -r PRELOAD_SO PRELOAD_CLOCK PRELOAD_HZ < <(collector_env "$CONTEND" scaling)
preload() { # $1 = light flag, then the program's arguments
  local light=$1; shift
  rm -rf "$OUT/scaling-preload.data" && mkdir -p "$OUT/scaling-preload.data/locks"
  CONTEND_DIR="$OUT/scaling-preload.data" CONTEND_CLOCK="$PRELOAD_CLOCK" CONTEND_TSC_HZ="$PRELOAD_HZ" \
    CONTEND_STACK_EVERY=0 CONTEND_LIGHT="$light" LD_PRELOAD="$PRELOAD_SO" "$@"
}
run() { # $1 = mode, $2 = threads; prints "cpu_ns,run_ns"
  local out
  case "$1" in
    preload) out=$(preload 0 "$OUT/thread_scaling" "$2" "$TOTAL_MIB" 1 "$BLOCK_KIB") ;;
    preload-light) out=$(preload 1 "$OUT/thread_scaling" "$2" "$TOTAL_MIB" 1 "$BLOCK_KIB") ;;
    plain) out=$("$OUT/thread_scaling" "$2" "$TOTAL_MIB" 1 "$BLOCK_KIB") ;;
    default) out=$("$CONTEND" record --force -o "$OUT/scaling.data" -- "$OUT/thread_scaling" "$2" "$TOTAL_MIB" 1 "$BLOCK_KIB" 2>/dev/null) ;;
    light) out=$("$CONTEND" record --light --force -o "$OUT/scaling.data" -- "$OUT/thread_scaling" "$2" "$TOTAL_MIB" 1 "$BLOCK_KIB" 2>/dev/null) ;;
    old) out=$("$CONTEND_OLD" record --force -o "$OUT/scaling.data" -- "$OUT/thread_scaling" "$2" "$TOTAL_MIB" 1 "$BLOCK_KIB" 2>/dev/null) ;;
    old-light) out=$("$CONTEND_OLD" record --light --force -o "$OUT/scaling.data" -- "$OUT/thread_scaling" "$2" "$TOTAL_MIB" 1 "$BLOCK_KIB" 2>/dev/null) ;;
    nt) out=$(CONTEND_NT_STORES=1 "$CONTEND" record --force -o "$OUT/scaling.data" -- "$OUT/thread_scaling" "$2" "$TOTAL_MIB" 1 "$BLOCK_KIB" 2>/dev/null) ;;
    noprep) out=$(CONTEND_PREPARE_CHUNKS=0 "$CONTEND" record --force -o "$OUT/scaling.data" -- "$OUT/thread_scaling" "$2" "$TOTAL_MIB" 1 "$BLOCK_KIB" 2>/dev/null) ;;
    light-noprep) out=$(CONTEND_PREPARE_CHUNKS=0 "$CONTEND" record --light --force -o "$OUT/scaling.data" -- "$OUT/thread_scaling" "$2" "$TOTAL_MIB" 1 "$BLOCK_KIB" 2>/dev/null) ;;
    noslots) out=$(CONTEND_SLOTS=0 "$CONTEND" record --force -o "$OUT/scaling.data" -- "$OUT/thread_scaling" "$2" "$TOTAL_MIB" 1 "$BLOCK_KIB" 2>/dev/null) ;;
    light-noslots) out=$(CONTEND_SLOTS=0 "$CONTEND" record --light --force -o "$OUT/scaling.data" -- "$OUT/thread_scaling" "$2" "$TOTAL_MIB" 1 "$BLOCK_KIB" 2>/dev/null) ;;
    schedstat) out=$(CONTEND_SERVICE_SOURCE=schedstat "$CONTEND" record --force -o "$OUT/scaling.data" -- "$OUT/thread_scaling" "$2" "$TOTAL_MIB" 1 "$BLOCK_KIB" 2>/dev/null) ;;
    light-schedstat) out=$(CONTEND_SERVICE_SOURCE=schedstat "$CONTEND" record --light --force -o "$OUT/scaling.data" -- "$OUT/thread_scaling" "$2" "$TOTAL_MIB" 1 "$BLOCK_KIB" 2>/dev/null) ;;
  esac
  sed 's/.*run_ns=\([0-9]*\) cpu_ns=\([0-9]*\).*/\2,\1/' <<<"$out"
}
read -ra modes <<<"plain ${MODES:-default light nt}"
header="threads  plain_ms"
for m in "${modes[@]:1}"; do header+="  ${m}_ms  ${m}"; done
echo "$header   (CPU ms, overhead against plain; wall ms below)"
rm -f "$OUT/thread_scaling_runs.txt"
for t in $THREADS; do
  declare -A runs=()
  for i in $(seq "$ROUNDS"); do
    for m in "${modes[@]}"; do runs[$m]+="$(run "$m" "$t") "; done
  done
  declare -A cpu=() wall=()
  for m in "${modes[@]}"; do
    cpu[$m]=$(tr ' ' '\n' <<<"${runs[$m]}" | sed '/^$/d' | cut -d, -f1 | median)
    wall[$m]=$(tr ' ' '\n' <<<"${runs[$m]}" | sed '/^$/d' | cut -d, -f2 | median)
  done
  line=$(printf '%-8s %8.1f' "$t" "$(awk -v c="${cpu[plain]}" 'BEGIN {print c/1e6}')")
  walls="  wall: plain $(awk -v c="${wall[plain]}" 'BEGIN {printf "%.1f", c/1e6}')"
  for m in "${modes[@]:1}"; do
    line+=$(awk -v p="${cpu[plain]}" -v c="${cpu[$m]}" 'BEGIN {printf "  %8.1f %7.1f%%", c/1e6, (c/p-1)*100}')
    walls+=$(awk -v m="$m" -v c="${wall[$m]}" 'BEGIN {printf " %s %.1f", m, c/1e6}')
  done
  echo "$line"
  echo "$walls"
  for m in "${modes[@]}"; do
    echo "  $m runs (cpu_ns,run_ns): ${runs[$m]}"
    echo "$t $m ${runs[$m]}" >>"$OUT/thread_scaling_runs.txt"
  done
  unset runs cpu wall
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
# The spread of the figures above: per round, each mode's CPU time over
# the same round's plain run (rounds run the modes back to back, so a
# round shares the guest's speed of the moment), the median of those
# ratios with a 90 % bootstrap interval (2,000 resamplings of the rounds);
# and per mode the goal's ratio, overhead at the most threads over
# overhead at the fewest, with its interval (undefined, "n/a", when the
# fewest threads' interval holds zero), and the same growth as a
# difference in percentage points, with its interval (defined then too).
python3 - "$OUT/thread_scaling_runs.txt" <<'PY'
import random, statistics, sys
runs, walls = {}, {}
for line in open(sys.argv[1]):
    t, m, *rs = line.split()
    runs[(int(t), m)] = [int(r.split(",")[0]) for r in rs]
    walls[(int(t), m)] = [int(r.split(",")[1]) for r in rs]
threads = sorted({t for t, _ in runs})
modes = [m for t, m in runs if t == threads[0] and m != "plain"]
rng = random.Random(1)
def paired(t, m, of=runs):
    return [c / p - 1 for c, p in zip(of[(t, m)], of[(t, "plain")])]
def interval(xs, f=statistics.median, n=2000):
    bs = sorted(f([rng.choice(xs) for _ in xs]) for _ in range(n))
    return bs[int(0.05 * n)], bs[int(0.95 * n) - 1]
def print_paired(title, of):
    print(f"{title} per round (median, 90 % bootstrap interval):")
    for t in threads:
        cells = []
        for m in modes:
            xs = paired(t, m, of)
            lo, hi = interval(xs)
            cells.append(f"{m} {statistics.median(xs) * 100:+.1f} % [{lo * 100:+.1f}, {hi * 100:+.1f}]")
        print(f"  {t:>4} threads: " + "; ".join(cells))
print_paired("paired overhead", runs)
# The same of the wall time (first worker's start to last worker's end):
# work a mode moves before the workers' start (out of their running
# time) leaves their CPU time as it was and shows here.
print_paired("paired wall-time overhead", walls)
if len(threads) > 1:
    lo_t, hi_t = threads[0], threads[-1]
    for m in modes:
        a, b = paired(lo_t, m), paired(hi_t, m)
        lo, hi = interval(a)
        ratios = []
        for _ in range(2000):
            ra = statistics.median([rng.choice(a) for _ in a])
            rb = statistics.median([rng.choice(b) for _ in b])
            ratios.append(rb / ra if ra > 0 else float("inf"))
        ratios.sort()
        # the growth as a difference (defined when the fewest threads show
        # no overhead): overhead at the most threads less that at the fewest
        diffs = sorted(
            statistics.median([rng.choice(b) for _ in b]) - statistics.median([rng.choice(a) for _ in a])
            for _ in range(2000)
        )
        diff = f"; difference {(statistics.median(b) - statistics.median(a)) * 100:+.1f} points [{diffs[100] * 100:+.1f}, {diffs[1899] * 100:+.1f}]"
        if lo <= 0:
            print(f"  {m}: overhead at {hi_t} ÷ at {lo_t} threads n/a (the {lo_t}-thread interval holds zero){diff}")
        else:
            print(f"  {m}: overhead at {hi_t} ÷ at {lo_t} threads {statistics.median(b) / statistics.median(a):.2f} [{ratios[100]:.2f}, {ratios[1899]:.2f}]{diff}")
PY
