//! Hand-built rank traces: decoding, merging, clock correction, damage.

use super::records::send_completion;
use super::*;
use crate::mpi::{
    CompletionKind, MpiOp, Peer, ProbedMessage, RecvPost, SendPost, StartedRequest, ANY_TAG,
    SELF_COMM, WORLD_COMM,
};
use crate::mpi_format::Head;

/// A hand-made rank trace, laid out as the C recorder writes it.
struct Builder {
    header: Vec<u8>,
    chunk_size: usize,
    chunks: Vec<Vec<u8>>,
}

/// One thread's records in one chunk.
struct Chunk {
    tid: u32,
    seq: u32,
    base: u64,
    last: u64,
    words: Vec<u64>,
}

impl Chunk {
    fn new(tid: u32, seq: u32, base: u64) -> Chunk {
        Chunk {
            tid,
            seq,
            base,
            last: base,
            words: Vec::new(),
        }
    }
    fn rec(&mut self, tag: u8, small: u8, arg: u32, payload: &[u64]) {
        self.words.push(
            Head {
                tag,
                n: payload.len() as u16,
                small,
                arg,
            }
            .encode(),
        );
        self.words.extend_from_slice(payload);
    }
    fn dt(&mut self, t: u64) -> u32 {
        let d = t - self.last;
        self.last = t;
        d as u32
    }
    fn enter(&mut self, op: MpiOp, t: u64, site: u64, rest: &[u64]) {
        let dt = self.dt(t);
        let mut p = vec![site];
        p.extend_from_slice(rest);
        self.rec(f::REC_ENTER, op as u8, dt, &p);
    }
    fn exit(&mut self, op: MpiOp, t: u64, rc: i32, rest: &[u64]) {
        let dt = self.dt(t);
        let mut p = vec![rc as u32 as u64];
        p.extend_from_slice(rest);
        self.rec(f::REC_EXIT, op as u8, dt, &p);
    }
    fn completion(&mut self, recv: bool, source: Option<u32>, request: u64, tag: i32, bytes: u64) {
        let mut fl = 0;
        if recv {
            fl |= f::COMPL_RECV;
        }
        if source.is_none() {
            fl |= f::COMPL_NO_SOURCE;
        }
        self.rec(
            f::REC_COMPLETION,
            fl,
            source.unwrap_or(0),
            &[request, tag as u32 as u64, bytes],
        );
    }
    fn comm(&mut self, id: u64, ranks: &[u32]) {
        let mut p = vec![id, ranks.len() as u64];
        for pair in ranks.chunks(2) {
            p.push(u64::from(pair[0]) | (u64::from(*pair.get(1).unwrap_or(&0)) << 32));
        }
        self.rec(f::REC_COMM, 0, ranks.len() as u32, &p);
    }
}

impl Builder {
    fn new(rank: u32, size: u32, flags: u64) -> Builder {
        let mut header = vec![0u8; f::HEADER_SIZE];
        let put32 =
            |h: &mut Vec<u8>, off: usize, v: u32| h[off..off + 4].copy_from_slice(&v.to_le_bytes());
        let put64 =
            |h: &mut Vec<u8>, off: usize, v: u64| h[off..off + 8].copy_from_slice(&v.to_le_bytes());
        header[..8].copy_from_slice(f::MAGIC);
        put32(&mut header, h::VERSION, f::VERSION);
        put32(&mut header, h::HEADER_SIZE, f::HEADER_SIZE as u32);
        put32(&mut header, h::ENDIAN_CHECK, f::ENDIAN_CHECK);
        put32(&mut header, h::CHUNK_SIZE, 4096);
        put32(&mut header, h::PID, 4242 + rank);
        put32(&mut header, h::WORLD_RANK, rank);
        put32(&mut header, h::WORLD_SIZE, size);
        put64(&mut header, h::FLAGS, flags);
        put64(&mut header, h::DATA_OFFSET, f::HEADER_SIZE as u64);
        header[h::HOST..h::HOST + 5].copy_from_slice(b"node1");
        header[h::LIBRARY..h::LIBRARY + 8].copy_from_slice(b"Open MPI");
        Builder {
            header,
            chunk_size: 4096,
            chunks: Vec::new(),
        }
    }
    fn offsets(&mut self, init: (i64, u64), fin: Option<(i64, u64)>) {
        let put64 =
            |h: &mut Vec<u8>, off: usize, v: u64| h[off..off + 8].copy_from_slice(&v.to_le_bytes());
        put64(&mut self.header, h::OFFSET_INIT_NS, init.0 as u64);
        put64(&mut self.header, h::OFFSET_INIT_AT_NS, init.1);
        if let Some((o, at)) = fin {
            put64(&mut self.header, h::OFFSET_FINAL_NS, o as u64);
            put64(&mut self.header, h::OFFSET_FINAL_AT_NS, at);
            let flags = u64_at(&self.header, h::FLAGS) | f::FLAG_FINAL_OFFSET;
            put64(&mut self.header, h::FLAGS, flags);
        }
    }
    fn add(&mut self, c: Chunk) {
        let mut b = vec![0u8; self.chunk_size];
        b[0..4].copy_from_slice(&f::CHUNK_MAGIC.to_le_bytes());
        b[4..8].copy_from_slice(&c.tid.to_le_bytes());
        b[8..12].copy_from_slice(&c.seq.to_le_bytes());
        b[16..24].copy_from_slice(&c.base.to_le_bytes());
        for (i, w) in c.words.iter().enumerate() {
            let o = f::CHUNK_HEADER_SIZE + i * 8;
            b[o..o + 8].copy_from_slice(&w.to_le_bytes());
        }
        self.chunks.push(b);
    }
    fn bytes(&self) -> Vec<u8> {
        let mut out = self.header.clone();
        let n = self.chunks.len() as u32;
        out[h::CHUNKS_CLAIMED..h::CHUNKS_CLAIMED + 4].copy_from_slice(&n.to_le_bytes());
        for c in &self.chunks {
            out.extend_from_slice(c);
        }
        out
    }
}

