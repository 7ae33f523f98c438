//! Layout constants of the MPI-trace format, version 2
//! (`<recording>/mpi/rank-<world rank>.cmpi`); version 1 (every time in
//! CLOCK_MONOTONIC ns, no clock fields) is still read.
//!
//! Mirrors `collector/include/contend/mpi_trace_format.h` constant for
//! constant; the prose specification is the "MPI traces" section of
//! `docs/trace-format.md`. Record tags and operation codes
//! ([`crate::mpi::MpiOp`]) are only ever added, never reused.

/// File magic, the first 8 bytes of every MPI trace.
pub const MAGIC: &[u8; 8] = b"CNTDMPIT";
/// Format version the recorder writes (the reader also reads
/// [`VERSION_1`]).
pub const VERSION: u32 = 2;
/// The first version: times in CLOCK_MONOTONIC ns, no clock fields, chunk
/// headers without a calibration point.
pub const VERSION_1: u32 = 1;
/// Value of the endianness check field as written by a little-endian writer.
pub const ENDIAN_CHECK: u32 = 0x0102_0304;
/// Size of the file header in bytes.
pub const HEADER_SIZE: usize = 4096;
/// Size of a chunk header in bytes.
pub const CHUNK_HEADER_SIZE: usize = 32;
/// Chunk size the recorder uses unless `CONTEND_MPI_CHUNK_KB` says otherwise.
pub const DEFAULT_CHUNK_SIZE: u32 = 64 * 1024;
/// Chunk magic, "CMPI" as a little-endian u32.
pub const CHUNK_MAGIC: u32 = 0x4950_4d43;

/// `implementation` field: Open MPI.
pub const IMPL_OPENMPI: u16 = 1;
/// `implementation` field: MPICH.
pub const IMPL_MPICH: u16 = 2;

/// Header flag: `PMPI_Finalize` returned.
pub const FLAG_FINALIZED: u64 = 1;
/// Header flag: the request table overflowed; some completions are missing.
pub const FLAG_REQUESTS_FULL: u64 = 2;
/// Header flag: a thread could not get a chunk; its later calls are missing.
pub const FLAG_CHUNKS_FAILED: u64 = 4;
/// Header flag: the `offset_final_*` fields are valid.
pub const FLAG_FINAL_OFFSET: u64 = 8;
/// Header flag: a Fortran entry point was called.
pub const FLAG_FORTRAN: u64 = 16;
/// Header flag (version 2): `end_ticks` / `end_monotonic_ns` are valid.
pub const FLAG_END_CLOCK: u64 = 32;

/// Header `clock` (version 2): TSC ticks, converted with the calibration
/// points (as the lock trace's `CLOCK_TSC`).
pub const CLOCK_TSC: u16 = 1;
/// Header `clock` (version 2): CLOCK_MONOTONIC ns (version 1 traces
/// have 0 there and are on this clock).
pub const CLOCK_MONOTONIC: u16 = 2;

/// Largest payload of one record, in words (the 16-bit `n` of a head word).
pub const MAX_PAYLOAD: u16 = 0xffff;

/// Record tag: TIME (one payload word: absolute time on the trace clock).
pub const REC_TIME: u8 = 1;
/// Record tag: ENTER (a wrapped call begins; small = op code, arg = dt).
pub const REC_ENTER: u8 = 2;
/// Record tag: EXIT (the call returned; small = op code, arg = dt).
pub const REC_EXIT: u8 = 3;
/// Bit 7 of an ENTER's or EXIT's small byte: the compact form (ENTER: the
/// call site is the thread's previous one in the chunk and left out; EXIT:
/// `MPI_SUCCESS` without flags, the return-code word left out).
pub const SMALL_COMPACT: u8 = 0x80;
/// The operation code in an ENTER's or EXIT's small byte.
pub const SMALL_OP_MASK: u8 = 0x7f;
/// Record tag: COMPLETION (a receive or request completed by the call).
pub const REC_COMPLETION: u8 = 4;
/// Record tag: COMM (members of a communicator, as world ranks).
pub const REC_COMM: u8 = 5;
/// Record tag: START (one persistent request activated by the enclosing
/// `MPI_Start`/`MPI_Startall`; small = `START_*` flags, arg = peer as
/// posted (i32), payload: comm id, new request id, tag, bytes).
pub const REC_START: u8 = 6;
/// START flag: a receive (`MPI_Recv_init`), else a send.
pub const START_RECV: u8 = 1;
/// START flag: a synchronous send (`MPI_Ssend_init`).
pub const START_SYNC: u8 = 2;
/// START flag: a buffered send (`MPI_Bsend_init`).
pub const START_BUFFERED: u8 = 4;
/// START flag: a ready send (`MPI_Rsend_init`).
pub const START_READY: u8 = 8;

