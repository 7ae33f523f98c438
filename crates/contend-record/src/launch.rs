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
//!    `CONTEND_TSC_HZ`, `CONTEND_STACK_EVERY`, `CONTEND_CHUNK_KB`,
//!    `CONTEND_LIGHT` with [`RecordOptions::light`]) and the
//!    launcher's standard input, output and error. Between `fork` and
//!    `exec` the child pins itself to [`RecordOptions::cpus`] (if given;
//!    the list was checked against the online CPUs before step 2) and opens the performance counters on itself
//!    ([`crate::counters`]: `inherit`, `enable_on_exec`) and hands them to
//!    the launcher, which reads them once the target has been reaped
//!    (with `wait4`, whose resource usage gives the CPU time) and stores
//!    them in `meta.json` (`counters`).
//!    Right after it started, a sampler thread
//!    ([`crate::sampler`]) begins reading the service time of its
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
//!    collector never ran in the target, which is reported. Before that,
//!    the build ID, size and modification time of every mapped executable
//!    and library go into `modules.json`, and the files into the build-id
//!    cache unless [`RecordOptions::buildid_cache`] is off
//!    ([`crate::buildid`]; a problem there is a warning, never a failed
//!    recording).
//!
//! With [`RecordOptions::mpi`] (`contend record --mpi`) the MPI recorder
//! for the command's MPI implementation
//! ([`detect_mpi_implementation`](crate::mpi::detect_mpi_implementation))
//! is preloaded instead of the lock collector (beside it with
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
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime};

use contend_trace::meta::{format_utc, MetaError, RecordLimits, RunMeta, FORMAT_VERSION};

