//! `collector/include/contend/meters.h` (the one definition of the
//! blackboard layout) and `contend_meters::layout` agree offset for
//! offset, and a C program using only the header reads what the Rust
//! writer published, publishes application state the Rust reader sees,
//! and refuses another layout version.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use contend_meters::blackboard::{Blackboard, CreateOptions, MeterDesc, MeterValues, Reader};
use contend_meters::layout::{self, app, header as h, meter as m, Scope, TriggerState};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Builds tests/programs/meters_reader.c with the project's C flags, once
/// per test process (two tests building it into one path at once would
/// run a file being written: ETXTBSY).
fn reader_program() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT.get_or_init(build_reader).clone()
}

fn build_reader() -> PathBuf {
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("meters_reader");
    let st = Command::new("cc")
        .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-O1", "-I"])
        .arg(root().join("collector/include"))
        .arg(root().join("tests/programs/meters_reader.c"))
        .arg("-o")
        .arg(&out)
        .status()
        .expect("cc runs");
    assert!(st.success(), "meters_reader.c does not compile");
    out
}

fn run(prog: &Path, args: &[&str]) -> (bool, HashMap<String, String>, String) {
    let o = Command::new(prog).args(args).output().unwrap();
    let kv = String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    (
        o.status.success(),
        kv,
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn header_and_rust_layout_agree() {
    let (ok, kv, err) = run(&reader_program(), &["layout"]);
    assert!(ok, "{err}");
    let get = |k: &str| -> usize { kv.get(k).unwrap_or_else(|| panic!("{k}")).parse().unwrap() };
    assert_eq!(get("version"), layout::VERSION as usize);
    assert_eq!(get("header_size"), layout::HEADER_SIZE);
    assert_eq!(get("slot_size"), layout::METER_SLOT_SIZE);
    assert_eq!(get("app_slot_size"), layout::APP_SLOT_SIZE);
    let hdr = [
        ("version", h::VERSION),
        ("header_size", h::HEADER_SIZE),
        ("endian_check", h::ENDIAN_CHECK),
        ("meter_slot_size", h::METER_SLOT_SIZE),
        ("meter_slots", h::METER_SLOTS),
        ("app_slot_size", h::APP_SLOT_SIZE),
        ("app_slots", h::APP_SLOTS),
        ("flags", h::FLAGS),
        ("meter_table", h::METER_TABLE),
        ("app_table", h::APP_TABLE),
        ("writer_pid", h::WRITER_PID),
        ("generation", h::GENERATION),
        ("interval_ns", h::INTERVAL_NS),
        ("heartbeat_ns", h::HEARTBEAT_NS),
        ("meters_used", h::METERS_USED),
        ("window_ns", h::WINDOW_NS),
        ("host", h::HOST),
    ];
    for (f, off) in hdr {
        assert_eq!(
            get(&format!("contend_meters_header.{f}")),
            off,
            "header.{f}"
        );
    }
    let slot = [
        ("seq", m::SEQ),
        ("name", m::NAME),
        ("unit", m::UNIT),
        ("scope", m::SCOPE),
        ("scope_id", m::SCOPE_ID),
        ("object", m::OBJECT),
        ("label", m::LABEL),
        ("trigger_state", m::TRIGGER_STATE),
        ("flags", m::FLAGS),
        ("value", m::VALUE),
        ("avg", m::AVG),
        ("min", m::MIN),
        ("max", m::MAX),
        ("high", m::HIGH),
        ("low", m::LOW),
        ("updates", m::UPDATES),
        ("trigger_changes", m::TRIGGER_CHANGES),
        ("time_ns", m::TIME_NS),
        ("window_samples", m::WINDOW_SAMPLES),
    ];
    for (f, off) in slot {
        assert_eq!(
            get(&format!("contend_meter_slot.{f}")),
            off,
            "meter slot.{f}"
        );
    }
    let apps = [
        ("seq", app::SEQ),
        ("pid", app::PID),
        ("phase", app::PHASE),
        ("threads_running", app::THREADS_RUNNING),
        ("threads_waiting", app::THREADS_WAITING),
        ("time_ns", app::TIME_NS),
        ("updates", app::UPDATES),
    ];
    for (f, off) in apps {
        assert_eq!(
            get(&format!("contend_meters_app_slot.{f}")),
            off,
            "app slot.{f}"
        );
    }
}

#[test]
fn a_c_reader_reads_what_rust_publishes_and_publishes_back() {
    let prog = reader_program();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bb");
    let mut bb = Blackboard::create(&path, &CreateOptions::default()).unwrap();
    for name in ["run_queue", "memory_latency"] {
        let s = bb
            .add_meter(&MeterDesc {
                name: name.into(),
                unit: "ns".into(),
                scope: Scope::Machine,
                object: 0,
                label: String::new(),
                levels: Some((250.0, 200.0)),
            })
            .unwrap();
        bb.publish(
            s,
            &MeterValues {
                value: 261.5,
                avg: 255.25,
                min: 180.0,
                max: 300.0,
                window_samples: 100,
                time_ns: 1,
                updates: 42,
                trigger: Some(TriggerState::High),
                trigger_changes: 3,
                estimated: false,
                ended: false,
            },
        );
    }
    let p = path.to_str().unwrap();
    let (ok, kv, err) = run(&prog, &["read", p, "memory_latency"]);
    assert!(ok, "{err}");
    assert_eq!(kv["slot"], "1");
    assert_eq!(kv["value"], "261.5");
    assert_eq!(kv["avg"], "255.25");
    assert_eq!(kv["high"], "250");
    assert_eq!(kv["low"], "200");
    assert_eq!(kv["updates"], "42");
    assert_eq!(kv["trigger_state"], "2");
    assert_eq!(kv["trigger_changes"], "3");
    let (ok, _, err) = run(&prog, &["read", p, "no_such_meter"]);
    assert!(!ok && err.contains("No such file"), "{err}");

    let (ok, kv, err) = run(&prog, &["publish", p, "solve", "3", "1"]);
    assert!(ok, "{err}");
    let r = Reader::open(&path).unwrap();
    let apps = r.apps();
    assert_eq!(apps.len(), 1, "{apps:?}");
    assert_eq!(apps[0].slot.to_string(), kv["app_slot"]);
    assert_eq!(apps[0].phase, "solve");
    assert_eq!((apps[0].threads_running, apps[0].threads_waiting), (3, 1));
    assert_eq!(apps[0].updates, 1);

    // Another version: the header's reader refuses it (EPROTO).
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[h::VERSION..h::VERSION + 4].copy_from_slice(&2u32.to_le_bytes());
    let v2 = dir.path().join("v2");
    std::fs::write(&v2, &bytes).unwrap();
    let (ok, _, err) = run(&prog, &["read", v2.to_str().unwrap(), "memory_latency"]);
    assert!(!ok && err.contains("EPROTO"), "{err}");
    let missing = dir.path().join("missing");
    let (ok, _, err) = run(
        &prog,
        &["read", missing.to_str().unwrap(), "memory_latency"],
    );
    assert!(!ok && err.contains("No such file"), "{err}");
}
