//! The recording launcher: `contend record -o DIR -- CMD ARGS…`.
//!
//! [`record`] runs a command with the in-process lock collector preloaded
//! (`LD_PRELOAD`) and leaves a recording directory (see
//! `docs/trace-format.md`):
//!
//! 1. The command is resolved on `PATH` *before* anything is created, so a
//!    typo costs nothing ([`RecordError::CommandNotFound`], which a shell
//!    would report with exit status 127). The executable is inspected: a
//!    statically linked program, a setuid/setgid program or a 32-bit
//!    program still runs, but cannot load the collector; the outcome says so
//!    in [`RecordOutcome::warnings`]. A script (`#!`) is fine: its
//!    interpreter loads the collector.
//! 2. The output directory must not exist. With [`RecordOptions::force`] an
//!    existing *recording* (it holds `meta.json` or `locks/`) is removed
//!    first; any other existing path is refused, so a mistyped `-o` never
//!    deletes unrelated data.
//! 3. `DIR`, `DIR/locks` and `DIR/maps` are created, the clock is chosen and
//!    calibrated (TSC when the CPU reports `constant_tsc` and `nonstop_tsc`,
//!    else CLOCK_MONOTONIC), and `meta.json` is written with
//!    `"complete": false` **before** the target starts. The collector's
//!    traces survive a `SIGKILL` of the target (they are shared file
//!    mappings), and so must the description of the run: if the launcher is
//!    killed too, or the machine goes down, the start record still says what
//!    ran, where, and how to convert its clock, and readers can tell an
//!    unfinished run from a finished one.
//! 4. The target is started with the collector environment (`LD_PRELOAD`
//!    with the collector prepended, `CONTEND_DIR`, `CONTEND_CLOCK`,
//!    `CONTEND_TSC_HZ`, `CONTEND_STACK_EVERY`, `CONTEND_CHUNK_KB`) and the
//!    launcher's standard input, output and error. Between `fork` and
//!    `exec` the child pins itself to [`RecordOptions::cpus`] (if given;
//!    the list was checked against the online CPUs before step 2) and opens the performance counters on itself
//!    ([`crate::counters`]: `inherit`, `enable_on_exec`) and hands them to
//!    the launcher, which reads them once the target has been reaped
//!    (with `wait4`, whose resource usage gives the CPU time) and stores
//!    them in `meta.json` (`counters`).
//!    Right after it started, a sampler thread
//!    ([`crate::service::sampler`]) begins reading the service time of its
//!    threads and descendants every [`RecordOptions::interval`] into
//!    `DIR/service.csamp`; it takes its final sample once the target has
//!    ended, before the launcher reaps it.
//! 5. While it runs, `SIGINT`, `SIGTERM`, `SIGHUP` and `SIGQUIT` sent to the
//!    launcher are forwarded to the target instead of killing the launcher.
//!    Stopping a recording (Ctrl-C, `kill`, a batch system's time limit)
//!    thus stops the program, and the launcher lives on to see it end and to
//!    finalize the recording. A signal the terminal sends to the whole
//!    foreground process group (Ctrl-C, Ctrl-\, hang-up) already reached a
//!    target in that group and is not sent twice. A signal the launcher was
//!    started with ignored (for example `SIGHUP` under `nohup`) stays
//!    ignored, and so is inherited ignored by the target.
//! 6. After the target ends, the end calibration point is taken and
//!    `meta.json` is rewritten with `"complete": true`, the end time and the
//!    exit status. The traces in `locks/` are counted; none means the
//!    collector never ran in the target, which is reported.
//!
//! With [`RecordOptions::mpi`] (`contend record --mpi`) the MPI recorder
//! for the command's MPI implementation ([`detect_mpi_implementation`]) is
//! preloaded instead of the lock collector (beside it with
//! [`RecordOptions::mpi_with_locks`]), `DIR/mpi/` is created for the rank
//! traces, and a run in which no rank called `MPI_Init` is reported.
//!
//! The target's exit status is returned ([`RecordOutcome::exit_code`],
//! [`RecordOutcome::signal`]) so that the command-line tool can exit with it
//! as a shell would ([`RecordOutcome::shell_status`]: the exit code, or
//! 128 + N after signal N), making `contend record -- CMD` a drop-in
//! replacement for `CMD` in scripts.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::fs;
use std::io::{self, Read};
use std::os::fd::{AsRawFd, FromRawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime};

use contend_trace::CalibrationPoint;

use crate::counters;
use crate::meta::{format_utc, MetaError, RunMeta, FORMAT_VERSION};
use crate::service::sampler::Sampler;

/// Default recording directory.
pub const DEFAULT_OUTPUT: &str = "contend.data";

/// Default service-time sampling interval (Venter 2016, Section 3.2.1.1:
/// "a 100th of a second").
pub const DEFAULT_INTERVAL: Duration = Duration::from_millis(10);

/// What to record and where. The command-line tool fills this from its
/// flags; [`RecordOptions::default`] gives the defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordOptions {
    /// Recording directory to create (default `contend.data`).
    pub output: PathBuf,
    /// Replace `output` if it exists and is a recording (holds `meta.json`
    /// or `locks/`). Any other existing path is never removed.
    pub force: bool,
    /// Record a call stack with every N-th lock operation (0 = never; the
    /// default).
    pub stack_every: u32,
    /// Trace chunk size in KiB, a power of two from 4 to 65536; `None`
    /// leaves the collector's default (128 KiB).
    pub chunk_kb: Option<u32>,
    /// The program and its arguments. The program is looked up on `PATH`
    /// unless it contains a `/`.
    pub command: Vec<String>,
    /// Service-time sampling interval (default 10 ms; at least 1 ms): how
    /// often the sampler reads every thread's service time into
    /// `service.csamp` ([`crate::service::sampler`]).
    pub interval: Duration,
    /// CPUs to pin the target to (`--cpus LIST`, `--cores N`): its affinity
    /// mask is set in the child before `exec`, so every thread and child
    /// process it creates inherits it. `None` leaves the launcher's
    /// affinity. Every CPU must be online and allowed to the launcher.
    pub cpus: Option<Vec<u32>>,
    /// Record the MPI calls of every rank (`--mpi`): the MPI recorder for
    /// the program's MPI implementation is preloaded instead of the lock
    /// collector and writes `DIR/mpi/rank-<r>.cmpi`
    /// (`docs/trace-format.md`, "MPI traces").
    pub mpi: bool,
    /// With `mpi`: preload the lock collector too (`--mpi --locks`), for
    /// hybrid MPI + threads programs. Every process under the launcher is
    /// then lock-traced, `mpirun` and its daemons included.
    pub mpi_with_locks: bool,
    /// The MPI implementation (`--mpi-impl`); `None` detects it from the
    /// command ([`detect_mpi_implementation`]).
    pub mpi_impl: Option<MpiImplementation>,
}

pub use contend_collector::MpiImplementation;

impl Default for RecordOptions {
    fn default() -> RecordOptions {
        RecordOptions {
            output: PathBuf::from(DEFAULT_OUTPUT),
            force: false,
            stack_every: 0,
            chunk_kb: None,
            command: Vec::new(),
            interval: DEFAULT_INTERVAL,
            cpus: None,
            mpi: false,
            mpi_with_locks: false,
            mpi_impl: None,
        }
    }
}

/// Result of a recording whose target was started and has ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordOutcome {
    /// The recording directory, as given in [`RecordOptions::output`].
    pub dir: PathBuf,
    /// Exit code of the target when it exited normally (0–255).
    pub exit_code: Option<i32>,
    /// Signal number that terminated the target, when one did.
    pub signal: Option<i32>,
    /// Run time of the target on CLOCK_MONOTONIC, ns (from just before it
    /// was started until the launcher saw it end).
    pub wall_ns: u64,
    /// Number of lock traces (`locks/*.ctrace`) found after the run: one per
    /// traced process, plus one per `exec` within a process.
    pub traces: usize,
    /// Problems worth telling the user, one sentence each (also stored in
    /// `meta.json`). The command-line tool prints them.
    pub warnings: Vec<String>,
    /// Number of MPI rank traces (`mpi/rank-*.cmpi`) after the run; 0
    /// without [`RecordOptions::mpi`].
    pub mpi_ranks: usize,
}

impl RecordOutcome {
    /// The status a shell would report for the target: its exit code, or
    /// 128 + N when signal N terminated it. The command-line tool exits with
    /// this.
    pub fn shell_status(&self) -> i32 {
        match (self.exit_code, self.signal) {
            (Some(code), _) => code,
            (None, Some(sig)) => 128 + sig,
            (None, None) => 1,
        }
    }
}

