//! Randomised equivalence of the optimised analysis (pairing, critical
//! path, aggregation) with simple reference implementations kept here: the
//! straightforward algorithms the optimised ones replaced. Inputs are
//! random operation sequences over a few objects, with every primitive and
//! phase, equal timestamps, lost requests and unmatched releases.

use contend::locks::events::{ObjectKey, SiteKey, ThreadInfo};
use contend::locks::{
    pair_operations, EventSet, LockEventFields, OpSource, Outcome, ThreadInput, TimeMap,
};
use contend_trace::format::CLOCK_MONOTONIC;
use contend_trace::{LockTrace, Phase, Primitive, RawOp, TraceBuilder, NO_STACK};
use std::collections::HashMap;

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const PRIMITIVES: [Primitive; 7] = Primitive::ALL;

/// Random threads (1 to 5): mostly well-formed lock/unlock sequences over
/// a few shared objects, mixed with arbitrary operations.
fn random_threads(rng: &mut Rng) -> Vec<(u32, Vec<RawOp>)> {
    random_threads_up_to(rng, 5)
}

/// [`random_threads`], 1 to `max_threads` of them.
fn random_threads_up_to(rng: &mut Rng, max_threads: u64) -> Vec<(u32, Vec<RawOp>)> {
    let threads = 1 + rng.below(max_threads);
    let objects = 1 + rng.below(6);
    (0..threads)
        .map(|t| {
            let n = rng.below(300);
            let mut now = 1000 + rng.below(50);
            let mut ops = Vec::new();
            let mut held: Vec<u64> = Vec::new();
            for _ in 0..n {
                now += rng.below(4) * rng.below(40);
                let object = 0x1000 * (1 + rng.below(objects));
                let site = 0x40_0000 + rng.below(7) * 16;
                let op = |ticks, object, primitive, phase| RawOp {
                    ticks,
                    object,
                    site,
                    primitive,
                    phase,
                    stack: NO_STACK,
                };
                match rng.below(10) {
                    0..=2 => {
                        // A well-formed acquisition, maybe contended.
                        let p = PRIMITIVES[rng.below(4) as usize];
                        if rng.below(2) == 0 {
                            ops.push(op(now, object, p, Phase::Request));
                            now += rng.below(100);
                            ops.push(op(now, object, p, Phase::Acquired));
                        } else {
                            ops.push(op(now, object, p, Phase::Immediate));
                        }
                        held.push(object);
                    }
                    3..=4 if !held.is_empty() => {
                        let k = rng.below(held.len() as u64) as usize;
                        let object = held.remove(k);
                        ops.push(op(now, object, Primitive::Mutex, Phase::Release));
                    }
                    5 => {
                        // Condition wait after a release, or a barrier.
                        let p = PRIMITIVES[4 + rng.below(3) as usize];
                        ops.push(op(now, object, p, Phase::Request));
                        now += rng.below(100);
                        let end =
                            [Phase::Acquired, Phase::Busy, Phase::Error][rng.below(3) as usize];
                        ops.push(op(now, object, p, end));
                    }
                    _ => {
                        let p = PRIMITIVES[rng.below(7) as usize];
                        let phase = Phase::from_code(1 + rng.below(6) as u8).unwrap();
                        ops.push(op(now, object, p, phase));
                    }
                }
            }
            (100 + t as u32, ops)
        })
        .collect()
}

fn inputs<'a>(threads: &'a [(u32, Vec<RawOp>)]) -> Vec<ThreadInput<'a>> {
    threads
        .iter()
        .map(|(tid, ops)| ThreadInput {
            process: 0,
            pid: 1,
            tid: *tid,
            ops: OpSource::Slice(ops),
            clock: TimeMap::Identity,
        })
        .collect()
}

// ---------------------------------------------------------------- pairing

