//! The SCI metric on executions of blocks (Mosli Bouksiaa et al., "Using
//! differential execution analysis to identify thread interference", TPDS
//! 2019, Section 2), independent of where the executions came from.
//!
//! For a block b (a row: a block and, for parameter-dependent blocks, one
//! key) executed by thread t:
//!
//! ```text
//! SCI(b, t) = Σ_j (d_j − d_min(b)) / T_t
//! ```
//!
//! where d_j is the duration of t's j-th execution of b, d_min(b) the
//! fastest execution of b by any thread and T_t the thread's duration.
//! Aggregated per block: SCI(b) = Σ_t Σ_j (d_j − d_min(b)) / Σ_t T_t over
//! the threads that executed b, and the largest SCI(b, t).
//!
//! Decisions (docs/sci.md):
//! - Durations are inclusive: an execution includes the blocks nested in
//!   it (in the same thread, by time containment, whatever their source).
//!   The exclusive duration subtracts the direct children; the exclusive
//!   excess is Σ (x_j − x_min(b)) over exclusive durations.
//! - An execution nested in another execution of the same block (direct
//!   or indirect recursion) is not scored: its time is inside the outer
//!   one, and scoring both would count it twice. It is counted in
//!   `recursive`.
//! - A block executed fewer than [`MIN_OCCURRENCES`] times gets no score,
//!   only a note (Section 5.3: "if a function is called few times, the
//!   probability of capturing an interference-free execution becomes
//!   low").
//! - With sampling (one call in N recorded, Section 3.2.3) the excess of
//!   the recorded calls is multiplied by N, an estimate of the excess of
//!   all calls.

use crate::chunked_sort;
use rayon::prelude::*;
use rustc_hash::FxHashMap;
use serde::Serialize;
use std::sync::Arc;

/// Executions below this count get no score (Section 5.3).
pub const MIN_OCCURRENCES: u64 = 10;

/// The fastest executions looked at for stability: this share of them
/// (at least two).
pub const FASTEST_SHARE: f64 = 0.01;
/// The fastest executions are unstable when the slowest of them takes more
/// than this many times the fastest …
pub const FASTEST_SPREAD_MAX: f64 = 2.0;
/// … and more than this many ns longer (below it, timer resolution and
/// cache effects dominate).
pub const FASTEST_SPREAD_FLOOR_NS: u64 = 100;

/// What kind of code a block is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BlockKind {
    /// A lock acquisition call (mutex, rwlock, spinlock), keyed by the lock.
    Lock,
    /// A condition-variable wait, keyed by the condition variable.
    Cond,
    /// A barrier wait, keyed by the barrier.
    Barrier,
    /// A semaphore wait, keyed by the semaphore.
    Semaphore,
    /// A `pthread_join` wait, keyed by the joined thread.
    Join,
    /// A region of `contend/region.h`.
    Region,
    /// A function (uprobe or `-finstrument-functions`).
    Function,
}

impl BlockKind {
    /// `lock`, `cond`, `barrier`, `semaphore`, `join`, `region`, `function`.
    pub fn name(self) -> &'static str {
        match self {
            BlockKind::Lock => "lock",
            BlockKind::Cond => "cond",
            BlockKind::Barrier => "barrier",
            BlockKind::Semaphore => "semaphore",
            BlockKind::Join => "join",
            BlockKind::Region => "region",
            BlockKind::Function => "function",
        }
    }

    /// Whether executions of the block wait for another thread to act: a
    /// condition variable for its signal, a barrier for the last arrival,
    /// a semaphore for a post, a join for the joined thread's end (`cond`,
    /// `barrier`, `semaphore`, `join`). Such a
    /// block's excess is mostly time idle until that thread acts (a worker
    /// waiting for work, a fast thread waiting for the slowest), which
    /// differential execution cannot tell from interference (Mosli
    /// Bouksiaa et al. 2019 score code that computes or contends: Section
    /// 2); lock, region and function blocks are not such waits.
    pub fn waits_for_another_thread(self) -> bool {
        matches!(
            self,
            BlockKind::Cond | BlockKind::Barrier | BlockKind::Semaphore | BlockKind::Join
        )
    }
}

/// Where a block is in the source.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize)]
pub struct BlockSite {
    /// Function.
    pub function: Option<String>,
    /// Source file.
    pub file: Option<String>,
    /// Source line.
    pub line: Option<u32>,
    /// Path of the module the site is in (`/usr/bin/memcached`), when
    /// known: what names a site without debug information. As in
    /// `locks.by_site`.
    pub module: Option<String>,
    /// Offset of the site in the module, hexadecimal (`0x13062`), with
    /// `module`. As in `locks.by_site`.
    pub offset: Option<String>,
}

impl BlockSite {
    /// `function (file:line)`, or what is known of it: `module+0x…` (the
    /// form the lock section gives a site without debug information), `?`
    /// when nothing is.
    pub fn display(&self) -> String {
        // the last component of a path, as a table shows it
        let file_name = |path: &String| {
            std::path::Path::new(path)
                .file_name()
                .map_or_else(|| path.clone(), |n| n.to_string_lossy().into_owned())
        };
        let place = match (&self.file, self.line) {
            (Some(f), Some(l)) => Some(format!("{}:{l}", file_name(f))),
            (Some(f), None) => Some(f.clone()),
            _ => None,
        };
        match (&self.function, place, &self.module) {
            (Some(func), Some(p), _) => format!("{func} ({p})"),
            (Some(func), None, _) => func.clone(),
            (None, Some(p), _) => p,
            (None, None, Some(m)) => match &self.offset {
                Some(off) => format!("{}+{off}", file_name(m)),
                None => file_name(m),
            },
            (None, None, None) => "?".into(),
        }
    }
}

/// One row to score: a block and, for a parameter-dependent one, one key.
#[derive(Debug, Clone, PartialEq)]
pub struct BlockDef {
    /// Kind.
    pub kind: BlockKind,
    /// Name: the lock function called, the region's name, the function's.
    /// Shared (`Arc`) with the row scored from it and with the other
    /// blocks of the same name: memcached's recording has 21,882 lock
    /// blocks, and a copy of each text per block and per row was 6 MB of
    /// the analysis's peak.
    pub name: Arc<str>,
    /// The key the executions were compared under (lock object, region
    /// key), `None` for unkeyed blocks; shared as `name` is.
    pub key: Option<Arc<str>>,
    /// Where it is; shared by the blocks at the same call site.
    pub site: Arc<BlockSite>,
    /// One execution in N was recorded (1 = all).
    pub every: u32,
    /// Executions that began but never ended before their thread's trace
    /// did (exit inside the block, a crash, a lost record).
    pub unfinished: u64,
}

/// How a thread's duration T_t was measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DurationSource {
    /// From its creation to its exit, by the kernel's task events.
    TaskEvents,
    /// From its first to its last recorded event (lock operation, block
    /// entry or exit): a lower bound.
    RecordedEvents,
}

/// A thread with its duration.
#[derive(Debug, Clone, PartialEq)]
pub struct ThreadDef {
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// T_t, ns.
    pub duration_ns: u64,
    /// How T_t was measured.
    pub source: DurationSource,
}

/// One execution of a block (a row of the input) by a thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Execution {
    /// Index into the input's blocks.
    pub block: u32,
    /// Entry, CLOCK_MONOTONIC ns.
    pub start_ns: u64,
    /// Exit, ns (≥ `start_ns`).
    pub end_ns: u64,
}

