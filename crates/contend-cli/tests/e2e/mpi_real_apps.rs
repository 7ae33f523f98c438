//! Real MPI applications end to end, beyond what the recorder tests check:
//! Debian's `lammps` (the `melt` example of `lammps-examples`, 4 Open MPI
//! ranks oversubscribed) is recorded and reported; its report and Debian
//! `hpcc`'s (recorded by `mpi_record::debian_hpcc_is_recorded_and_reported`,
//! which calls [`check_causes`]) must hold together: every nanosecond of
//! waiting is a root-cause cost or named unattributed, the critical path
//! covers the run from end to start and splits over the ranks exactly,
//! the rank × rank table and the per-site tables sum to the per-rank
//! numbers.

use std::process::Command;
use std::time::Duration;

use serde_json::Value;

use crate::common::{contend_bin, report_json, run_timeout, tempdir, which};
use crate::mpi_accuracy::ompi_args;

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

fn sum(rows: &Value, key: &str) -> u64 {
    rows.as_array().unwrap().iter().map(|r| u(&r[key])).sum()
}

/// The consistency of the root causes, the critical path and the mpiP-style
/// tables of a real run's report (see the module docs).
pub(crate) fn check_causes(report: &Value) {
    let mpi = &report["mpi"];
    let ranks = mpi["by_rank"].as_array().unwrap().len() as u64;
    // root causes: the costs add up to the waiting
    let d = &mpi["delay"];
    let wait = u(&d["wait_ns"]);
    let costs = u(&d["short_term_ns"]) + u(&d["long_term_ns"]) + u(&d["unattributed_ns"]);
    assert!(wait > 0, "a real run waits: {d}");
    assert!(costs.abs_diff(wait) <= 2, "costs {costs} vs waiting {wait}");
    assert!(
        sum(&d["by_rank"], "cost_ns").abs_diff(u(&d["short_term_ns"]) + u(&d["long_term_ns"]))
            <= ranks,
        "{}",
        d["by_rank"]
    );
    assert_eq!(wait, sum(&mpi["by_rank"], "wait_ns"));
    assert!(!d["wait_states"].as_array().unwrap().is_empty());
    // critical path: split exactly over ranks and regions, within the run
    let cp = &mpi["critical_path"];
    let len = u(&cp["length_ns"]);
    assert_eq!(sum(&cp["by_rank"], "ns"), len, "{cp}");
    assert_eq!(u(&cp["mpi_ns"]) + u(&cp["compute_ns"]), len);
    assert!(u(&cp["imbalance_ns"]) <= len);
    assert!(u(&cp["jumps"]) > 0, "{cp}");
    let longest_rank = mpi["by_rank"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| u(&r["span_ns"]))
        .max()
        .unwrap();
    assert!(
        len >= longest_rank / 2 && len <= u(&report["run"]["wall_ns"]),
        "path {len} ns, longest rank {longest_rank} ns, run {}",
        report["run"]["wall_ns"]
    );
    let root_cause: u64 = sum(&mpi["by_rank"], "root_cause_ns");
    assert!(root_cause.abs_diff(sum(&d["by_rank"], "cost_ns")) <= ranks);
    // who waited for whom, per call site and rank
    assert_eq!(sum(&mpi["wait_matrix"], "wait_ns"), wait);
    assert_eq!(
        sum(&mpi["by_site_rank"], "events"),
        sum(&mpi["by_rank"], "events")
    );
    assert_eq!(
        sum(&mpi["by_site_rank"], "wait_ns"),
        sum(&mpi["by_site"], "wait_ns")
    );
    let p2p_sent: u64 = mpi["messages_by_site"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["kind"] == "p2p")
        .map(|r| u(&r["messages"]))
        .sum();
    assert_eq!(p2p_sent, u(&mpi["message_sizes"]["messages"]));
    assert!(p2p_sent >= u(&mpi["matching"]["messages"]));
    for row in mpi["by_rank"].as_array().unwrap() {
        assert!(u(&row["mpi_ns"]) + u(&row["init_finalize_ns"]) == u(&row["duration_ns"]));
        let share = row["mpi_share"].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&share), "{row}");
    }
}

/// LAMMPS (Debian's `lmp`, Open MPI) on the `melt` example: a 3-d
/// Lennard-Jones melt, 4000 atoms, 250 steps, halo exchanges between the 4
/// ranks' subdomains every step.
#[test]
fn lammps_melt_is_recorded_with_root_causes_and_critical_path() {
    let Some(lmp) = which("lmp") else {
        eprintln!("SKIP: lammps is not installed");
        return;
    };
    let input = std::path::Path::new("/usr/share/lammps/examples/melt/in.melt");
    if !input.is_file() || which("mpirun.openmpi").is_none() {
        eprintln!("SKIP: lammps-examples or Open MPI is not installed");
        return;
    }
    let _guard = crate::common::serial();
    let t = tempdir();
    std::fs::copy(input, t.path().join("in.melt")).unwrap();
    let dir = t.path().join("rec");
    let mut cmd = Command::new(contend_bin());
    cmd.args(["record", "--mpi", "-o"])
        .arg(&dir)
        .arg("--")
        .arg("mpirun.openmpi")
        .args(ompi_args())
        .arg(&lmp)
        .args(["-in", "in.melt", "-log", "none"])
        .current_dir(t.path());
    let out = run_timeout(cmd, Duration::from_secs(300));
    assert!(out.success(), "{}", out.describe());
    assert!(
        out.stdout.contains("Loop time of"),
        "lammps did not run its steps: {}",
        out.describe()
    );
    let report = report_json(&dir);
    let mpi = &report["mpi"];
    assert_eq!(mpi["ranks"], 4, "{}", mpi["ranks"]);
    let m = &mpi["matching"];
    assert!(u(&m["messages"]) > 1000, "{m}");
    assert_eq!(m["unmatched_sends"], 0, "{m}");
    assert_eq!(m["unmatched_receives"], 0, "{m}");
    assert_eq!(m["skipped_collectives"], 0, "{m}");
    let w = crate::common::warnings(&report);
    assert!(!w.contains("MPI:"), "{w}");
    // LAMMPS's own communication (CommBrick) is where the time goes
    assert!(
        mpi["by_site"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["display"].as_str().unwrap_or("").contains("Comm")),
        "{}",
        mpi["by_site"]
    );
    check_causes(&report);
}
