//! The blackboard across processes: a reader never sees a torn value
//! while a writer in another process publishes at full speed, refuses a
//! layout of another version by name, survives the daemon's restart; a
//! second daemon on one name is refused.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use contend_meters::blackboard::{
    Blackboard, BlackboardError, CreateOptions, Freshness, MeterDesc, MeterValues, Reader,
};
use contend_meters::layout::{self, Scope, TriggerState};

const WRITER_ENV: &str = "CONTEND_METERS_TEST_WRITER";
const UPDATES: u64 = 2_000_000;

fn desc(name: &str) -> MeterDesc {
    MeterDesc {
        name: name.into(),
        unit: "ns".into(),
        scope: Scope::Machine,
        object: 0,
        label: String::new(),
        levels: Some((10.0, 5.0)),
    }
}

/// Every field of update `k` derives from `k`, so a copy mixing two
/// updates shows.
fn values(k: u64) -> MeterValues {
    MeterValues {
        value: k as f64,
        avg: k as f64 + 0.5,
        min: k as f64 - 1.0,
        max: k as f64 + 1.0,
        window_samples: k,
        time_ns: 3 * k,
        updates: k,
        trigger: Some(if k.is_multiple_of(2) {
            TriggerState::High
        } else {
            TriggerState::Clear
        }),
        trigger_changes: k,
        estimated: false,
        ended: false,
    }
}

/// The writer process (run by `reader_never_sees_a_torn_value` through
/// this test binary; does nothing when run on its own).
#[test]
fn writer_process() {
    let Ok(path) = std::env::var(WRITER_ENV) else {
        return;
    };
    let mut bb = Blackboard::create(Path::new(&path), &CreateOptions::default()).unwrap();
    let slot = bb.add_meter(&desc("stress")).unwrap();
    // Wait for the reader to map it (it creates the file `<path>.ready`).
    let ready = format!("{path}.ready");
    let t = Instant::now();
    while !Path::new(&ready).exists() && t.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(1));
    }
    // Publish half, then wait until the reader has seen an update (it
    // creates `<path>.seen`), so it sees at least two distinct updates
    // however the two processes are scheduled, then the rest.
    let seen = format!("{path}.seen");
    for k in 1..=UPDATES / 2 {
        bb.publish(slot, &values(k));
    }
    while !Path::new(&seen).exists() && t.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(1));
    }
    for k in UPDATES / 2 + 1..=UPDATES {
        bb.publish(slot, &values(k));
    }
    // Keep the region alive until the reader has seen the last value.
    let done = format!("{path}.done");
    while !Path::new(&done).exists() && t.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn reader_never_sees_a_torn_value() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bb");
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "blackboard::writer_process", "--nocapture"])
        .env(WRITER_ENV, &path)
        .spawn()
        .unwrap();
    let t = Instant::now();
    let reader = loop {
        if let Ok(r) = Reader::open(&path) {
            if r.wait_for_meters(1, Duration::from_secs(30)) {
                break r;
            }
        }
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "the writer never created the blackboard"
        );
        std::thread::sleep(Duration::from_millis(2));
    };
    assert_eq!(reader.writer_pid(), u64::from(child.id()));
    std::fs::write(path.with_extension("ready"), b"").unwrap();
    let (mut last, mut distinct, mut reads, mut starved) = (0u64, 0u64, 0u64, 0u64);
    while last < UPDATES {
        assert!(
            t.elapsed() < Duration::from_secs(120),
            "stopped at update {last}"
        );
        // A writer publishing without pause can starve a reader (it then
        // gets no copy, never a torn one); the daemon publishes a slot once
        // an interval and does not.
        let Some(s) = reader.meter(0) else {
            starved += 1;
            continue;
        };
        reads += 1;
        assert_eq!(s.seq % 2, 0);
        let Some(v) = s.values else { continue };
        let k = v.updates;
        let mut want = values(k);
        want.trigger = Some(s.trigger);
        assert_eq!(v, want, "torn copy at update {k}");
        assert_eq!(s.trigger_changes, k);
        assert_eq!(
            s.trigger,
            if k.is_multiple_of(2) {
                TriggerState::High
            } else {
                TriggerState::Clear
            }
        );
        assert!(k >= last, "went back from {last} to {k}");
        if k > last {
            if distinct == 0 {
                std::fs::write(path.with_extension("seen"), b"").unwrap();
            }
            distinct += 1;
        }
        last = k;
    }
    std::fs::write(path.with_extension("done"), b"").unwrap();
    assert!(child.wait().unwrap().success());
    eprintln!(
        "{reads} consistent reads ({starved} starved), {distinct} distinct updates of {UPDATES}, the last included"
    );
    assert!(distinct > 1, "the reader saw the updates happen");
}

