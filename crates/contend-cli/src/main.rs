//! The `contend` command: parses arguments into the plain option structs of
//! the `contend` library and calls it. Nothing here analyses anything.

use std::io::{IsTerminal, Write};
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::{Args, Parser, Subcommand, ValueEnum};

use contend::config::{parse_duration_ns, Config};
use contend::locks::{self, EventFilter, Progress, RecordingResolver};
use contend::recording::Recording;
use contend::report::{render_comparison, render_report, OutputFormat, RenderOptions};
use contend_record::{record, RecordError, RecordOptions};
use contend_symbolize::Symbolizer;

#[derive(Parser)]
#[command(
    name = "contend",
    version,
    about = "Find and measure lock contention in unmodified Linux programs",
    long_about = "contend records the lock operations of an unmodified, dynamically linked \
program (pthread mutexes, rwlocks, spinlocks, condition variables, barriers, semaphores; \
C++ std::mutex through them) and reports how long threads waited, for which locks, at which \
lines of source, and how much of it lay on the critical path.",
    after_help = "Examples:\n  contend record -- ./server --threads 8\n  contend report\n  contend report contend.data --format json\n  contend compare before.data after.data"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a program with the lock collector preloaded and record its lock operations
    #[command(
        after_help = "Examples:\n  contend record -- ./app arg1 arg2\n  contend record -o run1.data --force -- ./app\n  contend record --cores 1 -o one.data -- ./app --threads 4\n  contend record --cpus 0,2-3 -- ./app\n  contend record -p 4242 --duration 10s -o attach.data\n  contend record --stack-every 100 -- ./app\n  contend record --mpi -o mpi.data -- mpirun -np 4 ./mpi_app\n\nThe exit status is the program's (128+N if a signal N ended it)."
    )]
    Record(RecordArgs),
    /// Analyse a recording and print the lock-contention report
    #[command(
        after_help = "Examples:\n  contend report\n  contend report run1.data --format markdown\n  contend report --critical-only --top 5\n  contend report --lock queue_lock --min-duration 10us\n  contend report --site 'dequeue|enqueue' --thread 4242\n  contend report --format json | jq .locks.summary\n\nFilters can also be kept in contend.toml (in the recording or the current directory); see docs/usage.md."
    )]
    Report(ReportArgs),
    /// Compare recordings: every metric of the first beside the others, with % change
    #[command(
        after_help = "Examples:\n  contend compare single.data two.data\n  contend compare a.data b.data c.data --format markdown\n  contend compare before.data after.data --format json"
    )]
    Compare(CompareArgs),
    /// Run a program with m threads on 1 core and on m cores, repeatedly, for the speed-up loss model
    #[command(
        after_help = "Examples:\n  contend scale --threads 2,4,8 -- ./app --threads {threads}\n  contend scale --threads 2 --repeat 3 -o xz.scale -- xz -T{threads} -k -c big.tar\n  OMP_SCHEDULE=static contend scale --threads 1,2,4 -- ./omp_app   # OMP_NUM_THREADS is set\n  contend scale --threads 2,4 --stress 2 -- ./app {threads}\n  contend report contend.scale\n\n{threads} is replaced by m in every word (also inside one, as in -T{threads}).\nEach run is a recording in DIR/m<m>-n<n>-r<repeat>[-stress], with the program's\nstdout.txt and stderr.txt beside it (--show-output to see them instead); DIR/scale.json\nlists the runs and is rewritten after each one. A failing run is recorded and the\nexperiment goes on (exit status 1 at the end); Ctrl-C stops after the current run.\nSee docs/scale.md."
    )]
    Scale(ScaleArgs),
    /// Generate load: `stress memory` streams to and from memory (memory contention generator)
    #[command(subcommand)]
    Stress(StressCommand),
}