fn pt(peer: i32, tag: i32) -> u64 {
    f::pack_peer_tag(peer, tag)
}

/// Rank 1 of 4: Init, Isend to 2, Irecv from ANY_SOURCE, Waitall
/// completing both, a split communicator {1, 3} and a Recv on it,
/// a Barrier, Finalize.
fn sample(flags: u64) -> Builder {
    let mut b = Builder::new(1, 4, flags);
    let mut c = Chunk::new(77, 0, 1_000);
    c.enter(MpiOp::Init, 1_000, 0x400100, &[]);
    c.comm(WORLD_COMM, &[0, 1, 2, 3]);
    c.comm(SELF_COMM, &[1]);
    c.exit(MpiOp::Init, 5_000, 0, &[]);
    c.enter(MpiOp::Isend, 6_000, 0x400200, &[WORLD_COMM, pt(2, 5), 800]);
    c.exit(MpiOp::Isend, 6_100, 0, &[1]);
    c.enter(
        MpiOp::Irecv,
        6_200,
        0x400300,
        &[WORLD_COMM, pt(f::PEER_ANY, f::PEER_ANY), 1024],
    );
    c.exit(MpiOp::Irecv, 6_300, 0, &[2]);
    c.enter(MpiOp::Waitall, 7_000, 0x400400, &[2]);
    c.completion(false, Some(2), 1, 5, 800);
    c.completion(true, Some(3), 2, 9, 512);
    c.exit(MpiOp::Waitall, 9_000, 0, &[]);
    c.enter(MpiOp::CommSplit, 10_000, 0x400500, &[WORLD_COMM]);
    c.comm(0x1_0000_0002, &[1, 3]);
    c.exit(MpiOp::CommSplit, 11_000, 0, &[0x1_0000_0002]);
    c.enter(
        MpiOp::Recv,
        12_000,
        0x400600,
        &[0x1_0000_0002, pt(3, ANY_TAG), 64],
    );
    c.completion(true, Some(3), 0, 4, 64);
    c.exit(MpiOp::Recv, 15_000, 0, &[]);
    c.enter(
        MpiOp::Barrier,
        16_000,
        0x400700,
        &[WORLD_COMM, u64::from(u32::MAX), 0, 0],
    );
    c.exit(MpiOp::Barrier, 20_000, 0, &[]);
    c.enter(MpiOp::Finalize, 21_000, 0x400800, &[]);
    c.exit(MpiOp::Finalize, 22_000, 0, &[]);
    b.add(c);
    b
}

#[test]
fn decodes_a_hand_built_trace() {
    let b = sample(f::FLAG_FINALIZED);
    let t = decode_rank_trace(Path::new("rank-1.cmpi"), &b.bytes()).unwrap();
    assert!(t.damage.is_empty(), "{:?}", t.damage);
    assert_eq!((t.rank, t.world_size, t.pid), (1, 4, 4243));
    assert_eq!(t.host, "node1");
    assert_eq!(t.library, "Open MPI");
    assert!(t.finalized);
    assert_eq!(t.aborted_in, None);
    let ops: Vec<MpiOp> = t.events.iter().map(|e| e.op).collect();
    use MpiOp::*;
    assert_eq!(
        ops,
        [Init, Isend, Irecv, Waitall, CommSplit, Recv, Barrier, Finalize]
    );
    let isend = t.events.at(1);
    assert_eq!(
        (isend.enter_ns, isend.exit_ns, isend.site),
        (6_000, 6_100, 0x400200)
    );
    assert_eq!(
        isend.send,
        Some(SendPost {
            dest: Peer::Rank(2),
            tag: 5,
            bytes: 800,
            request: 1
        })
    );
    assert!(isend.completions.is_empty());
    let irecv = t.events.at(2);
    assert_eq!(
        irecv.recv,
        Some(RecvPost {
            source: Peer::Any,
            tag: ANY_TAG,
            bytes: 1024,
            request: 2
        })
    );
    let wa = t.events.at(3);
    assert_eq!((wa.enter_ns, wa.exit_ns), (7_000, 9_000));
    assert_eq!(wa.completions.len(), 2);
    assert_eq!(wa.completions[1].kind, CompletionKind::Recv);
    assert_eq!(wa.completions[1].source, Some(3));
    assert_eq!((wa.completions[1].tag, wa.completions[1].bytes), (9, 512));
    assert_eq!(wa.completions[0].kind, CompletionKind::Send);
    assert_eq!(t.events.at(4).created_comm, Some(0x1_0000_0002));
    let recv = t.events.at(5);
    assert_eq!(recv.comm, 0x1_0000_0002);
    assert_eq!(recv.recv.unwrap().source, Peer::Rank(3));
    assert_eq!(recv.completions[0].request, 0);
    assert_eq!(recv.completions[0].tag, 4);
    assert_eq!(t.events.at(6).root, None);
    assert_eq!(
        t.comms,
        vec![
            MpiComm {
                id: WORLD_COMM,
                world_ranks: vec![0, 1, 2, 3]
            },
            MpiComm {
                id: SELF_COMM,
                world_ranks: vec![1]
            },
            MpiComm {
                id: 0x1_0000_0002,
                world_ranks: vec![1, 3]
            },
        ]
    );
}

