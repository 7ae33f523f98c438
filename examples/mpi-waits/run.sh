#!/bin/sh
# Records examples/mpi-waits (4 MPI ranks with injected delays) with
# `contend record --mpi` and prints `contend report`.
#
#   examples/mpi-waits/run.sh [DELAY_MS]
#
# Works from any directory. Builds contend (cargo build --release) and
# mpi_waits (mpicc -O2 -g), records into target/mpi-waits/waits.data
# (replacing an earlier recording) with 4 ranks on however many CPUs there
# are (--oversubscribe, ranks yield while they wait), then prints the
# report. MPICC and MPIRUN choose the MPI (default mpicc and mpirun).
set -eu

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out="$root/target/mpi-waits"
contend="$root/target/release/contend"
mpicc=${MPICC:-mpicc}
mpirun=${MPIRUN:-mpirun}

. "$root/examples/build-contend.sh"

echo "== building mpi_waits with $mpicc" >&2
mkdir -p "$out"
"$mpicc" -O2 -g -Wall -Wextra -o "$out/mpi_waits" "$here/mpi_waits.c"

# Open MPI needs --oversubscribe for 4 ranks on fewer CPUs (and
# --allow-run-as-root as root); MPICH's hydra takes neither.
flags=""
if "$mpirun" --version 2>&1 | grep -q "Open MPI"; then
    flags="--oversubscribe --mca mpi_yield_when_idle 1"
    if [ "$(id -u)" = 0 ]; then
        flags="$flags --allow-run-as-root"
    fi
fi

echo "== contend record --mpi -- $mpirun -np 4 mpi_waits $*" >&2
# shellcheck disable=SC2086
"$contend" record --mpi -o "$out/waits.data" --force -- \
    "$mpirun" $flags -np 4 "$out/mpi_waits" "$@"

echo "== contend report waits.data" >&2
cd "$out"
"$contend" report waits.data
