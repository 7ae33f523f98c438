//! Service time: the analysis of the samples that `contend record`'s
//! sampler (`contend_record::sampler`) takes beside the target (`service.csamp`, format in
//! [`contend_trace::service`]) into a [`ServiceReport`].
//!
//! Definitions (Venter 2016, Sections 3.1.2 and 3.2.2.1; docs/metrics.md,
//! "Service time"): the sampler reads every thread's cumulative service
//! time at ticks t₀ < t₁ < …; for the interval ΔT = (t_{k−1}, t_k] (the
//! first one starts when the target was started), τ_j is the service time
//! thread j received in it, τ = Σ_j τ_j and the interval's critical-path
//! time ΔT_cp = max_j τ_j. Then
//!
//! - the average number of active threads measured (Listing 3.3) is
//!   A = Σ τ / Σ ΔT_cp over the intervals with ΔT_cp > 0
//!   ([`measured_active_threads`]);
//! - modelled for n CPUs (Listing 3.4), an interval with more than n
//!   active threads is stretched to τ / n:
//!   A(n) = Σ τ / Σ (τ / min(n, τ / ΔT_cp)) ([`modelled_active_threads`]).

use std::path::Path;

use contend_trace::service::{
    SampleFile, ENTRY_FROM_EVENTS, ENTRY_FROM_STAT, ENTRY_NEW, FILE_NAME,
};
use rustc_hash::{FxHashMap, FxHashSet};
use serde::Serialize;

use crate::analysis::{AnalysisOutput, Analyzer, Context};

pub mod figures;
pub mod layout;

/// Service-time results of one recording (docs/metrics.md, "Service
/// time"). Unlike the rest of the report, times here are seconds as
/// floating-point numbers (`*_s`), the unit of the thesis's service-time
/// tables.
#[derive(Debug, Clone, Serialize, Default, PartialEq)]
pub struct ServiceReport {
    /// Wall time covered by the samples: from the target's start to the
    /// last sample (taken when it had ended), s.
    pub wall_s: f64,
    /// Total service (CPU) time of all sampled threads, s.
    pub cpu_s: f64,
    /// `cpu_s / wall_s`: CPUs kept busy on average (0 when `wall_s` is 0).
    pub cpu_per_wall: f64,
    /// Average number of active threads A measured, Σ τ / Σ ΔT_cp over the
    /// sampling intervals (Venter 2016, Listing 3.3).
    pub active_threads: f64,
    /// Average number of active threads A modelled for `cpus` CPUs,
    /// Σ τ / Σ (τ / min(n, τ / ΔT_cp)) (Venter 2016, Listing 3.4).
    pub active_threads_modelled: f64,
    /// n: CPUs the target could use (its affinity mask when sampling began).
    pub cpus: u32,
    /// Samples (ticks) read.
    pub samples: u64,
    /// Sampling interval asked for, ms.
    pub interval_ms: f64,
    /// Mean system run-queue length over the samples that read it
    /// (runnable tasks on all CPUs, the sampler itself included; a tick
    /// made from the scheduler events after it was due read none,
    /// `contend_trace::service::TICK_FROM_EVENTS`).
    pub run_queue_mean: f64,
    /// Largest run-queue length sampled.
    pub run_queue_max: u32,
    /// Processes sampled (the target and its descendants).
    pub processes: u32,
    /// Threads whose service time came from `stat` (clock-tick
    /// resolution) because `schedstat` was unavailable.
    pub stat_fallback_threads: u32,
    /// Threads whose service time came from the kernel's scheduler events
    /// (context switches and wake-ups, the sampler's `sched-events`
    /// source) instead of `schedstat`.
    pub sched_event_threads: u32,
    /// The source of the samples: `"sched-events"` when any thread's came
    /// from scheduler events (the threads that ran before they were opened
    /// still come from `schedstat`), else `"schedstat"`.
    pub source: String,
    /// When the sampler left the scheduler events for `schedstat` because
    /// they cost the program more than reading `schedstat` would (many
    /// context switches, few threads; `contend_record::sampler::leaves_events`),
    /// s after the start; `None` when it did not (or in older recordings).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub left_events_at_s: Option<f64>,
    /// Scheduler event records per second just before it left them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub left_events_records_per_s: Option<u64>,
    /// Why the sampler could not use the scheduler events and read every
    /// thread from `schedstat` (one sentence from the recording's
    /// `meta.json`, `sampler.source_note`: the kernel's refusal and its
    /// reason); `None` when they were used, not asked for
    /// (`CONTEND_SERVICE_SOURCE=schedstat`), or in older recordings.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sched_events_refused: Option<String>,
    /// Why the scheduler events held the context switches alone, without
    /// the wake-up tracepoints (`meta.json`'s
    /// `sampler.event_wakeups_refused`): the run-queue wait of the threads
    /// they followed then counts the waits after preemptions only, not
    /// those after wake-ups; run time and slices stay exact. `None` with
    /// the wake-ups.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sched_wakeups_refused: Option<String>,
    /// Per thread, most service time first.
    pub threads: Vec<ServiceThreadRow>,
}

