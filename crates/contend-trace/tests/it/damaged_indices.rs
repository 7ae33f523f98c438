//! Traces whose header describes the index tables or the chunks wrongly
//! (a damaged `object_table_slots`, `site_table_slots`, `chunks_claimed`,
//! `data_offset`, …): the reader must not panic, must never hand a caller a
//! table slot outside its table or on an empty slot, and must report the
//! damage. Uses hand-built traces and a real trace the collector wrote
//! (`tests/golden/recordings/sharequeue-single.data`).

use std::path::{Path, PathBuf};

use contend_trace::format::{self, header as h};
use contend_trace::{Damage, LockTrace, Phase, Primitive, RawOp, TraceBuilder, NO_SLOT, NO_STACK};

fn put32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}
fn put64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
}
fn get64(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

/// A trace with `objects` distinct locks taken from `sites` call sites, so
/// that its records use table slots 0..objects and 0..sites.
fn many_objects(objects: u64, sites: u64) -> TraceBuilder {
    let mut b = TraceBuilder::default();
    let ops = (0..objects * 4)
        .map(|i| RawOp {
            ticks: 1_000 + i * 10,
            object: 0x10_0000 + (i % objects) * 64,
            site: 0x40_1000 + (i % sites) * 4,
            primitive: Primitive::Mutex,
            phase: if i % 2 == 0 {
                Phase::Immediate
            } else {
                Phase::Release
            },
            stack: NO_STACK,
        })
        .collect();
    b.threads.push((21, ops));
    b
}

/// The dangling-index count reported, if any.
fn dangling(t: &LockTrace) -> Option<u64> {
    t.damage.iter().find_map(|d| match d {
        Damage::DanglingIndex { count } => Some(*count),
        _ => None,
    })
}

/// Every operation of every thread through both decoding paths, checking
/// that they agree, that they yield the counted number of operations, and
/// that every slot handed out is [`NO_SLOT`] or a valid, non-empty slot
/// holding the operation's address. Returns (operations, records whose
/// object or site slot was [`NO_SLOT`]).
fn check_every_op(t: &LockTrace) -> (usize, usize) {
    let (objects, sites) = (t.object_table(), t.site_table());
    let mut total = 0;
    let mut unresolved = 0;
    for thread in &t.threads {
        let listed: Vec<RawOp> = t.ops(thread).collect();
        assert_eq!(listed.len(), thread.op_count, "ops() of tid {}", thread.tid);
        let mut k = 0;
        t.for_each_op(thread, |op, object_slot, site_slot| {
            assert_eq!(*op, listed[k], "for_each_op and ops() differ at {k}");
            k += 1;
            for (slot, table, address, what) in [
                (object_slot, objects, op.object, "object"),
                (site_slot, sites, op.site, "site"),
            ] {
                if slot != NO_SLOT {
                    let entry = table.get(slot as usize).copied();
                    assert!(
                        entry.is_some(),
                        "{what} slot {slot} handed out, the table has {} slots",
                        table.len()
                    );
                    assert_eq!(entry, Some(address), "{what} slot {slot}");
                    assert_ne!(address, 0, "{what} slot {slot} is empty");
                }
            }
            unresolved += usize::from(object_slot == NO_SLOT || site_slot == NO_SLOT);
        });
        assert_eq!(k, thread.op_count, "for_each_op of tid {}", thread.tid);
        total += k;
    }
    (total, unresolved)
}

#[test]
fn table_slot_counts_smaller_than_the_indices_used() {
    let b = many_objects(40, 10);
    let clean = LockTrace::decode(Path::new("t.ctrace"), &b.to_bytes()).unwrap();
    assert!(clean.damage.is_empty(), "{:?}", clean.damage);
    let (n, unresolved) = check_every_op(&clean);
    assert_eq!((n, unresolved), (160, 0));

    // Slot numbers are handed out in first-seen order: object i has slot
    // i and site j slot j. With 4 object slots and 2 site slots left, a
    // record is whole only if its object is 0..4 and its site 0..2.
    let mut bytes = b.to_bytes();
    put32(&mut bytes, h::OBJECT_TABLE_SLOTS, 4);
    put32(&mut bytes, h::SITE_TABLE_SLOTS, 2);
    let t = LockTrace::decode(Path::new("t.ctrace"), &bytes).unwrap();
    assert_eq!(t.object_table().len(), 4);
    assert_eq!(t.site_table().len(), 2);
    let (n, unresolved) = check_every_op(&t);
    assert_eq!(n, 160, "every record is still read");
    let expected = (0..160u64).filter(|i| i % 40 >= 4 || i % 10 >= 2).count();
    assert_eq!(unresolved, expected);
    assert_eq!(dangling(&t), Some(expected as u64), "{:?}", t.damage);
    // The records whose indices are valid keep their addresses.
    let whole = t.thread_ops(0);
    let orig = clean.thread_ops(0);
    for (i, (a, o)) in whole.iter().zip(&orig).enumerate() {
        let ok = (i as u64) % 40 < 4;
        assert_eq!(a.object == o.object, ok, "record {i}");
        assert_eq!(a.object, if ok { o.object } else { 0 }, "record {i}");
        assert_eq!(a.ticks, o.ticks);
    }
    let message = t
        .damage
        .iter()
        .map(|d| d.to_string())
        .collect::<Vec<_>>()
        .join("\n");
    assert!(message.contains("outside the table"), "{message}");

    // Zero slots: every record is damaged, none panics.
    put32(&mut bytes, h::OBJECT_TABLE_SLOTS, 0);
    put32(&mut bytes, h::SITE_TABLE_SLOTS, 0);
    let t = LockTrace::decode(Path::new("t.ctrace"), &bytes).unwrap();
    assert_eq!(check_every_op(&t), (160, 160));
    assert_eq!(dangling(&t), Some(160));
}

#[test]
fn empty_table_slots_are_not_handed_out() {
    let b = many_objects(8, 3);
    let mut bytes = b.to_bytes();
    // Empty object slot 5 and site slot 1 (as if the table pages were lost).
    let obj = get64(&bytes, h::OBJECT_TABLE_OFFSET) as usize;
    let site = get64(&bytes, h::SITE_TABLE_OFFSET) as usize;
    put64(&mut bytes, obj + 5 * 8, 0);
    put64(&mut bytes, site + 8, 0);
    let t = LockTrace::decode(Path::new("t.ctrace"), &bytes).unwrap();
    let (n, unresolved) = check_every_op(&t);
    assert_eq!(n, 32);
    let expected = (0..32u64).filter(|i| i % 8 == 5 || i % 3 == 1).count();
    assert_eq!(unresolved, expected);
    assert_eq!(dangling(&t), Some(expected as u64), "{:?}", t.damage);
}

#[test]
fn damaged_chunk_counts_and_offsets() {
    let base = many_objects(8, 3).to_bytes();
    let data = get64(&base, h::DATA_OFFSET);
    // A claim count far beyond the file: the chunks that are there are read,
    // the rest reported lost (and no time is spent on 4 billion chunks).
    let mut bytes = base.clone();
    put32(&mut bytes, h::CHUNKS_CLAIMED, u32::MAX);
    let t = LockTrace::decode(Path::new("t.ctrace"), &bytes).unwrap();
    assert_eq!(check_every_op(&t).0, 32);
    assert!(
        t.damage.contains(&Damage::FileTruncated {
            lost_chunks: u32::MAX - 1
        }),
        "{:?}",
        t.damage
    );
    // A data offset past the end of the file, or so large that chunk
    // offsets would overflow.
    for offset in [data + (1 << 40), u64::MAX - 100, u64::MAX] {
        let mut bytes = base.clone();
        put64(&mut bytes, h::DATA_OFFSET, offset);
        let t = LockTrace::decode(Path::new("t.ctrace"), &bytes).unwrap();
        assert_eq!(check_every_op(&t).0, 0);
        assert!(
            t.damage.contains(&Damage::FileTruncated { lost_chunks: 1 }),
            "data offset {offset}: {:?}",
            t.damage
        );
    }
    // A data offset inside the tables: chunks are looked for in the wrong
    // place; whatever is found there, nothing panics.
    for offset in [4096u64, 4096 + 8, data - 4096 + 3] {
        let mut bytes = base.clone();
        put64(&mut bytes, h::DATA_OFFSET, offset);
        put32(&mut bytes, h::OBJECT_TABLE_SLOTS, 0);
        put32(&mut bytes, h::SITE_TABLE_SLOTS, 0);
        if let Ok(t) = LockTrace::decode(Path::new("t.ctrace"), &bytes) {
            check_every_op(&t);
        }
    }
    // Tables that would lie past the data offset, or overflow, are refused.
    for (field, value) in [
        (h::OBJECT_TABLE_OFFSET, u64::MAX - 7),
        (h::SITE_TABLE_OFFSET, data),
        (h::OBJECT_TABLE_OFFSET, 0),
    ] {
        let mut bytes = base.clone();
        put64(&mut bytes, field, value);
        let e = LockTrace::decode(Path::new("t.ctrace"), &bytes).unwrap_err();
        assert!(e.to_string().contains("index tables"), "{e}");
    }
    // Table slot counts past 2^16 (indices are 16 bits) are read only as
    // far as records can reach.
    let mut bytes = base.clone();
    put32(&mut bytes, h::OBJECT_TABLE_SLOTS, 1 << 20);
    put64(&mut bytes, h::OBJECT_TABLE_OFFSET, 4096);
    put64(&mut bytes, h::SITE_TABLE_OFFSET, 4096 + (1 << 20) * 8);
    put64(&mut bytes, h::DATA_OFFSET, 4096 + (1 << 20) * 8 + 65536 * 8);
    let t = LockTrace::decode(Path::new("t.ctrace"), &bytes).unwrap();
    assert_eq!(t.object_table().len(), 1 << 16);
    assert_eq!(check_every_op(&t).0, 0);
    assert!(
        t.damage.contains(&Damage::FileTruncated { lost_chunks: 1 }),
        "{:?}",
        t.damage
    );
}

#[test]
fn random_header_damage_never_reaches_callers() {
    let base = many_objects(50, 7).to_bytes();
    // The header words that describe the layout.
    let fields: [(usize, usize); 8] = [
        (h::CHUNK_SIZE, 4),
        (h::CHUNKS_CLAIMED, 4),
        (h::OBJECT_TABLE_OFFSET, 8),
        (h::OBJECT_TABLE_SLOTS, 4),
        (h::SITE_TABLE_SLOTS, 4),
        (h::SITE_TABLE_OFFSET, 8),
        (h::DATA_OFFSET, 8),
        (h::STACK_EVERY, 4),
    ];
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for _ in 0..400 {
        let mut bytes = base.clone();
        for _ in 0..1 + next() % 3 {
            let (at, width) = fields[(next() % fields.len() as u64) as usize];
            let r = next();
            // Small values, values near the real ones, and anything.
            let value = match r % 3 {
                0 => r >> 58,
                1 => get64(&bytes, at)
                    .wrapping_add((r >> 40) % 64)
                    .wrapping_sub(32),
                _ => r,
            };
            bytes[at..at + width].copy_from_slice(&value.to_le_bytes()[..width]);
        }
        if let Ok(t) = LockTrace::decode(Path::new("t.ctrace"), &bytes) {
            check_every_op(&t);
        }
    }
}

/// A copy of the collector-written trace of the golden sharequeue run.
fn real_trace(dir: &Path) -> PathBuf {
    let locks = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/golden/recordings/sharequeue-single.data/locks");
    let source = std::fs::read_dir(&locks)
        .unwrap_or_else(|e| panic!("{}: {e}", locks.display()))
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "ctrace"))
        .expect("a .ctrace in the golden recording");
    let copy = dir.join(source.file_name().unwrap());
    std::fs::copy(&source, &copy).unwrap();
    copy
}

