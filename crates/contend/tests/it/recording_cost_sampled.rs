//! The recording-cost estimate from the collector's in-situ samples
//! (lock-trace flag `FLAG_SAMPLED_COST`), on a hand-built trace with the
//! result worked out by hand, and the fallback to the calibrated estimate
//! for traces without the flag (docs/metrics.md, "Recording cost").

use contend::recording::Recording;
use contend::recording_cost::recording_cost;
use contend_trace::counters::RunCounters;
use contend_trace::format::CLOCK_MONOTONIC;
use contend_trace::meta::RunMeta;
use contend_trace::Phase::{self, Acquired, Immediate, Release, Released, Request, Untimed};
use contend_trace::Primitive::{self, Mutex};
use contend_trace::{BuiltSamples, CostSamples, Counted, RawOp, TraceBuilder, NO_STACK};

const M: u64 = 0xa000;
const N: u64 = 0xa100;
const SITE_LOCK: u64 = 0x40_1000;
const SITE_UNLOCK: u64 = 0x40_1010;

fn op(ticks: u64, primitive: Primitive, phase: Phase, object: u64, site: u64) -> RawOp {
    RawOp {
        ticks,
        object,
        site,
        primitive,
        phase,
        stack: NO_STACK,
    }
}

/// A light trace of three threads (clock: CLOCK_MONOTONIC, so ticks are
/// ns), calibrated at 7.5 ns per record and 1.6 ns per counted pair, slow
/// path 777 µs (header), the program's CPU time 10 ms:
///   T1000: 6 records;
///   T1001: 1520 counted acquisitions;
///   T1002: 4 records (two uncontended pairs), no sample of its own.
fn trace(sampled: Option<BuiltSamples>) -> TraceBuilder {
    TraceBuilder {
        pid: 1000,
        clock: CLOCK_MONOTONIC,
        light: true,
        threads: vec![
            (
                1000,
                vec![
                    op(1000, Mutex, Request, M, SITE_LOCK),
                    op(1400, Mutex, Acquired, M, SITE_LOCK),
                    op(1500, Mutex, Release, M, SITE_UNLOCK),
                    op(2000, Mutex, Untimed, M, SITE_LOCK),
                    op(2000, Mutex, Release, M, SITE_UNLOCK),
                    op(2050, Mutex, Released, M, SITE_UNLOCK),
                ],
            ),
            (
                1002,
                vec![
                    op(3000, Mutex, Immediate, N, SITE_LOCK),
                    op(3100, Mutex, Release, N, SITE_UNLOCK),
                    op(3200, Mutex, Immediate, N, SITE_LOCK),
                    op(3300, Mutex, Release, N, SITE_UNLOCK),
                ],
            ),
        ],
        counted: vec![(
            1001,
            vec![Counted {
                object: M,
                site: SITE_LOCK,
                primitive: Mutex,
                count: 1520,
            }],
        )],
        cost: (777_000, 7_500, 1_600),
        sampled,
        ..TraceBuilder::default()
    }
}

fn open(b: TraceBuilder) -> (tempfile::TempDir, Recording) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::create_dir(dir.join("locks")).unwrap();
    std::fs::write(dir.join("locks/1000.ctrace"), b.to_bytes()).unwrap();
    RunMeta {
        complete: true,
        wall_ns: Some(20_000_000),
        counters: Some(RunCounters {
            cpu_time_ns: Some(10_000_000),
            ..RunCounters::default()
        }),
        ..RunMeta::default()
    }
    .write(dir)
    .unwrap();
    let rec = Recording::open(dir).unwrap();
    (tmp, rec)
}

/// The samples of the tests below: T1000's 2 record windows, 100 ns
/// together; T1001's 4 count windows, 120 ns; the calibration's own
/// windows 20 ns per record and 15 ns per counted pair.
fn samples() -> BuiltSamples {
    BuiltSamples {
        window_record_ps: 20_000,
        window_count_ps: 15_000,
        threads: vec![
            (
                1000,
                CostSamples {
                    count: 2,
                    ticks: 100,
                },
                CostSamples::default(),
            ),
            (
                1001,
                CostSamples::default(),
                CostSamples {
                    count: 4,
                    ticks: 120,
                },
            ),
        ],
    }
}

