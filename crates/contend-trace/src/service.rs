//! The service-time sample file `service.csamp`, version 1: layout
//! constants, a writer and a reader.
//!
//! `contend record` samples, every interval (default 10 ms), the service
//! time (CPU time) of every thread of the target and of its descendant
//! processes, and the system's run-queue length (Venter 2016,
//! Section 3.2.1.1, "Gathering service time information"). This module is
//! the one definition of the file; `docs/trace-format.md`, "Service-time
//! samples", is the prose specification.
//!
//! All integers are little-endian. The file is a 48-byte header followed
//! by tick records, each a 24-byte tick header and `entries` 32-byte
//! entries:
//!
//! ```text
//! header  magic "CNTDSAMP" | u32 version | u32 header size (48)
//!         | u64 start_ns | u64 interval_ns | u32 cpus | u32 clk_tck
//!         | u32 kernel_tick_ns | u32 reserved (0)
//! tick    u32 tag "TICK" | u32 entries | u64 monotonic_ns
//!         | u32 run_queue | u32 flags
//! entry   u32 pid | u32 tid | u64 run_ns | u64 wait_ns | u32 slices | u32 flags
//! ```
//!
//! Counters in entries are *cumulative* since the thread started. An entry
//! is written when the sampler first sees a thread (flag [`ENTRY_NEW`]) and
//! afterwards only when one of its counters changed: a thread missing from a
//! tick did not run since its previous entry (or has ended).
//!
//! The writer appends whole ticks, one batch per `write(2)`, so a launcher
//! killed at any moment leaves a file whose every complete tick is
//! readable; the reader
//! ([`SampleFile::read`]) keeps the complete ticks and reports a cut-off
//! tail in [`SampleFile::truncated`] instead of failing.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::TraceError;

/// File name of the samples inside a recording directory.
pub const FILE_NAME: &str = "service.csamp";
/// File magic, the first 8 bytes.
pub const MAGIC: &[u8; 8] = b"CNTDSAMP";
/// Format version this module writes and reads.
pub const VERSION: u32 = 1;
/// Size of the file header in bytes (a reader skips a larger header of a
/// later minor revision).
pub const HEADER_SIZE: usize = 48;
/// Tag opening every tick record, `"TICK"` as a little-endian u32.
pub const TICK_TAG: u32 = u32::from_le_bytes(*b"TICK");
/// Size of a tick header in bytes.
pub const TICK_SIZE: usize = 24;
/// Size of an entry in bytes.
pub const ENTRY_SIZE: usize = 32;
/// Largest number of entries a tick may claim; a larger count marks a
/// damaged tail (no process has a million threads).
pub const MAX_ENTRIES: u32 = 1 << 20;

/// Tick flag: the last tick, taken after the target ended (it may still
/// read the target's zombie main thread).
pub const TICK_FINAL: u32 = 1;
/// Tick flag: the tick was made after it was due, from the timestamps of
/// the scheduler events (the sampler slept through it: every thread was
/// followed by events, `contend-record`'s sampler); its entries are the
/// threads' figures at the tick's time, but the run queue was not read
/// (`run_queue` is 0 and is no sample).
pub const TICK_FROM_EVENTS: u32 = 2;
/// Entry flag: the counters come from `/proc/<pid>/task/<tid>/stat`
/// (`utime + stime` in clock ticks, converted to ns with the header's
/// `clk_tck`) because `schedstat` could not be read; `wait_ns` and `slices`
/// are then 0 and `run_ns` has the kernel's tick resolution.
pub const ENTRY_FROM_STAT: u32 = 1;
/// Entry flag: the first entry of this thread (of this incarnation of the
/// tid): its counters count from the thread's start, not from an earlier
/// entry.
pub const ENTRY_NEW: u32 = 2;
/// Entry flag: the counters come from the kernel's scheduler events
/// (context switches and wake-ups through `perf_event_open`, the sampler's
/// `sched-events` source) instead of `schedstat`: the same three figures
/// (run ns, run-queue wait ns, time slices), counted from the thread's
/// start, without `schedstat`'s kernel-tick lag.
pub const ENTRY_FROM_EVENTS: u32 = 4;

