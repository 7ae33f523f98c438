//! The report of one recording: the [`RunInfo`] header, the warnings, and
//! one section per analysis that found something ([`ReportSection`]).
//!
//! What `--format json` writes is this model, a stable contract
//! (docs/json.md): keys are only ever added. All times are integer
//! nanoseconds (`*_ns`) except where a section says otherwise; shares are
//! fractions in [0, 1]; addresses are hexadecimal strings (`"0x7f3a…"`)
//! because JSON numbers above 2^53 lose precision in many readers.

use serde::ser::{Serialize, SerializeMap, Serializer};

use super::ReportSection;

/// A full report of one recording, assembled by [`crate::analyze`].
///
/// JSON: `{"run": …, "locks": …, "warnings": […], …}`: the run header,
/// then each section under its key in the order the analyses are
/// registered ([`crate::analysis::ANALYZERS`]), with `warnings` right
/// after `locks` (where it has always been; every recording has a lock
/// section, which explains itself when there are no lock events).
#[derive(Debug, Default)]
pub struct Report {
    /// The run that was recorded.
    pub run: RunInfo,
    /// Everything the reader and the analyses found wrong or missing, one
    /// sentence each.
    pub warnings: Vec<String>,
    /// One section per analysis, in registration order.
    sections: Vec<Box<dyn ReportSection>>,
}

impl Report {
    /// A report of `run` with no warnings and no sections.
    pub fn new(run: RunInfo) -> Report {
        Report {
            run,
            warnings: Vec::new(),
            sections: Vec::new(),
        }
    }

    /// Adds a section (after those already there); a section with the same
    /// key is replaced in place.
    pub fn push(&mut self, section: Box<dyn ReportSection>) {
        match self.sections.iter_mut().find(|s| s.key() == section.key()) {
            Some(old) => *old = section,
            None => self.sections.push(section),
        }
    }

    /// [`Report::push`], by value, for building reports in tests and tools.
    pub fn with(mut self, section: impl ReportSection) -> Report {
        self.push(Box::new(section));
        self
    }

    /// The section of type `S`, when the report has one.
    pub fn section<S: ReportSection>(&self) -> Option<&S> {
        self.sections.iter().find_map(|s| {
            let any: &dyn std::any::Any = s.as_ref();
            any.downcast_ref::<S>()
        })
    }

    /// The section of type `S`, mutable.
    pub fn section_mut<S: ReportSection>(&mut self) -> Option<&mut S> {
        self.sections.iter_mut().find_map(|s| {
            let any: &mut dyn std::any::Any = s.as_mut();
            any.downcast_mut::<S>()
        })
    }

    /// Every section, in registration order.
    pub fn sections(&self) -> &[Box<dyn ReportSection>] {
        &self.sections
    }
}

impl Serialize for Report {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("run", &self.run)?;
        let mut warnings_written = false;
        for s in &self.sections {
            map.serialize_entry(s.key(), s.as_ref())?;
            if s.key() == "locks" {
                map.serialize_entry("warnings", &self.warnings)?;
                warnings_written = true;
            }
        }
        if !warnings_written {
            map.serialize_entry("warnings", &self.warnings)?;
        }
        map.end()
    }
}

/// Facts about the recorded run (from `meta.json` and the traces).
#[derive(Debug, Clone, serde::Serialize, Default)]
pub struct RunInfo {
    /// Recording directory.
    pub recording: String,
    /// Command and arguments.
    pub command: Vec<String>,
    /// Exit status of the command; `None` if killed by a signal or unknown.
    pub exit_code: Option<i32>,
    /// Signal that ended the command, if any.
    pub signal: Option<i32>,
    /// Wall-clock duration of the run, ns (launcher start to end; if the
    /// launcher's end is unknown, the span of the recorded events).
    pub wall_ns: u64,
    /// Host name.
    pub host: String,
    /// CPU model.
    pub cpu_model: String,
    /// Online CPUs.
    pub cpus: u32,
    /// Start time, RFC 3339 UTC.
    pub start_utc: String,
    /// contend version that recorded.
    pub tool_version: String,
    /// Traced processes.
    pub processes: u32,
    /// Traced threads (a reused thread id counts again).
    pub threads: u32,
    /// What `record --start-after/--duration/--max-size` limited; `None`
    /// (JSON `null`) for a recording of the whole run.
    pub limits: Option<RecordingLimits>,
}

/// How a recording was limited in time and size (`record --start-after`,
/// `--duration`, `--max-size`); times are ns after the run's start.
#[derive(Debug, Clone, serde::Serialize, Default, PartialEq, Eq)]
pub struct RecordingLimits {
    /// `--start-after`, ns (0 = from the start).
    pub start_after_ns: u64,
    /// `--duration`, ns; `None` = to the end.
    pub duration_ns: Option<u64>,
    /// When lock operations began to be recorded, ns after the start;
    /// `None` if the run ended before the window opened.
    pub window_start_ns: Option<u64>,
    /// When recording stopped at the window's end, ns after the start;
    /// `None` if the run ended first.
    pub window_end_ns: Option<u64>,
    /// `--max-size`: cap on the trace data of all processes, bytes.
    pub max_bytes: Option<u64>,
    /// When the cap was reached and recording stopped, ns after the start;
    /// `None` if it was not.
    pub capped_at_ns: Option<u64>,
}

impl RecordingLimits {
    /// One phrase for the report header: which part of the run the lock
    /// operations cover.
    pub fn describe(&self) -> String {
        let s = |ns: u64| format!("{:.3} s", ns as f64 / 1e9);
        let mut parts = Vec::new();
        match (self.window_start_ns, self.window_end_ns) {
            (None, _) if self.start_after_ns > 0 || self.duration_ns.is_some() => {
                parts.push(format!(
                    "nothing: the run ended before the window opened at {} (--start-after)",
                    s(self.start_after_ns)
                ))
            }
            (Some(a), Some(b)) => parts.push(format!(
                "lock operations from {} to {} after the start only (--start-after/--duration)",
                s(a),
                s(b)
            )),
            (Some(a), None) if a > 0 => parts.push(format!(
                "lock operations from {} after the start only (--start-after)",
                s(a)
            )),
            _ => {}
        }
        if let Some(max) = self.max_bytes {
            let size = contend_trace::buildid_cache::format_size(max);
            parts.push(match self.capped_at_ns {
                Some(at) => format!(
                    "the size cap of {size} was reached at {}: later lock operations are missing (--max-size)",
                    s(at)
                ),
                None => format!("the size cap of {size} was not reached (--max-size)"),
            });
        }
        parts.join("; ")
    }
}
