//! `contend meters` (the meter daemon) and `contend meters calibrate`:
//! flags and `[meters]` of `contend.toml` into the option structs of
//! `contend-meters`, then one call.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};
use contend::config::Config;
use contend_meters::calibration::{calibrate, CalibrateOptions, Calibration};
use contend_meters::daemon::{self, DaemonOptions, DaemonSummary};
use contend_meters::probe::ProbeConfig;
use contend_meters::EngineOptions;

#[derive(Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct MetersArgs {
    #[command(subcommand)]
    sub: Option<MetersSub>,
    #[command(flatten)]
    run: MetersRunArgs,
}

#[derive(Subcommand)]
enum MetersSub {
    /// Measure the probe's latency against the memory contention generator's bandwidth at several intensities (the calibration curve)
    #[command(
        after_help = "Examples:\n  contend meters calibrate -o meters-calibration.json\n  contend meters calibrate --probe-cpu 0 --cpus 1-3 --hold 500ms --rounds 3\n\nThe file is JSON (docs/meters.md, \"Calibration\"); contend meters --calibration FILE reads it."
    )]
    Calibrate(CalibrateArgs),
}

#[derive(Args)]
struct MetersRunArgs {
    /// Probe interval: how often memory latency is measured and the blackboard updated
    #[arg(long, value_name = "DURATION", value_parser = duration)]
    interval: Option<Duration>,
    /// Short-term window of the averages, minima, maxima and triggers
    #[arg(long, value_name = "DURATION", value_parser = duration)]
    window: Option<Duration>,
    /// CPUs whose per-CPU meters are computed, e.g. 0-3 (default: all online)
    #[arg(long, value_name = "LIST")]
    cpus: Option<String>,
    /// CPU the pointer-chasing probe runs on (default: the first of --cpus)
    #[arg(long, value_name = "CPU")]
    probe_cpu: Option<u32>,
    /// Size of the probe's pointer chain in MiB (default: the calibration's, else 4 × last-level cache, 64 to 512)
    #[arg(long, value_name = "MIB")]
    probe_chain_mb: Option<u64>,
    /// Stop after this long (default: until Ctrl-C or SIGTERM)
    #[arg(long, value_name = "DURATION", value_parser = duration)]
    duration: Option<Duration>,
    /// Blackboard name (/dev/shm/NAME) or path
    #[arg(long, value_name = "NAME")]
    blackboard: Option<String>,
    /// Calibration file of `contend meters calibrate` (memory_bandwidth, memory_concurrency)
    #[arg(long, value_name = "FILE")]
    calibration: Option<PathBuf>,
    /// Trigger levels of a meter, in its unit: METER=HIGH,LOW (repeatable)
    #[arg(long = "trigger", value_name = "METER=HIGH,LOW")]
    triggers: Vec<String>,
    /// Do not meter the lock waits of processes `contend record` records
    #[arg(long)]
    no_lock_meters: bool,
    /// Let every user's programs publish their state in the blackboard (mode 0666)
    #[arg(long)]
    world_writable: bool,
    /// contend.toml to read `[meters]` from (default: ./contend.toml if present)
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Output at the end: text or json
    #[arg(short, long, default_value = "text")]
    format: String,
    /// Detach: run in the background (new session, no terminal), write the pid file, return once the blackboard exists; stop it with SIGTERM
    #[arg(long, conflicts_with = "duration")]
    daemon: bool,
    /// With --daemon: the pid file (default: the blackboard's path + .pid, e.g. /dev/shm/contend-meters.pid)
    #[arg(long, value_name = "FILE", requires = "daemon")]
    pid_file: Option<PathBuf>,
}

#[derive(Args)]
struct CalibrateArgs {
    /// Calibration file to write
    #[arg(
        short,
        long,
        value_name = "FILE",
        default_value = "meters-calibration.json"
    )]
    output: PathBuf,
    /// CPU the probe runs on
    #[arg(long, value_name = "CPU", default_value_t = 0)]
    probe_cpu: u32,
    /// CPUs of the generator (default: every other allowed CPU)
    #[arg(long, value_name = "LIST")]
    cpus: Option<String>,
    /// Generator intensities (share of time streaming), comma-separated
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        default_value = "0,0.25,0.5,0.75,1"
    )]
    intensities: Vec<f64>,
    /// Time at each intensity per round
    #[arg(long, value_name = "DURATION", value_parser = duration, default_value = "400ms")]
    hold: Duration,
    /// Rounds over all intensities (averaged)
    #[arg(long, default_value_t = 2)]
    rounds: u32,
    /// Probe interval while calibrating (use the daemon's)
    #[arg(long, value_name = "DURATION", value_parser = duration, default_value = "1ms")]
    interval: Duration,
    /// Generator buffer per thread in MiB (default: its own)
    #[arg(long, value_name = "MIB")]
    buffer_mb: Option<u64>,
    /// Overwrite the output file
    #[arg(long)]
    force: bool,
}

