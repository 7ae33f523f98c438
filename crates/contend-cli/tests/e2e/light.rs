//! `contend record --light`, the wake cost and the recording cost, end to
//! end on small programs that know their own numbers:
//!
//! * tests/programs/light_sites.c: known acquisitions per call site and
//!   thread; a light recording must give exactly the counts a full one
//!   gives (uncontended acquisitions counted, contended ones recorded);
//! * tests/programs/wake_cost.c: unlocks a mutex and posts a semaphore
//!   while a known number of threads sleep on them; the wake cost (time
//!   inside those releases, HaLock Section 4.3) must be positive and
//!   reported, in both modes;
//! * every report has the `recording` section: what was recorded and the
//!   time it added, estimated from the collector's calibration, with a
//!   warning when the estimate passes 5 % (a loop of nothing but locking).

use std::process::Command;

use crate::common::*;
use serde_json::Value;

/// `contend record [--light] -o DIR --force -- exe args`, which must succeed.
pub(crate) fn record_as(
    light: bool,
    dir: &std::path::Path,
    exe: &std::path::Path,
    args: &[&str],
) -> Output {
    record_with_env(light, dir, exe, args, &[])
}

/// [`record_as`] with the variables `env` set.
pub(crate) fn record_with_env(
    light: bool,
    dir: &std::path::Path,
    exe: &std::path::Path,
    args: &[&str],
    env: &[(&str, &str)],
) -> Output {
    let mut cmd = Command::new(contend_bin());
    cmd.envs(env.iter().copied()).arg("record");
    if light {
        cmd.arg("--light");
    }
    cmd.arg("-o")
        .arg(dir)
        .arg("--force")
        .arg("--")
        .arg(exe)
        .args(args);
    let out = run_timeout(cmd, RUN_TIMEOUT);
    assert!(out.success(), "record failed:\n{}", out.describe());
    out
}

fn program_json(out: &Output) -> Value {
    let line = out
        .stdout
        .lines()
        .find(|l| l.starts_with('{'))
        .unwrap_or_else(|| panic!("no JSON line:\n{}", out.stdout));
    serde_json::from_str(line).unwrap()
}

/// Per call site (by function name): events.
fn site_events(report: &Value, function: &str) -> (u64, u64) {
    let site = report["locks"]["by_site"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["function"] == function)
        .unwrap_or_else(|| panic!("no site {function}: {}", report["locks"]["by_site"]));
    (u(site, "events"), u(site, "counted_events"))
}

/// The report's call-site rows of locks, not main's `pthread_join`.
fn lock_sites(report: &Value) -> Vec<&Value> {
    report["locks"]["by_site"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| !s["kinds"].as_array().unwrap().iter().any(|k| k == "join"))
        .collect()
}

