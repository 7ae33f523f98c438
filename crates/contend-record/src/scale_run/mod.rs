//! The experiment runner: `contend scale --threads 2,4 [--repeat 5] -o DIR
//! -- CMD … {threads} …`.
//!
//! The speed-up loss model (Venter 2016, Sections 3.1.1 and 3.2.2.1,
//! Eq. 3.1–3.8) compares a program run with m threads on one core (its
//! work C(1) and time T(1) without contention between cores) with the same
//! program on n = m cores. [`run_scale`] makes those runs:
//!
//! - For each thread count m of [`ScaleOptions::threads`], `{threads}` is
//!   replaced by m wherever it occurs in the command's words (also inside a
//!   word, `-T{threads}` → `-T4`), and `OMP_NUM_THREADS=m` is set.
//! - The program is recorded with [`crate::launch::record`] (lock traces,
//!   service-time samples, counters) pinned to n = 1 core and to n = m
//!   cores. When m exceeds the CPUs available, n = all of them (with a
//!   warning). On a machine with more than one socket and m larger than a
//!   socket's cores c, it also runs on n = c cores (one socket), the
//!   thesis's NUMA comparison (Eq. 3.7).
//! - CPUs are taken in a fixed order ([`Topology::order`]): one socket
//!   before the next, within a socket one CPU per physical core before
//!   hyper-thread siblings. n cores = the first n CPUs in that order;
//!   1 core = the first.
//! - Every configuration is repeated [`ScaleOptions::repeat`] times, and
//!   repeats are interleaved (`for repeat { for m { for n { … } } }`) so
//!   that drift of the machine (other load, thermal state) spreads evenly
//!   over configurations instead of biasing one.
//! - With [`ScaleOptions::stress_threads`] = K, every run is followed by a
//!   twin run with the memory contention generator ([`crate::stress`])
//!   streaming beside it (Section 4.1.4, Tables 4.6/4.7). Its K threads go
//!   on CPUs the target does not use; where fewer than K are free, the
//!   rest share the target's CPUs (taken from the last), and the run's
//!   warnings say so: then the target also loses CPU time to the generator,
//!   which the thesis's MCG avoided by having cores to spare.
//!
//! Each run is a recording directory `m{m}-n{n}-r{repeat}` (`-stress` for
//! the twin) inside the scale directory, listed in `scale.json`
//! ([`ScaleManifest`]), which is rewritten after every run.
//! By default the program's standard output and error go to `stdout.txt`
//! and `stderr.txt` in its run directory and its standard input is
//! `/dev/null` (repeated runs must not fight over the terminal, and the
//! progress display stays readable); [`ScaleOptions::show_output`] passes
//! the launcher's through instead.
//!
//! A run that fails (non-zero exit, killed by a signal) is listed with its
//! status and the experiment goes on; a command that cannot be started at
//! all (not found, not executable, `exec` failed) stops the experiment with
//! an error, since every later run would fail the same way. `SIGINT`,
//! `SIGTERM` or `SIGHUP` (Ctrl-C) interrupt the current run (the program
//! gets the signal, as any foreground program does) and stop the
//! experiment: no further run is made, the manifest lists the runs made,
//! the interrupted one included, and says why it stopped.
//! During a run the recorder forwards those signals to the program, so a
//! run that ends by one of them (or exits with 128 + one of them, as a shell
//! does when it is interrupted), or during which the launcher received one
//! ([`crate::signals::stop_signals_seen`]; the program may catch it and exit
//! 0), is taken as the user's stop too.

use std::fs::{self, File};
use std::io;

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::launch::{self as record, RecordError, RecordOptions};
use crate::stress::{MemoryStress, StressError, StressOptions};
use contend_trace::scale::{ScaleError, ScaleManifest, ScaleRun, SCALE_FILE, SCALE_FORMAT_VERSION};

/// The placeholder replaced by the thread count in the command's words.
pub const THREADS_PLACEHOLDER: &str = "{threads}";

/// Default scale directory.
pub const DEFAULT_SCALE_OUTPUT: &str = "contend.scale";

/// Default repeats per configuration.
pub const DEFAULT_REPEAT: u32 = 5;

