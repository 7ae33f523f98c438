#!/usr/bin/env bash
# Export throughput (lock events per second) and peak memory of
# `contend export --format perfetto` and `--format pprof` on the synthetic
# recording of EVENTS events (the one of analysis_throughput.sh), beside
# `contend report --format json` (the analysis alone) on the same recording.
# An export analyses the recording and then writes it; the writer's time is
# the export's time minus the report's, in wall time and in CPU time
# (user + sys, steadier while other work loads the machine).
#
# ROUNDS rounds, medians; each round runs every command once, one after
# the other, so that a change of load falls on all of them alike.
# BASELINE=/path/to/an/older/contend adds that binary's exports to each
# round (its writer measured against its own report), for a before/after
# in one run. FORMATS (default "perfetto pprof") picks the exports.
# CONTEND_BIN=/path/to/contend measures that binary instead of
# target/release/contend (with BENCH_NO_BUILD=1: nothing is built).
source "$(dirname "$0")/common.sh"
CONTEND=${CONTEND_BIN:-$CONTEND}
EVENTS=${EVENTS:-10000000}
ROUNDS=${ROUNDS:-3}
FORMATS=${FORMATS:-perfetto pprof}
BASELINE=${BASELINE:-}
[ -n "${BENCH_NO_BUILD:-}" ] || (cd "$ROOT" && cargo build --release --quiet -p contend --example synth_recording)
rm -rf "$OUT/synth.data"
"$ROOT/target/release/examples/synth_recording" "$OUT/synth.data" "$EVENTS" 8 4
machine
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
# The commands: label, binary, what (report or a format).
labels=() bins=() whats=()
add() { labels+=("$1"); bins+=("$2"); whats+=("$3"); }
add "report --format json" "$CONTEND" report
for f in $FORMATS; do add "export --format $f" "$CONTEND" "$f"; done
if [ -n "$BASELINE" ]; then
  add "baseline: report --format json" "$BASELINE" report
  for f in $FORMATS; do add "baseline: export --format $f" "$BASELINE" "$f"; done
fi
n=${#labels[@]}
for i in $(seq 0 $((n - 1))); do : >"$OUT/times.$i"; done
for r in $(seq "$ROUNDS"); do
  for i in $(seq 0 $((n - 1))); do
    if [ "${whats[$i]}" = report ]; then
      cmd=("${bins[$i]}" report "$OUT/synth.data" --format json)
    else
      cmd=("${bins[$i]}" export "$OUT/synth.data" --format "${whats[$i]}" -o "$OUT/synth.${whats[$i]}" --force)
    fi
    /usr/bin/time -f "%e %U %S %M" -o "$OUT/time.txt" "${cmd[@]}" >/dev/null 2>"$OUT/stderr.txt" \
      || { cat "$OUT/stderr.txt"; exit 1; }
    cat "$OUT/time.txt" >>"$OUT/times.$i"
    if [ "${whats[$i]}" != report ]; then
      stat -c %s "$OUT/synth.${whats[$i]}" >"$OUT/size.$i"
      rm -f "$OUT/synth.${whats[$i]}"
    fi
  done
  echo "round $r done, load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
done
# Per command: median wall, median CPU, median peak RSS (KiB).
stats() {
  local w c m
  w=$(awk '{print $1}' "$OUT/times.$1" | median)
  c=$(awk '{print $2 + $3}' "$OUT/times.$1" | median)
  m=$(awk '{print $4}' "$OUT/times.$1" | median)
  echo "$w $c $m"
}
for i in $(seq 0 $((n - 1))); do
  read -r w c m < <(stats "$i")
  echo "${labels[$i]}: median wall $w s, median CPU (user+sys) $c s, peak RSS $((m / 1024)) MiB; runs (wall user sys KiB): $(tr '\n' ';' <"$OUT/times.$i")"
done
# Writers against their own binary's report.
report_of=0
for i in $(seq 0 $((n - 1))); do
  if [ "${whats[$i]}" = report ]; then report_of=$i; continue; fi
  read -r rw rc rm < <(stats "$report_of")
  read -r ew ec em < <(stats "$i")
  size=$(cat "$OUT/size.$i")
  awk -v l="${labels[$i]}" -v e="$EVENTS" -v rw="$rw" -v ew="$ew" -v rc="$rc" -v ec="$ec" -v rm="$rm" -v em="$em" -v size="$size" 'BEGIN {
    w = ew - rw; if (w < 0.001) w = 0.001
    c = ec - rc; if (c < 0.001) c = 0.001
    printf "%s: wall: export %.2f s = analysis %.2f s + writing %.2f s (writer/analysis %.2f); CPU: export %.2f s = analysis %.2f s + writing %.2f s (writer/analysis %.2f); writer %.1f M events/s wall, %.1f M events/s CPU; peak RSS %.0f MiB (report: %.0f MiB, ratio %.2f); file %.0f MiB, %.1f bytes/event\n",
      l, ew, rw, w, w / rw, ec, rc, c, c / rc, e / w / 1e6, e / c / 1e6, em / 1024, rm / 1024, em / rm, size / 1048576, size / e
  }'
done
rm -f "$OUT"/times.* "$OUT"/size.* "$OUT/time.txt" "$OUT/stderr.txt"
