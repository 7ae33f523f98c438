//! `numa/sampler.json`: how the data-address samples of a recording were
//! taken (`contend record --numa`), and the NUMA part of a recording read
//! at once ([`read_numa_recording`]).

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::histogram::{read_page_samples, PageSamples};
use super::latency::{write_atomically, LatencyTable};
use super::{NumaFileError, LATENCY_FILE, NUMA_DIR, SAMPLER_FILE, SAMPLES_FILE};

/// How data addresses were sampled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum SamplingMethod {
    /// A CPU-time timer (`cpu-clock`) interrupts each thread every
    /// `period` ns; the instruction it stopped at is decoded and its memory
    /// operand computed from the thread's registers. Works without a PMU.
    #[default]
    Software,
    /// The PMU's load sampling (Intel PEBS `mem-loads`, AMD IBS op) gives
    /// the data address of every `period`-th qualifying load.
    Hardware,
}

/// What `period` counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum PeriodUnit {
    /// Nanoseconds of the thread's CPU time (software sampling): a sample
    /// stands for `period` ns spent at instructions touching its page.
    #[default]
    Ns,
    /// Hardware events (qualifying loads): a sample stands for `period`
    /// loads.
    Events,
}

/// `numa/sampler.json`: the sampler of a recording. Every field has a
/// default so that files of later versions with added fields still read.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct SamplerInfo {
    /// Software or hardware sampling.
    pub method: SamplingMethod,
    /// The event, as perf would name it (`cpu-clock`,
    /// `cpu/mem-loads,ldlat=30/`, `ibs_op//`).
    pub event: String,
    /// Sampling period, in `period_unit`.
    pub period: u64,
    /// What `period` counts.
    pub period_unit: PeriodUnit,
    /// Page size the addresses were rounded down to, bytes.
    pub page_size: u64,
    /// NUMA nodes of the machine (online).
    pub nodes: u32,
    /// Node of each CPU, by CPU number (`null`: unknown or offline).
    pub cpu_node: Vec<Option<u32>>,
    /// Samples taken in the target (user mode).
    pub samples: u64,
    /// Samples whose data address and page node were found: the rows of
    /// `samples.csv` add up to this.
    pub resolved: u64,
    /// Samples at an instruction without a memory operand (software
    /// method: arithmetic, branches).
    pub no_memory_operand: u64,
    /// Samples whose instruction could not be read or decoded.
    pub undecodable: u64,
    /// Samples whose instruction (the one before the interrupted address)
    /// wrote its own address register, as a pointer-chasing load does, so
    /// the sampled registers no longer give its address (software method).
    pub address_overwritten: u64,
    /// Samples addressing through `fs`/`gs` (thread-local storage), whose
    /// segment base the sample does not carry.
    pub segment_relative: u64,
    /// Samples whose page's node could not be found (not present, or the
    /// process had exited before it was asked).
    pub unresolved_page: u64,
    /// Samples the kernel dropped because the buffers were full.
    pub lost: u64,
    /// Processes sampled (the target and its descendants).
    pub processes: u32,
    /// CPU time of the sampler in the launcher, ns.
    pub sampler_cpu_ns: u64,
    /// Why this method, what fell back, what to keep in mind.
    pub notes: Vec<String>,
}

impl SamplerInfo {
    /// Writes `dir/numa/sampler.json` (pretty JSON, atomically).
    /// Errors: [`NumaFileError::Io`].
    pub fn write(&self, recording: &Path) -> Result<(), NumaFileError> {
        let mut json = serde_json::to_vec_pretty(self).expect("sampler info serialises");
        json.push(b'\n');
        write_atomically(&recording.join(NUMA_DIR).join(SAMPLER_FILE), &json)
    }

    /// Reads `dir/numa/sampler.json`. Errors: missing or unreadable
    /// ([`NumaFileError::Io`]), not JSON of this shape
    /// ([`NumaFileError::Json`]).
    pub fn read(recording: &Path) -> Result<SamplerInfo, NumaFileError> {
        let path = recording.join(NUMA_DIR).join(SAMPLER_FILE);
        let bytes = std::fs::read(&path).map_err(|source| NumaFileError::Io {
            path: path.clone(),
            source,
        })?;
        serde_json::from_slice(&bytes).map_err(|source| NumaFileError::Json {
            path,
            what: "sampler description (docs/numa.md)",
            source,
        })
    }
}

/// The NUMA part of a recording (`DIR/numa/`).
#[derive(Debug, Clone)]
pub struct NumaRecording {
    /// How the samples were taken.
    pub sampler: SamplerInfo,
    /// The samples, per process, page and node pair.
    pub samples: Vec<PageSamples>,
    /// The calibration stored with the recording, when one was given to
    /// `contend record --numa-latency`, or why it cannot be read.
    pub latency: Option<Result<LatencyTable, String>>,
}

/// Reads `dir/numa/`: `None` when the recording has no NUMA samples (no
/// `numa/` directory), else the samples or the first file that cannot be
/// read.
pub fn read_numa_recording(dir: &Path) -> Option<Result<NumaRecording, NumaFileError>> {
    let numa = dir.join(NUMA_DIR);
    if !numa.is_dir() {
        return None;
    }
    Some((|| {
        let sampler = SamplerInfo::read(dir)?;
        let samples = read_page_samples(&numa.join(SAMPLES_FILE))?;
        let latency_path = numa.join(LATENCY_FILE);
        let latency = latency_path
            .exists()
            .then(|| LatencyTable::read(&latency_path).map_err(|e| e.to_string()));
        Ok(NumaRecording {
            sampler,
            samples,
            latency,
        })
    })())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recording_without_numa_has_none_and_a_broken_one_says_which_file() {
        let d = tempfile::tempdir().unwrap();
        assert!(read_numa_recording(d.path()).is_none());
        std::fs::create_dir(d.path().join(NUMA_DIR)).unwrap();
        let e = read_numa_recording(d.path())
            .unwrap()
            .unwrap_err()
            .to_string();
        assert!(e.contains("sampler.json"), "{e}");
        let info = SamplerInfo {
            period: 250_000,
            samples: 3,
            resolved: 3,
            ..SamplerInfo::default()
        };
        info.write(d.path()).unwrap();
        std::fs::write(
            d.path().join("numa/samples.csv"),
            "pid,page,from_node,to_node,samples\n7,0x1000,0,0,3\n",
        )
        .unwrap();
        let r = read_numa_recording(d.path()).unwrap().unwrap();
        assert_eq!(r.sampler, info);
        assert_eq!(r.samples[0].samples, 3);
        assert!(r.latency.is_none());
    }
}