/// What to run. The command-line tool fills this from its flags.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScaleOptions {
    /// Scale directory to create (default `contend.scale`).
    pub output: PathBuf,
    /// Replace `output` if it is a scale directory (holds `scale.json`) or
    /// an empty directory; anything else is never removed.
    pub force: bool,
    /// Thread counts m, in the order given (each at least 1, no repeats).
    pub threads: Vec<u32>,
    /// Runs per (m, n) configuration (at least 1).
    pub repeat: u32,
    /// The command template; `{threads}` is replaced by m.
    pub command: Vec<String>,
    /// Service-time sampling interval of every run
    /// ([`RecordOptions::interval`]).
    pub interval: Duration,
    /// Threads K of the memory contention generator for the twin runs;
    /// `None` = no stress runs.
    pub stress_threads: Option<u32>,
    /// Buffer per generator thread, bytes; `None` =
    /// [`stress::default_buffer_bytes`](crate::stress::default_buffer_bytes).
    pub stress_buffer_bytes: Option<u64>,
    /// Let the program write to the launcher's standard output and error
    /// (and read its standard input) instead of `stdout.txt`/`stderr.txt`
    /// in the run directory.
    pub show_output: bool,
}

impl Default for ScaleOptions {
    fn default() -> ScaleOptions {
        ScaleOptions {
            output: PathBuf::from(DEFAULT_SCALE_OUTPUT),
            force: false,
            threads: Vec::new(),
            repeat: DEFAULT_REPEAT,
            command: Vec::new(),
            interval: record::DEFAULT_INTERVAL,
            stress_threads: None,
            stress_buffer_bytes: None,
            show_output: false,
        }
    }
}

/// Errors of [`run_scale`]; every message names the flag, path or run.
#[derive(Debug, thiserror::Error)]
pub enum ScaleRunError {
    /// No thread count was given.
    #[error("--threads: give at least one thread count, e.g. --threads 2,4,8")]
    NoThreads,
    /// A thread count is 0.
    #[error("--threads: a thread count must be at least 1 (got 0)")]
    ZeroThreads,
    /// A thread count appears twice.
    #[error("--threads: thread count {0} is given twice")]
    DuplicateThreads(u32),
    /// `repeat` is 0.
    #[error("--repeat: at least one run per configuration is needed (got 0)")]
    ZeroRepeat,
    /// `stress_threads` is `Some(0)`.
    #[error("--stress: the memory contention generator needs at least one thread (got 0)")]
    ZeroStress,
    /// No command was given.
    #[error("no command to run: give it after `--`, e.g. contend scale --threads 2,4 -- ./app -t {{threads}}")]
    EmptyCommand,
    /// The output exists and `force` was not given.
    #[error("{}: already exists (choose another directory with -o, or --force to replace a scale directory)", path.display())]
    OutputExists {
        /// The output path.
        path: PathBuf,
    },
    /// The output exists and is neither a scale directory nor empty, so
    /// even `force` does not remove it.
    #[error("{}: exists and is not a scale directory (no scale.json in it); not replacing it", path.display())]
    NotAScaleDir {
        /// The output path.
        path: PathBuf,
    },
    /// Creating, moving or removing a file failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The path concerned.
        path: PathBuf,
        /// The underlying error.
        source: io::Error,
    },
    /// Writing `scale.json` failed.
    #[error(transparent)]
    Manifest(#[from] ScaleError),
    /// A run could not be made at all (the command cannot be started, the
    /// CPUs cannot be used, …). The experiment stops; runs made before are
    /// in the manifest.
    #[error("run {run}: {source}")]
    Record {
        /// The run directory name.
        run: String,
        /// Why it could not be made.
        source: RecordError,
    },
    /// The memory contention generator could not be started.
    #[error("run {run}: memory contention generator: {source}")]
    Stress {
        /// The run directory name.
        run: String,
        /// Why it could not be started.
        source: StressError,
    },
}

impl ScaleRunError {
    /// The status a shell would use when the command could not be run
    /// (127 not found, 126 not executable), as
    /// [`RecordError::shell_status`]; `None` otherwise.
    pub fn shell_status(&self) -> Option<i32> {
        match self {
            ScaleRunError::Record { source, .. } => source.shell_status(),
            _ => None,
        }
    }
}