/// Errors of [`record`]. Every message names the path or command concerned.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// No command was given.
    #[error("no command to record")]
    EmptyCommand,
    /// The program is not on `PATH` (or, given with a `/`, does not exist).
    /// Nothing was created. A shell exits with 127 here.
    #[error("command not found: {name}")]
    CommandNotFound {
        /// The program name as given.
        name: String,
    },
    /// The program exists but is not an executable file. Nothing was
    /// created. A shell exits with 126 here.
    #[error("{}: permission denied (not an executable file)", path.display())]
    NotExecutable {
        /// The file found.
        path: PathBuf,
    },
    /// [`RecordOptions::chunk_kb`] is not a power of two from 4 to 65536.
    #[error("chunk size {kb} KiB is invalid: it must be a power of two from 4 to 65536")]
    InvalidChunkSize {
        /// The value given.
        kb: u32,
    },
    /// [`RecordOptions::interval`] is shorter than 1 ms or longer than an
    /// hour.
    #[error("sampling interval {interval:?} is invalid: it must be from 1 ms to 1 hour")]
    InvalidInterval {
        /// The value given.
        interval: Duration,
    },
    /// [`RecordOptions::cpus`] names no CPU, or a CPU that is not online
    /// or not allowed to the launcher. Nothing was created.
    #[error("CPU list {cpus}: {problem}")]
    InvalidCpus {
        /// The list given, in `0-1,4` form.
        cpus: String,
        /// What is wrong with it.
        problem: String,
    },
    /// There is no running process with this pid (or it is the launcher
    /// itself) to attach to. Nothing was created.
    #[error("process {pid}: no such process to attach to")]
    NoSuchProcess {
        /// The pid given.
        pid: u32,
    },
    /// The output path exists and `force` was not given.
    #[error("{}: already exists (choose another output directory, or force replacing the recording)", path.display())]
    OutputExists {
        /// The output path.
        path: PathBuf,
    },
    /// The output path exists and is not a recording, so even `force` does
    /// not remove it.
    #[error("{}: exists and is not a recording (no meta.json or locks/ in it); not replacing it", path.display())]
    NotARecording {
        /// The output path.
        path: PathBuf,
    },
    /// `--mpi` cannot be honoured: the MPI implementation cannot be told,
    /// or this build of contend has no recorder for it. Nothing was
    /// created.
    #[error("record --mpi: {problem}")]
    Mpi {
        /// What is wrong, and what to do.
        problem: String,
    },
    /// The lock collector library could not be installed.
    #[error("cannot install the lock collector library: {source}")]
    Collector {
        /// The underlying error.
        source: io::Error,
    },
    /// Creating, removing or reading a file or directory failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The path concerned.
        path: PathBuf,
        /// The underlying error.
        source: io::Error,
    },
    /// Writing the start record `meta.json` failed.
    #[error(transparent)]
    Meta(#[from] MetaError),
    /// The program could not be started. The recording directory was
    /// removed again.
    #[error("{}: cannot start: {source}", path.display())]
    Spawn {
        /// The resolved program path.
        path: PathBuf,
        /// The underlying error.
        source: io::Error,
    },
    /// Waiting for the program failed (should not happen).
    #[error("waiting for process {pid}: {source}")]
    Wait {
        /// The target's pid.
        pid: u32,
        /// The underlying error.
        source: io::Error,
    },
}

impl RecordError {
    /// The exit status a shell would use for this failure to run a command:
    /// 127 when the command was not found, 126 when it was found but could
    /// not be executed; `None` for failures of the launcher itself.
    pub fn shell_status(&self) -> Option<i32> {
        match self {
            RecordError::CommandNotFound { .. } => Some(127),
            RecordError::NotExecutable { .. } => Some(126),
            RecordError::Spawn { source, .. } => match source.kind() {
                io::ErrorKind::NotFound => Some(127),
                _ => Some(126),
            },
            _ => None,
        }
    }
}

/// Records `opts.command` into `opts.output`; see the [module
/// documentation](self) for the steps.
///
/// Returns once the target has ended, whatever its exit status: a failing
/// or killed target is a successful recording, and its status is in the
/// outcome for the caller to pass on ([`RecordOutcome::shell_status`]).
/// Errors are returned only when the target could not be run at all (or, in
/// theory, could not be waited for); before the directory is created they
/// leave nothing behind.
pub fn record(opts: &RecordOptions) -> Result<RecordOutcome, RecordError> {
    let name = opts.command.first().ok_or(RecordError::EmptyCommand)?;
    if let Some(kb) = opts.chunk_kb {
        if !(4..=65536).contains(&kb) || !kb.is_power_of_two() {
            return Err(RecordError::InvalidChunkSize { kb });
        }
    }
    if opts.interval < Duration::from_millis(1) || opts.interval > Duration::from_secs(3600) {
        return Err(RecordError::InvalidInterval {
            interval: opts.interval,
        });
    }
    let cpu_set = match &opts.cpus {
        Some(cpus) => Some(placement_set(cpus)?),
        None => None,
    };
    let cwd = std::env::current_dir().map_err(|source| RecordError::Io {
        path: PathBuf::from("."),
        source,
    })?;
    let program = resolve_command(name, std::env::var_os("PATH").as_deref(), &cwd)?;
    let mut warnings = inspect_executable(&program);
    let collector = contend_collector::install_lock_collector()
        .map_err(|source| RecordError::Collector { source })?;
    if collector
        .as_os_str()
        .as_bytes()
        .iter()
        .any(|b| b" :\t\n".contains(b))
    {
        warnings.push(format!(
            "the collector path {} contains a space or colon, which LD_PRELOAD cannot express: \
             the loader will ignore it",
            collector.display()
        ));
    }
    let mpi_recorder = if opts.mpi {
        Some(mpi_recorder(opts, &program, &cwd)?)
    } else {
        None
    };

    prepare_output(&opts.output, opts.force)?;
    let dir = &opts.output;
    let io_err = |path: &Path| {
        let path = path.to_path_buf();
        move |source| RecordError::Io { path, source }
    };
    for sub in ["locks", "maps"] {
        let p = dir.join(sub);
        fs::create_dir(&p).map_err(io_err(&p))?;
    }
    if mpi_recorder.is_some() {
        let p = dir.join("mpi");
        fs::create_dir(&p).map_err(io_err(&p))?;
    }
    let abs_dir = fs::canonicalize(dir).map_err(io_err(dir))?;

    let cpu = CpuInfo::read();
    let clock = Clock::calibrate(&cpu);

    // The target's environment: the launcher's, plus the collector's.
    let mut env: BTreeMap<OsString, OsString> = std::env::vars_os().collect();
    // With --mpi only the MPI recorder is preloaded (it writes the maps
    // snapshots itself), unless --locks asks for the lock collector too:
    // then the collector comes first and writes the maps (the recorder
    // sees it in LD_PRELOAD and leaves them to it).
    let existing = env.get(OsStr::new("LD_PRELOAD"));
    let preload = match &mpi_recorder {
        Some((_, recorder)) if opts.mpi_with_locks => {
            preload_value(&collector, Some(&preload_value(recorder, existing)))
        }
        Some((_, recorder)) => preload_value(recorder, existing),
        None => preload_value(&collector, existing),
    };
    env.insert("LD_PRELOAD".into(), preload);
    env.insert("CONTEND_DIR".into(), abs_dir.clone().into_os_string());
    env.insert("CONTEND_CLOCK".into(), clock.name().into());
    env.insert("CONTEND_TSC_HZ".into(), clock.tsc_hz().to_string().into());
    env.insert(
        "CONTEND_STACK_EVERY".into(),
        opts.stack_every.to_string().into(),
    );
    if let Some(kb) = opts.chunk_kb {
        env.insert("CONTEND_CHUNK_KB".into(), kb.to_string().into());
    }

    let (host, kernel) = uname();
    let mut meta = RunMeta {
        format_version: FORMAT_VERSION,
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        command: opts.command.clone(),
        cwd: cwd.to_string_lossy().into_owned(),
        env: recorded_env(&env),
        host,
        kernel,
        cpu_model: cpu.model.clone(),
        cpus: online_cpus(),
        clock: clock.name().to_string(),
        tsc_hz: clock.tsc_hz(),
        calibration: clock.start_points(),
        complete: false,
        stack_every: opts.stack_every,
        warnings: warnings.clone(),
        ..RunMeta::default()
    };
    meta.start_utc = format_utc(SystemTime::now());
    meta.start_monotonic_ns = monotonic_ns();
    if let Err(e) = meta.write(dir) {
        let _ = fs::remove_dir_all(dir);
        return Err(e.into());
    }

    let mut cmd = Command::new(&program);
    cmd.arg0(name)
        .args(&opts.command[1..])
        .env_clear()
        .envs(&env);
    // Performance counters: opened by the child on itself just before
    // exec (enable_on_exec), handed back over a socket.
    let prepared = match counters::Prepared::new() {
        Ok(p) => Some(p),
        Err(e) => {
            warnings.push(format!(
                "performance counters are not recorded: cannot create a socket pair: {e}"
            ));
            None
        }
    };
    let child_part = prepared.as_ref().map(counters::Prepared::child_part);
    // SAFETY: the hook runs between fork and exec and only makes system
    // calls on data it owns (no allocation, no locks).
    unsafe {
        cmd.pre_exec(move || {
            if let Some(set) = &cpu_set {
                if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), set) != 0 {
                    return Err(io::Error::last_os_error());
                }
            }
            if let Some(c) = &child_part {
                c.open_in_child();
            }
            Ok(())
        });
    }
    let forwarding = forward::Forwarding::begin();
    // The final record has the start taken right here, after the (synced)
    // start record was written.
    let start_utc = format_utc(SystemTime::now());
    let start_ns = monotonic_ns();
    let child = match cmd.spawn() {
        Ok(child) => child,
        Err(source) => {
            drop(forwarding);
            let _ = fs::remove_dir_all(dir);
            return Err(RecordError::Spawn {
                path: program,
                source,
            });
        }
    };
    let pid = child.id();
    forwarding.started(pid);
    meta.cpus_allowed = affinity(pid);
    let opened = prepared.map(|p| p.collect("the target did not report its counters before exec"));
    let sampler = match Sampler::start(
        &dir.join(contend_trace::service::FILE_NAME),
        pid,
        opts.interval,
        start_ns,
    ) {
        Ok(s) => Some(s),
        Err(e) => {
            warnings.push(format!("service time is not sampled: {e}"));
            None
        }
    };

    // Wait without reaping, stop forwarding, then reap: a signal arriving
    // late can never hit another process that reused the pid.
    if let Err(source) = wait_exited(pid) {
        drop(forwarding);
        if let Some(s) = sampler {
            s.stop();
        }
        return Err(RecordError::Wait { pid, source });
    }
    let end_ns = monotonic_ns();
    // The final sample is taken before reaping, while the target's main
    // thread can still be read.
    if let Some(error) = sampler.and_then(|s| s.stop().error) {
        warnings.push(format!("service-time sampling stopped early: {error}"));
    }
    let end_point = clock.point();
    let end_utc = format_utc(SystemTime::now());
    forwarding.ended();
    // Reap with wait4 for the target's resource usage (the CPU time that
    // is the work measure without cycles).
    let (status, cpu_time_ns) = reap(pid).map_err(|source| RecordError::Wait { pid, source })?;
    drop(child);
    drop(forwarding);
    // Read after reaping: the counts of every exited thread and child have
    // been added to the events we hold.
    let mut run_counters = opened.map(counters::Opened::read).unwrap_or_default();
    run_counters.cpu_time_ns = Some(cpu_time_ns);

    let traces = count_traces(&dir.join("locks"));
    if traces == 0 && mpi_recorder.is_none() {
        warnings.push(
            "no lock trace was written: the program may be statically linked, setuid, \
             or cleared LD_PRELOAD"
                .to_string(),
        );
    }
    let mpi_ranks = count_mpi_ranks(&dir.join("mpi"));
    if mpi_recorder.is_some() && mpi_ranks == 0 {
        warnings.push(format!(
            "no MPI rank called MPI_Init: is {} an MPI program? (a launcher that does not pass \
             its environment to the ranks needs LD_PRELOAD and CONTEND_DIR passed explicitly, \
             e.g. mpirun -x LD_PRELOAD -x CONTEND_DIR; see docs/usage.md)",
            opts.command.join(" ")
        ));
    }
    let wall_ns = end_ns.saturating_sub(start_ns);
    meta.pid = Some(pid);
    meta.start_utc = start_utc;
    meta.start_monotonic_ns = start_ns;
    meta.end_utc = Some(end_utc);
    meta.end_monotonic_ns = Some(end_ns);
    meta.wall_ns = Some(wall_ns);
    meta.exit_code = status.code();
    meta.signal = status.signal();
    meta.calibration.extend(end_point);
    meta.complete = true;
    meta.warnings = warnings.clone();
    meta.counters = Some(run_counters);
    if let Err(e) = meta.write(dir) {
        warnings.push(format!("could not complete the run description: {e}"));
    }

    Ok(RecordOutcome {
        dir: dir.clone(),
        exit_code: status.code(),
        signal: status.signal(),
        wall_ns,
        traces,
        warnings,
        mpi_ranks,
    })
}

