//! Root causes of wait states (delay analysis, Böhme et al. TOPC 2016) and
//! the critical path across ranks (Böhme et al. IPDPS 2012) on hand-built
//! traces, every number worked out by hand in the comments from the
//! definitions in docs/mpi-wait-states.md ("Root causes", "Critical path").
//!
//! Call sites (mpi_builders): every call of one MPI function has the site
//! `0x100 + code`: MPI_Init 0x101 (app.c:257), MPI_Finalize 0x103 (259),
//! MPI_Send 0x10a (266), MPI_Recv 0x10e (270), MPI_Barrier 0x132 (306),
//! MPI_Bcast 0x133 (307).

use contend::mpi::{analyze, build_report, build_report_with, MpiOptions, MpiReport};
use contend_trace::mpi::{MpiComm, MpiOp, MpiRecording, WORLD_COMM};

use crate::mpi_builders::*;

const INIT: &str = "MPI_Init at site_101 (app.c:257)";
const FINALIZE: &str = "MPI_Finalize at site_103 (app.c:259)";
const SEND: &str = "MPI_Send at site_10a (app.c:266)";
const RECV: &str = "MPI_Recv at site_10e (app.c:270)";
const BARRIER: &str = "MPI_Barrier at site_132 (app.c:306)";
const BCAST: &str = "MPI_Bcast at site_133 (app.c:307)";

fn compute(after: &str, before: &str) -> String {
    format!("computation after {after} before {before}")
}

fn full_report(rec: &MpiRecording) -> MpiReport {
    build_report(rec, &analyze(rec), &MpiOptions::default(), &mut FakeSites)
}

/// A chain 0 → 1 → 2 → 3 where only rank 0 is late: it computes 100 ns
/// before its send, the others receive at once.
///
/// ```text
/// rank 0: Init 0–10 | compute 10–110 | Send→1 110–115 | Finalize 115–125
/// rank 1: Init 0–10 | Recv←0 10–110  | Send→2 110–115 | Finalize 115–125
/// rank 2: Init 0–10 | Recv←1 10–110  | Send→3 110–115 | Finalize 115–125
/// rank 3: Init 0–10 | Recv←2 10–110  | compute 110–150 | Finalize 150–160
/// ```
fn chain() -> MpiRecording {
    recording(vec![
        rank(0, 4, vec![init(), send0(1, 110, 115), finalize(115, 125)]),
        rank(
            1,
            4,
            vec![
                init(),
                recv0(0, 10, 110),
                send0(2, 110, 115),
                finalize(115, 125),
            ],
        ),
        rank(
            2,
            4,
            vec![
                init(),
                recv0(1, 10, 110),
                send0(3, 110, 115),
                finalize(115, 125),
            ],
        ),
        rank(3, 4, vec![init(), recv0(2, 10, 110), finalize(150, 160)]),
    ])
}

