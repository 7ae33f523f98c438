//! Trace format version 2 in the lock analysis, on hand-built traces with
//! results worked out by hand: the wake cost (the time inside releases that
//! found waiters, HaLock Section 4.3), light recordings (counted
//! uncontended acquisitions, UNTIMED holds, what the report says is exact)
//! and the recording-cost estimate.

use std::path::Path;

use contend::locks::aggregate::{aggregate, EventFilter};
use contend::locks::{
    mark_critical_path, pair_operations, EventSet, OpSource, ThreadInput, TimeMap,
};
use contend::symbols::{ResolvedSite, Resolver};
use contend_trace::format::{count::BY_SITE, CLOCK_MONOTONIC};
use contend_trace::Phase::{Acquired, Immediate, Release, Released, Request, Untimed};
use contend_trace::Primitive::{self, Mutex, Semaphore};
use contend_trace::{Counted, LockTrace, Phase, RawOp, TraceBuilder, NO_STACK};

const M: u64 = 0xa000;
const S: u64 = 0xb000;
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

/// Names every site `site<address>` (with debug information) and every
/// object `obj<address>`; also used by `locks_equivalence`.
pub(crate) struct Names;
impl Resolver for Names {
    fn site(&mut self, _p: u32, address: u64) -> ResolvedSite {
        ResolvedSite {
            display: format!("site{address:x}"),
            debug: "dwarf",
            ..ResolvedSite::default()
        }
    }
    fn object(&mut self, _p: u32, address: u64) -> Option<String> {
        Some(format!("obj{address:x}"))
    }
}

fn decode(b: TraceBuilder) -> LockTrace {
    LockTrace::decode(Path::new("t.ctrace"), &b.to_bytes()).unwrap()
}

fn pair_trace(trace: &LockTrace) -> EventSet {
    let inputs: Vec<ThreadInput<'_>> = trace
        .threads
        .iter()
        .map(|t| ThreadInput {
            process: 0,
            pid: 1,
            tid: t.tid,
            ops: OpSource::Trace(trace, t),
            clock: TimeMap::Identity,
        })
        .collect();
    pair_operations(&inputs)
}

/// T1 holds M from 0 to 100 while T2 waits (requested 50); T1's unlock
/// found T2 waiting and returned at 130: wake cost 130 − 100 = 30 ns. T2
/// holds M 135..200 and its unlock found waiters again (say, a third
/// thread), returning at 260: 60 ns. A semaphore post at 300 that found a
/// waiter returned at 310: 10 ns. A RELEASED that does not follow a
/// RELEASE of the same object (damage) is ignored.
///   M: 2 wakes, 30 + 60 = 90 ns, max 60; S: 1 wake, 10 ns.
#[test]
fn wake_cost_is_the_time_from_release_to_released() {
    let trace = decode(TraceBuilder {
        clock: CLOCK_MONOTONIC,
        threads: vec![
            (
                1,
                vec![
                    op(0, Mutex, Immediate, M, SITE_LOCK),
                    op(100, Mutex, Release, M, SITE_UNLOCK),
                    op(130, Mutex, Released, M, SITE_UNLOCK),
                    op(300, Semaphore, Release, S, SITE_UNLOCK),
                    op(310, Semaphore, Released, S, SITE_UNLOCK),
                    op(320, Mutex, Released, M, SITE_UNLOCK),
                ],
            ),
            (
                2,
                vec![
                    op(50, Mutex, Request, M, SITE_LOCK),
                    op(135, Mutex, Acquired, M, SITE_LOCK),
                    op(200, Mutex, Release, M, SITE_UNLOCK),
                    op(260, Mutex, Released, M, SITE_UNLOCK),
                ],
            ),
        ],
        ..TraceBuilder::default()
    });
    let set = pair_trace(&trace);
    let path = mark_critical_path(&set);
    let r = aggregate(&set, &path, &EventFilter::default(), &mut Names, 400);
    assert_eq!(r.summary.events, 2);
    assert_eq!(r.summary.releases_with_waiters, 3);
    assert_eq!(r.summary.wake_ns, 100);
    let m = r.by_lock.iter().find(|l| l.name == "obja000").unwrap();
    assert_eq!(
        (m.releases_with_waiters, m.wake_ns, m.max_wake_ns),
        (2, 90, 60)
    );
    // The hold still ends at the RELEASE, before the wake: 0..100 and
    // 135..200 = 165 ns.
    assert_eq!(m.hold_ns, 165);
    assert!(r.light.is_none());
}

