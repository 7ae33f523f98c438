#!/usr/bin/env bash
# Analysis throughput (lock events per second) and peak memory per event of
# `contend report --format json` on a synthetic recording of EVENTS events.
source "$(dirname "$0")/common.sh"
EVENTS=${EVENTS:-10000000}
ROUNDS=${ROUNDS:-3}
(cd "$ROOT" && cargo build --release --quiet -p contend --example synth_recording)
rm -rf "$OUT/synth.data"
"$ROOT/target/release/examples/synth_recording" "$OUT/synth.data" "$EVENTS" 8 4
machine
walls=(); rss=()
for i in $(seq "$ROUNDS"); do
  /usr/bin/time -f "%e %M" -o "$OUT/time.txt" "$CONTEND" report "$OUT/synth.data" --format json >/dev/null
  read -r w m <"$OUT/time.txt"
  walls+=("$w"); rss+=("$m")
done
mw=$(printf '%s\n' "${walls[@]}" | median)
mm=$(printf '%s\n' "${rss[@]}" | median)
echo "report of $EVENTS lock events: median wall ${mw} s (runs: ${walls[*]}), peak RSS ${mm} KiB"
awk -v e="$EVENTS" -v w="$mw" -v m="$mm" 'BEGIN {printf "throughput: %.1f million events/s; peak memory: %.1f bytes/event\n", e/w/1e6, m*1024/e}'
