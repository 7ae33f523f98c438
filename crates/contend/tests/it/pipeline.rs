//! The one-way pipeline: a recording read once, every analysis a module
//! that returns its own section, the report assembled from them. A new
//! analysis needs its module and one line of registration: here a toy
//! analysis defined in the test is run beside the lock analysis, and its
//! section shows up in JSON, in every table format and in `compare`
//! without any other change.

use std::path::PathBuf;

use contend::analysis::{analyze_using, AnalysisOutput, Analyzer, Context, NoProgress, ANALYZERS};
use contend::compare::Comparison;
use contend::locks::{LockAnalyzer, LockEvents, LockReport};
use contend::render::{render, Document, OutputFormat};
use contend::report::compared::{metrics, Comparable, MetricGroup, Unit};
use contend::report::layout::{Body, Cell, Column, Panel, Row, Table};
use contend::report::{RenderOptions, ReportSection};
use contend::symbols::Symbols;
use contend::{AnalysisOptions, Recording};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/golden/recordings")
        .join(name)
}

/// The toy analysis: how many lock operations each traced process recorded.
struct OpsPerProcess;

/// Its section.
#[derive(Debug, serde::Serialize)]
struct OpsReport {
    /// (pid, operations) per process.
    processes: Vec<(u32, u64)>,
}

/// Its per-event results: the total, for an exporter.
struct OpsEvents(u64);

impl Analyzer for OpsPerProcess {
    fn name(&self) -> &'static str {
        "operations per process"
    }

    fn analyze(&self, cx: &Context<'_>) -> Option<AnalysisOutput> {
        let processes: Vec<(u32, u64)> = cx
            .recording
            .processes
            .iter()
            .map(|p| (p.trace.pid, p.trace.op_count() as u64))
            .collect();
        let total = processes.iter().map(|p| p.1).sum();
        let mut out = AnalysisOutput::new(OpsReport { processes });
        out.events = Some(Box::new(OpsEvents(total)));
        Some(out)
    }
}

impl ReportSection for OpsReport {
    fn key(&self) -> &'static str {
        "ops"
    }

    fn layout(&self, _opts: &RenderOptions) -> Vec<Panel> {
        let rows = self
            .processes
            .iter()
            .map(|(pid, n)| Row {
                key: pid.to_string(),
                cells: vec![Cell::Count(u64::from(*pid)), Cell::Count(*n)],
            })
            .collect();
        vec![Panel::new(
            "ops",
            "Operations per process",
            "Lock operations recorded per process.",
            Body::Table(Table {
                columns: vec![Column::num("pid", "pid"), Column::num("Ops", "ops")],
                rows,
                ..Table::default()
            }),
        )]
    }

    fn comparable(&self) -> Option<Comparable> {
        let total: u64 = self.processes.iter().map(|p| p.1).sum();
        Some(Comparable {
            metrics: metrics(
                MetricGroup("ops"),
                "ops.",
                [("total", "Operations", Unit::Count, total as f64)],
            ),
            missing_is_zero: false,
            lists: Vec::new(),
        })
    }
}

#[test]
fn an_analysis_is_its_module_and_one_line_of_registration() {
    let rec = Recording::open(&fixture("sharequeue-single.data")).unwrap();
    // The one line: the registry this run uses.
    let registry: &[&dyn Analyzer] = &[&LockAnalyzer, &OpsPerProcess];
    let analysis = analyze_using(
        &rec,
        &AnalysisOptions::default(),
        Symbols::unresolved(),
        registry,
        &NoProgress,
    );
    // Its section, found by type; its per-event results too.
    let ops = analysis.report.section::<OpsReport>().unwrap();
    assert_eq!(ops.processes.len(), 1);
    let total = analysis.events::<OpsEvents>().unwrap().0;
    assert_eq!(total, rec.processes[0].trace.op_count() as u64);
    assert!(total > 0);
    // The lock analysis kept its events as well: every paired event is
    // there, each with its critical-path mark.
    let locks = analysis.events::<LockEvents>().unwrap();
    assert_eq!(locks.set.events.len(), locks.critical_path.on_path.len());
    let lock_report = analysis.report.section::<LockReport>().unwrap();
    assert_eq!(
        lock_report.summary.events,
        locks.set.events.iter().filter(|e| e.is_lock()).count() as u64
    );

    let report = analysis.into_report();
    let opts = RenderOptions::default();
    // JSON: its key, after the lock section and the warnings.
    let json = render(&Document::Report(&report), OutputFormat::Json, &opts);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let mut keys: Vec<&String> = v.as_object().unwrap().keys().collect();
    keys.sort();
    assert_eq!(keys, ["locks", "ops", "run", "warnings"], "{json}");
    assert_eq!(v["ops"]["processes"][0][1], total);
    let at = |k: &str| json.find(&format!("\"{k}\"")).unwrap();
    assert!(at("run") < at("locks") && at("locks") < at("warnings") && at("warnings") < at("ops"));
    // Every table format draws its panel.
    for format in [
        OutputFormat::Text,
        OutputFormat::Markdown,
        OutputFormat::Latex,
        OutputFormat::Csv,
    ] {
        let out = render(&Document::Report(&report), format, &opts);
        assert!(
            out.contains("Operations per process") || out.contains(&format!("ops,{}", ops_pid(&v))),
            "{format}: {out}"
        );
    }
    // compare lines up its metric with no other change.
    let rec2 = Recording::open(&fixture("sharequeue-two.data")).unwrap();
    let report2 = analyze_using(
        &rec2,
        &AnalysisOptions::default(),
        Symbols::unresolved(),
        registry,
        &NoProgress,
    )
    .into_report();
    let c = Comparison::new(vec![("one".into(), report), ("two".into(), report2)]);
    let m = c.metrics.iter().find(|m| m.key == "ops.total").unwrap();
    assert_eq!(m.values[0], Some(total as f64));
    assert!(m.values[1].is_some());
    let text = render(&Document::Comparison(&c), OutputFormat::Text, &opts);
    assert!(text.contains("Operations"), "{text}");
}

fn ops_pid(v: &serde_json::Value) -> u64 {
    v["ops"]["processes"][0][0].as_u64().unwrap()
}

/// `contend::analyze` runs the registry: one section per analysis that
/// found something, in registration order.
#[test]
fn analyze_runs_the_registry_in_order() {
    let rec = Recording::open(&fixture("mpi-waits.data")).unwrap();
    let report = contend::analyze(&rec, &AnalysisOptions::default(), &NoProgress).into_report();
    let keys: Vec<&str> = report.sections().iter().map(|s| s.key()).collect();
    assert_eq!(keys, ["locks", "service", "counters", "mpi", "recording"]);
    assert_eq!(ANALYZERS.len(), 10); // + sci, futex, openmp, meters: nothing of theirs here
                                     // An MPI recording without lock traces says so in its lock section.
    let locks = report.section::<LockReport>().unwrap();
    assert!(locks
        .no_events_reason
        .as_deref()
        .is_some_and(|r| r.contains("MPI traces of 4 rank(s)")));
}
