//! Software meters that work on every Linux machine: CPU utilisation per
//! CPU from `/proc/stat` and the run-queue length from `/proc/loadavg`
//! (and per CPU from `/proc/schedstat` where the kernel has schedstats).
//!
//! - `cpu_utilisation` of CPU c over an interval = Δ(user + nice + system +
//!   irq + softirq) / Δ(all fields) of its `/proc/stat` line, a
//!   fraction (steal, idle and iowait count as not busy). `/proc/stat`
//!   counts in clock ticks (`USER_HZ`, usually 100 Hz) and costs tens of
//!   microseconds to read, so these meters are read every
//!   `system_interval` (default 100 ms), not every probe interval.
//! - `run_queue` (machine) = the number of runnable tasks, the first
//!   number of the fourth field of `/proc/loadavg` (the kernel's
//!   `nr_running()`), less the reading thread itself.
//! - `run_queue` of CPU c, where `/proc/schedstat` exists = (Δ time run +
//!   Δ time waited on c's run queue) / Δt: the average number of tasks
//!   running or waiting there (Little's law).

use std::collections::BTreeMap;

/// Busy and total clock ticks of each CPU in `/proc/stat`.
pub fn read_cpu_ticks(text: &str) -> BTreeMap<u32, (u64, u64)> {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        // `cpu  …` (the machine's line, two spaces) is not a CPU.
        let Some(rest) = line
            .strip_prefix("cpu")
            .filter(|r| r.starts_with(|c: char| c.is_ascii_digit()))
        else {
            continue;
        };
        let mut f = rest.split_whitespace();
        let Some(Ok(cpu)) = f.next().map(str::parse::<u32>) else {
            continue;
        };
        let v: Vec<u64> = f.filter_map(|x| x.parse().ok()).collect();
        if v.len() < 4 {
            continue;
        }
        let get = |i: usize| v.get(i).copied().unwrap_or(0);
        // user nice system idle iowait irq softirq steal guest guest_nice;
        // guest time is already part of user time.
        let busy = get(0) + get(1) + get(2) + get(5) + get(6);
        let total = get(0) + get(1) + get(2) + get(3) + get(4) + get(5) + get(6) + get(7);
        out.insert(cpu, (busy, total));
    }
    out
}

/// Runnable tasks now (`/proc/loadavg`, fourth field before the `/`).
pub fn parse_running(loadavg: &str) -> Option<u32> {
    loadavg
        .split_whitespace()
        .nth(3)?
        .split('/')
        .next()?
        .parse()
        .ok()
}

/// Per CPU (run ns, wait ns) from `/proc/schedstat`; `None` without it.
pub fn read_schedstat() -> Option<BTreeMap<u32, (u64, u64)>> {
    let text = std::fs::read_to_string("/proc/schedstat").ok()?;
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("cpu") else {
            continue;
        };
        let f: Vec<&str> = rest.split_whitespace().collect();
        let (Some(cpu), Some(run), Some(wait)) = (
            f.first().and_then(|x| x.parse::<u32>().ok()),
            f.get(7).and_then(|x| x.parse::<u64>().ok()),
            f.get(8).and_then(|x| x.parse::<u64>().ok()),
        ) else {
            continue;
        };
        out.insert(cpu, (run, wait));
    }
    Some(out)
}

/// Per CPU (run ns, wait ns) of `/proc/schedstat`.
type SchedTimes = BTreeMap<u32, (u64, u64)>;

/// Reads the system meters at each call and gives their values over the
/// interval since the previous call.
#[derive(Debug, Default)]
pub struct SystemSampler {
    last_ticks: Option<BTreeMap<u32, (u64, u64)>>,
    last_sched: Option<(u64, SchedTimes)>,
}

/// One reading of [`SystemSampler`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SystemReading {
    /// Utilisation per CPU (of the CPUs asked for), fraction.
    pub utilisation: BTreeMap<u32, f64>,
    /// Runnable tasks on the machine, less the reader.
    pub running: Option<f64>,
    /// Average tasks running or waiting per CPU (with schedstat only).
    pub run_queue: BTreeMap<u32, f64>,
}

impl SystemSampler {
    /// Reads now; utilisation and per-CPU run queues need a previous call.
    pub fn read(&mut self, cpus: &[u32], now_ns: u64) -> SystemReading {
        let mut out = SystemReading::default();
        if let Ok(text) = std::fs::read_to_string("/proc/stat") {
            let ticks = read_cpu_ticks(&text);
            if let Some(last) = &self.last_ticks {
                for &c in cpus {
                    if let (Some(a), Some(b)) = (last.get(&c), ticks.get(&c)) {
                        let total = b.1.saturating_sub(a.1);
                        if total > 0 {
                            let busy = b.0.saturating_sub(a.0) as f64 / total as f64;
                            out.utilisation.insert(c, busy.clamp(0.0, 1.0));
                        }
                    }
                }
            }
            self.last_ticks = Some(ticks);
        }
        out.running = std::fs::read_to_string("/proc/loadavg")
            .ok()
            .and_then(|t| parse_running(&t))
            .map(|n| f64::from(n.saturating_sub(1)));
        if let Some(sched) = read_schedstat() {
            if let Some((t0, last)) = &self.last_sched {
                let dt = now_ns.saturating_sub(*t0) as f64;
                if dt > 0.0 {
                    for &c in cpus {
                        if let (Some(a), Some(b)) = (last.get(&c), sched.get(&c)) {
                            let busy = b.0.saturating_sub(a.0) + b.1.saturating_sub(a.1);
                            out.run_queue.insert(c, busy as f64 / dt);
                        }
                    }
                }
            }
            self.last_sched = Some((now_ns, sched));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_stat_lines_parse() {
        let t = "cpu  10 0 5 100 1 0 0 3 0 0\ncpu0 4 1 2 50 1 1 1 2 0 0\ncpu1 6 0 3 50 0 0 0 1 0 0\nintr 1\n";
        let m = read_cpu_ticks(t);
        assert_eq!(m.len(), 2);
        // cpu0: busy 4+1+2+1+1 = 9; total 9 + 50 + 1 + 2 = 62
        assert_eq!(m[&0], (9, 62));
        assert_eq!(parse_running("0.50 0.40 0.30 3/200 1234"), Some(3));
        assert_eq!(parse_running("garbage"), None);
    }
}
