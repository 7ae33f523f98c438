//! The speed-up loss model of Tudor & Teo (IPDPS 2011) as implemented by
//! Venter 2016 (Sections 3.1.1, 3.1.2 and 3.2.2.1, Eq. 3.1–3.8,
//! Listings 3.1, 3.3 and 3.4; Tables 4.1–4.8 and 4.11), and its analysis
//! of a scale directory ([`analysis`]).
//!
//! A program partitioned into m threads is run on n = 1 core (no memory
//! contention) and on n = m cores. The work C(n) it needs (cycles, or CPU
//! time where the machine counts no cycles) grows from C(1) to C(m) only
//! through memory contention, so ω = C(m)/C(1) − 1 (Eq. 3.5) is the ratio
//! of contention work to useful work. With A the average number of active
//! threads on m cores (Listing 3.3), the model splits the ideal speed-up m
//! into
//!
//! ```text
//! m = P + R + D
//!     P = A / (1 + ω)   threads doing useful work = modelled speed-up S (Eq. 3.2, 3.4)
//!     R = A − P         speed-up lost to memory contention              (Eq. 3.3)
//!     D = m − A         speed-up lost to other dependencies             (Eq. 3.8)
//! ```
//!
//! This module holds the equations as pure functions of plain numbers;
//! every one states its units and source. Decisions where the thesis is
//! ambiguous or wrong (which axis of Listing 3.1 gives μ and which L, the
//! units of the time lost in Table 4.5, the δ of Eq. 3.7) are explained
//! at the function and in `docs/model.md`.

pub mod analysis;
pub mod figures;
pub mod layout;

pub use analysis::{
    analyze_scale_dir, scale_report, ScaleReport, SpeedupError, SpeedupReport, SpeedupRow,
};

/// ω(m, n) = C(n) / C(1) − 1 (Venter 2016, Eq. 3.5): the ratio of the
/// work due to memory contention, M(n) = C(n) − C(1), to the useful work
/// U = C(1). `c1` and `cn` are the work on 1 and on n cores in the same
/// unit (cycles, or CPU seconds); the result is dimensionless. Negative
/// when the run on n cores needed less work (measurement noise, or cache
/// effects: the thesis's EP benchmark). `None` when `c1` is not positive
/// or either value is not finite.
pub fn omega(c1: f64, cn: f64) -> Option<f64> {
    (c1 > 0.0 && c1.is_finite() && cn.is_finite()).then(|| cn / c1 - 1.0)
}

/// P(m, n) = A / (1 + ω) (Venter 2016, Eq. 3.2): the average number of
/// active threads doing useful work, in threads. `a` is the average number
/// of active threads A(m, n) (threads), `omega` is ω (Eq. 3.5). `None` when
/// 1 + ω is not positive (C(n) ≤ 0: no meaningful work measure).
pub fn useful_threads(a: f64, omega: f64) -> Option<f64> {
    (1.0 + omega > 0.0).then(|| a / (1.0 + omega))
}

/// R(m, n) = A − A / (1 + ω) = A·ω / (1 + ω) (Venter 2016, Eq. 3.3; the
/// thesis's analyser computes the same as `A·ω/(1+ω)`, Section 3.2.2.1):
/// the speed-up lost to memory contention, in threads (units of
/// speed-up). Negative when ω is. `None` when 1 + ω is not positive.
pub fn loss_memory(a: f64, omega: f64) -> Option<f64> {
    useful_threads(a, omega).map(|p| a - p)
}

/// D(m) = m − A(m, n) (Venter 2016, Eq. 3.8): the speed-up lost to
/// dependencies other than memory (locks, messages, load imbalance,
/// serial sections: any time a thread is idle), in threads. `m` is the
/// number of threads, `a` the average number of active threads.
pub fn loss_dependencies(m: f64, a: f64) -> f64 {
    m - a
}

