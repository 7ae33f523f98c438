//! `contend export`: folded stacks from the golden recordings, the totals
//! equal to the report's, and the file handling (default name, `--force`,
//! `-o -`, unknown formats).

use std::process::Command;

use crate::common::{contend_bin, report_json_with};
use crate::golden::fixtures;

fn contend(dir: &std::path::Path, args: &[&str]) -> std::process::Output {
    Command::new(contend_bin())
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap()
}

/// (stack, value) pairs of a folded file.
fn parse_folded(text: &str) -> Vec<(String, u64)> {
    text.lines()
        .map(|l| {
            let (stack, value) = l.rsplit_once(' ').expect("`stack value`");
            (stack.to_string(), value.parse().expect("an integer value"))
        })
        .collect()
}

#[test]
fn folded_wait_equals_the_reported_wait() {
    let tmp = fixtures();
    for name in ["sharequeue-single.data", "sharequeue-stacks.data"] {
        let out = contend(
            tmp.path(),
            &["export", name, "--format", "folded", "-o", "-"],
        );
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let folded = parse_folded(&String::from_utf8(out.stdout).unwrap());
        assert!(!folded.is_empty(), "{name}: no stacks");
        let total: u64 = folded.iter().map(|f| f.1).sum();
        let r = report_json_with(&tmp.path().join(name), &[] as &[&str]);
        let mut want = r["locks"]["summary"]["wait_ns"].as_u64().unwrap();
        for w in r["locks"]["other_waits"].as_array().unwrap() {
            want += w["wait_ns"].as_u64().unwrap();
        }
        assert_eq!(total, want, "{name}: folded wait vs report");
        for (stack, _) in &folded {
            let frames: Vec<&str> = stack.split(';').collect();
            assert_eq!(frames[0], "sharequeue", "{stack}");
            assert!(frames.last().unwrap().ends_with("[mutex]"), "{stack}");
        }
        // Every site of the report is a frame of some stack.
        for site in r["locks"]["by_site"].as_array().unwrap() {
            let f = site["function"].as_str().unwrap();
            if site["wait_ns"].as_u64().unwrap() > 0 {
                assert!(
                    folded.iter().any(|(s, _)| s.split(';').any(|x| x == f)),
                    "{name}: {f} in no stack"
                );
            }
        }
        if name.contains("stacks") {
            // With recorded stacks, the path from main is there.
            assert!(
                folded
                    .iter()
                    .any(|(s, _)| s.contains(";main;") || s.contains(";start_thread;")),
                "{folded:?}"
            );
        }
    }
    // Hold weights: the report's hold time.
    let out = contend(
        tmp.path(),
        &[
            "export",
            "sharequeue-single.data",
            "--format",
            "folded",
            "--weight",
            "hold",
            "-o",
            "-",
        ],
    );
    let total: u64 = parse_folded(&String::from_utf8(out.stdout).unwrap())
        .iter()
        .map(|f| f.1)
        .sum();
    let r = report_json_with(&tmp.path().join("sharequeue-single.data"), &[] as &[&str]);
    assert_eq!(total, r["locks"]["summary"]["hold_ns"].as_u64().unwrap());
}

#[test]
fn export_files_are_named_refused_and_forced() {
    let tmp = fixtures();
    let out = contend(
        tmp.path(),
        &["export", "sharequeue-two.data", "--format", "folded"],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("contend.folded"), "{stderr}");
    let first = std::fs::read_to_string(tmp.path().join("contend.folded")).unwrap();
    assert!(!first.is_empty());
    // Not over an existing file without --force.
    let out = contend(
        tmp.path(),
        &["export", "sharequeue-two.data", "--format", "folded"],
    );
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("already exists") && stderr.contains("--force"),
        "{stderr}"
    );
    let out = contend(
        tmp.path(),
        &[
            "export",
            "sharequeue-two.data",
            "--format",
            "folded",
            "--force",
        ],
    );
    assert!(out.status.success());
    // An unknown format lists the valid ones.
    let out = contend(
        tmp.path(),
        &["export", "sharequeue-two.data", "--format", "svgz"],
    );
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("folded"), "{stderr}");
    // No recording: named.
    let out = contend(
        tmp.path(),
        &["export", "nothing.data", "--format", "folded"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("nothing.data"));
    // An MPI-only recording has no lock events to fold: said, no file left.
    let out = contend(
        tmp.path(),
        &[
            "export",
            "mpi-waits.data",
            "--format",
            "folded",
            "-o",
            "mpi.folded",
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no lock events"));
    assert!(!tmp.path().join("mpi.folded").exists());
}