/// Everything the metric needs.
#[derive(Debug, Clone, Default)]
pub struct ScoreInput {
    /// The rows.
    pub blocks: Vec<BlockDef>,
    /// The threads.
    pub threads: Vec<ThreadDef>,
    /// Per thread (same order as `threads`), its executions in any order.
    pub executions: Vec<Vec<Execution>>,
    /// Executions known only by their number, each of 0 ns: the
    /// uncontended acquisitions a light recording counted without
    /// timestamps (`contend record --light`), which a full recording times
    /// once (request = acquisition). They enter their rows as the 0 ns
    /// executions of a full recording do (the fastest, the quantiles, the
    /// per-thread counts) and add no excess.
    pub counted: Vec<CountedExecutions>,
}

/// Executions of one block by one thread known only by their number, 0 ns
/// each ([`ScoreInput::counted`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CountedExecutions {
    /// Index into the input's threads.
    pub thread: u32,
    /// Index into the input's blocks.
    pub block: u32,
    /// Executions.
    pub count: u64,
}

/// A point of the sorted durations (the paper's Figure 7).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Quantile {
    /// Share of executions at or below, in [0, 1].
    pub q: f64,
    /// Duration, ns (nearest rank).
    pub ns: u64,
}

/// A row's sorted durations at the levels of [`QUANTILES`], held in the
/// row: 4 bytes a level when the slowest fits (under 4.3 s, nearly
/// always), else 8 on the heap. A list of 23 [`Quantile`]s took a 24-byte
/// vector header and 368 bytes on the heap; this takes 96 bytes, about
/// 6.5 MB less for memcached's 21,837 rows. Empty for a row without
/// executions. Serialised as the list of [`Quantile`]s (JSON
/// `sci.blocks[].quantiles`, docs/json.md).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Quantiles(QuantileValues);

/// The durations (ns) at the levels of [`QUANTILES`].
#[derive(Debug, Clone, PartialEq, Eq)]
enum QuantileValues {
    Empty,
    Narrow([u32; QUANTILES.len()]),
    Wide(Box<[u64; QUANTILES.len()]>),
}

impl Quantiles {
    /// No executions: no quantiles.
    pub const EMPTY: Quantiles = Quantiles(QuantileValues::Empty);

    /// The quantiles of `len` sorted durations whose k-th smallest is
    /// `at(k)` ns (nearest rank: k = round(q × (len − 1))); empty when
    /// `len` is 0.
    pub fn of_sorted(len: usize, at: impl Fn(usize) -> u64) -> Quantiles {
        if len == 0 {
            return Quantiles::EMPTY;
        }
        let mut ns = [0u64; QUANTILES.len()];
        for (slot, &q) in ns.iter_mut().zip(&QUANTILES) {
            *slot = at(((q * (len - 1) as f64).round() as usize).min(len - 1));
        }
        if ns.iter().all(|&v| u32::try_from(v).is_ok()) {
            Quantiles(QuantileValues::Narrow(ns.map(|v| v as u32)))
        } else {
            Quantiles(QuantileValues::Wide(Box::new(ns)))
        }
    }

    /// The duration at level `k` of [`QUANTILES`], ns (`None` when empty).
    fn ns(&self, k: usize) -> Option<u64> {
        match &self.0 {
            QuantileValues::Empty => None,
            QuantileValues::Narrow(v) => Some(u64::from(v[k])),
            QuantileValues::Wide(v) => Some(v[k]),
        }
    }

    /// The quantiles, lowest level first (none when empty).
    pub fn iter(&self) -> impl Iterator<Item = Quantile> + '_ {
        QUANTILES
            .iter()
            .enumerate()
            .map_while(|(k, &q)| self.ns(k).map(|ns| Quantile { q, ns }))
    }

    /// The highest level's (q = 1: the slowest execution), `None` when empty.
    pub fn last(&self) -> Option<Quantile> {
        let k = QUANTILES.len() - 1;
        self.ns(k).map(|ns| Quantile {
            q: QUANTILES[k],
            ns,
        })
    }

    /// True for a row without executions.
    pub fn is_empty(&self) -> bool {
        self.0 == QuantileValues::Empty
    }
}

impl Serialize for Quantiles {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.iter())
    }
}

/// A log2 bucket of durations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct DurationBucket {
    /// Inclusive lower bound, ns (0 for the first bucket).
    pub lower_ns: u64,
    /// Exclusive upper bound, ns.
    pub upper_ns: u64,
    /// Executions in the bucket.
    pub count: u64,
}

/// A row's durations per log2 bucket ([0, 1), [1, 2), [2, 4), … ns),
/// held as the counts of the buckets from the fastest execution's to the
/// slowest's (empty ones between included, 8 bytes each) instead of a
/// list of [`DurationBucket`]s (24 bytes each, in a vector grown by
/// doubling): about 200 bytes less per row (4 MB for memcached's 21,837
/// rows). Serialised as the list of non-empty [`DurationBucket`]s,
/// ascending (JSON `sci.blocks[].histogram`, docs/json.md).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DurationHistogram {
    /// Bucket of `counts[0]`: 0 holds 0 ns, k ≥ 1 holds [2^(k−1), 2^k).
    first: u8,
    /// Executions per bucket, from `first` on.
    counts: Box<[u64]>,
}

impl DurationHistogram {
    /// The bucket of a duration of `ns` ns (0 for 0 ns).
    fn bucket(ns: u64) -> usize {
        (64 - ns.leading_zeros()) as usize
    }

    /// The histogram of durations (ns) in any order.
    pub fn of(durations: impl Iterator<Item = u64>) -> DurationHistogram {
        let mut counts = [0u64; 65];
        for d in durations {
            counts[Self::bucket(d)] += 1;
        }
        let Some(first) = counts.iter().position(|&c| c > 0) else {
            return DurationHistogram::default();
        };
        let last = counts.iter().rposition(|&c| c > 0).unwrap_or(first);
        DurationHistogram {
            first: first as u8,
            counts: counts[first..=last].into(),
        }
    }

    /// The non-empty buckets, ascending.
    pub fn iter(&self) -> impl Iterator<Item = DurationBucket> + '_ {
        let first = usize::from(self.first);
        self.counts
            .iter()
            .enumerate()
            .filter(|&(_, &count)| count > 0)
            .map(move |(k, &count)| {
                let b = (first + k) as u32;
                let (lower_ns, upper_ns) = if b == 0 {
                    (0, 1)
                } else {
                    (1u64 << (b - 1), 1u64.checked_shl(b).unwrap_or(u64::MAX))
                };
                DurationBucket {
                    lower_ns,
                    upper_ns,
                    count,
                }
            })
    }

    /// The slowest non-empty bucket, `None` when there are no durations.
    pub fn last(&self) -> Option<DurationBucket> {
        self.iter().last()
    }

    /// True when there are no durations.
    pub fn is_empty(&self) -> bool {
        self.counts.is_empty()
    }
}

impl Serialize for DurationHistogram {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.iter())
    }
}

/// One block's score in one thread.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BlockThreadScore {
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// Executions scored in this thread.
    pub occurrences: u64,
    /// Σ (d_j − d_min), ns (× N when sampled).
    pub excess_ns: u64,
    /// SCI(b, t) = excess / T_t; `None` below [`MIN_OCCURRENCES`] executions
    /// of the block (all threads) or when T_t is 0.
    pub sci: Option<f64>,
}

