//! The NUMA contention model (Nikolopoulos Eq. 1–14) and the migration
//! algorithm (Section 3.2, Figure 8) against results worked out by hand
//! for 2 and 4 nodes (the arithmetic is in the comments), and a 64-node
//! case against a brute-force enumeration of the ordered tuples of Eq. 8–9.

use contend::numa::balance::{balance, PageHistogram};
use contend::numa::model::{estimate, Histogram, Variant};
use contend::numa::whatif::{all_on_node, interleaved, what_if, WhatIfSpec};
use contend::numa::{analyse, NumaInput, NumaRequest};
use contend_trace::numa::{LatencyTable, NodeAccesses, PageAccesses};

fn close(got: f64, want: f64, what: &str) {
    let tol = 1e-9 * want.abs().max(1.0);
    assert!((got - want).abs() <= tol, "{what}: got {got}, want {want}");
}

/// N nodes, the same latencies everywhere: l_nocont = 100 ns, l_cont(m) =
/// 100 + 50·m ns; r_nocont = 200 ns, r_cont(m) = 200 + 100·m ns.
fn table(n: usize) -> LatencyTable {
    LatencyTable {
        nodes: n,
        l_nocont_ns: vec![100.0; n],
        l_cont_ns: vec![(1..=n).map(|m| 100.0 + 50.0 * m as f64).collect(); n],
        r_nocont_ns: (0..n)
            .map(|k| (0..n).map(|i| (k != i).then_some(200.0)).collect())
            .collect(),
        r_cont_ns: (0..n)
            .map(|k| {
                (0..n)
                    .map(|i| (k != i).then(|| (1..=n).map(|m| 200.0 + 100.0 * m as f64).collect()))
                    .collect()
            })
            .collect(),
        restart_ns: None,
        calibration: None,
    }
}

/// No contention effect at all: l = 100 ns, r = 200 ns whatever m, so the
/// latencies of the migration algorithm are constants.
fn flat(n: usize) -> LatencyTable {
    let mut t = table(n);
    for i in 0..n {
        t.l_cont_ns[i] = vec![100.0; n];
        for k in 0..n {
            if k != i {
                t.r_cont_ns[k][i] = Some(vec![200.0; n]);
            }
        }
    }
    t
}

fn hist(n: usize, entries: &[(usize, usize, f64)]) -> Histogram {
    let mut h = Histogram::new(n);
    for &(k, i, a) in entries {
        h.add(k, i, a);
    }
    h
}

const MS: f64 = 1e6;

