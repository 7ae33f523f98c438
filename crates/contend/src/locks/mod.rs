//! Lock-contention analysis (the thesis's mutex tool, Venter 2016,
//! Sections 3.2.2.2 and 4.3.1): pairing of operations into lock events
//! ([`events`]), critical-path marking after Chen & Stenström
//! ([`critical_path`]), aggregation into the report tables ([`mod@aggregate`],
//! [`model`]) and their layout ([`layout`]). [`LockAnalyzer`] runs the
//! three on a recording and keeps the events ([`LockEvents`]).

pub mod across;
pub mod aggregate;
pub mod creation;
pub mod critical_path;
pub mod events;
pub mod figures;
pub mod known;
pub mod layout;
pub mod model;
pub mod ownership;
pub mod select;

use crate::analysis::{AnalysisOutput, Analyzer, Context};
use crate::recording::Recording;
use crate::symbols::{is_system_header, is_system_site, ResolvedSite, Resolver, Symbols};

pub use aggregate::{
    aggregate, aggregate_named, filters_matching_nothing, resolve_names, EventFilter, Names,
    TimeWindow,
};
pub use critical_path::{mark_critical_path, CriticalPath, EventMarks};
pub use events::{
    pair_operations, CountedAcquisitions, EventSet, LockEvent, LockEventFields, OpSource, Outcome,
    ThreadInput, TimeMap, WakeCost, MAX_EVENT_DURATION_NS, MAX_EVENT_THREAD,
};
pub use model::{
    CriticalPathSummary, HistogramBucket, LightNote, LockReport, LockRow, LockSummary, SiteRow,
    ThreadRow, WaitKindRow,
};
pub use ownership::ownership_changes;
pub use select::Selection;

/// The lock analysis of a recording (registered in
/// [`crate::analysis::ANALYZERS`]): every recording gets a lock section,
/// which explains itself when there are no lock events.
pub struct LockAnalyzer;

/// What the lock analysis keeps per event, for exporters: the paired
/// events of every traced thread, their critical-path marks, and the names
/// of their objects and call sites.
#[derive(Debug)]
pub struct LockEvents {
    /// Every lock event, condition, barrier and semaphore wait, in thread
    /// order ([`EventSet`]).
    pub set: EventSet,
    /// The critical path over all events.
    pub critical_path: CriticalPath,
    /// Object and site names, by index into `set.objects` / `set.sites`.
    pub names: Names,
    /// The critical path across pthread, futex and OpenMP hand-overs
    /// ([`across`]), when futex or OpenMP events were recorded;
    /// `critical_path` is then its pthread part.
    pub across: Option<across::AcrossPath>,
    /// The OpenMP events `across` indexes (`across.omp_on_path[i]` is
    /// event `i`'s mark), collected once by the lock analysis for the
    /// OpenMP section and the exports; `None` when `across` is.
    pub across_omp: Option<crate::openmp::sync::OmpSyncEvents>,
    /// The futex events `across` indexes (`across.futex_on_path[i]` is
    /// wait `i`'s mark), wakers matched, collected once by the lock
    /// analysis for the futex section and the exports; `None` when
    /// `across` is.
    pub across_futex: Option<crate::futex::FutexEvents>,
}

/// Lock objects' names as the lock tables show them, by (process index in
/// the recording, address) ([`LockEvents::shown_object_names`]).
pub type ObjectNames = rustc_hash::FxHashMap<(u32, u64), String>;

impl LockEvents {
    /// Every object's name as the lock tables show it, by (process index,
    /// address): its symbol, well-known name or creation (`names`), with
    /// ` @ address` after it where other objects share the name (heap
    /// locks made at one line), as [`model::ShownNames`] shows rows. For
    /// other analyses that name the same locks (the SCI's lock blocks).
    pub fn shown_object_names(&self) -> ObjectNames {
        let shown = model::ShownNames::among(self.names.objects.iter().map(String::as_str));
        self.set
            .objects
            .iter()
            .zip(&self.names.objects)
            .map(|(o, n)| {
                let address = format!("{:#x}", o.address);
                ((o.process, o.address), shown.shown(n, &address))
            })
            .collect()
    }
}

/// Resolves objects and sites of the lock-traced processes of a recording
/// (by process index) through the shared [`Symbols`].
pub struct ProcessResolver<'a> {
    recording: &'a Recording,
    symbols: &'a Symbols,
}

impl<'a> ProcessResolver<'a> {
    /// A resolver over the maps snapshots of `recording`.
    pub fn new(recording: &'a Recording, symbols: &'a Symbols) -> Self {
        ProcessResolver { recording, symbols }
    }
}

impl Resolver for ProcessResolver<'_> {
    fn site(&mut self, process: u32, address: u64) -> ResolvedSite {
        self.symbols
            .site(self.recording.process_maps(process), address)
    }

    fn object(&mut self, process: u32, address: u64) -> Option<String> {
        self.symbols
            .object(self.recording.process_maps(process), address)
    }

    fn function_size(&mut self, process: u32, address: u64) -> Option<u64> {
        self.symbols
            .function_size(self.recording.process_maps(process), address)
    }
}

