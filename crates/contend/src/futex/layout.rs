//! The `futex` section in the table formats and in comparisons: a summary,
//! the futex words (most wait first), their call sites and the threads.

use super::FutexReport;
use crate::report::compared::{
    metrics, Comparable, ComparedPart, Item, ItemList, Metric, MetricGroup, Unit,
};
use crate::report::layout::{
    take_top, titled_comparison_panels, Body, Cell, Column, Panel, Row, Table,
};
use crate::report::{RenderOptions, ReportSection};

/// Metric group of the futex totals.
pub const FUTEX: MetricGroup = MetricGroup("futex");

impl ReportSection for FutexReport {
    fn key(&self) -> &'static str {
        "futex"
    }

    fn headlines(&self) -> Vec<String> {
        headlines(self)
    }

    fn glance_metrics(&self) -> Vec<(&'static str, &'static str)> {
        vec![("futex.summary.wait_ns", "Futex wait")]
    }

    fn layout(&self, opts: &RenderOptions) -> Vec<Panel> {
        let s = &self.summary;
        let field = |key: &str, label: &str, value: Cell, notes: String| Row {
            key: key.to_string(),
            cells: vec![Cell::Text(label.into()), value, Cell::Text(notes)],
        };
        let rows = vec![
            field(
                "events",
                "Futex waits",
                Cell::Count(s.events),
                format!(
                    "{} woken, {} timed out, {} value changed (EAGAIN), {} interrupted, {} other",
                    s.woken, s.timed_out, s.value_changed, s.interrupted, s.other
                ),
            ),
            field(
                "contended_events",
                "Waits that slept",
                Cell::Count(s.contended_events),
                String::new(),
            ),
            field("wait_ns", "Wait time", Cell::Ns(s.wait_ns), String::new()),
            field(
                "max_wait_ns",
                "Longest wait",
                Cell::Ns(s.max_wait_ns),
                String::new(),
            ),
            field(
                "wakes",
                "Wake calls",
                Cell::Count(s.wakes),
                format!(
                    "{} waiters woken, {} calls woke nobody",
                    s.waiters_woken, s.wakes_without_waiters
                ),
            ),
            field(
                "wake_ns",
                "Time in wake calls",
                Cell::Ns(s.wake_ns),
                String::new(),
            ),
            field(
                "handovers",
                "Hand-overs (waker found)",
                Cell::Count(s.handovers),
                format!(
                    "wake latency {} in total",
                    crate::report::fmt::duration_plain(s.wake_latency_ns)
                ),
            ),
            field(
                "words",
                "Futex words",
                Cell::Count(s.words),
                format!("{} threads", s.threads),
            ),
        ];
        let mut out = vec![Panel::new(
            "futex_summary",
            "Futex waits",
            &format!(
                "Waits and wakes on futex words through syscall(SYS_futex): Rust's std::sync, InnoDB latches, hand-written locks. {}",
                self.note
            ),
            Body::Table(Table {
                columns: vec![
                    Column::text("Measure", "measure"),
                    Column::num("Value", "value"),
                    Column::text("Notes", "notes"),
                ],
                rows,
                ..Table::default()
            }),
        )];

        let (words, omitted) = take_top(&self.by_word, opts.top);
        let rows = words
            .iter()
            .map(|w| Row {
                key: format!("{}:{}", w.pid, w.address),
                cells: vec![
                    Cell::Text(w.name.clone()),
                    Cell::Text(w.kind.clone()),
                    Cell::Count(w.events),
                    Cell::Count(w.contended_events),
                    Cell::Ns(w.wait_ns),
                    Cell::Ns(w.max_wait_ns),
                    Cell::Count(w.wakes),
                    Cell::Count(w.waiters_woken),
                    Cell::Count(w.handovers),
                    w.wake_latency_ns
                        .checked_div(w.handovers)
                        .map_or(Cell::Empty, Cell::Ns),
                    Cell::Ns(w.critical_wait_ns),
                    Cell::Text(w.sites.first().cloned().unwrap_or_default()),
                ],
            })
            .collect();
        out.push(Panel::new(
            "futex_words",
            "Futex words",
            "Each futex word as a lock: its waits (calls that entered the kernel to wait), how many slept, their time, its wake calls and the waiters they woke, the hand-overs whose waker was found and their mean wake latency (wake call → waiter running); hold times are unknown.",
            Body::Table(Table {
                columns: vec![
                    Column::text("Word", "name"),
                    Column::text("Kind", "kind"),
                    Column::num("Waits", "events"),
                    Column::num("Slept", "contended_events").explained("waits woken or timed out"),
                    Column::num("Wait", "wait_ns"),
                    Column::num("Max wait", "max_wait_ns"),
                    Column::num("Wakes", "wakes"),
                    Column::num("Woken", "waiters_woken").explained("waiters the wake calls woke"),
                    Column::num("Hand-overs", "handovers").explained("woken waits whose wake call was found"),
                    Column::num("Wake lat.", "mean_wake_latency_ns").explained("mean time from the wake call to the waiter's return"),
                    Column::num("CP wait", "critical_wait_ns").explained("wait of its waits on the critical path across pthread, futex and OpenMP hand-overs (docs/critical-path.md)"),
                    Column::text("Site", "site"),
                ],
                rows,
                omitted,
                bars: vec![4],
                ..Table::default()
            }),
        ));

        let (sites, omitted) = take_top(&self.by_site, opts.top);
        let rows = sites
            .iter()
            .map(|s| Row {
                key: format!("{}+{}", s.module.as_deref().unwrap_or("?"), s.offset),
                cells: vec![
                    Cell::Text(s.display.clone()),
                    Cell::Text(s.kind.clone()),
                    Cell::Count(s.events),
                    Cell::Ns(s.wait_ns),
                    Cell::Ns(s.max_wait_ns),
                    Cell::Count(s.wakes),
                    Cell::Count(s.waiters_woken),
                ],
            })
            .collect();
        out.push(Panel::new(
            "futex_sites",
            "Futex call sites",
            "Where the program waited on and woke futex words (the caller of syscall(), or with --stack-every the first frame of the program's own code).",
            Body::Table(Table {
                columns: vec![
                    Column::text("Site", "display"),
                    Column::text("Kind", "kind"),
                    Column::num("Waits", "events"),
                    Column::num("Wait", "wait_ns"),
                    Column::num("Max wait", "max_wait_ns"),
                    Column::num("Wakes", "wakes"),
                    Column::num("Woken", "waiters_woken"),
                ],
                rows,
                omitted,
                ..Table::default()
            }),
        ));
        out
    }

    /// The summary ([`futex_metrics`]) and the futex words matched by
    /// name (a word on the heap by the line that used it: its address
    /// changes from run to run, its name does not).
    fn comparable(&self) -> Option<Comparable> {
        use Unit::{Count, Ns};
        Some(Comparable {
            metrics: futex_metrics(self),
            missing_is_zero: true,
            lists: vec![ItemList {
                key: "futex_by_word",
                title: "Futex words",
                caption: "Per futex word, matched by name (a word without a symbol by the line of the program that used it most); blank where a run has no such word.",
                item_heading: "Word",
                kind_heading: "Kind",
                always: false,
                items: self
                    .by_word
                    .iter()
                    .map(|w| Item {
                        name: w.name.clone(),
                        kind: w.kind.clone(),
                        metrics: metrics(
                            FUTEX,
                            "",
                            vec![
                                ("events", "Waits", Count, w.events as f64),
                                ("wait_ns", "Wait", Ns, w.wait_ns as f64),
                                ("max_wait_ns", "Max wait", Ns, w.max_wait_ns as f64),
                                ("wakes", "Wakes", Count, w.wakes as f64),
                                ("critical_wait_ns", "CP wait", Ns, w.critical_wait_ns as f64),
                            ],
                        ),
                    })
                    .collect(),
            }],
        })
    }

    fn layout_comparison(&self, part: &ComparedPart<'_>, opts: &RenderOptions) -> Vec<Panel> {
        titled_comparison_panels(
            part,
            opts,
            &[(
                FUTEX,
                "Futex waits",
                "Waits and wakes on futex words of each run and their change relative to the first run.",
            )],
        )
    }
}