/// Two nodes, t_ex = 1 ms, window = l_nocont = 100 ns.
/// Node 0: L_0 = 6000, R'_10 = 4000 (T = 10000). Node 1: L_1 = 2000.
#[test]
fn two_nodes_every_equation_by_hand() {
    let lat = table(2);
    let h = hist(2, &[(0, 0, 6000.0), (1, 0, 4000.0), (1, 1, 2000.0)]);
    let e = estimate(&h, &lat, MS, Variant::Printed).unwrap();
    let n0 = &e.nodes[0];
    // Eq. 1: R_0 = R'_10 = 4000.
    close(n0.remote_accesses, 4000.0, "R_0");
    // Eq. 2: μ_0 = 10000 · 100 / 1e6 = 1.
    close(n0.mu, 1.0, "μ_0");
    // Eq. 3: p_0(0) = e^-1, p_0(1) = e^-1, p_0(2) = e^-1 / 2.
    let e1 = (-1.0f64).exp();
    close(n0.p_arrivals[1], e1, "p_0(1)");
    close(n0.p_arrivals[2], e1 / 2.0, "p_0(2)");
    // Eq. 6: p_r(0,1) = 4000/10000 = 0.4; Eq. 7: p_r(0,2) = 0 (one
    // remote node, no pair of distinct ones).
    close(n0.p_remote[0], 0.4, "p_r(0,1)");
    close(n0.p_remote[1], 0.0, "p_r(0,2)");
    // Eq. 9 as printed: p_lr(0,1) = 6000/10000 = 0.6;
    // p_lr(0,2) = 0.6 · 4000/10000 = 0.24.
    close(n0.p_local_remote[0], 0.6, "p_lr(0,1)");
    close(n0.p_local_remote[1], 0.24, "p_lr(0,2)");
    // Eq. 10: p_cont(0,1) = e^-1 (0.4 + 0.6) = e^-1 = 0.367879;
    // p_cont(0,2) = e^-1/2 · 0.24 = 0.0441455.
    close(n0.p_cont[0], e1, "p_cont(0,1)");
    close(n0.p_cont[1], e1 / 2.0 * 0.24, "p_cont(0,2)");
    // Eq. 11: l_0 = (1 − 0.411) · 100 + 0.367879 · 150 + 0.0441455 · 200
    //             = 100 + 0.367879 · 50 + 0.0441455 · 100 = 122.8085 ns.
    let l0 = 100.0 + e1 * 50.0 + e1 / 2.0 * 0.24 * 100.0;
    close(n0.local_latency_ns, l0, "l_0");
    assert!((l0 - 122.8085).abs() < 1e-4);
    // Eq. 12: r_10 = 200 + 0.367879 · 100 + 0.0441455 · 200 = 245.6171 ns.
    let r10 = 200.0 + e1 * 100.0 + e1 / 2.0 * 0.24 * 200.0;
    close(n0.remote_latency_ns[1].unwrap(), r10, "r_10");
    assert!((r10 - 245.6171).abs() < 1e-4);
    // Eq. 13, node 0: 6000 · (l_0 − 100) + 4000 · (r_10 − 200)
    //   = 6000 · 22.8085 + 4000 · 45.6171 = 136851.2 + 182468.2 = 319319.4 ns.
    let added0 = 6000.0 * (l0 - 100.0) + 4000.0 * (r10 - 200.0);
    close(n0.added_latency_ns, added0, "node 0 added");
    assert!((added0 - 319_319.35).abs() < 0.1);
    // Node 1: T = 2000, μ_1 = 0.2, p_1(1) = 0.2 e^-0.2 = 0.163746;
    // p_r(1,1) = 0, p_lr(1,1) = 1, p_lr(1,2) = 1 · 0/2000 = 0, so
    // l_1 = 100 + 0.163746 · 50 = 108.1873 ns; r_01 = 200 + 16.3746;
    // Eq. 13, node 1: 2000 · 8.1873 = 16374.6 ns (R'_01 = 0).
    let p11 = 0.2 * (-0.2f64).exp();
    let n1 = &e.nodes[1];
    close(n1.mu, 0.2, "μ_1");
    close(n1.local_latency_ns, 100.0 + p11 * 50.0, "l_1");
    close(
        n1.remote_latency_ns[0].unwrap(),
        200.0 + p11 * 100.0,
        "r_01",
    );
    close(n1.added_latency_ns, 2000.0 * p11 * 50.0, "node 1 added");
    // Eq. 13: the maximum is node 0's.
    close(e.overhead_ns, added0, "overhead");
    assert_eq!(e.bottleneck_node, Some(0));
    // Remote load (Section 3): RL_0 = 4000 · r_10, RL_1 = 0.
    close(n0.remote_load_ns, 4000.0 * r10, "RL_0");
    close(n1.remote_load_ns, 0.0, "RL_1");
}

/// The corrected Eq. 9 draws the remote accesses after the local one
/// without replacement: p_lr(0,2) = 0.6 · 4000/9999 = 0.2400240.
#[test]
fn corrected_eq9_changes_only_its_denominators() {
    let lat = table(2);
    let h = hist(2, &[(0, 0, 6000.0), (1, 0, 4000.0), (1, 1, 2000.0)]);
    let e = estimate(&h, &lat, MS, Variant::Corrected).unwrap();
    let n0 = &e.nodes[0];
    close(n0.p_local_remote[0], 0.6, "p_lr(0,1)");
    close(n0.p_local_remote[1], 0.6 * 4000.0 / 9999.0, "p_lr(0,2)");
    close(n0.p_remote[0], 0.4, "p_r unchanged");
    let e1 = (-1.0f64).exp();
    let l0 = 100.0 + e1 * 50.0 + e1 / 2.0 * (0.6 * 4000.0 / 9999.0) * 100.0;
    close(n0.local_latency_ns, l0, "l_0 corrected");
}

