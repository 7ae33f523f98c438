//! Go programs: statically linked, their goroutines parked in Go's own
//! scheduler. `contend record --function` must leave them running (return
//! probes crash them), and the futex waits the tracepoints see are the Go
//! runtime's, which the report says (tests/programs/go_mutex.go).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::common::*;

/// Builds tests/programs/go_mutex.go with `go build` into `dir`.
fn build_go(dir: &Path) -> PathBuf {
    let src = dir.join("main.go");
    std::fs::copy(program_source("go_mutex.go"), &src).expect("copy go_mutex.go");
    std::fs::write(dir.join("go.mod"), "module gomutex\n\ngo 1.21\n").expect("go.mod");
    let exe = dir.join("go_mutex");
    let mut cmd = Command::new("go");
    cmd.current_dir(dir)
        .env("GOFLAGS", "-mod=mod")
        .args(["build", "-o"])
        .arg(&exe)
        .arg(".");
    let out = run_timeout(cmd, Duration::from_secs(300));
    assert!(out.success(), "go build failed:\n{}", out.describe());
    exe
}

const EXPECTED_TOTAL: &str = "total=3960000000";

/// `contend record FLAGS -o REC -- EXE`, which must succeed with the
/// program's own result printed (it ran to its end).
fn record_to_its_end(exe: &Path, rec: &Path, flags: &[&str]) -> Output {
    let mut cmd = Command::new(contend_bin());
    cmd.arg("record")
        .args(flags)
        .arg("-o")
        .arg(rec)
        .arg("--")
        .arg(exe);
    let out = run_timeout(cmd, RUN_TIMEOUT);
    assert!(
        out.success() && out.stdout.contains(EXPECTED_TOTAL),
        "the Go program must run to its end:\n{}",
        out.describe()
    );
    out
}

/// A return probe on a Go function killed the program (SIGILL at the
/// kernel's trampoline, or Go's "unknown pc", 5 runs of 5): now no
/// function of a Go program is probed, the program runs to its end, and
/// the recorder and the report say why, once for all the functions asked.
#[test]
fn go_functions_are_refused_and_the_program_runs() {
    require_tool!("go");
    let _serial = serial();
    let build_dir = tempdir();
    let exe = build_go(build_dir.path());
    let dir = tempdir();
    let rec = dir.path().join("rec");
    let out = record_to_its_end(&exe, &rec, &["--function", "main.work,main.main"]);
    let refusal = "functions main.work, main.main are not probed";
    assert!(
        out.stderr.contains(refusal) && out.stderr.contains("is a Go program"),
        "{}",
        out.describe()
    );
    let report = report_json(&rec);
    let warnings = report["warnings"].to_string();
    assert!(
        warnings.contains("functions main.work, main.main were not probed")
            && warnings.contains("is a Go program"),
        "{warnings}"
    );
}

/// `--hot-functions` on a Go program: nothing of it would be probed, so
/// it is not run a first time under a profile (it was, and then every
/// chosen function was refused): it runs once, and the recorder says why.
#[test]
fn go_programs_are_not_profiled_for_hot_functions() {
    require_tool!("go");
    let _serial = serial();
    let build_dir = tempdir();
    let exe = build_go(build_dir.path());
    let dir = tempdir();
    let rec = dir.path().join("rec");
    let out = record_to_its_end(&exe, &rec, &["--hot-functions", "3"]);
    assert_eq!(
        out.stdout.matches(EXPECTED_TOTAL).count(),
        1,
        "the program ran once:\n{}",
        out.describe()
    );
    assert!(
        out.stderr.contains("--hot-functions 3:")
            && out.stderr.contains("is a Go program")
            && out.stderr.contains("it was not profiled and runs once"),
        "{}",
        out.describe()
    );
}

/// The futex tracepoints see a Go program's threads sleep in
/// `runtime.futex`, never its `sync.Mutex` waits: the report warns that
/// these waits are the runtime's and where Go's own profiles are.
#[test]
fn go_runtime_futex_waits_are_explained() {
    require_tool!("go");
    // SAFETY: plain system call.
    let root = unsafe { libc::geteuid() == 0 };
    let tracefs = Path::new("/sys/kernel/tracing/events/syscalls/sys_enter_futex").is_dir()
        || (root
            && Command::new("mount")
                .args(["-t", "tracefs", "nodev", "/sys/kernel/tracing"])
                .status()
                .is_ok_and(|s| s.success()));
    if !root || !tracefs {
        eprintln!("SKIP go_runtime_futex_waits_are_explained: needs root and tracefs");
        return;
    }
    let _serial = serial();
    let build_dir = tempdir();
    let exe = build_go(build_dir.path());
    let dir = tempdir();
    let rec = dir.path().join("rec");
    record_to_its_end(&exe, &rec, &[]);
    let report = report_json(&rec);
    let waits = report["futex"]["summary"]["events"].as_u64().unwrap_or(0);
    if waits == 0 {
        // four goroutines on two CPUs leave a thread idle now and then;
        // a run where none slept says nothing either way
        eprintln!("no futex wait in this run: nothing to explain");
        return;
    }
    let warning = report["warnings"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|w| w.as_str())
        .find(|w| w.contains("are the Go runtime's own"))
        .unwrap_or_else(|| panic!("no Go runtime warning: {}", report["warnings"]))
        .to_string();
    assert!(warning.ends_with("go tool pprof)"), "{warning}");
    let sites = report["futex"]["by_site"]
        .as_array()
        .expect("futex.by_site");
    assert!(
        sites.iter().all(|s| s["function"]
            .as_str()
            .is_some_and(|f| f.starts_with("runtime."))),
        "every wait is the runtime's: {sites:?}"
    );
}