/// One contended acquisition of M at SITE_LOCK: requested at 1000,
/// acquired at 1400, released at 1500 (at SITE_UNLOCK).
/// `count` uncontended acquisitions of mutex `object` at `site`.
fn counted(object: u64, site: u64, count: u64) -> Counted {
    Counted {
        object,
        site,
        primitive: Mutex,
        count,
    }
}

fn contended_m() -> Vec<RawOp> {
    vec![
        op(1000, Mutex, Request, M, SITE_LOCK),
        op(1400, Mutex, Acquired, M, SITE_LOCK),
        op(1500, Mutex, Release, M, SITE_UNLOCK),
    ]
}

/// A light recording: T1 was counted 1000 uncontended acquisitions of M at
/// SITE_LOCK and recorded one contended acquisition (request 1000,
/// acquired 1400, released 1500) and one counted hold whose release at 2000
/// woke a waiter (UNTIMED at 2000, RELEASE at 2000, RELEASED at 2050). T2
/// (counts only) was counted 500 of M at SITE_LOCK and 20 sem_waits of S.
///   lock events = 1000 + 500 counted + 2 recorded = 1502, contended 1;
///   wait = 1400 − 1000 = 400 ns; hold = 100 (contended) + 0 (untimed);
///   per site SITE_LOCK: 1502 events, of which 1500 counted;
///   semaphore waits: 20; wake cost 50 ns.
#[test]
fn light_recording_counts_and_says_what_is_exact() {
    let trace = decode(TraceBuilder {
        clock: CLOCK_MONOTONIC,
        light: true,
        threads: vec![(
            1,
            [
                contended_m(),
                vec![
                    op(2000, Mutex, Untimed, M, SITE_LOCK),
                    op(2000, Mutex, Release, M, SITE_UNLOCK),
                    op(2050, Mutex, Released, M, SITE_UNLOCK),
                ],
            ]
            .concat(),
        )],
        counted: vec![
            (
                1,
                vec![Counted {
                    object: M,
                    site: SITE_LOCK,
                    primitive: Mutex,
                    count: 1000,
                }],
            ),
            (
                2,
                vec![
                    Counted {
                        object: M,
                        site: SITE_LOCK,
                        primitive: Mutex,
                        count: 500,
                    },
                    Counted {
                        object: S,
                        site: SITE_LOCK + 0x40,
                        primitive: Semaphore,
                        count: 20,
                    },
                ],
            ),
        ],
        ..TraceBuilder::default()
    });
    let set = pair_trace(&trace);
    assert!(set.light);
    assert_eq!(set.untimed_events, 1);
    let path = mark_critical_path(&set);
    let r = aggregate(&set, &path, &EventFilter::default(), &mut Names, 3000);
    let s = &r.summary;
    assert_eq!(
        (s.events, s.contended_events, s.wait_ns, s.hold_ns),
        (1502, 1, 400, 100)
    );
    assert_eq!((s.releases_with_waiters, s.wake_ns), (1, 50));
    let site = r
        .by_site
        .iter()
        .find(|x| x.display == format!("site{SITE_LOCK:x}"))
        .unwrap();
    assert_eq!((site.events, site.counted_events), (1502, 1500));
    let t2 = r.by_thread.iter().find(|t| t.tid == 2).unwrap();
    assert_eq!((t2.events, t2.counted_events), (500, 500));
    let sem = r
        .other_waits
        .iter()
        .find(|w| w.kind == "semaphore")
        .unwrap();
    assert_eq!((sem.events, sem.contended_events), (20, 0));
    let note = r.light.as_ref().expect("a light recording says so");
    assert_eq!((note.counted_events, note.untimed_events), (1520, 1));
    assert!(note.approximate.iter().any(|a| a.contains("hold time")));
    assert!(note.approximate.iter().any(|a| a.contains("critical path")));
    // Counted acquisitions follow the lock, site and thread filters, and
    // have no place on the critical path.
    let only_t2 = EventFilter {
        threads: vec![2],
        ..EventFilter::default()
    };
    assert_eq!(
        aggregate(&set, &path, &only_t2, &mut Names, 3000)
            .summary
            .events,
        500
    );
    let critical = EventFilter {
        critical_only: true,
        ..EventFilter::default()
    };
    let rc = aggregate(&set, &path, &critical, &mut Names, 3000);
    assert!(rc.summary.events <= 2, "{:?}", rc.summary);
}

