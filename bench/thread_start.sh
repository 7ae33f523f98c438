#!/usr/bin/env bash
# The recording's fixed cost per thread: bench/thread_start.c (THREADS
# threads, each taking one mutex ACQUISITIONS times, default once) run
# plainly (`plain`), with the lock collector preloaded as `contend record`
# would preload it (`new`: the collector alone, no sampler, no counters, no
# chunk preparer), under `contend record` (`record`: the launcher's chunk
# preparer makes the chunks ready ahead, crates/contend-record/src/
# chunk_prep.rs), under `contend record` with CONTEND_PREPARE_CHUNKS=0
# (`record-noprep`) and with CONTEND_SLOTS=0 (`record-noslots`: every
# thread claims chunks of its own, no slot chunks, trace_format.h); MODES
# chooses (default the first four), ROUNDS rounds, the
# modes back to back in every round. Each run's CPU time is the program's
# own figure for its threads' phase (getrusage, µs; the collector's
# start-up and the launcher are not in it). The `record` modes run with
# CONTEND_SERVICE_SOURCE=schedstat so that no scheduler event costs the
# threads anything.
# CONTEND_OLD=/path/to/an/older/contend adds that binary's collector to
# every round (mode `old`), for a before/after.
# Prints median CPU ms per mode, the added µs per thread, and for
# `record` the preparer's own CPU time per thread (the launcher's, from
# meta.json) and the share of chunk claims that found their chunk prepared.
source "$(dirname "$0")/common.sh"
THREADS=${THREADS:-2048}
ACQUISITIONS=${ACQUISITIONS:-1} # per thread
ROUNDS=${ROUNDS:-9}
gcc -std=c11 -Wall -Wextra -Werror -O2 -pthread -o "$OUT/thread_start" "$ROOT/bench/thread_start.c"
declare -A so=() clock=() hz=()
read -r so[new] clock[new] hz[new] < <(collector_env "$CONTEND" new)
read -ra modes <<<"${MODES:-plain new record record-noprep}"
if [ -n "${CONTEND_OLD:-}" ]; then
  read -r so[old] clock[old] hz[old] < <(collector_env "$CONTEND_OLD" old)
  modes+=(old)
fi
one() { # $1 = mode: prints CPU ms of the threads' phase
  local d="$OUT/thread-start.data" out
  rm -rf "$d" && mkdir -p "$d/locks"
  case "$1" in
    plain) out=$("$OUT/thread_start" "$THREADS" "$ACQUISITIONS") ;;
    record | record-noprep | record-noslots)
      out=$(CONTEND_PREPARE_CHUNKS=$([ "$1" = record-noprep ] && echo 0 || echo 1) \
        CONTEND_SLOTS=$([ "$1" = record-noslots ] && echo 0 || echo 1) CONTEND_SERVICE_SOURCE=schedstat \
        "$CONTEND" record --force -o "$d" -- "$OUT/thread_start" "$THREADS" "$ACQUISITIONS" 2>/dev/null)
      if [ "$1" = record ]; then
        python3 -c 'import json,sys; p=json.load(open(sys.argv[1])).get("chunk_preparation") or {}; print(p.get("cpu_ns", 0), p.get("claims_prepared", 0))' \
          "$d/meta.json" >>"$OUT/thread-start-prep.txt"
      fi ;;
    *) out=$(CONTEND_DIR="$d" CONTEND_CLOCK="${clock[$1]}" CONTEND_TSC_HZ="${hz[$1]}" CONTEND_STACK_EVERY=0 LD_PRELOAD="${so[$1]}" \
      "$OUT/thread_start" "$THREADS" "$ACQUISITIONS") ;;
  esac
  sed -n 's/.*cpu_us=\([0-9]*\).*/\1/p' <<<"$out" | awk '{print $1 / 1000}'
}
rm -f "$OUT/thread-start-prep.txt"
machine
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
declare -A runs=()
for r in $(seq "$ROUNDS"); do
  for m in "${modes[@]}"; do runs[$m]+="$(one "$m") "; done
done
p=$(tr ' ' '\n' <<<"${runs[plain]}" | sed '/^$/d' | median)
for m in "${modes[@]}"; do
  c=$(tr ' ' '\n' <<<"${runs[$m]}" | sed '/^$/d' | median)
  awk -v m="$m" -v c="$c" -v p="$p" -v n="$THREADS" -v r="${runs[$m]}" 'BEGIN {printf "%-13s median CPU %6.0f ms for %d threads; added %.0f µs per thread; runs (ms): %s\n", m, c, n, (c - p) * 1000 / n, r}'
done
if [ -s "$OUT/thread-start-prep.txt" ]; then
  awk -v n="$THREADS" '{c += $1; p += $2; r++} END {printf "record: the chunk preparer used %.1f µs of the launcher'"'"'s CPU per thread; %.0f %% of the threads'"'"' chunk claims found their chunk prepared (mean of %d runs)\n", c / r / 1000 / n, 100 * p / r / n, r}' "$OUT/thread-start-prep.txt"
fi
rm -rf "$OUT/thread-start.data"
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
