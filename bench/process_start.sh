#!/usr/bin/env bash
# What recording adds to a program that starts many short processes
# (docs/benchmarks.md, "A build's processes"): a parallel build of FILES
# (default 16) small C files (`make -jJOBS`, default 2: about 50 processes,
# compilers, assemblers, shells and `ar`), ROUNDS rounds (default 7), each
# round running the build plainly, under this build's `contend record`
# and, with BASELINE=/path/to/an/older/contend, under that one, alternated.
#
# For each: the build's CPU time (user + system of make and every process
# it waited for, from wait4: `cpu_of` plainly, the recording's
# `counters.cpu_time_ns` recorded), and for the recordings the report's
# estimate of the time recording added (`recording.cost.estimated_ns`) and
# of it the collector's start-up outside the threads
# (`process_slow_path_ns`). Medians; added = recorded − plain.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
FILES=${FILES:-16}
JOBS=${JOBS:-2}
ROUNDS=${ROUNDS:-7}
BASELINE=${BASELINE:-}
D="$OUT/process_start"
rm -rf "$D" && mkdir -p "$D/src"
for i in $(seq "$FILES"); do
  printf '#include <stdio.h>\nint f%d(int x) { int s = 0; for (int i = 0; i < x; i++) s += i * %d; return s; }\n' "$i" "$i" >"$D/src/f$i.c"
done
cat >"$D/src/Makefile" <<'EOF'
SRCS = $(wildcard f*.c)
OBJS = $(SRCS:.c=.o)
lib.a: $(OBJS)
	ar rcs $@ $^
%.o: %.c
	gcc -O2 -c $< -o $@
clean:
	rm -f *.o lib.a
EOF
machine
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "build: $FILES files, make -j$JOBS; $ROUNDS rounds"

labels=(plain "this build") bins=("" "$CONTEND")
if [ -n "$BASELINE" ]; then labels+=(baseline); bins+=("$BASELINE"); fi
declare -A cpu est outside
for r in $(seq "$ROUNDS"); do
  for i in "${!bins[@]}"; do
    make -s -C "$D/src" clean
    if [ -z "${bins[$i]}" ]; then
      cpu_of "$D/cpu.txt" make -s -C "$D/src" "-j$JOBS"
      c=$(cat "$D/cpu.txt")
      line="cpu ${c} s"
    else
      "${bins[$i]}" record -o "$D/rec.data" --force -- make -s -C "$D/src" "-j$JOBS" >/dev/null 2>"$D/record.err"
      read -r c e o < <("${bins[$i]}" report "$D/rec.data" --format json 2>/dev/null | python3 -c '
import json, sys
r = json.load(sys.stdin)
m = json.load(open(sys.argv[1]))
cost = r["recording"]["cost"]
print(m["counters"]["cpu_time_ns"] / 1e9, cost["estimated_ns"] / 1e9, cost.get("process_slow_path_ns", 0) / 1e9)' "$D/rec.data/meta.json")
      est[$i]+="$e "
      outside[$i]+="$o "
      line="cpu ${c} s, estimated added ${e} s (start-up outside the threads ${o} s)"
    fi
    cpu[$i]+="$c "
    echo "round $r, ${labels[$i]}: $line"
  done
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
plain=$(tr ' ' '\n' <<<"${cpu[0]}" | grep . | median)
echo "median plain: CPU $plain s"
for i in "${!bins[@]}"; do
  [ "$i" = 0 ] && continue
  c=$(tr ' ' '\n' <<<"${cpu[$i]}" | grep . | median)
  e=$(tr ' ' '\n' <<<"${est[$i]}" | grep . | median)
  o=$(tr ' ' '\n' <<<"${outside[$i]}" | grep . | median)
  awk -v l="${labels[$i]}" -v c="$c" -v p="$plain" -v e="$e" -v o="$o" 'BEGIN {
    printf "median %s: CPU %.3f s, added %.1f ms (%.1f %%), estimated %.1f ms (of it %.1f ms start-up outside the threads), estimate / added %.2f\n",
      l, c, 1000 * (c - p), 100 * (c - p) / p, 1000 * e, 1000 * o, (c > p ? e / (c - p) : 0) }'
done
