//! The lock section in the table formats and in comparisons: the summary
//! (Venter 2016, Table 4.9), the critical path (Table 4.10), other waits,
//! per lock (Table 4.12), per call site, per thread, the wait histogram
//! (Figures 4.1/4.2), and the lock numbers `contend compare` lines up
//! (Tables 4.16–4.18 for locks).

use super::model::{LockReport, LockRow, ShownNames, SiteRow};
use crate::report::compared::{
    fraction, metrics, Comparable, ComparedPart, Item, ItemList, Metric, MetricGroup, Unit,
};
use crate::report::layout::{
    compared_list_panel, compared_metric_table, metric_table, take_top, Body, Cell, Column, Panel,
    Row, Table,
};
use crate::report::{RenderOptions, ReportSection};

/// Metric group of the lock summary (Table 4.9).
pub const SUMMARY: MetricGroup = MetricGroup("summary");
/// Metric group of the critical-path summary (Table 4.10).
pub const CRITICAL_PATH: MetricGroup = MetricGroup("critical_path");
/// Metric group of the condition, barrier and semaphore waits.
pub const OTHER_WAITS: MetricGroup = MetricGroup("other_waits");
/// Metric group of the wait-time histogram (Figures 4.1 and 4.2).
pub const WAIT_HISTOGRAM: MetricGroup = MetricGroup("wait_histogram");
/// Metric group of one synchronisation object (Table 4.12).
pub const LOCK: MetricGroup = MetricGroup("lock");
/// Metric group of one call site.
pub const SITE: MetricGroup = MetricGroup("site");

/// A count or nanoseconds as a metric value.
fn n(v: u64) -> f64 {
    v as f64
}

impl ReportSection for LockReport {
    fn figures(&self) -> Vec<crate::report::Figure> {
        super::figures::report_figures(self)
    }

