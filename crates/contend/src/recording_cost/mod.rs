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
//! * since the collector also times itself in situ (lock-trace flag
//!   `FLAG_SAMPLED_COST`: one in 256 operations of each thread, the window
//!   two clock readings around the storing of an operation's first record,
//!   or around a count), the per-record and per-count costs come from the thread's own
//!   samples where the cost happens, cache and TLB misses of its tables
//!   and trace included: per thread
//!   `E_t = R_t · (Σw_r / n_r + c_r − ŵ_r) + K_t · (Σw_c / n_c + c_c − ŵ_c) + T_slow,t`,
//!   with `Σw / n` the mean sampled window (the process's mean when the
//!   thread has no sample, the calibration when the process has none) and
//!   `ŵ` the calibration's own mean window on hot caches (`c − ŵ`: what the
//!   window does not hold, the wrapper's entry and the release's
//!   bookkeeping, as calibrated). The calibrated estimate stays beside it
//!   (`calibrated_ns`) and is the estimate of recordings made before the
//!   sampling (no flag). Neither sees the misses the collector's cache
//!   footprint causes in the program's own code (docs/metrics.md).
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
    /// How the thread lifetimes were followed (`probes/probes.json`):
    /// `system-wide` (one perf event per CPU for the machine: nothing at
    /// the program's context switches) or `per-task` (events inherited by
    /// the program's threads: every context switch of theirs costs more,
    /// which the estimate leaves out); `null` when they were not recorded.
    pub thread_events: Option<String>,
    /// The service-time sampler's scheduler events, when it used them
    /// (`meta.json` `sampler`); `null` otherwise and in older recordings.
    pub scheduler_events: Option<SchedulerEvents>,
    /// What the launcher's chunk preparer did (`meta.json`
    /// `chunk_preparation`): work taken out of the program's chunk
    /// claims and done by the launcher; `null` when it did not run and in
    /// older recordings.
    pub chunk_preparation: Option<ChunkPreparation>,
}

/// The launcher's chunk preparer (docs/trace-format.md, "Chunks prepared
/// by the launcher"): the zeros the program's chunk claims did not write
/// because their chunks were made ready ahead, outside the program.
#[derive(Debug, Clone, Serialize, Default, PartialEq)]
pub struct ChunkPreparation {
    /// Chunks the launcher prepared, all traces.
    pub chunks_prepared: u64,
    /// The program's chunk claims that took a prepared chunk.
    pub claims_prepared: u64,
    /// The preparer's CPU time, ns: the launcher's, not the program's,
    /// so not in `cost.estimated_ns`.
    pub launcher_cpu_ns: u64,
}

