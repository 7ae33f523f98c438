//! What-if estimates for another page placement: Nikolopoulos Eq. 14,
//! generalised from "all pages on node 1" to any placement.
//!
//! Eq. 14 estimates the time of the W version (every page on node 1) from
//! the histograms of the FT version:
//!
//! ```text
//!   t_est = t_ft + max( L_1 (l_1,w − l_1,ft) + Σ_{i≥2} R'_1i (l_1,w − r_1i,ft),
//!                       max_{i≠1} L_i (r_i1,w − l_i,ft) + Σ_{j≠i} R'_ij (r_i1,w − r_ij,ft) )
//! ```
//!
//! Each term is one *source* node's accesses: what they cost after the
//! move (at the latencies of the new placement, Eq. 11–12 applied to the
//! histogram the accesses would then form) minus what they cost before.
//! For any placement that moves a node's accesses from node j to node j′,
//! the same reasoning gives, per source node k,
//!
//! ```text
//!   added_k = Σ_i A′_ki · lat′(k, i) − Σ_i A_ki · lat(k, i),   lat(k, k) = l_k, lat(k, i) = r_ki
//!   t_est   = t_ex + max_k added_k
//! ```
//!
//! where A is the histogram before and A′ after. For "all on node 1" this
//! is Eq. 14 term by term (the tests check it). A placement is given by
//! its histogram A′: every access of node k goes to node x
//! ([`all_on_node`]), a k's accesses spread evenly over the N nodes
//! ([`interleaved`]), or the pages moved by a migration plan
//! ([`super::balance`]). The same t_ex is used before and after, as the
//! paper does.

use serde::Serialize;

use super::model::{estimate, Estimate, Histogram, ModelError, Variant};
use contend_trace::numa::LatencyTable;

/// A placement to estimate (`--what-if`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WhatIfSpec {
    /// Every page on this node (the paper's W version on node 1).
    AllOn(u32),
    /// Pages interleaved evenly over all nodes.
    Interleave,
    /// The pages moved by the migration plan of `contend numa balance`.
    Balance,
}

impl WhatIfSpec {
    /// Parses `node:K` (or `node=K`, `K`), `interleave`, `balance`.
    ///
    /// Errors: anything else, as a sentence listing the forms.
    pub fn parse(s: &str) -> Result<WhatIfSpec, String> {
        let t = s.trim().to_ascii_lowercase();
        let node = t
            .strip_prefix("node:")
            .or_else(|| t.strip_prefix("node="))
            .unwrap_or(&t);
        if let Ok(k) = node.parse::<u32>() {
            return Ok(WhatIfSpec::AllOn(k));
        }
        match t.as_str() {
            "interleave" | "interleaved" => Ok(WhatIfSpec::Interleave),
            "balance" | "plan" | "migrate" => Ok(WhatIfSpec::Balance),
            _ => Err(format!(
                "what-if `{s}`: expected node:K (every page on node K), interleave, or balance (after the migration plan)"
            )),
        }
    }

    /// The machine name used in JSON (`node:0`, `interleave`, `balance`).
    pub fn key(&self) -> String {
        match self {
            WhatIfSpec::AllOn(k) => format!("node:{k}"),
            WhatIfSpec::Interleave => "interleave".into(),
            WhatIfSpec::Balance => "balance".into(),
        }
    }

    /// A phrase for tables (`every page on node 0`).
    pub fn describe(&self) -> String {
        match self {
            WhatIfSpec::AllOn(k) => format!("every page on node {k}"),
            WhatIfSpec::Interleave => "pages interleaved over all nodes".into(),
            WhatIfSpec::Balance => "after the migration plan".into(),
        }
    }
}

/// The estimate for one other placement.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WhatIf {
    /// Machine name of the placement (`node:0`, `interleave`, `balance`).
    pub placement: String,
    /// What it is, in words.
    pub description: String,
    /// t_est (Eq. 14), ns.
    pub time_ns: f64,
    /// max_k added_k, ns (negative: the placement is estimated faster).
    pub added_ns: f64,
    /// t_est / t_ex − 1.
    pub change: f64,
    /// The source node whose accesses gain the most time (Eq. 14's
    /// maximum); `None` when no node issued accesses.
    pub slowest_node: Option<usize>,
    /// added_k per source node k, ns.
    pub per_node_added_ns: Vec<f64>,
    /// Eq. 13 under the new placement, ns.
    pub overhead_ns: f64,
    /// Eq. 13's bottleneck under the new placement.
    pub bottleneck_node: Option<usize>,
    /// Share of all accesses that are local after the move.
    pub local_share: f64,
}