    fn key(&self) -> &'static str {
        "locks"
    }

    /// The summary and critical-path tables, other waits, per lock, per
    /// site, per thread and the histogram; the reason instead of the tables
    /// when there are no lock events.
    fn layout(&self, opts: &RenderOptions) -> Vec<Panel> {
        let l = self;
        let mut out = Vec::new();
        let metrics = summary_metrics(l);
        if let Some(reason) = &l.no_events_reason {
            out.push(Panel::new(
                "no_events",
                "No lock events",
                "Why there is nothing to report.",
                Body::Paragraph(reason.clone()),
            ));
        } else {
            out.push(Panel::new(
                "summary",
                "Lock summary",
                "Lock events (mutex, rwlock and spinlock acquisitions) of the whole run (cf. Venter 2016, Table 4.9). \
                 An event lasts from the request to the release: its wait ends when the lock is acquired, its hold \
                 when it is released.",
                Body::Table(metric_table(&metrics, SUMMARY)),
            ));
            if let Some(light) = &l.light {
                let mut items: Vec<String> =
                    light.exact.iter().map(|e| format!("exact: {e}")).collect();
                items.extend(light.approximate.iter().map(|a| format!("not exact: {a}")));
                let n = crate::report::fmt::int_plain;
                out.push(Panel::new(
                    "light",
                    "Light recording",
                    &format!(
                        "Recorded with --light: {} uncontended acquisitions were counted without timestamps, per \
                         {}{} (HaLock: only contended acquisitions need full timing; Huang et al., PACT 2012). \
                         What that means for the figures:",
                        n(light.counted_events),
                        if light.counted_by_site_events > 0 {
                            format!(
                                "call site and thread (and per lock, except {} of them)",
                                n(light.counted_by_site_events)
                            )
                        } else {
                            "lock, call site and thread".to_string()
                        },
                        if light.recorded_uncontended_events > 0 {
                            format!(
                                "; {} more were recorded in full for want of a count entry",
                                n(light.recorded_uncontended_events)
                            )
                        } else {
                            String::new()
                        }
                    ),
                    Body::List(items),
                ));
            }
            out.push(Panel::new(
                "critical_path",
                "Critical path",
                "Lock events on the critical path of execution (cf. Venter 2016, Table 4.10); shares are of all \
                 lock events.",
                Body::Table(metric_table(&metrics, CRITICAL_PATH)),
            ));
        }
        if let Some(a) = &l.critical_path.across {
            out.push(across_panel(a));
        }
        if !l.other_waits.is_empty() {
            let rows = l
                .other_waits
                .iter()
                .map(|w| Row {
                    key: w.kind.clone(),
                    cells: vec![
                        Cell::Text(w.kind.clone()),
                        Cell::Count(w.events),
                        Cell::Count(w.contended_events),
                        Cell::Ns(w.wait_ns),
                        Cell::Ns(w.critical_wait_ns),
                        Cell::Count(w.timeouts),
                    ],
                })
                .collect();
            let table = Table {
                columns: vec![
                    Column::text("Kind", "kind"),
                    Column::num("Waits", "events"),
                    Column::num("Waited", "contended_events").explained("waits that had to block (did not succeed at once)"),
                    Column::num("Wait", "wait_ns").explained("time from the request to the acquisition (or wake-up), summed"),
                    Column::num("CP wait", "critical_wait_ns").explained("wait of the events on the critical path (Chen & Stenström; Venter 2016, Section 3.2.2.2)"),
                    Column::num("Timeouts", "timeouts").explained("timed waits that timed out"),
                ],
                rows,
                ..Table::default()
            };
            out.push(Panel::new(
                "other_waits",
                "Other waits",
                "Condition variable, barrier, semaphore and thread join waits; CP = on the critical path.",
                Body::Table(table),
            ));
        }
        if l.no_events_reason.is_none() {
            out.push(lock_panel(l, opts.top));
            out.extend(creation_panel(l, opts.top));
            out.extend(wait_object_panel(l, opts.top));
            if l.by_lock.iter().any(|k| k.releases_with_waiters > 0) {
                out.push(wake_panel(l, opts.top));
            }
            out.push(site_panel(l, opts.top));
            out.push(thread_panel(l, opts.top));
            out.push(histogram_panel(l));
        }
        if !l.sites_without_debug_info.is_empty() {
            out.push(Panel::new(
                "sites_without_debug_info",
                "Modules without debug information",
                "Call sites in these modules are shown as module+offset; install their debug symbols for file:line.",
                Body::List(l.sites_without_debug_info.clone()),
            ));
        }
        out
    }

    fn closes_report(&self) -> bool {
        true
    }

    fn headlines(&self) -> Vec<String> {
        headlines(self)
    }

    /// Without lock events (a Rust or Go program: its locks are futex
    /// words) the lines are about joins and condition waits: after the
    /// other sections'.
    fn headlines_follow(&self) -> bool {
        self.summary.events == 0
    }

    fn glance_metrics(&self) -> Vec<(&'static str, &'static str)> {
        vec![
            ("locks.summary.wait_ns", "Lock wait"),
            ("locks.summary.contended_events", "Contended acquisitions"),
            (
                "locks.critical_path.wait_ns",
                "Lock wait on the critical path",
            ),
        ]
    }

    fn filters(&self) -> Vec<String> {
        self.filters.clone()
    }

    /// Summary, critical-path and other-wait metrics (an other-wait kind a
    /// run did not record counts as 0 there), per lock matched by name,
    /// per call site matched by its display string.
    fn comparable(&self) -> Option<Comparable> {
        let mut metrics = summary_metrics(self);
        metrics.extend(histogram_metrics(self));
        Some(Comparable {
            metrics,
            missing_is_zero: true,
            lists: vec![
                ItemList {
                    key: "by_lock",
                    title: "Per lock",
                    caption:
                        "Per-lock numbers matched by lock name; blank where a run has no such lock. \
                         Joined threads, named by thread id, are compared in Other waits.",
                    item_heading: "Lock",
                    kind_heading: "Kind",
                    always: true,
                    // a joined thread's id differs from run to run: its
                    // joins are summed in the other waits' join row
                    items: self
                        .by_lock
                        .iter()
                        .filter(|l| l.kind != "join")
                        .map(|l| Item {
                            name: compared_name(l),
                            kind: l.kind.clone(),
                            metrics: lock_metrics(l),
                        })
                        .collect(),
                },
                ItemList {
                    key: "by_site",
                    title: "Per call site",
                    caption:
                        "Per-call-site numbers matched by site; blank where a run has no such site.",
                    item_heading: "Call site",
                    kind_heading: "Kind",
                    always: true,
                    items: self
                        .by_site
                        .iter()
                        .map(|s| Item {
                            name: s.display.clone(),
                            kind: s.kinds.join(", "),
                            metrics: site_metrics(s),
                        })
                        .collect(),
                },
            ],
        })
    }

    fn comparison_notes(&self) -> Vec<String> {
        self.no_events_reason
            .iter()
            .map(|reason| format!("no lock events: {reason}"))
            .collect()
    }

    fn layout_comparison(&self, part: &ComparedPart<'_>, opts: &RenderOptions) -> Vec<Panel> {
        let mut out = Vec::new();
        let groups = [
            (SUMMARY, "summary", "Lock summary", "Lock events of each run and their change (cf. Venter 2016, Tables 4.9 and 4.16)."),
            (CRITICAL_PATH, "critical_path", "Critical path", "Lock events on the critical path of each run and their change (cf. Venter 2016, Table 4.10)."),
            (OTHER_WAITS, "other_waits", "Other waits", "Condition variable, barrier, semaphore and thread join waits of each run and their change."),
            (WAIT_HISTOGRAM, "wait_histogram", "Wait-time histogram", "Lock events and their wait per log2 bucket of the single wait, each run and its change (cf. Venter 2016, Figures 4.1 and 4.2)."),
        ];
        // Histogram buckets in ascending order, whichever run has them.
        let mut sorted: Vec<&crate::report::compared::ComparedMetric> = part.metrics.to_vec();
        sorted.sort_by_key(|m| {
            m.key
                .strip_prefix("locks.wait_histogram.")
                .and_then(|k| k.split('.').next()?.parse::<u64>().ok())
                .unwrap_or(0)
        });
        let sorted_part = ComparedPart {
            metrics: &sorted,
            ..*part
        };
        for (group, id, title, caption) in groups {
            let table = compared_metric_table(&sorted_part, group);
            if !table.rows.is_empty() {
                out.push(Panel::new(id, title, caption, Body::Table(table)));
            }
        }
        out.extend(
            part.lists
                .iter()
                .map(|l| compared_list_panel(part, l, opts)),
        );
        out
    }
}

