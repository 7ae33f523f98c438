#!/usr/bin/env bash
# Time and peak memory of `contend report --format json` on a futex-heavy
# recording: bench/futex_contended.c (4 threads, a hand-written futex lock
# through syscall(SYS_futex), ITERATIONS acquisitions each), recorded once.
# ROUNDS rounds, medians; peak memory per futex call (the report's futex
# waits and wakes). BASELINE=/path/to/an/older/contend runs that binary
# too, alternating with this one in every round. CONTEND_BIN=/path/to/contend
# measures that binary instead (with BENCH_NO_BUILD=1: nothing is built).
# KEEP_RECORDING=1 reuses $OUT/futex.data when it is there.
source "$(dirname "$0")/common.sh"
CONTEND=${CONTEND_BIN:-$CONTEND}
ROUNDS=${ROUNDS:-5}
ITERATIONS=${ITERATIONS:-4000000}
BASELINE=${BASELINE:-}
if [ -z "${KEEP_RECORDING:-}" ] || [ ! -d "$OUT/futex.data" ]; then
  gcc -std=c11 -Wall -Wextra -Werror -O2 -pthread -o "$OUT/futex_contended" "$ROOT/bench/futex_contended.c"
  "$CONTEND" record -o "$OUT/futex.data" --force -- "$OUT/futex_contended" "$ITERATIONS" >/dev/null
fi
machine
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
events=$("$CONTEND" report "$OUT/futex.data" --format json 2>/dev/null |
  python3 -c 'import json,sys; s=json.load(sys.stdin)["futex"]["summary"]; print(s["events"] + s["wakes"])')
echo "futex calls (waits and wakes): $events"
report_binaries
report_rounds "$OUT/futex.data" futex_times
report_summary futex_times "$events" "futex calls" call