mod plan;
mod stdio;

use plan::{check_threads, sorted};
pub use plan::{
    parse_thread_list, plan, stress_placement, substitute, PlannedRun, ThreadListError, Topology,
};

/// Catches `SIGINT`, `SIGTERM` and `SIGHUP` so that they stop an
/// experiment (or `contend stress memory`) cleanly instead of killing the
/// launcher: the one catcher of the crate ([`crate::signals`]), also used by attach
/// mode. While the recorder runs a program, its own handler (which forwards
/// the signals to the program) replaces this one and restores it
/// afterwards.
pub use crate::signals::Interrupt;
use stdio::{EnvGuard, SavedStdio};

/// Hears what the runner does; every method has an empty default. The
/// command-line tool draws its progress bar from these.
pub trait ScaleProgress {
    /// The experiment is about to start with these runs.
    fn begin(&self, _runs: &[PlannedRun]) {}
    /// Run `index` (0-based, of the planned runs) starts.
    fn run_started(&self, _index: usize, _run: &PlannedRun) {}
    /// Run `index` ended (whatever its status).
    fn run_finished(&self, _index: usize, _run: &ScaleRun) {}
    /// Something the user should know, one sentence; each distinct text is
    /// told once.
    fn warning(&self, _text: &str) {}
}

/// A [`ScaleProgress`] that ignores everything.
pub struct NoScaleProgress;

impl ScaleProgress for NoScaleProgress {}

/// What an experiment left.
#[derive(Debug, Clone, PartialEq)]
pub struct ScaleOutcome {
    /// The scale directory.
    pub dir: PathBuf,
    /// Runs planned.
    pub planned: usize,
    /// Runs made (listed in the manifest).
    pub made: usize,
    /// Runs that exited with a non-zero status or were killed by a signal.
    pub failed: usize,
    /// Why the experiment stopped before all runs were made (the user
    /// interrupted it); `None` when it completed.
    pub stopped: Option<String>,
}

