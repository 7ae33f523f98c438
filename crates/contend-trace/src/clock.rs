//! Conversion of trace ticks to CLOCK_MONOTONIC nanoseconds.
//!
//! The collector timestamps with `rdtsc` when the TSC is invariant (about
//! half the cost of `clock_gettime` here) and stores calibration points:
//! the same instant read on the TSC and on CLOCK_MONOTONIC. The TSC is one
//! clock for the whole machine, so the points of every process and of the
//! launcher lie on one line; [`ClockFit::fit`] takes the least-squares line
//! through all of them.

use serde::Serialize;

/// One instant read on the trace clock and on CLOCK_MONOTONIC.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct CalibrationPoint {
    /// Trace clock ticks.
    pub ticks: u64,
    /// CLOCK_MONOTONIC, ns.
    pub monotonic_ns: u64,
}

/// A linear map ticks → CLOCK_MONOTONIC ns: `ns = origin_ns + (ticks − origin_ticks) × ns_per_tick`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ClockFit {
    /// Tick value of the reference point.
    pub origin_ticks: u64,
    /// CLOCK_MONOTONIC ns of the reference point.
    pub origin_ns: u64,
    /// Slope, ns per tick (1.0 for a CLOCK_MONOTONIC trace).
    pub ns_per_tick: f64,
    /// Number of calibration points the fit used.
    pub points: usize,
}

impl ClockFit {
    /// The identity map, for traces whose ticks are already ns.
    pub fn identity() -> ClockFit {
        ClockFit {
            origin_ticks: 0,
            origin_ns: 0,
            ns_per_tick: 1.0,
            points: 0,
        }
    }

    /// Least-squares line through `points` (deduplicated by tick value).
    ///
    /// With fewer than two distinct points, or points spanning less than
    /// 1 ms, the slope comes from `ticks_per_second` (the launcher's
    /// measurement, must be > 0) through the first point. Returns `None`
    /// when no slope can be had (no points, or one point and no frequency).
    pub fn fit(points: &[CalibrationPoint], ticks_per_second: u64) -> Option<ClockFit> {
        let mut pts: Vec<CalibrationPoint> = points
            .iter()
            .copied()
            .filter(|p| p.ticks != 0 && p.monotonic_ns != 0)
            .collect();
        pts.sort_by_key(|p| p.ticks);
        pts.dedup_by_key(|p| p.ticks);
        let first = *pts.first()?;
        let last = *pts.last()?;
        let span_ns = last.monotonic_ns.saturating_sub(first.monotonic_ns);
        if pts.len() < 2 || span_ns < 1_000_000 {
            if ticks_per_second == 0 {
                return None;
            }
            return Some(ClockFit {
                origin_ticks: first.ticks,
                origin_ns: first.monotonic_ns,
                ns_per_tick: 1e9 / ticks_per_second as f64,
                points: pts.len(),
            });
        }
        // Fit on offsets from the first point to keep f64 precision.
        let n = pts.len() as f64;
        let (mut sx, mut sy, mut sxx, mut sxy) = (0f64, 0f64, 0f64, 0f64);
        for p in &pts {
            let x = (p.ticks - first.ticks) as f64;
            let y = p.monotonic_ns as f64 - first.monotonic_ns as f64;
            sx += x;
            sy += y;
            sxx += x * x;
            sxy += x * y;
        }
        let denom = n * sxx - sx * sx;
        if denom <= 0.0 {
            return None;
        }
        let slope = (n * sxy - sx * sy) / denom;
        let intercept = (sy - slope * sx) / n;
        let origin_ns = (first.monotonic_ns as i128 + intercept.round() as i128).max(0) as u64;
        Some(ClockFit {
            origin_ticks: first.ticks,
            origin_ns,
            ns_per_tick: slope,
            points: pts.len(),
        })
    }

    /// Converts a tick value to CLOCK_MONOTONIC ns (saturating at 0).
    ///
    /// Only the offset from the origin goes through `f64`, so absolute
    /// times beyond 2^53 ns (104 days of uptime) keep nanosecond precision.
    #[inline]
    pub fn to_ns(&self, ticks: u64) -> u64 {
        // In i64 where the numbers fit (every real trace): the same values
        // as the i128 arithmetic below, without its software conversions
        // to and from f64 (4 % of `contend report` of an MPI recording).
        if let Some(d) = (ticks as i64).checked_sub(self.origin_ticks as i64) {
            let x = d as f64 * self.ns_per_tick;
            if x.abs() < 9.0e18 {
                let offset = round_half_away(x);
                return self
                    .origin_ns
                    .checked_add_signed(offset)
                    .unwrap_or(if offset < 0 { 0 } else { u64::MAX });
            }
        }
        self.wide_ns(ticks)
    }

