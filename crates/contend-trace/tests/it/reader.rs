//! Reader tests on hand-built traces: round trip, TIME records, chunk
//! stitching, reused thread ids, truncation and corruption.

use std::path::Path;

use contend_trace::format::{self, header as h};
use contend_trace::{
    Damage, LockTrace, Phase, Primitive, RawOp, TraceBuilder, TraceError, NO_STACK,
};

fn op(ticks: u64, object: u64, site: u64, primitive: Primitive, phase: Phase) -> RawOp {
    RawOp {
        ticks,
        object,
        site,
        primitive,
        phase,
        stack: NO_STACK,
    }
}

fn two_thread_trace() -> TraceBuilder {
    let m = 0x5000;
    let mut b = TraceBuilder::default();
    b.threads.push((
        11,
        vec![
            op(1_000, m, 0x401000, Primitive::Mutex, Phase::Immediate),
            op(2_000, m, 0x401010, Primitive::Mutex, Phase::Release),
            // 100 s later: dt overflows 24 bits, a TIME record is needed.
            op(
                100_000_002_000,
                m,
                0x401000,
                Primitive::Mutex,
                Phase::Request,
            ),
            op(
                100_000_003_000,
                m,
                0x401000,
                Primitive::Mutex,
                Phase::Acquired,
            ),
            op(
                100_000_004_000,
                m,
                0x401010,
                Primitive::Mutex,
                Phase::Release,
            ),
        ],
    ));
    b.threads.push((
        12,
        (0..2000u64)
            .flat_map(|i| {
                [
                    op(
                        5_000 + i * 100,
                        0x6000,
                        0x402000,
                        Primitive::Spin,
                        Phase::Immediate,
                    ),
                    op(
                        5_050 + i * 100,
                        0x6000,
                        0x402010,
                        Primitive::Spin,
                        Phase::Release,
                    ),
                ]
            })
            .collect(),
    ));
    b
}

#[test]
fn round_trip_preserves_every_operation() {
    let b = two_thread_trace();
    let t = LockTrace::decode(Path::new("t.ctrace"), &b.to_bytes()).unwrap();
    assert!(t.damage.is_empty(), "{:?}", t.damage);
    assert!(t.finished());
    assert_eq!(t.pid, 1000);
    assert_eq!(t.exe_path, "/test/program");
    assert_eq!(t.threads.len(), 2);
    assert_eq!(t.threads[0].tid, 11);
    assert_eq!(t.thread_ops(0), b.threads[0].1);
    // 4000 ops of thread 12 span several 4 KiB chunks and are stitched.
    assert_eq!(t.thread_ops(1), b.threads[1].1);
}

#[test]
fn truncated_file_keeps_complete_chunks_and_says_so() {
    let b = two_thread_trace();
    let bytes = b.to_bytes();
    let cut = &bytes[..bytes.len() - 4096 - 100];
    let t = LockTrace::decode(Path::new("t.ctrace"), cut).unwrap();
    assert!(
        t.damage.contains(&Damage::FileTruncated { lost_chunks: 2 }),
        "{:?}",
        t.damage
    );
    let n: usize = t.op_count();
    assert_eq!(
        n,
        (0..t.threads.len())
            .map(|i| t.thread_ops(i).len())
            .sum::<usize>()
    );
    assert!(n > 0 && n < 4005);
}

#[test]
fn unfinished_process_is_reported() {
    let mut b = two_thread_trace();
    b.finished = false;
    let t = LockTrace::decode(Path::new("t.ctrace"), &b.to_bytes()).unwrap();
    assert_eq!(t.damage, vec![Damage::NotFinished]);
    assert_eq!(t.op_count(), 4005);
}

