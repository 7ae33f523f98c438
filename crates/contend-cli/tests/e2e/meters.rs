//! `contend meters`: the JSON summary of every meter, a clean stop on
//! SIGTERM (blackboard removed), the lock meters of a recorded program
//! against the post-mortem report, and bad input.

use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::*;
use serde_json::Value;

fn meters_command(bb: &std::path::Path, extra: &[&str]) -> Command {
    let mut cmd = Command::new(contend_bin());
    cmd.arg("meters")
        .arg("--blackboard")
        .arg(bb)
        .args(["--probe-chain-mb", "64"])
        .args(extra);
    cmd
}

fn meter<'a>(json: &'a Value, name: &str, scope: &str) -> Option<&'a Value> {
    json["meters"]
        .as_array()?
        .iter()
        .find(|m| m["name"] == name && m["scope"] == scope)
}

/// Waits until the daemon publishes its first meters (its probe's chain is
/// built then).
fn wait_for_meters(path: &std::path::Path, daemon: &mut Running) {
    let t = Instant::now();
    loop {
        if let Ok(r) = contend_meters::Reader::open(path) {
            if r.meters_used() > 0 {
                return;
            }
        }
        if let Some(o) = daemon.wait_for(Duration::from_millis(20)) {
            panic!("contend meters ended before publishing: {}", o.describe());
        }
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "contend meters published nothing in 60 s on {}",
            path.display()
        );
    }
}

#[test]
fn meters_json_lists_every_meter_and_removes_the_blackboard() {
    let _g = serial();
    let tmp = tempdir();
    let bb = tmp.path().join("bb");
    let out = run_timeout(
        meters_command(
            &bb,
            &["--interval", "2ms", "--duration", "1s", "--format", "json"],
        ),
        Duration::from_secs(60),
    );
    assert!(out.success(), "{}", out.describe());
    let json: Value = serde_json::from_str(&out.stdout).expect("JSON");
    for (name, unit, scope) in [
        ("memory_latency", "ns", "machine"),
        ("cpu_utilisation", "fraction", "machine"),
        ("cpu_utilisation", "fraction", "cpu:0"),
        ("run_queue", "tasks", "machine"),
    ] {
        let m = meter(&json, name, scope).unwrap_or_else(|| panic!("no {name} {scope}: {json}"));
        assert_eq!(m["unit"], unit, "{m}");
        let (avg, min, max) = (
            m["avg"].as_f64().unwrap(),
            m["min"].as_f64().unwrap(),
            m["max"].as_f64().unwrap(),
        );
        assert!(min <= avg && avg <= max, "{m}");
        assert!(u(m, "samples") > 0, "{m}");
    }
    // Memory latency is a main-memory latency: tens to hundreds of ns.
    let lat = meter(&json, "memory_latency", "machine").unwrap();
    assert!(lat["min"].as_f64().unwrap() > 10.0, "{lat}");
    let util = meter(&json, "cpu_utilisation", "machine").unwrap();
    assert!(util["max"].as_f64().unwrap() <= 1.0, "{util}");
    assert!(json["daemon_cpu"].as_f64().unwrap() > 0.0);
    assert!(!bb.exists(), "the blackboard stays after a clean stop");
    assert!(!tmp.path().join("bb.lock").exists());
}

#[test]
fn meters_stop_on_sigterm_and_a_second_daemon_is_refused() {
    let _g = serial();
    let tmp = tempdir();
    let bb = tmp.path().join("bb");
    let mut first = Running::spawn(meters_command(&bb, &[]));
    wait_for_meters(&bb, &mut first);
    let second = run_timeout(
        meters_command(&bb, &["--duration", "1s"]),
        Duration::from_secs(60),
    );
    assert_eq!(second.code(), Some(2), "{}", second.describe());
    assert!(
        second
            .stderr
            .contains("in use by another contend meters daemon")
            && second.stderr.contains(&format!("pid {}", first.pid())),
        "{}",
        second.stderr
    );
    assert!(
        bb.exists(),
        "the refused daemon removed the first one's blackboard"
    );
    assert!(kill(first.pid(), 15));
    let out = first
        .wait_for(Duration::from_secs(30))
        .expect("contend meters stops on SIGTERM");
    assert!(out.success(), "{}", out.describe());
    assert!(out.stdout.contains("memory_latency"), "{}", out.stdout);
    assert!(!bb.exists(), "the blackboard stays after SIGTERM");
}

