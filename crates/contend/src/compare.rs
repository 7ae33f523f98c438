//! Comparison of several runs (Venter 2016, Section 3.2.3; Tables 4.16–4.18).
//!
//! The thesis's comparison tool puts every value of the first analysis
//! output beside the same value of the others, with the percentage of change
//! relative to the first. [`Comparison::new`] does the same for [`Report`]s,
//! section by section: every section offers its numbers
//! ([`ReportSection::comparable`]):
//!
//! * **metrics**: run-wide numbers matched by key (the lock summary,
//!   critical path and other waits, `locks.summary.wait_ns` …; the MPI
//!   classes and patterns, `mpi.late_sender.wait_ns` …). Where a run lacks
//!   a key, the section decides whether that is 0 (an other-wait kind the
//!   run did not record) or no value (a run without MPI traces: `null`).
//! * **item lists**: per-item rows matched by name (`by_lock` by lock
//!   name, `by_site` by the site's display string, `mpi_by_rank` by rank,
//!   `mpi_by_site` by operation and site, `openmp_by_mutex` by name,
//!   `openmp_by_barrier` and `openmp_by_region` by construct,
//!   `futex_by_word` by the word's name); an
//!   item missing from a run has
//!   no values there (blank, JSON `null`). When a run has several items of
//!   the same name (the same static object in several processes, heap
//!   locks made at one line), the n-th of them is matched with the n-th of
//!   that name in the other runs, and named with its place (`name #2`).
//!
//! Change is `(value − first) / first × 100` per cent, relative to the first
//! run; it is undefined (`None`, shown as `n/a`) when the first value is 0,
//! and absent (`None`, shown blank) when either value is missing.
//!
//! Rows are kept in full; renderers show the rows whose
//! [`ComparedItem::best_rank`] is below the requested `top`, i.e. an item in
//! the top N of *any* run.
//!
//! ## JSON shape
//!
//! `contend compare --format json` writes (documented contract, keys are
//! only ever added):
//!
//! ```json
//! {
//!   "runs": [ { "label": "single", "run": { …RunInfo… }, "warnings": [],
//!               "no_events_reason": null } ],
//!   "metrics": [ { "key": "locks.summary.wait_ns", "label": "Wait time",
//!                  "unit": "ns", "group": "summary",
//!                  "values": [200.0, 150.0], "change_pct": [null, -25.0] } ],
//!   "by_lock": [ { "name": "queue_lock", "kind": "mutex", "best_rank": 0,
//!                  "metrics": [ …same shape as "metrics"… ] } ],
//!   "by_site": [ …same shape as "by_lock"; "kind" lists the object kinds… ],
//!   "mpi_by_rank": [ …same shape; "name" is "rank 3", "kind" its host… ],
//!   "mpi_by_site": [ …same shape; "name" is "MPI_Send at main (app.c:12)"… ]
//! }
//! ```
//!
//! `metrics` holds every section's metrics, section after section in
//! registration order; the item lists follow under their keys, those of
//! sections no run has (`mpi_by_rank` without MPI traces) left out.
//! `unit` is `count`, `ns` or `fraction` (a share in [0, 1]); `values` has
//! one entry per run (`null` where the item is missing from that run);
//! `change_pct[0]` is always `null`. Item lists are not truncated.

use std::collections::HashMap;

use serde::ser::{SerializeMap, SerializeStruct};
use serde::Serialize;

use crate::locks::LockReport;
use crate::report::compared::{
    percent_change, ComparedItem, ComparedList, ComparedMetric, ComparedPart, Item, Metric,
};
use crate::report::layout::{command_line, exit_status, Body, Cell, Column, Panel, Row, Table};
use crate::report::{RenderOptions, Report, ReportSection};

/// One run of a comparison.
#[derive(Debug)]
pub struct ComparedRun {
    /// Column heading chosen by the user (e.g. `single`, `two-locks`).
    pub label: String,
    /// The run's full report.
    pub report: Report,
}

/// Serialised as `{label, run, warnings, no_events_reason}` (the lock
/// section's reason, `null` when it has events): the tables of the report
/// are already in the comparison's rows.
impl Serialize for ComparedRun {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("ComparedRun", 4)?;
        st.serialize_field("label", &self.label)?;
        st.serialize_field("run", &self.report.run)?;
        st.serialize_field("warnings", &self.report.warnings)?;
        st.serialize_field(
            "no_events_reason",
            &self
                .report
                .section::<LockReport>()
                .and_then(|l| l.no_events_reason.as_ref()),
        )?;
        st.end()
    }
}

