//! `contend report`, `contend compare` and `contend export`: flags and
//! `contend.toml` into the library's options, then one call of
//! `contend::analyze` per recording.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};

use contend::config::{parse_duration_ns, Config};
use contend::export::{ExportFormat, ExportOptions, Weight};
use contend::locks::EventFilter;
use contend::render::{Document, OutputFormat};
use contend::report::{RenderOptions, Report};
use contend::{AnalysisOptions, Progress, Recording};

use crate::progress::Bar;

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}

#[derive(Args)]
pub struct OutputArgs {
    /// Output format [default: text, or `report.format` in contend.toml]
    #[arg(short, long, value_enum)]
    format: Option<OutputFormat>,
    /// Rows per table, 0 = all [default: 20, or `report.top` in contend.toml]
    #[arg(long)]
    top: Option<usize>,
    /// No legends under the text tables (what abbreviated headings mean)
    #[arg(long)]
    no_legend: bool,
    /// Colour in text output (auto follows NO_COLOR and the terminal)
    #[arg(long, value_enum, default_value = "auto")]
    color: ColorChoice,
    /// Configuration file (default: contend.toml in the recording or current directory)
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// With --format svg: the chart to draw (an unknown name lists the report's charts)
    #[arg(long, value_name = "NAME")]
    chart: Option<String>,
    /// Write to this file instead of standard output
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output_file: Option<PathBuf>,
    /// With --format latex: write every chart as DIR/NAME.svg and include them (\includesvg)
    #[arg(long, value_name = "DIR")]
    figures: Option<PathBuf>,
}

#[derive(Args, Default)]
pub struct FilterArgs {
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
    /// Only lock events acquired from this long after the start, e.g. 2s
    #[arg(long, value_name = "TIME")]
    from: Option<String>,
    /// Only lock events acquired before this long after the start, e.g. 5.5s
    #[arg(long, value_name = "TIME")]
    to: Option<String>,
    /// A lock wrapper whose call sites move to its callers (needs stacks:
    /// record --stack-every N), e.g. 'port::Mutex::*'; repeatable
    #[arg(long = "wrapper", value_name = "PATTERN")]
    wrappers: Vec<String>,
    /// MPI: count late-sender/late-receiver waits only from this long, e.g. 5ms
    #[arg(long, value_name = "DURATION")]
    threshold_p2p: Option<String>,
    /// MPI: count collective waits (barrier, N×N, broadcast, reduce, scan) only from this long
    #[arg(long, value_name = "DURATION")]
    threshold_collective: Option<String>,
    /// MPI: how many of the longest wait states `mpi.delay.wait_states` lists with their root causes: a number, or `all` (default 20)
    #[arg(long, value_name = "N|all")]
    root_causes: Option<String>,
}

#[derive(Args)]
pub struct ReportArgs {
    /// Recording directory
    #[arg(default_value = "contend.data")]
    pub dir: PathBuf,
    #[command(flatten)]
    output: OutputArgs,
    #[command(flatten)]
    filter: FilterArgs,
    #[command(flatten)]
    numa: crate::numa_cmd::NumaReportArgs,
}

#[derive(Args)]
pub struct CompareArgs {
    /// Recording directories; the first is the base
    #[arg(required = true, num_args = 2.., value_name = "DIR")]
    dirs: Vec<PathBuf>,
    #[command(flatten)]
    output: OutputArgs,
    #[command(flatten)]
    filter: FilterArgs,
    #[command(flatten)]
    numa: crate::numa_cmd::NumaReportArgs,
}