/// Four nodes, node 0: L_0 = 4000, R'_10 = 3000, R'_20 = 2000, R'_30 =
/// 1000, so T = 10000.
#[test]
fn four_nodes_eq8_and_eq9_by_hand() {
    let lat = table(4);
    let h = hist(
        4,
        &[
            (0, 0, 4000.0),
            (1, 0, 3000.0),
            (2, 0, 2000.0),
            (3, 0, 1000.0),
        ],
    );
    let t = 10000.0;
    // Eq. 6: p_r(0,1) = 6000/10000 = 0.6.
    // Eq. 7: p_r(0,2) = Σ_{k1≠k2} R'R' / (T (T−1)) = 2 (3000·2000 + 3000·1000
    //        + 2000·1000) / (10000 · 9999) = 22e6 / 99 990 000 = 0.2200220.
    // Eq. 8: p_r(0,3) = 3! · 3000·2000·1000 / (10000·9999·9998)
    //        = 36e9 / 999 700 020 000 = 0.0360108; p_r(0,4) = 0.
    let pr = [
        0.6,
        22e6 / (t * (t - 1.0)),
        36e9 / (t * (t - 1.0) * (t - 2.0)),
        0.0,
    ];
    // Eq. 9 printed: p_lr(0,m) = 0.4 · (the m−1 remote products over
    // T, T−1, …): 0.4, 0.4·0.6 = 0.24, 0.4·0.2200220, 0.4·0.0360108.
    let plr = [0.4, 0.4 * 0.6, 0.4 * pr[1], 0.4 * pr[2]];
    // Corrected: the remote factors over T−1, T−2, …:
    // 0.4, 0.4·6000/9999, 0.4·22e6/(9999·9998), 0.4·36e9/(9999·9998·9997).
    let plr_c = [
        0.4,
        0.4 * 6000.0 / (t - 1.0),
        0.4 * 22e6 / ((t - 1.0) * (t - 2.0)),
        0.4 * 36e9 / ((t - 1.0) * (t - 2.0) * (t - 3.0)),
    ];
    for (variant, want_lr) in [(Variant::Printed, plr), (Variant::Corrected, plr_c)] {
        let e = estimate(&h, &lat, MS, variant).unwrap();
        let n0 = &e.nodes[0];
        for m in 1..=4 {
            close(n0.p_remote[m - 1], pr[m - 1], &format!("p_r(0,{m})"));
            close(
                n0.p_local_remote[m - 1],
                want_lr[m - 1],
                &format!("p_lr(0,{m}) {variant:?}"),
            );
            // Eq. 10 with μ_0 = 10000 · 100 / 1e6 = 1: p_0(m) = e^-1 / m!.
            let fact: f64 = (1..=m).map(|j| j as f64).product();
            let p = (-1.0f64).exp() / fact;
            close(
                n0.p_cont[m - 1],
                p * (pr[m - 1] + want_lr[m - 1]),
                &format!("p_cont(0,{m})"),
            );
        }
        // Eq. 11: l_0 = 100 + Σ_m p_cont(0,m) · 50 m; Eq. 12: r_k0 =
        // 200 + Σ_m p_cont(0,m) · 100 m (the table adds 50 and 100 ns per
        // contender).
        let s1: f64 = (1..=4).map(|m| n0.p_cont[m - 1] * m as f64).sum();
        close(n0.local_latency_ns, 100.0 + 50.0 * s1, "l_0");
        for k in 1..4 {
            close(n0.remote_latency_ns[k].unwrap(), 200.0 + 100.0 * s1, "r_k0");
        }
        // Eq. 13: 4000 · 50 s1 + (3000 + 2000 + 1000) · 100 s1.
        close(
            n0.added_latency_ns,
            4000.0 * 50.0 * s1 + 6000.0 * 100.0 * s1,
            "added_0",
        );
        // Nodes 1..3 are never accessed: Eq. 13's maximum is node 0.
        assert_eq!(e.bottleneck_node, Some(0));
        close(e.overhead_ns, n0.added_latency_ns, "overhead");
    }
}

