//! The memory contention generator (MCG): `contend stress memory`.
//!
//! Venter 2016, Section 4.1.4 ("Deliberately Induced Contention"): a
//! program independent of the measured one streams data to and from main
//! memory, bypassing the caches, so that it adds contention for the memory
//! controller and memory bandwidth (and row-buffer misses) but takes no
//! space in the last-level cache and no CPU the measured program uses. The
//! thesis used a modified STREAM benchmark with non-temporal MMX/SSE
//! instructions; Tables 4.6 and 4.7 compare work cycles and service time
//! with and without it.
//!
//! This generator runs `K` threads inside the calling process, each pinned
//! to one CPU. Each thread owns a buffer (default four times the
//! last-level cache, see [`default_buffer_bytes`]), touched once before the
//! timing starts, and copies one half into the other and back, over and
//! over, with
//!
//! - AVX2 non-temporal loads (`vmovntdqa`, `_mm256_stream_load_si256`) and
//!   AVX non-temporal stores (`vmovntdq`, `_mm256_stream_si256`) where the
//!   CPU has AVX2;
//! - SSE4.1 non-temporal loads (`movntdqa`, `_mm_stream_load_si128`) and
//!   SSE2 non-temporal stores (`movntdq`, `_mm_stream_si128`) where it has
//!   SSE4.1;
//! - plain loads and SSE2 non-temporal stores on older x86-64;
//! - plain loads and stores elsewhere (other architectures), which do take
//!   cache space; the report says so in [`StressReport::notes`].
//!
//! The instruction set is chosen at run time (`is_x86_feature_detected!`).
//! On ordinary write-back memory a non-temporal *load* is a hint that most
//! CPUs treat as a plain load (it bypasses the caches only on
//! write-combining memory), which is why the buffer is much larger than the
//! last-level cache: every load then misses and goes to memory, and the
//! non-temporal stores write around the cache.
//!
//! The generator counts the bytes it read and wrote per thread (updated
//! every 256 KiB copied) and reports bandwidth = (bytes read + bytes
//! written) / elapsed time, per thread and in total ([`StressReport`]).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Barrier};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::cpus::{affinity, format_cpu_list, online_cpu_list};

/// Bytes copied between two looks at the stop flag and two updates of the
/// byte counters.
const CHUNK: usize = 256 * 1024;

/// Smallest per-thread buffer, bytes (also the default floor).
pub const MIN_BUFFER_BYTES: u64 = 2 * CHUNK as u64;

/// What to generate. [`StressOptions::default`] is one thread, not pinned
/// to a chosen CPU list, with the default buffer.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StressOptions {
    /// Number of generator threads K (at least 1).
    pub threads: u32,
    /// CPUs to pin the threads to: thread i runs on `cpus[i % len]`.
    /// `None` = the CPUs allowed to the process, in ascending order. Every
    /// CPU must be online and allowed.
    pub cpus: Option<Vec<u32>>,
    /// Buffer per thread, bytes (at least [`MIN_BUFFER_BYTES`]); `None` =
    /// [`default_buffer_bytes`].
    pub buffer_bytes: Option<u64>,
}

/// Which instructions the generator streams with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StreamMethod {
    /// AVX2 non-temporal 32-byte loads and stores.
    Avx2NonTemporal,
    /// SSE4.1 non-temporal 16-byte loads, SSE2 non-temporal stores.
    Sse41NonTemporal,
    /// Plain loads, SSE2 non-temporal 16-byte stores.
    Sse2NonTemporalStores,
    /// Plain loads and stores (no non-temporal instructions available).
    Plain,
}

