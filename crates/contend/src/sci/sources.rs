//! The executions of blocks in a recording, from all three sources, in one
//! input for the metric ([`super::metric::ScoreInput`]):
//!
//! 1. lock operations (the lock traces, paired by the lock analysis's
//!    [`crate::locks::pair_operations`]): every acquisition call at a call
//!    site, keyed by the lock object (the paper's default list of
//!    parameter-dependent functions, Section 3.4); condition, barrier and
//!    semaphore waits likewise;
//! 2. manual regions (`regions/*.creg`): an END closes the innermost open
//!    region of its name in the thread ([`NameMatcher`]);
//! 3. functions: `-finstrument-functions` hooks (`regions/*.creg`) and
//!    uprobes (`probes/events.cprb`), matched by stack frame
//!    ([`FrameMatcher`]) so that recursion, longjmp and exceptions do not
//!    corrupt the nesting.
//!
//! Thread durations T_t come from the kernel's task events recorded by the
//! launcher (creation to exit), else from the thread's first to last
//! recorded event.

use std::collections::BTreeMap;
use std::sync::Arc;

use contend_symbolize::ProcessMaps;
use contend_trace::probes::{ProbeEventKind, ProbeRecording};
use contend_trace::regions::{RegionEvent, RegionTrace};
use contend_trace::Primitive;
use rayon::prelude::*;
use rustc_hash::FxHashMap;

use super::metric::{
    BlockDef, BlockKind, BlockSite, CountedExecutions, DurationSource, Execution, LockRows,
    ScoreInput, StreamedLocks, ThreadDef,
};
use crate::locks::{
    attribute_sites_through_stacks, pair_operations, EventSet, OpSource, Outcome, ProcessResolver,
    ThreadInput, TimeMap,
};
use crate::recording::Recording;
use crate::symbols::{ResolvedSite, Resolver, Symbols};

/// Counts of what the matching could not pair, for the report.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct MatchCounts {
    /// Ends (region END, function return) with no open entry.
    pub unmatched_ends: u64,
    /// Entries closed without their end: frames left by longjmp or an
    /// exception, a region left open when an outer one of the same name
    /// ended.
    pub abandoned: u64,
    /// Entries still open when their thread's trace ended (exit inside the
    /// block, a crash).
    pub unfinished: u64,
}

/// Function calls of one thread matched by their stack frames.
///
/// `frame` is a stack address of the call: for a uprobe, the stack pointer
/// at the function's first instruction (at its return: the stack pointer
/// after the `ret`, less the return address it popped), the same at both
/// ends; for an `-finstrument-functions` hook, the function's stack pointer
/// at the hook call, which an optimised function may make at its entry
/// after its prologue and at its exit after its epilogue, so the exit's
/// frame is at or above the entry's. Stacks grow down, and a callee's
/// frames all lie below the frame of its caller's entry. Hence:
///
/// - a new call at frame f ends every open call whose frame lies below f:
///   those frames are gone (longjmp, an exception, a lost exit); a frame
///   equal to f is kept, since an inlined function instrumented with
///   `-finstrument-functions` shares its caller's frame;
/// - an exit of function F at frame x closes, of the open calls of F whose
///   entry frame is at or below x, the one with the highest entry frame
///   (the innermost of equals): the call whose frame it is, not a deeper
///   recursion level left by longjmp; every call opened after it ends with
///   it (abandoned).
///
/// This keeps recursion (each level its own frame) and functions that
/// never return (their entry is abandoned by the next call or exit above
/// them, or stays unfinished at the end) from corrupting the nesting.
#[derive(Debug, Default)]
pub struct FrameMatcher<K> {
    open: Vec<(K, u64, u64)>,
    /// What could not be paired.
    pub counts: MatchCounts,
    /// Blocks of the abandoned entries (they count as unfinished).
    pub abandoned: Vec<K>,
}

impl<K: Copy + PartialEq> FrameMatcher<K> {
    /// A new matcher.
    pub fn new() -> Self {
        FrameMatcher {
            open: Vec::new(),
            counts: MatchCounts::default(),
            abandoned: Vec::new(),
        }
    }

    /// An entry of `f` at `frame`, time `t`.
    pub fn enter(&mut self, f: K, frame: u64, t: u64) {
        while let Some(&(k, fr, _)) = self.open.last() {
            if fr >= frame {
                break;
            }
            self.open.pop();
            self.counts.abandoned += 1;
            self.abandoned.push(k);
        }
        self.open.push((f, frame, t));
    }

    /// An exit of `f` at `frame`: the start of the call it ends, if any.
    pub fn exit(&mut self, f: K, frame: u64) -> Option<u64> {
        let Some(pos) = self
            .open
            .iter()
            .enumerate()
            .filter(|&(_, &(k, fr, _))| k == f && fr <= frame)
            .max_by_key(|&(i, &(_, fr, _))| (fr, i))
            .map(|(i, _)| i)
        else {
            self.counts.unmatched_ends += 1;
            return None;
        };
        for &(k, _, _) in &self.open[pos + 1..] {
            self.counts.abandoned += 1;
            self.abandoned.push(k);
        }
        let start = self.open[pos].2;
        self.open.truncate(pos);
        Some(start)
    }

    /// The thread's trace ended: the calls still open, which never ended.
    pub fn finish(&mut self) -> Vec<K> {
        self.counts.unfinished += self.open.len() as u64;
        self.open.drain(..).map(|(k, _, _)| k).collect()
    }
}

/// Regions of one thread matched by name: an END closes the innermost open
/// region of its name; regions opened after it and still open are
/// abandoned (their END was skipped, e.g. by an early return).
#[derive(Debug, Default)]
pub struct NameMatcher<N> {
    open: Vec<(N, u64, usize)>,
    /// What could not be paired.
    pub counts: MatchCounts,
    /// Payloads of the abandoned regions.
    pub abandoned: Vec<usize>,
}

impl<N: Copy + PartialEq> NameMatcher<N> {
    /// A new matcher.
    pub fn new() -> Self {
        NameMatcher {
            open: Vec::new(),
            counts: MatchCounts::default(),
            abandoned: Vec::new(),
        }
    }

