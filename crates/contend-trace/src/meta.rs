//! The run description of a recording: `<recording>/meta.json`.
//!
//! The launcher (`contend record`, crate `contend-record`) writes `meta.json` twice: once before the
//! target starts, with `"complete": false`, and again after the target has
//! ended, with the end time, the exit status and the end calibration point
//! (`"complete": true`). Should the launcher itself die (killed, machine
//! reset), the first version still says what was run, where, when and with
//! which clock, so the lock traces of the target stay usable.
//!
//! Reading is lenient so that such an incomplete file, or one written by a
//! later version that added fields, still parses: every field has a default
//! and unknown fields are ignored. Fields are only ever added, never renamed
//! or given another type; an incompatible change raises
//! [`FORMAT_VERSION`], and [`RunMeta::read`] rejects versions it does not
//! know. Both writes go to a temporary file that is then renamed over
//! `meta.json`, so a reader never sees half a file.

use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::counters::RunCounters;
use crate::CalibrationPoint;
use serde::{Deserialize, Deserializer, Serialize};

/// File name of the run description inside a recording directory.
pub const META_FILE: &str = "meta.json";

/// Version of the `meta.json` layout this crate writes and reads.
pub const FORMAT_VERSION: u32 = 1;

/// Description of one recorded run, as stored in `<recording>/meta.json`.
///
/// Every field has a default (empty, zero or `None`) so that a file written
/// by a launcher that died, or by an older version, still parses.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct RunMeta {
    /// Layout version of this file ([`FORMAT_VERSION`]).
    pub format_version: u32,
    /// Version of the `contend` tool that made the recording.
    pub tool_version: String,
    /// The command as given: program name (as typed, before the `PATH`
    /// search) and its arguments.
    pub command: Vec<String>,
    /// Working directory of the launcher and the target (absolute path).
    pub cwd: String,
    /// The target's environment variables that bear on the recording: every
    /// `CONTEND_*` and `OMP_*` variable and `LD_PRELOAD`, as passed to the
    /// target (after the launcher set its own).
    pub env: BTreeMap<String, String>,
    /// Host name of the machine (`uname -n`).
    pub host: String,
    /// Kernel release (`uname -r`).
    pub kernel: String,
    /// CPU model, the first `model name` of `/proc/cpuinfo` (empty when the
    /// kernel reports none).
    pub cpu_model: String,
    /// Number of online CPUs at the start.
    pub cpus: u32,
    /// Wall-clock time when the target was started, UTC, RFC 3339 with
    /// microseconds (for example `2024-05-01T12:34:56.123456Z`). In the
    /// start record, the time just before that record was written.
    pub start_utc: String,
    /// Wall-clock time when the target had ended, UTC, RFC 3339; `None`
    /// while the run is not complete.
    pub end_utc: Option<String>,
    /// CLOCK_MONOTONIC when the target was started, ns (in the start
    /// record: just before that record was written).
    pub start_monotonic_ns: u64,
    /// CLOCK_MONOTONIC when the launcher saw the target end, ns.
    pub end_monotonic_ns: Option<u64>,
    /// Run time of the target, `end_monotonic_ns − start_monotonic_ns`, ns.
    pub wall_ns: Option<u64>,
    /// Exit code of the target when it exited normally (0–255).
    pub exit_code: Option<i32>,
    /// Number of the signal that terminated the target, when one did.
    pub signal: Option<i32>,
    /// Clock of the tick values in the lock traces: `"tsc"` (x86 time-stamp
    /// counter, only used when the CPU reports `constant_tsc` and
    /// `nonstop_tsc`) or `"monotonic"` (CLOCK_MONOTONIC ns).
    pub clock: String,
    /// TSC frequency measured by the launcher, Hz (ticks per second); 0 with
    /// the `"monotonic"` clock.
    pub tsc_hz: u64,
    /// The launcher's calibration points (TSC ticks and CLOCK_MONOTONIC ns
    /// of the same instant): the two readings of the frequency measurement
    /// before the start (about 20 ms apart) and, once complete, one taken
    /// after the target ended. Empty with the `"monotonic"` clock, whose
    /// ticks are already ns.
    #[serde(deserialize_with = "deserialize_calibration")]
    pub calibration: Vec<CalibrationPoint>,
    /// `false` in the start record written before the target started,
    /// `true` once the launcher saw the target end and wrote the end record.
    pub complete: bool,
    /// The collector records a call stack with every N-th lock operation
    /// (0 = never).
    pub stack_every: u32,
    /// Process id of the target (the process the launcher started; its
    /// descendants have traces of their own). `None` in the start record.
    pub pid: Option<u32>,
    /// Problems the launcher noticed (for example a statically linked
    /// program, whose locks cannot be traced), one sentence each.
    pub warnings: Vec<String>,
    /// Performance counters of the target (`perf_event_open`): those
    /// measured with their values and times, those missing with the
    /// reason, and the CPU time used as the work measure when there are no
    /// cycles ([`crate::counters`]). `None` in the start record and in
    /// recordings made before counters existed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub counters: Option<RunCounters>,
    /// CPUs the target was allowed to run on: its affinity mask read
    /// right after it started (after `--cpus`/`--cores` pinning, if any),
    /// sorted. Its length is the n of the service-time analysis. `None`
    /// in the start record and in older recordings.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpus_allowed: Option<Vec<u32>>,
    /// Set when the recording attached to a running process
    /// (`contend record -p PID`) instead of starting one: how and why it
    /// ended, and why locks were not traced. `None` otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attach: Option<AttachMeta>,
    /// Set when `record --start-after/--duration/--max-size` limited what
    /// was recorded: the window and the cap, and what happened to them.
    /// `None` for a recording of the whole run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limits: Option<RecordLimits>,
    /// How the service-time sampler read the threads' service time: its
    /// source, the scheduler event records it processed, and when it left
    /// the events for `schedstat`. `None` in the start record, without a
    /// sampler, and in older recordings.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sampler: Option<SamplerMeta>,
    /// What the launcher's chunk preparer did (`contend_record::chunk_prep`:
    /// the lock traces' next chunks made ready before their claims).
    /// `None` in the start record, when it did not run
    /// (`CONTEND_PREPARE_CHUNKS=0`, no lock collector), and in older
    /// recordings.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chunk_preparation: Option<ChunkPrepMeta>,
}

