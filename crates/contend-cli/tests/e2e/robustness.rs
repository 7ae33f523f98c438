//! End-to-end robustness: the test programs in tests/programs/ run alone and
//! under `contend record`; recording must not change what they print or how
//! they exit, and `contend report` must cope with whatever the recording
//! holds (forks, execs, crashes, kills, damaged traces). It may refuse a
//! damaged recording with exit status 2 and a message naming the file, but
//! never panic (exit status 101).

use std::io::{BufRead, BufReader, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::mpsc;
use std::time::Duration;

use crate::common::*;
use serde_json::Value;

/// Runs `exe args` alone and recorded into `<tmp>/rec`; asserts identical
/// stdout and exit status; returns the recording directory, the recorded
/// run's output and the report.
fn same_with_and_without(tmp: &Path, exe: &Path, args: &[&str]) -> (PathBuf, Output, Value) {
    same_within(tmp, exe, args, RUN_TIMEOUT)
}

/// [`same_with_and_without`] with a time limit for the recorded run.
fn same_within(
    tmp: &Path,
    exe: &Path,
    args: &[&str],
    timeout: Duration,
) -> (PathBuf, Output, Value) {
    let plain = run_plain(exe, args);
    let dir = tmp.join("rec");
    let rec = record_timeout(&dir, exe, args, timeout);
    let name = exe.file_name().unwrap().to_string_lossy();
    assert_eq!(
        rec.stdout,
        plain.stdout,
        "{name}: standard output differs under `contend record`.\nalone:\n{}\nrecorded:\n{}",
        plain.describe(),
        rec.describe()
    );
    assert_eq!(
        rec.shell_status(),
        plain.shell_status(),
        "{name}: exit status differs under `contend record`.\nalone:\n{}\nrecorded:\n{}",
        plain.describe(),
        rec.describe()
    );
    assert!(
        !rec.stderr.contains("panicked"),
        "contend record panicked:\n{}",
        rec.describe()
    );
    let report = report_json(&dir);
    (dir, rec, report)
}

/// Sum of `events` over every by_lock row named `name` (one per process).
fn lock_events(report: &Value, name: &str) -> u64 {
    report["locks"]["by_lock"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| l["name"] == name)
        .map(|l| u(l, "events"))
        .sum()
}

fn assert_lock_events(report: &Value, name: &str, expected: u64) {
    assert_eq!(
        lock_events(report, name),
        expected,
        "events on {name}; by_lock = {}",
        serde_json::to_string_pretty(&report["locks"]["by_lock"]).unwrap()
    );
}

#[test]
fn threads256_complete() {
    require_tool!("gcc");
    let _serial = serial();
    let exe = build("threads256.c", &[]);
    let tmp = tempdir();
    let (_, rec, report) = same_with_and_without(tmp.path(), &exe, &[]);
    assert!(
        rec.stdout.contains("threads=256 counter=25600"),
        "{}",
        rec.describe()
    );
    assert_eq!(rec.code(), Some(0));
    assert_lock_events(&report, "counter_lock", 256 * 100);
    assert!(
        u(&report, "run.threads") >= 256,
        "run.threads = {}",
        report["run"]["threads"]
    );
    let threads_with_events = report["locks"]["by_thread"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| u(t, "events") == 100)
        .count();
    assert_eq!(
        threads_with_events, 256,
        "every worker thread did 100 acquisitions"
    );
}

#[test]
fn fork_child_is_traced() {
    require_tool!("gcc");
    let exe = build("fork.c", &[]);
    let tmp = tempdir();
    let (dir, _, report) = same_with_and_without(tmp.path(), &exe, &[]);
    let traces = trace_files(&dir);
    assert!(
        traces.len() >= 2,
        "a fork child writes its own trace; found {traces:?}"
    );
    assert!(u(&report, "run.processes") >= 2, "run = {}", report["run"]);
    assert_lock_events(&report, "parent_lock", 500);
    assert_lock_events(&report, "helper_lock", 500);
    // Only the child takes child_lock: its trace has events.
    assert_lock_events(&report, "child_lock", 1000);
    let pid_of = |name: &str| u(lock_row(&report, name), "pid");
    assert_ne!(
        pid_of("child_lock"),
        pid_of("parent_lock"),
        "child_lock belongs to the child process"
    );
}

#[test]
fn fork_and_exec_are_traced() {
    require_tool!("gcc");
    let exe = build("forkexec.c", &[]);
    let tmp = tempdir();
    let (dir, _, report) = same_with_and_without(tmp.path(), &exe, &[]);
    let traces = trace_files(&dir);
    // start process, its exec'd "final" image (same pid: <pid>.1.ctrace),
    // the exec'd child — at least three traces.
    assert!(traces.len() >= 3, "traces: {traces:?}");
    let exec_traces: Vec<_> = traces
        .iter()
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .matches('.')
                .count()
                == 2
        })
        .collect();
    assert!(
        !exec_traces.is_empty(),
        "an exec in the same pid writes <pid>.<n>.ctrace; traces: {traces:?}"
    );
    // start 100 + child 2 × 100 + final 100, over all processes.
    assert_lock_events(&report, "exec_lock", 400);
    // An image replaced by exec ended normally: no "did not finish" warning.
    let w = warnings(&report);
    assert!(!w.contains("did not finish normally"), "{w}");
}

