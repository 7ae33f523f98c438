//! `contend.toml`: report defaults and event filters (the thesis's
//! mutexTool.conf, Venter 2016, Section 3.2.2.2), so a filter set can be
//! kept with a project. Flags on the command line override the file.
//!
//! ```toml
//! [report]
//! format = "text"      # text | markdown | latex | csv | json
//! top = 20             # rows per table, 0 = all
//!
//! [filter]
//! min_duration = "10us"   # event duration (wait + hold) at least
//! max_duration = "1s"     # ... at most; integers are ns
//! locks = ["queue_lock", "0x55d0c0a04040"]
//! sites = "dequeue|enqueue"   # regular expression on the call site
//! threads = [4242]
//! critical_only = false
//!
//! [mpi]
//! threshold_p2p = "5ms"          # late sender/receiver waits at least
//! threshold_collective = "5ms"   # collective waits at least
//!
//! [meters]                       # `contend meters` (docs/meters.md)
//! interval = "1ms"
//! window = "100ms"
//! calibration = "meters-calibration.json"
//! triggers = { memory_latency = { high = 250.0, low = 200.0 } }
//! ```

use std::path::{Path, PathBuf};

use serde::Deserialize;

/// Errors reading a configuration file; messages name the file.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The file is not valid TOML or has a wrong key or value.
    #[error("{}: {message}", path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong, with the line where the parser knows it.
        message: String,
    },
}

/// The whole file.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// `[report]`.
    #[serde(default)]
    pub report: ReportConfig,
    /// `[filter]`.
    #[serde(default)]
    pub filter: FilterConfig,
    /// `[mpi]`: wait-state thresholds.
    #[serde(default)]
    pub mpi: MpiConfig,
    /// `[meters]`: defaults of `contend meters` (flags override them).
    #[serde(default)]
    pub meters: MetersConfig,
}

/// `[meters]` of `contend.toml`: defaults of `contend meters` and
/// `contend record --meters` (docs/meters.md; Fowler et al. 2011,
/// "RCRDaemon": adjustable short-term averages and two trigger levels
/// per meter).
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct MetersConfig {
    /// Probe interval (`"1ms"`; integers are ns).
    pub interval: Option<DurationValue>,
    /// Short-term window of averages, minima, maxima and triggers.
    pub window: Option<DurationValue>,
    /// Calibration file of `contend meters calibrate`.
    pub calibration: Option<PathBuf>,
    /// Blackboard name (`/dev/shm/NAME`) or path.
    pub blackboard: Option<String>,
    /// Trigger levels by meter name, in the meter's unit.
    #[serde(default)]
    pub triggers: std::collections::BTreeMap<String, TriggerLevels>,
}

/// The two trigger levels of one meter, in its unit: the short-term
/// average reaching `high` sets the trigger, falling to `low` clears it.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TriggerLevels {
    /// High level.
    pub high: f64,
    /// Low level (at most `high`).
    pub low: f64,
}

/// `[mpi]` section: thresholds of the MPI wait-state report (the thesis's
/// MPITool.conf, Venter 2016, Section 3.2.2.3); waits shorter than the
/// threshold are not counted as wait states. Strings with a unit or
/// integers in ns.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct MpiConfig {
    /// Threshold of late sender and late receiver.
    pub threshold_p2p: Option<DurationValue>,
    /// Threshold of the collective patterns.
    pub threshold_collective: Option<DurationValue>,
}

/// `[report]` section.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ReportConfig {
    /// Output format name.
    pub format: Option<String>,
    /// Rows per table (0 = all).
    pub top: Option<usize>,
}

/// `[filter]` section; durations are strings with a unit or integers in ns.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct FilterConfig {
    /// Minimum event duration.
    pub min_duration: Option<DurationValue>,
    /// Maximum event duration.
    pub max_duration: Option<DurationValue>,
    /// Lock names or addresses.
    #[serde(default)]
    pub locks: Vec<String>,
    /// Regular expression on call sites.
    pub sites: Option<String>,
    /// Thread ids.
    #[serde(default)]
    pub threads: Vec<u32>,
    /// Only events on the critical path.
    #[serde(default)]
    pub critical_only: bool,
}

/// A duration in a config file: `"10us"` or an integer number of ns.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(untagged)]
pub enum DurationValue {
    /// Nanoseconds.
    Nanoseconds(u64),
    /// Text with a unit.
    Text(String),
}

impl DurationValue {
    /// The value in ns.
    ///
    /// Errors: a text that is not a duration ([`parse_duration`]).
    pub fn to_ns(&self) -> Result<u64, DurationError> {
        match self {
            DurationValue::Nanoseconds(n) => Ok(*n),
            DurationValue::Text(s) => parse_duration_ns(s),
        }
    }
}

impl Config {
    /// Reads `path`. Errors name the file and the problem.
    pub fn read(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Self::parse(path, &text)
    }

    /// Parses `text` as if read from `path` (for messages).
    pub fn parse(path: &Path, text: &str) -> Result<Config, ConfigError> {
        let invalid = |message: String| ConfigError::Invalid {
            path: path.to_path_buf(),
            message,
        };
        let cfg: Config = toml::from_str(text).map_err(|e| invalid(e.to_string()))?;
        for d in [
            &cfg.filter.min_duration,
            &cfg.filter.max_duration,
            &cfg.mpi.threshold_p2p,
            &cfg.mpi.threshold_collective,
            &cfg.meters.interval,
            &cfg.meters.window,
        ]
        .into_iter()
        .flatten()
        {
            d.to_ns().map_err(|e| invalid(e.to_string()))?;
        }
        if let Some(re) = &cfg.filter.sites {
            regex::Regex::new(re).map_err(|e| invalid(format!("filter.sites: {e}")))?;
        }
        Ok(cfg)
    }

