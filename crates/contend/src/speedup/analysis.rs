//! Analysis of a scale directory (`contend scale`, manifest in
//! [`contend_trace::scale`]) with the speed-up loss model (Venter 2016, Sections
//! 3.1.1 and 3.2.2.1; Tables 4.1–4.8 and 4.11).
//!
//! For every thread count m of the manifest: the runs on n = 1 core give
//! C(1), T(1) and the service time without memory contention; the runs on
//! n = m cores (the largest n run for m, should the machine have fewer
//! than m CPUs) give C(m), T(m), the average number of active threads A
//! and, with lock traces, the time spent waiting for locks. Repeats are
//! averaged (arithmetic mean) and their spread is reported as relative
//! standard deviation. Runs that failed (non-zero exit, signal, missing or
//! unreadable recording) are named in the warnings and left out.
//!
//! The work measure C is cycles when every usable run counted cycles,
//! else CPU time for all runs (never a mix): [`SpeedupReport::work_measure`]
//! says which, and why.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::analysis::{analyze_using, AnalysisOptions, NoProgress, Progress};
use crate::locks::{EventSet, LockAnalyzer, LockEvents, LockReport, Outcome as EventOutcome};
use crate::recording::Recording;
use crate::report::model::RunInfo;
use crate::service::ServiceReport;
use crate::symbols::Symbols;
use contend_trace::counters::RunCounters;
use contend_trace::scale::{ScaleError, ScaleManifest, ScaleRun};
use contend_trace::Primitive;

use super::{
    change_pct, cycles_per_miss, ideal_running_time, loss_dependencies, loss_memory, mean,
    misses_per_second, numa_delta, numa_work, omega, rsd_pct, speedup_measured, speedup_model,
    time_lost, useful_threads, MemoryQueue,
};

