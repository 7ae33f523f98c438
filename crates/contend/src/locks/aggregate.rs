//! Aggregation of lock events into the report tables: the summary
//! (Venter 2016, Table 4.9), the critical-path summary (Table 4.10), per
//! lock (Table 4.12), per call site, per thread, and the wait-time
//! histogram (Figures 4.1/4.2). Definitions: docs/metrics.md.

use std::collections::HashMap;

use contend_trace::Primitive;
use rayon::prelude::*;
use regex::Regex;
use rustc_hash::FxHashMap;

use super::critical_path::CriticalPath;
use super::events::{EventSet, LockEvent, LockEventFields, Outcome};
use super::model::{
    CriticalPathSummary, HistogramBucket, LightNote, LockReport, LockRow, LockSummary, SiteRow,
    ThreadRow, WaitKindRow,
};
use crate::symbols::{ResolvedSite, Resolver};

/// Which events enter the tables (the thesis's mutexTool.conf filters).
/// The critical path is always marked on all events first: it is a
/// property of the whole execution, not of the selection.
#[derive(Debug, Clone, Default)]
pub struct EventFilter {
    /// Keep events whose duration (wait + hold) is at least this, ns.
    pub min_duration_ns: Option<u64>,
    /// Keep events whose duration is at most this, ns.
    pub max_duration_ns: Option<u64>,
    /// Keep events on these objects: a symbol name (`queue_lock`) or an
    /// address (`0x55d0c0a04040`); empty = all.
    pub locks: Vec<String>,
    /// Keep events whose call site matches (function, file:line, module).
    pub site_pattern: Option<Regex>,
    /// Keep events of these thread ids; empty = all.
    pub threads: Vec<u32>,
    /// Keep only events on the critical path.
    pub critical_only: bool,
    /// Keep events acquired in this part of the run (`report --from/--to`).
    pub window: Option<TimeWindow>,
    /// Lock wrappers (`report --wrapper 'port::Mutex::*'`): function-name
    /// patterns, `*` matching any characters. With recorded stacks, a
    /// call site or creation site inside a matching function moves to the
    /// first frame of its stack outside every wrapper and outside system
    /// code ([`super::Wrappers`]). Not a filter: every event is kept.
    pub wrappers: Vec<String>,
}

/// A part of the run (`report --from T1 --to T2`): events belong to it when
/// they were acquired (or their attempt ended) at or after `from_ns` and
/// before `to_ns`, both counted from `origin_ns`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TimeWindow {
    /// Start, ns after the origin.
    pub from_ns: u64,
    /// End, ns after the origin; `None` = to the end.
    pub to_ns: Option<u64>,
    /// The run's start, CLOCK_MONOTONIC ns (`meta.json`'s
    /// `start_monotonic_ns`, else the earliest trace start:
    /// [`crate::recording::Recording::start_monotonic_ns`]); set with
    /// [`EventFilter::anchored`].
    pub origin_ns: u64,
}

impl TimeWindow {
    /// True when CLOCK_MONOTONIC time `t_ns` lies in the window.
    #[inline]
    pub fn contains(&self, t_ns: u64) -> bool {
        let from = self.origin_ns.saturating_add(self.from_ns);
        t_ns >= from
            && self
                .to_ns
                .is_none_or(|to| t_ns < self.origin_ns.saturating_add(to))
    }
}

impl EventFilter {
    /// The filter with its time window (if any) counted from `origin_ns`,
    /// the run's start (CLOCK_MONOTONIC ns).
    pub fn anchored(&self, origin_ns: u64) -> EventFilter {
        let mut f = self.clone();
        if let Some(w) = &mut f.window {
            w.origin_ns = origin_ns;
        }
        f
    }

    /// One line per active filter, for the report header.
    pub fn describe(&self) -> Vec<String> {
        let mut v = Vec::new();
        if let Some(x) = self.min_duration_ns {
            v.push(format!("event duration >= {x} ns"));
        }
        if let Some(x) = self.max_duration_ns {
            v.push(format!("event duration <= {x} ns"));
        }
        if !self.locks.is_empty() {
            v.push(format!("lock in [{}]", self.locks.join(", ")));
        }
        if let Some(r) = &self.site_pattern {
            v.push(format!("call site matches /{}/", r.as_str()));
        }
        if !self.threads.is_empty() {
            let t: Vec<String> = self.threads.iter().map(|t| t.to_string()).collect();
            v.push(format!("thread in [{}]", t.join(", ")));
        }
        if self.critical_only {
            v.push("on the critical path only".into());
        }
        if !self.wrappers.is_empty() {
            v.push(format!(
                "call sites in [{}] attributed to their callers",
                self.wrappers.join(", ")
            ));
        }
        if let Some(w) = &self.window {
            let s = |ns: u64| format!("{:.3} s", ns as f64 / 1e9);
            v.push(match w.to_ns {
                Some(to) => format!(
                    "acquired from {} to {} after the start",
                    s(w.from_ns),
                    s(to)
                ),
                None => format!("acquired from {} after the start", s(w.from_ns)),
            });
        }
        v
    }
}

