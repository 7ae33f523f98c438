//! End-to-end runs of real, stripped distribution programs under
//! `contend record`: memcached under load from memcslap (or memaslap), and
//! sysbench's mutex benchmark. The tests start and stop everything
//! themselves, each within a time limit. When a program is missing they
//! print SKIP with the reason; the CI script installs them (Debian packages
//! memcached, libmemcached-tools, sysbench), so there they run.

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::*;
use serde_json::Value;

/// A TCP port on 127.0.0.1 that was free a moment ago.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("bind an ephemeral port")
        .port()
}

/// The load generator that is installed: memcslap (libmemcached-tools in
/// Debian) or memaslap (older packages).
fn load_generator() -> Option<(&'static str, PathBuf)> {
    for name in ["memcslap", "memaslap"] {
        if let Some(p) = which(name) {
            return Some((name, p));
        }
    }
    None
}

/// Runs the load generator against `port` for about `secs` seconds.
fn load(tool: &str, path: &Path, port: u16, secs: u64) {
    let server = format!("127.0.0.1:{port}");
    let start = Instant::now();
    let mut runs = 0;
    if tool == "memaslap" {
        let mut cmd = Command::new(path);
        cmd.args(["-s", &server, "-T", "4", "-c", "16", "-t"])
            .arg(format!("{secs}s"));
        let out = run_timeout(cmd, Duration::from_secs(secs + 30));
        assert!(out.success(), "memaslap failed:\n{}", out.describe());
        return;
    }
    // memcslap has no duration option: repeat short set/get rounds.
    while start.elapsed() < Duration::from_secs(secs) {
        let test = if runs % 2 == 0 { "set" } else { "get" };
        let mut cmd = Command::new(path);
        cmd.arg(format!("--servers={server}"))
            .args(["--concurrency=4", "--execute-number=5000"])
            .arg(format!("--test={test}"));
        let out = run_timeout(cmd, Duration::from_secs(30));
        assert!(out.success(), "memcslap failed:\n{}", out.describe());
        runs += 1;
    }
    eprintln!(
        "memcslap: {runs} rounds in {:.1?} against {server}",
        start.elapsed()
    );
}

/// Waits until something accepts connections on `port`, or the launcher
/// ended, or `timeout` passed.
fn wait_listening(port: u16, running: &mut Running, timeout: Duration) -> bool {
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        if TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return true;
        }
        if let Ok(Some(_)) = running.child.try_wait() {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

/// True if a separate debug file for `exe`'s build id is installed.
fn has_debug_file(exe: &Path) -> bool {
    let out = Command::new("readelf").arg("-n").arg(exe).output();
    let Ok(out) = out else { return false };
    let text = String::from_utf8_lossy(&out.stdout);
    let Some(id) = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("Build ID: "))
        .map(str::trim)
    else {
        return false;
    };
    id.len() > 2
        && Path::new(&format!(
            "/usr/lib/debug/.build-id/{}/{}.debug",
            &id[..2],
            &id[2..]
        ))
        .exists()
}

