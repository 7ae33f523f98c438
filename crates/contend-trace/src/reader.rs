//! Reader of per-process lock traces (`locks/<pid>.ctrace`).
//!
//! The reader is written for damaged input: a trace of a process that was
//! killed, crashed or truncated on disk is read as far as it goes and every
//! gap is described in [`LockTrace::damage`]; only a file that is not a lock
//! trace at all (bad magic, version, endianness, shorter than its header)
//! is an error.
//!
//! Trace files are read with positioned reads (`pread`), never mapped: a
//! trace written to a file system that filled up is a sparse file with
//! holes, and touching a hole of a tmpfs file through a mapping must
//! allocate a page, which fails there with `SIGBUS`; `pread` returns zeros
//! for holes without allocating. Opening scans every chunk once, on all
//! CPUs (chunks are independent; their results are joined in file order,
//! which numbers the call stacks); records are decoded again chunk by
//! chunk, on demand, through one reusable buffer, so memory does not grow
//! with the size of the trace.

use rayon::prelude::*;
use std::collections::BTreeMap;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::clock::CalibrationPoint;
use crate::format::{self, calibration as cal, chunk as ch, header as h, Phase, Primitive};
use crate::TraceError;

/// One decoded operation record of one thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawOp {
    /// Trace clock ticks (convert with a [`crate::ClockFit`]).
    pub ticks: u64,
    /// Address of the synchronisation object.
    pub object: u64,
    /// Return address of the call (the call site).
    pub site: u64,
    /// Primitive operated on.
    pub primitive: Primitive,
    /// What happened.
    pub phase: Phase,
    /// Index into [`LockTrace::stacks`], or [`NO_STACK`].
    pub stack: u32,
}

/// One futex record (version 2, [`format::TAG_FUTEX`]): a `syscall(SYS_futex,
/// …)` or `syscall(SYS_futex_waitv, …)` of the program, before or after the
/// call (trace_format.h, "Futex records").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FutexOp {
    /// Trace clock ticks (convert with a [`crate::ClockFit`]).
    pub ticks: u64,
    /// Address of the futex word (of the waiter array for `futex_waitv`).
    pub word: u64,
    /// Return address of the `syscall()` call (the call site).
    pub site: u64,
    /// [`Phase::Request`] (a wait began), [`Phase::Acquired`] (it returned
    /// ≥ 0), [`Phase::Busy`] (it timed out), [`Phase::Release`] (a wake
    /// began), [`Phase::Released`] (it returned), [`Phase::Error`] (the
    /// wait or wake failed; `value` is errno).
    pub phase: Phase,
    /// Futex command ([`format::futex`]`::CMD_*`).
    pub cmd: u8,
    /// `FUTEX_PRIVATE_FLAG` was set.
    pub private: bool,
    /// After the call: its return value (waiters woken, for wakes) or,
    /// with [`Phase::Error`], errno; 0 before it.
    pub value: i32,
    /// Index into [`LockTrace::stacks`], or [`NO_STACK`].
    pub stack: u32,
}

/// Length of [`ThreadTrace::omp_by_event`]: one more than the largest
/// OpenMP event code ([`format::omp::PARALLEL_END`]).
pub const OMP_EVENTS: usize = format::omp::PARALLEL_END as usize + 1;

/// One OpenMP record (version 2, [`format::TAG_OMP`]), written by the
/// collector's OMPT tool (trace_format.h, "OpenMP records").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OmpOp {
    /// Trace clock ticks (convert with a [`crate::ClockFit`]).
    pub ticks: u64,
    /// The OMPT wait id (mutex events) or the parallel region instance.
    pub object: u64,
    /// The OMPT code pointer (the user's code after the construct), or the
    /// return address into the runtime.
    pub site: u64,
    /// Event ([`format::omp`]`::*`).
    pub event: u8,
    /// OMPT kind: `ompt_mutex_t` (mutex events), `ompt_sync_region_t`
    /// (sync waits), else 0.
    pub kind: u8,
    /// Thread number in the team (task begin), requested team size
    /// (parallel begin), else 0.
    pub value: u32,
}

/// How a lock object came to be known ([`Creation::how`]; trace_format.h,
/// "Creation records").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CreationKind {
    /// An init function (`pthread_mutex_init`, `sem_init`, …) returned 0.
    Init,
    /// Its first recorded operation: no init call of the process named it
    /// before (statically initialised, or initialised out of sight).
    FirstUse,
}

/// One creation record (version 2, [`format::TAG_CREATE`]): where a lock
/// object was initialised or first used (mutrace's "where the lock was
/// created").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Creation {
    /// Trace clock ticks.
    pub ticks: u64,
    /// Address of the object.
    pub object: u64,
    /// Return address of the init call or of the first operation.
    pub site: u64,
    /// Init call or first use.
    pub how: CreationKind,
    /// Primitive the init function creates (`None` for a first use: see
    /// the object's operations).
    pub primitive: Option<Primitive>,
    /// Kernel thread id of the creating thread.
    pub tid: u32,
    /// Index into [`LockTrace::stacks`] (the creation's call stack), or
    /// [`NO_STACK`].
    pub stack: u32,
}

/// Value of [`RawOp::stack`] when no call stack was recorded.
pub const NO_STACK: u32 = u32::MAX;

/// Table slot handed to the callback of [`LockTrace::for_each_op`] for a
/// record that carries its addresses itself (a wide record), and for a
/// narrow record whose index lies outside its table or names an empty slot
/// (counted as [`Damage::DanglingIndex`]; its address is then 0). Any other
/// slot is a valid index into [`LockTrace::object_table`] or
/// [`LockTrace::site_table`] and names a non-zero address.
pub const NO_SLOT: u32 = u32::MAX;

/// Indices in records are 16 bits: no slot past this is reachable.
const TABLE_REACH: usize = 1 << 16;

/// An index table padded to every 16-bit index: entries past the table's
/// own slots are 0 (empty), so one load and one compare validate an index.
type Table = Box<[u64; TABLE_REACH]>;

/// One thread of a trace: where its records are. The operations are decoded
/// on demand by [`LockTrace::ops`] and [`LockTrace::for_each_op`], one chunk
/// at a time, so a trace of any size costs no memory beyond one chunk.
#[derive(Debug, Clone, Default)]
pub struct ThreadTrace {
    /// Kernel thread id.
    pub tid: u32,
    /// Number of operation records.
    pub op_count: usize,
    /// The thread's chunks, in sequence order.
    chunks: Vec<Span>,
    /// Bytes of its records (chunk headers not included).
    pub record_bytes: u64,
    /// (Version 2) CPU time, ns, the thread spent in the collector's slow
    /// path (the sum over its chunks; 0 in version 1 traces).
    pub collector_ns: u64,
    /// (Version 2, light mode) its uncontended acquisitions, counted per
    /// object and call site instead of recorded; empty otherwise.
    pub counted: Vec<Counted>,
    /// (With [`format::FLAG_SAMPLED_COST`]) the collector's in-situ timing
    /// of its own work on this thread's records (the sum over its record
    /// chunks' [`format::chunk::COST_SAMPLES`]); zero otherwise.
    pub record_samples: CostSamples,
    /// The same for its counted acquisitions (its COUNTS chunks).
    pub count_samples: CostSamples,
    /// Its records (lock operation, futex and OpenMP records) in chunks
    /// flagged [`format::CHUNK_SINGLE_THREADED`]: made while the process
    /// had one thread (0 in older traces).
    pub single_threaded_records: u64,
    /// Its counted acquisitions in COUNTS chunks flagged
    /// [`format::CHUNK_SINGLE_THREADED`] (0 in older traces).
    pub single_threaded_counted: u64,
    /// Ticks of its first and last record (0, 0 without records).
    pub span_ticks: (u64, u64),
    /// (Version 2) how many futex records it has (one per futex system
    /// call's start and end). Like the OpenMP records they are not held in
    /// memory; read them, in time order, with [`LockTrace::futex_ops`].
    pub futex_count: usize,
    /// Ticks of its last futex record, if it has any.
    pub futex_last_ticks: Option<u64>,
    /// (Version 2) its OpenMP records by event: element `e` counts the
    /// records of event `e` ([`format::omp`]`::*`, 1 to 9; element 0 is
    /// unused; all of them: [`ThreadTrace::omp_count`]). The records are
    /// not held in memory (tens of bytes each, several per `critical`
    /// section entered: they were half the memory of an OpenMP report);
    /// read them, in time order, with [`LockTrace::omp_ops`].
    pub omp_by_event: [usize; OMP_EVENTS],
    /// Its name as the kernel had it (comm, at most 15 bytes, lossy
    /// UTF-8), from the last of its chunks that holds one
    /// ([`format::chunk::THREAD_NAME`]); `None` in traces written before
    /// the collector recorded names.
    pub name: Option<String>,
}

impl ThreadTrace {
    /// How many record chunks it wrote (COUNTS chunks not included): 1
    /// for a thread whose records fit in its first chunk.
    pub fn record_chunks(&self) -> usize {
        self.chunks.len()
    }

    /// (Version 2) how many OpenMP records it has, of every event.
    pub fn omp_count(&self) -> usize {
        self.omp_by_event.iter().sum()
    }
}

/// The thread name stored in a chunk header, `None` when the field is
/// empty (zero).
fn chunk_thread_name(c: &[u8]) -> Option<String> {
    let raw = c.get(ch::THREAD_NAME..ch::THREAD_NAME + ch::THREAD_NAME_LEN)?;
    let len = raw.iter().position(|&b| b == 0).unwrap_or(raw.len());
    (len > 0).then(|| String::from_utf8_lossy(&raw[..len]).into_owned())
}