#[test]
fn blocking_send_and_sendrecv_list_their_send_completion() {
    let mut b = Builder::new(0, 2, f::FLAG_FINALIZED);
    let mut c = Chunk::new(5, 0, 100);
    c.enter(MpiOp::Ssend, 200, 1, &[WORLD_COMM, pt(1, 3), 40]);
    c.exit(MpiOp::Ssend, 300, 0, &[]);
    c.enter(
        MpiOp::Sendrecv,
        400,
        2,
        &[WORLD_COMM, pt(1, 7), 8, pt(f::PEER_NULL, 8), 16],
    );
    c.completion(true, None, 0, ANY_TAG, 0);
    c.exit(MpiOp::Sendrecv, 500, 0, &[]);
    b.add(c);
    let t = decode_rank_trace(Path::new("x"), &b.bytes()).unwrap();
    assert_eq!(t.events.at(0).completions, vec![send_completion(1, 3, 40)]);
    let sr = t.events.at(1);
    assert_eq!(sr.recv.unwrap().source, Peer::Null);
    assert_eq!(sr.completions.len(), 2);
    assert_eq!(sr.completions[0].kind, CompletionKind::Send);
    assert_eq!(sr.completions[1].source, None);
}

#[test]
fn matched_probe_and_receives_decode_as_probe_and_receives() {
    let mut b = Builder::new(1, 2, f::FLAG_FINALIZED);
    let mut c = Chunk::new(5, 0, 100);
    // MPI_Mprobe(ANY_SOURCE, ANY_TAG) found 24 bytes from rank 0, tag 9
    c.enter(
        MpiOp::Mprobe,
        200,
        0x10,
        &[WORLD_COMM, pt(f::PEER_ANY, ANY_TAG)],
    );
    c.rec(
        f::REC_COMPLETION,
        f::COMPL_RECV | f::COMPL_PROBE,
        0,
        &[0, 9, 24],
    );
    c.exit(MpiOp::Mprobe, 300, 0, &[]);
    // MPI_Mrecv of that message
    c.enter(MpiOp::Mrecv, 310, 0x20, &[WORLD_COMM, pt(0, 9), 24]);
    c.completion(true, Some(0), 0, 9, 24);
    c.exit(MpiOp::Mrecv, 320, 0, &[]);
    // MPI_Imrecv of MPI_MESSAGE_NO_PROC: request 7
    c.enter(
        MpiOp::Imrecv,
        330,
        0x30,
        &[WORLD_COMM, pt(f::PEER_NULL, ANY_TAG), 0],
    );
    c.exit(MpiOp::Imrecv, 340, 0, &[7]);
    // MPI_Improbe that found nothing
    c.enter(MpiOp::Improbe, 350, 0x40, &[WORLD_COMM, pt(0, 3)]);
    c.exit(MpiOp::Improbe, 360, 0, &[]);
    b.add(c);
    let t = decode_rank_trace(Path::new("x"), &b.bytes()).unwrap();
    assert!(t.damage.is_empty(), "{:?}", t.damage);
    let ops: Vec<MpiOp> = t.events.iter().map(|e| e.op).collect();
    assert_eq!(
        ops,
        [MpiOp::Mprobe, MpiOp::Mrecv, MpiOp::Imrecv, MpiOp::Improbe]
    );
    let mp = t.events.at(0);
    assert_eq!(
        mp.probed,
        Some(ProbedMessage {
            source: Some(0),
            tag: 9,
            bytes: 24
        })
    );
    assert!(mp.completions.is_empty() && mp.recv.is_none());
    let mr = t.events.at(1);
    assert_eq!(
        mr.recv,
        Some(RecvPost {
            source: Peer::Rank(0),
            tag: 9,
            bytes: 24,
            request: 0
        })
    );
    assert_eq!(mr.completions.len(), 1);
    assert_eq!(mr.completions[0].kind, CompletionKind::Recv);
    assert_eq!(mr.probed, None);
    let im = t.events.at(2).recv.unwrap();
    assert_eq!((im.source, im.request), (Peer::Null, 7));
    assert_eq!(t.events.at(3).probed, None);
    for op in [MpiOp::Mprobe, MpiOp::Improbe, MpiOp::Mrecv, MpiOp::Imrecv] {
        assert_eq!(MpiOp::from_code(op as u16), Some(op));
        assert!(op.name().starts_with("MPI_M") || op.name().starts_with("MPI_I"));
    }
}