/// Regression: `bash -c 'exec ./app'` (and launchers such as pyenv shims)
/// gave a false "did not finish normally (killed, crashed or _exit())"
/// warning for the shell's image, which exec replaced.
#[test]
fn exec_through_a_shell_is_a_normal_end() {
    require_tool!("gcc");
    let exe = build("nolocks.c", &[]);
    let tmp = tempdir();
    let dir = tmp.path().join("exec.data");
    let out = record(
        &dir,
        Path::new("/bin/bash"),
        &["-c", &format!("exec {}", exe.display())],
    );
    assert!(out.success(), "{}", out.describe());
    let traces = trace_files(&dir);
    assert!(traces.len() >= 2, "the shell and the program: {traces:?}");
    let report = report_json(&dir);
    let w = warnings(&report);
    assert!(!w.contains("did not finish normally"), "{w}");
}

#[test]
fn constructor_locks() {
    require_tool!("gcc");
    let exe = build("ctor_lock.c", &[]);
    let tmp = tempdir();
    let (_, _, report) = same_with_and_without(tmp.path(), &exe, &[]);
    // The collector is preloaded, so it is initialised before the
    // executable's constructors: 10 locks + 1 trylock there, 200 in main.
    assert_lock_events(&report, "ctor_lock", 211);
}

#[test]
fn constructor_locks_in_a_shared_library() {
    require_tool!("gcc");
    let tmp = tempdir();
    build_shared_into("ctor_lock.c", tmp.path(), "libctorlock.so", &["-DCTOR_LIB"]);
    let exe = build_into(
        "ctor_lock.c",
        tmp.path(),
        "ctor_lock_lib",
        &["-DCTOR_WITH_LIB", "-L.", "-lctorlock", "-Wl,-rpath,$ORIGIN"],
    );
    let (_, rec, report) = same_with_and_without(tmp.path(), &exe, &[]);
    assert!(
        rec.stdout.contains("lib ctor: count=10"),
        "{}",
        rec.describe()
    );
    assert_lock_events(&report, "ctor_lock", 211);
    // The library's constructor may run before the collector is ready;
    // those 10 + 1 operations may pass unrecorded, the one from main may not.
    let lib = lock_events(&report, "lib_lock");
    assert!(
        (1..=11).contains(&lib),
        "lib_lock events {lib}, expected 1 (from main) to 11 (also the constructor's)"
    );
    eprintln!("lib_lock events recorded: {lib} of 11");
}

#[test]
fn errorcheck_and_recursive_return_codes() {
    require_tool!("gcc");
    let exe = build("errorcheck.c", &[]);
    let tmp = tempdir();
    let (_, rec, report) = same_with_and_without(tmp.path(), &exe, &[]);
    assert!(
        rec.stdout
            .contains("ec relock                    rc=EDEADLK"),
        "{}",
        rec.stdout
    );
    assert!(
        rec.stdout.contains("ec unlock by non-owner       rc=EPERM"),
        "{}",
        rec.stdout
    );
    assert!(
        !rec.stdout.contains("errno_intact=0"),
        "errno changed:\n{}",
        rec.stdout
    );
    // EDEADLK ×3 and EBUSY ×4 are attempts that did not acquire.
    assert!(
        u(&report, "locks.summary.failed_events") >= 7,
        "summary = {}",
        report["locks"]["summary"]
    );
}

#[test]
fn robust_mutex_owner_dead() {
    require_tool!("gcc");
    let exe = build("robust.c", &[]);
    let tmp = tempdir();
    let (_, rec, _) = same_with_and_without(tmp.path(), &exe, &[]);
    assert!(
        rec.stdout.contains("lock after owner died rc=EOWNERDEAD"),
        "{}",
        rec.stdout
    );
    assert!(
        rec.stdout.contains("blocked waiter lock   rc=EOWNERDEAD"),
        "{}",
        rec.stdout
    );
}

#[test]
fn robust_mutex_not_recoverable() {
    require_tool!("gcc");
    let exe = build("robust.c", &[]);
    let tmp = tempdir();
    // Alone it takes milliseconds; a hang means a wrapper blocked.
    let (_, rec, _) = same_within(
        tmp.path(),
        &exe,
        &["unrecoverable"],
        Duration::from_secs(15),
    );
    assert_eq!(
        rec.stdout.matches("rc=ENOTRECOVERABLE").count(),
        3,
        "{}",
        rec.stdout
    );
}

#[test]
fn timed_waits_time_out() {
    require_tool!("gcc");
    let exe = build("timedlock.c", &[]);
    let tmp = tempdir();
    let (_, rec, report) = same_with_and_without(tmp.path(), &exe, &[]);
    assert_eq!(
        rec.stdout.matches("ETIMEDOUT").count(),
        6,
        "six timed waits time out:\n{}",
        rec.stdout
    );
    assert!(!rec.stdout.contains("waited_50ms=0"), "{}", rec.stdout);
    // 4 lock timeouts + 1 failed trylock (+ the EBUSY trylock at the end).
    assert!(
        u(&report, "locks.summary.failed_events") >= 5,
        "summary = {}",
        report["locks"]["summary"]
    );
    let other = report["locks"]["other_waits"].as_array().unwrap();
    for kind in ["cond", "semaphore"] {
        let row = other
            .iter()
            .find(|r| r["kind"] == kind)
            .unwrap_or_else(|| panic!("no {kind} row in other_waits: {other:?}"));
        assert!(u(row, "timeouts") >= 1, "{kind} timeout not counted: {row}");
        assert!(
            u(row, "wait_ns") >= 40_000_000,
            "{kind}: the timed-out wait lasted 50 ms: {row}"
        );
    }
}

