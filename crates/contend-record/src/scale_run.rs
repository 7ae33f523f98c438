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
//! ([`crate::scale::ScaleManifest`]), which is rewritten after every run.
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
//! `SIGTERM` or `SIGHUP` (Ctrl-C) stop the experiment after the current
//! run: the manifest lists the runs finished and says why it stopped.
//! During a run the recorder forwards those signals to the program, so a
//! run that ends by one of them (or exits with 128 + one of them, as a shell
//! does when it is interrupted), or during which the launcher received one
//! ([`crate::signals::stop_signals_seen`]; the program may catch it and exit
//! 0), is taken as the user's stop too.

use std::fs::{self, File};
use std::io::{self, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::cpus::format_cpu_list;
use crate::launch::{self as record, RecordError, RecordOptions};
use crate::stress::{self, MemoryStress, StressError, StressOptions};
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
    /// [`stress::default_buffer_bytes`].
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

/// CPUs of the machine as the runner places runs on them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Topology {
    /// CPUs allowed to the launcher, in placement order (see
    /// [`Topology::order`]).
    pub order: Vec<u32>,
    /// Sockets (physical packages) among the online CPUs.
    pub sockets: u32,
    /// Physical cores per socket c (the largest socket's), among the online
    /// CPUs.
    pub cores_per_socket: u32,
}

/// One CPU's place: (cpu, socket, core id within the socket).
pub type CpuPlace = (u32, u32, u32);

impl Topology {
    /// Reads `/sys/devices/system/cpu/cpu*/topology/{physical_package_id,
    /// core_id}` for the online CPUs (missing files: socket 0, core = CPU
    /// number) and orders the CPUs allowed to this process.
    pub fn read() -> Topology {
        let online = crate::cpus::online_cpu_list();
        let allowed = stress::allowed_cpus();
        let read = |cpu: u32, f: &str| -> Option<u32> {
            fs::read_to_string(format!("/sys/devices/system/cpu/cpu{cpu}/topology/{f}"))
                .ok()?
                .trim()
                .parse::<i64>()
                .ok()
                .map(|v| v.max(0) as u32)
        };
        let places: Vec<CpuPlace> = online
            .iter()
            .map(|&c| {
                (
                    c,
                    read(c, "physical_package_id").unwrap_or(0),
                    read(c, "core_id").unwrap_or(c),
                )
            })
            .collect();
        Topology::from_places(&places, &allowed)
    }

    /// The topology of the CPUs `places` (online CPUs with their socket and
    /// core), of which `allowed` may be used: sockets and cores per socket
    /// count all of `places`; `order` lists the allowed CPUs socket by
    /// socket (ascending socket number), within a socket first one CPU of
    /// every physical core (ascending core id), then the second
    /// hyper-thread of every core, and so on.
    pub fn from_places(places: &[CpuPlace], allowed: &[u32]) -> Topology {
        let mut sockets: Vec<u32> = places.iter().map(|p| p.1).collect();
        sockets.sort_unstable();
        sockets.dedup();
        let cores_per_socket = sockets
            .iter()
            .map(|&s| {
                let mut cores: Vec<u32> = places.iter().filter(|p| p.1 == s).map(|p| p.2).collect();
                cores.sort_unstable();
                cores.dedup();
                cores.len() as u32
            })
            .max()
            .unwrap_or(1);
        // Rank of each CPU among the hyper-threads of its core.
        let mut keyed: Vec<(u32, u32, u32, u32)> = places
            .iter()
            .filter(|p| allowed.contains(&p.0))
            .map(|&(cpu, socket, core)| {
                let rank = places
                    .iter()
                    .filter(|q| q.1 == socket && q.2 == core && q.0 < cpu)
                    .count() as u32;
                (socket, rank, core, cpu)
            })
            .collect();
        keyed.sort_unstable();
        Topology {
            order: keyed.into_iter().map(|k| k.3).collect(),
            sockets: sockets.len().max(1) as u32,
            cores_per_socket: cores_per_socket.max(1),
        }
    }

    /// The core counts n to run m threads on: 1, and min(m, CPUs
    /// available); and c when there is more than one socket and
    /// 1 < c < min(m, CPUs). Ascending, without repeats.
    pub fn core_counts(&self, m: u32) -> Vec<u32> {
        let top = m.min(self.order.len() as u32).max(1);
        let mut v = vec![1, top];
        let c = self.cores_per_socket;
        if self.sockets > 1 && m > c && c > 1 && c < top {
            v.push(c);
        }
        v.sort_unstable();
        v.dedup();
        v
    }
}

