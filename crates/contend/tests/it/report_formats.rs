//! Report renderers and the run comparison, on reports built by hand.

use contend::compare::Comparison;
use contend::locks::{
    CriticalPathSummary, HistogramBucket, LockReport, LockRow, LockSummary, SiteRow, ThreadRow,
    WaitKindRow,
};
use contend::render::{render_comparison, render_report, OutputFormat};
use contend::report::compared::{percent_change, Unit};
use contend::report::{RenderOptions, Report, RunInfo, TimeUnit};
use serde_json::Value;

fn lock(
    name: &str,
    address: &str,
    kind: &str,
    events: u64,
    wait_ns: u64,
    sites: &[&str],
) -> LockRow {
    LockRow {
        name: name.into(),
        address: address.into(),
        pid: 4242,
        kind: kind.into(),
        events,
        contended_events: events / 10,
        wait_ns,
        hold_ns: wait_ns / 2,
        duration_ns: wait_ns + wait_ns / 2,
        max_wait_ns: wait_ns / 100,
        critical_events: events / 20,
        critical_wait_ns: wait_ns / 4,
        critical_hold_ns: wait_ns / 8,
        ownership_changes: events / 3,
        sites: sites.iter().map(|s| s.to_string()).collect(),
        releases_with_waiters: events / 10,
        wake_ns: wait_ns / 50,
        max_wake_ns: wait_ns / 5000,
        counted_events: 0,
        created_at: None,
    }
}

fn site(function: Option<&str>, file: Option<(&str, u32)>, display: &str, wait_ns: u64) -> SiteRow {
    SiteRow {
        function: function.map(Into::into),
        file: file.map(|(f, _)| f.into()),
        line: file.map(|(_, l)| l),
        module: Some(
            if file.is_some() {
                "/opt/bench/queue"
            } else {
                "/usr/lib/libfoo.so"
            }
            .into(),
        ),
        offset: "0x1a2b".into(),
        debug: if file.is_some() { "dwarf" } else { "none" }.into(),
        display: display.into(),
        events: 1000,
        contended_events: 100,
        wait_ns,
        hold_ns: 5_000,
        critical_wait_ns: wait_ns / 3,
        kinds: vec!["mutex".into()],
        counted_events: 0,
    }
}

/// A report with two processes' worth of detail: three locks, two sites,
/// threads, histogram buckets, other waits and a warning.
/// A report of `run` with the lock section `locks` and `warnings`.
fn report_of(run: RunInfo, locks: LockReport, warnings: Vec<String>) -> Report {
    let mut r = Report::new(run).with(locks);
    r.warnings = warnings;
    r
}

/// The lock section of `r`.
fn locks(r: &mut Report) -> &mut LockReport {
    r.section_mut::<LockReport>().unwrap()
}