/// The numbers `contend compare` lines up (keys are JSON paths).
pub fn futex_metrics(r: &FutexReport) -> Vec<Metric> {
    use Unit::{Count, Ns};
    let s = &r.summary;
    metrics(
        FUTEX,
        "futex.summary.",
        vec![
            ("events", "Futex waits", Count, s.events as f64),
            ("wait_ns", "Futex wait time", Ns, s.wait_ns as f64),
            ("wakes", "Futex wake calls", Count, s.wakes as f64),
            (
                "waiters_woken",
                "Futex waiters woken",
                Count,
                s.waiters_woken as f64,
            ),
        ],
    )
}

/// The futex section's lines of "At a glance": the time futex waits
/// slept, the futex word waited on most, and the wait on the critical path
/// across recorders (docs/critical-path.md).
fn headlines(r: &FutexReport) -> Vec<String> {
    use crate::report::fmt::{duration_plain as time, int, percent, PLAIN};
    let s = &r.summary;
    if s.events == 0 {
        return Vec::new();
    }
    let mut out = vec![format!(
        "Futex wait: {} in {} futex waits, {} of which slept; the longest wait {}.",
        time(s.wait_ns),
        int(s.events, &PLAIN),
        int(s.contended_events, &PLAIN),
        time(s.max_wait_ns)
    )];
    if let Some(w) = r
        .by_word
        .iter()
        .max_by_key(|w| w.wait_ns)
        .filter(|w| w.wait_ns > 0)
    {
        out.push(format!(
            "Futex word waited on most: {}, {} ({} of the futex wait).",
            w.name,
            time(w.wait_ns),
            percent(w.wait_ns as f64 / s.wait_ns.max(1) as f64, &PLAIN)
        ));
    }
    if s.critical_wait_ns > 0 {
        out.push(format!(
            "Futex waits on the critical path: {} in {} wait{}.",
            time(s.critical_wait_ns),
            int(s.critical_events, &PLAIN),
            if s.critical_events == 1 { "" } else { "s" }
        ));
    }
    out
}