#[test]
fn exit_while_others_hold_and_wait() {
    require_tool!("gcc");
    let exe = build("exit_holding.c", &[]);
    let tmp = tempdir();
    let (_, rec, report) = same_with_and_without(tmp.path(), &exe, &[]);
    assert_eq!(rec.code(), Some(0));
    assert!(
        lock_events(&report, "held_lock") >= 1,
        "the held lock's acquisition is recorded: {}",
        report["locks"]["by_lock"]
    );
    assert!(
        u(&report, "locks.summary.unreleased_events") >= 1,
        "held_lock was never released: {}",
        report["locks"]["summary"]
    );
}

#[test]
fn crash_by_segfault() {
    require_tool!("gcc");
    let exe = build("crash.c", &[]);
    let tmp = tempdir();
    let (_, rec, report) = same_with_and_without(tmp.path(), &exe, &["segv"]);
    assert_eq!(
        rec.shell_status(),
        128 + 11,
        "contend exits 128+SIGSEGV:\n{}",
        rec.describe()
    );
    assert_eq!(report["run"]["signal"], 11, "run = {}", report["run"]);
    assert!(
        lock_events(&report, "crash_lock") >= 200,
        "{}",
        report["locks"]["by_lock"]
    );
    let w = warnings(&report);
    assert!(
        w.contains("did not finish"),
        "the report warns that the process did not finish: {w}"
    );
}

/// Starts `contend record -- crash spin`, waits for the target's `pid=N`
/// line, and returns the running launcher and the target's pid.
fn start_spinning_target(dir: &Path, exe: &Path) -> (Running, u32) {
    let mut running = Running::spawn_streaming(record_command(dir, exe, &["spin"]));
    let stdout = running.child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let line = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("the target printed pid=N within 30 s");
    let pid: u32 = line
        .strip_prefix("pid=")
        .and_then(|p| p.trim().parse().ok())
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"));
    assert_eq!(
        parent_pid(pid),
        Some(running.pid()),
        "the target is a child of the launcher"
    );
    // Let it record some lock operations.
    std::thread::sleep(Duration::from_millis(300));
    (running, pid)
}

#[test]
fn sigkill_of_the_target() {
    require_tool!("gcc");
    let exe = build("crash.c", &[]);
    let tmp = tempdir();
    let dir = tmp.path().join("rec");
    let (mut running, pid) = start_spinning_target(&dir, &exe);
    assert!(kill(pid, 9), "kill -9 {pid}");
    let out = running
        .wait_for(Duration::from_secs(30))
        .expect("contend record ends within 30 s after its target was killed");
    assert_eq!(out.shell_status(), 128 + 9, "{}", out.describe());
    let report = report_json(&dir);
    assert_eq!(report["run"]["signal"], 9, "run = {}", report["run"]);
    assert!(
        lock_events(&report, "crash_lock") > 0,
        "{}",
        report["locks"]["by_lock"]
    );
    let w = warnings(&report);
    assert!(w.contains("did not finish"), "warnings: {w}");
}

#[test]
fn sigterm_to_the_launcher_is_forwarded() {
    require_tool!("gcc");
    let exe = build("crash.c", &[]);
    let tmp = tempdir();
    let dir = tmp.path().join("rec");
    let (mut running, pid) = start_spinning_target(&dir, &exe);
    assert!(kill(running.pid(), 15), "kill -TERM launcher");
    let out = running
        .wait_for(Duration::from_secs(30))
        .expect("contend record ends within 30 s after SIGTERM");
    assert_eq!(
        out.shell_status(),
        128 + 15,
        "the target got SIGTERM and the launcher reports it:\n{}",
        out.describe()
    );
    assert!(
        std::fs::metadata(format!("/proc/{pid}")).is_err() || comm(pid).is_none(),
        "the target {pid} is gone"
    );
    let report = report_json(&dir);
    assert_eq!(report["run"]["signal"], 15, "run = {}", report["run"]);
    assert!(lock_events(&report, "crash_lock") > 0);
}

/// Records fork.c (two processes) into `<tmp>/<label>` and damages it with
/// `damage`, which returns the damaged file.
fn damaged_copy(
    tmp: &Path,
    label: &str,
    damage: impl FnOnce(&Path) -> PathBuf,
) -> (PathBuf, PathBuf) {
    let exe = build("fork.c", &[]);
    let dir = tmp.join(label);
    let out = record(&dir, &exe, &[] as &[&str]);
    assert!(out.success(), "{}", out.describe());
    let damaged = damage(&dir);
    (dir, damaged)
}

/// The lexically first trace of a recording (usually the parent's).
fn first_trace(dir: &Path) -> PathBuf {
    trace_files(dir).into_iter().next().expect("a trace file")
}

