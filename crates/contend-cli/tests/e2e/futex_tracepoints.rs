//! The futex tracer (`syscalls:sys_enter_futex` / `sys_exit_futex`
//! through `perf_event_open`), end to end on tests/programs/futex_static.c,
//! a statically linked program with its own futex lock whose waiter times
//! every FUTEX_WAIT call with its own clock:
//!
//! * `contend record -- STATIC` is not refused: the tracepoints record the
//!   futex calls, and the wait time of the lock word agrees with the
//!   program's own clock within 2 % + 1 µs per wait (the tracepoints'
//!   entry and exit lie inside the program's clock readings, so contend
//!   may not exceed the program's sum; the program's extra is the system
//!   call's entry and exit and the tracer's cost, unless the run was
//!   disturbed between the two readings: such a run is made again, up to
//!   three times); the wakes are exact;
//! * `contend record -p PID` on the running program records the same;
//! * the lock word is named by its symbol, `g_lock`;
//! * as an unprivileged user the static program is refused with a message
//!   that says the tracepoints are not allowed and what to change.
//!
//! Needs root (the tests run as root); tracefs is mounted at
//! /sys/kernel/tracing when it is not.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::*;
use serde_json::Value;

const ROUNDS: &str = "20";
const HOLD_US: &str = "3000";

fn is_root() -> bool {
    // SAFETY: plain system call.
    unsafe { libc::geteuid() == 0 }
}

/// tracefs, mounted when it is not (root only); false when unusable.
fn tracefs() -> bool {
    if Path::new("/sys/kernel/tracing/events/syscalls/sys_enter_futex").is_dir() {
        return true;
    }
    let _ = Command::new("mount")
        .args(["-t", "tracefs", "nodev", "/sys/kernel/tracing"])
        .status();
    Path::new("/sys/kernel/tracing/events/syscalls/sys_enter_futex").is_dir()
}

fn static_program() -> Option<std::path::PathBuf> {
    if !have("gcc") || !is_root() || !tracefs() {
        eprintln!("SKIP futex_tracepoints: needs gcc, root and tracefs");
        return None;
    }
    Some(build(
        "futex_static.c",
        &["-O1", "-static", "-fno-omit-frame-pointer"],
    ))
}

/// The program's result line: lock address and `key=value`s.
fn program_values(stdout: &str) -> (String, std::collections::HashMap<String, i64>) {
    let line = stdout
        .lines()
        .find(|l| l.starts_with("lock="))
        .unwrap_or_else(|| panic!("no result line:\n{stdout}"));
    let mut lock = String::new();
    let mut v = std::collections::HashMap::new();
    for (k, val) in line.split_whitespace().filter_map(|kv| kv.split_once('=')) {
        if k == "lock" {
            lock = val.to_string();
        } else {
            v.insert(k.to_string(), val.parse().expect("integer"));
        }
    }
    (lock, v)
}

fn word<'a>(report: &'a Value, address: &str) -> &'a Value {
    report["futex"]["by_word"]
        .as_array()
        .expect("futex.by_word")
        .iter()
        .find(|w| w["address"] == address)
        .unwrap_or_else(|| panic!("no futex word {address}: {}", report["futex"]))
}

/// Checks the lock word against the program; `Err` for a disturbed run
/// (the program's sum above contend's by more than the tolerance).
fn check(report: &Value, stdout: &str) -> Result<(), String> {
    let (lock, p) = program_values(stdout);
    let w = word(report, &lock);
    let waits = p["waits"] as u64;
    assert_eq!(u(w, "events"), waits, "futex waits on the lock: {w}");
    assert_eq!(u(w, "wakes"), p["wakes"] as u64, "wake calls: {w}");
    // Woken waits as the program counted them: a round whose waiter came
    // late under load found the lock free and did not wait.
    assert_eq!(
        u(w, "waiters_woken"),
        p["woken"] as u64,
        "waiters woken: {w}"
    );
    let truth = p["wait_ns"] as f64;
    let got = u(w, "wait_ns") as f64;
    let tolerance = 0.02 * truth + 1000.0 * waits as f64;
    // the tracepoints' interval lies inside the program's
    assert!(
        got <= truth + 1000.0,
        "contend's wait {got} ns exceeds the program's own {truth} ns"
    );
    if truth - got > tolerance {
        return Err(format!(
            "contend's wait {got} ns vs the program's {truth} ns (tolerance {tolerance})"
        ));
    }
    // a global word is named by its symbol (from the maps the tracer wrote)
    assert_eq!(w["name"], "g_lock", "{w}");
    let sources = &report["futex"]["sources"];
    assert_eq!(sources[0]["source"], "tracepoints", "{sources}");
    Ok(())
}

