//! MPI wait-state analysis on hand-built traces (`MpiRecording` values),
//! every expected number worked out by hand in the comments from the
//! definitions in docs/mpi-wait-states.md.

use contend::mpi::{
    analyze, build_report, MpiOptions, MpiReport, Pattern, SiteResolver, WaitState,
};
use contend::symbols::ResolvedSite;
use contend_trace::mpi::{
    Completion, CompletionKind, MpiComm, MpiEvent, MpiOp, MpiRankTrace, MpiRecording, Peer,
    ProbedMessage, RecvPost, SendPost, StartedRequest, ANY_TAG, SELF_COMM, WORLD_COMM,
};

// ---------------------------------------------------------------- builders

/// Names every call site `site_<address>` in `app.c`, line = address.
struct FakeSites;
impl SiteResolver for FakeSites {
    fn site(&mut self, _pid: u32, address: u64) -> ResolvedSite {
        ResolvedSite {
            function: Some(format!("site_{address:x}")),
            file: Some("/src/app.c".into()),
            line: Some(address as u32),
            module: Some("/src/app".into()),
            offset: address,
            debug: "dwarf",
            display: format!("site_{address:x} (app.c:{address})"),
        }
    }
}

fn base(op: MpiOp, enter_ns: u64, exit_ns: u64) -> MpiEvent {
    MpiEvent {
        op,
        tid: 1,
        enter_ns,
        exit_ns,
        site: 0x100 + op as u64,
        comm: WORLD_COMM,
        root: None,
        coll_bytes_sent: 0,
        coll_bytes_recv: 0,
        send: None,
        recv: None,
        starts: Vec::new(),
        completions: Vec::new(),
        created_comm: None,
        return_code: 0,
        probed: None,
        request: 0,
    }
}

fn done_send(request: u64, dest: u32, tag: i32) -> Completion {
    Completion {
        request,
        kind: CompletionKind::Send,
        source: Some(dest),
        tag,
        bytes: 8,
        cancelled: false,
    }
}

fn done_recv(request: u64, source: u32, tag: i32) -> Completion {
    Completion {
        request,
        kind: CompletionKind::Recv,
        source: Some(source),
        tag,
        bytes: 8,
        cancelled: false,
    }
}

/// A blocking send (`Send`, `Ssend`, `Bsend`, `Rsend`) to `dest`.
fn send(op: MpiOp, dest: u32, tag: i32, enter: u64, exit: u64) -> MpiEvent {
    let mut e = base(op, enter, exit);
    e.send = Some(SendPost {
        dest: Peer::Rank(dest),
        tag,
        bytes: 8,
        request: 0,
    });
    e.completions.push(done_send(0, dest, tag));
    e
}

/// A blocking receive posted for `source`/`tag` that got a message from
/// `got` with tag `got_tag`.
fn recv(source: Peer, tag: i32, got: u32, got_tag: i32, enter: u64, exit: u64) -> MpiEvent {
    let mut e = base(MpiOp::Recv, enter, exit);
    e.recv = Some(RecvPost {
        source,
        tag,
        bytes: 8,
        request: 0,
    });
    e.completions.push(done_recv(0, got, got_tag));
    e
}

fn isend(op: MpiOp, dest: u32, tag: i32, request: u64, enter: u64, exit: u64) -> MpiEvent {
    let mut e = base(op, enter, exit);
    e.send = Some(SendPost {
        dest: Peer::Rank(dest),
        tag,
        bytes: 8,
        request,
    });
    e
}

fn irecv(source: Peer, tag: i32, request: u64, enter: u64, exit: u64) -> MpiEvent {
    let mut e = base(MpiOp::Irecv, enter, exit);
    e.recv = Some(RecvPost {
        source,
        tag,
        bytes: 8,
        request,
    });
    e
}

fn wait(op: MpiOp, enter: u64, exit: u64, completions: Vec<Completion>) -> MpiEvent {
    let mut e = base(op, enter, exit);
    e.completions = completions;
    e
}

fn coll(op: MpiOp, comm: u64, root: Option<u32>, enter: u64, exit: u64) -> MpiEvent {
    let mut e = base(op, enter, exit);
    e.comm = comm;
    e.root = root;
    e.coll_bytes_sent = 8;
    e.coll_bytes_recv = 8;
    e
}

fn rank(r: u32, size: u32, events: Vec<MpiEvent>) -> MpiRankTrace {
    MpiRankTrace {
        path: format!("mpi/rank-{r}.cmpi").into(),
        rank: r,
        world_size: size,
        pid: 1000 + r,
        host: "node0".into(),
        clock_offset_ns: (0, None),
        clock_offset_rtt_ns: (0, None),
        library: "Open MPI v4.1.4".into(),
        finalized: true,
        aborted_in: None,
        comms: vec![
            MpiComm {
                id: WORLD_COMM,
                world_ranks: (0..size).collect(),
            },
            MpiComm {
                id: SELF_COMM,
                world_ranks: vec![r],
            },
        ],
        events: events.into(),
        damage: Vec::new(),
    }
}

fn recording(ranks: Vec<MpiRankTrace>) -> MpiRecording {
    let world_size = ranks.iter().map(|t| t.world_size).max().unwrap_or(0);
    MpiRecording {
        ranks,
        world_size,
        missing_ranks: Vec::new(),
        problems: Vec::new(),
    }
}

fn report(rec: &MpiRecording, opts: MpiOptions) -> MpiReport {
    let a = analyze(rec);
    build_report(rec, &a, &opts, &mut FakeSites)
}

fn waits_of(rec: &MpiRecording) -> Vec<(Pattern, u32, u64, u32)> {
    let mut w: Vec<_> = analyze(rec)
        .waits
        .iter()
        .map(|w: &WaitState| (w.pattern, w.rank, w.wait_ns, w.cause))
        .collect();
    w.sort_by_key(|&(p, r, _, _)| (p, r));
    w
}

fn by_rank(r: &MpiReport, rank: u32) -> (u64, u64) {
    let row = r.by_rank.iter().find(|x| x.rank == rank).unwrap();
    (row.wait_ns, row.caused_ns)
}

// ------------------------------------------------------------ point to point

#[test]
fn late_sender_blocking_receive() {
    // Rank 1 enters MPI_Recv at 40 and leaves at 115; rank 0 enters MPI_Send
    // at 100. W = min(100, 115) − 40 = 60, caused by rank 0. The send is
    // standard mode and still running when the receive was posted (exit 110
    // > 40), but 40 − 100 < 0, so no late receiver.
    let rec = recording(vec![
        rank(0, 2, vec![send(MpiOp::Send, 1, 0, 100, 110)]),
        rank(1, 2, vec![recv(Peer::Rank(0), 0, 0, 0, 40, 115)]),
    ]);
    assert_eq!(waits_of(&rec), vec![(Pattern::LateSender, 1, 60, 0)]);
    let r = report(&rec, MpiOptions::default());
    assert_eq!(r.late_sender.count, 1);
    assert_eq!(r.late_sender.wait_ns, 60);
    assert_eq!(r.late_sender.duration_ns, 75); // the Recv: 115 − 40
    assert_eq!(r.late_receiver.count, 0);
    assert_eq!(by_rank(&r, 0), (0, 60));
    assert_eq!(by_rank(&r, 1), (60, 0));
    assert_eq!(r.late_sender.most_delayed.unwrap().rank, 1);
    assert_eq!(r.late_sender.most_late.unwrap().rank, 0);
    assert_eq!(r.matching.messages, 1);
}

#[test]
fn late_sender_is_clipped_to_the_receive_call() {
    // Clocks a little off: the send's enter (500) lies after the receive
    // returned (300). W = min(500, 300) − 200 = 100, the whole call.
    let rec = recording(vec![
        rank(0, 2, vec![send(MpiOp::Send, 1, 0, 500, 510)]),
        rank(1, 2, vec![recv(Peer::Rank(0), 0, 0, 0, 200, 300)]),
    ]);
    assert_eq!(waits_of(&rec), vec![(Pattern::LateSender, 1, 100, 0)]);
}

#[test]
fn late_sender_irecv_then_wait() {
    // Rank 1 posts MPI_Irecv (10..12) and waits in MPI_Wait 50..130; rank 0
    // sends at 120. The wait is the receive-completing call:
    // W = min(120, 130) − 50 = 70. The Irecv itself never waits.
    let rec = recording(vec![
        rank(0, 2, vec![send(MpiOp::Send, 1, 5, 120, 125)]),
        rank(
            1,
            2,
            vec![
                irecv(Peer::Rank(0), 5, 77, 10, 12),
                wait(MpiOp::Wait, 50, 130, vec![done_recv(77, 0, 5)]),
            ],
        ),
    ]);
    let a = analyze(&rec);
    assert_eq!(a.waits.len(), 1);
    assert_eq!(
        a.waits[0].event, 1,
        "charged to the MPI_Wait, not the Irecv"
    );
    assert_eq!(a.waits[0].wait_ns, 70);
    assert_eq!(a.messages[0].recv_post, 0);
    assert_eq!(a.messages[0].recv_complete, Some(1));
}

#[test]
fn test_calls_are_not_waits() {
    // The same, but completed by MPI_Test: no wait state.
    let rec = recording(vec![
        rank(0, 2, vec![send(MpiOp::Send, 1, 5, 120, 125)]),
        rank(
            1,
            2,
            vec![
                irecv(Peer::Rank(0), 5, 77, 10, 12),
                wait(MpiOp::Test, 50, 130, vec![done_recv(77, 0, 5)]),
            ],
        ),
    ]);
    let a = analyze(&rec);
    assert!(a.waits.is_empty());
    assert_eq!(a.stats.messages, 1);
}

// ------------------------------------------ probes and matched receives

