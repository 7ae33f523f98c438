//! The meters over a run (JSON `meters`): the meter time series that
//! `contend record --meters` stored in the recording (`meters.cmts`,
//! [`contend_trace::meters`]) summarised per meter, and the lock waits and
//! service time of the run **split by meter state** — the "above and
//! below threshold" first-person view of Fowler et al., *Adaptive
//! Threading Using Counter-Based Performance Introspection* (RENCI 2011,
//! seed 004, "RCRDaemon and First Person Tools": "an monitored event is
//! split into two: above, and below threshold").
//!
//! Definitions (docs/metrics.md, "Meters over the run"; all times
//! CLOCK_MONOTONIC ns, the clock of the lock traces after their fit and of
//! the service samples):
//!
//! - A meter's values v_i at t_0 < t_1 < … carry the trigger state s_i
//!   the recorder computed (docs/meters.md, "Short-term statistics and
//!   triggers": the window average against the high and low levels, with
//!   hysteresis, so a value between the levels keeps the state it had).
//!   State s_i holds over [t_i, t_{i+1}); the time before the first and
//!   after the last value is **unmetered**.
//! - The run is [start, start + wall] (`meta.json`; without it the span
//!   of the meter values). Time in a state = its overlap with the run.
//! - A lock event's wait [requested, acquired] is cut at the state
//!   changes: its wait in state S = the overlap with S's periods. A
//!   contended acquisition counts in the state at its request.
//! - Service time: in each sampling interval (t_{k−1}, t_k] the threads'
//!   service τ is taken as spread evenly over the interval, so
//!   τ × overlap / (t_k − t_{k−1}) falls in each state.
//! - Threads waiting in S = wait in S / time in S (the average number of
//!   threads waiting for a lock); CPUs busy in S = service in S / time in S.
//!
//! The lock events are those of the lock tables (mutex, rwlock and
//! spinlock events that the report's filter keeps), so the waits over all
//! states add up to `locks.summary.wait_ns` (to the nanosecond), and the
//! service over all states to `service.cpu_s`.

use contend_trace::meters::MetersFile;
use serde::Serialize;

use crate::analysis::{AnalysisOutput, Analyzer, Context};
use crate::locks::{LockEvents, Selection};

pub mod layout;

/// Trigger state code of a high meter in `meters.cmts`.
pub const STATE_HIGH: u32 = 2;
/// Trigger state code of a clear meter in `meters.cmts`.
pub const STATE_CLEAR: u32 = 1;

/// The states a split distinguishes, in their order in
/// [`MeterSplit::states`].
pub const STATES: [&str; 3] = ["high", "clear", "unmetered"];

/// The meters section of a report (JSON `meters`).
#[derive(Debug, Clone, Serialize, Default, PartialEq)]
pub struct MetersReport {
    /// The meters' interval, s.
    pub interval_s: f64,
    /// Metering began, s after the run's start (negative: before it).
    pub first_s: f64,
    /// The last values, s after the run's start.
    pub last_s: f64,
    /// Instants with values.
    pub ticks: u64,
    /// The run the split covers, s (`meta.json`'s wall time, else the
    /// span of the meter values).
    pub run_s: f64,
    /// The recorder's notes (no hardware counters, no calibration …).
    pub notes: Vec<String>,
    /// Every meter over the run: machine and node scopes first, then per
    /// CPU.
    pub meters: Vec<MeterRow>,
    /// Per meter with trigger levels (machine and node scopes): lock waits
    /// and service time by trigger state.
    pub split: Vec<MeterSplit>,
}

