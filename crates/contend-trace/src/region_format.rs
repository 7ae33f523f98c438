//! Layout constants of the region-trace format, version 1
//! (`regions/<pid>[.<n>].creg`: manual regions of `contend/region.h` and
//! `-finstrument-functions` hooks, for the interference (SCI) analysis of
//! Mosli Bouksiaa et al., TPDS 2019).
//!
//! Mirrors `collector/include/contend/region_format.h` constant for
//! constant (checked by the `format_layout` test against the header
//! itself); the prose specification is `docs/trace-format.md`, "Region
//! traces". Tags are only ever added, never reused.

/// File magic, the first 8 bytes of every region trace.
pub const MAGIC: &[u8; 8] = b"CNTDREGN";
/// Format version this reader understands.
pub const VERSION: u32 = 1;
/// Value of the endianness check field as written by a little-endian writer.
pub const ENDIAN_CHECK: u32 = 0x0102_0304;
/// Size of the file header in bytes.
pub const HEADER_SIZE: usize = 4096;
/// Size of every chunk in bytes (header and records).
pub const CHUNK_SIZE: u32 = 128 * 1024;
/// Size of a chunk header in bytes.
pub const CHUNK_HEADER_SIZE: usize = 64;
/// Chunk magic, "REGN" as a little-endian u32.
pub const CHUNK_MAGIC: u32 = 0x4e47_4552;

/// Clock field: ticks are x86 TSC values.
pub const CLOCK_TSC: u16 = 1;
/// Clock field: ticks are CLOCK_MONOTONIC nanoseconds.
pub const CLOCK_MONOTONIC: u16 = 2;

/// Header flag: the process ran its exit path.
pub const FLAG_FINISHED: u64 = 1;
/// Header flag: the process is a `fork()` child.
pub const FLAG_FORKED: u64 = 2;
/// Header flag: `-finstrument-functions` hooks were recorded
/// (`contend record --instrumented-functions`).
pub const FLAG_FUNCTIONS: u64 = 4;
/// Header flag: site ids ran out (more than [`SITE_MAX`] macro uses):
/// later sites were not recorded.
pub const FLAG_SITES_FULL: u64 = 8;
/// Header flag: creating the trace file took longer than other threads
/// wait for it (2 s): their region marks and function hooks meanwhile were
/// not recorded.
pub const FLAG_START_LOST: u64 = 16;

/// TIME record: one word follows, the absolute ticks; the next timed
/// record's `dt` counts from it.
pub const TAG_TIME: u8 = 1;
/// SITE record: defines a site id; bits 32..63 of the head give the
/// payload words that follow.
pub const TAG_SITE: u8 = 2;
/// A region begins (no words follow).
pub const TAG_BEGIN: u8 = 3;
/// A keyed region begins; one word follows, the key.
pub const TAG_BEGIN_KEY: u8 = 4;
/// A region ends (no words follow).
pub const TAG_END: u8 = 5;
/// A function is entered; two words follow, its address and the frame.
pub const TAG_ENTER: u8 = 6;
/// A function returns; two words follow, its address and the frame.
pub const TAG_EXIT: u8 = 7;

/// Site kind: `CONTEND_REGION_BEGIN`.
pub const SITE_BEGIN: u32 = 1;
/// Site kind: `CONTEND_REGION_END`.
pub const SITE_END: u32 = 2;
/// Site kind: `CONTEND_REGION_BEGIN_KEY`.
pub const SITE_BEGIN_KEY: u32 = 3;
/// Largest site id (24 bits); 0 is never a site.
pub const SITE_MAX: u32 = 0x00ff_ffff;
/// Longest string of a SITE record, bytes without the NUL.
pub const STRING_MAX: u32 = 255;

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
    /// `u32` chunks claimed.
    pub const CHUNKS_CLAIMED: usize = 28;
    /// `u32` pid.
    pub const PID: usize = 32;
    /// `u32` parent pid.
    pub const PPID: usize = 36;
    /// `u64` flags.
    pub const FLAGS: usize = 40;
    /// `u64` offset of chunk 0.
    pub const DATA_OFFSET: usize = 48;
    /// `u32` one function call in N was recorded.
    pub const FUNCTION_EVERY: usize = 56;
    /// `u32` site ids handed out.
    pub const SITES_DEFINED: usize = 60;
    /// Calibration (4 × u64) at the first region call.
    pub const START: usize = 64;
    /// Calibration (4 × u64) at exit.
    pub const END: usize = 96;
    /// `u64` ticks per second measured by the launcher.
    pub const TICKS_PER_SECOND: usize = 128;
    /// Reserved bytes up to [`EXE_PATH`], 0.
    pub const RESERVED: usize = 136;
    /// `char[1024]` executable path.
    pub const EXE_PATH: usize = 512;
    /// Length of the executable path field.
    pub const EXE_PATH_LEN: usize = 1024;
    /// Reserved bytes up to the end of the header, 0.
    pub const TAIL: usize = 1536;
}

/// Byte offsets of the fields of a calibration.
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
    /// `u64` time base of the first timed record, ticks.
    pub const BASE_TICKS: usize = 16;
    /// `u64` CLOCK_MONOTONIC at the base ticks, ns.
    pub const MONOTONIC_NS: usize = 24;
    /// Reserved words up to the end of the chunk header.
    pub const RESERVED: usize = 32;
}

/// Splits a head word into (tag, site id, dt or payload words).
#[inline]
pub fn split_head(word: u64) -> (u8, u32, u32) {
    (
        (word & 0xff) as u8,
        ((word >> 8) & 0x00ff_ffff) as u32,
        (word >> 32) as u32,
    )
}

/// Builds a head word (tests and trace writers).
#[inline]
pub fn make_head(tag: u8, site: u32, dt: u32) -> u64 {
    u64::from(tag) | (u64::from(site & SITE_MAX) << 8) | (u64::from(dt) << 32)
}
