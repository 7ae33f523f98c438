//! Layout constants of the lock-trace format, version 3 (versions 1 and 2
//! are still read: version 1 lacks the collector's cost fields, light
//! mode, the RELEASED and UNTIMED phases and COUNTS chunks; version 2 the
//! slot chunks, [`CHUNK_SLOTS`]; neither can contain what it lacks).
//!
//! Mirrors `collector/include/contend/trace_format.h` constant for constant;
//! the prose specification is `docs/trace-format.md`. Tags are only ever
//! added, never reused.

/// File magic, the first 8 bytes of every lock trace.
pub const MAGIC: &[u8; 8] = b"CNTDLOCK";
/// Format version the collector writes (the newest this reader understands).
pub const VERSION: u32 = 3;
/// Oldest format version this reader still reads.
pub const OLDEST_VERSION: u32 = 1;
/// Value of the endianness check field as written by a little-endian writer.
pub const ENDIAN_CHECK: u32 = 0x0102_0304;
/// Size of the file header in bytes.
pub const HEADER_SIZE: usize = 4096;
/// Size of a chunk header in bytes.
pub const CHUNK_HEADER_SIZE: usize = 64;
/// Chunk magic, "CHNK" as a little-endian u32.
pub const CHUNK_MAGIC: u32 = 0x4b4e_4843;

/// Clock field: ticks are x86 TSC values.
pub const CLOCK_TSC: u16 = 1;
/// Clock field: ticks are CLOCK_MONOTONIC nanoseconds.
pub const CLOCK_MONOTONIC: u16 = 2;

/// Header flag: the process ran its exit path.
pub const FLAG_FINISHED: u64 = 1;
/// Header flag: the process is a `fork()` child.
pub const FLAG_FORKED: u64 = 2;
/// Header flag: some records use the wide form (an index table was full).
pub const FLAG_TABLE_FULL: u64 = 4;
/// Header flag (version 2): light mode, uncontended acquisitions are
/// counted in COUNTS chunks ([`CHUNK_COUNTS`]) instead of recorded.
pub const FLAG_LIGHT: u64 = 8;
/// Header flag: the recording's size cap (`record --max-size`) stopped
/// recording in this process ([`crate::control`]).
pub const FLAG_CAPPED: u64 = 16;
/// Header flag: the collector timed its own work on a sample of the
/// operations, one in [`SAMPLE_EVERY`] per thread (the chunk headers'
/// [`chunk::COST_SAMPLES`] and the header's
/// [`header::COST_WINDOW_RECORD_PS`], [`header::COST_WINDOW_COUNT_PS`] are
/// valid). Additive: traces without it keep the calibrated estimate.
pub const FLAG_SAMPLED_COST: u64 = 32;
/// One operation in this many of a thread has its recording cost timed in
/// situ ([`FLAG_SAMPLED_COST`]).
pub const SAMPLE_EVERY: u32 = 256;
/// Bits of [`chunk::COST_SAMPLES`] holding the sum of the sampled windows,
/// trace-clock ticks (bits 0..39); the number of samples is in the bits
/// above (40..63).
pub const SAMPLE_SUM_BITS: u32 = 40;
/// Mask of the sum in [`chunk::COST_SAMPLES`] (bits 0..39).
pub const SAMPLE_SUM_MASK: u64 = (1 << SAMPLE_SUM_BITS) - 1;
/// Chunk flag (version 2): the chunk holds count entries ([`count`]), not
/// records; its sequence numbers are separate from the record chunks'.
pub const CHUNK_COUNTS: u32 = 1;
/// Chunk flag: the process had one thread (glibc's
/// `__libc_single_threaded`) when the chunk was claimed and each time the
/// collector looked again (each extension of its written part, each new
/// count entry, its thread's exit): its operations took the
/// single-threaded paths, costed with [`header::COST_RECORD_PS`] /
/// [`header::COST_COUNT_PS`]; every other chunk with
/// [`header::COST_RECORD_MT_PS`] / [`header::COST_COUNT_MT_PS`] where
/// those are set. Additive (0 in older traces).
pub const CHUNK_SINGLE_THREADED: u32 = 2;
/// Chunk flag (version 3): a chunk of slots, each a small chunk of one
/// thread (its first record chunk or its first COUNTS table, taken while
/// the process has more than one thread, without a claim of its own). The
/// slot chunk's header has tid 0 and, in its sequence field, the slot size
/// in bytes; slot `k` starts at byte `CHUNK_HEADER_SIZE + k * slot size`
/// and is laid out as a chunk of that size (a chunk header, never with
/// this flag, then records or count entries). A slot without the chunk
/// magic holds nothing.
pub const CHUNK_SLOTS: u32 = 4;
/// Slot size the collector uses, bytes (a slot chunk says its own).
pub const SLOT_SIZE: u32 = 4096;
/// First version with slot chunks ([`CHUNK_SLOTS`]).
pub const SLOTS_VERSION: u32 = 3;