/// Several reports side by side, every value relative to the first run.
/// Shape and matching rules: see the [module docs](self).
#[derive(Debug)]
pub struct Comparison {
    /// The runs, the first being the base of every change.
    pub runs: Vec<ComparedRun>,
    /// Every section's run-wide metrics, lined up; within a section in the
    /// first run's order, metrics only later runs have coming last.
    pub metrics: Vec<ComparedMetric>,
    /// Every section's item lists, lined up, each in order of first
    /// appearance (the first run's order, then items only later runs have).
    pub lists: Vec<ComparedList>,
}

impl Serialize for Comparison {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        map.serialize_entry("runs", &self.runs)?;
        map.serialize_entry("metrics", &self.metrics)?;
        for l in &self.lists {
            if l.list.always || !l.items.is_empty() {
                map.serialize_entry(l.list.key, &l.items)?;
            }
        }
        map.end()
    }
}

impl Comparison {
    /// Compares `reports` (label, report), the first being the base.
    /// Usually two or more; one run gives a table without changes.
    pub fn new(reports: Vec<(String, Report)>) -> Comparison {
        let runs: Vec<ComparedRun> = reports
            .into_iter()
            .map(|(label, report)| ComparedRun { label, report })
            .collect();
        let n = runs.len();
        let mut metrics = Vec::new();
        let mut lists = Vec::new();
        for key in section_keys(&runs) {
            let per_run: Vec<Option<crate::report::Comparable>> = runs
                .iter()
                .map(|r| {
                    r.report
                        .sections()
                        .iter()
                        .find(|s| s.key() == key)
                        .and_then(|s| s.comparable())
                })
                .collect();
            let Some(first) = per_run.iter().flatten().next() else {
                continue;
            };
            let missing_is_zero = first.missing_is_zero;
            let mut section_metrics = align(
                n,
                per_run.iter().map(|c| {
                    c.iter()
                        .flat_map(|c| c.metrics.iter())
                        .map(|m| (m.key.clone(), m))
                }),
            );
            for cm in &mut section_metrics {
                if missing_is_zero {
                    for v in &mut cm.values {
                        v.get_or_insert(0.0);
                    }
                }
                cm.change_pct = changes(&cm.values);
                cm.section = key;
            }
            metrics.extend(section_metrics);
            for (i, list) in first.lists.iter().enumerate() {
                let items = align_items(
                    n,
                    per_run.iter().map(|c| {
                        c.iter()
                            .flat_map(|c| c.lists.get(i))
                            .flat_map(|l| l.items.iter())
                    }),
                    key,
                );
                lists.push(ComparedList {
                    list: crate::report::ItemList {
                        items: Vec::new(),
                        ..list.clone()
                    },
                    section: key,
                    items,
                });
            }
        }
        Comparison {
            runs,
            metrics,
            lists,
        }
    }

    /// The lined-up item list with JSON key `key` (`by_lock`,
    /// `mpi_by_rank`); empty when no run has it.
    pub fn items(&self, key: &str) -> &[ComparedItem] {
        self.lists
            .iter()
            .find(|l| l.list.key == key)
            .map_or(&[], |l| l.items.as_slice())
    }

    /// The labels of the runs, in order.
    pub fn labels(&self) -> Vec<String> {
        self.runs.iter().map(|r| r.label.clone()).collect()
    }

