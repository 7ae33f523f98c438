//! The report side of performance counters: the work measure C(n) of the
//! speed-up model (cycles, or CPU time where there are no cycles; Venter
//! 2016, Sections 3.1.1 and 3.2.1.1) and the counters measured and missing,
//! from the values `contend record` stored in `meta.json`
//! (`contend_trace::counters`).

use std::collections::BTreeMap;

use contend_trace::counters::{CounterValue, MissingCounter, RunCounters};
use serde::Serialize;

use crate::analysis::{AnalysisOutput, Analyzer, Context};

pub mod layout;

/// Performance counters of one recording and the work measure C(n) of the
/// speed-up model (docs/metrics.md, "Counters").
#[derive(Debug, Clone, Serialize, Default, PartialEq)]
pub struct CountersReport {
    /// The work measure: `"cycles"` when cycles were counted, else
    /// `"cpu time"` (the target's CPU time, the fallback on machines
    /// without a hardware PMU).
    pub work_measure: String,
    /// Why the fallback was used, e.g. `"fallback: no hardware PMU"`;
    /// empty with cycles.
    pub work_measure_note: String,
    /// The work C: cycles (a count) or CPU time (s), as `work_measure`
    /// says; `None` when neither is known.
    pub work: Option<f64>,
    /// CPU time of the target, s: the `task_clock` counter where it was
    /// measured, else `wait4` resource usage; `None` when neither is known.
    pub cpu_s: Option<f64>,
    /// Measured counters by name (`cycles`, `instructions`,
    /// `llc_references`, `llc_misses`, `stalled_cycles_backend`,
    /// `task_clock`): scaled value, raw count, time enabled and running,
    /// ns.
    pub available: BTreeMap<String, CounterValue>,
    /// Counters that could not be measured, with the reason.
    pub missing: Vec<MissingCounter>,
    /// What the counts cover when not the whole run of the target (attach
    /// mode), one sentence; `None` otherwise.
    pub scope: Option<String>,
}

/// The report part of a run's counters: the work measure (cycles, or CPU
/// time with the reason for the fallback), the CPU time, and the counters
/// measured and missing.
pub fn to_report(c: &RunCounters) -> CountersReport {
    let cpu_s = c.cpu_s();
    let (work, note) = match c.available.get("cycles") {
        Some(cycles) => (Some(cycles.value as f64), String::new()),
        None => {
            let why = c.missing.iter().find(|m| m.name == "cycles");
            let note = match why {
                Some(m) if m.reason.contains("no hardware PMU") => {
                    "fallback: no hardware PMU".to_string()
                }
                Some(m) => format!("fallback: cycles {}", m.reason),
                None => "fallback: cycles were not measured".to_string(),
            };
            (cpu_s, note)
        }
    };
    CountersReport {
        work_measure: c.work_measure().to_string(),
        work_measure_note: note,
        work,
        cpu_s,
        available: c.available.clone(),
        missing: c.missing.clone(),
        scope: c.scope.clone(),
    }
}

/// The counters of a recording (registered in
/// [`crate::analysis::ANALYZERS`]): from `meta.json`, absent for
/// recordings made before counters existed.
pub struct CountersAnalyzer;

impl Analyzer for CountersAnalyzer {
    fn name(&self) -> &'static str {
        "counters"
    }

    fn analyze(&self, cx: &Context<'_>) -> Option<AnalysisOutput> {
        let c = cx.recording.meta.as_ref()?.counters.as_ref()?;
        Some(AnalysisOutput::new(to_report(c)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn work_measure_falls_back_to_cpu_time() {
        let mut c = RunCounters {
            cpu_time_ns: Some(2_000_000_000),
            ..RunCounters::default()
        };
        assert_eq!(c.work_measure(), "cpu time");
        assert_eq!(c.cpu_s(), Some(2.0));
        c.available.insert(
            "task_clock".into(),
            CounterValue {
                value: 1_500_000_000,
                ..CounterValue::default()
            },
        );
        assert_eq!(c.cpu_s(), Some(1.5));
        c.missing.push(MissingCounter {
            name: "cycles".into(),
            reason: "not supported: no hardware PMU or no such event (ENOENT)".into(),
        });
        let r = to_report(&c);
        assert_eq!(r.work_measure, "cpu time");
        assert_eq!(r.work_measure_note, "fallback: no hardware PMU");
        assert_eq!(r.work, Some(1.5));
        c.missing.clear();
        c.available.insert(
            "cycles".into(),
            CounterValue {
                value: 7,
                ..CounterValue::default()
            },
        );
        assert_eq!(c.work_measure(), "cycles");
        let r = to_report(&c);
        assert_eq!((r.work, r.work_measure_note.as_str()), (Some(7.0), ""));
    }
}
