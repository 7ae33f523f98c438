//! `contend report` on lock traces damaged in ways that once killed it:
//! a header whose index-table slot counts are too small (a panic indexing
//! the table), and a trace written to a file system that filled up (SIGBUS
//! reading the holes of the sparse file through a mapping). Either way the
//! report must succeed, say what is wrong with the trace, and never panic
//! or die by a signal. And seeded random damage to any file of the golden
//! recordings, under `report` and every export.

use std::path::{Path, PathBuf};

use crate::common::*;
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

/// Unmounts a file system when dropped (lazily if it is busy).
struct Unmount(PathBuf);

impl Drop for Unmount {
    fn drop(&mut self) {
        let ok = std::process::Command::new("umount")
            .arg(&self.0)
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            let _ = std::process::Command::new("umount")
                .arg("-l")
                .arg(&self.0)
                .status();
        }
    }
}

/// Mounts an 8 MiB tmpfs on `at`; None (with the reason) when this is not
/// possible here (not root, no `mount`, no permission in this container).
fn mount_small_tmpfs(at: &Path) -> Result<Unmount, String> {
    let uid = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(2).map(str::to_owned))
        })
        .unwrap_or_default();
    if uid != "0" {
        return Err(format!("not running as root (effective uid {uid:?})"));
    }
    std::fs::create_dir_all(at).map_err(|e| e.to_string())?;
    let out = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=8m", "tmpfs"])
        .arg(at)
        .output()
        .map_err(|e| format!("cannot run mount: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "mount -t tmpfs failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(Unmount(at.to_path_buf()))
}

/// An 8 MiB tmpfs in a temporary directory, unmounted (first) and removed
/// when dropped.
struct SmallTmpfs {
    // fields drop in this order: unmounted before the directory is removed
    _mounted: Unmount,
    mnt: PathBuf,
    _tmp: tempfile::TempDir,
}

impl SmallTmpfs {
    /// Mounts it, or says why the test `test` is skipped and returns None.
    fn mount(test: &str) -> Option<SmallTmpfs> {
        let tmp = tempdir();
        let mnt = tmp.path().join("small-tmpfs");
        match mount_small_tmpfs(&mnt) {
            Ok(guard) => Some(SmallTmpfs {
                _mounted: guard,
                mnt,
                _tmp: tmp,
            }),
            Err(why) => {
                eprintln!("SKIP {test}: {why}");
                None
            }
        }
    }

    fn path(&self) -> &Path {
        &self.mnt
    }
}

/// A lock-heavy program recorded into a small tmpfs until the file system
/// is full: the trace file is sparse, with holes where the collector could
/// not get room (the rest of a thread's chunk, or chunks claimed but never
/// started). Touching such a hole through a mapping makes tmpfs allocate a
/// page, which fails, and `contend report` died by SIGBUS; read with pread
/// the holes are zeros, and the report says the trace may have been cut
/// short by the full file system. (Which threads stop where depends on
/// timing: chunks claimed but never started are reported when there are
/// some; the full file system always is.)
#[test]
fn report_of_a_recording_on_a_file_system_that_filled_up() {
    let _serial = serial();
    let Some(small) = SmallTmpfs::mount(module_path!()) else {
        return;
    };
    let mnt = small.path();
    let exe = build_source(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/sharequeue/sharequeue.c"),
        &[],
    );
    let dir = mnt.join("rec");
    // 4 threads × 300000 rounds, no work between them: about 5 million
    // records, 40 MB of trace for 8 MiB of room.
    let rec = record(&dir, &exe, &["single", "4", "64", "300000", "0"]);
    assert!(
        rec.signal().is_none(),
        "the recording died by a signal:\n{}",
        rec.describe()
    );
    assert!(
        rec.stdout.contains("check ok"),
        "the program ran to its end:\n{}",
        rec.describe()
    );
    // The file system filled up. Whatever room is left (pages freed when
    // the launcher's temporary files were removed) is taken, as a full
    // disk stays full.
    let mut filler = std::fs::File::create(mnt.join("filler")).unwrap();
    let full = loop {
        if let Err(e) = std::io::Write::write_all(&mut filler, &[1u8; 4096]) {
            break e;
        }
    };
    assert_eq!(full.kind(), std::io::ErrorKind::StorageFull, "{full}");
    assert!(
        std::fs::metadata(mnt.join("filler")).unwrap().len() < 4 << 20,
        "the recording left most of the 8 MiB free"
    );
    let traces = trace_files(&dir);
    assert_eq!(traces.len(), 1, "{traces:?}");

    let (text, json) = report_succeeds(&dir);
    let file_name = traces[0].file_name().unwrap().to_string_lossy().to_string();
    let w = warnings(&json);
    let trace_warning = w
        .lines()
        .find(|l| l.contains(&file_name))
        .unwrap_or_else(|| panic!("no warning names {file_name}: {w}"));
    assert!(
        trace_warning.contains("full file system"),
        "the warning says the trace may have been cut short by a full file system: {w}"
    );
    assert!(
        text.stdout.contains("full file system") || text.stderr.contains("full file system"),
        "the text report shows the warning:\n{}",
        text.describe()
    );
    assert!(u(&json, "locks.summary.events") > 0);
}

/// A small xorshift generator: the damage below is the same on every run.
struct Damage(u64);

impl Damage {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    /// Damages one file of `dir` (any: traces, samples, probes, metadata,
    /// maps): bits flipped, cut short, a run zeroed or overwritten with
    /// noise. Returns what was done, for the messages.
    fn apply(&mut self, dir: &Path) -> String {
        let mut files = Vec::new();
        let mut stack = vec![dir.to_path_buf()];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).unwrap().flatten() {
                if e.file_type().unwrap().is_dir() {
                    stack.push(e.path());
                } else {
                    files.push(e.path());
                }
            }
        }
        files.sort();
        let file = files[self.below(files.len())].clone();
        let mut data = std::fs::read(&file).unwrap();
        let what = if data.is_empty() {
            "left empty"
        } else {
            let len = data.len();
            match self.below(4) {
                0 => {
                    for _ in 0..1 + self.below(20) {
                        let i = self.below(len);
                        data[i] ^= 1 << self.below(8);
                    }
                    "bits flipped"
                }
                1 => {
                    data.truncate(self.below(len));
                    "cut short"
                }
                2 => {
                    let a = self.below(len);
                    let b = (a + 1 + self.below(4096)).min(len);
                    data[a..b].fill(0);
                    "a run zeroed"
                }
                _ => {
                    let a = self.below(len);
                    let b = (a + 1 + self.below(64)).min(len);
                    for x in &mut data[a..b] {
                        *x = self.next() as u8;
                    }
                    "noise written"
                }
            }
        };
        std::fs::write(&file, &data).unwrap();
        format!("{}: {what}", file.display())
    }
}

