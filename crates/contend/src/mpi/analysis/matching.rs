//! Matching of point-to-point events into messages: every send and
//! receive (blocking, nonblocking, persistent, matched-probe) collected per
//! channel and paired by MPI's non-overtaking rule (see the parent
//! module's docs and `docs/mpi-wait-states.md`).

use std::collections::BTreeMap;

use rustc_hash::FxHashMap as HashMap;

use contend_trace::mpi::{
    CompletionKind, MpiEventRef, MpiOp, MpiRankTrace, MpiRecording, Peer, ANY_TAG, SELF_COMM,
    WORLD_COMM,
};

use super::{comm_name, tag_name, MatchStats, Message};

/// A send as posted.
pub(super) struct SendRec {
    pub(super) rank: u32,
    pub(super) post: usize,
    pub(super) comm: u64,
    pub(super) dest: Peer,
    pub(super) tag: i32,
    pub(super) bytes: u64,
    pub(super) complete: Option<usize>,
    pub(super) cancelled: bool,
}

/// A receive as posted.
pub(super) struct RecvRec {
    pub(super) ri: usize,
    pub(super) post: usize,
    pub(super) comm: u64,
    pub(super) source: Peer,
    pub(super) tag: i32,
    pub(super) complete: Option<usize>,
    /// Source and tag from the completion's status; source `None` =
    /// `MPI_PROC_NULL`.
    pub(super) got: Option<(Option<u32>, i32)>,
    pub(super) cancelled: bool,
}

/// The world's view: which ranks have traces, who is in which communicator.
pub(super) struct World<'a> {
    pub(super) rec: &'a MpiRecording,
    /// World rank → index in `rec.ranks`.
    pub(super) index: HashMap<u32, usize>,
    /// Communicator id → members (world ranks in local rank order).
    pub(super) comms: HashMap<u64, Vec<u32>>,
}

impl<'a> World<'a> {
    pub(super) fn new(rec: &'a MpiRecording, warnings: &mut Vec<String>) -> World<'a> {
        let mut index = HashMap::default();
        for (i, t) in rec.ranks.iter().enumerate() {
            if index.insert(t.rank, i).is_some() {
                warnings.push(format!(
                    "{}: a second trace of rank {}; only the first is used",
                    t.path.display(),
                    t.rank
                ));
            }
        }
        let mut comms: HashMap<u64, Vec<u32>> = HashMap::default();
        for t in &rec.ranks {
            // MPI_COMM_SELF has a different member on every rank.
            for c in t.comms.iter().filter(|c| c.id != SELF_COMM) {
                match comms.get(&c.id) {
                    None => {
                        comms.insert(c.id, c.world_ranks.clone());
                    }
                    Some(known) if *known != c.world_ranks => warnings.push(format!(
                        "rank {}: its members of {} ({:?}) differ from another rank's ({:?}); the first is used",
                        t.rank,
                        comm_name(c.id, None),
                        c.world_ranks,
                        known
                    )),
                    Some(_) => {}
                }
            }
        }
        comms
            .entry(WORLD_COMM)
            .or_insert_with(|| (0..rec.world_size).collect());
        World { rec, index, comms }
    }

    pub(super) fn trace(&self, rank: u32) -> Option<&'a MpiRankTrace> {
        self.index.get(&rank).map(|&i| &self.rec.ranks[i])
    }

    pub(super) fn name(&self, comm: u64) -> String {
        comm_name(comm, self.comms.get(&comm).map(|v| v.as_slice()))
    }

    /// Why `rank` cannot take part: no trace, or it died inside a call.
    pub(super) fn absence(&self, rank: u32) -> Option<String> {
        match self.trace(rank) {
            None => Some(format!("rank {rank} has no trace")),
            Some(t) => t.aborted_in.map(|i| match t.events.get(i) {
                Some(e) => format!("rank {rank} ended inside {}", e.op.name()),
                None => format!("rank {rank} ended early"),
            }),
        }
    }
}

pub(super) fn event(t: &MpiRankTrace, i: usize) -> Option<MpiEventRef<'_>> {
    t.events.get(i)
}

/// Duration of a call, ns (0 when it never returned).
pub(super) fn duration(e: MpiEventRef<'_>) -> u64 {
    e.exit_ns.saturating_sub(e.enter_ns)
}

/// Per rank trace (indexed like `rec.ranks`): the call that completed each
/// nonblocking collective (`MPI_Iallreduce` …), by the index of the call
/// that posted it.
pub(super) type CollectiveCompletions = Vec<HashMap<usize, usize>>;

