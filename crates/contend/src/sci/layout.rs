//! The interference (SCI) section in the table formats and in comparisons:
//! the summary, blocks ranked by SCI (Mosli Bouksiaa et al., TPDS 2019,
//! Section 2 and Figure 9), the scores per thread, the threads and their
//! durations, and the duration distribution of the top blocks (sorted
//! durations as in the paper's Figure 7, and log2 histograms).

use super::{BlockKind, SciBlock, SciReport};
use crate::report::compared::{
    metrics, Comparable, ComparedPart, Item, ItemList, Metric, MetricGroup, Unit,
};
use crate::report::layout::{
    take_top, titled_comparison_panels, Body, Cell, Column, Panel, Row, Table,
};
use crate::report::{RenderOptions, ReportSection};

/// Metric group of the summary.
pub const SCI_SUMMARY: MetricGroup = MetricGroup("sci_summary");
/// Metric group of one block.
pub const SCI_BLOCK: MetricGroup = MetricGroup("sci_block");

/// Blocks whose distribution is drawn (the top ones by SCI).
const DISTRIBUTIONS: usize = 3;

impl ReportSection for SciReport {
    fn key(&self) -> &'static str {
        "sci"
    }

    fn headlines(&self) -> Vec<String> {
        headlines(self)
    }

    fn glance_metrics(&self) -> Vec<(&'static str, &'static str)> {
        vec![("sci.summary.max_sci", "Largest SCI (as a share)")]
    }

    fn layout(&self, opts: &RenderOptions) -> Vec<Panel> {
        let mut out = vec![summary_panel(self)];
        if !self.notes.is_empty() {
            out.push(Panel::new(
                "sci_notes",
                "Interference: how to read it",
                "What limits the numbers of this run.",
                Body::List(self.notes.clone()),
            ));
        }
        if self.blocks.is_empty() {
            out.push(Panel::new(
                "sci_none",
                "No blocks",
                "Why there is nothing to score.",
                Body::Paragraph(
                    "No block was executed: no lock operation, region or probed function was recorded. Mark \
                     regions with contend/region.h, or name functions with `contend record --function`."
                        .into(),
                ),
            ));
            return out;
        }
        out.push(blocks_panel(self, opts.top));
        out.push(per_thread_panel(self, opts.top));
        out.push(threads_panel(self, opts.top));
        out.push(quantiles_panel(self, opts.top));
        for (i, b) in self
            .blocks
            .iter()
            .filter(|b| b.sci.is_some())
            .take(DISTRIBUTIONS)
            .enumerate()
        {
            out.push(histogram_panel(b, i));
        }
        out
    }

    fn layout_comparison(&self, part: &ComparedPart<'_>, opts: &RenderOptions) -> Vec<Panel> {
        titled_comparison_panels(
            part,
            opts,
            &[(
                SCI_SUMMARY,
                "Interference (SCI)",
                "Blocks executed and scored, executions scored and the largest SCI of each run (docs/sci.md), \
                 and their change relative to the first run.",
            )],
        )
    }

    fn comparable(&self) -> Option<Comparable> {
        let s = &self.summary;
        #[rustfmt::skip]
        let summary = metrics(SCI_SUMMARY, "sci.summary.", [
            ("blocks", "Blocks executed", Unit::Count, s.blocks as f64),
            ("scored_blocks", "Blocks scored", Unit::Count, s.scored_blocks as f64),
            ("executions", "Executions scored", Unit::Count, s.executions as f64),
            ("max_sci", "Largest SCI (as a share)", Unit::Fraction, s.max_sci.unwrap_or(0.0)),
        ]);
        Some(Comparable {
            metrics: summary,
            missing_is_zero: true,
            lists: vec![ItemList {
                key: "sci_by_block",
                title: "Interference per block",
                caption: "Blocks matched by kind, name, key and site; SCI as a share of the threads' time \
                          (Mosli Bouksiaa et al. 2019, Section 2); blank where a run lacks the block. \
                          Joins, keyed by the joined thread's id, are compared in Other waits.",
                item_heading: "Block",
                kind_heading: "Kind",
                always: false,
                // a join block's key names the joined thread, whose id
                // differs from run to run: it would never match
                items: self
                    .blocks
                    .iter()
                    .filter(|b| b.kind != BlockKind::Join)
                    .map(|b| Item {
                        name: block_label(b),
                        kind: b.kind.name().to_string(),
                        metrics: block_metrics(b),
                    })
                    .collect(),
            }],
        })
    }
}

