//! Lock meters of the processes `contend record` is recording, read
//! without stopping or touching them: the collector writes each process's
//! lock trace (`<dir>/locks/<pid>.ctrace`, docs/trace-format.md) through a
//! shared file mapping, record by record, so everything it has recorded
//! is in the page cache at once; this module re-reads the trace with
//! `contend_trace`'s reader (which reads a trace that is still being
//! written as far as it goes) every `lock_interval`.
//!
//! **Which processes.** Every process whose environment holds
//! `CONTEND_DIR` (set by `contend record` for its target and inherited by
//! the target's children) and whose trace exists: `/proc/<pid>/environ`
//! is read once per process, at discovery.
//!
//! **What is counted** (the same rules as the report's lock summary,
//! docs/metrics.md): for mutexes, rwlocks and spinlocks, a *contended
//! acquisition* is a request that did not succeed at once (a REQUEST
//! followed by its ACQUIRED, BUSY or ERROR, or a try that failed), and
//! its wait time is from the request to that outcome. A request still
//! pending when the trace is read adds its wait so far, so the wait rate
//! does not lag behind long waits. With cumulative totals W(t) (wait, ns)
//! and C(t) (contended acquisitions) read at t₀ < t₁:
//!
//! - `lock_wait_rate` = (W(t₁) − W(t₀)) / (t₁ − t₀): the average number of
//!   threads waiting for locks (wait seconds per second);
//! - `lock_contention_rate` = (C(t₁) − C(t₀)) / (t₁ − t₀), per second;
//! - the same per lock, for the locks that waited most.
//!
//! **Cost.** Each read opens and scans the whole trace (the reader has no
//! incremental mode), so its cost grows with the trace; [`LockFollower`]
//! lengthens the interval of a process whose scan takes more than 5 % of
//! it in CPU time (the thread's, so that a scan preempted on a loaded CPU
//! does not count its wait).

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use contend_record::host::thread_cpu_ns;
use contend_trace::{format, CalibrationPoint, ClockFit, LockTrace, Phase};

/// Cumulative lock totals of one trace at one instant.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LockTotals {
    /// Wait of completed contended acquisitions plus the wait so far of
    /// pending requests, ns.
    pub wait_ns: u64,
    /// Completed contended acquisitions.
    pub contended: u64,
    /// Wait per lock address (completed + pending), ns.
    pub by_lock: HashMap<u64, (u64, u64)>,
    /// The trace says the process finished (its exit path ran).
    pub finished: bool,
    /// Threads with a request pending now.
    pub waiting_threads: u32,
}

/// Scans `trace` and returns its totals, with pending requests counted up
/// to `now_ns` (CLOCK_MONOTONIC).
pub fn totals(trace: &LockTrace, now_ns: u64) -> LockTotals {
    let clock = if trace.clock == format::CLOCK_MONOTONIC {
        None
    } else {
        let mut points = trace.calibration_points.clone();
        if points.is_empty() && trace.start.ticks != 0 {
            points.push(CalibrationPoint {
                ticks: trace.start.ticks,
                monotonic_ns: trace.start.monotonic_ns,
            });
        }
        ClockFit::fit(&points, trace.ticks_per_second)
    };
    let ns = |ticks: u64| clock.as_ref().map_or(ticks, |c| c.to_ns(ticks));
    let mut t = LockTotals {
        finished: trace.finished(),
        ..LockTotals::default()
    };
    for thread in &trace.threads {
        // (object, primitive is a lock, request ticks)
        let mut pending: Option<(u64, bool, u64)> = None;
        let add = |object: u64, wait: u64, t: &mut LockTotals| {
            t.wait_ns += wait;
            t.contended += 1;
            let e = t.by_lock.entry(object).or_default();
            e.0 += wait;
            e.1 += 1;
        };
        let mut local = LockTotals::default();
        trace.for_each_op(thread, |op, _, _| {
            let is_lock = op.primitive.is_lock();
            match op.phase {
                Phase::Request => {
                    if let Some((obj, true, req)) = pending.replace((op.object, is_lock, op.ticks))
                    {
                        add(obj, ns(op.ticks).saturating_sub(ns(req)), &mut local);
                    }
                }
                Phase::Acquired | Phase::Busy | Phase::Error => match pending {
                    Some((obj, lock, req)) if obj == op.object => {
                        pending = None;
                        if lock {
                            add(obj, ns(op.ticks).saturating_sub(ns(req)), &mut local);
                        }
                    }
                    _ => {
                        if is_lock && op.phase != Phase::Acquired {
                            add(op.object, 0, &mut local);
                        }
                    }
                },
                // releases, their wake-up ends and untimed (light-mode)
                // acquisitions carry no wait
                Phase::Immediate | Phase::Release | Phase::Released | Phase::Untimed => {}
            }
        });
        t.wait_ns += local.wait_ns;
        t.contended += local.contended;
        for (k, v) in local.by_lock {
            let e = t.by_lock.entry(k).or_default();
            e.0 += v.0;
            e.1 += v.1;
        }
        if let Some((obj, true, req)) = pending {
            if !t.finished {
                let so_far = now_ns.saturating_sub(ns(req));
                t.wait_ns += so_far;
                t.by_lock.entry(obj).or_default().0 += so_far;
                t.waiting_threads += 1;
            }
        }
    }
    t
}

