//! The calibration curve: memory bandwidth as a function of the probe's
//! memory latency on this machine (`contend meters calibrate`), so that a
//! machine without memory-controller counters still gets a bandwidth
//! meter (Fowler et al. 2011, "Resource Centric Reflection Calibration":
//! a memory concurrency load generator run at known intensities).
//!
//! [`calibrate`] runs the pointer-chasing probe on one CPU and the memory
//! contention generator (`contend stress memory`,
//! `contend_record::stress`) on the others at several intensities (the
//! share of time its threads stream, [`MemoryStress::set_intensity`]),
//! each held for a while, the whole sequence repeated: per intensity the
//! probe's mean latency of the undisturbed samples and the generator's
//! own bandwidth (bytes read + written per second over the same time).
//! The points, sorted by bandwidth, with the latencies made
//! non-decreasing (pool-adjacent-violators), are the curve; the daemon
//! estimates bandwidth from a latency by linear interpolation between
//! them ([`Calibration::bandwidth_for`]), the bandwidth of the first
//! point below it and of the last above it.
//!
//! The bandwidth estimated is the one the generator would need to raise
//! the latency that much: the memory traffic of everything else on the
//! machine above what ran while calibrating. The curve is only as good as
//! the latency's response: [`Calibration::notes`] says when the latency
//! rose too little for the estimate to mean much.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use contend_record::stress::{MemoryStress, StressOptions};
use serde::{Deserialize, Serialize};

use crate::probe::{ProbeConfig, ProbeRunner, DEFAULT_LOADS};

/// Version of the calibration file format.
pub const CALIBRATION_VERSION: u32 = 1;

/// One point of the curve.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CalibrationPoint {
    /// Generator intensity (share of time streaming), 0 to 1.
    pub intensity: f64,
    /// The generator's bandwidth, bytes read + written per second.
    pub bandwidth_bytes_per_s: f64,
    /// The probe's mean latency, ns.
    pub latency_ns: f64,
    /// Undisturbed probe samples in it.
    pub samples: u64,
}

/// A calibration file (JSON).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    /// [`CALIBRATION_VERSION`].
    pub version: u32,
    /// Host it was measured on.
    pub host: String,
    /// CPU model.
    pub cpu_model: String,
    /// The probe's CPU.
    pub probe_cpu: u32,
    /// The generator's CPUs.
    pub generator_cpus: Vec<u32>,
    /// How the probe measured (the daemon measures the same way).
    pub probe: ProbeConfig,
    /// Interval of the probe while calibrating, ns.
    pub interval_ns: u64,
    /// Every point measured, in measuring order.
    pub measured: Vec<CalibrationPoint>,
    /// The curve: points averaged per intensity, by bandwidth, latency
    /// non-decreasing.
    pub curve: Vec<CalibrationPoint>,
    /// Things to know about this curve, one sentence each.
    pub notes: Vec<String>,
}

/// Errors reading, writing or measuring a calibration; each names the
/// file or what failed.
#[derive(Debug, thiserror::Error)]
pub enum CalibrationError {
    /// The file does not exist.
    #[error("calibration file {}: does not exist; run `contend meters calibrate -o {}` first (or leave out --calibration: the bandwidth and concurrency meters are then absent)", path.display(), path.display())]
    Missing {
        /// The file.
        path: PathBuf,
    },
    /// The file cannot be read or written.
    #[error("calibration file {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// The file is not a calibration of this version.
    #[error("calibration file {}: {problem}", path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        problem: String,
    },
    /// Measuring failed.
    #[error("calibration: {0}")]
    Measure(String),
}

/// What to measure.
#[derive(Debug, Clone)]
pub struct CalibrateOptions {
    /// The probe's CPU.
    pub probe_cpu: u32,
    /// The generator's CPUs (one thread each).
    pub generator_cpus: Vec<u32>,
    /// Intensities, each in [0, 1].
    pub intensities: Vec<f64>,
    /// Time per intensity and round.
    pub hold: Duration,
    /// Rounds over all intensities.
    pub rounds: u32,
    /// The probe.
    pub probe: ProbeConfig,
    /// The probe's interval.
    pub interval: Duration,
    /// Generator buffer per thread, bytes (`None`: its default).
    pub buffer_bytes: Option<u64>,
}

