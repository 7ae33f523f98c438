//! The memory-latency probe: pointer chasing after pChase (Pase and
//! Eckl, IBM; Fowler et al. 2011, "pChase benchmark"): "pointer to the
//! next memory location is stored in the current location. Grow and
//! randomize chain to defeat cache, prefetch. Dereference pointers in k
//! independent chains concurrently".
//!
//! [`Chain`] is one random cycle through the cache lines of a buffer much
//! larger than the last-level cache (default: four times it, at least
//! 64 MiB, at most 512 MiB; [`default_chain_bytes`]), built with
//! Sattolo's algorithm so that it visits every line once before
//! repeating; `k` heads start evenly spaced along the cycle and advance
//! together. The buffer asks for transparent huge pages
//! (`MADV_HUGEPAGE`), so that the probe measures memory rather than page
//! walks where the kernel grants them.
//!
//! A sample ([`Chain::sample`]) takes one untimed step of every head,
//! then dereferences `loads` steps of every head and divides the elapsed
//! time by `loads`: with `k = 1` that is the
//! latency of one memory access, ns; with `k > 1` the time of one round
//! of k concurrent accesses. Consecutive samples continue where the last
//! stopped, so the lines they touch were last touched a whole cycle ago
//! (millions of lines) and are not in any cache.
//!
//! **Disturbed samples.** A sample during which the thread was preempted
//! measures the scheduler, not memory; so does one stretched by the
//! hypervisor taking the virtual CPU away, which a guest cannot see but
//! shows as a sample more than [`OUTLIER_FACTOR`] times the running
//! median. Both are counted ([`ProbeStats::disturbed`]) and left out of
//! the meter. Preemption is read with one `getrusage(RUSAGE_THREAD)` per
//! sample, after the chase: a sample is disturbed when the thread's
//! *involuntary* context-switch count changed since the previous sample
//! ended. Sleeping between samples is a voluntary switch and does not
//! count; a preemption while the thread did other work between two
//! samples (the meter engine's tick) also marks the next sample, which
//! only leaves out one more sample. (Until 2026-11 the count was read
//! before and after every sample, two system calls per sample.)
//!
//! **Cost.** [`ProbeConfig::default`] follows 16 links per sample (64
//! until 2026-11, then 32 until 2026-11-23; a calibration records `loads`
//! and one measured with another count is refused,
//! [`crate::calibration::Calibration::read`]).
//! The meter engine takes its samples in its own loop, on a thread pinned
//! to the probe's CPU ([`crate::engine`]); [`ProbeRunner`], a thread of
//! its own, is what `contend meters calibrate` uses.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::blackboard::monotonic_ns;

/// A sample larger than this many times the running median is taken for
/// one stretched by the hypervisor (left out).
pub const OUTLIER_FACTOR: f64 = 4.0;

/// Size of one chain element: a cache line, bytes.
pub const LINE: usize = 64;

/// Timed dependent loads per sample of the default probe (16: about 5 µs
/// at 300 ns per load; the wake-up of the tick costs more). Calibrations
/// measured with another count are refused
/// ([`crate::calibration::Calibration::read`]).
pub const DEFAULT_LOADS: u32 = 16;

/// The running median is recomputed every this many samples.
const MEDIAN_EVERY: u32 = 8;

/// Samples the running median is taken over.
const RECENT: usize = 63;

/// How the probe measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ProbeConfig {
    /// Chain buffer, bytes.
    pub chain_bytes: u64,
    /// Steps per head per sample.
    pub loads: u32,
    /// Independent chains (heads) k.
    pub chains: u32,
}

impl Default for ProbeConfig {
    /// [`default_chain_bytes`], [`DEFAULT_LOADS`] loads, one chain.
    fn default() -> Self {
        ProbeConfig {
            chain_bytes: default_chain_bytes(),
            loads: DEFAULT_LOADS,
            chains: 1,
        }
    }
}

/// Four times the last-level cache (16 MiB when unknown), at least 64 MiB,
/// at most 512 MiB, bytes.
pub fn default_chain_bytes() -> u64 {
    const MIB: u64 = 1 << 20;
    let llc = contend_record::stress::last_level_cache_bytes().unwrap_or(16 * MIB);
    (4 * llc).clamp(64 * MIB, 512 * MIB)
}