#[test]
fn chain_of_four_with_one_late_rank() {
    // Wait states: every receive waits min(110, 110) − 10 = 100 ns for its
    // sender: W1 (rank 1 for 0), W2 (2 for 1), W3 (3 for 2); Σ 300.
    //
    // Replayed backward. W3: the interval of rank 2 (from the end of
    // MPI_Init, no earlier exchange with rank 3) holds only its Recv, all
    // waiting (ω_2 = 100); rank 3's holds nothing. δ_ω = 100 − 0 = 100 =
    // Δ: all of W3 is passed on: R(W2) = 100. W2 likewise: R(W1) = (100 +
    // 100) · 100/100 = 200. W1: rank 0 computed 10–110 (100 ns) before its
    // Send where rank 1 computed nothing: δ = 100 = Δ. Short-term cost
    // 100 · 1 = 100, long-term 200 · 1 = 200, both on rank 0's computation
    // after MPI_Init before MPI_Send.
    let r = full_report(&chain());
    let d = &r.delay;
    assert_eq!(d.wait_ns, 300);
    assert_eq!((d.short_term_ns, d.long_term_ns), (100, 200));
    assert_eq!(d.unattributed_ns, 0);
    assert_eq!(d.by_rank.len(), 1);
    let top = &d.by_rank[0];
    assert_eq!(
        (top.rank, top.short_term_ns, top.long_term_ns, top.cost_ns),
        (0, 100, 200, 300)
    );
    assert_eq!(top.share, 1.0);
    assert_eq!(top.root_of, 3, "all three wait states go back to rank 0");
    assert_eq!(d.by_region.len(), 1);
    assert_eq!(d.by_region[0].name.region, compute(INIT, SEND));
    assert_eq!(d.by_region[0].name.kind, "computation");
    assert_eq!(d.by_region[0].name.operation, "MPI_Send");
    assert_eq!(d.by_region[0].name.after, INIT);
    // W1 and W2 caused later waits; W2 and W3 were passed on.
    assert_eq!(d.propagating_wait_states, 2);
    assert_eq!(d.indirect_wait_states, 2);
    for w in &d.wait_states {
        assert_eq!(w.wait_ns, 100);
        assert_eq!(w.root_rank, Some(0), "{w:?}");
        assert_eq!(w.root.as_ref().unwrap().region, compute(INIT, SEND));
    }
    let w3 = d.wait_states.iter().find(|w| w.rank == 3).unwrap();
    assert_eq!((w3.cause, w3.indirect_ns, w3.propagated_ns), (2, 100, 0));
    let w1 = d.wait_states.iter().find(|w| w.rank == 1).unwrap();
    assert_eq!((w1.cause, w1.indirect_ns, w1.propagated_ns), (0, 0, 200));
    // The direct cause alone blames rank 1 and 2 as much as rank 0.
    let caused: Vec<u64> = r.by_rank.iter().map(|x| x.caused_ns).collect();
    assert_eq!(caused, vec![100, 100, 100, 0]);
}

#[test]
fn chain_of_four_critical_path() {
    // Rank 3 exits last (160). Backward on rank 3: MPI_Finalize 150–160
    // (10), computation 110–150 (40), then its Recv waited for rank 2
    // until 110: the path jumps to rank 2's Send at 110, its Recv waited
    // for rank 1, which waited for rank 0: on rank 0, computation 10–110
    // (100) and MPI_Init 0–10 (10). Length 10 + 40 + 100 + 10 = 160;
    // rank 0 110 (share 0.6875), rank 3 50 (0.3125); 3 jumps.
    //
    // Imbalance (4 ranks, time outside wait states): MPI_Init 10 on every
    // rank, avg 10, on the path 10 → 0; computation after Init before Send
    // only on rank 0 (100), avg 25 → 75; computation after Recv before
    // Finalize only on rank 3 (40), avg 10 → 30; MPI_Finalize 10 on every
    // rank → 0. Σ 105, 105/160 = 0.65625.
    let r = full_report(&chain());
    let cp = &r.critical_path;
    assert_eq!(cp.length_ns, 160);
    assert_eq!(
        (cp.end_rank, cp.start_rank, cp.jumps),
        (Some(3), Some(0), 3)
    );
    assert_eq!((cp.mpi_ns, cp.compute_ns), (20, 140));
    let ranks: Vec<(u32, u64, u64, u64, f64)> = cp
        .by_rank
        .iter()
        .map(|x| (x.rank, x.ns, x.mpi_ns, x.compute_ns, x.share))
        .collect();
    assert_eq!(
        ranks,
        vec![(0, 110, 10, 100, 0.6875), (3, 50, 10, 40, 0.3125)]
    );
    let regions: Vec<(String, u64, u64, u64)> = cp
        .by_region
        .iter()
        .map(|x| (x.name.region.clone(), x.ns, x.avg_rank_ns, x.imbalance_ns))
        .collect();
    assert_eq!(
        regions,
        vec![
            (compute(INIT, SEND), 100, 25, 75),
            (compute(RECV, FINALIZE), 40, 10, 30),
            (INIT.to_string(), 10, 10, 0),
            (FINALIZE.to_string(), 10, 10, 0),
        ]
    );
    assert_eq!(cp.imbalance_ns, 105);
    assert_eq!(cp.imbalance_share, 0.65625);
}

