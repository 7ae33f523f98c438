//! The MPI calls added for completeness, recorded from real programs:
//! nonblocking collectives (`MPI_Iallreduce`, `MPI_Ibarrier`, `MPI_Ibcast`
//! completed by `MPI_Wait`), communicators made by `MPI_Comm_create_group`,
//! `MPI_Intercomm_create` and `MPI_Comm_idup` (ids identical on all
//! members: everything matches), `MPI_Abort`; and the defect of a wrong
//! `--mpi-impl` with a Fortran MPICH program (issue 12).
//!
//! Truth: `tests/programs/mpi_nonblocking.c` evaluates the wait-state
//! definitions on its own CLOCK_MONOTONIC stamps taken just before each
//! call (one clock for all ranks on one node); the report must agree
//! within 5 % + 1 ms per pattern.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::common::{contend_bin, program_source, report_json, run_timeout, tempdir, which};
use crate::mpi_accuracy::{mpi_build, ompi_args, record_mpi};

fn field(stdout: &str, prefix: &str, key: &str) -> f64 {
    let line = stdout
        .lines()
        .find(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no `{prefix}` line in:\n{stdout}"));
    line.split_whitespace()
        .find_map(|w| w.strip_prefix(&format!("{key}=")))
        .unwrap_or_else(|| panic!("{key} missing in {line}"))
        .parse()
        .unwrap()
}

fn check_nonblocking(launcher: &str, args: &[String], exe: &Path) {
    let _guard = crate::common::serial();
    let t = tempdir();
    let dir = t.path().join("rec");
    let out = record_mpi(&dir, launcher, args, exe, &["60".into()]);
    assert!(out.success(), "{}", out.describe());
    assert!(
        out.stdout.contains("mpi_nonblocking ok"),
        "{}",
        out.describe()
    );
    let report = report_json(&dir);
    let mpi = &report["mpi"];
    let warnings = crate::common::warnings(&report);
    assert!(
        !warnings.contains("MPI:"),
        "every message and collective matches, every communicator agrees: {warnings}"
    );
    let m = &mpi["matching"];
    assert_eq!(m["messages"], 1, "{m}");
    // Iallreduce, Ibarrier, Ibcast, the barrier on the group, the
    // Comm_split, the barrier on the idup'ed communicator and the reduce
    // and gather at the end are collectives on matched communicators
    assert_eq!(m["skipped_collectives"], 0, "{m}");
    let mut failures = Vec::new();
    for (pattern, key, count) in [
        ("wait_at_nxn", "nxn_ns", 3),
        ("wait_at_barrier", "barrier_ns", 7),
        ("late_broadcast", "broadcast_ns", 3),
        ("late_sender", "late_sender_ns", 1),
    ] {
        let want = field(&out.stdout, "self_enter ", key);
        let got = mpi[pattern]["wait_ns"].as_f64().unwrap();
        eprintln!(
            "{pattern}: report {:.3} ms, program {:.3} ms ({:+.2} %)",
            got / 1e6,
            want / 1e6,
            100.0 * (got - want) / want
        );
        if (got - want).abs() > 0.05 * want + 1e6 {
            failures.push(format!("{pattern}: report {got} ns, program {want} ns"));
        }
        if mpi[pattern]["count"] != count {
            failures.push(format!(
                "{pattern}: {} waits, want {count}",
                mpi[pattern]["count"]
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // the waits of the nonblocking collectives are in the MPI_Wait calls
    let sites = mpi["by_site"].as_array().unwrap();
    let wait_in = |op: &str| -> u64 {
        sites
            .iter()
            .filter(|s| s["operation"] == op)
            .map(|s| s["wait_ns"].as_u64().unwrap())
            .sum()
    };
    assert!(wait_in("MPI_Wait") > 0, "{}", mpi["by_site"]);
    assert_eq!(wait_in("MPI_Iallreduce") + wait_in("MPI_Ibarrier"), 0);
    for op in [
        "MPI_Comm_create_group",
        "MPI_Intercomm_create",
        "MPI_Comm_idup",
        "MPI_Ibcast",
    ] {
        assert!(
            sites.iter().any(|s| s["operation"] == op),
            "{op} not recorded: {}",
            mpi["by_site"]
        );
    }
}

#[test]
fn nonblocking_collectives_and_group_communicators_open_mpi() {
    if which("mpicc.openmpi").is_none() || which("mpirun.openmpi").is_none() {
        eprintln!("SKIP: Open MPI is not installed");
        return;
    }
    let exe = mpi_build("mpicc.openmpi", &program_source("mpi_nonblocking.c"));
    check_nonblocking("mpirun.openmpi", &ompi_args(), &exe);
}

#[test]
fn nonblocking_collectives_and_group_communicators_mpich() {
    if which("mpicc.mpich").is_none() || which("mpirun.mpich").is_none() {
        eprintln!("SKIP: MPICH is not installed");
        return;
    }
    let exe = mpi_build("mpicc.mpich", &program_source("mpi_nonblocking.c"));
    check_nonblocking("mpirun.mpich", &["-np".into(), "4".into()], &exe);
}

/// `tests/programs/mpi_abort.c`: rank 1 calls `MPI_Abort` while the others
/// wait; the recording keeps every rank's calls up to the end and says
/// which rank aborted; the barrier before it is analysed (rank 2 was late).
#[test]
fn mpi_abort_is_recorded_open_mpi() {
    if which("mpicc.openmpi").is_none() || which("mpirun.openmpi").is_none() {
        eprintln!("SKIP: Open MPI is not installed");
        return;
    }
    let exe = mpi_build("mpicc.openmpi", &program_source("mpi_abort.c"));
    let _guard = crate::common::serial();
    let t = tempdir();
    let dir = t.path().join("rec");
    let out = record_mpi(&dir, "mpirun.openmpi", &ompi_args(), &exe, &["50".into()]);
    assert!(!out.success(), "the job was aborted: {}", out.describe());
    let report = report_json(&dir);
    let mpi = &report["mpi"];
    let rows = mpi["by_rank"].as_array().unwrap();
    assert_eq!(rows.len(), 4, "{}", mpi["by_rank"]);
    let r1 = rows.iter().find(|r| r["rank"] == 1).unwrap();
    assert_eq!(r1["aborted_in"], "MPI_Abort", "{r1}");
    assert!(mpi["aborted_ranks"]
        .as_array()
        .unwrap()
        .contains(&serde_json::json!(1)));
    let warnings = crate::common::warnings(&report);
    assert!(warnings.contains("rank 1 called MPI_Abort"), "{warnings}");
    // the first barrier: ranks 0, 1, 3 waited for rank 2, about 50 ms each
    let b = &mpi["wait_at_barrier"];
    assert_eq!(b["count"], 3, "{b}");
    assert_eq!(b["most_late"]["rank"], 2, "{b}");
}

/// Regression (issue 12): `contend record --mpi --mpi-impl openmpi` of a
/// Fortran program built with MPICH preloaded the Open MPI recorder, whose
/// Fortran entry points took MPICH's calls and every rank died of SIGSEGV.
/// The recorder now passes them on to MPICH's own binding: the program
/// runs exactly as without contend, and contend says why nothing was
/// recorded.
#[test]
fn wrong_mpi_impl_leaves_a_fortran_mpich_program_unharmed() {
    if which("mpif90.mpich").is_none()
        || which("mpirun.mpich").is_none()
        || which("mpirun.openmpi").is_none()
    {
        eprintln!("SKIP: MPICH Fortran or Open MPI is not installed");
        return;
    }
    let exe = mpi_build("mpif90.mpich", &program_source("mpi_fortran.f90"));
    let _guard = crate::common::serial();
    let mut plain = Command::new("mpirun.mpich");
    plain.args(["-np", "4"]).arg(&exe);
    let plain = run_timeout(plain, Duration::from_secs(60));
    assert!(plain.success(), "{}", plain.describe());
    let t = tempdir();
    let mut cmd = Command::new(contend_bin());
    cmd.args(["record", "--mpi", "--mpi-impl", "openmpi", "--force", "-o"])
        .arg(t.path().join("rec"))
        .args(["--", "mpirun.mpich", "-np", "4"])
        .arg(&exe);
    let out = run_timeout(cmd, Duration::from_secs(60));
    assert!(out.success(), "{}", out.describe());
    assert_eq!(out.stdout, plain.stdout, "the program's output changed");
    assert!(
        out.stderr
            .contains("--mpi-impl named Open MPI but the program uses MPICH"),
        "{}",
        out.stderr
    );
}

/// The call sites of `file` in the report's `mpi.by_site`: (operation,
/// line), and every site's file (those that have one).
fn sites_of(report: &serde_json::Value, file: &str) -> (Vec<(String, u64)>, Vec<String>) {
    let sites = report["mpi"]["by_site"].as_array().unwrap();
    let mut mine: Vec<(String, u64)> = sites
        .iter()
        .filter(|s| s["file"].as_str().is_some_and(|f| f.ends_with(file)))
        .map(|s| {
            (
                s["operation"].as_str().unwrap().to_string(),
                s["line"].as_u64().unwrap_or(0),
            )
        })
        .collect();
    mine.sort();
    let files = sites
        .iter()
        .map(|s| {
            s["file"]
                .as_str()
                .or(s["module"].as_str())
                .unwrap_or("?")
                .to_string()
        })
        .collect();
    (mine, files)
}

fn line_of(source: &Path, marker: &str) -> u64 {
    std::fs::read_to_string(source)
        .unwrap()
        .lines()
        .position(|l| l.contains(marker))
        .unwrap_or_else(|| panic!("{marker} not in {}", source.display())) as u64
        + 1
}

/// Open MPI's `mpi_f08` bindings (`use mpi_f08`) are recorded, every call
/// at the program's own line (not inside the f08 module), and the late
/// sender is found in the `MPI_Recv`.
#[test]
fn mpi_f08_calls_are_recorded_at_the_users_lines_open_mpi() {
    if which("mpif90.openmpi").is_none() || which("mpirun.openmpi").is_none() {
        eprintln!("SKIP: Open MPI Fortran is not installed");
        return;
    }
    let src = program_source("mpi_f08.f90");
    let exe = mpi_build("mpif90.openmpi", &src);
    let _guard = crate::common::serial();
    let t = tempdir();
    let dir = t.path().join("rec");
    let mut args = ompi_args();
    let four = args.iter().position(|a| a == "4").unwrap();
    args[four] = "2".into();
    let out = record_mpi(&dir, "mpirun.openmpi", &args, &exe, &[]);
    assert!(out.success(), "{}", out.describe());
    assert!(out.stdout.contains("mpi_f08 ok"), "{}", out.describe());
    let report = report_json(&dir);
    let (mine, files) = sites_of(&report, "mpi_f08.f90");
    assert!(
        files.iter().all(|f| f.ends_with("mpi_f08.f90")),
        "every call site is the program's: {files:?}"
    );
    let send = line_of(&src, "F08_SEND");
    let recv = line_of(&src, "F08_RECV");
    assert!(mine.contains(&("MPI_Send".into(), send)), "{mine:?}");
    assert!(mine.contains(&("MPI_Recv".into(), recv)), "{mine:?}");
    for op in [
        "MPI_Init",
        "MPI_Irecv",
        "MPI_Wait",
        "MPI_Barrier",
        "MPI_Allreduce",
        "MPI_Finalize",
    ] {
        assert!(mine.iter().any(|(o, _)| o == op), "{op} missing: {mine:?}");
    }
    let mpi = &report["mpi"];
    assert_eq!(mpi["matching"]["messages"], 3, "{}", mpi["matching"]);
    assert_eq!(
        mpi["late_sender"]["most_late"]["rank"], 0,
        "{}",
        mpi["late_sender"]
    );
    assert!(mpi["late_sender"]["wait_ns"].as_u64().unwrap() > 20_000_000);
}

/// Regression (issue 12): with MPICH, a Fortran program's calls reach the
/// recorder from inside MPICH's binding library (`libmpichfort`), and were
/// attributed to it; the recorder now unwinds one frame past the binding:
/// every call site is a line of the program.
#[test]
fn mpich_fortran_calls_are_attributed_to_the_users_lines() {
    if which("mpif90.mpich").is_none() || which("mpirun.mpich").is_none() {
        eprintln!("SKIP: MPICH Fortran is not installed");
        return;
    }
    let src = program_source("mpi_fortran.f90");
    let exe = mpi_build("mpif90.mpich", &src);
    let _guard = crate::common::serial();
    let t = tempdir();
    let dir = t.path().join("rec");
    let out = record_mpi(&dir, "mpirun.mpich", &["-np".into(), "4".into()], &exe, &[]);
    assert!(out.success(), "{}", out.describe());
    let report = report_json(&dir);
    let (mine, files) = sites_of(&report, "mpi_fortran.f90");
    assert!(
        files.iter().all(|f| f.ends_with("mpi_fortran.f90")),
        "call sites outside the program: {files:?}"
    );
    assert!(mine.len() >= 8, "{mine:?}");
}