/// What the service-time sampler's scheduler events cost the program: the
/// kernel writes their records in its context switches and wake-ups, which
/// the collector's estimate leaves out.
#[derive(Debug, Clone, Serialize, Default, PartialEq)]
pub struct SchedulerEvents {
    /// How they were opened: `system-wide` (one of each per CPU, the
    /// other processes' records dropped) or `per-task` (inherited by the
    /// program's threads, switched with each of them); `null` in
    /// recordings that did not say.
    pub scope: Option<String>,
    /// The program's records the sampler processed.
    pub records: u64,
    /// Records the kernel dropped (a ring was full).
    pub lost: u64,
    /// Their modelled cost to the program, ns: `records` ×
    /// [`contend_trace::meta::EVENT_RECORD_COST_NS`] (500 ns; 250–970 ns
    /// measured, docs/benchmarks.md), not in `cost.estimated_ns`.
    pub modelled_ns: u64,
    /// When the sampler left them for `schedstat` because they cost the
    /// program more than `schedstat` costs the sampler, s after the start;
    /// `null` when it kept them.
    pub left_at_s: Option<f64>,
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
    /// Of `slow_path_ns`, the part that is in no thread's row of
    /// `by_thread`: what each process's collector did outside its threads'
    /// chunks (its start-up as a whole: creating the trace, loading the
    /// unwinder, memory-map snapshots, the calibration in the recording's
    /// first process)
    /// and the slow path of threads that wrote no chunk, ns. A program that
    /// starts many short processes (a shell script, a launcher shim) adds
    /// most of its cost here.
    pub process_slow_path_ns: u64,
    /// Processes whose collector spent any of `process_slow_path_ns`.
    pub processes_with_slow_path: u64,
    /// Of `slow_path_ns`, the collector's fixed work, which fewer records
    /// would not shorten (`--light` does not lower it): the
    /// `process_slow_path_ns` and the whole slow path of the threads that
    /// wrote one record chunk at most (their chunk claims and exits), ns.
    /// The warning suggests `--light` only while this is at most half of
    /// `estimated_ns` ([`cost_warning`]).
    pub fixed_slow_path_ns: u64,
    /// How `estimated_ns` was made: `sampled` (the collector's in-situ
    /// samples, at least in one process) or `calibrated` (the start-up
    /// calibration only: recordings made before the sampling); `null`
    /// without an estimate.
    pub method: Option<String>,
    /// Operations (records and counted acquisitions) made while their
    /// process had one thread, costed with the single-threaded calibration
    /// (`calibration.record_ns`); the others with the multi-threaded one.
    /// 0 for recordings made before the collector told them apart.
    pub single_threaded_operations: u64,
    /// The calibrated estimate `R · c_r + K · c_c + T_slow`, ns, beside the
    /// sampled one; `null` when it cannot be made.
    pub calibrated_ns: Option<u64>,
    /// `calibrated_ns` as a share of `share_of_ns`.
    pub calibrated_share: Option<f64>,
    /// Sampled windows kept (records and counts), all threads.
    pub samples: u64,
    /// Mean sampled window of a record, ns (all threads); `null` without
    /// record samples.
    pub sampled_record_ns: Option<f64>,
    /// Mean sampled window of a counted acquisition, ns; `null` without
    /// count samples.
    pub sampled_counted_ns: Option<f64>,
}

/// The collector's start-up calibration (averaged over the calibrated
/// processes).
#[derive(Debug, Clone, Serialize, Default, PartialEq)]
pub struct Calibration {
    /// Time one timed record adds, ns (half a recorded uncontended lock +
    /// unlock pair beyond the program's own pair); with
    /// `multi_threaded_record_ns` beside it, on the paths of a process
    /// that has had one thread only (glibc's non-atomic lock and unlock).
    pub record_ns: f64,
    /// Time one counted uncontended pair adds in light mode, ns; `null`
    /// when no process ran in light mode.
    pub counted_pair_ns: Option<f64>,
    /// The same as `record_ns` on the paths of a process with more than
    /// one thread (atomic lock and unlock, the collector's try-lock first),
    /// ns; `null` for recordings made before it was measured (2026-12).
    pub multi_threaded_record_ns: Option<f64>,
    /// The same as `counted_pair_ns` on those paths, ns.
    pub multi_threaded_counted_pair_ns: Option<f64>,
    /// Time the calibration took in each process, ns (the mean).
    pub calibration_ns: u64,
    /// The in-situ sampled window of the calibration's records, ns (hot
    /// caches; the part of `record_ns` the sampling sees); `null` for
    /// recordings without sampling.
    pub record_window_ns: Option<f64>,
    /// The same for the calibration's counted pairs (light mode), ns.
    pub counted_window_ns: Option<f64>,
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
    /// Sampled windows kept on this thread (records and counts).
    pub samples: u64,
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
    ticks_to_ns_f(recording, trace, ticks).round() as u64
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

/// The calibrated costs of one path a process's locks take (the
/// single-threaded one, or the one once it has a second thread), ns.
#[derive(Clone, Copy)]
struct PathCosts {
    /// The calibrated costs, ns (record, counted pair).
    calibrated: (f64, f64),
    /// What the windows do not hold, ns: calibrated cost − the
    /// calibration's own window (0 without the window).
    outside: (f64, f64),
}

impl PathCosts {
    fn new(t: &contend_trace::LockTrace, record_ps: u32, count_ps: u32) -> Self {
        let outside = |cal_ps: u32, window_ps: u32| {
            if window_ps == 0 {
                0.0
            } else {
                (f64::from(cal_ps) - f64::from(window_ps)) / 1000.0
            }
        };
        PathCosts {
            calibrated: (f64::from(record_ps) / 1000.0, f64::from(count_ps) / 1000.0),
            outside: (
                outside(record_ps, t.cost_window_record_ps),
                outside(count_ps, t.cost_window_count_ps),
            ),
        }
    }
}

/// One process's costs per operation, ns: from its threads' in-situ
/// samples where it has them, else from its calibration.
struct ProcessCosts {
    /// The trace has samples at all ([`contend_trace::LockTrace::sampled_cost`]
    /// and at least one window kept).
    sampled: bool,
    /// Process means of the sampled windows, ns (record, count).
    mean: (Option<f64>, Option<f64>),
    /// The single-threaded paths' calibration (`cost_record_ps`,
    /// `cost_count_ps`): operations in chunks flagged single-threaded, and
    /// every operation of a trace without the multi-threaded figures.
    single_threaded: PathCosts,
    /// The multi-threaded paths' (`cost_record_mt_ps`, `cost_count_mt_ps`;
    /// the single-threaded figures where the trace has none).
    multi_threaded: PathCosts,
}

impl ProcessCosts {
    fn new(recording: &Recording, t: &contend_trace::LockTrace) -> Self {
        let (mut rec, mut cnt) = (
            contend_trace::CostSamples::default(),
            contend_trace::CostSamples::default(),
        );
        for th in &t.threads {
            rec.add(th.record_samples);
            cnt.add(th.count_samples);
        }
        let sampled = t.sampled_cost() && rec.count + cnt.count > 0;
        let mean = |s: contend_trace::CostSamples| {
            (sampled && s.count > 0).then(|| ticks_to_ns_f(recording, t, s.ticks) / s.count as f64)
        };
        let single_threaded = PathCosts::new(t, t.cost_record_ps, t.cost_count_ps);
        let multi_threaded = if t.cost_record_mt_ps != 0 {
            PathCosts::new(t, t.cost_record_mt_ps, t.cost_count_mt_ps)
        } else {
            single_threaded
        };
        ProcessCosts {
            sampled,
            mean: (mean(rec), mean(cnt)),
            single_threaded,
            multi_threaded,
        }
    }