/// Rank 0 is the root of an `MPI_Bcast` and computes 60 ns before it; the
/// others compute 10, 20 and 30 ns.
///
/// ```text
/// rank 0: Init 0–10 | compute 10–70 | Bcast(root 0) 70–80 | Finalize 80–90
/// rank 1: Init 0–10 | compute 10–20 | Bcast 20–80          | Finalize 80–90
/// rank 2: Init 0–10 | compute 10–30 | Bcast 30–80          | Finalize 80–90
/// rank 3: Init 0–10 | compute 10–40 | Bcast 40–80          | Finalize 80–95
/// ```
#[test]
fn late_broadcast_root() {
    // Late broadcast: ranks 1, 2, 3 wait 70 − 20 = 50, 70 − 30 = 40,
    // 70 − 40 = 30 for the root. For rank 1 the interval (from MPI_Init)
    // holds 60 ns of computation before the Bcast on rank 0 against 10 on
    // rank 1: δ = 50 = Δ, so its 50 ns are a short-term cost of rank 0's
    // computation; likewise 40 and 30. Σ 120, all short-term, none passed
    // on.
    let bcast = |enter| coll(MpiOp::Bcast, WORLD_COMM, Some(0), enter, 80);
    let rec = recording(vec![
        rank(0, 4, vec![init(), bcast(70), finalize(80, 90)]),
        rank(1, 4, vec![init(), bcast(20), finalize(80, 90)]),
        rank(2, 4, vec![init(), bcast(30), finalize(80, 90)]),
        rank(3, 4, vec![init(), bcast(40), finalize(80, 95)]),
    ]);
    let r = full_report(&rec);
    assert_eq!(r.late_broadcast.wait_ns, 120);
    let d = &r.delay;
    assert_eq!((d.short_term_ns, d.long_term_ns), (120, 0));
    assert_eq!(d.by_rank.len(), 1);
    assert_eq!((d.by_rank[0].rank, d.by_rank[0].root_of), (0, 3));
    assert_eq!(d.by_region[0].name.region, compute(INIT, BCAST));
    assert_eq!(d.by_region[0].cost_ns, 120);
    assert_eq!(d.propagating_wait_states, 0);
    assert_eq!(d.indirect_wait_states, 0);
    // Critical path: rank 3 exits last (95). Its MPI_Finalize 80–95 (15);
    // its Bcast waited 30 (40–70), the rest 70–80 (10) is on the path;
    // then rank 0 from its Bcast's entry at 70: computation 10–70 (60),
    // MPI_Init (10). Length 15 + 10 + 60 + 10 = 95.
    let cp = &r.critical_path;
    assert_eq!(cp.length_ns, 95);
    assert_eq!(cp.jumps, 1);
    let ranks: Vec<(u32, u64)> = cp.by_rank.iter().map(|x| (x.rank, x.ns)).collect();
    assert_eq!(ranks, vec![(0, 70), (3, 25)]);
    let bcast_row = cp
        .by_region
        .iter()
        .find(|x| x.name.region == BCAST)
        .unwrap();
    // Outside its wait the Bcast took 10 on every rank (rank 0: 70–80,
    // rank 1: 80 − 20 − 50, …): avg 10, no imbalance.
    assert_eq!(
        (bcast_row.ns, bcast_row.avg_rank_ns, bcast_row.imbalance_ns),
        (10, 10, 0)
    );
}

