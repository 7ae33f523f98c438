//! Heap locks named by where they were created (mutrace's "where the lock
//! was created"): `tests/programs/heap_locks.c` creates, in a calloc'd
//! struct, a mutex with `pthread_mutex_init`, an rwlock with
//! `pthread_rwlock_init` and a mutex from `PTHREAD_MUTEX_INITIALIZER` that
//! no init function sees, and three threads contend on all three. The
//! report names them after the init line, or the line of the first use,
//! exactly (the lines are found by their markers in the source), keeps
//! the address in `address`, and `contend compare` pairs the three across
//! two runs whose heap addresses differ (the second run allocates a
//! padding block first, so the addresses differ even without ASLR).

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::common::*;

const SRC: &str = "heap_locks.c";

/// `(name, how, line, function)` the report must give each of the three.
fn expected() -> Vec<(String, &'static str, u32, &'static str)> {
    let init_mutex = line_of(SRC, "/* INIT_MUTEX */");
    let init_rwlock = line_of(SRC, "/* INIT_RWLOCK */");
    let first_use = line_of(SRC, "/* FIRST_USE */");
    vec![
        (
            format!("mutex created at heap_locks.c:{init_mutex} (cache_new)"),
            "init",
            init_mutex,
            "cache_new",
        ),
        (
            format!("rwlock created at heap_locks.c:{init_rwlock} (cache_new)"),
            "init",
            init_rwlock,
            "cache_new",
        ),
        (
            format!("mutex first used at heap_locks.c:{first_use} (worker)"),
            "first_use",
            first_use,
            "worker",
        ),
    ]
}

/// Records `heap_locks PAD` with `extra` record options; returns the
/// report and the three addresses the program printed (lock, table_lock,
/// stats_lock).
fn run(dir: &Path, exe: &Path, pad: &str, extra: &[&str]) -> (Value, Vec<String>) {
    let mut cmd = Command::new(contend_bin());
    cmd.arg("record")
        .arg("-o")
        .arg(dir)
        .args(extra)
        .arg("--")
        .arg(exe)
        .arg(pad);
    let out = run_timeout(cmd, RUN_TIMEOUT);
    assert!(out.success(), "{}", out.describe());
    let addresses: Vec<String> = out
        .stdout
        .split_whitespace()
        .filter_map(|w| w.split_once('='))
        .filter(|(k, _)| k.ends_with("lock"))
        .map(|(_, v)| v.to_string())
        .collect();
    assert_eq!(addresses.len(), 3, "{}", out.describe());
    (report_json(dir), addresses)
}

/// Checks the three rows of `report` against [`expected`] and `addresses`;
/// returns the rows' `created_at`.
fn check_rows(report: &Value, addresses: &[String]) -> Vec<Value> {
    let mut created = Vec::new();
    for ((name, how, line, function), address) in expected().into_iter().zip(addresses) {
        let row = lock_row(report, &name);
        assert_eq!(row["address"], address.as_str(), "{row:#}");
        assert_eq!(row["events"], 900, "3 threads × 300 rounds: {row:#}");
        let c = &row["created_at"];
        assert_eq!(c["how"], how, "{row:#}");
        assert_eq!(c["line"], line, "{row:#}");
        assert_eq!(c["function"], function, "{row:#}");
        assert!(
            c["file"].as_str().is_some_and(|f| f.ends_with(SRC)),
            "{row:#}"
        );
        created.push(c.clone());
    }
    created
}

