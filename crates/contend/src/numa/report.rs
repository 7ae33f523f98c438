//! The "NUMA memory contention" section ([`NumaReport`], JSON key `numa`,
//! docs/json.md): the model of Eq. 1–13 per node, the estimated time lost
//! and its bottleneck node, what-if estimates (Eq. 14), the migration plan
//! (Section 3) and the hottest pages, built by [`analyse`].

use contend_trace::numa::{LatencyTable, PeriodUnit, SamplingMethod};
use serde::{Serialize, Serializer};

use super::balance::{balance, Migration};
use super::input::NumaInput;
use super::model::{estimate, Estimate, Histogram, ModelError, Variant};
use super::whatif::{all_on_node, interleaved, what_if, WhatIfSpec};

/// What to compute besides Eq. 1–13.
#[derive(Debug, Clone, Default)]
pub struct NumaRequest<'a> {
    /// The latencies, and where they come from (a file name). Without
    /// them only the histograms are reported.
    pub latency: Option<(&'a str, &'a LatencyTable)>,
    /// The form of Eq. 9.
    pub variant: Variant,
    /// Placements to estimate (Eq. 14). Empty: every page on node 0 (the
    /// paper's W version), interleaved, and after the migration plan when
    /// there are pages.
    pub what_if: Vec<WhatIfSpec>,
    /// Compute the migration plan (needs per-page histograms).
    pub plan: bool,
}

/// A page address, serialised as a hexadecimal string.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Address(pub u64);

impl Serialize for Address {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format!("{:#x}", self.0))
    }
}

/// Accesses from one other node to a node (R'_ki) and their latency.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RemoteRow {
    /// The source node k.
    pub from_node: u32,
    /// R'_ki; `null` when only samples are known.
    pub accesses: Option<f64>,
    /// Samples (recordings).
    pub samples: Option<u64>,
    /// r_ki (Eq. 12), ns; `null` without a calibration.
    pub latency_ns: Option<i64>,
    /// r_ki,nocont, ns; `null` without a calibration.
    pub nocont_latency_ns: Option<i64>,
}

/// One node's row.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NodeRow {
    /// The node i.
    pub node: u32,
    /// L_i; `null` when only samples are known.
    pub local_accesses: Option<f64>,
    /// R_i (Eq. 1): remote accesses to this node's memory.
    pub remote_accesses: Option<f64>,
    /// Local samples (recordings).
    pub local_samples: Option<u64>,
    /// Remote samples (recordings).
    pub remote_samples: Option<u64>,
    /// μ_i (Eq. 2).
    pub mu: Option<f64>,
    /// The window of Eq. 2, ns.
    pub window_ns: Option<i64>,
    /// Σ_m p_cont(i, m) (Eq. 10): the chance an access meets contention.
    pub p_cont: Option<f64>,
    /// l_i (Eq. 11), ns.
    pub local_latency_ns: Option<i64>,
    /// l_nocont of this node, ns.
    pub nocont_latency_ns: Option<i64>,
    /// L_i (l_i − l_nocont) + Σ_k R'_ki (r_ki − r_ki,nocont) (Eq. 13), ns.
    pub added_latency_ns: Option<i64>,
    /// Σ_k R'_ki r_ki, ns (Section 3.2).
    pub remote_load_ns: Option<i64>,
    /// L_i l_i + Σ_k R'_ki r_ki, ns.
    pub accumulated_latency_ns: Option<i64>,
    /// Accesses from each other node with a share in them.
    pub remote: Vec<RemoteRow>,
}

/// One what-if placement (Eq. 14).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WhatIfRow {
    /// `node:K`, `interleave` or `balance`.
    pub placement: String,
    /// In words.
    pub description: String,
    /// Estimated run time, ns.
    pub time_ns: i64,
    /// Estimated run time minus the measured one, ns.
    pub added_ns: i64,
    /// Relative change of the run time.
    pub change: f64,
    /// The source node whose accesses gain the most.
    pub slowest_node: Option<u32>,
    /// Eq. 13 under that placement, ns.
    pub overhead_ns: i64,
    /// Eq. 13's bottleneck under that placement.
    pub bottleneck_node: Option<u32>,
    /// Share of the accesses that would be local.
    pub local_share: f64,
}

