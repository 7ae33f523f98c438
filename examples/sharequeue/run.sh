#!/bin/sh
# Records the two versions of the shared-queue benchmark (Venter 2016,
# Section 4.3.1.4) and compares them with `contend compare`.
#
#   examples/sharequeue/run.sh [THREADS [ITEMS [ITERATIONS [WORK]]]]
#
# Works from any directory. Builds contend (cargo build --release) and
# sharequeue (cc -O2 -g -pthread), records into target/sharequeue/single.data
# and target/sharequeue/two.data (replacing earlier recordings), then prints
# the comparison. The arguments are passed to both runs of sharequeue; without
# any, THREADS is 4 or the number of online CPUs if that is smaller (more
# threads than CPUs measure preempted lock holders rather than the queue).
set -eu

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out="$root/target/sharequeue"
contend="$root/target/release/contend"
cc=${CC:-cc}

. "$root/examples/build-contend.sh"

echo "== building sharequeue" >&2
mkdir -p "$out"
"$cc" -O2 -g -pthread -Wall -Wextra -o "$out/sharequeue" "$here/sharequeue.c"

if [ $# -eq 0 ]; then
    cpus=$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 4)
    threads=4
    if [ "$cpus" -lt 4 ]; then
        threads=$cpus
    fi
    set -- "$threads"
fi

for mode in single two; do
    echo "== recording the $mode-lock version: sharequeue $mode $*" >&2
    "$contend" record -o "$out/$mode.data" --force -- "$out/sharequeue" "$mode" "$@"
done

echo "== contend compare single.data two.data" >&2
cd "$out"
"$contend" compare single.data two.data