/// Names of the objects and call sites of an [`EventSet`], resolved once:
/// `objects[i]` names `set.objects[i]` (its symbol, else its address in
/// hexadecimal) and `sites[i]` is `set.sites[i]` resolved.
#[derive(Debug, Clone, Default)]
pub struct Names {
    /// One per object of the event set.
    pub objects: Vec<String>,
    /// One per call site of the event set.
    pub sites: Vec<ResolvedSite>,
}

/// Resolves every object and site of `set` once.
pub fn resolve_names(set: &EventSet, resolver: &mut dyn Resolver) -> Names {
    Names {
        objects: set
            .objects
            .iter()
            .map(|o| {
                resolver
                    .object(o.process, o.address)
                    .unwrap_or_else(|| format!("{:#x}", o.address))
            })
            .collect(),
        sites: set
            .sites
            .iter()
            .map(|s| resolver.site(s.process, s.address))
            .collect(),
    }
}

/// Builds the lock part of a report from paired events and the marked
/// critical path, resolving objects and sites through `resolver`.
/// `program_ns` is the program duration (Table 4.9, row 1).
pub fn aggregate(
    set: &EventSet,
    path: &CriticalPath,
    filter: &EventFilter,
    resolver: &mut dyn Resolver,
    program_ns: u64,
) -> LockReport {
    aggregate_named(set, path, &resolve_names(set, resolver), filter, program_ns)
}

/// [`aggregate`] with the names already resolved ([`resolve_names`]).
pub fn aggregate_named(
    set: &EventSet,
    path: &CriticalPath,
    names: &Names,
    filter: &EventFilter,
    program_ns: u64,
) -> LockReport {
    aggregate_counted(set, path, names, filter, program_ns, None)
}

