//! `contend export --format perfetto|chrome|pprof|svg|otf2` on the golden
//! recordings, each checked with the tool its users open it in:
//! Perfetto's own protobuf definitions (the `perfetto` PyPI package,
//! through `perfetto_summary.py`), `go tool pprof`, `otf2-print`, an XML
//! parser; the numbers against the recording's events (read with the
//! `contend` library) and the JSON report.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use contend::locks::{LockEvents, Outcome};
use contend::mpi::MpiEvents;
use contend::{AnalysisOptions, NoProgress, Recording};
use serde_json::Value;

use crate::common::{
    build, contend_bin, otf2_definitions, otf2_events_nested, record, report_json_with, tempdir, u,
    which, with_commas,
};
use crate::golden::fixtures;

fn contend(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new(contend_bin())
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap()
}

/// Runs `contend export` and returns its standard error; panics on failure.
fn export(dir: &Path, args: &[&str]) -> String {
    let mut all = vec!["export"];
    all.extend_from_slice(args);
    let out = contend(dir, &all);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "contend {all:?}: {stderr}");
    stderr
}

/// Python with Perfetto's protobuf definitions, if installed.
fn perfetto_python() -> Option<&'static str> {
    ["python3", "/usr/bin/python3"].into_iter().find(|py| {
        Command::new(py)
            .args([
                "-c",
                "from perfetto.protos.perfetto.trace import perfetto_trace_pb2",
            ])
            .output()
            .is_ok_and(|o| o.status.success())
    })
}

