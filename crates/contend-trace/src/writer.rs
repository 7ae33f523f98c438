//! An in-memory writer of lock traces, for tests and tools.
//!
//! Produces byte-for-byte the layout the C collector writes (narrow records
//! with table indices, TIME records when `dt` overflows, chunk headers with
//! calibration points), so hand-built traces exercise the same reader path
//! as recorded ones. It is not used on the recording path.

use std::collections::HashMap;

use crate::format::{self, header as h};
use crate::reader::{CostSamples, Counted, FutexOp, OmpOp, RawOp, NO_STACK};

/// In-situ cost samples for a built trace ([`format::FLAG_SAMPLED_COST`]).
#[derive(Debug, Clone, Default)]
pub struct BuiltSamples {
    /// The header's `cost_window_record_ps`.
    pub window_record_ps: u32,
    /// The header's `cost_window_count_ps`.
    pub window_count_ps: u32,
    /// Per thread id: the record samples (written into its first record
    /// chunk) and the count samples (into its COUNTS chunk, if it has one).
    pub threads: Vec<(u32, CostSamples, CostSamples)>,
}

fn sample_word(s: CostSamples) -> u64 {
    (s.count << format::SAMPLE_SUM_BITS) | s.ticks
}

/// A STACK record for [`TraceBuilder::stacks`]: (ticks, frames).
pub type BuiltStack = (u64, Vec<u64>);

/// Builds a lock trace file in memory.
#[derive(Debug, Clone)]
pub struct TraceBuilder {
    /// Process id written to the header.
    pub pid: u32,
    /// Parent pid written to the header.
    pub ppid: u32,
    /// Clock kind; with [`format::CLOCK_MONOTONIC`] ticks are ns.
    pub clock: u16,
    /// Chunk size in bytes (power of two ≥ 4096).
    pub chunk_size: u32,
    /// Whether to set [`format::FLAG_FINISHED`].
    pub finished: bool,
    /// Executable path for the header.
    pub exe_path: String,
    /// Threads: (tid, operations in program order; their `stack` must be
    /// `NO_STACK`: stacks are written from [`TraceBuilder::stacks`]).
    pub threads: Vec<(u32, Vec<RawOp>)>,
    /// Format version to write: [`format::VERSION`], or 1 for a trace as
    /// collectors before version 2 wrote it (no cost fields, no counts).
    pub version: u32,
    /// Light mode ([`format::FLAG_LIGHT`]; version 2).
    pub light: bool,
    /// Counted uncontended acquisitions per thread id, written as one
    /// COUNTS chunk per thread (version 2).
    pub counted: Vec<(u32, Vec<Counted>)>,
    /// Header cost fields (version 2): collector CPU ns, ps per record, ps
    /// per counted pair.
    pub cost: (u64, u32, u32),
    /// Header cost fields of the multi-threaded paths (version 2): ps per
    /// record, ps per counted pair ([`h::COST_RECORD_MT_PS`],
    /// [`h::COST_COUNT_MT_PS`]; 0: not written).
    pub cost_mt: (u32, u32),
    /// Thread ids whose chunks (record and COUNTS) are flagged
    /// [`format::CHUNK_SINGLE_THREADED`] (version 2).
    pub single_threaded: Vec<u32>,
    /// In-situ cost samples (version 2; `None`: the flag is not set).
    pub sampled: Option<BuiltSamples>,
    /// OpenMP records per thread id (version 2), written in the thread's
    /// chunks among its operations by time (an operation first at equal
    /// ticks), in the narrow form.
    pub omp: Vec<(u32, Vec<OmpOp>)>,
    /// Futex records per thread id (version 2), written like the OpenMP
    /// records (their stacks are not written).
    pub futex: Vec<(u32, Vec<FutexOp>)>,
    /// STACK records per thread id: (ticks, frames), each written before
    /// the thread's records at or after its ticks (a STACK record carries
    /// no time; the reader gives it to the operation that follows).
    pub stacks: Vec<(u32, Vec<BuiltStack>)>,
    /// Slot chunks (version 3, [`format::CHUNK_SLOTS`]): each thread's
    /// first record chunk and each COUNTS chunk whose contents fit in a
    /// slot of [`format::SLOT_SIZE`] bytes is written as a slot of a slot
    /// chunk instead, as the collector writes a thread's first chunks once
    /// its process has a second thread (`chunk_size` must hold a header
    /// and a slot).
    pub slot_chunks: bool,
}

/// One record of a thread as it is written: its tag, the object and site
/// its head word indexes, and the extension word of an OpenMP or futex
/// record.
struct Record {
    ticks: u64,
    object: u64,
    site: u64,
    tag: u8,
    ext: Option<u64>,
    /// A STACK record's frames.
    frames: Vec<u64>,
}

