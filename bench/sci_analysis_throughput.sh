#!/usr/bin/env bash
# Throughput of the interference (SCI) analysis beside the lock analysis's,
# from one run (release build): `contend report --format json` of
#   - a region recording: bench/sci_overhead.c recorded with `contend
#     record`, PAIRS BEGIN/END pairs (plus the 10 % warm-up) in one thread,
#     so the report's work is the SCI analysis of PAIRS * 1.1 executions;
#   - the synthetic lock recording of bench/analysis_throughput.sh, EVENTS
#     lock events (8 threads, 4 mutexes), whose report runs the lock
#     analysis (and the SCI analysis of its lock blocks, as every report).
# The two reports alternate ROUNDS times; each is timed with /usr/bin/time
# (wall, user + system CPU time, peak RSS). CPU time is the figure to
# compare on a shared machine: the wall time also counts the time other
# programs held the CPUs. Throughput = executions (or events) per CPU
# second and per wall second, medians.
source "$(dirname "$0")/common.sh"
PAIRS=${PAIRS:-2000000}
EVENTS=${EVENTS:-10000000}
ROUNDS=${ROUNDS:-3}
(cd "$ROOT" && cargo build --release --quiet -p contend --example synth_recording)
INC=$("$CONTEND" include-dir)
gcc -std=c11 -Wall -Wextra -Werror -O2 -pthread -I "$INC" -o "$OUT/sci_tp" "$ROOT/bench/sci_overhead.c"
rm -rf "$OUT/sci_tp.data" "$OUT/synth_tp.data"
"$CONTEND" record --force -o "$OUT/sci_tp.data" -- "$OUT/sci_tp" region "$PAIRS" >/dev/null 2>&1
"$ROOT/target/release/examples/synth_recording" "$OUT/synth_tp.data" "$EVENTS" 8 4
machine
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
EXECS=$("$CONTEND" report "$OUT/sci_tp.data" --format json |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["sci"]["summary"]["executions"])')
sci_cpu=(); sci_wall=(); sci_rss=(); lock_cpu=(); lock_wall=(); lock_rss=()
run() { # $1 recording; prints "cpu wall rss"
  /usr/bin/time -f "%e %U %S %M" -o "$OUT/time_tp.txt" "$CONTEND" report "$1" --format json >/dev/null
  awk '{printf "%.2f %.2f %d\n", $2 + $3, $1, $4}' "$OUT/time_tp.txt"
}
for _ in $(seq "$ROUNDS"); do
  read -r c w m < <(run "$OUT/sci_tp.data")
  sci_cpu+=("$c"); sci_wall+=("$w"); sci_rss+=("$m")
  read -r c w m < <(run "$OUT/synth_tp.data")
  lock_cpu+=("$c"); lock_wall+=("$w"); lock_rss+=("$m")
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
report() { # $1 label, $2 count, $3 unit, then cpu/wall/rss arrays as strings
  local label=$1 n=$2 unit=$3 cpus=$4 walls=$5 rsss=$6 mc mw mm
  mc=$(printf '%s\n' $cpus | median)
  mw=$(printf '%s\n' $walls | median)
  mm=$(printf '%s\n' $rsss | median)
  echo "$label: $n $unit; CPU ${mc} s (runs: $cpus), wall ${mw} s (runs: $walls), peak RSS ${mm} KiB"
  awk -v n="$n" -v c="$mc" -v w="$mw" -v m="$mm" -v u="$unit" 'BEGIN {
    printf "  %.2f million %s per CPU second, %.2f million per wall second, %.0f bytes of peak RSS per one\n",
      n / c / 1e6, u, n / w / 1e6, m * 1024 / n }'
}
report "SCI analysis (region recording)" "$EXECS" "block executions" "${sci_cpu[*]}" "${sci_wall[*]}" "${sci_rss[*]}"
report "lock analysis (synthetic recording)" "$EVENTS" "lock events" "${lock_cpu[*]}" "${lock_wall[*]}" "${lock_rss[*]}"
rm -rf "$OUT/sci_tp.data" "$OUT/synth_tp.data" "$OUT/sci_tp" "$OUT/time_tp.txt"