/// [`aggregate_named`], with each object's ownership changes
/// ([`super::ownership::ownership_changes`]) already counted when
/// `changes` is given (the analysis counts them beside the critical path's
/// serial walk), else counted here beside the sums.
pub(crate) fn aggregate_counted(
    set: &EventSet,
    path: &CriticalPath,
    names: &Names,
    filter: &EventFilter,
    program_ns: u64,
    changes: Option<Vec<u64>>,
) -> LockReport {
    let object_names = &names.objects;
    let sites = &names.sites;
    let selection = super::select::Selection::new(filter, set, path, names);
    let selected = |i: usize, e: &LockEvent| -> bool { selection.keeps(i, e) };

    // The selected events summed in groups of whole threads side by side
    // (one group when pairing did not say where each thread's events
    // are), the ownership changes (a pass of their own over every event)
    // beside them unless counted already.
    let sum_events = || EventSums::of(set, path, &selected);
    let (changes, sums) = match changes {
        Some(changes) => (changes, sum_events()),
        None => rayon::join(|| super::ownership::ownership_changes(set), sum_events),
    };
    let EventSums {
        summary: sums_summary,
        critical: sums_critical,
        mut other,
        mut locks,
        mut site_wait,
        mut site_acc,
        threads: thread_sums,
        hist: hist_sums,
        duration_once_ns,
        critical_once_ns,
    } = sums;
    let mut summary = LockSummary {
        program_ns,
        unmatched_releases: set.unmatched_releases,
        duration_once_ns,
        ..sums_summary
    };
    let mut critical = CriticalPathSummary {
        jumps: path.jumps,
        duration_once_ns: critical_once_ns,
        ..sums_critical
    };
    let mut threads: Vec<ThreadRow> = set
        .threads
        .iter()
        .zip(&thread_sums)
        .map(|(t, s)| ThreadRow {
            pid: t.pid,
            tid: t.tid,
            span_ns: t.last_ns.saturating_sub(t.first_ns),
            name: t.name.clone(),
            events: s.events,
            contended_events: s.contended_events,
            wait_ns: s.wait_ns,
            hold_ns: s.hold_ns,
            critical_events: s.critical_events,
            ..ThreadRow::default()
        })
        .collect();
    let mut hist: Vec<HistogramBucket> = hist_sums
        .into_iter()
        .enumerate()
        .map(|(b, h)| HistogramBucket {
            lower_ns: if b == 0 { 0 } else { 1u64 << (b - 1) },
            upper_ns: if b == 64 { u64::MAX } else { 1u64 << b },
            ..h
        })
        .collect();
    // Light recordings: the uncontended acquisitions counted without times
    // (wait 0 by definition, hold unknown), selected by lock, site and
    // thread like events of duration 0; a critical-path selection cannot
    // hold them (their place on the path is unknown).
    let mut counted_total = 0u64;
    let mut counted_by_site = 0u64;
    for c in &set.counted {
        let probe = LockEventFields {
            thread: c.thread,
            object: c.object.unwrap_or(0),
            site: c.site,
            primitive: c.primitive,
            outcome: Outcome::Acquired,
            requested_ns: 0,
            acquired_ns: 0,
            released_ns: 0,
            contended: false,
            unreleased: false,
        }
        .pack();
        let kept = match c.object {
            Some(_) => selected(0, &probe),
            None => selection.keeps_lock_unknown(0, &probe),
        };
        if filter.critical_only || !kept {
            continue;
        }
        let n = c.count;
        counted_total += n;
        match c.object {
            Some(object) => {
                let l = &mut locks[object as usize];
                l.events += n;
                l.counted += n;
                site_wait.add(object, c.site, n);
            }
            None => counted_by_site += n,
        }
        let s = &mut site_acc[c.site as usize];
        s.events += n;
        s.counted += n;
        s.kinds |= 1 << (c.primitive as u8);
        if !c.primitive.is_lock() {
            let row = other
                .entry(c.primitive.object_kind())
                .or_insert_with(|| WaitKindRow {
                    kind: c.primitive.object_kind().to_string(),
                    ..WaitKindRow::default()
                });
            row.events += n;
            continue;
        }
        let th = &mut threads[c.thread as usize];
        th.events += n;
        th.counted_events += n;
        summary.events += n;
        hist[0].events += n;
    }
    for w in &set.wake_costs {
        let l = &mut locks[w.object as usize];
        l.releases_with_waiters += w.releases;
        l.wake_ns += w.total_ns;
        l.max_wake_ns = l.max_wake_ns.max(w.max_ns);
        summary.releases_with_waiters += w.releases;
        summary.wake_ns += w.total_ns;
    }
    site_wait.for_each(|object, site, w| locks[object as usize].site_wait.push((site, w)));
    summary.wait_share = ratio(summary.wait_ns, summary.duration_ns);
    summary.mean_event_ns = summary
        .duration_once_ns
        .checked_div(summary.events)
        .unwrap_or(0);
    critical.event_share = ratio(critical.events, summary.events);
    critical.wait_share = ratio(critical.wait_ns, summary.duration_ns);

    let mut by_lock: Vec<LockRow> = locks
        .into_iter()
        .enumerate()
        .filter(|(_, l)| l.events > 0)
        .map(|(i, l)| {
            let o = set.objects[i];
            let mut site_list = l.site_wait;
            site_list.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
            let mut names: Vec<String> = Vec::new();
            for (s, _) in site_list {
                let d = &sites[s as usize].display;
                if !names.contains(d) {
                    names.push(d.clone());
                }
            }
            LockRow {
                name: object_names[i].clone(),
                address: format!("{:#x}", o.address),
                pid: set
                    .threads
                    .iter()
                    .find(|t| t.process == o.process)
                    .map_or(0, |t| t.pid),
                kind: set.object_kinds[i].object_kind().to_string(),
                events: l.events,
                contended_events: l.contended,
                wait_ns: l.wait,
                hold_ns: l.hold,
                duration_ns: l.wait + l.hold,
                max_wait_ns: l.max_wait,
                critical_events: l.critical_events,
                critical_wait_ns: l.critical_wait,
                critical_hold_ns: l.critical_hold,
                ownership_changes: changes[i],
                sites: names,
                releases_with_waiters: l.releases_with_waiters,
                wake_ns: l.wake_ns,
                max_wake_ns: l.max_wake_ns,
                counted_events: l.counted,
                created_at: None,
            }
        })
        .collect();
    by_lock.sort_by(|a, b| {
        b.wait_ns
            .cmp(&a.wait_ns)
            .then(b.events.cmp(&a.events))
            .then(a.name.cmp(&b.name))
    });

    // Sites with the same resolution (e.g. one line in a forked child and
    // its parent) are one row.
    let mut site_rows: HashMap<String, SiteRow> = HashMap::new();
    for (i, acc) in site_acc.iter().enumerate() {
        if acc.events == 0 {
            continue;
        }
        let r = &sites[i];
        let key = format!("{}|{}", r.display, r.module.as_deref().unwrap_or(""));
        let row = site_rows.entry(key).or_insert_with(|| SiteRow {
            function: r.function.clone(),
            file: r.file.clone(),
            line: r.line,
            module: r.module.clone(),
            offset: format!("{:#x}", r.offset),
            debug: r.debug.to_string(),
            display: r.display.clone(),
            ..SiteRow::default()
        });
        row.events += acc.events;
        row.contended_events += acc.contended;
        row.wait_ns += acc.wait;
        row.hold_ns += acc.hold;
        row.critical_wait_ns += acc.critical_wait;
        row.counted_events += acc.counted;
        for p in Primitive::EVERY {
            if acc.kinds & (1 << p as u8) != 0 {
                let k = p.object_kind().to_string();
                if !row.kinds.contains(&k) {
                    row.kinds.push(k);
                }
            }
        }
    }
    let mut by_site: Vec<SiteRow> = site_rows.into_values().collect();
    by_site.sort_by(|a, b| {
        b.wait_ns
            .cmp(&a.wait_ns)
            .then(b.events.cmp(&a.events))
            .then(a.display.cmp(&b.display))
    });
    let mut without_debug: Vec<String> = by_site
        .iter()
        .filter(|s| s.debug != "dwarf")
        .map(|s| {
            s.module
                .clone()
                .unwrap_or_else(|| "(unknown module)".into())
        })
        .collect();
    without_debug.sort();
    without_debug.dedup();

    let mut by_thread: Vec<ThreadRow> = threads
        .into_iter()
        .filter(|t| t.events > 0 || t.wait_ns > 0)
        .collect();
    by_thread.sort_by(|a, b| b.wait_ns.cmp(&a.wait_ns).then(a.tid.cmp(&b.tid)));

    let mut other_waits: Vec<WaitKindRow> = other.into_values().collect();
    other_waits.sort_by(|a, b| a.kind.cmp(&b.kind));

    LockReport {
        summary,
        critical_path: critical,
        other_waits,
        by_lock,
        by_site,
        by_thread,
        wait_histogram: hist.into_iter().filter(|b| b.events > 0).collect(),
        filters: filter.describe(),
        no_events_reason: None,
        sites_without_debug_info: without_debug,
        light: set
            .light
            .then(|| light_note(set, counted_total, counted_by_site)),
    }
}

