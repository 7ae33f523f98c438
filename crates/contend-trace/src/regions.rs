//! Reader (and, for tests, writer) of region traces
//! (`regions/<pid>[.<n>].creg`, layout in [`crate::region_format`]): the
//! manual regions of `contend/region.h` and the `-finstrument-functions`
//! hook calls of one process, per thread, in program order.
//!
//! Like the lock-trace reader it is written for damaged input: a trace of
//! a process that was killed, crashed or was cut short on disk is read as
//! far as it goes and the damage listed ([`RegionTrace::damage`], the same
//! [`Damage`] kinds as lock traces); only a file that is not a region trace
//! at all is an error. Events are decoded once, chunk by chunk through one
//! buffer, into memory (16–32 bytes per event).

use std::collections::BTreeMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use crate::clock::CalibrationPoint;
use crate::reader::{Damage, HeaderCalibration};
use crate::region_format::{self as rf, calibration as cal, chunk as ch, header as h};
use crate::TraceError;

/// What a site of `contend/region.h` is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SiteKind {
    /// `CONTEND_REGION_BEGIN`.
    Begin,
    /// `CONTEND_REGION_END`.
    End,
    /// `CONTEND_REGION_BEGIN_KEY`.
    BeginKey,
}

/// One use of a region macro, as defined by a SITE record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegionSite {
    /// The site id records refer to.
    pub id: u32,
    /// Which macro.
    pub kind: SiteKind,
    /// The region's name (the string literal; at most 255 bytes kept).
    pub name: String,
    /// Source file (`__FILE__`).
    pub file: String,
    /// Function (`__func__`).
    pub function: String,
    /// Source line.
    pub line: u32,
}

/// One event of a thread, times in trace ticks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RegionEvent {
    /// `CONTEND_REGION_BEGIN` at site `site`.
    Begin {
        /// Ticks.
        ticks: u64,
        /// Site id.
        site: u32,
    },
    /// `CONTEND_REGION_BEGIN_KEY` at site `site` with `key`.
    BeginKey {
        /// Ticks.
        ticks: u64,
        /// Site id.
        site: u32,
        /// The key given.
        key: u64,
    },
    /// `CONTEND_REGION_END` at site `site`.
    End {
        /// Ticks.
        ticks: u64,
        /// Site id.
        site: u32,
    },
    /// A function entry (`__cyg_profile_func_enter`).
    Enter {
        /// Ticks.
        ticks: u64,
        /// Address of the function's first instruction.
        function: u64,
        /// The function's stack pointer at the hook call (its frame).
        frame: u64,
    },
    /// A function return (`__cyg_profile_func_exit`).
    Exit {
        /// Ticks.
        ticks: u64,
        /// Address of the function's first instruction.
        function: u64,
        /// The function's stack pointer at the hook call.
        frame: u64,
    },
}

impl RegionEvent {
    /// When it happened, trace ticks.
    pub fn ticks(&self) -> u64 {
        match *self {
            RegionEvent::Begin { ticks, .. }
            | RegionEvent::BeginKey { ticks, .. }
            | RegionEvent::End { ticks, .. }
            | RegionEvent::Enter { ticks, .. }
            | RegionEvent::Exit { ticks, .. } => ticks,
        }
    }
}

/// One thread's events.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RegionThread {
    /// Kernel thread id.
    pub tid: u32,
    /// Events in program order.
    pub events: Vec<RegionEvent>,
}

/// A decoded region trace of one process.
#[derive(Debug, Clone)]
pub struct RegionTrace {
    /// The file read.
    pub path: PathBuf,
    /// Process id.
    pub pid: u32,
    /// Parent process id.
    pub ppid: u32,
    /// Clock kind ([`rf::CLOCK_TSC`] or [`rf::CLOCK_MONOTONIC`]).
    pub clock: u16,
    /// Header flags (`region_format::FLAG_*`).
    pub flags: u64,
    /// One function call in N was recorded per thread (1 = every call).
    pub function_every: u32,
    /// Executable path as the process saw it.
    pub exe_path: String,
    /// Calibration at the first region call.
    pub start: HeaderCalibration,
    /// Calibration at exit, when the process finished.
    pub end: Option<HeaderCalibration>,
    /// Launcher's TSC frequency, Hz (0 = unknown).
    pub ticks_per_second: u64,
    /// Sites by id.
    pub sites: BTreeMap<u32, RegionSite>,
    /// Threads, ordered by their first chunk.
    pub threads: Vec<RegionThread>,
    /// Every calibration point of the file (header and chunk headers).
    pub calibration_points: Vec<CalibrationPoint>,
    /// Region events whose site id no SITE record defines (the defining
    /// thread died before its record reached the file).
    pub undefined_sites: u64,
    /// Defects found; empty for a complete, clean trace.
    pub damage: Vec<Damage>,
}