/// A barrier on the communicator {0, 1} that rank 0 is late for, followed
/// by a chain of messages 1 → 2 → 3.
///
/// ```text
/// rank 0: Init 0–10 | compute 10–70  | Barrier(c7) 70–75 |                | Finalize 100–110
/// rank 1: Init 0–10 | Barrier(c7) 10–75                  | Send→2 75–80   | Finalize 100–110
/// rank 2: Init 0–10 | Recv←1 10–75                       | Send→3 75–80   | Finalize 100–110
/// rank 3: Init 0–10 | Recv←2 10–75                       | compute 75–100 | Finalize 100–120
/// ```
fn barrier_then_chain() -> MpiRecording {
    let barrier = |enter| coll(MpiOp::Barrier, 7, None, enter, 75);
    let pair = MpiComm {
        id: 7,
        world_ranks: vec![0, 1],
    };
    let mut r0 = rank(0, 4, vec![init(), barrier(70), finalize(100, 110)]);
    let mut r1 = rank(
        1,
        4,
        vec![init(), barrier(10), send0(2, 75, 80), finalize(100, 110)],
    );
    r0.comms.push(pair.clone());
    r1.comms.push(pair);
    recording(vec![
        r0,
        r1,
        rank(
            2,
            4,
            vec![
                init(),
                recv0(1, 10, 75),
                send0(3, 75, 80),
                finalize(100, 110),
            ],
        ),
        rank(3, 4, vec![init(), recv0(2, 10, 75), finalize(100, 120)]),
    ])
}

#[test]
fn collective_then_point_to_point_propagation() {
    // Wait states: Wb, rank 1 waits at the barrier 70 − 10 = 60 for rank 0;
    // W2, rank 2 waits min(75, 75) − 10 = 65 for rank 1's Send; W3, rank 3
    // waits 65 for rank 2's Send. Σ 190.
    //
    // W3: rank 2's interval holds its Recv, all waiting (ω = 65): passed
    // on whole, R(W2) = 65.
    // W2: rank 1's interval holds the Barrier: 60 waiting and 5 ns in the
    // call (70–75) that rank 2 did not spend: δ(Barrier) = 5, δ_ω = 60,
    // Δ = 65. Of W2's 65 + R 65 = 130: rank 1's Barrier gets short-term
    // 65 · 5/65 = 5 and long-term 65 · 5/65 = 5; 130 · 60/65 = 120 is
    // passed on, R(Wb) = 120. W2 is 5 direct, 60 indirect.
    // Wb: rank 0 computed 60 ns (10–70) before the Barrier, rank 1 nothing:
    // short-term 60, long-term 120.
    // Totals: rank 0 60 + 120 = 180, rank 1 5 + 5 = 10; short 65, long 125;
    // Σ 190 = the waiting.
    let r = full_report(&barrier_then_chain());
    let d = &r.delay;
    assert_eq!(d.wait_ns, 190);
    assert_eq!((d.short_term_ns, d.long_term_ns), (65, 125));
    let ranks: Vec<(u32, u64, u64, u64)> = d
        .by_rank
        .iter()
        .map(|x| (x.rank, x.short_term_ns, x.long_term_ns, x.root_of))
        .collect();
    assert_eq!(ranks, vec![(0, 60, 120, 3), (1, 5, 5, 0)]);
    let regions: Vec<(Option<u32>, String, u64)> = d
        .by_rank_region
        .iter()
        .map(|x| (x.rank, x.name.region.clone(), x.cost_ns))
        .collect();
    assert_eq!(
        regions,
        vec![
            (Some(0), compute(INIT, BARRIER), 180),
            (Some(1), BARRIER.to_string(), 10)
        ]
    );
    let w2 = d.wait_states.iter().find(|w| w.rank == 2).unwrap();
    assert_eq!((w2.wait_ns, w2.indirect_ns, w2.propagated_ns), (65, 60, 65));
    assert_eq!(
        w2.root_rank,
        Some(0),
        "followed back through rank 1's barrier wait"
    );
    assert_eq!(d.propagating_wait_states, 2);
    assert_eq!(d.indirect_wait_states, 2);

    // Critical path: rank 3 exits last (120): MPI_Finalize 100–120 (20),
    // computation 75–100 (25); its Recv waited for rank 2 until 75 → rank
    // 2's Send at 75; its Recv waited → rank 1's Send at 75; rank 1's
    // Barrier waited until 70, its last 5 ns (70–75) are on the path, then
    // rank 0 from its Barrier's entry at 70: computation 10–70 (60),
    // MPI_Init (10). Length 20 + 25 + 5 + 60 + 10 = 120, 3 jumps.
    let cp = &r.critical_path;
    assert_eq!((cp.length_ns, cp.jumps), (120, 3));
    let ranks: Vec<(u32, u64)> = cp.by_rank.iter().map(|x| (x.rank, x.ns)).collect();
    assert_eq!(ranks, vec![(0, 70), (3, 45), (1, 5)]);
}

