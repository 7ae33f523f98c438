//! `contend record --hot-functions K`: which functions to probe, chosen as
//! Mosli Bouksiaa et al. (TPDS 2019, Section 5.2) chose them with `perf`:
//! the functions that take more than 1% of the program's time. The program
//! is run once first, unrecorded, under a CPU-clock profile
//! ([`crate::probes::SessionKind::Profile`]: a software event, so no
//! hardware PMU is needed, user code only, so `perf_event_paranoid` ≤ 2
//! suffices), every sampled instruction pointer is attributed to the
//! function symbol covering it in the file mapped there, and the K hottest
//! functions at or above [`HOT_SHARE`] are returned.
//!
//! Functions of the C library and the dynamic loader are left out: uprobes
//! are system-wide (see [`crate::probes`]), and a probe in `libc.so` would
//! trap in every program on the machine while recording.

use std::path::Path;

use contend_trace::probes::HotFunction;
use rustc_hash::FxHashMap;

use crate::functions::ModuleSymbols;
use crate::probes::SessionOutcome;

/// The share of the samples a function needs to be proposed (Section 5.2).
pub const HOT_SHARE: f64 = 0.01;

/// Sampling period of the profile, ns of CPU time (4 kHz).
pub const PROFILE_PERIOD_NS: u64 = 250_000;

/// The profile, attributed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HotProfile {
    /// Every function seen, hottest first.
    pub functions: Vec<HotFunction>,
    /// Samples in all.
    pub samples: u64,
    /// Samples in no known function (a stripped file, JIT code, the vDSO).
    pub unresolved: u64,
}

impl HotProfile {
    /// Attributes the samples of a profile session.
    pub fn from_outcome(o: &SessionOutcome) -> HotProfile {
        let mut modules: FxHashMap<String, ModuleSymbols> = FxHashMap::default();
        let mut by_fn: FxHashMap<(String, String), u64> = FxHashMap::default();
        let mut p = HotProfile::default();
        for (&(pid, ip), &n) in &o.samples {
            p.samples += n;
            // The latest mapping of that process covering the address.
            let m = o
                .mappings
                .iter()
                .rev()
                .find(|m| m.pid == pid && ip >= m.start && ip < m.start + m.len);
            let Some(m) = m.filter(|m| m.path.starts_with('/')) else {
                p.unresolved += n;
                continue;
            };
            let syms = modules
                .entry(m.path.clone())
                .or_insert_with(|| ModuleSymbols::read(Path::new(&m.path)));
            match syms.covering_offset(ip - m.start + m.pgoff) {
                Some(f) => *by_fn.entry((f.name.clone(), m.path.clone())).or_default() += n,
                None => p.unresolved += n,
            }
        }
        let total = p.samples.max(1) as f64;
        p.functions = by_fn
            .into_iter()
            .map(|((function, module), samples)| HotFunction {
                function,
                module,
                samples,
                share: samples as f64 / total,
            })
            .collect();
        p.functions
            .sort_by(|a, b| b.samples.cmp(&a.samples).then(a.function.cmp(&b.function)));
        p
    }

    /// The `k` hottest functions at or above [`HOT_SHARE`] that may be
    /// probed (not in the C library or the loader).
    pub fn choose(&self, k: usize) -> Vec<&HotFunction> {
        self.functions
            .iter()
            .filter(|f| f.share >= HOT_SHARE && !is_system_library(&f.module))
            .take(k)
            .collect()
    }
}

/// The C library and the dynamic loader, where a system-wide uprobe would
/// slow down every program.
pub fn is_system_library(module: &str) -> bool {
    let name = Path::new(module)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    name.starts_with("libc.so")
        || name.starts_with("libc-")
        || name.starts_with("ld-linux")
        || name.starts_with("libpthread")
        || name.starts_with("libm.so")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probes::ExecMapping;

    #[test]
    fn samples_are_attributed_to_the_function_of_the_mapped_file() {
        // This test binary itself: find one of its functions, pretend it
        // is mapped at 0x1000_0000 (offset 0) and sampled 90 times, and
        // an address of no mapping 10 times.
        let exe = std::env::current_exe().unwrap();
        let syms = ModuleSymbols::read(&exe);
        let f = syms
            .functions
            .iter()
            .find(|f| f.size > 16 && f.file_offset > 0)
            .expect("a sized function")
            .clone();
        let mut o = SessionOutcome::default();
        o.mappings.push(ExecMapping {
            pid: 7,
            start: 0x1000_0000,
            len: 1 << 40,
            pgoff: 0,
            path: exe.to_string_lossy().into_owned(),
            prot: libc::PROT_EXEC as u32,
            ino: 0,
        });
        o.samples.insert((7, 0x1000_0000 + f.file_offset + 4), 90);
        o.samples.insert((7, 0x10), 10);
        let p = HotProfile::from_outcome(&o);
        assert_eq!(p.samples, 100);
        assert_eq!(p.unresolved, 10);
        assert_eq!(p.functions[0].samples, 90);
        assert!((p.functions[0].share - 0.9).abs() < 1e-12);
        assert_eq!(p.choose(5).len(), 1);
        assert!(is_system_library("/lib/x86_64-linux-gnu/libc.so.6"));
        assert!(!is_system_library("/lib/x86_64-linux-gnu/libz.so.1"));
    }
}
