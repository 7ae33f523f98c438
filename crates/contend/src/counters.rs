//! The report side of performance counters: the work measure C(n) of the
//! speed-up model (cycles, or CPU time where there are no cycles; Venter
//! 2016, Sections 3.1.1 and 3.2.1.1) and the counters measured and missing,
//! from the values `contend record` stored in `meta.json`
//! (`contend_trace::counters`).

use contend_trace::counters::RunCounters;

use crate::recording::Recording;
use crate::report::model::{CountersReport, Report};

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

/// Fills [`Report::counters`] from the recording's `meta.json`, when it
/// holds counters. Called by `contend report` beside the service analysis.
pub fn add_to_report(recording: &Recording, report: &mut Report) {
    if let Some(c) = recording.meta.as_ref().and_then(|m| m.counters.as_ref()) {
        report.counters = Some(to_report(c));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use contend_trace::counters::{CounterValue, MissingCounter};

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
