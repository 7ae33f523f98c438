//! Where the kernel's tracing file system (tracefs) is: the recorder reads
//! the ids of the tracepoints it opens with `perf_event_open(2)` there
//! (the scheduler's wake-ups for the service-time sampler,
//! [`crate::sched_events`]; the futex system calls for the futex tracer,
//! [`crate::futex_trace`]).
//!
//! A machine that booted without mounting tracefs (a minimal VM or
//! container image: the kernel has it, and the empty mount point
//! `/sys/kernel/tracing` is there) has no tracepoint ids to read, and the
//! sampler and the futex tracer then go without the tracepoints. As root
//! the recorder mounts tracefs at `/sys/kernel/tracing` once, as `perf`
//! (`tracing_path_mount` in the kernel's `tools/lib/api/fs`) and
//! `trace-cmd` (libtracefs) do, and leaves it mounted (another tool may
//! be using it by the end). `CONTEND_MOUNT_TRACEFS=0` leaves the mount
//! table alone.

use std::path::Path;
use std::sync::OnceLock;

/// Where tracefs is looked for, in order: its own mount point, and the
/// directory under debugfs where the kernel mounts it when debugfs is
/// mounted.
pub const PLACES: [&str; 2] = ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"];

/// Where the recorder mounts tracefs when it is in none of [`PLACES`].
pub const MOUNT_POINT: &str = "/sys/kernel/tracing";

/// What [`ensure_mounted`] found or did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mount {
    /// tracefs was mounted already, in one of [`PLACES`].
    Found,
    /// The recorder mounted tracefs at [`MOUNT_POINT`] just now.
    MountedNow,
    /// tracefs is not mounted (or, for a user other than root, not
    /// readable) and the recorder did not mount it: why (a clause: not
    /// root, turned off, no mount point, the mount failed with its error).
    Missing(String),
}

/// What [`ensure_mounted`] found or did in this process, once it ran.
static OUTCOME: OnceLock<Mount> = OnceLock::new();

/// True when [`ensure_mounted`] mounted tracefs in this process (a
/// question only: it mounts nothing).
pub fn mounted_by_this_process() -> bool {
    OUTCOME.get() == Some(&Mount::MountedNow)
}

/// The places to read tracepoint ids from ([`PLACES`]), after
/// [`ensure_mounted`] has run once in this process.
pub fn places() -> impl Iterator<Item = &'static Path> {
    ensure_mounted();
    PLACES.iter().map(Path::new)
}

/// Mounts tracefs at [`MOUNT_POINT`] when it is mounted in none of
/// [`PLACES`], the process runs as root and `CONTEND_MOUNT_TRACEFS` is not
/// `0`; once per process (later calls return the first outcome). Never
/// fails: a refusal is [`Mount::Missing`], and the callers then say what
/// they could not read, as before.
pub fn ensure_mounted() -> &'static Mount {
    OUTCOME.get_or_init(|| {
        // SAFETY: plain system call without arguments.
        let root = unsafe { libc::geteuid() } == 0;
        let allowed = if std::env::var("CONTEND_MOUNT_TRACEFS").is_ok_and(|v| v == "0") {
            Err("tracefs is not mounted (CONTEND_MOUNT_TRACEFS=0 leaves it so)".to_string())
        } else if !root {
            // An empty mount point this user may list is an unmounted
            // tracefs; a mounted one is root-only by default.
            Err(if std::fs::read_dir(MOUNT_POINT).is_ok() {
                "tracefs is not mounted (only root may mount it)"
            } else {
                "tracefs is root-only by default"
            }
            .to_string())
        } else {
            Ok(())
        };
        ensure_mounted_at(
            &PLACES.map(Path::new),
            Path::new(MOUNT_POINT),
            allowed,
            mount_tracefs,
        )
    })
}

/// [`ensure_mounted`] on given places and mount point, with `allowed` the
/// outcome of the permission checks (`Err`: the sentence to give, as a
/// user other than root cannot tell an unmounted tracefs from an
/// unreadable one) and `mount` the mounting (for tests).
fn ensure_mounted_at(
    places: &[&Path],
    mount_point: &Path,
    allowed: Result<(), String>,
    mount: impl FnOnce(&Path) -> std::io::Result<()>,
) -> Mount {
    let mounted = |p: &&Path| p.join("events").is_dir();
    if places.iter().any(mounted) {
        return Mount::Found;
    }
    if let Err(why) = allowed {
        return Mount::Missing(why);
    }
    if !mount_point.is_dir() {
        return Mount::Missing(format!(
            "tracefs is not mounted and {} does not exist (a kernel without tracefs)",
            mount_point.display()
        ));
    }
    match mount(mount_point) {
        Ok(()) if mounted(&mount_point) => Mount::MountedNow,
        Ok(()) => Mount::Missing(format!(
            "tracefs mounted at {} has no events directory",
            mount_point.display()
        )),
        Err(e) => Mount::Missing(format!(
            "tracefs is not mounted, and mounting it at {} failed: {e}",
            mount_point.display()
        )),
    }
}

