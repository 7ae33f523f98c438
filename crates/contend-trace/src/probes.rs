//! What the launcher records through `perf_event_open` beside the target
//! (`probes/` of a recording): the thread lifetimes of the target's
//! processes (the kernel's task events: a thread's creation and exit), and
//! the entries and returns of the functions of `contend record --function`
//! (uprobes), for the interference (SCI) analysis (Mosli Bouksiaa et al.,
//! TPDS 2019: thread durations T_t and automatic instrumentation,
//! Sections 2 and 3.1).
//!
//! Two files, both written by `contend-record` and defined here:
//!
//! * `probes/probes.json` ([`ProbeManifest`]): the probes (function,
//!   module, file offset), the functions refused and why, the sampling
//!   period, what could not be recorded, and the profile that chose the
//!   functions (`--hot-functions`).
//! * `probes/events.cprb`: a 32-byte header and 32-byte records, all
//!   little-endian:
//!
//! ```text
//! header  magic "CNTDPROB" | u32 version | u32 header size (32)
//!         | u32 record size (32) | u32 reserved | u64 reserved
//! record  u64 time_ns (CLOCK_MONOTONIC) | u32 pid | u32 tid
//!         | u64 arg | u16 kind | u16 probe | u32 reserved
//! ```
//!
//! `arg` is the user stack pointer for [`ProbeEventKind::Entry`] and
//! [`ProbeEventKind::Return`] (at the function's first instruction, and
//! right after its return), and `parent pid | parent tid << 32` for
//! [`ProbeEventKind::ThreadStart`], and 8 bytes of a thread's name for
//! [`ProbeEventKind::ThreadName`] (two records, `probe` 0 and 1). The
//! writer appends whole records in batches, one `write(2)` each, so a
//! launcher killed at any moment leaves
//! a file whose every complete record is readable; the reader keeps those
//! and reports a cut-off tail. Records of different CPUs are not in time
//! order; readers sort.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::TraceError;

/// Subdirectory of a recording holding the probe files.
pub const DIR: &str = "probes";
/// File name of the manifest inside [`DIR`].
pub const MANIFEST: &str = "probes.json";
/// File name of the events inside [`DIR`].
pub const EVENTS: &str = "events.cprb";
/// File magic.
pub const MAGIC: &[u8; 8] = b"CNTDPROB";
/// Format version this module writes and reads.
pub const VERSION: u32 = 1;
/// Size of the header, bytes.
pub const HEADER_SIZE: usize = 32;
/// Size of one record, bytes.
pub const RECORD_SIZE: usize = 32;
/// Version of the manifest's JSON.
pub const MANIFEST_VERSION: u32 = 1;

/// What a record says. Codes are only ever added.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
#[repr(u16)]
pub enum ProbeEventKind {
    /// A probed function was entered (`arg` = stack pointer).
    Entry = 1,
    /// A probed function returned (`arg` = stack pointer after the return).
    Return = 2,
    /// A thread (or process) was created (`arg` = parent pid | parent tid << 32).
    ThreadStart = 3,
    /// A thread exited.
    ThreadExit = 4,
    /// A process replaced its program (`exec`): its main thread starts anew.
    Exec = 5,
    /// A thread's name (comm) as the kernel set it, at `exec` or when the
    /// thread named itself (`prctl(PR_SET_NAME)`, `pthread_setname_np`):
    /// two records at the same time, `probe` 0 and 1, whose `arg`s hold
    /// bytes 0–7 and 8–15 of the name, NUL-padded ([`ProbeEvent::name_parts`]).
    /// A thread created without one has its creator's name.
    ThreadName = 6,
}

impl ProbeEventKind {
    /// Decodes a kind code; `None` for an unknown one.
    pub fn from_code(code: u16) -> Option<Self> {
        Some(match code {
            1 => ProbeEventKind::Entry,
            2 => ProbeEventKind::Return,
            3 => ProbeEventKind::ThreadStart,
            4 => ProbeEventKind::ThreadExit,
            5 => ProbeEventKind::Exec,
            6 => ProbeEventKind::ThreadName,
            _ => return None,
        })
    }
}

