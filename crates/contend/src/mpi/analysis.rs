//! Matching of MPI events into messages and collective instances, and the
//! wait states found in them (Geimer et al. 2009; Venter 2016, Section
//! 3.2.2.3 and Listing 3.6). The exact definitions are in
//! `docs/mpi-wait-states.md`; this module implements them and nothing else.
//!
//! Matching:
//! * **Point to point.** A message channel is (communicator, source world
//!   rank, destination world rank, tag). Sends enter their channel in the
//!   order the sender posted them; receives in the order the receiver posted
//!   them, in the channel of the message they actually received (the
//!   completion's status resolves `MPI_ANY_SOURCE` and `MPI_ANY_TAG`). MPI's
//!   non-overtaking rule makes the k-th send of a channel the k-th receive's
//!   message. A receive that never completed takes its place in the channel
//!   of its posted envelope when that is fully specified (it still consumes
//!   a message), and is left out otherwise. `MPI_PROC_NULL` peers and
//!   cancelled requests take no part. Sends or receives left over in a
//!   channel are unmatched and named in the warnings.
//! * **Nonblocking operations** are followed from the posting call
//!   (`MPI_Isend`, `MPI_Irecv`, …) to the `Wait*`/`Test*` call whose
//!   completion names the same request id.
//! * **Persistent requests.** Each `MPI_Start`/`MPI_Startall` activation
//!   of a request made by `MPI_Send_init` (`Ssend_init`, `Bsend_init`,
//!   `Rsend_init`) or `MPI_Recv_init` is a posting
//!   ([`contend_trace::mpi::MpiEvent::starts`]) with its own request id,
//!   followed to its `Wait*`/`Test*` like an `MPI_Isend`/`MPI_Irecv`
//!   posted at the `Start` call.
//! * **Collectives** are matched per communicator by call sequence: the k-th
//!   collective call on communicator c of every member is one instance.
//!   Members come from the ranks' communicator lists. An instance with a
//!   member whose trace is missing or ends early, or whose members disagree
//!   on the operation or root, is skipped and named in the warnings.
//!
//! * **Matched probes.** `MPI_Mrecv`/`MPI_Imrecv` are receives like
//!   `MPI_Recv`/`MPI_Irecv`; the recorder gives them the communicator,
//!   source and tag of the message their `MPI_Mprobe`/`MPI_Improbe` found.
//!
//! Beyond Scalasca, a blocking probe (`MPI_Probe`, `MPI_Mprobe`) that found
//! a message immediately before the same thread posted its receive is
//! where that receive's late-sender wait happens:
//! W = min(enter(send post), exit(probe)) − enter(probe), charged to the
//! probe. `Iprobe`/`Improbe` are never waits.
//!
//! Never panics on any [`MpiRecording`]: indices read from the traces are
//! checked, and every gap becomes a warning.

use std::collections::{BTreeMap, HashMap};

use contend_trace::mpi::{
    CompletionKind, MpiEvent, MpiOp, MpiRankTrace, MpiRecording, Peer, ANY_TAG, SELF_COMM,
    WORLD_COMM,
};
use serde::Serialize;

/// A wait-state pattern (Geimer et al. 2009; the names Scalasca uses).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Pattern {
    /// A receive (or the wait completing it) entered before the matching
    /// send was posted.
    LateSender,
    /// A send that blocks (synchronous, or not finished when the receive was
    /// posted) entered before the matching receive was posted.
    LateReceiver,
    /// `MPI_Barrier`: waiting for the last rank to enter.
    WaitAtBarrier,
    /// All-to-all style collectives (`Allreduce`, `Allgather(v)`,
    /// `Alltoall(v/w)`, `Reduce_scatter(_block)`): waiting for the last
    /// contributing rank to enter.
    WaitAtNxN,
    /// `Bcast`, `Scatter(v)`: a non-root rank entered before the root.
    LateBroadcast,
    /// `Reduce`, `Gather(v)`: the root entered before any other rank.
    EarlyReduce,
    /// `Scan`, `Exscan`: waiting for a lower rank to enter.
    EarlyScan,
}

