//! Reading lock traces from files with positioned reads: sparse files
//! whose holes read as zeros, files cut short after they were opened, and
//! files that cannot be read at all. (A recording on a tmpfs that filled up,
//! where a mapping died by SIGBUS, is the end-to-end test
//! `e2e_damaged_traces.rs` of contend-cli.)

use std::io::{Seek, SeekFrom, Write};
use std::path::Path;

use contend_trace::format::header as h;
use contend_trace::format::omp as ev;
use contend_trace::{
    Damage, FutexOp, LockTrace, OmpOp, Phase, Primitive, RawOp, TraceBuilder, TraceError,
};

/// Two threads, several 4 KiB chunks each.
fn trace() -> TraceBuilder {
    let mut b = TraceBuilder::default();
    for tid in [31u32, 32] {
        let ops = (0..3000u64)
            .map(|i| RawOp {
                ticks: 1_000 + i * 50 + u64::from(tid),
                object: 0x7000 + u64::from(tid) * 64,
                site: 0x40_2000 + (i % 3) * 4,
                primitive: Primitive::Mutex,
                phase: if i % 2 == 0 {
                    Phase::Immediate
                } else {
                    Phase::Release
                },
                stack: contend_trace::NO_STACK,
            })
            .collect();
        b.threads.push((tid, ops));
    }
    b
}

/// Cuts the file at `path` to `len` bytes (while a reader may hold it open,
/// as a full disk, a user or another program might).
fn cut_short(path: &Path, len: u64) {
    std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .unwrap()
        .set_len(len)
        .unwrap();
}

fn all_ops(t: &LockTrace) -> Vec<Vec<RawOp>> {
    t.threads
        .iter()
        .map(|th| {
            let mut v = Vec::new();
            t.for_each_op(th, |op, _, _| v.push(*op));
            let listed: Vec<RawOp> = t.ops(th).collect();
            assert_eq!(v, listed, "for_each_op and ops() agree");
            v
        })
        .collect()
}

#[test]
fn open_reads_the_same_as_decode() {
    let bytes = trace().to_bytes();
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("1000.ctrace");
    std::fs::write(&path, &bytes).unwrap();
    let from_file = LockTrace::open(&path).unwrap();
    let in_memory = LockTrace::decode(&path, &bytes).unwrap();
    assert!(from_file.damage.is_empty(), "{:?}", from_file.damage);
    assert_eq!(from_file.op_count(), 6000);
    assert_eq!(all_ops(&from_file), all_ops(&in_memory));
    // Clones share the open file.
    let clone = from_file.clone();
    drop(from_file);
    assert_eq!(all_ops(&clone), all_ops(&in_memory));
}

#[test]
fn holes_of_a_sparse_file_read_as_unstarted_chunks() {
    let bytes = trace().to_bytes();
    let data = u64::from_le_bytes(bytes[h::DATA_OFFSET..][..8].try_into().unwrap()) as usize;
    let chunk = 4096;
    let chunks = (bytes.len() - data) / chunk;
    assert!(chunks >= 6);
    // Write the header, the tables and every other chunk; the chunks in
    // between and the end of the file stay holes (as the collector leaves
    // them when the file system is full), with two more chunks claimed.
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("1000.ctrace");
    let mut f = std::fs::File::create(&path).unwrap();
    let mut head = bytes[..data].to_vec();
    let claimed = (chunks + 2) as u32;
    head[h::CHUNKS_CLAIMED..h::CHUNKS_CLAIMED + 4].copy_from_slice(&claimed.to_le_bytes());
    f.write_all(&head).unwrap();
    for k in (0..chunks).step_by(2) {
        f.seek(SeekFrom::Start((data + k * chunk) as u64)).unwrap();
        f.write_all(&bytes[data + k * chunk..data + (k + 1) * chunk])
            .unwrap();
    }
    f.set_len((data + (chunks + 1) * chunk) as u64).unwrap();
    drop(f);

    let t = LockTrace::open(&path).unwrap();
    let holes = chunks / 2 + 1;
    assert!(
        t.damage.contains(&Damage::UnstartedChunks {
            count: holes as u32
        }),
        "{:?}",
        t.damage
    );
    assert!(
        t.damage.contains(&Damage::FileTruncated { lost_chunks: 1 }),
        "{:?}",
        t.damage
    );
    let text: Vec<String> = t.damage.iter().map(|d| d.to_string()).collect();
    assert!(
        text.iter().any(|d| d.contains("full file system")),
        "{text:?}"
    );
    let ops = all_ops(&t);
    assert_eq!(ops.iter().map(Vec::len).sum::<usize>(), t.op_count());
    assert!(t.op_count() > 0 && t.op_count() < 6000);
}

