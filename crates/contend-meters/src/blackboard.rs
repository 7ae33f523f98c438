//! The blackboard: a shared-memory region (`/dev/shm/contend-meters`, or a
//! name or path given) in which the meter daemon publishes every meter
//! and applications publish their own state (Fowler et al. 2011, "RCRdaemon
//! Blackboard"). Layout: [`crate::layout`], `collector/include/contend/meters.h`
//! and `docs/meters.md`.
//!
//! **Seqlock.** Each meter slot and each application slot has its own
//! sequence word. The one writer of a slot makes it odd, stores the
//! fields, and makes it even again (release); a reader loads it (acquire),
//! copies the slot, loads it again after an acquire fence and retries when
//! it was odd or changed. Readers never block the writer and never see a
//! value half written; every field is a whole atomic word, so the copy
//! itself is free of data races (Boehm, "Can seqlocks get along with
//! programming language memory models?", 2012).
//!
//! **One daemon per name.** [`Blackboard::create`] takes an exclusive
//! `flock` on `<path>.lock` (released by the kernel however the daemon
//! ends) and refuses a name another daemon holds
//! ([`BlackboardError::InUse`]). It builds the region in a temporary file
//! and renames it over the name, so readers never see a region half set
//! up; a restarted daemon makes a new region (a new generation) rather
//! than writing into the one readers still map. On a clean stop the
//! daemon sets [`FLAG_CLOSED`] and removes the name; [`Reader::refresh`]
//! notices the flag, a stale heartbeat or a new file under the name and
//! maps the name again.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

use memmap2::MmapRaw;

use crate::layout::{self, app, header as h, meter as m, Scope, TriggerState, FLAG_CLOSED};

/// Default blackboard name (`/dev/shm/contend-meters`).
pub const DEFAULT_NAME: &str = "contend-meters";

/// The file of a blackboard name: a name without `/` lives in `/dev/shm`;
/// anything else is a path.
pub fn path_of(name: &str) -> PathBuf {
    if name.contains('/') {
        PathBuf::from(name)
    } else {
        Path::new("/dev/shm").join(name)
    }
}

/// Errors creating or opening a blackboard; each names the file.
#[derive(Debug, thiserror::Error)]
pub enum BlackboardError {
    /// Another daemon holds the name.
    #[error("blackboard {}: in use by another contend meters daemon (pid {pid}); stop it first, or give this one another name with --blackboard", path.display())]
    InUse {
        /// The blackboard file.
        path: PathBuf,
        /// The daemon's pid as its blackboard says (0 = unknown).
        pid: u64,
    },
    /// No blackboard under that name.
    #[error("blackboard {}: no such blackboard (is `contend meters` running with this name?)", path.display())]
    Missing {
        /// The blackboard file.
        path: PathBuf,
    },
    /// The file is not a blackboard of this layout version.
    #[error("blackboard {}: {problem}", path.display())]
    Layout {
        /// The blackboard file.
        path: PathBuf,
        /// What is wrong.
        problem: String,
    },
    /// Creating, sizing, mapping or renaming failed.
    #[error("blackboard {}: {source}", path.display())]
    Io {
        /// The file concerned.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// Every meter slot is taken.
    #[error("blackboard {}: all {slots} meter slots are in use", path.display())]
    Full {
        /// The blackboard file.
        path: PathBuf,
        /// Slots.
        slots: u32,
    },
}

/// The mapped bytes, with atomic word access.
struct Region {
    map: MmapRaw,
}

impl Region {
    fn len(&self) -> usize {
        self.map.len()
    }
    fn u64(&self, off: usize) -> &AtomicU64 {
        assert!(off.is_multiple_of(8) && off + 8 <= self.len());
        // SAFETY: in bounds and 8-aligned (the mapping is page-aligned);
        // the memory lives as long as the map, shared words are only
        // ever accessed atomically.
        unsafe { &*(self.map.as_ptr().add(off) as *const AtomicU64) }
    }
    fn u32(&self, off: usize) -> &AtomicU32 {
        assert!(off.is_multiple_of(4) && off + 4 <= self.len());
        // SAFETY: as in `u64`.
        unsafe { &*(self.map.as_ptr().add(off) as *const AtomicU32) }
    }
    fn get_u64(&self, off: usize) -> u64 {
        self.u64(off).load(Ordering::Relaxed)
    }
    fn get_u32(&self, off: usize) -> u32 {
        self.u32(off).load(Ordering::Relaxed)
    }
    fn set_u64(&self, off: usize, v: u64) {
        self.u64(off).store(v, Ordering::Relaxed)
    }
    fn set_u32(&self, off: usize, v: u32) {
        self.u32(off).store(v, Ordering::Relaxed)
    }
    fn set_f64(&self, off: usize, v: f64) {
        self.set_u64(off, v.to_bits())
    }
    /// Stores `s` (truncated, NUL-padded) into the `len`-byte field at
    /// `off` (a multiple of 8 long), word by word.
    fn set_str(&self, off: usize, len: usize, s: &str) {
        let mut bytes = vec![0u8; len];
        let b = s.as_bytes();
        let n = b.len().min(len - 1);
        bytes[..n].copy_from_slice(&b[..n]);
        for (i, w) in bytes.chunks_exact(8).enumerate() {
            self.set_u64(
                off + 8 * i,
                u64::from_le_bytes(w.try_into().expect("8 bytes")),
            );
        }
    }
    /// Copies `n` words from `off` into `out`.
    fn copy_words(&self, off: usize, out: &mut [u64]) {
        for (i, w) in out.iter_mut().enumerate() {
            *w = self.get_u64(off + 8 * i);
        }
    }
}

fn str_from_words(words: &[u64], off: usize, len: usize) -> String {
    let mut bytes = Vec::with_capacity(len);
    for w in &words[off / 8..(off + len) / 8] {
        bytes.extend_from_slice(&w.to_le_bytes());
    }
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..end]).into_owned()
}

