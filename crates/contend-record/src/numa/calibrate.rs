//! `contend numa calibrate`: the latency micro-benchmark of Nikolopoulos
//! (Section 2.2, Figure 1, after Hristea et al.) on today's machines.
//!
//! A *master* thread, pinned to a CPU of node k, chases pointers through a
//! buffer bound to node i with `mbind(2)`: a random cyclic chain over its
//! cache lines, so every load depends on the one before (no overlap) and
//! lands on an unpredictable line (no prefetching). Meanwhile m
//! *contender* threads, each pinned to a CPU of another node (or, where
//! there are fewer nodes than contenders, to other CPUs), stream through
//! buffers of their own on the same node i as fast as they can: they load
//! the same memory module without sharing the master's lines. The master's
//! time per load is its back-to-back latency:
//!
//! - `l_nocont(i)` (k = i, m = 0) and `l_cont(i, m)` (k = i, m = 1..N);
//! - `r_ki,nocont` and `r_ki,cont(m)` (k ≠ i);
//! - the master's throughput as m grows, with dependent work between its
//!   loads (the seed's `num_iters` loop, set so the work lasts about one
//!   uncontended latency) and back to back (the seed's Figure 2), with
//!   the same loop's time when its load hits L1 (`work_alone_ns`, timed
//!   beside the same contenders right after), so that a CPU running
//!   faster or slower between points is told apart from the memory;
//! - the restart latency of each node, the window of Eq. 2: the most
//!   *independent* work the core can do between two dependent loads
//!   without lengthening the loop (Hristea's method, Section 2.3 of the
//!   seed). On out-of-order cores this is bounded by the reorder buffer.
//!
//! Each point is measured in `rounds` rounds and the median kept. A round
//! in which another program ran on a CPU the benchmark does not use (it
//! may have loaded the memory too), or the master did not have its CPU
//! for 90 % of the time (its
//! latency is its CPU time per load, so preemption alone does not inflate
//! it), or a
//! contender for 80 %, was disturbed by another program and is measured
//! again (up to four times); the calibration counts these
//! (`disturbed_rounds`, `disturbed_points`). On a machine with one node
//! the contenders run on the other CPUs of that node; the remote tables
//! are then `null`: absent, not zero.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

use contend_trace::numa::latency::contention_resolved;
use contend_trace::numa::{Calibration, CurvePoint, LatencyTable};

use super::memory::{bind_to_node, query_nodes};
use super::topology::Topology;
use crate::host::{thread_cpu_ns, uname, CpuInfo};

/// What to measure, how long.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CalibrateOptions {
    /// Bytes of the master's buffer and of each contender's (default 256
    /// MiB: far beyond the last-level cache).
    pub buffer_bytes: u64,
    /// Length of one measured round (default 100 ms).
    pub round: Duration,
    /// Rounds per point; the median is kept (default 3).
    pub rounds: u32,
    /// Largest number of contenders of the throughput curve on each node's
    /// own memory (default: N, or the number of other CPUs if larger, at
    /// most 8). The latency tables always go to m = N.
    pub max_contenders: Option<u32>,
    /// Measure the restart latency (the window of Eq. 2; default true).
    pub restart: bool,
}

impl Default for CalibrateOptions {
    fn default() -> CalibrateOptions {
        CalibrateOptions {
            buffer_bytes: 256 << 20,
            round: Duration::from_millis(100),
            rounds: 3,
            max_contenders: None,
            restart: true,
        }
    }
}

/// Errors of [`calibrate`].
#[derive(Debug, thiserror::Error)]
pub enum CalibrateError {
    /// The machine cannot run the benchmark as asked.
    #[error("numa calibrate: {0}")]
    Machine(String),
    /// A buffer could not be mapped.
    #[error("numa calibrate: cannot map {bytes} bytes: {source}")]
    Memory {
        /// Its size.
        bytes: u64,
        /// The error.
        source: std::io::Error,
    },
    /// A thread could not be pinned or started.
    #[error("numa calibrate: {0}")]
    Thread(String),
}

/// Bytes one dependent load brings in.
fn line_bytes() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let v = unsafe { libc::sysconf(libc::_SC_LEVEL1_DCACHE_LINESIZE) };
    if v >= 16 && (v as u64).is_power_of_two() {
        v as u64
    } else {
        64
    }
}

/// Pins the calling thread to `cpu`.
fn pin(cpu: u32) -> Result<(), String> {
    // SAFETY: a zeroed cpu_set_t is empty; CPU_SET stays within it for
    // cpu < CPU_SETSIZE, checked first.
    unsafe {
        if cpu as usize >= 8 * std::mem::size_of::<libc::cpu_set_t>() {
            return Err(format!("CPU {cpu} is beyond the CPU set"));
        }
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu as usize, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(format!(
                "cannot pin a thread to CPU {cpu}: {}",
                std::io::Error::last_os_error()
            ));
        }
    }
    Ok(())
}

/// A buffer bound to one node.
struct NodeBuffer {
    map: memmap2::MmapMut,
    bound: bool,
}

impl NodeBuffer {
    /// Maps `bytes`, asks for huge pages (fewer TLB misses: the latency
    /// measured is the memory's, not the page walk's) and binds it to
    /// `node` before anything touches it.
    fn new(bytes: u64, node: u32) -> Result<NodeBuffer, CalibrateError> {
        let len = usize::try_from(bytes).map_err(|_| CalibrateError::Memory {
            bytes,
            source: std::io::Error::other("too large"),
        })?;
        let mut map = memmap2::MmapMut::map_anon(len)
            .map_err(|source| CalibrateError::Memory { bytes, source })?;
        let _ = map.advise(memmap2::Advice::HugePage);
        // SAFETY: the fresh mapping of `len` bytes, not yet touched.
        let bound = unsafe { bind_to_node(map.as_mut_ptr(), len, node) }.is_ok();
        Ok(NodeBuffer { map, bound })
    }