impl StreamMethod {
    /// The best method this CPU supports (runtime detection).
    pub fn detect() -> StreamMethod {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx2") {
                return StreamMethod::Avx2NonTemporal;
            }
            if std::arch::is_x86_feature_detected!("sse4.1") {
                return StreamMethod::Sse41NonTemporal;
            }
            StreamMethod::Sse2NonTemporalStores
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            StreamMethod::Plain
        }
    }

    /// A short description for reports.
    pub fn describe(self) -> &'static str {
        match self {
            StreamMethod::Avx2NonTemporal => {
                "AVX2 non-temporal loads and stores (vmovntdqa/vmovntdq, 32 bytes)"
            }
            StreamMethod::Sse41NonTemporal => {
                "SSE4.1 non-temporal loads and SSE2 non-temporal stores (movntdqa/movntdq, 16 bytes)"
            }
            StreamMethod::Sse2NonTemporalStores => {
                "plain loads and SSE2 non-temporal stores (movntdq, 16 bytes)"
            }
            StreamMethod::Plain => "plain loads and stores",
        }
    }
}

/// Bandwidth of one generator thread.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ThreadBandwidth {
    /// The CPU the thread was pinned to.
    pub cpu: u32,
    /// Bytes it read from memory.
    pub bytes_read: u64,
    /// Bytes it wrote to memory.
    pub bytes_written: u64,
    /// Its streaming time, s.
    pub elapsed_s: f64,
    /// (bytes read + bytes written) / elapsed time, bytes/s.
    pub bandwidth_bytes_per_s: f64,
}

/// What a generator run produced ([`MemoryStress::stop`]). JSON of
/// `contend stress memory --format json`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StressReport {
    /// The instructions used.
    pub method: StreamMethod,
    /// [`StreamMethod::describe`] of `method`.
    pub method_description: String,
    /// Buffer per thread, bytes.
    pub buffer_bytes_per_thread: u64,
    /// Last-level cache size, bytes, where sysfs tells it.
    pub llc_bytes: Option<u64>,
    /// Time from the common start until the stop, s.
    pub elapsed_s: f64,
    /// Bytes read by all threads.
    pub bytes_read: u64,
    /// Bytes written by all threads.
    pub bytes_written: u64,
    /// (bytes read + bytes written) of all threads / `elapsed_s`, bytes/s.
    pub bandwidth_bytes_per_s: f64,
    /// Per thread, in thread order.
    pub threads: Vec<ThreadBandwidth>,
    /// Things the user should know (CPUs shared by several threads, no
    /// non-temporal instructions), one sentence each.
    pub notes: Vec<String>,
}

/// Errors starting the generator; nothing keeps running after one.
#[derive(Debug, thiserror::Error)]
pub enum StressError {
    /// `threads` is 0.
    #[error("the memory contention generator needs at least one thread")]
    NoThreads,
    /// The buffer is smaller than [`MIN_BUFFER_BYTES`].
    #[error("buffer of {bytes} bytes per thread is too small (at least {MIN_BUFFER_BYTES})")]
    BufferTooSmall {
        /// The size asked for.
        bytes: u64,
    },
    /// A CPU of the list is not online or not allowed to this process.
    #[error("CPU list {cpus}: {problem}")]
    InvalidCpus {
        /// The list, in `0-1,4` form.
        cpus: String,
        /// What is wrong with it.
        problem: String,
    },
    /// A thread could not be started, pinned or given its buffer.
    #[error("generator thread {index} (CPU {cpu}): {problem}")]
    Thread {
        /// Thread index.
        index: u32,
        /// Its CPU.
        cpu: u32,
        /// What failed.
        problem: ThreadSetupError,
    },
}

/// What failed while starting one generator thread ([`StressError::Thread`]).
///
/// The underlying error is part of the message (and not also a
/// [`std::error::Error::source`], so a chain of errors does not repeat it).
#[derive(Debug, thiserror::Error)]
pub enum ThreadSetupError {
    /// The thread could not be created.
    #[error("cannot start a thread: {0}")]
    Spawn(std::io::Error),
    /// `sched_setaffinity` refused the CPU.
    #[error("cannot pin to CPU {cpu}: {error}")]
    Pin {
        /// The CPU.
        cpu: u32,
        /// The error of `sched_setaffinity`.
        error: std::io::Error,
    },
    /// The buffer size does not fit in the address space.
    #[error("buffer too large")]
    BufferTooLarge,
    /// No allocation layout has the buffer's size.
    #[error("{0}")]
    Layout(std::alloc::LayoutError),
    /// The allocator returned no memory.
    #[error("cannot allocate a buffer of {len} bytes")]
    Alloc {
        /// Bytes asked for.
        len: usize,
    },
}

