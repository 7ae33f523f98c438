//! The critical path across futex hand-overs, end to end on
//! tests/programs/futex_token.c: a token handed from thread to thread
//! through futex words (FUTEX_WAIT / FUTEX_WAKE through `syscall()`) in a
//! fixed order 0 → 1 → 2 → 0 …, each holder keeping it 3 ms. The critical
//! path must be that chain:
//!
//! * it starts on main, whose `pthread_join` of thread 2 (the last holder,
//!   which ends last) hands over to thread 2 at its end (one lock jump),
//!   and follows every hand-over back to thread 0's first pass: threads ×
//!   rounds − 1 futex jumps, R of 0 → 1, R of 1 → 2, R − 1 of 2 → 0
//!   (docs/critical-path.md), and every woken wait is on it;
//! * its length (the first FUTEX_WAKE to the return of main's join) agrees
//!   with the program's own clock around the same two calls, and the wait
//!   on it with the program's timing of its woken FUTEX_WAITs. Both of
//!   contend's intervals lie inside the program's (contend may exceed them
//!   only by the TSC fit, 20 µs), and the program's extra is the
//!   recording's own cost at the ends (µs) unless a thread was preempted
//!   between its clock and the call: a run more than 0.5 % + 50 µs (length)
//!   or 2 % + 1 µs per wait (waits) below the program's, one in which a
//!   thread found the token without sleeping, or one in which main reached
//!   its last join after the last holder had ended (`late_join`), is made
//!   again, up to three times.

use crate::common::*;

fn program_values(out: &Output) -> std::collections::HashMap<String, i64> {
    let line = out
        .stdout
        .lines()
        .find(|l| l.starts_with("threads="))
        .unwrap_or_else(|| panic!("no result line:\n{}", out.describe()));
    line.split_whitespace()
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_string(), v.parse().expect("integer")))
        .collect()
}

