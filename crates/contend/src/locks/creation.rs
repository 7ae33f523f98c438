//! Where lock objects were created: mutrace's "where the lock was created"
//! view, from the collector's creation records (docs/trace-format.md,
//! "Creation records"). A lock with no symbol (heap or stack memory) is
//! named after its creation, `mutex created at cache.c:41 (cache_new)` or
//! `mutex first used at worker.c:17 (worker)`, instead of its address,
//! which changes from run to run (ASLR); so `contend compare` pairs such
//! locks across runs by where they were created.

use std::collections::HashMap;
use std::path::Path;

use contend_trace::{Creation, CreationKind, LockTrace, NO_STACK};
use serde::Serialize;

use super::events::EventSet;
use super::model::LockRow;
use super::Wrappers;
use crate::recording::Recording;
use crate::symbols::Resolver;

/// Where one lock object was created (`created_at` of a lock row,
/// docs/json.md).
#[derive(Debug, Clone, Serialize, Default, PartialEq)]
pub struct CreatedAt {
    /// `init` (an init function such as `pthread_mutex_init` returned 0)
    /// or `first_use` (its first recorded operation: it was statically
    /// initialised, or initialised where contend does not see it).
    pub how: &'static str,
    /// Function of the creating call (demangled), `None` if unknown.
    pub function: Option<String>,
    /// Source file, `None` without debug information.
    pub file: Option<String>,
    /// Source line, `None` without debug information.
    pub line: Option<u32>,
    /// Module (executable or library) path.
    pub module: Option<String>,
    /// Short form, e.g. `cache_new (cache.c:41)`.
    pub display: String,
    /// Kernel thread id of the creating thread.
    pub tid: u32,
    /// The creation's call stack, innermost first, short forms (recorded
    /// with `record --stack-every N`; empty otherwise).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub stack: Vec<String>,
}

/// The creation record that describes an object of one process: its
/// earliest init call, else its first use (one per address; a heap address
/// reused by another lock keeps the first one's).
fn creations_by_address(trace: &LockTrace) -> HashMap<u64, &Creation> {
    let mut best: HashMap<u64, &Creation> = HashMap::new();
    for c in &trace.creations {
        let rank = |c: &Creation| (c.how != CreationKind::Init, c.ticks);
        best.entry(c.object)
            .and_modify(|b| {
                if rank(c) < rank(b) {
                    *b = c;
                }
            })
            .or_insert(c);
    }
    best
}

/// The creation of every object of `set` (`None` where the recording has
/// no creation record for it: recordings made before creation records
/// existed, objects whose records used the wide form). A creation site in
/// system code (an init call inside a library wrapper, `std::mutex`'s
/// first lock in a libstdc++ header) moves to the first frame of its
/// recorded stack in the user's code, as the events' sites do
/// ([`super::attribute_sites_through_stacks`]); so does one inside a lock
/// wrapper the user named (`wrappers`, `report --wrapper`).
pub fn creation_sites(
    set: &EventSet,
    recording: &Recording,
    resolver: &mut dyn Resolver,
    wrappers: &Wrappers,
) -> Vec<Option<CreatedAt>> {
    let per_process: Vec<HashMap<u64, &Creation>> = recording
        .processes
        .iter()
        .map(|p| creations_by_address(&p.trace))
        .collect();
    set.objects
        .iter()
        .map(|o| {
            let trace = &recording.processes.get(o.process as usize)?.trace;
            let c = per_process[o.process as usize].get(&o.address)?;
            let frames: &[u64] = if c.stack == NO_STACK {
                &[]
            } else {
                trace.stacks.get(c.stack as usize).map_or(&[], |v| v)
            };
            let mut site = resolver.site(o.process, c.site);
            if wrappers.moves(&site) {
                let callers = frames
                    .iter()
                    .skip(1)
                    .map(|&a| (a, resolver.site(o.process, a)));
                if let Some(address) = wrappers.user_frame(&site, callers) {
                    site = resolver.site(o.process, address);
                }
            }
            Some(CreatedAt {
                how: match c.how {
                    CreationKind::Init => "init",
                    CreationKind::FirstUse => "first_use",
                },
                function: site.function,
                file: site.file,
                line: site.line,
                module: site.module,
                display: site.display,
                tid: c.tid,
                stack: frames
                    .iter()
                    .map(|&a| resolver.site(o.process, a).display)
                    .collect(),
            })
        })
        .collect()
}

/// The name of a lock of kind `kind` (`mutex`, `rwlock`, …) known only by
/// its creation: `mutex created at cache.c:41 (cache_new)` for an init
/// call, `mutex first used at worker.c:17 (worker)` otherwise (a joined thread
/// whose end was not recorded: `thread joined at main.c:30 (main)`); without
/// debug information `mutex created in cache_new` or `… in ?? prog+0x1234`.
pub fn creation_name(kind: &str, c: &CreatedAt) -> String {
    // a joined thread whose end was not recorded ([`name_joined_threads`]):
    // named after the first join of it
    let (kind, verb) = match (kind, c.how == "init") {
        ("join", _) => ("thread", "joined"),
        (kind, true) => (kind, "created"),
        (kind, false) => (kind, "first used"),
    };
    object_named_at(
        kind,
        verb,
        c.function.as_deref(),
        c.file.as_deref(),
        c.line,
        &c.display,
    )
}