/// One page to migrate.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MigrationRow {
    /// Its process, when known.
    pub pid: Option<u32>,
    /// Its address.
    pub page: Address,
    /// Where it lies.
    pub from_node: u32,
    /// Where the plan puts it.
    pub to_node: u32,
    /// Accesses to it.
    pub accesses: f64,
}

impl From<&Migration> for MigrationRow {
    fn from(m: &Migration) -> MigrationRow {
        MigrationRow {
            pid: m.pid,
            page: Address(m.page),
            from_node: m.from_node,
            to_node: m.to_node,
            accesses: m.accesses,
        }
    }
}

/// The plan's summary.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlanSummary {
    /// Pages the plan moves.
    pub pages_moved: usize,
    /// Passes of Figure 8 kept.
    pub passes: u32,
    /// Moves of lines 2–7 (competitive).
    pub competitive_moves: u64,
    /// Moves of lines 8–16 (balancing).
    pub balancing_moves: u64,
    /// max_i Σ R'_qi r_qi before, ns.
    pub max_remote_load_before_ns: i64,
    /// max_i Σ R'_qi r_qi after, ns.
    pub max_remote_load_after_ns: i64,
}

/// One of the hottest pages.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HotPage {
    /// Its process, when known.
    pub pid: Option<u32>,
    /// Its address.
    pub page: Address,
    /// The node it lay on.
    pub node: u32,
    /// Samples whose data address lay in it (recordings).
    pub samples: Option<u64>,
    /// Accesses to it (CSV input, or samples weighed).
    pub accesses: Option<f64>,
    /// Share of them from CPUs of its own node.
    pub local_share: f64,
}

/// How a recording's samples were taken.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SamplerSummary {
    /// `software` or `hardware`.
    pub method: SamplingMethod,
    /// The event.
    pub event: String,
    /// Sampling period.
    pub period: u64,
    /// `ns` or `events`.
    pub period_unit: PeriodUnit,
    /// Samples taken.
    pub samples: u64,
    /// Samples with a data address and a page node (in the histograms).
    pub resolved: u64,
    /// Samples at instructions without a memory operand.
    pub no_memory_operand: u64,
    /// Samples lost in full buffers.
    pub lost: u64,
    /// Samples whose address or page node could not be found (undecodable
    /// instruction, an address register the instruction overwrote,
    /// thread-local address, page gone).
    pub unresolved: u64,
    /// Notes of the sampler.
    pub notes: Vec<String>,
}

/// The NUMA memory contention section (JSON key `numa`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NumaReport {
    /// Where the histograms come from.
    pub source: String,
    /// Number of NUMA nodes N.
    pub node_count: usize,
    /// True on a machine with one node: there is no remote memory, so
    /// remote figures are absent (`null`), not zero.
    pub single_node: bool,
    /// t_ex, ns.
    pub time_ns: Option<i64>,
    /// The form of Eq. 9 (`printed`, `corrected`).
    pub variant: Variant,
    /// Where the latencies come from; `null`: no calibration, no model.
    pub latency: Option<String>,
    /// How a recording's samples were taken.
    pub sampler: Option<SamplerSummary>,
    /// Per node.
    pub nodes: Vec<NodeRow>,
    /// Eq. 13: estimated execution time lost to contention, ns.
    pub overhead_ns: Option<i64>,
    /// `overhead_ns / time_ns`.
    pub overhead_share: Option<f64>,
    /// The node where Eq. 13's maximum is reached.
    pub bottleneck_node: Option<u32>,
    /// What-if estimates for other placements (Eq. 14).
    pub what_if: Vec<WhatIfRow>,
    /// The migration plan's summary (Section 3), when computed.
    pub plan: Option<PlanSummary>,
    /// The pages the plan moves, the most accessed first.
    pub migrations: Vec<MigrationRow>,
    /// The most accessed pages (at most 100), most first.
    pub hot_pages: Vec<HotPage>,
    /// Facts the reader should know, one sentence each.
    pub notes: Vec<String>,
}

fn ns(v: f64) -> i64 {
    v.round() as i64
}

fn opt(v: f64) -> Option<f64> {
    v.is_finite().then_some(v)
}