/// `name [key] @ site`: how a block is named in tables and comparisons.
pub fn block_label(b: &SciBlock) -> String {
    let mut s = b.name.to_string();
    if let Some(k) = &b.key {
        s.push_str(&format!(" [{k}]"));
    }
    s.push_str(" @ ");
    s.push_str(&b.site.display());
    s
}

fn block_metrics(b: &SciBlock) -> Vec<Metric> {
    #[rustfmt::skip]
    let m = metrics(SCI_BLOCK, "", [
        ("sci", "SCI", Unit::Fraction, b.sci.unwrap_or(0.0)),
        ("excess_ns", "Excess", Unit::Ns, b.excess_ns as f64),
        ("occurrences", "Executions", Unit::Count, b.occurrences as f64),
        ("min_ns", "Fastest", Unit::Ns, b.min_ns as f64),
        ("median_ns", "Median", Unit::Ns, b.median_ns as f64),
    ]);
    m
}

fn sci_cell(x: Option<f64>) -> Cell {
    x.map_or(Cell::Empty, |v| Cell::Decimal(v, 3))
}

fn summary_panel(r: &SciReport) -> Panel {
    let s = &r.summary;
    let fields: Vec<(&str, &str, Cell)> = vec![
        (
            "blocks",
            "Blocks executed (block and key)",
            Cell::Count(s.blocks),
        ),
        (
            "scored_blocks",
            "Blocks scored (10 executions or more)",
            Cell::Count(s.scored_blocks),
        ),
        ("executions", "Executions scored", Cell::Count(s.executions)),
        (
            "lock_executions",
            "… of lock calls and waits",
            Cell::Count(s.lock_executions),
        ),
        (
            "region_executions",
            "… of regions",
            Cell::Count(s.region_executions),
        ),
        (
            "function_executions",
            "… of functions",
            Cell::Count(s.function_executions),
        ),
        ("threads", "Threads", Cell::Count(s.threads.into())),
        (
            "threads_with_lifetimes",
            "Threads with kernel lifetimes (T_t from creation to exit)",
            Cell::Count(s.threads_with_lifetimes.into()),
        ),
        ("max_sci", "Largest SCI", sci_cell(s.max_sci)),
    ];
    let rows = fields
        .into_iter()
        .map(|(key, label, cell)| Row {
            key: key.into(),
            cells: vec![Cell::Text(label.into()), cell],
        })
        .collect();
    Panel::new(
        "sci_summary",
        "Interference (SCI)",
        "Blocks of code slowed down by interference from other threads, whatever the shared resource: SCI = \
         Σ (duration − fastest duration) / thread duration (Mosli Bouksiaa et al., TPDS 2019, Section 2). \
         0.25 means the threads that ran the block lost a quarter of their time to its slower executions.",
        Body::Table(Table {
            columns: vec![
                Column::label("Metric", "metric"),
                Column::num("Value", "value"),
            ],
            rows,
            ..Table::default()
        }),
    )
}