#[test]
fn a_static_program_s_futex_waits_come_from_the_tracepoints() {
    let Some(exe) = static_program() else { return };
    let _serial = serial();
    let mut last = String::new();
    for _ in 0..3 {
        let dir = tempdir();
        let rec = dir.path().join("rec");
        let out = record(&rec, &exe, &[ROUNDS, HOLD_US]);
        assert!(
            out.success(),
            "static program refused or failed:\n{}",
            out.describe()
        );
        assert!(
            out.stderr.contains("futex tracepoints"),
            "the warning names the tracepoints:\n{}",
            out.describe()
        );
        let report = report_json(&rec);
        match check(&report, &out.stdout) {
            Ok(()) => {
                threads_are_named(&rec, &exe, &report);
                return;
            }
            Err(e) => last = e,
        }
    }
    panic!("three disturbed runs: {last}");
}

/// No collector runs in a static program, so its threads' names come from
/// the kernel's comm records the launcher keeps (`probes/`): the Chrome
/// export names the holder thread `fx-holder` (it named itself) and the
/// main thread after the program (its name at `exec`), and so do the
/// futex section's thread rows.
fn threads_are_named(rec: &Path, exe: &Path, report: &Value) {
    let rows: Vec<&str> = report["futex"]["by_thread"]
        .as_array()
        .expect("futex.by_thread")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(
        rows.contains(&"fx-holder"),
        "futex.by_thread names: {rows:?}"
    );
    let chrome = rec.with_extension("json");
    let out = run_timeout(
        {
            let mut c = Command::new(contend_bin());
            c.arg("export")
                .arg(rec)
                .args(["--format", "chrome", "--force", "-o"])
                .arg(&chrome);
            c
        },
        std::time::Duration::from_secs(120),
    );
    assert!(out.success(), "export chrome: {}", out.describe());
    let c: Value = serde_json::from_slice(&std::fs::read(&chrome).unwrap()).unwrap();
    let events = c["traceEvents"].as_array().or(c.as_array()).unwrap();
    let names: Vec<&str> = events
        .iter()
        .filter(|e| e["ph"] == "M" && e["name"] == "thread_name")
        .filter_map(|e| e["args"]["name"].as_str())
        .collect();
    let program = exe.file_name().unwrap().to_str().unwrap();
    let program = &program[..program.len().min(15)];
    // (a thread without a recorded name would be `<program> <tid>`)
    assert!(
        names.contains(&"fx-holder"),
        "no thread named fx-holder: {names:?}"
    );
    assert!(
        names.contains(&program),
        "no thread named {program}: {names:?}"
    );
}

#[test]
fn record_p_traces_a_running_program_s_futex_waits() {
    let Some(exe) = static_program() else { return };
    let _serial = serial();
    let mut last = String::new();
    for _ in 0..3 {
        let dir = tempdir();
        let go = dir.path().join("go");
        let rec = dir.path().join("rec");
        let mut cmd = Command::new(&exe);
        cmd.args([ROUNDS, HOLD_US, go.to_str().unwrap()]);
        let target = Running::spawn(cmd);
        let pid = target.pid();
        let mut c = Command::new(contend_bin());
        c.args(["record", "-o"])
            .arg(&rec)
            .args(["-p", &pid.to_string(), "--duration", "60"]);
        let mut contend = Running::spawn(c);
        // the tracer is ready once its calls file exists
        let deadline = Instant::now() + Duration::from_secs(20);
        while !rec.join("futex/calls.cftx").exists() {
            assert!(Instant::now() < deadline, "the tracer never started");
            if let Some(o) = contend.wait_for(Duration::from_millis(10)) {
                panic!("contend ended early:\n{}", o.describe());
            }
        }
        std::fs::write(&go, b"").unwrap();
        let program = target.wait_or_kill(Duration::from_secs(30), "the futex program");
        assert!(program.success(), "{}", program.describe());
        let out = contend.wait_or_kill(Duration::from_secs(30), "contend record -p");
        assert!(out.success(), "{}", out.describe());
        assert!(
            out.stderr.contains("futex calls traced"),
            "{}",
            out.describe()
        );
        let report = report_json(&rec);
        match check(&report, &program.stdout) {
            Ok(()) => return,
            Err(e) => last = e,
        }
    }
    panic!("three disturbed runs: {last}");
}

#[test]
fn an_unprivileged_user_is_told_what_to_change() {
    let Some(exe) = static_program() else { return };
    if !have("setpriv") {
        eprintln!("SKIP: setpriv is not installed");
        return;
    }
    let dir = tempfile::Builder::new().tempdir_in("/tmp").unwrap();
    // a copy the unprivileged user may run, in a directory it may write
    let prog = dir.path().join("futex_static");
    std::fs::copy(&exe, &prog).unwrap();
    let mut perms = std::fs::metadata(dir.path()).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o777);
    std::fs::set_permissions(dir.path(), perms).unwrap();
    let mut c = Command::new("setpriv");
    c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(contend_bin())
        .args(["record", "-o"])
        .arg(dir.path().join("rec"))
        .arg("--")
        .arg(&prog)
        .args(["2", "1000"]);
    let out = run_timeout(c, Duration::from_secs(30));
    if out.stderr.contains("Permission denied") && !out.stderr.contains("not allowed") {
        eprintln!(
            "SKIP: uid 65534 cannot run contend here:\n{}",
            out.describe()
        );
        return;
    }
    assert!(!out.success(), "refused: {}", out.describe());
    for needle in [
        "not allowed to use the futex tracepoints",
        "uid 65534",
        "kernel.perf_event_paranoid",
        "Run contend as root",
    ] {
        assert!(
            out.stderr.contains(needle),
            "{needle:?} missing:\n{}",
            out.describe()
        );
    }
    assert!(!dir.path().join("rec").exists(), "nothing was created");
}