#[test]
fn a_file_cut_short_after_it_was_opened_never_panics() {
    let bytes = trace().to_bytes();
    let data = u64::from_le_bytes(bytes[h::DATA_OFFSET..][..8].try_into().unwrap());
    let full = LockTrace::decode(Path::new("t.ctrace"), &bytes).unwrap();
    let expected = all_ops(&full);
    let tmp = tempfile::tempdir().unwrap();
    for cut in [
        0,
        100,
        4096,
        data,
        data + 10,
        data + 4096 + 64 + 20,
        bytes.len() as u64 - 4096 - 7,
    ] {
        let path = tmp.path().join(format!("{cut}.ctrace"));
        std::fs::write(&path, &bytes).unwrap();
        let t = LockTrace::open(&path).unwrap();
        assert_eq!(t.op_count(), 6000);
        // Cut the file while it is open (as a full disk, a user or another
        // program might), then decode: each thread's operations are a
        // prefix of its chunks' operations, chunk by chunk, never a panic.
        cut_short(&path, cut);
        let got = all_ops(&t);
        for (g, e) in got.iter().zip(&expected) {
            assert!(g.len() <= e.len());
            assert!(g.iter().all(|op| e.contains(op)), "cut at {cut}");
        }
        // Opened anew, the cut is damage.
        match LockTrace::open(&path) {
            Ok(t) => assert!(
                t.damage
                    .iter()
                    .any(|d| matches!(d, Damage::FileTruncated { .. })),
                "cut at {cut}: {:?}",
                t.damage
            ),
            Err(e) => {
                assert!(cut < 4096, "cut at {cut}: {e}");
                assert!(e.to_string().contains("shorter than"), "{e}");
            }
        }
    }
}

/// The trace of [`trace`] with OpenMP records among thread 31's operations
/// (acquire, acquired, released of `critical` sections, every 50 ticks
/// from tick 1,025: between its operations) and a thread 33 with OpenMP
/// records only (barrier waits); several chunks each.
fn trace_with_omp() -> (TraceBuilder, Vec<(u32, Vec<OmpOp>)>) {
    let mut b = trace();
    let critical = |i: u64| mutex_record(i, 1_025 + i * 50, 0x40_3000 + (i % 5) * 4);
    let barrier = |i: u64| OmpOp {
        ticks: 2_000 + i * 40,
        object: 0xa000 + i / 2,
        site: 0x40_4000,
        event: if i.is_multiple_of(2) {
            ev::SYNC_WAIT_BEGIN
        } else {
            ev::SYNC_WAIT_END
        },
        kind: 2,
        value: (i % 7) as u32,
    };
    let omp = vec![
        (31u32, (0..2_500).map(critical).collect::<Vec<_>>()),
        (33u32, (0..1_200).map(barrier).collect()),
    ];
    b.omp = omp.clone();
    (b, omp)
}

/// The `i`-th record of a thread taking 4 critical sections (kind 3) in
/// turn: acquire, acquired, released, at `ticks` and `site`.
fn mutex_record(i: u64, ticks: u64, site: u64) -> OmpOp {
    OmpOp {
        ticks,
        object: 0x9000 + (i / 3 % 4) * 64,
        site,
        event: [ev::MUTEX_ACQUIRE, ev::MUTEX_ACQUIRED, ev::MUTEX_RELEASED][(i % 3) as usize],
        kind: 3,
        value: 0,
    }
}

/// Each thread's OpenMP records as `omp_ops` reads them, by tid.
fn all_omp(t: &LockTrace) -> Vec<(u32, Vec<OmpOp>)> {
    t.threads
        .iter()
        .map(|th| (th.tid, t.omp_ops(th).collect()))
        .collect()
}

/// `bytes` written to a file in a fresh directory (kept while the first
/// value lives) and opened, without damage.
fn written_and_opened(bytes: &[u8]) -> (tempfile::TempDir, std::path::PathBuf, LockTrace) {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("1000.ctrace");
    std::fs::write(&path, bytes).unwrap();
    let t = LockTrace::open(&path).unwrap();
    assert!(t.damage.is_empty(), "{:?}", t.damage);
    (tmp, path, t)
}