/// What the launcher's chunk preparer did (`contend-record`'s
/// `chunk_prep`, docs/trace-format.md "Chunks prepared by the launcher").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct ChunkPrepMeta {
    /// Lock traces it looked after.
    pub traces: u64,
    /// Chunks it prepared (file extended over them, the first 16 KiB of
    /// each in the page cache with blocks reserved), all traces.
    pub chunks_prepared: u64,
    /// Chunk claims of the target's threads that took a prepared chunk
    /// and wrote no zeros of their own (the traces' `claims_prepared`).
    pub claims_prepared: u64,
    /// CPU time of the preparer's thread, ns (the launcher's, not the
    /// target's).
    pub cpu_ns: u64,
    /// Traces it stopped preparing, each with the reason (a file system
    /// without `fallocate`, a kernel without `MADV_POPULATE_WRITE`, a full
    /// disk): their threads wrote their own zeros, as without it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// Why it stopped early, if it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// What one scheduler event record of [`SamplerMeta`] costs the target,
/// ns: the kernel writes it in the target's own context switch or
/// wake-up, so it lands in the target's run time (measured with
/// `bench/sampler_switch.sh` and `bench/sched_events_cost.sh`: 250–970 ns
/// on the KVM guest of docs/benchmarks.md, "The sampler leaves the
/// scheduler events when they cost more" and "The sampler's scheduler
/// events for the whole machine"). Used by the sampler's leave rule and
/// for the modelled cost in the report.
pub const EVENT_RECORD_COST_NS: u64 = 500;

