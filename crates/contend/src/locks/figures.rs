//! The lock section's figures: the wait-time histograms of all events and
//! of the critical path (log2 buckets; Venter 2016, Figures 4.1 and 4.2),
//! wait and hold per lock and per call site, and a thread timeline of the
//! waits and holds of the most-waited-for locks (drawn from the per-event
//! results, the same data as the Perfetto export).

use super::model::LockReport;
use super::{LockEvents, Outcome};
use crate::report::figure::{
    short_duration, time_unit, Axis, Bars, Figure, Plot, Series, Timeline,
};

/// Bars per lock and per site show this many, the most waited-for.
const TOP: usize = 10;

/// The figures of the lock section (none without lock events).
pub fn report_figures(r: &LockReport) -> Vec<Figure> {
    if r.summary.events == 0 && r.other_waits.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    for critical in [false, true] {
        let count = |b: &super::HistogramBucket| {
            if critical {
                b.critical_events
            } else {
                b.events
            }
        };
        let used: Vec<usize> = (0..r.wait_histogram.len())
            .filter(|&i| count(&r.wait_histogram[i]) > 0)
            .collect();
        let (Some(&lo), Some(&hi)) = (used.first(), used.last()) else {
            continue;
        };
        let buckets = &r.wait_histogram[lo..=hi];
        out.push(Figure {
            name: if critical {
                "lock-wait-histogram-critical-path".into()
            } else {
                "lock-wait-histogram".into()
            },
            title: if critical {
                "Wait-time histogram, critical path".into()
            } else {
                "Wait-time histogram, all events".into()
            },
            caption: format!(
                "Lock events{} per wait-time bucket (log2 buckets: from the lower bound to below twice it; 0 ns are acquisitions that did not wait). Venter 2016, Figure {}.",
                if critical { " on the critical path" } else { "" },
                if critical { "4.2" } else { "4.1" }
            ),
            plot: Plot::Bars(Bars {
                categories: buckets
                    .iter()
                    .map(|b| {
                        if b.lower_ns == 0 {
                            "0".to_string()
                        } else {
                            short_duration(b.lower_ns)
                        }
                    })
                    .collect(),
                series: vec![Series {
                    label: "Events".into(),
                    values: buckets.iter().map(|b| count(b) as f64).collect(),
                }],
                stacked: false,
                lines: Vec::new(),
                x: Axis::new("Wait time, bucket from", ""),
                y: Axis::new("Lock events", "events"),
                ordered: true,
            }),
        });
    }
    let per = |name: &str, title: &str, rows: Vec<(String, u64, u64)>| -> Option<Figure> {
        if rows.iter().all(|r| r.1 == 0 && r.2 == 0) {
            return None;
        }
        let max = rows.iter().map(|r| r.1.max(r.2)).max().unwrap_or(0) as f64;
        let (div, unit) = time_unit(max);
        Some(Figure {
            name: name.into(),
            title: title.into(),
            caption: format!(
                "Wait and hold time of the {TOP} {} with the most wait and hold time.",
                if name.starts_with("site") {
                    "call sites"
                } else {
                    "locks"
                }
            ),
            plot: Plot::Bars(Bars {
                categories: rows.iter().map(|r| r.0.clone()).collect(),
                series: vec![
                    Series {
                        label: "Wait".into(),
                        values: rows.iter().map(|r| r.1 as f64 / div).collect(),
                    },
                    Series {
                        label: "Hold".into(),
                        values: rows.iter().map(|r| r.2 as f64 / div).collect(),
                    },
                ],
                stacked: false,
                lines: Vec::new(),
                x: Axis::new(
                    if name.starts_with("site") {
                        "Call site"
                    } else {
                        "Lock"
                    },
                    "",
                ),
                y: Axis::new("Time", unit),
                ordered: false,
            }),
        })
    };
    let shown = super::model::ShownNames::of(r);
    let mut locks: Vec<(String, u64, u64)> = r
        .by_lock
        .iter()
        .map(|l| {
            (
                format!("{} [{}]", shown.name(l), l.kind),
                l.wait_ns,
                l.hold_ns,
            )
        })
        .collect();
    locks.sort_by_key(|l| std::cmp::Reverse(l.1 + l.2));
    locks.truncate(TOP);
    out.extend(per("lock-wait-hold", "Wait and hold per lock", locks));
    let mut sites: Vec<(String, u64, u64)> = r
        .by_site
        .iter()
        .map(|s| (s.display.clone(), s.wait_ns, s.hold_ns))
        .collect();
    sites.sort_by_key(|s| std::cmp::Reverse(s.1 + s.2));
    sites.truncate(TOP);
    out.extend(per("site-wait-hold", "Wait and hold per call site", sites));
    out
}

