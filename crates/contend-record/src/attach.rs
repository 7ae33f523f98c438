//! Attaching to a running process (`contend record -p PID`): sample its
//! service time and count its performance counters until it exits, a
//! duration ends or a stop signal arrives; no lock tracing by the
//! collector, but, where allowed, its futex waits and wakes (every
//! contended wait of its locks, pthread or not) through the kernel's futex
//! tracepoints ([`crate::futex_trace`], `--futex-trace`).

use std::fs;
use std::os::fd::{AsRawFd, FromRawFd};
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use contend_trace::meta::{format_utc, RunMeta, FORMAT_VERSION};

use crate::counters;
use crate::cpus::affinity;
use crate::host::{monotonic_ns, online_cpus, uname, CpuInfo};
use crate::launch::{prepare_output, RecordError, RecordOutcome};
use crate::sampler::Sampler;
use crate::signals::Interrupt;

/// What to record with [`attach`] (`contend record -p PID`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttachOptions {
    /// Recording directory to create, as
    /// [`RecordOptions::output`](crate::RecordOptions::output).
    pub output: PathBuf,
    /// Replace `output` if it is a recording, as
    /// [`RecordOptions::force`](crate::RecordOptions::force).
    pub force: bool,
    /// The running process to sample.
    pub pid: u32,
    /// Stop after this long; `None` = until the process exits or the
    /// launcher gets `SIGINT`, `SIGTERM` or `SIGHUP`.
    pub duration: Option<Duration>,
    /// Service-time sampling interval, as
    /// [`RecordOptions::interval`](crate::RecordOptions::interval).
    pub interval: Duration,
    /// `--futex-trace`: trace its futex calls through the kernel's
    /// tracepoints (by default, where allowed; `Off`: not).
    pub futex_trace: crate::futex_trace::FutexTraceMode,
    /// Copy the process's executable and libraries into the build-id
    /// cache (`false` with `--no-buildid-cache`); their build IDs go into
    /// `modules.json` either way, as [`RecordOptions::buildid_cache`].
    ///
    /// [`RecordOptions::buildid_cache`]: crate::launch::RecordOptions::buildid_cache
    pub buildid_cache: bool,
}

