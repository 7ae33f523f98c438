//! Accuracy of the MPI wait-state analysis end to end: programs that make
//! their ranks wait on purpose (`examples/mpi-waits/mpi_waits.c`,
//! `tests/programs/mpi_waits.f90`: a late sender, a late receiver with
//! `MPI_Ssend`, an imbalanced barrier and an imbalanced all-reduce, 4 ranks
//! oversubscribed on this machine) evaluate the wait-state definitions on
//! their own CLOCK_MONOTONIC stamps of the calls' entries (one clock for all
//! ranks on one node; line `self_enter`); `contend record --mpi` +
//! `contend report --format json` must find each wait state
//! (`mpi.late_sender`, `mpi.late_receiver`, `mpi.wait_at_barrier`,
//! `mpi.wait_at_nxn`) within 5 % of that, with the expected number of
//! waits.
//!
//! Why not the time each rank was blocked (line `self`, also printed):
//! that holds the time the rank needed to notice its partner had arrived
//! (µs on an idle machine, milliseconds when other work keeps the 2 CPUs
//! busy), which is not part of a wait state (docs/mpi-wait-states.md).

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::common::{contend_bin, run_timeout, tempdir, which, Output};
use serde_json::Value;

const MPI_TIMEOUT: Duration = Duration::from_secs(60);
/// Relative tolerance of every wait-state total.
const TOLERANCE: f64 = 0.05;

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(2).map(|u| u == "0"))
        })
        .unwrap_or(false)
}