#[derive(Args)]
pub struct ExportArgs {
    /// Recording directory
    #[arg(default_value = "contend.data")]
    pub dir: PathBuf,
    /// Export format
    #[arg(short, long, value_enum)]
    format: ExportFormat,
    /// Output file (for otf2 a directory), `-` for standard output [default: contend.pftrace, contend.trace.json, contend.pb.gz, contend.folded, contend.svg, contend-otf2/ in the current directory]
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Replace an existing output file
    #[arg(long)]
    force: bool,
    /// What weights the stacks (folded, svg): lock wait, lock hold or MPI wait time
    #[arg(long, value_enum, default_value = "wait")]
    weight: Weight,
    /// Configuration file (default: contend.toml in the recording or current directory)
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    #[command(flatten)]
    filter: FilterArgs,
}

/// Options from flags, falling back to the config file, then defaults.
struct Resolved {
    format: OutputFormat,
    render: RenderOptions,
    options: AnalysisOptions,
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
    let format = match (output.format, &config.report.format) {
        (Some(f), _) => f,
        (None, Some(name)) => name.parse().map_err(|e| {
            anyhow::anyhow!(
                "{}: report.format: {e}",
                config_path
                    .as_deref()
                    .unwrap_or(Path::new("contend.toml"))
                    .display()
            )
        })?,
        (None, None) => OutputFormat::Text,
    };
    let color = match output.color {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => {
            std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
                && std::io::stdout().is_terminal()
        }
    };
    // On a terminal, tables fit its width by wrapping long names (a table
    // of many numbers in blocks of columns: render::text); into a
    // file or pipe every name is written in full on one line.
    let width = std::io::stdout()
        .is_terminal()
        .then(|| terminal_size::terminal_size().map(|(w, _)| usize::from(w.0)))
        .flatten()
        .or_else(|| {
            std::io::stdout()
                .is_terminal()
                .then(|| std::env::var("COLUMNS").ok()?.parse().ok())
                .flatten()
        });
    let render = RenderOptions {
        color: color && output.output_file.is_none(),
        top: output.top.or(config.report.top).unwrap_or(20),
        width,
        legend: !output.no_legend,
        chart: output.chart.clone(),
        figures_dir: output
            .figures
            .as_ref()
            .map(|d| d.to_string_lossy().into_owned()),
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
            (None, Some(v)) => Ok(Some(v.to_ns()?)),
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
        wrappers: filter.wrappers.clone(),
        window: match (
            dur(&filter.from, &None, "from")?,
            dur(&filter.to, &None, "to")?,
        ) {
            (None, None) => None,
            (from, to) => {
                let from_ns = from.unwrap_or(0);
                if to.is_some_and(|t| t <= from_ns) {
                    bail!("--to must be later than --from");
                }
                Some(contend::locks::TimeWindow {
                    from_ns,
                    to_ns: to,
                    origin_ns: 0,
                })
            }
        },
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
        root_cause_rows: match filter.root_causes.as_deref() {
            None => None,
            Some("all") => Some(usize::MAX),
            Some(n) => Some(n.parse::<usize>().ok().filter(|&n| n > 0).ok_or_else(|| {
                anyhow::anyhow!(
                    "--root-causes: `{n}` is neither a number of rows (1 or more) nor `all`"
                )
            })?),
        },
    };
    Ok(Resolved {
        format,
        render,
        options: AnalysisOptions {
            locks: event_filter,
            mpi,
            ..AnalysisOptions::default()
        },
    })
}

/// Opens and analyses one recording.
fn analyze_dir(dir: &Path, options: &AnalysisOptions, bar: &Bar) -> Result<Report> {
    bar.stage(&format!("reading {}", dir.display()), 1);
    let rec = Recording::open(dir)?;
    bar.advance(1);
    let options = anchored(options, &rec);
    Ok(contend::analyze(&rec, &options, bar).into_report())
}

/// `options` with the lock filter's time window (`--from/--to`) counted
/// from `rec`'s start.
fn anchored(options: &AnalysisOptions, rec: &Recording) -> AnalysisOptions {
    AnalysisOptions {
        locks: options.locks.anchored(rec.start_monotonic_ns()),
        ..options.clone()
    }
}

