//! The numbers a section offers to `contend compare` ([`Comparable`]) and
//! the same numbers lined up across runs ([`ComparedMetric`],
//! [`ComparedItem`], [`ComparedPart`]); `crate::compare` does the lining
//! up (Venter 2016, Section 3.2.3).

use serde::Serialize;

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
    /// A real number in the unit its label names (threads, tasks),
    /// shown with two decimals.
    Number,
}

/// Which table a metric belongs to (JSON `group`, CSV `section` of a
/// comparison): `summary`, `critical_path`, `other_waits`, `lock`, `site`,
/// `mpi_class`, `mpi_pattern`, `mpi_rank`, `mpi_site`, … Each analysis
/// names its own groups.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(transparent)]
pub struct MetricGroup(pub &'static str);

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
pub fn metrics<'a>(
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
pub fn fraction(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
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

/// What one section of one run offers to a comparison.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Comparable {
    /// Run-wide metrics, lined up by key across runs.
    pub metrics: Vec<Metric>,
    /// A metric that another run has and this one lacks counts as 0 (the
    /// section lists only what occurred, e.g. the other-wait kinds seen)
    /// rather than as missing.
    pub missing_is_zero: bool,
    /// Per-item tables (locks, call sites, ranks …), lined up by name.
    pub lists: Vec<ItemList>,
}

/// One per-item table of a [`Comparable`].
#[derive(Debug, Clone, PartialEq)]
pub struct ItemList {
    /// JSON key of the lined-up list (`by_lock`, `mpi_by_rank`).
    pub key: &'static str,
    /// Heading of the table (`Per lock`).
    pub title: &'static str,
    /// Caption of the table.
    pub caption: &'static str,
    /// Header of the item column (`Lock`, `Call site`, `Rank`).
    pub item_heading: &'static str,
    /// Header of the kind column (`Kind`, `Host`, `Operation`).
    pub kind_heading: &'static str,
    /// Written to JSON even when no run has an item.
    pub always: bool,
    /// The items, in the order of the run's list (most waiting first):
    /// the position is the item's rank in this run.
    pub items: Vec<Item>,
}

/// One item of an [`ItemList`].
#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    /// What runs are matched by (a lock name, a site's display string).
    pub name: String,
    /// Its kind (`mutex`), or kinds, or host, as one string.
    pub kind: String,
    /// Its numbers.
    pub metrics: Vec<Metric>,
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
    /// Key of the section the metric comes from (not in JSON).
    #[serde(skip)]
    pub section: &'static str,
}

/// One lock, call site or rank across all runs.
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
    /// Its numbers across the runs.
    pub metrics: Vec<ComparedMetric>,
}

impl ComparedItem {
    /// Whether the item is among the first `top` of some run (0 = all).
    pub fn in_top(&self, top: usize) -> bool {
        top == 0 || self.best_rank < top
    }
}

/// One per-item table across all runs.
#[derive(Debug, Clone, PartialEq)]
pub struct ComparedList {
    /// The list as the first run that has it describes it (its `items`
    /// are not used).
    pub list: ItemList,
    /// Key of the section the list comes from.
    pub section: &'static str,
    /// The items lined up, in order of first appearance.
    pub items: Vec<ComparedItem>,
}

/// The compared numbers of one kind of section, for its
/// [`crate::report::ReportSection::layout_comparison`].
#[derive(Debug, Clone, Copy)]
pub struct ComparedPart<'a> {
    /// Labels of the runs, the first being the base.
    pub runs: &'a [String],
    /// The section's metrics lined up, in order.
    pub metrics: &'a [&'a ComparedMetric],
    /// The section's item lists lined up.
    pub lists: &'a [&'a ComparedList],
}