/// COMPLETION flag: a receive (else a send).
pub const COMPL_RECV: u8 = 1;
/// COMPLETION flag: the request was cancelled.
pub const COMPL_CANCELLED: u8 = 2;
/// COMPLETION flag: no source (`MPI_PROC_NULL` or untranslatable).
pub const COMPL_NO_SOURCE: u8 = 4;
/// COMPLETION flag: not a completion but the message a probe (`Probe`,
/// `Mprobe`, `Iprobe`/`Improbe` with flag true) found; request 0, source,
/// tag and bytes from the probe's status.
pub const COMPL_PROBE: u8 = 8;
/// COMPLETION flag: a nonblocking collective's request (source, tag and
/// bytes 0).
pub const COMPL_COLLECTIVE: u8 = 16;

/// Peer field: `MPI_ANY_SOURCE`.
pub const PEER_ANY: i32 = -1;
/// Peer field: `MPI_PROC_NULL`.
pub const PEER_NULL: i32 = -2;
/// Peer field: the rank could not be translated to a world rank.
pub const PEER_UNKNOWN: i32 = -3;

/// EXIT flag: the `Iprobe`/`Test*` flag was true.
pub const EXIT_FLAG_TRUE: u32 = 1;

/// Communicator id stored for `MPI_COMM_NULL`.
pub const COMM_NULL_ID: u64 = u64::MAX;
/// Bit set in ids of communicators the recorder did not see created.
pub const COMM_LOCAL_BIT: u64 = 1 << 63;

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
    /// `u16` implementation (`IMPL_*`).
    pub const IMPLEMENTATION: usize = 22;
    /// `u32` chunk size in bytes.
    pub const CHUNK_SIZE: usize = 24;
    /// `u32` chunks claimed.
    pub const CHUNKS_CLAIMED: usize = 28;
    /// `u32` pid.
    pub const PID: usize = 32;
    /// `u32` world rank.
    pub const WORLD_RANK: usize = 36;
    /// `u32` world size.
    pub const WORLD_SIZE: usize = 40;
    /// `i32` thread level provided, -1 when `MPI_Init` was used.
    pub const THREAD_LEVEL: usize = 44;
    /// `u64` flags (`FLAG_*`).
    pub const FLAGS: usize = 48;
    /// `u64` offset of the first chunk.
    pub const DATA_OFFSET: usize = 56;
    /// `i64` clock offset to rank 0 at `MPI_Init`, ns.
    pub const OFFSET_INIT_NS: usize = 64;
    /// `u64` local time of that measurement, ns.
    pub const OFFSET_INIT_AT_NS: usize = 72;
    /// `u64` its minimum round trip, ns.
    pub const OFFSET_INIT_RTT_NS: usize = 80;
    /// `i64` clock offset to rank 0 at `MPI_Finalize`, ns.
    pub const OFFSET_FINAL_NS: usize = 88;
    /// `u64` local time of that measurement, ns.
    pub const OFFSET_FINAL_AT_NS: usize = 96;
    /// `u64` its minimum round trip, ns.
    pub const OFFSET_FINAL_RTT_NS: usize = 104;
    /// `u64` CLOCK_MONOTONIC when the trace was created.
    pub const START_MONOTONIC_NS: usize = 112;
    /// `u64` CLOCK_REALTIME at the same instant.
    pub const START_REALTIME_NS: usize = 120;
    /// `u16` trace clock (version 2): [`super::CLOCK_TSC`] or
    /// [`super::CLOCK_MONOTONIC`].
    pub const CLOCK: usize = 128;
    /// `u16` reserved, 0.
    pub const RESERVED16: usize = 130;
    /// `u32` reserved, 0.
    pub const RESERVED32: usize = 132;
    /// `u64` ticks per second of the trace clock (the launcher's TSC
    /// frequency; 0 unknown; 1e9 on CLOCK_MONOTONIC).
    pub const TICKS_PER_SECOND: usize = 136;
    /// `u64` trace clock at [`START_MONOTONIC_NS`] (a calibration point).
    pub const START_TICKS: usize = 144;
    /// `u64` trace clock at `MPI_Finalize` (valid with
    /// [`super::FLAG_END_CLOCK`]).
    pub const END_TICKS: usize = 152;
    /// `u64` CLOCK_MONOTONIC at [`END_TICKS`].
    pub const END_MONOTONIC_NS: usize = 160;
    /// Reserved bytes up to [`HOST`], 0.
    pub const RESERVED: usize = 168;
    /// `char[256]` host name.
    pub const HOST: usize = 256;
    /// Length of the host field.
    pub const HOST_LEN: usize = 256;
    /// `char[512]` MPI library version (first line).
    pub const LIBRARY: usize = 512;
    /// Length of the library field.
    pub const LIBRARY_LEN: usize = 512;
    /// `char[1024]` executable path.
    pub const EXE_PATH: usize = 1024;
    /// Length of the executable path field.
    pub const EXE_PATH_LEN: usize = 1024;
    /// Reserved bytes up to the end of the header, 0.
    pub const TAIL: usize = 2048;
}

