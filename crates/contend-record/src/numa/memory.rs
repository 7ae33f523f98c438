//! The kernel's NUMA memory calls, through raw system calls (no libnuma):
//! `mbind(2)` to place a buffer on a node before it is touched,
//! `move_pages(2)` to ask where pages of a process lie (query mode) and to
//! move them (`contend numa balance --apply`).
//!
//! `move_pages` on another process needs the right to ptrace it (root, or
//! the same user); moving to a node the process may not use fails per
//! page. A process that exits part-way is reported with what was done
//! before ([`ApplyError::Exited`]), never silently.

use std::io;

/// `MPOL_BIND`.
const MPOL_BIND: libc::c_int = 2;
/// `MPOL_MF_STRICT`: fail if pages already lie elsewhere.
const MPOL_MF_STRICT: libc::c_uint = 1 << 0;
/// `MPOL_MF_MOVE`: move pages already touched (only the caller's).
const MPOL_MF_MOVE: libc::c_int = 1 << 1;
/// Bits in the node masks passed to the kernel.
const MASK_BITS: usize = 1024;
/// Pages per `move_pages` call.
pub const BATCH: usize = 4096;

/// Binds the (untouched) memory `[addr, addr + len)` of the calling
/// process to `node` (`mbind(MPOL_BIND)`): its pages are allocated there
/// when first touched.
///
/// # Safety
/// `addr` must be the page-aligned start of a mapping of at least `len`
/// bytes owned by the caller.
pub unsafe fn bind_to_node(addr: *mut u8, len: usize, node: u32) -> io::Result<()> {
    if node as usize >= MASK_BITS {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("node {node} is beyond the {MASK_BITS} nodes contend can bind to"),
        ));
    }
    let mut mask = [0u64; MASK_BITS / 64];
    mask[node as usize / 64] |= 1 << (node % 64);
    // The kernel reads maxnode − 1 bits.
    let rc = libc::syscall(
        libc::SYS_mbind,
        addr,
        len,
        MPOL_BIND,
        mask.as_ptr(),
        (MASK_BITS + 1) as libc::c_ulong,
        MPOL_MF_STRICT | MPOL_MF_MOVE as libc::c_uint,
    );
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The node each page of process `pid` lies on (`move_pages(2)` without
/// target nodes): `status[i]` ≥ 0 is the node of `pages[i]`, < 0 is
/// `−errno` (`-ENOENT`: not present; `-EFAULT`: not mapped). `pid` 0 is
/// the caller.
///
/// Errors: the call itself fails (`ESRCH`: no such process; `EPERM`: no
/// right to inspect it).
pub fn query_nodes(pid: u32, pages: &[u64]) -> io::Result<Vec<i32>> {
    let mut status = vec![0i32; pages.len()];
    for (chunk, out) in pages.chunks(BATCH).zip(status.chunks_mut(BATCH)) {
        let ptrs: Vec<*const libc::c_void> =
            chunk.iter().map(|&p| p as *const libc::c_void).collect();
        // SAFETY: `ptrs` and `out` hold `chunk.len()` entries; a null node
        // array asks for the nodes only, nothing is moved.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_move_pages,
                pid as libc::pid_t,
                ptrs.len() as libc::c_ulong,
                ptrs.as_ptr(),
                std::ptr::null::<libc::c_int>(),
                out.as_mut_ptr(),
                0 as libc::c_int,
            )
        };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(status)
}

/// What [`move_pages`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ApplyOutcome {
    /// Pages that now lie on their target node (moved, or there already).
    pub moved: u64,
    /// Pages the kernel did not move, with the errno (`EBUSY`, `EFAULT`,
    /// `ENOENT`, `EACCES`, `ENOMEM`, …).
    pub failed: Vec<(u64, i32)>,
    /// Pages never attempted (the process exited first).
    pub not_attempted: u64,
}

/// Errors of [`move_pages`]; each carries what was done before it.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    /// The process exited (or never existed) part-way.
    #[error("process {pid} exited during --apply: {moved} page(s) moved, {failed} failed, {not_attempted} not attempted", moved = done.moved, failed = done.failed.len(), not_attempted = done.not_attempted)]
    Exited {
        /// The process.
        pid: u32,
        /// What was done before.
        done: ApplyOutcome,
    },
    /// The kernel refused the call (no permission, a node the process may
    /// not use, no NUMA support).
    #[error("move_pages on process {pid}: {source} ({moved} page(s) moved before, {not_attempted} not attempted)", moved = done.moved, not_attempted = done.not_attempted)]
    Refused {
        /// The process.
        pid: u32,
        /// The kernel's error.
        source: io::Error,
        /// What was done before.
        done: ApplyOutcome,
    },
}

/// Moves each `(page, node)` of process `pid` to its node with
/// `move_pages(MPOL_MF_MOVE)`, [`BATCH`] pages per call, and reports each
/// page's fate. A page already on its node counts as moved (the kernel
/// leaves it and reports the node).
///
/// Errors: the process exits part-way ([`ApplyError::Exited`]) or the
/// kernel refuses a call ([`ApplyError::Refused`]); both carry the
/// outcome so far and the number of pages not attempted.
pub fn move_pages(pid: u32, moves: &[(u64, u32)]) -> Result<ApplyOutcome, ApplyError> {
    move_pages_with(pid, moves, |pages, nodes, status| {
        // SAFETY: the three arrays hold the same number of entries.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_move_pages,
                pid as libc::pid_t,
                pages.len() as libc::c_ulong,
                pages.as_ptr(),
                nodes.as_ptr(),
                status.as_mut_ptr(),
                MPOL_MF_MOVE,
            )
        };
        if rc < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(())
        }
    })
}

