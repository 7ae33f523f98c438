//! Memory bandwidth from memory-controller (uncore) counters where the
//! kernel exposes them (Fowler et al. 2011, "RCRDaemon and HPM drivers":
//! "uncore" meters of the memory controllers), found in sysfs
//! (`/sys/bus/event_source/devices`) as perf finds them:
//!
//! | vendor | PMU (sysfs) | events | bytes per count |
//! |---|---|---|---|
//! | Intel servers | `uncore_imc_N` (one per channel) | `cas_count_read`, `cas_count_write` (sysfs `events/`) | the event's `.scale` × `.unit` (`6.103515625e-5` MiB = 64 B) |
//! | Intel clients | `uncore_imc` | `data_reads`, `data_writes` (sysfs `events/`) | the same |
//! | Intel servers without the above | `uncore_imc_free_running_N` | `data_read`, `data_write` (sysfs `events/`) | the same |
//! | AMD Zen 4 and later | `amd_umc_N` | UMC CAS commands, `event=0x0a` with `rdwrmask=0x1` (reads) and `0x2` (writes) (perf's `umc_cas_cmd.rd`/`.wr`; not in sysfs, encoded through the PMU's `format/`) | 64 B (one cache line per CAS) |
//!
//! AMD's data fabric PMU (`amd_df`, Zen 1–3) is recognised but not used:
//! its DRAM-channel events differ by processor family and are not named
//! in sysfs, so there is no encoding contend can take from the kernel;
//! the meters say so. Each event is opened (`perf_event_open`, pid −1)
//! on every CPU of its PMU's `cpumask` (one per socket) and read every
//! system interval: bandwidth = Σ Δcount × bytes per count / Δt, bytes
//! read + written per second, per NUMA node of that CPU.
//!
//! [`discover`] takes the devices directory as a parameter so that it is
//! tested against fake sysfs trees (the development machine, a VM, has
//! none of these PMUs: there the meters note "not available on this
//! machine" and `memory_bandwidth` falls back to the probe and its
//! calibration curve).

use std::os::unix::io::RawFd;
use std::path::Path;

/// The PMU devices directory.
pub const DEVICES: &str = "/sys/bus/event_source/devices";

/// Bytes per CAS command (one cache line).
pub const CAS_BYTES: f64 = 64.0;

/// One memory-controller event to count.
#[derive(Debug, Clone, PartialEq)]
pub struct UncoreEvent {
    /// The PMU (`uncore_imc_0`, `amd_umc_1`).
    pub pmu: String,
    /// As perf names it (`uncore_imc_0/cas_count_read/`,
    /// `amd_umc_0/event=0x0a,rdwrmask=0x1/`).
    pub name: String,
    /// `perf_event_attr.type` (the PMU's `type` file).
    pub kind: u32,
    /// `perf_event_attr.config`.
    pub config: u64,
    /// The CPU to open it on (from the PMU's `cpumask`).
    pub cpu: u32,
    /// Bytes of memory traffic per count.
    pub bytes_per_count: f64,
}

/// What [`discover`] found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Discovery {
    /// The events to count (empty: none usable).
    pub events: Vec<UncoreEvent>,
    /// Memory-controller PMUs present, usable or not.
    pub pmus: Vec<String>,
    /// Why PMUs present were not used, one sentence each.
    pub skipped: Vec<String>,
}

impl Discovery {
    /// Why there is no memory-controller bandwidth, as the note of
    /// `contend meters` (`None` when there are events).
    pub fn unavailable(&self) -> Option<String> {
        if !self.events.is_empty() {
            return None;
        }
        let why = if self.pmus.is_empty() {
            "no uncore_imc*, amd_umc* or amd_df PMU in /sys/bus/event_source/devices".to_string()
        } else {
            self.skipped.join("; ")
        };
        Some(format!(
            "memory-controller counters: not available on this machine ({why}): falling back to the probe (memory_bandwidth estimated from its latency through the calibration curve)"
        ))
    }
}

fn read(p: &Path) -> Option<String> {
    std::fs::read_to_string(p)
        .ok()
        .map(|s| s.trim().to_string())
}

fn number(s: &str) -> Option<u64> {
    match s.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }
}

