#!/usr/bin/env bash
# Response of the pointer-chasing probe to memory traffic: `contend meters
# calibrate` runs the probe on CPU 0 and the memory contention generator on
# the other CPUs at intensities 0, 0.25, 0.5, 0.75 and 1 (ROUNDS rounds of
# HOLD each) and prints latency against the generator's own bandwidth.
source "$(dirname "$0")/common.sh"
ROUNDS=${ROUNDS:-3}
HOLD=${HOLD:-1s}
machine
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
"$CONTEND" meters calibrate -o "$OUT/meters-calibration.json" --force \
  --rounds "$ROUNDS" --hold "$HOLD" 2>/dev/null
python3 - "$OUT/meters-calibration.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
print("every point measured (intensity, GB/s, ns, samples):")
for p in c["measured"]:
    print(f"  {p['intensity']:.2f}  {p['bandwidth_bytes_per_s']/1e9:7.3f}  {p['latency_ns']:7.1f}  {p['samples']}")
lo, hi = c["curve"][0], c["curve"][-1]
print(f"latency rise from {lo['bandwidth_bytes_per_s']/1e9:.2f} GB/s to {hi['bandwidth_bytes_per_s']/1e9:.2f} GB/s: "
      f"{lo['latency_ns']:.1f} -> {hi['latency_ns']:.1f} ns ({100*(hi['latency_ns']/lo['latency_ns']-1):+.1f} %)")
PY
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