#[test]
fn bad_meters_input_is_a_clear_error() {
    let tmp = tempdir();
    let bb = tmp.path().join("bb");
    for (args, want) in [
        (
            vec!["--cpus", "999", "--duration", "1s"],
            "--cpus 999: CPU 999 does not exist or is not allowed",
        ),
        (
            vec!["--probe-cpu", "999", "--duration", "1s"],
            "--probe-cpu 999: CPU 999 does not exist",
        ),
        (
            vec!["--calibration", "/nonexistent/cal.json", "--duration", "1s"],
            "calibration file /nonexistent/cal.json: does not exist; run `contend meters calibrate",
        ),
        (
            vec!["--trigger", "memory_latency=1", "--duration", "1s"],
            "expected METER=HIGH,LOW",
        ),
        (
            vec!["--trigger", "memory_latency=100,200", "--duration", "1s"],
            "low (200) must not exceed high (100)",
        ),
        (
            vec!["--interval", "10us", "--duration", "1s"],
            "must be from 100 us to 60 s",
        ),
    ] {
        let out = run_timeout(meters_command(&bb, &args), Duration::from_secs(60));
        assert_eq!(out.code(), Some(2), "{args:?}: {}", out.describe());
        assert!(out.stderr.contains(want), "{args:?}: {}", out.stderr);
        assert!(!out.stderr.contains("panicked"), "{}", out.stderr);
        assert!(!bb.exists(), "{args:?} left a blackboard behind");
    }
    let cal = tmp.path().join("cal.json");
    std::fs::write(&cal, "{ not json").unwrap();
    let out = run_timeout(
        meters_command(
            &bb,
            &["--calibration", cal.to_str().unwrap(), "--duration", "1s"],
        ),
        Duration::from_secs(60),
    );
    assert_eq!(out.code(), Some(2), "{}", out.describe());
    assert!(
        out.stderr
            .contains(&format!("calibration file {}", cal.display())),
        "{}",
        out.stderr
    );
}

/// The lock meters of a recorded program agree with the post-mortem
/// report: the run's total of `lock_wait_rate` (wait seconds) and of
/// `lock_contention_rate` (contended acquisitions) of the process within
/// 5 % of the report's `locks.summary` wait and contended events. Both
/// read the same trace with the same rules (docs/meters.md, "Lock
/// meters"); the meters' last reading comes after the program ended, so
/// the totals are of the whole run (the 5 % covers a request pending at
/// the reading before the last, counted up to that reading).
#[test]
fn lock_meters_agree_with_the_report() {
    let _g = serial();
    let exe = build("accuracy_mutex.c", &[]);
    let tmp = tempdir();
    let bb = tmp.path().join("bb");
    let rec = tmp.path().join("rec");
    let mut daemon = Running::spawn(meters_command(&bb, &["--format", "json"]));
    wait_for_meters(&bb, &mut daemon);
    let out = record(&rec, &exe, &["4", "1500", "20", "10"]);
    assert!(out.success(), "{}", out.describe());
    // The follower reads every 100 ms and once more after the exit.
    std::thread::sleep(Duration::from_millis(600));
    assert!(kill(daemon.pid(), 15));
    let d = daemon
        .wait_for(Duration::from_secs(30))
        .expect("contend meters stops on SIGTERM");
    assert!(d.success(), "{}", d.describe());
    let json: Value = serde_json::from_str(&d.stdout).expect("JSON");
    let meters = json["meters"].as_array().unwrap();
    // The target's pid: its trace's name (other programs recorded on the
    // machine at the same time have meters too).
    let traces = trace_files(&rec);
    assert_eq!(traces.len(), 1, "{traces:?}");
    let pid: u32 = traces[0]
        .file_stem()
        .and_then(|s| s.to_str())
        .and_then(|s| s.split('.').next())
        .and_then(|s| s.parse().ok())
        .expect("<pid>.ctrace");
    let scope = format!("process:{pid}");
    let of_process = |name: &str| {
        meters
            .iter()
            .find(|m| m["name"] == name && m["scope"] == scope.as_str())
            .unwrap_or_else(|| panic!("no {name} of the recorded process: {json}"))
    };
    let wait_s = of_process("lock_wait_rate")["total"].as_f64().unwrap();
    let contended = of_process("lock_contention_rate")["total"]
        .as_f64()
        .unwrap();
    let report = report_json(&rec);
    let s = &report["locks"]["summary"];
    let (rw, rc) = (
        u(s, "wait_ns") as f64 / 1e9,
        u(s, "contended_events") as f64,
    );
    eprintln!("meters: wait {wait_s:.6} s, {contended} contended; report: {rw:.6} s, {rc}");
    assert!(rw > 0.0 && rc > 0.0, "the program had no contention: {s}");
    assert!(
        (wait_s - rw).abs() <= 0.05 * rw,
        "wait: meters {wait_s} s, report {rw} s"
    );
    assert!(
        (contended - rc).abs() <= 0.05 * rc,
        "contended: meters {contended}, report {rc}"
    );
}

