#!/bin/sh
# The interference micro-benchmarks of Mosli Bouksiaa et al. (TPDS 2019,
# Section 4): builds contend (cargo build --release) and the benchmarks
# (lock.c: POSIX mutex and spinlock, Listing 1; false_sharing.c, Listing 2;
# io.c, O_DIRECT reads, Listing 3), sweeps `delay` with sweep.py and prints
# X beside SCI per point and Pearson's rho per benchmark.
#
#   examples/interference/run.sh [--quick] [--bench LIST] [--io-dir DIR] [--json FILE]
#
# Works from any directory; outputs go to target/interference/. The I/O
# benchmark reads files in --io-dir (default /var/tmp/contend-interference),
# which must be on a disk-backed file system (O_DIRECT).
set -eu

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out="$root/target/interference"
contend=${CONTEND:-"$root/target/release/contend"}
cc=${CC:-cc}

if [ -z "${CONTEND:-}" ]; then
    echo "== building contend (cargo build --release)" >&2
    (cd "$root" && cargo build --release --quiet -p contend-cli)
fi
mkdir -p "$out/bin"
include=$("$contend" include-dir)
echo "== building the benchmarks (-I $include)" >&2
for p in lock false_sharing io; do
    "$cc" -std=c11 -O2 -g -pthread -Wall -Wextra -Werror -I "$include" \
        -o "$out/bin/$p" "$here/$p.c"
done
exec python3 "$here/sweep.py" --contend "$contend" --bin "$out/bin" --out "$out/data" "$@"