/// [`move_pages`] with the system call given (`call(pages, nodes,
/// status)`), so that a process ending part-way can be tested.
fn move_pages_with(
    pid: u32,
    moves: &[(u64, u32)],
    mut call: impl FnMut(&[*const libc::c_void], &[libc::c_int], &mut [libc::c_int]) -> io::Result<()>,
) -> Result<ApplyOutcome, ApplyError> {
    let mut done = ApplyOutcome::default();
    for (b, chunk) in moves.chunks(BATCH).enumerate() {
        let ptrs: Vec<*const libc::c_void> =
            chunk.iter().map(|m| m.0 as *const libc::c_void).collect();
        let nodes: Vec<libc::c_int> = chunk.iter().map(|m| m.1 as libc::c_int).collect();
        let mut status = vec![0 as libc::c_int; chunk.len()];
        if let Err(source) = call(&ptrs, &nodes, &mut status) {
            done.not_attempted = (moves.len() - b * BATCH) as u64;
            // A zombie has no memory any more: the kernel says EINVAL.
            let gone =
                source.raw_os_error() == Some(libc::ESRCH) || crate::attach::process_gone(pid);
            return Err(if gone {
                ApplyError::Exited { pid, done }
            } else {
                ApplyError::Refused { pid, source, done }
            });
        }
        for (m, s) in chunk.iter().zip(&status) {
            if *s == m.1 as libc::c_int {
                done.moved += 1;
            } else if *s < 0 {
                done.failed.push((m.0, -*s));
            } else {
                // Placed on another node than asked (should not happen).
                done.failed.push((m.0, libc::EINVAL));
            }
        }
    }
    Ok(done)
}

/// The symbolic name of an errno that `move_pages` reports per page.
pub fn errno_name(errno: i32) -> String {
    match errno {
        libc::EACCES => "EACCES (mapped by several processes)".into(),
        libc::EBUSY => "EBUSY (in use, e.g. pinned for I/O)".into(),
        libc::EFAULT => "EFAULT (not mapped)".into(),
        libc::EIO => "EIO (cannot be written back)".into(),
        libc::EINVAL => "EINVAL (cannot be moved)".into(),
        libc::ENOENT => "ENOENT (not present: never touched, or a zero page)".into(),
        libc::ENOMEM => "ENOMEM (no memory on the target node)".into(),
        libc::ENODEV => "ENODEV (no such node)".into(),
        e => format!("errno {e} ({})", io::Error::from_raw_os_error(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_pages_are_found_and_moved_to_their_node() {
        let mut v = vec![1u8; 4 * 4096];
        let base = (v.as_mut_ptr() as u64 + 4095) & !4095;
        let pages = [base, base + 4096];
        let status = query_nodes(0, &pages).unwrap();
        assert!(status.iter().all(|&s| s >= 0), "{status:?}");
        // Moving a page to the node it lies on succeeds as a no-op.
        let moves: Vec<(u64, u32)> = pages
            .iter()
            .zip(&status)
            .map(|(&p, &s)| (p, s as u32))
            .collect();
        let done = move_pages(std::process::id(), &moves).unwrap();
        assert_eq!(done.moved, 2, "{done:?}");
        assert!(done.failed.is_empty());
        drop(v);
        // An address that is not mapped.
        let status = query_nodes(0, &[8]).unwrap();
        assert_eq!(status[0], -libc::EFAULT);
    }

    /// The process ends after the first batch: the pages of that batch
    /// are reported (one moved, one failed with EBUSY), the rest as not
    /// attempted.
    #[test]
    fn a_process_ending_part_way_leaves_a_full_account() {
        let moves: Vec<(u64, u32)> = (0..BATCH as u64 + 10).map(|p| (p * 4096, 0)).collect();
        let mut calls = 0;
        let e = move_pages_with(4_194_304 + 9, &moves, |pages, _, status| {
            calls += 1;
            if calls > 1 {
                return Err(io::Error::from_raw_os_error(libc::ESRCH));
            }
            for (i, s) in status.iter_mut().enumerate().take(pages.len()) {
                *s = if i == 1 { -libc::EBUSY } else { 0 };
            }
            Ok(())
        })
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("process 4194313 exited during --apply: {} page(s) moved, 1 failed, 10 not attempted", BATCH - 1)
        );
        match e {
            ApplyError::Exited { done, .. } => assert_eq!(done.failed, vec![(4096, libc::EBUSY)]),
            other => panic!("{other}"),
        }
    }

    #[test]
    fn a_missing_process_is_reported_with_what_was_done() {
        // pid_max is below 2^22 on Linux, so this pid never exists.
        let e = move_pages(4_194_304 + 7, &[(0x1000, 0), (0x2000, 0)]).unwrap_err();
        match e {
            ApplyError::Exited { done, .. } => assert_eq!(done.not_attempted, 2),
            other => panic!("{other}"),
        }
    }
}
