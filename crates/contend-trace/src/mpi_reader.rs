//! Reader of MPI traces: decodes `<recording>/mpi/rank-<r>.cmpi` (format:
//! [`crate::mpi_format`], `docs/trace-format.md` "MPI traces") into the
//! in-memory model of [`crate::mpi`].
//!
//! What the reader does beyond decoding:
//! - puts every time on rank 0's `CLOCK_MONOTONIC`: `t + o(t)` with the
//!   offset `o` measured by the recorder against rank 0 at `MPI_Init` and
//!   `MPI_Finalize`, interpolated linearly between the two measurements (the
//!   correction Scalasca applies, Becker et al. 2009); zero on one node;
//! - merges the calls of all threads of a rank in the order they were
//!   entered;
//! - marks a call that was entered but never returned (the rank aborted,
//!   was killed or crashed inside it) as [`MpiRankTrace::aborted_in`];
//! - never panics on a damaged file: a truncated or corrupt trace is read
//!   as far as it is sound and the damage is described in
//!   [`MpiRankTrace::damage`]; a file that cannot be read at all becomes a
//!   problem of the recording and its rank a missing rank.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::mpi::{
    Completion, CompletionKind, MpiComm, MpiEvent, MpiOp, MpiRankTrace, MpiRecording, Peer,
    ProbedMessage, RecvPost, SendPost, StartedRequest,
};
use crate::mpi_format::{self as f, header as h, Head};
use crate::TraceError;

/// Reads all rank traces of a recording directory.
///
/// Returns `Ok(None)` when `dir` has no `mpi/` subdirectory (not an MPI
/// recording). Otherwise every `mpi/rank-<r>.cmpi` is read with
/// [`read_rank_trace`]; a file that cannot be read is listed in
/// [`MpiRecording::problems`] (message naming the file) and its rank in
/// [`MpiRecording::missing_ranks`]. An `mpi/` directory without any rank
/// trace gives a recording with no ranks and a problem saying so.
///
/// # Errors
///
/// [`TraceError::Io`] when `mpi/` exists but cannot be listed.
pub fn read_mpi_recording(dir: &Path) -> Result<Option<MpiRecording>, TraceError> {
    let mpi_dir = dir.join("mpi");
    if !mpi_dir.is_dir() {
        return Ok(None);
    }
    let io = |source| TraceError::Io {
        path: mpi_dir.clone(),
        source,
    };
    let mut files: Vec<(u32, PathBuf)> = Vec::new();
    for entry in std::fs::read_dir(&mpi_dir).map_err(io)? {
        let entry = entry.map_err(io)?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if let Some(rank) = rank_of_file_name(&name) {
            files.push((rank, entry.path()));
        }
    }
    files.sort();

    let mut rec = MpiRecording::default();
    let mut by_rank: BTreeMap<u32, MpiRankTrace> = BTreeMap::new();
    for (name_rank, path) in files {
        match read_rank_trace(&path) {
            Ok(trace) => {
                if trace.rank != name_rank {
                    rec.problems.push(format!(
                        "{}: the file name says rank {name_rank} but the header says rank {}",
                        path.display(),
                        trace.rank
                    ));
                }
                if let Some(first) = by_rank.get(&trace.rank) {
                    rec.problems.push(format!(
                        "{}: a second trace of rank {} (the first is {}); ignored",
                        path.display(),
                        trace.rank,
                        first.path.display()
                    ));
                    continue;
                }
                by_rank.insert(trace.rank, trace);
            }
            Err(e) => rec.problems.push(e.to_string()),
        }
    }
    if by_rank.is_empty() {
        rec.problems.push(format!(
            "{}: no readable rank trace (no rank returned from MPI_Init with the recorder loaded)",
            mpi_dir.display()
        ));
    }
    let sizes: std::collections::BTreeSet<u32> = by_rank.values().map(|r| r.world_size).collect();
    if sizes.len() > 1 {
        rec.problems.push(format!(
            "{}: ranks disagree on the size of MPI_COMM_WORLD ({:?}); using the largest",
            mpi_dir.display(),
            sizes
        ));
    }
    rec.world_size = sizes.iter().copied().max().unwrap_or(0);
    for r in by_rank.values() {
        if r.rank >= rec.world_size {
            rec.problems.push(format!(
                "{}: rank {} is outside MPI_COMM_WORLD of size {}",
                r.path.display(),
                r.rank,
                rec.world_size
            ));
        }
    }
    rec.missing_ranks = (0..rec.world_size)
        .filter(|r| !by_rank.contains_key(r))
        .collect();
    rec.ranks = by_rank.into_values().collect();
    Ok(Some(rec))
}

