//! The contention model of Nikolopoulos, Section 2.3, Eq. 1–13: from the
//! N + 1 access histograms, the calibrated latencies and the run time,
//! the expected local and remote latency of every node under contention
//! and the execution time lost to it.
//!
//! Per node i (notation of the paper; nodes are numbered from 0 here):
//!
//! ```text
//!   R_i      = Σ_{k≠i} R'_ki                                   (1)
//!   μ_i      = (L_i + R_i) · l_nocont / t_ex                   (2)   l_nocont: the time window
//!   p_i(m)   = e^{−μ_i} μ_i^m / m!                             (3)
//!   p_r(i,m) = Σ_{ordered distinct k_1..k_m ≠ i} Π_j R'_{k_j i} / (T − j + 1)        (6–8)
//!   p_lr(i,m)= L_i/T · Σ_{ordered distinct k_1..k_{m−1} ≠ i} Π_j R'_{k_j i} / (T − j + 1)   (9, printed)
//!   p_cont(i,m) = p_i(m) (p_r(i,m) + p_lr(i,m))                (10)
//!   l_i      = (1 − Σ_m p_cont) l_nocont + Σ_m p_cont l_cont(m),   m = 1..N     (11)
//!   r_ki     = (1 − Σ_m p_cont) r_ki,nocont + Σ_m p_cont r_ki,cont(m)           (12)
//!   overhead = max_i ( L_i (l_i − l_nocont) + Σ_{k≠i} R'_ki (r_ki − r_ki,nocont) ) (13)
//! ```
//!
//! with T = L_i + R_i. The sums of Eq. 8 and 9 are computed as elementary
//! symmetric sums ([`super::symmetric`]), O(N²) per node.
//!
//! Decisions where the paper leaves room (docs/numa.md, "Decisions"):
//! - [`Variant::Printed`] (the default) keeps Eq. 9's denominators as
//!   printed: the first remote access of the tuple is divided by T, as if
//!   the local access drawn first had not been drawn.
//!   [`Variant::Corrected`] draws without replacement after the local
//!   access: L_i/T · R'_{k_1 i}/(T − 1) ⋯ R'_{k_{m−1} i}/(T − m + 1), the
//!   pattern Eq. 7 and 8 follow.
//! - The window of Eq. 2 is the restart latency when the latency table has
//!   one (the paper defines l_nocont there as "the restart latency"), else
//!   `l_nocont`; Eq. 11–13 use the back-to-back `l_nocont`, measured like
//!   `l_cont(m)`, so that l_i − l_nocont compares like with like.
//! - A product term whose denominator T − j is not positive (fewer
//!   accesses than the tuple is long, possible only with fractional,
//!   estimated counts) is 0, and the estimate says so.

use contend_trace::numa::{LatencyTable, NodeAccesses};
use serde::Serialize;

use super::symmetric::ordered_sums;

/// Which form of Eq. 9 the model uses (`--variant`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Variant {
    /// Eq. 1–13 exactly as printed.
    #[default]
    Printed,
    /// Eq. 9 with the denominators of a draw without replacement after the
    /// local access (T − 1 … T − m + 1); everything else as printed.
    Corrected,
}

impl Variant {
    /// `printed` or `corrected`.
    pub fn name(self) -> &'static str {
        match self {
            Variant::Printed => "printed",
            Variant::Corrected => "corrected",
        }
    }
}

/// Errors of the model. Messages name the input and the problem.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ModelError {
    /// A histogram names a node the latency table does not have.
    #[error("{what} names node {node}, but the latency table has {nodes} node(s) (0..{last}): calibrate on the machine the histogram comes from", last = nodes.saturating_sub(1))]
    UnknownNode {
        /// Which input (`accesses.csv`, `the recording`).
        what: String,
        /// The node named.
        node: u32,
        /// Nodes in the latency table.
        nodes: usize,
    },
    /// The run time is missing, zero, negative or not finite.
    #[error("the run time t_ex must be a positive number of seconds (got {seconds}); give --time SECONDS")]
    BadTime {
        /// The value, seconds.
        seconds: f64,
    },
    /// The latency table is inconsistent.
    #[error("latency table: {0}")]
    BadLatency(String),
}