/// `config` of the terms `terms` (`event=0x04,umask=0x03`) through the
/// PMU directory's `format/` files.
fn config_of(dir: &Path, terms: &[(&str, u64)]) -> Result<u64, String> {
    let mut config = 0;
    for &(key, val) in terms {
        let f = read(&dir.join("format").join(key))
            .ok_or_else(|| format!("{}/format/{key} is missing", dir.display()))?;
        // a `config1`/`config2` term is not one these events use
        match contend_record::numa::pmu::encode(&f, val) {
            Some((0, bits)) => config |= bits,
            _ => return Err(format!("{}/format/{key}: cannot read `{f}`", dir.display())),
        }
    }
    Ok(config)
}

/// The terms of a sysfs event file (`event=0x04,umask=0x03`).
fn terms_of(text: &str) -> Option<Vec<(String, u64)>> {
    text.split(',')
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(|t| {
            let (k, v) = t.split_once('=').unwrap_or((t, "1"));
            Some((k.to_string(), number(v)?))
        })
        .collect()
}

/// CPUs of a cpumask/cpus file (`0`, `0,28`, `0-1`); CPU 0 without one.
fn cpus_of(dir: &Path) -> Vec<u32> {
    read(&dir.join("cpumask"))
        .or_else(|| read(&dir.join("cpus")))
        .and_then(|s| contend_record::cpus::parse_cpu_list(&s).ok())
        .filter(|l| !l.is_empty())
        .unwrap_or_else(|| vec![0])
}

/// Bytes per count of sysfs event `name` of `dir`: its `.scale` times
/// its `.unit` (MiB, MB, KiB, kB, bytes); 64 (one line) without them.
fn bytes_per_count(dir: &Path, name: &str) -> f64 {
    let ev = dir.join("events");
    let Some(scale) = read(&ev.join(format!("{name}.scale"))).and_then(|s| s.parse::<f64>().ok())
    else {
        return CAS_BYTES;
    };
    let unit = read(&ev.join(format!("{name}.unit"))).unwrap_or_default();
    let mult = match unit.as_str() {
        "MiB" => 1048576.0,
        "MB" => 1e6,
        "KiB" => 1024.0,
        "kB" | "KB" => 1e3,
        _ => 1.0,
    };
    scale * mult
}

/// Events of an Intel IMC PMU from its sysfs `events/` (the first pair of
/// `pairs` it has).
fn intel_events(
    dir: &Path,
    pmu: &str,
    kind: u32,
    pairs: &[[&str; 2]],
) -> Result<Vec<UncoreEvent>, String> {
    let Some(pair) = pairs
        .iter()
        .find(|p| p.iter().all(|n| dir.join("events").join(n).exists()))
    else {
        let names: Vec<String> = pairs.iter().map(|p| p.join("/")).collect();
        return Err(format!("{pmu} has none of the events {}", names.join(", ")));
    };
    let mut out = Vec::new();
    for name in pair {
        let text = read(&dir.join("events").join(name)).unwrap_or_default();
        let terms =
            terms_of(&text).ok_or_else(|| format!("{pmu}/events/{name}: cannot read `{text}`"))?;
        let terms: Vec<(&str, u64)> = terms.iter().map(|(k, v)| (k.as_str(), *v)).collect();
        let config = config_of(dir, &terms)?;
        for cpu in cpus_of(dir) {
            out.push(UncoreEvent {
                pmu: pmu.into(),
                name: format!("{pmu}/{name}/"),
                kind,
                config,
                cpu,
                bytes_per_count: bytes_per_count(dir, name),
            });
        }
    }
    Ok(out)
}

/// AMD UMC CAS commands, reads and writes (`event=0x0a`, `rdwrmask` 1 and
/// 2), through the PMU's `format/`.
fn amd_umc_events(dir: &Path, pmu: &str, kind: u32) -> Result<Vec<UncoreEvent>, String> {
    let mut out = Vec::new();
    for mask in [1u64, 2] {
        let config = config_of(dir, &[("event", 0x0a), ("rdwrmask", mask)])?;
        for cpu in cpus_of(dir) {
            out.push(UncoreEvent {
                pmu: pmu.into(),
                name: format!("{pmu}/event=0x0a,rdwrmask={mask:#x}/"),
                kind,
                config,
                cpu,
                bytes_per_count: CAS_BYTES,
            });
        }
    }
    Ok(out)
}

