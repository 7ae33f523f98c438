//! Writes a synthetic recording for the analysis benchmark
//! (bench/analysis_throughput.sh): `THREADS` threads sharing `LOCKS`
//! mutexes, `EVENTS` lock events in all, with nesting every 16th event
//! (a per-thread inner mutex). The trace is written with the same layout
//! the collector writes (contend_trace::TraceBuilder).
//!
//! By default each thread's timeline is drawn on its own and a third of
//! the acquisitions are marked contended, whatever the other threads do:
//! a shared mutex is then held by several threads at once, which no real
//! recording shows (the benchmark's figures since 2026-11-22 are of this
//! recording). With `--exclusive` the threads are simulated together, each
//! mutex held by one thread at a time: an acquisition that finds the mutex
//! held waits until its release (plus a hand-over of 100–500 ns) and is
//! contended, as a recording of a real program would have it.
//!
//! Usage: synth_recording OUT_DIR EVENTS [THREADS] [LOCKS] [--exclusive]

use std::path::PathBuf;

use contend_trace::format::CLOCK_MONOTONIC;
use contend_trace::{Phase, Primitive, RawOp, TraceBuilder, NO_STACK};

/// One thread being generated: its clock (ns), its events so far and its
/// operations.
struct Generated {
    now: u64,
    events: u64,
    ops: Vec<RawOp>,
}

fn op(ticks: u64, object: u64, site: u64, phase: Phase) -> RawOp {
    RawOp {
        ticks,
        object,
        site,
        primitive: Primitive::Mutex,
        phase,
        stack: NO_STACK,
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args: Vec<String> = std::env::args().collect();
    let exclusive = args.iter().any(|a| a == "--exclusive");
    args.retain(|a| a != "--exclusive");
    if args.len() < 3 {
        eprintln!("usage: synth_recording OUT_DIR EVENTS [THREADS] [LOCKS] [--exclusive]");
        std::process::exit(2);
    }
    let out = PathBuf::from(&args[1]);
    let events: u64 = args[2].parse()?;
    let threads: u64 = args.get(3).map_or(Ok(8), |s| s.parse())?;
    let locks: u64 = args.get(4).map_or(Ok(4), |s| s.parse())?;
    std::fs::create_dir_all(out.join("locks"))?;
    let per_thread = events / threads;
    let mut b = TraceBuilder {
        clock: CLOCK_MONOTONIC,
        chunk_size: 128 * 1024,
        ..TraceBuilder::default()
    };
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    let mut rand = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut gen: Vec<Generated> = (0..threads)
        .map(|t| Generated {
            now: 1_000_000 + t * 17,
            events: 0,
            ops: Vec::with_capacity(per_thread as usize * 2 + 8),
        })
        .collect();
    // When each shared mutex is free again (exclusive mode).
    let mut free_at = vec![0u64; locks as usize];
    let mut contended = 0u64;
    loop {
        // Default: each thread generated to its end in turn. Exclusive: the
        // thread whose clock is least goes next, so that the mutexes'
        // holds are handed out in time order.
        let next = if exclusive {
            (0..gen.len())
                .filter(|&t| gen[t].events < per_thread)
                .min_by_key(|&t| gen[t].now)
        } else {
            (0..gen.len()).find(|&t| gen[t].events < per_thread)
        };
        let Some(t) = next else { break };
        let g = &mut gen[t];
        let r = rand();
        let lock_index = r % locks;
        let lock = 0x5000_0000 + lock_index * 64;
        let site = 0x40_0000 + (r >> 8) % 64 * 16;
        g.now += 50 + (r >> 20) % 500;
        let waits = if exclusive {
            free_at[lock_index as usize] > g.now
        } else {
            (r >> 40) % 3 == 0
        };
        if waits {
            contended += 1;
            g.ops.push(op(g.now, lock, site, Phase::Request));
            g.now = if exclusive {
                free_at[lock_index as usize] + 100 + (r >> 44) % 400
            } else {
                g.now + 100 + (r >> 44) % 2000
            };
            g.ops.push(op(g.now, lock, site, Phase::Acquired));
        } else {
            g.ops.push(op(g.now, lock, site, Phase::Immediate));
        }
        if g.events.is_multiple_of(16) && g.events + 1 < per_thread {
            let inner = 0x6000_0000 + t as u64 * 64;
            g.now += 20;
            g.ops.push(op(g.now, inner, site + 8, Phase::Immediate));
            g.now += 30;
            g.ops.push(op(g.now, inner, site + 8, Phase::Release));
            g.events += 1;
        }
        g.now += 100 + (r >> 50) % 300;
        g.ops.push(op(g.now, lock, site + 4, Phase::Release));
        free_at[lock_index as usize] = g.now;
        g.events += 1;
    }
    for (t, g) in gen.into_iter().enumerate() {
        b.threads.push((1000 + t as u32, g.ops));
    }
    std::fs::write(out.join("locks").join("1000.ctrace"), b.to_bytes())?;
    println!(
        "wrote {} lock events in {} threads to {} ({} contended acquisitions{})",
        per_thread * threads,
        threads,
        out.display(),
        contended,
        if exclusive {
            ", each mutex held by one thread at a time"
        } else {
            ""
        }
    );
    Ok(())
}
