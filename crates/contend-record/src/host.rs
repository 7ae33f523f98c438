//! The recording machine and its clock: CLOCK_MONOTONIC, the TSC and its
//! calibration points, the CPU model, the host name, the online CPUs.

use std::fs;
use std::time::Duration;

use contend_trace::CalibrationPoint;

/// CLOCK_MONOTONIC now, ns.
pub fn monotonic_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

/// CPU time of the calling thread, ns (`CLOCK_THREAD_CPUTIME_ID`): what
/// the recorder's own threads (samplers, the meter daemon's lock
/// follower) cost, counted without the time other work took from them.
pub fn thread_cpu_ns() -> u64 {
    clock_ns(libc::CLOCK_THREAD_CPUTIME_ID)
}

/// `clock` now, ns.
pub(crate) fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid out-pointer; the clocks asked for (CLOCK_MONOTONIC,
    // its coarse variant, the thread CPU clock) always exist on Linux.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Time CPU `cpu` (or, with `None`, all CPUs together) has spent away
/// from its tasks since boot: steal by the hypervisor, hard and soft
/// interrupts, ns, from its line of `/proc/stat` (`cpuN`, or `cpu`), in
/// USER_HZ ticks (10 ms) converted. A task's perf task-clock counts such
/// time while the task is on the CPU and its rusage CPU time does not:
/// the timing tests read it before and after a round to tell a disturbed
/// round from a fault. `None` when the line cannot be read.
pub fn cpu_time_lost_ns(cpu: Option<usize>) -> Option<u64> {
    let text = fs::read_to_string("/proc/stat").ok()?;
    let name = cpu.map_or_else(|| "cpu".to_string(), |c| format!("cpu{c}"));
    let line = text
        .lines()
        .find(|l| l.split_whitespace().next() == Some(name.as_str()))?;
    let ticks: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(|f| f.parse().ok())
        .collect::<Option<_>>()?;
    // user nice system idle iowait irq softirq steal …
    let lost = ticks.get(5)? + ticks.get(6)? + ticks.get(7)?;
    // SAFETY: sysconf has no preconditions.
    let hz = u64::try_from(unsafe { libc::sysconf(libc::_SC_CLK_TCK) })
        .ok()
        .filter(|&h| h > 0)?;
    Some(lost * 1_000_000_000 / hz)
}

/// The CPU model (`model name` of `/proc/cpuinfo`; empty when it does
/// not say), for files that record the machine they were measured on.
pub fn cpu_model() -> String {
    CpuInfo::read().model
}

/// What `/proc/cpuinfo` says about the CPU.
pub(crate) struct CpuInfo {
    /// First `model name`.
    pub(crate) model: String,
    /// `constant_tsc` and `nonstop_tsc` are in the flags.
    pub(crate) invariant_tsc: bool,
}

impl CpuInfo {
    pub(crate) fn read() -> CpuInfo {
        let text = fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        CpuInfo::parse(&text)
    }

    pub(crate) fn parse(text: &str) -> CpuInfo {
        let field = |name: &str| {
            text.lines().find_map(|l| {
                let (k, v) = l.split_once(':')?;
                (k.trim() == name).then(|| v.trim().to_string())
            })
        };
        let flags = field("flags").unwrap_or_default();
        let has = |f: &str| flags.split_whitespace().any(|x| x == f);
        CpuInfo {
            model: field("model name").unwrap_or_default(),
            invariant_tsc: has("constant_tsc") && has("nonstop_tsc"),
        }
    }
}

/// The trace clock chosen for a run, with its start calibration.
pub(crate) enum Clock {
    /// Invariant TSC at `hz` ticks per second; `start` are the two points
    /// the frequency was measured between.
    Tsc {
        hz: u64,
        start: [CalibrationPoint; 2],
    },
    /// CLOCK_MONOTONIC ns.
    Monotonic,
}

impl Clock {
    /// Interval between the two readings of the frequency measurement.
    const CALIBRATION_INTERVAL: Duration = Duration::from_millis(20);

    pub(crate) fn calibrate(cpu: &CpuInfo) -> Clock {
        if !cpu.invariant_tsc || !cfg!(target_arch = "x86_64") {
            return Clock::Monotonic;
        }
        let Some(a) = tsc_point() else {
            return Clock::Monotonic;
        };
        std::thread::sleep(Self::CALIBRATION_INTERVAL);
        let Some(b) = tsc_point() else {
            return Clock::Monotonic;
        };
        let dt = b.ticks.wrapping_sub(a.ticks);
        let dns = b.monotonic_ns.saturating_sub(a.monotonic_ns);
        if dt == 0 || dt > 1 << 62 || dns == 0 {
            return Clock::Monotonic;
        }
        let hz = (u128::from(dt) * 1_000_000_000 / u128::from(dns)) as u64;
        Clock::Tsc { hz, start: [a, b] }
    }

    pub(crate) fn name(&self) -> &'static str {
        match self {
            Clock::Tsc { .. } => "tsc",
            Clock::Monotonic => "monotonic",
        }
    }

    pub(crate) fn tsc_hz(&self) -> u64 {
        match self {
            Clock::Tsc { hz, .. } => *hz,
            Clock::Monotonic => 0,
        }
    }

    pub(crate) fn start_points(&self) -> Vec<CalibrationPoint> {
        match self {
            Clock::Tsc { start, .. } => start.to_vec(),
            Clock::Monotonic => Vec::new(),
        }
    }

    /// A calibration point now (none for the monotonic clock).
    pub(crate) fn point(&self) -> Option<CalibrationPoint> {
        match self {
            Clock::Tsc { .. } => tsc_point(),
            Clock::Monotonic => None,
        }
    }
}

