//! Format-neutral figures: what the HTML report and `--format svg --chart
//! NAME` draw (the renderer `crate::render::chart` turns a [`Figure`] into
//! SVG). A figure holds the numbers already scaled to the unit its axes
//! name; sections offer theirs through
//! [`ReportSection::figures`](super::ReportSection::figures), documents
//! collect them ([`crate::render::Document::figures`]).

use super::compared::{ComparedMetric, MetricGroup, Unit};

/// One chart.
#[derive(Debug, Clone, PartialEq)]
pub struct Figure {
    /// Its name for `--chart` (`lock-wait-histogram`), unique in a
    /// document; lower case, `-` between words.
    pub name: String,
    /// Its heading.
    pub title: String,
    /// A sentence saying what it shows (and what it leaves out).
    pub caption: String,
    /// What is drawn.
    pub plot: Plot,
}

/// An axis: its label and the unit of the values along it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Axis {
    /// What is measured (`Wait time`).
    pub label: String,
    /// The unit (`ms`, `events`, `threads`).
    pub unit: String,
}

impl Axis {
    /// An axis of `label` in `unit`.
    pub fn new(label: &str, unit: &str) -> Axis {
        Axis {
            label: label.to_string(),
            unit: unit.to_string(),
        }
    }

    /// `label (unit)`, the axis title.
    pub fn title(&self) -> String {
        if self.unit.is_empty() {
            self.label.clone()
        } else {
            format!("{} ({})", self.label, self.unit)
        }
    }
}

/// A named list of values, one per category (bars) or per point.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Legend text.
    pub label: String,
    /// Values in the unit of the value axis.
    pub values: Vec<f64>,
}

/// Bars over categories: grouped (side by side) or stacked, with
/// optional lines over the same categories on the same value axis.
#[derive(Debug, Clone, PartialEq)]
pub struct Bars {
    /// The categories (x axis), left to right.
    pub categories: Vec<String>,
    /// One value per category per series.
    pub series: Vec<Series>,
    /// Stack the series instead of placing them side by side.
    pub stacked: bool,
    /// Lines drawn over the bars (one value per category).
    pub lines: Vec<Series>,
    /// The category axis.
    pub x: Axis,
    /// The value axis.
    pub y: Axis,
    /// The categories are steps along an ordered axis (a histogram's
    /// buckets, ranks, thread counts): labels that do not fit under each
    /// bar are drawn under every second or third, whole. Otherwise (lock
    /// names, call sites) every bar keeps its label: names too long to go
    /// under the bars put the bars on their side, names beside them.
    pub ordered: bool,
}

/// Lines over a numeric x axis.
#[derive(Debug, Clone, PartialEq)]
pub struct Lines {
    /// Each series' points (x, y).
    pub series: Vec<(String, Vec<(f64, f64)>)>,
    /// The x axis.
    pub x: Axis,
    /// The y axis.
    pub y: Axis,
}

/// Spans on lanes over time (a thread timeline).
#[derive(Debug, Clone, PartialEq)]
pub struct Timeline {
    /// Lane names, top to bottom.
    pub lanes: Vec<String>,
    /// Legend of the span kinds (`wait`, `hold`).
    pub kinds: Vec<String>,
    /// The spans: (lane, kind, start, end) in the x axis's unit.
    pub spans: Vec<(u32, u8, f64, f64)>,
    /// The time axis.
    pub x: Axis,
}

/// What a figure draws.
#[derive(Debug, Clone, PartialEq)]
pub enum Plot {
    /// Bars.
    Bars(Bars),
    /// Lines.
    Lines(Lines),
    /// A timeline.
    Timeline(Timeline),
}

/// A unit for durations whose largest value is `max_ns`: (ns per unit,
/// its name): `s`, `ms`, `µs` or `ns`.
pub fn time_unit(max_ns: f64) -> (f64, &'static str) {
    if max_ns >= 1e9 {
        (1e9, "s")
    } else if max_ns >= 1e6 {
        (1e6, "ms")
    } else if max_ns >= 1e3 {
        (1e3, "µs")
    } else {
        (1.0, "ns")
    }
}

/// A short label of a duration in ns (`64 µs`), for bucket bounds.
pub fn short_duration(ns: u64) -> String {
    let x = ns as f64;
    let (div, unit) = time_unit(x);
    let v = x / div;
    if v >= 100.0 || v.fract() == 0.0 {
        format!("{v:.0} {unit}")
    } else {
        format!("{v:.1} {unit}")
    }
}

/// Grouped bars of the compared metrics of one group (one figure per
/// metric group whose metrics are durations): the categories are the
/// metrics, a series per run. `section` prefixes the figure's name.
pub fn comparison_bars(
    section: &str,
    runs: &[String],
    metrics: &[&ComparedMetric],
    group: MetricGroup,
) -> Option<Figure> {
    let chosen: Vec<&&ComparedMetric> = metrics
        .iter()
        .filter(|m| m.group == group && m.unit == Unit::Ns)
        .filter(|m| m.values.iter().any(|v| v.is_some_and(|v| v > 0.0)))
        .collect();
    if chosen.is_empty() {
        return None;
    }
    let max = chosen
        .iter()
        .flat_map(|m| m.values.iter().flatten())
        .fold(0f64, |a, &b| a.max(b));
    let (div, unit) = time_unit(max);
    let series = runs
        .iter()
        .enumerate()
        .map(|(k, run)| Series {
            label: run.clone(),
            values: chosen
                .iter()
                .map(|m| m.values.get(k).copied().flatten().unwrap_or(0.0) / div)
                .collect(),
        })
        .collect();
    let slug: String = format!("compare-{section}-{}", group.0)
        .to_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let mut name = String::new();
    for c in slug.chars() {
        if !(c == '-' && name.ends_with('-')) {
            name.push(c);
        }
    }
    Some(Figure {
        name: name.trim_end_matches('-').to_string(),
        title: format!("{section}: {} compared", group.0),
        caption: "The durations of each run side by side (missing values drawn as 0).".into(),
        plot: Plot::Bars(Bars {
            categories: chosen.iter().map(|m| m.label.clone()).collect(),
            series,
            stacked: false,
            lines: Vec::new(),
            x: Axis::new("Metric", ""),
            y: Axis::new("Time", unit),
            ordered: false,
        }),
    })
}
