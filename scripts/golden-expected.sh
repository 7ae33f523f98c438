#!/usr/bin/env bash
# Rewrites tests/golden/expected/*.json from the golden recordings with the
# contend built in target/debug. Run it only for an intended change of the
# JSON contract (docs/json.md), and say why in the commit.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
contend="$root/target/debug/contend"
[ -x "$contend" ] || { echo "build first: cargo build" >&2; exit 1; }
recorded_at=/tmp/contend-golden   # where the recordings were made (their maps name it)
here=$(mktemp -d /tmp/contend-golden-XXXXXX)
trap 'rm -rf "$here"' EXIT
cp -r "$root/tests/golden/recordings/." "$here"
# Point the maps snapshots at the copies, as the golden test does.
find "$here" -name '*.maps' -exec sed -i "s|$recorded_at|$here|g" {} +
cd "$here"
out="$root/tests/golden/expected"
write() { # name, contend arguments…: the output with the path mapped back
    local name=$1
    shift
    "$contend" "$@" | sed "s|$here|$recorded_at|g" >"$out/$name.json"
}
for name in sharequeue-single sharequeue-two sharequeue-stacks mpi-waits; do
    write "$name" report "$name.data" --format json
done
write scaling report scaling.scale --format json
write compare compare sharequeue-single.data sharequeue-two.data mpi-waits.data --format json
echo "rewrote $(ls "$out" | wc -l) files in $out"
