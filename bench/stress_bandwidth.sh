#!/usr/bin/env bash
# Benchmark of the memory contention generator (`contend stress memory`,
# Venter 2016 Section 4.1.4):
#   1. the bandwidth it generates with 1 and with 2 threads (bytes read +
#      written per second), and the ratio;
#   2. the slowdown it inflicts on a memory-bound program (bench/stress_victim.c
#      memory: STREAM triad over 3 x 64 MiB) pinned to CPU 0 while one
#      generator thread runs on CPU 1, against the same program alone; and on
#      a compute-bound control (stress_victim compute), which shares nothing
#      but the machine with it.
# Runs are interleaved (alone, with, alone, with, ...); medians of ROUNDS.
#
#   bash bench/stress_bandwidth.sh        # ROUNDS=5 DURATION=2
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
ROUNDS=${ROUNDS:-5}
DURATION=${DURATION:-2}
D="$OUT/stress"
mkdir -p "$D"
gcc -std=c11 -O2 -Wall -Wextra -Werror -o "$D/stress_victim" "$ROOT/bench/stress_victim.c"
machine
cpus=$(nproc)
if [ "$cpus" -lt 2 ]; then
  echo "needs at least 2 CPUs" >&2
  exit 1
fi

bw() { # threads cpus -> GB/s
  "$CONTEND" stress memory --threads "$1" --cpus "$2" --duration "$DURATION" --format json \
    | python3 -c 'import json,sys; print(json.load(sys.stdin)["bandwidth_bytes_per_s"]/1e9)'
}
: >"$D/bw1.txt"
: >"$D/bw2.txt"
for _ in $(seq "$ROUNDS"); do
  bw 1 0 >>"$D/bw1.txt"
  bw 2 0-1 >>"$D/bw2.txt"
done
b1=$(median <"$D/bw1.txt")
b2=$(median <"$D/bw2.txt")
echo "generator bandwidth, 1 thread (CPU 0):   $b1 GB/s (median of $ROUNDS; all: $(tr '\n' ' ' <"$D/bw1.txt"))"
echo "generator bandwidth, 2 threads (CPU 0-1): $b2 GB/s (median of $ROUNDS; all: $(tr '\n' ' ' <"$D/bw2.txt"))"
echo "ratio 2 threads / 1 thread: $(awk -v a="$b2" -v b="$b1" 'BEGIN {printf "%.2f", a/b}')"

victim() { # mode -> seconds, pinned to CPU 0
  taskset -c 0 "$D/stress_victim" "$1" | sed -n 's/^seconds=//p'
}
: >"$D/gen.bw"
for mode in memory compute; do
  : >"$D/$mode.alone"
  : >"$D/$mode.with"
  for _ in $(seq "$ROUNDS"); do
    victim "$mode" >>"$D/$mode.alone"
    "$CONTEND" stress memory --threads 1 --cpus 1 --format json >"$D/gen.json" 2>"$D/gen.err" &
    gen=$!
    sleep 0.5   # buffers touched, streaming
    victim "$mode" >>"$D/$mode.with"
    kill -TERM "$gen"   # (a background job of a script ignores SIGINT)
    wait "$gen"
    python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["bandwidth_bytes_per_s"]/1e9)' "$D/gen.json" >>"$D/gen.bw"
  done
  alone=$(median <"$D/$mode.alone")
  with=$(median <"$D/$mode.with")
  echo "$mode-bound program on CPU 0: alone $alone s, with 1 generator thread on CPU 1 $with s, slowdown x$(awk -v a="$with" -v b="$alone" 'BEGIN {printf "%.2f", a/b}')"
done
echo "generator bandwidth while the programs ran: median $(median <"$D/gen.bw") GB/s"
