//! The SCI metric (Mosli Bouksiaa et al., TPDS 2019, Section 2) on
//! hand-built executions, with every number worked out by hand in the
//! comments: per-thread and aggregated scores, blocks executed fewer than
//! 10 times, keys, nesting (inclusive and exclusive excess), recursion;
//! the frame and name matchers (recursion, longjmp, skipped ENDs); and the
//! whole path from region-trace and probe files on disk through
//! `Recording::open` and the analysis to JSON.

use std::path::Path;

use contend::analysis::{analyze_using, NoProgress};
use contend::sci::{
    score, BlockDef, BlockKind, BlockSite, DurationSource, Execution, FrameMatcher, NameMatcher,
    SciAnalyzer, SciReport, ScoreInput, ThreadDef,
};
use contend::symbols::Symbols;
use contend::{AnalysisOptions, Recording};
use contend_trace::probes::{
    ProbeEvent, ProbeEventKind, ProbeManifest, ProbeWriter, DIR, EVENTS, MANIFEST_VERSION,
};
use contend_trace::regions::{RegionEvent, RegionTraceBuilder, SiteKind};

fn block(kind: BlockKind, name: &str, key: Option<&str>) -> BlockDef {
    BlockDef {
        kind,
        name: name.into(),
        key: key.map(Into::into),
        site: BlockSite::default().into(),
        every: 1,
        unfinished: 0,
    }
}

fn thread(tid: u32, duration_ns: u64) -> ThreadDef {
    ThreadDef {
        pid: 1,
        tid,
        duration_ns,
        source: DurationSource::TaskEvents,
    }
}

/// Back-to-back executions of `block` with the given durations, from `at`.
fn run(block: u32, at: u64, durations: &[u64]) -> Vec<Execution> {
    let mut t = at;
    durations
        .iter()
        .map(|&d| {
            let e = Execution {
                block,
                start_ns: t,
                end_ns: t + d,
            };
            t += d + 1;
            e
        })
        .collect()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-12
}

