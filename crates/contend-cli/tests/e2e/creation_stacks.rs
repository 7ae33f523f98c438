//! Each lock's creation call stack, shown without `--stack-every`
//! (mutrace's "where the lock was created" view; issue 16):
//! `tests/programs/creation_stacks.c` initialises a heap mutex in
//! `make_lock`, called by `make_pool`, called by `main`, and first uses a
//! static mutex in `bump_stats`, called by each thread's `worker`. The
//! JSON's `created_at.stack` and the text report's "Where the locks were
//! created" list must give those frames, innermost first, at the marked
//! lines, and stop before the C library's thread entry (`start_thread`).

use crate::common::*;

const SRC: &str = "creation_stacks.c";

/// `function (creation_stacks.c:LINE)` of the line marked `marker`.
fn frame(function: &str, marker: &str) -> String {
    format!("{function} ({SRC}:{})", line_of(SRC, marker))
}

#[test]
fn creation_stacks_are_kept_and_shown_without_stack_every() {
    let tmp = tempdir();
    let exe = build(SRC, &[]);
    let dir = tmp.path().join("c.data");
    let out = record(&dir, &exe, &[] as &[&str]);
    assert!(out.success(), "{}", out.describe());

    let pool_name = format!(
        "mutex created at {SRC}:{} (make_lock)",
        line_of(SRC, "/* INIT */")
    );
    let pool = [
        frame("make_lock", "/* INIT */"),
        frame("make_pool", "/* MAKE_LOCK */"),
        frame("main", "/* MAKE_POOL */"),
    ];
    let stats = [
        frame("bump_stats", "/* FIRST_USE */"),
        frame("worker", "/* BUMP */"),
    ];

    let report = report_json(&dir);
    let stack = |name: &str| -> Vec<String> {
        lock_row(&report, name)["created_at"]["stack"]
            .as_array()
            .unwrap_or_else(|| panic!("{name} has a creation stack: {report:#}"))
            .iter()
            .map(|f| f.as_str().unwrap_or_default().to_string())
            .collect()
    };
    let p = stack(&pool_name);
    assert_eq!(p[..3], pool, "{p:#?}");
    let s = stack("stats_lock");
    assert_eq!(s[..2], stats, "{s:#?}");
    assert!(
        s.len() <= 8,
        "at most 8 frames without --stack-every: {s:#?}"
    );

    // the text report lists them, the frames joined innermost first
    let text = report_raw(&dir, &["--format", "text"]);
    assert!(text.success(), "{}", text.describe());
    let flat = text.stdout.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains("Where the locks were created"),
        "{}",
        text.stdout
    );
    for line in [
        format!("{pool_name} (created by thread"),
        pool.join(" ← "),
        "stats_lock (first used by thread".to_string(),
        stats.join(" ← "),
    ] {
        assert!(flat.contains(&line), "{line:?} in:\n{}", text.stdout);
    }
    assert!(!flat.contains("← start_thread"), "{}", text.stdout);
}
