//! The `recording` section in the table formats and in comparisons: one
//! "Recording cost" table (operations, trace bytes, the estimated time
//! added and its share) and the threads that paid most.

use super::RecordingReport;
use crate::report::compared::{metrics, Comparable, ComparedPart, Metric, MetricGroup, Unit};
use crate::report::layout::{
    take_top, titled_comparison_panels, Body, Cell, Column, Panel, Row, Table,
};
use crate::report::{fmt, RenderOptions, ReportSection};

/// Metric group of the recording cost.
pub const COST: MetricGroup = MetricGroup("recording_cost");

impl ReportSection for RecordingReport {
    fn key(&self) -> &'static str {
        "recording"
    }

    fn headlines(&self) -> Vec<String> {
        headlines(self)
    }

    /// What recording cost is said after what it found.
    fn headlines_follow(&self) -> bool {
        true
    }

    fn glance_metrics(&self) -> Vec<(&'static str, &'static str)> {
        vec![(
            "recording.cost.estimated_share",
            "Recording cost (share of the program's time)",
        )]
    }

    fn layout(&self, opts: &RenderOptions) -> Vec<Panel> {
        let c = &self.cost;
        let mut rows = vec![
            row("mode", "Recording mode", Cell::Text(self.mode.clone()), ""),
            row(
                "operations",
                "Operations recorded",
                Cell::Count(c.operations),
                &format!(
                    "{} timed records, {} counted acquisitions",
                    fmt::int_plain(c.records),
                    fmt::int_plain(c.counted)
                ),
            ),
            row("bytes", "Trace bytes", Cell::Count(c.bytes), ""),
            row(
                "bytes_per_s",
                "Trace bytes per second",
                Cell::Count(c.bytes_per_s.round() as u64),
                "",
            ),
        ];
        match (c.estimated_ns, c.estimated_share) {
            (Some(ns), share) => {
                rows.push(row(
                    "estimated_ns",
                    "Estimated time added",
                    Cell::Ns(ns),
                    &format!(
                        "of which the collector's slow path {:.3} ms",
                        c.slow_path_ns as f64 / 1e6
                    ),
                ));
                if c.process_slow_path_ns > 0 {
                    rows.push(row(
                        "process_slow_path_ns",
                        "Outside the threads",
                        Cell::Ns(c.process_slow_path_ns),
                        &format!(
                            "of the slow path, in no thread's row below: the collector's start-up (its \
                             trace file, loading the unwinder, a memory-map snapshot, the recording's \
                             calibration in its first process) in {} process{}",
                            c.processes_with_slow_path,
                            if c.processes_with_slow_path == 1 { "" } else { "es" }
                        ),
                    ));
                }
                if c.fixed_slow_path_ns > 0 {
                    rows.push(row(
                        "fixed_slow_path_ns",
                        "Fixed work",
                        Cell::Ns(c.fixed_slow_path_ns),
                        "of the slow path, what fewer records would not shorten (`--light` does not \
                         lower it): the start-up above and the slow path of the threads that wrote \
                         one record chunk at most (their chunk claims and exits)",
                    ));
                }
                let basis = super::share_basis(&c.share_of);
                rows.push(row(
                    "estimated_share",
                    "Estimated share",
                    share.map_or(Cell::Empty, Cell::Fraction),
                    basis,
                ));
            }
            (None, _) => rows.push(row(
                "estimated_ns",
                "Estimated time added",
                Cell::Empty,
                self.note.as_deref().unwrap_or(""),
            )),
        }
        if c.method.as_deref() == Some("sampled") {
            let mut what = format!("{} operations timed in situ", fmt::int_plain(c.samples));
            if let Some(w) = c.sampled_record_ns {
                what.push_str(&format!(", {w:.1} ns per record"));
            }
            if let Some(w) = c.sampled_counted_ns {
                what.push_str(&format!(", {w:.1} ns per counted acquisition"));
            }
            if let Some(cal) = self.calibration.as_ref().and_then(|k| k.record_window_ns) {
                what.push_str(&format!(" (calibration: {cal:.1} ns per record)"));
            }
            rows.push(row(
                "samples",
                "Sampled cost",
                Cell::Count(c.samples),
                &what,
            ));
        }
        if let Some(ns) = c.calibrated_ns {
            rows.push(row(
                "calibrated_ns",
                "Calibrated estimate",
                Cell::Ns(ns),
                &c.calibrated_share.map_or(String::new(), |s| {
                    format!(
                        "{:.1} % by the start-up calibration alone (one hot mutex)",
                        s * 100.0
                    )
                }),
            ));
        }
        if let Some(cal) = &self.calibration {
            let mut what = format!("{:.1} ns per timed record", cal.record_ns);
            if let Some(p) = cal.counted_pair_ns {
                what.push_str(&format!(", {p:.1} ns per counted lock + unlock pair"));
            }
            if let Some(r) = cal.multi_threaded_record_ns {
                what.push_str(&format!(" while a process has one thread; {r:.1} ns"));
                if let Some(p) = cal.multi_threaded_counted_pair_ns {
                    what.push_str(&format!(", {p:.1} ns"));
                }
                what.push_str(" once it has more");
            }
            rows.push(row(
                "calibration",
                "Calibrated at start-up",
                Cell::Ns(cal.calibration_ns),
                &format!(
                    "{what} ({} of {} processes)",
                    cal.processes_calibrated, cal.processes
                ),
            ));
        }
        let scope = scope_label(self.thread_events.as_deref()).map(|label| {
            let note = if label == SCOPE_PER_TASK {
                "kernel events inherited by every thread of the program: each of its context switches cost more, \
                 which the estimate leaves out (system-wide events need root, CAP_PERFMON or \
                 kernel.perf_event_paranoid <= 0)"
            } else {
                "one kernel event per CPU for the whole machine: nothing added to the program's context switches"
            };
            (label, note)
        });
        if let Some((value, note)) = scope {
            rows.push(row(
                "thread_events",
                "Thread lifetimes",
                Cell::Text(value.into()),
                note,
            ));
        }
        if let Some(ev) = &self.scheduler_events {
            let scope = scope_label(ev.scope.as_deref()).unwrap_or("scope not recorded");
            let mut note = format!(
                "modelled: {} of the program's records ({scope}) at {} ns each, written by the kernel in its \
                 context switches and wake-ups; not in the estimate above",
                fmt::int_plain(ev.records),
                contend_trace::meta::EVENT_RECORD_COST_NS
            );
            if let Some(at) = ev.left_at_s {
                note.push_str(&format!(
                    "; left for schedstat after {at:.3} s, where they cost more"
                ));
            }
            if ev.lost > 0 {
                note.push_str(&format!("; {} records lost", fmt::int_plain(ev.lost)));
            }
            rows.push(row(
                "scheduler_events",
                "Service-time events",
                Cell::Ns(ev.modelled_ns),
                &note,
            ));
        }
        if let Some(p) = &self.chunk_preparation {
            rows.push(row(
                "chunk_preparation",
                "Chunks prepared by the launcher",
                Cell::Ns(p.launcher_cpu_ns),
                &format!(
                    "the launcher's CPU time, not the program's: {} of the program's chunk claims found their chunk \
                     ready ({} prepared) and wrote no zeros of their own",
                    fmt::int_plain(p.claims_prepared),
                    fmt::int_plain(p.chunks_prepared)
                ),
            ));
        }
        let table = Table {
            columns: vec![
                Column::text("Measure", "measure"),
                Column::num("Value", "value"),
                Column::text("Notes", "notes"),
            ],
            rows,
            ..Table::default()
        };
        let mut caption = String::from(
            "What recording added to the program: estimated from the collector's own timing of a sample \
             of its operations where they ran (else its start-up calibration: time per timed record and \
             per counted acquisition) and the time its slow path measured; the misses its cache footprint \
             causes in the program's own code are not in it (docs/metrics.md, \"Recording cost\").",
        );
        if let Some(w) = &self.warning {
            caption.push_str(&format!(" Warning: {w}."));
        }
        let mut out = vec![Panel::new(
            "recording_cost",
            "Recording cost",
            &caption,
            Body::Table(table),
        )];
        if self.by_thread.len() > 1 {
            let (threads, omitted) = take_top(&self.by_thread, opts.top);
            let rows = threads
                .iter()
                .map(|t| Row {
                    key: format!("{}:{}", t.pid, t.tid),
                    cells: vec![
                        Cell::Text(format!("{}/{}", t.pid, t.tid)),
                        Cell::Count(t.records),
                        Cell::Count(t.counted),
                        Cell::Count(t.bytes),
                        t.estimated_ns.map_or(Cell::Empty, Cell::Ns),
                        Cell::Ns(t.slow_path_ns),
                    ],
                })
                .collect();
            out.push(Panel::new(
                "recording_cost_by_thread",
                "Recording cost per thread",
                "Timed records, counted acquisitions, record bytes and the estimated time added to each thread, most first.",
                Body::Table(Table {
                    columns: vec![
                        Column::text("pid/tid", "thread"),
                        Column::num("Records", "records"),
                        Column::num("Counted", "counted").explained("uncontended acquisitions counted without times (--light)"),
                        Column::num("Bytes", "bytes"),
                        Column::num("Added", "estimated_ns").explained("estimated time the recording added to the thread"),
                        Column::num("Slow path", "slow_path_ns").explained("of which the collector's slow path, as it timed itself"),
                    ],
                    rows,
                    omitted,
                    ..Table::default()
                }),
            ));
        }
        out
    }

    fn comparable(&self) -> Option<Comparable> {
        Some(Comparable {
            metrics: cost_metrics(self),
            missing_is_zero: false,
            lists: Vec::new(),
        })
    }

    fn comparison_notes(&self) -> Vec<String> {
        self.warning.iter().cloned().collect()
    }

    fn layout_comparison(&self, part: &ComparedPart<'_>, opts: &RenderOptions) -> Vec<Panel> {
        titled_comparison_panels(
            part,
            opts,
            &[(
                COST,
                "Recording cost",
                "What recording added to each run, as the collector estimated it from its own timing \
                 (docs/metrics.md, \"Recording cost\"), and its change relative to the first run.",
            )],
        )
    }
}