/// The trace decoded by `perfetto_summary.py`.
pub(crate) fn perfetto_summary(trace: &Path) -> Option<Value> {
    let Some(py) = perfetto_python() else {
        eprintln!("SKIP: the `perfetto` Python package is not installed (pip install perfetto)");
        return None;
    };
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/e2e/perfetto_summary.py");
    let out = Command::new(py).arg(script).arg(trace).output().unwrap();
    assert!(
        out.status.success(),
        "perfetto_summary.py: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["errors"], Value::Array(vec![]), "decoding errors");
    Some(v)
}

/// Track uuid → tid of its thread (lanes resolve through their parent).
fn track_tids(summary: &Value) -> HashMap<u64, u64> {
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

fn open(dir: &Path) -> Recording {
    Recording::open(dir).unwrap()
}

#[test]
fn perfetto_slices_are_the_lock_events() {
    let tmp = fixtures();
    for name in ["sharequeue-stacks.data", "sharequeue-two.data"] {
        let trace = tmp.path().join(format!("{name}.pftrace"));
        export(
            tmp.path(),
            &[name, "--format", "perfetto", "-o", trace.to_str().unwrap()],
        );
        let Some(s) = perfetto_summary(&trace) else {
            return;
        };
        let rec = open(&tmp.path().join(name));
        let analysis = contend::analyze(&rec, &AnalysisOptions::default(), &NoProgress);
        let ev = analysis.events::<LockEvents>().unwrap();
        let tids = track_tids(&s);
        // One process track, named after the command, and a thread track
        // per traced thread.
        let tracks = s["tracks"].as_array().unwrap();
        let pid = rec.processes[0].trace.pid;
        assert!(
            tracks.iter().any(|t| t["kind"] == "process"
                && t["pid"] == pid
                && t["process_name"] == "sharequeue"),
            "{tracks:?}"
        );
        for th in &ev.set.threads {
            assert!(
                tracks
                    .iter()
                    .any(|t| t["kind"] == "thread" && t["tid"] == th.tid && t["pid"] == th.pid),
                "thread {} has no track",
                th.tid
            );
        }
        // Slices one to one with the events: a hold slice per acquisition,
        // a wait slice per acquisition that waited, same thread and times.
        let mut want: Vec<(u64, String, u64, u64)> = Vec::new();
        for e in &ev.set.events {
            assert_eq!(e.outcome(), Outcome::Acquired, "sharequeue only locks");
            let tid = u64::from(ev.set.threads[e.thread() as usize].tid);
            let lock = &ev.names.objects[e.object as usize];
            if e.acquired_ns() > e.requested_ns() {
                want.push((
                    tid,
                    format!("wait {lock}"),
                    e.requested_ns(),
                    e.acquired_ns(),
                ));
            }
            want.push((
                tid,
                format!("hold {lock}"),
                e.acquired_ns(),
                e.released_ns(),
            ));
        }
        let mut got: Vec<(u64, String, u64, u64)> = s["slices"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| {
                (
                    tids[&x["track"].as_u64().unwrap()],
                    x["name"].as_str().unwrap().to_string(),
                    x["ts"].as_u64().unwrap(),
                    x["end"].as_u64().unwrap(),
                )
            })
            .collect();
        want.sort();
        got.sort();
        assert_eq!(got, want, "{name}: slices vs lock events");
        // Arguments: the site, the flags.
        for x in s["slices"].as_array().unwrap() {
            assert_eq!(x["args"]["kind"], "mutex");
            assert!(x["args"]["site"]
                .as_str()
                .unwrap()
                .contains("sharequeue.c:"));
            assert!(x["args"]["critical_path"].is_boolean());
        }
        // A flow per contended hand-over on the critical path, from the
        // releasing thread to the woken one.
        let mut outs: HashMap<u64, u64> = HashMap::new();
        let mut ins: HashMap<u64, (u64, u64)> = HashMap::new();
        for x in s["slices"].as_array().unwrap() {
            let tid = tids[&x["track"].as_u64().unwrap()];
            for f in x["flows_out"].as_array().unwrap() {
                assert!(outs.insert(f.as_u64().unwrap(), tid).is_none());
            }
            for f in x["flows_in"].as_array().unwrap() {
                ins.insert(f.as_u64().unwrap(), (tid, x["ts"].as_u64().unwrap()));
            }
        }
        assert_eq!(
            outs.len(),
            ev.critical_path.hand_overs.len(),
            "{name}: flows"
        );
        assert_eq!(
            outs.keys().collect::<HashSet<_>>(),
            ins.keys().collect::<HashSet<_>>()
        );
        for (&(waiter, waker), _) in ev.critical_path.hand_overs.iter().zip(0..) {
            let id = u64::from(waiter) + 1;
            let w = &ev.set.events[waker as usize];
            let v = &ev.set.events[waiter as usize];
            assert_eq!(
                outs[&id],
                u64::from(ev.set.threads[w.thread() as usize].tid)
            );
            assert_eq!(
                ins[&id].0,
                u64::from(ev.set.threads[v.thread() as usize].tid)
            );
            assert!(w.released_ns() <= v.acquired_ns());
        }
        // Counter tracks from the service samples: a value per interval.
        let ticks = match &rec.service {
            Some(Ok(f)) => f.ticks.len(),
            _ => panic!("the fixture has samples"),
        };
        for counter in ["Active threads", "CPUs busy", "Run queue"] {
            let t = tracks
                .iter()
                .find(|t| {
                    t["kind"] == "counter" && t["name"].as_str().unwrap().starts_with(counter)
                })
                .unwrap_or_else(|| panic!("no {counter} track"));
            let values = s["counters"][t["uuid"].to_string()].as_array().unwrap();
            assert!(!values.is_empty() && values.len() <= ticks, "{counter}");
        }

        // Chrome JSON: the same slices (µs with ns precision).
        let json_path = tmp.path().join(format!("{name}.json"));
        export(
            tmp.path(),
            &[
                name,
                "--format",
                "chrome",
                "-o",
                json_path.to_str().unwrap(),
            ],
        );
        let chrome: Value = serde_json::from_str(&std::fs::read_to_string(&json_path).unwrap())
            .expect("chrome export is JSON");
        let us = |v: &Value| (v.as_f64().unwrap() * 1000.0).round() as u64;
        let mut complete: Vec<(u64, String, u64, u64)> = chrome["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["ph"] == "X")
            .map(|e| {
                let ts = us(&e["ts"]);
                (
                    e["tid"].as_u64().unwrap(),
                    e["name"].as_str().unwrap().to_string(),
                    ts,
                    ts + us(&e["dur"]),
                )
            })
            .collect();
        complete.sort();
        // Times in µs lose nothing below 2^53 ns (about 104 days).
        assert_eq!(complete, want, "{name}: chrome slices");
        let flows = chrome["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["ph"] == "s")
            .count();
        assert_eq!(flows, ev.critical_path.hand_overs.len());
    }
}

#[test]
fn perfetto_mpi_ranks_line_up() {
    let tmp = fixtures();
    let name = "mpi-waits.data";
    let trace = tmp.path().join("mpi.pftrace");
    export(
        tmp.path(),
        &[name, "--format", "perfetto", "-o", trace.to_str().unwrap()],
    );
    let Some(s) = perfetto_summary(&trace) else {
        return;
    };
    let rec = open(&tmp.path().join(name));
    let analysis = contend::analyze(&rec, &AnalysisOptions::default(), &NoProgress);
    let mpi = match &rec.mpi {
        Some(Ok(m)) => m,
        _ => panic!("MPI fixture"),
    };
    let waits = &analysis.events::<MpiEvents>().unwrap().analysis;
    let tids = track_tids(&s);
    let tracks = s["tracks"].as_array().unwrap();
    // A process track per rank, a thread track per rank's thread. The
    // rank's track is named by rank, pid and the program its maps file
    // shows (maps/<pid>.maps: /tmp/contend-golden/mpi_waits).
    for r in &mpi.ranks {
        let mut want = format!("rank {} (pid {}) mpi_waits", r.rank, r.pid);
        if !r.host.is_empty() {
            want.push_str(&format!(" on {}", r.host));
        }
        assert!(
            tracks
                .iter()
                .any(|t| t["kind"] == "process" && t["pid"] == r.pid && t["process_name"] == want),
            "rank {}: no process track named {want:?} in {tracks:?}",
            r.rank
        );
    }
    let slices = s["slices"].as_array().unwrap();
    // Every MPI call a slice, at its times, on its rank's thread.
    let mut want: Vec<(u64, String, u64, u64)> = mpi
        .ranks
        .iter()
        .flat_map(|r| {
            r.events.iter().map(|e| {
                (
                    u64::from(e.tid),
                    e.op.name().to_string(),
                    e.enter_ns,
                    e.exit_ns,
                )
            })
        })
        .collect();
    let mut got: Vec<(u64, String, u64, u64)> = slices
        .iter()
        .filter(|x| x["cat"] == "mpi")
        .map(|x| {
            (
                tids[&x["track"].as_u64().unwrap()],
                x["name"].as_str().unwrap().to_string(),
                x["ts"].as_u64().unwrap(),
                x["end"].as_u64().unwrap(),
            )
        })
        .collect();
    want.sort();
    got.sort();
    assert_eq!(got, want);
    // Every wait state a slice on the waiting rank, from the call's
    // entry, lasting the wait, naming the rank that caused it.
    let wait_slices: Vec<&Value> = slices.iter().filter(|x| x["cat"] == "mpi.wait").collect();
    assert_eq!(wait_slices.len(), waits.waits.len());
    for w in &waits.waits {
        let r = mpi.ranks.iter().find(|r| r.rank == w.rank).unwrap();
        let call = r.events.at(w.event);
        assert!(
            wait_slices.iter().any(|x| x["ts"] == call.enter_ns
                && x["end"] == (call.enter_ns + w.wait_ns).min(call.exit_ns)
                && x["args"]["caused_by_rank"] == w.cause
                && x["args"]["pattern"] == w.pattern.key()),
            "{w:?}"
        );
    }
    // A flow per matched message, from the sender's rank to the receiver's.
    let rank_of_tid: HashMap<u64, u32> = mpi
        .ranks
        .iter()
        .flat_map(|r| r.events.iter().map(move |e| (u64::from(e.tid), r.rank)))
        .collect();
    let mut flows: BTreeMap<u64, (Option<u32>, Option<u32>)> = BTreeMap::new();
    for x in slices {
        let rank = rank_of_tid
            .get(&tids[&x["track"].as_u64().unwrap()])
            .copied();
        for f in x["flows_out"].as_array().unwrap() {
            flows.entry(f.as_u64().unwrap()).or_default().0 = rank;
        }
        for f in x["flows_in"].as_array().unwrap() {
            flows.entry(f.as_u64().unwrap()).or_default().1 = rank;
        }
    }
    assert_eq!(flows.len(), waits.messages.len());
    let mut pairs: Vec<(Option<u32>, Option<u32>)> = flows.into_values().collect();
    let mut want_pairs: Vec<(Option<u32>, Option<u32>)> = waits
        .messages
        .iter()
        .map(|m| (Some(m.source), Some(m.dest)))
        .collect();
    pairs.sort();
    want_pairs.sort();
    assert_eq!(pairs, want_pairs);

    // --min-duration keeps only the long calls (and their wait states).
    let long = tmp.path().join("long.pftrace");
    export(
        tmp.path(),
        &[
            name,
            "--format",
            "perfetto",
            "--min-duration",
            "50ms",
            "-o",
            long.to_str().unwrap(),
        ],
    );
    let s = perfetto_summary(&long).unwrap();
    let kept: Vec<&Value> = s["slices"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|x| x["cat"] == "mpi")
        .collect();
    let expected = want.iter().filter(|w| w.3 - w.2 >= 50_000_000).count();
    assert!(expected > 0 && expected < want.len());
    assert_eq!(kept.len(), expected);
}

#[test]
fn critical_only_exports_keep_the_path() {
    let tmp = fixtures();
    let trace = tmp.path().join("cp.pftrace");
    export(
        tmp.path(),
        &[
            "sharequeue-two.data",
            "--format",
            "perfetto",
            "--critical-only",
            "-o",
            trace.to_str().unwrap(),
        ],
    );
    let Some(s) = perfetto_summary(&trace) else {
        return;
    };
    let r = report_json_with(
        &tmp.path().join("sharequeue-two.data"),
        &["--critical-only"],
    );
    let slices = s["slices"].as_array().unwrap();
    assert!(slices.iter().all(|x| x["args"]["critical_path"] == true));
    let holds = slices.iter().filter(|x| x["cat"] == "lock.hold").count() as u64;
    assert_eq!(holds, r["locks"]["summary"]["events"].as_u64().unwrap());
}

/// The Go toolchain's `go`, on PATH or where the machines have it.
pub(crate) fn go() -> Option<PathBuf> {
    which("go").or_else(|| {
        let p = PathBuf::from("/usr/local/go/bin/go");
        p.is_file().then_some(p)
    })
}

/// `go tool pprof ARGS FILE`, its standard output.
pub(crate) fn pprof(go: &Path, args: &[&str], file: &Path) -> String {
    let out = Command::new(go)
        .args(["tool", "pprof"])
        .args(args)
        .arg(file)
        .env("PPROF_TMPDIR", file.parent().unwrap())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "go tool pprof {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// From `go tool pprof -raw`: the delay (second sample value) summed per
/// leaf location's `function file:line`.
pub(crate) fn raw_delay_per_line(raw: &str) -> BTreeMap<(String, String), i64> {
    let mut locations: HashMap<u64, (String, String)> = HashMap::new();
    let mut samples: Vec<(i64, u64)> = Vec::new();
    let mut part = "";
    for line in raw.lines() {
        let t = line.trim();
        match t {
            "Samples:" | "Locations" | "Mappings" => {
                part = t;
                continue;
            }
            _ => {}
        }
        if part == "Samples:" {
            if let Some((values, locs)) = t.split_once(':') {
                let v: Vec<i64> = values
                    .split_whitespace()
                    .filter_map(|x| x.parse().ok())
                    .collect();
                let leaf = locs.split_whitespace().next().and_then(|x| x.parse().ok());
                if let (3, Some(leaf)) = (v.len(), leaf) {
                    samples.push((v[1], leaf));
                }
            }
        } else if part == "Locations" {
            // `1: 0x55… M=1 main /path/file.c:75:0 s=0`
            let Some((id, rest)) = t.split_once(':') else {
                continue;
            };
            let Ok(id) = id.trim().parse::<u64>() else {
                continue;
            };
            let words: Vec<&str> = rest.split_whitespace().collect();
            let fileline = words[words.len() - 2];
            let mut parts = fileline.rsplitn(3, ':');
            let (_col, line, file) = (parts.next(), parts.next(), parts.next());
            let start = if words[1].starts_with("M=") { 2 } else { 1 };
            let function = words[start..words.len() - 2].join(" ");
            let file = file.unwrap_or("").rsplit('/').next().unwrap().to_string();
            locations.insert(id, (function, format!("{file}:{}", line.unwrap_or(""))));
        }
    }
    let mut out = BTreeMap::new();
    for (delay, leaf) in samples {
        *out.entry(locations[&leaf].clone()).or_insert(0) += delay;
    }
    out
}

#[test]
fn pprof_totals_are_the_reported_wait_per_site() {
    let Some(go) = go() else {
        eprintln!("SKIP: go is not installed, so `go tool pprof` cannot be run");
        return;
    };
    let tmp = fixtures();
    for (name, section) in [
        ("sharequeue-stacks.data", "locks"),
        ("sharequeue-two.data", "locks"),
        ("mpi-waits.data", "mpi"),
    ] {
        let file = tmp.path().join(format!("{name}.pb.gz"));
        export(
            tmp.path(),
            &[name, "--format", "pprof", "-o", file.to_str().unwrap()],
        );
        let raw = pprof(&go, &["-raw"], &file);
        let got = raw_delay_per_line(&raw);
        let r = report_json_with(&tmp.path().join(name), &[] as &[&str]);
        let mut want: BTreeMap<(String, String), i64> = BTreeMap::new();
        for site in r[section]["by_site"].as_array().unwrap() {
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
        let got: BTreeMap<(String, String), i64> = got.into_iter().filter(|g| g.1 > 0).collect();
        assert_eq!(
            got, want,
            "{name}: delay per line (pprof) vs wait per site (JSON)"
        );
        // -top lists the sites' functions with their flat delay; -traces works.
        let top = pprof(&go, &["-top"], &file);
        assert!(top.contains("Type: delay"), "{top}");
        for (function, _) in want.keys() {
            assert!(top.contains(function.as_str()), "{function} in {top}");
        }
        let traces = pprof(&go, &["-traces"], &file);
        assert!(traces.contains("-----------+"), "{traces}");
        if section == "locks" {
            // Hold time: the report's hold.
            let hold = pprof(&go, &["-raw", "-sample_index=hold"], &file);
            assert!(hold.contains("hold/nanoseconds"));
        } else {
            assert!(traces.contains("pattern:") && traces.contains("caused_by_rank:"));
        }
    }
}

/// Record counts of `otf2-print` output, by record name.
fn otf2_counts(text: &str) -> HashMap<String, u64> {
    let mut c = HashMap::new();
    for line in text.lines() {
        if let Some(w) = line.split_whitespace().next() {
            if w.chars().all(|c| c.is_ascii_uppercase() || c == '_') && w.len() > 2 {
                *c.entry(w.to_string()).or_insert(0) += 1;
            }
        }
    }
    c
}

#[test]
fn otf2_keeps_every_mpi_record() {
    if which("otf2-print").is_none() {
        eprintln!("SKIP: otf2-print is not installed (Debian: otf2-tools)");
        return;
    }
    let tmp = fixtures();
    let out = contend(
        tmp.path(),
        &[
            "export",
            "mpi-waits.data",
            "--format",
            "otf2",
            "-o",
            "mpi.otf2",
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    if stderr.contains("built without libotf2") {
        panic!("this build lacks libotf2 although otf2-print is installed: {stderr}");
    }
    assert!(out.status.success(), "{stderr}");
    let anchor = tmp.path().join("mpi.otf2/traces.otf2");
    let print = Command::new("otf2-print").arg(&anchor).output().unwrap();
    assert!(
        print.status.success(),
        "otf2-print: {}",
        String::from_utf8_lossy(&print.stderr)
    );
    let text = String::from_utf8(print.stdout).unwrap();
    let counts = otf2_counts(&text);
    let r = report_json_with(&tmp.path().join("mpi-waits.data"), &[] as &[&str]);
    let m = &r["mpi"];
    let n = |k: &str| counts.get(k).copied().unwrap_or(0);
    let messages = m["matching"]["messages"].as_u64().unwrap();
    assert_eq!(
        n("MPI_SEND") + n("MPI_ISEND"),
        messages + m["matching"]["unmatched_sends"].as_u64().unwrap(),
        "sends"
    );
    assert_eq!(
        n("MPI_RECV") + n("MPI_IRECV"),
        messages + m["matching"]["unmatched_receives"].as_u64().unwrap(),
        "receives"
    );
    assert_eq!(
        n("MPI_COLLECTIVE_END"),
        m["collective"]["events"].as_u64().unwrap()
    );
    assert_eq!(n("MPI_COLLECTIVE_BEGIN"), n("MPI_COLLECTIVE_END"));
    // Every call entered and left.
    let rec = open(&tmp.path().join("mpi-waits.data"));
    let calls: u64 = match &rec.mpi {
        Some(Ok(mpi)) => mpi.ranks.iter().map(|r| r.events.len() as u64).sum(),
        _ => panic!(),
    };
    assert_eq!(n("ENTER"), calls);
    assert_eq!(n("LEAVE"), calls);
    // Definitions: the communicator and a location per rank.
    let defs = otf2_definitions(&anchor);
    assert!(
        defs.contains("COMM ") && defs.contains("\"MPI_COMM_WORLD\""),
        "{defs}"
    );
    assert_eq!(
        defs.lines().filter(|l| l.starts_with("LOCATION ")).count() as u64,
        m["ranks"].as_u64().unwrap()
    );

    // Lock events as OTF2 locks.
    export(
        tmp.path(),
        &[
            "sharequeue-two.data",
            "--format",
            "otf2",
            "-o",
            "locks.otf2",
        ],
    );
    let print = Command::new("otf2-print")
        .arg(tmp.path().join("locks.otf2/traces.otf2"))
        .output()
        .unwrap();
    assert!(print.status.success());
    let counts = otf2_counts(&String::from_utf8(print.stdout).unwrap());
    let r = report_json_with(&tmp.path().join("sharequeue-two.data"), &[] as &[&str]);
    let events = r["locks"]["summary"]["events"].as_u64().unwrap();
    assert_eq!(counts["THREAD_ACQUIRE_LOCK"], events);
    assert_eq!(counts["THREAD_RELEASE_LOCK"], events);
    // Not over an existing archive without --force; never over a directory
    // that is not one.
    let again = contend(
        tmp.path(),
        &[
            "export",
            "sharequeue-two.data",
            "--format",
            "otf2",
            "-o",
            "locks.otf2",
        ],
    );
    assert_eq!(again.status.code(), Some(2));
    export(
        tmp.path(),
        &[
            "sharequeue-two.data",
            "--format",
            "otf2",
            "-o",
            "locks.otf2",
            "--force",
        ],
    );
    let other = contend(
        tmp.path(),
        &[
            "export",
            "sharequeue-two.data",
            "--format",
            "otf2",
            "-o",
            "mpi-waits.data",
            "--force",
        ],
    );
    assert_eq!(other.status.code(), Some(2));
    assert!(tmp.path().join("mpi-waits.data/meta.json").exists());
}

/// OpenMP constructs and locks beside pthread locks on the same threads
/// (tests/programs/omp_pthread_mix.c, `gcc -fopenmp`): one location per
/// thread; on each, every region entered is left, innermost first, and
/// every lock acquired is released by the same (model, lock, order);
/// OpenMP regions and locks carry the OPENMP paradigm, with the critical
/// construct's role; the counts are the report's.
#[test]
fn otf2_nests_openmp_constructs_and_pthread_locks_per_thread() {
    require_tool!("gcc");
    if which("otf2-print").is_none() {
        eprintln!("SKIP: otf2-print is not installed (Debian: otf2-tools)");
        return;
    }
    let tmp = tempdir();
    let exe = build("omp_pthread_mix.c", &["-fopenmp"]);
    let rec = tmp.path().join("mix.data");
    let out = record(&rec, &exe, &[] as &[&str]);
    assert!(out.success(), "{}", out.describe());
    export(
        tmp.path(),
        &["mix.data", "--format", "otf2", "-o", "mix.otf2"],
    );
    let anchor = tmp.path().join("mix.otf2/traces.otf2");
    let events = otf2_events_nested(&anchor);
    let all = || events.values().flatten();
    let omp_enters = all()
        .filter(|(r, rest)| r == "ENTER" && rest.contains("Region: \"omp"))
        .count() as u64;
    let acquires = |model: &str| {
        all()
            .filter(|(r, rest)| r == "THREAD_ACQUIRE_LOCK" && rest.contains(model))
            .count() as u64
    };
    let (omp_acquires, pthread_acquires) = (acquires("Model: OPENMP"), acquires("Model: PTHREAD"));
    assert_eq!(events.len(), 2, "a location per thread of the team");
    let r = report_json_with(&rec, &[] as &[&str]);
    let rows = |table: &str| r["openmp"][table].as_array().unwrap().clone();
    let sum = |rows: &[Value]| {
        rows.iter()
            .map(|m| m["events"].as_u64().unwrap())
            .sum::<u64>()
    };
    let mutex_events = sum(&rows("mutexes"));
    let barrier_events = sum(&rows("barriers"));
    // 200 rounds × 2 threads of the critical section and of the lock
    assert!(mutex_events >= 800, "{}", r["openmp"]["mutexes"]);
    assert_eq!(omp_acquires, mutex_events);
    assert_eq!(omp_enters, mutex_events + barrier_events);
    let locks = &r["locks"]["summary"];
    assert_eq!(
        pthread_acquires,
        u(locks, "events") - u(locks, "failed_events")
    );
    assert!(pthread_acquires >= 800, "{locks}");
    // Definitions: the critical section's region and its paradigm.
    let defs = otf2_definitions(&anchor);
    assert!(
        defs.lines().any(|l| l.starts_with("REGION ")
            && l.contains("\"omp critical @ ")
            && l.contains("Role: CRITICAL, Paradigm: OPENMP")),
        "{defs}"
    );
    assert!(
        defs.lines().any(|l| l.starts_with("REGION ")
            && l.contains("\"omp_set_lock @ ")
            && l.contains("Paradigm: OPENMP")),
        "{defs}"
    );
}

#[test]
fn flame_graph_svg_holds_the_folded_stacks() {
    let tmp = fixtures();
    for (name, weight) in [
        ("sharequeue-two.data", "wait"),
        ("sharequeue-stacks.data", "hold"),
        ("mpi-waits.data", "mpi-wait"),
    ] {
        let folded = contend(
            tmp.path(),
            &[
                "export", name, "--format", "folded", "--weight", weight, "-o", "-",
            ],
        );
        assert!(folded.status.success());
        let folded = String::from_utf8(folded.stdout).unwrap();
        let svg_path = tmp.path().join(format!("{name}-{weight}.svg"));
        export(
            tmp.path(),
            &[
                name,
                "--format",
                "svg",
                "--weight",
                weight,
                "-o",
                svg_path.to_str().unwrap(),
            ],
        );
        // Well-formed XML.
        let parsed = Command::new("python3")
            .args([
                "-c",
                "import sys, xml.dom.minidom; xml.dom.minidom.parse(sys.argv[1])",
            ])
            .arg(&svg_path)
            .output()
            .unwrap();
        assert!(
            parsed.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&parsed.stderr)
        );
        let svg = std::fs::read_to_string(&svg_path).unwrap();
        // Every frame of the folded stacks is a frame of the graph (its
        // <title> names it with its weight), and the root holds the total.
        let total: u64 = folded
            .lines()
            .map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap())
            .sum();
        for line in folded.lines() {
            let (stack, _) = line.rsplit_once(' ').unwrap();
            for frame in stack.split(';') {
                let escaped = frame
                    .replace('&', "&amp;")
                    .replace('<', "&lt;")
                    .replace('>', "&gt;");
                assert!(
                    svg.contains(&format!("<title>{escaped} (")),
                    "{name}: frame {frame} missing"
                );
            }
        }
        let total = with_commas(total);
        assert!(
            svg.contains(&format!("<title>all ({total} ns")),
            "{name}: total {total}"
        );
    }
}

#[test]
fn exports_of_damaged_recordings_say_what_is_missing() {
    let tmp = fixtures();
    // A lock trace cut short (its chunks lost): the timelines keep what is
    // left (the service samples) and say what is missing; the formats that
    // need lock events say why there are none.
    let dir = tmp.path().join("sharequeue-two.data");
    let trace = std::fs::read_dir(dir.join("locks"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let bytes = std::fs::read(&trace).unwrap();
    std::fs::write(&trace, &bytes[..bytes.len() * 2 / 3]).unwrap();
    for format in ["perfetto", "chrome", "pprof", "folded"] {
        let out = contend(
            tmp.path(),
            &[
                "export",
                "sharequeue-two.data",
                "--format",
                format,
                "-o",
                "-",
            ],
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("warning:") && stderr.contains("truncated"),
            "{format}: {stderr}"
        );
        if matches!(format, "perfetto" | "chrome") {
            assert!(out.status.success(), "{format}: {stderr}");
            assert!(!out.stdout.is_empty());
        } else {
            assert_eq!(out.status.code(), Some(2), "{format}: {stderr}");
            assert!(stderr.contains("no lock events"), "{format}: {stderr}");
        }
    }
    // An MPI recording missing a rank: exported without it, said.
    std::fs::remove_file(tmp.path().join("mpi-waits.data/mpi/rank-3.cmpi")).unwrap();
    let out = contend(
        tmp.path(),
        &[
            "export",
            "mpi-waits.data",
            "--format",
            "perfetto",
            "-o",
            "-",
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("rank 3"), "{stderr}");
    // Unknown formats and charts list the valid ones.
    let out = contend(
        tmp.path(),
        &["export", "mpi-waits.data", "--format", "vampir"],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2));
    for f in ["perfetto", "chrome", "pprof", "folded", "svg", "otf2"] {
        assert!(stderr.contains(f), "{stderr}");
    }
    let out = contend(
        tmp.path(),
        &[
            "report",
            "mpi-waits.data",
            "--format",
            "svg",
            "--chart",
            "pie",
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr.contains("unknown chart `pie`") && stderr.contains("mpi-wait-by-rank"),
        "{stderr}"
    );
    // A lock-only format on an MPI-only recording says why it is empty.
    let out = contend(
        tmp.path(),
        &[
            "export",
            "mpi-waits.data",
            "--format",
            "svg",
            "--weight",
            "hold",
            "-o",
            "x.svg",
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no lock events"));
    assert!(!tmp.path().join("x.svg").exists());
}
