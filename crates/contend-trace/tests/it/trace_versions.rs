//! Trace format version 2 (the collector's cost fields, light recordings'
//! COUNTS chunks, the RELEASED and UNTIMED phases) and version 1: traces
//! written before version 2 still read, a newer version is refused with a
//! message that says so.

use std::path::Path;

use contend_trace::format::{self, header as h};
use contend_trace::{Counted, LockTrace, Phase, Primitive, RawOp, TraceBuilder, NO_STACK};

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

const M: u64 = 0x5000;

/// One thread: a contended acquisition, its release that found waiters
/// (RELEASE + RELEASED), and a counted hold recorded when its release woke
/// a waiter (UNTIMED + RELEASE + RELEASED).
fn recorded_ops() -> Vec<RawOp> {
    vec![
        op(1_000, M, 0x401000, Primitive::Mutex, Phase::Request),
        op(1_500, M, 0x401000, Primitive::Mutex, Phase::Acquired),
        op(2_000, M, 0x401010, Primitive::Mutex, Phase::Release),
        op(2_700, M, 0x401010, Primitive::Mutex, Phase::Released),
        op(9_000, M, 0x401020, Primitive::Mutex, Phase::Untimed),
        op(9_000, M, 0x401030, Primitive::Mutex, Phase::Release),
        op(9_400, M, 0x401030, Primitive::Mutex, Phase::Released),
    ]
}

#[test]
fn version_2_light_trace_reads_counts_phases_and_cost() {
    let b = TraceBuilder {
        light: true,
        threads: vec![(21, recorded_ops())],
        counted: vec![
            (
                21,
                vec![
                    Counted {
                        object: M,
                        site: 0x401020,
                        primitive: Primitive::Mutex,
                        count: 500,
                    },
                    Counted {
                        object: 0x6000,
                        site: 0x401040,
                        primitive: Primitive::RwlockRead,
                        count: 7,
                    },
                ],
            ),
            // A thread that only ever acquired at once: counts, no records.
            (
                22,
                vec![Counted {
                    object: M,
                    site: 0x401020,
                    primitive: Primitive::Mutex,
                    count: 1234,
                }],
            ),
        ],
        cost: (777_000, 7_500, 1_600),
        version: 2,
        ..TraceBuilder::default()
    };
    let t = LockTrace::decode(Path::new("v2.ctrace"), &b.to_bytes()).unwrap();
    assert_eq!(t.version, 2);
    assert!(t.light());
    assert_eq!(
        (t.collector_ns, t.cost_record_ps, t.cost_count_ps),
        (777_000, 7_500, 1_600)
    );
    assert!(t.damage.is_empty(), "{:?}", t.damage);
    assert_eq!(t.threads.len(), 2);
    let th = t.threads.iter().find(|th| th.tid == 21).unwrap();
    assert_eq!(th.op_count, 7);
    assert_eq!(th.record_bytes, 7 * 8);
    let phases: Vec<Phase> = t.ops(th).map(|o| o.phase).collect();
    assert_eq!(
        phases,
        recorded_ops().iter().map(|o| o.phase).collect::<Vec<_>>()
    );
    assert_eq!(th.counted.len(), 2);
    assert_eq!(th.counted[1].primitive, Primitive::RwlockRead);
    let only_counts = t.threads.iter().find(|th| th.tid == 22).unwrap();
    assert_eq!(only_counts.op_count, 0);
    assert_eq!(only_counts.counted[0].count, 1234);
    // 500 + 7 + 1234
    assert_eq!(t.counted(), 1741);
}

/// A trace as collectors before version 2 wrote it (the golden recordings
/// in tests/golden are real ones) still reads, with no cost fields.
#[test]
fn version_1_trace_still_reads() {
    let b = TraceBuilder {
        version: 1,
        threads: vec![(
            31,
            vec![
                op(1_000, M, 0x401000, Primitive::Mutex, Phase::Immediate),
                op(2_000, M, 0x401010, Primitive::Mutex, Phase::Release),
            ],
        )],
        // Not written in version 1: the bytes stay reserved (zero).
        cost: (5, 6, 7),
        ..TraceBuilder::default()
    };
    let bytes = b.to_bytes();
    assert_eq!(
        u32::from_le_bytes(bytes[h::VERSION..h::VERSION + 4].try_into().unwrap()),
        1
    );
    let t = LockTrace::decode(Path::new("v1.ctrace"), &bytes).unwrap();
    assert_eq!(t.version, 1);
    assert!(!t.light());
    assert_eq!(
        (t.collector_ns, t.cost_record_ps, t.cost_count_ps),
        (0, 0, 0)
    );
    assert_eq!(t.op_count(), 2);
    assert!(t.damage.is_empty(), "{:?}", t.damage);
}

#[test]
fn a_newer_version_is_refused_with_a_clear_message() {
    let mut bytes = TraceBuilder::default().to_bytes();
    bytes[h::VERSION..h::VERSION + 4].copy_from_slice(&(format::VERSION + 1).to_le_bytes());
    let e = LockTrace::decode(Path::new("new.ctrace"), &bytes).unwrap_err();
    let msg = e.to_string();
    assert!(msg.contains("new.ctrace"), "{msg}");
    assert!(
        msg.contains(&format!("version {}", format::VERSION + 1)),
        "{msg}"
    );
    assert!(msg.contains("newer contend"), "{msg}");
}
