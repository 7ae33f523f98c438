//! The service-time section in the table formats: the run-wide figures
//! (Venter 2016, Listings 3.3 and 3.4) and the service time per thread.

use super::ServiceReport;
use crate::report::compared::{metrics, Comparable, ComparedPart, MetricGroup, Unit};
use crate::report::layout::{
    compared_metric_table, seconds, take_top, Body, Cell, Column, Panel, Row, Table,
};
use crate::report::{RenderOptions, ReportSection};

impl ReportSection for ServiceReport {
    fn key(&self) -> &'static str {
        "service"
    }

    fn headlines(&self) -> Vec<String> {
        headlines(self)
    }

    fn glance_metrics(&self) -> Vec<(&'static str, &'static str)> {
        vec![
            ("service.cpu_ns", "CPU time (service time)"),
            ("service.active_threads", "Active threads"),
        ]
    }

    fn layout(&self, opts: &RenderOptions) -> Vec<Panel> {
        vec![service_panel(self), service_thread_panel(self, opts.top)]
    }

    /// The run-wide service-time figures (threads are not compared: their
    /// ids differ from run to run).
    fn comparable(&self) -> Option<Comparable> {
        use Unit::{Count, Fraction, Ns, Number};
        let ns = |s: f64| (s.max(0.0) * 1e9).round();
        let longest = self.threads.first().map_or(0.0, |t| t.cpu_s);
        #[rustfmt::skip]
        let rows = [
            ("wall_ns", "Wall time", Ns, ns(self.wall_s)),
            ("cpu_ns", "Service (CPU) time", Ns, ns(self.cpu_s)),
            ("cpu_per_wall", "CPU time / wall time", Number, self.cpu_per_wall),
            ("active_threads", "Active threads A, measured", Number, self.active_threads),
            ("active_threads_modelled", "Active threads A, modelled", Number, self.active_threads_modelled),
            ("run_queue_mean", "Run queue, mean", Number, self.run_queue_mean),
            ("threads", "Threads sampled", Count, self.threads.len() as f64),
            ("busiest_thread_share", "Busiest thread's share of CPU time", Fraction, if self.cpu_s > 0.0 { longest / self.cpu_s } else { 0.0 }),
        ];
        Some(Comparable {
            metrics: metrics(MetricGroup("service"), "service.", rows),
            missing_is_zero: false,
            lists: Vec::new(),
        })
    }

    fn layout_comparison(&self, part: &ComparedPart<'_>, _opts: &RenderOptions) -> Vec<Panel> {
        vec![Panel::new(
            "service",
            "Service time",
            "Service time and active threads of each run and their change (cf. Venter 2016, Section 3.2.3); \
             blank where a run has no service-time samples.",
            Body::Table(compared_metric_table(part, MetricGroup("service"))),
        )]
    }
}