    /// A BEGIN of region `name` at `t`; `payload` is returned with the END.
    pub fn begin(&mut self, name: N, t: u64, payload: usize) {
        self.open.push((name, t, payload));
    }

    /// An END of region `name`: (start, payload) of the region it closes.
    pub fn end(&mut self, name: N) -> Option<(u64, usize)> {
        let Some(pos) = self.open.iter().rposition(|&(n, _, _)| n == name) else {
            self.counts.unmatched_ends += 1;
            return None;
        };
        for &(_, _, p) in &self.open[pos + 1..] {
            self.counts.abandoned += 1;
            self.abandoned.push(p);
        }
        let (_, start, payload) = self.open[pos];
        self.open.truncate(pos);
        Some((start, payload))
    }

    /// The thread's trace ended: payloads of the regions still open.
    pub fn finish(&mut self) -> Vec<usize> {
        self.counts.unfinished += self.open.len() as u64;
        self.open.drain(..).map(|(_, _, p)| p).collect()
    }
}

/// What the sources yielded.
#[derive(Debug, Default)]
pub struct Gathered<'s> {
    /// The metric's input.
    pub input: ScoreInput,
    /// Executions per source: locks, regions, functions.
    pub executions: [u64; 3],
    /// Matching problems of regions and functions.
    pub counts: MatchCounts,
    /// Problems of the recording's parts, one sentence each.
    pub warnings: Vec<String>,
    /// Threads whose T_t came from the kernel's task events.
    pub threads_with_lifetimes: u32,
    /// Why thread lifetimes are not known, when they are not.
    pub lifetime_note: Option<String>,
    /// Lock executions scored from the lock analysis's events instead of
    /// [`ScoreInput::executions`] ([`StreamedLocks`]).
    pub streamed: Option<StreamedLocks<'s>>,
    /// A light recording's uncontended acquisitions counted by call site
    /// without their lock: in no block, not scored (those counted with
    /// their lock are in [`ScoreInput::counted`]).
    pub counted_without_lock: u64,
}

/// Builds the rows and threads as executions arrive.
#[derive(Default)]
struct Builder {
    blocks: Vec<BlockDef>,
    threads: Vec<(u32, u32)>,
    thread_index: FxHashMap<(u32, u32), u32>,
    executions: Vec<Vec<Execution>>,
    /// First and last recorded instant per thread, ns.
    spans: Vec<(u64, u64)>,
    /// A light recording's counted acquisitions, by thread and block.
    counted: Vec<CountedExecutions>,
    /// A light recording's acquisitions counted by call site without
    /// their lock (no block to put them in).
    counted_without_lock: u64,
}

impl Builder {
    fn thread(&mut self, pid: u32, tid: u32) -> u32 {
        *self.thread_index.entry((pid, tid)).or_insert_with(|| {
            self.threads.push((pid, tid));
            self.executions.push(Vec::new());
            self.spans.push((u64::MAX, 0));
            (self.threads.len() - 1) as u32
        })
    }

    fn saw(&mut self, thread: u32, t: u64) {
        let s = &mut self.spans[thread as usize];
        s.0 = s.0.min(t);
        s.1 = s.1.max(t);
    }

    fn add(&mut self, thread: u32, block: u32, start: u64, end: u64) {
        let end = end.max(start);
        self.saw(thread, start);
        self.saw(thread, end);
        self.executions[thread as usize].push(Execution {
            block,
            start_ns: start,
            end_ns: end,
        });
    }

    fn block(&mut self, def: BlockDef) -> u32 {
        self.blocks.push(def);
        (self.blocks.len() - 1) as u32
    }
}

fn site_of(r: &ResolvedSite) -> BlockSite {
    BlockSite {
        function: r.function.clone(),
        file: r.file.clone(),
        line: r.line,
        module: r.module.clone(),
        offset: r.module.as_ref().map(|_| format!("{:#x}", r.offset)),
    }
}

/// The lock function a primitive's acquisition call is (timed and clock
/// variants share the name of the plain call).
fn lock_block(p: Primitive) -> (BlockKind, &'static str) {
    match p {
        Primitive::Mutex => (BlockKind::Lock, "pthread_mutex_lock"),
        Primitive::RwlockRead => (BlockKind::Lock, "pthread_rwlock_rdlock"),
        Primitive::RwlockWrite => (BlockKind::Lock, "pthread_rwlock_wrlock"),
        Primitive::Spin => (BlockKind::Lock, "pthread_spin_lock"),
        Primitive::Cond => (BlockKind::Cond, "pthread_cond_wait"),
        Primitive::Barrier => (BlockKind::Barrier, "pthread_barrier_wait"),
        Primitive::Semaphore => (BlockKind::Semaphore, "sem_wait"),
        Primitive::Join => (BlockKind::Join, "pthread_join"),
    }
}

/// The recording's lock operations paired again as the lock analysis
/// pairs them, with call sites moved through recorded stacks
/// ([`attribute_sites_through_stacks`]); `None` without lock traces.
fn pair_again(recording: &Recording, resolver: &mut ProcessResolver<'_>) -> Option<EventSet> {
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
    if inputs.is_empty() {
        return None;
    }
    let mut set: EventSet = pair_operations(&inputs);
    attribute_sites_through_stacks(&mut set, recording, resolver);
    Some(set)
}

/// Turns every acquisition into an execution of its block. The events are
/// the lock analysis's (`paired`, when it ran without `--wrapper`: then
/// its call sites are those [`attribute_sites_through_stacks`] gives),
/// else the recording's lock operations paired again. Each thread's
/// executions are allocated at their exact number. With `paired`, nothing
/// is copied yet: the blocks, threads and spans are made, and
/// [`place_lock_executions`] copies (or streams) the executions once the
/// other sources are in.
fn lock_executions<'s>(
    b: &mut Builder,
    recording: &Recording,
    symbols: &Symbols,
    paired: Option<&'s EventSet>,
    names: Option<&ObjectNames>,
) -> (u64, Option<LockBlocks<'s>>) {
    let mut resolver = ProcessResolver::new(recording, symbols);
    match paired {
        Some(set) => {
            let (blocks, n) = lock_blocks(b, &mut resolver, set, names);
            (n, Some(blocks))
        }
        None => {
            let Some(set) = pair_again(recording, &mut resolver) else {
                return (0, None);
            };
            let (blocks, n) = lock_blocks(b, &mut resolver, &set, names);
            place_lock_executions(b, &blocks, false);
            (n, None)
        }
    }
}