#[test]
fn another_layout_version_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bb");
    let bb = Blackboard::create(&path, &CreateOptions::default()).unwrap();
    let copy = dir.path().join("v2");
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[layout::header::VERSION..layout::header::VERSION + 4]
        .copy_from_slice(&2u32.to_le_bytes());
    std::fs::write(&copy, &bytes).unwrap();
    let e = Reader::open(&copy).err().unwrap();
    assert!(matches!(e, BlackboardError::Layout { .. }), "{e}");
    let msg = e.to_string();
    assert!(
        msg.contains("v2") && msg.contains("layout version 2") && msg.contains("version 1"),
        "{msg}"
    );
    std::fs::write(&copy, b"not a blackboard at all, but longer than nothing").unwrap();
    assert!(Reader::open(&copy)
        .err()
        .unwrap()
        .to_string()
        .contains("not a contend blackboard"));
    let missing = Reader::open(&dir.path().join("nothing")).err().unwrap();
    assert!(
        matches!(missing, BlackboardError::Missing { .. }),
        "{missing}"
    );
    drop(bb);
}

#[test]
fn a_second_daemon_on_one_name_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bb");
    let _first = Blackboard::create(&path, &CreateOptions::default()).unwrap();
    let e = Blackboard::create(&path, &CreateOptions::default())
        .err()
        .unwrap();
    match &e {
        BlackboardError::InUse { pid, .. } => assert_eq!(*pid, u64::from(std::process::id())),
        other => panic!("{other}"),
    }
    assert!(
        e.to_string()
            .contains("in use by another contend meters daemon"),
        "{e}"
    );
}

/// A reader mapping the first daemon's region notices its stop and maps
/// the restarted daemon's region (a new generation), with its meters.
#[test]
fn a_restarted_daemon_does_not_confuse_readers() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bb");
    let mut first = Blackboard::create(&path, &CreateOptions::default()).unwrap();
    let slot = first.add_meter(&desc("old")).unwrap();
    first.publish(slot, &values(7));
    first.heartbeat();
    let mut reader = Reader::open(&path).unwrap();
    assert_eq!(reader.refresh(), Freshness::Live);
    let gen1 = reader.generation();
    first.close();
    assert!(reader.closed());
    assert!(!path.exists(), "a clean stop removes the name");
    assert_eq!(reader.refresh(), Freshness::NoDaemon);
    // The old values stay readable.
    assert_eq!(reader.meter(0).unwrap().values.unwrap().updates, 7);
    drop(first);
    std::thread::sleep(Duration::from_millis(2));
    let mut second = Blackboard::create(&path, &CreateOptions::default()).unwrap();
    let s = second.add_meter(&desc("new")).unwrap();
    second.publish(s, &values(1));
    second.heartbeat();
    assert_eq!(reader.refresh(), Freshness::Reopened);
    assert_ne!(reader.generation(), gen1);
    let m = reader.meter(0).unwrap();
    assert_eq!(m.desc.name, "new");
    assert_eq!(m.values.unwrap().updates, 1);
}
