//! Comparison of several runs (Venter 2016, Section 3.2.3; Tables 4.16–4.18).
//!
//! The thesis's comparison tool puts every value of the first analysis
//! output beside the same value of the others, with the percentage of change
//! relative to the first. [`Comparison::new`] does the same for [`Report`]s:
//!
//! * **metrics**: every summary, critical-path and other-wait number, as
//!   flattened by [`summary_metrics`], matched by key. An other-wait kind
//!   (`cond`, `barrier`, `semaphore`) that a run did not record counts as 0
//!   there: the model lists only the kinds that occurred.
//! * **by_lock**: per-lock rows ([`lock_metrics`]) matched by lock name; a
//!   lock missing from a run has no values there (blank, JSON `null`). When a
//!   run has several locks of the same name (the same static object in
//!   several processes), the n-th of them is matched with the n-th of that
//!   name in the other runs.
//! * **by_site**: per-call-site rows ([`site_metrics`]) matched by the site's
//!   display string, the same way.
//!
//! Change is `(value − first) / first × 100` per cent, relative to the first
//! run; it is undefined (`None`, shown as `n/a`) when the first value is 0,
//! and absent (`None`, shown blank) when either value is missing.
//!
//! Rows are kept in full; renderers show the rows whose [`ComparedItem::best_rank`]
//! is below the requested `top`, i.e. an item in the top N of *any* run.
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
//!   "by_site": [ …same shape as "by_lock"; "kind" lists the object kinds… ]
//! }
//! ```
//!
//! `unit` is `count`, `ns` or `fraction` (a share in [0, 1]); `values` has
//! one entry per run (`null` where the item is missing from that run);
//! `change_pct[0]` is always `null`. `by_lock`/`by_site` are not truncated.

use std::collections::HashMap;

use serde::ser::SerializeStruct;
use serde::Serialize;

use crate::report::model::{LockRow, Report, SiteRow};

/// What a metric's value measures, which decides how it is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Unit {
    /// A number of events or operations.
    Count,
    /// A duration in nanoseconds.
    Ns,
    /// A share in [0, 1] (shown as a percentage).
    Fraction,
}

/// Which table a metric belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MetricGroup {
    /// All selected lock events (Table 4.9).
    Summary,
    /// Lock events on the critical path (Table 4.10).
    CriticalPath,
    /// Condition, barrier and semaphore waits.
    OtherWaits,
    /// One synchronisation object (Table 4.12).
    Lock,
    /// One call site.
    Site,
}

/// One named number of a report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Metric {
    /// Stable machine name, the JSON path of the value where it has one
    /// (`locks.summary.wait_ns`), e.g. for CSV and scripts.
    pub key: String,
    /// Human label (`Wait time`).
    pub label: String,
    /// Unit of `value`.
    pub unit: Unit,
    /// Table the metric belongs to.
    pub group: MetricGroup,
    /// The value: a count, nanoseconds or a fraction, per `unit`.
    pub value: f64,
}

/// Metrics of one group from `(field, label, unit, value)` rows; the key is
/// `prefix` + field.
fn metrics<'a>(
    group: MetricGroup,
    prefix: &str,
    rows: impl IntoIterator<Item = (&'a str, &'a str, Unit, f64)>,
) -> Vec<Metric> {
    rows.into_iter()
        .map(|(field, label, unit, value)| Metric {
            key: format!("{prefix}{field}"),
            label: label.into(),
            unit,
            group,
            value,
        })
        .collect()
}