#[test]
fn openmp_records_are_read_again_from_the_file_in_program_order() {
    let (b, omp) = trace_with_omp();
    let bytes = b.to_bytes();
    let (_tmp, path, from_file) = written_and_opened(&bytes);
    let in_memory = LockTrace::decode(&path, &bytes).unwrap();
    // the operations are those of the trace without OpenMP records (thread
    // 33 has none)
    let plain = LockTrace::decode(&path, &trace().to_bytes()).unwrap();
    let mut ops = all_ops(&from_file);
    assert_eq!(ops.iter().filter(|o| o.is_empty()).count(), 1);
    ops.retain(|o| !o.is_empty());
    assert_eq!(ops, all_ops(&plain));
    let mut got = all_omp(&from_file);
    got.sort_by_key(|t| t.0);
    let mut want = omp.clone();
    want.push((32, Vec::new()));
    want.sort_by_key(|t| t.0);
    assert_eq!(got, want);
    assert_eq!(all_omp(&from_file), all_omp(&in_memory));
    for th in &from_file.threads {
        assert_eq!(
            th.omp_count(),
            from_file.omp_ops(th).count(),
            "tid {}",
            th.tid
        );
    }
    let chunks_31 = from_file.threads.iter().find(|t| t.tid == 31).unwrap();
    assert!(
        chunks_31.record_bytes > 3 * 4096,
        "thread 31 spans several chunks"
    );
}

/// Read ahead by a thread of their own (`omp_ops_ahead`,
/// `futex_ops_ahead`), a thread's records are those `omp_ops` and
/// `futex_ops` give, in order, from the file and from memory: thread 34's
/// 70,000 OpenMP records and thread 35's 70,000 futex records come from
/// the reader thread, in several batches; the other threads' (fewer than
/// 65,536) are read in place. A consumer that stops early gets a prefix
/// and returns (the reader thread stops at its next batch instead of
/// waiting for it); a file cut short after it was opened gives the same
/// prefix either way.
#[test]
fn records_read_ahead_are_those_read_in_place() {
    let (mut b, _) = trace_with_omp();
    let omp = |i: u64| mutex_record(i, 5_000 + i * 10, 0x40_3000);
    let futex = |i: u64| FutexOp {
        ticks: 5_001 + i * 10,
        word: 0xb000 + (i / 2 % 3) * 4,
        site: 0x40_5000,
        phase: if i.is_multiple_of(2) {
            Phase::Request
        } else {
            Phase::Acquired
        },
        cmd: 0,
        private: true,
        value: 0,
        stack: contend_trace::NO_STACK,
    };
    b.omp.push((34, (0..70_000).map(omp).collect()));
    b.futex.push((35, (0..70_000).map(futex).collect()));
    let bytes = b.to_bytes();
    let (_tmp, path, from_file) = written_and_opened(&bytes);
    let in_memory = LockTrace::decode(&path, &bytes).unwrap();
    fn ahead<T>(ops: &contend_trace::RecordsAhead<'_, T>) -> bool {
        matches!(ops, contend_trace::RecordsAhead::Ahead(_))
    }
    for t in [&from_file, &in_memory] {
        for th in &t.threads {
            let here: Vec<OmpOp> = t.omp_ops(th).collect();
            let (by_reader, got) =
                t.omp_ops_ahead(th, |ops| (ahead(&ops), ops.collect::<Vec<_>>()));
            assert_eq!(got, here, "tid {}", th.tid);
            assert_eq!(by_reader, th.tid == 34, "tid {}", th.tid);
            let first: Vec<OmpOp> = t.omp_ops_ahead(th, |ops| ops.take(3).collect());
            assert_eq!(first, here[..here.len().min(3)], "tid {}", th.tid);
            let here: Vec<FutexOp> = t.futex_ops(th).collect();
            let (by_reader, got) =
                t.futex_ops_ahead(th, |ops| (ahead(&ops), ops.collect::<Vec<_>>()));
            assert_eq!(got, here, "tid {}", th.tid);
            assert_eq!(by_reader, th.tid == 35, "tid {}", th.tid);
        }
    }
    // the file cut short while open: the same prefix either way
    cut_short(&path, bytes.len() as u64 * 3 / 4 + 20);
    for th in &from_file.threads {
        let here: Vec<OmpOp> = from_file.omp_ops(th).collect();
        let got: Vec<OmpOp> = from_file.omp_ops_ahead(th, |ops| ops.collect());
        assert_eq!(got, here, "tid {}", th.tid);
        let here: Vec<FutexOp> = from_file.futex_ops(th).collect();
        let got: Vec<FutexOp> = from_file.futex_ops_ahead(th, |ops| ops.collect());
        assert_eq!(got, here, "tid {}", th.tid);
    }
    let tid = |tid| from_file.threads.iter().find(|th| th.tid == tid).unwrap();
    let left = from_file.omp_ops(tid(34)).count() + from_file.futex_ops(tid(35)).count();
    assert!(left < 140_000, "the cut takes records of the large threads");
}