/// The lock section's lines of "At a glance": the lock wait and its
/// contended acquisitions, the lock waited for most and where, how much of
/// the wait lay on the critical path, and the condition, barrier and
/// semaphore waits on it. None without lock events.
fn headlines(l: &LockReport) -> Vec<String> {
    use crate::report::fmt::{duration_plain as time, int, percent, PLAIN};
    let s = &l.summary;
    let shown = ShownNames::of(l);
    let mut out = Vec::new();
    if l.no_events_reason.is_none() && s.events > 0 {
        out.push(if s.contended_events == 0 {
            format!(
                "Locks: {} acquisitions, none contended.",
                int(s.events, &PLAIN)
            )
        } else {
            format!(
                "Lock wait: {} in {} contended acquisition{} of {} ({}); the longest wait {}.",
                time(s.wait_ns),
                int(s.contended_events, &PLAIN),
                if s.contended_events == 1 { "" } else { "s" },
                int(s.events, &PLAIN),
                percent(s.contended_events as f64 / s.events as f64, &PLAIN),
                time(s.max_wait_ns)
            )
        });
        let locks: Vec<&LockRow> = l.by_lock.iter().filter(|k| is_lock_kind(&k.kind)).collect();
        if let Some(top) = locks
            .iter()
            .max_by_key(|k| k.wait_ns)
            .filter(|k| k.wait_ns > 0)
        {
            let mut line = format!(
                "Waited for most: {}, {} ({} of the lock wait)",
                shown.name(top),
                time(top.wait_ns),
                percent(top.wait_ns as f64 / s.wait_ns.max(1) as f64, &PLAIN)
            );
            if let Some(site) = top.sites.first() {
                line.push_str(&format!(", most of it at {site}"));
            }
            line.push('.');
            out.push(line);
        }
        if s.wait_ns > 0 {
            let cp = &l.critical_path;
            let mut line = format!(
                "Critical path: {} of the lock wait lies on it ({})",
                time(cp.wait_ns),
                percent(cp.wait_ns as f64 / s.wait_ns as f64, &PLAIN)
            );
            match locks.iter().max_by_key(|k| k.critical_wait_ns) {
                Some(k) if k.critical_wait_ns > 0 => line.push_str(&format!(
                    ", {} of it at {}",
                    time(k.critical_wait_ns),
                    shown.name(k)
                )),
                _ if cp.wait_ns == 0 => match waits_beside_the_path(l) {
                    Some((path_pid, pid, wait)) => line.push_str(&format!(
                        ": the path stays in pid {path_pid}, which finished last, and does not follow a \
                         process's wait for its children (not recorded), so pid {pid}'s {} of lock wait \
                         may still lie on the run's critical path",
                        time(wait)
                    )),
                    None => line.push_str(": shortening these waits would not shorten the run"),
                },
                _ => {}
            }
            line.push('.');
            out.push(line);
        }
    }
    let other: Vec<String> = l
        .other_waits
        .iter()
        .filter(|w| w.critical_wait_ns > 0)
        .map(|w| {
            let top = l
                .by_lock
                .iter()
                .filter(|k| k.kind == w.kind)
                .max_by_key(|k| k.critical_wait_ns)
                .filter(|k| k.critical_wait_ns > 0);
            match top {
                Some(k) if k.critical_wait_ns < w.critical_wait_ns => format!(
                    "{} {} (most at {}, {})",
                    w.kind,
                    time(w.critical_wait_ns),
                    shown.name(k),
                    time(k.critical_wait_ns)
                ),
                Some(k) => format!(
                    "{} {} (at {})",
                    w.kind,
                    time(w.critical_wait_ns),
                    shown.name(k)
                ),
                None => format!("{} {}", w.kind, time(w.critical_wait_ns)),
            }
        })
        .collect();
    if !other.is_empty() {
        let kinds: Vec<&str> = l
            .other_waits
            .iter()
            .filter(|w| w.critical_wait_ns > 0)
            .map(|w| match w.kind.as_str() {
                "cond" => "condition variables",
                "barrier" => "barriers",
                "semaphore" => "semaphores",
                "join" => "joined threads",
                other => other,
            })
            .collect();
        let kinds = match kinds.split_last() {
            Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
            _ => kinds.concat(),
        };
        out.push(format!(
            "Waits on the critical path for {kinds}: {}.",
            other.join(", ")
        ));
    }
    out
}

