//! Times the stages of the lock analysis on a recording (for
//! bench/analysis_throughput.sh): opening the recording, pairing,
//! critical-path marking, aggregation, and the whole `contend::analyze`.
//!
//! Then, per stage that the analyses announce through
//! [`contend::analysis::Progress`] during `contend::analyze`, its wall and
//! CPU time and the peak resident memory reached in it (VmHWM, reset at
//! each stage through /proc/self/clear_refs), so the stage that sets the
//! peak of `contend report` can be seen.
//!
//! Usage: lock_stages RECORDING_DIR [--stages]
//! (`--stages`: only the stage log, in a fresh process, so that no memory
//! freed by an earlier run stays counted)

use std::time::Instant;

/// CPU time of the whole process so far (user + system, all threads), s.
fn cpu_s() -> f64 {
    let mut ru = std::mem::MaybeUninit::<libc_rusage>::zeroed();
    // SAFETY: getrusage fills the struct; RUSAGE_SELF = 0.
    unsafe { getrusage(0, ru.as_mut_ptr()) };
    // SAFETY: zero-initialised and filled by getrusage.
    let ru = unsafe { ru.assume_init() };
    let t = |tv: [i64; 2]| tv[0] as f64 + tv[1] as f64 * 1e-6;
    t(ru.utime) + t(ru.stime)
}

#[repr(C)]
struct libc_rusage {
    utime: [i64; 2],
    stime: [i64; 2],
    rest: [i64; 14],
}

extern "C" {
    fn getrusage(who: i32, usage: *mut libc_rusage) -> i32;
}

/// Wall and CPU seconds of `f`.
fn timed<T>(f: impl FnOnce() -> T) -> (T, f64, f64) {
    let (t, c) = (Instant::now(), cpu_s());
    let v = f();
    (v, t.elapsed().as_secs_f64(), cpu_s() - c)
}

use contend::analysis::{AnalysisOptions, NoProgress, Progress};

/// VmRSS and VmHWM of this process, KiB.
fn rss_kib() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// Resets VmHWM to the current RSS (Linux: "5" to clear_refs).
fn reset_peak() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// Prints each announced stage's wall and CPU time and peak RSS.
struct StageLog {
    current: std::cell::RefCell<Option<(String, Instant, f64)>>,
}

impl StageLog {
    fn finish(&self) {
        if let Some((name, t, c)) = self.current.borrow_mut().take() {
            let (rss, hwm) = rss_kib();
            println!(
                "  stage {name:<32} wall {:.3} s, CPU {:.3} s, peak RSS {hwm} KiB (at its end {rss} KiB)",
                t.elapsed().as_secs_f64(),
                cpu_s() - c
            );
        }
    }
}

impl Progress for StageLog {
    fn stage(&self, name: &str, _total: u64) {
        self.finish();
        reset_peak();
        *self.current.borrow_mut() = Some((name.to_string(), Instant::now(), cpu_s()));
    }
}
use contend::locks::{
    aggregate::aggregate_named, mark_critical_path, pair_operations, Names, OpSource, ThreadInput,
    TimeMap,
};
use contend::recording::Recording;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // as `contend` does
    contend::analysis::configure_allocator();
    let dir = std::env::args()
        .nth(1)
        .ok_or("usage: lock_stages RECORDING_DIR")?;
    let (rec, open_s, open_c) = timed(|| Recording::open(std::path::Path::new(&dir)));
    let rec = rec?;
    if std::env::args().nth(2).as_deref() == Some("--stages") {
        let log = StageLog {
            current: Default::default(),
        };
        reset_peak();
        let analysis = contend::analyze(&rec, &AnalysisOptions::default(), &log);
        log.finish();
        drop(analysis);
        return Ok(());
    }
    let inputs: Vec<ThreadInput<'_>> = rec
        .processes
        .iter()
        .enumerate()
        .flat_map(|(pi, p)| {
            let clock = if p.trace.clock == contend_trace::format::CLOCK_MONOTONIC {
                TimeMap::Identity
            } else {
                TimeMap::Fit(rec.clock)
            };
            p.trace.threads.iter().map(move |th| ThreadInput {
                process: pi as u32,
                pid: p.trace.pid,
                tid: th.tid,
                ops: OpSource::Trace(&p.trace, th),
                clock,
            })
        })
        .collect();
    let (set, pair_s, pair_c) = timed(|| pair_operations(&inputs));
    let (path, path_s, path_c) = timed(|| mark_critical_path(&set));
    let names = Names {
        objects: set
            .objects
            .iter()
            .map(|o| format!("{:#x}", o.address))
            .collect(),
        sites: set
            .sites
            .iter()
            .map(|_| contend::symbols::ResolvedSite::default())
            .collect(),
    };
    let (r, agg_s, agg_c) = timed(|| aggregate_named(&set, &path, &names, &Default::default(), 0));
    // Part of aggregation (beside the sums, on the other core), timed alone.
    let (_, own_s, own_c) = timed(|| contend::locks::ownership::ownership_changes(&set));
    let n = set.events.len();
    drop(set);
    drop(path);
    let (analysis, all_s, all_c) =
        timed(|| contend::analyze(&rec, &AnalysisOptions::default(), &NoProgress));
    drop(analysis);
    println!(
        "{n} events ({} on the critical path), wall (CPU) seconds: open {open_s:.3} ({open_c:.3}), pairing {pair_s:.3} ({pair_c:.3}), critical path {path_s:.3} ({path_c:.3}), aggregation {agg_s:.3} ({agg_c:.3}) [of it, ownership changes alone {own_s:.3} ({own_c:.3})]; analyze() {all_s:.3} ({all_c:.3})",
        r.critical_path.events
    );
    Ok(())
}