/// The reference pairing: each thread on its own with local tables, merged
/// in thread order.
fn reference_pairing(threads: &[(u32, Vec<RawOp>)]) -> EventSet {
    let mut set = EventSet::default();
    let mut object_index: HashMap<ObjectKey, u32> = HashMap::new();
    let mut site_index: HashMap<SiteKey, u32> = HashMap::new();
    for (thread, (tid, ops)) in threads.iter().enumerate() {
        // (event, the mutex of a condition wait or u32::MAX)
        let mut events: Vec<(LockEventFields, u32)> = Vec::new();
        let mut open: HashMap<u32, Vec<usize>> = HashMap::new();
        let mut pending: Option<LockEventFields> = None;
        let mut released_mutex: Option<u32> = None;
        let (mut first, mut last) = (u64::MAX, 0);
        let mut obj = |address: u64, p: Primitive, set: &mut EventSet| {
            let key = ObjectKey {
                process: 0,
                address,
            };
            *object_index.entry(key).or_insert_with(|| {
                set.objects.push(key);
                set.object_kinds.push(p);
                (set.objects.len() - 1) as u32
            })
        };
        let new = |o: u32, s: u32, p: Primitive, t: u64| LockEventFields {
            thread: thread as u32,
            object: o,
            site: s,
            primitive: p,
            outcome: Outcome::Acquired,
            requested_ns: t,
            acquired_ns: t,
            released_ns: t,
            contended: false,
            unreleased: false,
        };
        let push = |events: &mut Vec<(LockEventFields, u32)>,
                    open: &mut HashMap<u32, Vec<usize>>,
                    mut e: LockEventFields,
                    end: u64,
                    outcome: Outcome,
                    contended: bool,
                    cond_mutex: u32| {
            e.requested_ns = e.requested_ns.min(end);
            e.acquired_ns = end;
            e.released_ns = end;
            e.outcome = outcome;
            e.contended = contended;
            events.push((e, cond_mutex));
            if outcome == Outcome::Acquired && e.primitive.is_lock() {
                open.entry(e.object).or_default().push(events.len() - 1);
            }
        };
        for op in ops {
            let t = op.ticks;
            first = first.min(t);
            last = last.max(t);
            let o = obj(op.object, op.primitive, &mut set);
            let s = *site_index
                .entry(SiteKey {
                    process: 0,
                    address: op.site,
                })
                .or_insert_with(|| {
                    set.sites.push(SiteKey {
                        process: 0,
                        address: op.site,
                    });
                    (set.sites.len() - 1) as u32
                });
            let here = new(o, s, op.primitive, t);
            let rm = released_mutex.take();
            match op.phase {
                Phase::Request => {
                    if let Some(lost) = pending.replace(here) {
                        push(
                            &mut events,
                            &mut open,
                            lost,
                            t,
                            Outcome::Error,
                            true,
                            u32::MAX,
                        );
                    }
                    if op.primitive == Primitive::Cond {
                        released_mutex = rm;
                    }
                }
                Phase::Acquired | Phase::Busy | Phase::Error => {
                    let cm = if op.primitive == Primitive::Cond {
                        released_mutex.take().or(rm).unwrap_or(u32::MAX)
                    } else {
                        u32::MAX
                    };
                    match pending.take() {
                        Some(req) if req.object == o => {
                            let outcome = match op.phase {
                                Phase::Acquired => Outcome::Acquired,
                                Phase::Busy => Outcome::TimedOut,
                                _ => Outcome::Error,
                            };
                            push(&mut events, &mut open, req, t, outcome, true, cm);
                        }
                        other => {
                            pending = other;
                            let outcome = match op.phase {
                                Phase::Acquired => Outcome::Acquired,
                                Phase::Busy => Outcome::Busy,
                                _ => Outcome::Error,
                            };
                            let c = outcome != Outcome::Acquired;
                            push(&mut events, &mut open, here, t, outcome, c, cm);
                        }
                    }
                }
                Phase::Immediate | Phase::Untimed => push(
                    &mut events,
                    &mut open,
                    here,
                    t,
                    Outcome::Acquired,
                    false,
                    u32::MAX,
                ),
                // The wake cost is not an event.
                Phase::Released => {}
                Phase::Release => {
                    if op.primitive == Primitive::Semaphore {
                        push(
                            &mut events,
                            &mut open,
                            here,
                            t,
                            Outcome::Post,
                            false,
                            u32::MAX,
                        );
                        continue;
                    }
                    match open.get_mut(&o).and_then(|v| v.pop()) {
                        Some(i) => events[i].0.released_ns = t.max(events[i].0.acquired_ns),
                        None => set.unmatched_releases += 1,
                    }
                    if op.primitive == Primitive::Mutex {
                        released_mutex = Some(o);
                    }
                }
            }
        }
        for idxs in open.values() {
            for &i in idxs {
                events[i].0.released_ns = last.max(events[i].0.acquired_ns);
                events[i].0.unreleased = true;
            }
        }
        if let Some(req) = pending.take() {
            let end = last.max(req.requested_ns);
            push(
                &mut events,
                &mut open,
                req,
                end,
                Outcome::Error,
                true,
                u32::MAX,
            );
            events.last_mut().unwrap().0.unreleased = true;
        }
        for (e, cond_mutex) in events {
            if cond_mutex != u32::MAX {
                set.cond_mutexes.push((set.events.len() as u32, cond_mutex));
            }
            set.events.push(e.pack());
        }
        set.threads.push(ThreadInfo {
            pid: 1,
            tid: *tid,
            process: 0,
            first_ns: if first == u64::MAX { 0 } else { first },
            last_ns: last,
            name: None,
        });
    }
    set
}