/// What the service-time sampler did (`contend-record`'s sampler).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct SamplerMeta {
    /// `"sched-events"` (scheduler events, `schedstat` for the threads
    /// that ran before them) or `"schedstat"`.
    pub source: String,
    /// Why the scheduler events were not used, when they were refused.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_note: Option<String>,
    /// How the scheduler events were opened: `"system-wide"` (one of each
    /// per CPU, other processes' records dropped) or `"per-task"`
    /// (inherited by the target's threads, switched with each of them);
    /// `None` without events and in older recordings.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub event_scope: Option<String>,
    /// Why the scheduler events held the context switches alone (the
    /// wake-up tracepoints refused: tracefs is root-only by default): the
    /// run-queue wait then counts the waits after preemptions only. `None`
    /// with the wake-ups, without events and in older recordings.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub event_wakeups_refused: Option<String>,
    /// Scheduler event records processed.
    pub event_records: u64,
    /// Scheduler event records the kernel dropped.
    pub event_records_lost: u64,
    /// The most time the sampler thread waited for a CPU (its run delay,
    /// from its `schedstat`) between two reads of the scheduler events'
    /// rings, ns: short unless other work kept it off the CPU, which is
    /// when a ring fills and the kernel drops records. `None` without
    /// events and in older recordings.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub event_longest_run_delay_ns: Option<u64>,
    /// The shortest time the sampler planned between two reads of the
    /// rings, ns (10 ms unless the machine filled them faster, down to
    /// 2 ms). `None` without events and in older recordings.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub event_shortest_drain_ns: Option<u64>,
    /// Ticks the sampler slept through and made afterwards from the
    /// scheduler events' timestamps (`TICK_FROM_EVENTS` in
    /// `service.csamp`); 0 without events and in older recordings.
    #[serde(skip_serializing_if = "is_zero")]
    pub ticks_from_events: u64,
    /// Times a ring's watermark (a quarter of it written) woke the sampler
    /// to drain the rings before its next tick; 0 without events and in
    /// older recordings.
    #[serde(skip_serializing_if = "is_zero")]
    pub watermark_wakeups: u64,
    /// When the sampler left the scheduler events for `schedstat` because
    /// they cost the program more than reading `schedstat` would,
    /// CLOCK_MONOTONIC ns; `None` when it did not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub switched_at_ns: Option<u64>,
    /// Scheduler event records per second just before it left them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub switched_records_per_s: Option<u64>,
    /// Threads the events followed then.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub switched_threads: Option<u64>,
}

/// How `record --start-after`, `--duration` and `--max-size` limited a
/// recording ([`crate::control`]). Times are CLOCK_MONOTONIC ns, like
/// [`RunMeta::start_monotonic_ns`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct RecordLimits {
    /// `--start-after`: lock operations were recorded only from this long
    /// after the start, ns (0 = from the start).
    pub start_after_ns: u64,
    /// `--duration`: and only for this long, ns; `None` = to the end.
    pub duration_ns: Option<u64>,
    /// When recording was turned on; `None` if the run ended first (or in
    /// the start record).
    pub window_opened_ns: Option<u64>,
    /// When recording was turned off at the window's end; `None` if the
    /// run ended first.
    pub window_closed_ns: Option<u64>,
    /// `--max-size`: cap on the trace data (chunk bytes) of all processes
    /// together, bytes; `None` = no cap.
    pub max_bytes: Option<u64>,
    /// When the cap was reached and recording stopped; `None` if it was
    /// not.
    pub capped_ns: Option<u64>,
}