impl Record {
    fn op(op: &RawOp) -> Record {
        assert_eq!(op.stack, NO_STACK, "the builder writes no stacks");
        Record {
            ticks: op.ticks,
            object: op.object,
            site: op.site,
            tag: format::op_tag(op.primitive, op.phase),
            ext: None,
            frames: Vec::new(),
        }
    }

    fn stack(ticks: u64, frames: &[u64]) -> Record {
        Record {
            ticks,
            object: 0,
            site: 0,
            tag: format::TAG_STACK,
            ext: None,
            frames: frames.to_vec(),
        }
    }

    fn omp(op: &OmpOp) -> Record {
        Record {
            ticks: op.ticks,
            object: op.object,
            site: op.site,
            tag: format::TAG_OMP,
            ext: Some(u64::from(op.event) | u64::from(op.kind) << 8 | u64::from(op.value) << 32),
            frames: Vec::new(),
        }
    }

    fn futex(op: &FutexOp) -> Record {
        assert_eq!(op.stack, NO_STACK, "the builder writes no stacks");
        let private = if op.private {
            format::futex::PRIVATE
        } else {
            0
        };
        Record {
            ticks: op.ticks,
            object: op.word,
            site: op.site,
            tag: format::TAG_FUTEX,
            ext: Some(
                op.phase as u64
                    | u64::from(op.cmd) << format::futex::CMD_SHIFT
                    | private
                    | u64::from(op.value as u32) << format::futex::VALUE_SHIFT,
            ),
            frames: Vec::new(),
        }
    }
}

impl Default for TraceBuilder {
    fn default() -> Self {
        TraceBuilder {
            pid: 1000,
            ppid: 1,
            clock: format::CLOCK_MONOTONIC,
            chunk_size: 4096,
            finished: true,
            exe_path: "/test/program".into(),
            threads: Vec::new(),
            version: format::VERSION,
            light: false,
            counted: Vec::new(),
            cost: (0, 0, 0),
            cost_mt: (0, 0),
            single_threaded: Vec::new(),
            sampled: None,
            omp: Vec::new(),
            futex: Vec::new(),
            stacks: Vec::new(),
            slot_chunks: false,
        }
    }
}

const SLOTS: usize = 65536;

impl TraceBuilder {
    /// [`format::CHUNK_SINGLE_THREADED`] for thread `tid`'s chunks, or 0.
    fn single_threaded_flag(&self, tid: u32) -> u32 {
        if self.version >= 2 && self.single_threaded.contains(&tid) {
            format::CHUNK_SINGLE_THREADED
        } else {
            0
        }
    }

    /// The `cost_samples` words of thread `tid`: (record chunk, COUNTS
    /// chunk); zero without samples.
    fn samples_of(&self, tid: u32) -> (u64, u64) {
        self.sampled
            .as_ref()
            .filter(|_| self.version >= 2)
            .and_then(|s| s.threads.iter().find(|t| t.0 == tid))
            .map_or((0, 0), |t| (sample_word(t.1), sample_word(t.2)))
    }

