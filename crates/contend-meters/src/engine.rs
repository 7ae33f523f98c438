//! The meter engine: computes every meter at its rate, keeps its
//! short-term window and trigger, and its statistics over the whole run.
//! The daemon ([`crate::daemon`]) publishes what it computes in the
//! blackboard; the meter recorder ([`crate::record`], for `contend record --meters`) stores it in
//! the recording.
//!
//! Meters (docs/meters.md, "Meters"):
//!
//! | name | unit | scope | source |
//! |---|---|---|---|
//! | `memory_latency` | ns | machine (node N on multi-node machines) | pointer-chasing probe, every interval |
//! | `memory_bandwidth` | bytes/s | same | memory-controller counters where the kernel exposes them ([`crate::uncore`]), else the calibration curve at the latency (estimated) |
//! | `memory_concurrency` | lines | same | Little's law: bandwidth / 64 × latency |
//! | `cpu_utilisation` | fraction | each CPU, machine | `/proc/stat`, every system interval |
//! | `run_queue` | tasks | machine (each CPU with schedstat) | `/proc/loadavg` (`/proc/schedstat`) |
//! | `cpi` | cycles/instr | each CPU, machine | hardware counters, where the PMU exists |
//! | `llc_miss_ratio` | fraction | each CPU, machine | hardware counters, where the PMU exists |
//! | `lock_wait_rate` | threads | each recorded process, its top locks | lock traces ([`crate::locks`]) |
//! | `lock_contention_rate` | 1/s | each recorded process | lock traces |
//! | `daemon_cpu` | fraction | machine | the meters' own CPU time (`getrusage`) |

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use serde::Serialize;

use crate::blackboard::{monotonic_ns, MeterDesc, MeterValues};
use crate::calibration::Calibration;
use crate::hardware::HardwareCounters;
use crate::layout::{Scope, TriggerState};
use crate::locks::LockFollower;
use crate::probe::{pin_current_thread, Chain, ProbeConfig, ProbeStats};
use crate::system::SystemSampler;
use crate::trigger::{Trigger, Window};
use crate::uncore::UncoreCounters;

/// Bytes per memory transfer counted by Little's law (a cache line).
pub const LINE_BYTES: f64 = 64.0;

/// What the engine computes and how often.
#[derive(Debug, Clone)]
pub struct EngineOptions {
    /// The probe's interval (and the engine's tick).
    pub interval: Duration,
    /// Short-term window of averages, minima, maxima and triggers.
    pub window: Duration,
    /// Interval of the `/proc` and hardware meters.
    pub system_interval: Duration,
    /// Interval of the lock meters.
    pub lock_interval: Duration,
    /// CPUs whose per-CPU meters are computed (online, allowed).
    pub cpus: Vec<u32>,
    /// The probe's CPU.
    pub probe_cpu: u32,
    /// The probe.
    pub probe: ProbeConfig,
    /// The calibration curve (bandwidth and concurrency meters).
    pub calibration: Option<Calibration>,
    /// Trigger levels (high, low) by meter name, over the defaults.
    pub levels: BTreeMap<String, (f64, f64)>,
    /// Compute the lock meters of recorded processes.
    pub lock_meters: bool,
}

/// Errors starting the engine.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The probe could not start.
    #[error(transparent)]
    Probe(#[from] crate::probe::ProbeError),
    /// Bad trigger levels.
    #[error(transparent)]
    Levels(#[from] crate::trigger::LevelError),
    /// An option is out of range.
    #[error("{0}")]
    Option(String),
}

/// A meter's statistics over the whole run.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct RunStats {
    /// Sum of values.
    pub sum: f64,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
    /// Values.
    pub samples: u64,
    /// Time spent with the trigger set, ns (from each value to the next).
    pub high_ns: u64,
}

/// One meter.
#[derive(Debug, Clone)]
pub struct Meter {
    /// What it is.
    pub desc: MeterDesc,
    window: Window,
    trigger: Option<Trigger>,
    updates: u64,
    /// Estimated through the calibration curve.
    pub estimated: bool,
    /// Over the whole run.
    pub run: RunStats,
    /// The latest values.
    pub last: Option<MeterValues>,
    /// Its source ended.
    pub ended: bool,
    /// For rate meters of processes: the total over the run (wait
    /// seconds, contended acquisitions).
    pub total: Option<f64>,
    last_t: Option<(u64, TriggerState)>,
}