/// Slots of the object index table the collector creates.
pub const OBJECT_SLOTS: u32 = 65536;
/// Slots of the call-site index table the collector creates.
pub const SITE_SLOTS: u32 = 65536;
/// Chunk size the collector uses unless `CONTEND_CHUNK_KB` says otherwise.
pub const DEFAULT_CHUNK_SIZE: u32 = 128 * 1024;

/// Tag of a TIME record (one extension word: absolute ticks).
pub const TAG_TIME: u8 = 0x01;
/// Tag of a STACK record (bits 8..31 = frame count, frames follow).
pub const TAG_STACK: u8 = 0x02;
/// Tag of a futex record (version 2): head word as an operation record
/// (object = the futex word), then (after the addresses of the wide form)
/// one extension word, see [`futex`].
pub const TAG_FUTEX: u8 = 0x03;
/// Tag of an OpenMP record (version 2): laid out as a futex record, its
/// extension word described in [`omp`].
pub const TAG_OMP: u8 = 0x04;
/// Tag of a creation record (version 2): laid out as a futex record
/// (object = the lock, site = the init call or first operation), its
/// extension word described in [`create`].
pub const TAG_CREATE: u8 = 0x05;
/// Tag of a join record (version 2): laid out as a futex record (object =
/// the joined thread's `pthread_t`), its extension word described in
/// [`join`]; read as operations of [`Primitive::Join`].
pub const TAG_JOIN: u8 = 0x06;
/// Flag bit of a wide operation record (object and site addresses follow).
pub const TAG_WIDE: u8 = 0x80;
/// Number of bits of the `dt` field.
pub const DT_BITS: u32 = 24;
/// Largest `dt` a head word holds (a larger step needs a TIME record).
pub const DT_MAX: u32 = (1 << DT_BITS) - 1;

/// Bytes at the start of a chunk that the launcher's chunk preparer
/// faults into the page cache ahead of its claim
/// (`CONTEND_PREPARED_HEAD_BYTES` of trace_format.h): the part a claim
/// would otherwise write with zeros itself.
pub const PREPARED_HEAD_BYTES: u64 = 16384;

