//! A recording directory (`contend.data`), read once: the run description
//! `meta.json`, every process's lock trace, the memory-map snapshots, the
//! identities of the mapped objects (`modules.json`), the service-time
//! samples, the MPI rank traces, the region traces and the probe events of
//! the interference analysis, and one clock for all of them. The formats
//! are `contend_trace`'s (docs/trace-format.md).
//!
//! A recording is analysed as far as it goes. Only a directory that is not
//! a recording at all is an error; everything else stays with the part it
//! concerns: a lock trace or a maps file that cannot be read is named in
//! [`Recording::warnings`] and the other processes are still used; a
//! service-sample file or an MPI directory that cannot be read is kept as
//! the error in [`Recording::service`] or [`Recording::mpi`], for the
//! analysis of that part to report (so are the region traces and the probe
//! events, in [`Recording::regions`] and [`Recording::probes`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use contend_symbolize::{ProcessMaps, SymbolizeError};
use contend_trace::meta::RunMeta;
use contend_trace::mpi::MpiRecording;
use contend_trace::numa::{NumaFileError, NumaRecording};
use contend_trace::probes::ProbeRecording;
use contend_trace::regions::RegionRecording;
use contend_trace::service::SampleFile;
use contend_trace::{format, CalibrationPoint, ClockFit, LockTrace, TraceError};

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
    /// The directory holds no `meta.json`, no `locks/` traces and no
    /// `mpi/` traces.
    #[error("{}: not a contend recording (it holds no meta.json, locks/ or mpi/); `contend record -o NEW.data -- CMD` makes one", path.display())]
    NotARecording {
        /// The path.
        path: PathBuf,
    },
    /// The directory is a scale directory (`contend scale`), whose runs
    /// are the recordings.
    #[error("{}: a scale directory (contend scale), not one recording: `contend report {}` shows its speed-up model, and each of its runs ({}/<run>, listed in scale.json) is a recording to report or compare", path.display(), path.display(), path.display())]
    ScaleDirectory {
        /// The path.
        path: PathBuf,
    },
}

/// One lock-traced process.
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
    /// Lock-traced processes, ordered by the start of their collector.
    pub processes: Vec<ProcessRecording>,
    /// Ticks → CLOCK_MONOTONIC ns, fitted through every calibration point.
    pub clock: ClockFit,
    /// Problems of `meta.json`, the lock traces and their maps, one
    /// sentence each, naming the file.
    pub warnings: Vec<String>,
    /// The service-time samples (`service.csamp`): `None` when the
    /// recording has none (made before sampling existed, or the sampler
    /// could not start), else the samples or why they cannot be read. For
    /// a recording of `contend record -p PID` the first tick is already a
    /// baseline ([`contend_trace::service::SampleFile::count_from_first_tick`]).
    pub service: Option<Result<SampleFile, TraceError>>,
    /// The MPI rank traces (`mpi/`): `None` when the recording has no
    /// `mpi/` directory, else the traces or why they cannot be read.
    pub mpi: Option<Result<MpiRecording, TraceError>>,
    /// The NUMA data-address samples (`numa/`, `contend record --numa`):
    /// `None` when the recording has none, else the samples or why they
    /// cannot be read.
    pub numa: Option<Result<NumaRecording, NumaFileError>>,
    /// `modules.json`: the build ID (or size and modification time) of
    /// every mapped object, to check the files found at report time
    /// against ([`crate::symbols::Symbols::use_recorded_modules`]); `None`
    /// for recordings made before it existed, or when it cannot be read
    /// (then named in `warnings`).
    pub modules: Option<contend_trace::modules::ModulesFile>,
    /// The region traces (`regions/`: `contend/region.h` regions and
    /// `-finstrument-functions` hooks): `None` when the recording has no
    /// `regions/` directory, else the traces (each file that cannot be read
    /// named in [`RegionRecording::unreadable`]) or why the directory
    /// cannot be read.
    pub regions: Option<Result<RegionRecording, TraceError>>,
    /// The launcher's `perf_event_open` records (`probes/`: thread
    /// lifetimes, `--function` probes): `None` when there are none, else
    /// the records or why they cannot be read.
    pub probes: Option<Result<ProbeRecording, TraceError>>,
    /// The meter time series (`meters.cmts`, `contend record --meters`):
    /// `None` when the recording has none, else the series or why the
    /// file cannot be read.
    pub meters: Option<Result<contend_trace::meters::MetersFile, TraceError>>,
    /// The futex calls seen by the kernel's futex tracepoints (`futex/`,
    /// `contend record --futex-trace`): `None` when there are none, else
    /// the calls or why they cannot be read.
    pub futex_trace: Option<Result<contend_trace::futex_calls::FutexTraceRecording, TraceError>>,
    /// Thread names by (pid, tid) from `threads.json` (recordings of a
    /// running process, `contend record -p`, whose threads no collector
    /// names; [`contend_trace::thread_names`]), and for threads it does
    /// not name, the kernel's names the launcher recorded in `probes/`
    /// ([`ProbeRecording::thread_names`]); empty when there are none or
    /// they cannot be read (then named in `warnings`). The lock traces'
    /// own names ([`contend_trace::reader::ThreadTrace::name`]) come first
    /// wherever both exist.
    pub thread_names: BTreeMap<(u32, u32), String>,
    /// Every maps snapshot file (`maps/<stem>.maps`) by stem (`<pid>` or
    /// `<pid>.<n>`, the n-th program a process exec'd), parsed or with the
    /// reason it could not be.
    maps_files: BTreeMap<String, Result<ProcessMaps, SymbolizeError>>,
}

