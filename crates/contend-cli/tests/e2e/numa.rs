//! NUMA end to end: the latency calibration on this machine (one node,
//! contenders on the other CPU), the software access sampler on a program
//! whose hot pages are known, the model and the migration plan through the
//! command line on hand-computed inputs, `move_pages` on a live process,
//! and bad input.

use std::io::BufRead;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use contend_trace::numa::CurvePoint;
use serde_json::Value;

use crate::common::{
    build, contend_bin, record_command, report_json_with, run_timeout, serial, tempdir, Output,
    Running, RUN_TIMEOUT,
};

fn contend(args: &[&str]) -> Output {
    let mut cmd = Command::new(contend_bin());
    cmd.args(args);
    run_timeout(cmd, Duration::from_secs(120))
}

/// A one-node latency table written by hand (l_nocont 100 ns, l_cont(1)
/// 150 ns).
const ONE_NODE: &str = r#"{"nodes":1,"l_nocont_ns":[100],"l_cont_ns":[[150]],"r_nocont_ns":[[null]],"r_cont_ns":[[null]]}"#;

/// Two nodes: l_nocont 100, l_cont(m) 100 + 50 m; r_nocont 200, r_cont(m)
/// 200 + 100 m (as in the library's hand-computed tests).
const TWO_NODES: &str = r#"{"nodes":2,"l_nocont_ns":[100,100],"l_cont_ns":[[150,200],[150,200]],
 "r_nocont_ns":[[null,200],[200,null]],"r_cont_ns":[[null,[300,400]],[[300,400],null]]}"#;

