#!/bin/sh
# Runs the scaling example under `contend scale` and prints the speed-up
# loss report (Venter 2016, Sections 3.1 and 3.2.2.1).
#
#   examples/scaling/run.sh [THREADS [REPEAT]]
#
# Works from any directory. Builds contend (cargo build --release) and
# scaling (gcc -O2 -g -pthread), runs
#   contend scale --threads THREADS --repeat REPEAT -- scaling {threads}
# into target/scaling/scaling.scale (replacing an earlier one) and prints
# `contend report` of it. THREADS is a list such as 2 or 2,4 (default: 2, or
# 2,4 on a machine with at least 4 CPUs); REPEAT defaults to 3.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out="$root/target/scaling"
contend="$root/target/release/contend"
cc=${CC:-gcc}

. "$root/examples/build-contend.sh"

echo "== building scaling" >&2
mkdir -p "$out"
"$cc" -std=c11 -O2 -g -pthread -Wall -Wextra -o "$out/scaling" "$here/scaling.c"

cpus=$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)
threads=${1:-2}
if [ $# -eq 0 ] && [ "$cpus" -ge 4 ]; then
    threads=2,4
fi
repeat=${2:-3}

echo "== contend scale --threads $threads --repeat $repeat -- scaling {threads}" >&2
"$contend" scale --threads "$threads" --repeat "$repeat" -o "$out/scaling.scale" --force \
    -- "$out/scaling" '{threads}'

echo "== contend report scaling.scale" >&2
"$contend" report "$out/scaling.scale"