/// Eq. 14 for the histogram of the two-node example moved entirely to
/// node 1 (the paper's W version, with node 1 as the target).
///
/// After: node 1 gets L_1 = 6000 (node 1's 4000 + 2000) and R'_01 = 6000,
/// T = 12000, μ_1 = 1.2, p(1) = 1.2 e^-1.2 = 0.361433, p(2) = 0.72 e^-1.2
/// = 0.216860; p_r(1,1) = 0.5, p_lr(1,1) = 0.5, p_lr(1,2) = 0.5 · 0.5 =
/// 0.25: l_1,w = 100 + 0.361433 · 50 + 0.216860 · 0.25 · 100 = 123.4931,
/// r_01,w = 200 + 0.361433 · 100 + 0.216860 · 0.25 · 200 = 246.9863.
/// Eq. 14, node 0's line: L_0 (r_01,w − l_0,ft) = 6000 (246.9863 −
/// 122.8085) = 745 066.6; node 1's line: L_1 (l_1,w − l_1,ft) + R'_10
/// (l_1,w − r_10,ft) = 2000 (123.4931 − 108.1873) + 4000 (123.4931 −
/// 245.6171) = −457 883.9. t_est = 1 ms + 745 066.6 ns.
#[test]
fn what_if_all_on_one_node_is_eq14() {
    let lat = table(2);
    let h = hist(2, &[(0, 0, 6000.0), (1, 0, 4000.0), (1, 1, 2000.0)]);
    let ft = estimate(&h, &lat, MS, Variant::Printed).unwrap();
    let w_hist = all_on_node(&h, 1);
    let w = what_if(
        &WhatIfSpec::AllOn(1),
        &h,
        &ft,
        &w_hist,
        &lat,
        Variant::Printed,
    )
    .unwrap();
    let e12 = (-1.2f64).exp();
    let (p1, p2) = (1.2 * e12, 0.72 * e12);
    let l1w = 100.0 + p1 * 50.0 + p2 * 0.25 * 100.0;
    let r01w = 200.0 + p1 * 100.0 + p2 * 0.25 * 200.0;
    let l0ft = ft.nodes[0].local_latency_ns;
    let l1ft = ft.nodes[1].local_latency_ns;
    let r10ft = ft.nodes[0].remote_latency_ns[1].unwrap();
    // The two lines of Eq. 14, in the paper's form.
    let line_target = 2000.0 * (l1w - l1ft) + 4000.0 * (l1w - r10ft);
    let line_other = 6000.0 * (r01w - l0ft);
    close(w.per_node_added_ns[1], line_target, "Eq. 14 line of node 1");
    close(w.per_node_added_ns[0], line_other, "Eq. 14 line of node 0");
    assert!((line_other - 745_066.6).abs() < 0.1, "{line_other}");
    assert!((line_target + 457_883.9).abs() < 0.1, "{line_target}");
    close(w.time_ns, MS + line_other, "t_est");
    assert_eq!(w.slowest_node, Some(0));
    close(w.local_share, 0.5, "local share after");

    // Interleaved: each node's 6000 accesses go 3000 to each node; both
    // nodes get T = 6000, μ = 0.6, p(1) = 0.6 e^-0.6, p(2) = 0.18 e^-0.6,
    // p_lr(i,2) = 0.25: l' = 100 + 50 p(1) + 25 p(2), r' = 200 + 100 p(1)
    // + 50 p(2). Node 0: 3000 l' + 3000 r' − 6000 l_0,ft; node 1:
    // 3000 l' + 3000 r' − (4000 r_10,ft + 2000 l_1,ft).
    let il = interleaved(&h);
    let w = what_if(
        &WhatIfSpec::Interleave,
        &h,
        &ft,
        &il,
        &lat,
        Variant::Printed,
    )
    .unwrap();
    let e06 = (-0.6f64).exp();
    let (q1, q2) = (0.6 * e06, 0.18 * e06);
    let l = 100.0 + 50.0 * q1 + 25.0 * q2;
    let r = 200.0 + 100.0 * q1 + 50.0 * q2;
    close(
        w.per_node_added_ns[0],
        3000.0 * (l + r) - 6000.0 * l0ft,
        "interleave node 0",
    );
    close(
        w.per_node_added_ns[1],
        3000.0 * (l + r) - 4000.0 * r10ft - 2000.0 * l1ft,
        "interleave node 1",
    );
    close(w.time_ns, MS + w.per_node_added_ns[0], "t_est interleaved");
}

fn page(page: u64, from: u32, to: u32, accesses: f64) -> PageAccesses {
    PageAccesses {
        page,
        from_node: from,
        to_node: to,
        accesses,
    }
}

/// The pages of [`migration_plan_two_nodes`].
fn migration_pages() -> [PageAccesses; 6] {
    [
        page(0x1000, 0, 0, 100.0),
        page(0x1000, 1, 0, 100.0),
        page(0x2000, 0, 0, 500.0),
        page(0x2000, 1, 0, 200.0),
        page(0x3000, 0, 0, 300.0),
        page(0x4000, 1, 1, 1000.0),
    ]
}