/// The calibration on this machine at small size: the rounds' spread and
/// the "resolved" verdict of every point agree with each other, the note
/// says whether any contention was measurable, the memory's share of the
/// throughput loop is positive everywhere and a note says exactly when it
/// fell beside contenders that lengthened the loads, and on a machine with
/// one node the remote tables are null and the text says so.
///
/// The ordering is a fact only of an undisturbed calibration: when other
/// programs took the CPUs of the master or a contender in some rounds even
/// after the calibration's own retries (`calibration.disturbed_points` >
/// 0), the calibration is run again, up to five times.
#[test]
fn calibrate_on_this_machine() {
    let _g = serial();
    let t = tempdir();
    let out_file = t.path().join("latency.json");
    let mut undisturbed = None;
    for attempt in 1..=5 {
        let out = contend(&[
            "numa",
            "calibrate",
            "-o",
            out_file.to_str().unwrap(),
            "--force",
            "--buffer-mb",
            "64",
            "--round",
            "50ms",
            "--rounds",
            "3",
            "--max-contenders",
            "2",
        ]);
        assert!(out.success(), "{}", out.describe());
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&out_file).unwrap()).unwrap();
        // The structure holds whatever the load.
        let n = v["nodes"].as_u64().unwrap() as usize;
        assert!(n >= 1);
        if n == 1 {
            assert_eq!(v["r_nocont_ns"][0][0], Value::Null);
            assert_eq!(v["r_cont_ns"][0][0], Value::Null);
            assert!(
                out.stdout.contains("one node: there is no remote memory"),
                "{}",
                out.describe()
            );
        }
        if v["calibration"]["disturbed_points"] == 0 {
            undisturbed = Some((v, out));
            break;
        }
        eprintln!(
            "calibration attempt {attempt}: {} point(s) disturbed by other programs (load average {}); measuring again",
            v["calibration"]["disturbed_points"],
            std::fs::read_to_string("/proc/loadavg").unwrap_or_default().trim()
        );
    }
    let Some((v, out)) = undisturbed else {
        // Other programs held the CPUs in every round of five calibrations:
        // whether a contender ran beside the master is unknown, so the
        // ordering cannot be checked (the structure was, above).
        eprintln!(
            "SKIP {}: ordering of the latencies not checked: no undisturbed calibration in 5 attempts (the machine is too busy)",
            module_path!()
        );
        return;
    };
    let n = v["nodes"].as_u64().unwrap() as usize;
    for i in 0..n {
        assert!(v["l_nocont_ns"][i].as_f64().unwrap() > 0.0);
    }
    // The throughput curve of node 0's own memory: m = 0, 1, 2.
    let points: Vec<&Value> = v["calibration"]["points"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["master_node"] == 0 && p["memory_node"] == 0)
        .collect();
    assert_eq!(points.len(), 3, "{}", out.describe());
    let range = |m: usize| {
        let r = &points[m]["latency_range_ns"];
        [r[0].as_f64().unwrap(), r[1].as_f64().unwrap()]
    };
    // Every point's median lies in its rounds' range, and "resolved" is
    // exactly "no contended round as fast as any uncontended one".
    for (m, p) in points.iter().enumerate() {
        let [lo, hi] = range(m);
        let med = p["latency_ns"].as_f64().unwrap();
        assert!(lo <= med && med <= hi, "m = {m}: {lo} ≤ {med} ≤ {hi}");
        let expect = (m > 0).then(|| lo > range(0)[1]);
        assert_eq!(
            p["contention_resolved"].as_bool(),
            expect,
            "m = {m}\n{}",
            out.describe()
        );
    }
    let resolved: Vec<usize> = (1..3)
        .filter(|&m| points[m]["contention_resolved"] == true)
        .collect();
    assert_eq!(
        out.stdout.contains("no measurable memory contention"),
        resolved.is_empty(),
        "the note says whether any contention was resolved\n{}",
        out.describe()
    );
    // The throughput loop's memory share (its time per iteration less the
    // same loop's with the load cached, timed beside the same contenders)
    // is positive at every point: a load from memory costs more than one
    // from L1, whatever the CPU's speed. Whether it grows with contention
    // is a fact of the machine, not of the calibration: this guest's loop
    // with work ran *faster* beside contenders in a CI run (194 → 219 MB/s
    // while the loads lengthened 154 → 175 ns back to back) and again at
    // the desk (share 185 → 174 ns, the work alone steady at 130 ns). The
    // calibration says so in a note exactly when a resolved, longer
    // latency comes with a smaller share.
    let line = v["calibration"]["line_bytes"].as_u64().unwrap();
    let point = |m: usize| -> CurvePoint { serde_json::from_value(points[m].clone()).unwrap() };
    for m in 0..3 {
        let alone = point(m).work_alone_ns.unwrap();
        let share = point(m).memory_share_ns(line).unwrap();
        assert!(
            alone > 0.0 && share > 0.0,
            "m = {m}: work alone {alone} ns, memory's share {share} ns\n{}",
            out.describe()
        );
    }
    let faster = resolved.iter().any(|&m| {
        point(m).latency_ns > point(0).latency_ns
            && point(m).memory_share_ns(line) < point(0).memory_share_ns(line)
    });
    assert_eq!(
        out.stdout
            .contains("yet the memory's share of an iteration"),
        faster,
        "the note on a loop faster beside contenders\n{}",
        out.describe()
    );
    eprintln!(
        "{}: latencies {:?} ns, memory's shares of the throughput loop {:?} ns",
        module_path!(),
        (0..3).map(|m| point(m).latency_ns).collect::<Vec<_>>(),
        (0..3)
            .map(|m| point(m).memory_share_ns(line).unwrap())
            .collect::<Vec<_>>()
    );
    assert!(points[1]["contender_bytes_per_s"].as_f64().unwrap() > 0.0);
    // The table is what `numa estimate` takes.
    let acc = t.path().join("a.csv");
    std::fs::write(&acc, "from_node,to_node,accesses\n0,0,1000000\n").unwrap();
    let est = contend(&[
        "numa",
        "estimate",
        "--accesses",
        acc.to_str().unwrap(),
        "--latency",
        out_file.to_str().unwrap(),
        "--time",
        "1",
        "--format",
        "json",
    ]);
    assert!(est.success(), "{}", est.describe());
}

