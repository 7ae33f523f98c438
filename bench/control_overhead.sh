#!/usr/bin/env bash
# What the control page of a limited recording (--start-after, --duration,
# --max-size) adds to an uncontended lock+unlock pair: the hot check reads
# its `enabled` word beside the collector's own flag. Runs
# bench/lock_overhead.c recorded plainly and recorded with a cap that is
# never reached (--max-size 1T), alternately, ROUNDS times each, and reports
# the medians and their difference.
source "$(dirname "$0")/common.sh"
ROUNDS=${ROUNDS:-9}
PAIRS=${PAIRS:-5000000}
gcc -std=c11 -Wall -Wextra -Werror -O2 -g -pthread -o "$OUT/lock_overhead" "$ROOT/bench/lock_overhead.c"
machine
plain=() capped=()
for i in $(seq "$ROUNDS"); do
  r=$("$CONTEND" record --force -o "$OUT/control.data" -- "$OUT/lock_overhead" "$PAIRS" 1 2>/dev/null)
  plain+=("$(sed 's/.*pairs_ns=\([0-9.]*\).*/\1/' <<<"$r")")
  r=$("$CONTEND" record --force -o "$OUT/control.data" --max-size 1T -- "$OUT/lock_overhead" "$PAIRS" 1 2>/dev/null)
  capped+=("$(sed 's/.*pairs_ns=\([0-9.]*\).*/\1/' <<<"$r")")
done
mp=$(printf '%s\n' "${plain[@]}" | median)
mc=$(printf '%s\n' "${capped[@]}" | median)
echo "recorded lock+unlock pair (idle second thread): plain ${mp} ns, with the control page ${mc} ns; difference $(awk -v a="$mc" -v b="$mp" 'BEGIN {printf "%.1f", a-b}') ns (medians of $ROUNDS runs of $PAIRS pairs)"
echo "  runs plain:        ${plain[*]}"
echo "  runs with control: ${capped[*]}"