/// Byte offsets of header fields (see the C header for the struct).
pub mod header {
    /// `char[8]` magic.
    pub const MAGIC: usize = 0;
    /// `u32` version.
    pub const VERSION: usize = 8;
    /// `u32` header size.
    pub const HEADER_SIZE: usize = 12;
    /// `u32` endianness check.
    pub const ENDIAN_CHECK: usize = 16;
    /// `u16` pointer size.
    pub const POINTER_SIZE: usize = 20;
    /// `u16` clock kind.
    pub const CLOCK: usize = 22;
    /// `u32` chunk size in bytes.
    pub const CHUNK_SIZE: usize = 24;
    /// `u32` number of chunks claimed.
    pub const CHUNKS_CLAIMED: usize = 28;
    /// `u32` pid.
    pub const PID: usize = 32;
    /// `u32` parent pid.
    pub const PPID: usize = 36;
    /// `u64` flags.
    pub const FLAGS: usize = 40;
    /// `u64` object table offset.
    pub const OBJECT_TABLE_OFFSET: usize = 48;
    /// `u32` object table slots.
    pub const OBJECT_TABLE_SLOTS: usize = 56;
    /// `u32` site table slots.
    pub const SITE_TABLE_SLOTS: usize = 60;
    /// `u64` site table offset.
    pub const SITE_TABLE_OFFSET: usize = 64;
    /// `u64` offset of chunk 0.
    pub const DATA_OFFSET: usize = 72;
    /// Calibration (4 × u64) at collector start.
    pub const START: usize = 80;
    /// Calibration (4 × u64) at exit.
    pub const END: usize = 112;
    /// `u64` ticks per second measured by the launcher.
    pub const TICKS_PER_SECOND: usize = 144;
    /// `u32` stack every N-th operation.
    pub const STACK_EVERY: usize = 152;
    /// `u32` atomic, written by the launcher's chunk preparer
    /// (`contend_record::chunk_prep`): chunks with a lower index have
    /// their first [`super::PREPARED_HEAD_BYTES`] in the page cache with
    /// their blocks reserved, and the file covers them whole, so a claim
    /// writes no zeros for them (0 = none; 0 in older traces).
    pub const CHUNKS_PREPARED: usize = 156;
    /// `u64` (version 2) CPU time, ns, the collector spent in its slow
    /// path, all threads (chunk claims, faulting in pages, maps snapshots,
    /// stacks, the calibration).
    pub const COLLECTOR_NS: usize = 160;
    /// `u32` (version 2) calibrated cost of one timed record, ps (0 = not
    /// calibrated).
    pub const COST_RECORD_PS: usize = 168;
    /// `u32` (version 2) calibrated cost of one counted uncontended
    /// lock + unlock pair in light mode, ps (0 = not measured).
    pub const COST_COUNT_PS: usize = 172;
    /// `u32` (version 2) time the calibration took, ns.
    pub const CALIBRATION_NS: usize = 176;
    /// `u32` (with [`super::FLAG_SAMPLED_COST`]) the typical sampled cost
    /// window of the records the start-up calibration wrote (the median of
    /// its rounds' mean windows; the mean of all its windows before
    /// 2026-12-01), ps: the part
    /// of [`COST_RECORD_PS`] the in-situ timing sees on hot caches (0 =
    /// none).
    pub const COST_WINDOW_RECORD_PS: usize = 180;
    /// `u32` (with [`super::FLAG_SAMPLED_COST`]) the same for the counted
    /// pairs of the light-mode calibration, ps (0 = none).
    pub const COST_WINDOW_COUNT_PS: usize = 184;
    /// `u32` atomic: chunk claims that took a prepared chunk
    /// ([`CHUNKS_PREPARED`]) and wrote no zeros of their own (0 in older
    /// traces).
    pub const CLAIMS_PREPARED: usize = 188;
    /// `u32` calibrated cost of one timed record on the paths glibc and
    /// the collector take once the process has a second thread (measured
    /// on a process-shared mutex), ps; 0 in older traces, where
    /// [`COST_RECORD_PS`] stands for every chunk. [`COST_RECORD_PS`] is
    /// then the single-threaded paths', for the chunks flagged
    /// [`super::CHUNK_SINGLE_THREADED`].
    pub const COST_RECORD_MT_PS: usize = 192;
    /// `u32` the same for [`COST_COUNT_PS`] (light mode), ps.
    pub const COST_COUNT_MT_PS: usize = 196;
    /// Reserved bytes up to [`EXE_PATH`], 0.
    pub const RESERVED: usize = 200;
    /// `char[1024]` executable path.
    pub const EXE_PATH: usize = 512;
    /// Length of the executable path field.
    pub const EXE_PATH_LEN: usize = 1024;
    /// `char[2048]` NUL-separated command line.
    pub const CMDLINE: usize = 1536;
    /// Length of the command-line field.
    pub const CMDLINE_LEN: usize = 2048;
    /// Reserved bytes up to the end of the header, 0.
    pub const TAIL: usize = 3584;
}

