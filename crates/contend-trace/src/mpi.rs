//! The in-memory model of an MPI recording: one [`MpiRankTrace`] per world
//! rank, each a list of calls ([`MpiEvents`], read as [`MpiEventRef`]s and
//! built from [`MpiEvent`]s, one per wrapped MPI call) on a time line
//! common to all ranks.
//!
//! This is the interface between the MPI trace reader (which decodes
//! `<recording>/mpi/rank-<r>.cmpi`, corrects clocks across nodes and fills
//! these structs) and the wait-state analysis in the `contend` crate, which
//! only ever sees these types. Tests of the analysis build them by hand.
//!
//! Conventions shared by the reader and the analysis:
//! - every rank number is a rank in `MPI_COMM_WORLD` ("world rank"); the
//!   recorder translates communicator-local ranks at record time;
//! - times are nanoseconds on rank 0's `CLOCK_MONOTONIC` (the reader has
//!   applied the per-rank offset correction; on one node it is zero);
//! - tags are as the program passed them, with `MPI_ANY_TAG` normalised to
//!   [`ANY_TAG`] (implementations give it different values);
//! - communicators have an id that is the same on every member rank
//!   ([`WORLD_COMM`] is `MPI_COMM_WORLD`, [`SELF_COMM`] is `MPI_COMM_SELF`).

use std::path::PathBuf;

pub use crate::mpi_events::{Iter as MpiEventsIter, MpiEventRef, MpiEvents};

/// `MPI_ANY_TAG`, normalised (Open MPI and MPICH use different values).
pub const ANY_TAG: i32 = -1;
/// Id of `MPI_COMM_WORLD` in every trace.
pub const WORLD_COMM: u64 = 0;
/// Id of `MPI_COMM_SELF` in every trace.
pub const SELF_COMM: u64 = 1;

/// The MPI functions the recorder wraps. The numeric value is the
/// operation code stored in the trace (`docs/trace-format.md`, MPI traces);
/// codes are only ever added, never reused or renumbered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u16)]
#[allow(missing_docs)] // the variant names are the MPI function names
pub enum MpiOp {
    Init = 1,
    InitThread = 2,
    Finalize = 3,
    Send = 10,
    Ssend = 11,
    Bsend = 12,
    Rsend = 13,
    Recv = 14,
    Sendrecv = 15,
    SendrecvReplace = 16,
    Isend = 20,
    Issend = 21,
    Ibsend = 22,
    Irsend = 23,
    Irecv = 24,
    Wait = 30,
    Waitall = 31,
    Waitany = 32,
    Waitsome = 33,
    Test = 34,
    Testall = 35,
    Testany = 36,
    Testsome = 37,
    Probe = 40,
    Iprobe = 41,
    Mprobe = 42,
    Improbe = 43,
    Mrecv = 44,
    Imrecv = 45,
    Barrier = 50,
    Bcast = 51,
    Reduce = 52,
    Allreduce = 53,
    Gather = 54,
    Gatherv = 55,
    Scatter = 56,
    Scatterv = 57,
    Allgather = 58,
    Allgatherv = 59,
    Alltoall = 60,
    Alltoallv = 61,
    Alltoallw = 62,
    ReduceScatter = 63,
    ReduceScatterBlock = 64,
    Scan = 65,
    Exscan = 66,
    CommSplit = 80,
    CommDup = 81,
    CommCreate = 82,
    CommFree = 83,
    SendInit = 90,
    SsendInit = 91,
    BsendInit = 92,
    RsendInit = 93,
    RecvInit = 94,
    Start = 95,
    Startall = 96,
    RequestFree = 97,
    Abort = 4,
    CommCreateGroup = 84,
    IntercommCreate = 85,
    CommIdup = 86,
    Ibarrier = 100,
    Ibcast = 101,
    Ireduce = 102,
    Iallreduce = 103,
    Igather = 104,
    Igatherv = 105,
    Iscatter = 106,
    Iscatterv = 107,
    Iallgather = 108,
    Iallgatherv = 109,
    Ialltoall = 110,
    Ialltoallv = 111,
    Ialltoallw = 112,
    IreduceScatter = 113,
    IreduceScatterBlock = 114,
    Iscan = 115,
    Iexscan = 116,
}