#[test]
fn unknown_tag_stops_the_chunk_only() {
    let b = two_thread_trace();
    let mut bytes = b.to_bytes();
    let data = u64::from_le_bytes(
        bytes[h::DATA_OFFSET..h::DATA_OFFSET + 8]
            .try_into()
            .unwrap(),
    ) as usize;
    // Second record of chunk 0 (thread 11) gets tag 0x7f.
    bytes[data + format::CHUNK_HEADER_SIZE + 8] = 0x7f;
    let t = LockTrace::decode(Path::new("t.ctrace"), &bytes).unwrap();
    assert!(matches!(t.damage[0], Damage::BadRecord { .. }));
    assert_eq!(t.threads.iter().find(|t| t.tid == 11).unwrap().op_count, 1);
    assert_eq!(
        t.threads.iter().find(|t| t.tid == 12).unwrap().op_count,
        4000
    );
}

#[test]
fn reused_thread_id_gives_two_threads() {
    let mut b = TraceBuilder::default();
    let ops = vec![
        op(10, 1, 2, Primitive::Mutex, Phase::Immediate),
        op(20, 1, 2, Primitive::Mutex, Phase::Release),
    ];
    b.threads.push((7, ops.clone()));
    b.threads.push((
        7,
        ops.iter()
            .map(|o| RawOp {
                ticks: o.ticks + 1000,
                ..*o
            })
            .collect(),
    ));
    let t = LockTrace::decode(Path::new("t.ctrace"), &b.to_bytes()).unwrap();
    assert_eq!(t.threads.len(), 2);
    assert!(t.damage.is_empty());
}

#[test]
fn garbage_gives_errors_naming_the_file() {
    let p = Path::new("/data/run/locks/42.ctrace");
    let e = LockTrace::decode(p, b"short").unwrap_err();
    assert!(matches!(e, TraceError::Format { .. }));
    assert!(e.to_string().contains("/data/run/locks/42.ctrace"), "{e}");
    let mut bytes = two_thread_trace().to_bytes();
    bytes[0] = b'X';
    let e = LockTrace::decode(p, &bytes).unwrap_err();
    assert!(e.to_string().contains("bad magic"), "{e}");
    let mut bytes = two_thread_trace().to_bytes();
    bytes[h::VERSION] = 9;
    let e = LockTrace::decode(p, &bytes).unwrap_err();
    assert!(e.to_string().contains("version 9"), "{e}");
    let e = LockTrace::open(Path::new("/nonexistent/1.ctrace")).unwrap_err();
    assert!(e.to_string().contains("/nonexistent/1.ctrace"), "{e}");
}

#[test]
fn random_corruption_never_panics() {
    corrupt_and_read(&two_thread_trace().to_bytes(), 0, 0x9e37_79b9_7f4a_7c15);
}

/// 300 copies of trace `base`, each with 20 bytes at or past `from` set
/// at random (xorshift from `seed`), read whole and cut short at random:
/// whatever opens decodes every operation the same through both paths.
fn corrupt_and_read(base: &[u8], from: usize, seed: u64) {
    let mut x = seed;
    for _ in 0..300 {
        let mut bytes = base.to_vec();
        for _ in 0..20 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let at = from + (x as usize) % (bytes.len() - from);
            bytes[at] = (x >> 32) as u8;
        }
        x ^= x << 13;
        let cut = (x as usize) % bytes.len();
        for b in [&bytes[..], &bytes[..cut]] {
            if let Ok(t) = LockTrace::decode(Path::new("f"), b) {
                decode_every_op(&t);
            }
        }
    }
}

/// Decodes every operation through both paths; they must agree with each
/// other and with the counts found at open.
fn decode_every_op(t: &LockTrace) {
    for thread in &t.threads {
        let listed: Vec<RawOp> = t.ops(thread).collect();
        assert_eq!(listed.len(), thread.op_count);
        let mut k = 0;
        t.for_each_op(thread, |op, object_slot, site_slot| {
            assert_eq!(*op, listed[k]);
            k += 1;
            for (slot, table) in [(object_slot, t.object_table()), (site_slot, t.site_table())] {
                assert!(slot == contend_trace::NO_SLOT || (slot as usize) < table.len());
            }
        });
        assert_eq!(k, thread.op_count);
    }
}

