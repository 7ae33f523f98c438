//! End-to-end accuracy: programs that measure their own lock wait and hold
//! times (tests/programs/accuracy_*.c) are recorded with `contend record`,
//! and `contend report --format json` must agree with their measurement.
//!
//! Tolerance: |contend − program| ≤ 2 % of the program's total + 1 µs per
//! event. The 1 µs per event covers the fixed overhead inside each measured
//! interval that only one side sees (a clock_gettime call, the wrapper's
//! try-lock and record store, the PLT call, the collector's occasional
//! chunk claim); the 2 % covers the TSC → CLOCK_MONOTONIC fit and small
//! scheduling noise.
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
//! program's. Both directions are asserted on every run (with 0.5 % slack
//! for the clock conversion).
//!
//! Preemption: a thread switched out between its own clock read and the
//! collector's (a window of ~100 ns) moves a whole time slice, milliseconds,
//! between the two measurements — on a loaded 2-CPU machine this happens in
//! a fair share of runs, and a virtual CPU can be descheduled by its host
//! without the guest noticing. So the programs also count the events during
//! which their thread was involuntarily switched out (getrusage
//! `ru_nivcsw` around each round) or stalled for more than 2 ms (longer
//! than any hand-over in these programs takes; the host descheduling the
//! virtual CPU is invisible to `ru_nivcsw`, seen here as a 4 ms gap in a
//! spinlock test), and the span t0..after-unlock of those events. Per event, contend's wait lies in [0, program's wait] and its
//! hold in [program's hold, span], so
//!   |contend − program| ≤ 2 % + 1 µs × events + Σ span of preempted events
//! holds on every run (checked). The tight tolerance above must hold in at
//! least one of up to three runs: a systematic error (a timestamp in the
//! wrong place, a wrong clock conversion, lost or doubled events) fails all
//! three, a preemption in the window rarely strikes three times in a row.
//! On a machine busy with other work it can: when all three runs are
//! disturbed (their preempted rounds span more than the tight tolerance),
//! the preemption-aware bound checked on each is what is asserted.
//!
//! Light recordings (`contend record --light`, the `light_*` tests): the
//! uncontended acquisitions are counted, not timed, and only contended
//! ones are recorded in full. Their wait is exact (an uncontended
//! acquisition waits 0 in both modes), so the same tolerance applies to the
//! wait, and the event count must be exact; the hold is only measured for
//! contended acquisitions, so it is only checked to stay below the
//! program's total hold (plus 1 µs per event).

use crate::common::*;
use serde_json::Value;

/// The program's own totals, parsed from its JSON line.
struct Measured {
    wait_ns: u64,
    hold_ns: u64,
    events: u64,
    /// Σ (after unlock − t0) over rounds with an involuntary context switch.
    preempted_span_ns: u64,
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
        preempted_span_ns: u(&json, "preempted_span_ns"),
        json,
    }
}

/// The tight tolerance: 2 % of the program's total + 1 µs per event.
fn tight(program: u64, events: u64) -> f64 {
    program as f64 * 0.02 + 1000.0 * events as f64
}

/// Compares one total; returns whether the tight tolerance holds, and
/// panics if even the preemption-aware bound is exceeded.
fn compare(what: &str, contend: u64, program: u64, m: &Measured) -> bool {
    let tight = tight(program, m.events);
    let bound = tight + m.preempted_span_ns as f64;
    let diff = contend as f64 - program as f64;
    eprintln!(
        "{what}: contend {contend} ns, program {program} ns, difference {diff:+.0} ns \
         (tolerance {tight:.0} ns; with preempted rounds {bound:.0} ns)"
    );
    assert!(
        diff.abs() <= bound,
        "{what}: contend {contend} ns vs program {program} ns: difference {diff:+.0} ns \
         exceeds {bound:.0} ns = 2 % + 1 µs × {} events + {} ns spent in rounds with an \
         involuntary context switch",
        m.events,
        m.preempted_span_ns
    );
    diff.abs() <= tight
}

/// Records `program args` once, checks everything that must hold on every
/// run, and returns (report, measured, tight tolerance held).
fn run_once(
    src: &str,
    args: &[&str],
    lock: &str,
    kind: &str,
    threads: u64,
) -> (Value, Measured, bool) {
    run_once_as(false, src, args, lock, kind, threads)
}