/// The N + 1 histograms of Section 2.3 as one dense N × N matrix: entry
/// (k, i) counts the accesses of CPUs on node k to memory on node i, so
/// (i, i) is L_i and (k, i), k ≠ i, is R'_ki.
#[derive(Debug, Clone, PartialEq)]
pub struct Histogram {
    n: usize,
    a: Vec<f64>,
}

impl Histogram {
    /// An empty histogram of `n` nodes.
    pub fn new(n: usize) -> Histogram {
        Histogram {
            n,
            a: vec![0.0; n * n],
        }
    }

    /// A histogram of `n` nodes from rows of a node histogram.
    /// Errors: a row names a node ≥ `n` ([`ModelError::UnknownNode`], with
    /// `what` naming the input).
    pub fn from_rows(n: usize, rows: &[NodeAccesses], what: &str) -> Result<Histogram, ModelError> {
        let mut h = Histogram::new(n);
        for r in rows {
            for node in [r.from_node, r.to_node] {
                if node as usize >= n {
                    return Err(ModelError::UnknownNode {
                        what: what.to_string(),
                        node,
                        nodes: n,
                    });
                }
            }
            h.add(r.from_node as usize, r.to_node as usize, r.accesses);
        }
        Ok(h)
    }

    /// Number of nodes N.
    pub fn nodes(&self) -> usize {
        self.n
    }

    /// Accesses from node `k` to node `i`.
    pub fn get(&self, k: usize, i: usize) -> f64 {
        self.a[k * self.n + i]
    }

    /// Adds `v` accesses from node `k` to node `i`.
    pub fn add(&mut self, k: usize, i: usize, v: f64) {
        self.a[k * self.n + i] += v;
    }

    /// L_i: local accesses to node `i`.
    pub fn local(&self, i: usize) -> f64 {
        self.get(i, i)
    }

    /// R_i (Eq. 1): remote accesses to node `i`.
    pub fn remote(&self, i: usize) -> f64 {
        (0..self.n)
            .filter(|&k| k != i)
            .map(|k| self.get(k, i))
            .sum()
    }

    /// Accesses issued by CPUs of node `k`, to any node.
    pub fn issued(&self, k: usize) -> f64 {
        (0..self.n).map(|i| self.get(k, i)).sum()
    }

    /// All accesses.
    pub fn total(&self) -> f64 {
        self.a.iter().sum()
    }

    /// Rows `from_node,to_node,accesses` of the non-zero entries.
    pub fn rows(&self) -> Vec<NodeAccesses> {
        let mut out = Vec::new();
        for k in 0..self.n {
            for i in 0..self.n {
                let v = self.get(k, i);
                if v != 0.0 {
                    out.push(NodeAccesses {
                        from_node: k as u32,
                        to_node: i as u32,
                        accesses: v,
                    });
                }
            }
        }
        out
    }
}

/// The model's figures for one node i.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeModel {
    /// The node i.
    pub node: usize,
    /// L_i.
    pub local_accesses: f64,
    /// R_i (Eq. 1).
    pub remote_accesses: f64,
    /// The time window of Eq. 2, ns.
    pub window_ns: f64,
    /// μ_i (Eq. 2).
    pub mu: f64,
    /// p_i(m) for m = 0..=N (Eq. 3), index m.
    pub p_arrivals: Vec<f64>,
    /// p_r(i, m) for m = 1..=N (Eq. 6–8), index m − 1.
    pub p_remote: Vec<f64>,
    /// p_lr(i, m) for m = 1..=N (Eq. 9), index m − 1.
    pub p_local_remote: Vec<f64>,
    /// p_cont(i, m) for m = 1..=N (Eq. 10), index m − 1.
    pub p_cont: Vec<f64>,
    /// l_i (Eq. 11), ns.
    pub local_latency_ns: f64,
    /// r_ki (Eq. 12), ns, index k; `None` at k = i.
    pub remote_latency_ns: Vec<Option<f64>>,
    /// L_i (l_i − l_nocont), ns: the local term of Eq. 13.
    pub local_added_ns: f64,
    /// Σ_k R'_ki (r_ki − r_ki,nocont), ns: the remote term of Eq. 13.
    pub remote_added_ns: f64,
    /// Both terms: node i's accumulated added latency (Eq. 13), ns.
    pub added_latency_ns: f64,
    /// Σ_{k≠i} R'_ki r_ki, ns: the remote latency load the migration
    /// algorithm balances (Section 3.2).
    pub remote_load_ns: f64,
    /// L_i l_i + Σ_{k≠i} R'_ki r_ki, ns: the accumulated latency of the
    /// accesses to node i (Section 2.3, the sentence before Eq. 13).
    pub accumulated_latency_ns: f64,
}