/// What a meter slot describes (fixed when the slot is allocated).
#[derive(Debug, Clone, PartialEq)]
pub struct MeterDesc {
    /// Name (`memory_latency`), at most 31 bytes.
    pub name: String,
    /// Unit (`ns`, `bytes/s`, `lines`, `tasks`, `fraction`), at most 15 bytes.
    pub unit: String,
    /// What it describes.
    pub scope: Scope,
    /// Lock address for [`Scope::Lock`], else 0.
    pub object: u64,
    /// Process command or lock name, at most 31 bytes.
    pub label: String,
    /// Trigger levels (high, low), when it has them.
    pub levels: Option<(f64, f64)>,
}

/// A meter's published values.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct MeterValues {
    /// Last value.
    pub value: f64,
    /// Short-term average, minimum and maximum over the window.
    pub avg: f64,
    /// Short-term minimum.
    pub min: f64,
    /// Short-term maximum.
    pub max: f64,
    /// Samples in the window.
    pub window_samples: u64,
    /// CLOCK_MONOTONIC ns of the value.
    pub time_ns: u64,
    /// Values published so far.
    pub updates: u64,
    /// Trigger state after this value.
    pub trigger: Option<TriggerState>,
    /// Trigger state changes so far.
    pub trigger_changes: u64,
    /// The value is estimated through the calibration curve.
    pub estimated: bool,
    /// The meter's source ended (its process exited).
    pub ended: bool,
}

/// A consistent copy of one meter slot.
#[derive(Debug, Clone, PartialEq)]
pub struct MeterSnapshot {
    /// Slot index.
    pub slot: u32,
    /// Description.
    pub desc: MeterDesc,
    /// Values; `None` before the first value.
    pub values: Option<MeterValues>,
    /// Trigger state (`None` state when the meter has no levels).
    pub trigger: TriggerState,
    /// Trigger changes so far.
    pub trigger_changes: u64,
    /// Sequence word of the copy (even).
    pub seq: u64,
}

/// A consistent copy of one application slot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppSnapshot {
    /// Slot index.
    pub slot: u32,
    /// Owner pid.
    pub pid: u32,
    /// Current phase name.
    pub phase: String,
    /// Threads running.
    pub threads_running: u32,
    /// Threads waiting.
    pub threads_waiting: u32,
    /// CLOCK_MONOTONIC ns of the last publication.
    pub time_ns: u64,
    /// Publications so far.
    pub updates: u64,
}