use crate::counters;
use crate::cpus::{affinity, placement_set};
use crate::executable::{inspect_executable, resolve_command};
use crate::host::{monotonic_ns, online_cpus, uname, Clock, CpuInfo};
use crate::mpi::{count_mpi_ranks, mpi_recorder, MpiProblem};
use crate::sampler::Sampler;
use crate::signals::forward;

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
    /// `service.csamp` ([`crate::sampler`]).
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
    /// command
    /// ([`detect_mpi_implementation`](crate::mpi::detect_mpi_implementation)).
    pub mpi_impl: Option<MpiImplementation>,
    /// Run a program the collector cannot be loaded into (statically
    /// linked, setuid, 32-bit) anyway, for its service time and counters
    /// (`--yes`); without it such a program is refused before it runs
    /// ([`RecordError::CannotTrace`]).
    pub run_untraced: bool,
    /// Sample data addresses for the NUMA analysis (`--numa`): which pages
    /// the program touches, from which node ([`crate::numa::sampler`]),
    /// into `DIR/numa/`.
    pub numa: Option<crate::numa::NumaRecordOptions>,
    /// Copy the executable and libraries the program mapped into the
    /// build-id cache after the run (default `true`; `false` with
    /// `--no-buildid-cache`). Their build IDs are recorded in
    /// `modules.json` either way ([`crate::buildid`]).
    pub buildid_cache: bool,
    /// Light mode (`--light`, `CONTEND_LIGHT=1`): uncontended acquisitions
    /// are only counted per call site and thread, without timestamps or
    /// trace records; contended acquisitions and their releases are
    /// recorded in full (HaLock, Huang et al. 2012: only contended locks
    /// need full timing).
    pub light: bool,
    /// `--start-after`: record lock operations only from this long after
    /// the start (zero = from the start). The program runs from the start
    /// either way.
    pub start_after: Duration,
    /// `--duration`: record lock operations for this long only (from
    /// `start_after`); the program runs on unrecorded. `None` = to the end.
    pub duration: Option<Duration>,
    /// `--max-size`: stop recording lock operations once the trace data of
    /// all processes together would pass this many bytes (the recording
    /// stays valid up to there). `None` = no cap.
    pub max_bytes: Option<u64>,
    /// Functions to probe with uprobes (`--function NAME[,NAME…]`, each
    /// `NAME`, `LIB:NAME` or `MODULE:0xOFFSET`; [`crate::functions`]),
    /// for the interference (SCI) analysis.
    pub functions: Vec<String>,
    /// Keep one probed call in N per thread (`--function-every N`; 1 =
    /// every call) and one `-finstrument-functions` call in N.
    pub function_every: u32,
    /// Record the `-finstrument-functions` hooks of a program built with
    /// them (`--instrumented-functions`).
    pub instrumented_functions: bool,
    /// Profile the program first and probe its K hottest functions
    /// (`--hot-functions K`; [`crate::hot`]): the program runs twice.
    pub hot_functions: Option<u32>,
    /// Probe functions of modules with exception-handling tables too
    /// (`--probe-exception-code`; see
    /// [`crate::functions::EXCEPTION_RETURN_PROBES`]).
    pub probe_exception_code: bool,
    /// `--futex-trace`: when futex calls are traced through the kernel's
    /// tracepoints ([`crate::futex_trace`]); by default for a statically
    /// linked target, which is then run instead of refused.
    pub futex_trace: crate::futex_trace::FutexTraceMode,
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
            run_untraced: false,
            numa: None,
            buildid_cache: true,
            light: false,
            start_after: Duration::ZERO,
            duration: None,
            max_bytes: None,
            functions: Vec::new(),
            function_every: 1,
            instrumented_functions: false,
            probe_exception_code: false,
            hot_functions: None,
            futex_trace: crate::futex_trace::FutexTraceMode::Auto,
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
    #[error("{}: already exists; choose another output directory with -o, or replace the recording with --force", path.display())]
    OutputExists {
        /// The output path.
        path: PathBuf,
    },
    /// The output path is a symbolic link, which is never followed or
    /// removed (even with `force`). Nothing was created.
    #[error("{}: is a symbolic link{}; give the directory itself or another name with -o", path.display(), if *dangling { format!(" to {}, which does not exist", target.display()) } else { format!(" (to {})", target.display()) })]
    OutputIsLink {
        /// The output path.
        path: PathBuf,
        /// Where the link points.
        target: PathBuf,
        /// The link points to nothing.
        dangling: bool,
    },
    /// The collector cannot be loaded into the program (statically
    /// linked, setuid or setgid, 32-bit), so no lock could be traced.
    /// Nothing was run or created; [`RecordOptions::run_untraced`] runs it
    /// anyway.
    #[error("{}. Nothing was run: `contend record --yes` runs it anyway, for its service time and counters, without lock traces", reasons.join("; "))]
    CannotTrace {
        /// Why, one sentence each.
        reasons: Vec<String>,
    },
    /// The output directory's parent does not exist. Nothing was created.
    #[error("{}: cannot create it: the directory {} does not exist", path.display(), parent.display())]
    NoParent {
        /// The output path.
        path: PathBuf,
        /// Its missing parent.
        parent: PathBuf,
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
        problem: MpiProblem,
    },
    /// `--numa-latency` names a file that is not a latency table. Nothing
    /// was created.
    #[error("record --numa: {0}")]
    Numa(String),
    /// A `--function` list that does not parse, or `--function-every 0`.
    /// Nothing was created.
    #[error(transparent)]
    Functions(#[from] crate::functions::FunctionListError),
    /// `--function-every 0` or `--hot-functions 0`.
    #[error("{flag} {value}: must be at least 1")]
    ZeroCount {
        /// The flag.
        flag: &'static str,
        /// The value given.
        value: u32,
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

/// Something that runs beside the target while it is recorded (`contend
/// record --meters` stores the meters' time series in the recording):
/// told when the target started and when it ended.
pub trait RunObserver {
    /// The target (pid `pid`) started at `start_ns` (CLOCK_MONOTONIC);
    /// `dir` is the recording directory.
    fn started(&mut self, dir: &Path, pid: u32, start_ns: u64);
    /// The target ended (before the launcher reaps it); returns warnings
    /// for the user and `meta.json`, one sentence each.
    fn ended(&mut self) -> Vec<String>;
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
    record_observed(opts, &mut [])
}

/// [`record`], telling each of `observers` when the target started and
/// ended ([`RunObserver`]).
pub fn record_observed(
    opts: &RecordOptions,
    observers: &mut [&mut dyn RunObserver],
) -> Result<RecordOutcome, RecordError> {
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
    if opts.function_every == 0 {
        return Err(RecordError::ZeroCount {
            flag: "--function-every",
            value: 0,
        });
    }
    if opts.hot_functions == Some(0) {
        return Err(RecordError::ZeroCount {
            flag: "--hot-functions",
            value: 0,
        });
    }
    let mut function_requests = crate::functions::parse_function_list(&opts.functions)?;
    let mut warnings = inspect_executable(&program);
    // A statically linked program (and nothing else in the way): its
    // futex waits can be traced through the kernel's tracepoints.
    let static_target =
        !warnings.is_empty() && warnings.iter().all(|w| w.contains(" is statically linked"));
    let futex_reason = opts.futex_trace.reason(static_target, false);
    let static_traced = static_target && futex_reason.is_some() && !opts.run_untraced && !opts.mpi;
    if static_traced {
        match crate::futex_trace::check_allowed() {
            Ok(()) => {
                warnings.push(
                    "its futex waits (its locks, condition variables and barriers) are traced through the kernel's futex tracepoints instead (section futex; --futex-trace off to refuse it)"
                        .into(),
                );
            }
            Err(why) => {
                warnings.push(why);
                return Err(RecordError::CannotTrace { reasons: warnings });
            }
        }
    } else if !warnings.is_empty() && !opts.run_untraced && !opts.mpi {
        // Before anything is created or run: a program that cannot be
        // traced is the user's call to make, not a surprise afterwards.
        return Err(RecordError::CannotTrace { reasons: warnings });
    }
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

    let numa_latency = match opts.numa.as_ref().and_then(|n| n.latency.as_ref()) {
        Some(p) => Some(
            contend_trace::numa::LatencyTable::read(p)
                .map_err(|e| RecordError::Numa(e.to_string()))?,
        ),
        None => None,
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
    if opts.numa.is_some() {
        let p = dir.join(contend_trace::numa::NUMA_DIR);
        fs::create_dir(&p).map_err(io_err(&p))?;
        if let Some(table) = &numa_latency {
            let f = p.join(contend_trace::numa::LATENCY_FILE);
            if let Err(e) = table.write(&f) {
                warnings.push(format!(
                    "the calibration is not stored with the recording: {e}"
                ));
            }
        }
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
    if opts.light {
        env.insert("CONTEND_LIGHT".into(), "1".into());
    }
    // The window and the size cap: the control page every traced process
    // maps (contend_trace::control).
    let limited =
        !opts.start_after.is_zero() || opts.duration.is_some() || opts.max_bytes.is_some();
    let control = if limited {
        let p = abs_dir.join(contend_trace::control::FILE_NAME);
        match contend_trace::control::ControlPage::create(
            &p,
            opts.start_after.is_zero(),
            opts.max_bytes.unwrap_or(0),
        ) {
            Ok(page) => {
                env.insert("CONTEND_CONTROL".into(), p.into_os_string());
                Some(std::sync::Arc::new(page))
            }
            Err(e) => {
                let _ = fs::remove_dir_all(dir);
                return Err(io_err(&p)(e));
            }
        }
    } else {
        None
    };
    if limited && mpi_recorder.is_some() {
        warnings.push(
            "--start-after, --duration and --max-size limit the lock traces only; \
             the MPI traces are recorded whole"
                .to_string(),
        );
    }
    if opts.instrumented_functions {
        env.insert("CONTEND_FUNCTIONS".into(), "1".into());
    }
    if opts.function_every > 1 {
        env.insert(
            "CONTEND_FUNCTION_EVERY".into(),
            opts.function_every.to_string().into(),
        );
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
        limits: limited.then(|| RecordLimits {
            start_after_ns: opts.start_after.as_nanos() as u64,
            duration_ns: opts.duration.map(|d| d.as_nanos() as u64),
            max_bytes: opts.max_bytes,
            ..RecordLimits::default()
        }),
        ..RunMeta::default()
    };
    meta.start_utc = format_utc(SystemTime::now());
    meta.start_monotonic_ns = monotonic_ns();
    if let Err(e) = meta.write(dir) {
        let _ = fs::remove_dir_all(dir);
        return Err(e.into());
    }

    // --hot-functions: profile a first, unrecorded run to choose them.
    let mut hot = Vec::new();
    let mut hot_samples = 0;
    // A Go program's functions are never probed (GO_RETURN_PROBES): it is
    // not run a first time for a choice that would be refused.
    if let Some(k) = opts
        .hot_functions
        .filter(|_| crate::functions::ModuleSymbols::read(&program).go)
    {
        warnings.push(format!(
            "--hot-functions {k}: {} {}; it was not profiled and runs once",
            program.display(),
            crate::functions::GO_RETURN_PROBES
        ));
    } else if let Some(k) = opts.hot_functions {
        match profile_run(&program, name, &opts.command[1..], cpu_set.as_ref()) {
            Ok(profile) => {
                let chosen = profile.choose(k as usize);
                warnings.push(hot_summary(&profile, &chosen, k));
                for f in &chosen {
                    function_requests.push(crate::functions::FunctionRequest {
                        text: format!("{}:{}", f.module, f.function),
                        module: Some(f.module.clone()),
                        target: crate::functions::FunctionTarget::Symbol(f.function.clone()),
                    });
                }
                hot_samples = profile.samples;
                hot = profile.functions;
            }
            Err(e) => warnings.push(format!("--hot-functions: {e}; no function was chosen")),
        }
    }
    let (probes, refused) = if function_requests.is_empty() {
        (Vec::new(), Vec::new())
    } else {
        crate::functions::resolve_functions(
            &function_requests,
            &crate::functions::program_modules(&program),
            opts.probe_exception_code,
        )
    };
    warnings.extend(contend_trace::probes::refusal_warnings(&refused, false));
    let mut probe_session = match crate::probes::ProbeSession::start(
        dir,
        crate::probes::SessionKind::Record {
            probes,
            refused,
            every: opts.function_every,
            hot,
            hot_samples,
            futex: futex_reason,
        },
    ) {
        Ok(s) => Some(s),
        Err(e) => {
            warnings.push(format!(
                "thread lifetimes and function probes are not recorded: {e}"
            ));
            None
        }
    };
    let probe_hook = probe_session
        .as_ref()
        .map(crate::probes::ProbeSession::child_hook);

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
            if let Some(h) = &probe_hook {
                h.run();
            }
            Ok(())
        });
    }
    // NUMA sampling: the child waits before exec until a helper thread has
    // opened the sampling events on it (crate::numa::sampler).
    let mut numa_failure = None;
    let numa_prepared = match &opts.numa {
        Some(n) => match crate::numa::sampler::Prepared::new(&n.sampler) {
            Ok(p) => Some(p),
            Err(e) => {
                numa_failure = Some(e);
                None
            }
        },
        None => None,
    };
    if let Some(numa_child) = numa_prepared.as_ref().map(|p| p.child_part()) {
        // SAFETY: the hook only makes system calls on descriptors it was
        // given (no allocation, no locks).
        unsafe {
            cmd.pre_exec(move || {
                numa_child.handshake();
                Ok(())
            });
        }
    }
    // Service time from scheduler events: opened on the child before its
    // exec (crate::sched_events), so that its threads inherit them.
    let service_source = crate::sched_events::ServiceSource::from_env();
    let sched_prepared = match service_source {
        crate::sched_events::ServiceSource::Schedstat => None,
        _ => crate::sched_events::Prepared::new().ok(),
    };
    if let Some(part) = sched_prepared
        .as_ref()
        .map(crate::sched_events::Prepared::child_part)
    {
        // SAFETY: the hook only makes system calls on a descriptor it was
        // given (no allocation, no locks).
        unsafe {
            cmd.pre_exec(move || {
                part.handshake();
                Ok(())
            });
        }
    }
    let forwarding = forward::Forwarding::begin();
    // The final record has the start taken right here, after the (synced)
    // start record was written.
    let start_utc = format_utc(SystemTime::now());
    let start_ns = monotonic_ns();
    let spawned = cmd.spawn();
    if let Some(s) = &mut probe_session {
        s.spawned();
    }
    let sched_events = sched_prepared.map(crate::sched_events::Prepared::events);
    let child = match spawned {
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
    let window = control
        .as_ref()
        .map(|page| WindowTimer::start(page.clone(), start_ns, opts.start_after, opts.duration));
    meta.cpus_allowed = affinity(pid);
    let mut opened =
        prepared.map(|p| p.collect("the target did not report its counters before exec"));
    if let Some(o) = opened.as_mut() {
        o.drop_lone_task_clock(
            std::env::var_os("CONTEND_KEEP_TASK_CLOCK").is_some_and(|v| v == "1"),
        );
    }
    let numa_sampler = numa_prepared.and_then(|p| match p.start() {
        Ok(s) => Some(s),
        Err(e) => {
            numa_failure = Some(e);
            None
        }
    });
    let sampler = match Sampler::start_with(
        &dir.join(contend_trace::service::FILE_NAME),
        pid,
        opts.interval,
        start_ns,
        service_source,
        sched_events,
    ) {
        Ok(s) => Some(s),
        Err(e) => {
            warnings.push(format!("service time is not sampled: {e}"));
            None
        }
    };

    for o in observers.iter_mut() {
        o.started(dir, pid, start_ns);
    }
    // The lock traces' next chunks made ready outside the target
    // (chunk_prep): only where the lock collector is preloaded, and not
    // under --max-size (prepared chunks take disk blocks ahead of the
    // claims the cap counts).
    let lock_collector = mpi_recorder.is_none() || opts.mpi_with_locks;
    let chunk_preparer = if lock_collector
        && opts.max_bytes.is_none()
        && crate::chunk_prep::enabled()
    {
        match crate::chunk_prep::ChunkPreparer::start(dir.join("locks")) {
            Ok(p) => Some(p),
            Err(e) => {
                warnings.push(format!(
                    "the lock traces' chunks are not prepared ahead (the collector writes them itself): {e}"
                ));
                None
            }
        }
    } else {
        None
    };

    // Wait without reaping, stop forwarding, then reap: a signal arriving
    // late can never hit another process that reused the pid.
    let waited = wait_exited(pid);
    for o in observers.iter_mut() {
        warnings.extend(o.ended());
    }
    if let Err(source) = waited {
        drop(forwarding);
        if let Some(s) = numa_sampler {
            s.stop();
        }
        if let Some(s) = sampler {
            s.stop();
        }
        return Err(RecordError::Wait { pid, source });
    }
    let end_ns = monotonic_ns();
    // every collector has ended: nothing more to prepare
    let chunk_prep_meta = chunk_preparer.map(crate::chunk_prep::ChunkPreparer::stop);
    // The final sample is taken before reaping, while the target's main
    // thread can still be read.
    let sampler_meta = sampler
        .map(Sampler::stop)
        .map(|stats| stats.into_meta(service_source, &mut warnings));
    // Without a sampler the recording still says why (sampler.json).
    let numa_set = match (numa_sampler, numa_failure) {
        (Some(s), _) => Some(s.stop()),
        (None, Some(why)) => {
            warnings.push(format!("NUMA accesses were not sampled: {why}"));
            Some(crate::numa::SampleSet {
                info: contend_trace::numa::SamplerInfo {
                    notes: vec![format!("not sampled: {why}")],
                    ..Default::default()
                },
                samples: Vec::new(),
            })
        }
        (None, None) => None,
    };
    if let Some(set) = numa_set {
        if let Err(e) = set.write(dir) {
            warnings.push(format!("the NUMA samples could not be written: {e}"));
        }
    }
    if let Some(s) = probe_session {
        warnings.extend(s.finish().warnings);
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

    if let (Some(limits), Some(page)) = (meta.limits.as_mut(), control.as_ref()) {
        let (opened, closed) = window.map_or((None, None), WindowTimer::finish);
        limits.window_opened_ns = opened;
        limits.window_closed_ns = closed;
        match page.state() {
            Ok(state) => limits.capped_ns = state.capped_ns,
            Err(e) => warnings.push(format!("cannot read the control page: {e}")),
        }
        if let (Some(at), Some(max)) = (limits.capped_ns, limits.max_bytes) {
            warnings.push(format!(
                "the size cap (--max-size {max} bytes) was reached {:.3} s into the run: \
                 lock operations after that were not recorded (the recording is valid up to there)",
                at.saturating_sub(start_ns) as f64 / 1e9
            ));
        }
    }

    // Traces of processes that are gone take on disk only what they wrote.
    release_unwritten_pages(&dir.join("locks"), &mut warnings);

    let traces = count_traces(&dir.join("locks"));
    // A statically linked program traced through the futex tracepoints
    // has no lock trace by design; the warning before the run said so.
    if traces == 0 && mpi_recorder.is_none() && !static_traced {
        warnings.push(
            "no lock trace was written: the program may be statically linked, setuid, \
             or cleared LD_PRELOAD"
                .to_string(),
        );
    }
    let mpi_ranks = count_mpi_ranks(&dir.join("mpi"));
    if let (Some((imp, _)), Some(forced), 0) = (&mpi_recorder, opts.mpi_impl, mpi_ranks) {
        // --mpi-impl named the implementation: if the program uses the
        // other one, the recorder passed every call through and said so.
        let detected = crate::mpi::detect_mpi_implementation(
            &program,
            &opts.command[1..],
            &cwd,
            std::env::var_os("PATH").as_deref(),
        )
        .ok();
        if detected.is_some_and(|d| d != forced) {
            warnings.push(format!(
                "no MPI call was recorded: --mpi-impl named {} but the program uses {}; the \
                 recorder passed every call on unrecorded (leave --mpi-impl out to detect it)",
                imp.name(),
                detected.map_or("another MPI", |d| d.name())
            ));
        }
    }
    // The identity of every mapped object, and its copy in the build-id
    // cache, so that a rebuild cannot make this recording's sites lie.
    let mut skip = vec![collector.clone()];
    skip.extend(mpi_recorder.as_ref().map(|(_, r)| r.clone()));
    let modules = crate::buildid::record_modules(
        dir,
        &crate::buildid::ModuleOptions {
            copy: opts.buildid_cache,
            skip,
            ..crate::buildid::ModuleOptions::default()
        },
    );
    warnings.extend(modules.warnings);
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
    meta.sampler = sampler_meta;
    meta.chunk_preparation = chunk_prep_meta;
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

/// Opens and closes the recording window (`--start-after`, `--duration`)
/// on the control page while the target runs.
struct WindowTimer {
    stop: std::sync::mpsc::Sender<()>,
    thread: std::thread::JoinHandle<(Option<u64>, Option<u64>)>,
}

impl WindowTimer {
    /// Starts the timer: recording on at `start_ns + start_after` (the page
    /// was created on when `start_after` is zero), off `duration` later.
    fn start(
        page: std::sync::Arc<contend_trace::control::ControlPage>,
        start_ns: u64,
        start_after: Duration,
        duration: Option<Duration>,
    ) -> WindowTimer {
        let (stop, stopped) = std::sync::mpsc::channel::<()>();
        let thread = std::thread::spawn(move || {
            // true: the deadline passed; false: the run ended first
            let wait_until = |deadline_ns: u64| {
                let left = deadline_ns.saturating_sub(monotonic_ns());
                matches!(
                    stopped.recv_timeout(Duration::from_nanos(left)),
                    Err(std::sync::mpsc::RecvTimeoutError::Timeout)
                )
            };
            let open_at = start_ns + start_after.as_nanos() as u64;
            let opened = if start_after.is_zero() {
                Some(start_ns)
            } else if wait_until(open_at) {
                // off after the cap was reached: it stays off
                page.set_enabled(true)
                    .ok()
                    .filter(|on| *on)
                    .map(|_| monotonic_ns())
            } else {
                return (None, None);
            };
            let closed = match duration {
                Some(d) if wait_until(open_at + d.as_nanos() as u64) => {
                    page.set_enabled(false).ok().map(|_| monotonic_ns())
                }
                _ => None,
            };
            (opened, closed)
        });
        WindowTimer { stop, thread }
    }

    /// Stops the timer (the target ended) and says when the window opened
    /// and closed.
    fn finish(self) -> (Option<u64>, Option<u64>) {
        drop(self.stop);
        self.thread.join().unwrap_or((None, None))
    }
}

/// Runs the program once, unrecorded, under a CPU-clock profile
/// ([`crate::hot`]), with the launcher's environment and standard streams
/// (pinned like the recording when `cpus` is given).
fn profile_run(
    program: &Path,
    name: &str,
    args: &[String],
    cpus: Option<&libc::cpu_set_t>,
) -> Result<crate::hot::HotProfile, String> {
    let tmp = std::env::temp_dir();
    let mut session = crate::probes::ProbeSession::start(
        &tmp,
        crate::probes::SessionKind::Profile {
            period_ns: crate::hot::PROFILE_PERIOD_NS,
        },
    )
    .map_err(|e| format!("cannot start the profile: {e}"))?;
    let hook = session.child_hook();
    let cpus = cpus.copied();
    let mut cmd = Command::new(program);
    cmd.arg0(name).args(args);
    // SAFETY: the hook runs between fork and exec and only makes system
    // calls on data it owns.
    unsafe {
        cmd.pre_exec(move || {
            if let Some(set) = &cpus {
                if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), set) != 0 {
                    return Err(io::Error::last_os_error());
                }
            }
            hook.run();
            Ok(())
        });
    }
    let forwarding = forward::Forwarding::begin();
    let spawned = cmd.spawn();
    session.spawned();
    let mut child = spawned.map_err(|e| format!("{}: cannot start: {e}", program.display()))?;
    forwarding.started(child.id());
    let status = child.wait();
    forwarding.ended();
    drop(forwarding);
    let outcome = session.finish();
    let profile = crate::hot::HotProfile::from_outcome(&outcome);
    if profile.samples == 0 {
        let why = outcome.warnings.join("; ");
        return Err(format!(
            "the profiling run took no CPU-clock sample{}",
            if why.is_empty() {
                String::new()
            } else {
                format!(" ({why})")
            }
        ));
    }
    if let Ok(st) = status {
        if !st.success() {
            return Err(format!("the profiling run failed ({st})"));
        }
    }
    Ok(profile)
}

/// One sentence on what `--hot-functions` chose.
fn hot_summary(
    p: &crate::hot::HotProfile,
    chosen: &[&contend_trace::probes::HotFunction],
    k: u32,
) -> String {
    let list = |fs: &mut dyn Iterator<Item = &contend_trace::probes::HotFunction>| {
        fs.map(|f| format!("{} ({:.1}%)", f.function, f.share * 100.0))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let top = list(&mut p.functions.iter().take(5));
    if chosen.is_empty() {
        format!(
            "--hot-functions {k}: the program ran twice, first under a CPU-clock profile ({} samples); no function outside the C library reached 1% of them (hottest: {top}), so none is probed",
            p.samples
        )
    } else {
        format!(
            "--hot-functions {k}: the program ran twice, first under a CPU-clock profile ({} samples); probing {} (functions at or above 1%, C library and loader left out; hottest overall: {top})",
            p.samples,
            list(&mut chosen.iter().copied())
        )
    }
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
pub(crate) fn recorded_env(env: &BTreeMap<OsString, OsString>) -> BTreeMap<String, String> {
    env.iter()
        .map(|(k, v)| (k.to_string_lossy(), v))
        .filter(|(k, _)| k.starts_with("CONTEND_") || k.starts_with("OMP_") || k == "LD_PRELOAD")
        .map(|(k, v)| (k.into_owned(), v.to_string_lossy().into_owned()))
        .collect()
}

/// Refuses an existing output unless `force` and it is a recording, which
/// is then removed; finally creates the directory.
pub(crate) fn prepare_output(dir: &Path, force: bool) -> Result<(), RecordError> {
    match fs::symlink_metadata(dir) {
        Ok(meta) if meta.file_type().is_symlink() => {
            // Never follow or remove a link: say what it is.
            return Err(RecordError::OutputIsLink {
                path: dir.to_path_buf(),
                target: fs::read_link(dir).unwrap_or_default(),
                dangling: fs::metadata(dir).is_err(),
            });
        }
        Ok(meta) => {
            if !force {
                return Err(RecordError::OutputExists {
                    path: dir.to_path_buf(),
                });
            }
            let is_recording = meta.is_dir()
                && (dir.join(contend_trace::meta::META_FILE).is_file()
                    || dir.join("locks").is_dir());
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
        let parent = dir
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        if source.kind() == io::ErrorKind::AlreadyExists {
            RecordError::OutputExists {
                path: dir.to_path_buf(),
            }
        } else if source.kind() == io::ErrorKind::NotFound && !parent.is_dir() {
            RecordError::NoParent {
                path: dir.to_path_buf(),
                parent: parent.to_path_buf(),
            }
        } else {
            RecordError::Io {
                path: dir.to_path_buf(),
                source,
            }
        }
    })
}

/// [`crate::sparse::release_unwritten`] on every lock trace in `locks`
/// whose process has ended ([`crate::attach::process_gone`]; a live
/// process, the launcher's target's children that outlive it, keeps its
/// pages). A trace that cannot be handled is named in `warnings` and left
/// as it was.
fn release_unwritten_pages(locks: &Path, warnings: &mut Vec<String>) {
    let Ok(entries) = fs::read_dir(locks) else {
        return;
    };
    for path in entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension() == Some(OsStr::new("ctrace")))
    {
        if let Err(e) = crate::sparse::release_unwritten(&path, crate::attach::process_gone) {
            warnings.push(format!(
                "{}: could not release its unwritten pages ({e}); it reads the same, only larger",
                path.display()
            ));
        }
    }
}

pub(crate) fn count_traces(locks: &Path) -> usize {
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
pub(crate) fn reap(pid: u32) -> io::Result<(std::process::ExitStatus, u64)> {
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
}