/// Creation records (tag 0x05, trace_format.h "Creation records"): two
/// operation words of a hand-built trace are overwritten with a narrow
/// CREATE record (head word naming the first operation's object and site
/// slots, then the extension word: how = 1 init, primitive 1 mutex). The
/// reader lists it in `creations` (not as an operation: 3 ops − 2 = 1 op
/// left) with the chunk's thread id; an unknown "how" is a bad record.
#[test]
fn creation_records_are_decoded_apart_from_operations() {
    let m = 0x5000;
    let mut b = TraceBuilder::default();
    b.threads.push((
        21,
        vec![
            op(1_000, m, 0x401000, Primitive::Mutex, Phase::Immediate),
            op(2_000, m, 0x401000, Primitive::Mutex, Phase::Immediate),
            op(3_000, m, 0x401010, Primitive::Mutex, Phase::Release),
        ],
    ));
    let mut bytes = b.to_bytes();
    let data = u64::from_le_bytes(
        bytes[h::DATA_OFFSET..h::DATA_OFFSET + 8]
            .try_into()
            .unwrap(),
    );
    let first = data as usize + format::CHUNK_HEADER_SIZE;
    let head = u64::from_le_bytes(bytes[first..first + 8].try_into().unwrap());
    // keep dt and both index fields, change the tag to CREATE
    let create = (head & !0xff) | u64::from(format::TAG_CREATE);
    let ext = format::create::ext_word(format::create::INIT, 1);
    let write = |bytes: &mut Vec<u8>, ext: u64| {
        bytes[first..first + 8].copy_from_slice(&create.to_le_bytes());
        bytes[first + 8..first + 16].copy_from_slice(&ext.to_le_bytes());
    };
    write(&mut bytes, ext);
    let t = LockTrace::decode(Path::new("create.ctrace"), &bytes).expect("decodes");
    assert_eq!(t.op_count(), 1);
    assert_eq!(t.creations.len(), 1);
    let c = t.creations[0];
    assert_eq!((c.object, c.site, c.tid), (m, 0x401000, 21));
    assert_eq!(c.how, contend_trace::CreationKind::Init);
    assert_eq!(c.primitive, Some(Primitive::Mutex));
    assert_eq!(c.stack, NO_STACK);
    let ops = t.thread_ops(0);
    assert_eq!(ops[0].phase, Phase::Release);
    // the CREATE record keeps the first operation's dt (to 1,000); the
    // second operation's dt (1,000) went with the word the extension word
    // replaced; the release adds its own 1,000: 2,000
    assert_eq!(ops[0].ticks, 2_000, "the CREATE record's dt still counts");
    assert!(t.damage.is_empty(), "{:?}", t.damage);

    // how = 9 is no kind of creation
    write(&mut bytes, format::create::ext_word(9, 0));
    let t = LockTrace::decode(Path::new("create.ctrace"), &bytes).expect("decodes");
    assert!(t.creations.is_empty());
    assert!(
        t.damage.iter().any(
            |d| matches!(d, Damage::BadRecord { problem, .. } if problem.contains("unknown kind"))
        ),
        "{:?}",
        t.damage
    );
}

