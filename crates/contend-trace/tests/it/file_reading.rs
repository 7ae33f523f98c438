//! Reading lock traces from files with positioned reads: sparse files
//! whose holes read as zeros, files cut short after they were opened, and
//! files that cannot be read at all. (A recording on a tmpfs that filled up,
//! where a mapping died by SIGBUS, is the end-to-end test
//! `e2e_damaged_traces.rs` of contend-cli.)

use std::io::{Seek, SeekFrom, Write};
use std::path::Path;

use contend_trace::format::header as h;
use contend_trace::{Damage, LockTrace, Phase, Primitive, RawOp, TraceBuilder, TraceError};

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
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(cut)
            .unwrap();
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
