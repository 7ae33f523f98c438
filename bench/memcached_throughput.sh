#!/usr/bin/env bash
# memcached throughput under memcslap, without and with `contend record`.
# Each round starts memcached -t 4 on a free loopback port (plainly, then
# under contend record), runs a fixed memcslap load (set, then get;
# CONCURRENCY client threads, OPS operations each) and times it; the server
# is stopped with SIGTERM. Rounds alternate the two modes so drift affects
# both. Throughput = operations / load time. MODES (default: "default
# light") are the recording modes compared with the plain runs. Also the
# server's CPU time (plain: wait4, in µs, by cpu_of; recorded: the report's
# recording.cost.share_of_ns, the target's CPU time from wait4), which
# leaves out time the server was descheduled for other work on the
# machine, and the recording-cost estimate beside the CPU time added.
# Mode `preload` (MODES="default preload"): the lock collector alone, with
# the environment the launcher gives it (LD_PRELOAD, CONTEND_DIR, the
# clock) but without `contend record` (no service-time sampler, no
# counters): what the collector costs against what the whole recorder
# costs; its CPU time from cpu_of, its estimate from the report.
# Mode `before-switch`: `contend record` with the scheduler events kept all
# the run and the lone task_clock counter kept (CONTEND_SERVICE_SOURCE=
# sched-events CONTEND_KEEP_TASK_CLOCK=1), as the recorder was before it
# learnt to leave them (docs/benchmarks.md, "The sampler leaves the
# scheduler events when they cost more").
# Modes `old` and `old-light`: `contend record` (and `--light`) of the
# binary CONTEND_OLD names, for a before/after in one run (its recordings
# are read by this build's report).
# Mode `per-task`: `contend record` with thread lifetimes followed by
# events inherited by the server's threads (CONTEND_THREAD_EVENTS=per-task,
# as before system-wide task events; docs/benchmarks.md, "Thread
# lifetimes without a cost per context switch").
source "$(dirname "$0")/common.sh"
ROUNDS=${ROUNDS:-5}
OPS=${OPS:-20000}
CONCURRENCY=${CONCURRENCY:-4}
command -v memcached >/dev/null && command -v memcslap >/dev/null || {
  echo "needs memcached and memcslap (apt-get install memcached libmemcached-tools)"; exit 1; }
MODES=${MODES:-"default light"}
one_round() { # $1 = plain|default|light ; prints "load_s,server_cpu_s,estimate,calibrated"
  local port pid t0 t1 cpu est=- cal=-
  port=$(free_port)
  if [ "$1" = plain ]; then
    cpu_of "$OUT/memcached-time.txt" taskset -c 0 memcached -u root -l 127.0.0.1 -p "$port" -U 0 -t 4 -m 256 & pid=$!
  elif [ "$1" = preload ]; then
    rm -rf "$OUT/memcached-preload.data"
    mkdir -p "$OUT/memcached-preload.data/locks"
    CONTEND_DIR="$OUT/memcached-preload.data" CONTEND_CLOCK="$PRELOAD_CLOCK" CONTEND_TSC_HZ="$PRELOAD_HZ" LD_PRELOAD="$PRELOAD_SO" \
      cpu_of "$OUT/memcached-time.txt" taskset -c 0 memcached -u root -l 127.0.0.1 -p "$port" -U 0 -t 4 -m 256 & pid=$!
  else
    local flags=${RECORD_ARGS:-} envs=() bin=$CONTEND
    [ "$1" = light ] || [ "$1" = old-light ] && flags="$flags --light"
    [ "$1" = old ] || [ "$1" = old-light ] && bin=$CONTEND_OLD
    [ "$1" = before-switch ] && envs=(CONTEND_SERVICE_SOURCE=sched-events CONTEND_KEEP_TASK_CLOCK=1)
    [ "$1" = per-task ] && envs=(CONTEND_THREAD_EVENTS=per-task)
    # shellcheck disable=SC2086
    env "${envs[@]}" "$bin" record --force -o "$OUT/memcached-$1.data" $flags -- taskset -c 0 memcached -u root -l 127.0.0.1 -p "$port" -U 0 -t 4 -m 256 2>/dev/null & pid=$!
  fi
  wait_port "$port" || { echo "memcached did not start on port $port ($1)" >&2; kill "$pid" 2>/dev/null; exit 1; }
  t0=$(date +%s.%N)
  taskset -c 1 memcslap --servers=127.0.0.1:"$port" --concurrency="$CONCURRENCY" --execute-number="$OPS" --test=set >/dev/null
  taskset -c 1 memcslap --servers=127.0.0.1:"$port" --concurrency="$CONCURRENCY" --execute-number="$OPS" --test=get >/dev/null
  t1=$(date +%s.%N)
  # The server: the started process itself, or the recorder's descendant.
  kill -TERM "$(server_of "$pid")" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  if [ "$1" = plain ]; then
    cpu=$(cat "$OUT/memcached-time.txt")
  elif [ "$1" = preload ]; then
    cpu=$(cat "$OUT/memcached-time.txt")
    read -r est cal < <("$CONTEND" report "$OUT/memcached-preload.data" --format json | python3 -c 'import json,sys; c=json.load(sys.stdin)["recording"]["cost"]; cpu=float(sys.argv[1])*1e9; print(c["estimated_ns"]/cpu, c["calibrated_ns"]/cpu)' "$cpu")
  else
    read -r cpu est cal < <("$CONTEND" report "$OUT/memcached-$1.data" --format json | python3 -c 'import json,sys; c=json.load(sys.stdin)["recording"]["cost"]; print(c["share_of_ns"]/1e9 if c["share_of"]=="cpu_time" else "nan", c["estimated_share"], c.get("calibrated_share", c["estimated_share"]))')
  fi
  awk -v a="$t0" -v b="$t1" -v c="$cpu" -v e="$est" -v k="$cal" 'BEGIN {printf "%.4f,%s,%s,%s\n", b-a, c, e, k}'
}
machine
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
if [[ " $MODES " == *" preload "* ]]; then
  # the collector and the clock the launcher would give memcached
  read -r PRELOAD_SO PRELOAD_CLOCK PRELOAD_HZ < <(collector_env "$CONTEND" memcached)