/// One scored row (JSON `sci.blocks[]`; docs/json.md).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SciBlock {
    /// Name: the lock function called, the region's, the function's
    /// (shared with its [`BlockDef`]).
    pub name: Arc<str>,
    /// Kind.
    pub kind: BlockKind,
    /// The key (lock object, region key); `null` for unkeyed blocks.
    pub key: Option<Arc<str>>,
    /// Where it is in the source (shared with its [`BlockDef`]).
    pub site: Arc<BlockSite>,
    /// Executions scored (recorded ones; not nested in one of the same block).
    pub occurrences: u64,
    /// d_min: the fastest execution, ns.
    pub min_ns: u64,
    /// Median duration (lower median), ns.
    pub median_ns: u64,
    /// Mean duration, ns.
    pub mean_ns: u64,
    /// Σ durations, ns.
    pub total_ns: u64,
    /// Σ (d_j − d_min), ns; × N when one call in N was recorded.
    pub excess_ns: u64,
    /// SCI(b) = excess / Σ T_t over the threads that executed the block;
    /// `null` below [`MIN_OCCURRENCES`] executions.
    pub sci: Option<f64>,
    /// max_t SCI(b, t); `null` when `sci` is.
    pub sci_max_thread: Option<f64>,
    /// The fastest exclusive duration (children subtracted), ns.
    pub exclusive_min_ns: u64,
    /// Σ exclusive durations, ns.
    pub exclusive_total_ns: u64,
    /// Σ (x_j − x_min), ns (× N when sampled).
    pub exclusive_excess_ns: u64,
    /// exclusive excess / Σ T_t; `null` when `sci` is.
    pub sci_exclusive: Option<f64>,
    /// Threads that executed the block.
    pub threads: u32,
    /// Σ T_t of those threads, ns.
    pub thread_duration_ns: u64,
    /// Executions nested in an execution of the same block (recursion):
    /// counted here, not scored.
    pub recursive: u64,
    /// Executions that never ended (not scored).
    pub unfinished: u64,
    /// One execution in N was recorded (1 = all).
    pub sampled_every: u32,
    /// The fastest 1% of executions (at least two): the fastest and the
    /// slowest of them, ns.
    pub fastest_1pct_ns: [u64; 2],
    /// False when the fastest executions spread more than 2× (and more than
    /// 100 ns): the fastest may not be interference-free.
    pub stable: bool,
    /// Sorted durations at q = 0, 0.01, 0.05, 0.10, …, 0.95, 0.99, 1.
    pub quantiles: Quantiles,
    /// Durations per log2 bucket, only buckets with executions, ascending.
    pub histogram: DurationHistogram,
    /// Per thread, largest excess first.
    pub per_thread: Vec<BlockThreadScore>,
    /// Why there is no score, or what to be careful about.
    pub note: Option<String>,
}

/// One thread (JSON `sci.threads[]`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SciThread {
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// T_t, ns.
    pub duration_ns: u64,
    /// How it was measured.
    pub duration_source: DurationSource,
    /// Executions of any block scored in this thread.
    pub occurrences: u64,
    /// Σ excess of its scored executions over all blocks, ns.
    pub excess_ns: u64,
}

/// The quantile levels reported.
pub const QUANTILES: [f64; 23] = [
    0.0, 0.01, 0.05, 0.10, 0.15, 0.20, 0.25, 0.30, 0.35, 0.40, 0.45, 0.50, 0.55, 0.60, 0.65, 0.70,
    0.75, 0.80, 0.85, 0.90, 0.95, 0.99, 1.0,
];

/// Per thread: its scored executions and the recursive ones per block.
struct ThreadPass {
    /// The scored executions, written over the thread's executions (no
    /// second array): `block`, inclusive duration ns in `start_ns`,
    /// exclusive duration ns in `end_ns`.
    scored: Vec<Execution>,
    recursive: Vec<u32>,
}

/// Nesting within one thread: sorts by (start, longest first) and sweeps
/// with a stack; the parent of an execution is the innermost open one that
/// contains it.
fn thread_pass(mut order: Vec<Execution>) -> ThreadPass {
    order.sort_unstable_by(|a, b| {
        a.start_ns
            .cmp(&b.start_ns)
            .then(b.end_ns.cmp(&a.end_ns))
            .then(a.block.cmp(&b.block))
    });
    let n = order.len();
    let mut children = vec![0u64; n];
    let mut recursive_flag = vec![false; n];
    let mut stack: Vec<usize> = Vec::new();
    let mut depth: FxHashMap<u32, u32> = FxHashMap::default();
    for i in 0..n {
        let e = order[i];
        while let Some(&top) = stack.last() {
            let t = order[top];
            if t.start_ns <= e.start_ns && e.end_ns <= t.end_ns {
                break;
            }
            stack.pop();
            if let Some(d) = depth.get_mut(&t.block) {
                *d -= 1;
            }
        }
        let dur = e.end_ns - e.start_ns;
        if let Some(&top) = stack.last() {
            children[top] += dur;
        }
        let d = depth.entry(e.block).or_insert(0);
        recursive_flag[i] = *d > 0;
        *d += 1;
        stack.push(i);
    }
    let mut recursive = Vec::new();
    let mut kept = 0;
    for i in 0..n {
        let e = order[i];
        if recursive_flag[i] {
            recursive.push(e.block);
            continue;
        }
        let dur = e.end_ns - e.start_ns;
        order[kept] = Execution {
            block: e.block,
            start_ns: dur,
            end_ns: dur.saturating_sub(children[i]),
        };
        kept += 1;
    }
    order.truncate(kept);
    ThreadPass {
        scored: order,
        recursive,
    }
}

/// Per (block, thread): executions, Σ inclusive, Σ exclusive.
#[derive(Debug, Clone, Copy, Default)]
struct Acc {
    n: u64,
    sum: u64,
    sum_excl: u64,
}

/// Scores every row of `input`: blocks ranked by SCI (unscored ones last,
/// by excess), and the threads.
pub fn score(input: &ScoreInput) -> (Vec<SciBlock>, Vec<SciThread>) {
    score_executions(input, input.executions.clone())
}

/// [`score`] of `input`'s rows and threads with `executions` (per thread,
/// in any order) in place of `input.executions`, consuming them: each
/// thread's executions are sorted where they are, its nesting pass writes
/// the scored durations over them, and each thread's array is freed once
/// its durations are grouped by block, so the executions are never held
/// twice (the analysis of a large recording peaks lower; the result is
/// that of [`score`]).
pub fn score_executions(
    input: &ScoreInput,
    executions: Vec<Vec<Execution>>,
) -> (Vec<SciBlock>, Vec<SciThread>) {
    score_executions_streamed(input, executions, None)
}

/// Lock executions left in the lock analysis's events instead of copied
/// into [`ScoreInput::executions`] (24 bytes each, for every acquisition
/// of every thread at once: the largest part of the analysis's peak
/// memory on a large recording). Only threads whose executions are all
/// lock calls, each beginning after the previous one returned or, taking
/// no time, at the very instant it returned (the mutex re-acquired as a
/// condition wait returns), are streamed. Their nesting pass is then
/// trivial: a call that begins later has no parent; one that takes no
/// time at the instant the previous returned lies inside it and inside
/// every such call before, so it adds nothing to their exclusive time and
/// is recursive when one of them is of its block (the nesting pass over
/// the same calls, whatever their order among equal instants, finds as
/// many recursive executions of each block). Inclusive = exclusive = the
/// call's wait; they are scored straight from the events, in program
/// order.
#[derive(Debug)]
pub struct StreamedLocks<'s> {
    /// The lock analysis's events.
    pub set: &'s crate::locks::EventSet,
    /// Per streamed thread: its index in [`ScoreInput::threads`] and the
    /// range of its events in `set.events`.
    pub threads: Vec<(u32, std::ops::Range<usize>)>,
    /// The block of each (primitive, site, object) acquired.
    pub rows: LockRows,
}

