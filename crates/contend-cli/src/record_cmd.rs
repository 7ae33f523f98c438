//! `contend record`, `contend scale` and `contend stress`: flags into the
//! option structs of `contend-record` (only with the `record` feature).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};

use contend_record::{record, RecordError, RecordOptions};

use crate::progress::ScaleBar;

#[derive(Args)]
pub struct ScaleArgs {
    /// Thread counts m to run, comma-separated, e.g. 2,4,8
    #[arg(long, value_name = "LIST")]
    threads: String,
    /// Runs per (m, n) configuration
    #[arg(long, value_name = "N", default_value_t = contend_record::scale_run::DEFAULT_REPEAT)]
    repeat: u32,
    /// Scale directory to create
    #[arg(short, long, value_name = "DIR", default_value = contend_record::scale_run::DEFAULT_SCALE_OUTPUT)]
    output: PathBuf,
    /// Replace an existing scale directory
    #[arg(long)]
    force: bool,
    /// Service-time sampling interval of every run, e.g. 10ms
    #[arg(long, value_name = "DURATION", default_value = "10ms", value_parser = duration)]
    interval: Duration,
    /// Also run every configuration with the memory contention generator (K threads) beside it
    #[arg(long, value_name = "K")]
    stress: Option<u32>,
    /// Buffer per generator thread in MiB (default: 4 × last-level cache, 64 to 512)
    #[arg(long, value_name = "MIB", requires = "stress")]
    stress_buffer_mb: Option<u64>,
    /// Let the program write to this terminal instead of stdout.txt/stderr.txt in each run directory
    #[arg(long)]
    show_output: bool,
    /// The program and its arguments, after `--`; {threads} is replaced by m
    #[arg(last = true, required = true, value_name = "CMD")]
    command: Vec<String>,
}

#[derive(Subcommand)]
pub enum StressCommand {
    /// Stream data to and from memory with non-temporal loads/stores (memory contention generator, Venter 2016 §4.1.4)
    #[command(
        after_help = "Examples:\n  contend stress memory --threads 2 --duration 10s\n  contend stress memory --threads 1 --cpus 3 --duration 0.5 --format json\n  contend stress memory --threads 4 --buffer-mb 256      # until Ctrl-C\n\nThe bandwidth reported is bytes read + bytes written per second, per thread and in total."
    )]
    Memory(StressMemoryArgs),
}

#[derive(Args)]
pub struct StressMemoryArgs {
    /// Generator threads K, each pinned to one CPU
    #[arg(long, value_name = "K", default_value_t = 1)]
    threads: u32,
    /// CPUs for the threads (thread i on the i-th, cycling), e.g. 2-3; default: all allowed CPUs
    #[arg(long, value_name = "LIST")]
    cpus: Option<String>,
    /// Stop after this long: seconds (0.5) or with a unit (500ms, 10s); default: until Ctrl-C
    #[arg(long, value_name = "DURATION", value_parser = duration)]
    duration: Option<Duration>,
    /// Buffer per thread in MiB (default: 4 × last-level cache, 64 to 512)
    #[arg(long, value_name = "MIB")]
    buffer_mb: Option<u64>,
    /// Output format: text or json
    #[arg(short, long, default_value = "text")]
    format: String,
}

