//! Futex words as locks (JSON key `futex`): the waits and wakes a program
//! makes through glibc's `syscall(SYS_futex, …)` (Rust's `std::sync`,
//! InnoDB's latches, hand-written locks), recorded by the collector's
//! interposed `syscall()` (trace_format.h, "Futex records"), or every
//! futex call of a process seen by the kernel's futex tracepoints
//! (`futex/calls.cftx`, [`contend_trace::futex_calls`]: statically linked
//! programs, inline system calls, `contend record -p`). One source per
//! process: a process with tracepoint records is analysed from those
//! alone ([`collect`]), so no wait is counted twice.
//!
//! Only contended operations reach the kernel, so a futex lock's
//! uncontended acquisitions and its hold times are not seen; what is seen:
//!
//! * each wait, from the call to its return, and how it ended (woken, timed
//!   out, the word no longer held the expected value, interrupted);
//! * each wake call and how many waiters it woke;
//! * the waker of each woken wait ([`match_wakers`]): the hand-over, and
//!   the wake latency (wake call → waiter returning), as the thesis's
//!   hand-over of a pthread mutex (Venter 2016, Section 3.2.2.2) but
//!   without the hold before it.
//!
//! Aggregated per futex word (a lock-like object, named by its symbol when
//! global), per call site and per thread; the kind is inferred from the
//! symbolized waiting function ([`infer_kind`]).

use std::borrow::Cow;
use std::collections::BTreeMap;

use rustc_hash::{FxHashMap, FxHashSet};

use serde::Serialize;

use contend_trace::format::futex as fx;
use contend_trace::{FutexOp, Phase, NO_STACK};

use crate::analysis::{AnalysisOutput, Analyzer, Context};
use crate::recording::Recording;
use crate::symbols::{is_system_site, ResolvedSite, Symbols};

pub mod layout;

/// The futex analysis (registered in [`crate::analysis::ANALYZERS`]); its
/// section is present when some traced process made a futex call through
/// `syscall()`.
pub struct FutexAnalyzer;

/// How a futex wait ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WaitOutcome {
    /// It returned ≥ 0: woken by a wake (or spuriously), or, for
    /// `FUTEX_LOCK_PI`, the lock was taken.
    Woken,
    /// `ETIMEDOUT`.
    TimedOut,
    /// `EAGAIN`: the word no longer held the expected value (the wait did
    /// not sleep).
    ValueChanged,
    /// `EINTR`: a signal interrupted it.
    Interrupted,
    /// Another error (`EFAULT`, `EINVAL`, `ENOSYS`, …).
    Error,
    /// The trace ends inside it (the process was killed, or exited with
    /// the thread still waiting).
    Unfinished,
}

/// One futex wait of one thread, paired from its two records: 32 bytes
/// (its thread, word and call site are indices into the tables of
/// [`FutexEvents`]; millions of these are kept for the exports and the
/// critical path, and were 64 bytes with the addresses and ids inline).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FutexWait {
    /// Call, CLOCK_MONOTONIC ns.
    pub start_ns: u64,
    /// Return, CLOCK_MONOTONIC ns (the trace's end for an unfinished wait).
    pub end_ns: u64,
    /// Index into [`FutexEvents::threads`] (bits 0–28) and the outcome
    /// (bits 29–31, [`WaitOutcome`] in declaration order).
    thread_outcome: u32,
    /// Index into [`FutexEvents::words`].
    pub word: u32,
    /// Index into [`FutexEvents::calls`]: call site, stack and command.
    pub call: u32,
    /// Index into [`FutexEvents::wakes`] of the wake that ended it, or
    /// [`NO_WAKER`] (a wake past the 2^32 − 1st is given to no wait).
    waker: u32,
}

/// [`FutexWait::waker`] of a wait without a known waker.
const NO_WAKER: u32 = u32::MAX;

/// Thread indices fit in 29 bits (the rest of a wait's `thread_outcome`
/// holds its outcome, of a wake's `thread_failed` its failure): 2^29
/// threads, far more than a recording holds (Linux's `pid_max` is at
/// most 2^22).
const THREAD_BITS: u32 = 29;
const THREAD_MASK: u32 = (1 << THREAD_BITS) - 1;

const OUTCOMES: [WaitOutcome; 6] = [
    WaitOutcome::Woken,
    WaitOutcome::TimedOut,
    WaitOutcome::ValueChanged,
    WaitOutcome::Interrupted,
    WaitOutcome::Error,
    WaitOutcome::Unfinished,
];

impl FutexWait {
    /// The wait made `at`, that ended as `outcome`, woken by wake `waker`
    /// (index into [`FutexEvents::wakes`]) when known.
    pub fn new(at: FutexCallAt, outcome: WaitOutcome, waker: Option<u32>) -> FutexWait {
        FutexWait {
            start_ns: at.start_ns,
            end_ns: at.end_ns,
            thread_outcome: (at.thread & THREAD_MASK) | (outcome as u32) << THREAD_BITS,
            word: at.word,
            call: at.call,
            waker: waker.unwrap_or(NO_WAKER),
        }
    }

    /// Index into [`FutexEvents::threads`].
    pub fn thread(&self) -> u32 {
        self.thread_outcome & THREAD_MASK
    }

    /// How it ended.
    pub fn outcome(&self) -> WaitOutcome {
        OUTCOMES[(self.thread_outcome >> THREAD_BITS) as usize]
    }

    /// Index into [`FutexEvents::wakes`] of the wake that ended it, when
    /// known ([`match_wakers`]).
    pub fn waker(&self) -> Option<u32> {
        (self.waker != NO_WAKER).then_some(self.waker)
    }

    /// Wait time, ns.
    pub fn wait_ns(&self) -> u64 {
        self.end_ns.saturating_sub(self.start_ns)
    }

    /// True when the wait slept (woken or timed out), not returned at once
    /// because the word had changed or failed.
    pub fn slept(&self) -> bool {
        matches!(self.outcome(), WaitOutcome::Woken | WaitOutcome::TimedOut)
    }
}

/// One futex wake call of one thread: 32 bytes, as [`FutexWait`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FutexWake {
    /// Call, CLOCK_MONOTONIC ns.
    pub start_ns: u64,
    /// Return, CLOCK_MONOTONIC ns.
    pub end_ns: u64,
    /// Index into [`FutexEvents::threads`] (bits 0–28); bit 31: the call
    /// failed.
    thread_failed: u32,
    /// Index into [`FutexEvents::words`].
    pub word: u32,
    /// Index into [`FutexEvents::calls`].
    pub call: u32,
    /// Waiters woken (the call's return value; woken + requeued for
    /// `FUTEX_CMP_REQUEUE`); 0 when it failed.
    pub woken: u32,
}

impl FutexWake {
    /// The wake call made `at`, that woke `woken` waiters (0 when it
    /// `failed`).
    pub fn new(at: FutexCallAt, woken: u32, failed: bool) -> FutexWake {
        FutexWake {
            start_ns: at.start_ns,
            end_ns: at.end_ns,
            thread_failed: (at.thread & THREAD_MASK) | u32::from(failed) << 31,
            word: at.word,
            call: at.call,
            woken,
        }
    }

    /// Index into [`FutexEvents::threads`].
    pub fn thread(&self) -> u32 {
        self.thread_failed & THREAD_MASK
    }

    /// The call failed (its errno was recorded).
    pub fn failed(&self) -> bool {
        self.thread_failed >> 31 != 0
    }
}

/// Who made a futex call, on what, where and when: what a wait and a wake
/// both hold (their constructors' first argument).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FutexCallAt {
    /// Index into [`FutexEvents::threads`] (below 2^29).
    pub thread: u32,
    /// Index into [`FutexEvents::words`].
    pub word: u32,
    /// Index into [`FutexEvents::calls`].
    pub call: u32,
    /// Call, CLOCK_MONOTONIC ns.
    pub start_ns: u64,
    /// Return, CLOCK_MONOTONIC ns.
    pub end_ns: u64,
}

/// A thread that made futex calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FutexThread {
    /// Index of the process in [`Recording::processes`] (or, for a process
    /// seen only by the futex tracepoints, one past them; see
    /// [`FutexEvents::traced`]).
    pub process: u32,
    /// Process id.
    pub pid: u32,
    /// Kernel thread id.
    pub tid: u32,
}

/// A futex word of one process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FutexWord {
    /// Process index, as [`FutexThread::process`].
    pub process: u32,
    /// Futex word address (the waiter array for `futex_waitv`).
    pub address: u64,
}

/// Where a futex call was made, and how.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FutexCallSite {
    /// Process index, as [`FutexThread::process`].
    pub process: u32,
    /// Call site (return address of `syscall()`, or the innermost user
    /// frame of a tracepoint call).
    pub site: u64,
    /// Index into the process's stacks, or [`NO_STACK`].
    pub stack: u32,
    /// Futex command (`contend_trace::format::futex::CMD_*`).
    pub cmd: u8,
}

/// What the futex analysis keeps per event, for exporters: the waits and
/// wakes, and the tables their indices name. Every wait's and wake's
/// thread, word and call index these tables (events added through
/// [`pair_thread`] and [`add_traced_calls`], which number the tables with
/// [`FutexEvents::thread_index`], [`FutexEvents::word_index`] and
/// [`FutexEvents::call_index`], are; the lookups panic on events that
/// are not).
#[derive(Debug, Default, Clone)]
pub struct FutexEvents {
    /// Every wait, in process, thread and time order.
    pub waits: Vec<FutexWait>,
    /// Every wake, in process, thread and time order.
    pub wakes: Vec<FutexWake>,
    /// The threads the events name ([`FutexWait::thread`]), each
    /// (process, pid, tid) once, in the order they were added.
    pub threads: Vec<FutexThread>,
    /// The words the events name, each (process, address) once.
    pub words: Vec<FutexWord>,
    /// The call sites the events name, each (process, site, stack,
    /// command) once.
    pub calls: Vec<FutexCallSite>,
    /// The processes whose calls come from the futex tracepoints, by
    /// process index (a collector process's index in
    /// [`Recording::processes`], or one past them for a process without a
    /// lock trace); their calls' `stack` ([`FutexCallSite::stack`]) indexes [`TracedProcess::stacks`].
    pub traced: BTreeMap<u32, TracedProcess>,
    /// Table indices by key, while events are added.
    index: TableIndex,
}

/// The keys of [`FutexEvents`]' tables, for numbering them.
#[derive(Debug, Default, Clone)]
struct TableIndex {
    threads: FxHashMap<FutexThread, u32>,
    words: FxHashMap<FutexWord, u32>,
    calls: FxHashMap<FutexCallSite, u32>,
}

/// What a wait's or wake's indices name, looked up in the tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FutexCallInfo {
    /// Process index ([`FutexThread::process`]).
    pub process: u32,
    /// Process id.
    pub pid: u32,
    /// Kernel thread id.
    pub tid: u32,
    /// Futex word address.
    pub word: u64,
    /// Call site.
    pub site: u64,
    /// Index into the process's stacks, or [`NO_STACK`].
    pub stack: u32,
    /// Futex command.
    pub cmd: u8,
}

