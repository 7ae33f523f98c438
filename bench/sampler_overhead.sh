#!/usr/bin/env bash
# Cost of the service-time sampler of `contend record` (docs/benchmarks.md,
# "Service-time sampler"): a target with THREADS (default 64) mostly
# sleeping threads (each wakes every PERIOD_MS = 50 ms for a few µs) runs
# SECONDS (default 5); ROUNDS (default 5) times each:
#
# 1. the sampler alone (example `sampler_overhead`) at the default 10 ms
#    interval: its thread's own CPU time, exact (CLOCK_THREAD_CPUTIME_ID);
# 2. the whole launcher: `/usr/bin/time` on `contend record` (launcher +
#    target) minus the target's own getrusage CPU time; this also holds the
#    launcher's start-up and the collector's work inside the target, so it
#    is an upper bound, at 10 ms resolution.
#
# Goal: the sampler costs < 1% of one core.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
THREADS=${THREADS:-64}
SECONDS_RUN=${SECONDS_RUN:-5}
PERIOD_MS=${PERIOD_MS:-50}
ROUNDS=${ROUNDS:-5}
(cd "$ROOT" && cargo build --release --quiet --example sampler_overhead -p contend-record)
EXAMPLE="$ROOT/target/release/examples/sampler_overhead"
D="$OUT/sampler_overhead"
rm -rf "$D" && mkdir -p "$D"
gcc -std=c11 -Wall -Wextra -Werror -O2 -pthread -o "$D/sampler_threads" "$ROOT/bench/sampler_threads.c"
machine
echo "target: $THREADS threads waking every $PERIOD_MS ms, $SECONDS_RUN s; $ROUNDS rounds"

alone=() launcher=() per_tick=()
for r in $(seq "$ROUNDS"); do
  line=$("$EXAMPLE" "$D/alone.csamp" 10 "$D/sampler_threads" "$THREADS" "$SECONDS_RUN" "$PERIOD_MS" | grep sampler_cpu_s)
  echo "round $r, sampler alone: $line"
  alone+=("$(sed 's/.*share_of_one_core=\([0-9.]*\)%.*/\1/' <<<"$line")")
  per_tick+=("$(sed 's/.*per_tick_us=\([0-9.]*\).*/\1/' <<<"$line")")

  /usr/bin/time -f "%e %U %S" -o "$D/time.txt" "$CONTEND" record -o "$D/rec.data" --force -- \
    "$D/sampler_threads" "$THREADS" "$SECONDS_RUN" "$PERIOD_MS" >"$D/target.out" 2>"$D/record.err"
  read -r wall user sys <"$D/time.txt"
  target=$(sed -n 's/target_cpu_s=//p' "$D/target.out")
  share=$(awk -v w="$wall" -v u="$user" -v s="$sys" -v t="$target" 'BEGIN {printf "%.3f", 100 * (u + s - t) / w}')
  echo "round $r, contend record: wall $wall s, launcher+target CPU $(awk -v u="$user" -v s="$sys" 'BEGIN {print u + s}') s, target $target s -> launcher $share% of one core"
  launcher+=("$share")
done
echo "median sampler alone:  $(printf '%s\n' "${alone[@]}" | median)% of one core ($(printf '%s\n' "${per_tick[@]}" | median) µs per tick)"
echo "median whole launcher: $(printf '%s\n' "${launcher[@]}" | median)% of one core (upper bound, 10 ms resolution)"
"$ROOT/target/release/contend" report "$D/rec.data" --format json | grep -E '"(samples|processes|active_threads|cpu_s|wall_s)"' | head -6 || true