#[test]
fn light_counts_per_site_and_thread_are_exact() {
    require_tool!("gcc");
    let exe = build("light_sites.c", &[]);
    let tmp = tempdir();
    for light in [false, true] {
        let dir = tmp.path().join(if light { "light" } else { "full" });
        let out = record_as(light, &dir, &exe, &["4", "3000"]);
        let want = program_json(&out);
        let report = report_json(&dir);
        for (function, key) in [
            ("site_a", "a"),
            ("site_b", "b"),
            ("site_private", "private"),
        ] {
            let (events, counted) = site_events(&report, function);
            assert_eq!(events, u(&want, key), "{function}, light {light}");
            if light {
                // Never contended: all counted.
                if function == "site_private" {
                    assert_eq!(counted, events, "{function}");
                }
                assert!(counted > 0, "{function}: light counts uncontended ones");
            } else {
                assert_eq!(counted, 0, "{function}: a full recording counts nothing");
            }
            // The SCI's lock blocks at the site execute as often in both
            // modes: counted acquisitions are executions of 0 ns.
            let sci_executions: u64 = report["sci"]["blocks"]
                .as_array()
                .expect("sci.blocks")
                .iter()
                .filter(|b| b["kind"] == "lock" && b["site"]["function"] == function)
                .map(|b| u(b, "occurrences"))
                .sum();
            assert_eq!(
                sci_executions,
                u(&want, key),
                "SCI of {function}, light {light}"
            );
        }
        let sem = report["locks"]["other_waits"]
            .as_array()
            .unwrap()
            .iter()
            .find(|w| w["kind"] == "semaphore")
            .unwrap();
        assert_eq!(u(sem, "events"), u(&want, "sem"), "light {light}");
        // Each worker: 3000 + 1000 acquisitions of `shared` and 3000 of its
        // own mutex = 7000 lock events.
        let workers: Vec<&Value> = report["locks"]["by_thread"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| u(t, "events") > 0)
            .collect();
        assert_eq!(workers.len(), 4, "{}", report["locks"]["by_thread"]);
        for t in workers {
            assert_eq!(u(t, "events"), 7000, "light {light}: {t}");
        }
        let mode = &report["recording"]["mode"];
        assert_eq!(mode, if light { "light" } else { "default" });
        let cost = &report["recording"]["cost"];
        if light {
            // Every acquisition is either counted or recorded, and the
            // counts are the sites' counted events. How many of `shared`'s
            // acquisitions are contended (recorded) depends on the machine's
            // load, so the records are bounded by what the recorded ones
            // may write: REQUEST, ACQUIRED, RELEASE and RELEASED (a release
            // that found waiters) each, plus each thread's join and end
            // records; the counted ones write none.
            let (events, counted) = lock_sites(&report).iter().fold((0, 0), |(e, c), s| {
                (e + u(s, "events"), c + u(s, "counted_events"))
            });
            assert_eq!(u(cost, "counted"), counted, "{cost}");
            assert!(counted > 0, "{cost}");
            let recorded = events - counted;
            assert!(
                u(cost, "records") <= 4 * recorded + 4 * 8,
                "{cost}: {recorded} acquisitions recorded"
            );
        } else {
            assert_eq!(u(cost, "counted"), 0, "{cost}");
            assert!(u(cost, "records") >= 2 * 40_000, "{cost}");
        }
    }
}

#[test]
fn wake_cost_of_releases_with_waiters_is_reported() {
    require_tool!("gcc");
    let exe = build("wake_cost.c", &[]);
    let tmp = tempdir();
    for light in [false, true] {
        let dir = tmp.path().join(if light { "light" } else { "full" });
        let out = record_as(light, &dir, &exe, &["3"]);
        let got = program_json(&out);
        assert_eq!(u(&got, "asleep_m"), 3, "the waiters were asleep: {got}");
        let report = report_json(&dir);
        let m = lock_row(&report, "m");
        // main's unlock finds 3 waiters; each woken waiter's unlock finds
        // the lock word still marked "waiters" (glibc clears it only when
        // a waiter takes it uncontended), the last one included: 3 or 4.
        let wakes = u(m, "releases_with_waiters");
        assert!((3..=4).contains(&wakes), "light {light}: {m}");
        assert!(u(m, "wake_ns") > 0, "light {light}: {m}");
        assert!(u(m, "max_wake_ns") <= u(m, "wake_ns"), "{m}");
        let s = lock_row(&report, "s");
        if u(&got, "asleep_s") == 3 {
            assert!(u(s, "releases_with_waiters") >= 1, "light {light}: {s}");
            assert!(u(s, "wake_ns") > 0, "light {light}: {s}");
        }
        let summary = &report["locks"]["summary"];
        assert!(u(summary, "wake_ns") >= u(m, "wake_ns"), "{summary}");
        let text = report_raw(&dir, &["--format", "text"]);
        assert!(text.stdout.contains("Wake cost"), "{}", text.stdout);
    }
}