/// One run the experiment will make.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedRun {
    /// Threads m.
    pub m: u32,
    /// Cores n.
    pub n: u32,
    /// Repeat index, 0-based.
    pub repeat: u32,
    /// The twin run with the memory contention generator.
    pub stress: bool,
    /// The CPUs the program is pinned to.
    pub cpus: Vec<u32>,
    /// The CPUs of the generator's threads (empty without `stress`).
    pub stress_cpus: Vec<u32>,
    /// Run directory name, `m{m}-n{n}-r{repeat}[-stress]`.
    pub dir: String,
    /// The command with `{threads}` replaced.
    pub command: Vec<String>,
    /// Warnings about this run's placement.
    pub warnings: Vec<String>,
}

/// `command` with every `{threads}` (also inside a word) replaced by `m`.
pub fn substitute(command: &[String], m: u32) -> Vec<String> {
    command
        .iter()
        .map(|w| w.replace(THREADS_PLACEHOLDER, &m.to_string()))
        .collect()
}

/// A `--threads` list that cannot be used. Messages name the bad entry.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ThreadListError {
    /// Nothing but spaces.
    #[error("give at least one thread count, e.g. --threads 2,4,8")]
    Empty,
    /// Two commas in a row, or one at an end.
    #[error("empty entry in `{0}`")]
    EmptyEntry(String),
    /// An entry that is not a whole number.
    #[error("`{0}` is not a thread count (a whole number ≥ 1)")]
    NotANumber(String),
    /// 0 threads.
    #[error("a thread count must be at least 1 (got 0)")]
    Zero,
    /// The same count twice.
    #[error("thread count {0} is given twice")]
    Repeated(u32),
}

/// Parses a `--threads` list, `2,4,8` (spaces allowed around entries).
/// Errors name the bad entry; 0, repeats and an empty list are refused.
pub fn parse_thread_list(text: &str) -> Result<Vec<u32>, ThreadListError> {
    let mut v = Vec::new();
    if text.trim().is_empty() {
        return Err(ThreadListError::Empty);
    }
    for part in text.split(',') {
        let p = part.trim();
        if p.is_empty() {
            return Err(ThreadListError::EmptyEntry(text.to_string()));
        }
        let m: u32 = p
            .parse()
            .map_err(|_| ThreadListError::NotANumber(p.to_string()))?;
        if m == 0 {
            return Err(ThreadListError::Zero);
        }
        if v.contains(&m) {
            return Err(ThreadListError::Repeated(m));
        }
        v.push(m);
    }
    Ok(v)
}

fn check_threads(threads: &[u32]) -> Result<(), ScaleRunError> {
    if threads.is_empty() {
        return Err(ScaleRunError::NoThreads);
    }
    for (i, &m) in threads.iter().enumerate() {
        if m == 0 {
            return Err(ScaleRunError::ZeroThreads);
        }
        if threads[..i].contains(&m) {
            return Err(ScaleRunError::DuplicateThreads(m));
        }
    }
    Ok(())
}

/// The runs of an experiment, in the order they are made (see the
/// [module documentation](self)), and warnings about the whole plan.
pub fn plan(opts: &ScaleOptions, topo: &Topology) -> (Vec<PlannedRun>, Vec<String>) {
    let mut warnings = Vec::new();
    let avail = topo.order.len() as u32;
    for &m in &opts.threads {
        if m > avail {
            warnings.push(format!(
                "{m} threads but only {avail} CPU(s) available ({}): the m = {m} runs use \
                 n = {avail} cores, so the threads share cores",
                format_cpu_list(&sorted(&topo.order))
            ));
        }
    }
    if !opts.command.iter().any(|w| w.contains(THREADS_PLACEHOLDER)) {
        warnings.push(
            "the command has no {threads}: only OMP_NUM_THREADS tells it the thread count"
                .to_string(),
        );
    }
    let mut runs = Vec::new();
    for repeat in 0..opts.repeat {
        for &m in &opts.threads {
            for n in topo.core_counts(m) {
                let cpus = sorted(&topo.order[..n as usize]);
                let command = substitute(&opts.command, m);
                let name = format!("m{m}-n{n}-r{repeat}");
                runs.push(PlannedRun {
                    m,
                    n,
                    repeat,
                    stress: false,
                    cpus: cpus.clone(),
                    stress_cpus: Vec::new(),
                    dir: name.clone(),
                    command: command.clone(),
                    warnings: Vec::new(),
                });
                if let Some(k) = opts.stress_threads {
                    let (stress_cpus, w) = stress_placement(&topo.order, &cpus, k);
                    runs.push(PlannedRun {
                        m,
                        n,
                        repeat,
                        stress: true,
                        cpus,
                        stress_cpus,
                        dir: format!("{name}-stress"),
                        command,
                        warnings: w.into_iter().collect(),
                    });
                }
            }
        }
    }
    (runs, warnings)
}