#[test]
fn wait_matrix_and_message_statistics() {
    // Chain: rank 1 waited 100 for 0, 2 for 1, 3 for 2 (late senders).
    let r = full_report(&chain());
    let m: Vec<(u32, u32, u64, u64, u64)> = r
        .wait_matrix
        .iter()
        .map(|x| (x.rank, x.cause, x.wait_states, x.wait_ns, x.p2p_wait_ns))
        .collect();
    assert_eq!(
        m,
        vec![
            (1, 0, 1, 100, 100),
            (2, 1, 1, 100, 100),
            (3, 2, 1, 100, 100)
        ]
    );
    // Three 8-byte MPI_Send calls from one site on ranks 0, 1, 2: bucket
    // 8–15 bytes.
    assert_eq!(r.messages_by_site.len(), 1);
    let s = &r.messages_by_site[0];
    assert_eq!(
        (
            s.kind.as_str(),
            s.operation.as_str(),
            s.messages,
            s.bytes,
            s.ranks
        ),
        ("p2p", "MPI_Send", 3, 24, 3)
    );
    assert_eq!((s.min_bytes, s.max_bytes, s.avg_bytes), (8, 8, 8));
    assert_eq!(s.histogram.len(), 1);
    assert_eq!(
        (
            s.histogram[0].min_bytes,
            s.histogram[0].max_bytes,
            s.histogram[0].count
        ),
        (8, 15, 3)
    );
    assert_eq!((r.message_sizes.messages, r.message_sizes.bytes), (3, 24));
    // Per site and rank: rank 1's Recv, 100 ns, all of it wait. Rank 1 ran
    // from the end of MPI_Init (10) to the start of MPI_Finalize (115):
    // 105 ns, of which 105 in MPI (Recv 100 + Send 5): App% 100/105, MPI%
    // 100/105.
    let row = r
        .by_site_rank
        .iter()
        .find(|x| x.rank == 1 && x.operation == "MPI_Recv")
        .unwrap();
    assert_eq!((row.events, row.duration_ns, row.wait_ns), (1, 100, 100));
    assert_eq!((row.min_ns, row.avg_ns, row.max_ns), (100, 100, 100));
    assert!((row.app_share - 100.0 / 105.0).abs() < 1e-12);
    assert!((row.mpi_share - 100.0 / 105.0).abs() < 1e-12);
    // "In MPI" without MPI_Init and MPI_Finalize: rank 3 spent 100 in its
    // Recv and 10 + 10 in Init and Finalize; it ran 150 − 10 = 140 between
    // them.
    let r3 = r.by_rank.iter().find(|x| x.rank == 3).unwrap();
    assert_eq!(
        (r3.mpi_ns, r3.init_finalize_ns, r3.duration_ns),
        (100, 20, 120)
    );
    assert!((r3.mpi_share - 100.0 / 140.0).abs() < 1e-12);
}

#[test]
fn site_filter_keeps_only_matching_sites_in_the_site_tables() {
    // --site 'app.c:266' (MPI_Send): the per-site tables list only the
    // Send site and the regions around it; totals stay those of all calls.
    let rec = chain();
    let a = analyze(&rec);
    let re = regex::Regex::new("app.c:266").unwrap();
    let (r, _) = build_report_with(&rec, &a, &MpiOptions::default(), &mut FakeSites, Some(&re));
    assert_eq!(r.site_filter.as_deref(), Some("app.c:266"));
    assert!(
        r.by_site.iter().all(|s| s.operation == "MPI_Send"),
        "{:?}",
        r.by_site
    );
    assert_eq!(r.by_site.len(), 1);
    assert!(r.by_site_rank.iter().all(|s| s.operation == "MPI_Send"));
    assert_eq!(
        r.delay.by_region.len(),
        1,
        "the computation before MPI_Send"
    );
    assert!(r
        .critical_path
        .by_region
        .iter()
        .all(|x| x.name.region.contains("MPI_Send")));
    assert_eq!(r.late_sender.wait_ns, 300);
    assert_eq!((r.delay.short_term_ns, r.delay.long_term_ns), (100, 200));
    assert_eq!(r.critical_path.length_ns, 160);
}

