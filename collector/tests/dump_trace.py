#!/usr/bin/env python3
"""Minimal independent reader of a contend .ctrace (for collector smoke tests).

usage: dump_trace.py FILE [-v]   prints the header, per-thread record counts
and, with -v, every record. Exits non-zero on a malformed trace.
"""
import struct
import sys
from collections import Counter, defaultdict

PRIM = {1: "mutex", 2: "rw_read", 3: "rw_write", 4: "spin", 5: "cond", 6: "barrier", 7: "sem"}
PHASE = {1: "REQUEST", 2: "ACQUIRED", 3: "IMMEDIATE", 4: "BUSY", 5: "ERROR", 6: "RELEASE",
         7: "RELEASED", 8: "UNTIMED"}


def main():
    path = sys.argv[1]
    verbose = "-v" in sys.argv
    data = open(path, "rb").read()
    assert data[:8] == b"CNTDLOCK", "bad magic"
    (version, hsize, endian, psize, clock, chunk, claimed, pid, ppid, flags,
     ooff, oslots, sslots, soff, doff) = struct.unpack_from("<IIIHHIIIIQQIIQQ", data, 8)
    start = struct.unpack_from("<QQQQ", data, 80)
    end = struct.unpack_from("<QQQQ", data, 112)
    tps, every = struct.unpack_from("<QI", data, 144)
    collector_ns, cost_record_ps, cost_count_ps, calibration_ns = struct.unpack_from("<QIII", data, 160)
    exe = data[512:1536].split(b"\0")[0].decode()
    cmd = [a.decode() for a in data[1536:3584].rstrip(b"\0").split(b"\0")]
    print(f"version={version} clock={clock} chunk={chunk} claimed={claimed} pid={pid} ppid={ppid} "
          f"flags={flags} data_offset={doff} tps={tps} stack_every={every}")
    print(f"start={start[:3]} end={end[:3]}")
    print(f"collector_ns={collector_ns} cost_record_ps={cost_record_ps} "
          f"cost_count_ps={cost_count_ps} calibration_ns={calibration_ns} light={bool(flags & 8)}")
    print(f"exe={exe} cmdline={cmd}")
    objs = struct.unpack_from(f"<{oslots}Q", data, ooff)
    sites = struct.unpack_from(f"<{sslots}Q", data, soff)
    print(f"objects={sum(1 for o in objs if o)} sites={sum(1 for s in sites if s)} file={len(data)}")
    threads = defaultdict(list)
    counts = defaultdict(Counter)
    problems = 0
    for c in range(claimed):
        off = doff + c * chunk
        if off + chunk > len(data):
            print(f"chunk {c}: truncated file")
            problems += 1
            continue
        magic, tid, seq, _fl, base, mono = struct.unpack_from("<IIIIQQ", data, off)
        if magic == 0:
            print(f"chunk {c}: never started")
            continue
        assert magic == 0x4B4E4843, f"chunk {c} bad magic {magic:#x}"
        if _fl & 1:  # COUNTS chunk
            n = (chunk - 64) // 32
            for k in range(n):
                o, st, cnt_, prim = struct.unpack_from("<QQQI", data, off + 64 + 32 * k)
                if o:
                    counts[tid][(PRIM.get(prim, prim), o, st)] += cnt_
            continue
        words = struct.unpack_from(f"<{chunk // 8}Q", data, off)
        i, now, recs, stack = 8, base, [], None
        while i < len(words) and words[i]:
            w = words[i]
            tag, dt, oi, si = w & 0xFF, (w >> 8) & 0xFFFFFF, (w >> 32) & 0xFFFF, w >> 48
            if tag == 1:
                now = words[i + 1]
                i += 2
                continue
            if tag == 2:
                stack = words[i + 1:i + 1 + dt]
                i += 1 + dt
                continue
            wide = tag & 0x80
            if tag & 0x7F in (3, 4, 5, 6):
                # FUTEX, OMP, CREATE and JOIN records: head, addresses when
                # wide, one extension word; not lock operations
                now += dt
                i += 4 if wide else 2
                stack = None
                continue
            prim, phase = (tag & 0x7F) >> 4, tag & 0xF
            if prim not in PRIM or phase not in PHASE:
                print(f"chunk {c} word {i}: bad tag {tag:#x}")
                problems += 1
                break
            now += dt
            if wide:
                obj, site = words[i + 1], words[i + 2]
                i += 3
            else:
                obj, site = objs[oi], sites[si]
                if not obj and oi:
                    problems += 1
                i += 1
            recs.append((now, PRIM[prim], PHASE[phase], obj, site, stack, bool(wide)))
            stack = None
        threads[tid].append((seq, c, recs))
    total = 0
    for tid, chunks in sorted(threads.items()):
        chunks.sort()
        seqs = [s for s, _, _ in chunks]
        if seqs != list(range(len(seqs))):
            print(f"tid {tid}: sequence gap {seqs}")
            problems += 1
        recs = [r for _, _, rs in chunks for r in rs]
        total += len(recs)
        cnt = Counter((r[1], r[2]) for r in recs)
        print(f"tid {tid}: chunks={len(chunks)} records={len(recs)} " +
              " ".join(f"{p}.{ph}={n}" for (p, ph), n in sorted(cnt.items())))
        if verbose:
            for r in recs:
                st = f" stack={[hex(a) for a in r[5]]}" if r[5] else ""
                print(f"   t={r[0]} {r[1]}.{r[2]} obj={r[3]:#x} site={r[4]:#x}{' WIDE' if r[6] else ''}{st}")
    counted = 0
    for tid, cs in sorted(counts.items()):
        counted += sum(cs.values())
        print(f"tid {tid}: counted " + " ".join(f"{p}@{o:#x}/{st:#x}={n}" for (p, o, st), n in sorted(cs.items())))
    print(f"threads={len(threads)} records={total} counted={counted} problems={problems}")
    sys.exit(1 if problems else 0)


main()
