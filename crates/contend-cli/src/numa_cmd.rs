//! `contend numa calibrate | estimate | balance`, and the NUMA flags of
//! `contend report` and `contend record`: flags into the plain structs of
//! `contend::numa` (the model, offline) and `contend-record`'s `numa`
//! (calibration, sampling, `move_pages`; only with the `record` feature).

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{anyhow, bail, Result};
use clap::{Args, Subcommand};

use contend::numa::{analyse, NumaDocument, NumaInput, NumaRequest, Variant, WhatIfSpec};
use contend::render::{render, Document, OutputFormat};
use contend::report::RenderOptions;
use contend_trace::numa::histogram::{read_node_accesses, read_page_accesses, write_plan};
use contend_trace::numa::{LatencyTable, PlannedMove};

#[derive(Subcommand)]
pub enum NumaCommand {
    /// Measure local and remote memory latencies with and without contention (the seed's Figure 1 micro-benchmark)
    #[command(
        after_help = "Examples:\n  contend numa calibrate -o latency.json\n  contend numa calibrate --buffer-mb 64 --round 20ms --format json\n\nA master thread chases pointers through memory bound to each node while 0..N contender\nthreads stream from the same memory on other nodes (on a one-node machine: other CPUs).\nThe file is the latency table of `numa estimate` (docs/numa.md). Takes about\n(N x N x (N+1)) x rounds x round time, plus buffer set-up."
    )]
    #[cfg(feature = "record")]
    Calibrate(CalibrateArgs),
    /// Estimate the run time lost to memory contention (Nikolopoulos Eq. 1-14) from access histograms
    #[command(
        after_help = "Examples:\n  contend numa estimate --accesses accesses.csv --latency latency.json --time 12.5\n  contend numa estimate --pages pages.csv --latency latency.json --time 12.5 --what-if node:0 --what-if balance\n  contend numa estimate --recording run.data --latency latency.json --format json\n\naccesses.csv: from_node,to_node,accesses; pages.csv: page,from_node,to_node,accesses\n(nodes from 0; from_node == to_node is local). See docs/numa.md."
    )]
    Estimate(EstimateArgs),
    /// Plan page migrations that balance memory load (Section 3 algorithm); apply them to a process with --apply
    #[command(
        after_help = "Examples:\n  contend numa balance --pages pages.csv --latency latency.json --time 12.5 -o plan.csv\n  contend numa balance --apply --plan plan.csv -p 4242\n  contend numa balance --apply -p 4242 --latency latency.json --sample-for 2s --every 30s\n\n--apply moves pages with move_pages(2) (root, or the process's owner) and reports the\npages moved and failed. Without --pages/--recording/--plan it samples the process for\n--sample-for, plans and applies, every --every (for iterative programs), until the process\nexits, --rounds are done or Ctrl-C."
    )]
    Balance(BalanceArgs),
}

/// Where the histograms come from.
#[derive(Args)]
pub struct HistogramArgs {
    /// Node histogram CSV: from_node,to_node,accesses
    #[arg(long, value_name = "FILE")]
    accesses: Option<PathBuf>,
    /// Page histogram CSV: page,from_node,to_node,accesses
    #[arg(long, value_name = "FILE")]
    pages: Option<PathBuf>,
    /// A recording made with `contend record --numa` (its samples and run time)
    #[arg(long, value_name = "DIR", conflicts_with_all = ["accesses", "pages"])]
    recording: Option<PathBuf>,
    /// Latency table from `contend numa calibrate` (docs/numa.md)
    #[arg(long, value_name = "FILE")]
    latency: Option<PathBuf>,
    /// Run time t_ex of the program: seconds (12.5) or with a unit (800ms); a recording gives its own
    #[arg(long, value_name = "DURATION", value_parser = duration)]
    time: Option<Duration>,
    /// Form of Eq. 9: printed (as in the paper) or corrected (denominators of a draw without replacement)
    #[arg(long, value_enum, default_value = "printed")]
    variant: Variant,
}

#[derive(Args)]
pub struct OutputFlags {
    /// Output format
    #[arg(short, long, value_enum, default_value = "text")]
    format: OutputFormat,
    /// Rows per table (0 = all)
    #[arg(long, default_value_t = 20)]
    top: usize,
}

