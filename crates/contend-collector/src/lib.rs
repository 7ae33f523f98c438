//! # contend-collector
//!
//! The in-process half of `contend`: `libcontend_lock.so`, an `LD_PRELOAD`
//! library written in C (`collector/src`) that interposes the pthread mutex,
//! rwlock, spinlock, condition-variable, barrier and semaphore functions of an
//! unmodified, dynamically linked program and records every operation into
//! `$CONTEND_DIR/locks/<pid>.ctrace` (format: `docs/trace-format.md`, one
//! definition in `collector/include/contend/trace_format.h`).
//!
//! This crate's build script compiles the library with the C compiler that
//! the `cc` crate finds; the bytes are embedded in [`LOCK_COLLECTOR_SO`], so
//! the `contend` binary is self-contained. [`install_lock_collector`] writes
//! them once to a content-addressed cache file whose path the launcher puts
//! into `LD_PRELOAD`.
//!
//! The same crate builds the MPI recorder (`collector/mpi`): PMPI wrappers
//! preloaded by `contend record --mpi` that write
//! `$CONTEND_DIR/mpi/rank-<r>.cmpi` (format: `docs/trace-format.md`, "MPI
//! traces"), one library per MPI implementation whose headers were found at
//! build time ([`MpiImplementation`], [`install_mpi_recorder`]).
//!
//! Design constraints of the library itself (see the comments in the C
//! sources): the target's behaviour never changes (same return values and
//! `errno`, no deadlock, no crash); the fast path takes no lock, makes no
//! system call and allocates nothing; memory per thread is one mapped chunk
//! of the trace file; everything stored survives `SIGKILL`.
#![deny(missing_docs)]

use std::fs;
use std::io::{self, Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// The lock collector shared library (`libcontend_lock.so`) as built for
/// this target by the build script.
pub const LOCK_COLLECTOR_SO: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/libcontend_lock.so"));

/// Writes [`LOCK_COLLECTOR_SO`] to a cache file, once, and returns its path.
///
/// The file name contains a hash of the bytes (`libcontend_lock-<fnv1a64>.so`),
/// so different builds of `contend` never share a file, and a file that is
/// already there with the same contents is reused. The directory is the
/// first of these that works:
///
/// 1. `$XDG_CACHE_HOME/contend/` (if set to an absolute path),
/// 2. `$HOME/.cache/contend/`,
/// 3. `/tmp/contend-<uid>/`, created with mode 0700 and used only if it is a
///    real directory owned by the caller and closed to others (anybody could
///    have created it first, and a library placed there is loaded into the
///    profiled program).
///
/// The file is written under a temporary name and renamed into place, so
/// concurrent `contend` runs never see a partly written library.
///
/// # Errors
///
/// The error of the last directory tried, when none of them works.
pub fn install_lock_collector() -> io::Result<PathBuf> {
    let name = library_file_name(LOCK_COLLECTOR_SO);
    let mut last_error = None;
    for (dir, private) in cache_dirs() {
        match install_in(&dir, &name, LOCK_COLLECTOR_SO, private) {
            Ok(path) => return Ok(path),
            Err(e) => {
                last_error = Some(io::Error::new(e.kind(), format!("{}: {e}", dir.display())))
            }
        }
    }
    Err(last_error.unwrap_or_else(|| io::Error::other("no cache directory for the lock collector")))
}

/// The public header `contend/region.h` (manual regions for the
/// interference analysis), as in `collector/include/contend/region.h`.
pub const REGION_HEADER: &[u8] = include_bytes!("../../../collector/include/contend/region.h");

/// Writes [`REGION_HEADER`] to `<cache>/include-<fnv1a64>/contend/region.h`
/// (the cache directories of [`install_lock_collector`], the same
/// write-then-rename) and returns the `include-<fnv1a64>` directory, the
/// one to pass to the compiler with `-I`.
///
/// # Errors
///
/// The error of the last cache directory tried, when none works.
pub fn install_region_header() -> io::Result<PathBuf> {
    let name = format!("include-{:016x}", fnv1a64(REGION_HEADER));
    let mut last_error = None;
    for (dir, private) in cache_dirs() {
        let include = dir.join(&name);
        let result = (|| {
            if private {
                // the shared /tmp directory must be ours and closed to others
                install_in(&dir, ".probe", b"", true)?;
                let _ = fs::remove_file(dir.join(".probe"));
            }
            let sub = include.join("contend");
            fs::create_dir_all(&sub)?;
            install_in(&sub, "region.h", REGION_HEADER, false)?;
            fs::set_permissions(sub.join("region.h"), fs::Permissions::from_mode(0o644))?;
            Ok::<_, io::Error>(include.clone())
        })();
        match result {
            Ok(p) => return Ok(p),
            Err(e) => {
                last_error = Some(io::Error::new(e.kind(), format!("{}: {e}", dir.display())))
            }
        }
    }
    Err(last_error.unwrap_or_else(|| io::Error::other("no cache directory for the region header")))
}

/// An MPI implementation the MPI recorder (`collector/mpi`) can be built
/// for. Their ABIs differ (`MPI_Comm` is a pointer in Open MPI and an int
/// in MPICH), so there is one library per implementation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MpiImplementation {
    /// Open MPI (`libmpi.so.40`).
    OpenMpi,
    /// MPICH (`libmpich.so.12`) and its ABI-compatible derivatives.
    Mpich,
}