/// When the critical path lies in one process and lock wait in another:
/// (the path's pid, the pid with the most lock wait off the path's
/// process, that wait in ns). The walk does not cross processes (a
/// parent's `waitpid` is not recorded, docs/critical-path.md), so waits of
/// a child process the parent waited for are off the path without being
/// off the run's critical path. `None` with one process, or when the
/// path's events are in several processes or none.
fn waits_beside_the_path(l: &LockReport) -> Option<(u32, u32, u64)> {
    let mut path_pids = l
        .by_lock
        .iter()
        .filter(|k| k.critical_events > 0)
        .map(|k| k.pid);
    let path_pid = path_pids.next()?;
    if path_pids.any(|p| p != path_pid) {
        return None;
    }
    let mut elsewhere: std::collections::BTreeMap<u32, u64> = Default::default();
    for k in l
        .by_lock
        .iter()
        .filter(|k| is_lock_kind(&k.kind) && k.pid != path_pid && k.wait_ns > 0)
    {
        *elsewhere.entry(k.pid).or_default() += k.wait_ns;
    }
    let (pid, wait) = elsewhere
        .into_iter()
        .max_by_key(|&(pid, w)| (w, std::cmp::Reverse(pid)))?;
    Some((path_pid, pid, wait))
}

/// True for the objects that are locks (held), not waits (cond, barrier,
/// semaphore, join).
pub(super) fn is_lock_kind(kind: &str) -> bool {
    matches!(kind, "mutex" | "rwlock" | "spinlock")
}

/// Per lock (Table 4.12): mutexes, rwlocks and spinlocks only. Condition
/// variables, barriers and semaphores have a table of their own
/// ([`wait_object_panel`]): an idle thread's condition wait as long as the
/// run is no lock contention and must not push the hottest mutex down.
fn lock_panel(l: &LockReport, top: usize) -> Panel {
    let shown = ShownNames::of(l);
    let all: Vec<&LockRow> = l.by_lock.iter().filter(|k| is_lock_kind(&k.kind)).collect();
    let (locks, omitted) = take_top(&all, top);
    let rows = locks
        .iter()
        .map(|k| Row {
            key: format!("{}:{}", k.pid, k.address),
            cells: vec![
                Cell::Text(shown.name(k)),
                Cell::Text(k.kind.clone()),
                Cell::Count(k.events),
                Cell::Count(k.contended_events),
                Cell::Ns(k.wait_ns),
                Cell::Ns(k.hold_ns),
                Cell::Ns(k.hold_ns.checked_div(k.events).unwrap_or(0)),
                Cell::Count(k.ownership_changes),
                Cell::Ns(k.max_wait_ns),
                Cell::Ns(k.critical_wait_ns),
                Cell::Text(k.sites.join(", ")),
            ],
        })
        .collect();
    let mut sites = Column::text("Call sites", "sites");
    sites.detail = true;
    let table = Table {
        columns: vec![
            Column::text("Lock", "name"),
            Column::text("Kind", "kind"),
            Column::num("Events", "events"),
            Column::num("Contended", "contended_events").explained("acquisitions that did not succeed at once (a contended acquisition)"),
            Column::num("Wait", "wait_ns").explained("time from the request to the acquisition (or wake-up), summed"),
            Column::num("Hold", "hold_ns").explained("time from the acquisition to the release, summed"),
            Column::num("Avg hold", "mean_hold_ns").explained("hold time per event"),
            Column::num("Changed", "ownership_changes").explained("acquisitions by a thread other than the previous owner (hand-overs; mutrace's count)"),
            Column::num("Max wait", "max_wait_ns").explained("the longest single wait"),
            Column::num("CP wait", "critical_wait_ns").explained("wait of the events on the critical path (Chen & Stenström; Venter 2016, Section 3.2.2.2)"),
            sites,
        ],
        rows,
        omitted,
        ..Table::default()
    };
    Panel::new(
        "by_lock",
        "Per lock",
        "Lock events per mutex, rwlock and spinlock, most waiting first (cf. Venter 2016, Table 4.12); \
         CP = on the critical path (the events on it per lock are in the JSON, `critical_events`).",
        Body::Table(table),
    )
}

/// Frames shown of a creation's call stack in `creation_panel`.
pub const CREATION_FRAMES: usize = 5;

/// Functions where every thread's stack (or the program's) begins: a
/// creation stack shown stops before them.
const STACK_ROOTS: &[&str] = &[
    "start_thread",
    "clone",
    "clone3",
    "__libc_start_call_main",
    "__libc_start_main",
    "_start",
];