/// Errors setting up the probe.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    /// A configuration value is out of range.
    #[error("probe: {0}")]
    Config(String),
    /// The buffer could not be mapped.
    #[error("probe: cannot map a chain of {bytes} bytes: {source}")]
    Map {
        /// Size asked for.
        bytes: u64,
        /// The error.
        source: std::io::Error,
    },
    /// The probe thread could not be pinned to its CPU.
    #[error("probe: cannot run on CPU {cpu}: {source}")]
    Pin {
        /// The CPU.
        cpu: u32,
        /// The error of `sched_setaffinity`.
        source: std::io::Error,
    },
}

/// One randomised pointer chain.
pub struct Chain {
    base: *mut u8,
    bytes: usize,
    heads: Vec<*const usize>,
    loads: u32,
    recent: Vec<f64>,
    /// The running median of `recent` (recomputed every
    /// [`MEDIAN_EVERY`] samples).
    median: Option<f64>,
    since_median: u32,
    /// Involuntary context switches of the sampling thread when the
    /// previous sample ended.
    last_nivcsw: Option<i64>,
}

// SAFETY: the chain's memory is owned by it and used by one thread at a
// time.
unsafe impl Send for Chain {}

impl Drop for Chain {
    fn drop(&mut self) {
        // SAFETY: mapped in `new` with this length.
        unsafe { libc::munmap(self.base.cast(), self.bytes) };
    }
}

/// One sample.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    /// Time per step (per round of k loads), ns.
    pub ns_per_load: f64,
    /// The sample was disturbed (switched out, or an outlier) and is not
    /// a measurement of memory.
    pub disturbed: bool,
    /// How long the sample took, ns.
    pub elapsed_ns: u64,
}

/// Involuntary context switches (preemptions) of the calling thread.
fn involuntary_switches() -> i64 {
    // SAFETY: getrusage with a valid out-pointer.
    unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_THREAD, &mut ru);
        ru.ru_nivcsw
    }
}