/// Two nodes, constant latencies (l = 100, r = 200). On node 0: page A
/// with 100 accesses from node 0 and 100 from node 1, B with 500 from 0
/// and 200 from 1, C with 300 from 0; on node 1: D with 1000 from 1.
/// RL_0 = (100 + 200) · 200 = 60000, RL_1 = 0.
///
/// Pass 1 on node 0, line 3: A: 100 · 200 = 20000 > 100 · 100 → A to node
/// 1; B: 200 · 200 = 40000 < 500 · 100 = 50000, stays; line 10: B's
/// 40000 < 50000, C has no remote: nothing. Node 1 has nothing to move.
/// RL_0 = 200 · 200 = 40000, RL_1 = 100 · 200 = 20000: max 40000 < 60000,
/// kept. Pass 2 moves A back (on node 1 it has 100 · 200 remote against
/// 100 · 100 local), max is 60000 again: undone, stop. Plan: A 0 → 1.
#[test]
fn migration_plan_two_nodes() {
    let rows = migration_pages();
    let pages = PageHistogram::from_rows(2, &rows, "pages.csv").unwrap();
    let plan = balance(&pages, &flat(2), MS, Variant::Printed).unwrap();
    assert_eq!(plan.migrations.len(), 1, "{:?}", plan.migrations);
    let m = &plan.migrations[0];
    assert_eq!(
        (m.page, m.from_node, m.to_node, m.accesses),
        (0x1000, 0, 1, 200.0)
    );
    assert_eq!(
        (plan.passes, plan.competitive_moves, plan.balancing_moves),
        (1, 1, 0)
    );
    close(plan.max_remote_load_before_ns, 60000.0, "max RL before");
    close(plan.max_remote_load_after_ns, 40000.0, "max RL after");
    assert_eq!(plan.after.get(0, 1), 100.0);
    assert_eq!(plan.after.local(1), 1100.0);
}

/// Four nodes, constant latencies (l = 100, r = 200). Node 0 holds P1
/// (100 from node 0, 40 each from nodes 1, 2, 3), P2 (100 from 0, 30 each
/// from 1, 2, 3) and P3 (1000 from 0); node 1: Q1 (500 from 1); node 2:
/// Q2 (500 from 2, 10 from 0); node 3: Q3 (500 from 3, 20 from 0).
/// RL = (42000, 0, 2000, 4000).
///
/// Pass 1, node 0: line 3 fails for P1 (40 · 200 = 8000 < 100 · 100) and
/// P2; line 10 holds for P1 (120 · 200 = 24000 > 10000) and P2 (18000).
/// P1: least loaded other node 1 (RL 0); after the move RL_1 would be
/// 0 + (100 + 40 + 40) · 200 = 36000 < RL_0 = 42000 → P1 to node 1, RL_0 =
/// 18000. P2: least loaded is now node 2 (2000): 2000 + 160 · 200 = 34000,
/// not < 18000 → stays. Max RL 36000 < 42000: kept.
/// Pass 2, node 1 first (36000): P1 there has 100 · 200 from node 0 >
/// 40 · 100 local → back to node 0 (line 4 picks node 0, RL_0 = 42000,
/// RL_1 = 0); node 0: P2 to node 1 (0 + 160 · 200 = 32000 < 42000), RL_0 =
/// 24000. Max 32000 < 36000: kept.
/// Pass 3 brings back the state of pass 1 (max 36000 ≥ 32000): undone.
/// Plan: P2 0 → 1; 1 competitive and 2 balancing moves in 2 passes.
#[test]
fn migration_plan_four_nodes() {
    let mut rows = vec![
        page(0x10000, 0, 0, 100.0),
        page(0x11000, 0, 0, 100.0),
        page(0x12000, 0, 0, 1000.0),
    ];
    for k in 1..4 {
        rows.push(page(0x10000, k, 0, 40.0));
        rows.push(page(0x11000, k, 0, 30.0));
    }
    rows.extend([
        page(0x20000, 1, 1, 500.0),
        page(0x30000, 2, 2, 500.0),
        page(0x30000, 0, 2, 10.0),
        page(0x40000, 3, 3, 500.0),
        page(0x40000, 0, 3, 20.0),
    ]);
    let pages = PageHistogram::from_rows(4, &rows, "pages.csv").unwrap();
    let lat = flat(4);
    let plan = balance(&pages, &lat, MS, Variant::Printed).unwrap();
    let moved: Vec<(u64, u32, u32)> = plan
        .migrations
        .iter()
        .map(|m| (m.page, m.from_node, m.to_node))
        .collect();
    assert_eq!(moved, vec![(0x11000, 0, 1)]);
    assert_eq!(
        (plan.passes, plan.competitive_moves, plan.balancing_moves),
        (2, 1, 2)
    );
    close(plan.max_remote_load_before_ns, 42000.0, "before");
    close(plan.max_remote_load_after_ns, 32000.0, "after");

    // The what-if of the plan with constant latencies: P2's 100 accesses
    // from node 0 become remote (+100 · (200 − 100) = +10000 ns for node
    // 0), node 1's 30 become local (−30 · 100 = −3000 ns), nodes 2 and 3
    // stay remote (0). t_est = t_ex + 10000 ns, slowest node 0.
    let before = pages.node_histogram();
    let est = estimate(&before, &lat, MS, Variant::Printed).unwrap();
    let w = what_if(
        &WhatIfSpec::Balance,
        &before,
        &est,
        &plan.after,
        &lat,
        Variant::Printed,
    )
    .unwrap();
    close(w.per_node_added_ns[0], 10000.0, "node 0");
    close(w.per_node_added_ns[1], -3000.0, "node 1");
    close(w.per_node_added_ns[2], 0.0, "node 2");
    close(w.time_ns, MS + 10000.0, "t_est");
}