#[test]
fn memcached_under_load() {
    let Some(memcached) = which("memcached") else {
        eprintln!("SKIP memcached_under_load: memcached is not installed");
        return;
    };
    let Some((tool, tool_path)) = load_generator() else {
        eprintln!(
            "SKIP memcached_under_load: neither memcslap nor memaslap is installed \
             (Debian: libmemcached-tools)"
        );
        return;
    };
    let _serial = serial();
    let tmp = tempdir();
    let dir = tmp.path().join("memcached.data");
    let port = free_port();
    let port_s = port.to_string();
    // -U 0: no UDP; -u root is needed (and only used) when running as root.
    let args = [
        "-t",
        "4",
        "-l",
        "127.0.0.1",
        "-p",
        &port_s,
        "-U",
        "0",
        "-u",
        "root",
        "-m",
        "64",
    ];
    let mut running = Running::spawn(record_command(&dir, &memcached, &args));
    if !wait_listening(port, &mut running, Duration::from_secs(20)) {
        let out = running.wait_or_kill(Duration::from_secs(5), "memcached");
        panic!(
            "memcached did not listen on port {port} within 20 s:\n{}",
            out.describe()
        );
    }

    load(tool, &tool_path, port, 3);

    // Stop memcached itself with SIGTERM (not through the launcher).
    let pids: Vec<u32> = descendants(running.pid())
        .into_iter()
        .filter(|&p| comm(p).as_deref() == Some("memcached"))
        .collect();
    assert_eq!(pids.len(), 1, "one memcached below the launcher: {pids:?}");
    assert!(kill(pids[0], 15), "kill -TERM {}", pids[0]);
    let out = running.wait_or_kill(Duration::from_secs(30), "contend record -- memcached");
    assert!(
        matches!(out.shell_status(), 0 | 143),
        "memcached ends on SIGTERM (exit 0, or by the signal):\n{}",
        out.describe()
    );

    let report = report_json(&dir);
    check_memcached_report(&report, &memcached);
    let text = report_raw(&dir, &[] as &[&str]);
    assert!(
        text.success(),
        "contend report (text):\n{}",
        text.describe()
    );
    check_memcached_sci(&report, &text.stdout, &memcached);
}