impl MpiOp {
    /// Every operation: those of the first version in code order, then
    /// the ones added later (in the order they were added).
    pub const ALL: [MpiOp; 79] = [
        MpiOp::Init,
        MpiOp::InitThread,
        MpiOp::Finalize,
        MpiOp::Send,
        MpiOp::Ssend,
        MpiOp::Bsend,
        MpiOp::Rsend,
        MpiOp::Recv,
        MpiOp::Sendrecv,
        MpiOp::SendrecvReplace,
        MpiOp::Isend,
        MpiOp::Issend,
        MpiOp::Ibsend,
        MpiOp::Irsend,
        MpiOp::Irecv,
        MpiOp::Wait,
        MpiOp::Waitall,
        MpiOp::Waitany,
        MpiOp::Waitsome,
        MpiOp::Test,
        MpiOp::Testall,
        MpiOp::Testany,
        MpiOp::Testsome,
        MpiOp::Probe,
        MpiOp::Iprobe,
        MpiOp::Mprobe,
        MpiOp::Improbe,
        MpiOp::Mrecv,
        MpiOp::Imrecv,
        MpiOp::Barrier,
        MpiOp::Bcast,
        MpiOp::Reduce,
        MpiOp::Allreduce,
        MpiOp::Gather,
        MpiOp::Gatherv,
        MpiOp::Scatter,
        MpiOp::Scatterv,
        MpiOp::Allgather,
        MpiOp::Allgatherv,
        MpiOp::Alltoall,
        MpiOp::Alltoallv,
        MpiOp::Alltoallw,
        MpiOp::ReduceScatter,
        MpiOp::ReduceScatterBlock,
        MpiOp::Scan,
        MpiOp::Exscan,
        MpiOp::CommSplit,
        MpiOp::CommDup,
        MpiOp::CommCreate,
        MpiOp::CommFree,
        MpiOp::SendInit,
        MpiOp::SsendInit,
        MpiOp::BsendInit,
        MpiOp::RsendInit,
        MpiOp::RecvInit,
        MpiOp::Start,
        MpiOp::Startall,
        MpiOp::RequestFree,
        MpiOp::Abort,
        MpiOp::CommCreateGroup,
        MpiOp::IntercommCreate,
        MpiOp::CommIdup,
        MpiOp::Ibarrier,
        MpiOp::Ibcast,
        MpiOp::Ireduce,
        MpiOp::Iallreduce,
        MpiOp::Igather,
        MpiOp::Igatherv,
        MpiOp::Iscatter,
        MpiOp::Iscatterv,
        MpiOp::Iallgather,
        MpiOp::Iallgatherv,
        MpiOp::Ialltoall,
        MpiOp::Ialltoallv,
        MpiOp::Ialltoallw,
        MpiOp::IreduceScatter,
        MpiOp::IreduceScatterBlock,
        MpiOp::Iscan,
        MpiOp::Iexscan,
    ];

    /// The operation with trace code `code`, `None` for an unknown code.
    pub fn from_code(code: u16) -> Option<MpiOp> {
        BY_CODE.get(usize::from(code)).copied().flatten()
    }