/// Uncontended acquisitions of one object at one call site by one thread,
/// counted (light mode) instead of recorded: acquisitions that succeeded at
/// once, without their times.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counted {
    /// Address of the synchronisation object; [`format::count::BY_SITE`]
    /// for acquisitions of locks counted by their call site alone (see
    /// [`Counted::by_site`]).
    pub object: u64,
    /// Return address of the acquiring call.
    pub site: u64,
    /// Primitive acquired (mode, for rwlocks).
    pub primitive: Primitive,
    /// Number of acquisitions.
    pub count: u64,
}

impl Counted {
    /// True when these acquisitions were counted by call site without
    /// their locks: the thread's count table already kept
    /// [`format::count::LOCK_ENTRIES`] (lock, call site) entries.
    pub fn by_site(&self) -> bool {
        self.object == format::count::BY_SITE
    }
}

/// The part of one chunk that holds records: the chunk header and the
/// records the scan at open decoded, up to (not including) the zero word or
/// bad record that ended them. Decoding again reads exactly these bytes, so
/// it yields exactly the operations counted at open, even while a live
/// writer adds more to the chunk.
#[derive(Debug, Clone, Copy, Default)]
struct Span {
    /// File offset of the chunk.
    offset: u64,
    /// Bytes from the chunk start to the end of its last decoded record.
    len: usize,
    /// Its lock operation records.
    ops: u32,
    /// The thread's pending stack after the chunk, as [`LockTrace::for_each_op`]
    /// tracks it (the stack a STACK record gives the next operation), for a
    /// chunk without lock operations, which it then skips: the index of the
    /// stack of its last STACK record when no futex, OpenMP or creation
    /// record follows it, [`NO_STACK`] when one does, [`PENDING_KEPT`]
    /// when it has none of these records.
    pending_after: u32,
}

/// [`Span::pending_after`] of a chunk that leaves the pending stack as it was.
const PENDING_KEPT: u32 = u32::MAX - 1;

/// Where the bytes of a trace come from: the open file, read with
/// positioned reads, or a copy in memory ([`LockTrace::decode`]).
enum Source {
    File(File),
    Memory(Vec<u8>),
}

impl std::fmt::Debug for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::File(file) => write!(f, "{file:?}"),
            Source::Memory(v) => write!(f, "<{} bytes in memory>", v.len()),
        }
    }
}

impl Source {
    /// Reads into `buf` from `offset` until it is full or the file ends;
    /// returns the number of bytes read (less than `buf.len()` only at the
    /// end of the file).
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        match self {
            Source::File(file) => {
                let mut done = 0;
                while done < buf.len() {
                    // Past the largest offset there is nothing to read.
                    let Some(at) = offset.checked_add(done as u64) else {
                        break;
                    };
                    match file.read_at(&mut buf[done..], at) {
                        Ok(0) => break,
                        Ok(n) => done += n,
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                        Err(e) => return Err(e),
                    }
                }
                Ok(done)
            }
            Source::Memory(v) => {
                let start = usize::try_from(offset).unwrap_or(usize::MAX).min(v.len());
                let n = buf.len().min(v.len() - start);
                buf[..n].copy_from_slice(&v[start..start + n]);
                Ok(n)
            }
        }
    }

    /// The bytes of `span`: borrowed from memory, or read into `buf` (which
    /// is reused from chunk to chunk). A read that fails or comes back short
    /// (the file was truncated since it was opened) gives what could be
    /// read, possibly nothing: decoding then stops early, it never fails.
    fn span<'s>(&'s self, span: Span, buf: &'s mut Vec<u8>) -> &'s [u8] {
        match self {
            Source::Memory(v) => {
                let start = usize::try_from(span.offset).unwrap_or(usize::MAX);
                v.get(start..start.saturating_add(span.len))
                    .unwrap_or_default()
            }
            Source::File(_) => {
                if buf.len() < span.len {
                    buf.resize(span.len, 0);
                }
                let n = self.read_at(&mut buf[..span.len], span.offset).unwrap_or(0);
                &buf[..n]
            }
        }
    }
}

/// A gap or defect found while reading; the rest of the trace is still used.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Damage {
    /// The process never ran its exit path (killed, crashed, `_exit()`).
    NotFinished,
    /// The file is shorter than its claimed chunks (cut short, e.g. by a
    /// full file system, or copied while incomplete): `lost_chunks` are
    /// gone.
    FileTruncated {
        /// Chunks claimed in the header but not (wholly) in the file.
        lost_chunks: u32,
    },
    /// Chunks claimed but never started (the thread died in between, or
    /// the file system was full: holes of a sparse file read as zeros).
    UnstartedChunks {
        /// How many.
        count: u32,
    },
    /// A thread's chunk sequence has holes.
    SequenceGap {
        /// Thread id.
        tid: u32,
        /// Number of missing chunks.
        missing: u32,
    },
    /// A record with an unknown tag or cut short; the chunk is read up to it.
    BadRecord {
        /// Byte offset in the file.
        offset: u64,
        /// What was wrong.
        problem: String,
    },
    /// Part of the file could not be read (an I/O error); what lies there
    /// is left out.
    Unreadable {
        /// Byte offset in the file.
        offset: u64,
        /// What was left out (the index tables, a chunk).
        what: String,
        /// The error.
        error: String,
    },
    /// The file system holding the trace has no room left: recording may
    /// have stopped early on some threads (the collector stops recording on
    /// a thread that gets no room), so the trace may be cut short without
    /// any other sign in the file.
    FileSystemFull,
    /// Narrow records whose object or site index lies outside its table
    /// (the header's slot count) or names an empty slot; their object or
    /// site is unknown (address 0, slot [`NO_SLOT`]).
    DanglingIndex {
        /// How many records.
        count: u64,
    },
}

impl std::fmt::Display for Damage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Damage::NotFinished => write!(
                f,
                "the process did not finish normally (killed, crashed or left through _exit()); the trace ends at its last complete record"
            ),
            Damage::FileTruncated { lost_chunks } => write!(
                f,
                "the file is truncated: it ends before {lost_chunks} chunk(s) its header claims, which are lost (it may have been cut short, e.g. by a full file system, or copied while incomplete)"
            ),
            Damage::UnstartedChunks { count } => write!(
                f,
                "{count} chunk(s) were claimed but never started (the thread died in between, or the trace was cut short, e.g. by a full file system)"
            ),
            Damage::FileSystemFull => write!(
                f,
                "the file system holding the trace is full: recording may have stopped early on some threads (the collector stops recording on a thread that gets no room), so the trace may have been cut short by the full file system"
            ),
            Damage::Unreadable {
                offset,
                what,
                error,
            } => write!(
                f,
                "could not read {what} at byte {offset} ({error}); it is left out"
            ),
            Damage::SequenceGap { tid, missing } => {
                write!(f, "thread {tid} is missing {missing} chunk(s)")
            }
            Damage::BadRecord { offset, problem } => {
                write!(f, "bad record at byte {offset}: {problem}; the rest of that chunk is skipped")
            }
            Damage::DanglingIndex { count } => {
                write!(
                    f,
                    "{count} record(s) refer to index-table slots that are empty or outside the table (damaged header or tables); their lock or call site is unknown"
                )
            }
        }
    }
}

/// A calibration as stored in the header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub struct HeaderCalibration {
    /// Trace clock ticks.
    pub ticks: u64,
    /// CLOCK_MONOTONIC, ns.
    pub monotonic_ns: u64,
    /// CLOCK_REALTIME, ns since the Unix epoch.
    pub realtime_ns: u64,
}

/// Sampled windows of the collector's own work (docs/trace-format.md,
/// "Recording cost"): one in [`format::SAMPLE_EVERY`] operations of a
/// thread timed in situ, two clock readings around the storing of its
/// first record (or around its count).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CostSamples {
    /// Windows kept.
    pub count: u64,
    /// Their sum, trace-clock ticks.
    pub ticks: u64,
}

impl CostSamples {
    /// Decodes a chunk header's `cost_samples` word (bits 0..39 the sum,
    /// 40..63 the number).
    pub fn from_word(w: u64) -> Self {
        CostSamples {
            count: w >> format::SAMPLE_SUM_BITS,
            ticks: w & format::SAMPLE_SUM_MASK,
        }
    }

    /// Adds `other`'s windows.
    pub fn add(&mut self, other: CostSamples) {
        self.count += other.count;
        self.ticks += other.ticks;
    }
}