/// A probe (`Probe`, `Iprobe`, `Mprobe`, `Improbe`) posted for any source
/// and tag; `found`: the (source, tag) of the message it found, `None`
/// when it found nothing (a test-like probe whose flag was false).
fn probe(op: MpiOp, found: Option<(Option<u32>, i32)>, enter: u64, exit: u64) -> MpiEvent {
    let mut e = base(op, enter, exit);
    e.probed = found.map(|(source, tag)| ProbedMessage {
        source,
        tag,
        bytes: 8,
    });
    e
}

/// `MPI_Mrecv` of the message an `MPI_Mprobe` found: the recorder gives it
/// the message's source and tag; `source` `None` = `MPI_MESSAGE_NO_PROC`.
fn mrecv(source: Option<u32>, tag: i32, enter: u64, exit: u64) -> MpiEvent {
    let mut e = base(MpiOp::Mrecv, enter, exit);
    e.recv = Some(RecvPost {
        source: source.map_or(Peer::Null, Peer::Rank),
        tag,
        bytes: 8,
        request: 0,
    });
    e.completions.push(Completion {
        request: 0,
        kind: CompletionKind::Recv,
        source,
        tag,
        bytes: if source.is_some() { 8 } else { 0 },
        cancelled: false,
    });
    e
}

#[test]
fn late_sender_at_mprobe_then_mrecv_and_imrecv() {
    // Rank 1: MPI_Mprobe (any source/tag) 30..104 finds rank 0's tag-4
    // message, MPI_Mrecv 106..108 takes it. Rank 0 entered MPI_Send at 100.
    // The probe is where rank 1 waited: W = min(100, 104) − 30 = 70,
    // charged to the Mprobe (event 0). The Mrecv's own late sender is
    // min(100, 108) − 106 < 0 → 0.
    // Then MPI_Mprobe 200..290 finds tag 5, MPI_Imrecv 291..292 (request
    // 9), MPI_Wait 293..300 completes it; rank 0 sent at 280:
    // W = min(280, 290) − 200 = 80 at the Mprobe (event 2); the Wait's
    // min(280, 300) − 293 < 0 → 0.
    let mut imrecv = irecv(Peer::Rank(0), 5, 9, 291, 292);
    imrecv.op = MpiOp::Imrecv;
    let rec = recording(vec![
        rank(
            0,
            2,
            vec![
                send(MpiOp::Send, 1, 4, 100, 105),
                send(MpiOp::Send, 1, 5, 280, 285),
            ],
        ),
        rank(
            1,
            2,
            vec![
                probe(MpiOp::Mprobe, Some((Some(0), 4)), 30, 104),
                mrecv(Some(0), 4, 106, 108),
                probe(MpiOp::Mprobe, Some((Some(0), 5)), 200, 290),
                imrecv,
                wait(MpiOp::Wait, 293, 300, vec![done_recv(9, 0, 5)]),
            ],
        ),
    ]);
    let a = analyze(&rec);
    assert_eq!(a.stats.messages, 2);
    assert_eq!(a.stats.unmatched_sends, 0);
    assert!(
        !a.warnings.iter().any(|w| w.contains("never matched")),
        "{:?}",
        a.warnings
    );
    let got: Vec<(Pattern, u32, usize, u64, u32)> = a
        .waits
        .iter()
        .map(|w| (w.pattern, w.rank, w.event, w.wait_ns, w.cause))
        .collect();
    assert_eq!(
        got,
        vec![
            (Pattern::LateSender, 1, 0, 70, 0),
            (Pattern::LateSender, 1, 2, 80, 0)
        ]
    );
    let r = report(&rec, MpiOptions::default());
    assert_eq!(r.late_sender.count, 2);
    assert_eq!(r.late_sender.wait_ns, 150);
    // duration of the waiting calls: the two probes, 74 + 90
    assert_eq!(r.late_sender.duration_ns, 164);
    let site = r
        .by_site
        .iter()
        .find(|s| s.operation == "MPI_Mprobe")
        .unwrap();
    assert_eq!((site.events, site.wait_states, site.wait_ns), (2, 2, 150));
    assert_eq!(by_rank(&r, 1), (150, 0));
    assert_eq!(by_rank(&r, 0), (0, 150));
}

#[test]
fn late_sender_at_probe_then_recv() {
    // Rank 1: MPI_Probe 10..60 finds (rank 0, tag 2); MPI_Recv(ANY_SOURCE,
    // ANY_TAG) 61..63 receives it. Rank 0's MPI_Send 50..55 (done before
    // the receive was posted: no late receiver).
    // W = min(50, 60) − 10 = 40 at the Probe; the Recv: min(50, 63) − 61
    // < 0 → 0.
    let sender = || rank(0, 2, vec![send(MpiOp::Send, 1, 2, 50, 55)]);
    let rec = recording(vec![
        sender(),
        rank(
            1,
            2,
            vec![
                probe(MpiOp::Probe, Some((Some(0), 2)), 10, 60),
                recv(Peer::Any, ANY_TAG, 0, 2, 61, 63),
            ],
        ),
    ]);
    assert_eq!(waits_of(&rec), vec![(Pattern::LateSender, 1, 40, 0)]);
    assert_eq!(analyze(&rec).waits[0].event, 0, "charged to the Probe");

    // The probe found another message (tag 3) than the receive took: the
    // probe is not tied to it and the Recv's own wait is 0.
    let other = recording(vec![
        sender(),
        rank(
            1,
            2,
            vec![
                probe(MpiOp::Probe, Some((Some(0), 3)), 10, 60),
                recv(Peer::Any, ANY_TAG, 0, 2, 61, 63),
            ],
        ),
    ]);
    assert_eq!(waits_of(&other), vec![]);

    // A probe on another thread of the rank is not "immediately before".
    let mut p = probe(MpiOp::Probe, Some((Some(0), 2)), 10, 60);
    p.tid = 2;
    let threads = recording(vec![
        sender(),
        rank(1, 2, vec![p, recv(Peer::Any, ANY_TAG, 0, 2, 61, 63)]),
    ]);
    assert_eq!(waits_of(&threads), vec![]);

    // A call between the probe and the receive breaks the tie too.
    let between = recording(vec![
        sender(),
        rank(
            1,
            2,
            vec![
                probe(MpiOp::Probe, Some((Some(0), 2)), 10, 60),
                probe(MpiOp::Iprobe, None, 60, 61),
                recv(Peer::Any, ANY_TAG, 0, 2, 61, 63),
            ],
        ),
    ]);
    assert_eq!(waits_of(&between), vec![]);
}

#[test]
fn iprobe_and_improbe_loops_are_not_waits() {
    // Rank 1 polls with MPI_Iprobe (10..11, 20..21: nothing; 90..101 finds
    // rank 0's tag-1 message) and receives it with MPI_Recv 102..104; then
    // polls with MPI_Improbe (nothing at 110..111; 150..206 finds tag 2)
    // and takes it with MPI_Mrecv 207..209. Rank 0 sent at 100 and 200.
    // Were the polls blocking probes, they would wait min(100, 101) − 90
    // = 10 and min(200, 206) − 150 = 50; a non-blocking probe is like a
    // test: no wait. The receives: min(100, 104) − 102 < 0 and
    // min(200, 209) − 207 < 0 → no wait states at all.
    let rec = recording(vec![
        rank(
            0,
            2,
            vec![
                send(MpiOp::Send, 1, 1, 100, 101),
                send(MpiOp::Send, 1, 2, 200, 201),
            ],
        ),
        rank(
            1,
            2,
            vec![
                probe(MpiOp::Iprobe, None, 10, 11),
                probe(MpiOp::Iprobe, None, 20, 21),
                probe(MpiOp::Iprobe, Some((Some(0), 1)), 90, 101),
                recv(Peer::Rank(0), 1, 0, 1, 102, 104),
                probe(MpiOp::Improbe, None, 110, 111),
                probe(MpiOp::Improbe, Some((Some(0), 2)), 150, 206),
                mrecv(Some(0), 2, 207, 209),
            ],
        ),
    ]);
    let a = analyze(&rec);
    assert_eq!(a.stats.messages, 2);
    assert!(a.waits.is_empty(), "{:?}", a.waits);
    // Sanity check of the test: the same trace with blocking probes waits.
    let mut blocking = rec.clone();
    let mut calls = blocking.ranks[1].events.to_vec();
    calls[2].op = MpiOp::Probe;
    calls[5].op = MpiOp::Mprobe;
    blocking.ranks[1].events = calls.into();
    assert_eq!(
        waits_of(&blocking),
        vec![
            (Pattern::LateSender, 1, 10, 0),
            (Pattern::LateSender, 1, 50, 0)
        ]
    );
}

#[test]
fn mrecv_of_message_no_proc_moves_nothing() {
    // MPI_Mprobe(MPI_PROC_NULL) returns MPI_MESSAGE_NO_PROC at once; its
    // MPI_Mrecv receives nothing from nobody. Neither takes part in
    // matching, nothing is unmatched, and rank 0's message to rank 1 is
    // still received by the later MPI_Recv (40..120, send at 100:
    // W = min(100, 120) − 40 = 60, at the Recv, not the Mprobe).
    let rec = recording(vec![
        rank(0, 2, vec![send(MpiOp::Send, 1, 0, 100, 101)]),
        rank(
            1,
            2,
            vec![
                probe(MpiOp::Mprobe, Some((None, ANY_TAG)), 10, 11),
                mrecv(None, ANY_TAG, 12, 13),
                recv(Peer::Rank(0), 0, 0, 0, 40, 120),
            ],
        ),
    ]);
    let a = analyze(&rec);
    assert_eq!(a.stats.messages, 1);
    assert_eq!(
        (a.stats.unmatched_sends, a.stats.unmatched_receives),
        (0, 0)
    );
    assert!(a.warnings.is_empty(), "{:?}", a.warnings);
    assert_eq!(a.messages[0].recv_post, 2);
    assert_eq!(waits_of(&rec), vec![(Pattern::LateSender, 1, 60, 0)]);
    assert_eq!(a.waits[0].event, 2);
}

