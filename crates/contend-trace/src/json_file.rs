//! The small versioned JSON files of a recording (`modules.json`,
//! `threads.json`): read leniently with a version check, written
//! atomically (a temporary file renamed into place, so a reader never sees
//! half a file). One implementation for every such file.

use std::fs;
use std::io::Write;
use std::path::Path;

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::TraceError;

/// Reads the JSON file `path` as a `T`: `Ok(None)` when it does not exist.
/// `what` names its content in errors ("a module list"); `version` gives
/// the file's format version, checked against `newest`.
///
/// Errors ([`TraceError`], naming the file): unreadable, not JSON or not a
/// `T` ("not {what}: …"), or a format version newer than `newest`.
pub(crate) fn read_versioned<T: DeserializeOwned>(
    path: &Path,
    what: &str,
    version: impl Fn(&T) -> u32,
    newest: u32,
) -> Result<Option<T>, TraceError> {
    let bytes = match fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(TraceError::Io {
                path: path.to_path_buf(),
                source,
            })
        }
    };
    let file: T = serde_json::from_slice(&bytes)
        .map_err(|e| TraceError::format(path, format!("not {what}: {e}")))?;
    let v = version(&file);
    if v > newest {
        return Err(TraceError::format(
            path,
            format!(
                "format version {v} is not supported (this contend reads version {newest} and older); use a newer contend"
            ),
        ));
    }
    Ok(Some(file))
}

/// Writes `value` as pretty JSON to `dir/name` through a temporary file
/// renamed into place. Errors name the file.
pub(crate) fn write_atomically<T: Serialize>(
    dir: &Path,
    name: &str,
    value: &T,
) -> Result<(), TraceError> {
    let path = dir.join(name);
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let io = |p: &Path| {
        let p = p.to_path_buf();
        move |source| TraceError::Io { path: p, source }
    };
    let mut json =
        serde_json::to_vec_pretty(value).map_err(|e| TraceError::format(&path, e.to_string()))?;
    json.push(b'\n');
    let result = (|| {
        let mut f = fs::File::create(&tmp).map_err(io(&tmp))?;
        f.write_all(&json).map_err(io(&tmp))?;
        fs::rename(&tmp, &path).map_err(io(&path))
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}