/// Byte offsets of chunk-header fields.
pub mod chunk {
    /// `u32` magic (stored last).
    pub const MAGIC: usize = 0;
    /// `u32` kernel thread id.
    pub const TID: usize = 4;
    /// `u32` sequence number within the thread.
    pub const SEQUENCE: usize = 8;
    /// `u32` flags, reserved (0).
    pub const FLAGS: usize = 12;
    /// `u64` time base of the first record on the trace clock (ns in
    /// version 1).
    pub const BASE_TICKS: usize = 16;
    /// `u64` CLOCK_MONOTONIC ns at [`BASE_TICKS`] (version 2: a
    /// calibration point; 0 in version 1).
    pub const MONOTONIC_NS: usize = 24;
}

/// The fields of a record head word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Head {
    /// Record tag (`REC_*`).
    pub tag: u8,
    /// Payload words that follow.
    pub n: u16,
    /// Tag-specific 8 bits (operation code, flags).
    pub small: u8,
    /// Tag-specific 32 bits (time delta on the trace clock, rank, count).
    pub arg: u32,
}

impl Head {
    /// Splits a head word.
    pub fn decode(word: u64) -> Head {
        Head {
            tag: word as u8,
            n: (word >> 8) as u16,
            small: (word >> 24) as u8,
            arg: (word >> 32) as u32,
        }
    }

    /// Builds a head word (the inverse of [`Head::decode`]).
    pub fn encode(self) -> u64 {
        u64::from(self.tag)
            | (u64::from(self.n) << 8)
            | (u64::from(self.small) << 24)
            | (u64::from(self.arg) << 32)
    }
}

/// `(peer, tag)` packed into one word: peer in the low half.
pub fn peer_tag(word: u64) -> (i32, i32) {
    (word as u32 as i32, (word >> 32) as u32 as i32)
}

/// Packs `(peer, tag)` (the inverse of [`peer_tag`]).
pub fn pack_peer_tag(peer: i32, tag: i32) -> u64 {
    u64::from(peer as u32) | (u64::from(tag as u32) << 32)
}

/// An EXIT record's `(return code, flags)` word: the return code in the low
/// half, the flags ([`EXIT_FLAG_TRUE`]) in the high half.
pub fn rc_flags(word: u64) -> (i32, u32) {
    (word as u32 as i32, (word >> 32) as u32)
}

/// Packs `(return code, flags)` (the inverse of [`rc_flags`]).
pub fn pack_rc_flags(rc: i32, flags: u32) -> u64 {
    u64::from(rc as u32) | (u64::from(flags) << 32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn head_round_trip() {
        let h = Head {
            tag: REC_ENTER,
            n: 4,
            small: 14,
            arg: 123_456,
        };
        assert_eq!(Head::decode(h.encode()), h);
        // layout as in CONTEND_MPI_HEAD
        assert_eq!(h.encode(), 2 | (4 << 8) | (14 << 24) | (123_456u64 << 32));
    }

    #[test]
    fn peer_tag_round_trip() {
        assert_eq!(peer_tag(pack_peer_tag(-1, -1)), (-1, -1));
        assert_eq!(peer_tag(pack_peer_tag(3, 77)), (3, 77));
        assert_eq!(pack_peer_tag(3, 77), 3 | (77 << 32));
    }
}