fn duration(s: &str) -> Result<Duration, contend::config::DurationError> {
    contend::config::parse_duration(s)
}

pub fn cmd_meters(a: MetersArgs) -> Result<ExitCode> {
    match a.sub {
        Some(MetersSub::Calibrate(c)) => cmd_calibrate(c),
        None => cmd_run(a.run),
    }
}

/// CPUs of a `--cpus`-like flag, each online and allowed.
fn checked_cpus(flag: &str, list: &str) -> Result<Vec<u32>> {
    let cpus = contend_record::cpus::parse_cpu_list(list)
        .map_err(|e| anyhow::anyhow!("{flag} {list}: {e}"))?;
    let allowed =
        contend_record::cpus::affinity(0).unwrap_or_else(contend_record::cpus::online_cpu_list);
    for c in &cpus {
        if !allowed.contains(c) {
            bail!(
                "{flag} {list}: CPU {c} does not exist or is not allowed (allowed: {})",
                contend_record::cpus::format_cpu_list(&allowed)
            );
        }
    }
    Ok(cpus)
}

/// `METER=HIGH,LOW`.
fn parse_trigger(s: &str) -> Result<(String, (f64, f64))> {
    let bad =
        || anyhow::anyhow!("--trigger {s}: expected METER=HIGH,LOW, e.g. memory_latency=250,200");
    let (name, levels) = s.split_once('=').ok_or_else(bad)?;
    let (h, l) = levels.split_once(',').ok_or_else(bad)?;
    let high: f64 = h.trim().parse().map_err(|_| bad())?;
    let low: f64 = l.trim().parse().map_err(|_| bad())?;
    if name.trim().is_empty() {
        return Err(bad());
    }
    Ok((name.trim().to_string(), (high, low)))
}

/// The engine flags shared by `contend meters` and `contend record
/// --meters`.
pub struct EngineFlags<'a> {
    /// `--interval`.
    pub interval: Option<Duration>,
    /// `--window`.
    pub window: Option<Duration>,
    /// `--cpus`.
    pub cpus: Option<&'a str>,
    /// `--probe-cpu`.
    pub probe_cpu: Option<u32>,
    /// `--probe-chain-mb`.
    pub probe_chain_mb: Option<u64>,
    /// `--calibration`.
    pub calibration: Option<PathBuf>,
    /// `--trigger METER=HIGH,LOW`.
    pub triggers: &'a [String],
    /// `--config`.
    pub config: Option<&'a Path>,
    /// Lock meters of recorded processes.
    pub lock_meters: bool,
}

/// The engine options from the flags over `[meters]` of `contend.toml`
/// (`config`, else ./contend.toml if present), and the config's
/// blackboard name.
pub fn engine_options(f: &EngineFlags<'_>) -> Result<(EngineOptions, Option<String>)> {
    let cfg = match f.config {
        Some(p) => Config::read(p)?,
        None if Path::new("contend.toml").exists() => Config::read(Path::new("contend.toml"))?,
        None => Config::default(),
    }
    .meters;
    let from_cfg = |v: &Option<contend::config::DurationValue>| -> Result<Option<Duration>> {
        Ok(match v {
            Some(d) => Some(Duration::from_nanos(d.to_ns()?)),
            None => None,
        })
    };
    let interval = match f.interval {
        Some(d) => d,
        None => from_cfg(&cfg.interval)?.unwrap_or(Duration::from_millis(1)),
    };
    let window = match f.window {
        Some(d) => d,
        None => from_cfg(&cfg.window)?.unwrap_or(Duration::from_millis(100)),
    };
    let cpus = match f.cpus {
        Some(list) => checked_cpus("--cpus", list)?,
        None => {
            contend_record::cpus::affinity(0).unwrap_or_else(contend_record::cpus::online_cpu_list)
        }
    };
    let probe_cpu = match f.probe_cpu {
        Some(c) => checked_cpus("--probe-cpu", &c.to_string())?[0],
        None => cpus[0],
    };
    let calibration_path = f.calibration.clone().or(cfg.calibration.clone());
    let calibration = match &calibration_path {
        Some(p) => Some(Calibration::read(p)?),
        None => None,
    };
    let mut levels: BTreeMap<String, (f64, f64)> = cfg
        .triggers
        .iter()
        .map(|(k, v)| (k.clone(), (v.high, v.low)))
        .collect();
    for t in f.triggers {
        let (name, l) = parse_trigger(t)?;
        levels.insert(name, l);
    }
    let mut probe = match &calibration {
        // Measure the way the curve was measured.
        Some(c) => c.probe,
        None => ProbeConfig::default(),
    };
    if let Some(mb) = f.probe_chain_mb {
        if mb == 0 || mb > 65536 {
            bail!("--probe-chain-mb {mb}: must be from 1 to 65536");
        }
        probe.chain_bytes = mb << 20;
    }
    Ok((
        EngineOptions {
            interval,
            window,
            system_interval: Duration::from_millis(100).max(interval),
            lock_interval: Duration::from_millis(100).max(interval),
            cpus,
            probe_cpu,
            probe,
            calibration,
            levels,
            lock_meters: f.lock_meters,
        },
        cfg.blackboard.clone(),
    ))
}