/// Errors of [`analyze_scale_dir`]; every message names the directory or
/// file.
#[derive(Debug, thiserror::Error)]
pub enum SpeedupError {
    /// `scale.json` is missing, unreadable or not a manifest.
    #[error(transparent)]
    Manifest(#[from] ScaleError),
    /// No thread count has a usable run on 1 core and on m cores.
    #[error("{}: no usable pair of runs (1 core and m cores for the same m threads) to model: {reasons}", dir.display())]
    NoUsablePair {
        /// The scale directory.
        dir: PathBuf,
        /// Why, the warnings joined with `; `.
        reasons: String,
    },
}

/// The speed-up model of a scale directory: JSON key `speedup` of the
/// report (docs/json.md, "Speed-up model"; docs/model.md).
#[derive(Debug, Clone, Serialize, Default, PartialEq)]
pub struct SpeedupReport {
    /// The scale directory.
    pub scale_dir: String,
    /// The command template of the experiment (`{threads}` unsubstituted).
    pub command: Vec<String>,
    /// The work measure C: `"cycles"` when every usable run counted
    /// cycles, else `"cpu time"` (CPU seconds of the target).
    pub work_measure: String,
    /// The unit of every `work_*` value: `"cycles"` or `"s"`.
    pub work_unit: String,
    /// Why CPU time was used (e.g. `"fallback: no hardware PMU"`) and
    /// where it came from; empty with cycles.
    pub work_measure_note: String,
    /// With CPU time as the work measure, what that means for ω and R
    /// (busy waiting counts as work), one paragraph; absent with cycles.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub work_measure_caveat: Option<String>,
    /// Why cache misses are not reported (CCM, miss rate, r of Eq. 3.6,
    /// Tables 4.1 and 4.3); absent when they were counted in every run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_misses_missing: Option<String>,
    /// The manifest says every planned run was made.
    pub complete: bool,
    /// Repeats per configuration asked for.
    pub repeat: u32,
    /// Sockets of the machine.
    pub sockets: u32,
    /// Cores per socket c (NUMA model, Eq. 3.7).
    pub cores_per_socket: u32,
    /// Threads of the memory contention generator (`--stress K`), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stress_threads: Option<u32>,
    /// One row per thread count m that has a usable pair of runs, in the
    /// manifest's order.
    pub by_threads: Vec<SpeedupRow>,
    /// Runs left out and other problems, one sentence each naming the run.
    pub warnings: Vec<String>,
}

/// The model for one thread count m (Venter 2016, Tables 4.2, 4.5, 4.8).
/// Work values are in [`SpeedupReport::work_unit`]; times in seconds;
/// thread counts and speed-ups in threads. Values that need counters the
/// machine lacks are absent (no key), never 0.
#[derive(Debug, Clone, Serialize, Default, PartialEq)]
pub struct SpeedupRow {
    /// Threads m.
    pub m: u32,
    /// Cores n of the "m-core" runs: m, or fewer when the machine has
    /// fewer CPUs (then D includes the threads that could not run).
    pub n: u32,
    /// Usable runs on 1 core (repeats averaged).
    pub runs_1: u32,
    /// Usable runs on n cores.
    pub runs_m: u32,
    /// C(1): mean work on 1 core, the useful work U.
    pub work_1: f64,
    /// C(m): mean work on n cores.
    pub work_m: f64,
    /// Relative standard deviation of C(1) across repeats, % (Table 4.4);
    /// absent with one repeat.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub work_1_rsd_pct: Option<f64>,
    /// Relative standard deviation of C(m), % (Table 4.4).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub work_m_rsd_pct: Option<f64>,
    /// T(1): mean wall time on 1 core, s.
    pub wall_1_s: f64,
    /// T(m): mean wall time on n cores, s.
    pub wall_m_s: f64,
    /// Relative standard deviation of T(1), %.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wall_1_rsd_pct: Option<f64>,
    /// Relative standard deviation of T(m), %.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wall_m_rsd_pct: Option<f64>,
    /// A(m, n) measured on the n-core runs (Listing 3.3), threads.
    pub active_threads_measured: f64,
    /// A(m, n) modelled for n CPUs from the n-core runs' samples
    /// (Listing 3.4), threads.
    pub active_threads_modelled: f64,
    /// A(m, 1) measured on the 1-core runs (Listing 3.3): the threads
    /// ready to run without memory contention (Section 3.1.2, Figure 3.1);
    /// absent when those runs have no samples.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub active_threads_1core: Option<f64>,
    /// ω = C(m)/C(1) − 1 (Eq. 3.5).
    pub omega: f64,
    /// P = A/(1 + ω), threads doing useful work (Eq. 3.2).
    pub useful_threads: f64,
    /// R = A − P, speed-up lost to memory contention (Eq. 3.3).
    pub loss_memory: f64,
    /// D = m − A, speed-up lost to other dependencies (Eq. 3.8).
    pub loss_dependencies: f64,
    /// S = A/(1 + ω), modelled speed-up (Eq. 3.4).
    pub speedup_model: f64,
    /// T(1)/T(m), measured speed-up.
    pub speedup_measured: f64,
    /// R·T(m): core-seconds lost to memory contention (Table 4.5).
    pub time_lost_memory_s: f64,
    /// D·T(m): core-seconds lost to other dependencies (Table 4.5).
    pub time_lost_dependencies_s: f64,
    /// R·T(m)/m: wall seconds lost to memory contention.
    pub wall_lost_memory_s: f64,
    /// D·T(m)/m: wall seconds lost to other dependencies.
    pub wall_lost_dependencies_s: f64,
    /// T(m) − T(1)/m − the two wall losses = T(m)·(S − T(1)/T(m))/m: what
    /// the model does not explain of the wall time above ideal, s.
    pub wall_lost_unexplained_s: f64,
    /// Total service time on 1 core, s (Table 4.8, column 3).
    pub service_time_1_s: f64,
    /// Total service time on n cores, s (Table 4.8, column 4).
    pub service_time_m_s: f64,
    /// Change of the service time from 1 to n cores, % (Table 4.8, column 5).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub service_time_change_pct: Option<f64>,
    /// Ideal running time on m cores: service time on 1 core / m, s
    /// (Table 4.8, column 6).
    pub ideal_running_time_s: f64,
    /// Actual running time on n cores, T(m), s (Table 4.8, column 7).
    pub actual_running_time_s: f64,
    /// Actual over ideal running time, % (Table 4.8, column 8).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub running_time_change_pct: Option<f64>,
    /// Mean last-level cache misses on 1 core (Table 4.3).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_misses_1: Option<f64>,
    /// Mean last-level cache misses on n cores (Table 4.3).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_misses_m: Option<f64>,
    /// Change of the cache misses from 1 to n cores, % (Table 4.3).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_misses_change_pct: Option<f64>,
    /// Relative standard deviation of the cache misses on n cores, %
    /// (Table 4.4).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_misses_rsd_pct: Option<f64>,
    /// Work cycles per cache miss on n cores, CCM (Table 4.1); only with
    /// cycles as the work measure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cycles_per_miss: Option<f64>,
    /// Cache misses per second of wall time on n cores (Table 4.1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub misses_per_second: Option<f64>,
    /// The time lost to other dependencies split into lock waits and the
    /// rest (Table 4.11); absent when the n-core runs have no lock traces.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dependencies: Option<DependencySplit>,
    /// μ, L and the modelled C(n) from the line of best fit through
    /// (n, 1/C(n)) (Eq. 3.6, Listing 3.1); absent with fewer than two
    /// core counts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_model: Option<MemoryModel>,
    /// δ and the modelled C(n) beyond one socket (Eq. 3.7); only on
    /// machines with more than one socket, m > c and runs on c cores.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub numa: Option<NumaModel>,
    /// Runs with and without the memory contention generator, one entry
    /// per core count with stressed runs (Tables 4.6 and 4.7).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub stress: Vec<StressComparison>,
}

/// Table 4.11 of Venter 2016: where the time lost to other dependencies
/// went, core-seconds (means over the n-core runs with lock traces).
#[derive(Debug, Clone, Serialize, Default, PartialEq)]
pub struct DependencySplit {
    /// Runs whose lock traces were used.
    pub runs: u32,
    /// The time lost to other dependencies, D·T(m) (= the row's
    /// `time_lost_dependencies_s`).
    pub total_s: f64,
    /// Time threads waited for blocking locks (mutex, rwlock), summed
    /// over threads.
    pub lock_wait_s: f64,
    /// Time threads waited at condition variables, barriers and
    /// semaphores, summed over threads.
    pub other_sync_wait_s: f64,
    /// `total_s − lock_wait_s − other_sync_wait_s`, never below 0: not
    /// accounted for by a traced wait of a worker (I/O, sleeps, load
    /// imbalance, waits in untraced code).
    pub unaccounted_s: f64,
    /// Time the workers waited for spinlocks: busy waiting, counted as
    /// activity in A and so not part of D; shown for reference (and taken
    /// out of the work C when C is CPU time).
    pub spin_wait_s: f64,
    /// Waits of the threads beyond the m workers (a reader or writer
    /// thread, a main thread waiting for the workers), core-seconds: not
    /// speed-up lost by the workers, so not in the split above.
    pub other_threads_wait_s: f64,
    /// How much the workers' traced waits exceed D·T(m), core-seconds
    /// (waits that overlap an interval where no thread ran, which
    /// Listing 3.3 does not count as lost); 0 otherwise.
    pub waits_beyond_loss_s: f64,
}

/// The single-socket memory model (Eq. 3.6) fitted for one m.
#[derive(Debug, Clone, Serialize, Default, PartialEq)]
pub struct MemoryModel {
    /// Points (runs) fitted: (n, 1/C(n)) of every usable run on n ≤ c
    /// cores (all n on a single socket).
    pub points: u32,
    /// Slope of the line through (n, 1/C(n)) = −L/r, 1/(work unit) per core.
    pub slope: f64,
    /// Intercept = μ/r, 1/(work unit).
    pub intercept: f64,
    /// μ: memory requests served per work unit (per cycle, or per CPU
    /// second); needs the cache misses r.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mu: Option<f64>,
    /// L: memory requests per work unit from one core; needs r.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub l: Option<f64>,
    /// λ = n·L for the n-core runs; needs r.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lambda: Option<f64>,
    /// C(n) and ω(m, n) modelled for a few n (powers of two, c and m, up
    /// to 2m).
    pub modelled: Vec<ModelledWork>,
}

/// A modelled work value.
#[derive(Debug, Clone, Serialize, Default, PartialEq)]
pub struct ModelledWork {
    /// Cores n.
    pub n: u32,
    /// Modelled C(n) in the work unit; absent when the model's queue is
    /// saturated at this n (μ ≤ n·L).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub work: Option<f64>,
    /// ω(m, n) = C(n)/C(1) − 1 from the modelled values (Eq. 3.5).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub omega: Option<f64>,
    /// n is more than the machine's CPUs: the value is extrapolated by the
    /// model, not backed by a run (absent when false).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub extrapolated: bool,
}

/// The NUMA extension (Eq. 3.7, as decided in [`super::numa_delta`]).
#[derive(Debug, Clone, Serialize, Default, PartialEq)]
pub struct NumaModel {
    /// Cores per socket c.
    pub c: u32,
    /// Usable runs on c cores.
    pub runs_c: u32,
    /// C(c), mean work on c cores.
    pub work_c: f64,
    /// δ = (C(m) − C(c))/(m − c): extra work per core beyond the socket.
    pub delta: f64,
    /// δ/r: extra work per cache miss per remote core; needs r.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delta_per_miss: Option<f64>,
    /// C_NUMA(n) for n between c and 2m.
    pub modelled: Vec<ModelledWork>,
}

/// Runs with and without induced memory contention on the same cores
/// (Venter 2016, Tables 4.6 and 4.7).
#[derive(Debug, Clone, Serialize, Default, PartialEq)]
pub struct StressComparison {
    /// Cores n of the runs compared.
    pub n: u32,
    /// Usable stressed runs.
    pub runs: u32,
    /// Mean work without the generator.
    pub work_without: f64,
    /// Mean work with the generator.
    pub work_with: f64,
    /// Change, % (Table 4.6).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub work_change_pct: Option<f64>,
    /// Mean service time without, s.
    pub service_time_without_s: f64,
    /// Mean service time with, s.
    pub service_time_with_s: f64,
    /// Change, % (Table 4.7).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub service_time_change_pct: Option<f64>,
    /// Mean wall time without, s.
    pub wall_without_s: f64,
    /// Mean wall time with, s.
    pub wall_with_s: f64,
    /// ω of the stressed runs against the unstressed 1-core work,
    /// C_stress(n)/C(1) − 1 (Eq. 3.5).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub omega_with: Option<f64>,
    /// Mean bandwidth the generator reached, bytes/s (from the manifest).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bandwidth_bytes_per_s: Option<f64>,
}

/// What one usable run contributes.
#[derive(Debug, Clone)]
struct RunData {
    run: ScaleRun,
    cycles: Option<f64>,
    cpu_s: Option<f64>,
    cpu_from_samples: bool,
    misses: Option<f64>,
    wall_s: f64,
    service: Option<ServiceReport>,
    /// The run's traced waits, when it has lock traces.
    waits: Option<Waits>,
}

/// The traced waits of one run, s (Venter 2016, Table 4.11).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Waits {
    /// Blocking lock waits (mutex, rwlock) of the workers.
    blocking: f64,
    /// Spinlock waits of the workers.
    spin: f64,
    /// Condition, barrier and semaphore waits of the workers.
    other: f64,
    /// Every wait of the threads beyond the workers.
    beyond_workers: f64,
    /// Spinlock waits of all threads: CPU time burnt waiting.
    spin_all: f64,
}