/// The lock executions' blocks and threads, before the executions are
/// placed ([`place_lock_executions`]).
struct LockBlocks<'s> {
    set: &'s EventSet,
    /// The block of each (primitive, site, object) acquired.
    rows: LockRows,
    /// Per thread of the event set: the builder's thread.
    threads: Vec<u32>,
    /// Per thread of the event set: the range of its events, and whether
    /// its acquisition calls qualify for streaming ([`StreamedLocks`]: each
    /// begins after the one before returned, or takes no time at that
    /// instant). `None` when the set does not say where each thread's
    /// events are ([`EventSet::thread_ranges`]: a set not made by pairing);
    /// every thread's calls are then copied.
    ranges: Option<Vec<(std::ops::Range<usize>, bool)>>,
}

/// The first pass: a block per (primitive, site, object) acquired, the
/// builder's threads and their spans, the threads' ranges; returns the
/// number of acquisitions.
fn lock_blocks<'s>(
    b: &mut Builder,
    resolver: &mut ProcessResolver<'_>,
    set: &'s EventSet,
    names: Option<&ObjectNames>,
) -> (LockBlocks<'s>, u64) {
    let threads: Vec<u32> = set
        .threads
        .iter()
        .map(|t| {
            let i = b.thread(t.pid, t.tid);
            if t.last_ns > 0 {
                b.saw(i, t.first_ns);
                b.saw(i, t.last_ns);
            }
            i
        })
        .collect();
    // The acquisitions surveyed in two contiguous parts of the events side
    // by side, cut between two threads' events when pairing says where
    // they are (a thread's calls are then all in one part), else in one.
    let parts = survey_parts(set);
    let surveys: Vec<LockCallSurvey> = parts
        .into_par_iter()
        .map(|range| survey_lock_calls(set, range))
        .collect();
    // Blocks in the order their keys were first seen in the events: the
    // first part's first, then the second's keys not seen before.
    let mut rows = LockRows::for_set(set);
    // Each call site's text once (shared by its blocks) and the number of
    // the place it shows (`function (file:line)`): call sites that resolve
    // to one place (two calls inlined into one line) are one block, as the
    // lock tables show them as one call site.
    let mut site_names: Vec<Option<(Arc<BlockSite>, u32)>> = vec![None; set.sites.len()];
    let mut places: FxHashMap<String, u32> = FxHashMap::default();
    // Each lock's name once, shared by its blocks.
    let mut object_names: Vec<Option<Arc<str>>> = vec![None; set.objects.len()];
    // The lock functions' names, one text each.
    let mut call_names: FxHashMap<&'static str, Arc<str>> = FxHashMap::default();
    let mut simple = vec![true; set.threads.len()];
    let mut n = 0u64;
    // The block of each (call, place, object).
    let mut by_place: FxHashMap<(&'static str, u32, u32), u32> = FxHashMap::default();
    // The block of (primitive, site, object), made when first asked for.
    let mut block_of =
        |b: &mut Builder, primitive: Primitive, site_index: u32, object_index: u32| {
            if let Some(blk) = rows.get(primitive, site_index, object_index) {
                return blk;
            }
            let (site, place) = site_names[site_index as usize]
                .get_or_insert_with(|| {
                    let s = set.sites[site_index as usize];
                    let site = site_of(&resolver.site(s.process, s.address));
                    let next = places.len() as u32;
                    let place = *places.entry(site.display()).or_insert(next);
                    (Arc::new(site), place)
                })
                .clone();
            let object = object_names[object_index as usize]
                .get_or_insert_with(|| {
                    let o = set.objects[object_index as usize];
                    let name = names
                        .and_then(|n| n.get(&(o.process, o.address)).cloned())
                        .or_else(|| resolver.object(o.process, o.address))
                        .unwrap_or_else(|| format!("{:#x}", o.address));
                    Arc::from(name)
                })
                .clone();
            let (kind, name) = lock_block(primitive);
            let blk = match by_place.get(&(name, place, object_index)) {
                Some(&blk) => blk,
                None => {
                    let blk = b.block(BlockDef {
                        kind,
                        name: call_names
                            .entry(name)
                            .or_insert_with(|| Arc::from(name))
                            .clone(),
                        key: Some(object),
                        site,
                        every: 1,
                        unfinished: 0,
                    });
                    by_place.insert((name, place, object_index), blk);
                    blk
                }
            };
            rows.insert(primitive, site_index, object_index, blk);
            blk
        };
    for survey in &surveys {
        for &(primitive, site_index, object_index) in &survey.first_seen {
            block_of(b, primitive, site_index, object_index);
        }
        for (st, (&(lo, hi), &ok)) in survey.spans.iter().zip(&survey.simple).enumerate() {
            simple[st] &= ok;
            // The calls' durations: request to acquisition (0 for an
            // acquisition that succeeded at once, timed once).
            if lo <= hi {
                b.saw(threads[st], lo);
                b.saw(threads[st], hi);
            }
        }
        n += survey.calls;
    }
    // A light recording's counted acquisitions: executions of 0 ns by
    // number, in their blocks (made here for a lock and site acquired only
    // uncontended); those counted by call site alone have no block.
    for c in &set.counted {
        match c.object {
            Some(object) => {
                let block = block_of(b, c.primitive, c.site, object);
                b.counted.push(CountedExecutions {
                    thread: threads[c.thread as usize],
                    block,
                    count: c.count,
                });
                n += c.count;
            }
            None => b.counted_without_lock += c.count,
        }
    }
    // Each thread's range of events, where pairing grouped them.
    let grouped = set.threads_in_ranges();
    let blocks = LockBlocks {
        set,
        rows,
        threads,
        ranges: grouped.then(|| set.thread_ranges.iter().cloned().zip(simple).collect()),
    };
    (blocks, n)
}

/// What [`lock_blocks`] learns from one part of the events.
struct LockCallSurvey {
    /// The (primitive, site, object) of the acquisitions, each where it
    /// is first seen in the part, in event order.
    first_seen: Vec<(Primitive, u32, u32)>,
    /// Per thread of the event set: whether its acquisitions in the part
    /// qualify for streaming ([`StreamedLocks`]).
    simple: Vec<bool>,
    /// Per thread of the event set: the least and greatest request or
    /// acquisition time of its acquisitions in the part, ns (`(MAX, 0)`
    /// without any).
    spans: Vec<(u64, u64)>,
    /// Acquisitions in the part.
    calls: u64,
}

/// The parts [`lock_blocks`] surveys side by side: two, cut at the end of
/// a thread's events near the middle, when pairing says where each
/// thread's events are ([`EventSet::threads_in_ranges`]); otherwise all
/// events in one.
fn survey_parts(set: &EventSet) -> Vec<std::ops::Range<usize>> {
    let n = set.events.len();
    if !set.threads_in_ranges() {
        return std::iter::once(0..n).collect();
    }
    match set
        .thread_ranges
        .iter()
        .map(|r| r.end)
        .find(|&end| end >= n / 2)
    {
        Some(mid) if mid > 0 && mid < n => vec![0..mid, mid..n],
        _ => std::iter::once(0..n).collect(),
    }
}

/// [`lock_blocks`]'s pass over the acquisitions in `range` of the events.
fn survey_lock_calls(set: &EventSet, range: std::ops::Range<usize>) -> LockCallSurvey {
    let mut seen = LockRows::for_set(set);
    let mut survey = LockCallSurvey {
        first_seen: Vec::new(),
        simple: vec![true; set.threads.len()],
        spans: vec![(u64::MAX, 0); set.threads.len()],
        calls: 0,
    };
    let mut last: Option<(usize, u64)> = None;
    for e in &set.events[range] {
        let st = e.thread() as usize;
        if e.outcome() != Outcome::Acquired {
            continue;
        }
        let (requested, acquired) = (e.requested_ns(), e.acquired_ns());
        if let Some(simple) = survey.simple.get_mut(st) {
            // (a call taking no time at the instant the one before
            // returned is allowed: StreamedLocks says why)
            let touching = requested == acquired;
            if last.is_some_and(|(lt, end)| {
                lt == st && requested <= end && !(touching && requested == end)
            }) {
                *simple = false;
            }
        }
        last = Some((st, acquired));
        // A rwlock's read and write acquisitions are different calls.
        if seen.insert(e.primitive(), e.site, e.object, 0) {
            survey.first_seen.push((e.primitive(), e.site, e.object));
        }
        if let Some(span) = survey.spans.get_mut(st) {
            span.0 = span.0.min(requested).min(acquired);
            span.1 = span.1.max(requested).max(acquired);
        }
        survey.calls += 1;
    }
    survey
}

/// The second pass: the lock executions of each thread copied into the
/// builder, or, with `stream`, left in the events for the threads that
/// have no other executions and whose calls qualify ([`StreamedLocks`]).
fn place_lock_executions<'s>(
    b: &mut Builder,
    blocks: &LockBlocks<'s>,
    stream: bool,
) -> Option<StreamedLocks<'s>> {
    let set = blocks.set;
    let mut sharing = vec![0u32; b.executions.len()];
    for &t in &blocks.threads {
        sharing[t as usize] += 1;
    }
    let mut streamed = Vec::new();
    let mut copy = vec![false; set.threads.len()];
    for (st, &t) in blocks.threads.iter().enumerate() {
        let streamable = stream
            && sharing[t as usize] == 1
            && b.executions[t as usize].is_empty()
            && blocks.ranges.as_ref().is_some_and(|r| r[st].1);
        match (&blocks.ranges, streamable) {
            (Some(r), true) => streamed.push((t, r[st].0.clone())),
            _ => copy[st] = true,
        }
    }
    // The copied threads' events: their ranges when the events are
    // grouped by thread (none to read when every thread is streamed), else
    // all events.
    let copied: Vec<&[crate::locks::LockEvent]> = match &blocks.ranges {
        Some(r) => r
            .iter()
            .zip(&copy)
            .filter(|&(_, &c)| c)
            .map(|((range, _), _)| &set.events[range.clone()])
            .collect(),
        None => vec![&set.events[..]],
    };
    let mut acquired = vec![0usize; b.executions.len()];
    for e in copied.iter().flat_map(|s| s.iter()) {
        if e.outcome() == Outcome::Acquired && copy[e.thread() as usize] {
            acquired[blocks.threads[e.thread() as usize] as usize] += 1;
        }
    }
    for (v, n) in b.executions.iter_mut().zip(acquired) {
        v.reserve_exact(n);
    }
    for e in copied.iter().flat_map(|s| s.iter()) {
        if e.outcome() != Outcome::Acquired || !copy[e.thread() as usize] {
            continue;
        }
        let block = blocks
            .rows
            .get(e.primitive(), e.site, e.object)
            .expect("every acquisition's block was made by the first pass");
        let t = blocks.threads[e.thread() as usize];
        b.executions[t as usize].push(Execution {
            block,
            start_ns: e.requested_ns(),
            end_ns: e.acquired_ns(),
        });
    }
    (!streamed.is_empty()).then(|| StreamedLocks {
        set,
        threads: streamed,
        rows: blocks.rows.clone(),
    })
}

