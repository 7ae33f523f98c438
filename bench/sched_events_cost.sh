#!/usr/bin/env bash
# What the service-time sampler's scheduler events cost a program with
# many threads that sleep and wake often (the case they are kept for):
# bench/sleepers.c (THREADS threads, ITERS iterations of a short loop and
# a 20 µs sleep each) run plainly and under `contend record` with the
# events kept all the run (CONTEND_SERVICE_SOURCE=sched-events), opened
# system-wide (the default where allowed) and per task
# (CONTEND_SCHED_EVENTS=per-task), and with `schedstat` instead
# (CONTEND_SERVICE_SOURCE=schedstat: the same recorder without the
# events). The four run back to back in each of ROUNDS rounds. Prints the
# program's CPU time per iteration (its own getrusage: the launcher and
# the sampler are not in it), medians, and per events variant the time
# added per scheduler event record: (its CPU per iteration − schedstat's)
# / (records per iteration, from its recording's meta.json).
source "$(dirname "$0")/common.sh"
THREADS=${THREADS:-32}
ITERS=${ITERS:-3000}
ROUNDS=${ROUNDS:-7}
gcc -std=c11 -Wall -Wextra -Werror -O2 -pthread -o "$OUT/sleepers" "$ROOT/bench/sleepers.c"
machine
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
D="$OUT/sched_events_cost"
rm -rf "$D" && mkdir -p "$D"
variants=(plain system-wide per-task schedstat)
one() { # $1 = variant: prints CPU ns per iteration (and leaves its recording in $D/$1.data)
  local out
  case "$1" in
    plain) out=$("$OUT/sleepers" "$THREADS" "$ITERS") ;;
    system-wide) out=$(CONTEND_SERVICE_SOURCE=sched-events "$CONTEND" record --force -o "$D/$1.data" -- "$OUT/sleepers" "$THREADS" "$ITERS" 2>/dev/null) ;;
    per-task) out=$(CONTEND_SCHED_EVENTS=per-task CONTEND_SERVICE_SOURCE=sched-events "$CONTEND" record --force -o "$D/$1.data" -- "$OUT/sleepers" "$THREADS" "$ITERS" 2>/dev/null) ;;
    schedstat) out=$(CONTEND_SERVICE_SOURCE=schedstat "$CONTEND" record --force -o "$D/$1.data" -- "$OUT/sleepers" "$THREADS" "$ITERS" 2>/dev/null) ;;
  esac
  sed 's/.*cpu_ns_per_iter=\([0-9]*\).*/\1/' <<<"$out"
}
records_per_iter() { # $1 = variant
  python3 -c 'import json,sys; s=json.load(open(sys.argv[1]))["sampler"]; assert s["event_scope"] == sys.argv[2], s; print(s["event_records"] / float(sys.argv[3]))' \
    "$D/$1.data/meta.json" "$1" "$((THREADS * ITERS))"
}
declare -A cpu per_record
for r in $(seq "$ROUNDS"); do
  declare -A this=()
  line="round $r:"
  for v in "${variants[@]}"; do
    this[$v]=$(one "$v")
    cpu[$v]+=" ${this[$v]}"
    line+=" $v ${this[$v]} ns"
  done
  for v in system-wide per-task; do
    rpi=$(records_per_iter "$v")
    c=$(awk -v a="${this[$v]}" -v b="${this[schedstat]}" -v r="$rpi" 'BEGIN {printf "%.0f", (a - b) / r}')
    per_record[$v]+=" $c"
    line+="; $v: $rpi records/iteration, $c ns per record"
  done
  echo "$line"
done
p=$(printf '%s\n' ${cpu[plain]} | median)
for v in "${variants[@]}"; do
  m=$(printf '%s\n' ${cpu[$v]} | median)
  echo "$v: median CPU $m ns per iteration ($(awk -v a="$m" -v b="$p" 'BEGIN {printf "%+.1f %%", (a / b - 1) * 100}') against plain; all:${cpu[$v]})"
done
for v in system-wide per-task; do
  echo "$v: median $(printf '%s\n' ${per_record[$v]} | median) ns added per scheduler event record (all:${per_record[$v]})"
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
