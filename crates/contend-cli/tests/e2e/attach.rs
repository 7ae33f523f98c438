//! End-to-end tests of `contend record -p PID [--duration S]`: sampling a
//! running process (service time and counters, no lock tracing) until it
//! exits, the duration ends, or the launcher is interrupted; the process
//! is left unharmed.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;
use serde_json::Value;

fn f(v: &Value, path: &str) -> f64 {
    let mut cur = v;
    for key in path.split('.') {
        cur = &cur[key];
    }
    cur.as_f64()
        .unwrap_or_else(|| panic!("`{path}` is not a number: {cur}"))
}

/// A child that is busy for a while and sleeps for a while, forever.
fn busy_and_sleeping() -> std::process::Child {
    Command::new("sh")
        .arg("-c")
        .arg("while :; do i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done; sleep 0.05; done")
        .stdout(Stdio::null())
        .spawn()
        .expect("start sh")
}

fn attach_command(pid: u32, rec: &std::path::Path, extra: &[&str]) -> Command {
    let mut cmd = Command::new(contend_bin());
    cmd.args(["record", "-p", &pid.to_string(), "-o"])
        .arg(rec)
        .args(extra);
    cmd
}

#[test]
fn attach_for_a_duration_samples_and_leaves_the_process_running() {
    let _serial = serial();
    let mut target = busy_and_sleeping();
    std::thread::sleep(Duration::from_millis(100));
    let exe = std::fs::read_link(format!("/proc/{}/exe", target.id())).expect("the shell's exe");
    let dir = tempdir();
    let rec = dir.path().join("attach.data");
    let out = run_timeout(
        attach_command(target.id(), &rec, &["--duration", "1s"]),
        RUN_TIMEOUT,
    );
    let alive = target.try_wait().unwrap().is_none();
    let _ = target.kill();
    let _ = target.wait();
    assert!(out.success(), "{}", out.describe());
    assert!(alive, "the attached process did not survive");
    assert!(out.stderr.contains("duration ended"), "{}", out.describe());
    assert!(out.elapsed < Duration::from_secs(10), "{}", out.describe());

    let m = meta(&rec);
    assert_eq!(m["complete"], true, "{m}");
    assert_eq!(m["pid"], target.id(), "{m}");
    assert_eq!(m["attach"]["ended"], "duration ended", "{m}");
    assert!((f(&m, "wall_ns") / 1e9 - 1.0).abs() < 0.2, "{m}");
    // the sampler says what it did, as for a launched program
    let source = m["sampler"]["source"].as_str().unwrap_or_default();
    assert!(
        source == "sched-events" || source == "schedstat",
        "{}",
        m["sampler"]
    );

    let r = report_json(&rec);
    let s = &r["service"];
    // 100 ticks in the 1 s; when the machine's run queue is longer than
    // its CPUs the sampler's own wake-ups are delayed too (45 samples were
    // seen at a run queue of 31 on 2 CPUs): the count is then only printed
    if f(s, "run_queue_mean") <= f(s, "cpus") {
        assert!(f(s, "samples") > 50.0, "{s}");
    } else {
        eprintln!(
            "machine loaded (run queue {:.1} on {} CPUs): {} samples in 1 s, not checked",
            f(s, "run_queue_mean"),
            f(s, "cpus"),
            f(s, "samples")
        );
    }
    // The shell loop is busy part of the time; what it ran before the
    // attach is not counted.
    let cpu = f(s, "cpu_s");
    assert!(cpu > 0.05 && cpu < 1.1, "{s}");
    assert!(
        r["locks"]["no_events_reason"]
            .as_str()
            .unwrap()
            .contains("attached to a running process"),
        "{}",
        r["locks"]
    );
    // modules.json lists what the process had mapped, from
    // /proc/PID/maps at the attach: the shell's executable with its build ID
    let modules: Value = serde_json::from_slice(
        &std::fs::read(rec.join("modules.json")).expect("an attach recording has modules.json"),
    )
    .expect("modules.json is JSON");
    let listed = modules["modules"].as_array().expect("modules");
    let shell = listed
        .iter()
        .find(|m| m["path"] == exe.to_string_lossy().as_ref())
        .unwrap_or_else(|| panic!("{} in {modules:#}", exe.display()));
    assert!(shell["build_id"].is_string(), "{shell:#}");
    assert!(
        listed
            .iter()
            .any(|m| m["path"].as_str().is_some_and(|p| p.contains("libc.so"))),
        "{modules:#}"
    );

    let c = &r["counters"];
    assert!(c["scope"].as_str().unwrap().contains("attach"), "{c}");
    // task_clock counts the same threads from the same moment.
    let tc = f(c, "available.task_clock.value") / 1e9;
    assert!(
        (tc - cpu).abs() < 0.1 + 0.2 * cpu,
        "task_clock {tc} s, service {cpu} s: {c}"
    );
}

#[test]
fn attach_ends_when_the_process_exits() {
    let mut target = Command::new("sleep").arg("0.5").spawn().expect("sleep");
    let dir = tempdir();
    let rec = dir.path().join("exit.data");
    let start = Instant::now();
    let out = run_timeout(
        attach_command(target.id(), &rec, &["--duration", "30s"]),
        RUN_TIMEOUT,
    );
    let _ = target.wait();
    assert!(out.success(), "{}", out.describe());
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "{}",
        out.describe()
    );
    assert_eq!(meta(&rec)["attach"]["ended"], "process exited");
    assert!(report_json(&rec)["service"]["samples"].as_u64().unwrap() > 5);
}