/// `for_each_op` skips chunks without lock operations (an OpenMP
/// program's chunks hold millions of OpenMP records): it still gives every
/// operation the stack the full decode (`ops`) gives it, when the STACK
/// record that precedes the operation ends a chunk with no operations,
/// and when OpenMP records in such a chunk follow a pending STACK (the
/// operation then has none). Chunks of 4096 bytes: a 64-byte header,
/// 16 bytes per OpenMP record, 8 per operation, 16 per one-frame stack.
#[test]
fn chunks_without_operations_are_skipped_with_their_pending_stacks() {
    use contend_trace::format::omp as ev;
    use contend_trace::OmpOp;
    let m = 0x5000;
    let omp = |i: u64| OmpOp {
        ticks: 100 + i,
        object: 0x9000,
        site: 0x40_3000,
        event: [ev::MUTEX_ACQUIRE, ev::MUTEX_ACQUIRED, ev::MUTEX_RELEASED][(i % 3) as usize],
        kind: 3,
        value: 0,
    };
    // (OpenMP records before the STACK, after it, the expected stack of
    // the last operation: Some = the STACK's)
    for (before, after, has_stack) in [
        // chunk 1: operation, 250 OpenMP records; chunk 2: 250 OpenMP
        // records and the STACK, which ends it; chunk 3: the operation
        (500u64, 0u64, true),
        // chunk 1: operation, 249 OpenMP records, the STACK; chunk 2: 251
        // OpenMP records; chunk 3: the operation, whose stack is none
        (249, 251, false),
    ] {
        let mut b = TraceBuilder::default();
        let last = 100 + before + after + 10;
        b.threads.push((
            11,
            vec![
                op(10, m, 0x401000, Primitive::Mutex, Phase::Immediate),
                op(last, m, 0x401010, Primitive::Mutex, Phase::Release),
            ],
        ));
        b.omp.push((11, (0..before + after).map(omp).collect()));
        // the STACK right after the `before` records (ticks 100 + before - 1)
        b.stacks.push((11, vec![(100 + before, vec![0x40_5000])]));
        let bytes = b.to_bytes();
        let trace = LockTrace::decode(Path::new("stacks.ctrace"), &bytes).unwrap();
        assert!(trace.damage.is_empty(), "{:?}", trace.damage);
        let thread = &trace.threads[0];
        let decoded: Vec<RawOp> = trace.ops(thread).collect();
        let mut skipped = Vec::new();
        trace.for_each_op(thread, |op, _, _| skipped.push(*op));
        assert_eq!(skipped, decoded, "{before} + {after} OpenMP records");
        assert_eq!(decoded.len(), 2);
        assert_eq!(
            decoded[1].stack != NO_STACK,
            has_stack,
            "{before} + {after}: {:?}",
            decoded[1]
        );
        assert_eq!(trace.threads[0].omp_count(), (before + after) as usize);
    }
}