impl Recording {
    /// The run's start, CLOCK_MONOTONIC ns: `meta.json`'s
    /// `start_monotonic_ns`, else the earliest collector start among the
    /// lock traces; 0 when neither is known. Times "after the start"
    /// (`report --from/--to`, `run.limits`) count from here.
    pub fn start_monotonic_ns(&self) -> u64 {
        match &self.meta {
            Some(m) if m.start_monotonic_ns > 0 => m.start_monotonic_ns,
            _ => self
                .processes
                .iter()
                .map(|p| p.trace.start.monotonic_ns)
                .filter(|&t| t > 0)
                .min()
                .unwrap_or(0),
        }
    }

    /// Opens the recording in `dir` and reads all of it.
    ///
    /// Errors: `dir` missing or unreadable ([`RecordingError::Io`]), or not
    /// a recording ([`RecordingError::NotARecording`]). Unreadable parts
    /// are kept as warnings or errors of their part (see the module docs).
    pub fn open(dir: &Path) -> Result<Recording, RecordingError> {
        let io = |source| RecordingError::Io {
            path: dir.to_path_buf(),
            source,
        };
        let md = std::fs::metadata(dir).map_err(io)?;
        if md.is_dir() && dir.join(contend_trace::scale::SCALE_FILE).is_file() {
            return Err(RecordingError::ScaleDirectory {
                path: dir.to_path_buf(),
            });
        }
        if !md.is_dir() {
            return Err(RecordingError::NotARecording {
                path: dir.to_path_buf(),
            });
        }
        let mut warnings = Vec::new();
        let meta_path = dir.join(contend_trace::meta::META_FILE);
        let meta = if meta_path.exists() {
            match RunMeta::read(dir) {
                Ok(m) => {
                    if !m.complete {
                        warnings.push(format!(
                            "{}: the launcher did not finish writing it (it was killed or is still running); the exit status and end time are unknown",
                            meta_path.display()
                        ));
                    }
                    if let Some((max, at)) = m
                        .limits
                        .as_ref()
                        .and_then(|l| Some((l.max_bytes?, l.capped_ns?)))
                    {
                        warnings.push(format!(
                            "the size cap (--max-size {max} bytes) was reached {:.3} s into the run: lock operations after that were not recorded",
                            at.saturating_sub(m.start_monotonic_ns) as f64 / 1e9
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
        // A recording may hold only MPI traces (or only region traces and
        // probe records).
        let has_mpi = dir.join("mpi").is_dir()
            || dir.join(contend_trace::regions::REGIONS_DIR).is_dir()
            || dir.join(contend_trace::probes::DIR).is_dir()
            || dir.join(contend_trace::futex_calls::DIR).is_dir();
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
        let maps_files = read_maps_files(&dir.join("maps"));
        trace_paths.sort();
        let stems: Vec<String> = trace_paths
            .iter()
            .filter_map(|p| Some(p.file_stem()?.to_string_lossy().into_owned()))
            .collect();
        let mut processes = Vec::new();
        // processes that did not finish normally: one warning for all
        // (a pool of forked workers that leave through _exit() is many)
        let mut not_finished: Vec<(PathBuf, u32)> = Vec::new();
        for path in trace_paths {
            match LockTrace::open(&path) {
                Ok(trace) => {
                    let execed = replaced_by_exec(&path, &stems);
                    for d in &trace.damage {
                        if *d == contend_trace::Damage::NotFinished {
                            // An image replaced by exec never runs its
                            // exit path: that is the normal end of it.
                            if !execed {
                                not_finished.push((path.clone(), trace.pid));
                            }
                            continue;
                        }
                        warnings.push(format!("{} (pid {}): {d}", path.display(), trace.pid));
                    }
                    let stem = path
                        .file_stem()
                        .map(|s| s.to_string_lossy().into_owned())
                        .unwrap_or_default();
                    let maps = match maps_files.get(&stem) {
                        Some(Ok(m)) => Ok(m.clone()),
                        Some(Err(e)) => Err(e.to_string()),
                        None => {
                            ProcessMaps::from_file(dir.join("maps").join(format!("{stem}.maps")))
                                .map_err(|e| e.to_string())
                        }
                    };
                    let maps = match maps {
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
        warnings.extend(not_finished_warning(&not_finished));
        processes.sort_by_key(|p| (p.trace.start.monotonic_ns, p.trace.pid));
        let regions = contend_trace::regions::read_region_recording(dir);
        let region_points: Vec<CalibrationPoint> = match &regions {
            Some(Ok(r)) => r
                .traces
                .iter()
                .filter(|t| t.clock == contend_trace::region_format::CLOCK_TSC)
                .flat_map(|t| t.calibration_points.iter().copied())
                .collect(),
            _ => Vec::new(),
        };
        let clock = fit_clock(meta.as_ref(), &processes, &region_points, &mut warnings);
        let probes = contend_trace::probes::read_probe_recording(dir);
        let futex_trace = contend_trace::futex_calls::read_futex_trace(dir);
        let attached = meta.as_ref().is_some_and(|m| m.attach.is_some());
        let service = read_service(dir, attached);
        let mpi = contend_trace::read_mpi_recording(dir).transpose();
        let numa = contend_trace::numa::read_numa_recording(dir);
        let meters_path = dir.join(contend_trace::meters::FILE_NAME);
        let meters = meters_path
            .is_file()
            .then(|| contend_trace::meters::MetersFile::read(&meters_path));
        let modules = match contend_trace::modules::ModulesFile::read(dir) {
            Ok(m) => m,
            Err(e) => {
                warnings.push(format!(
                    "{e}; modules are symbolized from the files now at their paths, unchecked"
                ));
                None
            }
        };
        let mut thread_names = match contend_trace::thread_names::ThreadNamesFile::read(dir) {
            Ok(f) => f.map(|f| f.by_thread()).unwrap_or_default(),
            Err(e) => {
                warnings.push(format!("{e}; threads are named by their ids"));
                BTreeMap::new()
            }
        };
        // The kernel's names of the threads the launcher saw start
        // (`probes/`): every thread of a launched program, including
        // those no collector names (a statically linked program recorded
        // with `--futex-trace`).
        if let Some(Ok(p)) = &probes {
            for (key, name) in p.thread_names() {
                thread_names.entry(key).or_insert(name);
            }
        }
        Ok(Recording {
            dir: dir.to_path_buf(),
            meta,
            processes,
            clock,
            warnings,
            service,
            mpi,
            numa,
            modules,
            regions,
            probes,
            meters,
            futex_trace,
            thread_names,
            maps_files,
        })
    }

    /// Converts a region trace's ticks to CLOCK_MONOTONIC ns.
    pub fn region_ns(&self, trace: &contend_trace::regions::RegionTrace, ticks: u64) -> u64 {
        if trace.clock == contend_trace::region_format::CLOCK_MONOTONIC {
            ticks
        } else {
            self.clock.to_ns(ticks)
        }
    }

    /// Converts a trace's ticks to CLOCK_MONOTONIC ns.
    pub fn to_ns(&self, trace: &LockTrace, ticks: u64) -> u64 {
        if trace.clock == format::CLOCK_MONOTONIC {
            ticks
        } else {
            self.clock.to_ns(ticks)
        }
    }

    /// The kernel's name (comm) of every thread the recording names, by
    /// (pid, tid): its lock trace's, from the chunk headers (of two traces
    /// of one pid, an `exec`'s, the later), else [`Recording::thread_names`]
    /// (`threads.json`, `probes/`). For the exports' tracks and locations
    /// and the futex section's thread rows.
    pub fn named_threads(&self) -> rustc_hash::FxHashMap<(u32, u32), &str> {
        let mut names: rustc_hash::FxHashMap<(u32, u32), &str> = self
            .processes
            .iter()
            .flat_map(|p| {
                p.trace
                    .threads
                    .iter()
                    .filter_map(move |t| Some(((p.trace.pid, t.tid), t.name.as_deref()?)))
            })
            .collect();
        for (&key, name) in &self.thread_names {
            names.entry(key).or_insert(name.as_str());
        }
        names
    }

    /// The memory maps of lock-traced process `process` (index in
    /// [`Recording::processes`]), when they could be read.
    pub fn process_maps(&self, process: u32) -> Option<&ProcessMaps> {
        self.processes.get(process as usize)?.maps.as_ref()
    }

    /// The maps snapshots of the process image with file stem `stem`
    /// (`<pid>` or `<pid>.<n>`, as in `maps/<stem>.maps`), when that file
    /// was read.
    pub fn maps_for_stem(&self, stem: &str) -> Option<&ProcessMaps> {
        self.maps_files.get(stem)?.as_ref().ok()
    }

    /// Every maps file of the process `pid`, the latest exec generation
    /// first (`<pid>.<n>.maps` before `<pid>.maps`), each parsed or with
    /// the reason it could not be; empty when the recording has none (a
    /// rank of an MPI recording is usually its launcher's child exec'ing
    /// the program, so its program's maps are a later generation).
    pub fn maps_of_pid(&self, pid: u32) -> Vec<Result<&ProcessMaps, &SymbolizeError>> {
        let prefix = format!("{pid}.");
        let mut found: Vec<(u32, &Result<ProcessMaps, SymbolizeError>)> = self
            .maps_files
            .iter()
            .filter_map(|(stem, m)| {
                let generation = if *stem == pid.to_string() {
                    0
                } else {
                    stem.strip_prefix(&prefix)?.parse::<u32>().ok()?
                };
                Some((generation, m))
            })
            .collect();
        found.sort_by_key(|f| std::cmp::Reverse(f.0));
        found.into_iter().map(|(_, m)| m.as_ref()).collect()
    }

    /// The program's run time, ns: the launcher's start to end when
    /// `meta.json` has it, else `None`.
    pub fn wall_ns(&self) -> Option<u64> {
        self.meta.as_ref().and_then(|m| m.wall_ns)
    }
}

/// True when the trace at `path` (`<pid>.ctrace` or `<pid>.<n>.ctrace`)
/// has a later generation among `stems`: the process exec'd another
/// program, which the collector traced into `<pid>.<n+1>.ctrace`.
fn replaced_by_exec(path: &Path, stems: &[String]) -> bool {
    let Some(stem) = path.file_stem().map(|s| s.to_string_lossy().into_owned()) else {
        return false;
    };
    let (pid, generation) = match stem.split_once('.') {
        Some((pid, n)) => (pid, n.parse::<u32>().unwrap_or(0)),
        None => (stem.as_str(), 0),
    };
    stems.iter().any(|s| {
        s.split_once('.')
            .is_some_and(|(p, n)| p == pid && n.parse::<u32>().is_ok_and(|n| n > generation))
    })
}

/// Parses every `*.maps` file in `maps_dir`, by stem.
fn read_maps_files(maps_dir: &Path) -> BTreeMap<String, Result<ProcessMaps, SymbolizeError>> {
    let Ok(rd) = std::fs::read_dir(maps_dir) else {
        return BTreeMap::new();
    };
    rd.flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "maps"))
        .filter_map(|p| {
            let stem = p.file_stem()?.to_string_lossy().into_owned();
            Some((stem, ProcessMaps::from_file(&p)))
        })
        .collect()
}

/// Reads `service.csamp`; with `attached` (a recording of `contend record
/// -p PID`) its first tick becomes a baseline.
fn read_service(dir: &Path, attached: bool) -> Option<Result<SampleFile, TraceError>> {
    let path = dir.join(contend_trace::service::FILE_NAME);
    if !path.exists() {
        return None;
    }
    Some(SampleFile::read(&path).map(|mut file| {
        if attached {
            file.count_from_first_tick();
        }
        file
    }))
}

/// Fits the TSC line through the launcher's points and every trace's
/// (lock traces, and `extra`: the points of the TSC region traces).
fn fit_clock(
    meta: Option<&RunMeta>,
    processes: &[ProcessRecording],
    extra: &[CalibrationPoint],
    warnings: &mut Vec<String>,
) -> ClockFit {
    let tsc: Vec<&LockTrace> = processes
        .iter()
        .map(|p| &p.trace)
        .filter(|t| t.clock == format::CLOCK_TSC)
        .collect();
    if tsc.is_empty() && extra.is_empty() {
        return ClockFit::identity();
    }
    let mut points: Vec<CalibrationPoint> = meta.map(|m| m.calibration.clone()).unwrap_or_default();
    for t in &tsc {
        points.extend_from_slice(&t.calibration_points);
    }
    points.extend_from_slice(extra);
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

/// The warning for the lock traces of processes that did not finish
/// normally ([`contend_trace::Damage::NotFinished`]): as the damage says it
/// for one trace, naming its file; for several, one sentence with their
/// number, pids (the first ten) and directory, so that a pool of forked
/// workers that leave through `_exit()` makes one warning, not one each.
/// `None` for none.
fn not_finished_warning(traces: &[(PathBuf, u32)]) -> Option<String> {
    match traces {
        [] => None,
        [(path, pid)] => Some(format!(
            "{} (pid {pid}): {}",
            path.display(),
            contend_trace::Damage::NotFinished
        )),
        many => {
            let mut pids: Vec<String> = many.iter().take(10).map(|(_, p)| p.to_string()).collect();
            if many.len() > 10 {
                pids.push(format!("and {} more", many.len() - 10));
            }
            let dir = many[0]
                .0
                .parent()
                .map_or_else(String::new, |d| format!(" in {}", d.display()));
            Some(format!(
                "{} processes did not finish normally (killed, crashed or left through _exit(), as forked workers often do): pids {}; their traces{dir} end at their last complete record",
                many.len(),
                pids.join(", ")
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn processes_that_did_not_finish_make_one_warning() {
        let trace = |pid: u32| (PathBuf::from(format!("rec/locks/{pid}.ctrace")), pid);
        assert_eq!(not_finished_warning(&[]), None);
        assert_eq!(
            not_finished_warning(&[trace(7)]).as_deref(),
            Some(
                "rec/locks/7.ctrace (pid 7): the process did not finish normally (killed, crashed or left \
                 through _exit()); the trace ends at its last complete record"
            )
        );
        let many: Vec<_> = (1..=12).map(trace).collect();
        assert_eq!(
            not_finished_warning(&many).as_deref(),
            Some(
                "12 processes did not finish normally (killed, crashed or left through _exit(), as forked \
                 workers often do): pids 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, and 2 more; their traces in rec/locks \
                 end at their last complete record"
            )
        );
    }
}
