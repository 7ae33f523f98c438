//! End-to-end accuracy: programs that measure their own lock wait and hold
//! times (tests/programs/accuracy_*.c) are recorded with `contend record`,
//! and `contend report --format json` must agree with their measurement.
//!
//! Tolerance: |contend − program| ≤ 2 % of the program's total + 1 µs per
//! event. The 1 µs per event covers the fixed overhead inside each measured
//! interval (two clock_gettime calls, the wrapper's try-lock and timestamp,
//! the PLT call), the 2 % covers rare preemptions between the program's
//! clock read and the collector's, and the TSC → CLOCK_MONOTONIC fit.
//!
//! The bias has a known direction. The program reads its clock *outside*
//! the collector's wrapper: t0 before calling `pthread_mutex_lock` (the
//! wrapper takes its REQUEST time later, after the fast try failed) and t1
//! after the call returned (the wrapper took its ACQUIRED time before
//! returning), so contend's wait is contained in the program's [t0, t1]:
//! contend's wait ≤ the program's (an uncontended acquisition has wait 0 in
//! contend, ~100 ns in the program). For the hold, t1 is after the wrapper's
//! ACQUIRED time and t2 is before the unlock wrapper's RELEASE time, so
//! contend's hold contains the program's [t1, t2]: contend's hold ≥ the
//! program's. Both directions are asserted too (with 0.5 % slack for the
//! clock conversion).

mod common;

use common::*;
use serde_json::Value;

/// The program's own totals, parsed from its JSON line.
struct Measured {
    wait_ns: u64,
    hold_ns: u64,
    events: u64,
    json: Value,
}

fn measured(stdout: &str) -> Measured {
    let line = stdout
        .lines()
        .find(|l| l.trim_start().starts_with('{'))
        .unwrap_or_else(|| panic!("no JSON line in the program's output:\n{stdout}"));
    let json: Value = serde_json::from_str(line).expect("program printed valid JSON");
    Measured {
        wait_ns: u(&json, "wait_ns"),
        hold_ns: u(&json, "hold_ns"),
        events: u(&json, "events"),
        json,
    }
}

fn within(what: &str, contend: u64, program: u64, events: u64) {
    let tolerance = program as f64 * 0.02 + 1000.0 * events as f64;
    let diff = contend as f64 - program as f64;
    assert!(
        diff.abs() <= tolerance,
        "{what}: contend {contend} ns vs program {program} ns: difference {diff:+.0} ns \
         exceeds the tolerance of {tolerance:.0} ns (2 % + 1 µs × {events} events)"
    );
    eprintln!(
        "{what}: contend {contend} ns, program {program} ns, difference {diff:+.0} ns \
         (tolerance {tolerance:.0} ns)"
    );
}

/// Records `program args`, checks its exit, and compares the lock row
/// `lock` with the program's own measurement. Returns (report, measured).
fn check(src: &str, args: &[&str], lock: &str, kind: &str, threads: u64) -> (Value, Measured) {
    let _serial = serial();
    let exe = build(src, &[]);
    let tmp = tempdir();
    let dir = tmp.path().join("rec");
    let out = record(&dir, &exe, args);
    assert!(
        out.success(),
        "contend record -- {src} failed:\n{}",
        out.describe()
    );
    let m = measured(&out.stdout);
    let report = report_json(&dir);
    let row = lock_row(&report, lock);
    eprintln!("{src}: program {}, contend {}", m.json, row);

    assert_eq!(row["kind"], kind, "kind of {lock}");
    assert_eq!(
        u(row, "events"),
        m.events,
        "{lock}: contend counted {} events, the program did {}",
        u(row, "events"),
        m.events
    );
    if threads >= 2 {
        assert!(
            u(row, "contended_events") > 0,
            "{lock}: {threads} threads on one lock, yet no contended event: {row}"
        );
    }
    let (cw, ch) = (u(row, "wait_ns"), u(row, "hold_ns"));
    within(&format!("{src} wait"), cw, m.wait_ns, m.events);
    within(&format!("{src} hold"), ch, m.hold_ns, m.events);
    // Direction of the bias (see the module comment).
    assert!(
        cw as f64 <= m.wait_ns as f64 * 1.005 + 1000.0,
        "{src}: contend's wait {cw} ns exceeds the program's {} ns, although the collector's \
         interval lies inside the program's",
        m.wait_ns
    );
    assert!(
        ch as f64 >= m.hold_ns as f64 * 0.995 - 1000.0,
        "{src}: contend's hold {ch} ns is below the program's {} ns, although the collector's \
         interval contains the program's",
        m.hold_ns
    );
    // The only lock in the program: the summary must be that lock.
    let s = &report["locks"]["summary"];
    assert_eq!(u(s, "events"), m.events, "locks.summary.events");
    assert_eq!(u(s, "wait_ns"), cw, "locks.summary.wait_ns");
    assert_eq!(u(s, "hold_ns"), ch, "locks.summary.hold_ns");
    assert_eq!(u(s, "failed_events"), 0, "locks.summary.failed_events");
    assert_eq!(
        u(s, "duration_ns"),
        cw + ch,
        "locks.summary.duration_ns = wait + hold"
    );
    assert_eq!(report["run"]["exit_code"], 0);
    (report, m)
}

#[test]
fn mutex_two_threads() {
    require_tool!("gcc");
    // 2 threads × 2000 rounds, hold 30 µs, 10 µs outside: ~0.15 s.
    check(
        "accuracy_mutex.c",
        &["2", "2000", "30", "10"],
        "global_lock",
        "mutex",
        2,
    );
}

#[test]
fn mutex_more_threads_than_cpus() {
    require_tool!("gcc");
    // 5 threads × 400 rounds, hold 20 µs, 20 µs outside: more threads than
    // CPUs on the 2-core test machines, so waits include preempted holders.
    check(
        "accuracy_mutex.c",
        &["5", "400", "20", "20"],
        "global_lock",
        "mutex",
        5,
    );
}

#[test]
fn mutex_single_thread_is_uncontended() {
    require_tool!("gcc");
    let (report, _) = check(
        "accuracy_mutex.c",
        &["1", "1000", "5", "5"],
        "global_lock",
        "mutex",
        1,
    );
    let row = lock_row(&report, "global_lock");
    assert_eq!(
        u(row, "contended_events"),
        0,
        "one thread cannot contend: {row}"
    );
    assert_eq!(u(row, "wait_ns"), 0, "one thread never waits: {row}");
}

#[test]
fn rwlock_readers_and_writer() {
    require_tool!("gcc");
    // 2 readers + 1 writer × 1000 rounds, hold 20 µs, 20 µs outside.
    let (report, m) = check(
        "accuracy_rwlock.c",
        &["2", "1", "1000", "20", "20"],
        "global_rwlock",
        "rwlock",
        3,
    );
    assert_eq!(
        u(&m.json, "read_events") + u(&m.json, "write_events"),
        m.events
    );
    let _ = report;
}

#[test]
fn spinlock_two_threads() {
    require_tool!("gcc");
    // At most as many spinning threads as CPUs: 2 × 2000 rounds, 10 µs each.
    check(
        "accuracy_spin.c",
        &["2", "2000", "10", "10"],
        "global_spin",
        "spinlock",
        2,
    );
}