impl FutexEvents {
    /// The index of thread (`process`, `pid`, `tid`), added when new.
    pub fn thread_index(&mut self, process: u32, pid: u32, tid: u32) -> u32 {
        let key = FutexThread { process, pid, tid };
        let threads = &mut self.threads;
        *self.index.threads.entry(key).or_insert_with(|| {
            threads.push(key);
            (threads.len() - 1) as u32
        })
    }

    /// The index of word `address` of `process`, added when new.
    pub fn word_index(&mut self, process: u32, address: u64) -> u32 {
        let key = FutexWord { process, address };
        let words = &mut self.words;
        *self.index.words.entry(key).or_insert_with(|| {
            words.push(key);
            (words.len() - 1) as u32
        })
    }

    /// The index of call site (`process`, `site`, `stack`, `cmd`), added
    /// when new.
    pub fn call_index(&mut self, process: u32, site: u64, stack: u32, cmd: u8) -> u32 {
        let key = FutexCallSite {
            process,
            site,
            stack,
            cmd,
        };
        let calls = &mut self.calls;
        *self.index.calls.entry(key).or_insert_with(|| {
            calls.push(key);
            (calls.len() - 1) as u32
        })
    }

    /// Thread, word and call of a wait or wake by their indices.
    fn info(&self, thread: u32, word: u32, call: u32) -> FutexCallInfo {
        let t = self.threads[thread as usize];
        let c = self.calls[call as usize];
        FutexCallInfo {
            process: t.process,
            pid: t.pid,
            tid: t.tid,
            word: self.words[word as usize].address,
            site: c.site,
            stack: c.stack,
            cmd: c.cmd,
        }
    }

    /// What wait `w`'s indices name (panics on a wait of other events).
    pub fn wait_info(&self, w: &FutexWait) -> FutexCallInfo {
        self.info(w.thread(), w.word, w.call)
    }

    /// What wake `w`'s indices name (panics on a wake of other events).
    pub fn wake_info(&self, w: &FutexWake) -> FutexCallInfo {
        self.info(w.thread(), w.word, w.call)
    }
}

/// A process whose futex calls come from the futex tracepoints.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct TracedProcess {
    /// Process id.
    pub pid: u32,
    /// The user call chains of its calls (innermost first).
    pub stacks: Vec<Vec<u64>>,
}

/// Where one process's futex calls come from (JSON `futex.sources[]`,
/// present when some process was traced through the tracepoints).
#[derive(Debug, Clone, Serialize, Default, PartialEq)]
pub struct FutexSourceRow {
    /// Process id.
    pub pid: u32,
    /// `tracepoints` (the kernel's `syscalls:sys_enter_futex` /
    /// `sys_exit_futex`: every futex call) or `collector` (the interposed
    /// `syscall()`: only those made through glibc's `syscall()`).
    pub source: String,
}

/// Pairs one thread's futex records (in time order, ticks already in ns
/// through `to_ns`) into waits and wakes. A REQUEST (RELEASE) is ended by
/// the thread's next record on the same word; a record without its
/// partner is dropped, except a last REQUEST, which becomes an
/// [`WaitOutcome::Unfinished`] wait ending at `trace_end_ns`.
pub fn pair_thread(
    process: u32,
    pid: u32,
    tid: u32,
    ops: impl IntoIterator<Item = FutexOp>,
    to_ns: impl Fn(u64) -> u64,
    trace_end_ns: u64,
    out: &mut FutexEvents,
) {
    // The thread (added with its first event), and the word and call of
    // its last call: a thread mostly calls on one word from one place, so
    // the tables are rarely searched.
    let mut thread_index: Option<u32> = None;
    let mut last_word: Option<(u64, u32)> = None;
    let mut last_call: Option<((u64, u32, u8), u32)> = None;
    let mut call_at = |out: &mut FutexEvents, first: &FutexOp, start_ns: u64, end_ns: u64| {
        let thread = *thread_index.get_or_insert_with(|| out.thread_index(process, pid, tid));
        let word = match last_word {
            Some((address, i)) if address == first.word => i,
            _ => {
                let i = out.word_index(process, first.word);
                last_word = Some((first.word, i));
                i
            }
        };
        let key = (first.site, first.stack, first.cmd);
        let call = match last_call {
            Some((k, i)) if k == key => i,
            _ => {
                let i = out.call_index(process, first.site, first.stack, first.cmd);
                last_call = Some((key, i));
                i
            }
        };
        FutexCallAt {
            thread,
            word,
            call,
            start_ns,
            end_ns: end_ns.max(start_ns),
        }
    };
    let mut open: Option<FutexOp> = None;
    for op in ops {
        match op.phase {
            Phase::Request | Phase::Release => open = Some(op),
            _ => {
                let Some(first) = open.take() else { continue };
                if first.word != op.word {
                    continue;
                }
                let at = call_at(out, &first, to_ns(first.ticks), to_ns(op.ticks));
                if first.phase == Phase::Request {
                    let outcome = match op.phase {
                        Phase::Acquired => WaitOutcome::Woken,
                        Phase::Busy => WaitOutcome::TimedOut,
                        _ => match op.value {
                            11 => WaitOutcome::ValueChanged, // EAGAIN
                            4 => WaitOutcome::Interrupted,   // EINTR
                            110 => WaitOutcome::TimedOut,    // ETIMEDOUT
                            _ => WaitOutcome::Error,
                        },
                    };
                    out.waits.push(FutexWait::new(at, outcome, None));
                } else {
                    let failed = op.phase != Phase::Released;
                    let woken = if failed { 0 } else { op.value.max(0) as u32 };
                    out.wakes.push(FutexWake::new(at, woken, failed));
                }
            }
        }
    }
    if let Some(first) = open.filter(|o| o.phase == Phase::Request) {
        let at = call_at(out, &first, to_ns(first.ticks), trace_end_ns);
        out.waits
            .push(FutexWait::new(at, WaitOutcome::Unfinished, None));
    }
}

/// Finds the waker of each woken wait: among the wakes of the same word
/// in the same process by another thread that woke somebody, the one that
/// began last before the wait returned, and still has a woken waiter not
/// yet given to an earlier-returning wait. Waits are taken in the order
/// they returned, so a wake that woke n waiters ends at most n waits.
/// A wait whose wake was not recorded (made inline, by glibc or by the
/// kernel for a robust or PI futex) keeps no waker.
pub fn match_wakers(events: &mut FutexEvents) {
    // by word index: a word is one address of one process
    let mut by_word: FxHashMap<u32, Vec<usize>> = FxHashMap::default();
    for (i, w) in events.wakes.iter().enumerate() {
        if w.woken > 0 {
            by_word.entry(w.word).or_default().push(i);
        }
    }
    // Per word: its wakes by start, the longest of them (no wake that
    // began more than that before a wait started can end inside it), and
    // which of them still have a woken waiter to give (spent ones are
    // skipped in amortised constant time): the search stays near-linear
    // when a word has many wakes and many waits whose wake was not
    // recorded, which would otherwise each scan every earlier wake.
    let mut words: FxHashMap<u32, WakesOfWord> = by_word
        .into_iter()
        .map(|(key, mut list)| {
            list.sort_by_key(|&i| events.wakes[i].start_ns);
            let longest_ns = list
                .iter()
                .map(|&k| {
                    events.wakes[k]
                        .end_ns
                        .saturating_sub(events.wakes[k].start_ns)
                })
                .max()
                .unwrap_or(0);
            let alive_below = (0..=list.len() as u32).collect();
            (
                key,
                WakesOfWord {
                    list,
                    longest_ns,
                    alive_below,
                },
            )
        })
        .collect();
    let mut left: Vec<u32> = events.wakes.iter().map(|w| w.woken).collect();
    let mut order: Vec<usize> = (0..events.waits.len())
        .filter(|&i| events.waits[i].outcome() == WaitOutcome::Woken)
        .collect();
    order.sort_by_key(|&i| events.waits[i].end_ns);
    for i in order {
        let w = events.waits[i];
        let Some(word) = words.get_mut(&w.word) else {
            continue;
        };
        // wakes that began before the wait returned, latest first
        let n = word
            .list
            .partition_point(|&k| events.wakes[k].start_ns <= w.end_ns);
        let mut p = word.alive_at_or_below(n);
        let mut found = None;
        while p > 0 {
            let k = word.list[p - 1];
            let wake = &events.wakes[k];
            if wake.start_ns.saturating_add(word.longest_ns) < w.start_ns {
                break; // this and every earlier wake ended before the wait began
            }
            // another thread's (the same word: the same process)
            if wake.thread() != w.thread() && wake.end_ns >= w.start_ns {
                found = Some((p, k));
                break;
            }
            p = word.alive_at_or_below(p - 1);
        }
        if let Some((p, k)) = found {
            left[k] -= 1;
            if left[k] == 0 {
                word.alive_below[p] = (p - 1) as u32;
            }
            events.waits[i].waker = u32::try_from(k).unwrap_or(NO_WAKER);
        }
    }
}

/// The wakes of one futex word that woke somebody, for
/// [`match_wakers`].
struct WakesOfWord {
    /// Indices into the wakes, by start time.
    list: Vec<usize>,
    /// The longest of them (end − start), ns.
    longest_ns: u64,
    /// Disjoint-set forest over positions 0..=len: position p (the wake
    /// `list[p - 1]`; 0 means none) points to itself while that wake has
    /// woken waiters left to give, else towards lower positions.
    alive_below: Vec<u32>,
}

impl WakesOfWord {
    /// The highest position ≤ `p` whose wake still has waiters to give
    /// (0: none), compressing the path.
    fn alive_at_or_below(&mut self, p: usize) -> usize {
        let mut root = p;
        while self.alive_below[root] as usize != root {
            root = self.alive_below[root] as usize;
        }
        let mut q = p;
        while self.alive_below[q] as usize != root {
            let up = self.alive_below[q] as usize;
            self.alive_below[q] = root as u32;
            q = up;
        }
        root
    }
}