pub(crate) fn ompi_args() -> Vec<String> {
    let mut v: Vec<String> = [
        "-np",
        "4",
        "--oversubscribe",
        "--mca",
        "mpi_yield_when_idle",
        "1",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    if is_root() {
        v.insert(0, "--allow-run-as-root".into());
    }
    v
}

/// Builds a source with an MPI compiler wrapper (cached by content hash).
pub(crate) fn mpi_build(compiler: &str, source: &Path) -> PathBuf {
    let text = std::fs::read(source).unwrap();
    let mut h = DefaultHasher::new();
    text.hash(&mut h);
    compiler.hash(&mut h);
    let name = source.file_name().unwrap().to_string_lossy().to_string();
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("e2e-mpi-programs")
        .join(format!("{name}-{compiler}-{:016x}", h.finish()));
    let exe = dir.join("prog");
    if exe.exists() {
        return exe;
    }
    std::fs::create_dir_all(&dir).unwrap();
    let tmp = dir.join(format!(".prog.{}.tmp", std::process::id()));
    let mut cmd = Command::new(compiler);
    cmd.args(["-O2", "-g", "-o"]).arg(&tmp).arg(source);
    let out = run_timeout(cmd, Duration::from_secs(120));
    assert!(out.success(), "{compiler} {name} failed:\n{}", out.stderr);
    std::fs::rename(&tmp, &exe).unwrap();
    exe
}

pub(crate) fn record_mpi(
    dir: &Path,
    launcher: &str,
    args: &[String],
    prog: &Path,
    prog_args: &[String],
) -> Output {
    let mut cmd = Command::new(contend_bin());
    cmd.args(["record", "--mpi", "--force", "-o"])
        .arg(dir)
        .arg("--")
        .arg(launcher)
        .args(args)
        .arg(prog)
        .args(prog_args);
    run_timeout(cmd, MPI_TIMEOUT)
}

/// `<which> late_sender_ns=… late_receiver_ns=… barrier_ns=… nxn_ns=…` as
/// printed by the program: `self` (time blocked in the waiting calls) or
/// `self_enter` (the pattern definitions on the program's own MPI_Wtime
/// stamps; printed only where MPI_Wtime is one clock for all ranks).
fn self_measured(stdout: &str, which: &str) -> [f64; 4] {
    let prefix = format!("{which} ");
    let line = stdout
        .lines()
        .find(|l| l.starts_with(&prefix))
        .unwrap_or_else(|| panic!("no self-measurement line in:\n{stdout}"));
    let get = |key: &str| -> f64 {
        let v = line
            .split_whitespace()
            .find_map(|w| w.strip_prefix(&format!("{key}=")))
            .unwrap_or_else(|| panic!("{key} missing in {line}"));
        v.trim_end_matches('.').parse().unwrap()
    };
    [
        get("late_sender_ns"),
        get("late_receiver_ns"),
        get("barrier_ns"),
        get("nxn_ns"),
    ]
}

/// Records `prog` with `launcher`, then checks every pattern against the
/// program's `which` line. `delay_ms` is the program's DELAY; `pass_delay`
/// gives it as the argument.
fn check_accuracy(
    launcher: &str,
    args: &[String],
    prog: &Path,
    delay_ms: f64,
    pass_delay: bool,
    which: &str,
) {
    let _guard = crate::common::serial();
    let t = tempdir();
    let prog_args: Vec<String> = if pass_delay {
        vec![format!("{delay_ms}")]
    } else {
        Vec::new()
    };
    // Each phase makes two ranks wait DELAY by design (in sum 2 × DELAY).
    // On a machine shared with other work a rank can be descheduled inside
    // a waiting call: the program's clock counts that and no wait state
    // explains it. A run whose own measurements are more than half the
    // TOLERANCE off the design is disturbed and made again (up to three
    // runs): the report may be off the design too (a waiting rank that
    // entered its call late), and the two disturbances add up.
    let designed = 2.0 * delay_ms * 1e6;
    let mut attempt = 0;
    let (dir, which, measured) = loop {
        attempt += 1;
        let dir = t.path().join(format!("rec{attempt}"));
        let out = record_mpi(&dir, launcher, args, prog, &prog_args);
        assert!(out.success(), "{}", out.describe());
        // self_enter needs MPI_Wtime to be one clock for all ranks; where
        // the program found it is not, the time blocked is the measure
        let which = if out
            .stdout
            .lines()
            .any(|l| l.starts_with(&format!("{which} ")))
        {
            which
        } else {
            eprintln!("no `{which}` line (MPI_Wtime is not one clock here); using `self`");
            "self"
        };
        let measured = self_measured(&out.stdout, which);
        let disturbed = measured
            .iter()
            .any(|m| (m - designed).abs() > 0.5 * TOLERANCE * designed);
        if !disturbed || attempt == 3 {
            break (dir, which, measured);
        }
        eprintln!("run {attempt} disturbed (the program measured {measured:?} ns against {designed} ns by design); again");
    };
    let undisturbed = measured
        .iter()
        .all(|m| (m - designed).abs() <= 0.5 * TOLERANCE * designed);
    eprintln!("measure: {which}");
    let report = crate::common::report_json(&dir);
    let mpi = &report["mpi"];
    let patterns = [
        ("late_sender", 2),
        ("late_receiver", 2),
        ("wait_at_barrier", 3),
        ("wait_at_nxn", 3),
    ];
    let mut failures = Vec::new();
    for ((name, count), want) in patterns.iter().zip(measured) {
        let p: &Value = &mpi[*name];
        let got = p["wait_ns"]
            .as_f64()
            .unwrap_or_else(|| panic!("mpi.{name}.wait_ns: {p}"));
        let n = p["count"].as_u64().unwrap();
        let err = (got - want).abs() / want;
        eprintln!(
            "{name}: report {:.3} ms, program {:.3} ms ({:+.2} %), {n} waits",
            got / 1e6,
            want / 1e6,
            100.0 * (got - want) / want
        );
        if undisturbed {
            if err > TOLERANCE {
                failures.push(format!(
                    "{name}: report {got} ns, program measured {want} ns ({:.1} % off)",
                    100.0 * err
                ));
            }
        } else {
            // Three disturbed runs: what the program's clock counted is not
            // the truth of the waits. What holds under any load: a wait
            // state never exceeds the time the ranks spent in the waiting
            // calls, and it finds the designed wait (the sleeping rank's
            // delay) unless a waiting rank itself entered late, which its
            // own clock shows as time missing from the design.
            let short = (designed - want).max(0.0);
            if got > want * (1.0 + TOLERANCE) || got < designed * (1.0 - TOLERANCE) - short {
                failures.push(format!(
                    "{name} (all runs disturbed): report {got} ns outside [{} ns, {} ns]",
                    designed * (1.0 - TOLERANCE) - short,
                    want * (1.0 + TOLERANCE)
                ));
            }
        }
        if n != *count {
            failures.push(format!("{name}: {n} waits, expected {count}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_eq!(mpi["ranks"].as_u64(), Some(4), "{}", mpi["ranks"]);
}

#[test]
fn c_wait_states_match_the_program_open_mpi() {
    if which("mpicc.openmpi").is_none() || which("mpirun.openmpi").is_none() {
        eprintln!("SKIP: Open MPI is not installed");
        return;
    }
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/mpi-waits/mpi_waits.c");
    let exe = mpi_build("mpicc.openmpi", &src);
    // the program evaluates the definitions on its own CLOCK_MONOTONIC
    // stamps (one clock on one node): the time blocked would also hold the
    // wake-up after the partner arrived, which a loaded machine stretches
    check_accuracy(
        "mpirun.openmpi",
        &ompi_args(),
        &exe,
        100.0,
        true,
        "self_enter",
    );
}

#[test]
fn c_wait_states_match_the_program_mpich() {
    if which("mpicc.mpich").is_none() || which("mpirun.mpich").is_none() {
        eprintln!("SKIP: MPICH is not installed");
        return;
    }
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/mpi-waits/mpi_waits.c");
    let exe = mpi_build("mpicc.mpich", &src);
    // MPICH's ranks poll without yielding: on 2 CPUs a collective takes
    // milliseconds to complete after the last rank entered, which the time
    // blocked includes but a wait state does not; MPICH's MPI_Wtime is one
    // clock, so the program evaluates the definitions on its own stamps
    check_accuracy(
        "mpirun.mpich",
        &["-np".into(), "4".into()],
        &exe,
        100.0,
        true,
        "self_enter",
    );
}

#[test]
fn fortran_wait_states_match_the_program() {
    if which("mpif90.openmpi").is_none() || which("mpirun.openmpi").is_none() {
        eprintln!("SKIP: Open MPI Fortran is not installed");
        return;
    }
    let exe = mpi_build(
        "mpif90.openmpi",
        &crate::common::program_source("mpi_waits.f90"),
    );
    // the definitions on the program's own CLOCK_MONOTONIC stamps (the
    // time blocked also holds the wake-up, stretched on a loaded machine)
    check_accuracy(
        "mpirun.openmpi",
        &ompi_args(),
        &exe,
        80.0,
        false,
        "self_enter",
    );
}

/// `tests/programs/mpi_mprobe.c`: late senders received through
/// `MPI_Mprobe` + `MPI_Mrecv`, `MPI_Mprobe` + `MPI_Imrecv` + `MPI_Wait` and
/// `MPI_Probe` + `MPI_Recv` (rank 0 → 1, DELAY each), a polled
/// `MPI_Improbe` + `MPI_Imrecv` (rank 3 → 2, no wait state) and an
/// `MPI_Mrecv` of `MPI_MESSAGE_NO_PROC` on every rank. The late-sender wait
/// is charged to the blocking probes and must be within 5 % of the time
/// rank 1 measured blocked in them; every message is matched.
#[test]
fn matched_probe_late_sender_matches_the_program_open_mpi() {
    if which("mpicc.openmpi").is_none() || which("mpirun.openmpi").is_none() {
        eprintln!("SKIP: Open MPI is not installed");
        return;
    }
    let exe = mpi_build(
        "mpicc.openmpi",
        &crate::common::program_source("mpi_mprobe.c"),
    );
    let _guard = crate::common::serial();
    let t = tempdir();
    let delay_ms = 100.0;
    // As in check_accuracy: a run whose own measurement is more than half
    // the TOLERANCE off the design (3 × DELAY) had rank 1 descheduled in a
    // probe (its clock counts the wake-up, no wait state explains it) and
    // is made again, up to three runs.
    let designed = 3.0 * delay_ms * 1e6;
    let mut attempt = 0;
    let (dir, want) = loop {
        attempt += 1;
        let dir = t.path().join(format!("rec{attempt}"));
        let out = record_mpi(
            &dir,
            "mpirun.openmpi",
            &ompi_args(),
            &exe,
            &[format!("{delay_ms}")],
        );
        assert!(out.success(), "{}", out.describe());
        let want: f64 = out
            .stdout
            .lines()
            .find_map(|l| l.strip_prefix("self late_sender_ns="))
            .and_then(|l| l.split_whitespace().next())
            .unwrap_or_else(|| panic!("no self line in:\n{}", out.stdout))
            .parse()
            .unwrap();
        assert!(
            (want - designed).abs() < 0.5 * designed,
            "the program did not wait as designed: {want} ns"
        );
        if (want - designed).abs() <= 0.5 * TOLERANCE * designed || attempt == 3 {
            break (dir, want);
        }
        eprintln!(
            "run {attempt} disturbed: the program measured {:.3} ms against {:.3} ms designed; again",
            want / 1e6,
            designed / 1e6
        );
    };
    let report = crate::common::report_json(&dir);
    let mpi = &report["mpi"];
    let got = mpi["late_sender"]["wait_ns"].as_f64().unwrap();
    eprintln!(
        "late sender at probes: report {:.3} ms, program {:.3} ms ({:+.2} %)",
        got / 1e6,
        want / 1e6,
        100.0 * (got - want) / want
    );
    assert!(
        (got - want).abs() <= TOLERANCE * want,
        "late sender: report {got} ns, program measured {want} ns"
    );
    assert_eq!(mpi["late_sender"]["count"].as_u64(), Some(3), "{mpi}");
    let m = &mpi["matching"];
    assert_eq!(m["messages"].as_u64(), Some(4), "{m}");
    assert_eq!(m["unmatched_sends"].as_u64(), Some(0), "{m}");
    assert_eq!(m["unmatched_receives"].as_u64(), Some(0), "{m}");
    let w = crate::common::warnings(&report);
    assert!(!w.contains("never matched"), "{w}");
    // charged to the blocking probes; the polled MPI_Improbe never waits
    let sites = mpi["by_site"].as_array().unwrap();
    let wait_at = |op: &str| -> (u64, u64) {
        sites
            .iter()
            .filter(|s| s["operation"] == op)
            .fold((0, 0), |(n, w), s| {
                (
                    n + s["events"].as_u64().unwrap(),
                    w + s["wait_ns"].as_u64().unwrap(),
                )
            })
    };
    let (mprobes, mprobe_wait) = wait_at("MPI_Mprobe");
    let (_, probe_wait) = wait_at("MPI_Probe");
    let (improbes, improbe_wait) = wait_at("MPI_Improbe");
    // 4 MPI_PROC_NULL probes + 2 on rank 1
    assert_eq!(mprobes, 6, "{}", mpi["by_site"]);
    assert_eq!((mprobe_wait + probe_wait) as f64, got);
    assert!(
        probe_wait > 0 && mprobe_wait > probe_wait,
        "{}",
        mpi["by_site"]
    );
    assert!(improbes >= 2);
    assert_eq!(improbe_wait, 0);
    for op in ["MPI_Mrecv", "MPI_Imrecv"] {
        assert!(wait_at(op).0 > 0, "{op} not recorded: {}", mpi["by_site"]);
    }
}
