//! A scale directory: the recordings of one `contend scale` experiment and
//! its manifest `<dir>/scale.json`.
//!
//! `contend scale --threads 2,4 --repeat 5 -o DIR -- CMD … {threads} …` runs
//! the command once per (thread count m, core count n, repeat) and, with
//! `--stress K`, once more with the memory contention generator beside it.
//! Each run is an ordinary recording (`meta.json`, `service.csamp`, lock
//! traces) in a subdirectory; the manifest lists them so that the speed-up
//! model (Venter 2016, Sections 3.1.1 and 3.2.2.1, Eq. 3.1–3.8) can find
//! C(1), C(m), T(1), T(m) without guessing from directory names.
//!
//! The runner that makes the runs is `contend_record::scale_run`; the
//! memory contention generator is `contend_record::stress`; the speed-up
//! model that reads them is `contend::speedup`.
//!
//! The manifest is written after every run (to a temporary file renamed
//! over `scale.json`), so an experiment cut short still describes the runs
//! it finished. Reading is lenient like `meta.json`: every field has a
//! default, unknown fields are ignored, fields are only ever added.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// File name of the manifest inside a scale directory.
pub const SCALE_FILE: &str = "scale.json";

/// Version of the `scale.json` layout this crate writes and reads.
pub const SCALE_FORMAT_VERSION: u32 = 1;

/// The manifest of a scale directory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct ScaleManifest {
    /// Layout version ([`SCALE_FORMAT_VERSION`]).
    pub format_version: u32,
    /// Version of the `contend` tool that ran the experiment.
    pub tool_version: String,
    /// The command template as given, `{threads}` not yet substituted.
    pub command: Vec<String>,
    /// The thread counts m asked for, in the order given.
    pub threads: Vec<u32>,
    /// Repeats per (m, n) configuration.
    pub repeat: u32,
    /// Threads of the memory contention generator run beside each
    /// experiment (`--stress K`), `None` without.
    pub stress_threads: Option<u32>,
    /// CPUs the experiment could use (the launcher's affinity), ascending.
    pub cpus_available: Vec<u32>,
    /// Sockets (packages) of the machine.
    pub sockets: u32,
    /// Cores per socket c (the thesis's "cores per node").
    pub cores_per_socket: u32,
    /// Unix time the experiment started, s.
    pub started_unix_s: f64,
    /// True once every planned run has been made.
    pub complete: bool,
    /// The runs made so far, in the order they ran.
    pub runs: Vec<ScaleRun>,
    /// Runs planned in all (added in 0.1 after the first layout; 0 in
    /// manifests that predate it).
    pub planned_runs: u32,
    /// Why the experiment stopped before all planned runs were made (the
    /// user interrupted it, or a run could not be started); `None` while it
    /// runs and when it completed.
    pub stopped: Option<String>,
    /// Warnings about the whole experiment (e.g. more threads than CPUs),
    /// one sentence each.
    pub warnings: Vec<String>,
}

/// One run of a scale experiment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct ScaleRun {
    /// Threads m the program was asked to use (`{threads}`,
    /// `OMP_NUM_THREADS`).
    pub m: u32,
    /// Cores n it was pinned to.
    pub n: u32,
    /// Repeat index, 0-based.
    pub repeat: u32,
    /// The memory contention generator ran beside it.
    pub stress: bool,
    /// The CPUs it was pinned to.
    pub cpus: Vec<u32>,
    /// Its recording directory, relative to the scale directory.
    pub dir: String,
    /// The command with `{threads}` substituted.
    pub command: Vec<String>,
    /// Exit code of the program, `None` if a signal ended it.
    pub exit_code: Option<i32>,
    /// The signal that ended it, if any.
    pub signal: Option<i32>,
    /// Wall time of the program T(m) on n cores, s (from the launcher).
    pub wall_s: f64,
    /// Bandwidth the memory contention generator reached during this run,
    /// bytes/s; `None` without `stress`.
    pub stress_bandwidth_bytes_per_s: Option<f64>,
    /// The CPUs of the memory contention generator's threads (empty
    /// without `stress`). CPUs also in `cpus` were shared with the program.
    pub stress_cpus: Vec<u32>,
    /// Warnings of this run (placement, recorder), one sentence each.
    pub warnings: Vec<String>,
}