/// The kind of futex user, from the names of the waiting code (the call
/// site's function and, with `--stack-every`, the functions of its stack):
/// `condvar`, `rwlock`, `mutex`, `once`, `thread park`, `innodb latch`,
/// `pi lock` (for `FUTEX_LOCK_PI`), else `futex`.
pub fn infer_kind<'a>(cmd: u8, functions: impl IntoIterator<Item = &'a str>) -> &'static str {
    if cmd == fx::CMD_LOCK_PI || cmd == fx::CMD_LOCK_PI2 || cmd == fx::CMD_UNLOCK_PI {
        return "pi lock";
    }
    for f in functions {
        let l = f.to_ascii_lowercase();
        let has = |word: &str| names_word(f, &l, word);
        if has("condvar") || has("cond_wait") || has("condition") {
            return "condvar";
        }
        if has("rwlock") {
            return "rwlock";
        }
        // MariaDB's InnoDB latches (srw_lock, ssux_lock, page_hash_latch);
        // not rayon's latches (LockLatch is a mutex and a condvar)
        if has("srw_") || has("ssux_lock") || (l.contains("latch") && !l.contains("rayon_core")) {
            return "innodb latch";
        }
        if has("mutex") || has("lock_contended") {
            return "mutex";
        }
        if l.contains("::once") || has("once_cell") || has("oncelock") {
            return "once";
        }
        if has("park") {
            return "thread park";
        }
    }
    "futex"
}

/// Whether `word` (lower case) begins a word of the function name `name`
/// (`lower`: the name in lower case): at its start, after a character
/// that is not a letter or digit (`pthread_mutex_lock`, `std::mutex`), or
/// where a capital follows a small letter (`SpinMutex`). A program called
/// `rmutex` or a function `sparkle` names no mutex and no park.
fn names_word(name: &str, lower: &str, word: &str) -> bool {
    let b = name.as_bytes();
    lower.match_indices(word).any(|(i, _)| {
        i == 0
            || !b[i - 1].is_ascii_alphanumeric()
            || (b[i].is_ascii_uppercase() && b[i - 1].is_ascii_lowercase())
    })
}

/// The kind of a futex word: the kind most of its waits name, counted
/// over `calls` (waits per (call site index, futex command)), `kind_of`
/// inferring the kind of each distinct pair once ([`infer_kind`]); on a
/// tie a named kind wins over `futex`, then the last in name order;
/// `futex` when there are none.
fn most_named_kind(
    calls: &FxHashMap<(usize, u8), u64>,
    kind_of: impl Fn(usize, u8) -> &'static str,
) -> &'static str {
    let mut kinds: BTreeMap<&'static str, u64> = BTreeMap::new();
    for (&(site, cmd), &n) in calls {
        *kinds.entry(kind_of(site, cmd)).or_default() += n;
    }
    kinds
        .into_iter()
        .max_by_key(|&(k, n)| (n, k != "futex"))
        .map_or("futex", |(k, _)| k)
}

/// The `futex` section.
#[derive(Debug, Clone, Serialize, Default, PartialEq)]
pub struct FutexReport {
    /// Totals over every traced process.
    pub summary: FutexSummary,
    /// Per futex word, most wait first.
    pub by_word: Vec<FutexWordRow>,
    /// Per call site (waits and wakes), most wait first.
    pub by_site: Vec<FutexSiteRow>,
    /// Per thread, most wait first.
    pub by_thread: Vec<FutexThreadRow>,
    /// What futex records cannot tell (hold times, uncontended
    /// acquisitions).
    pub note: String,
    /// Where each process's futex calls come from; empty (and not in
    /// JSON) when all come from the collector.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<FutexSourceRow>,
}

impl FutexReport {
    /// Each word's row by (pid, address), for the parts of a report and
    /// the exports that show a futex word elsewhere and name and classify
    /// it as the section does (the critical path's hand-overs, the
    /// timeline, pprof and folded stacks).
    pub fn rows_by_address(&self) -> FxHashMap<(u32, u64), &FutexWordRow> {
        self.by_word
            .iter()
            .filter_map(|row| {
                let a = u64::from_str_radix(row.address.trim_start_matches("0x"), 16).ok()?;
                Some(((row.pid, a), row))
            })
            .collect()
    }
}

/// Totals of the futex section.
#[derive(Debug, Clone, Serialize, Default, PartialEq)]
pub struct FutexSummary {
    /// Wait calls (`FUTEX_WAIT`, `FUTEX_WAIT_BITSET`, `FUTEX_LOCK_PI`,
    /// `futex_waitv`, …).
    pub events: u64,
    /// Of them, waits that slept: woken or timed out.
    pub contended_events: u64,
    /// Σ wait (call → return) over all wait calls, ns.
    pub wait_ns: u64,
    /// Largest single wait, ns.
    pub max_wait_ns: u64,
    /// Waits that returned woken (≥ 0).
    pub woken: u64,
    /// Waits that timed out (`ETIMEDOUT`).
    pub timed_out: u64,
    /// Waits that returned at once because the word had changed (`EAGAIN`).
    pub value_changed: u64,
    /// Waits interrupted by a signal (`EINTR`).
    pub interrupted: u64,
    /// Waits that failed otherwise, or that the trace ends inside.
    pub other: u64,
    /// Wake calls (`FUTEX_WAKE`, `FUTEX_WAKE_BITSET`, `FUTEX_WAKE_OP`,
    /// `FUTEX_CMP_REQUEUE`, `FUTEX_UNLOCK_PI`, …).
    pub wakes: u64,
    /// Σ waiters the wake calls woke (their return values).
    pub waiters_woken: u64,
    /// Wake calls that woke nobody.
    pub wakes_without_waiters: u64,
    /// Σ time inside the wake calls, ns.
    pub wake_ns: u64,
    /// Woken waits whose waker (the wake that ended them) was found.
    pub handovers: u64,
    /// Σ wake latency (the waker's wake call → the waiter's return) over
    /// those hand-overs, ns.
    pub wake_latency_ns: u64,
    /// Futex words seen.
    pub words: u64,
    /// Threads that made futex calls.
    pub threads: u64,
    /// Waits on the critical path across recorders (docs/critical-path.md).
    pub critical_events: u64,
    /// Σ their wait, ns.
    pub critical_wait_ns: u64,
    /// Of them, waits whose hand-over (wake → woken wait) the path
    /// follows to the waking thread.
    pub critical_handovers: u64,
}

/// One futex word (a lock-like object).
#[derive(Debug, Clone, Serialize, Default, PartialEq)]
pub struct FutexWordRow {
    /// Symbol of a global or static word, else the address.
    pub name: String,
    /// Address, hexadecimal.
    pub address: String,
    /// Process that owns it.
    pub pid: u32,
    /// Inferred kind ([`infer_kind`]).
    pub kind: String,
    /// Wait calls on it.
    pub events: u64,
    /// Of them, waits that slept (woken or timed out).
    pub contended_events: u64,
    /// Σ wait, ns.
    pub wait_ns: u64,
    /// Largest single wait, ns.
    pub max_wait_ns: u64,
    /// Waits woken.
    pub woken: u64,
    /// Waits timed out.
    pub timed_out: u64,
    /// Waits that returned `EAGAIN` (the word had changed).
    pub value_changed: u64,
    /// Wake calls on it.
    pub wakes: u64,
    /// Σ waiters woken by them.
    pub waiters_woken: u64,
    /// Woken waits whose waker was found.
    pub handovers: u64,
    /// Σ wake latency of those, ns.
    pub wake_latency_ns: u64,
    /// Call sites of its waits and wakes, most waiting first (short form).
    pub sites: Vec<String>,
    /// Its waits on the critical path (docs/critical-path.md).
    pub critical_events: u64,
    /// Σ their wait, ns.
    pub critical_wait_ns: u64,
    /// Hand-overs through it that the critical path follows.
    pub critical_handovers: u64,
}

/// One call site of futex waits or wakes.
#[derive(Debug, Clone, Serialize, Default, PartialEq)]
pub struct FutexSiteRow {
    /// Function name (demangled), `None` if unknown.
    pub function: Option<String>,
    /// Source file, `None` without debug information.
    pub file: Option<String>,
    /// Source line, `None` without debug information.
    pub line: Option<u32>,
    /// Module (executable or library) path.
    pub module: Option<String>,
    /// Offset in the module, hexadecimal.
    pub offset: String,
    /// `dwarf`, `symbols` or `none`: how the site was resolved.
    pub debug: String,
    /// Short display form, e.g. `lock (futex_lock.c:77)`.
    pub display: String,
    /// Inferred kind ([`infer_kind`]).
    pub kind: String,
    /// Wait calls made here.
    pub events: u64,
    /// Of them, waits that slept.
    pub contended_events: u64,
    /// Σ wait, ns.
    pub wait_ns: u64,
    /// Largest single wait, ns.
    pub max_wait_ns: u64,
    /// Wake calls made here.
    pub wakes: u64,
    /// Σ waiters woken by them.
    pub waiters_woken: u64,
    /// Its waits on the critical path (docs/critical-path.md).
    pub critical_events: u64,
    /// Σ their wait, ns.
    pub critical_wait_ns: u64,
}

/// One thread's futex calls.
#[derive(Debug, Clone, Serialize, Default, PartialEq)]
pub struct FutexThreadRow {
    /// Process id.
    pub pid: u32,
    /// Kernel thread id.
    pub tid: u32,
    /// Its name as the kernel had it ([`Recording::named_threads`]);
    /// `None` when the recording does not name it.
    pub name: Option<String>,
    /// Wait calls.
    pub events: u64,
    /// Σ wait, ns.
    pub wait_ns: u64,
    /// Wake calls.
    pub wakes: u64,
    /// Σ waiters woken.
    pub waiters_woken: u64,
}

/// The note every futex section carries.
pub const NOTE: &str = "Futex words are seen only when a thread waits or wakes in the kernel: \
uncontended acquisitions and hold times of futex-based locks are unknown, so only waits, wakes \
and wake latencies are shown. Waits and wakes made through glibc's syscall() are recorded; \
futex calls made inline (glibc's own pthread code, which the lock tables show, Go, statically \
linked programs) are seen only by the futex tracepoints (contend record --futex-trace).";

impl Analyzer for FutexAnalyzer {
    fn name(&self) -> &'static str {
        "futex"
    }

    fn analyze(&self, cx: &Context<'_>) -> Option<AnalysisOutput> {
        let recording = cx.recording;
        // The events the lock analysis collected for the critical path
        // across recorders (wakers matched, the path's marks indexing
        // them), else collected here and kept for the exports.
        let lock_events = cx.earlier::<crate::locks::LockEvents>();
        let events = match lock_events.and_then(|l| l.across_futex.as_ref()) {
            Some(kept) => Cow::Borrowed(kept),
            None => {
                let mut events = collect(recording);
                match_wakers(&mut events);
                Cow::Owned(events)
            }
        };
        if events.waits.is_empty() && events.wakes.is_empty() {
            return None;
        }
        // the critical path across recorders, marked by the lock analysis
        let path = lock_events
            .and_then(|l| l.across.as_ref())
            .filter(|a| a.futex_on_path.len() == events.waits.len());
        let report = aggregate_on_path(recording, cx.symbols, &events, path);
        let span = events
            .waits
            .iter()
            .map(|w| (w.start_ns, w.end_ns))
            .chain(events.wakes.iter().map(|w| (w.start_ns, w.end_ns)))
            .fold(None, |acc: Option<(u64, u64)>, (a, b)| {
                Some(acc.map_or((a, b), |(x, y)| (x.min(a), y.max(b))))
            });
        let mut out = AnalysisOutput::new(report);
        out.warnings
            .extend(site_warnings(recording, cx.symbols, &events));
        out.warnings.extend(unfinished_waits_warning(&events));
        if let Cow::Owned(events) = events {
            out.events = Some(Box::new(events));
        }
        out.span_ns = span;
        Some(out)
    }
}

