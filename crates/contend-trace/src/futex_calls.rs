//! Futex calls seen by the kernel's `syscalls:sys_enter_futex` /
//! `syscalls:sys_exit_futex` tracepoints (`futex/` of a recording): the
//! sibling of the collector's futex records (trace_format.h, "Futex
//! records") for what the interposed `syscall()` cannot see: inline
//! system calls, statically linked programs, Go's runtime, a running
//! process (`contend record -p PID`). `contend-record`'s probe session
//! writes it (`--futex-trace`); the futex analysis of `contend` reads it
//! and, for a process that has tracepoint records, uses them instead of
//! the collector's (one source per process, never both).
//!
//! Two files, both defined here:
//!
//! * `futex/futex.json` ([`FutexTraceManifest`]): which processes were
//!   traced, why the tracepoints could not be used when they could not,
//!   records the kernel dropped.
//! * `futex/calls.cftx`: a 32-byte header and variable-size records, all
//!   little-endian; one record per futex call, its entry and exit already
//!   paired per thread by the recorder:
//!
//! ```text
//! header  magic "CNTDFUTX" | u32 version | u32 header size (32) | 16 bytes reserved
//! record  u64 enter_ns | u64 exit_ns (CLOCK_MONOTONIC; 0 = the recording
//!         ended inside the call) | u32 pid | u32 tid | u64 uaddr
//!         | u32 op (the futex op word) | u32 val | i64 ret (the syscall's
//!         return: ≥ 0, or −errno) | u32 frames | u32 reserved
//!         | frames × u64 user call chain (innermost first: the instruction
//!         after the `syscall`, then return addresses)
//! ```
//!
//! A record is 56 + 8 × frames bytes. The writer appends whole records in
//! batches, one `write(2)` each; the reader keeps every complete record
//! and reports a cut-off tail.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::TraceError;

/// Subdirectory of a recording holding the futex tracepoint files.
pub const DIR: &str = "futex";
/// File name of the manifest inside [`DIR`].
pub const MANIFEST: &str = "futex.json";
/// File name of the calls inside [`DIR`].
pub const CALLS: &str = "calls.cftx";
/// File magic.
pub const MAGIC: &[u8; 8] = b"CNTDFUTX";
/// Format version this module writes and reads.
pub const VERSION: u32 = 1;
/// Size of the header, bytes.
pub const HEADER_SIZE: usize = 32;
/// Size of a record without its call chain, bytes.
pub const FIXED_SIZE: usize = 56;
/// Most frames a record carries (longer chains are cut).
pub const MAX_FRAMES: usize = 127;

/// One futex system call of one thread (entry and exit paired).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FutexCall {
    /// Entry, CLOCK_MONOTONIC ns.
    pub enter_ns: u64,
    /// Exit, CLOCK_MONOTONIC ns; `None` when the recording ended inside
    /// the call.
    pub exit_ns: Option<u64>,
    /// Process id (thread-group id).
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// The futex word's address.
    pub uaddr: u64,
    /// The op word (command | `FUTEX_PRIVATE_FLAG` | `FUTEX_CLOCK_REALTIME`).
    pub op: u32,
    /// The `val` argument (expected value of a wait, waiters to wake).
    pub val: u32,
    /// The return value: ≥ 0, or −errno (0 when unfinished).
    pub ret: i64,
    /// User call chain, innermost first (at most [`MAX_FRAMES`]).
    pub frames: Vec<u64>,
}