/// `mount -t tracefs nodev DIR`.
fn mount_tracefs(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let target = std::ffi::CString::new(dir.as_os_str().as_bytes())
        .map_err(|_| std::io::Error::from_raw_os_error(libc::EINVAL))?;
    // SAFETY: every pointer is a NUL-terminated string that outlives the
    // call; no data argument.
    let r = unsafe {
        libc::mount(
            c"nodev".as_ptr(),
            target.as_ptr(),
            c"tracefs".as_ptr(),
            0,
            std::ptr::null(),
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    fn dirs() -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf) {
        let d = tempfile::tempdir().unwrap();
        let (a, b) = (d.path().join("tracing"), d.path().join("debug/tracing"));
        std::fs::create_dir_all(&a).unwrap();
        (d, a, b)
    }

    #[test]
    fn a_mounted_tracefs_is_left_as_it_is() {
        for second in [false, true] {
            let (_d, a, b) = dirs();
            std::fs::create_dir_all(if second { &b } else { &a }.join("events")).unwrap();
            let called = Cell::new(false);
            let m = ensure_mounted_at(&[&a, &b], &a, Ok(()), |_| {
                called.set(true);
                Ok(())
            });
            assert_eq!(m, Mount::Found);
            assert!(!called.get(), "mounted over a tracefs already there");
        }
    }

    #[test]
    fn a_missing_tracefs_is_mounted_at_the_mount_point_when_allowed() {
        let (_d, a, b) = dirs();
        let m = ensure_mounted_at(&[&a, &b], &a, Ok(()), |at| {
            std::fs::create_dir(at.join("events"))
        });
        assert_eq!(m, Mount::MountedNow);
    }

    #[test]
    fn without_permission_nothing_is_mounted_and_the_reason_is_given() {
        let (_d, a, b) = dirs();
        let called = Cell::new(false);
        let why = "tracefs is root-only by default";
        let m = ensure_mounted_at(&[&a, &b], &a, Err(why.into()), |_| {
            called.set(true);
            Ok(())
        });
        assert_eq!(m, Mount::Missing(why.into()));
        assert!(!called.get());
    }

    #[test]
    fn a_failed_mount_or_a_missing_mount_point_is_named() {
        let (_d, a, b) = dirs();
        let m = ensure_mounted_at(&[&a, &b], &a, Ok(()), |_| {
            Err(std::io::Error::from_raw_os_error(libc::ENODEV))
        });
        let Mount::Missing(why) = m else {
            panic!("{m:?}")
        };
        assert!(
            why.contains(&a.display().to_string()) && why.contains("No such device"),
            "{why}"
        );
        let gone = a.join("nowhere");
        let m = ensure_mounted_at(&[&gone, &b], &gone, Ok(()), |_| Ok(()));
        assert!(
            matches!(&m, Mount::Missing(w) if w.contains("does not exist")),
            "{m:?}"
        );
        // A mount that leaves no events directory is not a tracefs.
        let m = ensure_mounted_at(&[&a, &b], &a, Ok(()), |_| Ok(()));
        assert!(
            matches!(&m, Mount::Missing(w) if w.contains("no events directory")),
            "{m:?}"
        );
    }

    /// On this machine: as root with a kernel that has tracefs, the
    /// scheduler's tracepoint ids can be read afterwards (a machine that
    /// booted without tracefs mounted gets it mounted here).
    #[test]
    fn as_root_the_tracepoint_ids_are_readable_afterwards() {
        // SAFETY: plain system call.
        let root = unsafe { libc::geteuid() } == 0;
        if !root || !Path::new(MOUNT_POINT).is_dir() {
            eprintln!("SKIP: needs root and a kernel with tracefs");
            return;
        }
        let m = ensure_mounted();
        assert!(matches!(m, Mount::Found | Mount::MountedNow), "{m:?}");
        assert!(
            places().any(|p| p.join("events/sched/sched_switch/id").is_file()),
            "{m:?}"
        );
    }
}