/// Size of the last-level (highest-level unified or data) cache of CPU 0,
/// bytes, from `/sys/devices/system/cpu/cpu0/cache/index*/`; `None` when
/// sysfs does not tell.
pub fn last_level_cache_bytes() -> Option<u64> {
    let base = std::path::Path::new("/sys/devices/system/cpu/cpu0/cache");
    let mut best: Option<(u32, u64)> = None;
    for entry in std::fs::read_dir(base).ok()?.flatten() {
        let p = entry.path();
        if !p
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("index"))
        {
            continue;
        }
        let read = |f: &str| std::fs::read_to_string(p.join(f)).ok();
        if read("type").is_some_and(|t| t.trim() == "Instruction") {
            continue;
        }
        let Some(level) = read("level").and_then(|l| l.trim().parse::<u32>().ok()) else {
            continue;
        };
        let Some(size) = read("size").and_then(|s| parse_cache_size(s.trim())) else {
            continue;
        };
        if best.is_none_or(|(l, _)| level > l) {
            best = Some((level, size));
        }
    }
    best.map(|(_, s)| s)
}

/// `48K`, `2048K`, `32M` → bytes.
fn parse_cache_size(s: &str) -> Option<u64> {
    let (num, mult) = match s.as_bytes().last()? {
        b'K' => (&s[..s.len() - 1], 1024),
        b'M' => (&s[..s.len() - 1], 1024 * 1024),
        b'G' => (&s[..s.len() - 1], 1024 * 1024 * 1024),
        _ => (s, 1),
    };
    num.parse::<u64>().ok().map(|n| n * mult)
}

/// `MemAvailable` of `/proc/meminfo`, bytes.
fn mem_available_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Default buffer per thread for `threads` generator threads, bytes: four
/// times the last-level cache (64 MiB when unknown), at least 64 MiB, at
/// most 512 MiB, and at most a quarter of the available memory shared by
/// all threads; rounded down to a whole number of 256 KiB chunks times two.
///
/// The 512 MiB cap keeps start-up (touching the buffer) short on machines
/// whose reported last-level cache is huge (a VM may report the host's);
/// even then every pass through the buffer evicts what the previous pass
/// loaded from any cache of that size share.
pub fn default_buffer_bytes(threads: u32) -> u64 {
    const MIB: u64 = 1024 * 1024;
    let llc = last_level_cache_bytes().unwrap_or(16 * MIB);
    let mut b = (4 * llc).clamp(64 * MIB, 512 * MIB);
    if let Some(avail) = mem_available_bytes() {
        b = b.min(avail / 4 / u64::from(threads.max(1)));
    }
    round_buffer(b.max(MIN_BUFFER_BYTES))
}

fn round_buffer(b: u64) -> u64 {
    let unit = 2 * CHUNK as u64;
    (b / unit).max(1) * unit
}

/// A running generator; [`MemoryStress::stop`] ends it and reports.
/// Dropping it without `stop` stops the threads too.
pub struct MemoryStress {
    stop: Arc<AtomicBool>,
    /// Duty cycle in (0, 1] as `f64` bits ([`MemoryStress::set_intensity`]).
    intensity: Arc<AtomicU64>,
    handles: Vec<JoinHandle<()>>,
    counters: Arc<Vec<ThreadCounters>>,
    cpus: Vec<u32>,
    started: Instant,
    method: StreamMethod,
    buffer_bytes: u64,
    notes: Vec<String>,
}

#[derive(Default)]
struct ThreadCounters {
    bytes: AtomicU64,
    /// Nanoseconds from the common start to the thread's last counter
    /// update.
    elapsed_ns: AtomicU64,
}