/// Resolves, ahead of pairing, every address the naming of locks and
/// sites will look up that a recording lists before its events are read:
/// each trace's call-site and object tables and its creation records'
/// sites and stack frames. The symbolizer keeps what it resolved (its
/// cache outlives [`Symbols::release_debug_info`]), so the naming after
/// pairing finds them without reading debug information with the event
/// array in memory. Addresses outside the tables (wide records, the
/// events' call stacks) are resolved where they are met, as before.
fn resolve_recorded_addresses(recording: &Recording, symbols: &Symbols) {
    for (pi, p) in recording.processes.iter().enumerate() {
        let Some(maps) = recording.process_maps(pi as u32) else {
            continue;
        };
        let trace = &p.trace;
        for &address in trace.site_table() {
            symbols.site(Some(maps), address);
        }
        for &address in trace.object_table() {
            symbols.object(Some(maps), address);
        }
        for c in &trace.creations {
            symbols.site(Some(maps), c.site);
            if let Some(frames) = trace.stacks.get(c.stack as usize) {
                for &address in frames {
                    symbols.site(Some(maps), address);
                }
            }
        }
    }
}

impl Analyzer for LockAnalyzer {
    fn name(&self) -> &'static str {
        "locks"
    }

    /// Converts ticks to ns and pairs each thread's operations (in
    /// parallel over threads), resolves objects and sites (then releases
    /// the debug information), marks the critical path over all events,
    /// aggregates the selected events.
    fn analyze(&self, cx: &Context<'_>) -> Option<AnalysisOutput> {
        let recording = cx.recording;
        let progress = cx.progress;
        let ops: u64 = recording
            .processes
            .iter()
            .map(|p| p.trace.op_count() as u64)
            .sum();
        let inputs: Vec<ThreadInput<'_>> = recording
            .processes
            .iter()
            .enumerate()
            .flat_map(|(pi, p)| {
                let clock = if p.trace.clock == contend_trace::format::CLOCK_MONOTONIC {
                    TimeMap::Identity
                } else {
                    TimeMap::Fit(recording.clock)
                };
                p.trace.threads.iter().map(move |t| ThreadInput {
                    process: pi as u32,
                    pid: p.trace.pid,
                    tid: t.tid,
                    ops: OpSource::Trace(&p.trace, t),
                    clock,
                })
            })
            .collect();
        // The debug information is read before the events exist: the
        // DWARF contexts (memcached's: 40 MB while resolving) and the event
        // array are then never in memory at once. Resolving reads it on
        // one core; pairing's first pass, which holds little memory (each
        // thread's event count, objects and sites), runs on the other.
        progress.stage("resolving call sites", 1);
        let ((), surveys) = rayon::join(
            || {
                resolve_recorded_addresses(recording, cx.symbols);
                cx.symbols.release_debug_info();
            },
            || events::survey_operations(&inputs),
        );
        progress.advance(1);
        progress.stage("pairing lock operations", ops);
        let mut set = events::pair_surveyed(&inputs, surveys);
        progress.advance(ops);
        // Names first, then the critical path: addresses that were not in
        // the trace's tables (wide records, the events' call stacks) load
        // debug information again, which is released before the path's
        // tables are made (tens of MB for a C library with debug
        // information).
        progress.stage("naming locks and sites", 1);
        let mut resolver = ProcessResolver::new(recording, cx.symbols);
        let named = Wrappers::new(&cx.options.locks.wrappers);
        let thin = thin_wrappers(&set, recording, &mut resolver, &named);
        let wrappers = named.clone().with_functions(&thin);
        attribute_sites_outside(&mut set, recording, &mut resolver, &wrappers);
        let mut names = resolve_names(&set, &mut resolver);
        let created = creation::creation_sites(&set, recording, &mut resolver, &wrappers);
        creation::name_by_creation(&set, &mut names.objects, &created);
        creation::name_joined_threads(&set, &mut names.objects);
        for (name, kind) in names.objects.iter_mut().zip(&set.object_kinds) {
            if let Some(known) = known::well_known_name(name, kind.object_kind()) {
                *name = known;
            }
        }
        cx.symbols.release_debug_info();
        progress.advance(1);
        progress.stage("marking the critical path", 1);
        let futex_and_omp = across_inputs(recording);
        let pids: Vec<u32> = recording.processes.iter().map(|p| p.trace.pid).collect();
        let too_many = futex_and_omp
            .as_ref()
            .is_some_and(|(futex, omp)| !across::fits(&set, futex, omp));
        let across = futex_and_omp
            .as_ref()
            .filter(|_| !too_many)
            .map(|(futex, omp)| across::mark_across(&set, futex, omp, &pids));
        // The ownership changes (a pass of their own over every event) on
        // the other core while this one walks the path backward.
        let (path, changes) = rayon::join(
            || match &across {
                Some(a) => a.locks.clone(),
                None => mark_critical_path(&set),
            },
            || ownership::ownership_changes(&set),
        );
        progress.advance(1);
        progress.stage("summing by lock, site and thread", 1);
        let span = event_span(&set);
        let program_ns = recording.wall_ns().unwrap_or(match span {
            Some((a, b)) if b > a => b - a,
            _ => 0,
        });
        let mut locks = aggregate::aggregate_counted(
            &set,
            &path,
            &names,
            &cx.options.locks,
            program_ns,
            Some(changes),
        );
        if !thin.is_empty() {
            locks.filters.push(format!(
                "call sites in thin lock wrappers recognised automatically [{}] attributed to their callers \
                 (one lock or init call, at most {THIN_WRAPPER_MAX_BYTES} bytes, called from {THIN_WRAPPER_MIN_CALLERS} or more places)",
                thin.join(", ")
            ));
        }
        if let (Some(a), Some((futex, omp))) = (&across, &futex_and_omp) {
            let mut summary = across::summarize(a, &set, futex, omp, |source, i| {
                across_object(&set, &names, futex, omp, &mut resolver, source, i)
            });
            let thread_names = recording.named_threads();
            let name = |pid, tid| thread_names.get(&(pid, tid)).map(|n| n.to_string());
            for h in &mut summary.hand_overs {
                h.from_name = name(h.pid, h.from_tid);
                h.to_name = name(h.pid, h.to_tid);
            }
            locks.critical_path.across = Some(summary);
        }
        progress.advance(1);
        if set.events.is_empty() && set.counted.is_empty() {
            locks.no_events_reason = Some(no_events_reason(recording));
        }
        creation::set_created_at(&mut locks.by_lock, &set, recording, created);
        // A module that is not the recorded file lacks no debug symbols:
        // the report says instead that it was rebuilt.
        let mismatched = cx.symbols.mismatched_modules();
        locks
            .sites_without_debug_info
            .retain(|m| !mismatched.contains(m));
        let mut warnings = filters_matching_nothing(&set, &names, &cx.options.locks);
        let no_stacks = recording.processes.iter().all(|p| p.trace.stack_every == 0);
        if !named.is_empty() && no_stacks {
            warnings.push(
                "--wrapper moves call sites through recorded call stacks, and this recording has none (only the creations' stacks, which name the locks): record with --stack-every N"
                    .into(),
            );
        }
        if too_many {
            warnings.push(format!(
                "the critical path across pthread, futex and OpenMP events takes fewer than {} events of each kind; this recording has more, so the path follows pthread locks only",
                across::MAX_EVENTS_PER_SOURCE
            ));
        }
        warnings.extend(system_header_sites_warning(&set, &names));
        if no_stacks {
            warnings.extend(wrapper_sites_hint(&locks.by_lock, &locks.by_site));
        }
        if locks.summary.unmatched_releases > 0 {
            warnings.push(format!(
                "{} release(s) had no acquisition in the same thread (locks taken before recording began, or a mutex unlocked by another thread)",
                locks.summary.unmatched_releases
            ));
        }
        if locks.summary.unreleased_events > 0 {
            warnings.push(format!(
                "{} lock(s) were still held when their thread's trace ended; their hold time runs to the thread's last recorded operation",
                locks.summary.unreleased_events
            ));
        }
        let (across_futex, across_omp) = futex_and_omp.filter(|_| across.is_some()).unzip();
        Some(AnalysisOutput {
            section: Some(Box::new(locks)),
            warnings,
            events: Some(Box::new(LockEvents {
                set,
                critical_path: path,
                names,
                across_futex,
                across_omp,
                across,
            })),
            span_ns: span,
        })
    }
}