/// Walks every rank's events, recording posted sends and receives and the
/// calls that completed them, and the calls that completed nonblocking
/// collectives.
pub(super) fn collect(
    world: &World<'_>,
    stats: &mut MatchStats,
    warnings: &mut Vec<String>,
) -> (Vec<SendRec>, Vec<RecvRec>, CollectiveCompletions) {
    enum Post {
        Send(usize),
        Recv(usize),
        /// A nonblocking collective or `MPI_Comm_idup` posted by event .0.
        Coll(usize),
    }
    let mut sends = Vec::new();
    let mut recvs = Vec::new();
    let mut colls: CollectiveCompletions = vec![HashMap::default(); world.rec.ranks.len()];
    for (ri, t) in world.rec.ranks.iter().enumerate() {
        if world.index.get(&t.rank) != Some(&ri) {
            continue; // a duplicate trace, warned about
        }
        let mut pending: HashMap<u64, Post> = HashMap::default();
        let mut unknown = 0u64;
        let mut wrong_kind = 0u64;
        for (ei, e) in t.events.iter().enumerate() {
            let mut this_send = None;
            let mut this_recv = None;
            if e.request != 0 && (e.op.is_nonblocking_collective() || e.op == MpiOp::CommIdup) {
                pending.insert(e.request, Post::Coll(ei));
            }
            if let Some(sp) = e.send {
                sends.push(SendRec {
                    rank: t.rank,
                    post: ei,
                    comm: e.comm,
                    dest: sp.dest,
                    tag: sp.tag,
                    bytes: sp.bytes,
                    complete: None,
                    cancelled: false,
                });
                let i = sends.len() - 1;
                if sp.request != 0 {
                    pending.insert(sp.request, Post::Send(i));
                } else {
                    this_send = Some(i);
                }
            }
            if let Some(rp) = e.recv {
                recvs.push(RecvRec {
                    ri,
                    post: ei,
                    comm: e.comm,
                    source: rp.source,
                    tag: rp.tag,
                    complete: None,
                    got: None,
                    cancelled: false,
                });
                let i = recvs.len() - 1;
                if rp.request != 0 {
                    pending.insert(rp.request, Post::Recv(i));
                } else {
                    this_recv = Some(i);
                }
            }
            // persistent requests activated by Start/Startall: postings
            // with their own request ids, completed by a later Wait*/Test*
            for st in e.starts {
                if let Some(sp) = st.send {
                    sends.push(SendRec {
                        rank: t.rank,
                        post: ei,
                        comm: st.comm,
                        dest: sp.dest,
                        tag: sp.tag,
                        bytes: sp.bytes,
                        complete: None,
                        cancelled: false,
                    });
                    pending.insert(sp.request, Post::Send(sends.len() - 1));
                }
                if let Some(rp) = st.recv {
                    recvs.push(RecvRec {
                        ri,
                        post: ei,
                        comm: st.comm,
                        source: rp.source,
                        tag: rp.tag,
                        complete: None,
                        got: None,
                        cancelled: false,
                    });
                    pending.insert(rp.request, Post::Recv(recvs.len() - 1));
                }
            }
            for c in e.completions {
                let post = if c.request == 0 {
                    match c.kind {
                        CompletionKind::Send => this_send.map(Post::Send),
                        CompletionKind::Recv => this_recv.map(Post::Recv),
                        CompletionKind::Collective => None,
                    }
                } else {
                    pending.remove(&c.request)
                };
                match (post, c.kind) {
                    (Some(Post::Send(i)), CompletionKind::Send) => {
                        sends[i].complete = Some(ei);
                        sends[i].cancelled = c.cancelled;
                    }
                    (Some(Post::Coll(pi)), CompletionKind::Collective) => {
                        colls[ri].insert(pi, ei);
                    }
                    (Some(Post::Recv(i)), CompletionKind::Recv) => {
                        recvs[i].complete = Some(ei);
                        recvs[i].got = Some((c.source, c.tag));
                        recvs[i].cancelled = c.cancelled;
                    }
                    (Some(_), _) => wrong_kind += 1,
                    (None, _) => unknown += 1,
                }
                if c.cancelled {
                    stats.cancelled += 1;
                }
            }
        }
        if unknown > 0 {
            stats.unknown_requests += unknown;
            warnings.push(format!(
                "rank {}: {unknown} completion(s) name a request no recorded call of the rank posted; they are ignored",
                t.rank
            ));
        }
        if wrong_kind > 0 {
            stats.unknown_requests += wrong_kind;
            warnings.push(format!(
                "rank {}: {wrong_kind} completion(s) say send where the request was a receive or the other way round; they are ignored",
                t.rank
            ));
        }
    }
    (sends, recvs, colls)
}