/// `part / whole` as a fraction; 0 when `whole` is 0.
pub(crate) fn fraction(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

/// A count or nanoseconds as a metric value.
fn n(v: u64) -> f64 {
    v as f64
}

/// The summary, critical-path and other-wait numbers of a report as one flat
/// list, in display order; every renderer and the comparison iterate it.
///
/// Keys are the JSON paths of the values (`locks.summary.wait_ns`). Two are
/// derived: `locks.summary.contended_share` (contended / lock events) and
/// `locks.critical_path.mean_event_ns` (critical-path duration counted once
/// / its events, the thesis's average mutex duration of Table 4.10). Other
/// waits get keys `locks.other_waits.<kind>.<field>`, one set per kind
/// present.
pub fn summary_metrics(r: &Report) -> Vec<Metric> {
    use Unit::{Count, Fraction, Ns};
    let s = &r.locks.summary;
    let c = &r.locks.critical_path;
    let cp_mean = c.duration_once_ns.checked_div(c.events).unwrap_or(0);
    #[rustfmt::skip]
    let summary = [
        ("program_ns", "Program duration", Ns, n(s.program_ns)),
        ("events", "Lock events", Count, n(s.events)),
        ("contended_events", "Contended events", Count, n(s.contended_events)),
        ("contended_share", "Contended share of lock events", Fraction, fraction(s.contended_events, s.events)),
        ("failed_events", "Failed attempts (trylock, timeout, error)", Count, n(s.failed_events)),
        ("duration_ns", "Event duration, every event counted", Ns, n(s.duration_ns)),
        ("duration_once_ns", "Event duration, overlaps once per thread", Ns, n(s.duration_once_ns)),
        ("wait_ns", "Wait time", Ns, n(s.wait_ns)),
        ("wait_share", "Wait share of event duration", Fraction, s.wait_share),
        ("hold_ns", "Hold time", Ns, n(s.hold_ns)),
        ("mean_event_ns", "Average event duration (overlaps once)", Ns, n(s.mean_event_ns)),
        ("max_wait_ns", "Longest wait", Ns, n(s.max_wait_ns)),
        ("unreleased_events", "Still held when the thread's trace ended", Count, n(s.unreleased_events)),
        ("unmatched_releases", "Releases without an acquisition", Count, n(s.unmatched_releases)),
    ];
    #[rustfmt::skip]
    let critical_path = [
        ("events", "Lock events on the critical path", Count, n(c.events)),
        ("event_share", "Share of all lock events", Fraction, c.event_share),
        ("contended_events", "Contended events", Count, n(c.contended_events)),
        ("duration_ns", "Event duration, every event counted", Ns, n(c.duration_ns)),
        ("duration_once_ns", "Event duration, overlaps once per thread", Ns, n(c.duration_once_ns)),
        ("wait_ns", "Wait time", Ns, n(c.wait_ns)),
        ("wait_share", "Wait share of all lock event duration", Fraction, c.wait_share),
        ("hold_ns", "Hold time", Ns, n(c.hold_ns)),
        ("mean_event_ns", "Average event duration (overlaps once)", Ns, n(cp_mean)),
        ("jumps", "Jumps to the releasing thread", Count, n(c.jumps)),
        ("other_wait_ns", "Cond/barrier/semaphore wait on the path", Ns, n(c.other_wait_ns)),
    ];
    let mut m = metrics(MetricGroup::Summary, "locks.summary.", summary);
    m.extend(metrics(
        MetricGroup::CriticalPath,
        "locks.critical_path.",
        critical_path,
    ));
    for w in &r.locks.other_waits {
        #[rustfmt::skip]
        let rows = [
            ("events", "waits", Count, n(w.events)),
            ("contended_events", "had to wait", Count, n(w.contended_events)),
            ("wait_ns", "wait time", Ns, n(w.wait_ns)),
            ("critical_wait_ns", "wait on the critical path", Ns, n(w.critical_wait_ns)),
            ("timeouts", "timeouts", Count, n(w.timeouts)),
        ];
        let prefix = format!("locks.other_waits.{}.", w.kind);
        m.extend(
            metrics(MetricGroup::OtherWaits, &prefix, rows)
                .into_iter()
                .map(|mut metric| {
                    metric.label = format!("{}: {}", w.kind, metric.label);
                    metric
                }),
        );
    }
    m
}

/// The compared numbers of one synchronisation object (keys are the
/// [`LockRow`] field names).
pub fn lock_metrics(l: &LockRow) -> Vec<Metric> {
    use Unit::{Count, Ns};
    #[rustfmt::skip]
    let rows = [
        ("events", "Events", Count, n(l.events)),
        ("contended_events", "Contended events", Count, n(l.contended_events)),
        ("wait_ns", "Wait time", Ns, n(l.wait_ns)),
        ("hold_ns", "Hold time", Ns, n(l.hold_ns)),
        ("max_wait_ns", "Longest wait", Ns, n(l.max_wait_ns)),
        ("critical_events", "Events on the critical path", Count, n(l.critical_events)),
        ("critical_wait_ns", "Wait on the critical path", Ns, n(l.critical_wait_ns)),
    ];
    metrics(MetricGroup::Lock, "", rows)
}

/// The compared numbers of one call site (keys are the [`SiteRow`] field
/// names).
pub fn site_metrics(s: &SiteRow) -> Vec<Metric> {
    use Unit::{Count, Ns};
    #[rustfmt::skip]
    let rows = [
        ("events", "Events", Count, n(s.events)),
        ("contended_events", "Contended events", Count, n(s.contended_events)),
        ("wait_ns", "Wait time", Ns, n(s.wait_ns)),
        ("hold_ns", "Hold time", Ns, n(s.hold_ns)),
        ("critical_wait_ns", "Wait on the critical path", Ns, n(s.critical_wait_ns)),
    ];
    metrics(MetricGroup::Site, "", rows)
}

/// Change of `value` relative to `base`, in per cent (200 → 150 = −25.0);
/// `None` when `base` is 0 (undefined).
pub fn percent_change(base: f64, value: f64) -> Option<f64> {
    if base == 0.0 {
        None
    } else {
        Some((value - base) / base * 100.0)
    }
}

/// One run of a comparison.
#[derive(Debug, Clone)]
pub struct ComparedRun {
    /// Column heading chosen by the user (e.g. `single`, `two-locks`).
    pub label: String,
    /// The run's full report.
    pub report: Report,
}

/// Serialised as `{label, run, warnings, no_events_reason}`: the tables of
/// the report are already in the comparison's rows.
impl Serialize for ComparedRun {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("ComparedRun", 4)?;
        st.serialize_field("label", &self.label)?;
        st.serialize_field("run", &self.report.run)?;
        st.serialize_field("warnings", &self.report.warnings)?;
        st.serialize_field("no_events_reason", &self.report.locks.no_events_reason)?;
        st.end()
    }
}