/// Writes `text` to standard output, ending it with a newline.
pub fn write_out(text: &str) -> Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    if !text.ends_with('\n') {
        out.write_all(b"\n")?;
    }
    out.flush()?;
    Ok(())
}

/// A recording directory that does not exist is named with how to make one.
fn require_recording(dir: &Path) -> Result<()> {
    if !dir.exists() {
        bail!(
            "{}: no such recording; `contend record -o {} -- CMD` makes one",
            dir.display(),
            dir.display()
        );
    }
    Ok(())
}

pub fn cmd_report(a: ReportArgs) -> Result<ExitCode> {
    require_recording(&a.dir)?;
    let mut r = resolve(&a.output, &a.filter, &a.dir)?;
    r.options.numa = a.numa.options()?;
    let bar = Bar::new();
    // A `contend scale` directory: the speed-up loss model (docs/model.md).
    let file = a.output.output_file.as_deref();
    if contend_trace::scale::ScaleManifest::is_scale_dir(&a.dir) {
        let scale = contend::speedup::scale_report(&a.dir, &bar)?;
        bar.finish();
        emit(&Document::Scale(&scale), &r, file)?;
    } else {
        bar.stage(&format!("reading {}", a.dir.display()), 1);
        let rec = Recording::open(&a.dir)?;
        bar.advance(1);
        r.options = anchored(&r.options, &rec);
        let analysis = contend::analyze(&rec, &r.options, &bar);
        bar.finish();
        emit(&Document::Analysis(&analysis), &r, file)?;
        left_to_the_system(analysis);
        left_to_the_system(rec);
    }
    Ok(ExitCode::SUCCESS)
}

/// Not freed: `contend report` ends right after writing its document, and
/// freeing an analysis of many small parts piece by piece (the SCI's
/// rows, the symbol caches, the names) took 17 ms of memcached's 0.39 s
/// report (docs/benchmarks.md, "The analysis left to the system at
/// exit"); the system takes the memory back at exit. None of these types
/// has a destructor with an effect outside the process (no file is
/// written or removed when they are dropped), and `emit` flushed the
/// output.
fn left_to_the_system<T>(value: T) {
    std::mem::forget(value);
}

/// Checks that `--format svg` names one of `doc`'s charts and writes the
/// figures `--figures` asks for.
fn render_checked(doc: &Document<'_>, r: &Resolved) -> Result<()> {
    if r.format == OutputFormat::Svg {
        contend::render::svg::select_chart(doc, r.render.chart.as_deref())?;
    } else if let Some(chart) = &r.render.chart {
        bail!("--chart {chart}: only --format svg draws one chart (--format html draws them all)");
    }
    if let Some(dir) = &r.render.figures_dir {
        if r.format != OutputFormat::Latex {
            bail!("--figures {dir}: only --format latex includes figures from files");
        }
        std::fs::create_dir_all(dir).with_context(|| format!("{dir}: cannot create"))?;
        for f in doc.figures() {
            let path = Path::new(dir).join(format!("{}.svg", f.name));
            std::fs::write(&path, contend::render::chart::svg(&f, true))
                .with_context(|| format!("{}: cannot write", path.display()))?;
        }
    }
    Ok(())
}

/// Renders `doc` (after [`render_checked`]) to `file`, or to standard
/// output, through a buffer: formats that can write as they go (JSON)
/// never hold the whole text.
fn emit(doc: &Document<'_>, r: &Resolved, file: Option<&Path>) -> Result<()> {
    render_checked(doc, r)?;
    let write = |out: &mut dyn Write| -> std::io::Result<()> {
        let mut out = std::io::BufWriter::with_capacity(1 << 16, out);
        contend::render::render_to(doc, r.format, &r.render, &mut out)?;
        out.flush()
    };
    match file {
        None => write(&mut std::io::stdout().lock())?,
        Some(path) => {
            let cannot = || format!("{}: cannot write", path.display());
            let mut f = std::fs::File::create(path).with_context(cannot)?;
            write(&mut f).with_context(cannot)?;
            eprintln!("contend: wrote {}", path.display());
        }
    }
    Ok(())
}

