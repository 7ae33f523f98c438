//! The recording's own cost (JSON key `recording`): what `contend record`
//! added to the program it measured, estimated from the collector's
//! calibration and its own clock (docs/metrics.md, "Recording cost").
//!
//! A profiler perturbs what it measures; Huang et al. (HaLock, PACT 2012,
//! Section 2) show that writing trace records alone added 8.1 % run time on
//! average (17.1 % on a memory-bound program) and changed the lock
//! behaviour reported. So every report says how much the recording cost:
//!
//! * the collector measures, at start-up in each traced process, what one
//!   timed record adds to an uncontended lock + unlock pair (`c_r`, ps) and,
//!   in light mode, what one counted pair adds (`c_c`); it measures the CPU
//!   time of its own slow path as it runs (chunk claims, faulting in trace
//!   pages, maps snapshots, stacks, the calibration itself: `T_slow`);
//! * the estimate is `E = R · c_r + K · c_c + T_slow` over all processes,
//!   with R records and K counted acquisitions, and per thread the same sum
//!   over its own records, counts and slow-path time;
//! * its share is `E / C`, C the target's CPU time (`wait4`, in
//!   `meta.json`), else the threads' recorded time (first to last
//!   operation, summed).
//!
//! Above [`WARN_SHARE`] the report warns that results may be distorted.
//! Recordings made before the calibration existed (lock-trace format
//! version 1) and MPI-only recordings have no estimate (`null`), and the
//! section says why.

use serde::Serialize;

use crate::analysis::{AnalysisOutput, Analyzer, Context};
use crate::recording::Recording;

pub mod layout;

/// Share of the program's time above which the report warns that the
/// recording may have distorted the results (5 %).
pub const WARN_SHARE: f64 = 0.05;

/// The analyzer of the recording's cost (registered in
/// [`crate::analysis::ANALYZERS`]).
pub struct RecordingCostAnalyzer;

/// The `recording` section: the recording's own cost.
#[derive(Debug, Clone, Serialize, Default, PartialEq)]
pub struct RecordingReport {
    /// `default`, `light` (`contend record --light`), `mixed` (processes
    /// recorded both ways) or `none` (no lock trace).
    pub mode: String,
    /// The totals and the estimate.
    pub cost: RecordingCost,
    /// What the collector measured at start-up, `null` when no traced
    /// process was calibrated.
    pub calibration: Option<Calibration>,
    /// Per traced thread, most added time first.
    pub by_thread: Vec<ThreadCost>,
    /// The warning above [`WARN_SHARE`], also among the report's warnings.
    pub warning: Option<String>,
    /// Why there is no estimate, when there is none.
    pub note: Option<String>,
}

/// Totals of the recording and the estimated time it added.
#[derive(Debug, Clone, Serialize, Default, PartialEq)]
pub struct RecordingCost {
    /// Operations recorded: timed records plus counted acquisitions.
    pub operations: u64,
    /// Of which timed records (lock-trace records).
    pub records: u64,
    /// Of which uncontended acquisitions counted without times (light mode).
    pub counted: u64,
    /// Trace bytes written: records and used count entries (chunk headers
    /// and index tables left out), lock traces and MPI traces.
    pub bytes: u64,
    /// `bytes` per second of the run's wall time (0 when it is unknown).
    pub bytes_per_s: f64,
    /// Estimated time the recording added to the traced threads, summed,
    /// ns; `null` when it cannot be estimated.
    pub estimated_ns: Option<u64>,
    /// `estimated_ns` as a share of `share_of_ns`; `null` with it.
    pub estimated_share: Option<f64>,
    /// The time the share is of, ns: the target's CPU time, else the
    /// traced threads' recorded time.
    pub share_of_ns: u64,
    /// What `share_of_ns` is: `cpu_time` or `thread_time`.
    pub share_of: String,
    /// Of `estimated_ns`, the collector's slow path as it timed itself
    /// (chunk claims, faulting in trace pages, maps snapshots, stacks,
    /// calibration), ns.
    pub slow_path_ns: u64,
}