/// What to record with [`attach`] (`contend record -p PID`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttachOptions {
    /// Recording directory to create, as [`RecordOptions::output`].
    pub output: PathBuf,
    /// Replace `output` if it is a recording, as [`RecordOptions::force`].
    pub force: bool,
    /// The running process to sample.
    pub pid: u32,
    /// Stop after this long; `None` = until the process exits or the
    /// launcher gets `SIGINT`, `SIGTERM` or `SIGHUP`.
    pub duration: Option<Duration>,
    /// Service-time sampling interval, as [`RecordOptions::interval`].
    pub interval: Duration,
}

/// Why lock operations are missing from an attach recording (stored in
/// `meta.json` and shown instead of the lock tables).
pub const ATTACH_NO_LOCKS: &str = "Lock operations were not traced: contend attached to a running \
     process (`contend record -p PID`), into which the lock collector cannot be loaded \
     (it is preloaded when contend starts the program). Only service time and performance \
     counters were recorded; record the program from its start to trace its locks.";

/// What the counts of an attach recording cover (`counters.scope`).
pub const ATTACH_COUNTER_SCOPE: &str = "counted from the attach on, in the threads of the \
     process and its descendants that existed then and in those they started afterwards \
     (inherited); what ran before the attach is not counted";

/// Samples the service time and counters of the running process
/// `opts.pid` (and of the threads and processes it starts) into
/// `opts.output` until it exits, `opts.duration` ends, or the launcher gets
/// `SIGINT`, `SIGTERM` or `SIGHUP` (then the recording is completed and the
/// process left running). The process is only read, never stopped or
/// signalled. No lock tracing: `meta.json` says so
/// ([`crate::meta::AttachMeta`]). Counters are opened on each thread of
/// the process and of its descendant processes that exists at the attach,
/// with `inherit` ([`counters::Opened::attach`]), so threads and processes
/// they start later are counted too.
///
/// The outcome has no exit status (the process is not the launcher's
/// child); `traces` is 0.
///
/// Errors: a bad interval or output path, or no such process (before
/// anything is created).
pub fn attach(opts: &AttachOptions) -> Result<RecordOutcome, RecordError> {
    if opts.interval < Duration::from_millis(1) || opts.interval > Duration::from_secs(3600) {
        return Err(RecordError::InvalidInterval {
            interval: opts.interval,
        });
    }
    let pid = opts.pid;
    let proc_dir = PathBuf::from(format!("/proc/{pid}"));
    if pid == 0 || pid == std::process::id() || !proc_dir.join("task").is_dir() {
        return Err(RecordError::NoSuchProcess { pid });
    }
    let command: Vec<String> = fs::read(proc_dir.join("cmdline"))
        .unwrap_or_default()
        .split(|&b| b == 0)
        .filter(|a| !a.is_empty())
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    let cwd = fs::read_link(proc_dir.join("cwd"))
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default();
    prepare_output(&opts.output, opts.force)?;
    let dir = &opts.output;
    let cpu = CpuInfo::read();
    let (host, kernel) = uname();
    let mut meta = RunMeta {
        format_version: FORMAT_VERSION,
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        command,
        cwd,
        host,
        kernel,
        cpu_model: cpu.model.clone(),
        cpus: online_cpus(),
        clock: "monotonic".into(),
        pid: Some(pid),
        attach: Some(crate::meta::AttachMeta {
            pid,
            ended: String::new(),
            no_lock_tracing_reason: ATTACH_NO_LOCKS.into(),
        }),
        ..RunMeta::default()
    };
    meta.start_utc = format_utc(SystemTime::now());
    meta.start_monotonic_ns = monotonic_ns();
    if let Err(e) = meta.write(dir) {
        let _ = fs::remove_dir_all(dir);
        return Err(e.into());
    }

    let mut warnings = Vec::new();
    let interrupt = Interrupt::begin();
    // A pidfd tells when the process exits; without one (kernels before
    // 5.3), /proc is polled.
    // SAFETY: plain system call.
    let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
    let pidfd = (pidfd >= 0).then(|| {
        // SAFETY: a fresh descriptor we now own.
        unsafe { std::os::fd::OwnedFd::from_raw_fd(pidfd as i32) }
    });
    let opened = counters::Opened::attach(&tree_tids(pid));
    let start_utc = format_utc(SystemTime::now());
    let start_ns = monotonic_ns();
    meta.cpus_allowed = affinity(pid);
    let sampler = match Sampler::start(
        &dir.join(contend_trace::service::FILE_NAME),
        pid,
        opts.interval,
        start_ns,
    ) {
        Ok(s) => Some(s),
        Err(e) => {
            warnings.push(format!("service time is not sampled: {e}"));
            None
        }
    };

    let deadline = opts
        .duration
        .map(|d| start_ns.saturating_add(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)));
    let ended = loop {
        if let Some(sig) = interrupt.caught() {
            break format!("interrupted by signal {sig}");
        }
        let now = monotonic_ns();
        if deadline.is_some_and(|d| now >= d) {
            break "duration ended".to_string();
        }
        let wait_ms = deadline.map_or(50, |d| ((d - now) / 1_000_000).clamp(1, 50)) as i32;
        let exited = match &pidfd {
            Some(fd) => {
                let mut p = libc::pollfd {
                    fd: fd.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                };
                // SAFETY: one valid pollfd.
                unsafe { libc::poll(&mut p, 1, wait_ms) > 0 && p.revents != 0 }
            }
            None => {
                std::thread::sleep(Duration::from_millis(wait_ms as u64));
                process_gone(pid)
            }
        };
        if exited {
            break "process exited".to_string();
        }
    };
    let end_ns = monotonic_ns();
    if let Some(error) = sampler.and_then(|s| s.stop().error) {
        warnings.push(format!("service-time sampling stopped early: {error}"));
    }
    drop(interrupt);
    let mut run_counters = opened.read();
    run_counters.scope = Some(ATTACH_COUNTER_SCOPE.into());

    let wall_ns = end_ns.saturating_sub(start_ns);
    meta.start_utc = start_utc;
    meta.start_monotonic_ns = start_ns;
    meta.end_utc = Some(format_utc(SystemTime::now()));
    meta.end_monotonic_ns = Some(end_ns);
    meta.wall_ns = Some(wall_ns);
    meta.complete = true;
    meta.counters = Some(run_counters);
    if let Some(a) = &mut meta.attach {
        a.ended = ended;
    }
    meta.warnings = warnings.clone();
    if let Err(e) = meta.write(dir) {
        warnings.push(format!("could not complete the run description: {e}"));
    }
    Ok(RecordOutcome {
        dir: dir.clone(),
        exit_code: None,
        signal: None,
        wall_ns,
        traces: 0,
        warnings,
        mpi_ranks: 0,
    })
}