/// One TSC/CLOCK_MONOTONIC pair: the TSC read between two clock readings,
/// the tightest of several tries, paired with the midpoint of its bracket.
pub(crate) fn tsc_point() -> Option<CalibrationPoint> {
    #[cfg(target_arch = "x86_64")]
    {
        let mut best: Option<(u64, CalibrationPoint)> = None;
        for _ in 0..32 {
            let before = monotonic_ns();
            // SAFETY: rdtsc has no preconditions on x86_64.
            let ticks = unsafe { core::arch::x86_64::_rdtsc() };
            let after = monotonic_ns();
            let width = after.saturating_sub(before);
            if !matches!(best, Some((w, _)) if w <= width) {
                best = Some((
                    width,
                    CalibrationPoint {
                        ticks,
                        monotonic_ns: before + width / 2,
                    },
                ));
            }
        }
        best.map(|(_, p)| p)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        None
    }
}

/// Host name and kernel release from `uname(2)`.
pub(crate) fn uname() -> (String, String) {
    // SAFETY: uname fills the zeroed struct; its fields are NUL-terminated.
    unsafe {
        let mut u: libc::utsname = std::mem::zeroed();
        if libc::uname(&mut u) != 0 {
            return (String::new(), String::new());
        }
        let s = |f: &[libc::c_char]| {
            std::ffi::CStr::from_ptr(f.as_ptr())
                .to_string_lossy()
                .into_owned()
        };
        (s(&u.nodename), s(&u.release))
    }
}

pub(crate) fn online_cpus() -> u32 {
    // SAFETY: sysconf has no memory effects.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    u32::try_from(n).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The machine's line and CPU 0's read; neither goes back; CPU 0
    /// lost no more than all CPUs together; a CPU that is not there has
    /// no line.
    #[test]
    fn time_lost_to_steal_and_interrupts_reads_and_grows() {
        let all = cpu_time_lost_ns(None).unwrap();
        let first = cpu_time_lost_ns(Some(0)).unwrap();
        assert!(first <= cpu_time_lost_ns(None).unwrap());
        assert!(cpu_time_lost_ns(None).unwrap() >= all);
        assert!(cpu_time_lost_ns(Some(0)).unwrap() >= first);
        assert_eq!(cpu_time_lost_ns(Some(1 << 20)), None);
    }

    #[test]
    pub(crate) fn cpuinfo_parsing() {
        let c = CpuInfo::parse(
            "processor\t: 0\nmodel name\t: Some CPU @ 2.0GHz\nflags\t\t: fpu tsc constant_tsc nonstop_tsc\n\nprocessor\t: 1\n",
        );
        assert_eq!(c.model, "Some CPU @ 2.0GHz");
        assert!(c.invariant_tsc);
        let c = CpuInfo::parse("flags\t: fpu constant_tsc\n");
        assert!(!c.invariant_tsc);
        assert_eq!(c.model, "");
    }
}
