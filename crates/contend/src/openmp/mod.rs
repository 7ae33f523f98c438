//! OpenMP synchronisation (JSON key `openmp`), from the records of the
//! collector's OMPT tool (LLVM's libomp) and of its libgomp wrappers
//! (GCC's libgomp; collector/src/gomp.c), which write the same records
//! (trace_format.h, "OpenMP records"): critical
//! sections (named by their name), OpenMP locks, atomic and ordered
//! regions with their wait and hold times; barriers and task waits with
//! their waits; and each parallel region's implicit barrier per thread:
//! the wait there and the work before it, whose spread is the load
//! imbalance (max − mean work time of the team, per instance, summed).
//!
//! The OMPT events are those of the OpenMP 5.0 specification, Section
//! 4.5.2: `mutex_acquire` → `mutex_acquired` is the wait, `mutex_acquired`
//! → `mutex_released` the hold; `sync_region_wait` begin → end the wait in
//! a barrier; `implicit_task` begin → the begin of the wait in the
//! region's implicit barrier is the thread's work (its own explicit
//! barrier waits taken out).

use std::collections::{BTreeMap, HashMap};

use rayon::prelude::*;
use rustc_hash::FxHashMap;
use serde::Serialize;

use contend_trace::OmpOp;

use crate::analysis::{AnalysisOutput, Analyzer, Context};
use crate::recording::Recording;
use crate::symbols::Symbols;

pub mod layout;
pub mod sync;

/// The OpenMP analysis (registered in [`crate::analysis::ANALYZERS`]);
/// its section is present when a traced process ran an OpenMP runtime
/// with OMPT (LLVM's libomp) or GCC's libgomp (through the collector's
/// GOMP_* wrappers).
pub struct OpenMpAnalyzer;

/// The `openmp` section.
#[derive(Debug, Clone, Serialize, Default, PartialEq)]
pub struct OpenMpReport {
    /// Totals.
    pub summary: OpenMpSummary,
    /// Critical sections, OpenMP locks, atomic and ordered regions, most
    /// wait first.
    pub mutexes: Vec<OmpMutexRow>,
    /// Barriers (implicit and explicit), taskwait and taskgroup waits per
    /// kind and construct, most wait first.
    pub barriers: Vec<OmpBarrierRow>,
    /// Parallel regions per construct, most implicit-barrier wait first.
    pub regions: Vec<OmpRegionRow>,
    /// How the records were made and what they cannot show.
    pub note: String,
}

/// Totals of the OpenMP section.
#[derive(Debug, Clone, Serialize, Default, PartialEq)]
pub struct OpenMpSummary {
    /// Mutex acquisitions (critical, lock, atomic, ordered).
    pub mutex_events: u64,
    /// Σ wait for them, ns.
    pub mutex_wait_ns: u64,
    /// Σ hold, ns.
    pub mutex_hold_ns: u64,
    /// Barrier and task waits.
    pub barrier_events: u64,
    /// Σ their wait, ns.
    pub barrier_wait_ns: u64,
    /// Parallel region instances.
    pub parallel_regions: u64,
    /// Σ load imbalance over them (max − mean work per instance), ns.
    pub imbalance_ns: u64,
    /// Mutex acquisitions and barrier waits on the critical path across
    /// recorders (docs/critical-path.md).
    pub critical_events: u64,
    /// Σ their wait, ns.
    pub critical_wait_ns: u64,
    /// Of them, those whose hand-over (release → acquisition, last arrival
    /// → waiter) the path follows to the other thread.
    pub critical_handovers: u64,
}