#[derive(Args)]
pub struct RecordArgs {
    /// Recording directory to create
    #[arg(short, long, default_value = "contend.data")]
    output: PathBuf,
    /// Replace an existing recording directory
    #[arg(long)]
    force: bool,
    /// Record the call stack of every N-th lock operation (0 = never)
    #[arg(long, value_name = "N", default_value_t = 0)]
    stack_every: u32,
    /// Per-thread buffer chunk size in KiB, a power of two from 4 to 65536 [default: 128]
    #[arg(long, value_name = "KIB")]
    chunk_kb: Option<u32>,
    /// Service-time sampling interval, e.g. 10ms (1 ms to 1 hour)
    #[arg(long, value_name = "DURATION", default_value = "10ms", value_parser = duration)]
    interval: Duration,
    /// Pin the program (and all its threads) to these CPUs, e.g. 0, 0-1, 0,2-3
    #[arg(long, value_name = "LIST", conflicts_with = "cores")]
    cpus: Option<String>,
    /// Pin the program (and all its threads) to the first N online CPUs
    #[arg(long, value_name = "N")]
    cores: Option<u32>,
    /// Attach to this running process instead: sample its service time and counters (no lock tracing)
    #[arg(
        short,
        long,
        value_name = "PID",
        conflicts_with_all = ["command", "cpus", "cores", "stack_every", "chunk_kb"]
    )]
    pid: Option<u32>,
    /// Record lock operations for this long only, from --start-after (the program runs on unrecorded); with -p: stop after this long. Seconds (10) or with a unit (500ms, 2min); default: to the end
    #[arg(long, value_name = "DURATION", value_parser = duration)]
    duration: Option<Duration>,
    /// Record lock operations only from this long after the start (the program runs from the start): seconds or with a unit (2s, 1500ms)
    #[arg(long, value_name = "DURATION", value_parser = duration, conflicts_with = "pid")]
    start_after: Option<Duration>,
    /// Stop recording lock operations when the trace data reaches this size (all processes together); the recording stays valid up to there: bytes or with a unit (512M, 2G; K, M, G are powers of 1024)
    #[arg(long, value_name = "SIZE", value_parser = byte_size, conflicts_with = "pid")]
    max_size: Option<u64>,
    /// Also record every rank's MPI calls (CMD is e.g. `mpirun -np 4 ./app`); see docs/usage.md
    #[arg(long, conflicts_with = "pid")]
    mpi: bool,
    /// With --mpi: the MPI implementation, openmpi or mpich (default: detected from CMD)
    #[arg(long, value_name = "IMPL", requires = "mpi")]
    mpi_impl: Option<String>,
    /// Run a program whose locks cannot be traced (statically linked, setuid, 32-bit) anyway, for its service time and counters
    #[arg(long)]
    yes: bool,
    /// With --mpi: trace lock operations too (hybrid MPI + threads programs; mpirun's own processes are traced as well)
    #[arg(long, requires = "mpi")]
    locks: bool,
    /// Also sample which pages the program touches from which NUMA node (docs/numa.md)
    #[arg(long, conflicts_with = "pid")]
    numa: bool,
    /// With --numa: sampling method: auto (hardware where the PMU has it), software, hardware
    #[arg(long, value_name = "METHOD", default_value = "auto", requires = "numa")]
    numa_method: String,
    /// With --numa: software sampling period in CPU time [default: 1ms]
    #[arg(long, value_name = "DURATION", value_parser = duration, requires = "numa")]
    numa_period: Option<Duration>,
    /// With --numa: store this latency table (from `contend numa calibrate`) with the recording
    #[arg(long, value_name = "FILE", requires = "numa")]
    numa_latency: Option<PathBuf>,
    /// Do not copy the program and its libraries into the build-id cache (their build IDs are still recorded; see `contend cache`)
    #[arg(long)]
    no_buildid_cache: bool,
    /// Light recording: count uncontended acquisitions per call site and thread instead of recording them (contended ones are recorded in full); far less overhead, hold times only for contended events
    #[arg(long, conflicts_with = "pid")]
    light: bool,
    /// Probe these functions with uprobes for the interference (SCI) analysis: NAME (C++ and Rust as in the source, e.g. ns::f or ns::f(double)), LIB:NAME or MODULE:0xOFFSET, comma-separated (needs root or CAP_PERFMON)
    #[arg(long, value_name = "NAME[,NAME...]", conflicts_with = "pid")]
    function: Vec<String>,
    /// Record one call in N per thread of the probed and instrumented functions (sampling mode)
    #[arg(long, value_name = "N", default_value_t = 1, conflicts_with = "pid")]
    function_every: u32,
    /// Record the entries and exits of a program built with -finstrument-functions
    #[arg(long, conflicts_with = "pid")]
    instrumented_functions: bool,
    /// Run the program once under a CPU profile first, then probe its K hottest functions (those above 1%)
    #[arg(long, value_name = "K", conflicts_with = "pid")]
    hot_functions: Option<u32>,
    /// Probe functions of modules with exception-handling tables too (C++, Rust that unwinds on panic; refused by default: an exception or panic that passes through a function whose return is probed ends the program)
    #[arg(long, conflicts_with = "pid")]
    probe_exception_code: bool,
    /// Also record the contention meters (memory latency, run queue, CPU utilisation, …; docs/meters.md) beside the program into meters.cmts; the report splits lock waits and service time by meter state
    #[arg(long, conflicts_with = "pid")]
    meters: bool,
    /// With --meters: the meters' interval (default: `[meters]` of contend.toml, else 1ms)
    #[arg(long, value_name = "DURATION", value_parser = duration, requires = "meters")]
    meters_interval: Option<Duration>,
    /// With --meters: calibration file of `contend meters calibrate` (memory_bandwidth, memory_concurrency)
    #[arg(long, value_name = "FILE", requires = "meters")]
    meters_calibration: Option<PathBuf>,
    /// With --meters: trigger levels of a meter, in its unit: METER=HIGH,LOW (repeatable)
    #[arg(
        long = "meters-trigger",
        value_name = "METER=HIGH,LOW",
        requires = "meters"
    )]
    meters_triggers: Vec<String>,
    /// With --meters: CPU the pointer-chasing probe runs on (default: the first allowed CPU)
    #[arg(long, value_name = "CPU", requires = "meters")]
    meters_probe_cpu: Option<u32>,
    /// With --meters: size of the probe's pointer chain in MiB (default: the calibration's, else 4 × last-level cache, 64 to 512)
    #[arg(long, value_name = "MIB", requires = "meters")]
    meters_probe_chain_mb: Option<u64>,
    /// Trace futex waits and wakes through the kernel's tracepoints (needs root, CAP_PERFMON or a low kernel.perf_event_paranoid): auto (for a statically linked program and with -p), on (always, instead of the collector's syscall() records), off
    #[arg(long, value_name = "WHEN", default_value = "auto", value_parser = ["auto", "on", "off"])]
    futex_trace: String,
    /// The program and its arguments (after `--`, or from the first word that is not an option of contend's)
    #[arg(
        required_unless_present = "pid",
        trailing_var_arg = true,
        value_name = "CMD"
    )]
    command: Vec<String>,
}