fn sample() -> Report {
    report_of(
        RunInfo {
            recording: "contend.data".into(),
            command: vec!["./queue".into(), "--threads".into(), "4".into()],
            exit_code: Some(0),
            signal: None,
            wall_ns: 14_770_000_000,
            host: "bench1".into(),
            cpu_model: "Intel(R) Xeon(R) CPU E5-2650".into(),
            cpus: 8,
            start_utc: "2024-03-01T12:00:00Z".into(),
            tool_version: "0.1.0".into(),
            processes: 1,
            threads: 9,
            limits: None,
        },
        LockReport {
            summary: LockSummary {
                program_ns: 14_770_000_000,
                events: 991_471,
                contended_events: 123_456,
                failed_events: 7,
                wait_ns: 38_502_000_000,
                hold_ns: 114_992_000_000,
                duration_ns: 153_494_000_000,
                duration_once_ns: 151_800_000_000,
                wait_share: 38_502.0 / 153_494.0,
                mean_event_ns: 153_102,
                max_wait_ns: 4_200_000,
                unreleased_events: 1,
                unmatched_releases: 0,
                releases_with_waiters: 12_345,
                wake_ns: 61_000_000,
            },
            critical_path: CriticalPathSummary {
                events: 69_565,
                contended_events: 5_000,
                wait_ns: 3_234_000_000,
                hold_ns: 12_123_000_000,
                duration_ns: 15_357_000_000,
                duration_once_ns: 14_905_000_000,
                event_share: 0.07016,
                wait_share: 0.0213,
                jumps: 812,
                other_wait_ns: 1_000_000,
                across: None,
            },
            other_waits: vec![WaitKindRow {
                kind: "cond".into(),
                events: 200,
                contended_events: 150,
                wait_ns: 5_000_000,
                critical_wait_ns: 1_000_000,
                timeouts: 2,
            }],
            by_lock: vec![
                lock(
                    "queue_lock",
                    "0x55d0c0a6ccf0",
                    "mutex",
                    600_000,
                    30_000_000_000,
                    &["dequeue (queue.c:82)", "enqueue (queue.c:112)"],
                ),
                lock(
                    "0x7f2638e6a978",
                    "0x7f2638e6a978",
                    "rwlock",
                    300_000,
                    8_000_000_000,
                    &["libfoo.so+0x1a2b"],
                ),
                lock(
                    "stats_lock",
                    "0x55d0c0a6cd00",
                    "spinlock",
                    91_471,
                    502_000_000,
                    &[],
                ),
            ],
            by_site: vec![
                site(
                    Some("dequeue"),
                    Some(("queue.c", 82)),
                    "dequeue (queue.c:82)",
                    20_000_000_000,
                ),
                site(None, None, "libfoo.so+0x1a2b", 8_000_000_000),
            ],
            by_thread: vec![
                ThreadRow {
                    pid: 4242,
                    tid: 4243,
                    events: 500_000,
                    contended_events: 60_000,
                    wait_ns: 6_000_000_000,
                    hold_ns: 5_000_000_000,
                    critical_events: 30_000,
                    span_ns: 14_000_000_000,
                    counted_events: 0,
                    name: Some("worker-1".into()),
                },
                ThreadRow {
                    pid: 4242,
                    tid: 4244,
                    events: 491_471,
                    span_ns: 13_000_000_000,
                    ..ThreadRow::default()
                },
            ],
            wait_histogram: vec![
                HistogramBucket {
                    lower_ns: 1024,
                    upper_ns: 2048,
                    events: 500,
                    wait_ns: 700_000,
                    critical_events: 10,
                    critical_wait_ns: 14_000,
                },
                HistogramBucket {
                    lower_ns: 1 << 20,
                    upper_ns: 1 << 21,
                    events: 30_000,
                    wait_ns: 38_000_000_000,
                    critical_events: 2_000,
                    critical_wait_ns: 3_000_000_000,
                },
            ],
            filters: vec![],
            no_events_reason: None,
            sites_without_debug_info: vec!["/usr/lib/libfoo.so".into()],
            light: None,
        },
        vec!["trace of thread 4244 ends early: its last chunk is incomplete".into()],
    )
}

fn opts() -> RenderOptions {
    RenderOptions {
        color: false,
        top: 0,
        unit: TimeUnit::Auto,
        width: Some(100),
        legend: false,
        ..RenderOptions::default()
    }
}

/// Regression: text tables cut names to about 17 characters with `…` in
/// the middle, whatever the terminal, so two RocksDB functions both showed
/// as `rocksdb…ed long)`. Names are never cut now: a terminal narrower than
/// the table wraps them onto more lines, a file or pipe gets them in full
/// on one line.
#[test]
fn names_are_never_cut() {
    let long_a = "rocksdb::DBImpl::WriteImpl(rocksdb::WriteOptions const&, unsigned long)";
    let long_b = "rocksdb::DBImpl::GetImpl(rocksdb::ReadOptions const&, unsigned long)";
    let mut r = sample();
    locks(&mut r).by_site[0].function = Some(long_a.into());
    locks(&mut r).by_site[1].function = Some(long_b.into());
    let piped = render_report(
        &r,
        OutputFormat::Text,
        &RenderOptions {
            width: None,
            ..opts()
        },
    );
    assert!(piped.contains(long_a) && piped.contains(long_b), "{piped}");
    assert!(!piped.contains('…'), "{piped}");
    let narrow = render_report(
        &r,
        OutputFormat::Text,
        &RenderOptions {
            width: Some(80),
            ..opts()
        },
    );
    assert!(!narrow.contains("…ed long)"), "{narrow}");
    // Wrapped, every character of both names is still there, in order.
    let squeezed: String = narrow.split_whitespace().collect();
    for name in [long_a, long_b] {
        let n: String = name.split_whitespace().collect();
        let mut rest = squeezed.as_str();
        for c in n.chars() {
            let at = rest
                .find(c)
                .unwrap_or_else(|| panic!("{name} cut:\n{narrow}"));
            rest = &rest[at + c.len_utf8()..];
        }
    }
    // Numbers are never narrowed: the per-lock table's nine numeric
    // columns alone take about 90 characters, so an 80-column terminal
    // gets names squeezed to their minimum (20) and the numbers beside
    // them; nothing wider than that.
    for line in narrow.lines() {
        assert!(line.chars().count() <= 115, "wider than 115: {line}");
    }
}

