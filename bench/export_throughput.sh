#!/usr/bin/env bash
# Export throughput (lock events per second) and peak memory of
# `contend export --format perfetto` and `--format pprof` on the synthetic
# recording of EVENTS events (the one of analysis_throughput.sh), beside
# `contend report --format json` (the analysis alone) on the same recording.
# An export analyses the recording and then writes it; the writer's time is
# the export's wall time minus the report's. ROUNDS runs each, medians.
source "$(dirname "$0")/common.sh"
EVENTS=${EVENTS:-10000000}
ROUNDS=${ROUNDS:-3}
(cd "$ROOT" && cargo build --release --quiet -p contend --example synth_recording)
rm -rf "$OUT/synth.data"
"$ROOT/target/release/examples/synth_recording" "$OUT/synth.data" "$EVENTS" 8 4
machine
run() { # label, command…: prints "median_wall median_rss_kib"
  local label=$1; shift
  local walls=() rss=()
  for _ in $(seq "$ROUNDS"); do
    /usr/bin/time -f "%e %M" -o "$OUT/time.txt" "$@" >/dev/null 2>"$OUT/stderr.txt" \
      || { cat "$OUT/stderr.txt"; exit 1; }
    read -r w m <"$OUT/time.txt"
    walls+=("$w"); rss+=("$m")
  done
  local mw mm
  mw=$(printf '%s\n' "${walls[@]}" | median)
  mm=$(printf '%s\n' "${rss[@]}" | median)
  echo "$label: median wall ${mw} s (runs: ${walls[*]}), peak RSS ${mm} KiB" >&2
  echo "$mw $mm"
}
read -r rw rm < <(run "report --format json" "$CONTEND" report "$OUT/synth.data" --format json)
for f in perfetto pprof; do
  file="$OUT/synth.$f"
  read -r ew em < <(run "export --format $f" "$CONTEND" export "$OUT/synth.data" --format "$f" -o "$file" --force)
  size=$(stat -c %s "$file")
  awk -v f="$f" -v e="$EVENTS" -v rw="$rw" -v ew="$ew" -v rm="$rm" -v em="$em" -v size="$size" 'BEGIN {
    w = ew - rw; if (w < 0.001) w = 0.001
    printf "%s: export %.2f s = analysis %.2f s + writing %.2f s; writer %.1f M events/s (export as a whole %.1f M events/s); peak RSS %.0f MiB (report: %.0f MiB, ratio %.2f); file %.0f MiB, %.1f bytes/event\n",
      f, ew, rw, w, e / w / 1e6, e / ew / 1e6, em / 1024, rm / 1024, em / rm, size / 1048576, size / e
  }'
  rm -f "$file"
done
