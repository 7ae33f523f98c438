#!/usr/bin/env bash
# memcached throughput under memcslap, without and with `contend record`.
# Each round starts memcached -t 4 on a free loopback port (plainly, then
# under contend record), runs a fixed memcslap load (set, then get;
# CONCURRENCY client threads, OPS operations each) and times it; the server
# is stopped with SIGTERM. Rounds alternate the two modes so drift affects
# both. Throughput = operations / load time. MODES (default: "default
# light") are the recording modes compared with the plain runs; the
# recording-cost estimate of the last recorded run of each mode is printed
# beside its measured loss.
source "$(dirname "$0")/common.sh"
ROUNDS=${ROUNDS:-5}
OPS=${OPS:-20000}
CONCURRENCY=${CONCURRENCY:-4}
command -v memcached >/dev/null && command -v memcslap >/dev/null || {
  echo "needs memcached and memcslap (apt-get install memcached libmemcached-tools)"; exit 1; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() { for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/"$1") 2>/dev/null && return 0; sleep 0.05; done; return 1; }
MODES=${MODES:-"default light"}
one_round() { # $1 = plain|default|light ; prints seconds of load
  local port pid t0 t1
  port=$(free_port)
  if [ "$1" = plain ]; then
    taskset -c 0 memcached -u root -l 127.0.0.1 -p "$port" -U 0 -t 4 -m 256 & pid=$!
  else
    local flags=${RECORD_ARGS:-}
    [ "$1" = light ] && flags="$flags --light"
    # shellcheck disable=SC2086
    "$CONTEND" record --force -o "$OUT/memcached-$1.data" $flags -- taskset -c 0 memcached -u root -l 127.0.0.1 -p "$port" -U 0 -t 4 -m 256 2>/dev/null & pid=$!
  fi
  wait_port "$port" || { echo "memcached did not start on port $port ($1)" >&2; kill "$pid" 2>/dev/null; exit 1; }
  t0=$(date +%s.%N)
  taskset -c 1 memcslap --servers=127.0.0.1:"$port" --concurrency="$CONCURRENCY" --execute-number="$OPS" --test=set >/dev/null
  taskset -c 1 memcslap --servers=127.0.0.1:"$port" --concurrency="$CONCURRENCY" --execute-number="$OPS" --test=get >/dev/null
  t1=$(date +%s.%N)
  # The server: the started process itself, or the recorder's child.
  if [ "$1" = plain ]; then kill -TERM "$pid" 2>/dev/null || true
  else for c in $(pgrep -P "$pid"); do kill -TERM "$c" 2>/dev/null || true; done; fi
  wait "$pid" 2>/dev/null || true
  awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.4f\n", b-a}'
}
machine
plain=()
declare -A rec=()
for i in $(seq "$ROUNDS"); do
  plain+=("$(one_round plain)")
  for m in $MODES; do rec[$m]+="$(one_round "$m") "; done
done
ops=$((2 * OPS * CONCURRENCY))
mp=$(printf '%s\n' "${plain[@]}" | median)
echo "load of $ops operations: without recording median ${mp} s (${plain[*]})"
for m in $MODES; do
  read -r -a r <<<"${rec[$m]}"
  mr=$(printf '%s\n' "${r[@]}" | median)
  echo "recorded ($m): median ${mr} s (${r[*]})"
  awk -v p="$mp" -v r="$mr" -v n="$ops" 'BEGIN {printf "  throughput: %.0f ops/s without, %.0f ops/s with recording; loss %.1f %% (from the medians)\n", n/p, n/r, (1-p/r)*100}'
  # Round by round (each recorded round beside the plain one of its round):
  ratios=()
  for i in "${!plain[@]}"; do ratios+=("$(awk -v p="${plain[$i]}" -v r="${r[$i]}" 'BEGIN {printf "%.4f", (1-p/r)*100}')"); done
  echo "  loss per round (%): ${ratios[*]}; median $(printf '%s\n' "${ratios[@]}" | median) %"
  "$CONTEND" report "$OUT/memcached-$m.data" --format json | python3 -c 'import json,sys; r=json.load(sys.stdin); s=r["locks"]["summary"]; c=r["recording"]["cost"]; print("  last recorded run: %d lock events, %d contended; recording cost estimate %s of %s (%s ns)" % (s["events"], s["contended_events"], "n/a" if c["estimated_share"] is None else "%.2f %%" % (100*c["estimated_share"]), c["share_of"], c["estimated_ns"]))'
done