/// The file header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Header {
    /// CLOCK_MONOTONIC when the target was started, ns: the start of the
    /// first sampling interval.
    pub start_ns: u64,
    /// The sampling interval asked for, ns.
    pub interval_ns: u64,
    /// CPUs the target may run on (its affinity mask when sampling began;
    /// the online CPUs when that could not be read). The `n` of the
    /// modelled number of active threads (Venter 2016, Listing 3.4).
    pub cpus: u32,
    /// Clock ticks per second of `stat`'s `utime`/`stime` (`USER_HZ`,
    /// usually 100) used for [`ENTRY_FROM_STAT`] entries.
    pub clk_tck: u32,
    /// The kernel's scheduler tick, ns (the resolution of
    /// `CLOCK_MONOTONIC_COARSE`: 4 000 000 with `HZ=250`); 0 when unknown.
    /// A running thread's `schedstat` run time is brought up to date only
    /// at ticks and context switches, so the sampler takes its ticks in
    /// the middle between two kernel ticks (see `docs/trace-format.md`).
    pub kernel_tick_ns: u32,
}

/// The fixed part of one tick record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TickHeader {
    /// CLOCK_MONOTONIC when the tick was taken (before reading the
    /// threads), ns.
    pub monotonic_ns: u64,
    /// System run-queue length: runnable tasks on all CPUs (the kernel's
    /// `nr_running()`, as in `procs_running` of `/proc/stat`), including
    /// the sampling thread itself.
    pub run_queue: u32,
    /// [`TICK_FINAL`], [`TICK_FROM_EVENTS`] or 0.
    pub flags: u32,
}

impl TickHeader {
    /// The run-queue length read at this tick, tasks; `None` for a tick
    /// made from the scheduler events after it was due
    /// ([`TICK_FROM_EVENTS`]), at which nothing was read.
    pub fn run_queue_read(&self) -> Option<u32> {
        (self.flags & TICK_FROM_EVENTS == 0).then_some(self.run_queue)
    }
}

/// One thread's cumulative counters at a tick.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Entry {
    /// Process id (thread-group id).
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// Time spent running on a CPU since the thread started, ns
    /// (`schedstat` field 1, or `stat` utime + stime).
    pub run_ns: u64,
    /// Time spent runnable but waiting on a run queue, ns (`schedstat`
    /// field 2; 0 from `stat`).
    pub wait_ns: u64,
    /// Time slices run on a CPU (`schedstat` field 3, saturated at
    /// `u32::MAX`; 0 from `stat`).
    pub slices: u32,
    /// [`ENTRY_FROM_STAT`], [`ENTRY_NEW`].
    pub flags: u32,
}

/// One tick as read back.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Tick {
    /// The tick header.
    pub header: TickHeader,
    /// Threads whose counters changed since their previous entry, or that
    /// are new.
    pub entries: Vec<Entry>,
}

/// How the end of a sample file was cut off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Truncation {
    /// File offset of the first byte not read, bytes.
    pub offset: u64,
    /// Bytes after it that do not form a complete tick.
    pub bytes: u64,
}

impl std::fmt::Display for Truncation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the samples end in an incomplete or damaged tick at offset {} ({} byte(s) ignored); \
             the sampler was probably killed",
            self.offset, self.bytes
        )
    }
}

/// A sample file, read.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SampleFile {
    /// The file header.
    pub header: Header,
    /// Complete ticks, in file (= time) order.
    pub ticks: Vec<Tick>,
    /// Set when the file ends in an incomplete or damaged tick.
    pub truncated: Option<Truncation>,
}

fn u32_at(b: &[u8], off: usize) -> u32 {
    u32::from_le_bytes(b[off..off + 4].try_into().expect("4 bytes"))
}

fn u64_at(b: &[u8], off: usize) -> u64 {
    u64::from_le_bytes(b[off..off + 8].try_into().expect("8 bytes"))
}

/// Encodes the file header.
pub fn encode_header(h: &Header) -> [u8; HEADER_SIZE] {
    let mut b = [0u8; HEADER_SIZE];
    b[0..8].copy_from_slice(MAGIC);
    b[8..12].copy_from_slice(&VERSION.to_le_bytes());
    b[12..16].copy_from_slice(&(HEADER_SIZE as u32).to_le_bytes());
    b[16..24].copy_from_slice(&h.start_ns.to_le_bytes());
    b[24..32].copy_from_slice(&h.interval_ns.to_le_bytes());
    b[32..36].copy_from_slice(&h.cpus.to_le_bytes());
    b[36..40].copy_from_slice(&h.clk_tck.to_le_bytes());
    b[40..44].copy_from_slice(&h.kernel_tick_ns.to_le_bytes());
    b
}