impl Calibration {
    /// Reads a calibration file.
    ///
    /// Errors: [`CalibrationError::Missing`], [`CalibrationError::Io`],
    /// [`CalibrationError::Invalid`] (not JSON of this version, no curve,
    /// or measured with a probe of another `loads` than
    /// [`DEFAULT_LOADS`]: the daemon measures the way the curve was
    /// measured, so an older file of 64 or 32 loads is refused with a
    /// request to calibrate again).
    pub fn read(path: &Path) -> Result<Calibration, CalibrationError> {
        let text = std::fs::read_to_string(path).map_err(|source| {
            if source.kind() == std::io::ErrorKind::NotFound {
                CalibrationError::Missing {
                    path: path.to_path_buf(),
                }
            } else {
                CalibrationError::Io {
                    path: path.to_path_buf(),
                    source,
                }
            }
        })?;
        let c: Calibration =
            serde_json::from_str(&text).map_err(|e| CalibrationError::Invalid {
                path: path.to_path_buf(),
                problem: format!("not a calibration file: {e}"),
            })?;
        if c.version != CALIBRATION_VERSION {
            return Err(CalibrationError::Invalid {
                path: path.to_path_buf(),
                problem: format!(
                    "version {}, this contend reads version {CALIBRATION_VERSION}; calibrate again",
                    c.version
                ),
            });
        }
        if c.probe.loads != DEFAULT_LOADS {
            // The latency per load of a sample depends a little on how
            // many loads share its clock reads; a curve is only valid for
            // the probe that measured it.
            return Err(CalibrationError::Invalid {
                path: path.to_path_buf(),
                problem: format!(
                    "measured with {} loads per probe sample, this contend's probe takes {DEFAULT_LOADS}; \
                     its latencies are not comparable: calibrate again (contend meters calibrate -o {})",
                    c.probe.loads,
                    path.display()
                ),
            });
        }
        if c.curve.len() < 2 {
            return Err(CalibrationError::Invalid {
                path: path.to_path_buf(),
                problem: "fewer than two points on the curve".into(),
            });
        }
        Ok(c)
    }

    /// Writes it as JSON (creating the parent directory).
    ///
    /// Errors: [`CalibrationError::Io`].
    pub fn write(&self, path: &Path) -> Result<(), CalibrationError> {
        let io = |source| CalibrationError::Io {
            path: path.to_path_buf(),
            source,
        };
        if let Some(p) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(p).map_err(io)?;
        }
        let text = serde_json::to_string_pretty(self).expect("serialisable");
        std::fs::write(path, text + "\n").map_err(io)
    }

    /// The latency with the generator paused (the curve's first point), ns.
    pub fn idle_latency_ns(&self) -> f64 {
        self.curve.first().map_or(f64::NAN, |p| p.latency_ns)
    }

    /// The largest bandwidth calibrated, bytes/s.
    pub fn max_bandwidth(&self) -> f64 {
        self.curve
            .last()
            .map_or(f64::NAN, |p| p.bandwidth_bytes_per_s)
    }

    /// The latency on the curve at `bandwidth`, ns (interpolated).
    pub fn latency_for(&self, bandwidth: f64) -> f64 {
        interpolate(
            self.curve
                .iter()
                .map(|p| (p.bandwidth_bytes_per_s, p.latency_ns)),
            bandwidth,
        )
    }

    /// The bandwidth that goes with probe latency `latency_ns`, bytes/s:
    /// linear between the curve's points; a latency below the first point
    /// gives its bandwidth, above the last the last's (saturated).
    pub fn bandwidth_for(&self, latency_ns: f64) -> f64 {
        interpolate(
            self.curve
                .iter()
                .map(|p| (p.latency_ns, p.bandwidth_bytes_per_s)),
            latency_ns,
        )
    }
}

/// Piecewise-linear y(x) through points with non-decreasing x; flat
/// outside. Where x repeats, the first point's y.
fn interpolate(points: impl Iterator<Item = (f64, f64)>, x: f64) -> f64 {
    let pts: Vec<(f64, f64)> = points.collect();
    let Some(&(x0, y0)) = pts.first() else {
        return f64::NAN;
    };
    if x <= x0 {
        return y0;
    }
    for w in pts.windows(2) {
        let ((xa, ya), (xb, yb)) = (w[0], w[1]);
        if x <= xb {
            if xb <= xa {
                return ya;
            }
            return ya + (yb - ya) * (x - xa) / (xb - xa);
        }
    }
    pts.last().map_or(f64::NAN, |p| p.1)
}