#[test]
fn persistent_requests_decode_as_startall_postings() {
    let mut b = Builder::new(1, 4, f::FLAG_FINALIZED);
    let mut c = Chunk::new(5, 0, 100);
    // MPI_Recv_init(ANY_SOURCE, tag 5, 16 bytes), MPI_Ssend_init(2, 5, 16)
    c.enter(
        MpiOp::RecvInit,
        200,
        0x10,
        &[WORLD_COMM, pt(f::PEER_ANY, 5), 16],
    );
    c.exit(MpiOp::RecvInit, 210, 0, &[]);
    c.enter(MpiOp::SsendInit, 220, 0x20, &[WORLD_COMM, pt(2, 5), 16]);
    c.exit(MpiOp::SsendInit, 230, 0, &[]);
    // MPI_Startall of both: requests 7 (receive) and 8 (send)
    c.enter(MpiOp::Startall, 240, 0x30, &[2]);
    c.rec(
        f::REC_START,
        f::START_RECV,
        f::PEER_ANY as u32,
        &[WORLD_COMM, 7, 5, 16],
    );
    c.rec(f::REC_START, f::START_SYNC, 2, &[WORLD_COMM, 8, 5, 16]);
    c.exit(MpiOp::Startall, 250, 0, &[]);
    c.enter(MpiOp::Waitall, 260, 0x40, &[2]);
    c.completion(true, Some(0), 7, 5, 16);
    c.completion(false, Some(2), 8, 5, 16);
    c.exit(MpiOp::Waitall, 300, 0, &[]);
    c.enter(MpiOp::RequestFree, 310, 0x50, &[]);
    c.exit(MpiOp::RequestFree, 320, 0, &[]);
    b.add(c);
    let t = decode_rank_trace(Path::new("x"), &b.bytes()).unwrap();
    assert!(t.damage.is_empty(), "{:?}", t.damage);
    let ops: Vec<MpiOp> = t.events.iter().map(|e| e.op).collect();
    assert_eq!(
        ops,
        [
            MpiOp::RecvInit,
            MpiOp::SsendInit,
            MpiOp::Startall,
            MpiOp::Waitall,
            MpiOp::RequestFree
        ]
    );
    for e in t.events.iter().take(2) {
        assert!(e.send.is_none() && e.recv.is_none() && e.starts.is_empty());
    }
    let sa = t.events.at(2);
    assert_eq!(
        sa.starts,
        vec![
            StartedRequest {
                mode: MpiOp::RecvInit,
                comm: WORLD_COMM,
                send: None,
                recv: Some(RecvPost {
                    source: Peer::Any,
                    tag: 5,
                    bytes: 16,
                    request: 7
                })
            },
            StartedRequest {
                mode: MpiOp::SsendInit,
                comm: WORLD_COMM,
                send: Some(SendPost {
                    dest: Peer::Rank(2),
                    tag: 5,
                    bytes: 16,
                    request: 8
                }),
                recv: None
            }
        ]
    );
    assert!(sa.completions.is_empty());
    assert_eq!(t.events.at(3).completions.len(), 2);
    assert!(t.events.at(4).starts.is_empty());
    for (op, code, name) in [
        (MpiOp::SendInit, 90, "MPI_Send_init"),
        (MpiOp::SsendInit, 91, "MPI_Ssend_init"),
        (MpiOp::BsendInit, 92, "MPI_Bsend_init"),
        (MpiOp::RsendInit, 93, "MPI_Rsend_init"),
        (MpiOp::RecvInit, 94, "MPI_Recv_init"),
        (MpiOp::Start, 95, "MPI_Start"),
        (MpiOp::Startall, 96, "MPI_Startall"),
        (MpiOp::RequestFree, 97, "MPI_Request_free"),
    ] {
        assert_eq!(MpiOp::from_code(code), Some(op));
        assert_eq!(op.name(), name);
        assert!(!op.is_collective());
    }
}