#[test]
fn waitall_charges_only_the_largest_wait() {
    // Rank 2: Irecv from 0 (req 1), Irecv from 1 (req 2), Waitall 10..100.
    // Rank 0 sends at 50 → W = 50 − 10 = 40; rank 1 sends at 90 → W = 80.
    // One wait state of 80, caused by rank 1; rank 0 caused nothing.
    let rec = recording(vec![
        rank(0, 3, vec![send(MpiOp::Send, 2, 0, 50, 52)]),
        rank(1, 3, vec![send(MpiOp::Send, 2, 0, 90, 91)]),
        rank(
            2,
            3,
            vec![
                irecv(Peer::Rank(0), 0, 1, 0, 1),
                irecv(Peer::Rank(1), 0, 2, 1, 2),
                wait(
                    MpiOp::Waitall,
                    10,
                    100,
                    vec![done_recv(1, 0, 0), done_recv(2, 1, 0)],
                ),
            ],
        ),
    ]);
    assert_eq!(waits_of(&rec), vec![(Pattern::LateSender, 2, 80, 1)]);
    let r = report(&rec, MpiOptions::default());
    assert_eq!((r.late_sender.count, r.late_sender.wait_ns), (1, 80));
    assert_eq!(by_rank(&r, 2), (80, 0));
    assert_eq!(by_rank(&r, 1), (0, 80));
    assert_eq!(by_rank(&r, 0), (0, 0));
    assert_eq!(r.matching.messages, 2);
}

#[test]
fn late_receiver_with_ssend() {
    // Rank 0: MPI_Ssend 100..300; rank 1 posts MPI_Recv at 250 (exit 305).
    // Late receiver W = 250 − 100 = 150 (≤ the Ssend's 200 ns), caused by
    // rank 1. Late sender on rank 1: min(100, 305) − 250 < 0 → none.
    let rec = recording(vec![
        rank(0, 2, vec![send(MpiOp::Ssend, 1, 0, 100, 300)]),
        rank(1, 2, vec![recv(Peer::Rank(0), 0, 0, 0, 250, 305)]),
    ]);
    assert_eq!(waits_of(&rec), vec![(Pattern::LateReceiver, 0, 150, 1)]);
    let r = report(&rec, MpiOptions::default());
    assert_eq!((r.late_receiver.count, r.late_receiver.wait_ns), (1, 150));
    assert_eq!(r.late_receiver.duration_ns, 200);
    assert_eq!(by_rank(&r, 0), (150, 0));
    assert_eq!(by_rank(&r, 1), (0, 150));
}

#[test]
fn late_receiver_only_for_sends_that_block() {
    // An eager MPI_Send 100..105 finished before the receive was posted at
    // 250: no wait. A rendezvous MPI_Send 1000..1260 still ran when the
    // receive was posted at 1250: W = 1250 − 1000 = 250. A buffered MPI_Bsend
    // never waits for the receiver. An Issend completed by MPI_Wait 2000..2400
    // with the receive posted at 2300: W = 2300 − 2000 = 300.
    let rec = recording(vec![
        rank(
            0,
            2,
            vec![
                send(MpiOp::Send, 1, 0, 100, 105),
                send(MpiOp::Send, 1, 0, 1000, 1260),
                send(MpiOp::Bsend, 1, 0, 1500, 1700),
                isend(MpiOp::Issend, 1, 0, 9, 1990, 1991),
                wait(MpiOp::Wait, 2000, 2400, vec![done_send(9, 1, 0)]),
            ],
        ),
        rank(
            1,
            2,
            vec![
                recv(Peer::Rank(0), 0, 0, 0, 250, 251),
                recv(Peer::Rank(0), 0, 0, 0, 1250, 1261),
                recv(Peer::Rank(0), 0, 0, 0, 1800, 1801),
                recv(Peer::Rank(0), 0, 0, 0, 2300, 2401),
            ],
        ),
    ]);
    let a = analyze(&rec);
    let lr: Vec<(usize, u64)> = a
        .waits
        .iter()
        .filter(|w| w.pattern == Pattern::LateReceiver)
        .map(|w| (w.event, w.wait_ns))
        .collect();
    assert_eq!(lr, vec![(1, 250), (4, 300)]);
}

#[test]
fn out_of_order_tags_match_by_tag() {
    // Rank 0 sends tag 1 at 10, then tag 2 at 20. Rank 1 receives tag 2
    // first (5..25), then tag 1 (30..31). Matched by tag: the first receive
    // gets the second send, W = min(20, 25) − 5 = 15; the second receive
    // gets the first send, W = min(10, 31) − 30 < 0 → none.
    let rec = recording(vec![
        rank(
            0,
            2,
            vec![
                send(MpiOp::Send, 1, 1, 10, 11),
                send(MpiOp::Send, 1, 2, 20, 21),
            ],
        ),
        rank(
            1,
            2,
            vec![
                recv(Peer::Rank(0), 2, 0, 2, 5, 25),
                recv(Peer::Rank(0), 1, 0, 1, 30, 31),
            ],
        ),
    ]);
    let a = analyze(&rec);
    let mut pairs: Vec<(usize, usize)> = a
        .messages
        .iter()
        .map(|m| (m.send_post, m.recv_post))
        .collect();
    pairs.sort();
    assert_eq!(pairs, vec![(0, 1), (1, 0)]);
    assert_eq!(waits_of(&rec), vec![(Pattern::LateSender, 1, 15, 0)]);
    assert!(a.warnings.is_empty(), "{:?}", a.warnings);
}

#[test]
fn messages_on_one_channel_do_not_overtake() {
    // Two sends of tag 3 from rank 0 (at 10 and 200) and two receives on
    // rank 1 (0..20, 100..210): first with first. W₁ = 10 − 0 = 10,
    // W₂ = 200 − 100 = 100.
    let rec = recording(vec![
        rank(
            0,
            2,
            vec![
                send(MpiOp::Send, 1, 3, 10, 11),
                send(MpiOp::Send, 1, 3, 200, 201),
            ],
        ),
        rank(
            1,
            2,
            vec![
                recv(Peer::Rank(0), 3, 0, 3, 0, 20),
                recv(Peer::Rank(0), 3, 0, 3, 100, 210),
            ],
        ),
    ]);
    let w = analyze(&rec).waits;
    assert_eq!(
        w.iter().map(|w| (w.event, w.wait_ns)).collect::<Vec<_>>(),
        vec![(0, 10), (1, 100)]
    );
}

#[test]
fn any_source_resolved_from_the_status() {
    // Rank 2 receives twice with MPI_ANY_SOURCE/MPI_ANY_TAG: the first
    // (0..100) got rank 1's tag-3 message, sent at 60: W = 60, caused by
    // rank 1; the second (110..120) got rank 0's tag-4 message, sent at 5:
    // no wait.
    let rec = recording(vec![
        rank(0, 3, vec![send(MpiOp::Send, 2, 4, 5, 6)]),
        rank(1, 3, vec![send(MpiOp::Send, 2, 3, 60, 61)]),
        rank(
            2,
            3,
            vec![
                recv(Peer::Any, ANY_TAG, 1, 3, 0, 100),
                recv(Peer::Any, ANY_TAG, 0, 4, 110, 120),
            ],
        ),
    ]);
    let a = analyze(&rec);
    assert_eq!(waits_of(&rec), vec![(Pattern::LateSender, 2, 60, 1)]);
    let from0 = a.messages.iter().find(|m| m.source == 0).unwrap();
    assert_eq!((from0.recv_post, from0.tag), (1, 4));
    let from1 = a.messages.iter().find(|m| m.source == 1).unwrap();
    assert_eq!((from1.recv_post, from1.tag), (0, 3));
}

#[test]
fn irecv_any_source_with_waitall() {
    // Rank 0 posts two MPI_Irecv(ANY_SOURCE) (requests 11, 12) and one
    // MPI_Waitall 10..300 which reports request 11 got rank 2's message
    // (sent at 250) and request 12 got rank 1's (sent at 40).
    // W(rank 2) = 250 − 10 = 240, W(rank 1) = 40 − 10 = 30: one wait of 240
    // caused by rank 2.
    let rec = recording(vec![
        rank(
            0,
            3,
            vec![
                irecv(Peer::Any, 0, 11, 0, 1),
                irecv(Peer::Any, 0, 12, 1, 2),
                wait(
                    MpiOp::Waitall,
                    10,
                    300,
                    vec![done_recv(11, 2, 0), done_recv(12, 1, 0)],
                ),
            ],
        ),
        rank(1, 3, vec![send(MpiOp::Send, 0, 0, 40, 41)]),
        rank(2, 3, vec![send(MpiOp::Send, 0, 0, 250, 251)]),
    ]);
    assert_eq!(waits_of(&rec), vec![(Pattern::LateSender, 0, 240, 2)]);
    assert_eq!(analyze(&rec).stats.messages, 2);
}

#[test]
fn sendrecv_and_proc_null() {
    // Two ranks exchange with MPI_Sendrecv; rank 0 enters at 0, rank 1 at
    // 70. Rank 0's receive half waits for rank 1's send: W = 70 − 0 = 70
    // (its send half does not block: standard mode, eager). Sends to
    // MPI_PROC_NULL are ignored.
    let sr = |me: u32, peer: u32, enter: u64, exit: u64| {
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
        let _ = me;
        e
    };
    let mut null = base(MpiOp::Send, 5, 6);
    null.send = Some(SendPost {
        dest: Peer::Null,
        tag: 0,
        bytes: 8,
        request: 0,
    });
    let rec = recording(vec![
        rank(0, 2, vec![null, sr(0, 1, 0, 80)]),
        rank(1, 2, vec![sr(1, 0, 70, 75)]),
    ]);
    let a = analyze(&rec);
    assert_eq!(waits_of(&rec), vec![(Pattern::LateSender, 0, 70, 1)]);
    assert_eq!(a.stats.messages, 2);
    assert!(a.warnings.is_empty(), "{:?}", a.warnings);
}

