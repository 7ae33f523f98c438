//! The plan of an experiment: the machine's CPUs in the order runs use
//! them ([`Topology`]), the runs in the order they are made
//! ([`plan`], [`PlannedRun`]), the `{threads}` substitution, the
//! `--threads` list, and where the memory contention generator goes.

use std::fs;

use super::{ScaleOptions, ScaleRunError, THREADS_PLACEHOLDER};
use crate::cpus::format_cpu_list;
use crate::stress;

/// CPUs of the machine as the runner places runs on them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Topology {
    /// CPUs allowed to the launcher, in placement order (see
    /// [`Topology::order`]).
    pub order: Vec<u32>,
    /// Sockets (physical packages) among the online CPUs.
    pub sockets: u32,
    /// Physical cores per socket c (the largest socket's), among the online
    /// CPUs.
    pub cores_per_socket: u32,
}

/// One CPU's place: (cpu, socket, core id within the socket).
pub type CpuPlace = (u32, u32, u32);

impl Topology {
    /// Reads `/sys/devices/system/cpu/cpu*/topology/{physical_package_id,
    /// core_id}` for the online CPUs (missing files: socket 0, core = CPU
    /// number) and orders the CPUs allowed to this process.
    pub fn read() -> Topology {
        let online = crate::cpus::online_cpu_list();
        let allowed = stress::allowed_cpus();
        let read = |cpu: u32, f: &str| -> Option<u32> {
            fs::read_to_string(format!("/sys/devices/system/cpu/cpu{cpu}/topology/{f}"))
                .ok()?
                .trim()
                .parse::<i64>()
                .ok()
                .map(|v| v.max(0) as u32)
        };
        let places: Vec<CpuPlace> = online
            .iter()
            .map(|&c| {
                (
                    c,
                    read(c, "physical_package_id").unwrap_or(0),
                    read(c, "core_id").unwrap_or(c),
                )
            })
            .collect();
        Topology::from_places(&places, &allowed)
    }

    /// The topology of the CPUs `places` (online CPUs with their socket and
    /// core), of which `allowed` may be used: sockets and cores per socket
    /// count all of `places`; `order` lists the allowed CPUs socket by
    /// socket (ascending socket number), within a socket first one CPU of
    /// every physical core (ascending core id), then the second
    /// hyper-thread of every core, and so on.
    pub fn from_places(places: &[CpuPlace], allowed: &[u32]) -> Topology {
        let mut sockets: Vec<u32> = places.iter().map(|p| p.1).collect();
        sockets.sort_unstable();
        sockets.dedup();
        let cores_per_socket = sockets
            .iter()
            .map(|&s| {
                let mut cores: Vec<u32> = places.iter().filter(|p| p.1 == s).map(|p| p.2).collect();
                cores.sort_unstable();
                cores.dedup();
                cores.len() as u32
            })
            .max()
            .unwrap_or(1);
        // Rank of each CPU among the hyper-threads of its core.
        let mut keyed: Vec<(u32, u32, u32, u32)> = places
            .iter()
            .filter(|p| allowed.contains(&p.0))
            .map(|&(cpu, socket, core)| {
                let rank = places
                    .iter()
                    .filter(|q| q.1 == socket && q.2 == core && q.0 < cpu)
                    .count() as u32;
                (socket, rank, core, cpu)
            })
            .collect();
        keyed.sort_unstable();
        Topology {
            order: keyed.into_iter().map(|k| k.3).collect(),
            sockets: sockets.len().max(1) as u32,
            cores_per_socket: cores_per_socket.max(1),
        }
    }

    /// The core counts n to run m threads on: 1, and min(m, CPUs
    /// available); and c when there is more than one socket and
    /// 1 < c < min(m, CPUs). Ascending, without repeats.
    pub fn core_counts(&self, m: u32) -> Vec<u32> {
        let top = m.min(self.order.len() as u32).max(1);
        let mut v = vec![1, top];
        let c = self.cores_per_socket;
        if self.sockets > 1 && m > c && c > 1 && c < top {
            v.push(c);
        }
        v.sort_unstable();
        v.dedup();
        v
    }
}