/// Addresses printed by numa_hammer: ("hot", lo, hi), ("cold", lo, hi).
fn ranges(stdout: &str) -> Vec<(String, u64, u64)> {
    stdout
        .lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            let name = w.next()?.to_string();
            let lo = u64::from_str_radix(w.next()?.strip_prefix("0x")?, 16).ok()?;
            let hi = u64::from_str_radix(w.next()?.strip_prefix("0x")?, 16).ok()?;
            Some((name, lo, hi))
        })
        .collect()
}

/// The software sampler on a program that reads a 64 MiB array at random
/// for a second (sampled every 250 µs of its CPU time): the pages it samples are that array's (≥ 90 % of the
/// samples with an address), the report's hottest page lies in it, and on
/// this one-node machine the report says so and has no remote figures.
#[test]
fn the_sampler_finds_the_hot_array() {
    let _g = serial();
    let exe = build("numa_hammer.c", &[]);
    let t = tempdir();
    let dir = t.path().join("rec.data");
    let mut cmd = record_command(&dir, &exe, &["1"]);
    let args: Vec<_> = cmd.get_args().map(|a| a.to_owned()).collect();
    // record --numa: insert the flag after `record`.
    // 250 µs of CPU time: enough samples even when the program gets only
    // part of a CPU on a busy machine.
    let mut with = vec![
        args[0].clone(),
        "--numa".into(),
        "--numa-period".into(),
        "250us".into(),
    ];
    with.extend(args[1..].iter().cloned());
    cmd = Command::new(contend_bin());
    cmd.args(&with);
    let out = run_timeout(cmd, RUN_TIMEOUT);
    assert!(out.success(), "{}", out.describe());
    let r = ranges(&out.stdout);
    let hot = r
        .iter()
        .find(|x| x.0 == "hot")
        .expect("the program prints its arrays");
    let info: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("numa/sampler.json")).unwrap())
            .unwrap();
    assert_eq!(info["method"], "software", "{info}");
    let rows =
        contend_trace::numa::histogram::read_page_samples(&dir.join("numa/samples.csv")).unwrap();
    let total: u64 = rows.iter().map(|s| s.samples).sum();
    let in_hot: u64 = rows
        .iter()
        .filter(|s| s.page + 4096 > hot.1 && s.page < hot.2)
        .map(|s| s.samples)
        .sum();
    assert!(total >= 100, "only {total} samples with an address: {info}");
    assert!(
        in_hot as f64 >= 0.9 * total as f64,
        "{in_hot} of {total} samples in the hot array: {info}"
    );
    assert_eq!(total, info["resolved"].as_u64().unwrap());
    // The report, with a calibration.
    let lat = t.path().join("latency.json");
    std::fs::write(&lat, ONE_NODE).unwrap();
    let json = report_json_with(&dir, &["--numa-latency", lat.to_str().unwrap()]);
    let numa = &json["numa"];
    // The report's hottest pages are the sampler's: its first page has
    // the most samples of any page, and the first ten are mostly the hot
    // array's. (Not "the first one is the hot array's": 4,000 samples over
    // the hot array's 16,384 pages give most of its pages none or one, so
    // a page elsewhere with a few samples, the cold array's filled at the
    // start, can tie with or pass the hot array's best.)
    let page_of = |v: &Value| {
        u64::from_str_radix(v["page"].as_str().unwrap().trim_start_matches("0x"), 16).unwrap()
    };
    let listed: Vec<(u64, u64)> = numa["hot_pages"]
        .as_array()
        .unwrap()
        .iter()
        .take(10)
        .map(|v| (page_of(v), v["samples"].as_u64().unwrap()))
        .collect();
    let most = rows.iter().map(|s| s.samples).max().unwrap();
    assert_eq!(
        listed[0].1, most,
        "hottest page {:#x}: {listed:?}",
        listed[0].0
    );
    let listed_total: u64 = listed.iter().map(|p| p.1).sum();
    let listed_hot: u64 = listed
        .iter()
        .filter(|p| p.0 + 4096 > hot.1 && p.0 < hot.2)
        .map(|p| p.1)
        .sum();
    assert!(
        2 * listed_hot >= listed_total,
        "the hottest pages are mostly outside the hot array: {listed:?}"
    );
    let nodes = info["nodes"].as_u64().unwrap();
    if nodes == 1 {
        assert_eq!(numa["single_node"], true);
        assert_eq!(numa["nodes"][0]["remote_accesses"], Value::Null);
        assert!(numa["notes"][0].as_str().unwrap().contains("one NUMA node"));
        // Model figures exist: a time lost ≥ 0 on node 0.
        assert!(numa["overhead_ns"].as_i64().unwrap() >= 0);
        assert_eq!(numa["bottleneck_node"], 0);
    }
    // Without a calibration the section shows samples and says why there
    // is no model.
    let json = report_json_with(&dir, &[] as &[&str]);
    assert_eq!(json["numa"]["overhead_ns"], Value::Null);
    assert!(json["numa"]["nodes"][0]["local_samples"].as_u64().unwrap() > 0);
}