/// The SCI block of each (primitive, call site, object) of the lock calls,
/// looked up for every acquisition (three passes over the events): a
/// dense table by (object, site) when objects × sites is small (at most
/// the `dense_max` entries of 8 bytes [`LockRows::new`] is given; for an
/// event set, [`LockRows::for_set`]), holding
/// the block of the first primitive seen there (one load per lookup); a
/// map for the rest (more objects and sites, and an object taken with a
/// second primitive at the same site, as a rwlock's read and write).
#[derive(Debug, Clone)]
pub struct LockRows {
    sites: usize,
    /// `primitive << 32 | block` per `object * sites + site`, or `EMPTY`.
    dense: Vec<u64>,
    map: FxHashMap<(contend_trace::Primitive, u32, u32), u32>,
}

impl LockRows {
    const EMPTY: u64 = u64::MAX;

    /// No rows yet, for the objects and call sites of `set`, dense when
    /// that takes at most one entry per 8 events and at most 2^20 entries
    /// (never more than a byte per event, 8 MiB at most).
    pub fn for_set(set: &crate::locks::EventSet) -> LockRows {
        Self::new(
            set.objects.len(),
            set.sites.len(),
            (set.events.len() / 8).min(1 << 20),
        )
    }

    /// No rows yet, for `objects` objects and `sites` call sites (the
    /// lock analysis's tables); the dense table when it has at most
    /// `dense_max` entries.
    pub fn new(objects: usize, sites: usize, dense_max: usize) -> LockRows {
        let dense = match objects.checked_mul(sites) {
            Some(n) if n <= dense_max => vec![Self::EMPTY; n],
            _ => Vec::new(),
        };
        LockRows {
            sites,
            dense,
            map: FxHashMap::default(),
        }
    }

    #[inline]
    fn slot(&self, site: u32, object: u32) -> Option<usize> {
        if self.dense.is_empty() || site as usize >= self.sites {
            return None;
        }
        let i = object as usize * self.sites + site as usize;
        (i < self.dense.len()).then_some(i)
    }

    /// The block of `(primitive, site, object)`, if it has one.
    #[inline]
    pub fn get(&self, primitive: contend_trace::Primitive, site: u32, object: u32) -> Option<u32> {
        if let Some(i) = self.slot(site, object) {
            let v = self.dense[i];
            if v != Self::EMPTY && (v >> 32) as u8 == primitive as u8 {
                return Some(v as u32);
            }
        }
        self.map.get(&(primitive, site, object)).copied()
    }

    /// Gives `(primitive, site, object)` its block, once: true when the
    /// key had none (a key that has one keeps it, and false is returned).
    pub fn insert(
        &mut self,
        primitive: contend_trace::Primitive,
        site: u32,
        object: u32,
        block: u32,
    ) -> bool {
        if self.get(primitive, site, object).is_some() {
            return false;
        }
        match self.slot(site, object) {
            Some(i) if self.dense[i] == Self::EMPTY => {
                self.dense[i] = (u64::from(primitive as u8) << 32) | u64::from(block);
            }
            _ => {
                self.map.insert((primitive, site, object), block);
            }
        }
        true
    }
}

impl StreamedLocks<'_> {
    /// The (block, call duration ns, recursive) of every acquisition in
    /// `range`, in program order (the type's docs give the rule).
    fn executions(
        &self,
        range: std::ops::Range<usize>,
    ) -> impl Iterator<Item = (u32, u64, bool)> + '_ {
        // Blocks of the calls open at the latest return instant.
        let mut open: Vec<u32> = Vec::new();
        let mut last_end: Option<u64> = None;
        self.set.events[range]
            .iter()
            .filter(|e| e.outcome() == crate::locks::Outcome::Acquired)
            .map(move |e| {
                let block = self
                    .rows
                    .get(e.primitive(), e.site, e.object)
                    .expect("every acquisition's block was made by the first pass");
                let (start, end) = (e.requested_ns(), e.acquired_ns());
                let inside = last_end.is_some_and(|t| start == t && end == t);
                if !inside {
                    open.clear();
                }
                let recursive = inside && open.contains(&block);
                open.push(block);
                last_end = Some(end);
                (block, end - start, recursive)
            })
    }
}

/// [`score_executions`], with the lock executions of the threads in
/// `streamed` read from the lock analysis's events (their entries in
/// `executions` are empty); the result is the same as with every
/// execution in `executions`.
pub fn score_executions_streamed(
    input: &ScoreInput,
    executions: Vec<Vec<Execution>>,
    streamed: Option<&StreamedLocks<'_>>,
) -> (Vec<SciBlock>, Vec<SciThread>) {
    let cores = rayon::current_num_threads().clamp(1, 8);
    score_in_groups(input, executions, streamed, cores)
}

/// [`score_executions_streamed`] with the threads' passes in at most
/// `cores` groups side by side (the result does not depend on `cores`).
fn score_in_groups(
    input: &ScoreInput,
    executions: Vec<Vec<Execution>>,
    streamed: Option<&StreamedLocks<'_>>,
    cores: usize,
) -> (Vec<SciBlock>, Vec<SciThread>) {
    let nblocks = input.blocks.len();
    let mut streamed_range: Vec<Option<std::ops::Range<usize>>> = vec![None; executions.len()];
    if let Some(s) = streamed {
        for (t, r) in &s.threads {
            if let Some(slot) = streamed_range.get_mut(*t as usize) {
                *slot = Some(r.clone());
            }
        }
    }
    let passes: Vec<ThreadPass> = executions.into_par_iter().map(thread_pass).collect();
    // The threads in contiguous groups of about equal work, counted and
    // grouped by block side by side (a group's own counts say where its
    // durations go); one group when the blocks are many for the work.
    let work: Vec<usize> = passes
        .iter()
        .zip(&streamed_range)
        .map(|(p, r)| p.scored.len() + p.recursive.len() + r.as_ref().map_or(0, |r| r.len()))
        .collect();
    let groups = crate::chunked_sort::thread_groups(&work, nblocks, cores);
    let tallies: Vec<Tally> = groups
        .par_iter()
        .map(|g| {
            let mut t = Tally {
                counts: vec![0usize; nblocks],
                zeros: vec![0u64; nblocks],
                recursive: vec![0u64; nblocks],
                longest: 0,
            };
            for k in g.clone() {
                t.add_thread(&passes[k], streamed.zip(streamed_range[k].clone()));
            }
            t
        })
        .collect();
    let mut counts = vec![0usize; nblocks];
    let mut zeros = vec![0u64; nblocks];
    let mut recursive = vec![0u64; nblocks];
    let mut longest = 0u64;
    for t in &tallies {
        for b in 0..nblocks {
            counts[b] += t.counts[b];
            zeros[b] += t.zeros[b];
            recursive[b] += t.recursive[b];
        }
        longest = longest.max(t.longest);
    }
    for c in &input.counted {
        zeros[c.block as usize] += c.count;
    }
    let group_counts: Vec<Vec<usize>> = tallies.into_iter().map(|t| t.counts).collect();
    let grouping = Grouping {
        groups: &groups,
        group_counts: &group_counts,
        counts: &counts,
        zeros: &zeros,
        recursive: &recursive,
    };
    // The durations, grouped by block, take 4 bytes each when every one
    // fits (under 4.3 s), else 8; those of 0 ns (an uncontended lock call,
    // timed once: most of them) are only counted.
    let mut blocks: Vec<SciBlock> = if u32::try_from(longest).is_ok() {
        group_and_score::<u32>(input, passes, streamed, &streamed_range, &grouping)
    } else {
        group_and_score::<u64>(input, passes, streamed, &streamed_range, &grouping)
    };
    stable_sort_in_place(&mut blocks, |a, b| {
        let key = |s: &SciBlock| s.sci.unwrap_or(-1.0);
        key(b)
            .total_cmp(&key(a))
            .then(b.excess_ns.cmp(&a.excess_ns))
            .then(a.name.cmp(&b.name))
            .then(a.key.cmp(&b.key))
    });
    // Threads: totals over the blocks.
    let mut thread_rows: Vec<SciThread> = input
        .threads
        .iter()
        .map(|t| SciThread {
            pid: t.pid,
            tid: t.tid,
            duration_ns: t.duration_ns,
            duration_source: t.source,
            occurrences: 0,
            excess_ns: 0,
        })
        .collect();
    let index: FxHashMap<(u32, u32), usize> = input
        .threads
        .iter()
        .enumerate()
        .map(|(i, t)| ((t.pid, t.tid), i))
        .collect();
    for b in &blocks {
        for s in &b.per_thread {
            if let Some(&i) = index.get(&(s.pid, s.tid)) {
                thread_rows[i].occurrences += s.occurrences;
                thread_rows[i].excess_ns += s.excess_ns;
            }
        }
    }
    thread_rows.sort_by(|a, b| b.excess_ns.cmp(&a.excess_ns).then(a.tid.cmp(&b.tid)));
    (blocks, thread_rows)
}