    /// Finds `contend.toml` in the recording directory, else in the
    /// current directory; `None` when neither exists.
    pub fn discover(recording: &Path) -> Option<PathBuf> {
        [
            recording.join("contend.toml"),
            PathBuf::from("contend.toml"),
        ]
        .into_iter()
        .find(|p| p.is_file())
    }
}

/// A text that is not a duration.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    /// No number where the duration should start.
    #[error("`{0}` is not a duration (give seconds, 0.5, or a number with a unit: 250ns, 10us, 1.5ms, 2s, 5min)")]
    NotANumber(String),
    /// A number with a unit this parser does not know.
    #[error(
        "`{text}`: unknown unit `{unit}` (use ns, us, ms, s, min or h; a bare number is seconds)"
    )]
    UnknownUnit {
        /// The text given.
        text: String,
        /// The unit found.
        unit: String,
    },
}

/// Parses a duration: a number of seconds (`10`, `0.5`) or a number with a
/// unit: `250ns`, `10us` (or `µs`), `1.5ms`, `2s`, `5min` (or `m`), `1h`.
/// The one parser of every duration flag (`--duration`, `--interval`,
/// `--min-duration`, `--threshold-p2p`, …) and of the duration strings in
/// `contend.toml`: a bare number always means seconds.
///
/// Errors: [`DurationError`], saying what is expected.
pub fn parse_duration(s: &str) -> Result<std::time::Duration, DurationError> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let value: f64 = num
        .parse()
        .map_err(|_| DurationError::NotANumber(s.to_string()))?;
    let seconds = match unit.trim() {
        "" | "s" => 1.0,
        "ns" => 1e-9,
        "us" | "µs" => 1e-6,
        "ms" => 1e-3,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        other => {
            return Err(DurationError::UnknownUnit {
                text: s.to_string(),
                unit: other.to_string(),
            })
        }
    };
    // Whole nanoseconds, computed without the rounding error of seconds as
    // a float for the small units.
    let ns = (value * seconds * 1e9).round();
    if !ns.is_finite() || ns > u64::MAX as f64 {
        return Err(DurationError::NotANumber(s.to_string()));
    }
    Ok(std::time::Duration::from_nanos(ns as u64))
}

/// [`parse_duration`] in whole nanoseconds.
///
/// Errors: as [`parse_duration`].
pub fn parse_duration_ns(s: &str) -> Result<u64, DurationError> {
    parse_duration(s).map(|d| d.as_nanos().min(u128::from(u64::MAX)) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        // A bare number is seconds, everywhere (it once meant ns here and
        // seconds in `stress --duration`).
        assert_eq!(parse_duration_ns("250").unwrap(), 250_000_000_000);
        assert_eq!(parse_duration_ns("0.5").unwrap(), 500_000_000);
        assert_eq!(parse_duration_ns("250ns").unwrap(), 250);
        assert_eq!(parse_duration_ns("5min").unwrap(), 300_000_000_000);
        assert_eq!(parse_duration_ns("10us").unwrap(), 10_000);
        assert_eq!(parse_duration_ns("1.5ms").unwrap(), 1_500_000);
        assert_eq!(parse_duration_ns(" 2s ").unwrap(), 2_000_000_000);
        assert!(parse_duration_ns("5 parsecs")
            .unwrap_err()
            .to_string()
            .contains("unknown unit"));
        assert!(parse_duration_ns("fast").is_err());
    }

    #[test]
    fn config_file() {
        let p = Path::new("contend.toml");
        let c = Config::parse(
            p,
            "[report]\nformat = \"json\"\n[filter]\nmin_duration = \"10us\"\nmax_duration = 5000\nlocks = [\"q\"]\nsites = \"deq\"\n",
        )
        .unwrap();
        assert_eq!(c.report.format.as_deref(), Some("json"));
        assert_eq!(c.filter.min_duration.unwrap().to_ns().unwrap(), 10_000);
        assert_eq!(c.filter.max_duration.unwrap().to_ns().unwrap(), 5_000);
        let e = Config::parse(p, "[filter]\nmin_duraton = 5\n").unwrap_err();
        assert!(e.to_string().contains("contend.toml"), "{e}");
        assert!(e.to_string().contains("min_duraton"), "{e}");
        let c = Config::parse(
            p,
            "[mpi]\nthreshold_p2p = \"5ms\"\nthreshold_collective = 2000\n",
        )
        .unwrap();
        assert_eq!(c.mpi.threshold_p2p.unwrap().to_ns().unwrap(), 5_000_000);
        assert_eq!(c.mpi.threshold_collective.unwrap().to_ns().unwrap(), 2_000);
        let e = Config::parse(p, "[mpi]\nthreshold_p2p = \"5 parsecs\"\n").unwrap_err();
        assert!(e.to_string().contains("parsecs"), "{e}");
        let e = Config::parse(p, "[filter]\nsites = \"(\"\n").unwrap_err();
        assert!(e.to_string().contains("filter.sites"), "{e}");
    }
}