#[test]
fn per_thread_and_aggregated_scores_and_the_ten_execution_rule() {
    // Block A, two threads:
    //   t1 (T = 1000 ns): 10, 10, 20, 30, 10, 10, 10, 10, 10, 10 → Σ 130
    //   t2 (T = 2000 ns): 15, 25, 10, 10, 10, 10, 10, 10, 10, 10 → Σ 120
    // d_min(A) = 10 over both threads; 20 executions ≥ 10, so scored.
    //   excess(A, t1) = 130 − 10·10 = 30 → SCI(A, t1) = 30 / 1000 = 0.03
    //   excess(A, t2) = 120 − 10·10 = 20 → SCI(A, t2) = 20 / 2000 = 0.01
    //   SCI(A) = (30 + 20) / (1000 + 2000) = 1/60; max per thread 0.03.
    // Block B, t1 only, 9 executions: no score.
    let input = ScoreInput {
        counted: Vec::new(),
        blocks: vec![
            block(BlockKind::Region, "A", None),
            block(BlockKind::Region, "B", None),
        ],
        threads: vec![thread(11, 1000), thread(12, 2000)],
        executions: vec![
            [
                run(0, 0, &[10, 10, 20, 30, 10, 10, 10, 10, 10, 10]),
                run(1, 500, &[5, 50, 5, 5, 5, 5, 5, 5, 5]),
            ]
            .concat(),
            run(0, 0, &[15, 25, 10, 10, 10, 10, 10, 10, 10, 10]),
        ],
    };
    let (blocks, threads) = score(&input);
    let a = blocks.iter().find(|b| &*b.name == "A").unwrap();
    assert_eq!(a.occurrences, 20);
    assert_eq!(a.min_ns, 10);
    assert_eq!(a.total_ns, 250);
    assert_eq!(a.mean_ns, 12); // 250 / 20 = 12.5, truncated
    assert_eq!(a.median_ns, 10);
    assert_eq!(a.excess_ns, 50);
    assert!(close(a.sci.unwrap(), 50.0 / 3000.0), "{:?}", a.sci);
    assert!(close(a.sci_max_thread.unwrap(), 0.03));
    assert_eq!(a.threads, 2);
    assert_eq!(a.thread_duration_ns, 3000);
    let t1 = a.per_thread.iter().find(|t| t.tid == 11).unwrap();
    assert_eq!((t1.occurrences, t1.excess_ns), (10, 30));
    assert!(close(t1.sci.unwrap(), 0.03));
    let t2 = a.per_thread.iter().find(|t| t.tid == 12).unwrap();
    assert_eq!((t2.occurrences, t2.excess_ns), (10, 20));
    assert!(close(t2.sci.unwrap(), 0.01));
    // B: 9 executions, d_min 5, excess 45, but no score and a note.
    let b = blocks.iter().find(|b| &*b.name == "B").unwrap();
    assert_eq!(b.occurrences, 9);
    assert_eq!(b.excess_ns, 45);
    assert_eq!(b.sci, None);
    assert_eq!(b.sci_max_thread, None);
    assert!(b.note.as_deref().unwrap().contains("fewer than 10"));
    // Ranked: the scored block first.
    assert_eq!(&*blocks[0].name, "A");
    // Threads: t1 ran A (excess 30) and B (excess 45).
    let th1 = threads.iter().find(|t| t.tid == 11).unwrap();
    assert_eq!((th1.occurrences, th1.excess_ns), (19, 75));
    // "At a glance" names the scored block with the largest SCI (A, not B,
    // whose larger excess has no score), its excess and its fastest run.
    let report = SciReport {
        blocks,
        threads,
        ..SciReport::default()
    };
    assert_eq!(
        contend::report::ReportSection::headlines(&report),
        ["Interference: the largest SCI, 0.017, is region A @ ?: 50 ns lost to executions slower than its fastest (10 ns)."]
    );
}

#[test]
fn at_a_glance_does_not_call_a_wait_for_another_thread_interference() {
    // One thread, T = 10 000 ns. Worked out by hand:
    //   cond W: 10 × 100, 10 × 600 → d_min 100, excess 10 · 500 = 5000,
    //     SCI 0.5 (a worker idle until signalled);
    //   lock L: 9 × 0, one 200 → d_min 0, excess 200, SCI 0.02.
    let input = |with_lock: bool| {
        let mut w = vec![100; 10];
        w.extend([600; 10]);
        let mut executions = run(0, 0, &w);
        let mut blocks = vec![block(BlockKind::Cond, "pthread_cond_wait", Some("cv"))];
        if with_lock {
            blocks.push(block(BlockKind::Lock, "pthread_mutex_lock", Some("m")));
            executions.extend(run(1, 8000, &[0, 0, 0, 0, 0, 0, 0, 0, 0, 200]));
        }
        ScoreInput {
            counted: Vec::new(),
            blocks,
            threads: vec![thread(7, 10_000)],
            executions: vec![executions],
        }
    };
    let glance = |with_lock| {
        let (blocks, threads) = score(&input(with_lock));
        assert!(close(blocks[0].sci.unwrap(), 0.5), "{:?}", blocks[0].sci);
        contend::report::ReportSection::headlines(&SciReport {
            blocks,
            threads,
            ..SciReport::default()
        })
    };
    // The lock is named as the interference, the higher-scoring wait beside it.
    assert_eq!(
        glance(true),
        ["Interference: the largest SCI of lock, region and function blocks, 0.020, is lock \
          pthread_mutex_lock [m] @ ?: 200 ns lost to executions slower than its fastest (0 ns). \
          Waits for another thread score higher (cond pthread_cond_wait [cv] @ ?, 0.500), but their \
          excess is time idle until that thread signals, arrives or ends, not interference."]
    );
    // Only the wait: named, and said what its excess is.
    assert_eq!(
        glance(false),
        ["Interference: the largest SCI, 0.500, is cond pthread_cond_wait [cv] @ ?: 5.000 µs lost to \
          executions slower than its fastest (100 ns); a wait for another thread, so its excess is \
          mostly time idle until that thread signals, arrives or ends, not interference."]
    );
    assert!(BlockKind::Barrier.waits_for_another_thread());
    assert!(BlockKind::Semaphore.waits_for_another_thread());
    assert!(!BlockKind::Function.waits_for_another_thread());
    assert!(!BlockKind::Region.waits_for_another_thread());
}

