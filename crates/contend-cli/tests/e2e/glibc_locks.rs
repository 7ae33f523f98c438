//! glibc's internal locks named in the futex section (issue 16,
//! "well-known runtime locks named"): `tests/programs/glibc_locks.c`
//! contends on stdout's stream lock (fputs while the main thread holds it
//! with flockfile) and, with one malloc arena, on the arena's mutex. glibc
//! takes both with its own inline futex code, so they are recorded only by
//! the kernel's futex tracepoints (`record --futex-trace on`); the report
//! must name the two words as glibc's locks
//! (crates/contend/src/locks/known.rs, `runtime_futex_name`), not as bare
//! addresses. Needs root (or CAP_PERFMON) and tracefs: skipped, with the
//! reason printed, where the tracepoints are not allowed.

use std::path::Path;
use std::process::Command;

use crate::common::*;
use serde_json::Value;

const SRC: &str = "glibc_locks.c";

/// Why the futex tracepoints cannot be used here, `None` when they can.
fn tracepoints_unavailable() -> Option<&'static str> {
    // SAFETY: plain system call.
    if unsafe { libc::geteuid() } != 0 {
        return Some("the futex tracepoints need root (or CAP_PERFMON)");
    }
    let event = "/sys/kernel/tracing/events/syscalls/sys_enter_futex";
    if !Path::new(event).is_dir() {
        let _ = Command::new("mount")
            .args(["-t", "tracefs", "nodev", "/sys/kernel/tracing"])
            .status();
    }
    (!Path::new(event).is_dir()).then_some("tracefs (/sys/kernel/tracing) is not available")
}

#[test]
fn glibc_stdio_and_malloc_locks_are_named() {
    if let Some(why) = tracepoints_unavailable() {
        eprintln!("SKIP glibc_locks: {why}");
        return;
    }
    let _g = serial();
    let tmp = tempdir();
    let exe = build(SRC, &[]);
    // Two threads collide on the arena's mutex in 200 ms of malloc/free
    // only when both run at once; on a loaded machine a run may see no
    // collision at all (nothing to name). Such a run is repeated, up to
    // three in all; a naming defect fails every one.
    let mut attempt = 0;
    let report = loop {
        attempt += 1;
        let dir = tmp.path().join(format!("g{attempt}.data"));
        let report = record_glibc_locks(&exe, &dir);
        let collided = report["futex"]["by_word"].as_array().is_some_and(|ws| {
            ws.iter().any(|w| {
                w["sites"].to_string().contains("malloc")
                    || w["sites"].to_string().contains("free")
                    || w["name"].as_str().is_some_and(|n| n.contains("arena"))
            })
        });
        if collided || attempt == 3 {
            break report;
        }
        eprintln!("glibc_locks: no malloc collision in attempt {attempt}; repeating");
    };
    let words = report["futex"]["by_word"]
        .as_array()
        .unwrap_or_else(|| panic!("a futex section: {report:#}"));
    let named = |prefix: &str| -> Vec<&Value> {
        words
            .iter()
            .filter(|w| w["name"].as_str().is_some_and(|n| n.starts_with(prefix)))
            .collect()
    };
    // stdout's lock: the fputs calls waited on it while main held it
    // (with glibc's symbol table, libc6-dbg, it is named `… of stdout`)
    let stdio = named("glibc stdio lock");
    assert!(
        stdio
            .iter()
            .any(|w| w["contended_events"].as_u64() > Some(0)),
        "{words:#?}"
    );
    if let Some(w) = words.iter().find(|w| {
        w["name"]
            .as_str()
            .is_some_and(|n| n.contains("_IO_stdfile_1_lock"))
    }) {
        assert!(
            w["name"]
                .as_str()
                .unwrap()
                .starts_with("glibc stdio lock of stdout"),
            "{w:#}"
        );
    }
    // the one malloc arena's mutex
    let arena = named("glibc malloc arena lock");
    assert!(!arena.is_empty(), "{words:#?}");
    // neither is left as a bare address
    for w in stdio.iter().chain(&arena) {
        assert!(
            w["events"].as_u64() > Some(0) || w["wakes"].as_u64() > Some(0),
            "{w:#}"
        );
    }
}

/// libstdc++'s static-initialisation guards
/// (`tests/programs/static_guard.cpp`): a second thread asks for a
/// function-local static while the first runs its constructor and waits
/// in `__cxa_guard_acquire` on the guard variable, through `syscall()`
/// (recorded by the collector, no tracepoints needed). The futex word is
/// named after the static it guards, not `guard variable for …` or an
/// address. The program makes three such rounds; at least one wait must
/// have happened (each is all but certain: the constructor waits for the
/// second thread's arrival), and every guard word is named so.
#[test]
fn cxx_static_initialisation_guard_is_named() {
    require_tool!("g++");
    let tmp = tempdir();
    let exe = build("static_guard.cpp", &[]);
    let dir = tmp.path().join("sg.data");
    let out = record(&dir, &exe, &[] as &[&str]);
    assert!(out.success(), "{}", out.describe());
    let report = report_json(&dir);
    let words = report["futex"]["by_word"]
        .as_array()
        .unwrap_or_else(|| panic!("a futex section: {report:#}"));
    let guards: Vec<&Value> = words
        .iter()
        .filter(|w| w["sites"].to_string().contains("__cxa_guard_acquire"))
        .collect();
    assert!(!guards.is_empty(), "{words:#?}");
    for g in guards {
        let name = g["name"].as_str().unwrap_or_default();
        assert!(
            name.starts_with("C++ static initialisation guard of Table<")
                && name.ends_with("()::table"),
            "{g:#}"
        );
    }
}

/// Records `exe` with the futex tracepoints, one malloc arena and no
/// tcache, into `dir`, and returns its JSON report.
fn record_glibc_locks(exe: &Path, dir: &Path) -> Value {
    let mut cmd = Command::new(contend_bin());
    cmd.args(["record", "--futex-trace", "on", "-o"])
        .arg(dir)
        .arg("--")
        .arg(exe)
        .env(
            "GLIBC_TUNABLES",
            "glibc.malloc.arena_max=1:glibc.malloc.tcache_count=0",
        );
    let out = run_timeout(cmd, RUN_TIMEOUT);
    assert!(out.success(), "{}", out.describe());
    report_json(dir)
}