/// The model applied to one histogram.
#[derive(Debug, Clone, PartialEq)]
pub struct Estimate {
    /// Per node, in node order.
    pub nodes: Vec<NodeModel>,
    /// Eq. 13: the largest accumulated added latency of a node, ns: the
    /// execution time lost to contention. 0 when nothing was accessed.
    pub overhead_ns: f64,
    /// The node where Eq. 13's maximum is reached (the lowest such node);
    /// `None` when no node was accessed.
    pub bottleneck_node: Option<usize>,
    /// t_ex, ns.
    pub time_ns: f64,
    /// The form of Eq. 9 used.
    pub variant: Variant,
    /// Where the inputs made the model guess, one sentence each.
    pub warnings: Vec<String>,
}

impl Estimate {
    /// Latency of an access from node `k` to node `i` under contention,
    /// ns: l_i (Eq. 11) where k = i, else r_ki (Eq. 12).
    pub fn latency(&self, k: usize, i: usize) -> f64 {
        let node = &self.nodes[i];
        if k == i {
            node.local_latency_ns
        } else {
            node.remote_latency_ns[k].unwrap_or(f64::NAN)
        }
    }
}

/// Poisson probabilities p(m) = e^{−μ} μ^m / m! for m = 0..=max (Eq. 3),
/// in logarithms so that large μ neither overflows nor loses precision.
pub fn poisson(mu: f64, max: usize) -> Vec<f64> {
    let mut p = vec![0.0; max + 1];
    if mu <= 0.0 {
        p[0] = 1.0;
        return p;
    }
    let ln_mu = mu.ln();
    let mut ln_fact = 0.0;
    for (m, slot) in p.iter_mut().enumerate() {
        if m > 0 {
            ln_fact += (m as f64).ln();
        }
        *slot = (-mu + m as f64 * ln_mu - ln_fact).exp();
    }
    p
}