/// The maps of the image that wrote a region trace: the maps file with the
/// same stem, else the newest of its pid.
fn region_maps<'r>(recording: &'r Recording, trace: &RegionTrace) -> Option<&'r ProcessMaps> {
    let stem = trace
        .path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())?;
    recording.maps_for_stem(&stem).or_else(|| {
        recording
            .maps_of_pid(trace.pid)
            .into_iter()
            .find_map(|m| m.ok())
    })
}

/// Regions and hooked functions of every region trace.
fn region_executions(
    b: &mut Builder,
    recording: &Recording,
    traces: &[RegionTrace],
    symbols: &Symbols,
    counts: &mut MatchCounts,
) -> (u64, u64) {
    // Region rows by (name, key); the site is the first BEGIN site seen.
    let mut region_rows: FxHashMap<(String, Option<u64>), u32> = FxHashMap::default();
    // Function rows by resolved (name, file) per source.
    let mut function_rows: FxHashMap<(String, Option<String>), u32> = FxHashMap::default();
    let (mut regions, mut functions) = (0u64, 0u64);
    for trace in traces {
        let maps = region_maps(recording, trace);
        let mut fn_block: FxHashMap<u64, u32> = FxHashMap::default();
        let every = trace.function_every.max(1);
        // Region names of this trace, interned: site id → name index.
        let mut names: Vec<String> = Vec::new();
        let mut name_of: FxHashMap<u32, u32> = FxHashMap::default();
        let mut name_index: FxHashMap<String, u32> = FxHashMap::default();
        for (&id, site) in &trace.sites {
            let k = *name_index.entry(site.name.clone()).or_insert_with(|| {
                names.push(site.name.clone());
                (names.len() - 1) as u32
            });
            name_of.insert(id, k);
        }
        for thread in &trace.threads {
            let t = b.thread(trace.pid, thread.tid);
            let mut regs: NameMatcher<u32> = NameMatcher::new();
            let mut fns: FrameMatcher<u32> = FrameMatcher::new();
            // Open regions: (begin site, key) by payload index.
            let mut pending: Vec<(u32, Option<u64>)> = Vec::new();
            for e in &thread.events {
                let ns = recording.region_ns(trace, e.ticks());
                b.saw(t, ns);
                match *e {
                    RegionEvent::Begin { site, .. } | RegionEvent::BeginKey { site, .. } => {
                        let key = match *e {
                            RegionEvent::BeginKey { key, .. } => Some(key),
                            _ => None,
                        };
                        let name = name_of.get(&site).copied().unwrap_or(u32::MAX - site);
                        pending.push((site, key));
                        regs.begin(name, ns, pending.len() - 1);
                    }
                    RegionEvent::End { site, .. } => {
                        let name = name_of.get(&site).copied().unwrap_or(u32::MAX - site);
                        if let Some((start, p)) = regs.end(name) {
                            let (begin_site, key) = pending[p];
                            let blk = region_row(b, &mut region_rows, trace, begin_site, key);
                            b.add(t, blk, start, ns);
                            regions += 1;
                        }
                    }
                    RegionEvent::Enter {
                        function, frame, ..
                    } => {
                        let blk = function_row(
                            b,
                            &mut function_rows,
                            &mut fn_block,
                            maps,
                            symbols,
                            function,
                            every,
                        );
                        fns.enter(blk, frame, ns);
                    }
                    RegionEvent::Exit {
                        function, frame, ..
                    } => {
                        let blk = function_row(
                            b,
                            &mut function_rows,
                            &mut fn_block,
                            maps,
                            symbols,
                            function,
                            every,
                        );
                        if let Some(start) = fns.exit(blk, frame) {
                            b.add(t, blk, start, ns);
                            functions += 1;
                        }
                    }
                }
            }
            for p in regs.finish().into_iter().chain(regs.abandoned.drain(..)) {
                let (begin_site, key) = pending[p];
                let blk = region_row(b, &mut region_rows, trace, begin_site, key);
                b.blocks[blk as usize].unfinished += 1;
            }
            for blk in fns.finish().into_iter().chain(fns.abandoned.drain(..)) {
                b.blocks[blk as usize].unfinished += 1;
            }
            for c in [regs.counts, fns.counts] {
                counts.unmatched_ends += c.unmatched_ends;
                counts.abandoned += c.abandoned;
                counts.unfinished += c.unfinished;
            }
        }
    }
    (regions, functions)
}

