//! `contend meters`: the meter daemon (Fowler et al. 2011, "RCRDaemon":
//! "stores current performance meters into a globally-accessible shared
//! memory region"). It creates the blackboard, runs the [`Engine`] on a
//! grid of intervals, publishes every new value under its slot's seqlock,
//! stores the heartbeat after each tick and frees the application slots
//! of processes that are gone.
//! It stops when `stop()` says so (a signal) or after the duration,
//! closes the blackboard (flag, name removed) and returns every meter's
//! statistics over the run.

use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;

use crate::blackboard::{monotonic_ns, Blackboard, BlackboardError, CreateOptions};
use crate::engine::{Engine, EngineError, EngineOptions, MeterSummary};
use crate::probe::Grid;

/// What the daemon does.
#[derive(Debug, Clone)]
pub struct DaemonOptions {
    /// The engine.
    pub engine: EngineOptions,
    /// The blackboard file ([`crate::blackboard::path_of`]).
    pub blackboard: PathBuf,
    /// Stop after this long (`None`: until stopped).
    pub duration: Option<Duration>,
    /// Create the blackboard writable by every user.
    pub world_writable: bool,
}

/// Errors of the daemon.
#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    /// The blackboard could not be created (in use, no permission).
    #[error(transparent)]
    Blackboard(#[from] BlackboardError),
    /// The engine could not start.
    #[error(transparent)]
    Engine(#[from] EngineError),
}

/// What a daemon run measured (`contend meters --format json`).
#[derive(Debug, Clone, Serialize)]
pub struct DaemonSummary {
    /// The blackboard file.
    pub blackboard: String,
    /// Interval, s.
    pub interval_s: f64,
    /// Short-term window, s.
    pub window_s: f64,
    /// Run time, s.
    pub duration_s: f64,
    /// The probe.
    pub probe: ProbeSummary,
    /// CPU time of the daemon (all its threads, after the probe's chain
    /// was built) per second of run time: its own cost in CPUs.
    pub daemon_cpu: f64,
    /// Sentences about what was and was not metered.
    pub notes: Vec<String>,
    /// Every meter over the run.
    pub meters: Vec<MeterSummary>,
}

/// The probe over a run.
#[derive(Debug, Clone, Serialize)]
pub struct ProbeSummary {
    /// Its CPU.
    pub cpu: u32,
    /// Chain size, bytes.
    pub chain_bytes: u64,
    /// Steps per sample.
    pub loads: u32,
    /// Chains k.
    pub chains: u32,
    /// Undisturbed samples.
    pub samples: u64,
    /// Disturbed samples (left out).
    pub disturbed: u64,
    /// Time spent chasing, s.
    pub busy_s: f64,
    /// Mean latency of the undisturbed samples, ns.
    pub mean_ns: Option<f64>,
}

/// Summary of an engine's run.
pub fn summarize(engine: &Engine, blackboard: &str, duration_s: f64, cpu_ns: u64) -> DaemonSummary {
    let o = engine.options();
    let p = engine.probe_totals();
    DaemonSummary {
        blackboard: blackboard.to_string(),
        interval_s: o.interval.as_secs_f64(),
        window_s: o.window.as_secs_f64(),
        duration_s,
        probe: ProbeSummary {
            cpu: o.probe_cpu,
            chain_bytes: o.probe.chain_bytes,
            loads: o.probe.loads,
            chains: o.probe.chains,
            samples: p.samples,
            disturbed: p.disturbed,
            busy_s: p.busy_ns as f64 / 1e9,
            mean_ns: p.mean(),
        },
        daemon_cpu: if duration_s > 0.0 {
            cpu_ns as f64 / 1e9 / duration_s
        } else {
            0.0
        },
        notes: engine.notes().to_vec(),
        meters: engine.summary(),
    }
}

fn process_cpu_ns() -> u64 {
    // SAFETY: getrusage with a valid out-pointer.
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut ru);
        ru
    };
    let us = |t: libc::timeval| t.tv_sec as u64 * 1_000_000 + t.tv_usec as u64;
    (us(ru.ru_utime) + us(ru.ru_stime)) * 1000
}

/// Runs the daemon until `stop()` returns true or the duration ends.
/// `started` is called once the blackboard exists and the first values
/// are being computed (to tell the user).
///
/// Errors: the blackboard cannot be created (another daemon holds the
/// name: [`BlackboardError::InUse`]) or the engine cannot start. Nothing
/// is left behind on error.
pub fn run(
    opts: &DaemonOptions,
    stop: &dyn Fn() -> bool,
    started: &mut dyn FnMut(&Blackboard),
) -> Result<DaemonSummary, DaemonError> {
    let mut bb = Blackboard::create(
        &opts.blackboard,
        &CreateOptions {
            interval_ns: opts.engine.interval.as_nanos() as u64,
            window_ns: opts.engine.window.as_nanos() as u64,
            world_writable: opts.world_writable,
            ..CreateOptions::default()
        },
    )?;
    let mut engine = match Engine::start(opts.engine.clone()) {
        Ok(e) => e,
        Err(e) => {
            bb.close();
            return Err(e.into());
        }
    };
    // The cost of metering, not of building the probe's chain.
    let cpu0 = process_cpu_ns();
    started(&bb);
    let start = monotonic_ns();
    let end = opts
        .duration
        .map(|d| start.saturating_add(d.as_nanos() as u64));
    // The blackboard slot of each meter, by the engine's meter index; the
    // vectors are kept across ticks, so a tick allocates nothing.
    let mut slots: Vec<Option<u32>> = Vec::new();
    let mut free: Vec<u32> = Vec::new();
    let mut updated: Vec<usize> = Vec::with_capacity(64);
    let mut grid = Grid::new(start, opts.engine.interval);
    let mut next_reap = start;
    loop {
        // One wake-up per interval: the engine samples the probe in this
        // thread (pinned to the probe's CPU at the first tick).
        grid.sleep();
        if stop() || end.is_some_and(|e| monotonic_ns() >= e) {
            break;
        }
        let now = monotonic_ns();
        engine.tick_into(now, &mut updated);
        for &i in &updated {
            let m = &engine.meters()[i];
            if slots.len() <= i {
                slots.resize(i + 1, None);
            }
            let slot = match slots[i] {
                Some(s) => s,
                None => {
                    let s = match free.pop() {
                        Some(s) => {
                            bb.describe(s, &m.desc);
                            Some(s)
                        }
                        None => bb.add_meter(&m.desc).ok(),
                    };
                    match s {
                        Some(s) => {
                            slots[i] = Some(s);
                            s
                        }
                        None => continue,
                    }
                }
            };
            if let Some(v) = &m.last {
                bb.publish(slot, v);
            }
            if m.ended {
                // Its last value stays visible until the slot is needed.
                if let Some(s) = slots[i].take() {
                    free.insert(0, s);
                }
            }
        }
        bb.heartbeat();
        if now >= next_reap {
            bb.reap_app_slots();
            next_reap = now + 1_000_000_000;
        }
    }
    let duration = (monotonic_ns() - start) as f64 / 1e9;
    let summary = summarize(
        &engine,
        &opts.blackboard.display().to_string(),
        duration,
        process_cpu_ns().saturating_sub(cpu0),
    );
    drop(engine);
    bb.close();
    Ok(summary)
}