/// The value at `path` (dot-separated object keys).
fn at<'a>(v: &'a Value, path: &str) -> &'a Value {
    path.split('.').fold(v, |v, k| {
        v.get(k)
            .unwrap_or_else(|| panic!("JSON lacks `{path}` (at `{k}`)"))
    })
}

#[test]
fn json_holds_the_contract_keys_with_integer_values() {
    let v: Value =
        serde_json::from_str(&render_report(&sample(), OutputFormat::Json, &opts())).unwrap();
    for key in [
        "events",
        "contended_events",
        "wait_ns",
        "hold_ns",
        "duration_ns",
        "duration_once_ns",
    ] {
        assert!(
            at(&v, &format!("locks.summary.{key}")).is_u64(),
            "locks.summary.{key}"
        );
    }
    for key in ["events", "wait_ns", "hold_ns"] {
        assert!(
            at(&v, &format!("locks.critical_path.{key}")).is_u64(),
            "locks.critical_path.{key}"
        );
    }
    assert_eq!(at(&v, "locks.summary.events"), 991_471);
    assert_eq!(at(&v, "run.command").as_array().unwrap().len(), 3);
    assert_eq!(at(&v, "run.exit_code"), 0);
    assert_eq!(at(&v, "run.wall_ns"), 14_770_000_000u64);

    let locks = at(&v, "locks.by_lock").as_array().unwrap();
    assert_eq!(locks.len(), 3);
    for l in locks {
        for key in ["name", "address", "kind"] {
            assert!(l[key].is_string(), "by_lock[].{key}");
        }
        for key in ["events", "contended_events", "wait_ns", "hold_ns"] {
            assert!(l[key].is_u64(), "by_lock[].{key}");
        }
        assert!(l["sites"].is_array());
    }
    assert_eq!(locks[0]["name"], "queue_lock");
    assert_eq!(locks[0]["sites"][1], "enqueue (queue.c:112)");

    let sites = at(&v, "locks.by_site").as_array().unwrap();
    for s in sites {
        for key in ["function", "file", "line", "events", "wait_ns", "hold_ns"] {
            assert!(s.get(key).is_some(), "by_site[].{key}");
        }
        for key in ["events", "wait_ns", "hold_ns"] {
            assert!(s[key].is_u64(), "by_site[].{key}");
        }
    }
    assert_eq!(sites[0]["function"], "dequeue");
    assert_eq!(sites[0]["line"], 82);
    assert!(sites[1]["file"].is_null() && sites[1]["line"].is_null());
}

#[test]
fn text_shows_formatted_numbers_in_every_section() {
    let t = render_report(&sample(), OutputFormat::Text, &opts());
    for expected in [
        "./queue --threads 4",
        "WARNINGS (1)",
        "trace of thread 4244 ends early",
        "991,471",  // lock events, grouped
        "123,456",  // contended
        "12.45 %",  // contended share
        "38.50 s",  // wait time
        "25.08 %",  // its share of event duration
        "153.5 s",  // event duration, every event counted
        "151.8 s",  // counted once
        "153.1 µs", // average event duration
        "14.77 s",  // wall time
        "69,565",   // critical-path events
        "7.02 %",   // their share
        "Other waits",
        "cond",
        "queue_lock",
        "dequeue (queue.c:82), enqueue (queue.c:112)",
        "queue.c:82",
        "libfoo.so+0x1a2b", // site without debug information
        "4242/4243",
        "█", // histogram bars
        "1.024 µs",
        "/usr/lib/libfoo.so",
    ] {
        assert!(t.contains(expected), "text lacks {expected:?}:\n{t}");
    }
    // Warnings come before the tables.
    assert!(t.find("WARNINGS").unwrap() < t.find("Lock summary").unwrap());
    // The widest table is the per lock one: short names and its nine
    // numeric columns fit in 115 columns.
    for line in t.lines() {
        assert!(
            line.chars().count() <= 115,
            "line wider than 115 columns: {line:?}"
        );
    }
}

#[test]
fn colour_only_when_asked() {
    let plain = render_report(&sample(), OutputFormat::Text, &opts());
    assert!(!plain.contains('\x1b'), "escape codes with color=false");
    let coloured = render_report(
        &sample(),
        OutputFormat::Text,
        &RenderOptions {
            color: true,
            ..opts()
        },
    );
    assert!(coloured.contains("\x1b["));
    for format in [
        OutputFormat::Markdown,
        OutputFormat::Latex,
        OutputFormat::Csv,
        OutputFormat::Json,
    ] {
        let out = render_report(
            &sample(),
            format,
            &RenderOptions {
                color: true,
                ..opts()
            },
        );
        assert!(!out.contains('\x1b'), "{format} has escape codes");
    }
}