impl Pattern {
    /// Every pattern, in report order.
    pub const ALL: [Pattern; 7] = [
        Pattern::LateSender,
        Pattern::LateReceiver,
        Pattern::WaitAtBarrier,
        Pattern::WaitAtNxN,
        Pattern::LateBroadcast,
        Pattern::EarlyReduce,
        Pattern::EarlyScan,
    ];

    /// The JSON key (`late_sender`, `wait_at_nxn`, …).
    pub fn key(self) -> &'static str {
        match self {
            Pattern::LateSender => "late_sender",
            Pattern::LateReceiver => "late_receiver",
            Pattern::WaitAtBarrier => "wait_at_barrier",
            Pattern::WaitAtNxN => "wait_at_nxn",
            Pattern::LateBroadcast => "late_broadcast",
            Pattern::EarlyReduce => "early_reduce",
            Pattern::EarlyScan => "early_scan",
        }
    }

    /// The human name (`Late sender`, `Wait at N×N`, …).
    pub fn label(self) -> &'static str {
        match self {
            Pattern::LateSender => "Late sender",
            Pattern::LateReceiver => "Late receiver",
            Pattern::WaitAtBarrier => "Wait at barrier",
            Pattern::WaitAtNxN => "Wait at N×N",
            Pattern::LateBroadcast => "Late broadcast",
            Pattern::EarlyReduce => "Early reduce",
            Pattern::EarlyScan => "Early scan",
        }
    }

    /// True for the point-to-point patterns (late sender, late receiver),
    /// which `--threshold-p2p` applies to; the others are collective.
    pub fn is_p2p(self) -> bool {
        matches!(self, Pattern::LateSender | Pattern::LateReceiver)
    }

    /// The collective pattern of `op`, `None` for non-collective operations.
    pub fn of_collective(op: MpiOp) -> Option<Pattern> {
        use MpiOp::*;
        Some(match op {
            Barrier => Pattern::WaitAtBarrier,
            Allreduce | Allgather | Allgatherv | Alltoall | Alltoallv | Alltoallw
            | ReduceScatter | ReduceScatterBlock => Pattern::WaitAtNxN,
            Bcast | Scatter | Scatterv => Pattern::LateBroadcast,
            Reduce | Gather | Gatherv => Pattern::EarlyReduce,
            Scan | Exscan => Pattern::EarlyScan,
            _ => return None,
        })
    }
}

/// True for the point-to-point calls (sends, receives, waits, tests,
/// probes, matched probes and receives): the thesis's "P2P" event class
/// (Table 4.13).
pub fn is_p2p_op(op: MpiOp) -> bool {
    (MpiOp::Send as u16..=MpiOp::Imrecv as u16).contains(&(op as u16))
}

/// True for the blocking probes (`MPI_Probe`, `MPI_Mprobe`), where a
/// receiver waits for a late sender before its receive (see
/// [`analyze`] and `docs/mpi-wait-states.md`, "Late sender at a blocking
/// probe"). `Iprobe`/`Improbe` return at once, like `Test`: never waits.
pub fn is_blocking_probe(op: MpiOp) -> bool {
    matches!(op, MpiOp::Probe | MpiOp::Mprobe)
}

/// True for `MPI_Test*`: completing a request there is not a wait.
fn is_test(op: MpiOp) -> bool {
    matches!(
        op,
        MpiOp::Test | MpiOp::Testall | MpiOp::Testany | MpiOp::Testsome
    )
}

/// One wait state: `wait_ns` a rank lost in one MPI call, and who caused it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct WaitState {
    /// The pattern.
    pub pattern: Pattern,
    /// World rank that waited.
    pub rank: u32,
    /// Index of the waiting call in that rank's `events`.
    pub event: usize,
    /// The wait, ns (> 0).
    pub wait_ns: u64,
    /// World rank that was late and caused the wait.
    pub cause: u32,
}

/// A point-to-point message: a send matched with its receive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Message {
    /// Communicator id.
    pub comm: u64,
    /// Sending world rank.
    pub source: u32,
    /// Receiving world rank.
    pub dest: u32,
    /// Tag of the message.
    pub tag: i32,
    /// Bytes sent.
    pub bytes: u64,
    /// The call that posted the send (index in the sender's events).
    pub send_post: usize,
    /// The call that completed the send, if any was recorded.
    pub send_complete: Option<usize>,
    /// The call that posted the receive (index in the receiver's events).
    pub recv_post: usize,
    /// The call that completed the receive, if any was recorded.
    pub recv_complete: Option<usize>,
}