#[derive(Args)]
struct ScaleArgs {
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
    #[arg(long, value_name = "DURATION", default_value = "10ms")]
    interval: String,
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
enum StressCommand {
    /// Stream data to and from memory with non-temporal loads/stores (memory contention generator, Venter 2016 §4.1.4)
    #[command(
        after_help = "Examples:\n  contend stress memory --threads 2 --duration 10s\n  contend stress memory --threads 1 --cpus 3 --duration 0.5 --format json\n  contend stress memory --threads 4 --buffer-mb 256      # until Ctrl-C\n\nThe bandwidth reported is bytes read + bytes written per second, per thread and in total."
    )]
    Memory(StressMemoryArgs),
}

#[derive(Args)]
struct StressMemoryArgs {
    /// Generator threads K, each pinned to one CPU
    #[arg(long, value_name = "K", default_value_t = 1)]
    threads: u32,
    /// CPUs for the threads (thread i on the i-th, cycling), e.g. 2-3; default: all allowed CPUs
    #[arg(long, value_name = "LIST")]
    cpus: Option<String>,
    /// Stop after this long: seconds (0.5) or with a unit (500ms, 10s); default: until Ctrl-C
    #[arg(long, value_name = "S")]
    duration: Option<String>,
    /// Buffer per thread in MiB (default: 4 × last-level cache, 64 to 512)
    #[arg(long, value_name = "MIB")]
    buffer_mb: Option<u64>,
    /// Output format: text or json
    #[arg(short, long, default_value = "text")]
    format: String,
}

#[derive(Args)]
struct RecordArgs {
    /// Recording directory to create
    #[arg(short, long, default_value = "contend.data")]
    output: PathBuf,
    /// Replace an existing recording directory
    #[arg(long)]
    force: bool,
    /// Record the call stack of every N-th lock operation (0 = never)
    #[arg(long, value_name = "N", default_value_t = 0)]
    stack_every: u32,
    /// Per-thread buffer chunk size in KiB (power of two)
    #[arg(long, value_name = "KIB")]
    chunk_kb: Option<u32>,
    /// Service-time sampling interval, e.g. 10ms (1 ms to 1 hour)
    #[arg(long, value_name = "DURATION", default_value = "10ms")]
    interval: String,
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
    /// With -p: stop after this long, e.g. 10s (default: until the process exits or Ctrl-C)
    #[arg(long, value_name = "DURATION")]
    duration: Option<String>,
    /// Also record every rank's MPI calls (CMD is e.g. `mpirun -np 4 ./app`); see docs/usage.md
    #[arg(long, conflicts_with = "pid")]
    mpi: bool,
    /// With --mpi: the MPI implementation, openmpi or mpich (default: detected from CMD)
    #[arg(long, value_name = "IMPL", requires = "mpi")]
    mpi_impl: Option<String>,
    /// With --mpi: trace lock operations too (hybrid MPI + threads programs; mpirun's own processes are traced as well)
    #[arg(long, requires = "mpi")]
    locks: bool,
    /// The program and its arguments
    #[arg(
        required_unless_present = "pid",
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "CMD"
    )]
    command: Vec<String>,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
enum ColorChoice {
    Auto,
    Always,
    Never,
}

#[derive(Args)]
struct OutputArgs {
    /// Output format: text, markdown, latex, csv or json
    #[arg(short, long)]
    format: Option<String>,
    /// Rows per table (0 = all)
    #[arg(long)]
    top: Option<usize>,
    /// Colour in text output (auto follows NO_COLOR and the terminal)
    #[arg(long, value_enum, default_value = "auto")]
    color: ColorChoice,
    /// Configuration file (default: contend.toml in the recording or current directory)
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
}

#[derive(Args, Default)]
struct FilterArgs {
    /// Only events lasting at least this long (wait + hold), e.g. 10us
    #[arg(long, value_name = "DURATION")]
    min_duration: Option<String>,
    /// Only events lasting at most this long, e.g. 1ms
    #[arg(long, value_name = "DURATION")]
    max_duration: Option<String>,
    /// Only this lock (symbol name or address); repeatable
    #[arg(long = "lock", value_name = "NAME|ADDR")]
    locks: Vec<String>,
    /// Only call sites matching this regular expression
    #[arg(long = "site", value_name = "REGEX")]
    site: Option<String>,
    /// Only this thread id; repeatable
    #[arg(long = "thread", value_name = "TID")]
    threads: Vec<u32>,
    /// Only events on the critical path
    #[arg(long)]
    critical_only: bool,
    /// MPI: count late-sender/late-receiver waits only from this long, e.g. 5ms
    #[arg(long, value_name = "DURATION")]
    threshold_p2p: Option<String>,
    /// MPI: count collective waits (barrier, N×N, broadcast, reduce, scan) only from this long
    #[arg(long, value_name = "DURATION")]
    threshold_collective: Option<String>,
}