#[test]
fn fixed_time_units() {
    let t = render_report(
        &sample(),
        OutputFormat::Text,
        &RenderOptions {
            unit: TimeUnit::Ms,
            ..opts()
        },
    );
    assert!(t.contains("38,502.000 ms"), "{t}");
    let l = render_report(
        &sample(),
        OutputFormat::Latex,
        &RenderOptions {
            unit: TimeUnit::Ms,
            ..opts()
        },
    );
    assert!(l.contains("38\\,502.000~ms"));
    assert!(l.contains("Times are given in milliseconds."));
}

#[test]
fn top_limits_rows_and_says_so() {
    let t = render_report(
        &sample(),
        OutputFormat::Text,
        &RenderOptions { top: 1, ..opts() },
    );
    assert!(t.contains("queue_lock"));
    assert!(!t.contains("stats_lock"));
    assert!(t.contains("2 more not shown (top 1)"), "{t}");
    // JSON is never cut.
    let j = render_report(
        &sample(),
        OutputFormat::Json,
        &RenderOptions { top: 1, ..opts() },
    );
    assert!(j.contains("stats_lock"));
}

/// Pipes that separate cells (not escaped as `\|`).
fn cell_separators(line: &str) -> usize {
    let mut n = 0;
    let mut escaped = false;
    for c in line.chars() {
        match c {
            '\\' if !escaped => escaped = true,
            '|' if !escaped => n += 1,
            _ => escaped = false,
        }
        if c != '\\' {
            escaped = false;
        }
    }
    n
}

fn assert_markdown_tables_well_formed(md: &str) -> usize {
    let lines: Vec<&str> = md.lines().collect();
    let mut tables = 0;
    let mut i = 0;
    while i < lines.len() {
        if !lines[i].starts_with('|') {
            i += 1;
            continue;
        }
        let start = i;
        while i < lines.len() && lines[i].starts_with('|') {
            i += 1;
        }
        let block = &lines[start..i];
        assert!(block.len() >= 3, "table without rows: {block:?}");
        let cols = cell_separators(block[0]);
        for line in block {
            assert!(line.ends_with('|'), "{line:?}");
            assert_eq!(
                cell_separators(line),
                cols,
                "column count differs in {line:?}"
            );
        }
        let sep = block[1].trim_matches('|').split('|').map(str::trim);
        assert!(
            sep.into_iter().all(|c| c == ":---" || c == "---:"),
            "bad separator row {:?}",
            block[1]
        );
        tables += 1;
    }
    tables
}

#[test]
fn markdown_tables_are_well_formed() {
    let mut r = sample();
    locks(&mut r).by_site[0].function = Some("operator|".into());
    let md = render_report(&r, OutputFormat::Markdown, &opts());
    assert!(md.contains("operator\\|"));
    assert!(md.contains("> **Warning:**"));
    assert!(md.contains("queue\\_lock"));
    assert!(assert_markdown_tables_well_formed(&md) >= 8, "{md}");
    let cmp = render_comparison(&two_runs(), OutputFormat::Markdown, &opts());
    assert!(assert_markdown_tables_well_formed(&cmp) >= 4, "{cmp}");
}

#[test]
fn latex_escapes_special_characters() {
    let mut r = sample();
    locks(&mut r).by_lock[1].name = "cache&stats_100%_$#{x}~^\\".into();
    let tex = render_report(&r, OutputFormat::Latex, &opts());
    assert!(tex.contains("queue\\_lock"));
    assert!(tex.contains("cache\\&stats\\_100\\%\\_\\$\\#\\{x\\}\\textasciitilde{}\\textasciicircum{}\\textbackslash{}"), "{tex}");
    assert!(
        tex.contains("\\begin{tabular}")
            && tex.contains("\\toprule")
            && tex.contains("\\bottomrule")
    );
    assert!(tex.contains("\\caption{Lock summary."));
    assert!(tex.contains("991\\,471"));
    // No unescaped underscore or ampersand outside the tabular separators.
    for line in tex.lines().filter(|l| !l.starts_with('%')) {
        let stripped = line
            .replace("\\_", "")
            .replace("\\&", "")
            .replace(" & ", "");
        assert!(!stripped.contains('_'), "unescaped _ in {line:?}");
        assert!(!stripped.contains('&'), "unescaped & in {line:?}");
    }
    assert_eq!(
        tex.matches("\\begin{table}").count(),
        tex.matches("\\end{table}").count()
    );
}