#[derive(Args)]
pub struct EstimateArgs {
    #[command(flatten)]
    input: HistogramArgs,
    /// Another placement to estimate (Eq. 14): node:K, interleave, balance; repeatable [default: node:0, interleave, and balance with pages]
    #[arg(long = "what-if", value_name = "PLACEMENT")]
    what_if: Vec<String>,
    #[command(flatten)]
    output: OutputFlags,
}

#[derive(Args)]
pub struct BalanceArgs {
    #[command(flatten)]
    input: HistogramArgs,
    /// Write the plan as CSV (pid,page,from_node,to_node,accesses)
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output_plan: Option<PathBuf>,
    /// Move the pages of process -p with move_pages(2)
    #[arg(long, requires = "pid")]
    apply: bool,
    /// The process whose pages --apply moves
    #[arg(short, long, value_name = "PID", requires = "apply")]
    pid: Option<u32>,
    /// With --apply: a plan written by -o (instead of planning now)
    #[arg(long, value_name = "FILE", requires = "apply", conflicts_with_all = ["accesses", "pages", "recording"])]
    plan: Option<PathBuf>,
    /// With --apply and no histograms: how long to sample the process before each plan
    #[arg(long, value_name = "DURATION", value_parser = duration, default_value = "1s")]
    sample_for: Duration,
    /// With --apply and no histograms: sample, plan and apply again every DURATION
    #[arg(long, value_name = "DURATION", value_parser = duration)]
    every: Option<Duration>,
    /// With --every: stop after N rounds (default: until the process exits or Ctrl-C)
    #[arg(long, value_name = "N")]
    rounds: Option<u32>,
    /// With live sampling: the software sampler's period, CPU time
    #[arg(long, value_name = "DURATION", value_parser = duration, default_value = "1ms")]
    period: Duration,
    #[command(flatten)]
    output: OutputFlags,
}

/// `contend report --numa-latency`, `--numa-variant`.
#[derive(Args, Default)]
pub struct NumaReportArgs {
    /// NUMA: latency table for the model (default: numa/latency.json of the recording)
    #[arg(long, value_name = "FILE")]
    pub numa_latency: Option<PathBuf>,
    /// NUMA: form of Eq. 9 (printed or corrected)
    #[arg(long, value_enum, value_name = "FORM")]
    pub numa_variant: Option<Variant>,
}

impl NumaReportArgs {
    /// The options of the NUMA section.
    pub fn options(&self) -> Result<contend::numa::NumaOptions> {
        Ok(contend::numa::NumaOptions {
            latency: match &self.numa_latency {
                Some(p) => Some((p.display().to_string(), LatencyTable::read(p)?)),
                None => None,
            },
            variant: self.numa_variant.unwrap_or_default(),
        })
    }
}

/// Parses a duration flag with the one duration parser of contend.
fn duration(s: &str) -> Result<Duration, contend::config::DurationError> {
    contend::config::parse_duration(s)
}

fn render_options(top: usize) -> RenderOptions {
    RenderOptions {
        color: std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
            && std::io::stdout().is_terminal(),
        top,
        ..RenderOptions::default()
    }
}

fn print_doc(doc: &NumaDocument, out: &OutputFlags) -> Result<()> {
    crate::report_cmd::write_out(&render(
        &Document::Numa(doc),
        out.format,
        &render_options(out.top),
    ))
}

/// The inputs, read and checked: histograms, the latency table (if any)
/// and its name.
fn read_inputs(a: &HistogramArgs) -> Result<(NumaInput, Option<(String, LatencyTable)>)> {
    let latency = match &a.latency {
        Some(p) => Some((p.display().to_string(), LatencyTable::read(p)?)),
        None => None,
    };
    let nodes = latency.as_ref().map(|l| l.1.nodes);
    let time_ns = a.time.map(|d| d.as_nanos() as f64);
    if time_ns == Some(0.0) {
        bail!("--time: must be longer than 0");
    }
    let input = if let Some(dir) = &a.recording {
        let rec = contend_trace::numa::read_numa_recording(dir).ok_or_else(|| {
            anyhow!(
                "{}: holds no NUMA samples (record with `contend record --numa`)",
                dir.display()
            )
        })??;
        let wall = contend_trace::meta::RunMeta::read(dir)
            .ok()
            .and_then(|m| m.wall_ns);
        let latency = latency.clone().or_else(|| {
            rec.latency
                .clone()
                .and_then(Result::ok)
                .map(|t| ("numa/latency.json".into(), t))
        });
        let mut input = NumaInput::from_recording(
            &dir.display().to_string(),
            &rec,
            latency.as_ref().map(|l| &l.1),
            wall,
        )?;
        if let Some(t) = time_ns {
            input.time_ns = Some(t);
            input.warnings.retain(|w| !w.contains("gives no run time"));
        }
        return Ok((input, latency));
    } else {
        let acc = match &a.accesses {
            Some(p) => Some((p.display().to_string(), read_node_accesses(p)?)),
            None => None,
        };
        let pages = match &a.pages {
            Some(p) => Some((p.display().to_string(), read_page_accesses(p)?)),
            None => None,
        };
        if acc.is_none() && pages.is_none() {
            bail!("give the histograms: --accesses FILE, --pages FILE, or --recording DIR");
        }
        NumaInput::from_csv(
            acc.as_ref().map(|(n, r)| (n.as_str(), r.as_slice())),
            pages.as_ref().map(|(n, r)| (n.as_str(), r.as_slice())),
            nodes,
            time_ns,
        )?
    };
    if input.time_ns.is_none() && latency.is_some() {
        bail!("--time SECONDS is needed: the model's Eq. 2 divides by the run time t_ex");
    }
    Ok((input, latency))
}

