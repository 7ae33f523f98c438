//! After the run: lock traces take on disk only what was written.
//!
//! A lock trace reserves its layout up front (docs/trace-format.md): the
//! header, two index tables of 512 KiB each, and a whole chunk (128 KiB by
//! default) for every thread, of which a short-lived thread writes a few
//! records. Where the file system reserved those pages (tmpfs fills the
//! tables in at start; a chunk claim writes its last byte), a tiny run
//! costs megabytes. Once the process that wrote a trace is gone,
//! [`release_unwritten`] gives the pages that hold nothing back to the file
//! system (`fallocate(FALLOC_FL_PUNCH_HOLE)`): every table page that is all
//! zeros and the unwritten tail of every chunk. Offsets do not move, so the
//! file reads exactly as before (a hole reads as zeros); its size on disk
//! (`du`) becomes what was written, its length (`ls -l`) the layout's up
//! to the last chunk claimed (the collector extends the file over a whole
//! window of chunks at a time: what lies past that chunk is cut off).
//! A file system without hole punching leaves the file as it was.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::Path;

use contend_trace::format::{self, header};

/// Page granularity of the holes, bytes.
const PAGE: u64 = 4096;

/// What [`release_unwritten`] did to one trace.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Released {
    /// Bytes on disk before (`st_blocks` × 512).
    pub before_bytes: u64,
    /// Bytes on disk after.
    pub after_bytes: u64,
}

/// Releases the unwritten pages of the lock trace at `path` when
/// `ended(pid)` says the process that wrote it (pid from the header) has
/// ended: a page released while a thread writes to it would lose that
/// write. `Ok(None)` when the process runs on, or the file is too short to
/// name one.
///
/// # Errors
/// The file cannot be opened or read, or is not a lock trace. A file
/// system that cannot punch holes (`EOPNOTSUPP`) is not an error: the
/// file stays as it was.
pub fn release_unwritten(
    path: &Path,
    ended: impl FnOnce(u32) -> bool,
) -> io::Result<Option<Released>> {
    let file = OpenOptions::new().read(true).write(true).open(path)?;
    let mut pid = [0u8; 4];
    if file.read_exact_at(&mut pid, header::PID as u64).is_err() || !ended(u32::from_ne_bytes(pid))
    {
        return Ok(None);
    }
    let before_bytes = file.metadata()?.blocks() * 512;
    let mut head = vec![0u8; format::HEADER_SIZE];
    file.read_exact_at(&mut head, 0)?;
    if &head[..8] != format::MAGIC {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "not a lock trace (magic)",
        ));
    }
    let u32_at = |o: usize| u64::from(u32::from_ne_bytes(head[o..o + 4].try_into().unwrap()));
    let u64_at = |o: usize| u64::from_ne_bytes(head[o..o + 8].try_into().unwrap());
    let chunk_size = u32_at(header::CHUNK_SIZE);
    let chunks = u32_at(header::CHUNKS_CLAIMED);
    let data_offset = u64_at(header::DATA_OFFSET);
    let tables_start = u64_at(header::OBJECT_TABLE_OFFSET).min(u64_at(header::SITE_TABLE_OFFSET));
    let len = file.metadata()?.len();
    if chunk_size == 0 || chunk_size % PAGE != 0 || data_offset % PAGE != 0 || tables_start == 0 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "not a lock trace (chunk size or offsets)",
        ));
    }

    let mut punch = Puncher::new(&file);
    // The index tables: every page that is all zeros.
    let mut page = vec![0u8; PAGE as usize];
    let mut off = tables_start.next_multiple_of(PAGE);
    while off + PAGE <= data_offset.min(len) {
        file.read_exact_at(&mut page, off)?;
        if page.iter().all(|&b| b == 0) {
            punch.hole(off, PAGE)?;
        }
        off += PAGE;
    }
    // Each chunk: the pages after its last non-zero byte.
    let mut chunk = vec![0u8; chunk_size as usize];
    for i in 0..chunks {
        let start = data_offset + i * chunk_size;
        if start + chunk_size > len {
            break;
        }
        let used = used_bytes(&file, start, chunk_size, &mut chunk)?;
        let keep = used.next_multiple_of(PAGE);
        if keep < chunk_size {
            punch.hole(start + keep, chunk_size - keep)?;
        }
    }
    punch.flush()?;
    // The collector extends the file over a whole window of chunks when it
    // maps one (collector/src/collector.c, "Mapping windows"): past the
    // last chunk claimed it holds nothing.
    let end = data_offset + chunks * chunk_size;
    if len > end && chunks > 0 {
        file.set_len(end)?;
    }
    let after_bytes = file.metadata()?.blocks() * 512;
    Ok(Some(Released {
        before_bytes,
        after_bytes,
    }))
}