/// tests/programs/wake_cost.c with FILL = 300: under `--light` main's
/// count table holds its 256 lock entries (300 other mutexes taken once)
/// before main takes `m`, so `m` is counted by call site; while it holds
/// `m` it takes the last 64 of the others again (44 of them counted by
/// site: more than a list of the latest 32 by-site acquisitions would
/// remember). The unlock that finds the 3 waiters must still find that
/// counted hold and record it (UNTIMED), taking it back out of the site's
/// count: `m`'s row is as without the fill (main's hold plus the 3
/// waiters' acquisitions, wakes reported), no release is unmatched, and
/// at least 2 × 44 of the others' acquisitions are counted by site (all
/// 364 in the summary, with `m`'s 4).
#[test]
fn a_hold_counted_by_call_site_is_found_by_the_release_that_wakes() {
    require_tool!("gcc");
    let exe = build("wake_cost.c", &[]);
    let tmp = tempdir();
    let dir = tmp.path().join("light");
    let out = record_as(true, &dir, &exe, &["3", "300"]);
    let got = program_json(&out);
    assert_eq!(u(&got, "asleep_m"), 3, "the waiters were asleep: {got}");
    let report = report_json(&dir);
    let light = &report["locks"]["light"];
    let by_site = u(light, "counted_by_site_events");
    assert!((88..364).contains(&by_site), "{light}");
    assert!(u(light, "untimed_events") >= 1, "{light}");
    let summary = &report["locks"]["summary"];
    assert_eq!(u(summary, "unmatched_releases"), 0, "{summary}");
    let m = lock_row(&report, "m");
    assert_eq!(u(m, "events"), 4, "{m}");
    assert_eq!(u(m, "contended_events"), 3, "{m}");
    assert!(u(m, "releases_with_waiters") >= 3, "{m}");
    assert_eq!(u(summary, "events"), 300 + 64 + 4, "{summary}");
}

#[test]
fn recording_cost_is_estimated_and_warns_when_high() {
    require_tool!("gcc");
    let exe = build("light_sites.c", &[]);
    let tmp = tempdir();
    // Nothing but locking: the recording cost is a large share.
    let dir = tmp.path().join("full");
    record_as(false, &dir, &exe, &["1", "200000"]);
    let report = report_json(&dir);
    let r = &report["recording"];
    let cost = &r["cost"];
    assert!(u(cost, "estimated_ns") > 0, "{r}");
    assert!(u(cost, "bytes") >= 8 * u(cost, "records"), "{r}");
    assert_eq!(
        u(cost, "operations"),
        u(cost, "records") + u(cost, "counted")
    );
    let share = cost["estimated_share"].as_f64().unwrap();
    assert!(share > 0.05, "{r}");
    assert!(r["calibration"]["record_ns"].as_f64().unwrap() > 0.0, "{r}");
    let warning = r["warning"].as_str().expect("a warning above 5 %");
    // one thread, records most of the cost: --light would lower it
    assert!(
        warning.ends_with("try `contend record --light`"),
        "{warning}"
    );
    assert!(
        warnings(&report).contains("recording cost is estimated"),
        "{}",
        warnings(&report)
    );
    let text = report_raw(&dir, &["--format", "text"]);
    assert!(text.stdout.contains("Recording cost"), "{}", text.stdout);
    // compare lines it up.
    let cmp = Command::new(contend_bin())
        .args(["compare", "--format", "json"])
        .arg(&dir)
        .arg(&dir)
        .output()
        .unwrap();
    let cmp = String::from_utf8_lossy(&cmp.stdout);
    assert!(cmp.contains("recording.cost.estimated_share"), "{cmp}");
}