/// One run the experiment will make.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedRun {
    /// Threads m.
    pub m: u32,
    /// Cores n.
    pub n: u32,
    /// Repeat index, 0-based.
    pub repeat: u32,
    /// The twin run with the memory contention generator.
    pub stress: bool,
    /// The CPUs the program is pinned to.
    pub cpus: Vec<u32>,
    /// The CPUs of the generator's threads (empty without `stress`).
    pub stress_cpus: Vec<u32>,
    /// Run directory name, `m{m}-n{n}-r{repeat}[-stress]`.
    pub dir: String,
    /// The command with `{threads}` replaced.
    pub command: Vec<String>,
    /// Warnings about this run's placement.
    pub warnings: Vec<String>,
}

/// `command` with every `{threads}` (also inside a word) replaced by `m`.
pub fn substitute(command: &[String], m: u32) -> Vec<String> {
    command
        .iter()
        .map(|w| w.replace(THREADS_PLACEHOLDER, &m.to_string()))
        .collect()
}

/// A `--threads` list that cannot be used. Messages name the bad entry.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ThreadListError {
    /// Nothing but spaces.
    #[error("give at least one thread count, e.g. --threads 2,4,8")]
    Empty,
    /// Two commas in a row, or one at an end.
    #[error("empty entry in `{0}`")]
    EmptyEntry(String),
    /// An entry that is not a whole number.
    #[error("`{0}` is not a thread count (a whole number ≥ 1)")]
    NotANumber(String),
    /// 0 threads.
    #[error("a thread count must be at least 1 (got 0)")]
    Zero,
    /// The same count twice.
    #[error("thread count {0} is given twice")]
    Repeated(u32),
}

/// Parses a `--threads` list, `2,4,8` (spaces allowed around entries).
/// Errors name the bad entry; 0, repeats and an empty list are refused.
pub fn parse_thread_list(text: &str) -> Result<Vec<u32>, ThreadListError> {
    let mut v = Vec::new();
    if text.trim().is_empty() {
        return Err(ThreadListError::Empty);
    }
    for part in text.split(',') {
        let p = part.trim();
        if p.is_empty() {
            return Err(ThreadListError::EmptyEntry(text.to_string()));
        }
        let m: u32 = p
            .parse()
            .map_err(|_| ThreadListError::NotANumber(p.to_string()))?;
        if m == 0 {
            return Err(ThreadListError::Zero);
        }
        if v.contains(&m) {
            return Err(ThreadListError::Repeated(m));
        }
        v.push(m);
    }
    Ok(v)
}

pub(crate) fn check_threads(threads: &[u32]) -> Result<(), ScaleRunError> {
    if threads.is_empty() {
        return Err(ScaleRunError::NoThreads);
    }
    for (i, &m) in threads.iter().enumerate() {
        if m == 0 {
            return Err(ScaleRunError::ZeroThreads);
        }
        if threads[..i].contains(&m) {
            return Err(ScaleRunError::DuplicateThreads(m));
        }
    }
    Ok(())
}

/// The runs of an experiment, in the order they are made (see the `plan`
/// module's documentation), and warnings about the whole plan.
pub fn plan(opts: &ScaleOptions, topo: &Topology) -> (Vec<PlannedRun>, Vec<String>) {
    let mut warnings = Vec::new();
    let avail = topo.order.len() as u32;
    for &m in &opts.threads {
        if m > avail {
            warnings.push(format!(
                "{m} threads but only {avail} CPU(s) available ({}): the m = {m} runs use \
                 n = {avail} cores, so the threads share cores",
                format_cpu_list(&sorted(&topo.order))
            ));
        }
    }
    if !opts.command.iter().any(|w| w.contains(THREADS_PLACEHOLDER)) {
        warnings.push(
            "the command has no {threads}: only OMP_NUM_THREADS tells it the thread count"
                .to_string(),
        );
    }
    let mut runs = Vec::new();
    for repeat in 0..opts.repeat {
        for &m in &opts.threads {
            for n in topo.core_counts(m) {
                let cpus = sorted(&topo.order[..n as usize]);
                let command = substitute(&opts.command, m);
                let name = format!("m{m}-n{n}-r{repeat}");
                runs.push(PlannedRun {
                    m,
                    n,
                    repeat,
                    stress: false,
                    cpus: cpus.clone(),
                    stress_cpus: Vec::new(),
                    dir: name.clone(),
                    command: command.clone(),
                    warnings: Vec::new(),
                });
                if let Some(k) = opts.stress_threads {
                    let (stress_cpus, w) = stress_placement(&topo.order, &cpus, k);
                    runs.push(PlannedRun {
                        m,
                        n,
                        repeat,
                        stress: true,
                        cpus,
                        stress_cpus,
                        dir: format!("{name}-stress"),
                        command,
                        warnings: w.into_iter().collect(),
                    });
                }
            }
        }
    }
    (runs, warnings)
}