/// p_r(i, m) by enumerating every ordered tuple of distinct remote nodes,
/// the denominators exactly as printed in Eq. 8.
fn brute_p_r(h: &Histogram, i: usize, m: usize) -> f64 {
    let n = h.nodes();
    let t = h.local(i) + h.remote(i);
    let sources: Vec<f64> = (0..n)
        .filter(|&k| k != i)
        .map(|k| h.get(k, i))
        .filter(|&a| a > 0.0)
        .collect();
    fn go(s: &[f64], used: &mut [bool], t: f64, depth: usize, m: usize) -> f64 {
        if depth == m {
            return 1.0;
        }
        let mut sum = 0.0;
        for k in 0..s.len() {
            if !used[k] {
                used[k] = true;
                sum += s[k] / (t - depth as f64) * go(s, used, t, depth + 1, m);
                used[k] = false;
            }
        }
        sum
    }
    go(&sources, &mut vec![false; sources.len()], t, 0, m)
}

/// p_lr(i, m) as printed in Eq. 9: L/T times the (m−1)-tuples over T, T−1, ….
fn brute_p_lr(h: &Histogram, i: usize, m: usize) -> f64 {
    let t = h.local(i) + h.remote(i);
    h.local(i) / t * brute_p_r(h, i, m - 1)
}

/// 64 nodes, a deterministic pseudo-random histogram: every 8th node is
/// accessed from 5 other nodes only, so brute force enumerates all its
/// tuples; the others are accessed from every node, and brute force
/// checks m ≤ 3 there (63·62·61 tuples). The model itself is O(N²) per
/// node (bench/numa_model.sh times it).
#[test]
fn sixty_four_nodes_agree_with_brute_force() {
    let n = 64;
    let lat = table(n);
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = || {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 33) as f64 / (1u64 << 31) as f64
    };
    let mut h = Histogram::new(n);
    for i in 0..n {
        if i % 8 == 0 {
            for d in 1..=5 {
                h.add((i + d * 7) % n, i, (1000.0 * next()).round() + 1.0);
            }
            h.add(i, i, 5000.0);
        } else {
            for k in 0..n {
                h.add(k, i, (2000.0 * next()).round() + 1.0);
            }
        }
    }
    // t_ex chosen so that μ is about 3 for the dense nodes (T ≈ 64 000):
    // the Poisson terms of m up to ~10 matter.
    let e = estimate(&h, &lat, 2e6, Variant::Printed).unwrap();
    for i in 0..n {
        let nm = &e.nodes[i];
        let max_m = if i % 8 == 0 { 6 } else { 3 };
        for m in 1..=max_m {
            let want = brute_p_r(&h, i, m);
            let got = nm.p_remote[m - 1];
            assert!(
                (got - want).abs() <= 1e-10 * want.max(1e-300),
                "p_r({i},{m}) {got} vs {want}"
            );
            let want = brute_p_lr(&h, i, m);
            let got = nm.p_local_remote[m - 1];
            assert!(
                (got - want).abs() <= 1e-10 * want.max(1e-300),
                "p_lr({i},{m}) {got} vs {want}"
            );
        }
        if i % 8 == 0 {
            // Five remote nodes: no 6-tuple of distinct ones.
            assert_eq!(nm.p_remote[5], 0.0);
        }
        assert!(nm.local_latency_ns.is_finite() && nm.local_latency_ns >= 100.0);
    }
    assert!(e.overhead_ns > 0.0 && e.bottleneck_node.is_some());
}