#[test]
fn a_rank_without_trace_causes_no_wait_state_and_no_jump() {
    // Rank 1 receives from rank 0, whose trace is missing.
    let mut rec = recording(vec![rank(
        1,
        2,
        vec![init(), recv0(0, 10, 110), finalize(110, 120)],
    )]);
    rec.world_size = 2;
    rec.missing_ranks = vec![0];
    // Without the sender's trace the message is unmatched: no wait state.
    let r = full_report(&rec);
    assert_eq!(r.delay.wait_ns, 0);
    assert_eq!(r.critical_path.length_ns, 120);
    assert_eq!(r.critical_path.jumps, 0);
}

#[test]
fn the_interval_starts_at_the_previous_exchange() {
    //   rank 0: Init 0–10 | Recv←1 10–50 | compute 50–70 | Send→1 70–75
    //   rank 1: Init 0–10 | compute 10–50 | Send→0 50–52 | compute 52–54 | Recv←0 54–75
    // W_a: rank 0 waits 50 − 10 = 40 for rank 1 (rank 1 computed 40 more:
    // short-term 40 on rank 1). W_b: rank 1 waits 70 − 54 = 16 for rank 0.
    // Interval: from the previous exchange (rank 0's Recv, rank 1's Send)
    // to the calls: rank 0 computed 20 (Recv → Send), rank 1 computed 2
    // (Send → Recv): different regions, δ(rank 0's computation) = 20 = Δ:
    // W_b's 16 ns go to rank 0's computation after Recv before Send.
    let rec = recording(vec![
        rank(
            0,
            2,
            vec![init(), recv0(1, 10, 50), send0(1, 70, 75), finalize(80, 90)],
        ),
        rank(
            1,
            2,
            vec![init(), send0(0, 50, 52), recv0(0, 54, 75), finalize(80, 90)],
        ),
    ]);
    let r = full_report(&rec);
    let regions: Vec<(Option<u32>, String, u64, u64)> = r
        .delay
        .by_rank_region
        .iter()
        .map(|x| {
            (
                x.rank,
                x.name.region.clone(),
                x.short_term_ns,
                x.long_term_ns,
            )
        })
        .collect();
    assert_eq!(
        regions,
        vec![
            (Some(1), compute(INIT, SEND), 40, 0),
            (Some(0), compute(RECV, SEND), 16, 0),
        ]
    );
}

/// A small ring of `n` ranks, `iters` iterations of Irecv + Isend to the
/// neighbours, a pseudo-random computation, Waitall, and an Allreduce
/// every 4th iteration; times only make sense on one clock.
fn ring(n: u32, iters: u64, seed: u64) -> MpiRecording {
    let mut x = seed;
    let mut rnd = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % 1000
    };
    let mut ev: Vec<Vec<contend_trace::mpi::MpiEvent>> = (0..n).map(|_| vec![init()]).collect();
    let mut now = vec![10u64; n as usize];
    for it in 0..iters {
        let mut posted = vec![0u64; n as usize];
        for r in 0..n as usize {
            let left = (r as u32 + n - 1) % n;
            let right = (r as u32 + 1) % n;
            let t = now[r];
            ev[r].push(irecv(
                contend_trace::mpi::Peer::Rank(left),
                1,
                2 * it + 1,
                t,
                t + 5,
            ));
            ev[r].push(isend(MpiOp::Isend, right, 1, 2 * it + 2, t + 5, t + 10));
            posted[r] = t + 5;
            now[r] = t + 10 + 100 + rnd();
        }
        for r in 0..n as usize {
            let left = (r + n as usize - 1) % n as usize;
            let right = (r as u32 + 1) % n;
            let enter = now[r];
            let exit = enter.max(posted[left]) + 7;
            ev[r].push(wait(
                MpiOp::Waitall,
                enter,
                exit,
                vec![
                    done_recv(2 * it + 1, left as u32, 1),
                    done_send(2 * it + 2, right, 1),
                ],
            ));
            now[r] = exit + rnd() / 4;
        }
        if it % 4 == 3 {
            let last = *now.iter().max().unwrap();
            for r in 0..n as usize {
                ev[r].push(coll(MpiOp::Allreduce, WORLD_COMM, None, now[r], last + 20));
                now[r] = last + 20 + rnd() / 10;
            }
        }
    }
    recording(
        ev.into_iter()
            .enumerate()
            .map(|(r, mut e)| {
                let t = e.last().unwrap().exit_ns;
                e.push(finalize(t + 5, t + 15));
                rank(r as u32, n, e)
            })
            .collect(),
    )
}

