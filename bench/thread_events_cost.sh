#!/usr/bin/env bash
# What following thread lifetimes costs a program that switches often:
# the kernel's task records (thread creations and exits, for the SCI's
# thread durations) come either from one event per CPU for the whole
# machine (`system-wide`, the default where the kernel allows it) or from
# events inherited by every thread of the target (`per-task`,
# CONTEND_THREAD_EVENTS=per-task; every context switch of a traced thread
# then also switches its events).
#
# Programs (each run plainly, recorded per task and recorded system-wide,
# back to back in each of ROUNDS rounds; medians):
# - tests/programs/service_pingpong.c: two threads pass a byte over pipes
#   for MS ms, pinned to CPU 0 (`taskset -c 0` plainly, `--cpus 0`
#   recorded, so the launcher runs beside it), so that every round trip is
#   two context switches on one CPU (unpinned, where the two threads run
#   decides the rate more than anything recorded); round trips per second,
#   and CPU ns per round trip from the threads' own clocks;
# - `sysbench threads --threads=8 --thread-locks=4 --time=3` when sysbench
#   is installed (events done in 3 s).
# CONTEND_SERVICE_SOURCE=schedstat is set for every recorded run so that
# the sampler's scheduler events (left after their first ticks when they
# cost more) do not add their own cost to either mode.
source "$(dirname "$0")/common.sh"
ROUNDS=${ROUNDS:-7}
MS=${MS:-1000}
gcc -std=c11 -Wall -Wextra -Werror -O2 -pthread -o "$OUT/service_pingpong" "$ROOT/tests/programs/service_pingpong.c"
machine
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
export CONTEND_SERVICE_SOURCE=schedstat
modes=(plain per-task system-wide)
# $1 = mode, $2 = CPU list to pin to ("" = none); the rest: the command.
# Prints its standard output.
run_as() {
  local mode=$1 cpus=$2
  shift 2
  local pin=() rpin=()
  if [ -n "$cpus" ]; then pin=(taskset -c "$cpus"); rpin=(--cpus "$cpus"); fi
  case "$mode" in
    plain) "${pin[@]}" "$@" 2>/dev/null ;;
    per-task) CONTEND_THREAD_EVENTS=per-task "$CONTEND" record "${rpin[@]}" --force -o "$OUT/thread-events.data" -- "$@" 2>/dev/null ;;
    system-wide) "$CONTEND" record "${rpin[@]}" --force -o "$OUT/thread-events.data" -- "$@" 2>/dev/null ;;
  esac
  if [ "$mode" != plain ]; then
    local scope
    scope=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["thread_events_scope"])' "$OUT/thread-events.data/probes/probes.json")
    [ "$scope" = "$mode" ] || { echo "asked for $mode thread events, the recording has '$scope'" >&2; exit 1; }
  fi
}
declare -A trips=() cpu=() events=()
have_sysbench=$(command -v sysbench >/dev/null && echo 1 || echo 0)
for r in $(seq "$ROUNDS"); do
  for m in "${modes[@]}"; do
    out=$(run_as "$m" 0 "$OUT/service_pingpong" "$MS")
    # both threads count the same round trips; CPU per trip over both
    trips[$m]+="$(awk -F'[= ]' '/trips=/ {t += $6; c += $4} END {printf "%.0f", t / 2 / ('"$MS"' / 1000)}' <<<"$out") "
    cpu[$m]+="$(awk -F'[= ]' '/trips=/ {t += $6; c += $4} END {printf "%.0f", c / (t / 2)}' <<<"$out") "
    if [ "$have_sysbench" = 1 ]; then
      events[$m]+="$(run_as "$m" "" sysbench threads --threads=8 --thread-locks=4 --time=3 run | awk '/total number of events/ {print $5}') "
    fi
  done
  echo "round $r done, load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
done
med() { tr ' ' '\n' <<<"$1" | sed '/^$/d' | median; }
p_trips=$(med "${trips[plain]}") p_cpu=$(med "${cpu[plain]}")
[ "$have_sysbench" = 1 ] && p_events=$(med "${events[plain]}")
for m in "${modes[@]}"; do
  t=$(med "${trips[$m]}") c=$(med "${cpu[$m]}")
  awk -v m="$m" -v t="$t" -v c="$c" -v pt="$p_trips" -v pc="$p_cpu" -v runs="${trips[$m]}" 'BEGIN {printf "%-12s service_pingpong: %.0f round trips/s (%.3f of plain), %.0f CPU ns per round trip (%.3f of plain); runs: %s\n", m, t, t / pt, c, c / pc, runs}'
  if [ "$have_sysbench" = 1 ]; then
    e=$(med "${events[$m]}")
    awk -v m="$m" -v e="$e" -v pe="$p_events" -v runs="${events[$m]}" 'BEGIN {printf "%-12s sysbench threads: %.0f events in 3 s (%.3f of plain); runs: %s\n", m, e, e / pe, runs}'
  fi
done
rm -rf "$OUT/thread-events.data"
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