    /// Asks the kernel to turn the touched buffer into huge pages now
    /// (`MADV_COLLAPSE`, Linux 6.1), so that no page collapses in the
    /// background while latencies are measured; false where it cannot.
    fn collapse(&mut self) -> bool {
        const MADV_COLLAPSE: libc::c_int = 25;
        // SAFETY: advice on our own mapping.
        unsafe { libc::madvise(self.map.as_mut_ptr().cast(), self.map.len(), MADV_COLLAPSE) == 0 }
    }

    fn words(&mut self) -> &mut [usize] {
        let n = self.map.len() / std::mem::size_of::<usize>();
        // SAFETY: the mapping is page-aligned and `n` words long.
        unsafe { std::slice::from_raw_parts_mut(self.map.as_mut_ptr().cast::<usize>(), n) }
    }

    fn words_ref(&self) -> &[usize] {
        let n = self.map.len() / std::mem::size_of::<usize>();
        // SAFETY: as in `words`.
        unsafe { std::slice::from_raw_parts(self.map.as_ptr().cast::<usize>(), n) }
    }

    /// Whether the first, middle and last page lie on `node`.
    fn on_node(&self, node: u32) -> bool {
        let base = self.map.as_ptr() as u64;
        let len = self.map.len() as u64;
        let pages = [base, base + ((len / 2) & !4095), base + len - 4096];
        query_nodes(0, &pages).is_ok_and(|s| s.iter().all(|&n| n == node as i32))
    }
}

/// Links the cache lines of `buf` into one random cycle (Sattolo's
/// algorithm): word `line · stride` holds the index of the next line's
/// first word. Returns the start.
fn build_chain(buf: &mut [usize], stride: usize, seed: u64) -> usize {
    let lines = buf.len() / stride;
    let mut order: Vec<u32> = (0..lines as u32).collect();
    let mut s = seed | 1;
    for i in (1..lines).rev() {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        let j = (s % i as u64) as usize;
        order.swap(i, j);
    }
    for w in 0..lines {
        let from = order[w] as usize;
        let to = order[(w + 1) % lines] as usize;
        buf[from * stride] = to * stride;
    }
    order[0] as usize * stride
}

/// `loads` dependent loads along the chain from `start`.
#[inline(never)]
fn chase(buf: &[usize], start: usize, loads: u64) -> usize {
    let mut p = start;
    for _ in 0..loads {
        p = buf[p];
    }
    p
}

/// As [`chase`], with `iters` units of work *dependent* on the pointer
/// between loads (the seed's `work(dummy, j)`, with `dummy` = 0).
#[inline(never)]
fn chase_dependent_work(buf: &[usize], start: usize, loads: u64, iters: u64) -> usize {
    let dummy = std::hint::black_box(0usize);
    let mut p = start;
    for _ in 0..loads {
        p = buf[p];
        for _ in 0..iters {
            p = std::hint::black_box(p).wrapping_add(dummy);
        }
    }
    p
}

/// As [`chase`], with `iters` units of work *independent* of the loads
/// (Hristea's restart-latency probe).
#[inline(never)]
fn chase_independent_work(buf: &[usize], start: usize, loads: u64, iters: u64) -> (usize, u64) {
    let mut p = start;
    let mut x = 1u64;
    for _ in 0..loads {
        p = buf[p];
        for _ in 0..iters {
            x = std::hint::black_box(x)
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1);
        }
    }
    (p, x)
}

/// Largest ratio between the slowest and fastest median time of the work
/// alone (`work_alone_ns`) over one throughput curve before the
/// calibration notes that the CPU's speed changed under it.
const WORK_DRIFT: f64 = 1.10;

/// A contender's published progress.
#[derive(Default)]
struct Progress {
    cpu_ns: AtomicU64,
    bytes: AtomicU64,
    ready: AtomicBool,
}

/// Streams through `buf` until `stop`, one load per cache line of
/// `line_words` words (every line comes from memory, at the highest line
/// rate the core sustains: on the development guest 24–32 GB/s, against
/// 7–11 GB/s when every word was summed), publishing its CPU time and
/// bytes read (whole lines) after every 64 KiB.
fn contend(buf: &[usize], line_words: usize, stop: &AtomicBool, progress: &Progress) {
    const CHUNK: usize = 64 * 1024 / std::mem::size_of::<usize>();
    let mut sum = 0usize;
    let mut bytes = 0u64;
    progress.cpu_ns.store(thread_cpu_ns(), Ordering::Relaxed);
    progress.ready.store(true, Ordering::Release);
    'outer: loop {
        for chunk in buf.chunks(CHUNK) {
            sum = sum.wrapping_add(
                chunk
                    .iter()
                    .step_by(line_words)
                    .fold(0usize, |a, &v| a.wrapping_add(v)),
            );
            bytes += std::mem::size_of_val(chunk) as u64;
            progress.bytes.store(bytes, Ordering::Relaxed);
            progress.cpu_ns.store(thread_cpu_ns(), Ordering::Relaxed);
            if stop.load(Ordering::Relaxed) {
                break 'outer;
            }
        }
    }
    std::hint::black_box(sum);
}