/// CLOCK_MONOTONIC now, ns (the blackboard's time base; the recorder's
/// clock, `contend_record::host::monotonic_ns`).
pub use contend_record::host::monotonic_ns;

fn realtime_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// The daemon's side: creates the region and writes meters.
pub struct Blackboard {
    path: PathBuf,
    region: Region,
    _lock: File,
    lock_path: PathBuf,
    ino: u64,
    meter_slots: u32,
    used: u32,
    closed: bool,
}

/// Options of [`Blackboard::create`].
#[derive(Debug, Clone, Copy)]
pub struct CreateOptions {
    /// The daemon's interval, ns.
    pub interval_ns: u64,
    /// Short-term window, ns.
    pub window_ns: u64,
    /// Meter slots.
    pub meter_slots: u32,
    /// Application slots.
    pub app_slots: u32,
    /// Let every user write (applications of other users publish their
    /// state): mode 0666 instead of 0644.
    pub world_writable: bool,
}

impl Default for CreateOptions {
    fn default() -> Self {
        CreateOptions {
            interval_ns: 1_000_000,
            window_ns: 100_000_000,
            meter_slots: layout::DEFAULT_METER_SLOTS,
            app_slots: layout::DEFAULT_APP_SLOTS,
            world_writable: false,
        }
    }
}

