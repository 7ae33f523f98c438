//! The critical path across recorders (docs/critical-path.md,
//! `contend::locks::across`): futex hand-overs (a woken FUTEX_WAIT and the
//! FUTEX_WAKE that ended it) and OpenMP hand-overs (release → next
//! acquisition, last barrier arrival → the waiters) as edges of the one
//! path, beside pthread hand-overs. Hand-built events, paths worked out by
//! hand in the comments.

use contend::futex::{match_wakers, pair_thread as futex_pair, FutexEvents};
use contend::locks::across::{mark_across, summarize, Source};
use contend::locks::{
    mark_critical_path, pair_operations, EventSet, OpSource, ThreadInput, TimeMap,
};
use contend::openmp::sync::{finish, pair_thread as omp_pair, OmpSyncBuilder, OmpSyncEvents};
use contend_trace::format::{futex as fx, omp as ev};
use contend_trace::{FutexOp, OmpOp, Phase, Primitive, RawOp, NO_STACK};

fn lock_op(ns: u64, phase: Phase, object: u64) -> RawOp {
    RawOp {
        ticks: ns,
        object,
        site: 0x400000,
        primitive: Primitive::Mutex,
        phase,
        stack: NO_STACK,
    }
}

fn pthread_events(threads: &[(u32, Vec<RawOp>)]) -> EventSet {
    let inputs: Vec<ThreadInput<'_>> = threads
        .iter()
        .map(|(tid, ops)| ThreadInput {
            process: 0,
            pid: 7,
            tid: *tid,
            ops: OpSource::Slice(ops),
            clock: TimeMap::Identity,
        })
        .collect();
    pair_operations(&inputs)
}

fn fop(ticks: u64, word: u64, phase: Phase, cmd: u8, value: i32) -> FutexOp {
    FutexOp {
        ticks,
        word,
        site: 0x500000,
        phase,
        cmd,
        private: true,
        value,
        stack: NO_STACK,
    }
}

/// A wait on `word` from `a` to `b`, ending as `end` (value = errno or 0).
fn wait(a: u64, b: u64, word: u64, end: Phase, value: i32) -> [FutexOp; 2] {
    [
        fop(a, word, Phase::Request, fx::CMD_WAIT, 0),
        fop(b, word, end, fx::CMD_WAIT, value),
    ]
}

/// A FUTEX_WAKE of `word` from `a` to `b` that woke `woken`.
fn wake(a: u64, b: u64, word: u64, woken: i32) -> [FutexOp; 2] {
    [
        fop(a, word, Phase::Release, fx::CMD_WAKE, 0),
        fop(b, word, Phase::Released, fx::CMD_WAKE, woken),
    ]
}

const A: u64 = 0xa0;
const B: u64 = 0xb0;
const C: u64 = 0xc0;
const M: u64 = 0xd000;

