#!/bin/sh
# Builds the collector (cargo) and the smoke programs, runs each under the
# collector and checks the traces with dump_trace.py. Not part of CI; a
# quick end-to-end check for whoever changes collector/src.
#   collector/tests/run_smoke.sh [workdir]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
work=${1:-$(mktemp -d /tmp/contend-smoke.XXXXXX)}
mkdir -p "$work/bin"
bin=$work/bin

(cd "$root" && cargo build -q -p contend-collector)
so=$(ls -t "$root"/target/debug/build/contend-collector-*/out/libcontend_lock.so | head -1)
cp "$so" "$bin/libcontend_lock.so"
so=$bin/libcontend_lock.so

cc=${CC:-cc}
$cc -O2 -Wall -o "$bin/smoke" "$here/smoke.c" -lpthread
$cc -O2 -Wall -o "$bin/smoke_nolibpthread" "$here/smoke.c"
$cc -O2 -Wall -o "$bin/oldabi" "$here/oldabi.c" -lpthread
$cc -O2 -Wall -o "$bin/forks" "$here/forks.c" -lpthread
$cc -O2 -Wall -o "$bin/robust" "$here/robust.c" -lpthread
$cc -O2 -Wall -o "$bin/misc" "$here/misc.c" -lpthread
$cc -O2 -fPIC -shared -o "$bin/dlopen_lib.so" "$here/dlopen_lib.c"
$cc -O2 -o "$bin/dlopen_main" "$here/dlopen_main.c" -ldl
$cc -O2 -fPIC -shared -o "$bin/early_lib.so" "$here/early_lib.c"
${CXX:-c++} -O2 -std=c++17 -o "$bin/cxx_mutex" "$here/cxx_mutex.cpp" -pthread
$cc -O2 -Wall -o "$bin/bench_fastpath" "$here/bench_fastpath.c" -lpthread

pass=0
fail=0
# run NAME ENV... -- CMD...: runs CMD under the collector into $work/NAME
# and checks every trace it wrote.
run() {
    name=$1
    shift
    dir=$work/$name
    rm -rf "$dir"
    if env CONTEND_DIR="$dir" LD_PRELOAD="$so" "$@" >"$work/$name.out" 2>&1 &&
        grep -q '^ok' "$work/$name.out" && check "$dir"; then
        pass=$((pass + 1))
        echo "pass $name"
    else
        fail=$((fail + 1))
        echo "FAIL $name (see $work/$name.out)"
    fi
}
check() {
    for f in "$1"/locks/*.ctrace; do
        python3 "$here/dump_trace.py" "$f" >>"$work/$name.out" || return 1
    done
}

run smoke "$bin/smoke" 4 20000
run smoke256 "$bin/smoke" 256 500
run smoke_nolibpthread "$bin/smoke_nolibpthread" 4 1000
run smoke_tsc_stacks env CONTEND_CLOCK=tsc CONTEND_TSC_HZ=2600000000 CONTEND_STACK_EVERY=7 CONTEND_CHUNK_KB=4 "$bin/smoke" 4 5000
run oldabi "$bin/oldabi"
run forks "$bin/forks"
run robust "$bin/robust"
run cancel "$bin/misc" cancel
run churn "$bin/misc" churn 2000
run exit_while_locking "$bin/misc" exit
run signal "$bin/misc" signal
run dlopen "$bin/dlopen_main" "$bin/dlopen_lib.so"
run cxx "$bin/cxx_mutex"
run lazy_init env LD_PRELOAD="$so $bin/early_lib.so" "$bin/cxx_mutex"
for m in /usr/lib/x86_64-linux-gnu/libjemalloc.so.2 /usr/lib/x86_64-linux-gnu/libtcmalloc.so.4; do
    [ -e "$m" ] && run "$(basename "$m")" env LD_PRELOAD="$m $so" CONTEND_STACK_EVERY=3 "$bin/cxx_mutex"
done

# SIGKILL mid-run: the trace must still be readable
dir=$work/sigkill
rm -rf "$dir"
env CONTEND_DIR="$dir" LD_PRELOAD="$so" "$bin/smoke" 4 100000000 >/dev/null 2>&1 &
pid=$!
sleep 0.5
kill -9 "$pid"
wait "$pid" || true
name=sigkill
if check "$dir"; then pass=$((pass + 1)); echo "pass sigkill"; else fail=$((fail + 1)); echo "FAIL sigkill"; fi

echo "uncontended pairs, without and with the collector (tsc clock):"
"$bin/bench_fastpath" 5000000
rm -rf "$work/bench"
env CONTEND_DIR="$work/bench" CONTEND_CLOCK=tsc LD_PRELOAD="$so" "$bin/bench_fastpath" 5000000
rm -rf "$work/bench"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