#[test]
fn cancelled_request_is_not_an_error() {
    let mut c = done_recv(4, 1, 0);
    c.cancelled = true;
    let rec = recording(vec![
        rank(
            0,
            2,
            vec![
                irecv(Peer::Rank(1), 0, 4, 0, 1),
                wait(MpiOp::Wait, 2, 3, vec![c]),
            ],
        ),
        rank(1, 2, vec![]),
    ]);
    let a = analyze(&rec);
    assert_eq!(a.stats.cancelled, 1);
    assert_eq!(a.stats.unmatched_receives, 0);
    assert!(a.warnings.is_empty(), "{:?}", a.warnings);
}

// --------------------------------------------------------------- collectives

#[test]
fn every_collective_pattern_including_v_forms() {
    // Three ranks on MPI_COMM_WORLD, one call of each kind (enter per rank;
    // every call ends after the last enter).
    let c = |op, root, enters: [u64; 3], exit| -> [MpiEvent; 3] {
        [0, 1, 2].map(|i| coll(op, WORLD_COMM, root, enters[i], exit))
    };
    let mut calls: Vec<[MpiEvent; 3]> = vec![
        // Barrier: last = rank 1 (30): rank 0 waits 20, rank 2 waits 10.
        c(MpiOp::Barrier, None, [10, 30, 20], 35),
        // Allreduce: last = rank 2 (140): 40 + 35.
        c(MpiOp::Allreduce, None, [100, 105, 140], 150),
        // Allgatherv: last = rank 1 (230): 30 + 20.
        c(MpiOp::Allgatherv, None, [200, 230, 210], 240),
        // Alltoallv where rank 2 sends nothing: contributors 0 and 1, last
        // = rank 1 (320): rank 0 waits 20, rank 2 (entered 400) none.
        c(MpiOp::Alltoallv, None, [300, 320, 400], 410),
        // Bcast, root 0 (500): rank 1 (450) waits 50, rank 2 (520) none.
        c(MpiOp::Bcast, Some(0), [500, 450, 520], 530),
        // Scatterv, root 1 (650): rank 0 waits 50, rank 2 waits 40.
        c(MpiOp::Scatterv, Some(1), [600, 650, 610], 660),
        // Reduce, root 2 (700): earliest other = rank 1 (710): 10.
        c(MpiOp::Reduce, Some(2), [720, 710, 700], 730),
        // Gatherv, root 0 (800): earliest other = rank 2 (830): 30.
        c(MpiOp::Gatherv, Some(0), [800, 850, 830], 860),
        // Scan: rank 1 waits 930 − 900 = 30 (for rank 0); rank 2 waits
        // max(930, 900, 920) − 920 = 10 (for rank 0).
        c(MpiOp::Scan, None, [930, 900, 920], 940),
        // Exscan: rank 2 waits max(1000, 1010, 1005) − 1005 = 5 (rank 1).
        c(MpiOp::Exscan, None, [1000, 1010, 1005], 1020),
    ];
    calls[3][2].coll_bytes_sent = 0;
    let mut per_rank: [Vec<MpiEvent>; 3] = Default::default();
    for call in calls {
        for (i, e) in call.into_iter().enumerate() {
            per_rank[i].push(e);
        }
    }
    let [r0, r1, r2] = per_rank;
    let rec = recording(vec![rank(0, 3, r0), rank(1, 3, r1), rank(2, 3, r2)]);
    use Pattern::*;
    assert_eq!(
        waits_of(&rec),
        vec![
            (WaitAtBarrier, 0, 20, 1),
            (WaitAtBarrier, 2, 10, 1),
            (WaitAtNxN, 0, 40, 2),
            (WaitAtNxN, 0, 30, 1),
            (WaitAtNxN, 0, 20, 1),
            (WaitAtNxN, 1, 35, 2),
            (WaitAtNxN, 2, 20, 1),
            (LateBroadcast, 0, 50, 1),
            (LateBroadcast, 1, 50, 0),
            (LateBroadcast, 2, 40, 1),
            (EarlyReduce, 0, 30, 2),
            (EarlyReduce, 2, 10, 1),
            (EarlyScan, 1, 30, 0),
            (EarlyScan, 2, 10, 0),
            (EarlyScan, 2, 5, 1),
        ]
    );
    let r = report(&rec, MpiOptions::default());
    assert_eq!(
        (r.wait_at_barrier.count, r.wait_at_barrier.wait_ns),
        (2, 30)
    );
    assert_eq!((r.wait_at_nxn.count, r.wait_at_nxn.wait_ns), (5, 145));
    assert_eq!((r.late_broadcast.count, r.late_broadcast.wait_ns), (3, 140));
    assert_eq!((r.early_reduce.count, r.early_reduce.wait_ns), (2, 40));
    assert_eq!((r.early_scan.count, r.early_scan.wait_ns), (3, 45));
    assert_eq!(r.collective.events, 30);
    assert_eq!(r.collective.wait_ns, 30 + 145 + 140 + 40 + 45);
    assert_eq!(r.matching.collectives, 10);
    // Rank 1 caused: barrier 30, Allgatherv 50, Alltoallv 20, Scatterv 90,
    // Reduce 10, Exscan 5 = 205.
    assert_eq!(by_rank(&r, 1).1, 205);
    // Barrier min/max: durations 25 and 15.
    assert_eq!(r.wait_at_barrier.min_wait_ns, 10);
    assert_eq!(r.wait_at_barrier.max_wait_ns, 20);
    assert_eq!(r.wait_at_barrier.min_duration_ns, 15);
    assert_eq!(r.wait_at_barrier.max_duration_ns, 25);
    assert_eq!(r.wait_at_barrier.avg_wait_ns, 15);
}

#[test]
fn split_communicator_with_world_ranks_1_and_3() {
    // World of 4; communicator 7 = world ranks {1, 3}, communicator 8 =
    // {0, 2}. Barrier on 7: rank 1 enters 100, rank 3 at 180 → rank 1 waits
    // 80 for rank 3. Barrier on 8: both at 50 → nothing. Bcast on 7 with
    // root world rank 3 (enter 300), rank 1 enters 260 → waits 40. A message
    // on 7 from world rank 3 to world rank 1, tag 0: rank 1 waits in MPI_Recv
    // 400..520 for the send at 500 → 100.
    let mut ranks: Vec<MpiRankTrace> = (0..4).map(|r| rank(r, 4, Vec::new())).collect();
    for r in [1u32, 3] {
        ranks[r as usize].comms.push(MpiComm {
            id: 7,
            world_ranks: vec![1, 3],
        });
    }
    for r in [0u32, 2] {
        ranks[r as usize].comms.push(MpiComm {
            id: 8,
            world_ranks: vec![0, 2],
        });
    }
    ranks[1].events = vec![
        coll(MpiOp::Barrier, 7, None, 100, 200),
        coll(MpiOp::Bcast, 7, Some(3), 260, 310),
        {
            let mut e = recv(Peer::Rank(3), 0, 3, 0, 400, 520);
            e.comm = 7;
            e
        },
    ]
    .into();
    ranks[3].events = vec![
        coll(MpiOp::Barrier, 7, None, 180, 200),
        coll(MpiOp::Bcast, 7, Some(3), 300, 310),
        {
            let mut e = send(MpiOp::Send, 1, 0, 500, 505);
            e.comm = 7;
            e
        },
    ]
    .into();
    ranks[0].events = vec![coll(MpiOp::Barrier, 8, None, 50, 60)].into();
    ranks[2].events = vec![coll(MpiOp::Barrier, 8, None, 50, 60)].into();
    let rec = recording(ranks);
    let a = analyze(&rec);
    assert!(a.warnings.is_empty(), "{:?}", a.warnings);
    assert_eq!(
        waits_of(&rec),
        vec![
            (Pattern::LateSender, 1, 100, 3),
            (Pattern::WaitAtBarrier, 1, 80, 3),
            (Pattern::LateBroadcast, 1, 40, 3),
        ]
    );
    assert_eq!(a.stats.collectives, 3);
    let r = report(&rec, MpiOptions::default());
    assert_eq!(by_rank(&r, 3), (0, 220));
    assert_eq!(by_rank(&r, 1), (220, 0));
}

#[test]
fn collective_operation_mismatch_is_skipped_and_named() {
    // Rank 0 calls MPI_Barrier where rank 1 calls MPI_Allreduce: skipped;
    // the next call (a barrier on both: 10 vs 40) is still analysed → 30.
    let rec = recording(vec![
        rank(
            0,
            2,
            vec![
                coll(MpiOp::Barrier, WORLD_COMM, None, 0, 5),
                coll(MpiOp::Barrier, WORLD_COMM, None, 10, 45),
            ],
        ),
        rank(
            1,
            2,
            vec![
                coll(MpiOp::Allreduce, WORLD_COMM, None, 0, 5),
                coll(MpiOp::Barrier, WORLD_COMM, None, 40, 45),
            ],
        ),
    ]);
    let a = analyze(&rec);
    assert_eq!(a.stats.skipped_collectives, 1);
    assert!(
        a.warnings
            .iter()
            .any(|w| w.contains("disagree on the operation") && w.contains("MPI_Allreduce")),
        "{:?}",
        a.warnings
    );
    assert_eq!(waits_of(&rec), vec![(Pattern::WaitAtBarrier, 0, 30, 1)]);
}

// ---------------------------------------------------------------- robustness

/// `MPI_Start`/`MPI_Startall` activating persistent requests: each
/// `(comm, posting)` pair gets its own request id.
fn start(op: MpiOp, posts: Vec<StartedRequest>, enter: u64, exit: u64) -> MpiEvent {
    let mut e = base(op, enter, exit);
    e.starts = posts;
    e
}

fn started_recv(source: u32, tag: i32, request: u64) -> StartedRequest {
    StartedRequest {
        mode: MpiOp::RecvInit,
        comm: WORLD_COMM,
        send: None,
        recv: Some(RecvPost {
            source: Peer::Rank(source),
            tag,
            bytes: 8,
            request,
        }),
    }
}