/// A token handed over through futex words across three threads, with a
/// pthread mutex hand-over before it (ns):
///
/// ```text
/// T5: M acquired 0 (uncontended), released 40
/// T1: M requested 5, acquired 40 (waited for T5), released 90;
///     FUTEX_WAKE(A) 100–110, woke 1
/// T2: FUTEX_WAIT(A) 10 → 150 woken; FUTEX_WAKE(B) 300–305, woke 1
/// T3: FUTEX_WAIT(B) 20 → 350 woken; FUTEX_WAIT(C) 400 → 420 EAGAIN
/// T4: FUTEX_WAKE(A) 5–8, woke 0; FUTEX_WAIT(B) 30 → 200 ETIMEDOUT
/// ```
///
/// Wakers (`match_wakers`): T2's wait ← T1's wake of A (the latest wake
/// of A by another thread that began before 150 and woke somebody: T4's
/// woke nobody); T3's wait on B ← T2's wake of B. The last operations:
/// T1 110, T2 305, T3 420, T4 200, T5 40: the walk starts on T3 at 420.
/// T3: wait C (on the path, no waker: begin 400), wait B (on the path,
/// woken by T2 at 300: jump). T2 from 300: wait A (on the path, woken by
/// T1 at 100: jump). T1 from 100: M (on the path; contended, T5 released
/// it at 40: a pthread jump). T5 from 40: M (on the path, no waker: begin
/// 0). Path: 3 futex waits (wait 20 + 330 + 140 = 490 ns), 2 pthread
/// events, 2 futex jumps + 1 pthread jump; length 420 − 0 = 420 ns. T4's
/// timed-out wait is off the path.
#[test]
fn futex_hand_over_chain_across_three_threads() {
    let set = pthread_events(&[
        (
            5,
            vec![
                lock_op(0, Phase::Immediate, M),
                lock_op(40, Phase::Release, M),
            ],
        ),
        (
            1,
            vec![
                lock_op(5, Phase::Request, M),
                lock_op(40, Phase::Acquired, M),
                lock_op(90, Phase::Release, M),
            ],
        ),
    ]);
    let mut fe = FutexEvents::default();
    let t1: Vec<FutexOp> = wake(100, 110, A, 1).into();
    let t2: Vec<FutexOp> = [wait(10, 150, A, Phase::Acquired, 0), wake(300, 305, B, 1)].concat();
    let t3: Vec<FutexOp> = [
        wait(20, 350, B, Phase::Acquired, 0),
        wait(400, 420, C, Phase::Error, 11),
    ]
    .concat();
    let t4: Vec<FutexOp> = [wake(5, 8, A, 0), wait(30, 200, B, Phase::Busy, 110)].concat();
    for (tid, ops) in [(1u32, &t1), (2, &t2), (3, &t3), (4, &t4)] {
        futex_pair(0, 7, tid, ops.iter().copied(), |t| t, 1000, &mut fe);
    }
    match_wakers(&mut fe);
    // waits in thread order: T2 A, T3 B, T3 C, T4 B
    let wakers: Vec<Option<u32>> = fe.waits.iter().map(|w| w.waker()).collect();
    // wakes in thread order: T1 A, T2 B, T4 A
    assert_eq!(wakers, [Some(0), Some(1), None, None]);

    let path = mark_across(&set, &fe, &OmpSyncEvents::default(), &[]);
    assert_eq!(path.start, Some((7, 3)));
    assert_eq!(path.futex_on_path, [true, true, true, false]);
    // pthread events: T5 M, T1 M (thread order of pair_operations)
    assert_eq!(path.locks.on_path.to_vec(), [true, true]);
    assert_eq!(path.locks.jumps, 1);
    let chain: Vec<(Source, u32, u32)> = path
        .hand_overs
        .iter()
        .map(|h| (h.source, h.from.1, h.to.1))
        .collect();
    assert_eq!(
        chain,
        [
            (Source::Futex, 2, 3),
            (Source::Futex, 1, 2),
            (Source::Lock, 5, 1)
        ]
    );
    assert_eq!(path.hand_overs[0].at_ns, 300);
    assert_eq!(path.hand_overs[1].at_ns, 100);
    assert_eq!(path.hand_overs[2].at_ns, 40);
    assert_eq!(
        (path.begin_ns, path.end_ns, path.length_ns()),
        (0, 420, 420)
    );

    let s = summarize(&path, &set, &fe, &OmpSyncEvents::default(), |src, i| {
        (format!("{src:?}{i}"), None)
    });
    assert_eq!((s.start_pid, s.start_tid), (7, 3));
    assert_eq!((s.events, s.jumps), (5, 3));
    assert_eq!((s.lock_events, s.lock_jumps), (2, 1));
    assert_eq!((s.futex_events, s.futex_jumps), (3, 2));
    assert_eq!(s.futex_wait_ns, 20 + 330 + 140);
    assert_eq!(s.length_ns, 420);
    assert_eq!(s.hand_overs.len(), 3);
    // one each, so by wait: T2 → T3 (330 ns) first
    assert_eq!(
        (
            s.hand_overs[0].from_tid,
            s.hand_overs[0].to_tid,
            s.hand_overs[0].wait_ns
        ),
        (2, 3, 330)
    );
}

fn oop(ticks: u64, event: u8, kind: u8, object: u64, site: u64, value: u32) -> OmpOp {
    OmpOp {
        ticks,
        object,
        site,
        event,
        kind,
        value,
    }
}