impl MpiImplementation {
    /// Both, in the order the launcher tries them.
    pub const ALL: [MpiImplementation; 2] = [MpiImplementation::OpenMpi, MpiImplementation::Mpich];

    /// `"Open MPI"` or `"MPICH"`.
    pub fn name(self) -> &'static str {
        match self {
            MpiImplementation::OpenMpi => "Open MPI",
            MpiImplementation::Mpich => "MPICH",
        }
    }

    /// The recorder library built for this implementation, `None` when the
    /// machine that built `contend` had no headers of it.
    pub fn recorder(self) -> Option<&'static [u8]> {
        let bytes = match self {
            MpiImplementation::OpenMpi => MPI_OPENMPI_SO,
            MpiImplementation::Mpich => MPI_MPICH_SO,
        };
        (!bytes.is_empty()).then_some(bytes)
    }

    fn file_stem(self) -> &'static str {
        match self {
            MpiImplementation::OpenMpi => "libcontend_mpi_openmpi",
            MpiImplementation::Mpich => "libcontend_mpi_mpich",
        }
    }
}

/// The MPI recorder built against Open MPI's `mpi.h` (empty when Open MPI
/// headers were not installed at build time).
pub const MPI_OPENMPI_SO: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/libcontend_mpi_openmpi.so"));
/// The MPI recorder built against MPICH's `mpi.h` (empty when MPICH headers
/// were not installed at build time).
pub const MPI_MPICH_SO: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/libcontend_mpi_mpich.so"));

// shared with build.rs, which uses the probes the library does not
#[allow(dead_code)]
mod mpi_headers;

/// The MPI recorder's sources (paths relative to `collector/`), embedded
/// so that a recorder can be built when it is first needed
/// ([`build_mpi_recorder`]).
pub const MPI_RECORDER_SOURCES: &[(&str, &str)] = &[
    (
        "mpi/mpi_trace.c",
        include_str!("../../../collector/mpi/mpi_trace.c"),
    ),
    (
        "mpi/mpi_wrap.c",
        include_str!("../../../collector/mpi/mpi_wrap.c"),
    ),
    (
        "mpi/mpi_fortran.c",
        include_str!("../../../collector/mpi/mpi_fortran.c"),
    ),
    (
        "mpi/mpi_f08_mpich.c",
        include_str!("../../../collector/mpi/mpi_f08_mpich.c"),
    ),
    (
        "mpi/mpi_rec.h",
        include_str!("../../../collector/mpi/mpi_rec.h"),
    ),
    (
        "mpi/mpi_core.h",
        include_str!("../../../collector/mpi/mpi_core.h"),
    ),
    (
        "mpi/mpi_funcs.h",
        include_str!("../../../collector/mpi/mpi_funcs.h"),
    ),
    (
        "include/contend/mpi_trace_format.h",
        include_str!("../../../collector/include/contend/mpi_trace_format.h"),
    ),
    (
        "include/contend/say.h",
        include_str!("../../../collector/include/contend/say.h"),
    ),
    (
        "include/contend/raw_mm.h",
        include_str!("../../../collector/include/contend/raw_mm.h"),
    ),
    (
        "include/contend/clock.h",
        include_str!("../../../collector/include/contend/clock.h"),
    ),
    (
        "include/contend/zero_fill.h",
        include_str!("../../../collector/include/contend/zero_fill.h"),
    ),
];

impl MpiImplementation {
    fn headers(self) -> &'static mpi_headers::MpiHeaders {
        let name = match self {
            MpiImplementation::OpenMpi => "openmpi",
            MpiImplementation::Mpich => "mpich",
        };
        mpi_headers::MPI_HEADERS
            .iter()
            .find(|h| h.name == name)
            .expect("both implementations are in MPI_HEADERS")
    }

    /// The Debian package of its headers (`libopenmpi-dev`, `libmpich-dev`).
    pub fn debian_package(self) -> &'static str {
        self.headers().debian_package
    }
}

