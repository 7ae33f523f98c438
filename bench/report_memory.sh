#!/usr/bin/env bash
# Analysis throughput and peak memory per lock event of `contend report
# --format json` on recordings already made (real programs: the ones the
# other scripts leave in bench/out, e.g. memcached_throughput.sh's
# memcached-default.data, recording_cost.sh's sysbench-mutex-default.data).
#
# RECORDINGS: the recording directories, space-separated (default: those of
# the two scripts above that exist). ROUNDS rounds per recording, medians;
# BASELINE=/path/to/an/older/contend runs that binary too, alternating with
# this one in every round, for a before/after in one run. The events
# counted are the report's own (`locks.summary.events`).
# LARGE=1 first records (when it is not there) and then also reports
# $OUT/sysbench-mutex-20m.data: `sysbench mutex` on 4 threads taking 2
# mutexes 5,000,000 times each, without work between (20 million lock
# events, a critical path of about 8 million: a long real recording).
source "$(dirname "$0")/common.sh"
ROUNDS=${ROUNDS:-5}
RECORDINGS=${RECORDINGS:-"$OUT/memcached-default.data $OUT/sysbench-mutex-default.data"}
if [ -n "${LARGE:-}" ]; then
  large="$OUT/sysbench-mutex-20m.data"
  if [ ! -d "$large" ]; then
    command -v sysbench >/dev/null || { echo "LARGE=1 needs sysbench (apt-get install sysbench)"; exit 1; }
    "$CONTEND" record --force -o "$large" -- sysbench mutex --threads=4 --mutex-num=2 \
      --mutex-locks=5000000 --mutex-loops=0 run >/dev/null
  fi
  RECORDINGS="$RECORDINGS $large"
fi
machine
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
report_binaries
for dir in $RECORDINGS; do
  if [ ! -d "$dir" ]; then
    echo "$dir: no such recording (make it with the script named at the top), skipped" >&2
    continue
  fi
  events=$("$CONTEND" report "$dir" --format json | python3 -c 'import json, sys; print(json.load(sys.stdin)["locks"]["summary"]["events"])')
  echo "== $dir ($events lock events)"
  report_rounds "$dir" report-memory
  report_summary report-memory "$events" "lock events" event
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