/// A light recording whose T2 took more (lock, call site) pairs than its
/// count table keeps one by one: besides the contended acquisition of M by
/// T1 (above) and 300 counted of M at SITE_LOCK by T2, T2 was counted 700
/// acquisitions at SITE_LOCK and 50 at SITE_LOCK + 0x20 of locks it kept
/// no entry for (`BY_SITE`).
///   lock events = 1 + 300 + 700 + 50 = 1051, counted 1050, 750 by site;
///   M's row: 1 + 300 = 301 (the by-site acquisitions in no lock's row);
///   SITE_LOCK: 1 + 300 + 700 = 1001; SITE_LOCK + 0x20: 50; T2: 1050;
///   with a lock filter naming M: 301 (the by-site ones left out);
///   with a site filter on SITE_LOCK + 0x20: 50.
#[test]
fn acquisitions_counted_by_site_are_in_the_site_and_thread_tables_not_the_lock_rows() {
    let trace = decode(TraceBuilder {
        clock: CLOCK_MONOTONIC,
        light: true,
        threads: vec![(1, contended_m())],
        counted: vec![(
            2,
            vec![
                counted(M, SITE_LOCK, 300),
                counted(BY_SITE, SITE_LOCK, 700),
                counted(BY_SITE, SITE_LOCK + 0x20, 50),
            ],
        )],
        ..TraceBuilder::default()
    });
    let set = pair_trace(&trace);
    assert_eq!(set.objects.len(), 1, "a by-site count names no object");
    let path = mark_critical_path(&set);
    let r = aggregate(&set, &path, &EventFilter::default(), &mut Names, 3000);
    assert_eq!((r.summary.events, r.summary.contended_events), (1051, 1));
    assert_eq!(r.by_lock.len(), 1);
    assert_eq!(
        (r.by_lock[0].events, r.by_lock[0].counted_events),
        (301, 300)
    );
    let site = |r: &contend::locks::LockReport, address: u64| {
        r.by_site
            .iter()
            .find(|x| x.display == format!("site{address:x}"))
            .map(|x| (x.events, x.counted_events))
    };
    assert_eq!(site(&r, SITE_LOCK), Some((1001, 1000)));
    assert_eq!(site(&r, SITE_LOCK + 0x20), Some((50, 50)));
    let t2 = r.by_thread.iter().find(|t| t.tid == 2).unwrap();
    assert_eq!((t2.events, t2.counted_events), (1050, 1050));
    let note = r.light.as_ref().unwrap();
    assert_eq!(
        (note.counted_events, note.counted_by_site_events),
        (1050, 750)
    );
    assert!(note
        .approximate
        .iter()
        .any(|a| a.starts_with("750 uncontended acquisition(s) were counted by call site")));
    let only_m = EventFilter {
        locks: vec!["obja000".into()],
        ..EventFilter::default()
    };
    let rm = aggregate(&set, &path, &only_m, &mut Names, 3000);
    assert_eq!(rm.summary.events, 301);
    assert_eq!(rm.light.as_ref().unwrap().counted_by_site_events, 0);
    let second_site = EventFilter {
        site_pattern: Some(regex::Regex::new(&format!("^site{:x}$", SITE_LOCK + 0x20)).unwrap()),
        ..EventFilter::default()
    };
    let rs = aggregate(&set, &path, &second_site, &mut Names, 3000);
    assert_eq!(rs.summary.events, 50);
}