impl MemoryStress {
    /// Starts `opts.threads` pinned threads, lets each allocate and touch
    /// its buffer, and returns once all of them stream (the timing starts
    /// then, so buffer set-up is not counted).
    ///
    /// Errors: see [`StressError`]; on error every thread started has been
    /// stopped again.
    pub fn start(opts: &StressOptions) -> Result<MemoryStress, StressError> {
        if opts.threads == 0 {
            return Err(StressError::NoThreads);
        }
        let buffer_bytes = match opts.buffer_bytes {
            Some(b) if b < MIN_BUFFER_BYTES => {
                return Err(StressError::BufferTooSmall { bytes: b })
            }
            Some(b) => round_buffer(b),
            None => default_buffer_bytes(opts.threads),
        };
        let allowed = allowed_cpus();
        let cpus = match &opts.cpus {
            Some(list) => {
                check_cpus(list, &allowed)?;
                list.clone()
            }
            None => allowed.clone(),
        };
        let mut notes = Vec::new();
        let method = StreamMethod::detect();
        if method == StreamMethod::Plain {
            notes.push(
                "this CPU has no non-temporal load/store instructions contend knows: the \
                 generator uses plain loads and stores, which also take cache space"
                    .to_string(),
            );
        }
        let assigned: Vec<u32> = (0..opts.threads as usize)
            .map(|i| cpus[i % cpus.len()])
            .collect();
        if opts.threads as usize > cpus.len() {
            notes.push(format!(
                "{} generator threads on {} CPU(s) ({}): threads share CPUs",
                opts.threads,
                cpus.len(),
                format_cpu_list(&cpus)
            ));
        }
        let stop = Arc::new(AtomicBool::new(false));
        let intensity = Arc::new(AtomicU64::new(1f64.to_bits()));
        let counters: Arc<Vec<ThreadCounters>> = Arc::new(
            (0..opts.threads)
                .map(|_| ThreadCounters::default())
                .collect(),
        );
        let barrier = Arc::new(Barrier::new(opts.threads as usize + 1));
        let start_at: Arc<std::sync::OnceLock<Instant>> = Arc::new(std::sync::OnceLock::new());
        let (ready_tx, ready_rx) = mpsc::channel::<(u32, Result<(), ThreadSetupError>)>();
        let mut handles = Vec::new();
        let mut first_error = None;
        for (i, &cpu) in assigned.iter().enumerate() {
            let intensity = intensity.clone();
            let (stop, counters, barrier, start_at, tx) = (
                stop.clone(),
                counters.clone(),
                barrier.clone(),
                start_at.clone(),
                ready_tx.clone(),
            );
            let spawned = std::thread::Builder::new()
                .name(format!("contend-mcg-{i}"))
                .spawn(move || {
                    let buf = match prepare_thread(cpu, buffer_bytes) {
                        Ok(b) => {
                            let _ = tx.send((i as u32, Ok(())));
                            b
                        }
                        Err(e) => {
                            let _ = tx.send((i as u32, Err(e)));
                            barrier.wait();
                            return;
                        }
                    };
                    barrier.wait();
                    if stop.load(Ordering::Acquire) {
                        return;
                    }
                    let start = *start_at.get_or_init(Instant::now);
                    stream(buf, method, &stop, &counters[i], start, &intensity);
                });
            match spawned {
                Ok(h) => handles.push(h),
                Err(e) => {
                    first_error = Some(StressError::Thread {
                        index: i as u32,
                        cpu,
                        problem: ThreadSetupError::Spawn(e),
                    });
                    break;
                }
            }
        }
        drop(ready_tx);
        for _ in 0..handles.len() {
            match ready_rx.recv() {
                Ok((_, Ok(()))) => {}
                Ok((index, Err(problem))) => {
                    first_error.get_or_insert(StressError::Thread {
                        index,
                        cpu: assigned[index as usize],
                        problem,
                    });
                }
                Err(_) => break,
            }
        }
        if let Some(e) = first_error {
            stop.store(true, Ordering::Release);
            // Threads that were not started leave the barrier one short:
            // release it with the missing parties.
            for _ in handles.len()..assigned.len() {
                let b = barrier.clone();
                std::thread::spawn(move || {
                    b.wait();
                });
            }
            barrier.wait();
            for h in handles {
                let _ = h.join();
            }
            return Err(e);
        }
        let started = *start_at.get_or_init(Instant::now);
        barrier.wait();
        Ok(MemoryStress {
            stop,
            intensity,
            handles,
            counters,
            cpus: assigned,
            started,
            method,
            buffer_bytes,
            notes,
        })
    }

