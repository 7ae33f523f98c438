//! Performance-counter values of a run as stored in `meta.json`
//! (`counters`): what `contend record` measured through
//! `perf_event_open(2)` (the work measure C(n) of Venter 2016, Sections
//! 3.1.1 and 3.2.1.1) and what it could not measure, with the reason. The
//! counters are opened and read by `contend-record`; the report side is in
//! `contend::counters`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// One counter that was measured (`meta.json` `counters.available.<name>`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(default)]
pub struct CounterValue {
    /// The count scaled for multiplexing (`contend_record::counters::scale`): events, or ns for
    /// `task_clock`.
    pub value: u64,
    /// The count as read, before scaling.
    pub raw: u64,
    /// Time the counter was enabled (the target ran, or was runnable,
    /// with the counter attached), ns, summed over inherited threads.
    pub time_enabled_ns: u64,
    /// Time the counter was actually on the PMU, ns; less than
    /// `time_enabled_ns` when the kernel multiplexed it.
    pub time_running_ns: u64,
    /// Only user mode was counted (the kernel refused kernel mode).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub user_only: bool,
}

/// A counter that could not be opened (`meta.json` `counters.missing[]`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(default)]
pub struct MissingCounter {
    /// The counter's name (`cycles`, `llc_misses`, …).
    pub name: String,
    /// Why, one sentence fragment (`contend_record::counters::reason`).
    pub reason: String,
}

/// The counters of one run, as stored in `meta.json` (`counters`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(default)]
pub struct RunCounters {
    /// Measured counters by name (`cycles`, `llc_misses`, …).
    pub available: BTreeMap<String, CounterValue>,
    /// Counters that could not be opened or never ran, with the reason.
    pub missing: Vec<MissingCounter>,
    /// The fallback work measure: user + system CPU time of the target and
    /// of the descendants it waited for, ns, from `wait4(2)`'s `rusage`
    /// (microsecond resolution). `None` when not known (attach mode).
    pub cpu_time_ns: Option<u64>,
    /// What the counts cover, one sentence (for example that threads
    /// created before an attach were not counted from their start).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
}

impl RunCounters {
    /// The work measure the model uses: `"cycles"` when cycles were
    /// counted, else `"cpu time"` ([`RunCounters::cpu_s`]).
    pub fn work_measure(&self) -> &'static str {
        if self.available.contains_key("cycles") {
            "cycles"
        } else {
            "cpu time"
        }
    }

    /// CPU time of the target, s: `task_clock` when it was counted (ns
    /// resolution, inherited threads included), else the `rusage` CPU
    /// time; `None` when neither is known.
    pub fn cpu_s(&self) -> Option<f64> {
        self.available
            .get("task_clock")
            .map(|c| c.value)
            .or(self.cpu_time_ns)
            .map(|ns| ns as f64 / 1e9)
    }
}
