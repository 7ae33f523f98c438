//! `contend meters --daemon`: the meter daemon detached from the terminal
//! (the classic double fork: fork, `setsid`, fork again, standard streams
//! on `/dev/null`), with a pid file, and the launching process waiting
//! until the daemon says it runs (its blackboard exists) or why it could
//! not start, so that `contend meters --daemon` fails with the daemon's own
//! error (a second daemon on the same blackboard, a missing calibration).
//!
//! Call [`detach`] while the process has one thread (before the engine,
//! its probe thread and the signal handlers exist).

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};

/// Errors detaching.
#[derive(Debug, thiserror::Error)]
pub enum DetachError {
    /// A system call failed.
    #[error("cannot start the daemon: {call}: {source}")]
    Sys {
        /// The call (`pipe`, `fork`, `setsid`).
        call: &'static str,
        /// The error.
        source: std::io::Error,
    },
    /// The daemon reported an error before it ran.
    #[error("{0}")]
    Daemon(String),
    /// The daemon ended without saying anything.
    #[error("the daemon ended before it started (no message)")]
    Vanished,
}

/// Which side of [`detach`] this is.
pub enum Side {
    /// The launching process: the daemon runs with this pid.
    Launcher {
        /// The daemon's pid.
        pid: u32,
    },
    /// The daemon: report [`Daemon::ready`] or [`Daemon::failed`].
    Daemon(Daemon),
}

/// The daemon's side: the pipe to the launcher and the pid file.
pub struct Daemon {
    report: Option<File>,
    pid_file: PathBuf,
}

fn sys<T: PartialOrd + Default>(call: &'static str, r: T) -> Result<T, DetachError> {
    if r < T::default() {
        Err(DetachError::Sys {
            call,
            source: std::io::Error::last_os_error(),
        })
    } else {
        Ok(r)
    }
}

/// Detaches: returns [`Side::Launcher`] in the calling process once the
/// daemon reported [`Daemon::ready`] (or the daemon's error), and
/// [`Side::Daemon`] in the daemon (a grandchild in a new session, its
/// standard streams on `/dev/null`). `pid_file` is made absolute here.
///
/// Errors: `pipe`, `fork` or `setsid` failed; in the launcher, the
/// daemon's own error or its silent end.
pub fn detach(pid_file: &Path) -> Result<Side, DetachError> {
    let pid_file = std::path::absolute(pid_file).unwrap_or_else(|_| pid_file.to_path_buf());
    let mut fds = [0i32; 2];
    // SAFETY: pipe2 with a valid two-element array.
    sys("pipe", unsafe {
        libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC)
    })?;
    // SAFETY: both descriptors were just created and are owned here.
    let (rd, wr) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // SAFETY: fork in a process with one thread (documented requirement).
    let first = sys("fork", unsafe { libc::fork() })?;
    if first > 0 {
        drop(wr);
        // The first child exits at once; reap it.
        let mut status = 0;
        // SAFETY: waitpid on our own child with a valid status pointer.
        unsafe { libc::waitpid(first, &mut status, 0) };
        let mut msg = String::new();
        let _ = File::from(rd).read_to_string(&mut msg);
        return match msg.strip_prefix("ok ") {
            Some(pid) => Ok(Side::Launcher {
                pid: pid.trim().parse().unwrap_or(0),
            }),
            None if msg.is_empty() => Err(DetachError::Vanished),
            None => Err(DetachError::Daemon(msg.trim_end().to_string())),
        };
    }
    drop(rd);
    // First child: a new session, then the daemon is its child (never a
    // session leader, so it can never acquire a controlling terminal).
    // SAFETY: plain system calls in the child.
    unsafe {
        if libc::setsid() < 0 {
            libc::_exit(1);
        }
        match libc::fork() {
            0 => {}
            -1 => libc::_exit(1),
            _ => libc::_exit(0),
        }
        let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR);
        if null >= 0 {
            for fd in 0..3 {
                libc::dup2(null, fd);
            }
            if null > 2 {
                libc::close(null);
            }
        }
    }
    Ok(Side::Daemon(Daemon {
        report: Some(File::from(wr)),
        pid_file,
    }))
}

impl Daemon {
    /// The pid file.
    pub fn pid_file(&self) -> &Path {
        &self.pid_file
    }

    /// The daemon runs: writes the pid file (whole, by rename) and tells
    /// the launcher. A pid file that cannot be written is reported as the
    /// daemon's error (returned, for the daemon to stop).
    pub fn ready(&mut self) -> Result<(), String> {
        let pid = std::process::id();
        let tmp = self.pid_file.with_extension(format!("tmp{pid}"));
        let written = std::fs::write(&tmp, format!("{pid}\n"))
            .and_then(|()| std::fs::rename(&tmp, &self.pid_file));
        if let Err(e) = written {
            let _ = std::fs::remove_file(&tmp);
            let msg = format!("--pid-file {}: {e}", self.pid_file.display());
            self.failed(&msg);
            return Err(msg);
        }
        if let Some(mut f) = self.report.take() {
            let _ = writeln!(f, "ok {pid}");
        }
        Ok(())
    }

    /// The daemon could not start: tells the launcher why.
    pub fn failed(&mut self, message: &str) {
        if let Some(mut f) = self.report.take() {
            let _ = f.write_all(message.as_bytes());
        }
    }

    /// The daemon ends: removes the pid file if it still names this
    /// process.
    pub fn finish(&mut self) {
        let mine = std::fs::read_to_string(&self.pid_file)
            .is_ok_and(|s| s.trim() == std::process::id().to_string());
        if mine {
            let _ = std::fs::remove_file(&self.pid_file);
        }
    }
}