/// Writes the MPI recorder for `imp` to the cache directory (as
/// [`install_lock_collector`] does: content-addressed name
/// `libcontend_mpi_<impl>-<fnv1a64>.so`, written under a temporary name and
/// renamed) and returns its path. When this build of `contend` has none
/// (no headers of `imp` when it was built), the recorder is built now
/// from the embedded sources against the headers installed since
/// ([`build_mpi_recorder`]); `Ok(None)` when there are still none.
///
/// # Errors
///
/// The error of the last cache directory tried, when none works; the C
/// compiler's failure when the recorder is built now.
pub fn install_mpi_recorder(imp: MpiImplementation) -> io::Result<Option<PathBuf>> {
    let Some(bytes) = imp.recorder() else {
        return build_mpi_recorder(imp, &cache_dirs());
    };
    let name = format!("{}-{:016x}.so", imp.file_stem(), fnv1a64(bytes));
    let mut last_error = None;
    for (dir, private) in cache_dirs() {
        match install_in(&dir, &name, bytes, private) {
            Ok(path) => return Ok(Some(path)),
            Err(e) => {
                last_error = Some(io::Error::new(e.kind(), format!("{}: {e}", dir.display())))
            }
        }
    }
    Err(last_error.unwrap_or_else(|| io::Error::other("no cache directory for the MPI recorder")))
}

/// Builds the MPI recorder for `imp` from [`MPI_RECORDER_SOURCES`] with
/// the C compiler (`$CC`, else `cc`) against the `imp` headers installed
/// now (found as the build script finds them: pkg-config, then the usual
/// directories), into the first usable directory of `dirs` (a
/// `(directory, must be private)` list like the cache directories of
/// [`install_lock_collector`]). The result is cached under a name that
/// hashes the sources and the header, so later runs reuse it and a new
/// MPI version gets a new build. `Ok(None)` when no `imp` headers are
/// installed.
///
/// # Errors
///
/// No usable directory, the compiler missing (named with what to
/// install), or the compilation failing (with the compiler's output).
pub fn build_mpi_recorder(
    imp: MpiImplementation,
    dirs: &[(PathBuf, bool)],
) -> io::Result<Option<PathBuf>> {
    let h = imp.headers();
    let include_dirs = mpi_headers::include_dirs(h);
    let Some(header) = mpi_headers::header_dir(h, &include_dirs) else {
        return Ok(None);
    };
    let mpi_h = fs::read(header.join("mpi.h"))?;
    let cc = std::env::var_os("CC").unwrap_or_else(|| "cc".into());
    let mut key: Vec<u8> = Vec::new();
    for (path, text) in MPI_RECORDER_SOURCES {
        key.extend_from_slice(path.as_bytes());
        key.extend_from_slice(text.as_bytes());
    }
    key.extend_from_slice(&mpi_h);
    key.extend_from_slice(cc.as_encoded_bytes());
    let name = format!("{}-built-{:016x}.so", imp.file_stem(), fnv1a64(&key));
    let mut last_error = None;
    for (dir, private) in dirs {
        // the directory's checks, with a probe file
        if let Err(e) = install_in(dir, ".contend-probe", b"", *private) {
            last_error = Some(io::Error::new(e.kind(), format!("{}: {e}", dir.display())));
            continue;
        }
        let path = dir.join(&name);
        if fs::metadata(&path).is_ok_and(|m| m.is_file() && m.len() > 0) {
            return Ok(Some(path));
        }
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let work = dir.join(format!(
            ".mpi-src.{}.{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        let built = (|| {
            for (rel, text) in MPI_RECORDER_SOURCES {
                let p = work.join(rel);
                fs::create_dir_all(p.parent().expect("a file in a directory"))?;
                fs::write(&p, text)?;
            }
            let tmp = work.join("recorder.so");
            let args = mpi_headers::compile_args(
                h,
                &work.join("include"),
                &work.join("mpi"),
                &include_dirs,
                &tmp,
            );
            let out = std::process::Command::new(&cc)
                .args(&args)
                .output()
                .map_err(|e| {
                    io::Error::new(
                        e.kind(),
                        format!(
                            "cannot run the C compiler `{}` to build the {} recorder ({e}); \
                             install a C compiler (Debian: gcc), or rebuild contend now that the \
                             {} headers are installed",
                            cc.to_string_lossy(),
                            imp.name(),
                            imp.name()
                        ),
                    )
                })?;
            if !out.status.success() {
                return Err(io::Error::other(format!(
                    "building the {} recorder against {} failed ({}):\n{}",
                    imp.name(),
                    header.join("mpi.h").display(),
                    out.status,
                    String::from_utf8_lossy(&out.stderr)
                )));
            }
            fs::set_permissions(&tmp, fs::Permissions::from_mode(0o755))?;
            fs::rename(&tmp, &path)
        })();
        let _ = fs::remove_dir_all(&work);
        match built {
            Ok(()) => return Ok(Some(path)),
            Err(e) if e.kind() == io::ErrorKind::Other || e.kind() == io::ErrorKind::NotFound => {
                return Err(e)
            }
            Err(e) => {
                last_error = Some(io::Error::new(e.kind(), format!("{}: {e}", dir.display())))
            }
        }
    }
    Err(last_error.unwrap_or_else(|| io::Error::other("no cache directory for the MPI recorder")))
}