/// Service time of one thread.
#[derive(Debug, Clone, Serialize, Default, PartialEq)]
pub struct ServiceThreadRow {
    /// Process id.
    pub pid: u32,
    /// Kernel thread id (a reused tid is one row).
    pub tid: u32,
    /// Service (CPU) time received while sampled, s.
    pub cpu_s: f64,
    /// Time spent runnable but waiting for a CPU, s (`schedstat`; 0 with
    /// the `stat` fallback).
    pub run_queue_wait_s: f64,
    /// Time slices run (`schedstat`; 0 with the `stat` fallback).
    pub slices: u64,
    /// The thread's name as the kernel had it (comm), from its lock
    /// trace, `threads.json` or `probes/` ([`crate::Recording::named_threads`]);
    /// `None` when the recording has none.
    pub name: Option<String>,
    /// The MPI world rank of the thread's process, when that process
    /// recorded an MPI trace on the host the sampler ran on; `None`
    /// otherwise.
    pub rank: Option<u32>,
}

/// The active threads of one sampling interval, τ / ΔT_cp (Venter 2016,
/// Section 3.1.2): `service_ns`, Σ τ_j, the service time all threads
/// received in it, over `longest_ns`, max τ_j, the longest any one
/// received (both ns); in threads, 0 when no thread ran. Averaged with
/// weights ΔT_cp it is [`measured_active_threads`].
pub fn interval_active_threads(service_ns: u64, longest_ns: u64) -> f64 {
    if longest_ns == 0 {
        0.0
    } else {
        service_ns as f64 / longest_ns as f64
    }
}

/// The average number of active threads measured from per-interval
/// service times (Venter 2016, Listing 3.3, `MeasuredAmn`): each item of
/// `intervals` holds the service time τ_j every thread received in one
/// interval (any unit); the result is Σ τ / Σ max_j τ_j over the intervals
/// whose maximum is positive, in threads. 0 when no thread received any
/// service.
pub fn measured_active_threads<I, T>(intervals: I) -> f64
where
    I: IntoIterator<Item = T>,
    T: AsRef<[u64]>,
{
    let (mut sum, mut tcp_total) = (0u128, 0u128);
    for item in intervals {
        let taus = item.as_ref();
        let tcp = taus.iter().copied().max().unwrap_or(0);
        if tcp > 0 {
            sum += taus.iter().map(|&t| u128::from(t)).sum::<u128>();
            tcp_total += u128::from(tcp);
        }
    }
    if tcp_total == 0 {
        0.0
    } else {
        sum as f64 / tcp_total as f64
    }
}

/// The average number of active threads modelled for `cpus` = n CPUs
/// (Venter 2016, Listing 3.4, `modelledAmn`): an interval with τ / ΔT_cp
/// active threads takes τ / min(n, τ / ΔT_cp) on n CPUs, and the result is
/// Σ τ / Σ (τ / min(n, τ / ΔT_cp)), in threads. With n at least the
/// measured parallelism of every interval this equals
/// [`measured_active_threads`]; it never exceeds n. `cpus` = 0 counts as
/// 1. 0 when no thread received any service.
pub fn modelled_active_threads<I, T>(intervals: I, cpus: u32) -> f64
where
    I: IntoIterator<Item = T>,
    T: AsRef<[u64]>,
{
    let n = f64::from(cpus.max(1));
    let (mut above, mut below) = (0f64, 0f64);
    for item in intervals {
        let taus = item.as_ref();
        let tcp = taus.iter().copied().max().unwrap_or(0);
        if tcp > 0 {
            let s = taus.iter().map(|&t| t as f64).sum::<f64>();
            let a_inf = s / tcp as f64;
            above += s;
            below += s / n.min(a_inf);
        }
    }
    if below == 0.0 {
        0.0
    } else {
        above / below
    }
}

/// Per-interval service times of a sample file: for each tick, the
/// service time (ns) of every thread that ran in the interval ending at
/// it, and the interval's length (ns). A thread's first entry
/// ([`ENTRY_NEW`]) counts from the thread's start; later entries count
/// from its previous entry (a counter that went backwards, a reused tid
/// missed by the sampler, counts from zero).
///
/// One thread runs on one CPU at a time, so no interval can hold more of
/// its service time than its length: where a delta does, the excess
/// belongs to the thread's earlier intervals and is given back to them,
/// the latest first, up to each one's length. Such excesses come from the
/// sources' lags: `schedstat` updates a running thread's figure at kernel
/// ticks and switches (one interval gets less, the next more), and when
/// the sampler leaves the scheduler events for `schedstat` the first
/// `schedstat` reading holds the context-switch time the events missed
/// over the whole period before (docs/metrics.md, "source switch"): an
/// interval of 2.8 active threads on 2 CPUs in a `sharequeue` recording.
/// A thread's totals are unchanged; only where the time lies moves.
/// What no earlier interval has room for stays where it was.
pub fn intervals(file: &SampleFile) -> Vec<(u64, Vec<u64>)> {
    // per thread: its last run time, and its earlier intervals with room
    // left, as (tick, place in that tick's service times), the latest last
    type Open = Vec<(usize, usize)>;
    let mut threads: FxHashMap<(u32, u32), (Option<u64>, Open)> = FxHashMap::default();
    let mut prev_t = file.header.start_ns;
    let mut out: Vec<(u64, Vec<u64>)> = Vec::with_capacity(file.ticks.len());
    for (k, tick) in file.ticks.iter().enumerate() {
        let t = tick.header.monotonic_ns;
        let dt = t.saturating_sub(prev_t);
        prev_t = prev_t.max(t);
        let mut taus = Vec::with_capacity(tick.entries.len());
        for e in &tick.entries {
            let (last, open) = threads.entry((e.pid, e.tid)).or_default();
            let mut tau = match last.replace(e.run_ns) {
                Some(b) if e.flags & ENTRY_NEW == 0 && e.run_ns >= b => e.run_ns - b,
                _ => {
                    // counted from zero (a new thread, perhaps on a reused
                    // tid): the earlier intervals were another thread's
                    open.clear();
                    e.run_ns
                }
            };
            if tau == 0 {
                continue;
            }
            if tau > dt {
                let mut excess = tau - dt;
                while excess > 0 {
                    let Some(&(kk, at)) = open.last() else {
                        break;
                    };
                    let (len, earlier) = (out[kk].0, &mut out[kk].1[at]);
                    let moved = excess.min(len.saturating_sub(*earlier));
                    *earlier += moved;
                    excess -= moved;
                    if *earlier >= len {
                        open.pop();
                    }
                }
                tau = dt + excess;
            }
            if tau < dt {
                open.push((k, taus.len()));
            }
            taus.push(tau);
        }
        out.push((dt, taus));
    }
    out
}

