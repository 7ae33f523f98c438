//! Limited recordings: `record --start-after/--duration` (a window of the
//! run) and `--max-size` (a cap on the trace data). The program
//! (`phases.c`) runs three phases on three locks, apart in time, and
//! prints when each ran (CLOCK_MONOTONIC, the clock of `meta.json`) and
//! how many acquisitions it made, so what the window must hold is known.

use std::path::Path;
use std::process::Command;

use crate::common::*;
use serde_json::Value;

/// One phase as the program measured it.
#[derive(Debug, Clone, Copy)]
struct Phase {
    start_ns: u64,
    end_ns: u64,
    acquisitions: u64,
}

fn phases(stdout: &str) -> Vec<(String, Phase)> {
    stdout
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() == 5 && f[0] == "phase").then(|| {
                (
                    f[1].to_string(),
                    Phase {
                        start_ns: f[2].parse().unwrap(),
                        end_ns: f[3].parse().unwrap(),
                        acquisitions: f[4].parse().unwrap(),
                    },
                )
            })
        })
        .collect()
}

fn record_with(dir: &Path, exe: &Path, flags: &[&str], args: &[&str]) -> Output {
    let mut cmd = Command::new(contend_bin());
    cmd.arg("record")
        .arg("-o")
        .arg(dir)
        .arg("--force")
        .args(flags)
        .arg("--")
        .arg(exe)
        .args(args);
    run_timeout(cmd, RUN_TIMEOUT)
}

/// Acquisitions of lock `name` in the report (0 when it is not there).
fn events_of(report: &Value, name: &str) -> u64 {
    report["locks"]["by_lock"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|l| l["name"] == name)
        .map(|l| l["events"].as_u64().unwrap())
        .sum()
}

/// A window of 0.45–1.05 s holds phase B (0.6–0.9 s) whole and nothing of
/// A (0–0.3 s) or C (1.2–1.5 s): every acquisition of B is in the report,
/// none of A or C. The window's true edges are the ones the launcher
/// wrote in meta.json; a run in which a loaded machine moved a phase
/// across an edge is repeated (up to 3 runs); the rules are checked on the
/// phases the window holds whole or misses whole in any case.
#[test]
fn window_records_only_the_phase_inside_it() {
    let exe = build("phases.c", &[]);
    let tmp = tempdir();
    let mut checked_b = false;
    for attempt in 1..=3 {
        let dir = tmp.path().join(format!("win{attempt}"));
        let out = record_with(
            &dir,
            &exe,
            &["--start-after", "450ms", "--duration", "600ms"],
            &["300", "300", "20"],
        );
        assert!(out.success(), "{}", out.describe());
        let m = meta(&dir);
        let limits = &m["limits"];
        assert_eq!(limits["start_after_ns"], 450_000_000u64, "{m}");
        assert_eq!(limits["duration_ns"], 600_000_000u64, "{m}");
        let opened = limits["window_opened_ns"].as_u64().expect("window opened");
        let closed = limits["window_closed_ns"].as_u64().expect("window closed");
        let start = m["start_monotonic_ns"].as_u64().unwrap();
        assert!(opened >= start + 450_000_000, "opened early: {m}");
        assert!(closed >= start + 1_050_000_000, "closed early: {m}");

        let report = report_json(&dir);
        let run_limits = &report["run"]["limits"];
        assert_eq!(
            run_limits["window_start_ns"],
            opened - start,
            "{run_limits}"
        );
        assert_eq!(run_limits["window_end_ns"], closed - start, "{run_limits}");
        let mut inside_whole = Vec::new();
        for (name, p) in phases(&out.stdout) {
            let lock = format!("lock_{name}");
            let got = events_of(&report, &lock);
            if p.start_ns > opened && p.end_ns < closed {
                assert_eq!(got, p.acquisitions, "{lock} inside the window: {p:?}");
                inside_whole.push(name);
            } else if p.end_ns < opened || p.start_ns > closed {
                assert_eq!(got, 0, "{lock} outside the window: {p:?}");
            }
        }
        if inside_whole == ["b"] {
            checked_b = true;
            break;
        }
        eprintln!("attempt {attempt}: phases wholly inside the window: {inside_whole:?}; again");
    }
    if !checked_b {
        eprintln!(
            "SKIP the layout check: phase B never fell wholly inside the window (loaded machine)"
        );
    }
    // the text header says what the recording covers
    let dir = tmp.path().join("win1");
    let text = report_raw(&dir, &[] as &[&str]);
    assert!(
        text.stdout
            .contains("after the start only (--start-after/--duration)"),
        "{}",
        text.describe()
    );
}