impl Chain {
    /// Builds the chain (touching every line; call it on the CPU that
    /// will run the probe, so that first touch places the buffer on that
    /// CPU's node).
    ///
    /// Errors: fewer than 1024 lines, 0 loads or chains
    /// ([`ProbeError::Config`]); no memory ([`ProbeError::Map`]).
    pub fn new(cfg: &ProbeConfig) -> Result<Chain, ProbeError> {
        let lines = (cfg.chain_bytes / LINE as u64) as usize;
        if lines < 1024 {
            return Err(ProbeError::Config(format!(
                "chain of {} bytes is too small (at least 64 KiB)",
                cfg.chain_bytes
            )));
        }
        if cfg.loads == 0 || cfg.chains == 0 || cfg.chains as usize > lines / 2 {
            return Err(ProbeError::Config(format!(
                "{} loads in {} chains: both must be at least 1",
                cfg.loads, cfg.chains
            )));
        }
        let bytes = lines * LINE;
        // Round up to a huge page so that the kernel can back it with them.
        let map_bytes = bytes.div_ceil(2 << 20) * (2 << 20);
        // SAFETY: anonymous private mapping, checked below.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_bytes,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(ProbeError::Map {
                bytes: cfg.chain_bytes,
                source: std::io::Error::last_os_error(),
            });
        }
        // SAFETY: advice on our own mapping; failure only means no huge
        // pages.
        unsafe { libc::madvise(base, map_bytes, libc::MADV_HUGEPAGE) };
        let base = base as *mut u8;
        // Sattolo: a uniformly random cyclic permutation, one cycle.
        let mut order: Vec<u32> = (0..lines as u32).collect();
        let mut rng = Rng::seeded();
        for i in (1..lines).rev() {
            let j = (rng.next() % i as u64) as usize;
            order.swap(i, j);
        }
        for i in 0..lines {
            let from = order[i] as usize;
            let to = order[(i + 1) % lines] as usize;
            // SAFETY: both lines lie within the mapping; lines are 64-byte
            // aligned in a page-aligned mapping.
            unsafe {
                *(base.add(from * LINE) as *mut usize) = base.add(to * LINE) as usize;
            }
        }
        let k = cfg.chains as usize;
        let heads = (0..k)
            .map(|c| {
                // SAFETY: within the mapping.
                unsafe { base.add(order[c * lines / k] as usize * LINE) as *const usize }
            })
            .collect();
        Ok(Chain {
            base,
            bytes: map_bytes,
            heads,
            loads: cfg.loads,
            recent: Vec::with_capacity(RECENT),
            median: None,
            since_median: 0,
            last_nivcsw: None,
        })
    }

    /// Takes one sample (see the module documentation). Call it from one
    /// thread (the preemption check compares that thread's counts).
    pub fn sample(&mut self) -> Sample {
        if self.last_nivcsw.is_none() {
            self.last_nivcsw = Some(involuntary_switches());
        }
        // One untimed step of every head first: the first load after the
        // thread wakes pays a fixed cost (about 250 ns measured here, a
        // TLB refill or cold code) that would otherwise be spread over
        // the timed loads, more the fewer they are.
        for h in self.heads.iter_mut() {
            // SAFETY: every chain word holds the address of another line
            // of the mapping.
            *h = unsafe { std::ptr::read_volatile(*h) } as *const usize;
        }
        let t0 = Instant::now();
        let k = self.heads.len();
        if k == 1 {
            let mut p = self.heads[0];
            for _ in 0..self.loads {
                // SAFETY: every chain word holds the address of another
                // line of the mapping.
                p = unsafe { std::ptr::read_volatile(p) } as *const usize;
            }
            self.heads[0] = p;
        } else {
            for _ in 0..self.loads {
                for h in self.heads.iter_mut() {
                    // SAFETY: as above.
                    *h = unsafe { std::ptr::read_volatile(*h) } as *const usize;
                }
            }
        }
        let elapsed = t0.elapsed();
        let nivcsw = involuntary_switches();
        let switched = self.last_nivcsw != Some(nivcsw);
        self.last_nivcsw = Some(nivcsw);
        let ns = elapsed.as_nanos() as f64 / f64::from(self.loads);
        let outlier = self.median.is_some_and(|m| ns > OUTLIER_FACTOR * m);
        if !switched {
            // The running median follows every sample not switched out
            // (also outliers, so that a lasting change is followed).
            if self.recent.len() == RECENT {
                self.recent.remove(0);
            }
            self.recent.push(ns);
            self.since_median += 1;
            if self.median.is_none() || self.since_median >= MEDIAN_EVERY {
                self.median = self.compute_median();
                self.since_median = 0;
            }
        }
        Sample {
            ns_per_load: ns,
            disturbed: switched || outlier,
            elapsed_ns: elapsed.as_nanos() as u64,
        }
    }

    /// The median of `recent` (at least 8 values): the value at `len / 2`
    /// in sorted order, selected in a copy on the stack (no allocation,
    /// no full sort).
    fn compute_median(&self) -> Option<f64> {
        let n = self.recent.len();
        if n < 8 {
            return None;
        }
        let mut v = [0.0f64; RECENT];
        v[..n].copy_from_slice(&self.recent);
        let (_, m, _) = v[..n].select_nth_unstable_by(n / 2, f64::total_cmp);
        Some(*m)
    }
}

impl Chain {
    /// Builds a chain on `cpu` ([`Chain::new`] on a short-lived thread
    /// pinned there, so that first touch places the buffer on that CPU's
    /// node), for a thread that will sample it on `cpu`.
    ///
    /// Errors: the CPU cannot be used ([`ProbeError::Pin`]) or the chain
    /// not built.
    pub fn new_on(cpu: u32, cfg: &ProbeConfig) -> Result<Chain, ProbeError> {
        let cfg = *cfg;
        std::thread::Builder::new()
            .name(format!("contend-probe-{cpu}"))
            .spawn(move || {
                pin_current_thread(cpu)?;
                Chain::new(&cfg)
            })
            .map_err(|e| ProbeError::Config(format!("cannot start the probe thread: {e}")))?
            .join()
            .map_err(|_| ProbeError::Config("the probe thread ended".into()))?
    }
}