#[test]
fn openmp_records_of_a_file_cut_short_after_it_was_opened_are_a_prefix() {
    let (b, omp) = trace_with_omp();
    let bytes = b.to_bytes();
    let data = u64::from_le_bytes(bytes[h::DATA_OFFSET..][..8].try_into().unwrap());
    let tmp = tempfile::tempdir().unwrap();
    for cut in [
        0,
        data,
        data + 4096 + 64 + 20,
        bytes.len() as u64 - 4096 - 7,
    ] {
        let path = tmp.path().join(format!("omp-{cut}.ctrace"));
        std::fs::write(&path, &bytes).unwrap();
        let t = LockTrace::open(&path).unwrap();
        let counts: Vec<usize> = t.threads.iter().map(|th| th.omp_count()).collect();
        cut_short(&path, cut);
        // the builder writes each thread's chunks one after another, so
        // the cut takes the end of the last threads': each thread keeps a
        // prefix of its records (what a chunk cut in the middle still
        // holds included), never a panic
        for ((tid, got), n) in all_omp(&t).into_iter().zip(counts) {
            assert!(got.len() <= n, "cut at {cut}");
            let all = omp
                .iter()
                .find(|o| o.0 == tid)
                .map_or(&[][..], |o| &o.1[..]);
            assert_eq!(got, all[..got.len()], "cut at {cut}, tid {tid}");
        }
    }
}

/// Futex records among thread 32's operations (waits and wakes on two
/// words, every 50 ticks from tick 1,010: between its operations), several
/// chunks.
fn trace_with_futex() -> (TraceBuilder, Vec<FutexOp>) {
    let mut b = trace();
    let ops: Vec<FutexOp> = (0..2_400u64)
        .map(|i| FutexOp {
            ticks: 1_010 + i * 50,
            word: 0xb000 + (i / 4 % 2) * 4,
            site: 0x40_5000 + (i % 2) * 8,
            phase: [
                Phase::Request,
                Phase::Acquired,
                Phase::Release,
                Phase::Released,
            ][(i % 4) as usize],
            cmd: if i % 4 < 2 { 0 } else { 1 },
            private: i % 3 == 0,
            value: if i % 4 == 3 {
                (i % 5) as i32
            } else {
                -((i % 2) as i32)
            },
            stack: contend_trace::NO_STACK,
        })
        .collect();
    b.futex = vec![(32, ops.clone())];
    (b, ops)
}

#[test]
fn futex_records_are_read_again_from_the_file_in_program_order() {
    let (b, ops) = trace_with_futex();
    let bytes = b.to_bytes();
    let (_tmp, path, t) = written_and_opened(&bytes);
    let plain = LockTrace::decode(&path, &trace().to_bytes()).unwrap();
    let by_tid = |t: &LockTrace| {
        let mut v: Vec<(u32, Vec<RawOp>)> =
            t.threads.iter().map(|th| th.tid).zip(all_ops(t)).collect();
        v.sort_by_key(|x| x.0);
        v
    };
    assert_eq!(by_tid(&t), by_tid(&plain));
    let th = t.threads.iter().find(|th| th.tid == 32).unwrap();
    assert_eq!(th.futex_count, ops.len());
    assert_eq!(th.futex_last_ticks, ops.last().map(|o| o.ticks));
    assert_eq!(t.futex_ops(th).collect::<Vec<_>>(), ops);
    let other = t.threads.iter().find(|th| th.tid == 31).unwrap();
    assert_eq!((other.futex_count, other.futex_last_ticks), (0, None));
    assert_eq!(t.futex_ops(other).count(), 0);
    // through the read-ahead call (in place: too few to read ahead)
    assert_eq!(t.futex_ops_ahead(th, |ops| ops.collect::<Vec<_>>()), ops);
    assert_eq!(t.futex_ops_ahead(other, |ops| ops.count()), 0);
    // the file cut short while open, in the middle of thread 32's chunks
    // (written after thread 31's): a prefix, never a panic, through the
    // read-ahead call too
    cut_short(&path, bytes.len() as u64 * 3 / 4 + 20);
    let got: Vec<FutexOp> = t.futex_ops(th).collect();
    assert!(got.len() < ops.len());
    assert_eq!(got, ops[..got.len()]);
    assert_eq!(t.futex_ops_ahead(th, |ops| ops.collect::<Vec<_>>()), got);
}

#[test]
fn a_file_that_cannot_be_read_is_an_error_naming_it() {
    // A directory opens, but reading it fails (EISDIR).
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("locks.ctrace");
    std::fs::create_dir(&dir).unwrap();
    let e = LockTrace::open(&dir).unwrap_err();
    assert!(matches!(e, TraceError::Io { .. }), "{e:?}");
    assert!(e.to_string().contains("locks.ctrace"), "{e}");
}
