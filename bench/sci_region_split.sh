#!/usr/bin/env bash
# Before/after cost of a contend/region.h BEGIN+END pair while recording,
# split into user and kernel CPU time, from one run. The collector is
# built from two git revisions (BEFORE, default HEAD~1, and the working
# tree) with the flags of crates/contend-collector/build.rs, and
# bench/sci_overhead.c (region mode, PAIRS pairs plus 10 % warm-up) runs
# preloaded with each, and once without any, alternately ROUNDS times,
# with the environment `contend record` gives the collector (CONTEND_DIR,
# CONTEND_CLOCK=tsc). Per pair: the loop's own CPU time (ns= of the
# program, CLOCK_THREAD_CPUTIME_ID) and the process's user and system CPU
# time from /usr/bin/time (10 ms resolution; system time is the kernel's
# work for the trace: creating the file and claiming, zeroing, mapping and
# faulting in chunks). Medians, and all runs. No release build needed.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="$ROOT/bench/out/region_split"
BEFORE=${BEFORE:-HEAD~1}
ROUNDS=${ROUNDS:-5}
PAIRS=${PAIRS:-10000000}
rm -rf "$OUT"
mkdir -p "$OUT/before"
median() { sort -g | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
build() { # $1 tree root, $2 output .so (the flags of build.rs)
  gcc -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -fPIC -O2 -fvisibility=hidden -shared \
    -Wl,-soname,libcontend_lock.so -Wl,-z,now -Wl,--no-undefined \
    "-Wl,--version-script=$1/collector/src/lock_collector.map" -I "$1/collector/include" \
    -o "$2" "$1"/collector/src/*.c -ldl -lpthread
}
(cd "$ROOT" && git archive "$BEFORE" collector) | tar -x -C "$OUT/before"
build "$OUT/before" "$OUT/before.so"
build "$ROOT" "$OUT/after.so"
gcc -std=c11 -Wall -Wextra -Werror -O2 -pthread -I "$ROOT/collector/include" \
  -o "$OUT/sci_overhead" "$ROOT/bench/sci_overhead.c"
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) CPUs, $(uname -sr)"
echo "before: $(cd "$ROOT" && git rev-parse --short "$BEFORE"), after: working tree of $(cd "$ROOT" && git rev-parse --short HEAD)"
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
one() { # $1 label (none|before|after); prints "loop user sys" ns per pair
  local d="$OUT/rec.$1" pre=()
  rm -rf "$d"
  mkdir -p "$d"
  [ "$1" = none ] || pre=(env CONTEND_DIR="$d" CONTEND_CLOCK=tsc LD_PRELOAD="$OUT/$1.so")
  "${pre[@]}" /usr/bin/time -f "%U %S" -o "$OUT/time.txt" "$OUT/sci_overhead" region "$PAIRS" >"$OUT/out.txt"
  local loop
  loop=$(sed -n 's/^ns=\([0-9.]*\).*/\1/p' "$OUT/out.txt")
  awk -v l="$loop" -v n="$PAIRS" '{printf "%s %.1f %.1f\n", l, $1 * 1e9 / (n * 1.1), $2 * 1e9 / (n * 1.1)}' "$OUT/time.txt"
  rm -rf "$d"
}
declare -A loop user sys
for _ in $(seq "$ROUNDS"); do
  for v in none before after; do
    read -r l u s < <(one "$v")
    loop[$v]+="$l "; user[$v]+="$u "; sys[$v]+="$s "
  done
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
for v in none before after; do
  ml=$(printf '%s\n' ${loop[$v]} | median)
  mu=$(printf '%s\n' ${user[$v]} | median)
  ms=$(printf '%s\n' ${sys[$v]} | median)
  echo "$v: loop ${ml} ns per pair (CPU time; runs: ${loop[$v]}); process user ${mu} ns, system ${ms} ns per pair (runs: user ${user[$v]}/ system ${sys[$v]})"
done
rm -rf "$OUT"
