//! Golden test: the JSON of the bundled examples' recordings, byte for byte.
//!
//! `tests/golden/recordings/` holds small recordings of the three bundled
//! examples (sharequeue with one lock, with two locks and with call stacks;
//! a `contend scale` directory of the scaling example; the 4-rank
//! mpi-waits example under Open MPI) and the example binaries they ran.
//! `tests/golden/expected/` holds `contend report --format json` (and one
//! `contend compare`) of each, as the code wrote them when the fixtures
//! were made (see `tests/golden/README.md`). JSON is a contract
//! (docs/json.md): a change here is a change of the contract.
//!
//! The recordings were made in `/tmp/contend-golden`; the memory-map
//! snapshots name the binaries there. The test copies the fixtures into a
//! temporary directory, points the snapshots at the copies, runs
//! `contend` there and maps the temporary path back before comparing.

mod common;

use std::path::Path;
use std::process::Command;

/// Where the fixtures were recorded (named in their maps snapshots).
const RECORDED_AT: &str = "/tmp/contend-golden";

fn golden_dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/golden")
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// Rewrites `RECORDED_AT` to `here` in every `*.maps` file below `dir`.
fn relocate_maps(dir: &Path, here: &str) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            relocate_maps(&path, here);
        } else if path.extension().is_some_and(|e| e == "maps") {
            let text = std::fs::read_to_string(&path).unwrap();
            std::fs::write(&path, text.replace(RECORDED_AT, here)).unwrap();
        }
    }
}

/// The fixtures, copied and relocated into a fresh temporary directory.
fn fixtures() -> tempfile::TempDir {
    let tmp = common::tempdir();
    copy_tree(&golden_dir().join("recordings"), tmp.path());
    relocate_maps(tmp.path(), tmp.path().to_str().unwrap());
    tmp
}

fn run_in(dir: &Path, args: &[&str]) -> String {
    let out = Command::new(common::contend_bin())
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "contend {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .replace(dir.to_str().unwrap(), RECORDED_AT)
}

fn check(name: &str, args: &[&str]) {
    let tmp = fixtures();
    let got = run_in(tmp.path(), args);
    let expected_path = golden_dir().join("expected").join(format!("{name}.json"));
    let expected = std::fs::read_to_string(&expected_path).unwrap();
    if got != expected {
        let at = got
            .bytes()
            .zip(expected.bytes())
            .position(|(a, b)| a != b)
            .unwrap_or(got.len().min(expected.len()));
        let from = at.saturating_sub(200);
        panic!(
            "{}: output differs from byte {at}\n--- expected ---\n{}\n--- got ---\n{}",
            expected_path.display(),
            &expected[from..(at + 200).min(expected.len())],
            &got[from..(at + 200).min(got.len())]
        );
    }
}

#[test]
fn sharequeue_single_lock_json_is_unchanged() {
    check(
        "sharequeue-single",
        &["report", "sharequeue-single.data", "--format", "json"],
    );
}

#[test]
fn sharequeue_two_locks_json_is_unchanged() {
    check(
        "sharequeue-two",
        &["report", "sharequeue-two.data", "--format", "json"],
    );
}

#[test]
fn sharequeue_with_stacks_json_is_unchanged() {
    check(
        "sharequeue-stacks",
        &["report", "sharequeue-stacks.data", "--format", "json"],
    );
}

#[test]
fn mpi_waits_json_is_unchanged() {
    check(
        "mpi-waits",
        &["report", "mpi-waits.data", "--format", "json"],
    );
}

#[test]
fn scale_directory_json_is_unchanged() {
    check("scaling", &["report", "scaling.scale", "--format", "json"]);
}

#[test]
fn comparison_json_is_unchanged() {
    check(
        "compare",
        &[
            "compare",
            "sharequeue-single.data",
            "sharequeue-two.data",
            "mpi-waits.data",
            "--format",
            "json",
        ],
    );
}