fn started_send(mode: MpiOp, dest: u32, tag: i32, request: u64) -> StartedRequest {
    StartedRequest {
        mode,
        comm: WORLD_COMM,
        send: Some(SendPost {
            dest: Peer::Rank(dest),
            tag,
            bytes: 8,
            request,
        }),
        recv: None,
    }
}

#[test]
fn persistent_receive_started_three_times_late_sender() {
    // Rank 0: MPI_Recv_init(source 1, tag 7) at 0..1 (posts nothing), then
    // three rounds of MPI_Start + MPI_Wait, each activation a new request
    // (11, 12, 13), and MPI_Request_free at 210..211. Rank 1 sends three
    // tag-7 messages: two blocking MPI_Send, the third through a
    // persistent MPI_Ssend_init + MPI_Start (request 21) + MPI_Wait.
    //   round 1: Start 10..11, Wait 12..50; Send enters 40:
    //            W = min(40, 50) − 12 = 28
    //   round 2: Start 60..61, Wait 62..70; Send enters 55 (before the
    //            receive was even started): min(55, 70) − 62 < 0 → no wait
    //   round 3: Start 100..101, Wait 102..200; rank 1's Start enters 150:
    //            W = min(150, 200) − 102 = 48. Its Wait (152..160) is the
    //            send-completing call; the receive was posted at 100 < 152,
    //            so no late receiver.
    // Late sender: 2 events, 28 + 48 = 76 ns, all caused by rank 1.
    let rec = recording(vec![
        rank(
            0,
            2,
            vec![
                base(MpiOp::RecvInit, 0, 1),
                start(MpiOp::Start, vec![started_recv(1, 7, 11)], 10, 11),
                wait(MpiOp::Wait, 12, 50, vec![done_recv(11, 1, 7)]),
                start(MpiOp::Start, vec![started_recv(1, 7, 12)], 60, 61),
                wait(MpiOp::Wait, 62, 70, vec![done_recv(12, 1, 7)]),
                start(MpiOp::Startall, vec![started_recv(1, 7, 13)], 100, 101),
                wait(MpiOp::Wait, 102, 200, vec![done_recv(13, 1, 7)]),
                base(MpiOp::RequestFree, 210, 211),
            ],
        ),
        rank(
            1,
            2,
            vec![
                send(MpiOp::Send, 0, 7, 40, 45),
                send(MpiOp::Send, 0, 7, 55, 56),
                base(MpiOp::SsendInit, 140, 141),
                start(
                    MpiOp::Start,
                    vec![started_send(MpiOp::SsendInit, 0, 7, 21)],
                    150,
                    151,
                ),
                wait(MpiOp::Wait, 152, 160, vec![done_send(21, 0, 7)]),
                base(MpiOp::RequestFree, 170, 171),
            ],
        ),
    ]);
    let a = analyze(&rec);
    assert_eq!(a.stats.unmatched_sends, 0, "{:?}", a.warnings);
    assert_eq!(a.stats.unmatched_receives, 0, "{:?}", a.warnings);
    assert!(a.warnings.is_empty(), "{:?}", a.warnings);
    assert_eq!(a.messages.len(), 3);
    // each message posted by its Start and completed by the Wait after it
    let mut posts: Vec<(usize, Option<usize>)> = a
        .messages
        .iter()
        .map(|m| (m.recv_post, m.recv_complete))
        .collect();
    posts.sort();
    assert_eq!(posts, vec![(1, Some(2)), (3, Some(4)), (5, Some(6))]);
    assert_eq!(
        waits_of(&rec),
        vec![
            (Pattern::LateSender, 0, 28, 1),
            (Pattern::LateSender, 0, 48, 1)
        ]
    );
    let r = report(&rec, MpiOptions::default());
    assert_eq!(r.late_sender.count, 2);
    assert_eq!(r.late_sender.wait_ns, 76);
    assert_eq!(r.late_receiver.count, 0);
    assert_eq!(by_rank(&r, 0), (76, 0));
    assert_eq!(by_rank(&r, 1), (0, 76));
    assert_eq!(r.matching.messages, 3);
}

#[test]
fn persistent_send_mode_comes_from_its_init_call() {
    // Rank 0: a persistent send to rank 1, tag 3, activated by MPI_Startall
    // at 10..11 (request 5) and completed by MPI_Wait at 12..wait_exit.
    // Rank 1 posts MPI_Irecv at 70 (request 9) and waits 71..95.
    let run = |mode: MpiOp, wait_exit: u64| {
        recording(vec![
            rank(
                0,
                2,
                vec![
                    base(mode, 0, 1),
                    start(MpiOp::Startall, vec![started_send(mode, 1, 3, 5)], 10, 11),
                    wait(MpiOp::Wait, 12, wait_exit, vec![done_send(5, 1, 3)]),
                ],
            ),
            rank(
                1,
                2,
                vec![
                    irecv(Peer::Rank(0), 3, 9, 70, 70),
                    wait(MpiOp::Wait, 71, 95, vec![done_recv(9, 0, 3)]),
                ],
            ),
        ])
    };
    // MPI_Ssend_init, Wait 12..90: W = 70 − 12 = 58, caused by rank 1.
    // No late sender: min(10, 95) − 71 < 0.
    assert_eq!(
        waits_of(&run(MpiOp::SsendInit, 90)),
        vec![(Pattern::LateReceiver, 0, 58, 1)]
    );
    // Synchronous, though its Wait (12..60) ended before the receive was
    // posted (clocks a little off): still a late receiver, clipped to the
    // Wait: min(70 − 12, 60 − 12) = 48.
    assert_eq!(
        waits_of(&run(MpiOp::SsendInit, 60)),
        vec![(Pattern::LateReceiver, 0, 48, 1)]
    );
    // Standard mode: a late receiver only when the send had not finished
    // when the receive was posted (exit 90 > 70), not when it had (60).
    assert_eq!(
        waits_of(&run(MpiOp::SendInit, 90)),
        vec![(Pattern::LateReceiver, 0, 58, 1)]
    );
    assert_eq!(waits_of(&run(MpiOp::SendInit, 60)), vec![]);
    // MPI_Bsend_init: buffered sends never wait for the receiver.
    assert_eq!(waits_of(&run(MpiOp::BsendInit, 90)), vec![]);
}

#[test]
fn missing_receive_is_reported_as_unmatched() {
    // Rank 0 sends three tag-7 messages nobody receives, and one tag-0
    // message rank 1 does receive (late: 50 − 20 = 30).
    let rec = recording(vec![
        rank(
            0,
            2,
            vec![
                send(MpiOp::Send, 1, 7, 1, 2),
                send(MpiOp::Send, 1, 7, 3, 4),
                send(MpiOp::Send, 1, 7, 5, 6),
                send(MpiOp::Send, 1, 0, 50, 51),
            ],
        ),
        rank(1, 2, vec![recv(Peer::Rank(0), 0, 0, 0, 20, 60)]),
    ]);
    let a = analyze(&rec);
    assert_eq!(a.stats.unmatched_sends, 3);
    assert!(
        a.warnings
            .iter()
            .any(|w| w
                == "rank 0: 3 send(s) to rank 1 on MPI_COMM_WORLD tag 7 never matched a receive"),
        "{:?}",
        a.warnings
    );
    assert_eq!(waits_of(&rec), vec![(Pattern::LateSender, 1, 30, 0)]);
}

#[test]
fn receive_without_send_is_reported() {
    let rec = recording(vec![
        rank(0, 2, vec![]),
        rank(1, 2, vec![recv(Peer::Rank(0), 3, 0, 3, 20, 60)]),
    ]);
    let a = analyze(&rec);
    assert_eq!(a.stats.unmatched_receives, 1);
    assert!(
        a.warnings.iter().any(|w| w
            .contains("rank 1: 1 receive(s) from rank 0 on MPI_COMM_WORLD tag 3 matched no send")),
        "{:?}",
        a.warnings
    );
}

#[test]
fn missing_rank_is_named_and_the_rest_analysed() {
    // World of 3, rank 2's trace is missing. Rank 0 received from rank 2
    // (unmatchable), the world barrier needs rank 2 (skipped), and the
    // 0 → 1 message is still analysed (rank 1 waits 90 − 10 = 80).
    let mut rec = recording(vec![
        rank(
            0,
            3,
            vec![
                recv(Peer::Rank(2), 0, 2, 0, 0, 5),
                send(MpiOp::Send, 1, 0, 90, 91),
                coll(MpiOp::Barrier, WORLD_COMM, None, 100, 110),
            ],
        ),
        rank(
            1,
            3,
            vec![
                recv(Peer::Rank(0), 0, 0, 0, 10, 95),
                coll(MpiOp::Barrier, WORLD_COMM, None, 100, 110),
            ],
        ),
    ]);
    rec.missing_ranks = vec![2];
    let a = analyze(&rec);
    let joined = a.warnings.join("\n");
    assert!(
        joined.contains("rank 2 has no trace: waits it caused are not counted"),
        "{joined}"
    );
    assert!(
        joined.contains("MPI_COMM_WORLD: 1 collective call(s) skipped: rank 2 has no trace"),
        "{joined}"
    );
    assert!(
        joined.contains("rank 2 has no trace: 1 message(s)"),
        "{joined}"
    );
    assert_eq!(waits_of(&rec), vec![(Pattern::LateSender, 1, 80, 0)]);
    let r = report(&rec, MpiOptions::default());
    assert_eq!(r.missing_ranks, vec![2]);
    assert_eq!(r.ranks, 3);
    assert_eq!(r.ranks_traced, 2);
}