    /// The MPI function name, e.g. `"MPI_Waitall"`.
    pub fn name(self) -> &'static str {
        use MpiOp::*;
        match self {
            Init => "MPI_Init",
            InitThread => "MPI_Init_thread",
            Finalize => "MPI_Finalize",
            Send => "MPI_Send",
            Ssend => "MPI_Ssend",
            Bsend => "MPI_Bsend",
            Rsend => "MPI_Rsend",
            Recv => "MPI_Recv",
            Sendrecv => "MPI_Sendrecv",
            SendrecvReplace => "MPI_Sendrecv_replace",
            Isend => "MPI_Isend",
            Issend => "MPI_Issend",
            Ibsend => "MPI_Ibsend",
            Irsend => "MPI_Irsend",
            Irecv => "MPI_Irecv",
            Wait => "MPI_Wait",
            Waitall => "MPI_Waitall",
            Waitany => "MPI_Waitany",
            Waitsome => "MPI_Waitsome",
            Test => "MPI_Test",
            Testall => "MPI_Testall",
            Testany => "MPI_Testany",
            Testsome => "MPI_Testsome",
            Probe => "MPI_Probe",
            Iprobe => "MPI_Iprobe",
            Mprobe => "MPI_Mprobe",
            Improbe => "MPI_Improbe",
            Mrecv => "MPI_Mrecv",
            Imrecv => "MPI_Imrecv",
            Barrier => "MPI_Barrier",
            Bcast => "MPI_Bcast",
            Reduce => "MPI_Reduce",
            Allreduce => "MPI_Allreduce",
            Gather => "MPI_Gather",
            Gatherv => "MPI_Gatherv",
            Scatter => "MPI_Scatter",
            Scatterv => "MPI_Scatterv",
            Allgather => "MPI_Allgather",
            Allgatherv => "MPI_Allgatherv",
            Alltoall => "MPI_Alltoall",
            Alltoallv => "MPI_Alltoallv",
            Alltoallw => "MPI_Alltoallw",
            ReduceScatter => "MPI_Reduce_scatter",
            ReduceScatterBlock => "MPI_Reduce_scatter_block",
            Scan => "MPI_Scan",
            Exscan => "MPI_Exscan",
            CommSplit => "MPI_Comm_split",
            CommDup => "MPI_Comm_dup",
            CommCreate => "MPI_Comm_create",
            CommFree => "MPI_Comm_free",
            SendInit => "MPI_Send_init",
            SsendInit => "MPI_Ssend_init",
            BsendInit => "MPI_Bsend_init",
            RsendInit => "MPI_Rsend_init",
            RecvInit => "MPI_Recv_init",
            Start => "MPI_Start",
            Startall => "MPI_Startall",
            RequestFree => "MPI_Request_free",
            Abort => "MPI_Abort",
            CommCreateGroup => "MPI_Comm_create_group",
            IntercommCreate => "MPI_Intercomm_create",
            CommIdup => "MPI_Comm_idup",
            Ibarrier => "MPI_Ibarrier",
            Ibcast => "MPI_Ibcast",
            Ireduce => "MPI_Ireduce",
            Iallreduce => "MPI_Iallreduce",
            Igather => "MPI_Igather",
            Igatherv => "MPI_Igatherv",
            Iscatter => "MPI_Iscatter",
            Iscatterv => "MPI_Iscatterv",
            Iallgather => "MPI_Iallgather",
            Iallgatherv => "MPI_Iallgatherv",
            Ialltoall => "MPI_Ialltoall",
            Ialltoallv => "MPI_Ialltoallv",
            Ialltoallw => "MPI_Ialltoallw",
            IreduceScatter => "MPI_Ireduce_scatter",
            IreduceScatterBlock => "MPI_Ireduce_scatter_block",
            Iscan => "MPI_Iscan",
            Iexscan => "MPI_Iexscan",
        }
    }

    /// True for collective operations on a communicator (barrier, broadcast,
    /// reductions, gathers, scatters, all-to-all, scans), blocking or
    /// nonblocking ([`MpiOp::is_nonblocking_collective`]). Communicator
    /// creation is collective too but is not a wait-state pattern, so it is
    /// not included.
    pub fn is_collective(self) -> bool {
        (MpiOp::Barrier as u16..=MpiOp::Exscan as u16).contains(&(self as u16))
            || self.is_nonblocking_collective()
    }

    /// True for the nonblocking collectives (`MPI_Ibarrier` …
    /// `MPI_Iexscan`): they post the operation and return a request that a
    /// `Wait*`/`Test*` completes.
    pub fn is_nonblocking_collective(self) -> bool {
        (MpiOp::Ibarrier as u16..=MpiOp::Iexscan as u16).contains(&(self as u16))
    }

    /// The blocking collective a nonblocking one posts (`MPI_Iallreduce` →
    /// `MPI_Allreduce`); the operation itself for every other.
    pub fn blocking_form(self) -> MpiOp {
        use MpiOp::*;
        match self {
            Ibarrier => Barrier,
            Ibcast => Bcast,
            Ireduce => Reduce,
            Iallreduce => Allreduce,
            Igather => Gather,
            Igatherv => Gatherv,
            Iscatter => Scatter,
            Iscatterv => Scatterv,
            Iallgather => Allgather,
            Iallgatherv => Allgatherv,
            Ialltoall => Alltoall,
            Ialltoallv => Alltoallv,
            Ialltoallw => Alltoallw,
            IreduceScatter => ReduceScatter,
            IreduceScatterBlock => ReduceScatterBlock,
            Iscan => Scan,
            Iexscan => Exscan,
            op => op,
        }
    }
}