/// A light trace's recorded uncontended acquisitions are split by why
/// they were recorded. T1 waits on condition C with M counted (UNTIMED +
/// RELEASE of M at the wait, the wait 100..500), takes M back at once at
/// the wait's call site (IMMEDIATE: the re-acquisition, recorded by
/// design) and releases it; then takes X at once, recorded in full (as
/// for want of a count entry), and releases it.
///   untimed 1; condition re-acquisitions 1; recorded uncontended
///   acquisitions for want of an entry: 3 uncontended recorded − 1 − 1 = 1.
#[test]
fn mutexes_taken_back_after_condition_waits_are_not_records_for_want_of_an_entry() {
    const C: u64 = 0xe000;
    const X: u64 = 0xf000;
    const SITE_WAIT: u64 = 0x40_2000;
    let trace = decode(TraceBuilder {
        clock: CLOCK_MONOTONIC,
        light: true,
        threads: vec![(
            1,
            vec![
                op(100, Mutex, Untimed, M, SITE_LOCK),
                op(100, Mutex, Release, M, SITE_WAIT),
                op(100, Primitive::Cond, Request, C, SITE_WAIT),
                op(500, Primitive::Cond, Acquired, C, SITE_WAIT),
                op(510, Mutex, Immediate, M, SITE_WAIT),
                op(600, Mutex, Release, M, SITE_UNLOCK),
                op(700, Mutex, Immediate, X, SITE_LOCK),
                op(800, Mutex, Release, X, SITE_UNLOCK),
            ],
        )],
        counted: vec![(1, vec![counted(M, SITE_LOCK, 5)])],
        ..TraceBuilder::default()
    });
    let set = pair_trace(&trace);
    assert_eq!((set.untimed_events, set.cond_reacquisitions), (1, 1));
    let path = mark_critical_path(&set);
    let r = aggregate(&set, &path, &EventFilter::default(), &mut Names, 1000);
    let note = r.light.as_ref().unwrap();
    assert_eq!(note.recorded_uncontended_events, 1, "{note:?}");
}

/// The recording-cost estimate, worked out by hand: a light trace with
/// 6 records (see above) and 1520 counted acquisitions, calibrated at
/// 7.5 ns per record and 1.6 ns per counted pair, whose slow path took
/// 777 µs of CPU time; the program's CPU time was 10 ms.
///   E = 6 × 7.5 + 1520 × 1.6 + 777 000 = 45 + 2432 + 777 000 = 779 477 ns
///   share = 779 477 / 10 000 000 = 7.79 % > 5 %: a warning.
#[test]
fn recording_cost_is_records_counts_and_slow_path() {
    use contend::recording::Recording;
    use contend::recording_cost::recording_cost;
    use contend_trace::counters::RunCounters;
    use contend_trace::meta::RunMeta;

    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::create_dir(dir.join("locks")).unwrap();
    let b = TraceBuilder {
        pid: 1000,
        clock: CLOCK_MONOTONIC,
        light: true,
        threads: vec![(
            1000,
            vec![
                op(1000, Mutex, Request, M, SITE_LOCK),
                op(1400, Mutex, Acquired, M, SITE_LOCK),
                op(1500, Mutex, Release, M, SITE_UNLOCK),
                op(2000, Mutex, Untimed, M, SITE_LOCK),
                op(2000, Mutex, Release, M, SITE_UNLOCK),
                op(2050, Mutex, Released, M, SITE_UNLOCK),
            ],
        )],
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
        ..TraceBuilder::default()
    };
    std::fs::write(dir.join("locks/1000.ctrace"), b.to_bytes()).unwrap();
    let meta = RunMeta {
        complete: true,
        wall_ns: Some(20_000_000),
        counters: Some(RunCounters {
            cpu_time_ns: Some(10_000_000),
            ..RunCounters::default()
        }),
        ..RunMeta::default()
    };
    meta.write(dir).unwrap();
    let rec = Recording::open(dir).unwrap();
    let r = recording_cost(&rec);
    assert_eq!(r.mode, "light");
    assert_eq!(
        (r.cost.records, r.cost.counted, r.cost.operations),
        (6, 1520, 1526)
    );
    // 6 records × 8 bytes + 1 count entry × 32 bytes
    assert_eq!(r.cost.bytes, 48 + 32);
    assert_eq!(r.cost.estimated_ns, Some(779_477));
    assert_eq!(r.cost.share_of, "cpu_time");
    let share = r.cost.estimated_share.unwrap();
    assert!((share - 0.0779477).abs() < 1e-9, "{share}");
    let w = r.warning.as_deref().expect("above 5 %: a warning");
    assert!(w.contains("7.8 %") && w.contains("distorted"), "{w}");
    // Already light: no advice to use --light; the slow path (all of it
    // outside the threads' chunks here) is most of the estimate, and the
    // warning says that fixed work is what costs.
    assert!(!w.contains("try `contend record --light`"), "{w}");
    assert_eq!(r.cost.fixed_slow_path_ns, 777_000);
    assert!(
        w.contains("most of it (777 µs of 779 µs) is the collector's fixed work"),
        "{w}"
    );
    // Per thread: T1000 has the 6 records (45 ns), T1001 the counts (2432 ns).
    let t1001 = r.by_thread.iter().find(|t| t.tid == 1001).unwrap();
    assert_eq!(t1001.estimated_ns, Some(2432));
    let cal = r.calibration.unwrap();
    assert_eq!((cal.record_ns, cal.counted_pair_ns), (7.5, Some(1.6)));
}