    /// [`ClockFit::to_ns`] in i128, for offsets beyond an i64. A function
    /// of its own, never inlined: inlined, the compiler computed it for
    /// every tick value, `round` and the f64-to-i128 conversion being
    /// library calls it may run ahead of the test that needs them, and
    /// threw it away after the fast path's test (1.7 % of the futex
    /// report's CPU time, 2026-11-29).
    #[cold]
    #[inline(never)]
    fn wide_ns(&self, ticks: u64) -> u64 {
        let d = ticks as i64 as i128 - self.origin_ticks as i64 as i128;
        let offset = (d as f64 * self.ns_per_tick).round() as i128;
        (self.origin_ns as i128 + offset).clamp(0, u64::MAX as i128) as u64
    }
}

/// `x.round() as i64` for |x| < 9.0e18 (halves away from zero; the caller
/// checks the range, which also excludes NaN), without the library call
/// `f64::round` is on x86-64 without SSE4.1 and without branches on the
/// fraction (random, so half of them mispredicted): the truncating
/// conversion, then the fraction, which is exact below 2^53 and zero above
/// (such doubles are whole numbers).
#[inline]
fn round_half_away(x: f64) -> i64 {
    debug_assert!(x.abs() < 9.0e18);
    // SAFETY: |x| < 9.0e18 < 2^63: finite, and its truncation fits an i64.
    let t: i64 = unsafe { x.to_int_unchecked() };
    let frac = x - t as f64;
    t + i64::from(frac >= 0.5) - i64::from(frac <= -0.5)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounding_matches_f64_round() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut cases = vec![
            0.5,
            -0.5,
            1.5,
            -1.5,
            2.5,
            0.49999999999999994,
            -0.49999999999999994,
            4.5e15 + 0.5,
            8.9e18,
            -8.9e18,
            0.0,
            -0.0,
        ];
        for _ in 0..100_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let mag = 10f64.powi((x % 19) as i32);
            cases.push((x as i64 as f64 / i64::MAX as f64) * mag);
            cases.push((x % 10_000) as f64 / 2.0 - 2_500.0);
        }
        for c in cases {
            assert_eq!(round_half_away(c), c.round() as i64, "{c}");
        }
    }

    #[test]
    fn fit_recovers_known_line() {
        // 2.5 GHz: 0.4 ns per tick, offset 1 s.
        let pts: Vec<_> = (0..10u64)
            .map(|i| CalibrationPoint {
                ticks: 1_000_000 + i * 250_000_000,
                monotonic_ns: 1_000_000_000 + i * 100_000_000,
            })
            .collect();
        let f = ClockFit::fit(&pts, 0).unwrap();
        assert!((f.ns_per_tick - 0.4).abs() < 1e-9);
        assert_eq!(f.to_ns(1_000_000), 1_000_000_000);
        assert_eq!(f.to_ns(1_000_000 + 2_500), 1_000_001_000);
    }

    #[test]
    fn keeps_nanoseconds_beyond_f64_precision() {
        // 200 days of uptime in ns exceeds 2^53.
        let origin_ns = 200 * 86_400 * 1_000_000_000u64;
        let f = ClockFit {
            origin_ticks: 1 << 60,
            origin_ns,
            ns_per_tick: 0.5,
            points: 2,
        };
        assert_eq!(f.to_ns((1 << 60) + 3), origin_ns + 2);
        assert_eq!(f.to_ns((1 << 60) + 1_000_001), origin_ns + 500_001);
    }

    #[test]
    fn single_point_uses_frequency() {
        let pts = [CalibrationPoint {
            ticks: 5_000,
            monotonic_ns: 7_000,
        }];
        assert!(ClockFit::fit(&pts, 0).is_none());
        let f = ClockFit::fit(&pts, 2_000_000_000).unwrap();
        assert_eq!(f.to_ns(7_000), 8_000);
    }
}