/// A decoded lock trace of one process.
#[derive(Debug, Clone)]
pub struct LockTrace {
    /// The file read.
    pub path: PathBuf,
    /// Format version of the file ([`format::OLDEST_VERSION`] to
    /// [`format::VERSION`]).
    pub version: u32,
    /// (Version 2) CPU time, ns, the collector spent in its slow path, all
    /// threads, calibration included (0 in version 1).
    pub collector_ns: u64,
    /// (Version 2) calibrated time one timed record adds to the program,
    /// ps; 0 when not calibrated (version 1 traces).
    pub cost_record_ps: u32,
    /// (Version 2, light mode) calibrated time one counted uncontended lock
    /// + unlock pair adds, ps; 0 when not measured.
    pub cost_count_ps: u32,
    /// (Version 2) time the collector's start-up calibration took, ns.
    pub calibration_ns: u32,
    /// (With [`format::FLAG_SAMPLED_COST`]) mean sampled window of the
    /// calibration's records, ps: the part of `cost_record_ps` the in-situ
    /// timing sees on hot caches; 0 = none.
    pub cost_window_record_ps: u32,
    /// The same for the light-mode calibration's counted pairs, ps.
    pub cost_window_count_ps: u32,
    /// Calibrated time one timed record adds once the process has more
    /// than one thread (glibc's and the collector's atomic paths), ps; 0
    /// in older traces, where `cost_record_ps` stands for every record.
    /// `cost_record_ps` is then the single-threaded paths' figure, for the
    /// records of chunks flagged [`format::CHUNK_SINGLE_THREADED`].
    pub cost_record_mt_ps: u32,
    /// The same for `cost_count_ps` (light mode), ps.
    pub cost_count_mt_ps: u32,
    /// Process id.
    pub pid: u32,
    /// Parent process id.
    pub ppid: u32,
    /// Clock kind ([`format::CLOCK_TSC`] or [`format::CLOCK_MONOTONIC`]).
    pub clock: u16,
    /// Header flags (`format::FLAG_*`).
    pub flags: u64,
    /// Executable path as the process saw it.
    pub exe_path: String,
    /// Command line (possibly truncated).
    pub cmdline: Vec<String>,
    /// Calibration at collector start.
    pub start: HeaderCalibration,
    /// Calibration at exit, if the process finished.
    pub end: Option<HeaderCalibration>,
    /// Launcher's TSC frequency, Hz (0 = unknown).
    pub ticks_per_second: u64,
    /// Stacks were recorded every N-th operation (0 = none).
    pub stack_every: u32,
    /// Threads, ordered by their first record.
    pub threads: Vec<ThreadTrace>,
    /// Call stacks referenced by [`RawOp::stack`]: return addresses, innermost first.
    pub stacks: Vec<Vec<u64>>,
    /// File offset of each STACK record → index in `stacks`.
    stack_at: BTreeMap<u64, u32>,
    /// (Version 2) Creation records of every thread: where lock objects
    /// were initialised or first used, in file order (empty in older
    /// traces).
    pub creations: Vec<Creation>,
    /// Object table (slot → address), padded with empty slots.
    objects: Table,
    /// Number of slots of the object table that records can reach.
    object_slots: usize,
    /// Site table (slot → return address), padded with empty slots.
    sites: Table,
    /// Number of slots of the site table that records can reach.
    site_slots: usize,
    /// The file (shared by clones).
    source: Arc<Source>,
    /// Every calibration point in the file (header and chunk headers).
    pub calibration_points: Vec<CalibrationPoint>,
    /// Defects found; empty for a complete, clean trace.
    pub damage: Vec<Damage>,
}

impl LockTrace {
    /// True when the process ran its exit path.
    pub fn finished(&self) -> bool {
        self.flags & format::FLAG_FINISHED != 0
    }

    /// Total number of operation records.
    pub fn op_count(&self) -> usize {
        self.threads.iter().map(|t| t.op_count).sum()
    }

    /// True for a light recording ([`format::FLAG_LIGHT`]): uncontended
    /// acquisitions are in [`ThreadTrace::counted`], not in the records.
    pub fn light(&self) -> bool {
        self.flags & format::FLAG_LIGHT != 0
    }

    /// True when the collector timed its own work in situ
    /// ([`format::FLAG_SAMPLED_COST`]): the threads' `record_samples` and
    /// `count_samples` are valid.
    pub fn sampled_cost(&self) -> bool {
        self.flags & format::FLAG_SAMPLED_COST != 0
    }

    /// Uncontended acquisitions counted (light mode), all threads.
    pub fn counted(&self) -> u64 {
        self.threads
            .iter()
            .flat_map(|t| &t.counted)
            .map(|c| c.count)
            .sum()
    }

    /// The operations of `thread` (one of [`LockTrace::threads`]), decoded
    /// as they are iterated, in program order.
    pub fn ops<'a>(&'a self, thread: &'a ThreadTrace) -> Ops<'a> {
        Ops {
            trace: self,
            chunks: &thread.chunks,
            buf: Vec::new(),
            decoded: Vec::new(),
            next: 0,
            pending_stack: NO_STACK,
        }
    }

    /// The OpenMP records of `thread` (one of [`LockTrace::threads`]), in
    /// program order: its chunks are read and decoded again, one at a
    /// time, so that only one chunk's records are in memory. Records that
    /// can no longer be read (the file was truncated or a read failed since
    /// the trace was opened) are skipped; the damage was listed when it was
    /// opened.
    pub fn omp_ops<'a>(&'a self, thread: &'a ThreadTrace) -> OmpOps<'a> {
        ExtensionRecords::new(self, thread, thread.omp_count(), decode_omp)
    }

    /// The futex records of `thread` (one of [`LockTrace::threads`]), in
    /// program order, each with the stack recorded right before it (when
    /// `--stack-every` took one), read again from the file as
    /// [`LockTrace::omp_ops`] reads the OpenMP records.
    pub fn futex_ops<'a>(&'a self, thread: &'a ThreadTrace) -> FutexOps<'a> {
        ExtensionRecords::new(self, thread, thread.futex_count, decode_futex)
    }

    /// Calls `f` with every operation of `thread` (one of
    /// [`LockTrace::threads`]) in program order, with the object and site
    /// table slots the record referred to: [`NO_SLOT`] for a record that
    /// carries its addresses itself or whose index is not valid, else an
    /// index into [`LockTrace::object_table`] / [`LockTrace::site_table`]
    /// that holds the operation's address. The same operations as
    /// [`LockTrace::ops`], decoded in one tight loop.
    ///
    /// Records that can no longer be read (the file was truncated or a read
    /// failed since the trace was opened) are skipped. Chunks without lock
    /// operations (an OpenMP or futex-heavy thread's) are not read at all:
    /// the scan at open noted how each leaves the pending stack.
    pub fn for_each_op(&self, thread: &ThreadTrace, mut f: impl FnMut(&RawOp, u32, u32)) {
        let mut pending_stack = NO_STACK;
        let mut buf = Vec::new();
        for &span in &thread.chunks {
            if span.ops == 0 {
                // Nothing to give: only how it leaves the pending stack
                // (an OpenMP program's chunks hold millions of OpenMP
                // records and few or no lock operations).
                if span.pending_after != PENDING_KEPT {
                    pending_stack = span.pending_after;
                }
                continue;
            }
            self.decode_span(span, &mut buf, &mut pending_stack, &mut f);
        }
    }

    /// Decodes the records of one chunk (read into `buf` when they come
    /// from the file), calling `f` with each operation and its table slots.
    /// `pending_stack` is the stack of the thread's next operation.
    #[inline]
    fn decode_span<F: FnMut(&RawOp, u32, u32)>(
        &self,
        span: Span,
        buf: &mut Vec<u8>,
        pending_stack: &mut u32,
        f: &mut F,
    ) {
        let pending = std::cell::Cell::new(*pending_stack);
        let mut cursor = Cursor::new(self.source.span(span, buf), span.offset);
        cursor.run(
            &self.objects,
            &self.sites,
            |mut op, object_slot, site_slot| {
                op.stack = pending.replace(NO_STACK);
                // F's own call (no `&mut F` forwarding call between).
                (*f)(&op, object_slot, site_slot);
            },
            |_, step| {
                match step {
                    Step::Stack { offset, .. } => {
                        pending.set(self.stack_at.get(&offset).copied().unwrap_or(NO_STACK))
                    }
                    // a stack before a futex record is that record's
                    Step::Futex(_) | Step::Omp(_) | Step::Create(_) => pending.set(NO_STACK),
                    _ => {}
                }
                // Damage was recorded when the trace was opened.
            },
        );
        *pending_stack = pending.get();
    }

    /// The object index table: slot → object address (0 = empty slot).
    /// Every slot [`LockTrace::for_each_op`] hands out (other than
    /// [`NO_SLOT`]) is an index into it.
    pub fn object_table(&self) -> &[u64] {
        &self.objects[..self.object_slots]
    }

    /// The call-site index table: slot → return address (0 = empty slot).
    /// Every slot [`LockTrace::for_each_op`] hands out (other than
    /// [`NO_SLOT`]) is an index into it.
    pub fn site_table(&self) -> &[u64] {
        &self.sites[..self.site_slots]
    }

    /// The operations of the `i`-th thread, collected (for tests and tools).
    pub fn thread_ops(&self, i: usize) -> Vec<RawOp> {
        self.ops(&self.threads[i]).collect()
    }

    /// Reads and decodes the trace at `path`. The file stays open (not
    /// mapped) and is read again, chunk by chunk, by [`LockTrace::ops`] and
    /// [`LockTrace::for_each_op`].
    ///
    /// Errors: the file cannot be opened, or its header cannot be read
    /// ([`TraceError::Io`]); it is shorter than its header, or has a bad
    /// magic, version, endianness or layout ([`TraceError::Format`]).
    /// Damage past the header (including read errors) is not an error; it
    /// is listed in [`LockTrace::damage`].
    pub fn open(path: &Path) -> Result<LockTrace, TraceError> {
        let io = |source| TraceError::Io {
            path: path.to_path_buf(),
            source,
        };
        let file = File::open(path).map_err(io)?;
        let len = file.metadata().map_err(io)?.len();
        // The collector stops recording on a thread that gets no room in
        // the middle of a chunk and nothing in the trace says so; a full
        // file system is the one hint there is.
        let full = nix::sys::statvfs::fstatvfs(&file).is_ok_and(|s| s.blocks_available() == 0);
        let mut trace = Self::read(path, Source::File(file), len)?;
        if full {
            trace.damage.push(Damage::FileSystemFull);
        }
        Ok(trace)
    }

    /// Reads a trace held in memory (`bytes` = the whole file, copied).
    pub fn decode(path: &Path, bytes: &[u8]) -> Result<LockTrace, TraceError> {
        Self::read(path, Source::Memory(bytes.to_vec()), bytes.len() as u64)
    }

