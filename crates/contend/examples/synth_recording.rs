//! Writes a synthetic recording for the analysis benchmark
//! (bench/analysis_throughput.sh): `THREADS` threads sharing `LOCKS`
//! mutexes, `EVENTS` lock events in all, a third of them contended, with
//! nesting every 16th event. The trace is written with the same layout the
//! collector writes (contend_trace::TraceBuilder).
//!
//! Usage: synth_recording OUT_DIR EVENTS [THREADS] [LOCKS]

use std::path::PathBuf;

use contend_trace::format::CLOCK_MONOTONIC;
use contend_trace::{Phase, Primitive, RawOp, TraceBuilder, NO_STACK};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        eprintln!("usage: synth_recording OUT_DIR EVENTS [THREADS] [LOCKS]");
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
    for t in 0..threads {
        let mut ops = Vec::with_capacity(per_thread as usize * 2 + 8);
        let mut now = 1_000_000 + t * 17;
        let op = |ticks, object, site, phase| RawOp {
            ticks,
            object,
            site,
            primitive: Primitive::Mutex,
            phase,
            stack: NO_STACK,
        };
        let mut i = 0;
        while i < per_thread {
            let r = rand();
            let lock = 0x5000_0000 + (r % locks) * 64;
            let site = 0x40_0000 + (r >> 8) % 64 * 16;
            now += 50 + (r >> 20) % 500;
            if (r >> 40) % 3 == 0 {
                ops.push(op(now, lock, site, Phase::Request));
                now += 100 + (r >> 44) % 2000;
                ops.push(op(now, lock, site, Phase::Acquired));
            } else {
                ops.push(op(now, lock, site, Phase::Immediate));
            }
            if i % 16 == 0 && i + 1 < per_thread {
                // nested inner lock
                let inner = 0x6000_0000 + t * 64;
                now += 20;
                ops.push(op(now, inner, site + 8, Phase::Immediate));
                now += 30;
                ops.push(op(now, inner, site + 8, Phase::Release));
                i += 1;
            }
            now += 100 + (r >> 50) % 300;
            ops.push(op(now, lock, site + 4, Phase::Release));
            i += 1;
        }
        b.threads.push((1000 + t as u32, ops));
    }
    std::fs::write(out.join("locks").join("1000.ctrace"), b.to_bytes())?;
    println!(
        "wrote {} lock events in {} threads to {}",
        per_thread * threads,
        threads,
        out.display()
    );
    Ok(())
}
