//! Futex waits in the exports, end to end on tests/programs/futex_lock.c
//! (a hand-written futex lock through `syscall(SYS_futex, …)`, with timed
//! and EAGAIN waits on a second word), recorded once and exported to
//! Perfetto, pprof and folded stacks; each export is checked against the
//! JSON report of the same recording:
//!
//! * Perfetto (decoded with Perfetto's own protobuf definitions through
//!   `perfetto_summary.py`): one `futex.wait` slice per futex wait of the
//!   report (`futex.summary.events`), per word as many `wait <word>`
//!   slices as the word's `events`, `critical_path` set on exactly
//!   `futex.summary.critical_events` of them, one flow per hand-over
//!   (`futex.summary.handovers`) from a `wake <word>` instant on another
//!   thread to the woken wait; `--critical-only` keeps the critical ones;
//! * pprof (`go tool pprof -raw`): the delay per leaf `function file:line`
//!   equals `futex.by_site[].wait_ns`, and every sample has `kind: futex`;
//! * Chrome's JSON: one complete event per futex wait;
//! * folded stacks: the `… [futex]` lines sum to `futex.summary.wait_ns`;
//! * OTF2 (`otf2-print`): a `futex_wait` region per wait and a
//!   `futex_wake` region per wake, properly nested on every location.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;
use std::process::Command;

use crate::common::*;
use crate::viewer_exports::{go, perfetto_summary, pprof, raw_delay_per_line};
use serde_json::Value;