/// One meter over the run.
#[derive(Debug, Clone, Serialize, Default, PartialEq)]
pub struct MeterRow {
    /// Meter name (`memory_latency`, `run_queue` …; docs/meters.md).
    pub name: String,
    /// Unit (`ns`, `tasks`, `fraction`, `bytes/s`).
    pub unit: String,
    /// `machine`, `node:N`, `cpu:N`.
    pub scope: String,
    /// Average of the values, in the unit.
    pub avg: f64,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
    /// Values recorded.
    pub samples: u64,
    /// High trigger level, or null.
    pub high: Option<f64>,
    /// Low trigger level, or null.
    pub low: Option<f64>,
    /// Time in the run with the trigger set (state high), s; null without
    /// levels.
    pub time_high_s: Option<f64>,
    /// Changes of the trigger state between consecutive values.
    pub trigger_changes: u64,
}

/// Lock waits and service time of the run by the trigger state of one
/// meter.
#[derive(Debug, Clone, Serialize, Default, PartialEq)]
pub struct MeterSplit {
    /// Meter name.
    pub meter: String,
    /// Its scope (`machine`, `node:N`).
    pub scope: String,
    /// Its unit.
    pub unit: String,
    /// High trigger level.
    pub high: f64,
    /// Low trigger level.
    pub low: f64,
    /// `high`, `clear` and `unmetered`, in that order ([`STATES`]).
    pub states: Vec<StateShare>,
}

/// What happened while a meter was in one state.
#[derive(Debug, Clone, Serialize, Default, PartialEq)]
pub struct StateShare {
    /// `high`, `clear` or `unmetered`.
    pub state: String,
    /// Time of the run in this state, ns.
    pub time_ns: u64,
    /// Share of the run's time.
    pub time_share: f64,
    /// Contended acquisitions requested in this state.
    pub contended_events: u64,
    /// Lock wait time in this state, ns.
    pub wait_ns: u64,
    /// Share of the run's lock wait time (0 without waits).
    pub wait_share: f64,
    /// Average number of threads waiting for a lock in this state:
    /// `wait_ns / time_ns` (null when the state took no time).
    pub waiting_threads: Option<f64>,
    /// Service (CPU) time of the target in this state, s (null without
    /// service samples).
    pub service_s: Option<f64>,
    /// CPUs kept busy by the target in this state: `service_s / time`
    /// (null without service samples or time).
    pub cpus_busy: Option<f64>,
}

/// A period of one trigger state: [start, end) ns, state code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    /// First instant, ns.
    pub start: u64,
    /// End (exclusive), ns.
    pub end: u64,
    /// [`STATE_HIGH`] or [`STATE_CLEAR`] (other codes count as clear).
    pub state: u32,
}

/// The state periods of one meter from its values `(t_ns, state)` in time
/// order: state s_i over [t_i, t_{i+1}), neighbours of the same state
/// merged. The last value opens no period.
pub fn segments(values: &[(u64, u32)]) -> Vec<Segment> {
    let mut out: Vec<Segment> = Vec::new();
    for w in values.windows(2) {
        let ((t0, s), (t1, _)) = (w[0], w[1]);
        if t1 <= t0 {
            continue;
        }
        let s = if s == STATE_HIGH {
            STATE_HIGH
        } else {
            STATE_CLEAR
        };
        match out.last_mut() {
            Some(last) if last.state == s && last.end == t0 => last.end = t1,
            _ => out.push(Segment {
                start: t0,
                end: t1,
                state: s,
            }),
        }
    }
    out
}

/// Index in [`STATES`] of a state code.
fn slot(state: u32) -> usize {
    if state == STATE_HIGH {
        0
    } else {
        1
    }
}

/// Splits [a, b) over the periods: ns in `[high, clear, unmetered]`.
pub fn split_interval(segs: &[Segment], a: u64, b: u64) -> [u64; 3] {
    let mut out = [0u64; 3];
    if b <= a {
        return out;
    }
    // First period that ends after a.
    let mut i = segs.partition_point(|s| s.end <= a);
    let mut covered = 0;
    while i < segs.len() && segs[i].start < b {
        let s = segs[i];
        let lo = s.start.max(a);
        let hi = s.end.min(b);
        if hi > lo {
            out[slot(s.state)] += hi - lo;
            covered += hi - lo;
        }
        i += 1;
    }
    out[2] = (b - a) - covered;
    out
}