/// The futex events (wakers matched) and OpenMP synchronisation events of
/// a recording, for the critical path across recorders; `None` when it has
/// neither (the path is then the pthread path alone).
fn across_inputs(
    recording: &Recording,
) -> Option<(
    crate::futex::FutexEvents,
    crate::openmp::sync::OmpSyncEvents,
)> {
    let traced = matches!(&recording.futex_trace, Some(Ok(t)) if !t.calls.is_empty());
    let any = traced
        || recording.processes.iter().any(|p| {
            p.trace
                .threads
                .iter()
                .any(|t| t.futex_count > 0 || t.omp_count() > 0)
        });
    if !any {
        return None;
    }
    let mut futex = crate::futex::collect(recording);
    crate::futex::match_wakers(&mut futex);
    let omp = crate::openmp::sync::collect(recording);
    if futex.waits.is_empty() && omp.is_empty() {
        return None;
    }
    Some((futex, omp))
}

/// The name of the object of a hand-over on the critical path across
/// recorders (`source`, index of the waiting event).
fn across_object(
    set: &EventSet,
    names: &Names,
    futex: &crate::futex::FutexEvents,
    omp: &crate::openmp::sync::OmpSyncEvents,
    resolver: &mut ProcessResolver<'_>,
    source: across::Source,
    i: u32,
) -> across::HandOverObject {
    let i = i as usize;
    match source {
        across::Source::Lock => {
            let o = set.events[i].object as usize;
            let name = names
                .objects
                .get(o)
                .cloned()
                .unwrap_or_else(|| format!("{:#x}", set.objects[o].address));
            (name, None)
        }
        across::Source::Futex => {
            let w = futex.wait_info(&futex.waits[i]);
            // the symbol or address until the futex section names it
            // (`name_hand_overs_by_sections`)
            let name = resolver
                .object(w.process, w.word)
                .unwrap_or_else(|| format!("{:#x}", w.word));
            (name, Some(across::SectionObject::FutexWord(w.word)))
        }
        across::Source::Openmp => {
            let e = omp.get(i);
            if e.barrier {
                (e.kind_name().to_string(), None)
            } else {
                // the symbol or address until the OpenMP section names it
                // (`name_hand_overs_by_sections`)
                let name = resolver
                    .object(e.process, e.object)
                    .unwrap_or_else(|| format!("{:#x}", e.object));
                (
                    crate::openmp::mutex_label(e.kind_name(), &name),
                    Some(across::SectionObject::OpenmpMutex(e.kind_name(), e.object)),
                )
            }
        }
    }
}