/// Errors reading or writing a scale manifest; every message names the file.
#[derive(Debug, thiserror::Error)]
pub enum ScaleError {
    /// The file could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The file is not a manifest this version understands.
    #[error("{}: {problem}", path.display())]
    Format {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        problem: String,
    },
}

impl ScaleManifest {
    /// True when `dir` holds a `scale.json`, i.e. is a scale directory
    /// rather than a single recording.
    pub fn is_scale_dir(dir: &Path) -> bool {
        dir.join(SCALE_FILE).is_file()
    }

    /// Reads `<dir>/scale.json`.
    ///
    /// Errors: [`ScaleError::Io`] when it cannot be read,
    /// [`ScaleError::Format`] when it is not JSON of this shape or has a
    /// newer `format_version`.
    pub fn read(dir: &Path) -> Result<ScaleManifest, ScaleError> {
        let path = dir.join(SCALE_FILE);
        let text = fs::read_to_string(&path).map_err(|source| ScaleError::Io {
            path: path.clone(),
            source,
        })?;
        let m: ScaleManifest = serde_json::from_str(&text).map_err(|e| ScaleError::Format {
            path: path.clone(),
            problem: format!("not a scale manifest: {e}"),
        })?;
        if m.format_version > SCALE_FORMAT_VERSION {
            return Err(ScaleError::Format {
                path,
                problem: format!(
                    "format version {} is newer than this contend understands ({}); upgrade contend",
                    m.format_version, SCALE_FORMAT_VERSION
                ),
            });
        }
        Ok(m)
    }

    /// Writes `<dir>/scale.json` atomically (temporary file, then rename).
    ///
    /// Errors: [`ScaleError::Io`] naming the file.
    pub fn write(&self, dir: &Path) -> Result<(), ScaleError> {
        let path = dir.join(SCALE_FILE);
        let tmp = dir.join(format!(".{SCALE_FILE}.tmp"));
        let io = |source| ScaleError::Io {
            path: path.clone(),
            source,
        };
        let text = serde_json::to_string_pretty(self).map_err(|e| ScaleError::Format {
            path: path.clone(),
            problem: e.to_string(),
        })?;
        let mut f = fs::File::create(&tmp).map_err(io)?;
        f.write_all(text.as_bytes()).map_err(io)?;
        f.write_all(b"\n").map_err(io)?;
        f.sync_all().map_err(io)?;
        fs::rename(&tmp, &path).map_err(io)?;
        Ok(())
    }

    /// The runs with `m` threads on `n` cores, with or without the stress
    /// generator, in repeat order.
    pub fn runs_for(&self, m: u32, n: u32, stress: bool) -> Vec<&ScaleRun> {
        let mut v: Vec<&ScaleRun> = self
            .runs
            .iter()
            .filter(|r| r.m == m && r.n == n && r.stress == stress)
            .collect();
        v.sort_by_key(|r| r.repeat);
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manifest_round_trips_and_selects_runs() {
        let dir = tempfile::tempdir().unwrap();
        let mut m = ScaleManifest {
            format_version: SCALE_FORMAT_VERSION,
            threads: vec![2],
            repeat: 2,
            ..Default::default()
        };
        for (n, rep) in [(1, 1), (2, 0), (1, 0)] {
            m.runs.push(ScaleRun {
                m: 2,
                n,
                repeat: rep,
                dir: format!("m2-n{n}-r{rep}"),
                wall_s: 1.5,
                ..Default::default()
            });
        }
        m.write(dir.path()).unwrap();
        assert!(ScaleManifest::is_scale_dir(dir.path()));
        let back = ScaleManifest::read(dir.path()).unwrap();
        assert_eq!(back, m);
        let ones: Vec<u32> = back
            .runs_for(2, 1, false)
            .iter()
            .map(|r| r.repeat)
            .collect();
        assert_eq!(ones, vec![0, 1]);
        assert!(back.runs_for(2, 1, true).is_empty());
    }

    #[test]
    fn newer_version_and_garbage_are_named_errors() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join(SCALE_FILE), "{\"format_version\": 99}").unwrap();
        let e = ScaleManifest::read(dir.path()).unwrap_err().to_string();
        assert!(e.contains("scale.json") && e.contains("newer"), "{e}");
        fs::write(dir.path().join(SCALE_FILE), "not json").unwrap();
        let e = ScaleManifest::read(dir.path()).unwrap_err().to_string();
        assert!(
            e.contains("scale.json") && e.contains("not a scale manifest"),
            "{e}"
        );
    }
}