    /// Validates the header and scans every chunk once (counting records,
    /// collecting stacks and damage); records are decoded again on demand.
    /// `len` is the size of the file when it was opened.
    fn read(path: &Path, source: Source, len: u64) -> Result<LockTrace, TraceError> {
        let fail = |msg: String| TraceError::format(path, msg);
        let mut header = vec![0u8; format::HEADER_SIZE];
        let got = source
            .read_at(&mut header, 0)
            .map_err(|source| TraceError::Io {
                path: path.to_path_buf(),
                source,
            })?;
        if got < format::HEADER_SIZE {
            return Err(fail(format!(
                "{got} bytes is shorter than the 4096-byte header"
            )));
        }
        let bytes: &[u8] = &header;
        if &bytes[h::MAGIC..h::MAGIC + 8] != format::MAGIC {
            return Err(fail("not a contend lock trace (bad magic)".into()));
        }
        let endian = u32_at(bytes, h::ENDIAN_CHECK);
        if endian != format::ENDIAN_CHECK {
            return Err(fail(format!(
                "written with another byte order (check word {endian:#010x})"
            )));
        }
        let version = u32_at(bytes, h::VERSION);
        if !(format::OLDEST_VERSION..=format::VERSION).contains(&version) {
            return Err(fail(format!(
                "format version {version}, this contend reads versions {} to {}{}",
                format::OLDEST_VERSION,
                format::VERSION,
                if version > format::VERSION {
                    " (it was recorded by a newer contend: report it with that version)"
                } else {
                    ""
                }
            )));
        }
        let header_size = u32_at(bytes, h::HEADER_SIZE) as usize;
        let pointer_size = u16_at(bytes, h::POINTER_SIZE);
        if header_size != format::HEADER_SIZE || pointer_size != 8 {
            return Err(fail(format!(
                "unsupported layout (header {header_size} bytes, pointers {pointer_size} bytes)"
            )));
        }
        let clock = u16_at(bytes, h::CLOCK);
        if clock != format::CLOCK_TSC && clock != format::CLOCK_MONOTONIC {
            return Err(fail(format!("unknown clock kind {clock}")));
        }
        let chunk_size = u32_at(bytes, h::CHUNK_SIZE) as u64;
        if chunk_size < 4096 || !chunk_size.is_power_of_two() {
            return Err(fail(format!("bad chunk size {chunk_size}")));
        }
        let chunks_claimed = u32_at(bytes, h::CHUNKS_CLAIMED);
        let obj_off = u64_at(bytes, h::OBJECT_TABLE_OFFSET);
        let obj_slots = u32_at(bytes, h::OBJECT_TABLE_SLOTS) as u64;
        let site_off = u64_at(bytes, h::SITE_TABLE_OFFSET);
        let site_slots = u32_at(bytes, h::SITE_TABLE_SLOTS) as u64;
        let data_offset = u64_at(bytes, h::DATA_OFFSET);
        let table_ok = |off: u64, slots: u64| {
            off >= format::HEADER_SIZE as u64
                && slots <= 1 << 24
                && off.checked_add(slots * 8).is_some_and(|e| e <= data_offset)
        };
        if !table_ok(obj_off, obj_slots) || !table_ok(site_off, site_slots) {
            return Err(fail("index tables lie outside the file layout".into()));
        }
        let flags = u64_at(bytes, h::FLAGS);
        let mut table_damage = Vec::new();
        // Only the first 2^16 slots are reachable by 16-bit indices; the
        // part of a table past the end of the file (or that cannot be read)
        // is empty.
        let mut read_table = |off: u64, slots: u64, what: &str| -> (Table, usize) {
            let reach = (slots as usize).min(TABLE_REACH);
            let mut table: Table = vec![0u64; TABLE_REACH]
                .into_boxed_slice()
                .try_into()
                .expect("a table of TABLE_REACH slots");
            let mut raw = vec![0u8; reach * 8];
            match source.read_at(&mut raw, off) {
                Ok(n) => {
                    for (slot, word) in table.iter_mut().zip(raw[..n].as_chunks::<8>().0) {
                        *slot = u64::from_le_bytes(*word);
                    }
                }
                Err(e) => table_damage.push(Damage::Unreadable {
                    offset: off,
                    what: what.into(),
                    error: e.to_string(),
                }),
            }
            (table, reach)
        };
        let (objects, object_slots) = read_table(obj_off, obj_slots, "the object table");
        let (sites, site_slots) = read_table(site_off, site_slots, "the call-site table");
        let cal = |at: usize| HeaderCalibration {
            ticks: u64_at(bytes, at + cal::TICKS),
            monotonic_ns: u64_at(bytes, at + cal::MONOTONIC_NS),
            realtime_ns: u64_at(bytes, at + cal::REALTIME_NS),
        };
        let start = cal(h::START);
        let end = (flags & format::FLAG_FINISHED != 0).then(|| cal(h::END));
        // Version 1 left these bytes reserved (zero).
        let v2 =
            |at: usize, f: fn(&[u8], usize) -> u64| if version >= 2 { f(bytes, at) } else { 0 };
        let mut trace = LockTrace {
            path: path.to_path_buf(),
            version,
            collector_ns: v2(h::COLLECTOR_NS, u64_at),
            cost_record_ps: v2(h::COST_RECORD_PS, |b, at| u64::from(u32_at(b, at))) as u32,
            cost_count_ps: v2(h::COST_COUNT_PS, |b, at| u64::from(u32_at(b, at))) as u32,
            calibration_ns: v2(h::CALIBRATION_NS, |b, at| u64::from(u32_at(b, at))) as u32,
            cost_window_record_ps: if flags & format::FLAG_SAMPLED_COST != 0 {
                u32_at(bytes, h::COST_WINDOW_RECORD_PS)
            } else {
                0
            },
            cost_window_count_ps: if flags & format::FLAG_SAMPLED_COST != 0 {
                u32_at(bytes, h::COST_WINDOW_COUNT_PS)
            } else {
                0
            },
            cost_record_mt_ps: v2(h::COST_RECORD_MT_PS, |b, at| u64::from(u32_at(b, at))) as u32,
            cost_count_mt_ps: v2(h::COST_COUNT_MT_PS, |b, at| u64::from(u32_at(b, at))) as u32,
            pid: u32_at(bytes, h::PID),
            ppid: u32_at(bytes, h::PPID),
            clock,
            flags,
            exe_path: c_string(&bytes[h::EXE_PATH..h::EXE_PATH + h::EXE_PATH_LEN]),
            cmdline: cmdline(&bytes[h::CMDLINE..h::CMDLINE + h::CMDLINE_LEN]),
            start,
            end,
            ticks_per_second: u64_at(bytes, h::TICKS_PER_SECOND),
            stack_every: u32_at(bytes, h::STACK_EVERY),
            threads: Vec::new(),
            stacks: Vec::new(),
            stack_at: BTreeMap::new(),
            creations: Vec::new(),
            objects,
            object_slots,
            sites,
            site_slots,
            source: Arc::new(Source::Memory(Vec::new())),
            calibration_points: Vec::new(),
            damage: Vec::new(),
        };
        if flags & format::FLAG_FINISHED == 0 {
            trace.damage.push(Damage::NotFinished);
        }
        trace.damage.extend(table_damage);
        for c in std::iter::once(start).chain(end) {
            if c.ticks != 0 {
                trace.calibration_points.push(CalibrationPoint {
                    ticks: c.ticks,
                    monotonic_ns: c.monotonic_ns,
                });
            }
        }

        // Scan every chunk once: count records, collect stacks and damage.
        // Chunks are independent: both cores scan them, each through its
        // own buffer, and their results are joined in file order, which
        // numbers the stacks as a scan in that order would.
        let mut chunks = Vec::new();
        let mut count_chunks: Vec<CountChunk> = Vec::new();
        let mut bad_counts = 0u64;
        let mut unstarted = 0u32;
        let mut dangling = 0u64;
        // Chunks wholly inside the file; the others claimed are lost. (No
        // loop over a damaged claim count, no overflow past the file end.)
        let present = len.saturating_sub(data_offset) / chunk_size;
        let present = present.min(u64::from(chunks_claimed));
        let mut lost = chunks_claimed - present as u32;
        // Chunks that could not be read: how many, the first one's offset
        // and error.
        let mut unreadable: Option<(u32, u64, io::Error)> = None;
        let scanned: Vec<ChunkScan> = {
            let context = ScanContext {
                version,
                flags,
                objects: &trace.objects,
                sites: &trace.sites,
            };
            let source = &source;
            (0..present as usize)
                .into_par_iter()
                .with_min_len(SCAN_BATCH)
                .map_init(
                    || vec![0u8; chunk_size as usize],
                    |buf, i| {
                        let begin = data_offset + i as u64 * chunk_size;
                        match source.read_at(buf, begin) {
                            Ok(n) if n == buf.len() => context.scan(buf, begin),
                            // The file was cut shorter since it was opened.
                            Ok(_) => ChunkScan::Lost,
                            Err(e) => ChunkScan::Unreadable(begin, e),
                        }
                    },
                )
                .collect()
        };
        // (a slot chunk's slots each count as a chunk of their own)
        let scanned = scanned.into_iter().flat_map(|scan| match scan {
            ChunkScan::Slots(slots) => slots,
            scan => vec![scan],
        });
        for scan in scanned {
            match scan {
                // (never nested: scan_slots makes a slot that says it is a
                // slot chunk damage)
                ChunkScan::Slots(_) => {}
                ChunkScan::Bad(d) => trace.damage.push(d),
                ChunkScan::Lost => lost += 1,
                ChunkScan::Unreadable(begin, e) => match &mut unreadable {
                    Some((count, _, _)) => *count += 1,
                    None => unreadable = Some((1, begin, e)),
                },
                ChunkScan::Unstarted => unstarted += 1,
                ChunkScan::Counts {
                    chunk,
                    calibration,
                    bad,
                } => {
                    trace.calibration_points.extend(calibration);
                    bad_counts += bad;
                    count_chunks.push(chunk);
                }
                ChunkScan::Records {
                    mut chunk,
                    calibration,
                    stacks,
                    mut creations,
                    damage,
                    dangling: d,
                } => {
                    trace.calibration_points.extend(calibration);
                    // The chunk's stacks, numbered from 0 in it, follow
                    // those of the chunks before it.
                    let base = trace.stacks.len() as u32;
                    let global = |local: u32| match local {
                        NO_STACK | PENDING_KEPT => local,
                        k => base + k,
                    };
                    chunk.span.pending_after = global(chunk.span.pending_after);
                    for c in &mut creations {
                        c.stack = global(c.stack);
                    }
                    for (k, (offset, frames)) in stacks.into_iter().enumerate() {
                        trace.stack_at.insert(offset, base + k as u32);
                        trace.stacks.push(frames);
                    }
                    trace.creations.extend(creations);
                    trace.damage.extend(damage);
                    dangling += d;
                    chunks.push(*chunk);
                }
            }
        }
        if let Some((count, offset, error)) = unreadable {
            trace.damage.push(Damage::Unreadable {
                offset,
                what: format!("{count} chunk(s)"),
                error: error.to_string(),
            });
        }
        if lost > 0 {
            trace
                .damage
                .push(Damage::FileTruncated { lost_chunks: lost });
        }
        if unstarted > 0 {
            trace
                .damage
                .push(Damage::UnstartedChunks { count: unstarted });
        }
        if dangling > 0 {
            trace.damage.push(Damage::DanglingIndex { count: dangling });
        }
        if bad_counts > 0 {
            trace.damage.push(Damage::BadRecord {
                offset: data_offset,
                problem: format!(
                    "{bad_counts} count entr(y/ies) with an unknown primitive, left out"
                ),
            });
        }
        // Group by tid; a tid that restarts at sequence 0 is a new thread
        // that reused the id of one that exited.
        let mut by_tid: BTreeMap<u32, Vec<Chunk>> = BTreeMap::new();
        for c in chunks {
            by_tid.entry(c.tid).or_default().push(c);
        }
        let mut threads: Vec<(u64, ThreadTrace)> = Vec::new();
        for (tid, mut cs) in by_tid {
            cs.sort_by_key(|c| (c.base_ticks, c.sequence));
            let mut current: Option<(u64, ThreadTrace, u32)> = None;
            let mut missing = 0u32;
            for c in cs {
                let continues = matches!(&current, Some((_, _, last)) if c.sequence > *last);
                if !continues {
                    if let Some((first, t, _)) = current.take() {
                        threads.push((first, t));
                    }
                    missing = missing.saturating_add(c.sequence);
                    let t = ThreadTrace {
                        tid,
                        op_count: c.span.ops as usize,
                        record_bytes: record_bytes(c.span),
                        chunks: vec![c.span],
                        collector_ns: c.collector_ns,
                        counted: Vec::new(),
                        record_samples: c.samples,
                        count_samples: CostSamples::default(),
                        single_threaded_records: if c.single_threaded {
                            c.timed_records()
                        } else {
                            0
                        },
                        single_threaded_counted: 0,
                        span_ticks: c.ticks.unwrap_or((0, 0)),
                        futex_count: c.futex.0,
                        futex_last_ticks: c.futex.1,
                        omp_by_event: c.omp,
                        name: c.name,
                    };
                    current = Some((c.base_ticks, t, c.sequence));
                } else if let Some((_, t, last)) = current.as_mut() {
                    missing = missing.saturating_add(c.sequence - *last - 1);
                    *last = c.sequence;
                    t.op_count += c.span.ops as usize;
                    t.record_bytes += record_bytes(c.span);
                    t.collector_ns += c.collector_ns;
                    t.record_samples.add(c.samples);
                    if c.single_threaded {
                        t.single_threaded_records += c.timed_records();
                    }
                    t.chunks.push(c.span);
                    if let Some((first, last)) = c.ticks {
                        if t.op_count == c.span.ops as usize {
                            t.span_ticks.0 = first;
                        }
                        t.span_ticks.1 = last;
                    }
                    t.futex_count += c.futex.0;
                    t.futex_last_ticks = c.futex.1.or(t.futex_last_ticks);
                    for (n, k) in t.omp_by_event.iter_mut().zip(c.omp) {
                        *n += k;
                    }
                    if c.name.is_some() {
                        t.name = c.name;
                    }
                }
            }
            if let Some((first, t, _)) = current {
                threads.push((first, t));
            }
            if missing > 0 {
                trace.damage.push(Damage::SequenceGap { tid, missing });
            }
        }
        // Counts go to the thread of the same id that began last before
        // them (a tid reused by a later thread starts a new one).
        count_chunks.sort_by_key(|c| (c.tid, c.base_ticks));
        for cc in count_chunks {
            let owner = threads
                .iter()
                .enumerate()
                .filter(|(_, (first, t))| t.tid == cc.tid && *first <= cc.base_ticks)
                .max_by_key(|(_, (first, _))| *first)
                .map(|(i, _)| i)
                .or_else(|| threads.iter().position(|(_, t)| t.tid == cc.tid));
            let at = match owner {
                Some(i) => i,
                None => {
                    threads.push((
                        cc.base_ticks,
                        ThreadTrace {
                            tid: cc.tid,
                            ..ThreadTrace::default()
                        },
                    ));
                    threads.len() - 1
                }
            };
            let t = &mut threads[at].1;
            t.collector_ns += cc.collector_ns;
            t.count_samples.add(cc.samples);
            if cc.single_threaded {
                t.single_threaded_counted += cc.entries.iter().map(|e| e.count).sum::<u64>();
            }
            // a COUNTS chunk's name is as recent as a record chunk's: take
            // it when the thread has none yet (light mode, no waits)
            if t.name.is_none() {
                t.name = cc.name;
            }
            for e in cc.entries {
                match t
                    .counted
                    .iter_mut()
                    .find(|c| c.object == e.object && c.site == e.site)
                {
                    Some(c) => c.count += e.count,
                    None => t.counted.push(e),
                }
            }
        }
        threads.sort_by_key(|(first, t)| (*first, t.tid));
        trace.threads = threads.into_iter().map(|(_, t)| t).collect();
        trace.source = Arc::new(source);
        Ok(trace)
    }
}