/// One group's counts per block ([`score_executions_streamed`]'s first
/// pass): scored executions of more than 0 ns, those of 0 ns, recursive
/// ones, and the longest duration, ns.
struct Tally {
    counts: Vec<usize>,
    zeros: Vec<u64>,
    recursive: Vec<u64>,
    longest: u64,
}

impl Tally {
    /// Counts one thread's scored and recursive executions: its nesting
    /// pass's, and its lock calls left in the events when streamed.
    fn add_thread(
        &mut self,
        p: &ThreadPass,
        streamed: Option<(&StreamedLocks<'_>, std::ops::Range<usize>)>,
    ) {
        for e in &p.scored {
            self.scored(e.block, e.start_ns);
        }
        for &b in &p.recursive {
            self.recursive[b as usize] += 1;
        }
        if let Some((s, r)) = streamed {
            for (b, d, again) in s.executions(r) {
                if again {
                    self.recursive[b as usize] += 1;
                } else {
                    self.scored(b, d);
                }
            }
        }
    }

    /// One scored execution of block `b` that took `d` ns.
    #[inline]
    fn scored(&mut self, b: u32, d: u64) {
        if d == 0 {
            self.zeros[b as usize] += 1;
        } else {
            self.counts[b as usize] += 1;
            self.longest = self.longest.max(d);
        }
    }
}

/// The thread groups and counts [`group_and_score`] places durations by.
struct Grouping<'a> {
    groups: &'a [std::ops::Range<usize>],
    /// Per group, its scored executions per block.
    group_counts: &'a [Vec<usize>],
    /// Scored executions of more than 0 ns per block, all groups (the
    /// durations kept).
    counts: &'a [usize],
    /// Scored executions of 0 ns per block, all groups (only counted).
    zeros: &'a [u64],
    /// Recursive executions per block, all groups.
    recursive: &'a [u64],
}

/// The exclusive durations of one row, folded: their least and their sum,
/// ns (all a row needs of them).
#[derive(Debug, Clone, Copy)]
struct Exclusive {
    min: u64,
    sum: u64,
}

impl Default for Exclusive {
    fn default() -> Self {
        Exclusive {
            min: u64::MAX,
            sum: 0,
        }
    }
}

impl Exclusive {
    #[inline]
    fn add(&mut self, x: u64) {
        self.min = self.min.min(x);
        self.sum += x;
    }
}

/// A duration as [`score_executions_streamed`] keeps it, grouped by block:
/// `u32` when every duration of the input fits, else `u64`.
trait StoredDuration: Copy + Ord + Default + Send + Sync + Into<u64> + TryFrom<u64> {
    const MAX: Self;
}
impl StoredDuration for u32 {
    const MAX: Self = u32::MAX;
}
impl StoredDuration for u64 {
    const MAX: Self = u64::MAX;
}

