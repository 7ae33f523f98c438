//! A shared, read-write memory mapping of a file or a perf event's ring
//! buffer, unmapped when dropped: the one owner of such a mapping for the
//! launcher's chunk preparer (`chunk_prep`: a trace's header and batches of
//! chunk heads) and the perf ring buffers (`probes`, `numa::sampler`).

use std::os::fd::{AsRawFd, BorrowedFd};

/// `len` bytes of a descriptor mapped shared and read-write
/// (`MAP_SHARED`, `PROT_READ | PROT_WRITE`), unmapped in `Drop`.
pub(crate) struct SharedMap {
    base: *mut u8,
    len: usize,
}

// SAFETY: the mapping is owned by the SharedMap; what is read or written
// through it is the owner's business (each owner uses it from one thread
// at a time).
unsafe impl Send for SharedMap {}

impl SharedMap {
    /// Maps `len` bytes of `fd` from byte `offset` (a multiple of the page
    /// size). Errors: `mmap`'s (`EPERM`/`ENOMEM` for a perf ring over the
    /// locked-memory limit, `ENODEV`, …).
    pub(crate) fn new(fd: BorrowedFd<'_>, offset: u64, len: usize) -> std::io::Result<SharedMap> {
        // SAFETY: a fresh shared mapping of the caller's range of the
        // descriptor, unmapped in Drop.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                offset as libc::off_t,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        Ok(SharedMap {
            base: base.cast(),
            len,
        })
    }

    /// The first byte of the mapping; `len` bytes from it are mapped while
    /// `self` lives.
    pub(crate) fn base(&self) -> *mut u8 {
        self.base
    }
}

impl Drop for SharedMap {
    fn drop(&mut self) {
        // SAFETY: mapped in SharedMap::new with this length, unmapped once.
        unsafe { libc::munmap(self.base.cast(), self.len) };
    }
}
