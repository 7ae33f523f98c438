//! CPU lists (`0,2-3`), the online CPUs, affinity masks and the placement
//! of a target on chosen CPUs (`contend record --cpus/--cores`).

use std::fs;

use crate::host::online_cpus;
use crate::launch::RecordError;

/// A CPU list that cannot be used. Messages name the offending part.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CpuListError {
    /// Nothing but spaces.
    #[error("the list is empty")]
    Empty,
    /// Two commas in a row, or one at an end.
    #[error("empty entry in `{0}`")]
    EmptyEntry(String),
    /// An entry that is not a number.
    #[error("`{0}` is not a CPU number")]
    NotANumber(String),
    /// A CPU number the affinity mask cannot hold.
    #[error("CPU {cpu} is out of range (at most {max})")]
    OutOfRange {
        /// The number given.
        cpu: u32,
        /// The largest CPU number.
        max: u32,
    },
    /// `b-a` with b > a.
    #[error("range `{0}` runs backwards")]
    Backwards(String),
    /// `--cores 0`.
    #[error("--cores: at least one core is needed")]
    NoCores,
    /// More cores asked for than are online.
    #[error("--cores {asked}: only {online} CPU(s) are online ({list})")]
    TooManyCores {
        /// Cores asked for.
        asked: u32,
        /// CPUs online.
        online: usize,
        /// The online CPUs, `0-3` form.
        list: String,
    },
}

/// Parses a CPU list as the kernel prints one (`0`, `0-3`, `0,2-3`):
/// comma-separated CPU numbers and inclusive ranges, in any order; the
/// result is sorted and without repeats. Errors name the offending part
/// (empty list or part, not a number, a range that runs backwards, a CPU
/// number of 1024 or more).
pub fn parse_cpu_list(text: &str) -> Result<Vec<u32>, CpuListError> {
    let max = 8 * std::mem::size_of::<libc::cpu_set_t>() as u32;
    let number = |s: &str| -> Result<u32, CpuListError> {
        let s = s.trim();
        let n: u32 = s
            .parse()
            .map_err(|_| CpuListError::NotANumber(s.to_string()))?;
        if n >= max {
            return Err(CpuListError::OutOfRange {
                cpu: n,
                max: max - 1,
            });
        }
        Ok(n)
    };
    if text.trim().is_empty() {
        return Err(CpuListError::Empty);
    }
    let mut cpus = Vec::new();
    for part in text.split(',') {
        if part.trim().is_empty() {
            return Err(CpuListError::EmptyEntry(text.to_string()));
        }
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (number(a)?, number(b)?);
                if a > b {
                    return Err(CpuListError::Backwards(part.trim().to_string()));
                }
                cpus.extend(a..=b);
            }
            None => cpus.push(number(part)?),
        }
    }
    cpus.sort_unstable();
    cpus.dedup();
    Ok(cpus)
}

/// A CPU list in the kernel's short form, ranges joined: `[0, 1, 2, 5]` →
/// `0-2,5`.
pub fn format_cpu_list(cpus: &[u32]) -> String {
    let mut out = String::new();
    let mut i = 0;
    while i < cpus.len() {
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
            j += 1;
        }
        if !out.is_empty() {
            out.push(',');
        }
        if j > i {
            out.push_str(&format!("{}-{}", cpus[i], cpus[j]));
        } else {
            out.push_str(&cpus[i].to_string());
        }
        i = j + 1;
    }
    out
}

/// The online CPUs, from `/sys/devices/system/cpu/online`; where that
/// cannot be read, CPUs 0 to `_SC_NPROCESSORS_ONLN` − 1.
pub fn online_cpu_list() -> Vec<u32> {
    fs::read_to_string("/sys/devices/system/cpu/online")
        .ok()
        .and_then(|t| parse_cpu_list(t.trim()).ok())
        .unwrap_or_else(|| (0..online_cpus()).collect())
}

/// The first `n` online CPUs (`--cores N`). Errors when `n` is 0 or more
/// than are online.
pub fn first_online_cpus(n: u32) -> Result<Vec<u32>, CpuListError> {
    let online = online_cpu_list();
    if n == 0 {
        return Err(CpuListError::NoCores);
    }
    if n as usize > online.len() {
        return Err(CpuListError::TooManyCores {
            asked: n,
            online: online.len(),
            list: format_cpu_list(&online),
        });
    }
    Ok(online[..n as usize].to_vec())
}