/// The trace file of process `pid` in recording `dir`: the latest exec
/// generation (`<pid>.<n>.ctrace` with the largest n, else `<pid>.ctrace`).
pub fn trace_path(dir: &Path, pid: u32) -> Option<PathBuf> {
    let locks = dir.join("locks");
    let mut best: Option<(u32, PathBuf)> = None;
    for e in std::fs::read_dir(&locks).ok()?.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(stem) = name.strip_suffix(".ctrace") else {
            continue;
        };
        let generation = if stem == pid.to_string() {
            0
        } else if let Some(n) = stem
            .strip_prefix(&format!("{pid}."))
            .and_then(|n| n.parse::<u32>().ok())
        {
            n
        } else {
            continue;
        };
        if best.as_ref().is_none_or(|(g, _)| generation >= *g) {
            best = Some((generation, e.path()));
        }
    }
    best.map(|(_, p)| p)
}

/// The recording directory of a process recorded by `contend record`
/// (`CONTEND_DIR` in its environment).
pub fn recording_dir_of(pid: u32) -> Option<PathBuf> {
    let env = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
    env.split(|&b| b == 0)
        .find_map(|kv| kv.strip_prefix(b"CONTEND_DIR="))
        .map(|v| PathBuf::from(String::from_utf8_lossy(v).into_owned()))
}