/// One record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProbeEvent {
    /// CLOCK_MONOTONIC, ns.
    pub time_ns: u64,
    /// Process id (thread-group id).
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// Stack pointer, or parent pid | parent tid << 32 (see the module docs).
    pub arg: u64,
    /// What happened.
    pub kind: ProbeEventKind,
    /// Index into [`ProbeManifest::probes`] (entries and returns), else 0.
    pub probe: u16,
}

impl ProbeEvent {
    /// The record's bytes.
    pub fn encode(&self) -> [u8; RECORD_SIZE] {
        let mut b = [0u8; RECORD_SIZE];
        b[0..8].copy_from_slice(&self.time_ns.to_le_bytes());
        b[8..12].copy_from_slice(&self.pid.to_le_bytes());
        b[12..16].copy_from_slice(&self.tid.to_le_bytes());
        b[16..24].copy_from_slice(&self.arg.to_le_bytes());
        b[24..26].copy_from_slice(&(self.kind as u16).to_le_bytes());
        b[26..28].copy_from_slice(&self.probe.to_le_bytes());
        b
    }

    /// The two [`ProbeEventKind::ThreadName`] records of thread `tid` of
    /// process `pid` named `name` at `time_ns` (its first 16 bytes; the
    /// kernel's names have at most 15).
    pub fn name_parts(time_ns: u64, pid: u32, tid: u32, name: &[u8]) -> [ProbeEvent; 2] {
        let mut bytes = [0u8; 16];
        let n = name.len().min(16);
        bytes[..n].copy_from_slice(&name[..n]);
        let part = |k: usize| ProbeEvent {
            time_ns,
            pid,
            tid,
            arg: u64::from_le_bytes(bytes[8 * k..8 * k + 8].try_into().unwrap()),
            kind: ProbeEventKind::ThreadName,
            probe: k as u16,
        };
        [part(0), part(1)]
    }

    /// Decodes a record; `None` for an unknown kind.
    pub fn decode(b: &[u8; RECORD_SIZE]) -> Option<ProbeEvent> {
        let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().unwrap());
        let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap());
        Some(ProbeEvent {
            time_ns: u64_at(0),
            pid: u32_at(8),
            tid: u32_at(12),
            arg: u64_at(16),
            kind: ProbeEventKind::from_code(u16::from_le_bytes([b[24], b[25]]))?,
            probe: u16::from_le_bytes([b[26], b[27]]),
        })
    }
}

/// One function probed (`contend record --function`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProbeSpec {
    /// Its index; events refer to it.
    pub id: u16,
    /// The function's symbol name (demangled where it was mangled).
    pub function: String,
    /// The ELF file it is in (executable or shared library), absolute.
    pub module: String,
    /// Offset of its first instruction in the file, bytes.
    pub file_offset: u64,
    /// Its ELF virtual address (symbol value).
    pub vaddr: u64,
    /// Its size from the symbol table, bytes (0 = unknown).
    pub size: u64,
    /// What the user asked for (`NAME`, `lib:NAME`, `MODULE:0xOFFSET`).
    pub requested: String,
}

/// A function that could not be probed, and why (named to the user too).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RefusedProbe {
    /// What the user asked for.
    pub function: String,
    /// Why, one sentence.
    pub reason: String,
}

/// The warnings that say which requested functions were refused, one per
/// reason (in the order of their first refusal): "function F is not
/// probed: R", or "functions F, G are not probed: R" when several share
/// it (a Go program refuses every function alike); `past` says "was" and
/// "were" (a report) instead of "is" and "are" (the recorder).
pub fn refusal_warnings(refused: &[RefusedProbe], past: bool) -> Vec<String> {
    let mut reasons: Vec<(&str, Vec<&str>)> = Vec::new();
    for r in refused {
        match reasons.iter_mut().find(|(reason, _)| *reason == r.reason) {
            Some((_, functions)) => functions.push(&r.function),
            None => reasons.push((&r.reason, vec![&r.function])),
        }
    }
    let (one, many) = if past { ("was", "were") } else { ("is", "are") };
    reasons
        .into_iter()
        .map(|(reason, functions)| match functions.as_slice() {
            [f] => format!("function {f} {one} not probed: {reason}"),
            fs => format!("functions {} {many} not probed: {reason}", fs.join(", ")),
        })
        .collect()
}