/// `rank-<r>.cmpi` → r.
fn rank_of_file_name(name: &str) -> Option<u32> {
    let digits = name.strip_prefix("rank-")?.strip_suffix(".cmpi")?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// Reads one rank trace file (see [`decode_rank_trace`]).
///
/// # Errors
///
/// [`TraceError::Io`] when the file cannot be opened or read;
/// [`TraceError::Format`] as for [`decode_rank_trace`].
pub fn read_rank_trace(path: &Path) -> Result<MpiRankTrace, TraceError> {
    let bytes = std::fs::read(path).map_err(|source| TraceError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    decode_rank_trace(path, &bytes)
}

/// Decodes the bytes of one rank trace; `path` only names the file in
/// messages and in [`MpiRankTrace::path`]. Times are corrected to rank 0's
/// clock.
///
/// # Errors
///
/// [`TraceError::Format`] when the header is missing, unfinished, of
/// another version or byte order, or inconsistent. Damage after the header
/// is not an error: it is described in [`MpiRankTrace::damage`].
pub fn decode_rank_trace(path: &Path, bytes: &[u8]) -> Result<MpiRankTrace, TraceError> {
    let fail = |p: String| TraceError::format(path, p);
    if bytes.len() < f::HEADER_SIZE {
        return Err(fail(format!(
            "not an MPI trace: {} bytes, shorter than the {}-byte header",
            bytes.len(),
            f::HEADER_SIZE
        )));
    }
    if &bytes[..8] != f::MAGIC {
        if bytes[..8].iter().all(|&b| b == 0) {
            return Err(fail(
                "the MPI trace header was never finished (the rank died while creating it)".into(),
            ));
        }
        return Err(fail("not an MPI trace (bad magic)".into()));
    }
    let version = u32_at(bytes, h::VERSION);
    if version != f::VERSION {
        return Err(fail(format!(
            "MPI trace version {version}; this contend reads version {}",
            f::VERSION
        )));
    }
    if u32_at(bytes, h::ENDIAN_CHECK) != f::ENDIAN_CHECK {
        return Err(fail(
            "MPI trace written with another byte order (big-endian?)".into(),
        ));
    }
    if u32_at(bytes, h::HEADER_SIZE) as usize != f::HEADER_SIZE {
        return Err(fail(format!(
            "header size {} (expected {})",
            u32_at(bytes, h::HEADER_SIZE),
            f::HEADER_SIZE
        )));
    }
    let chunk_size = u32_at(bytes, h::CHUNK_SIZE) as usize;
    if !(4096..=(64 << 20)).contains(&chunk_size) || !chunk_size.is_power_of_two() {
        return Err(fail(format!("bad chunk size {chunk_size}")));
    }
    let data_offset = u64_at(bytes, h::DATA_OFFSET);
    if data_offset < f::HEADER_SIZE as u64 || data_offset > 1 << 40 {
        return Err(fail(format!("bad data offset {data_offset}")));
    }
    let data_offset = data_offset as usize;
    let flags = u64_at(bytes, h::FLAGS);

    let mut trace = MpiRankTrace {
        path: path.to_path_buf(),
        rank: u32_at(bytes, h::WORLD_RANK),
        world_size: u32_at(bytes, h::WORLD_SIZE),
        pid: u32_at(bytes, h::PID),
        host: c_string(&bytes[h::HOST..h::HOST + h::HOST_LEN]),
        library: c_string(&bytes[h::LIBRARY..h::LIBRARY + h::LIBRARY_LEN]),
        finalized: flags & f::FLAG_FINALIZED != 0,
        ..MpiRankTrace::default()
    };
    if trace.world_size == 0 || trace.rank >= trace.world_size {
        return Err(fail(format!(
            "rank {} is not in MPI_COMM_WORLD of size {}",
            trace.rank, trace.world_size
        )));
    }
    let clock = ClockCorrection {
        init: (
            i64_at(bytes, h::OFFSET_INIT_NS),
            u64_at(bytes, h::OFFSET_INIT_AT_NS),
        ),
        fin: (flags & f::FLAG_FINAL_OFFSET != 0).then(|| {
            (
                i64_at(bytes, h::OFFSET_FINAL_NS),
                u64_at(bytes, h::OFFSET_FINAL_AT_NS),
            )
        }),
    };
    trace.clock_offset_ns = (clock.init.0, clock.fin.map(|f| f.0));
    if flags & f::FLAG_REQUESTS_FULL != 0 {
        trace.damage.push(
            "the recorder's request table was full: completions of some nonblocking requests are missing"
                .into(),
        );
    }
    if flags & f::FLAG_CHUNKS_FAILED != 0 {
        trace.damage.push(
            "a thread could not get more trace space (disk full?): its later calls are missing"
                .into(),
        );
    }

    // Chunks, grouped by thread in sequence order.
    let claimed = u32_at(bytes, h::CHUNKS_CLAIMED) as usize;
    let present = bytes.len().saturating_sub(data_offset).div_ceil(chunk_size);
    if claimed > present {
        trace.damage.push(format!(
            "the file ends after {present} of {claimed} chunks (truncated)"
        ));
    }
    let mut threads: BTreeMap<u32, Vec<ChunkRef>> = BTreeMap::new();
    let mut garbage_chunks = 0usize;
    for i in 0..claimed.min(present) {
        let off = data_offset + i * chunk_size;
        let end = (off + chunk_size).min(bytes.len());
        let c = &bytes[off..end];
        if c.len() < chunk_size {
            trace.damage.push(format!(
                "chunk {i} is cut short by the end of the file (truncated)"
            ));
        }
        if c.len() < f::CHUNK_HEADER_SIZE {
            continue;
        }
        let magic = u32_at(c, f::chunk::MAGIC);
        if magic != f::CHUNK_MAGIC {
            if magic != 0 {
                garbage_chunks += 1;
            }
            // 0: claimed but the thread died before writing its header
            continue;
        }
        let tid = u32_at(c, f::chunk::TID);
        let seq = u32_at(c, f::chunk::SEQUENCE);
        let base = u64_at(c, f::chunk::BASE_NS);
        threads
            .entry(tid)
            .or_default()
            .push((seq, base, &c[f::CHUNK_HEADER_SIZE..]));
    }
    if garbage_chunks > 0 {
        trace.damage.push(format!(
            "{garbage_chunks} chunk(s) with a bad chunk header were skipped"
        ));
    }

    let mut events: Vec<MpiEvent> = Vec::new();
    let mut open_calls: Vec<MpiEvent> = Vec::new();
    let mut comms: BTreeMap<u64, Vec<Option<u32>>> = BTreeMap::new();
    for (tid, mut chunks) in threads {
        chunks.sort_by_key(|c| c.0);
        let mut expected = 0u32;
        let mut dec = ThreadDecoder::new(tid);
        for (seq, base, words) in chunks {
            if seq != expected {
                trace.damage.push(format!(
                    "thread {tid}: chunk {expected} of its trace is missing (next is {seq})"
                ));
            }
            expected = seq.wrapping_add(1);
            dec.chunk(base, words, &mut events, &mut comms, &mut trace.damage);
        }
        if let Some(ev) = dec.open.take() {
            open_calls.push(ev);
        }
        if dec.said_bad_peer {
            trace.damage.push(format!(
                "thread {tid}: some peers could not be translated to world ranks (recorded as MPI_PROC_NULL)"
            ));
        }
    }

    // Calls that never returned.
    for ev in open_calls.iter_mut() {
        ev.exit_ns = ev.enter_ns;
    }
    let died_in = open_calls.iter().map(|e| e.enter_ns).max();
    if trace.finalized && !open_calls.is_empty() {
        trace.damage.push(format!(
            "{} call(s) have no exit record although the rank returned from MPI_Finalize",
            open_calls.len()
        ));
    }
    let mut died_events = Vec::new();
    for ev in open_calls {
        let last = Some(ev.enter_ns) == died_in && !trace.finalized;
        if !last {
            trace.damage.push(format!(
                "thread {}: {} entered at {} ns never returned",
                ev.tid,
                ev.op.name(),
                ev.enter_ns
            ));
        }
        died_events.push((last, ev));
    }
    let mut aborted_key = None;
    for (last, ev) in died_events {
        if last && aborted_key.is_none() {
            aborted_key = Some((ev.enter_ns, ev.tid));
        }
        events.push(ev);
    }
    events.sort_by_key(|e| e.enter_ns);
    if let Some((t, tid)) = aborted_key {
        trace.aborted_in = events
            .iter()
            .rposition(|e| e.enter_ns == t && e.tid == tid && e.exit_ns == e.enter_ns);
    }
    if !trace.finalized && trace.aborted_in.is_none() {
        trace.damage.push(
            "the rank did not return from MPI_Finalize and ended outside any MPI call (exited or was killed while computing)"
                .into(),
        );
    }

    // Clock correction onto rank 0's time line.
    for ev in events.iter_mut() {
        ev.enter_ns = clock.apply(ev.enter_ns);
        ev.exit_ns = clock.apply(ev.exit_ns);
    }
    trace.events = events;

    for (id, ranks) in comms {
        let n_missing = ranks.iter().filter(|r| r.is_none()).count();
        if n_missing > 0 {
            trace.damage.push(format!(
                "communicator {id:#x}: {n_missing} of {} member ranks are missing from the trace",
                ranks.len()
            ));
            continue;
        }
        trace.comms.push(MpiComm {
            id,
            world_ranks: ranks.into_iter().flatten().collect(),
        });
    }
    Ok(trace)
}

/// One chunk of a thread: (sequence, base ns, record bytes).
type ChunkRef<'a> = (u32, u64, &'a [u8]);

/// Linear interpolation of the clock offset between the `MPI_Init` and
/// `MPI_Finalize` measurements: `(offset ns, local time ns)` each.
struct ClockCorrection {
    init: (i64, u64),
    fin: Option<(i64, u64)>,
}

impl ClockCorrection {
    /// `t + o(t)`, with `o` interpolated (extrapolated beyond the two
    /// measurements), clamped to `0..=u64::MAX`.
    fn apply(&self, t: u64) -> u64 {
        let (o0, a0) = self.init;
        let o = match self.fin {
            Some((o1, a1)) if a1 > a0 => {
                let slope = (i128::from(o1) - i128::from(o0)) as f64 / (a1 - a0) as f64;
                i128::from(o0) + (slope * (i128::from(t) - i128::from(a0)) as f64) as i128
            }
            _ => i128::from(o0),
        };
        (i128::from(t) + o).clamp(0, i128::from(u64::MAX)) as u64
    }
}

/// Operation classes by ENTER payload layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    None,
    Send { blocking: bool },
    Recv { blocking: bool },
    SendRecv,
    Probe,
    WaitTest,
    Collective,
    CommCreate,
    CommFree,
    PersistentInit, // Send_init family, Recv_init: posted only by Start(all)
}