/// An OpenMP critical section L and the implicit barrier of one parallel
/// region (instance 9, construct site 0x600), three threads (ns):
///
/// ```text
/// T1 (master): parallel begin 0; critical L acquire 10, acquired 10,
///              released 50; arrives at the implicit barrier 60
/// T2: critical L acquire 20, acquired 50 (waited for T1), released 200;
///     arrives at the barrier 210 (the last arrival)
/// T3: arrives at the barrier 30; then critical L2 220–260, no wait
/// ```
///
/// The barrier completes at 210: T1 waits 60 → 210, T3 30 → 210, both let
/// go by T2's arrival at 210; T2 does not wait. T2's acquisition of L is
/// let go by T1's release at 50 (inside its wait 20–50).
/// Last operations: T1 210, T2 210, T3 260: the walk starts on T3 at 260.
/// T3: L2 (on the path, begin 220), its barrier wait (on the path; the
/// last arrival was T2's at 210: jump). T2 from 210: its barrier event
/// (on the path, no waker), L (on the path; T1 released it at 50: jump).
/// T1 from 50: L (on the path, no wait: begin 10). T1's barrier wait
/// (acquired 210 > 50) is off the path. On the path: 5 OpenMP events,
/// wait 0 + 180 + 0 + 30 + 0 = 210 ns, 2 OpenMP jumps; length 260 − 10 =
/// 250 ns.
#[test]
fn barrier_last_arriver_and_critical_release_on_the_path() {
    const L: u64 = 0x1000;
    const L2: u64 = 0x2000;
    const R: u64 = 9;
    let crit = 5u8; // ompt_mutex_critical
    let t1 = [
        oop(0, ev::PARALLEL_BEGIN, 0, R, 0x600, 3),
        oop(1, ev::TASK_BEGIN, 0, R, 0x610, 0),
        oop(10, ev::MUTEX_ACQUIRE, crit, L, 0x620, 0),
        oop(10, ev::MUTEX_ACQUIRED, crit, L, 0x620, 0),
        oop(50, ev::MUTEX_RELEASED, crit, L, 0x620, 0),
        oop(60, ev::SYNC_WAIT_BEGIN, 2, R, 0x630, 0),
    ];
    let t2 = [
        oop(2, ev::TASK_BEGIN, 0, R, 0x610, 1),
        oop(20, ev::MUTEX_ACQUIRE, crit, L, 0x620, 0),
        oop(50, ev::MUTEX_ACQUIRED, crit, L, 0x620, 0),
        oop(200, ev::MUTEX_RELEASED, crit, L, 0x620, 0),
        oop(210, ev::SYNC_WAIT_BEGIN, 2, R, 0x630, 0),
    ];
    let t3 = [
        oop(3, ev::TASK_BEGIN, 0, R, 0x610, 2),
        oop(30, ev::SYNC_WAIT_BEGIN, 2, R, 0x630, 0),
        oop(220, ev::MUTEX_ACQUIRE, crit, L2, 0x640, 0),
        oop(220, ev::MUTEX_ACQUIRED, crit, L2, 0x640, 0),
        oop(260, ev::MUTEX_RELEASED, crit, L2, 0x640, 0),
    ];
    let mut b = OmpSyncBuilder::default();
    for (tid, ops) in [(1u32, &t1[..]), (2, &t2[..]), (3, &t3[..])] {
        omp_pair(0, tid, ops.iter().copied(), |t| t, &mut b);
    }
    let omp = finish(b);
    // events in thread order: T1 L, T1 barrier, T2 L, T2 barrier, T3
    // barrier, T3 L2
    let shape: Vec<(u32, bool, u64, u64, u64, Option<usize>)> = omp
        .iter()
        .enumerate()
        .map(|(i, e)| {
            (
                e.tid,
                e.barrier,
                e.requested_ns,
                e.acquired_ns,
                e.released_ns,
                omp.waker(i),
            )
        })
        .collect();
    assert_eq!(
        shape,
        [
            (1, false, 10, 10, 50, None),
            (1, true, 60, 210, 210, Some(3)),
            (2, false, 20, 50, 200, Some(0)),
            (2, true, 210, 210, 210, None),
            (3, true, 30, 210, 210, Some(3)),
            (3, false, 220, 220, 260, None),
        ]
    );
    // implicit barriers carry the parallel construct's site
    assert!(omp.iter().filter(|e| e.barrier).all(|e| e.site == 0x600));

    let set = pthread_events(&[]);
    let path = mark_across(&set, &FutexEvents::default(), &omp, &[7]);
    assert_eq!(path.start, Some((7, 3)));
    assert_eq!(path.omp_on_path, [true, false, true, true, true, true]);
    let chain: Vec<(Source, u32, u32, u64)> = path
        .hand_overs
        .iter()
        .map(|h| (h.source, h.from.1, h.to.1, h.at_ns))
        .collect();
    assert_eq!(
        chain,
        [(Source::Openmp, 2, 3, 210), (Source::Openmp, 1, 2, 50)]
    );
    assert_eq!(path.length_ns(), 250);
    let s = summarize(&path, &set, &FutexEvents::default(), &omp, |_, _| {
        ("x".into(), None)
    });
    assert_eq!(
        (s.openmp_events, s.openmp_jumps, s.openmp_wait_ns),
        (5, 2, 210)
    );
    assert_eq!((s.events, s.jumps, s.length_ns), (5, 2, 250));
}