/// The affinity mask of process `pid` as a sorted CPU list; `None` when it
/// cannot be read.
pub fn affinity(pid: u32) -> Option<Vec<u32>> {
    // SAFETY: sched_getaffinity fills the zeroed set it is given.
    let set = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(
            pid as libc::pid_t,
            std::mem::size_of::<libc::cpu_set_t>(),
            &mut set,
        ) != 0
        {
            return None;
        }
        set
    };
    let max = 8 * std::mem::size_of::<libc::cpu_set_t>();
    // SAFETY: CPU_ISSET reads within the set for i < its size in bits.
    Some(
        (0..max)
            .filter(|&i| unsafe { libc::CPU_ISSET(i, &set) })
            .map(|i| i as u32)
            .collect(),
    )
}

/// Checks a CPU list for pinning (not empty, every CPU online and in the
/// launcher's own affinity mask) and builds its `cpu_set_t`.
pub(crate) fn placement_set(cpus: &[u32]) -> Result<libc::cpu_set_t, RecordError> {
    let err = |problem: String| RecordError::InvalidCpus {
        cpus: format_cpu_list(cpus),
        problem,
    };
    if cpus.is_empty() {
        return Err(err("no CPU given".into()));
    }
    let online = online_cpu_list();
    let offline: Vec<u32> = cpus
        .iter()
        .copied()
        .filter(|c| !online.contains(c))
        .collect();
    if !offline.is_empty() {
        return Err(err(format!(
            "CPU {} not online (online: {})",
            format_cpu_list(&offline),
            format_cpu_list(&online)
        )));
    }
    if let Some(mine) = affinity(0) {
        let denied: Vec<u32> = cpus.iter().copied().filter(|c| !mine.contains(c)).collect();
        if !denied.is_empty() {
            return Err(err(format!(
                "CPU {} not allowed to contend itself (its affinity: {})",
                format_cpu_list(&denied),
                format_cpu_list(&mine)
            )));
        }
    }
    let max = 8 * std::mem::size_of::<libc::cpu_set_t>() as u32;
    // SAFETY: a zeroed cpu_set_t is empty; CPU_SET stays within it for
    // c < its size in bits.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &c in cpus.iter().filter(|&&c| c < max) {
            libc::CPU_SET(c as usize, &mut set);
        }
        Ok(set)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists() {
        assert_eq!(parse_cpu_list("0"), Ok(vec![0]));
        assert_eq!(parse_cpu_list("0-1"), Ok(vec![0, 1]));
        assert_eq!(parse_cpu_list("3,0,2-3"), Ok(vec![0, 2, 3]));
        assert_eq!(parse_cpu_list(" 1 - 2 "), Ok(vec![1, 2]));
        for bad in ["", "a", "1-0", "0,", ",1", "1-", "-1", "0-1-2", "5000"] {
            assert!(parse_cpu_list(bad).is_err(), "{bad:?}");
        }
        assert!(parse_cpu_list("1-0")
            .unwrap_err()
            .to_string()
            .contains("backwards"));
        assert!(parse_cpu_list("x").unwrap_err().to_string().contains("`x`"));
        assert_eq!(format_cpu_list(&[0, 1, 2, 5, 7, 8]), "0-2,5,7-8");
        assert_eq!(format_cpu_list(&[]), "");
        let online = online_cpu_list();
        assert!(!online.is_empty());
        assert_eq!(first_online_cpus(1), Ok(vec![online[0]]));
        assert!(first_online_cpus(0).is_err());
        assert!(first_online_cpus(online.len() as u32 + 1)
            .unwrap_err()
            .to_string()
            .contains("online"));
        let e = placement_set(&[1000]).unwrap_err().to_string();
        assert!(e.contains("CPU 1000 not online"), "{e}");
        assert!(placement_set(&online).is_ok());
        assert_eq!(affinity(0).map(|a| a.is_empty()), Some(false));
    }
}