#[test]
fn compact_records_repeat_the_site_and_mean_success() {
    let mut b = Builder::new(0, 2, f::FLAG_FINALIZED);
    let mut c = Chunk::new(5, 0, 100);
    c.enter(MpiOp::Iprobe, 100, 0x4000, &[WORLD_COMM, pt(1, 3)]);
    c.exit(MpiOp::Iprobe, 110, 0, &[]);
    // same site: compact ENTER (no site word), compact EXIT (no rc)
    let dt = c.dt(120);
    c.rec(
        f::REC_ENTER,
        MpiOp::Iprobe as u8 | f::SMALL_COMPACT,
        dt,
        &[WORLD_COMM, pt(1, 3)],
    );
    let dt = c.dt(130);
    c.rec(f::REC_EXIT, MpiOp::Iprobe as u8 | f::SMALL_COMPACT, dt, &[]);
    // compact EXIT of an Isend carries only the request id
    c.enter(MpiOp::Isend, 140, 0x5000, &[WORLD_COMM, pt(1, 4), 8]);
    let dt = c.dt(150);
    c.rec(f::REC_EXIT, MpiOp::Isend as u8 | f::SMALL_COMPACT, dt, &[7]);
    // a failing call keeps its return code
    c.enter(
        MpiOp::Barrier,
        160,
        0x6000,
        &[WORLD_COMM, u64::from(u32::MAX), 0, 0],
    );
    c.exit(MpiOp::Barrier, 170, 13, &[]);
    b.add(c);
    // a compact ENTER first in its chunk has no site to repeat
    let mut c = Chunk::new(6, 0, 200);
    let dt = c.dt(200);
    c.rec(
        f::REC_ENTER,
        MpiOp::Barrier as u8 | f::SMALL_COMPACT,
        dt,
        &[WORLD_COMM, 0, 0, 0],
    );
    let dt = c.dt(210);
    c.rec(
        f::REC_EXIT,
        MpiOp::Barrier as u8 | f::SMALL_COMPACT,
        dt,
        &[],
    );
    b.add(c);
    let t = decode_rank_trace(Path::new("x"), &b.bytes()).unwrap();
    let v: Vec<(MpiOp, u64, u64, i32)> = t
        .events
        .iter()
        .map(|e| (e.op, e.enter_ns, e.site, e.return_code))
        .collect();
    assert_eq!(
        v,
        [
            (MpiOp::Iprobe, 100, 0x4000, 0),
            (MpiOp::Iprobe, 120, 0x4000, 0),
            (MpiOp::Isend, 140, 0x5000, 0),
            (MpiOp::Barrier, 160, 0x6000, 13),
            (MpiOp::Barrier, 200, 0, 0),
        ]
    );
    assert_eq!(t.events.at(2).send.unwrap().request, 7);
    assert_eq!(t.damage.len(), 1, "{:?}", t.damage);
    assert!(t.damage[0].contains("site unknown"));
}

#[test]
fn call_that_never_returned_is_where_the_rank_aborted() {
    let mut b = Builder::new(2, 4, 0);
    let mut c = Chunk::new(9, 0, 1_000);
    c.enter(MpiOp::Init, 1_000, 1, &[]);
    c.exit(MpiOp::Init, 2_000, 0, &[]);
    c.enter(MpiOp::Recv, 3_000, 2, &[WORLD_COMM, pt(0, 1), 4]);
    b.add(c);
    let t = decode_rank_trace(Path::new("x"), &b.bytes()).unwrap();
    assert!(!t.finalized);
    assert_eq!(t.aborted_in, Some(1));
    let e = t.events.at(1);
    assert_eq!((e.op, e.enter_ns, e.exit_ns), (MpiOp::Recv, 3_000, 3_000));
    assert!(e.completions.is_empty());
}

#[test]
fn rank_that_ended_outside_mpi_is_described() {
    let mut b = Builder::new(2, 4, 0);
    let mut c = Chunk::new(9, 0, 1_000);
    c.enter(MpiOp::Init, 1_000, 1, &[]);
    c.exit(MpiOp::Init, 2_000, 0, &[]);
    b.add(c);
    let t = decode_rank_trace(Path::new("x"), &b.bytes()).unwrap();
    assert_eq!(t.aborted_in, None);
    assert!(t.damage.iter().any(|d| d.contains("outside any MPI call")));
}

#[test]
fn events_of_two_threads_merge_by_enter_time_and_chunks_chain() {
    let mut b = Builder::new(0, 1, f::FLAG_FINALIZED);
    let mut a0 = Chunk::new(10, 0, 100);
    a0.enter(
        MpiOp::Barrier,
        100,
        1,
        &[WORLD_COMM, u64::from(u32::MAX), 0, 0],
    );
    let mut a1 = Chunk::new(10, 1, 400);
    a1.exit(MpiOp::Barrier, 450, 0, &[]);
    let mut t2 = Chunk::new(11, 0, 200);
    // a TIME record sets an absolute time
    t2.rec(f::REC_TIME, 0, 0, &[300]);
    t2.last = 300;
    t2.enter(MpiOp::Iprobe, 300, 2, &[WORLD_COMM, pt(0, 0)]);
    t2.exit(MpiOp::Iprobe, 310, 0, &[]);
    b.add(a0);
    b.add(t2);
    b.add(a1);
    let t = decode_rank_trace(Path::new("x"), &b.bytes()).unwrap();
    assert!(t.damage.is_empty(), "{:?}", t.damage);
    let v: Vec<(MpiOp, u32, u64, u64)> = t
        .events
        .iter()
        .map(|e| (e.op, e.tid, e.enter_ns, e.exit_ns))
        .collect();
    assert_eq!(
        v,
        [
            (MpiOp::Barrier, 10, 100, 450),
            (MpiOp::Iprobe, 11, 300, 310)
        ]
    );
}

