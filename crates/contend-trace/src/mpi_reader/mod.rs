//! Reader of MPI traces: decodes `<recording>/mpi/rank-<r>.cmpi` (format:
//! [`crate::mpi_format`], `docs/trace-format.md` "MPI traces") into the
//! in-memory model of [`crate::mpi`].
//!
//! What the reader does beyond decoding:
//! - converts the times of a TSC trace (version 2, clock 1) to the rank's
//!   `CLOCK_MONOTONIC` ns with the least-squares line through its
//!   calibration points ([`crate::clock::ClockFit`], as for lock traces):
//!   the header's start and end points and every chunk header's; version
//!   1 traces and CLOCK_MONOTONIC ones are in ns already;
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

use crate::clock::{CalibrationPoint, ClockFit};
use crate::mpi::{MpiComm, MpiEvent, MpiEvents, MpiRankTrace, MpiRecording};
use crate::mpi_format::{self as f, header as h};
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
    let traces = read_in_parallel(&files);
    for ((name_rank, path), read) in files.into_iter().zip(traces) {
        match read {
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

/// [`read_rank_trace`] of every file, in the order given, the files shared
/// out among up to one thread per CPU. A reader holds one chunk of its
/// file at a time and reserves its rank's calls at their final size, so
/// reading ranks side by side costs no memory beyond one chunk per thread
/// (docs/benchmarks.md, "MPI traces read chunk by chunk, ranks side by
/// side").
fn read_in_parallel(files: &[(u32, PathBuf)]) -> Vec<Result<MpiRankTrace, TraceError>> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let workers = std::thread::available_parallelism()
        .map_or(1, usize::from)
        .min(files.len());
    if workers <= 1 {
        return files.iter().map(|(_, p)| read_rank_trace(p)).collect();
    }
    let next = AtomicUsize::new(0);
    let mut read: Vec<(usize, Result<MpiRankTrace, TraceError>)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                s.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some((_, path)) = files.get(i) else {
                            break mine;
                        };
                        mine.push((i, read_rank_trace(path)));
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| match h.join() {
                Ok(mine) => mine,
                Err(panic) => std::panic::resume_unwind(panic),
            })
            .collect()
    });
    read.sort_by_key(|r| r.0);
    read.into_iter().map(|r| r.1).collect()
}

/// `rank-<r>.cmpi` → r.
fn rank_of_file_name(name: &str) -> Option<u32> {
    let digits = name.strip_prefix("rank-")?.strip_suffix(".cmpi")?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// Reads one rank trace file (see [`decode_rank_trace`]) piece by piece:
/// the header, then each chunk twice (once to find its thread and count
/// its calls, once to decode it in its thread's order) into one reused
/// buffer of one chunk (64 KiB by default), so reading a rank costs no
/// copy of the whole file and no mapping of it (a mapped file truncated
/// under the reader would kill it with SIGBUS).
///
/// # Errors
///
/// [`TraceError::Io`] when the file cannot be opened or its header read;
/// [`TraceError::Format`] as for [`decode_rank_trace`]. A chunk that cannot
/// be read later is damage ([`MpiRankTrace::damage`]), not an error.
pub fn read_rank_trace(path: &Path) -> Result<MpiRankTrace, TraceError> {
    let io = |source| TraceError::Io {
        path: path.to_path_buf(),
        source,
    };
    let file = std::fs::File::open(path).map_err(io)?;
    let len = file.metadata().map_err(io)?.len();
    let src = FileBytes {
        file,
        len: usize::try_from(len).unwrap_or(usize::MAX),
    };
    decode(path, &src)
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
    decode(path, bytes)
}

/// Where a rank trace's bytes come from: memory ([`decode_rank_trace`]) or
/// a file read with `pread` ([`read_rank_trace`]).
trait TraceBytes {
    /// Length in bytes.
    fn len(&self) -> usize;
    /// Bytes `off..off + want`, fewer at the end of the data (none past
    /// it); borrowed from the source or read into `buf`.
    fn read<'a>(
        &'a self,
        off: usize,
        want: usize,
        buf: &'a mut Vec<u8>,
    ) -> std::io::Result<&'a [u8]>;
}