/// Busy and total clock ticks of every CPU from `/proc/stat` (index =
/// CPU number; empty when it cannot be read).
fn cpu_ticks() -> Vec<(u64, u64)> {
    let Ok(text) = std::fs::read_to_string("/proc/stat") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("cpu") else {
            continue;
        };
        let mut f = rest.split_whitespace();
        let Some(cpu) = f.next().and_then(|c| c.parse::<usize>().ok()) else {
            continue;
        };
        let v: Vec<u64> = f.filter_map(|x| x.parse().ok()).collect();
        if v.len() < 5 {
            continue;
        }
        // user nice system idle iowait irq softirq steal …
        let idle = v[3] + v[4];
        let total: u64 = v.iter().take(8).sum();
        if out.len() <= cpu {
            out.resize(cpu + 1, (0, 0));
        }
        out[cpu] = (total - idle, total);
    }
    out
}

/// Whether the CPUs other than `ours` were busy during a round (more than
/// one clock tick and 10 % of it): other programs there may have loaded
/// the memory too.
fn others_busy(before: &[(u64, u64)], after: &[(u64, u64)], ours: &[u32]) -> bool {
    before.iter().zip(after).enumerate().any(|(cpu, (b, a))| {
        if ours.contains(&(cpu as u32)) {
            return false;
        }
        let busy = a.0.saturating_sub(b.0);
        let total = a.1.saturating_sub(b.1);
        busy > 1 && busy * 10 > total
    })
}

/// Times a disturbed round is measured again.
const MAX_RETRIES: u32 = 4;

/// What one configuration measured over all its rounds.
#[derive(Default)]
struct Measured {
    latency_ns: Vec<f64>,
    throughput: Vec<f64>,
    work_alone_ns: Vec<f64>,
    contender_bytes_per_s: Vec<f64>,
    disturbed_rounds: u32,
    still_disturbed: bool,
}

/// What the master measured in one round.
struct MasterRound {
    /// Back to back, ns per load.
    latency_ns: f64,
    /// With work between loads: (bytes/s, ns per iteration with the load
    /// cached); `None` where not measured.
    throughput: Option<(f64, f64)>,
    /// The contenders' reading together, bytes/s.
    contender_bytes_per_s: f64,
    /// Tries measured again.
    disturbed: u32,
    /// Still disturbed after every retry.
    still_disturbed: bool,
}

