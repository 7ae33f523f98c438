//! Which file to symbolize a module from: the one at its recorded path,
//! a copy kept by build ID, or none.
//!
//! A maps snapshot names a module by path, but the file at that path may
//! have been rebuilt since the recording: resolving against it would move
//! every call site silently. When the recording says what the module was
//! ([`RecordedModule`]: its build ID, or its size and modification time,
//! and a copy of it if one was kept), [`choose`] uses the file at the path
//! only if it is still that module, else the copy, else nothing
//! ([`ModuleFileState::Mismatch`]: the module's addresses stay addresses).
//! Without a record the file at the path is used as it is
//! ([`ModuleFileState::Unchecked`], the behaviour for older recordings).

use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use serde::{Deserialize, Serialize};

use super::debugfind::hex;
use super::elf;

/// What a recording says about one module (its `modules.json` entry, in
/// `contend`'s terms), to check the file found at report time against.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RecordedModule {
    /// Path as in the maps snapshots.
    pub path: String,
    /// GNU build ID, lowercase hexadecimal, if the module had one.
    pub build_id: Option<String>,
    /// File size when recorded, bytes (identifies a module without a
    /// build ID, with `mtime_ns`).
    pub size: Option<u64>,
    /// Modification time when recorded, ns since the Unix epoch.
    pub mtime_ns: Option<u64>,
    /// A copy of the module kept when it was recorded (the build-id
    /// cache's entry), used when the file at `path` is no longer it.
    pub cached_copy: Option<PathBuf>,
}

/// How the file a module was read from relates to the recording.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum ModuleFileState {
    /// Nothing was recorded to check against (a recording made before
    /// build IDs were recorded, or a module not listed): the file at the
    /// path was used as it is.
    Unchecked,
    /// The file at the path is the recorded one (same build ID, or same
    /// size and modification time).
    Verified,
    /// The file at the path is not the recorded one; this copy of the
    /// recorded one (from the build-id cache) was used.
    FromCache(PathBuf),
    /// The file at the path is not the recorded one and no copy was
    /// found: the module was not used, its addresses stay addresses.
    Mismatch {
        /// What was recorded (`build ID 3f2a…`, or size and time).
        recorded: String,
        /// What is at the path now (`build ID 9c01…`, `no build ID`,
        /// `no file`, or size and time).
        found: String,
    },
}

/// The file to read for the module at `path` according to `recorded`, and
/// how it relates to the recording; `Err` with the mismatch when neither
/// the file at `path` nor the copy is the recorded module.
pub(crate) fn choose(
    recorded: &RecordedModule,
    path: &Path,
) -> Result<(PathBuf, ModuleFileState), ModuleFileState> {
    if let Some(want) = &recorded.build_id {
        let want = want.to_ascii_lowercase();
        let on_disk = elf::read_build_id(path).map(|b| hex(&b));
        if on_disk.as_deref() == Some(want.as_str()) {
            return Ok((path.to_path_buf(), ModuleFileState::Verified));
        }
        if let Some(copy) = &recorded.cached_copy {
            if elf::read_build_id(copy).map(|b| hex(&b)).as_deref() == Some(want.as_str()) {
                return Ok((copy.clone(), ModuleFileState::FromCache(copy.clone())));
            }
        }
        let found = match on_disk {
            Some(id) => format!("build ID {id}"),
            None if path.exists() => "a file without that build ID".to_string(),
            None => "no file".to_string(),
        };
        return Err(ModuleFileState::Mismatch {
            recorded: format!("build ID {want}"),
            found,
        });
    }
    if let (Some(size), Some(mtime)) = (recorded.size, recorded.mtime_ns) {
        let now = std::fs::metadata(path).ok().map(|md| {
            let t = md
                .modified()
                .ok()
                .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_nanos() as u64);
            (md.len(), t)
        });
        return match now {
            Some((s, t)) if s == size && t == mtime => {
                Ok((path.to_path_buf(), ModuleFileState::Verified))
            }
            Some((s, t)) => Err(ModuleFileState::Mismatch {
                recorded: describe_size_time(size, mtime),
                found: describe_size_time(s, t),
            }),
            None => Err(ModuleFileState::Mismatch {
                recorded: describe_size_time(size, mtime),
                found: "no file".into(),
            }),
        };
    }
    Ok((path.to_path_buf(), ModuleFileState::Unchecked))
}

fn describe_size_time(size: u64, mtime_ns: u64) -> String {
    format!(
        "{size} bytes, modified {}.{:09} s after the epoch",
        mtime_ns / 1_000_000_000,
        mtime_ns % 1_000_000_000
    )
}
