//! Builders of hand-made MPI recordings (`MpiRecording` values) for the
//! tests of the MPI passes added beside `mpi_analysis` (root causes,
//! critical path, statistics). Every call site is named after its address
//! (`site_<address>`, `app.c:<address>`); a call's default site is
//! `0x100 + operation code`, so calls of one MPI function share a site
//! unless a test gives them another ([`at`]).
#![allow(dead_code)]

use contend::mpi::SiteResolver;
use contend::symbols::ResolvedSite;
use contend_trace::mpi::{
    Completion, CompletionKind, MpiComm, MpiEvent, MpiOp, MpiRankTrace, MpiRecording, Peer,
    RecvPost, SendPost, SELF_COMM, WORLD_COMM,
};

/// Names every call site `site_<address>` in `app.c`, line = address.
pub(crate) struct FakeSites;
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

pub(crate) fn base(op: MpiOp, enter_ns: u64, exit_ns: u64) -> MpiEvent {
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

pub(crate) fn done_send(request: u64, dest: u32, tag: i32) -> Completion {
    Completion {
        request,
        kind: CompletionKind::Send,
        source: Some(dest),
        tag,
        bytes: 8,
        cancelled: false,
    }
}

pub(crate) fn done_recv(request: u64, source: u32, tag: i32) -> Completion {
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
pub(crate) fn send(op: MpiOp, dest: u32, tag: i32, enter: u64, exit: u64) -> MpiEvent {
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
pub(crate) fn recv(
    source: Peer,
    tag: i32,
    got: u32,
    got_tag: i32,
    enter: u64,
    exit: u64,
) -> MpiEvent {
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

pub(crate) fn isend(
    op: MpiOp,
    dest: u32,
    tag: i32,
    request: u64,
    enter: u64,
    exit: u64,
) -> MpiEvent {
    let mut e = base(op, enter, exit);
    e.send = Some(SendPost {
        dest: Peer::Rank(dest),
        tag,
        bytes: 8,
        request,
    });
    e
}

pub(crate) fn irecv(source: Peer, tag: i32, request: u64, enter: u64, exit: u64) -> MpiEvent {
    let mut e = base(MpiOp::Irecv, enter, exit);
    e.recv = Some(RecvPost {
        source,
        tag,
        bytes: 8,
        request,
    });
    e
}

pub(crate) fn wait(op: MpiOp, enter: u64, exit: u64, completions: Vec<Completion>) -> MpiEvent {
    let mut e = base(op, enter, exit);
    e.completions = completions;
    e
}

pub(crate) fn coll(op: MpiOp, comm: u64, root: Option<u32>, enter: u64, exit: u64) -> MpiEvent {
    let mut e = base(op, enter, exit);
    e.comm = comm;
    e.root = root;
    e.coll_bytes_sent = 8;
    e.coll_bytes_recv = 8;
    e
}

pub(crate) fn rank(r: u32, size: u32, events: Vec<MpiEvent>) -> MpiRankTrace {
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

pub(crate) fn recording(ranks: Vec<MpiRankTrace>) -> MpiRecording {
    let world_size = ranks.iter().map(|t| t.world_size).max().unwrap_or(0);
    MpiRecording {
        ranks,
        world_size,
        missing_ranks: Vec::new(),
        problems: Vec::new(),
    }
}

/// `e` called from site `site` instead of its default.
pub(crate) fn at(site: u64, mut e: MpiEvent) -> MpiEvent {
    e.site = site;
    e
}

/// `MPI_Init` from 0 to 10 ns.
pub(crate) fn init() -> MpiEvent {
    base(MpiOp::Init, 0, 10)
}

/// `MPI_Finalize` from `enter` to `exit`.
pub(crate) fn finalize(enter: u64, exit: u64) -> MpiEvent {
    base(MpiOp::Finalize, enter, exit)
}

/// A blocking `MPI_Send` to `dest` with tag 0.
pub(crate) fn send0(dest: u32, enter: u64, exit: u64) -> MpiEvent {
    send(MpiOp::Send, dest, 0, enter, exit)
}

/// A blocking `MPI_Recv` from `source` with tag 0.
pub(crate) fn recv0(source: u32, enter: u64, exit: u64) -> MpiEvent {
    recv(Peer::Rank(source), 0, source, 0, enter, exit)
}