/// The durations of all executions grouped by block (a counting sort by
/// `counts`), with each row's exclusive durations folded and its
/// per-thread sums, then every row scored ([`score_block`]).
fn group_and_score<D: StoredDuration>(
    input: &ScoreInput,
    passes: Vec<ThreadPass>,
    streamed: Option<&StreamedLocks<'_>>,
    streamed_range: &[Option<std::ops::Range<usize>>],
    grouping: &Grouping<'_>,
) -> Vec<SciBlock> {
    let (counts, zeros, recursive) = (grouping.counts, grouping.zeros, grouping.recursive);
    let nblocks = input.blocks.len();
    // Each group's first position per block: after the groups before it,
    // so the durations lie in thread order as if placed by one pass.
    let (offsets, fills) = chunked_sort::chunk_starts(grouping.group_counts, nblocks);
    let mut durations = vec![D::default(); offsets[nblocks]];
    // Each group's threads' passes, consumed (and freed) by that group.
    let mut passes = passes.into_iter();
    let group_passes: Vec<Vec<ThreadPass>> = grouping
        .groups
        .iter()
        .map(|g| passes.by_ref().take(g.len()).collect())
        .collect();
    let out = chunked_sort::DisjointWrites::new(&mut durations);
    // The exclusive durations enter a row only through their least and
    // their sum, so they are folded as they come instead of kept.
    type Folded = (Vec<Exclusive>, Vec<Vec<(u32, Acc)>>);
    let folded: Vec<Folded> = group_passes
        .into_par_iter()
        .zip(fills)
        .zip(grouping.groups.par_iter())
        .map(|((group_passes, mut fill), g)| {
            let mut exclusive: Vec<Exclusive> = vec![Exclusive::default(); nblocks];
            let mut per_thread: Vec<Vec<(u32, Acc)>> = vec![Vec::new(); nblocks];
            // The thread's sums per block, in a table the group reuses
            // (an entry with no execution yet has n = 0), and the blocks
            // the thread executed, in the order first met.
            let mut acc: Vec<Acc> = vec![Acc::default(); nblocks];
            let mut touched: Vec<u32> = Vec::new();
            for (t, p) in g.clone().zip(group_passes) {
                let scored = p.scored.iter().map(|e| (e.block, e.start_ns, e.end_ns));
                let lock_calls = streamed
                    .zip(streamed_range[t].clone())
                    .into_iter()
                    .flat_map(|(s, r)| {
                        s.executions(r)
                            .filter(|&(_, _, again)| !again)
                            .map(|(b, d, _)| (b, d, d))
                    });
                for (b, d, x) in scored.chain(lock_calls) {
                    if d > 0 {
                        let k = &mut fill[b as usize];
                        // SAFETY: this group writes only the positions
                        // counted for it, fills[g][b] .. fills[g][b] +
                        // group_counts[g][b] of each block b (the same
                        // executions of more than 0 ns, counted by
                        // Tally::scored): in bounds and disjoint from every
                        // other group's.
                        unsafe { out.write(*k, D::try_from(d).unwrap_or(D::MAX)) };
                        *k += 1;
                    }
                    exclusive[b as usize].add(x);
                    let a = &mut acc[b as usize];
                    if a.n == 0 {
                        touched.push(b);
                    }
                    a.n += 1;
                    a.sum += d;
                    a.sum_excl += x;
                }
                for b in touched.drain(..) {
                    per_thread[b as usize].push((t as u32, std::mem::take(&mut acc[b as usize])));
                }
            }
            (exclusive, per_thread)
        })
        .collect();
    let mut exclusive: Vec<Exclusive> = vec![Exclusive::default(); nblocks];
    let mut per_thread: Vec<Vec<(u32, Acc)>> = vec![Vec::new(); nblocks];
    for (ex, pt) in folded {
        for (b, (x, list)) in ex.into_iter().zip(pt).enumerate() {
            exclusive[b].min = exclusive[b].min.min(x.min);
            exclusive[b].sum += x.sum;
            per_thread[b].extend(list);
        }
    }
    // The executions known only by their number: 0 ns each, inclusive and
    // exclusive, added to their thread's sums in the row.
    for c in input.counted.iter().filter(|c| c.count > 0) {
        let b = c.block as usize;
        exclusive[b].add(0);
        let list = &mut per_thread[b];
        match list.iter_mut().find(|(t, _)| *t == c.thread) {
            Some((_, a)) => a.n += c.count,
            None => list.push((
                c.thread,
                Acc {
                    n: c.count,
                    ..Acc::default()
                },
            )),
        }
    }
    // Split the flat vector into one slice per block.
    let mut dur_slices: Vec<&mut [D]> = Vec::with_capacity(nblocks);
    let mut rd = &mut durations[..];
    for &c in counts {
        let (a, b) = rd.split_at_mut(c);
        dur_slices.push(a);
        rd = b;
    }
    // Scored into one slot per block (an indexed collect writes each row
    // in place), then the empty slots dropped in the same allocation. A
    // `filter_map` on the parallel iterator would collect the rows in
    // per-worker lists and copy them into the result: twice the rows'
    // memory at once (8.2 MB more at memcached's peak).
    // Each row's per-thread list is freed once the row is made.
    let rows: Vec<Option<SciBlock>> = dur_slices
        .into_par_iter()
        .zip(exclusive)
        .zip(per_thread)
        .enumerate()
        .map(|(b, ((durs, excl), threads))| {
            let def = &input.blocks[b];
            if durs.is_empty() && zeros[b] == 0 && def.unfinished == 0 && recursive[b] == 0 {
                return None;
            }
            Some(score_block(
                def,
                durs,
                zeros[b],
                excl,
                &threads,
                &input.threads,
                recursive[b],
            ))
        })
        .collect();
    // `filter_map` keeps the allocation (std's in-place collect);
    // `flatten` would copy into a new one.
    #[allow(clippy::filter_map_identity)]
    rows.into_iter().filter_map(|row| row).collect()
}

/// Sorts `rows` as `slice::sort_by` would (stable), with 4 bytes of
/// scratch per row instead of the half of the rows that a stable sort of
/// the rows themselves allocates (8 MB for memcached's 21,837 rows of
/// 544 bytes, at the SCI's peak): the positions are sorted, then the rows
/// moved along the permutation's cycles by swaps. Panics beyond 2^32 rows.
fn stable_sort_in_place<T>(rows: &mut [T], cmp: impl Fn(&T, &T) -> std::cmp::Ordering) {
    let n = u32::try_from(rows.len()).expect("fewer than 2^32 rows");
    let mut order: Vec<u32> = (0..n).collect();
    order.sort_by(|&a, &b| cmp(&rows[a as usize], &rows[b as usize]));
    // Position j takes the row at order[j]. Along a cycle, the row first
    // at its start is carried forward by each swap; a finished position
    // is marked by order[j] = j.
    for start in 0..rows.len() {
        let mut j = start;
        while order[j] as usize != start {
            let k = order[j] as usize;
            rows.swap(j, k);
            order[j] = j as u32;
            j = k;
        }
        order[j] = j as u32;
    }
}