/// S(m, n) = A / (1 + ω) (Venter 2016, Eq. 3.4, from Eq. 3.1 with
/// ω = M(n)/U): the modelled speed-up, the same number as P (Eq. 3.2), the
/// threads doing useful work. Compare with [`speedup_measured`]. `None`
/// when 1 + ω is not positive.
pub fn speedup_model(a: f64, omega: f64) -> Option<f64> {
    useful_threads(a, omega)
}

/// The measured speed-up T(1) / T(m) (Venter 2016, Eq. 3.1): wall time of
/// the program with m threads on 1 core over its wall time on m cores,
/// both in seconds. `None` when either time is not positive.
pub fn speedup_measured(wall_1_s: f64, wall_m_s: f64) -> Option<f64> {
    (wall_1_s > 0.0 && wall_m_s > 0.0).then(|| wall_1_s / wall_m_s)
}

/// Time lost to memory contention and to other dependencies (Venter
/// 2016, Table 4.5, defined here without the thesis's unit slips; see
/// `docs/model.md`, "Time lost").
///
/// The model splits the ideal speed-up into m = S + R + D. On m cores for
/// T(m) seconds the machine offers m·T(m) core-seconds; S·T(m) of them do
/// useful work, R·T(m) are spent on memory contention and D·T(m) are idle.
/// Hence, in core-seconds (thread-seconds: the unit of service time and of
/// summed lock wait time, Tables 4.8 and 4.11):
///
/// - `memory_s` = R · T(m)
/// - `dependencies_s` = D · T(m)
///
/// and, spread over the m cores, in seconds of wall time:
///
/// - `wall_memory_s` = R · T(m) / m
/// - `wall_dependencies_s` = D · T(m) / m
///
/// whose sum is T(m) − S·T(m)/m; when the modelled speed-up S equals the
/// measured T(1)/T(m) this is exactly T(m) − T(1)/m, the actual minus the
/// ideal running time of Table 4.8.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TimeLost {
    /// R · T(m), core-seconds.
    pub memory_s: f64,
    /// D · T(m), core-seconds.
    pub dependencies_s: f64,
    /// R · T(m) / m, s of wall time.
    pub wall_memory_s: f64,
    /// D · T(m) / m, s of wall time.
    pub wall_dependencies_s: f64,
}

/// [`TimeLost`] from R and D (threads, Eq. 3.3 and 3.8), the number of
/// threads m and the wall time T(m) on m cores (s). `m` = 0 counts as 1.
pub fn time_lost(loss_memory: f64, loss_dependencies: f64, m: u32, wall_m_s: f64) -> TimeLost {
    let m = f64::from(m.max(1));
    TimeLost {
        memory_s: loss_memory * wall_m_s,
        dependencies_s: loss_dependencies * wall_m_s,
        wall_memory_s: loss_memory * wall_m_s / m,
        wall_dependencies_s: loss_dependencies * wall_m_s / m,
    }
}

/// The ideal running time on m cores, T(1)/m, and the percentage by which
/// the actual T(m) exceeds it (Venter 2016, Table 4.8, columns 6–8). Times
/// in s; `None` for the percentage when the ideal is 0.
pub fn ideal_running_time(time_1_s: f64, m: u32, actual_m_s: f64) -> (f64, Option<f64>) {
    let ideal = time_1_s / f64::from(m.max(1));
    (ideal, change_pct(ideal, actual_m_s))
}

/// A straight line y = slope·x + intercept.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Line {
    /// dy/dx.
    pub slope: f64,
    /// y at x = 0.
    pub intercept: f64,
}

impl Line {
    /// y at `x`.
    pub fn at(&self, x: f64) -> f64 {
        self.slope * x + self.intercept
    }
}