/// A critical section, OpenMP lock, atomic or ordered region.
#[derive(Debug, Clone, Serialize, Default, PartialEq)]
pub struct OmpMutexRow {
    /// The critical section's name (`update` of `critical(update)`,
    /// `(unnamed)`) when its wait id is the name's variable
    /// (`.gomp_critical_user_<name>.var`: libgomp, whose atomic lock is
    /// `libgomp_atomic`); with libomp, whose wait id is
    /// the runtime's lock, `critical at <site>`; a lock's symbol, else
    /// `lock at <site>` (`nest_lock`, …: its kind; the site of its first
    /// acquisition).
    pub name: String,
    /// `critical`, `lock`, `nest_lock`, `atomic` or `ordered`.
    pub kind: String,
    /// Address (the OMPT wait id), hexadecimal.
    pub address: String,
    /// Process id.
    pub pid: u32,
    /// Acquisitions.
    pub events: u64,
    /// Σ wait (acquire → acquired), ns.
    pub wait_ns: u64,
    /// Largest single wait, ns.
    pub max_wait_ns: u64,
    /// Σ hold (acquired → released), ns.
    pub hold_ns: u64,
    /// Sites of its acquisitions, most waiting first.
    pub sites: Vec<String>,
    /// Acquisitions on the critical path (docs/critical-path.md).
    pub critical_events: u64,
    /// Σ their wait, ns.
    pub critical_wait_ns: u64,
    /// Σ their hold, ns.
    pub critical_hold_ns: u64,
}

/// Waits of one kind at one construct.
#[derive(Debug, Clone, Serialize, Default, PartialEq)]
pub struct OmpBarrierRow {
    /// The construct's site (`function (file:line)`).
    pub name: String,
    /// `implicit barrier`, `explicit barrier`, `barrier`, `implementation
    /// barrier`, `taskwait`, `taskgroup`, `reduction`, `teams barrier`.
    pub kind: String,
    /// Process id.
    pub pid: u32,
    /// Waits (one per thread per encounter).
    pub events: u64,
    /// Σ wait, ns.
    pub wait_ns: u64,
    /// Largest single wait, ns.
    pub max_wait_ns: u64,
    /// Waits on the critical path (docs/critical-path.md).
    pub critical_events: u64,
    /// Σ their wait, ns.
    pub critical_wait_ns: u64,
}

/// A parallel construct: its instances and its threads.
#[derive(Debug, Clone, Serialize, Default, PartialEq)]
pub struct OmpRegionRow {
    /// The construct's site (`function (file:line)`).
    pub name: String,
    /// `parallel`.
    pub kind: String,
    /// Process id.
    pub pid: u32,
    /// Instances (times the region ran).
    pub events: u64,
    /// Σ wait in the implicit barriers, all threads, ns.
    pub wait_ns: u64,
    /// Σ over instances of (max − mean) work time of the team, ns.
    pub imbalance_ns: u64,
    /// Per thread number in the team.
    pub threads: Vec<OmpRegionThread>,
}

/// One thread number of a team, over a construct's instances.
#[derive(Debug, Clone, Serialize, Default, PartialEq)]
pub struct OmpRegionThread {
    /// Thread number in the team (`omp_get_thread_num()`).
    pub thread: u32,
    /// Σ work (implicit task begin → implicit barrier, its explicit
    /// barrier waits taken out), ns.
    pub work_ns: u64,
    /// Σ wait in the implicit barrier, ns.
    pub wait_ns: u64,
}

/// The note of the section.
pub const NOTE: &str = "Recorded through the OpenMP tool interface (OMPT) with LLVM's libomp \
(clang -fopenmp), and with GCC's libgomp (gcc/gfortran -fopenmp), which has no OMPT, through \
its interposed entry points (GOMP_*, omp_*_lock): the same records. With libgomp a barrier \
is `barrier` (GOMP_barrier serves #pragma omp barrier and the implicit barrier of a static \
for, single or sections alike), and a parallel region's implicit-barrier arrival is the end \
of the thread's outlined function. Work time of a thread in a parallel region = from the \
start of its implicit task to its arrival at the region's implicit barrier, without its \
explicit barrier waits; critical and lock waits are part of it.";

fn mutex_kind(k: u8) -> &'static str {
    match k {
        1 | 2 => "lock",
        3 | 4 => "nest_lock",
        5 => "critical",
        6 => "atomic",
        7 => "ordered",
        _ => "mutex",
    }
}