/// One row's numbers from its durations of more than 0 ns (unsorted on
/// entry) and its number of 0 ns ones (`zeros`: they come first in the
/// sorted order), its exclusive durations folded, and its per-thread sums.
#[allow(clippy::too_many_arguments)]
fn score_block<D: StoredDuration>(
    def: &BlockDef,
    durs: &mut [D],
    zeros: u64,
    excl: Exclusive,
    threads: &[(u32, Acc)],
    thread_defs: &[ThreadDef],
    recursive: u64,
) -> SciBlock {
    durs.sort_unstable();
    let ns = |d: D| -> u64 { d.into() };
    let z = zeros as usize;
    let len = z + durs.len();
    // The k-th smallest duration, ns (k < len).
    let at = |k: usize| -> u64 {
        if k < z {
            0
        } else {
            ns(durs[k - z])
        }
    };
    let n = len as u64;
    let every = u64::from(def.every.max(1));
    let min = if len == 0 { 0 } else { at(0) };
    let xmin = if len == 0 { 0 } else { excl.min };
    let total: u64 = durs.iter().map(|&d| ns(d)).sum();
    let xtotal: u64 = excl.sum;
    let scored = n >= MIN_OCCURRENCES;
    let mut thread_ns = 0u64;
    let mut excess = 0u64;
    let mut xexcess = 0u64;
    let mut max_thread: Option<f64> = None;
    let mut per_thread: Vec<BlockThreadScore> = threads
        .iter()
        .map(|&(t, a)| {
            let td = &thread_defs[t as usize];
            let e = (a.sum - a.n * min) * every;
            let x = (a.sum_excl - a.n * xmin) * every;
            thread_ns += td.duration_ns;
            excess += e;
            xexcess += x;
            let sci = (scored && td.duration_ns > 0).then(|| e as f64 / td.duration_ns as f64);
            if let Some(s) = sci {
                max_thread = Some(max_thread.map_or(s, |m: f64| m.max(s)));
            }
            BlockThreadScore {
                pid: td.pid,
                tid: td.tid,
                occurrences: a.n,
                excess_ns: e,
                sci,
            }
        })
        .collect();
    per_thread.sort_by(|a, b| b.excess_ns.cmp(&a.excess_ns).then(a.tid.cmp(&b.tid)));
    let ratio = |x: u64| (scored && thread_ns > 0).then(|| x as f64 / thread_ns as f64);
    let k = ((n as f64 * FASTEST_SHARE).ceil() as usize).clamp(2, len.max(2));
    let fastest = [
        min,
        if len == 0 {
            0
        } else {
            at((k - 1).min(len - 1))
        },
    ];
    let stable = !(fastest[1] as f64 > FASTEST_SPREAD_MAX * fastest[0] as f64
        && fastest[1] - fastest[0] >= FASTEST_SPREAD_FLOOR_NS);
    let quantiles = Quantiles::of_sorted(len, at);
    let mut note = None;
    if !scored {
        note = Some(format!(
            "executed {n} time(s), fewer than {MIN_OCCURRENCES}: no score (a block executed rarely may never run free of \
             interference, Mosli Bouksiaa et al., Section 5.3)"
        ));
    } else if !stable {
        note = Some(format!(
            "the fastest 1% of executions spread from {} ns to {} ns (more than {FASTEST_SPREAD_MAX}×): the fastest \
             execution may not be free of interference, or the work depends on a parameter (give the region a key, \
             see the distribution)",
            fastest[0], fastest[1]
        ));
    }
    SciBlock {
        name: def.name.clone(),
        kind: def.kind,
        key: def.key.clone(),
        site: def.site.clone(),
        occurrences: n,
        min_ns: min,
        median_ns: if len == 0 { 0 } else { at((len - 1) / 2) },
        mean_ns: total.checked_div(n).unwrap_or(0),
        total_ns: total,
        excess_ns: excess,
        sci: ratio(excess),
        sci_max_thread: max_thread,
        exclusive_min_ns: xmin,
        exclusive_total_ns: xtotal,
        exclusive_excess_ns: xexcess,
        sci_exclusive: ratio(xexcess),
        threads: threads.len() as u32,
        thread_duration_ns: thread_ns,
        recursive,
        unfinished: def.unfinished,
        sampled_every: def.every.max(1),
        fastest_1pct_ns: fastest,
        stable,
        quantiles,
        histogram: DurationHistogram::of(
            std::iter::repeat_n(0, z).chain(durs.iter().map(|&d| ns(d))),
        ),
        per_thread,
        note,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A site is named by what is known of it, in the forms the lock
    /// section uses: function and line, function, line, module+offset
    /// (no debug information), `?` (nothing).
    #[test]
    fn block_sites_are_named_by_what_is_known() {
        let full = BlockSite {
            function: Some("dequeue".into()),
            file: Some("/src/q.c".into()),
            line: Some(90),
            module: Some("/usr/bin/q".into()),
            offset: Some("0x1a2b".into()),
        };
        assert_eq!(full.display(), "dequeue (q.c:90)");
        let function_only = BlockSite {
            file: None,
            line: None,
            ..full.clone()
        };
        assert_eq!(function_only.display(), "dequeue");
        let module_only = BlockSite {
            function: None,
            file: None,
            line: None,
            ..full.clone()
        };
        assert_eq!(module_only.display(), "q+0x1a2b");
        assert_eq!(BlockSite::default().display(), "?");
    }

    /// Log2 buckets of sorted durations: [0, 1), [1, 2), [2, 4), … (the
    /// non-empty ones, ascending; what [`DurationHistogram::iter`] gives, made
    /// the simple way: the reference the scorer's histograms are tested against).
    fn log2_histogram(sorted: &[u64]) -> Vec<DurationBucket> {
        let mut out: Vec<DurationBucket> = Vec::new();
        for &d in sorted {
            let b = 64 - d.leading_zeros();
            let (lower, upper) = if b == 0 {
                (0, 1)
            } else {
                (1u64 << (b - 1), 1u64.checked_shl(b).unwrap_or(u64::MAX))
            };
            match out.last_mut() {
                Some(last) if last.lower_ns == lower => last.count += 1,
                _ => out.push(DurationBucket {
                    lower_ns: lower,
                    upper_ns: upper,
                    count: 1,
                }),
            }
        }
        out
    }

    /// The passes in 1, 2, 3 or 5 groups give the same blocks and threads:
    /// random nested, recursive and back-to-back executions of 6 threads
    /// over 4 blocks.
    #[test]
    fn scores_do_not_depend_on_the_grouping() {
        let mut rng = crate::TestRng(0x2545_f491_4f6c_dd1d);
        let mut rnd = |n: u64| rng.below(n);
        let blocks: Vec<BlockDef> = (0..4)
            .map(|b| BlockDef {
                kind: BlockKind::Region,
                name: format!("b{b}").into(),
                key: None,
                site: BlockSite::default().into(),
                every: 1,
                unfinished: 0,
            })
            .collect();
        let threads: Vec<ThreadDef> = (0..6)
            .map(|t| ThreadDef {
                pid: 1,
                tid: 100 + t,
                duration_ns: 1_000_000,
                source: DurationSource::TaskEvents,
            })
            .collect();
        let executions: Vec<Vec<Execution>> = (0..6)
            .map(|t| {
                let mut v = Vec::new();
                let mut at = 0u64;
                for _ in 0..(20 + 40 * (t % 3)) {
                    let start = at + rnd(50);
                    let len = 1 + rnd(200);
                    v.push(Execution {
                        block: rnd(4) as u32,
                        start_ns: start,
                        end_ns: start + len,
                    });
                    // Sometimes one inside it, of any block.
                    if rnd(3) == 0 {
                        v.push(Execution {
                            block: rnd(4) as u32,
                            start_ns: start + len / 4,
                            end_ns: start + len / 2,
                        });
                    }
                    at = start + len;
                }
                v
            })
            .collect();
        let input = ScoreInput {
            blocks,
            threads,
            executions: executions.clone(),
            counted: Vec::new(),
        };
        let one = score_in_groups(&input, executions.clone(), None, 1);
        assert!(one.0.iter().any(|b| b.sci.is_some()));
        for cores in [2, 3, 5] {
            assert_eq!(
                score_in_groups(&input, executions.clone(), None, cores),
                one,
                "{cores} groups"
            );
        }
    }

    /// Executions known only by their number (a light recording's counted
    /// acquisitions) score as the same executions timed at 0 ns would:
    /// the rows and threads are equal, with two threads, a block each
    /// thread also ran timed, and a block known only by counts.
    #[test]
    fn counted_executions_score_as_timed_zeros() {
        let block = |name: &str| BlockDef {
            kind: BlockKind::Lock,
            name: name.into(),
            key: None,
            site: BlockSite::default().into(),
            every: 1,
            unfinished: 0,
        };
        let thread = |tid| ThreadDef {
            pid: 1,
            tid,
            duration_ns: 1_000_000,
            source: DurationSource::TaskEvents,
        };
        let at = |block, t: u64, d: u64| Execution {
            block,
            start_ns: t,
            end_ns: t + d,
        };
        // timed: block 0 by both threads, some of 0 ns
        let timed: Vec<Vec<Execution>> = vec![
            (0..40)
                .map(|k| at(0, 1_000 * k, [0, 30, 0, 250][k as usize % 4]))
                .collect(),
            (0..25)
                .map(|k| at(0, 1_000 * k + 500, 40 + 7 * k))
                .collect(),
        ];
        // the counted ones: 30 of block 0 by thread 1, 12 of block 1 by
        // thread 0, 5 of block 1 by thread 1
        let counted = [(1u32, 0u32, 30u64), (0, 1, 12), (1, 1, 5)];
        let mut full = timed.clone();
        for &(t, b, n) in &counted {
            full[t as usize].extend((0..n).map(|k| at(b, 100_000 + 1_000 * k, 0)));
        }
        let input = |executions: Vec<Vec<Execution>>, counted: Vec<CountedExecutions>| ScoreInput {
            blocks: vec![block("a"), block("b")],
            threads: vec![thread(10), thread(11)],
            executions,
            counted,
        };
        let with_counts = input(
            timed.clone(),
            counted
                .iter()
                .map(|&(thread, block, count)| CountedExecutions {
                    thread,
                    block,
                    count,
                })
                .collect(),
        );
        let timed_zeros = input(full.clone(), Vec::new());
        for cores in [1, 2] {
            let a = score_in_groups(&with_counts, timed.clone(), None, cores);
            let b = score_in_groups(&timed_zeros, full.clone(), None, cores);
            assert_eq!(a, b, "{cores} group(s)");
        }
        let (rows, _) = score_in_groups(&with_counts, timed, None, 1);
        let b = rows.iter().find(|r| &*r.name == "b").unwrap();
        assert_eq!((b.occurrences, b.excess_ns, b.min_ns), (17, 0, 0));
        let a = rows.iter().find(|r| &*r.name == "a").unwrap();
        assert_eq!(a.occurrences, 40 + 25 + 30);
    }

    /// Durations of 0 ns are counted, not kept: a row whose executions
    /// are mostly 0 ns (uncontended lock calls) has the order statistics,
    /// histogram and totals of all its durations sorted in full, for a
    /// share of zeros from none to all.
    #[test]
    fn zero_durations_are_counted_in_every_order_statistic() {
        for zero_every in [0u64, 1, 2, 3, 7] {
            let durations: Vec<u64> = (0..300u64)
                .map(|k| {
                    if zero_every > 0 && k % zero_every == 0 {
                        0
                    } else {
                        1 + (k * 37) % 1000
                    }
                })
                .collect();
            let mut at = 0u64;
            let executions: Vec<Execution> = durations
                .iter()
                .map(|&d| {
                    at += 10_000;
                    Execution {
                        block: 0,
                        start_ns: at,
                        end_ns: at + d,
                    }
                })
                .collect();
            let input = ScoreInput {
                blocks: vec![BlockDef {
                    kind: BlockKind::Lock,
                    name: "pthread_mutex_lock".into(),
                    key: None,
                    site: BlockSite::default().into(),
                    every: 1,
                    unfinished: 0,
                }],
                threads: vec![ThreadDef {
                    pid: 1,
                    tid: 1,
                    duration_ns: 10_000_000,
                    source: DurationSource::TaskEvents,
                }],
                executions: vec![executions.clone()],
                counted: Vec::new(),
            };
            let (rows, _) = score_in_groups(&input, vec![executions], None, 1);
            let row = &rows[0];
            let mut sorted = durations.clone();
            sorted.sort_unstable();
            let n = sorted.len();
            let what = format!("a zero every {zero_every}");
            assert_eq!(row.occurrences, n as u64, "{what}");
            assert_eq!(row.min_ns, sorted[0], "{what}");
            assert_eq!(row.median_ns, sorted[(n - 1) / 2], "{what}");
            assert_eq!(row.total_ns, sorted.iter().sum::<u64>(), "{what}");
            assert_eq!(row.excess_ns, row.total_ns - n as u64 * sorted[0], "{what}");
            let k = ((n as f64 * FASTEST_SHARE).ceil() as usize).clamp(2, n);
            assert_eq!(row.fastest_1pct_ns, [sorted[0], sorted[k - 1]], "{what}");
            let quantiles: Vec<u64> = QUANTILES
                .iter()
                .map(|&q| sorted[((q * (n - 1) as f64).round() as usize).min(n - 1)])
                .collect();
            let got: Vec<u64> = row.quantiles.iter().map(|q| q.ns).collect();
            assert_eq!(got, quantiles, "{what}");
            assert_eq!(
                row.histogram.iter().collect::<Vec<_>>(),
                log2_histogram(&sorted),
                "{what}"
            );
        }
    }

    /// Lock rows give back the block each key was given, dense or mapped:
    /// a second primitive at the same (site, object) (a rwlock's read and
    /// write), a key outside the dense table's sites, a table too large to
    /// be dense; a key given twice keeps its first block.
    /// The in-place sort gives what `sort_by` gives, ties in their first
    /// order included, for sizes around the cycle lengths that matter
    /// (empty, one, all fixed, one long cycle, random with many ties).
    #[test]
    fn stable_sort_in_place_matches_sort_by() {
        let mut rng = crate::TestRng(0x9e37_79b9_7f4a_7c15_u64);
        let mut next = move || rng.next();
        let mut cases: Vec<Vec<(u64, usize)>> = vec![
            vec![],
            vec![(5, 0)],
            (0..10).map(|i| (i, i as usize)).collect(),
            (0..10).map(|i| ((i + 1) % 10, i as usize)).collect(),
        ];
        for n in [2usize, 3, 17, 1000] {
            cases.push((0..n).map(|i| (next() % 7, i)).collect());
        }
        for rows in cases {
            // Ordered by the key alone: rows with equal keys must keep the
            // order of their second field.
            let by_key = |a: &(u64, usize), b: &(u64, usize)| b.0.cmp(&a.0);
            let mut want = rows.clone();
            want.sort_by(by_key);
            let mut got = rows.clone();
            super::stable_sort_in_place(&mut got, by_key);
            assert_eq!(got, want, "{rows:?}");
        }
    }

    /// Quantiles read back the nearest-rank durations whether they fit 4
    /// bytes or not (the slowest at 2^32 − 1 ns and at 2^32 ns), and none
    /// for a row without executions.
    #[test]
    fn quantiles_narrow_and_wide_give_the_nearest_ranks() {
        for slowest in [u64::from(u32::MAX), 1u64 << 32, u64::MAX] {
            let sorted: Vec<u64> = (0..101u64).map(|k| k * 1_000).chain([slowest]).collect();
            let n = sorted.len();
            let q = Quantiles::of_sorted(n, |k| sorted[k]);
            let want: Vec<Quantile> = QUANTILES
                .iter()
                .map(|&level| Quantile {
                    q: level,
                    ns: sorted[((level * (n - 1) as f64).round() as usize).min(n - 1)],
                })
                .collect();
            assert_eq!(q.iter().collect::<Vec<_>>(), want, "slowest {slowest}");
            assert_eq!(q.last().map(|x| x.ns), Some(slowest));
            assert!(!q.is_empty());
        }
        let none = Quantiles::of_sorted(0, |_| unreachable!());
        assert!(none.is_empty());
        assert_eq!(none.iter().count(), 0);
        assert_eq!(none.last(), None);
    }

    #[test]
    fn lock_rows_give_each_key_its_block() {
        use contend_trace::Primitive::{Mutex, RwlockRead, RwlockWrite};
        for dense_max in [usize::MAX, 0] {
            let mut rows = LockRows::new(3, 4, dense_max);
            assert!(rows.insert(Mutex, 1, 2, 10));
            assert!(rows.insert(RwlockRead, 3, 0, 11));
            assert!(rows.insert(RwlockWrite, 3, 0, 12));
            assert!(rows.insert(Mutex, 9, 1, 13)); // site beyond the table
            assert!(!rows.insert(Mutex, 1, 2, 99)); // given already
            assert_eq!(rows.dense.is_empty(), dense_max == 0);
            assert_eq!(rows.get(Mutex, 1, 2), Some(10), "dense_max {dense_max}");
            assert_eq!(rows.get(RwlockRead, 3, 0), Some(11));
            assert_eq!(rows.get(RwlockWrite, 3, 0), Some(12));
            assert_eq!(rows.get(Mutex, 9, 1), Some(13));
            assert_eq!(rows.get(Mutex, 3, 0), None);
            assert_eq!(rows.get(RwlockRead, 1, 2), None);
            assert_eq!(rows.get(Mutex, 0, 0), None);
        }
    }
}
