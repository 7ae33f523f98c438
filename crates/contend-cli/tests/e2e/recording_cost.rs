//! The recording-cost estimate from the collector's in-situ samples,
//! against the cost the program measures itself (docs/metrics.md,
//! "Recording cost").
//!
//! tests/programs/cost_truth.c takes 16384 mutexes (one per cache line, in
//! a fixed pseudo-random order, so the collector's table probes miss as on
//! a program with many locks) on one thread, alternating rounds through
//! the interposed pthread functions (recorded) with rounds through glibc's
//! own (looked up in libc's handle, never recorded), each timed with the
//! thread's CPU clock. The difference of the two kinds' means over every
//! round (the warm-up's included) is the truth: what recording added per
//! pair on this thread, in the same process, over the same pairs the
//! estimate covers (the CPU clock leaves out time the thread was
//! descheduled). It includes what the estimate cannot see (the misses the
//! collector's footprint causes in the program's own lock calls), so the
//! estimate may be below it; the bound is a factor of 2 either way (the
//! bench/ measurements on sysbench and memcached are in
//! docs/benchmarks.md).
//!
//! The truth was the difference of the fastest rounds before: the cost
//! with a busy neighbour's disturbance left out. But the estimate averages
//! the collector's timed windows over every round, disturbed or not, and
//! beside two busy loops recording costs more on average (20-26 ns per
//! pair against 15 in the fastest rounds, on the AMD guest of
//! docs/benchmarks.md): the estimate was then 1.24-1.60 times the fastest
//! rounds' difference (once 2.44), and 0.90-1.12 times the means'
//! ("The estimate against all rounds, not the fastest").
//!
//! A run whose interposed rounds spread by more than 8 % (slowest /
//! fastest) was disturbed; it is repeated, up to 6 runs, and the least
//! disturbed one is checked (a rule from the fastest-round truth, kept:
//! an undisturbed run is the cleaner check). Against the fastest rounds,
//! with two busy loops beside it on that guest, runs that spread by 9-21
//! % gave ratios of 1.90-2.12 and those within 5 % 1.50-1.66 ("The
//! estimate against cost_truth on the AMD guest"). Most of that 1.5 was
//! the calibration's, which costed this two-thread process against
//! glibc's single-threaded lock path ("Both lock paths calibrated").

use std::process::Command;

use crate::common::*;
use serde_json::Value;

const MUTEXES: &str = "16384";
const PAIRS: &str = "40000";
const ROUNDS: &str = "4";
/// The largest spread of the interposed rounds (slowest / fastest) of a
/// run taken as undisturbed (module docs).
const UNDISTURBED_SPREAD: f64 = 1.08;

#[test]
fn sampled_estimate_is_near_the_cost_the_program_measures() {
    require_tool!("gcc");
    let exe = build("cost_truth.c", &["-ldl"]);
    let tmp = tempdir();
    let mut best: Option<(f64, Value, Value, std::path::PathBuf)> = None;
    for attempt in 0..6 {
        let dir = tmp.path().join(format!("run{attempt}"));
        let mut cmd = Command::new(contend_bin());
        cmd.arg("record")
            .arg("-o")
            .arg(&dir)
            .arg("--force")
            .arg("--")
            .arg(&exe)
            .args([MUTEXES, PAIRS, ROUNDS]);
        let out = run_timeout(cmd, RUN_TIMEOUT);
        assert!(out.success(), "record failed:\n{}", out.describe());
        let line = out
            .stdout
            .lines()
            .find(|l| l.starts_with('{'))
            .unwrap_or_else(|| panic!("no JSON line:\n{}", out.stdout));
        let truth: Value = serde_json::from_str(line).unwrap();
        let spread = truth["interposed_spread"].as_f64().unwrap();
        let report = report_json(&dir);
        let better = best.as_ref().is_none_or(|(s, _, _, _)| spread < *s);
        if better {
            best = Some((spread, truth, report, dir));
        }
        if spread <= UNDISTURBED_SPREAD {
            break;
        }
    }
    let (spread, truth, report, dir) = best.unwrap();
    let r = &report["recording"];
    let cost = &r["cost"];
    assert_eq!(cost["method"], "sampled", "{r}");
    let thread = measuring_thread(r, &truth);
    // Every record of the measured thread is a lock or an unlock of a
    // pair through the interposed functions (its warm-up round included).
    let pairs = u(&truth, "pairs_interposed");
    let records = u(thread, "records");
    assert!(
        (2 * pairs..=2 * pairs + 4).contains(&records),
        "{records} records for {pairs} pairs: {thread}"
    );
    // One operation in 256 is timed; a window that ran into the slow path
    // is replaced by the next operation's, a preempted one is dropped.
    let samples = u(thread, "samples");
    let expected = records / 256;
    assert!(
        samples * 10 >= expected * 8 && samples <= expected + 2,
        "{samples} samples for {records} records: {thread}"
    );
    let estimate = u(thread, "estimated_ns") as f64 / pairs as f64;
    let measured = truth["truth_mean_ns_per_pair"].as_f64().unwrap();
    assert!(estimate > 0.0, "{thread}");
    assert!(
        measured > 0.0,
        "recording added nothing the program could measure: {truth}"
    );
    let ratio = estimate / measured;
    assert!(
        (0.5..=2.0).contains(&ratio),
        "estimate {estimate:.1} ns per pair, measured {measured:.1} (ratio {ratio:.2}, spread {spread:.2}): {truth} {thread}"
    );
    // The calibrated estimate is shown beside it.
    assert!(cost["calibrated_ns"].as_u64().unwrap() > 0, "{cost}");
    assert!(
        r["calibration"]["record_window_ns"].as_f64().unwrap() > 0.0,
        "{r}"
    );
    let text = report_raw(&dir, &["--format", "text"]);
    assert!(
        text.stdout.contains("Sampled cost") && text.stdout.contains("Calibrated estimate"),
        "{}",
        text.stdout
    );
}