    /// The calibrated estimate of a thread's `records` and `counted`
    /// acquisitions, ns: each at its path's calibrated cost.
    fn calibrated_ns(&self, th: &contend_trace::ThreadTrace, records: u64, counted: u64) -> f64 {
        self.paths_ns(th, records, counted, None, None)
    }

    /// Time a thread's `records` and `counted` acquisitions added, ns.
    fn ops_ns(
        &self,
        recording: &Recording,
        t: &contend_trace::LockTrace,
        th: &contend_trace::ThreadTrace,
        records: u64,
        counted: u64,
    ) -> u64 {
        let sampled = |own: contend_trace::CostSamples, process: Option<f64>| {
            if self.sampled && own.count > 0 {
                Some(ticks_to_ns_f(recording, t, own.ticks) / own.count as f64)
            } else {
                process
            }
        };
        let (w_r, w_c) = (
            sampled(th.record_samples, self.mean.0),
            sampled(th.count_samples, self.mean.1),
        );
        self.paths_ns(th, records, counted, w_r, w_c).round() as u64
    }

    /// A thread's `records` and `counted` acquisitions, each at its path's
    /// cost, ns: the mean sampled window (`w_r` per record, `w_c` per
    /// count) plus what the window does not hold, or the calibrated cost
    /// where there is no window.
    fn paths_ns(
        &self,
        th: &contend_trace::ThreadTrace,
        records: u64,
        counted: u64,
        w_r: Option<f64>,
        w_c: Option<f64>,
    ) -> f64 {
        let per = |window: Option<f64>, cal: f64, outside: f64| {
            window.map_or(cal, |w| (w + outside).max(0.0))
        };
        let (st, mt) = (self.single_threaded, self.multi_threaded);
        let (r1, c1) = single_threaded_part(th, records, counted);
        r1 as f64 * per(w_r, st.calibrated.0, st.outside.0)
            + (records - r1) as f64 * per(w_r, mt.calibrated.0, mt.outside.0)
            + c1 as f64 * per(w_c, st.calibrated.1, st.outside.1)
            + (counted - c1) as f64 * per(w_c, mt.calibrated.1, mt.outside.1)
    }
}

/// Of a thread's `records` and `counted` acquisitions, those made while
/// its process had one thread (chunks flagged
/// [`contend_trace::format::CHUNK_SINGLE_THREADED`]; at most the totals).
fn single_threaded_part(th: &contend_trace::ThreadTrace, records: u64, counted: u64) -> (u64, u64) {
    (
        th.single_threaded_records.min(records),
        th.single_threaded_counted.min(counted),
    )
}

/// Ticks of `trace`'s clock as ns of duration, unrounded.
fn ticks_to_ns_f(recording: &Recording, trace: &contend_trace::LockTrace, ticks: u64) -> f64 {
    if trace.clock == contend_trace::format::CLOCK_MONOTONIC {
        return ticks as f64;
    }
    let per_tick = if recording.clock.ns_per_tick > 0.0 && recording.clock.points > 0 {
        recording.clock.ns_per_tick
    } else if trace.ticks_per_second > 0 {
        1e9 / trace.ticks_per_second as f64
    } else {
        recording.clock.ns_per_tick
    };
    ticks as f64 * per_tick
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
    let mut calibrated_estimate: u64 = 0;
    let mut sampled_any = false;
    let (mut rec_samples, mut cnt_samples) = (
        contend_trace::CostSamples::default(),
        contend_trace::CostSamples::default(),
    );
    let (mut rec_samples_ns, mut cnt_samples_ns) = (0u64, 0u64);
    let (mut win_rec_ps, mut win_cnt_ps, mut win_rec_n, mut win_cnt_n) = (0u64, 0u64, 0u64, 0u64);
    let (mut rec_mt_ps, mut rec_mt_n, mut cnt_mt_ps, mut cnt_mt_n) = (0u64, 0u64, 0u64, 0u64);
    let mut calibrated_ops = 0f64;
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
                .map(|th| (th.futex_count + th.omp_count()) as u64)
                .sum::<u64>();
        let counted = t.counted();
        r.cost.records += records;
        r.cost.counted += counted;
        let entries: u64 = t.threads.iter().map(|th| th.counted.len() as u64).sum();
        r.cost.bytes += t.threads.iter().map(|th| th.record_bytes).sum::<u64>()
            + entries * contend_trace::format::count::SIZE as u64;
        let slow = t.collector_ns;
        r.cost.slow_path_ns += slow;
        let in_threads: u64 = t.threads.iter().map(|th| th.collector_ns).sum();
        let outside = slow.saturating_sub(in_threads);
        r.cost.process_slow_path_ns += outside;
        r.cost.fixed_slow_path_ns += outside;
        r.cost.processes_with_slow_path += u64::from(outside > 0);
        let c = t.cost_record_ps != 0;
        if c {
            calibrated += 1;
            rec_ps += u64::from(t.cost_record_ps);
            cal_ns += u64::from(t.calibration_ns);
            if t.light() && t.cost_count_ps != 0 {
                cnt_ps += u64::from(t.cost_count_ps);
                cnt_n += 1;
            }
            calibrated_estimate += slow;
            if t.cost_record_mt_ps != 0 {
                rec_mt_ps += u64::from(t.cost_record_mt_ps);
                rec_mt_n += 1;
                if t.light() && t.cost_count_mt_ps != 0 {
                    cnt_mt_ps += u64::from(t.cost_count_mt_ps);
                    cnt_mt_n += 1;
                }
            }
            if t.cost_window_record_ps != 0 {
                win_rec_ps += u64::from(t.cost_window_record_ps);
                win_rec_n += 1;
            }
            if t.cost_window_count_ps != 0 {
                win_cnt_ps += u64::from(t.cost_window_count_ps);
                win_cnt_n += 1;
            }
        } else if records + counted > 0 {
            uncalibrated_ops = true;
        }
        let costs = c.then(|| ProcessCosts::new(recording, t));
        if let Some(pc) = &costs {
            sampled_any |= pc.sampled;
            estimate += slow;
        }
        for th in &t.threads {
            let records_t = (th.op_count + th.futex_count + th.omp_count()) as u64;
            let slow_t = th.collector_ns;
            if th.record_chunks() <= 1 {
                r.cost.fixed_slow_path_ns += slow_t;
            }
            let counted_t: u64 = th.counted.iter().map(|x| x.count).sum();
            rec_samples.add(th.record_samples);
            cnt_samples.add(th.count_samples);
            rec_samples_ns += ticks_to_ns(recording, t, th.record_samples.ticks);
            cnt_samples_ns += ticks_to_ns(recording, t, th.count_samples.ticks);
            if t.cost_record_mt_ps != 0 {
                let (r1, c1) = single_threaded_part(th, records_t, counted_t);
                r.cost.single_threaded_operations += r1 + c1;
            }
            let est = costs.as_ref().map(|pc| {
                calibrated_ops += pc.calibrated_ns(th, records_t, counted_t);
                let ops = pc.ops_ns(recording, t, th, records_t, counted_t);
                estimate += ops;
                ops + slow_t
            });
            r.by_thread.push(ThreadCost {
                pid: t.pid,
                tid: th.tid,
                records: records_t,
                counted: counted_t,
                bytes: th.record_bytes,
                estimated_ns: est,
                samples: th.record_samples.count + th.count_samples.count,
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
    calibrated_estimate += calibrated_ops.round() as u64;
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
            record_window_ns: (win_rec_n > 0)
                .then(|| win_rec_ps as f64 / 1000.0 / win_rec_n as f64),
            counted_window_ns: (win_cnt_n > 0)
                .then(|| win_cnt_ps as f64 / 1000.0 / win_cnt_n as f64),
            multi_threaded_record_ns: (rec_mt_n > 0)
                .then(|| rec_mt_ps as f64 / 1000.0 / rec_mt_n as f64),
            multi_threaded_counted_pair_ns: (cnt_mt_n > 0)
                .then(|| cnt_mt_ps as f64 / 1000.0 / cnt_mt_n as f64),
            processes_calibrated: calibrated,
            processes: procs.len() as u32,
        });
    }
    let has_mpi = matches!(&recording.mpi, Some(Ok(m)) if !m.ranks.is_empty());
    r.cost.samples = rec_samples.count + cnt_samples.count;
    r.cost.sampled_record_ns =
        (rec_samples.count > 0).then(|| rec_samples_ns as f64 / rec_samples.count as f64);
    r.cost.sampled_counted_ns =
        (cnt_samples.count > 0).then(|| cnt_samples_ns as f64 / cnt_samples.count as f64);
    if calibrated > 0 && !uncalibrated_ops {
        r.cost.estimated_ns = Some(estimate);
        r.cost.estimated_share =
            (r.cost.share_of_ns > 0).then(|| estimate as f64 / r.cost.share_of_ns as f64);
        r.cost.calibrated_ns = Some(calibrated_estimate);
        r.cost.calibrated_share = (r.cost.share_of_ns > 0)
            .then(|| calibrated_estimate as f64 / r.cost.share_of_ns as f64);
        r.cost.method = Some(if sampled_any { "sampled" } else { "calibrated" }.to_string());
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
        r.warning = Some(cost_warning(
            &r.mode,
            share,
            &r.cost.share_of,
            r.cost.estimated_ns.unwrap_or(0),
            r.cost.fixed_slow_path_ns,
        ));
    }
    r.thread_events = match &recording.probes {
        Some(Ok(p)) if p.manifest.thread_events && !p.manifest.thread_events_scope.is_empty() => {
            Some(p.manifest.thread_events_scope.clone())
        }
        _ => None,
    };
    r.scheduler_events = recording.meta.as_ref().and_then(|meta| {
        let s = meta.sampler.as_ref()?;
        (s.source == "sched-events").then(|| SchedulerEvents {
            scope: s.event_scope.clone(),
            records: s.event_records,
            lost: s.event_records_lost,
            modelled_ns: s
                .event_records
                .saturating_mul(contend_trace::meta::EVENT_RECORD_COST_NS),
            left_at_s: s
                .switched_at_ns
                .map(|at| at.saturating_sub(meta.start_monotonic_ns) as f64 / 1e9),
        })
    });
    r.chunk_preparation = recording.meta.as_ref().and_then(|meta| {
        let p = meta.chunk_preparation.as_ref()?;
        Some(ChunkPreparation {
            chunks_prepared: p.chunks_prepared,
            claims_prepared: p.claims_prepared,
            launcher_cpu_ns: p.cpu_ns,
        })
    });
    r.by_thread.sort_by(|a, b| {
        b.estimated_ns
            .cmp(&a.estimated_ns)
            .then(b.records.cmp(&a.records))
            .then(a.tid.cmp(&b.tid))
    });
    r
}

/// The warning of a recording whose estimated cost is `share` (a fraction,
/// above [`WARN_SHARE`]) of `share_of` (`"cpu_time"`: the program's CPU
/// time, else the traced threads' time), in recording mode `mode`.
/// `--light` is suggested only where it helps: it drops the records of
/// uncontended acquisitions (and the chunks they fill), not the
/// collector's fixed work (its start-up in each process, the first trace
/// chunk a thread claims: `fixed_slow_ns` of the `estimated_ns`, both
/// ns; the slow path of threads that wrote one record chunk at most
/// counts whole). When that fixed work is most of the
/// estimate (a short run, many short threads; light mode even claims two
/// chunks per thread) the warning says so instead: 64 threads of 300
/// lock pairs each cost an estimated 31 % by default and 35 % with
/// `--light` (docs/metrics.md, "Recording cost").
pub fn cost_warning(
    mode: &str,
    share: f64,
    share_of: &str,
    estimated_ns: u64,
    fixed_slow_ns: u64,
) -> String {
    let basis = share_basis(share_of);
    let head = format!(
        "recording cost is estimated at {:.1} % {basis}: results may be distorted",
        share * 100.0
    );
    if fixed_slow_ns.saturating_mul(2) > estimated_ns {
        format!(
            "{head}; most of it ({} of {}) is the collector's fixed work (its start-up in each process, a trace chunk per thread), which `--light` does not lower: a short run, or many short-lived threads",
            crate::report::figure::short_duration(fixed_slow_ns),
            crate::report::figure::short_duration(estimated_ns)
        )
    } else if mode == "light" {
        head
    } else {
        format!("{head}; try `contend record --light`")
    }
}

/// What an estimated share is of, in words, for `share_of`
/// ([`RecordingCost::share_of`]: `"cpu_time"` or `"thread_time"`).
pub(crate) fn share_basis(share_of: &str) -> &'static str {
    if share_of == "cpu_time" {
        "of the program's CPU time"
    } else {
        "of the traced threads' time"
    }
}