/// `libcontend_lock-<16 hex digits of FNV-1a 64>.so`
fn library_file_name(bytes: &[u8]) -> String {
    format!("libcontend_lock-{:016x}.so", fnv1a64(bytes))
}

/// FNV-1a, 64 bits: a content hash for the cache file name (not security:
/// the directories are the user's own).
fn fnv1a64(bytes: &[u8]) -> u64 {
    const OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    bytes
        .iter()
        .fold(OFFSET_BASIS, |h, &b| (h ^ u64::from(b)).wrapping_mul(PRIME))
}

/// Candidate directories in order; `true` marks the shared `/tmp` one that
/// must be checked for ownership and permissions.
fn cache_dirs() -> Vec<(PathBuf, bool)> {
    let mut dirs = Vec::new();
    if let Some(x) = std::env::var_os("XDG_CACHE_HOME") {
        let x = PathBuf::from(x);
        if x.is_absolute() {
            dirs.push((x.join("contend"), false));
        }
    }
    if let Some(home) = std::env::var_os("HOME") {
        let home = PathBuf::from(home);
        if home.is_absolute() {
            dirs.push((home.join(".cache").join("contend"), false));
        }
    }
    if let Some(uid) = effective_uid() {
        dirs.push((PathBuf::from(format!("/tmp/contend-{uid}")), true));
    }
    dirs
}

/// The effective uid, from `/proc/self/status` (no libc dependency).
fn effective_uid() -> Option<u32> {
    let status = fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("Uid:"))?;
    // Uid: real effective saved filesystem
    line.split_whitespace().nth(2)?.parse().ok()
}

fn install_in(dir: &Path, name: &str, bytes: &[u8], private: bool) -> io::Result<PathBuf> {
    if private {
        match fs::DirBuilder::new().mode(0o700).create(dir) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
        let meta = fs::symlink_metadata(dir)?;
        let uid = effective_uid();
        if !meta.file_type().is_dir()
            || Some(meta.uid()) != uid
            || meta.permissions().mode() & 0o077 != 0
        {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                "not a private directory of this user (owner, mode 0700 and no symlink expected)",
            ));
        }
    } else {
        fs::create_dir_all(dir)?;
    }

    let path = dir.join(name);
    if same_contents(&path, bytes) {
        return Ok(path);
    }

    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let tmp = dir.join(format!(
        ".{name}.tmp.{}.{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let written = (|| {
        let mut f = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o755)
            .open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        fs::set_permissions(&tmp, fs::Permissions::from_mode(0o755))?;
        fs::rename(&tmp, &path)
    })();
    if let Err(e) = written {
        let _ = fs::remove_file(&tmp);
        return Err(e);
    }
    Ok(path)
}