/// What the model found, the histograms and the plan, as a section; the
/// second value lists the warnings (unusual inputs, guesses of the model).
///
/// Errors: the histogram names nodes the latency table lacks, or the
/// latencies are inconsistent ([`ModelError`]).
pub fn analyse(
    input: &NumaInput,
    req: &NumaRequest<'_>,
) -> Result<(NumaReport, Vec<String>), ModelError> {
    let mut warnings = input.warnings.clone();
    let mut notes = Vec::new();
    let n = input.nodes;
    let single = n == 1;
    if single {
        notes.push(
            "This machine has one NUMA node: every access is local, there is no remote memory, so remote \
             accesses, remote latencies and migrations are absent (not zero), and every placement is the same."
                .to_string(),
        );
    }
    let est: Option<Estimate> = match (req.latency, &input.accesses, input.time_ns) {
        (Some((_, lat)), Some(h), Some(t)) => Some(estimate(h, lat, t, req.variant)?),
        _ => None,
    };
    if req.latency.is_none() {
        notes.push(
            "No latency table was given: the histograms are shown, the model is not applied. Measure one with \
             `contend numa calibrate -o latency.json` and pass it with --numa-latency (report) or --latency (numa estimate)."
                .to_string(),
        );
    }
    if let Some(e) = &est {
        warnings.extend(e.warnings.iter().cloned());
    }
    let sample_hist = input.samples.as_ref();
    let mut nodes = Vec::with_capacity(n);
    for i in 0..n {
        let nm = est.as_ref().map(|e| &e.nodes[i]);
        let acc = input.accesses.as_ref();
        let remote_sources: Vec<usize> = (0..n)
            .filter(|&k| k != i)
            .filter(|&k| {
                acc.is_some_and(|h| h.get(k, i) > 0.0)
                    || sample_hist.is_some_and(|h| h.get(k, i) > 0.0)
            })
            .collect();
        let lat = req.latency.map(|l| l.1);
        let remote = remote_sources
            .iter()
            .map(|&k| RemoteRow {
                from_node: k as u32,
                accesses: acc.map(|h| h.get(k, i)),
                samples: sample_hist.map(|h| h.get(k, i) as u64),
                latency_ns: nm.and_then(|m| m.remote_latency_ns[k]).map(ns),
                nocont_latency_ns: lat.map(|t| ns(t.r_nocont(k, i))),
            })
            .collect();
        nodes.push(NodeRow {
            node: i as u32,
            local_accesses: acc.map(|h| h.local(i)),
            remote_accesses: if single {
                None
            } else {
                acc.map(|h| h.remote(i))
            },
            local_samples: sample_hist.map(|h| h.local(i) as u64),
            remote_samples: if single {
                None
            } else {
                sample_hist.map(|h| h.remote(i) as u64)
            },
            mu: nm.map(|m| m.mu),
            window_ns: nm.map(|m| ns(m.window_ns)),
            p_cont: nm.map(|m| m.p_cont.iter().sum()),
            local_latency_ns: nm.map(|m| ns(m.local_latency_ns)),
            nocont_latency_ns: lat.map(|t| ns(t.l_nocont(i))),
            added_latency_ns: nm.map(|m| ns(m.added_latency_ns)),
            remote_load_ns: if single {
                None
            } else {
                nm.map(|m| ns(m.remote_load_ns))
            },
            accumulated_latency_ns: nm.map(|m| ns(m.accumulated_latency_ns)),
            remote,
        });
    }
    // The migration plan.
    let mut plan_summary = None;
    let mut migrations = Vec::new();
    let mut plan_after: Option<Histogram> = None;
    if let (true, Some((_, lat)), Some(pages), Some(t)) =
        (req.plan, req.latency, &input.pages, input.time_ns)
    {
        if !single {
            let plan = balance(pages, lat, t, req.variant)?;
            plan_summary = Some(PlanSummary {
                pages_moved: plan.migrations.len(),
                passes: plan.passes,
                competitive_moves: plan.competitive_moves,
                balancing_moves: plan.balancing_moves,
                max_remote_load_before_ns: ns(plan.max_remote_load_before_ns),
                max_remote_load_after_ns: ns(plan.max_remote_load_after_ns),
            });
            migrations = plan.migrations.iter().map(MigrationRow::from).collect();
            plan_after = Some(plan.after);
        }
    } else if req.plan && input.pages.is_none() && req.latency.is_some() {
        notes.push("No per-page histogram: the migration plan needs one (--pages).".to_string());
    }
    // What-if placements.
    let mut what_ifs = Vec::new();
    if let (Some(e), Some((_, lat)), Some(h)) = (&est, req.latency, &input.accesses) {
        let specs = if req.what_if.is_empty() {
            let mut v = vec![WhatIfSpec::AllOn(0), WhatIfSpec::Interleave];
            if plan_after.is_some() {
                v.push(WhatIfSpec::Balance);
            }
            v
        } else {
            req.what_if.clone()
        };
        if single && req.what_if.is_empty() {
            // One node: every placement is the measured one.
        } else {
            for spec in specs {
                let (before, before_est, after) = match &spec {
                    WhatIfSpec::AllOn(k) => {
                        if *k as usize >= n {
                            return Err(ModelError::UnknownNode {
                                what: format!("--what-if {}", spec.key()),
                                node: *k,
                                nodes: n,
                            });
                        }
                        (h.clone(), e.clone(), all_on_node(h, *k as usize))
                    }
                    WhatIfSpec::Interleave => (h.clone(), e.clone(), interleaved(h)),
                    WhatIfSpec::Balance => match (&plan_after, &input.pages) {
                        (Some(after), Some(pages)) => {
                            let before = pages.node_histogram();
                            let before_est = estimate(&before, lat, e.time_ns, req.variant)?;
                            (before, before_est, after.clone())
                        }
                        _ => {
                            notes.push(
                                "The what-if `balance` needs a migration plan, hence per-page histograms and more than one node."
                                    .to_string(),
                            );
                            continue;
                        }
                    },
                };
                let w = what_if(&spec, &before, &before_est, &after, lat, req.variant)?;
                what_ifs.push(WhatIfRow {
                    placement: w.placement,
                    description: w.description,
                    time_ns: ns(w.time_ns),
                    added_ns: ns(w.added_ns),
                    change: w.change,
                    slowest_node: w.slowest_node.map(|k| k as u32),
                    overhead_ns: ns(w.overhead_ns),
                    bottleneck_node: w.bottleneck_node.map(|k| k as u32),
                    local_share: w.local_share,
                });
            }
        }
    }
    // The hottest pages.
    let hot_pages = if !input.hot_samples.is_empty() {
        let weighed: std::collections::HashMap<(Option<u32>, u64), f64> = input
            .pages
            .as_ref()
            .map(|p| {
                p.hottest(usize::MAX)
                    .into_iter()
                    .map(|(pid, page, _, acc, _)| ((pid, page), acc))
                    .collect()
            })
            .unwrap_or_default();
        input
            .hot_samples
            .iter()
            .map(|&(pid, page, node, samples, local)| HotPage {
                pid,
                page: Address(page),
                node,
                samples: Some(samples as u64),
                accesses: weighed.get(&(pid, page)).copied(),
                local_share: if samples > 0.0 { local / samples } else { 0.0 },
            })
            .collect()
    } else if let Some(p) = &input.pages {
        p.hottest(super::input::HOT_PAGES)
            .into_iter()
            .map(|(pid, page, node, acc, local)| HotPage {
                pid,
                page: Address(page),
                node,
                samples: None,
                accesses: Some(acc),
                local_share: if acc > 0.0 { local / acc } else { 0.0 },
            })
            .collect()
    } else {
        Vec::new()
    };
    let sampler = input.sampler.as_ref().map(|s| SamplerSummary {
        method: s.method,
        event: s.event.clone(),
        period: s.period,
        period_unit: s.period_unit,
        samples: s.samples,
        resolved: s.resolved,
        no_memory_operand: s.no_memory_operand,
        lost: s.lost,
        unresolved: s.undecodable + s.segment_relative + s.unresolved_page + s.address_overwritten,
        notes: s.notes.clone(),
    });
    let overhead = est.as_ref().map(|e| e.overhead_ns);
    Ok((
        NumaReport {
            source: input.source.clone(),
            node_count: n,
            single_node: single,
            time_ns: input.time_ns.map(ns),
            variant: req.variant,
            latency: req.latency.map(|l| l.0.to_string()),
            sampler,
            nodes,
            overhead_ns: overhead.map(ns),
            overhead_share: match (overhead, input.time_ns) {
                (Some(o), Some(t)) if t > 0.0 => opt(o / t),
                _ => None,
            },
            bottleneck_node: est
                .as_ref()
                .and_then(|e| e.bottleneck_node)
                .map(|b| b as u32),
            what_if: what_ifs,
            plan: plan_summary,
            migrations,
            hot_pages,
            notes,
        },
        warnings,
    ))
}