/// `--light` on more mutexes than a thread's count table keeps one by one
/// (32,768 mutexes at one call site against 256 lock entries): every pair
/// is still counted exactly once, without a record (the first locks in
/// entries of their own, the others in their call site's entry, which
/// keeps the table small), and the thread's cost samples cover one
/// operation in 256. (Before the by-site entries most of these pairs were
/// recorded after failed probes of a 4,094-entry table; that a record's
/// window is priced as a record is a matter of times: measured in
/// docs/benchmarks.md, not asserted here.)
#[test]
fn light_acquisitions_of_many_locks_are_counted_once_and_sampled() {
    require_tool!("gcc");
    let exe = build("cost_truth.c", &["-ldl"]);
    let tmp = tempdir();
    let dir = tmp.path().join("light");
    let out = crate::light::record_as(true, &dir, &exe, &["32768", PAIRS, ROUNDS]);
    let line = out.stdout.lines().find(|l| l.starts_with('{')).unwrap();
    let truth: Value = serde_json::from_str(line).unwrap();
    let report = report_json(&dir);
    let r = &report["recording"];
    assert_eq!(r["cost"]["method"], "sampled", "{r}");
    let thread = measuring_thread(r, &truth);
    let (records, counted) = (u(thread, "records"), u(thread, "counted"));
    let pairs = u(&truth, "pairs_interposed");
    assert_eq!((counted, records), (pairs, 0), "{pairs} pairs: {thread}");
    let light = &report["locks"]["light"];
    // 256 of 32,768 locks have entries of their own: most pairs are by site
    assert!(
        u(light, "counted_by_site_events") * 10 >= pairs * 9,
        "{light}"
    );
    let samples = u(thread, "samples");
    let expected = (records + counted) / 256;
    assert!(
        samples * 10 >= expected * 8 && samples <= expected + 2,
        "{samples} samples for {records} records and {counted} counted: {thread}"
    );
}

/// The row of `recording.by_thread` (in `r`, the report's `recording`) of
/// the thread cost_truth measured on (its `tid` in `truth`).
fn measuring_thread<'r>(r: &'r Value, truth: &Value) -> &'r Value {
    let tid = u(truth, "tid");
    r["by_thread"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| u(t, "tid") == tid)
        .unwrap_or_else(|| panic!("no thread {tid}: {r}"))
}