/// Gives the OpenMP mutexes and futex words among the critical path's
/// hand-overs across recorders (`locks.critical_path.across.hand_overs`)
/// the names of the OpenMP section (`openmp.mutexes`) and the futex
/// section (`futex.by_word`), once the sections are made
/// ([`across::name_section_objects`]). Does nothing without the path.
pub(crate) fn name_hand_overs_by_sections(report: &mut crate::report::Report) {
    // taken out while the OpenMP section is read, then put back
    let Some(mut across) = report
        .section_mut::<LockReport>()
        .and_then(|l| l.critical_path.across.take())
    else {
        return;
    };
    let openmp = report
        .section::<crate::openmp::OpenMpReport>()
        .map(|r| r.mutex_names())
        .unwrap_or_default();
    let futex: rustc_hash::FxHashMap<(u32, u64), &str> = report
        .section::<crate::futex::FutexReport>()
        .map(|r| {
            r.rows_by_address()
                .into_iter()
                .map(|(key, row)| (key, row.name.as_str()))
                .collect()
        })
        .unwrap_or_default();
    across::name_section_objects(&mut across, &openmp, &futex);
    if let Some(locks) = report.section_mut::<LockReport>() {
        locks.critical_path.across = Some(across);
    }
}

/// First and last instant of the recorded operations, ns (threads whose
/// first operation has time 0 are left out of the start).
fn event_span(set: &EventSet) -> Option<(u64, u64)> {
    let first = set
        .threads
        .iter()
        .map(|t| t.first_ns)
        .filter(|&t| t > 0)
        .min()?;
    let last = set.threads.iter().map(|t| t.last_ns).max()?;
    Some((first, last))
}

/// Moves events whose call site is in system code to the first caller in
/// the user's code, using the call stacks recorded with `--stack-every N`.
///
/// A program built without optimisation calls `pthread_mutex_lock` from an
/// out-of-line `__gthread_mutex_lock` in a libstdc++ header, so every
/// `std::mutex` user shares that one site; the stack (return addresses,
/// innermost first, the site itself first) names the real caller. Only
/// events that carry a stack move; the others keep the system site.
///
/// A move never makes a site worse: the caller's frame must resolve at
/// least as well as the site (`dwarf` > `symbols` > `none`), so a site in
/// a library with symbols is not traded for `?? prog+0x…` in a program
/// without them; with no such frame the event keeps its site.
pub fn attribute_sites_through_stacks(
    set: &mut EventSet,
    recording: &Recording,
    resolver: &mut dyn Resolver,
) {
    attribute_sites_outside(set, recording, resolver, &Wrappers::default());
}

/// Lock wrappers named by the user (`report --wrapper PATTERN`): function
/// names matched by patterns in which `*` stands for any characters
/// (`port::Mutex::*`, `PyThread_*`); the whole demangled name must match.
#[derive(Debug, Clone, Default)]
pub struct Wrappers {
    patterns: Vec<regex::Regex>,
}

impl Wrappers {
    /// The wrappers of `patterns` (`*` = any characters, everything else
    /// literal).
    pub fn new(patterns: &[String]) -> Wrappers {
        Wrappers {
            patterns: patterns
                .iter()
                .filter_map(|p| {
                    let body = p
                        .split('*')
                        .map(regex::escape)
                        .collect::<Vec<_>>()
                        .join(".*");
                    regex::Regex::new(&format!("^(?:{body})$")).ok()
                })
                .collect(),
        }
    }

    /// These wrappers and the functions named exactly `functions` (the
    /// thin wrappers [`thin_wrappers`] recognised).
    pub fn with_functions(mut self, functions: &[String]) -> Wrappers {
        self.patterns.extend(
            functions
                .iter()
                .filter_map(|f| regex::Regex::new(&format!("^(?:{})$", regex::escape(f))).ok()),
        );
        self
    }

    /// True when no wrapper was named.
    pub fn is_empty(&self) -> bool {
        self.patterns.is_empty()
    }

    /// True when `site`'s function is one of the wrappers.
    pub fn contains(&self, site: &ResolvedSite) -> bool {
        site.function
            .as_deref()
            .is_some_and(|f| self.patterns.iter().any(|p| p.is_match(f)))
    }

    /// A site that moves to a caller: in system code or in a wrapper.
    pub fn moves(&self, site: &ResolvedSite) -> bool {
        is_system_site(site) || self.contains(site)
    }

    /// [`user_frame`] that also passes over frames in a wrapper: the first
    /// of `callers` neither in system code nor in a wrapper, if it resolves
    /// at least as well as `site`.
    pub fn user_frame(
        &self,
        site: &ResolvedSite,
        callers: impl IntoIterator<Item = (u64, ResolvedSite)>,
    ) -> Option<u64> {
        let (address, frame) = callers.into_iter().find(|(_, f)| !self.moves(f))?;
        (debug_rank(frame.debug) >= debug_rank(site.debug)).then_some(address)
    }
}

