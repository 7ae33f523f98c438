#!/usr/bin/env bash
# Added cost per uncontended lock+unlock pair, and trace bytes per lock event.
# Runs bench/lock_overhead.c alternately without and with recording (ROUNDS
# times each, PAIRS pairs per run) and reports medians and the difference.
source "$(dirname "$0")/common.sh"
ROUNDS=${ROUNDS:-7}
PAIRS=${PAIRS:-5000000}
gcc -std=c11 -Wall -Wextra -Werror -O2 -g -pthread -o "$OUT/lock_overhead" "$ROOT/bench/lock_overhead.c"
machine
measure() { # $1 = idle-thread flag; prints the summary lines
  local base=() rec=() rdtsc=() b r
  for i in $(seq "$ROUNDS"); do
    b=$("$OUT/lock_overhead" "$PAIRS" "$1")
    base+=("$(sed 's/.*pairs_ns=\([0-9.]*\).*/\1/' <<<"$b")")
    rdtsc+=("$(sed 's/.*rdtsc2_ns=\([0-9.]*\).*/\1/' <<<"$b")")
    r=$("$CONTEND" record --force -o "$OUT/overhead.data" -- "$OUT/lock_overhead" "$PAIRS" "$1" 2>/dev/null)
    rec+=("$(sed 's/.*pairs_ns=\([0-9.]*\).*/\1/' <<<"$r")")
  done
  local mb mr mt
  mb=$(printf '%s\n' "${base[@]}" | median)
  mr=$(printf '%s\n' "${rec[@]}" | median)
  mt=$(printf '%s\n' "${rdtsc[@]}" | median)
  echo "$2: uncontended lock+unlock pair without recording ${mb} ns, with recording ${mr} ns; added $(awk -v a="$mr" -v b="$mb" 'BEGIN {printf "%.1f", a-b}') ns (medians of $ROUNDS runs of $PAIRS pairs); two rdtsc reads ${mt} ns"
  echo "  runs without: ${base[*]}"
  echo "  runs with:    ${rec[*]}"
}
measure 1 "with an idle second thread (multi-threaded glibc path)"
measure 0 "single-threaded process (glibc's single-thread path)"
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
