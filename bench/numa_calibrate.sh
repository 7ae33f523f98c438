#!/usr/bin/env bash
# The NUMA latency calibration at full size (docs/benchmarks.md, "NUMA
# calibration"): `contend numa calibrate` with its defaults (256 MiB
# buffers, 3 rounds of 100 ms per point), timed, with its tables. The tests
# run it at 64 MiB and 20 ms rounds.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
D="$OUT/numa_calibrate"
rm -rf "$D" && mkdir -p "$D"
machine
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
start=$(date +%s.%N)
"$CONTEND" numa calibrate -o "$D/latency.json" --force 2>"$D/progress.txt"
end=$(date +%s.%N)
awk -v a="$start" -v b="$end" 'BEGIN {printf "calibration took %.1f s\n", b - a}'