/// Objects and sites are numbered thread after thread, each thread's
/// recorded ones in the order first used and then those it only counted,
/// in the order the trace lists its counts. T1 records M at SITE_LOCK and
/// counts X at 0x50 and Y at 0x60; T2 counts Y at 0x60 and M at
/// SITE_LOCK (the reader lists T2 first: Y, M, X); every count names its
/// own object and site.
#[test]
fn counted_objects_are_numbered_after_the_recorded_ones() {
    const X: u64 = 0xc000;
    const Y: u64 = 0xd000;
    let trace = decode(TraceBuilder {
        clock: CLOCK_MONOTONIC,
        light: true,
        threads: vec![(1, contended_m())],
        counted: vec![
            (1, vec![counted(X, 0x50, 7), counted(Y, 0x60, 8)]),
            (
                2,
                vec![
                    counted(Y, 0x60, 9),
                    counted(BY_SITE, 0x70, 11),
                    counted(M, SITE_LOCK, 10),
                ],
            ),
        ],
        ..TraceBuilder::default()
    });
    let set = pair_trace(&trace);
    // Thread after thread in the order the reader lists them, each
    // thread's counts in the order it lists them.
    let (mut objects, mut sites) = (Vec::new(), Vec::new());
    let mut add = |object: u64, site: u64| {
        // a by-site count has no object
        if object != BY_SITE && !objects.contains(&object) {
            objects.push(object);
        }
        if !sites.contains(&site) {
            sites.push(site);
        }
    };
    for t in &trace.threads {
        if t.tid == 1 {
            add(M, SITE_LOCK);
            add(M, SITE_UNLOCK);
        }
        for c in &t.counted {
            add(c.object, c.site);
        }
    }
    assert_eq!(objects.len(), 3);
    let got: Vec<u64> = set.objects.iter().map(|k| k.address).collect();
    assert_eq!(got, objects);
    let got: Vec<u64> = set.sites.iter().map(|k| k.address).collect();
    assert_eq!(got, sites);
    for c in &set.counted {
        let want = match c.count {
            7 => (X, 0x50),
            8 | 9 => (Y, 0x60),
            10 => (M, SITE_LOCK),
            11 => (BY_SITE, 0x70),
            n => panic!("unexpected count {n}"),
        };
        let have = (
            c.object
                .map_or(BY_SITE, |o| set.objects[o as usize].address),
            set.sites[c.site as usize].address,
        );
        assert_eq!(have, want, "count {}", c.count);
    }
}