/// The frames of a creation stack worth showing: at most
/// [`CREATION_FRAMES`], ending before the thread's or program's entry in
/// the C library (`STACK_ROOTS`).
pub fn creation_frames(stack: &[String]) -> Vec<&str> {
    stack
        .iter()
        .map(String::as_str)
        .take_while(|f| {
            let function = f.split([' ', '+']).next().unwrap_or_default();
            !STACK_ROOTS.contains(&function)
        })
        .take(CREATION_FRAMES)
        .collect()
}

/// Where the top locks of the per-lock table were created or first used,
/// with a few frames of the creation's call stack (mutrace's "where the
/// lock was created" view; innermost first, `←` = called from). Locks of
/// one line (created by the same thread through the same frames, like
/// memcached's item locks, made in one loop) are one item, which says how
/// many of the shown locks it stands for. `None` when no shown lock has a
/// recorded creation stack.
fn creation_panel(l: &LockReport, top: usize) -> Option<Panel> {
    let all: Vec<&LockRow> = l.by_lock.iter().filter(|k| is_lock_kind(&k.kind)).collect();
    let (locks, _) = take_top(&all, top);
    let items: Vec<String> = locks
        .iter()
        .filter_map(|k| {
            let c = k.created_at.as_ref()?;
            let frames = creation_frames(&c.stack);
            if frames.is_empty() {
                return None;
            }
            let verb = if c.how == "init" {
                "created"
            } else {
                "first used"
            };
            Some(format!(
                "{} ({verb} by thread {}): {}",
                k.name,
                c.tid,
                frames.join(" ← ")
            ))
        })
        .collect();
    let items = group_equal_lines(items, "of the locks above");
    if items.is_empty() {
        return None;
    }
    Some(Panel::new(
        "created_at",
        "Where the locks were created",
        &format!(
            "The call stack of each lock's init call (or, when none was seen, of its first use), innermost \
             first, `←` = called from; at most {CREATION_FRAMES} frames (JSON `created_at.stack`)."
        ),
        Body::List(items),
    ))
}

/// `lines` with each repeated line given once, where it first appears,
/// followed by `(N <what>)` when it came N > 1 times.
fn group_equal_lines(lines: Vec<String>, what: &str) -> Vec<String> {
    let mut grouped: Vec<(String, usize)> = Vec::new();
    for line in lines {
        match grouped.iter_mut().find(|(l, _)| *l == line) {
            Some((_, n)) => *n += 1,
            None => grouped.push((line, 1)),
        }
    }
    grouped
        .into_iter()
        .map(|(line, n)| {
            if n > 1 {
                format!("{line} ({n} {what})")
            } else {
                line
            }
        })
        .collect()
}

/// Per condition variable, barrier and semaphore: waits, not holds (a
/// thread that waits at a condition variable is not contending for it).
fn wait_object_panel(l: &LockReport, top: usize) -> Option<Panel> {
    let shown = ShownNames::of(l);
    let all: Vec<&LockRow> = l
        .by_lock
        .iter()
        .filter(|k| !is_lock_kind(&k.kind))
        .collect();
    if all.is_empty() {
        return None;
    }
    let (objects, omitted) = take_top(&all, top);
    let rows = objects
        .iter()
        .map(|k| Row {
            key: format!("{}:{}", k.pid, k.address),
            cells: vec![
                Cell::Text(shown.name(k)),
                Cell::Text(k.kind.clone()),
                Cell::Count(k.events),
                Cell::Count(k.contended_events),
                Cell::Ns(k.wait_ns),
                Cell::Ns(k.wait_ns.checked_div(k.events).unwrap_or(0)),
                Cell::Ns(k.max_wait_ns),
                Cell::Ns(k.critical_wait_ns),
                Cell::Text(k.sites.join(", ")),
            ],
        })
        .collect();
    let mut sites = Column::text("Call sites", "sites");
    sites.detail = true;
    Some(Panel::new(
        "by_wait_object",
        "Per condition variable, barrier, semaphore and joined thread",
        "Waits per condition variable, barrier, semaphore and joined thread (pthread_join), most waiting \
         first: threads waiting for work or for each other, not contending for a lock; CP = on the critical path.",
        Body::Table(Table {
            columns: vec![
                Column::text("Object", "name"),
                Column::text("Kind", "kind"),
                Column::num("Waits", "events"),
                Column::num("Waited", "contended_events").explained("waits that had to block (did not succeed at once)"),
                Column::num("Wait", "wait_ns"),
                Column::num("Avg wait", "mean_wait_ns").explained("wait per wait operation"),
                Column::num("Max wait", "max_wait_ns"),
                Column::num("CP wait", "critical_wait_ns"),
                sites,
            ],
            rows,
            omitted,
            ..Table::default()
        }),
    ))
}