#[test]
fn keys_compare_executions_only_with_themselves() {
    // A parameter-dependent block: key 1 always takes 100 ns, key 2 always
    // 1000 ns (10 executions each, one thread of 100 000 ns).
    // Keyed: two rows, each with d_min = its own duration → excess 0.
    // Unkeyed: d_min = 100, excess = 10 · (1000 − 100) = 9000,
    //   SCI = 9000 / 100 000 = 0.09: a false positive (Section 3.4).
    let keyed = ScoreInput {
        counted: Vec::new(),
        blocks: vec![
            block(BlockKind::Region, "lookup", Some("1")),
            block(BlockKind::Region, "lookup", Some("2")),
        ],
        threads: vec![thread(1, 100_000)],
        executions: vec![[run(0, 0, &[100; 10]), run(1, 10_000, &[1000; 10])].concat()],
    };
    let (blocks, _) = score(&keyed);
    assert_eq!(blocks.len(), 2);
    for b in &blocks {
        assert_eq!(b.excess_ns, 0, "{b:?}");
        assert_eq!(b.sci, Some(0.0));
    }
    let unkeyed = ScoreInput {
        counted: Vec::new(),
        blocks: vec![block(BlockKind::Region, "lookup", None)],
        threads: vec![thread(1, 100_000)],
        executions: vec![[run(0, 0, &[100; 10]), run(0, 10_000, &[1000; 10])].concat()],
    };
    let (blocks, _) = score(&unkeyed);
    assert_eq!(blocks[0].excess_ns, 9000);
    assert!(close(blocks[0].sci.unwrap(), 0.09));
    // Its distribution shows the two modes: 10 in [64, 128), 10 in [512, 1024).
    let h: Vec<(u64, u64)> = blocks[0]
        .histogram
        .iter()
        .map(|b| (b.lower_ns, b.count))
        .collect();
    assert_eq!(h, [(64, 10), (512, 10)]);
}