/// The slow path's time counts what a creation record costs: the estimate
/// of tests/programs/creation_truth.c's thread (`slow_path_ns`, almost all
/// of it the creation records of 2,000 × 5 fresh mutexes, each with the
/// 8 innermost frames of its call stack) against the CPU time the program
/// measured itself, interposed − glibc's own, over the same rounds. Within
/// 0.8–1.3. (When the slow path was timed with the thread CPU clock, whose
/// reads cost as much as the stack capture itself, the ratio was 0.68: the
/// clock reads were not counted, and they were most of what a creation
/// cost; docs/benchmarks.md, "The slow path timed without the CPU clock".)
/// The program's times leave out time it was descheduled, the estimate
/// leaves out records descheduled for more than 200 µs; a run outside the
/// bounds is repeated once (a disturbed round), never the bound widened.
#[test]
fn slow_path_counts_what_creation_records_cost() {
    require_tool!("gcc");
    let exe = build("creation_truth.c", &["-ldl"]);
    let tmp = tempdir();
    let mut ratios = Vec::new();
    for attempt in 0..2 {
        let dir = tmp.path().join(format!("run{attempt}"));
        let out = crate::light::record_as(false, &dir, &exe, &["2000", "5"]);
        let line = out.stdout.lines().find(|l| l.starts_with('{')).unwrap();
        let truth: Value = serde_json::from_str(line).unwrap();
        let report = report_json(&dir);
        let r = &report["recording"];
        let thread = measuring_thread(r, &truth);
        let creations = u(&truth, "creations") as f64;
        let measured = (truth["interposed_ns"].as_f64().unwrap()
            - truth["direct_ns"].as_f64().unwrap())
            / creations;
        let estimated = u(thread, "slow_path_ns") as f64 / creations;
        let ratio = estimated / measured;
        if (0.8..=1.3).contains(&ratio) {
            return;
        }
        ratios.push(format!(
            "{estimated:.0} ns estimated against {measured:.0} ns measured per creation (ratio {ratio:.2})"
        ));
    }
    panic!("slow path against the program's own times: {ratios:?}");
}

/// `--light` on 64 short threads (tests/programs/thread_churn.c: 4
/// batches of 16, 300 acquisitions each of 8 shared mutexes, every thread
/// starting at a different one): a thread's first count of each lock
/// enters it into its count table (and the first count on each page of
/// the table faults the page in), a one-off that the cost samples leave
/// out. A short thread has about one window; when it was the first
/// count, its page fault (1–3 µs on the guests of
/// docs/benchmarks.md) made the mean 1.2–1.3 µs per counted acquisition
/// and the estimate 7 times the build's after (docs/benchmarks.md,
/// "Light mode's cost samples without the table's page faults"); a count
/// costs tens of ns. The bound, 500 ns, is far from both.
#[test]
fn light_cost_samples_of_short_threads_leave_out_their_first_counts() {
    require_tool!("gcc");
    let exe = build("thread_churn.c", &[]);
    let tmp = tempdir();
    let dir = tmp.path().join("churn");
    let out = crate::light::record_as(true, &dir, &exe, &["4", "16", "300", "5", "8"]);
    assert!(
        out.stdout.contains("acquisitions=19200 threads=64"),
        "{}",
        out.stdout
    );
    let report = report_json(&dir);
    let cost = &report["recording"]["cost"];
    assert_eq!(cost["method"], "sampled", "{cost}");
    // one window per 256 operations of a thread, the first counts' left out
    assert!(u(cost, "samples") >= 64, "{cost}");
    let counted = cost["sampled_counted_ns"]
        .as_f64()
        .unwrap_or_else(|| panic!("no counted windows: {cost}"));
    assert!(
        counted > 0.0 && counted < 500.0,
        "{counted:.1} ns per counted acquisition: a window held a page fault or a new entry: {cost}"
    );
}

/// 64 short threads of 20 lock pairs each (tests/programs/thread_churn.c):
/// the recording's cost is almost all the collector's fixed work (the
/// process's start-up, each thread's chunk claim), which `--light` would
/// not lower (it claims a second chunk per thread), so the warning says
/// that instead of suggesting `--light`.
#[test]
fn a_cost_made_of_fixed_work_does_not_suggest_light() {
    require_tool!("gcc");
    let exe = build("thread_churn.c", &[]);
    let tmp = tempdir();
    let dir = tmp.path().join("churn");
    crate::light::record_as(false, &dir, &exe, &["4", "16", "20", "5"]);
    let report = report_json(&dir);
    let r = &report["recording"];
    let warning = r["warning"]
        .as_str()
        .unwrap_or_else(|| panic!("64 threads of 20 pairs: above 5 %: {r}"));
    assert!(
        warning.contains("is the collector's fixed work")
            && !warning.contains("try `contend record --light`"),
        "{warning}"
    );
}

