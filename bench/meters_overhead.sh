#!/usr/bin/env bash
# Cost of the meter daemon (`contend meters`): CPU time of all its threads
# per second of run time (its `daemon_cpu`, after the probe's chain is
# built), and the share of that spent chasing pointers (the probe), at
# each interval, ROUNDS times DURATION each; the median is printed.
#
# BASELINE=/path/to/an/older/contend: each round runs the baseline and
# this build one after the other (alternating which goes first), so that
# both see the same load; prints both medians and their ratio.
#
# Also printed: CPU time per tick (daemon CPU / ticks, µs), which depends
# less on the machine's load than CPU per second (a loaded machine skips
# ticks), and the floor under it: bench/sleep_floor.c, a loop that only
# sleeps to the same absolute deadlines on the probe's CPU (0), once per
# round beside the daemon's runs.
source "$(dirname "$0")/common.sh"
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-10s}
INTERVALS=${INTERVALS:-"1ms 10ms 100ms"}
BASELINE=${BASELINE:-}
machine
gcc -std=c11 -O2 -Wall -Wextra -Werror -o "$OUT/sleep_floor" "$ROOT/bench/sleep_floor.c"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
# One run of binary $1: prints "daemon_cpu probe_share disturbed_share
# samples_per_s".
one() {
  "$1" meters --interval "$iv" --duration "$DURATION" --format json \
    --blackboard "$OUT/meters-bench-bb" $flag >"$OUT/meters.json"
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); p=d["probe"]; n=p["samples"]+p["disturbed"]; print(d["daemon_cpu"], p["busy_s"]/d["duration_s"], p["disturbed"]/max(n,1), n/d["duration_s"])' "$OUT/meters.json"
}
us_of() { # 10ms -> 10000, 1ms -> 1000, 500us -> 500
  python3 -c 'import re,sys; m=re.fullmatch(r"([0-9.]+)(us|ms|s)",sys.argv[1]); print(int(float(m[1])*{"us":1,"ms":1000,"s":1000000}[m[2]]))' "$1"
}
for iv in $INTERVALS; do
  floor=()
  for i in $(seq "$ROUNDS"); do
    read -r _ _ f < <("$OUT/sleep_floor" "$(us_of "$iv")" "${DURATION%s}" 0); floor+=("$f")
  done
  mf=$(printf '%s\n' "${floor[@]}" | median)
  awk -v iv="$iv" -v f="$mf" -v runs="${floor[*]}" \
    'BEGIN {printf "interval %-6s sleep-only loop (the wake-up floor): %.1f us of CPU per tick; runs: %s ns\n", iv, f/1e3, runs}'
  for locks in off on; do
    flag=--no-lock-meters; [ "$locks" = on ] && flag=
    cpu=(); probe=(); dist=(); rate=(); bcpu=(); bprobe=(); bdist=(); brate=()
    for i in $(seq "$ROUNDS"); do
      if [ -n "$BASELINE" ] && [ $((i % 2)) -eq 1 ]; then
        read -r c p d r < <(one "$BASELINE"); bcpu+=("$c"); bprobe+=("$p"); bdist+=("$d"); brate+=("$r")
      fi
      read -r c p d r < <(one "$CONTEND"); cpu+=("$c"); probe+=("$p"); dist+=("$d"); rate+=("$r")
      if [ -n "$BASELINE" ] && [ $((i % 2)) -eq 0 ]; then
        read -r c p d r < <(one "$BASELINE"); bcpu+=("$c"); bprobe+=("$p"); bdist+=("$d"); brate+=("$r")
      fi
    done
    mc=$(printf '%s\n' "${cpu[@]}" | median)
    mp=$(printf '%s\n' "${probe[@]}" | median)
    md=$(printf '%s\n' "${dist[@]}" | median)
    mr=$(printf '%s\n' "${rate[@]}" | median)
    awk -v iv="$iv" -v l="$locks" -v c="$mc" -v p="$mp" -v d="$md" -v r="$mr" -v runs="${cpu[*]}" \
      'BEGIN {printf "interval %-6s lock meters %-3s: daemon %.2f %% of one CPU (%.1f us per tick; probe chasing %.2f %%, %.0f samples/s, disturbed %.1f %%); runs: %s\n", iv, l, 100*c, (r > 0 ? 1e6*c/r : 0), 100*p, r, 100*d, runs}'
    if [ -n "$BASELINE" ]; then
      bc=$(printf '%s\n' "${bcpu[@]}" | median)
      bp=$(printf '%s\n' "${bprobe[@]}" | median)
      bd=$(printf '%s\n' "${bdist[@]}" | median)
      br=$(printf '%s\n' "${brate[@]}" | median)
      awk -v iv="$iv" -v l="$locks" -v c="$bc" -v p="$bp" -v d="$bd" -v r="$br" -v n="$mc" -v runs="${bcpu[*]}" \
        'BEGIN {printf "interval %-6s lock meters %-3s: BASELINE %.2f %% of one CPU (%.1f us per tick; probe chasing %.2f %%, %.0f samples/s, disturbed %.1f %%); runs: %s; this build / baseline: %.3f\n", iv, l, 100*c, (r > 0 ? 1e6*c/r : 0), 100*p, r, 100*d, runs, (c > 0 ? n/c : 0)}'
    fi
  done
done
rm -f "$OUT/meters.json" "$OUT/sleep_floor"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
