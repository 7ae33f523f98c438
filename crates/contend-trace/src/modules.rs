//! The identity of every mapped object of a recording:
//! `<recording>/modules.json`.
//!
//! The collector's maps snapshots (`maps/*.maps`) name each executable and
//! library by path only. A path outlives its content: rebuild the program
//! and every address of an old recording resolves against the new file,
//! silently one line off or in another function. So once the program has
//! ended, the launcher (`contend record`, crate `contend-record`) reads
//! each executable mapping's ELF build ID (the `NT_GNU_BUILD_ID` note)
//! and its size and modification time, writes them here, and copies the
//! file into the build-id cache ([`crate::buildid_cache`]). At report time
//! a module is symbolized from the file at its path only when that file
//! still has the recorded build ID (or, for a file without one, the
//! recorded size and modification time), else from the cache's copy, else
//! not at all: its sites are then shown as addresses, with a warning.
//!
//! Reading is lenient like `meta.json`'s: every field has a default and
//! unknown fields are ignored. Recordings made before this file existed
//! have none; their modules are used as found (the old behaviour).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::TraceError;

/// File name inside a recording directory.
pub const MODULES_FILE: &str = "modules.json";

/// Version of the `modules.json` layout this crate writes and reads.
pub const MODULES_FORMAT_VERSION: u32 = 1;

/// `modules.json`: the mapped objects of every traced process.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ModulesFile {
    /// Layout version ([`MODULES_FORMAT_VERSION`]).
    pub format_version: u32,
    /// The build-id cache the files were copied into (absolute path), or
    /// `None` when the copy was skipped (`contend record
    /// --no-buildid-cache`) or the cache could not be used.
    pub cache_dir: Option<String>,
    /// One entry per distinct path of an executable file mapping in any
    /// maps snapshot of the recording, sorted by path.
    pub modules: Vec<ModuleRecord>,
}

impl Default for ModulesFile {
    fn default() -> ModulesFile {
        ModulesFile {
            format_version: MODULES_FORMAT_VERSION,
            cache_dir: None,
            modules: Vec::new(),
        }
    }
}

/// One mapped object, as it was when the recording ended.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ModuleRecord {
    /// Path as written in the maps snapshots.
    pub path: String,
    /// GNU build ID, lowercase hexadecimal; `None` when the file has none
    /// (then `size` and `mtime_ns` identify it) or could not be read.
    pub build_id: Option<String>,
    /// File size, bytes; `None` when the file could not be read.
    pub size: Option<u64>,
    /// Modification time, ns since the Unix epoch; `None` when the file
    /// could not be read.
    pub mtime_ns: Option<u64>,
    /// Inode number recorded in the maps snapshot (0 if none).
    pub inode: u64,
    /// A copy is in the build-id cache (`cache_dir`).
    pub cached: bool,
    /// Why the identity or the copy is missing, one sentence (the file was
    /// replaced while the program ran, could not be read, was too large
    /// for the cache, …); `None` when all went well.
    pub problem: Option<String>,
}

impl ModuleRecord {
    /// True when the record identifies a file: a build ID, or a size and
    /// a modification time.
    pub fn identifies(&self) -> bool {
        self.build_id.is_some() || (self.size.is_some() && self.mtime_ns.is_some())
    }
}

impl ModulesFile {
    /// Path of `modules.json` inside the recording directory `dir`.
    pub fn path(dir: &Path) -> PathBuf {
        dir.join(MODULES_FILE)
    }

    /// Reads `dir/modules.json`; `Ok(None)` when the recording has none
    /// (made before it existed, or by `contend record -p PID`).
    ///
    /// Errors ([`TraceError`], naming the file): unreadable, not JSON, a
    /// field of the wrong type, or a format version newer than
    /// [`MODULES_FORMAT_VERSION`].
    pub fn read(dir: &Path) -> Result<Option<ModulesFile>, TraceError> {
        crate::json_file::read_versioned(
            &ModulesFile::path(dir),
            "a module list",
            |f: &ModulesFile| f.format_version,
            MODULES_FORMAT_VERSION,
        )
    }

    /// Writes `dir/modules.json` (a temporary file renamed into place, so a
    /// reader never sees half a file). Errors name the file.
    pub fn write(&self, dir: &Path) -> Result<(), TraceError> {
        crate::json_file::write_atomically(dir, MODULES_FILE, self)
    }

    /// The record of the module at `path`, if listed.
    pub fn get(&self, path: &str) -> Option<&ModuleRecord> {
        self.modules
            .binary_search_by(|m| m.path.as_str().cmp(path))
            .ok()
            .map(|i| &self.modules[i])
            .or_else(|| self.modules.iter().find(|m| m.path == path))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_missing_file() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(ModulesFile::read(dir.path()).unwrap(), None);
        let file = ModulesFile {
            cache_dir: Some("/c".into()),
            modules: vec![
                ModuleRecord {
                    path: "/a/app".into(),
                    build_id: Some("ab12".into()),
                    size: Some(10),
                    mtime_ns: Some(20),
                    inode: 7,
                    cached: true,
                    problem: None,
                },
                ModuleRecord {
                    path: "/b/lib.so".into(),
                    ..ModuleRecord::default()
                },
            ],
            ..ModulesFile::default()
        };
        file.write(dir.path()).unwrap();
        let back = ModulesFile::read(dir.path()).unwrap().unwrap();
        assert_eq!(back, file);
        assert_eq!(back.get("/a/app").unwrap().inode, 7);
        assert!(back.get("/a/app").unwrap().identifies());
        assert!(!back.get("/b/lib.so").unwrap().identifies());
        assert!(back.get("/nope").is_none());
    }

    #[test]
    fn bad_files_are_named_errors() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(ModulesFile::path(dir.path()), "{\"modules\": 3}").unwrap();
        let e = ModulesFile::read(dir.path()).unwrap_err().to_string();
        assert!(
            e.contains("modules.json") && e.contains("not a module list"),
            "{e}"
        );
        std::fs::write(
            ModulesFile::path(dir.path()),
            "{\"format_version\": 99, \"extra\": 1}",
        )
        .unwrap();
        let e = ModulesFile::read(dir.path()).unwrap_err().to_string();
        assert!(e.contains("format version 99"), "{e}");
        // Unknown fields and missing ones are fine.
        std::fs::write(ModulesFile::path(dir.path()), "{\"later\": true}").unwrap();
        assert!(ModulesFile::read(dir.path())
            .unwrap()
            .unwrap()
            .modules
            .is_empty());
    }
}