/// The [`STATES`] index of instant `t`.
pub fn state_at(segs: &[Segment], t: u64) -> usize {
    let i = segs.partition_point(|s| s.end <= t);
    match segs.get(i) {
        Some(s) if s.start <= t => slot(s.state),
        _ => 2,
    }
}

/// One lock wait: requested and acquired, ns; contended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Wait {
    /// Requested, ns.
    pub requested_ns: u64,
    /// Acquired (or the attempt ended), ns.
    pub acquired_ns: u64,
    /// Did not succeed at once.
    pub contended: bool,
}

/// One service-sampling interval: (start, end] ns and the service time
/// all threads received in it, ns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServiceInterval {
    /// Start, ns.
    pub start: u64,
    /// End, ns.
    pub end: u64,
    /// Service time received, ns (all threads).
    pub service_ns: u64,
}

/// Splits a run `[run.0, run.1)` and its waits and service time by the
/// periods `segs` of one meter (see the module documentation for the
/// definitions). `service` is `None` when the recording has no service
/// samples. Returns the shares in [`STATES`] order.
pub fn split_run(
    segs: &[Segment],
    run: (u64, u64),
    waits: &[Wait],
    service: Option<&[ServiceInterval]>,
) -> Vec<StateShare> {
    let time = split_interval(segs, run.0, run.1);
    let mut wait = [0u64; 3];
    let mut contended = [0u64; 3];
    for w in waits {
        let parts = split_interval(segs, w.requested_ns, w.acquired_ns);
        for k in 0..3 {
            wait[k] += parts[k];
        }
        if w.contended {
            contended[state_at(segs, w.requested_ns)] += 1;
        }
    }
    let serv = service.map(|ivs| {
        let mut s = [0f64; 3];
        for iv in ivs {
            if iv.end <= iv.start {
                // An interval of no length (a final tick at the same
                // instant): its service counts at its end.
                s[state_at(segs, iv.end)] += iv.service_ns as f64;
                continue;
            }
            let parts = split_interval(segs, iv.start, iv.end);
            let len = (iv.end - iv.start) as f64;
            for k in 0..3 {
                s[k] += iv.service_ns as f64 * parts[k] as f64 / len;
            }
        }
        s
    });
    let run_ns = run.1.saturating_sub(run.0);
    let total_wait: u64 = wait.iter().sum();
    (0..3)
        .map(|k| {
            let t = time[k];
            let service_s = serv.map(|s| s[k] / 1e9);
            StateShare {
                state: STATES[k].to_string(),
                time_ns: t,
                time_share: if run_ns > 0 {
                    t as f64 / run_ns as f64
                } else {
                    0.0
                },
                contended_events: contended[k],
                wait_ns: wait[k],
                wait_share: if total_wait > 0 {
                    wait[k] as f64 / total_wait as f64
                } else {
                    0.0
                },
                waiting_threads: (t > 0).then(|| wait[k] as f64 / t as f64),
                service_s,
                cpus_busy: service_s.filter(|_| t > 0).map(|s| s * 1e9 / t as f64),
            }
        })
        .collect()
}

