//! Build IDs of a recording's mapped objects, and their copies in the
//! build-id cache.
//!
//! [`record_modules`] runs once the program has ended (the last step of
//! [`crate::launch::record`]): it reads every maps snapshot the collector
//! wrote (`maps/*.maps`), takes each distinct path of an executable file
//! mapping, reads that ELF file's GNU build ID (the `NT_GNU_BUILD_ID`
//! note, with the `object` crate), its size and modification time, and
//! writes them into `modules.json` ([`contend_trace::modules`]). Unless
//! told not to (`contend record --no-buildid-cache`), it then copies each
//! file with a build ID into the build-id cache
//! ([`contend_trace::buildid_cache`]; a file already there is only marked
//! as used) and prunes the cache to its size cap, never removing what
//! this recording uses.
//!
//! A file whose inode is not the one in the maps snapshot was replaced
//! while the program ran: its identity is unknown, and it is listed with
//! that problem and not copied. Nothing here fails a recording: every
//! problem becomes a warning (one per kind of problem, not one per file).

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use contend_trace::buildid_cache::{format_size, max_bytes_from_env, BuildIdCache, Inserted};
use contend_trace::modules::{ModuleRecord, ModulesFile};
use object::Object;

/// What [`record_modules`] is to do with the files it identifies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModuleOptions {
    /// Copy every identified file into the build-id cache (the default);
    /// `false` with `contend record --no-buildid-cache`.
    pub copy: bool,
    /// The cache; `None` uses [`BuildIdCache::open_default`].
    pub cache: Option<BuildIdCache>,
    /// The cache's size cap, bytes; `None` reads
    /// [`contend_trace::buildid_cache::SIZE_ENV`] or takes the default.
    pub max_bytes: Option<u64>,
    /// Files not to list (contend's own collector libraries, preloaded
    /// into the target but never a call site of it).
    pub skip: Vec<PathBuf>,
}

impl Default for ModuleOptions {
    fn default() -> ModuleOptions {
        ModuleOptions {
            copy: true,
            cache: None,
            max_bytes: None,
            skip: Vec::new(),
        }
    }
}

/// What [`record_modules`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ModulesOutcome {
    /// Modules listed in `modules.json`.
    pub modules: usize,
    /// Of which with a build ID.
    pub with_build_id: usize,
    /// Files copied into the cache by this recording.
    pub copied: usize,
    /// Bytes copied.
    pub copied_bytes: u64,
    /// Problems, one sentence each (for the recording's warnings).
    pub warnings: Vec<String>,
}