/// Chunks one core scans at a time at open (a chunk is 128 KiB by
/// default: 8 of them are about 1 MB of records).
const SCAN_BATCH: usize = 8;

/// What the open scan keeps of a record chunk.
struct Chunk {
    tid: u32,
    sequence: u32,
    base_ticks: u64,
    /// Where it is, and its lock operation records (`span.ops`).
    span: Span,
    collector_ns: u64,
    samples: CostSamples,
    /// Ticks of its first and last record.
    ticks: Option<(u64, u64)>,
    /// Its futex records, and the ticks of the last.
    futex: (usize, Option<u64>),
    omp: [usize; OMP_EVENTS],
    name: Option<String>,
    /// Flagged [`format::CHUNK_SINGLE_THREADED`].
    single_threaded: bool,
}

impl Chunk {
    /// Its records that cost the collector a timed record: lock
    /// operation, futex and OpenMP records.
    fn timed_records(&self) -> u64 {
        self.span.ops as u64 + self.futex.0 as u64 + self.omp.iter().sum::<usize>() as u64
    }
}

/// A COUNTS chunk: its thread, time base, slow-path ticks and entries.
struct CountChunk {
    tid: u32,
    base_ticks: u64,
    collector_ns: u64,
    samples: CostSamples,
    entries: Vec<Counted>,
    name: Option<String>,
    /// Flagged [`format::CHUNK_SINGLE_THREADED`].
    single_threaded: bool,
}

/// One chunk as the open scan found it, before the chunks are joined in
/// file order.
enum ChunkScan {
    /// The file ended inside it (cut shorter since it was opened).
    Lost,
    /// Reading it failed: its offset and the error.
    Unreadable(u64, io::Error),
    /// Claimed, never started (no chunk magic).
    Unstarted,
    /// A COUNTS chunk, its calibration point, and its entries with an
    /// unknown primitive (left out).
    Counts {
        chunk: CountChunk,
        calibration: Option<CalibrationPoint>,
        bad: u64,
    },
    /// A slot chunk ([`format::CHUNK_SLOTS`]): the scans of its slots that
    /// were handed out (each a COUNTS or record chunk of its own), in
    /// slot order.
    Slots(Vec<ChunkScan>),
    /// A chunk that cannot be read as what it says it is.
    Bad(Damage),
    /// A record chunk. Stack indices in `chunk.span.pending_after` and in
    /// `creations` count from 0 in this chunk (`stacks` in order, each
    /// with its STACK record's file offset); the join adds the stacks of
    /// the chunks before.
    Records {
        chunk: Box<Chunk>,
        calibration: Option<CalibrationPoint>,
        stacks: Vec<(u64, Vec<u64>)>,
        creations: Vec<Creation>,
        damage: Vec<Damage>,
        dangling: u64,
    },
}

/// What scanning a chunk needs of its trace's header.
struct ScanContext<'a> {
    version: u32,
    flags: u64,
    objects: &'a Table,
    sites: &'a Table,
}