/// Averages the measured points per intensity, sorts them by bandwidth and
/// makes the latency non-decreasing (pool-adjacent-violators, weighted by
/// samples).
pub fn fit_curve(measured: &[CalibrationPoint]) -> Vec<CalibrationPoint> {
    let mut by: Vec<CalibrationPoint> = Vec::new();
    for p in measured.iter().filter(|p| p.samples > 0) {
        match by
            .iter_mut()
            .find(|q| (q.intensity - p.intensity).abs() < 1e-9)
        {
            Some(q) => {
                let n = (q.samples + p.samples) as f64;
                let (a, b) = (q.samples as f64 / n, p.samples as f64 / n);
                q.latency_ns = a * q.latency_ns + b * p.latency_ns;
                q.bandwidth_bytes_per_s = (q.bandwidth_bytes_per_s + p.bandwidth_bytes_per_s) / 2.0;
                q.samples += p.samples;
            }
            None => by.push(*p),
        }
    }
    by.sort_by(|a, b| a.bandwidth_bytes_per_s.total_cmp(&b.bandwidth_bytes_per_s));
    // Pool adjacent violators on latency.
    let mut blocks: Vec<(f64, f64, usize)> = Vec::new(); // (weighted sum, weight, count)
    for p in &by {
        blocks.push((p.latency_ns * p.samples as f64, p.samples as f64, 1));
        while blocks.len() > 1 {
            let n = blocks.len();
            let (s1, w1, c1) = blocks[n - 2];
            let (s2, w2, c2) = blocks[n - 1];
            if s1 / w1 <= s2 / w2 {
                break;
            }
            blocks.truncate(n - 2);
            blocks.push((s1 + s2, w1 + w2, c1 + c2));
        }
    }
    let mut out = by.clone();
    let mut i = 0;
    for (s, w, c) in blocks {
        for p in &mut out[i..i + c] {
            p.latency_ns = s / w;
        }
        i += c;
    }
    out
}

