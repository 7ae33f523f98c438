//! Hardware data-address sampling where the PMU has it: Intel's PEBS load
//! sampling (`cpu/mem-loads/`, with a load-latency threshold) and AMD's
//! IBS op sampling (`ibs_op//`), found in sysfs
//! (`/sys/bus/event_source/devices`) as perf finds them, and the node of a
//! physical address from the memory blocks of
//! `/sys/devices/system/memory` (for `PERF_SAMPLE_PHYS_ADDR`).
//!
//! On a machine without them (a virtual machine without a virtual PMU, as
//! the development machine of contend) [`find_event`] says why, and the
//! sampler uses the software method.

use std::path::Path;

/// The PMU devices directory.
pub const DEVICES: &str = "/sys/bus/event_source/devices";
/// The memory blocks directory.
pub const MEMORY: &str = "/sys/devices/system/memory";
/// Minimum load latency of a sampled load on Intel, cycles: loads that
/// missed the first cache levels (memory accesses, which is what the model
/// counts), not every load.
pub const LDLAT_CYCLES: u64 = 30;

/// A hardware sampling event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PmuEvent {
    /// As perf names it (`cpu/mem-loads,ldlat=30/`).
    pub name: String,
    /// `perf_event_attr.type` (the PMU's `type` file).
    pub kind: u32,
    /// `perf_event_attr.config`.
    pub config: u64,
    /// `perf_event_attr.config1`.
    pub config1: u64,
    /// `precise_ip` to ask for.
    pub precise_ip: u8,
}

fn read(p: &Path) -> Option<String> {
    std::fs::read_to_string(p)
        .ok()
        .map(|s| s.trim().to_string())
}

/// Sets `value` into the bits a sysfs format string names (`config:0-7`,
/// `config1:0-15`, `config:8-15,32`; the kernel's
/// `/sys/bus/event_source/devices/<pmu>/format/<term>` files): returns
/// which `perf_event_attr` config word (0, 1, 2) and the word with the
/// bits set, the value's low bits in the first range, the next ones in
/// the next. `None` for another word or a string that is not a bit list.
pub fn encode(format: &str, value: u64) -> Option<(usize, u64)> {
    let (word, ranges) = format.split_once(':')?;
    let word = match word {
        "config" => 0,
        "config1" => 1,
        "config2" => 2,
        _ => return None,
    };
    let mut out = 0u64;
    let mut v = value;
    for r in ranges.split(',') {
        let (lo, hi) = match r.split_once('-') {
            Some((a, b)) => (a.parse::<u32>().ok()?, b.parse::<u32>().ok()?),
            None => {
                let b = r.parse::<u32>().ok()?;
                (b, b)
            }
        };
        if hi < lo || hi > 63 {
            return None;
        }
        let width = hi - lo + 1;
        let mask = if width == 64 {
            u64::MAX
        } else {
            (1u64 << width) - 1
        };
        out |= (v & mask) << lo;
        v = if width == 64 { 0 } else { v >> width };
    }
    Some((word, out))
}

/// An event of PMU `pmu` from its `events/<name>` term list
/// (`event=0xcd,umask=0x1,ldlat=3`), with the terms in `overrides`
/// replaced.
fn event_from_terms(
    devices: &Path,
    pmu: &str,
    name: &str,
    overrides: &[(&str, u64)],
) -> Result<PmuEvent, String> {
    let dir = devices.join(pmu);
    let kind: u32 = read(&dir.join("type"))
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("{}/type is missing", dir.display()))?;
    let terms = read(&dir.join("events").join(name))
        .ok_or_else(|| format!("{}/events/{name} is missing", dir.display()))?;
    let mut config = [0u64; 3];
    let mut seen = Vec::new();
    for term in terms.split(',').map(str::trim).filter(|t| !t.is_empty()) {
        let (key, val) = term.split_once('=').unwrap_or((term, "1"));
        let val = overrides
            .iter()
            .find(|o| o.0 == key)
            .map(|o| o.1)
            .or_else(|| {
                val.strip_prefix("0x")
                    .map_or_else(|| val.parse().ok(), |h| u64::from_str_radix(h, 16).ok())
            });
        let val = val.ok_or_else(|| format!("{pmu}/events/{name}: cannot read `{term}`"))?;
        let format = read(&dir.join("format").join(key))
            .ok_or_else(|| format!("{pmu}/format/{key} is missing"))?;
        let (w, bits) = encode(&format, val)
            .ok_or_else(|| format!("{pmu}/format/{key}: cannot read `{format}`"))?;
        config[w] |= bits;
        seen.push(key.to_string());
    }
    for (key, val) in overrides {
        if !seen.iter().any(|s| s == key) {
            if let Some(format) = read(&dir.join("format").join(key)) {
                if let Some((w, bits)) = encode(&format, *val) {
                    config[w] |= bits;
                }
            }
        }
    }
    let extra: Vec<String> = overrides.iter().map(|(k, v)| format!(",{k}={v}")).collect();
    Ok(PmuEvent {
        name: format!("{pmu}/{name}{}/", extra.concat()),
        kind,
        config: config[0],
        config1: config[1],
        precise_ip: 0,
    })
}