/// `contend report` on a damaged recording: exit 0 (then a warning names the
/// file) or 2 (then the error names it), never a panic.
fn report_copes(dir: &Path, damaged: &Path) -> Option<Value> {
    let file_name = damaged.file_name().unwrap().to_string_lossy().to_string();
    for format in ["text", "json"] {
        let out = report_raw(dir, &["--format", format]);
        assert_ne!(
            out.code(),
            Some(101),
            "contend report panicked:\n{}",
            out.describe()
        );
        assert!(!out.stderr.contains("panicked"), "{}", out.describe());
        assert!(
            out.signal().is_none(),
            "contend report died by a signal:\n{}",
            out.describe()
        );
        match out.code() {
            Some(0) => {
                assert!(
                    out.stdout.contains(&file_name) || out.stderr.contains(&file_name),
                    "a warning names {file_name}:\n{}",
                    out.describe()
                );
                if format == "json" {
                    return Some(serde_json::from_str(&out.stdout).expect("valid JSON"));
                }
            }
            Some(2) => {
                assert!(
                    out.stderr.contains(&file_name),
                    "the error names {file_name}:\n{}",
                    out.describe()
                );
                return None;
            }
            other => panic!("unexpected exit status {other:?}:\n{}", out.describe()),
        }
    }
    None
}

#[test]
fn truncated_trace_in_the_header() {
    require_tool!("gcc");
    let tmp = tempdir();
    let (dir, damaged) = damaged_copy(tmp.path(), "rec", |dir| {
        let t = first_trace(dir);
        std::fs::OpenOptions::new()
            .write(true)
            .open(&t)
            .unwrap()
            .set_len(100)
            .unwrap();
        t
    });
    if let Some(report) = report_copes(&dir, &damaged) {
        assert!(
            u(&report, "locks.summary.events") > 0,
            "the other process is still analysed"
        );
    }
}

#[test]
fn truncated_trace_in_the_data() {
    require_tool!("gcc");
    let tmp = tempdir();
    let (dir, damaged) = damaged_copy(tmp.path(), "rec", |dir| {
        let t = first_trace(dir);
        let f = std::fs::OpenOptions::new().write(true).open(&t).unwrap();
        let len = f.metadata().unwrap().len();
        // Header 4096 + two index tables of 512 KiB: cut inside the chunks.
        let data = 4096 + 2 * 512 * 1024;
        assert!(len > data + 200, "{} is {len} bytes", t.display());
        f.set_len(data + 200).unwrap();
        t
    });
    let report = report_copes(&dir, &damaged);
    if let Some(r) = report {
        assert!(u(&r, "locks.summary.events") > 0);
    }
}

#[test]
fn trace_with_bad_magic() {
    require_tool!("gcc");
    let tmp = tempdir();
    let (dir, damaged) = damaged_copy(tmp.path(), "rec", |dir| {
        let t = first_trace(dir);
        let mut f = std::fs::OpenOptions::new().write(true).open(&t).unwrap();
        f.seek(SeekFrom::Start(0)).unwrap();
        f.write_all(b"XXXXXXXX").unwrap();
        t
    });
    if let Some(report) = report_copes(&dir, &damaged) {
        assert!(
            u(&report, "locks.summary.events") > 0,
            "the other process is still analysed"
        );
    }
}

#[test]
fn empty_trace_file() {
    require_tool!("gcc");
    let tmp = tempdir();
    let (dir, damaged) = damaged_copy(tmp.path(), "rec", |dir| {
        let t = first_trace(dir);
        std::fs::OpenOptions::new()
            .write(true)
            .open(&t)
            .unwrap()
            .set_len(0)
            .unwrap();
        t
    });
    report_copes(&dir, &damaged);
}

#[test]
fn garbage_in_chunks() {
    require_tool!("gcc");
    let tmp = tempdir();
    let (dir, damaged) = damaged_copy(tmp.path(), "rec", |dir| {
        let t = first_trace(dir);
        let mut f = std::fs::OpenOptions::new().write(true).open(&t).unwrap();
        // Overwrite the first records of chunk 0 (after its 64-byte header)
        // with a pattern that decodes to nonsense tags and indices.
        f.seek(SeekFrom::Start(4096 + 2 * 512 * 1024 + 64)).unwrap();
        let junk: Vec<u8> = (0..512u32)
            .flat_map(|i| (i.wrapping_mul(0x9e37_79b9) | 0x7f).to_le_bytes())
            .collect();
        f.write_all(&junk).unwrap();
        t
    });
    // Garbage records need not be detected as such (they may decode), but
    // the report must not panic.
    let out = report_raw(&dir, &["--format", "json"]);
    assert!(
        matches!(out.code(), Some(0) | Some(2)) && !out.stderr.contains("panicked"),
        "report on {}:\n{}",
        damaged.display(),
        out.describe()
    );
}

#[test]
fn damaged_meta_and_maps() {
    require_tool!("gcc");
    let tmp = tempdir();
    let (dir, _) = damaged_copy(tmp.path(), "rec", |dir| {
        std::fs::write(dir.join("meta.json"), b"{ this is not json").unwrap();
        for e in std::fs::read_dir(dir.join("maps")).unwrap().flatten() {
            std::fs::write(e.path(), b"garbage\nnot a maps line\n").unwrap();
        }
        dir.join("meta.json")
    });
    let out = report_raw(&dir, &["--format", "json"]);
    assert_ne!(
        out.code(),
        Some(101),
        "contend report panicked:\n{}",
        out.describe()
    );
    assert!(
        matches!(out.code(), Some(0) | Some(2)),
        "{}",
        out.describe()
    );
    if out.code() == Some(0) {
        let report: Value = serde_json::from_str(&out.stdout).unwrap();
        assert!(
            warnings(&report).contains("meta.json"),
            "a warning names meta.json: {}",
            report["warnings"]
        );
        assert!(
            u(&report, "locks.summary.events") > 0,
            "the traces are still read"
        );
    } else {
        assert!(out.stderr.contains("meta.json"), "{}", out.describe());
    }
}