/// [`run_once`], recorded with `--light` when `light`.
fn run_once_as(
    light: bool,
    src: &str,
    args: &[&str],
    lock: &str,
    kind: &str,
    threads: u64,
) -> (Value, Measured, bool) {
    let exe = build(src, &[]);
    let tmp = tempdir();
    let dir = tmp.path().join("rec");
    let out = if light {
        let mut cmd = std::process::Command::new(contend_bin());
        cmd.args(["record", "--light", "--force", "-o"])
            .arg(&dir)
            .arg("--")
            .arg(&exe)
            .args(args);
        run_timeout(cmd, RUN_TIMEOUT)
    } else {
        record(&dir, &exe, args)
    };
    assert!(
        out.success(),
        "contend record -- {src} failed:\n{}",
        out.describe()
    );
    let m = measured(&out.stdout);
    let report = report_json(&dir);
    let row = lock_row(&report, lock);
    eprintln!("{src}: program {}, contend {}", m.json, row);
    let glance_ok = check_at_a_glance(&dir, src, lock, threads, &m);

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
    // Direction of the bias (see the module comment).
    assert!(
        cw as f64 <= m.wait_ns as f64 * 1.005 + 1000.0,
        "{src}: contend's wait {cw} ns exceeds the program's {} ns, although the collector's \
         interval lies inside the program's",
        m.wait_ns
    );
    if light {
        let note = &report["locks"]["light"];
        assert!(note.is_object(), "a light recording says so: {note}");
        // Every event is either counted or recorded (contended, or a
        // counted hold whose release woke a waiter).
        assert!(
            u(row, "counted_events") + u(row, "contended_events") <= m.events,
            "{row}"
        );
        if threads == 1 {
            assert_eq!(u(row, "counted_events"), m.events, "{row}");
        }
        // Holds of counted acquisitions are not timed: below the program's.
        assert!(
            ch as f64 <= m.hold_ns as f64 * 1.005 + 1000.0 * m.events as f64,
            "{src}: light hold {ch} ns exceeds the program's {} ns",
            m.hold_ns
        );
        let wait_ok = compare(&format!("{src} light wait"), cw, m.wait_ns, &m);
        assert_eq!(report["recording"]["mode"], "light");
        return (report, m, wait_ok && glance_ok);
    }
    assert!(
        ch as f64 >= m.hold_ns as f64 * 0.995 - 1000.0,
        "{src}: contend's hold {ch} ns is below the program's {} ns, although the collector's \
         interval contains the program's",
        m.hold_ns
    );
    let wait_ok = compare(&format!("{src} wait"), cw, m.wait_ns, &m);
    let hold_ok = compare(&format!("{src} hold"), ch, m.hold_ns, &m);
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
    (report, m, wait_ok && hold_ok && glance_ok)
}

/// What the text report's "At a glance" says of the one lock of an
/// accuracy program: the events the program made, and (with 2 threads or
/// more) the lock wait and the lock waited for most, whose figures are
/// compared with the program's own wait as the JSON's are
/// ([`compare`]; the printed figures are rounded to 4 significant digits,
/// 0.05 %, well inside the tolerance). Returns whether the tight tolerance
/// held.
fn check_at_a_glance(
    dir: &std::path::Path,
    src: &str,
    lock: &str,
    threads: u64,
    m: &Measured,
) -> bool {
    let glance = at_a_glance(dir);
    let grouped = with_commas(m.events);
    let first = &glance[0];
    if threads < 2 {
        // one thread cannot contend
        assert_eq!(
            first,
            &format!("Locks: {grouped} acquisitions, none contended."),
            "{src}: {glance:#?}"
        );
        return true;
    }
    assert!(first.starts_with("Lock wait: "), "{src}: {glance:#?}");
    assert!(
        first.contains(&format!(" of {grouped} (")),
        "{src}: the program's {grouped} events in {first}"
    );
    let total = first_duration_ns(first).unwrap_or_else(|| panic!("{src}: no duration in {first}"));
    let most = glance
        .iter()
        .find(|l| l.starts_with("Waited for most: "))
        .unwrap_or_else(|| panic!("{src}: no lock waited for most in {glance:#?}"));
    assert!(
        most.starts_with(&format!("Waited for most: {lock}, ")),
        "{src}: {most}"
    );
    let at_lock = first_duration_ns(most).unwrap_or_else(|| panic!("{src}: no duration in {most}"));
    let total_ok = compare(
        &format!("{src} wait, At a glance"),
        total.round() as u64,
        m.wait_ns,
        m,
    );
    let lock_ok = compare(
        &format!("{src} wait of {lock}, At a glance"),
        at_lock.round() as u64,
        m.wait_ns,
        m,
    );
    total_ok && lock_ok
}

/// Up to three runs; every run must pass [`run_once`], one must also meet
/// the tight tolerance. Returns that run's report and measurement.
fn check(src: &str, args: &[&str], lock: &str, kind: &str, threads: u64) -> (Value, Measured) {
    check_as(false, src, args, lock, kind, threads)
}

