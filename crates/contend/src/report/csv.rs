//! CSV in long ("tidy") format: one header and four columns for a whole
//! report, so a spreadsheet or `pandas.read_csv` takes it in one go and a
//! pivot table (rows = `key`, columns = `column`, filter on `section`)
//! rebuilds any table:
//!
//! ```text
//! section,key,column,value
//! run,wall_ns,value,14770000000
//! summary,locks.summary.wait_ns,value,38502000000
//! by_lock,1234:0xa6ccf0,wait_ns,20431880000
//! ```
//!
//! * `section`: `run`, `warnings`, `no_events`, `summary`, `critical_path`,
//!   `other_waits`, `by_lock`, `by_site`, `by_thread`, `wait_histogram`,
//!   `sites_without_debug_info`;
//! * `key`: the row within the section: a field or metric key (the JSON
//!   path, e.g. `locks.summary.wait_ns`), `pid:address` for a lock,
//!   `module+offset` for a call site, `pid:tid` for a thread, the bucket's
//!   lower bound in ns, or the 1-based position of a warning;
//! * `column`: the model's field name where there is one (`wait_ns`);
//! * `value`: raw numbers (integer nanoseconds, counts, fractions in [0, 1]),
//!   no thousands separators; text as is.
//!
//! Tables keep `top` rows like the other table formats (0 = all). Cells with
//! no value, and the human labels of metrics (the key names them), are left
//! out.
//!
//! A comparison has one row per item, metric and run:
//!
//! ```text
//! section,item,metric,run,value,change_pct
//! summary,,locks.summary.wait_ns,single,200,
//! summary,,locks.summary.wait_ns,two,150,-25
//! by_lock,queue_lock,wait_ns,two,,
//! ```
//!
//! `section` is `summary`, `critical_path`, `other_waits`, `by_lock` or
//! `by_site`; `item` is empty for run-wide metrics, else the lock name or
//! site display string; `change_pct` is relative to the first run and empty
//! for the first run, when the first value is 0 (undefined) or when either
//! value is missing (then `value` is empty too).

use std::fmt::Write as _;

use super::layout::{self, Body, Cell};
use super::model::Report;
use super::{RenderOptions, Renderer};
use crate::compare::{ComparedMetric, Comparison, MetricGroup};

/// The CSV renderer.
pub(crate) struct Csv;

/// Quotes a field when it holds a separator, quote, line break or
/// surrounding space (RFC 4180).
pub(crate) fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) || s.starts_with(' ') || s.ends_with(' ') {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn line(out: &mut String, fields: &[&str]) {
    let joined: Vec<String> = fields.iter().map(|f| field(f)).collect();
    let _ = writeln!(out, "{}", joined.join(","));
}

impl Renderer for Csv {
    fn report(&self, r: &Report, opts: &RenderOptions) -> String {
        let mut out = String::new();
        line(&mut out, &["section", "key", "column", "value"]);
        for s in layout::report_sections(r, opts) {
            match &s.body {
                Body::Table(t) => {
                    for row in &t.rows {
                        for (cell, col) in row.cells.iter().zip(&t.columns) {
                            if !col.label && *cell != Cell::Empty {
                                line(&mut out, &[s.id, &row.key, &col.key, &cell.raw()]);
                            }
                        }
                    }
                }
                Body::Warnings(items) | Body::List(items) => {
                    for (i, item) in items.iter().enumerate() {
                        line(&mut out, &[s.id, &(i + 1).to_string(), "message", item]);
                    }
                }
                Body::Paragraph(p) => line(&mut out, &[s.id, "reason", "message", p]),
            }
        }
        out
    }

    fn comparison(&self, c: &Comparison, opts: &RenderOptions) -> String {
        let mut out = String::new();
        line(
            &mut out,
            &["section", "item", "metric", "run", "value", "change_pct"],
        );
        let mut metric_rows = |section: &str, item: &str, m: &ComparedMetric| {
            for (i, run) in c.runs.iter().enumerate() {
                let value = Cell::metric(m.values[i], m.unit).raw();
                let change = m.change_pct[i].map(|p| p.to_string()).unwrap_or_default();
                line(
                    &mut out,
                    &[section, item, &m.key, &run.label, &value, &change],
                );
            }
        };
        for m in &c.metrics {
            let section = match m.group {
                MetricGroup::CriticalPath => "critical_path",
                MetricGroup::OtherWaits => "other_waits",
                _ => "summary",
            };
            metric_rows(section, "", m);
        }
        for (section, items) in [("by_lock", &c.by_lock), ("by_site", &c.by_site)] {
            for item in items.iter().filter(|it| it.in_top(opts.top)) {
                for m in &item.metrics {
                    metric_rows(section, &item.name, m);
                }
            }
        }
        out
    }
}