fi
plain=()
declare -A rec=()
for i in $(seq "$ROUNDS"); do
  plain+=("$(one_round plain)")
  for m in $MODES; do rec[$m]+="$(one_round "$m") "; done
done
ops=$((2 * OPS * CONCURRENCY))
col() { tr ' ' '\n' | sed '/^$/d' | cut -d, -f"$1"; }
mp=$(printf '%s\n' "${plain[@]}" | col 1 | median)
cp=$(printf '%s\n' "${plain[@]}" | col 2 | median)
echo "load of $ops operations: without recording median ${mp} s, server CPU ${cp} s; runs (load_s,cpu_s): ${plain[*]}"
for m in $MODES; do
  read -r -a r <<<"${rec[$m]}"
  mr=$(printf '%s\n' "${r[@]}" | col 1 | median)
  cr=$(printf '%s\n' "${r[@]}" | col 2 | median)
  est=$(printf '%s\n' "${r[@]}" | col 3 | median)
  cal=$(printf '%s\n' "${r[@]}" | col 4 | median)
  echo "recorded ($m): median ${mr} s, server CPU ${cr} s; runs (load_s,cpu_s,estimate,calibrated): ${r[*]}"
  awk -v p="$mp" -v r="$mr" -v n="$ops" 'BEGIN {printf "  throughput: %.0f ops/s without, %.0f ops/s with recording; loss %.1f %% (from the medians)\n", n/p, n/r, (1-p/r)*100}'
  # Round by round (each recorded round beside the plain one of its round):
  ratios=()
  for i in "${!plain[@]}"; do
    ratios+=("$(awk -v p="$(cut -d, -f1 <<<"${plain[$i]}")" -v r="$(cut -d, -f1 <<<"${r[$i]}")" 'BEGIN {printf "%.2f", (1-p/r)*100}')")
  done
  echo "  throughput loss per round (%): ${ratios[*]}; median $(printf '%s\n' "${ratios[@]}" | median) %"
  # Recording cost round by round from the server's CPU time (each
  # recorded round beside the plain one of its round), with its estimate.
  paired=()
  for i in "${!plain[@]}"; do
    paired+=("$(awk -v p="$(cut -d, -f2 <<<"${plain[$i]}")" -v r="$(cut -d, -f2 <<<"${r[$i]}")" 'BEGIN {printf "%.4f", 1 - p/r}')")
  done
  pc=$(printf '%s\n' "${paired[@]}" | median)
  awk -v c="$pc" -v e="$est" -v k="$cal" 'BEGIN {printf "  paired by round: recording cost median %.1f %% of the recorded CPU time; estimate/measured %.2f, calibrated/measured %.2f\n", c*100, e/c, k/c}'
  echo "  per round (share of recorded CPU): ${paired[*]}"
  awk -v p="$cp" -v r="$cr" -v e="$est" -v k="$cal" 'BEGIN {printf "  server CPU per operation: +%.1f %% recorded; recording cost %.1f %% of the recorded CPU time, estimate %.1f %% (ratio estimate/measured %.2f), calibrated estimate %.1f %% (ratio %.2f)\n", (r/p-1)*100, (1-p/r)*100, e*100, e/(1-p/r), k*100, k/(1-p/r)}'
  # The fastest quarter of each mode's runs (lower quartiles): the figures
  # that exclude the rounds other work on the machine slowed down.
  awk -v p="$(printf '%s\n' "${plain[@]}" | col 1 | lower_quartile)" -v r="$(printf '%s\n' "${r[@]}" | col 1 | lower_quartile)" \
    -v pc="$(printf '%s\n' "${plain[@]}" | col 2 | lower_quartile)" -v rc="$(printf '%s\n' "${r[@]}" | col 2 | lower_quartile)" -v e="$est" -v n="$ops" \
    'BEGIN {printf "  fastest quarter (lower quartiles): %.0f ops/s without, %.0f ops/s with recording, loss %.1f %%; server CPU %.3f s without, %.3f s with, recording cost %.1f %% of the recorded CPU time, estimate/measured %.2f\n", n/p, n/r, (1-p/r)*100, pc, rc, (1-pc/rc)*100, e/(1-pc/rc)}'
  "$CONTEND" report "$OUT/memcached-$m.data" --format json | python3 -c 'import json,sys; s=json.load(sys.stdin)["locks"]["summary"]; print("  last recorded run: %d lock events, %d contended" % (s["events"], s["contended_events"]))'
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