/// Without futex or OpenMP events the walk across recorders is the
/// pthread walk: on the worked example of docs/critical-path.md (T1..T4,
/// M handed T1 → T2 → T3) both mark T1 M, T2 M, T3 M, T3 N with 2 jumps,
/// and the same hand-overs.
#[test]
fn without_futex_or_openmp_it_is_the_pthread_path() {
    const N: u64 = 0xe000;
    const K: u64 = 0xf000;
    let set = pthread_events(&[
        (
            1,
            vec![
                lock_op(0, Phase::Immediate, M),
                lock_op(100, Phase::Release, M),
            ],
        ),
        (
            2,
            vec![
                lock_op(10, Phase::Request, M),
                lock_op(100, Phase::Acquired, M),
                lock_op(150, Phase::Release, M),
            ],
        ),
        (
            3,
            vec![
                lock_op(20, Phase::Request, M),
                lock_op(150, Phase::Acquired, M),
                lock_op(200, Phase::Release, M),
                lock_op(210, Phase::Immediate, N),
                lock_op(220, Phase::Release, N),
            ],
        ),
        (
            4,
            vec![
                lock_op(30, Phase::Immediate, K),
                lock_op(40, Phase::Release, K),
            ],
        ),
    ]);
    let alone = mark_critical_path(&set);
    let across = mark_across(
        &set,
        &FutexEvents::default(),
        &OmpSyncEvents::default(),
        &[],
    );
    assert_eq!(across.locks, alone);
    assert_eq!(alone.on_path.to_vec(), [true, true, true, true, false]);
    // begin: T1's M acquired at 0; end: T3's last operation at 220
    assert_eq!(across.length_ns(), 220);
}

/// One FUTEX_WAKE that woke two waiters (a broadcast; docs/critical-path.md,
/// "Ambiguity of futex wakers"):
///
/// ```text
/// T1: FUTEX_WAKE(A) 100–104, woke 2
/// T2: FUTEX_WAIT(A) 10 → 120 woken
/// T3: FUTEX_WAIT(A) 20 → 130 woken; FUTEX_WAIT(B) 200 → 300 timed out
/// T4: FUTEX_WAKE(A) 150–151, woke 1 (after both returned: nobody's waker)
/// ```
///
/// Both woken waits get T1's wake (it woke 2); T4's wake began after both
/// returned. T3 ends last (300): wait B (no waker, begin 200), wait A
/// (woken by T1 at 100: jump) → T1 has no wait before 100: the walk ends.
/// On the path: T3's two waits (110 + 100 ns), one futex jump; T2's wait,
/// let go by the same wake, is off the path. Length 300 − 100 = 200 ns.
#[test]
fn a_broadcast_wake_lets_every_waiter_go_and_the_path_follows_one() {
    let mut fe = FutexEvents::default();
    let t1: Vec<FutexOp> = wake(100, 104, A, 2).into();
    let t2: Vec<FutexOp> = wait(10, 120, A, Phase::Acquired, 0).into();
    let t3: Vec<FutexOp> = [
        wait(20, 130, A, Phase::Acquired, 0),
        wait(200, 300, B, Phase::Busy, 110),
    ]
    .concat();
    let t4: Vec<FutexOp> = wake(150, 151, A, 1).into();
    for (tid, ops) in [(1u32, &t1), (2, &t2), (3, &t3), (4, &t4)] {
        futex_pair(0, 7, tid, ops.iter().copied(), |t| t, 1000, &mut fe);
    }
    match_wakers(&mut fe);
    let wakers: Vec<Option<u32>> = fe.waits.iter().map(|w| w.waker()).collect();
    assert_eq!(wakers, [Some(0), Some(0), None]);
    let set = pthread_events(&[]);
    let path = mark_across(&set, &fe, &OmpSyncEvents::default(), &[]);
    assert_eq!(path.start, Some((7, 3)));
    assert_eq!(path.futex_on_path, [false, true, true]);
    assert_eq!(path.hand_overs.len(), 1);
    assert_eq!((path.hand_overs[0].from.1, path.hand_overs[0].to.1), (1, 3));
    assert_eq!(path.length_ns(), 200);
    let s = summarize(&path, &set, &fe, &OmpSyncEvents::default(), |_, _| {
        ("A".into(), None)
    });
    assert_eq!(
        (s.futex_events, s.futex_wait_ns, s.futex_jumps),
        (2, 210, 1)
    );
}

