//! Exports and figures on a hand-built recording whose timeline is worked
//! out by hand: locks released in another order than taken go to a lane
//! of their own, the critical path's hand-over is one flow from the
//! releasing thread to the woken one, the filters select the same events
//! as the report's; every figure kind draws as SVG, and the HTML page
//! holds every figure and table.

use std::io::Read;

use contend::export::{export, ExportFormat, ExportOptions, Weight};
use contend::locks::{EventFilter, LockEvents};
use contend::render::{render, Document, OutputFormat};
use contend::report::RenderOptions;
use contend::{AnalysisOptions, NoProgress, Recording};
use contend_trace::{Phase, Primitive, RawOp, TraceBuilder, NO_STACK};
use serde_json::Value;

const A: u64 = 0x6000;
const B: u64 = 0x7000;

fn op(t: u64, object: u64, phase: Phase) -> RawOp {
    RawOp {
        ticks: t,
        object,
        site: 0x401000 + object,
        primitive: Primitive::Mutex,
        phase,
        stack: NO_STACK,
    }
}

/// Thread 500: takes A at 100 and B at 200, releases A at 300 and B at
/// 400 (not nested: B outlives A); then requests A at 500, gets it at 700
/// (thread 501 released it then), releases it at 800. Thread 501: takes A
/// at 450, releases it at 700. Times in ns (CLOCK_MONOTONIC ticks).
fn recording() -> tempfile::TempDir {
    use Phase::*;
    let dir = tempfile::tempdir().unwrap();
    let bytes = TraceBuilder {
        pid: 500,
        threads: vec![
            (
                500,
                vec![
                    op(100, A, Immediate),
                    op(200, B, Immediate),
                    op(300, A, Release),
                    op(400, B, Release),
                    op(500, A, Request),
                    op(700, A, Acquired),
                    op(800, A, Release),
                ],
            ),
            (501, vec![op(450, A, Immediate), op(700, A, Release)]),
        ],
        ..TraceBuilder::default()
    }
    .to_bytes();
    std::fs::create_dir_all(dir.path().join("locks")).unwrap();
    std::fs::write(dir.path().join("locks/500.ctrace"), bytes).unwrap();
    dir
}

/// (tid, name, start ns, end ns) of a complete event.
type SliceRow = (u64, String, u64, u64);
/// (phase, id, tid, ts ns) of a flow event.
type FlowRow = (String, u64, u64, u64);

/// The Chrome JSON export: its complete events and its flow events, sorted.
fn chrome(rec: &Recording, options: &ExportOptions) -> (Vec<SliceRow>, Vec<FlowRow>) {
    let analysis = contend::analyze(rec, &AnalysisOptions::default(), &NoProgress);
    let mut out = Vec::new();
    export(&analysis, ExportFormat::Chrome, options, &mut out).unwrap();
    let v: Value = serde_json::from_slice(&out).unwrap();
    let ns = |x: &Value| (x.as_f64().unwrap() * 1000.0).round() as u64;
    let mut slices = Vec::new();
    let mut flows = Vec::new();
    for e in v["traceEvents"].as_array().unwrap() {
        match e["ph"].as_str().unwrap() {
            "X" => slices.push((
                e["tid"].as_u64().unwrap(),
                e["name"].as_str().unwrap().to_string(),
                ns(&e["ts"]),
                ns(&e["ts"]) + ns(&e["dur"]),
            )),
            "s" | "f" => flows.push((
                e["ph"].as_str().unwrap().to_string(),
                e["id"].as_u64().unwrap(),
                e["tid"].as_u64().unwrap(),
                ns(&e["ts"]),
            )),
            _ => {}
        }
    }
    slices.sort();
    flows.sort();
    (slices, flows)
}