/// The scan at open runs over chunks on both cores and joins them in file
/// order: every operation still gets its own STACK record's frames, the
/// stacks are numbered in file order, and a chunk that ends with a
/// pending STACK and holds no operation (its pending stack carried in the
/// scan's result) gives the operation in the next chunk that stack, also
/// when many stacks of other chunks come before it. Three threads of
/// hundreds of 4096-byte chunks; each stack's one frame names its thread
/// and operation.
#[test]
fn stacks_keep_their_operations_across_chunks_scanned_apart() {
    use contend_trace::format::omp as ev;
    use contend_trace::OmpOp;
    let frame = |tid: u64, i: u64| 0x7000_0000 + tid * 0x10_0000 + i;
    let mut b = TraceBuilder::default();
    let mut expected: Vec<(u32, Vec<Option<u64>>)> = Vec::new();
    for tid in [11u32, 12, 13] {
        let m = 0x5000 + u64::from(tid);
        let mut ops = Vec::new();
        let mut stacks = Vec::new();
        let mut want = Vec::new();
        for i in 0..6_000u64 {
            let t = 1_000 + 10 * i;
            let phase = if i % 2 == 0 {
                Phase::Immediate
            } else {
                Phase::Release
            };
            ops.push(op(t, m, 0x401000 + 16 * (i % 2), Primitive::Mutex, phase));
            // a stack before every third operation
            if i % 3 == 0 {
                stacks.push((t, vec![frame(u64::from(tid), i)]));
                want.push(Some(frame(u64::from(tid), i)));
            } else {
                want.push(None);
            }
        }
        // Thread 13 begins as in the test above: chunk 1: an operation and
        // 250 OpenMP records; chunk 2: 250 OpenMP records and a STACK,
        // which ends it; chunk 3 begins with the operation of that STACK.
        // Its chunks follow those of threads 11 and 12 in the file.
        if tid == 13 {
            let omp = (0..500u64)
                .map(|k| OmpOp {
                    ticks: 100 + k,
                    object: 0x9000,
                    site: 0x40_3000,
                    event: [ev::MUTEX_ACQUIRE, ev::MUTEX_ACQUIRED, ev::MUTEX_RELEASED]
                        [(k % 3) as usize],
                    kind: 3,
                    value: 0,
                })
                .collect();
            b.omp.push((tid, omp));
            ops.insert(0, op(10, m, 0x401020, Primitive::Mutex, Phase::Immediate));
            ops.insert(1, op(610, m, 0x401030, Primitive::Mutex, Phase::Release));
            stacks.insert(0, (600, vec![frame(13, 99_999)]));
            want.insert(0, None);
            want.insert(1, Some(frame(13, 99_999)));
        }
        b.threads.push((tid, ops));
        b.stacks.push((tid, stacks));
        expected.push((tid, want));
    }
    let bytes = b.to_bytes();
    let trace = LockTrace::decode(Path::new("many-stacks.ctrace"), &bytes).unwrap();
    assert!(trace.damage.is_empty(), "{:?}", trace.damage);
    let chunks = (bytes.len() - 4096) / 4096;
    assert!(chunks > 100, "only {chunks} chunks");
    // 2,000 stacks per thread, and thread 13's first
    assert_eq!(trace.stacks.len(), 3 * 2_000 + 1);
    // numbered in file order: the builder writes thread after thread
    let in_file_order: Vec<u64> = b
        .stacks
        .iter()
        .flat_map(|(_, s)| s.iter().map(|(_, f)| f[0]))
        .collect();
    let numbered: Vec<u64> = trace.stacks.iter().map(|f| f[0]).collect();
    assert_eq!(numbered, in_file_order);
    for (tid, want) in &expected {
        let thread = trace.threads.iter().find(|t| t.tid == *tid).unwrap();
        let mut got = Vec::new();
        trace.for_each_op(thread, |op, _, _| {
            got.push((op.stack != NO_STACK).then(|| trace.stacks[op.stack as usize][0]))
        });
        let first_wrong = |got: &[Option<u64>]| {
            (0..want.len().max(got.len()))
                .find(|&i| got.get(i) != want.get(i))
                .map(|i| (i, got.get(i).copied(), want.get(i).copied()))
        };
        assert_eq!(
            first_wrong(&got),
            None,
            "thread {tid}: (operation, got, want)"
        );
        let decoded: Vec<Option<u64>> = trace
            .ops(thread)
            .map(|op| (op.stack != NO_STACK).then(|| trace.stacks[op.stack as usize][0]))
            .collect();
        assert_eq!(
            first_wrong(&decoded),
            None,
            "thread {tid}, full decode: (operation, got, want)"
        );
    }
}

/// A trace of four threads in 16 KiB chunks, light mode: three short ones
/// (their first record chunk and their COUNTS table each fit in a slot,
/// [`format::SLOT_SIZE`]), one long (its first chunk does not), one of
/// them with a stack; written as plain chunks or, with `slot_chunks`, with
/// the short ones' chunks in slot chunks as the collector writes them.
fn four_thread_light_trace(slot_chunks: bool) -> TraceBuilder {
    let mut b = TraceBuilder {
        chunk_size: 16384,
        light: true,
        slot_chunks,
        ..TraceBuilder::default()
    };
    for (tid, pairs) in [(21u32, 3u64), (22, 2_000), (23, 40), (24, 1)] {
        let ops = (0..pairs)
            .flat_map(|i| {
                let t = 1_000 * u64::from(tid) + i * 50;
                [
                    op(
                        t,
                        0x5000 + u64::from(tid % 2),
                        0x401000,
                        Primitive::Mutex,
                        Phase::Request,
                    ),
                    op(
                        t + 10,
                        0x5000 + u64::from(tid % 2),
                        0x401000,
                        Primitive::Mutex,
                        Phase::Acquired,
                    ),
                    op(
                        t + 20,
                        0x5000 + u64::from(tid % 2),
                        0x401010,
                        Primitive::Mutex,
                        Phase::Release,
                    ),
                ]
            })
            .collect();
        b.threads.push((tid, ops));
        b.counted.push((
            tid,
            vec![contend_trace::Counted {
                object: 0x6000,
                site: 0x402000 + u64::from(tid),
                primitive: Primitive::Mutex,
                count: u64::from(tid) * 7,
            }],
        ));
    }
    b.stacks
        .push((23, vec![(23_000, vec![0x401000, 0x400500, 0x400100])]));
    b
}