/// The two-node example of the library tests through the command line:
/// node 0 has L = 6000 and R'_10 = 4000, node 1 L = 2000, t_ex = 1 ms.
/// Eq. 13 = 6000 · 22.8085 + 4000 · 45.6171 = 319 319 ns at node 0; the
/// corrected Eq. 9 changes it (p_lr(0,2) = 0.6 · 4000/9999).
#[test]
fn estimate_and_plan_from_files() {
    let t = tempdir();
    let lat = t.path().join("l.json");
    std::fs::write(&lat, TWO_NODES).unwrap();
    let acc = t.path().join("a.csv");
    std::fs::write(
        &acc,
        "from_node,to_node,accesses\n0,0,6000\n1,0,4000\n1,1,2000\n",
    )
    .unwrap();
    let est = |variant: &str| -> Value {
        let out = contend(&[
            "numa",
            "estimate",
            "--accesses",
            acc.to_str().unwrap(),
            "--latency",
            lat.to_str().unwrap(),
            "--time",
            "1ms",
            "--format",
            "json",
            "--variant",
            variant,
        ]);
        assert!(out.success(), "{}", out.describe());
        serde_json::from_str(&out.stdout).unwrap()
    };
    let v = est("printed");
    let e1 = (-1.0f64).exp();
    let want = 6000.0 * (e1 * 50.0 + e1 / 2.0 * 0.24 * 100.0)
        + 4000.0 * (e1 * 100.0 + e1 / 2.0 * 0.24 * 200.0);
    assert_eq!(
        v["numa"]["overhead_ns"].as_i64().unwrap(),
        want.round() as i64
    );
    assert_eq!(v["numa"]["bottleneck_node"], 0);
    assert_eq!(v["numa"]["nodes"][0]["mu"].as_f64().unwrap(), 1.0);
    let places: Vec<&str> = v["numa"]["what_if"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["placement"].as_str().unwrap())
        .collect();
    assert_eq!(places, ["node:0", "interleave"]);
    let c = est("corrected");
    assert_ne!(c["numa"]["overhead_ns"], v["numa"]["overhead_ns"]);
    assert_eq!(c["numa"]["variant"], "corrected");
    // Text output names the bottleneck.
    let out = contend(&[
        "numa",
        "estimate",
        "--accesses",
        acc.to_str().unwrap(),
        "--latency",
        lat.to_str().unwrap(),
        "--time",
        "0.001",
    ]);
    assert!(
        out.success() && out.stdout.contains("Bottleneck node"),
        "{}",
        out.describe()
    );

    // The plan of migration_plan_two_nodes (constant latencies): page
    // 0x1000 (100 accesses from each node) goes from node 0 to node 1.
    let flat = r#"{"nodes":2,"l_nocont_ns":[100,100],"l_cont_ns":[[100,100],[100,100]],
      "r_nocont_ns":[[null,200],[200,null]],"r_cont_ns":[[null,[200,200]],[[200,200],null]]}"#;
    std::fs::write(&lat, flat).unwrap();
    let pages = t.path().join("p.csv");
    std::fs::write(
        &pages,
        "page,from_node,to_node,accesses\n0x1000,0,0,100\n0x1000,1,0,100\n0x2000,0,0,500\n0x2000,1,0,200\n0x3000,0,0,300\n0x4000,1,1,1000\n",
    )
    .unwrap();
    let plan = t.path().join("plan.csv");
    let out = contend(&[
        "numa",
        "balance",
        "--pages",
        pages.to_str().unwrap(),
        "--latency",
        lat.to_str().unwrap(),
        "--time",
        "1ms",
        "-o",
        plan.to_str().unwrap(),
        "--format",
        "json",
    ]);
    assert!(out.success(), "{}", out.describe());
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(v["numa"]["migrations"][0]["page"], "0x1000");
    assert_eq!(v["numa"]["migrations"][0]["to_node"], 1);
    assert_eq!(v["numa"]["plan"]["pages_moved"], 1);
    assert_eq!(
        std::fs::read_to_string(&plan).unwrap(),
        "pid,page,from_node,to_node,accesses\n,0x1000,0,1,200\n"
    );
}