/// Largest function, in bytes of code (its symbol's size), that
/// [`thin_wrappers`] recognises as a thin lock wrapper.
pub const THIN_WRAPPER_MAX_BYTES: u64 = 128;

/// Fewest distinct callers (return addresses) a thin lock wrapper must
/// have in the recorded stacks ([`thin_wrappers`]).
pub const THIN_WRAPPER_MIN_CALLERS: usize = 2;

/// What [`thin_wrappers`] learns about one function holding lock calls.
#[derive(Default)]
struct WrapperEvidence {
    /// Call-site addresses of lock operations and init calls inside it.
    sites: std::collections::BTreeSet<u64>,
    /// Callers (return addresses of the frame above) seen in the stacks.
    callers: std::collections::BTreeSet<u64>,
    /// A stack showed it called from system code (a thread's start
    /// routine, `main`) or from itself, or ending at it.
    disqualified: bool,
}

/// The thin lock wrappers of a recording, recognised automatically (the
/// `my_lock()` / `port::Mutex::Lock()` case of issue 16: every event lands
/// on the one line inside the wrapper). A function of the user's code
/// (not system code, not matched by `named`) is one when, from what the
/// recording holds:
///
/// * every lock operation and init call recorded inside it comes from one
///   call instruction (one site address);
/// * its symbol is at most [`THIN_WRAPPER_MAX_BYTES`] bytes long (a few
///   instructions around that call);
/// * the recorded stacks (`--stack-every`, and the creations' stacks)
///   show it called from at least [`THIN_WRAPPER_MIN_CALLERS`] distinct
///   places, none of them in system code (a thread's start routine or
///   `main` is called by the C library) nor itself.
///
/// Returns their demangled names, sorted; empty without stacks or sizes.
/// Sites inside them then move to their callers as those of
/// `report --wrapper` do ([`attribute_sites_outside`],
/// [`creation::creation_sites`]).
pub fn thin_wrappers(
    set: &EventSet,
    recording: &Recording,
    resolver: &mut dyn Resolver,
    named: &Wrappers,
) -> Vec<String> {
    use std::collections::{BTreeMap, HashMap};
    let mut evidence: BTreeMap<(u32, String), WrapperEvidence> = BTreeMap::new();
    let mut resolved: HashMap<(u32, u64), ResolvedSite> = HashMap::new();
    let mut resolve = |resolver: &mut dyn Resolver, process: u32, address: u64| {
        resolved
            .entry((process, address))
            .or_insert_with(|| resolver.site(process, address))
            .clone()
    };
    // (process, stack) already looked at, per function
    let mut seen: std::collections::HashSet<(u32, u32)> = Default::default();
    let mut observe = |resolver: &mut dyn Resolver, process: u32, site: u64, stack: u32| {
        let here = resolve(resolver, process, site);
        let Some(function) = here.function.clone() else {
            return;
        };
        if named.moves(&here) {
            return;
        }
        let e = evidence.entry((process, function.clone())).or_default();
        e.sites.insert(site);
        if stack == contend_trace::NO_STACK || !seen.insert((process, stack)) {
            return;
        }
        let frames = recording
            .processes
            .get(process as usize)
            .and_then(|p| p.trace.stacks.get(stack as usize));
        match frames.and_then(|f| f.get(1)) {
            Some(&caller) => {
                let c = resolve(resolver, process, caller);
                if is_system_site(&c) || c.function.as_deref() == Some(function.as_str()) {
                    e.disqualified = true;
                } else {
                    e.callers.insert(caller);
                }
            }
            None => e.disqualified = true,
        }
    };
    // Every site an event names, then every recorded stack with its
    // event's site (what observing each event in turn would find: a site
    // observed with a stack is observed without one too).
    for (site, _) in sites_of_events(set).iter().enumerate().filter(|(_, &u)| u) {
        let k = set.sites[site];
        observe(resolver, k.process, k.address, contend_trace::NO_STACK);
    }
    for &(i, stack) in &set.stacks {
        if let Some(ev) = set.events.get(i as usize) {
            let k = set.sites[ev.site as usize];
            observe(resolver, k.process, k.address, stack);
        }
    }
    for (pi, p) in recording.processes.iter().enumerate() {
        for c in &p.trace.creations {
            observe(resolver, pi as u32, c.site, c.stack);
        }
    }
    let mut out: Vec<String> = evidence
        .into_iter()
        .filter(|(_, e)| {
            !e.disqualified && e.sites.len() == 1 && e.callers.len() >= THIN_WRAPPER_MIN_CALLERS
        })
        .filter(|((process, _), e)| {
            let site = *e.sites.iter().next().expect("one site");
            resolver
                .function_size(*process, site)
                .is_some_and(|n| n <= THIN_WRAPPER_MAX_BYTES)
        })
        .map(|((_, f), _)| f)
        .collect();
    out.sort();
    out.dedup();
    out
}

