#!/bin/sh
# Adaptive work throttling (MAESTRO, Fowler et al. 2011) against the
# contend meters daemon, with memory saturated by the memory contention
# generator:
#
#   examples/throttle/run.sh [ROUNDS [TASKS [TASK_KB]]]
#
# Works from any directory. Builds contend (cargo build --release) and
# throttle (cc -O2 -pthread), calibrates the memory meters (contend meters
# calibrate, once, kept in target/throttle/calibration.json), starts
# `contend meters` on a private blackboard and `contend stress memory` on
# the last CPU, then runs the worker pool ROUNDS (3) times without and with
# throttling, alternating, and prints each run's completion time, the
# workers' parks and the meter's trace (share of samples with the trigger
# high, the meter's average). Everything it started is stopped at the end.
# CONTEND=/path/to/contend uses that binary instead of building one.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out="$root/target/throttle"
cc=${CC:-cc}
rounds=${1:-3}
tasks=${2:-400}
task_kb=${3:-8192}

if [ -n "${CONTEND:-}" ]; then
    contend=$CONTEND # a contend built already
else
    . "$root/examples/build-contend.sh"
fi

echo "== building throttle" >&2
mkdir -p "$out"
"$cc" -O2 -pthread -Wall -Wextra -std=c11 -I"$root/collector/include" \
    -o "$out/throttle" "$here/throttle.c"

cpus=$(getconf _NPROCESSORS_ONLN)
last=$((cpus - 1))
if [ ! -f "$out/calibration.json" ]; then
    echo "== calibrating the memory meters (contend meters calibrate)" >&2
    "$contend" meters calibrate -o "$out/calibration.json" --probe-cpu 0 >&2
fi

bb="$out/blackboard"
"$contend" meters --calibration "$out/calibration.json" --blackboard "$bb" \
    --probe-cpu 0 --format json >"$out/meters.json" 2>"$out/meters.err" &
daemon=$!
"$contend" stress memory --threads 1 --cpus "$last" --format json >"$out/stress.json" 2>/dev/null &
stress=$!
cleanup() { kill "$stress" "$daemon" 2>/dev/null || true; wait "$stress" "$daemon" 2>/dev/null || true; }
trap cleanup EXIT INT TERM
i=0
while [ ! -e "$bb" ] || ! grep -q "meters every" "$out/meters.err"; do
    i=$((i + 1)); [ "$i" -lt 600 ] || { echo "the daemon did not start" >&2; exit 1; }
    sleep 0.1
done
sleep 1

summary() {
    python3 -c '
import json, sys
d = json.loads(sys.stdin.read())
tr = d["trace"]
high = sum(1 for r in tr if r[2] == 2)
avg = sum(r[1] for r in tr) / len(tr) / 1e9 if tr else float("nan")
el, done, parks = d["elapsed_s"], d["done"], d["parks"]
parked = [round(x, 3) for x in d["parked_s"]]
print(f"{sys.argv[1]:<12} {el:8.3f} s  done {done}  parks {parks}  parked {parked} s  "
      f"meter high in {high}/{len(tr)} samples, avg {avg:.2f} GB/s")
' "$1"
}

echo "== $rounds rounds: $tasks tasks of 3 x $task_kb KiB, 2 workers, generator on CPU $last"
r=0
while [ "$r" -lt "$rounds" ]; do
    r=$((r + 1))
    "$out/throttle" --threads 2 --tasks "$tasks" --task-kb "$task_kb" --blackboard "$bb" \
        --no-throttle | summary "unthrottled"
    "$out/throttle" --threads 2 --tasks "$tasks" --task-kb "$task_kb" --blackboard "$bb" \
        | summary "throttled"
done
