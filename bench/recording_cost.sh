#!/usr/bin/env bash
# The recording-cost estimate (docs/metrics.md, "Recording cost") against
# the slowdown measured on real programs: `sysbench mutex` (fixed work, run
# time), `sysbench threads --threads=8 --thread-locks=4` (fixed time, events
# done), each plain and recorded in the default and the light mode, ROUNDS
# rounds with the three back to back; then memcached through
# bench/memcached_throughput.sh (same modes; skipped with MEMCACHED=0).
# Measured share = the time recording added as a share of the recorded run
# (1 − plain / recorded run time, or 1 − recorded / plain events); the
# estimate is `recording.cost.estimated_share` of the last recorded run.
source "$(dirname "$0")/common.sh"
ROUNDS=${ROUNDS:-5}
MODES=${MODES:-"default light"}
command -v sysbench >/dev/null || { echo "needs sysbench (apt-get install sysbench)"; exit 1; }
machine
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
# `sysbench mutex`: 2 threads, fewer locks than its default so a run takes
# about a second here.
MUTEX_ARGS=(mutex --threads=2 --mutex-num=4096 --mutex-locks=20000 --mutex-loops=5000)
THREADS_ARGS=(threads --threads=8 --thread-locks=4 --time=3)
run() { # $1 = mode, $2 = mutex|threads; prints the figure (s or events)
  local args out
  if [ "$2" = mutex ]; then args=("${MUTEX_ARGS[@]}"); else args=("${THREADS_ARGS[@]}"); fi
  case "$1" in
    plain) out=$(sysbench "${args[@]}" run) ;;
    default) out=$("$CONTEND" record --force -o "$OUT/sysbench-$2-$1.data" -- sysbench "${args[@]}" run 2>/dev/null) ;;
    light) out=$("$CONTEND" record --light --force -o "$OUT/sysbench-$2-$1.data" -- sysbench "${args[@]}" run 2>/dev/null) ;;
  esac
  if [ "$2" = mutex ]; then
    sed -n 's/^ *total time: *\([0-9.]*\)s.*/\1/p' <<<"$out"
  else
    sed -n 's/^ *total number of events: *\([0-9]*\).*/\1/p' <<<"$out"
  fi
}
estimate() { # $1 = recording; prints "share (of what)"
  "$CONTEND" report "$1" --format json | python3 -c 'import json,sys; c=json.load(sys.stdin)["recording"]["cost"]; print("n/a" if c["estimated_share"] is None else "%.2f %% of %s (%d operations, %d bytes)" % (100*c["estimated_share"], c["share_of"], c["operations"], c["bytes"]))'
}
for bench in mutex threads; do
  declare -A runs=()
  for i in $(seq "$ROUNDS"); do
    runs[plain]+="$(run plain "$bench") "
    for m in $MODES; do runs[$m]+="$(run "$m" "$bench") "; done
  done
  mp=$(tr ' ' '\n' <<<"${runs[plain]}" | sed '/^$/d' | median)
  if [ "$bench" = mutex ]; then
    echo "sysbench ${MUTEX_ARGS[*]}: plain median ${mp} s (${runs[plain]})"
  else
    echo "sysbench ${THREADS_ARGS[*]}: plain median ${mp} events (${runs[plain]})"
  fi
  for m in $MODES; do
    mr=$(tr ' ' '\n' <<<"${runs[$m]}" | sed '/^$/d' | median)
    if [ "$bench" = mutex ]; then
      share=$(awk -v p="$mp" -v r="$mr" 'BEGIN {printf "%.1f %% (slowdown %.1f %%)", (1-p/r)*100, (r/p-1)*100}')
    else
      share=$(awk -v p="$mp" -v r="$mr" 'BEGIN {printf "%.1f %% of the events", (1-r/p)*100}')
    fi
    echo "  $m: median ${mr} (${runs[$m]}); measured loss ${share}; estimate $(estimate "$OUT/sysbench-$bench-$m.data")"
  done
  unset runs
done
if [ "${MEMCACHED:-1}" != 0 ]; then
  MODES="$MODES" bash "$ROOT/bench/memcached_throughput.sh"
fi
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