/// futex_waitv(2) through its own tracepoints (`sys_enter_futex_waitv` /
/// `sys_exit_futex_waitv`), with `--futex-trace on` on
/// tests/programs/futex_waitv2.c: a thread waits on two words 20 times,
/// each wait woken on the second word by the other thread (return value
/// 1), then once with a 5 ms timeout nobody ends (and first once with a
/// timeout already past). The waiter array
/// `g_waiters` is the wait's word (as in the collector's records): its
/// waits are exact (20 woken + 1 timed out), the wakes on `g_word_b` are
/// exact, and the wait time lies inside the program's own clock and
/// within 2 % + 1 µs per wait of it (a disturbed run is made again, up to
/// three times). SKIP where the kernel lacks futex_waitv or its
/// tracepoints.
#[test]
fn futex_waitv_on_two_words_comes_from_its_tracepoints() {
    if !have("gcc") || !is_root() || !tracefs() {
        eprintln!("SKIP futex_waitv tracepoints: needs gcc, root and tracefs");
        return;
    }
    if !Path::new("/sys/kernel/tracing/events/syscalls/sys_enter_futex_waitv").is_dir() {
        eprintln!("SKIP futex_waitv tracepoints: this kernel has no sys_enter_futex_waitv");
        return;
    }
    let exe = build("futex_waitv2.c", &["-O1"]);
    let _serial = serial();
    let mut last = String::new();
    for _ in 0..3 {
        let dir = tempdir();
        let rec = dir.path().join("rec");
        let mut cmd = Command::new(contend_bin());
        cmd.args(["record", "--futex-trace", "on", "-o"])
            .arg(&rec)
            .arg("--")
            .arg(&exe)
            .arg("20");
        let out = run_timeout(cmd, RUN_TIMEOUT);
        assert!(out.success(), "{}", out.describe());
        let line = out
            .stdout
            .lines()
            .find(|l| l.starts_with("waitv="))
            .unwrap_or_else(|| panic!("no result line:\n{}", out.describe()));
        let p: std::collections::HashMap<&str, i64> = line
            .split_whitespace()
            .filter_map(|kv| kv.split_once('='))
            .map(|(k, v)| (k, v.parse().expect("integer")))
            .collect();
        if p["waitv"] == 0 {
            eprintln!("SKIP futex_waitv tracepoints: the kernel has no futex_waitv (ENOSYS)");
            return;
        }
        let report = report_json(&rec);
        let by_word = report["futex"]["by_word"]
            .as_array()
            .unwrap_or_else(|| panic!("no futex section: {}", report["warnings"]));
        // a global word is named by its symbol (the array: by its first
        // member, `g_waiters[0].val`)
        let named = |name: &str| {
            by_word
                .iter()
                .find(|w| w["name"].as_str().is_some_and(|n| n.starts_with(name)))
                .unwrap_or_else(|| panic!("no futex word {name}: {}", report["futex"]))
        };
        let w = named("g_waiters");
        let woken = p["woken"] as u64;
        assert_eq!(u(w, "woken"), woken, "{w}");
        // and the program's first call, a probe whose timeout has passed
        let timed_out = p["timedout"] as u64 + 1;
        assert_eq!(u(w, "timed_out"), timed_out, "{w}");
        assert_eq!(u(w, "events"), woken + timed_out, "{w}");
        let b = named("g_word_b");
        assert_eq!(u(b, "wakes"), p["wakes"] as u64, "{b}");
        assert_eq!(u(b, "waiters_woken"), p["woke"] as u64, "{b}");
        assert_eq!(
            report["futex"]["sources"][0]["source"], "tracepoints",
            "{}",
            report["futex"]["sources"]
        );
        let waits = u(w, "events");
        let truth = p["wait_ns"] as f64;
        let got = u(w, "wait_ns") as f64;
        assert!(
            got <= truth + 1000.0,
            "contend's wait {got} ns exceeds the program's own {truth} ns"
        );
        let tolerance = 0.02 * truth + 1000.0 * waits as f64;
        if truth - got <= tolerance {
            return;
        }
        last =
            format!("contend's wait {got} ns vs the program's {truth} ns (tolerance {tolerance})");
    }
    panic!("three disturbed runs: {last}");
}