#[test]
fn nested_blocks_inclusive_and_exclusive_excess_and_recursion() {
    // One thread, T = 10 000 ns. Outer O contains inner I at each of 10
    // executions:
    //   O_k = [1000k, 1000k + 100], I_k = [1000k + 10, 1000k + 40] for k < 9
    //   O_9 = [9000, 9200],         I_9 = [9010, 9140] (I slowed by 100)
    // Inclusive: O: 9 × 100 + 200, d_min 100, excess 100 → SCI 0.01;
    //            I: 9 × 30 + 130, d_min 30, excess 100 → SCI 0.01.
    // Exclusive (children subtracted): O: 70 each → excess 0;
    //            I: no children → exclusive = inclusive, excess 100.
    // So the exclusive view puts the lost time in I, where it was.
    let mut execs = Vec::new();
    for k in 0..10u64 {
        let (od, i_end) = if k == 9 { (200, 140) } else { (100, 40) };
        execs.push(Execution {
            block: 0,
            start_ns: 1000 * k,
            end_ns: 1000 * k + od,
        });
        execs.push(Execution {
            block: 1,
            start_ns: 1000 * k + 10,
            end_ns: 1000 * k + i_end,
        });
    }
    // Recursion: R = [20 000, 20 100] contains R = [20 010, 20 050]
    // (10 times, 200 ns apart): the inner ones are counted in `recursive`,
    // not scored; the outer ones have exclusive 100 − 40 = 60.
    for k in 0..10u64 {
        let at = 20_000 + 200 * k;
        execs.push(Execution {
            block: 2,
            start_ns: at,
            end_ns: at + 100,
        });
        execs.push(Execution {
            block: 2,
            start_ns: at + 10,
            end_ns: at + 50,
        });
    }
    let input = ScoreInput {
        counted: Vec::new(),
        blocks: vec![
            block(BlockKind::Function, "O", None),
            block(BlockKind::Function, "I", None),
            block(BlockKind::Function, "R", None),
        ],
        threads: vec![thread(1, 10_000)],
        executions: vec![execs],
    };
    let (blocks, _) = score(&input);
    let get = |n: &str| blocks.iter().find(|b| &*b.name == n).unwrap();
    let o = get("O");
    assert_eq!((o.min_ns, o.excess_ns), (100, 100));
    assert!(close(o.sci.unwrap(), 0.01));
    assert_eq!((o.exclusive_min_ns, o.exclusive_excess_ns), (70, 0));
    assert_eq!(o.sci_exclusive, Some(0.0));
    let i = get("I");
    assert_eq!((i.min_ns, i.excess_ns), (30, 100));
    assert_eq!(i.exclusive_excess_ns, 100);
    assert!(close(i.sci_exclusive.unwrap(), 0.01));
    let r = get("R");
    assert_eq!((r.occurrences, r.recursive), (10, 10));
    assert_eq!((r.min_ns, r.excess_ns), (100, 0));
    assert_eq!(r.exclusive_min_ns, 60);
}

#[test]
fn the_fastest_executions_must_be_stable() {
    // 200 executions: the fastest 1% is 2 executions. 10 ns and 50 ns:
    // 5× and 40 ns apart — under the 100 ns floor, so stable. 10 ns and
    // 500 ns: unstable.
    for (second, stable) in [(50u64, true), (500, false)] {
        let mut d = vec![10, second];
        d.extend(std::iter::repeat_n(1000, 198));
        let input = ScoreInput {
            counted: Vec::new(),
            blocks: vec![block(BlockKind::Region, "x", None)],
            threads: vec![thread(1, 1_000_000)],
            executions: vec![run(0, 0, &d)],
        };
        let (blocks, _) = score(&input);
        assert_eq!(blocks[0].fastest_1pct_ns, [10, second]);
        assert_eq!(blocks[0].stable, stable);
        assert_eq!(blocks[0].note.is_some(), !stable);
    }
}

#[test]
fn sampled_blocks_scale_their_excess() {
    // One call in 4 recorded: 10 recorded durations 10 × 9 + 50 → excess
    // 40 recorded, estimated 4 × 40 = 160 over all calls; T = 1600 → 0.1.
    let mut b = block(BlockKind::Function, "f", None);
    b.every = 4;
    let mut d = vec![10u64; 9];
    d.push(50);
    let input = ScoreInput {
        counted: Vec::new(),
        blocks: vec![b],
        threads: vec![thread(1, 1600)],
        executions: vec![run(0, 0, &d)],
    };
    let (blocks, _) = score(&input);
    assert_eq!(blocks[0].excess_ns, 160);
    assert!(close(blocks[0].sci.unwrap(), 0.1));
    assert_eq!(blocks[0].sampled_every, 4);
}