/// Runs the experiment described by `opts` (see the [module
/// documentation](self)); `progress` hears each run.
///
/// Errors: bad options and an unusable output path before anything runs;
/// [`ScaleRunError::Record`] or [`ScaleRunError::Stress`] when a run cannot
/// be made at all (the manifest then lists the runs made before and says
/// why it stopped; when it was the first run, the scale directory is
/// removed again); I/O errors writing the manifest.
pub fn run_scale(
    opts: &ScaleOptions,
    progress: &dyn ScaleProgress,
) -> Result<ScaleOutcome, ScaleRunError> {
    check_threads(&opts.threads)?;
    if opts.repeat == 0 {
        return Err(ScaleRunError::ZeroRepeat);
    }
    if opts.stress_threads == Some(0) {
        return Err(ScaleRunError::ZeroStress);
    }
    if opts.command.is_empty() || opts.command[0].is_empty() {
        return Err(ScaleRunError::EmptyCommand);
    }
    // A typo in the program name costs nothing: check before creating the
    // directory (every m; `{threads}` may be in the program's name).
    let cwd = std::env::current_dir().map_err(|source| ScaleRunError::Io {
        path: PathBuf::from("."),
        source,
    })?;
    for &m in &opts.threads {
        let cmd = substitute(&opts.command, m);
        let dir = format!("m{m}");
        crate::executable::resolve_command(&cmd[0], std::env::var_os("PATH").as_deref(), &cwd)
            .map_err(|source| ScaleRunError::Record { run: dir, source })?;
    }
    let topo = Topology::read();
    let (runs, plan_warnings) = plan(opts, &topo);
    prepare_scale_dir(&opts.output, opts.force)?;
    let dir = &opts.output;

    let mut manifest = ScaleManifest {
        format_version: SCALE_FORMAT_VERSION,
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        command: opts.command.clone(),
        threads: opts.threads.clone(),
        repeat: opts.repeat,
        stress_threads: opts.stress_threads,
        cpus_available: sorted(&topo.order),
        sockets: topo.sockets,
        cores_per_socket: topo.cores_per_socket,
        started_unix_s: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64()),
        complete: false,
        runs: Vec::new(),
        planned_runs: runs.len() as u32,
        stopped: None,
        warnings: plan_warnings.clone(),
    };
    manifest.write(dir)?;
    let mut told = std::collections::HashSet::new();
    let mut tell = |text: &str| {
        if told.insert(text.to_string()) {
            progress.warning(text);
        }
    };
    for w in &plan_warnings {
        tell(w);
    }
    progress.begin(&runs);

    let interrupt = Interrupt::begin();
    let saved = if opts.show_output {
        None
    } else {
        Some(SavedStdio::save().map_err(|source| ScaleRunError::Io {
            path: PathBuf::from("standard input/output"),
            source,
        })?)
    };
    let _omp = EnvGuard::save("OMP_NUM_THREADS");
    let mut failed = 0;
    let mut stopped = None;
    let mut error = None;
    for (index, planned) in runs.iter().enumerate() {
        if let Some(sig) = interrupt.caught() {
            stopped = Some(format!(
                "interrupted by signal {sig} before run {}",
                planned.dir
            ));
            break;
        }
        progress.run_started(index, planned);
        for w in &planned.warnings {
            tell(w);
        }
        let signals_before = crate::signals::stop_signals_seen();
        match make_run(opts, dir, planned, saved.as_ref()) {
            Ok(run) => {
                for w in &run.warnings {
                    tell(w);
                }
                let ok = run.exit_code == Some(0) && run.signal.is_none();
                if !ok {
                    failed += 1;
                }
                // A stop signal forwarded to the program during the run
                // counts even when the program caught it and exited 0.
                let by_user = ended_by_stop_signal(&run)
                    || interrupt.caught().is_some()
                    || crate::signals::stop_signals_seen() > signals_before;
                let status = describe_status(&run);
                progress.run_finished(index, &run);
                manifest.runs.push(run);
                if by_user {
                    stopped = Some(format!("interrupted during run {} ({status})", planned.dir));
                    manifest.stopped = stopped.clone();
                    manifest.write(dir)?;
                    break;
                }
                if !ok {
                    tell(&format!(
                        "run {} failed ({status}); see {}/stderr.txt; the experiment goes on",
                        planned.dir,
                        dir.join(&planned.dir).display()
                    ));
                }
                manifest.write(dir)?;
            }
            Err(e) => {
                error = Some(e);
                break;
            }
        }
    }
    drop(saved);
    drop(interrupt);
    if let Some(e) = error {
        if manifest.runs.is_empty() {
            // Nothing was recorded: leave nothing behind, as `record` does.
            let _ = fs::remove_dir_all(dir);
        } else {
            manifest.stopped = Some(format!("stopped by an error: {e}"));
            manifest.write(dir)?;
        }
        return Err(e);
    }
    manifest.complete = stopped.is_none() && manifest.runs.len() == runs.len();
    manifest.stopped = stopped.clone();
    manifest.write(dir)?;
    Ok(ScaleOutcome {
        dir: dir.clone(),
        planned: runs.len(),
        made: manifest.runs.len(),
        failed,
        stopped,
    })
}

/// True when the run ended the way a program ends when the user stops it:
/// killed by `SIGINT`, `SIGTERM` or `SIGHUP`, or exited with 128 + one of
/// them (a shell's status after an interrupt).
fn ended_by_stop_signal(run: &ScaleRun) -> bool {
    let stop = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];
    run.signal.is_some_and(|s| stop.contains(&s))
        || run
            .exit_code
            .is_some_and(|c| stop.iter().any(|&s| c == 128 + s))
}

/// `exit status 3`, `killed by signal 9`.
pub fn describe_status(run: &ScaleRun) -> String {
    match (run.exit_code, run.signal) {
        (_, Some(s)) => format!("killed by signal {s}"),
        (Some(c), None) => format!("exit status {c}"),
        (None, None) => "status unknown".into(),
    }
}