impl RunData {
    /// The work C of the run: cycles, or CPU time less the spinlock waits
    /// the lock collector measured (time on a CPU that is not work; the
    /// spinning it cannot see stays in).
    fn work(&self, cycles: bool) -> Option<f64> {
        if cycles {
            self.cycles
        } else {
            let spin = self.waits.map_or(0.0, |w| w.spin_all);
            self.cpu_s.map(|c| (c - spin).max(0.0))
        }
    }

    fn service_s(&self) -> Option<f64> {
        self.service.as_ref().map(|s| s.cpu_s).or(self.cpu_s)
    }
}

fn describe(run: &ScaleRun) -> String {
    format!(
        "run m={} n={} repeat {}{} ({})",
        run.m,
        run.n,
        run.repeat,
        if run.stress { " with stress" } else { "" },
        run.dir
    )
}

/// Reads one run; `Err` is the warning saying why it is left out.
fn load_run(dir: &Path, run: &ScaleRun, with_locks: bool) -> Result<RunData, String> {
    let what = describe(run);
    if let Some(sig) = run.signal {
        return Err(format!("{what}: killed by signal {sig}; left out"));
    }
    match run.exit_code {
        Some(0) => {}
        Some(c) => return Err(format!("{what}: exited with status {c}; left out")),
        None => {
            return Err(format!(
                "{what}: exit status unknown (the run did not finish); left out"
            ))
        }
    }
    if run.dir.is_empty() {
        return Err(format!(
            "{what}: the manifest names no recording directory; left out"
        ));
    }
    let rdir = dir.join(&run.dir);
    let rec = Recording::open(&rdir).map_err(|e| format!("{what}: {e}; left out"))?;
    let meta = rec.meta.clone();
    let service = match &rec.service {
        Some(Ok(file)) => {
            crate::service::section_of(&rdir.join(contend_trace::service::FILE_NAME), file).0
        }
        None => None,
        Some(Err(e)) => return Err(format!("{what}: {e}; left out")),
    };
    let counters: Option<&RunCounters> = meta.as_ref().and_then(|m| m.counters.as_ref());
    let cycles = counters
        .and_then(|c| c.available.get("cycles"))
        .map(|v| v.value as f64);
    let misses = counters
        .and_then(|c| c.available.get("llc_misses"))
        .map(|v| v.value as f64);
    let counted_cpu = counters.and_then(RunCounters::cpu_s);
    let cpu_from_samples = counted_cpu.is_none() && service.is_some();
    let cpu_s = counted_cpu.or(service.as_ref().map(|s| s.cpu_s));
    let wall_s = if run.wall_s > 0.0 {
        run.wall_s
    } else if let Some(ns) = meta.as_ref().and_then(|m| m.wall_ns) {
        ns as f64 / 1e9
    } else {
        service.as_ref().map_or(0.0, |s| s.wall_s)
    };
    if wall_s <= 0.0 {
        return Err(format!("{what}: no wall time recorded; left out"));
    }
    let waits = if with_locks && !rec.processes.is_empty() {
        // The model needs wait totals, not call sites: no symbols.
        let a = analyze_using(
            &rec,
            &AnalysisOptions::default(),
            Symbols::unresolved(),
            &[&LockAnalyzer],
            &NoProgress,
        );
        // The workers: the m threads that received the most service time
        // (the others, a reader, a writer or a main thread waiting for the
        // workers, lose no speed-up by waiting).
        let workers: Option<std::collections::HashSet<(u32, u32)>> = service.as_ref().map(|s| {
            s.threads
                .iter()
                .take(run.m as usize)
                .map(|t| (t.pid, t.tid))
                .collect()
        });
        a.events::<LockEvents>()
            .map(|ev| run_waits(&ev.set, workers.as_ref()))
    } else {
        None
    };
    Ok(RunData {
        run: run.clone(),
        cycles,
        cpu_s,
        cpu_from_samples,
        misses,
        wall_s,
        service,
        waits,
    })
}