fn assert_same_set(a: &EventSet, b: &EventSet, what: &str) {
    assert_eq!(a.events, b.events, "{what}: events");
    assert_eq!(
        a.cond_mutexes, b.cond_mutexes,
        "{what}: condition waits' mutexes"
    );
    assert_eq!(a.stacks, b.stacks, "{what}: stacks");
    assert_eq!(a.threads, b.threads, "{what}: threads");
    assert_eq!(a.objects, b.objects, "{what}: objects");
    assert_eq!(a.object_kinds, b.object_kinds, "{what}: object kinds");
    assert_eq!(a.sites, b.sites, "{what}: sites");
    assert_eq!(
        a.unmatched_releases, b.unmatched_releases,
        "{what}: unmatched"
    );
}

#[test]
fn pairing_matches_the_reference() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for case in 0..300 {
        let threads = random_threads(&mut rng);
        let want = reference_pairing(&threads);
        let got = pair_operations(&inputs(&threads));
        assert_same_set(&got, &want, &format!("case {case}, in memory"));
        // The same operations through a trace file (table slots, chunks).
        let bytes = TraceBuilder {
            clock: CLOCK_MONOTONIC,
            threads: threads.clone(),
            ..TraceBuilder::default()
        }
        .to_bytes();
        let trace = LockTrace::decode(std::path::Path::new("t.ctrace"), &bytes).unwrap();
        let from_trace: Vec<ThreadInput<'_>> = trace
            .threads
            .iter()
            .map(|t| ThreadInput {
                process: 0,
                pid: 1,
                tid: t.tid,
                ops: OpSource::Trace(&trace, t),
                clock: TimeMap::Identity,
            })
            .collect();
        let ordered: Vec<(u32, Vec<RawOp>)> = trace
            .threads
            .iter()
            .enumerate()
            .map(|(i, t)| (t.tid, trace.thread_ops(i)))
            .collect();
        let want = reference_pairing(&ordered);
        let got = pair_operations(&from_trace);
        assert_same_set(&got, &want, &format!("case {case}, from a trace"));
        assert_thread_ranges(&got, case);
    }
}

/// Pairing's `thread_ranges`: one per thread, in order, together covering
/// every event, each holding exactly its thread's events.
fn assert_thread_ranges(set: &EventSet, case: usize) {
    assert_eq!(set.thread_ranges.len(), set.threads.len(), "case {case}");
    let mut at = 0;
    for (t, r) in set.thread_ranges.iter().enumerate() {
        assert_eq!(r.start, at, "case {case}, thread {t}");
        assert!(
            set.events[r.clone()]
                .iter()
                .all(|e| e.thread() as usize == t),
            "case {case}, thread {t}"
        );
        at = r.end;
    }
    assert_eq!(at, set.events.len(), "case {case}");
}

// ------------------------------------------- critical path across recorders

/// 300 random event sets (pairing of [`random_threads`]), numbered.
fn random_sets(seed: u64) -> impl Iterator<Item = (usize, EventSet)> {
    let mut rng = Rng(seed);
    (0..300).map(move |case| (case, pair_operations(&inputs(&random_threads(&mut rng)))))
}

/// With no futex wait and no OpenMP event, the critical path across
/// recorders (`locks::across`, docs/critical-path.md) is the pthread
/// critical path: the same marks, jumps, hand-overs and start thread, on
/// random operation sequences with every primitive.
#[test]
fn critical_path_across_without_futex_or_openmp_is_the_pthread_path() {
    for (case, set) in random_sets(0x2545_f491_4f6c_dd1d) {
        let alone = contend::locks::mark_critical_path(&set);
        let across = contend::locks::across::mark_across(
            &set,
            &contend::futex::FutexEvents::default(),
            &contend::openmp::sync::OmpSyncEvents::default(),
            &[],
        );
        assert_eq!(across.locks, alone, "case {case}");
    }
}