#[test]
fn interrupting_the_launcher_completes_the_recording() {
    let mut target = Command::new("sleep").arg("30").spawn().expect("sleep");
    let dir = tempdir();
    let rec = dir.path().join("int.data");
    let mut running = Running::spawn(attach_command(target.id(), &rec, &[]));
    std::thread::sleep(Duration::from_millis(500));
    assert!(kill(running.pid(), 2));
    let out = running
        .wait_for(Duration::from_secs(20))
        .expect("contend ended after SIGINT");
    let alive = target.try_wait().unwrap().is_none();
    let _ = target.kill();
    let _ = target.wait();
    assert!(out.success(), "{}", out.describe());
    assert!(alive, "SIGINT reached the attached process");
    let m = meta(&rec);
    assert_eq!(m["complete"], true, "{m}");
    assert_eq!(m["attach"]["ended"], "interrupted by signal 2", "{m}");
}

#[test]
fn attach_errors() {
    let dir = tempdir();
    let rec = dir.path().join("none.data");
    // No such process: nothing is created.
    let out = run_timeout(attach_command(4_000_000, &rec, &[]), RUN_TIMEOUT);
    assert_eq!(out.code(), Some(2), "{}", out.describe());
    assert!(out.stderr.contains("no such process"), "{}", out.describe());
    assert!(!rec.exists());
    // -p and a command are refused (--duration with a command is the
    // recording window, tests/e2e/limits.rs).
    let mut cmd = attach_command(1, &rec, &["--", "true"]);
    cmd.stdin(Stdio::null());
    let out = run_timeout(cmd, RUN_TIMEOUT);
    assert_eq!(out.code(), Some(2), "{}", out.describe());
    assert!(!rec.exists());
}

/// Regression: `--duration 1` (a bare number) sampled for 1 ns ("0.000 s")
/// while `contend stress memory --duration 1` ran for 1 s. One duration
/// parser now reads every duration flag, and a bare number is seconds.
#[test]
fn a_bare_duration_is_seconds() {
    let _serial = serial();
    let mut target = busy_and_sleeping();
    let dir = tempdir();
    let rec = dir.path().join("bare.data");
    let out = run_timeout(
        attach_command(target.id(), &rec, &["--duration", "1"]),
        RUN_TIMEOUT,
    );
    let _ = target.kill();
    let _ = target.wait();
    assert!(out.success(), "{}", out.describe());
    let wall = f(&meta(&rec), "wall_ns") / 1e9;
    assert!(
        (wall - 1.0).abs() < 0.2,
        "sampled {wall} s for --duration 1"
    );
    assert!(
        out.elapsed >= Duration::from_millis(900),
        "{}",
        out.describe()
    );
    // A unit the parser does not know is an error naming the flag.
    let out = run_timeout(
        attach_command(
            std::process::id(),
            &dir.path().join("x.data"),
            &["--duration", "5 parsecs"],
        ),
        RUN_TIMEOUT,
    );
    assert_eq!(out.code(), Some(2), "{}", out.describe());
    assert!(
        out.stderr.contains("--duration") && out.stderr.contains("unknown unit"),
        "{}",
        out.describe()
    );
}

/// An attach recording has no collector to name the threads: the recorder
/// keeps each thread's name (`/proc/<pid>/task/<tid>/comm`) in
/// `threads.json`, and the Perfetto export names the thread tracks after
/// them (issue 9: thread tracks named as the kernel names them), where
/// they would otherwise be named by pid and tid.
#[test]
fn attach_keeps_the_thread_names_for_the_exports() {
    use std::io::BufRead;
    let _serial = serial();
    let exe = build("named_spinners.c", &[]);
    let mut target = Command::new(&exe)
        .stdout(Stdio::piped())
        .spawn()
        .expect("start named_spinners");
    let mut line = String::new();
    std::io::BufReader::new(target.stdout.take().unwrap())
        .read_line(&mut line)
        .expect("the program's ready line");
    assert_eq!(line.trim(), "ready");
    let dir = tempdir();
    let rec = dir.path().join("named.data");
    let out = run_timeout(
        attach_command(target.id(), &rec, &["--duration", "1s"]),
        RUN_TIMEOUT,
    );
    let _ = target.kill();
    let _ = target.wait();
    assert!(out.success(), "{}", out.describe());

    let names: Value = serde_json::from_slice(
        &std::fs::read(rec.join("threads.json")).expect("an attach recording has threads.json"),
    )
    .expect("threads.json is JSON");
    let listed: Vec<(u64, String)> = names["threads"]
        .as_array()
        .expect("threads")
        .iter()
        .filter(|t| t["pid"] == target.id())
        .map(|t| {
            (
                t["tid"].as_u64().unwrap(),
                t["name"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    for want in ["spinner-a", "spinner-b"] {
        assert!(listed.iter().any(|(_, n)| n == want), "{want}: {names:#}");
    }

    let trace = dir.path().join("named.perfetto-trace");
    let o = run_timeout(
        {
            let mut c = Command::new(contend_bin());
            c.arg("export")
                .arg(&rec)
                .args(["--format", "perfetto", "-o"])
                .arg(&trace);
            c
        },
        RUN_TIMEOUT,
    );
    assert!(o.success(), "export: {}", o.describe());
    let Some(s) = crate::viewer_exports::perfetto_summary(&trace) else {
        return;
    };
    let tracks = s["tracks"].as_array().unwrap();
    for (tid, name) in listed.iter().filter(|(_, n)| n.starts_with("spinner-")) {
        assert!(
            tracks
                .iter()
                .any(|t| t["kind"] == "thread" && t["tid"] == *tid && t["thread_name"] == *name),
            "no thread track {tid} named {name}: {tracks:#?}"
        );
    }
}