/// Per site of `set` (`set.sites`), whether some event names it: one pass
/// over the events, in parts on both cores when the sites are few for the
/// events (a table of `set.sites.len()` flags per part,
/// [`crate::chunked_sort::part_bounds`]).
fn sites_of_events(set: &EventSet) -> Vec<bool> {
    use rayon::prelude::*;
    let sites = set.sites.len();
    let bounds = crate::chunked_sort::part_bounds(set.events.len(), sites);
    bounds
        .par_windows(2)
        .map(|part| {
            let mut used = vec![false; sites];
            for e in &set.events[part[0]..part[1]] {
                if let Some(u) = used.get_mut(e.site as usize) {
                    *u = true;
                }
            }
            used
        })
        .reduce(
            || vec![false; sites],
            |mut a, b| {
                a.iter_mut().zip(b).for_each(|(x, y)| *x |= y);
                a
            },
        )
}

/// [`attribute_sites_through_stacks`], also moving sites inside the lock
/// wrappers the user named (`report --wrapper`) to the first caller
/// outside them (mutrace and the RocksDB case: 1.2 million events
/// on `port::Mutex::Lock()`).
pub fn attribute_sites_outside(
    set: &mut EventSet,
    recording: &Recording,
    resolver: &mut dyn Resolver,
    wrappers: &Wrappers,
) {
    if set.stacks.is_empty() {
        return;
    }
    let resolved: Vec<ResolvedSite> = set
        .sites
        .iter()
        .map(|k| resolver.site(k.process, k.address))
        .collect();
    let system: Vec<bool> = resolved.iter().map(|s| wrappers.moves(s)).collect();
    let mut site_index: std::collections::HashMap<events::SiteKey, u32> = set
        .sites
        .iter()
        .enumerate()
        .map(|(i, k)| (*k, i as u32))
        .collect();
    // (process, stack) → user site index, or u32::MAX when none is found.
    let mut moved: std::collections::HashMap<(u32, u32), u32> = Default::default();
    for k in 0..set.stacks.len() {
        let (i, stack) = set.stacks[k];
        let i = i as usize;
        let e = set.events[i];
        if !system[e.site as usize] {
            continue;
        }
        let process = set.threads[e.thread() as usize].process;
        let here = &resolved[e.site as usize];
        let target = *moved.entry((process, stack)).or_insert_with(|| {
            let frames = recording
                .processes
                .get(process as usize)
                .and_then(|p| p.trace.stacks.get(stack as usize));
            let Some(frames) = frames else {
                return u32::MAX;
            };
            let callers = frames
                .iter()
                .skip(1)
                .map(|&address| (address, resolver.site(process, address)));
            let Some(address) = wrappers.user_frame(here, callers) else {
                return u32::MAX;
            };
            let key = events::SiteKey { process, address };
            *site_index.entry(key).or_insert_with(|| {
                set.sites.push(key);
                (set.sites.len() - 1) as u32
            })
        });
        if target != u32::MAX {
            set.events[i].site = target;
        }
    }
}

/// The caller a site in system code moves to: the address of the first
/// of `callers` (return addresses and their resolution, innermost first)
/// outside system code, if it resolves at least as well as `site`
/// (`dwarf` > `symbols` > `none`); `None` keeps the site.
pub fn user_frame(
    site: &ResolvedSite,
    callers: impl IntoIterator<Item = (u64, ResolvedSite)>,
) -> Option<u64> {
    let (address, frame) = callers.into_iter().find(|(_, f)| !is_system_site(f))?;
    (debug_rank(frame.debug) >= debug_rank(site.debug)).then_some(address)
}

/// How well a site is resolved: `dwarf` (function, file, line) 2,
/// `symbols` (function) 1, `none` (module and offset) 0.
fn debug_rank(debug: &str) -> u8 {
    match debug {
        "dwarf" => 2,
        "symbols" => 1,
        _ => 0,
    }
}

/// A warning when lock operations still have their call site in a system
/// header after [`attribute_sites_through_stacks`]: an unoptimised C++
/// build calls `pthread_mutex_lock` from out-of-line libstdc++ code
/// (`__gthread_mutex_lock`, gthr-posix.h), so such a site is not a line of
/// the user's and every `std::mutex` shares it. Says how many operations
/// (of all recorded) and which sites, and that `--stack-every 1` moves
/// them to the calling line; `None` when no site is in a system header.
pub fn system_header_sites_warning(set: &EventSet, names: &Names) -> Option<String> {
    let in_header: Vec<bool> = names
        .sites
        .iter()
        .map(|s| s.file.as_deref().is_some_and(is_system_header))
        .collect();
    // the pass over every event only when some site is in a header
    if !in_header.contains(&true) {
        return None;
    }
    let mut per_site = vec![0u64; names.sites.len()];
    let mut with_stack = 0u64;
    for (_, e, stack) in set.events_with_stacks() {
        if in_header.get(e.site as usize).copied().unwrap_or(false) {
            per_site[e.site as usize] += 1;
            with_stack += u64::from(stack.is_some());
        }
    }
    let n: u64 = per_site.iter().sum();
    if n == 0 {
        return None;
    }
    let sites = crate::report::layout::busiest(
        per_site
            .iter()
            .zip(&names.sites)
            .filter(|(&c, _)| c > 0)
            .map(|(&c, s)| (c, s.display.clone()))
            .collect(),
        3,
        ", ",
    );
    let mut why = Vec::new();
    if with_stack < n {
        why.push(format!(
            "{} of them carry no recorded stack: record with --stack-every 1 to attribute them to the calling line in your code (an unoptimised C++ build calls pthread_mutex_lock from out-of-line standard-library code, so every std::mutex shares such a site)",
            n - with_stack
        ));
    }
    if with_stack > 0 {
        why.push(format!(
            "the recorded stacks of {with_stack} of them reach no frame in your code that resolves as well (the walk ends in a library built without frame pointers, or your code lacks debug information)"
        ));
    }
    Some(format!(
        "{n} of {} lock operation(s) have their call site in a system header ({sites}), not in your code; {}",
        set.events.len(),
        why.join("; ")
    ))
}