fn blocks_panel(r: &SciReport, top: usize) -> Panel {
    let (blocks, omitted) = take_top(&r.blocks, top);
    let rows = blocks
        .iter()
        .enumerate()
        .map(|(i, b)| Row {
            key: block_label(b),
            cells: vec![
                Cell::Count(i as u64 + 1),
                Cell::Text(b.kind.name().into()),
                Cell::Text(b.name.to_string()),
                Cell::Text(b.key.as_deref().unwrap_or_default().to_string()),
                Cell::Text(b.site.display()),
                sci_cell(b.sci),
                Cell::Ns(b.excess_ns),
                Cell::Count(b.occurrences),
                Cell::Ns(b.min_ns),
                Cell::Ns(b.median_ns),
                Cell::Ns(b.mean_ns),
                Cell::Ns(b.total_ns),
                sci_cell(b.sci_max_thread),
                sci_cell(b.sci_exclusive),
                Cell::Text(flags(b)),
            ],
        })
        .collect();
    let table = Table {
        columns: vec![
            Column::num("#", "rank"),
            Column::text("Kind", "kind"),
            Column::text("Block", "name"),
            Column::text("Key", "key").explained(
                "what executions are compared under: the lock object, the region's key (compared only with themselves)",
            ),
            Column::text("Site", "site"),
            // what the table ranks by first, beside the block's name
            Column::num("SCI", "sci").explained(
                "excess / Σ duration of the threads that ran the block (Mosli Bouksiaa et al. 2019, Section 2)",
            ),
            Column::num("Excess", "excess_ns")
                .explained("Σ (duration − fastest): the time lost to slower executions"),
            Column::num("Execs", "occurrences")
                .explained("executions scored (recursive ones, nested in the same block, are not)"),
            Column::num("Fastest", "min_ns")
                .explained("d_min: the fastest execution, taken as free of interference"),
            Column::num("Median", "median_ns"),
            Column::num("Mean", "mean_ns"),
            Column::num("Total", "total_ns"),
            Column::num("Max/thread", "sci_max_thread")
                .explained("the largest SCI of one thread: excess in it / its duration"),
            Column::num("Excl. SCI", "sci_exclusive").explained(
                "SCI of the exclusive durations (blocks nested inside subtracted)",
            ),
            Column::text("Notes", "flags").explained(
                "idle = a wait for another thread (condition variable, barrier, semaphore, join): its excess is \
                 mostly idle time, not interference; few = fewer than 10 executions, no score; unstable = the fastest 1% spread more than 2×; \
                 sampled 1/N = one execution in N recorded, excess × N; rec = recursive executions not scored; \
                 unf = executions that never ended",
            ),
        ],
        rows,
        omitted,
        ..Table::default()
    };
    Panel::new(
        "sci_blocks",
        "Blocks by SCI",
        "Every block (and key) executed, ranked by its SCI, the slowdown it caused its threads by running slower than \
         its fastest execution (Mosli Bouksiaa et al. 2019). A block whose work depends on a parameter looks the \
         same: check its distribution below and give such regions a key.",
        Body::Table(table),
    )
}

/// The short notes of a block row.
fn flags(b: &SciBlock) -> String {
    let mut f = Vec::new();
    if b.kind.waits_for_another_thread() {
        f.push("idle".to_string());
    }
    if b.sci.is_none() {
        f.push("few".to_string());
    } else if !b.stable {
        f.push("unstable".into());
    }
    if b.sampled_every > 1 {
        f.push(format!("sampled 1/{}", b.sampled_every));
    }
    if b.recursive > 0 {
        f.push(format!("rec {}", b.recursive));
    }
    if b.unfinished > 0 {
        f.push(format!("unf {}", b.unfinished));
    }
    f.join(", ")
}