/// `{kind} {verb} at {file name}:{line} ({function})` for an object
/// named after a line of source (`mutex created at cache.c:41
/// (cache_new)`, `mutex waited on at app.rs:40 (app::worker)`), without
/// the function when unknown; `{kind} {verb} in {display}` (the site's
/// short form) without line information.
pub fn object_named_at(
    kind: &str,
    verb: &str,
    function: Option<&str>,
    file: Option<&str>,
    line: Option<u32>,
    display: &str,
) -> String {
    match (file, line) {
        (Some(file), Some(line)) => {
            let base = Path::new(file)
                .file_name()
                .map_or(file.into(), |b| b.to_string_lossy());
            match function {
                Some(f) => format!("{kind} {verb} at {base}:{line} ({f})"),
                None => format!("{kind} {verb} at {base}:{line}"),
            }
        }
        _ => format!("{kind} {verb} in {display}"),
    }
}

/// Names the objects of `set` that have no symbol (their name is their
/// address, `names[i]`) after their creation ([`creation_name`]); objects
/// with a symbol keep it.
pub fn name_by_creation(set: &EventSet, names: &mut [String], created: &[Option<CreatedAt>]) {
    for (i, o) in set.objects.iter().enumerate() {
        let (Some(Some(c)), Some(name)) = (created.get(i), names.get_mut(i)) else {
            continue;
        };
        if *name == format!("{:#x}", o.address) {
            *name = creation_name(set.object_kinds[i].object_kind(), c);
        }
    }
}

/// The most thread ids a joined thread's name lists
/// ([`name_joined_threads`]).
pub const JOINED_TIDS_NAMED: usize = 3;

/// Names the joined threads of `set` (objects of [`Primitive::Join`], whose
/// address is a `pthread_t`) by the kernel thread ids whose ends posted
/// them: `thread 4242 (worker)`, with the thread's name when the recording
/// has it; `thread 4242, 4250` when the `pthread_t` was reused by a later
/// thread after a join, and past [`JOINED_TIDS_NAMED`] threads `thread
/// 4242, 4250, 4258 and 125 more (one pthread_t reused)` (a program that
/// starts threads in batches reuses a few `pthread_t`s for all of them).
/// A joined thread whose end was not recorded (it recorded nothing) keeps
/// its other name. One pass over the events, made only when the set has
/// joins.
///
/// [`Primitive::Join`]: contend_trace::Primitive::Join
pub fn name_joined_threads(set: &EventSet, names: &mut [String]) {
    use contend_trace::Primitive;
    if !set.object_kinds.contains(&Primitive::Join) {
        return;
    }
    let mut ends: Vec<Vec<u32>> = vec![Vec::new(); set.objects.len()];
    for e in &set.events {
        if e.primitive() == Primitive::Join && e.outcome() == super::events::Outcome::Post {
            let threads = &mut ends[e.object as usize];
            if !threads.contains(&e.thread()) {
                threads.push(e.thread());
            }
        }
    }
    for (threads, name) in ends.iter().zip(names.iter_mut()) {
        let Some(&first) = threads.first() else {
            continue;
        };
        let info = &set.threads[first as usize];
        let tids: Vec<String> = threads
            .iter()
            .take(JOINED_TIDS_NAMED)
            .map(|&t| set.threads[t as usize].tid.to_string())
            .collect();
        *name = match (&info.name, threads.len()) {
            (Some(comm), 1) => format!("thread {} ({comm})", info.tid),
            (_, n) if n > JOINED_TIDS_NAMED => format!(
                "thread {} and {} more (one pthread_t reused)",
                tids.join(", "),
                n - JOINED_TIDS_NAMED
            ),
            _ => format!("thread {}", tids.join(", ")),
        };
    }
}

/// Fills [`LockRow::created_at`] of every row of `rows` from the creations of the
/// event set's objects ([`creation_sites`]), matched by process
/// id and address.
pub fn set_created_at(
    rows: &mut [LockRow],
    set: &EventSet,
    recording: &Recording,
    created: Vec<Option<CreatedAt>>,
) {
    let mut by_object: std::collections::HashMap<(u32, String), CreatedAt> = Default::default();
    for (o, c) in set.objects.iter().zip(created) {
        let (Some(c), Some(p)) = (c, recording.processes.get(o.process as usize)) else {
            continue;
        };
        by_object.insert((p.trace.pid, format!("{:#x}", o.address)), c);
    }
    for row in rows {
        row.created_at = by_object.remove(&(row.pid, row.address.clone()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(how: &'static str, file: Option<&str>, line: Option<u32>) -> CreatedAt {
        CreatedAt {
            how,
            function: Some("cache_new".into()),
            file: file.map(Into::into),
            line,
            display: "cache_new (cache.c:41)".into(),
            ..CreatedAt::default()
        }
    }

    #[test]
    fn names_say_how_and_where() {
        assert_eq!(
            creation_name("mutex", &at("init", Some("/src/app/cache.c"), Some(41))),
            "mutex created at cache.c:41 (cache_new)"
        );
        assert_eq!(
            creation_name("rwlock", &at("first_use", Some("cache.c"), Some(7))),
            "rwlock first used at cache.c:7 (cache_new)"
        );
        assert_eq!(
            creation_name("mutex", &at("init", None, None)),
            "mutex created in cache_new (cache.c:41)"
        );
    }
}
