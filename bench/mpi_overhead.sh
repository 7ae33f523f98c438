#!/usr/bin/env bash
# Added time per MPI call of the MPI recorder (docs/benchmarks.md, "MPI
# recorder"): bench/mpi_overhead.c on one Open MPI rank (and one MPICH rank
# when installed), CALLS calls per kind and round, best of ROUNDS rounds,
# run REPEAT times alternately without and with the recorder (LD_PRELOAD of
# the installed libcontend_mpi_*.so and CONTEND_DIR, as `record --mpi`
# sets them); the medians and their difference are printed. Then the trace
# bytes per event: the record bytes in the rank's trace divided by the
# number of wrapped calls. Goal: <= 150 ns added per call.
#
# The recorder gets the clock `record --mpi` gives it (CONTEND_CLOCK and
# CONTEND_TSC_HZ from the throwaway recording's meta.json: the TSC where
# it is reliable). BEFORE=DIR (a directory holding an older build's
# libcontend_mpi_<impl>.so, e.g. compiled from `git stash`) adds a third
# run to every repeat, alternated with the other two, so that an
# improvement is measured before/after in one run; AFTER=DIR takes the
# recorder from DIR instead of the installed one.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
CALLS=${CALLS:-200000}
ROUNDS=${ROUNDS:-5}
REPEAT=${REPEAT:-5}
D="$OUT/mpi_overhead"
rm -rf "$D" && mkdir -p "$D"
machine
# the recorder libraries, installed by a throwaway `record --mpi`
"$CONTEND" record --mpi --mpi-impl openmpi -o "$D/install.data" --force -- /bin/true >/dev/null 2>&1 || true
cache="${XDG_CACHE_HOME:-$HOME/.cache}/contend"
read -r CLOCK TSC_HZ < <(python3 - "$D/install.data/meta.json" <<'PY' 2>/dev/null || echo "monotonic 0"
import json, sys
env = json.load(open(sys.argv[1])).get("env", {})
print(env.get("CONTEND_CLOCK", "monotonic"), env.get("CONTEND_TSC_HZ", "0"))
PY
)
echo "recorder clock: $CLOCK (CONTEND_TSC_HZ=$TSC_HZ)"

bytes_per_event() { # trace file, number of calls
  python3 - "$1" "$2" <<'PY'
import struct, sys
b = open(sys.argv[1], 'rb').read()
chunk = struct.unpack_from('<I', b, 24)[0]
claimed = struct.unpack_from('<I', b, 28)[0]
used = 0
for c in range(claimed):
    off = 4096 + c * chunk
    words = struct.unpack_from('<%dQ' % ((chunk - 32) // 8), b, off + 32)
    i = 0
    while i < len(words) and words[i] != 0:
        n = (words[i] >> 8) & 0xffff
        i += 1 + n
    used += i * 8
calls = int(sys.argv[2])
print("%.1f" % (used / calls), used)
PY
}

run_impl() { # name launcher compiler library
  local name=$1 launcher=$2 compiler=$3 lib before=
  if [ -n "${AFTER:-}" ]; then lib="$AFTER/libcontend_mpi_$4.so"; [ -f "$lib" ] || lib=
  else lib=$(ls -t "$cache"/libcontend_mpi_"$4"-*.so 2>/dev/null | head -1); fi
  [ -n "${BEFORE:-}" ] && before="$BEFORE/libcontend_mpi_$4.so"
  [ -n "$lib" ] || { echo "$name: no recorder library installed, skipped"; return; }
  # (MPICH's mpi.h makes gcc warn about MPI_STATUSES_IGNORE; kept in a file)
  "$compiler" -O2 -o "$D/overhead_$name" "$ROOT/bench/mpi_overhead.c" 2>"$D/$name.cc.txt"
  local extra=()
  [ "$name" = openmpi ] && extra=(--oversubscribe --mca mpi_yield_when_idle 1) && [ "$(id -u)" = 0 ] && extra+=(--allow-run-as-root)
  local plain=() rec=() kinds=(iprobe test self iprobe_cpu test_cpu self_cpu) # *_cpu: CPU time of the thread
  : >"$D/$name.plain" ; : >"$D/$name.rec" ; : >"$D/$name.before"
  for r in $(seq "$REPEAT"); do
    "$launcher" "${extra[@]}" -np 1 "$D/overhead_$name" "$CALLS" "$ROUNDS" >>"$D/$name.plain"
    if [ -n "$before" ]; then
      rm -rf "$D/$name.data"
      CONTEND_DIR="$D/$name.data" LD_PRELOAD="$before" CONTEND_CLOCK="$CLOCK" CONTEND_TSC_HZ="$TSC_HZ" \
        "$launcher" "${extra[@]}" -np 1 "$D/overhead_$name" "$CALLS" "$ROUNDS" >>"$D/$name.before"
    fi
    rm -rf "$D/$name.data"
    CONTEND_DIR="$D/$name.data" LD_PRELOAD="$lib" CONTEND_CLOCK="$CLOCK" CONTEND_TSC_HZ="$TSC_HZ" \
      "$launcher" "${extra[@]}" -np 1 "$D/overhead_$name" "$CALLS" "$ROUNDS" >>"$D/$name.rec"
  done
  echo "$name ($("$launcher" --version 2>&1 | grep -m1 -E "Open MPI|OpenRTE|Version:" | tr -s " ")), $CALLS calls x $ROUNDS rounds, median of $REPEAT runs:"
  for k in "${kinds[@]}"; do
    p=$(sed -n "s/.*${k}_ns=\([0-9.]*\).*/\1/p" "$D/$name.plain" | median)
    w=$(sed -n "s/.*${k}_ns=\([0-9.]*\).*/\1/p" "$D/$name.rec" | median)
    if [ -n "$before" ]; then
      o=$(sed -n "s/.*${k}_ns=\([0-9.]*\).*/\1/p" "$D/$name.before" | median)
      echo "  $k: without $p ns/call, before $o ns/call (added $(awk -v a="$p" -v b="$o" 'BEGIN {printf "%.1f", b - a}')), with $w ns/call (added $(awk -v a="$p" -v b="$w" 'BEGIN {printf "%.1f", b - a}')) ns/call"
    else
      echo "  $k: without $p ns/call, with $w ns/call, added $(awk -v a="$p" -v b="$w" 'BEGIN {printf "%.1f", b - a}') ns/call"
    fi
  done
  calls=$(sed -n 's/.*calls=\([0-9]*\).*/\1/p' "$D/$name.rec" | tail -1)
  # MPI_Init and MPI_Finalize are two more events
  read -r per total < <(bytes_per_event "$D/$name.data/mpi/rank-0.cmpi" $((calls + 2)))
  echo "  trace: $total record bytes for $((calls + 2)) calls = $per bytes/event (file $(du -h "$D/$name.data/mpi/rank-0.cmpi" | cut -f1))"
}
run_impl openmpi mpirun.openmpi mpicc.openmpi openmpi
command -v mpirun.mpich >/dev/null && run_impl mpich mpirun.mpich mpicc.mpich mpich