/// The threads of process `pid` and of all its descendant processes
/// (from `/proc/<pid>/task/<tid>/children`), as they are now.
fn tree_tids(pid: u32) -> Vec<u32> {
    let mut tids = Vec::new();
    let mut procs = vec![pid];
    let mut seen = std::collections::HashSet::new();
    while let Some(p) = procs.pop() {
        if !seen.insert(p) {
            continue;
        }
        let Ok(rd) = fs::read_dir(format!("/proc/{p}/task")) else {
            continue;
        };
        for tid in rd
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        {
            tids.push(tid);
            if let Ok(children) = fs::read_to_string(format!("/proc/{p}/task/{tid}/children")) {
                procs.extend(
                    children
                        .split_whitespace()
                        .filter_map(|c| c.parse::<u32>().ok()),
                );
            }
        }
    }
    tids
}

/// True when process `pid` no longer runs: gone, or a zombie.
fn process_gone(pid: u32) -> bool {
    match fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rfind(')')
            .and_then(|i| stat[i + 1..].split_whitespace().next())
            .is_none_or(|state| state == "Z" || state == "X"),
        Err(_) => true,
    }
}

/// The stop signal [`Interrupt`] caught, 0 for none.
static CAUGHT_STOP_SIGNAL: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

extern "C" fn on_stop_signal(sig: libc::c_int) {
    CAUGHT_STOP_SIGNAL.store(sig, std::sync::atomic::Ordering::SeqCst);
}

/// Catches `SIGINT`, `SIGTERM` and `SIGHUP` so that they end a recording,
/// an experiment or the memory contention generator cleanly instead of
/// killing the launcher (attach mode, `contend scale`, `contend stress`).
/// A signal that was ignored when it began stays ignored; the previous
/// dispositions are restored when it is dropped. Process-wide: use one at
/// a time.
pub struct Interrupt {
    previous: Vec<(libc::c_int, libc::sigaction)>,
}

impl Interrupt {
    /// Installs the handler and clears any signal caught before.
    pub fn begin() -> Interrupt {
        CAUGHT_STOP_SIGNAL.store(0, std::sync::atomic::Ordering::SeqCst);
        let mut previous = Vec::new();
        for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            // SAFETY: sigaction with valid pointers; the handler only
            // stores to an atomic.
            unsafe {
                let mut old: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(sig, std::ptr::null(), &mut old) != 0
                    || old.sa_sigaction == libc::SIG_IGN
                {
                    continue;
                }
                let mut new: libc::sigaction = std::mem::zeroed();
                new.sa_sigaction = on_stop_signal as *const () as libc::sighandler_t;
                new.sa_flags = libc::SA_RESTART;
                libc::sigemptyset(&mut new.sa_mask);
                if libc::sigaction(sig, &new, &mut old) == 0 {
                    previous.push((sig, old));
                }
            }
        }
        Interrupt { previous }
    }

    /// The signal caught since [`Interrupt::begin`], if any.
    pub fn caught(&self) -> Option<i32> {
        let s = CAUGHT_STOP_SIGNAL.load(std::sync::atomic::Ordering::SeqCst);
        (s != 0).then_some(s)
    }
}

impl Drop for Interrupt {
    fn drop(&mut self) {
        for (sig, old) in self.previous.drain(..) {
            // SAFETY: restores a disposition sigaction returned.
            unsafe { libc::sigaction(sig, &old, std::ptr::null_mut()) };
        }
    }
}

/// Parses a CPU list as the kernel prints one (`0`, `0-3`, `0,2-3`):
/// comma-separated CPU numbers and inclusive ranges, in any order; the
/// result is sorted and without repeats. Errors name the offending part
/// (empty list or part, not a number, a range that runs backwards, a CPU
/// number of 1024 or more).
pub fn parse_cpu_list(text: &str) -> Result<Vec<u32>, String> {
    let max = 8 * std::mem::size_of::<libc::cpu_set_t>() as u32;
    let number = |s: &str| -> Result<u32, String> {
        let s = s.trim();
        let n: u32 = s
            .parse()
            .map_err(|_| format!("`{s}` is not a CPU number"))?;
        if n >= max {
            return Err(format!("CPU {n} is out of range (at most {})", max - 1));
        }
        Ok(n)
    };
    if text.trim().is_empty() {
        return Err("the list is empty".into());
    }
    let mut cpus = Vec::new();
    for part in text.split(',') {
        if part.trim().is_empty() {
            return Err(format!("empty entry in `{text}`"));
        }
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (number(a)?, number(b)?);
                if a > b {
                    return Err(format!("range `{}` runs backwards", part.trim()));
                }
                cpus.extend(a..=b);
            }
            None => cpus.push(number(part)?),
        }
    }
    cpus.sort_unstable();
    cpus.dedup();
    Ok(cpus)
}

/// A CPU list in the kernel's short form, ranges joined: `[0, 1, 2, 5]` →
/// `0-2,5`.
pub fn format_cpu_list(cpus: &[u32]) -> String {
    let mut out = String::new();
    let mut i = 0;
    while i < cpus.len() {
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
            j += 1;
        }
        if !out.is_empty() {
            out.push(',');
        }
        if j > i {
            out.push_str(&format!("{}-{}", cpus[i], cpus[j]));
        } else {
            out.push_str(&cpus[i].to_string());
        }
        i = j + 1;
    }
    out
}

/// The online CPUs, from `/sys/devices/system/cpu/online`; where that
/// cannot be read, CPUs 0 to `_SC_NPROCESSORS_ONLN` − 1.
pub fn online_cpu_list() -> Vec<u32> {
    fs::read_to_string("/sys/devices/system/cpu/online")
        .ok()
        .and_then(|t| parse_cpu_list(t.trim()).ok())
        .unwrap_or_else(|| (0..online_cpus()).collect())
}

/// The first `n` online CPUs (`--cores N`). Errors when `n` is 0 or more
/// than are online.
pub fn first_online_cpus(n: u32) -> Result<Vec<u32>, String> {
    let online = online_cpu_list();
    if n == 0 {
        return Err("--cores: at least one core is needed".into());
    }
    if n as usize > online.len() {
        return Err(format!(
            "--cores {n}: only {} CPU(s) are online ({})",
            online.len(),
            format_cpu_list(&online)
        ));
    }
    Ok(online[..n as usize].to_vec())
}

/// The affinity mask of process `pid` as a sorted CPU list; `None` when it
/// cannot be read.
pub fn affinity(pid: u32) -> Option<Vec<u32>> {
    // SAFETY: sched_getaffinity fills the zeroed set it is given.
    let set = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(
            pid as libc::pid_t,
            std::mem::size_of::<libc::cpu_set_t>(),
            &mut set,
        ) != 0
        {
            return None;
        }
        set
    };
    let max = 8 * std::mem::size_of::<libc::cpu_set_t>();
    // SAFETY: CPU_ISSET reads within the set for i < its size in bits.
    Some(
        (0..max)
            .filter(|&i| unsafe { libc::CPU_ISSET(i, &set) })
            .map(|i| i as u32)
            .collect(),
    )
}