/// A recording of three threads' OpenMP records, written in 4 KiB chunks:
/// thread 10 takes lock L 40,000 times and critical section S (shared with
/// thread 11) 40,000 times, every 7th acquisition waiting 5 ns; thread 11
/// takes S and its own lock M 300 times each, spread over thread 10's run
/// (also every 7th waiting 5 ns); all three meet the implicit
/// barrier of region 9 and two explicit barriers. Thread 10 holds nearly
/// all the records, so it is read ahead on a thread of its own on a
/// machine of more than one core. Returns the recording's folder and the
/// expected (acquisitions, wait ns, hold ns) of each of L, S and M.
fn omp_recording() -> (tempfile::TempDir, [(u64, u64, u64); 3]) {
    const L: u64 = 0x1000;
    const S: u64 = 0x2000;
    const M: u64 = 0x3000;
    const R: u64 = 9;
    let mut sums = [(0u64, 0u64, 0u64); 3];
    // n acquisitions, `gap` ns apart
    let mut pairs =
        |ops: &mut Vec<OmpOp>, now: &mut u64, n: u64, gap: u64, mutexes: &[(usize, u64, u8)]| {
            for i in 0..n {
                let (row, object, kind) = mutexes[i as usize % mutexes.len()];
                let wait = if i % 7 == 0 { 5 } else { 0 };
                let hold = 3 + i % 4;
                ops.push(oop(
                    *now,
                    ev::MUTEX_ACQUIRE,
                    kind,
                    object,
                    0x700 + row as u64,
                    0,
                ));
                ops.push(oop(*now + wait, ev::MUTEX_ACQUIRED, kind, object, 0, 0));
                ops.push(oop(
                    *now + wait + hold,
                    ev::MUTEX_RELEASED,
                    kind,
                    object,
                    0,
                    0,
                ));
                *now += wait + hold + gap;
                let s = &mut sums[row];
                (s.0, s.1, s.2) = (s.0 + 1, s.1 + wait, s.2 + hold);
            }
        };
    let barriers = |ops: &mut Vec<OmpOp>, now: &mut u64, number: u32| {
        ops.push(oop(*now, ev::TASK_BEGIN, 0, R, 0x610, number));
        for _ in 0..2 {
            ops.push(oop(*now + 1, ev::SYNC_WAIT_BEGIN, 3, R, 0x650, 0));
            ops.push(oop(*now + 4, ev::SYNC_WAIT_END, 3, R, 0x650, 0));
            *now += 5;
        }
        ops.push(oop(*now, ev::SYNC_WAIT_BEGIN, 2, R, 0x630, 0));
        *now += 1;
    };
    let (mut t10, mut t11, mut t12) = (Vec::new(), Vec::new(), Vec::new());
    let mut now = 100;
    t10.push(oop(now, ev::PARALLEL_BEGIN, 0, R, 0x600, 3));
    now += 1;
    pairs(&mut t10, &mut now, 80_000, 2, &[(0, L, 1), (1, S, 5)]);
    barriers(&mut t10, &mut now, 0);
    let mut now11 = 150;
    // (spread over thread 10's run, so that some of its waits on S are
    // ended by thread 10's releases)
    pairs(&mut t11, &mut now11, 600, 957, &[(1, S, 5), (2, M, 1)]);
    barriers(&mut t11, &mut now11, 1);
    let mut now12 = 160;
    barriers(&mut t12, &mut now12, 2);
    let dir = tempfile::tempdir().unwrap();
    let mut b = contend_trace::TraceBuilder {
        pid: 700,
        chunk_size: 4096,
        threads: vec![(10, vec![]), (11, vec![]), (12, vec![])],
        ..contend_trace::TraceBuilder::default()
    };
    b.omp = vec![(10, t10), (11, t11), (12, t12)];
    std::fs::create_dir_all(dir.path().join("locks")).unwrap();
    std::fs::write(dir.path().join("locks/700.ctrace"), b.to_bytes()).unwrap();
    (dir, sums)
}