/// The interference part of issue 11 on a real program (docs/sci.md,
/// "memcached"): memcached's lock calls are blocks (Mosli Bouksiaa et al.,
/// TPDS 2019, Section 2), each keyed by the lock object and scored when
/// executed at least 10 times. Checks that the report holds such lock
/// blocks, ranked by SCI (largest first, unscored rows last), each score
/// worked out as the paper defines it (excess = Σ (d_j − d_min) = total −
/// executions × fastest, since no lock call is sampled; SCI = excess / Σ
/// T_t of the threads that ran it, in [0, 1]), per-thread rows summing to
/// the block, keys naming lock objects of `locks.by_lock`, sites named
/// where symbols exist, and the text report showing the section with its
/// explanation of the columns.
fn check_memcached_sci(report: &Value, text: &str, memcached: &Path) {
    let sci = &report["sci"];
    let blocks = sci["blocks"].as_array().unwrap();
    let scored: Vec<&Value> = blocks.iter().filter(|b| !b["sci"].is_null()).collect();
    let locks: Vec<&Value> = scored
        .iter()
        .copied()
        .filter(|b| b["kind"] == "lock" && u(b, "occurrences") >= 10)
        .collect();
    assert!(
        locks.len() >= 3,
        "memcached under load executes scored lock blocks: {}",
        sci["summary"]
    );
    // Shared by worker threads: the contention SCI is about.
    assert!(
        locks.iter().any(|b| u(b, "threads") >= 2),
        "a lock block executed by 2 threads or more"
    );
    eprintln!("memcached SCI summary: {}", sci["summary"]);
    for b in locks.iter().take(5) {
        eprintln!(
            "  SCI {} {} [{}] execs {} excess {} ns threads {}",
            b["sci"], b["name"], b["key"], b["occurrences"], b["excess_ns"], b["threads"]
        );
    }

    // Ranked: scores descending, then the unscored rows.
    let first_unscored = blocks
        .iter()
        .position(|b| b["sci"].is_null())
        .unwrap_or(blocks.len());
    assert!(
        blocks[first_unscored..].iter().all(|b| b["sci"].is_null()),
        "unscored rows come after every scored one"
    );
    let scores: Vec<f64> = scored.iter().map(|b| b["sci"].as_f64().unwrap()).collect();
    assert!(
        scores.windows(2).all(|w| w[0] >= w[1]),
        "sci.blocks ranked by SCI, largest first: {:?}",
        &scores[..scores.len().min(20)]
    );
    assert_eq!(
        sci["summary"]["max_sci"].as_f64(),
        Some(scores[0]),
        "summary.max_sci is the first block's"
    );
    assert_eq!(u(sci, "summary.scored_blocks"), scored.len() as u64);
    assert_eq!(u(sci, "summary.blocks"), blocks.len() as u64);
    assert_eq!(
        u(sci, "summary.lock_executions"),
        u(sci, "summary.executions"),
        "only lock blocks were recorded"
    );

    // A lock block is keyed by the name the lock tables show for its lock:
    // the name, with ` @ address` where locks share it (memcached's item
    // locks, made at one line).
    let rows = report["locks"]["by_lock"].as_array().unwrap();
    let shared = |name: &str| rows.iter().filter(|l| l["name"] == name).count() > 1;
    let lock_names: Vec<String> = rows
        .iter()
        .map(|l| {
            let name = l["name"].as_str().unwrap_or("");
            if shared(name) {
                format!("{name} @ {}", l["address"].as_str().unwrap_or(""))
            } else {
                name.to_string()
            }
        })
        .collect();
    let named_module = has_debug_file(memcached);
    for b in &scored {
        let (n, min, total, excess) = (
            u(b, "occurrences"),
            u(b, "min_ns"),
            u(b, "total_ns"),
            u(b, "excess_ns"),
        );
        assert!(n >= 10, "scored below 10 executions: {b}");
        assert_eq!(u(b, "sampled_every"), 1, "lock calls are all recorded: {b}");
        assert_eq!(excess, total - n * min, "excess = total - n × fastest: {b}");
        assert!(
            min <= u(b, "median_ns") && u(b, "median_ns") <= total,
            "{b}"
        );
        let s = b["sci"].as_f64().unwrap();
        let t = u(b, "thread_duration_ns");
        assert!(
            (s - excess as f64 / t as f64).abs() <= 1e-9 * s.max(1e-9),
            "SCI = excess / Σ T_t: {b}"
        );
        assert!((0.0..=1.0).contains(&s), "SCI within [0, 1]: {b}");
        let per_thread = b["per_thread"].as_array().unwrap();
        assert_eq!(per_thread.len() as u64, u(b, "threads"), "{b}");
        assert_eq!(
            per_thread.iter().map(|p| u(p, "occurrences")).sum::<u64>(),
            n,
            "per-thread executions add up: {b}"
        );
        assert_eq!(
            per_thread.iter().map(|p| u(p, "excess_ns")).sum::<u64>(),
            excess,
            "per-thread excess adds up: {b}"
        );
        if b["kind"] == "lock" {
            let key = b["key"].as_str().unwrap_or("");
            assert!(
                lock_names.iter().any(|n| n == key),
                "a lock block's key is a lock of locks.by_lock, as the tables name it: {b}"
            );
        }
        // Sites named where symbols exist: a function name is never empty.
        if let Some(f) = b["site"]["function"].as_str() {
            assert!(!f.is_empty(), "empty site function: {b}");
        }
        // Without debug information a lock block's site is its module and
        // offset, as the lock section's sites are.
        if b["kind"] == "lock" && b["site"]["function"].is_null() {
            let module = b["site"]["module"].as_str().unwrap_or("");
            let offset = b["site"]["offset"].as_str().unwrap_or("");
            assert!(
                !module.is_empty() && offset.starts_with("0x"),
                "a lock block's site without a function is named by its module and offset: {b}"
            );
            assert!(
                report["locks"]["by_site"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|s| s["module"] == module && s["offset"] == offset),
                "the site is one of locks.by_site: {b}"
            );
        }
    }
    if named_module {
        assert!(
            locks
                .iter()
                .take(10)
                .any(|b| b["site"]["function"].is_string()),
            "memcached's debug info is installed: the top lock blocks name their functions"
        );
    }

    // The text report: the section, the ranked table with the top block,
    // and the explanation of what the numbers mean.
    let section = text
        .split_once("Interference (SCI)")
        .map(|(_, rest)| rest)
        .unwrap_or_else(|| panic!("no \"Interference (SCI)\" section in the text report"));
    let top_key = locks[0]["key"].as_str().unwrap();
    for needle in [
        "Blocks by SCI",
        top_key,
        "d_min: the fastest execution, taken as free of interference",
        "excess / Σ duration of the threads that ran the block",
        "Mosli Bouksiaa et al. 2019",
        "SCI per block and thread",
    ] {
        assert!(
            section.contains(needle),
            "the text report's Interference (SCI) section lacks {needle:?}:\n{}",
            &section[..section.len().min(4000)]
        );
    }
}