/// Default trigger levels (high, low) of a meter, given the CPUs metered
/// and the calibration (docs/meters.md, "Default levels").
pub fn default_levels(name: &str, cpus: usize, cal: Option<&Calibration>) -> Option<(f64, f64)> {
    match name {
        "cpu_utilisation" => Some((0.9, 0.7)),
        "run_queue" => Some((1.5 * cpus as f64, cpus as f64)),
        "lock_wait_rate" => Some((1.0, 0.5)),
        "memory_latency" => {
            let c = cal?;
            let idle = c.idle_latency_ns();
            let high = c.latency_for(0.5 * c.max_bandwidth());
            (high > idle).then_some((high, idle + 0.5 * (high - idle)))
        }
        "memory_bandwidth" => {
            let c = cal?;
            Some((0.5 * c.max_bandwidth(), 0.25 * c.max_bandwidth()))
        }
        _ => None,
    }
}

/// The engine.
pub struct Engine {
    opts: EngineOptions,
    meters: Vec<Meter>,
    /// Meters by (name, scope, object): names are the static names of
    /// the table above, so finding one allocates nothing.
    index: HashMap<(&'static str, Scope, u64), usize>,
    /// The probe's meters (latency, bandwidth, concurrency) once they
    /// exist: updated every tick without a lookup.
    probe_meters: [Option<usize>; 3],
    probe: Chain,
    /// The thread that ticks has been pinned to the probe's CPU.
    pinned: bool,
    probe_total: ProbeStats,
    system: SystemSampler,
    hardware: Option<HardwareCounters>,
    /// Memory-controller counters, and the scope of each CPU they are
    /// counted on.
    uncore: Option<(UncoreCounters, HashMap<u32, Scope>)>,
    /// The latest mean probe latency, ns.
    last_latency: Option<f64>,
    locks: Option<LockFollower>,
    next_system_ns: u64,
    start_ns: u64,
    last_rusage: Option<(u64, u64)>,
    memory_scope: Scope,
    notes: Vec<String>,
}

fn rusage_self_ns() -> u64 {
    // SAFETY: getrusage with a valid out-pointer.
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut ru);
        ru
    };
    let us = |t: libc::timeval| t.tv_sec as u64 * 1_000_000 + t.tv_usec as u64;
    (us(ru.ru_utime) + us(ru.ru_stime)) * 1000
}

/// The NUMA node of `cpu` and the number of nodes (1, 0 without sysfs).
fn numa_node_of(cpu: u32) -> (u32, usize) {
    let Ok(rd) = std::fs::read_dir("/sys/devices/system/node") else {
        return (0, 1);
    };
    let mut nodes = 0;
    let mut mine = 0;
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(n) = name
            .strip_prefix("node")
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        nodes += 1;
        if let Ok(list) = std::fs::read_to_string(e.path().join("cpulist")) {
            if contend_record::cpus::parse_cpu_list(list.trim()).is_ok_and(|l| l.contains(&cpu)) {
                mine = n;
            }
        }
    }
    (mine, nodes.max(1))
}