/// How an attach recording (`contend record -p PID`) went.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct AttachMeta {
    /// The process attached to (also [`RunMeta::pid`]).
    pub pid: u32,
    /// Why sampling ended: `"process exited"`, `"duration ended"` or
    /// `"interrupted by signal N"`; empty in the start record.
    pub ended: String,
    /// Why there are no lock traces, one sentence (the report shows it
    /// instead of the lock tables).
    pub no_lock_tracing_reason: String,
}

impl Default for RunMeta {
    fn default() -> RunMeta {
        RunMeta {
            format_version: FORMAT_VERSION,
            tool_version: String::new(),
            command: Vec::new(),
            cwd: String::new(),
            env: BTreeMap::new(),
            host: String::new(),
            kernel: String::new(),
            cpu_model: String::new(),
            cpus: 0,
            start_utc: String::new(),
            end_utc: None,
            start_monotonic_ns: 0,
            end_monotonic_ns: None,
            wall_ns: None,
            exit_code: None,
            signal: None,
            clock: String::new(),
            tsc_hz: 0,
            calibration: Vec::new(),
            complete: false,
            stack_every: 0,
            pid: None,
            warnings: Vec::new(),
            counters: None,
            cpus_allowed: None,
            attach: None,
            limits: None,
            sampler: None,
            chunk_preparation: None,
        }
    }
}

/// Deserializes calibration points (`null` reads as none);
/// `CalibrationPoint` itself only implements `Serialize`.
/// For `skip_serializing_if`: counts of 0 are left out of `meta.json`.
fn is_zero(n: &u64) -> bool {
    *n == 0
}

fn deserialize_calibration<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Vec<CalibrationPoint>, D::Error> {
    #[derive(Deserialize)]
    struct Point {
        #[serde(default)]
        ticks: u64,
        #[serde(default)]
        monotonic_ns: u64,
    }
    let points = Option::<Vec<Point>>::deserialize(d)?.unwrap_or_default();
    Ok(points
        .into_iter()
        .map(|p| CalibrationPoint {
            ticks: p.ticks,
            monotonic_ns: p.monotonic_ns,
        })
        .collect())
}

/// Errors reading or writing `meta.json`. Every message names the file.
#[derive(Debug, thiserror::Error)]
pub enum MetaError {
    /// There is no `meta.json`: the directory is not a recording, or the
    /// launcher died before writing it.
    #[error("{}: missing (not a recording, or the launcher died before starting the program)", path.display())]
    Missing {
        /// The file that was looked for.
        path: PathBuf,
    },
    /// The file exists but could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The file is not JSON, or is cut short.
    #[error("{}: not JSON (or cut short): {source}", path.display())]
    NotJson {
        /// The file.
        path: PathBuf,
        /// The parser's description, with line and column.
        source: serde_json::Error,
    },
    /// The file is JSON but its top level is not an object.
    #[error("{}: not a run description: the top level is not a JSON object", path.display())]
    NotObject {
        /// The file.
        path: PathBuf,
    },
    /// A field has the wrong type (for example a string where a number
    /// belongs).
    #[error("{}: field `{field}` has the wrong type: {source}", path.display())]
    WrongType {
        /// The file.
        path: PathBuf,
        /// The field, or `?` when it could not be singled out.
        field: String,
        /// The deserializer's description.
        source: serde_json::Error,
    },
    /// The file was written by a newer contend with an incompatible layout.
    #[error("{}: format version {found} is not supported (this contend reads version {FORMAT_VERSION} and older); use a newer contend", path.display())]
    Version {
        /// The file.
        path: PathBuf,
        /// The version found in the file.
        found: u32,
    },
}

impl RunMeta {
    /// Path of `meta.json` inside the recording directory `dir`.
    pub fn path(dir: &Path) -> PathBuf {
        dir.join(META_FILE)
    }

