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
//!   "by_site": [ …same shape as "by_lock"; "kind" lists the object kinds… ],
//!   "mpi_by_rank": [ …same shape; "name" is "rank 3", "kind" its host… ],
//!   "mpi_by_site": [ …same shape; "name" is "MPI_Send at main (app.c:12)"… ]
//! }
//! ```
//!
//! When any run has MPI traces, `metrics` also holds the MPI class and
//! pattern numbers ([`mpi_metrics`], keys `mpi.p2p.*`, `mpi.late_sender.*`
//! …; Tables 4.16–4.18), `null` for runs without MPI traces, and
//! `mpi_by_rank`/`mpi_by_site` are present.
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
    /// All MPI point-to-point or collective calls (Venter 2016, Table 4.16).
    MpiClass,
    /// One MPI wait-state pattern (Venter 2016, Tables 4.17 and 4.18).
    MpiPattern,
    /// One MPI rank.
    MpiRank,
    /// One MPI call site.
    MpiSite,
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

/// The MPI numbers of a report compared across runs (Venter 2016, Tables
/// 4.16–4.18): per class (`mpi.p2p.*`, `mpi.collective.*`: events, total
/// duration, wait) and per pattern (`mpi.late_sender.*` …: wait states,
/// total duration, total wait, average and longest wait). Keys are the JSON
/// paths of the values. Empty when the report has no MPI part.
pub fn mpi_metrics(r: &Report) -> Vec<Metric> {
    use Unit::{Count, Ns};
    let Some(m) = &r.mpi else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (key, label, c) in [
        ("p2p", "Point to point", &m.p2p),
        ("collective", "Collective", &m.collective),
    ] {
        #[rustfmt::skip]
        let rows = [
            ("events", "calls", Count, n(c.events)),
            ("duration_ns", "total duration", Ns, n(c.duration_ns)),
            ("wait_states", "wait states", Count, n(c.wait_states)),
            ("wait_ns", "total wait", Ns, n(c.wait_ns)),
        ];
        out.extend(
            metrics(MetricGroup::MpiClass, &format!("mpi.{key}."), rows)
                .into_iter()
                .map(|mut metric| {
                    metric.label = format!("{label}: {}", metric.label);
                    metric
                }),
        );
    }
    for p in crate::mpi::Pattern::ALL {
        let s = m.pattern(p);
        #[rustfmt::skip]
        let rows = [
            ("count", "wait states", Count, n(s.count)),
            ("duration_ns", "total duration", Ns, n(s.duration_ns)),
            ("wait_ns", "total wait", Ns, n(s.wait_ns)),
            ("avg_wait_ns", "average wait", Ns, n(s.avg_wait_ns)),
            ("max_wait_ns", "longest wait", Ns, n(s.max_wait_ns)),
        ];
        out.extend(
            metrics(MetricGroup::MpiPattern, &format!("mpi.{}.", p.key()), rows)
                .into_iter()
                .map(|mut metric| {
                    metric.label = format!("{}: {}", p.label(), metric.label);
                    metric
                }),
        );
    }
    out
}

/// The compared numbers of one MPI rank (keys are the
/// [`MpiRankRow`](crate::mpi::MpiRankRow) field names).
pub fn mpi_rank_metrics(row: &crate::mpi::MpiRankRow) -> Vec<Metric> {
    use Unit::{Count, Ns};
    #[rustfmt::skip]
    let rows = [
        ("events", "Calls", Count, n(row.events)),
        ("duration_ns", "Time in MPI", Ns, n(row.duration_ns)),
        ("wait_ns", "Wait experienced", Ns, n(row.wait_ns)),
        ("caused_ns", "Wait caused (lateness)", Ns, n(row.caused_ns)),
    ];
    metrics(MetricGroup::MpiRank, "", rows)
}

/// The compared numbers of one MPI call site (keys are the
/// [`MpiSiteRow`](crate::mpi::MpiSiteRow) field names).
pub fn mpi_site_metrics(row: &crate::mpi::MpiSiteRow) -> Vec<Metric> {
    use Unit::{Count, Ns};
    #[rustfmt::skip]
    let rows = [
        ("events", "Calls", Count, n(row.events)),
        ("duration_ns", "Total duration", Ns, n(row.duration_ns)),
        ("avg_duration_ns", "Average duration", Ns, n(row.avg_duration_ns)),
        ("wait_ns", "Total wait", Ns, n(row.wait_ns)),
    ];
    metrics(MetricGroup::MpiSite, "", rows)
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
    /// Per MPI rank ([`mpi_rank_metrics`]), matched by rank (`rank 3`);
    /// empty (no JSON key) when no run has MPI traces. The MPI pattern
    /// metrics ([`mpi_metrics`]) are in `metrics`, `null` for runs without
    /// MPI traces.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub mpi_by_rank: Vec<ComparedItem>,
    /// Per MPI call site ([`mpi_site_metrics`]), matched by operation and
    /// site (`MPI_Send at main (app.c:12)`); empty when no run has MPI
    /// traces.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub mpi_by_site: Vec<ComparedItem>,
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
        let mut mpi_by_rank = Vec::new();
        let mut mpi_by_site = Vec::new();
        if runs.iter().any(|r| r.report.mpi.is_some()) {
            // MPI metrics: a run without MPI traces has no values (null).
            let per_run: Vec<Vec<Metric>> = runs.iter().map(|r| mpi_metrics(&r.report)).collect();
            let mut mpi = align(
                n,
                per_run
                    .iter()
                    .map(|ms| ms.iter().map(|m| (m.key.clone(), m))),
            );
            for cm in &mut mpi {
                cm.change_pct = changes(&cm.values);
            }
            metrics.extend(mpi);
            mpi_by_rank = align_items(
                n,
                runs.iter().map(|r| {
                    let rows = r.report.mpi.as_ref().map(|m| m.by_rank.as_slice());
                    rows.unwrap_or_default().iter().map(|row| {
                        (
                            format!("rank {}", row.rank),
                            row.host.clone(),
                            mpi_rank_metrics(row),
                        )
                    })
                }),
            );
            mpi_by_site = align_items(
                n,
                runs.iter().map(|r| {
                    let rows = r.report.mpi.as_ref().map(|m| m.by_site.as_slice());
                    rows.unwrap_or_default().iter().map(|row| {
                        (
                            format!("{} at {}", row.operation, row.display),
                            row.operation.clone(),
                            mpi_site_metrics(row),
                        )
                    })
                }),
            );
        }
        Comparison {
            runs,
            metrics,
            by_lock,
            by_site,
            mpi_by_rank,
            mpi_by_site,
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