#[test]
fn frames_keep_recursion_and_longjmp_from_corrupting_the_nesting() {
    // f recurses three deep (frames 1000 > 900 > 800), the innermost
    // longjmps back into the outermost, which then calls g at frame 900:
    // f@900 and f@800 are gone (frames at or below the new call), g
    // closes normally, and so does the outermost f.
    let mut m: FrameMatcher<char> = FrameMatcher::new();
    m.enter('f', 1000, 0);
    m.enter('f', 900, 1);
    m.enter('f', 800, 2);
    m.enter('g', 900, 3);
    assert_eq!(m.exit('g', 900), Some(3));
    assert_eq!(m.exit('f', 1000), Some(0));
    assert_eq!(m.counts.abandoned, 2);
    assert_eq!(m.abandoned, ['f', 'f']);
    // Without frames the outermost f's exit would have closed f@800.
    // A longjmp straight out to the caller of f: the next exit above it
    // abandons the deeper frames.
    m.enter('h', 2000, 10);
    m.enter('f', 1500, 11);
    m.enter('f', 1400, 12);
    assert_eq!(m.exit('h', 2000), Some(10));
    assert_eq!(m.counts.abandoned, 4);
    // An exit with no entry; an entry left open at the end (exit() inside).
    assert_eq!(m.exit('q', 3000), None);
    assert_eq!(m.counts.unmatched_ends, 1);
    m.enter('M', 5000, 20);
    m.enter('W', 4000, 21);
    assert_eq!(m.finish(), ['M', 'W']);
    assert_eq!(m.counts.unfinished, 2);
}

#[test]
fn region_names_close_the_innermost_open_region() {
    // BEGIN A, BEGIN B, END A: B's END was skipped (an early return), so B
    // is abandoned and A closes; a later END B has nothing to close.
    let mut m: NameMatcher<&str> = NameMatcher::new();
    m.begin("A", 0, 0);
    m.begin("B", 1, 1);
    assert_eq!(m.end("A"), Some((0, 0)));
    assert_eq!(m.abandoned, [1]);
    assert_eq!(m.end("B"), None);
    assert_eq!(m.counts.unmatched_ends, 1);
    // Same name nested (recursion of a region): innermost first.
    m.begin("R", 10, 2);
    m.begin("R", 11, 3);
    assert_eq!(m.end("R"), Some((11, 3)));
    assert_eq!(m.end("R"), Some((10, 2)));
}

/// Writes a recording directory with a region trace and probe records.
fn write_recording(dir: &Path) {
    // Process 100, two threads. Thread 101: region "work" (sites 1 BEGIN,
    // 2 END) 10 times with durations 100 × 9 and 600 (excess 500), keyed
    // region "lookup" (sites 3 BEGIN_KEY, 4 END) with keys 1 and 2, 10 each, 50 and 500 ns
    // (excess 0 per key). Thread 102: "work" 10 × 100 (excess 0).
    let mut t1 = Vec::new();
    let mut at = 1_000_000u64;
    for k in 0..10 {
        let d = if k == 9 { 600 } else { 100 };
        t1.push(RegionEvent::Begin { ticks: at, site: 1 });
        t1.push(RegionEvent::End {
            ticks: at + d,
            site: 2,
        });
        at += 1000;
    }
    for (key, d) in [(1u64, 50u64), (2, 500)] {
        for _ in 0..10 {
            t1.push(RegionEvent::BeginKey {
                ticks: at,
                site: 3,
                key,
            });
            t1.push(RegionEvent::End {
                ticks: at + d,
                site: 4,
            });
            at += 1000;
        }
    }
    let mut t2 = Vec::new();
    let mut at = 1_000_500u64;
    for _ in 0..10 {
        t2.push(RegionEvent::Begin { ticks: at, site: 1 });
        t2.push(RegionEvent::End {
            ticks: at + 100,
            site: 2,
        });
        at += 1000;
    }
    let trace = RegionTraceBuilder::new(100)
        .finished()
        .site(1, SiteKind::Begin, "work", "/src/app.c", 10)
        .site(2, SiteKind::End, "work", "/src/app.c", 12)
        .site(3, SiteKind::BeginKey, "lookup", "/src/app.c", 20)
        .site(4, SiteKind::End, "lookup", "/src/app.c", 22)
        .thread(101, t1)
        .thread(102, t2)
        .build();
    std::fs::create_dir_all(dir.join("regions")).unwrap();
    std::fs::write(dir.join("regions/100.creg"), trace).unwrap();
    // Thread lifetimes: 101 lives 100 000 ns, 102 lives 50 000 ns.
    std::fs::create_dir_all(dir.join(DIR)).unwrap();
    ProbeManifest {
        format_version: MANIFEST_VERSION,
        root_pid: 100,
        every: 1,
        thread_events: true,
        ..Default::default()
    }
    .write(dir)
    .unwrap();
    let mut w = ProbeWriter::create(&dir.join(DIR).join(EVENTS)).unwrap();
    for (tid, start, end) in [
        (101u32, 990_000u64, 1_090_000u64),
        (102, 1_000_000, 1_050_000),
    ] {
        for (kind, t) in [
            (ProbeEventKind::ThreadStart, start),
            (ProbeEventKind::ThreadExit, end),
        ] {
            w.push(&ProbeEvent {
                time_ns: t,
                pid: 100,
                tid,
                arg: 100,
                kind,
                probe: 0,
            })
            .unwrap();
        }
    }
    w.flush().unwrap();
}