/// Byte offsets of the fields of a calibration (the header's `start` and
/// `end`): the same instant on the trace clock and the system clocks.
pub mod calibration {
    /// `u64` trace clock ticks.
    pub const TICKS: usize = 0;
    /// `u64` CLOCK_MONOTONIC, ns.
    pub const MONOTONIC_NS: usize = 8;
    /// `u64` CLOCK_REALTIME, ns since the epoch.
    pub const REALTIME_NS: usize = 16;
    /// `u64` reserved, 0.
    pub const RESERVED: usize = 24;
    /// Size of a calibration in bytes.
    pub const SIZE: usize = 32;
}

/// Byte offsets of chunk-header fields.
pub mod chunk {
    /// `u32` magic ([`super::CHUNK_MAGIC`], stored last).
    pub const MAGIC: usize = 0;
    /// `u32` kernel thread id.
    pub const TID: usize = 4;
    /// `u32` sequence number within the thread.
    pub const SEQUENCE: usize = 8;
    /// `u32` flags, reserved (0).
    pub const FLAGS: usize = 12;
    /// `u64` time base of the first record, ticks.
    pub const BASE_TICKS: usize = 16;
    /// `u64` CLOCK_MONOTONIC at the base ticks, ns (a calibration point).
    pub const MONOTONIC_NS: usize = 24;
    /// `u64` (version 2) CPU time, ns, the owning thread spent in the
    /// collector's slow path while this chunk was its current one.
    pub const COLLECTOR_NS: usize = 32;
    /// `char[16]` (added in version 2; zero in older traces) the owning
    /// thread's name as the kernel has it (its comm, `prctl(PR_GET_NAME)`),
    /// NUL-padded and not always NUL-terminated; written when the thread
    /// claims the chunk and again when it renames itself, at its exit and
    /// at the process's exit. A thread's name is that of its last chunk
    /// that has one.
    pub const THREAD_NAME: usize = 40;
    /// Bytes of [`THREAD_NAME`] (the kernel's `TASK_COMM_LEN`).
    pub const THREAD_NAME_LEN: usize = 16;
    /// `u64` (with [`super::FLAG_SAMPLED_COST`]; 0 in older traces) the
    /// owning thread's sampled cost windows while this chunk was its
    /// current one: bits 0..39 ([`super::SAMPLE_SUM_BITS`]) their sum in
    /// trace-clock ticks, bits 40..63 their number. A record chunk's are
    /// windows of records, a COUNTS chunk's of counted acquisitions.
    pub const COST_SAMPLES: usize = 56;
}

/// Byte offsets of the fields of a count entry (version 2, light mode): one
/// (object, call site) of one thread in a COUNTS chunk; entry `i` starts at
/// `CHUNK_HEADER_SIZE + i * count::SIZE`. Unused entries have object 0.
pub mod count {
    /// `u64` object address (0 = unused entry, [`BY_SITE`]: the entry
    /// counts acquisitions of locks not counted one by one).
    pub const OBJECT: usize = 0;
    /// The object of an entry that counts a thread's acquisitions at its
    /// call site of locks its table keeps no entry of their own for (past
    /// [`LOCK_ENTRIES`] (lock, call site) pairs): site, primitive and
    /// number exact, the locks unknown (trace_format.h,
    /// `CONTEND_COUNT_BY_SITE`).
    pub const BY_SITE: u64 = 1;
    /// (lock, call site) pairs a thread's count table keeps entries of
    /// their own for (`CONTEND_COUNT_LOCK_ENTRIES`).
    pub const LOCK_ENTRIES: u32 = 256;
    /// `u64` call site of the acquisitions.
    pub const SITE: usize = 8;
    /// `u64` uncontended acquisitions counted.
    pub const COUNT: usize = 16;
    /// `u32` primitive code.
    pub const PRIMITIVE: usize = 24;
    /// `u32` reserved, 0.
    pub const RESERVED: usize = 28;
    /// Size of an entry in bytes.
    pub const SIZE: usize = 32;
}