/// The OpenMP events collected with the threads paired side by side, each
/// into its own part of the event vector (and thread 10's records read
/// ahead), are those one pass over the threads in order gives: the same
/// events in the same order, the same thread, object and site tables, the
/// same wakers.
#[test]
fn openmp_events_paired_side_by_side_are_those_of_one_pass() {
    let (dir, _) = omp_recording();
    let rec = contend::Recording::open(dir.path()).unwrap();
    let trace = &rec.processes[0].trace;
    assert_eq!(trace.threads.len(), 3);
    // hundreds of chunks
    let bytes = std::fs::metadata(dir.path().join("locks/700.ctrace"))
        .unwrap()
        .len();
    assert!(bytes > 200 * 4096, "{bytes} bytes");
    let mut b = OmpSyncBuilder::default();
    for t in &trace.threads {
        omp_pair(0, t.tid, trace.omp_ops(t), |x| rec.to_ns(trace, x), &mut b);
    }
    let one_pass = finish(b);
    let side_by_side = contend::openmp::sync::collect(&rec);
    assert_eq!(side_by_side.len(), 80_000 + 600 + 3 * 3);
    let wakers = side_by_side.wakers().count();
    assert!(wakers > 5, "{wakers} wakers");
    assert_eq!(side_by_side, one_pass);
}