fn sync_kind(k: u8) -> &'static str {
    match k {
        1 => "barrier",
        2 | 8 | 9 => "implicit barrier",
        3 => "explicit barrier",
        4 => "implementation barrier",
        5 => "taskwait",
        6 => "taskgroup",
        7 => "reduction",
        10 => "teams barrier",
        _ => "sync region",
    }
}

/// The name of a critical section from its lock variable's symbol
/// (clang and GCC: `.gomp_critical_user_<name>.var`), `None` otherwise.
pub fn critical_name(symbol: &str) -> Option<String> {
    let s = symbol.split('+').next()?;
    let rest = s.strip_prefix(".gomp_critical_user_")?;
    let name = rest.strip_suffix(".var").unwrap_or(rest);
    Some(if name.is_empty() {
        "(unnamed)".to_string()
    } else {
        name.to_string()
    })
}

impl Analyzer for OpenMpAnalyzer {
    fn name(&self) -> &'static str {
        "OpenMP"
    }

    fn analyze(&self, cx: &Context<'_>) -> Option<AnalysisOutput> {
        let r = cx.recording;
        if !r
            .processes
            .iter()
            .any(|p| p.trace.threads.iter().any(|t| t.omp_count() > 0))
        {
            return None;
        }
        let mut report = analyze_openmp(r, cx.symbols);
        // the critical path across recorders, marked by the lock analysis
        // on the OpenMP events it collected
        if let Some((path, events)) = cx
            .earlier::<crate::locks::LockEvents>()
            .and_then(|l| Some((l.across.as_ref()?, l.across_omp.as_ref()?)))
        {
            sync::mark_report(&mut report, r, cx.symbols, events, path);
        }
        Some(AnalysisOutput::new(report))
    }
}

/// Per (process, region instance, thread): task begin, Σ explicit waits,
/// last implicit-barrier begin, Σ implicit waits.
#[derive(Default, Clone)]
struct TeamThread {
    number: u32,
    task_begin: Option<u64>,
    explicit_wait: u64,
    /// Arrivals at the region's implicit barriers, in order.
    arrivals: Vec<u64>,
}

/// A mutex row being built, with its wait per call site.
type MutexAcc = (OmpMutexRow, BTreeMap<u64, u64>);

/// One mutex (wait id and kind) as one thread used it.
#[derive(Default)]
struct ThreadMutex {
    /// The site of the thread's first acquisition (names an unnamed
    /// critical section by where it is).
    first_site: u64,
    events: u64,
    wait_ns: u64,
    max_wait_ns: u64,
    hold_ns: u64,
    /// Wait per call site.
    sites: FxHashMap<u64, u64>,
}

/// One thread's OpenMP records, summed ([`scan_thread`]); the threads'
/// are added together in thread order by [`analyze_openmp`].
#[derive(Default)]
struct ThreadScan {
    /// ((wait id, kind), the mutex as this thread used it), and the index
    /// of each there (the token of its acquisitions' releases). Like the
    /// barriers and teams, added into the section's ordered maps, so the
    /// order here does not matter.
    mutexes: Vec<((u64, u8), ThreadMutex)>,
    mutex_index: FxHashMap<(u64, u8), usize>,
    /// (kind, site) → (events, wait, max wait), explicit barriers.
    barriers: FxHashMap<(u8, u64), (u64, u64, u64)>,
    /// Region instance → the thread's part.
    teams: FxHashMap<u64, TeamThread>,
    /// (region instance, construct site) of each PARALLEL_BEGIN, in order.
    region_sites: Vec<(u64, u64)>,
    mutex_events: u64,
    mutex_wait_ns: u64,
    mutex_hold_ns: u64,
    barrier_events: u64,
    barrier_wait_ns: u64,
}

impl ThreadScan {
    /// The thread's part of region instance `instance`.
    fn team(&mut self, instance: u64) -> &mut TeamThread {
        self.teams.entry(instance).or_default()
    }
}