/// What a light recording measured exactly and what it approximates.
fn light_note(set: &EventSet, counted_events: u64, counted_by_site_events: u64) -> LightNote {
    let untimed_events = set.untimed_events;
    // Recorded lock acquisitions that did not wait, less the UNTIMED ones
    // (counted holds recorded at a release that found waiters) and the
    // mutexes taken back at once after condition waits (recorded by
    // design): one pass over the recorded events, few in a light
    // recording unless many of them are these.
    let recorded_uncontended_events = (set
        .events
        .iter()
        .filter(|e| e.is_lock() && !e.contended() && e.outcome() == Outcome::Acquired)
        .count() as u64)
        .saturating_sub(untimed_events + set.cond_reacquisitions);
    // counts in the sentences grouped as in the tables (12,000)
    let n = crate::report::fmt::int_plain;
    let counts = if counted_by_site_events == 0 {
        "the number of acquisitions per lock, call site and thread (uncontended ones counted)"
            .to_string()
    } else {
        format!(
            "the number of acquisitions per call site and thread (uncontended ones counted); per lock except \
             {} uncontended acquisition(s) counted by call site without their lock",
            n(counted_by_site_events)
        )
    };
    let mut exact: Vec<String> = vec![
            "every contended acquisition: its request, acquisition and release, so its wait and hold time".into(),
            counts,
            "wait time (an uncontended acquisition waits 0 by definition)".into(),
            "condition, barrier, blocking semaphore and thread join waits".into(),
            "the wake cost of every release that found waiters".into(),
            "the SCI of lock blocks (the interference section): a counted acquisition is an execution of 0 ns, as a full recording times it".into(),
        ];
    if recorded_uncontended_events > 0 {
        // the collector's limit (collector.c, count_entry): a table of the
        // whole chunk takes no new entry once three quarters are used
        use contend_trace::format::{count, CHUNK_HEADER_SIZE, DEFAULT_CHUNK_SIZE};
        let slots = (DEFAULT_CHUNK_SIZE as usize - CHUNK_HEADER_SIZE) / count::SIZE;
        exact.push(format!(
            "the wait and hold time of {} uncontended acquisition(s) recorded in full, \
             as a full recording would and at its cost: their thread's count table was full (one COUNTS chunk \
             filled to three quarters: {} entries at the default chunk size, at most {} of them locks, the \
             rest call sites), or it had no count table",
            n(recorded_uncontended_events),
            n((slots - slots / 4) as u64),
            count::LOCK_ENTRIES
        ));
    }
    let mut approximate: Vec<String> = vec![
        "hold time and event duration cover the recorded (contended) acquisitions only; the holds of counted acquisitions were not timed".into(),
        format!("{} counted hold(s) whose release woke a waiter are recorded at that release with hold 0", n(untimed_events)),
    ];
    if counted_by_site_events > 0 {
        approximate.push(format!(
            "{} uncontended acquisition(s) were counted by call site without their lock: a \
             thread's count table keeps {} (lock, call site) pairs one by one, and counts the acquisitions of \
             further locks per call site, so that it stays small enough for the cache; they are in the summary \
             and the call-site and thread tables, not in the lock table's rows (whose acquisitions are lower \
             bounds), and a lock filter leaves them out",
            n(counted_by_site_events),
            contend_trace::format::count::LOCK_ENTRIES
        ));
    }
    approximate.extend([
        "the critical path passes through recorded events only: it jumps at contended acquisitions to the release that let them go, as in a full recording, but the uncontended acquisitions on it are not seen (its event counts and hold time are lower bounds)".to_string(),
        "the release of a spinlock whose acquisition was counted is not recorded (a spinning waiter cannot be seen), so the path does not jump at a spinlock acquired after spinning on such a hold".into(),
        "duration filters and --critical-only leave the counted acquisitions out".into(),
    ]);
    LightNote {
        counted_events,
        counted_by_site_events,
        untimed_events,
        recorded_uncontended_events,
        exact,
        approximate,
    }
}

