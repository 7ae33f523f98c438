# Shared setup of the benchmark scripts: builds contend in release mode and
# prints the machine the numbers come from.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="$ROOT/bench/out"
mkdir -p "$OUT"
CONTEND="$ROOT/target/release/contend"
# BENCH_NO_BUILD=1: use the binaries as built (another build shares target/).
[ -n "${BENCH_NO_BUILD:-}" ] || (cd "$ROOT" && cargo build --release --quiet)
machine() {
  echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) CPUs, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -sr), clocksource $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)"
}
median() { sort -g | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
# Runs $2... and writes its CPU time (user + system of it and its waited-
# for descendants, from wait4, in µs; /usr/bin/time prints 10 ms steps)
# in seconds to file $1. Signals reach the program as they would reach
# /usr/bin/time's.
cpu_of() {
  python3 -c 'import os, sys
pid = os.fork()
if pid == 0:
    os.execvp(sys.argv[2], sys.argv[2:])
_, _, ru = os.wait4(pid, 0)
open(sys.argv[1], "w").write("%.6f\n" % (ru.ru_utime + ru.ru_stime))' "$@"
}
# The collector and clock `contend record` gives a program, for running
# the collector preloaded without the launcher: prints "<collector .so>
# <CONTEND_CLOCK> <CONTEND_TSC_HZ>" for contend binary $1; $2 names the
# scratch recording (each call its own: a process substitution runs beside
# the script, so two calls in a row would otherwise remove each other's).
collector_env() {
  local d="$OUT/collector-env-$2.data"
  "$1" record --force -o "$d" -- true >/dev/null 2>&1
  python3 -c 'import json,sys; e=json.load(open(sys.argv[1]))["env"]; print(e["LD_PRELOAD"].split(":")[0], e.get("CONTEND_CLOCK", "monotonic"), e.get("CONTEND_TSC_HZ", "0"))' "$d/meta.json"
  rm -rf "$d" 2>/dev/null || true
}
# The lower quartile (the ceil(n/4)-th smallest value): the runs that
# other work on a shared machine did not slow down.
lower_quartile() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+3)/4)]}'; }

# A free loopback TCP port; waiting for a server to listen on one.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() { for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/"$1") 2>/dev/null && return 0; sleep 0.05; done; return 1; }
# The pid of the memcached among process $1 and its descendants (the
# started process itself, or the recorder's child or grandchild).
server_of() {
  local p c
  for p in "$1" $(pgrep -P "$1"); do
    if [ "$(cat /proc/"$p"/comm 2>/dev/null)" = memcached ]; then echo "$p"; return; fi
    for c in $(pgrep -P "$p"); do
      if [ "$(cat /proc/"$c"/comm 2>/dev/null)" = memcached ]; then echo "$c"; return; fi
    done
  done
}

# The binaries report_rounds runs: this build ($CONTEND), and BASELINE
# (an older contend) when it is set; labels[] names them.
report_binaries() {
  labels=("this build") bins=("$CONTEND")
  if [ -n "${BASELINE:-}" ]; then labels+=("baseline"); bins+=("$BASELINE"); fi
}
# `report DIR --format json` by each binary of bins[] (named by labels[]),
# ROUNDS rounds, the binaries alternated in each; one line per run
# (wall s, user s, sys s, peak KiB) into $OUT/PREFIX.<index>.
# Usage: report_rounds DIR PREFIX
report_rounds() {
  local dir=$1 prefix=$2 r i
  for i in "${!bins[@]}"; do : >"$OUT/$prefix.$i"; done
  for r in $(seq "$ROUNDS"); do
    for i in "${!bins[@]}"; do
      /usr/bin/time -f "%e %U %S %M" -o "$OUT/time.txt" "${bins[$i]}" report "$dir" --format json >/dev/null 2>&1
      cat "$OUT/time.txt" >>"$OUT/$prefix.$i"
    done
    echo "round $r done, load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
  done
}
# Medians of such a file: "wall CPU(user+sys) peak-KiB".
report_medians() {
  echo "$(awk '{print $1}' "$1" | median) $(awk '{print $2 + $3}' "$1" | median) $(awk '{print $4}' "$1" | median)"
}
# For each binary of bins[]: the medians of report_rounds' PREFIX files
# and their runs, and EVENTS (what they count: WHAT, e.g. "OpenMP events";
# one of them: ONE, e.g. "event") per second of wall time and of CPU time
# (user + sys, steadier while other work loads the machine), and peak
# bytes per one of them.
# Usage: report_summary PREFIX EVENTS WHAT ONE
report_summary() {
  local prefix=$1 events=$2 what=$3 one=$4 i mw mc mm f
  for i in "${!bins[@]}"; do
    f="$OUT/$prefix.$i"
    read -r mw mc mm < <(report_medians "$f")
    echo "${labels[$i]}: report of $events $what: median wall ${mw} s (runs: $(awk '{printf "%s ", $1}' "$f")), median CPU ${mc} s (runs: $(awk '{printf "%.2f ", $2 + $3}' "$f")), peak RSS ${mm} KiB (runs: $(awk '{printf "%s ", $4}' "$f"))"
    awk -v e="$events" -v w="$mw" -v c="$mc" -v m="$mm" -v what="$what" -v one="$one" 'BEGIN {printf "  throughput: %.1f million %s/s of wall time, %.1f million %s/s of CPU time; peak memory: %.1f bytes/%s\n", e/w/1e6, what, e/c/1e6, what, m*1024/e, one}'
  done
}
