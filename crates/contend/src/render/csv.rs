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
//! `section` is the metric's group for run-wide metrics (`summary`,
//! `critical_path`, `other_waits`, `mpi_class`, `mpi_pattern`) and the
//! item list's key for items (`by_lock`, `by_site`, `mpi_by_rank`,
//! `mpi_by_site`); `item` is empty for run-wide metrics, else the lock
//! name, site display string or rank; `change_pct` is relative to the first run and empty
//! for the first run, when the first value is 0 (undefined) or when either
//! value is missing (then `value` is empty too).

use std::fmt::Write as _;

use super::{Document, Renderer};
use crate::compare::Comparison;
use crate::report::compared::ComparedMetric;
use crate::report::layout::{Body, Cell, Panel};
use crate::report::RenderOptions;

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
    fn render(&self, doc: &Document<'_>, opts: &RenderOptions) -> String {
        match doc {
            Document::Comparison(c) => comparison(c, opts),
            Document::Report(_)
            | Document::Analysis(_)
            | Document::Scale(_)
            | Document::Numa(_) => panels(&doc.panels(opts)),
        }
    }
}

/// The long format of a report: one line per table cell, list item and
/// paragraph. "At a glance" is left out: its sentences repeat the tables'
/// numbers formatted for reading, where this format keeps them raw.
fn panels(panels: &[Panel]) -> String {
    let mut out = String::new();
    line(&mut out, &["section", "key", "column", "value"]);
    for s in panels
        .iter()
        .filter(|s| s.id != crate::report::layout::AT_A_GLANCE)
    {
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

/// The long format of a comparison: one line per metric (or item metric)
/// and run.
fn comparison(c: &Comparison, opts: &RenderOptions) -> String {
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
        metric_rows(m.group.0, "", m);
    }
    for l in &c.lists {
        for item in l.items.iter().filter(|it| it.in_top(opts.top)) {
            for m in &item.metrics {
                metric_rows(l.list.key, &item.name, m);
            }
        }
    }
    out
}