pub(crate) fn sorted(cpus: &[u32]) -> Vec<u32> {
    let mut v = cpus.to_vec();
    v.sort_unstable();
    v
}

/// CPUs for `k` generator threads beside a target on `target`: the CPUs of
/// `order` the target does not use, in order; where fewer than `k` are
/// free, the target's own, from the last one back (cycling), with a
/// warning.
pub fn stress_placement(order: &[u32], target: &[u32], k: u32) -> (Vec<u32>, Option<String>) {
    let free: Vec<u32> = order
        .iter()
        .copied()
        .filter(|c| !target.contains(c))
        .collect();
    let k = k as usize;
    if free.len() >= k {
        return (free[..k].to_vec(), None);
    }
    let mut cpus = free.clone();
    let mut shared: Vec<u32> = target.iter().rev().copied().collect();
    if shared.is_empty() {
        shared = order.to_vec();
    }
    let mut i = 0;
    while cpus.len() < k {
        cpus.push(shared[i % shared.len()]);
        i += 1;
    }
    let on_target: Vec<u32> = sorted(&cpus[free.len()..]);
    let mut on_target_unique = on_target.clone();
    on_target_unique.dedup();
    let warning = format!(
        "only {} CPU(s) free of the program (on {}): {} of the {} generator thread(s) share \
         CPU {} with it, so the program also loses CPU time to the generator, not only memory \
         bandwidth",
        free.len(),
        format_cpu_list(target),
        k - free.len(),
        k,
        format_cpu_list(&on_target_unique)
    );
    (cpus, Some(warning))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scale_run::{run_scale, NoScaleProgress, ScaleOptions};

    fn topo(places: &[CpuPlace]) -> Topology {
        let all: Vec<u32> = places.iter().map(|p| p.0).collect();
        Topology::from_places(places, &all)
    }

    #[test]
    fn threads_are_substituted_everywhere() {
        let cmd: Vec<String> = [
            "xz",
            "-T{threads}",
            "{threads}",
            "a{threads}b{threads}",
            "x",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(substitute(&cmd, 4), vec!["xz", "-T4", "4", "a4b4", "x"]);
    }

    #[test]
    fn thread_lists_parse_with_clear_errors() {
        assert_eq!(parse_thread_list("2,4, 8").unwrap(), vec![2, 4, 8]);
        assert!(parse_thread_list("")
            .unwrap_err()
            .to_string()
            .contains("at least one"));
        assert!(parse_thread_list("2,,4")
            .unwrap_err()
            .to_string()
            .contains("empty entry"));
        assert!(parse_thread_list("2,x")
            .unwrap_err()
            .to_string()
            .contains("`x` is not"));
        assert!(parse_thread_list("0")
            .unwrap_err()
            .to_string()
            .contains("at least 1"));
        assert!(parse_thread_list("2,2")
            .unwrap_err()
            .to_string()
            .contains("given twice"));
    }

    /// Two sockets of two cores with two hyper-threads each; CPU numbers
    /// interleave sockets as many BIOSes number them.
    #[test]
    fn cpus_are_ordered_socket_first_then_physical_cores() {
        let places = [
            (0, 0, 0),
            (1, 1, 0),
            (2, 0, 1),
            (3, 1, 1),
            (4, 0, 0),
            (5, 1, 0),
            (6, 0, 1),
            (7, 1, 1),
        ];
        let t = topo(&places);
        assert_eq!(t.sockets, 2);
        assert_eq!(t.cores_per_socket, 2);
        assert_eq!(t.order, vec![0, 2, 4, 6, 1, 3, 5, 7]);
        // Only CPUs allowed are placed.
        let t = Topology::from_places(&places, &[1, 2, 3]);
        assert_eq!(t.order, vec![2, 1, 3]);
    }

    #[test]
    fn core_counts_add_one_socket_only_on_numa_machines() {
        let two_sockets = topo(&[(0, 0, 0), (1, 0, 1), (2, 1, 0), (3, 1, 1)]);
        assert_eq!(two_sockets.core_counts(1), vec![1]);
        assert_eq!(two_sockets.core_counts(2), vec![1, 2]);
        assert_eq!(two_sockets.core_counts(4), vec![1, 2, 4]);
        assert_eq!(two_sockets.core_counts(8), vec![1, 2, 4]);
        let one_socket = topo(&[(0, 0, 0), (1, 0, 1)]);
        assert_eq!(one_socket.core_counts(2), vec![1, 2]);
        assert_eq!(one_socket.core_counts(4), vec![1, 2]);
    }

    #[test]
    fn plan_interleaves_repeats_and_names_runs() {
        let t = topo(&[(0, 0, 0), (1, 0, 1)]);
        let opts = ScaleOptions {
            threads: vec![2, 1, 4],
            repeat: 2,
            command: vec!["prog".into(), "-t{threads}".into()],
            stress_threads: Some(1),
            ..ScaleOptions::default()
        };
        let (runs, warnings) = plan(&opts, &t);
        let names: Vec<&str> = runs.iter().map(|r| r.dir.as_str()).collect();
        assert_eq!(
            names,
            vec![
                "m2-n1-r0",
                "m2-n1-r0-stress",
                "m2-n2-r0",
                "m2-n2-r0-stress",
                "m1-n1-r0",
                "m1-n1-r0-stress",
                "m4-n1-r0",
                "m4-n1-r0-stress",
                "m4-n2-r0",
                "m4-n2-r0-stress",
                "m2-n1-r1",
                "m2-n1-r1-stress",
                "m2-n2-r1",
                "m2-n2-r1-stress",
                "m1-n1-r1",
                "m1-n1-r1-stress",
                "m4-n1-r1",
                "m4-n1-r1-stress",
                "m4-n2-r1",
                "m4-n2-r1-stress",
            ]
        );
        assert_eq!(runs[6].command, vec!["prog", "-t4"]);
        assert_eq!(runs[0].cpus, vec![0]);
        assert_eq!(runs[1].stress_cpus, vec![1]);
        assert!(runs[1].warnings.is_empty());
        assert_eq!(runs[2].cpus, vec![0, 1]);
        // Nothing free on 2 of 2 CPUs: shares the last, with a warning.
        assert_eq!(runs[3].stress_cpus, vec![1]);
        assert!(runs[3].warnings[0].contains("share CPU 1"), "{:?}", runs[3]);
        assert!(warnings.iter().any(|w| w.contains("4 threads but only 2")));
    }

    #[test]
    fn stress_takes_free_cpus_first() {
        assert_eq!(stress_placement(&[0, 1, 2, 3], &[0], 2), (vec![1, 2], None));
        let (cpus, w) = stress_placement(&[0, 1, 2], &[0, 1], 3);
        assert_eq!(cpus, vec![2, 1, 0]);
        assert!(w
            .unwrap()
            .contains("2 of the 3 generator thread(s) share CPU 0-1"));
    }

    #[test]
    fn bad_options_fail_before_anything_is_created() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("s");
        let base = ScaleOptions {
            output: out.clone(),
            threads: vec![2],
            command: vec!["true".into()],
            ..ScaleOptions::default()
        };
        let cases: Vec<(ScaleOptions, &str)> = vec![
            (
                ScaleOptions {
                    threads: vec![],
                    ..base.clone()
                },
                "at least one thread count",
            ),
            (
                ScaleOptions {
                    threads: vec![0],
                    ..base.clone()
                },
                "at least 1",
            ),
            (
                ScaleOptions {
                    repeat: 0,
                    ..base.clone()
                },
                "--repeat",
            ),
            (
                ScaleOptions {
                    stress_threads: Some(0),
                    ..base.clone()
                },
                "--stress",
            ),
            (
                ScaleOptions {
                    command: vec![],
                    ..base.clone()
                },
                "no command",
            ),
            (
                ScaleOptions {
                    command: vec!["contend-no-such-program-{threads}".into()],
                    ..base.clone()
                },
                "command not found: contend-no-such-program-2",
            ),
        ];
        for (opts, want) in cases {
            let e = run_scale(&opts, &NoScaleProgress).unwrap_err().to_string();
            assert!(e.contains(want), "{e} lacks {want}");
            assert!(!out.exists());
        }
        fs::create_dir(&out).unwrap();
        fs::write(out.join("keep"), "x").unwrap();
        let e = run_scale(&base, &NoScaleProgress).unwrap_err().to_string();
        assert!(e.contains("already exists"), "{e}");
        let e = run_scale(
            &ScaleOptions {
                force: true,
                ..base.clone()
            },
            &NoScaleProgress,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("not a scale directory"), "{e}");
        assert!(out.join("keep").exists());
    }
}