/// The futex events of an analysed recording, for the exports: those the
/// lock analysis collected for the critical path across recorders
/// ([`crate::locks::LockEvents::across_futex`]), else those the futex
/// analysis collected; `None` when neither analysis kept any.
pub fn events_of<'a>(analysis: &'a crate::analysis::Analysis<'_>) -> Option<&'a FutexEvents> {
    analysis
        .events::<crate::locks::LockEvents>()
        .and_then(|l| l.across_futex.as_ref())
        .or_else(|| analysis.events::<FutexEvents>())
}

/// Pairs the futex records of every thread of every traced process, and
/// adds the calls of the futex tracepoints ([`add_traced_calls`]); a
/// process with tracepoint calls keeps those only (its collector futex
/// records, a subset of them, are not used).
pub fn collect(recording: &Recording) -> FutexEvents {
    let mut out = FutexEvents::default();
    let calls: &[contend_trace::futex_calls::FutexCall] = match &recording.futex_trace {
        Some(Ok(t)) => &t.calls,
        _ => &[],
    };
    let traced_pids: std::collections::BTreeSet<u32> = calls.iter().map(|c| c.pid).collect();
    for (pi, p) in recording.processes.iter().enumerate() {
        let trace = &p.trace;
        if traced_pids.contains(&trace.pid) {
            continue;
        }
        let end_ticks = trace
            .threads
            .iter()
            .filter_map(|t| t.futex_last_ticks)
            .max()
            .unwrap_or(0);
        let end_ns = if trace.finished() {
            trace
                .end
                .map(|c| c.monotonic_ns)
                .unwrap_or_else(|| recording.to_ns(trace, end_ticks))
        } else {
            recording.to_ns(trace, end_ticks)
        };
        for t in &trace.threads {
            if t.futex_count == 0 {
                continue;
            }
            // The threads are paired one after the other (into one pair
            // of vectors), so a core is free to read ahead.
            trace.futex_ops_ahead(t, |ops| {
                pair_thread(
                    pi as u32,
                    trace.pid,
                    t.tid,
                    ops,
                    |ticks| recording.to_ns(trace, ticks),
                    end_ns,
                    &mut out,
                )
            });
        }
    }
    if !calls.is_empty() {
        let end_ns = recording
            .meta
            .as_ref()
            .and_then(|m| m.end_monotonic_ns)
            .unwrap_or(0)
            .max(calls.iter().filter_map(|c| c.exit_ns).max().unwrap_or(0));
        let collector_index = |pid: u32| {
            recording
                .processes
                .iter()
                .rposition(|p| p.trace.pid == pid)
                .map(|i| i as u32)
        };
        add_traced_calls(
            calls,
            recording.processes.len() as u32,
            collector_index,
            end_ns,
            &mut out,
        );
    }
    out
}

/// The kind of a futex op word: 1 a wait, 2 a wake, 0 anything else (as
/// the collector's `futex_kind`).
fn op_kind(cmd: u8) -> u8 {
    match cmd {
        fx::CMD_WAIT
        | fx::CMD_WAIT_BITSET
        | fx::CMD_LOCK_PI
        | fx::CMD_LOCK_PI2
        | fx::CMD_WAIT_REQUEUE_PI
        | fx::CMD_WAITV => 1,
        fx::CMD_WAKE
        | fx::CMD_WAKE_BITSET
        | fx::CMD_WAKE_OP
        | fx::CMD_REQUEUE
        | fx::CMD_CMP_REQUEUE
        | fx::CMD_UNLOCK_PI => 2,
        _ => 0,
    }
}

/// Adds the calls of the futex tracepoints to `out` as waits and wakes:
/// each process gets the index `collector_index(pid)` when it also has a
/// lock trace, else `first_free` + k; a wait's outcome follows its return
/// value (≥ 0 woken, −ETIMEDOUT, −EAGAIN, −EINTR or a restart code
/// interrupted); an unfinished call ends at `end_ns`. Its site is the
/// innermost user frame, its stack the whole chain.
pub fn add_traced_calls(
    calls: &[contend_trace::futex_calls::FutexCall],
    first_free: u32,
    collector_index: impl Fn(u32) -> Option<u32>,
    end_ns: u64,
    out: &mut FutexEvents,
) {
    let mut index_of: FxHashMap<u32, u32> = FxHashMap::default();
    let mut next = first_free;
    let mut sorted: Vec<&contend_trace::futex_calls::FutexCall> = calls.iter().collect();
    sorted.sort_by_key(|c| (c.pid, c.tid, c.enter_ns));
    for c in sorted {
        // futex_waitv (its own tracepoints) carries CMD_WAITV as its op
        let cmd = if c.op == u32::from(fx::CMD_WAITV) {
            fx::CMD_WAITV
        } else {
            (c.op & 127) as u8
        };
        let kind = op_kind(cmd);
        if kind == 0 {
            continue;
        }
        let process = *index_of.entry(c.pid).or_insert_with(|| {
            collector_index(c.pid).unwrap_or_else(|| {
                next += 1;
                next - 1
            })
        });
        let tp = out.traced.entry(process).or_insert_with(|| TracedProcess {
            pid: c.pid,
            stacks: Vec::new(),
        });
        let stack = if c.frames.len() > 1 {
            tp.stacks.push(c.frames.clone());
            (tp.stacks.len() - 1) as u32
        } else {
            NO_STACK
        };
        let site = c.frames.first().copied().unwrap_or(0);
        let start_ns = c.enter_ns;
        let end = c.exit_ns.unwrap_or(end_ns).max(start_ns);
        let at = FutexCallAt {
            thread: out.thread_index(process, c.pid, c.tid),
            word: out.word_index(process, c.uaddr),
            call: out.call_index(process, site, stack, cmd),
            start_ns,
            end_ns: end,
        };
        if kind == 1 {
            let outcome = match (c.exit_ns, c.ret) {
                (None, _) => WaitOutcome::Unfinished,
                (_, r) if r >= 0 => WaitOutcome::Woken,
                (_, -110) => WaitOutcome::TimedOut,
                (_, -11) => WaitOutcome::ValueChanged,
                // EINTR, ERESTARTSYS, ERESTARTNOHAND, ERESTART_RESTARTBLOCK
                (_, -4 | -512 | -514 | -516) => WaitOutcome::Interrupted,
                _ => WaitOutcome::Error,
            };
            out.waits.push(FutexWait::new(at, outcome, None));
        } else {
            let failed = c.exit_ns.is_none() || c.ret < 0;
            let woken = if failed {
                0
            } else {
                u32::try_from(c.ret).unwrap_or(u32::MAX)
            };
            out.wakes.push(FutexWake::new(at, woken, failed));
        }
    }
}

/// The site shown for a futex call: the call site, or, when it is a
/// system library's (Rust's std, libstdc++) and a stack was recorded, the
/// first frame of the user's code; with the function names seen on the
/// way, for [`infer_kind`].
fn user_site(
    recording: &Recording,
    symbols: &Symbols,
    ev: &FutexEvents,
    process: u32,
    site: u64,
    stack: u32,
) -> (u64, ResolvedSite, Vec<String>) {
    let maps = maps_of(recording, ev, process);
    let first = symbols.site(maps, site);
    let mut names = symbols.site_functions(maps, site);
    // a tracepoint site is the instruction after the `syscall`: inside
    // libc's syscall() wrapper for a statically linked program
    let wrapper = |r: &ResolvedSite| {
        ev.traced.contains_key(&process)
            && r.function
                .as_deref()
                .is_some_and(|f| f == "syscall" || f.ends_with("_syscall"))
    };
    if stack == NO_STACK || !(is_system_site(&first) || is_std(&first) || wrapper(&first)) {
        return (site, first, names);
    }
    let frames = match ev.traced.get(&process) {
        Some(tp) => tp.stacks.get(stack as usize),
        None => recording
            .processes
            .get(process as usize)
            .and_then(|p| p.trace.stacks.get(stack as usize)),
    };
    for &address in frames.into_iter().flatten().skip(1) {
        let r = symbols.site(maps, address);
        names.extend(symbols.site_functions(maps, address));
        if is_system_site(&r) || is_std(&r) || wrapper(&r) {
            continue;
        }
        return (address, r, names);
    }
    (site, first, names)
}

/// The memory maps of futex process `process`: its lock trace's, or for a
/// process seen only by the tracepoints, its latest `maps/<pid>*.maps`.
fn maps_of<'r>(
    recording: &'r Recording,
    ev: &FutexEvents,
    process: u32,
) -> Option<&'r contend_symbolize::ProcessMaps> {
    recording.process_maps(process).or_else(|| {
        let tp = ev.traced.get(&process)?;
        recording
            .maps_of_pid(tp.pid)
            .into_iter()
            .find_map(Result::ok)
    })
}