impl Blackboard {
    /// Creates the blackboard at `path` (see [`path_of`]) for this
    /// process: takes the name's lock, builds a new region and renames it
    /// over the name (a stale region of a daemon that died is replaced).
    ///
    /// Errors: [`BlackboardError::InUse`] when another daemon holds the
    /// name; [`BlackboardError::Io`] when a file cannot be made.
    pub fn create(path: &Path, opts: &CreateOptions) -> Result<Blackboard, BlackboardError> {
        let io = |p: &Path| {
            let p = p.to_path_buf();
            move |source| BlackboardError::Io { path: p, source }
        };
        let mut lock_name = path.as_os_str().to_os_string();
        lock_name.push(".lock");
        let lock_path = PathBuf::from(lock_name);
        let lock = loop {
            let f = OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .mode(0o644)
                .open(&lock_path)
                .map_err(io(&lock_path))?;
            // SAFETY: flock on an open descriptor.
            if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
                let e = std::io::Error::last_os_error();
                if e.raw_os_error() == Some(libc::EWOULDBLOCK) {
                    let pid = Reader::open(path).map(|r| r.writer_pid()).unwrap_or(0);
                    return Err(BlackboardError::InUse {
                        path: path.to_path_buf(),
                        pid,
                    });
                }
                return Err(BlackboardError::Io {
                    path: lock_path,
                    source: e,
                });
            }
            // The lock file may have been removed by a daemon that just
            // stopped: hold the lock of the file that is under the name.
            let same = std::fs::metadata(&lock_path)
                .ok()
                .zip(f.metadata().ok())
                .is_some_and(|(a, b)| a.ino() == b.ino() && a.dev() == b.dev());
            if same {
                break f;
            }
        };
        let size = layout::total_size(opts.meter_slots, opts.app_slots);
        let mut tmp_name = path.as_os_str().to_os_string();
        tmp_name.push(format!(".tmp.{}", std::process::id()));
        let tmp = PathBuf::from(tmp_name);
        let _ = std::fs::remove_file(&tmp);
        let mode = if opts.world_writable { 0o666 } else { 0o644 };
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(&tmp)
            .map_err(io(&tmp))?;
        if opts.world_writable {
            // The umask may have removed bits.
            use std::os::unix::fs::PermissionsExt;
            let _ = file.set_permissions(std::fs::Permissions::from_mode(0o666));
        }
        file.set_len(size as u64).map_err(io(&tmp))?;
        let map = MmapRaw::map_raw(&file).map_err(io(&tmp))?;
        let region = Region { map };
        region.set_u64(h::MAGIC, u64::from_le_bytes(*layout::MAGIC));
        region.set_u32(h::VERSION, layout::VERSION);
        region.set_u32(h::HEADER_SIZE, layout::HEADER_SIZE as u32);
        region.set_u32(h::ENDIAN_CHECK, layout::ENDIAN_CHECK);
        region.set_u32(h::METER_SLOT_SIZE, layout::METER_SLOT_SIZE as u32);
        region.set_u32(h::METER_SLOTS, opts.meter_slots);
        region.set_u32(h::APP_SLOT_SIZE, layout::APP_SLOT_SIZE as u32);
        region.set_u32(h::APP_SLOTS, opts.app_slots);
        region.set_u64(h::METER_TABLE, layout::HEADER_SIZE as u64);
        region.set_u64(
            h::APP_TABLE,
            (layout::HEADER_SIZE + layout::METER_SLOT_SIZE * opts.meter_slots as usize) as u64,
        );
        region.set_u64(h::WRITER_PID, u64::from(std::process::id()));
        region.set_u64(h::GENERATION, realtime_ns());
        region.set_u64(h::INTERVAL_NS, opts.interval_ns);
        region.set_u64(h::HEARTBEAT_NS, monotonic_ns());
        region.set_u64(h::WINDOW_NS, opts.window_ns);
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
        region.set_str(h::HOST, h::HOST_LEN, host.trim());
        fence(Ordering::Release);
        std::fs::rename(&tmp, path).map_err(|source| {
            let _ = std::fs::remove_file(&tmp);
            BlackboardError::Io {
                path: path.to_path_buf(),
                source,
            }
        })?;
        let ino = file.metadata().map(|m| m.ino()).unwrap_or(0);
        Ok(Blackboard {
            path: path.to_path_buf(),
            region,
            _lock: lock,
            lock_path,
            ino,
            meter_slots: opts.meter_slots,
            used: 0,
            closed: false,
        })
    }

    /// The blackboard file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The generation written in the header.
    pub fn generation(&self) -> u64 {
        self.region.get_u64(h::GENERATION)
    }

    fn slot_off(&self, slot: u32) -> usize {
        layout::HEADER_SIZE + layout::METER_SLOT_SIZE * slot as usize
    }

    /// Allocates the next meter slot with `desc` and returns its index.
    /// The slot becomes visible to readers (the used count is stored with
    /// release after the description).
    ///
    /// Errors: [`BlackboardError::Full`].
    pub fn add_meter(&mut self, desc: &MeterDesc) -> Result<u32, BlackboardError> {
        if self.used >= self.meter_slots {
            return Err(BlackboardError::Full {
                path: self.path.clone(),
                slots: self.meter_slots,
            });
        }
        let slot = self.used;
        self.describe(slot, desc);
        self.used += 1;
        self.region
            .u32(h::METERS_USED)
            .store(self.used, Ordering::Release);
        Ok(slot)
    }

    /// Gives slot `slot` (already allocated) a new description and clears
    /// its values (reuse of the slot of an ended process).
    pub fn describe(&mut self, slot: u32, desc: &MeterDesc) {
        let o = self.slot_off(slot);
        let r = &self.region;
        let seq = r.u64(o + m::SEQ);
        let s = seq.load(Ordering::Relaxed);
        seq.store(s | 1, Ordering::Relaxed);
        fence(Ordering::Release);
        r.set_str(o + m::NAME, m::NAME_LEN, &desc.name);
        r.set_str(o + m::UNIT, m::UNIT_LEN, &desc.unit);
        let (code, id) = desc.scope.encode();
        r.set_u32(o + m::SCOPE, code);
        r.set_u32(o + m::SCOPE_ID, id);
        r.set_u64(o + m::OBJECT, desc.object);
        r.set_str(o + m::LABEL, m::LABEL_LEN, &desc.label);
        let (hi, lo) = desc.levels.unwrap_or((f64::NAN, f64::NAN));
        r.set_f64(o + m::HIGH, hi);
        r.set_f64(o + m::LOW, lo);
        let state = if desc.levels.is_some() {
            TriggerState::Clear
        } else {
            TriggerState::None
        };
        r.set_u32(o + m::TRIGGER_STATE, state.code());
        r.set_u32(o + m::FLAGS, 0);
        for f in [m::VALUE, m::AVG, m::MIN, m::MAX] {
            r.set_f64(o + f, f64::NAN);
        }
        for f in [
            m::UPDATES,
            m::TRIGGER_CHANGES,
            m::TIME_NS,
            m::WINDOW_SAMPLES,
        ] {
            r.set_u64(o + f, 0);
        }
        seq.store((s | 1) + 1, Ordering::Release);
    }

    /// Publishes new values of meter `slot` under its seqlock.
    pub fn publish(&self, slot: u32, v: &MeterValues) {
        let o = self.slot_off(slot);
        let r = &self.region;
        let seq = r.u64(o + m::SEQ);
        let s = seq.load(Ordering::Relaxed);
        seq.store(s | 1, Ordering::Relaxed);
        fence(Ordering::Release);
        r.set_f64(o + m::VALUE, v.value);
        r.set_f64(o + m::AVG, v.avg);
        r.set_f64(o + m::MIN, v.min);
        r.set_f64(o + m::MAX, v.max);
        r.set_u64(o + m::WINDOW_SAMPLES, v.window_samples);
        r.set_u64(o + m::TIME_NS, v.time_ns);
        r.set_u64(o + m::UPDATES, v.updates);
        if let Some(t) = v.trigger {
            r.set_u32(o + m::TRIGGER_STATE, t.code());
        }
        r.set_u64(o + m::TRIGGER_CHANGES, v.trigger_changes);
        let mut flags = layout::METER_FLAG_VALUE;
        if v.estimated {
            flags |= layout::METER_FLAG_ESTIMATED;
        }
        if v.ended {
            flags |= layout::METER_FLAG_ENDED;
        }
        r.set_u32(o + m::FLAGS, flags);
        seq.store((s | 1) + 1, Ordering::Release);
    }

    /// Stores the heartbeat (CLOCK_MONOTONIC now): readers take a
    /// blackboard whose heartbeat is old for one whose daemon died.
    pub fn heartbeat(&self) {
        self.region
            .u64(h::HEARTBEAT_NS)
            .store(monotonic_ns(), Ordering::Release);
    }

    /// Frees the application slots of processes that no longer exist.
    pub fn reap_app_slots(&self) {
        let slots = self.region.get_u32(h::APP_SLOTS);
        let base = self.region.get_u64(h::APP_TABLE) as usize;
        for i in 0..slots as usize {
            let o = base + layout::APP_SLOT_SIZE * i;
            let pid = self.region.get_u64(o + app::PID);
            if pid != 0 && !process_alive(pid as u32) {
                let _ = self.region.u64(o + app::PID).compare_exchange(
                    pid,
                    0,
                    Ordering::AcqRel,
                    Ordering::Relaxed,
                );
            }
        }
    }

    /// Marks the blackboard closed and removes its name (when the name
    /// still refers to this region) and lock file. Also done on drop.
    pub fn close(&mut self) {
        if self.closed {
            return;
        }
        self.closed = true;
        self.region
            .u32(h::FLAGS)
            .fetch_or(FLAG_CLOSED, Ordering::AcqRel);
        if std::fs::metadata(&self.path).is_ok_and(|md| md.ino() == self.ino) {
            let _ = std::fs::remove_file(&self.path);
        }
        let _ = std::fs::remove_file(&self.lock_path);
    }
}

