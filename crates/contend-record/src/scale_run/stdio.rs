//! The process-wide state a run changes and restores: an environment
//! variable (`OMP_NUM_THREADS`) and the standard descriptors, pointed at a
//! run's `stdout.txt`/`stderr.txt` while it runs.

use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// Restores an environment variable when dropped.
pub(crate) struct EnvGuard {
    name: &'static str,
    value: Option<std::ffi::OsString>,
}

impl EnvGuard {
    pub(crate) fn save(name: &'static str) -> EnvGuard {
        EnvGuard {
            name,
            value: std::env::var_os(name),
        }
    }
}

impl Drop for EnvGuard {
    fn drop(&mut self) {
        match &self.value {
            Some(v) => std::env::set_var(self.name, v),
            None => std::env::remove_var(self.name),
        }
    }
}

/// Copies of the launcher's standard input, output and error (close on
/// exec, so programs never inherit them), to point descriptors 0–2
/// elsewhere for a run and back afterwards.
///
/// Descriptors 0–2 belong to the whole process: while a run is redirected,
/// anything else in the launcher writing to them writes into the run's
/// files. The command-line tool draws its progress bar on its own copy of
/// the terminal for that reason.
pub(crate) struct SavedStdio {
    /// Copies of 0, 1, 2; `None` where the launcher was started with that
    /// descriptor closed (it is closed again after each run).
    fds: [Option<OwnedFd>; 3],
    null: File,
}

impl SavedStdio {
    pub(crate) fn save() -> io::Result<SavedStdio> {
        let dup = |fd: i32| -> io::Result<Option<OwnedFd>> {
            // SAFETY: F_DUPFD_CLOEXEC on a descriptor number; the result,
            // if valid, is a fresh descriptor we own.
            let r = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 3) };
            if r < 0 {
                let e = io::Error::last_os_error();
                return if e.raw_os_error() == Some(libc::EBADF) {
                    Ok(None)
                } else {
                    Err(e)
                };
            }
            // SAFETY: fresh descriptor.
            Ok(Some(unsafe { OwnedFd::from_raw_fd(r) }))
        };
        Ok(SavedStdio {
            fds: [dup(0)?, dup(1)?, dup(2)?],
            null: File::open("/dev/null")?,
        })
    }

    /// Points 0 at `/dev/null`, 1 at `out`, 2 at `err` until the guard is
    /// dropped.
    pub(crate) fn redirect<'a>(&'a self, out: &File, err: &File) -> io::Result<RedirectGuard<'a>> {
        let _ = io::stdout().flush();
        let _ = io::stderr().flush();
        let guard = RedirectGuard { saved: self };
        for (from, to) in [
            (self.null.as_raw_fd(), 0),
            (out.as_raw_fd(), 1),
            (err.as_raw_fd(), 2),
        ] {
            // SAFETY: dup2 between valid descriptors.
            if unsafe { libc::dup2(from, to) } < 0 {
                return Err(io::Error::last_os_error());
            }
        }
        Ok(guard)
    }
}

pub(crate) struct RedirectGuard<'a> {
    saved: &'a SavedStdio,
}

impl Drop for RedirectGuard<'_> {
    fn drop(&mut self) {
        let _ = io::stdout().flush();
        for (i, fd) in self.saved.fds.iter().enumerate() {
            match fd {
                // SAFETY: dup2 from a descriptor we own onto 0–2.
                Some(fd) => unsafe { libc::dup2(fd.as_raw_fd(), i as i32) },
                // SAFETY: closes one of 0–2, which was closed before.
                None => unsafe { libc::close(i as i32) },
            };
        }
    }
}