impl TraceBytes for [u8] {
    fn len(&self) -> usize {
        <[u8]>::len(self)
    }

    fn read<'a>(
        &'a self,
        off: usize,
        want: usize,
        _: &'a mut Vec<u8>,
    ) -> std::io::Result<&'a [u8]> {
        let start = off.min(self.len());
        Ok(&self[start..off.saturating_add(want).min(self.len())])
    }
}

/// A trace file read with positioned reads; `len` as found at open.
struct FileBytes {
    file: std::fs::File,
    len: usize,
}

impl TraceBytes for FileBytes {
    fn len(&self) -> usize {
        self.len
    }

    fn read<'a>(
        &'a self,
        off: usize,
        want: usize,
        buf: &'a mut Vec<u8>,
    ) -> std::io::Result<&'a [u8]> {
        use std::os::unix::fs::FileExt;
        buf.resize(want, 0);
        let mut got = 0;
        while got < want {
            match self.file.read_at(&mut buf[got..], (off + got) as u64) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(&buf[..got])
    }
}

/// [`decode_rank_trace`] over any [`TraceBytes`].
fn decode<B: TraceBytes + ?Sized>(path: &Path, src: &B) -> Result<MpiRankTrace, TraceError> {
    let fail = |p: String| TraceError::format(path, p);
    let mut buf = Vec::new();
    let io = |source| TraceError::Io {
        path: path.to_path_buf(),
        source,
    };
    // fewer bytes than asked only at the end of the data: a shorter trace
    let header = src.read(0, f::HEADER_SIZE, &mut buf).map_err(io)?.to_vec();
    if header.len() < f::HEADER_SIZE {
        return Err(fail(format!(
            "not an MPI trace: {} bytes, shorter than the {}-byte header",
            header.len(),
            f::HEADER_SIZE
        )));
    }
    let bytes = &header[..];
    if &bytes[..8] != f::MAGIC {
        if bytes[..8].iter().all(|&b| b == 0) {
            return Err(fail(
                "the MPI trace header was never finished (the rank died while creating it)".into(),
            ));
        }
        return Err(fail("not an MPI trace (bad magic)".into()));
    }
    let version = u32_at(bytes, h::VERSION);
    if version != f::VERSION && version != f::VERSION_1 {
        return Err(fail(format!(
            "MPI trace version {version}; this contend reads versions {} and {}",
            f::VERSION_1,
            f::VERSION
        )));
    }
    // version 1 has no clock field (0 there): CLOCK_MONOTONIC ns
    let clock_kind = if version == f::VERSION_1 {
        f::CLOCK_MONOTONIC
    } else {
        u16_at(bytes, h::CLOCK)
    };
    let tsc = match clock_kind {
        0 | f::CLOCK_MONOTONIC => false,
        f::CLOCK_TSC => true,
        k => return Err(fail(format!("unknown trace clock {k}"))),
    };
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
    trace.clock_offset_rtt_ns = (
        u64_at(bytes, h::OFFSET_INIT_RTT_NS),
        (flags & f::FLAG_FINAL_OFFSET != 0).then(|| u64_at(bytes, h::OFFSET_FINAL_RTT_NS)),
    );
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
    let present = src.len().saturating_sub(data_offset).div_ceil(chunk_size);
    if claimed > present {
        trace.damage.push(format!(
            "the file ends after {present} of {claimed} chunks (truncated)"
        ));
    }
    // Per thread: (sequence, base time on the trace clock, chunk index).
    let mut threads: BTreeMap<u32, Vec<(u32, u64, usize)>> = BTreeMap::new();
    let mut points = vec![CalibrationPoint {
        ticks: u64_at(bytes, h::START_TICKS),
        monotonic_ns: u64_at(bytes, h::START_MONOTONIC_NS),
    }];
    if flags & f::FLAG_END_CLOCK != 0 {
        points.push(CalibrationPoint {
            ticks: u64_at(bytes, h::END_TICKS),
            monotonic_ns: u64_at(bytes, h::END_MONOTONIC_NS),
        });
    }
    let mut garbage_chunks = 0usize;
    // ENTER records of all chunks: the rank's calls, reserved once
    let mut enters = 0usize;
    let chunk_at = |i: usize| data_offset + i * chunk_size;
    for i in 0..claimed.min(present) {
        let c = match src.read(chunk_at(i), chunk_size, &mut buf) {
            Ok(c) => c,
            Err(e) => {
                trace.damage.push(format!(
                    "chunk {i} could not be read ({e}); the chunks from it on are left out"
                ));
                break;
            }
        };
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
        let base = u64_at(c, f::chunk::BASE_TICKS);
        points.push(CalibrationPoint {
            ticks: base,
            monotonic_ns: u64_at(c, f::chunk::MONOTONIC_NS),
        });
        enters += ThreadDecoder::count_enters(&c[f::CHUNK_HEADER_SIZE..]);
        threads.entry(tid).or_default().push((seq, base, i));
    }
    if garbage_chunks > 0 {
        trace.damage.push(format!(
            "{garbage_chunks} chunk(s) with a bad chunk header were skipped"
        ));
    }

    // the trace clock's conversion to CLOCK_MONOTONIC ns (TSC traces)
    let fit = if tsc {
        let fit = ClockFit::fit(&points, u64_at(bytes, h::TICKS_PER_SECOND)).ok_or_else(|| {
            fail("a TSC trace without a usable clock calibration (no calibration point, or one and no TSC frequency)".into())
        })?;
        Some(fit)
    } else {
        None
    };

    let mut events = MpiEvents::with_capacity(enters);
    let mut open_calls: Vec<MpiEvent> = Vec::new();
    let mut comms: BTreeMap<u64, Vec<Option<u32>>> = BTreeMap::new();
    for (tid, mut chunks) in threads {
        chunks.sort_by_key(|c| c.0);
        let mut expected = 0u32;
        let mut dec = ThreadDecoder::new(tid, fit);
        for (seq, base, i) in chunks {
            if seq != expected {
                trace.damage.push(format!(
                    "thread {tid}: chunk {expected} of its trace is missing (next is {seq})"
                ));
            }
            expected = seq.wrapping_add(1);
            let words = match src.read(chunk_at(i), chunk_size, &mut buf) {
                Ok(c) if c.len() >= f::CHUNK_HEADER_SIZE => &c[f::CHUNK_HEADER_SIZE..],
                Ok(_) => {
                    trace.damage.push(format!(
                        "chunk {i} of thread {tid} was shorter when read again (the file shrank)"
                    ));
                    continue;
                }
                Err(e) => {
                    trace.damage.push(format!(
                        "chunk {i} of thread {tid} could not be read again ({e})"
                    ));
                    continue;
                }
            };
            dec.chunk(base, words, &mut events, &mut comms, &mut trace.damage);
        }
        if let Some(ev) = dec.open.take() {
            open_calls.push(*ev);
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
    // One thread's calls are in order already; only a rank with several
    // calling threads needs the (stable) sort, and its scratch space.
    events.sort_by_enter();
    events.shrink_to_fit();
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
    events.map_times(|t| clock.apply(t));
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

mod records;

use records::{u32_at, ClockCorrection, ThreadDecoder};
#[cfg(test)]
mod tests;

fn u16_at(b: &[u8], off: usize) -> u16 {
    b.get(off..off + 2)
        .map(|s| u16::from_le_bytes([s[0], s[1]]))
        .unwrap_or(0)
}

pub(super) fn u64_at(b: &[u8], off: usize) -> u64 {
    b.get(off..off + 8)
        .and_then(|s| s.try_into().ok())
        .map(u64::from_le_bytes)
        .unwrap_or(0)
}

pub(super) fn i64_at(b: &[u8], off: usize) -> i64 {
    u64_at(b, off) as i64
}

fn c_string(b: &[u8]) -> String {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    String::from_utf8_lossy(&b[..end]).into_owned()
}