fn check_memcached_report(report: &Value, memcached: &Path) {
    let locks = &report["locks"];
    let by_lock = locks["by_lock"].as_array().unwrap();
    assert!(!by_lock.is_empty(), "by_lock is empty: {locks}");
    assert!(
        u(locks, "summary.events") > 1000,
        "summary: {}",
        locks["summary"]
    );
    assert!(
        u(locks, "summary.contended_events") > 0,
        "4 worker threads under load contend somewhere: {}",
        locks["summary"]
    );
    eprintln!("memcached summary: {}", locks["summary"]);
    for l in by_lock.iter().take(5) {
        eprintln!(
            "  {} {} events {} contended {} wait {} sites {}",
            l["name"], l["kind"], l["events"], l["contended_events"], l["wait_ns"], l["sites"]
        );
    }

    // memcached's own call sites: Debian's binary is stripped, so they are
    // resolved to exported symbols or to module+offset — unless a debug
    // package is installed.
    let is_memcached = |s: &Value| {
        s["module"]
            .as_str()
            .is_some_and(|m| Path::new(m).file_name() == memcached.file_name())
    };
    let sites: Vec<&Value> = locks["by_site"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| is_memcached(s))
        .collect();
    assert!(
        !sites.is_empty(),
        "memcached itself takes locks: by_site = {}",
        locks["by_site"]
    );
    for s in &sites {
        assert!(
            !s["display"].as_str().unwrap_or("").is_empty(),
            "every site has a display form: {s}"
        );
        assert!(
            s["offset"].as_str().is_some_and(|o| o.starts_with("0x")),
            "module+offset is always known: {s}"
        );
    }
    if has_debug_file(memcached) {
        eprintln!("memcached debug info is installed; not checking the stripped case");
        return;
    }
    for s in &sites {
        assert!(
            matches!(s["debug"].as_str(), Some("symbols") | Some("none")),
            "a stripped memcached has no DWARF: {s}"
        );
    }
    let without: Vec<&str> = locks["sites_without_debug_info"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m.as_str())
        .collect();
    assert!(
        without
            .iter()
            .any(|m| Path::new(m).file_name() == memcached.file_name()),
        "sites_without_debug_info lists memcached: {without:?}"
    );
}

#[test]
fn sysbench_mutex() {
    let Some(sysbench) = which("sysbench") else {
        eprintln!("SKIP sysbench_mutex: sysbench is not installed");
        return;
    };
    let _serial = serial();
    let tmp = tempdir();
    let dir = tmp.path().join("sysbench.data");
    // 4 threads × 200 000 lock/unlock pairs on 2 mutexes: ~0.1 s alone.
    let args = [
        "mutex",
        "--threads=4",
        "--mutex-num=2",
        "--mutex-locks=200000",
        "--mutex-loops=50",
        "run",
    ];
    let out = run_timeout(
        record_command(&dir, &sysbench, &args),
        Duration::from_secs(120),
    );
    assert_eq!(out.code(), Some(0), "{}", out.describe());
    assert!(out.stdout.contains("total time"), "{}", out.describe());
    let report = report_json(&dir);
    let locks = &report["locks"];
    assert_eq!(report["run"]["exit_code"], 0);
    assert!(
        u(locks, "summary.events") >= 4 * 200_000,
        "every mutex_lock of the benchmark is an event: {}",
        locks["summary"]
    );
    assert!(
        u(locks, "summary.contended_events") > 0,
        "{}",
        locks["summary"]
    );
    let without: Vec<&str> = locks["sites_without_debug_info"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m.as_str())
        .collect();
    if !has_debug_file(&sysbench) {
        assert!(
            without.iter().any(|m| m.ends_with("/sysbench")),
            "a stripped sysbench is listed without debug info: {without:?}"
        );
    }
}

