#!/usr/bin/env python3
"""Sweeps `delay` over the interference micro-benchmarks of Mosli Bouksiaa
et al. (TPDS 2019, Section 4, Listings 1-3), records each point with
`contend record`, and prints per point the benchmark's own measurement X of
its block (Table 1: mean lock acquisition time, time to access x, read
time) beside the SCI that `contend report` computes for that block, and at
the end the Pearson correlation per benchmark (Table 1's rho).

    sweep.py --contend PATH --bin DIR --out DIR [--quick] [--io-dir DIR]
             [--bench mutex,spin,false_sharing,io] [--json FILE]

The binaries in --bin are lock, false_sharing and io (run.sh builds them).
For io each point also records one thread alone at the same delay: its
fastest 1% of reads is the uncontended read time at that request rate
(column "alone"), which is what the fastest reads of the contended run
should stay near (the paper's Figure 7). On a virtual disk the device's
own latency can depend on the rate: reads after a 2 ms sleep took about
twice those without one on the KVM guest of docs/benchmarks.md, with one
thread and no contention at all, so for io the fastest reads are compared
with this reference at the same delay rather than across delays.
--quick runs a handful of delays at small sizes (the lock benchmarks keep
their 100,000 acquisitions per thread; the test suite's reduced
sweep); the full sweep has at least 12 delays per benchmark. The I/O
benchmark needs a directory on a disk-backed file system (default
/var/tmp/contend-interference): tmpfs refuses O_DIRECT, and the benchmark
is then reported as skipped with the reason.
"""
import argparse
import json
import math
import os
import subprocess
import sys

FULL = {
    # the lock benchmarks' delays are ns of compute around a 1 µs critical
    # section (lock.c: on 2 CPUs the lock goes from contended to
    # uncontended between 0 and 2 µs of delay)
    "mutex": [0, 200, 400, 600, 800, 1000, 1200, 1500, 2000, 3000, 4000, 8000, 16000],
    "spin": [0, 200, 400, 600, 800, 1000, 1200, 1500, 2000, 3000, 4000, 8000, 16000],
    "false_sharing": [0, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000],
    "io": [0, 10, 20, 50, 100, 200, 300, 500, 700, 1000, 1500, 2000, 3000, 4000],
}
QUICK = {
    "mutex": [0, 1200, 3000, 8000],
    "spin": [0, 600, 1500, 8000],
    "false_sharing": [0, 10, 1000, 5000],
    "io": [0, 100, 500, 2000],
}
# (block kind, name, key) whose SCI is compared with X
BLOCK = {
    "mutex": ("lock", "pthread_mutex_lock", "lock"),
    "spin": ("lock", "pthread_spin_lock", "spin"),
    "false_sharing": ("region", "access_x", None),
    "io": ("region", "read", None),
}
DELAY_UNIT = {"mutex": "ns", "spin": "ns", "false_sharing": "iterations", "io": "us"}
X_MEANING = {
    "mutex": "mean lock acquisition time",
    "spin": "mean lock acquisition time",
    "false_sharing": "mean time of a batch of 64 accesses to x",
    "io": "mean read time",
}


def command(bench, delay, bindir, quick, io_dir, threads=2):
    if bench in ("mutex", "spin"):
        return [os.path.join(bindir, "lock"), bench, str(delay), "100000"]
    if bench == "false_sharing":
        return [os.path.join(bindir, "false_sharing"), str(delay), "200000" if quick else "4000000"]
    return [os.path.join(bindir, "io"), io_dir, str(delay), "300" if quick else "2000", str(threads)]


def pearson(xs, ys):
    n = len(xs)
    if n < 2:
        return None
    mx, my = sum(xs) / n, sum(ys) / n
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
    sxx = sum((x - mx) ** 2 for x in xs)
    syy = sum((y - my) ** 2 for y in ys)
    if sxx == 0 or syy == 0:
        return None
    return sxy / math.sqrt(sxx * syy)


def find_block(report, kind, name, key):
    for b in report.get("sci", {}).get("blocks", []):
        if b["kind"] == kind and b["name"] == name and (key is None or b["key"] == key):
            return b
    return None


def point(args, bench, delay):
    """The least disturbed of up to --repeat runs at this delay: a run
    stops the repeats when its threads waited for a CPU less than
    --disturbed of their time (schedstat run delay, measured by the
    benchmark: time other programs took from it)."""
    best = None
    for k in range(args.repeat):
        r = one_run(args, bench, delay, k)
        if "skip" in r:
            return r
        if best is None or r["disturbed"] < best["disturbed"]:
            best = r
        if r["disturbed"] <= args.disturbed:
            break
    best["undisturbed"] = best["disturbed"] <= args.disturbed
    if bench == "io":
        best["alone_fastest_1pct_ns"] = alone_fastest(args, delay)
    return best