/// The waits of `set` split by kind, for the threads in `workers` (all
/// threads when `None`) and the rest, s.
fn run_waits(set: &EventSet, workers: Option<&std::collections::HashSet<(u32, u32)>>) -> Waits {
    let mut w = Waits::default();
    for e in &set.events {
        // a thread's end is no wait; a join is the main thread idle until
        // the workers end, which the model counts as their time, not as a
        // synchronisation wait of the run
        if e.outcome() == EventOutcome::Post || e.primitive() == Primitive::Join {
            continue;
        }
        let wait = e.wait_ns() as f64 / 1e9;
        let t = &set.threads[e.thread() as usize];
        let is_worker = workers.is_none_or(|ws| ws.contains(&(t.pid, t.tid)));
        let spin = e.primitive() == Primitive::Spin;
        if spin {
            w.spin_all += wait;
        }
        if !is_worker {
            w.beyond_workers += wait;
        } else if spin {
            w.spin += wait;
        } else if e.is_lock() {
            w.blocking += wait;
        } else {
            w.other += wait;
        }
    }
    w
}

fn mean_of(runs: &[&RunData], f: impl Fn(&RunData) -> Option<f64>) -> Option<f64> {
    let v: Vec<f64> = runs.iter().filter_map(|r| f(r)).collect();
    (v.len() == runs.len()).then(|| mean(&v)).flatten()
}

fn values(runs: &[&RunData], f: impl Fn(&RunData) -> Option<f64>) -> Vec<f64> {
    runs.iter().filter_map(|r| f(r)).collect()
}

/// The n values at which the model is evaluated: powers of two, c and m,
/// up to 2m.
fn model_points(m: u32, c: u32) -> Vec<u32> {
    let top = (2 * m).max(2);
    let mut v: Vec<u32> = std::iter::successors(Some(1u32), |&x| x.checked_mul(2))
        .take_while(|&x| x <= top)
        .collect();
    v.push(m);
    if c > 0 && c <= top {
        v.push(c);
    }
    v.sort_unstable();
    v.dedup();
    v
}