/// A synchronisation primitive, as encoded in bits 4..6 of an operation tag.
/// Primitive codes, like phase codes and so operation tags, are only ever
/// added, never reused or renumbered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "snake_case")]
#[repr(u8)]
pub enum Primitive {
    /// `pthread_mutex_t` (also `std::mutex`, `std::recursive_mutex`, …).
    Mutex = 1,
    /// `pthread_rwlock_t` held for reading (shared).
    RwlockRead = 2,
    /// `pthread_rwlock_t` held for writing (exclusive).
    RwlockWrite = 3,
    /// `pthread_spinlock_t`.
    Spin = 4,
    /// `pthread_cond_t` (a condition wait).
    Cond = 5,
    /// `pthread_barrier_t` (a barrier wait).
    Barrier = 6,
    /// POSIX `sem_t`.
    Semaphore = 7,
    /// A thread joined by `pthread_join` (the object is its `pthread_t`):
    /// the joining thread's wait and the joined thread's end. Not encoded
    /// in an operation tag (bits 4..6 hold 1..=7): read from join records
    /// ([`TAG_JOIN`]).
    Join = 8,
}

impl Primitive {
    /// Every primitive an operation tag encodes, in the order of their
    /// codes (1..=7); [`Primitive::Join`] is not one of them.
    pub const ALL: [Primitive; 7] = [
        Primitive::Mutex,
        Primitive::RwlockRead,
        Primitive::RwlockWrite,
        Primitive::Spin,
        Primitive::Cond,
        Primitive::Barrier,
        Primitive::Semaphore,
    ];

    /// Every primitive, [`Primitive::ALL`] then [`Primitive::Join`] (codes
    /// 1..=8): what an analysed event can be.
    pub const EVERY: [Primitive; 8] = {
        let mut every = [Primitive::Join; 8];
        let mut i = 0;
        while i < Primitive::ALL.len() {
            every[i] = Primitive::ALL[i];
            i += 1;
        }
        every
    };

    /// Decodes bits 4..6 of a tag; `None` for an unknown primitive.
    pub fn from_code(code: u8) -> Option<Primitive> {
        Some(match code {
            1 => Primitive::Mutex,
            2 => Primitive::RwlockRead,
            3 => Primitive::RwlockWrite,
            4 => Primitive::Spin,
            5 => Primitive::Cond,
            6 => Primitive::Barrier,
            7 => Primitive::Semaphore,
            _ => return None,
        })
    }

    /// The kind of object this primitive operates on, as reported
    /// (`mutex`, `rwlock`, `spinlock`, `cond`, `barrier`, `semaphore`; `join`
    /// for a joined thread).
    pub fn object_kind(self) -> &'static str {
        match self {
            Primitive::Mutex => "mutex",
            Primitive::RwlockRead | Primitive::RwlockWrite => "rwlock",
            Primitive::Spin => "spinlock",
            Primitive::Cond => "cond",
            Primitive::Barrier => "barrier",
            Primitive::Semaphore => "semaphore",
            Primitive::Join => "join",
        }
    }

    /// True for primitives whose release record is a post that wakes
    /// waiters without a hold before it: `sem_post`, a joined thread's end.
    pub fn is_post(self) -> bool {
        matches!(self, Primitive::Semaphore | Primitive::Join)
    }

    /// True for primitives whose acquisition is a mutual-exclusion lock that
    /// is later released by the same thread (mutex, rwlock, spinlock).
    pub fn is_lock(self) -> bool {
        matches!(
            self,
            Primitive::Mutex | Primitive::RwlockRead | Primitive::RwlockWrite | Primitive::Spin
        )
    }
}

/// Phase of an operation record (bits 0..3 of the tag). Phase codes are
/// only ever added, never reused or renumbered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
#[repr(u8)]
pub enum Phase {
    /// A blocking call was entered after the fast try failed.
    Request = 1,
    /// The pending request of this thread succeeded.
    Acquired = 2,
    /// Acquired at once (request time = acquisition time).
    Immediate = 3,
    /// A try failed at once, or a timed wait timed out after a request.
    Busy = 4,
    /// The call returned another error (EDEADLK, EPERM, EINVAL, …).
    Error = 5,
    /// Unlock or `sem_post`, timed just before the real call.
    Release = 6,
    /// (Version 2) the unlock or `sem_post` that found waiters returned:
    /// timed right after the real call; the time since its RELEASE is the
    /// wake cost (Huang et al. 2012, Section 4.3).
    Released = 7,
    /// (Version 2, light mode) the acquisition of a hold that was counted,
    /// not recorded, and whose release found waiters: its time is unknown,
    /// the record carries the time of that release (the RELEASE follows).
    Untimed = 8,
}