/// What matching found, besides the wait states.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct MatchStats {
    /// Messages matched.
    pub messages: u64,
    /// Sends that matched no receive.
    pub unmatched_sends: u64,
    /// Receives that matched no send.
    pub unmatched_receives: u64,
    /// Receives posted but never completed, with a wildcard envelope, so
    /// they could not be placed (left out of matching).
    pub unplaced_receives: u64,
    /// Cancelled requests (no message; not an error).
    pub cancelled: u64,
    /// Completions naming a request no call of the rank posted.
    pub unknown_requests: u64,
    /// Collective instances matched and analysed.
    pub collectives: u64,
    /// Collective instances skipped (a member without a trace, a trace that
    /// ends early, or members that disagree on the operation or root).
    pub skipped_collectives: u64,
}

/// The result of [`analyze`].
#[derive(Debug, Clone, Default)]
pub struct MpiAnalysis {
    /// Every wait state found (before any threshold), in rank then event
    /// order for point to point, then collective instance order.
    pub waits: Vec<WaitState>,
    /// Every matched message.
    pub messages: Vec<Message>,
    /// Counts of matching.
    pub stats: MatchStats,
    /// Gaps and problems, one sentence each.
    pub warnings: Vec<String>,
}

/// The display name of a communicator in messages.
pub fn comm_name(comm: u64, members: Option<&[u32]>) -> String {
    match comm {
        WORLD_COMM => "MPI_COMM_WORLD".to_string(),
        SELF_COMM => "MPI_COMM_SELF".to_string(),
        _ => match members {
            Some(m) => {
                let list: Vec<String> = m.iter().map(|r| r.to_string()).collect();
                format!("communicator {comm} (world ranks {})", list.join(", "))
            }
            None => format!("communicator {comm}"),
        },
    }
}

fn tag_name(tag: i32) -> String {
    if tag == ANY_TAG {
        "MPI_ANY_TAG".to_string()
    } else {
        format!("tag {tag}")
    }
}

/// A send as posted.
struct SendRec {
    rank: u32,
    post: usize,
    comm: u64,
    dest: Peer,
    tag: i32,
    bytes: u64,
    complete: Option<usize>,
    cancelled: bool,
}

/// A receive as posted.
struct RecvRec {
    ri: usize,
    post: usize,
    comm: u64,
    source: Peer,
    tag: i32,
    complete: Option<usize>,
    /// Source and tag from the completion's status; source `None` =
    /// `MPI_PROC_NULL`.
    got: Option<(Option<u32>, i32)>,
    cancelled: bool,
}

/// The world's view: which ranks have traces, who is in which communicator.
struct World<'a> {
    rec: &'a MpiRecording,
    /// World rank → index in `rec.ranks`.
    index: HashMap<u32, usize>,
    /// Communicator id → members (world ranks in local rank order).
    comms: HashMap<u64, Vec<u32>>,
}