#[test]
fn missing_recording_directory() {
    let tmp = tempdir();
    let missing = tmp.path().join("no-such.data");
    let out = report_raw(&missing, &[] as &[&str]);
    assert_eq!(out.code(), Some(2), "{}", out.describe());
    assert!(
        out.stderr.contains("no-such.data"),
        "the message names the directory:\n{}",
        out.describe()
    );
    let out = report_raw(tmp.path(), &[] as &[&str]);
    assert_eq!(
        out.code(),
        Some(2),
        "a directory that is not a recording:\n{}",
        out.describe()
    );
}

#[test]
fn no_locks_at_all() {
    require_tool!("gcc");
    let exe = build("nolocks.c", &[]);
    let tmp = tempdir();
    let (dir, _, report) = same_with_and_without(tmp.path(), &exe, &[]);
    assert_eq!(u(&report, "locks.summary.events"), 0);
    assert!(
        report["locks"]["no_events_reason"].is_string(),
        "no_events_reason is set: {}",
        report["locks"]
    );
    let text = report_raw(&dir, &[] as &[&str]);
    assert!(text.success(), "{}", text.describe());
}

#[test]
fn static_binary_cannot_be_traced() {
    require_tool!("gcc");
    let tmp = tempdir();
    // Build by hand: a static link may be impossible (no libc.a).
    let exe = tmp.path().join("threads_static");
    let out = run_timeout(
        {
            let mut c = Command::new("gcc");
            c.args(["-std=c11", "-O1", "-g", "-pthread", "-static", "-o"])
                .arg(&exe)
                .arg(program_source("threads256.c"));
            c
        },
        Duration::from_secs(120),
    );
    if !out.success() {
        eprintln!(
            "SKIP static_binary_cannot_be_traced: cannot link statically:\n{}",
            out.stderr
        );
        return;
    }
    // Refused before it runs, saying why and how to run it anyway, when
    // its futex waits are not to be traced through the tracepoints
    // instead (futex_tracepoints.rs tests the default).
    let refused = tmp.path().join("refused.data");
    let mut cmd = Command::new(contend_bin());
    cmd.args(["record", "--futex-trace", "off", "-o"])
        .arg(&refused)
        .arg("--")
        .arg(&exe)
        .arg("8");
    let out = run_timeout(cmd, RUN_TIMEOUT);
    assert_eq!(out.code(), Some(2), "{}", out.describe());
    assert!(
        out.stderr.contains("statically linked") && out.stderr.contains("--yes"),
        "{}",
        out.describe()
    );
    assert!(out.stdout.is_empty(), "the program ran: {}", out.describe());
    assert!(!refused.exists());
    // With --yes it runs, unchanged, and the warning stays.
    let dir = tmp.path().join("rec");
    let mut cmd = Command::new(contend_bin());
    cmd.args(["record", "--yes", "-o"])
        .arg(&dir)
        .arg("--")
        .arg(&exe)
        .arg("8");
    let rec = run_timeout(cmd, RUN_TIMEOUT);
    assert!(rec.success(), "{}", rec.describe());
    assert_eq!(rec.stdout, run_plain(&exe, &["8"]).stdout);
    assert!(
        rec.stderr.contains("warning") && rec.stderr.contains("statically linked"),
        "contend record warns that a static program cannot be traced:\n{}",
        rec.describe()
    );
    let report = report_json(&dir);
    assert_eq!(u(&report, "locks.summary.events"), 0);
    assert!(
        report["locks"]["no_events_reason"].is_string(),
        "{}",
        report["locks"]
    );
}

#[test]
fn condvar_barrier_semaphore() {
    require_tool!("gcc");
    let exe = build("condvar_barrier_sem.c", &[]);
    let tmp = tempdir();
    let (dir, _, report) = same_with_and_without(tmp.path(), &exe, &[]);
    let other = report["locks"]["other_waits"].as_array().unwrap();
    for kind in ["cond", "barrier", "semaphore"] {
        let row = other
            .iter()
            .find(|r| r["kind"] == kind)
            .unwrap_or_else(|| panic!("no {kind} row in other_waits: {other:?}"));
        assert!(u(row, "events") > 0, "{row}");
    }
    let barrier = other.iter().find(|r| r["kind"] == "barrier").unwrap();
    assert_eq!(
        u(barrier, "events"),
        4 * 20,
        "4 threads × 20 barrier waits: {barrier}"
    );
    assert!(
        lock_events(&report, "buf_lock") >= 2000,
        "{}",
        report["locks"]["by_lock"]
    );
    assert_lock_events(&report, "sum_lock", 80);
    // Every output format renders this recording.
    for format in ["text", "markdown", "latex", "csv", "json"] {
        let out = report_raw(&dir, &["--format", format]);
        assert!(
            out.success() && !out.stdout.is_empty(),
            "--format {format}:\n{}",
            out.describe()
        );
    }
}