#[test]
fn aborted_rank_is_analysed_up_to_its_end() {
    // Rank 1 aborts inside its second MPI_Barrier... no: inside an MPI_Recv
    // (entered at 300, never returned, no completion). Before that, a
    // barrier (rank 0 at 10, rank 1 at 60 → rank 0 waits 50). Rank 0's
    // second barrier is skipped (rank 1 never got there); its send at 310 is
    // matched with the aborted receive (the envelope is fully specified) but
    // gives no wait, as the receive never completed.
    let mut r1 = rank(
        1,
        2,
        vec![coll(MpiOp::Barrier, WORLD_COMM, None, 60, 70), {
            let mut e = base(MpiOp::Recv, 300, 300);
            e.recv = Some(RecvPost {
                source: Peer::Rank(0),
                tag: 0,
                bytes: 8,
                request: 0,
            });
            e
        }],
    );
    r1.aborted_in = Some(1);
    r1.finalized = false;
    let rec = recording(vec![
        rank(
            0,
            2,
            vec![
                coll(MpiOp::Barrier, WORLD_COMM, None, 10, 70),
                send(MpiOp::Send, 1, 0, 310, 311),
                coll(MpiOp::Barrier, WORLD_COMM, None, 400, 500),
            ],
        ),
        r1,
    ]);
    let a = analyze(&rec);
    let joined = a.warnings.join("\n");
    assert!(joined.contains("rank 1 ended inside MPI_Recv"), "{joined}");
    assert!(
        joined.contains("1 collective call(s) skipped: rank 1 ended inside MPI_Recv"),
        "{joined}"
    );
    assert_eq!(a.stats.messages, 1);
    assert_eq!(waits_of(&rec), vec![(Pattern::WaitAtBarrier, 0, 50, 1)]);
    let r = report(&rec, MpiOptions::default());
    assert_eq!(r.aborted_ranks, vec![1]);
    let row = r.by_rank.iter().find(|x| x.rank == 1).unwrap();
    assert_eq!(row.aborted_in.as_deref(), Some("MPI_Recv"));
}

#[test]
fn garbage_does_not_panic() {
    // Completions of unknown requests, a root that is not a member, a
    // communicator nobody lists, an empty recording.
    let mut bad_bcast = coll(MpiOp::Bcast, WORLD_COMM, Some(9), 0, 1);
    bad_bcast.completions.push(done_recv(42, 7, 0));
    let rec = recording(vec![
        rank(0, 2, vec![bad_bcast, coll(MpiOp::Barrier, 99, None, 0, 1)]),
        rank(1, 2, vec![coll(MpiOp::Bcast, WORLD_COMM, Some(9), 0, 1)]),
    ]);
    let a = analyze(&rec);
    assert!(
        a.stats.unknown_requests == 1 && a.stats.skipped_collectives == 1,
        "{:?}",
        a.stats
    );
    let _ = report(&rec, MpiOptions::default());
    let empty = MpiRecording::default();
    let r = report(&empty, MpiOptions::default());
    assert_eq!(r.ranks, 0);
}

// ---------------------------------------------------------------- thresholds

#[test]
fn thresholds_drop_short_waits() {
    // Late sender of 80 (the Waitall case) and a barrier where rank 0 waits
    // 20 and rank 2 waits 10.
    let rec = recording(vec![
        rank(
            0,
            3,
            vec![
                send(MpiOp::Send, 2, 0, 50, 52),
                coll(MpiOp::Barrier, WORLD_COMM, None, 200, 240),
            ],
        ),
        rank(
            1,
            3,
            vec![
                send(MpiOp::Send, 2, 0, 90, 91),
                coll(MpiOp::Barrier, WORLD_COMM, None, 220, 240),
            ],
        ),
        rank(
            2,
            3,
            vec![
                irecv(Peer::Rank(0), 0, 1, 0, 1),
                irecv(Peer::Rank(1), 0, 2, 1, 2),
                wait(
                    MpiOp::Waitall,
                    10,
                    100,
                    vec![done_recv(1, 0, 0), done_recv(2, 1, 0)],
                ),
                coll(MpiOp::Barrier, WORLD_COMM, None, 210, 240),
            ],
        ),
    ]);
    let r = report(&rec, MpiOptions::default());
    assert_eq!((r.late_sender.count, r.wait_at_barrier.count), (1, 2));
    let opts = MpiOptions {
        threshold_p2p_ns: 80,
        threshold_collective_ns: 15,
        ..MpiOptions::default()
    };
    let r = report(&rec, opts);
    // 80 ≥ 80 is counted; of the barrier waits only 20 ≥ 15.
    assert_eq!((r.late_sender.count, r.late_sender.wait_ns), (1, 80));
    assert_eq!(
        (r.wait_at_barrier.count, r.wait_at_barrier.wait_ns),
        (1, 20)
    );
    assert_eq!(r.thresholds.p2p_ns, 80);
    let r = report(
        &rec,
        MpiOptions {
            threshold_p2p_ns: 81,
            threshold_collective_ns: 21,
            ..MpiOptions::default()
        },
    );
    assert_eq!((r.late_sender.count, r.wait_at_barrier.count), (0, 0));
    assert_eq!(by_rank(&r, 2), (0, 0));
}

// ------------------------------------------------------------------- report

#[test]
fn sites_sum_over_ranks() {
    // Every rank calls MPI_Barrier from the same site (address 0x132 =
    // 0x100 + code 50): one row with 3 events, durations 30 + 20 + 10 = 60
    // and waits 20 + 10 = 30 (the barrier of `thresholds_drop_short_waits`).
    let rec = recording(
        [200u64, 220, 210]
            .iter()
            .enumerate()
            .map(|(r, &enter)| {
                rank(
                    r as u32,
                    3,
                    vec![coll(MpiOp::Barrier, WORLD_COMM, None, enter, 230)],
                )
            })
            .collect(),
    );
    let r = report(&rec, MpiOptions::default());
    assert_eq!(r.by_site.len(), 1);
    let s = &r.by_site[0];
    assert_eq!(s.operation, "MPI_Barrier");
    assert_eq!(s.line, Some(0x132));
    assert_eq!(
        (s.events, s.duration_ns, s.wait_ns, s.wait_states),
        (3, 60, 30, 2)
    );
    assert_eq!((s.avg_duration_ns, s.avg_wait_ns, s.ranks), (20, 10, 3));
}

// ------------------------------------------------------------ rendering

/// The Ssend/Waitall/barrier case as a full report: rank 0 Ssend to rank 1
/// (late receiver 150), rank 2 waits in Waitall for ranks 0 and 1 (late
/// sender 80, caused by rank 1), and a barrier where rank 0 waits 20 and
/// rank 2 waits 10 (for rank 1).
fn small_report() -> contend::report::Report {
    let rec = recording(vec![
        rank(
            0,
            3,
            vec![
                send(MpiOp::Ssend, 1, 0, 100, 300),
                send(MpiOp::Send, 2, 0, 350, 352),
                coll(MpiOp::Barrier, WORLD_COMM, None, 500, 540),
            ],
        ),
        rank(
            1,
            3,
            vec![
                recv(Peer::Rank(0), 0, 0, 0, 250, 305),
                send(MpiOp::Send, 2, 0, 390, 391),
                coll(MpiOp::Barrier, WORLD_COMM, None, 520, 540),
            ],
        ),
        rank(
            2,
            3,
            vec![
                irecv(Peer::Rank(0), 0, 1, 300, 301),
                irecv(Peer::Rank(1), 0, 2, 301, 302),
                wait(
                    MpiOp::Waitall,
                    310,
                    400,
                    vec![done_recv(1, 0, 0), done_recv(2, 1, 0)],
                ),
                coll(MpiOp::Barrier, WORLD_COMM, None, 510, 540),
            ],
        ),
    ]);
    let run = contend::report::RunInfo {
        command: vec!["mpirun".into(), "-np".into(), "3".into(), "./app".into()],
        exit_code: Some(0),
        wall_ns: 1_000,
        ..Default::default()
    };
    report_of_mpi(&rec, run)
}

/// The report `contend::analyze` makes of an MPI-only recording holding
/// `rec`: a lock section saying there are no lock traces, the MPI section
/// (call sites named by [`FakeSites`]) and the analysis's warnings.
fn report_of_mpi(rec: &MpiRecording, run: contend::report::RunInfo) -> contend::report::Report {
    let a = analyze(rec);
    let m = build_report(rec, &a, &MpiOptions::default(), &mut FakeSites);
    let locks = contend::locks::LockReport {
        no_events_reason: Some(format!(
            "No lock trace was recorded; this recording holds the MPI traces of {} rank(s), analysed in the MPI sections.",
            m.ranks_traced
        )),
        ..Default::default()
    };
    let mut report = contend::report::Report::new(run).with(locks).with(m);
    report
        .warnings
        .extend(a.warnings.iter().map(|w| format!("MPI: {w}")));
    report
}

#[test]
fn small_report_numbers() {
    // Late receiver: 250 − 100 = 150 on rank 0, caused by rank 1. Late
    // sender in the Waitall 310..400: rank 0's send at 350 → 40, rank 1's at
    // 390 → 80; charged 80 (rank 1). Barrier: last rank 1 (520): rank 0
    // waits 20, rank 2 waits 10. Rank 1 caused 150 + 80 + 30 = 260.
    let r = small_report();
    let m = r.section::<MpiReport>().unwrap();
    assert_eq!((m.late_receiver.count, m.late_receiver.wait_ns), (1, 150));
    assert_eq!((m.late_sender.count, m.late_sender.wait_ns), (1, 80));
    assert_eq!(
        (m.wait_at_barrier.count, m.wait_at_barrier.wait_ns),
        (2, 30)
    );
    assert_eq!(by_rank(m, 1), (0, 260));
    assert_eq!(by_rank(m, 0), (170, 0));
    assert_eq!(by_rank(m, 2), (90, 0));
    assert_eq!(m.p2p.events, 7);
    assert_eq!(m.p2p.wait_ns, 230);
    // Running times (first enter to last exit): 440 + 290 + 240 = 970 ns;
    // P2P calls last 200 + 2 + 55 + 1 + 1 + 1 + 90 = 350 ns.
    assert!((m.p2p.share_of_runtime - 350.0 / 970.0).abs() < 1e-12);
    assert!((m.collective.share_of_runtime - 90.0 / 970.0).abs() < 1e-12);
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
}