/// [`check`], recorded with `--light` when `light`.
fn check_as(
    light: bool,
    src: &str,
    args: &[&str],
    lock: &str,
    kind: &str,
    threads: u64,
) -> (Value, Measured) {
    let _serial = serial();
    const ATTEMPTS: u32 = 3;
    // A run is disturbed when the time its preempted rounds spanned is
    // larger than the tight tolerance: preemption alone can then explain
    // a difference beyond it (module docs).
    let mut all_disturbed = true;
    let mut last = None;
    for attempt in 1..=ATTEMPTS {
        let (report, m, tight_ok) = run_once_as(light, src, args, lock, kind, threads);
        if tight_ok {
            return (report, m);
        }
        let disturbed = m.preempted_span_ns as f64 > tight(m.wait_ns.min(m.hold_ns), m.events);
        all_disturbed &= disturbed;
        eprintln!(
            "{src}: run {attempt} of {ATTEMPTS} outside the tight tolerance (2 % + 1 µs × \
             {} events); {} rounds had an involuntary context switch, spanning {} ns{}",
            m.events,
            m.json["preempted_events"],
            m.preempted_span_ns,
            if disturbed { " (disturbed)" } else { "" }
        );
        last = Some((report, m));
    }
    // Three disturbed runs (a machine busy with other work): each passed
    // the preemption-aware bound, which is what holds under any load; a
    // systematic error shows in undisturbed runs, which must meet the
    // tight tolerance.
    if all_disturbed {
        eprintln!("{src}: all {ATTEMPTS} runs disturbed by preemption: checked the preemption-aware bound only");
        return last.expect("at least one run");
    }
    panic!(
        "{src} {args:?}: contend's wait or hold differed from the program's by more than \
         2 % + 1 µs per event in {ATTEMPTS} runs in a row, not all of them disturbed by \
         preemption (see the lines above)"
    );
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
fn rwlock_reader_and_writer() {
    require_tool!("gcc");
    // 1 reader + 1 writer × 1500 rounds, hold 20 µs, 20 µs outside.
    let (_, m) = check(
        "accuracy_rwlock.c",
        &["1", "1", "1500", "20", "20"],
        "global_rwlock",
        "rwlock",
        2,
    );
    assert_eq!(u(&m.json, "read_events"), 1500);
    assert_eq!(u(&m.json, "write_events"), 1500);
}

/// Readers holding the lock at the same time. Three spinning threads on a
/// 2-CPU machine are preempted all the time, so only what holds on every
/// run is checked: the event count, the direction of the bias and the
/// preemption-aware bound (see the module comment).
#[test]
fn rwlock_shared_readers() {
    require_tool!("gcc");
    let _serial = serial();
    let (report, m, _) = run_once(
        "accuracy_rwlock.c",
        &["2", "1", "800", "20", "20"],
        "global_rwlock",
        "rwlock",
        3,
    );
    assert_eq!(u(&m.json, "read_events"), 1600);
    assert_eq!(u(&m.json, "write_events"), 800);
    let row = lock_row(&report, "global_rwlock");
    // Overlapping read holds are each counted in full.
    assert!(u(row, "hold_ns") >= 2400 * 20_000, "{row}");
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

#[test]
fn light_mutex_two_threads() {
    require_tool!("gcc");
    check_as(
        true,
        "accuracy_mutex.c",
        &["2", "2000", "30", "10"],
        "global_lock",
        "mutex",
        2,
    );
}

#[test]
fn light_mutex_more_threads_than_cpus() {
    require_tool!("gcc");
    check_as(
        true,
        "accuracy_mutex.c",
        &["5", "400", "20", "20"],
        "global_lock",
        "mutex",
        5,
    );
}

#[test]
fn light_mutex_single_thread_is_all_counted() {
    require_tool!("gcc");
    let (report, _) = check_as(
        true,
        "accuracy_mutex.c",
        &["1", "1000", "5", "5"],
        "global_lock",
        "mutex",
        1,
    );
    let row = lock_row(&report, "global_lock");
    assert_eq!(u(row, "contended_events"), 0, "{row}");
    assert_eq!(u(row, "hold_ns"), 0, "nothing timed: {row}");
}

#[test]
fn light_rwlock_reader_and_writer() {
    require_tool!("gcc");
    check_as(
        true,
        "accuracy_rwlock.c",
        &["1", "1", "1500", "20", "20"],
        "global_rwlock",
        "rwlock",
        2,
    );
}

#[test]
fn light_spinlock_two_threads() {
    require_tool!("gcc");
    check_as(
        true,
        "accuracy_spin.c",
        &["2", "2000", "10", "10"],
        "global_spin",
        "spinlock",
        2,
    );
}