impl Engine {
    /// Starts the probe, opens the hardware counters where the machine
    /// has them (else notes why not) and reads the first `/proc` values.
    ///
    /// Errors: the probe cannot start, bad levels, an interval out of range.
    pub fn start(opts: EngineOptions) -> Result<Engine, EngineError> {
        if opts.interval < Duration::from_micros(100) || opts.interval > Duration::from_secs(60) {
            return Err(EngineError::Option(format!(
                "--interval {:?}: must be from 100 us to 60 s",
                opts.interval
            )));
        }
        if opts.window < opts.interval {
            return Err(EngineError::Option(format!(
                "--window {:?} is shorter than the interval {:?}",
                opts.window, opts.interval
            )));
        }
        for (name, &(high, low)) in &opts.levels {
            Trigger::new(name, high, low)?;
        }
        let probe = Chain::new_on(opts.probe_cpu, &opts.probe)?;
        let mut notes = Vec::new();
        let hardware = match HardwareCounters::open(&opts.cpus) {
            Ok(h) => Some(h),
            Err(why) => {
                notes.push(format!(
                    "cpi and llc_miss_ratio are not metered: hardware counters {why}; the software meters (probe, /proc) stand in"
                ));
                None
            }
        };
        let (node, nodes) = numa_node_of(opts.probe_cpu);
        let scope_of = |cpu: u32| {
            if nodes > 1 {
                Scope::Node(numa_node_of(cpu).0)
            } else {
                Scope::Machine
            }
        };
        let uncore = match UncoreCounters::open(&crate::uncore::discover(std::path::Path::new(
            crate::uncore::DEVICES,
        ))) {
            Ok(u) => {
                notes.push(format!(
                    "memory_bandwidth is read from memory-controller counters ({}); memory_concurrency from it and the probe's latency",
                    u.names().join(", ")
                ));
                let scopes = u.cpus().into_iter().map(|c| (c, scope_of(c))).collect();
                Some((u, scopes))
            }
            Err(why) => {
                notes.push(why);
                None
            }
        };
        if opts.calibration.is_none() && uncore.is_none() {
            notes.push(
                "no calibration: memory_bandwidth and memory_concurrency are not metered (run `contend meters calibrate`)".into(),
            );
        }
        if let Some(c) = &opts.calibration {
            notes.extend(c.notes.iter().map(|n| format!("calibration: {n}")));
        }
        let memory_scope = if nodes > 1 {
            Scope::Node(node)
        } else {
            Scope::Machine
        };
        let mut system = SystemSampler::default();
        let now = monotonic_ns();
        system.read(&opts.cpus, now);
        let locks = opts
            .lock_meters
            .then(|| LockFollower::new(opts.lock_interval.as_nanos() as u64));
        let mut engine = Engine {
            meters: Vec::new(),
            index: HashMap::new(),
            probe_meters: [None; 3],
            probe,
            pinned: false,
            probe_total: ProbeStats::default(),
            system,
            hardware,
            uncore,
            last_latency: None,
            locks,
            next_system_ns: now + opts.system_interval.as_nanos() as u64,
            start_ns: now,
            last_rusage: Some((now, rusage_self_ns())),
            memory_scope,
            notes,
            opts,
        };
        if let Some(h) = engine.hardware.as_mut() {
            h.read();
        }
        if let Some((u, _)) = engine.uncore.as_mut() {
            u.read(now);
        }
        Ok(engine)
    }

    /// The meters so far, in the order they appeared.
    pub fn meters(&self) -> &[Meter] {
        &self.meters
    }

    /// Sentences about what is and is not metered.
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// The options.
    pub fn options(&self) -> &EngineOptions {
        &self.opts
    }

    /// The probe's samples over the run.
    pub fn probe_totals(&self) -> ProbeStats {
        self.probe_total
    }

    /// CLOCK_MONOTONIC ns when the engine started.
    pub fn start_ns(&self) -> u64 {
        self.start_ns
    }

    #[allow(clippy::too_many_arguments)]
    fn set(
        &mut self,
        name: &'static str,
        unit: &str,
        scope: Scope,
        object: u64,
        label: &str,
        value: f64,
        now: u64,
        estimated: bool,
        updated: &mut Vec<usize>,
    ) {
        let i = self.intern(name, unit, scope, object, label, estimated);
        self.update(i, value, now, estimated, updated);
    }

    /// The index of a meter, created (with its levels, window and
    /// trigger) the first time it is asked for.
    fn intern(
        &mut self,
        name: &'static str,
        unit: &str,
        scope: Scope,
        object: u64,
        label: &str,
        estimated: bool,
    ) -> usize {
        let key = (name, scope, object);
        if let Some(&i) = self.index.get(&key) {
            return i;
        }
        let levels =
            self.opts.levels.get(name).copied().or_else(|| {
                default_levels(name, self.opts.cpus.len(), self.opts.calibration.as_ref())
            });
        let trigger = levels.and_then(|(h, l)| Trigger::new(name, h, l).ok());
        self.meters.push(Meter {
            desc: MeterDesc {
                name: name.into(),
                unit: unit.into(),
                scope,
                object,
                label: label.into(),
                levels,
            },
            window: Window::new(self.opts.window.as_nanos() as u64),
            trigger,
            updates: 0,
            estimated,
            run: RunStats {
                min: f64::INFINITY,
                max: f64::NEG_INFINITY,
                ..RunStats::default()
            },
            last: None,
            ended: false,
            total: None,
            last_t: None,
        });
        self.index.insert(key, self.meters.len() - 1);
        self.meters.len() - 1
    }