    /// Reads `dir/meta.json`.
    ///
    /// Missing fields take their defaults and unknown fields are ignored;
    /// errors say which file is missing, is not JSON, or which field has the
    /// wrong type.
    pub fn read(dir: &Path) -> Result<RunMeta, MetaError> {
        let path = RunMeta::path(dir);
        let bytes = fs::read(&path).map_err(|source| {
            if source.kind() == std::io::ErrorKind::NotFound {
                MetaError::Missing { path: path.clone() }
            } else {
                MetaError::Io {
                    path: path.clone(),
                    source,
                }
            }
        })?;
        RunMeta::from_json(&path, &bytes)
    }

    /// Parses the content of a `meta.json`; `path` is only used in errors.
    pub fn from_json(path: &Path, bytes: &[u8]) -> Result<RunMeta, MetaError> {
        let value: serde_json::Value =
            serde_json::from_slice(bytes).map_err(|source| MetaError::NotJson {
                path: path.to_path_buf(),
                source,
            })?;
        let serde_json::Value::Object(fields) = &value else {
            return Err(MetaError::NotObject {
                path: path.to_path_buf(),
            });
        };
        let meta = RunMeta::deserialize(&value).map_err(|source| {
            // Single out the offending field: every field has a default, so
            // an object holding only the bad one fails on its own.
            let field = fields
                .iter()
                .find(|(k, v)| {
                    let one = serde_json::Map::from_iter([((*k).clone(), (*v).clone())]);
                    RunMeta::deserialize(&serde_json::Value::Object(one)).is_err()
                })
                .map_or_else(|| "?".to_string(), |(k, _)| k.clone());
            MetaError::WrongType {
                path: path.to_path_buf(),
                field,
                source,
            }
        })?;
        if meta.format_version > FORMAT_VERSION {
            return Err(MetaError::Version {
                path: path.to_path_buf(),
                found: meta.format_version,
            });
        }
        Ok(meta)
    }

    /// Writes `dir/meta.json` atomically: the JSON goes to a temporary file
    /// in `dir`, is flushed to disk and renamed over `meta.json`, so a
    /// reader (or a crash) sees either the old or the new file, never part
    /// of one.
    pub fn write(&self, dir: &Path) -> Result<(), MetaError> {
        let path = RunMeta::path(dir);
        let tmp = dir.join(format!(".{META_FILE}.{}.tmp", std::process::id()));
        let io = |p: &Path| {
            let p = p.to_path_buf();
            move |source| MetaError::Io { path: p, source }
        };
        let mut json = serde_json::to_vec_pretty(self).expect("RunMeta always serializes");
        json.push(b'\n');
        let result = (|| {
            let mut f = fs::File::create(&tmp).map_err(io(&tmp))?;
            f.write_all(&json).map_err(io(&tmp))?;
            f.sync_all().map_err(io(&tmp))?;
            fs::rename(&tmp, &path).map_err(io(&path))
        })();
        if result.is_err() {
            let _ = fs::remove_file(&tmp);
        }
        result
    }
}

/// Formats a wall-clock time as RFC 3339 in UTC with microseconds, for
/// example `2024-05-01T12:34:56.123456Z` (the form of
/// [`RunMeta::start_utc`] and [`RunMeta::end_utc`]). Times before the epoch
/// are clamped to it.
pub fn format_utc(t: SystemTime) -> String {
    let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = d.as_secs();
    let (year, month, day) = civil_from_days((secs / 86_400) as i64);
    let rem = secs % 86_400;
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:06}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60,
        d.subsec_micros()
    )
}