impl RegionTrace {
    /// True when the process ran its exit path.
    pub fn finished(&self) -> bool {
        self.flags & rf::FLAG_FINISHED != 0
    }

    /// Number of events of all threads.
    pub fn event_count(&self) -> usize {
        self.threads.iter().map(|t| t.events.len()).sum()
    }

    /// Reads and decodes the trace at `path`.
    ///
    /// Errors: the file cannot be opened or its header read
    /// ([`TraceError::Io`]); it is shorter than its header or has a bad
    /// magic, version, endianness or layout ([`TraceError::Format`]).
    /// Damage past the header is listed in [`RegionTrace::damage`].
    pub fn open(path: &Path) -> Result<RegionTrace, TraceError> {
        let io = |source| TraceError::Io {
            path: path.to_path_buf(),
            source,
        };
        let file = File::open(path).map_err(io)?;
        let len = file.metadata().map_err(io)?.len();
        let full = nix::sys::statvfs::fstatvfs(&file).is_ok_and(|s| s.blocks_available() == 0);
        let mut trace = Self::read(path, |buf, at| read_at(&file, buf, at), len)?;
        if full {
            trace.damage.push(Damage::FileSystemFull);
        }
        Ok(trace)
    }

    /// Decodes a trace held in memory (`bytes` = the whole file).
    pub fn decode(path: &Path, bytes: &[u8]) -> Result<RegionTrace, TraceError> {
        let read = |buf: &mut [u8], at: u64| -> std::io::Result<usize> {
            let start = usize::try_from(at).unwrap_or(usize::MAX).min(bytes.len());
            let n = buf.len().min(bytes.len() - start);
            buf[..n].copy_from_slice(&bytes[start..start + n]);
            Ok(n)
        };
        Self::read(path, read, bytes.len() as u64)
    }

