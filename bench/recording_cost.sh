#!/usr/bin/env bash
# The recording-cost estimate (docs/metrics.md, "Recording cost") against
# the cost measured on real programs: `sysbench mutex` (fixed work) and
# `sysbench threads --threads=8 --thread-locks=4` (fixed time, events
# done), each plain and recorded in the default and the light mode, ROUNDS
# rounds with the three back to back; then memcached through
# bench/memcached_throughput.sh (same modes; skipped with MEMCACHED=0;
# BENCHES chooses among mutex and threads).
#
# On a machine shared with other work wall time mostly measures the other
# work, so the measured cost is in the program's CPU time (user + system):
# plain from /usr/bin/time, recorded from the report (`recording.cost.
# share_of_ns`, the target's CPU time from wait4). Measured share = the
# CPU time recording added per unit of work as a share of the recorded
# run's: 1 − plain CPU / recorded CPU (mutex: the same work), or
# 1 − (plain CPU / plain events) / (recorded CPU / recorded events)
# (threads). The estimate is `recording.cost.estimated_share` of the same
# recorded run (the in-situ sampled one), printed beside
# `recording.cost.calibrated_share` (the start-up calibration alone; a
# contend without it printed its estimate, which was the calibrated one);
# medians over the rounds, and the same from each mode's lower quartile
# (its fastest quarter of runs, those other work did not disturb). Wall-
# time figures are printed too.
source "$(dirname "$0")/common.sh"
ROUNDS=${ROUNDS:-5}
MODES=${MODES:-"default light"}
command -v sysbench >/dev/null || { echo "needs sysbench (apt-get install sysbench)"; exit 1; }
machine
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
MUTEX_ARGS=(mutex --threads=2 --mutex-num=4096 --mutex-locks=100000 --mutex-loops=5000)
THREADS_ARGS=(threads --threads=8 --thread-locks=4 --time=3)
# $1 = mode, $2 = mutex|threads; prints "work cpu_s wall_s estimate
# calibrated": work = events (threads) or 1 (mutex), estimate = estimated
# share or -, calibrated = the calibrated estimate's share or -.
run() {
  local args out cpu est cal dir="$OUT/sysbench-$2-$1.data"
  if [ "$2" = mutex ]; then args=("${MUTEX_ARGS[@]}"); else args=("${THREADS_ARGS[@]}"); fi
  if [ "$1" = plain ]; then
    cpu_of "$OUT/plain-cpu.txt" sh -c 'exec sysbench "$@" run >"$0"' "$OUT/plain-out.txt" "${args[@]}"
    cpu=$(cat "$OUT/plain-cpu.txt")
    out=$(cat "$OUT/plain-out.txt")
    est=-
    cal=-
  else
    local flag=()
    [ "$1" = light ] && flag=(--light)
    out=$("$CONTEND" record "${flag[@]}" --force -o "$dir" -- sysbench "${args[@]}" run 2>/dev/null)
    read -r cpu est cal < <("$CONTEND" report "$dir" --format json | python3 -c 'import json,sys; c=json.load(sys.stdin)["recording"]["cost"]; assert c["share_of"]=="cpu_time", c; print(c["share_of_ns"]/1e9, c["estimated_share"], c.get("calibrated_share", c["estimated_share"]))')
  fi
  local work wall
  wall=$(sed -n 's/^ *total time: *\([0-9.]*\)s.*/\1/p' <<<"$out")
  if [ "$2" = mutex ]; then work=1; else work=$(sed -n 's/^ *total number of events: *\([0-9]*\).*/\1/p' <<<"$out"); fi
  echo "$work $cpu $wall $est $cal"
}
for bench in ${BENCHES:-mutex threads}; do
  declare -A runs=()
  for i in $(seq "$ROUNDS"); do
    for m in plain $MODES; do runs[$m]+="$(run "$m" "$bench" | tr ' ' ,) "; done
  done
  if [ "$bench" = mutex ]; then echo "sysbench ${MUTEX_ARGS[*]}:"; else echo "sysbench ${THREADS_ARGS[*]}:"; fi
  # CPU seconds per unit of work, and wall figures (run time or events).
  # ($2: the statistic, median unless given)
  per_work() { tr ' ' '\n' <<<"$1" | sed '/^$/d' | awk -F, '{print $2 / $1}' | "${2:-median}"; }
  pp=$(per_work "${runs[plain]}")
  pq=$(per_work "${runs[plain]}" lower_quartile)
  echo "  plain: median CPU ${pp} s per $([ "$bench" = mutex ] && echo run || echo event); runs (work,cpu_s,wall_s): ${runs[plain]}"
  for m in $MODES; do
    pr=$(per_work "${runs[$m]}")
    est=$(tr ' ' '\n' <<<"${runs[$m]}" | sed '/^$/d' | cut -d, -f4 | median)
    cal=$(tr ' ' '\n' <<<"${runs[$m]}" | sed '/^$/d' | cut -d, -f5 | median)
    awk -v p="$pp" -v r="$pr" -v e="$est" -v c="$cal" -v m="$m" 'BEGIN {
      printf "  %s: median CPU %.6g per unit; measured cost %.1f %% of the recorded CPU time (slowdown %.1f %%); estimate %.1f %% (ratio estimate/measured %.2f); calibrated estimate %.1f %% (ratio %.2f)\n", m, r, (1-p/r)*100, (r/p-1)*100, e*100, e/(1-p/r), c*100, c/(1-p/r) }'
    # The fastest quarter of each mode's runs: the figure that excludes
    # the disturbed runs (this guest's slower speed, other work), whose
    # share of a mode's runs varies from run to run of the script.
    rq=$(per_work "${runs[$m]}" lower_quartile)
    awk -v p="$pq" -v r="$rq" -v e="$est" -v c="$cal" 'BEGIN {
      printf "    fastest quarter (lower quartiles): plain %.6g, recorded %.6g per unit; measured cost %.1f %%; estimate/measured %.2f, calibrated/measured %.2f\n", p, r, (1-p/r)*100, e/(1-p/r), c/(1-p/r) }'
    echo "    runs (work,cpu_s,wall_s,estimate,calibrated): ${runs[$m]}"
    # Round by round: each recorded run beside the plain run of its round
    # (this guest runs at two speeds, minutes apart; a round's runs are
    # seconds apart), and the estimate of that recorded run.
    paste -d' ' <(tr ' ' '\n' <<<"${runs[plain]}" | sed '/^$/d') <(tr ' ' '\n' <<<"${runs[$m]}" | sed '/^$/d') |
      awk -F'[ ,]' '{ c = 1 - ($2 / $1) / ($7 / $6); printf "%.4f %.4f %.4f\n", c, $9, $10 }' >"$OUT/paired-$bench-$m.txt"
    pc=$(cut -d' ' -f1 "$OUT/paired-$bench-$m.txt" | median)
    awk -v c="$pc" -v e="$est" -v k="$cal" 'BEGIN {
      printf "    paired by round: measured cost median %.1f %%; estimate/measured %.2f, calibrated/measured %.2f\n", c*100, e/c, k/c }'
    echo "    per round (measured, estimate, calibrated): $(tr '\n' ';' <"$OUT/paired-$bench-$m.txt")"
  done
  unset runs
done
if [ "${MEMCACHED:-1}" != 0 ]; then
  MODES="$MODES" bash "$ROOT/bench/memcached_throughput.sh"
fi
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