#[test]
fn the_critical_path_goes_through_pthread_join_to_the_joined_threads() {
    // join_after_work.c: 3 workers contend on work_lock, worker 2 ends
    // last (30 ms after its work); main joins them all, then takes
    // late_lock. Before joins were recorded the path started at main's
    // late_lock and never reached the workers (0 ns of the lock wait on
    // it); now it follows main's join of worker 2 to that worker's end.
    // The wrappers keep every return value (the program prints them:
    // ETIMEDOUT from a timed join, EDEADLK from joining itself).
    require_tool!("gcc");
    let exe = build("join_after_work.c", &[]);
    let tmp = tempdir();
    let (first, rec, report) = same_with_and_without(tmp.path(), &exe, &[]);
    assert!(
        rec.stdout
            .contains("timed=ETIMEDOUT self=EDEADLK failed=0 sum=6"),
        "{}",
        rec.describe()
    );
    let locks = &report["locks"];
    let joins = locks["other_waits"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["kind"] == "join")
        .unwrap_or_else(|| panic!("no join row in other_waits: {}", locks["other_waits"]));
    // timed join (timed out), join of itself (error), 3 joins
    assert_eq!(u(joins, "events"), 5, "{joins}");
    assert_eq!(u(joins, "timeouts"), 1, "{joins}");
    assert!(u(joins, "critical_wait_ns") > 0, "{joins}");
    let work = locks["by_lock"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "work_lock")
        .unwrap_or_else(|| panic!("no work_lock: {}", locks["by_lock"]));
    assert_eq!(u(work, "events"), 120, "{work}");
    assert!(
        u(work, "critical_events") > 0,
        "the path does not reach the workers: {}",
        locks["critical_path"]
    );
    // the joined threads are named by their thread ids
    let named: Vec<&str> = locks["by_lock"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["kind"] == "join")
        .filter_map(|r| r["name"].as_str())
        .filter(|n| {
            n.strip_prefix("thread ")
                .is_some_and(|t| t.starts_with(|c: char| c.is_ascii_digit()))
        })
        .collect();
    // the join of itself names no recorded end: `thread joined at …`
    assert_eq!(named.len(), 3, "{}", locks["by_lock"]);
    // Compared with a second run: the joined threads' ids differ, so no
    // list keyed by them (per lock, SCI per block) has a join row, which
    // would stand blank in one run; the joins are compared in Other waits.
    let second = tmp.path().join("second");
    assert!(record(&second, &exe, &[] as &[&str]).success());
    let cmp = compare_json(&[&first, &second], RUN_TIMEOUT);
    for list in ["by_lock", "sci_by_block"] {
        let items = cmp[list]
            .as_array()
            .unwrap_or_else(|| panic!("no {list}: {cmp}"));
        assert!(!items.is_empty(), "{list}");
        assert!(
            items.iter().all(|i| i["kind"] != "join"),
            "{list} has join rows: {items:#?}"
        );
    }
    let metrics = cmp["metrics"].as_array().expect("metrics");
    assert!(
        metrics.iter().any(|m| m["key"]
            .as_str()
            .is_some_and(|k| k.contains("other_waits.join"))),
        "the joins compared in Other waits: {cmp}"
    );
}

/// Records stdmutex.cpp (built -O1 -g) and returns the report.
fn record_stdmutex(tmp: &Path) -> Value {
    let exe = build("stdmutex.cpp", &[]);
    let (_, _, report) = same_with_and_without(tmp, &exe, &[]);
    report
}

#[test]
fn cpp_std_mutex() {
    require_tool!("g++");
    let _serial = serial();
    let tmp = tempdir();
    let report = record_stdmutex(tmp.path());
    let row = lock_row(&report, "contended_mutex");
    assert_eq!(row["kind"], "mutex", "{row}");
    assert_eq!(u(row, "events"), 600, "2 threads × 300 lock_guards: {row}");
    assert!(u(row, "contended_events") > 0, "{row}");
    assert!(u(row, "wait_ns") > 0, "{row}");
    assert_eq!(
        lock_row(&report, "table_mutex")["kind"],
        "rwlock",
        "std::shared_mutex is a pthread rwlock"
    );
    assert_eq!(
        lock_events(&report, "table_mutex"),
        600,
        "400 shared + 200 unique locks"
    );
    let cond = report["locks"]["other_waits"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["kind"] == "cond")
        .unwrap_or_else(|| panic!("no cond row: {}", report["locks"]["other_waits"]));
    assert!(u(cond, "events") > 0, "{cond}");
    // Every site of the contended lock is resolved with DWARF in the program.
    let sites = report["locks"]["by_site"].as_array().unwrap();
    assert!(
        sites.iter().any(|s| s["debug"] == "dwarf"
            && s["module"]
                .as_str()
                .is_some_and(|m| m.ends_with("/stdmutex"))
            && u(s, "events") >= 600),
        "a DWARF-resolved site in stdmutex with the lock_guard's events: {}",
        serde_json::to_string_pretty(&report["locks"]["by_site"]).unwrap()
    );
}

