//! Nonblocking collectives (`MPI_Iallreduce`, `MPI_Ibarrier`, `MPI_Ibcast`
//! …, completed by `Wait*`/`Test*`) on hand-built traces: matched with the
//! other collectives of their communicator by call order, their wait
//! states measured in the call that completed them (docs/mpi-wait-states.md,
//! "Nonblocking collectives"); every number worked out by hand below.

use contend::mpi::{analyze, Pattern};
use contend_trace::mpi::{Completion, CompletionKind, MpiEvent, MpiOp, Peer, WORLD_COMM};

use crate::mpi_builders::*;

/// A nonblocking collective posted at `enter` (returns 2 ns later) with
/// request `request`.
fn icoll(op: MpiOp, root: Option<u32>, request: u64, enter: u64) -> MpiEvent {
    let mut e = coll(op, WORLD_COMM, root, enter, enter + 2);
    e.request = request;
    e
}

fn done_coll(request: u64) -> Completion {
    Completion {
        request,
        kind: CompletionKind::Collective,
        source: None,
        tag: 0,
        bytes: 0,
        cancelled: false,
    }
}

/// (pattern, waiting rank, its event, wait, cause, cause's event)
fn waits(
    rec: &contend_trace::mpi::MpiRecording,
) -> Vec<(Pattern, u32, usize, u64, u32, Option<usize>)> {
    let mut v: Vec<_> = analyze(rec)
        .waits
        .iter()
        .map(|w| {
            (
                w.pattern,
                w.rank,
                w.event,
                w.wait_ns,
                w.cause,
                w.cause_event,
            )
        })
        .collect();
    v.sort_by_key(|x| (x.1, x.2));
    v
}

#[test]
fn iallreduce_waits_in_the_wait_that_completes_it() {
    // Posted at 10, 20 and 80 (rank 2 last); completed by MPI_Wait
    // 30–90, 40–90 and 85–90. Wait at N×N for rank 2's posting at 80:
    // rank 0 waits min(80 − 30, 60) = 50 in its Wait (event 1), rank 1
    // 80 − 40 = 40, rank 2 80 − 85 < 0: none. The posting calls never wait.
    let rank_of = |r: u32, post: u64, wait_at: u64| {
        rank(
            r,
            3,
            vec![
                icoll(MpiOp::Iallreduce, None, 7, post),
                wait(MpiOp::Wait, wait_at, 90, vec![done_coll(7)]),
            ],
        )
    };
    let rec = recording(vec![
        rank_of(0, 10, 30),
        rank_of(1, 20, 40),
        rank_of(2, 80, 85),
    ]);
    assert_eq!(
        waits(&rec),
        vec![
            (Pattern::WaitAtNxN, 0, 1, 50, 2, Some(0)),
            (Pattern::WaitAtNxN, 1, 1, 40, 2, Some(0)),
        ]
    );
    let a = analyze(&rec);
    assert_eq!(a.stats.collectives, 1);
    assert_eq!(a.collectives[0].op, MpiOp::Iallreduce);
    assert_eq!(a.collectives[0].done, vec![1, 1, 1]);
    // In the report the wait is collective although the call is MPI_Wait.
    let r = contend::mpi::build_report(&rec, &a, &Default::default(), &mut FakeSites);
    assert_eq!(r.wait_at_nxn.wait_ns, 90);
    assert_eq!(r.collective.wait_ns, 90);
    assert_eq!(r.p2p.wait_ns, 0);
    let row = r.by_rank.iter().find(|x| x.rank == 0).unwrap();
    assert_eq!((row.collective_wait_ns, row.p2p_wait_ns), (50, 0));
    // Root cause: rank 2 was late; the critical path jumps to its posting.
    assert_eq!(r.delay.by_rank[0].rank, 2);
    assert_eq!(r.delay.by_rank[0].cost_ns, 90);
}