/// The length of `[start, start + len)` of `file` up to its last non-zero
/// byte (0 when it holds none), reading only its data regions: a hole
/// reads as zeros, and most of a short-lived thread's chunk is one (a
/// program that started 8,192 threads left 1 GiB of chunks, nearly all
/// holes, which reading whole took the launcher about a second after the
/// run; docs/benchmarks.md). The regions come from `lseek` with
/// `SEEK_DATA`/`SEEK_HOLE`; a file system without them reports the whole
/// range as data, which is then read as before. `buf` holds at least `len`
/// bytes.
fn used_bytes(file: &File, start: u64, len: u64, buf: &mut [u8]) -> io::Result<u64> {
    let end = start + len;
    let mut regions = Vec::new();
    let mut at = start;
    while at < end {
        let Some(data) = seek(file, at, libc::SEEK_DATA)? else {
            break; // no data after `at`
        };
        if data >= end {
            break;
        }
        // (past `data` whatever the file system says: the loop moves on)
        let to = seek(file, data, libc::SEEK_HOLE)?
            .map_or(end, |h| h.min(end))
            .max(data + 1);
        regions.push((data, to));
        at = to;
    }
    for &(from, to) in regions.iter().rev() {
        let part = &mut buf[..(to - from) as usize];
        file.read_exact_at(part, from)?;
        if let Some(p) = last_nonzero(part) {
            return Ok(from - start + p as u64 + 1);
        }
    }
    Ok(0)
}

/// `lseek(fd, offset, whence)`: `None` for ENXIO (no data, or no hole,
/// at or after `offset`).
fn seek(file: &File, offset: u64, whence: libc::c_int) -> io::Result<Option<u64>> {
    // SAFETY: lseek on a descriptor we own; it moves only the file offset,
    // which this module never uses (it reads with pread).
    let r = unsafe { libc::lseek(file.as_raw_fd(), offset as libc::off_t, whence) };
    if r >= 0 {
        return Ok(Some(r as u64));
    }
    let e = io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::ENXIO) {
        Ok(None)
    } else {
        Err(e)
    }
}

/// Index of the last non-zero byte of `b`, eight bytes at a time.
fn last_nonzero(b: &[u8]) -> Option<usize> {
    let words = b.len() / 8;
    if let Some(p) = b[words * 8..].iter().rposition(|&x| x != 0) {
        return Some(words * 8 + p);
    }
    let (whole, _) = b[..words * 8].as_chunks::<8>();
    let w = whole.iter().rposition(|w| u64::from_ne_bytes(*w) != 0)?;
    let p = whole[w].iter().rposition(|&x| x != 0)?;
    Some(w * 8 + p)
}

/// Joins adjacent holes into one `fallocate` call; stops quietly on a file
/// system without hole punching.
struct Puncher<'a> {
    file: &'a File,
    pending: Option<(u64, u64)>,
    unsupported: bool,
}