/// The sums of the selected events that the tables are made of, over a
/// group of whole threads or over all events ([`EventSums::of`]). Groups
/// summed side by side add up ([`EventSums::add`]) to what one pass over
/// all events gives, exactly: every field is a sum, a maximum or a union of
/// bits, and each thread's intervals (for the durations counted once) are
/// in one group.
struct EventSums {
    /// Events, contended, failed and unreleased events, wait, hold and
    /// duration, ns, and the longest wait; the rest is filled in later.
    summary: LockSummary,
    /// Events, contended events, wait, hold and duration on the critical
    /// path, ns, and its waits for other objects than locks.
    critical: CriticalPathSummary,
    /// Per kind of object that is not a lock (condition, barrier,
    /// semaphore).
    other: HashMap<&'static str, WaitKindRow>,
    /// Per object.
    locks: Vec<LockAcc>,
    /// Σ (wait + 1), ns, per (object, site).
    site_wait: SiteWait,
    /// Per site.
    site_acc: Vec<SiteAcc>,
    /// Per thread.
    threads: Vec<ThreadSums>,
    /// Per log2 bucket of the wait (65), events and wait, ns, all and on
    /// the critical path (bounds filled in later).
    hist: Vec<HistogramBucket>,
    /// Σ over threads of the length of the union of their lock events'
    /// (request, release) intervals, ns: all, and on the critical path.
    duration_once_ns: u64,
    critical_once_ns: u64,
}

/// One thread's sums in [`EventSums`].
#[derive(Debug, Clone, Copy, Default)]
struct ThreadSums {
    events: u64,
    contended_events: u64,
    wait_ns: u64,
    hold_ns: u64,
    critical_events: u64,
}

impl EventSums {
    /// Nothing summed yet, for `set`'s objects, sites and threads.
    fn new(set: &EventSet) -> EventSums {
        EventSums {
            summary: LockSummary::default(),
            critical: CriticalPathSummary::default(),
            other: HashMap::new(),
            locks: vec![LockAcc::default(); set.objects.len()],
            site_wait: SiteWait::new(set.objects.len(), set.sites.len()),
            site_acc: vec![SiteAcc::default(); set.sites.len()],
            threads: vec![ThreadSums::default(); set.threads.len()],
            hist: vec![HistogramBucket::default(); 65],
            duration_once_ns: 0,
            critical_once_ns: 0,
        }
    }

    /// The sums of the events of `set` that `selected` keeps: in groups of
    /// whole threads of about equal events side by side when pairing said
    /// where each thread's events are ([`EventSet::thread_ranges`]) and
    /// the events are many for the tables each group keeps, else in one
    /// pass.
    fn of(
        set: &EventSet,
        path: &CriticalPath,
        selected: &(impl Fn(usize, &LockEvent) -> bool + Sync),
    ) -> EventSums {
        let ranges: Vec<std::ops::Range<usize>> = if set.threads_in_ranges() {
            let work: Vec<usize> = set.thread_ranges.iter().map(|r| r.len()).collect();
            let table = set.objects.len() + set.sites.len() + set.threads.len();
            set.events_of_thread_groups(&crate::chunked_sort::thread_groups(
                &work,
                table,
                rayon::current_num_threads(),
            ))
        } else {
            let all = 0..set.events.len();
            vec![all]
        };
        ranges
            .into_par_iter()
            .map(|range| {
                let mut sums = EventSums::new(set);
                sums.sum_range(set, path, selected, range);
                sums
            })
            .reduce_with(EventSums::add)
            .unwrap_or_else(|| EventSums::new(set))
    }