/// Analyses a sample file: wall and service time, per-thread service
/// time, the average number of active threads measured (Listing 3.3) and
/// modelled for the header's CPU count (Listing 3.4), and the run-queue
/// length. `None` when the file holds no tick.
pub fn analyze(file: &SampleFile) -> Option<ServiceReport> {
    let last_tick = file.ticks.last()?;
    let ivs = intervals(file);
    let cpus = file.header.cpus.max(1);
    let taus = ivs.iter().map(|(_, t)| t.as_slice());
    let active_threads = measured_active_threads(taus.clone());
    let active_threads_modelled = modelled_active_threads(taus, cpus);

    // Per-thread totals, with the same delta rule as `intervals`.
    let mut last: FxHashMap<(u32, u32), (u64, u64, u32)> = FxHashMap::default();
    let mut totals: FxHashMap<(u32, u32), (u64, u64, u64)> = FxHashMap::default();
    let mut from_stat: FxHashSet<(u32, u32)> = FxHashSet::default();
    let mut from_events: FxHashSet<(u32, u32)> = FxHashSet::default();
    let mut pids: FxHashSet<u32> = FxHashSet::default();
    let mut rq_sum = 0u64;
    let mut rq_max = 0u32;
    let mut rq_reads = 0u64;
    for tick in &file.ticks {
        if let Some(rq) = tick.header.run_queue_read() {
            rq_sum += u64::from(rq);
            rq_max = rq_max.max(rq);
            rq_reads += 1;
        }
        for e in &tick.entries {
            let key = (e.pid, e.tid);
            pids.insert(e.pid);
            if e.flags & ENTRY_FROM_STAT != 0 {
                from_stat.insert(key);
            }
            if e.flags & ENTRY_FROM_EVENTS != 0 {
                from_events.insert(key);
            }
            let now = (e.run_ns, e.wait_ns, e.slices);
            let d = match last.insert(key, now) {
                Some(b) if e.flags & ENTRY_NEW == 0 && e.run_ns >= b.0 => (
                    e.run_ns - b.0,
                    e.wait_ns.saturating_sub(b.1),
                    u64::from(e.slices.saturating_sub(b.2)),
                ),
                _ => (e.run_ns, e.wait_ns, u64::from(e.slices)),
            };
            let t = totals.entry(key).or_default();
            t.0 += d.0;
            t.1 += d.1;
            t.2 += d.2;
        }
    }
    let s = |ns: u64| ns as f64 / 1e9;
    let mut threads: Vec<ServiceThreadRow> = totals
        .iter()
        .map(|(&(pid, tid), &(run, wait, slices))| ServiceThreadRow {
            pid,
            tid,
            cpu_s: s(run),
            run_queue_wait_s: s(wait),
            slices,
            name: None,
            rank: None,
        })
        .collect();
    threads.sort_by(|a, b| {
        b.cpu_s
            .total_cmp(&a.cpu_s)
            .then(a.pid.cmp(&b.pid))
            .then(a.tid.cmp(&b.tid))
    });
    let cpu_ns: u64 = totals.values().map(|t| t.0).sum();
    let wall_ns = last_tick
        .header
        .monotonic_ns
        .saturating_sub(file.header.start_ns);
    Some(ServiceReport {
        wall_s: s(wall_ns),
        cpu_s: s(cpu_ns),
        cpu_per_wall: if wall_ns == 0 {
            0.0
        } else {
            cpu_ns as f64 / wall_ns as f64
        },
        active_threads,
        active_threads_modelled,
        cpus,
        samples: file.ticks.len() as u64,
        interval_ms: file.header.interval_ns as f64 / 1e6,
        run_queue_mean: rq_sum as f64 / rq_reads.max(1) as f64,
        run_queue_max: rq_max,
        processes: pids.len() as u32,
        stat_fallback_threads: from_stat.len() as u32,
        sched_event_threads: from_events.len() as u32,
        source: if from_events.is_empty() {
            "schedstat"
        } else {
            "sched-events"
        }
        .into(),
        left_events_at_s: None,
        sched_events_refused: None,
        sched_wakeups_refused: None,
        left_events_records_per_s: None,
        threads,
    })
}