#[test]
fn clock_offsets_are_interpolated_linearly() {
    // offset +1000 ns at local 0, +3000 ns at local 10_000: a call at
    // local 5_000 moves by 2000 ns.
    let mut b = Builder::new(1, 2, f::FLAG_FINALIZED);
    b.offsets((1_000, 0), Some((3_000, 10_000)));
    let mut c = Chunk::new(3, 0, 5_000);
    c.enter(
        MpiOp::Barrier,
        5_000,
        1,
        &[WORLD_COMM, u64::from(u32::MAX), 0, 0],
    );
    c.exit(MpiOp::Barrier, 10_000, 0, &[]);
    b.add(c);
    let t = decode_rank_trace(Path::new("x"), &b.bytes()).unwrap();
    assert_eq!(t.clock_offset_ns, (1_000, Some(3_000)));
    assert_eq!(t.events.at(0).enter_ns, 7_000);
    assert_eq!(t.events.at(0).exit_ns, 13_000);
    // only the init offset: constant
    let mut b = Builder::new(1, 2, f::FLAG_FINALIZED);
    b.offsets((-500, 0), None);
    let mut c = Chunk::new(3, 0, 5_000);
    c.enter(
        MpiOp::Barrier,
        5_000,
        1,
        &[WORLD_COMM, u64::from(u32::MAX), 0, 0],
    );
    c.exit(MpiOp::Barrier, 6_000, 0, &[]);
    b.add(c);
    let t = decode_rank_trace(Path::new("x"), &b.bytes()).unwrap();
    assert_eq!(
        (t.events.at(0).enter_ns, t.events.at(0).exit_ns),
        (4_500, 5_500)
    );
}

#[test]
fn bad_headers_are_errors_naming_the_file() {
    let good = sample(f::FLAG_FINALIZED).bytes();
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (good[..100].to_vec(), "shorter than"),
        (
            {
                let mut b = good.clone();
                b[..8].fill(0);
                b
            },
            "never finished",
        ),
        (
            {
                let mut b = good.clone();
                b[0] = b'X';
                b
            },
            "bad magic",
        ),
        (
            {
                let mut b = good.clone();
                b[h::VERSION] = 9;
                b
            },
            "version 9",
        ),
        (
            {
                let mut b = good.clone();
                b[h::WORLD_RANK] = 7;
                b
            },
            "not in MPI_COMM_WORLD",
        ),
    ];
    for (bytes, want) in cases {
        let e = decode_rank_trace(Path::new("/r/mpi/rank-1.cmpi"), &bytes).unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains("/r/mpi/rank-1.cmpi") && msg.contains(want),
            "{msg}"
        );
    }
}

#[test]
fn truncated_traces_never_panic_and_keep_what_is_complete() {
    let good = sample(f::FLAG_FINALIZED).bytes();
    let full = decode_rank_trace(Path::new("x"), &good).unwrap();
    let mut last_events = 0;
    for len in (0..=good.len()).step_by(8) {
        match decode_rank_trace(Path::new("x"), &good[..len]) {
            Ok(t) => {
                // a prefix never invents events
                assert!(t.events.len() <= full.events.len());
                for (a, b) in t.events.iter().zip(&full.events) {
                    assert_eq!(a.op, b.op);
                }
                if len < good.len() {
                    assert!(!t.damage.is_empty(), "truncation at {len} not described");
                }
                last_events = t.events.len();
            }
            Err(e) => assert!(len < f::HEADER_SIZE, "{len}: {e}"),
        }
    }
    assert_eq!(last_events, full.events.len());
}

#[test]
fn a_record_cut_off_by_a_crash_is_absent() {
    // the head word of the last record (Finalize's EXIT) zeroed: the
    // writer stores it last, so this is what a death just before it
    // leaves behind
    let b = sample(0);
    let mut bytes = b.bytes();
    let words: Vec<u64> = bytes[f::HEADER_SIZE + f::CHUNK_HEADER_SIZE..]
        .chunks_exact(8)
        .map(|w| u64::from_le_bytes(w.try_into().unwrap()))
        .collect();
    let last_head = words
        .iter()
        .enumerate()
        .filter(|(_, w)| Head::decode(**w).tag == f::REC_EXIT)
        .map(|(i, _)| i)
        .next_back()
        .unwrap();
    let off = f::HEADER_SIZE + f::CHUNK_HEADER_SIZE + last_head * 8;
    bytes[off..off + 8].fill(0);
    let t = decode_rank_trace(Path::new("x"), &bytes).unwrap();
    let last = t.events.last().unwrap();
    assert_eq!(last.op, MpiOp::Finalize);
    assert_eq!(t.aborted_in, Some(t.events.len() - 1));
}

#[test]
fn corrupted_traces_never_panic() {
    let good = sample(f::FLAG_FINALIZED).bytes();
    // deterministic xorshift
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for _ in 0..3000 {
        let mut b = good.clone();
        for _ in 0..(1 + next() % 8) {
            // mostly the records, sometimes the header
            let pos = if next() % 4 == 0 {
                (next() % f::HEADER_SIZE as u64) as usize
            } else {
                f::HEADER_SIZE + (next() % (b.len() - f::HEADER_SIZE) as u64) as usize
            };
            b[pos] = next() as u8;
        }
        let _ = decode_rank_trace(Path::new("x"), &b);
    }
}

