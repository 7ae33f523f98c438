//! The blackboard layout, version 1: byte offsets and constants.
//!
//! Mirrors `collector/include/contend/meters.h` constant for constant (the
//! one definition; `tests/it/layout.rs` compiles a C program that prints
//! every offset and size of the header and compares them with these);
//! the prose specification is `docs/meters.md`. All fields are
//! little-endian and naturally aligned; every field a writer changes
//! after creation is a whole 4- or 8-byte word accessed atomically.

/// Magic, the first 8 bytes of a blackboard.
pub const MAGIC: &[u8; 8] = b"CNTDMETR";
/// Layout version this code reads and writes.
pub const VERSION: u32 = 1;
/// Endianness check as written by a little-endian writer.
pub const ENDIAN_CHECK: u32 = 0x0102_0304;
/// Size of the header, bytes.
pub const HEADER_SIZE: usize = 512;
/// Size of one meter slot, bytes.
pub const METER_SLOT_SIZE: usize = 256;
/// Size of one application slot, bytes.
pub const APP_SLOT_SIZE: usize = 128;
/// Meter slots a daemon creates.
pub const DEFAULT_METER_SLOTS: u32 = 512;
/// Application slots a daemon creates.
pub const DEFAULT_APP_SLOTS: u32 = 64;

/// Header flag: the daemon stopped and removed the blackboard's name
/// (readers holding the mapping should open the name again).
pub const FLAG_CLOSED: u32 = 1;

/// Header field offsets.
pub mod header {
    /// `char[8]` magic.
    pub const MAGIC: usize = 0;
    /// `u32` layout version.
    pub const VERSION: usize = 8;
    /// `u32` header size.
    pub const HEADER_SIZE: usize = 12;
    /// `u32` endianness check.
    pub const ENDIAN_CHECK: usize = 16;
    /// `u32` meter slot size.
    pub const METER_SLOT_SIZE: usize = 20;
    /// `u32` meter slots.
    pub const METER_SLOTS: usize = 24;
    /// `u32` application slot size.
    pub const APP_SLOT_SIZE: usize = 28;
    /// `u32` application slots.
    pub const APP_SLOTS: usize = 32;
    /// `u32` flags ([`super::FLAG_CLOSED`]), atomic.
    pub const FLAGS: usize = 36;
    /// `u64` offset of meter slot 0.
    pub const METER_TABLE: usize = 40;
    /// `u64` offset of application slot 0.
    pub const APP_TABLE: usize = 48;
    /// `u64` pid of the writing daemon.
    pub const WRITER_PID: usize = 56;
    /// `u64` generation: CLOCK_REALTIME ns when the daemon created it.
    pub const GENERATION: usize = 64;
    /// `u64` the daemon's interval, ns.
    pub const INTERVAL_NS: usize = 72;
    /// `u64` CLOCK_MONOTONIC ns of the daemon's last tick, atomic.
    pub const HEARTBEAT_NS: usize = 80;
    /// `u32` meter slots in use (0..n), atomic, stored with release.
    pub const METERS_USED: usize = 88;
    /// `u32` reserved, 0.
    pub const RESERVED0: usize = 92;
    /// `u64` short-term window, ns.
    pub const WINDOW_NS: usize = 96;
    /// `char[64]` host name.
    pub const HOST: usize = 104;
    /// Length of the host field.
    pub const HOST_LEN: usize = 64;
}

/// Meter slot field offsets (relative to the slot).
pub mod meter {
    /// `u64` seqlock sequence: odd while the writer changes the slot.
    pub const SEQ: usize = 0;
    /// `char[32]` meter name (`memory_latency`).
    pub const NAME: usize = 8;
    /// Length of the name field.
    pub const NAME_LEN: usize = 32;
    /// `char[16]` unit (`ns`, `bytes/s`).
    pub const UNIT: usize = 40;
    /// Length of the unit field.
    pub const UNIT_LEN: usize = 16;
    /// `u32` scope kind ([`super::Scope`] code).
    pub const SCOPE: usize = 56;
    /// `u32` scope id: node or CPU number, pid.
    pub const SCOPE_ID: usize = 60;
    /// `u64` object address (lock scope), else 0.
    pub const OBJECT: usize = 64;
    /// `char[32]` label: process command, lock name.
    pub const LABEL: usize = 72;
    /// Length of the label field.
    pub const LABEL_LEN: usize = 32;
    /// `u32` trigger state ([`super::TriggerState`] code).
    pub const TRIGGER_STATE: usize = 104;
    /// `u32` flags (`METER_FLAG_*`).
    pub const FLAGS: usize = 108;
    /// `f64` last value.
    pub const VALUE: usize = 112;
    /// `f64` short-term average.
    pub const AVG: usize = 120;
    /// `f64` short-term minimum.
    pub const MIN: usize = 128;
    /// `f64` short-term maximum.
    pub const MAX: usize = 136;
    /// `f64` high trigger level (NaN = none).
    pub const HIGH: usize = 144;
    /// `f64` low trigger level (NaN = none).
    pub const LOW: usize = 152;
    /// `u64` values published.
    pub const UPDATES: usize = 160;
    /// `u64` trigger state changes.
    pub const TRIGGER_CHANGES: usize = 168;
    /// `u64` CLOCK_MONOTONIC ns of the value.
    pub const TIME_NS: usize = 176;
    /// `u64` samples in the short-term window.
    pub const WINDOW_SAMPLES: usize = 184;
}