/// The least-squares line of best fit through `points` (x, y) (Venter
/// 2016, Listing 3.1, `lineBestFit`):
/// slope = (Σxy − Σx·ȳ) / (Σx² − Σx·x̄), intercept = ȳ − slope·x̄.
/// `None` with fewer than two points, when all x are equal (a vertical
/// line) or a value is not finite.
pub fn line_best_fit(points: &[(f64, f64)]) -> Option<Line> {
    if points.len() < 2 || points.iter().any(|(x, y)| !x.is_finite() || !y.is_finite()) {
        return None;
    }
    let n = points.len() as f64;
    let (mut sx, mut sy, mut sx2, mut sxy) = (0.0, 0.0, 0.0, 0.0);
    for &(x, y) in points {
        sx += x;
        sy += y;
        sx2 += x * x;
        sxy += x * y;
    }
    let (mx, my) = (sx / n, sy / n);
    let den = sx2 - sx * mx;
    // All x equal: the denominator is 0 up to rounding.
    if den.abs() <= 1e-12 * sx2.abs().max(f64::MIN_POSITIVE) {
        return None;
    }
    let slope = (sxy - sx * my) / den;
    Some(Line {
        slope,
        intercept: my - slope * mx,
    })
}

/// The M/M/1 memory model of a single socket (Venter 2016, Eq. 3.6):
/// C(n) = r / (μ − n·L), with r the cache misses (memory requests, taken
/// as constant in n), μ the service rate of the memory controller and L
/// the arrival rate of requests from one core (λ = n·L).
///
/// **Axes (decided; the thesis contradicts itself).** Section 3.1.1.1
/// says the line is drawn "with m as x-axis" and that "the slope is μ and
/// the y-intercept is λ"; Section 3.2.2.1 says "n on the x-axis". From
/// Eq. 3.6, 1/C(n) = μ/r − (L/r)·n: a line in n, the number of cores (the
/// thread count m is the same in every run of the fit). So the fit is
/// through (n, 1/C(n)), and its **intercept is μ/r and its slope −L/r**;
/// neither is μ or λ itself, and the slope is negative when contention
/// adds work. μ and L follow when r is known ([`MemoryQueue::rates`]);
/// the modelled C(n) does not need r ([`MemoryQueue::work`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MemoryQueue {
    /// The fit through (n, 1/C(n)): intercept μ/r, slope −L/r, in
    /// 1/(unit of work) per core for the slope.
    pub line: Line,
}

impl MemoryQueue {
    /// Fits the model through `points` of (n cores, C(n) work); points
    /// with C ≤ 0 are left out. `None` without two usable points at
    /// different n.
    pub fn fit(points: &[(f64, f64)]) -> Option<MemoryQueue> {
        let inv: Vec<(f64, f64)> = points
            .iter()
            .filter(|(_, c)| *c > 0.0 && c.is_finite())
            .map(|&(n, c)| (n, 1.0 / c))
            .collect();
        line_best_fit(&inv).map(|line| MemoryQueue { line })
    }

    /// μ/r: the intercept, requests served per unit of work per request
    /// (1/unit of work).
    pub fn mu_per_request(&self) -> f64 {
        self.line.intercept
    }

    /// L/r: minus the slope (1/unit of work per core).
    pub fn l_per_request(&self) -> f64 {
        -self.line.slope
    }

    /// μ and L (requests per unit of work: per cycle, or per CPU second)
    /// given r, the cache misses of the runs (Eq. 3.6); λ(n) = n·L.
    pub fn rates(&self, misses: f64) -> (f64, f64) {
        (
            misses * self.mu_per_request(),
            misses * self.l_per_request(),
        )
    }

    /// The modelled work C(n) = 1 / (μ/r − n·L/r) for `n` cores (Eq. 3.6),
    /// in the unit of the fitted work. `None` when μ − n·L ≤ 0: the
    /// M/M/1 queue is saturated (requests arrive as fast as or faster
    /// than they are served) and the model predicts no finite work.
    ///
    /// (The thesis remarks that "when n = 1 Equation 3.6 always resolves
    /// to zero"; it does not: C(1) = r/(μ − L).)
    pub fn work(&self, n: f64) -> Option<f64> {
        let d = self.line.at(n);
        // μ − n·L within rounding of 0 (relative 1e-9 of μ) is saturated
        // too: its reciprocal would be rounding noise.
        (d > 1e-9 * self.line.intercept.abs() && d.is_finite()).then(|| 1.0 / d)
    }
}