/// The service section of the sample file read from `path`, and the
/// warnings about it, one sentence each naming the file: a cut-off tail,
/// no sample at all (then the section is `None`).
pub fn section_of(path: &Path, file: &SampleFile) -> (Option<ServiceReport>, Vec<String>) {
    let mut warnings = Vec::new();
    if let Some(t) = &file.truncated {
        warnings.push(format!("{}: {t}", path.display()));
    }
    let report = analyze(file);
    if report.is_none() {
        warnings.push(format!(
            "{}: holds no service-time sample (the launcher ended before its first tick)",
            path.display()
        ));
    }
    (report, warnings)
}

/// Fills in each thread's name (`names`, by (pid, tid):
/// [`crate::Recording::named_threads`]) and its process's MPI rank (from
/// `ranks`, the recording's MPI rank traces). A rank is taken only from a
/// trace made on `host`, the host the sampler ran on (`meta.json`'s;
/// without it, only when every rank ran on one host), since process ids of
/// other nodes are other processes.
fn name_threads(
    report: &mut ServiceReport,
    names: &rustc_hash::FxHashMap<(u32, u32), &str>,
    ranks: &[contend_trace::mpi::MpiRankTrace],
    host: Option<&str>,
) {
    let one_host = ranks.windows(2).all(|w| w[0].host == w[1].host);
    let rank_of: rustc_hash::FxHashMap<u32, u32> = ranks
        .iter()
        .filter(|r| host.map_or(one_host, |h| r.host == h))
        .map(|r| (r.pid, r.rank))
        .collect();
    for t in &mut report.threads {
        t.name = names.get(&(t.pid, t.tid)).map(|n| n.to_string());
        t.rank = rank_of.get(&t.pid).copied();
    }
}

/// The warning for a service section that saw much less CPU time than
/// the kernel counted for the program (`kernel_cpu_ns`: `wait4`'s user +
/// system time of the program and the children it waited for, ns): more
/// than 10% and 20 ms less. The sampler reads each thread at its ticks, so
/// a thread's run time after its last tick is lost when it ends (all of it
/// for a thread that lived between two ticks) unless the scheduler events
/// followed it to its exit; missed ticks lose more. `None` when the two
/// agree that well.
fn undercount_warning(report: &ServiceReport, kernel_cpu_ns: u64) -> Option<String> {
    let kernel = kernel_cpu_ns as f64 / 1e9;
    let missing = kernel - report.cpu_s;
    if missing <= 0.1 * kernel || missing <= 0.020 {
        return None;
    }
    let d = |s: f64| crate::report::fmt::duration_plain((s * 1e9).round() as u64);
    let events = if report.sched_events_refused.is_some() {
        " (the scheduler events, which follow a thread to its end, were not allowed: see the \
         service section's source)"
    } else {
        ""
    };
    Some(format!(
        "service time: the sampler saw {} of the {} of CPU time the kernel counted for the program \
         (wait4), {:.0} % less: threads that end between two of its ticks ({} apart) lose their run \
         time since the last one{events}, or ticks were missed ({} samples in {}); the service \
         section's times and active threads are low by about as much",
        d(report.cpu_s),
        d(kernel),
        100.0 * missing / kernel,
        d(report.interval_ms / 1e3),
        report.samples,
        d(report.wall_s),
    ))
}

/// The service-time analysis of a recording (registered in
/// [`crate::analysis::ANALYZERS`]): absent when the recording has no
/// sample file; an unreadable one is a warning.
pub struct ServiceAnalyzer;

