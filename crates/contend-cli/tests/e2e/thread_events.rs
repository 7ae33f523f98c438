//! Thread lifetimes (the kernel's task records, `probes/`) and the
//! service-time sampler's scheduler events: followed by events for the
//! whole machine where the kernel allows it, keeping only the recorded
//! process tree's records, else (and with `CONTEND_THREAD_EVENTS=per-task`,
//! `CONTEND_SCHED_EVENTS=per-task`) by events inherited by the target's
//! threads (`crates/contend-record/src/probes.rs`,
//! `crates/contend-record/src/sched_events.rs`).

use std::collections::BTreeSet;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};

use contend_trace::probes::{read_probe_recording, ProbeEventKind, ProbeRecording};

use crate::common::*;

/// Records `tests/programs/fork.c` (a parent with a helper thread that
/// forks a child running two threads, all taking mutexes) while another
/// process tree beside it keeps starting processes, and returns the
/// recording (kept until the `TempDir` is dropped), its probe files and
/// the pid of the process beside it.
fn record_fork(per_task: bool) -> (tempfile::TempDir, ProbeRecording, u32) {
    let prog = build("fork.c", &[]);
    let tmp = tempdir();
    let dir = tmp.path().join("fork.data");
    // other work on the machine: every process it starts and ends reaches
    // system-wide events
    let mut noise = Command::new("sh")
        .args(["-c", "while :; do /bin/true; done"])
        .stdout(Stdio::null())
        .process_group(0)
        .spawn()
        .expect("start a shell loop");
    let noise_pid = noise.id();
    // let the loop run before the program starts
    std::thread::sleep(std::time::Duration::from_millis(50));
    let mut cmd = record_command(&dir, &prog, &[] as &[&str]);
    // the scheduler events kept all the run (the program's threads switch
    // often enough for the default to leave them)
    cmd.env("CONTEND_SERVICE_SOURCE", "sched-events");
    for var in ["CONTEND_THREAD_EVENTS", "CONTEND_SCHED_EVENTS"] {
        if per_task {
            cmd.env(var, "per-task");
        } else {
            cmd.env_remove(var);
        }
    }
    let out = run_timeout(cmd, RUN_TIMEOUT);
    kill_group(noise_pid, libc::SIGKILL);
    let _ = noise.wait();
    assert!(out.success(), "{}", out.describe());
    let rec = read_probe_recording(&dir)
        .expect("a probes/ directory")
        .expect("readable probe files");
    (tmp, rec, noise_pid)
}

/// Checks the lifetimes of `fork.c`: the tree is the program and one
/// child; the program started its helper thread; the child was started by
/// the fork, started its thread, and both ended.
fn check_fork_lifetimes(rec: &ProbeRecording, noise: u32) {
    let root = rec.manifest.root_pid;
    let tree = tree_of(rec, noise);
    assert_eq!(tree.len(), 2, "the program and its child: {tree:?}");
    let child = *tree.iter().find(|&&p| p != root).unwrap();
    assert_eq!(lifetimes_of(rec, child), (1, 1, 2), "{:?}", rec.events);
    assert_eq!(
        lifetimes_of(rec, root).1,
        1,
        "the helper thread: {:?}",
        rec.events
    );
}

/// The tree's processes as the records build it (a process joins when a
/// process of the tree forks it); panics on a record of any other process.
fn tree_of(rec: &ProbeRecording, noise: u32) -> BTreeSet<u32> {
    let mut events = rec.events.clone();
    events.sort_by_key(|e| e.time_ns);
    let mut tree = BTreeSet::from([rec.manifest.root_pid]);
    for e in &events {
        assert_ne!(
            e.pid, noise,
            "a record of the process beside the program: {e:?}"
        );
        if e.kind == ProbeEventKind::ThreadStart {
            let parent = e.arg as u32;
            assert!(
                tree.contains(&parent) || tree.contains(&e.pid),
                "a thread start outside the recorded tree: {e:?} (tree {tree:?})"
            );
            tree.insert(e.pid);
        } else {
            assert!(
                tree.contains(&e.pid),
                "a record outside the recorded tree: {e:?}"
            );
        }
    }
    tree
}