/// A shell that starts six short processes before it execs a lock
/// program: each process's collector start-up (its trace file, the
/// unwinder's loading, the memory-map snapshots, the first one's
/// calibration) is in no thread's row, so `process_slow_path_ns`
/// holds it, and the per-thread rows plus it add up to the estimate, to
/// the ns. The text report gives it a row of its own.
#[test]
fn start_up_outside_the_threads_completes_the_per_thread_rows() {
    require_tool!("gcc");
    let tmp = tempdir();
    let dir = tmp.path().join("sh.data");
    record_short_processes_then_locks(&dir, 6);
    let report = report_json(&dir);
    let r = &report["recording"];
    assert_eq!(r["cost"]["method"], "sampled", "{r}");
    let threads: u64 = r["by_thread"]
        .as_array()
        .expect("by_thread")
        .iter()
        .map(|t| u(t, "estimated_ns"))
        .sum();
    let outside = u(r, "cost.process_slow_path_ns");
    assert_eq!(
        threads + outside,
        u(r, "cost.estimated_ns"),
        "the per-thread rows and the start-up outside them make the estimate: {r}"
    );
    assert!(outside <= u(r, "cost.slow_path_ns"), "{r}");
    // the shell and its six children recorded no lock operation: their
    // collectors' start-up is all outside the threads
    assert!(
        u(r, "cost.processes_with_slow_path") >= 7,
        "the shell and the six /bin/true processes: {r}"
    );
    let text = report_raw(&dir, &[] as &[&str]);
    assert!(
        text.stdout
            .lines()
            .any(|l| l.trim_start().starts_with("Outside the threads")),
        "{}",
        text.stdout
    );
}

/// Records into `dir` a shell that starts `short` processes (`/bin/true`,
/// no lock operation) and then execs a lock program
/// (`accuracy_mutex.c`, 2 threads).
fn record_short_processes_then_locks(dir: &std::path::Path, short: u32) {
    let exe = build("accuracy_mutex.c", &[]);
    // the list written out: `$(seq …)` would start two more processes
    let list: Vec<String> = (1..=short).map(|i| i.to_string()).collect();
    let script = format!(
        "for i in {}; do /bin/true; done; exec {} 2 200 5 5",
        list.join(" "),
        exe.display()
    );
    let out = record(dir, std::path::Path::new("/bin/sh"), &["-c", &script]);
    assert!(out.success(), "record failed:\n{}", out.describe());
}

/// The collector's calibration is measured once per recording: the first
/// process measures it and writes `calibration` into the recording
/// directory, and every later process takes its figures from there (about
/// 0.3 ms of each process's start otherwise; docs/benchmarks.md, "A
/// build's processes"). A shell that starts three short processes and
/// then execs a lock program: five traces, one set of figures.
#[test]
fn the_calibration_is_measured_once_and_shared_by_the_later_processes() {
    require_tool!("gcc");
    let tmp = tempdir();
    let dir = tmp.path().join("cal.data");
    record_short_processes_then_locks(&dir, 3);
    let file = std::fs::read(dir.join("calibration")).expect("the shared calibration");
    assert_eq!(file.len(), 104);
    assert_eq!(&file[..8], b"CNTDCAL2");
    let traces: Vec<contend_trace::reader::LockTrace> = trace_files(&dir)
        .iter()
        .map(|p| contend_trace::reader::LockTrace::open(p).unwrap())
        .collect();
    assert_eq!(
        traces.len(),
        5,
        "the shell, three /bin/true and the program"
    );
    let figures = |t: &contend_trace::reader::LockTrace| {
        (
            t.cost_record_ps,
            t.calibration_ns,
            t.cost_window_record_ps,
            t.cost_record_mt_ps,
        )
    };
    let first = figures(&traces[0]);
    assert!(first.0 > 0 && first.1 > 0 && first.3 > 0, "{first:?}");
    for t in &traces {
        assert_eq!(figures(t), first, "{}", t.path.display());
    }
    // the file holds them
    let ps = u32::from_le_bytes(file[12..16].try_into().unwrap());
    assert_eq!(ps, first.0);
    let mt_ps = u32::from_le_bytes(file[32..36].try_into().unwrap());
    assert_eq!(mt_ps, first.3);
}