fn region_row(
    b: &mut Builder,
    rows: &mut FxHashMap<(String, Option<u64>), u32>,
    trace: &RegionTrace,
    begin_site: u32,
    key: Option<u64>,
) -> u32 {
    let site = trace.sites.get(&begin_site);
    let name = site
        .map(|s| s.name.clone())
        .unwrap_or_else(|| format!("<undefined site {begin_site}>"));
    if let Some(&blk) = rows.get(&(name.clone(), key)) {
        return blk;
    }
    let blk = b.block(BlockDef {
        kind: BlockKind::Region,
        name: Arc::from(name.as_str()),
        key: key.map(|k| Arc::from(k.to_string())),
        site: Arc::new(
            site.map(|s| BlockSite {
                function: Some(s.function.clone()).filter(|f| !f.is_empty()),
                file: Some(s.file.clone()).filter(|f| !f.is_empty()),
                line: Some(s.line),
                ..BlockSite::default()
            })
            .unwrap_or_default(),
        ),
        every: 1,
        unfinished: 0,
    });
    rows.insert((name, key), blk);
    blk
}

#[allow(clippy::too_many_arguments)]
fn function_row(
    b: &mut Builder,
    rows: &mut FxHashMap<(String, Option<String>), u32>,
    cache: &mut FxHashMap<u64, u32>,
    maps: Option<&ProcessMaps>,
    symbols: &Symbols,
    address: u64,
    every: u32,
) -> u32 {
    if let Some(&blk) = cache.get(&address) {
        return blk;
    }
    // The symbolizer looks a return address up at address − 1: give it the
    // function's first instruction + 1.
    let r = symbols.site(maps, address.wrapping_add(1));
    let name = r
        .function
        .clone()
        .unwrap_or_else(|| format!("{address:#x}"));
    let id = (format!("hook:{name}"), r.module.clone());
    let blk = match rows.get(&id) {
        Some(&blk) => blk,
        None => {
            let blk = b.block(BlockDef {
                kind: BlockKind::Function,
                name: Arc::from(name),
                key: None,
                site: Arc::new(site_of(&r)),
                every,
                unfinished: 0,
            });
            rows.insert(id, blk);
            blk
        }
    };
    cache.insert(address, blk);
    blk
}