fn class_of(op: MpiOp) -> Class {
    use MpiOp::*;
    match op {
        Init | InitThread | Finalize => Class::None,
        Send | Ssend | Bsend | Rsend => Class::Send { blocking: true },
        Isend | Issend | Ibsend | Irsend => Class::Send { blocking: false },
        Recv | Mrecv => Class::Recv { blocking: true },
        Irecv | Imrecv => Class::Recv { blocking: false },
        Sendrecv | SendrecvReplace => Class::SendRecv,
        Probe | Iprobe | Mprobe | Improbe => Class::Probe,
        Wait | Waitall | Waitany | Waitsome | Test | Testall | Testany | Testsome => {
            Class::WaitTest
        }
        CommSplit | CommDup | CommCreate => Class::CommCreate,
        CommFree => Class::CommFree,
        SendInit | SsendInit | BsendInit | RsendInit | RecvInit => Class::PersistentInit,
        Start | Startall | RequestFree => Class::None,
        _ if op.is_collective() => Class::Collective,
        _ => Class::None,
    }
}

fn peer(v: i32) -> Peer {
    match v {
        f::PEER_ANY => Peer::Any,
        v if v >= 0 => Peer::Rank(v as u32),
        _ => Peer::Null,
    }
}

/// Decodes one thread's records, chunk after chunk.
struct ThreadDecoder {
    tid: u32,
    time: u64,
    /// Call site of the previous ENTER in the current chunk (the compact
    /// form refers to it).
    last_site: Option<u64>,
    /// The call entered and not yet exited.
    open: Option<MpiEvent>,
    /// Damage messages already given (one of each kind per thread).
    said_unknown_tag: bool,
    said_unknown_op: bool,
    said_bad_peer: bool,
}

impl ThreadDecoder {
    fn new(tid: u32) -> ThreadDecoder {
        ThreadDecoder {
            tid,
            time: 0,
            last_site: None,
            open: None,
            said_unknown_tag: false,
            said_unknown_op: false,
            said_bad_peer: false,
        }
    }

    fn chunk(
        &mut self,
        base_ns: u64,
        bytes: &[u8],
        events: &mut Vec<MpiEvent>,
        comms: &mut BTreeMap<u64, Vec<Option<u32>>>,
        damage: &mut Vec<String>,
    ) {
        self.time = base_ns;
        self.last_site = None;
        let words: Vec<u64> = bytes
            .chunks_exact(8)
            .map(|w| u64::from_le_bytes(w.try_into().unwrap_or([0; 8])))
            .collect();
        let mut i = 0usize;
        while i < words.len() {
            let word = words[i];
            if word == 0 {
                break; // end of this chunk's records
            }
            let hd = Head::decode(word);
            let n = usize::from(hd.n);
            if i + 1 + n > words.len() {
                damage.push(format!(
                    "thread {}: a record runs past the end of its chunk (corrupt); rest of the chunk skipped",
                    self.tid
                ));
                break;
            }
            let p = &words[i + 1..i + 1 + n];
            i += 1 + n;
            match hd.tag {
                f::REC_TIME => {
                    if let Some(&t) = p.first() {
                        self.time = t;
                    }
                }
                f::REC_ENTER => {
                    self.time = self.time.saturating_add(u64::from(hd.arg));
                    let code = hd.small & f::SMALL_OP_MASK;
                    let Some(op) = MpiOp::from_code(u16::from(code)) else {
                        if !self.said_unknown_op {
                            self.said_unknown_op = true;
                            damage.push(format!(
                                "thread {}: unknown MPI operation code {} (call skipped)",
                                self.tid, code
                            ));
                        }
                        continue;
                    };
                    if let Some(mut prev) = self.open.take() {
                        damage.push(format!(
                            "thread {}: {} entered at {} ns has no exit record before the next call",
                            self.tid,
                            prev.op.name(),
                            prev.enter_ns
                        ));
                        prev.exit_ns = prev.enter_ns;
                        events.push(prev);
                    }
                    // the compact form leaves out a repeated call site
                    let with_site: Vec<u64>;
                    let p = if hd.small & f::SMALL_COMPACT != 0 {
                        let site = self.last_site.unwrap_or_else(|| {
                            damage.push(format!(
                                "thread {}: a compact call record without an earlier call site in its chunk (site unknown)",
                                self.tid
                            ));
                            0
                        });
                        with_site = std::iter::once(site).chain(p.iter().copied()).collect();
                        &with_site[..]
                    } else {
                        p
                    };
                    if let Some(&site) = p.first() {
                        self.last_site = Some(site);
                    }
                    match self.enter(op, p) {
                        Some(ev) => self.open = Some(ev),
                        None => damage.push(format!(
                            "thread {}: {} record too short (corrupt); call skipped",
                            self.tid,
                            op.name()
                        )),
                    }
                }
                f::REC_COMPLETION => {
                    let (Some(ev), [request, tag, bytes, ..]) = (self.open.as_mut(), p) else {
                        damage.push(format!(
                            "thread {}: a completion record outside any call (ignored)",
                            self.tid
                        ));
                        continue;
                    };
                    if hd.small & f::COMPL_PROBE != 0 {
                        ev.probed = Some(ProbedMessage {
                            source: (hd.small & f::COMPL_NO_SOURCE == 0).then_some(hd.arg),
                            tag: *tag as u32 as i32,
                            bytes: *bytes,
                        });
                        continue;
                    }
                    ev.completions.push(Completion {
                        request: *request,
                        kind: if hd.small & f::COMPL_RECV != 0 {
                            CompletionKind::Recv
                        } else {
                            CompletionKind::Send
                        },
                        source: (hd.small & f::COMPL_NO_SOURCE == 0).then_some(hd.arg),
                        tag: *tag as u32 as i32,
                        bytes: *bytes,
                        cancelled: hd.small & f::COMPL_CANCELLED != 0,
                    });
                }
                f::REC_START => {
                    let (Some(ev), [comm, request, tag, bytes, ..]) = (self.open.as_mut(), p)
                    else {
                        damage.push(format!(
                            "thread {}: a start record outside any call (ignored)",
                            self.tid
                        ));
                        continue;
                    };
                    let pr = hd.arg as i32;
                    let tag = *tag as u32 as i32;
                    let fl = hd.small;
                    let mode = if fl & f::START_RECV != 0 {
                        MpiOp::RecvInit
                    } else if fl & f::START_SYNC != 0 {
                        MpiOp::SsendInit
                    } else if fl & f::START_BUFFERED != 0 {
                        MpiOp::BsendInit
                    } else if fl & f::START_READY != 0 {
                        MpiOp::RsendInit
                    } else {
                        MpiOp::SendInit
                    };
                    let mut st = StartedRequest {
                        mode,
                        comm: *comm,
                        send: None,
                        recv: None,
                    };
                    if hd.small & f::START_RECV != 0 {
                        st.recv = Some(RecvPost {
                            source: peer(pr),
                            tag,
                            bytes: *bytes,
                            request: *request,
                        });
                    } else {
                        st.send = Some(SendPost {
                            dest: peer(pr),
                            tag,
                            bytes: *bytes,
                            request: *request,
                        });
                    }
                    ev.starts.push(st);
                    self.check_peer(pr);
                }
                f::REC_EXIT => {
                    self.time = self.time.saturating_add(u64::from(hd.arg));
                    let Some(mut ev) = self.open.take() else {
                        damage.push(format!(
                            "thread {}: an exit record without its enter record (ignored)",
                            self.tid
                        ));
                        continue;
                    };
                    if ev.op as u16 != u16::from(hd.small & f::SMALL_OP_MASK) {
                        damage.push(format!(
                            "thread {}: {} entered at {} ns exits as operation {} (corrupt)",
                            self.tid,
                            ev.op.name(),
                            ev.enter_ns,
                            hd.small & f::SMALL_OP_MASK
                        ));
                    }
                    ev.exit_ns = self.time.max(ev.enter_ns);
                    let extra = if hd.small & f::SMALL_COMPACT != 0 {
                        ev.return_code = 0; // MPI_SUCCESS
                        p.first().copied()
                    } else {
                        if let Some(&rc) = p.first() {
                            ev.return_code = rc as u32 as i32;
                        }
                        p.get(1).copied()
                    };
                    match class_of(ev.op) {
                        Class::Send { blocking: false } => {
                            if let (Some(s), Some(id)) = (ev.send.as_mut(), extra) {
                                s.request = id;
                            }
                        }
                        Class::Recv { blocking: false } => {
                            if let (Some(r), Some(id)) = (ev.recv.as_mut(), extra) {
                                r.request = id;
                            }
                        }
                        Class::CommCreate => {
                            ev.created_comm = extra.filter(|&id| id != f::COMM_NULL_ID);
                        }
                        _ => {}
                    }
                    events.push(ev);
                }
                f::REC_COMM => {
                    let [id, size_first, packed @ ..] = p else {
                        continue;
                    };
                    let size = (*size_first as u32) as usize;
                    let first = (*size_first >> 32) as usize;
                    let count = hd.arg as usize;
                    if size > 1 << 24
                        || first.saturating_add(count) > size
                        || packed.len() * 2 < count
                    {
                        damage.push(format!(
                            "thread {}: a communicator record is inconsistent (ignored)",
                            self.tid
                        ));
                        continue;
                    }
                    let members = comms.entry(*id).or_insert_with(|| vec![None; size]);
                    if members.len() != size {
                        damage.push(format!(
                            "communicator {id:#x} is recorded with two sizes ({} and {size})",
                            members.len()
                        ));
                        continue;
                    }
                    for k in 0..count {
                        let w = packed[k / 2];
                        let r = if k % 2 == 0 {
                            w as u32
                        } else {
                            (w >> 32) as u32
                        };
                        members[first + k] = Some(r);
                    }
                }
                _ => {
                    if !self.said_unknown_tag {
                        self.said_unknown_tag = true;
                        damage.push(format!(
                            "thread {}: records with unknown tag {} skipped",
                            self.tid, hd.tag
                        ));
                    }
                }
            }
        }
    }