/// Checks a CPU list for pinning (not empty, every CPU online and in the
/// launcher's own affinity mask) and builds its `cpu_set_t`.
fn placement_set(cpus: &[u32]) -> Result<libc::cpu_set_t, RecordError> {
    let err = |problem: String| RecordError::InvalidCpus {
        cpus: format_cpu_list(cpus),
        problem,
    };
    if cpus.is_empty() {
        return Err(err("no CPU given".into()));
    }
    let online = online_cpu_list();
    let offline: Vec<u32> = cpus
        .iter()
        .copied()
        .filter(|c| !online.contains(c))
        .collect();
    if !offline.is_empty() {
        return Err(err(format!(
            "CPU {} not online (online: {})",
            format_cpu_list(&offline),
            format_cpu_list(&online)
        )));
    }
    if let Some(mine) = affinity(0) {
        let denied: Vec<u32> = cpus.iter().copied().filter(|c| !mine.contains(c)).collect();
        if !denied.is_empty() {
            return Err(err(format!(
                "CPU {} not allowed to contend itself (its affinity: {})",
                format_cpu_list(&denied),
                format_cpu_list(&mine)
            )));
        }
    }
    let max = 8 * std::mem::size_of::<libc::cpu_set_t>() as u32;
    // SAFETY: a zeroed cpu_set_t is empty; CPU_SET stays within it for
    // c < its size in bits.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &c in cpus.iter().filter(|&&c| c < max) {
            libc::CPU_SET(c as usize, &mut set);
        }
        Ok(set)
    }
}

/// Resolves a program name as `execvp` and a shell do: a name containing
/// `/` is a path (relative to `cwd`); any other name is searched in the
/// directories of `path_var` (an empty entry is `cwd`; unset means
/// `/usr/local/bin:/usr/bin:/bin`), and the first executable regular file
/// wins.
pub fn resolve_command(
    name: &str,
    path_var: Option<&OsStr>,
    cwd: &Path,
) -> Result<PathBuf, RecordError> {
    if name.is_empty() {
        return Err(RecordError::CommandNotFound {
            name: name.to_string(),
        });
    }
    if name.contains('/') {
        let p = cwd.join(name);
        return match fs::metadata(&p) {
            Err(_) => Err(RecordError::CommandNotFound {
                name: name.to_string(),
            }),
            Ok(_) if is_executable_file(&p) => Ok(PathBuf::from(name)),
            Ok(_) => Err(RecordError::NotExecutable {
                path: PathBuf::from(name),
            }),
        };
    }
    let path_var = path_var.unwrap_or(OsStr::new("/usr/local/bin:/usr/bin:/bin"));
    let mut not_executable = None;
    for entry in path_var.as_bytes().split(|&b| b == b':') {
        let dir = if entry.is_empty() {
            cwd.to_path_buf()
        } else {
            cwd.join(OsStr::from_bytes(entry))
        };
        let candidate = dir.join(name);
        if is_executable_file(&candidate) {
            return Ok(candidate);
        }
        if not_executable.is_none() && candidate.is_file() {
            not_executable = Some(candidate);
        }
    }
    match not_executable {
        Some(path) => Err(RecordError::NotExecutable { path }),
        None => Err(RecordError::CommandNotFound {
            name: name.to_string(),
        }),
    }
}

fn is_executable_file(p: &Path) -> bool {
    fs::metadata(p).is_ok_and(|m| m.is_file() && m.mode() & 0o111 != 0)
        && nix::unistd::access(p, nix::unistd::AccessFlags::X_OK).is_ok()
}

/// Reasons why the collector cannot be loaded into `program`, one warning
/// each (empty when nothing stands in the way): a statically linked ELF
/// (no `PT_INTERP`: no dynamic loader runs, so nothing reads
/// `LD_PRELOAD`), a setuid or setgid file that changes the process's
/// identity (the loader then runs in secure-execution mode and ignores
/// `LD_PRELOAD`), a 32-bit program (the collector is 64-bit). For a script
/// (`#!`) its interpreter is inspected instead.
pub fn inspect_executable(program: &Path) -> Vec<String> {
    let mut warnings = Vec::new();
    inspect_into(program, 0, &mut warnings);
    warnings
}

