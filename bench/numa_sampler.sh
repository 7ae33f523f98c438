#!/usr/bin/env bash
# Cost of the NUMA access sampler of `contend record --numa`
# (docs/benchmarks.md, "NUMA access sampler") on a memory-bound program:
# tests/programs/numa_hammer.c reads a 64 MiB array at random for SECONDS
# (default 3) and reports how many reads it made. ROUNDS (default 5)
# rounds, each running it, in turn:
#
# 1. alone;
# 2. under `contend record` (the lock collector preloaded, no sampling);
# 3. under `contend record --numa` (software sampler, default 1 ms of CPU
#    time; PERIOD overrides it, e.g. PERIOD=250us).
#
# The overhead is the drop in reads per second of the program's CPU time,
# 3 against 2 (the sampler alone) and 3 against 1; the launcher's sampler thread CPU time is in
# numa/sampler.json. Medians of the rounds; one run, on this machine.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
SECONDS_RUN=${SECONDS_RUN:-3}
ROUNDS=${ROUNDS:-5}
PERIOD=${PERIOD:-1ms}
D="$OUT/numa_sampler"
rm -rf "$D" && mkdir -p "$D"
gcc -std=c11 -Wall -Wextra -Werror -O1 -o "$D/hammer" "$ROOT/tests/programs/numa_hammer.c"
machine
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "target: numa_hammer, 64 MiB array, random reads, $SECONDS_RUN s; $ROUNDS rounds; period $PERIOD"
# Reads per second of the program's own CPU time: time the program was
# descheduled by other work on the machine does not count; the sampler's
# interrupts, taken in the program's context, do.
rate() { awk '/^reads / {r = $2} /^cpu_s / {c = $2} END {printf "%.0f", r / c}' "$1"; }
plain=() rec=() numa=() cpu=() resolved=()
for r in $(seq "$ROUNDS"); do
  "$D/hammer" "$SECONDS_RUN" >"$D/plain.out"
  "$CONTEND" record -o "$D/rec.data" --force -- "$D/hammer" "$SECONDS_RUN" >"$D/rec.out" 2>/dev/null
  "$CONTEND" record --numa --numa-period "$PERIOD" -o "$D/numa.data" --force -- "$D/hammer" "$SECONDS_RUN" >"$D/numa.out" 2>/dev/null
  p=$(rate "$D/plain.out"); q=$(rate "$D/rec.out"); n=$(rate "$D/numa.out")
  c=$(sed -n 's/.*"sampler_cpu_ns": \([0-9]*\).*/\1/p' "$D/numa.data/numa/sampler.json")
  s=$(sed -n 's/.*"samples": \([0-9]*\).*/\1/p' "$D/numa.data/numa/sampler.json")
  ok=$(sed -n 's/.*"resolved": \([0-9]*\).*/\1/p' "$D/numa.data/numa/sampler.json")
  echo "round $r: reads per CPU-second alone $p, record $q, record --numa $n; $s samples ($ok with page), sampler thread $(awk -v c="$c" 'BEGIN {printf "%.1f ms", c / 1e6}')"
  plain+=("$p") rec+=("$q") numa+=("$n") cpu+=("$(awk -v c="$c" -v s="$SECONDS_RUN" 'BEGIN {printf "%.3f", 100 * c / 1e9 / s}')")
done
mp=$(printf '%s\n' "${plain[@]}" | median)
mr=$(printf '%s\n' "${rec[@]}" | median)
mn=$(printf '%s\n' "${numa[@]}" | median)
echo "median reads per CPU-second: alone $mp, record $mr, record --numa $mn"
awk -v p="$mp" -v r="$mr" -v n="$mn" 'BEGIN {printf "sampler overhead: %.1f%% against record, %.1f%% against alone\n", 100 * (r - n) / r, 100 * (p - n) / p}'
echo "median sampler thread in the launcher: $(printf '%s\n' "${cpu[@]}" | median)% of one core"
