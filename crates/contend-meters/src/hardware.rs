//! Hardware meters per CPU where the machine has a PMU (Fowler et al.
//! 2011, "RCRDaemon and HPM drivers": core meters CPI and miss ratios
//! from `perf_events`): cycles, instructions, last-level cache references
//! and misses counted on each CPU for every task (`perf_event_open` with
//! pid −1 and the CPU), read every `system_interval`:
//!
//! - `cpi` = Δcycles / Δinstructions (cycles per instruction);
//! - `llc_miss_ratio` = Δmisses / Δreferences (fraction).
//!
//! Counts are scaled for multiplexing (`raw × enabled / running`). On a
//! machine without a hardware PMU (a virtual machine without a virtual
//! PMU) the kernel refuses the events and [`HardwareCounters::open`] says
//! why; the meters are then absent and the software meters stand in.
//! Memory-controller (uncore) events are in [`crate::uncore`].

use std::collections::BTreeMap;
use std::os::unix::io::RawFd;

/// `struct perf_event_attr` up to `config1` (64 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
struct Attr {
    kind: u32,
    size: u32,
    config: u64,
    sample_period: u64,
    sample_type: u64,
    read_format: u64,
    flags: u64,
    wakeup_events: u32,
    bp_type: u32,
    config1: u64,
}

/// cycles, instructions, cache references, cache misses
/// (`PERF_COUNT_HW_*` 0–3).
const EVENTS: [u64; 4] = [0, 1, 2, 3];

fn open(config: u64, cpu: u32) -> Result<RawFd, i32> {
    open_event(0, config, cpu) // PERF_TYPE_HARDWARE
}

/// Opens a counting event of PMU type `kind` with `config` on `cpu` for
/// every task (pid −1), reading enabled and running times; errors are the
/// errno.
pub(crate) fn open_event(kind: u32, config: u64, cpu: u32) -> Result<RawFd, i32> {
    let attr = Attr {
        kind,
        size: 64,
        config,
        read_format: 1 | 2, // TOTAL_TIME_ENABLED | TOTAL_TIME_RUNNING
        ..Attr::default()
    };
    // SAFETY: a valid, fully initialised perf_event_attr of its size.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            &attr as *const Attr,
            -1 as libc::pid_t,
            cpu as libc::c_int,
            -1 as libc::c_int,
            1u64 << 3, // PERF_FLAG_FD_CLOEXEC
        )
    };
    if fd < 0 {
        Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(0))
    } else {
        Ok(fd as RawFd)
    }
}

/// A counter's value scaled for multiplexing.
pub(crate) fn read_scaled(fd: RawFd) -> Option<u64> {
    let mut buf = [0u64; 3];
    // SAFETY: reading 24 bytes into a 24-byte buffer.
    let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), 24) };
    if n != 24 {
        return None;
    }
    contend_record::counters::scale(buf[0], buf[1], buf[2])
}

/// The four counters on each CPU.
pub struct HardwareCounters {
    fds: BTreeMap<u32, [RawFd; 4]>,
    last: BTreeMap<u32, [u64; 4]>,
}

impl Drop for HardwareCounters {
    fn drop(&mut self) {
        for fds in self.fds.values() {
            for &fd in fds {
                // SAFETY: descriptors we opened.
                unsafe { libc::close(fd) };
            }
        }
    }
}

/// Hardware meter values of one CPU over an interval.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct HardwareReading {
    /// Cycles per instruction.
    pub cpi: Option<f64>,
    /// Last-level cache misses per reference.
    pub llc_miss_ratio: Option<f64>,
}

impl HardwareCounters {
    /// Opens the counters on `cpus`.
    ///
    /// Errors: why the kernel refused them (a sentence from
    /// `contend_record::counters::reason`, e.g. "not supported: no
    /// hardware PMU or no such event (ENOENT)").
    pub fn open(cpus: &[u32]) -> Result<HardwareCounters, String> {
        let mut hc = HardwareCounters {
            fds: BTreeMap::new(),
            last: BTreeMap::new(),
        };
        for &c in cpus {
            let mut fds = [-1; 4];
            for (i, &ev) in EVENTS.iter().enumerate() {
                match open(ev, c) {
                    Ok(fd) => fds[i] = fd,
                    Err(errno) => {
                        for &fd in fds.iter().filter(|&&fd| fd >= 0) {
                            // SAFETY: descriptors we opened.
                            unsafe { libc::close(fd) };
                        }
                        return Err(contend_record::counters::reason(errno));
                    }
                }
            }
            hc.fds.insert(c, fds);
        }
        Ok(hc)
    }

    /// Values per CPU since the previous call (none at the first).
    pub fn read(&mut self) -> BTreeMap<u32, HardwareReading> {
        let mut out = BTreeMap::new();
        for (&c, fds) in &self.fds {
            let mut now = [0u64; 4];
            for (i, &fd) in fds.iter().enumerate() {
                now[i] = read_scaled(fd).unwrap_or(0);
            }
            if let Some(last) = self.last.get(&c) {
                let d: Vec<f64> = (0..4)
                    .map(|i| now[i].saturating_sub(last[i]) as f64)
                    .collect();
                out.insert(
                    c,
                    HardwareReading {
                        cpi: (d[1] > 0.0).then(|| d[0] / d[1]),
                        llc_miss_ratio: (d[2] > 0.0).then(|| d[3] / d[2]),
                    },
                );
            }
            self.last.insert(c, now);
        }
        out
    }
}
