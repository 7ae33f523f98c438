#!/usr/bin/env bash
# Cost of the service-time sampler of `contend record` (docs/benchmarks.md,
# "Service-time sampler"), for both of its sources: `schedstat` (one pread
# of /proc/<pid>/task/<tid>/schedstat per thread and tick) and
# `sched-events` (context-switch and wake-up records through perf rings,
# crates/contend-record/src/sched_events.rs; needs root or
# perf_event_paranoid -1). A target with N mostly sleeping threads (each
# wakes every PERIOD_MS = 50 ms for a few µs), for N in THREAD_COUNTS
# (default "64 512"), runs SECONDS_RUN (default 5); ROUNDS (default 5)
# times, each round alternating the sources at every N:
#
# 1. the sampler alone (example `sampler_overhead`, CONTEND_SERVICE_SOURCE
#    set) at the default 10 ms interval: its thread's own CPU time, exact
#    (CLOCK_THREAD_CPUTIME_ID), and the target's own CPU time (getrusage:
#    with sched-events it holds the kernel's cost of writing the records,
#    paid in the target's threads);
# 2. the whole launcher: `/usr/bin/time` on `contend record` (launcher +
#    target) minus the target's own getrusage CPU time; this also holds the
#    launcher's start-up and the collector's work inside the target, so it
#    is an upper bound, at 10 ms resolution.
#
# Goal: the sampler costs < 1% of one core.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
THREAD_COUNTS=${THREAD_COUNTS:-64 512}
SOURCES=${SOURCES:-schedstat sched-events}
SECONDS_RUN=${SECONDS_RUN:-5}
PERIOD_MS=${PERIOD_MS:-50}
ROUNDS=${ROUNDS:-5}
(cd "$ROOT" && cargo build --release --quiet --example sampler_overhead -p contend-record)
EXAMPLE="$ROOT/target/release/examples/sampler_overhead"
D="$OUT/sampler_overhead"
rm -rf "$D" && mkdir -p "$D"
gcc -std=c11 -Wall -Wextra -Werror -O2 -pthread -o "$D/sampler_threads" "$ROOT/bench/sampler_threads.c"
machine
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "target: THREAD_COUNTS=($THREAD_COUNTS) threads waking every $PERIOD_MS ms, $SECONDS_RUN s; $ROUNDS rounds; sources: $SOURCES"

declare -A alone launcher per_tick target
for r in $(seq "$ROUNDS"); do
  for n in $THREAD_COUNTS; do
    for src in $SOURCES; do
      k="$n/$src"
      out=$(CONTEND_SERVICE_SOURCE=$src "$EXAMPLE" "$D/alone.csamp" 10 "$D/sampler_threads" "$n" "$SECONDS_RUN" "$PERIOD_MS")
      line=$(grep sampler_cpu_s <<<"$out")
      tcpu=$(sed -n 's/target_cpu_s=//p' <<<"$out")
      used=$(sed 's/.* source=\([a-z-]*\).*/\1/' <<<"$line")
      [ "$used" = "$src" ] || echo "round $r, $k: WARNING: the sampler used $used"
      echo "round $r, $k, sampler alone: $line target_cpu_s=$tcpu"
      alone[$k]+="$(sed 's/.*share_of_one_core=\([0-9.]*\)%.*/\1/' <<<"$line") "
      per_tick[$k]+="$(sed 's/.*per_tick_us=\([0-9.]*\).*/\1/' <<<"$line") "
      target[$k]+="$tcpu "

      CONTEND_SERVICE_SOURCE=$src /usr/bin/time -f "%e %U %S" -o "$D/time.txt" "$CONTEND" record -o "$D/rec.data" --force -- \
        "$D/sampler_threads" "$n" "$SECONDS_RUN" "$PERIOD_MS" >"$D/target.out" 2>"$D/record.err"
      read -r wall user sys <"$D/time.txt"
      tc=$(sed -n 's/target_cpu_s=//p' "$D/target.out")
      share=$(awk -v w="$wall" -v u="$user" -v s="$sys" -v t="$tc" 'BEGIN {printf "%.3f", 100 * (u + s - t) / w}')
      echo "round $r, $k, contend record: wall $wall s, launcher+target CPU $(awk -v u="$user" -v s="$sys" 'BEGIN {print u + s}') s, target $tc s -> launcher $share% of one core"
      launcher[$k]+="$share "
    done
  done
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
med() { tr ' ' '\n' <<<"$1" | grep . | median; }
for n in $THREAD_COUNTS; do
  for src in $SOURCES; do
    k="$n/$src"
    echo "median $k: sampler alone $(med "${alone[$k]}")% of one core ($(med "${per_tick[$k]}") µs per tick), target CPU $(med "${target[$k]}") s, whole launcher $(med "${launcher[$k]}")% (upper bound)"
  done
  if [[ " $SOURCES " == *" schedstat "* && " $SOURCES " == *" sched-events "* ]]; then
    echo "ratio sched-events/schedstat at $n threads: sampler alone $(awk -v a="$(med "${alone[$n/sched-events]}")" -v b="$(med "${alone[$n/schedstat]}")" 'BEGIN {printf "%.3f", a / b}'), target CPU $(awk -v a="$(med "${target[$n/sched-events]}")" -v b="$(med "${target[$n/schedstat]}")" 'BEGIN {printf "%.3f", a / b}')"
  fi
done
"$CONTEND" report "$D/rec.data" --format json | grep -E '"(samples|processes|active_threads|cpu_s|wall_s|source|sched_event_threads)"' | head -8 || true