/// A hint for a recording without call stacks whose lock operations sit
/// inside functions that several locks go through: lock wrappers (libuv's
/// `uv_mutex_lock`, OpenSSL's `CRYPTO_THREAD_write_lock`, a program's own
/// `my_lock()`), whose one call site every lock taken through them shares,
/// so the tables cannot say where in the program each was taken. A
/// function counts when it holds exactly one call site of the site table
/// (`by_site`), at least two locks of the lock table (`by_lock`) list that
/// site in one process, and it is not in a system header (libstdc++'s
/// `gthr-posix.h`: [`system_header_sites_warning`]); and such functions
/// hold at least 5 % of the operations. Says how many operations (of all)
/// are at such sites, the three busiest with their numbers of locks, and
/// the two ways out: recorded stacks, from which thin wrappers are
/// recognised and looked through ([`thin_wrappers`]), and `report
/// --wrapper`. `None` when no function counts.
pub fn wrapper_sites_hint(by_lock: &[LockRow], by_site: &[SiteRow]) -> Option<String> {
    use std::collections::HashMap;
    // locks per (process, site), then the most of any one process: the
    // same lock in each of several processes (a CPython GIL per process)
    // is one lock at its site, not several
    let mut in_process: HashMap<(u32, &str), usize> = HashMap::new();
    // joined threads are not locks: a function joining several threads
    // at one call site (a pool's join loop) is no lock wrapper
    for l in by_lock.iter().filter(|l| l.kind != "join") {
        for s in &l.sites {
            *in_process.entry((l.pid, s.as_str())).or_default() += 1;
        }
    }
    let mut locks_at: HashMap<&str, usize> = HashMap::new();
    for ((_, site), n) in in_process {
        let most = locks_at.entry(site).or_default();
        *most = (*most).max(n);
    }
    let mut sites_in: HashMap<(Option<&str>, &str), usize> = HashMap::new();
    for s in by_site.iter().filter(|s| s.events > 0) {
        if let Some(f) = &s.function {
            *sites_in
                .entry((s.module.as_deref(), f.as_str()))
                .or_default() += 1;
        }
    }
    let wrappers: Vec<(&SiteRow, usize)> = by_site
        .iter()
        .filter(|s| s.events > 0 && !s.file.as_deref().is_some_and(is_system_header))
        .filter(|s| {
            s.function
                .as_deref()
                .is_some_and(|f| sites_in.get(&(s.module.as_deref(), f)) == Some(&1))
        })
        .filter_map(|s| {
            let n = locks_at.get(s.display.as_str()).copied().unwrap_or(0);
            (n >= 2).then_some((s, n))
        })
        .collect();
    if wrappers.is_empty() {
        return None;
    }
    let n: u64 = wrappers.iter().map(|(s, _)| s.events).sum();
    let total: u64 = by_site.iter().map(|s| s.events).sum();
    // a few operations through a wrapper do not hide the program's sites
    if n * 20 < total {
        return None;
    }
    let shown = crate::report::layout::busiest(
        wrappers
            .iter()
            .map(|(s, k)| (s.events, format!("{}: {k} locks", s.display)))
            .collect(),
        3,
        "; ",
    );
    Some(format!(
        "{n} of {total} lock operation(s) were recorded inside a function that several locks go through, probably a lock wrapper ({shown}): every lock taken through it shows that one call site; record with --stack-every 1 to see their callers (contend then recognises thin wrappers and looks through them), or name a wrapper with report --wrapper NAME"
    ))
}