/// Appends one encoded tick (header and entries) to `out`.
pub fn encode_tick(out: &mut Vec<u8>, tick: &TickHeader, entries: &[Entry]) {
    out.reserve(TICK_SIZE + entries.len() * ENTRY_SIZE);
    out.extend_from_slice(&TICK_TAG.to_le_bytes());
    out.extend_from_slice(&(entries.len() as u32).to_le_bytes());
    out.extend_from_slice(&tick.monotonic_ns.to_le_bytes());
    out.extend_from_slice(&tick.run_queue.to_le_bytes());
    out.extend_from_slice(&tick.flags.to_le_bytes());
    for e in entries {
        out.extend_from_slice(&e.pid.to_le_bytes());
        out.extend_from_slice(&e.tid.to_le_bytes());
        out.extend_from_slice(&e.run_ns.to_le_bytes());
        out.extend_from_slice(&e.wait_ns.to_le_bytes());
        out.extend_from_slice(&e.slices.to_le_bytes());
        out.extend_from_slice(&e.flags.to_le_bytes());
    }
}

/// Writes a sample file: the header at creation, then ticks, either one
/// per [`SampleWriter::write_tick`] or batched with
/// [`SampleWriter::push_tick`] and [`SampleWriter::flush`]; each write is a
/// single `write(2)` of whole ticks, so the file always ends at a tick
/// boundary unless the writer dies mid-call.
#[derive(Debug)]
pub struct SampleWriter {
    path: PathBuf,
    file: File,
    buf: Vec<u8>,
}

impl SampleWriter {
    /// Creates (or truncates) `path` and writes the header.
    ///
    /// Errors: [`TraceError::Io`] naming the file.
    pub fn create(path: &Path, header: &Header) -> Result<SampleWriter, TraceError> {
        let io = |source| TraceError::Io {
            path: path.to_path_buf(),
            source,
        };
        let mut file = File::create(path).map_err(io)?;
        file.write_all(&encode_header(header)).map_err(io)?;
        Ok(SampleWriter {
            path: path.to_path_buf(),
            file,
            buf: Vec::with_capacity(4096),
        })
    }

    /// The file being written.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Encodes one tick into the buffer without writing it; [`flush`]
    /// writes what is buffered.
    ///
    /// [`flush`]: SampleWriter::flush
    pub fn push_tick(&mut self, tick: &TickHeader, entries: &[Entry]) {
        encode_tick(&mut self.buf, tick, entries);
    }

    /// Bytes encoded by [`SampleWriter::push_tick`] and not yet written.
    pub fn buffered(&self) -> usize {
        self.buf.len()
    }

    /// Writes the buffered ticks with one `write(2)` (whole ticks only,
    /// so the file stays readable if the writer dies between calls).
    ///
    /// Errors: [`TraceError::Io`] naming the file (disk full, …); the
    /// buffer is then dropped.
    pub fn flush(&mut self) -> Result<(), TraceError> {
        let r = self.file.write_all(&self.buf);
        self.buf.clear();
        r.map_err(|source| TraceError::Io {
            path: self.path.clone(),
            source,
        })
    }

    /// Appends one tick and writes it at once (after anything buffered).
    ///
    /// Errors: [`TraceError::Io`] naming the file (disk full, …).
    pub fn write_tick(&mut self, tick: &TickHeader, entries: &[Entry]) -> Result<(), TraceError> {
        self.push_tick(tick, entries);
        self.flush()
    }
}

/// Why bytes are not a sample file this version of contend can read (its
/// header is wrong; [`SampleFile::read`] names the file).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SampleFileError {
    /// Shorter than the start of the header, or without the [`MAGIC`].
    #[error(
        "not a contend service-time sample file (no {} magic)",
        String::from_utf8_lossy(MAGIC)
    )]
    NotASampleFile,
    /// A format version other than [`VERSION`].
    #[error(
        "sample file version {version} is not supported (this contend reads version {VERSION})"
    )]
    Version {
        /// The version in the file.
        version: u32,
    },
    /// The header claims fewer than [`HEADER_SIZE`] bytes.
    #[error("header size {header_size} is smaller than {HEADER_SIZE} bytes")]
    HeaderTooSmall {
        /// The header size in the file.
        header_size: usize,
    },
    /// The file is shorter than its header.
    #[error("the file ends inside its {header_size}-byte header ({len} bytes)")]
    HeaderCut {
        /// The header size in the file.
        header_size: usize,
        /// The length of the file.
        len: usize,
    },
}