pub fn cmd_numa(c: NumaCommand) -> Result<ExitCode> {
    match c {
        #[cfg(feature = "record")]
        NumaCommand::Calibrate(a) => cmd_calibrate(a),
        NumaCommand::Estimate(a) => cmd_estimate(a),
        NumaCommand::Balance(a) => cmd_balance(a),
    }
}

fn cmd_estimate(a: EstimateArgs) -> Result<ExitCode> {
    let (input, latency) = read_inputs(&a.input)?;
    if latency.is_none() {
        bail!(
            "--latency FILE is needed: measure one with `contend numa calibrate -o latency.json`"
        );
    }
    let what_if = a
        .what_if
        .iter()
        .map(|s| WhatIfSpec::parse(s).map_err(|e| anyhow!("--what-if: {e}")))
        .collect::<Result<Vec<_>>>()?;
    let plan =
        input.pages.is_some() && (what_if.is_empty() || what_if.contains(&WhatIfSpec::Balance));
    let req = NumaRequest {
        latency: latency.as_ref().map(|(n, t)| (n.as_str(), t)),
        variant: a.input.variant,
        what_if,
        plan,
    };
    let (mut numa, warnings) = analyse(&input, &req)?;
    if !plan {
        numa.migrations.clear();
    }
    print_doc(&NumaDocument { numa, warnings }, &a.output)?;
    Ok(ExitCode::SUCCESS)
}

fn planned(m: &contend::numa::report::MigrationRow) -> PlannedMove {
    PlannedMove {
        pid: m.pid,
        page: m.page.0,
        from_node: Some(m.from_node),
        to_node: m.to_node,
        accesses: Some(m.accesses),
    }
}

fn cmd_balance(a: BalanceArgs) -> Result<ExitCode> {
    let have_histograms =
        a.input.accesses.is_some() || a.input.pages.is_some() || a.input.recording.is_some();
    if a.apply {
        return apply(a, have_histograms);
    }
    if !have_histograms {
        bail!("give the page histograms (--pages FILE or --recording DIR), or --apply -p PID to sample a running process");
    }
    let (input, latency) = read_inputs(&a.input)?;
    if latency.is_none() {
        bail!(
            "--latency FILE is needed: measure one with `contend numa calibrate -o latency.json`"
        );
    }
    if input.pages.is_none() {
        bail!("the migration plan needs per-page histograms: --pages FILE (page,from_node,to_node,accesses) or --recording DIR");
    }
    let req = NumaRequest {
        latency: latency.as_ref().map(|(n, t)| (n.as_str(), t)),
        variant: a.input.variant,
        what_if: vec![WhatIfSpec::Balance],
        plan: true,
    };
    let (numa, warnings) = analyse(&input, &req)?;
    if let Some(path) = &a.output_plan {
        let rows: Vec<PlannedMove> = numa.migrations.iter().map(planned).collect();
        write_plan(path, &rows)?;
        eprintln!(
            "contend: wrote the plan ({} page(s)) to {}",
            rows.len(),
            path.display()
        );
    }
    print_doc(&NumaDocument { numa, warnings }, &a.output)?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(not(feature = "record"))]