/// Lists the executable file mappings of every `maps/*.maps` file of the
/// recording `dir` in `dir/modules.json`, with build ID, size and
/// modification time, and copies them into the build-id cache (see the
/// module documentation). Never fails: problems are in
/// [`ModulesOutcome::warnings`].
pub fn record_modules(dir: &Path, opts: &ModuleOptions) -> ModulesOutcome {
    let mut out = ModulesOutcome::default();
    let mapped = mapped_objects(&dir.join("maps"));
    let skip: Vec<PathBuf> = opts
        .skip
        .iter()
        .map(|p| fs::canonicalize(p).unwrap_or_else(|_| p.clone()))
        .collect();
    let cache = if opts.copy {
        let cache = match &opts.cache {
            Some(c) => Ok(c.clone()),
            None => BuildIdCache::open_default(),
        };
        let max = match opts.max_bytes {
            Some(m) => Ok(m),
            None => max_bytes_from_env(),
        };
        match (cache, max) {
            (Ok(c), Ok(m)) => Some((c, m)),
            (Err(e), _) | (_, Err(e)) => {
                out.warnings.push(format!(
                    "the executable and libraries were not copied into the build-id cache: {e}; \
                     reports of this recording after a rebuild will show their call sites as addresses"
                ));
                None
            }
        }
    } else {
        None
    };
    let mut file = ModulesFile {
        cache_dir: cache
            .as_ref()
            .map(|(c, _)| c.root().to_string_lossy().into_owned()),
        ..ModulesFile::default()
    };
    // Failures by kind: (first message, count).
    let mut copy_failures: Option<(String, usize)> = None;
    let mut too_large: Vec<String> = Vec::new();
    let mut replaced: Vec<String> = Vec::new();
    let mut used: Vec<String> = Vec::new();
    for (path, inodes) in mapped {
        let p = Path::new(&path);
        if skip
            .iter()
            .any(|s| s == p || fs::canonicalize(p).is_ok_and(|c| &c == s))
        {
            continue;
        }
        let mut rec = ModuleRecord {
            path: path.clone(),
            inode: inodes.iter().copied().find(|&i| i != 0).unwrap_or(0),
            ..ModuleRecord::default()
        };
        let md = match fs::metadata(p) {
            Ok(md) if md.is_file() => md,
            Ok(_) => continue, // a device or directory: not a module
            Err(e) => {
                rec.problem = Some(format!("cannot be read after the run: {e}"));
                file.modules.push(rec);
                continue;
            }
        };
        if !inodes.is_empty() && !inodes.contains(&0) && !inodes.contains(&md.ino()) {
            rec.problem = Some(
                "the file was replaced while the program ran (its inode changed); \
                 the one that ran is not known"
                    .into(),
            );
            replaced.push(path.clone());
            file.modules.push(rec);
            continue;
        }
        let Some(id) = read_elf_build_id(p) else {
            // Not ELF (a JIT's or a data file mapped executable): not a
            // module the symbolizer would open.
            continue;
        };
        rec.size = Some(md.len());
        rec.mtime_ns = md
            .modified()
            .ok()
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .map(|d| d.as_nanos() as u64);
        rec.build_id = id.map(|id| hex(&id));
        if let (Some((cache, max)), Some(id)) = (&cache, &rec.build_id) {
            if md.len() > *max {
                rec.problem = Some(format!(
                    "not copied into the build-id cache: {} is larger than its cap of {}",
                    format_size(md.len()),
                    format_size(*max)
                ));
                too_large.push(path.clone());
            } else {
                let want = id.clone();
                let verify = move |copy: &Path| {
                    read_elf_build_id(copy).flatten().map(|b| hex(&b)) == Some(want.clone())
                };
                match cache.insert(p, id, &path, &verify) {
                    Ok(Inserted::Added(bytes)) => {
                        rec.cached = true;
                        out.copied += 1;
                        out.copied_bytes += bytes;
                        used.push(id.clone());
                    }
                    Ok(Inserted::AlreadyCached) => {
                        rec.cached = true;
                        used.push(id.clone());
                    }
                    Err(e) => {
                        rec.problem = Some(format!("not copied into the build-id cache: {e}"));
                        match &mut copy_failures {
                            Some((_, n)) => *n += 1,
                            None => copy_failures = Some((e.to_string(), 1)),
                        }
                    }
                }
            }
        }
        out.with_build_id += usize::from(rec.build_id.is_some());
        file.modules.push(rec);
    }
    out.modules = file.modules.len();
    if let Some((first, n)) = copy_failures {
        out.warnings.push(if n == 1 {
            format!("build-id cache: {first}")
        } else {
            format!("build-id cache: {n} files were not copied; the first: {first}")
        });
    }
    if !too_large.is_empty() {
        out.warnings.push(format!(
            "build-id cache: not copied because larger than the cap ({} or {}=SIZE): {}",
            "contend cache prune --max-size SIZE",
            contend_trace::buildid_cache::SIZE_ENV,
            too_large.join(", ")
        ));
    }
    if !replaced.is_empty() {
        out.warnings.push(format!(
            "replaced while the program ran (rebuilt or upgraded): {}; their call sites cannot be checked and may be wrong",
            replaced.join(", ")
        ));
    }
    if let Some((cache, max)) = &cache {
        if out.copied > 0 {
            if let Err(e) = cache.prune(*max, &used) {
                out.warnings
                    .push(format!("build-id cache: pruning to its cap failed: {e}"));
            }
        }
    }
    if let Err(e) = file.write(dir) {
        out.warnings.push(format!(
            "the build IDs of the program's files were not recorded: {e}"
        ));
    }
    out
}

/// Distinct paths of executable file mappings in the maps files of
/// `maps_dir`, each with the inodes recorded for it. Mappings marked
/// ` (deleted)` and pseudo mappings (`[vdso]`) are left out.
fn mapped_objects(maps_dir: &Path) -> BTreeMap<String, BTreeSet<u64>> {
    let mut out: BTreeMap<String, BTreeSet<u64>> = BTreeMap::new();
    let Ok(rd) = fs::read_dir(maps_dir) else {
        return out;
    };
    for e in rd.flatten() {
        let path = e.path();
        if path.extension().is_none_or(|x| x != "maps") {
            continue;
        }
        let Ok(bytes) = fs::read(&path) else { continue };
        for line in String::from_utf8_lossy(&bytes).lines() {
            if let Some((file, inode)) = exec_mapping(line) {
                out.entry(file.to_string()).or_default().insert(inode);
            }
        }
    }
    out
}

/// The path and inode of an executable file mapping in one line of a
/// `/proc/<pid>/maps` snapshot (`start-end perms offset dev inode path`).
fn exec_mapping(line: &str) -> Option<(&str, u64)> {
    if line.starts_with('#') {
        return None;
    }
    let mut rest = line.trim_start();
    let mut fields = [""; 5];
    for f in &mut fields {
        let end = rest.find(char::is_whitespace)?;
        *f = &rest[..end];
        rest = rest[end..].trim_start();
    }
    if fields[1].as_bytes().get(2) != Some(&b'x') {
        return None;
    }
    let inode = fields[4].parse().ok()?;
    let path = rest.trim_end();
    (path.starts_with('/') && !path.ends_with(" (deleted)")).then_some((path, inode))
}