/// The section's sums of one thread: its mutex acquisitions (wait from
/// acquire to acquired, hold from acquired to released, charged to the
/// mutex and kind it was acquired with), its explicit barrier waits, and
/// its part of each parallel region instance (task begin, explicit waits,
/// implicit-barrier arrivals).
impl sync::OmpVisitor for ThreadScan {
    fn acquired(&mut self, op: &OmpOp, site: u64, start: u64, acquired: u64) -> Option<usize> {
        let wait = acquired.saturating_sub(start);
        let key = (op.object, op.kind);
        let mutexes = &mut self.mutexes;
        let k = *self.mutex_index.entry(key).or_insert_with(|| {
            let m = ThreadMutex {
                first_site: site,
                ..ThreadMutex::default()
            };
            mutexes.push((key, m));
            mutexes.len() - 1
        });
        let m = &mut self.mutexes[k].1;
        m.events += 1;
        m.wait_ns += wait;
        m.max_wait_ns = m.max_wait_ns.max(wait);
        *m.sites.entry(site).or_default() += wait;
        self.mutex_events += 1;
        self.mutex_wait_ns += wait;
        Some(k)
    }

    fn released(&mut self, token: usize, acquired: u64, now: u64) {
        let hold = now.saturating_sub(acquired);
        self.mutexes[token].1.hold_ns += hold;
        self.mutex_hold_ns += hold;
    }

    fn arrival(&mut self, op: &OmpOp, now: u64) {
        // the wait follows from the team's arrivals
        self.team(op.object).arrivals.push(now);
    }

    fn wait(&mut self, begin: &OmpOp, start: u64, end: u64) {
        let wait = end.saturating_sub(start);
        self.barrier_events += 1;
        self.barrier_wait_ns += wait;
        let b = self.barriers.entry((begin.kind, begin.site)).or_default();
        b.0 += 1;
        b.1 += wait;
        b.2 = b.2.max(wait);
        self.team(begin.object).explicit_wait += wait;
    }

    fn task_begin(&mut self, op: &OmpOp, now: u64) {
        let part = self.team(op.object);
        part.number = op.value;
        part.task_begin = Some(now);
    }

    fn parallel_begin(&mut self, op: &OmpOp) {
        self.region_sites.push((op.object, op.site));
    }
}

/// Sums one thread's OpenMP records ([`ThreadScan`]).
fn scan_thread(
    recording: &Recording,
    trace: &contend_trace::LockTrace,
    ops: impl Iterator<Item = OmpOp>,
) -> ThreadScan {
    let mut s = ThreadScan::default();
    sync::visit_thread(ops, |ticks| recording.to_ns(trace, ticks), &mut s);
    s
}

/// A thread with OpenMP records: its process's index in
/// [`Recording::processes`], that process's trace, and the thread.
pub(crate) type OmpThread<'r> = (
    u32,
    &'r contend_trace::LockTrace,
    &'r contend_trace::ThreadTrace,
);

/// The threads of `recording` that have OpenMP records, process by
/// process, each process's in trace order: the order in which the OpenMP
/// analyses take and number them.
pub(crate) fn threads_with_records(recording: &Recording) -> Vec<OmpThread<'_>> {
    recording
        .processes
        .iter()
        .enumerate()
        .flat_map(|(pi, p)| {
            p.trace
                .threads
                .iter()
                .map(move |t| (pi as u32, &p.trace, t))
        })
        .filter(|(_, _, t)| t.omp_count() > 0)
        .collect()
}