/// Splits RFC 4180 CSV into records.
fn parse_csv(s: &str) -> Vec<Vec<String>> {
    let mut records = Vec::new();
    let mut record = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                field.push('"');
                chars.next();
            }
            ('"', true) => quoted = false,
            ('"', false) if field.is_empty() => quoted = true,
            (',', false) => record.push(std::mem::take(&mut field)),
            ('\n', false) => {
                record.push(std::mem::take(&mut field));
                records.push(std::mem::take(&mut record));
            }
            _ => field.push(c),
        }
    }
    assert!(
        !quoted && field.is_empty() && record.is_empty(),
        "CSV does not end with a complete record"
    );
    records
}

#[test]
fn csv_parses_back_with_raw_numbers() {
    let mut r = sample();
    r.warnings
        .push("a warning, with a comma and \"quotes\"".into());
    let csv = render_report(
        &r,
        OutputFormat::Csv,
        &RenderOptions {
            unit: TimeUnit::Ms,
            ..opts()
        },
    );
    let records = parse_csv(&csv);
    assert_eq!(records[0], ["section", "key", "column", "value"]);
    for rec in &records {
        assert_eq!(rec.len(), 4, "{rec:?}");
    }
    let has = |row: [&str; 4]| records.iter().any(|rec| rec == &row);
    assert!(has(["summary", "locks.summary.events", "value", "991471"]));
    assert!(
        has(["summary", "locks.summary.wait_ns", "value", "38502000000"]),
        "raw ns regardless of unit"
    );
    assert!(has(["run", "wall_ns", "value", "14770000000"]));
    assert!(has([
        "by_lock",
        "4242:0x55d0c0a6ccf0",
        "name",
        "queue_lock"
    ]));
    assert!(has([
        "by_lock",
        "4242:0x55d0c0a6ccf0",
        "wait_ns",
        "30000000000"
    ]));
    assert!(has(["wait_histogram", "1024", "wait_ns", "700000"]));
    assert!(has([
        "warnings",
        "2",
        "message",
        "a warning, with a comma and \"quotes\""
    ]));
    assert!(!csv.contains("991,471"));

    let cmp = parse_csv(&render_comparison(&two_runs(), OutputFormat::Csv, &opts()));
    assert_eq!(
        cmp[0],
        ["section", "item", "metric", "run", "value", "change_pct"]
    );
    for rec in &cmp {
        assert_eq!(rec.len(), 6, "{rec:?}");
    }
    assert!(cmp.iter().any(|r| r
        == &[
            "summary",
            "",
            "locks.summary.wait_ns",
            "after",
            "150",
            "-25"
        ]));
    assert!(cmp.iter().any(|r| r
        == &[
            "summary",
            "",
            "locks.summary.failed_events",
            "after",
            "3",
            ""
        ]));
}

/// Two runs: wait 200 → 150 ns, failed attempts 0 → 3, `stats_lock` only
/// in the first, `head_lock` only in the second.
fn two_runs() -> Comparison {
    let mut a = sample();
    locks(&mut a).summary.wait_ns = 200;
    locks(&mut a).summary.failed_events = 0;
    locks(&mut a).by_lock[0].wait_ns = 200;
    let mut b = sample();
    locks(&mut b).summary.wait_ns = 150;
    locks(&mut b).summary.failed_events = 3;
    locks(&mut b).by_lock[0].wait_ns = 150;
    locks(&mut b).by_lock[2] = lock("head_lock", "0x55d0c0a6cd40", "mutex", 10, 1_000, &[]);
    locks(&mut b).other_waits.clear();
    Comparison::new(vec![("before".into(), a), ("after".into(), b)])
}