/// What an attach recording with the futex tracepoints cannot know
/// (stored in `meta.json` instead of [`ATTACH_NO_LOCKS`]).
pub const ATTACH_FUTEX_ONLY: &str = "Lock operations were not traced by the collector: contend attached to a running process (`contend record -p PID`). Its futex waits and wakes were recorded through the kernel's futex tracepoints (section futex): every contended wait of its locks, pthread or not, from the attach on. An attach recording cannot know uncontended acquisitions (they never enter the kernel) nor hold times, nor waits that began before the attach.";

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
/// ([`contend_trace::meta::AttachMeta`]). Counters are opened on each thread of
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
        attach: Some(contend_trace::meta::AttachMeta {
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
    // The objects the process has mapped now, for modules.json (the
    // futex tracer replaces this snapshot with later ones).
    warnings.extend(snapshot_maps(dir, pid));
    // The threads' names now: one that exits before the end keeps it.
    let mut thread_names = tree_thread_names(pid);
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
    // The futex tracer (with thread lifetimes) in a probe session on the
    // running process.
    let futex_reason = opts.futex_trace.reason(false, true);
    let session =
        futex_reason.as_ref().and_then(|reason| {
            match crate::probes::ProbeSession::attach(
                dir,
                crate::probes::SessionKind::Record {
                    probes: Vec::new(),
                    refused: Vec::new(),
                    every: 1,
                    hot: Vec::new(),
                    hot_samples: 0,
                    futex: Some(reason.clone()),
                },
                pid,
            ) {
                Ok(s) => Some(s),
                Err(e) => {
                    warnings.push(format!("futex waits are not traced: {e}"));
                    None
                }
            }
        });
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
    meta.sampler = sampler.map(Sampler::stop).map(|stats| {
        stats.into_meta(
            crate::sched_events::ServiceSource::from_env(),
            &mut warnings,
        )
    });
    drop(interrupt);
    if let Some(s) = session {
        warnings.extend(s.finish().warnings);
        let traced = contend_trace::futex_calls::read_futex_trace(dir)
            .and_then(Result::ok)
            .is_some_and(|f| f.manifest.traced);
        if let (true, Some(a)) = (traced, meta.attach.as_mut()) {
            a.no_lock_tracing_reason = ATTACH_FUTEX_ONLY.into();
        }
    }
    let mut run_counters = opened.read();
    run_counters.scope = Some(ATTACH_COUNTER_SCOPE.into());
    // The identity of every object the process mapped (build ID, size,
    // modification time) and its copy in the build-id cache, as a
    // recording of a launched program has them.
    let modules = crate::buildid::record_modules(
        dir,
        &crate::buildid::ModuleOptions {
            copy: opts.buildid_cache,
            ..crate::buildid::ModuleOptions::default()
        },
    );
    warnings.extend(modules.warnings);
    // ... and at the end (a thread that renamed itself keeps its later
    // name): threads.json, as the collector's chunk headers name the
    // threads of a launched program.
    thread_names.extend(tree_thread_names(pid));
    let names = contend_trace::thread_names::ThreadNamesFile {
        threads: thread_names
            .into_iter()
            .map(|((pid, tid), name)| contend_trace::thread_names::ThreadName { pid, tid, name })
            .collect(),
        ..Default::default()
    };
    if let Err(e) = names.write(dir) {
        warnings.push(format!("the threads' names were not kept: {e}"));
    }

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

/// Writes `maps/<pid>.maps` from `/proc/<pid>/maps` at the attach, so that
/// [`crate::buildid::record_modules`] lists what the process had mapped
/// (an attach recording has no collector to write maps). A snapshot the
/// futex tracer writes later replaces it. Returns a warning when it could
/// not be written.
fn snapshot_maps(dir: &std::path::Path, pid: u32) -> Option<String> {
    let maps_dir = dir.join("maps");
    let path = maps_dir.join(format!("{pid}.maps"));
    let written = fs::read_to_string(format!("/proc/{pid}/maps"))
        .and_then(|text| fs::create_dir_all(&maps_dir).and_then(|_| fs::write(&path, text)));
    written.err().map(|e| {
        format!(
            "the process's mapped objects were not listed ({}: {e}); reports after a rebuild \
             cannot tell that its call sites moved",
            path.display()
        )
    })
}

/// The threads of process `pid` and of all its descendant processes
/// (from `/proc/<pid>/task/<tid>/children`), as they are now.
pub(crate) fn tree_tids(pid: u32) -> Vec<u32> {
    tree_threads(pid).into_iter().map(|(_, tid)| tid).collect()
}

/// The kernel's name (`comm`) of every thread of process `pid` and its
/// descendants, by (pid, tid), as they are now; threads whose name cannot
/// be read (exited meanwhile) are left out.
fn tree_thread_names(pid: u32) -> std::collections::BTreeMap<(u32, u32), String> {
    tree_threads(pid)
        .into_iter()
        .filter_map(|(p, tid)| {
            let comm = fs::read_to_string(format!("/proc/{p}/task/{tid}/comm")).ok()?;
            Some(((p, tid), comm.trim_end_matches('\n').to_string()))
        })
        .collect()
}

/// (pid, tid) of every thread of process `pid` and of all its descendant
/// processes (from `/proc/<pid>/task/<tid>/children`), as they are now.
pub(crate) fn tree_threads(pid: u32) -> Vec<(u32, u32)> {
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
            tids.push((p, tid));
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

/// True when process `pid` no longer runs: gone, a zombie or dead (state
/// `Z`, `X`, or `x` of older kernels). The one liveness test of the
/// recorder (attach, the launcher's trace post-pass, NUMA page moves).
pub(crate) fn process_gone(pid: u32) -> bool {
    match fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rfind(')')
            .and_then(|i| stat[i + 1..].split_whitespace().next())
            .is_none_or(|state| matches!(state, "Z" | "X" | "x")),
        Err(_) => true,
    }
}