/// One metric across all runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ComparedMetric {
    /// Machine name (see [`Metric::key`]).
    pub key: String,
    /// Human label.
    pub label: String,
    /// Unit of the values.
    pub unit: Unit,
    /// Table the metric belongs to.
    pub group: MetricGroup,
    /// One value per run, in run order; `None` where the run lacks the item.
    pub values: Vec<Option<f64>>,
    /// Per cent change of each value relative to the first run's
    /// ([`percent_change`]); `None` for the first run, when the first value
    /// is 0, or when either value is missing. Same length as `values`.
    pub change_pct: Vec<Option<f64>>,
}

/// One lock or call site across all runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ComparedItem {
    /// Lock name or site display string: what the runs were matched by.
    pub name: String,
    /// Kind of the lock, or the kinds acquired at the site (`mutex, rwlock`),
    /// from the first run that has the item.
    pub kind: String,
    /// Smallest position (0-based) of the item in any run's list, which is
    /// sorted by wait time: the item is in the top N of some run iff
    /// `best_rank < N`.
    pub best_rank: usize,
    /// Its numbers ([`lock_metrics`] or [`site_metrics`]) across the runs.
    pub metrics: Vec<ComparedMetric>,
}

impl ComparedItem {
    /// Whether the item is among the first `top` of some run (0 = all).
    pub fn in_top(&self, top: usize) -> bool {
        top == 0 || self.best_rank < top
    }
}

