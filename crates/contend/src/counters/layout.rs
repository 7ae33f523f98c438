//! The counters section in the table formats: the work measure C of the
//! speed-up model and every counter measured or missing, with the reason.

use super::CountersReport;
use crate::report::compared::{Comparable, ComparedPart, Metric, MetricGroup, Unit};
use crate::report::layout::{
    compared_metric_table, seconds, Body, Cell, Column, Panel, Row, Table,
};
use crate::report::{RenderOptions, ReportSection};

impl ReportSection for CountersReport {
    fn key(&self) -> &'static str {
        "counters"
    }

    fn layout(&self, _opts: &RenderOptions) -> Vec<Panel> {
        vec![counters_panel(self)]
    }

    /// The CPU time and every counter measured (`counters.<name>`; a
    /// counter a run could not measure has no value there).
    fn comparable(&self) -> Option<Comparable> {
        let group = MetricGroup("counters");
        let mut m = Vec::new();
        if let Some(cpu) = self.cpu_s {
            m.push(Metric {
                key: "counters.cpu_ns".into(),
                label: "CPU time (task_clock or wait4)".into(),
                unit: Unit::Ns,
                group,
                value: (cpu * 1e9).round(),
            });
        }
        for (name, v) in &self.available {
            m.push(Metric {
                key: format!("counters.{name}"),
                label: name.clone(),
                unit: if name == "task_clock" {
                    Unit::Ns
                } else {
                    Unit::Count
                },
                group,
                value: v.value as f64,
            });
        }
        Some(Comparable {
            metrics: m,
            missing_is_zero: false,
            lists: Vec::new(),
        })
    }

    fn layout_comparison(&self, part: &ComparedPart<'_>, _opts: &RenderOptions) -> Vec<Panel> {
        vec![Panel::new(
            "counters",
            "Counters",
            "CPU time and the performance counters of each run and their change; blank where a run could \
             not count them.",
            Body::Table(compared_metric_table(part, MetricGroup("counters"))),
        )]
    }
}

fn counters_panel(c: &CountersReport) -> Panel {
    let mut measure = c.work_measure.clone();
    if !c.work_measure_note.is_empty() {
        measure = format!("{measure} ({})", c.work_measure_note);
    }
    let mut rows = vec![Row {
        key: "work_measure".into(),
        cells: vec![
            Cell::Text("Work measure C".into()),
            Cell::Empty,
            Cell::Text(measure),
        ],
    }];
    if let Some(cpu) = c.cpu_s {
        let source = if c.available.contains_key("task_clock") {
            "task_clock counter: every thread's time, added by the kernel as it exits; the sampled \
             service time above misses what threads ran between the last sample and their exit, and \
             threads shorter than one interval"
        } else {
            "wait4 resource usage of the program and the children it waited for, at its exit"
        };
        rows.push(Row {
            key: "cpu_ns".into(),
            cells: vec![
                Cell::Text("CPU time, counted by the kernel".into()),
                seconds(cpu),
                Cell::Text(source.into()),
            ],
        });
    }
    for (name, v) in &c.available {
        let mut notes = Vec::new();
        if v.time_running_ns < v.time_enabled_ns {
            notes.push(format!(
                "scaled: counted {:.0}% of the time",
                100.0 * v.time_running_ns as f64 / v.time_enabled_ns.max(1) as f64
            ));
        }
        if v.user_only {
            notes.push("user mode only".to_string());
        }
        let value = if name == "task_clock" {
            Cell::Ns(v.value)
        } else {
            Cell::Count(v.value)
        };
        rows.push(Row {
            key: name.clone(),
            cells: vec![
                Cell::Text(name.clone()),
                value,
                Cell::Text(notes.join("; ")),
            ],
        });
    }
    for m in &c.missing {
        rows.push(Row {
            key: m.name.clone(),
            cells: vec![
                Cell::Text(m.name.clone()),
                Cell::Text("missing".into()),
                Cell::Text(m.reason.clone()),
            ],
        });
    }
    if let Some(scope) = &c.scope {
        rows.push(Row {
            key: "scope".into(),
            cells: vec![
                Cell::Text("Scope".into()),
                Cell::Empty,
                Cell::Text(scope.clone()),
            ],
        });
    }
    let table = Table {
        columns: vec![
            Column::text("Counter", "counter"),
            Column::num("Value", "value"),
            Column::text("Note", "note"),
        ],
        rows,
        ..Table::default()
    };
    Panel::new(
        "counters",
        "Counters",
        "Performance counters of the target and its threads (perf_event_open, inherited), and the work \
         measure C of the speed-up model: cycles where the CPU counts them, else CPU time \
         (cf. Venter 2016, Sections 3.1.1 and 3.2.1.1).",
        Body::Table(table),
    )
}
