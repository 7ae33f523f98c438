#!/usr/bin/env bash
# The recording's fixed cost per thread: bench/thread_start.c (THREADS
# threads, each taking one mutex ACQUISITIONS times, default once) run
# plainly and with the lock collector preloaded as `contend record` would
# preload it (the collector alone: no sampler, no counters), ROUNDS rounds
# each, the two back to back in every round; the process's CPU time (user
# + system, /usr/bin/time, 10 ms resolution: keep THREADS large).
# CONTEND_OLD=/path/to/an/older/contend adds that binary's collector to
# every round, for a before/after.
# Prints median CPU ms per mode and the added µs per thread.
source "$(dirname "$0")/common.sh"
THREADS=${THREADS:-2048}
ACQUISITIONS=${ACQUISITIONS:-1} # per thread
ROUNDS=${ROUNDS:-9}
gcc -std=c11 -Wall -Wextra -Werror -O2 -pthread -o "$OUT/thread_start" "$ROOT/bench/thread_start.c"
# the collector and clock `contend record` gives a program ($1 = contend)
# (each call its own directory: a process substitution runs beside the
# script, so two calls in a row would otherwise remove each other's)
collector_env() {
  local d="$OUT/thread-start-env-$2.data"
  "$1" record --force -o "$d" -- true >/dev/null 2>&1
  python3 -c 'import json,sys; e=json.load(open(sys.argv[1]))["env"]; print(e["LD_PRELOAD"].split(":")[0], e.get("CONTEND_CLOCK", "monotonic"), e.get("CONTEND_TSC_HZ", "0"))' "$d/meta.json"
  rm -rf "$d" 2>/dev/null || true
}
declare -A so=() clock=() hz=()
read -r so[new] clock[new] hz[new] < <(collector_env "$CONTEND" new)
modes=(plain new)
if [ -n "${CONTEND_OLD:-}" ]; then
  read -r so[old] clock[old] hz[old] < <(collector_env "$CONTEND_OLD" old)
  modes+=(old)
fi
one() { # $1 = mode: prints CPU ms
  local d="$OUT/thread-start.data"
  rm -rf "$d" && mkdir -p "$d/locks"
  if [ "$1" = plain ]; then
    /usr/bin/time -f "%U %S" -o "$OUT/time.txt" "$OUT/thread_start" "$THREADS" "$ACQUISITIONS" >/dev/null
  else
    CONTEND_DIR="$d" CONTEND_CLOCK="${clock[$1]}" CONTEND_TSC_HZ="${hz[$1]}" CONTEND_STACK_EVERY=0 LD_PRELOAD="${so[$1]}" \
      /usr/bin/time -f "%U %S" -o "$OUT/time.txt" "$OUT/thread_start" "$THREADS" "$ACQUISITIONS" >/dev/null
  fi
  awk '{print ($1 + $2) * 1000}' "$OUT/time.txt"
}
machine
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
declare -A runs=()
for r in $(seq "$ROUNDS"); do
  for m in "${modes[@]}"; do runs[$m]+="$(one "$m") "; done
done
p=$(tr ' ' '\n' <<<"${runs[plain]}" | sed '/^$/d' | median)
for m in "${modes[@]}"; do
  c=$(tr ' ' '\n' <<<"${runs[$m]}" | sed '/^$/d' | median)
  awk -v m="$m" -v c="$c" -v p="$p" -v n="$THREADS" -v r="${runs[$m]}" 'BEGIN {printf "%-6s median CPU %6.0f ms for %d threads; added %.0f µs per thread; runs (ms): %s\n", m, c, n, (c - p) * 1000 / n, r}'
done
rm -rf "$OUT/thread-start.data"
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