#[test]
fn every_nanosecond_of_waiting_ends_up_as_a_cost() {
    // Invariants on pseudo-random rings: Σ short-term + Σ long-term = Σ
    // waiting (all ranks traced); the long-term costs equal the indirect
    // waiting of all wait states; the critical path is never longer than
    // the run, and covers it from its first call on the path to the last
    // exit (no waiting on the path, no gaps).
    for seed in [1u64, 7, 42, 1234, 99_991] {
        let rec = ring(5, 40, seed);
        let r = full_report(&rec);
        let d = &r.delay;
        assert!(d.wait_ns > 0);
        let costs = d.short_term_ns + d.long_term_ns;
        assert!(
            costs.abs_diff(d.wait_ns) <= 2,
            "seed {seed}: costs {costs} vs waiting {}",
            d.wait_ns
        );
        let per_rank: u64 = d.by_rank.iter().map(|x| x.cost_ns).sum();
        assert!(per_rank.abs_diff(costs) <= d.by_rank.len() as u64);
        let total_wait: u64 = r.by_rank.iter().map(|x| x.wait_ns).sum();
        assert_eq!(total_wait, d.wait_ns);
        let first = rec
            .ranks
            .iter()
            .map(|t| t.events.enter_ns(0))
            .min()
            .unwrap();
        let last = rec
            .ranks
            .iter()
            .map(|t| t.events.last().unwrap().exit_ns)
            .max()
            .unwrap();
        let cp = &r.critical_path;
        assert!(cp.length_ns <= last - first, "seed {seed}");
        assert_eq!(
            cp.length_ns,
            last - first,
            "seed {seed}: one clock, no gaps"
        );
        let by_rank: u64 = cp.by_rank.iter().map(|x| x.ns).sum();
        assert_eq!(by_rank, cp.length_ns);
        assert!(cp.imbalance_ns <= cp.length_ns);
    }
}

#[test]
fn garbage_does_not_panic() {
    // Times out of order, causes pointing past the end, a rank that waits
    // for itself: the passes finish and keep their sums.
    let rec = recording(vec![
        rank(
            0,
            2,
            vec![
                recv0(1, 500, 100),
                send0(1, 50, 40),
                recv0(0, 10, 20),
                send0(0, 5, 6),
                coll(MpiOp::Barrier, WORLD_COMM, None, 900, 901),
            ],
        ),
        rank(
            1,
            2,
            vec![
                send0(0, 1_000, 1_001),
                recv0(0, 0, 2_000),
                coll(MpiOp::Barrier, WORLD_COMM, None, 0, 3),
            ],
        ),
    ]);
    let r = full_report(&rec);
    let costs = r.delay.short_term_ns + r.delay.long_term_ns + r.delay.unattributed_ns;
    assert!(costs.abs_diff(r.delay.wait_ns) <= 2);
}

/// `MPI_Sendrecv` with `peer` (tag 0, both ways).
fn sendrecv(peer: u32, enter: u64, exit: u64) -> contend_trace::mpi::MpiEvent {
    use contend_trace::mpi::{Peer, RecvPost, SendPost};
    let mut e = base(MpiOp::Sendrecv, enter, exit);
    e.send = Some(SendPost {
        dest: Peer::Rank(peer),
        tag: 0,
        bytes: 8,
        request: 0,
    });
    e.recv = Some(RecvPost {
        source: Peer::Rank(peer),
        tag: 0,
        bytes: 8,
        request: 0,
    });
    e.completions = vec![done_send(0, peer, 0), done_recv(0, peer, 0)];
    e
}