/// What a user looks for: the line of the `std::lock_guard`, not a line in
/// a libstdc++ header. At -O1 `std::lock_guard`, `std::mutex::lock` and
/// `__gthread_mutex_lock` are inlined into `contended_worker`, so the call
/// to `pthread_mutex_lock` has the inline chain gthr-default.h:749 →
/// std_mutex.h:103 → std_mutex.h:229 → stdmutex.cpp:<CONTENDED-LINE> in
/// DWARF; the site is the innermost frame outside the system headers.
#[test]
fn cpp_std_mutex_call_site_line() {
    require_tool!("g++");
    let _serial = serial();
    let tmp = tempdir();
    let report = record_stdmutex(tmp.path());
    let line = line_of("stdmutex.cpp", "// CONTENDED-LINE") as u64;
    let row = lock_row(&report, "contended_mutex");
    let lock_sites: Vec<&str> = row["sites"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s.as_str())
        .collect();
    eprintln!("contended_mutex sites: {lock_sites:?}");
    let sites = report["locks"]["by_site"].as_array().unwrap();
    let exact = sites.iter().find(|s| {
        s["file"]
            .as_str()
            .is_some_and(|f| f.ends_with("stdmutex.cpp"))
            && s["line"] == line
    });
    assert!(
        exact.is_some(),
        "by_site has stdmutex.cpp:{line} (the std::lock_guard line); sites of \
         contended_mutex: {lock_sites:?}; by_site: {}",
        serde_json::to_string_pretty(&report["locks"]["by_site"]).unwrap()
    );
    assert!(
        lock_sites
            .iter()
            .any(|s| s.contains(&format!("stdmutex.cpp:{line}"))),
        "the lock's sites name stdmutex.cpp:{line}: {lock_sites:?}"
    );
}

/// Without optimisation `std::lock_guard` calls an out-of-line
/// `__gthread_mutex_lock` in a libstdc++ header, so the return address of
/// every `std::mutex` lock is in that header. With `--stack-every 1` the
/// analysis follows the recorded stack to the first caller in the user's
/// code: the CONTENDED-LINE.
#[test]
fn cpp_std_mutex_at_o0_is_attributed_through_stacks() {
    require_tool!("g++");
    let _serial = serial();
    let tmp = tempdir();
    let exe = build("stdmutex.cpp", &["-O0"]);
    let dir = tmp.path().join("rec");
    let mut cmd = std::process::Command::new(contend_bin());
    cmd.arg("record")
        .arg("-o")
        .arg(&dir)
        .args(["--stack-every", "1", "--"])
        .arg(&exe);
    let out = run_timeout(cmd, RUN_TIMEOUT);
    assert!(out.success(), "{}", out.describe());
    let report = report_json(&dir);
    let line = line_of("stdmutex.cpp", "// CONTENDED-LINE") as u64;
    let sites = report["locks"]["by_site"].as_array().unwrap();
    assert!(
        sites.iter().any(|s| s["file"]
            .as_str()
            .is_some_and(|f| f.ends_with("stdmutex.cpp"))
            && s["line"] == line),
        "by_site has stdmutex.cpp:{line}: {}",
        serde_json::to_string_pretty(&report["locks"]["by_site"]).unwrap()
    );
    assert!(
        !sites.iter().any(|s| s["file"]
            .as_str()
            .is_some_and(|f| f.ends_with("gthr-default.h"))),
        "no site is left in gthr-default.h when every event has a stack"
    );
}

/// Ownership changes (mutrace's "changed" count) of locks whose hand-overs
/// are known (tests/programs/handover.c): strict alternation of two
/// threads 200 times each = 399, two threads one after the other = 1, one
/// thread = 0. Exact: every acquisition is recorded, and the semaphores
/// order them.
#[test]
fn ownership_changes_are_counted() {
    require_tool!("gcc");
    let exe = build("handover.c", &[]);
    let tmp = tempdir();
    let dir = tmp.path().join("r.data");
    let out = record(&dir, &exe, &[] as &[&str]);
    assert!(out.success(), "{}", out.describe());
    let report = report_json(&dir);
    for (lock, events, changes) in [
        ("ping_lock", 400, 399),
        ("solo_lock", 400, 1),
        ("own_lock", 200, 0),
    ] {
        let row = lock_row(&report, lock);
        assert_eq!(u(row, "events"), events, "{row}");
        assert_eq!(u(row, "ownership_changes"), changes, "{row}");
    }
    let text = report_raw(&dir, &[] as &[&str]);
    assert!(text.stdout.contains("Changed"), "{}", text.describe());
}

/// Chunks are handed out of mapping windows shared by a process's threads
/// (collector.c, "Mapping windows"): 70 long-lived threads each keep a
/// chunk live in its own window while 31 short-lived threads between two
/// of them claim and release the rest of it, so more windows stay mapped
/// than the collector has slots for (later claims map their chunk alone),
/// and one writer thread runs through the lazily zeroed part of several
/// chunks. Every acquisition is in the report, in both modes.
#[test]
fn chunk_windows_keep_every_event() {
    require_tool!("gcc");
    let _serial = serial();
    let exe = build("chunk_windows.c", &[]);
    let tmp = tempdir();
    let (_, rec, report) = same_with_and_without(tmp.path(), &exe, &[]);
    assert!(
        rec.stdout.contains("long=140 short=2170 writer=20000"),
        "{}",
        rec.describe()
    );
    assert_lock_events(&report, "long_lock", 140);
    assert_lock_events(&report, "short_lock", 70 * 31);
    assert_lock_events(&report, "writer_lock", 20_000);
    let report = record_report(&tmp.path().join("light"), &exe, &[], true, &[]);
    assert_lock_events(&report, "long_lock", 140);
    assert_lock_events(&report, "short_lock", 70 * 31);
    assert_lock_events(&report, "writer_lock", 20_000);
    // Without slots (collector.c, "Slots") every thread claims a chunk of
    // its own out of the windows, the case this program was written for.
    let own_dir = tmp.path().join("no-slots");
    let report = record_report(&own_dir, &exe, &[], false, &[("CONTEND_SLOTS", "0")]);
    assert!(
        chunks_claimed(&own_dir).iter().sum::<usize>() >= 70 + 70 * 31,
        "a chunk per thread without slots"
    );
    assert_lock_events(&report, "long_lock", 140);
    assert_lock_events(&report, "short_lock", 70 * 31);
    assert_lock_events(&report, "writer_lock", 20_000);
}