    /// Sums the selected events of `range` of `set.events`, which holds
    /// every event of the threads it has events of.
    fn sum_range(
        &mut self,
        set: &EventSet,
        path: &CriticalPath,
        selected: &impl Fn(usize, &LockEvent) -> bool,
        range: std::ops::Range<usize>,
    ) {
        // Intervals per thread for the "counted once" durations: each
        // thread's events come in request order (calls do not nest within
        // a thread), so their union is summed as they come; a thread whose
        // events do not (damaged input) has them kept and sorted.
        let in_order = requests_in_order(set, range.clone());
        let mut intervals: Vec<Union> = in_order.iter().map(|&o| Union::new(o)).collect();
        let mut critical_intervals: Vec<Union> = in_order.iter().map(|&o| Union::new(o)).collect();
        let (summary, critical) = (&mut self.summary, &mut self.critical);
        for i in range {
            let e = &set.events[i];
            if !selected(i, e) {
                continue;
            }
            let on_path = path.on_path[i];
            let (wait, hold, dur) = (e.wait_ns(), e.hold_ns(), e.duration_ns());
            let th = &mut self.threads[e.thread() as usize];
            th.wait_ns += wait;
            let l = &mut self.locks[e.object as usize];
            l.events += 1;
            l.contended += u64::from(e.contended());
            l.wait += wait;
            l.hold += hold;
            l.max_wait = l.max_wait.max(wait);
            if on_path {
                l.critical_events += 1;
                l.critical_wait += wait;
                l.critical_hold += hold;
            }
            self.site_wait.add(e.object, e.site, wait + 1);
            let s = &mut self.site_acc[e.site as usize];
            s.events += 1;
            s.contended += u64::from(e.contended());
            s.wait += wait;
            s.hold += hold;
            if on_path {
                s.critical_wait += wait;
            }
            s.kinds |= 1 << (e.primitive() as u8);
            if !e.is_lock() {
                let row = self
                    .other
                    .entry(e.primitive().object_kind())
                    .or_insert_with(|| WaitKindRow {
                        kind: e.primitive().object_kind().to_string(),
                        ..WaitKindRow::default()
                    });
                row.events += 1;
                row.contended_events += u64::from(e.contended());
                row.wait_ns += wait;
                row.timeouts += u64::from(e.outcome() == Outcome::TimedOut);
                if on_path {
                    row.critical_wait_ns += wait;
                    critical.other_wait_ns += wait;
                }
                continue;
            }
            th.events += 1;
            th.contended_events += u64::from(e.contended());
            th.hold_ns += hold;
            summary.events += 1;
            summary.contended_events += u64::from(e.contended());
            summary.failed_events += u64::from(e.outcome() != Outcome::Acquired);
            summary.unreleased_events += u64::from(e.unreleased());
            summary.wait_ns += wait;
            summary.hold_ns += hold;
            summary.duration_ns += dur;
            summary.max_wait_ns = summary.max_wait_ns.max(wait);
            intervals[e.thread() as usize].push((e.requested_ns(), e.released_ns()));
            let b = &mut self.hist[bucket(wait)];
            b.events += 1;
            b.wait_ns += wait;
            if on_path {
                th.critical_events += 1;
                critical.events += 1;
                critical.contended_events += u64::from(e.contended());
                critical.wait_ns += wait;
                critical.hold_ns += hold;
                critical.duration_ns += dur;
                critical_intervals[e.thread() as usize].push((e.requested_ns(), e.released_ns()));
                b.critical_events += 1;
                b.critical_wait_ns += wait;
            }
        }
        self.duration_once_ns += intervals.into_iter().map(Union::total).sum::<u64>();
        self.critical_once_ns += critical_intervals
            .into_iter()
            .map(Union::total)
            .sum::<u64>();
    }

    /// The sums of two groups of threads.
    fn add(mut self, other: EventSums) -> EventSums {
        let (a, b) = (&mut self.summary, &other.summary);
        a.events += b.events;
        a.contended_events += b.contended_events;
        a.failed_events += b.failed_events;
        a.unreleased_events += b.unreleased_events;
        a.wait_ns += b.wait_ns;
        a.hold_ns += b.hold_ns;
        a.duration_ns += b.duration_ns;
        a.max_wait_ns = a.max_wait_ns.max(b.max_wait_ns);
        let (a, b) = (&mut self.critical, &other.critical);
        a.events += b.events;
        a.contended_events += b.contended_events;
        a.wait_ns += b.wait_ns;
        a.hold_ns += b.hold_ns;
        a.duration_ns += b.duration_ns;
        a.other_wait_ns += b.other_wait_ns;
        for (kind, b) in other.other {
            let a = self.other.entry(kind).or_insert_with(|| WaitKindRow {
                kind: b.kind.clone(),
                ..WaitKindRow::default()
            });
            a.events += b.events;
            a.contended_events += b.contended_events;
            a.wait_ns += b.wait_ns;
            a.timeouts += b.timeouts;
            a.critical_wait_ns += b.critical_wait_ns;
        }
        for (a, b) in self.locks.iter_mut().zip(&other.locks) {
            a.events += b.events;
            a.contended += b.contended;
            a.wait += b.wait;
            a.hold += b.hold;
            a.max_wait = a.max_wait.max(b.max_wait);
            a.critical_events += b.critical_events;
            a.critical_wait += b.critical_wait;
            a.critical_hold += b.critical_hold;
        }
        self.site_wait.add_all(other.site_wait);
        for (a, b) in self.site_acc.iter_mut().zip(&other.site_acc) {
            a.events += b.events;
            a.contended += b.contended;
            a.wait += b.wait;
            a.hold += b.hold;
            a.critical_wait += b.critical_wait;
            a.kinds |= b.kinds;
        }
        for (a, b) in self.threads.iter_mut().zip(&other.threads) {
            a.events += b.events;
            a.contended_events += b.contended_events;
            a.wait_ns += b.wait_ns;
            a.hold_ns += b.hold_ns;
            a.critical_events += b.critical_events;
        }
        for (a, b) in self.hist.iter_mut().zip(&other.hist) {
            a.events += b.events;
            a.wait_ns += b.wait_ns;
            a.critical_events += b.critical_events;
            a.critical_wait_ns += b.critical_wait_ns;
        }
        self.duration_once_ns += other.duration_once_ns;
        self.critical_once_ns += other.critical_once_ns;
        self
    }
}