impl FutexCall {
    /// Appends the record's bytes to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        let n = self.frames.len().min(MAX_FRAMES);
        out.extend_from_slice(&self.enter_ns.to_le_bytes());
        out.extend_from_slice(&self.exit_ns.unwrap_or(0).to_le_bytes());
        out.extend_from_slice(&self.pid.to_le_bytes());
        out.extend_from_slice(&self.tid.to_le_bytes());
        out.extend_from_slice(&self.uaddr.to_le_bytes());
        out.extend_from_slice(&self.op.to_le_bytes());
        out.extend_from_slice(&self.val.to_le_bytes());
        out.extend_from_slice(&self.ret.to_le_bytes());
        out.extend_from_slice(&(n as u32).to_le_bytes());
        out.extend_from_slice(&0u32.to_le_bytes());
        for f in &self.frames[..n] {
            out.extend_from_slice(&f.to_le_bytes());
        }
    }

    /// Decodes the record at the start of `b`: the call and its size, or
    /// `None` when `b` holds no complete record.
    pub fn decode(b: &[u8]) -> Option<(FutexCall, usize)> {
        if b.len() < FIXED_SIZE {
            return None;
        }
        let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().unwrap());
        let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap());
        let n = u32_at(48) as usize;
        if n > MAX_FRAMES {
            return None;
        }
        let size = FIXED_SIZE + 8 * n;
        if b.len() < size {
            return None;
        }
        let exit = u64_at(8);
        Some((
            FutexCall {
                enter_ns: u64_at(0),
                exit_ns: (exit != 0).then_some(exit),
                pid: u32_at(16),
                tid: u32_at(20),
                uaddr: u64_at(24),
                op: u32_at(32),
                val: u32_at(36),
                ret: u64_at(40) as i64,
                frames: (0..n).map(|k| u64_at(FIXED_SIZE + 8 * k)).collect(),
            },
            size,
        ))
    }
}

/// `futex/futex.json`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FutexTraceManifest {
    /// Always `"tracepoints"`: the source of the processes listed in
    /// `pids`, whose collector futex records (if any) are not used.
    pub source: String,
    /// Why the tracepoints were used (`statically linked target`,
    /// `attached to a running process`, `--futex-trace on`).
    pub reason: String,
    /// The tracepoints were opened on the target.
    pub traced: bool,
    /// Processes with at least one recorded call.
    pub pids: Vec<u32>,
    /// Calls written.
    pub calls: u64,
    /// Records the kernel dropped because a ring buffer was full.
    pub lost: u64,
    /// Why the tracepoints could not be opened (or what went wrong), one
    /// sentence each; names what to change.
    pub errors: Vec<String>,
}

impl FutexTraceManifest {
    /// Writes `dir/futex/futex.json` (dir = the recording), creating
    /// `futex/`. Errors: the file cannot be written.
    pub fn write(&self, dir: &Path) -> Result<(), TraceError> {
        let sub = dir.join(DIR);
        std::fs::create_dir_all(&sub).map_err(|source| TraceError::Io {
            path: sub.clone(),
            source,
        })?;
        let path = sub.join(MANIFEST);
        let text = serde_json::to_string_pretty(self).expect("manifest serialises");
        std::fs::write(&path, text).map_err(|source| TraceError::Io { path, source })
    }
}

/// Appends records to `futex/calls.cftx` in whole-record batches.
#[derive(Debug)]
pub struct FutexCallWriter {
    out: crate::BatchWriter,
    /// Records written so far.
    pub records: u64,
}

impl FutexCallWriter {
    /// Creates `dir/futex/calls.cftx` (dir = the recording; the file must
    /// not exist) and writes the header. Errors: it cannot be created or
    /// written.
    pub fn create(dir: &Path) -> Result<FutexCallWriter, TraceError> {
        let sub = dir.join(DIR);
        let path = sub.join(CALLS);
        std::fs::create_dir_all(&sub).map_err(|source| TraceError::Io {
            path: path.clone(),
            source,
        })?;
        let head = crate::side_file_head(MAGIC, VERSION, HEADER_SIZE);
        Ok(FutexCallWriter {
            out: crate::BatchWriter::create(&path, &head)?,
            records: 0,
        })
    }

    /// Queues one record (written by [`FutexCallWriter::flush`], or when
    /// the batch is full).
    pub fn push(&mut self, c: &FutexCall) -> Result<(), TraceError> {
        self.records += 1;
        self.out.push(|buf| c.encode(buf))
    }

    /// Writes the queued records with one `write(2)`.
    pub fn flush(&mut self) -> Result<(), TraceError> {
        self.out.flush()
    }
}