/// `contend record [--light] -o dir -- exe args` with `env` set, which
/// must succeed; its JSON report.
fn record_report(
    dir: &Path,
    exe: &Path,
    args: &[&str],
    light: bool,
    env: &[(&str, &str)],
) -> Value {
    crate::light::record_with_env(light, dir, exe, args, env);
    report_json(dir)
}

/// `chunks_claimed` of each lock trace of the recording in `dir`.
fn chunks_claimed(dir: &Path) -> Vec<usize> {
    trace_files(dir)
        .iter()
        .map(|t| trace_chunk_heads(t).0)
        .collect()
}

/// The record slots handed out and the threads' first record chunks of
/// their own (sequence 0, not slots) of the lock traces of the recording
/// in `dir` (docs/trace-format.md, "Slot chunks").
fn first_record_chunks(dir: &Path) -> (usize, usize) {
    use contend_trace::format::CHUNK_COUNTS;
    let (mut slots, mut own) = (0, 0);
    for t in trace_files(dir) {
        for c in trace_chunk_heads(&t).1 {
            if !c.started || c.flags & CHUNK_COUNTS != 0 {
                continue;
            }
            if c.in_slot {
                slots += 1;
            } else if c.sequence == 0 {
                own += 1;
            }
        }
    }
    (slots, own)
}

/// A thread that fills its slot pays for a slot and a chunk of its own,
/// so a process whose threads write more than a slot holds stops handing
/// out record slots (collector.c, `record_slots_wanted`): 64 threads in 4
/// batches of 16 (tests/programs/thread_churn.c), 300 pairs each (about
/// 5 KiB of records): after the first threads filled theirs, the others
/// start in chunks of their own. With 5 pairs each, all but the main
/// thread start in slots. Every acquisition is kept either way.
#[test]
fn threads_that_outgrow_their_slots_start_in_chunks_of_their_own() {
    require_tool!("gcc");
    let _serial = serial();
    let exe = build("thread_churn.c", &[]);
    let tmp = tempdir();
    for (pairs, long) in [(300u64, true), (5, false)] {
        let dir = tmp.path().join(format!("churn-{pairs}"));
        let report = record_report(
            &dir,
            &exe,
            &["4", "16", &pairs.to_string(), "5"],
            false,
            &[],
        );
        assert_eq!(
            report["locks"]["summary"]["events"].as_u64(),
            Some(64 * pairs),
            "{}",
            report["locks"]["summary"]
        );
        let (slots, own) = first_record_chunks(&dir);
        assert_eq!(slots + own, 64 + 1, "slots {slots}, own {own}");
        if long {
            assert!(slots <= 16 && own >= 48, "slots {slots}, own {own}");
        } else {
            assert!(slots == 64 && own == 1, "slots {slots}, own {own}");
        }
    }
}

/// Slots (collector.c, "Slots"; trace format version 3): a thread's first
/// records and its first count table go into 4 KiB slots of a slot chunk
/// that up to 31 threads share, and a thread that fills its slot goes on
/// in chunks of its own. tests/programs/slot_threads.c starts 100 threads
/// in waves (slots handed out while others are given back), every fourth
/// of which leaves its slot, then 8 threads that are cancelled where they
/// block (their slots given back as they unwind), then forks a child that
/// starts 40 threads of its own (the child's slots come from its own
/// trace). Every acquisition is in the report, in both modes, and the
/// traces hold far fewer chunks than threads.
#[test]
fn slots_keep_every_event_of_short_and_long_threads() {
    require_tool!("gcc");
    let _serial = serial();
    let exe = build("slot_threads.c", &[]);
    let tmp = tempdir();
    let (dir, rec, report) = same_with_and_without(tmp.path(), &exe, &[]);
    assert!(
        rec.stdout.contains("parent expected=39533 taken=39533")
            && rec.stdout.contains("child expected=15630 taken=15630"),
        "{}",
        rec.describe()
    );
    assert_lock_events(&report, "counted_lock", 39_533 + 15_630);
    // parent: 4 slot chunks for 108 threads, 25 threads with chunks of
    // their own (1 or 2 each: 1,500 pairs are about 24 KiB of records),
    // main's; child: 2 slot chunks, 10 threads' own, its main thread's
    let claimed = chunks_claimed(&dir);
    assert_eq!(claimed.len(), 2, "{claimed:?}");
    assert!(
        claimed.iter().sum::<usize>() < 108 + 40,
        "fewer chunks than threads: {claimed:?}"
    );
    // light mode: each thread's count table is a slot too
    let light_dir = tmp.path().join("light");
    let report = record_report(&light_dir, &exe, &[], true, &[]);
    assert_lock_events(&report, "counted_lock", 39_533 + 15_630);
    assert!(
        chunks_claimed(&light_dir).iter().sum::<usize>() < 108 + 40,
        "light: fewer chunks than threads"
    );
}