    fn read(
        path: &Path,
        read: impl Fn(&mut [u8], u64) -> std::io::Result<usize>,
        len: u64,
    ) -> Result<RegionTrace, TraceError> {
        let fail = |msg: String| TraceError::format(path, msg);
        let mut header = vec![0u8; rf::HEADER_SIZE];
        let got = read(&mut header, 0).map_err(|source| TraceError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        if got < rf::HEADER_SIZE {
            return Err(fail(format!(
                "{got} bytes is shorter than the 4096-byte header of a region trace"
            )));
        }
        let b: &[u8] = &header;
        if &b[h::MAGIC..h::MAGIC + 8] != rf::MAGIC {
            return Err(fail("not a contend region trace (bad magic)".into()));
        }
        let endian = u32_at(b, h::ENDIAN_CHECK);
        if endian != rf::ENDIAN_CHECK {
            return Err(fail(format!(
                "written with another byte order (check word {endian:#010x})"
            )));
        }
        let version = u32_at(b, h::VERSION);
        if version != rf::VERSION {
            return Err(fail(format!(
                "region-trace format version {version}, this contend reads version {}",
                rf::VERSION
            )));
        }
        let header_size = u32_at(b, h::HEADER_SIZE) as usize;
        let pointer_size = u16_at(b, h::POINTER_SIZE);
        if header_size != rf::HEADER_SIZE || pointer_size != 8 {
            return Err(fail(format!(
                "unsupported layout (header {header_size} bytes, pointers {pointer_size} bytes)"
            )));
        }
        let clock = u16_at(b, h::CLOCK);
        if clock != rf::CLOCK_TSC && clock != rf::CLOCK_MONOTONIC {
            return Err(fail(format!("unknown clock kind {clock}")));
        }
        let chunk_size = u64::from(u32_at(b, h::CHUNK_SIZE));
        if chunk_size < 4096 || !chunk_size.is_power_of_two() {
            return Err(fail(format!("bad chunk size {chunk_size}")));
        }
        let data_offset = u64_at(b, h::DATA_OFFSET);
        if data_offset < rf::HEADER_SIZE as u64 {
            return Err(fail(format!("bad data offset {data_offset}")));
        }
        let flags = u64_at(b, h::FLAGS);
        let calib = |at: usize| HeaderCalibration {
            ticks: u64_at(b, at + cal::TICKS),
            monotonic_ns: u64_at(b, at + cal::MONOTONIC_NS),
            realtime_ns: u64_at(b, at + cal::REALTIME_NS),
        };
        let start = calib(h::START);
        let end = (flags & rf::FLAG_FINISHED != 0).then(|| calib(h::END));
        let mut trace = RegionTrace {
            path: path.to_path_buf(),
            pid: u32_at(b, h::PID),
            ppid: u32_at(b, h::PPID),
            clock,
            flags,
            function_every: u32_at(b, h::FUNCTION_EVERY).max(1),
            exe_path: c_string(&b[h::EXE_PATH..h::EXE_PATH + h::EXE_PATH_LEN]),
            start,
            end,
            ticks_per_second: u64_at(b, h::TICKS_PER_SECOND),
            sites: BTreeMap::new(),
            threads: Vec::new(),
            calibration_points: Vec::new(),
            undefined_sites: 0,
            damage: Vec::new(),
        };
        if !trace.finished() {
            trace.damage.push(Damage::NotFinished);
        }
        for c in std::iter::once(start).chain(end) {
            if c.ticks != 0 {
                trace.calibration_points.push(CalibrationPoint {
                    ticks: c.ticks,
                    monotonic_ns: c.monotonic_ns,
                });
            }
        }
        let claimed = u64::from(u32_at(b, h::CHUNKS_CLAIMED));
        let present = (len.saturating_sub(data_offset) / chunk_size).min(claimed);
        let mut lost = (claimed - present) as u32;
        let mut unstarted = 0u32;
        let mut unreadable: Option<(u32, u64, String)> = None;
        struct Chunk {
            tid: u32,
            sequence: u32,
            base_ticks: u64,
            events: Vec<RegionEvent>,
        }
        let mut chunks = Vec::new();
        let mut buf = vec![0u8; if present > 0 { chunk_size as usize } else { 0 }];
        for i in 0..present {
            let begin = data_offset + i * chunk_size;
            match read(&mut buf, begin) {
                Ok(n) if n == buf.len() => {}
                Ok(_) => {
                    lost += 1;
                    continue;
                }
                Err(e) => {
                    match &mut unreadable {
                        Some((count, _, _)) => *count += 1,
                        None => unreadable = Some((1, begin, e.to_string())),
                    }
                    continue;
                }
            }
            let c: &[u8] = &buf;
            if u32_at(c, ch::MAGIC) != rf::CHUNK_MAGIC {
                unstarted += 1;
                continue;
            }
            let base_ticks = u64_at(c, ch::BASE_TICKS);
            let mono = u64_at(c, ch::MONOTONIC_NS);
            if base_ticks != 0 && mono != 0 {
                trace.calibration_points.push(CalibrationPoint {
                    ticks: base_ticks,
                    monotonic_ns: mono,
                });
            }
            let mut events = Vec::new();
            if let Some(d) = decode_chunk(c, begin, base_ticks, &mut events, &mut trace.sites) {
                trace.damage.push(d);
            }
            chunks.push(Chunk {
                tid: u32_at(c, ch::TID),
                sequence: u32_at(c, ch::SEQUENCE),
                base_ticks,
                events,
            });
        }
        if let Some((count, offset, error)) = unreadable {
            trace.damage.push(Damage::Unreadable {
                offset,
                what: format!("{count} chunk(s)"),
                error,
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
        // Group by tid; a tid that restarts at sequence 0 is a new thread
        // that reused the id of one that exited.
        let mut by_tid: BTreeMap<u32, Vec<Chunk>> = BTreeMap::new();
        for c in chunks {
            by_tid.entry(c.tid).or_default().push(c);
        }
        let mut threads: Vec<(u64, RegionThread)> = Vec::new();
        for (tid, mut cs) in by_tid {
            cs.sort_by_key(|c| (c.base_ticks, c.sequence));
            let mut current: Option<(u64, RegionThread, u32)> = None;
            let mut missing = 0u32;
            for c in cs {
                let continues = matches!(&current, Some((_, _, last)) if c.sequence > *last);
                if continues {
                    if let Some((_, t, last)) = current.as_mut() {
                        missing = missing.saturating_add(c.sequence - *last - 1);
                        *last = c.sequence;
                        t.events.extend(c.events);
                    }
                } else {
                    if let Some((first, t, _)) = current.take() {
                        threads.push((first, t));
                    }
                    missing = missing.saturating_add(c.sequence);
                    let t = RegionThread {
                        tid,
                        events: c.events,
                    };
                    current = Some((c.base_ticks, t, c.sequence));
                }
            }
            if let Some((first, t, _)) = current {
                threads.push((first, t));
            }
            if missing > 0 {
                trace.damage.push(Damage::SequenceGap { tid, missing });
            }
        }
        threads.sort_by_key(|(first, t)| (*first, t.tid));
        trace.threads = threads.into_iter().map(|(_, t)| t).collect();
        let undefined: u64 = trace
            .threads
            .iter()
            .flat_map(|t| &t.events)
            .filter(|e| match e {
                RegionEvent::Begin { site, .. }
                | RegionEvent::BeginKey { site, .. }
                | RegionEvent::End { site, .. } => !trace.sites.contains_key(site),
                _ => false,
            })
            .count() as u64;
        trace.undefined_sites = undefined;
        if undefined > 0 {
            trace
                .damage
                .push(Damage::DanglingIndex { count: undefined });
        }
        Ok(trace)
    }
}

/// Decodes the records of one chunk (`c`, at file offset `offset`) into
/// `events`, collecting site definitions; returns the damage that ended it
/// early, if any.
fn decode_chunk(
    c: &[u8],
    offset: u64,
    base_ticks: u64,
    events: &mut Vec<RegionEvent>,
    sites: &mut BTreeMap<u32, RegionSite>,
) -> Option<Damage> {
    let words = c.len() / 8;
    let word = |i: usize| u64_at(c, i * 8);
    let mut i = rf::CHUNK_HEADER_SIZE / 8;
    let mut last = base_ticks;
    let bad = |i: usize, problem: String| {
        Some(Damage::BadRecord {
            offset: offset + (i * 8) as u64,
            problem,
        })
    };
    while i < words {
        let head = word(i);
        if head == 0 {
            return None;
        }
        let (tag, site, arg) = rf::split_head(head);
        let extra = match tag {
            rf::TAG_TIME | rf::TAG_BEGIN_KEY => 1,
            rf::TAG_SITE => arg as usize,
            rf::TAG_BEGIN | rf::TAG_END => 0,
            rf::TAG_ENTER | rf::TAG_EXIT => 2,
            _ => return bad(i, format!("unknown record tag {tag:#04x}")),
        };
        if i + 1 + extra > words {
            return bad(i, "record runs past the end of its chunk".into());
        }
        let ticks = last.wrapping_add(u64::from(arg));
        match tag {
            rf::TAG_TIME => last = word(i + 1),
            rf::TAG_SITE => {
                if extra == 0 {
                    return bad(i, "site record without payload".into());
                }
                let meta = word(i + 1);
                let kind = match (meta & 0xffff_ffff) as u32 {
                    rf::SITE_BEGIN => SiteKind::Begin,
                    rf::SITE_END => SiteKind::End,
                    rf::SITE_BEGIN_KEY => SiteKind::BeginKey,
                    k => return bad(i, format!("unknown site kind {k}")),
                };
                let bytes = &c[(i + 2) * 8..(i + 1 + extra) * 8];
                let mut strings = bytes.split(|&b| b == 0).map(|s| {
                    String::from_utf8_lossy(&s[..s.len().min(rf::STRING_MAX as usize)]).into_owned()
                });
                let name = strings.next().unwrap_or_default();
                let file = strings.next().unwrap_or_default();
                let function = strings.next().unwrap_or_default();
                sites.entry(site).or_insert(RegionSite {
                    id: site,
                    kind,
                    name,
                    file,
                    function,
                    line: (meta >> 32) as u32,
                });
            }
            rf::TAG_BEGIN => {
                last = ticks;
                events.push(RegionEvent::Begin { ticks, site });
            }
            rf::TAG_BEGIN_KEY => {
                last = ticks;
                events.push(RegionEvent::BeginKey {
                    ticks,
                    site,
                    key: word(i + 1),
                });
            }
            rf::TAG_END => {
                last = ticks;
                events.push(RegionEvent::End { ticks, site });
            }
            rf::TAG_ENTER => {
                last = ticks;
                events.push(RegionEvent::Enter {
                    ticks,
                    function: word(i + 1),
                    frame: word(i + 2),
                });
            }
            _ => {
                last = ticks;
                events.push(RegionEvent::Exit {
                    ticks,
                    function: word(i + 1),
                    frame: word(i + 2),
                });
            }
        }
        i += 1 + extra;
    }
    None
}

/// Every region trace of a recording (`regions/*.creg`).
#[derive(Debug, Clone, Default)]
pub struct RegionRecording {
    /// The traces that could be read, by file name.
    pub traces: Vec<RegionTrace>,
    /// Files that could not be read at all, with why.
    pub unreadable: Vec<String>,
}

/// Reads `dir/regions/*.creg`: `None` when the recording has no `regions/`
/// directory, `Err` when it cannot be listed; a file that cannot be read
/// is named in [`RegionRecording::unreadable`] and the others are kept.
pub fn read_region_recording(dir: &Path) -> Option<Result<RegionRecording, TraceError>> {
    let sub = dir.join(REGIONS_DIR);
    if !sub.exists() {
        return None;
    }
    let rd = match std::fs::read_dir(&sub) {
        Ok(rd) => rd,
        Err(source) => return Some(Err(TraceError::Io { path: sub, source })),
    };
    let mut paths: Vec<PathBuf> = rd
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "creg"))
        .collect();
    paths.sort();
    let mut rec = RegionRecording::default();
    for p in paths {
        match RegionTrace::open(&p) {
            Ok(t) => rec.traces.push(t),
            Err(e) => rec.unreadable.push(e.to_string()),
        }
    }
    Some(Ok(rec))
}

/// Name of the subdirectory of a recording that holds the region traces.
pub const REGIONS_DIR: &str = "regions";

/// Builds region traces in memory, as the collector would write them (for
/// tests and tools): one chunk per thread, monotonic-clock ticks (ns).
#[derive(Debug, Clone, Default)]
pub struct RegionTraceBuilder {
    /// Process id written into the header.
    pub pid: u32,
    /// Set FLAG_FINISHED (default false: call [`Self::finished`]).
    finished: bool,
    function_every: u32,
    sites: Vec<(u32, SiteKind, String, String, String, u32)>,
    threads: Vec<(u32, Vec<RegionEvent>)>,
}

impl RegionTraceBuilder {
    /// A builder for process `pid`.
    pub fn new(pid: u32) -> Self {
        RegionTraceBuilder {
            pid,
            function_every: 1,
            ..Default::default()
        }
    }

    /// Marks the process as finished (its exit path ran).
    pub fn finished(mut self) -> Self {
        self.finished = true;
        self
    }

    /// Sets the recorded function sampling period.
    pub fn function_every(mut self, n: u32) -> Self {
        self.function_every = n;
        self
    }

    /// Defines site `id`.
    pub fn site(mut self, id: u32, kind: SiteKind, name: &str, file: &str, line: u32) -> Self {
        self.sites
            .push((id, kind, name.into(), file.into(), "f".into(), line));
        self
    }

    /// Adds a thread with its events (ticks are CLOCK_MONOTONIC ns, in
    /// program order).
    pub fn thread(mut self, tid: u32, events: Vec<RegionEvent>) -> Self {
        self.threads.push((tid, events));
        self
    }

    /// The file's bytes. The site definitions go at the start of the first
    /// thread's chunk (or a chunk of their own when there is no thread);
    /// each thread gets as many chunks as its events need.
    pub fn build(&self) -> Vec<u8> {
        let cs = rf::CHUNK_SIZE as usize;
        let mut chunks: Vec<Vec<u8>> = Vec::new();
        let mut pending_sites = true;
        let threads: Vec<(u32, Vec<RegionEvent>)> = if self.threads.is_empty() {
            vec![(self.pid, Vec::new())]
        } else {
            self.threads.clone()
        };
        for (tid, events) in &threads {
            let mut seq = 0u32;
            let mut words: Vec<u64> = Vec::new();
            let base = events.first().map(|e| e.ticks()).unwrap_or(1).max(1);
            let mut last = base;
            let flush =
                |words: &mut Vec<u64>, seq: &mut u32, base: u64, chunks: &mut Vec<Vec<u8>>| {
                    let mut c = vec![0u8; cs];
                    put32(&mut c, ch::MAGIC, rf::CHUNK_MAGIC);
                    put32(&mut c, ch::TID, *tid);
                    put32(&mut c, ch::SEQUENCE, *seq);
                    put64(&mut c, ch::BASE_TICKS, base);
                    put64(&mut c, ch::MONOTONIC_NS, base);
                    for (k, w) in words.iter().enumerate() {
                        put64(&mut c, rf::CHUNK_HEADER_SIZE + k * 8, *w);
                    }
                    chunks.push(c);
                    words.clear();
                    *seq += 1;
                };
            let room = (cs - rf::CHUNK_HEADER_SIZE) / 8 - 1;
            let mut chunk_base = base;
            if pending_sites {
                pending_sites = false;
                for (id, kind, name, file, function, line) in &self.sites {
                    let mut bytes = Vec::new();
                    for s in [name, file, function] {
                        bytes.extend_from_slice(s.as_bytes());
                        bytes.push(0);
                    }
                    while bytes.len() % 8 != 0 {
                        bytes.push(0);
                    }
                    let k = match kind {
                        SiteKind::Begin => rf::SITE_BEGIN,
                        SiteKind::End => rf::SITE_END,
                        SiteKind::BeginKey => rf::SITE_BEGIN_KEY,
                    };
                    words.push(rf::make_head(
                        rf::TAG_SITE,
                        *id,
                        1 + (bytes.len() / 8) as u32,
                    ));
                    words.push(u64::from(k) | (u64::from(*line) << 32));
                    for w in bytes.chunks(8) {
                        words.push(u64::from_le_bytes(w.try_into().unwrap()));
                    }
                }
            }
            for e in events {
                if words.len() + 6 > room {
                    flush(&mut words, &mut seq, chunk_base, &mut chunks);
                    chunk_base = last;
                }
                let t = e.ticks();
                if t < last || t - last > u64::from(u32::MAX) {
                    words.push(rf::make_head(rf::TAG_TIME, 0, 0));
                    words.push(t);
                    last = t;
                }
                let dt = (t - last) as u32;
                last = t;
                match *e {
                    RegionEvent::Begin { site, .. } => {
                        words.push(rf::make_head(rf::TAG_BEGIN, site, dt))
                    }
                    RegionEvent::BeginKey { site, key, .. } => {
                        words.push(rf::make_head(rf::TAG_BEGIN_KEY, site, dt));
                        words.push(key);
                    }
                    RegionEvent::End { site, .. } => {
                        words.push(rf::make_head(rf::TAG_END, site, dt))
                    }
                    RegionEvent::Enter {
                        function, frame, ..
                    } => {
                        words.push(rf::make_head(rf::TAG_ENTER, 0, dt));
                        words.push(function);
                        words.push(frame);
                    }
                    RegionEvent::Exit {
                        function, frame, ..
                    } => {
                        words.push(rf::make_head(rf::TAG_EXIT, 0, dt));
                        words.push(function);
                        words.push(frame);
                    }
                }
            }
            flush(&mut words, &mut seq, chunk_base, &mut chunks);
        }
        let mut out = vec![0u8; rf::HEADER_SIZE];
        out[h::MAGIC..h::MAGIC + 8].copy_from_slice(rf::MAGIC);
        put32(&mut out, h::VERSION, rf::VERSION);
        put32(&mut out, h::HEADER_SIZE, rf::HEADER_SIZE as u32);
        put32(&mut out, h::ENDIAN_CHECK, rf::ENDIAN_CHECK);
        put16(&mut out, h::POINTER_SIZE, 8);
        put16(&mut out, h::CLOCK, rf::CLOCK_MONOTONIC);
        put32(&mut out, h::CHUNK_SIZE, rf::CHUNK_SIZE);
        put32(&mut out, h::CHUNKS_CLAIMED, chunks.len() as u32);
        put32(&mut out, h::PID, self.pid);
        let mut flags = 0;
        if self.finished {
            flags |= rf::FLAG_FINISHED;
        }
        put64(&mut out, h::FLAGS, flags);
        put64(&mut out, h::DATA_OFFSET, rf::HEADER_SIZE as u64);
        put32(&mut out, h::FUNCTION_EVERY, self.function_every);
        put32(&mut out, h::SITES_DEFINED, self.sites.len() as u32);
        for c in chunks {
            out.extend_from_slice(&c);
        }
        out
    }
}

fn read_at(file: &File, buf: &mut [u8], at: u64) -> std::io::Result<usize> {
    let mut done = 0;
    while done < buf.len() {
        let Some(pos) = at.checked_add(done as u64) else {
            break;
        };
        match file.read_at(&mut buf[done..], pos) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(done)
}

fn put16(b: &mut [u8], at: usize, v: u16) {
    b[at..at + 2].copy_from_slice(&v.to_le_bytes());
}
fn put32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}
fn put64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
}
fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes(b[at..at + 2].try_into().unwrap())
}
fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}
fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}
fn c_string(b: &[u8]) -> String {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    String::from_utf8_lossy(&b[..end]).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> RegionTraceBuilder {
        RegionTraceBuilder::new(42)
            .finished()
            .site(1, SiteKind::Begin, "parse", "a.c", 10)
            .site(2, SiteKind::End, "parse", "a.c", 12)
            .thread(
                7,
                vec![
                    RegionEvent::Begin {
                        ticks: 1000,
                        site: 1,
                    },
                    RegionEvent::End {
                        ticks: 1500,
                        site: 2,
                    },
                    RegionEvent::BeginKey {
                        ticks: 10_000_000_000,
                        site: 1,
                        key: 9,
                    },
                    RegionEvent::Enter {
                        ticks: 10_000_000_010,
                        function: 0x4000,
                        frame: 0x7ff0,
                    },
                    RegionEvent::Exit {
                        ticks: 10_000_000_020,
                        function: 0x4000,
                        frame: 0x7ff0,
                    },
                    RegionEvent::End {
                        ticks: 10_000_000_030,
                        site: 2,
                    },
                ],
            )
    }

    #[test]
    fn builder_round_trip() {
        let b = sample();
        let t = RegionTrace::decode(Path::new("x.creg"), &b.build()).unwrap();
        assert!(t.damage.is_empty(), "{:?}", t.damage);
        assert_eq!(t.pid, 42);
        assert_eq!(t.sites.len(), 2);
        assert_eq!(t.sites[&1].name, "parse");
        assert_eq!(t.sites[&2].line, 12);
        assert_eq!(t.threads.len(), 1);
        assert_eq!(t.threads[0].events, b.threads[0].1);
    }

    #[test]
    fn damaged_tails_are_read_as_far_as_they_go() {
        let bytes = sample().build();
        // A bad tag in the middle: the chunk ends there.
        let mut bad = bytes.clone();
        let at = rf::HEADER_SIZE + rf::CHUNK_HEADER_SIZE + 8 * 9; // after the two sites (4 + 4 words) and the BEGIN
        bad[at] = 0x7f;
        let t = RegionTrace::decode(Path::new("x.creg"), &bad).unwrap();
        assert!(
            matches!(t.damage[0], Damage::BadRecord { .. }),
            "{:?}",
            t.damage
        );
        assert_eq!(t.threads[0].events.len(), 1);
        // A file cut in the middle of its chunk: the chunk is lost.
        let cut = &bytes[..rf::HEADER_SIZE + 100];
        let t = RegionTrace::decode(Path::new("x.creg"), cut).unwrap();
        assert!(t.damage.contains(&Damage::FileTruncated { lost_chunks: 1 }));
        assert!(t.threads.is_empty());
        // Not a region trace.
        assert!(RegionTrace::decode(Path::new("x.creg"), &bytes[..100]).is_err());
        let mut magic = bytes.clone();
        magic[0] = b'X';
        let e = RegionTrace::decode(Path::new("x.creg"), &magic).unwrap_err();
        assert!(e.to_string().contains("bad magic"), "{e}");
    }
}