/// Analyses the scale directory `dir`: reads `scale.json` and every run's
/// recording, and models each thread count m (see the module docs).
/// `progress` hears one stage, `reading runs`, with one unit per run.
///
/// Errors: [`SpeedupError::Manifest`] when `scale.json` cannot be read;
/// [`SpeedupError::NoUsablePair`] when no m has a usable run on 1 core and
/// on m cores. Failed runs are warnings, not errors.
pub fn analyze_scale_dir(
    dir: &Path,
    progress: &dyn Progress,
) -> Result<SpeedupReport, SpeedupError> {
    let manifest = ScaleManifest::read(dir)?;
    let mut warnings = Vec::new();
    let manifest_path = dir.join(contend_trace::scale::SCALE_FILE);
    if let Some(why) = &manifest.stopped {
        warnings.push(format!(
            "{}: the experiment stopped early: {why}",
            manifest_path.display()
        ));
    }
    for w in &manifest.warnings {
        warnings.push(format!("{}: {w}", manifest_path.display()));
    }
    for run in &manifest.runs {
        for w in &run.warnings {
            warnings.push(format!("{}: {w}", describe(run)));
        }
    }
    if !manifest.complete && manifest.stopped.is_none() {
        warnings.push(format!(
            "{}: the experiment did not finish (complete: false); modelling the runs it made",
            dir.join(contend_trace::scale::SCALE_FILE).display()
        ));
    }
    // The "m-core" runs of each m: n = m, or the largest n > 1 run for m
    // (a machine with fewer CPUs than m); m itself when there is none, so
    // that the 1-core runs are never paired with themselves.
    let cores_for = |m: u32| -> u32 {
        if manifest
            .runs
            .iter()
            .any(|r| r.m == m && r.n == m && !r.stress)
        {
            m
        } else {
            manifest
                .runs
                .iter()
                .filter(|r| r.m == m && r.n > 1 && !r.stress)
                .map(|r| r.n)
                .max()
                .unwrap_or(m)
        }
    };
    progress.stage("reading runs", manifest.runs.len() as u64);
    let mut data: Vec<RunData> = Vec::new();
    for run in &manifest.runs {
        let with_locks = !run.stress && run.n == cores_for(run.m) && run.n > 1;
        match load_run(dir, run, with_locks) {
            Ok(d) => data.push(d),
            Err(w) => warnings.push(w),
        }
        progress.advance(1);
    }

    // One work measure for all runs.
    let use_cycles = !data.is_empty() && data.iter().all(|d| d.cycles.is_some());
    let work_measure_note = if use_cycles {
        String::new()
    } else {
        let first_without = data.iter().find(|d| d.cycles.is_none());
        let why = first_without
            .and_then(|d| {
                let rdir = dir.join(&d.run.dir);
                contend_trace::meta::RunMeta::read(&rdir)
                    .ok()
                    .and_then(|m| m.counters)
                    .map(|c| crate::counters::to_report(&c).work_measure_note)
            })
            .unwrap_or_else(|| "fallback: the recordings hold no counters".to_string());
        let mut note = why;
        if data.iter().any(|d| d.cycles.is_some()) {
            note.push_str(
                " (some runs counted cycles, but not all, so CPU time is used for every run)",
            );
        }
        if data.iter().any(|d| d.cpu_from_samples) {
            note.push_str("; CPU time of runs without counters is their sampled service time");
        }
        note
    };
    let cache_misses_missing = if !data.is_empty() && data.iter().all(|d| d.misses.is_some()) {
        None
    } else {
        let why = data
            .iter()
            .find(|d| d.misses.is_none())
            .and_then(|d| {
                contend_trace::meta::RunMeta::read(&dir.join(&d.run.dir))
                    .ok()
                    .and_then(|m| m.counters)
                    .and_then(|c| c.missing.into_iter().find(|m| m.name == "llc_misses"))
                    .map(|m| format!("llc_misses: {}", m.reason))
            })
            .unwrap_or_else(|| "llc_misses were not counted in every run".to_string());
        Some(why)
    };
    let work = |d: &RunData| d.work(use_cycles);

    let mut rows = Vec::new();
    let mut thread_counts = manifest.threads.clone();
    for r in &manifest.runs {
        if !thread_counts.contains(&r.m) {
            thread_counts.push(r.m);
        }
    }
    let c = manifest.cores_per_socket;
    let machine_cpus = manifest.sockets.max(1) * c.max(1);
    for &m in &thread_counts {
        let n = cores_for(m);
        let select = |cores: u32, stress: bool| -> Vec<&RunData> {
            data.iter()
                .filter(|d| d.run.m == m && d.run.n == cores && d.run.stress == stress)
                .filter(|d| work(d).is_some())
                .collect()
        };
        let ones = select(1, false);
        let mut ms = select(n, false);
        let before = ms.len();
        ms.retain(|d| d.service.is_some());
        if ms.len() < before {
            warnings.push(format!(
                "m = {m}: {} run(s) on {n} cores have no service-time samples (no A); left out",
                before - ms.len()
            ));
        }
        if ones.is_empty() || ms.is_empty() {
            warnings.push(format!(
                "m = {m}: no usable run on {}; m = {m} is not modelled",
                if ones.is_empty() {
                    "1 core".to_string()
                } else {
                    format!("{n} cores with service-time samples")
                }
            ));
            continue;
        }
        let (Some(work_1), Some(work_m)) = (mean_of(&ones, work), mean_of(&ms, work)) else {
            continue;
        };
        let Some(w) = omega(work_1, work_m) else {
            warnings.push(format!(
                "m = {m}: the work on 1 core is {work_1}, not positive; m = {m} is not modelled"
            ));
            continue;
        };
        let svc = |d: &RunData| d.service.as_ref().map(|s| s.active_threads);
        let a = mean_of(&ms, svc).unwrap_or(0.0);
        let a_mod = mean_of(&ms, |d| {
            d.service.as_ref().map(|s| s.active_threads_modelled)
        })
        .unwrap_or(0.0);
        let ones_with_samples: Vec<&RunData> = ones
            .iter()
            .copied()
            .filter(|d| d.service.is_some())
            .collect();
        let a_1 = mean_of(&ones_with_samples, svc).filter(|_| !ones_with_samples.is_empty());
        let (Some(p), Some(r_mem), Some(s_mod)) =
            (useful_threads(a, w), loss_memory(a, w), speedup_model(a, w))
        else {
            warnings.push(format!("m = {m}: ω = {w} ≤ −1; m = {m} is not modelled"));
            continue;
        };
        let d_dep = loss_dependencies(f64::from(m), a);
        let wall_1 = mean_of(&ones, |d| Some(d.wall_s)).unwrap_or(0.0);
        let wall_m = mean_of(&ms, |d| Some(d.wall_s)).unwrap_or(0.0);
        let s_meas = speedup_measured(wall_1, wall_m).unwrap_or(0.0);
        let lost = time_lost(r_mem, d_dep, m, wall_m);
        let svc_1 = mean_of(&ones, RunData::service_s).unwrap_or(0.0);
        let svc_m = mean_of(&ms, RunData::service_s).unwrap_or(0.0);
        let (ideal, running_pct) = ideal_running_time(svc_1, m, wall_m);
        let wall_lost_unexplained_s =
            wall_m - wall_1 / f64::from(m.max(1)) - lost.wall_memory_s - lost.wall_dependencies_s;

        // Counters (Tables 4.1, 4.3, 4.4).
        let misses_1 = cache_misses_missing
            .is_none()
            .then(|| mean_of(&ones, |d| d.misses))
            .flatten();
        let misses_m = cache_misses_missing
            .is_none()
            .then(|| mean_of(&ms, |d| d.misses))
            .flatten();

        // Lock waits (Table 4.11).
        let with_waits: Vec<&RunData> = ms.iter().copied().filter(|d| d.waits.is_some()).collect();
        let dependencies = (!with_waits.is_empty()).then(|| {
            let k = with_waits.len() as f64;
            let sum = |f: fn(&Waits) -> f64| {
                with_waits
                    .iter()
                    .map(|d| f(d.waits.as_ref().expect("filtered")))
                    .sum::<f64>()
                    / k
            };
            let (lock, spin, other) = (sum(|w| w.blocking), sum(|w| w.spin), sum(|w| w.other));
            DependencySplit {
                runs: with_waits.len() as u32,
                total_s: lost.dependencies_s,
                lock_wait_s: lock,
                other_sync_wait_s: other,
                unaccounted_s: (lost.dependencies_s - lock - other).max(0.0),
                spin_wait_s: spin,
                other_threads_wait_s: sum(|w| w.beyond_workers),
                waits_beyond_loss_s: (lock + other - lost.dependencies_s).max(0.0),
            }
        });

        // Memory model (Eq. 3.6) and NUMA (Eq. 3.7).
        let numa_applies = manifest.sockets > 1 && c > 1 && m > c;
        let cs = if numa_applies {
            select(c, false)
        } else {
            Vec::new()
        };
        let fit_points: Vec<(f64, f64)> = data
            .iter()
            .filter(|d| d.run.m == m && !d.run.stress)
            .filter(|d| !numa_applies || d.run.n <= c)
            .filter_map(|d| work(d).map(|w| (f64::from(d.run.n), w)))
            .collect();
        let misses_r = misses_m.or(misses_1);
        let memory_model = MemoryQueue::fit(&fit_points).map(|q| {
            let rates = misses_r.map(|r| q.rates(r));
            let fit_top = if numa_applies { c } else { n };
            let c1 = q.work(1.0);
            let modelled = model_points(m, if numa_applies { c } else { 0 })
                .into_iter()
                .filter(|&k| !numa_applies || k <= c)
                .map(|k| {
                    let cw = q.work(f64::from(k));
                    ModelledWork {
                        n: k,
                        work: cw,
                        omega: match (c1, cw) {
                            (Some(a), Some(b)) => omega(a, b),
                            _ => None,
                        },
                        extrapolated: k > machine_cpus,
                    }
                })
                .collect();
            MemoryModel {
                points: fit_points.len() as u32,
                slope: q.line.slope,
                intercept: q.line.intercept,
                mu: rates.map(|r| r.0),
                l: rates.map(|r| r.1),
                lambda: rates.map(|r| f64::from(fit_top) * r.1),
                modelled,
            }
        });
        let numa = if cs.is_empty() {
            None
        } else {
            mean_of(&cs, work).and_then(|work_c| {
                let delta = numa_delta(c, work_c, n, work_m)?;
                let modelled = model_points(m, c)
                    .into_iter()
                    .filter(|&k| k > c)
                    .map(|k| {
                        let cw = numa_work(c, work_c, delta, k);
                        ModelledWork {
                            n: k,
                            work: Some(cw),
                            omega: omega(work_1, cw),
                            extrapolated: k > machine_cpus,
                        }
                    })
                    .collect();
                Some(NumaModel {
                    c,
                    runs_c: cs.len() as u32,
                    work_c,
                    delta,
                    delta_per_miss: misses_r.filter(|&r| r > 0.0).map(|r| delta / r),
                    modelled,
                })
            })
        };

        // Induced memory contention (Tables 4.6, 4.7).
        let mut stress = Vec::new();
        for (cores, base) in [(1u32, &ones), (n, &ms)] {
            if cores == 1 && n == 1 && !stress.is_empty() {
                continue;
            }
            let with = select(cores, true);
            if with.is_empty() {
                continue;
            }
            let work_without = mean_of(base, work).unwrap_or(0.0);
            let work_with = mean_of(&with, work).unwrap_or(0.0);
            let sv_without = mean_of(base, RunData::service_s).unwrap_or(0.0);
            let sv_with = mean_of(&with, RunData::service_s).unwrap_or(0.0);
            let bw: Vec<f64> = with
                .iter()
                .filter_map(|d| d.run.stress_bandwidth_bytes_per_s)
                .collect();
            stress.push(StressComparison {
                n: cores,
                runs: with.len() as u32,
                work_without,
                work_with,
                work_change_pct: change_pct(work_without, work_with),
                service_time_without_s: sv_without,
                service_time_with_s: sv_with,
                service_time_change_pct: change_pct(sv_without, sv_with),
                wall_without_s: mean_of(base, |d| Some(d.wall_s)).unwrap_or(0.0),
                wall_with_s: mean_of(&with, |d| Some(d.wall_s)).unwrap_or(0.0),
                omega_with: omega(work_1, work_with),
                bandwidth_bytes_per_s: mean(&bw),
            });
        }

        rows.push(SpeedupRow {
            m,
            n,
            runs_1: ones.len() as u32,
            runs_m: ms.len() as u32,
            work_1,
            work_m,
            work_1_rsd_pct: rsd_pct(&values(&ones, work)),
            work_m_rsd_pct: rsd_pct(&values(&ms, work)),
            wall_1_s: wall_1,
            wall_m_s: wall_m,
            wall_1_rsd_pct: rsd_pct(&values(&ones, |d| Some(d.wall_s))),
            wall_m_rsd_pct: rsd_pct(&values(&ms, |d| Some(d.wall_s))),
            active_threads_measured: a,
            active_threads_modelled: a_mod,
            active_threads_1core: a_1,
            omega: w,
            useful_threads: p,
            loss_memory: r_mem,
            loss_dependencies: d_dep,
            speedup_model: s_mod,
            speedup_measured: s_meas,
            time_lost_memory_s: lost.memory_s,
            time_lost_dependencies_s: lost.dependencies_s,
            wall_lost_memory_s: lost.wall_memory_s,
            wall_lost_dependencies_s: lost.wall_dependencies_s,
            wall_lost_unexplained_s,
            service_time_1_s: svc_1,
            service_time_m_s: svc_m,
            service_time_change_pct: change_pct(svc_1, svc_m),
            ideal_running_time_s: ideal,
            actual_running_time_s: wall_m,
            running_time_change_pct: running_pct,
            cache_misses_1: misses_1,
            cache_misses_m: misses_m,
            cache_misses_change_pct: misses_1.zip(misses_m).and_then(|(a, b)| change_pct(a, b)),
            cache_misses_rsd_pct: misses_m.and_then(|_| rsd_pct(&values(&ms, |d| d.misses))),
            cycles_per_miss: misses_m
                .filter(|_| use_cycles)
                .and_then(|r| cycles_per_miss(work_m, r)),
            misses_per_second: misses_m.and_then(|r| misses_per_second(r, wall_m)),
            dependencies,
            memory_model,
            numa,
            stress,
        });
    }

    // Without cycles the work measure is CPU time, which counts busy
    // waiting as work: said where the numbers are, not only in the docs.
    let work_measure_caveat = (!use_cycles && !rows.is_empty()).then(|| {
        let traced = data.iter().any(|d| d.waits.is_some());
        format!(
            "ω and R (memory contention) are computed from CPU time, not cycles ({}): time a thread spends \
             busy-waiting counts as work and shows as memory contention. {}",
            work_measure_note.trim_start_matches("fallback: "),
            if traced {
                "Spinlock waits the lock collector measured were taken out of C; spinning it cannot see \
                 (adaptive mutexes, OpenMP or MPI polling, hand-written spin loops) was not, so a program \
                 that spins is not necessarily memory-bound."
            } else {
                "The runs have no lock traces, so no spinning could be taken out: a program that spins \
                 is not necessarily memory-bound."
            }
        )
    });
    if rows.is_empty() {
        if warnings.is_empty() {
            warnings.push("the manifest lists no runs".to_string());
        }
        return Err(SpeedupError::NoUsablePair {
            dir: dir.to_path_buf(),
            reasons: warnings.join("; "),
        });
    }
    Ok(SpeedupReport {
        scale_dir: dir.display().to_string(),
        command: manifest.command.clone(),
        work_measure: if use_cycles { "cycles" } else { "cpu time" }.to_string(),
        work_unit: if use_cycles { "cycles" } else { "s" }.to_string(),
        work_measure_note,
        work_measure_caveat,
        cache_misses_missing,
        complete: manifest.complete,
        repeat: manifest.repeat,
        sockets: manifest.sockets,
        cores_per_socket: manifest.cores_per_socket,
        stress_threads: manifest.stress_threads,
        by_threads: rows,
        warnings,
    })
}