#[test]
fn real_trace_with_damaged_table_sizes() {
    let tmp = tempfile::tempdir().unwrap();
    let path = real_trace(tmp.path());
    let clean = LockTrace::open(&path).unwrap();
    let (n, unresolved) = check_every_op(&clean);
    assert!(n > 0);
    assert_eq!(unresolved, 0, "the real trace uses the wide form nowhere");
    assert_eq!(dangling(&clean), None, "{:?}", clean.damage);
    let clean_ops: Vec<Vec<RawOp>> = (0..clean.threads.len())
        .map(|i| clean.thread_ops(i))
        .collect();

    // The collector's slots are hashes of the addresses, spread over all
    // 65536: with 16 slots left nearly every record is out of range.
    let mut bytes = std::fs::read(&path).unwrap();
    assert_eq!(
        u32::from_le_bytes(bytes[h::OBJECT_TABLE_SLOTS..][..4].try_into().unwrap()),
        65536
    );
    put32(&mut bytes, h::OBJECT_TABLE_SLOTS, 16);
    put32(&mut bytes, h::SITE_TABLE_SLOTS, 16);
    std::fs::write(&path, &bytes).unwrap();
    let t = LockTrace::open(&path).unwrap();
    let (m, unresolved) = check_every_op(&t);
    assert_eq!(m, n, "every record is still read");
    assert!(unresolved > 0);
    assert_eq!(dangling(&t), Some(unresolved as u64), "{:?}", t.damage);
    // Records keep their times, primitives and phases; an address is
    // either the real one or 0 (unknown).
    for (i, ops) in clean_ops.iter().enumerate() {
        let damaged = t.thread_ops(i);
        assert_eq!(damaged.len(), ops.len());
        for (d, c) in damaged.iter().zip(ops) {
            assert_eq!(
                (d.ticks, d.primitive, d.phase),
                (c.ticks, c.primitive, c.phase)
            );
            assert!(d.object == c.object || d.object == 0);
            assert!(d.site == c.site || d.site == 0);
        }
    }
    // The same through the in-memory path.
    let t = LockTrace::decode(&path, &bytes).unwrap();
    assert_eq!(check_every_op(&t), (m, unresolved));
    assert_eq!(format::HEADER_SIZE, 4096);
}