/// The OpenMP section, each thread's records summed on its own (thread
/// 10's read ahead) and the threads added together: every mutex's
/// acquisitions, wait and hold as written, and the barriers' waits.
#[test]
fn openmp_section_sums_the_threads_as_written() {
    let (dir, sums) = omp_recording();
    let rec = contend::Recording::open(dir.path()).unwrap();
    let analysis = contend::analyze(
        &rec,
        &contend::AnalysisOptions::default(),
        &contend::NoProgress,
    );
    let json = contend::render::Document::Report(&analysis.report).to_json();
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let omp = &v["openmp"];
    let total = |k: usize| sums.iter().map(|s| [s.0, s.1, s.2][k]).sum::<u64>();
    let s = &omp["summary"];
    assert_eq!(s["mutex_events"].as_u64(), Some(total(0)));
    assert_eq!(s["mutex_wait_ns"].as_u64(), Some(total(1)));
    assert_eq!(s["mutex_hold_ns"].as_u64(), Some(total(2)));
    // two explicit barriers per thread (3 ns each) and one implicit
    // barrier of three threads
    assert_eq!(s["parallel_regions"].as_u64(), Some(1));
    assert!(s["barrier_events"].as_u64().unwrap() >= 6 + 3);
    let mut rows: Vec<(String, u64, u64, u64)> = omp["mutexes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["address"].as_str().unwrap().to_string(),
                m["events"].as_u64().unwrap(),
                m["wait_ns"].as_u64().unwrap(),
                m["hold_ns"].as_u64().unwrap(),
            )
        })
        .collect();
    rows.sort();
    let expected: Vec<(String, u64, u64, u64)> = ["0x1000", "0x2000", "0x3000"]
        .iter()
        .zip(sums)
        .map(|(a, s)| (a.to_string(), s.0, s.1, s.2))
        .collect();
    assert_eq!(rows, expected);
    let explicit = omp["barriers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["kind"] == "explicit barrier")
        .expect("the explicit barrier row");
    assert_eq!(
        (explicit["events"].as_u64(), explicit["wait_ns"].as_u64()),
        (Some(6), Some(18))
    );
    // each row's events on the critical path across recorders: those of
    // its mutex (or barrier construct) that the path marks
    let locks = analysis.events::<contend::locks::LockEvents>().unwrap();
    let (path, events) = (
        locks.across.as_ref().unwrap(),
        locks.across_omp.as_ref().unwrap(),
    );
    let mut on_path: std::collections::BTreeMap<String, (u64, u64, u64)> = Default::default();
    for (i, e) in events.iter().enumerate() {
        if path.omp_on_path[i] {
            let key = if e.barrier {
                format!("barrier {}", e.kind)
            } else {
                format!("{:#x}", e.object)
            };
            let r = on_path.entry(key).or_default();
            (r.0, r.1, r.2) = (r.0 + 1, r.1 + e.wait_ns(), r.2 + e.hold_ns());
        }
    }
    assert!(on_path.len() >= 3, "{on_path:?}");
    for m in omp["mutexes"].as_array().unwrap() {
        let want = on_path
            .get(m["address"].as_str().unwrap())
            .copied()
            .unwrap_or_default();
        let got = (
            m["critical_events"].as_u64().unwrap(),
            m["critical_wait_ns"].as_u64().unwrap(),
            m["critical_hold_ns"].as_u64().unwrap(),
        );
        assert_eq!(got, want, "{m}");
    }
    for (kind, name) in [(3, "explicit barrier"), (2, "implicit barrier")] {
        let row = omp["barriers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|b| b["kind"] == name)
            .unwrap();
        let want = on_path
            .get(&format!("barrier {kind}"))
            .copied()
            .unwrap_or_default();
        assert_eq!(
            (
                row["critical_events"].as_u64().unwrap(),
                row["critical_wait_ns"].as_u64().unwrap()
            ),
            (want.0, want.1),
            "{row}"
        );
    }
}

/// The futex events of a thread with more records than `futex::collect`
/// pairs in place (they are read ahead by a thread of their own) are
/// those its records give read in place: 40,000 FUTEX_WAIT calls of
/// thread 20 (every third timed out, the rest woken) and the FUTEX_WAKE
/// calls of thread 21 that end them, in 4 KiB chunks.
#[test]
fn futex_events_of_records_read_ahead_are_those_read_in_place() {
    let (mut waits, mut wakes) = (Vec::new(), Vec::new());
    for i in 0..40_000u64 {
        let t = 1_000 + i * 100;
        let word = 0xf000 + (i % 3) * 8;
        waits.push(fop(t, word, Phase::Request, fx::CMD_WAIT, 0));
        // (a timeout ends in Busy, as the collector writes it)
        let end = if i % 3 == 0 {
            Phase::Busy
        } else {
            Phase::Acquired
        };
        waits.push(fop(t + 60, word, end, fx::CMD_WAIT, 0));
        wakes.push(fop(t + 50, word, Phase::Release, fx::CMD_WAKE, 0));
        wakes.push(fop(t + 55, word, Phase::Released, fx::CMD_WAKE, 1));
    }
    let dir = tempfile::tempdir().unwrap();
    let mut b = contend_trace::TraceBuilder {
        pid: 800,
        chunk_size: 4096,
        threads: vec![(20, vec![]), (21, vec![])],
        ..contend_trace::TraceBuilder::default()
    };
    b.futex = vec![(20, waits), (21, wakes)];
    std::fs::create_dir_all(dir.path().join("locks")).unwrap();
    std::fs::write(dir.path().join("locks/800.ctrace"), b.to_bytes()).unwrap();
    let rec = contend::Recording::open(dir.path()).unwrap();
    let trace = &rec.processes[0].trace;
    let collected = contend::futex::collect(&rec);
    let end_ns = collected.waits.iter().map(|w| w.end_ns).max().unwrap();
    let mut in_place = FutexEvents::default();
    for t in &trace.threads {
        futex_pair(
            0,
            800,
            t.tid,
            trace.futex_ops(t),
            |x| rec.to_ns(trace, x),
            end_ns,
            &mut in_place,
        );
    }
    assert_eq!(collected.waits.len(), 40_000);
    assert_eq!(collected.wakes.len(), 40_000);
    let timed_out = collected
        .waits
        .iter()
        .filter(|w| w.outcome() == contend::futex::WaitOutcome::TimedOut)
        .count();
    assert_eq!(timed_out, 13_334);
    assert_eq!(collected.waits, in_place.waits);
    assert_eq!(collected.wakes, in_place.wakes);
    // and the tables their indices name
    assert_eq!(collected.threads, in_place.threads);
    assert_eq!(collected.words, in_place.words);
    assert_eq!(collected.calls, in_place.calls);
}
