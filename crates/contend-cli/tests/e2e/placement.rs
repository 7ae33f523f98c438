//! End-to-end tests of placement: `contend record --cpus LIST` and
//! `--cores N` pin the target, and its threads inherit the pinning; the
//! CPU list is in `meta.json` (`cpus_allowed`) and is the n of the
//! service-time analysis. Bad lists fail before anything is created.

use crate::common::*;

fn record_with(flags: &[&str], rec: &std::path::Path, prog: &std::path::Path) -> Output {
    let mut cmd = std::process::Command::new(contend_bin());
    cmd.arg("record")
        .args(flags)
        .arg("-o")
        .arg(rec)
        .arg("--")
        .arg(prog);
    run_timeout(cmd, RUN_TIMEOUT)
}

/// The last online CPU, and the first.
fn online() -> Vec<u32> {
    contend_record::cpus::online_cpu_list()
}

#[test]
fn cpus_pins_the_target_and_its_threads() {
    let prog = build("print_affinity.c", &[]);
    let dir = tempdir();
    let last = *online().last().unwrap();
    let rec = dir.path().join("cpus.data");
    let out = record_with(&["--cpus", &last.to_string()], &rec, &prog);
    assert!(out.success(), "{}", out.describe());
    assert_eq!(
        out.stdout.trim(),
        format!("main={last} thread={last}"),
        "{}",
        out.describe()
    );
    assert_eq!(meta(&rec)["cpus_allowed"], serde_json::json!([last]));
    let r = report_json(&rec);
    assert_eq!(r["service"]["cpus"], 1, "{}", r["service"]);
}

#[test]
fn cores_takes_the_first_online_cpus() {
    let prog = build("print_affinity.c", &[]);
    let dir = tempdir();
    let cpus = online();
    let n = cpus.len().min(2);
    let want: Vec<String> = cpus[..n].iter().map(|c| c.to_string()).collect();
    let want = want.join(",");
    let rec = dir.path().join("cores.data");
    let out = record_with(&["--cores", &n.to_string()], &rec, &prog);
    assert!(out.success(), "{}", out.describe());
    assert_eq!(out.stdout.trim(), format!("main={want} thread={want}"));
    assert_eq!(
        meta(&rec)["cpus_allowed"].as_array().unwrap().len(),
        n,
        "{}",
        meta(&rec)
    );
    assert_eq!(report_json(&rec)["service"]["cpus"], n as u64);
}

#[test]
fn bad_cpu_lists_fail_before_anything_starts() {
    let prog = build("print_affinity.c", &[]);
    let dir = tempdir();
    let rec = dir.path().join("bad.data");
    let too_many = (online().len() + 1).to_string();
    for (flags, needle) in [
        (vec!["--cpus", "x"], "`x` is not a CPU number"),
        (vec!["--cpus", "1-0"], "runs backwards"),
        (vec!["--cpus", ""], "empty"),
        (vec!["--cpus", "1000"], "not online"),
        (vec!["--cores", "0"], "at least one"),
        (vec!["--cores", too_many.as_str()], "online"),
        (vec!["--cpus", "0", "--cores", "1"], "cannot be used with"),
    ] {
        let out = record_with(&flags, &rec, &prog);
        assert_eq!(out.code(), Some(2), "{flags:?}: {}", out.describe());
        assert!(out.stderr.contains(needle), "{flags:?}: {}", out.describe());
        assert!(out.stdout.is_empty(), "{flags:?}: the program ran");
        assert!(!rec.exists(), "{flags:?}: the recording was created");
    }
}