#[test]
fn heap_locks_are_named_by_creation_and_paired_across_runs() {
    let _g = serial();
    let tmp = tempdir();
    let exe = build(SRC, &[]);
    let a = tmp.path().join("a.data");
    let b = tmp.path().join("b.data");
    let (report_a, addr_a) = run(&a, &exe, "0", &[]);
    let (report_b, addr_b) = run(&b, &exe, "40000", &[]);
    check_rows(&report_a, &addr_a);
    check_rows(&report_b, &addr_b);
    assert_ne!(addr_a, addr_b, "the padding moves the heap locks");
    // the SCI's lock blocks are keyed by the names the lock tables give
    // the locks (their creation), not by their heap addresses
    for (name, ..) in expected() {
        let keyed = report_a["sci"]["blocks"]
            .as_array()
            .expect("sci.blocks")
            .iter()
            .filter(|b| b["key"] == name.as_str())
            .count();
        assert!(
            keyed > 0,
            "an SCI block keyed {name}: {}",
            report_a["sci"]["blocks"]
        );
    }

    // compare pairs the three by their creation: one row each, with the
    // events of both runs
    let cmp = compare_json(&[&a, &b], RUN_TIMEOUT);
    let items = cmp["by_lock"].as_array().expect("by_lock");
    for (name, ..) in expected() {
        let matching: Vec<&Value> = items.iter().filter(|i| i["name"] == name).collect();
        assert_eq!(matching.len(), 1, "{name} in {items:#?}");
        let events = matching[0]["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["key"] == "events")
            .expect("an events metric");
        assert_eq!(
            events["values"],
            serde_json::json!([900.0, 900.0]),
            "{name}"
        );
    }
    assert_eq!(
        items.len(),
        3,
        "no lock is left unpaired (named by its address): {items:#?}"
    );
    // the text comparison titles every table in words, not by its key
    let mut cmd = Command::new(contend_bin());
    cmd.arg("compare").arg(&a).arg(&b);
    let out = run_timeout(cmd, RUN_TIMEOUT);
    assert!(out.success(), "{}", out.describe());
    for title in ["Lock summary", "Interference (SCI)", "Recording cost"] {
        assert!(
            out.stdout.lines().any(|l| l == title),
            "a table titled {title}: {}",
            out.stdout
        );
    }
    let keys: Vec<&str> = out
        .stdout
        .lines()
        .filter(|l| !l.is_empty() && l.chars().all(|c| c.is_ascii_lowercase() || c == '_'))
        .collect();
    assert!(keys.is_empty(), "tables titled by their keys: {keys:?}");
}

#[test]
fn creation_stacks_and_light_mode() {
    let _g = serial();
    let tmp = tempdir();
    let exe = build(SRC, &[]);
    // with stacks: each creation carries its call stack, the creating
    // line first
    let (report, addresses) = run(
        &tmp.path().join("s.data"),
        &exe,
        "0",
        &["--stack-every", "7"],
    );
    for (c, (_, _, line, function)) in check_rows(&report, &addresses).iter().zip(expected()) {
        let first = c["stack"][0].as_str().unwrap_or_default();
        assert_eq!(first, format!("{function} ({SRC}:{line})"), "{c:#}");
    }
    // light mode counts uncontended acquisitions without records: the
    // first use is still seen
    let (report, addresses) = run(&tmp.path().join("l.data"), &exe, "0", &["--light"]);
    check_rows(&report, &addresses);
}

/// Debian's `python3` (symbols, no DWARF without its dbgsym): three
/// CPU-bound threads take turns on the GIL, whose condition variable and
/// mutex lie inside `_PyRuntime`; the report names them
/// `CPython GIL cond (_PyRuntime+0x…)` and `CPython GIL mutex (…)`
/// (crates/contend/src/locks/known.rs), and the GIL's condition is where
/// the threads waited.
#[test]
fn cpython_gil_is_named() {
    let _g = serial();
    let python = Path::new("/usr/bin/python3");
    if !python.exists() {
        eprintln!("SKIP cpython_gil_is_named: /usr/bin/python3 is not installed");
        return;
    }
    let tmp = tempdir();
    let dir = tmp.path().join("py.data");
    let script = "import threading\n\
                  def work():\n    s = 0\n    for i in range(300000):\n        s += i\n\
                  ts = [threading.Thread(target=work) for _ in range(3)]\n\
                  [t.start() for t in ts]\n[t.join() for t in ts]\n";
    let out = record(&dir, python, &["-c", script]);
    assert!(out.success(), "{}", out.describe());
    let report = report_json(&dir);
    let rows = report["locks"]["by_lock"].as_array().expect("by_lock");
    let named = |prefix: &str| -> Vec<&Value> {
        rows.iter()
            .filter(|l| l["name"].as_str().is_some_and(|n| n.starts_with(prefix)))
            .collect()
    };
    let conds = named("CPython GIL cond (_PyRuntime");
    let mutexes = named("CPython GIL mutex (_PyRuntime");
    assert!(!conds.is_empty() && !mutexes.is_empty(), "{rows:#?}");
    let gil_wait: u64 = conds.iter().map(|l| l["wait_ns"].as_u64().unwrap()).sum();
    assert!(gil_wait > 0, "threads waited for the GIL: {conds:#?}");
    assert!(
        !rows.iter().any(|l| l["name"]
            .as_str()
            .is_some_and(|n| n.starts_with("_PyRuntime"))),
        "no _PyRuntime lock is left unnamed: {rows:#?}"
    );
}

/// Thin lock wrappers (`tests/programs/wrapper_locks.c`): every lock goes
/// through `wrap_lock` and both heap mutexes are made by `wrap_new`, so
/// taken at their word the two locks share one name and one site inside
/// the wrappers. With the stacks of `--stack-every 1`, `report --wrapper
/// 'wrap_*'` names each lock after the line that called `wrap_new` and
/// gives as its site the line that called `wrap_lock`; without
/// `--wrapper` the two are recognised as thin wrappers (one call, a few
/// bytes, two callers) with the same result, and the report says so.
#[test]
fn wrapper_sites_move_to_the_callers() {
    let _g = serial();
    const W: &str = "wrapper_locks.c";
    let tmp = tempdir();
    let exe = build(W, &[]);
    let dir = tmp.path().join("w.data");
    let mut cmd = Command::new(contend_bin());
    cmd.arg("record")
        .arg("-o")
        .arg(&dir)
        .args(["--stack-every", "1", "--"])
        .arg(&exe);
    let out = run_timeout(cmd, RUN_TIMEOUT);
    assert!(out.success(), "{}", out.describe());

    // Each lock is named after the line that called wrap_new and its site
    // is the line that called wrap_lock: with --wrapper, and without it,
    // where wrap_new and wrap_lock are recognised as thin wrappers (one
    // lock or init call, a few bytes, called from two places).
    let check = |report: &Value| {
        for (new, call) in [
            ("/* NEW_A */", "/* CALL_A */"),
            ("/* NEW_B */", "/* CALL_B */"),
        ] {
            let name = format!("mutex created at {W}:{} (main)", line_of(W, new));
            let row = lock_row(report, &name);
            assert_eq!(row["events"], 400, "{row:#}");
            assert_eq!(
                row["sites"],
                serde_json::json!([format!("worker ({W}:{})", line_of(W, call))]),
                "{row:#}"
            );
        }
    };
    let plain = report_json(&dir);
    check(&plain);
    assert!(
        plain["locks"]["filters"].to_string().contains(
            "call sites in thin lock wrappers recognised automatically [wrap_lock, wrap_new] attributed to their callers"
        ),
        "{}",
        plain["locks"]["filters"]
    );
    let text = report_raw(&dir, &["--format", "text"]);
    assert!(
        text.stdout
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .contains("thin lock wrappers recognised automatically [wrap_lock, wrap_new]"),
        "the text report says which wrappers were skipped: {}",
        text.stdout
    );

    let moved = report_json_with(&dir, &["--wrapper", "wrap_*"]);
    check(&moved);
    assert!(
        moved["locks"]["filters"]
            .to_string()
            .contains("call sites in [wrap_*] attributed to their callers"),
        "{}",
        moved["locks"]["filters"]
    );
    assert!(
        !moved["locks"]["filters"]
            .to_string()
            .contains("recognised automatically"),
        "wrappers the user named are not recognised again: {}",
        moved["locks"]["filters"]
    );
}