/// A run that ends before its window opens is a valid recording that says
/// so.
#[test]
fn window_after_the_end_records_nothing_and_says_so() {
    let exe = build("phases.c", &[]);
    let tmp = tempdir();
    let dir = tmp.path().join("late");
    let out = record_with(&dir, &exe, &["--start-after", "30s"], &["20", "10", "20"]);
    assert!(out.success(), "{}", out.describe());
    assert!(out.elapsed.as_secs() < 20, "the program is not held up");
    let report = report_json(&dir);
    assert_eq!(report["run"]["limits"]["window_start_ns"], Value::Null);
    for name in ["lock_a", "lock_b", "lock_c"] {
        assert_eq!(events_of(&report, name), 0);
    }
    let text = report_raw(&dir, &[] as &[&str]);
    assert!(
        text.stdout
            .contains("the run ended before the window opened"),
        "{}",
        text.describe()
    );
}

/// A size cap stops recording in time (the trace data stays within it), the
/// recording stays valid and the report says when the cap was reached;
/// everything recorded before it is complete.
#[test]
fn size_cap_stops_recording_and_the_report_says_so() {
    let exe = build("phases.c", &[]);
    let tmp = tempdir();
    let dir = tmp.path().join("cap");
    // no spacing: phase A alone makes far more than 256 KiB of records
    let out = record_with(&dir, &exe, &["--max-size", "256K"], &["200", "50", "0"]);
    assert!(out.success(), "{}", out.describe());
    assert!(
        out.stderr
            .contains("size cap (--max-size 262144 bytes) was reached"),
        "{}",
        out.describe()
    );
    let m = meta(&dir);
    let capped = m["limits"]["capped_ns"].as_u64().expect("capped_ns");
    let ph = phases(&out.stdout);
    let a = ph.iter().find(|(n, _)| n == "a").unwrap().1;
    assert!(
        capped >= a.start_ns && capped <= a.end_ns,
        "capped during phase A: {m}"
    );
    // the chunks in the trace files stay within the cap
    for t in trace_files(&dir) {
        // header: chunk_size at byte 24, chunks_claimed at 28 (u32 each)
        let head = std::fs::read(&t).unwrap();
        let word = |o: usize| u32::from_ne_bytes(head[o..o + 4].try_into().unwrap()) as u64;
        let chunk_bytes = word(24) * word(28);
        assert!(
            chunk_bytes <= 262_144,
            "{}: {chunk_bytes} bytes",
            t.display()
        );
    }
    let report = report_json(&dir);
    let got = events_of(&report, "lock_a");
    assert!(
        got > 1000 && got < a.acquisitions,
        "{got} of {}",
        a.acquisitions
    );
    assert_eq!(events_of(&report, "lock_b"), 0);
    assert_eq!(events_of(&report, "lock_c"), 0);
    assert_eq!(report["run"]["limits"]["max_bytes"], 262_144);
    assert!(report["run"]["limits"]["capped_at_ns"].as_u64().is_some());
    assert!(warnings(&report).contains("size cap"), "{report}");
    let text = report_raw(&dir, &[] as &[&str]);
    assert!(
        text.stdout
            .contains("the size cap of 256.0 KiB was reached"),
        "{}",
        text.describe()
    );
}