impl SampleFile {
    /// Makes the first tick a baseline: the threads it holds count from it,
    /// not from their start. For an attach recording, whose first tick reads
    /// threads that ran long before the attach, so that what they ran before
    /// is not counted as service in the first interval. Each thread's
    /// counters at the first tick are subtracted from its later entries (up
    /// to a reuse of its tid, flagged [`ENTRY_NEW`]), and set to 0 there.
    pub fn count_from_first_tick(&mut self) {
        let Some((first, rest)) = self.ticks.split_first_mut() else {
            return;
        };
        let mut base: std::collections::HashMap<(u32, u32), (u64, u64, u32)> =
            std::collections::HashMap::new();
        for e in &mut first.entries {
            base.insert((e.pid, e.tid), (e.run_ns, e.wait_ns, e.slices));
            (e.run_ns, e.wait_ns, e.slices) = (0, 0, 0);
        }
        for tick in rest {
            for e in &mut tick.entries {
                let key = (e.pid, e.tid);
                if e.flags & ENTRY_NEW != 0 {
                    base.remove(&key);
                } else if let Some(b) = base.get(&key) {
                    e.run_ns = e.run_ns.saturating_sub(b.0);
                    e.wait_ns = e.wait_ns.saturating_sub(b.1);
                    e.slices = e.slices.saturating_sub(b.2);
                }
            }
        }
    }

    /// Reads the sample file at `path`.
    ///
    /// Errors: the file cannot be read ([`TraceError::Io`]), or its header
    /// is not that of a version-1 sample file ([`TraceError::Format`]);
    /// both name the file. A cut-off or damaged tail is not an error: the
    /// complete ticks before it are returned and [`SampleFile::truncated`]
    /// says where the damage begins.
    pub fn read(path: &Path) -> Result<SampleFile, TraceError> {
        let bytes = std::fs::read(path).map_err(|source| TraceError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        SampleFile::parse(&bytes).map_err(|problem| TraceError::format(path, problem.to_string()))
    }

    /// Decodes a sample file held in memory.
    ///
    /// Errors: a bad header ([`SampleFileError`]); a damaged tail is not an
    /// error (see [`SampleFile::read`]).
    pub fn parse(b: &[u8]) -> Result<SampleFile, SampleFileError> {
        if b.len() < 16 || &b[0..8] != MAGIC {
            return Err(SampleFileError::NotASampleFile);
        }
        let version = u32_at(b, 8);
        if version != VERSION {
            return Err(SampleFileError::Version { version });
        }
        let header_size = u32_at(b, 12) as usize;
        if header_size < HEADER_SIZE {
            return Err(SampleFileError::HeaderTooSmall { header_size });
        }
        if b.len() < header_size {
            return Err(SampleFileError::HeaderCut {
                header_size,
                len: b.len(),
            });
        }
        let header = Header {
            start_ns: u64_at(b, 16),
            interval_ns: u64_at(b, 24),
            cpus: u32_at(b, 32),
            clk_tck: u32_at(b, 36),
            kernel_tick_ns: u32_at(b, 40),
        };
        let mut file = SampleFile {
            header,
            ..SampleFile::default()
        };
        let mut off = header_size;
        while off < b.len() {
            let rest = &b[off..];
            let complete = rest.len() >= TICK_SIZE && u32_at(rest, 0) == TICK_TAG && {
                let n = u32_at(rest, 4);
                n <= MAX_ENTRIES && rest.len() >= TICK_SIZE + n as usize * ENTRY_SIZE
            };
            if !complete {
                file.truncated = Some(Truncation {
                    offset: off as u64,
                    bytes: rest.len() as u64,
                });
                break;
            }
            let n = u32_at(rest, 4) as usize;
            let header = TickHeader {
                monotonic_ns: u64_at(rest, 8),
                run_queue: u32_at(rest, 16),
                flags: u32_at(rest, 20),
            };
            let entries = rest[TICK_SIZE..TICK_SIZE + n * ENTRY_SIZE]
                .chunks_exact(ENTRY_SIZE)
                .map(|e| Entry {
                    pid: u32_at(e, 0),
                    tid: u32_at(e, 4),
                    run_ns: u64_at(e, 8),
                    wait_ns: u64_at(e, 16),
                    slices: u32_at(e, 24),
                    flags: u32_at(e, 28),
                })
                .collect();
            file.ticks.push(Tick { header, entries });
            off += TICK_SIZE + n * ENTRY_SIZE;
        }
        Ok(file)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(tid: u32, run_ns: u64) -> Entry {
        Entry {
            pid: 10,
            tid,
            run_ns,
            wait_ns: run_ns / 2,
            slices: 3,
            flags: ENTRY_NEW,
        }
    }

    fn header() -> Header {
        Header {
            start_ns: 1_000,
            interval_ns: 10_000_000,
            cpus: 2,
            clk_tck: 100,
            kernel_tick_ns: 4_000_000,
        }
    }

    #[test]
    fn round_trip_through_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE_NAME);
        let mut w = SampleWriter::create(&path, &header()).unwrap();
        let t1 = TickHeader {
            monotonic_ns: 2_000,
            run_queue: 3,
            flags: 0,
        };
        let t2 = TickHeader {
            monotonic_ns: 3_000,
            run_queue: 1,
            flags: TICK_FINAL,
        };
        w.write_tick(&t1, &[entry(10, 5), entry(11, 7)]).unwrap();
        w.write_tick(&t2, &[]).unwrap();
        drop(w);
        let f = SampleFile::read(&path).unwrap();
        assert_eq!(f.header, header());
        assert_eq!(f.truncated, None);
        assert_eq!(f.ticks.len(), 2);
        assert_eq!(f.ticks[0].header, t1);
        assert_eq!(f.ticks[0].entries, vec![entry(10, 5), entry(11, 7)]);
        assert_eq!(f.ticks[1].header, t2);
        assert!(f.ticks[1].entries.is_empty());
        assert_eq!(
            std::fs::metadata(&path).unwrap().len() as usize,
            HEADER_SIZE + 2 * TICK_SIZE + 2 * ENTRY_SIZE
        );
    }

