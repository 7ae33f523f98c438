//! The build-id cache: copies of the executables and libraries that
//! recordings mapped, keyed by their GNU build ID, so a recording can be
//! symbolized after its program was rebuilt or a library upgraded (like
//! `perf`'s `~/.debug`).
//!
//! Layout, under the root (`$XDG_CACHE_HOME/contend/buildid`, or
//! `~/.cache/contend/buildid` when `XDG_CACHE_HOME` is unset or not
//! absolute):
//!
//! ```text
//! <root>/<xx>/<rest of the build ID>/elf        the file, copied whole
//! <root>/<xx>/<rest of the build ID>/info.json  {"build_id", "path", "bytes", "added_utc"}
//! ```
//!
//! `xx` is the first two hexadecimal digits of the build ID, as in
//! `/usr/lib/debug/.build-id/`. The modification time of `info.json` is
//! the entry's last use: `contend record` sets it when a recording
//! references the entry, and pruning removes the least recently used
//! entries first. The cache is size-capped ([`DEFAULT_MAX_BYTES`], or
//! `CONTEND_BUILDID_CACHE_SIZE`, e.g. `4G`): after adding files, `contend
//! record` prunes down to the cap, never removing what the recording just
//! used. Entries appear atomically (copied into a temporary directory
//! beside them and renamed into place), so concurrent recordings and
//! reports never see half a file.
//!
//! Everything here is used by the launcher (adding), the analyses (looking
//! up) and `contend cache` (listing, pruning); none of it may fail a
//! recording, which is the caller's concern: every problem is returned as
//! a [`CacheError`] naming the path.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

/// Default size cap of the cache: 1 GiB.
pub const DEFAULT_MAX_BYTES: u64 = 1 << 30;

/// Environment variable overriding the size cap (a size as
/// [`parse_size`] reads it, e.g. `500M`, `4G`).
pub const SIZE_ENV: &str = "CONTEND_BUILDID_CACHE_SIZE";

/// Name of the copied file inside an entry.
const ELF_NAME: &str = "elf";
/// Name of the entry's description.
const INFO_NAME: &str = "info.json";

/// Errors of the cache. Every message names the path or value concerned.
#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    /// Neither `XDG_CACHE_HOME` (absolute) nor `HOME` is set.
    #[error("no cache directory: neither XDG_CACHE_HOME nor HOME is set")]
    NoHome,
    /// A file or directory of the cache could not be created, read,
    /// copied or removed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The path concerned.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A size (the cap) could not be read.
    #[error("size {value:?}: {problem}")]
    BadSize {
        /// The text given.
        value: String,
        /// What is wrong with it.
        problem: String,
    },
    /// A build ID that is not at least two bytes of hexadecimal.
    #[error("build ID {0:?} is not hexadecimal (at least 4 digits)")]
    BadBuildId(String),
    /// The file changed while it was copied: the copy's build ID is not
    /// the one read before. Nothing was added.
    #[error("{}: changed while it was copied into the build-id cache; not cached", path.display())]
    Changed {
        /// The file.
        path: PathBuf,
    },
}

/// What [`BuildIdCache::insert`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Inserted {
    /// The file was copied in (its size in bytes).
    Added(u64),
    /// An entry with this build ID was already there (its last use is
    /// now).
    AlreadyCached,
}

/// The description of an entry (`info.json`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
struct Info {
    build_id: String,
    path: String,
    bytes: u64,
    added_utc: String,
}

/// One entry of the cache, as [`BuildIdCache::list`] finds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheEntry {
    /// Build ID, lowercase hexadecimal.
    pub build_id: String,
    /// Path the file had when it was copied (first recording that used it).
    pub original_path: String,
    /// Bytes on disk (the copy and its description).
    pub bytes: u64,
    /// Last time a recording referenced it (or when it was added).
    pub last_used: SystemTime,
    /// When it was added, UTC, RFC 3339 (empty if unknown).
    pub added_utc: String,
    /// The entry's directory.
    pub dir: PathBuf,
}

/// What [`BuildIdCache::prune`] removed and kept.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Pruned {
    /// Entries removed, least recently used first.
    pub removed: Vec<CacheEntry>,
    /// Bytes freed.
    pub freed_bytes: u64,
    /// Bytes the cache holds afterwards.
    pub kept_bytes: u64,
    /// Entries left.
    pub kept_entries: usize,
}

/// A build-id cache rooted at one directory (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildIdCache {
    root: PathBuf,
}