/// `[min, max]` of `v`; `None` when empty.
fn range(v: &[f64]) -> Option<[f64; 2]> {
    let lo = v.iter().copied().min_by(f64::total_cmp)?;
    let hi = v.iter().copied().max_by(f64::total_cmp)?;
    Some([lo, hi])
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    if v.is_empty() {
        return f64::NAN;
    }
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Runs `body` (returns its wall ns) on the calling, pinned master thread
/// until a try in which the master had its CPU for 90 % of the wall time
/// and every contender for 80 %, and the CPUs of neither were idle (at
/// most 1 + [`MAX_RETRIES`] tries). Returns the master's CPU ns,
/// the contenders' bytes per second, the disturbed tries and whether the
/// kept try was disturbed too.
fn undisturbed(
    progress: &[Progress],
    ours: &[u32],
    mut body: impl FnMut() -> u64,
) -> (u64, f64, u32, bool) {
    let mut disturbed = 0;
    loop {
        let before: Vec<(u64, u64)> = progress
            .iter()
            .map(|p| {
                (
                    p.cpu_ns.load(Ordering::Relaxed),
                    p.bytes.load(Ordering::Relaxed),
                )
            })
            .collect();
        let ticks0 = cpu_ticks();
        let cpu0 = thread_cpu_ns();
        let wall = body().max(1);
        let cpu = thread_cpu_ns() - cpu0;
        let mut bytes = 0;
        let mut bad = (cpu as f64) < 0.9 * wall as f64 || others_busy(&ticks0, &cpu_ticks(), ours);
        for (p, (c0, b0)) in progress.iter().zip(before) {
            let c = p.cpu_ns.load(Ordering::Relaxed).saturating_sub(c0);
            bytes += p.bytes.load(Ordering::Relaxed).saturating_sub(b0);
            bad |= (c as f64) < 0.8 * wall as f64;
        }
        let bps = bytes as f64 * 1e9 / wall as f64;
        if !bad || disturbed >= MAX_RETRIES {
            // The master's own CPU time: equal to the wall time when it was
            // not disturbed, and without the time it was off its CPU when
            // it was.
            return (cpu.clamp(1, wall), bps, disturbed, bad);
        }
        disturbed += 1;
    }
}

/// One round of one configuration: the contenders on `contender_cpus`
/// start streaming their buffers, the master on `master_cpu` chases
/// `loads` loads back to back (and, with `work_iters`, half as many with
/// dependent work between them), the contenders stop. Adds the results to
/// `into`.
#[allow(clippy::too_many_arguments)]
fn round(
    chain: &[usize],
    start: usize,
    master_cpu: u32,
    contender_cpus: &[u32],
    contender_bufs: &[NodeBuffer],
    loads: u64,
    work_iters: Option<u64>,
    line: u64,
    into: &mut Measured,
) -> Result<(), CalibrateError> {
    let stop = AtomicBool::new(false);
    let progress: Vec<Progress> = contender_cpus.iter().map(|_| Progress::default()).collect();
    let ours: Vec<u32> = contender_cpus.iter().copied().chain([master_cpu]).collect();
    std::thread::scope(|s| {
        let mut handles = Vec::new();
        for (j, &cpu) in contender_cpus.iter().enumerate() {
            let buf = contender_bufs[j % contender_bufs.len()].words_ref();
            let (stop, progress) = (&stop, &progress[j]);
            handles.push(s.spawn(move || -> Result<(), String> {
                let pinned = pin(cpu);
                // Ready even when pinning failed, so the master never waits
                // for nothing.
                if pinned.is_err() {
                    progress.ready.store(true, Ordering::Release);
                }
                pinned?;
                contend(
                    buf,
                    (line as usize / std::mem::size_of::<usize>()).max(1),
                    stop,
                    progress,
                );
                Ok(())
            }));
        }
        let (ours, progress) = (&ours, &progress);
        let master = s.spawn(move || -> Result<MasterRound, String> {
            pin(master_cpu)?;
            let t0 = Instant::now();
            while !progress.iter().all(|p| p.ready.load(Ordering::Acquire)) {
                if t0.elapsed() > Duration::from_secs(30) {
                    return Err("the contender threads did not start within 30 s".into());
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            // Warm up: the contenders reach full speed.
            std::hint::black_box(chase(chain, start, loads / 8 + 1));
            let (wall, cbps, mut disturbed, mut still) = undisturbed(progress, ours, || {
                let t = Instant::now();
                std::hint::black_box(chase(chain, start, loads));
                t.elapsed().as_nanos() as u64
            });
            let throughput = match work_iters {
                Some(iters) => {
                    let n = (loads / 2).max(1000);
                    let (w, _, d, st) = undisturbed(progress, ours, || {
                        let t = Instant::now();
                        std::hint::black_box(chase_dependent_work(chain, start, n, iters));
                        t.elapsed().as_nanos() as u64
                    });
                    disturbed += d;
                    still |= st;
                    // The same loop with its load hitting L1, right
                    // after: the CPU's side of an iteration at this
                    // moment, beside these contenders (a guest's CPU
                    // may run faster or slower from round to round).
                    let cached = [0usize; 8];
                    let n_alone = (n / 2).max(1000);
                    let (a, _, d, st) = undisturbed(progress, ours, || {
                        let t = Instant::now();
                        std::hint::black_box(chase_dependent_work(&cached, 0, n_alone, iters));
                        t.elapsed().as_nanos() as u64
                    });
                    disturbed += d;
                    still |= st;
                    Some((
                        (n * line) as f64 * 1e9 / w as f64,
                        a as f64 / n_alone as f64,
                    ))
                }
                None => None,
            };
            Ok(MasterRound {
                latency_ns: wall as f64 / loads as f64,
                throughput,
                contender_bytes_per_s: cbps,
                disturbed,
                still_disturbed: still,
            })
        });
        let result = master
            .join()
            .map_err(|_| "the master thread panicked".to_string());
        stop.store(true, Ordering::Relaxed);
        for h in handles {
            match h.join() {
                Ok(Ok(())) => {}
                Ok(Err(e)) => return Err(CalibrateError::Thread(e)),
                Err(_) => return Err(CalibrateError::Thread("a contender thread panicked".into())),
            }
        }
        let got = result.and_then(|r| r).map_err(CalibrateError::Thread)?;
        into.latency_ns.push(got.latency_ns);
        if let Some((thr, alone)) = got.throughput {
            into.throughput.push(thr);
            into.work_alone_ns.push(alone);
        }
        into.contender_bytes_per_s.push(got.contender_bytes_per_s);
        into.disturbed_rounds += got.disturbed;
        into.still_disturbed |= got.still_disturbed;
        Ok(())
    })
}

/// CPUs for m contenders of a master on `master_cpu` (node `k`) reading
/// node `i`: one CPU on each of m other nodes (node i first, then by SLIT
/// distance to i); beyond the nodes there are, other CPUs (the master's
/// excepted); beyond the CPUs, CPUs again in turn (they then share).
pub fn contender_cpus(topo: &Topology, master_cpu: u32, k: u32, i: u32, m: usize) -> Vec<u32> {
    let mut nodes: Vec<_> = topo
        .nodes
        .iter()
        .filter(|n| n.id != k && !n.cpus.is_empty())
        .collect();
    nodes.sort_by_key(|n| (n.id != i, topo.distance(i, n.id), n.id));
    let mut cpus: Vec<u32> = nodes.iter().map(|n| n.cpus[0]).take(m).collect();
    let mut others: Vec<(u32, u32)> = topo
        .nodes
        .iter()
        .flat_map(|n| n.cpus.iter().map(move |&c| (topo.distance(i, n.id), c)))
        .filter(|&(_, c)| c != master_cpu)
        .collect();
    others.sort_unstable();
    for &(_, c) in &others {
        if cpus.len() >= m {
            break;
        }
        if !cpus.contains(&c) {
            cpus.push(c);
        }
    }
    let mut j = 0;
    while cpus.len() < m && !others.is_empty() {
        cpus.push(others[j % others.len()].1);
        j += 1;
    }
    cpus
}

/// Runs the micro-benchmark on every node pair and degree of contention
/// (see the module docs); `say` gets one line per measured point.
///
/// Errors: a machine with one CPU (no contender can run beside the
/// master), node numbers with gaps, buffers that cannot be mapped,
/// threads that cannot be pinned.
pub fn calibrate(
    opts: &CalibrateOptions,
    say: &mut dyn FnMut(&str),
) -> Result<LatencyTable, CalibrateError> {
    let topo = Topology::read();
    let gaps = topo.gaps();
    if !gaps.is_empty() {
        return Err(CalibrateError::Machine(format!(
            "node numbers have gaps (node {gaps:?} missing): the latency table indexes nodes 0..N−1"
        )));
    }
    let n = topo.node_count();
    let cpu_nodes: Vec<u32> = topo
        .nodes
        .iter()
        .filter(|x| !x.cpus.is_empty())
        .map(|x| x.id)
        .collect();
    let all_cpus: usize = topo.nodes.iter().map(|x| x.cpus.len()).sum();
    if cpu_nodes.is_empty() || all_cpus < 2 {
        return Err(CalibrateError::Machine(format!(
            "this machine has {all_cpus} online CPU(s): the contenders need CPUs beside the master's"
        )));
    }
    let line = line_bytes();
    let stride = (line as usize / std::mem::size_of::<usize>()).max(1);
    let bytes = opts.buffer_bytes.max(line * 1024);
    let max_c = opts
        .max_contenders
        .unwrap_or_else(|| (n as u32).max((all_cpus as u32 - 1).min(8)))
        .max(n as u32);
    let mut notes = vec![format!("topology from {}", topo.source)];
    if n == 1 {
        notes.push(
            "This machine has one NUMA node: the contenders run on the other CPUs of that node, and every \
             remote figure is null (there is no remote memory)."
                .into(),
        );
    }
    let mut points: Vec<CurvePoint> = Vec::new();
    let mut lat = vec![vec![vec![f64::NAN; n + 1]; n]; n]; // [k][i][m]
    let mut restart = vec![f64::NAN; n];
    let mut disturbed_rounds = 0;
    let mut disturbed_points = 0;
    let mut all_bound = true;
    let mut work_ns_used = f64::NAN;
    let mut loads_used = 0u64;
    let mut huge = true;
    let seed = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(1, |d| d.as_nanos() as u64);
    for mem in &topo.nodes {
        if !mem.memory {
            notes.push(format!(
                "node {} has no memory: nothing to read there",
                mem.id
            ));
            continue;
        }
        let i = mem.id;
        say(&format!("node {i}: preparing {} MiB buffers", bytes >> 20));
        let mut chain_buf = NodeBuffer::new(bytes, i)?;
        let start = build_chain(chain_buf.words(), stride, seed ^ u64::from(i));
        huge &= chain_buf.collapse();
        let bound = chain_buf.bound && chain_buf.on_node(i);
        all_bound &= bound;
        let mut contender_bufs = Vec::new();
        for _ in 0..max_c {
            let mut b = NodeBuffer::new(bytes, i)?;
            b.words().fill(1);
            huge &= b.collapse();
            contender_bufs.push(b);
        }
        let chain = chain_buf.words_ref();
        for &k in &cpu_nodes {
            let master_cpu = topo.node(k).map_or(0, |x| x.cpus[0]);
            let local = k == i;
            // Loads per round, and the seed's num_iters (dependent work
            // lasting about one uncontended latency), from a probe on the
            // master's CPU.
            let per_load = probe_latency(chain, start, master_cpu)?;
            let loads = ((opts.round.as_nanos() as f64 / per_load.max(1.0)) as u64).max(10_000);
            let work_iters = if local {
                let (iters, ns) = dependent_work_iters(master_cpu, per_load)?;
                work_ns_used = ns;
                Some(iters)
            } else {
                None
            };
            let m_max = if local { max_c as usize } else { n };
            let configs: Vec<Vec<u32>> = (0..=m_max)
                .map(|m| contender_cpus(&topo, master_cpu, k, i, m))
                .collect();
            let mut measured: Vec<Measured> = configs.iter().map(|_| Measured::default()).collect();
            // Rounds outermost, contention degrees inside: a drift of the
            // machine (other programs, page collapsing) meets every degree
            // alike instead of biasing one of them.
            for r in 0..opts.rounds {
                for (cpus, into) in configs.iter().zip(measured.iter_mut()) {
                    round(
                        chain,
                        start,
                        master_cpu,
                        cpus,
                        &contender_bufs,
                        loads,
                        work_iters,
                        line,
                        into,
                    )?;
                }
                say(&format!(
                    "memory node {i}, master on node {k} (CPU {master_cpu}): round {} of {} done",
                    r + 1,
                    opts.rounds
                ));
            }
            loads_used = loads_used.max(loads);
            let uncontended_range = range(&measured[0].latency_ns);
            let mut resolved_any = false;
            let mut largest_stream = 0.0f64;
            for (m, (cpus, got)) in configs.iter().zip(measured).enumerate() {
                let latency = median(got.latency_ns.clone());
                let latency_range = range(&got.latency_ns);
                let resolved = match (m, uncontended_range, latency_range) {
                    (0, _, _) => None,
                    (_, Some(u), Some(c)) => Some(contention_resolved(u, c)),
                    _ => None,
                };
                resolved_any |= resolved == Some(true);
                let throughput =
                    (!got.throughput.is_empty()).then(|| median(got.throughput.clone()));
                let work_alone =
                    (!got.work_alone_ns.is_empty()).then(|| median(got.work_alone_ns.clone()));
                disturbed_rounds += got.disturbed_rounds;
                disturbed_points += u32::from(got.still_disturbed);
                if m <= n {
                    lat[k as usize][i as usize][m] = latency;
                }
                points.push(CurvePoint {
                    master_node: k,
                    master_cpu,
                    memory_node: i,
                    contenders: cpus.len() as u32,
                    contender_cpus: cpus.clone(),
                    latency_ns: latency,
                    back_to_back_bytes_per_s: line as f64 * 1e9 / latency,
                    throughput_bytes_per_s: throughput,
                    contender_bytes_per_s: median(got.contender_bytes_per_s.clone()),
                    latency_range_ns: latency_range,
                    throughput_range_bytes_per_s: range(&got.throughput),
                    work_alone_ns: work_alone,
                    contention_resolved: resolved,
                });
                largest_stream = largest_stream.max(median(got.contender_bytes_per_s));
                say(&format!(
                    "memory node {i}, master on node {k} (CPU {master_cpu}), {m} contender(s){}: {latency:.1} ns per load{}",
                    if cpus.is_empty() { String::new() } else { format!(" on CPU {cpus:?}") },
                    throughput.map_or(String::new(), |t| format!(", {:.1} MB/s with work", t / 1e6))
                ));
            }
            let curve = &points[points.len() - configs.len()..];
            if let Some(note) = faster_with_contenders_note(curve, line) {
                notes.push(note);
            }
            let alone = curve.iter().filter_map(|p| p.work_alone_ns);
            let work_alone_lo = alone.clone().fold(f64::INFINITY, f64::min);
            let work_alone_hi = alone.fold(0.0, f64::max);
            if work_alone_hi > WORK_DRIFT * work_alone_lo {
                notes.push(format!(
                    "memory node {i}, master on node {k}: the CPU's speed changed during the calibration: the \
                     throughput loop with its load cached took {work_alone_lo:.1}–{work_alone_hi:.1} ns per \
                     iteration at different contention degrees, so its throughputs with work mix memory \
                     contention with CPU speed (a throttled, boosted or shared core; the latencies, one \
                     dependent load after another, hardly depend on it); subtract `work_alone_ns` from the \
                     loop's time per iteration to compare the memory's share"
                ));
            }
            if m_max > 0 && !resolved_any {
                let [lo, hi] = uncontended_range.unwrap_or([f64::NAN; 2]);
                notes.push(format!(
                    "memory node {i}, master on node {k}: no measurable memory contention: with up to {m_max} \
                     contender(s) streaming up to {:.1} GB/s the master's latency per load stayed within the \
                     spread of its uncontended rounds ({lo:.1}–{hi:.1} ns) in at least one round; the model \
                     will predict little contention for this pair",
                    largest_stream / 1e9
                ));
            }
            if local && opts.restart {
                restart[i as usize] = restart_latency(
                    chain,
                    start,
                    master_cpu,
                    lat[k as usize][i as usize][0],
                    loads,
                )?;
                say(&format!(
                    "memory node {i}: restart latency {:.1} ns",
                    restart[i as usize]
                ));
            }
        }
    }
    if !all_bound {
        notes.push(
            "Some buffers could not be bound to their node with mbind(2) (or did not land there): their \
             latencies are of wherever the kernel placed them."
                .into(),
        );
    }
    notes.push(
        "The restart latency (the window of Eq. 2) is the most independent work that overlaps one \
         dependent load without lengthening the loop; on out-of-order cores the reorder buffer bounds it."
            .into(),
    );
    notes.push(if huge {
        "The buffers were made of huge pages (MADV_HUGEPAGE, MADV_COLLAPSE), so page walks weigh little in the latencies.".into()
    } else {
        "Huge pages were asked for (MADV_HUGEPAGE) but could not be made at once (MADV_COLLAPSE failed: an older kernel, \
         or no free huge pages): the latencies include page walks, and pages collapsing during the run may lower later rounds."
            .into()
    });
    // Nodes without CPUs: their "local" figures come from the nearest node
    // with CPUs; as a source they issue no accesses, so their rows mirror
    // the other direction.
    for mem in topo.nodes.iter().filter(|x| x.cpus.is_empty() && x.memory) {
        let i = mem.id as usize;
        if let Some(&near) = cpu_nodes
            .iter()
            .min_by_key(|&&c| (topo.distance(mem.id, c), c))
        {
            lat[i][i] = lat[near as usize][i].clone();
            notes.push(format!(
                "node {i} has no CPUs (memory only): its local latencies are those measured from node {near}, \
                 the nearest node with CPUs, and its latencies as a source mirror the other direction"
            ));
            for j in (0..n).filter(|&j| j != i) {
                let mirrored = lat[j][i].clone();
                lat[i][j] = mirrored;
            }
        }
    }
    for mem in topo.nodes.iter().filter(|x| !x.memory) {
        let i = mem.id as usize;
        notes.push(format!(
            "node {i} has no memory: its latencies as a target are copied from the nearest node with memory"
        ));
        if let Some(near) = topo
            .nodes
            .iter()
            .filter(|x| x.memory)
            .min_by_key(|x| (topo.distance(mem.id, x.id), x.id))
        {
            let near = near.id as usize;
            for row in lat.iter_mut() {
                row[i] = row[near].clone();
            }
            restart[i] = restart[near];
        }
    }
    let (host, kernel) = uname();
    let table = LatencyTable {
        nodes: n,
        l_nocont_ns: (0..n).map(|i| lat[i][i][0]).collect(),
        l_cont_ns: (0..n)
            .map(|i| (1..=n).map(|m| lat[i][i][m]).collect())
            .collect(),
        r_nocont_ns: (0..n)
            .map(|k| (0..n).map(|i| (k != i).then_some(lat[k][i][0])).collect())
            .collect(),
        r_cont_ns: (0..n)
            .map(|k| {
                (0..n)
                    .map(|i| (k != i).then(|| (1..=n).map(|m| lat[k][i][m]).collect()))
                    .collect()
            })
            .collect(),
        restart_ns: (opts.restart && restart.iter().all(|r| r.is_finite())).then_some(restart),
        calibration: Some(Calibration {
            tool_version: env!("CARGO_PKG_VERSION").to_string(),
            host,
            cpu_model: CpuInfo::read().model,
            kernel,
            date_utc: contend_trace::meta::format_utc(SystemTime::now()),
            node_cpus: (0..n as u32)
                .map(|id| topo.node(id).map(|x| x.cpus.clone()).unwrap_or_default())
                .collect(),
            buffer_bytes: bytes,
            loads_per_round: loads_used,
            rounds: opts.rounds,
            memory_bound: all_bound,
            line_bytes: line,
            work_ns: work_ns_used,
            points,
            disturbed_rounds,
            disturbed_points,
            notes,
        }),
    };
    table.check().map_err(|e| {
        CalibrateError::Machine(format!(
            "the measured table is inconsistent ({e}); was a point not measured?"
        ))
    })?;
    Ok(table)
}

/// The note for a throughput curve (`curve[0]` without contenders, then
/// m = 1, 2, …) on which contention resolvably lengthened the loads back
/// to back, yet the memory's share of the throughput loop
/// ([`CurvePoint::memory_share_ns`]) fell below its share without
/// contenders: the loop with work between its loads ran faster beside
/// contenders, which the seed's model (Nikolopoulos, Figure 2) does not
/// foresee. `None` when no point does so.
fn faster_with_contenders_note(curve: &[CurvePoint], line_bytes: u64) -> Option<String> {
    let (first, rest) = curve.split_first()?;
    let alone = first.memory_share_ns(line_bytes)?;
    let (p, share) = rest
        .iter()
        .filter(|p| p.contention_resolved == Some(true) && p.latency_ns > first.latency_ns)
        .filter_map(|p| Some((p, p.memory_share_ns(line_bytes)?)))
        .find(|&(_, share)| share < alone)?;
    Some(format!(
        "memory node {}, master on node {}: with {} contender(s) a load took {:.0} % longer back to back \
         ({:.1} → {:.1} ns), yet the memory's share of an iteration of the throughput loop (its time per \
         iteration less `work_alone_ns`) fell {alone:.1} → {share:.1} ns: this memory answers a load that \
         follows a gap of work more slowly when nothing else keeps it busy (a memory controller or \
         fabric entering a low-power state between loads can do this, as can a hypervisor), so the \
         throughputs with work understate the contenders' effect; the latency tables, measured back to \
         back, are not affected",
        p.memory_node,
        p.master_node,
        p.contenders,
        (p.latency_ns / first.latency_ns - 1.0) * 100.0,
        first.latency_ns,
        p.latency_ns
    ))
}

/// Time per dependent load on `cpu`, ns, from 50 000 loads (after 10 000
/// to warm up).
fn probe_latency(chain: &[usize], start: usize, cpu: u32) -> Result<f64, CalibrateError> {
    std::thread::scope(|s| {
        s.spawn(|| -> Result<f64, String> {
            pin(cpu)?;
            std::hint::black_box(chase(chain, start, 10_000));
            let t = Instant::now();
            std::hint::black_box(chase(chain, start, 50_000));
            Ok(t.elapsed().as_nanos() as f64 / 50_000.0)
        })
        .join()
        .map_err(|_| CalibrateError::Thread("the probe thread panicked".into()))?
        .map_err(CalibrateError::Thread)
    })
}

/// Iterations of the dependent work loop lasting about `target_ns`, timed
/// alone on `cpu`; with the time they take, ns.
fn dependent_work_iters(cpu: u32, target_ns: f64) -> Result<(u64, f64), CalibrateError> {
    std::thread::scope(|s| {
        s.spawn(|| -> Result<(u64, f64), String> {
            pin(cpu)?;
            // One cached line pointing to itself: every load hits L1.
            let buf = [0usize; 8];
            let n = 200_000u64;
            let mut best = f64::INFINITY;
            for _ in 0..5 {
                let t = Instant::now();
                std::hint::black_box(chase_dependent_work(&buf, 0, n, 16));
                best = best.min(t.elapsed().as_nanos() as f64 / (n * 16) as f64);
            }
            let iters = (target_ns / best).round().max(1.0) as u64;
            Ok((iters, iters as f64 * best))
        })
        .join()
        .map_err(|_| CalibrateError::Thread("the timing thread panicked".into()))?
        .map_err(CalibrateError::Thread)
    })
}

/// Hristea's restart latency: the largest amount of independent work
/// between two dependent loads that leaves the time per load within 5 %
/// of `t0` (the uncontended latency), as a duration (the work timed alone).
fn restart_latency(
    chain: &[usize],
    start: usize,
    cpu: u32,
    t0: f64,
    loads: u64,
) -> Result<f64, CalibrateError> {
    std::thread::scope(|s| {
        s.spawn(|| -> Result<f64, String> {
            pin(cpu)?;
            let cached = [0usize; 8];
            let n = 100_000u64;
            let mut unit = f64::INFINITY;
            for _ in 0..5 {
                let t = Instant::now();
                std::hint::black_box(chase_independent_work(&cached, 0, n, 16));
                unit = unit.min(t.elapsed().as_nanos() as f64 / (n * 16) as f64);
            }
            let probe_loads = (loads / 4).max(5000);
            let per_load = |w: u64| -> f64 {
                // Median of 3 probes, each checked for having had the CPU.
                let mut v = Vec::new();
                let mut tries = 0;
                while v.len() < 3 && tries < 9 {
                    tries += 1;
                    let c0 = thread_cpu_ns();
                    let t = Instant::now();
                    std::hint::black_box(chase_independent_work(chain, start, probe_loads, w));
                    let wall = t.elapsed().as_nanos() as f64;
                    // CPU time per load, as t0 is.
                    let cpu = (thread_cpu_ns() - c0) as f64;
                    if cpu >= 0.9 * wall || tries >= 7 {
                        v.push(cpu.min(wall) / probe_loads as f64);
                    }
                }
                median(v)
            };
            let mut lo = 0u64;
            let mut hi = ((4.0 * t0 / unit).ceil() as u64).max(2);
            if per_load(hi) <= 1.05 * t0 {
                return Ok(hi as f64 * unit);
            }
            while hi - lo > 1 && (hi - lo) as f64 * unit > 0.01 * t0 {
                let mid = (lo + hi) / 2;
                if per_load(mid) <= 1.05 * t0 {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
            // Not even one unit of work overlaps: the window is one unit
            // (a positive window keeps Eq. 2 defined).
            Ok(lo.max(1) as f64 * unit)
        })
        .join()
        .map_err(|_| CalibrateError::Thread("the restart-latency thread panicked".into()))?
        .map_err(CalibrateError::Thread)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A throughput-curve point: `latency` ns back to back, `mb_s` with
    /// work (10⁶ bytes/s), `alone` ns per iteration with the load cached.
    fn point(m: u32, latency: f64, mb_s: f64, alone: f64, resolved: Option<bool>) -> CurvePoint {
        CurvePoint {
            contenders: m,
            latency_ns: latency,
            throughput_bytes_per_s: Some(mb_s * 1e6),
            work_alone_ns: Some(alone),
            contention_resolved: resolved,
            ..CurvePoint::default()
        }
    }

    /// Worked by hand with 64-byte lines: 200 MB/s is 320 ns per
    /// iteration, so with 130 ns of work alone the memory's share is 190
    /// ns; 256 MB/s is 250 ns, share 120 ns (or 150 ns with 100 ns alone).
    #[test]
    fn the_note_on_a_loop_faster_beside_contenders() {
        let base = point(0, 150.0, 200.0, 130.0, None);
        assert_eq!(base.memory_share_ns(64), Some(190.0));
        // Loads 20 % longer, the loop faster: share 190 → 120 ns.
        let faster = point(1, 180.0, 256.0, 130.0, Some(true));
        let note = faster_with_contenders_note(&[base.clone(), faster.clone()], 64).unwrap();
        assert!(
            note.contains("with 1 contender(s) a load took 20 % longer"),
            "{note}"
        );
        assert!(note.contains("fell 190.0 → 120.0 ns"), "{note}");
        // Not resolved, or not longer: no note.
        let unresolved = point(1, 180.0, 256.0, 130.0, Some(false));
        assert_eq!(
            faster_with_contenders_note(&[base.clone(), unresolved], 64),
            None
        );
        let shorter = point(1, 140.0, 256.0, 130.0, Some(true));
        assert_eq!(
            faster_with_contenders_note(&[base.clone(), shorter], 64),
            None
        );
        // The loop slower (320 → 400 ns per iteration, 160 MB/s): no note.
        let slower = point(1, 180.0, 160.0, 130.0, Some(true));
        assert_eq!(
            faster_with_contenders_note(&[base.clone(), slower.clone()], 64),
            None
        );
        // The throughput rose only because the CPU ran the work faster
        // (130 → 60 ns alone): share 190 → 190 ns, not smaller, no note.
        let cpu_faster = point(1, 180.0, 256.0, 60.0, Some(true));
        assert_eq!(cpu_faster.memory_share_ns(64), Some(190.0));
        assert_eq!(
            faster_with_contenders_note(&[base.clone(), cpu_faster], 64),
            None
        );
        // The second degree gives the note when the first does not.
        let two = point(2, 200.0, 256.0, 100.0, Some(true));
        let note = faster_with_contenders_note(&[base.clone(), slower, two], 64).unwrap();
        assert!(
            note.contains("with 2 contender(s)") && note.contains("→ 150.0 ns"),
            "{note}"
        );
        // Without the work alone (an older file): no share, no note.
        let old = CurvePoint {
            work_alone_ns: None,
            ..faster
        };
        assert_eq!(old.memory_share_ns(64), None);
        assert_eq!(faster_with_contenders_note(&[base, old], 64), None);
    }

    #[test]
    fn the_chain_is_one_cycle_over_every_line() {
        let stride = 8;
        let mut buf = vec![usize::MAX; 1000 * stride];
        let start = build_chain(&mut buf, stride, 42);
        let mut seen = vec![false; 1000];
        let mut p = start;
        for _ in 0..1000 {
            assert!(!seen[p / stride], "line {} visited twice", p / stride);
            seen[p / stride] = true;
            p = buf[p];
        }
        assert_eq!(p, start);
        assert!(seen.iter().all(|s| *s));
    }

    #[test]
    fn contenders_prefer_other_nodes_then_other_cpus() {
        let t = Topology {
            nodes: vec![
                super::super::topology::Node {
                    id: 0,
                    cpus: vec![0, 1],
                    memory: true,
                    distance: vec![10, 20, 30],
                },
                super::super::topology::Node {
                    id: 1,
                    cpus: vec![2, 3],
                    memory: true,
                    distance: vec![20, 10, 20],
                },
                super::super::topology::Node {
                    id: 2,
                    cpus: vec![4, 5],
                    memory: true,
                    distance: vec![30, 20, 10],
                },
            ],
            source: "test".into(),
        };
        // Master on node 0 reading node 2: node 2 first, then node 1.
        assert_eq!(contender_cpus(&t, 0, 0, 2, 2), vec![4, 2]);
        // Local on node 0, three contenders: nodes 1 and 2, then the
        // nearest other CPU (CPU 1 of node 0).
        assert_eq!(contender_cpus(&t, 0, 0, 0, 3), vec![2, 4, 1]);
        // One node, two CPUs: the other CPU, then it again (shared).
        let one = Topology {
            nodes: vec![super::super::topology::Node {
                id: 0,
                cpus: vec![0, 1],
                memory: true,
                distance: vec![10],
            }],
            source: "test".into(),
        };
        assert_eq!(contender_cpus(&one, 0, 0, 0, 1), vec![1]);
        assert_eq!(contender_cpus(&one, 0, 0, 0, 2), vec![1, 1]);
    }
}