/// The command name of a process (`/proc/<pid>/comm`).
pub fn command_of(pid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// Lock meter values of one process over one interval.
#[derive(Debug, Clone, PartialEq)]
pub struct ProcessLockMeters {
    /// The process.
    pub pid: u32,
    /// Its command name.
    pub command: String,
    /// Threads waiting for locks on average (wait s per s).
    pub wait_rate: f64,
    /// Contended acquisitions per second.
    pub contention_rate: f64,
    /// Per lock (address, wait rate, contention rate), most waiting first,
    /// at most [`TOP_LOCKS`].
    pub top_locks: Vec<(u64, f64, f64)>,
    /// Cumulative totals (wait ns, contended acquisitions).
    pub total_wait_ns: u64,
    /// Contended acquisitions so far.
    pub total_contended: u64,
    /// The process ended (this is its last reading).
    pub ended: bool,
}

/// Locks per process published as meters.
pub const TOP_LOCKS: usize = 5;

struct Followed {
    trace: PathBuf,
    command: String,
    last: Option<(u64, LockTotals)>,
    next_ns: u64,
    period_ns: u64,
    ended: bool,
}

/// Finds recorded processes and reads their lock meters.
pub struct LockFollower {
    period_ns: u64,
    followed: BTreeMap<u32, Followed>,
    /// Pids seen without a recording, not to read their environment again.
    ignored: std::collections::HashSet<u32>,
    next_discovery_ns: u64,
}

impl LockFollower {
    /// A follower reading every `period_ns`.
    pub fn new(period_ns: u64) -> LockFollower {
        LockFollower {
            period_ns: period_ns.max(1_000_000),
            followed: BTreeMap::new(),
            ignored: Default::default(),
            next_discovery_ns: 0,
        }
    }

    fn discover(&mut self) {
        let Ok(rd) = std::fs::read_dir("/proc") else {
            return;
        };
        let me = std::process::id();
        let mut alive = std::collections::HashSet::new();
        for e in rd.flatten() {
            let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
                continue;
            };
            alive.insert(pid);
            if pid == me || self.ignored.contains(&pid) || self.followed.contains_key(&pid) {
                continue;
            }
            let Some(dir) = recording_dir_of(pid) else {
                self.ignored.insert(pid);
                continue;
            };
            // The trace appears when the collector starts in the process.
            if let Some(trace) = trace_path(&dir, pid) {
                self.followed.insert(
                    pid,
                    Followed {
                        trace,
                        command: command_of(pid),
                        last: None,
                        next_ns: 0,
                        period_ns: self.period_ns,
                        ended: false,
                    },
                );
            }
        }
        self.ignored.retain(|p| alive.contains(p));
    }

    /// Reads the processes that are due at `now_ns` (and looks for new
    /// ones every period); returns their meters. A process that ended is
    /// read once more, reported with `ended`, and forgotten.
    pub fn poll(&mut self, now_ns: u64) -> Vec<ProcessLockMeters> {
        if now_ns >= self.next_discovery_ns {
            self.discover();
            self.next_discovery_ns = now_ns + self.period_ns;
        }
        let mut out = Vec::new();
        let mut gone = Vec::new();
        for (&pid, f) in self.followed.iter_mut() {
            if f.ended {
                gone.push(pid);
                continue;
            }
            if now_ns < f.next_ns {
                continue;
            }
            let alive = crate::blackboard::process_alive(pid);
            // A newer exec generation may have appeared.
            if let Some(dir) = f.trace.parent().and_then(Path::parent) {
                if let Some(p) = trace_path(dir, pid) {
                    if p != f.trace {
                        f.trace = p;
                        f.last = None;
                    }
                }
            }
            // The scan's CPU time, not its wall time: a scan preempted on
            // a loaded CPU must not stretch the period (the meter loop is
            // pinned to the probe's CPU).
            let started = thread_cpu_ns();
            let Ok(trace) = LockTrace::open(&f.trace) else {
                f.next_ns = now_ns + f.period_ns;
                continue;
            };
            let now = crate::blackboard::monotonic_ns();
            let tot = totals(&trace, now);
            let cost = thread_cpu_ns().saturating_sub(started);
            // Keep the scans under 5 % of one CPU.
            f.period_ns = self.period_ns.max(20 * cost);
            f.next_ns = now_ns + f.period_ns;
            let ended = !alive || tot.finished;
            let (dt, base) = match &f.last {
                Some((t0, last)) => ((now.saturating_sub(*t0)) as f64 / 1e9, Some(last)),
                None => (0.0, None),
            };
            let (w0, c0) = base.map_or((0, 0), |b| (b.wait_ns, b.contended));
            let rate = |a: u64, b: u64| {
                if dt > 0.0 {
                    a.saturating_sub(b) as f64 / dt
                } else {
                    0.0
                }
            };
            let mut locks: Vec<(u64, f64, f64)> = tot
                .by_lock
                .iter()
                .map(|(&addr, &(w, c))| {
                    let (bw, bc) = base
                        .and_then(|b| b.by_lock.get(&addr).copied())
                        .unwrap_or((0, 0));
                    (addr, rate(w, bw) / 1e9, rate(c, bc))
                })
                .filter(|l| l.1 > 0.0 || l.2 > 0.0)
                .collect();
            locks.sort_by(|a, b| b.1.total_cmp(&a.1));
            locks.truncate(TOP_LOCKS);
            if dt > 0.0 || ended {
                out.push(ProcessLockMeters {
                    pid,
                    command: f.command.clone(),
                    wait_rate: rate(tot.wait_ns, w0) / 1e9,
                    contention_rate: rate(tot.contended, c0),
                    top_locks: locks,
                    total_wait_ns: tot.wait_ns,
                    total_contended: tot.contended,
                    ended,
                });
            }
            f.last = Some((now, tot));
            f.ended = ended;
        }
        for pid in gone {
            self.followed.remove(&pid);
        }
        out
    }
}