/// δ of the NUMA model (Venter 2016, Eq. 3.7, Sections 3.1.1.2 and
/// 3.2.2.1): the extra work per core beyond the first socket, the slope of
/// the line through (c, C(c)) and (m, C(m)) with c the cores of one
/// socket, m > c the cores of the run, C in the unit of work.
///
/// **Decided.** The thesis computes "δ = slope·m + y-intercept" from that
/// line, which is C(m) again, and writes C_NUMA(n) = C(c) + r(n)·δ·C(n − c),
/// which mixes units (misses × cycles × δ). We take the line itself:
/// δ = (C(m) − C(c)) / (m − c), work per remote core, and
/// C_NUMA(n) = C(c) + δ·(n − c) for n > c ([`numa_work`]); δ/r, the
/// extra work per cache miss per remote core, is the thesis's r(n)·δ
/// factor when misses are counted. `None` when m ≤ c or a value is not
/// finite.
pub fn numa_delta(c: u32, work_c: f64, m: u32, work_m: f64) -> Option<f64> {
    if m <= c {
        return None;
    }
    line_best_fit(&[(f64::from(c), work_c), (f64::from(m), work_m)]).map(|l| l.slope)
}

/// C_NUMA(n) = C(c) + δ·(n − c) (Venter 2016, Eq. 3.7 as decided at
/// [`numa_delta`]): the modelled work on `n` > `c` cores, in the unit of
/// `work_c`.
pub fn numa_work(c: u32, work_c: f64, delta: f64, n: u32) -> f64 {
    work_c + delta * (f64::from(n) - f64::from(c))
}

/// Arithmetic mean; `None` for no values.
pub fn mean(xs: &[f64]) -> Option<f64> {
    (!xs.is_empty()).then(|| xs.iter().sum::<f64>() / xs.len() as f64)
}

/// Relative standard deviation across repeats, per cent (Venter 2016,
/// Table 4.4): 100 · s / x̄ with s the sample standard deviation
/// (n − 1 in the denominator, the repeats being a sample of the runs one
/// could make). `None` with fewer than two values or a mean of 0.
pub fn rsd_pct(xs: &[f64]) -> Option<f64> {
    if xs.len() < 2 {
        return None;
    }
    let m = mean(xs)?;
    if m == 0.0 {
        return None;
    }
    let var = xs.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (xs.len() - 1) as f64;
    Some(100.0 * var.sqrt() / m.abs())
}

/// Percentage change from `before` to `after`, 100·(after − before)/before
/// (Venter 2016, Tables 4.2, 4.3, 4.6–4.8). `None` when `before` is 0.
pub fn change_pct(before: f64, after: f64) -> Option<f64> {
    (before != 0.0).then(|| 100.0 * (after - before) / before)
}

/// Cycles per cache miss, CCM (Venter 2016, Table 4.1): work cycles over
/// last-level cache misses; lower means more memory-bound. It excludes
/// idle time (cycles are only counted while a thread runs). `None` when
/// there were no misses.
pub fn cycles_per_miss(cycles: f64, misses: f64) -> Option<f64> {
    (misses > 0.0).then(|| cycles / misses)
}