#[test]
fn comparison_computes_change_relative_to_the_first_run() {
    assert_eq!(percent_change(200.0, 150.0), Some(-25.0));
    assert_eq!(percent_change(0.0, 3.0), None);

    let c = two_runs();
    let m = |key: &str| {
        c.metrics
            .iter()
            .find(|m| m.key == key)
            .unwrap_or_else(|| panic!("no metric {key}"))
    };
    let wait = m("locks.summary.wait_ns");
    assert_eq!(wait.unit, Unit::Ns);
    assert_eq!(wait.values, [Some(200.0), Some(150.0)]);
    assert_eq!(wait.change_pct, [None, Some(-25.0)]);
    assert_eq!(m("locks.summary.failed_events").change_pct, [None, None]);
    // A wait kind the second run did not record counts as zero there.
    assert_eq!(
        m("locks.other_waits.cond.events").values,
        [Some(200.0), Some(0.0)]
    );
    assert_eq!(
        m("locks.other_waits.cond.events").change_pct,
        [None, Some(-100.0)]
    );

    // Locks are matched by name; one present in a single run has blanks.
    let names: Vec<&str> = c.items("by_lock").iter().map(|l| l.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "queue_lock",
            "heap rwlock used at libfoo.so+0x1a2b",
            "stats_lock",
            "head_lock"
        ]
    );
    let lock_wait = |name: &str| {
        c.items("by_lock")
            .iter()
            .find(|l| l.name == name)
            .unwrap()
            .metrics
            .iter()
            .find(|m| m.key == "wait_ns")
            .unwrap()
            .clone()
    };
    assert_eq!(lock_wait("queue_lock").change_pct, [None, Some(-25.0)]);
    assert_eq!(lock_wait("stats_lock").values, [Some(502_000_000.0), None]);
    assert_eq!(lock_wait("head_lock").values, [None, Some(1_000.0)]);
    assert_eq!(lock_wait("head_lock").change_pct, [None, None]);
    assert_eq!(c.items("by_lock")[3].best_rank, 2);

    let t = render_comparison(&c, OutputFormat::Text, &opts());
    assert!(t.contains("-25.0 %"), "{t}");
    assert!(t.contains("n/a"));
    assert!(t.contains("before") && t.contains("after"));
    assert!(!t.contains('\x1b'));
    let tex = render_comparison(&c, OutputFormat::Latex, &opts());
    assert!(tex.contains("-25.0~\\%"));

    let v: Value =
        serde_json::from_str(&render_comparison(&c, OutputFormat::Json, &opts())).unwrap();
    assert_eq!(v["runs"][1]["label"], "after");
    assert_eq!(v["runs"][0]["run"]["wall_ns"], 14_770_000_000u64);
    let wait = v["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["key"] == "locks.summary.wait_ns")
        .unwrap();
    assert_eq!(wait["unit"], "ns");
    assert_eq!(wait["values"], serde_json::json!([200.0, 150.0]));
    assert_eq!(wait["change_pct"], serde_json::json!([null, -25.0]));
    assert_eq!(v["by_lock"][3]["name"], "head_lock");
    assert!(v["by_lock"][3]["metrics"][0]["values"][0].is_null());
    assert!(v["by_site"].is_array());
}

#[test]
fn comparison_top_keeps_items_in_the_top_of_any_run() {
    let c = two_runs();
    let t = render_comparison(&c, OutputFormat::Text, &RenderOptions { top: 1, ..opts() });
    assert!(t.contains("queue_lock"));
    assert!(!t.contains("stats_lock") && !t.contains("head_lock"));
    let t = render_comparison(&c, OutputFormat::Text, &RenderOptions { top: 3, ..opts() });
    assert!(t.contains("stats_lock") && t.contains("head_lock"));
}

#[test]
fn no_events_reason_replaces_the_tables() {
    let reason = "no lock operation was recorded: is the program statically linked?";
    let r = report_of(
        RunInfo {
            command: vec!["./static".into()],
            exit_code: Some(0),
            wall_ns: 1_000_000,
            ..RunInfo::default()
        },
        LockReport {
            no_events_reason: Some(reason.into()),
            ..LockReport::default()
        },
        vec![],
    );
    for format in [OutputFormat::Text, OutputFormat::Markdown] {
        let out = render_report(&r, format, &opts());
        assert!(out.contains(reason), "{format}: {out}");
        for table in [
            "Lock summary",
            "Critical path",
            "Per lock",
            "Per call site",
            "Per thread",
            "histogram",
        ] {
            assert!(
                !out.contains(table),
                "{format} shows {table:?} despite no events:\n{out}"
            );
        }
    }
    let csv = render_report(&r, OutputFormat::Csv, &opts());
    assert!(csv.contains(&format!("no_events,reason,message,{reason}")));
    assert!(!csv.contains("locks.summary.events"));
}

