//! The chunk preparer of `contend record`: a launcher thread that makes
//! the next chunks of every lock trace ready before the target's threads
//! claim them, so that a new thread's first claim does not write zeros.
//!
//! A chunk claim in the lock collector (collector/src/collector.c,
//! `map_new_chunk`) writes the first [`PREPARED_HEAD_BYTES`] of its chunk
//! with zeros before it maps it: that puts the pages in the page cache
//! (the mapping then faults them in without the file system's read and
//! write faults) and turns a full file system into `ENOSPC` at the claim
//! instead of `SIGBUS` at a store. It is most of the collector's fixed
//! cost per thread: 22 of 24 µs per short thread on the KVM guest of
//! docs/benchmarks.md ("Chunks prepared by the launcher"), and it grows
//! the perturbation with the thread count (Huang et al., HaLock, PACT
//! 2012, Figure 6).
//!
//! The preparer does the same work ahead, outside the target: for each
//! trace in `<recording>/locks` whose process has claimed
//! [`MIN_CLAIMS`] chunks or more, it keeps the chunks after the last one
//! claimed prepared, `ahead` of them (from [`AHEAD_MIN`], doubled up to
//! [`AHEAD_MAX`] whenever the claims used up half of them between two
//! looks). Preparing a chunk never changes the file's data, so it is safe
//! while any thread claims and writes any chunk: `fallocate` (mode 0)
//! extends the file over the chunks and never shrinks it or writes over
//! data, and `MADV_POPULATE_WRITE` on the preparer's own shared mapping
//! faults the head's pages in for writing (page cache, blocks reserved)
//! without storing anything. Only then is the header's `chunks_prepared`
//! raised (a release store); a claim of a lower index skips its zeros and
//! counts itself in `claims_prepared`. Where a step fails (a file system
//! without `fallocate`, a kernel without `MADV_POPULATE_WRITE`, a full
//! disk) that trace is left to the collector's own path, as without the
//! preparer; and it prepares nothing that would leave the file system
//! with less than [`KEEP_FREE_BYTES`] free.
//!
//! The thread looks at the traces every [`POLL_MIN`] while chunks are
//! being claimed and backs off to [`POLL_MAX`] when none are, so an idle
//! target costs it a wake-up every 200 ms. `CONTEND_PREPARE_CHUNKS=0`
//! turns it off (the collector then writes its own zeros).

use std::collections::HashSet;
use std::fs::{File, OpenOptions};
use std::os::fd::{AsFd, AsRawFd};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::Duration;

use contend_trace::format::{self, header, PREPARED_HEAD_BYTES};
use contend_trace::meta::ChunkPrepMeta;

use crate::shared_map::SharedMap;

/// A trace is prepared once its process has claimed this many chunks (a
/// process with one thread that records, or none, costs the preparer
/// nothing).
pub const MIN_CLAIMS: u32 = 2;
/// Chunks kept prepared after the last claimed one, at first.
pub const AHEAD_MIN: u32 = 32;
/// The most chunks kept prepared ahead (16 MiB of page cache with
/// [`PREPARED_HEAD_BYTES`] per chunk).
pub const AHEAD_MAX: u32 = 1024;
/// Shortest time between two looks at the traces.
pub const POLL_MIN: Duration = Duration::from_millis(2);
/// Longest time between two looks (no chunk claimed since the last).
pub const POLL_MAX: Duration = Duration::from_millis(200);
/// Chunks mapped and faulted in per `mmap` of the preparer.
const BATCH: u32 = 64;
/// Free space the preparer leaves to the claims themselves: it prepares
/// nothing that would leave the file system with less.
pub const KEEP_FREE_BYTES: u64 = 64 << 20;
/// The most traces looked after at once (each holds a descriptor and a
/// mapping of its header); the traces of processes that ended are let
/// go.
pub const MAX_TRACES: usize = 256;

/// Whether the launcher prepares chunks (`CONTEND_PREPARE_CHUNKS`, on
/// unless set to `0`).
pub fn enabled() -> bool {
    std::env::var_os("CONTEND_PREPARE_CHUNKS").is_none_or(|v| v != "0")
}

/// The running preparer; [`ChunkPreparer::stop`] ends it.
pub struct ChunkPreparer {
    stop: mpsc::Sender<()>,
    thread: JoinHandle<ChunkPrepMeta>,
}