fn inspect_into(program: &Path, depth: u32, warnings: &mut Vec<String>) {
    let shown = program.display();
    let Ok(meta) = fs::metadata(program) else {
        return;
    };
    // Secure-execution mode only when the identity actually changes.
    if meta.mode() & 0o4000 != 0 && meta.uid() != unsafe { libc::getuid() } {
        warnings.push(format!(
            "{shown} is setuid: the loader ignores LD_PRELOAD in secure-execution mode, \
             so its locks cannot be traced"
        ));
    }
    if meta.mode() & 0o2000 != 0 && meta.gid() != unsafe { libc::getgid() } {
        warnings.push(format!(
            "{shown} is setgid: the loader ignores LD_PRELOAD in secure-execution mode, \
             so its locks cannot be traced"
        ));
    }
    let Ok(mut file) = fs::File::open(program) else {
        return;
    };
    let mut head = [0u8; 256];
    let mut n = 0;
    while n < head.len() {
        match file.read(&mut head[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return,
        }
    }
    let head = &head[..n];
    if let Some(line) = head.strip_prefix(b"#!") {
        // The kernel runs the interpreter, which reads LD_PRELOAD instead.
        let line = line.split(|&b| b == b'\n').next().unwrap_or_default();
        let interp = line
            .split(|b| b.is_ascii_whitespace())
            .find(|w| !w.is_empty());
        if let (Some(interp), true) = (interp, depth < 4) {
            inspect_into(Path::new(OsStr::from_bytes(interp)), depth + 1, warnings);
        }
        return;
    }
    if !head.starts_with(b"\x7fELF") {
        return;
    }
    // SAFETY: the mapping is read only; a concurrent change of the file can
    // at worst give a wrong answer, never unsoundness in `object`, which
    // only reads through bounds-checked slices.
    let Ok(map) = (unsafe { memmap2::Mmap::map(&file) }) else {
        return;
    };
    match elf_kind(&map) {
        Some(ElfKind::Static) if !is_dynamic_loader(program) => warnings.push(format!(
            "{shown} is statically linked: its locks cannot be traced \
             (LD_PRELOAD needs a dynamically linked program)"
        )),
        Some(ElfKind::Dynamic32) if cfg!(target_pointer_width = "64") => warnings.push(format!(
            "{shown} is a 32-bit program: the 64-bit collector cannot be loaded into it, \
             so its locks cannot be traced"
        )),
        _ => {}
    }
}

#[derive(Debug, PartialEq, Eq)]
enum ElfKind {
    Static,
    Dynamic32,
    Dynamic64,
}

/// Classifies an ELF image by its program headers: dynamically linked
/// means it names an interpreter (`PT_INTERP`), the dynamic loader that
/// honours `LD_PRELOAD`. A static-pie has a dynamic section but no
/// interpreter, and counts as static.
fn elf_kind(data: &[u8]) -> Option<ElfKind> {
    use object::read::elf::{FileHeader, ProgramHeader};
    fn has_interp<H: FileHeader>(data: &[u8]) -> Option<bool> {
        let header = H::parse(data).ok()?;
        let endian = header.endian().ok()?;
        let phdrs = header.program_headers(endian, data).ok()?;
        Some(
            phdrs
                .iter()
                .any(|ph| ph.p_type(endian) == object::elf::PT_INTERP),
        )
    }
    match object::FileKind::parse(data).ok()? {
        object::FileKind::Elf64 => {
            let dynamic = has_interp::<object::elf::FileHeader64<object::Endianness>>(data)?;
            Some(if dynamic {
                ElfKind::Dynamic64
            } else {
                ElfKind::Static
            })
        }
        object::FileKind::Elf32 => {
            let dynamic = has_interp::<object::elf::FileHeader32<object::Endianness>>(data)?;
            Some(if dynamic {
                ElfKind::Dynamic32
            } else {
                ElfKind::Static
            })
        }
        _ => None,
    }
}

/// The dynamic loader run as a program (`ld-linux-x86-64.so.2 ./prog`) has
/// no interpreter of its own but does honour `LD_PRELOAD`.
fn is_dynamic_loader(program: &Path) -> bool {
    program
        .file_name()
        .map(|n| n.to_string_lossy())
        .is_some_and(|n| {
            n.starts_with("ld-linux")
                || n.starts_with("ld.so")
                || n.starts_with("ld64.so")
                || n.starts_with("ld-musl")
        })
}

/// `LD_PRELOAD` for the target: the collector first, then any libraries
/// already preloaded (colon separated).
pub fn preload_value(collector: &Path, existing: Option<&OsString>) -> OsString {
    let mut v = collector.as_os_str().to_os_string();
    if let Some(existing) =
        existing.filter(|e| !e.as_bytes().iter().all(|b| *b == b' ' || *b == b':'))
    {
        v.push(":");
        v.push(existing);
    }
    v
}

/// The part of the target's environment stored in `meta.json`: `CONTEND_*`,
/// `OMP_*` and `LD_PRELOAD`.
fn recorded_env(env: &BTreeMap<OsString, OsString>) -> BTreeMap<String, String> {
    env.iter()
        .map(|(k, v)| (k.to_string_lossy(), v))
        .filter(|(k, _)| k.starts_with("CONTEND_") || k.starts_with("OMP_") || k == "LD_PRELOAD")
        .map(|(k, v)| (k.into_owned(), v.to_string_lossy().into_owned()))
        .collect()
}

/// Refuses an existing output unless `force` and it is a recording, which
/// is then removed; finally creates the directory.
fn prepare_output(dir: &Path, force: bool) -> Result<(), RecordError> {
    match fs::symlink_metadata(dir) {
        Ok(meta) => {
            if !force {
                return Err(RecordError::OutputExists {
                    path: dir.to_path_buf(),
                });
            }
            let is_recording = meta.is_dir()
                && (dir.join(crate::meta::META_FILE).is_file() || dir.join("locks").is_dir());
            if !is_recording {
                return Err(RecordError::NotARecording {
                    path: dir.to_path_buf(),
                });
            }
            fs::remove_dir_all(dir).map_err(|source| RecordError::Io {
                path: dir.to_path_buf(),
                source,
            })?;
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(source) => {
            return Err(RecordError::Io {
                path: dir.to_path_buf(),
                source,
            })
        }
    }
    fs::create_dir(dir).map_err(|source| {
        if source.kind() == io::ErrorKind::AlreadyExists {
            RecordError::OutputExists {
                path: dir.to_path_buf(),
            }
        } else {
            RecordError::Io {
                path: dir.to_path_buf(),
                source,
            }
        }
    })
}

fn count_traces(locks: &Path) -> usize {
    fs::read_dir(locks).map_or(0, |entries| {
        entries
            .filter_map(Result::ok)
            .filter(|e| e.path().extension() == Some(OsStr::new("ctrace")))
            .count()
    })
}

/// Waits until process `pid` (a child of the caller) has exited, without
/// reaping it (`waitid(WEXITED | WNOWAIT)`, retried on EINTR), so its
/// `/proc` entries can still be read. Errors: ECHILD when `pid` is not a
/// child.
pub fn wait_exited(pid: u32) -> io::Result<()> {
    loop {
        // SAFETY: waitid with a valid out-pointer to a zeroed siginfo_t.
        let rc = unsafe {
            let mut info: libc::siginfo_t = std::mem::zeroed();
            libc::waitid(
                libc::P_PID,
                pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOWAIT,
            )
        };
        if rc == 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Reaps the (exited) child `pid` with `wait4`: its exit status and the
/// user + system CPU time of it and of the descendants it waited for, ns.
fn reap(pid: u32) -> io::Result<(std::process::ExitStatus, u64)> {
    loop {
        let mut status = 0;
        // SAFETY: valid out-pointers; rusage is plain data.
        let (rc, ru) = unsafe {
            let mut ru: libc::rusage = std::mem::zeroed();
            let rc = libc::wait4(pid as libc::pid_t, &mut status, 0, &mut ru);
            (rc, ru)
        };
        if rc == pid as libc::pid_t {
            let us = |t: libc::timeval| t.tv_sec as u64 * 1_000_000 + t.tv_usec as u64;
            let cpu_ns = (us(ru.ru_utime) + us(ru.ru_stime)) * 1000;
            return Ok((std::process::ExitStatus::from_raw(status), cpu_ns));
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// CLOCK_MONOTONIC now, ns.
fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid out-pointer; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// What `/proc/cpuinfo` says about the CPU.
struct CpuInfo {
    /// First `model name`.
    model: String,
    /// `constant_tsc` and `nonstop_tsc` are in the flags.
    invariant_tsc: bool,
}

impl CpuInfo {
    fn read() -> CpuInfo {
        let text = fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        CpuInfo::parse(&text)
    }

    fn parse(text: &str) -> CpuInfo {
        let field = |name: &str| {
            text.lines().find_map(|l| {
                let (k, v) = l.split_once(':')?;
                (k.trim() == name).then(|| v.trim().to_string())
            })
        };
        let flags = field("flags").unwrap_or_default();
        let has = |f: &str| flags.split_whitespace().any(|x| x == f);
        CpuInfo {
            model: field("model name").unwrap_or_default(),
            invariant_tsc: has("constant_tsc") && has("nonstop_tsc"),
        }
    }
}

/// The trace clock chosen for a run, with its start calibration.
enum Clock {
    /// Invariant TSC at `hz` ticks per second; `start` are the two points
    /// the frequency was measured between.
    Tsc {
        hz: u64,
        start: [CalibrationPoint; 2],
    },
    /// CLOCK_MONOTONIC ns.
    Monotonic,
}

impl Clock {
    /// Interval between the two readings of the frequency measurement.
    const CALIBRATION_INTERVAL: Duration = Duration::from_millis(20);

    fn calibrate(cpu: &CpuInfo) -> Clock {
        if !cpu.invariant_tsc || !cfg!(target_arch = "x86_64") {
            return Clock::Monotonic;
        }
        let Some(a) = tsc_point() else {
            return Clock::Monotonic;
        };
        std::thread::sleep(Self::CALIBRATION_INTERVAL);
        let Some(b) = tsc_point() else {
            return Clock::Monotonic;
        };
        let dt = b.ticks.wrapping_sub(a.ticks);
        let dns = b.monotonic_ns.saturating_sub(a.monotonic_ns);
        if dt == 0 || dt > 1 << 62 || dns == 0 {
            return Clock::Monotonic;
        }
        let hz = (u128::from(dt) * 1_000_000_000 / u128::from(dns)) as u64;
        Clock::Tsc { hz, start: [a, b] }
    }

    fn name(&self) -> &'static str {
        match self {
            Clock::Tsc { .. } => "tsc",
            Clock::Monotonic => "monotonic",
        }
    }

    fn tsc_hz(&self) -> u64 {
        match self {
            Clock::Tsc { hz, .. } => *hz,
            Clock::Monotonic => 0,
        }
    }

    fn start_points(&self) -> Vec<CalibrationPoint> {
        match self {
            Clock::Tsc { start, .. } => start.to_vec(),
            Clock::Monotonic => Vec::new(),
        }
    }

    /// A calibration point now (none for the monotonic clock).
    fn point(&self) -> Option<CalibrationPoint> {
        match self {
            Clock::Tsc { .. } => tsc_point(),
            Clock::Monotonic => None,
        }
    }
}

/// One TSC/CLOCK_MONOTONIC pair: the TSC read between two clock readings,
/// the tightest of several tries, paired with the midpoint of its bracket.
fn tsc_point() -> Option<CalibrationPoint> {
    #[cfg(target_arch = "x86_64")]
    {
        let mut best: Option<(u64, CalibrationPoint)> = None;
        for _ in 0..32 {
            let before = monotonic_ns();
            // SAFETY: rdtsc has no preconditions on x86_64.
            let ticks = unsafe { core::arch::x86_64::_rdtsc() };
            let after = monotonic_ns();
            let width = after.saturating_sub(before);
            if !matches!(best, Some((w, _)) if w <= width) {
                best = Some((
                    width,
                    CalibrationPoint {
                        ticks,
                        monotonic_ns: before + width / 2,
                    },
                ));
            }
        }
        best.map(|(_, p)| p)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        None
    }
}

/// Host name and kernel release from `uname(2)`.
fn uname() -> (String, String) {
    // SAFETY: uname fills the zeroed struct; its fields are NUL-terminated.
    unsafe {
        let mut u: libc::utsname = std::mem::zeroed();
        if libc::uname(&mut u) != 0 {
            return (String::new(), String::new());
        }
        let s = |f: &[libc::c_char]| {
            std::ffi::CStr::from_ptr(f.as_ptr())
                .to_string_lossy()
                .into_owned()
        };
        (s(&u.nodename), s(&u.release))
    }
}

fn online_cpus() -> u32 {
    // SAFETY: sysconf has no memory effects.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    u32::try_from(n).unwrap_or(0)
}

/// How many stop signals (`SIGINT`, `SIGTERM`, `SIGHUP`) the launcher has
/// received and forwarded to a target of [`record`] since it started. A
/// caller running several recordings (`contend scale`) compares the count
/// before and after a run to tell a user's Ctrl-C from the program's own
/// ending, even when the program catches the signal and exits 0.
pub fn stop_signals_seen() -> u64 {
    forward::STOP_SIGNALS_SEEN.load(std::sync::atomic::Ordering::SeqCst)
}

/// Forwarding of termination signals from the launcher to its targets.
///
/// Process-wide state, because signal dispositions are: every running
/// [`record`] call holds a slot with its child's pid; the handlers are
/// installed while at least one call runs and the previous dispositions
/// restored after the last one ends.
mod forward {
    use std::sync::atomic::{AtomicI32, AtomicU64, Ordering::SeqCst};
    use std::sync::Mutex;

    /// Stop signals (`SIGINT`, `SIGTERM`, `SIGHUP`) the handler has seen
    /// since the process started (see [`super::stop_signals_seen`]).
    pub(super) static STOP_SIGNALS_SEEN: AtomicU64 = AtomicU64::new(0);

    /// Signals forwarded to the target.
    const SIGNALS: [libc::c_int; 4] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT];
    const SLOTS: usize = 32;
    /// Slot states besides a pid (> 0).
    const FREE: i32 = 0;
    const STARTING: i32 = -1;
    const ENDED: i32 = -2;

    static CHILD: [AtomicI32; SLOTS] = [const { AtomicI32::new(FREE) }; SLOTS];
    /// A signal that arrived while the slot was STARTING.
    static PENDING: [AtomicI32; SLOTS] = [const { AtomicI32::new(0) }; SLOTS];

    struct Installed {
        users: usize,
        previous: Vec<(libc::c_int, libc::sigaction)>,
    }

    static STATE: Mutex<Installed> = Mutex::new(Installed {
        users: 0,
        previous: Vec::new(),
    });

    /// One target's registration; dropping it unregisters.
    pub(super) struct Forwarding {
        slot: Option<usize>,
    }

    impl Forwarding {
        /// Registers a target about to be started; signals arriving before
        /// [`Forwarding::started`] are held and delivered then.
        pub(super) fn begin() -> Forwarding {
            let mut state = STATE.lock().unwrap_or_else(|e| e.into_inner());
            let slot = (0..SLOTS).find(|&i| {
                CHILD[i]
                    .compare_exchange(FREE, STARTING, SeqCst, SeqCst)
                    .is_ok()
            });
            if state.users == 0 {
                state.previous = install();
            }
            state.users += 1;
            Forwarding { slot }
        }

        /// The target runs as `pid`: forward from now on.
        pub(super) fn started(&self, pid: u32) {
            let Some(i) = self.slot else { return };
            let pid = pid as i32;
            CHILD[i].store(pid, SeqCst);
            let sig = PENDING[i].swap(0, SeqCst);
            if sig != 0 {
                // SAFETY: plain syscall.
                unsafe { libc::kill(pid, sig) };
            }
        }

        /// The target has exited (not yet reaped): stop forwarding.
        pub(super) fn ended(&self) {
            if let Some(i) = self.slot {
                CHILD[i].store(ENDED, SeqCst);
            }
        }
    }

    impl Drop for Forwarding {
        fn drop(&mut self) {
            let mut state = STATE.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(i) = self.slot {
                PENDING[i].store(0, SeqCst);
                CHILD[i].store(FREE, SeqCst);
            }
            state.users -= 1;
            if state.users == 0 {
                for (sig, old) in state.previous.drain(..) {
                    // SAFETY: restores a disposition sigaction returned.
                    unsafe { libc::sigaction(sig, &old, std::ptr::null_mut()) };
                }
            }
        }
    }

    /// Installs the handler for every signal that is not ignored; returns
    /// the replaced dispositions.
    fn install() -> Vec<(libc::c_int, libc::sigaction)> {
        let mut previous = Vec::new();
        for sig in SIGNALS {
            // SAFETY: sigaction with valid pointers; the handler only uses
            // atomics and async-signal-safe syscalls.
            unsafe {
                let mut old: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(sig, std::ptr::null(), &mut old) != 0
                    || old.sa_sigaction == libc::SIG_IGN
                {
                    // Ignored stays ignored, for us and for the target.
                    continue;
                }
                let mut new: libc::sigaction = std::mem::zeroed();
                new.sa_sigaction = handler as *const () as libc::sighandler_t;
                new.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
                libc::sigemptyset(&mut new.sa_mask);
                if libc::sigaction(sig, &new, &mut old) == 0 {
                    previous.push((sig, old));
                }
            }
        }
        previous
    }

    extern "C" fn handler(sig: libc::c_int, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
        if sig != libc::SIGQUIT {
            STOP_SIGNALS_SEEN.fetch_add(1, SeqCst);
        }
        // SAFETY: the kernel passes a valid siginfo with SA_SIGINFO.
        let from_terminal = !info.is_null() && unsafe { (*info).si_code } == libc::SI_KERNEL;
        // SAFETY: errno is thread-local; saved and restored around the
        // syscalls below.
        let errno = unsafe { *libc::__errno_location() };
        for i in 0..SLOTS {
            let pid = CHILD[i].load(SeqCst);
            if pid == STARTING {
                PENDING[i].store(sig, SeqCst);
                // Started meanwhile? Then whoever swaps first sends it.
                let pid = CHILD[i].load(SeqCst);
                if pid > 0 {
                    let held = PENDING[i].swap(0, SeqCst);
                    if held != 0 {
                        // SAFETY: plain syscall.
                        unsafe { libc::kill(pid, held) };
                    }
                }
            } else if pid > 0 {
                // SAFETY: plain syscalls.
                unsafe {
                    // The terminal signals its whole foreground process
                    // group, which includes a target still in ours.
                    if from_terminal && libc::getpgid(pid) == libc::getpgrp() {
                        continue;
                    }
                    libc::kill(pid, sig);
                }
            }
        }
        // SAFETY: see above.
        unsafe { *libc::__errno_location() = errno };
    }
}

/// Number of MPI rank traces (`rank-*.cmpi`) in `DIR/mpi`.
fn count_mpi_ranks(mpi: &Path) -> usize {
    fs::read_dir(mpi).map_or(0, |entries| {
        entries
            .filter_map(Result::ok)
            .filter(|e| {
                let name = e.file_name();
                let name = name.to_string_lossy();
                name.starts_with("rank-") && name.ends_with(".cmpi")
            })
            .count()
    })
}

/// The MPI implementation for `--mpi` and the installed recorder library.
fn mpi_recorder(
    opts: &RecordOptions,
    program: &Path,
    cwd: &Path,
) -> Result<(MpiImplementation, PathBuf), RecordError> {
    let imp = match opts.mpi_impl {
        Some(imp) => imp,
        None => detect_mpi_implementation(
            program,
            &opts.command[1..],
            cwd,
            std::env::var_os("PATH").as_deref(),
        )
        .map_err(|problem| RecordError::Mpi { problem })?,
    };
    match contend_collector::install_mpi_recorder(imp) {
        Ok(Some(path)) => Ok((imp, path)),
        Ok(None) => Err(RecordError::Mpi {
            problem: format!(
                "this contend was built without {} headers, so it has no MPI recorder for {}; \
                 install them (Debian: {}) and rebuild contend",
                imp.name(),
                imp.name(),
                match imp {
                    MpiImplementation::OpenMpi => "libopenmpi-dev",
                    MpiImplementation::Mpich => "libmpich-dev",
                }
            ),
        }),
        Err(source) => Err(RecordError::Collector { source }),
    }
}

/// Which MPI implementation a command uses, for `--mpi` (the recorder must
/// match the ABI of the `libmpi` loaded into the ranks).
///
/// Tried in order: the dynamic dependencies (`libmpi.so*`: Open MPI,
/// `libmpich.so*`: MPICH) of the program and of every argument that names
/// an ELF file (the application after `mpirun -np 4`); the launcher's name
/// after resolving symbolic links (`orterun`, `*openmpi*`: Open MPI;
/// `*mpich*`, `*hydra*`: MPICH); the `--version` output of an
/// `mpirun`/`mpiexec`; the same for the `mpirun` found on `PATH` (a Python
/// script with mpi4py, a shell script).
///
/// # Errors
///
/// A sentence saying that the implementation could not be told and how to
/// name it (`--mpi-impl`).
pub fn detect_mpi_implementation(
    program: &Path,
    args: &[String],
    cwd: &Path,
    path_var: Option<&OsStr>,
) -> Result<MpiImplementation, String> {
    // 1. ELF files among the program and its arguments
    let mut files = vec![program.to_path_buf()];
    for a in args {
        if a.starts_with('-') || a.is_empty() {
            continue;
        }
        let p = if a.contains('/') || cwd.join(a).is_file() {
            cwd.join(a)
        } else if let Some(found) = path_var.and_then(|pv| {
            std::env::split_paths(pv)
                .map(|d| d.join(a))
                .find(|p| p.is_file())
        }) {
            found
        } else {
            continue;
        };
        if p.is_file() {
            files.push(p);
        }
    }
    for f in &files {
        if let Some(imp) = mpi_of_elf(f) {
            return Ok(imp);
        }
    }
    // 2./3. the launcher, then the mpirun on PATH
    let mut launchers = vec![program.to_path_buf()];
    if let Some(pv) = path_var {
        if let Some(m) = std::env::split_paths(pv)
            .map(|d| d.join("mpirun"))
            .find(|p| p.is_file())
        {
            launchers.push(m);
        }
    }
    for l in &launchers {
        if let Some(imp) = mpi_of_launcher(l) {
            return Ok(imp);
        }
    }
    Err(format!(
        "cannot tell which MPI implementation `{}` uses (no libmpi in its dependencies or its \
         arguments', no known mpirun); name it with --mpi-impl openmpi|mpich",
        program.display()
    ))
}

/// Open MPI or MPICH from an ELF file's dynamic string table
/// (`libmpi.so.40` / `libmpich.so.12` among its `DT_NEEDED`).
fn mpi_of_elf(path: &Path) -> Option<MpiImplementation> {
    let meta = fs::metadata(path).ok()?;
    if !meta.is_file() || meta.len() > 512 << 20 {
        return None;
    }
    let bytes = fs::read(path).ok()?;
    if !bytes.starts_with(b"\x7fELF") {
        return None;
    }
    let file = object::File::parse(&*bytes).ok()?;
    use object::read::elf::{Dyn, FileHeader};
    let needed: Vec<Vec<u8>> = match &file {
        object::File::Elf64(elf) => {
            let endian = elf.endian();
            let header = elf.elf_header();
            let data = elf.data();
            let sections = header.sections(endian, data).ok()?;
            let mut out = Vec::new();
            if let Some((dynamic, link)) = sections.dynamic(endian, data).ok()? {
                let strings = sections.strings(endian, data, link).ok()?;
                for d in dynamic {
                    if d.tag32(endian) == Some(object::elf::DT_NEEDED) {
                        if let Ok(name) = d.string(endian, strings) {
                            out.push(name.to_vec());
                        }
                    }
                }
            }
            out
        }
        _ => return None,
    };
    for n in &needed {
        if n.starts_with(b"libmpich") {
            return Some(MpiImplementation::Mpich);
        }
        if n.starts_with(b"libmpi.so") || n.starts_with(b"libmpi_") {
            return Some(MpiImplementation::OpenMpi);
        }
    }
    None
}

/// Open MPI or MPICH from a launcher: its name after resolving links, then
/// (for an `mpirun`/`mpiexec`) its `--version` output.
fn mpi_of_launcher(path: &Path) -> Option<MpiImplementation> {
    let real = fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let name = real.file_name()?.to_string_lossy().to_lowercase();
    if name.contains("orterun") || name.contains("openmpi") || name == "prterun" {
        return Some(MpiImplementation::OpenMpi);
    }
    if name.contains("mpich") || name.contains("hydra") {
        return Some(MpiImplementation::Mpich);
    }
    if !(name.starts_with("mpirun") || name.starts_with("mpiexec")) {
        return None;
    }
    let out = Command::new(&real)
        .arg("--version")
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    if text.contains("Open MPI") || text.contains("OpenRTE") {
        Some(MpiImplementation::OpenMpi)
    } else if text.contains("HYDRA") || text.contains("MPICH") {
        Some(MpiImplementation::Mpich)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn preload_prepends() {
        let c = Path::new("/c/lib.so");
        assert_eq!(preload_value(c, None), OsString::from("/c/lib.so"));
        assert_eq!(
            preload_value(c, Some(&OsString::from(""))),
            OsString::from("/c/lib.so")
        );
        assert_eq!(
            preload_value(c, Some(&OsString::from("/x.so /y.so"))),
            OsString::from("/c/lib.so:/x.so /y.so")
        );
    }

    #[test]
    fn env_summary_keeps_only_relevant_variables() {
        let env: BTreeMap<OsString, OsString> = [
            ("PATH", "/bin"),
            ("CONTEND_DIR", "/r"),
            ("OMP_NUM_THREADS", "4"),
            ("LD_PRELOAD", "/c.so"),
            ("LD_LIBRARY_PATH", "/l"),
            ("HOME", "/root"),
        ]
        .into_iter()
        .map(|(k, v)| (k.into(), v.into()))
        .collect();
        let kept: Vec<_> = recorded_env(&env).into_keys().collect();
        assert_eq!(kept, ["CONTEND_DIR", "LD_PRELOAD", "OMP_NUM_THREADS"]);
    }

    #[test]
    fn cpu_lists() {
        assert_eq!(parse_cpu_list("0"), Ok(vec![0]));
        assert_eq!(parse_cpu_list("0-1"), Ok(vec![0, 1]));
        assert_eq!(parse_cpu_list("3,0,2-3"), Ok(vec![0, 2, 3]));
        assert_eq!(parse_cpu_list(" 1 - 2 "), Ok(vec![1, 2]));
        for bad in ["", "a", "1-0", "0,", ",1", "1-", "-1", "0-1-2", "5000"] {
            assert!(parse_cpu_list(bad).is_err(), "{bad:?}");
        }
        assert!(parse_cpu_list("1-0").unwrap_err().contains("backwards"));
        assert!(parse_cpu_list("x").unwrap_err().contains("`x`"));
        assert_eq!(format_cpu_list(&[0, 1, 2, 5, 7, 8]), "0-2,5,7-8");
        assert_eq!(format_cpu_list(&[]), "");
        let online = online_cpu_list();
        assert!(!online.is_empty());
        assert_eq!(first_online_cpus(1), Ok(vec![online[0]]));
        assert!(first_online_cpus(0).is_err());
        assert!(first_online_cpus(online.len() as u32 + 1)
            .unwrap_err()
            .contains("online"));
        let e = placement_set(&[1000]).unwrap_err().to_string();
        assert!(e.contains("CPU 1000 not online"), "{e}");
        assert!(placement_set(&online).is_ok());
        assert_eq!(affinity(0).map(|a| a.is_empty()), Some(false));
    }

    #[test]
    fn cpuinfo_parsing() {
        let c = CpuInfo::parse(
            "processor\t: 0\nmodel name\t: Some CPU @ 2.0GHz\nflags\t\t: fpu tsc constant_tsc nonstop_tsc\n\nprocessor\t: 1\n",
        );
        assert_eq!(c.model, "Some CPU @ 2.0GHz");
        assert!(c.invariant_tsc);
        let c = CpuInfo::parse("flags\t: fpu constant_tsc\n");
        assert!(!c.invariant_tsc);
        assert_eq!(c.model, "");
    }

    #[test]
    fn resolves_like_a_shell() {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        fs::create_dir(&bin).unwrap();
        let exe = bin.join("tool");
        fs::write(&exe, "#!/bin/sh\n").unwrap();
        fs::set_permissions(&exe, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        let plain = bin.join("data");
        fs::write(&plain, "x").unwrap();
        fs::set_permissions(&plain, std::os::unix::fs::PermissionsExt::from_mode(0o644)).unwrap();
        let path = std::env::join_paths(["/nonexistent", bin.to_str().unwrap()]).unwrap();
        assert_eq!(
            resolve_command("tool", Some(&path), dir.path()).unwrap(),
            exe
        );
        assert!(matches!(
            resolve_command("nope", Some(&path), dir.path()),
            Err(RecordError::CommandNotFound { .. })
        ));
        let e = resolve_command("data", Some(&path), dir.path()).unwrap_err();
        assert_eq!(e.shell_status(), Some(126), "{e}");
        assert_eq!(
            resolve_command("bin/tool", Some(&path), dir.path()).unwrap(),
            PathBuf::from("bin/tool")
        );
        assert!(matches!(
            resolve_command("bin/nope", Some(&path), dir.path()),
            Err(RecordError::CommandNotFound { .. })
        ));
        // An empty PATH entry is the working directory.
        assert_eq!(
            resolve_command("tool", Some(OsStr::new(":/nonexistent")), &bin).unwrap(),
            exe
        );
    }

    #[test]
    fn setuid_file_of_another_user_is_flagged() {
        if unsafe { libc::getuid() } != 0 {
            eprintln!("skipped: needs root to give a file to another user");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let exe = dir.path().join("suid");
        fs::write(&exe, "#!/bin/sh\n").unwrap();
        std::os::unix::fs::chown(&exe, Some(65534), None).unwrap();
        fs::set_permissions(&exe, std::os::unix::fs::PermissionsExt::from_mode(0o4755)).unwrap();
        let w = inspect_executable(&exe);
        assert!(
            w.iter()
                .any(|w| w.contains("setuid: the loader ignores LD_PRELOAD")),
            "{w:?}"
        );
    }

    #[test]
    fn elf_classification() {
        let me = fs::read("/bin/sh").unwrap();
        assert_eq!(elf_kind(&me), Some(ElfKind::Dynamic64));
        assert_eq!(elf_kind(b"not an elf"), None);
        assert!(inspect_executable(Path::new("/bin/sh")).is_empty());
    }
}