    /// Feeds meter `i` a value taken at `now` (NaN: ignored): its window,
    /// trigger, run statistics and latest values.
    fn update(
        &mut self,
        i: usize,
        value: f64,
        now: u64,
        estimated: bool,
        updated: &mut Vec<usize>,
    ) {
        let m = &mut self.meters[i];
        if value.is_nan() {
            return;
        }
        if let Some((t0, TriggerState::High)) = m.last_t {
            m.run.high_ns += now.saturating_sub(t0);
        }
        m.window.push(now, value);
        let st = m.window.stats().expect("a value was pushed");
        let state = m.trigger.as_mut().map(|t| t.update(st.avg));
        m.updates += 1;
        m.run.sum += value;
        m.run.min = m.run.min.min(value);
        m.run.max = m.run.max.max(value);
        m.run.samples += 1;
        m.last_t = Some((now, state.unwrap_or(TriggerState::None)));
        m.last = Some(MeterValues {
            value,
            avg: st.avg,
            min: st.min,
            max: st.max,
            window_samples: st.samples,
            time_ns: now,
            updates: m.updates,
            trigger: Some(state.unwrap_or(TriggerState::None)),
            trigger_changes: m.trigger.map_or(0, |t| t.changes),
            estimated,
            ended: m.ended,
        });
        updated.push(i);
    }

    fn end_meter(
        &mut self,
        name: &'static str,
        scope: Scope,
        object: u64,
        updated: &mut Vec<usize>,
    ) {
        if let Some(&i) = self.index.get(&(name, scope, object)) {
            let m = &mut self.meters[i];
            if !m.ended {
                m.ended = true;
                if let Some(v) = m.last.as_mut() {
                    v.ended = true;
                }
                updated.push(i);
            }
        }
    }

    /// Takes the probe's sample and computes what is due at `now_ns`
    /// (CLOCK_MONOTONIC); returns the indices of the meters that got a
    /// new value (or ended). [`Engine::tick_into`] does the same into a
    /// vector the caller keeps (no allocation per tick).
    ///
    /// The probe is sampled here, in the caller's loop, not by a thread of
    /// its own (one wake-up per interval instead of two): the first call
    /// pins the calling thread to the probe's CPU (where the chain was
    /// built), so call it from one thread, the one that runs the loop.
    pub fn tick(&mut self, now_ns: u64) -> Vec<usize> {
        let mut updated = Vec::new();
        self.tick_into(now_ns, &mut updated);
        updated
    }

    /// [`Engine::tick`] into `updated` (cleared first): the daemon's loop
    /// keeps one vector, so a tick allocates nothing.
    pub fn tick_into(&mut self, now_ns: u64, updated: &mut Vec<usize>) {
        updated.clear();
        if !self.pinned {
            self.pinned = true;
            if let Err(e) = pin_current_thread(self.opts.probe_cpu) {
                self.notes.push(format!(
                    "the meter loop could not be pinned to the probe's CPU: {e}; the probe samples on whichever CPU it runs"
                ));
            }
        }
        let mut st = ProbeStats::default();
        st.add(&self.probe.sample());
        self.probe_total.samples += st.samples;
        self.probe_total.disturbed += st.disturbed;
        self.probe_total.busy_ns += st.busy_ns;
        self.probe_total.sum_ns += st.sum_ns;
        if let Some(lat) = st.mean() {
            self.last_latency = Some(lat);
            let scope = self.memory_scope;
            let i = match self.probe_meters[0] {
                Some(i) => i,
                None => {
                    let i = self.intern("memory_latency", "ns", scope, 0, "", false);
                    self.probe_meters[0] = Some(i);
                    i
                }
            };
            self.update(i, lat, now_ns, false, updated);
            // With memory-controller counters, bandwidth and concurrency
            // come from them at the system interval (system_tick).
            if let Some(cal) = self
                .opts
                .calibration
                .as_ref()
                .filter(|_| self.uncore.is_none())
            {
                let bw = cal.bandwidth_for(lat);
                let conc = bw / LINE_BYTES * lat * 1e-9;
                let (b, c) = match (self.probe_meters[1], self.probe_meters[2]) {
                    (Some(b), Some(c)) => (b, c),
                    _ => {
                        let b = self.intern("memory_bandwidth", "bytes/s", scope, 0, "", true);
                        let c = self.intern("memory_concurrency", "lines", scope, 0, "", true);
                        self.probe_meters[1] = Some(b);
                        self.probe_meters[2] = Some(c);
                        (b, c)
                    }
                };
                self.update(b, bw, now_ns, true, updated);
                self.update(c, conc, now_ns, true, updated);
            }
        }
        if now_ns >= self.next_system_ns {
            self.next_system_ns = now_ns + self.opts.system_interval.as_nanos() as u64;
            self.system_tick(now_ns, updated);
        }
        if self.locks.is_some() {
            self.lock_tick(now_ns, updated);
        }
    }

