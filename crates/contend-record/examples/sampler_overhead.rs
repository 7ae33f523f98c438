//! Measures the service-time sampler alone (bench/sampler_overhead.sh):
//! starts `CMD`, samples it with [`contend_record::sampler::Sampler`]
//! every `INTERVAL_MS` until it exits, and prints the sampling thread's own
//! CPU time (`CLOCK_THREAD_CPUTIME_ID`) beside the wall time, as
//! `key=value` pairs.
//!
//! The source is that of `CONTEND_SERVICE_SOURCE` (`schedstat`,
//! `sched-events`, unset: scheduler events where allowed).
//!
//! Usage: sampler_overhead OUT_FILE INTERVAL_MS CMD [ARGS...]

use std::time::{Duration, Instant};

use std::os::unix::process::CommandExt;

use contend_record::sampler::{Sampler, ServiceSource};
use contend_record::sched_events::Prepared;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 4 {
        eprintln!("usage: sampler_overhead OUT_FILE INTERVAL_MS CMD [ARGS...]");
        std::process::exit(2);
    }
    let out = std::path::PathBuf::from(&args[1]);
    let interval = Duration::from_secs_f64(args[2].parse::<f64>()? / 1e3);
    let started = Instant::now();
    // As `contend record` does: the scheduler events are opened on the
    // child before its exec.
    let source = ServiceSource::from_env();
    let prepared = match source {
        ServiceSource::Schedstat => None,
        _ => Some(Prepared::new()?),
    };
    let mut cmd = std::process::Command::new(&args[3]);
    cmd.args(&args[4..]);
    if let Some(part) = prepared.as_ref().map(Prepared::child_part) {
        // SAFETY: the hook only makes system calls (no allocation, no
        // locks).
        unsafe {
            cmd.pre_exec(move || {
                part.handshake();
                Ok(())
            });
        }
    }
    let spawned = cmd.spawn();
    let events = prepared.map(Prepared::events);
    let mut child = spawned?;
    let sampler = Sampler::start_with(&out, child.id(), interval, 0, source, events)?;
    // Wait for the child to end without reaping it.
    contend_record::launch::wait_exited(child.id())?;
    let stats = sampler.stop();
    let wall = started.elapsed().as_secs_f64();
    child.wait()?;
    if let Some(e) = &stats.error {
        eprintln!("sampler error: {e}");
    }
    let cpu = stats.cpu_ns as f64 / 1e9;
    println!(
        "sampler_cpu_s={cpu:.6} wall_s={wall:.3} share_of_one_core={:.4}% ticks={} \
         entries={} threads={} discoveries={} per_tick_us={:.1} file_bytes={} source={} \
         event_threads={} event_records={} lost={} ticks_from_events={} watermark_wakeups={}",
        100.0 * cpu / wall,
        stats.ticks,
        stats.entries,
        stats.threads,
        stats.discoveries,
        1e6 * cpu / stats.ticks.max(1) as f64,
        std::fs::metadata(&out).map(|m| m.len()).unwrap_or(0),
        stats.source,
        stats.event_threads,
        stats.event_records,
        stats.event_records_lost,
        stats.ticks_from_events,
        stats.watermark_wakeups
    );
    if let Some(note) = &stats.source_note {
        eprintln!("scheduler events not used: {note}");
    }
    Ok(())
}
