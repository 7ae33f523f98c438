//! Hand-built operation sequences checked against results worked out by
//! hand: pairing (nesting, recursion, rwlock sharing, trylock failure,
//! timeout, unmatched/unreleased), critical-path marking (Chen & Stenström
//! as in Venter 2016, Listing 3.5) and the summary arithmetic (Table 4.9).

use contend::locks::aggregate::{aggregate, union_length, EventFilter};
use contend::locks::{
    mark_critical_path, pair_operations, EventSet, OpSource, Outcome, ThreadInput, TimeMap,
};
use contend::symbols::{ResolvedSite, Resolver};
use contend_trace::{Phase, Primitive, RawOp, NO_STACK};

use Phase::*;
use Primitive::*;

const A: u64 = 0xa000;
const B: u64 = 0xb000;
const M: u64 = 0xc000;

fn op(ns: u64, prim: Primitive, phase: Phase, object: u64) -> RawOp {
    RawOp {
        ticks: ns,
        object,
        site: 0x400000 + object / 0x1000,
        primitive: prim,
        phase,
        stack: NO_STACK,
    }
}

fn pair(threads: &[(u32, Vec<RawOp>)]) -> EventSet {
    let inputs: Vec<ThreadInput<'_>> = threads
        .iter()
        .map(|(tid, ops)| ThreadInput {
            process: 0,
            pid: 1,
            tid: *tid,
            ops: OpSource::Slice(ops),
            clock: TimeMap::Identity,
        })
        .collect();
    pair_operations(&inputs)
}

/// (object address, requested, acquired, released, contended) of every event.
fn shape(set: &EventSet) -> Vec<(u64, u64, u64, u64, bool)> {
    set.events
        .iter()
        .map(|e| {
            (
                set.objects[e.object as usize].address,
                e.requested_ns(),
                e.acquired_ns(),
                e.released_ns(),
                e.contended(),
            )
        })
        .collect()
}

struct Fake;
impl Resolver for Fake {
    fn site(&mut self, _p: u32, address: u64) -> ResolvedSite {
        ResolvedSite {
            display: format!("site{address:x}"),
            debug: "dwarf",
            ..ResolvedSite::default()
        }
    }
    fn object(&mut self, _p: u32, address: u64) -> Option<String> {
        (address == M).then(|| "queue_lock".to_string())
    }
}

#[test]
fn nested_locks_pair_innermost_first() {
    let set = pair(&[(
        1,
        vec![
            op(10, Mutex, Immediate, A),
            op(20, Mutex, Immediate, B),
            op(30, Mutex, Release, B),
            op(40, Mutex, Release, A),
        ],
    )]);
    assert_eq!(
        shape(&set),
        vec![(A, 10, 10, 40, false), (B, 20, 20, 30, false)]
    );
    let r = aggregate(
        &set,
        &mark_critical_path(&set),
        &EventFilter::default(),
        &mut Fake,
        100,
    );
    assert_eq!(r.summary.events, 2);
    assert_eq!(r.summary.hold_ns, 40);
    assert_eq!(r.summary.duration_ns, 40);
    // [10,40) ∪ [20,30) = 30 ns counted once.
    assert_eq!(r.summary.duration_once_ns, 30);
    assert_eq!(r.summary.mean_event_ns, 15);
}

#[test]
fn recursive_mutex_pairs_lifo() {
    let set = pair(&[(
        1,
        vec![
            op(0, Mutex, Immediate, M),
            op(5, Mutex, Immediate, M),
            op(7, Mutex, Release, M),
            op(10, Mutex, Release, M),
        ],
    )]);
    assert_eq!(shape(&set), vec![(M, 0, 0, 10, false), (M, 5, 5, 7, false)]);
    assert_eq!(set.unmatched_releases, 0);
}

#[test]
fn read_locks_held_by_several_threads_and_a_waiting_writer() {
    let set = pair(&[
        (
            1,
            vec![
                op(0, RwlockRead, Immediate, A),
                op(100, RwlockRead, Release, A),
            ],
        ),
        (
            2,
            vec![
                op(10, RwlockRead, Immediate, A),
                op(50, RwlockRead, Release, A),
            ],
        ),
        (
            3,
            vec![
                op(20, RwlockWrite, Request, A),
                op(100, RwlockWrite, Acquired, A),
                op(110, RwlockWrite, Release, A),
            ],
        ),
    ]);
    assert_eq!(
        shape(&set),
        vec![
            (A, 0, 0, 100, false),
            (A, 10, 10, 50, false),
            (A, 20, 100, 110, true)
        ]
    );
    // Thread 3 ends last; it waited for thread 1's release at 100 (thread
    // 2 released earlier, at 50): path = writer, then reader 1.
    let path = mark_critical_path(&set);
    assert_eq!(path.on_path.to_vec(), vec![true, false, true]);
    assert_eq!(path.jumps, 1);
    let r = aggregate(&set, &path, &EventFilter::default(), &mut Fake, 110);
    assert_eq!(r.critical_path.events, 2);
    assert_eq!(r.critical_path.wait_ns, 80);
    assert_eq!(r.critical_path.hold_ns, 100 + 10);
    assert_eq!(r.by_lock[0].kind, "rwlock");
    assert_eq!(r.by_lock[0].contended_events, 1);
}