#[test]
fn region_traces_and_thread_lifetimes_on_disk_reach_the_report() {
    let tmp = tempfile::tempdir().unwrap();
    write_recording(tmp.path());
    let rec = Recording::open(tmp.path()).unwrap();
    let analysis = analyze_using(
        &rec,
        &AnalysisOptions::default(),
        Symbols::unresolved(),
        &[&SciAnalyzer],
        &NoProgress,
    );
    let json = serde_json::to_value(&analysis.report).unwrap();
    let sci = &json["sci"];
    let r: &SciReport = analysis.report.section::<SciReport>().unwrap();
    // "work": 20 executions, d_min 100; excess 500 (thread 101) + 0.
    // T = 100 000 + 50 000 → SCI = 500 / 150 000; max per thread
    // 500 / 100 000 = 0.005.
    let work = r.blocks.iter().find(|b| &*b.name == "work").unwrap();
    assert_eq!(
        (work.occurrences, work.min_ns, work.excess_ns),
        (20, 100, 500)
    );
    assert!(close(work.sci.unwrap(), 500.0 / 150_000.0));
    assert!(close(work.sci_max_thread.unwrap(), 0.005));
    assert_eq!(work.site.file.as_deref(), Some("/src/app.c"));
    assert_eq!(work.site.line, Some(10));
    // "lookup" per key: no excess.
    let keys: Vec<(Option<&str>, u64, u64)> = r
        .blocks
        .iter()
        .filter(|b| &*b.name == "lookup")
        .map(|b| (b.key.as_deref(), b.min_ns, b.excess_ns))
        .collect();
    assert_eq!(keys.len(), 2);
    assert!(keys.contains(&(Some("1"), 50, 0)) && keys.contains(&(Some("2"), 500, 0)));
    // The JSON contract.
    assert_eq!(sci["blocks"][0]["name"], "work");
    assert_eq!(sci["blocks"][0]["kind"], "region");
    assert_eq!(sci["blocks"][0]["key"], serde_json::Value::Null);
    assert_eq!(sci["blocks"][0]["site"]["line"], 10);
    for k in [
        "occurrences",
        "min_ns",
        "median_ns",
        "mean_ns",
        "total_ns",
        "excess_ns",
        "sci",
        "sci_max_thread",
    ] {
        assert!(sci["blocks"][0].get(k).is_some(), "sci.blocks[].{k}");
    }
    let threads = sci["threads"].as_array().unwrap();
    let t101 = threads.iter().find(|t| t["tid"] == 101).unwrap();
    assert_eq!(t101["duration_ns"], 100_000);
    assert_eq!(t101["duration_source"], "task_events");
    assert_eq!(sci["summary"]["threads_with_lifetimes"], 2);
    assert_eq!(sci["summary"]["region_executions"], 40);
}