impl Phase {
    /// Decodes bits 0..3 of a tag; `None` for an unknown phase.
    pub fn from_code(code: u8) -> Option<Phase> {
        Some(match code {
            1 => Phase::Request,
            2 => Phase::Acquired,
            3 => Phase::Immediate,
            4 => Phase::Busy,
            5 => Phase::Error,
            6 => Phase::Release,
            7 => Phase::Released,
            8 => Phase::Untimed,
            _ => return None,
        })
    }
}

/// Builds an operation tag, `(primitive << 4) | phase` (narrow form).
pub fn op_tag(primitive: Primitive, phase: Phase) -> u8 {
    ((primitive as u8) << 4) | phase as u8
}

/// Splits a head word into (tag, dt, object index, site index).
#[inline]
pub fn split_head(word: u64) -> (u8, u32, u16, u16) {
    (
        (word & 0xff) as u8,
        ((word >> 8) & 0x00ff_ffff) as u32,
        ((word >> 32) & 0xffff) as u16,
        (word >> 48) as u16,
    )
}

/// Builds a head word from its fields (used by tests and trace writers).
#[inline]
pub fn make_head(tag: u8, dt: u32, object: u16, site: u16) -> u64 {
    u64::from(tag)
        | (u64::from(dt & 0x00ff_ffff) << 8)
        | (u64::from(object) << 32)
        | (u64::from(site) << 48)
}

/// The extension word of a join record ([`TAG_JOIN`]; trace_format.h,
/// "Join records").
pub mod join {
    /// Bits 0..7: the phase ([`super::Phase`] code): `Request`, `Acquired`,
    /// `Busy`, `Error` (the joining thread), `Release` (the joined
    /// thread's end).
    pub const PHASE_MASK: u64 = 0xff;
    /// Bits 32..63: the join's error number with `Error` and `Busy`, else 0.
    pub const VALUE_SHIFT: u32 = 32;
}

/// The extension word of a futex record ([`TAG_FUTEX`]; trace_format.h,
/// "Futex records").
pub mod futex {
    /// Bits 0..7: the phase ([`super::Phase`] code).
    pub const PHASE_MASK: u64 = 0xff;
    /// Bits 8..15: the futex command (`op & FUTEX_CMD_MASK`, or
    /// [`CMD_WAITV`]).
    pub const CMD_SHIFT: u32 = 8;
    /// Bit 16: `FUTEX_PRIVATE_FLAG` was set.
    pub const PRIVATE: u64 = 1 << 16;
    /// Bits 32..63: a signed 32-bit value (return value or errno).
    pub const VALUE_SHIFT: u32 = 32;
    /// Command code of a `futex_waitv(2)` call.
    pub const CMD_WAITV: u8 = 0xff;
    /// `FUTEX_WAIT`.
    pub const CMD_WAIT: u8 = 0;
    /// `FUTEX_WAKE`.
    pub const CMD_WAKE: u8 = 1;
    /// `FUTEX_REQUEUE`.
    pub const CMD_REQUEUE: u8 = 3;
    /// `FUTEX_CMP_REQUEUE`.
    pub const CMD_CMP_REQUEUE: u8 = 4;
    /// `FUTEX_WAKE_OP`.
    pub const CMD_WAKE_OP: u8 = 5;
    /// `FUTEX_LOCK_PI`.
    pub const CMD_LOCK_PI: u8 = 6;
    /// `FUTEX_UNLOCK_PI`.
    pub const CMD_UNLOCK_PI: u8 = 7;
    /// `FUTEX_WAIT_BITSET`.
    pub const CMD_WAIT_BITSET: u8 = 9;
    /// `FUTEX_WAKE_BITSET`.
    pub const CMD_WAKE_BITSET: u8 = 10;
    /// `FUTEX_WAIT_REQUEUE_PI`.
    pub const CMD_WAIT_REQUEUE_PI: u8 = 11;
    /// `FUTEX_LOCK_PI2`.
    pub const CMD_LOCK_PI2: u8 = 13;