    /// The event an ENTER record starts; `None` when its payload is short.
    fn enter(&mut self, op: MpiOp, p: &[u64]) -> Option<MpiEvent> {
        let mut ev = MpiEvent {
            op,
            tid: self.tid,
            enter_ns: self.time,
            exit_ns: self.time,
            site: *p.first()?,
            comm: crate::mpi::WORLD_COMM,
            root: None,
            coll_bytes_sent: 0,
            coll_bytes_recv: 0,
            send: None,
            recv: None,
            starts: Vec::new(),
            completions: Vec::new(),
            created_comm: None,
            return_code: 0,
            probed: None,
        };
        let q = &p[1..];
        match class_of(op) {
            Class::None | Class::WaitTest => {}
            Class::Send { blocking } => {
                let [comm, pt, bytes, ..] = q else {
                    return None;
                };
                let (dest, tag) = f::peer_tag(*pt);
                self.check_peer(dest);
                ev.comm = *comm;
                ev.send = Some(SendPost {
                    dest: peer(dest),
                    tag,
                    bytes: *bytes,
                    request: 0,
                });
                if blocking {
                    ev.completions.push(send_completion(dest, tag, *bytes));
                }
            }
            Class::Recv { .. } => {
                let [comm, pt, bytes, ..] = q else {
                    return None;
                };
                let (source, tag) = f::peer_tag(*pt);
                self.check_peer(source);
                ev.comm = *comm;
                ev.recv = Some(RecvPost {
                    source: peer(source),
                    tag,
                    bytes: *bytes,
                    request: 0,
                });
            }
            Class::SendRecv => {
                let [comm, spt, sbytes, rpt, rbytes, ..] = q else {
                    return None;
                };
                let (dest, stag) = f::peer_tag(*spt);
                let (source, rtag) = f::peer_tag(*rpt);
                self.check_peer(dest);
                self.check_peer(source);
                ev.comm = *comm;
                ev.send = Some(SendPost {
                    dest: peer(dest),
                    tag: stag,
                    bytes: *sbytes,
                    request: 0,
                });
                ev.recv = Some(RecvPost {
                    source: peer(source),
                    tag: rtag,
                    bytes: *rbytes,
                    request: 0,
                });
                ev.completions.push(send_completion(dest, stag, *sbytes));
            }
            Class::Probe => {
                let [comm, _pt, ..] = q else {
                    return None;
                };
                ev.comm = *comm;
            }
            Class::Collective => {
                let [comm, root, sent, recv, ..] = q else {
                    return None;
                };
                ev.comm = *comm;
                let root = *root as u32 as i32;
                ev.root = (root >= 0).then_some(root as u32);
                ev.coll_bytes_sent = *sent;
                ev.coll_bytes_recv = *recv;
            }
            Class::CommCreate | Class::CommFree => {
                ev.comm = *q.first()?;
            }
            Class::PersistentInit => {
                let [comm, _pt, _bytes, ..] = q else {
                    return None;
                };
                ev.comm = *comm;
            }
        }
        Some(ev)
    }

    /// Remembers an untranslatable peer (reported once per thread).
    fn check_peer(&mut self, v: i32) {
        if v == f::PEER_UNKNOWN {
            self.said_bad_peer = true;
        }
    }
}

fn send_completion(dest: i32, tag: i32, bytes: u64) -> Completion {
    Completion {
        request: 0,
        kind: CompletionKind::Send,
        source: (dest >= 0).then_some(dest as u32),
        tag,
        bytes,
        cancelled: false,
    }
}