/// The report of a scale directory (`contend report DIR`): its own
/// document, rendered by [`super::layout`]. JSON: `{"run", "locks",
/// "warnings", "speedup"}` (docs/json.md).
#[derive(Debug, Clone, Serialize)]
pub struct ScaleReport {
    /// The run header from the manifest and the first usable run (host,
    /// CPU model); no processes or threads (those are per run).
    pub run: RunInfo,
    /// No lock tables (those are per recording: `contend report
    /// DIR/<run>`); its `no_events_reason` says so. Kept because the JSON
    /// of a scale directory has always had a `locks` key.
    pub locks: LockReport,
    /// The model's warnings (failed runs left out, …).
    pub warnings: Vec<String>,
    /// The speed-up loss model.
    pub speedup: SpeedupReport,
}

/// Analyses the scale directory `dir` into its report.
///
/// Errors: as [`analyze_scale_dir`].
pub fn scale_report(dir: &Path, progress: &dyn Progress) -> Result<ScaleReport, SpeedupError> {
    let speedup = analyze_scale_dir(dir, progress)?;
    let manifest = ScaleManifest::read(dir)?;
    let first = manifest.runs.iter().find_map(|r| {
        contend_trace::meta::RunMeta::read(&dir.join(&r.dir))
            .ok()
            .filter(|m| m.complete)
    });
    let start_utc = first
        .as_ref()
        .map(|m| m.start_utc.clone())
        .unwrap_or_default();
    let first = first.unwrap_or_default();
    let wall_ns = (manifest.runs.iter().map(|r| r.wall_s.max(0.0)).sum::<f64>() * 1e9) as u64;
    Ok(ScaleReport {
        run: RunInfo {
            recording: dir.display().to_string(),
            command: manifest.command.clone(),
            exit_code: None,
            signal: None,
            wall_ns,
            host: first.host,
            cpu_model: first.cpu_model,
            cpus: first.cpus,
            start_utc,
            tool_version: manifest.tool_version.clone(),
            processes: 0,
            threads: 0,
            limits: None,
        },
        locks: LockReport {
            no_events_reason: Some(format!(
                "{} is a scale directory: lock reports are per run (`contend report {}/<run>`)",
                dir.display(),
                dir.display()
            )),
            ..LockReport::default()
        },
        warnings: speedup.warnings.clone(),
        speedup,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_points_are_powers_of_two_with_c_and_m() {
        assert_eq!(model_points(2, 0), vec![1, 2, 4]);
        assert_eq!(model_points(6, 4), vec![1, 2, 4, 6, 8]);
        assert_eq!(model_points(1, 0), vec![1, 2]);
    }

    /// Waits split by kind, workers apart from the other threads: two
    /// workers (1, 2) wait 1 s (mutex), 0.5 s (rwlock), 0.25 s (spin) and
    /// 2 s (cond); a reader thread (3) waits 7 s at a condition and spins
    /// 0.125 s. A `sem_post` is no wait.
    #[test]
    fn waits_split_by_kind_and_worker() {
        use crate::locks::{pair_operations, OpSource, ThreadInput, TimeMap};
        use contend_trace::{Phase, RawOp, NO_STACK};
        let s = 1_000_000_000u64;
        let op = |ticks: u64, object: u64, primitive: Primitive, phase: Phase| RawOp {
            ticks,
            object,
            site: 1,
            primitive,
            phase,
            stack: NO_STACK,
        };
        let wait = |t0: u64, d: u64, object: u64, p: Primitive| {
            let mut v = vec![
                op(t0, object, p, Phase::Request),
                op(t0 + d, object, p, Phase::Acquired),
            ];
            if p.is_lock() {
                v.push(op(t0 + d + 1, object, p, Phase::Release));
            }
            v
        };
        let t1: Vec<RawOp> = [
            wait(10, s, 0x10, Primitive::Mutex),
            wait(3 * s, s / 2, 0x20, Primitive::RwlockWrite),
        ]
        .concat();
        let t2: Vec<RawOp> = [
            wait(10, s / 4, 0x30, Primitive::Spin),
            wait(s, 2 * s, 0x40, Primitive::Cond),
            vec![op(4 * s, 0x50, Primitive::Semaphore, Phase::Release)],
        ]
        .concat();
        let t3: Vec<RawOp> = [
            wait(10, 7 * s, 0x40, Primitive::Cond),
            wait(8 * s, s / 8, 0x30, Primitive::Spin),
        ]
        .concat();
        let inputs: Vec<ThreadInput<'_>> = [(1, &t1), (2, &t2), (3, &t3)]
            .into_iter()
            .map(|(tid, ops)| ThreadInput {
                process: 0,
                pid: 7,
                tid,
                ops: OpSource::Slice(ops),
                clock: TimeMap::Identity,
            })
            .collect();
        let set = pair_operations(&inputs);
        let workers: std::collections::HashSet<(u32, u32)> = [(7, 1), (7, 2)].into();
        let w = run_waits(&set, Some(&workers));
        let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
        assert!(close(w.blocking, 1.5), "{w:?}");
        assert!(close(w.spin, 0.25), "{w:?}");
        assert!(close(w.other, 2.0), "{w:?}");
        assert!(close(w.beyond_workers, 7.125), "{w:?}");
        assert!(close(w.spin_all, 0.375), "{w:?}");
        // Without service samples every thread is a worker.
        let all = run_waits(&set, None);
        assert!(
            close(all.other, 9.0) && close(all.beyond_workers, 0.0),
            "{all:?}"
        );
    }
}