    /// The chunk being written with room for `need` more bytes: `chunk`,
    /// or, when it has not that room (or there is none yet), a fresh one
    /// of thread `tid` started at `ticks`, the full one moved to `chunks`.
    /// (bytes, write position, time base of the next record).
    fn room<'c>(
        &self,
        chunk: &'c mut Option<(Vec<u8>, usize, u64)>,
        chunks: &mut Vec<Vec<u8>>,
        seq: &mut u32,
        tid: u32,
        need: usize,
        ticks: u64,
    ) -> &'c mut (Vec<u8>, usize, u64) {
        let cs = self.chunk_size as usize;
        if chunk.as_ref().is_none_or(|(_, at, _)| at + need > cs) {
            if let Some((c, _, _)) = chunk.take() {
                chunks.push(c);
            }
            *chunk = Some((
                self.chunk_start(tid, *seq, ticks),
                format::CHUNK_HEADER_SIZE,
                ticks,
            ));
            *seq += 1;
        }
        chunk.as_mut().expect("a chunk was just made")
    }

    /// A fresh record chunk of thread `tid`: its header (sequence `seq`,
    /// time base `ticks`), no records.
    fn chunk_start(&self, tid: u32, seq: u32, ticks: u64) -> Vec<u8> {
        let mut c = vec![0u8; self.chunk_size as usize];
        put32(&mut c, 0, format::CHUNK_MAGIC);
        put32(&mut c, 4, tid);
        put32(&mut c, 8, seq);
        put32(&mut c, 12, self.single_threaded_flag(tid));
        put64(&mut c, 16, ticks);
        if seq == 0 {
            put64(&mut c, format::chunk::COST_SAMPLES, self.samples_of(tid).0);
        }
        if self.clock == format::CLOCK_MONOTONIC {
            put64(&mut c, 24, ticks);
        }
        c
    }

    /// `chunks` with every thread's first record chunk and every COUNTS
    /// chunk whose bytes past [`format::SLOT_SIZE`] are all zero moved into
    /// slot chunks, in order ([`TraceBuilder::slot_chunks`]).
    fn slotted(&self, chunks: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
        let cs = self.chunk_size as usize;
        let size = format::SLOT_SIZE as usize;
        let header = format::CHUNK_HEADER_SIZE;
        assert!(cs >= header + size, "a chunk too small for a slot");
        let per_chunk = (cs - header) / size;
        let fits = |c: &[u8]| {
            let flags = u32::from_le_bytes(c[12..16].try_into().expect("4 bytes"));
            let seq = u32::from_le_bytes(c[8..12].try_into().expect("4 bytes"));
            (flags & format::CHUNK_COUNTS != 0 || seq == 0) && c[size..].iter().all(|&b| b == 0)
        };
        let (slotted, mut rest): (Vec<_>, Vec<_>) = chunks.into_iter().partition(|c| fits(c));
        for group in slotted.chunks(per_chunk) {
            let mut c = vec![0u8; cs];
            put32(&mut c, 0, format::CHUNK_MAGIC);
            put32(&mut c, 8, format::SLOT_SIZE);
            put32(&mut c, 12, format::CHUNK_SLOTS);
            for (k, slot) in group.iter().enumerate() {
                let at = header + k * size;
                c[at..at + size].copy_from_slice(&slot[..size]);
            }
            rest.push(c);
        }
        rest
    }

    /// Serialises the trace; panics only on programmer error (more than
    /// 65536 distinct objects or sites, which a test would not build).
    pub fn to_bytes(&self) -> Vec<u8> {
        let obj_off = format::HEADER_SIZE;
        let site_off = obj_off + SLOTS * 8;
        let data_off = site_off + SLOTS * 8;
        let mut objects: HashMap<u64, u16> = HashMap::new();
        let mut sites: HashMap<u64, u16> = HashMap::new();
        let mut chunks: Vec<Vec<u8>> = Vec::new();
        let cs = self.chunk_size as usize;
        let mut tids: Vec<u32> = self.threads.iter().map(|t| t.0).collect();
        for tid in self
            .omp
            .iter()
            .map(|t| t.0)
            .chain(self.futex.iter().map(|t| t.0))
            .chain(self.stacks.iter().map(|t| t.0))
        {
            if !tids.contains(&tid) {
                tids.push(tid);
            }
        }
        for tid in &tids {
            let ops = self
                .threads
                .iter()
                .filter(|t| t.0 == *tid)
                .flat_map(|t| &t.1);
            let omp = self.omp.iter().filter(|t| t.0 == *tid).flat_map(|t| &t.1);
            let futex = self.futex.iter().filter(|t| t.0 == *tid).flat_map(|t| &t.1);
            let stacks = self
                .stacks
                .iter()
                .filter(|t| t.0 == *tid)
                .flat_map(|t| &t.1);
            let mut records: Vec<Record> = stacks
                .map(|(ticks, frames)| Record::stack(*ticks, frames))
                .chain(ops.map(Record::op))
                .chain(omp.map(Record::omp))
                .chain(futex.map(Record::futex))
                .collect();
            // stable: a STACK record before an operation before an OpenMP
            // record before a futex record at equal ticks
            records.sort_by_key(|r| r.ticks);
            let mut seq = 0u32;
            let mut chunk: Option<(Vec<u8>, usize, u64)> = None;
            for rec in &records {
                if rec.tag == format::TAG_STACK {
                    let need = 8 * (1 + rec.frames.len());
                    assert!(
                        need + format::CHUNK_HEADER_SIZE <= cs,
                        "a stack larger than a chunk"
                    );
                    let (c, at, _) =
                        self.room(&mut chunk, &mut chunks, &mut seq, *tid, need, rec.ticks);
                    put64(
                        c,
                        *at,
                        format::make_head(rec.tag, rec.frames.len() as u32, 0, 0),
                    );
                    for (k, &f) in rec.frames.iter().enumerate() {
                        put64(c, *at + 8 * (1 + k), f);
                    }
                    *at += need;
                    continue;
                }
                let next_o = objects.len() as u16;
                let oi = *objects.entry(rec.object).or_insert(next_o);
                let next_s = sites.len() as u16;
                let si = *sites.entry(rec.site).or_insert(next_s);
                let ticks = rec.ticks;
                // Worst case: TIME (2 words) + the record (the head word,
                // and the extension word of an OpenMP or futex record).
                let need = if rec.ext.is_some() { 32 } else { 24 };
                let (c, at, now) = self.room(&mut chunk, &mut chunks, &mut seq, *tid, need, ticks);
                let dt = ticks.wrapping_sub(*now);
                let dt = if ticks < *now || dt >> format::DT_BITS != 0 {
                    put64(c, *at, u64::from(format::TAG_TIME));
                    put64(c, *at + 8, ticks);
                    *at += 16;
                    0
                } else {
                    dt as u32
                };
                put64(c, *at, format::make_head(rec.tag, dt, oi, si));
                *at += 8;
                if let Some(ext) = rec.ext {
                    put64(c, *at, ext);
                    *at += 8;
                }
                *now = ticks;
            }
            if let Some((c, _, _)) = chunk {
                chunks.push(c);
            }
        }
        if self.version >= 2 {
            for (tid, entries) in &self.counted {
                let mut c = vec![0u8; cs];
                put32(&mut c, 0, format::CHUNK_MAGIC);
                put32(&mut c, 4, *tid);
                put32(
                    &mut c,
                    12,
                    format::CHUNK_COUNTS | self.single_threaded_flag(*tid),
                );
                put64(&mut c, format::chunk::COST_SAMPLES, self.samples_of(*tid).1);
                let slots = (cs - format::CHUNK_HEADER_SIZE) / format::count::SIZE;
                assert!(entries.len() <= slots, "too many count entries for a chunk");
                for (i, e) in entries.iter().enumerate() {
                    let at = format::CHUNK_HEADER_SIZE + i * format::count::SIZE;
                    put64(&mut c, at + format::count::OBJECT, e.object);
                    put64(&mut c, at + format::count::SITE, e.site);
                    put64(&mut c, at + format::count::COUNT, e.count);
                    put32(&mut c, at + format::count::PRIMITIVE, e.primitive as u32);
                }
                chunks.push(c);
            }
        }
        if self.slot_chunks {
            chunks = self.slotted(chunks);
        }
        let mut out = vec![0u8; data_off + chunks.len() * cs];
        out[h::MAGIC..h::MAGIC + 8].copy_from_slice(format::MAGIC);
        put32(&mut out, h::VERSION, self.version);
        put32(&mut out, h::HEADER_SIZE, format::HEADER_SIZE as u32);
        put32(&mut out, h::ENDIAN_CHECK, format::ENDIAN_CHECK);
        put16(&mut out, h::POINTER_SIZE, 8);
        put16(&mut out, h::CLOCK, self.clock);
        put32(&mut out, h::CHUNK_SIZE, self.chunk_size);
        put32(&mut out, h::CHUNKS_CLAIMED, chunks.len() as u32);
        put32(&mut out, h::PID, self.pid);
        put32(&mut out, h::PPID, self.ppid);
        put64(
            &mut out,
            h::FLAGS,
            if self.finished {
                format::FLAG_FINISHED
            } else {
                0
            } | if self.light && self.version >= 2 {
                format::FLAG_LIGHT
            } else {
                0
            } | if self.sampled.is_some() && self.version >= 2 {
                format::FLAG_SAMPLED_COST
            } else {
                0
            },
        );
        if let (Some(s), true) = (&self.sampled, self.version >= 2) {
            put32(&mut out, h::COST_WINDOW_RECORD_PS, s.window_record_ps);
            put32(&mut out, h::COST_WINDOW_COUNT_PS, s.window_count_ps);
        }
        if self.version >= 2 {
            put64(&mut out, h::COLLECTOR_NS, self.cost.0);
            put32(&mut out, h::COST_RECORD_PS, self.cost.1);
            put32(&mut out, h::COST_COUNT_PS, self.cost.2);
            put32(&mut out, h::COST_RECORD_MT_PS, self.cost_mt.0);
            put32(&mut out, h::COST_COUNT_MT_PS, self.cost_mt.1);
        }
        put64(&mut out, h::OBJECT_TABLE_OFFSET, obj_off as u64);
        put32(&mut out, h::OBJECT_TABLE_SLOTS, SLOTS as u32);
        put32(&mut out, h::SITE_TABLE_SLOTS, SLOTS as u32);
        put64(&mut out, h::SITE_TABLE_OFFSET, site_off as u64);
        put64(&mut out, h::DATA_OFFSET, data_off as u64);
        let path = self.exe_path.as_bytes();
        let n = path.len().min(h::EXE_PATH_LEN - 1);
        out[h::EXE_PATH..h::EXE_PATH + n].copy_from_slice(&path[..n]);
        out[h::CMDLINE..h::CMDLINE + n].copy_from_slice(&path[..n]);
        for (addr, i) in objects {
            put64(&mut out, obj_off + i as usize * 8, addr);
        }
        for (addr, i) in sites {
            put64(&mut out, site_off + i as usize * 8, addr);
        }
        for (k, c) in chunks.iter().enumerate() {
            out[data_off + k * cs..data_off + (k + 1) * cs].copy_from_slice(c);
        }
        out
    }
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