impl Analyzer for ServiceAnalyzer {
    fn name(&self) -> &'static str {
        "service time"
    }

    fn analyze(&self, cx: &Context<'_>) -> Option<AnalysisOutput> {
        let (mut section, mut warnings) = match cx.recording.service.as_ref()? {
            Err(e) => (None, vec![e.to_string()]),
            Ok(file) => section_of(&cx.recording.dir.join(FILE_NAME), file),
        };
        if let Some(report) = section.as_mut() {
            let ranks = match cx.recording.mpi.as_ref() {
                Some(Ok(mpi)) => &mpi.ranks[..],
                _ => &[],
            };
            let host = cx.recording.meta.as_ref().map(|m| m.host.as_str());
            name_threads(report, &cx.recording.named_threads(), ranks, host);
        }
        if let (Some(report), Some(meta)) = (section.as_mut(), cx.recording.meta.as_ref()) {
            if let Some(at) = meta.sampler.as_ref().and_then(|s| s.switched_at_ns) {
                report.left_events_at_s =
                    Some(at.saturating_sub(meta.start_monotonic_ns) as f64 / 1e9);
                report.left_events_records_per_s =
                    meta.sampler.as_ref().and_then(|s| s.switched_records_per_s);
            }
            if report.sched_event_threads == 0 {
                report.sched_events_refused =
                    meta.sampler.as_ref().and_then(|s| s.source_note.clone());
            } else {
                report.sched_wakeups_refused = meta
                    .sampler
                    .as_ref()
                    .and_then(|s| s.event_wakeups_refused.clone());
            }
            let kernel_cpu_ns = meta.counters.as_ref().and_then(|c| c.cpu_time_ns);
            if let Some(w) = kernel_cpu_ns.and_then(|ns| undercount_warning(report, ns)) {
                warnings.push(w);
            }
        }
        Some(AnalysisOutput {
            section: section.map(|s| Box::new(s) as Box<dyn crate::report::ReportSection>),
            warnings,
            events: None,
            span_ns: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use contend_trace::service::{encode_header, encode_tick, Entry, Header, TickHeader};

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    /// Venter 2016, Figure 3.1(b) and Section 3.1.2: four threads on one
    /// core sampled every 32 quanta of x; τ/ΔT_cp = (8x+7x+7x+8x)/8x in the
    /// first interval and (7x+8x+6x+4x)/8x in the second, so
    /// A(4,1) = (30x+25x)/16x = 3.4375.
    #[test]
    fn thesis_figure_3_1_example() {
        let a = measured_active_threads([[8u64, 7, 7, 8], [7, 8, 6, 4]]);
        assert!(close(a, 3.4375), "{a}");
        // The same in ns with x = 10 ms.
        let x = 10_000_000u64;
        let a = measured_active_threads([
            vec![8 * x, 7 * x, 7 * x, 8 * x],
            vec![7 * x, 8 * x, 6 * x, 4 * x],
        ]);
        assert!(close(a, 3.4375), "{a}");
        // With 4 CPUs nothing is stretched: the model equals the measure.
        let m = modelled_active_threads([[8u64, 7, 7, 8], [7, 8, 6, 4]], 4);
        assert!(close(m, 3.4375), "{m}");
    }

    #[test]
    fn hand_computed_measured() {
        // Idle intervals (ΔT_cp = 0) are skipped, as in Listing 3.3.
        let a = measured_active_threads([vec![10u64, 5], vec![], vec![0, 0], vec![4]]);
        // (15 + 4) / (10 + 4)
        assert!(close(a, 19.0 / 14.0), "{a}");
        assert_eq!(measured_active_threads(Vec::<Vec<u64>>::new()), 0.0);
        assert_eq!(measured_active_threads([[0u64, 0]]), 0.0);
        // One thread always busy: A = 1.
        assert!(close(measured_active_threads([[7u64], [9]]), 1.0));
    }

    #[test]
    fn hand_computed_modelled() {
        // Interval 1: τ = 40, ΔT_cp = 10, A(∞) = 4: on 2 CPUs it takes 20.
        // Interval 2: τ = 10, ΔT_cp = 10, A(∞) = 1: takes 10.
        // A(2) = 50 / 30.
        let iv = [vec![10u64, 10, 10, 10], vec![10]];
        let m = modelled_active_threads(iv.clone(), 2);
        assert!(close(m, 50.0 / 30.0), "{m}");
        // On 1 CPU every interval takes τ: A = 1.
        assert!(close(modelled_active_threads(iv.clone(), 1), 1.0));
        assert!(close(modelled_active_threads(iv.clone(), 0), 1.0));
        // On 8 CPUs: the measured value, 50 / 20.
        assert!(close(modelled_active_threads(iv.clone(), 8), 2.5));
        assert!(close(measured_active_threads(iv), 2.5));
        assert_eq!(modelled_active_threads([[0u64]], 4), 0.0);
    }

    /// Names by (pid, tid); ranks only from traces of the sampled host,
    /// or, without a host, only when all ranks ran on one.
    #[test]
    fn threads_are_named_and_given_the_rank_of_their_process() {
        let row = |pid, tid| ServiceThreadRow {
            pid,
            tid,
            ..ServiceThreadRow::default()
        };
        let rank = |rank, pid, host: &str| contend_trace::mpi::MpiRankTrace {
            rank,
            pid,
            host: host.into(),
            ..Default::default()
        };
        let mut report = ServiceReport {
            threads: vec![row(10, 10), row(10, 11), row(20, 20), row(30, 30)],
            ..ServiceReport::default()
        };
        let names: rustc_hash::FxHashMap<(u32, u32), &str> = [
            ((10, 10), "app"),
            ((10, 11), "progress"),
            ((30, 30), "mpirun"),
        ]
        .into_iter()
        .collect();
        // pid 20 is rank 1 on another node: another process.
        let ranks = [rank(0, 10, "a"), rank(1, 20, "b")];
        name_threads(&mut report, &names, &ranks, Some("a"));
        let got: Vec<(Option<&str>, Option<u32>)> = report
            .threads
            .iter()
            .map(|t| (t.name.as_deref(), t.rank))
            .collect();
        assert_eq!(
            got,
            [
                (Some("app"), Some(0)),
                (Some("progress"), Some(0)),
                (None, None),
                (Some("mpirun"), None)
            ]
        );
        // No host known: two hosts, so no rank is trusted ...
        name_threads(&mut report, &names, &ranks, None);
        assert!(report.threads.iter().all(|t| t.rank.is_none()));
        // ... one host, every rank is.
        let ranks = [rank(0, 10, "a"), rank(1, 20, "a")];
        name_threads(&mut report, &names, &ranks, None);
        let got: Vec<Option<u32>> = report.threads.iter().map(|t| t.rank).collect();
        assert_eq!(got, [Some(0), Some(0), Some(1), None]);
    }

    /// The warning comes when the sampler saw more than 10 % and 20 ms
    /// less CPU time than the kernel counted, and names both.
    #[test]
    fn sampled_cpu_far_below_the_kernels_is_a_warning() {
        let report = |cpu_s| ServiceReport {
            cpu_s,
            wall_s: 0.164,
            samples: 7,
            interval_ms: 10.0,
            ..ServiceReport::default()
        };
        let w = undercount_warning(&report(0.0988), 312_400_000).expect("a warning");
        assert!(w.contains("98.80 ms of the 312.4 ms"), "{w}");
        assert!(w.contains("68 % less"), "{w}");
        assert!(w.contains("7 samples in 164.0 ms"), "{w}");
        // within 10 %, or within 20 ms: none
        assert_eq!(undercount_warning(&report(0.290), 312_400_000), None);
        assert_eq!(undercount_warning(&report(0.010), 25_000_000), None);
        // more seen than counted (children not waited for): none
        assert_eq!(undercount_warning(&report(0.5), 312_400_000), None);
        // where the kernel refused the scheduler events, it says so
        assert!(!w.contains("were not allowed"), "{w}");
        let refused = ServiceReport {
            sched_events_refused: Some("tracefs is root-only".into()),
            ..report(0.0988)
        };
        let w = undercount_warning(&refused, 312_400_000).expect("a warning");
        assert!(
            w.contains("the scheduler events, which follow a thread to its end, were not allowed"),
            "{w}"
        );
    }

    fn entry(pid: u32, tid: u32, run_ns: u64, new: bool) -> Entry {
        Entry {
            pid,
            tid,
            run_ns,
            wait_ns: run_ns / 10,
            slices: (run_ns / 1_000_000) as u32,
            flags: if new { ENTRY_NEW } else { 0 },
        }
    }

    /// Three ticks 10 ms apart after a start at 1 s: thread 1 always busy,
    /// thread 2 busy half the time, thread 3 (another process) appears in
    /// the second interval; thread 2 is absent from the last tick
    /// (unchanged).
    fn sample_bytes() -> Vec<u8> {
        let ms = 1_000_000u64;
        file_bytes(&[
            (
                10,
                2,
                vec![entry(7, 7, 10 * ms, true), entry(7, 8, 5 * ms, true)],
            ),
            (
                20,
                3,
                vec![
                    entry(7, 7, 20 * ms, false),
                    entry(7, 8, 10 * ms, false),
                    entry(9, 9, 10 * ms, true),
                ],
            ),
            (30, 1, vec![entry(7, 7, 30 * ms, false)]),
        ])
    }

    /// A sample file started at 1 s with a 10 ms interval on 2 CPUs, whose
    /// ticks are (ms after the start, run queue, entries).
    fn file_bytes(ticks: &[(u64, u32, Vec<Entry>)]) -> Vec<u8> {
        let flagged: Vec<(u64, u32, u32, Vec<Entry>)> = ticks
            .iter()
            .map(|(t, rq, e)| (*t, *rq, 0, e.clone()))
            .collect();
        flagged_file_bytes(&flagged)
    }

    /// As [`file_bytes`], each tick with its flags: (ms after the start,
    /// run queue, flags, entries).
    fn flagged_file_bytes(ticks: &[(u64, u32, u32, Vec<Entry>)]) -> Vec<u8> {
        let ms = 1_000_000u64;
        let start = 1_000 * ms;
        let mut b = encode_header(&Header {
            start_ns: start,
            interval_ns: 10 * ms,
            cpus: 2,
            clk_tck: 100,
            kernel_tick_ns: 4_000_000,
        })
        .to_vec();
        for (t, rq, flags, entries) in ticks {
            let tick = TickHeader {
                monotonic_ns: start + t * ms,
                run_queue: *rq,
                flags: *flags,
            };
            encode_tick(&mut b, &tick, entries);
        }
        b
    }

    /// The figure's lines per interval: two threads that ran 4 + 2 ms,
    /// then 4 + 1 ms, of 10 ms intervals are 1.5 and 1.25 active threads
    /// (Σ τ / max τ, as the report's A averages them) but 0.6 and 0.5
    /// CPUs busy (Σ τ / interval); the run queue as sampled.
    #[test]
    fn the_figure_shows_active_threads_and_cpus_busy_per_interval() {
        let ms = 1_000_000u64;
        let f = SampleFile::parse(&file_bytes(&[
            (
                10,
                3,
                vec![entry(7, 7, 4 * ms, true), entry(7, 8, 2 * ms, true)],
            ),
            (
                20,
                1,
                vec![entry(7, 7, 8 * ms, false), entry(7, 8, 3 * ms, false)],
            ),
        ]))
        .unwrap();
        let fig = figures::over_time(&f).expect("two samples");
        let crate::report::figure::Plot::Lines(lines) = fig.plot else {
            panic!("a line plot");
        };
        let series: Vec<(&str, Vec<(f64, f64)>)> = lines
            .series
            .iter()
            .map(|(name, points)| (name.as_str(), points.clone()))
            .collect();
        assert_eq!(
            series,
            vec![
                (
                    "Active threads (Στ / max τ)",
                    vec![(0.01, 1.5), (0.02, 1.25)]
                ),
                ("CPUs busy (Στ / interval)", vec![(0.01, 0.6), (0.02, 0.5)]),
                ("Run queue", vec![(0.01, 3.0), (0.02, 1.0)]),
            ]
        );
        // the report's A is their average weighted by max τ
        let r = analyze(&f).unwrap();
        assert!(close(r.active_threads, 11.0 / 8.0), "{r:?}");
    }

    /// A thread's delta longer than its interval gives the excess back to
    /// its earlier intervals, the latest first. Worked by hand, ticks 10 ms
    /// apart on 2 CPUs: thread 7 is followed by events that miss 1 ms per
    /// interval (9, 18, 27 ms), then read from `schedstat` (40 ms at 40
    /// ms): 13 ms in the last interval, 3 of them given back, 1 ms to each
    /// interval before. Thread 8 (5 ms per interval) is untouched; thread
    /// 9, new at 40 ms with 12 ms since its start in a 10 ms interval, has
    /// no earlier interval and keeps its 12.
    #[test]
    fn an_interval_never_holds_more_of_a_thread_than_its_length() {
        let ms = 1_000_000u64;
        let ticks: Vec<(u64, u32, Vec<Entry>)> = [9, 18, 27, 40]
            .into_iter()
            .enumerate()
            .map(|(k, run)| {
                let k = k as u64 + 1;
                let mut entries = vec![
                    entry(7, 7, run * ms, k == 1),
                    entry(7, 8, 5 * k * ms, k == 1),
                ];
                if k == 4 {
                    entries.push(entry(7, 9, 12 * ms, true));
                }
                (10 * k, 2, entries)
            })
            .collect();
        let b = file_bytes(&ticks);
        let f = SampleFile::parse(&b).unwrap();
        let ivs = intervals(&f);
        assert_eq!(
            ivs,
            vec![
                (10 * ms, vec![10 * ms, 5 * ms]),
                (10 * ms, vec![10 * ms, 5 * ms]),
                (10 * ms, vec![10 * ms, 5 * ms]),
                (10 * ms, vec![10 * ms, 5 * ms, 12 * ms]),
            ]
        );
        // totals as the deltas give them
        let r = analyze(&f).unwrap();
        assert!(close(r.cpu_s, 0.072), "{r:?}");
    }

    /// A thread new on a reused tid gives no excess to the intervals of
    /// the thread that had the tid before: thread 10 runs 5 ms in each of
    /// the first two intervals, and a new thread 10 (`ENTRY_NEW`) has 14
    /// ms since its start at the third tick, which it keeps.
    #[test]
    fn a_reused_tid_gives_nothing_back_to_the_thread_before() {
        let ms = 1_000_000u64;
        let b = file_bytes(&[
            (10, 1, vec![entry(7, 10, 5 * ms, true)]),
            (20, 1, vec![entry(7, 10, 10 * ms, false)]),
            (30, 1, vec![entry(7, 10, 14 * ms, true)]),
        ]);
        let ivs = intervals(&SampleFile::parse(&b).unwrap());
        let taus: Vec<Vec<u64>> = ivs.into_iter().map(|(_, t)| t).collect();
        assert_eq!(taus, vec![vec![5 * ms], vec![5 * ms], vec![14 * ms]]);
    }

    #[test]
    fn analysis_of_a_hand_made_file() {
        let f = SampleFile::parse(&sample_bytes()).unwrap();
        let ivs = intervals(&f);
        let ms = 1_000_000u64;
        assert_eq!(
            ivs,
            vec![
                (10 * ms, vec![10 * ms, 5 * ms]),
                (10 * ms, vec![10 * ms, 5 * ms, 10 * ms]),
                (10 * ms, vec![10 * ms]),
            ]
        );
        let r = analyze(&f).unwrap();
        assert!(close(r.wall_s, 0.030), "{r:?}");
        assert!(close(r.cpu_s, 0.050), "{r:?}");
        assert!(close(r.cpu_per_wall, 50.0 / 30.0));
        // (15 + 25 + 10) / (10 + 10 + 10)
        assert!(close(r.active_threads, 50.0 / 30.0), "{r:?}");
        // On 2 CPUs the middle interval (2.5 threads) takes 12.5 ms.
        assert!(close(r.active_threads_modelled, 50.0 / 32.5), "{r:?}");
        assert_eq!(r.cpus, 2);
        assert_eq!(r.samples, 3);
        assert!(close(r.interval_ms, 10.0));
        assert!(close(r.run_queue_mean, 2.0));
        assert_eq!(r.run_queue_max, 3);
        assert_eq!(r.processes, 2);
        assert_eq!(r.stat_fallback_threads, 0);
        let t: Vec<(u32, u32, f64)> = r.threads.iter().map(|t| (t.pid, t.tid, t.cpu_s)).collect();
        assert_eq!(t, vec![(7, 7, 0.030), (7, 8, 0.010), (9, 9, 0.010)]);
        assert!(close(r.threads[0].run_queue_wait_s, 0.003));
        assert_eq!(r.threads[0].slices, 30);
    }

    /// Ticks the sampler made from the scheduler events after they were
    /// due (`TICK_FROM_EVENTS`) read no run queue: their 0 is no sample.
    /// Worked by hand: run queues 3 and 5 read at 10 and 30 ms, none at
    /// 20 and 40 ms: mean 4, max 5, while the threads' service time counts
    /// every tick (10 ms in each interval of one busy thread).
    #[test]
    fn ticks_made_from_the_events_are_no_run_queue_samples() {
        use contend_trace::service::TICK_FROM_EVENTS;
        let ms = 1_000_000u64;
        let busy = |t: u64| vec![entry(7, 7, t * ms, t == 10)];
        let f = SampleFile::parse(&flagged_file_bytes(&[
            (10, 3, 0, busy(10)),
            (20, 0, TICK_FROM_EVENTS, busy(20)),
            (30, 5, 0, busy(30)),
            (40, 0, TICK_FROM_EVENTS, busy(40)),
        ]))
        .unwrap();
        let r = analyze(&f).unwrap();
        assert!(close(r.run_queue_mean, 4.0), "{r:?}");
        assert_eq!(r.run_queue_max, 5);
        assert_eq!(r.samples, 4);
        assert!(close(r.cpu_s, 0.040), "{r:?}");
        let fig = figures::over_time(&f).expect("four samples");
        let crate::report::figure::Plot::Lines(lines) = &fig.plot else {
            panic!("a line plot");
        };
        let queue = &lines
            .series
            .iter()
            .find(|(n, _)| n == "Run queue")
            .unwrap()
            .1;
        assert_eq!(
            queue.iter().map(|p| p.1).collect::<Vec<_>>(),
            vec![3.0, 5.0]
        );
    }

    /// What the service analysis makes of `<dir>/service.csamp`: `None`
    /// without the file, else the section and warnings or the read error.
    type Read = Option<Result<(Option<ServiceReport>, Vec<String>), contend_trace::TraceError>>;
    fn read_recording(dir: &Path) -> Read {
        let path = dir.join(FILE_NAME);
        if !path.exists() {
            return None;
        }
        Some(SampleFile::read(&path).map(|f| section_of(&path, &f)))
    }

    #[test]
    fn truncated_file_is_analysed_up_to_the_damage() {
        let dir = tempfile::tempdir().unwrap();
        let b = sample_bytes();
        // Cut inside the last tick's entry.
        std::fs::write(dir.path().join(FILE_NAME), &b[..b.len() - 5]).unwrap();
        let (r, warnings) = read_recording(dir.path()).unwrap().unwrap();
        let r = r.unwrap();
        assert_eq!(r.samples, 2);
        assert!(close(r.cpu_s, 0.040), "{r:?}");
        assert!(close(r.active_threads, 40.0 / 20.0), "{r:?}");
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].contains(FILE_NAME), "{warnings:?}");
        assert!(warnings[0].contains("incomplete"), "{warnings:?}");

        // Only the header: no report, one warning.
        std::fs::write(
            dir.path().join(FILE_NAME),
            &b[..contend_trace::service::HEADER_SIZE],
        )
        .unwrap();
        let (r, warnings) = read_recording(dir.path()).unwrap().unwrap();
        assert!(r.is_none());
        assert!(
            warnings[0].contains("no service-time sample"),
            "{warnings:?}"
        );

        // Not a sample file: an error naming it.
        std::fs::write(dir.path().join(FILE_NAME), b"junk").unwrap();
        let e = read_recording(dir.path()).unwrap().unwrap_err().to_string();
        assert!(e.contains(FILE_NAME), "{e}");

        // No file: nothing.
        std::fs::remove_file(dir.path().join(FILE_NAME)).unwrap();
        assert!(read_recording(dir.path()).is_none());
    }

    #[test]
    fn first_tick_as_baseline() {
        let mut f = SampleFile::parse(&sample_bytes()).unwrap();
        f.count_from_first_tick();
        let ms = 1_000_000u64;
        // Threads 7/7 and 7/8 count from the first tick; 9/9 is new later.
        assert_eq!(
            intervals(&f),
            vec![
                (10 * ms, vec![]),
                (10 * ms, vec![10 * ms, 5 * ms, 10 * ms]),
                (10 * ms, vec![10 * ms]),
            ]
        );
        let r = analyze(&f).unwrap();
        assert!(close(r.cpu_s, 0.035), "{r:?}");
        assert!(close(r.threads[0].run_queue_wait_s, 0.002), "{r:?}");
    }

    #[test]
    fn reused_tid_and_backwards_counters_count_from_zero() {
        let ms = 1_000_000u64;
        let mut b = encode_header(&Header {
            start_ns: 0,
            interval_ns: 10 * ms,
            cpus: 1,
            clk_tck: 100,
            kernel_tick_ns: 4_000_000,
        })
        .to_vec();
        let tick = |t: u64| TickHeader {
            monotonic_ns: t * ms,
            run_queue: 1,
            flags: 0,
        };
        encode_tick(&mut b, &tick(10), &[entry(1, 2, 8 * ms, true)]);
        // The tid was reused: flagged new.
        encode_tick(&mut b, &tick(20), &[entry(1, 2, 3 * ms, true)]);
        // Not flagged, but the counter went backwards.
        encode_tick(&mut b, &tick(30), &[entry(1, 2, ms, false)]);
        let f = SampleFile::parse(&b).unwrap();
        let ivs = intervals(&f);
        let taus: Vec<u64> = ivs.iter().flat_map(|(_, t)| t.clone()).collect();
        assert_eq!(taus, vec![8 * ms, 3 * ms, ms]);
        assert!(close(analyze(&f).unwrap().cpu_s, 0.012));
    }
}