impl ScanContext<'_> {
    /// Scans one whole chunk `c` that starts at file offset `begin`:
    /// counts its records, collects its stacks, creations and damage.
    fn scan(&self, c: &[u8], begin: u64) -> ChunkScan {
        if u32_at(c, ch::MAGIC) != format::CHUNK_MAGIC {
            return ChunkScan::Unstarted;
        }
        let base_ticks = u64_at(c, ch::BASE_TICKS);
        let mono = u64_at(c, ch::MONOTONIC_NS);
        let calibration = (base_ticks != 0 && mono != 0).then_some(CalibrationPoint {
            ticks: base_ticks,
            monotonic_ns: mono,
        });
        let collector_ns = if self.version >= 2 {
            u64_at(c, ch::COLLECTOR_NS)
        } else {
            0
        };
        let samples = if self.flags & format::FLAG_SAMPLED_COST != 0 {
            CostSamples::from_word(u64_at(c, ch::COST_SAMPLES))
        } else {
            CostSamples::default()
        };
        let flags = if self.version >= 2 {
            u32_at(c, ch::FLAGS)
        } else {
            0
        };
        let single_threaded = flags & format::CHUNK_SINGLE_THREADED != 0;
        if self.version >= format::SLOTS_VERSION && flags & format::CHUNK_SLOTS != 0 {
            return self.scan_slots(c, begin);
        }
        if flags & format::CHUNK_COUNTS != 0 {
            let mut bad = 0u64;
            let entries = c[format::CHUNK_HEADER_SIZE..]
                .chunks_exact(format::count::SIZE)
                .filter(|e| u64_at(e, format::count::OBJECT) != 0)
                .filter_map(|e| {
                    let primitive = u8::try_from(u32_at(e, format::count::PRIMITIVE))
                        .ok()
                        .and_then(Primitive::from_code);
                    if primitive.is_none() {
                        bad += 1;
                    }
                    Some(Counted {
                        object: u64_at(e, format::count::OBJECT),
                        site: u64_at(e, format::count::SITE),
                        primitive: primitive?,
                        count: u64_at(e, format::count::COUNT),
                    })
                })
                .filter(|e| e.count > 0)
                .collect();
            return ChunkScan::Counts {
                chunk: CountChunk {
                    tid: u32_at(c, ch::TID),
                    base_ticks,
                    collector_ns,
                    samples,
                    entries,
                    name: chunk_thread_name(c),
                    single_threaded,
                },
                calibration,
                bad,
            };
        }
        let tid = u32_at(c, ch::TID);
        let mut cursor = Cursor::new(c, begin);
        // (a chunk's size is a u32 of bytes and an operation record takes
        // 8 of them: its count fits a u32)
        let mut ops = 0u32;
        let mut ticks: Option<(u64, u64)> = None;
        let mut futex = (0usize, None);
        let mut omp = [0usize; OMP_EVENTS];
        let mut stacks: Vec<(u64, Vec<u64>)> = Vec::new();
        let mut creations = Vec::new();
        let mut damage = Vec::new();
        // the stack recorded right before a futex record is that
        // record's (an operation record in between takes it)
        let last_stack = std::cell::Cell::new(NO_STACK);
        // the pending stack after the chunk, for a chunk without
        // operations (Span::pending_after)
        let pending_after = std::cell::Cell::new(PENDING_KEPT);
        cursor.run(
            self.objects,
            self.sites,
            |op, _, _| {
                ops += 1;
                let s = ticks.get_or_insert((op.ticks, op.ticks));
                s.1 = op.ticks;
                last_stack.set(NO_STACK);
            },
            |cursor, step| match step {
                Step::Stack { offset, frames } => {
                    last_stack.set(stacks.len() as u32);
                    pending_after.set(last_stack.get());
                    stacks.push((offset, cursor.frames(frames)));
                }
                Step::Futex(op) => {
                    // (the stack before it is its own: futex_ops)
                    last_stack.set(NO_STACK);
                    pending_after.set(NO_STACK);
                    futex.0 += 1;
                    futex.1 = Some(op.ticks);
                }
                Step::Omp(op) => {
                    last_stack.set(NO_STACK);
                    pending_after.set(NO_STACK);
                    // the decoder refuses events outside 1..=9
                    if let Some(n) = omp.get_mut(usize::from(op.event)) {
                        *n += 1;
                    }
                }
                Step::Create(mut c) => {
                    c.stack = last_stack.replace(NO_STACK);
                    pending_after.set(NO_STACK);
                    c.tid = tid;
                    creations.push(c);
                }
                Step::Bad(d) => damage.push(d),
                Step::Op(..) | Step::End => {}
            },
        );
        ChunkScan::Records {
            chunk: Box::new(Chunk {
                tid,
                sequence: u32_at(c, ch::SEQUENCE),
                base_ticks,
                span: Span {
                    offset: begin,
                    len: cursor.i * 8,
                    ops,
                    pending_after: pending_after.get(),
                },
                collector_ns,
                samples,
                ticks,
                futex,
                omp,
                name: chunk_thread_name(c),
                single_threaded,
            }),
            calibration,
            stacks,
            creations,
            damage,
            dangling: cursor.dangling,
        }
    }

    /// Scans the slots of slot chunk `c` (at file offset `begin`), each as
    /// a chunk of the slot size its header gives
    /// ([`format::CHUNK_SLOTS`]); slots never handed out (no chunk magic)
    /// are left out. A slot size that does not fit the chunk, or a slot
    /// that says it is a slot chunk itself, is damage.
    fn scan_slots(&self, c: &[u8], begin: u64) -> ChunkScan {
        let size = u32_at(c, ch::SEQUENCE) as usize;
        let header = format::CHUNK_HEADER_SIZE;
        if !size.is_multiple_of(8) || size < header + 8 || header + size > c.len() {
            return ChunkScan::Bad(Damage::BadRecord {
                offset: begin,
                problem: format!("a slot chunk with slots of {size} bytes, which do not fit"),
            });
        }
        let scans = c[header..]
            .chunks_exact(size)
            .enumerate()
            .filter(|(_, slot)| u32_at(slot, ch::MAGIC) == format::CHUNK_MAGIC)
            .map(|(k, slot)| {
                let at = begin + (header + k * size) as u64;
                if u32_at(slot, ch::FLAGS) & format::CHUNK_SLOTS != 0 {
                    ChunkScan::Bad(Damage::BadRecord {
                        offset: at,
                        problem: "a slot that says it is a slot chunk".to_string(),
                    })
                } else {
                    self.scan(slot, at)
                }
            })
            .collect();
        ChunkScan::Slots(scans)
    }
}

/// Iterator over one thread's operations (see [`LockTrace::ops`]). It
/// decodes one chunk at a time and holds that chunk's operations.
pub struct Ops<'a> {
    trace: &'a LockTrace,
    /// Chunks not decoded yet.
    chunks: &'a [Span],
    /// The bytes of the chunk last read from the file.
    buf: Vec<u8>,
    /// The operations of the current chunk, and the next one to yield.
    decoded: Vec<RawOp>,
    next: usize,
    pending_stack: u32,
}

impl Iterator for Ops<'_> {
    type Item = RawOp;

    #[inline]
    fn next(&mut self) -> Option<RawOp> {
        while self.next == self.decoded.len() {
            let (&span, rest) = self.chunks.split_first()?;
            self.chunks = rest;
            self.decoded.clear();
            self.next = 0;
            let decoded = &mut self.decoded;
            self.trace.decode_span(
                span,
                &mut self.buf,
                &mut self.pending_stack,
                &mut |op, _, _| decoded.push(*op),
            );
        }
        let op = self.decoded[self.next];
        self.next += 1;
        Some(op)
    }
}

/// Iterator over one thread's records of one extension kind, OpenMP
/// ([`LockTrace::omp_ops`]) or futex ([`LockTrace::futex_ops`]). It decodes
/// one chunk at a time and holds that chunk's records.
pub struct ExtensionRecords<'a, T> {
    trace: &'a LockTrace,
    /// Chunks not decoded yet.
    chunks: &'a [Span],
    /// The bytes of the chunk last read from the file.
    buf: Vec<u8>,
    /// The records of the current chunk, and the next one to yield.
    decoded: Vec<T>,
    next: usize,
    /// Decodes one chunk's records of this kind into the vector.
    decode: fn(&LockTrace, &[u8], u64, &mut Vec<T>),
}

/// The OpenMP records of a thread ([`LockTrace::omp_ops`]).
pub type OmpOps<'a> = ExtensionRecords<'a, OmpOp>;
/// The futex records of a thread ([`LockTrace::futex_ops`]).
pub type FutexOps<'a> = ExtensionRecords<'a, FutexOp>;

impl<'a, T> ExtensionRecords<'a, T> {
    fn new(
        trace: &'a LockTrace,
        thread: &'a ThreadTrace,
        count: usize,
        decode: fn(&LockTrace, &[u8], u64, &mut Vec<T>),
    ) -> Self {
        ExtensionRecords {
            trace,
            // a thread without records of the kind reads nothing
            chunks: if count > 0 { &thread.chunks } else { &[] },
            buf: Vec::new(),
            decoded: Vec::new(),
            next: 0,
            decode,
        }
    }
}

impl<T: Copy> Iterator for ExtensionRecords<'_, T> {
    type Item = T;

    #[inline]
    fn next(&mut self) -> Option<T> {
        while self.next == self.decoded.len() {
            let (&span, rest) = self.chunks.split_first()?;
            self.chunks = rest;
            self.decoded.clear();
            self.next = 0;
            let bytes = self.trace.source.span(span, &mut self.buf);
            (self.decode)(self.trace, bytes, span.offset, &mut self.decoded);
        }
        let op = self.decoded[self.next];
        self.next += 1;
        Some(op)
    }
}

/// Batches of records a [`RecordsAhead`] reader thread decodes before the
/// consumer takes them.
const AHEAD_BATCHES: usize = 2;

/// Records a reader thread hands over at once: whole chunks' records, at
/// least this many (1 MiB of 32-byte OpenMP records). One hand-over per
/// 128 KiB chunk (about 2,700 OpenMP records) made a third of the runs of
/// a 5-million-record report slower than reading in place, with more CPU
/// time, on the 2-CPU guest of docs/benchmarks.md; batches of this size
/// made that rare.
const AHEAD_BATCH: usize = 1 << 15;

/// Records of a thread below which [`LockTrace::omp_ops_ahead`] and
/// [`LockTrace::futex_ops_ahead`] read them in place: fewer than two
/// batches leave the reader thread nothing to overlap.
const READ_AHEAD_MIN: usize = 2 * AHEAD_BATCH;

/// One thread's records of one extension kind, in program order, as
/// [`ExtensionRecords`] gives them, either read here or read and decoded
/// by a reader thread a few batches ahead ([`LockTrace::omp_ops_ahead`]),
/// so that a consumer on its own core does not wait for the reads and
/// the decoding.
pub enum RecordsAhead<'a, T> {
    /// Read and decoded by the consumer as it goes.
    Here(ExtensionRecords<'a, T>),
    /// Decoded by the reader thread.
    Ahead(Decoded<T>),
}