/// The hardware event to sample data addresses with, from the PMU
/// devices directory `devices` (normally [`DEVICES`]): Intel `mem-loads`
/// (on `cpu`, or `cpu_core` of hybrid parts) with `ldlat` =
/// [`LDLAT_CYCLES`], else AMD `ibs_op`.
///
/// Errors: why neither exists, as a sentence.
pub fn find_event(devices: &Path) -> Result<PmuEvent, String> {
    for pmu in ["cpu", "cpu_core"] {
        if devices.join(pmu).join("events/mem-loads").exists() {
            let mut e = event_from_terms(devices, pmu, "mem-loads", &[("ldlat", LDLAT_CYCLES)])?;
            e.precise_ip = 2;
            return Ok(e);
        }
    }
    if let Some(kind) = read(&devices.join("ibs_op/type")).and_then(|s| s.parse().ok()) {
        return Ok(PmuEvent {
            name: "ibs_op//".into(),
            kind,
            config: 0,
            config1: 0,
            precise_ip: 0,
        });
    }
    let present: Vec<String> = std::fs::read_dir(devices)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    Err(format!(
        "no hardware load sampling: {} has no cpu/events/mem-loads (Intel PEBS) and no ibs_op (AMD IBS); PMUs present: {}",
        devices.display(),
        if present.is_empty() { "none".to_string() } else { present.join(", ") }
    ))
}

/// Physical memory blocks and their nodes, for `PERF_SAMPLE_PHYS_ADDR`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PhysMap {
    block: u64,
    /// (block number, node), sorted.
    blocks: Vec<(u64, u32)>,
}

impl PhysMap {
    /// Reads the memory blocks of `dir` (normally [`MEMORY`]); empty when
    /// it cannot be read.
    pub fn read(dir: &Path) -> PhysMap {
        let Some(block) =
            read(&dir.join("block_size_bytes")).and_then(|s| u64::from_str_radix(&s, 16).ok())
        else {
            return PhysMap::default();
        };
        let mut blocks = Vec::new();
        if let Ok(rd) = std::fs::read_dir(dir) {
            for e in rd.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                let Some(n) = name
                    .strip_prefix("memory")
                    .and_then(|n| n.parse::<u64>().ok())
                else {
                    continue;
                };
                let node = std::fs::read_dir(e.path()).ok().and_then(|rd| {
                    rd.flatten().find_map(|f| {
                        f.file_name()
                            .to_string_lossy()
                            .strip_prefix("node")
                            .and_then(|x| x.parse::<u32>().ok())
                    })
                });
                if let Some(node) = node {
                    blocks.push((n, node));
                }
            }
        }
        blocks.sort_unstable();
        PhysMap { block, blocks }
    }

    /// The node of physical address `phys`, when a block holds it.
    pub fn node(&self, phys: u64) -> Option<u32> {
        if self.block == 0 || phys == 0 {
            return None;
        }
        let b = phys / self.block;
        self.blocks
            .binary_search_by_key(&b, |x| x.0)
            .ok()
            .map(|i| self.blocks[i].1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &Path, p: &str, s: &str) {
        let path = root.join(p);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, s).unwrap();
    }

    #[test]
    fn format_bits() {
        assert_eq!(encode("config:0-7", 0xcd), Some((0, 0xcd)));
        assert_eq!(encode("config:8-15", 0x1), Some((0, 0x100)));
        assert_eq!(encode("config1:0-15", 30), Some((1, 30)));
        // A split field: the low 8 bits at 0-7, the next 4 at 32-35.
        assert_eq!(
            encode("config:0-7,32-35", 0x1ab),
            Some((0, 0xab | (1 << 32)))
        );
        assert_eq!(encode("bogus:0-7", 1), None);
    }

    /// An Intel PMU as sysfs shows it: mem-loads is event 0xcd umask 1
    /// with the latency threshold in config1.
    #[test]
    fn intel_mem_loads() {
        let d = tempfile::tempdir().unwrap();
        let r = d.path();
        write(r, "cpu/type", "4\n");
        write(r, "cpu/events/mem-loads", "event=0xcd,umask=0x1,ldlat=3\n");
        write(r, "cpu/format/event", "config:0-7\n");
        write(r, "cpu/format/umask", "config:8-15\n");
        write(r, "cpu/format/ldlat", "config1:0-15\n");
        let e = find_event(r).unwrap();
        assert_eq!(e.kind, 4);
        assert_eq!(e.config, 0x1cd);
        assert_eq!(e.config1, LDLAT_CYCLES);
        assert_eq!(e.precise_ip, 2);
        assert_eq!(e.name, "cpu/mem-loads,ldlat=30/");
    }

    #[test]
    fn amd_ibs_and_none() {
        let d = tempfile::tempdir().unwrap();
        write(d.path(), "ibs_op/type", "11\n");
        write(d.path(), "software/type", "1\n");
        let e = find_event(d.path()).unwrap();
        assert_eq!((e.kind, e.name.as_str()), (11, "ibs_op//"));
        let d = tempfile::tempdir().unwrap();
        write(d.path(), "software/type", "1\n");
        let why = find_event(d.path()).unwrap_err();
        assert!(
            why.contains("no hardware load sampling") && why.contains("software"),
            "{why}"
        );
    }

    #[test]
    fn physical_blocks_to_nodes() {
        let d = tempfile::tempdir().unwrap();
        write(d.path(), "block_size_bytes", "8000000\n");
        write(d.path(), "memory0/node0/x", "");
        write(d.path(), "memory1/node0/x", "");
        write(d.path(), "memory32/node1/x", "");
        let m = PhysMap::read(d.path());
        assert_eq!(m.node(0x100), Some(0));
        assert_eq!(m.node(0x8000000 + 5), Some(0));
        assert_eq!(m.node(32 * 0x8000000 + 9), Some(1));
        assert_eq!(m.node(5 * 0x8000000), None);
    }
}
