# Shared setup of the benchmark scripts: builds contend in release mode and
# prints the machine the numbers come from.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="$ROOT/bench/out"
mkdir -p "$OUT"
CONTEND="$ROOT/target/release/contend"
# BENCH_NO_BUILD=1: use the binaries as built (another build shares target/).
[ -n "${BENCH_NO_BUILD:-}" ] || (cd "$ROOT" && cargo build --release --quiet)
machine() {
  echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) CPUs, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -sr), clocksource $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)"
}
median() { sort -g | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