/// The stack pointer a uprobe reports right after a return is the entry's
/// plus the return address the `ret` popped (x86-64: 8 bytes).
const RETURN_SP_ADJUST: u64 = 8;

/// Function executions from the uprobes, per thread by time, matched by
/// stack pointer; only the recorded process tree's threads (the launcher
/// already dropped other processes' hits).
fn probe_executions(
    b: &mut Builder,
    probes: &ProbeRecording,
    symbols: &Symbols,
    counts: &mut MatchCounts,
) -> u64 {
    let m = &probes.manifest;
    if m.probes.is_empty() {
        return 0;
    }
    let every = m.every.max(1);
    let blocks: Vec<u32> = m
        .probes
        .iter()
        .map(|p| {
            let site = probe_site(p, symbols);
            b.block(BlockDef {
                kind: BlockKind::Function,
                name: Arc::from(contend_symbolize::demangle(&p.function)),
                key: None,
                site: Arc::new(site),
                every,
                unfinished: 0,
            })
        })
        .collect();
    let mut by_thread: BTreeMap<(u32, u32), Vec<usize>> = BTreeMap::new();
    for (i, e) in probes.events.iter().enumerate() {
        if matches!(e.kind, ProbeEventKind::Entry | ProbeEventKind::Return)
            && (e.probe as usize) < blocks.len()
        {
            by_thread.entry((e.pid, e.tid)).or_default().push(i);
        }
    }
    let mut n = 0;
    for ((pid, tid), mut idx) in by_thread {
        idx.sort_by_key(|&i| probes.events[i].time_ns);
        let t = b.thread(pid, tid);
        let mut fm: FrameMatcher<u32> = FrameMatcher::new();
        for i in idx {
            let e = probes.events[i];
            let blk = blocks[e.probe as usize];
            b.saw(t, e.time_ns);
            if e.kind == ProbeEventKind::Entry {
                fm.enter(blk, e.arg, e.time_ns);
            } else if let Some(start) = fm.exit(blk, e.arg.wrapping_sub(RETURN_SP_ADJUST)) {
                b.add(t, blk, start, e.time_ns);
                n += 1;
            }
        }
        for blk in fm.finish().into_iter().chain(fm.abandoned.drain(..)) {
            b.blocks[blk as usize].unfinished += 1;
        }
        counts.unmatched_ends += fm.counts.unmatched_ends;
        counts.abandoned += fm.counts.abandoned;
        counts.unfinished += fm.counts.unfinished;
    }
    n
}

/// file:line of a probed function, from its module (a mapping made up for
/// the purpose: the symbolizer needs an address in a mapped file).
fn probe_site(p: &contend_trace::probes::ProbeSpec, symbols: &Symbols) -> BlockSite {
    const BASE: u64 = 0x1000_0000;
    let page = p.file_offset & !0xfff;
    let text = format!(
        "{BASE:x}-{:x} r-xp {page:08x} 00:00 0 {}\n",
        BASE + (p.file_offset - page) + p.size.max(1) + 0x1000,
        p.module
    );
    let maps = ProcessMaps::parse(&text);
    let r = symbols.site(Some(&maps), BASE + (p.file_offset - page) + 1);
    BlockSite {
        function: Some(contend_symbolize::demangle(&p.function)),
        ..site_of(&r)
    }
}

/// Thread lifetimes from the probe recording's task events: (pid, tid) →
/// (start, end) ns, either side unknown as `None`.
fn lifetimes(
    probes: &ProbeRecording,
    root_start: Option<u64>,
) -> FxHashMap<(u32, u32), (Option<u64>, Option<u64>)> {
    let mut life: FxHashMap<(u32, u32), (Option<u64>, Option<u64>)> = FxHashMap::default();
    let root = probes.manifest.root_pid;
    // (a thread's name says nothing of its lifetime)
    for e in probes
        .events
        .iter()
        .filter(|e| e.kind != ProbeEventKind::ThreadName)
    {
        let slot = life.entry((e.pid, e.tid)).or_insert((None, None));
        match e.kind {
            ProbeEventKind::ThreadStart => {
                slot.0 = Some(slot.0.map_or(e.time_ns, |s| s.min(e.time_ns)));
            }
            ProbeEventKind::Exec if e.pid == root && slot.0.is_none() => {
                slot.0 = Some(e.time_ns);
            }
            ProbeEventKind::ThreadExit => {
                slot.1 = Some(slot.1.map_or(e.time_ns, |s| s.max(e.time_ns)));
            }
            _ => {}
        }
    }
    // The root's main thread was created before the events were enabled.
    if root != 0 {
        let slot = life.entry((root, root)).or_insert((None, None));
        if let (None, Some(s)) = (slot.0, root_start) {
            slot.0 = Some(s);
        }
    }
    life
}

/// Every execution of the recording, with the threads and their T_t.
pub fn gather(recording: &Recording, symbols: &Symbols) -> Gathered<'static> {
    gather_with(recording, symbols, None, None)
}

/// The lock section's name of each lock object
/// ([`crate::locks::ObjectNames`]): a lock block's key is named as the
/// lock's rows name it (`mutex created at cache.c:41 (cache_new)`,
/// `CPython GIL mutex (…)`) instead of by its symbol or address alone.
pub use crate::locks::ObjectNames;

