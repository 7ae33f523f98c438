#!/usr/bin/env bash
# What `contend record` costs a program with few threads and many context
# switches, by service-time source and counter set: `sysbench threads
# --threads=8 --thread-locks=4` (each event takes one of 4 mutexes, yields
# while holding it, releases it, 1000 times: about 400 000 context
# switches per second on 2 CPUs) for SECONDS_RUN (default 3) seconds, its
# events counted, ROUNDS (default 5) times, each round running in turn:
#
#   plain      the program alone;
#   default    `contend record` as shipped (auto source: scheduler events,
#              left for schedstat when they cost more; task_clock closed
#              when no hardware counter opened);
#   events     CONTEND_SERVICE_SOURCE=sched-events (the events kept all the
#              run: the default before the switch existed) and
#              CONTEND_KEEP_TASK_CLOCK=1 (the counter kept, as before);
#              the events system-wide where allowed;
#   events-per-task  the same with CONTEND_SCHED_EVENTS=per-task (the
#              events inherited by every thread of the program, as before
#              they were opened system-wide);
#   schedstat  CONTEND_SERVICE_SOURCE=schedstat, task_clock kept;
#   keepclock  the default with CONTEND_KEEP_TASK_CLOCK=1 (what the inherited
#              task_clock counter costs);
#   preload    the lock collector alone (LD_PRELOAD with the launcher's
#              environment, no sampler, no counters).
#
# VARIANTS chooses and orders them (default: all, in this order; plain and
# schedstat are needed for the ratios and the record cost). Prints per
# variant the median events and the loss against plain, and the cost of
# one scheduler event record to the program, for each events variant:
# (CPU s per event with events − with schedstat) / (records per event),
# medians over the rounds (the program keeps both CPUs busy, so its CPU
# time per event is its cost).
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
SECONDS_RUN=${SECONDS_RUN:-3}
ROUNDS=${ROUNDS:-5}
command -v sysbench >/dev/null || { echo "sysbench is not installed: apt-get install sysbench"; exit 1; }
machine
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
SB=(sysbench threads --threads=8 --thread-locks=4 --time="$SECONDS_RUN" run)
events_of() { awk '/total number of events/ {print $NF}'; }
D="$OUT/sampler_switch"
rm -rf "$D" && mkdir -p "$D"
# the launcher's environment for the preload variant
read -r SO CLK HZ < <(collector_env "$CONTEND" sampler-switch)
VARIANTS=(${VARIANTS:-plain default events events-per-task schedstat keepclock preload})
run_variant() { # $1 = variant: prints the events sysbench counted
  case "$1" in
    plain) "${SB[@]}" 2>&1 | events_of ;;
    default) "$CONTEND" record --force -o "$D/default.data" -- "${SB[@]}" 2>&1 | events_of ;;
    events) CONTEND_SERVICE_SOURCE=sched-events CONTEND_KEEP_TASK_CLOCK=1 "$CONTEND" record --force -o "$D/events.data" -- "${SB[@]}" 2>&1 | events_of ;;
    events-per-task) CONTEND_SCHED_EVENTS=per-task CONTEND_SERVICE_SOURCE=sched-events CONTEND_KEEP_TASK_CLOCK=1 "$CONTEND" record --force -o "$D/events-per-task.data" -- "${SB[@]}" 2>&1 | events_of ;;
    schedstat) CONTEND_SERVICE_SOURCE=schedstat CONTEND_KEEP_TASK_CLOCK=1 "$CONTEND" record --force -o "$D/schedstat.data" -- "${SB[@]}" 2>&1 | events_of ;;
    keepclock) CONTEND_KEEP_TASK_CLOCK=1 "$CONTEND" record --force -o "$D/keepclock.data" -- "${SB[@]}" 2>&1 | events_of ;;
    preload)
      rm -rf "$D/pre.data" && mkdir -p "$D/pre.data"
      CONTEND_DIR="$D/pre.data" CONTEND_CLOCK="$CLK" CONTEND_TSC_HZ="$HZ" LD_PRELOAD="$SO" "${SB[@]}" 2>&1 | events_of ;;
  esac
}
# the cost of one record to the program: (CPU s per sysbench event with
# the events kept − with schedstat) / (records per event), from the
# variant's and schedstat's recordings of this round ($1 = variant)
record_cost() {
  python3 - "$D" "$1" "$(echo ${ev[$1]} | awk '{print $NF}')" "$(echo ${ev[schedstat]} | awk '{print $NF}')" <<'PY'
import json, sys
d, v, n_ev, n_st = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
m_ev = json.load(open(f"{d}/{v}.data/meta.json"))
m_st = json.load(open(d + "/schedstat.data/meta.json"))
cpu = lambda m: m["counters"]["cpu_time_ns"]
records = m_ev["sampler"]["event_records"]
extra = cpu(m_ev) / n_ev - cpu(m_st) / n_st
print(f"{extra / (records / n_ev):.0f}")
PY
}
declare -A ev cost
for r in $(seq "$ROUNDS"); do
  line="round $r:"
  for v in "${VARIANTS[@]}"; do
    ev[$v]+=" $(run_variant "$v")"
    line+=" $v${ev[$v]##* }"
  done
  for v in events events-per-task; do
    if [[ " ${VARIANTS[*]} " == *" $v "* && " ${VARIANTS[*]} " == *" schedstat "* ]]; then
      cost[$v]+=" $(record_cost "$v")"
      line+="; $v record cost${cost[$v]##* } ns"
    fi
  done
  if [[ " ${VARIANTS[*]} " == *" default "* ]]; then
    sw=$(python3 -c 'import json,sys; m=json.load(open(sys.argv[1])); s=m.get("sampler",{}); print(s.get("switched_at_ns",0)-m["start_monotonic_ns"] if s.get("switched_at_ns") else "never", s.get("switched_records_per_s","-"))' "$D/default.data/meta.json")
    line+="; default left the events at (ns after start, records/s): $sw"
  fi
  echo "$line"
done
p=$(printf '%s\n' ${ev[plain]} | median)
for v in "${VARIANTS[@]}"; do
  m=$(printf '%s\n' ${ev[$v]} | median)
  echo "$v: median ${m} events in ${SECONDS_RUN} s (all:${ev[$v]}), ratio to plain $(awk -v a="$m" -v b="$p" 'BEGIN {printf "%.3f", a/b}')"
done
for v in events events-per-task; do
  [ -n "${cost[$v]:-}" ] && echo "cost of one scheduler event record to the program, $v: median $(printf '%s\n' ${cost[$v]} | median) ns (all:${cost[$v]})"
done
