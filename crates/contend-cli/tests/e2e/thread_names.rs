//! Thread names (issue 9: thread tracks "named as the kernel names them"),
//! end to end on tests/programs/thread_names.c, whose workers are named
//! four ways: `pthread_setname_np` on itself before its first lock
//! (`nm-before`) and after it (`nm-after`), `prctl(PR_SET_NAME)` after it
//! (`nm-prctl`), and `pthread_setname_np` by the main thread after the
//! worker's first locks (`nm-by-main`).
//!
//! * the report's per-thread JSON has every name, and the main thread's is
//!   the program's (the kernel's default comm);
//! * the Perfetto export's thread descriptors (decoded with Perfetto's own
//!   `perfetto_trace_pb2`), the Chrome JSON's `thread_name` metadata, the
//!   pprof labels and the OTF2 location names carry them;
//! * a run killed with SIGKILL right after the names were given keeps the
//!   names the threads gave themselves (stored at once into their chunk
//!   headers); a name given by another thread reaches the trace only at the
//!   named thread's next chunk or its exit, so it is not asserted there.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::common::*;
use crate::viewer_exports::perfetto_summary;

const SELF_NAMED: [&str; 3] = ["nm-before", "nm-after", "nm-prctl"];

/// tid → name of the report's `locks.by_thread`.
fn names(report: &Value) -> BTreeMap<u64, String> {
    report["locks"]["by_thread"]
        .as_array()
        .expect("locks.by_thread")
        .iter()
        .map(|t| {
            (
                t["tid"].as_u64().unwrap(),
                t["name"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

fn export(dir: &std::path::Path, format: &str, out: &std::path::Path) {
    let o = run_timeout(
        {
            let mut c = std::process::Command::new(contend_bin());
            c.arg("export")
                .arg(dir)
                .args(["--format", format, "--force", "-o"])
                .arg(out);
            c
        },
        std::time::Duration::from_secs(120),
    );
    assert!(o.success(), "export {format}: {}", o.describe());
}

#[test]
fn thread_names_reach_the_report_and_every_export() {
    require_tool!("gcc");
    let _g = serial();
    let exe = build("thread_names.c", &["-O1"]);
    let tmp = tempdir();
    let dir = tmp.path().join("names.data");
    let out = record(&dir, &exe, &[] as &[&str]);
    assert!(out.success(), "{}", out.describe());
    let report = report_json(&dir);
    let by_tid = names(&report);
    let mut got: Vec<&str> = by_tid.values().map(String::as_str).collect();
    got.sort();
    let main = exe.file_name().unwrap().to_str().unwrap();
    let main = &main[..main.len().min(15)];
    for want in SELF_NAMED.iter().chain(&["nm-by-main"]) {
        assert!(got.contains(want), "no thread named {want}: {got:?}");
    }
    let pid = report["locks"]["by_thread"][0]["pid"].as_u64().unwrap();
    assert_eq!(
        by_tid.get(&pid).map(String::as_str),
        Some(main),
        "the main thread keeps the kernel's default name: {by_tid:?}"
    );

    // Chrome trace JSON: a thread_name metadata event per thread.
    let chrome = tmp.path().join("t.json");
    export(&dir, "chrome", &chrome);
    let v: Value = serde_json::from_slice(&std::fs::read(&chrome).unwrap()).unwrap();
    let events = v
        .get("traceEvents")
        .and_then(Value::as_array)
        .or_else(|| v.as_array())
        .expect("trace events");
    let chrome_names: BTreeMap<u64, String> = events
        .iter()
        .filter(|e| e["name"] == "thread_name" && e["ph"] == "M")
        .map(|e| {
            (
                e["tid"].as_u64().unwrap(),
                e["args"]["name"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    for (tid, name) in &by_tid {
        assert_eq!(
            chrome_names.get(tid),
            Some(name),
            "Chrome thread_name of {tid}"
        );
    }

    // pprof: the thread_name label (go tool pprof -tags lists labels).
    if have("go") {
        let prof = tmp.path().join("t.pb.gz");
        export(&dir, "pprof", &prof);
        let o = std::process::Command::new("go")
            .args(["tool", "pprof", "-tags"])
            .arg(&prof)
            .output()
            .unwrap();
        let tags = String::from_utf8_lossy(&o.stdout);
        assert!(
            o.status.success(),
            "go tool pprof -tags: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        for name in SELF_NAMED {
            assert!(tags.contains(name), "pprof labels lack {name}:\n{tags}");
        }
    }

    // OTF2 location names.
    if have("otf2-print") {
        let archive = tmp.path().join("t.otf2");
        let o = run_timeout(
            {
                let mut c = std::process::Command::new(contend_bin());
                c.arg("export")
                    .arg(&dir)
                    .args(["--format", "otf2", "--force", "-o"])
                    .arg(&archive);
                c
            },
            std::time::Duration::from_secs(120),
        );
        if o.success() {
            let anchor = std::fs::read_dir(&archive)
                .unwrap()
                .filter_map(|e| e.ok().map(|e| e.path()))
                .find(|p| p.extension().is_some_and(|e| e == "otf2"))
                .expect("anchor file");
            let text = otf2_definitions(&anchor);
            for name in SELF_NAMED {
                assert!(text.contains(name), "OTF2 locations lack {name}:\n{text}");
            }
        }
    }

    // Perfetto: thread descriptors, decoded with Perfetto's own protos.
    let trace = tmp.path().join("t.pftrace");
    export(&dir, "perfetto", &trace);
    let Some(s) = perfetto_summary(&trace) else {
        return;
    };
    let perfetto_names: BTreeMap<u64, String> = s["tracks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["kind"] == "thread")
        .map(|t| {
            (
                t["tid"].as_u64().unwrap(),
                t["thread_name"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    for (tid, name) in &by_tid {
        assert_eq!(
            perfetto_names.get(tid),
            Some(name),
            "Perfetto thread_name of {tid}"
        );
    }
}

#[test]
fn names_a_thread_gave_itself_survive_sigkill() {
    require_tool!("gcc");
    let _g = serial();
    let exe = build("thread_names.c", &["-O1"]);
    let tmp = tempdir();
    let dir = tmp.path().join("crash.data");
    let out = record(&dir, &exe, &["crash"]);
    assert_eq!(
        out.signal().or(out.code().map(|c| c - 128)),
        Some(9),
        "{}",
        out.describe()
    );
    let report = report_json(&dir);
    let by_tid = names(&report);
    let got: Vec<&str> = by_tid.values().map(String::as_str).collect();
    for want in SELF_NAMED {
        assert!(
            got.contains(&want),
            "no thread named {want} after SIGKILL: {got:?}"
        );
    }
}