/// Bad input gives one clear sentence and exit status 2.
#[test]
fn bad_input_is_named() {
    let t = tempdir();
    let lat = t.path().join("l.json");
    std::fs::write(&lat, TWO_NODES).unwrap();
    let check = |csv: &str, want: &str| {
        let acc = t.path().join("a.csv");
        std::fs::write(&acc, csv).unwrap();
        let out = contend(&[
            "numa",
            "estimate",
            "--accesses",
            acc.to_str().unwrap(),
            "--latency",
            lat.to_str().unwrap(),
            "--time",
            "1",
        ]);
        assert_eq!(out.code(), Some(2), "{}", out.describe());
        assert!(
            out.stderr.contains(want),
            "want `{want}`:\n{}",
            out.describe()
        );
        assert!(!out.stderr.contains("panicked"), "{}", out.describe());
    };
    check(
        "from_node,to_node,accesses\n0,3,10\n",
        "a.csv names node 3, but the latency table has 2 node(s)",
    );
    check(
        "from_node,to_node,accesses\n0,1,-5\n",
        "a.csv:2: accesses `-5` is negative",
    );
    check(
        "from_node,to_node,accesses\n0,1,many\n",
        "a.csv:2: accesses `many` is not a number",
    );
    // No run time for the model.
    let acc = t.path().join("a.csv");
    std::fs::write(&acc, "from_node,to_node,accesses\n0,0,1\n").unwrap();
    let out = contend(&[
        "numa",
        "estimate",
        "--accesses",
        acc.to_str().unwrap(),
        "--latency",
        lat.to_str().unwrap(),
    ]);
    assert!(
        out.stderr.contains("--time SECONDS is needed"),
        "{}",
        out.describe()
    );
    // A broken latency table.
    std::fs::write(&lat, r#"{"nodes":2,"l_nocont_ns":[100]}"#).unwrap();
    let out = contend(&[
        "numa",
        "estimate",
        "--accesses",
        acc.to_str().unwrap(),
        "--latency",
        lat.to_str().unwrap(),
        "--time",
        "1",
    ]);
    assert!(
        out.stderr.contains("l.json: not a valid latency table"),
        "{}",
        out.describe()
    );
    // --apply on a process that does not exist.
    let out = contend(&[
        "numa",
        "balance",
        "--apply",
        "-p",
        "4194309",
        "--plan",
        acc.to_str().unwrap(),
    ]);
    assert!(
        out.stderr.contains("process 4194309: no such process"),
        "{}",
        out.describe()
    );
}

/// Starts numa_hammer for `seconds` and returns it with its hot range.
fn start_hammer(seconds: &str) -> (Running, u64, u64) {
    let exe = build("numa_hammer.c", &[]);
    let mut cmd = Command::new(&exe);
    cmd.arg(seconds);
    let mut run = Running::spawn_streaming(cmd);
    let stdout = run.child.stdout.take().unwrap();
    let mut lines = std::io::BufReader::new(stdout).lines();
    let first = lines.next().unwrap().unwrap();
    // Keep reading so the program never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines {});
    let r = ranges(&first);
    (run, r[0].1, r[0].2)
}

/// `move_pages` on a live process: moving its hot array's pages to the
/// node they are on (node 0 here) succeeds for every page; a plan naming
/// another process is refused before anything moves; a process that has
/// exited (a zombie) is reported with the pages not attempted; live
/// rounds on this one-node machine plan nothing.
#[test]
fn apply_moves_pages_of_a_live_process() {
    let _g = serial();
    let t = tempdir();
    let (mut run, lo, hi) = start_hammer("30");
    let pid = run.pid();
    let first = (lo + 4095) & !4095;
    let pages: Vec<u64> = (0..256)
        .map(|k| first + k * 4096)
        .filter(|p| *p + 4096 <= hi)
        .collect();
    let node = contend_record::numa::memory::query_nodes(pid, &pages).unwrap()[0];
    assert!(node >= 0, "the hot array is touched");
    let plan = t.path().join("plan.csv");
    let mut text = String::from("page,to_node\n");
    for p in &pages {
        text.push_str(&format!("{p:#x},{node}\n"));
    }
    std::fs::write(&plan, &text).unwrap();
    let out = contend(&[
        "numa",
        "balance",
        "--apply",
        "-p",
        &pid.to_string(),
        "--plan",
        plan.to_str().unwrap(),
    ]);
    assert!(out.success(), "{}", out.describe());
    assert!(
        out.stdout
            .contains(&format!("moved {}, failed 0", pages.len())),
        "{}",
        out.describe()
    );
    // JSON per round.
    let out = contend(&[
        "numa",
        "balance",
        "--apply",
        "-p",
        &pid.to_string(),
        "--plan",
        plan.to_str().unwrap(),
        "--format",
        "json",
    ]);
    let v: Value = serde_json::from_str(out.stdout.trim()).unwrap();
    assert_eq!(v["moved"], pages.len() as u64);
    // Live sampling: one round, nothing to balance on one node.
    let lat = t.path().join("l.json");
    std::fs::write(&lat, ONE_NODE).unwrap();
    let out = contend(&[
        "numa",
        "balance",
        "--apply",
        "-p",
        &pid.to_string(),
        "--latency",
        lat.to_str().unwrap(),
        "--sample-for",
        "300ms",
    ]);
    assert!(out.success(), "{}", out.describe());
    if contend_record::numa::Topology::read().node_count() == 1 {
        assert!(
            out.stdout
                .contains("plan moves 0 page(s) (one NUMA node: nothing to balance)"),
            "{}",
            out.describe()
        );
    }
    // A plan of another process.
    let other = t.path().join("other.csv");
    std::fs::write(&other, format!("pid,page,to_node\n1,{first:#x},0\n")).unwrap();
    let out = contend(&[
        "numa",
        "balance",
        "--apply",
        "-p",
        &pid.to_string(),
        "--plan",
        other.to_str().unwrap(),
    ]);
    assert_eq!(out.code(), Some(2), "{}", out.describe());
    assert!(
        out.stderr.contains("belongs to process 1, not")
            && out.stderr.contains("nothing was moved"),
        "{}",
        out.describe()
    );
    // The process ends (killed, not yet reaped: a zombie without memory).
    assert!(crate::common::kill(pid, 9));
    std::thread::sleep(Duration::from_millis(200));
    let out = contend(&[
        "numa",
        "balance",
        "--apply",
        "-p",
        &pid.to_string(),
        "--plan",
        plan.to_str().unwrap(),
    ]);
    assert_eq!(out.code(), Some(2), "{}", out.describe());
    assert!(
        out.stderr.contains(&format!(
            "process {pid} exited during --apply: 0 page(s) moved, 0 failed, {} not attempted",
            pages.len()
        )),
        "{}",
        out.describe()
    );
    let _ = run.wait_for(Duration::from_secs(5));
    assert!(Path::new(&t.path()).exists());
}