impl ChunkPreparer {
    /// Starts the preparer's thread on the lock traces that appear in
    /// `locks_dir`.
    ///
    /// # Errors
    /// The thread cannot be started.
    pub fn start(locks_dir: PathBuf) -> std::io::Result<ChunkPreparer> {
        let (stop, rx) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("contend-chunks".into())
            .spawn(move || run(&locks_dir, &rx))?;
        Ok(ChunkPreparer { stop, thread })
    }

    /// Stops the thread (after the target has ended) and returns what it
    /// did, with the claims that took a prepared chunk read from the
    /// traces' headers.
    pub fn stop(self) -> ChunkPrepMeta {
        let _ = self.stop.send(());
        self.thread.join().unwrap_or_else(|_| ChunkPrepMeta {
            error: Some("the chunk preparer's thread panicked".into()),
            ..ChunkPrepMeta::default()
        })
    }
}

fn run(locks_dir: &Path, rx: &mpsc::Receiver<()>) -> ChunkPrepMeta {
    let mut stats = ChunkPrepMeta::default();
    let mut traces: Vec<Trace> = Vec::new();
    // names looked at already (kept, or not a trace we can prepare)
    let mut known: HashSet<PathBuf> = HashSet::new();
    let mut poll = POLL_MIN;
    let mut looks: u64 = 0;
    loop {
        // The directory is listed at every look while it has no trace yet
        // (the target's collector creates it at start-up), then at every
        // eighth: a process forked later is found within a few looks, and
        // the traces of processes that have ended are let go.
        if traces.is_empty() || looks & 7 == 0 {
            traces.retain(|t| {
                let alive = t.process_alive();
                if !alive {
                    add_finished(&mut stats, t);
                }
                alive
            });
            find_traces(locks_dir, &mut known, &mut traces, &mut stats);
        }
        looks += 1;
        let mut claimed = false;
        for t in traces.iter_mut().filter(|t| !t.given_up) {
            claimed |= t.look(&mut stats);
        }
        poll = if claimed {
            (poll / 2).max(POLL_MIN)
        } else {
            (poll * 2).min(POLL_MAX)
        };
        match rx.recv_timeout(poll) {
            Err(RecvTimeoutError::Timeout) => {}
            Ok(()) | Err(RecvTimeoutError::Disconnected) => break,
        }
    }
    for t in &traces {
        add_finished(&mut stats, t);
    }
    stats.cpu_ns = crate::host::thread_cpu_ns();
    stats
}

/// Adds what a trace's preparation came to to `stats` (read from its
/// header as it is let go).
fn add_finished(stats: &mut ChunkPrepMeta, t: &Trace) {
    stats.traces += 1;
    stats.claims_prepared += u64::from(t.field(header::CLAIMS_PREPARED).load(Ordering::Relaxed));
    if let Some(why) = &t.note {
        stats.notes.push(format!("{}: {why}", t.path.display()));
    }
}

/// Opens the `*.ctrace` files of `dir` not seen before whose header is
/// complete (a trace whose collector is still writing its header is
/// looked at again at the next listing), at most [`MAX_TRACES`] at once.
fn find_traces(
    dir: &Path,
    known: &mut HashSet<PathBuf>,
    traces: &mut Vec<Trace>,
    stats: &mut ChunkPrepMeta,
) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let path = e.path();
        if path.extension().is_none_or(|x| x != "ctrace") || known.contains(&path) {
            continue;
        }
        if traces.len() >= MAX_TRACES {
            if stats.error.is_none() {
                stats.error = Some(format!(
                    "more than {MAX_TRACES} traced processes at once: the later ones' chunks were not prepared"
                ));
            }
            return;
        }
        match Trace::open(&path) {
            Ok(Some(t)) => {
                known.insert(path);
                traces.push(t);
            }
            Ok(None) => {} // header not finished yet
            Err(_) => {
                known.insert(path);
            }
        }
    }
}

/// One lock trace being prepared.
struct Trace {
    path: PathBuf,
    file: File,
    /// The header page, mapped shared and writable.
    header: SharedMap,
    /// The traced process (header `pid`).
    pid: u32,
    chunk_size: u64,
    data_offset: u64,
    /// Chunks with a lower index are prepared (or were claimed before).
    prepared: u32,
    /// Chunks the file covers through the preparer's `fallocate`.
    covered: u32,
    ahead: u32,
    claimed_before: u32,
    given_up: bool,
    note: Option<String>,
}