/// Seeded random damage to any file of a recording (lock traces with
/// stacks, MPI traces, service samples, probes, metadata, maps): `contend
/// report` and every export either succeed or refuse with exit status 2
/// and a message; never a panic, a signal or a hang (robustness rule:
/// bad input gets a clear error, never a panic).
#[test]
fn seeded_random_damage_to_any_file_never_panics() {
    let tmp = tempdir();
    let mut rng = Damage(0x9e37_79b9_7f4a_7c15);
    let exports = ["perfetto", "chrome", "pprof", "folded", "otf2"];
    let mut n = 0;
    for name in [
        "sharequeue-stacks.data",
        "mpi-waits.data",
        "sharequeue-two.data",
    ] {
        for _ in 0..12 {
            n += 1;
            let dir = tmp.path().join(format!("damaged-{n}.data"));
            copy_tree(&golden_recording(name), &dir);
            let what = rng.apply(&dir);
            let out_file = tmp.path().join(format!("out-{n}"));
            let format = exports[n % exports.len()];
            let report = report_raw(&dir, &["--format", "json"]);
            let mut export = std::process::Command::new(contend_bin());
            export
                .arg("export")
                .arg(&dir)
                .args(["--format", format, "-o"])
                .arg(&out_file);
            let export = run_timeout(export, std::time::Duration::from_secs(120));
            for (command, out) in [("report", &report), ("export", &export)] {
                let context = format!(
                    "{name}, {what}; contend {command} ({format}):\n{}",
                    out.describe()
                );
                assert!(out.signal().is_none(), "died by a signal: {context}");
                assert!(
                    !out.stderr.contains("panicked") && out.code() != Some(101),
                    "panicked: {context}"
                );
                match out.code() {
                    Some(0) => {}
                    Some(2) => assert!(out.stderr.contains("contend: error"), "{context}"),
                    _ => panic!("unexpected exit status: {context}"),
                }
            }
        }
    }
}

/// On a nearly full file system the launcher's chunk preparer takes no
/// space ahead of the claims (crates/contend-record/src/chunk_prep.rs,
/// `KEEP_FREE_BYTES`): it prepares nothing, says why, and the program and
/// its recording are as without it.
#[test]
fn no_chunks_are_prepared_on_a_nearly_full_file_system() {
    let _serial = serial();
    let Some(small) = SmallTmpfs::mount(module_path!()) else {
        return;
    };
    let mnt = small.path();
    let exe = build("thread_churn.c", &[]);
    let dir = mnt.join("rec");
    let mut cmd = record_command(&dir, &exe, &["10", "16", "5", "5"]);
    cmd.env_remove("CONTEND_PREPARE_CHUNKS");
    let rec = run_timeout(cmd, RUN_TIMEOUT);
    assert!(rec.success(), "{}", rec.describe());
    assert!(
        rec.stdout.contains("acquisitions=800 "),
        "{}",
        rec.describe()
    );
    let meta = meta(&dir);
    let prep = &meta["chunk_preparation"];
    assert_eq!(prep["chunks_prepared"].as_u64(), Some(0), "{prep}");
    assert_eq!(prep["claims_prepared"].as_u64(), Some(0), "{prep}");
    assert!(
        prep["notes"][0]
            .as_str()
            .is_some_and(|n| n.contains("less than 64 MiB free")),
        "{prep}"
    );
}