    fn system_tick(&mut self, now_ns: u64, updated: &mut Vec<usize>) {
        let cpus = self.opts.cpus.clone();
        let r = self.system.read(&cpus, now_ns);
        if !r.utilisation.is_empty() {
            for (&c, &u) in &r.utilisation {
                self.set(
                    "cpu_utilisation",
                    "fraction",
                    Scope::Cpu(c),
                    0,
                    "",
                    u,
                    now_ns,
                    false,
                    updated,
                );
            }
            let mean = r.utilisation.values().sum::<f64>() / r.utilisation.len() as f64;
            self.set(
                "cpu_utilisation",
                "fraction",
                Scope::Machine,
                0,
                "",
                mean,
                now_ns,
                false,
                updated,
            );
        }
        if let Some(n) = r.running {
            self.set(
                "run_queue",
                "tasks",
                Scope::Machine,
                0,
                "",
                n,
                now_ns,
                false,
                updated,
            );
        }
        for (&c, &q) in &r.run_queue {
            self.set(
                "run_queue",
                "tasks",
                Scope::Cpu(c),
                0,
                "",
                q,
                now_ns,
                false,
                updated,
            );
        }
        if let Some(h) = self.hardware.as_mut() {
            let hw = h.read();
            let (mut cpis, mut ratios) = (Vec::new(), Vec::new());
            for (&c, v) in &hw {
                if let Some(x) = v.cpi {
                    cpis.push(x);
                    self.set(
                        "cpi",
                        "cycles/instr",
                        Scope::Cpu(c),
                        0,
                        "",
                        x,
                        now_ns,
                        false,
                        updated,
                    );
                }
                if let Some(x) = v.llc_miss_ratio {
                    ratios.push(x);
                    self.set(
                        "llc_miss_ratio",
                        "fraction",
                        Scope::Cpu(c),
                        0,
                        "",
                        x,
                        now_ns,
                        false,
                        updated,
                    );
                }
            }
            if !cpis.is_empty() {
                let m = cpis.iter().sum::<f64>() / cpis.len() as f64;
                self.set(
                    "cpi",
                    "cycles/instr",
                    Scope::Machine,
                    0,
                    "",
                    m,
                    now_ns,
                    false,
                    updated,
                );
            }
            if !ratios.is_empty() {
                let m = ratios.iter().sum::<f64>() / ratios.len() as f64;
                self.set(
                    "llc_miss_ratio",
                    "fraction",
                    Scope::Machine,
                    0,
                    "",
                    m,
                    now_ns,
                    false,
                    updated,
                );
            }
        }
        self.uncore_tick(now_ns, updated);
        let used = rusage_self_ns();
        if let Some((t0, u0)) = self.last_rusage {
            let dt = now_ns.saturating_sub(t0);
            if dt > 0 {
                let share = used.saturating_sub(u0) as f64 / dt as f64;
                self.set(
                    "daemon_cpu",
                    "fraction",
                    Scope::Machine,
                    0,
                    "",
                    share,
                    now_ns,
                    false,
                    updated,
                );
            }
        }
        self.last_rusage = Some((now_ns, used));
    }

    /// Memory bandwidth (and concurrency by Little's law, with the probe's
    /// latency) from the memory-controller counters, per scope.
    fn uncore_tick(&mut self, now_ns: u64, updated: &mut Vec<usize>) {
        let Some((u, scopes)) = self.uncore.as_mut() else {
            return;
        };
        let mut by_scope: Vec<(Scope, f64)> = Vec::new();
        for (cpu, bw) in u.read(now_ns) {
            let scope = scopes.get(&cpu).copied().unwrap_or(Scope::Machine);
            match by_scope.iter_mut().find(|(s, _)| *s == scope) {
                Some((_, b)) => *b += bw,
                None => by_scope.push((scope, bw)),
            }
        }
        for (scope, bw) in by_scope {
            self.set(
                "memory_bandwidth",
                "bytes/s",
                scope,
                0,
                "",
                bw,
                now_ns,
                false,
                updated,
            );
            if let Some(lat) = self.last_latency.filter(|_| scope == self.memory_scope) {
                self.set(
                    "memory_concurrency",
                    "lines",
                    scope,
                    0,
                    "",
                    bw / LINE_BYTES * lat * 1e-9,
                    now_ns,
                    false,
                    updated,
                );
            }
        }
    }