#[test]
fn format_and_unit_names() {
    for (name, f) in [
        ("text", OutputFormat::Text),
        ("markdown", OutputFormat::Markdown),
        ("md", OutputFormat::Markdown),
        ("latex", OutputFormat::Latex),
        ("TeX", OutputFormat::Latex),
        ("csv", OutputFormat::Csv),
        ("json", OutputFormat::Json),
    ] {
        assert_eq!(name.parse::<OutputFormat>().unwrap(), f);
    }
    for f in OutputFormat::ALL {
        assert_eq!(f.to_string().parse::<OutputFormat>().unwrap(), f);
    }
    let err = "pdf".parse::<OutputFormat>().unwrap_err().to_string();
    assert!(
        err.contains("pdf")
            && err.contains("text, markdown (md), latex (tex), csv, json, html, svg"),
        "{err}"
    );
    assert_eq!("us".parse::<TimeUnit>().unwrap(), TimeUnit::Us);
    assert!("minutes"
        .parse::<TimeUnit>()
        .unwrap_err()
        .to_string()
        .contains("auto, ns, us, ms, s"));
}

#[test]
fn text_report_snapshot() {
    insta::assert_snapshot!(
        "text_report",
        render_report(&sample(), OutputFormat::Text, &opts())
    );
}

#[test]
fn text_comparison_snapshot() {
    insta::assert_snapshot!(
        "text_comparison",
        render_comparison(
            &two_runs(),
            OutputFormat::Text,
            &RenderOptions { top: 2, ..opts() }
        )
    );
}

/// Regression (two MariaDB runs: 36 of 2,237 lock rows matched): a heap
/// lock's address differs from run to run, so it is matched by its kind
/// and the call site that waited for it most, not by its address.
#[test]
fn comparison_pairs_heap_locks_by_site() {
    let a = sample();
    let mut b = sample();
    locks(&mut b).by_lock[1].name = "0x7f00deadbeef".into();
    locks(&mut b).by_lock[1].address = "0x7f00deadbeef".into();
    let c = Comparison::new(vec![("a".into(), a), ("b".into(), b)]);
    let names: Vec<&str> = c.items("by_lock").iter().map(|l| l.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "queue_lock",
            "heap rwlock used at libfoo.so+0x1a2b",
            "stats_lock"
        ],
        "the heap lock of both runs is one row"
    );
    let heap = &c.items("by_lock")[1];
    assert!(heap
        .metrics
        .iter()
        .all(|m| m.values.iter().all(Option::is_some)));
}

/// Locks of one name in a run (heap locks made at one line) are matched
/// the n-th with the n-th of that name in the other run, and each row is
/// named with its place, so the rows can be told apart; a name of its own
/// keeps it alone.
#[test]
fn comparison_numbers_locks_that_share_a_name() {
    let same = |r: &mut Report| {
        for k in [0, 2] {
            locks(r).by_lock[k].name = "mutex created at pool.c:12 (make_lock)".into();
        }
    };
    let (mut a, mut b) = (sample(), sample());
    same(&mut a);
    same(&mut b);
    let c = Comparison::new(vec![("a".into(), a), ("b".into(), b)]);
    let names: Vec<&str> = c.items("by_lock").iter().map(|l| l.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "mutex created at pool.c:12 (make_lock) #1",
            "heap rwlock used at libfoo.so+0x1a2b",
            "mutex created at pool.c:12 (make_lock) #2"
        ]
    );
    for item in c.items("by_lock") {
        assert!(
            item.metrics
                .iter()
                .all(|m| m.values.iter().all(Option::is_some)),
            "{} is matched in both runs",
            item.name
        );
    }
}

/// `compare` shows the service time, the counters and the wait histogram
/// as well as the lock tables.
#[test]
fn comparison_shows_service_counters_and_histogram() {
    use contend::counters::CountersReport;
    use contend::service::ServiceReport;
    let with_more = |cpu_s: f64| {
        let mut r = sample();
        r.push(Box::new(ServiceReport {
            wall_s: 2.0,
            cpu_s,
            active_threads: cpu_s / 2.0,
            ..ServiceReport::default()
        }));
        r.push(Box::new(CountersReport {
            work_measure: "cpu time".into(),
            cpu_s: Some(cpu_s),
            ..CountersReport::default()
        }));
        r
    };
    let c = Comparison::new(vec![
        ("a".into(), with_more(2.0)),
        ("b".into(), with_more(3.0)),
    ]);
    let m = |key: &str| {
        c.metrics
            .iter()
            .find(|m| m.key == key)
            .unwrap_or_else(|| panic!("no {key}"))
    };
    assert_eq!(m("service.cpu_ns").values, [Some(2e9), Some(3e9)]);
    assert_eq!(m("service.active_threads").change_pct[1], Some(50.0));
    assert_eq!(m("counters.cpu_ns").values, [Some(2e9), Some(3e9)]);
    assert_eq!(
        m("locks.wait_histogram.1024.events").values,
        [Some(500.0), Some(500.0)]
    );
    let text = render_comparison(&c, OutputFormat::Text, &opts());
    for title in ["Service time", "Counters", "Wait-time histogram"] {
        assert!(text.contains(title), "{title}:\n{text}");
    }
}

