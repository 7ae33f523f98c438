//! The lock analysis of a recording whose trace header is damaged: a real
//! trace (the golden sharequeue run) with its index-table slot counts cut
//! to 16, so that nearly every record's object and site index lies outside
//! the table. The analysis must not panic (it once indexed the table with
//! the raw slot), must still pair every operation, and must carry the
//! reader's warning.

use std::path::{Path, PathBuf};

use contend::locks::LockReport;
use contend::recording::Recording;
use contend::report::Report;
use contend_trace::format::header as h;

/// Copies the golden recording `name` (a flat directory of directories)
/// into `dest`.
fn copy_recording(name: &str, dest: &Path) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/golden/recordings")
        .join(name);
    let out = dest.join(name);
    copy_dir(&src, &out);
    out
}

fn copy_dir(src: &Path, dest: &Path) {
    std::fs::create_dir_all(dest).unwrap();
    for e in std::fs::read_dir(src).unwrap_or_else(|e| panic!("{}: {e}", src.display())) {
        let e = e.unwrap();
        let to = dest.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &to);
        } else {
            std::fs::copy(e.path(), &to).unwrap();
        }
    }
}

/// Sets both table slot counts of every trace of `dir` to `slots`.
fn patch_table_slots(dir: &Path, slots: u32) {
    let mut patched = 0;
    for e in std::fs::read_dir(dir.join("locks")).unwrap() {
        let path = e.unwrap().path();
        let mut bytes = std::fs::read(&path).unwrap();
        for at in [h::OBJECT_TABLE_SLOTS, h::SITE_TABLE_SLOTS] {
            bytes[at..at + 4].copy_from_slice(&slots.to_le_bytes());
        }
        std::fs::write(&path, bytes).unwrap();
        patched += 1;
    }
    assert!(patched > 0, "no trace in {}", dir.display());
}

/// The report of the recording in `dir`.
fn analyze_default(rec: &Recording) -> Report {
    contend::analyze(rec, &Default::default(), &contend::NoProgress).into_report()
}

fn lock_events(r: &Report) -> u64 {
    r.section::<LockReport>().unwrap().summary.events
}

#[test]
fn analysis_of_a_trace_with_damaged_table_sizes() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = copy_recording("sharequeue-single.data", tmp.path());
    let clean = analyze_default(&Recording::open(&dir).unwrap());
    assert!(lock_events(&clean) > 0);

    patch_table_slots(&dir, 16);
    let rec = Recording::open(&dir).unwrap();
    let report = analyze_default(&rec);
    // Every operation is still paired: only addresses were lost.
    assert_eq!(lock_events(&report), lock_events(&clean));
    assert!(
        report
            .warnings
            .iter()
            .any(|w| w.contains("index-table slots") && w.contains("outside the table")),
        "warnings: {:#?}",
        report.warnings
    );
}