def alone_fastest(args, delay):
    """The fastest 1% of reads (contend's block statistics, as for the
    points) of one io thread alone at `delay`: the uncontended read time
    at that request rate."""
    data = os.path.join(args.out, f"io-{delay}-alone.data")
    cmd = [args.contend, "record", "-o", data, "--force", "--"] + command(
        "io", delay, args.bin, args.quick, args.io_dir, threads=1
    )
    run = subprocess.run(cmd, capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({run.returncode}):\n{run.stderr}")
    rep = subprocess.run(
        [args.contend, "report", data, "--format", "json"], capture_output=True, text=True, check=True
    )
    kind, name, key = BLOCK["io"]
    b = find_block(json.loads(rep.stdout), kind, name, key)
    if b is None:
        sys.exit(f"io delay {delay}, one thread: no block {kind} {name} in {data}")
    return b["fastest_1pct_ns"]


def one_run(args, bench, delay, k):
    data = os.path.join(args.out, f"{bench}-{delay}-{k}.data")
    cmd = [args.contend, "record", "-o", data, "--force", "--"] + command(
        bench, delay, args.bin, args.quick, args.io_dir
    )
    run = subprocess.run(cmd, capture_output=True, text=True)
    if run.returncode == 3 and bench == "io":
        return {"skip": run.stderr.strip()}
    if run.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({run.returncode}):\n{run.stderr}")
    line = next(l for l in run.stdout.splitlines() if l.startswith("{"))
    measured = json.loads(line)
    # lock.c: every acquisition (x_all_ns), the long starvations of an
    # unfair lock included; runs disturbed by other programs are told
    # apart by `disturbed`, not by leaving long acquisitions out
    x = measured["x_all_ns"] if bench in ("mutex", "spin") else measured["x_ns"]
    rep = subprocess.run(
        [args.contend, "report", data, "--format", "json"], capture_output=True, text=True, check=True
    )
    report = json.loads(rep.stdout)
    kind, name, key = BLOCK[bench]
    b = find_block(report, kind, name, key)
    if b is None or b["sci"] is None:
        sys.exit(f"{bench} delay {delay}: no scored block {kind} {name} [{key}] in {data}")
    return {
        "delay": delay,
        "x_ns": x,
        "disturbed": measured.get("disturbed", 0.0),
        "sci": b["sci"],
        "occurrences": b["occurrences"],
        "min_ns": b["min_ns"],
        "fastest_1pct_ns": b["fastest_1pct_ns"],
        # the program's own fastest batch and 1% quantile (false_sharing)
        "program_fastest_1pct_ns": [measured[k] for k in ("fastest_ns", "fastest_1pct_ns")]
        if "fastest_1pct_ns" in measured
        else None,
        "median_ns": b["median_ns"],
        "mean_ns": b["mean_ns"],
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--contend", required=True)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--io-dir", default="/var/tmp/contend-interference")
    ap.add_argument("--bench", default="mutex,spin,false_sharing,io")
    ap.add_argument("--json")
    ap.add_argument("--repeat", type=int, default=3, help="runs per point at most (least disturbed kept)")
    ap.add_argument("--disturbed", type=float, default=0.05,
                    help="a run is disturbed when its threads waited for a CPU more than this share of their time")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    os.makedirs(args.io_dir, exist_ok=True)
    delays = QUICK if args.quick else FULL
    summary = {}
    for bench in args.bench.split(","):
        print(f"== {bench}: X = {X_MEANING[bench]} (the program's clock), SCI of block "
              f"{BLOCK[bench][1]}{' [' + BLOCK[bench][2] + ']' if BLOCK[bench][2] else ''} (contend); "
              f"delay in {DELAY_UNIT[bench]}")
        print(f"{'delay':>8} {'X (ns)':>12} {'SCI':>8} {'execs':>9} {'fastest':>9} {'1% slowest':>11} {'median':>9} "
              f"{'disturbed':>10}" + (f" {'alone: 1% slowest':>18}" if bench == "io" else ""))
        rows = []
        skipped = None
        for d in delays[bench]:
            p = point(args, bench, d)
            if "skip" in p:
                skipped = p["skip"]
                break
            rows.append(p)
            print(f"{d:>8} {p['x_ns']:>12.1f} {p['sci']:>8.4f} {p['occurrences']:>9} {p['min_ns']:>9} "
                  f"{p['fastest_1pct_ns'][1]:>11} {p['median_ns']:>9} {p['disturbed'] * 100:>9.1f}%"
                  f"{'' if p['undisturbed'] else ' (still disturbed)'}"
                  + (f" {p['alone_fastest_1pct_ns'][1]:>18}" if bench == "io" else ""), flush=True)
        if skipped:
            print(f"   skipped: {skipped}")
            summary[bench] = {"skipped": skipped}
            continue
        rho = pearson([r["x_ns"] for r in rows], [r["sci"] for r in rows])
        clean = [r for r in rows if r["undisturbed"]]
        rho_clean = pearson([r["x_ns"] for r in clean], [r["sci"] for r in clean])
        fmt = lambda r: "n/a" if r is None else f"{r:.3f}"
        print(f"   Pearson rho(X, SCI) = {fmt(rho)} over {len(rows)} delays; {fmt(rho_clean)} over the "
              f"{len(clean)} undisturbed ones\n")
        summary[bench] = {"rho": rho, "rho_undisturbed": rho_clean, "undisturbed": len(clean), "points": rows}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(summary, f, indent=1)


if __name__ == "__main__":
    main()