#[derive(Debug, Clone, Default)]
struct LockAcc {
    events: u64,
    contended: u64,
    wait: u64,
    hold: u64,
    max_wait: u64,
    critical_events: u64,
    critical_wait: u64,
    critical_hold: u64,
    /// (site index, Σ (wait + 1)), filled after the pass over events.
    site_wait: Vec<(u32, u64)>,
    counted: u64,
    releases_with_waiters: u64,
    wake_ns: u64,
    max_wake_ns: u64,
}

#[derive(Debug, Clone, Default)]
struct SiteAcc {
    events: u64,
    contended: u64,
    wait: u64,
    hold: u64,
    critical_wait: u64,
    kinds: u16,
    counted: u64,
}

/// Σ per (object, site): dense when the table is small, else hashed.
enum SiteWait {
    Dense { sites: usize, v: Vec<u64> },
    Hashed(FxHashMap<u64, u64>),
}

impl SiteWait {
    fn new(objects: usize, sites: usize) -> SiteWait {
        if objects.saturating_mul(sites) <= 1 << 20 {
            SiteWait::Dense {
                sites,
                v: vec![0; objects * sites],
            }
        } else {
            SiteWait::Hashed(FxHashMap::default())
        }
    }

    #[inline]
    fn add(&mut self, object: u32, site: u32, n: u64) {
        match self {
            SiteWait::Dense { sites, v } => v[object as usize * *sites + site as usize] += n,
            SiteWait::Hashed(m) => {
                *m.entry((u64::from(object) << 32) | u64::from(site))
                    .or_default() += n
            }
        }
    }

    /// Adds another table's sums (made for the same objects and sites).
    fn add_all(&mut self, other: SiteWait) {
        match (self, other) {
            (SiteWait::Dense { v, .. }, SiteWait::Dense { v: w, .. }) => {
                for (a, b) in v.iter_mut().zip(w) {
                    *a += b;
                }
            }
            (SiteWait::Hashed(m), SiteWait::Hashed(n)) => {
                for (key, w) in n {
                    *m.entry(key).or_default() += w;
                }
            }
            (me, other) => other.for_each(|object, site, w| me.add(object, site, w)),
        }
    }

    /// Calls `f(object, site, Σ)` for every pair with a non-zero sum.
    fn for_each(self, mut f: impl FnMut(u32, u32, u64)) {
        match self {
            SiteWait::Dense { sites, v } => {
                for (k, w) in v.into_iter().enumerate().filter(|(_, w)| *w > 0) {
                    f((k / sites) as u32, (k % sites) as u32, w);
                }
            }
            SiteWait::Hashed(m) => {
                for (key, w) in m {
                    f((key >> 32) as u32, key as u32, w);
                }
            }
        }
    }
}

/// Per thread: whether its events in `range` of `set.events` come in
/// order of request time. Pairing's note
/// ([`EventSet::thread_in_request_order`]) when `range` holds every event
/// of the threads it has events of in their ranges (as `sum_range`'s
/// ranges do); else a pass over `range`.
fn requests_in_order(set: &EventSet, range: std::ops::Range<usize>) -> Vec<bool> {
    if set.threads_in_ranges() && set.thread_in_request_order.len() == set.threads.len() {
        return set.thread_in_request_order.clone();
    }
    let mut ok = vec![true; set.threads.len()];
    let mut last = vec![0u64; set.threads.len()];
    for e in &set.events[range] {
        let t = e.thread() as usize;
        ok[t] &= e.requested_ns() >= last[t];
        last[t] = e.requested_ns();
    }
    ok
}

/// The length of a union of intervals [start, end): summed as they come
/// when they come in start order, else kept and sorted at the end.
struct Union {
    cur: Option<(u64, u64)>,
    total: u64,
    kept: Option<Vec<(u64, u64)>>,
}

impl Union {
    fn new(in_order: bool) -> Union {
        Union {
            cur: None,
            total: 0,
            kept: (!in_order).then(Vec::new),
        }
    }

    #[inline]
    fn push(&mut self, iv: (u64, u64)) {
        if let Some(k) = &mut self.kept {
            k.push(iv);
            return;
        }
        match &mut self.cur {
            Some((_, end)) if iv.0 <= *end => *end = (*end).max(iv.1),
            Some((start, end)) => {
                self.total += *end - *start;
                self.cur = Some(iv);
            }
            None => self.cur = Some(iv),
        }
    }