impl Drop for Blackboard {
    fn drop(&mut self) {
        self.close();
    }
}

/// True when process `pid` exists (signal 0; EPERM means it exists).
pub fn process_alive(pid: u32) -> bool {
    if pid == 0 {
        return false;
    }
    // SAFETY: kill with signal 0 only checks.
    let rc = unsafe { libc::kill(pid as libc::pid_t, 0) };
    rc == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// What [`Reader::refresh`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Freshness {
    /// The mapped region is live.
    Live,
    /// The daemon had stopped or restarted: the name was mapped again
    /// (a new generation).
    Reopened,
    /// No live daemon under the name (the region stays mapped, with its
    /// last values).
    NoDaemon,
}

/// A reader of a blackboard (applications, tests).
pub struct Reader {
    path: PathBuf,
    region: Region,
    ino: u64,
    writable: bool,
}

impl Reader {
    /// Maps the blackboard at `path` read-only and checks its layout.
    ///
    /// Errors: [`BlackboardError::Missing`], [`BlackboardError::Layout`]
    /// (another magic, version, endianness or size: the message says which
    /// version was found and which this contend reads).
    pub fn open(path: &Path) -> Result<Reader, BlackboardError> {
        Reader::open_with(path, false)
    }

    /// Maps it read-write, for applications that publish their state.
    pub fn open_writable(path: &Path) -> Result<Reader, BlackboardError> {
        Reader::open_with(path, true)
    }