fn per_thread_panel(r: &SciReport, top: usize) -> Panel {
    let mut pairs: Vec<(&SciBlock, &super::BlockThreadScore)> = r
        .blocks
        .iter()
        .flat_map(|b| b.per_thread.iter().map(move |t| (b, t)))
        .filter(|(_, t)| t.sci.is_some())
        .collect();
    pairs.sort_by(|a, b| {
        b.1.sci
            .unwrap_or(0.0)
            .total_cmp(&a.1.sci.unwrap_or(0.0))
            .then(b.1.excess_ns.cmp(&a.1.excess_ns))
    });
    let (pairs, omitted) = take_top(&pairs, top);
    let rows = pairs
        .iter()
        .map(|(b, t)| Row {
            key: format!("{}:{}:{}", block_label(b), t.pid, t.tid),
            cells: vec![
                Cell::Text(format!("{} {}", b.kind.name(), block_label(b))),
                Cell::Text(format!("{}/{}", t.pid, t.tid)),
                Cell::Count(t.occurrences),
                Cell::Ns(t.excess_ns),
                sci_cell(t.sci),
            ],
        })
        .collect();
    Panel::new(
        "sci_per_thread",
        "SCI per block and thread",
        "SCI(b, t) = Σ_j (d_j − d_min(b)) / T_t: the share of thread t's time lost to block b's slower executions \
         (Mosli Bouksiaa et al. 2019, Section 2), largest first.",
        Body::Table(Table {
            columns: vec![
                Column::text("Block", "block"),
                Column::text("pid/tid", "thread"),
                Column::num("Execs", "occurrences"),
                Column::num("Excess", "excess_ns"),
                Column::num("SCI", "sci"),
            ],
            rows,
            omitted,
            bars: vec![3],
            ..Table::default()
        }),
    )
}

fn threads_panel(r: &SciReport, top: usize) -> Panel {
    let (threads, omitted) = take_top(&r.threads, top);
    let rows = threads
        .iter()
        .map(|t| Row {
            key: format!("{}:{}", t.pid, t.tid),
            cells: vec![
                Cell::Text(format!("{}/{}", t.pid, t.tid)),
                Cell::Ns(t.duration_ns),
                Cell::Text(
                    match t.duration_source {
                        super::DurationSource::TaskEvents => "creation to exit",
                        super::DurationSource::RecordedEvents => "first to last event",
                    }
                    .into(),
                ),
                Cell::Count(t.occurrences),
                Cell::Ns(t.excess_ns),
                Cell::Fraction(if t.duration_ns > 0 {
                    t.excess_ns as f64 / t.duration_ns as f64
                } else {
                    0.0
                }),
            ],
        })
        .collect();
    Panel::new(
        "sci_threads",
        "Threads",
        "Each thread's duration T_t (from the kernel's task events when recorded, else its first to last event) \
         and the excess of all blocks it ran; nested blocks each count, so excesses can overlap.",
        Body::Table(Table {
            columns: vec![
                Column::text("pid/tid", "thread"),
                Column::num("T_t", "duration_ns").explained("the thread's duration"),
                Column::text("Measured", "duration_source"),
                Column::num("Execs", "occurrences"),
                Column::num("Excess", "excess_ns"),
                Column::num("Excess/T_t", "excess_share"),
            ],
            rows,
            omitted,
            ..Table::default()
        }),
    )
}

/// The levels shown of the sorted durations.
const SHOWN: [(f64, &str); 9] = [
    (0.0, "Fastest"),
    (0.01, "1%"),
    (0.05, "5%"),
    (0.25, "25%"),
    (0.50, "50%"),
    (0.75, "75%"),
    (0.95, "95%"),
    (0.99, "99%"),
    (1.0, "Slowest"),
];

fn quantiles_panel(r: &SciReport, top: usize) -> Panel {
    let (blocks, omitted) = take_top(&r.blocks, top);
    let rows = blocks
        .iter()
        .map(|b| {
            let mut cells = vec![Cell::Text(block_label(b))];
            for (q, _) in SHOWN {
                cells.push(
                    b.quantiles
                        .iter()
                        .find(|x| (x.q - q).abs() < 1e-9)
                        .map_or(Cell::Empty, |x| Cell::Ns(x.ns)),
                );
            }
            cells.push(Cell::Text(if b.stable { "yes" } else { "no" }.into()));
            Row {
                key: block_label(b),
                cells,
            }
        })
        .collect();
    let mut columns = vec![Column::text("Block", "block")];
    for (q, label) in SHOWN {
        columns.push(Column::num(
            label,
            &format!("q{}", (q * 100.0).round() as u32),
        ));
    }
    columns.push(
        Column::text("Stable", "stable")
            .explained("the fastest 1% of executions lie within 2× (or 100 ns) of the fastest"),
    );
    Panel::new(
        "sci_distribution",
        "Sorted durations",
        "Each block's durations at fixed shares of its executions, fastest first (the paper's Figure 7): under \
         interference the fastest executions stay put while the rest move up; a parameter-dependent block shows \
         separate modes instead.",
        Body::Table(Table {
            columns,
            rows,
            omitted,
            ..Table::default()
        }),
    )
}