/// The file exists, is a regular file of the same size and holds `bytes`.
/// (The name already carries the hash; comparing the bytes as well costs a
/// few hundred microseconds and catches a damaged cache file.)
fn same_contents(path: &Path, bytes: &[u8]) -> bool {
    let Ok(meta) = fs::symlink_metadata(path) else {
        return false;
    };
    if !meta.file_type().is_file() || meta.len() != bytes.len() as u64 {
        return false;
    }
    let mut existing = Vec::with_capacity(bytes.len());
    match fs::File::open(path).and_then(|mut f| f.read_to_end(&mut existing)) {
        Ok(_) => existing == bytes,
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch_dir(tag: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "contend-collector-test-{tag}-{}",
            std::process::id()
        ));
        let _ = fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn embedded_library_is_a_shared_object() {
        assert!(LOCK_COLLECTOR_SO.len() > 4096);
        assert_eq!(&LOCK_COLLECTOR_SO[..4], b"\x7fELF");
        // e_type == ET_DYN (little-endian)
        assert_eq!(
            u16::from_le_bytes([LOCK_COLLECTOR_SO[16], LOCK_COLLECTOR_SO[17]]),
            3
        );
    }

    #[test]
    fn fnv1a64_known_values() {
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn installs_once_and_reuses() {
        let dir = scratch_dir("reuse");
        let name = library_file_name(b"library bytes");
        let p1 = install_in(&dir, &name, b"library bytes", false).unwrap();
        let m1 = fs::metadata(&p1).unwrap();
        assert_eq!(fs::read(&p1).unwrap(), b"library bytes");
        assert_eq!(m1.permissions().mode() & 0o777, 0o755);
        let p2 = install_in(&dir, &name, b"library bytes", false).unwrap();
        assert_eq!(p1, p2);
        assert_eq!(
            fs::metadata(&p2).unwrap().ino(),
            m1.ino(),
            "reused, not rewritten"
        );
        // no temporary files left behind
        assert_eq!(fs::read_dir(&dir).unwrap().count(), 1);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn damaged_cache_file_is_replaced() {
        let dir = scratch_dir("damaged");
        let name = library_file_name(b"0123456789");
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join(&name), b"0123456788").unwrap(); // same size
        let p = install_in(&dir, &name, b"0123456789", false).unwrap();
        assert_eq!(fs::read(p).unwrap(), b"0123456789");
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn private_dir_must_be_closed_to_others() {
        let dir = scratch_dir("private");
        fs::create_dir_all(&dir).unwrap();
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o777)).unwrap();
        assert!(install_in(&dir, "x.so", b"x", true).is_err());
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o700)).unwrap();
        assert!(install_in(&dir, "x.so", b"x", true).is_ok());
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn mpi_recorders_are_shared_objects_with_the_wrappers() {
        for imp in MpiImplementation::ALL {
            let Some(bytes) = imp.recorder() else {
                eprintln!("no {} recorder in this build", imp.name());
                continue;
            };
            assert_eq!(&bytes[..4], b"\x7fELF");
            let path = install_mpi_recorder(imp).unwrap().unwrap();
            assert_eq!(fs::read(&path).unwrap(), bytes);
            // the wrapped entry points are exported by name
            let text = String::from_utf8_lossy(bytes);
            for sym in ["MPI_Init", "MPI_Waitall", "MPI_Comm_split", "MPI_Alltoallw"] {
                assert!(text.contains(sym), "{} recorder lacks {sym}", imp.name());
            }
            if imp == MpiImplementation::OpenMpi {
                assert!(text.contains("mpi_waitall_") && text.contains("MPI_WAITALL"));
            }
        }
    }

    /// The regression of issue 12: a `contend` built before the MPI
    /// headers were installed builds the recorder when `record --mpi`
    /// first needs it. Here the headers are installed, so the recorder
    /// built now must be one with the wrappers, and the second call reuses
    /// it.
    #[test]
    fn recorder_is_built_when_first_needed() {
        let dir = scratch_dir("runtime-build");
        let dirs = vec![(dir.clone(), false)];
        for imp in MpiImplementation::ALL {
            let h = imp.headers();
            if mpi_headers::header_dir(h, &mpi_headers::include_dirs(h)).is_none() {
                assert_eq!(build_mpi_recorder(imp, &dirs).unwrap(), None);
                continue;
            }
            let path = build_mpi_recorder(imp, &dirs).unwrap().unwrap();
            let bytes = fs::read(&path).unwrap();
            assert_eq!(&bytes[..4], b"\x7fELF");
            let text = String::from_utf8_lossy(&bytes);
            for sym in ["MPI_Init", "MPI_Waitall", "MPI_Comm_split"] {
                assert!(text.contains(sym), "{} recorder lacks {sym}", imp.name());
            }
            let ino = fs::metadata(&path).unwrap().ino();
            let again = build_mpi_recorder(imp, &dirs).unwrap().unwrap();
            assert_eq!(again, path);
            assert_eq!(fs::metadata(&again).unwrap().ino(), ino, "reused");
        }
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_region_header_is_installed_where_include_dir_says() {
        let dir = install_region_header().unwrap();
        assert_eq!(
            fs::read(dir.join("contend/region.h")).unwrap(),
            REGION_HEADER
        );
        assert_eq!(install_region_header().unwrap(), dir, "stable across calls");
    }

    #[test]
    fn install_lock_collector_writes_the_embedded_bytes() {
        let path = install_lock_collector().unwrap();
        assert_eq!(fs::read(&path).unwrap(), LOCK_COLLECTOR_SO);
        assert!(path
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("libcontend_lock-"));
    }
}