/// The warnings about the sites futex waits are shown at ([`ShownSites`],
/// as the `by_site` rows show them), from one pass over the waits:
/// [`library_sites_warning`] for the waits shown inside Rust's standard
/// library or a system library (waits seen by the futex tracepoints,
/// which come with their call chains, are not counted), and
/// [`go_runtime_warning`] for those in Go's runtime.
pub fn site_warnings(recording: &Recording, symbols: &Symbols, ev: &FutexEvents) -> Vec<String> {
    let mut shown = ShownSites::new(recording, symbols, ev);
    let mut library = LibraryWaits::default();
    let mut go = 0u64;
    for w in &ev.waits {
        let c = ev.wait_info(w);
        let (_, r) = shown.site(c.process, c.site, c.stack);
        go += u64::from(is_go_runtime(r));
        if ev.traced.contains_key(&c.process) || !(is_system_site(r) || is_std(r)) {
            continue;
        }
        *library.per_site.entry(r.display.clone()).or_default() += 1;
        library.waits += 1;
        library.with_stack += u64::from(c.stack != NO_STACK);
        library.rust |= is_std(r);
    }
    let total = ev.waits.len();
    [
        library_sites_warning(library, total),
        go_runtime_warning(go, total),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// The futex waits shown inside a library ([`site_warnings`]).
#[derive(Default)]
struct LibraryWaits {
    /// Waits per shown site's text.
    per_site: BTreeMap<String, u64>,
    /// Waits in all.
    waits: u64,
    /// Of them, those recorded with a call stack.
    with_stack: u64,
    /// Some site is in Rust's standard library.
    rust: bool,
}

/// A warning when futex waits are shown at a site inside Rust's standard
/// library or a system library: the `syscall()` of std's `Mutex` and
/// `Condvar` (`std::sys::pal::unix::futex::futex_wait`) is one site for
/// every lock of a Rust program, so the tables cannot say which lock of
/// the user's code waited. Says how many waits (of `total`) and at which
/// sites (at most three), and that `contend record --stack-every 1` moves
/// them to the first frame of the program's own code; `None` when no wait
/// is shown in a library.
fn library_sites_warning(l: LibraryWaits, total: usize) -> Option<String> {
    let n = l.waits;
    if n == 0 {
        return None;
    }
    let sites = crate::report::layout::busiest(
        l.per_site.into_iter().map(|(d, k)| (k, d)).collect(),
        3,
        ", ",
    );
    let mut why = Vec::new();
    if l.with_stack < n {
        let because = if l.rust {
            "Rust's std::sync::Mutex and Condvar wait in one function of the standard library, so every lock shares such a site"
        } else {
            "a library's locks wait in its own code, so every lock of that library shares such a site"
        };
        why.push(format!(
            "{} of them carry no recorded stack: record with --stack-every 1 to show each at the first line of your code on its stack ({because})",
            n - l.with_stack
        ));
    }
    if l.with_stack > 0 {
        why.push(format!(
            "the recorded stacks of {} of them reach no frame in your code that resolves (the walk ends in a library built without frame pointers, or your code lacks debug information)",
            l.with_stack
        ));
    }
    Some(format!(
        "{n} of {total} futex wait(s) have their call site in {} ({sites}), not in your code; {}",
        if l.rust {
            "Rust's standard library or a system library"
        } else {
            "a system library"
        },
        why.join("; ")
    ))
}

/// A warning when futex waits had not returned when their thread's trace
/// ended (the program exited, or the recording stopped, while they
/// waited: a runtime's idle threads at exit): their wait is counted to the
/// trace's end and may lie on the critical path, so the report says how
/// many and how much (the lock analysis says the same of locks still
/// held). `None` when every wait returned.
pub fn unfinished_waits_warning(ev: &FutexEvents) -> Option<String> {
    let (n, ns) = ev
        .waits
        .iter()
        .filter(|w| w.outcome() == WaitOutcome::Unfinished)
        .fold((0u64, 0u64), |(n, ns), w| (n + 1, ns + w.wait_ns()));
    (n > 0).then(|| {
        format!(
            "{n} futex wait(s) had not returned when their thread's trace ended (the program exited or the recording stopped while they waited): their {} of wait run to the trace's end and count among the 'other' outcomes",
            crate::report::layout::Cell::Ns(ns).plain()
        )
    })
}

/// A warning when futex waits are the Go runtime's own (`n` of `total`,
/// shown at a function `runtime.…` of Go's runtime sources, e.g.
/// `runtime.futex` in `sys_linux_amd64.s`): a Go program's threads sleep
/// on futexes when they have no goroutine to run and in the runtime's
/// internal locks, while `sync.Mutex`, `sync.WaitGroup` and channel waits
/// park goroutines inside Go's scheduler without a futex call, so the
/// program's own lock waits are not among them. Says how many waits and
/// where Go's own profiles are; `None` when no wait is the Go runtime's.
fn go_runtime_warning(n: u64, total: usize) -> Option<String> {
    (n > 0).then(|| {
        format!(
            "{n} of {total} futex wait(s) are the Go runtime's own (its threads sleeping without a goroutine to run, its internal locks), not the program's lock waits: sync.Mutex, sync.WaitGroup and channel waits park goroutines inside Go's scheduler without a futex call and are not seen here; Go's mutex and block profiles show them (runtime.SetMutexProfileFraction, runtime.SetBlockProfileRate, go tool pprof)"
        )
    })
}

/// A site in Go's runtime: a `runtime.` function of its sources (a `.go`
/// or `.s` file under `runtime/`).
fn is_go_runtime(site: &ResolvedSite) -> bool {
    site.function
        .as_deref()
        .is_some_and(|f| f.starts_with("runtime."))
        && site
            .file
            .as_deref()
            .is_some_and(|f| f.contains("/runtime/") && (f.ends_with(".go") || f.ends_with(".s")))
}

/// Rust's standard library (its sources are outside the user's tree).
fn is_std(site: &ResolvedSite) -> bool {
    site.file.as_deref().is_some_and(|f| {
        f.contains("/rustc/") || f.contains("/library/std/") || f.contains("/library/core/")
    }) || site
        .function
        .as_deref()
        .is_some_and(|f| f.starts_with("std::") || f.starts_with("core::"))
}

/// The site a futex wait or wake is shown at, as the report's `by_site`
/// rows show it ([`user_site`]: the call site, or the first frame of the
/// user's code past system libraries and Rust's std), memoized per
/// (process, site, stack): the exports (timeline, pprof, folded stacks)
/// use it so that their totals per site equal the report's. Memory grows
/// with the distinct call sites and stacks, not with the events.
pub(crate) struct ShownSites<'r> {
    recording: &'r Recording,
    symbols: &'r Symbols,
    ev: &'r FutexEvents,
    cache: FxHashMap<(u32, u64, u32), (u64, ResolvedSite)>,
}

impl<'r> ShownSites<'r> {
    /// A resolver over the futex events `ev` of `recording`.
    pub(crate) fn new(
        recording: &'r Recording,
        symbols: &'r Symbols,
        ev: &'r FutexEvents,
    ) -> ShownSites<'r> {
        ShownSites {
            recording,
            symbols,
            ev,
            cache: FxHashMap::default(),
        }
    }

    /// The memory maps of futex process `process`, when recorded.
    pub(crate) fn maps(&self, process: u32) -> Option<&'r contend_symbolize::ProcessMaps> {
        maps_of(self.recording, self.ev, process)
    }

    /// The call stack recorded with a call of futex process `process`
    /// (`stack` as in [`FutexCallSite::stack`]), innermost frame first; `None`
    /// without one.
    pub(crate) fn stack(&self, process: u32, stack: u32) -> Option<&'r [u64]> {
        if stack == NO_STACK {
            return None;
        }
        let frames = match self.ev.traced.get(&process) {
            Some(tp) => tp.stacks.get(stack as usize),
            None => self
                .recording
                .processes
                .get(process as usize)
                .and_then(|p| p.trace.stacks.get(stack as usize)),
        };
        frames.map(Vec::as_slice).filter(|f| !f.is_empty())
    }

    /// The shown site of a call made in futex process `process` at `site`
    /// with recorded stack `stack` (`NO_STACK`: none): its address and
    /// resolution.
    pub(crate) fn site(&mut self, process: u32, site: u64, stack: u32) -> &(u64, ResolvedSite) {
        let (recording, symbols, ev) = (self.recording, self.symbols, self.ev);
        self.cache.entry((process, site, stack)).or_insert_with(|| {
            let (address, r, _) = user_site(recording, symbols, ev, process, site, stack);
            (address, r)
        })
    }
}

/// Builds the section from the paired events.
pub fn aggregate(recording: &Recording, symbols: &Symbols, ev: &FutexEvents) -> FutexReport {
    aggregate_on_path(recording, symbols, ev, None)
}