/// The meters section from a meters file, the run `[run.0, run.1)` (None:
/// the span of the values), the run's start (for relative times), the
/// lock waits and the service intervals.
pub fn report_of(
    file: &MetersFile,
    run: Option<(u64, u64)>,
    run_start: u64,
    waits: &[Wait],
    service: Option<&[ServiceInterval]>,
) -> MetersReport {
    let first = file.ticks.iter().map(|t| t.t_ns).min().unwrap_or(0);
    let last = file.ticks.iter().map(|t| t.t_ns).max().unwrap_or(0);
    let run = run.unwrap_or((first, last));
    let rel = |t: u64| (t as f64 - run_start as f64) / 1e9;
    let mut meters = Vec::new();
    let mut split = Vec::new();
    for c in &file.columns {
        let values: Vec<(u64, u32, f64)> = file
            .ticks
            .iter()
            .flat_map(|t| {
                t.values
                    .iter()
                    .filter(|v| v.column == c.index && !v.value.is_nan())
                    .map(move |v| (t.t_ns, v.state, v.value))
            })
            .collect();
        if values.is_empty() {
            continue;
        }
        let states: Vec<(u64, u32)> = values.iter().map(|&(t, s, _)| (t, s)).collect();
        let segs = segments(&states);
        let has_levels = c.high.is_some() && c.low.is_some();
        let n = values.len() as f64;
        meters.push(MeterRow {
            name: c.name.clone(),
            unit: c.unit.clone(),
            scope: c.scope.clone(),
            avg: values.iter().map(|v| v.2).sum::<f64>() / n,
            min: values.iter().map(|v| v.2).fold(f64::INFINITY, f64::min),
            max: values.iter().map(|v| v.2).fold(f64::NEG_INFINITY, f64::max),
            samples: values.len() as u64,
            high: c.high,
            low: c.low,
            time_high_s: has_levels.then(|| split_interval(&segs, run.0, run.1)[0] as f64 / 1e9),
            trigger_changes: states.windows(2).filter(|w| w[0].1 != w[1].1).count() as u64,
        });
        if let (Some(high), Some(low)) = (c.high, c.low) {
            if !c.scope.starts_with("cpu:") {
                split.push(MeterSplit {
                    meter: c.name.clone(),
                    scope: c.scope.clone(),
                    unit: c.unit.clone(),
                    high,
                    low,
                    states: split_run(&segs, run, waits, service),
                });
            }
        }
    }
    // Machine and node scopes first, then per CPU; declaration order within.
    meters.sort_by_key(|m| m.scope.starts_with("cpu:"));
    MetersReport {
        interval_s: file.interval_ns as f64 / 1e9,
        first_s: rel(first),
        last_s: rel(last),
        ticks: file.ticks.len() as u64,
        run_s: run.1.saturating_sub(run.0) as f64 / 1e9,
        notes: file.notes.clone(),
        meters,
        split,
    }
}

/// The meters analysis (registered in [`crate::analysis::ANALYZERS`]):
/// absent when the recording has no `meters.cmts`; an unreadable one is a
/// warning. Runs after the lock and service analyses and reads the lock
/// events they kept.
pub struct MetersAnalyzer;