/// A histogram naming a node the calibration lacks is an error that names
/// both; an empty input gives an empty model, not a panic.
#[test]
fn histograms_must_fit_the_calibration() {
    let rows = [NodeAccesses {
        from_node: 0,
        to_node: 3,
        accesses: 10.0,
    }];
    let e = NumaInput::from_csv(Some(("a.csv", &rows)), None, Some(2), Some(MS)).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("a.csv names node 3, but the latency table has 2 node(s)"),
        "{e}"
    );
    let pages = [page(0x1000, 5, 0, 1.0)];
    let e = NumaInput::from_csv(None, Some(("p.csv", &pages)), Some(2), Some(MS)).unwrap_err();
    assert!(e.to_string().contains("p.csv names node 5"), "{e}");
}

/// One node: the report says so, remote figures are null (absent), not 0,
/// and there is no plan.
#[test]
fn one_node_report_has_no_remote_figures() {
    let rows = [NodeAccesses {
        from_node: 0,
        to_node: 0,
        accesses: 1000.0,
    }];
    let input = NumaInput::from_csv(Some(("a.csv", &rows)), None, Some(1), Some(MS)).unwrap();
    let mut lat = table(1);
    lat.r_nocont_ns = vec![vec![None]];
    lat.r_cont_ns = vec![vec![None]];
    let (r, _) = analyse(
        &input,
        &NumaRequest {
            latency: Some(("latency.json", &lat)),
            plan: true,
            ..NumaRequest::default()
        },
    )
    .unwrap();
    assert!(r.single_node);
    let json = serde_json::to_value(&r).unwrap();
    assert_eq!(json["nodes"][0]["remote_accesses"], serde_json::Value::Null);
    assert_eq!(json["nodes"][0]["remote_load_ns"], serde_json::Value::Null);
    assert!(json["nodes"][0]["remote"].as_array().unwrap().is_empty());
    assert!(r.notes[0].contains("one NUMA node"));
    assert!(r.migrations.is_empty() && r.plan.is_none() && r.what_if.is_empty());
    // μ = 1000 · 100 / 1e6 = 0.1; added = 1000 · 0.1 e^-0.1 · 50 = 4524.2 ns.
    assert_eq!(
        r.overhead_ns,
        Some((1000.0 * 0.1 * (-0.1f64).exp() * 50.0f64).round() as i64)
    );
    // 4524 ns of t_ex = 1 ms
    assert_eq!(
        contend::report::ReportSection::headlines(&r),
        ["Memory contention (NUMA model, Eq. 13): an estimated 4.524 µs lost, 0.45 % of the run's time (one node: no remote memory)."]
    );
}

/// "At a glance" of the NUMA section: Eq. 13's estimate with its share and
/// bottleneck node, and the plan of [`migration_plan_two_nodes`] (page A
/// moved, the largest remote load 60 → 40 µs), on constant latencies.
#[test]
fn at_a_glance_gives_the_time_lost_and_the_plan() {
    let rows = migration_pages();
    let input = NumaInput::from_csv(None, Some(("pages.csv", &rows)), Some(2), Some(MS)).unwrap();
    let (r, _) = analyse(
        &input,
        &NumaRequest {
            latency: Some(("latency.json", &flat(2))),
            plan: true,
            ..NumaRequest::default()
        },
    )
    .unwrap();
    // constant latencies: no contention, so no bottleneck to name
    assert_eq!(
        contend::report::ReportSection::headlines(&r),
        [
            "Memory contention (NUMA model, Eq. 13): an estimated 0 ns lost, 0.00 % of the run's time.",
            "Page migration plan: 1 page to move; the largest remote load 60.00 µs → 40.00 µs.",
        ]
    );
}