#[test]
fn overlapping_locks_take_a_lane_and_the_hand_over_is_a_flow() {
    let dir = recording();
    let rec = Recording::open(dir.path()).unwrap();
    let analysis = contend::analyze(&rec, &AnalysisOptions::default(), &NoProgress);
    let ev = analysis.events::<LockEvents>().unwrap();
    // The walk starts at thread 500 (last operation at 800), marks its
    // second A event, jumps to 501, which released A at 700: one hand-over.
    assert_eq!(ev.critical_path.hand_overs.len(), 1);
    let (waiter, waker) = ev.critical_path.hand_overs[0];
    let w = &ev.set.events[waiter as usize];
    assert_eq!((w.requested_ns(), w.acquired_ns()), (500, 700));
    assert_eq!(ev.set.events[waker as usize].released_ns(), 700);

    let (slices, flows) = chrome(&rec, &ExportOptions::default());
    // B [200, 400] does not nest in A [100, 300]: lane 1 of thread 500,
    // whose id is 1 × 2³² + 500.
    let lane = (1u64 << 32) + 500;
    let want = vec![
        (500, "hold 0x6000".to_string(), 100, 300),
        (500, "hold 0x6000".to_string(), 700, 800),
        (500, "wait 0x6000".to_string(), 500, 700),
        (501, "hold 0x6000".to_string(), 450, 700),
        (lane, "hold 0x7000".to_string(), 200, 400),
    ];
    assert_eq!(slices, want);
    // The flow leaves 501's hold slice and ends at 500's hold slice (the
    // acquisition); its id is the waiting event's index + 1.
    let id = u64::from(waiter) + 1;
    assert_eq!(
        flows,
        vec![
            ("f".to_string(), id, 500, 700),
            ("s".to_string(), id, 501, 450)
        ]
    );

    // Event duration at least 250 ns keeps A [500, 800] of 500 and A [450,
    // 700] of 501 (the others last 200 ns), and the flow between them.
    let filtered = ExportOptions {
        filter: EventFilter {
            min_duration_ns: Some(250),
            ..EventFilter::default()
        },
        ..ExportOptions::default()
    };
    let (slices, flows) = chrome(&rec, &filtered);
    assert_eq!(
        slices,
        vec![want[1].clone(), want[2].clone(), want[3].clone()]
    );
    assert_eq!(flows.len(), 2);
    // The critical path alone: the same two events.
    let critical = ExportOptions {
        filter: EventFilter {
            critical_only: true,
            ..EventFilter::default()
        },
        ..ExportOptions::default()
    };
    assert_eq!(chrome(&rec, &critical).0, slices);
}

#[test]
fn pprof_and_folded_weigh_by_the_events() {
    let dir = recording();
    let rec = Recording::open(dir.path()).unwrap();
    let analysis = contend::analyze(&rec, &AnalysisOptions::default(), &NoProgress);
    // Folded: all wait is 200 ns at A's site; hold is 200 + 100 + 250 at
    // A's site and 200 at B's.
    for (weight, want) in [(Weight::Wait, vec![200u64]), (Weight::Hold, vec![550, 200])] {
        let mut out = Vec::new();
        export(
            &analysis,
            ExportFormat::Folded,
            &ExportOptions {
                weight,
                ..ExportOptions::default()
            },
            &mut out,
        )
        .unwrap();
        let mut got: Vec<u64> = String::from_utf8(out)
            .unwrap()
            .lines()
            .map(|l| l.rsplit_once(' ').unwrap().1.parse().unwrap())
            .collect();
        got.sort_unstable_by(|a, b| b.cmp(a));
        assert_eq!(got, want, "{weight:?}");
    }
    // pprof: a gzip stream holding a protobuf whose string table names the
    // sample types Go's mutex profiles use.
    let mut out = Vec::new();
    export(
        &analysis,
        ExportFormat::Pprof,
        &ExportOptions::default(),
        &mut out,
    )
    .unwrap();
    let mut raw = Vec::new();
    flate2::read::GzDecoder::new(&out[..])
        .read_to_end(&mut raw)
        .unwrap();
    let text = String::from_utf8_lossy(&raw);
    for s in [
        "contentions",
        "count",
        "delay",
        "nanoseconds",
        "hold",
        "lock",
        "thread",
    ] {
        assert!(text.contains(s), "{s}");
    }
    // OTF2 is an archive, not a stream: said.
    let err = export(
        &analysis,
        ExportFormat::Otf2,
        &ExportOptions::default(),
        &mut Vec::new(),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("archive") && err.contains("-o DIR"), "{err}");
}