    /// Bytes read + written by all threads so far.
    pub fn bytes_so_far(&self) -> u64 {
        self.counters
            .iter()
            .map(|c| c.bytes.load(Ordering::Relaxed))
            .sum()
    }

    /// Sets the intensity: the share of time each thread streams, from 0
    /// (paused) to 1 (all the time, the default). Below 1 a thread streams
    /// for `intensity × 2 ms` of every 2 ms period and sleeps for the
    /// rest, so that the bandwidth it generates is about `intensity`
    /// times its full bandwidth (`contend meters calibrate` measures the
    /// probe's latency at several intensities). Values outside [0, 1] are
    /// clamped.
    pub fn set_intensity(&self, intensity: f64) {
        let x = if intensity.is_nan() {
            1.0
        } else {
            intensity.clamp(0.0, 1.0)
        };
        self.intensity.store(x.to_bits(), Ordering::Relaxed);
    }

    /// The CPUs the threads run on, in thread order.
    pub fn cpus(&self) -> &[u32] {
        &self.cpus
    }

    /// Stops the threads (each finishes the 256 KiB chunk it is copying),
    /// joins them and reports the bandwidth.
    pub fn stop(mut self) -> StressReport {
        self.stop.store(true, Ordering::Release);
        for h in self.handles.drain(..) {
            let _ = h.join();
        }
        let elapsed = self.started.elapsed();
        let mut threads = Vec::new();
        let (mut read, mut written) = (0u64, 0u64);
        for (i, c) in self.counters.iter().enumerate() {
            let bytes = c.bytes.load(Ordering::Relaxed);
            // Every chunk is read once and written once.
            let (r, w) = (bytes / 2, bytes - bytes / 2);
            read += r;
            written += w;
            let t = Duration::from_nanos(c.elapsed_ns.load(Ordering::Relaxed)).as_secs_f64();
            threads.push(ThreadBandwidth {
                cpu: self.cpus[i],
                bytes_read: r,
                bytes_written: w,
                elapsed_s: t,
                bandwidth_bytes_per_s: if t > 0.0 { bytes as f64 / t } else { 0.0 },
            });
        }
        let secs = elapsed.as_secs_f64();
        StressReport {
            method: self.method,
            method_description: self.method.describe().to_string(),
            buffer_bytes_per_thread: self.buffer_bytes,
            llc_bytes: last_level_cache_bytes(),
            elapsed_s: secs,
            bytes_read: read,
            bytes_written: written,
            bandwidth_bytes_per_s: if secs > 0.0 {
                (read + written) as f64 / secs
            } else {
                0.0
            },
            threads,
            notes: std::mem::take(&mut self.notes),
        }
    }
}

impl Drop for MemoryStress {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        for h in self.handles.drain(..) {
            let _ = h.join();
        }
    }
}

/// The CPUs this process may run on (online ∩ affinity), ascending.
pub fn allowed_cpus() -> Vec<u32> {
    let online = online_cpu_list();
    match affinity(0) {
        Some(mine) => {
            let v: Vec<u32> = online
                .iter()
                .copied()
                .filter(|c| mine.contains(c))
                .collect();
            if v.is_empty() {
                online
            } else {
                v
            }
        }
        None => online,
    }
}