fn sorted(cpus: &[u32]) -> Vec<u32> {
    let mut v = cpus.to_vec();
    v.sort_unstable();
    v
}

/// CPUs for `k` generator threads beside a target on `target`: the CPUs of
/// `order` the target does not use, in order; where fewer than `k` are
/// free, the target's own, from the last one back (cycling), with a
/// warning.
pub fn stress_placement(order: &[u32], target: &[u32], k: u32) -> (Vec<u32>, Option<String>) {
    let free: Vec<u32> = order
        .iter()
        .copied()
        .filter(|c| !target.contains(c))
        .collect();
    let k = k as usize;
    if free.len() >= k {
        return (free[..k].to_vec(), None);
    }
    let mut cpus = free.clone();
    let mut shared: Vec<u32> = target.iter().rev().copied().collect();
    if shared.is_empty() {
        shared = order.to_vec();
    }
    let mut i = 0;
    while cpus.len() < k {
        cpus.push(shared[i % shared.len()]);
        i += 1;
    }
    let on_target: Vec<u32> = sorted(&cpus[free.len()..]);
    let mut on_target_unique = on_target.clone();
    on_target_unique.dedup();
    let warning = format!(
        "only {} CPU(s) free of the program (on {}): {} of the {} generator thread(s) share \
         CPU {} with it, so the program also loses CPU time to the generator, not only memory \
         bandwidth",
        free.len(),
        format_cpu_list(target),
        k - free.len(),
        k,
        format_cpu_list(&on_target_unique)
    );
    (cpus, Some(warning))
}

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

/// Restores an environment variable when dropped.
struct EnvGuard {
    name: &'static str,
    value: Option<std::ffi::OsString>,
}

impl EnvGuard {
    fn save(name: &'static str) -> EnvGuard {
        EnvGuard {
            name,
            value: std::env::var_os(name),
        }
    }
}

impl Drop for EnvGuard {
    fn drop(&mut self) {
        match &self.value {
            Some(v) => std::env::set_var(self.name, v),
            None => std::env::remove_var(self.name),
        }
    }
}

/// Copies of the launcher's standard input, output and error (close on
/// exec, so programs never inherit them), to point descriptors 0–2
/// elsewhere for a run and back afterwards.
///
/// Descriptors 0–2 belong to the whole process: while a run is redirected,
/// anything else in the launcher writing to them writes into the run's
/// files. The command-line tool draws its progress bar on its own copy of
/// the terminal for that reason.
struct SavedStdio {
    /// Copies of 0, 1, 2; `None` where the launcher was started with that
    /// descriptor closed (it is closed again after each run).
    fds: [Option<OwnedFd>; 3],
    null: File,
}

impl SavedStdio {
    fn save() -> io::Result<SavedStdio> {
        let dup = |fd: i32| -> io::Result<Option<OwnedFd>> {
            // SAFETY: F_DUPFD_CLOEXEC on a descriptor number; the result,
            // if valid, is a fresh descriptor we own.
            let r = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 3) };
            if r < 0 {
                let e = io::Error::last_os_error();
                return if e.raw_os_error() == Some(libc::EBADF) {
                    Ok(None)
                } else {
                    Err(e)
                };
            }
            // SAFETY: fresh descriptor.
            Ok(Some(unsafe { OwnedFd::from_raw_fd(r) }))
        };
        Ok(SavedStdio {
            fds: [dup(0)?, dup(1)?, dup(2)?],
            null: File::open("/dev/null")?,
        })
    }

    /// Points 0 at `/dev/null`, 1 at `out`, 2 at `err` until the guard is
    /// dropped.
    fn redirect<'a>(&'a self, out: &File, err: &File) -> io::Result<RedirectGuard<'a>> {
        let _ = io::stdout().flush();
        let _ = io::stderr().flush();
        let guard = RedirectGuard { saved: self };
        for (from, to) in [
            (self.null.as_raw_fd(), 0),
            (out.as_raw_fd(), 1),
            (err.as_raw_fd(), 2),
        ] {
            // SAFETY: dup2 between valid descriptors.
            if unsafe { libc::dup2(from, to) } < 0 {
                return Err(io::Error::last_os_error());
            }
        }
        Ok(guard)
    }
}