pub fn cmd_compare(a: CompareArgs) -> Result<ExitCode> {
    let mut r = resolve(&a.output, &a.filter, &a.dirs[0])?;
    r.options.numa = a.numa.options()?;
    let bar = Bar::new();
    let mut reports = Vec::new();
    for dir in &a.dirs {
        let report = analyze_dir(dir, &r.options, &bar)?;
        reports.push((dir.display().to_string(), report));
    }
    bar.finish();
    let cmp = contend::compare::Comparison::new(reports);
    emit(
        &Document::Comparison(&cmp),
        &r,
        a.output.output_file.as_deref(),
    )?;
    Ok(ExitCode::SUCCESS)
}

pub fn cmd_export(a: ExportArgs) -> Result<ExitCode> {
    require_recording(&a.dir)?;
    let output_args = OutputArgs {
        format: None,
        top: None,
        no_legend: true,
        color: ColorChoice::Never,
        config: a.config.clone(),
        chart: None,
        output_file: None,
        figures: None,
    };
    let r = resolve(&output_args, &a.filter, &a.dir)?;
    let path = a
        .output
        .clone()
        .unwrap_or_else(|| PathBuf::from(a.format.default_file_name()));
    let to_stdout = path.as_os_str() == "-";
    if !to_stdout && !a.force && path.exists() {
        bail!(
            "{}: already exists; choose another file with -o, or replace it with --force",
            path.display()
        );
    }
    let bar = Bar::new();
    bar.stage(&format!("reading {}", a.dir.display()), 1);
    let rec = Recording::open(&a.dir)?;
    bar.advance(1);
    let r = Resolved {
        options: anchored(&r.options, &rec),
        ..r
    };
    let analysis = contend::analyze(&rec, &r.options, &bar);
    bar.finish();
    // What the recording lacks is said first, also when nothing can be
    // exported because of it.
    for w in &analysis.report.warnings {
        eprintln!("contend: warning: {w}");
    }
    let options = ExportOptions {
        weight: a.weight,
        filter: r.options.locks.clone(),
        mpi: r.options.mpi,
    };
    let summary = if a.format.is_archive() {
        if to_stdout {
            bail!("--format {}: an archive of files cannot go to standard output; name a directory with -o", a.format.name());
        }
        crate::otf2_cmd::write(&analysis, &options, &path, a.force)?
    } else if to_stdout {
        let mut out = std::io::BufWriter::new(std::io::stdout().lock());
        let s = contend::export::export(&analysis, a.format, &options, &mut out)?;
        out.flush()?;
        s
    } else {
        // Written next to its final name and renamed, so a failed export
        // leaves no half-written file behind.
        let tmp = path.with_extension("contend-partial");
        let file = std::fs::File::create(&tmp)
            .with_context(|| format!("{}: cannot create", tmp.display()))?;
        let mut out = std::io::BufWriter::new(file);
        let result = contend::export::export(&analysis, a.format, &options, &mut out)
            .map_err(anyhow::Error::from)
            .and_then(|s| {
                out.flush()?;
                Ok(s)
            });
        match result {
            Ok(s) => {
                std::fs::rename(&tmp, &path)
                    .with_context(|| format!("{}: cannot write", path.display()))?;
                s
            }
            Err(e) => {
                let _ = std::fs::remove_file(&tmp);
                return Err(e);
            }
        }
    };
    for n in &summary.notes {
        eprintln!("contend: note: {n}");
    }
    if !to_stdout {
        eprintln!(
            "contend: wrote {} {} ({}) to {}",
            summary.records,
            summary.what,
            a.format.name(),
            path.display()
        );
    }
    Ok(ExitCode::SUCCESS)
}