impl Trace {
    /// The trace at `path` if its header is complete and of this
    /// collector's layout; `Ok(None)` while the header is unfinished.
    fn open(path: &Path) -> std::io::Result<Option<Trace>> {
        let file = OpenOptions::new().read(true).write(true).open(path)?;
        let mut head = vec![0u8; format::HEADER_SIZE];
        if file.read_exact_at(&mut head, 0).is_err() || &head[..8] != format::MAGIC {
            return Ok(None);
        }
        let u32_at = |o: usize| u32::from_ne_bytes(head[o..o + 4].try_into().unwrap());
        let u64_at = |o: usize| u64::from_ne_bytes(head[o..o + 8].try_into().unwrap());
        let chunk_size = u64::from(u32_at(header::CHUNK_SIZE));
        let data_offset = u64_at(header::DATA_OFFSET);
        if u32_at(header::HEADER_SIZE) as usize != format::HEADER_SIZE
            || !chunk_size.is_power_of_two()
            || chunk_size < PREPARED_HEAD_BYTES
            || data_offset % 4096 != 0
            || data_offset < format::HEADER_SIZE as u64
        {
            return Err(std::io::Error::other("not a lock trace of this layout"));
        }
        // the file is at least one header long: its header was read
        let header_map = SharedMap::new(file.as_fd(), 0, format::HEADER_SIZE)?;
        let mut t = Trace {
            path: path.to_path_buf(),
            file,
            header: header_map,
            pid: u32_at(header::PID),
            chunk_size,
            data_offset,
            prepared: 0,
            covered: 0,
            ahead: AHEAD_MIN,
            claimed_before: 0,
            given_up: false,
            note: None,
        };
        t.prepared = t.field(header::CHUNKS_PREPARED).load(Ordering::Acquire);
        Ok(Some(t))
    }

    /// Whether the traced process still runs (a pid reused meanwhile
    /// counts as running: the trace is then let go at the end).
    fn process_alive(&self) -> bool {
        // SAFETY: signal 0 only checks that the process exists.
        let r = unsafe { libc::kill(self.pid as libc::pid_t, 0) };
        r == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
    }

    /// The `u32` header field at byte offset `off`, shared with the
    /// target's collector.
    fn field(&self, off: usize) -> &AtomicU32 {
        // SAFETY: `off` is a 4-byte aligned offset inside the mapped
        // header page, which lives as long as self; the collector accesses
        // these fields atomically too.
        unsafe { &*self.header.base().add(off).cast::<AtomicU32>() }
    }

    /// One look: prepares chunks when the claims came close to the
    /// prepared ones. Returns whether chunks were claimed since the last
    /// look.
    fn look(&mut self, stats: &mut ChunkPrepMeta) -> bool {
        let claimed = self.field(header::CHUNKS_CLAIMED).load(Ordering::Relaxed);
        let moved = claimed != self.claimed_before;
        self.claimed_before = claimed;
        if claimed < MIN_CLAIMS {
            return moved;
        }
        // claims used up half of the margin since the last look: more
        if self.prepared > 0 && claimed.saturating_add(self.ahead / 2) > self.prepared {
            self.ahead = (self.ahead * 2).min(AHEAD_MAX);
        }
        let target = claimed.saturating_add(self.ahead);
        if self.prepared >= target {
            return moved;
        }
        let from = self.prepared.max(claimed);
        if !self.room_for(target - from) {
            // the last of a nearly full file system is left to the claims
            if self.note.is_none() {
                self.note = Some(format!(
                    "chunks not prepared while the file system had less than {} MiB free",
                    KEEP_FREE_BYTES >> 20
                ));
            }
            return moved;
        }
        match self.prepare(from, target) {
            Ok(()) => {
                stats.chunks_prepared += u64::from(target - from);
                self.prepared = target;
                self.field(header::CHUNKS_PREPARED)
                    .store(target, Ordering::Release);
            }
            Err(e) => {
                self.given_up = true;
                self.note = Some(format!("chunks not prepared: {e}"));
            }
        }
        moved
    }

    /// Whether the file system keeps [`KEEP_FREE_BYTES`] free after `n`
    /// more prepared chunk heads (and one page of extension). Preparing
    /// ahead takes space before the claims that will use it; on a nearly
    /// full file system that space is left to the claims themselves.
    fn room_for(&self, n: u32) -> bool {
        let mut st = std::mem::MaybeUninit::<libc::statvfs>::zeroed();
        // SAFETY: fstatvfs fills the struct for our descriptor.
        if unsafe { libc::fstatvfs(self.file.as_raw_fd(), st.as_mut_ptr()) } != 0 {
            return false;
        }
        // SAFETY: zero-initialised and filled by fstatvfs.
        let st = unsafe { st.assume_init() };
        let free = st.f_bavail.saturating_mul(st.f_frsize);
        let need = u64::from(n) * PREPARED_HEAD_BYTES + 4096;
        free >= need.saturating_add(KEEP_FREE_BYTES)
    }