/// One function of the profile that chose `--hot-functions`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HotFunction {
    /// Symbol name.
    pub function: String,
    /// ELF file.
    pub module: String,
    /// CPU-clock samples that fell in it.
    pub samples: u64,
    /// Its share of all samples of the target, in [0, 1].
    pub share: f64,
}

/// [`ProbeManifest::thread_events_scope`] of task events opened once per
/// CPU for the whole machine, the other processes' records dropped.
pub const THREAD_EVENTS_SYSTEM_WIDE: &str = "system-wide";
/// [`ProbeManifest::thread_events_scope`] of task events opened on the
/// target and inherited by every thread it starts.
pub const THREAD_EVENTS_PER_TASK: &str = "per-task";

/// `probes/probes.json`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProbeManifest {
    /// [`MANIFEST_VERSION`].
    pub format_version: u32,
    /// The launcher's child: the root of the recorded process tree.
    pub root_pid: u32,
    /// The probes, by id.
    pub probes: Vec<ProbeSpec>,
    /// Functions asked for but not probed.
    pub refused: Vec<RefusedProbe>,
    /// One call in N per thread kept (`--function-every`, 1 = all).
    pub every: u32,
    /// Thread creations and exits were recorded (the kernel's task events).
    pub thread_events: bool,
    /// How they were followed: [`THREAD_EVENTS_SYSTEM_WIDE`] (one event
    /// per CPU for the machine, other processes' records dropped) or
    /// [`THREAD_EVENTS_PER_TASK`] (events
    /// inherited by the target's threads, which cost it time at each
    /// context switch); empty when they were not recorded or the recording
    /// predates the field.
    #[serde(default)]
    pub thread_events_scope: String,
    /// Why thread lifetimes or probes could not be recorded, when they
    /// could not.
    pub errors: Vec<String>,
    /// Records the kernel dropped because a ring buffer was full.
    pub lost: u64,
    /// Probe hits of other processes (the probes are system-wide) that
    /// were dropped.
    pub foreign_hits: u64,
    /// The CPU-clock profile that chose the functions (`--hot-functions`),
    /// hottest first; empty otherwise.
    pub hot: Vec<HotFunction>,
    /// Samples of that profile.
    pub hot_samples: u64,
}

/// Appends records to `probes/events.cprb` in whole-record batches.
#[derive(Debug)]
pub struct ProbeWriter {
    out: crate::BatchWriter,
    /// Records written so far.
    pub records: u64,
}

impl ProbeWriter {
    /// Creates the file (which must not exist) and writes the header.
    /// Errors: the file cannot be created or written.
    pub fn create(path: &Path) -> Result<ProbeWriter, TraceError> {
        let mut head = crate::side_file_head(MAGIC, VERSION, HEADER_SIZE);
        head[16..20].copy_from_slice(&(RECORD_SIZE as u32).to_le_bytes());
        Ok(ProbeWriter {
            out: crate::BatchWriter::create(path, &head)?,
            records: 0,
        })
    }

    /// Queues one record (written by [`ProbeWriter::flush`], or when the
    /// batch is full).
    pub fn push(&mut self, e: &ProbeEvent) -> Result<(), TraceError> {
        self.records += 1;
        self.out.push(|buf| buf.extend_from_slice(&e.encode()))
    }

    /// Writes the queued records with one `write(2)`.
    pub fn flush(&mut self) -> Result<(), TraceError> {
        self.out.flush()
    }
}

/// The probe files of a recording, read.
#[derive(Debug, Clone, Default)]
pub struct ProbeRecording {
    /// The manifest.
    pub manifest: ProbeManifest,
    /// Every complete record, in file order.
    pub events: Vec<ProbeEvent>,
    /// Bytes after the last complete record (a cut-off tail).
    pub truncated_bytes: u64,
    /// Records with a kind this version does not know (skipped).
    pub unknown_records: u64,
}