/// Several reports side by side, every value relative to the first run.
/// Shape and matching rules: see the [module docs](self).
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    /// The runs, the first being the base of every change.
    pub runs: Vec<ComparedRun>,
    /// Summary, critical-path and other-wait metrics ([`summary_metrics`]),
    /// in the first run's order; metrics only later runs have come last.
    pub metrics: Vec<ComparedMetric>,
    /// Per-lock rows, matched by name, in order of first appearance (the
    /// first run's order, then locks only later runs have).
    pub by_lock: Vec<ComparedItem>,
    /// Per-site rows, matched by display string, ordered like `by_lock`.
    pub by_site: Vec<ComparedItem>,
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

        // Summary metrics: absent other-wait kinds count as 0 (see module docs).
        let per_run: Vec<Vec<Metric>> = runs.iter().map(|r| summary_metrics(&r.report)).collect();
        let mut metrics = align(
            n,
            per_run
                .iter()
                .map(|ms| ms.iter().map(|m| (m.key.clone(), m))),
        );
        for cm in &mut metrics {
            for v in &mut cm.values {
                v.get_or_insert(0.0);
            }
            cm.change_pct = changes(&cm.values);
        }

        let by_lock = align_items(
            n,
            runs.iter().map(|r| {
                r.report
                    .locks
                    .by_lock
                    .iter()
                    .map(|l| (l.name.clone(), l.kind.clone(), lock_metrics(l)))
            }),
        );
        let by_site = align_items(
            n,
            runs.iter().map(|r| {
                r.report
                    .locks
                    .by_site
                    .iter()
                    .map(|s| (s.display.clone(), s.kinds.join(", "), site_metrics(s)))
            }),
        );
        Comparison {
            runs,
            metrics,
            by_lock,
            by_site,
        }
    }
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
            let i = *index.entry(key).or_insert_with(|| {
                out.push(ComparedMetric {
                    key: m.key.clone(),
                    label: m.label.clone(),
                    unit: m.unit,
                    group: m.group,
                    values: vec![None; n],
                    change_pct: Vec::new(),
                });
                out.len() - 1
            });
            out[i].values[run] = Some(m.value);
        }
    }
    out
}

/// Lines up per-item rows (name, kind, metrics) of `n` runs by name; the
/// k-th item of a name in one run matches the k-th of that name elsewhere.
fn align_items<R, I>(n: usize, runs: R) -> Vec<ComparedItem>
where
    R: Iterator<Item = I>,
    I: Iterator<Item = (String, String, Vec<Metric>)>,
{
    struct Slot {
        name: String,
        kind: String,
        best_rank: usize,
        metrics: Vec<Option<Vec<Metric>>>,
    }
    let mut slots: Vec<Slot> = Vec::new();
    let mut index: HashMap<(String, usize), usize> = HashMap::new();
    for (run, items) in runs.enumerate() {
        let mut seen: HashMap<String, usize> = HashMap::new();
        for (rank, (name, kind, metrics)) in items.enumerate() {
            let occurrence = seen.entry(name.clone()).or_insert(0);
            let key = (name.clone(), *occurrence);
            *occurrence += 1;
            let i = *index.entry(key).or_insert_with(|| {
                slots.push(Slot {
                    name,
                    kind,
                    best_rank: rank,
                    metrics: vec![None; n],
                });
                slots.len() - 1
            });
            let slot = &mut slots[i];
            slot.best_rank = slot.best_rank.min(rank);
            slot.metrics[run] = Some(metrics);
        }
    }
    slots
        .into_iter()
        .map(|slot| {
            let per_run = slot
                .metrics
                .iter()
                .map(|ms| ms.iter().flatten().map(|m| (m.key.clone(), m)));
            let mut metrics = align(n, per_run);
            for cm in &mut metrics {
                cm.change_pct = changes(&cm.values);
            }
            ComparedItem {
                name: slot.name,
                kind: slot.kind,
                best_rank: slot.best_rank,
                metrics,
            }
        })
        .collect()
}