fn tmux(args: &[&str]) -> std::process::Output {
    Command::new("tmux").args(args).output().expect("tmux runs")
}

/// `contend watch` in a tmux pane (a real terminal): it starts, shows the
/// meters of a running daemon, quits on `q` with status 0, and leaves the
/// terminal as it was (the alternate screen is left: the shell's lines
/// come back and no table remains).
#[test]
fn watch_shows_the_meters_and_quits_on_q() {
    require_tool!("tmux");
    let _g = serial();
    let tmp = tempdir();
    let bb = tmp.path().join("bb");
    let mut daemon = Running::spawn(meters_command(&bb, &[]));
    wait_for_meters(&bb, &mut daemon);
    let session = format!("contend-watch-{}", std::process::id());
    let sock = tmp.path().join("tmux.sock");
    let s = sock.to_str().unwrap();
    let t = |args: &[&str]| {
        let mut v = vec!["-S", s];
        v.extend_from_slice(args);
        tmux(&v)
    };
    assert!(t(&[
        "new-session",
        "-d",
        "-s",
        &session,
        "-x",
        "120",
        "-y",
        "40",
        "sh"
    ])
    .status
    .success());
    let cmd = format!(
        "echo BEFORE-WATCH; {} watch --blackboard {} --refresh 100ms; echo WATCH-EXIT=$?",
        contend_bin().display(),
        bb.display()
    );
    t(&["send-keys", "-t", &session, &cmd, "Enter"]);
    let capture =
        || String::from_utf8_lossy(&t(&["capture-pane", "-p", "-t", &session]).stdout).into_owned();
    let start = Instant::now();
    let mut screen = capture();
    // The /proc meters come every 100 ms, after the first probe values.
    while ![
        "contend watch",
        "memory_latency",
        "cpu_utilisation",
        "run_queue",
    ]
    .iter()
    .all(|w| screen.contains(w))
    {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "contend watch never showed the meters:\n{screen}"
        );
        std::thread::sleep(Duration::from_millis(100));
        screen = capture();
    }
    assert!(screen.contains("live"), "{screen}");
    assert!(
        screen.contains("cpu_utilisation") && screen.contains("run_queue"),
        "{screen}"
    );
    t(&["send-keys", "-t", &session, "q"]);
    let start = Instant::now();
    let mut after = capture();
    // The echoed command line itself holds "WATCH-EXIT=$?": wait for the
    // line the shell prints after watch returned.
    let exited = |screen: &str| screen.lines().any(|l| l.starts_with("WATCH-EXIT="));
    while !exited(&after) {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "contend watch did not quit on q:\n{after}"
        );
        std::thread::sleep(Duration::from_millis(100));
        after = capture();
    }
    t(&["kill-session", "-t", &session]);
    assert!(after.contains("WATCH-EXIT=0"), "{after}");
    assert!(
        after.contains("BEFORE-WATCH"),
        "the shell's screen did not come back:\n{after}"
    );
    assert!(
        !after.contains("memory_latency"),
        "the view stayed on the terminal:\n{after}"
    );
    assert!(kill(daemon.pid(), 15));
    assert!(daemon.wait_for(Duration::from_secs(30)).is_some());
    // A blackboard that does not exist is a clear error, not a blank screen.
    let out = run_timeout(
        {
            let mut c = Command::new(contend_bin());
            c.args(["watch", "--blackboard"])
                .arg(tmp.path().join("none"));
            c
        },
        Duration::from_secs(30),
    );
    assert_eq!(out.code(), Some(2), "{}", out.describe());
    assert!(out.stderr.contains("no such blackboard"), "{}", out.stderr);
}