/// Lock executions scored straight from the lock analysis's events
/// (`StreamedLocks`) give the section that copying them into executions
/// gives: two threads streamed, with waits worked out by hand (thread 0:
/// 0, 5, 0, 40 … ns on lock A; thread 1: 2, 0, 7 … on A and B), beside a
/// copied thread's executions of a region.
#[test]
fn streamed_lock_executions_score_like_copied_ones() {
    use contend::locks::{EventSet, LockEventFields, Outcome};
    use contend::sci::{score_executions_streamed, StreamedLocks};
    use contend_trace::Primitive;
    let mut set = EventSet::default();
    let mut push = |thread: u32, object: u32, at: u64, wait: u64, outcome: Outcome| {
        set.events.push(
            LockEventFields {
                thread,
                object,
                site: 0,
                primitive: Primitive::Mutex,
                outcome,
                requested_ns: at,
                acquired_ns: at + wait,
                released_ns: at + wait + 3,
                contended: wait > 0,
                unreleased: false,
            }
            .pack(),
        );
    };
    // thread 0: 12 acquisitions of object 0, 100 ns apart, and a failed try
    for k in 0..12u64 {
        push(
            0,
            0,
            1_000 + 100 * k,
            [0, 5, 0, 40][k as usize % 4],
            Outcome::Acquired,
        );
    }
    push(0, 0, 3_000, 0, Outcome::Busy);
    // thread 1: 11 acquisitions alternating objects 0 and 1
    for k in 0..11u64 {
        push(
            1,
            (k % 2) as u32,
            2_000 + 50 * k,
            [2, 0, 7][k as usize % 3],
            Outcome::Acquired,
        );
    }
    let mut rows = contend::sci::metric::LockRows::new(2, 1, usize::MAX);
    rows.insert(Primitive::Mutex, 0, 0, 0);
    rows.insert(Primitive::Mutex, 0, 1, 1);
    let input = ScoreInput {
        counted: Vec::new(),
        blocks: vec![
            block(BlockKind::Lock, "pthread_mutex_lock", Some("A")),
            block(BlockKind::Lock, "pthread_mutex_lock", Some("B")),
            block(BlockKind::Region, "work", None),
        ],
        threads: vec![thread(10, 100_000), thread(11, 50_000), thread(12, 80_000)],
        executions: vec![],
    };
    // Copied: every acquisition as an execution of its block.
    let mut copied: Vec<Vec<Execution>> = vec![Vec::new(); 3];
    for e in &set.events {
        if e.outcome() == Outcome::Acquired {
            copied[e.thread() as usize].push(Execution {
                block: e.object,
                start_ns: e.requested_ns(),
                end_ns: e.acquired_ns(),
            });
        }
    }
    let region = run(2, 5_000, &[10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 110]);
    copied[2] = region.clone();
    let want = contend::sci::score_executions(&input, copied);
    let streamed = StreamedLocks {
        set: &set,
        threads: vec![(0, 0..13), (1, 13..24)],
        rows,
    };
    let got = score_executions_streamed(
        &input,
        vec![Vec::new(), Vec::new(), region],
        Some(&streamed),
    );
    assert_eq!(got, want);
    // Lock A: 12 + 6 acquisitions (thread 1's k = 0, 2, …, 10).
    let a = got
        .0
        .iter()
        .find(|b| b.key.as_deref() == Some("A"))
        .unwrap();
    assert_eq!(a.occurrences, 18);
}