fn service_panel(s: &ServiceReport) -> Panel {
    let fields = [
        ("wall_ns", "Wall time", seconds(s.wall_s)),
        (
            "cpu_ns",
            "CPU time, sampled (service time)",
            seconds(s.cpu_s),
        ),
        (
            "cpu_per_wall",
            "CPU time / wall time",
            Cell::Real(s.cpu_per_wall),
        ),
        (
            "active_threads",
            "Active threads A, measured (Venter 2016, Listing 3.3)",
            Cell::Real(s.active_threads),
        ),
        (
            "active_threads_modelled",
            "Active threads A, modelled on n CPUs (Venter 2016, Listing 3.4)",
            Cell::Real(s.active_threads_modelled),
        ),
        ("cpus", "CPUs available (n)", Cell::Count(s.cpus.into())),
        (
            "run_queue_mean",
            "Run queue, mean",
            Cell::Real(s.run_queue_mean),
        ),
        (
            "run_queue_max",
            "Run queue, max",
            Cell::Count(s.run_queue_max.into()),
        ),
        (
            "processes",
            "Processes sampled",
            Cell::Count(s.processes.into()),
        ),
        (
            "threads",
            "Threads sampled",
            Cell::Count(s.threads.len() as u64),
        ),
        ("samples", "Samples", Cell::Count(s.samples)),
        (
            "interval_ns",
            "Sampling interval",
            Cell::Ns((s.interval_ms * 1e6).round() as u64),
        ),
    ];
    let mut rows: Vec<Row> = fields
        .into_iter()
        .map(|(key, label, cell)| Row {
            key: key.to_string(),
            cells: vec![Cell::Text(label.to_string()), cell, Cell::Empty],
        })
        .collect();
    // The source in a word or two as the value; why it changed, in the
    // note (a text column, which a terminal's width wraps: a number column
    // does not wrap, and a sentence in it made the whole table as wide).
    let (source, why) = if let Some(at) = s.left_events_at_s {
        (
            "sched events → schedstat".to_string(),
            Some(format!(
                "scheduler events ({} threads) until {at:.3} s, then schedstat: {} records per second \
                 cost the program more than reading schedstat",
                s.sched_event_threads,
                crate::report::fmt::int_plain(s.left_events_records_per_s.unwrap_or(0))
            )),
        )
    } else if s.sched_event_threads > 0 {
        (
            "sched events".to_string(),
            Some({
                let mut note = if s.sched_event_threads as usize >= s.threads.len() {
                    format!("scheduler events for all {} threads", s.sched_event_threads)
                } else {
                    format!(
                        "scheduler events for {} threads, schedstat for the other {}",
                        s.sched_event_threads,
                        s.threads.len() - s.sched_event_threads as usize
                    )
                };
                if let Some(why) = &s.sched_wakeups_refused {
                    note.push_str(&format!(
                        "; context switches only, without the wake-ups ({why}): their run-queue \
                         wait counts the waits after preemptions, not after wake-ups"
                    ));
                }
                note
            }),
        )
    } else {
        (
            "schedstat".to_string(),
            s.sched_events_refused.as_ref().map(|why| {
                format!(
                    "scheduler events not allowed here: {why}. Root, CAP_PERFMON or \
                     kernel.perf_event_paranoid = -1 with a readable tracefs allow them: they \
                     follow each thread to its end and cost per context switch, not per thread \
                     and tick"
                )
            }),
        )
    };
    rows.push(Row {
        key: "source".into(),
        cells: vec![
            Cell::Text("Source".into()),
            Cell::Text(source),
            why.map_or(Cell::Empty, Cell::Text),
        ],
    });
    if s.stat_fallback_threads > 0 {
        rows.push(Row {
            key: "stat_fallback_threads".into(),
            cells: vec![
                Cell::Text("Threads read from stat (tick resolution)".into()),
                Cell::Count(s.stat_fallback_threads.into()),
                Cell::Empty,
            ],
        });
    }
    let table = Table {
        columns: vec![
            Column::label("Metric", "metric"),
            Column::num("Value", "value"),
            Column::wrapped("Note", "note"),
        ],
        rows,
        ..Table::default()
    };
    Panel::new(
        "service",
        "Service time",
        "CPU time the target's threads received, sampled every interval (from /proc's schedstat or the \
         kernel's scheduler events: the Source line says which), and the average number \
         of threads active while any ran (cf. Venter 2016, Sections 3.1.2 and 3.2.2.1, Listings 3.3 and 3.4).",
        Body::Table(table),
    )
}

fn service_thread_panel(s: &ServiceReport, top: usize) -> Panel {
    let (threads, omitted) = take_top(&s.threads, top);
    // A thread without a name (a recording without names) or rank (not an
    // MPI run) has an empty cell; the human formats leave out a column
    // that is empty throughout (`Table::without_empty_columns`).
    let rows = threads
        .iter()
        .map(|t| Row {
            key: format!("{}:{}", t.pid, t.tid),
            cells: vec![
                Cell::Text(format!("{}/{}", t.pid, t.tid)),
                t.name.clone().map_or(Cell::Empty, Cell::Text),
                t.rank.map_or(Cell::Empty, |r| Cell::Count(r.into())),
                seconds(t.cpu_s),
                Cell::Fraction(if s.cpu_s > 0.0 {
                    t.cpu_s / s.cpu_s
                } else {
                    0.0
                }),
                seconds(t.run_queue_wait_s),
                Cell::Count(t.slices),
            ],
        })
        .collect();
    let columns: Vec<Column> = vec![
        Column::text("pid/tid", "thread"),
        Column::text("Name", "name").explained(
            "the thread's name as the kernel had it (comm); left out when the recording has none",
        ),
        Column::num("Rank", "rank").explained("the MPI world rank of the thread's process"),
        Column::num("CPU time", "cpu_ns"),
        Column::num("Share", "cpu_share").explained("the thread's share of all sampled CPU time"),
        Column::num("Run-queue wait", "run_queue_wait_ns").explained(
            if s.sched_wakeups_refused.is_some() {
                "time runnable but waiting for a CPU (schedstat counts all of it; the scheduler \
                 events counted only the waits after preemptions: the wake-up tracepoints were not \
                 allowed, see the Source line)"
            } else if s.sched_event_threads > 0 {
                "time runnable but waiting for a CPU (the scheduler events' for the threads they \
                 followed, schedstat's for the others: see the Source line)"
            } else {
                "time runnable but waiting for a CPU (schedstat)"
            },
        ),
        Column::num("Slices", "slices").explained(if s.sched_event_threads > 0 {
            "time slices the thread ran (the scheduler events' context switches, or schedstat)"
        } else {
            "time slices the thread ran (schedstat)"
        }),
    ];
    // the CPU time drawn as bars
    let bars = columns
        .iter()
        .position(|c| c.key == "cpu_ns")
        .into_iter()
        .collect();
    let table = Table {
        columns,
        rows,
        omitted,
        bars,
        ..Table::default()
    };
    Panel::new(
        "service_threads",
        "Service time per thread",
        "CPU time per thread, most first; share = of all threads' CPU time; run-queue wait = runnable \
         but waiting for a CPU.",
        Body::Table(table),
    )
}