/// A `calibration` file that is cut short, of another mode or of another
/// machine (a recording directory on a shared file system) is no
/// calibration: the process measures its own (and replaces the file); a
/// whole one is taken as it is. Run without the launcher (the collector
/// preloaded with `CONTEND_DIR`), so that the file is there before the
/// first process starts.
#[test]
fn a_damaged_shared_calibration_is_measured_again() {
    require_tool!("gcc");
    let exe = build("accuracy_mutex.c", &[]);
    let collector = contend_collector::install_lock_collector().unwrap();
    let run = |dir: &std::path::Path, file: &[u8]| {
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(dir.join("calibration"), file).unwrap();
        let mut cmd = std::process::Command::new(&exe);
        cmd.args(["1", "100", "1", "1"])
            .env("LD_PRELOAD", &collector)
            .env("CONTEND_DIR", dir);
        let out = run_timeout(cmd, std::time::Duration::from_secs(60));
        assert!(out.success(), "{}", out.describe());
        let traces = trace_files(dir);
        assert_eq!(traces.len(), 1, "{traces:?}");
        let t = contend_trace::reader::LockTrace::open(&traces[0]).unwrap();
        (
            (t.cost_record_ps, t.cost_record_mt_ps),
            std::fs::read(dir.join("calibration")).unwrap(),
        )
    };
    // magic, light, record, count, calibration ns, two windows, the
    // multi-threaded record and count
    let fields = |magic: &[u8], values: &[u32]| {
        let mut f = magic.to_vec();
        for v in values {
            f.extend_from_slice(&v.to_le_bytes());
        }
        f
    };
    let mut whole = fields(b"CNTDCAL2", &[0, 777, 0, 123_456, 0, 0, 555, 0]);
    // the layout before the multi-threaded figures (2026-12-01)
    let mut older = fields(b"CNTDCAL1", &[0, 777, 0, 123_456, 0, 0]);
    // this machine's name (uname), NUL-padded to 64 bytes
    let mut host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .unwrap()
        .trim_end()
        .as_bytes()
        .to_vec();
    host.resize(64, 0);
    let mut elsewhere = whole.clone();
    elsewhere.extend_from_slice(&[b'x'; 63]);
    elsewhere.push(0);
    whole.extend_from_slice(&host);
    older.extend_from_slice(&host);
    let tmp = tempdir();
    // whole: taken
    let (ps, after) = run(&tmp.path().join("whole"), &whole);
    assert_eq!(ps, (777, 555));
    assert_eq!(after, whole);
    // cut short, written in light mode (here default), on another machine
    // or in the older layout: measured again
    let mut light = whole.clone();
    light[8] = 1;
    for (name, file) in [
        ("short", &whole[..20]),
        ("light", &light[..]),
        ("elsewhere", &elsewhere[..]),
        ("older", &older[..]),
    ] {
        let ((ps, mt_ps), after) = run(&tmp.path().join(name), file);
        assert!(ps > 0 && ps != 777 && mt_ps > 0, "{name}: {ps} {mt_ps}");
        assert_eq!(after.len(), 104, "{name}");
        assert_eq!(
            u32::from_le_bytes(after[12..16].try_into().unwrap()),
            ps,
            "{name}: the file replaced"
        );
    }
}

/// The collector tells apart the operations a process made while it had
/// one thread (glibc's non-atomic lock path, and the collector's own
/// single-threaded path) from the later ones, chunk by chunk, and the
/// calibration measures both paths (docs/metrics.md, "Recording cost").
/// tests/programs/threads_later.c: 100,000 pairs on one thread, then
/// (second run) a thread and 20,000 pairs on each.
///   - Never a second thread: every operation is single-threaded, in both
///     modes.
///   - A second thread later: the 200,000 records made before it are
///     single-threaded but for the chunk the main thread was writing when
///     the thread started (it is costed as multi-threaded whole: at most
///     one 128 KiB chunk, 16,376 records); none of the 80,000 after it.
#[test]
fn operations_before_the_second_thread_are_single_threaded() {
    require_tool!("gcc");
    let exe = build("threads_later.c", &[]);
    let tmp = tempdir();
    for light in [false, true] {
        let dir = tmp.path().join(format!("alone-{light}"));
        crate::light::record_as(light, &dir, &exe, &["100000", "0"]);
        let r = &report_json(&dir)["recording"];
        // two records per pair, or one count
        let ops = r["cost"]["operations"].as_u64().unwrap();
        assert!(
            ops >= if light { 100_000 } else { 200_000 },
            "light {light}: {r}"
        );
        assert_eq!(
            r["cost"]["single_threaded_operations"].as_u64(),
            Some(ops),
            "light {light}: {r}"
        );
        let cal = &r["calibration"];
        assert!(cal["record_ns"].as_f64().unwrap() > 0.0, "{cal}");
        assert!(
            cal["multi_threaded_record_ns"].as_f64().unwrap() > 0.0,
            "{cal}"
        );
        if light {
            assert!(
                cal["multi_threaded_counted_pair_ns"].as_f64().unwrap() > 0.0,
                "{cal}"
            );
        }
    }
    let dir = tmp.path().join("later");
    crate::light::record_as(false, &dir, &exe, &["100000", "20000"]);
    let r = &report_json(&dir)["recording"];
    // (and the thread's start, end and join: a few records more)
    let ops = r["cost"]["operations"].as_u64().unwrap();
    assert!((280_000..280_010).contains(&ops), "{r}");
    let single = r["cost"]["single_threaded_operations"].as_u64().unwrap();
    assert!(
        (200_000 - 16_376..=200_000).contains(&single),
        "{single} of the 200,000 records before the thread: {r}"
    );
}