/// Durations are grouped in 4-byte slots while all fit and in 8-byte ones
/// once one does not (here a 5 s execution): the same figures either way.
#[test]
fn a_duration_past_four_seconds_is_kept_whole() {
    let short = [10u64, 20, 30, 40, 50, 60, 70, 80, 90, 100];
    let mut long = short;
    long[9] = 5_000_000_000;
    for (durations, total, max) in [
        (short, 550u64, 100u64),
        (long, 450 + 5_000_000_000, 5_000_000_000),
    ] {
        let input = ScoreInput {
            counted: Vec::new(),
            blocks: vec![block(BlockKind::Region, "work", None)],
            threads: vec![thread(1, 10_000_000_000)],
            executions: vec![run(0, 1_000, &durations)],
        };
        let (blocks, _) = score(&input);
        let b = &blocks[0];
        assert_eq!(b.total_ns, total);
        assert_eq!(b.min_ns, 10);
        assert_eq!(b.quantiles.last().unwrap().ns, max);
        let last = b.histogram.last().unwrap();
        assert!(last.lower_ns <= max && max < last.upper_ns, "{last:?}");
        // excess over the fastest: total − 10 × 10 ns
        assert_eq!(b.excess_ns, total - 100);
    }
}

/// A thread whose condition waits return at the instant the mutex is
/// taken again (a call of no time at the end of the one before) is
/// streamed too, and scores like its copied executions: there the mutex
/// acquisition is a child of the wait (adding nothing to its exclusive
/// time), and a second zero-time call of the same block at that instant
/// is recursive (worked out by hand: block 1 counts 12 executions and 12
/// recursive ones).
#[test]
fn zero_time_calls_at_a_return_instant_stream_like_copied_ones() {
    use contend::locks::{EventSet, LockEventFields, Outcome};
    use contend::sci::{score_executions_streamed, StreamedLocks};
    use contend_trace::Primitive;
    let mut set = EventSet::default();
    let mut push = |object: u32, primitive: Primitive, at: u64, wait: u64| {
        set.events.push(
            LockEventFields {
                thread: 0,
                object,
                site: 0,
                primitive,
                outcome: Outcome::Acquired,
                requested_ns: at,
                acquired_ns: at + wait,
                released_ns: at + wait + 3,
                contended: wait > 0,
                unreleased: false,
            }
            .pack(),
        );
    };
    for k in 0..12u64 {
        let t = 1_000 * (k + 1);
        push(0, Primitive::Cond, t, 100 + k); // the wait: [t, t + 100 + k]
        push(1, Primitive::Mutex, t + 100 + k, 0); // re-acquired as it returns
        push(1, Primitive::Mutex, t + 100 + k, 0); // the same call again: recursive
    }
    let mut rows = contend::sci::metric::LockRows::new(2, 1, usize::MAX);
    rows.insert(Primitive::Cond, 0, 0, 0);
    rows.insert(Primitive::Mutex, 0, 1, 1);
    let input = ScoreInput {
        counted: Vec::new(),
        blocks: vec![
            block(BlockKind::Cond, "pthread_cond_wait", Some("c")),
            block(BlockKind::Lock, "pthread_mutex_lock", Some("m")),
        ],
        threads: vec![thread(10, 100_000)],
        executions: vec![],
    };
    let copied: Vec<Execution> = set
        .events
        .iter()
        .map(|e| Execution {
            block: e.object,
            start_ns: e.requested_ns(),
            end_ns: e.acquired_ns(),
        })
        .collect();
    let want = contend::sci::score_executions(&input, vec![copied]);
    let streamed = StreamedLocks {
        set: &set,
        threads: vec![(0, 0..36)],
        rows,
    };
    let got = score_executions_streamed(&input, vec![Vec::new()], Some(&streamed));
    assert_eq!(got, want);
    let m = got
        .0
        .iter()
        .find(|b| b.key.as_deref() == Some("m"))
        .unwrap();
    assert_eq!((m.occurrences, m.recursive), (12, 12));
    let c = got
        .0
        .iter()
        .find(|b| b.key.as_deref() == Some("c"))
        .unwrap();
    assert_eq!((c.occurrences, c.exclusive_total_ns), (12, c.total_ns));
}