/// [`MpiOp::from_code`]'s table: the operation of every code below 128
/// (all codes are), one look-up per decoded call instead of a search.
const BY_CODE: [Option<MpiOp>; 128] = {
    let mut t = [None; 128];
    let mut i = 0;
    while i < MpiOp::ALL.len() {
        t[MpiOp::ALL[i] as usize] = Some(MpiOp::ALL[i]);
        i += 1;
    }
    t
};

/// A peer of a point-to-point operation as the program posted it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Peer {
    /// A world rank.
    Rank(u32),
    /// `MPI_ANY_SOURCE` (receives only); the status at completion says who.
    Any,
    /// `MPI_PROC_NULL`: the operation completes at once and moves no data.
    Null,
}

/// A send posted by an event: a blocking send, the send half of a
/// `Sendrecv`, or a nonblocking `Isend`-family call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SendPost {
    /// Destination.
    pub dest: Peer,
    /// Tag.
    pub tag: i32,
    /// Payload, bytes (count × type size).
    pub bytes: u64,
    /// The recorder's id of the request this call created (unique within
    /// the rank, never 0); 0 for a blocking send, which completes in the
    /// same event.
    pub request: u64,
}

/// A receive posted by an event: a blocking `Recv` or `Mrecv`, the receive
/// half of a `Sendrecv`, or an `Irecv` or `Imrecv`. For `Mrecv`/`Imrecv`
/// the communicator, source and tag are those of the message the matching
/// `Mprobe`/`Improbe` found (the recorder follows the `MPI_Message`
/// handle); source [`Peer::Null`] for `MPI_MESSAGE_NO_PROC`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecvPost {
    /// Source as posted (may be [`Peer::Any`]).
    pub source: Peer,
    /// Tag as posted (may be [`ANY_TAG`]).
    pub tag: i32,
    /// Capacity of the buffer, bytes.
    pub bytes: u64,
    /// The recorder's id of the request this call created (never 0); 0 for
    /// a blocking receive, which completes in the same event.
    pub request: u64,
}

/// Which kind of operation a completion finished.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompletionKind {
    /// A send (blocking or nonblocking).
    Send,
    /// A receive; `source`, `tag` and `bytes` come from its status.
    Recv,
    /// A nonblocking collective (`MPI_Iallreduce` …) posted by the call
    /// whose [`MpiEvent::request`] it names; source, tag and bytes mean
    /// nothing.
    Collective,
}