/// The memory-controller events of the PMU devices directory `devices`
/// (normally [`DEVICES`]; see the module documentation for the PMUs and
/// events per vendor). Intel's free-running IMC counters are used only
/// when no `uncore_imc*` PMU gave events (both count the same traffic).
pub fn discover(devices: &Path) -> Discovery {
    let mut names: Vec<String> = std::fs::read_dir(devices)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    let mut d = Discovery::default();
    let mut free_running = Vec::new();
    for pmu in &names {
        let dir = devices.join(pmu);
        let is_imc = pmu.starts_with("uncore_imc");
        let is_umc = pmu.starts_with("amd_umc");
        if !(is_imc || is_umc || pmu == "amd_df") {
            continue;
        }
        d.pmus.push(pmu.clone());
        if pmu == "amd_df" {
            d.skipped.push(
                "amd_df (data fabric) is present, but its DRAM-channel events differ by processor family and are not named in sysfs: not used".into(),
            );
            continue;
        }
        let Some(kind) = read(&dir.join("type")).and_then(|s| s.parse::<u32>().ok()) else {
            d.skipped.push(format!("{pmu}/type is missing"));
            continue;
        };
        let r = if pmu.starts_with("uncore_imc_free_running") {
            match intel_events(&dir, pmu, kind, &[["data_read", "data_write"]]) {
                Ok(ev) => {
                    free_running.extend(ev);
                    continue;
                }
                Err(e) => Err(e),
            }
        } else if is_imc {
            intel_events(
                &dir,
                pmu,
                kind,
                &[
                    ["cas_count_read", "cas_count_write"],
                    ["data_reads", "data_writes"],
                ],
            )
        } else {
            amd_umc_events(&dir, pmu, kind)
        };
        match r {
            Ok(ev) => d.events.extend(ev),
            Err(e) => d.skipped.push(e),
        }
    }
    if d.events.is_empty() {
        d.events = free_running;
    }
    d
}

/// The memory-controller events opened.
pub struct UncoreCounters {
    /// (event, descriptor, last count).
    open: Vec<(UncoreEvent, RawFd, Option<u64>)>,
    last_ns: Option<u64>,
}

impl Drop for UncoreCounters {
    fn drop(&mut self) {
        for (_, fd, _) in &self.open {
            // SAFETY: descriptors we opened.
            unsafe { libc::close(*fd) };
        }
    }
}

impl UncoreCounters {
    /// Opens every event of `d`.
    ///
    /// Errors: a sentence for the meters' notes: none found
    /// ([`Discovery::unavailable`]), or why the kernel refused one (all
    /// are then closed: a partial sum would under-count).
    pub fn open(d: &Discovery) -> Result<UncoreCounters, String> {
        if let Some(why) = d.unavailable() {
            return Err(why);
        }
        let mut c = UncoreCounters {
            open: Vec::new(),
            last_ns: None,
        };
        for e in &d.events {
            match crate::hardware::open_event(e.kind, e.config, e.cpu) {
                Ok(fd) => c.open.push((e.clone(), fd, None)),
                Err(errno) => {
                    return Err(format!(
                        "memory-controller counters: {} on CPU {} refused: {}: falling back to the probe (memory_bandwidth estimated from its latency through the calibration curve)",
                        e.name,
                        e.cpu,
                        contend_record::counters::reason(errno)
                    ));
                }
            }
        }
        Ok(c)
    }

    /// The events' names (as perf names them, each once).
    pub fn names(&self) -> Vec<String> {
        let mut v: Vec<String> = self.open.iter().map(|(e, _, _)| e.name.clone()).collect();
        v.dedup();
        v
    }