/// tests/programs/light_many.c: one thread takes 3000 distinct mutexes
/// three times over at one call site, more (lock, site) pairs than its
/// count table keeps one by one (256). Every acquisition is counted
/// exactly (9000 in all): the first locks (up to 256; fewer only if a
/// lock's probes found no room) in entries of their own, 3 per lock, the
/// others by call site, in one COUNTS chunk (the table does not grow for
/// locks), or, the thread's first table being a slot of 126 entries
/// (docs/trace-format.md, "Slot chunks"), in that slot and one COUNTS
/// chunk (a slot's table grows for locks, up to the 256 a table of its
/// own keeps); the site's row has all 9000, the lock rows only their own,
/// and the report says how many were counted without their lock.
#[test]
fn light_counts_locks_past_its_table_by_call_site() {
    require_tool!("gcc");
    let exe = build("light_many.c", &[]);
    let tmp = tempdir();
    let dir = tmp.path().join("light");
    let out = record_as(true, &dir, &exe, &["3000", "3"]);
    let want = program_json(&out);
    assert_eq!(u(&want, "events"), 9000);
    let report = report_json(&dir);
    let summary = &report["locks"]["summary"];
    assert_eq!(u(summary, "events"), 9000, "{summary}");
    let light = &report["locks"]["light"];
    assert_eq!(u(light, "counted_events"), 9000);
    assert_eq!(u(light, "recorded_uncontended_events"), 0, "{light}");
    // the locks, not the joined threads
    let locks: Vec<_> = report["locks"]["by_lock"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| l["kind"] != "join")
        .collect();
    assert!(
        (200..=256).contains(&locks.len()),
        "{} lock rows",
        locks.len()
    );
    for l in &locks {
        assert_eq!(u(l, "events"), 3, "{l}");
    }
    let by_site = 9000 - 3 * locks.len() as u64;
    assert_eq!(u(light, "counted_by_site_events"), by_site, "{light}");
    let sites = lock_sites(&report);
    assert_eq!(sites.len(), 1, "{sites:?}");
    assert_eq!(u(sites[0], "events"), 9000);
    let text = report_raw(&dir, &["--format", "text"]).stdout;
    assert!(
        text.contains(&format!(
            "per call site and thread (and per lock, except {} of them)",
            with_commas(by_site)
        )),
        "{text}"
    );
    // every acquisition was counted, none recorded: still lock events
    assert!(!text.contains("No lock events"), "{text}");
    let (_, flags) = chunk_flags(&dir);
    let counts_chunks = flags
        .iter()
        .filter(|f| **f & contend_trace::format::CHUNK_COUNTS != 0)
        .count();
    // the worker's first table is a slot (its process has two threads)
    assert_eq!(counts_chunks, 2);
}

/// tests/programs/light_many.c with 4,000 mutexes, each taken at a call
/// site of its own (4,000 sites), three rounds: more call sites than the
/// largest count table holds (the whole 128 KiB COUNTS chunk, 4,094
/// entries, filled to three quarters). The table grows for call sites
/// (a 4 KiB slot, docs/trace-format.md "Slot chunks", then 32, 64 and 128
/// KiB: 4 COUNTS tables), then the thread keeps its
/// largest table and records the acquisitions it has no entry for, so every
/// acquisition is still in the report exactly once (3 per site, 12,000 in
/// all, counted or recorded) instead of a new 128 KiB chunk whenever the
/// last one filled up.
#[test]
fn light_keeps_its_largest_count_table_and_records_what_it_cannot_count() {
    require_tool!("gcc");
    let exe = build("light_many.c", &[]);
    let tmp = tempdir();
    let dir = tmp.path().join("light");
    let out = record_as(true, &dir, &exe, &["4000", "3", "4000"]);
    assert_eq!(u(&program_json(&out), "events"), 12_000);
    let report = report_json(&dir);
    assert_eq!(u(&report["locks"]["summary"], "events"), 12_000);
    let light = &report["locks"]["light"];
    let counted = u(light, "counted_events");
    // at least the largest table's entries, 3 rounds each; not all
    assert!((3 * 3_000..12_000).contains(&counted), "{counted} counted");
    // the rest were recorded in full, and the report says so
    assert_eq!(
        u(light, "recorded_uncontended_events"),
        12_000 - counted,
        "{light}"
    );
    let text = report_raw(&dir, &["--format", "text"]).stdout;
    assert!(
        text.contains(&format!(
            "{} more were recorded in full for want of a count entry",
            with_commas(12_000 - counted)
        )),
        "{text}"
    );
    let sites = lock_sites(&report);
    assert_eq!(sites.len(), 4_000);
    for s in sites {
        assert_eq!(u(s, "events"), 3, "{s}");
    }
    let (claimed, flags) = chunk_flags(&dir);
    let counts_chunks = flags
        .iter()
        .filter(|f| **f & contend_trace::format::CHUNK_COUNTS != 0)
        .count();
    assert_eq!(counts_chunks, 4, "{claimed} chunks claimed");
}

