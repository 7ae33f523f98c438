#!/usr/bin/env bash
# The project's test command (README.md, second line; .ci/run calls it).
# On a fresh Debian machine it installs what the tests need, builds
# everything (the C collector is built by cargo), checks formatting and
# lints, and runs the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."

need_pkgs=()
command -v gcc >/dev/null || need_pkgs+=(gcc)
command -v g++ >/dev/null || need_pkgs+=(g++)
command -v memcached >/dev/null || need_pkgs+=(memcached)
command -v memcslap >/dev/null || command -v memaslap >/dev/null || need_pkgs+=(libmemcached-tools)
command -v sysbench >/dev/null || need_pkgs+=(sysbench)
[ -x /usr/sbin/mariadbd ] || need_pkgs+=(mariadb-server-core)  # mariadbd only: no service is started
[ -e /usr/lib/x86_64-linux-gnu/libc.a ] || need_pkgs+=(libc6-dev)
command -v dwz >/dev/null || need_pkgs+=(dwz)
# glibc's own symbol table: its internal locks (stdio, malloc arenas) are
# named after their symbols (e2e glibc_locks)
dpkg -s libc6-dbg >/dev/null 2>&1 || need_pkgs+=(libc6-dbg)
command -v python3 >/dev/null || need_pkgs+=(python3)
command -v pigz >/dev/null || need_pkgs+=(pigz)
command -v xz >/dev/null || need_pkgs+=(xz-utils)
command -v gfortran >/dev/null || need_pkgs+=(gfortran)
command -v clang >/dev/null || need_pkgs+=(clang)
ls /usr/lib/llvm-*/lib/libomp.so >/dev/null 2>&1 || need_pkgs+=(libomp-dev)
# MPI: Open MPI (the default mpirun/mpicc) and MPICH, hpcc and mpi4py.
command -v mpirun.openmpi >/dev/null || need_pkgs+=(openmpi-bin)
[ -e /usr/lib/x86_64-linux-gnu/openmpi/include/mpi.h ] || need_pkgs+=(libopenmpi-dev)
command -v mpirun.mpich >/dev/null || need_pkgs+=(mpich)
[ -e /usr/include/x86_64-linux-gnu/mpich/mpi.h ] || need_pkgs+=(libmpich-dev)
command -v hpcc >/dev/null || need_pkgs+=(hpcc)
command -v lmp >/dev/null || need_pkgs+=(lammps)
[ -e /usr/share/lammps/examples/melt/in.melt ] || need_pkgs+=(lammps-examples)
/usr/bin/python3 -c 'import mpi4py' 2>/dev/null || need_pkgs+=(python3-mpi4py)
# Exports and the HTML report: libotf2 (built against) and otf2-print, the
# Go toolchain's pprof, headless Chromium, pip for Perfetto's Python protos.
[ -e /usr/include/otf2/otf2.h ] || need_pkgs+=(libotf2-trace-dev)
command -v otf2-print >/dev/null || need_pkgs+=(otf2-tools)
command -v go >/dev/null || [ -x /usr/local/go/bin/go ] || need_pkgs+=(golang-go)
command -v chromium >/dev/null || need_pkgs+=(chromium)
python3 -m pip --version >/dev/null 2>&1 || need_pkgs+=(python3-pip)
command -v tmux >/dev/null || need_pkgs+=(tmux)  # contend watch is tested in a tmux pane
if [ ${#need_pkgs[@]} -gt 0 ]; then
  echo "scripts/test.sh: installing ${need_pkgs[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_pkgs[@]}" >/dev/null
fi
# Perfetto's published trace protos (perfetto_trace_pb2) decode the
# Perfetto export in the tests.
if ! python3 -c 'from perfetto.protos.perfetto.trace import perfetto_trace_pb2' 2>/dev/null; then
  echo "scripts/test.sh: installing the perfetto Python package"
  python3 -m pip install --quiet perfetto 2>/dev/null \
    || python3 -m pip install --quiet --break-system-packages perfetto \
    || echo "scripts/test.sh: could not install perfetto (pip); the Perfetto decoding tests will say SKIP"
fi
if ! command -v cargo >/dev/null; then
  [ -f "$HOME/.cargo/env" ] && . "$HOME/.cargo/env"
fi
command -v cargo >/dev/null || { echo "scripts/test.sh: cargo not found (install Rust with rustup)"; exit 1; }

# Style gates; rustup's default profile has both tools (a minimal profile
# may not, and rustup's own servers are out of reach on some machines).
if cargo fmt --version >/dev/null 2>&1; then
  cargo fmt --all -- --check
else
  echo "scripts/test.sh: rustfmt missing (rustup component add rustfmt): format check skipped"
fi
if cargo clippy --version >/dev/null 2>&1; then
  cargo clippy --workspace --all-targets --quiet -- -D warnings
  # The binary without `record` (reports only, no C compiler needed).
  cargo clippy -p contend-cli --no-default-features --quiet -- -D warnings
else
  echo "scripts/test.sh: clippy missing (rustup component add clippy): lint check skipped"
fi
# No `cargo build --release` first: the tests' dev-dependencies (tempfile,
# insta) unify other features into rustix and the crates above it, so a
# plain release build's artifacts were not reused by the test build, which
# compiled the workspace again (about 4 minutes of each CI run on 2 cores).
# `cargo test` builds the `contend` binary the end-to-end tests run.
log=$(mktemp)
trap 'rm -f "$log"' EXIT
set +e
cargo test --workspace --release --no-fail-fast -- --test-threads=2 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e
# One closing line over every test binary (cargo's last line is the
# doc-test summary, which says little).
awk '/^test result:/ {for (i = 1; i <= NF; i++) {if ($(i+1) ~ /^passed/) p += $i; if ($(i+1) ~ /^failed/) f += $i}}
     END {printf "tests: %d passed, %d failed\n", p, f}' "$log"
exit "$status"
