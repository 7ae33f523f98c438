#!/usr/bin/env bash
# Added cost of the futex tracer (the kernel's syscalls:sys_enter_futex /
# sys_exit_futex tracepoints, with user call chains, through
# perf_event_open) per futex system call: bench/syscall_overhead.c built
# statically (so the collector cannot be loaded and `contend record`
# traces it through the tracepoints), run alternately without and with
# `contend record`, ROUNDS times; medians and differences. Its FUTEX_WAKE
# on a word nobody waits on is one futex call: one entry and one exit
# sample, as every futex wait has. The non-futex getppid() is the control
# (the tracepoints are on sys_enter_futex only). Needs root (or
# CAP_PERFMON, or kernel.perf_event_paranoid low enough) and tracefs.
source "$(dirname "$0")/common.sh"
ROUNDS=${ROUNDS:-7}
CALLS=${CALLS:-200000}
gcc -std=c11 -Wall -Wextra -Werror -O2 -static -fno-omit-frame-pointer \
  -o "$OUT/syscall_overhead_static" "$ROOT/bench/syscall_overhead.c"
machine
field() { sed "s/.*$1=\([0-9.]*\).*/\1/"; }
diff_line() { # label, unit, base values, rec values
  local mb mr
  mb=$(printf '%s\n' $3 | median)
  mr=$(printf '%s\n' $4 | median)
  echo "$1: without ${mb} $2, with the futex tracer ${mr} $2; added $(awk -v a="$mr" -v b="$mb" 'BEGIN {printf "%.2f", a-b}') $2 (medians of $ROUNDS runs)"
}
pb=() pr=() wb=() wr=()
for i in $(seq "$ROUNDS"); do
  b=$("$OUT/syscall_overhead_static" "$CALLS")
  r=$("$CONTEND" record --force -o "$OUT/futex_trace.data" -- "$OUT/syscall_overhead_static" "$CALLS" 2>/dev/null)
  pb+=("$(field passthrough_ns <<<"$b")"); pr+=("$(field passthrough_ns <<<"$r")")
  wb+=("$(field futex_wake_ns <<<"$b")"); wr+=("$(field futex_wake_ns <<<"$r")")
  grep -E '"(calls|lost)"' "$OUT/futex_trace.data/futex/futex.json" | tr -d ' \n'; echo
done
diff_line "syscall(SYS_getppid) (control, not traced)" "ns" "${pb[*]}" "${pr[*]}"
diff_line "syscall(SYS_futex, FUTEX_WAKE), traced" "ns" "${wb[*]}" "${wr[*]}"
