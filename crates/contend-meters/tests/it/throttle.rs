//! The throttling example (`examples/throttle/throttle.c`, MAESTRO's work
//! throttling) really parks its workers while the memory meter's high
//! trigger is set and releases them when it clears.
//!
//! Truth: this test is the blackboard's writer. It publishes
//! `memory_bandwidth` with the trigger high, waits until the example's own
//! application slot says a worker is parked (a handshake, so no timing
//! bound), keeps it high for 100 ms more, then publishes it clear. The
//! example's JSON must show: worker 1 (beyond `--min-active 1`) parked at
//! least once, worker 0 never; every task done; the trace has rows with
//! the trigger high and one worker parked, and after the first row with
//! the trigger clear, no worker parked. (How long worker 1 stayed parked
//! is not asserted: it also stops parking when worker 0 empties the queue,
//! which on a fast machine may come before the clear.)

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use contend_meters::blackboard::{Blackboard, CreateOptions, MeterDesc, MeterValues, Reader};
use contend_meters::layout::{Scope, TriggerState};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn build_example() -> PathBuf {
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("throttle");
    let st = Command::new("cc")
        .args([
            "-std=c11", "-Wall", "-Wextra", "-Werror", "-O2", "-pthread", "-I",
        ])
        .arg(root().join("collector/include"))
        .arg(root().join("examples/throttle/throttle.c"))
        .arg("-o")
        .arg(&out)
        .status()
        .expect("cc runs");
    assert!(st.success(), "throttle.c does not compile");
    out
}

fn publish(bb: &Blackboard, slot: u32, k: u64, state: TriggerState) {
    let v = if state == TriggerState::High {
        9e9
    } else {
        1e9
    };
    bb.publish(
        slot,
        &MeterValues {
            value: v,
            avg: v,
            min: v,
            max: v,
            window_samples: 1,
            time_ns: k,
            updates: k,
            trigger: Some(state),
            trigger_changes: k,
            estimated: true,
            ended: false,
        },
    );
}

#[test]
fn throttled_workers_park_while_the_trigger_is_high() {
    let exe = build_example();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bb");
    let mut bb = Blackboard::create(&path, &CreateOptions::default()).unwrap();
    let slot = bb
        .add_meter(&MeterDesc {
            name: "memory_bandwidth".into(),
            unit: "bytes/s".into(),
            scope: Scope::Machine,
            object: 0,
            label: String::new(),
            levels: Some((8e9, 4e9)),
        })
        .unwrap();
    publish(&bb, slot, 1, TriggerState::High);
    let child = Command::new(&exe)
        .args([
            "--threads",
            "2",
            "--min-active",
            "1",
            "--tasks",
            "4000",
            "--task-kb",
            "256",
        ])
        .arg("--blackboard")
        .arg(&path)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let reader = Reader::open(&path).unwrap();
    let t = Instant::now();
    let mut parked_seen = false;
    while t.elapsed() < Duration::from_secs(60) {
        if reader
            .apps()
            .iter()
            .any(|a| a.pid == child.id() && a.threads_waiting >= 1)
        {
            parked_seen = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    std::thread::sleep(Duration::from_millis(100));
    publish(&bb, slot, 2, TriggerState::Clear);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert!(parked_seen, "no worker ever parked: {json}");
    assert_eq!(json["throttled"], true);
    let n = |k: &str, i: usize| json[k][i].as_f64().unwrap();
    assert_eq!(n("done", 0) + n("done", 1), 4000.0, "{json}");
    assert_eq!(n("parks", 0), 0.0, "worker 0 is within --min-active");
    assert!(n("parks", 1) >= 1.0, "{json}");
    assert!(n("parked_s", 1) > 0.0, "{json}");
    let trace = json["trace"].as_array().unwrap();
    let row = |r: &serde_json::Value| (r[2].as_u64().unwrap(), r[4].as_u64().unwrap());
    assert!(
        trace.iter().any(|r| row(r) == (2, 1)),
        "no trace row with the trigger high and a worker parked"
    );
    if let Some(first_clear) = trace.iter().position(|r| row(r).0 == 1) {
        // The first clear row may be taken before the parked worker woke
        // (it polls every 1 ms); from the next row on nobody is parked.
        for r in &trace[first_clear + 1..] {
            assert_eq!(row(r).1, 0, "a worker parked with the trigger clear: {r}");
        }
    }
    eprintln!(
        "done {:?}, parks {:?}, parked {:?} s, {} trace rows",
        json["done"],
        json["parks"],
        json["parked_s"],
        trace.len()
    );
}
