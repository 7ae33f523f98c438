#!/usr/bin/env bash
# Added cost per uncontended lock+unlock pair, and trace bytes per lock event.
# Runs bench/lock_overhead.c without and with recording (each round: plain,
# then each of MODES; ROUNDS rounds, PAIRS pairs per run) and reports medians
# and the differences.
source "$(dirname "$0")/common.sh"
ROUNDS=${ROUNDS:-7}
PAIRS=${PAIRS:-5000000}
gcc -std=c11 -Wall -Wextra -Werror -O2 -g -pthread -o "$OUT/lock_overhead" "$ROOT/bench/lock_overhead.c"
machine
# Recording modes: the default, `--light` (uncontended pairs counted, not
# recorded) and the default with non-temporal record stores; `old` and
# `old-light` run the binary CONTEND_OLD names (e.g. MODES="old default
# old-light light" for a before/after comparison in one run).
rec_run() { # $1 = mode, then the program's arguments; prints its output
  local mode=$1; shift
  case "$mode" in
    default) "$CONTEND" record --force -o "$OUT/overhead.data" -- "$OUT/lock_overhead" "$@" 2>/dev/null ;;
    light) "$CONTEND" record --light --force -o "$OUT/overhead.data" -- "$OUT/lock_overhead" "$@" 2>/dev/null ;;
    nt) CONTEND_NT_STORES=1 "$CONTEND" record --force -o "$OUT/overhead.data" -- "$OUT/lock_overhead" "$@" 2>/dev/null ;;
    # the launcher's chunk preparer off (CONTEND_PREPARE_CHUNKS=0): the collector writes every chunk's zeros itself
    noprep) CONTEND_PREPARE_CHUNKS=0 "$CONTEND" record --force -o "$OUT/overhead.data" -- "$OUT/lock_overhead" "$@" 2>/dev/null ;;
    # before/after in one run: CONTEND_OLD=<an older contend binary>
    old) "$CONTEND_OLD" record --force -o "$OUT/overhead.data" -- "$OUT/lock_overhead" "$@" 2>/dev/null ;;
    old-light) "$CONTEND_OLD" record --light --force -o "$OUT/overhead.data" -- "$OUT/lock_overhead" "$@" 2>/dev/null ;;
  esac
}
MODES=${MODES:-"default light nt"}
measure() { # $1 = idle-thread flag, $2 = label; prints the summary lines
  local base=() rdtsc=() b mb mt m
  declare -A rec=()
  for i in $(seq "$ROUNDS"); do
    b=$("$OUT/lock_overhead" "$PAIRS" "$1")
    base+=("$(sed 's/.*pairs_ns=\([0-9.]*\).*/\1/' <<<"$b")")
    rdtsc+=("$(sed 's/.*rdtsc2_ns=\([0-9.]*\).*/\1/' <<<"$b")")
    for m in $MODES; do
      rec[$m]+="$(rec_run "$m" "$PAIRS" "$1" | sed 's/.*pairs_ns=\([0-9.]*\).*/\1/') "
    done
  done
  mb=$(printf '%s\n' "${base[@]}" | median)
  mt=$(printf '%s\n' "${rdtsc[@]}" | median)
  echo "$2: uncontended lock+unlock pair without recording ${mb} ns (medians of $ROUNDS runs of $PAIRS pairs); two rdtsc reads ${mt} ns"
  echo "  runs without: ${base[*]}"
  for m in $MODES; do
    local mr
    mr=$(tr ' ' '\n' <<<"${rec[$m]}" | sed '/^$/d' | median)
    echo "  recorded ($m): ${mr} ns; added $(awk -v a="$mr" -v b="$mb" 'BEGIN {printf "%.1f", a-b}') ns per pair; runs: ${rec[$m]}"
  done
}
measure 1 "with an idle second thread (multi-threaded glibc path)"
measure 0 "single-threaded process (glibc's single-thread path)"
# The trace of a default recording, for the bytes per event below.
rec_run default "$PAIRS" 1 >/dev/null
# Trace bytes per lock event: record words actually used / lock events.
python3 - "$OUT/overhead.data" "$CONTEND" <<'PY'
import glob, json, struct, subprocess, sys
d, contend = sys.argv[1], sys.argv[2]
used = 0
for f in glob.glob(d + "/locks/*.ctrace"):
    b = open(f, "rb").read()
    chunk = struct.unpack_from("<I", b, 24)[0]
    n = struct.unpack_from("<I", b, 28)[0]
    data = struct.unpack_from("<Q", b, 72)[0]
    for c in range(n):
        off = data + c * chunk
        w = off + 64
        while w < off + chunk and w + 8 <= len(b) and struct.unpack_from("<Q", b, w)[0] != 0:
            w += 8
        used += w - off - 64
rep = json.loads(subprocess.run([contend, "report", d, "--format", "json"], capture_output=True, check=True).stdout)
ev = rep["locks"]["summary"]["events"]
print(f"trace bytes per lock event: {used / ev:.2f} ({used} bytes of records for {ev} events)")
PY