/// Calls `consume` with the OpenMP records of thread `t` of `trace`, one
/// of the threads whose records are paired side by side, `total` records
/// in all: read and decoded ahead by a thread of their own
/// ([`contend_trace::LockTrace::omp_ops_ahead`], which reads a thread of
/// few records in place anyway) when this thread has more than 5/4 of the
/// cores' fair share of them, so that it does not keep one core busy
/// while the others wait for it (a program whose locks one thread takes);
/// else as they are taken (threads of equal shares keep the cores busy as
/// they are: an extra reader thread each only adds switches, 10 % more
/// time measured on two threads of 2.5 million lock pairs each).
pub(crate) fn with_omp_records<R>(
    trace: &contend_trace::LockTrace,
    t: &contend_trace::ThreadTrace,
    total: usize,
    consume: impl FnOnce(contend_trace::RecordsAhead<'_, OmpOp>) -> R,
) -> R {
    let n = t.omp_count();
    // (more than 5/4 of the fair share: two threads of about equal
    // shares are equal)
    let share = n
        .saturating_mul(rayon::current_num_threads())
        .saturating_mul(4);
    if share > total.saturating_mul(5) {
        trace.omp_ops_ahead(t, consume)
    } else {
        consume(trace.omp_ops(t).into())
    }
}

/// A mutex's kind and name as one label, for the exports' slices and the
/// critical path's hand-overs: `critical update`, `lock queue_lock`; a
/// name that begins with its kind (a lock named by where it was first
/// taken, `lock at main._omp_fn.0 (app.c:31)`) is the label as it is.
pub fn mutex_label(kind: &str, name: &str) -> String {
    match name.strip_prefix(kind) {
        Some(rest) if rest.starts_with(" at ") => name.to_string(),
        _ => format!("{kind} {name}"),
    }
}

impl OpenMpReport {
    /// Each mutex row's name by (pid, kind, address): how the exports and
    /// the critical path's hand-overs name a critical section or lock as
    /// this section does. Rows whose address does not parse are left out.
    pub fn mutex_names(&self) -> rustc_hash::FxHashMap<(u32, &str, u64), &str> {
        self.mutexes
            .iter()
            .filter_map(|row| {
                let a = u64::from_str_radix(row.address.trim_start_matches("0x"), 16).ok()?;
                Some(((row.pid, row.kind.as_str(), a), row.name.as_str()))
            })
            .collect()
    }
}

/// Builds the section.
pub fn analyze_openmp(recording: &Recording, symbols: &Symbols) -> OpenMpReport {
    let mut summary = OpenMpSummary::default();
    // (process, object, kind) → row, with per-site wait
    let mut mutexes: BTreeMap<(u32, u64, u8), MutexAcc> = BTreeMap::new();
    // Each (process, wait id, kind name)'s name, made once: rows of one
    // object taken with two kind codes of one kind name (a nest lock set
    // and tested) get the same name, as the exports' name map has it.
    let mut mutex_names: HashMap<(u32, u64, &'static str), String> = HashMap::new();
    let mut barriers: BTreeMap<(u32, u8, u64), OmpBarrierRow> = BTreeMap::new();
    // (process, region instance) → construct site
    let mut region_site: HashMap<(u32, u64), u64> = HashMap::new();
    // (process, region instance, tid) → the thread's part
    let mut teams: BTreeMap<(u32, u64), BTreeMap<u32, TeamThread>> = BTreeMap::new();

    // Each thread's records summed on its own, the threads side by side;
    // then added together in thread order (what one pass over the threads
    // in that order gives).
    let threads = threads_with_records(recording);
    let total: usize = threads.iter().map(|(_, _, t)| t.omp_count()).sum();
    let scans: Vec<ThreadScan> = threads
        .par_iter()
        .map(|&(_, trace, t)| {
            with_omp_records(trace, t, total, |ops| scan_thread(recording, trace, ops))
        })
        .collect();
    for (s, &(pi, trace, t)) in scans.into_iter().zip(&threads) {
        summary.mutex_events += s.mutex_events;
        summary.mutex_wait_ns += s.mutex_wait_ns;
        summary.mutex_hold_ns += s.mutex_hold_ns;
        summary.barrier_events += s.barrier_events;
        summary.barrier_wait_ns += s.barrier_wait_ns;
        for ((object, kind_code), m) in s.mutexes {
            let (row, sites) = mutexes.entry((pi, object, kind_code)).or_insert_with(|| {
                let kind = mutex_kind(kind_code);
                let symbol = symbols.object(recording.process_maps(pi), object);
                // libomp's wait id of a critical section is its runtime
                // lock, not the name's variable, and a lock on the stack
                // or the heap has no symbol: both are named by where they
                // were first taken, which stays the same from run to run
                // (an address does not, so `compare` could not pair them);
                // the address stays in `address`.
                let name = mutex_names
                    .entry((pi, object, kind))
                    .or_insert_with(|| match symbol {
                        Some(s) if kind == "critical" => critical_name(&s).unwrap_or(s),
                        Some(s) => s,
                        None => format!(
                            "{kind} at {}",
                            symbols
                                .site(recording.process_maps(pi), m.first_site)
                                .display
                        ),
                    })
                    .clone();
                (
                    OmpMutexRow {
                        name,
                        kind: kind.to_string(),
                        address: format!("{object:#x}"),
                        pid: trace.pid,
                        ..OmpMutexRow::default()
                    },
                    BTreeMap::new(),
                )
            });
            row.events += m.events;
            row.wait_ns += m.wait_ns;
            row.max_wait_ns = row.max_wait_ns.max(m.max_wait_ns);
            row.hold_ns += m.hold_ns;
            for (site, wait) in m.sites {
                *sites.entry(site).or_default() += wait;
            }
        }
        for ((kind, site), (events, wait, max_wait)) in s.barriers {
            let row = barriers
                .entry((pi, kind, site))
                .or_insert_with(|| OmpBarrierRow {
                    name: symbols.site(recording.process_maps(pi), site).display,
                    kind: sync_kind(kind).to_string(),
                    pid: trace.pid,
                    ..OmpBarrierRow::default()
                });
            row.events += events;
            row.wait_ns += wait;
            row.max_wait_ns = row.max_wait_ns.max(max_wait);
        }
        for (instance, part) in s.teams {
            let merged = teams
                .entry((pi, instance))
                .or_default()
                .entry(t.tid)
                .or_default();
            // (a thread id used again in the process: its parts add up)
            if part.task_begin.is_some() {
                merged.number = part.number;
                merged.task_begin = part.task_begin;
            }
            merged.explicit_wait += part.explicit_wait;
            merged.arrivals.extend(part.arrivals);
        }
        for (instance, site) in s.region_sites {
            region_site.insert((pi, instance), site);
        }
    }

    // Parallel regions per construct.
    let mut regions: BTreeMap<(u32, u64), OmpRegionRow> = BTreeMap::new();
    let mut region_threads: HashMap<(u32, u64), BTreeMap<u32, OmpRegionThread>> = HashMap::new();
    for ((pi, instance), team) in &teams {
        let Some(&site) = region_site.get(&(*pi, *instance)) else {
            continue;
        };
        // the k-th implicit barrier of every thread is one barrier: it
        // completes at its last arrival; a thread's wait there is the last
        // arrival minus its own
        let barriers_n = team.values().map(|p| p.arrivals.len()).max().unwrap_or(0);
        let last: Vec<u64> = (0..barriers_n)
            .map(|k| {
                team.values()
                    .filter_map(|p| p.arrivals.get(k))
                    .copied()
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let works: Vec<(u32, u64, u64)> = team
            .values()
            .filter_map(|p| {
                let b = p.task_begin?;
                let e = *p.arrivals.last()?;
                let waits: Vec<u64> = p
                    .arrivals
                    .iter()
                    .zip(&last)
                    .map(|(a, l)| l.saturating_sub(*a))
                    .collect();
                let earlier: u64 = waits[..waits.len() - 1].iter().sum();
                Some((
                    p.number,
                    e.saturating_sub(b)
                        .saturating_sub(p.explicit_wait)
                        .saturating_sub(earlier),
                    waits.iter().sum(),
                ))
            })
            .collect();
        if works.is_empty() {
            continue;
        }
        let implicit_wait: u64 = works.iter().map(|w| w.2).sum();
        summary.barrier_events += (works.len() * barriers_n) as u64;
        summary.barrier_wait_ns += implicit_wait;
        let pid0 = recording.processes[*pi as usize].trace.pid;
        let brow = barriers
            .entry((*pi, 2, site))
            .or_insert_with(|| OmpBarrierRow {
                name: symbols.site(recording.process_maps(*pi), site).display,
                kind: sync_kind(2).to_string(),
                pid: pid0,
                ..OmpBarrierRow::default()
            });
        brow.events += (works.len() * barriers_n) as u64;
        brow.wait_ns += implicit_wait;
        brow.max_wait_ns = brow
            .max_wait_ns
            .max(works.iter().map(|w| w.2).max().unwrap_or(0));
        let pid = recording.processes[*pi as usize].trace.pid;
        let row = regions.entry((*pi, site)).or_insert_with(|| OmpRegionRow {
            name: symbols.site(recording.process_maps(*pi), site).display,
            kind: "parallel".into(),
            pid,
            ..OmpRegionRow::default()
        });
        let max = works.iter().map(|w| w.1).max().unwrap_or(0);
        let mean = works.iter().map(|w| w.1).sum::<u64>() / works.len() as u64;
        row.events += 1;
        row.imbalance_ns += max - mean;
        summary.parallel_regions += 1;
        summary.imbalance_ns += max - mean;
        let threads = region_threads.entry((*pi, site)).or_default();
        for &(number, work, wait) in &works {
            row.wait_ns += wait;
            let th = threads.entry(number).or_insert_with(|| OmpRegionThread {
                thread: number,
                ..OmpRegionThread::default()
            });
            th.work_ns += work;
            th.wait_ns += wait;
        }
    }
    let mut regions: Vec<OmpRegionRow> = regions
        .into_iter()
        .map(|(key, mut row)| {
            row.threads = region_threads
                .remove(&key)
                .map(|m| m.into_values().collect())
                .unwrap_or_default();
            row
        })
        .collect();
    regions.sort_by(|a, b| b.wait_ns.cmp(&a.wait_ns).then(a.name.cmp(&b.name)));

    let mut mutexes: Vec<OmpMutexRow> = mutexes
        .into_iter()
        .map(|((pi, _, _), (mut row, sites))| {
            let mut s: Vec<(u64, u64)> = sites.into_iter().collect();
            s.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
            for (site, _) in s {
                let d = symbols.site(recording.process_maps(pi), site).display;
                if !row.sites.contains(&d) {
                    row.sites.push(d);
                }
            }
            row
        })
        .collect();
    mutexes.sort_by(|a, b| b.wait_ns.cmp(&a.wait_ns).then(a.name.cmp(&b.name)));
    let mut barriers: Vec<OmpBarrierRow> = barriers.into_values().collect();
    barriers.sort_by(|a, b| b.wait_ns.cmp(&a.wait_ns).then(a.name.cmp(&b.name)));
    OpenMpReport {
        summary,
        mutexes,
        barriers,
        regions,
        note: NOTE.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_label_names_the_kind_once() {
        assert_eq!(mutex_label("critical", "update"), "critical update");
        assert_eq!(mutex_label("lock", "lock"), "lock lock");
        assert_eq!(mutex_label("lock", "lockless_queue"), "lock lockless_queue");
        assert_eq!(
            mutex_label("lock", "lock at f (a.c:3)"),
            "lock at f (a.c:3)"
        );
        assert_eq!(
            mutex_label("nest lock", "nest lock at f (a.c:3)"),
            "nest lock at f (a.c:3)"
        );
        // another kind's name is not taken for this one's
        assert_eq!(
            mutex_label("critical", "lock at f (a.c:3)"),
            "critical lock at f (a.c:3)"
        );
    }

    #[test]
    fn critical_names_from_their_lock_symbols() {
        assert_eq!(
            critical_name(".gomp_critical_user_update.var").as_deref(),
            Some("update")
        );
        assert_eq!(
            critical_name(".gomp_critical_user_.var").as_deref(),
            Some("(unnamed)")
        );
        assert_eq!(critical_name("queue_lock"), None);
    }
}