fn apply(_a: BalanceArgs, _have: bool) -> Result<ExitCode> {
    bail!("--apply moves pages of a live process: this contend was built without the `record` feature")
}

#[cfg(feature = "record")]
fn apply(a: BalanceArgs, have_histograms: bool) -> Result<ExitCode> {
    use contend_record::numa::memory::{errno_name, move_pages, ApplyError};
    use std::path::Path;
    let pid = a.pid.expect("clap requires -p with --apply");
    if !Path::new(&format!("/proc/{pid}")).is_dir() {
        bail!("process {pid}: no such process");
    }
    let json = matches!(a.output.format, OutputFormat::Json);
    let say = |round: u32, text: String, value: serde_json::Value| -> Result<()> {
        if json {
            crate::report_cmd::write_out(&serde_json::to_string(&value)?)
        } else {
            crate::report_cmd::write_out(&format!("round {round}: {text}"))
        }
    };
    // One round: the moves to make, from a plan file, histograms, or live
    // samples.
    let interrupt = contend_record::Interrupt::begin();
    let mut round = 0u32;
    let mut failed_any = false;
    loop {
        round += 1;
        let (moves, summary): (Vec<PlannedMove>, String) = if let Some(plan) = &a.plan {
            let rows = contend_trace::numa::histogram::read_plan(plan)?;
            if let Some(bad) = rows.iter().find(|r| r.pid.is_some_and(|p| p != pid)) {
                bail!(
                    "{}: page {:#x} belongs to process {}, not {pid}; nothing was moved",
                    plan.display(),
                    bad.page,
                    bad.pid.unwrap_or_default()
                );
            }
            let n = rows.len();
            (rows, format!("plan {} with {n} page(s)", plan.display()))
        } else {
            let (input, latency) = if have_histograms {
                read_inputs(&a.input)?
            } else {
                let latency_path = a.input.latency.as_ref().ok_or_else(|| {
                    anyhow!("--latency FILE is needed to plan (or give --plan FILE)")
                })?;
                let table = LatencyTable::read(latency_path)?;
                let opts = contend_record::numa::NumaSamplerOptions {
                    method: contend_record::numa::MethodChoice::Auto,
                    period_ns: a.period.as_nanos() as u64,
                    ..Default::default()
                };
                let sampler = contend_record::numa::NumaSampler::attach(pid, &opts)
                    .map_err(|e| anyhow!(e))?;
                let t0 = std::time::Instant::now();
                while t0.elapsed() < a.sample_for
                    && interrupt.caught().is_none()
                    && Path::new(&format!("/proc/{pid}")).is_dir()
                {
                    std::thread::sleep(Duration::from_millis(20));
                }
                let elapsed = t0.elapsed().as_nanos() as u64;
                let set = sampler.stop();
                let rec = contend_trace::numa::NumaRecording {
                    sampler: set.info,
                    samples: set.samples,
                    latency: None,
                };
                let input = NumaInput::from_recording(
                    &format!("process {pid}"),
                    &rec,
                    Some(&table),
                    Some(elapsed.max(1)),
                )?;
                (input, Some((latency_path.display().to_string(), table)))
            };
            let latency = latency.ok_or_else(|| anyhow!("--latency FILE is needed to plan"))?;
            let req = NumaRequest {
                latency: Some((latency.0.as_str(), &latency.1)),
                variant: a.input.variant,
                what_if: vec![WhatIfSpec::Balance],
                plan: true,
            };
            let (numa, _) = analyse(&input, &req)?;
            let samples = numa
                .sampler
                .as_ref()
                .map_or(String::new(), |s| format!("{} samples, ", s.samples));
            let moves: Vec<PlannedMove> = numa.migrations.iter().map(planned).collect();
            if let Some(path) = &a.output_plan {
                write_plan(path, &moves)?;
            }
            let why = if numa.single_node {
                " (one NUMA node: nothing to balance)"
            } else {
                ""
            };
            (
                moves,
                format!("{samples}plan moves {} page(s){why}", numa.migrations.len()),
            )
        };
        if let Some(bad) = moves.iter().find(|m| m.pid.is_some_and(|p| p != pid)) {
            bail!(
                "the plan moves page {:#x} of process {}, not of {pid} (histograms of another run?); nothing was moved",
                bad.page,
                bad.pid.unwrap_or_default()
            );
        }
        let targets: Vec<(u64, u32)> = moves.iter().map(|m| (m.page, m.to_node)).collect();
        let result = move_pages(pid, &targets);
        let (done, err) = match result {
            Ok(d) => (d, None),
            Err(ApplyError::Exited { done, .. }) => (
                done.clone(),
                Some(format!("process {pid} exited during --apply")),
            ),
            Err(ApplyError::Refused { source, done, .. }) => {
                (done.clone(), Some(format!("move_pages refused: {source}")))
            }
        };
        let mut by_errno: std::collections::BTreeMap<i32, u64> = std::collections::BTreeMap::new();
        for (_, e) in &done.failed {
            *by_errno.entry(*e).or_default() += 1;
        }
        let failures: Vec<String> = by_errno
            .iter()
            .map(|(e, n)| format!("{n} × {}", errno_name(*e)))
            .collect();
        say(
            round,
            format!(
                "{summary}; moved {}, failed {}{}{}",
                done.moved,
                done.failed.len(),
                if failures.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", failures.join(", "))
                },
                if done.not_attempted > 0 {
                    format!(", not attempted {}", done.not_attempted)
                } else {
                    String::new()
                }
            ),
            serde_json::json!({
                "round": round,
                "pid": pid,
                "summary": summary,
                "moved": done.moved,
                "failed": done.failed.iter().map(|(p, e)| serde_json::json!({"page": format!("{p:#x}"), "errno": e, "reason": errno_name(*e)})).collect::<Vec<_>>(),
                "not_attempted": done.not_attempted,
            }),
        )?;
        failed_any |= !done.failed.is_empty();
        if let Some(e) = err {
            bail!(
                "{e}: {} page(s) moved, {} failed, {} not attempted",
                done.moved,
                done.failed.len(),
                done.not_attempted
            );
        }
        let Some(every) = a.every else { break };
        if a.plan.is_some() || have_histograms {
            eprintln!("contend: --every re-samples a running process; with a fixed plan or histograms it applies once");
            break;
        }
        if a.rounds.is_some_and(|n| round >= n) {
            break;
        }
        let t0 = std::time::Instant::now();
        while t0.elapsed() < every && interrupt.caught().is_none() {
            if !Path::new(&format!("/proc/{pid}")).is_dir() {
                eprintln!("contend: process {pid} has exited; stopping after {round} round(s)");
                return Ok(ExitCode::SUCCESS);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        if interrupt.caught().is_some() {
            break;
        }
    }
    Ok(if failed_any {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

#[derive(Args)]
#[cfg(feature = "record")]
pub struct CalibrateArgs {
    /// Write the latency table here (JSON, docs/numa.md) [default: latency.json]
    #[arg(short, long, value_name = "FILE", default_value = "latency.json")]
    output: PathBuf,
    /// Replace an existing output file
    #[arg(long)]
    force: bool,
    /// Bytes of each buffer, MiB (beyond the last-level cache)
    #[arg(long, value_name = "MIB", default_value_t = 256)]
    buffer_mb: u64,
    /// Length of one measured round, e.g. 100ms
    #[arg(long, value_name = "DURATION", value_parser = duration, default_value = "100ms")]
    round: Duration,
    /// Rounds per point (the median is kept)
    #[arg(long, value_name = "N", default_value_t = 3)]
    rounds: u32,
    /// Contenders of the throughput curve on each node's own memory [default: N, or the other CPUs up to 8]
    #[arg(long, value_name = "M")]
    max_contenders: Option<u32>,
    /// Skip the restart-latency measurement (Eq. 2 then uses l_nocont as its window)
    #[arg(long)]
    no_restart: bool,
    /// What to print: text tables or the JSON written to the file
    #[arg(short, long, default_value = "text")]
    format: String,
}

#[cfg(feature = "record")]
fn cmd_calibrate(a: CalibrateArgs) -> Result<ExitCode> {
    let json = match a.format.as_str() {
        "text" => false,
        "json" => true,
        other => bail!("--format {other}: `contend numa calibrate` prints text or json"),
    };
    if a.output.exists() && !a.force {
        bail!(
            "{}: already exists; choose another file with -o, or replace it with --force",
            a.output.display()
        );
    }
    if a.rounds == 0 {
        bail!("--rounds: must be at least 1");
    }
    if a.buffer_mb == 0 {
        bail!("--buffer-mb: must be at least 1");
    }
    let opts = contend_record::numa::CalibrateOptions {
        buffer_bytes: a
            .buffer_mb
            .checked_mul(1 << 20)
            .ok_or_else(|| anyhow!("--buffer-mb: too large"))?,
        round: a.round.max(Duration::from_millis(1)),
        rounds: a.rounds,
        max_contenders: a.max_contenders,
        restart: !a.no_restart,
    };
    let mut say = |s: &str| eprintln!("contend: {s}");
    let table = contend_record::numa::calibrate(&opts, &mut say)?;
    table.write(&a.output)?;
    if json {
        crate::report_cmd::write_out(&serde_json::to_string_pretty(&table)?)?;
    } else {
        crate::report_cmd::write_out(&calibration_text(&table))?;
    }
    eprintln!("contend: wrote {}", a.output.display());
    Ok(ExitCode::SUCCESS)
}

#[cfg(feature = "record")]
fn calibration_text(t: &LatencyTable) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let n = t.nodes;
    let _ = writeln!(
        s,
        "Memory latencies, ns per dependent load ({n} NUMA node(s))\n"
    );
    let _ = write!(s, "local   {:>10}", "l_nocont");
    for m in 1..=n {
        let _ = write!(s, " {:>10}", format!("l_cont({m})"));
    }
    let _ = writeln!(s, " {:>10}", "restart");
    for i in 0..n {
        let _ = write!(s, "node {i:<2} {:>10.1}", t.l_nocont(i));
        for m in 1..=n {
            let _ = write!(s, " {:>10.1}", t.l_cont(i, m));
        }
        let _ = writeln!(
            s,
            " {:>10}",
            t.restart_ns
                .as_ref()
                .map_or("—".into(), |r| format!("{:.1}", r[i]))
        );
    }
    if n == 1 {
        let _ = writeln!(
            s,
            "\nremote: — (one node: there is no remote memory; the table holds null, not 0)"
        );
    } else {
        let _ = write!(s, "\nremote  {:>10}", "r_nocont");
        for m in 1..=n {
            let _ = write!(s, " {:>10}", format!("r_cont({m})"));
        }
        s.push('\n');
        for k in 0..n {
            for i in (0..n).filter(|&i| i != k) {
                let _ = write!(s, "{k:>2} → {i:<2} {:>10.1}", t.r_nocont(k, i));
                for m in 1..=n {
                    let _ = write!(s, " {:>10.1}", t.r_cont(k, i, m));
                }
                s.push('\n');
            }
        }
    }
    if let Some(c) = &t.calibration {
        let _ = writeln!(
            s,
            "\nMaster throughput as contenders grow (the seed's Figure 2)"
        );
        let _ = writeln!(
            s,
            "{:>6} {:>6} {:>11} {:>12} {:>15} {:>12} {:>16} {:>16} {:>14} {:>18}",
            "memory",
            "master",
            "contenders",
            "latency ns",
            "rounds ns",
            "contention",
            "back-to-back MB/s",
            "with work MB/s",
            "work alone ns",
            "contenders MB/s"
        );
        for p in &c.points {
            let _ = writeln!(
                s,
                "{:>6} {:>6} {:>11} {:>12.1} {:>15} {:>12} {:>16.1} {:>16} {:>14} {:>18.1}",
                p.memory_node,
                p.master_node,
                p.contenders,
                p.latency_ns,
                p.latency_range_ns
                    .map_or("—".into(), |[lo, hi]| format!("{lo:.1}–{hi:.1}")),
                match p.contention_resolved {
                    Some(true) => "resolved",
                    Some(false) => "within noise",
                    None => "—",
                },
                p.back_to_back_bytes_per_s / 1e6,
                p.throughput_bytes_per_s
                    .map_or("—".into(), |t| format!("{:.1}", t / 1e6)),
                p.work_alone_ns.map_or("—".into(), |w| format!("{w:.1}")),
                p.contender_bytes_per_s / 1e6
            );
        }
        let _ = writeln!(
            s,
            "\nbuffers {} MiB, {} round(s) per point, work between loads {:.1} ns, memory bound with mbind: {}; disturbed rounds measured again: {}{}",
            c.buffer_bytes >> 20,
            c.rounds,
            c.work_ns,
            if c.memory_bound { "yes" } else { "no" },
            c.disturbed_rounds,
            if c.disturbed_points > 0 { format!(" ({} point(s) still disturbed)", c.disturbed_points) } else { String::new() }
        );
        for note in &c.notes {
            let _ = writeln!(s, "note: {note}");
        }
    }
    s
}