    #[test]
    fn truncated_tail_keeps_complete_ticks() {
        let mut b = encode_header(&header()).to_vec();
        let t = TickHeader {
            monotonic_ns: 5,
            run_queue: 1,
            flags: 0,
        };
        encode_tick(&mut b, &t, &[entry(1, 1)]);
        let complete = b.len();
        encode_tick(&mut b, &t, &[entry(1, 2), entry(2, 3)]);
        for cut in complete..b.len() {
            let f = SampleFile::parse(&b[..cut]).unwrap();
            assert_eq!(f.ticks.len(), 1, "cut at {cut}");
            let expect = (cut > complete).then_some(Truncation {
                offset: complete as u64,
                bytes: (cut - complete) as u64,
            });
            assert_eq!(f.truncated, expect, "cut at {cut}");
        }
        assert_eq!(SampleFile::parse(&b).unwrap().ticks.len(), 2);
    }

    #[test]
    fn garbage_tail_and_absurd_counts_are_damage_not_panics() {
        let mut b = encode_header(&header()).to_vec();
        b.extend_from_slice(&TICK_TAG.to_le_bytes());
        b.extend_from_slice(&u32::MAX.to_le_bytes());
        b.extend_from_slice(&[0u8; 64]);
        let f = SampleFile::parse(&b).unwrap();
        assert!(f.ticks.is_empty());
        assert_eq!(f.truncated.unwrap().offset, HEADER_SIZE as u64);
        let mut b = encode_header(&header()).to_vec();
        b.extend_from_slice(&[0xffu8; 100]);
        assert!(SampleFile::parse(&b).unwrap().truncated.is_some());
    }

    #[test]
    fn bad_headers_are_errors_naming_the_file() {
        assert_eq!(
            SampleFile::parse(b"").unwrap_err(),
            SampleFileError::NotASampleFile
        );
        assert_eq!(
            SampleFile::parse(b"CNTDLOCK\x01\0\0\0\x30\0\0\0").unwrap_err(),
            SampleFileError::NotASampleFile
        );
        let mut b = encode_header(&header()).to_vec();
        b[8] = 9;
        assert_eq!(
            SampleFile::parse(&b).unwrap_err(),
            SampleFileError::Version { version: 9 }
        );
        assert!(SampleFile::parse(&b)
            .unwrap_err()
            .to_string()
            .contains("version 9"));
        let mut b = encode_header(&header()).to_vec();
        b[12] = 16;
        assert_eq!(
            SampleFile::parse(&b).unwrap_err(),
            SampleFileError::HeaderTooSmall { header_size: 16 }
        );
        let b = encode_header(&header());
        assert_eq!(
            SampleFile::parse(&b[..20]).unwrap_err(),
            SampleFileError::HeaderCut {
                header_size: HEADER_SIZE,
                len: 20
            }
        );
        assert_eq!(
            SampleFile::parse(&b[..20]).unwrap_err().to_string(),
            "the file ends inside its 48-byte header (20 bytes)"
        );

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bad.csamp");
        std::fs::write(&path, b"hello").unwrap();
        let e = SampleFile::read(&path).unwrap_err().to_string();
        assert!(e.contains("bad.csamp"), "{e}");
        let e = SampleFile::read(&dir.path().join("missing.csamp"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("missing.csamp"), "{e}");
    }
}