/// A small xorshift generator (the chain's order need not be
/// cryptographic, only unpredictable to prefetchers).
struct Rng(u64);

impl Rng {
    fn seeded() -> Rng {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64);
        Rng(t | 1)
    }
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
}

/// What a running probe measured since the last [`ProbeRunner::take`].
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ProbeStats {
    /// Undisturbed samples.
    pub samples: u64,
    /// Sum of their ns per load.
    pub sum_ns: f64,
    /// Disturbed samples (left out).
    pub disturbed: u64,
    /// Time spent chasing, ns (all samples): the probe's own cost.
    pub busy_ns: u64,
    /// The latest undisturbed sample, ns per load.
    pub last_ns: f64,
}

impl ProbeStats {
    /// Counts one sample in.
    pub fn add(&mut self, s: &Sample) {
        self.busy_ns += s.elapsed_ns;
        if s.disturbed {
            self.disturbed += 1;
        } else {
            self.samples += 1;
            self.sum_ns += s.ns_per_load;
            self.last_ns = s.ns_per_load;
        }
    }

    /// Mean ns per load of the undisturbed samples.
    pub fn mean(&self) -> Option<f64> {
        (self.samples > 0).then(|| self.sum_ns / self.samples as f64)
    }
}

/// A probe thread pinned to one CPU, sampling every interval.
pub struct ProbeRunner {
    stop: Arc<AtomicBool>,
    stats: Arc<Mutex<ProbeStats>>,
    handle: Option<std::thread::JoinHandle<()>>,
    cpu: u32,
}

impl ProbeRunner {
    /// Starts a probe on `cpu` that takes one sample every `interval`
    /// (on a grid, [`Grid`], so a slow sample does not shift the next).
    /// Returns once the chain is built.
    ///
    /// Errors: the CPU cannot be used ([`ProbeError::Pin`]) or the chain
    /// not built.
    pub fn start(
        cpu: u32,
        cfg: ProbeConfig,
        interval: Duration,
    ) -> Result<ProbeRunner, ProbeError> {
        let stop = Arc::new(AtomicBool::new(false));
        let stats = Arc::new(Mutex::new(ProbeStats::default()));
        let (tx, rx) = std::sync::mpsc::channel();
        let (s2, st2) = (stop.clone(), stats.clone());
        let handle = std::thread::Builder::new()
            .name(format!("contend-probe-{cpu}"))
            .spawn(move || {
                if let Err(e) = pin_current_thread(cpu) {
                    let _ = tx.send(Err(e));
                    return;
                }
                let mut chain = match Chain::new(&cfg) {
                    Ok(c) => c,
                    Err(e) => {
                        let _ = tx.send(Err(e));
                        return;
                    }
                };
                let _ = tx.send(Ok(()));
                let mut grid = Grid::new(monotonic_ns(), interval);
                while !s2.load(Ordering::Relaxed) {
                    let s = chain.sample();
                    if let Ok(mut st) = st2.lock() {
                        st.add(&s);
                    }
                    grid.sleep();
                }
            })
            .map_err(|e| ProbeError::Config(format!("cannot start the probe thread: {e}")))?;
        match rx.recv() {
            Ok(Ok(())) => Ok(ProbeRunner {
                stop,
                stats,
                handle: Some(handle),
                cpu,
            }),
            Ok(Err(e)) => {
                let _ = handle.join();
                Err(e)
            }
            Err(_) => {
                let _ = handle.join();
                Err(ProbeError::Config("the probe thread ended".into()))
            }
        }
    }

    /// The CPU it runs on.
    pub fn cpu(&self) -> u32 {
        self.cpu
    }

    /// What it measured since the last call (and resets it; `last_ns`
    /// stays).
    pub fn take(&self) -> ProbeStats {
        match self.stats.lock() {
            Ok(mut st) => {
                let out = *st;
                *st = ProbeStats {
                    last_ns: st.last_ns,
                    ..ProbeStats::default()
                };
                out
            }
            Err(_) => ProbeStats::default(),
        }
    }
}