    /// The CPUs the events are counted on.
    pub fn cpus(&self) -> Vec<u32> {
        let mut v: Vec<u32> = self.open.iter().map(|(e, _, _)| e.cpu).collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// Bandwidth since the previous call, bytes read + written per
    /// second, by the CPU each event was counted on (none at the first
    /// call).
    pub fn read(&mut self, now_ns: u64) -> Vec<(u32, f64)> {
        let dt = self.last_ns.map(|t| now_ns.saturating_sub(t));
        self.last_ns = Some(now_ns);
        let mut by_cpu: Vec<(u32, f64)> = Vec::new();
        for (e, fd, last) in &mut self.open {
            let Some(now) = crate::hardware::read_scaled(*fd) else {
                continue;
            };
            if let (Some(l), Some(dt)) = (*last, dt.filter(|&d| d > 0)) {
                let bw = now.saturating_sub(l) as f64 * e.bytes_per_count / (dt as f64 * 1e-9);
                match by_cpu.iter_mut().find(|(c, _)| *c == e.cpu) {
                    Some((_, b)) => *b += bw,
                    None => by_cpu.push((e.cpu, bw)),
                }
            }
            *last = Some(now);
        }
        by_cpu
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn write(root: &Path, rel: &str, text: &str) {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, format!("{text}\n")).unwrap();
    }

    fn tree(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("contend-uncore-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    /// An Intel server as sysfs shows it: two IMC channels with
    /// `cas_count_read` = event 0x04 umask 0x03 and `cas_count_write` =
    /// event 0x04 umask 0x0c (format event config:0-7, umask
    /// config:8-15), scale 6.103515625e-5 MiB (= 64 B: 6.103515625e-5 ×
    /// 1048576 = 64), two sockets (cpumask 0,28); free-running counters
    /// beside them are left out (they count the same traffic); the core
    /// PMU is not a memory controller.
    #[test]
    fn intel_imc_cas_counts() {
        let r = tree("intel");
        for imc in ["uncore_imc_0", "uncore_imc_1"] {
            write(&r, &format!("{imc}/type"), "15");
            write(&r, &format!("{imc}/cpumask"), "0,28");
            write(&r, &format!("{imc}/format/event"), "config:0-7");
            write(&r, &format!("{imc}/format/umask"), "config:8-15");
            for (ev, umask) in [("cas_count_read", "0x03"), ("cas_count_write", "0x0c")] {
                write(
                    &r,
                    &format!("{imc}/events/{ev}"),
                    &format!("event=0x04,umask={umask}"),
                );
                write(&r, &format!("{imc}/events/{ev}.scale"), "6.103515625e-5");
                write(&r, &format!("{imc}/events/{ev}.unit"), "MiB");
            }
        }
        write(&r, "uncore_imc_free_running_0/type", "20");
        write(
            &r,
            "uncore_imc_free_running_0/events/data_read",
            "event=0xff,umask=0x20",
        );
        write(
            &r,
            "uncore_imc_free_running_0/events/data_write",
            "event=0xff,umask=0x21",
        );
        write(&r, "uncore_imc_free_running_0/format/event", "config:0-7");
        write(&r, "uncore_imc_free_running_0/format/umask", "config:8-15");
        write(&r, "cpu/type", "4");
        let d = discover(&r);
        assert_eq!(d.unavailable(), None);
        assert_eq!(
            d.pmus,
            vec!["uncore_imc_0", "uncore_imc_1", "uncore_imc_free_running_0"]
        );
        // 2 channels × 2 events × 2 sockets.
        assert_eq!(d.events.len(), 8, "{:?}", d.events);
        let read0: Vec<&UncoreEvent> = d
            .events
            .iter()
            .filter(|e| e.name == "uncore_imc_0/cas_count_read/")
            .collect();
        assert_eq!(read0.iter().map(|e| e.cpu).collect::<Vec<_>>(), vec![0, 28]);
        assert_eq!(read0[0].kind, 15);
        assert_eq!(read0[0].config, 0x0304);
        assert!((read0[0].bytes_per_count - 64.0).abs() < 1e-9);
        assert!(d
            .events
            .iter()
            .any(|e| e.name == "uncore_imc_1/cas_count_write/" && e.config == 0x0c04));
        assert!(!d.events.iter().any(|e| e.pmu.contains("free_running")));
        let _ = std::fs::remove_dir_all(&r);
    }

    /// Free-running counters alone (no `uncore_imc_N` with CAS events) are
    /// used; a client's `uncore_imc` has `data_reads`/`data_writes`.
    #[test]
    fn intel_free_running_and_client_imc() {
        let r = tree("free");
        write(&r, "uncore_imc_free_running_0/type", "20");
        write(&r, "uncore_imc_free_running_0/format/event", "config:0-7");
        write(&r, "uncore_imc_free_running_0/format/umask", "config:8-15");
        write(
            &r,
            "uncore_imc_free_running_0/events/data_read",
            "event=0xff,umask=0x20",
        );
        write(
            &r,
            "uncore_imc_free_running_0/events/data_write",
            "event=0xff,umask=0x21",
        );
        let d = discover(&r);
        assert_eq!(d.events.len(), 2, "{d:?}");
        assert_eq!(d.events[0].config, 0x20ff);
        assert_eq!(d.events[0].cpu, 0, "no cpumask: CPU 0");
        assert_eq!(d.events[0].bytes_per_count, 64.0, "no scale: one line");
        let _ = std::fs::remove_dir_all(&r);

        let r = tree("client");
        write(&r, "uncore_imc/type", "14");
        write(&r, "uncore_imc/cpumask", "0");
        write(&r, "uncore_imc/format/event", "config:0-7");
        write(&r, "uncore_imc/events/data_reads", "event=0x01");
        write(&r, "uncore_imc/events/data_writes", "event=0x02");
        write(&r, "uncore_imc/events/data_reads.scale", "6.103515625e-5");
        write(&r, "uncore_imc/events/data_reads.unit", "MiB");
        let d = discover(&r);
        let names: Vec<&str> = d.events.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(
            names,
            vec!["uncore_imc/data_reads/", "uncore_imc/data_writes/"]
        );
        assert_eq!(d.events[1].config, 0x02);
        let _ = std::fs::remove_dir_all(&r);
    }

    /// AMD Zen 4: `amd_umc_0` with format event config:0-7 and rdwrmask
    /// config:8-9: reads are 0x0a | 1 << 8 = 0x10a, writes 0x0a | 2 << 8 =
    /// 0x20a, 64 B per CAS. `amd_df` is named and skipped with a reason.
    #[test]
    fn amd_umc_cas_commands_and_data_fabric() {
        let r = tree("amd");
        write(&r, "amd_umc_0/type", "23");
        write(&r, "amd_umc_0/cpumask", "0");
        write(&r, "amd_umc_0/format/event", "config:0-7");
        write(&r, "amd_umc_0/format/rdwrmask", "config:8-9");
        write(&r, "amd_df/type", "11");
        let d = discover(&r);
        assert_eq!(d.pmus, vec!["amd_df", "amd_umc_0"]);
        let cfg: Vec<(String, u64)> = d
            .events
            .iter()
            .map(|e| (e.name.clone(), e.config))
            .collect();
        assert_eq!(
            cfg,
            vec![
                ("amd_umc_0/event=0x0a,rdwrmask=0x1/".to_string(), 0x10a),
                ("amd_umc_0/event=0x0a,rdwrmask=0x2/".to_string(), 0x20a)
            ]
        );
        assert!(d.events.iter().all(|e| e.bytes_per_count == 64.0));
        assert!(d.skipped[0].contains("amd_df"), "{:?}", d.skipped);
        let _ = std::fs::remove_dir_all(&r);

        // amd_df alone: nothing usable, and the note says why.
        let r = tree("df");
        write(&r, "amd_df/type", "11");
        let d = discover(&r);
        let note = d.unavailable().unwrap();
        assert!(
            note.contains("not available on this machine")
                && note.contains("amd_df")
                && note.contains("falling back to the probe"),
            "{note}"
        );
        let _ = std::fs::remove_dir_all(&r);
    }

    /// No memory-controller PMU (this development VM: breakpoint, msr,
    /// software, tracepoint, uprobe), a PMU without its format files, a
    /// missing directory: no events, and the note says so; opening
    /// refuses with the same sentence.
    #[test]
    fn none_available() {
        let r = tree("none");
        for p in ["breakpoint", "msr", "software", "tracepoint", "uprobe"] {
            write(&r, &format!("{p}/type"), "1");
        }
        let d = discover(&r);
        assert!(d.events.is_empty() && d.pmus.is_empty());
        let note = d.unavailable().unwrap();
        assert!(
            note.contains("no uncore_imc*, amd_umc* or amd_df PMU"),
            "{note}"
        );
        let e = UncoreCounters::open(&d).err().unwrap();
        assert_eq!(e, note);
        write(&r, "amd_umc_0/type", "23");
        let d = discover(&r);
        assert!(d.events.is_empty());
        assert!(
            d.unavailable().unwrap().contains("format/event is missing"),
            "{d:?}"
        );
        let _ = std::fs::remove_dir_all(&r);
        assert_eq!(
            discover(Path::new("/nonexistent/devices")),
            Discovery::default()
        );
    }
}