fn cmd_run(a: MetersRunArgs) -> Result<ExitCode> {
    let json = match a.format.as_str() {
        "text" => false,
        "json" => true,
        other => bail!("--format {other}: `contend meters` writes text or json"),
    };
    if a.duration == Some(Duration::ZERO) {
        bail!("--duration: must be longer than 0");
    }
    let (engine, cfg_blackboard) = engine_options(&EngineFlags {
        interval: a.interval,
        window: a.window,
        cpus: a.cpus.as_deref(),
        probe_cpu: a.probe_cpu,
        probe_chain_mb: a.probe_chain_mb,
        calibration: a.calibration.clone(),
        triggers: &a.triggers,
        config: a.config.as_deref(),
        lock_meters: !a.no_lock_meters,
    })?;
    let interval = engine.interval;
    let name = a
        .blackboard
        .clone()
        .or(cfg_blackboard)
        .unwrap_or_else(|| contend_meters::DEFAULT_NAME.to_string());
    let opts = DaemonOptions {
        engine,
        blackboard: contend_meters::path_of(&name),
        duration: a.duration,
        world_writable: a.world_writable,
    };
    if a.daemon {
        return run_detached(&opts, a.pid_file.clone());
    }
    let interrupt = contend_record::Interrupt::begin();
    let summary = daemon::run(&opts, &|| interrupt.caught().is_some(), &mut |bb| {
        eprintln!(
            "contend: meters every {:?} on blackboard {}{}",
            interval,
            bb.path().display(),
            if opts.duration.is_none() {
                "; Ctrl-C to stop"
            } else {
                ""
            }
        );
    })?;
    drop(interrupt);
    if json {
        crate::report_cmd::write_out(&(serde_json::to_string_pretty(&summary)? + "\n"))?;
    } else {
        crate::report_cmd::write_out(&summary_text(&summary))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `contend meters --daemon`: detaches (before any thread exists), then
/// runs the daemon until SIGTERM, SIGINT or SIGHUP; the launcher returns
/// once the blackboard exists, or fails with the daemon's error.
fn run_detached(opts: &DaemonOptions, pid_file: Option<PathBuf>) -> Result<ExitCode> {
    use contend_meters::detach::{detach, Side};
    let pid_file = pid_file.unwrap_or_else(|| {
        let mut p = opts.blackboard.clone().into_os_string();
        p.push(".pid");
        p.into()
    });
    match detach(&pid_file).context("contend meters --daemon")? {
        Side::Launcher { pid } => {
            eprintln!(
                "contend: meters daemon {pid} every {:?} on blackboard {} (pid file {}); `kill {pid}` stops it",
                opts.engine.interval,
                opts.blackboard.display(),
                pid_file.display()
            );
            Ok(ExitCode::SUCCESS)
        }
        Side::Daemon(mut d) => {
            let interrupt = contend_record::Interrupt::begin();
            let bad_pid_file = std::cell::Cell::new(false);
            let run = daemon::run(
                opts,
                &|| bad_pid_file.get() || interrupt.caught().is_some(),
                &mut |_| bad_pid_file.set(d.ready().is_err()),
            );
            drop(interrupt);
            let code = match run {
                Ok(_) if !bad_pid_file.get() => ExitCode::SUCCESS,
                Ok(_) => ExitCode::FAILURE,
                Err(e) => {
                    d.failed(&e.to_string());
                    ExitCode::FAILURE
                }
            };
            d.finish();
            Ok(code)
        }
    }
}

fn num(v: f64) -> String {
    let a = v.abs();
    if v == 0.0 {
        "0".into()
    } else if !(1e-3..1e6).contains(&a) {
        format!("{v:.3e}")
    } else if a >= 100.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}

fn summary_text(s: &DaemonSummary) -> String {
    let mut out = format!(
        "Meters over {:.1} s (interval {} ms, window {} ms), blackboard {}\n\
         probe on CPU {}: {} samples ({} disturbed, left out), {:.3} s chasing; \
         daemon CPU {:.2}% of one CPU\n\n",
        s.duration_s,
        s.interval_s * 1e3,
        s.window_s * 1e3,
        s.blackboard,
        s.probe.cpu,
        s.probe.samples,
        s.probe.disturbed,
        s.probe.busy_s,
        100.0 * s.daemon_cpu
    );
    out.push_str(&format!(
        "{:<22} {:<10} {:<14} {:>11} {:>11} {:>11} {:>8} {:>9}\n",
        "meter", "unit", "scope", "avg", "min", "max", "samples", "high (s)"
    ));
    for m in &s.meters {
        let scope = if m.label.is_empty() {
            m.scope.clone()
        } else {
            format!("{} {}", m.scope, m.label)
        };
        out.push_str(&format!(
            "{:<22} {:<10} {:<14} {:>11} {:>11} {:>11} {:>8} {:>9}\n",
            m.name,
            m.unit,
            scope,
            num(m.avg),
            num(m.min),
            num(m.max),
            m.samples,
            if m.high.is_some() {
                format!("{:.3}", m.time_high_s)
            } else {
                "-".into()
            }
        ));
    }
    for n in &s.notes {
        out.push_str(&format!("note: {n}\n"));
    }
    out
}

fn cmd_calibrate(a: CalibrateArgs) -> Result<ExitCode> {
    if a.output.exists() && !a.force {
        bail!(
            "{}: exists; use --force to overwrite it",
            a.output.display()
        );
    }
    for &x in &a.intensities {
        if !(0.0..=1.0).contains(&x) {
            bail!("--intensities: {x} is outside 0 to 1");
        }
    }
    let probe_cpu = checked_cpus("--probe-cpu", &a.probe_cpu.to_string())?[0];
    let generator_cpus = match &a.cpus {
        Some(list) => checked_cpus("--cpus", list)?,
        None => contend_record::cpus::affinity(0)
            .unwrap_or_else(contend_record::cpus::online_cpu_list)
            .into_iter()
            .filter(|&c| c != probe_cpu)
            .collect(),
    };
    if generator_cpus.contains(&probe_cpu) {
        bail!("--cpus: must not include the probe's CPU {probe_cpu}");
    }
    let cal = calibrate(
        &CalibrateOptions {
            probe_cpu,
            generator_cpus,
            intensities: a.intensities.clone(),
            hold: a.hold,
            rounds: a.rounds,
            probe: ProbeConfig::default(),
            interval: a.interval,
            buffer_bytes: a.buffer_mb.map(|m| m << 20),
        },
        &mut |s| eprintln!("contend: calibrating, {s}"),
    )
    .context("contend meters calibrate")?;
    cal.write(&a.output)?;
    let mut out = format!(
        "Calibration written to {}\n\nintensity  bandwidth GB/s  latency ns\n",
        a.output.display()
    );
    for p in &cal.curve {
        out.push_str(&format!(
            "{:>9.2}  {:>14.3}  {:>10.1}\n",
            p.intensity,
            p.bandwidth_bytes_per_s / 1e9,
            p.latency_ns
        ));
    }
    for n in &cal.notes {
        out.push_str(&format!("note: {n}\n"));
    }
    crate::report_cmd::write_out(&out)?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trigger_flags_parse() {
        assert_eq!(
            parse_trigger("memory_latency=250,200").unwrap(),
            ("memory_latency".to_string(), (250.0, 200.0))
        );
        for bad in ["memory_latency", "x=1", "=1,2", "x=a,b"] {
            let e = parse_trigger(bad).unwrap_err().to_string();
            assert!(e.contains("METER=HIGH,LOW"), "{bad}: {e}");
        }
    }
}