impl ProbeRecording {
    /// The last name of every thread the records name, by (pid, tid): its
    /// own ([`ProbeEventKind::ThreadName`], at `exec` or set by the thread)
    /// or else the name its creator had when it created it (a new thread
    /// inherits its creator's; `ThreadStart`'s `arg` names the creator).
    /// Records are taken in time order, a thread's two name parts by part;
    /// a name whose part is missing (a cut-off file) is left out, and
    /// names are read as lossy UTF-8 up to the first NUL.
    pub fn thread_names(&self) -> std::collections::BTreeMap<(u32, u32), String> {
        use std::collections::BTreeMap;
        let mut order: Vec<&ProbeEvent> = self
            .events
            .iter()
            .filter(|e| {
                matches!(
                    e.kind,
                    ProbeEventKind::ThreadStart | ProbeEventKind::ThreadName
                )
            })
            .collect();
        // creations before names at one instant: a thread created and
        // named at once keeps its own name
        order.sort_by_key(|e| {
            (
                e.time_ns,
                e.kind == ProbeEventKind::ThreadName,
                e.pid,
                e.tid,
                e.probe,
            )
        });
        let mut names: BTreeMap<(u32, u32), String> = BTreeMap::new();
        let mut i = 0;
        while i < order.len() {
            let e = order[i];
            match e.kind {
                ProbeEventKind::ThreadStart => {
                    let creator = (e.arg as u32, (e.arg >> 32) as u32);
                    if let Some(name) = names.get(&creator).cloned() {
                        names.insert((e.pid, e.tid), name);
                    }
                }
                _ => {
                    let second = order.get(i + 1).filter(|n| {
                        n.kind == ProbeEventKind::ThreadName
                            && (n.time_ns, n.pid, n.tid, n.probe) == (e.time_ns, e.pid, e.tid, 1)
                    });
                    if let (0, Some(second)) = (e.probe, second) {
                        let mut bytes = [0u8; 16];
                        bytes[..8].copy_from_slice(&e.arg.to_le_bytes());
                        bytes[8..].copy_from_slice(&second.arg.to_le_bytes());
                        let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
                        names.insert(
                            (e.pid, e.tid),
                            String::from_utf8_lossy(&bytes[..end]).into_owned(),
                        );
                        i += 1;
                    }
                }
            }
            i += 1;
        }
        names
    }
}

impl ProbeManifest {
    /// Writes `dir/probes/probes.json` (dir = the recording).
    pub fn write(&self, dir: &Path) -> Result<(), TraceError> {
        let path = dir.join(DIR).join(MANIFEST);
        let text = serde_json::to_string_pretty(self).expect("manifest serialises");
        std::fs::write(&path, text).map_err(|source| TraceError::Io { path, source })
    }
}

/// Reads `dir/probes/`: `None` when the recording has none; `Err` when the
/// manifest or the events file cannot be read or is not one.
pub fn read_probe_recording(dir: &Path) -> Option<Result<ProbeRecording, TraceError>> {
    let sub = dir.join(DIR);
    if !sub.is_dir() {
        return None;
    }
    Some(read_files(&sub.join(MANIFEST), &sub.join(EVENTS)))
}