    fn lock_tick(&mut self, now_ns: u64, updated: &mut Vec<usize>) {
        let Some(f) = self.locks.as_mut() else {
            return;
        };
        let readings = f.poll(now_ns);
        for p in readings {
            let scope = Scope::Process(p.pid);
            self.set(
                "lock_wait_rate",
                "threads",
                scope,
                0,
                &p.command,
                p.wait_rate,
                now_ns,
                false,
                updated,
            );
            self.set(
                "lock_contention_rate",
                "1/s",
                scope,
                0,
                &p.command,
                p.contention_rate,
                now_ns,
                false,
                updated,
            );
            for key in [
                ("lock_wait_rate", p.total_wait_ns as f64 / 1e9),
                ("lock_contention_rate", p.total_contended as f64),
            ] {
                if let Some(&i) = self.index.get(&(key.0, scope, 0)) {
                    self.meters[i].total = Some(key.1);
                }
            }
            for &(addr, w, _) in &p.top_locks {
                let label = format!("{addr:#x}");
                self.set(
                    "lock_wait_rate",
                    "threads",
                    Scope::Lock(p.pid),
                    addr,
                    &label,
                    w,
                    now_ns,
                    false,
                    updated,
                );
            }
            if p.ended {
                self.end_meter("lock_wait_rate", scope, 0, updated);
                self.end_meter("lock_contention_rate", scope, 0, updated);
                let locks: Vec<u64> = self
                    .meters
                    .iter()
                    .filter(|m| m.desc.scope == Scope::Lock(p.pid) && !m.ended)
                    .map(|m| m.desc.object)
                    .collect();
                for a in locks {
                    self.end_meter("lock_wait_rate", Scope::Lock(p.pid), a, updated);
                }
            }
        }
    }

    /// Every meter's statistics over the run, for `--format json`.
    pub fn summary(&self) -> Vec<MeterSummary> {
        self.meters
            .iter()
            .filter(|m| m.run.samples > 0)
            .map(|m| MeterSummary {
                name: m.desc.name.clone(),
                unit: m.desc.unit.clone(),
                scope: m.desc.scope.label(),
                label: m.desc.label.clone(),
                object: (m.desc.object != 0).then(|| format!("{:#x}", m.desc.object)),
                avg: m.run.sum / m.run.samples as f64,
                min: m.run.min,
                max: m.run.max,
                samples: m.run.samples,
                high: m.desc.levels.map(|l| l.0),
                low: m.desc.levels.map(|l| l.1),
                trigger_changes: m.trigger.map_or(0, |t| t.changes),
                time_high_s: m.run.high_ns as f64 / 1e9,
                estimated: m.estimated,
                total: m.total,
            })
            .collect()
    }
}

/// One meter over a whole run (`contend meters --format json`, `meters[]`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MeterSummary {
    /// Meter name.
    pub name: String,
    /// Unit.
    pub unit: String,
    /// `machine`, `node:N`, `cpu:N`, `process:PID`, `lock:PID`.
    pub scope: String,
    /// Process command or lock name ("" for the others).
    pub label: String,
    /// Lock address (lock scope only).
    pub object: Option<String>,
    /// Mean of the values.
    pub avg: f64,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
    /// Values computed.
    pub samples: u64,
    /// High trigger level.
    pub high: Option<f64>,
    /// Low trigger level.
    pub low: Option<f64>,
    /// Trigger state changes.
    pub trigger_changes: u64,
    /// Time with the trigger set, s.
    pub time_high_s: f64,
    /// Estimated through the calibration curve.
    pub estimated: bool,
    /// For the lock meters of a process: the run's total (wait seconds
    /// for `lock_wait_rate`, contended acquisitions for
    /// `lock_contention_rate`); else `null`.
    pub total: Option<f64>,
}