fn check_cpus(list: &[u32], allowed: &[u32]) -> Result<(), StressError> {
    let err = |problem: String| StressError::InvalidCpus {
        cpus: format_cpu_list(list),
        problem,
    };
    if list.is_empty() {
        return Err(err("no CPU given".into()));
    }
    let bad: Vec<u32> = list
        .iter()
        .copied()
        .filter(|c| !allowed.contains(c))
        .collect();
    if !bad.is_empty() {
        return Err(err(format!(
            "CPU {} not online or not allowed to contend (allowed: {})",
            format_cpu_list(&bad),
            format_cpu_list(allowed)
        )));
    }
    Ok(())
}

/// A 64-byte aligned buffer.
struct Buffer {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the buffer is owned by one thread at a time.
unsafe impl Send for Buffer {}

impl Drop for Buffer {
    fn drop(&mut self) {
        // SAFETY: allocated in `prepare_thread` with this layout.
        unsafe {
            std::alloc::dealloc(
                self.ptr,
                std::alloc::Layout::from_size_align_unchecked(self.len, 64),
            )
        };
    }
}

/// Pins the calling thread to `cpu`, allocates its buffer there and
/// touches every page (first touch places it on the thread's NUMA node).
fn prepare_thread(cpu: u32, bytes: u64) -> Result<Buffer, ThreadSetupError> {
    // SAFETY: a zeroed cpu_set_t is empty; CPU_SET within its size.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu as usize, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(ThreadSetupError::Pin {
                cpu,
                error: std::io::Error::last_os_error(),
            });
        }
    }
    let len = usize::try_from(bytes).map_err(|_| ThreadSetupError::BufferTooLarge)?;
    let layout = std::alloc::Layout::from_size_align(len, 64).map_err(ThreadSetupError::Layout)?;
    // SAFETY: non-zero size layout.
    let ptr = unsafe { std::alloc::alloc(layout) };
    if ptr.is_null() {
        return Err(ThreadSetupError::Alloc { len });
    }
    // SAFETY: fresh allocation of `len` bytes.
    unsafe { std::ptr::write_bytes(ptr, 0x5a, len) };
    Ok(Buffer { ptr, len })
}

/// Duty-cycle period of an intensity below 1.
const PERIOD: Duration = Duration::from_millis(2);

/// Copies half A → half B and back in [`CHUNK`] pieces until `stop`,
/// adding the bytes read + written after every piece; below intensity 1
/// sleeps for the rest of each [`PERIOD`] once it has streamed its share.
fn stream(
    buf: Buffer,
    method: StreamMethod,
    stop: &AtomicBool,
    counters: &ThreadCounters,
    start: Instant,
    intensity: &AtomicU64,
) {
    let half = buf.len / 2;
    let (a, b) = (buf.ptr, buf.ptr.wrapping_add(half));
    let mut total = 0u64;
    let mut forward = true;
    let mut period_start = Instant::now();
    'outer: loop {
        let (src, dst) = if forward { (a, b) } else { (b, a) };
        let mut off = 0;
        while off + CHUNK <= half {
            let x = f64::from_bits(intensity.load(Ordering::Relaxed));
            if x < 1.0 {
                let in_period = period_start.elapsed();
                if in_period >= PERIOD {
                    period_start = Instant::now();
                } else if in_period.as_secs_f64() >= x * PERIOD.as_secs_f64() {
                    std::thread::sleep(PERIOD - in_period);
                    period_start = Instant::now();
                    counters
                        .elapsed_ns
                        .store(start.elapsed().as_nanos() as u64, Ordering::Relaxed);
                    if stop.load(Ordering::Relaxed) {
                        break 'outer;
                    }
                    continue;
                }
            }
            // SAFETY: src and dst are distinct halves of the buffer, and
            // off + CHUNK stays within each; both are 64-byte aligned
            // (CHUNK and half are multiples of 64).
            unsafe { copy_chunk(src.add(off), dst.add(off), CHUNK, method) };
            off += CHUNK;
            total += 2 * CHUNK as u64;
            counters.bytes.store(total, Ordering::Relaxed);
            counters
                .elapsed_ns
                .store(start.elapsed().as_nanos() as u64, Ordering::Relaxed);
            if stop.load(Ordering::Relaxed) {
                break 'outer;
            }
        }
        forward = !forward;
    }
    drop(buf);
}