    /// Prepares chunks `from..to`: the file extended over them, their
    /// heads faulted in for writing. Changes no data of the file.
    fn prepare(&mut self, from: u32, to: u32) -> std::io::Result<()> {
        if to > self.covered {
            // one extension for this look and the next margin's worth
            // (a fallocate was the largest part of a look that prepared
            // a few chunks)
            let cover = to.saturating_add(self.ahead);
            let end = self.data_offset + u64::from(cover) * self.chunk_size;
            // SAFETY: fallocate on our descriptor; mode 0 only allocates
            // (it never shrinks the file or changes its data).
            let r = unsafe { libc::fallocate(self.file.as_raw_fd(), 0, (end - 4096) as i64, 4096) };
            if r != 0 {
                return Err(std::io::Error::last_os_error());
            }
            self.covered = cover;
        }
        let mut first = from;
        while first < to {
            let n = (to - first).min(BATCH);
            let off = self.data_offset + u64::from(first) * self.chunk_size;
            let len = u64::from(n) * self.chunk_size;
            populate_heads(&self.file, off, len, self.chunk_size)?;
            first += n;
        }
        Ok(())
    }
}

/// Maps `[off, off + len)` of `file` (whole chunks of `chunk_size`) and
/// faults the first [`PREPARED_HEAD_BYTES`] of each chunk in for writing
/// (`MADV_POPULATE_WRITE`, Linux 5.14), then unmaps it.
fn populate_heads(file: &File, off: u64, len: u64, chunk_size: u64) -> std::io::Result<()> {
    let len = usize::try_from(len).map_err(std::io::Error::other)?;
    // a range the file covers (extended by fallocate before); nothing is
    // stored through the mapping
    let map = SharedMap::new(file.as_fd(), off, len)?;
    // Without read-ahead: a fault on a hole of the file would otherwise
    // read (zero-fill) the whole chunk and more into the page cache, not
    // just the head (most of the preparer's time in a first version).
    // SAFETY: advice on the mapping made above.
    unsafe { libc::madvise(map.base().cast(), len, libc::MADV_RANDOM) };
    for at in (0..len).step_by(chunk_size as usize) {
        // SAFETY: inside the mapping made above.
        let r = unsafe {
            libc::madvise(
                map.base().add(at).cast(),
                PREPARED_HEAD_BYTES as usize,
                libc::MADV_POPULATE_WRITE,
            )
        };
        if r != 0 {
            let e = std::io::Error::last_os_error();
            // MADV_POPULATE_WRITE says EFAULT where the file system
            // could not give the pages (a full disk)
            return Err(if e.raw_os_error() == Some(libc::EFAULT) {
                std::io::Error::other("the file system could not provide the pages (full?)")
            } else {
                e
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const CHUNK: u64 = 65536;
    const DATA: u64 = 8192;

    /// A trace file with a complete header: `claimed` chunks claimed, each
    /// claimed chunk's head filled with its index + 1.
    fn fake_trace(dir: &Path, claimed: u32) -> PathBuf {
        let path = dir.join("1.ctrace");
        let mut head = vec![0u8; format::HEADER_SIZE];
        head[..8].copy_from_slice(format::MAGIC);
        let put32 =
            |h: &mut Vec<u8>, o: usize, v: u32| h[o..o + 4].copy_from_slice(&v.to_ne_bytes());
        put32(&mut head, header::HEADER_SIZE, format::HEADER_SIZE as u32);
        put32(&mut head, header::CHUNK_SIZE, CHUNK as u32);
        put32(&mut head, header::CHUNKS_CLAIMED, claimed);
        put32(&mut head, header::PID, std::process::id());
        head[header::DATA_OFFSET..header::DATA_OFFSET + 8].copy_from_slice(&DATA.to_ne_bytes());
        let f = File::create(&path).unwrap();
        f.write_all_at(&head, 0).unwrap();
        for i in 0..claimed {
            f.write_all_at(&vec![i as u8 + 1; 4096], DATA + u64::from(i) * CHUNK)
                .unwrap();
        }
        path
    }

    fn header_u32(path: &Path, off: usize) -> u32 {
        let mut b = [0u8; 4];
        File::open(path)
            .unwrap()
            .read_exact_at(&mut b, off as u64)
            .unwrap();
        u32::from_ne_bytes(b)
    }

    #[test]
    fn prepares_ahead_of_the_claims_without_changing_data() {
        let dir = tempfile::tempdir().unwrap();
        let path = fake_trace(dir.path(), 3);
        let mut t = Trace::open(&path).unwrap().unwrap();
        // a claim of chunk 3 that wrote records after the claimed count
        // was read: preparing must leave them
        let f = File::options().write(true).open(&path).unwrap();
        f.write_all_at(&[0xab; 100], DATA + 3 * CHUNK + 64).unwrap();
        let mut stats = ChunkPrepMeta::default();
        assert!(t.look(&mut stats), "claims moved from 0 to 3");
        let target = 3 + AHEAD_MIN;
        assert_eq!(header_u32(&path, header::CHUNKS_PREPARED), target);
        assert_eq!(stats.chunks_prepared, u64::from(AHEAD_MIN));
        let len = std::fs::metadata(&path).unwrap().len();
        assert!(
            len >= DATA + u64::from(target) * CHUNK,
            "file covers the chunks: {len}"
        );
        let file = File::open(&path).unwrap();
        let mut buf = vec![0u8; 4096];
        for i in 0..3u64 {
            file.read_exact_at(&mut buf, DATA + i * CHUNK).unwrap();
            assert!(buf.iter().all(|&b| b == i as u8 + 1), "chunk {i} kept");
        }
        file.read_exact_at(&mut buf[..100], DATA + 3 * CHUNK + 64)
            .unwrap();
        assert!(
            buf[..100].iter().all(|&b| b == 0xab),
            "chunk 3's records kept"
        );
        file.read_exact_at(&mut buf, DATA + 10 * CHUNK).unwrap();
        assert!(
            buf.iter().all(|&b| b == 0),
            "a prepared chunk reads as zeros"
        );
        // no claim since: nothing more to do, and no claims reported
        assert!(!t.look(&mut stats));
        assert_eq!(stats.chunks_prepared, u64::from(AHEAD_MIN));
    }

    #[test]
    fn the_margin_doubles_when_claims_use_half_of_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = fake_trace(dir.path(), 2);
        let mut t = Trace::open(&path).unwrap().unwrap();
        let mut stats = ChunkPrepMeta::default();
        t.look(&mut stats);
        assert_eq!(t.prepared, 2 + AHEAD_MIN);
        // 20 more claims: more than half of the 32 ahead were used
        t.field(header::CHUNKS_CLAIMED).store(22, Ordering::Relaxed);
        assert!(t.look(&mut stats));
        assert_eq!(t.ahead, 2 * AHEAD_MIN);
        assert_eq!(t.prepared, 22 + 2 * AHEAD_MIN);
        assert_eq!(
            header_u32(&path, header::CHUNKS_PREPARED),
            22 + 2 * AHEAD_MIN
        );
        // 10 more: within the margin, prepared up to 32 + 64 again
        t.field(header::CHUNKS_CLAIMED).store(32, Ordering::Relaxed);
        t.look(&mut stats);
        assert_eq!(t.ahead, 2 * AHEAD_MIN);
        assert_eq!(t.prepared, 32 + 2 * AHEAD_MIN);
    }

    #[test]
    fn the_trace_of_an_ended_process_is_let_go() {
        let dir = tempfile::tempdir().unwrap();
        let path = fake_trace(dir.path(), 3);
        let t = Trace::open(&path).unwrap().unwrap();
        assert!(t.process_alive(), "this test's own pid");
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let ended = child.id();
        child.wait().unwrap();
        let f = File::options().write(true).open(&path).unwrap();
        f.write_all_at(&ended.to_ne_bytes(), header::PID as u64)
            .unwrap();
        let t = Trace::open(&path).unwrap().unwrap();
        assert!(!t.process_alive(), "pid {ended} has ended and was reaped");
        let mut stats = ChunkPrepMeta::default();
        t.field(header::CLAIMS_PREPARED).store(7, Ordering::Relaxed);
        add_finished(&mut stats, &t);
        assert_eq!((stats.traces, stats.claims_prepared), (1, 7));
    }

    #[test]
    fn a_process_with_one_chunk_or_an_unfinished_header_is_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = fake_trace(dir.path(), 1);
        let mut t = Trace::open(&path).unwrap().unwrap();
        let mut stats = ChunkPrepMeta::default();
        t.look(&mut stats);
        assert_eq!(t.prepared, 0);
        assert_eq!(header_u32(&path, header::CHUNKS_PREPARED), 0);
        let unfinished = dir.path().join("2.ctrace");
        File::create(&unfinished)
            .unwrap()
            .write_all_at(&[0u8; 4096], 0)
            .unwrap();
        assert!(Trace::open(&unfinished).unwrap().is_none());
    }
}