/// [`gather`] taking the lock executions from `paired`, the lock
/// analysis's events (paired, call sites moved through recorded stacks and
/// through no `--wrapper`), instead of pairing the lock operations again:
/// the same executions without a second copy of every event in memory.
pub fn gather_with<'s>(
    recording: &Recording,
    symbols: &Symbols,
    paired: Option<&'s EventSet>,
    names: Option<&ObjectNames>,
) -> Gathered<'s> {
    let mut g = Gathered::default();
    let mut b = Builder::default();
    let (lock_n, lock_blocks) = lock_executions(&mut b, recording, symbols, paired, names);
    g.executions[0] = lock_n;
    match &recording.regions {
        Some(Ok(r)) => {
            g.warnings.extend(
                r.unreadable
                    .iter()
                    .map(|e| format!("{e}; its regions and functions are left out")),
            );
            for t in &r.traces {
                for d in &t.damage {
                    g.warnings.push(format!("{} (pid {}): {d}", t.path.display(), t.pid));
                }
                if t.flags & contend_trace::region_format::FLAG_SITES_FULL != 0 {
                    g.warnings.push(format!(
                        "{}: more than {} region sites: later ones were not recorded",
                        t.path.display(),
                        contend_trace::region_format::SITE_MAX
                    ));
                }
                if t.flags & contend_trace::region_format::FLAG_START_LOST != 0 {
                    g.warnings.push(format!(
                        "{} (pid {}): creating the region trace took longer than 2 s: region executions \
                         of other threads meanwhile may not have been recorded",
                        t.path.display(),
                        t.pid
                    ));
                }
            }
            let (r_n, f_n) = region_executions(&mut b, recording, &r.traces, symbols, &mut g.counts);
            g.executions[1] = r_n;
            g.executions[2] = f_n;
        }
        Some(Err(e)) => g.warnings.push(format!(
            "the region traces cannot be read ({e}); regions and instrumented functions are left out"
        )),
        None => {}
    }
    // The lock executions of threads with no others stay in the events.
    g.streamed = lock_blocks.and_then(|l| place_lock_executions(&mut b, &l, true));
    let root_start = recording.meta.as_ref().map(|m| m.start_monotonic_ns);
    let mut life = FxHashMap::default();
    match &recording.probes {
        Some(Ok(p)) => {
            g.executions[2] += probe_executions(&mut b, p, symbols, &mut g.counts);
            let m = &p.manifest;
            g.warnings
                .extend(contend_trace::probes::refusal_warnings(&m.refused, true));
            for e in &m.errors {
                g.warnings.push(e.clone());
            }
            if m.lost > 0 {
                g.warnings.push(format!(
                    "the kernel dropped {} probe or thread record(s) (ring buffer full): some executions are missing",
                    m.lost
                ));
            }
            if p.truncated_bytes > 0 {
                g.warnings.push(format!(
                    "{}: the last {} byte(s) are a cut-off record (the launcher was stopped while writing)",
                    recording
                        .dir
                        .join(contend_trace::probes::DIR)
                        .join(contend_trace::probes::EVENTS)
                        .display(),
                    p.truncated_bytes
                ));
            }
            if m.thread_events {
                life = lifetimes(p, root_start);
                if m.thread_events_scope == contend_trace::probes::THREAD_EVENTS_PER_TASK {
                    g.lifetime_note = Some(
                        "thread lifetimes were followed by kernel events inherited by the program's threads (events \
                         for the whole machine need root, CAP_PERFMON or kernel.perf_event_paranoid <= 0): they cost \
                         the program time at each of its context switches, so one that switches often ran slower \
                         while recorded (docs/sci.md)"
                            .into(),
                    );
                }
            } else {
                g.lifetime_note = Some(
                    "the kernel's task events were not recorded, so each thread's duration is taken from its first \
                     to its last recorded event (a lower bound: SCI may be overstated)"
                        .into(),
                );
            }
        }
        Some(Err(e)) => {
            g.warnings.push(format!(
                "the probe records cannot be read ({e}); functions probed with --function and thread lifetimes are left out"
            ));
            g.lifetime_note = Some(
                "thread durations are taken from each thread's first to last recorded event (a lower bound)".into(),
            );
        }
        None => {
            g.lifetime_note = Some(
                "this recording has no thread lifetimes (made before they were recorded, or without perf events), so \
                 each thread's duration is taken from its first to its last recorded event (a lower bound: SCI may be \
                 overstated)"
                    .into(),
            );
        }
    }
    let end_of_run = recording.meta.as_ref().and_then(|m| m.end_monotonic_ns);
    let mut threads = Vec::with_capacity(b.threads.len());
    for (i, &(pid, tid)) in b.threads.iter().enumerate() {
        let (first, last) = b.spans[i];
        let (first, last) = if first == u64::MAX {
            (0, 0)
        } else {
            (first, last)
        };
        let (def, known) = match life.get(&(pid, tid)) {
            Some(&(Some(s), e)) => {
                let end = e.or(end_of_run).unwrap_or(last).max(last);
                // (an event before the recorded start can only be clock skew)
                let start = if first > 0 { s.min(first) } else { s };
                (end.saturating_sub(start), true)
            }
            _ => (last.saturating_sub(first), false),
        };
        if known {
            g.threads_with_lifetimes += 1;
        }
        threads.push(ThreadDef {
            pid,
            tid,
            duration_ns: def,
            source: if known {
                DurationSource::TaskEvents
            } else {
                DurationSource::RecordedEvents
            },
        });
    }
    if !life.is_empty() && (g.threads_with_lifetimes as usize) < threads.len() {
        g.lifetime_note = Some(format!(
            "{} of {} thread(s) have no lifetime in the kernel's task events (records lost, or threads of processes \
             outside the recorded tree); their duration is taken from their first to last recorded event",
            threads.len() - g.threads_with_lifetimes as usize,
            threads.len()
        ));
    }
    g.counted_without_lock = b.counted_without_lock;
    // The blocks stay until the rows are scored, at the analysis's peak:
    // without the room their vector grew into (up to half of it).
    b.blocks.shrink_to_fit();
    g.input = ScoreInput {
        blocks: b.blocks,
        threads,
        executions: b.executions,
        counted: b.counted,
    };
    g
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::locks::{LockEvent, LockEventFields};

    /// A mutex acquisition at site 0 by `thread`: requested at `at`,
    /// acquired `wait` ns later, held 10 ns.
    fn event(thread: u32, object: u32, at: u64, wait: u64) -> LockEvent {
        LockEventFields {
            thread,
            object,
            site: 0,
            primitive: Primitive::Mutex,
            outcome: Outcome::Acquired,
            requested_ns: at,
            acquired_ns: at + wait,
            released_ns: at + wait + 10,
            contended: wait > 0,
            unreleased: false,
        }
        .pack()
    }

    /// A thread with other executions (a region) has its lock calls
    /// copied, read from its own range of the events; a lock-only thread
    /// stays streamed and nothing of it is copied.
    #[test]
    fn only_the_copied_threads_lock_calls_are_copied() {
        let set = EventSet {
            events: vec![
                event(0, 0, 100, 5),
                event(0, 1, 200, 0),
                event(0, 0, 300, 7),
                event(1, 1, 150, 3),
                event(1, 0, 250, 0),
            ],
            threads: (0..2)
                .map(|t| crate::locks::events::ThreadInfo {
                    pid: 1,
                    tid: 10 + t,
                    process: 0,
                    first_ns: 100,
                    last_ns: 400,
                    name: None,
                })
                .collect(),
            ..EventSet::default()
        };
        let mut b = Builder {
            blocks: Vec::new(),
            threads: vec![(1, 10), (1, 11)],
            thread_index: FxHashMap::default(),
            executions: vec![
                Vec::new(),
                vec![Execution {
                    block: 2,
                    start_ns: 140,
                    end_ns: 400,
                }],
            ],
            spans: vec![(u64::MAX, 0); 2],
            ..Builder::default()
        };
        let mut rows = LockRows::for_set(&set);
        rows.insert(Primitive::Mutex, 0, 0, 0);
        rows.insert(Primitive::Mutex, 0, 1, 1);
        let blocks = LockBlocks {
            set: &set,
            rows,
            threads: vec![0, 1],
            ranges: Some(vec![(0..3, true), (3..5, true)]),
        };
        let streamed = place_lock_executions(&mut b, &blocks, true).expect("streamed");
        assert_eq!(streamed.threads, vec![(0, 0..3)]);
        assert!(b.executions[0].is_empty());
        let copied: Vec<(u32, u64, u64)> = b.executions[1]
            .iter()
            .map(|e| (e.block, e.start_ns, e.end_ns))
            .collect();
        assert_eq!(copied, vec![(2, 140, 400), (1, 150, 153), (0, 250, 250)]);
    }

    /// The first pass takes each thread's range of events from pairing's
    /// `thread_ranges` (none for a set built without them),
    /// and which threads' calls each begin after the one before returned
    /// (thread 1's second call begins inside its first: it does not
    /// qualify for streaming). Two blocks: (mutex, site 0, object 0) and
    /// (mutex, site 0, object 1), numbered as first met.
    #[test]
    fn first_pass_gives_ranges_blocks_and_qualifying_threads() {
        let set_of = |events: Vec<LockEvent>| EventSet {
            events,
            threads: (0..2)
                .map(|t| crate::locks::events::ThreadInfo::of_tid(10 + t))
                .collect(),
            objects: (0..3)
                .map(|o| crate::locks::events::ObjectKey {
                    process: 0,
                    address: 0x1000 + o,
                })
                .collect(),
            sites: vec![crate::locks::events::SiteKey {
                process: 0,
                address: 0x40_0000,
            }],
            ..EventSet::default()
        };
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/golden/recordings/sharequeue-two.data");
        let recording = Recording::open(&dir).unwrap();
        let symbols = Symbols::new();
        let builder = Builder::default;
        let grouped = EventSet {
            thread_ranges: vec![0..2, 2..5],
            ..set_of(vec![
                event(0, 1, 100, 5),
                event(0, 0, 200, 0),
                event(1, 0, 150, 30),
                event(1, 1, 160, 0),
                event(1, 0, 300, 0),
            ])
        };
        let mut b = builder();
        let mut resolver = ProcessResolver::new(&recording, &symbols);
        let (blocks, n) = lock_blocks(&mut b, &mut resolver, &grouped, None);
        assert_eq!(n, 5);
        assert_eq!(blocks.ranges, Some(vec![(0..2, true), (2..5, false)]));
        assert_eq!(blocks.rows.get(Primitive::Mutex, 0, 1), Some(0));
        assert_eq!(blocks.rows.get(Primitive::Mutex, 0, 0), Some(1));
        assert_eq!(b.spans, vec![(100, 200), (150, 300)]);
        // A set that does not say where its threads' events are: no ranges.
        let split = set_of(vec![
            event(0, 1, 100, 5),
            event(1, 0, 150, 0),
            event(0, 0, 200, 0),
        ]);
        let mut b = builder();
        let (blocks, _) = lock_blocks(&mut b, &mut resolver, &split, None);
        assert_eq!(blocks.ranges, None);
        // Surveyed in two parts side by side (cut between the threads) or
        // in one: the same blocks, numbered as first met in event order
        // (object 2 first appears in the second part, object 0 in both),
        // the same spans and qualifying threads.
        let events = vec![
            event(0, 1, 100, 5),
            event(0, 0, 200, 0),
            event(0, 1, 210, 0),
            event(1, 2, 150, 30),
            event(1, 0, 190, 0),
            event(1, 2, 300, 0),
        ];
        let two = EventSet {
            thread_ranges: vec![0..3, 3..6],
            ..set_of(events.clone())
        };
        assert_eq!(survey_parts(&two), vec![0..3, 3..6]);
        let one = set_of(events);
        assert_eq!(
            survey_parts(&one),
            std::iter::once(0..6).collect::<Vec<_>>()
        );
        let (mut b2, mut b1) = (builder(), builder());
        let (blocks2, n2) = lock_blocks(&mut b2, &mut resolver, &two, None);
        let (blocks1, n1) = lock_blocks(&mut b1, &mut resolver, &one, None);
        assert_eq!((n2, n1), (6, 6));
        for (object, block) in [(1, 0), (0, 1), (2, 2)] {
            assert_eq!(blocks2.rows.get(Primitive::Mutex, 0, object), Some(block));
            assert_eq!(blocks1.rows.get(Primitive::Mutex, 0, object), Some(block));
        }
        let keys = |b: &Builder| b.blocks.iter().map(|d| d.key.clone()).collect::<Vec<_>>();
        assert_eq!(keys(&b2), keys(&b1));
        assert_eq!(b2.blocks.len(), 3);
        assert_eq!(b2.spans, vec![(100, 210), (150, 300)]);
        assert_eq!(b2.spans, b1.spans);
        assert_eq!(blocks2.ranges, Some(vec![(0..3, true), (3..6, true)]));
    }
}