    fn total(self) -> u64 {
        match self.kept {
            Some(mut k) => union_length(&mut k),
            None => self.total + self.cur.map_or(0, |(s, e)| e - s),
        }
    }
}

/// Log2 bucket of a wait: 0 for 0 ns, else 1 + ⌊log2 wait⌋, so bucket b
/// holds [2^(b−1), 2^b).
pub fn bucket(wait_ns: u64) -> usize {
    (64 - wait_ns.leading_zeros()) as usize
}

/// Length of the union of intervals [start, end), ns. Sorts `v`.
pub fn union_length(v: &mut [(u64, u64)]) -> u64 {
    if !v.is_sorted() {
        v.sort_unstable();
    }
    let mut total = 0;
    let mut cur: Option<(u64, u64)> = None;
    for &(s, e) in v.iter() {
        match cur {
            Some((cs, ce)) if s <= ce => cur = Some((cs, ce.max(e))),
            Some((cs, ce)) => {
                total += ce - cs;
                cur = Some((s, e));
            }
            None => cur = Some((s, e)),
        }
    }
    if let Some((cs, ce)) = cur {
        total += ce - cs;
    }
    total
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

/// Filters that select nothing in `set`, one sentence each, with the
/// nearest names the recording has: a `--lock` name or address no object
/// has (up to three near matches by edit distance or substring), a
/// `--thread` id no thread has, a `--site` pattern no call site matches.
pub fn filters_matching_nothing(
    set: &EventSet,
    names: &Names,
    filter: &EventFilter,
) -> Vec<String> {
    let mut out = Vec::new();
    for want in &filter.locks {
        let matched = set.objects.iter().zip(&names.objects).any(|(o, name)| {
            want == name
                || parse_address(want) == Some(o.address)
                || name.split('+').next() == Some(want.as_str())
        });
        if matched {
            continue;
        }
        let mut near: Vec<(f64, &String)> = names
            .objects
            .iter()
            .map(|n| {
                let base = n.split('+').next().unwrap_or(n);
                let score = if base.contains(want.as_str()) || want.contains(base) {
                    1.0
                } else {
                    strsim::normalized_levenshtein(want, base)
                };
                (score, n)
            })
            .filter(|(score, _)| *score >= 0.5)
            .collect();
        near.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(b.1)));
        near.dedup_by(|a, b| a.1 == b.1);
        let near: Vec<&str> = near.iter().take(3).map(|(_, n)| n.as_str()).collect();
        out.push(if near.is_empty() {
            format!(
                "--lock {want}: no lock of this recording has that name or address ({} locks)",
                names.objects.len()
            )
        } else {
            format!(
                "--lock {want}: no lock of this recording has that name or address; near: {}",
                near.join(", ")
            )
        });
    }
    for tid in &filter.threads {
        if !set.threads.iter().any(|t| t.tid == *tid) {
            out.push(format!(
                "--thread {tid}: no traced thread has this id ({} threads)",
                set.threads.len()
            ));
        }
    }
    if let Some(re) = &filter.site_pattern {
        let any = names.sites.iter().any(|s| {
            re.is_match(&s.display) || s.function.as_deref().is_some_and(|f| re.is_match(f))
        });
        if !any && !names.sites.is_empty() {
            out.push(format!(
                "--site {}: matches no call site of this recording",
                re.as_str()
            ));
        }
    }
    out
}

/// Parses `0x…` hexadecimal or decimal addresses.
pub fn parse_address(s: &str) -> Option<u64> {
    let s = s.trim();
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The (object, site, Σ) entries of a table, sorted.
    fn entries(t: SiteWait) -> Vec<(u32, u32, u64)> {
        let mut v = Vec::new();
        t.for_each(|o, s, w| v.push((o, s, w)));
        v.sort_unstable();
        v
    }

    /// Two tables added, dense or hashed in any combination, hold the sums
    /// of both sets of additions.
    #[test]
    fn site_wait_tables_add_up_dense_or_hashed() {
        let first = [(0u32, 1u32, 5u64), (2, 0, 7), (0, 1, 1)];
        let second = [(0u32, 1u32, 2u64), (1, 2, 3)];
        let table = |dense: bool, adds: &[(u32, u32, u64)]| {
            let mut t = if dense {
                SiteWait::new(3, 3)
            } else {
                SiteWait::Hashed(FxHashMap::default())
            };
            for &(o, s, w) in adds {
                t.add(o, s, w);
            }
            t
        };
        let expected = vec![(0, 1, 8), (1, 2, 3), (2, 0, 7)];
        for a in [true, false] {
            for b in [true, false] {
                let mut t = table(a, &first);
                t.add_all(table(b, &second));
                assert_eq!(entries(t), expected, "dense {a} + dense {b}");
            }
        }
    }
}
