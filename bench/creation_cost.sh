#!/usr/bin/env bash
# Cost of keeping every lock's creation call stack (the 8 innermost frames
# of its init call or first use, without --stack-every): bench/creation_cost.c
# recorded by two contend binaries, OLD (before creation stacks) and NEW,
# alternating, ROUNDS rounds of N mutexes; prints the medians of the
# program's own CPU-time figures and the NEW/OLD ratios.
#
#   bench/creation_cost.sh OLD_CONTEND NEW_CONTEND
# (build each from its commit: `cargo build -p contend-cli`, copy
# target/debug/contend; the collector is built with -O2 in every profile.)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="$ROOT/bench/out"
mkdir -p "$OUT"
OLD=${1:?old contend binary}
NEW=${2:?new contend binary}
ROUNDS=${ROUNDS:-7}
N=${N:-20000}
median() { sort -g | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
gcc -std=c11 -Wall -Wextra -Werror -O2 -g -pthread -o "$OUT/creation_cost" "$ROOT/bench/creation_cost.c"
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) CPUs; load: $(cut -d' ' -f1-3 /proc/loadavg)"
declare -A v=()
for i in $(seq "$ROUNDS"); do
  for which in old new; do
    bin=$OLD; [ "$which" = new ] && bin=$NEW
    line=$("$bin" record --force -o "$OUT/creation_cost.data" -- "$OUT/creation_cost" "$N" 2>/dev/null)
    for k in start_cpu_us init_ns first_use_ns; do
      v[$which.$k]+="$(sed "s/.*$k=\([0-9.]*\).*/\1/" <<<"$line") "
    done
  done
  line=$("$OUT/creation_cost" "$N")
  for k in start_cpu_us init_ns first_use_ns; do
    v[plain.$k]+="$(sed "s/.*$k=\([0-9.]*\).*/\1/" <<<"$line") "
  done
done
for k in start_cpu_us init_ns first_use_ns; do
  p=$(tr ' ' '\n' <<<"${v[plain.$k]}" | sed '/^$/d' | median)
  o=$(tr ' ' '\n' <<<"${v[old.$k]}" | sed '/^$/d' | median)
  n=$(tr ' ' '\n' <<<"${v[new.$k]}" | sed '/^$/d' | median)
  echo "$k: unrecorded $p, old $o, new $n (medians of $ROUNDS, N=$N); new/old $(awk -v a="$n" -v b="$o" 'BEGIN {printf "%.2f", a/b}')"
  echo "  old runs: ${v[old.$k]}"
  echo "  new runs: ${v[new.$k]}"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
rm -rf "$OUT/creation_cost.data" "$OUT/creation_cost"