/// The wake cost per lock: the time inside unlocks that found waiters.
fn wake_panel(l: &LockReport, top: usize) -> Panel {
    let shown = ShownNames::of(l);
    let mut locks: Vec<&LockRow> = l
        .by_lock
        .iter()
        .filter(|k| k.releases_with_waiters > 0)
        .collect();
    locks.sort_by(|a, b| b.wake_ns.cmp(&a.wake_ns).then(a.name.cmp(&b.name)));
    let omitted = if top > 0 && locks.len() > top {
        let n = locks.len() - top;
        locks.truncate(top);
        n
    } else {
        0
    };
    let rows = locks
        .iter()
        .map(|k| Row {
            key: format!("{}:{}", k.pid, k.address),
            cells: vec![
                Cell::Text(shown.name(k)),
                Cell::Text(k.kind.clone()),
                Cell::Count(k.releases_with_waiters),
                Cell::Ns(k.wake_ns),
                Cell::Ns(k.wake_ns / k.releases_with_waiters.max(1)),
                Cell::Ns(k.max_wake_ns),
            ],
        })
        .collect();
    let table = Table {
        columns: vec![
            Column::text("Lock", "name"),
            Column::text("Kind", "kind"),
            Column::num("Wakes", "releases_with_waiters").explained("releases (unlock, sem_post) that found waiters"),
            Column::num("Wake cost", "wake_ns").explained("time inside those releases, summed: the unlock that wakes waiters (Huang et al., HaLock, PACT 2012, Section 4.3)"),
            Column::num("Mean", "mean_wake_ns"),
            Column::num("Max", "max_wake_ns"),
        ],
        rows,
        omitted,
        ..Table::default()
    };
    Panel::new(
        "wake_cost",
        "Wake cost",
        "Time inside the releases that found waiters, per lock, most first: waking a waiter is not free, and this time is part of the releasing thread's hold of the program's critical path.",
        Body::Table(table),
    )
}

/// `file:line`, else `module+offset`, else the offset.
fn site_location(s: &SiteRow) -> String {
    match (&s.file, s.line, &s.module) {
        (Some(f), Some(l), _) => format!("{}:{l}", short_path(f)),
        (Some(f), None, _) => short_path(f),
        (None, _, Some(m)) => format!("{}+{}", m.rsplit('/').next().unwrap_or(m), s.offset),
        (None, _, None) => s.offset.clone(),
    }
}

/// A source path as a reader wants it in a table: its last two components
/// (`sharequeue/queue.c`); the full path is in the JSON and CSV output.
fn short_path(path: &str) -> String {
    let parts: Vec<&str> = path.rsplitn(3, '/').collect();
    match parts.as_slice() {
        [file, dir, _] | [file, dir] if !dir.is_empty() => format!("{dir}/{file}"),
        _ => path.to_string(),
    }
}

fn site_panel(l: &LockReport, top: usize) -> Panel {
    let (sites, omitted) = take_top(&l.by_site, top);
    let rows = sites
        .iter()
        .map(|s| Row {
            key: format!("{}+{}", s.module.as_deref().unwrap_or(""), s.offset),
            cells: vec![
                Cell::Text(s.function.clone().unwrap_or_else(|| "??".to_string())),
                Cell::Text(site_location(s)),
                Cell::Text(s.kinds.join(", ")),
                Cell::Count(s.events),
                Cell::Count(s.contended_events),
                Cell::Ns(s.wait_ns),
                Cell::Ns(s.hold_ns),
                Cell::Ns(s.critical_wait_ns),
            ],
        })
        .collect();
    let table = Table {
        columns: vec![
            Column::text("Function", "function"),
            Column::text("Location", "location"),
            Column::text("Kinds", "kinds"),
            Column::num("Events", "events"),
            Column::num("Contended", "contended_events").explained("acquisitions that did not succeed at once (a contended acquisition)"),
            Column::num("Wait", "wait_ns").explained("time from the request to the acquisition (or wake-up), summed"),
            Column::num("Hold", "hold_ns").explained("time from the acquisition to the release, summed"),
            Column::num("CP wait", "critical_wait_ns").explained("wait of the events on the critical path (Chen & Stenström; Venter 2016, Section 3.2.2.2)"),
        ],
        rows,
        omitted,
        ..Table::default()
    };
    Panel::new(
        "by_site",
        "Per call site",
        "Lock events per call site (function, file:line or module+offset), most waiting first; \
         CP = on the critical path.",
        Body::Table(table),
    )
}