/// The window flags belong to started programs; `--max-size` needs a
/// size.
#[test]
fn limit_flags_are_checked() {
    let mut cmd = Command::new(contend_bin());
    cmd.args(["record", "-p", "1", "--start-after", "1s"]);
    let out = run_timeout(cmd, RUN_TIMEOUT);
    assert_eq!(out.code(), Some(2), "{}", out.describe());
    assert!(out.stderr.contains("--start-after"), "{}", out.describe());
    let mut cmd = Command::new(contend_bin());
    cmd.args(["record", "--max-size", "lots", "--", "true"]);
    let out = run_timeout(cmd, RUN_TIMEOUT);
    assert_eq!(out.code(), Some(2), "{}", out.describe());
    assert!(
        out.stderr.contains("expected a number"),
        "{}",
        out.describe()
    );
}

/// A tiny run's traces take on disk about what was written (the unwritten
/// parts of the index tables and chunks are released once the process has
/// ended), and read the same. Recorded on tmpfs where there is one, where
/// the collector fills the tables in at start.
#[test]
fn a_tiny_run_takes_little_room_on_disk() {
    use std::os::unix::fs::MetadataExt;
    let exe = build("phases.c", &[]);
    let shm = Path::new("/dev/shm");
    let tmp = if shm.is_dir() {
        tempfile::Builder::new()
            .prefix("contend-e2e-")
            .tempdir_in(shm)
            .unwrap()
    } else {
        tempdir()
    };
    let dir = tmp.path().join("tiny");
    let out = record_with(&dir, &exe, &[], &["10", "10", "20"]);
    assert!(out.success(), "{}", out.describe());
    let traces = trace_files(&dir);
    assert_eq!(traces.len(), 1);
    let md = std::fs::metadata(&traces[0]).unwrap();
    let on_disk = md.blocks() * 512;
    assert!(
        on_disk < 256 * 1024,
        "{}: {on_disk} bytes on disk (length {})",
        traces[0].display(),
        md.len()
    );
    let report = report_json(&dir);
    for (name, p) in phases(&out.stdout) {
        assert_eq!(events_of(&report, &format!("lock_{name}")), p.acquisitions);
    }
}

/// `report --from/--to` keeps the lock events acquired in that part of the
/// run: around phase B (as the program measured it, 150 ms of gap on
/// either side) the report has all of B's acquisitions and none of A's or
/// C's; the header's filter line says so.
#[test]
fn report_time_window_keeps_the_events_acquired_in_it() {
    let exe = build("phases.c", &[]);
    let tmp = tempdir();
    let dir = tmp.path().join("whole");
    let out = record_with(&dir, &exe, &[], &["300", "300", "20"]);
    assert!(out.success(), "{}", out.describe());
    let start = meta(&dir)["start_monotonic_ns"].as_u64().unwrap();
    let ph = phases(&out.stdout);
    let b = ph.iter().find(|(n, _)| n == "b").unwrap().1;
    let from = format!("{}ns", b.start_ns - start - 150_000_000);
    let to = format!("{}ns", b.end_ns - start + 150_000_000);
    let report = report_json_with(&dir, &["--from", from.as_str(), "--to", to.as_str()]);
    assert_eq!(events_of(&report, "lock_b"), b.acquisitions);
    assert_eq!(events_of(&report, "lock_a"), 0);
    assert_eq!(events_of(&report, "lock_c"), 0);
    let filters = report["locks"]["filters"].to_string();
    assert!(filters.contains("after the start"), "{filters}");
    // the whole run has all three
    let all = report_json(&dir);
    for (name, p) in &ph {
        assert_eq!(events_of(&all, &format!("lock_{name}")), p.acquisitions);
    }
    let bad = report_raw(&dir, &["--from", "2s", "--to", "1s"]);
    assert_eq!(bad.code(), Some(2), "{}", bad.describe());
    assert!(
        bad.stderr.contains("--to must be later than --from"),
        "{}",
        bad.describe()
    );
}
