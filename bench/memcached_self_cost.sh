#!/usr/bin/env bash
# What recording memcached costs, measured by the collector's own CPU
# samples, beside the report's estimate (docs/benchmarks.md, "Light mode on
# many locks, and memcached measured by the collector's own CPU samples").
#
# memcached's CPU time moves by ±10 % (user time alone by ±30 %) from one
# plain round to the next on the guests these numbers come from, so a
# recorded-minus-plain difference cannot show a cost of a few per cent.
# Instead each round profiles the server's user mode (`perf record -e
# cpu-clock:u -F 4000 -p <server>`): the samples that fall in the
# collector's library, × 0.25 ms, are the CPU time of its own code (the
# misses it takes included, the misses it causes in memcached's code not),
# and the report's sampled estimate is put beside them.
#
# Server and load as in bench/memcached_throughput.sh: memcached -t 4 on
# CPU 0, memcslap --concurrency=CONCURRENCY on CPU 1, OPS sets then OPS gets
# per client thread. MODES (default "plain default light") alternate in
# each of ROUNDS rounds; with OLD_CONTEND=<binary>, modes old-default and
# old-light record with that build (its own collector) instead.
source "$(dirname "$0")/common.sh"
ROUNDS=${ROUNDS:-5}
OPS=${OPS:-20000}
CONCURRENCY=${CONCURRENCY:-4}
MODES=${MODES:-"plain default light"}
HZ=4000
for tool in memcached memcslap perf; do
  command -v "$tool" >/dev/null || { echo "needs $tool (apt-get install memcached libmemcached-tools linux-perf)"; exit 1; }
done
one_round() { # $1 = mode; prints "user_samples,collector_samples,estimate_ms"
  local mode=$1 port pid srv perf_pid bin=$CONTEND flags="" est=-
  port=$(free_port)
  case $mode in
    old-*) bin=${OLD_CONTEND:?OLD_CONTEND=<binary> for mode $mode} ;;
  esac
  [[ $mode == *light ]] && flags=--light
  if [ "$mode" = plain ]; then
    taskset -c 0 memcached -u root -l 127.0.0.1 -p "$port" -U 0 -t 4 -m 256 & pid=$!
  else
    # shellcheck disable=SC2086
    "$bin" record --force -o "$OUT/memcached-self.data" $flags -- taskset -c 0 memcached -u root -l 127.0.0.1 -p "$port" -U 0 -t 4 -m 256 2>/dev/null & pid=$!
  fi
  wait_port "$port" || { echo "memcached did not start on port $port ($mode)" >&2; kill "$pid" 2>/dev/null; exit 1; }
  srv=$(server_of "$pid")
  perf record -q -e cpu-clock:u -F "$HZ" -p "$srv" -o "$OUT/memcached-self.perf" 2>/dev/null & perf_pid=$!
  sleep 0.2
  taskset -c 1 memcslap --servers=127.0.0.1:"$port" --concurrency="$CONCURRENCY" --execute-number="$OPS" --test=set >/dev/null
  taskset -c 1 memcslap --servers=127.0.0.1:"$port" --concurrency="$CONCURRENCY" --execute-number="$OPS" --test=get >/dev/null
  kill -INT "$perf_pid"; wait "$perf_pid" 2>/dev/null || true
  kill -TERM "$srv" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  local by_dso
  by_dso=$(perf report -i "$OUT/memcached-self.perf" --stdio -n --sort dso 2>/dev/null | awk '/^ +[0-9.]+%/')
  if [ "$mode" != plain ]; then
    est=$("$bin" report "$OUT/memcached-self.data" --format json | python3 -c 'import json,sys; print(json.load(sys.stdin)["recording"]["cost"]["estimated_ns"] / 1e6)')
  fi
  awk -v e="$est" '{n += $2} /libcontend/ {c += $2} END {printf "%d,%d,%s\n", n, c, e}' <<<"$by_dso"
}
machine
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
declare -A runs=()
for _ in $(seq "$ROUNDS"); do
  for m in $MODES; do runs[$m]+="$(one_round "$m") "; done
done
col() { tr ' ' '\n' | sed '/^$/d' | cut -d, -f"$1"; }
for m in $MODES; do
  read -r -a r <<<"${runs[$m]}"
  us=$(printf '%s\n' "${r[@]}" | col 1 | median)
  cs=$(printf '%s\n' "${r[@]}" | col 2 | median)
  line=$(awk -v u="$us" -v c="$cs" -v hz="$HZ" 'BEGIN {printf "user time %.0f ms, of it the collector %.0f ms", u*1000/hz, c*1000/hz}')
  if [ "$m" != plain ]; then
    est=$(printf '%s\n' "${r[@]}" | col 3 | median)
    ratios=$(for x in "${r[@]}"; do awk -F, -v hz="$HZ" '$2 > 0 {printf "%.2f\n", $3 / ($2*1000/hz)}' <<<"$x"; done)
    line="$line; estimate $est ms; estimate / collector's time: median $(median <<<"$ratios") ($(sort -g <<<"$ratios" | head -1)–$(sort -g <<<"$ratios" | tail -1))"
  fi
  echo "$m (medians of $ROUNDS): $line; runs (user samples, collector samples, estimate ms): ${r[*]}"
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