/// Measures a calibration (see the module documentation). `progress` is
/// told each intensity as it starts.
///
/// Errors: the probe or the generator cannot start
/// ([`CalibrationError::Measure`]).
pub fn calibrate(
    opts: &CalibrateOptions,
    progress: &mut dyn FnMut(&str),
) -> Result<Calibration, CalibrationError> {
    if opts.generator_cpus.is_empty() {
        return Err(CalibrationError::Measure(
            "no CPU left for the generator beside the probe's: calibrating needs at least two CPUs"
                .into(),
        ));
    }
    if opts.intensities.len() < 2 {
        return Err(CalibrationError::Measure(
            "at least two intensities are needed".into(),
        ));
    }
    let probe = ProbeRunner::start(opts.probe_cpu, opts.probe, opts.interval)
        .map_err(|e| CalibrationError::Measure(e.to_string()))?;
    let gen = MemoryStress::start(&StressOptions {
        threads: opts.generator_cpus.len() as u32,
        cpus: Some(opts.generator_cpus.clone()),
        buffer_bytes: opts.buffer_bytes,
    })
    .map_err(|e| CalibrationError::Measure(format!("memory contention generator: {e}")))?;
    let mut measured = Vec::new();
    for round in 0..opts.rounds.max(1) {
        for &x in &opts.intensities {
            progress(&format!(
                "round {}/{}: intensity {:.2}",
                round + 1,
                opts.rounds.max(1),
                x
            ));
            gen.set_intensity(x);
            std::thread::sleep(Duration::from_millis(100));
            let _ = probe.take();
            let (b0, t0) = (gen.bytes_so_far(), Instant::now());
            std::thread::sleep(opts.hold);
            let st = probe.take();
            let (b1, dt) = (gen.bytes_so_far(), t0.elapsed().as_secs_f64());
            if let Some(lat) = st.mean() {
                measured.push(CalibrationPoint {
                    intensity: x,
                    bandwidth_bytes_per_s: b1.saturating_sub(b0) as f64 / dt,
                    latency_ns: lat,
                    samples: st.samples,
                });
            }
        }
    }
    drop(gen.stop());
    drop(probe);
    let curve = fit_curve(&measured);
    let mut notes = Vec::new();
    if curve.len() < 2 {
        return Err(CalibrationError::Measure(
            "the probe took no undisturbed sample".into(),
        ));
    }
    let (lo, hi) = (curve[0].latency_ns, curve[curve.len() - 1].latency_ns);
    let rise = (hi - lo) / lo;
    if rise < 0.05 {
        notes.push(format!(
            "the probe's latency rose only {:.1}% from the idle point to full bandwidth: on this machine \
             the latency responds little to memory traffic, and the bandwidth estimated from it is \
             unreliable",
            100.0 * rise
        ));
    }
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .unwrap_or_default()
        .trim()
        .to_string();
    Ok(Calibration {
        version: CALIBRATION_VERSION,
        host,
        cpu_model: contend_record::host::cpu_model(),
        probe_cpu: opts.probe_cpu,
        generator_cpus: opts.generator_cpus.clone(),
        probe: opts.probe,
        interval_ns: opts.interval.as_nanos() as u64,
        measured,
        curve,
        notes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pt(i: f64, bw: f64, lat: f64) -> CalibrationPoint {
        CalibrationPoint {
            intensity: i,
            bandwidth_bytes_per_s: bw,
            latency_ns: lat,
            samples: 10,
        }
    }

    /// By hand: points (0 B/s, 100 ns), (4 GB/s, 120 ns), (8 GB/s, 160 ns).
    /// 110 ns lies halfway between the first two → 2 GB/s; 140 ns halfway
    /// between the last two → 6 GB/s; below 100 ns → 0; above 160 → 8 GB/s.
    #[test]
    fn bandwidth_is_interpolated_on_the_curve() {
        let c = Calibration {
            version: 1,
            host: String::new(),
            cpu_model: String::new(),
            probe_cpu: 0,
            generator_cpus: vec![1],
            probe: ProbeConfig::default(),
            interval_ns: 1_000_000,
            measured: vec![],
            curve: vec![
                pt(0.0, 0.0, 100.0),
                pt(0.5, 4e9, 120.0),
                pt(1.0, 8e9, 160.0),
            ],
            notes: vec![],
        };
        assert!((c.bandwidth_for(110.0) - 2e9).abs() < 1.0);
        assert!((c.bandwidth_for(140.0) - 6e9).abs() < 1.0);
        assert_eq!(c.bandwidth_for(90.0), 0.0);
        assert_eq!(c.bandwidth_for(200.0), 8e9);
        assert!((c.latency_for(2e9) - 110.0).abs() < 1e-9);
    }

    /// A file measured with another number of loads per sample (64, the
    /// count before 2026-11) is refused, naming the file and both counts;
    /// the same file with the current count is read.
    #[test]
    fn calibration_of_other_loads_is_refused() {
        let dir = std::env::temp_dir().join(format!("contend-cal-loads-{}", std::process::id()));
        let path = dir.join("cal.json");
        let mut c = Calibration {
            version: CALIBRATION_VERSION,
            host: String::new(),
            cpu_model: String::new(),
            probe_cpu: 0,
            generator_cpus: vec![1],
            probe: ProbeConfig {
                chain_bytes: 64 << 20,
                loads: 64,
                chains: 1,
            },
            interval_ns: 1_000_000,
            measured: vec![],
            curve: vec![pt(0.0, 0.0, 100.0), pt(1.0, 8e9, 160.0)],
            notes: vec![],
        };
        c.write(&path).unwrap();
        let e = Calibration::read(&path).unwrap_err().to_string();
        assert!(
            e.contains(&path.display().to_string())
                && e.contains("64 loads")
                && e.contains(&format!("takes {DEFAULT_LOADS}"))
                && e.contains("calibrate again"),
            "{e}"
        );
        c.probe.loads = DEFAULT_LOADS;
        c.write(&path).unwrap();
        assert_eq!(Calibration::read(&path).unwrap(), c);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// By hand: latencies by bandwidth 100, 130, 120 (equal weights): the
    /// violating pair (130, 120) pools to 125 → 100, 125, 125; two
    /// measurements of one intensity average.
    #[test]
    fn curve_is_monotone() {
        let m = vec![
            pt(0.0, 0.0, 100.0),
            pt(0.5, 4e9, 130.0),
            pt(1.0, 8e9, 120.0),
            pt(0.0, 0.0, 100.0),
        ];
        let c = fit_curve(&m);
        let lat: Vec<f64> = c.iter().map(|p| p.latency_ns).collect();
        assert_eq!(lat, vec![100.0, 125.0, 125.0]);
        assert_eq!(c[0].samples, 20);
    }
}