/// `--futex-trace WHEN` (clap has checked the word).
fn futex_trace_mode(when: &str) -> contend_record::futex_trace::FutexTraceMode {
    use contend_record::futex_trace::FutexTraceMode;
    match when {
        "on" => FutexTraceMode::On,
        "off" => FutexTraceMode::Off,
        _ => FutexTraceMode::Auto,
    }
}

/// Tells the user when this recording mounted tracefs (it stays mounted;
/// docs/usage.md, "Recording", the service-time sources).
fn say_if_tracefs_mounted() {
    use contend_record::tracefs;
    if tracefs::mounted_by_this_process() {
        eprintln!(
            "contend: mounted tracefs at {} for the scheduler and futex tracepoints (it stays mounted; CONTEND_MOUNT_TRACEFS=0 leaves the mounts alone)",
            tracefs::MOUNT_POINT
        );
    }
}

pub fn cmd_record(a: RecordArgs) -> Result<ExitCode> {
    let interval = a.interval;
    if a.duration == Some(Duration::ZERO) {
        bail!("--duration: must be longer than 0");
    }
    if let Some(pid) = a.pid {
        let duration = a.duration;
        if duration == Some(Duration::ZERO) {
            bail!("--duration: must be longer than 0");
        }
        let outcome = contend_record::attach(&contend_record::AttachOptions {
            output: a.output,
            force: a.force,
            pid,
            duration,
            interval,
            futex_trace: futex_trace_mode(&a.futex_trace),
            buildid_cache: !a.no_buildid_cache,
        })?;
        for w in &outcome.warnings {
            eprintln!("contend: warning: {w}");
        }
        say_if_tracefs_mounted();
        let ended = contend_trace::meta::RunMeta::read(&outcome.dir)
            .ok()
            .and_then(|m| m.attach)
            .map(|a| a.ended)
            .unwrap_or_default();
        let futex = contend_trace::futex_calls::read_futex_trace(&outcome.dir)
            .and_then(Result::ok)
            .filter(|f| f.manifest.traced)
            .map_or("no lock tracing when attached".to_string(), |f| {
                format!("{} futex calls traced", f.manifest.calls)
            });
        eprintln!(
            "contend: sampled process {pid} for {:.3} s ({ended}; {futex}) in {}; run `contend report {}`",
            outcome.wall_ns as f64 / 1e9,
            outcome.dir.display(),
            outcome.dir.display()
        );
        return Ok(ExitCode::SUCCESS);
    }
    let cpus = match (&a.cpus, a.cores) {
        (Some(list), _) => Some(
            contend_record::cpus::parse_cpu_list(list)
                .map_err(|e| anyhow::anyhow!("--cpus {list}: {e}"))?,
        ),
        (None, Some(n)) => {
            Some(contend_record::cpus::first_online_cpus(n).map_err(|e| anyhow::anyhow!("{e}"))?)
        }
        (None, None) => None,
    };
    let mpi_impl = match a.mpi_impl.as_deref() {
        None => None,
        Some("openmpi" | "ompi" | "open-mpi") => {
            Some(contend_record::launch::MpiImplementation::OpenMpi)
        }
        Some("mpich") => Some(contend_record::launch::MpiImplementation::Mpich),
        Some(other) => bail!("--mpi-impl {other}: expected openmpi or mpich"),
    };
    let numa = if a.numa {
        let method = match a.numa_method.as_str() {
            "auto" => contend_record::numa::MethodChoice::Auto,
            "software" | "sw" => contend_record::numa::MethodChoice::Software,
            "hardware" | "hw" => contend_record::numa::MethodChoice::Hardware,
            other => bail!("--numa-method {other}: expected auto, software or hardware"),
        };
        let mut sampler = contend_record::numa::NumaSamplerOptions {
            method,
            ..Default::default()
        };
        if let Some(p) = a.numa_period {
            if p < Duration::from_micros(10) {
                bail!("--numa-period: at least 10us");
            }
            sampler.period_ns = p.as_nanos() as u64;
        }
        Some(contend_record::numa::NumaRecordOptions {
            sampler,
            latency: a.numa_latency,
        })
    } else {
        None
    };
    let opts = RecordOptions {
        run_untraced: a.yes,
        numa,
        mpi: a.mpi,
        mpi_with_locks: a.locks,
        mpi_impl,
        cpus,
        output: a.output,
        force: a.force,
        stack_every: a.stack_every,
        chunk_kb: a.chunk_kb,
        command: a.command,
        interval,
        buildid_cache: !a.no_buildid_cache,
        light: a.light,
        start_after: a.start_after.unwrap_or_default(),
        duration: a.duration,
        max_bytes: a.max_size,
        functions: a.function,
        function_every: a.function_every,
        instrumented_functions: a.instrumented_functions,
        hot_functions: a.hot_functions,
        probe_exception_code: a.probe_exception_code,
        futex_trace: futex_trace_mode(&a.futex_trace),
    };
    let opts_mpi = opts.mpi;
    let mut meters = if a.meters {
        let (engine, _) = crate::meters_cmd::engine_options(&crate::meters_cmd::EngineFlags {
            interval: a.meters_interval,
            window: None,
            cpus: None,
            probe_cpu: a.meters_probe_cpu,
            probe_chain_mb: a.meters_probe_chain_mb,
            calibration: a.meters_calibration.clone(),
            triggers: &a.meters_triggers,
            config: None,
            lock_meters: false,
        })?;
        Some(
            contend_meters::record::MeterRecorder::start(engine)
                .context("contend record --meters")?,
        )
    } else {
        None
    };
    let recorded = match meters.as_mut() {
        Some(m) => contend_record::record_observed(&opts, &mut [m]),
        None => record(&opts),
    };
    let outcome = match recorded {
        Ok(o) => o,
        Err(e @ RecordError::CommandNotFound { .. }) => {
            eprintln!("contend: error: {e}");
            return Ok(ExitCode::from(127));
        }
        Err(e) => return Err(e.into()),
    };
    for w in &outcome.warnings {
        eprintln!("contend: warning: {w}");
    }
    say_if_tracefs_mounted();
    eprintln!(
        "contend: recorded {} in {} ({:.3} s); run `contend report {}`",
        recorded_what(opts_mpi, outcome.mpi_ranks, outcome.traces),
        outcome.dir.display(),
        outcome.wall_ns as f64 / 1e9,
        outcome.dir.display()
    );
    let code = match (outcome.exit_code, outcome.signal) {
        (Some(c), _) => c,
        (None, Some(s)) => 128 + s,
        (None, None) => 1,
    };
    Ok(ExitCode::from((code & 0xff) as u8))
}

