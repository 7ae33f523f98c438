//! Which lock events a [`EventFilter`] keeps: the one definition used by
//! the report tables ([`mod@super::aggregate`]) and by every export, so that a
//! filtered export and a filtered report count the same events.

use super::aggregate::{parse_address, EventFilter, Names};
use super::critical_path::CriticalPath;
use super::events::{EventSet, LockEvent, Outcome};

/// A filter prepared for one event set: its lock and site tests resolved
/// once per object and per site, so that [`Selection::keeps`] is a few
/// comparisons per event.
pub struct Selection<'a> {
    filter: &'a EventFilter,
    set: &'a EventSet,
    path: &'a CriticalPath,
    /// Per object: named by `filter.locks` (empty = every object).
    locks: Vec<bool>,
    /// Per site: matched by `filter.site_pattern` (empty = every site).
    sites: Vec<bool>,
    /// The filter asks for nothing: every event but a post is kept.
    keeps_all: bool,
}

impl<'a> Selection<'a> {
    /// Prepares `filter` for the events of `set`, their critical-path marks
    /// `path` and their resolved `names`.
    ///
    /// A lock is named by its symbol (`queue_lock`), its symbol without an
    /// offset, or its address (`0x55d0c0a04040`); a site matches when the
    /// pattern matches its display form, function, `file:line` or module.
    pub fn new(
        filter: &'a EventFilter,
        set: &'a EventSet,
        path: &'a CriticalPath,
        names: &Names,
    ) -> Selection<'a> {
        let locks = if filter.locks.is_empty() {
            Vec::new()
        } else {
            set.objects
                .iter()
                .zip(&names.objects)
                .map(|(o, name)| {
                    filter.locks.iter().any(|want| {
                        want == name
                            || parse_address(want) == Some(o.address)
                            || name.split('+').next() == Some(want.as_str())
                    })
                })
                .collect()
        };
        let sites = match &filter.site_pattern {
            None => Vec::new(),
            Some(re) => names
                .sites
                .iter()
                .map(|s| {
                    re.is_match(&s.display)
                        || s.function.as_deref().is_some_and(|f| re.is_match(f))
                        || s.file
                            .as_deref()
                            .is_some_and(|f| re.is_match(&format!("{f}:{}", s.line.unwrap_or(0))))
                        || s.module.as_deref().is_some_and(|m| re.is_match(m))
                })
                .collect(),
        };
        let keeps_all = filter.min_duration_ns.is_none()
            && filter.max_duration_ns.is_none()
            && filter.locks.is_empty()
            && filter.site_pattern.is_none()
            && filter.threads.is_empty()
            && !filter.critical_only
            && filter.window.is_none();
        Selection {
            filter,
            set,
            path,
            locks,
            sites,
            keeps_all,
        }
    }

    /// True when event `i` (`e` = `set.events[i]`) passes the filter:
    /// duration (wait + hold) within the bounds, on a named lock, at a
    /// matching site, of a listed thread, on the critical path if asked,
    /// acquired within the time window if one is given.
    /// `sem_post` records are never kept (they are not events).
    #[inline]
    pub fn keeps(&self, i: usize, e: &LockEvent) -> bool {
        if self.keeps_all {
            return e.outcome() != Outcome::Post;
        }
        self.keeps_on(i, e, true)
    }

    /// [`Selection::keeps`] for acquisitions counted by call site without
    /// their lock (`e.object` is not read): kept when the filter names no
    /// lock and the rest passes.
    pub fn keeps_lock_unknown(&self, i: usize, e: &LockEvent) -> bool {
        self.filter.locks.is_empty() && self.keeps_on(i, e, false)
    }

    fn keeps_on(&self, i: usize, e: &LockEvent, lock_known: bool) -> bool {
        if e.outcome() == Outcome::Post {
            return false;
        }
        let f = self.filter;
        let d = e.duration_ns();
        f.min_duration_ns.is_none_or(|m| d >= m)
            && f.max_duration_ns.is_none_or(|m| d <= m)
            && (!lock_known || self.locks.is_empty() || self.locks[e.object as usize])
            && (self.sites.is_empty() || self.sites[e.site as usize])
            && (f.threads.is_empty()
                || f.threads
                    .contains(&self.set.threads[e.thread() as usize].tid))
            && (!f.critical_only || self.path.on_path[i])
            && f.window.is_none_or(|w| w.contains(e.acquired_ns()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::locks::events::LockEventFields;
    use contend_trace::Primitive;

    /// An empty filter keeps every event but the posts, as the full test
    /// of each condition does.
    #[test]
    fn an_empty_filter_keeps_what_each_condition_keeps() {
        let outcomes = [
            Outcome::Acquired,
            Outcome::Busy,
            Outcome::TimedOut,
            Outcome::Error,
            Outcome::Post,
        ];
        let set = EventSet {
            events: outcomes
                .iter()
                .enumerate()
                .map(|(k, &outcome)| {
                    LockEventFields {
                        thread: 0,
                        object: 0,
                        site: 0,
                        primitive: if outcome == Outcome::Post {
                            Primitive::Semaphore
                        } else {
                            Primitive::Mutex
                        },
                        outcome,
                        requested_ns: 10 * k as u64,
                        acquired_ns: 10 * k as u64 + 2,
                        released_ns: 10 * k as u64 + 5,
                        contended: k % 2 == 0,
                        unreleased: false,
                    }
                    .pack()
                })
                .collect(),
            ..EventSet::default()
        };
        let path = CriticalPath {
            on_path: crate::locks::critical_path::EventMarks::new(set.events.len()),
            ..CriticalPath::default()
        };
        let filter = EventFilter::default();
        let selection = Selection::new(&filter, &set, &path, &Names::default());
        assert!(selection.keeps_all);
        for (i, e) in set.events.iter().enumerate() {
            assert_eq!(selection.keeps(i, e), e.outcome() != Outcome::Post, "{i}");
            assert_eq!(selection.keeps(i, e), selection.keeps_on(i, e, true), "{i}");
        }
        let asking = EventFilter {
            min_duration_ns: Some(1),
            ..EventFilter::default()
        };
        assert!(!Selection::new(&asking, &set, &path, &Names::default()).keeps_all);
    }
}