#[test]
fn a_test_that_completes_it_does_not_wait_and_a_missing_completion_neither() {
    // Rank 0 completes by MPI_Test (never a wait), rank 1 never completes
    // its request; rank 2 posts last at 50. Nobody has a wait state, but
    // the instance is matched.
    let rec = recording(vec![
        rank(
            0,
            3,
            vec![
                icoll(MpiOp::Ibarrier, None, 3, 10),
                wait(MpiOp::Test, 20, 60, vec![done_coll(3)]),
            ],
        ),
        rank(1, 3, vec![icoll(MpiOp::Ibarrier, None, 3, 10)]),
        rank(
            2,
            3,
            vec![
                icoll(MpiOp::Ibarrier, None, 3, 50),
                wait(MpiOp::Wait, 55, 60, vec![done_coll(3)]),
            ],
        ),
    ]);
    assert_eq!(waits(&rec), vec![]);
    assert_eq!(analyze(&rec).stats.collectives, 1);
}

#[test]
fn waitall_with_a_message_and_an_ibarrier_is_charged_once() {
    // Rank 0: Irecv from 1 (request 1) and Ibarrier (request 2) at 0,
    // Waitall 10–100 completing both. Rank 1 posts its Ibarrier at 40
    // (waits 60–100) and sends at 70. Late sender for the Waitall: 70 − 10
    // = 60; wait at barrier: 40 − 10 = 30. One wait per call: 60, late
    // sender, caused by rank 1 at its send. Rank 1 waits in its Wait for
    // rank 0's posting at 0: none.
    let mut ib0 = icoll(MpiOp::Ibarrier, None, 2, 0);
    ib0.coll_bytes_sent = 0;
    let rec = recording(vec![
        rank(
            0,
            2,
            vec![
                irecv(Peer::Rank(1), 0, 1, 0, 1),
                ib0,
                wait(
                    MpiOp::Waitall,
                    10,
                    100,
                    vec![done_recv(1, 1, 0), done_coll(2)],
                ),
            ],
        ),
        rank(
            1,
            2,
            vec![
                icoll(MpiOp::Ibarrier, None, 9, 40),
                wait(MpiOp::Wait, 60, 100, vec![done_coll(9)]),
                send0(0, 70, 71),
            ],
        ),
    ]);
    assert_eq!(
        waits(&rec),
        vec![(Pattern::LateSender, 0, 2, 60, 1, Some(2))]
    );
}

#[test]
fn ibcast_late_root_and_order_with_blocking_collectives() {
    // On world: a Barrier (all at 0–10, no wait), then an Ibcast from root
    // 1 posted at 20, 20, 50 (root last); completions MPI_Wait at 25–60
    // on ranks 0 and 2 and at 55–60 on the root. Late broadcast: ranks 0
    // and 2 wait 50 − 25 = 25 each; the Ibcast is the second collective of
    // every rank (matched by order with the Barrier first).
    let b = || coll(MpiOp::Barrier, WORLD_COMM, None, 0, 10);
    let member = |r: u32, post: u64, w: u64| {
        rank(
            r,
            3,
            vec![
                b(),
                icoll(MpiOp::Ibcast, Some(1), 4, post),
                wait(MpiOp::Wait, w, 60, vec![done_coll(4)]),
            ],
        )
    };
    let rec = recording(vec![
        member(0, 20, 25),
        member(1, 50, 55),
        member(2, 20, 25),
    ]);
    assert_eq!(
        waits(&rec),
        vec![
            (Pattern::LateBroadcast, 0, 2, 25, 1, Some(1)),
            (Pattern::LateBroadcast, 2, 2, 25, 1, Some(1)),
        ]
    );
    assert_eq!(analyze(&rec).stats.collectives, 2);
}

#[test]
fn blocking_and_nonblocking_forms_do_not_match() {
    // MPI never matches an Allreduce with an Iallreduce: the instance is
    // skipped and named.
    let rec = recording(vec![
        rank(0, 2, vec![coll(MpiOp::Allreduce, WORLD_COMM, None, 0, 10)]),
        rank(
            1,
            2,
            vec![
                icoll(MpiOp::Iallreduce, None, 1, 0),
                wait(MpiOp::Wait, 5, 10, vec![done_coll(1)]),
            ],
        ),
    ]);
    let a = analyze(&rec);
    assert_eq!(a.stats.skipped_collectives, 1);
    assert!(
        a.warnings
            .iter()
            .any(|w| w.contains("disagree on the operation") && w.contains("MPI_Iallreduce")),
        "{:?}",
        a.warnings
    );
}