#[cfg(test)]
mod tests {
    use super::cost_warning;

    /// `--light` is suggested when the records are most of the cost, not
    /// when the collector's fixed work is (it would not lower that).
    #[test]
    fn the_warning_suggests_light_only_where_records_cost_most() {
        let records = cost_warning("default", 0.12, "cpu_time", 10_000_000, 2_000_000);
        assert_eq!(
            records,
            "recording cost is estimated at 12.0 % of the program's CPU time: results may be \
             distorted; try `contend record --light`"
        );
        let fixed = cost_warning("default", 0.31, "cpu_time", 10_000_000, 6_000_000);
        assert!(!fixed.contains("try `contend record --light`"), "{fixed}");
        assert!(
            fixed.contains("most of it (6 ms of 10 ms) is the collector's fixed work"),
            "{fixed}"
        );
        let light = cost_warning("light", 0.08, "thread_time", 10_000_000, 1_000_000);
        assert_eq!(
            light,
            "recording cost is estimated at 8.0 % of the traced threads' time: results may be \
             distorted"
        );
        let light_fixed = cost_warning("light", 0.35, "cpu_time", 3_000_000, 2_500_000);
        assert!(
            light_fixed.contains("which `--light` does not lower"),
            "{light_fixed}"
        );
    }
}
