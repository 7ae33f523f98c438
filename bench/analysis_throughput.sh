#!/usr/bin/env bash
# Analysis throughput (lock events per second) and peak memory per event of
# `contend report --format json` on a synthetic recording of EVENTS events.
#
# ROUNDS rounds, medians. Throughput is given per second of wall time and
# per second of CPU time (user + sys of the process, steadier while other
# work loads the machine). BASELINE=/path/to/an/older/contend runs that
# binary too, alternating with this one in every round, for a before/after
# in one run. CONTEND_BIN=/path/to/contend measures that binary instead of
# target/release/contend (with BENCH_NO_BUILD=1: nothing is built).
# KEEP_RECORDING=1 reuses $OUT/synth.data when it is there.
# EXCLUSIVE=1 uses the recording whose mutexes are held by one thread at a
# time (`synth_recording --exclusive`, $OUT/synth-exclusive.data) instead
# of the default one, whose threads' timelines are drawn each on its own.
source "$(dirname "$0")/common.sh"
CONTEND=${CONTEND_BIN:-$CONTEND}
EVENTS=${EVENTS:-10000000}
ROUNDS=${ROUNDS:-3}
BASELINE=${BASELINE:-}
[ -n "${BENCH_NO_BUILD:-}" ] || (cd "$ROOT" && cargo build --release --quiet -p contend --example synth_recording)
SYNTH="$OUT/synth.data"
SYNTH_FLAGS=()
if [ -n "${EXCLUSIVE:-}" ]; then
  SYNTH="$OUT/synth-exclusive.data"
  SYNTH_FLAGS=(--exclusive)
fi
if [ -z "${KEEP_RECORDING:-}" ] || [ ! -d "$SYNTH" ]; then
  rm -rf "$SYNTH"
  "$ROOT/target/release/examples/synth_recording" "$SYNTH" "$EVENTS" 8 4 "${SYNTH_FLAGS[@]}"
fi
machine
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
report_binaries
report_rounds "$SYNTH" times
report_summary times "$EVENTS" "lock events" event