    /// The panels of the comparison, in display order: the runs, the
    /// warnings, then each compared section's tables
    /// ([`ReportSection::layout_comparison`]).
    pub fn panels(&self, opts: &RenderOptions) -> Vec<Panel> {
        let rows = self
            .runs
            .iter()
            .map(|run| {
                let r = &run.report;
                Row {
                    key: run.label.clone(),
                    cells: vec![
                        Cell::Text(run.label.clone()),
                        Cell::Text(command_line(&r.run.command)),
                        Cell::Text(exit_status(r.run.exit_code, r.run.signal)),
                        Cell::Ns(r.run.wall_ns),
                        Cell::Count(r.run.processes.into()),
                        Cell::Count(r.run.threads.into()),
                        Cell::Count(r.warnings.len() as u64),
                    ],
                }
            })
            .collect();
        let runs = Table {
            columns: vec![
                Column::text("Run", "label"),
                Column::text("Command", "command"),
                Column::text("Exit", "exit_status"),
                Column::num("Wall time", "wall_ns"),
                Column::num("Processes", "processes"),
                Column::num("Threads", "threads"),
                Column::num("Warnings", "warnings"),
            ],
            rows,
            ..Table::default()
        };
        let mut out = vec![Panel::new(
            "runs",
            "Runs",
            "The compared runs; every change is relative to the first (cf. Venter 2016, Section 3.2.3).",
            Body::Table(runs),
        )];
        let mut warnings: Vec<String> = Vec::new();
        for run in &self.runs {
            // A section's note that is also among the run's warnings (the
            // recording cost's) is listed once.
            let notes = run
                .report
                .sections()
                .iter()
                .flat_map(|s| s.comparison_notes())
                .chain(run.report.warnings.iter().cloned());
            for note in notes {
                let line = format!("{}: {note}", run.label);
                if !warnings.contains(&line) {
                    warnings.push(line);
                }
            }
        }
        if !warnings.is_empty() {
            out.push(Panel::new(
                "warnings",
                "Warnings",
                "Problems found while reading the recordings.",
                Body::Warnings(warnings),
            ));
        }
        out.extend(crate::report::layout::at_a_glance(
            "The run's wall time and each analysis's main figures in every run, each change relative to the \
             first run; the tables below give the detail.",
            self.glance(),
        ));
        let labels = self.labels();
        for key in section_keys(&self.runs) {
            let Some(section) = self
                .runs
                .iter()
                .flat_map(|r| r.report.sections())
                .find(|s| s.key() == key)
            else {
                continue;
            };
            let metrics: Vec<&ComparedMetric> =
                self.metrics.iter().filter(|m| m.section == key).collect();
            let lists: Vec<&ComparedList> =
                self.lists.iter().filter(|l| l.section == key).collect();
            if metrics.is_empty() && lists.is_empty() {
                continue;
            }
            let part = ComparedPart {
                runs: &labels,
                metrics: &metrics,
                lists: &lists,
            };
            out.extend(section.layout_comparison(&part, opts));
        }
        out
    }
}

impl Comparison {
    /// The lines of "At a glance": the wall time, then the metrics each
    /// section names ([`ReportSection::glance_metrics`]) in section order,
    /// those that no run has, or that are 0 in every run, left out. A line
    /// reads `Lock wait: 157.7 ms → 24.52 ms (-84.5 %)`, a value per run
    /// (`–` where a run lacks it) with its change relative to the first.
    fn glance(&self) -> Vec<String> {
        use crate::report::compared::Unit;
        let line = |name: &str, unit: Unit, values: &[Option<f64>], changes: &[Option<f64>]| {
            let parts: Vec<String> = values
                .iter()
                .zip(changes)
                .enumerate()
                .map(|(i, (v, c))| {
                    let value = Cell::metric(*v, unit).plain();
                    match (i, v) {
                        (_, None) => "–".to_string(),
                        (0, Some(_)) => value,
                        (_, Some(_)) => format!("{value} ({})", Cell::Change(*c).plain()),
                    }
                })
                .collect();
            format!("{name}: {}", parts.join(" → "))
        };
        let mut out = Vec::new();
        if self.runs.len() > 1 {
            let walls: Vec<Option<f64>> = self
                .runs
                .iter()
                .map(|r| Some(r.report.run.wall_ns as f64).filter(|&w| w > 0.0))
                .collect();
            if walls.iter().any(Option::is_some) {
                out.push(line("Wall time", Unit::Ns, &walls, &changes(&walls)));
            }
        }
        let mut named: Vec<(&'static str, &'static str)> = Vec::new();
        for key in section_keys(&self.runs) {
            for run in &self.runs {
                for s in run.report.sections().iter().filter(|s| s.key() == key) {
                    for m in s.glance_metrics() {
                        if !named.iter().any(|(k, _)| *k == m.0) {
                            named.push(m);
                        }
                    }
                }
            }
        }
        for (key, name) in named {
            let Some(m) = self.metrics.iter().find(|m| m.key == key) else {
                continue;
            };
            if m.values.iter().all(|v| v.unwrap_or(0.0) == 0.0) {
                continue;
            }
            out.push(line(name, m.unit, &m.values, &m.change_pct));
        }
        out
    }
}