fn u32_at(b: &[u8], off: usize) -> u32 {
    b.get(off..off + 4)
        .map(|s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
        .unwrap_or(0)
}

fn u64_at(b: &[u8], off: usize) -> u64 {
    b.get(off..off + 8)
        .and_then(|s| s.try_into().ok())
        .map(u64::from_le_bytes)
        .unwrap_or(0)
}

fn i64_at(b: &[u8], off: usize) -> i64 {
    u64_at(b, off) as i64
}

fn c_string(b: &[u8]) -> String {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    String::from_utf8_lossy(&b[..end]).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mpi::{ANY_TAG, SELF_COMM, WORLD_COMM};

    /// A hand-made rank trace, laid out as the C recorder writes it.
    struct Builder {
        header: Vec<u8>,
        chunk_size: usize,
        chunks: Vec<Vec<u8>>,
    }

    /// One thread's records in one chunk.
    struct Chunk {
        tid: u32,
        seq: u32,
        base: u64,
        last: u64,
        words: Vec<u64>,
    }

    impl Chunk {
        fn new(tid: u32, seq: u32, base: u64) -> Chunk {
            Chunk {
                tid,
                seq,
                base,
                last: base,
                words: Vec::new(),
            }
        }
        fn rec(&mut self, tag: u8, small: u8, arg: u32, payload: &[u64]) {
            self.words.push(
                Head {
                    tag,
                    n: payload.len() as u16,
                    small,
                    arg,
                }
                .encode(),
            );
            self.words.extend_from_slice(payload);
        }
        fn dt(&mut self, t: u64) -> u32 {
            let d = t - self.last;
            self.last = t;
            d as u32
        }
        fn enter(&mut self, op: MpiOp, t: u64, site: u64, rest: &[u64]) {
            let dt = self.dt(t);
            let mut p = vec![site];
            p.extend_from_slice(rest);
            self.rec(f::REC_ENTER, op as u8, dt, &p);
        }
        fn exit(&mut self, op: MpiOp, t: u64, rc: i32, rest: &[u64]) {
            let dt = self.dt(t);
            let mut p = vec![rc as u32 as u64];
            p.extend_from_slice(rest);
            self.rec(f::REC_EXIT, op as u8, dt, &p);
        }
        fn completion(
            &mut self,
            recv: bool,
            source: Option<u32>,
            request: u64,
            tag: i32,
            bytes: u64,
        ) {
            let mut fl = 0;
            if recv {
                fl |= f::COMPL_RECV;
            }
            if source.is_none() {
                fl |= f::COMPL_NO_SOURCE;
            }
            self.rec(
                f::REC_COMPLETION,
                fl,
                source.unwrap_or(0),
                &[request, tag as u32 as u64, bytes],
            );
        }
        fn comm(&mut self, id: u64, ranks: &[u32]) {
            let mut p = vec![id, ranks.len() as u64];
            for pair in ranks.chunks(2) {
                p.push(u64::from(pair[0]) | (u64::from(*pair.get(1).unwrap_or(&0)) << 32));
            }
            self.rec(f::REC_COMM, 0, ranks.len() as u32, &p);
        }
    }

    impl Builder {
        fn new(rank: u32, size: u32, flags: u64) -> Builder {
            let mut header = vec![0u8; f::HEADER_SIZE];
            let put32 = |h: &mut Vec<u8>, off: usize, v: u32| {
                h[off..off + 4].copy_from_slice(&v.to_le_bytes())
            };
            let put64 = |h: &mut Vec<u8>, off: usize, v: u64| {
                h[off..off + 8].copy_from_slice(&v.to_le_bytes())
            };
            header[..8].copy_from_slice(f::MAGIC);
            put32(&mut header, h::VERSION, f::VERSION);
            put32(&mut header, h::HEADER_SIZE, f::HEADER_SIZE as u32);
            put32(&mut header, h::ENDIAN_CHECK, f::ENDIAN_CHECK);
            put32(&mut header, h::CHUNK_SIZE, 4096);
            put32(&mut header, h::PID, 4242 + rank);
            put32(&mut header, h::WORLD_RANK, rank);
            put32(&mut header, h::WORLD_SIZE, size);
            put64(&mut header, h::FLAGS, flags);
            put64(&mut header, h::DATA_OFFSET, f::HEADER_SIZE as u64);
            header[h::HOST..h::HOST + 5].copy_from_slice(b"node1");
            header[h::LIBRARY..h::LIBRARY + 8].copy_from_slice(b"Open MPI");
            Builder {
                header,
                chunk_size: 4096,
                chunks: Vec::new(),
            }
        }
        fn offsets(&mut self, init: (i64, u64), fin: Option<(i64, u64)>) {
            let put64 = |h: &mut Vec<u8>, off: usize, v: u64| {
                h[off..off + 8].copy_from_slice(&v.to_le_bytes())
            };
            put64(&mut self.header, h::OFFSET_INIT_NS, init.0 as u64);
            put64(&mut self.header, h::OFFSET_INIT_AT_NS, init.1);
            if let Some((o, at)) = fin {
                put64(&mut self.header, h::OFFSET_FINAL_NS, o as u64);
                put64(&mut self.header, h::OFFSET_FINAL_AT_NS, at);
                let flags = u64_at(&self.header, h::FLAGS) | f::FLAG_FINAL_OFFSET;
                put64(&mut self.header, h::FLAGS, flags);
            }
        }
        fn add(&mut self, c: Chunk) {
            let mut b = vec![0u8; self.chunk_size];
            b[0..4].copy_from_slice(&f::CHUNK_MAGIC.to_le_bytes());
            b[4..8].copy_from_slice(&c.tid.to_le_bytes());
            b[8..12].copy_from_slice(&c.seq.to_le_bytes());
            b[16..24].copy_from_slice(&c.base.to_le_bytes());
            for (i, w) in c.words.iter().enumerate() {
                let o = f::CHUNK_HEADER_SIZE + i * 8;
                b[o..o + 8].copy_from_slice(&w.to_le_bytes());
            }
            self.chunks.push(b);
        }
        fn bytes(&self) -> Vec<u8> {
            let mut out = self.header.clone();
            let n = self.chunks.len() as u32;
            out[h::CHUNKS_CLAIMED..h::CHUNKS_CLAIMED + 4].copy_from_slice(&n.to_le_bytes());
            for c in &self.chunks {
                out.extend_from_slice(c);
            }
            out
        }
    }

    fn pt(peer: i32, tag: i32) -> u64 {
        f::pack_peer_tag(peer, tag)
    }

    /// Rank 1 of 4: Init, Isend to 2, Irecv from ANY_SOURCE, Waitall
    /// completing both, a split communicator {1, 3} and a Recv on it,
    /// a Barrier, Finalize.
    fn sample(flags: u64) -> Builder {
        let mut b = Builder::new(1, 4, flags);
        let mut c = Chunk::new(77, 0, 1_000);
        c.enter(MpiOp::Init, 1_000, 0x400100, &[]);
        c.comm(WORLD_COMM, &[0, 1, 2, 3]);
        c.comm(SELF_COMM, &[1]);
        c.exit(MpiOp::Init, 5_000, 0, &[]);
        c.enter(MpiOp::Isend, 6_000, 0x400200, &[WORLD_COMM, pt(2, 5), 800]);
        c.exit(MpiOp::Isend, 6_100, 0, &[1]);
        c.enter(
            MpiOp::Irecv,
            6_200,
            0x400300,
            &[WORLD_COMM, pt(f::PEER_ANY, f::PEER_ANY), 1024],
        );
        c.exit(MpiOp::Irecv, 6_300, 0, &[2]);
        c.enter(MpiOp::Waitall, 7_000, 0x400400, &[2]);
        c.completion(false, Some(2), 1, 5, 800);
        c.completion(true, Some(3), 2, 9, 512);
        c.exit(MpiOp::Waitall, 9_000, 0, &[]);
        c.enter(MpiOp::CommSplit, 10_000, 0x400500, &[WORLD_COMM]);
        c.comm(0x1_0000_0002, &[1, 3]);
        c.exit(MpiOp::CommSplit, 11_000, 0, &[0x1_0000_0002]);
        c.enter(
            MpiOp::Recv,
            12_000,
            0x400600,
            &[0x1_0000_0002, pt(3, ANY_TAG), 64],
        );
        c.completion(true, Some(3), 0, 4, 64);
        c.exit(MpiOp::Recv, 15_000, 0, &[]);
        c.enter(
            MpiOp::Barrier,
            16_000,
            0x400700,
            &[WORLD_COMM, u64::from(u32::MAX), 0, 0],
        );
        c.exit(MpiOp::Barrier, 20_000, 0, &[]);
        c.enter(MpiOp::Finalize, 21_000, 0x400800, &[]);
        c.exit(MpiOp::Finalize, 22_000, 0, &[]);
        b.add(c);
        b
    }

    #[test]
    fn decodes_a_hand_built_trace() {
        let b = sample(f::FLAG_FINALIZED);
        let t = decode_rank_trace(Path::new("rank-1.cmpi"), &b.bytes()).unwrap();
        assert!(t.damage.is_empty(), "{:?}", t.damage);
        assert_eq!((t.rank, t.world_size, t.pid), (1, 4, 4243));
        assert_eq!(t.host, "node1");
        assert_eq!(t.library, "Open MPI");
        assert!(t.finalized);
        assert_eq!(t.aborted_in, None);
        let ops: Vec<MpiOp> = t.events.iter().map(|e| e.op).collect();
        use MpiOp::*;
        assert_eq!(
            ops,
            [Init, Isend, Irecv, Waitall, CommSplit, Recv, Barrier, Finalize]
        );
        let isend = &t.events[1];
        assert_eq!(
            (isend.enter_ns, isend.exit_ns, isend.site),
            (6_000, 6_100, 0x400200)
        );
        assert_eq!(
            isend.send,
            Some(SendPost {
                dest: Peer::Rank(2),
                tag: 5,
                bytes: 800,
                request: 1
            })
        );
        assert!(isend.completions.is_empty());
        let irecv = &t.events[2];
        assert_eq!(
            irecv.recv,
            Some(RecvPost {
                source: Peer::Any,
                tag: ANY_TAG,
                bytes: 1024,
                request: 2
            })
        );
        let wa = &t.events[3];
        assert_eq!((wa.enter_ns, wa.exit_ns), (7_000, 9_000));
        assert_eq!(wa.completions.len(), 2);
        assert_eq!(wa.completions[1].kind, CompletionKind::Recv);
        assert_eq!(wa.completions[1].source, Some(3));
        assert_eq!((wa.completions[1].tag, wa.completions[1].bytes), (9, 512));
        assert_eq!(wa.completions[0].kind, CompletionKind::Send);
        assert_eq!(t.events[4].created_comm, Some(0x1_0000_0002));
        let recv = &t.events[5];
        assert_eq!(recv.comm, 0x1_0000_0002);
        assert_eq!(recv.recv.unwrap().source, Peer::Rank(3));
        assert_eq!(recv.completions[0].request, 0);
        assert_eq!(recv.completions[0].tag, 4);
        assert_eq!(t.events[6].root, None);
        assert_eq!(
            t.comms,
            vec![
                MpiComm {
                    id: WORLD_COMM,
                    world_ranks: vec![0, 1, 2, 3]
                },
                MpiComm {
                    id: SELF_COMM,
                    world_ranks: vec![1]
                },
                MpiComm {
                    id: 0x1_0000_0002,
                    world_ranks: vec![1, 3]
                },
            ]
        );
    }

    #[test]
    fn blocking_send_and_sendrecv_list_their_send_completion() {
        let mut b = Builder::new(0, 2, f::FLAG_FINALIZED);
        let mut c = Chunk::new(5, 0, 100);
        c.enter(MpiOp::Ssend, 200, 1, &[WORLD_COMM, pt(1, 3), 40]);
        c.exit(MpiOp::Ssend, 300, 0, &[]);
        c.enter(
            MpiOp::Sendrecv,
            400,
            2,
            &[WORLD_COMM, pt(1, 7), 8, pt(f::PEER_NULL, 8), 16],
        );
        c.completion(true, None, 0, ANY_TAG, 0);
        c.exit(MpiOp::Sendrecv, 500, 0, &[]);
        b.add(c);
        let t = decode_rank_trace(Path::new("x"), &b.bytes()).unwrap();
        assert_eq!(t.events[0].completions, vec![send_completion(1, 3, 40)]);
        let sr = &t.events[1];
        assert_eq!(sr.recv.unwrap().source, Peer::Null);
        assert_eq!(sr.completions.len(), 2);
        assert_eq!(sr.completions[0].kind, CompletionKind::Send);
        assert_eq!(sr.completions[1].source, None);
    }

    #[test]
    fn matched_probe_and_receives_decode_as_probe_and_receives() {
        let mut b = Builder::new(1, 2, f::FLAG_FINALIZED);
        let mut c = Chunk::new(5, 0, 100);
        // MPI_Mprobe(ANY_SOURCE, ANY_TAG) found 24 bytes from rank 0, tag 9
        c.enter(
            MpiOp::Mprobe,
            200,
            0x10,
            &[WORLD_COMM, pt(f::PEER_ANY, ANY_TAG)],
        );
        c.rec(
            f::REC_COMPLETION,
            f::COMPL_RECV | f::COMPL_PROBE,
            0,
            &[0, 9, 24],
        );
        c.exit(MpiOp::Mprobe, 300, 0, &[]);
        // MPI_Mrecv of that message
        c.enter(MpiOp::Mrecv, 310, 0x20, &[WORLD_COMM, pt(0, 9), 24]);
        c.completion(true, Some(0), 0, 9, 24);
        c.exit(MpiOp::Mrecv, 320, 0, &[]);
        // MPI_Imrecv of MPI_MESSAGE_NO_PROC: request 7
        c.enter(
            MpiOp::Imrecv,
            330,
            0x30,
            &[WORLD_COMM, pt(f::PEER_NULL, ANY_TAG), 0],
        );
        c.exit(MpiOp::Imrecv, 340, 0, &[7]);
        // MPI_Improbe that found nothing
        c.enter(MpiOp::Improbe, 350, 0x40, &[WORLD_COMM, pt(0, 3)]);
        c.exit(MpiOp::Improbe, 360, 0, &[]);
        b.add(c);
        let t = decode_rank_trace(Path::new("x"), &b.bytes()).unwrap();
        assert!(t.damage.is_empty(), "{:?}", t.damage);
        let ops: Vec<MpiOp> = t.events.iter().map(|e| e.op).collect();
        assert_eq!(
            ops,
            [MpiOp::Mprobe, MpiOp::Mrecv, MpiOp::Imrecv, MpiOp::Improbe]
        );
        let mp = &t.events[0];
        assert_eq!(
            mp.probed,
            Some(ProbedMessage {
                source: Some(0),
                tag: 9,
                bytes: 24
            })
        );
        assert!(mp.completions.is_empty() && mp.recv.is_none());
        let mr = &t.events[1];
        assert_eq!(
            mr.recv,
            Some(RecvPost {
                source: Peer::Rank(0),
                tag: 9,
                bytes: 24,
                request: 0
            })
        );
        assert_eq!(mr.completions.len(), 1);
        assert_eq!(mr.completions[0].kind, CompletionKind::Recv);
        assert_eq!(mr.probed, None);
        let im = &t.events[2].recv.unwrap();
        assert_eq!((im.source, im.request), (Peer::Null, 7));
        assert_eq!(t.events[3].probed, None);
        for op in [MpiOp::Mprobe, MpiOp::Improbe, MpiOp::Mrecv, MpiOp::Imrecv] {
            assert_eq!(MpiOp::from_code(op as u16), Some(op));
            assert!(op.name().starts_with("MPI_M") || op.name().starts_with("MPI_I"));
        }
    }

    #[test]
    fn persistent_requests_decode_as_startall_postings() {
        let mut b = Builder::new(1, 4, f::FLAG_FINALIZED);
        let mut c = Chunk::new(5, 0, 100);
        // MPI_Recv_init(ANY_SOURCE, tag 5, 16 bytes), MPI_Ssend_init(2, 5, 16)
        c.enter(
            MpiOp::RecvInit,
            200,
            0x10,
            &[WORLD_COMM, pt(f::PEER_ANY, 5), 16],
        );
        c.exit(MpiOp::RecvInit, 210, 0, &[]);
        c.enter(MpiOp::SsendInit, 220, 0x20, &[WORLD_COMM, pt(2, 5), 16]);
        c.exit(MpiOp::SsendInit, 230, 0, &[]);
        // MPI_Startall of both: requests 7 (receive) and 8 (send)
        c.enter(MpiOp::Startall, 240, 0x30, &[2]);
        c.rec(
            f::REC_START,
            f::START_RECV,
            f::PEER_ANY as u32,
            &[WORLD_COMM, 7, 5, 16],
        );
        c.rec(f::REC_START, f::START_SYNC, 2, &[WORLD_COMM, 8, 5, 16]);
        c.exit(MpiOp::Startall, 250, 0, &[]);
        c.enter(MpiOp::Waitall, 260, 0x40, &[2]);
        c.completion(true, Some(0), 7, 5, 16);
        c.completion(false, Some(2), 8, 5, 16);
        c.exit(MpiOp::Waitall, 300, 0, &[]);
        c.enter(MpiOp::RequestFree, 310, 0x50, &[]);
        c.exit(MpiOp::RequestFree, 320, 0, &[]);
        b.add(c);
        let t = decode_rank_trace(Path::new("x"), &b.bytes()).unwrap();
        assert!(t.damage.is_empty(), "{:?}", t.damage);
        let ops: Vec<MpiOp> = t.events.iter().map(|e| e.op).collect();
        assert_eq!(
            ops,
            [
                MpiOp::RecvInit,
                MpiOp::SsendInit,
                MpiOp::Startall,
                MpiOp::Waitall,
                MpiOp::RequestFree
            ]
        );
        for e in &t.events[..2] {
            assert!(e.send.is_none() && e.recv.is_none() && e.starts.is_empty());
        }
        let sa = &t.events[2];
        assert_eq!(
            sa.starts,
            vec![
                StartedRequest {
                    mode: MpiOp::RecvInit,
                    comm: WORLD_COMM,
                    send: None,
                    recv: Some(RecvPost {
                        source: Peer::Any,
                        tag: 5,
                        bytes: 16,
                        request: 7
                    })
                },
                StartedRequest {
                    mode: MpiOp::SsendInit,
                    comm: WORLD_COMM,
                    send: Some(SendPost {
                        dest: Peer::Rank(2),
                        tag: 5,
                        bytes: 16,
                        request: 8
                    }),
                    recv: None
                }
            ]
        );
        assert!(sa.completions.is_empty());
        assert_eq!(t.events[3].completions.len(), 2);
        assert!(t.events[4].starts.is_empty());
        for (op, code, name) in [
            (MpiOp::SendInit, 90, "MPI_Send_init"),
            (MpiOp::SsendInit, 91, "MPI_Ssend_init"),
            (MpiOp::BsendInit, 92, "MPI_Bsend_init"),
            (MpiOp::RsendInit, 93, "MPI_Rsend_init"),
            (MpiOp::RecvInit, 94, "MPI_Recv_init"),
            (MpiOp::Start, 95, "MPI_Start"),
            (MpiOp::Startall, 96, "MPI_Startall"),
            (MpiOp::RequestFree, 97, "MPI_Request_free"),
        ] {
            assert_eq!(MpiOp::from_code(code), Some(op));
            assert_eq!(op.name(), name);
            assert!(!op.is_collective());
        }
    }

    #[test]
    fn compact_records_repeat_the_site_and_mean_success() {
        let mut b = Builder::new(0, 2, f::FLAG_FINALIZED);
        let mut c = Chunk::new(5, 0, 100);
        c.enter(MpiOp::Iprobe, 100, 0x4000, &[WORLD_COMM, pt(1, 3)]);
        c.exit(MpiOp::Iprobe, 110, 0, &[]);
        // same site: compact ENTER (no site word), compact EXIT (no rc)
        let dt = c.dt(120);
        c.rec(
            f::REC_ENTER,
            MpiOp::Iprobe as u8 | f::SMALL_COMPACT,
            dt,
            &[WORLD_COMM, pt(1, 3)],
        );
        let dt = c.dt(130);
        c.rec(f::REC_EXIT, MpiOp::Iprobe as u8 | f::SMALL_COMPACT, dt, &[]);
        // compact EXIT of an Isend carries only the request id
        c.enter(MpiOp::Isend, 140, 0x5000, &[WORLD_COMM, pt(1, 4), 8]);
        let dt = c.dt(150);
        c.rec(f::REC_EXIT, MpiOp::Isend as u8 | f::SMALL_COMPACT, dt, &[7]);
        // a failing call keeps its return code
        c.enter(
            MpiOp::Barrier,
            160,
            0x6000,
            &[WORLD_COMM, u64::from(u32::MAX), 0, 0],
        );
        c.exit(MpiOp::Barrier, 170, 13, &[]);
        b.add(c);
        // a compact ENTER first in its chunk has no site to repeat
        let mut c = Chunk::new(6, 0, 200);
        let dt = c.dt(200);
        c.rec(
            f::REC_ENTER,
            MpiOp::Barrier as u8 | f::SMALL_COMPACT,
            dt,
            &[WORLD_COMM, 0, 0, 0],
        );
        let dt = c.dt(210);
        c.rec(
            f::REC_EXIT,
            MpiOp::Barrier as u8 | f::SMALL_COMPACT,
            dt,
            &[],
        );
        b.add(c);
        let t = decode_rank_trace(Path::new("x"), &b.bytes()).unwrap();
        let v: Vec<(MpiOp, u64, u64, i32)> = t
            .events
            .iter()
            .map(|e| (e.op, e.enter_ns, e.site, e.return_code))
            .collect();
        assert_eq!(
            v,
            [
                (MpiOp::Iprobe, 100, 0x4000, 0),
                (MpiOp::Iprobe, 120, 0x4000, 0),
                (MpiOp::Isend, 140, 0x5000, 0),
                (MpiOp::Barrier, 160, 0x6000, 13),
                (MpiOp::Barrier, 200, 0, 0),
            ]
        );
        assert_eq!(t.events[2].send.unwrap().request, 7);
        assert_eq!(t.damage.len(), 1, "{:?}", t.damage);
        assert!(t.damage[0].contains("site unknown"));
    }

    #[test]
    fn call_that_never_returned_is_where_the_rank_aborted() {
        let mut b = Builder::new(2, 4, 0);
        let mut c = Chunk::new(9, 0, 1_000);
        c.enter(MpiOp::Init, 1_000, 1, &[]);
        c.exit(MpiOp::Init, 2_000, 0, &[]);
        c.enter(MpiOp::Recv, 3_000, 2, &[WORLD_COMM, pt(0, 1), 4]);
        b.add(c);
        let t = decode_rank_trace(Path::new("x"), &b.bytes()).unwrap();
        assert!(!t.finalized);
        assert_eq!(t.aborted_in, Some(1));
        let e = &t.events[1];
        assert_eq!((e.op, e.enter_ns, e.exit_ns), (MpiOp::Recv, 3_000, 3_000));
        assert!(e.completions.is_empty());
    }

    #[test]
    fn rank_that_ended_outside_mpi_is_described() {
        let mut b = Builder::new(2, 4, 0);
        let mut c = Chunk::new(9, 0, 1_000);
        c.enter(MpiOp::Init, 1_000, 1, &[]);
        c.exit(MpiOp::Init, 2_000, 0, &[]);
        b.add(c);
        let t = decode_rank_trace(Path::new("x"), &b.bytes()).unwrap();
        assert_eq!(t.aborted_in, None);
        assert!(t.damage.iter().any(|d| d.contains("outside any MPI call")));
    }

    #[test]
    fn events_of_two_threads_merge_by_enter_time_and_chunks_chain() {
        let mut b = Builder::new(0, 1, f::FLAG_FINALIZED);
        let mut a0 = Chunk::new(10, 0, 100);
        a0.enter(
            MpiOp::Barrier,
            100,
            1,
            &[WORLD_COMM, u64::from(u32::MAX), 0, 0],
        );
        let mut a1 = Chunk::new(10, 1, 400);
        a1.exit(MpiOp::Barrier, 450, 0, &[]);
        let mut t2 = Chunk::new(11, 0, 200);
        // a TIME record sets an absolute time
        t2.rec(f::REC_TIME, 0, 0, &[300]);
        t2.last = 300;
        t2.enter(MpiOp::Iprobe, 300, 2, &[WORLD_COMM, pt(0, 0)]);
        t2.exit(MpiOp::Iprobe, 310, 0, &[]);
        b.add(a0);
        b.add(t2);
        b.add(a1);
        let t = decode_rank_trace(Path::new("x"), &b.bytes()).unwrap();
        assert!(t.damage.is_empty(), "{:?}", t.damage);
        let v: Vec<(MpiOp, u32, u64, u64)> = t
            .events
            .iter()
            .map(|e| (e.op, e.tid, e.enter_ns, e.exit_ns))
            .collect();
        assert_eq!(
            v,
            [
                (MpiOp::Barrier, 10, 100, 450),
                (MpiOp::Iprobe, 11, 300, 310)
            ]
        );
    }

    #[test]
    fn clock_offsets_are_interpolated_linearly() {
        // offset +1000 ns at local 0, +3000 ns at local 10_000: a call at
        // local 5_000 moves by 2000 ns.
        let mut b = Builder::new(1, 2, f::FLAG_FINALIZED);
        b.offsets((1_000, 0), Some((3_000, 10_000)));
        let mut c = Chunk::new(3, 0, 5_000);
        c.enter(
            MpiOp::Barrier,
            5_000,
            1,
            &[WORLD_COMM, u64::from(u32::MAX), 0, 0],
        );
        c.exit(MpiOp::Barrier, 10_000, 0, &[]);
        b.add(c);
        let t = decode_rank_trace(Path::new("x"), &b.bytes()).unwrap();
        assert_eq!(t.clock_offset_ns, (1_000, Some(3_000)));
        assert_eq!(t.events[0].enter_ns, 7_000);
        assert_eq!(t.events[0].exit_ns, 13_000);
        // only the init offset: constant
        let mut b = Builder::new(1, 2, f::FLAG_FINALIZED);
        b.offsets((-500, 0), None);
        let mut c = Chunk::new(3, 0, 5_000);
        c.enter(
            MpiOp::Barrier,
            5_000,
            1,
            &[WORLD_COMM, u64::from(u32::MAX), 0, 0],
        );
        c.exit(MpiOp::Barrier, 6_000, 0, &[]);
        b.add(c);
        let t = decode_rank_trace(Path::new("x"), &b.bytes()).unwrap();
        assert_eq!((t.events[0].enter_ns, t.events[0].exit_ns), (4_500, 5_500));
    }

    #[test]
    fn bad_headers_are_errors_naming_the_file() {
        let good = sample(f::FLAG_FINALIZED).bytes();
        let cases: Vec<(Vec<u8>, &str)> = vec![
            (good[..100].to_vec(), "shorter than"),
            (
                {
                    let mut b = good.clone();
                    b[..8].fill(0);
                    b
                },
                "never finished",
            ),
            (
                {
                    let mut b = good.clone();
                    b[0] = b'X';
                    b
                },
                "bad magic",
            ),
            (
                {
                    let mut b = good.clone();
                    b[h::VERSION] = 9;
                    b
                },
                "version 9",
            ),
            (
                {
                    let mut b = good.clone();
                    b[h::WORLD_RANK] = 7;
                    b
                },
                "not in MPI_COMM_WORLD",
            ),
        ];
        for (bytes, want) in cases {
            let e = decode_rank_trace(Path::new("/r/mpi/rank-1.cmpi"), &bytes).unwrap_err();
            let msg = e.to_string();
            assert!(
                msg.contains("/r/mpi/rank-1.cmpi") && msg.contains(want),
                "{msg}"
            );
        }
    }

    #[test]
    fn truncated_traces_never_panic_and_keep_what_is_complete() {
        let good = sample(f::FLAG_FINALIZED).bytes();
        let full = decode_rank_trace(Path::new("x"), &good).unwrap();
        let mut last_events = 0;
        for len in (0..=good.len()).step_by(8) {
            match decode_rank_trace(Path::new("x"), &good[..len]) {
                Ok(t) => {
                    // a prefix never invents events
                    assert!(t.events.len() <= full.events.len());
                    for (a, b) in t.events.iter().zip(&full.events) {
                        assert_eq!(a.op, b.op);
                    }
                    if len < good.len() {
                        assert!(!t.damage.is_empty(), "truncation at {len} not described");
                    }
                    last_events = t.events.len();
                }
                Err(e) => assert!(len < f::HEADER_SIZE, "{len}: {e}"),
            }
        }
        assert_eq!(last_events, full.events.len());
    }

    #[test]
    fn a_record_cut_off_by_a_crash_is_absent() {
        // the head word of the last record (Finalize's EXIT) zeroed: the
        // writer stores it last, so this is what a death just before it
        // leaves behind
        let b = sample(0);
        let mut bytes = b.bytes();
        let words: Vec<u64> = bytes[f::HEADER_SIZE + f::CHUNK_HEADER_SIZE..]
            .chunks_exact(8)
            .map(|w| u64::from_le_bytes(w.try_into().unwrap()))
            .collect();
        let last_head = words
            .iter()
            .enumerate()
            .filter(|(_, w)| Head::decode(**w).tag == f::REC_EXIT)
            .map(|(i, _)| i)
            .next_back()
            .unwrap();
        let off = f::HEADER_SIZE + f::CHUNK_HEADER_SIZE + last_head * 8;
        bytes[off..off + 8].fill(0);
        let t = decode_rank_trace(Path::new("x"), &bytes).unwrap();
        let last = t.events.last().unwrap();
        assert_eq!(last.op, MpiOp::Finalize);
        assert_eq!(t.aborted_in, Some(t.events.len() - 1));
    }

    #[test]
    fn corrupted_traces_never_panic() {
        let good = sample(f::FLAG_FINALIZED).bytes();
        // deterministic xorshift
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for _ in 0..3000 {
            let mut b = good.clone();
            for _ in 0..(1 + next() % 8) {
                // mostly the records, sometimes the header
                let pos = if next() % 4 == 0 {
                    (next() % f::HEADER_SIZE as u64) as usize
                } else {
                    f::HEADER_SIZE + (next() % (b.len() - f::HEADER_SIZE) as u64) as usize
                };
                b[pos] = next() as u8;
            }
            let _ = decode_rank_trace(Path::new("x"), &b);
        }
    }

    #[test]
    fn recording_lists_missing_ranks_and_unreadable_files() {
        let dir = tempfile::tempdir().unwrap();
        assert!(read_mpi_recording(dir.path()).unwrap().is_none());
        let mpi = dir.path().join("mpi");
        std::fs::create_dir(&mpi).unwrap();
        let empty = read_mpi_recording(dir.path()).unwrap().unwrap();
        assert!(empty.ranks.is_empty());
        assert!(empty.problems[0].contains("no readable rank trace"));

        let mut r1 = sample(f::FLAG_FINALIZED);
        std::fs::write(mpi.join("rank-1.cmpi"), r1.bytes()).unwrap();
        r1 = Builder::new(3, 4, f::FLAG_FINALIZED);
        std::fs::write(mpi.join("rank-3.cmpi"), r1.bytes()).unwrap();
        std::fs::write(mpi.join("rank-2.cmpi"), b"garbage").unwrap();
        std::fs::write(mpi.join("notes.txt"), b"ignored").unwrap();
        let rec = read_mpi_recording(dir.path()).unwrap().unwrap();
        assert_eq!(rec.world_size, 4);
        assert_eq!(rec.ranks.iter().map(|r| r.rank).collect::<Vec<_>>(), [1, 3]);
        assert_eq!(rec.missing_ranks, [0, 2]);
        assert_eq!(rec.problems.len(), 1, "{:?}", rec.problems);
        assert!(rec.problems[0].contains("rank-2.cmpi"));
    }

    #[test]
    fn file_names() {
        assert_eq!(rank_of_file_name("rank-12.cmpi"), Some(12));
        assert_eq!(rank_of_file_name("rank-.cmpi"), None);
        assert_eq!(rank_of_file_name("rank-1.2.cmpi"), None);
        assert_eq!(rank_of_file_name("rank-1.cmpi.tmp"), None);
    }
}