#[test]
fn futex_token_chain_is_the_critical_path() {
    require_tool!("gcc");
    let _serial = serial();
    let exe = build("futex_token.c", &["-O1"]);
    let mut attempt = 0;
    loop {
        attempt += 1;
        let dir = tempdir();
        let rec = dir.path().join("rec");
        let out = record(&rec, &exe, &[] as &[&str]);
        assert!(out.success(), "futex_token failed:\n{}", out.describe());
        let p = program_values(&out);
        let (threads, rounds) = (p["threads"] as u64, p["rounds"] as u64);
        let passes = threads * rounds - 1;
        if p["unwaited"] > 0 || p["handovers"] as u64 != passes || p["late_join"] > 0 {
            assert!(attempt < 3, "three disturbed runs: {p:?}");
            eprintln!("a thread found the token without sleeping ({p:?}), again");
            continue;
        }
        let report = report_json(&rec);
        let across = &report["locks"]["critical_path"]["across"];
        assert!(
            across.is_object(),
            "no locks.critical_path.across: {}",
            report["locks"]
        );
        let tid = |k: u64| p[&format!("tid{k}")] as u64;
        // main (tid = pid) finished last; its join of the last holder is
        // the one pthread event on the path
        assert_eq!(u(across, "start_tid"), u(across, "start_pid"), "{across}");
        assert_eq!(u(across, "futex_jumps"), passes, "{across}");
        assert_eq!(u(across, "futex_events"), passes, "{across}");
        assert_eq!(u(across, "lock_events"), 1, "{across}");
        assert_eq!(u(across, "lock_jumps"), 1, "{across}");
        // the chain, pair by pair
        let rows = across["hand_overs"].as_array().expect("hand_overs");
        for k in 0..threads {
            let next = (k + 1) % threads;
            let want = if next == 0 { rounds - 1 } else { rounds };
            let n: u64 = rows
                .iter()
                .filter(|r| {
                    r["source"] == "futex"
                        && u(r, "from_tid") == tid(k)
                        && u(r, "to_tid") == tid(next)
                })
                .map(|r| u(r, "count"))
                .sum();
            assert_eq!(n, want, "hand-overs {k} → {next}: {rows:?}");
        }
        let joins: Vec<_> = rows.iter().filter(|r| r["source"] == "lock").collect();
        assert_eq!(joins.len(), 1, "{rows:?}");
        assert_eq!(u(joins[0], "from_tid"), tid(threads - 1), "{rows:?}");
        assert_eq!(u(joins[0], "to_tid"), u(across, "start_tid"), "{rows:?}");
        assert_eq!(u(joins[0], "count"), 1, "{rows:?}");
        assert_eq!(
            rows.iter().map(|r| u(r, "count")).sum::<u64>(),
            passes + 1,
            "no other hand-over than the join: {rows:?}"
        );
        // each thread named as the kernel names it: the program's name
        let comm = exe.file_name().unwrap().to_str().unwrap();
        let comm = &comm[..comm.len().min(15)];
        for r in rows {
            assert_eq!(r["from_name"], comm, "{r}");
            assert_eq!(r["to_name"], comm, "{r}");
        }
        // the futex section counts the same waits on the path
        let fs = &report["futex"]["summary"];
        assert_eq!(u(fs, "critical_events"), passes, "{fs}");
        assert_eq!(u(fs, "critical_handovers"), passes, "{fs}");
        let per_word: u64 = report["futex"]["by_word"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| u(w, "critical_events"))
            .sum();
        assert_eq!(per_word, passes);

        // length and wait against the program's clock
        let (measured, got) = (p["path_ns"] as u64, u(across, "length_ns"));
        let (measured_wait, got_wait) = (p["wait_ns"] as u64, u(fs, "critical_wait_ns"));
        assert_eq!(u(across, "futex_wait_ns"), got_wait);
        assert!(
            got <= measured + 20_000,
            "contend's path ({got} ns) lies inside the program's interval ({measured} ns)"
        );
        assert!(
            got_wait <= measured_wait + 2_000 * passes,
            "contend's waits ({got_wait} ns) lie inside the program's ({measured_wait} ns)"
        );
        // the hand-overs alone account for (passes) holds of hold_ms
        assert!(got >= passes * p["hold_ms"] as u64 * 1_000_000, "{got}");
        let length_ok = measured - got.min(measured) <= measured / 200 + 50_000;
        let wait_ok =
            measured_wait - got_wait.min(measured_wait) <= measured_wait / 50 + 1_000 * passes;
        if length_ok && wait_ok {
            break;
        }
        assert!(
            attempt < 3,
            "path {got} ns vs the program's {measured} ns, wait {got_wait} vs {measured_wait} ns: apart beyond tolerance in three runs"
        );
        eprintln!("disturbed run (path {got} vs {measured} ns, wait {got_wait} vs {measured_wait} ns), again");
    }
}