/// [`aggregate`], with the waits on the critical path across recorders
/// counted per word, site and in total (`path.futex_on_path` indexed like
/// `ev.waits`).
pub fn aggregate_on_path(
    recording: &Recording,
    symbols: &Symbols,
    ev: &FutexEvents,
    path: Option<&crate::locks::across::AcrossPath>,
) -> FutexReport {
    let on_path = |i: usize| path.is_some_and(|p| p.futex_on_path.get(i) == Some(&true));
    let handed: FxHashSet<u32> = path
        .into_iter()
        .flat_map(|p| p.hand_overs.iter())
        .filter(|h| h.source == crate::locks::across::Source::Futex)
        .map(|h| h.waiting)
        .collect();
    // Sites: (process, site, stack) → shown site, its resolution and kind.
    let mut site_cache: FxHashMap<(u32, u64, u32), (u64, usize)> = FxHashMap::default();
    let mut sites: Vec<(u32, u64, ResolvedSite, Vec<String>)> = Vec::new();
    let mut site_of = |process: u32, site: u64, stack: u32| -> usize {
        let (_, i) = *site_cache.entry((process, site, stack)).or_insert_with(|| {
            let (address, r, names) = user_site(recording, symbols, ev, process, site, stack);
            // one row per place shown, as the lock tables have it (the
            // copies of a call in an unrolled loop, a line in a forked
            // child and its parent), unless the functions they were
            // reached through differ: those name the kind (a library's
            // wait inlined into its mutex and into its condition variable)
            if let Some(i) = sites.iter().position(|s| {
                (s.0 == process && s.1 == address)
                    || (s.2.display == r.display && s.2.module == r.module && s.3 == names)
            }) {
                return (address, i);
            }
            sites.push((process, address, r, names));
            (address, sites.len() - 1)
        });
        i
    };
    // ... and per call site of the tables (a call names its process, site
    // and stack): the shown site of each, found at its first event
    let mut call_site: Vec<Option<usize>> = vec![None; ev.calls.len()];
    let mut shown_site = |call: u32, c: &FutexCallInfo| -> usize {
        *call_site[call as usize].get_or_insert_with(|| site_of(c.process, c.site, c.stack))
    };

    let mut summary = FutexSummary::default();
    let mut words: BTreeMap<(u32, u64), FutexWordRow> = BTreeMap::new();
    let mut word_sites: FxHashMap<(u32, u64), BTreeMap<usize, SiteUse>> = FxHashMap::default();
    // Per word: how many of its waits and wakes went through each (site,
    // command); a kind is inferred once per distinct pair, not per call.
    let mut word_kind: FxHashMap<(u32, u64), FxHashMap<(usize, u8), u64>> = FxHashMap::default();
    let mut site_rows: BTreeMap<usize, FutexSiteRow> = BTreeMap::new();
    let mut site_cmd: FxHashMap<usize, u8> = FxHashMap::default();
    let mut threads: BTreeMap<(u32, u32), FutexThreadRow> = BTreeMap::new();

    for (wi, w) in ev.waits.iter().enumerate() {
        let ns = w.wait_ns();
        let critical = on_path(wi);
        let handover = u64::from(handed.contains(&(wi as u32)));
        if critical {
            summary.critical_events += 1;
            summary.critical_wait_ns += ns;
            summary.critical_handovers += handover;
        }
        let slept = u64::from(w.slept());
        let outcome = w.outcome();
        let c = ev.wait_info(w);
        summary.events += 1;
        summary.contended_events += slept;
        summary.wait_ns += ns;
        summary.max_wait_ns = summary.max_wait_ns.max(ns);
        match outcome {
            WaitOutcome::Woken => summary.woken += 1,
            WaitOutcome::TimedOut => summary.timed_out += 1,
            WaitOutcome::ValueChanged => summary.value_changed += 1,
            WaitOutcome::Interrupted => summary.interrupted += 1,
            WaitOutcome::Error | WaitOutcome::Unfinished => summary.other += 1,
        }
        let latency = w
            .waker()
            .map(|k| w.end_ns.saturating_sub(ev.wakes[k as usize].start_ns));
        if let Some(l) = latency {
            summary.handovers += 1;
            summary.wake_latency_ns += l;
        }
        let si = shown_site(w.call, &c);
        site_cmd.entry(si).or_insert(c.cmd);
        let key = (c.process, c.word);
        let row = words.entry(key).or_insert_with(|| word_row(c.pid, c.word));
        row.events += 1;
        row.contended_events += slept;
        row.wait_ns += ns;
        row.max_wait_ns = row.max_wait_ns.max(ns);
        row.woken += u64::from(outcome == WaitOutcome::Woken);
        row.timed_out += u64::from(outcome == WaitOutcome::TimedOut);
        row.value_changed += u64::from(outcome == WaitOutcome::ValueChanged);
        if critical {
            row.critical_events += 1;
            row.critical_wait_ns += ns;
            row.critical_handovers += handover;
        }
        if let Some(l) = latency {
            row.handovers += 1;
            row.wake_latency_ns += l;
        }
        let used = word_sites.entry(key).or_default().entry(si).or_default();
        used.wait_ns += ns;
        used.waits += 1;
        *word_kind
            .entry(key)
            .or_default()
            .entry((si, c.cmd))
            .or_default() += 1;
        let s = site_rows.entry(si).or_default();
        s.events += 1;
        s.contended_events += slept;
        s.wait_ns += ns;
        s.max_wait_ns = s.max_wait_ns.max(ns);
        if critical {
            s.critical_events += 1;
            s.critical_wait_ns += ns;
        }
        let t = threads.entry((c.pid, c.tid)).or_default();
        t.events += 1;
        t.wait_ns += ns;
    }
    for w in &ev.wakes {
        let c = ev.wake_info(w);
        summary.wakes += 1;
        summary.waiters_woken += u64::from(w.woken);
        summary.wakes_without_waiters += u64::from(w.woken == 0);
        summary.wake_ns += w.end_ns - w.start_ns;
        let si = shown_site(w.call, &c);
        site_cmd.entry(si).or_insert(c.cmd);
        let key = (c.process, c.word);
        let row = words.entry(key).or_insert_with(|| word_row(c.pid, c.word));
        row.wakes += 1;
        row.waiters_woken += u64::from(w.woken);
        let used = word_sites.entry(key).or_default().entry(si).or_default();
        used.wakes += 1;
        used.waiters_woken += u64::from(w.woken);
        let s = site_rows.entry(si).or_default();
        s.wakes += 1;
        s.waiters_woken += u64::from(w.woken);
        let t = threads.entry((c.pid, c.tid)).or_default();
        t.wakes += 1;
        t.waiters_woken += u64::from(w.woken);
    }
    summary.words = words.len() as u64;
    summary.threads = threads.len() as u64;

    let kind_of_site = |si: usize, cmd: u8| -> &'static str {
        infer_kind(cmd, sites[si].3.iter().map(String::as_str))
    };
    let mut by_word: Vec<FutexWordRow> = words
        .into_iter()
        .map(|(key, mut row)| {
            if let Some(name) = symbols.object(maps_of(recording, ev, key.0), key.1) {
                row.name = name;
            }
            // glibc's and libstdc++'s own locks, by symbol or by the
            // functions their waits and wakes went through
            let functions = word_sites
                .get(&key)
                .into_iter()
                .flat_map(|m| m.keys())
                .flat_map(|&si| sites[si].3.iter().map(String::as_str));
            if let Some(known) = crate::locks::known::runtime_futex_name(&row.name, functions) {
                row.name = known;
            }
            // the kind its waits name (most of them); `futex` for a word
            // only woken (its wakes' code rarely names what it wakes)
            row.kind = word_kind
                .get(&key)
                .map_or("futex", |calls| most_named_kind(calls, kind_of_site))
                .to_string();
            // a word on the heap or the stack: named after the line of the
            // user's code that waits on it or wakes it
            if row.name == row.address {
                if let Some(name) = word_sites
                    .get(&key)
                    .and_then(|m| usage_name(&row.kind, m, |si| &sites[si].2))
                {
                    row.name = name;
                }
            }
            let mut s: Vec<(usize, u64)> = word_sites
                .get(&key)
                .map(|m| m.iter().map(|(&i, u)| (i, u.wait_ns)).collect())
                .unwrap_or_default();
            s.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
            for &(i, _) in &s {
                let d = &sites[i].2.display;
                if !row.sites.contains(d) {
                    row.sites.push(d.clone());
                }
            }
            row
        })
        .collect();
    by_word.sort_by(|a, b| {
        b.wait_ns
            .cmp(&a.wait_ns)
            .then(b.wakes.cmp(&a.wakes))
            .then(a.address.cmp(&b.address))
    });
    let mut by_site: Vec<FutexSiteRow> = site_rows
        .into_iter()
        .map(|(si, mut row)| {
            let r = &sites[si].2;
            row.function = r.function.clone();
            row.file = r.file.clone();
            row.line = r.line;
            row.module = r.module.clone();
            row.offset = format!("{:#x}", r.offset);
            row.debug = r.debug.to_string();
            row.display = r.display.clone();
            row.kind = kind_of_site(si, site_cmd.get(&si).copied().unwrap_or(0)).to_string();
            row
        })
        .collect();
    by_site.sort_by(|a, b| {
        b.wait_ns
            .cmp(&a.wait_ns)
            .then(b.wakes.cmp(&a.wakes))
            .then(a.display.cmp(&b.display))
    });
    let thread_names = recording.named_threads();
    let mut by_thread: Vec<FutexThreadRow> = threads
        .into_iter()
        .map(|((pid, tid), mut row)| {
            row.pid = pid;
            row.tid = tid;
            row.name = thread_names.get(&(pid, tid)).map(|n| n.to_string());
            row
        })
        .collect();
    by_thread.sort_by(|a, b| b.wait_ns.cmp(&a.wait_ns).then(a.tid.cmp(&b.tid)));
    let mut note = NOTE.to_string();
    let mut sources = Vec::new();
    if !ev.traced.is_empty() {
        let mut pids: BTreeMap<u32, &'static str> = BTreeMap::new();
        for t in &ev.threads {
            pids.entry(t.pid).or_insert("collector");
        }
        for tp in ev.traced.values() {
            pids.insert(tp.pid, "tracepoints");
        }
        sources = pids
            .into_iter()
            .map(|(pid, source)| FutexSourceRow {
                pid,
                source: source.into(),
            })
            .collect();
        let traced: Vec<String> = ev.traced.values().map(|t| t.pid.to_string()).collect();
        note.push_str(&format!(
            " The futex calls of process {} come from the kernel's futex tracepoints (every futex \
             call, inline ones too, glibc's pthread waits included; call sites from user call chains \
             through frame pointers: without them a site may name the caller's caller).",
            traced.join(", ")
        ));
    }
    FutexReport {
        summary,
        by_word,
        by_site,
        by_thread,
        note,
        sources,
    }
}

/// How a futex word's waits and wakes used one call site.
#[derive(Debug, Clone, Copy, Default)]
struct SiteUse {
    /// Σ wait of the waits there, ns.
    wait_ns: u64,
    /// Wait calls there.
    waits: u64,
    /// Wake calls there.
    wakes: u64,
    /// Σ waiters those woke.
    waiters_woken: u64,
}

/// The name of a futex word that has no symbol (on the heap or a stack,
/// whose address changes from run to run), after the call site in the
/// user's code (not a system header or library: [`is_system_site`]) that
/// used it most: the one with the most wait time, else the most waits,
/// else the most waiters woken, else the most wakes (a thread that took
/// the lock after waiting wakes at every unlock, mostly nobody): `mutex
/// waited on at queue.rs:40 (queue::pop)`, or `mutex woken at …` when
/// the user's code only wakes it (Rust's
/// `std::sync::Mutex` waits inside the standard library and wakes from
/// the inlined unlock); `futex word waited on in …` without line
/// information. `None` when no site of the word is the user's (record
/// with `--stack-every 1` to see past the library's waits). `sites` maps
/// call sites (keys of `used`) to their resolution.
fn usage_name<'s>(
    kind: &str,
    used: &BTreeMap<usize, SiteUse>,
    sites: impl Fn(usize) -> &'s ResolvedSite,
) -> Option<String> {
    let (si, u) = used
        .iter()
        .filter(|(&si, _)| !is_system_site(sites(si)))
        .max_by(|(a, x), (b, y)| {
            (x.wait_ns, x.waits, x.waiters_woken, x.wakes)
                .cmp(&(y.wait_ns, y.waits, y.waiters_woken, y.wakes))
                .then(b.cmp(a))
        })?;
    let site = sites(*si);
    if site.function.is_none() && site.file.is_none() {
        // an address without a symbol says nothing the address did not
        return None;
    }
    let kind = if kind == "futex" { "futex word" } else { kind };
    let verb = if u.waits > 0 { "waited on" } else { "woken" };
    Some(crate::locks::creation::object_named_at(
        kind,
        verb,
        site.function.as_deref(),
        site.file.as_deref(),
        site.line,
        &site.display,
    ))
}