impl Analyzer for MetersAnalyzer {
    fn name(&self) -> &'static str {
        "meters"
    }

    fn analyze(&self, cx: &Context<'_>) -> Option<AnalysisOutput> {
        let file = match cx.recording.meters.as_ref()? {
            Ok(f) => f,
            Err(e) => {
                return Some(AnalysisOutput {
                    section: None,
                    warnings: vec![format!("{e}; the meters are not shown")],
                    events: None,
                    span_ns: None,
                })
            }
        };
        let mut warnings = file.damage.clone();
        if file.ticks.is_empty() {
            warnings.push(format!(
                "{}: holds no meter value (the run ended before the first interval)",
                file.path.display()
            ));
            return Some(AnalysisOutput {
                section: None,
                warnings,
                events: None,
                span_ns: None,
            });
        }
        let start = cx.recording.start_monotonic_ns();
        let run = cx
            .recording
            .wall_ns()
            .filter(|_| start > 0)
            .map(|w| (start, start + w));
        let waits: Vec<Wait> = match cx.earlier::<LockEvents>() {
            Some(ev) => {
                let sel = Selection::new(&cx.options.locks, &ev.set, &ev.critical_path, &ev.names);
                ev.set
                    .events
                    .iter()
                    .enumerate()
                    .filter(|&(i, e)| e.is_lock() && sel.keeps(i, e))
                    .map(|(_, e)| Wait {
                        requested_ns: e.requested_ns(),
                        acquired_ns: e.acquired_ns(),
                        contended: e.contended(),
                    })
                    .collect()
            }
            None => Vec::new(),
        };
        let service: Option<Vec<ServiceInterval>> = match &cx.recording.service {
            Some(Ok(f)) => {
                let mut prev = f.header.start_ns;
                Some(
                    crate::service::intervals(f)
                        .into_iter()
                        .zip(&f.ticks)
                        .map(|((_, taus), tick)| {
                            let end = tick.header.monotonic_ns;
                            let iv = ServiceInterval {
                                start: prev.min(end),
                                end,
                                service_ns: taus.iter().sum(),
                            };
                            prev = prev.max(end);
                            iv
                        })
                        .collect(),
                )
            }
            _ => None,
        };
        let report = report_of(file, run, start, &waits, service.as_deref());
        Some(AnalysisOutput {
            section: Some(Box::new(report)),
            warnings,
            events: None,
            span_ns: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use contend_trace::meters::{Column, Tick, Value};

    /// Values at 0, 100, 200, 300, 400 ns: clear, clear, high, high, clear.
    /// Periods: [0, 200) clear, [200, 400) high; the value at 400 opens
    /// none.
    fn series() -> Vec<(u64, u32)> {
        vec![(0, 1), (100, 1), (200, 2), (300, 2), (400, 1)]
    }

    #[test]
    fn periods_merge_and_the_last_value_opens_none() {
        assert_eq!(
            segments(&series()),
            vec![
                Segment {
                    start: 0,
                    end: 200,
                    state: STATE_CLEAR
                },
                Segment {
                    start: 200,
                    end: 400,
                    state: STATE_HIGH
                },
            ]
        );
    }

    #[test]
    fn intervals_are_cut_at_state_changes() {
        let s = segments(&series());
        // [150, 250): 50 clear + 50 high.
        assert_eq!(split_interval(&s, 150, 250), [50, 50, 0]);
        // [350, 450): 50 high, 50 after the last value (unmetered).
        assert_eq!(split_interval(&s, 350, 450), [50, 0, 50]);
        // Before the series: all unmetered.
        assert_eq!(split_interval(&s, 0, 0), [0, 0, 0]);
        assert_eq!(state_at(&s, 199), 1);
        assert_eq!(state_at(&s, 200), 0);
        assert_eq!(state_at(&s, 400), 2);
    }

    #[test]
    fn waits_and_service_split_by_hand() {
        let s = segments(&series());
        // Run [0, 500): high 200 (200..400), clear 200 (0..200),
        // unmetered 100 (400..500).
        let waits = [
            // 150..250: clear 50, high 50; requested in clear.
            Wait {
                requested_ns: 150,
                acquired_ns: 250,
                contended: true,
            },
            // 350..450: high 50, unmetered 50; requested in high.
            Wait {
                requested_ns: 350,
                acquired_ns: 450,
                contended: true,
            },
            // 210..230: high 20, not contended (an uncontended event's
            // wait still counts, as in locks.summary.wait_ns).
            Wait {
                requested_ns: 210,
                acquired_ns: 230,
                contended: false,
            },
        ];
        // Service: (100, 300] 100 ns → clear 50, high 50; (300, 500] 40 ns
        // → high 100/200 × 40 = 20, unmetered 20.
        let service = [
            ServiceInterval {
                start: 100,
                end: 300,
                service_ns: 100,
            },
            ServiceInterval {
                start: 300,
                end: 500,
                service_ns: 40,
            },
        ];
        let st = split_run(&s, (0, 500), &waits, Some(&service));
        let high = &st[0];
        let clear = &st[1];
        let un = &st[2];
        assert_eq!((high.time_ns, clear.time_ns, un.time_ns), (200, 200, 100));
        assert_eq!((high.time_share, clear.time_share), (0.4, 0.4));
        // high: 50 + 50 + 20 = 120; clear: 50; unmetered: 50. Total 220.
        assert_eq!((high.wait_ns, clear.wait_ns, un.wait_ns), (120, 50, 50));
        assert!((high.wait_share - 120.0 / 220.0).abs() < 1e-12);
        assert_eq!(
            (
                high.contended_events,
                clear.contended_events,
                un.contended_events
            ),
            (1, 1, 0)
        );
        // Threads waiting: 120/200 = 0.6 high, 50/200 = 0.25 clear.
        assert_eq!(high.waiting_threads, Some(0.6));
        assert_eq!(clear.waiting_threads, Some(0.25));
        // Service: high 50 + 20 = 70 ns, clear 50, unmetered 20.
        let ns = |x: &StateShare| (x.service_s.unwrap() * 1e9).round() as u64;
        assert_eq!((ns(high), ns(clear), ns(un)), (70, 50, 20));
        // CPUs busy high: 70 / 200 = 0.35.
        assert!((high.cpus_busy.unwrap() - 0.35).abs() < 1e-12);
        // Without service samples the service fields are null.
        let st = split_run(&s, (0, 500), &waits, None);
        assert_eq!(st[0].service_s, None);
        assert_eq!(st[0].cpus_busy, None);
    }

    #[test]
    fn report_summarises_each_meter_and_splits_those_with_levels() {
        let col = |index: u32, name: &str, scope: &str, levels: Option<(f64, f64)>| Column {
            index,
            name: name.into(),
            unit: "u".into(),
            scope: scope.into(),
            label: String::new(),
            high: levels.map(|l| l.0),
            low: levels.map(|l| l.1),
        };
        // Column 0 run_queue (machine, levels 3/2), column 1 per CPU with
        // levels (summarised, not split), column 2 without levels.
        let v = |column, state, value| Value {
            column,
            state,
            value,
        };
        let file = MetersFile {
            start_ns: 1000,
            interval_ns: 100,
            columns: vec![
                col(1, "run_queue", "cpu:0", Some((3.0, 2.0))),
                col(0, "run_queue", "machine", Some((3.0, 2.0))),
                col(2, "daemon_cpu", "machine", None),
            ],
            ticks: vec![
                Tick {
                    t_ns: 1000,
                    values: vec![v(0, 1, 1.0), v(1, 1, 0.0), v(2, 0, 0.5)],
                },
                Tick {
                    t_ns: 1100,
                    values: vec![v(0, 2, 5.0), v(1, 1, 1.0)],
                },
                Tick {
                    t_ns: 1300,
                    values: vec![v(0, 1, 0.0), v(1, 1, 2.0)],
                },
            ],
            ..MetersFile::default()
        };
        // Run [1000, 1400): run_queue clear [1000, 1100), high [1100,
        // 1300), unmetered [1300, 1400).
        let r = report_of(&file, Some((1000, 1400)), 1000, &[], None);
        assert_eq!(r.ticks, 3);
        assert_eq!(r.first_s, 0.0);
        assert!((r.last_s - 300e-9).abs() < 1e-15);
        // Machine scopes first (declaration order), then per CPU.
        let names: Vec<_> = r.meters.iter().map(|m| m.scope.as_str()).collect();
        assert_eq!(names, ["machine", "machine", "cpu:0"]);
        let rq = &r.meters[0];
        assert_eq!((rq.avg, rq.min, rq.max, rq.samples), (2.0, 0.0, 5.0, 3));
        assert!((rq.time_high_s.unwrap() - 200e-9).abs() < 1e-15);
        assert_eq!(rq.trigger_changes, 2);
        assert_eq!(r.meters[1].time_high_s, None);
        assert_eq!(r.split.len(), 1);
        let s = &r.split[0];
        assert_eq!(
            (s.meter.as_str(), s.scope.as_str()),
            ("run_queue", "machine")
        );
        let t: Vec<u64> = s.states.iter().map(|x| x.time_ns).collect();
        assert_eq!(t, [200, 100, 100]);
    }
}