#[derive(Args)]
struct ReportArgs {
    /// Recording directory
    #[arg(default_value = "contend.data")]
    dir: PathBuf,
    #[command(flatten)]
    output: OutputArgs,
    #[command(flatten)]
    filter: FilterArgs,
}

#[derive(Args)]
struct CompareArgs {
    /// Recording directories; the first is the base
    #[arg(required = true, num_args = 2.., value_name = "DIR")]
    dirs: Vec<PathBuf>,
    #[command(flatten)]
    output: OutputArgs,
    #[command(flatten)]
    filter: FilterArgs,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            if is_broken_pipe(&e) {
                return ExitCode::SUCCESS;
            }
            eprintln!("contend: error: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

fn run(cli: Cli) -> Result<ExitCode> {
    match cli.command {
        Command::Record(a) => cmd_record(a),
        Command::Report(a) => cmd_report(a),
        Command::Compare(a) => cmd_compare(a),
        Command::Scale(a) => cmd_scale(a),
        Command::Stress(StressCommand::Memory(a)) => cmd_stress_memory(a),
    }
}

fn cmd_record(a: RecordArgs) -> Result<ExitCode> {
    let interval = Duration::from_nanos(
        parse_duration_ns(&a.interval).map_err(|e| anyhow::anyhow!("--interval: {e}"))?,
    );
    if a.duration.is_some() && a.pid.is_none() {
        bail!("--duration applies to attaching (-p PID); a started program runs until it exits");
    }
    if let Some(pid) = a.pid {
        let duration = match &a.duration {
            Some(d) => Some(Duration::from_nanos(
                parse_duration_ns(d).map_err(|e| anyhow::anyhow!("--duration: {e}"))?,
            )),
            None => None,
        };
        if duration == Some(Duration::ZERO) {
            bail!("--duration: must be longer than 0");
        }
        let outcome = contend_record::attach(&contend_record::AttachOptions {
            output: a.output,
            force: a.force,
            pid,
            duration,
            interval,
        })?;
        for w in &outcome.warnings {
            eprintln!("contend: warning: {w}");
        }
        let ended = contend_trace::meta::RunMeta::read(&outcome.dir)
            .ok()
            .and_then(|m| m.attach)
            .map(|a| a.ended)
            .unwrap_or_default();
        eprintln!(
            "contend: sampled process {pid} for {:.3} s ({ended}; no lock tracing when attached) in {}; run `contend report {}`",
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
    let opts = RecordOptions {
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
    };
    let opts_mpi = opts.mpi;
    let outcome = match record(&opts) {
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
    if opts_mpi {
        eprintln!(
            "contend: recorded the MPI calls of {} rank(s) in {}/mpi",
            outcome.mpi_ranks,
            outcome.dir.display()
        );
    }
    eprintln!(
        "contend: recorded {} process trace(s) in {} ({:.3} s); run `contend report {}`",
        outcome.traces,
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

/// Options from flags, falling back to the config file, then defaults.
struct Resolved {
    format: OutputFormat,
    render: RenderOptions,
    filter: EventFilter,
    mpi: contend::mpi::MpiOptions,
}

fn resolve(output: &OutputArgs, filter: &FilterArgs, recording_dir: &Path) -> Result<Resolved> {
    let config_path = match &output.config {
        Some(p) => Some(p.clone()),
        None => Config::discover(recording_dir),
    };
    let config = match &config_path {
        Some(p) => Config::read(p)?,
        None => Config::default(),
    };
    let format_name = output
        .format
        .clone()
        .or(config.report.format.clone())
        .unwrap_or_else(|| "text".into());
    let format: OutputFormat = format_name.parse().map_err(|e| anyhow::anyhow!("{e}"))?;
    let color = match output.color {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => {
            std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
                && std::io::stdout().is_terminal()
        }
    };
    let render = RenderOptions {
        color,
        top: output.top.or(config.report.top).unwrap_or(20),
        ..RenderOptions::default()
    };
    let f = &config.filter;
    let dur = |flag: &Option<String>,
               cfg: &Option<contend::config::DurationValue>,
               name: &str|
     -> Result<Option<u64>> {
        match (flag, cfg) {
            (Some(s), _) => Ok(Some(
                parse_duration_ns(s).map_err(|e| anyhow::anyhow!("--{name}: {e}"))?,
            )),
            (None, Some(v)) => Ok(Some(v.to_ns().map_err(|e| anyhow::anyhow!("{e}"))?)),
            (None, None) => Ok(None),
        }
    };
    let site = filter.site.clone().or(f.sites.clone());
    let site_pattern = match site {
        Some(s) => Some(
            regex::Regex::new(&s)
                .with_context(|| format!("--site: `{s}` is not a valid regular expression"))?,
        ),
        None => None,
    };
    let event_filter = EventFilter {
        min_duration_ns: dur(&filter.min_duration, &f.min_duration, "min-duration")?,
        max_duration_ns: dur(&filter.max_duration, &f.max_duration, "max-duration")?,
        locks: if filter.locks.is_empty() {
            f.locks.clone()
        } else {
            filter.locks.clone()
        },
        site_pattern,
        threads: if filter.threads.is_empty() {
            f.threads.clone()
        } else {
            filter.threads.clone()
        },
        critical_only: filter.critical_only || f.critical_only,
    };
    let mpi = contend::mpi::MpiOptions {
        threshold_p2p_ns: dur(
            &filter.threshold_p2p,
            &config.mpi.threshold_p2p,
            "threshold-p2p",
        )?
        .unwrap_or(0),
        threshold_collective_ns: dur(
            &filter.threshold_collective,
            &config.mpi.threshold_collective,
            "threshold-collective",
        )?
        .unwrap_or(0),
    };
    Ok(Resolved {
        format,
        render,
        filter: event_filter,
        mpi,
    })
}

/// A progress indicator on stderr that appears only once the analysis has
/// taken more than a second, and only on a terminal: a timer thread turns
/// it on, then a steady tick keeps the stage name and elapsed time moving
/// even while one long stage runs.
struct Bar {
    bar: indicatif::ProgressBar,
    done: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Bar {
    fn new() -> Bar {
        let bar = indicatif::ProgressBar::hidden();
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "{spinner} {msg:28} [{bar:30}] {pos}/{len} {elapsed}",
            )
            .expect("valid template")
            .progress_chars("=> "),
        );
        let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        if std::io::stderr().is_terminal() {
            let (bar, done) = (bar.clone(), done.clone());
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_secs(1));
                if !done.load(std::sync::atomic::Ordering::Acquire) {
                    bar.set_draw_target(indicatif::ProgressDrawTarget::stderr());
                    bar.enable_steady_tick(Duration::from_millis(120));
                }
            });
        }
        Bar { bar, done }
    }
    fn finish(&self) {
        self.done.store(true, std::sync::atomic::Ordering::Release);
        self.bar.finish_and_clear();
    }
}

impl Progress for Bar {
    fn stage(&self, name: &str, total: u64) {
        self.bar.set_message(name.to_string());
        self.bar.set_length(total.max(1));
        self.bar.set_position(0);
    }
    fn advance(&self, n: u64) {
        self.bar.inc(n);
    }
}

fn analyze_dir(
    dir: &Path,
    filter: &EventFilter,
    mpi: &contend::mpi::MpiOptions,
    bar: &Bar,
) -> Result<contend::report::model::Report> {
    bar.stage(&format!("reading {}", dir.display()), 1);
    let rec = Recording::open(dir)?;
    bar.advance(1);
    let mut resolver = RecordingResolver::new(&rec, Symbolizer::new());
    let mut report = locks::analyze(&rec, filter, &mut resolver, bar);
    contend::service::add_to_report(&rec, &mut report);
    contend::counters::add_to_report(&rec, &mut report);
    bar.stage("analysing MPI wait states", 1);
    contend::mpi::add_to_report(dir, &mut report, mpi);
    bar.advance(1);
    Ok(report)
}

fn write_out(text: &str) -> Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    if !text.ends_with('\n') {
        out.write_all(b"\n")?;
    }
    out.flush()?;
    Ok(())
}

fn cmd_report(a: ReportArgs) -> Result<ExitCode> {
    if !a.dir.exists() {
        bail!(
            "{}: no such recording; create one with `contend record -o {} -- CMD`",
            a.dir.display(),
            a.dir.display()
        );
    }
    let r = resolve(&a.output, &a.filter, &a.dir)?;
    let bar = Bar::new();
    // A `contend scale` directory: the speed-up loss model (docs/model.md).
    let report = if contend_trace::scale::ScaleManifest::is_scale_dir(&a.dir) {
        contend::speedup::scale_report(&a.dir, &bar)?
    } else {
        analyze_dir(&a.dir, &r.filter, &r.mpi, &bar)?
    };
    bar.finish();
    write_out(&render_report(&report, r.format, &r.render))?;
    Ok(ExitCode::SUCCESS)
}

fn cmd_compare(a: CompareArgs) -> Result<ExitCode> {
    let r = resolve(&a.output, &a.filter, &a.dirs[0])?;
    let bar = Bar::new();
    let mut reports = Vec::new();
    for dir in &a.dirs {
        let report = analyze_dir(dir, &r.filter, &r.mpi, &bar)?;
        reports.push((dir.display().to_string(), report));
    }
    bar.finish();
    let cmp = contend::compare::Comparison::new(reports);
    write_out(&render_comparison(&cmp, r.format, &r.render))?;
    Ok(ExitCode::SUCCESS)
}

/// A duration in seconds (`0.5`) or with a unit (`500ms`, `10s`).
fn parse_seconds(flag: &str, text: &str) -> Result<Duration> {
    let t = text.trim();
    let d = match t.parse::<f64>() {
        Ok(s) if s.is_finite() && s >= 0.0 => Duration::from_secs_f64(s),
        Ok(_) => bail!("{flag}: `{text}` is not a duration"),
        Err(_) => {
            Duration::from_nanos(parse_duration_ns(t).map_err(|e| anyhow::anyhow!("{flag}: {e}"))?)
        }
    };
    if d.is_zero() {
        bail!("{flag}: must be longer than 0");
    }
    Ok(d)
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

fn cmd_scale(a: ScaleArgs) -> Result<ExitCode> {
    use contend_record::scale_run::{run_scale, ScaleOptions};
    let threads = contend_record::scale_run::parse_thread_list(&a.threads)
        .map_err(|e| anyhow::anyhow!("--threads {}: {e}", a.threads))?;
    let interval = Duration::from_nanos(
        parse_duration_ns(&a.interval).map_err(|e| anyhow::anyhow!("--interval: {e}"))?,
    );
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

/// The progress display of `contend scale`: runs done and time left, on
/// stderr after one second and only on a terminal.
///
/// While a run is made, the program's output is redirected to files by
/// pointing descriptors 1 and 2 at them, so the bar and the messages are
/// written to a copy of the terminal's descriptor taken before the
/// experiment starts.
struct ScaleBar {
    bar: indicatif::ProgressBar,
    term: Option<std::sync::Arc<std::fs::File>>,
    done: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl ScaleBar {
    fn new(own_terminal: bool) -> Result<ScaleBar> {
        let term = if own_terminal {
            let fd = std::io::stderr()
                .as_fd()
                .try_clone_to_owned()
                .context("cannot duplicate standard error")?;
            Some(std::sync::Arc::new(std::fs::File::from(fd)))
        } else {
            None
        };
        let bar = indicatif::ProgressBar::hidden();
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "{spinner} {msg:20} [{bar:30}] {pos}/{len} runs, {eta} left",
            )
            .expect("valid template")
            .progress_chars("=> "),
        );
        let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let tty = match &term {
            Some(t) => t.is_terminal(),
            None => std::io::stderr().is_terminal(),
        };
        if tty && own_terminal {
            let (bar, done, term) = (bar.clone(), done.clone(), term.clone());
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_secs(1));
                if !done.load(std::sync::atomic::Ordering::Acquire) {
                    let target = match term {
                        Some(t) => indicatif::ProgressDrawTarget::term_like(Box::new(TtyTerm(t))),
                        None => indicatif::ProgressDrawTarget::stderr(),
                    };
                    bar.set_draw_target(target);
                    bar.enable_steady_tick(Duration::from_millis(120));
                }
            });
        }
        Ok(ScaleBar { bar, term, done })
    }