/// The collector's start-up calibration (averaged over the calibrated
/// processes).
#[derive(Debug, Clone, Serialize, Default, PartialEq)]
pub struct Calibration {
    /// Time one timed record adds, ns (half a recorded uncontended lock +
    /// unlock pair beyond the program's own pair).
    pub record_ns: f64,
    /// Time one counted uncontended pair adds in light mode, ns; `null`
    /// when no process ran in light mode.
    pub counted_pair_ns: Option<f64>,
    /// Time the calibration took in each process, ns (the mean).
    pub calibration_ns: u64,
    /// Processes calibrated / processes traced.
    pub processes_calibrated: u32,
    /// Processes traced.
    pub processes: u32,
}

/// One thread's part of the cost.
#[derive(Debug, Clone, Serialize, Default, PartialEq)]
pub struct ThreadCost {
    /// Process id.
    pub pid: u32,
    /// Kernel thread id.
    pub tid: u32,
    /// Timed records.
    pub records: u64,
    /// Counted acquisitions (light mode).
    pub counted: u64,
    /// Record bytes.
    pub bytes: u64,
    /// Estimated time added to the thread, ns (`null` without calibration).
    pub estimated_ns: Option<u64>,
    /// Of which its slow path, ns.
    pub slow_path_ns: u64,
}

impl Analyzer for RecordingCostAnalyzer {
    fn name(&self) -> &'static str {
        "recording cost"
    }

    fn analyze(&self, cx: &Context<'_>) -> Option<AnalysisOutput> {
        let report = recording_cost(cx.recording);
        let mut out = AnalysisOutput::new(report.clone());
        out.warnings.extend(report.warning);
        Some(out)
    }
}

/// Ticks of `trace`'s clock as ns of duration.
fn ticks_to_ns(recording: &Recording, trace: &contend_trace::LockTrace, ticks: u64) -> u64 {
    if trace.clock == contend_trace::format::CLOCK_MONOTONIC {
        return ticks;
    }
    let per_tick = if recording.clock.ns_per_tick > 0.0 && recording.clock.points > 0 {
        recording.clock.ns_per_tick
    } else if trace.ticks_per_second > 0 {
        1e9 / trace.ticks_per_second as f64
    } else {
        recording.clock.ns_per_tick
    };
    (ticks as f64 * per_tick).round() as u64
}

/// The traced threads' recorded time, summed: first to last record of
/// each, ns.
fn threads_time(recording: &Recording) -> u64 {
    recording
        .processes
        .iter()
        .flat_map(|p| p.trace.threads.iter().map(move |th| (&p.trace, th)))
        .map(|(t, th)| {
            ticks_to_ns(
                recording,
                t,
                th.span_ticks.1.saturating_sub(th.span_ticks.0),
            )
        })
        .sum()
}

