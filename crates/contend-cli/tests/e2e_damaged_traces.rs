//! `contend report` on lock traces damaged in ways that once killed it:
//! a header whose index-table slot counts are too small (a panic indexing
//! the table), and a trace written to a file system that filled up (SIGBUS
//! reading the holes of the sparse file through a mapping). Either way the
//! report must succeed, say what is wrong with the trace, and never panic
//! or die by a signal.

mod common;

use std::path::{Path, PathBuf};

use common::*;
use contend_trace::format::header as h;

fn golden_recording(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/golden/recordings")
        .join(name)
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

/// Runs `contend report DIR` in text and JSON; both must exit 0 without a
/// panic or a signal. Returns (text output, JSON report).
fn report_succeeds(dir: &Path) -> (Output, serde_json::Value) {
    let mut text = None;
    for format in ["text", "json"] {
        let out = report_raw(dir, &["--format", format]);
        assert!(
            out.signal().is_none(),
            "contend report --format {format} died by a signal:\n{}",
            out.describe()
        );
        assert!(
            !out.stderr.contains("panicked") && !out.stdout.contains("panicked"),
            "contend report --format {format} panicked:\n{}",
            out.describe()
        );
        assert!(
            out.success(),
            "contend report --format {format} failed:\n{}",
            out.describe()
        );
        if format == "json" {
            let json = serde_json::from_str(&out.stdout).unwrap_or_else(|e| {
                panic!("invalid JSON ({e}):\n{}", out.describe());
            });
            return (text.unwrap(), json);
        }
        text = Some(out);
    }
    unreachable!()
}

#[test]
fn report_of_a_trace_with_damaged_table_sizes() {
    let tmp = tempdir();
    let dir = tmp.path().join("rec");
    copy_tree(&golden_recording("sharequeue-single.data"), &dir);
    let traces = trace_files(&dir);
    assert!(!traces.is_empty());
    for path in &traces {
        let mut bytes = std::fs::read(path).unwrap();
        for at in [h::OBJECT_TABLE_SLOTS, h::SITE_TABLE_SLOTS] {
            bytes[at..at + 4].copy_from_slice(&16u32.to_le_bytes());
        }
        std::fs::write(path, bytes).unwrap();
    }
    let (text, json) = report_succeeds(&dir);
    let file_name = traces[0].file_name().unwrap().to_string_lossy().to_string();
    let w = warnings(&json);
    assert!(
        w.contains(&file_name) && w.contains("outside the table"),
        "warnings: {w}"
    );
    let all = format!("{}{}", text.stdout, text.stderr);
    assert!(
        all.contains("outside the table"),
        "the text report shows the warning:\n{}",
        text.describe()
    );
    assert!(u(&json, "locks.summary.events") > 0);
}