/// Makes one run: stdio redirected, generator started (for a twin), the
/// program recorded, generator stopped, outputs moved into the run
/// directory.
fn make_run(
    opts: &ScaleOptions,
    dir: &Path,
    planned: &PlannedRun,
    saved: Option<&SavedStdio>,
) -> Result<ScaleRun, ScaleRunError> {
    let run_dir = dir.join(&planned.dir);
    let io_err = |path: &Path| {
        let path = path.to_path_buf();
        move |source| ScaleRunError::Io { path, source }
    };
    let generator = if planned.stress {
        let g = MemoryStress::start(&StressOptions {
            threads: planned.stress_cpus.len() as u32,
            cpus: Some(planned.stress_cpus.clone()),
            buffer_bytes: opts.stress_buffer_bytes,
        })
        .map_err(|source| ScaleRunError::Stress {
            run: planned.dir.clone(),
            source,
        })?;
        Some(g)
    } else {
        None
    };
    std::env::set_var("OMP_NUM_THREADS", planned.m.to_string());
    let record_opts = RecordOptions {
        output: run_dir.clone(),
        command: planned.command.clone(),
        interval: opts.interval,
        cpus: Some(planned.cpus.clone()),
        // The model needs service time and counters; lock traces only
        // split the time lost to dependencies.
        run_untraced: true,
        ..RecordOptions::default()
    };
    let out_tmp = dir.join(format!(".{}.stdout", planned.dir));
    let err_tmp = dir.join(format!(".{}.stderr", planned.dir));
    let result = match saved {
        Some(saved) => {
            let out = File::create(&out_tmp).map_err(io_err(&out_tmp))?;
            let err = File::create(&err_tmp).map_err(io_err(&err_tmp))?;
            let guard = saved
                .redirect(&out, &err)
                .map_err(io_err(Path::new("standard output")))?;
            let r = record::record(&record_opts);
            drop(guard);
            r
        }
        None => record::record(&record_opts),
    };
    let stress_report = generator.map(MemoryStress::stop);
    let outcome = match result {
        Ok(o) => o,
        Err(source) => {
            let _ = fs::remove_file(&out_tmp);
            let _ = fs::remove_file(&err_tmp);
            return Err(ScaleRunError::Record {
                run: planned.dir.clone(),
                source,
            });
        }
    };
    if saved.is_some() {
        for (tmp, name) in [(&out_tmp, "stdout.txt"), (&err_tmp, "stderr.txt")] {
            let to = run_dir.join(name);
            fs::rename(tmp, &to).map_err(io_err(&to))?;
        }
    }
    let mut warnings = planned.warnings.clone();
    warnings.extend(outcome.warnings.iter().cloned());
    if let Some(r) = &stress_report {
        warnings.extend(r.notes.iter().cloned());
    }
    Ok(ScaleRun {
        m: planned.m,
        n: planned.n,
        repeat: planned.repeat,
        stress: planned.stress,
        cpus: planned.cpus.clone(),
        dir: planned.dir.clone(),
        command: planned.command.clone(),
        exit_code: outcome.exit_code,
        signal: outcome.signal,
        wall_s: outcome.wall_ns as f64 / 1e9,
        stress_bandwidth_bytes_per_s: stress_report.as_ref().map(|r| r.bandwidth_bytes_per_s),
        stress_cpus: planned.stress_cpus.clone(),
        warnings,
    })
}

/// Creates the scale directory; with `force` replaces a scale directory
/// or uses an empty one; refuses anything else.
fn prepare_scale_dir(dir: &Path, force: bool) -> Result<(), ScaleRunError> {
    let io_err = |source| ScaleRunError::Io {
        path: dir.to_path_buf(),
        source,
    };
    match fs::symlink_metadata(dir) {
        Ok(_) => {
            let empty = fs::read_dir(dir).is_ok_and(|mut rd| rd.next().is_none());
            if !force {
                return Err(ScaleRunError::OutputExists {
                    path: dir.to_path_buf(),
                });
            }
            if empty {
                return Ok(());
            }
            if !dir.join(SCALE_FILE).is_file() {
                return Err(ScaleRunError::NotAScaleDir {
                    path: dir.to_path_buf(),
                });
            }
            fs::remove_dir_all(dir).map_err(io_err)?;
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(io_err(e)),
    }
    fs::create_dir_all(dir).map_err(io_err)
}
