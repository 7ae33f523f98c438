//! The lock section's figures: the wait-time histograms of all events and
//! of the critical path (log2 buckets; Venter 2016, Figures 4.1 and 4.2),
//! wait and hold per lock and per call site, and a thread timeline of the
//! waits and holds of the most-waited-for locks (drawn from the per-event
//! results, the same data as the Perfetto export). The per-lock, per-site
//! and timeline figures show locks only (mutexes, rwlocks, spinlocks), as
//! the "Per lock" table does: a condition wait or a join as long as the
//! run is no lock contention and must not push the hottest mutex out of
//! the picture (those waits have their own table).

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
                "Wait and hold time of the {TOP} {} with the most wait and hold time; condition variables, barriers, semaphores and joined threads are in their own table.",
                if name.starts_with("site") {
                    "call sites of mutexes, rwlocks and spinlocks"
                } else {
                    "locks (mutexes, rwlocks, spinlocks)"
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
        .filter(|l| super::layout::is_lock_kind(&l.kind))
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
        // a site where a condition wait re-acquires its mutex also holds
        // the wait for the signal: left to the table, with its kinds
        .filter(|s| !s.kinds.is_empty() && s.kinds.iter().all(|k| super::layout::is_lock_kind(k)))
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
/// (`lock-timeline`; mutexes, rwlocks and spinlocks): a lane per thread,
/// its events' wait and hold spans over the run, at most `TIMELINE_SPANS`
/// spans (the longest; the caption says how many were left out). `None`
/// without lock events.
pub fn timeline(ev: &LockEvents) -> Option<Figure> {
    let set = &ev.set;
    let mut wait = vec![0u64; set.objects.len()];
    // the axis: from the first lock event to the last one's release
    let (mut origin, mut end) = (u64::MAX, 0);
    for e in set.events.iter().filter(|e| e.is_lock()) {
        origin = origin.min(e.requested_ns());
        end = end.max(e.released_ns());
        if e.outcome() != Outcome::Post {
            wait[e.object as usize] += e.wait_ns().max(1);
        }
    }
    let mut objects: Vec<usize> = (0..wait.len()).filter(|&o| wait[o] > 0).collect();
    if objects.is_empty() {
        return None;
    }
    objects.sort_by_key(|&o| std::cmp::Reverse(wait[o]));
    objects.truncate(TIMELINE_LOCKS);
    let mut chosen = vec![false; set.objects.len()];
    for &o in &objects {
        chosen[o] = true;
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::locks::events::{pair_operations, OpSource, ThreadInput, TimeMap};
    use crate::locks::model::{LockRow, SiteRow};
    use crate::locks::Names;
    use crate::report::figure::Plot;
    use contend_trace::{Phase, Primitive, RawOp, NO_STACK};

    fn lock_row(name: &str, kind: &str, address: &str, wait_ns: u64) -> LockRow {
        LockRow {
            name: name.into(),
            kind: kind.into(),
            address: address.into(),
            wait_ns,
            hold_ns: wait_ns / 10,
            events: 10,
            ..LockRow::default()
        }
    }

    fn site_row(display: &str, kinds: &[&str], wait_ns: u64) -> SiteRow {
        SiteRow {
            display: display.into(),
            kinds: kinds.iter().map(|k| k.to_string()).collect(),
            wait_ns,
            events: 10,
            ..SiteRow::default()
        }
    }

    fn categories(figures: &[Figure], name: &str) -> Vec<String> {
        let f = figures.iter().find(|f| f.name == name).expect(name);
        match &f.plot {
            Plot::Bars(b) => b.categories.clone(),
            p => panic!("{name}: {p:?}"),
        }
    }

    /// The per-lock and per-site bars show what the "Per lock" table
    /// shows: a join and a condition wait longer than any lock wait (a
    /// main thread joining its workers for the whole run, a consumer
    /// waiting for work) are left out, and a condition wait's site, where
    /// the mutex is re-acquired too, with them.
    #[test]
    fn lock_bars_leave_out_joins_and_condition_waits() {
        let r = LockReport {
            by_lock: vec![
                lock_row("thread 16692 (sharequeue)", "join", "0x7f00", 240_000_000),
                lock_row("ready", "cond", "0x5010", 300_000_000),
                lock_row("head_lock", "mutex", "0x5000", 172_000_000),
                lock_row("tail_lock", "mutex", "0x5008", 20_000_000),
                lock_row("table", "rwlock", "0x5020", 1_000),
            ],
            by_site: vec![
                site_row("main (q.c:197)", &["join"], 240_000_000),
                site_row("consume (q.c:60)", &["cond", "mutex"], 300_000_000),
                site_row("dequeue (q.c:86)", &["mutex"], 172_000_000),
                site_row("lookup (q.c:20)", &["rwlock"], 1_000),
            ],
            ..LockReport::default()
        };
        let mut r = r;
        r.summary.events = 40;
        let figures = report_figures(&r);
        assert_eq!(
            categories(&figures, "lock-wait-hold"),
            vec!["head_lock [mutex]", "tail_lock [mutex]", "table [rwlock]"]
        );
        assert_eq!(
            categories(&figures, "site-wait-hold"),
            vec!["dequeue (q.c:86)", "lookup (q.c:20)"]
        );
        // nothing but waits: no lock bars at all
        r.by_lock.retain(|l| l.kind == "join" || l.kind == "cond");
        r.by_site.truncate(2);
        let figures = report_figures(&r);
        assert!(!figures.iter().any(|f| f.name.ends_with("wait-hold")));
    }

    fn op(ticks: u64, object: u64, primitive: Primitive, phase: Phase) -> RawOp {
        RawOp {
            ticks,
            object,
            site: 0x40_0000,
            primitive,
            phase,
            stack: NO_STACK,
        }
    }

    /// The timeline draws the lock waited for, not the longer barrier
    /// wait before it, and its axis starts at the first lock event.
    /// Worked by hand: thread 100 waits at the barrier 0..5,000 ns, then
    /// for the mutex 5,000..5,100 and holds it to 5,200; thread 101 holds
    /// the mutex 4,990..5,100. Spans: 100's wait (10..110 ns from the
    /// origin 4,990) and hold (110..210), 101's hold (0..110).
    #[test]
    fn the_timeline_draws_locks_only() {
        let (mutex, barrier) = (0x1000, 0x2000);
        let t100 = vec![
            op(0, barrier, Primitive::Barrier, Phase::Request),
            op(5_000, barrier, Primitive::Barrier, Phase::Acquired),
            op(5_000, mutex, Primitive::Mutex, Phase::Request),
            op(5_100, mutex, Primitive::Mutex, Phase::Acquired),
            op(5_200, mutex, Primitive::Mutex, Phase::Release),
        ];
        let t101 = vec![
            op(4_990, mutex, Primitive::Mutex, Phase::Immediate),
            op(5_100, mutex, Primitive::Mutex, Phase::Release),
        ];
        let inputs: Vec<ThreadInput<'_>> = [(100, &t100), (101, &t101)]
            .into_iter()
            .map(|(tid, ops)| ThreadInput {
                process: 0,
                pid: 1,
                tid,
                ops: OpSource::Slice(ops),
                clock: TimeMap::Identity,
            })
            .collect();
        let set = pair_operations(&inputs);
        let names = Names {
            objects: set
                .objects
                .iter()
                .map(|o| if o.address == mutex { "m" } else { "b" }.to_string())
                .collect(),
            sites: Vec::new(),
        };
        let ev = LockEvents {
            set,
            critical_path: Default::default(),
            names,
            across: None,
            across_omp: None,
            across_futex: None,
        };
        let f = timeline(&ev).expect("a timeline");
        assert!(f.caption.contains("most: m;"), "{}", f.caption);
        let Plot::Timeline(t) = &f.plot else {
            panic!("{:?}", f.plot)
        };
        assert_eq!(t.lanes, vec!["tid 100", "tid 101"]);
        let mut spans: Vec<(u32, u8, u64, u64)> = t
            .spans
            .iter()
            .map(|s| (s.0, s.1, s.2.round() as u64, s.3.round() as u64))
            .collect();
        spans.sort_unstable();
        assert_eq!(
            spans,
            vec![(0, 0, 10, 110), (0, 1, 110, 210), (1, 1, 0, 110)]
        );
    }
}