/// The waker of every event (`critical_path::lock_wakers`, built by a
/// counting sort in chunks side by side and a sort of each lock's wake
/// events) against the rule applied by brute force: among the events that
/// can wake a waiter on the object waited for (a lock's release, a
/// `sem_post`, a barrier arrival), by another thread, at or before the
/// acquisition, the latest by (wake time, event index), if not before the
/// wait's lower bound.
#[test]
fn lock_wakers_match_the_rule_by_brute_force() {
    for (case, set) in random_sets(0x9e37_79b9_7f4a_7c15) {
        let wakers = contend::locks::critical_path::lock_wakers(&set);
        let wakes: Vec<usize> = (0..set.events.len())
            .filter(|&w| {
                let e = &set.events[w];
                match (e.primitive(), e.outcome()) {
                    (p, Outcome::Acquired) if p.is_lock() => true,
                    (Primitive::Semaphore, Outcome::Post) => true,
                    (Primitive::Barrier, _) => true,
                    _ => false,
                }
            })
            .collect();
        for (i, e) in set.events.iter().enumerate() {
            let waited = e.contended()
                && e.outcome() == Outcome::Acquired
                && e.acquired_ns() > e.requested_ns();
            let target = match e.primitive() {
                _ if !waited => None,
                Primitive::Cond => set.cond_mutex(i).map(|m| (m, e.requested_ns())),
                Primitive::Barrier => Some((e.object, e.requested_ns())),
                _ => Some((e.object, 0)),
            };
            let expected = target
                .and_then(|(object, lo)| {
                    wakes
                        .iter()
                        .copied()
                        .filter(|&w| {
                            let we = &set.events[w];
                            we.object == object
                                && we.thread() != e.thread()
                                && contend::locks::critical_path::lock_wake_time(&set, w)
                                    <= e.acquired_ns()
                        })
                        .max_by_key(|&w| {
                            (contend::locks::critical_path::lock_wake_time(&set, w), w)
                        })
                        .filter(|&w| contend::locks::critical_path::lock_wake_time(&set, w) >= lo)
                })
                .map_or(u32::MAX, |w| w as u32);
            assert_eq!(wakers[i], expected, "case {case}, event {i}");
        }
    }
}

/// Ownership changes (one merge of the threads by acquisition time)
/// against the straightforward count: each lock's successful acquisitions
/// sorted by (time, thread), hand-overs between neighbours counted; 300
/// sets of up to 5 threads, 60 of up to 40.
#[test]
fn ownership_changes_match_a_sort_of_each_locks_acquisitions() {
    // up to 5 threads (merged without a heap) and up to 40 (with one)
    let mut rng = Rng(0x6a09_e667_f3bc_c908);
    let many = (300..360).map(|case| {
        let threads = random_threads_up_to(&mut rng, 40);
        (case, pair_operations(&inputs(&threads)))
    });
    for (case, set) in random_sets(0x3c6e_f372_fe94_f82b).chain(many) {
        let mut by_object: Vec<Vec<(u64, u32)>> = vec![Vec::new(); set.objects.len()];
        for e in &set.events {
            if e.is_lock() && e.outcome() == Outcome::Acquired {
                by_object[e.object as usize].push((e.acquired_ns(), e.thread()));
            }
        }
        let expected: Vec<u64> = by_object
            .into_iter()
            .map(|mut v| {
                v.sort_unstable();
                v.windows(2).filter(|w| w[0].1 != w[1].1).count() as u64
            })
            .collect();
        assert_eq!(
            contend::locks::ownership_changes(&set),
            expected,
            "case {case}"
        );
    }
}