/// The service section's line of "At a glance": CPU time against wall
/// time, the average active threads measured (Venter 2016, Listing 3.3)
/// against the CPUs, and the time the threads waited runnable for a CPU.
fn headlines(s: &ServiceReport) -> Vec<String> {
    if s.samples == 0 || s.wall_s <= 0.0 {
        return Vec::new();
    }
    let run_queue_s: f64 = s.threads.iter().map(|t| t.run_queue_wait_s).sum();
    let mut line = format!(
        "Service time: {} of CPU in {} of wall time, {:.2} threads active on average on {} CPU{}",
        seconds(s.cpu_s).plain(),
        seconds(s.wall_s).plain(),
        s.active_threads,
        s.cpus,
        if s.cpus == 1 { "" } else { "s" }
    );
    if run_queue_s > 0.0 {
        line.push_str(&format!(
            "; the threads waited {} runnable for a CPU{}",
            seconds(run_queue_s).plain(),
            if s.sched_wakeups_refused.is_some() {
                " after preemptions (their waits after wake-ups were not seen)"
            } else {
                ""
            }
        ));
    }
    line.push('.');
    vec![line]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The Source line's note of a report with `events` of `threads`
    /// threads from the scheduler events, or refused for `refused`.
    fn source_note(events: u32, threads: usize, refused: Option<&str>) -> String {
        let s = ServiceReport {
            sched_event_threads: events,
            threads: vec![crate::service::ServiceThreadRow::default(); threads],
            sched_events_refused: refused.map(str::to_string),
            ..ServiceReport::default()
        };
        let Body::Table(table) = service_panel(&s).body else {
            panic!("a table");
        };
        let row = table
            .rows
            .iter()
            .find(|r| r.key == "source")
            .expect("a Source row");
        match &row.cells[2] {
            Cell::Text(t) => t.clone(),
            _ => String::new(),
        }
    }

    /// Without the wake-ups the glance says the run-queue wait is the
    /// waits after preemptions only.
    #[test]
    fn the_glance_qualifies_a_wait_without_the_wakeups() {
        let mut s = ServiceReport {
            samples: 10,
            wall_s: 1.0,
            cpu_s: 1.5,
            active_threads: 1.5,
            cpus: 2,
            threads: vec![crate::service::ServiceThreadRow {
                run_queue_wait_s: 0.25,
                ..Default::default()
            }],
            ..ServiceReport::default()
        };
        let full = headlines(&s).concat();
        assert!(
            full.ends_with("the threads waited 250.0 ms runnable for a CPU."),
            "{full}"
        );
        s.sched_wakeups_refused = Some("tracefs is root-only by default".into());
        let partial = headlines(&s).concat();
        assert!(
            partial.ends_with(
                "the threads waited 250.0 ms runnable for a CPU after preemptions (their waits \
                 after wake-ups were not seen)."
            ),
            "{partial}"
        );
    }

    /// The note says whether every thread came from the events (a build
    /// under `make`: all 50 did, and "schedstat for the rest" named a rest
    /// that was not there), how many did not, or why none did.
    #[test]
    fn the_source_note_counts_the_threads_of_each_source() {
        assert_eq!(
            source_note(50, 50, None),
            "scheduler events for all 50 threads"
        );
        assert_eq!(
            source_note(3, 5, None),
            "scheduler events for 3 threads, schedstat for the other 2"
        );
        assert_eq!(source_note(0, 5, None), "");
        let refused = source_note(0, 5, Some("tracefs is root-only by default"));
        assert!(
            refused
                .starts_with("scheduler events not allowed here: tracefs is root-only by default."),
            "{refused}"
        );
    }

    /// The per-thread table's notes name the source the run-queue wait and
    /// the slices came from: schedstat alone, or the scheduler events for
    /// the threads they followed (a recording by root said "schedstat"
    /// while every thread came from the events).
    #[test]
    fn the_thread_columns_name_their_source() {
        let note = |s: &ServiceReport, key: &str| {
            let Body::Table(t) = service_thread_panel(s, 10).body else {
                panic!("a table")
            };
            t.columns
                .iter()
                .find(|c| c.key == key)
                .and_then(|c| c.legend.clone())
                .unwrap_or_default()
        };
        let mut s = ServiceReport::default();
        assert!(note(&s, "run_queue_wait_ns").ends_with("(schedstat)"));
        assert!(note(&s, "slices").ends_with("(schedstat)"));
        s.sched_event_threads = 3;
        let wait = note(&s, "run_queue_wait_ns");
        assert!(wait.contains("the scheduler events'"), "{wait}");
        let slices = note(&s, "slices");
        assert!(slices.contains("context switches"), "{slices}");
    }
}