/// Computes the `recording` section of `recording` (see the module
/// documentation for the estimate).
pub fn recording_cost(recording: &Recording) -> RecordingReport {
    let mut r = RecordingReport::default();
    let procs = &recording.processes;
    let (mut light, mut full) = (0u32, 0u32);
    let mut calibrated = 0u32;
    let (mut rec_ps, mut cnt_ps, mut cnt_n, mut cal_ns) = (0u64, 0u64, 0u64, 0u64);
    let mut estimate: u64 = 0;
    let mut uncalibrated_ops = false;
    for p in procs {
        let t = &p.trace;
        if t.light() {
            light += 1;
        } else {
            full += 1;
        }
        // futex and OpenMP records are timed records too
        let records = t.op_count() as u64
            + t.threads
                .iter()
                .map(|th| (th.futex.len() + th.omp.len()) as u64)
                .sum::<u64>();
        let counted = t.counted();
        r.cost.records += records;
        r.cost.counted += counted;
        let entries: u64 = t.threads.iter().map(|th| th.counted.len() as u64).sum();
        r.cost.bytes += t.threads.iter().map(|th| th.record_bytes).sum::<u64>()
            + entries * contend_trace::format::count::SIZE as u64;
        let slow = t.collector_ns;
        r.cost.slow_path_ns += slow;
        let c = t.cost_record_ps != 0;
        if c {
            calibrated += 1;
            rec_ps += u64::from(t.cost_record_ps);
            cal_ns += u64::from(t.calibration_ns);
            if t.light() && t.cost_count_ps != 0 {
                cnt_ps += u64::from(t.cost_count_ps);
                cnt_n += 1;
            }
            estimate += (records * u64::from(t.cost_record_ps)
                + counted * u64::from(t.cost_count_ps))
                / 1000
                + slow;
        } else if records + counted > 0 {
            uncalibrated_ops = true;
        }
        for th in &t.threads {
            let records_t = (th.op_count + th.futex.len() + th.omp.len()) as u64;
            let slow_t = th.collector_ns;
            let counted_t: u64 = th.counted.iter().map(|x| x.count).sum();
            let est = c.then(|| {
                (records_t * u64::from(t.cost_record_ps) + counted_t * u64::from(t.cost_count_ps))
                    / 1000
                    + slow_t
            });
            r.by_thread.push(ThreadCost {
                pid: t.pid,
                tid: th.tid,
                records: records_t,
                counted: counted_t,
                bytes: th.record_bytes,
                estimated_ns: est,
                slow_path_ns: slow_t,
            });
        }
    }
    if let Some(Ok(mpi)) = &recording.mpi {
        // The rank traces' sizes (their headers included).
        let bytes: u64 = mpi
            .ranks
            .iter()
            .filter_map(|rank| std::fs::metadata(&rank.path).ok())
            .map(|m| m.len())
            .sum();
        let events: u64 = mpi.ranks.iter().map(|rank| rank.events.len() as u64).sum();
        r.cost.bytes += bytes;
        r.cost.records += events;
    }
    r.cost.operations = r.cost.records + r.cost.counted;
    r.mode = match (full, light) {
        (0, 0) => "none",
        (_, 0) => "default",
        (0, _) => "light",
        _ => "mixed",
    }
    .to_string();
    let wall = recording.wall_ns().unwrap_or(0);
    if wall > 0 {
        r.cost.bytes_per_s = r.cost.bytes as f64 * 1e9 / wall as f64;
    }
    let cpu = recording
        .meta
        .as_ref()
        .and_then(|m| m.counters.as_ref())
        .and_then(|c| c.cpu_time_ns)
        .filter(|&c| c > 0);
    (r.cost.share_of_ns, r.cost.share_of) = match cpu {
        Some(c) => (c, "cpu_time".to_string()),
        None => (threads_time(recording), "thread_time".to_string()),
    };
    if calibrated > 0 {
        r.calibration = Some(Calibration {
            record_ns: rec_ps as f64 / 1000.0 / f64::from(calibrated),
            counted_pair_ns: (cnt_n > 0).then(|| cnt_ps as f64 / 1000.0 / cnt_n as f64),
            calibration_ns: cal_ns / u64::from(calibrated),
            processes_calibrated: calibrated,
            processes: procs.len() as u32,
        });
    }
    let has_mpi = matches!(&recording.mpi, Some(Ok(m)) if !m.ranks.is_empty());
    if calibrated > 0 && !uncalibrated_ops {
        r.cost.estimated_ns = Some(estimate);
        r.cost.estimated_share =
            (r.cost.share_of_ns > 0).then(|| estimate as f64 / r.cost.share_of_ns as f64);
        if has_mpi {
            r.note = Some(
                "the estimate covers the lock collector; the MPI recorder's cost is not calibrated (bench/mpi_overhead.sh measures it per call)"
                    .into(),
            );
        }
    } else {
        r.note = Some(if procs.is_empty() && has_mpi {
            "no lock trace: the MPI recorder's cost is not calibrated, so it is not estimated (bench/mpi_overhead.sh measures it per call)".into()
        } else if procs.is_empty() {
            "no lock trace was recorded, so there is no recording cost to estimate".into()
        } else {
            "recorded by a collector without the start-up calibration (lock-trace format version 1): the recording cost was not measured".into()
        });
    }
    if let Some(share) = r.cost.estimated_share.filter(|&s| s > WARN_SHARE) {
        let basis = if r.cost.share_of == "cpu_time" {
            "of the program's CPU time"
        } else {
            "of the traced threads' time"
        };
        r.warning = Some(if r.mode == "light" {
            format!(
                "recording cost is estimated at {:.1} % {basis}: results may be distorted",
                share * 100.0
            )
        } else {
            format!(
                "recording cost is estimated at {:.1} % {basis}: results may be distorted; try `contend record --light`",
                share * 100.0
            )
        });
    }
    r.by_thread.sort_by(|a, b| {
        b.estimated_ns
            .cmp(&a.estimated_ns)
            .then(b.records.cmp(&a.records))
            .then(a.tid.cmp(&b.tid))
    });
    r
}
