//! The `meters` section in the table formats: "Meters over the run" (one
//! row per meter: average, minimum, maximum, samples, levels, time with
//! the trigger set) and "Lock waits and service time by meter state" (per
//! meter with levels: time, contended acquisitions, wait, threads waiting,
//! service time and CPUs busy while high, clear and unmetered).

use super::MetersReport;
use crate::report::layout::{take_top, Body, Cell, Column, Panel, Row, Table};
use crate::report::{RenderOptions, ReportSection};

fn opt_real(v: Option<f64>) -> Cell {
    v.map_or(Cell::Empty, Cell::Real)
}

impl ReportSection for MetersReport {
    fn key(&self) -> &'static str {
        "meters"
    }

    fn layout(&self, opts: &RenderOptions) -> Vec<Panel> {
        let (meters, omitted) = take_top(&self.meters, opts.top);
        let rows = meters
            .iter()
            .map(|m| Row {
                key: format!("{}:{}", m.name, m.scope),
                cells: vec![
                    Cell::Text(m.name.clone()),
                    Cell::Text(m.scope.clone()),
                    Cell::Text(m.unit.clone()),
                    Cell::Real(m.avg),
                    Cell::Real(m.min),
                    Cell::Real(m.max),
                    Cell::Count(m.samples),
                    opt_real(m.high),
                    opt_real(m.low),
                    m.time_high_s
                        .map_or(Cell::Empty, crate::report::layout::seconds),
                    Cell::Count(m.trigger_changes),
                ],
            })
            .collect();
        let mut caption = format!(
            "The meters recorded beside the program (contend record --meters; docs/meters.md): \
             {} instants every {:.3} ms, from {:.3} s to {:.3} s after the start.",
            self.ticks,
            self.interval_s * 1e3,
            self.first_s,
            self.last_s
        );
        for n in &self.notes {
            caption.push_str(&format!(" Note: {n}."));
        }
        let mut out = vec![Panel::new(
            "meters",
            "Meters over the run",
            &caption,
            Body::Table(Table {
                columns: vec![
                    Column::text("Meter", "name"),
                    Column::text("Scope", "scope"),
                    Column::text("Unit", "unit"),
                    Column::num("Avg", "avg").explained("average of the meter's values, in its unit"),
                    Column::num("Min", "min"),
                    Column::num("Max", "max"),
                    Column::num("Values", "samples"),
                    Column::num("High", "high").explained("trigger levels: the state turns high when the short-term average reaches High, clear again when it falls to Low"),
                    Column::num("Low", "low"),
                    Column::num("Time high", "time_high_s").explained("time of the run with the trigger set"),
                    Column::num("Changes", "trigger_changes").explained("trigger state changes"),
                ],
                rows,
                omitted,
                ..Table::default()
            }),
        )];
        if !self.split.is_empty() {
            let mut rows = Vec::new();
            for s in &self.split {
                for st in &s.states {
                    rows.push(Row {
                        key: format!("{}:{}:{}", s.meter, s.scope, st.state),
                        cells: vec![
                            Cell::Text(format!("{} {}", s.meter, s.scope)),
                            Cell::Text(match st.state.as_str() {
                                "high" => format!("high (>= {})", trim(s.high)),
                                "clear" => format!("clear (<= {} after high)", trim(s.low)),
                                other => other.to_string(),
                            }),
                            Cell::Ns(st.time_ns),
                            Cell::Fraction(st.time_share),
                            Cell::Count(st.contended_events),
                            Cell::Ns(st.wait_ns),
                            Cell::Fraction(st.wait_share),
                            opt_real(st.waiting_threads),
                            st.service_s
                                .map_or(Cell::Empty, crate::report::layout::seconds),
                            opt_real(st.cpus_busy),
                        ],
                    });
                }
            }
            out.push(Panel::new(
                "meters_split",
                "Lock waits and service time by meter state",
                "The run cut at every trigger change of each meter with levels (Fowler et al. 2011, \
                 \"above and below threshold\"): a wait is counted in each state for the part of it \
                 spent there, service time as spread evenly over its sampling interval; unmetered is \
                 the run's time before the first and after the last meter value (docs/metrics.md, \
                 \"Meters over the run\").",
                Body::Table(Table {
                    columns: vec![
                        Column::text("Meter", "meter"),
                        Column::text("State", "state").explained("trigger state: high from the short-term average reaching the high level until it falls to the low level (hysteresis), else clear"),
                        Column::num("Time", "time_ns").explained("time of the run in this state"),
                        Column::num("Time %", "time_share").explained("share of the run's time"),
                        Column::num("Contended", "contended_events").explained("contended acquisitions requested in this state"),
                        Column::num("Wait", "wait_ns").explained("lock wait time in this state"),
                        Column::num("Wait %", "wait_share").explained("share of the run's lock wait time"),
                        Column::num("Waiting", "waiting_threads").explained("average number of threads waiting for a lock in this state (wait / time)"),
                        Column::num("Service", "service_s").explained("service (CPU) time of the program in this state"),
                        Column::num("CPUs busy", "cpus_busy").explained("service / time: CPUs the program kept busy in this state"),
                    ],
                    rows,
                    ..Table::default()
                }),
            ));
        }
        out
    }
}

/// A level without needless decimals (3, 0.9, 250.5).
fn trim(x: f64) -> String {
    let s = format!("{x:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}