    fn open_with(path: &Path, writable: bool) -> Result<Reader, BlackboardError> {
        let file = OpenOptions::new()
            .read(true)
            .write(writable)
            .open(path)
            .map_err(|source| {
                if source.kind() == std::io::ErrorKind::NotFound {
                    BlackboardError::Missing {
                        path: path.to_path_buf(),
                    }
                } else {
                    BlackboardError::Io {
                        path: path.to_path_buf(),
                        source,
                    }
                }
            })?;
        let md = file.metadata().map_err(|source| BlackboardError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let bad = |problem: String| BlackboardError::Layout {
            path: path.to_path_buf(),
            problem,
        };
        if md.len() < layout::HEADER_SIZE as u64 {
            return Err(bad(format!(
                "{} bytes, shorter than a blackboard header ({} bytes): not a contend blackboard",
                md.len(),
                layout::HEADER_SIZE
            )));
        }
        let map = if writable {
            MmapRaw::map_raw(&file)
        } else {
            memmap2::MmapOptions::new().map_raw_read_only(&file)
        }
        .map_err(|source| BlackboardError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let region = Region { map };
        let mut magic = [0u8; 8];
        magic.copy_from_slice(&region.get_u64(h::MAGIC).to_le_bytes());
        if &magic != layout::MAGIC {
            return Err(bad("not a contend blackboard (bad magic)".into()));
        }
        let version = region.get_u32(h::VERSION);
        if version != layout::VERSION {
            return Err(bad(format!(
                "layout version {version}, but this contend reads version {} only; use the contend that runs the daemon, or restart the daemon with this one",
                layout::VERSION
            )));
        }
        if region.get_u32(h::ENDIAN_CHECK) != layout::ENDIAN_CHECK {
            return Err(bad("written with another byte order".into()));
        }
        let ms = region.get_u32(h::METER_SLOTS);
        let aps = region.get_u32(h::APP_SLOTS);
        if region.get_u32(h::HEADER_SIZE) as usize != layout::HEADER_SIZE
            || region.get_u32(h::METER_SLOT_SIZE) as usize != layout::METER_SLOT_SIZE
            || region.get_u32(h::APP_SLOT_SIZE) as usize != layout::APP_SLOT_SIZE
            || region.get_u64(h::METER_TABLE) as usize != layout::HEADER_SIZE
            || region.len() < layout::total_size(ms, aps)
        {
            return Err(bad(format!(
                "inconsistent sizes ({} bytes for {ms} meter and {aps} application slots)",
                region.len()
            )));
        }
        Ok(Reader {
            path: path.to_path_buf(),
            region,
            ino: md.ino(),
            writable,
        })
    }

    /// The blackboard file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The daemon's pid.
    pub fn writer_pid(&self) -> u64 {
        self.region.get_u64(h::WRITER_PID)
    }

    /// The generation (CLOCK_REALTIME ns at creation).
    pub fn generation(&self) -> u64 {
        self.region.get_u64(h::GENERATION)
    }

    /// The daemon's interval, ns.
    pub fn interval_ns(&self) -> u64 {
        self.region.get_u64(h::INTERVAL_NS)
    }

    /// The short-term window, ns.
    pub fn window_ns(&self) -> u64 {
        self.region.get_u64(h::WINDOW_NS)
    }

    /// The host name the daemon runs on.
    pub fn host(&self) -> String {
        let mut w = [0u64; h::HOST_LEN / 8];
        self.region.copy_words(h::HOST, &mut w);
        str_from_words(&w, 0, h::HOST_LEN)
    }

    /// CLOCK_MONOTONIC ns of the daemon's last tick.
    pub fn heartbeat_ns(&self) -> u64 {
        self.region.u64(h::HEARTBEAT_NS).load(Ordering::Acquire)
    }

    /// True when the daemon stopped cleanly.
    pub fn closed(&self) -> bool {
        self.region.u32(h::FLAGS).load(Ordering::Acquire) & FLAG_CLOSED != 0
    }

    /// True when the daemon looks alive: not closed, its process exists
    /// and its heartbeat is younger than `max(20 × interval, 2 s)`.
    pub fn live(&self) -> bool {
        if self.closed() || !process_alive(self.writer_pid() as u32) {
            return false;
        }
        let limit = (20 * self.interval_ns()).max(2_000_000_000);
        monotonic_ns().saturating_sub(self.heartbeat_ns()) < limit
    }

    /// Checks that the mapped region is still the daemon's: when the
    /// daemon stopped, died or was restarted (a new file under the name),
    /// maps the name again. Never fails: without a daemon the old mapping
    /// stays and [`Freshness::NoDaemon`] is returned.
    pub fn refresh(&mut self) -> Freshness {
        let replaced = std::fs::metadata(&self.path).is_ok_and(|md| md.ino() != self.ino);
        if replaced || !self.live() {
            if let Ok(r) = Reader::open_with(&self.path, self.writable) {
                let new = r.ino != self.ino;
                *self = r;
                if self.live() {
                    return if new {
                        Freshness::Reopened
                    } else {
                        Freshness::Live
                    };
                }
            }
            return Freshness::NoDaemon;
        }
        Freshness::Live
    }

    /// Meter slots published.
    pub fn meters_used(&self) -> u32 {
        self.region
            .u32(h::METERS_USED)
            .load(Ordering::Acquire)
            .min(self.region.get_u32(h::METER_SLOTS))
    }

    /// A consistent copy of meter slot `slot`, or `None` when the writer
    /// kept changing it for 10 000 tries (the daemon publishes a slot once
    /// an interval and never does; a writer publishing without pause can).
    pub fn meter(&self, slot: u32) -> Option<MeterSnapshot> {
        if slot >= self.meters_used() {
            return None;
        }
        let o = layout::HEADER_SIZE + layout::METER_SLOT_SIZE * slot as usize;
        let seq = self.region.u64(o + m::SEQ);
        let mut w = [0u64; layout::METER_SLOT_SIZE / 8];
        for attempt in 0..10_000 {
            let s1 = seq.load(Ordering::Acquire);
            if s1 & 1 == 1 {
                if attempt > 100 {
                    std::thread::yield_now();
                }
                std::hint::spin_loop();
                continue;
            }
            self.region.copy_words(o, &mut w);
            fence(Ordering::Acquire);
            let s2 = seq.load(Ordering::Relaxed);
            if s1 == s2 {
                return Some(decode_meter(slot, &w, s1));
            }
        }
        None
    }

    /// Consistent copies of every published meter slot.
    pub fn meters(&self) -> Vec<MeterSnapshot> {
        (0..self.meters_used())
            .filter_map(|s| self.meter(s))
            .collect()
    }

    /// The first meter named `name` with scope `scope`.
    pub fn find(&self, name: &str, scope: Scope) -> Option<MeterSnapshot> {
        self.meters()
            .into_iter()
            .find(|s| s.desc.name == name && s.desc.scope == scope)
    }

    /// Consistent copies of the claimed application slots.
    pub fn apps(&self) -> Vec<AppSnapshot> {
        let slots = self.region.get_u32(h::APP_SLOTS);
        let base = self.region.get_u64(h::APP_TABLE) as usize;
        let mut out = Vec::new();
        let mut w = [0u64; layout::APP_SLOT_SIZE / 8];
        for i in 0..slots {
            let o = base + layout::APP_SLOT_SIZE * i as usize;
            if self.region.get_u64(o + app::PID) == 0 {
                continue;
            }
            let seq = self.region.u64(o + app::SEQ);
            for _ in 0..10_000 {
                let s1 = seq.load(Ordering::Acquire);
                if s1 & 1 == 1 {
                    std::hint::spin_loop();
                    continue;
                }
                self.region.copy_words(o, &mut w);
                fence(Ordering::Acquire);
                if seq.load(Ordering::Relaxed) == s1 {
                    if w[app::PID / 8] != 0 {
                        out.push(AppSnapshot {
                            slot: i,
                            pid: w[app::PID / 8] as u32,
                            phase: str_from_words(&w, app::PHASE, app::PHASE_LEN),
                            threads_running: w[app::THREADS_RUNNING / 8] as u32,
                            threads_waiting: (w[app::THREADS_WAITING / 8] >> 32) as u32,
                            time_ns: w[app::TIME_NS / 8],
                            updates: w[app::UPDATES / 8],
                        });
                    }
                    break;
                }
            }
        }
        out
    }

    /// Claims an application slot for this process (the reader must be
    /// [`Reader::open_writable`]); `None` when every slot is taken or the
    /// mapping is read-only.
    pub fn claim_app_slot(&self) -> Option<u32> {
        if !self.writable {
            return None;
        }
        let slots = self.region.get_u32(h::APP_SLOTS);
        let base = self.region.get_u64(h::APP_TABLE) as usize;
        let me = u64::from(std::process::id());
        (0..slots).find(|&i| {
            let o = base + layout::APP_SLOT_SIZE * i as usize;
            self.region
                .u64(o + app::PID)
                .compare_exchange(0, me, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
        })
    }

    /// Publishes this process's state in its claimed slot `slot`.
    pub fn publish_app(&self, slot: u32, phase: &str, running: u32, waiting: u32) {
        let base = self.region.get_u64(h::APP_TABLE) as usize;
        let o = base + layout::APP_SLOT_SIZE * slot as usize;
        let r = &self.region;
        let seq = r.u64(o + app::SEQ);
        let s = seq.load(Ordering::Relaxed);
        seq.store(s | 1, Ordering::Relaxed);
        fence(Ordering::Release);
        r.set_str(o + app::PHASE, app::PHASE_LEN, phase);
        r.set_u32(o + app::THREADS_RUNNING, running);
        r.set_u32(o + app::THREADS_WAITING, waiting);
        r.set_u64(o + app::TIME_NS, monotonic_ns());
        let n = r.get_u64(o + app::UPDATES);
        r.set_u64(o + app::UPDATES, n + 1);
        seq.store((s | 1) + 1, Ordering::Release);
    }

    /// Waits until the daemon has published `n` meters or `timeout`
    /// passed; true when it did.
    pub fn wait_for_meters(&self, n: u32, timeout: Duration) -> bool {
        let end = std::time::Instant::now() + timeout;
        while self.meters_used() < n {
            if std::time::Instant::now() >= end {
                return false;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        true
    }
}

fn decode_meter(slot: u32, w: &[u64], seq: u64) -> MeterSnapshot {
    let word = |off: usize| w[off / 8];
    let half = |off: usize| {
        let x = w[off / 8];
        if off.is_multiple_of(8) {
            x as u32
        } else {
            (x >> 32) as u32
        }
    };
    let f = |off: usize| f64::from_bits(word(off));
    let scope = Scope::decode(half(m::SCOPE), half(m::SCOPE_ID)).unwrap_or(Scope::Machine);
    let (hi, lo) = (f(m::HIGH), f(m::LOW));
    let flags = half(m::FLAGS);
    let trigger = TriggerState::from_code(half(m::TRIGGER_STATE));
    let values = (flags & layout::METER_FLAG_VALUE != 0).then(|| MeterValues {
        value: f(m::VALUE),
        avg: f(m::AVG),
        min: f(m::MIN),
        max: f(m::MAX),
        window_samples: word(m::WINDOW_SAMPLES),
        time_ns: word(m::TIME_NS),
        updates: word(m::UPDATES),
        trigger: Some(trigger),
        trigger_changes: word(m::TRIGGER_CHANGES),
        estimated: flags & layout::METER_FLAG_ESTIMATED != 0,
        ended: flags & layout::METER_FLAG_ENDED != 0,
    });
    MeterSnapshot {
        slot,
        desc: MeterDesc {
            name: str_from_words(w, m::NAME, m::NAME_LEN),
            unit: str_from_words(w, m::UNIT, m::UNIT_LEN),
            scope,
            object: word(m::OBJECT),
            label: str_from_words(w, m::LABEL, m::LABEL_LEN),
            levels: (!hi.is_nan() && !lo.is_nan()).then_some((hi, lo)),
        },
        values,
        trigger,
        trigger_changes: word(m::TRIGGER_CHANGES),
        seq,
    }
}