/// Proleptic Gregorian (year, month, day) of a day count since 1970-01-01
/// (H. Hinnant's `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097); // day of era, [0, 146096]
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365; // [0, 399]
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100); // [0, 365], from March 1
    let mp = (5 * doy + 2) / 153; // [0, 11], March = 0
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn sample() -> RunMeta {
        RunMeta {
            tool_version: "0.1.0".into(),
            command: vec!["./a.out".into(), "-n".into(), "4".into()],
            cwd: "/tmp".into(),
            env: BTreeMap::from([("CONTEND_CLOCK".into(), "tsc".into())]),
            host: "h".into(),
            kernel: "6.1.0".into(),
            cpu_model: "cpu".into(),
            cpus: 2,
            start_utc: "2024-05-01T12:34:56.000001Z".into(),
            end_utc: Some("2024-05-01T12:34:57.000001Z".into()),
            start_monotonic_ns: 10,
            end_monotonic_ns: Some(20),
            wall_ns: Some(10),
            exit_code: Some(3),
            clock: "tsc".into(),
            tsc_hz: 2_000_000_000,
            calibration: vec![CalibrationPoint {
                ticks: 1,
                monotonic_ns: 2,
            }],
            complete: true,
            stack_every: 8,
            pid: Some(42),
            warnings: vec!["w".into()],
            ..RunMeta::default()
        }
    }

    #[test]
    fn utc_formatting() {
        let at = |s: u64, us: u64| {
            format_utc(UNIX_EPOCH + Duration::from_secs(s) + Duration::from_micros(us))
        };
        assert_eq!(at(0, 0), "1970-01-01T00:00:00.000000Z");
        assert_eq!(at(951_782_400, 7), "2000-02-29T00:00:00.000007Z");
        assert_eq!(at(1_714_566_896, 123_456), "2024-05-01T12:34:56.123456Z");
        assert_eq!(at(1_709_251_199, 999_999), "2024-02-29T23:59:59.999999Z");
        assert_eq!(at(253_402_300_799, 0), "9999-12-31T23:59:59.000000Z");
    }

    #[test]
    fn round_trip_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let m = sample();
        m.write(dir.path()).unwrap();
        assert_eq!(RunMeta::read(dir.path()).unwrap(), m);
        let names: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from(META_FILE)]);
    }

    #[test]
    fn lenient_fields() {
        let p = Path::new("x/meta.json");
        let m = RunMeta::from_json(p, br#"{"command":["ls"],"future_field":{"a":1}}"#).unwrap();
        assert_eq!(m.command, vec!["ls".to_string()]);
        assert!(!m.complete);
        assert_eq!(m.format_version, FORMAT_VERSION);
        let m = RunMeta::from_json(p, br#"{"calibration":null,"end_utc":null}"#).unwrap();
        assert!(m.calibration.is_empty());
        // Older files have no counters; partial counter objects parse.
        assert_eq!(m.counters, None);
        let m = RunMeta::from_json(
            p,
            br#"{"counters":{"missing":[{"name":"cycles","reason":"r"}],"available":{"task_clock":{"value":5}}}}"#,
        )
        .unwrap();
        let c = m.counters.unwrap();
        assert_eq!(c.missing[0].name, "cycles");
        assert_eq!(c.available["task_clock"].value, 5);
        assert_eq!(c.cpu_time_ns, None);
    }

    #[test]
    fn errors_name_file_and_field() {
        let p = Path::new("rec/meta.json");
        let e = RunMeta::from_json(p, br#"{"cpus":"two","host":"h"}"#).unwrap_err();
        let msg = e.to_string();
        assert!(msg.starts_with("rec/meta.json: "), "{msg}");
        assert!(msg.contains("`cpus`"), "{msg}");
        let e = RunMeta::from_json(p, br#"{"command":["ls"], "cw"#).unwrap_err();
        assert!(matches!(e, MetaError::NotJson { .. }), "{e}");
        let e = RunMeta::from_json(p, b"[1]").unwrap_err();
        assert!(matches!(e, MetaError::NotObject { .. }), "{e}");
        let e = RunMeta::from_json(p, br#"{"format_version":2}"#).unwrap_err();
        assert!(matches!(e, MetaError::Version { found: 2, .. }), "{e}");
        let dir = tempfile::tempdir().unwrap();
        let e = RunMeta::read(dir.path()).unwrap_err();
        assert!(matches!(e, MetaError::Missing { .. }), "{e}");
        assert!(e.to_string().contains("meta.json"));
    }
}