    /// Prints a line to the terminal (above the bar while it shows).
    fn say(&self, text: &str) {
        self.bar.suspend(|| match &self.term {
            Some(t) => {
                let _ = writeln!(&**t, "{text}");
            }
            None => eprintln!("{text}"),
        });
    }

    fn finish(&self) {
        self.done.store(true, std::sync::atomic::Ordering::Release);
        self.bar.finish_and_clear();
    }
}

impl contend_record::scale_run::ScaleProgress for ScaleBar {
    fn begin(&self, runs: &[contend_record::scale_run::PlannedRun]) {
        self.bar.set_length(runs.len() as u64);
        self.bar.set_position(0);
    }
    fn run_started(&self, _index: usize, run: &contend_record::scale_run::PlannedRun) {
        self.bar.set_message(run.dir.clone());
    }
    fn run_finished(&self, _index: usize, _run: &contend_trace::scale::ScaleRun) {
        self.bar.inc(1);
    }
    fn warning(&self, text: &str) {
        self.say(&format!("contend: warning: {text}"));
    }
}

/// A terminal reached through our own copy of its descriptor (see
/// [`ScaleBar`]), for indicatif. The width comes from `COLUMNS`, else 80.
#[derive(Debug)]
struct TtyTerm(std::sync::Arc<std::fs::File>);