#[test]
fn json_keys_are_present() {
    let r = small_report();
    let v: serde_json::Value = serde_json::to_value(&r).unwrap();
    let m = &v["mpi"];
    assert_eq!(m["ranks"], 3);
    for p in [
        "late_sender",
        "late_receiver",
        "wait_at_barrier",
        "wait_at_nxn",
        "late_broadcast",
        "early_reduce",
        "early_scan",
    ] {
        for k in [
            "count",
            "wait_ns",
            "duration_ns",
            "avg_wait_ns",
            "min_wait_ns",
            "max_wait_ns",
            "avg_duration_ns",
            "min_duration_ns",
            "max_duration_ns",
        ] {
            assert!(m[p][k].is_u64(), "mpi.{p}.{k} missing: {}", m[p]);
        }
    }
    assert_eq!(m["late_sender"]["wait_ns"], 80);
    for row in m["by_rank"].as_array().unwrap() {
        for k in ["rank", "wait_ns", "caused_ns"] {
            assert!(row[k].is_u64(), "by_rank.{k}");
        }
    }
    let sites = m["by_site"].as_array().unwrap();
    assert!(!sites.is_empty());
    for row in sites {
        for k in [
            "function",
            "file",
            "line",
            "operation",
            "events",
            "duration_ns",
            "wait_ns",
        ] {
            assert!(!row[k].is_null(), "by_site.{k}: {row}");
        }
    }
    // A report without MPI has no key.
    let plain = serde_json::to_value(contend::report::Report::new(Default::default())).unwrap();
    assert!(plain.get("mpi").is_none());
}

#[test]
fn text_report_snapshot() {
    use contend::render::{render_report, OutputFormat};
    use contend::report::RenderOptions;
    let opts = RenderOptions {
        color: false,
        top: 0,
        ..RenderOptions::default()
    };
    insta::assert_snapshot!(
        "mpi_text_report",
        render_report(&small_report(), OutputFormat::Text, &opts)
    );
}

#[test]
fn every_format_renders_the_mpi_sections() {
    use contend::render::{render_report, OutputFormat};
    use contend::report::RenderOptions;
    let r = small_report();
    // Every table format (`svg` draws one chart: its own test).
    for f in OutputFormat::ALL
        .into_iter()
        .filter(|&f| f != OutputFormat::Svg)
    {
        let out = render_report(&r, f, &RenderOptions::default());
        match f {
            OutputFormat::Csv => {
                assert!(out.contains("mpi_patterns,late_sender,wait_ns,80"), "{out}")
            }
            OutputFormat::Json => assert!(out.contains("\"late_receiver\"")),
            _ => assert!(
                out.contains("Late receiver") && out.contains("Waitall"),
                "{f}: {out}"
            ),
        }
    }
}

#[test]
fn compare_two_mpi_runs() {
    use contend::compare::Comparison;
    use contend::render::{render_comparison, OutputFormat};
    use contend::report::RenderOptions;
    // Run B: the same program with the Ssend's receive posted 50 ns earlier
    // (late receiver 100 instead of 150: −33.3 %).
    let a = small_report();
    let mut b = small_report();
    let m = b.section_mut::<MpiReport>().unwrap();
    m.late_receiver.wait_ns = 100;
    m.by_rank[1].caused_ns = 210;
    let c = Comparison::new(vec![("a".into(), a), ("b".into(), b)]);
    let lr = c
        .metrics
        .iter()
        .find(|m| m.key == "mpi.late_receiver.wait_ns")
        .unwrap();
    assert_eq!(lr.values, vec![Some(150.0), Some(100.0)]);
    assert!((lr.change_pct[1].unwrap() + 100.0 / 3.0).abs() < 1e-9);
    let rank1 = c
        .items("mpi_by_rank")
        .iter()
        .find(|i| i.name == "rank 1")
        .unwrap();
    let caused = rank1.metrics.iter().find(|m| m.key == "caused_ns").unwrap();
    assert_eq!(caused.values, vec![Some(260.0), Some(210.0)]);
    assert!(!c.items("mpi_by_site").is_empty());
    let text = render_comparison(&c, OutputFormat::Text, &RenderOptions::default());
    assert!(text.contains("Late receiver: total wait"), "{text}");
    assert!(text.contains("-33.3"), "{text}");
    let json: serde_json::Value = serde_json::from_str(&render_comparison(
        &c,
        OutputFormat::Json,
        &RenderOptions::default(),
    ))
    .unwrap();
    assert!(json["mpi_by_rank"].is_array());
    for f in [
        OutputFormat::Markdown,
        OutputFormat::Latex,
        OutputFormat::Csv,
    ] {
        let out = render_comparison(&c, f, &RenderOptions::default());
        assert!(
            out.contains("late_receiver") || out.contains("Late receiver"),
            "{f}: {out}"
        );
    }
    // A run without MPI: its MPI values are null, not zero.
    let c = Comparison::new(vec![
        ("a".into(), small_report()),
        (
            "none".into(),
            contend::report::Report::new(Default::default()),
        ),
    ]);
    let lr = c
        .metrics
        .iter()
        .find(|m| m.key == "mpi.late_receiver.wait_ns")
        .unwrap();
    assert_eq!(lr.values, vec![Some(150.0), None]);
}

// ------------------------------------------- real mpirun, injected delays