/// One operation finished by an event: by a blocking send or receive
/// itself (`request` 0), or by a `Wait*`/`Test*` call (the request's id).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Completion {
    /// The id of the completed request; 0 for the blocking operation of
    /// the same event.
    pub request: u64,
    /// Send or receive.
    pub kind: CompletionKind,
    /// For a receive: the world rank that sent the message (from the
    /// status), `None` when it was `MPI_PROC_NULL`. For a send: the
    /// destination, as posted.
    pub source: Option<u32>,
    /// For a receive: the tag of the message received (from the status);
    /// for a send: the tag posted.
    pub tag: i32,
    /// For a receive: bytes received (from the status); for a send: bytes
    /// sent.
    pub bytes: u64,
    /// The request was cancelled (`MPI_Test_cancelled`); no message
    /// matched it.
    pub cancelled: bool,
}

/// One wrapped MPI call of one rank.
#[derive(Debug, Clone, PartialEq)]
pub struct MpiEvent {
    /// The MPI function.
    pub op: MpiOp,
    /// Kernel thread id of the calling thread.
    pub tid: u32,
    /// When the call was entered, ns (common time line).
    pub enter_ns: u64,
    /// When the call returned, ns (common time line); `enter_ns` when the
    /// rank died inside the call (see [`MpiRankTrace::aborted_in`]).
    pub exit_ns: u64,
    /// Return address into the caller (the call site), 0 when unknown.
    /// Resolved through the recording's memory maps like lock call sites.
    pub site: u64,
    /// The communicator's id (same on all member ranks); [`WORLD_COMM`]
    /// for calls without one.
    pub comm: u64,
    /// Root of a rooted collective (`Bcast`, `Reduce`, `Gather(v)`,
    /// `Scatter(v)`), as a world rank.
    pub root: Option<u32>,
    /// Bytes this rank sent in a collective (its contribution), 0 for
    /// point-to-point calls (see `send`).
    pub coll_bytes_sent: u64,
    /// Bytes this rank received in a collective, 0 for point-to-point.
    pub coll_bytes_recv: u64,
    /// The send this call posted, if any.
    pub send: Option<SendPost>,
    /// The receive this call posted, if any.
    pub recv: Option<RecvPost>,
    /// For `MPI_Start`/`MPI_Startall`: the persistent requests this call
    /// activated, in the order the call listed them. Each activation is a
    /// posting like an `Isend`/`Irecv` (with a fresh request id that a
    /// later `Wait*`/`Test*` completes); empty for every other call.
    pub starts: Vec<StartedRequest>,
    /// Operations this call completed, in the order MPI reported them.
    /// A blocking `Send`/`Recv` lists itself (request 0); `Sendrecv` lists
    /// both halves; `Wait*`/`Test*` list the requests they completed
    /// (none when a test found nothing complete).
    pub completions: Vec<Completion>,
    /// For communicator creation: the id of the new communicator (`None`
    /// for `MPI_COMM_NULL`, e.g. `MPI_UNDEFINED` colour).
    pub created_comm: Option<u64>,
    /// The MPI return code (0 = `MPI_SUCCESS`).
    pub return_code: i32,
    /// For `Probe`, `Mprobe`, and `Iprobe`/`Improbe` whose flag was true:
    /// the message the probe found (from its status). `None` for every
    /// other call, for a probe that found nothing, and in traces of
    /// recorders that did not record it.
    pub probed: Option<ProbedMessage>,
    /// For a nonblocking collective (`MPI_Iallreduce` …) and
    /// `MPI_Comm_idup`: the recorder's id of the request it created (never
    /// 0; a later `Wait*`/`Test*` completes it); 0 for every other call.
    pub request: u64,
}