/// OpenMP hand-overs on the critical path with a real runtime (LLVM's
/// libomp through OMPT) on tests/programs/omp_sync.c: its critical
/// section, lock and barriers put OpenMP hand-overs on the path, each
/// between two threads, counted the same in `locks.critical_path.across`
/// and `openmp.summary`; and in the imbalanced `parallel for` thread 1
/// (iteration 1, 20 ms of sleep against 5 ms) always arrives last at the
/// implicit barrier, so every implicit-barrier hand-over on the path goes
/// from that worker to the master thread (whose tid is the pid), never
/// the other way. The path walks back through the lock phase on the
/// thread that ended it last, and meets a hand-over of the lock only when
/// that thread waited for it: a run in which it did not by the program's
/// own clock (the other thread took its holds while this one was kept off
/// the CPU, as other work on the machine can do) is made again, up to
/// three times.
#[test]
fn openmp_hand_overs_on_the_critical_path_with_libomp() {
    require_tool!("clang");
    let _serial = serial();
    let dir = tempdir();
    let exe = dir.path().join("omp_sync");
    let mut cc = std::process::Command::new("clang");
    cc.args(["-O1", "-g", "-fopenmp", "-o"])
        .arg(&exe)
        .arg(program_source("omp_sync.c"));
    let built = run_timeout(cc, std::time::Duration::from_secs(120));
    if !built.success() {
        eprintln!(
            "SKIP: clang -fopenmp cannot build here:\n{}",
            built.describe()
        );
        return;
    }
    let rec = dir.path().join("rec");
    let mut attempt = 0;
    let report = loop {
        attempt += 1;
        let out = record(&rec, &exe, &[] as &[&str]);
        assert!(out.success(), "record failed:\n{}", out.describe());
        let last_wait_ns = program_values(&out)["lock_last_wait_ns"];
        if last_wait_ns >= 1_000_000 {
            break report_json(&rec);
        }
        assert!(
            attempt < 3,
            "in three runs the thread that ended the lock phase last never waited for the lock ({last_wait_ns} ns the last time)"
        );
        eprintln!("disturbed run (the lock phase's last thread waited {last_wait_ns} ns), again");
    };
    let across = &report["locks"]["critical_path"]["across"];
    assert!(across.is_object(), "no across: {}", report["locks"]);
    let jumps = u(across, "openmp_jumps");
    assert!(jumps >= 1, "no OpenMP hand-over on the path: {across}");
    let os = &report["openmp"]["summary"];
    assert_eq!(u(os, "critical_handovers"), jumps, "{os}");
    assert_eq!(u(os, "critical_events"), u(across, "openmp_events"), "{os}");
    assert_eq!(
        u(os, "critical_wait_ns"),
        u(across, "openmp_wait_ns"),
        "{os}"
    );
    let rows: Vec<&serde_json::Value> = across["hand_overs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["source"] == "openmp")
        .collect();
    assert_eq!(
        rows.iter().map(|r| u(r, "count")).sum::<u64>(),
        jumps,
        "{across}"
    );
    // Each object is named as the OpenMP section names it: a mutex as
    // `<kind> <name>` of its row, the kind not repeated (the program's
    // lock lives on the stack: `lock at …`, not an address), a barrier by
    // its kind.
    let openmp = &report["openmp"];
    let mut known: Vec<(u64, String)> = openmp["mutexes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                u(m, "pid"),
                contend::openmp::mutex_label(
                    m["kind"].as_str().unwrap(),
                    m["name"].as_str().unwrap(),
                ),
            )
        })
        .collect();
    known.extend(
        openmp["barriers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| (u(b, "pid"), b["kind"].as_str().unwrap().to_string())),
    );
    for r in &rows {
        let named = (u(r, "pid"), r["object"].as_str().unwrap().to_string());
        assert!(
            known.contains(&named),
            "{r} is not named as the OpenMP section names it: {known:?}"
        );
    }
    assert!(
        rows.iter()
            .any(|r| r["object"].as_str().unwrap().starts_with("lock at ")),
        "no hand-over of the stack lock on the path: {rows:?}"
    );
    let pid = u(across, "start_pid");
    for r in &rows {
        assert_ne!(u(r, "from_tid"), u(r, "to_tid"), "{r}");
        // The imbalanced loops' barriers wait 3 × WORK_MS = 15 ms for the
        // worker; the implicit barrier closing the first region follows an
        // explicit barrier where both threads arrive within microseconds,
        // so either may be last there, by as long as the machine's other
        // work keeps one off the CPU (a millisecond is a time slice). A
        // row sums its hand-overs, so its mean wait tells them apart: the
        // rows whose hand-overs waited 7 ms or more on average are checked
        // (a row mixing the first region's hand-over with one of 15 ms
        // still averages about 7.5 ms).
        let mean_wait_ns = u(r, "wait_ns") / u(r, "count").max(1);
        if r["object"] == "implicit barrier" && mean_wait_ns >= 7_000_000 {
            assert!(
                u(r, "from_tid") != pid && u(r, "to_tid") == pid,
                "the worker arrives last at the imbalanced loop's barrier: {r}"
            );
        }
    }
    // the path lies inside the run
    assert!(
        u(across, "length_ns") <= u(&report["run"], "wall_ns"),
        "{across}"
    );
}