/// With samples: T1000's 2 record windows sum to 100 ns (mean 50 ns),
/// T1001's 4 count windows to 120 ns (mean 30 ns); the calibration's own
/// windows were 20 ns per record and 15 ns per counted pair, so what the
/// windows do not hold is 7.5 − 20 = −12.5 ns per record and 1.6 − 15 =
/// −13.4 ns per counted pair:
///   T1000: 6 × (50 − 12.5)      =   225 ns
///   T1001: 1520 × (30 − 13.4)   = 25 232 ns
///   T1002: 4 × (50 − 12.5)      =   150 ns (the process's mean window:
///                                          it has no sample of its own)
///   E = 225 + 25 232 + 150 + 777 000 (slow path) = 802 607 ns
/// and the calibrated estimate beside it:
///   10 × 7.5 + 1520 × 1.6 + 777 000 = 75 + 2432 + 777 000 = 779 507 ns.
#[test]
fn sampled_estimate_is_worked_out_per_thread() {
    let (_tmp, rec) = open(trace(Some(samples())));
    let r = recording_cost(&rec);
    assert_eq!(r.cost.method.as_deref(), Some("sampled"));
    assert_eq!(r.cost.estimated_ns, Some(802_607));
    assert_eq!(r.cost.calibrated_ns, Some(779_507));
    let share = r.cost.calibrated_share.unwrap();
    assert!((share - 0.0779507).abs() < 1e-9, "{share}");
    assert_eq!(r.cost.samples, 6);
    assert_eq!(r.cost.sampled_record_ns, Some(50.0));
    assert_eq!(r.cost.sampled_counted_ns, Some(30.0));
    let cal = r.calibration.as_ref().unwrap();
    assert_eq!(
        (cal.record_window_ns, cal.counted_window_ns),
        (Some(20.0), Some(15.0))
    );
    let est = |tid: u32| {
        let t = r.by_thread.iter().find(|t| t.tid == tid).unwrap();
        (t.estimated_ns, t.samples)
    };
    assert_eq!(est(1000), (Some(225), 2));
    assert_eq!(est(1001), (Some(25_232), 4));
    assert_eq!(est(1002), (Some(150), 0));
}

/// Without the flag (a trace written before the sampling) the estimate is
/// the calibrated one, 779 507 ns as above, whatever the chunk headers'
/// reserved word holds.
#[test]
fn without_samples_the_calibrated_estimate_stays() {
    let (_tmp, rec) = open(trace(None));
    let r = recording_cost(&rec);
    assert_eq!(r.cost.method.as_deref(), Some("calibrated"));
    assert_eq!(r.cost.estimated_ns, Some(779_507));
    assert_eq!(r.cost.calibrated_ns, Some(779_507));
    assert_eq!(r.cost.samples, 0);
    assert_eq!(r.cost.sampled_record_ns, None);
    let cal = r.calibration.as_ref().unwrap();
    assert_eq!(cal.record_window_ns, None);
}

/// The same trace with the multi-threaded figures (3.5 ns per record, 0.9
/// ns per counted pair; the single-threaded ones 7.5 and 1.6 as above)
/// and T1000's chunks flagged single-threaded (its 6 records were made
/// while the process had one thread); T1001's COUNTS chunk and T1002's
/// records were not. Calibrated:
///   T1000: 6 × 7.5     =    45 ns
///   T1001: 1520 × 0.9  = 1 368 ns
///   T1002: 4 × 3.5     =    14 ns
///   E_cal = 45 + 1 368 + 14 + 777 000 = 778 427 ns.
/// Sampled (windows as above; what they do not hold is 7.5 − 20 = −12.5
/// and 3.5 − 20 = −16.5 ns per record, 0.9 − 15 = −14.1 ns per counted
/// pair on the multi-threaded paths):
///   T1000: 6 × (50 − 12.5)      =    225 ns
///   T1001: 1520 × (30 − 14.1)   = 24 168 ns
///   T1002: 4 × (50 − 16.5)      =    134 ns
///   E = 225 + 24 168 + 134 + 777 000 = 801 527 ns.
#[test]
fn operations_of_a_single_threaded_process_take_their_own_calibration() {
    let with_paths = |sampled: Option<BuiltSamples>| TraceBuilder {
        cost_mt: (3_500, 900),
        single_threaded: vec![1000],
        ..trace(sampled)
    };
    let (_tmp, rec) = open(with_paths(None));
    let r = recording_cost(&rec);
    assert_eq!(r.cost.estimated_ns, Some(778_427));
    assert_eq!(r.cost.calibrated_ns, Some(778_427));
    assert_eq!(r.cost.single_threaded_operations, 6);
    let cal = r.calibration.as_ref().unwrap();
    assert_eq!((cal.record_ns, cal.counted_pair_ns), (7.5, Some(1.6)));
    assert_eq!(
        (
            cal.multi_threaded_record_ns,
            cal.multi_threaded_counted_pair_ns
        ),
        (Some(3.5), Some(0.9))
    );

    let (_tmp, rec) = open(with_paths(Some(samples())));
    let r = recording_cost(&rec);
    assert_eq!(r.cost.method.as_deref(), Some("sampled"));
    assert_eq!(r.cost.estimated_ns, Some(801_527));
    assert_eq!(r.cost.calibrated_ns, Some(778_427));
    let est = |tid: u32| {
        r.by_thread
            .iter()
            .find(|t| t.tid == tid)
            .unwrap()
            .estimated_ns
    };
    assert_eq!(
        (est(1000), est(1001), est(1002)),
        (Some(225), Some(24_168), Some(134))
    );
}

/// A trace without the multi-threaded figures (written before they were
/// measured) costs every operation with the one calibration it has, chunk
/// flags or not: 779 507 ns as above, and no operation is said to be
/// single-threaded.
#[test]
fn without_the_multi_threaded_figures_one_calibration_stands_for_all() {
    let (_tmp, rec) = open(TraceBuilder {
        single_threaded: vec![1000],
        ..trace(None)
    });
    let r = recording_cost(&rec);
    assert_eq!(r.cost.estimated_ns, Some(779_507));
    assert_eq!(r.cost.single_threaded_operations, 0);
    let cal = r.calibration.as_ref().unwrap();
    assert_eq!(cal.multi_threaded_record_ns, None);
}
