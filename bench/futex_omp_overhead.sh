#!/usr/bin/env bash
# Added cost of the interposed syscall() (a non-futex call passed through,
# and a recorded FUTEX_WAKE that wakes nobody) and of the OMPT tool (an
# uncontended omp_set_lock + omp_unset_lock pair, an empty 2-thread
# parallel region; clang -fopenmp, libomp) and of the libgomp wrappers (the
# same program built with gcc -fopenmp: GOMP_parallel and omp_*_lock
# interposed). Each program runs alternately without and with `contend
# record`, ROUNDS times; medians, differences and ratios, in wall time and
# in CPU time (the thread's, or for the regions the process's: time other
# programs hold the CPUs is not counted).
source "$(dirname "$0")/common.sh"
ROUNDS=${ROUNDS:-7}
CALLS=${CALLS:-2000000}
PAIRS=${PAIRS:-5000000}
REGIONS=${REGIONS:-20000}
gcc -std=c11 -Wall -Wextra -Werror -O2 -o "$OUT/syscall_overhead" "$ROOT/bench/syscall_overhead.c"
have_omp=1
clang -O2 -fopenmp -o "$OUT/omp_overhead" "$ROOT/bench/omp_overhead.c" 2>/dev/null || have_omp=0
gcc -O2 -fopenmp -o "$OUT/omp_overhead_gomp" "$ROOT/bench/omp_overhead.c"
machine
field() { sed "s/.*$1=\([0-9.]*\).*/\1/"; }
diff_line() { # label, unit, base values, rec values
  local mb mr
  mb=$(printf '%s\n' $3 | median)
  mr=$(printf '%s\n' $4 | median)
  echo "$1: without ${mb} $2, with recording ${mr} $2; added $(awk -v a="$mr" -v b="$mb" 'BEGIN {printf "%.2f", a-b}') $2, ratio $(awk -v a="$mr" -v b="$mb" 'BEGIN {printf "%.2f", a/b}') (medians of $ROUNDS runs)"
}
pb=() pr=() wb=() wr=() pcb=() pcr=() wcb=() wcr=()
for i in $(seq "$ROUNDS"); do
  b=$("$OUT/syscall_overhead" "$CALLS")
  r=$("$CONTEND" record --force -o "$OUT/syscall.data" -- "$OUT/syscall_overhead" "$CALLS" 2>/dev/null)
  pb+=("$(field passthrough_ns <<<"$b")"); pr+=("$(field passthrough_ns <<<"$r")")
  wb+=("$(field futex_wake_ns <<<"$b")"); wr+=("$(field futex_wake_ns <<<"$r")")
  pcb+=("$(field passthrough_cpu_ns <<<"$b")"); pcr+=("$(field passthrough_cpu_ns <<<"$r")")
  wcb+=("$(field futex_wake_cpu_ns <<<"$b")"); wcr+=("$(field futex_wake_cpu_ns <<<"$r")")
done
diff_line "syscall(SYS_getppid), passed through" "ns" "${pb[*]}" "${pr[*]}"
diff_line "syscall(SYS_futex, FUTEX_WAKE) waking nobody, recorded" "ns" "${wb[*]}" "${wr[*]}"
diff_line "syscall(SYS_getppid), passed through, thread CPU time" "ns" "${pcb[*]}" "${pcr[*]}"
diff_line "syscall(SYS_futex, FUTEX_WAKE) waking nobody, recorded, thread CPU time" "ns" "${wcb[*]}" "${wcr[*]}"
omp_rounds() { # label, program
  local lb=() lr=() rb=() rr=() lcb=() lcr=() rcb=() rcr=() b r
  for i in $(seq "$ROUNDS"); do
    b=$("$2" "$PAIRS" "$REGIONS")
    r=$("$CONTEND" record --force -o "$OUT/omp.data" -- "$2" "$PAIRS" "$REGIONS" 2>/dev/null)
    lb+=("$(field lock_pair_ns <<<"$b")"); lr+=("$(field lock_pair_ns <<<"$r")")
    rb+=("$(field region_us <<<"$b")"); rr+=("$(field region_us <<<"$r")")
    lcb+=("$(field lock_pair_cpu_ns <<<"$b")"); lcr+=("$(field lock_pair_cpu_ns <<<"$r")")
    rcb+=("$(field region_cpu_us <<<"$b")"); rcr+=("$(field region_cpu_us <<<"$r")")
  done
  diff_line "omp_set_lock + omp_unset_lock, uncontended ($1)" "ns" "${lb[*]}" "${lr[*]}"
  diff_line "empty parallel region, 2 threads ($1)" "us" "${rb[*]}" "${rr[*]}"
  diff_line "omp_set_lock + omp_unset_lock, uncontended ($1), thread CPU time" "ns" "${lcb[*]}" "${lcr[*]}"
  diff_line "empty parallel region, 2 threads ($1), process CPU time" "us" "${rcb[*]}" "${rcr[*]}"
}
omp_rounds "gcc -fopenmp, libgomp wrappers" "$OUT/omp_overhead_gomp"
if [ "$have_omp" = 1 ]; then
  omp_rounds "clang -fopenmp, libomp, OMPT" "$OUT/omp_overhead"
else
  echo "clang -fopenmp not available: OpenMP overhead not measured"
fi