pub(super) type Channel = (u64, u32, u32, i32);

/// Matches sends and receives channel by channel (see the module docs).
pub(super) fn match_messages(
    world: &World<'_>,
    sends: &[SendRec],
    recvs: &[RecvRec],
    stats: &mut MatchStats,
    warnings: &mut Vec<String>,
) -> Vec<Message> {
    let mut channels: BTreeMap<Channel, (Vec<usize>, Vec<usize>)> = BTreeMap::new();
    for (i, s) in sends.iter().enumerate() {
        let Peer::Rank(dest) = s.dest else { continue };
        if s.cancelled {
            continue;
        }
        channels
            .entry((s.comm, s.rank, dest, s.tag))
            .or_default()
            .0
            .push(i);
    }
    // Receives placed per rank in posting order (they were collected so).
    let mut unplaced: BTreeMap<u32, u64> = BTreeMap::new();
    for (i, r) in recvs.iter().enumerate() {
        if r.cancelled || r.source == Peer::Null {
            continue;
        }
        let rank = world.rec.ranks[r.ri].rank;
        let key = match r.got {
            Some((None, _)) => continue, // from MPI_PROC_NULL
            Some((Some(src), tag)) => (r.comm, src, rank, tag),
            None => match r.source {
                Peer::Rank(src) if r.tag != ANY_TAG => (r.comm, src, rank, r.tag),
                _ => {
                    *unplaced.entry(rank).or_default() += 1;
                    continue;
                }
            },
        };
        channels.entry(key).or_default().1.push(i);
    }
    for (rank, n) in unplaced {
        stats.unplaced_receives += n;
        let why = world
            .absence(rank)
            .map(|a| format!(" ({a})"))
            .unwrap_or_default();
        warnings.push(format!(
            "rank {rank}: {n} receive(s) with MPI_ANY_SOURCE or MPI_ANY_TAG never completed{why}; they are not matched"
        ));
    }
    let mut messages = Vec::new();
    // Unmatched, grouped for one warning per (kind, rank, peer, comm, tag).
    let mut missing_peer: BTreeMap<u32, u64> = BTreeMap::new();
    for (&(comm, src, dst, tag), (s_idx, r_idx)) in &channels {
        let n = s_idx.len().min(r_idx.len());
        for k in 0..n {
            let s = &sends[s_idx[k]];
            let r = &recvs[r_idx[k]];
            messages.push(Message {
                comm,
                source: src,
                dest: dst,
                tag,
                bytes: s.bytes,
                send_post: s.post,
                send_complete: s.complete,
                recv_post: r.post,
                recv_complete: r.complete,
            });
        }
        let extra_sends = (s_idx.len() - n) as u64;
        let extra_recvs = (r_idx.len() - n) as u64;
        stats.unmatched_sends += extra_sends;
        stats.unmatched_receives += extra_recvs;
        if extra_sends > 0 {
            if world.trace(dst).is_none() {
                *missing_peer.entry(dst).or_default() += extra_sends;
            } else {
                let why = world
                    .absence(dst)
                    .map(|a| format!(" ({a})"))
                    .unwrap_or_default();
                warnings.push(format!(
                    "rank {src}: {extra_sends} send(s) to rank {dst} on {} {} never matched a receive{why}",
                    world.name(comm),
                    tag_name(tag)
                ));
            }
        }
        if extra_recvs > 0 {
            if world.trace(src).is_none() {
                *missing_peer.entry(src).or_default() += extra_recvs;
            } else {
                let why = world
                    .absence(src)
                    .map(|a| format!(" ({a})"))
                    .unwrap_or_default();
                warnings.push(format!(
                    "rank {dst}: {extra_recvs} receive(s) from rank {src} on {} {} matched no send{why}",
                    world.name(comm),
                    tag_name(tag)
                ));
            }
        }
    }
    if stats.unmatched_sends > 0 {
        warnings.push(
            "sends never matched may have been received by calls the recorder does not wrap \
             (partitioned MPI_Precv_init, the large-count MPI_*_c functions); their waits are not counted"
                .to_string(),
        );
    }
    for (rank, n) in missing_peer {
        warnings.push(format!(
            "rank {rank} has no trace: {n} message(s) to or from it are not matched and the waits they caused are not counted"
        ));
    }
    stats.messages = messages.len() as u64;
    messages
}