impl Drop for ProbeRunner {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// Sleeps until `deadline_ns` (CLOCK_MONOTONIC), with an absolute
/// deadline (`clock_nanosleep(TIMER_ABSTIME)`): a loop that sleeps to the
/// next point of a grid does not drift by the time between reading the
/// clock and sleeping. Returns at once when the deadline has passed.
pub fn sleep_until(deadline_ns: u64) {
    let ts = libc::timespec {
        tv_sec: (deadline_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (deadline_ns % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: a valid timespec; no remaining-time pointer with
    // TIMER_ABSTIME. EINTR (a signal) is retried.
    while unsafe {
        libc::clock_nanosleep(
            libc::CLOCK_MONOTONIC,
            libc::TIMER_ABSTIME,
            &ts,
            std::ptr::null_mut(),
        )
    } == libc::EINTR
    {}
}

/// A grid of ticks `start + k × interval` (CLOCK_MONOTONIC ns) that a
/// loop sleeps along: each [`Grid::sleep`] sleeps to the next point with
/// an absolute deadline ([`sleep_until`]); when the loop fell behind (the
/// machine was busy) it skips to the current point instead of a burst of
/// ticks to catch up.
#[derive(Debug, Clone, Copy)]
pub struct Grid {
    start: u64,
    interval: u64,
    k: u64,
}

impl Grid {
    /// A grid from `start_ns` with `interval` (at least 1 ns).
    pub fn new(start_ns: u64, interval: Duration) -> Grid {
        Grid {
            start: start_ns,
            interval: (interval.as_nanos() as u64).max(1),
            k: 0,
        }
    }

    /// Sleeps to the next point (at once when it has passed, the grid
    /// then skipping to now).
    pub fn sleep(&mut self) {
        self.k += 1;
        let target = self.start + self.k * self.interval;
        let now = monotonic_ns();
        if target > now {
            sleep_until(target);
        } else {
            self.k = (now - self.start) / self.interval;
        }
    }
}

/// Pins the calling thread to `cpu`.
///
/// Errors: the CPU is not online or not allowed ([`ProbeError::Pin`]).
pub fn pin_current_thread(cpu: u32) -> Result<(), ProbeError> {
    if cpu as usize >= libc::CPU_SETSIZE as usize {
        return Err(ProbeError::Pin {
            cpu,
            source: std::io::Error::from_raw_os_error(libc::EINVAL),
        });
    }
    // SAFETY: a zeroed cpu_set_t is empty; CPU_SET within its size.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu as usize, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(ProbeError::Pin {
                cpu,
                source: std::io::Error::last_os_error(),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The chain is one cycle through every line: following it from a
    /// head returns there after exactly `lines` steps, never earlier.
    #[test]
    fn chain_is_one_cycle_through_every_line() {
        let cfg = ProbeConfig {
            chain_bytes: 64 * 4096,
            loads: 16,
            chains: 4,
        };
        let chain = Chain::new(&cfg).unwrap();
        let lines = 4096;
        let start = chain.heads[0];
        let mut p = start;
        let mut seen = std::collections::HashSet::new();
        for step in 1..=lines {
            // SAFETY: chain words point into the mapping.
            p = unsafe { *p } as *const usize;
            assert!(seen.insert(p as usize), "line revisited after {step} steps");
            if p == start {
                assert_eq!(step, lines);
            }
        }
        assert_eq!(p, start);
        // Heads are distinct and every sample takes a positive time.
        let mut chain = chain;
        let s = chain.sample();
        assert!(s.ns_per_load > 0.0);
        let mut heads = chain.heads.clone();
        heads.sort();
        heads.dedup();
        assert_eq!(heads.len(), 4);
    }

    #[test]
    fn bad_configurations_are_errors() {
        let e = Chain::new(&ProbeConfig {
            chain_bytes: 1000,
            loads: 1,
            chains: 1,
        })
        .err()
        .unwrap();
        assert!(e.to_string().contains("too small"), "{e}");
        assert!(matches!(
            pin_current_thread(100_000),
            Err(ProbeError::Pin { .. })
        ));
    }
}