/// The label of per-task kernel events in the table.
const SCOPE_PER_TASK: &str = "per task";

/// How kernel events were opened, as the table says it: `per task` or
/// `system-wide` for the names of `contend_trace::probes` (which the
/// thread lifetimes and the scheduler events share), `None` otherwise.
fn scope_label(scope: Option<&str>) -> Option<&'static str> {
    match scope? {
        contend_trace::probes::THREAD_EVENTS_PER_TASK => Some(SCOPE_PER_TASK),
        contend_trace::probes::THREAD_EVENTS_SYSTEM_WIDE => Some("system-wide"),
        _ => None,
    }
}

fn row(key: &str, label: &str, value: Cell, notes: &str) -> Row {
    Row {
        key: key.to_string(),
        cells: vec![Cell::Text(label.into()), value, Cell::Text(notes.into())],
    }
}

/// The numbers `contend compare` lines up (keys are JSON paths).
pub fn cost_metrics(r: &RecordingReport) -> Vec<Metric> {
    use Unit::{Count, Fraction, Ns};
    let c = &r.cost;
    let mut rows = vec![
        (
            "operations",
            "Operations recorded",
            Count,
            c.operations as f64,
        ),
        ("bytes", "Trace bytes", Count, c.bytes as f64),
    ];
    if let Some(ns) = c.estimated_ns {
        rows.push(("estimated_ns", "Estimated time added", Ns, ns as f64));
    }
    if let Some(s) = c.estimated_share {
        rows.push((
            "estimated_share",
            "Estimated share of the program's time",
            Fraction,
            s,
        ));
    }
    if let Some(s) = c.calibrated_share {
        rows.push((
            "calibrated_share",
            "Calibrated estimate's share (start-up calibration alone)",
            Fraction,
            s,
        ));
    }
    metrics(COST, "recording.cost.", rows)
}

/// The recording cost's line of "At a glance": the estimated time the
/// recording added, as a share (issue 15's "Recording cost" line).
fn headlines(r: &RecordingReport) -> Vec<String> {
    use crate::report::fmt::{duration_plain as time, percent, PLAIN};
    let c = &r.cost;
    match (c.estimated_ns, c.estimated_share) {
        (Some(ns), Some(share)) => vec![format!(
            "Recording cost: an estimated {} added, {} of the {}.",
            time(ns),
            percent(share, &PLAIN),
            if c.share_of == "cpu_time" {
                "program's CPU time"
            } else {
                "traced threads' time"
            }
        )],
        _ => Vec::new(),
    }
}