/// What `contend record` says it recorded: the MPI calls of `mpi_ranks`
/// ranks (with `--mpi`) and the lock operations of `lock_traces`
/// processes (one trace each), leaving out the lock traces when an MPI
/// recording has none (the ranks were not lock-traced), so that it never
/// reads as if nothing was recorded.
fn recorded_what(mpi: bool, mpi_ranks: usize, lock_traces: usize) -> String {
    let plural =
        |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    let locks = format!(
        "the lock operations of {}",
        plural(lock_traces, "process", "processes")
    );
    match (mpi, lock_traces) {
        (false, _) => locks,
        (true, 0) => format!("the MPI calls of {}", plural(mpi_ranks, "rank", "ranks")),
        (true, _) => format!(
            "the MPI calls of {} and {locks}",
            plural(mpi_ranks, "rank", "ranks")
        ),
    }
}

fn mib(flag: &str, v: Option<u64>) -> Result<Option<u64>> {
    match v {
        Some(0) => bail!("{flag}: must be at least 1 MiB"),
        Some(m) => {
            Ok(Some(m.checked_mul(1024 * 1024).with_context(|| {
                format!("{flag}: {m} MiB is too large")
            })?))
        }
        None => Ok(None),
    }
}

pub fn cmd_scale(a: ScaleArgs) -> Result<ExitCode> {
    use contend_record::scale_run::{run_scale, ScaleOptions};
    let threads = contend_record::scale_run::parse_thread_list(&a.threads)
        .map_err(|e| anyhow::anyhow!("--threads {}: {e}", a.threads))?;
    let interval = a.interval;
    let opts = ScaleOptions {
        output: a.output,
        force: a.force,
        threads,
        repeat: a.repeat,
        command: a.command,
        interval,
        stress_threads: a.stress,
        stress_buffer_bytes: mib("--stress-buffer-mb", a.stress_buffer_mb)?,
        show_output: a.show_output,
    };
    let bar = ScaleBar::new(!opts.show_output)?;
    let result = run_scale(&opts, &bar);
    bar.finish();
    let outcome = match result {
        Ok(o) => o,
        Err(e) => {
            bar.say(&format!("contend: error: {e}"));
            if opts.output.join(contend_trace::scale::SCALE_FILE).is_file() {
                bar.say(&format!(
                    "contend: the runs made before are in {}",
                    opts.output.display()
                ));
            }
            let code = e.shell_status().unwrap_or(2);
            return Ok(ExitCode::from((code & 0xff) as u8));
        }
    };
    let dir = outcome.dir.display();
    bar.say(&format!(
        "contend: made {} of {} runs ({} failed) in {dir}; run `contend report {dir}`",
        outcome.made, outcome.planned, outcome.failed
    ));
    if let Some(why) = &outcome.stopped {
        bar.say(&format!("contend: experiment stopped: {why}"));
        return Ok(ExitCode::from(130));
    }
    Ok(if outcome.failed > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// `contend include-dir`: installs `contend/region.h` (once, in the cache
/// directory of the collector) and prints the folder that holds it.
pub fn cmd_include_dir() -> Result<ExitCode> {
    let dir = contend_record::install_region_header()
        .context("cannot install the contend/region.h header")?;
    crate::report_cmd::write_out(&format!("{}\n", dir.display()))?;
    Ok(ExitCode::SUCCESS)
}

pub fn cmd_stress_memory(a: StressMemoryArgs) -> Result<ExitCode> {
    use contend_record::stress::{MemoryStress, StressOptions};
    let json = match a.format.as_str() {
        "text" => false,
        "json" => true,
        other => bail!("--format {other}: `contend stress memory` writes text or json"),
    };
    let cpus = match &a.cpus {
        Some(list) => Some(
            contend_record::cpus::parse_cpu_list(list)
                .map_err(|e| anyhow::anyhow!("--cpus {list}: {e}"))?,
        ),
        None => None,
    };
    let duration = a.duration;
    if duration == Some(Duration::ZERO) {
        bail!("--duration: must be longer than 0");
    }
    let interrupt = contend_record::scale_run::Interrupt::begin();
    let gen = MemoryStress::start(&StressOptions {
        threads: a.threads,
        cpus,
        buffer_bytes: mib("--buffer-mb", a.buffer_mb)?,
    })
    .context("memory contention generator")?;
    if duration.is_none() {
        eprintln!(
            "contend: streaming with {} thread(s) on CPU {}; Ctrl-C to stop",
            a.threads,
            contend_record::cpus::format_cpu_list(&{
                let mut c = gen.cpus().to_vec();
                c.sort_unstable();
                c.dedup();
                c
            })
        );
    }
    let start = std::time::Instant::now();
    while interrupt.caught().is_none() && duration.is_none_or(|d| start.elapsed() < d) {
        let left = duration.map_or(Duration::from_millis(50), |d| {
            d.saturating_sub(start.elapsed())
                .min(Duration::from_millis(50))
        });
        std::thread::sleep(left);
    }
    let report = gen.stop();
    drop(interrupt);
    if json {
        crate::report_cmd::write_out(&serde_json::to_string_pretty(&report)?)?;
    } else {
        crate::report_cmd::write_out(&stress_text(&report))?;
    }
    Ok(ExitCode::SUCCESS)
}

fn stress_text(r: &contend_record::stress::StressReport) -> String {
    let gb = |b: f64| b / 1e9;
    let mut s = format!(
        "Memory contention generator: {} thread(s), {:.3} s\n  streaming with {}\n  buffer {} MiB per thread{}\n\n",
        r.threads.len(),
        r.elapsed_s,
        r.method_description,
        r.buffer_bytes_per_thread >> 20,
        r.llc_bytes
            .map(|l| format!(" (last-level cache {} MiB)", l >> 20))
            .unwrap_or_default()
    );
    s.push_str("thread  cpu   read GB   written GB   bandwidth GB/s\n");
    for (i, t) in r.threads.iter().enumerate() {
        s.push_str(&format!(
            "{i:>6}  {:>3}  {:>8.3}  {:>11.3}  {:>15.3}\n",
            t.cpu,
            gb(t.bytes_read as f64),
            gb(t.bytes_written as f64),
            gb(t.bandwidth_bytes_per_s)
        ));
    }
    s.push_str(&format!(
        " total       {:>8.3}  {:>11.3}  {:>15.3}\n",
        gb(r.bytes_read as f64),
        gb(r.bytes_written as f64),
        gb(r.bandwidth_bytes_per_s)
    ));
    s.push_str("\nbandwidth = (bytes read + bytes written) / time; GB = 10^9 bytes\n");
    for n in &r.notes {
        s.push_str(&format!("note: {n}\n"));
    }
    s
}

/// Parses a size flag with the one size parser of contend (bytes, or a
/// number with a unit K, M, G or T, powers of 1024: `512M`, `1.5G`;
/// [`contend_trace::buildid_cache::parse_size`]). At least 64 KiB (a trace
/// needs room for its first chunks).
fn byte_size(s: &str) -> Result<u64, String> {
    let bytes = contend_trace::buildid_cache::parse_size(s).map_err(|e| e.to_string())?;
    if bytes < 65536 {
        return Err(format!("size {s:?}: at least 64K"));
    }
    Ok(bytes)
}

/// Parses a duration flag with the one duration parser of contend (a bare
/// number is seconds; `250ns`, `10us`, `1.5ms`, `2s`, `5min`).
fn duration(s: &str) -> Result<Duration, contend::config::DurationError> {
    contend::config::parse_duration(s)
}

#[cfg(test)]
mod tests {
    use super::{byte_size, recorded_what};

    #[test]
    fn the_closing_line_names_what_was_recorded() {
        assert_eq!(
            recorded_what(false, 0, 1),
            "the lock operations of 1 process"
        );
        assert_eq!(
            recorded_what(false, 0, 0),
            "the lock operations of 0 processes"
        );
        assert_eq!(recorded_what(true, 4, 0), "the MPI calls of 4 ranks");
        assert_eq!(
            recorded_what(true, 1, 2),
            "the MPI calls of 1 rank and the lock operations of 2 processes"
        );
    }

    #[test]
    fn sizes_with_and_without_units() {
        assert_eq!(byte_size("65536"), Ok(65536));
        assert_eq!(byte_size("512M"), Ok(512 << 20));
        assert_eq!(byte_size("512MiB"), Ok(512 << 20));
        assert_eq!(byte_size("1.5G"), Ok(3 << 29));
        assert_eq!(byte_size("64k"), Ok(64 << 10));
        assert!(byte_size("1K").unwrap_err().contains("at least 64K"));
        assert!(byte_size("12 parsecs")
            .unwrap_err()
            .contains("unknown unit"));
        assert!(byte_size("M").unwrap_err().contains("expected a number"));
    }
}