    /// Builds an extension word (used by tests and trace writers).
    pub fn ext_word(phase: super::Phase, cmd: u8, private: bool, value: i32) -> u64 {
        phase as u64
            | (u64::from(cmd) << CMD_SHIFT)
            | if private { PRIVATE } else { 0 }
            | (u64::from(value as u32) << VALUE_SHIFT)
    }

    /// The name of a futex command code (`FUTEX_WAIT`, …, `futex_waitv`).
    pub fn cmd_name(cmd: u8) -> &'static str {
        match cmd {
            CMD_WAIT => "FUTEX_WAIT",
            CMD_WAKE => "FUTEX_WAKE",
            CMD_REQUEUE => "FUTEX_REQUEUE",
            CMD_CMP_REQUEUE => "FUTEX_CMP_REQUEUE",
            CMD_WAKE_OP => "FUTEX_WAKE_OP",
            CMD_LOCK_PI => "FUTEX_LOCK_PI",
            CMD_UNLOCK_PI => "FUTEX_UNLOCK_PI",
            CMD_WAIT_BITSET => "FUTEX_WAIT_BITSET",
            CMD_WAKE_BITSET => "FUTEX_WAKE_BITSET",
            CMD_WAIT_REQUEUE_PI => "FUTEX_WAIT_REQUEUE_PI",
            CMD_LOCK_PI2 => "FUTEX_LOCK_PI2",
            CMD_WAITV => "futex_waitv",
            _ => "FUTEX_(other)",
        }
    }
}

/// The extension word of an OpenMP record ([`TAG_OMP`]; trace_format.h,
/// "OpenMP records"): bits 0..7 the event, bits 8..15 the OMPT kind, bits
/// 32..63 a value.
pub mod omp {
    /// Mutex acquisition begins (object: the OMPT wait id).
    pub const MUTEX_ACQUIRE: u8 = 1;
    /// Mutex acquired.
    pub const MUTEX_ACQUIRED: u8 = 2;
    /// Mutex released.
    pub const MUTEX_RELEASED: u8 = 3;
    /// A wait in a barrier, taskwait or taskgroup begins (object: the
    /// parallel region instance).
    pub const SYNC_WAIT_BEGIN: u8 = 4;
    /// ... and ends.
    pub const SYNC_WAIT_END: u8 = 5;
    /// An implicit task begins (value: the thread's number in the team).
    pub const TASK_BEGIN: u8 = 6;
    /// An implicit task ends.
    pub const TASK_END: u8 = 7;
    /// A parallel region begins (value: the requested team size; site: the
    /// construct).
    pub const PARALLEL_BEGIN: u8 = 8;
    /// A parallel region ends.
    pub const PARALLEL_END: u8 = 9;

    /// Builds an extension word (used by tests and trace writers).
    pub fn ext_word(event: u8, kind: u8, value: u32) -> u64 {
        u64::from(event) | (u64::from(kind) << 8) | (u64::from(value) << 32)
    }
}

/// The extension word of a creation record ([`TAG_CREATE`]; trace_format.h,
/// "Creation records"): bits 0..7 how the object was created, bits 8..15
/// the primitive code (0 = not known).
pub mod create {
    /// An init function (`pthread_mutex_init`, `sem_init`, …) was called.
    pub const INIT: u8 = 1;
    /// The object's first recorded operation; no init call was seen.
    pub const FIRST_USE: u8 = 2;
    /// Mask of the "how" field.
    pub const HOW_MASK: u64 = 0xff;
    /// Shift of the primitive code.
    pub const PRIM_SHIFT: u32 = 8;

    /// Builds an extension word (used by tests and trace writers).
    pub fn ext_word(how: u8, primitive: u8) -> u64 {
        u64::from(how) | (u64::from(primitive) << PRIM_SHIFT)
    }
}