fn histogram_panel(b: &SciBlock, i: usize) -> Panel {
    const IDS: [&str; DISTRIBUTIONS] = ["sci_histogram_1", "sci_histogram_2", "sci_histogram_3"];
    let total = b.occurrences.max(1);
    let rows = b
        .histogram
        .iter()
        .map(|h| Row {
            key: h.lower_ns.to_string(),
            cells: vec![
                Cell::Ns(h.lower_ns),
                Cell::Ns(h.upper_ns),
                Cell::Count(h.count),
                Cell::Fraction(h.count as f64 / total as f64),
            ],
        })
        .collect();
    Panel::new(
        IDS[i.min(DISTRIBUTIONS - 1)],
        &format!("Durations of {}", block_label(b)),
        "Executions of the block per log2 duration bucket: one mode at the fastest durations with a tail is \
         interference; several separate modes suggest work that depends on a parameter.",
        Body::Table(Table {
            columns: vec![
                Column::num("From", "lower_ns"),
                Column::num("to below", "upper_ns"),
                Column::num("Execs", "count"),
                Column::num("Share", "share"),
            ],
            rows,
            ..Table::default()
        }),
    )
}

/// The SCI section's line of "At a glance": the block with the largest SCI
/// (Mosli Bouksiaa et al. 2019, Section 2) and the time its slower
/// executions lost. When waits for another thread (condition variables,
/// barriers, semaphores: [`super::BlockKind::waits_for_another_thread`]) score
/// highest, their excess is mostly idle time, so the line names the largest
/// lock, region or function block and the wait beside it; with no such
/// block it names the wait and says what its excess is.
fn headlines(r: &SciReport) -> Vec<String> {
    use crate::report::fmt::duration_plain as time;
    let largest = |keep: &dyn Fn(&SciBlock) -> bool| {
        r.blocks
            .iter()
            .filter(|b| keep(b))
            .filter_map(|b| b.sci.map(|sci| (sci, b)))
            .max_by(|a, b| a.0.total_cmp(&b.0))
            .filter(|(_, b)| b.excess_ns > 0)
    };
    let lost = |b: &SciBlock| {
        format!(
            "{} {}: {} lost to executions slower than its fastest ({})",
            b.kind.name(),
            block_label(b),
            time(b.excess_ns),
            time(b.min_ns)
        )
    };
    let Some((sci, top)) = largest(&|_| true) else {
        return Vec::new();
    };
    if !top.kind.waits_for_another_thread() {
        return vec![format!(
            "Interference: the largest SCI, {sci:.3}, is {}.",
            lost(top)
        )];
    }
    match largest(&|b| !b.kind.waits_for_another_thread()) {
        Some((work_sci, work)) => vec![format!(
            "Interference: the largest SCI of lock, region and function blocks, {work_sci:.3}, is {}. \
             Waits for another thread score higher ({} {}, {sci:.3}), but their excess is time idle \
             until that thread signals, arrives or ends, not interference.",
            lost(work),
            top.kind.name(),
            block_label(top)
        )],
        None => vec![format!(
            "Interference: the largest SCI, {sci:.3}, is {}; a wait for another thread, so its excess is \
             mostly time idle until that thread signals, arrives or ends, not interference.",
            lost(top)
        )],
    }
}