/// `Some(build ID or None)` for an ELF file, `None` when `path` cannot be
/// read or is not ELF.
fn read_elf_build_id(path: &Path) -> Option<Option<Vec<u8>>> {
    let f = fs::File::open(path).ok()?;
    // SAFETY: read-only map of a regular file; only the ELF headers and
    // notes are read. A file truncated meanwhile could fault, as for any
    // tool reading ELF files by mapping them.
    let map = unsafe { memmap2::Mmap::map(&f) }.ok()?;
    let obj = object::File::parse(&*map).ok()?;
    if obj.format() != object::BinaryFormat::Elf {
        return None;
    }
    Some(obj.build_id().ok().flatten().map(<[u8]>::to_vec))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exec_mappings_are_parsed() {
        let l =
            "5581b000-5581d000 r-xp 00001000 08:01 1234                       /opt/app/bin/server";
        assert_eq!(exec_mapping(l), Some(("/opt/app/bin/server", 1234)));
        let sp = "7f00-7f01 r-xp 00000000 08:01 77   /usr/lib/lib with space.so";
        assert_eq!(exec_mapping(sp), Some(("/usr/lib/lib with space.so", 77)));
        assert_eq!(
            exec_mapping("5581a000-5581b000 r--p 00000000 08:01 1234 /opt/app"),
            None
        );
        assert_eq!(
            exec_mapping("7f00-7f01 r-xp 00000000 08:01 99 /usr/lib/libold.so (deleted)"),
            None
        );
        assert_eq!(exec_mapping("7ffd-7ffe r-xp 00000000 00:00 0 [vdso]"), None);
        assert_eq!(exec_mapping("# snapshot 0 1000"), None);
        assert_eq!(exec_mapping("garbage"), None);
    }

    /// The test binary itself as a mapped module: listed with its build
    /// ID, copied once, and found again by build ID; a replaced file is
    /// listed with its problem and not copied.
    #[test]
    fn modules_are_listed_and_cached() {
        let tmp = tempfile::tempdir().unwrap();
        let rec = tmp.path().join("rec");
        fs::create_dir_all(rec.join("maps")).unwrap();
        let exe = std::env::current_exe().unwrap();
        let ino = fs::metadata(&exe).unwrap().ino();
        let other = tmp.path().join("other.so");
        fs::write(&other, b"not elf").unwrap();
        let moved = tmp.path().join("moved");
        fs::copy(&exe, &moved).unwrap();
        fs::write(
            rec.join("maps/1.maps"),
            format!(
                "# snapshot 0 1\n1000-2000 r-xp 00000000 08:01 {ino} {}\n\
                 3000-4000 r-xp 00000000 08:01 {} {}\n\
                 5000-6000 r-xp 00000000 08:01 1 {}\n",
                exe.display(),
                fs::metadata(&other).unwrap().ino(),
                other.display(),
                moved.display()
            ),
        )
        .unwrap();
        let cache = BuildIdCache::at(tmp.path().join("cache"));
        let opts = ModuleOptions {
            cache: Some(cache.clone()),
            max_bytes: Some(1 << 40),
            ..ModuleOptions::default()
        };
        let out = record_modules(&rec, &opts);
        let file = ModulesFile::read(&rec).unwrap().unwrap();
        let me = file.get(&exe.to_string_lossy()).unwrap();
        let id = me
            .build_id
            .clone()
            .expect("rustc gives test binaries a build ID");
        assert!(me.cached && me.problem.is_none(), "{me:?}");
        assert_eq!(me.size, Some(fs::metadata(&exe).unwrap().len()));
        assert!(cache.lookup(&id).is_some());
        assert!(file.get(&other.to_string_lossy()).is_none(), "not ELF");
        let m = file.get(&moved.to_string_lossy()).unwrap();
        assert!(
            m.build_id.is_none() && !m.cached && m.problem.is_some(),
            "{m:?}"
        );
        assert_eq!(out.copied, 1, "{out:?}");
        assert_eq!(out.warnings.len(), 1, "{:?}", out.warnings);
        assert!(out.warnings[0].contains("replaced while the program ran"));
        // Again: nothing copied, already there.
        let out = record_modules(&rec, &opts);
        assert_eq!(out.copied, 0);
        // Without the copy, the identities are still listed.
        fs::remove_dir_all(tmp.path().join("cache")).unwrap();
        let out = record_modules(
            &rec,
            &ModuleOptions {
                copy: false,
                ..opts.clone()
            },
        );
        assert_eq!(out.copied, 0);
        let file = ModulesFile::read(&rec).unwrap().unwrap();
        assert_eq!(file.cache_dir, None);
        assert!(!file.get(&exe.to_string_lossy()).unwrap().cached);
        assert!(!tmp.path().join("cache").exists());
        // A cache that cannot be created is a warning, not an error.
        fs::write(tmp.path().join("file"), b"").unwrap();
        let out = record_modules(
            &rec,
            &ModuleOptions {
                cache: Some(BuildIdCache::at(tmp.path().join("file/cache"))),
                ..opts
            },
        );
        assert!(
            out.warnings
                .iter()
                .any(|w| w.starts_with("build-id cache:")),
            "{:?}",
            out.warnings
        );
        assert!(ModulesFile::read(&rec).unwrap().is_some());
    }
}