fn thread_panel(l: &LockReport, top: usize) -> Panel {
    let (threads, omitted) = take_top(&l.by_thread, top);
    let rows = threads
        .iter()
        .map(|t| Row {
            key: format!("{}:{}", t.pid, t.tid),
            cells: vec![
                Cell::Text(format!("{}/{}", t.pid, t.tid)),
                t.name.clone().map_or(Cell::Empty, Cell::Text),
                Cell::Count(t.events),
                Cell::Count(t.contended_events),
                Cell::Ns(t.wait_ns),
                Cell::Ns(t.hold_ns),
                Cell::Count(t.critical_events),
                Cell::Ns(t.span_ns),
                Cell::Fraction(fraction(t.wait_ns, t.span_ns)),
            ],
        })
        .collect();
    let table = Table {
        columns: vec![
            Column::text("pid/tid", "thread"),
            Column::text("Name", "name").explained("the thread's name as the kernel had it (comm: pthread_setname_np, prctl PR_SET_NAME); the column is left out when the recording has none"),
            Column::num("Events", "events"),
            Column::num("Contended", "contended_events").explained("acquisitions that did not succeed at once (a contended acquisition)"),
            Column::num("Wait", "wait_ns").explained("time from the request to the acquisition (or wake-up), summed"),
            Column::num("Hold", "hold_ns").explained("time from the acquisition to the release, summed"),
            Column::num("CP events", "critical_events").explained("events on the critical path: the chain of events that determines the run's length (Venter 2016, Table 4.10)"),
            Column::num("Span", "span_ns").explained("time from the thread's first to its last recorded operation"),
            Column::num("Waiting", "wait_share_of_span").explained("wait / span: the share of its recorded life the thread spent waiting"),
        ],
        rows,
        omitted,
        ..Table::default()
    };
    Panel::new(
        "by_thread",
        "Per thread",
        "Lock events and waits per thread, most waiting first; span = first to last recorded operation, \
         waiting = wait / span.",
        Body::Table(table),
    )
}

fn histogram_panel(l: &LockReport) -> Panel {
    let rows = l
        .wait_histogram
        .iter()
        .map(|b| Row {
            key: b.lower_ns.to_string(),
            cells: vec![
                Cell::Ns(b.lower_ns),
                Cell::Ns(b.upper_ns),
                Cell::Count(b.events),
                Cell::Ns(b.wait_ns),
                Cell::Count(b.critical_events),
                Cell::Ns(b.critical_wait_ns),
            ],
        })
        .collect();
    let table = Table {
        columns: vec![
            Column::num("Wait from", "lower_ns").explained("a log2 bucket of single waits: from this"),
            Column::num("to below", "upper_ns").explained("up to, not including, this (Venter 2016, Figures 4.1 and 4.2)"),
            Column::num("Events", "events"),
            Column::num("Σ wait", "wait_ns"),
            Column::num("CP events", "critical_events").explained("events on the critical path: the chain of events that determines the run's length (Venter 2016, Table 4.10)"),
            Column::num("CP Σ wait", "critical_wait_ns"),
        ],
        rows,
        bars: vec![3, 5],
        ..Table::default()
    };
    Panel::new(
        "wait_histogram",
        "Wait-time histogram",
        "Lock events by the duration of their wait, in log2 buckets: the total wait of all events and of \
         those on the critical path (CP) (cf. Venter 2016, Figures 4.1 and 4.2).",
        Body::Table(table),
    )
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
pub fn summary_metrics(l: &LockReport) -> Vec<Metric> {
    use Unit::{Count, Fraction, Ns};
    let s = &l.summary;
    let c = &l.critical_path;
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
        ("releases_with_waiters", "Releases that found waiters", Count, n(s.releases_with_waiters)),
        ("wake_ns", "Wake cost (time inside those releases)", Ns, n(s.wake_ns)),
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
        ("other_wait_ns", "Cond/barrier/semaphore/join wait on the path", Ns, n(c.other_wait_ns)),
    ];
    let mut m = metrics(SUMMARY, "locks.summary.", summary);
    m.extend(metrics(
        CRITICAL_PATH,
        "locks.critical_path.",
        critical_path,
    ));
    for w in &l.other_waits {
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
            metrics(OTHER_WAITS, &prefix, rows)
                .into_iter()
                .map(|mut metric| {
                    metric.label = format!("{}: {}", w.kind, metric.label);
                    metric
                }),
        );
    }
    m
}

/// What a lock is matched by across runs: its symbol when it has one
/// (`queue_lock`, `cache+0x40`); a heap or stack lock, whose address
/// differs from run to run, by its kind and the call site that waited for
/// it most (`heap mutex used at dequeue (queue.c:82)`).
pub fn compared_name(l: &LockRow) -> String {
    match l.sites.first() {
        Some(site) if l.name.starts_with("0x") => format!("heap {} used at {site}", l.kind),
        _ => l.name.clone(),
    }
}

/// The histogram as metrics, one pair per bucket
/// (`locks.wait_histogram.<lower_ns>.{events,wait_ns}`; a bucket a run has
/// no events in counts as 0 there).
pub fn histogram_metrics(l: &LockReport) -> Vec<Metric> {
    let mut m = Vec::new();
    for b in &l.wait_histogram {
        let range = if b.upper_ns <= 1 {
            "no wait".to_string()
        } else {
            format!(
                "{}–{}",
                crate::report::fmt::duration_plain(b.lower_ns),
                crate::report::fmt::duration_plain(b.upper_ns)
            )
        };
        m.push(Metric {
            key: format!("locks.wait_histogram.{}.events", b.lower_ns),
            label: format!("{range}: events"),
            unit: Unit::Count,
            group: WAIT_HISTOGRAM,
            value: n(b.events),
        });
        m.push(Metric {
            key: format!("locks.wait_histogram.{}.wait_ns", b.lower_ns),
            label: format!("{range}: wait"),
            unit: Unit::Ns,
            group: WAIT_HISTOGRAM,
            value: n(b.wait_ns),
        });
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
        ("ownership_changes", "Ownership changes", Count, n(l.ownership_changes)),
        ("critical_events", "Events on the critical path", Count, n(l.critical_events)),
        ("critical_wait_ns", "Wait on the critical path", Ns, n(l.critical_wait_ns)),
        ("wake_ns", "Wake cost", Ns, n(l.wake_ns)),
    ];
    metrics(LOCK, "", rows)
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
    metrics(SITE, "", rows)
}