fn word_row(pid: u32, word: u64) -> FutexWordRow {
    FutexWordRow {
        name: format!("{word:#x}"),
        address: format!("{word:#x}"),
        pid,
        ..FutexWordRow::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A word without a symbol is named after the user's site that used
    /// it most: a site in the standard library is passed over however
    /// long its waits; a wait site wins over wake sites, and among wake
    /// sites the one that woke waiters over one that woke nobody, however
    /// often; without line information the site's short form is used; a
    /// bare address or only library sites give no name.
    #[test]
    fn a_word_is_named_after_the_users_site_that_used_it_most() {
        let site = |function: Option<&str>, file: Option<&str>, line: Option<u32>| ResolvedSite {
            function: function.map(Into::into),
            file: file.map(Into::into),
            line,
            module: Some("/home/u/app".into()),
            debug: "dwarf",
            display: format!("{} ({})", function.unwrap_or("??"), file.unwrap_or("?")),
            ..ResolvedSite::default()
        };
        let sites = [
            site(
                Some("std::sys::pal::unix::futex::futex_wait"),
                Some("/rustc/abc/library/std/src/sys/pal/unix/futex.rs"),
                Some(73),
            ),
            site(Some("app::worker"), Some("/home/u/src/app.rs"), Some(40)),
            site(Some("app::main"), Some("/home/u/src/app.rs"), Some(12)),
            site(Some("app::pop"), Some("/home/u/src/q.rs"), Some(7)),
            site(Some("app::push"), None, None),
            site(None, None, None),
        ];
        let used = |uses: &[(usize, SiteUse)]| -> BTreeMap<usize, SiteUse> {
            uses.iter().copied().collect()
        };
        let wait = |wait_ns, waits| SiteUse {
            wait_ns,
            waits,
            ..SiteUse::default()
        };
        let wake = |wakes, waiters_woken| SiteUse {
            wakes,
            waiters_woken,
            ..SiteUse::default()
        };
        let name =
            |kind: &str, uses: &[(usize, SiteUse)]| usage_name(kind, &used(uses), |i| &sites[i]);
        // the library's wait passed over; main's wakes woke the waiters
        assert_eq!(
            name(
                "mutex",
                &[(0, wait(9_000, 9)), (1, wake(50, 0)), (2, wake(6, 6))]
            ),
            Some("mutex woken at app.rs:12 (app::main)".into())
        );
        // a wait in the user's code: the longest
        assert_eq!(
            name(
                "condvar",
                &[(1, wake(6, 6)), (3, wait(10, 1)), (2, wait(20, 1))]
            ),
            Some("condvar waited on at app.rs:12 (app::main)".into())
        );
        assert_eq!(
            name("futex", &[(4, wait(5, 1))]),
            Some("futex word waited on in app::push (?)".into())
        );
        assert_eq!(name("mutex", &[(0, wait(5, 1)), (5, wake(1, 1))]), None);
        assert_eq!(name("mutex", &[(0, wait(5, 1))]), None);
    }

    /// A wait and a wake are 32 bytes each (one per futex call: millions;
    /// they were 64 and 56 with the thread, word and site inline).
    #[test]
    fn a_wait_and_a_wake_are_32_bytes() {
        assert_eq!(std::mem::size_of::<FutexWait>(), 32);
        assert_eq!(std::mem::size_of::<FutexWake>(), 32);
    }

    /// Thread `thread`'s call on word and call site `index`.
    fn call_at(thread: u32, index: u32) -> FutexCallAt {
        FutexCallAt {
            thread,
            word: index,
            call: index,
            start_ns: 0,
            end_ns: 0,
        }
    }

    /// Every outcome and the failure bit survive packing beside the
    /// largest thread index; the tables number each key once.
    #[test]
    fn packed_fields_read_back() {
        let top = THREAD_MASK;
        for (k, &o) in OUTCOMES.iter().enumerate() {
            let at = |thread| FutexCallAt {
                thread,
                word: 7,
                call: 9,
                start_ns: 10,
                end_ns: 20,
            };
            let w = FutexWait::new(at(top - k as u32), o, Some(3));
            assert_eq!(
                (w.thread(), w.outcome(), w.waker(), w.word, w.call),
                (top - k as u32, o, Some(3), 7, 9)
            );
        }
        assert_eq!(
            FutexWait::new(call_at(0, 0), WaitOutcome::Woken, None).waker(),
            None
        );
        for failed in [false, true] {
            let w = FutexWake::new(call_at(top, 1), 5, failed);
            assert_eq!(
                (w.thread(), w.failed(), w.woken, w.word),
                (top, failed, 5, 1)
            );
        }
        let mut ev = FutexEvents::default();
        assert_eq!(ev.thread_index(0, 7, 1), 0);
        assert_eq!(ev.thread_index(0, 7, 2), 1);
        assert_eq!(ev.thread_index(0, 7, 1), 0);
        assert_eq!(ev.word_index(0, 0x10), 0);
        assert_eq!(ev.word_index(1, 0x10), 1, "a word is per process");
        assert_eq!(ev.call_index(0, 0x40, NO_STACK, fx::CMD_WAIT), 0);
        assert_eq!(ev.call_index(0, 0x40, NO_STACK, fx::CMD_WAKE), 1);
        assert_eq!(ev.call_index(0, 0x40, NO_STACK, fx::CMD_WAIT), 0);
        let info = ev.wait_info(&FutexWait::new(call_at(1, 1), WaitOutcome::Woken, None));
        assert_eq!(
            (
                info.process,
                info.pid,
                info.tid,
                info.word,
                info.site,
                info.cmd
            ),
            (0, 7, 2, 0x10, 0x40, fx::CMD_WAKE)
        );
    }

    fn op(ticks: u64, word: u64, phase: Phase, cmd: u8, value: i32) -> FutexOp {
        FutexOp {
            ticks,
            word,
            site: 0x40,
            phase,
            cmd,
            private: true,
            value,
            stack: NO_STACK,
        }
    }

    /// Thread 1 waits on word A from 100 to 500 (woken); thread 2 wakes A
    /// at 450–470 (1 woken): the hand-over, latency 500 − 450 = 50 ns. A
    /// second wait of thread 1 (600 → 605, EAGAIN) has no waker; a timed
    /// wait (700 → 800, ETIMEDOUT) neither.
    #[test]
    fn pairs_and_hand_overs_worked_by_hand() {
        let a = 0x1000;
        let mut ev = FutexEvents::default();
        let t1 = [
            op(100, a, Phase::Request, fx::CMD_WAIT, 0),
            op(500, a, Phase::Acquired, fx::CMD_WAIT, 0),
            op(600, a, Phase::Request, fx::CMD_WAIT, 0),
            op(605, a, Phase::Error, fx::CMD_WAIT, 11),
            op(700, a, Phase::Request, fx::CMD_WAIT_BITSET, 0),
            op(800, a, Phase::Busy, fx::CMD_WAIT_BITSET, 110),
        ];
        let t2 = [
            op(450, a, Phase::Release, fx::CMD_WAKE, 0),
            op(470, a, Phase::Released, fx::CMD_WAKE, 1),
            op(900, a, Phase::Release, fx::CMD_WAKE, 0),
            op(910, a, Phase::Released, fx::CMD_WAKE, 0),
        ];
        pair_thread(0, 7, 1, t1.iter().copied(), |t| t, 1000, &mut ev);
        pair_thread(0, 7, 2, t2.iter().copied(), |t| t, 1000, &mut ev);
        match_wakers(&mut ev);
        let outcomes: Vec<_> = ev.waits.iter().map(|w| w.outcome()).collect();
        assert_eq!(
            outcomes,
            [
                WaitOutcome::Woken,
                WaitOutcome::ValueChanged,
                WaitOutcome::TimedOut
            ]
        );
        assert_eq!(ev.waits[0].waker(), Some(0));
        assert_eq!(ev.waits[1].waker(), None);
        assert_eq!(ev.waits[2].waker(), None);
        assert_eq!(ev.wakes[0].woken, 1);
        assert_eq!(ev.wakes[1].woken, 0);
        // Σ wait = 400 + 5 + 100 = 505 ns; slept: 2 (woken, timed out).
        let total: u64 = ev.waits.iter().map(FutexWait::wait_ns).sum();
        assert_eq!(total, 505);
        assert_eq!(ev.waits.iter().filter(|w| w.slept()).count(), 2);
    }

    /// One wake of 2 waiters ends two waits; a third waiter on the same
    /// word, woken later by nobody recorded, keeps no waker; a wake by the
    /// waiter's own thread is never its waker.
    #[test]
    fn a_wake_ends_at_most_as_many_waits_as_it_woke() {
        let a = 0x2000;
        let mut ev = FutexEvents::default();
        for (tid, end) in [(1u32, 210u64), (2, 220), (3, 900)] {
            let ops = [
                op(100, a, Phase::Request, fx::CMD_WAIT, 0),
                op(end, a, Phase::Acquired, fx::CMD_WAIT, 0),
            ];
            pair_thread(0, 7, tid, ops.iter().copied(), |t| t, 1000, &mut ev);
        }
        let wake = [
            op(200, a, Phase::Release, fx::CMD_WAKE, 0),
            op(205, a, Phase::Released, fx::CMD_WAKE, 2),
        ];
        pair_thread(0, 7, 4, wake.iter().copied(), |t| t, 1000, &mut ev);
        let own = [
            op(800, a, Phase::Release, fx::CMD_WAKE, 0),
            op(805, a, Phase::Released, fx::CMD_WAKE, 1),
        ];
        pair_thread(0, 7, 3, own.iter().copied(), |t| t, 1000, &mut ev);
        match_wakers(&mut ev);
        let wakers: Vec<_> = ev.waits.iter().map(|w| w.waker()).collect();
        assert_eq!(wakers, [Some(0), Some(0), None]);
    }

    /// The waker rule of [`match_wakers`]'s docs, as a backward search over
    /// every earlier wake of the word.
    fn wakers_by_search(ev: &FutexEvents) -> Vec<Option<u32>> {
        let mut left: Vec<u32> = ev.wakes.iter().map(|w| w.woken).collect();
        let mut found = vec![None; ev.waits.len()];
        let mut order: Vec<usize> = (0..ev.waits.len())
            .filter(|&i| ev.waits[i].outcome() == WaitOutcome::Woken)
            .collect();
        order.sort_by_key(|&i| ev.waits[i].end_ns);
        for i in order {
            let w = ev.waits[i];
            let (wi, tid) = (ev.wait_info(&w), |k: usize| ev.wake_info(&ev.wakes[k]).tid);
            let mut list: Vec<usize> = (0..ev.wakes.len())
                .filter(|&k| {
                    let c = ev.wake_info(&ev.wakes[k]);
                    ev.wakes[k].woken > 0 && (c.process, c.word) == (wi.process, wi.word)
                })
                .collect();
            list.sort_by_key(|&k| ev.wakes[k].start_ns);
            let n = list.partition_point(|&k| ev.wakes[k].start_ns <= w.end_ns);
            let k = list[..n]
                .iter()
                .rev()
                .copied()
                .find(|&k| left[k] > 0 && tid(k) != wi.tid && ev.wakes[k].end_ns >= w.start_ns);
            if let Some(k) = k {
                left[k] -= 1;
                found[i] = Some(k as u32);
            }
        }
        found
    }

    #[test]
    fn wakers_agree_with_the_backward_search_on_random_runs() {
        let mut rng = crate::TestRng(0x2545_f491_4f6c_dd1d);
        let mut next = |m: u64| rng.below(m);
        let (mut matched, mut unmatched) = (0, 0);
        for round in 0..300 {
            let mut ev = FutexEvents::default();
            let threads = 2 + round % 3;
            for tid in 1..=threads {
                let mut ops = Vec::new();
                let mut t = next(20);
                for _ in 0..(5 + next(25)) {
                    let word = 0x1000 + 8 * next(2);
                    t += 1 + next(30);
                    if next(2) == 0 {
                        ops.push(op(t, word, Phase::Request, fx::CMD_WAIT, 0));
                        t += next(40);
                        ops.push(op(t, word, Phase::Acquired, fx::CMD_WAIT, 0));
                    } else {
                        ops.push(op(t, word, Phase::Release, fx::CMD_WAKE, 0));
                        t += next(3) * next(20);
                        ops.push(op(t, word, Phase::Released, fx::CMD_WAKE, next(3) as i32));
                    }
                }
                pair_thread(
                    0,
                    7,
                    tid as u32,
                    ops.iter().copied(),
                    |t| t,
                    10_000,
                    &mut ev,
                );
            }
            let expected = wakers_by_search(&ev);
            match_wakers(&mut ev);
            let found: Vec<_> = ev.waits.iter().map(|w| w.waker()).collect();
            assert_eq!(found, expected, "round {round}");
            matched += found.iter().filter(|w| w.is_some()).count();
            unmatched += found.iter().filter(|w| w.is_none()).count();
        }
        assert!(
            matched > 100 && unmatched > 100,
            "{matched} with a waker, {unmatched} without"
        );
    }

    #[test]
    fn an_unfinished_wait_ends_with_the_trace() {
        let mut ev = FutexEvents::default();
        let ops = [op(100, 0x10, Phase::Request, fx::CMD_WAIT, 0)];
        pair_thread(0, 7, 1, ops.iter().copied(), |t| t, 1000, &mut ev);
        assert_eq!(ev.waits[0].outcome(), WaitOutcome::Unfinished);
        assert_eq!(ev.waits[0].wait_ns(), 900);
    }

    /// A word's kind is that of most of its waits, counted per call, not
    /// per distinct (site, command): 5 waits at a mutex site beat 2 sites
    /// of one condvar wait each.
    #[test]
    fn a_words_kind_counts_its_waits() {
        let kind_of = |site: usize, _cmd: u8| if site == 0 { "mutex" } else { "condvar" };
        let mut calls: FxHashMap<(usize, u8), u64> = FxHashMap::default();
        calls.insert((0, fx::CMD_WAIT), 5);
        calls.insert((1, fx::CMD_WAIT), 1);
        calls.insert((2, fx::CMD_WAIT_BITSET), 1);
        assert_eq!(most_named_kind(&calls, kind_of), "mutex");
        calls.insert((3, fx::CMD_WAIT), 4);
        assert_eq!(most_named_kind(&calls, kind_of), "condvar");
        // a tie: the named kind wins over `futex`
        let plain = |site: usize, _cmd: u8| if site == 0 { "futex" } else { "rwlock" };
        let tie: FxHashMap<(usize, u8), u64> = [((0, fx::CMD_WAIT), 3), ((1, fx::CMD_WAIT), 3)]
            .into_iter()
            .collect();
        assert_eq!(most_named_kind(&tie, plain), "rwlock");
        assert_eq!(most_named_kind(&FxHashMap::default(), plain), "futex");
    }

    #[test]
    fn go_runtime_sites_are_its_runtime_sources() {
        let site = |f: &str, file: &str| ResolvedSite {
            function: Some(f.into()),
            file: Some(file.into()),
            ..ResolvedSite::default()
        };
        assert!(is_go_runtime(&site(
            "runtime.futex",
            "/usr/local/go/src/runtime/sys_linux_amd64.s"
        )));
        assert!(is_go_runtime(&site(
            "runtime.notesleep",
            "/usr/lib/go-1.21/src/runtime/lock_futex.go"
        )));
        // a program's own package named runtime in C, or a Go function
        // outside the runtime
        assert!(!is_go_runtime(&site("runtime_lock", "/src/runtime/lock.c")));
        assert!(!is_go_runtime(&site("main.work", "/home/me/main.go")));
        assert!(!is_go_runtime(&ResolvedSite::default()));
    }

    #[test]
    fn kinds_from_the_waiting_functions() {
        assert_eq!(
            infer_kind(
                fx::CMD_WAIT_BITSET,
                [
                    "std::sys::pal::unix::futex::futex_wait",
                    "std::sys::sync::mutex::futex::Mutex::lock_contended"
                ]
            ),
            "mutex"
        );
        assert_eq!(
            infer_kind(fx::CMD_WAIT_BITSET, ["std::sync::condvar::Condvar::wait"]),
            "condvar"
        );
        assert_eq!(infer_kind(fx::CMD_LOCK_PI, ["x"]), "pi lock");
        assert_eq!(infer_kind(fx::CMD_WAIT, ["lock"]), "futex");
        assert_eq!(
            infer_kind(fx::CMD_WAIT, ["srw_mutex_impl<true>::wait_and_lock"]),
            "innodb latch"
        );
        assert_eq!(
            infer_kind(fx::CMD_WAKE, ["ssux_lock_impl<false>::wake"]),
            "innodb latch"
        );
        // a "latch" that is not InnoDB's
        assert_eq!(
            infer_kind(
                fx::CMD_WAKE,
                ["<rayon_core::latch::LockLatch as rayon_core::latch::Latch>::set"]
            ),
            "futex"
        );
        // words, not pieces of words: a program called rmutex, a function
        // sparkle; a C name and a CamelCase type do name their kind
        assert_eq!(
            infer_kind(fx::CMD_WAKE, ["rmutex::main::{{closure}}"]),
            "futex"
        );
        assert_eq!(infer_kind(fx::CMD_WAIT, ["sparkle_wait"]), "futex");
        assert_eq!(infer_kind(fx::CMD_WAIT, ["spin_mutex_lock"]), "mutex");
        assert_eq!(infer_kind(fx::CMD_WAIT, ["pool::SpinMutex::lock"]), "mutex");
        assert_eq!(
            infer_kind(fx::CMD_WAIT, ["WorkQueue::RwLock::read"]),
            "rwlock"
        );
        assert_eq!(
            infer_kind(fx::CMD_WAIT, ["parking_lot::RawMutex::lock_slow"]),
            "mutex"
        );
        assert_eq!(
            infer_kind(fx::CMD_WAIT, ["std::thread::Thread::park"]),
            "thread park"
        );
    }

    fn call(
        tid: u32,
        enter: u64,
        exit: Option<u64>,
        op: u32,
        ret: i64,
    ) -> contend_trace::futex_calls::FutexCall {
        contend_trace::futex_calls::FutexCall {
            enter_ns: enter,
            exit_ns: exit,
            pid: 10,
            tid,
            uaddr: 0x4040,
            op,
            val: 2,
            ret,
            frames: vec![0x401000, 0x401100],
        }
    }

    /// Tracepoint calls of process 10 (no lock trace, so index 2 after
    /// two collector processes): thread 11 waits 100 → 500 (ret 0: woken,
    /// 400 ns) and 600 → 605 (−EAGAIN: 5 ns); thread 12 wakes 450 → 470
    /// (ret 1: one woken); thread 13 enters a wait at 700 and the
    /// recording ends at 1000 (unfinished, 300 ns); thread 14's op 14 is
    /// neither a wait nor a wake and is left out. The hand-over: wait 1 ← wake 1, latency 500 − 450 = 50 ns.
    #[test]
    fn tracepoint_calls_become_waits_and_wakes_worked_by_hand() {
        let private = 128; // FUTEX_PRIVATE_FLAG
        let calls = [
            call(11, 100, Some(500), fx::CMD_WAIT as u32 | private, 0),
            call(11, 600, Some(605), fx::CMD_WAIT as u32 | private, -11),
            call(12, 450, Some(470), fx::CMD_WAKE as u32 | private, 1),
            call(13, 700, None, fx::CMD_WAIT as u32, 0),
            call(14, 800, Some(900), 14, 0), // not a wait or a wake (op 14 unknown)
        ];
        let mut ev = FutexEvents::default();
        add_traced_calls(&calls, 2, |_| None, 1000, &mut ev);
        match_wakers(&mut ev);
        assert_eq!(ev.waits.len(), 3);
        assert_eq!(ev.wakes.len(), 1);
        let w: Vec<(u64, WaitOutcome)> = ev
            .waits
            .iter()
            .map(|w| (w.wait_ns(), w.outcome()))
            .collect();
        assert_eq!(
            w,
            vec![
                (400, WaitOutcome::Woken),
                (5, WaitOutcome::ValueChanged),
                (300, WaitOutcome::Unfinished)
            ]
        );
        assert!(ev
            .waits
            .iter()
            .all(|w| ev.wait_info(w).process == 2 && ev.wait_info(w).pid == 10));
        assert_eq!(ev.wakes[0].woken, 1);
        assert_eq!(ev.waits[0].waker(), Some(0));
        assert_eq!(ev.waits[0].end_ns - ev.wakes[0].start_ns, 50);
        // site = innermost frame, the chain kept as the process's stack
        let first = ev.wait_info(&ev.waits[0]);
        assert_eq!(first.site, 0x401000);
        assert_eq!(
            ev.traced[&2].stacks[first.stack as usize],
            vec![0x401000, 0x401100]
        );
        // a process with a lock trace keeps its index
        let mut ev = FutexEvents::default();
        add_traced_calls(&calls, 2, |pid| (pid == 10).then_some(0), 1000, &mut ev);
        assert!(ev.waits.iter().all(|w| ev.wait_info(w).process == 0));
    }

    /// The same calls: one wait (thread 13's, 300 ns) never returned, and
    /// the warning says so; without it, no warning.
    #[test]
    fn unfinished_waits_are_warned_of() {
        let calls = [
            call(11, 100, Some(500), fx::CMD_WAIT as u32, 0),
            call(13, 700, None, fx::CMD_WAIT as u32, 0),
        ];
        let mut ev = FutexEvents::default();
        add_traced_calls(&calls, 2, |_| None, 1000, &mut ev);
        assert_eq!(
            unfinished_waits_warning(&ev).as_deref(),
            Some(
                "1 futex wait(s) had not returned when their thread's trace ended (the program exited or the \
                 recording stopped while they waited): their 300 ns of wait run to the trace's end and count \
                 among the 'other' outcomes"
            )
        );
        let mut ev = FutexEvents::default();
        add_traced_calls(&calls[..1], 2, |_| None, 1000, &mut ev);
        assert_eq!(unfinished_waits_warning(&ev), None);
    }

    /// futex_waitv through its own tracepoints (op = CMD_WAITV, uaddr the
    /// waiter array): thread 11 waits 100 → 5 100 and times out (−ETIMEDOUT:
    /// 5 000 ns, timed out); thread 12 waits 200 → 900 and is woken on its
    /// second word (ret 1, the index: woken, 700 ns). Both are waits with
    /// the command CMD_WAITV, none is a wake.
    #[test]
    fn traced_futex_waitv_calls_are_waits() {
        let waitv = u32::from(fx::CMD_WAITV);
        let calls = [
            call(11, 100, Some(5_100), waitv, -110),
            call(12, 200, Some(900), waitv, 1),
        ];
        let mut ev = FutexEvents::default();
        add_traced_calls(&calls, 0, |_| None, 10_000, &mut ev);
        assert!(ev.wakes.is_empty());
        let w: Vec<(u8, u64, WaitOutcome)> = ev
            .waits
            .iter()
            .map(|w| (ev.wait_info(w).cmd, w.wait_ns(), w.outcome()))
            .collect();
        assert_eq!(
            w,
            vec![
                (fx::CMD_WAITV, 5_000, WaitOutcome::TimedOut),
                (fx::CMD_WAITV, 700, WaitOutcome::Woken)
            ]
        );
    }
}