/// The futex tracepoint files of a recording, read.
#[derive(Debug, Clone, Default)]
pub struct FutexTraceRecording {
    /// The manifest.
    pub manifest: FutexTraceManifest,
    /// Every complete record, in file order (by thread, not by time).
    pub calls: Vec<FutexCall>,
    /// Bytes after the last complete record (a cut-off tail or damage).
    pub truncated_bytes: u64,
}

/// Reads `dir/futex/`: `None` when the recording has none; `Err` when the
/// manifest or the calls file cannot be read or is not one.
pub fn read_futex_trace(dir: &Path) -> Option<Result<FutexTraceRecording, TraceError>> {
    let sub = dir.join(DIR);
    if !sub.is_dir() {
        return None;
    }
    Some(read_files(&sub.join(MANIFEST), &sub.join(CALLS)))
}

fn read_files(manifest: &Path, calls: &Path) -> Result<FutexTraceRecording, TraceError> {
    let text = std::fs::read_to_string(manifest).map_err(|source| TraceError::Io {
        path: manifest.to_path_buf(),
        source,
    })?;
    let manifest_v: FutexTraceManifest = serde_json::from_str(&text).map_err(|e| {
        TraceError::format(manifest, format!("not a futex tracepoint manifest: {e}"))
    })?;
    let mut rec = FutexTraceRecording {
        manifest: manifest_v,
        ..FutexTraceRecording::default()
    };
    let Some(bytes) = crate::read_if_present(calls)? else {
        return Ok(rec);
    };
    let header = crate::side_file_header(calls, &bytes, MAGIC, VERSION, HEADER_SIZE, "futex-call")?;
    let mut i = header;
    while let Some((c, size)) = FutexCall::decode(&bytes[i..]) {
        rec.calls.push(c);
        i += size;
    }
    rec.truncated_bytes = (bytes.len() - i) as u64;
    Ok(rec)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_and_read_back_with_a_cut_tail() {
        let dir = tempfile::tempdir().unwrap();
        let manifest = FutexTraceManifest {
            source: "tracepoints".into(),
            reason: "statically linked target".into(),
            traced: true,
            pids: vec![10],
            calls: 2,
            ..Default::default()
        };
        manifest.write(dir.path()).unwrap();
        let mut w = FutexCallWriter::create(dir.path()).unwrap();
        let calls = [
            FutexCall {
                enter_ns: 100,
                exit_ns: Some(250),
                pid: 10,
                tid: 11,
                uaddr: 0x4040,
                op: 128,
                val: 2,
                ret: 0,
                frames: vec![0x401000, 0x401234],
            },
            FutexCall {
                enter_ns: 300,
                exit_ns: None,
                pid: 10,
                tid: 12,
                uaddr: 0x4040,
                op: 129,
                val: 1,
                ret: -11,
                frames: vec![],
            },
        ];
        for c in &calls {
            w.push(c).unwrap();
        }
        w.flush().unwrap();
        drop(w);
        let rec = read_futex_trace(dir.path()).unwrap().unwrap();
        assert_eq!(rec.manifest, manifest);
        assert_eq!(rec.calls, calls);
        assert_eq!(rec.truncated_bytes, 0);
        // 32 header + (56 + 16) + 56 bytes; cut 10 bytes off the last record
        let path = dir.path().join(DIR).join(CALLS);
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(bytes.len(), 32 + 72 + 56);
        std::fs::write(&path, &bytes[..bytes.len() - 10]).unwrap();
        let rec = read_futex_trace(dir.path()).unwrap().unwrap();
        assert_eq!(rec.calls, calls[..1]);
        assert_eq!(rec.truncated_bytes, 46);
    }

    #[test]
    fn a_foreign_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        FutexTraceManifest::default().write(dir.path()).unwrap();
        std::fs::write(
            dir.path().join(DIR).join(CALLS),
            b"not a futex file at all, no",
        )
        .unwrap();
        let e = read_futex_trace(dir.path()).unwrap().unwrap_err();
        assert!(e.to_string().contains("bad magic"), "{e}");
        assert!(read_futex_trace(&dir.path().join("none")).is_none());
    }
}