impl TtyTerm {
    fn put(&self, s: &str) -> std::io::Result<()> {
        (&*self.0).write_all(s.as_bytes())
    }
}

impl indicatif::TermLike for TtyTerm {
    fn width(&self) -> u16 {
        std::env::var("COLUMNS")
            .ok()
            .and_then(|c| c.parse().ok())
            .unwrap_or(80)
    }
    fn move_cursor_up(&self, n: usize) -> std::io::Result<()> {
        if n > 0 {
            self.put(&format!("\x1b[{n}A"))?;
        }
        Ok(())
    }
    fn move_cursor_down(&self, n: usize) -> std::io::Result<()> {
        if n > 0 {
            self.put(&format!("\x1b[{n}B"))?;
        }
        Ok(())
    }
    fn move_cursor_right(&self, n: usize) -> std::io::Result<()> {
        if n > 0 {
            self.put(&format!("\x1b[{n}C"))?;
        }
        Ok(())
    }
    fn move_cursor_left(&self, n: usize) -> std::io::Result<()> {
        if n > 0 {
            self.put(&format!("\x1b[{n}D"))?;
        }
        Ok(())
    }
    fn write_line(&self, s: &str) -> std::io::Result<()> {
        self.put(s)?;
        self.put("\n")
    }
    fn write_str(&self, s: &str) -> std::io::Result<()> {
        self.put(s)
    }
    fn clear_line(&self) -> std::io::Result<()> {
        self.put("\r\x1b[2K")
    }
    fn flush(&self) -> std::io::Result<()> {
        (&*self.0).flush()
    }
}

fn cmd_stress_memory(a: StressMemoryArgs) -> Result<ExitCode> {
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
    let duration = match &a.duration {
        Some(d) => Some(parse_seconds("--duration", d)?),
        None => None,
    };
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
        write_out(&serde_json::to_string_pretty(&report)?)?;
    } else {
        write_out(&stress_text(&report))?;
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
