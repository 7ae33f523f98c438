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

use rustc_hash::FxHashMap as HashMap;

use contend_trace::mpi::{MpiOp, MpiRecording, ANY_TAG, SELF_COMM, WORLD_COMM};
use serde::Serialize;

mod matching;
mod waits;

use matching::{collect, match_messages, World};
use waits::{collective_waits, p2p_waits};

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
        Some(match op.blocking_form() {
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
pub(super) fn is_test(op: MpiOp) -> bool {
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
    /// The late call on the causing rank (index in its `events`): the call
    /// that posted the send (late sender), posted the receive (late
    /// receiver), or the causing member's collective call. `None` when the
    /// causing rank has no trace.
    pub cause_event: Option<usize>,
}

/// One matched collective instance: the k-th collective call of every
/// member of a communicator (see [`analyze`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CollectiveInstance {
    /// Communicator id.
    pub comm: u64,
    /// The operation every member called.
    #[serde(skip)]
    pub op: MpiOp,
    /// Per member, in local rank order: (world rank, index of its call in
    /// that rank's `events`; for a nonblocking collective the call that
    /// posted it).
    pub events: Vec<(u32, usize)>,
    /// Per member, like `events`: the call that completed its part (the
    /// collective itself, or the `Wait*`/`Test*` that completed the
    /// nonblocking one; the posting call when none did).
    pub done: Vec<usize>,
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
    /// Every collective instance that was matched and analysed, per
    /// communicator in call order.
    pub collectives: Vec<CollectiveInstance>,
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

pub(super) fn tag_name(tag: i32) -> String {
    if tag == ANY_TAG {
        "MPI_ANY_TAG".to_string()
    } else {
        format!("tag {tag}")
    }
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
            match t.events.get(i) {
                Some(e) if e.op == MpiOp::Abort => warnings.push(format!(
                    "rank {} called MPI_Abort (call {} of its trace), which ended the job; analysed up to there",
                    t.rank,
                    i + 1
                )),
                e => {
                    let what = e
                        .map(|e| format!("inside {} (call {} of its trace)", e.op.name(), i + 1))
                        .unwrap_or_else(|| "early".to_string());
                    warnings.push(format!(
                        "rank {} ended {what} without returning (aborted, killed or crashed); analysed up to there",
                        t.rank
                    ));
                }
            }
        }
        for d in &t.damage {
            warnings.push(format!("{} (rank {}): {d}", t.path.display(), t.rank));
        }
    }
    warnings.extend(rec.problems.iter().cloned());
    let (sends, recvs, colls) = collect(&world, &mut stats, &mut warnings);
    let messages = match_messages(&world, &sends, &recvs, &mut stats, &mut warnings);
    let mut waits = p2p_waits(&world, &messages);
    let (coll_waits, collectives) = collective_waits(&world, &colls, &mut stats, &mut warnings);
    waits.extend(coll_waits);
    // One wait per call: a Waitall completing messages and a nonblocking
    // collective is charged its largest wait (the first in report order
    // on a tie).
    let mut best: HashMap<(u32, usize), usize> = HashMap::default();
    for (i, w) in waits.iter().enumerate() {
        match best.entry((w.rank, w.event)) {
            std::collections::hash_map::Entry::Vacant(v) => {
                v.insert(i);
            }
            std::collections::hash_map::Entry::Occupied(mut o) => {
                if w.wait_ns > waits[*o.get()].wait_ns {
                    o.insert(i);
                }
            }
        }
    }
    if best.len() < waits.len() {
        let keep: rustc_hash::FxHashSet<usize> = best.into_values().collect();
        let mut i = 0;
        waits.retain(|_| {
            i += 1;
            keep.contains(&(i - 1))
        });
    }
    MpiAnalysis {
        waits,
        messages,
        collectives,
        stats,
        warnings,
    }
}