impl<'a> World<'a> {
    fn new(rec: &'a MpiRecording, warnings: &mut Vec<String>) -> World<'a> {
        let mut index = HashMap::new();
        for (i, t) in rec.ranks.iter().enumerate() {
            if index.insert(t.rank, i).is_some() {
                warnings.push(format!(
                    "{}: a second trace of rank {}; only the first is used",
                    t.path.display(),
                    t.rank
                ));
            }
        }
        let mut comms: HashMap<u64, Vec<u32>> = HashMap::new();
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

    fn trace(&self, rank: u32) -> Option<&'a MpiRankTrace> {
        self.index.get(&rank).map(|&i| &self.rec.ranks[i])
    }

    fn name(&self, comm: u64) -> String {
        comm_name(comm, self.comms.get(&comm).map(|v| v.as_slice()))
    }

    /// Why `rank` cannot take part: no trace, or it died inside a call.
    fn absence(&self, rank: u32) -> Option<String> {
        match self.trace(rank) {
            None => Some(format!("rank {rank} has no trace")),
            Some(t) => t.aborted_in.map(|i| match t.events.get(i) {
                Some(e) => format!("rank {rank} ended inside {}", e.op.name()),
                None => format!("rank {rank} ended early"),
            }),
        }
    }
}

fn event(t: &MpiRankTrace, i: usize) -> Option<&MpiEvent> {
    t.events.get(i)
}

/// Duration of a call, ns (0 when it never returned).
fn duration(e: &MpiEvent) -> u64 {
    e.exit_ns.saturating_sub(e.enter_ns)
}

/// Walks every rank's events, recording posted sends and receives and the
/// calls that completed them.
fn collect(
    world: &World<'_>,
    stats: &mut MatchStats,
    warnings: &mut Vec<String>,
) -> (Vec<SendRec>, Vec<RecvRec>) {
    enum Post {
        Send(usize),
        Recv(usize),
    }
    let mut sends = Vec::new();
    let mut recvs = Vec::new();
    for (ri, t) in world.rec.ranks.iter().enumerate() {
        if world.index.get(&t.rank) != Some(&ri) {
            continue; // a duplicate trace, warned about
        }
        let mut pending: HashMap<u64, Post> = HashMap::new();
        let mut unknown = 0u64;
        let mut wrong_kind = 0u64;
        for (ei, e) in t.events.iter().enumerate() {
            let mut this_send = None;
            let mut this_recv = None;
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
            for st in &e.starts {
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
            for c in &e.completions {
                let post = if c.request == 0 {
                    match c.kind {
                        CompletionKind::Send => this_send.map(Post::Send),
                        CompletionKind::Recv => this_recv.map(Post::Recv),
                    }
                } else {
                    pending.remove(&c.request)
                };
                match (post, c.kind) {
                    (Some(Post::Send(i)), CompletionKind::Send) => {
                        sends[i].complete = Some(ei);
                        sends[i].cancelled = c.cancelled;
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
    (sends, recvs)
}

type Channel = (u64, u32, u32, i32);

/// Matches sends and receives channel by channel (see the module docs).
fn match_messages(
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
             (the mpi_f08 Fortran bindings, partitioned MPI_Precv_init); their waits are not counted"
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

/// Per event of `t`: the index of the previous event of the same thread
/// (`None` for a thread's first call).
fn previous_on_thread(t: &MpiRankTrace) -> Vec<Option<usize>> {
    let mut last: HashMap<u32, usize> = HashMap::new();
    t.events
        .iter()
        .enumerate()
        .map(|(i, e)| last.insert(e.tid, i))
        .collect()
}

/// The blocking probe that found message `m` just before its receive was
/// posted: the event immediately before the receive-posting call on the
/// same rank and thread, if it is an `MPI_Probe`/`MPI_Mprobe` that
/// returned a message with `m`'s communicator, source and tag.
fn finding_probe(rt: &MpiRankTrace, prev: &[Option<usize>], m: &Message) -> Option<usize> {
    let pi = (*prev.get(m.recv_post)?)?;
    let p = rt.events.get(pi)?;
    let found = p.probed?;
    (is_blocking_probe(p.op)
        && p.comm == m.comm
        && found.source == Some(m.source)
        && found.tag == m.tag)
        .then_some(pi)
}

/// The point-to-point wait states: per completing call, the largest wait
/// over the messages it completes (late sender for receives, late receiver
/// for sends), and the late-sender waits of blocking probes.
fn p2p_waits(world: &World<'_>, messages: &[Message]) -> Vec<WaitState> {
    // (rank, completing event) → best (wait, pattern, cause, message order)
    let mut best: HashMap<(u32, usize), (u64, Pattern, u32)> = HashMap::new();
    let mut offer = |rank: u32, ev: usize, w: u64, p: Pattern, cause: u32| {
        if w == 0 {
            return;
        }
        let slot = best.entry((rank, ev)).or_insert((0, p, cause));
        if w > slot.0 {
            *slot = (w, p, cause);
        }
    };
    // Per receiving rank with a blocking probe that found a message: the
    // previous event of each event's thread (built on first need).
    let mut prev: HashMap<u32, Option<Vec<Option<usize>>>> = HashMap::new();
    for m in messages {
        let (Some(st), Some(rt)) = (world.trace(m.source), world.trace(m.dest)) else {
            continue;
        };
        let (Some(sp), Some(rp)) = (event(st, m.send_post), event(rt, m.recv_post)) else {
            continue;
        };
        // Late sender at a blocking probe (extension): the receiver waited
        // in the (M)probe that found the message before receiving it.
        if m.recv_post > 0 {
            let pv = prev.entry(m.dest).or_insert_with(|| {
                rt.events
                    .iter()
                    .any(|e| is_blocking_probe(e.op) && e.probed.is_some())
                    .then(|| previous_on_thread(rt))
            });
            if let Some(pi) = pv.as_deref().and_then(|pv| finding_probe(rt, pv, m)) {
                let p = &rt.events[pi];
                let w = sp.enter_ns.min(p.exit_ns).saturating_sub(p.enter_ns);
                offer(m.dest, pi, w, Pattern::LateSender, m.source);
            }
        }
        // Late sender: the receive-completing call waits for the send's posting.
        if let Some(rc) = m.recv_complete.and_then(|i| event(rt, i)) {
            if !is_test(rc.op) {
                let w = sp.enter_ns.min(rc.exit_ns).saturating_sub(rc.enter_ns);
                offer(
                    m.dest,
                    m.recv_complete.unwrap_or_default(),
                    w,
                    Pattern::LateSender,
                    m.source,
                );
            }
        }
        // Late receiver: a send that blocks waits for the receive's posting.
        if let Some(sc) = m.send_complete.and_then(|i| event(st, i)) {
            // a persistent send's mode is that of its *_init call
            let mode = sp
                .starts
                .iter()
                .find(|r| {
                    r.comm == m.comm
                        && r.send
                            .is_some_and(|s| s.dest == Peer::Rank(m.dest) && s.tag == m.tag)
                })
                .map_or(sp.op, |r| r.mode);
            let buffered = matches!(mode, MpiOp::Bsend | MpiOp::Ibsend | MpiOp::BsendInit);
            let sync = matches!(mode, MpiOp::Ssend | MpiOp::Issend | MpiOp::SsendInit);
            // The send half of MPI_Sendrecv ends at an unknown point inside
            // the call, which its receive half may keep busy: its exit says
            // nothing about the send blocking, so it is never a late
            // receiver (its waits are the receive half's late sender).
            let combined = matches!(sp.op, MpiOp::Sendrecv | MpiOp::SendrecvReplace);
            if !is_test(sc.op) && !buffered && !combined && (sync || sc.exit_ns > rp.enter_ns) {
                let w = rp.enter_ns.saturating_sub(sc.enter_ns).min(duration(sc));
                offer(
                    m.source,
                    m.send_complete.unwrap_or_default(),
                    w,
                    Pattern::LateReceiver,
                    m.dest,
                );
            }
        }
    }
    let mut out: Vec<WaitState> = best
        .into_iter()
        .map(|((rank, event), (wait_ns, pattern, cause))| WaitState {
            pattern,
            rank,
            event,
            wait_ns,
            cause,
        })
        .collect();
    out.sort_by_key(|w| (w.rank, w.event));
    out
}

/// The collective wait states, instance by instance.
fn collective_waits(
    world: &World<'_>,
    stats: &mut MatchStats,
    warnings: &mut Vec<String>,
) -> Vec<WaitState> {
    // Per communicator, per member rank: its collective calls in order.
    let mut calls: BTreeMap<u64, BTreeMap<u32, Vec<usize>>> = BTreeMap::new();
    for (ri, t) in world.rec.ranks.iter().enumerate() {
        if world.index.get(&t.rank) != Some(&ri) {
            continue;
        }
        for (ei, e) in t.events.iter().enumerate() {
            if e.op.is_collective() && e.comm != SELF_COMM {
                calls
                    .entry(e.comm)
                    .or_default()
                    .entry(t.rank)
                    .or_default()
                    .push(ei);
            }
        }
    }
    let mut out = Vec::new();
    for (comm, per_rank) in &calls {
        let members: Vec<u32> = match world.comms.get(comm) {
            Some(m) => m.clone(),
            None => {
                let m: Vec<u32> = per_rank.keys().copied().collect();
                warnings.push(format!(
                    "{}: no rank recorded its members; taken to be the ranks that called collectives on it ({:?})",
                    world.name(*comm),
                    m
                ));
                m
            }
        };
        if members.len() < 2 {
            continue;
        }
        let instances = per_rank.values().map(Vec::len).max().unwrap_or(0);
        // Skipped instances, grouped per reason.
        let mut skipped: BTreeMap<String, u64> = BTreeMap::new();
        let mut mismatch_examples: Vec<String> = Vec::new();
        for k in 0..instances {
            let mut evs: Vec<(u32, &MpiEvent)> = Vec::with_capacity(members.len());
            let mut gap = None;
            for &m in &members {
                let Some(t) = world.trace(m) else {
                    gap = Some(format!("rank {m} has no trace"));
                    break;
                };
                match per_rank
                    .get(&m)
                    .and_then(|v| v.get(k))
                    .and_then(|&i| t.events.get(i))
                {
                    Some(e) => evs.push((m, e)),
                    None => {
                        let why = world
                            .absence(m)
                            .unwrap_or_else(|| format!("rank {m}'s trace ends before it"));
                        gap = Some(why);
                        break;
                    }
                }
            }
            if let Some(why) = gap {
                *skipped.entry(why).or_default() += 1;
                continue;
            }
            let op = evs[0].1.op;
            if let Some((r, e)) = evs.iter().find(|(_, e)| e.op != op) {
                let why = "members disagree on the operation".to_string();
                if mismatch_examples.len() < 3 {
                    mismatch_examples.push(format!(
                        "call {} : rank {} in {}, rank {r} in {}",
                        k + 1,
                        evs[0].0,
                        op.name(),
                        e.op.name()
                    ));
                }
                *skipped.entry(why).or_default() += 1;
                continue;
            }
            let Some(pattern) = Pattern::of_collective(op) else {
                continue;
            };
            match instance_waits(pattern, &evs) {
                Ok(ws) => {
                    stats.collectives += 1;
                    for (rank, wait_ns, cause) in ws {
                        if wait_ns == 0 {
                            continue;
                        }
                        let ri = world.index[&rank];
                        let event = per_rank[&rank][k];
                        debug_assert!(ri < world.rec.ranks.len());
                        out.push(WaitState {
                            pattern,
                            rank,
                            event,
                            wait_ns,
                            cause,
                        });
                    }
                }
                Err(why) => {
                    *skipped.entry(why).or_default() += 1;
                }
            }
        }
        for (why, n) in skipped {
            stats.skipped_collectives += n;
            let mut s = format!(
                "{}: {n} collective call(s) skipped: {why}",
                world.name(*comm)
            );
            if why.starts_with("members disagree") && !mismatch_examples.is_empty() {
                s.push_str(&format!(" ({})", mismatch_examples.join("; ")));
            }
            warnings.push(s);
        }
    }
    out
}

/// The waits of one collective instance: `(rank, wait_ns, cause)` per
/// member, members in local rank order; an error names why the instance
/// cannot be analysed (roots that disagree or are not members).
fn instance_waits(
    pattern: Pattern,
    evs: &[(u32, &MpiEvent)],
) -> Result<Vec<(u32, u64, u32)>, String> {
    let clip = |e: &MpiEvent, w: u64| w.min(duration(e));
    let all_wait_for = |last: (u32, &MpiEvent)| -> Vec<(u32, u64, u32)> {
        evs.iter()
            .map(|&(r, e)| {
                (
                    r,
                    clip(e, last.1.enter_ns.saturating_sub(e.enter_ns)),
                    last.0,
                )
            })
            .collect()
    };
    match pattern {
        Pattern::WaitAtBarrier => {
            let last = latest(evs.iter().copied()).ok_or("no members")?;
            Ok(all_wait_for(last))
        }
        Pattern::WaitAtNxN => {
            let contributors = evs.iter().copied().filter(|(_, e)| e.coll_bytes_sent > 0);
            let last = match latest(contributors) {
                Some(l) => l,
                None => latest(evs.iter().copied()).ok_or("no members")?,
            };
            Ok(all_wait_for(last))
        }
        Pattern::LateBroadcast | Pattern::EarlyReduce => {
            let root = common_root(evs)?;
            let (_, re) = *evs
                .iter()
                .find(|(r, _)| *r == root)
                .ok_or_else(|| format!("root rank {root} is not a member"))?;
            if pattern == Pattern::LateBroadcast {
                Ok(evs
                    .iter()
                    .map(|&(r, e)| {
                        let w = if r == root {
                            0
                        } else {
                            clip(e, re.enter_ns.saturating_sub(e.enter_ns))
                        };
                        (r, w, root)
                    })
                    .collect())
            } else {
                // The earliest non-root entry; ties go to the lowest local rank.
                let first = evs.iter().filter(|(r, _)| *r != root).fold(
                    None::<(u32, &MpiEvent)>,
                    |acc, &x| match acc {
                        Some(a) if a.1.enter_ns <= x.1.enter_ns => Some(a),
                        _ => Some(x),
                    },
                );
                Ok(match first {
                    Some((fr, fe)) => {
                        vec![(root, clip(re, fe.enter_ns.saturating_sub(re.enter_ns)), fr)]
                    }
                    None => Vec::new(),
                })
            }
        }
        Pattern::EarlyScan => {
            let mut out = Vec::with_capacity(evs.len());
            let mut max: Option<(u32, &MpiEvent)> = None;
            for &(r, e) in evs {
                match max {
                    Some(m) if m.1.enter_ns >= e.enter_ns => {}
                    _ => max = Some((r, e)),
                }
                let (mr, me) = max.unwrap_or((r, e));
                out.push((r, clip(e, me.enter_ns.saturating_sub(e.enter_ns)), mr));
            }
            Ok(out)
        }
        Pattern::LateSender | Pattern::LateReceiver => Ok(Vec::new()),
    }
}

/// The latest entry of `set`; ties go to the first (lowest local rank).
fn latest<'e>(set: impl Iterator<Item = (u32, &'e MpiEvent)>) -> Option<(u32, &'e MpiEvent)> {
    set.fold(None, |acc: Option<(u32, &MpiEvent)>, x| match acc {
        Some(a) if a.1.enter_ns >= x.1.enter_ns => Some(a),
        _ => Some(x),
    })
}

/// The root all members name, as a world rank.
fn common_root(evs: &[(u32, &MpiEvent)]) -> Result<u32, String> {
    let mut root = None;
    for (r, e) in evs {
        match (root, e.root) {
            (_, None) => {}
            (None, Some(x)) => root = Some(x),
            (Some(a), Some(x)) if a != x => {
                return Err(format!(
                    "members disagree on the root (rank {r} names rank {x}, another rank {a})"
                ))
            }
            _ => {}
        }
    }
    root.ok_or_else(|| "no member recorded the root".to_string())
}

/// Matches the events of `rec` and finds every wait state (see the module
/// docs and `docs/mpi-wait-states.md`). Never fails: gaps in the recording
/// (missing ranks, aborted ranks, unmatched messages, incomplete
/// collectives) become [`MpiAnalysis::warnings`] and the rest is analysed.
pub fn analyze(rec: &MpiRecording) -> MpiAnalysis {
    let mut warnings = Vec::new();
    let mut stats = MatchStats::default();
    let world = World::new(rec, &mut warnings);
    for &m in &rec.missing_ranks {
        warnings.push(format!(
            "rank {m} has no trace: waits it caused are not counted, and collectives on communicators it belongs to are skipped"
        ));
    }
    for t in &rec.ranks {
        if let Some(i) = t.aborted_in {
            let what = t
                .events
                .get(i)
                .map(|e| format!("inside {} (call {} of its trace)", e.op.name(), i + 1))
                .unwrap_or_else(|| "early".to_string());
            warnings.push(format!(
                "rank {} ended {what} without returning (aborted, killed or crashed); analysed up to there",
                t.rank
            ));
        }
        for d in &t.damage {
            warnings.push(format!("{} (rank {}): {d}", t.path.display(), t.rank));
        }
    }
    warnings.extend(rec.problems.iter().cloned());
    let (sends, recvs) = collect(&world, &mut stats, &mut warnings);
    let messages = match_messages(&world, &sends, &recvs, &mut stats, &mut warnings);
    let mut waits = p2p_waits(&world, &messages);
    waits.extend(collective_waits(&world, &mut stats, &mut warnings));
    MpiAnalysis {
        waits,
        messages,
        stats,
        warnings,
    }
}