#[test]
fn failed_trylock_and_timeout() {
    let set = pair(&[(
        1,
        vec![
            op(5, Mutex, Busy, M),
            op(10, Mutex, Request, M),
            op(1010, Mutex, Busy, M),
            op(2000, Mutex, Request, M),
            op(2001, Mutex, Error, M),
        ],
    )]);
    let outcomes: Vec<Outcome> = set.events.iter().map(|e| e.outcome()).collect();
    assert_eq!(
        outcomes,
        vec![Outcome::Busy, Outcome::TimedOut, Outcome::Error]
    );
    assert_eq!(
        shape(&set),
        vec![
            (M, 5, 5, 5, true),
            (M, 10, 1010, 1010, true),
            (M, 2000, 2001, 2001, true)
        ]
    );
    let r = aggregate(
        &set,
        &mark_critical_path(&set),
        &EventFilter::default(),
        &mut Fake,
        3000,
    );
    assert_eq!(r.summary.failed_events, 3);
    assert_eq!(r.summary.wait_ns, 1001);
    assert_eq!(r.summary.hold_ns, 0);
    assert_eq!(r.by_lock[0].name, "queue_lock");
}

#[test]
fn unmatched_release_and_unreleased_hold() {
    let set = pair(&[(
        1,
        vec![
            op(1, Mutex, Release, A),
            op(2, Mutex, Immediate, B),
            op(9, Mutex, Immediate, M),
            op(12, Mutex, Release, M),
        ],
    )]);
    assert_eq!(set.unmatched_releases, 1);
    // B is never released: held to the thread's last operation (12).
    assert_eq!(shape(&set)[0], (B, 2, 2, 12, false));
    assert!(set.events[0].unreleased());
}

/// M is handed from T1 to T2 to T3; T3 then takes N and finishes last.
/// T4 works on its own lock K and is never on the path.
fn handoff_chain() -> EventSet {
    const N: u64 = 0xd000;
    const K: u64 = 0xe000;
    pair(&[
        (
            1,
            vec![op(0, Mutex, Immediate, M), op(100, Mutex, Release, M)],
        ),
        (
            2,
            vec![
                op(10, Mutex, Request, M),
                op(100, Mutex, Acquired, M),
                op(150, Mutex, Release, M),
            ],
        ),
        (
            3,
            vec![
                op(20, Mutex, Request, M),
                op(150, Mutex, Acquired, M),
                op(200, Mutex, Release, M),
                op(210, Mutex, Immediate, N),
                op(220, Mutex, Release, N),
            ],
        ),
        (
            4,
            vec![op(30, Mutex, Immediate, K), op(40, Mutex, Release, K)],
        ),
    ])
}