/// Slot chunks (version 3): a thread's first chunks taken as slots read
/// as the same threads, operations, counts and stacks as the same chunks
/// written as chunks of their own.
#[test]
fn slots_read_as_the_chunks_they_replace() {
    let plain_bytes = four_thread_light_trace(false).to_bytes();
    let slotted_bytes = four_thread_light_trace(true).to_bytes();
    // 3 first record chunks and 4 COUNTS tables fit in slots: 7 chunks
    // fewer, and 3 slot chunks of 3 slots each more
    let claimed = |b: &[u8]| {
        u32::from_le_bytes(
            b[h::CHUNKS_CLAIMED..h::CHUNKS_CLAIMED + 4]
                .try_into()
                .unwrap(),
        )
    };
    assert_eq!(claimed(&slotted_bytes) + 4, claimed(&plain_bytes));
    let plain = LockTrace::decode(Path::new("plain"), &plain_bytes).unwrap();
    let slotted = LockTrace::decode(Path::new("slotted"), &slotted_bytes).unwrap();
    assert!(slotted.damage.is_empty(), "{:?}", slotted.damage);
    assert_eq!(plain.damage, slotted.damage);
    assert_eq!(plain.threads.len(), 4);
    assert_eq!(slotted.threads.len(), 4);
    for (a, b) in plain.threads.iter().zip(&slotted.threads) {
        assert_eq!(a.tid, b.tid);
        assert_eq!(a.op_count, b.op_count);
        assert_eq!(a.counted, b.counted);
        assert_eq!(
            plain.ops(a).collect::<Vec<_>>(),
            slotted.ops(b).collect::<Vec<_>>()
        );
    }
    assert_eq!(plain.stacks, slotted.stacks);
    decode_every_op(&slotted);
}

/// A slot chunk whose slot size does not fit, and a slot that says it is a
/// slot chunk, are damage that names them; the other threads still read.
#[test]
fn a_bad_slot_chunk_is_damage() {
    let bytes = four_thread_light_trace(true).to_bytes();
    let data = u64::from_le_bytes(
        bytes[h::DATA_OFFSET..h::DATA_OFFSET + 8]
            .try_into()
            .unwrap(),
    ) as usize;
    let chunks = (bytes.len() - data) / 16384;
    let slot_chunk = (0..chunks)
        .map(|k| data + k * 16384)
        .find(|&at| {
            u32::from_le_bytes(bytes[at + 12..at + 16].try_into().unwrap()) & format::CHUNK_SLOTS
                != 0
        })
        .expect("a slot chunk");
    for (what, at, value) in [
        ("slots of 20000 bytes", slot_chunk + 8, 20_000u32),
        ("slots of 4 bytes", slot_chunk + 8, 4),
        (
            "a slot that says it is a slot chunk",
            slot_chunk + format::CHUNK_HEADER_SIZE + 12,
            format::CHUNK_SLOTS,
        ),
    ] {
        let mut bad = bytes.clone();
        bad[at..at + 4].copy_from_slice(&value.to_le_bytes());
        let t = LockTrace::decode(Path::new("bad"), &bad).unwrap();
        assert!(
            t.damage.iter().any(
                |d| matches!(d, Damage::BadRecord { problem, .. } if problem.contains("slot"))
            ),
            "{what}: {:?}",
            t.damage
        );
        // the long thread's chunks are its own
        assert!(
            t.threads.iter().any(|th| th.tid == 22 && th.op_count > 0),
            "{what}"
        );
        decode_every_op(&t);
    }
}

#[test]
fn random_corruption_of_slot_chunks_never_panics() {
    let base = four_thread_light_trace(true).to_bytes();
    let data =
        u64::from_le_bytes(base[h::DATA_OFFSET..h::DATA_OFFSET + 8].try_into().unwrap()) as usize;
    // (in the chunks: the slot chunks' headers and slots among them)
    corrupt_and_read(&base, data, 0x2545_f491_4f6c_dd1d);
}