/// The histogram with every access going to node `x`.
pub fn all_on_node(h: &Histogram, x: usize) -> Histogram {
    let n = h.nodes();
    let mut out = Histogram::new(n);
    for k in 0..n {
        out.add(k, x, h.issued(k));
    }
    out
}

/// The histogram with each node's accesses spread evenly over the N
/// nodes (a page-interleaved placement, as `numactl --interleave=all`).
pub fn interleaved(h: &Histogram) -> Histogram {
    let n = h.nodes();
    let mut out = Histogram::new(n);
    for k in 0..n {
        let share = h.issued(k) / n as f64;
        for i in 0..n {
            out.add(k, i, share);
        }
    }
    out
}

/// Share of the accesses of `h` that are local.
pub fn local_share(h: &Histogram) -> f64 {
    let total = h.total();
    if total == 0.0 {
        return 0.0;
    }
    (0..h.nodes()).map(|i| h.local(i)).sum::<f64>() / total
}

/// Eq. 14 generalised: the estimate for the placement whose histogram is
/// `after`, given the histogram `before` (with its model `before_est`),
/// both with the latencies `lat` and the same t_ex.
///
/// Errors: those of [`estimate`] for `after`.
pub fn what_if(
    spec: &WhatIfSpec,
    before: &Histogram,
    before_est: &Estimate,
    after: &Histogram,
    lat: &LatencyTable,
    variant: Variant,
) -> Result<WhatIf, ModelError> {
    let after_est = estimate(after, lat, before_est.time_ns, variant)?;
    let n = before.nodes();
    let mut per_node = vec![0.0; n];
    for (k, added) in per_node.iter_mut().enumerate() {
        for i in 0..n {
            let a_after = after.get(k, i);
            let a_before = before.get(k, i);
            if a_after != 0.0 {
                *added += a_after * after_est.latency(k, i);
            }
            if a_before != 0.0 {
                *added -= a_before * before_est.latency(k, i);
            }
        }
    }
    let mut slowest: Option<usize> = None;
    for k in (0..n).filter(|&k| before.issued(k) > 0.0 || after.issued(k) > 0.0) {
        if slowest.is_none_or(|s| per_node[k] > per_node[s]) {
            slowest = Some(k);
        }
    }
    let added = slowest.map_or(0.0, |k| per_node[k]);
    let time = before_est.time_ns + added;
    Ok(WhatIf {
        placement: spec.key(),
        description: spec.describe(),
        time_ns: time,
        added_ns: added,
        change: added / before_est.time_ns,
        slowest_node: slowest,
        per_node_added_ns: per_node,
        overhead_ns: after_est.overhead_ns,
        bottleneck_node: after_est.bottleneck_node,
        local_share: local_share(after),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse() {
        assert_eq!(WhatIfSpec::parse("node:3"), Ok(WhatIfSpec::AllOn(3)));
        assert_eq!(WhatIfSpec::parse("1"), Ok(WhatIfSpec::AllOn(1)));
        assert_eq!(WhatIfSpec::parse("Interleave"), Ok(WhatIfSpec::Interleave));
        assert_eq!(WhatIfSpec::parse("balance"), Ok(WhatIfSpec::Balance));
        assert!(WhatIfSpec::parse("nodes")
            .unwrap_err()
            .contains("expected node:K"));
    }

    #[test]
    fn placements_keep_every_access() {
        let mut h = Histogram::new(3);
        h.add(0, 0, 10.0);
        h.add(0, 2, 5.0);
        h.add(1, 2, 7.0);
        h.add(2, 1, 1.0);
        for after in [all_on_node(&h, 1), interleaved(&h)] {
            for k in 0..3 {
                assert!((after.issued(k) - h.issued(k)).abs() < 1e-12);
            }
        }
        let w = all_on_node(&h, 1);
        assert_eq!(w.get(0, 1), 15.0);
        assert_eq!(w.local(1), 7.0);
        let il = interleaved(&h);
        assert_eq!(il.get(1, 0), 7.0 / 3.0);
    }
}