/// Locks in the timeline: the most waited-for.
const TIMELINE_LOCKS: usize = 5;
/// Spans drawn at most (the longest are kept).
const TIMELINE_SPANS: usize = 4000;

/// A thread timeline of the waits and holds of the most waited-for locks
/// (`lock-timeline`): a lane per thread, its events' wait and hold spans
/// over the run, at most `TIMELINE_SPANS` spans (the longest; the
/// caption says how many were left out). `None` without lock events.
pub fn timeline(ev: &LockEvents) -> Option<Figure> {
    let set = &ev.set;
    if set.events.is_empty() {
        return None;
    }
    let mut wait = vec![0u64; set.objects.len()];
    for e in &set.events {
        if e.outcome() != Outcome::Post {
            wait[e.object as usize] += e.wait_ns().max(1);
        }
    }
    let mut objects: Vec<usize> = (0..wait.len()).filter(|&o| wait[o] > 0).collect();
    objects.sort_by_key(|&o| std::cmp::Reverse(wait[o]));
    objects.truncate(TIMELINE_LOCKS);
    let mut chosen = vec![false; set.objects.len()];
    for &o in &objects {
        chosen[o] = true;
    }
    let origin = set
        .events
        .iter()
        .map(|e| e.requested_ns())
        .min()
        .unwrap_or(0);
    let end = set
        .events
        .iter()
        .map(|e| e.released_ns())
        .max()
        .unwrap_or(0);
    let (div, unit) = time_unit((end - origin) as f64);
    // (duration, lane thread, kind, start, end)
    let mut spans: Vec<(u64, u32, u8, u64, u64)> = Vec::new();
    for e in &set.events {
        if !chosen[e.object as usize] || e.outcome() == Outcome::Post {
            continue;
        }
        if e.acquired_ns() > e.requested_ns() {
            spans.push((
                e.wait_ns(),
                e.thread(),
                0,
                e.requested_ns(),
                e.acquired_ns(),
            ));
        }
        if e.released_ns() > e.acquired_ns() {
            spans.push((e.hold_ns(), e.thread(), 1, e.acquired_ns(), e.released_ns()));
        }
    }
    let total = spans.len();
    if total > TIMELINE_SPANS {
        spans.select_nth_unstable_by_key(TIMELINE_SPANS, |s| std::cmp::Reverse(s.0));
        spans.truncate(TIMELINE_SPANS);
    }
    let mut threads: Vec<u32> = spans.iter().map(|s| s.1).collect();
    threads.sort_unstable();
    threads.dedup();
    let lane_of = |t: u32| threads.binary_search(&t).unwrap_or(0) as u32;
    let names: Vec<String> = objects
        .iter()
        .map(|&o| ev.names.objects[o].clone())
        .collect();
    Some(Figure {
        name: "lock-timeline".into(),
        title: "Thread timeline of lock waits".into(),
        caption: format!(
            "Wait (requested to acquired) and hold (acquired to released) of the locks waited for most: {}; one lane per thread.{}",
            names.join(", "),
            if total > TIMELINE_SPANS {
                format!(" The {TIMELINE_SPANS} longest of {total} spans are drawn; `contend export --format perfetto` has them all.")
            } else {
                String::new()
            }
        ),
        plot: Plot::Timeline(Timeline {
            lanes: threads
                .iter()
                .map(|&t| {
                    let th = &set.threads[t as usize];
                    format!("tid {}", th.tid)
                })
                .collect(),
            kinds: vec!["wait".into(), "hold".into()],
            spans: spans
                .iter()
                .map(|s| {
                    (
                        lane_of(s.1),
                        s.2,
                        (s.3 - origin) as f64 / div,
                        (s.4 - origin) as f64 / div,
                    )
                })
                .collect(),
            x: Axis::new("Time since the first lock event", unit),
        }),
    })
}