/// Cache misses per second of wall time, the miss rate (Venter 2016,
/// Table 4.1): memory requests generated per second, idle time included.
/// `None` when the wall time is not positive.
pub fn misses_per_second(misses: f64, wall_s: f64) -> Option<f64> {
    (wall_s > 0.0).then(|| misses / wall_s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * b.abs().max(1.0)
    }

    /// m = 4, A = 3.4375 (Figure 3.1), C(1) = 100, C(4) = 125:
    /// ω = 0.25, P = S = 3.4375/1.25 = 2.75, R = 0.6875, D = 0.5625.
    #[test]
    fn equations_3_2_to_3_5_and_3_8_by_hand() {
        let w = omega(100.0, 125.0).unwrap();
        assert!(close(w, 0.25), "{w}");
        let a = 3.4375;
        assert!(close(useful_threads(a, w).unwrap(), 2.75));
        assert!(close(speedup_model(a, w).unwrap(), 2.75));
        assert!(close(loss_memory(a, w).unwrap(), 0.6875));
        // The analyser's form A·ω/(1+ω) is the same number.
        assert!(close(a * w / (1.0 + w), 0.6875));
        assert!(close(loss_dependencies(4.0, a), 0.5625));
        // m = P + R + D.
        assert!(close(2.75 + 0.6875 + 0.5625, 4.0));
        // Less work on m cores: negative ω and R (Table 4.5, EP).
        let w = omega(1000.0, 996.0).unwrap();
        assert!(close(w, -0.004));
        assert!(loss_memory(2.0, w).unwrap() < 0.0);
        // No useful-work measure.
        assert_eq!(omega(0.0, 5.0), None);
        assert_eq!(omega(f64::NAN, 5.0), None);
        assert_eq!(useful_threads(2.0, -1.0), None);
        assert_eq!(loss_memory(2.0, -1.5), None);
    }

    #[test]
    fn measured_speedup_and_table_4_8_columns() {
        assert!(close(speedup_measured(12.0, 4.0).unwrap(), 3.0));
        assert_eq!(speedup_measured(0.0, 4.0), None);
        assert_eq!(speedup_measured(1.0, 0.0), None);
        // Thesis Table 4.8, BT m = 2: 1201.20 s on 1 core → ideal 600.60 s;
        // actual 661.61 s is 10.16 % above it.
        let (ideal, pct) = ideal_running_time(1201.20, 2, 661.61);
        assert!(close(ideal, 600.60));
        assert!((pct.unwrap() - 10.16).abs() < 0.005, "{pct:?}");
        assert_eq!(ideal_running_time(0.0, 2, 1.0).1, None);
    }

    /// R = 0.6875, D = 0.5625 threads, m = 4, T(4) = 10 s.
    #[test]
    fn time_lost_by_hand() {
        let t = time_lost(0.6875, 0.5625, 4, 10.0);
        assert!(close(t.memory_s, 6.875));
        assert!(close(t.dependencies_s, 5.625));
        assert!(close(t.wall_memory_s, 1.71875));
        assert!(close(t.wall_dependencies_s, 1.40625));
        // With S = T(1)/T(m) the wall parts add up to actual − ideal: here
        // S = 2.75, so T(1) = 27.5 s and T(1)/m = 6.875 s: 10 − 6.875.
        assert!(close(
            t.wall_memory_s + t.wall_dependencies_s,
            10.0 - 27.5 / 4.0
        ));
    }

    /// Listing 3.1 on points of an exact line and on a noisy set.
    #[test]
    fn line_of_best_fit_listing_3_1() {
        let l = line_best_fit(&[(1.0, 5.0), (2.0, 7.0), (4.0, 11.0)]).unwrap();
        assert!(close(l.slope, 2.0) && close(l.intercept, 3.0), "{l:?}");
        assert!(close(l.at(10.0), 23.0));
        // Noisy: (1,2) (2,3) (3,5) (4,4). Σx = 10, Σy = 14, Σx² = 30,
        // Σxy = 39, x̄ = 2.5, ȳ = 3.5: slope = (39 − 35)/(30 − 25) = 0.8,
        // intercept = 3.5 − 0.8·2.5 = 1.5.
        let l = line_best_fit(&[(1.0, 2.0), (2.0, 3.0), (3.0, 5.0), (4.0, 4.0)]).unwrap();
        assert!(close(l.slope, 0.8) && close(l.intercept, 1.5), "{l:?}");
        // Degenerate inputs.
        assert_eq!(line_best_fit(&[(1.0, 2.0)]), None);
        assert_eq!(line_best_fit(&[(2.0, 2.0), (2.0, 3.0)]), None);
        assert_eq!(line_best_fit(&[(1.0, f64::NAN), (2.0, 3.0)]), None);
    }

    /// Eq. 3.6 with r = 1000 misses, μ = 0.01 and L = 0.002 requests per
    /// cycle: C(1) = 1000/0.008 = 125 000, C(4) = 1000/0.002 = 500 000.
    /// Through (1, 8e-6) and (4, 2e-6): slope −2e-6 = −L/r, intercept
    /// 1e-5 = μ/r.
    #[test]
    fn memory_queue_eq_3_6_axes() {
        let q = MemoryQueue::fit(&[(1.0, 125_000.0), (4.0, 500_000.0)]).unwrap();
        assert!(close(q.line.slope, -2e-6), "{q:?}");
        assert!(close(q.line.intercept, 1e-5), "{q:?}");
        assert!(close(q.mu_per_request(), 1e-5));
        assert!(close(q.l_per_request(), 2e-6));
        let (mu, l) = q.rates(1000.0);
        assert!(close(mu, 0.01) && close(l, 0.002), "{mu} {l}");
        // C(2) = 1000 / (0.01 − 0.004).
        assert!(close(q.work(2.0).unwrap(), 1000.0 / 0.006));
        assert!(close(q.work(1.0).unwrap(), 125_000.0));
        // n = 5: λ = μ, the queue is saturated.
        assert_eq!(q.work(5.0), None);
        assert_eq!(q.work(6.0), None);
        // Repeats: the least-squares fit through all of them.
        let q = MemoryQueue::fit(&[
            (1.0, 100.0),
            (1.0, 100.0),
            (2.0, 125.0),
            (2.0, 125.0),
            (2.0, 0.0), // unusable, left out
        ])
        .unwrap();
        assert!(close(q.line.slope, 0.008 - 0.01));
        assert_eq!(MemoryQueue::fit(&[(1.0, 100.0)]), None);
    }

    /// c = 8, C(8) = 1000, m = 16, C(16) = 1400: δ = 400/8 = 50 per core;
    /// C_NUMA(12) = 1000 + 50·4 = 1200.
    #[test]
    fn numa_eq_3_7() {
        let d = numa_delta(8, 1000.0, 16, 1400.0).unwrap();
        assert!(close(d, 50.0));
        assert!(close(numa_work(8, 1000.0, d, 12), 1200.0));
        assert!(close(numa_work(8, 1000.0, d, 16), 1400.0));
        assert_eq!(numa_delta(8, 1000.0, 8, 1400.0), None);
    }

    #[test]
    fn statistics_by_hand() {
        assert_eq!(mean(&[]), None);
        assert!(close(mean(&[1.0, 2.0, 6.0]).unwrap(), 3.0));
        // 2, 4, 4, 4, 5, 5, 7, 9: mean 5, Σ(x−x̄)² = 32, s² = 32/7.
        let xs = [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0];
        let want = 100.0 * (32.0f64 / 7.0).sqrt() / 5.0;
        assert!(close(rsd_pct(&xs).unwrap(), want));
        // 90, 110: s = √200, RSD = 14.142…%.
        assert!(close(rsd_pct(&[90.0, 110.0]).unwrap(), 200f64.sqrt()));
        assert_eq!(rsd_pct(&[5.0]), None);
        assert_eq!(rsd_pct(&[1.0, -1.0]), None);
        assert!(close(rsd_pct(&[3.0, 3.0, 3.0]).unwrap(), 0.0));
        assert!(close(
            change_pct(910.0, 1066.0).unwrap(),
            17.142857142857142
        ));
        assert_eq!(change_pct(0.0, 1.0), None);
    }

    /// Table 4.1, CG with 2 threads: 79.382 cycles per miss; a miss rate of
    /// 70 823 000 per second.
    #[test]
    fn ccm_and_miss_rate() {
        assert!(close(cycles_per_miss(79_382.0, 1000.0).unwrap(), 79.382));
        assert_eq!(cycles_per_miss(1.0, 0.0), None);
        assert!(close(
            misses_per_second(141_646_000.0, 2.0).unwrap(),
            70_823_000.0
        ));
        assert_eq!(misses_per_second(1.0, 0.0), None);
    }
}