/// Checks the service-time sampler's rows against the lifetimes' tree: the
/// scheduler events were opened with `scope`, and every row is a thread of
/// the tree (none of the process beside it), the child's threads among
/// them.
fn check_service_rows(dir: &std::path::Path, rec: &ProbeRecording, noise: u32, scope: &str) {
    let meta: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("meta.json")).unwrap()).unwrap();
    let sampler = &meta["sampler"];
    assert_eq!(sampler["source"], "sched-events", "{sampler}");
    assert_eq!(sampler["event_scope"], scope, "{sampler}");
    let tree = tree_of(rec, noise);
    let report = report_json(dir);
    let events = &report["recording"]["scheduler_events"];
    assert_eq!(events["scope"], scope, "{events}");
    assert!(events["records"].as_u64().unwrap() > 0, "{events}");
    assert_eq!(
        events["modelled_ns"].as_u64(),
        Some(events["records"].as_u64().unwrap() * 500),
        "{events}"
    );
    let text = report_raw(dir, &[] as &[&str]).stdout;
    assert!(
        text.lines().any(|l| l.contains("Service-time events")
            && l.contains(if scope == "per-task" {
                "(per task)"
            } else {
                "(system-wide)"
            })),
        "{text}"
    );
    let rows = report["service"]["threads"].as_array().unwrap();
    let pids: BTreeSet<u32> = rows
        .iter()
        .map(|t| t["pid"].as_u64().unwrap() as u32)
        .collect();
    assert!(
        pids.is_subset(&tree),
        "service rows outside the tree {tree:?}: {pids:?} (noise {noise})"
    );
    let child = *tree.iter().find(|&&p| p != rec.manifest.root_pid).unwrap();
    assert!(
        rows.iter()
            .filter(|t| t["pid"].as_u64() == Some(child.into()))
            .count()
            >= 2,
        "the child's two threads: {rows:?}"
    );
}

/// A process's task records, counted: (its own start by a fork, its
/// threads' starts, exits).
fn lifetimes_of(rec: &ProbeRecording, pid: u32) -> (usize, usize, usize) {
    let of = |k| {
        rec.events
            .iter()
            .filter(|e| e.pid == pid && e.kind == k)
            .collect::<Vec<_>>()
    };
    let starts = of(ProbeEventKind::ThreadStart);
    let forked = starts.iter().filter(|e| e.tid == pid).count();
    (
        forked,
        starts.len() - forked,
        of(ProbeEventKind::ThreadExit).len(),
    )
}

/// System-wide (the default where allowed, as for root here): the records
/// kept are exactly those of the program and the child it forked, and
/// none of the shell loop that ran beside it; the sampler's rows too.
/// Mutating the tree filter (keeping every process's records) fails
/// `tree_of`, or `check_service_rows` for the sampler's.
#[test]
fn system_wide_thread_events_keep_only_the_recorded_tree() {
    let _serial = serial();
    let (tmp, rec, noise) = record_fork(false);
    assert!(rec.manifest.thread_events, "{:?}", rec.manifest);
    if rec.manifest.thread_events_scope != "system-wide" {
        eprintln!(
            "SKIP: system-wide perf events are not allowed here ({:?})",
            rec.manifest.thread_events_scope
        );
        return;
    }
    check_fork_lifetimes(&rec, noise);
    check_service_rows(&tmp.path().join("fork.data"), &rec, noise, "system-wide");
    let report = report_json(&tmp.path().join("fork.data"));
    let notes = report["sci"]["notes"].to_string();
    assert!(!notes.contains("inherited"), "{notes}");
    assert_eq!(report["recording"]["thread_events"], "system-wide");
}

/// `CONTEND_THREAD_EVENTS=per-task` (and `CONTEND_SCHED_EVENTS=per-task`):
/// the same lifetimes and sampler rows from events inherited by the
/// program's threads; the manifest and the Recording
/// cost section say which way, and the interference notes what it cost.
#[test]
fn per_task_thread_events_give_the_same_lifetimes() {
    let _serial = serial();
    let (tmp, rec, noise) = record_fork(true);
    assert!(rec.manifest.thread_events, "{:?}", rec.manifest);
    assert_eq!(rec.manifest.thread_events_scope, "per-task");
    check_fork_lifetimes(&rec, noise);
    check_service_rows(&tmp.path().join("fork.data"), &rec, noise, "per-task");
    let report = report_json(&tmp.path().join("fork.data"));
    let notes = report["sci"]["notes"].to_string();
    assert!(
        notes.contains("inherited by the program's threads"),
        "the SCI notes say the lifetimes cost context switches: {notes}"
    );
    assert_eq!(report["recording"]["thread_events"], "per-task");
    let text = report_raw(&tmp.path().join("fork.data"), &[] as &[&str]);
    assert!(
        text.stdout.contains("Thread lifetimes") && text.stdout.contains("per task"),
        "the Recording cost table says how the lifetimes were followed: {}",
        text.stdout
    );
}
