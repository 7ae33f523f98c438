//! The launcher's chunk preparer (`crates/contend-record/src/chunk_prep.rs`):
//! while a program starts short threads in batches
//! (tests/programs/thread_churn.c), `contend record` makes the lock
//! trace's next chunks ready ahead, the threads' claims take them
//! without writing zeros, and the recording is the same as one made
//! without the preparer (`CONTEND_PREPARE_CHUNKS=0`): every acquisition,
//! every thread. The threads claim chunks of their own (`CONTEND_SLOTS=0`):
//! with slots, the default, a short thread's first records go into a slot
//! of a shared slot chunk (docs/trace-format.md, "Slot chunks") and it
//! claims no chunk the preparer could have made ready.

use std::process::Command;

use crate::common::*;
use serde_json::Value;

/// Batches, threads per batch, acquisitions per thread.
const BATCHES: u64 = 20;
const BATCH: u64 = 16;
const PER_THREAD: u64 = 5;

/// Records thread_churn (`light`: with `--light`; `prepare`: the preparer
/// on) and returns the run's meta.json and the JSON report.
fn record_churn(light: bool, prepare: bool) -> (Value, Value) {
    let prog = build("thread_churn.c", &[]);
    let tmp = tempdir();
    let dir = tmp.path().join("churn.data");
    let mut cmd = Command::new(contend_bin());
    cmd.arg("record");
    if light {
        cmd.arg("--light");
    }
    cmd.arg("-o")
        .arg(&dir)
        .arg("--")
        .arg(&prog)
        .args([BATCHES, BATCH, PER_THREAD, 5].map(|n| n.to_string()))
        .env("CONTEND_PREPARE_CHUNKS", if prepare { "1" } else { "0" })
        .env("CONTEND_SLOTS", "0");
    let out = run_timeout(cmd, RUN_TIMEOUT);
    assert!(out.success(), "{}", out.describe());
    let acquisitions = BATCHES * BATCH * PER_THREAD;
    assert!(
        out.stdout
            .contains(&format!("acquisitions={acquisitions} ")),
        "{}",
        out.describe()
    );
    (meta(&dir), report_json(&dir))
}

/// Every acquisition and every thread of the program is in the report.
fn check_complete(report: &Value, what: &str) {
    let locks = &report["locks"];
    assert_eq!(
        locks["summary"]["events"].as_u64(),
        Some(BATCHES * BATCH * PER_THREAD),
        "{what}: {}",
        locks["summary"]
    );
    // the workers, each with its acquisitions (the main thread is listed
    // too, for its joins)
    let threads = locks["by_thread"].as_array().expect("by_thread");
    let workers = threads
        .iter()
        .filter(|t| t["events"].as_u64() == Some(PER_THREAD))
        .count() as u64;
    assert_eq!(workers, BATCHES * BATCH, "{what}: {threads:?}");
}

fn check_prepared(meta: &Value, what: &str) {
    let prep = &meta["chunk_preparation"];
    assert_eq!(prep["traces"].as_u64(), Some(1), "{what}: {prep}");
    let prepared = prep["chunks_prepared"].as_u64().unwrap_or(0);
    let claims = prep["claims_prepared"].as_u64().unwrap_or(0);
    // every thread claims a chunk (light mode: its counts' chunk, and one
    // for records only when something was recorded), and the preparer
    // had 5 ms between batches to get ahead of them
    assert!(claims > 0, "{what}: no claim took a prepared chunk: {prep}");
    assert!(
        claims <= prepared && claims <= 2 * BATCHES * BATCH,
        "{what}: {prep}"
    );
    assert!(prep["notes"].is_null(), "{what}: {prep}");
}

/// The report's recording section says what the preparer did, as
/// meta.json has it.
fn check_reported(meta: &Value, report: &Value, what: &str) {
    let prep = &meta["chunk_preparation"];
    let reported = &report["recording"]["chunk_preparation"];
    assert_eq!(
        reported["claims_prepared"], prep["claims_prepared"],
        "{what}: {reported}"
    );
    assert_eq!(
        reported["chunks_prepared"], prep["chunks_prepared"],
        "{what}: {reported}"
    );
    assert_eq!(
        reported["launcher_cpu_ns"], prep["cpu_ns"],
        "{what}: {reported}"
    );
}

#[test]
fn short_threads_take_prepared_chunks_and_lose_nothing() {
    let (meta_on, on) = record_churn(false, true);
    check_complete(&on, "preparer on");
    check_prepared(&meta_on, "preparer on");
    check_reported(&meta_on, &on, "preparer on");
    let (meta_off, off) = record_churn(false, false);
    check_complete(&off, "preparer off");
    assert!(
        off["recording"]["chunk_preparation"].is_null(),
        "{}",
        off["recording"]
    );
    assert!(
        meta_off.get("chunk_preparation").is_none(),
        "CONTEND_PREPARE_CHUNKS=0: {}",
        meta_off["chunk_preparation"]
    );
}

#[test]
fn light_mode_counts_in_prepared_chunks() {
    let (meta, report) = record_churn(true, true);
    check_complete(&report, "light");
    check_prepared(&meta, "light");
}

#[test]
fn no_chunks_are_prepared_under_a_size_cap() {
    let prog = build("thread_churn.c", &[]);
    let tmp = tempdir();
    let dir = tmp.path().join("capped.data");
    let mut cmd = Command::new(contend_bin());
    cmd.arg("record")
        .args(["--max-size", "64M", "-o"])
        .arg(&dir)
        .arg("--")
        .arg(&prog)
        .args(["4", "8", "2", "1"])
        .env_remove("CONTEND_PREPARE_CHUNKS");
    let out = run_timeout(cmd, RUN_TIMEOUT);
    assert!(out.success(), "{}", out.describe());
    let meta = meta(&dir);
    assert!(
        meta.get("chunk_preparation").is_none(),
        "prepared chunks would take disk blocks the cap does not count: {}",
        meta["chunk_preparation"]
    );
    check_complete_counts(&report_json(&dir), 4 * 8 * 2);
}

/// The report holds `n` acquisitions.
fn check_complete_counts(report: &Value, n: u64) {
    assert_eq!(
        report["locks"]["summary"]["events"].as_u64(),
        Some(n),
        "{}",
        report["locks"]["summary"]
    );
}