#[test]
fn critical_path_follows_the_previous_owner() {
    let set = handoff_chain();
    let path = mark_critical_path(&set);
    // events: T1 M, T2 M, T3 M, T3 N, T4 K
    assert_eq!(path.on_path.to_vec(), vec![true, true, true, true, false]);
    assert_eq!(path.jumps, 2);
    assert_eq!(path.start_thread, Some(2));
    let r = aggregate(&set, &path, &EventFilter::default(), &mut Fake, 220);
    assert_eq!(r.summary.events, 5);
    assert_eq!(r.summary.contended_events, 2);
    assert_eq!(r.summary.wait_ns, 90 + 130);
    assert_eq!(r.critical_path.events, 4);
    assert_eq!(r.critical_path.wait_ns, 220);
    assert_eq!(r.critical_path.hold_ns, 100 + 50 + 50 + 10);
    assert!((r.critical_path.event_share - 0.8).abs() < 1e-12);
    // Histogram: waits 90 and 130 both in [64,128)? 90 yes, 130 in [128,256).
    let b: Vec<(u64, u64, u64)> = r
        .wait_histogram
        .iter()
        .map(|b| (b.lower_ns, b.events, b.wait_ns))
        .collect();
    assert_eq!(b, vec![(0, 3, 0), (64, 1, 90), (128, 1, 130)]);
    // Filters: critical only, then by thread, then by duration.
    let f = EventFilter {
        critical_only: true,
        ..EventFilter::default()
    };
    assert_eq!(aggregate(&set, &path, &f, &mut Fake, 220).summary.events, 4);
    let f = EventFilter {
        threads: vec![4],
        ..EventFilter::default()
    };
    assert_eq!(aggregate(&set, &path, &f, &mut Fake, 220).summary.events, 1);
    let f = EventFilter {
        min_duration_ns: Some(100),
        ..EventFilter::default()
    };
    // durations: 100, 140, 180, 10, 10
    assert_eq!(aggregate(&set, &path, &f, &mut Fake, 220).summary.events, 3);
    let f = EventFilter {
        locks: vec!["queue_lock".into()],
        ..EventFilter::default()
    };
    assert_eq!(aggregate(&set, &path, &f, &mut Fake, 220).summary.events, 3);
    let f = EventFilter {
        locks: vec![format!("{:#x}", 0xe000)],
        ..EventFilter::default()
    };
    assert_eq!(aggregate(&set, &path, &f, &mut Fake, 220).summary.events, 1);
    // Time windows (report --from/--to), by acquisition time: T1 M 0,
    // T4 K 30, T2 M 100, T3 M 150, T3 N 210.
    let window = |from_ns, to_ns, origin_ns| EventFilter {
        window: Some(contend::locks::TimeWindow {
            from_ns,
            to_ns,
            origin_ns,
        }),
        ..EventFilter::default()
    };
    let n = |f: &EventFilter| aggregate(&set, &path, f, &mut Fake, 220).summary.events;
    assert_eq!(n(&window(100, Some(200), 0)), 2, "[100, 200): T2 M, T3 M");
    assert_eq!(n(&window(30, None, 0)), 4, "from 30 on");
    assert_eq!(n(&window(100, Some(161), 50)), 2, "[150, 211): T3 M, T3 N");
    assert_eq!(n(&window(0, Some(30), 0)), 1, "the end is excluded");
    // anchoring moves the origin, nothing else
    let f = window(100, Some(161), 0).anchored(50);
    assert_eq!(f.window.unwrap().origin_ns, 50);
    assert_eq!(
        f.describe(),
        vec!["acquired from 0.000 s to 0.000 s after the start".to_string()]
    );
}

#[test]
fn critical_path_crosses_a_barrier_to_the_last_arrival() {
    const BAR: u64 = 0xf000;
    let set = pair(&[
        (
            1,
            vec![
                op(0, Barrier, Request, BAR),
                op(101, Barrier, Acquired, BAR),
                op(200, Mutex, Immediate, A),
                op(210, Mutex, Release, A),
            ],
        ),
        (
            2,
            vec![
                op(50, Mutex, Immediate, B),
                op(60, Mutex, Release, B),
                op(100, Barrier, Request, BAR),
                op(101, Barrier, Acquired, BAR),
            ],
        ),
    ]);
    // events: T1 barrier, T1 A, T2 B, T2 barrier
    let path = mark_critical_path(&set);
    assert_eq!(path.on_path.to_vec(), vec![true, true, true, false]);
    let r = aggregate(&set, &path, &EventFilter::default(), &mut Fake, 210);
    assert_eq!(r.other_waits.len(), 1);
    assert_eq!(r.other_waits[0].kind, "barrier");
    assert_eq!(r.other_waits[0].wait_ns, 101 + 1);
    assert_eq!(r.other_waits[0].critical_wait_ns, 101);
    // Barrier waits are not lock events.
    assert_eq!(r.summary.events, 2);
}

#[test]
fn condition_wait_follows_the_signaller_unlocking_the_mutex() {
    const C: u64 = 0x1c000;
    let set = pair(&[
        // Consumer: lock M, wait on C (releases M), woken, M re-acquired.
        (
            1,
            vec![
                op(0, Mutex, Immediate, M),
                op(5, Mutex, Release, M),
                op(5, Cond, Request, C),
                op(300, Cond, Acquired, C),
                op(300, Mutex, Immediate, M),
                op(310, Mutex, Release, M),
            ],
        ),
        // Producer: works under A, then locks M, signals, unlocks at 290.
        (
            2,
            vec![
                op(100, Mutex, Immediate, A),
                op(200, Mutex, Release, A),
                op(280, Mutex, Immediate, M),
                op(290, Mutex, Release, M),
            ],
        ),
    ]);
    // events: T1 M(0..5), T1 cond, T1 M(300..310), T2 A, T2 M
    let path = mark_critical_path(&set);
    assert_eq!(path.on_path.to_vec(), vec![false, true, true, true, true]);
}

#[test]
fn semaphore_wait_follows_the_post() {
    const S: u64 = 0x5e000;
    let set = pair(&[
        (
            1,
            vec![
                op(0, Semaphore, Request, S),
                op(500, Semaphore, Acquired, S),
            ],
        ),
        (
            2,
            vec![
                op(100, Mutex, Immediate, A),
                op(400, Mutex, Release, A),
                op(499, Semaphore, Release, S),
            ],
        ),
    ]);
    let path = mark_critical_path(&set);
    // events: T1 sem wait, T2 A, T2 post
    assert_eq!(path.on_path.to_vec(), vec![true, true, false]);
    let r = aggregate(&set, &path, &EventFilter::default(), &mut Fake, 500);
    assert_eq!(r.other_waits[0].kind, "semaphore");
    assert_eq!(r.other_waits[0].events, 1, "posts are not waits");
}