/// The example of examples/sharequeue: both versions recorded, then
/// `contend compare --format json`. Small enough for the test machines.
#[test]
fn sharequeue_example_compare() {
    require_tool!("gcc");
    let _serial = serial();
    let source =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/sharequeue/sharequeue.c");
    let exe = build_source(&source, &[]);
    let tmp = tempdir();
    let mut dirs = Vec::new();
    for mode in ["single", "two"] {
        let dir = tmp.path().join(format!("{mode}.data"));
        // 2 threads × 20 000 rounds: a few hundredths of a second.
        let out = record(&dir, &exe, &[mode, "2", "16", "20000", "50"]);
        assert!(out.success(), "{}", out.describe());
        assert!(out.stdout.contains("check ok"), "{}", out.describe());
        dirs.push(dir);
    }
    let single = report_json(&dirs[0]);
    let two = report_json(&dirs[1]);
    assert_eq!(u(lock_row(&single, "queue_lock"), "events"), 2 * 20_000 * 2);
    assert_eq!(u(lock_row(&two, "head_lock"), "events"), 2 * 20_000);
    assert_eq!(u(lock_row(&two, "tail_lock"), "events"), 2 * 20_000);

    let cmp = compare_json(&dirs, Duration::from_secs(120));
    assert_eq!(
        cmp["runs"].as_array().map(Vec::len),
        Some(2),
        "{}",
        cmp["runs"]
    );
    let events = cmp["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["key"] == "locks.summary.events")
        .unwrap_or_else(|| panic!("no locks.summary.events metric: {}", cmp["metrics"]));
    assert_eq!(
        events["values"][0], events["values"][1],
        "same lock requests: {events}"
    );
    let names: Vec<&str> = cmp["by_lock"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|l| l["name"].as_str())
        .collect();
    for name in ["queue_lock", "head_lock", "tail_lock"] {
        assert!(
            names.contains(&name),
            "{name} in compare's by_lock: {names:?}"
        );
    }
    // The text form too.
    let mut cmd = Command::new(contend_bin());
    cmd.arg("compare").args(&dirs);
    let out = run_timeout(cmd, Duration::from_secs(120));
    assert!(
        out.success() && out.stdout.contains("queue_lock"),
        "{}",
        out.describe()
    );
}

/// Regression: with the lock collector preloaded (plain `contend record`,
/// no `--mpi`), every rank of an MPICH (UCX) program aborted with "UCX
/// FATAL pthread_rwlock_rdlock() failed: Resource deadlock avoided": UCX's
/// memory hooks saw the collector's own chunk mappings while UCX held its
/// event lock. The collector now maps through raw system calls.
#[test]
fn mpich_program_under_the_lock_collector() {
    let (Some(mpicc), Some(mpirun)) = (which("mpicc.mpich"), which("mpirun.mpich")) else {
        eprintln!("SKIP mpich_program_under_the_lock_collector: MPICH is not installed");
        return;
    };
    let _serial = serial();
    let tmp = tempdir();
    let exe = tmp.path().join("lockcollector_mpich");
    let built = run_timeout(
        {
            let mut c = std::process::Command::new(&mpicc);
            c.arg("-O1")
                .arg("-o")
                .arg(&exe)
                .arg(program_source("lockcollector_mpich.c"));
            c
        },
        Duration::from_secs(60),
    );
    assert!(built.success(), "{}", built.describe());
    let dir = tmp.path().join("mpich.data");
    let exe_s = exe.to_string_lossy().to_string();
    let out = run_timeout(
        record_command(&dir, &mpirun, &["-np", "2", exe_s.as_str()]),
        Duration::from_secs(90),
    );
    assert!(
        out.success() && !out.stderr.contains("FATAL"),
        "{}",
        out.describe()
    );
    for r in 0..2 {
        assert!(
            out.stdout.contains(&format!("rank {r} of 2 done")),
            "{}",
            out.describe()
        );
    }
    let report = report_json(&dir);
    assert!(
        u(&report["locks"], "summary.events") >= 2 * 200 * 100,
        "each rank's own mutex operations are recorded: {}",
        report["locks"]["summary"]
    );
}