#[test]
fn every_figure_draws_and_the_page_holds_them() {
    let dir = recording();
    let rec = Recording::open(dir.path()).unwrap();
    let analysis = contend::analyze(&rec, &AnalysisOptions::default(), &NoProgress);
    let doc = Document::Analysis(&analysis);
    let names = doc.figure_names();
    for want in [
        "lock-wait-histogram",
        "lock-wait-histogram-critical-path",
        "lock-wait-hold",
        "site-wait-hold",
        "lock-timeline",
    ] {
        assert!(names.iter().any(|n| n == want), "{want} in {names:?}");
    }
    for f in doc.figures() {
        let svg = contend::render::chart::svg(&f, true);
        assert!(
            svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"),
            "{}",
            f.name
        );
        assert!(!svg.contains("NaN") && !svg.contains("inf"), "{}", f.name);
        assert!(svg.contains(&f.title), "{}", f.name);
        // One chart alone, by name.
        let opts = RenderOptions {
            chart: Some(f.name.clone()),
            ..RenderOptions::default()
        };
        assert_eq!(
            render(&doc, OutputFormat::Svg, &opts).trim_end(),
            svg.trim_end()
        );
    }
    let html = render(&doc, OutputFormat::Html, &RenderOptions::default());
    for n in &names {
        assert!(html.contains(&format!("data-chart=\"{n}\"")), "{n}");
    }
    for table in [
        "Lock summary",
        "Critical path",
        "Per lock",
        "Per call site",
        "Per thread",
    ] {
        assert!(html.contains(&format!("<h2>{table}</h2>")), "{table}");
    }
    assert!(html.contains("class=\"sortable\""));
    // The JSON of the document is the report's.
    assert_eq!(doc.to_json(), Document::Report(&analysis.report).to_json());
}

/// A recording with pthread locks and futex calls: the lock analysis
/// collects the futex events once, for the critical path across
/// recorders, and the futex section and the exports read those (the
/// futex analysis keeps no second copy). Thread 500 as in `recording`;
/// thread 502 waits on futex word 0xf0 from 1,000 to 1,400 ns, woken by
/// thread 501's FUTEX_WAKE at 1,300–1,310 (woke 1).
#[test]
fn futex_events_are_collected_once_and_exported() {
    use contend_trace::format::futex as fx;
    use contend_trace::FutexOp;
    let fop = |ticks: u64, phase: Phase, cmd: u8, value: i32| FutexOp {
        ticks,
        word: 0xf0,
        site: 0x40_2000,
        phase,
        cmd,
        private: true,
        value,
        stack: NO_STACK,
    };
    let dir = recording();
    let path = dir.path().join("locks/500.ctrace");
    let mut b = TraceBuilder {
        pid: 500,
        threads: vec![
            (
                500,
                vec![op(100, A, Phase::Immediate), op(300, A, Phase::Release)],
            ),
            (
                501,
                vec![op(450, A, Phase::Immediate), op(700, A, Phase::Release)],
            ),
            (
                502,
                vec![op(1_500, B, Phase::Immediate), op(1_600, B, Phase::Release)],
            ),
        ],
        ..TraceBuilder::default()
    };
    b.futex.push((
        501,
        vec![
            fop(1_300, Phase::Release, fx::CMD_WAKE, 0),
            fop(1_310, Phase::Released, fx::CMD_WAKE, 1),
        ],
    ));
    b.futex.push((
        502,
        vec![
            fop(1_000, Phase::Request, fx::CMD_WAIT, 0),
            fop(1_400, Phase::Acquired, fx::CMD_WAIT, 0),
        ],
    ));
    std::fs::write(&path, b.to_bytes()).unwrap();
    let rec = Recording::open(dir.path()).unwrap();
    let analysis = contend::analyze(&rec, &AnalysisOptions::default(), &NoProgress);
    let kept = analysis
        .events::<LockEvents>()
        .unwrap()
        .across_futex
        .as_ref()
        .expect("the lock analysis keeps the futex events of its path");
    assert!(
        analysis.events::<contend::futex::FutexEvents>().is_none(),
        "the futex analysis collected them again"
    );
    let events = contend::futex::events_of(&analysis).unwrap();
    assert!(std::ptr::eq(events, kept));
    assert_eq!(events.waits.len(), 1);
    assert_eq!(events.waits[0].waker(), Some(0));
    // the futex section counts the wait and its hand-over
    let v: Value = serde_json::from_str(&Document::Report(&analysis.report).to_json()).unwrap();
    let s = &v["futex"]["summary"];
    assert_eq!(
        (s["events"].as_u64(), s["handovers"].as_u64()),
        (Some(1), Some(1))
    );
    assert_eq!(s["wait_ns"].as_u64(), Some(400));
    // and the folded export weighs it: 400 ns at the futex wait
    let mut out = Vec::new();
    export(
        &analysis,
        ExportFormat::Folded,
        &ExportOptions::default(),
        &mut out,
    )
    .unwrap();
    let folded = String::from_utf8(out).unwrap();
    assert!(
        folded.lines().any(|l| l.ends_with(" 400")),
        "no 400 ns futex wait in:\n{folded}"
    );
}
