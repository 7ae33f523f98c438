#!/usr/bin/env bash
# Instructions the MPI recorder adds per call (docs/benchmarks.md, "MPI
# recorder"), counted by valgrind's callgrind rather than timed: the count
# does not depend on what else the machine runs, so a change to the
# recorder can be judged on a loaded machine, and the recorder's own cost
# can be told apart from the MPI library's. bench/mpi_overhead.c runs as a
# singleton (no launcher) under callgrind, CALLS calls per kind, one round,
# once without and once with the recorder (LD_PRELOAD, CONTEND_DIR,
# CONTEND_CLOCK=tsc and a CONTEND_TSC_HZ, as `record --mpi` gives them on
# x86-64: without a frequency the recorder falls back to clock_gettime,
# which valgrind runs as a system call); for each MPI function main() calls, the inclusive
# instruction count of those calls divided by their number. "added" is
# with minus without: the recorder's wrapper and whatever more the library
# does for it (e.g. filling statuses the program passed as
# MPI_STATUS(ES)_IGNORE). User-space instructions only: the system calls
# that claim trace chunks (a cost per trace byte) are not counted here;
# bench/mpi_overhead.sh measures time, which includes them.
#
# LIB=DIR takes the recorder libraries (libcontend_mpi_<impl>.so) from DIR
# instead of the installed ones; BEFORE=DIR adds a column for an older
# build's (e.g. compiled from `git stash`), counted the same way.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
CALLS=${CALLS:-20000}
D="$OUT/mpi_instructions"
rm -rf "$D" && mkdir -p "$D"
command -v valgrind >/dev/null || { echo "valgrind is not installed (apt-get install valgrind)"; exit 1; }
machine
echo "$(valgrind --version), CALLS=$CALLS"
if [ -z "${LIB:-}" ]; then
  "$CONTEND" record --mpi --mpi-impl openmpi -o "$D/install.data" --force -- /bin/true >/dev/null 2>&1 || true
  "$CONTEND" record --mpi --mpi-impl mpich -o "$D/install.data" --force -- /bin/true >/dev/null 2>&1 || true
fi
cache="${XDG_CACHE_HOME:-$HOME/.cache}/contend"

# per_call OUT: "name instructions_per_call" for every MPI function main calls
per_call() {
  callgrind_annotate --tree=calling --inclusive=yes "$1" 2>/dev/null | python3 -c '
import re, sys
lines = sys.stdin.read().splitlines()
for i, l in enumerate(lines):
    if re.search(r"\*\s+\S*:main \[", l):
        for m in lines[i + 1:]:
            c = re.match(r"\s*([\d,]+) .*>\s+\S*?:P?(MPI_\w+) \(([\d,]+)x\)", m)
            if not c:
                if not m.strip():
                    break
                continue
            n = int(c.group(3).replace(",", ""))
            print(c.group(2), "%.1f" % (int(c.group(1).replace(",", "")) / n))
        break
'
}

count() { # name program library(or empty) out
  local name=$1 prog=$2 lib=$3 out=$4
  rm -rf "$D/$name.data"
  if [ -n "$lib" ]; then
    CONTEND_DIR="$D/$name.data" LD_PRELOAD="$lib" CONTEND_CLOCK=tsc CONTEND_TSC_HZ=1000000000 \
      valgrind --tool=callgrind --callgrind-out-file="$out" "$prog" "$CALLS" 1 >/dev/null 2>&1
  else
    valgrind --tool=callgrind --callgrind-out-file="$out" "$prog" "$CALLS" 1 >/dev/null 2>&1
  fi
  per_call "$out" >"$out.txt"
  rm -f "$out"
}

run_impl() { # name compiler library
  local name=$1 compiler=$2 lib before=
  if [ -n "${LIB:-}" ]; then lib="$LIB/libcontend_mpi_$3.so"; [ -f "$lib" ] || lib=
  else lib=$(ls -t "$cache"/libcontend_mpi_"$3"-*.so 2>/dev/null | head -1); fi
  [ -n "${BEFORE:-}" ] && before="$BEFORE/libcontend_mpi_$3.so"
  [ -n "$lib" ] || { echo "$name: no recorder library, skipped"; return; }
  "$compiler" -O2 -o "$D/overhead_$name" "$ROOT/bench/mpi_overhead.c" 2>"$D/$name.cc.txt"
  count "$name" "$D/overhead_$name" "" "$D/$name.plain"
  count "$name" "$D/overhead_$name" "$lib" "$D/$name.rec"
  [ -n "$before" ] && count "$name" "$D/overhead_$name" "$before" "$D/$name.before"
  echo "$name: instructions per call (callgrind), $CALLS calls of each kind:"
  while read -r fn p; do
    w=$(awk -v f="$fn" '$1 == f {print $2}' "$D/$name.rec.txt")
    line="  $fn: without $p, with $w, added $(awk -v a="$p" -v b="$w" 'BEGIN {printf "%.1f", b - a}')"
    if [ -n "$before" ]; then
      o=$(awk -v f="$fn" '$1 == f {print $2}' "$D/$name.before.txt")
      line="$line (before: with $o, added $(awk -v a="$p" -v b="$o" 'BEGIN {printf "%.1f", b - a}'))"
    fi
    echo "$line"
  done < <(grep -E '^MPI_(Iprobe|Test|Irecv|Isend|Waitall) ' "$D/$name.plain.txt")
}
run_impl openmpi mpicc.openmpi openmpi
command -v mpicc.mpich >/dev/null && run_impl mpich mpicc.mpich mpich