#[test]
fn recording_lists_missing_ranks_and_unreadable_files() {
    let dir = tempfile::tempdir().unwrap();
    assert!(read_mpi_recording(dir.path()).unwrap().is_none());
    let mpi = dir.path().join("mpi");
    std::fs::create_dir(&mpi).unwrap();
    let empty = read_mpi_recording(dir.path()).unwrap().unwrap();
    assert!(empty.ranks.is_empty());
    assert!(empty.problems[0].contains("no readable rank trace"));

    let mut r1 = sample(f::FLAG_FINALIZED);
    std::fs::write(mpi.join("rank-1.cmpi"), r1.bytes()).unwrap();
    r1 = Builder::new(3, 4, f::FLAG_FINALIZED);
    std::fs::write(mpi.join("rank-3.cmpi"), r1.bytes()).unwrap();
    std::fs::write(mpi.join("rank-2.cmpi"), b"garbage").unwrap();
    std::fs::write(mpi.join("notes.txt"), b"ignored").unwrap();
    let rec = read_mpi_recording(dir.path()).unwrap().unwrap();
    assert_eq!(rec.world_size, 4);
    assert_eq!(rec.ranks.iter().map(|r| r.rank).collect::<Vec<_>>(), [1, 3]);
    assert_eq!(rec.missing_ranks, [0, 2]);
    assert_eq!(rec.problems.len(), 1, "{:?}", rec.problems);
    assert!(rec.problems[0].contains("rank-2.cmpi"));
}

#[test]
fn file_names() {
    assert_eq!(rank_of_file_name("rank-12.cmpi"), Some(12));
    assert_eq!(rank_of_file_name("rank-.cmpi"), None);
    assert_eq!(rank_of_file_name("rank-1.2.cmpi"), None);
    assert_eq!(rank_of_file_name("rank-1.cmpi.tmp"), None);
}

#[test]
fn tsc_traces_are_converted_to_ns_with_their_calibration_points() {
    // A 2 GHz TSC (0.5 ns per tick). Calibration points: start (ticks
    // 10_000_000 at 1_000_000_000 ns), end (30_000_000 at 1_010_000_000)
    // and the chunk header (12_000_000 at 1_001_000_000): all on the line
    // ns = 1e9 + (ticks - 1e7) / 2. The Barrier enters at ticks
    // 12_000_000 -> 1_001_000_000 ns and exits 4_000 ticks later ->
    // 1_001_002_000 ns; the clock offset to rank 0 (+500 ns) is applied
    // after the conversion.
    let put16 =
        |h: &mut Vec<u8>, off: usize, v: u16| h[off..off + 2].copy_from_slice(&v.to_le_bytes());
    let put64 =
        |h: &mut Vec<u8>, off: usize, v: u64| h[off..off + 8].copy_from_slice(&v.to_le_bytes());
    let build = |hz: u64, end: bool| {
        let flags = f::FLAG_FINALIZED | if end { f::FLAG_END_CLOCK } else { 0 };
        let mut b = Builder::new(1, 2, flags);
        b.offsets((500, 0), None);
        put16(&mut b.header, h::CLOCK, f::CLOCK_TSC);
        put64(&mut b.header, h::TICKS_PER_SECOND, hz);
        put64(&mut b.header, h::START_TICKS, 10_000_000);
        put64(&mut b.header, h::START_MONOTONIC_NS, 1_000_000_000);
        put64(&mut b.header, h::END_TICKS, 30_000_000);
        put64(&mut b.header, h::END_MONOTONIC_NS, 1_010_000_000);
        let mut c = Chunk::new(3, 0, 12_000_000);
        c.enter(
            MpiOp::Barrier,
            12_000_000,
            1,
            &[WORLD_COMM, u64::from(u32::MAX), 0, 0],
        );
        c.exit(MpiOp::Barrier, 12_004_000, 0, &[]);
        b.add(c);
        let mut bytes = b.bytes();
        let chunk = f::HEADER_SIZE;
        bytes[chunk + f::chunk::MONOTONIC_NS..chunk + f::chunk::MONOTONIC_NS + 8]
            .copy_from_slice(&1_001_000_000u64.to_le_bytes());
        bytes
    };
    // the fit through three points, no frequency needed
    let t = decode_rank_trace(Path::new("x"), &build(0, true)).unwrap();
    assert!(t.damage.is_empty(), "{:?}", t.damage);
    assert_eq!(
        (t.events.at(0).enter_ns, t.events.at(0).exit_ns),
        (1_001_000_500, 1_001_002_500)
    );
    // without the end point the start and chunk points (1 ms apart) still
    // give the slope
    let t = decode_rank_trace(Path::new("x"), &build(0, false)).unwrap();
    assert_eq!(
        (t.events.at(0).enter_ns, t.events.at(0).exit_ns),
        (1_001_000_500, 1_001_002_500)
    );
    // a TSC trace whose points give no slope and that has no frequency is
    // refused with a message naming the problem
    let mut bad = build(0, false);
    bad[h::START_TICKS..h::START_TICKS + 8].copy_from_slice(&0u64.to_le_bytes());
    let e = decode_rank_trace(Path::new("rank-1.cmpi"), &bad).unwrap_err();
    assert!(e.to_string().contains("clock calibration"), "{e}");
    // with the launcher's frequency one point is enough
    let mut one = build(2_000_000_000, false);
    one[h::START_TICKS..h::START_TICKS + 8].copy_from_slice(&0u64.to_le_bytes());
    let t = decode_rank_trace(Path::new("x"), &one).unwrap();
    assert_eq!(t.events.at(0).exit_ns, 1_001_002_500);
}