impl<'a> Puncher<'a> {
    fn new(file: &'a File) -> Puncher<'a> {
        Puncher {
            file,
            pending: None,
            unsupported: false,
        }
    }

    fn hole(&mut self, off: u64, len: u64) -> io::Result<()> {
        match self.pending {
            Some((o, l)) if o + l == off => self.pending = Some((o, l + len)),
            _ => {
                self.flush()?;
                self.pending = Some((off, len));
            }
        }
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        let Some((off, len)) = self.pending.take() else {
            return Ok(());
        };
        if self.unsupported {
            return Ok(());
        }
        // SAFETY: fallocate on an open descriptor we own; no memory is
        // passed.
        let rc = unsafe {
            libc::fallocate(
                self.file.as_raw_fd(),
                libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
                off as libc::off_t,
                len as libc::off_t,
            )
        };
        if rc != 0 {
            let e = io::Error::last_os_error();
            match e.raw_os_error() {
                Some(libc::EOPNOTSUPP) | Some(libc::ENOSYS) => self.unsupported = true,
                _ => return Err(e),
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use contend_trace::TraceBuilder;

    /// A trace of 16 KiB chunks holding one thread's lock + unlock pair
    /// (process 1000, the builder's).
    fn one_pair_trace() -> Vec<u8> {
        let op = |ticks, phase| contend_trace::RawOp {
            ticks,
            object: 0x1000,
            site: 0x40_0000,
            primitive: contend_trace::Primitive::Mutex,
            phase,
            stack: contend_trace::NO_STACK,
        };
        let b = TraceBuilder {
            chunk_size: 16384,
            threads: vec![(
                7,
                vec![
                    op(10, contend_trace::Phase::Immediate),
                    op(30, contend_trace::Phase::Release),
                ],
            )],
            ..TraceBuilder::default()
        };
        b.to_bytes()
    }

    #[test]
    fn a_released_trace_reads_the_same_and_takes_less_room() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("1.ctrace");
        std::fs::write(&p, one_pair_trace()).unwrap();
        // make the layout's pages real, as tmpfs and the chunk claims do
        let f = OpenOptions::new().write(true).open(&p).unwrap();
        let len = f.metadata().unwrap().len();
        // SAFETY: fallocate on our own descriptor.
        unsafe { libc::fallocate(f.as_raw_fd(), libc::FALLOC_FL_KEEP_SIZE, 0, len as _) };
        let before = contend_trace::LockTrace::open(&p).unwrap();
        assert_eq!(release_unwritten(&p, |pid| pid != 1000).unwrap(), None);
        let r = release_unwritten(&p, |pid| pid == 1000).unwrap().unwrap();
        let after = contend_trace::LockTrace::open(&p).unwrap();
        assert_eq!(std::fs::metadata(&p).unwrap().len(), len, "length kept");
        assert_eq!(before.op_count(), after.op_count());
        assert_eq!(before.thread_ops(0), after.thread_ops(0));
        assert!(
            r.after_bytes < r.before_bytes || r.before_bytes < 64 * 1024,
            "{r:?}"
        );
    }

    /// A file extended over a whole window of chunks (as the collector
    /// extends it when it maps one) ends, once released, at its last
    /// claimed chunk, and reads the same.
    #[test]
    fn the_window_past_the_last_claimed_chunk_is_cut_off() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("1.ctrace");
        let bytes = one_pair_trace();
        std::fs::write(&p, &bytes).unwrap();
        let f = OpenOptions::new().write(true).open(&p).unwrap();
        // the window's last page, 31 chunks further
        f.write_all_at(&[0u8; 4096], bytes.len() as u64 + 31 * 16384 - 4096)
            .unwrap();
        let before = contend_trace::LockTrace::open(&p).unwrap();
        release_unwritten(&p, |_| true).unwrap().unwrap();
        assert_eq!(std::fs::metadata(&p).unwrap().len(), bytes.len() as u64);
        let after = contend_trace::LockTrace::open(&p).unwrap();
        assert_eq!(before.thread_ops(0), after.thread_ops(0));
        assert_eq!(after.thread_ops(0).len(), 2);
    }

    /// The last non-zero byte, found eight bytes at a time, against the
    /// byte-by-byte answer, for every position and length around the word
    /// boundaries.
    #[test]
    fn the_last_nonzero_byte_is_found_a_word_at_a_time() {
        for len in 0..40usize {
            assert_eq!(last_nonzero(&vec![0u8; len]), None);
            for at in 0..len {
                for other in [None, Some(0), Some(at / 2)] {
                    let mut b = vec![0u8; len];
                    b[at] = 0x80;
                    if let Some(o) = other {
                        b[o] = 1;
                    }
                    assert_eq!(
                        last_nonzero(&b),
                        b.iter().rposition(|&x| x != 0),
                        "len {len}, at {at}"
                    );
                }
            }
        }
    }

    /// A sparse file with two written places: the used length of a range
    /// is up to its last non-zero byte, whichever data region holds it, 0
    /// for a range of holes and zeros only.
    #[test]
    fn the_used_length_reads_the_data_regions() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("sparse");
        let f = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&p)
            .unwrap();
        f.set_len(1 << 20).unwrap();
        f.write_all_at(&[0u8; 8192], 0).unwrap(); // zeros, as a claim writes
        f.write_all_at(b"x", 5000).unwrap();
        f.write_all_at(b"y", 300_000).unwrap();
        f.write_all_at(&[0u8; 4096], 600_000).unwrap();
        let mut buf = vec![0u8; 1 << 20];
        assert_eq!(used_bytes(&f, 0, 1 << 20, &mut buf).unwrap(), 300_001);
        assert_eq!(used_bytes(&f, 0, 200_000, &mut buf).unwrap(), 5001);
        assert_eq!(used_bytes(&f, 8192, 4096, &mut buf).unwrap(), 0);
        assert_eq!(used_bytes(&f, 4096, 4096, &mut buf).unwrap(), 905);
        assert_eq!(used_bytes(&f, 400_000, 600_000, &mut buf).unwrap(), 0);
        assert_eq!(used_bytes(&f, 299_000, 4096, &mut buf).unwrap(), 1001);
    }

    #[test]
    fn another_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.ctrace");
        std::fs::write(&p, vec![0u8; 8192]).unwrap();
        assert_eq!(
            release_unwritten(&p, |_| true).unwrap_err().kind(),
            io::ErrorKind::InvalidData
        );
    }
}
