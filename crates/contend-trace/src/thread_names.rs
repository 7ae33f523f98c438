//! Thread names of processes recorded without the collector:
//! `<recording>/threads.json`.
//!
//! A launched program's threads name themselves in the lock trace's chunk
//! headers (the collector stores each thread's comm). A recording of a
//! running process (`contend record -p PID`) has no collector, so the
//! recorder (crate `contend-record`, `attach.rs`) reads every thread's
//! `/proc/<pid>/task/<tid>/comm` at the attach and again at the end (a
//! thread that renamed itself keeps its later name; one that exited in
//! between keeps the name it had at the attach) and writes them here.
//! Readers use these names where no lock trace names the thread (timeline
//! tracks of the exports).
//!
//! Reading is lenient like `modules.json`'s: every field has a default and
//! unknown fields are ignored. Recordings without the file have no names
//! from it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::TraceError;

/// File name inside a recording directory.
pub const THREAD_NAMES_FILE: &str = "threads.json";

/// Version of the `threads.json` layout this crate writes and reads.
pub const THREAD_NAMES_FORMAT_VERSION: u32 = 1;

/// `threads.json`: the kernel's name (comm, at most 15 bytes) of every
/// thread of the recorded processes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ThreadNamesFile {
    /// Layout version ([`THREAD_NAMES_FORMAT_VERSION`]).
    pub format_version: u32,
    /// One entry per thread, by process id then thread id.
    pub threads: Vec<ThreadName>,
}

impl Default for ThreadNamesFile {
    fn default() -> ThreadNamesFile {
        ThreadNamesFile {
            format_version: THREAD_NAMES_FORMAT_VERSION,
            threads: Vec::new(),
        }
    }
}

/// One thread's name.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ThreadName {
    /// Process id (the thread group).
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// The kernel's name of the thread (`/proc/<pid>/task/<tid>/comm`).
    pub name: String,
}

impl ThreadNamesFile {
    /// The file's path in recording `dir`.
    pub fn path(dir: &Path) -> PathBuf {
        dir.join(THREAD_NAMES_FILE)
    }

    /// The names by (pid, tid).
    pub fn by_thread(&self) -> BTreeMap<(u32, u32), String> {
        self.threads
            .iter()
            .map(|t| ((t.pid, t.tid), t.name.clone()))
            .collect()
    }

    /// Reads `dir/threads.json`: `Ok(None)` when the recording has none.
    ///
    /// Errors ([`TraceError`], naming the file): unreadable, not JSON, a
    /// field of the wrong type, or a format version newer than
    /// [`THREAD_NAMES_FORMAT_VERSION`].
    pub fn read(dir: &Path) -> Result<Option<ThreadNamesFile>, TraceError> {
        crate::json_file::read_versioned(
            &ThreadNamesFile::path(dir),
            "a thread-name list",
            |f: &ThreadNamesFile| f.format_version,
            THREAD_NAMES_FORMAT_VERSION,
        )
    }

    /// Writes `dir/threads.json` (a temporary file renamed into place, so a
    /// reader never sees half a file). Errors name the file.
    pub fn write(&self, dir: &Path) -> Result<(), TraceError> {
        crate::json_file::write_atomically(dir, THREAD_NAMES_FILE, self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    #[test]
    fn written_names_read_back_and_a_newer_version_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(ThreadNamesFile::read(dir.path()).unwrap(), None);
        let f = ThreadNamesFile {
            threads: vec![ThreadName {
                pid: 10,
                tid: 11,
                name: "worker-1".into(),
            }],
            ..ThreadNamesFile::default()
        };
        f.write(dir.path()).unwrap();
        let back = ThreadNamesFile::read(dir.path()).unwrap().unwrap();
        assert_eq!(back, f);
        assert_eq!(back.by_thread()[&(10, 11)], "worker-1");
        fs::write(
            ThreadNamesFile::path(dir.path()),
            br#"{"format_version": 99, "threads": []}"#,
        )
        .unwrap();
        let e = ThreadNamesFile::read(dir.path()).unwrap_err().to_string();
        assert!(
            e.contains("threads.json") && e.contains("version 99"),
            "{e}"
        );
        fs::write(ThreadNamesFile::path(dir.path()), b"[1,").unwrap();
        let e = ThreadNamesFile::read(dir.path()).unwrap_err().to_string();
        assert!(e.contains("not a thread-name list"), "{e}");
    }
}
