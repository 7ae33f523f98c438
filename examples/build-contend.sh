# Sourced by the examples' run.sh: builds contend (release), showing cargo's
# progress, after checking that Rust's cargo is there. Sets $contend.
# Expects $root (the repository) to be set.

if ! command -v cargo >/dev/null 2>&1 && [ -f "$HOME/.cargo/env" ]; then
    . "$HOME/.cargo/env"
fi
if ! command -v cargo >/dev/null 2>&1; then
    echo "contend is built with Rust's cargo (Rust 1.88 or later), which is not installed." >&2
    echo "Install it with rustup (https://rustup.rs: curl https://sh.rustup.rs -sSf | sh)," >&2
    echo "or from your distribution if it is recent enough (Debian: apt-get install cargo)." >&2
    exit 1
fi
echo "== building contend (cargo build --release; the first build takes a few minutes)" >&2
(cd "$root" && cargo build --release -p contend-cli)
contend="$root/target/release/contend"