/// The critical path across pthread, futex and OpenMP hand-overs
/// (docs/critical-path.md): its totals per source in the description, its
/// hand-overs per object and pair of threads in the table.
fn across_panel(a: &super::across::AcrossSummary) -> Panel {
    let text = format!(
        "One path over pthread, futex and OpenMP hand-overs (Chen & Stenström; Venter 2016, Section 3.2.2.2), \
         from thread {}/{} back over {:.3} ms: {} events and {} hand-overs on it: pthread {} events ({} hand-overs), \
         futex {} waits ({} hand-overs, {:.3} ms wait), OpenMP {} acquisitions and barrier waits ({} hand-overs, {:.3} ms wait). \
         The hand-overs on it, per object and pair of threads:",
        a.start_pid,
        a.start_tid,
        a.length_ns as f64 / 1e6,
        a.events,
        a.jumps,
        a.lock_events,
        a.lock_jumps,
        a.futex_events,
        a.futex_jumps,
        a.futex_wait_ns as f64 / 1e6,
        a.openmp_events,
        a.openmp_jumps,
        a.openmp_wait_ns as f64 / 1e6,
    );
    let rows = a
        .hand_overs
        .iter()
        .map(|h| Row {
            key: format!("{}:{}:{}:{}", h.source, h.object, h.from_tid, h.to_tid),
            cells: vec![
                Cell::Text(h.source.clone()),
                Cell::Text(h.object.clone()),
                Cell::Text(thread_label(h.pid, h.from_tid, h.from_name.as_deref())),
                Cell::Text(thread_label(h.pid, h.to_tid, h.to_name.as_deref())),
                Cell::Count(h.count),
                Cell::Ns(h.wait_ns),
            ],
        })
        .collect();
    Panel::new(
        "critical_path_across",
        "Critical path across pthread, futex and OpenMP",
        &text,
        Body::Table(Table {
            columns: vec![
                Column::text("Source", "source"),
                Column::text("Object", "object"),
                Column::text("From", "from_tid")
                    .explained("the thread that let the waiter go (pid/tid and its name)"),
                Column::text("To", "to_tid")
                    .explained("the thread that waited (pid/tid and its name)"),
                Column::num("Hand-overs", "count"),
                Column::num("Wait", "wait_ns")
                    .explained("wait of the waiting events of these hand-overs, summed"),
            ],
            rows,
            ..Table::default()
        }),
    )
}

/// A thread as `pid/tid`, with its name after it when it has one
/// (`4711/4713 worker`).
fn thread_label(pid: u32, tid: u32, name: Option<&str>) -> String {
    match name {
        Some(n) if !n.is_empty() => format!("{pid}/{tid} {n}"),
        _ => format!("{pid}/{tid}"),
    }
}

#[cfg(test)]
mod tests {
    use super::group_equal_lines;

    /// Locks of one name are shown with their addresses; a lock whose
    /// name is its own keeps it alone.
    #[test]
    fn locks_sharing_a_name_are_told_apart_by_address() {
        use crate::locks::model::{LockReport, LockRow, ShownNames};
        let row = |name: &str, address: &str| LockRow {
            name: name.into(),
            address: address.into(),
            ..LockRow::default()
        };
        let l = LockReport {
            by_lock: vec![
                row("mutex created in app+0x1a486", "0x10"),
                row("queue_lock", "0x20"),
                row("mutex created in app+0x1a486", "0x30"),
            ],
            ..LockReport::default()
        };
        let shown = ShownNames::of(&l);
        let names: Vec<String> = l.by_lock.iter().map(|k| shown.name(k)).collect();
        assert_eq!(
            names,
            [
                "mutex created in app+0x1a486 @ 0x10",
                "queue_lock",
                "mutex created in app+0x1a486 @ 0x30"
            ]
        );
    }

    /// Repeated lines are given once, where they first appear, with how
    /// many times they came; single lines stay as they were, in order.
    #[test]
    fn equal_lines_are_grouped_in_first_seen_order() {
        let lines = ["a", "b", "a", "c", "a", "b"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(
            group_equal_lines(lines, "times"),
            ["a (3 times)", "b (2 times)", "c"]
        );
        assert!(group_equal_lines(Vec::new(), "times").is_empty());
    }
}