/// Copies `len` bytes (a multiple of 128) from `src` to `dst` with
/// `method`.
///
/// # Safety
/// `src` and `dst` must be valid, 64-byte aligned and not overlap for
/// `len` bytes; `method` must be supported by the CPU.
unsafe fn copy_chunk(src: *const u8, dst: *mut u8, len: usize, method: StreamMethod) {
    #[cfg(target_arch = "x86_64")]
    {
        match method {
            StreamMethod::Avx2NonTemporal => return nt_avx2(src, dst, len),
            StreamMethod::Sse41NonTemporal => return nt_sse41(src, dst, len),
            StreamMethod::Sse2NonTemporalStores => return nt_sse2(src, dst, len),
            StreamMethod::Plain => {}
        }
    }
    let _ = method;
    std::ptr::copy_nonoverlapping(src, dst, len);
    std::hint::black_box(dst);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn nt_avx2(src: *const u8, dst: *mut u8, len: usize) {
    use std::arch::x86_64::*;
    let mut i = 0;
    while i < len {
        let s = src.add(i) as *const __m256i;
        let d = dst.add(i) as *mut __m256i;
        let v0 = _mm256_stream_load_si256(s);
        let v1 = _mm256_stream_load_si256(s.add(1));
        let v2 = _mm256_stream_load_si256(s.add(2));
        let v3 = _mm256_stream_load_si256(s.add(3));
        _mm256_stream_si256(d, v0);
        _mm256_stream_si256(d.add(1), v1);
        _mm256_stream_si256(d.add(2), v2);
        _mm256_stream_si256(d.add(3), v3);
        i += 128;
    }
    _mm_sfence();
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse4.1")]
unsafe fn nt_sse41(src: *const u8, dst: *mut u8, len: usize) {
    use std::arch::x86_64::*;
    let mut i = 0;
    while i < len {
        let s = src.add(i) as *const __m128i;
        let d = dst.add(i) as *mut __m128i;
        for k in 0..8 {
            let v = _mm_stream_load_si128(s.add(k));
            _mm_stream_si128(d.add(k), v);
        }
        i += 128;
    }
    _mm_sfence();
}

#[cfg(target_arch = "x86_64")]
unsafe fn nt_sse2(src: *const u8, dst: *mut u8, len: usize) {
    use std::arch::x86_64::*;
    let mut i = 0;
    while i < len {
        let s = src.add(i) as *const __m128i;
        let d = dst.add(i) as *mut __m128i;
        for k in 0..8 {
            let v = _mm_load_si128(s.add(k));
            _mm_stream_si128(d.add(k), v);
        }
        i += 128;
    }
    _mm_sfence();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_setup_errors_read_as_before() {
        let e = StressError::Thread {
            index: 1,
            cpu: 2,
            problem: ThreadSetupError::Alloc { len: 64 },
        };
        assert_eq!(
            e.to_string(),
            "generator thread 1 (CPU 2): cannot allocate a buffer of 64 bytes"
        );
        // A CPU that is not online (unless this machine has 1024 of them).
        let r = std::thread::spawn(|| prepare_thread(1023, MIN_BUFFER_BYTES).map(drop))
            .join()
            .unwrap();
        if let Err(e) = r {
            assert!(
                matches!(e, ThreadSetupError::Pin { cpu: 1023, .. }),
                "{e:?}"
            );
            assert!(e.to_string().starts_with("cannot pin to CPU 1023: "), "{e}");
        }
    }

    #[test]
    fn cache_sizes_parse() {
        assert_eq!(parse_cache_size("48K"), Some(48 * 1024));
        assert_eq!(parse_cache_size("32M"), Some(32 << 20));
        assert_eq!(parse_cache_size("1G"), Some(1 << 30));
        assert_eq!(parse_cache_size("512"), Some(512));
        assert_eq!(parse_cache_size("x"), None);
    }

    #[test]
    fn default_buffer_is_bounded_and_whole_chunks() {
        let b = default_buffer_bytes(2);
        assert!((MIN_BUFFER_BYTES..=512 << 20).contains(&b), "{b}");
        assert_eq!(b % (2 * CHUNK as u64), 0);
    }

    /// Every method copies exactly (the data arrives), so the bytes
    /// counted are bytes moved.
    #[test]
    fn every_supported_method_copies_the_data() {
        let mut methods = vec![StreamMethod::Plain];
        #[cfg(target_arch = "x86_64")]
        {
            methods.push(StreamMethod::Sse2NonTemporalStores);
            if std::arch::is_x86_feature_detected!("sse4.1") {
                methods.push(StreamMethod::Sse41NonTemporal);
            }
            if std::arch::is_x86_feature_detected!("avx2") {
                methods.push(StreamMethod::Avx2NonTemporal);
            }
        }
        for m in methods {
            let layout = std::alloc::Layout::from_size_align(2 * 4096, 64).unwrap();
            // SAFETY: test allocation, freed below.
            unsafe {
                let p = std::alloc::alloc(layout);
                for i in 0..4096 {
                    *p.add(i) = (i * 7 % 251) as u8;
                }
                copy_chunk(p, p.add(4096), 4096, m);
                for i in 0..4096 {
                    assert_eq!(*p.add(4096 + i), (i * 7 % 251) as u8, "{m:?} at {i}");
                }
                std::alloc::dealloc(p, layout);
            }
        }
    }

    #[test]
    fn generator_moves_bytes_and_stops() {
        let g = MemoryStress::start(&StressOptions {
            threads: 1,
            cpus: None,
            buffer_bytes: Some(4 << 20),
        })
        .unwrap();
        std::thread::sleep(Duration::from_millis(100));
        let r = g.stop();
        assert!(r.bytes_read > 0 && r.bytes_written > 0, "{r:?}");
        assert!(r.bandwidth_bytes_per_s > 0.0);
        assert_eq!(r.threads.len(), 1);
        assert_eq!(r.bytes_read + r.bytes_written, {
            let t = &r.threads[0];
            t.bytes_read + t.bytes_written
        });
    }

    /// Intensity 0 pauses the threads (no byte moves while paused) and
    /// intensity 1 resumes them.
    #[test]
    fn intensity_zero_pauses_the_generator() {
        let g = MemoryStress::start(&StressOptions {
            threads: 1,
            cpus: None,
            buffer_bytes: Some(4 << 20),
        })
        .unwrap();
        g.set_intensity(0.0);
        std::thread::sleep(Duration::from_millis(20));
        let before = g.bytes_so_far();
        std::thread::sleep(Duration::from_millis(60));
        assert_eq!(g.bytes_so_far(), before, "moved bytes while paused");
        g.set_intensity(1.0);
        let t = Instant::now();
        while g.bytes_so_far() == before && t.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(g.bytes_so_far() > before);
        drop(g.stop());
    }

    #[test]
    fn bad_options_are_named_errors() {
        let e = MemoryStress::start(&StressOptions {
            threads: 0,
            ..Default::default()
        })
        .err()
        .unwrap();
        assert!(e.to_string().contains("at least one thread"));
        let e = MemoryStress::start(&StressOptions {
            threads: 1,
            cpus: Some(vec![1000]),
            buffer_bytes: Some(4 << 20),
        })
        .err()
        .unwrap()
        .to_string();
        assert!(
            e.contains("CPU list 1000") && e.contains("not online"),
            "{e}"
        );
        let e = MemoryStress::start(&StressOptions {
            threads: 1,
            cpus: None,
            buffer_bytes: Some(1000),
        })
        .err()
        .unwrap()
        .to_string();
        assert!(e.contains("too small"), "{e}");
    }
}
