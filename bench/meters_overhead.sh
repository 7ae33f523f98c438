#!/usr/bin/env bash
# Cost of the meter daemon (`contend meters`): CPU time of all its threads
# per second of run time (its `daemon_cpu`, after the probe's chain is
# built), and the share of that spent chasing pointers (the probe), at
# each interval, ROUNDS times DURATION each; the median is printed.
source "$(dirname "$0")/common.sh"
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-10s}
INTERVALS=${INTERVALS:-"1ms 10ms 100ms"}
machine
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for iv in $INTERVALS; do
  for locks in off on; do
    flag=--no-lock-meters; [ "$locks" = on ] && flag=
    cpu=(); probe=()
    for i in $(seq "$ROUNDS"); do
      "$CONTEND" meters --interval "$iv" --duration "$DURATION" --format json \
        --blackboard "$OUT/meters-bench-bb" $flag >"$OUT/meters.json"
      read -r c p < <(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["daemon_cpu"], d["probe"]["busy_s"]/d["duration_s"])' "$OUT/meters.json")
      cpu+=("$c"); probe+=("$p")
    done
    mc=$(printf '%s\n' "${cpu[@]}" | median)
    mp=$(printf '%s\n' "${probe[@]}" | median)
    awk -v iv="$iv" -v l="$locks" -v c="$mc" -v p="$mp" -v runs="${cpu[*]}" \
      'BEGIN {printf "interval %-6s lock meters %-3s: daemon %.2f %% of one CPU (probe chasing %.2f %%); runs: %s\n", iv, l, 100*c, 100*p, runs}'
  done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