/// The wakers of a lock used by most of a large recording's events (more
/// wake events than `critical_path`'s large-part threshold, 65,536): with
/// 4 threads its wake events are 4 runs of ascending times, merged; with
/// 100 threads, more runs than the merge takes, sorted instead; with 4
/// threads of which one sometimes takes the lock again while holding it
/// (its inner hold released first, so its wakes are out of time order),
/// the merge finds that and sorts instead. Against the rule as a stable
/// sort of the lock's wake events by wake time gives it (latest by (wake
/// time, event index) at or before the acquisition, by another thread),
/// times drawn coarse so that equal times are common.
#[test]
fn lock_wakers_of_a_large_lock_match_a_stable_sort() {
    for (threads, per_thread, nested) in [
        (4u32, 20_000u64, false),
        (100, 700, false),
        (4, 20_000, true),
    ] {
        let mut rng = Rng(0x51_7cc1_b727_220a ^ u64::from(threads));
        let ops: Vec<(u32, Vec<RawOp>)> = (0..threads)
            .map(|t| {
                let mut now = 1000 + rng.below(20);
                let mut ops = Vec::new();
                for _ in 0..per_thread {
                    let op = |ticks, phase| RawOp {
                        ticks,
                        object: 0x1000,
                        site: 0x40_0000,
                        primitive: Primitive::Mutex,
                        phase,
                        stack: NO_STACK,
                    };
                    now += rng.below(3) * 8;
                    if rng.below(3) == 0 {
                        ops.push(op(now, Phase::Request));
                        now += 1 + rng.below(3) * 8;
                        ops.push(op(now, Phase::Acquired));
                    } else {
                        ops.push(op(now, Phase::Immediate));
                    }
                    if nested && t == 0 && rng.below(50) == 0 {
                        now += 8;
                        ops.push(op(now, Phase::Immediate));
                        now += 8;
                        ops.push(op(now, Phase::Release));
                    }
                    now += rng.below(3) * 8;
                    ops.push(op(now, Phase::Release));
                }
                (100 + t, ops)
            })
            .collect();
        let set = pair_operations(&inputs(&ops));
        let wake_time = |w: usize| contend::locks::critical_path::lock_wake_time(&set, w);
        let mut wakes: Vec<usize> = (0..set.events.len())
            .filter(|&w| set.events[w].outcome() == Outcome::Acquired)
            .collect();
        assert!(wakes.len() > 65_536, "{} wake events", wakes.len());
        wakes.sort_by_key(|&w| wake_time(w));
        let wakers = contend::locks::critical_path::lock_wakers(&set);
        let mut contended = 0;
        for (i, e) in set.events.iter().enumerate() {
            let waited = e.contended()
                && e.outcome() == Outcome::Acquired
                && e.acquired_ns() > e.requested_ns();
            let expected = if waited {
                contended += 1;
                let end = wakes.partition_point(|&w| wake_time(w) <= e.acquired_ns());
                wakes[..end]
                    .iter()
                    .rev()
                    .find(|&&w| set.events[w].thread() != e.thread())
                    .map_or(u32::MAX, |&w| w as u32)
            } else {
                u32::MAX
            };
            assert_eq!(
                wakers[i], expected,
                "{threads} threads (nested: {nested}), event {i}"
            );
        }
        assert!(contended > 1000, "{contended} contended acquisitions");
    }
}

/// The tables summed in groups of whole threads side by side (what the
/// analysis does when pairing says where each thread's events are) equal
/// the tables of one pass over all events (the same set with its thread
/// ranges removed): the whole report, with no filter, with the critical
/// path only, and with one thread, on 300 random sets of up to 5 threads
/// and 60 of up to 40, summed in up to 4 groups.
#[test]
fn tables_summed_in_groups_of_threads_equal_one_pass() {
    use crate::light_and_wake::Names;
    use contend::locks::{aggregate, EventFilter};
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(4)
        .build()
        .expect("a pool of 4 threads");
    let mut rng = Rng(0xbb67_ae85_84ca_a73b);
    let many = (300..360).map(|case| {
        let threads = random_threads_up_to(&mut rng, 40);
        (case, pair_operations(&inputs(&threads)))
    });
    let mut grouped = 0;
    for (case, set) in random_sets(0x3c6e_f372_fe94_f82b).chain(many) {
        let path = contend::locks::mark_critical_path(&set);
        let mut one_pass = set.clone();
        one_pass.thread_ranges.clear();
        let filters = [
            EventFilter::default(),
            EventFilter {
                critical_only: true,
                ..EventFilter::default()
            },
            EventFilter {
                threads: set.threads.first().map(|t| t.tid).into_iter().collect(),
                ..EventFilter::default()
            },
        ];
        for filter in &filters {
            let report = |set: &EventSet| {
                let r = pool.install(|| aggregate(set, &path, filter, &mut Names, 1_000_000));
                serde_json::to_string(&r).expect("a report serialises")
            };
            assert_eq!(report(&set), report(&one_pass), "case {case}, {filter:?}");
        }
        grouped +=
            usize::from(set.threads_in_ranges() && set.threads.len() > 1 && set.events.len() > 200);
    }
    assert!(
        grouped > 50,
        "{grouped} sets of several threads and over 200 events"
    );
}