/// The consumer's end of a [`RecordsAhead`] reader thread: batches of
/// records come through `rx`, the emptied vectors go back through `back`
/// to be filled again.
pub struct Decoded<T> {
    rx: std::sync::mpsc::Receiver<Vec<T>>,
    back: std::sync::mpsc::SyncSender<Vec<T>>,
    batch: Vec<T>,
    next: usize,
}

impl<'a, T> From<ExtensionRecords<'a, T>> for RecordsAhead<'a, T> {
    fn from(records: ExtensionRecords<'a, T>) -> Self {
        RecordsAhead::Here(records)
    }
}

impl<T: Copy> Iterator for RecordsAhead<'_, T> {
    type Item = T;

    #[inline]
    fn next(&mut self) -> Option<T> {
        match self {
            RecordsAhead::Here(records) => records.next(),
            RecordsAhead::Ahead(Decoded {
                rx,
                back,
                batch,
                next,
            }) => {
                while *next == batch.len() {
                    // (the reader is done, or gone: the end)
                    let full = rx.recv().ok()?;
                    let mut used = std::mem::replace(batch, full);
                    used.clear();
                    // (when the reader has enough, the vector is dropped)
                    let _ = back.try_send(used);
                    *next = 0;
                }
                let op = batch[*next];
                *next += 1;
                Some(op)
            }
        }
    }
}

