//! Reading a recording directory (`contend.data`): run metadata, every
//! process's lock trace and memory-map snapshots, and one clock for all.
//!
//! A recording is analysed as far as it goes: a trace that cannot be read
//! is named in [`Recording::warnings`] and the others are still used; only
//! a directory that is not a recording at all is an error.

use std::path::{Path, PathBuf};

use contend_trace::{format, CalibrationPoint, ClockFit, LockTrace};

use contend_symbolize::ProcessMaps;
use contend_trace::meta::RunMeta;

/// Errors opening a recording. Messages name the path.
#[derive(Debug, thiserror::Error)]
pub enum RecordingError {
    /// The directory does not exist or cannot be read.
    #[error("{}: {source}", path.display())]
    Io {
        /// The path.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The directory holds no `meta.json` and no `locks/` traces.
    #[error("{}: not a contend recording (no meta.json and no locks/*.ctrace); create one with `contend record -o {} -- CMD`", path.display(), path.display())]
    NotARecording {
        /// The path.
        path: PathBuf,
    },
}

/// One traced process.
#[derive(Debug)]
pub struct ProcessRecording {
    /// The decoded trace.
    pub trace: LockTrace,
    /// Its memory-map snapshots, when they could be read.
    pub maps: Option<ProcessMaps>,
}

/// A recording directory, read.
#[derive(Debug)]
pub struct Recording {
    /// The directory.
    pub dir: PathBuf,
    /// `meta.json`, when present and readable.
    pub meta: Option<RunMeta>,
    /// Traced processes, ordered by the start of their collector.
    pub processes: Vec<ProcessRecording>,
    /// Ticks → CLOCK_MONOTONIC ns, fitted through every calibration point.
    pub clock: ClockFit,
    /// Problems found, one sentence each, naming the file.
    pub warnings: Vec<String>,
}

impl Recording {
    /// Opens the recording in `dir`.
    ///
    /// Errors: `dir` missing or unreadable, or not a recording. Unreadable
    /// traces, maps and metadata become warnings.
    pub fn open(dir: &Path) -> Result<Recording, RecordingError> {
        let io = |source| RecordingError::Io {
            path: dir.to_path_buf(),
            source,
        };
        let md = std::fs::metadata(dir).map_err(io)?;
        if !md.is_dir() {
            return Err(RecordingError::NotARecording {
                path: dir.to_path_buf(),
            });
        }
        let mut warnings = Vec::new();
        let meta_path = dir.join("meta.json");
        let meta = if meta_path.exists() {
            match RunMeta::read(dir) {
                Ok(m) => {
                    if !m.complete {
                        warnings.push(format!(
                            "{}: the launcher did not finish writing it (it was killed or is still running); the exit status and end time are unknown",
                            meta_path.display()
                        ));
                    }
                    Some(m)
                }
                Err(e) => {
                    warnings.push(e.to_string());
                    None
                }
            }
        } else {
            None
        };
        // A recording may hold only MPI traces (`mpi/`, read by the MPI
        // reader, not here).
        let has_mpi = dir.join("mpi").is_dir();
        let locks_dir = dir.join("locks");
        let mut trace_paths: Vec<PathBuf> = match std::fs::read_dir(&locks_dir) {
            Ok(rd) => rd
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "ctrace"))
                .collect(),
            Err(_) if meta.is_some() || has_mpi => Vec::new(),
            Err(_) => {
                return Err(RecordingError::NotARecording {
                    path: dir.to_path_buf(),
                })
            }
        };
        if meta.is_none() && trace_paths.is_empty() && !meta_path.exists() && !has_mpi {
            return Err(RecordingError::NotARecording {
                path: dir.to_path_buf(),
            });
        }
        trace_paths.sort();
        let mut processes = Vec::new();
        for path in trace_paths {
            match LockTrace::open(&path) {
                Ok(trace) => {
                    for d in &trace.damage {
                        warnings.push(format!("{} (pid {}): {d}", path.display(), trace.pid));
                    }
                    let stem = path
                        .file_stem()
                        .map(|s| s.to_string_lossy().into_owned())
                        .unwrap_or_default();
                    let maps_path = dir.join("maps").join(format!("{stem}.maps"));
                    let maps = match ProcessMaps::from_file(&maps_path) {
                        Ok(m) => Some(m),
                        Err(e) => {
                            warnings.push(format!(
                                "{e}; call sites of pid {} are shown as addresses",
                                trace.pid
                            ));
                            None
                        }
                    };
                    processes.push(ProcessRecording { trace, maps });
                }
                Err(e) => warnings.push(format!("{e}; this process is left out")),
            }
        }
        processes.sort_by_key(|p| (p.trace.start.monotonic_ns, p.trace.pid));
        let clock = fit_clock(meta.as_ref(), &processes, &mut warnings);
        Ok(Recording {
            dir: dir.to_path_buf(),
            meta,
            processes,
            clock,
            warnings,
        })
    }

    /// Converts a trace's ticks to CLOCK_MONOTONIC ns.
    pub fn to_ns(&self, trace: &LockTrace, ticks: u64) -> u64 {
        if trace.clock == format::CLOCK_MONOTONIC {
            ticks
        } else {
            self.clock.to_ns(ticks)
        }
    }
}

/// Fits the TSC line through the launcher's points and every trace's.
fn fit_clock(
    meta: Option<&RunMeta>,
    processes: &[ProcessRecording],
    warnings: &mut Vec<String>,
) -> ClockFit {
    let tsc: Vec<&LockTrace> = processes
        .iter()
        .map(|p| &p.trace)
        .filter(|t| t.clock == format::CLOCK_TSC)
        .collect();
    if tsc.is_empty() {
        return ClockFit::identity();
    }
    let mut points: Vec<CalibrationPoint> = meta.map(|m| m.calibration.clone()).unwrap_or_default();
    for t in &tsc {
        points.extend_from_slice(&t.calibration_points);
    }
    let hz = meta
        .map(|m| m.tsc_hz)
        .filter(|&hz| hz > 0)
        .or_else(|| tsc.iter().map(|t| t.ticks_per_second).find(|&hz| hz > 0))
        .unwrap_or(0);
    match ClockFit::fit(&points, hz) {
        Some(fit) => fit,
        None => {
            warnings.push(
                "no clock calibration was recorded: times assume 1 GHz ticks and are not to be trusted"
                    .into(),
            );
            ClockFit {
                origin_ticks: 0,
                origin_ns: 0,
                ns_per_tick: 1.0,
                points: 0,
            }
        }
    }
}