/// The keys of the sections of `runs`, in order of first appearance.
fn section_keys(runs: &[ComparedRun]) -> Vec<&'static str> {
    let mut keys: Vec<&'static str> = Vec::new();
    for r in runs {
        for s in r.report.sections() {
            let s: &dyn ReportSection = s.as_ref();
            if !keys.contains(&s.key()) {
                keys.push(s.key());
            }
        }
    }
    keys
}

/// Per cent changes of `values` relative to the first (see [`ComparedMetric::change_pct`]).
fn changes(values: &[Option<f64>]) -> Vec<Option<f64>> {
    let base = values.first().copied().flatten();
    values
        .iter()
        .enumerate()
        .map(|(i, v)| match (i, base, v) {
            (0, _, _) => None,
            (_, Some(b), Some(v)) => percent_change(b, *v),
            _ => None,
        })
        .collect()
}

/// Lines up the metrics of `n` runs by key, in order of first appearance.
/// Values are `None` where a run lacks the key; `change_pct` is left empty.
fn align<'a, R, I>(n: usize, runs: R) -> Vec<ComparedMetric>
where
    R: Iterator<Item = I>,
    I: Iterator<Item = (String, &'a Metric)>,
{
    let mut out: Vec<ComparedMetric> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    for (run, metrics) in runs.enumerate() {
        for (key, m) in metrics {
            let i = *index.entry(key.clone()).or_insert_with(|| {
                out.push(ComparedMetric {
                    key: m.key.clone(),
                    label: m.label.clone(),
                    unit: m.unit,
                    group: m.group,
                    values: vec![None; n],
                    change_pct: Vec::new(),
                    section: "",
                });
                out.len() - 1
            });
            out[i].values[run] = Some(m.value);
        }
    }
    out
}

/// Lines up per-item rows of `n` runs by name; the k-th item of a name in
/// one run matches the k-th of that name elsewhere, and such items are
/// named with their place after the name (`mutex created at pool.c:12
/// #2`), so that their rows can be told apart.
fn align_items<'a, R, I>(n: usize, runs: R, section: &'static str) -> Vec<ComparedItem>
where
    R: Iterator<Item = I>,
    I: Iterator<Item = &'a Item>,
{
    struct Slot<'a> {
        name: String,
        occurrence: usize,
        kind: String,
        best_rank: usize,
        metrics: Vec<Option<&'a [Metric]>>,
    }
    let mut slots: Vec<Slot<'a>> = Vec::new();
    let mut index: HashMap<(String, usize), usize> = HashMap::new();
    for (run, items) in runs.enumerate() {
        let mut seen: HashMap<String, usize> = HashMap::new();
        for (rank, item) in items.enumerate() {
            let occurrence = seen.entry(item.name.clone()).or_insert(0);
            let nth = *occurrence;
            *occurrence += 1;
            let i = *index.entry((item.name.clone(), nth)).or_insert_with(|| {
                slots.push(Slot {
                    name: item.name.clone(),
                    occurrence: nth,
                    kind: item.kind.clone(),
                    best_rank: rank,
                    metrics: vec![None; n],
                });
                slots.len() - 1
            });
            let slot = &mut slots[i];
            slot.best_rank = slot.best_rank.min(rank);
            slot.metrics[run] = Some(&item.metrics);
        }
    }
    let repeated: std::collections::HashSet<&str> = slots
        .iter()
        .filter(|s| s.occurrence > 0)
        .map(|s| s.name.as_str())
        .collect();
    let shown: Vec<String> = slots
        .iter()
        .map(|s| {
            if repeated.contains(s.name.as_str()) {
                format!("{} #{}", s.name, s.occurrence + 1)
            } else {
                s.name.clone()
            }
        })
        .collect();
    slots
        .into_iter()
        .zip(shown)
        .map(|(slot, name)| {
            let per_run = slot.metrics.iter().map(|ms| {
                ms.iter()
                    .flat_map(|ms| ms.iter())
                    .map(|m| (m.key.clone(), m))
            });
            let mut metrics = align(n, per_run);
            for cm in &mut metrics {
                cm.change_pct = changes(&cm.values);
                cm.section = section;
            }
            ComparedItem {
                name,
                kind: slot.kind,
                best_rank: slot.best_rank,
                metrics,
            }
        })
        .collect()
}