fn read_files(manifest: &Path, events: &Path) -> Result<ProbeRecording, TraceError> {
    let text = std::fs::read_to_string(manifest).map_err(|source| TraceError::Io {
        path: manifest.to_path_buf(),
        source,
    })?;
    let manifest_v: ProbeManifest = serde_json::from_str(&text)
        .map_err(|e| TraceError::format(manifest, format!("not a probe manifest: {e}")))?;
    let mut rec = ProbeRecording {
        manifest: manifest_v,
        ..ProbeRecording::default()
    };
    // No events file: the launcher opened nothing (its manifest says why).
    let Some(bytes) = crate::read_if_present(events)? else {
        return Ok(rec);
    };
    let header =
        crate::side_file_header(events, &bytes, MAGIC, VERSION, HEADER_SIZE, "probe-event")?;
    let record = u32::from_le_bytes(bytes[16..20].try_into().unwrap()) as usize;
    if record != RECORD_SIZE {
        return Err(TraceError::format(
            events,
            format!("unsupported layout (header {header} bytes, records {record} bytes)"),
        ));
    }
    let body = &bytes[header..];
    let (records, rest) = body.as_chunks::<RECORD_SIZE>();
    rec.truncated_bytes = rest.len() as u64;
    rec.events.reserve(records.len());
    for r in records {
        match ProbeEvent::decode(r) {
            Some(e) => rec.events.push(e),
            None => rec.unknown_records += 1,
        }
    }
    Ok(rec)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_are_one_warning_per_reason() {
        let r = |f: &str, why: &str| RefusedProbe {
            function: f.into(),
            reason: why.into(),
        };
        let refused = [r("a", "Go"), r("x", "stripped"), r("b", "Go"), r("c", "Go")];
        assert_eq!(
            refusal_warnings(&refused, false),
            [
                "functions a, b, c are not probed: Go",
                "function x is not probed: stripped"
            ]
        );
        assert_eq!(
            refusal_warnings(&refused[1..2], true),
            ["function x was not probed: stripped"]
        );
        assert!(refusal_warnings(&[], true).is_empty());
    }

    /// Process 10 exec's as `server` (t 1); its thread 11 is created at t
    /// 2 (inherits `server`) and names itself `worker-1` at t 3; thread 12
    /// is created by 11 at t 4 (inherits `worker-1`); thread 13 is created
    /// by 10 at t 5 and named at the same instant (keeps its own, a
    /// 15-byte name); a name cut to one part (t 6, thread 14) is left out,
    /// and thread 15's creator is unknown (no name).
    #[test]
    fn thread_names_follow_creators_and_own_names() {
        let start = |time_ns, tid, creator: u32| ProbeEvent {
            time_ns,
            pid: 10,
            tid,
            arg: 10 | (u64::from(creator) << 32),
            kind: ProbeEventKind::ThreadStart,
            probe: 0,
        };
        let mut events = Vec::new();
        events.extend(ProbeEvent::name_parts(1, 10, 10, b"server"));
        events.push(start(2, 11, 10));
        events.extend(ProbeEvent::name_parts(3, 10, 11, b"worker-1"));
        events.push(start(4, 12, 11));
        events.extend(ProbeEvent::name_parts(5, 10, 13, b"fifteen-bytes!!"));
        events.push(start(5, 13, 10));
        events.push(ProbeEvent::name_parts(6, 10, 14, b"half")[0]);
        events.push(start(7, 15, 99));
        // file order is not time order
        events.reverse();
        let rec = ProbeRecording {
            events,
            ..ProbeRecording::default()
        };
        let names: Vec<((u32, u32), String)> = rec.thread_names().into_iter().collect();
        let want = [
            ((10, 10), "server"),
            ((10, 11), "worker-1"),
            ((10, 12), "worker-1"),
            ((10, 13), "fifteen-bytes!!"),
        ];
        let want: Vec<((u32, u32), String)> =
            want.into_iter().map(|(k, v)| (k, v.to_string())).collect();
        assert_eq!(names, want);
    }

    #[test]
    fn write_and_read_back_with_a_cut_tail() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join(DIR)).unwrap();
        let manifest = ProbeManifest {
            format_version: MANIFEST_VERSION,
            root_pid: 10,
            every: 1,
            thread_events: true,
            ..Default::default()
        };
        manifest.write(dir.path()).unwrap();
        let path = dir.path().join(DIR).join(EVENTS);
        let mut w = ProbeWriter::create(&path).unwrap();
        let events = [
            ProbeEvent {
                time_ns: 5,
                pid: 10,
                tid: 11,
                arg: 10 | (10 << 32),
                kind: ProbeEventKind::ThreadStart,
                probe: 0,
            },
            ProbeEvent {
                time_ns: 7,
                pid: 10,
                tid: 11,
                arg: 0x7ff0,
                kind: ProbeEventKind::Entry,
                probe: 3,
            },
        ];
        for e in &events {
            w.push(e).unwrap();
        }
        w.flush().unwrap();
        drop(w);
        let rec = read_probe_recording(dir.path()).unwrap().unwrap();
        assert_eq!(rec.manifest, manifest);
        assert_eq!(rec.events, events);
        assert_eq!(rec.truncated_bytes, 0);
        // A cut-off tail is reported, the complete records kept.
        let mut bytes = std::fs::read(&path).unwrap();
        bytes.truncate(bytes.len() - 5);
        std::fs::write(&path, &bytes).unwrap();
        let rec = read_probe_recording(dir.path()).unwrap().unwrap();
        assert_eq!(rec.events, events[..1]);
        assert_eq!(rec.truncated_bytes, 27);
        // Not a probe file.
        std::fs::write(&path, b"garbage garbage garbage garbage garbage").unwrap();
        let e = read_probe_recording(dir.path()).unwrap().unwrap_err();
        assert!(e.to_string().contains("bad magic"), "{e}");
    }
}