/// Explains an empty recording instead of reporting zero contention.
fn no_events_reason(recording: &Recording) -> String {
    if recording.processes.is_empty() {
        if let Some(Ok(mpi)) = &recording.mpi {
            return format!(
                "No lock trace was recorded; this recording holds the MPI traces of {} rank(s), analysed in the MPI sections.",
                mpi.ranks.len()
            );
        }
    }
    if let Some(a) = recording.meta.as_ref().and_then(|m| m.attach.as_ref()) {
        return a.no_lock_tracing_reason.clone();
    }
    if recording.processes.is_empty() {
        let mut s =
            String::from("No lock trace was written, so no lock operation could be observed. ");
        s.push_str(
            "Likely causes: the program is statically linked or setuid (the loader ignores LD_PRELOAD), \
             it cleared LD_PRELOAD before starting its workers, or it exited before taking any lock.",
        );
        return s;
    }
    if recording
        .processes
        .iter()
        .any(|p| p.trace.threads.iter().any(|t| t.futex_count > 0))
    {
        return "No pthread lock operation was recorded; the program's futex waits and wakes \
                (syscall(SYS_futex): Rust's std::sync, hand-written locks) are in the futex section."
            .to_string();
    }
    if recording
        .processes
        .iter()
        .any(|p| p.trace.threads.iter().any(|t| t.omp_count() > 0))
    {
        return "No pthread lock operation was recorded; the program's OpenMP critical sections, \
                locks and barriers are in the OpenMP section."
            .to_string();
    }
    "No lock operation was recorded although the collector was loaded. \
     The program may not use pthread locks: it may use raw futexes, its own spinlocks or atomics, \
     or a runtime with its own mutexes (Go, some JVM and OpenMP runtimes), or it ran single-threaded \
     without taking locks. This is not evidence of zero contention."
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sites events name, found in parts side by side (few sites for
    /// many events) or in one pass (many sites): those a sequential
    /// reading finds, sites named by no event (a release's) left out.
    #[test]
    fn sites_of_events_are_the_sites_some_event_names() {
        let mut rng = crate::TestRng(0x6a09_e667_f3bc_c908);
        for (events, sites) in [(0usize, 3usize), (1, 1), (5000, 4), (5000, 300), (40, 2000)] {
            let named: Vec<u32> = (0..events)
                .map(|_| rng.below(sites.div_ceil(2) as u64) as u32 * 2)
                .collect();
            let set = EventSet {
                events: named
                    .iter()
                    .map(|&site| {
                        events::LockEventFields {
                            thread: 0,
                            object: 0,
                            site,
                            primitive: contend_trace::Primitive::Mutex,
                            outcome: events::Outcome::Acquired,
                            requested_ns: 1,
                            acquired_ns: 2,
                            released_ns: 3,
                            contended: false,
                            unreleased: false,
                        }
                        .pack()
                    })
                    .collect(),
                sites: (0..sites as u64)
                    .map(|a| events::SiteKey {
                        process: 0,
                        address: 0x1000 + a,
                    })
                    .collect(),
                ..EventSet::default()
            };
            let mut want = vec![false; sites];
            for &s in &named {
                want[s as usize] = true;
            }
            assert_eq!(
                sites_of_events(&set),
                want,
                "{events} events, {sites} sites"
            );
        }
    }

    fn site(function: &str, display: &str, events: u64) -> SiteRow {
        SiteRow {
            function: Some(function.into()),
            file: Some("/src/app/thread.c".into()),
            module: Some("/usr/bin/app".into()),
            display: display.into(),
            events,
            ..SiteRow::default()
        }
    }

    fn lock(name: &str, sites: &[&str]) -> LockRow {
        LockRow {
            name: name.into(),
            sites: sites.iter().map(|s| s.to_string()).collect(),
            ..LockRow::default()
        }
    }

    /// `uv_mutex_lock` holds one site that three locks of one process go
    /// through: a wrapper (700 of 1,000 operations). `worker` holds two
    /// sites (not a wrapper), `one_lock` one site of one lock, and the
    /// system header's site is the other warning's. The same lock in three
    /// processes is one lock.
    #[test]
    fn wrapper_sites_worked_by_hand() {
        let by_site = [
            site("uv_mutex_lock", "uv_mutex_lock (thread.c:344)", 700),
            site("worker", "worker (app.c:10)", 100),
            site("worker", "worker (app.c:20)", 100),
            site("one_lock", "one_lock (app.c:30)", 50),
            SiteRow {
                file: Some("/usr/include/x86_64-linux-gnu/c++/12/bits/gthr-posix.h".into()),
                ..site(
                    "__gthread_mutex_lock",
                    "__gthread_mutex_lock (gthr-posix.h:749)",
                    50,
                )
            },
        ];
        let wrapped = "uv_mutex_lock (thread.c:344)";
        let gthr = "__gthread_mutex_lock (gthr-posix.h:749)";
        let by_lock = [
            lock("a", &[wrapped, "worker (app.c:10)"]),
            lock("b", &[wrapped, "worker (app.c:20)"]),
            lock("c", &[wrapped, "worker (app.c:10)", gthr]),
            lock("d", &["one_lock (app.c:30)", gthr]),
        ];
        assert_eq!(
            wrapper_sites_hint(&by_lock, &by_site).as_deref(),
            Some(
                "700 of 1000 lock operation(s) were recorded inside a function that several locks go through, \
                 probably a lock wrapper (uv_mutex_lock (thread.c:344): 3 locks): every lock taken through it \
                 shows that one call site; record with --stack-every 1 to see their callers (contend then \
                 recognises thin wrappers and looks through them), or name a wrapper with report --wrapper NAME"
            )
        );
        // one lock through it: no wrapper to speak of
        assert_eq!(wrapper_sites_hint(&by_lock[..1], &by_site), None);
        // nor a wrapper with under 5 % of the operations
        let quiet = [
            site("uv_mutex_lock", wrapped, 49),
            site("worker", "worker (app.c:10)", 500),
            site("worker", "worker (app.c:20)", 451),
        ];
        assert_eq!(wrapper_sites_hint(&by_lock, &quiet), None);
        // nor one lock in each of three processes (a GIL per process)
        let per_process: Vec<LockRow> = (0..3)
            .map(|pid| LockRow {
                pid,
                ..lock("gil", &[wrapped])
            })
            .collect();
        assert_eq!(wrapper_sites_hint(&per_process, &by_site), None);
    }
}