/// One activation of a persistent request by `MPI_Start`/`MPI_Startall`:
/// the envelope recorded by its `MPI_Send_init` (`Ssend_init`,
/// `Bsend_init`, `Rsend_init`) or `MPI_Recv_init`, posted again with a new
/// request id. Exactly one of `send` and `recv` is set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StartedRequest {
    /// The call that made the persistent request: [`MpiOp::SendInit`],
    /// [`MpiOp::SsendInit`] (synchronous), [`MpiOp::BsendInit`]
    /// (buffered), [`MpiOp::RsendInit`] or [`MpiOp::RecvInit`].
    pub mode: MpiOp,
    /// The communicator's id (same on all member ranks), from the `*_init`
    /// call.
    pub comm: u64,
    /// The send this activation posted (a `*send_init` request).
    pub send: Option<SendPost>,
    /// The receive this activation posted (a `Recv_init` request).
    pub recv: Option<RecvPost>,
}

/// The envelope of a message a probe found, from the probe's status. The
/// message is not received by the probe: a later receive (`Recv` with
/// the same source and tag, or `Mrecv`/`Imrecv` of the `MPI_Message` an
/// `Mprobe`/`Improbe` returned) takes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProbedMessage {
    /// World rank that sent it; `None` for `MPI_PROC_NULL` (a probe with
    /// source `MPI_PROC_NULL`, which returns at once) or an untranslatable
    /// source.
    pub source: Option<u32>,
    /// Its tag.
    pub tag: i32,
    /// Its size, bytes.
    pub bytes: u64,
}

/// A communicator as known to one rank.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MpiComm {
    /// Id, the same on every member rank.
    pub id: u64,
    /// `world_ranks[i]` is the world rank of the member with local rank i.
    pub world_ranks: Vec<u32>,
}

/// Everything recorded by one rank.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct MpiRankTrace {
    /// The trace file it was read from (for messages).
    pub path: PathBuf,
    /// World rank.
    pub rank: u32,
    /// Size of `MPI_COMM_WORLD` as this rank saw it.
    pub world_size: u32,
    /// Process id.
    pub pid: u32,
    /// Host name of the node the rank ran on.
    pub host: String,
    /// Offset added to this rank's clock to put it on rank 0's time line,
    /// ns, at `MPI_Init` and (when measured) at `MPI_Finalize`; the reader
    /// interpolates linearly between them. Zero on a single node.
    pub clock_offset_ns: (i64, Option<i64>),
    /// Round trip of the ping-pong round each offset came from, ns, at
    /// `MPI_Init` and at `MPI_Finalize`: the offset is off by at most half
    /// of it. Zero where no ping-pong was made (rank 0, one node).
    pub clock_offset_rtt_ns: (u64, Option<u64>),
    /// The MPI library's name and version (`MPI_Get_library_version`,
    /// first line).
    pub library: String,
    /// The rank returned from `MPI_Finalize`.
    pub finalized: bool,
    /// The rank ended inside this call (index into `events`) without
    /// returning from it: aborted, killed or crashed.
    pub aborted_in: Option<usize>,
    /// Communicators this rank was a member of, including world and self.
    pub comms: Vec<MpiComm>,
    /// The calls, in the order they were entered on this rank, stored
    /// compactly ([`MpiEvents`]: 48 bytes per call plus its postings and
    /// completions).
    pub events: MpiEvents,
    /// What the reader found wrong (truncation, unknown records), one
    /// sentence each; empty for a clean trace.
    pub damage: Vec<String>,
}

/// All rank traces of one recording (`<recording>/mpi/`), as returned by
/// the MPI trace reader.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct MpiRecording {
    /// The rank traces that could be read, ascending by rank.
    pub ranks: Vec<MpiRankTrace>,
    /// Size of `MPI_COMM_WORLD` (the largest any rank reported).
    pub world_size: u32,
    /// World ranks in `0..world_size` without a readable trace.
    pub missing_ranks: Vec<u32>,
    /// Files that could not be read at all, and other problems across
    /// ranks (e.g. disagreeing world sizes), one sentence each naming the
    /// file.
    pub problems: Vec<String>,
}