/// Meter flag: the slot holds a value.
pub const METER_FLAG_VALUE: u32 = 1;
/// Meter flag: the meter's source ended (the process exited).
pub const METER_FLAG_ENDED: u32 = 2;
/// Meter flag: the value is estimated (through the calibration curve).
pub const METER_FLAG_ESTIMATED: u32 = 4;

/// Application slot field offsets (relative to the slot).
pub mod app {
    /// `u64` seqlock sequence.
    pub const SEQ: usize = 0;
    /// `u64` pid of the owner (0 = free; claimed by compare-and-swap).
    pub const PID: usize = 8;
    /// `char[48]` current phase name.
    pub const PHASE: usize = 16;
    /// Length of the phase field.
    pub const PHASE_LEN: usize = 48;
    /// `u32` threads running.
    pub const THREADS_RUNNING: usize = 64;
    /// `u32` threads waiting (parked, blocked).
    pub const THREADS_WAITING: usize = 68;
    /// `u64` CLOCK_MONOTONIC ns of the last publication.
    pub const TIME_NS: usize = 72;
    /// `u64` publications.
    pub const UPDATES: usize = 80;
}

/// What a meter describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// The whole machine.
    Machine,
    /// One NUMA node (socket), by number.
    Node(u32),
    /// One CPU, by number.
    Cpu(u32),
    /// One process recorded by `contend record`, by pid.
    Process(u32),
    /// One lock of a recorded process: pid (the address is the slot's
    /// object field).
    Lock(u32),
}

impl Scope {
    /// (code, id) as stored.
    pub fn encode(self) -> (u32, u32) {
        match self {
            Scope::Machine => (0, 0),
            Scope::Node(n) => (1, n),
            Scope::Cpu(c) => (2, c),
            Scope::Process(p) => (3, p),
            Scope::Lock(p) => (4, p),
        }
    }

    /// From (code, id); `None` for an unknown code.
    pub fn decode(code: u32, id: u32) -> Option<Scope> {
        Some(match code {
            0 => Scope::Machine,
            1 => Scope::Node(id),
            2 => Scope::Cpu(id),
            3 => Scope::Process(id),
            4 => Scope::Lock(id),
            _ => return None,
        })
    }

    /// `machine`, `node:0`, `cpu:1`, `process:1234`, `lock:1234`.
    pub fn label(self) -> String {
        match self {
            Scope::Machine => "machine".into(),
            Scope::Node(n) => format!("node:{n}"),
            Scope::Cpu(c) => format!("cpu:{c}"),
            Scope::Process(p) => format!("process:{p}"),
            Scope::Lock(p) => format!("lock:{p}"),
        }
    }
}

/// A meter's trigger state (hysteresis; docs/meters.md, "Triggers").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TriggerState {
    /// The meter has no trigger levels.
    None,
    /// Not triggered: the short-term average has not reached the high
    /// level since it last fell to the low level.
    Clear,
    /// Triggered: the short-term average reached the high level and has
    /// not fallen to the low level since.
    High,
}

impl TriggerState {
    /// Code as stored (0, 1, 2).
    pub fn code(self) -> u32 {
        match self {
            TriggerState::None => 0,
            TriggerState::Clear => 1,
            TriggerState::High => 2,
        }
    }

    /// From the stored code (unknown codes read as `None`).
    pub fn from_code(c: u32) -> TriggerState {
        match c {
            1 => TriggerState::Clear,
            2 => TriggerState::High,
            _ => TriggerState::None,
        }
    }
}

/// Total size of a blackboard with the given slot counts, bytes.
pub fn total_size(meter_slots: u32, app_slots: u32) -> usize {
    HEADER_SIZE + METER_SLOT_SIZE * meter_slots as usize + APP_SLOT_SIZE * app_slots as usize
}