impl BuildIdCache {
    /// The default root: `$XDG_CACHE_HOME/contend/buildid` when
    /// `XDG_CACHE_HOME` is an absolute path, else
    /// `$HOME/.cache/contend/buildid`. Errors: [`CacheError::NoHome`].
    pub fn default_root() -> Result<PathBuf, CacheError> {
        let xdg = std::env::var_os("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .filter(|p| p.is_absolute());
        let base = match xdg {
            Some(p) => p,
            None => std::env::var_os("HOME")
                .filter(|h| !h.is_empty())
                .map(|h| PathBuf::from(h).join(".cache"))
                .ok_or(CacheError::NoHome)?,
        };
        Ok(base.join("contend").join("buildid"))
    }

    /// The cache at [`BuildIdCache::default_root`] (not created until
    /// something is added).
    pub fn open_default() -> Result<BuildIdCache, CacheError> {
        Ok(BuildIdCache::at(BuildIdCache::default_root()?))
    }

    /// The cache rooted at `root`.
    pub fn at(root: impl Into<PathBuf>) -> BuildIdCache {
        BuildIdCache { root: root.into() }
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The directory of the entry for `build_id` (lowercase hexadecimal,
    /// at least 4 digits), whether or not it exists.
    pub fn entry_dir(&self, build_id: &str) -> Result<PathBuf, CacheError> {
        let id = build_id.to_ascii_lowercase();
        if id.len() < 4 || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(CacheError::BadBuildId(build_id.to_string()));
        }
        Ok(self.root.join(&id[..2]).join(&id[2..]))
    }

    /// The cached copy of the file with `build_id`, if the cache has one.
    pub fn lookup(&self, build_id: &str) -> Option<PathBuf> {
        let elf = self.entry_dir(build_id).ok()?.join(ELF_NAME);
        elf.is_file().then_some(elf)
    }

    /// Marks the entry of `build_id` as used now (best effort).
    pub fn touch(&self, build_id: &str) {
        if let Ok(dir) = self.entry_dir(build_id) {
            if let Ok(f) = fs::File::options().write(true).open(dir.join(INFO_NAME)) {
                let _ = f.set_modified(SystemTime::now());
            }
        }
    }

    /// Copies `source` (whose build ID is `build_id`, recorded under
    /// `original_path`) into the cache, unless an entry is there already
    /// (then only its last use is updated). `verify` is called on the
    /// copy before it is put in place and must confirm it still has
    /// `build_id` (the file may be rebuilt while it is copied); if not,
    /// nothing is added ([`CacheError::Changed`]).
    pub fn insert(
        &self,
        source: &Path,
        build_id: &str,
        original_path: &str,
        verify: &dyn Fn(&Path) -> bool,
    ) -> Result<Inserted, CacheError> {
        let entry = self.entry_dir(build_id)?;
        if entry.join(ELF_NAME).is_file() {
            self.touch(build_id);
            return Ok(Inserted::AlreadyCached);
        }
        let parent = entry.parent().unwrap_or(&self.root);
        fs::create_dir_all(parent).map_err(io(parent))?;
        static N: AtomicU64 = AtomicU64::new(0);
        let tmp = self.root.join(format!(
            ".tmp-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let result = (|| {
            fs::create_dir(&tmp).map_err(io(&tmp))?;
            let elf = tmp.join(ELF_NAME);
            let bytes = fs::copy(source, &elf).map_err(io(source))?;
            if !verify(&elf) {
                return Err(CacheError::Changed {
                    path: source.to_path_buf(),
                });
            }
            let info = Info {
                build_id: build_id.to_ascii_lowercase(),
                path: original_path.to_string(),
                bytes,
                added_utc: crate::meta::format_utc(SystemTime::now()),
            };
            let json = serde_json::to_vec_pretty(&info).unwrap_or_default();
            let info_path = tmp.join(INFO_NAME);
            fs::File::create(&info_path)
                .and_then(|mut f| f.write_all(&json))
                .map_err(io(&info_path))?;
            match fs::rename(&tmp, &entry) {
                Ok(()) => Ok(Inserted::Added(bytes)),
                // Another recording put the same build ID in place first.
                Err(_) if entry.join(ELF_NAME).is_file() => Ok(Inserted::AlreadyCached),
                Err(e) => Err(CacheError::Io {
                    path: entry.clone(),
                    source: e,
                }),
            }
        })();
        if tmp.exists() {
            let _ = fs::remove_dir_all(&tmp);
        }
        result
    }

    /// Every entry of the cache, most recently used first. A missing cache
    /// is an empty list; unreadable entries are listed with what could be
    /// read.
    pub fn list(&self) -> Result<Vec<CacheEntry>, CacheError> {
        let mut out = Vec::new();
        let top = match fs::read_dir(&self.root) {
            Ok(rd) => rd,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
            Err(source) => {
                return Err(CacheError::Io {
                    path: self.root.clone(),
                    source,
                })
            }
        };
        for prefix in top.flatten() {
            let name = prefix.file_name().to_string_lossy().into_owned();
            if name.len() != 2 || !prefix.path().is_dir() {
                continue;
            }
            let Ok(rd) = fs::read_dir(prefix.path()) else {
                continue;
            };
            for e in rd.flatten() {
                let dir = e.path();
                if !dir.join(ELF_NAME).is_file() {
                    continue;
                }
                let rest = e.file_name().to_string_lossy().into_owned();
                let info: Info = fs::read(dir.join(INFO_NAME))
                    .ok()
                    .and_then(|b| serde_json::from_slice(&b).ok())
                    .unwrap_or_default();
                let size = |p: &Path| fs::metadata(p).map(|m| m.len()).unwrap_or(0);
                let last_used = fs::metadata(dir.join(INFO_NAME))
                    .or_else(|_| fs::metadata(dir.join(ELF_NAME)))
                    .and_then(|m| m.modified())
                    .unwrap_or(UNIX_EPOCH);
                out.push(CacheEntry {
                    build_id: format!("{name}{rest}"),
                    original_path: info.path,
                    bytes: size(&dir.join(ELF_NAME)) + size(&dir.join(INFO_NAME)),
                    last_used,
                    added_utc: info.added_utc,
                    dir,
                });
            }
        }
        out.sort_by(|a, b| {
            b.last_used
                .cmp(&a.last_used)
                .then(a.build_id.cmp(&b.build_id))
        });
        Ok(out)
    }

    /// Removes the least recently used entries until the cache holds at
    /// most `max_bytes`, never one whose build ID is in `keep`; also
    /// removes temporary directories left by a copy that was killed (older
    /// than an hour).
    pub fn prune(&self, max_bytes: u64, keep: &[String]) -> Result<Pruned, CacheError> {
        self.remove_stale_temporaries();
        let mut entries = self.list()?;
        let mut total: u64 = entries.iter().map(|e| e.bytes).sum();
        let mut pruned = Pruned::default();
        // Least recently used last in `entries`.
        while total > max_bytes {
            let Some(i) = entries
                .iter()
                .rposition(|e| !keep.iter().any(|k| k.eq_ignore_ascii_case(&e.build_id)))
            else {
                break;
            };
            let e = entries.remove(i);
            fs::remove_dir_all(&e.dir).map_err(io(&e.dir))?;
            if let Some(parent) = e.dir.parent() {
                let _ = fs::remove_dir(parent); // only if now empty
            }
            total -= e.bytes;
            pruned.freed_bytes += e.bytes;
            pruned.removed.push(e);
        }
        pruned.kept_bytes = total;
        pruned.kept_entries = entries.len();
        Ok(pruned)
    }

    fn remove_stale_temporaries(&self) {
        let Ok(rd) = fs::read_dir(&self.root) else {
            return;
        };
        for e in rd.flatten() {
            let stale = e
                .metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| t.elapsed().ok())
                .is_some_and(|age| age > Duration::from_secs(3600));
            if e.file_name().to_string_lossy().starts_with(".tmp-") && stale {
                let _ = fs::remove_dir_all(e.path());
            }
        }
    }
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> CacheError {
    let path = path.to_path_buf();
    move |source| CacheError::Io { path, source }
}

/// The size cap: [`SIZE_ENV`] if set, else [`DEFAULT_MAX_BYTES`].
/// Errors: the variable holds no size ([`CacheError::BadSize`]).
pub fn max_bytes_from_env() -> Result<u64, CacheError> {
    match std::env::var(SIZE_ENV) {
        Ok(v) if !v.trim().is_empty() => parse_size(&v).map_err(|e| match e {
            CacheError::BadSize { value, problem } => CacheError::BadSize {
                value,
                problem: format!("{problem} (in {SIZE_ENV})"),
            },
            other => other,
        }),
        _ => Ok(DEFAULT_MAX_BYTES),
    }
}

/// Reads a size in bytes: a number with an optional unit `K`, `M`, `G`,
/// `T` (powers of 1024; `KiB`, `MB`, … and lower case are read the same),
/// e.g. `500M`, `1.5G`, `4096`.
pub fn parse_size(s: &str) -> Result<u64, CacheError> {
    let bad = |problem: &str| CacheError::BadSize {
        value: s.to_string(),
        problem: problem.to_string(),
    };
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: f64 = num
        .parse()
        .map_err(|_| bad("expected a number with an optional unit K, M, G or T, e.g. 500M"))?;
    let unit = unit.trim().to_ascii_lowercase();
    let unit = unit
        .strip_suffix("ib")
        .or_else(|| unit.strip_suffix('b'))
        .unwrap_or(&unit);
    let mult: u64 = match unit {
        "" => 1,
        "k" => 1 << 10,
        "m" => 1 << 20,
        "g" => 1 << 30,
        "t" => 1 << 40,
        _ => return Err(bad("unknown unit; use K, M, G or T")),
    };
    let bytes = n * mult as f64;
    if !bytes.is_finite() || bytes < 0.0 || bytes > u64::MAX as f64 {
        return Err(bad("out of range"));
    }
    Ok(bytes as u64)
}

/// A size for people: `512 B`, `3.4 MiB`, `1.2 GiB`.
pub fn format_size(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut v = bytes as f64 / 1024.0;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    format!("{v:.1} {}", UNITS[u])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cache() -> (tempfile::TempDir, BuildIdCache) {
        let d = tempfile::tempdir().unwrap();
        let c = BuildIdCache::at(d.path().join("buildid"));
        (d, c)
    }

    #[test]
    fn sizes_parse_and_print() {
        assert_eq!(parse_size("4096").unwrap(), 4096);
        assert_eq!(parse_size("500M").unwrap(), 500 << 20);
        assert_eq!(parse_size("1.5G").unwrap(), 3 << 29);
        assert_eq!(parse_size("2 GiB").unwrap(), 2 << 30);
        assert_eq!(parse_size("10kb").unwrap(), 10 << 10);
        assert!(parse_size("lots").is_err());
        assert!(parse_size("5X")
            .unwrap_err()
            .to_string()
            .contains("unknown unit"));
        assert_eq!(format_size(512), "512 B");
        assert_eq!(format_size(3 << 20), "3.0 MiB");
    }

    #[test]
    fn insert_lookup_list_and_prune() {
        let (d, c) = cache();
        let src = d.path().join("lib.so");
        fs::write(&src, vec![7u8; 1000]).unwrap();
        assert!(c.lookup("abcdef").is_none());
        assert!(matches!(
            c.entry_dir("xyz1"),
            Err(CacheError::BadBuildId(_))
        ));
        let ok = |_: &Path| true;
        assert_eq!(
            c.insert(&src, "ABCDEF01", "/usr/lib/lib.so", &ok).unwrap(),
            Inserted::Added(1000)
        );
        let copy = c.lookup("abcdef01").unwrap();
        assert_eq!(copy, d.path().join("buildid/ab/cdef01/elf"));
        assert_eq!(fs::read(&copy).unwrap().len(), 1000);
        assert_eq!(
            c.insert(&src, "abcdef01", "/x", &ok).unwrap(),
            Inserted::AlreadyCached
        );
        // A copy whose build ID changed is refused and leaves nothing.
        let no = |_: &Path| false;
        assert!(matches!(
            c.insert(&src, "1234", "/y", &no),
            Err(CacheError::Changed { .. })
        ));
        assert!(c.lookup("1234").is_none());
        let src2 = d.path().join("app");
        fs::write(&src2, vec![1u8; 3000]).unwrap();
        c.insert(&src2, "9999aa", "/bin/app", &ok).unwrap();
        // Make the first entry the least recently used.
        let old = SystemTime::now() - Duration::from_secs(100);
        fs::File::options()
            .write(true)
            .open(d.path().join("buildid/ab/cdef01/info.json"))
            .unwrap()
            .set_modified(old)
            .unwrap();
        let list = c.list().unwrap();
        assert_eq!(list.len(), 2);
        assert_eq!(list[0].build_id, "9999aa");
        assert_eq!(list[0].original_path, "/bin/app");
        assert_eq!(list[1].build_id, "abcdef01");
        assert!(list[1].bytes > 1000);
        // Pruning to 3500 bytes removes the older one only...
        let p = c.prune(3500, &[]).unwrap();
        assert_eq!(p.removed.len(), 1);
        assert_eq!(p.removed[0].build_id, "abcdef01");
        assert_eq!(p.kept_entries, 1);
        assert!(
            !d.path().join("buildid/ab").exists(),
            "empty prefix removed"
        );
        // ...and never what must be kept.
        let p = c.prune(0, &["9999AA".into()]).unwrap();
        assert!(p.removed.is_empty());
        let p = c.prune(0, &[]).unwrap();
        assert_eq!(p.removed.len(), 1);
        assert_eq!(p.kept_bytes, 0);
        assert!(c.list().unwrap().is_empty());
    }

    #[test]
    fn missing_cache_lists_empty() {
        let (_d, c) = cache();
        assert!(c.list().unwrap().is_empty());
        assert_eq!(c.prune(0, &[]).unwrap(), Pruned::default());
    }
}