/// The header names the window and the size cap of a limited recording.
#[test]
fn limited_recording_says_what_it_covers() {
    use contend::report::RecordingLimits;
    let l = RecordingLimits {
        start_after_ns: 500_000_000,
        duration_ns: Some(500_000_000),
        window_start_ns: Some(500_100_000),
        window_end_ns: Some(1_000_200_000),
        max_bytes: Some(1 << 20),
        capped_at_ns: Some(812_000_000),
    };
    assert_eq!(
        l.describe(),
        "lock operations from 0.500 s to 1.000 s after the start only (--start-after/--duration); \
         the size cap of 1.0 MiB was reached at 0.812 s: later lock operations are missing (--max-size)"
    );
    let never = RecordingLimits {
        start_after_ns: 2_000_000_000,
        ..RecordingLimits::default()
    };
    assert_eq!(
        never.describe(),
        "nothing: the run ended before the window opened at 2.000 s (--start-after)"
    );
    let mut r = sample();
    r.run.limits = Some(l);
    let text = render_report(&r, OutputFormat::Text, &opts());
    assert!(text.contains("Recorded"), "{text}");
    assert!(text.contains("size cap of 1.0 MiB was reached"), "{text}");
    let json: Value =
        serde_json::from_str(&render_report(&r, OutputFormat::Json, &opts())).unwrap();
    assert_eq!(json["run"]["limits"]["capped_at_ns"], 812_000_000);
    assert_eq!(json["run"]["limits"]["window_start_ns"], 500_100_000);
}

/// A column empty in every row (threads without names in a recording that
/// has none, ranks outside an MPI run) is left out by every human format,
/// HTML included; one named thread or one rank brings the column back.
#[test]
fn columns_empty_in_every_row_are_left_out_in_every_human_format() {
    use contend::service::{ServiceReport, ServiceThreadRow};
    let report = |name: Option<&str>, rank: Option<u32>| {
        let thread = |tid: u32| ServiceThreadRow {
            pid: 7,
            tid,
            cpu_s: 0.5,
            ..ServiceThreadRow::default()
        };
        let mut first = thread(7);
        first.name = name.map(str::to_string);
        first.rank = rank;
        Report::new(RunInfo::default()).with(ServiceReport {
            wall_s: 1.0,
            cpu_s: 1.0,
            samples: 10,
            threads: vec![first, thread(8)],
            ..ServiceReport::default()
        })
    };
    let section = |r: &Report, format: OutputFormat| {
        let out = render_report(r, format, &opts());
        let start = out
            .find("Service time per thread")
            .expect("the per-thread table");
        out[start..].to_string()
    };
    for format in [
        OutputFormat::Text,
        OutputFormat::Markdown,
        OutputFormat::Latex,
        OutputFormat::Html,
    ] {
        let bare = section(&report(None, None), format);
        assert!(
            !bare.contains("Name") && !bare.contains("Rank"),
            "{format:?}: {bare}"
        );
        let named = section(&report(Some("worker"), None), format);
        assert!(
            named.contains("Name") && named.contains("worker"),
            "{format:?}: {named}"
        );
        assert!(!named.contains("Rank"), "{format:?}: {named}");
        let ranked = section(&report(None, Some(3)), format);
        assert!(
            ranked.contains("Rank") && !ranked.contains("Name"),
            "{format:?}: {ranked}"
        );
    }
}

/// LaTeX output is ASCII: every other character (µ, Σ, ×, the arrows and
/// dashes of a comparison's "At a glance") is written as a LaTeX command,
/// so that pdflatex without Unicode set-up takes it.
#[test]
fn latex_is_ascii_in_reports_and_comparisons() {
    let tex = render_report(&sample(), OutputFormat::Latex, &opts());
    let odd: String = tex.chars().filter(|c| !c.is_ascii()).collect();
    assert!(odd.is_empty(), "not escaped: {odd:?}");
    let tex = render_comparison(&two_runs(), OutputFormat::Latex, &opts());
    assert!(tex.contains("$\\to$"), "{tex}");
    let odd: String = tex.chars().filter(|c| !c.is_ascii()).collect();
    assert!(odd.is_empty(), "not escaped: {odd:?}");
}