/// A 4-rank C program with injected delays that measures the true waits
/// itself: every rank reads `CLOCK_MONOTONIC` just before each call of
/// interest and the timestamps are exchanged afterwards, so the program
/// knows `W` exactly as docs/mpi-wait-states.md defines it (enter − enter),
/// up to the wrapper's few µs between its clock read and the program's.
/// (Not `MPI_Wtime`: Open MPI 4.1 counts it from a per-process origin taken
/// in `MPI_Init`, so values of different ranks differ by their start skew;
/// ranks on one node share `CLOCK_MONOTONIC`.)
/// Rank 0 prints `LS <s>`, `LR <s>`, `BARRIER <rank> <s>`, `NXN <rank> <s>`.
const DELAYS_C: &str = r#"
#include <mpi.h>
#include <stdio.h>
#include <time.h>
static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}
static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int r, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    if (n != 4) MPI_Abort(MPI_COMM_WORLD, 2);
    double t, other, ls = 0, lr = 0, mine[2], all[8];
    MPI_Barrier(MPI_COMM_WORLD);
    /* late sender: rank 0 sends its enter time 200 ms late */
    if (r == 0) { sleep_ms(200); t = now(); MPI_Send(&t, 1, MPI_DOUBLE, 1, 1, MPI_COMM_WORLD); }
    if (r == 1) { t = now(); MPI_Recv(&other, 1, MPI_DOUBLE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE); ls = other - t; }
    /* late receiver: rank 2 Ssends, rank 3 posts its receive 150 ms late */
    if (r == 2) { t = now(); MPI_Ssend(&t, 1, MPI_DOUBLE, 3, 2, MPI_COMM_WORLD);
                  MPI_Recv(&other, 1, MPI_DOUBLE, 3, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE); lr = other - t; }
    if (r == 3) { sleep_ms(150); t = now(); MPI_Recv(&other, 1, MPI_DOUBLE, 2, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                  MPI_Send(&t, 1, MPI_DOUBLE, 2, 3, MPI_COMM_WORLD); }
    /* imbalanced barrier: rank k arrives 60*k ms late */
    MPI_Barrier(MPI_COMM_WORLD);
    sleep_ms(60 * r);
    mine[0] = now();
    MPI_Barrier(MPI_COMM_WORLD);
    /* imbalanced Allreduce: rank k arrives 40*(3-k) ms late */
    sleep_ms(40 * (3 - r));
    mine[1] = now();
    double sum, x = r;
    MPI_Allreduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    double res[2] = {ls, lr}, out[8];
    MPI_Gather(mine, 2, MPI_DOUBLE, all, 2, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    MPI_Gather(res, 2, MPI_DOUBLE, out, 2, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (r == 0) {
        printf("LS %.9f\nLR %.9f\n", out[1 * 2 + 0], out[2 * 2 + 1]);
        for (int k = 0; k < 2; k++) {
            double max = 0;
            for (int i = 0; i < 4; i++) if (all[2 * i + k] > max) max = all[2 * i + k];
            for (int i = 0; i < 4; i++) printf("%s %d %.9f\n", k ? "NXN" : "BARRIER", i, max - all[2 * i + k]);
        }
    }
    MPI_Finalize();
    return 0;
}
"#;

fn run_checked(cmd: &mut std::process::Command) -> String {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed ({}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Real Open MPI, 4 ranks oversubscribed on this 2-CPU machine: the late
/// sender, late receiver, barrier and N×N waits the analysis finds on the
/// recorded traces agree with what the program measured within 5 % (every
/// checked wait is ≥ 30 ms, so 5 % is ≥ 1.5 ms; seen: within 25 µs).
#[test]
fn real_openmpi_waits_match_what_the_program_measured() {
    real_mpirun_waits(contend_collector::MpiImplementation::OpenMpi);
}

/// The same with MPICH (Hydra's `mpirun.mpich`).
#[test]
fn real_mpich_waits_match_what_the_program_measured() {
    real_mpirun_waits(contend_collector::MpiImplementation::Mpich);
}

fn real_mpirun_waits(imp: contend_collector::MpiImplementation) {
    use contend_collector::MpiImplementation;
    let (mpicc, mpirun) = match imp {
        MpiImplementation::OpenMpi => ("mpicc.openmpi", "mpirun.openmpi"),
        MpiImplementation::Mpich => ("mpicc.mpich", "mpirun.mpich"),
    };
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("delays.c");
    std::fs::write(&src, DELAYS_C).unwrap();
    let exe = dir.path().join("delays");
    run_checked(
        std::process::Command::new("timeout")
            .args(["60", mpicc, "-O1", "-g", "-o"])
            .arg(&exe)
            .arg(&src),
    );
    let lib = contend_collector::install_mpi_recorder(imp)
        .expect("install the MPI recorder")
        .unwrap_or_else(|| panic!("contend was built without {} headers", imp.name()));
    let preload = lib.display().to_string();
    // The program's own clocks are the truth; the injected delays only make
    // the waits large. On a loaded machine a rank that should arrive on
    // time can be descheduled and arrive late itself, so the wait it was to
    // cause is shorter than the injected delay: such a run is disturbed and
    // made again (up to three runs).
    let run = |attempt: u32| -> (std::path::PathBuf, String) {
        let rec_dir = dir.path().join(format!("rec{attempt}"));
        std::fs::create_dir(&rec_dir).unwrap();
        let out_dir = rec_dir.display().to_string();
        let mut cmd = std::process::Command::new("timeout");
        cmd.args(["-k", "5", "60", mpirun]);
        match imp {
            MpiImplementation::OpenMpi => cmd
                .args(["--allow-run-as-root", "--oversubscribe"])
                .args(["--mca", "mpi_yield_when_idle", "1", "-np", "4"])
                .args(["-x", &format!("LD_PRELOAD={preload}")])
                .args(["-x", &format!("CONTEND_DIR={out_dir}")]),
            MpiImplementation::Mpich => cmd
                .args(["-np", "4"])
                .args(["-genv", "LD_PRELOAD", &preload])
                .args(["-genv", "CONTEND_DIR", &out_dir]),
        };
        let stdout = run_checked(cmd.arg(&exe));
        (rec_dir, stdout)
    };
    let value = |stdout: &str, key: &str| -> u64 {
        let line = stdout
            .lines()
            .find(|l| l.starts_with(&format!("{key} ")))
            .unwrap_or_else(|| panic!("no `{key}` in the program's output:\n{stdout}"));
        let s: f64 = line.rsplit(' ').next().unwrap().parse().unwrap();
        (s * 1e9).round() as u64
    };
    let mut attempt = 0;
    let (rec_dir, stdout) = loop {
        attempt += 1;
        let (rec_dir, stdout) = run(attempt);
        let (ls, lr) = (value(&stdout, "LS"), value(&stdout, "LR"));
        // the injected 200 ms late sender and 150 ms late receiver
        if ls > 150_000_000 && lr > 100_000_000 {
            break (rec_dir, stdout);
        }
        assert!(
            attempt < 3,
            "three disturbed runs; the last: late sender {ls} ns, late receiver {lr} ns\n{stdout}"
        );
        eprintln!("disturbed run (late sender {ls} ns, late receiver {lr} ns): again");
    };
    let measured = |key: &str| value(&stdout, key);
    let rec = contend_trace::read_mpi_recording(&rec_dir)
        .expect("readable MPI recording")
        .expect("an mpi/ directory");
    assert_eq!(rec.ranks.len(), 4, "{:?}", rec.problems);
    let a = analyze(&rec);
    // The wait found at the n-th call of `op` on `rank` (0 if none).
    let found = |rank: u32, op: MpiOp, nth: usize| -> u64 {
        let t = rec.ranks.iter().find(|t| t.rank == rank).unwrap();
        let ev = t
            .events
            .iter()
            .enumerate()
            .filter(|(_, e)| e.op == op)
            .nth(nth)
            .unwrap_or_else(|| panic!("rank {rank} has no call {nth} of {}", op.name()))
            .0;
        a.waits
            .iter()
            .find(|w| w.rank == rank && w.event == ev)
            .map_or(0, |w| w.wait_ns)
    };
    let close = |what: &str, got: u64, want: u64| {
        let tol = want / 20;
        eprintln!("{what}: analysis {got} ns, program {want} ns");
        assert!(
            got.abs_diff(want) <= tol,
            "{what}: analysis {got} ns, program measured {want} ns (tolerance {tol} ns)\n{stdout}"
        );
    };
    close("late sender", found(1, MpiOp::Recv, 0), measured("LS"));
    close("late receiver", found(2, MpiOp::Ssend, 0), measured("LR"));
    for r in 0..4u32 {
        let want = measured(&format!("BARRIER {r}"));
        if want >= 30_000_000 {
            close(
                &format!("barrier, rank {r}"),
                found(r, MpiOp::Barrier, 2),
                want,
            );
        }
        let want = measured(&format!("NXN {r}"));
        if want >= 30_000_000 {
            close(
                &format!("Allreduce, rank {r}"),
                found(r, MpiOp::Allreduce, 0),
                want,
            );
        }
    }
    let pattern_of = |rank: u32, op: MpiOp, nth: usize| {
        let t = rec.ranks.iter().find(|t| t.rank == rank).unwrap();
        let ev = t
            .events
            .iter()
            .enumerate()
            .filter(|(_, e)| e.op == op)
            .nth(nth)
            .unwrap()
            .0;
        a.waits
            .iter()
            .find(|w| w.rank == rank && w.event == ev)
            .map(|w| (w.pattern, w.cause))
    };
    assert_eq!(
        pattern_of(1, MpiOp::Recv, 0),
        Some((Pattern::LateSender, 0))
    );
    assert_eq!(
        pattern_of(2, MpiOp::Ssend, 0),
        Some((Pattern::LateReceiver, 3))
    );
    // Who waits at the imbalanced barrier and Allreduce, and for whom, as
    // the program's own clocks saw it: by design rank 0 waits for rank 3 at
    // the barrier and rank 3 for rank 0 at the Allreduce, but on a loaded
    // machine a rank descheduled on its way out of the barrier before can
    // arrive later than the sleeps intend (seen: rank 1 at the Allreduce).
    // The rank that waited longest, and the ranks that arrived within 1 ms
    // of the last (its wait 0): the analysis may name any of them.
    let longest_wait = |key: &str| {
        (0..4u32)
            .max_by_key(|r| measured(&format!("{key} {r}")))
            .unwrap()
    };
    let last_arrivals = |key: &str| -> Vec<u32> {
        (0..4u32)
            .filter(|r| measured(&format!("{key} {r}")) <= 1_000_000)
            .collect()
    };
    for (key, op, nth, pattern) in [
        ("BARRIER", MpiOp::Barrier, 2, Pattern::WaitAtBarrier),
        ("NXN", MpiOp::Allreduce, 0, Pattern::WaitAtNxN),
    ] {
        let waiter = longest_wait(key);
        let last = last_arrivals(key);
        let found = pattern_of(waiter, op, nth);
        assert!(
            found.is_some_and(|(p, cause)| p == pattern && last.contains(&cause)),
            "{} of rank {waiter}: analysis {found:?}, program: {pattern:?} caused by one of {last:?}\n{stdout}",
            op.name()
        );
    }
    assert!(
        a.stats.unmatched_sends + a.stats.unmatched_receives == 0,
        "{:?}",
        a.warnings
    );
}

/// A rank started by `mpirun` is the launcher's child exec'ing the program:
/// its maps before the exec are `<pid>.maps`, after it `<pid>.1.maps`. A
/// call site is resolved in the generation whose maps cover it.
#[test]
fn call_sites_resolve_in_the_exec_generation_that_maps_them() {
    use contend::mpi::MapsSiteResolver;
    use contend::symbols::Symbols;
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("maps")).unwrap();
    std::fs::write(
        dir.path().join("maps/4242.maps"),
        "# snapshot 0 100\n555500000000-555500010000 r-xp 00000000 fe:00 1 /usr/bin/orterun\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("maps/4242.1.maps"),
        "# snapshot 0 200\n555600000000-555600010000 r-xp 00000000 fe:00 2 /opt/app/solver\n",
    )
    .unwrap();
    // An MPI recording: the maps and an (empty) `mpi/`.
    std::fs::create_dir(dir.path().join("mpi")).unwrap();
    let rec = contend::Recording::open(dir.path()).unwrap();
    let symbols = Symbols::new();
    let mut r = MapsSiteResolver::new(&rec, &symbols);
    let site = r.site(4242, 0x5556_0000_1234);
    assert_eq!(site.module.as_deref(), Some("/opt/app/solver"));
    assert_eq!(site.offset, 0x1234);
    let site = r.site(4242, 0x5555_0000_0042);
    assert_eq!(site.module.as_deref(), Some("/usr/bin/orterun"));
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    // No maps at all: the address, and one warning naming the directory.
    let site = r.site(7, 0x1000);
    assert_eq!(site.display, "0x1000");
    assert_eq!(r.warnings.len(), 1);
    assert!(r.warnings[0].contains("pid 7"), "{:?}", r.warnings);
}

/// A recording directory holding only `mpi/` (no meta.json, no lock
/// traces) opens and reports; one without `mpi/` gets no MPI part.
#[test]
fn mpi_only_recording_opens_and_reports() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("mpi")).unwrap();
    let rec = contend::recording::Recording::open(dir.path()).expect("an MPI-only recording opens");
    let report = contend::analyze(&rec, &Default::default(), &contend::NoProgress).into_report();
    assert!(
        report.section::<MpiReport>().is_some(),
        "{:?}",
        report.warnings
    );
    assert!(report
        .section::<contend::locks::LockReport>()
        .unwrap()
        .no_events_reason
        .as_deref()
        .is_some_and(|r| r.contains("MPI")));
    // Without mpi/: no MPI part, no MPI warning.
    let plain = tempfile::tempdir().unwrap();
    std::fs::write(plain.path().join("meta.json"), "{}").unwrap();
    let rec = contend::recording::Recording::open(plain.path()).unwrap();
    let report = contend::analyze(&rec, &Default::default(), &contend::NoProgress).into_report();
    assert!(report.section::<MpiReport>().is_none());
    let mpi_warnings: Vec<&String> = report
        .warnings
        .iter()
        .filter(|w| w.starts_with("MPI"))
        .collect();
    assert!(mpi_warnings.is_empty(), "{mpi_warnings:?}");
}