#[test]
fn join_follows_the_joined_thread_from_its_end_and_not_one_that_ended_before() {
    // T1 (main) joins X, then Y, then takes L; X ended during the join of
    // X, Y ended (300) before its join began (905).
    //   T1: L 0–10; join X requested 20, returned 900; join Y 905–910; L 950–960
    //   T2 (X): M 100–800; its end (post of X) at 850
    //   T3 (Y): N 50–200; its end (post of Y) at 300
    // Worked out by hand: the walk starts at T1 (last operation 960): L@950
    // on the path; join Y waited 5 ns but nothing ended during it (Y's end
    // at 300 < 905): no hand-over; join X: X's end at 850 lies in 20..900,
    // so the walk jumps to T2 at 850: M on the path, then T2's beginning
    // ends the walk. T1's L@0 and T3's N are off the path; posts are never
    // on it. 1 jump; critical wait = join X 880 + join Y 5.
    const X: u64 = 0x7f00_0000_1000;
    const Y: u64 = 0x7f00_0000_2000;
    const L: u64 = 0xd000;
    const N: u64 = 0xe000;
    let set = pair(&[
        (
            1,
            vec![
                op(0, Mutex, Immediate, L),
                op(10, Mutex, Release, L),
                op(20, Join, Request, X),
                op(900, Join, Acquired, X),
                op(905, Join, Request, Y),
                op(910, Join, Acquired, Y),
                op(950, Mutex, Immediate, L),
                op(960, Mutex, Release, L),
            ],
        ),
        (
            2,
            vec![
                op(100, Mutex, Immediate, M),
                op(800, Mutex, Release, M),
                op(850, Join, Release, X),
            ],
        ),
        (
            3,
            vec![
                op(50, Mutex, Immediate, N),
                op(200, Mutex, Release, N),
                op(300, Join, Release, Y),
            ],
        ),
    ]);
    // events: T1 L, join X, join Y, L; T2 M, end X; T3 N, end Y
    let path = mark_critical_path(&set);
    assert_eq!(
        path.on_path.to_vec(),
        vec![false, true, true, true, true, false, false, false]
    );
    assert_eq!(path.jumps, 1);
    let r = aggregate(&set, &path, &EventFilter::default(), &mut Fake, 960);
    assert_eq!(r.other_waits.len(), 1);
    let joins = &r.other_waits[0];
    assert_eq!(joins.kind, "join");
    assert_eq!(joins.events, 2, "a thread's end is not a wait");
    assert_eq!(joins.wait_ns, 880 + 5);
    assert_eq!(joins.critical_wait_ns, 880 + 5);
}

#[test]
fn union_length_by_hand() {
    let mut v = vec![(10, 20), (0, 5), (15, 30), (40, 41)];
    assert_eq!(union_length(&mut v), 5 + 20 + 1);
    assert_eq!(union_length(&mut []), 0);
}

#[test]
fn a_joined_thread_is_named_by_its_tids_and_a_much_reused_pthread_t_briefly() {
    // Threads 2–6 end one after the other on the same pthread_t X (a
    // program that starts its threads one batch at a time reuses a few
    // pthread_t values for all of them); threads 7 and 8 on Y.
    const X: u64 = 0x7f00_0000_1000;
    const Y: u64 = 0x7f00_0000_2000;
    let mut threads = vec![(
        1,
        (0..7)
            .flat_map(|i| {
                let (o, t) = if i < 5 { (X, 1000 * i) } else { (Y, 1000 * i) };
                [op(t + 10, Join, Request, o), op(t + 900, Join, Acquired, o)]
            })
            .collect::<Vec<_>>(),
    )];
    for (k, tid) in (2..=8).enumerate() {
        let o = if tid <= 6 { X } else { Y };
        threads.push((tid, vec![op(1000 * k as u64 + 800, Join, Release, o)]));
    }
    let set = pair(&threads);
    let mut names: Vec<String> = set
        .objects
        .iter()
        .map(|o| format!("{:#x}", o.address))
        .collect();
    contend::locks::creation::name_joined_threads(&set, &mut names);
    let name_of = |a: u64| {
        let i = set.objects.iter().position(|o| o.address == a).unwrap();
        names[i].clone()
    };
    assert_eq!(
        name_of(X),
        "thread 2, 3, 4 and 2 more (one pthread_t reused)"
    );
    assert_eq!(name_of(Y), "thread 7, 8");
}