/// Applies Eq. 1–13 to histogram `h` with the latencies `lat`, the run
/// time `time_ns` (t_ex) and the form `variant` of Eq. 9.
///
/// Errors: `h` has more nodes than `lat` ([`ModelError::UnknownNode`]), a
/// non-positive time ([`ModelError::BadTime`]), an inconsistent table
/// ([`ModelError::BadLatency`]).
pub fn estimate(
    h: &Histogram,
    lat: &LatencyTable,
    time_ns: f64,
    variant: Variant,
) -> Result<Estimate, ModelError> {
    if !(time_ns.is_finite() && time_ns > 0.0) {
        return Err(ModelError::BadTime {
            seconds: time_ns / 1e9,
        });
    }
    lat.check().map_err(ModelError::BadLatency)?;
    let n = lat.nodes;
    if h.nodes() > n {
        // Only a non-zero entry beyond the table is an error.
        for k in 0..h.nodes() {
            for i in 0..h.nodes() {
                if (k >= n || i >= n) && h.get(k, i) != 0.0 {
                    return Err(ModelError::UnknownNode {
                        what: "the histogram".into(),
                        node: k.max(i) as u32,
                        nodes: n,
                    });
                }
            }
        }
    }
    let get = |k: usize, i: usize| {
        if k < h.nodes() && i < h.nodes() {
            h.get(k, i)
        } else {
            0.0
        }
    };
    let mut warnings = Vec::new();
    let mut nodes = Vec::with_capacity(n);
    for i in 0..n {
        let l = get(i, i);
        let remote_from: Vec<f64> = (0..n)
            .map(|k| if k == i { 0.0 } else { get(k, i) })
            .collect();
        let r: f64 = remote_from.iter().sum();
        let t = l + r;
        let window = lat.window(i);
        let mu = t * window / time_ns;
        let p_arrivals = poisson(mu, n);
        let mut p_remote = vec![0.0; n];
        let mut p_local_remote = vec![0.0; n];
        let mut p_cont = vec![0.0; n];
        if t > 0.0 {
            let x: Vec<f64> = (0..n)
                .filter(|&k| k != i)
                .map(|k| remote_from[k] / t)
                .collect();
            let o = ordered_sums(&x, n);
            // fac[j] = Π_{q<j} T / (T − q): the printed denominators of a
            // j-long product over ordered sums of x = R'/T; None from the
            // first denominator that is not positive on. Its q = 0 factor
            // is 1, so the corrected Eq. 9 (denominators T − 1 … T − m + 1)
            // uses fac[m] too.
            let mut fac: Vec<Option<f64>> = Vec::with_capacity(n + 1);
            fac.push(Some(1.0));
            for q in 0..n {
                let d = t - q as f64;
                let prev = fac[q];
                fac.push(prev.and_then(|f| (d > 0.0).then(|| f * t / d)));
            }
            let mut short = false;
            for m in 1..=n {
                // Eq. 8 (Eq. 6 for m = 1, Eq. 7 for m = 2): denominators
                // T, T − 1, …, T − m + 1.
                if o[m] > 0.0 {
                    match fac[m] {
                        Some(f) => p_remote[m - 1] = o[m] * f,
                        None => short = true,
                    }
                }
                // Eq. 9: L_i/T times the remote products of m − 1 nodes.
                if l > 0.0 && o[m - 1] > 0.0 {
                    let f = match variant {
                        // Printed: T, T − 1, …, T − m + 2.
                        Variant::Printed => fac[m - 1],
                        // Corrected: T − 1, …, T − m + 1.
                        Variant::Corrected => fac[m],
                    };
                    match f {
                        Some(f) => p_local_remote[m - 1] = l / t * o[m - 1] * f,
                        None => short = true,
                    }
                }
                // Eq. 10.
                p_cont[m - 1] = p_arrivals[m] * (p_remote[m - 1] + p_local_remote[m - 1]);
            }
            if short {
                warnings.push(format!(
                    "node {i} has {t} accesses, fewer than some tuples of Eq. 8/9 are long: those terms are taken as 0"
                ));
            }
        }
        let p_sum: f64 = p_cont.iter().sum();
        if p_sum > 1.0 + 1e-9 {
            warnings.push(format!(
                "node {i}: the contention probabilities of Eq. 10 add up to {p_sum:.6} > 1, so 1 − Σ p_cont in Eq. 11–12 is negative"
            ));
        }
        // Eq. 11, written as l_nocont + Σ p_cont (l_cont(m) − l_nocont),
        // which is the same sum without the cancellation.
        let l_nocont = lat.l_nocont(i);
        let added_local: f64 = (1..=n)
            .map(|m| p_cont[m - 1] * (lat.l_cont(i, m) - l_nocont))
            .sum();
        let local_latency = l_nocont + added_local;
        // Eq. 12.
        let mut remote_latency = vec![None; n];
        let mut remote_added = 0.0;
        let mut remote_load = 0.0;
        for k in (0..n).filter(|&k| k != i) {
            let nocont = lat.r_nocont(k, i);
            let added: f64 = (1..=n)
                .map(|m| p_cont[m - 1] * (lat.r_cont(k, i, m) - nocont))
                .sum();
            let r_ki = nocont + added;
            remote_latency[k] = Some(r_ki);
            remote_added += remote_from[k] * added;
            remote_load += remote_from[k] * r_ki;
        }
        let local_added = l * added_local;
        nodes.push(NodeModel {
            node: i,
            local_accesses: l,
            remote_accesses: r,
            window_ns: window,
            mu,
            p_arrivals,
            p_remote,
            p_local_remote,
            p_cont,
            local_latency_ns: local_latency,
            remote_latency_ns: remote_latency,
            local_added_ns: local_added,
            remote_added_ns: remote_added,
            added_latency_ns: local_added + remote_added,
            remote_load_ns: remote_load,
            accumulated_latency_ns: l * local_latency + remote_load,
        });
    }
    for i in 0..n {
        for m in 1..=n {
            if lat.l_cont(i, m) < lat.l_nocont(i) {
                warnings.push(format!(
                    "the latency table says node {i} is faster with {m} contender(s) ({:.1} ns) than without ({:.1} ns); the estimate inherits it",
                    lat.l_cont(i, m),
                    lat.l_nocont(i)
                ));
                break;
            }
        }
    }
    // Eq. 13: the maximum over the nodes that were accessed.
    let accessed = nodes
        .iter()
        .filter(|nm| nm.local_accesses + nm.remote_accesses > 0.0);
    let mut bottleneck: Option<&NodeModel> = None;
    for nm in accessed {
        if bottleneck.is_none_or(|b| nm.added_latency_ns > b.added_latency_ns) {
            bottleneck = Some(nm);
        }
    }
    Ok(Estimate {
        overhead_ns: bottleneck.map_or(0.0, |b| b.added_latency_ns),
        bottleneck_node: bottleneck.map(|b| b.node),
        nodes,
        time_ns,
        variant,
        warnings,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn poisson_sums_to_one_and_matches_the_formula() {
        let p = poisson(0.5, 30);
        assert!((p.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        // e^{−0.5} · 0.5² / 2 = 0.075816…
        assert!((p[2] - 0.5f64.powi(2) / 2.0 * (-0.5f64).exp()).abs() < 1e-15);
        // No accesses: nothing arrives.
        assert_eq!(poisson(0.0, 3), vec![1.0, 0.0, 0.0, 0.0]);
        // Large μ stays finite.
        let p = poisson(900.0, 64);
        assert!(p.iter().all(|v| v.is_finite() && *v >= 0.0));
    }

    #[test]
    fn one_node_has_only_local_contention() {
        // One node, L = 1000 accesses in 1 ms with a 100 ns window:
        // μ = 1000 · 100 / 1e6 = 0.1; p(1) = 0.1 e^{−0.1} = 0.0904837;
        // p_r(0,1) = 0 (no remote node), p_lr(0,1) = L/T = 1, so
        // p_cont(0,1) = 0.0904837 and l_0 = 100 + 0.0904837 · (160 − 100)
        // = 105.429 ns; Eq. 13: 1000 · 5.429 = 5429.0 ns.
        let lat = LatencyTable {
            nodes: 1,
            l_nocont_ns: vec![100.0],
            l_cont_ns: vec![vec![160.0]],
            r_nocont_ns: vec![vec![None]],
            r_cont_ns: vec![vec![None]],
            restart_ns: None,
            calibration: None,
        };
        let mut h = Histogram::new(1);
        h.add(0, 0, 1000.0);
        let e = estimate(&h, &lat, 1e6, Variant::Printed).unwrap();
        let p1 = 0.1 * (-0.1f64).exp();
        assert!((e.nodes[0].p_cont[0] - p1).abs() < 1e-15);
        assert!((e.nodes[0].local_latency_ns - (100.0 + p1 * 60.0)).abs() < 1e-9);
        assert!((e.overhead_ns - 1000.0 * p1 * 60.0).abs() < 1e-6);
        assert_eq!(e.bottleneck_node, Some(0));
        assert_eq!(e.nodes[0].remote_latency_ns, vec![None]);
    }

    #[test]
    fn bad_inputs_are_named() {
        let lat = LatencyTable {
            nodes: 1,
            l_nocont_ns: vec![100.0],
            l_cont_ns: vec![vec![160.0]],
            r_nocont_ns: vec![vec![None]],
            r_cont_ns: vec![vec![None]],
            restart_ns: None,
            calibration: None,
        };
        let rows = [NodeAccesses {
            from_node: 0,
            to_node: 2,
            accesses: 1.0,
        }];
        let e = Histogram::from_rows(1, &rows, "a.csv").unwrap_err();
        assert_eq!(
            e.to_string(),
            "a.csv names node 2, but the latency table has 1 node(s) (0..0): calibrate on the machine the histogram comes from"
        );
        let h = Histogram::new(1);
        assert!(matches!(
            estimate(&h, &lat, 0.0, Variant::Printed),
            Err(ModelError::BadTime { .. })
        ));
        // Nothing accessed: no overhead, no bottleneck.
        let e = estimate(&h, &lat, 1e9, Variant::Printed).unwrap();
        assert_eq!((e.overhead_ns, e.bottleneck_node), (0.0, None));
    }
}