#[test]
fn no_excess_in_the_interval_goes_to_the_computation_before_the_late_call() {
    //   rank 0: Init 0–10 | Barrier 10–40 | compute 40–60 | Sendrecv↔1 60–65
    //   rank 1: Init 0–10 | Barrier 10–12 | compute 12–32 | Sendrecv↔0 32–65
    // Nobody waits at the barrier (both enter at 10), but rank 0 leaves it
    // 28 ns later. Rank 1 waits in its Sendrecv 60 − 32 = 28 for rank 0's
    // send. The interval starts at the barrier: both computed 20 ns in the
    // same region (after MPI_Barrier before MPI_Sendrecv): Δ = 0. The 28
    // ns go to rank 0's computation before the late call.
    let barrier = |exit| coll(MpiOp::Barrier, WORLD_COMM, None, 10, exit);
    let rec = recording(vec![
        rank(
            0,
            2,
            vec![init(), barrier(40), sendrecv(1, 60, 65), finalize(70, 80)],
        ),
        rank(
            1,
            2,
            vec![init(), barrier(12), sendrecv(0, 32, 65), finalize(70, 80)],
        ),
    ]);
    let r = full_report(&rec);
    assert_eq!(r.late_sender.wait_ns, 28);
    let regions: Vec<(Option<u32>, String, u64)> = r
        .delay
        .by_rank_region
        .iter()
        .map(|x| (x.rank, x.name.region.clone(), x.short_term_ns))
        .collect();
    assert_eq!(
        regions,
        vec![(
            Some(0),
            compute(BARRIER, "MPI_Sendrecv at site_10f (app.c:271)"),
            28
        )]
    );
}

/// `mpi.delay.wait_states` lists the 20 longest wait states by default and
/// says so (`wait_states_truncated`, `wait_states_total`); with
/// `--root-causes all` (`root_cause_rows: Some(usize::MAX)`) every wait
/// state is listed, so their waits add up to `delay.wait_ns`, and the
/// first 20 are the default's; `--root-causes 7` lists 7.
#[test]
fn every_root_cause_row_on_request() {
    let rec = ring(5, 40, 7);
    let analysis = analyze(&rec);
    let with = |rows: Option<usize>| {
        build_report(
            &rec,
            &analysis,
            &MpiOptions {
                root_cause_rows: rows,
                ..MpiOptions::default()
            },
            &mut FakeSites,
        )
        .delay
    };
    let bounded = with(None);
    let all = with(Some(usize::MAX));
    // every wait state of the run: the wait states of all call sites
    let r = full_report(&rec);
    let counted: u64 = r.by_site.iter().map(|x| x.wait_states).sum();
    assert!(counted > 20, "the ring must have more than 20 wait states");
    assert_eq!(bounded.wait_states.len(), 20);
    assert!(bounded.wait_states_truncated);
    assert_eq!(bounded.wait_states_total, counted);
    assert_eq!(all.wait_states.len() as u64, counted);
    assert_eq!(all.wait_states_total, counted);
    assert!(!all.wait_states_truncated);
    // every wait state listed once: their waits are all the waiting
    let listed: u64 = all.wait_states.iter().map(|w| w.wait_ns).sum();
    assert_eq!(listed, all.wait_ns);
    assert_eq!(all.wait_states[..20], bounded.wait_states[..]);
    assert!(all
        .wait_states
        .windows(2)
        .all(|w| w[0].wait_ns >= w[1].wait_ns));
    let seven = with(Some(7));
    assert_eq!(seven.wait_states[..], bounded.wait_states[..7]);
    assert!(seven.wait_states_truncated);
    // the rest of the report does not depend on the row limit
    assert_eq!(
        (all.short_term_ns, all.long_term_ns, &all.by_rank),
        (
            bounded.short_term_ns,
            bounded.long_term_ns,
            &bounded.by_rank
        )
    );
}