struct RedirectGuard<'a> {
    saved: &'a SavedStdio,
}

impl Drop for RedirectGuard<'_> {
    fn drop(&mut self) {
        let _ = io::stdout().flush();
        for (i, fd) in self.saved.fds.iter().enumerate() {
            match fd {
                // SAFETY: dup2 from a descriptor we own onto 0–2.
                Some(fd) => unsafe { libc::dup2(fd.as_raw_fd(), i as i32) },
                // SAFETY: closes one of 0–2, which was closed before.
                None => unsafe { libc::close(i as i32) },
            };
        }
    }
}

/// Catches `SIGINT`, `SIGTERM` and `SIGHUP` so that they stop an
/// experiment (or `contend stress memory`) cleanly instead of killing the
/// launcher: the one catcher of [`crate::record`], also used by attach
/// mode. While the recorder runs a program, its own handler (which forwards
/// the signals to the program) replaces this one and restores it
/// afterwards.
pub use crate::signals::Interrupt;

#[cfg(test)]
mod tests {
    use super::*;

    fn topo(places: &[CpuPlace]) -> Topology {
        let all: Vec<u32> = places.iter().map(|p| p.0).collect();
        Topology::from_places(places, &all)
    }

    #[test]
    fn threads_are_substituted_everywhere() {
        let cmd: Vec<String> = [
            "xz",
            "-T{threads}",
            "{threads}",
            "a{threads}b{threads}",
            "x",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(substitute(&cmd, 4), vec!["xz", "-T4", "4", "a4b4", "x"]);
    }

    #[test]
    fn thread_lists_parse_with_clear_errors() {
        assert_eq!(parse_thread_list("2,4, 8").unwrap(), vec![2, 4, 8]);
        assert!(parse_thread_list("").unwrap_err().to_string().contains("at least one"));
        assert!(parse_thread_list("2,,4").unwrap_err().to_string().contains("empty entry"));
        assert!(parse_thread_list("2,x").unwrap_err().to_string().contains("`x` is not"));
        assert!(parse_thread_list("0").unwrap_err().to_string().contains("at least 1"));
        assert!(parse_thread_list("2,2").unwrap_err().to_string().contains("given twice"));
    }

    /// Two sockets of two cores with two hyper-threads each; CPU numbers
    /// interleave sockets as many BIOSes number them.
    #[test]
    fn cpus_are_ordered_socket_first_then_physical_cores() {
        let places = [
            (0, 0, 0),
            (1, 1, 0),
            (2, 0, 1),
            (3, 1, 1),
            (4, 0, 0),
            (5, 1, 0),
            (6, 0, 1),
            (7, 1, 1),
        ];
        let t = topo(&places);
        assert_eq!(t.sockets, 2);
        assert_eq!(t.cores_per_socket, 2);
        assert_eq!(t.order, vec![0, 2, 4, 6, 1, 3, 5, 7]);
        // Only CPUs allowed are placed.
        let t = Topology::from_places(&places, &[1, 2, 3]);
        assert_eq!(t.order, vec![2, 1, 3]);
    }

    #[test]
    fn core_counts_add_one_socket_only_on_numa_machines() {
        let two_sockets = topo(&[(0, 0, 0), (1, 0, 1), (2, 1, 0), (3, 1, 1)]);
        assert_eq!(two_sockets.core_counts(1), vec![1]);
        assert_eq!(two_sockets.core_counts(2), vec![1, 2]);
        assert_eq!(two_sockets.core_counts(4), vec![1, 2, 4]);
        assert_eq!(two_sockets.core_counts(8), vec![1, 2, 4]);
        let one_socket = topo(&[(0, 0, 0), (1, 0, 1)]);
        assert_eq!(one_socket.core_counts(2), vec![1, 2]);
        assert_eq!(one_socket.core_counts(4), vec![1, 2]);
    }

    #[test]
    fn plan_interleaves_repeats_and_names_runs() {
        let t = topo(&[(0, 0, 0), (1, 0, 1)]);
        let opts = ScaleOptions {
            threads: vec![2, 1, 4],
            repeat: 2,
            command: vec!["prog".into(), "-t{threads}".into()],
            stress_threads: Some(1),
            ..ScaleOptions::default()
        };
        let (runs, warnings) = plan(&opts, &t);
        let names: Vec<&str> = runs.iter().map(|r| r.dir.as_str()).collect();
        assert_eq!(
            names,
            vec![
                "m2-n1-r0",
                "m2-n1-r0-stress",
                "m2-n2-r0",
                "m2-n2-r0-stress",
                "m1-n1-r0",
                "m1-n1-r0-stress",
                "m4-n1-r0",
                "m4-n1-r0-stress",
                "m4-n2-r0",
                "m4-n2-r0-stress",
                "m2-n1-r1",
                "m2-n1-r1-stress",
                "m2-n2-r1",
                "m2-n2-r1-stress",
                "m1-n1-r1",
                "m1-n1-r1-stress",
                "m4-n1-r1",
                "m4-n1-r1-stress",
                "m4-n2-r1",
                "m4-n2-r1-stress",
            ]
        );
        assert_eq!(runs[6].command, vec!["prog", "-t4"]);
        assert_eq!(runs[0].cpus, vec![0]);
        assert_eq!(runs[1].stress_cpus, vec![1]);
        assert!(runs[1].warnings.is_empty());
        assert_eq!(runs[2].cpus, vec![0, 1]);
        // Nothing free on 2 of 2 CPUs: shares the last, with a warning.
        assert_eq!(runs[3].stress_cpus, vec![1]);
        assert!(runs[3].warnings[0].contains("share CPU 1"), "{:?}", runs[3]);
        assert!(warnings.iter().any(|w| w.contains("4 threads but only 2")));
    }

    #[test]
    fn stress_takes_free_cpus_first() {
        assert_eq!(stress_placement(&[0, 1, 2, 3], &[0], 2), (vec![1, 2], None));
        let (cpus, w) = stress_placement(&[0, 1, 2], &[0, 1], 3);
        assert_eq!(cpus, vec![2, 1, 0]);
        assert!(w
            .unwrap()
            .contains("2 of the 3 generator thread(s) share CPU 0-1"));
    }

    #[test]
    fn bad_options_fail_before_anything_is_created() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("s");
        let base = ScaleOptions {
            output: out.clone(),
            threads: vec![2],
            command: vec!["true".into()],
            ..ScaleOptions::default()
        };
        let cases: Vec<(ScaleOptions, &str)> = vec![
            (
                ScaleOptions {
                    threads: vec![],
                    ..base.clone()
                },
                "at least one thread count",
            ),
            (
                ScaleOptions {
                    threads: vec![0],
                    ..base.clone()
                },
                "at least 1",
            ),
            (
                ScaleOptions {
                    repeat: 0,
                    ..base.clone()
                },
                "--repeat",
            ),
            (
                ScaleOptions {
                    stress_threads: Some(0),
                    ..base.clone()
                },
                "--stress",
            ),
            (
                ScaleOptions {
                    command: vec![],
                    ..base.clone()
                },
                "no command",
            ),
            (
                ScaleOptions {
                    command: vec!["contend-no-such-program-{threads}".into()],
                    ..base.clone()
                },
                "command not found: contend-no-such-program-2",
            ),
        ];
        for (opts, want) in cases {
            let e = run_scale(&opts, &NoScaleProgress).unwrap_err().to_string();
            assert!(e.contains(want), "{e} lacks {want}");
            assert!(!out.exists());
        }
        fs::create_dir(&out).unwrap();
        fs::write(out.join("keep"), "x").unwrap();
        let e = run_scale(&base, &NoScaleProgress).unwrap_err().to_string();
        assert!(e.contains("already exists"), "{e}");
        let e = run_scale(
            &ScaleOptions {
                force: true,
                ..base.clone()
            },
            &NoScaleProgress,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("not a scale directory"), "{e}");
        assert!(out.join("keep").exists());
    }
}