/// The chunks the one lock trace of recording `dir` claimed, and the
/// headers of those in the file ([`trace_chunk_heads`]).
fn chunk_heads(dir: &std::path::Path) -> (usize, Vec<ChunkHead>) {
    let traces = trace_files(dir);
    assert_eq!(traces.len(), 1, "{traces:?}");
    trace_chunk_heads(&traces[0])
}

/// The chunks the one lock trace of recording `dir` claimed, and the
/// header flags of those in the file, in file order.
fn chunk_flags(dir: &std::path::Path) -> (usize, Vec<u32>) {
    let (claimed, heads) = chunk_heads(dir);
    (claimed, heads.iter().map(|c| c.flags).collect())
}

/// tests/programs/barrier_start.c: 8 workers wait at a barrier, then each
/// takes one mutex 100 times. In light mode a thread claims its first
/// COUNTS chunk before a lock call; a worker that waits at the barrier
/// first claims it there, before the wait, so that the workers the
/// barrier releases together do not all claim theirs at once in their
/// first lock call (docs/benchmarks.md, "Light mode's count table claimed
/// at the barrier"). Each worker's record chunk is claimed at the start of
/// its barrier wait (the wait is recorded), so its COUNTS chunk comes
/// first; claimed at the first lock call, it came after. The counts stay
/// exact.
#[test]
fn light_workers_claim_their_count_tables_before_the_start_barrier() {
    require_tool!("gcc");
    let exe = build("barrier_start.c", &[]);
    let tmp = tempdir();
    let dir = tmp.path().join("light");
    let out = record_as(true, &dir, &exe, &["8", "100"]);
    let want = program_json(&out);
    assert_eq!(u(&want, "acquisitions"), 800);
    let report = report_json(&dir);
    // the trace is named after its process: <pid>.ctrace
    let pid: u32 = trace_files(&dir)[0]
        .file_stem()
        .and_then(|s| s.to_str()?.parse().ok())
        .expect("a trace named <pid>.ctrace");
    let (_, heads) = chunk_heads(&dir);
    let first = |tid: u32, counts: bool| {
        heads
            .iter()
            .find(|c| {
                c.tid == tid
                    && c.sequence == 0
                    && (c.flags & contend_trace::format::CHUNK_COUNTS != 0) == counts
            })
            .map(|c| c.base_ticks)
    };
    let mut workers: Vec<u32> = heads.iter().map(|c| c.tid).filter(|&t| t != pid).collect();
    workers.sort_unstable();
    workers.dedup();
    assert_eq!(workers.len(), 8, "worker threads with chunks: {workers:?}");
    for tid in workers {
        let counts = first(tid, true).unwrap_or_else(|| panic!("thread {tid}: no COUNTS chunk"));
        let records = first(tid, false).unwrap_or_else(|| panic!("thread {tid}: no record chunk"));
        assert!(
            counts <= records,
            "thread {tid}: COUNTS chunk claimed at tick {counts}, after its record chunk (tick {records}, the barrier wait)"
        );
    }
    let mutex = lock_row(&report, "shared");
    assert_eq!(u(mutex, "events"), 800, "{mutex}");
}