fn export(rec: &Path, args: &[&str]) {
    let out = Command::new(contend_bin())
        .arg("export")
        .arg(rec)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "contend export {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn futex_waits_in_perfetto_pprof_and_folded_stacks() {
    require_tool!("gcc");
    let _serial = serial();
    let exe = build("futex_lock.c", &["-O1"]);
    let dir = tempdir();
    let rec = dir.path().join("rec");
    let out = record(&rec, &exe, &[] as &[&str]);
    assert!(out.success(), "{}", out.describe());
    let report = report_json(&rec);
    let s = &report["futex"]["summary"];
    assert!(u(s, "events") > 0 && u(s, "handovers") > 0, "{s}");

    // Perfetto
    let trace = dir.path().join("t.perfetto");
    export(
        &rec,
        &["--format", "perfetto", "-o", trace.to_str().unwrap()],
    );
    if let Some(sum) = perfetto_summary(&trace) {
        let slices = sum["slices"].as_array().unwrap();
        let instants = sum["instants"].as_array().unwrap();
        let waits: Vec<&Value> = slices.iter().filter(|x| x["cat"] == "futex.wait").collect();
        assert_eq!(waits.len() as u64, u(s, "events"), "one slice per wait");
        for w in report["futex"]["by_word"].as_array().unwrap() {
            let name = format!("wait {}", w["name"].as_str().unwrap());
            let n = waits.iter().filter(|x| x["name"] == name.as_str()).count() as u64;
            assert_eq!(n, u(w, "events"), "{name}");
        }
        let critical = waits
            .iter()
            .filter(|x| x["args"]["critical_path"] == true)
            .count() as u64;
        assert_eq!(critical, u(s, "critical_events"));
        for x in &waits {
            let r = x["args"]["result"].as_str().unwrap();
            assert!(
                ["woken", "timed out", "value changed (EAGAIN)", "error"].contains(&r)
                    || r.starts_with("interrupted"),
                "{x}"
            );
        }
        // flows: from a wake instant to the woken wait, one per hand-over
        let tids = track_tid(&sum);
        let wakes: HashMap<u64, &Value> = instants
            .iter()
            .filter(|x| x["cat"] == "futex.wake")
            .flat_map(|x| {
                x["flows_out"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(move |f| (f.as_u64().unwrap(), x))
            })
            .collect();
        let mut flows = HashSet::new();
        for w in &waits {
            for f in w["flows_in"].as_array().unwrap() {
                let f = f.as_u64().unwrap();
                let wake = wakes
                    .get(&f)
                    .unwrap_or_else(|| panic!("flow {f} has no wake"));
                assert!(wake["ts"].as_u64() <= w["end"].as_u64(), "{wake} {w}");
                assert_ne!(
                    tids[&wake["track"].as_u64().unwrap()],
                    tids[&w["track"].as_u64().unwrap()],
                    "a hand-over between threads"
                );
                assert!(flows.insert(f));
            }
        }
        assert_eq!(flows.len() as u64, u(s, "handovers"));

        // --critical-only: the critical waits alone
        let crit = dir.path().join("c.perfetto");
        export(
            &rec,
            &[
                "--format",
                "perfetto",
                "--critical-only",
                "-o",
                crit.to_str().unwrap(),
            ],
        );
        let c = perfetto_summary(&crit).unwrap();
        let n = c["slices"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|x| x["cat"] == "futex.wait")
            .count() as u64;
        assert_eq!(n, u(s, "critical_events"));
    }

    // Chrome's trace-event JSON, from the same walk: one complete event
    // per wait
    let chrome = dir.path().join("t.json");
    export(
        &rec,
        &["--format", "chrome", "-o", chrome.to_str().unwrap()],
    );
    let c: Value = serde_json::from_slice(&std::fs::read(&chrome).unwrap()).unwrap();
    let events = c["traceEvents"].as_array().or(c.as_array()).unwrap();
    let n = events
        .iter()
        .filter(|e| e["cat"] == "futex.wait" && e["ph"] == "X")
        .count() as u64;
    assert_eq!(n, u(s, "events"), "chrome: one slice per futex wait");

    // folded stacks: the futex lines' weights are the reported wait
    let folded = dir.path().join("f.folded");
    export(
        &rec,
        &["--format", "folded", "-o", folded.to_str().unwrap()],
    );
    let text = std::fs::read_to_string(&folded).unwrap();
    let total: u64 = text
        .lines()
        .filter_map(|l| l.rsplit_once(' '))
        .filter(|(stack, _)| stack.ends_with("[futex]"))
        .map(|(_, v)| v.parse::<u64>().unwrap())
        .sum();
    assert_eq!(total, u(s, "wait_ns"), "{text}");
    assert!(text.contains(";lock_word [futex] "), "{text}");

    // OTF2: a futex_wait region per wait and a futex_wake region per wake
    // (paradigm unknown), properly nested on each thread's location
    if which("otf2-print").is_some() {
        let archive = dir.path().join("f.otf2");
        export(&rec, &["--format", "otf2", "-o", archive.to_str().unwrap()]);
        let events = otf2_events_nested(&archive.join("traces.otf2"));
        let enters = |what: &str| {
            events
                .values()
                .flatten()
                .filter(|(r, rest)| r == "ENTER" && rest.contains(&format!("Region: \"{what} @ ")))
                .count() as u64
        };
        assert_eq!(enters("futex_wait"), u(s, "events"));
        assert_eq!(enters("futex_wake"), u(s, "wakes"));
        let defs = otf2_definitions(&archive.join("traces.otf2"));
        assert!(
            defs.lines()
                .any(|l| l.contains("\"futex_wait @ ") && l.contains("Paradigm: UNKNOWN")),
            "{defs}"
        );
    } else {
        eprintln!("SKIP (OTF2 part): otf2-print is not installed (Debian: otf2-tools)");
    }

    // pprof: delay per site = futex.by_site wait_ns
    let Some(go) = go() else {
        eprintln!("SKIP: go is not installed, so `go tool pprof` cannot be run");
        return;
    };
    let file = dir.path().join("p.pb.gz");
    export(&rec, &["--format", "pprof", "-o", file.to_str().unwrap()]);
    let raw = pprof(&go, &["-raw"], &file);
    let got: BTreeMap<(String, String), i64> = raw_delay_per_line(&raw)
        .into_iter()
        .filter(|g| g.1 > 0)
        .collect();
    // the pthread mutex of the program is in the profile too
    let mut want: BTreeMap<(String, String), i64> = BTreeMap::new();
    for section in ["futex", "locks"] {
        for site in report[section]["by_site"].as_array().unwrap() {
            let wait = site["wait_ns"].as_i64().unwrap();
            if wait == 0 {
                continue;
            }
            let file = site["file"].as_str().unwrap().rsplit('/').next().unwrap();
            *want
                .entry((
                    site["function"].as_str().unwrap().to_string(),
                    format!("{file}:{}", site["line"]),
                ))
                .or_insert(0) += wait;
        }
    }
    assert_eq!(got, want, "delay per line (pprof) vs wait per site (JSON)");
    let traces = pprof(&go, &["-traces"], &file);
    assert!(
        traces.contains("kind:") && traces.contains("futex"),
        "{traces}"
    );
}

/// Track uuid → tid (lanes through their parent thread).
fn track_tid(summary: &Value) -> HashMap<u64, u64> {
    let tracks = summary["tracks"].as_array().unwrap();
    let mut tid: HashMap<u64, u64> = HashMap::new();
    for t in tracks {
        if t["kind"] == "thread" {
            tid.insert(t["uuid"].as_u64().unwrap(), t["tid"].as_u64().unwrap());
        }
    }
    for t in tracks {
        if t["kind"] == "plain" {
            if let Some(&p) = tid.get(&t["parent"].as_u64().unwrap()) {
                tid.insert(t["uuid"].as_u64().unwrap(), p);
            }
        }
    }
    tid
}

/// OpenMP in the exports, on tests/programs/omp_gomp.c (`gcc -fopenmp`,
/// recorded through the collector's libgomp wrappers): in the Perfetto
/// export one `openmp.hold` slice per mutex acquisition of the report
/// (`openmp.summary.mutex_events`) named `hold <kind> <name>` as the
/// `openmp.mutexes` rows name them, per row as many, the `openmp.wait`
/// slices lasting `mutex_wait_ns`, one barrier slice per barrier wait
/// (implicit ones included) lasting `barrier_wait_ns`, and a flow ending at
/// a hold or barrier slice of another thread per hand-over found; in
/// pprof, the samples labelled `kind: openmp` carry the report's mutex
/// wait and hold in total; the folded stacks' `[openmp …]` mutex lines
/// sum to `openmp.summary.mutex_wait_ns`.
#[test]
fn openmp_waits_in_perfetto_pprof_and_folded_stacks() {
    require_tool!("gcc");
    let _serial = serial();
    let exe = build("omp_gomp.c", &["-fopenmp"]);
    let dir = tempdir();
    let rec = dir.path().join("rec");
    let out = record(&rec, &exe, &[] as &[&str]);
    assert!(out.success(), "{}", out.describe());
    let report = report_json(&rec);
    let s = &report["openmp"]["summary"];
    assert!(u(s, "mutex_events") > 0, "{s}");

    let trace = dir.path().join("t.perfetto");
    export(
        &rec,
        &["--format", "perfetto", "-o", trace.to_str().unwrap()],
    );
    if let Some(sum) = perfetto_summary(&trace) {
        let slices = sum["slices"].as_array().unwrap();
        let holds: Vec<&Value> = slices
            .iter()
            .filter(|x| x["cat"] == "openmp.hold")
            .collect();
        assert_eq!(holds.len() as u64, u(s, "mutex_events"));
        // per name (rows of one name: a stack lock's address reused)
        let mut want: BTreeMap<String, u64> = BTreeMap::new();
        for m in report["openmp"]["mutexes"].as_array().unwrap() {
            let name = format!(
                "hold {}",
                contend::openmp::mutex_label(
                    m["kind"].as_str().unwrap(),
                    m["name"].as_str().unwrap()
                )
            );
            *want.entry(name).or_insert(0) += u(m, "events");
        }
        let mut got: BTreeMap<String, u64> = BTreeMap::new();
        for x in &holds {
            *got.entry(x["name"].as_str().unwrap().to_string())
                .or_insert(0) += 1;
        }
        assert_eq!(got, want, "hold slices per mutex name");
        let waited: u64 = slices
            .iter()
            .filter(|x| x["cat"] == "openmp.wait")
            .map(|x| x["end"].as_u64().unwrap() - x["ts"].as_u64().unwrap())
            .sum();
        assert_eq!(waited, u(s, "mutex_wait_ns"), "wait slices = mutex wait");
        // barrier waits, implicit ones included: count and wait
        let barriers: Vec<&Value> = slices
            .iter()
            .filter(|x| x["cat"] == "openmp.barrier")
            .collect();
        assert_eq!(barriers.len() as u64, u(s, "barrier_events"));
        let barrier_wait: u64 = barriers
            .iter()
            .map(|x| x["end"].as_u64().unwrap() - x["ts"].as_u64().unwrap())
            .sum();
        assert_eq!(barrier_wait, u(s, "barrier_wait_ns"));
        // flows: both ends present, between two threads
        let tids = track_tid(&sum);
        let mut outs: HashMap<u64, u64> = HashMap::new();
        for x in slices
            .iter()
            .filter(|x| x["cat"].as_str().unwrap().starts_with("openmp"))
        {
            for f in x["flows_out"].as_array().unwrap() {
                outs.insert(f.as_u64().unwrap(), tids[&x["track"].as_u64().unwrap()]);
            }
        }
        let mut flows = 0;
        for x in slices
            .iter()
            .filter(|x| x["cat"].as_str().unwrap().starts_with("openmp"))
        {
            for f in x["flows_in"].as_array().unwrap() {
                let from = outs[&f.as_u64().unwrap()];
                assert_ne!(from, tids[&x["track"].as_u64().unwrap()], "{x}");
                flows += 1;
            }
        }
        assert!(flows > 0, "hand-overs drawn");
    }

    // folded: the mutex lines sum to the mutex wait
    let folded = dir.path().join("f.folded");
    export(
        &rec,
        &["--format", "folded", "-o", folded.to_str().unwrap()],
    );
    let text = std::fs::read_to_string(&folded).unwrap();
    let total: u64 = text
        .lines()
        .filter_map(|l| l.rsplit_once(' '))
        .filter(|(stack, _)| stack.contains("[openmp ") && stack.ends_with(']'))
        .map(|(_, v)| v.parse::<u64>().unwrap())
        .sum();
    assert_eq!(total, u(s, "mutex_wait_ns"), "{text}");

    let Some(go) = go() else {
        eprintln!("SKIP: go is not installed, so `go tool pprof` cannot be run");
        return;
    };
    let file = dir.path().join("p.pb.gz");
    export(&rec, &["--format", "pprof", "-o", file.to_str().unwrap()]);
    let mutex_kinds = ["critical", "lock", "nest_lock", "atomic", "ordered"];
    let mut delay = 0i64;
    let mut hold = 0i64;
    for kind in mutex_kinds {
        let filter = format!("openmp_kind=^{kind}$");
        let raw = pprof(&go, &["-raw", "-tagfocus", &filter], &file);
        delay += raw_delay_per_line(&raw).values().sum::<i64>();
        hold += raw_values(&raw).iter().map(|v| v[2]).sum::<i64>();
    }
    assert_eq!(delay as u64, u(s, "mutex_wait_ns"), "pprof delay vs JSON");
    assert_eq!(hold as u64, u(s, "mutex_hold_ns"), "pprof hold vs JSON");
}

/// The values of every sample of `go tool pprof -raw` (contentions,
/// delay, hold).
fn raw_values(raw: &str) -> Vec<[i64; 3]> {
    let mut out = Vec::new();
    let mut in_samples = false;
    for line in raw.lines() {
        let t = line.trim();
        match t {
            "Samples:" => in_samples = true,
            "Locations" | "Mappings" => in_samples = false,
            _ if in_samples => {
                if let Some((values, _)) = t.split_once(':') {
                    let v: Vec<i64> = values
                        .split_whitespace()
                        .filter_map(|x| x.parse().ok())
                        .collect();
                    if let [a, b, c] = v[..] {
                        out.push([a, b, c]);
                    }
                }
            }
            _ => {}
        }
    }
    out
}