#[test]
fn version_1_traces_still_read() {
    // version 1: no clock fields (0), every time CLOCK_MONOTONIC ns; the
    // same records decode to the same calls as in a version 2 trace on
    // CLOCK_MONOTONIC
    let mut v1 = sample(f::FLAG_FINALIZED).bytes();
    v1[h::VERSION..h::VERSION + 4].copy_from_slice(&f::VERSION_1.to_le_bytes());
    let t1 = decode_rank_trace(Path::new("rank-1.cmpi"), &v1).unwrap();
    assert!(t1.damage.is_empty(), "{:?}", t1.damage);
    let mut v2 = sample(f::FLAG_FINALIZED).bytes();
    v2[h::CLOCK..h::CLOCK + 2].copy_from_slice(&f::CLOCK_MONOTONIC.to_le_bytes());
    let t2 = decode_rank_trace(Path::new("rank-1.cmpi"), &v2).unwrap();
    let times = |t: &MpiRankTrace| {
        t.events
            .iter()
            .map(|e| (e.op, e.enter_ns, e.exit_ns))
            .collect::<Vec<_>>()
    };
    assert_eq!(times(&t1), times(&t2));
    assert_eq!(t1.events.at(3).enter_ns, 7_000);
    // an unknown clock is refused
    let mut bad = v2.clone();
    bad[h::CLOCK..h::CLOCK + 2].copy_from_slice(&9u16.to_le_bytes());
    let e = decode_rank_trace(Path::new("rank-1.cmpi"), &bad).unwrap_err();
    assert!(e.to_string().contains("unknown trace clock 9"), "{e}");
}

/// A file read chunk by chunk with `pread` gives what its bytes in memory
/// give: the same calls, damage and errors, for whole, truncated and
/// corrupted traces.
#[test]
fn files_read_chunk_by_chunk_decode_as_their_bytes_do() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rank-1.cmpi");
    let mut traces = vec![
        sample(f::FLAG_FINALIZED).bytes(),
        sample(0).bytes(),
        Vec::new(),
    ];
    let good = sample(f::FLAG_FINALIZED).bytes();
    for len in (0..good.len()).step_by(509) {
        traces.push(good[..len].to_vec());
    }
    let mut x: u64 = 0x2545_F491_4F6C_DD1D;
    for _ in 0..200 {
        let mut b = good.clone();
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let pos = (x % b.len() as u64) as usize;
        b[pos] ^= (x >> 32) as u8 | 1;
        traces.push(b);
    }
    let mut decoded = 0;
    for bytes in traces {
        std::fs::write(&path, &bytes).unwrap();
        let from_file = read_rank_trace(&path);
        let from_bytes = decode_rank_trace(&path, &bytes);
        match (from_file, from_bytes) {
            (Ok(a), Ok(b)) => {
                assert_eq!(a, b);
                decoded += 1;
            }
            (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string()),
            (a, b) => panic!("file {a:?} against bytes {b:?}"),
        }
    }
    assert!(decoded > 100, "only {decoded} traces decoded");
}

/// Ranks read side by side come back in rank order, each as read alone.
#[test]
fn ranks_read_side_by_side_are_in_rank_order() {
    let dir = tempfile::tempdir().unwrap();
    let mpi = dir.path().join("mpi");
    std::fs::create_dir(&mpi).unwrap();
    for r in 0..9 {
        let mut b = Builder::new(r, 9, f::FLAG_FINALIZED);
        let mut c = Chunk::new(100 + r, 0, 1_000);
        for i in 0..=u64::from(r) {
            c.enter(
                MpiOp::Iprobe,
                1_000 + 100 * i,
                0x400100,
                &[WORLD_COMM, pt(0, 0)],
            );
            c.exit(MpiOp::Iprobe, 1_050 + 100 * i, 0, &[]);
        }
        b.add(c);
        std::fs::write(mpi.join(format!("rank-{r}.cmpi")), b.bytes()).unwrap();
    }
    let rec = read_mpi_recording(dir.path()).unwrap().unwrap();
    assert_eq!(rec.ranks.len(), 9);
    for (r, t) in rec.ranks.iter().enumerate() {
        assert_eq!(t.rank, r as u32);
        assert_eq!(t.events.len(), r + 1);
        assert_eq!(*t, read_rank_trace(&t.path).unwrap());
    }
    assert!(rec.problems.is_empty(), "{:?}", rec.problems);
}