impl LockTrace {
    /// Calls `consume` with the OpenMP records of `thread`, as
    /// [`LockTrace::omp_ops`] gives them, read and decoded by a thread of
    /// their own, in batches of whole chunks of at least [`AHEAD_BATCH`]
    /// records, up to [`AHEAD_BATCHES`] batches ahead of `consume` (which
    /// then only takes them: reading and decoding took half of an OpenMP
    /// report's time). Should the reader thread not start, `consume` reads
    /// them itself, as it does a thread of fewer than `READ_AHEAD_MIN`
    /// (65,536) records; should `consume` stop early, the reader stops at
    /// its next batch. Memory: a chunk's bytes and at most `AHEAD_BATCHES` + 2
    /// batches' records (those handed over, the one being filled and the
    /// one being taken; an emptied batch goes back to be filled again, and
    /// a new one is made only when none came back).
    pub fn omp_ops_ahead<R>(
        &self,
        thread: &ThreadTrace,
        consume: impl FnOnce(RecordsAhead<'_, OmpOp>) -> R,
    ) -> R {
        self.records_ahead(thread, thread.omp_count(), decode_omp, consume)
    }

    /// [`LockTrace::futex_ops`] read and decoded ahead by a thread of their
    /// own, as [`LockTrace::omp_ops_ahead`] reads the OpenMP records.
    pub fn futex_ops_ahead<R>(
        &self,
        thread: &ThreadTrace,
        consume: impl FnOnce(RecordsAhead<'_, FutexOp>) -> R,
    ) -> R {
        self.records_ahead(thread, thread.futex_count, decode_futex, consume)
    }

    fn records_ahead<T: Copy + Send, R>(
        &self,
        thread: &ThreadTrace,
        count: usize,
        decode: fn(&LockTrace, &[u8], u64, &mut Vec<T>),
        consume: impl FnOnce(RecordsAhead<'_, T>) -> R,
    ) -> R {
        if count < READ_AHEAD_MIN {
            return consume(ExtensionRecords::new(self, thread, count, decode).into());
        }
        std::thread::scope(|scope| {
            let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<T>>(AHEAD_BATCHES);
            let (back, emptied) = std::sync::mpsc::sync_channel::<Vec<T>>(AHEAD_BATCHES + 2);
            let chunks = &thread.chunks;
            let reader = std::thread::Builder::new()
                .name("contend-read".into())
                .spawn_scoped(scope, move || {
                    let mut buf = Vec::new();
                    let mut out = Vec::new();
                    for &span in chunks {
                        let bytes = self.source.span(span, &mut buf);
                        decode(self, bytes, span.offset, &mut out);
                        if out.len() >= AHEAD_BATCH {
                            if tx.send(out).is_err() {
                                // the consumer stopped
                                return;
                            }
                            out = emptied.try_recv().unwrap_or_default();
                        }
                    }
                    if !out.is_empty() {
                        let _ = tx.send(out);
                    }
                });
            match reader {
                Ok(_) => consume(RecordsAhead::Ahead(Decoded {
                    rx,
                    back,
                    batch: Vec::new(),
                    next: 0,
                })),
                Err(_) => consume(ExtensionRecords::new(self, thread, count, decode).into()),
            }
        })
    }
}

/// The OpenMP records of one chunk's bytes (at file offset `offset`).
fn decode_omp(trace: &LockTrace, chunk: &[u8], offset: u64, out: &mut Vec<OmpOp>) {
    Cursor::new(chunk, offset).run(
        &trace.objects,
        &trace.sites,
        |_, _, _| {},
        |_, step| {
            if let Step::Omp(op) = step {
                out.push(op);
            }
        },
    );
}

/// The futex records of one chunk's bytes (at file offset `offset`), each
/// with the stack recorded right before it in the chunk, as the trace's
/// opening scan numbered the stacks.
fn decode_futex(trace: &LockTrace, chunk: &[u8], offset: u64, out: &mut Vec<FutexOp>) {
    let pending = std::cell::Cell::new(NO_STACK);
    Cursor::new(chunk, offset).run(
        &trace.objects,
        &trace.sites,
        |_, _, _| pending.set(NO_STACK),
        |_, step| match step {
            Step::Stack { offset, .. } => {
                pending.set(trace.stack_at.get(&offset).copied().unwrap_or(NO_STACK))
            }
            Step::Futex(mut op) => {
                op.stack = pending.replace(NO_STACK);
                out.push(op);
            }
            Step::Omp(_) | Step::Create(_) => pending.set(NO_STACK),
            _ => {}
        },
    );
}

/// One step of decoding a chunk.
enum Step {
    /// An operation, with its object and site table slots (`u32::MAX` for
    /// a wide record).
    Op(RawOp, u32, u32),
    /// A STACK record at file offset `offset`; its frames are the `frames`
    /// words after word `first` ([`Cursor::frames`]).
    Stack {
        offset: u64,
        frames: (usize, usize),
    },
    /// A futex record (its stack is set by the caller).
    Futex(FutexOp),
    /// An OpenMP record.
    Omp(OmpOp),
    /// A creation record (its stack and tid are set by the caller).
    Create(Creation),
    Bad(Damage),
    End,
}

/// Looks up a narrow record's table index: `(address, slot)` for an index
/// that names a non-empty slot of the table, `(0, NO_SLOT)` for one outside
/// the table or on an empty slot.
#[inline(always)]
fn resolve(table: &[u64; TABLE_REACH], index: u16) -> (u64, u32) {
    match table[usize::from(index)] {
        0 => (0, NO_SLOT),
        address => (address, u32::from(index)),
    }
}

/// The parts of an extension record ([`Cursor::extension_record`]).
struct ExtRecord {
    /// Words the record takes (2 narrow, 4 wide).
    len: usize,
    /// Object address (0 when a narrow record's table slot was empty).
    object: u64,
    /// Call-site address (0 likewise).
    site: u64,
    /// The extension word.
    ext: u64,
    /// A narrow record's table slot was empty.
    dangling: bool,
    /// (object slot, site slot) in the tables; [`NO_SLOT`] for a wide
    /// record or an empty slot.
    slots: (u32, u32),
}

/// Position in one chunk's records, with the thread's running time.
struct Cursor<'a> {
    chunk: &'a [u8],
    file_offset: u64,
    /// Next word index.
    i: usize,
    now: u64,
    /// Narrow records decoded so far whose object or site index was not
    /// valid ([`resolve`]).
    dangling: u64,
}

impl<'a> Cursor<'a> {
    fn new(chunk: &'a [u8], file_offset: u64) -> Cursor<'a> {
        Cursor {
            chunk,
            file_offset,
            i: format::CHUNK_HEADER_SIZE / 8,
            now: chunk
                .get(ch::BASE_TICKS..ch::BASE_TICKS + 8)
                .map_or(0, |b| u64_at(b, 0)),
            dangling: 0,
        }
    }

    #[inline]
    fn word(&self, i: usize) -> u64 {
        u64_at(self.chunk, i * 8)
    }

    /// The frames of a STACK record (`(first word, count)` from [`Step::Stack`]).
    fn frames(&self, (first, n): (usize, usize)) -> Vec<u64> {
        (0..n).map(|k| self.word(first + k)).collect()
    }

    /// Decodes the rest of the chunk: `on_op` gets each operation with its
    /// table slots, `on_other` each STACK record and the defect that ends
    /// the chunk early, if any. Narrow operation records (nearly all) take
    /// a fast path; everything else goes through [`Cursor::next`].
    #[inline]
    fn run(
        &mut self,
        objects: &[u64; TABLE_REACH],
        sites: &[u64; TABLE_REACH],
        mut on_op: impl FnMut(RawOp, u32, u32),
        mut on_other: impl FnMut(&Self, Step),
    ) {
        let (words, _) = self.chunk.as_chunks::<8>();
        loop {
            // One call of `on_op` for both paths, so that the compiler can
            // inline it (a consumer's per-operation work then keeps its
            // state in registers instead of behind a call per record).
            let fast = words.get(self.i).and_then(|&w| {
                let (tag, dt, oi, si) = format::split_head(u64::from_le_bytes(w));
                if tag & format::TAG_WIDE != 0 {
                    return None;
                }
                let primitive = Primitive::from_code(tag >> 4)?;
                let phase = Phase::from_code(tag & 0xf)?;
                Some((primitive, phase, dt, oi, si))
            });
            let (op, object_slot, site_slot) = match fast {
                Some((primitive, phase, dt, oi, si)) => {
                    self.narrow_op(objects, sites, primitive, phase, dt, oi, si)
                }
                None => match self.next(objects, sites) {
                    Step::Op(op, object_slot, site_slot) => (op, object_slot, site_slot),
                    Step::End => return,
                    step @ Step::Bad(_) => return on_other(self, step),
                    step => {
                        on_other(self, step);
                        continue;
                    }
                },
            };
            on_op(op, object_slot, site_slot);
        }
    }

    /// The operation of the narrow record at the cursor (one word: its
    /// head's fields `primitive`, `phase`, `dt` and table indices `oi`,
    /// `si`), with its table slots; the cursor moves past it.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn narrow_op(
        &mut self,
        objects: &[u64; TABLE_REACH],
        sites: &[u64; TABLE_REACH],
        primitive: Primitive,
        phase: Phase,
        dt: u32,
        oi: u16,
        si: u16,
    ) -> (RawOp, u32, u32) {
        let (object, object_slot) = resolve(objects, oi);
        let (site, site_slot) = resolve(sites, si);
        self.dangling += u64::from((object == 0) | (site == 0));
        let op = self.op_record(1, dt, object, site, primitive, phase);
        (op, object_slot, site_slot)
    }

    /// The operation of the record of `len` words at the cursor (its
    /// time `dt` ticks after the previous record's), on `object` at
    /// `site`; the cursor moves past it.
    #[inline(always)]
    fn op_record(
        &mut self,
        len: usize,
        dt: u32,
        object: u64,
        site: u64,
        primitive: Primitive,
        phase: Phase,
    ) -> RawOp {
        self.now = self.now.wrapping_add(u64::from(dt));
        self.i += len;
        RawOp {
            ticks: self.now,
            object,
            site,
            primitive,
            phase,
            stack: NO_STACK,
        }
    }

    /// The parts of an extension record (futex, OpenMP, creation, join) at
    /// word `i` with head `tag` and table indices `oi`, `si`: narrow (2
    /// words: the head, whose indices name the object and site in the
    /// tables, and the extension word) or wide (4 words: head, object,
    /// site, extension); `None` when the record does not fit in the
    /// chunk's `words`.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    fn extension_record(
        &self,
        i: usize,
        words: usize,
        tag: u8,
        oi: u16,
        si: u16,
        objects: &[u64; TABLE_REACH],
        sites: &[u64; TABLE_REACH],
    ) -> Option<ExtRecord> {
        let wide = tag & format::TAG_WIDE != 0;
        let len = if wide { 4 } else { 2 };
        if i + len > words {
            return None;
        }
        let (object, site, dangling, slots) = if wide {
            (
                self.word(i + 1),
                self.word(i + 2),
                false,
                (NO_SLOT, NO_SLOT),
            )
        } else {
            let (object, object_slot) = resolve(objects, oi);
            let (site, site_slot) = resolve(sites, si);
            let dangling = (object == 0) | (site == 0);
            (object, site, dangling, (object_slot, site_slot))
        };
        Some(ExtRecord {
            len,
            object,
            site,
            ext: self.word(i + len - 1),
            dangling,
            slots,
        })
    }

    #[inline]
    fn next(&mut self, objects: &[u64; TABLE_REACH], sites: &[u64; TABLE_REACH]) -> Step {
        let words = self.chunk.len() / 8;
        loop {
            let i = self.i;
            if i >= words {
                return Step::End;
            }
            let w = self.word(i);
            if w == 0 {
                return Step::End;
            }
            let bad = |problem: String| {
                Step::Bad(Damage::BadRecord {
                    offset: self.file_offset + (i * 8) as u64,
                    problem,
                })
            };
            let (tag, dt, oi, si) = format::split_head(w);
            match tag {
                format::TAG_TIME => {
                    if i + 1 >= words {
                        return bad("TIME record cut off at the chunk end".into());
                    }
                    self.now = self.word(i + 1);
                    self.i += 2;
                }
                format::TAG_STACK => {
                    let n = dt as usize;
                    if n > 1024 || i + 1 + n > words {
                        return bad(format!("STACK record of {n} frames does not fit"));
                    }
                    self.i += 1 + n;
                    return Step::Stack {
                        offset: self.file_offset + (i * 8) as u64,
                        frames: (i + 1, n),
                    };
                }
                _ if tag & !format::TAG_WIDE == format::TAG_OMP => {
                    let Some(ExtRecord {
                        len,
                        object,
                        site,
                        ext,
                        dangling,
                        ..
                    }) = self.extension_record(i, words, tag, oi, si, objects, sites)
                    else {
                        return bad("OpenMP record cut off at the chunk end".into());
                    };
                    self.dangling += u64::from(dangling);
                    let event = (ext & 0xff) as u8;
                    if !(format::omp::MUTEX_ACQUIRE..=format::omp::PARALLEL_END).contains(&event) {
                        return bad(format!("OpenMP record with an unknown event ({ext:#x})"));
                    }
                    self.now = self.now.wrapping_add(u64::from(dt));
                    self.i += len;
                    return Step::Omp(OmpOp {
                        ticks: self.now,
                        object,
                        site,
                        event,
                        kind: (ext >> 8) as u8,
                        value: (ext >> 32) as u32,
                    });
                }
                _ if tag & !format::TAG_WIDE == format::TAG_CREATE => {
                    let Some(ExtRecord {
                        len,
                        object,
                        site,
                        ext,
                        dangling,
                        ..
                    }) = self.extension_record(i, words, tag, oi, si, objects, sites)
                    else {
                        return bad("creation record cut off at the chunk end".into());
                    };
                    self.dangling += u64::from(dangling);
                    let how = match (ext & format::create::HOW_MASK) as u8 {
                        format::create::INIT => CreationKind::Init,
                        format::create::FIRST_USE => CreationKind::FirstUse,
                        _ => {
                            return bad(format!("creation record with an unknown kind ({ext:#x})"))
                        }
                    };
                    self.now = self.now.wrapping_add(u64::from(dt));
                    self.i += len;
                    return Step::Create(Creation {
                        ticks: self.now,
                        object,
                        site,
                        how,
                        primitive: Primitive::from_code((ext >> format::create::PRIM_SHIFT) as u8),
                        tid: 0,
                        stack: NO_STACK,
                    });
                }
                _ if tag & !format::TAG_WIDE == format::TAG_JOIN => {
                    let Some(ExtRecord {
                        len,
                        object,
                        site,
                        ext,
                        dangling,
                        slots,
                    }) = self.extension_record(i, words, tag, oi, si, objects, sites)
                    else {
                        return bad("join record cut off at the chunk end".into());
                    };
                    self.dangling += u64::from(dangling);
                    let phase = u8::try_from(ext & format::join::PHASE_MASK)
                        .ok()
                        .and_then(Phase::from_code)
                        .filter(|p| {
                            matches!(
                                p,
                                Phase::Request
                                    | Phase::Acquired
                                    | Phase::Busy
                                    | Phase::Error
                                    | Phase::Release
                            )
                        });
                    let Some(phase) = phase else {
                        return bad(format!("join record with an unknown phase ({ext:#x})"));
                    };
                    self.now = self.now.wrapping_add(u64::from(dt));
                    self.i += len;
                    return Step::Op(
                        RawOp {
                            ticks: self.now,
                            object,
                            site,
                            primitive: Primitive::Join,
                            phase,
                            stack: NO_STACK,
                        },
                        slots.0,
                        slots.1,
                    );
                }
                _ if tag & !format::TAG_WIDE == format::TAG_FUTEX => {
                    let Some(ExtRecord {
                        len,
                        object: word,
                        site,
                        ext,
                        dangling,
                        ..
                    }) = self.extension_record(i, words, tag, oi, si, objects, sites)
                    else {
                        return bad("futex record cut off at the chunk end".into());
                    };
                    self.dangling += u64::from(dangling);
                    let Some(phase) = u8::try_from(ext & format::futex::PHASE_MASK)
                        .ok()
                        .and_then(Phase::from_code)
                    else {
                        return bad(format!("futex record with an unknown phase ({ext:#x})"));
                    };
                    self.now = self.now.wrapping_add(u64::from(dt));
                    self.i += len;
                    return Step::Futex(FutexOp {
                        ticks: self.now,
                        word,
                        site,
                        phase,
                        cmd: (ext >> format::futex::CMD_SHIFT) as u8,
                        private: ext & format::futex::PRIVATE != 0,
                        value: (ext >> format::futex::VALUE_SHIFT) as u32 as i32,
                        stack: NO_STACK,
                    });
                }
                _ => {
                    let wide = tag & format::TAG_WIDE != 0;
                    let code = tag & !format::TAG_WIDE;
                    let (Some(primitive), Some(phase)) = (
                        Primitive::from_code(code >> 4),
                        Phase::from_code(code & 0xf),
                    ) else {
                        return bad(format!("unknown tag {tag:#04x}"));
                    };
                    if !wide {
                        let (op, object_slot, site_slot) =
                            self.narrow_op(objects, sites, primitive, phase, dt, oi, si);
                        return Step::Op(op, object_slot, site_slot);
                    }
                    if i + 2 >= words {
                        return bad("wide record cut off at the chunk end".into());
                    }
                    let (object, site) = (self.word(i + 1), self.word(i + 2));
                    let op = self.op_record(3, dt, object, site, primitive, phase);
                    return Step::Op(op, NO_SLOT, NO_SLOT);
                }
            }
        }
    }
}

/// Bytes of records in a chunk span (the chunk header not counted).
fn record_bytes(span: Span) -> u64 {
    span.len.saturating_sub(format::CHUNK_HEADER_SIZE) as u64
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes(b[at..at + 2].try_into().expect("2 bytes"))
}
fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}
fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}
fn c_string(b: &[u8]) -> String {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    String::from_utf8_lossy(&b[..end]).into_owned()
}
fn cmdline(b: &[u8]) -> Vec<String> {
    let end = b.windows(2).position(|w| w == [0, 0]).unwrap_or(b.len());
    b[..end]
        .split(|&c| c == 0)
        .filter(|s| !s.is_empty())
        .map(|s| String::from_utf8_lossy(s).into_owned())
        .collect()
}
