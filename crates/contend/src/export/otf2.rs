//! OTF2 (the Open Trace Format 2 of Score-P, read by Vampir and Scalasca):
//! what of a recording goes into an OTF2 archive, laid out here as plain
//! definitions and per-location event records ([`fn@write`]) and handed to an
//! [`Otf2Sink`] that writes them.
//!
//! An OTF2 archive is a directory of files written through libotf2, a C
//! library; this crate builds without a C compiler, so the sink that
//! writes them lives in the `contend-otf2` crate (which the `contend`
//! binary links). [`ExportFormat::Otf2`](super::ExportFormat::Otf2)'s
//! stream exporter (`NotAStream`) only says so.
//!
//! The content (OTF2 3.0 definitions and records):
//!
//! * **System tree, locations.** A node per host; a location group
//!   (process) per MPI rank and per other lock-traced process; a location
//!   (CPU thread) per thread. Ranks come first, in world-rank order (a
//!   rank without a trace still gets an empty location, so that
//!   communicator ranks stay right). A hybrid recording (`--mpi --locks`)
//!   writes a rank thread's lock and OpenMP events on its MPI location, in
//!   time order with its calls, and the rank process's other threads in
//!   the rank's group.
//! * **Communicators.** A `COMM_LOCATIONS` group (each rank's first
//!   thread), a `COMM_GROUP` per communicator (its members' world ranks,
//!   in local-rank order), `MPI_COMM_SELF` as `COMM_SELF`; peers and roots
//!   in records are communicator-local ranks, as OTF2 wants.
//! * **MPI calls.** `Enter`/`Leave` of a region per MPI function (role
//!   point-to-point, barrier, one-to-all, all-to-one, all-to-all or other
//!   collective); inside: `MpiSend`/`MpiIsend` at the call's entry,
//!   `MpiRecv`/`MpiIrecv` (with `MpiIrecvRequest` at the posting call) at
//!   the completing call's exit, `MpiIsendComplete` at the exit of the
//!   call that completed it, `MpiCollectiveBegin`/`End` around each
//!   collective with its operation, communicator, root and bytes.
//!   Persistent requests (`MPI_Start`) are posted like `MPI_Isend`/
//!   `MPI_Irecv`. Peers that are `MPI_PROC_NULL` and cancelled requests
//!   move no message and get no record.
//! * **Lock events** (where the standard has them): `Enter`/`Leave` of
//!   the blocking call (`pthread_mutex_lock`, …, paradigm `PTHREAD`) from
//!   the request to the acquisition, `ThreadAcquireLock` at the
//!   acquisition and `ThreadReleaseLock` at the release of mutexes,
//!   rwlocks and spinlocks, with the lock's index as its id and its
//!   acquisition order. Failed attempts are a call without an acquisition;
//!   condition, barrier and semaphore waits are calls.
//! * **OpenMP synchronisation** (paradigm `OPENMP`, on the same locations
//!   as the thread's lock events, in time order with them): critical,
//!   atomic and ordered constructs as regions of that role from the
//!   acquire to the release with `ThreadAcquireLock`/`ThreadReleaseLock`
//!   inside; `omp_set_lock` as a call (acquire → acquisition) plus the
//!   lock records; barrier and task waits as regions with the barrier,
//!   implicit-barrier or task-wait role (`SyncPart`).
//! * **Futex calls** (paradigm `UNKNOWN`: OTF2 has none for them), on the
//!   same locations: `Enter`/`Leave` of `futex_wait @ <site>` over each
//!   wait and of `futex_wake @ <site>` over each wake, the site as the
//!   futex section shows it.
//!
//! Timestamps: ns of CLOCK_MONOTONIC (timer resolution 10⁹ per second),
//! the global offset the first event.

use std::collections::BTreeMap;
use std::io::Write;

use contend_trace::mpi::{CompletionKind, MpiOp, MpiRecording, Peer, SELF_COMM, WORLD_COMM};
use contend_trace::Primitive;
use rustc_hash::FxHashMap;

use super::{ExportError, ExportOptions, ExportSummary, Exporter};
use crate::analysis::Analysis;
use crate::locks::{LockEvents, Outcome, Selection};

/// The [`Exporter`] of [`super::ExportFormat::Otf2`]: OTF2 is an archive,
/// not a stream, so this says how it is written instead.
pub(crate) struct NotAStream;

impl Exporter for NotAStream {
    fn export(
        &self,
        _analysis: &Analysis<'_>,
        _options: &ExportOptions,
        _out: &mut dyn Write,
    ) -> Result<ExportSummary, ExportError> {
        Err(ExportError::Unsupported(
            "OTF2 is an archive of files, not a stream: write it with `contend export --format otf2 -o DIR` (the contend-otf2 crate)".into(),
        ))
    }
}

/// The role of a region (OTF2's `OTF2_RegionRole`, the ones used here).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RegionRole {
    /// `OTF2_REGION_ROLE_FUNCTION`.
    Function,
    /// `OTF2_REGION_ROLE_POINT2POINT`.
    PointToPoint,
    /// `OTF2_REGION_ROLE_BARRIER`.
    Barrier,
    /// `OTF2_REGION_ROLE_COLL_ONE2ALL`.
    OneToAll,
    /// `OTF2_REGION_ROLE_COLL_ALL2ONE`.
    AllToOne,
    /// `OTF2_REGION_ROLE_COLL_ALL2ALL`.
    AllToAll,
    /// `OTF2_REGION_ROLE_COLL_OTHER`.
    OtherCollective,
    /// `OTF2_REGION_ROLE_CRITICAL`: an OpenMP critical construct.
    Critical,
    /// `OTF2_REGION_ROLE_ATOMIC`: an OpenMP atomic construct.
    Atomic,
    /// `OTF2_REGION_ROLE_ORDERED`: an OpenMP ordered construct.
    Ordered,
    /// `OTF2_REGION_ROLE_IMPLICIT_BARRIER`: the implicit barrier of an
    /// OpenMP parallel region or worksharing construct.
    ImplicitBarrier,
    /// `OTF2_REGION_ROLE_TASK_WAIT`: an OpenMP `taskwait` or `taskgroup`.
    TaskWait,
}

/// The paradigm of a region (OTF2's `OTF2_Paradigm`, the ones used here).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Paradigm {
    /// `OTF2_PARADIGM_MPI`.
    Mpi,
    /// `OTF2_PARADIGM_PTHREAD`.
    Pthread,
    /// `OTF2_PARADIGM_OPENMP`.
    OpenMp,
    /// `OTF2_PARADIGM_UNKNOWN`: futex calls (no OTF2 paradigm is theirs).
    Unknown,
}

/// A region (a function whose calls are entered and left).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Region {
    /// Its name, an index into [`Definitions::strings`].
    pub name: u32,
    /// Its role.
    pub role: RegionRole,
    /// Its paradigm.
    pub paradigm: Paradigm,
}

/// A node of the system tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SystemTreeNode {
    /// Its name (string index).
    pub name: u32,
    /// Its class (string index): `machine`, `node`.
    pub class: u32,
    /// Its parent node, `None` for the root.
    pub parent: Option<u32>,
}

/// A location group (a process: an MPI rank or a lock-traced process).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocationGroup {
    /// Its name (string index).
    pub name: u32,
    /// The system-tree node it ran on.
    pub node: u32,
}

/// A location (a thread).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// Its id (as passed to [`Otf2Sink::begin_location`]).
    pub id: u64,
    /// Its name (string index).
    pub name: u32,
    /// Its location group.
    pub group: u32,
    /// Events written to it.
    pub events: u64,
}

/// What a group lists (OTF2's group types used for MPI).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupKind {
    /// `OTF2_GROUP_TYPE_COMM_LOCATIONS`: members are location ids, one per
    /// world rank.
    CommLocations,
    /// `OTF2_GROUP_TYPE_COMM_GROUP`: members are world ranks (indices into
    /// the `CommLocations` group), in communicator-rank order.
    CommGroup,
    /// `OTF2_GROUP_TYPE_COMM_SELF`: no members.
    CommSelf,
}

/// A group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    /// Its name (string index).
    pub name: u32,
    /// Its kind.
    pub kind: GroupKind,
    /// Its members.
    pub members: Vec<u64>,
}

/// A communicator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Comm {
    /// Its name (string index).
    pub name: u32,
    /// Its group (`CommGroup` or `CommSelf`).
    pub group: u32,
}

/// The global definitions of an archive; every reference is an index into
/// the list it names.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Definitions {
    /// Strings; a string's id is its index.
    pub strings: Vec<String>,
    /// Regions.
    pub regions: Vec<Region>,
    /// System-tree nodes (the first is the root).
    pub nodes: Vec<SystemTreeNode>,
    /// Location groups.
    pub location_groups: Vec<LocationGroup>,
    /// Locations.
    pub locations: Vec<Location>,
    /// Groups.
    pub groups: Vec<Group>,
    /// Communicators.
    pub comms: Vec<Comm>,
    /// The first timestamp, ns.
    pub first_ns: u64,
    /// The last timestamp, ns.
    pub last_ns: u64,
}

/// One event record of a location. Ranks are communicator-local; `comm`
/// indexes [`Definitions::comms`], `region` [`Definitions::regions`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(missing_docs)] // the fields are OTF2's, named as there
pub enum Event {
    /// `Enter`.
    Enter { region: u32 },
    /// `Leave`.
    Leave { region: u32 },
    /// `MpiSend`.
    MpiSend {
        receiver: u32,
        comm: u32,
        tag: u32,
        bytes: u64,
    },
    /// `MpiIsend`.
    MpiIsend {
        receiver: u32,
        comm: u32,
        tag: u32,
        bytes: u64,
        request: u64,
    },
    /// `MpiIsendComplete`.
    MpiIsendComplete { request: u64 },
    /// `MpiIrecvRequest`.
    MpiIrecvRequest { request: u64 },
    /// `MpiRecv`.
    MpiRecv {
        sender: u32,
        comm: u32,
        tag: u32,
        bytes: u64,
    },
    /// `MpiIrecv`.
    MpiIrecv {
        sender: u32,
        comm: u32,
        tag: u32,
        bytes: u64,
        request: u64,
    },
    /// `MpiCollectiveBegin`.
    CollectiveBegin,
    /// `MpiCollectiveEnd`; `root` `None` for collectives without one.
    CollectiveEnd {
        op: MpiOp,
        comm: u32,
        root: Option<u32>,
        sent: u64,
        received: u64,
    },
    /// `ThreadAcquireLock` (`paradigm`: `PTHREAD` or `OPENMP`).
    AcquireLock {
        paradigm: Paradigm,
        lock: u32,
        order: u32,
    },
    /// `ThreadReleaseLock` (`paradigm`: `PTHREAD` or `OPENMP`).
    ReleaseLock {
        paradigm: Paradigm,
        lock: u32,
        order: u32,
    },
}

/// Where [`fn@write`] hands the archive: the events of one location after
/// another (each location once, its records in time order), then the
/// definitions. Errors are the writer's messages.
pub trait Otf2Sink {
    /// The events of location `id` follow.
    fn begin_location(&mut self, id: u64) -> Result<(), String>;
    /// One record at `t_ns`.
    fn event(&mut self, t_ns: u64, event: &Event) -> Result<(), String>;
    /// The location's events are done.
    fn end_location(&mut self) -> Result<(), String>;
    /// The global definitions, last.
    fn definitions(&mut self, defs: &Definitions) -> Result<(), String>;
}

/// Builds definitions as the walk goes.
struct Defs {
    d: Definitions,
    strings: FxHashMap<String, u32>,
    regions: FxHashMap<String, u32>,
}

impl Defs {
    fn string(&mut self, s: &str) -> u32 {
        if let Some(&i) = self.strings.get(s) {
            return i;
        }
        let i = self.d.strings.len() as u32;
        self.d.strings.push(s.to_string());
        self.strings.insert(s.to_string(), i);
        i
    }

    fn region(&mut self, name: &str, role: RegionRole, paradigm: Paradigm) -> u32 {
        if let Some(&i) = self.regions.get(name) {
            return i;
        }
        let i = self.d.regions.len() as u32;
        let name_id = self.string(name);
        self.d.regions.push(Region {
            name: name_id,
            role,
            paradigm,
        });
        self.regions.insert(name.to_string(), i);
        i
    }

    fn node(&mut self, host: &str, cache: &mut BTreeMap<String, u32>) -> u32 {
        if let Some(&n) = cache.get(host) {
            return n;
        }
        let name = self.string(host);
        let class = self.string("node");
        self.d.nodes.push(SystemTreeNode {
            name,
            class,
            parent: Some(0),
        });
        let n = (self.d.nodes.len() - 1) as u32;
        cache.insert(host.to_string(), n);
        n
    }

    fn see(&mut self, t: u64) {
        self.d.first_ns = self.d.first_ns.min(t);
        self.d.last_ns = self.d.last_ns.max(t);
    }
}

/// The role of an MPI function's region.
fn mpi_role(op: MpiOp) -> RegionRole {
    use MpiOp::*;
    match op {
        Barrier => RegionRole::Barrier,
        Bcast | Scatter | Scatterv => RegionRole::OneToAll,
        Reduce | Gather | Gatherv => RegionRole::AllToOne,
        Allreduce | Allgather | Allgatherv | Alltoall | Alltoallv | Alltoallw | ReduceScatter
        | ReduceScatterBlock => RegionRole::AllToAll,
        Scan | Exscan => RegionRole::OtherCollective,
        _ if crate::mpi::analysis::is_p2p_op(op) => RegionRole::PointToPoint,
        _ => RegionRole::Function,
    }
}

/// The blocking call of a lock event's primitive.
fn lock_call(p: Primitive) -> &'static str {
    match p {
        Primitive::Mutex => "pthread_mutex_lock",
        Primitive::RwlockRead => "pthread_rwlock_rdlock",
        Primitive::RwlockWrite => "pthread_rwlock_wrlock",
        Primitive::Spin => "pthread_spin_lock",
        Primitive::Cond => "pthread_cond_wait",
        Primitive::Barrier => "pthread_barrier_wait",
        Primitive::Semaphore => "sem_wait",
        Primitive::Join => "pthread_join",
    }
}

/// What [`write`] wrote.
#[derive(Debug, Default)]
struct Written {
    events: u64,
    locations: u64,
}

/// Lays out `analysis` as an OTF2 archive and hands it to `sink` (module
/// docs). Lock events are those the filter of `options` keeps.
///
/// Errors: the recording holds no MPI traces, no lock events, no OpenMP
/// synchronisation and no futex calls ([`ExportError::Nothing`]); the sink failed ([`ExportError::Writer`]).
pub fn write(
    analysis: &Analysis<'_>,
    options: &ExportOptions,
    sink: &mut dyn Otf2Sink,
) -> Result<ExportSummary, ExportError> {
    let recording = analysis.recording;
    let mpi = match &recording.mpi {
        Some(Ok(m)) if !m.ranks.is_empty() => Some(m),
        _ => None,
    };
    let locks = analysis
        .events::<LockEvents>()
        .filter(|l| !l.set.events.is_empty());
    let omp = crate::openmp::sync::events_of(analysis);
    let futex =
        crate::futex::events_of(analysis).filter(|f| !f.waits.is_empty() || !f.wakes.is_empty());
    if mpi.is_none() && locks.is_none() && omp.is_empty() && futex.is_none() {
        return Err(ExportError::Nothing(
            "the recording holds no MPI traces, no lock events, no OpenMP synchronisation and no futex calls: nothing to write as OTF2".into(),
        ));
    }
    let mut defs = Defs {
        d: Definitions {
            first_ns: u64::MAX,
            ..Definitions::default()
        },
        strings: FxHashMap::default(),
        regions: FxHashMap::default(),
    };
    defs.string("");
    let (root_name, root_class) = (defs.string("machine"), defs.string("machine"));
    defs.d.nodes.push(SystemTreeNode {
        name: root_name,
        class: root_class,
        parent: None,
    });
    let mut hosts = BTreeMap::new();
    let mut written = Written::default();
    let mut notes = Vec::new();
    let mut next_location = 0u64;
    // Thread names as the kernel had them (comm), by (pid, tid): a rank
    // whose process was lock-traced too names its locations with them, as
    // do threads of OpenMP events and futex calls.
    let thread_names = analysis.recording.named_threads();
    let mut sync = SyncPart::new(analysis, locks, &omp, futex, &thread_names, options);
    let mut rank_groups: FxHashMap<u32, u32> = FxHashMap::default();
    if let Some(m) = mpi {
        mpi_part(
            m,
            &thread_names,
            &mut sync,
            sink,
            &mut defs,
            &mut hosts,
            &mut next_location,
            &mut written,
            &mut notes,
            &mut rank_groups,
        )?;
    }
    sync.write_rest(
        sink,
        &mut defs,
        &mut hosts,
        &rank_groups,
        &mut next_location,
        &mut written,
    )?;
    if defs.d.first_ns == u64::MAX {
        defs.d.first_ns = 0;
    }
    sink.definitions(&defs.d).map_err(ExportError::Writer)?;
    notes.push(format!(
        "{} events on {} locations",
        written.events, written.locations
    ));
    Ok(ExportSummary {
        records: written.events,
        what: "events",
        notes,
    })
}

/// The MPI ranks: definitions of communicators and one location per
/// rank thread with its calls, and on it the thread's lock and OpenMP
/// events when its process was lock-traced too (`--mpi --locks`), merged
/// in time order (those inside a call between its `Enter` and `Leave`).
/// `rank_groups` gets each traced rank's pid → location group, for the
/// process's other threads.
#[allow(clippy::too_many_arguments)]
fn mpi_part(
    m: &MpiRecording,
    thread_names: &FxHashMap<(u32, u32), &str>,
    sync: &mut SyncPart<'_>,
    sink: &mut dyn Otf2Sink,
    defs: &mut Defs,
    hosts: &mut BTreeMap<String, u32>,
    next_location: &mut u64,
    written: &mut Written,
    notes: &mut Vec<String>,
    rank_groups: &mut FxHashMap<u32, u32>,
) -> Result<(), ExportError> {
    let w = |e: String| ExportError::Writer(e);
    let (sync_sources, sync_threads) = sync.split();
    // Communicators: id → members (world ranks, local order).
    let mut comms: BTreeMap<u64, Vec<u32>> = BTreeMap::new();
    let world = m
        .world_size
        .max(m.ranks.iter().map(|r| r.rank + 1).max().unwrap_or(0));
    comms.insert(WORLD_COMM, (0..world).collect());
    for r in &m.ranks {
        for c in &r.comms {
            if c.id != SELF_COMM {
                comms.entry(c.id).or_insert_with(|| c.world_ranks.clone());
            }
        }
    }
    // Locations of the ranks: the rank's threads in order of first call;
    // a rank without a trace gets one empty location.
    let mut rank_location: Vec<u64> = Vec::with_capacity(world as usize);
    let mut per_rank: Vec<Vec<(u32, u64)>> = Vec::with_capacity(world as usize);
    for rank in 0..world {
        let trace = m.ranks.iter().find(|t| t.rank == rank);
        let host = trace.map_or("unknown host", |t| t.host.as_str());
        let node = defs.node(host, hosts);
        let name = defs.string(&format!("MPI Rank {rank}"));
        defs.d.location_groups.push(LocationGroup { name, node });
        let group = (defs.d.location_groups.len() - 1) as u32;
        if let Some(t) = trace {
            rank_groups.entry(t.pid).or_insert(group);
        }
        let mut tids: Vec<u32> = Vec::new();
        if let Some(t) = trace {
            for e in &t.events {
                if !tids.contains(&e.tid) {
                    tids.push(e.tid);
                }
            }
        }
        if tids.is_empty() {
            tids.push(trace.map_or(0, |t| t.pid));
        }
        let mut locs = Vec::new();
        for (k, tid) in tids.iter().enumerate() {
            let id = *next_location;
            *next_location += 1;
            let pid = trace.map_or(0, |t| t.pid);
            let comm = thread_names
                .get(&(pid, *tid))
                .map(|n| format!(" {n}"))
                .unwrap_or_default();
            let name = defs.string(&if k == 0 {
                format!("rank {rank}{comm} (tid {tid})")
            } else {
                format!("rank {rank} thread {k}{comm} (tid {tid})")
            });
            defs.d.locations.push(Location {
                id,
                name,
                group,
                events: 0,
            });
            locs.push((*tid, id));
        }
        rank_location.push(locs[0].1);
        per_rank.push(locs);
    }
    let loc_group_name = defs.string("MPI_COMM_WORLD locations");
    defs.d.groups.push(Group {
        name: loc_group_name,
        kind: GroupKind::CommLocations,
        members: rank_location.clone(),
    });
    let mut comm_ref: FxHashMap<u64, u32> = FxHashMap::default();
    for (id, members) in &comms {
        let label = crate::mpi::comm_name(*id, (*id != WORLD_COMM).then_some(members.as_slice()));
        let name = defs.string(&label);
        defs.d.groups.push(Group {
            name,
            kind: GroupKind::CommGroup,
            members: members.iter().map(|&r| u64::from(r)).collect(),
        });
        let group = (defs.d.groups.len() - 1) as u32;
        defs.d.comms.push(Comm { name, group });
        comm_ref.insert(*id, (defs.d.comms.len() - 1) as u32);
    }
    let self_name = defs.string("MPI_COMM_SELF");
    defs.d.groups.push(Group {
        name: self_name,
        kind: GroupKind::CommSelf,
        members: Vec::new(),
    });
    defs.d.comms.push(Comm {
        name: self_name,
        group: (defs.d.groups.len() - 1) as u32,
    });
    comm_ref.insert(SELF_COMM, (defs.d.comms.len() - 1) as u32);
    // World rank → local rank, per communicator.
    let local = |comm: u64, world_rank: u32| -> Option<u32> {
        if comm == SELF_COMM {
            return Some(0);
        }
        comms
            .get(&comm)?
            .iter()
            .position(|&r| r == world_rank)
            .map(|p| p as u32)
    };
    let mut skipped = 0u64;
    for rank in 0..world {
        let trace = m.ranks.iter().find(|t| t.rank == rank);
        for &(tid, location) in &per_rank[rank as usize] {
            sink.begin_location(location).map_err(w)?;
            let mut count = 0u64;
            // The thread's lock and OpenMP events, if its process was
            // lock-traced: written up to each MPI record's time first
            // (records at a call's exit after those at that instant, so
            // that what the call did inside it is left before it).
            let pid = trace.map_or(0, |t| t.pid);
            let mut merged = trace.and_then(|_| sync_threads.claim(sync_sources, pid, tid));
            let mut emit = |sink: &mut dyn Otf2Sink, defs: &mut Defs, t: u64, e: Event| {
                if let Some(thread) = merged.as_mut() {
                    let at_exit = !matches!(
                        e,
                        Event::Enter { .. }
                            | Event::MpiSend { .. }
                            | Event::MpiIsend { .. }
                            | Event::MpiIrecvRequest { .. }
                            | Event::CollectiveBegin
                    );
                    count += thread.write_until(sync_sources, defs, sink, Some((t, at_exit)))?;
                }
                defs.see(t);
                count += 1;
                sink.event(t, &e)
            };
            // Requests of this thread: id → communicator.
            let mut requests: FxHashMap<u64, u64> = FxHashMap::default();
            for e in trace.into_iter().flat_map(|t| t.events.iter()) {
                if e.tid != tid {
                    continue;
                }
                let region = defs.region(e.op.name(), mpi_role(e.op), Paradigm::Mpi);
                let exit = e.exit_ns.max(e.enter_ns);
                emit(sink, defs, e.enter_ns, Event::Enter { region }).map_err(w)?;
                let comm = comm_ref.get(&e.comm).copied();
                // Sends and receives posted by this call.
                let mut posts: Vec<(u64, Option<_>, Option<_>)> = vec![(e.comm, e.send, e.recv)];
                posts.extend(e.starts.iter().map(|s| (s.comm, s.send, s.recv)));
                for (c, send, recv) in posts {
                    let cref = comm_ref.get(&c).copied();
                    if let Some(s) = send {
                        let (Peer::Rank(dest), Some(cref)) = (s.dest, cref) else {
                            continue;
                        };
                        let Some(receiver) = local(c, dest) else {
                            skipped += 1;
                            continue;
                        };
                        let ev = if s.request == 0 {
                            Event::MpiSend {
                                receiver,
                                comm: cref,
                                tag: s.tag as u32,
                                bytes: s.bytes,
                            }
                        } else {
                            requests.insert(s.request, c);
                            Event::MpiIsend {
                                receiver,
                                comm: cref,
                                tag: s.tag as u32,
                                bytes: s.bytes,
                                request: s.request,
                            }
                        };
                        emit(sink, defs, e.enter_ns, ev).map_err(w)?;
                    }
                    if let Some(r) = recv {
                        if r.request != 0 && r.source != Peer::Null {
                            requests.insert(r.request, c);
                            emit(
                                sink,
                                defs,
                                e.enter_ns,
                                Event::MpiIrecvRequest { request: r.request },
                            )
                            .map_err(w)?;
                        }
                    }
                }
                let collective = e.op.is_collective() && comm.is_some();
                if collective {
                    emit(sink, defs, e.enter_ns, Event::CollectiveBegin).map_err(w)?;
                }
                for c in e.completions {
                    if c.cancelled {
                        continue;
                    }
                    match (c.kind, c.request) {
                        // OTF2 2.x has no record for the completion of a
                        // nonblocking collective: the collective is written
                        // at the call that posted it
                        (CompletionKind::Collective, _) => {}
                        (CompletionKind::Send, 0) => {}
                        (CompletionKind::Send, req) => {
                            if requests.remove(&req).is_some() {
                                emit(sink, defs, exit, Event::MpiIsendComplete { request: req })
                                    .map_err(w)?;
                            }
                        }
                        (CompletionKind::Recv, req) => {
                            let c_id = if req == 0 {
                                Some(e.comm)
                            } else {
                                requests.remove(&req)
                            };
                            let Some(c_id) = c_id else { continue };
                            let (Some(src), Some(cref)) = (c.source, comm_ref.get(&c_id)) else {
                                continue;
                            };
                            let Some(sender) = local(c_id, src) else {
                                skipped += 1;
                                continue;
                            };
                            let ev = if req == 0 {
                                Event::MpiRecv {
                                    sender,
                                    comm: *cref,
                                    tag: c.tag as u32,
                                    bytes: c.bytes,
                                }
                            } else {
                                Event::MpiIrecv {
                                    sender,
                                    comm: *cref,
                                    tag: c.tag as u32,
                                    bytes: c.bytes,
                                    request: req,
                                }
                            };
                            emit(sink, defs, exit, ev).map_err(w)?;
                        }
                    }
                }
                if let (true, Some(cref)) = (collective, comm) {
                    let root = e.root.and_then(|r| local(e.comm, r));
                    emit(
                        sink,
                        defs,
                        exit,
                        Event::CollectiveEnd {
                            op: e.op,
                            comm: cref,
                            root,
                            sent: e.coll_bytes_sent,
                            received: e.coll_bytes_recv,
                        },
                    )
                    .map_err(w)?;
                }
                emit(sink, defs, exit, Event::Leave { region }).map_err(w)?;
            }
            if let Some(thread) = merged.as_mut() {
                count += thread
                    .write_until(sync_sources, defs, sink, None)
                    .map_err(w)?;
            }
            sink.end_location().map_err(w)?;
            if let Some(l) = defs.d.locations.iter_mut().find(|l| l.id == location) {
                l.events = count;
            }
            written.events += count;
            written.locations += 1;
        }
    }
    if skipped > 0 {
        notes.push(format!(
            "{skipped} message record(s) left out: their peer is not a member of their communicator in the recorded communicator lists"
        ));
    }
    if !m.missing_ranks.is_empty() {
        notes.push(format!(
            "ranks without a trace have an empty location: {:?}",
            m.missing_ranks
        ));
    }
    Ok(())
}

/// A record waiting for its time: (time, order of creation, event).
type Pending = std::cmp::Reverse<(u64, u64, EventKey)>;

/// An [`Event`] as an ordered key (for the pending heap); a lock is
/// (its model, id, acquisition order).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum EventKey {
    Leave(u32),
    Acquire(Paradigm, u32, u32),
    Release(Paradigm, u32, u32),
}

/// One synchronisation of a thread: a lock event (an index into the lock
/// analysis's events), an OpenMP synchronisation event (an index into
/// [`crate::openmp::sync::OmpSyncEvents`]), a futex wait or wake (an
/// index into [`crate::futex::FutexEvents`]'s waits or wakes).
#[derive(Debug, Clone, Copy)]
enum ThreadSync {
    Lock(u32),
    Omp(u32),
    FutexWait(u32),
    FutexWake(u32),
}

/// A thread with synchronisation events to write: its process (index in
/// the recording), pid, tid, name, the ranges of its lock events, and its
/// OpenMP events and futex calls.
struct SyncThread {
    process: u32,
    pid: u32,
    tid: u32,
    name: Option<String>,
    lock_ranges: Vec<std::ops::Range<usize>>,
    calls: Vec<ThreadSync>,
}

/// The region of an OpenMP synchronisation event and its role: named for
/// its construct (`omp critical`, `omp_set_lock`, `omp implicit barrier`,
/// …) and its site.
fn omp_region(e: &crate::openmp::sync::OmpSyncEvent, site: &str) -> (String, RegionRole) {
    let kind = e.kind_name();
    let (construct, role) = if e.barrier {
        let role = match kind {
            "implicit barrier" => RegionRole::ImplicitBarrier,
            "taskwait" | "taskgroup" => RegionRole::TaskWait,
            _ => RegionRole::Barrier,
        };
        (format!("omp {kind}"), role)
    } else {
        match kind {
            "critical" => ("omp critical".to_string(), RegionRole::Critical),
            "atomic" => ("omp atomic".to_string(), RegionRole::Atomic),
            "ordered" => ("omp ordered".to_string(), RegionRole::Ordered),
            "lock" => ("omp_set_lock".to_string(), RegionRole::Function),
            "nest_lock" => ("omp_set_nest_lock".to_string(), RegionRole::Function),
            other => (format!("omp {other}"), RegionRole::Function),
        }
    };
    (format!("{construct} @ {site}"), role)
}

/// The pthread lock events and the OpenMP synchronisation events, one
/// location per thread, its records in time order; a rank thread's
/// location when the thread is an MPI rank's (`mpi_part` claims those).
///
/// * A pthread lock event: `Enter`/`Leave` of its blocking call (request
///   → acquisition), `ThreadAcquireLock`/`ThreadReleaseLock` (paradigm
///   `PTHREAD`, the lock's index as its id) at the acquisition and the
///   release of mutexes, rwlocks and spinlocks.
/// * An OpenMP critical, atomic or ordered construct: `Enter` at the
///   acquire, `ThreadAcquireLock` (paradigm `OPENMP`) at the acquisition,
///   `ThreadReleaseLock` and `Leave` at the release. An OpenMP lock:
///   `Enter`/`Leave` of `omp_set_lock` (acquire → acquisition) and the
///   lock records at the acquisition and the release. OpenMP lock ids
///   follow the pthread ones, one per (process, kind, wait id).
/// * An OpenMP barrier or task wait: `Enter`/`Leave` of a region whose
///   role says which (barrier, implicit barrier, task wait), from the
///   arrival to the end of the wait.
/// * A futex wait or wake: `Enter`/`Leave` of `futex_wait @ <site>` or
///   `futex_wake @ <site>` (paradigm `UNKNOWN`) over the call, the site
///   as the futex section shows it.
///
/// A lock's acquisition order is the rank of the acquisition by time
/// among the kept acquisitions of the lock. The filters apply as in the
/// timeline exports (an OpenMP event by thread, duration and critical
/// path across recorders).
struct SyncPart<'a> {
    sources: SyncSources<'a>,
    threads: SyncThreads,
}

/// What [`SyncPart`] writes from: the events, which of them the filter
/// keeps, the locks' ids and acquisition orders, the sites' names.
struct SyncSources<'a> {
    analysis: &'a Analysis<'a>,
    filter: &'a crate::locks::EventFilter,
    set: &'a crate::locks::EventSet,
    omp: &'a crate::openmp::sync::OmpSyncEvents,
    selection: Option<Selection<'a>>,
    omp_path: &'a [bool],
    /// Acquisition order of each lock event (0: not an acquisition kept).
    order: Vec<u32>,
    /// (lock id, acquisition order) of each OpenMP mutex event.
    omp_lock: Vec<(u32, u32)>,
    sites: FxHashMap<(u32, u64), String>,
    /// The futex calls, where they are shown, which waits lie on the
    /// critical path and which wakes ended a kept wait.
    futex: Option<FutexSources<'a>>,
}

/// The futex part of [`SyncSources`].
struct FutexSources<'a> {
    ev: &'a crate::futex::FutexEvents,
    shown: crate::futex::ShownSites<'a>,
    on_path: &'a [bool],
    woke_kept: Vec<bool>,
}

/// The threads of a [`SyncPart`], those a rank's location took.
struct SyncThreads {
    threads: Vec<SyncThread>,
    index: FxHashMap<(u32, u32), usize>,
    claimed: Vec<bool>,
}

/// The records of one kept event: `Enter` of `region` at its request,
/// `Leave` at `leave_ns`, and for a lock acquisition the lock's records.
/// A construct (critical, atomic, ordered) is left after the lock's
/// release; a call (a pthread lock, `omp_set_lock`) before the lock's
/// acquisition record.
struct SyncRecords {
    region: u32,
    leave_ns: u64,
    lock: Option<LockHold>,
    leave_after_release: bool,
}

/// A lock acquisition's records: the lock's model, id and acquisition
/// order, acquired and released, ns.
struct LockHold {
    paradigm: Paradigm,
    id: u32,
    order: u32,
    acquired_ns: u64,
    released_ns: u64,
}

impl<'a> SyncSources<'a> {
    fn keeps_lock(&self, i: usize) -> bool {
        self.selection
            .as_ref()
            .is_some_and(|s| s.keeps(i, &self.set.events[i]))
    }

    fn keeps_omp(&self, j: usize) -> bool {
        super::timeline::keeps_omp_event(self.filter, &self.omp.get(j), self.omp_path, j)
    }

    fn keeps_futex_wait(&self, i: usize) -> bool {
        self.futex
            .as_ref()
            .is_some_and(|f| super::timeline::keeps_futex_wait(self.filter, f.ev, f.on_path, i))
    }

    /// A futex wake is kept when it ended a kept wait or passes the filter
    /// as an event of no duration.
    fn keeps_futex_wake(&self, i: usize) -> bool {
        self.futex.as_ref().is_some_and(|f| {
            let w = &f.ev.wakes[i];
            let tid = f.ev.threads[w.thread() as usize].tid;
            f.woke_kept[i] || super::timeline::keeps_sync(self.filter, tid, 0, false)
        })
    }

    /// When `item` (not a lock event) began: its request, arrival or
    /// call, ns.
    fn start_ns(&self, item: ThreadSync) -> u64 {
        let futex = || self.futex.as_ref().map(|f| f.ev);
        match item {
            ThreadSync::Lock(i) => self.set.events[i as usize].requested_ns(),
            ThreadSync::Omp(j) => self.omp.get(j as usize).requested_ns,
            ThreadSync::FutexWait(i) => futex().map_or(0, |ev| ev.waits[i as usize].start_ns),
            ThreadSync::FutexWake(i) => futex().map_or(0, |ev| ev.wakes[i as usize].start_ns),
        }
    }

    /// The records of `item` when the filter keeps it, its region defined.
    fn records(&mut self, item: ThreadSync, defs: &mut Defs) -> Option<SyncRecords> {
        match item {
            ThreadSync::FutexWait(i) | ThreadSync::FutexWake(i) => {
                let i = i as usize;
                let wait = matches!(item, ThreadSync::FutexWait(_));
                let kept = if wait {
                    self.keeps_futex_wait(i)
                } else {
                    self.keeps_futex_wake(i)
                };
                if !kept {
                    return None;
                }
                let f = self.futex.as_mut()?;
                let (call, start, end) = if wait {
                    let w = &f.ev.waits[i];
                    (f.ev.wait_info(w), w.start_ns, w.end_ns)
                } else {
                    let w = &f.ev.wakes[i];
                    (f.ev.wake_info(w), w.start_ns, w.end_ns)
                };
                let site = &f.shown.site(call.process, call.site, call.stack).1.display;
                let what = if wait { "futex_wait" } else { "futex_wake" };
                let region = defs.region(
                    &format!("{what} @ {site}"),
                    RegionRole::Function,
                    Paradigm::Unknown,
                );
                Some(SyncRecords {
                    region,
                    leave_ns: end.max(start),
                    lock: None,
                    leave_after_release: false,
                })
            }
            ThreadSync::Lock(i) => {
                let i = i as usize;
                if !self.keeps_lock(i) {
                    return None;
                }
                let e = &self.set.events[i];
                let region = defs.region(
                    lock_call(e.primitive()),
                    if e.primitive() == Primitive::Barrier {
                        RegionRole::Barrier
                    } else {
                        RegionRole::Function
                    },
                    Paradigm::Pthread,
                );
                let lock = (e.is_lock() && e.outcome() == Outcome::Acquired).then(|| LockHold {
                    paradigm: Paradigm::Pthread,
                    id: e.object,
                    order: self.order[i],
                    acquired_ns: e.acquired_ns(),
                    released_ns: e.released_ns().max(e.acquired_ns()),
                });
                Some(SyncRecords {
                    region,
                    leave_ns: e.acquired_ns(),
                    lock,
                    leave_after_release: false,
                })
            }
            ThreadSync::Omp(j) => {
                let j = j as usize;
                if !self.keeps_omp(j) {
                    return None;
                }
                let e = self.omp.get(j);
                let (analysis, recording) = (self.analysis, self.analysis.recording);
                let site = self.sites.entry((e.process, e.site)).or_insert_with(|| {
                    analysis
                        .symbols
                        .site(recording.process_maps(e.process), e.site)
                        .display
                });
                let (region_name, role) = omp_region(&e, site);
                let region = defs.region(&region_name, role, Paradigm::OpenMp);
                let acquired = e.acquired_ns.max(e.requested_ns);
                if e.barrier {
                    return Some(SyncRecords {
                        region,
                        leave_ns: acquired,
                        lock: None,
                        leave_after_release: false,
                    });
                }
                let released = e.released_ns.max(acquired);
                let (id, order) = self.omp_lock[j];
                // a construct is left at its release, an OpenMP lock's set
                // call at the acquisition
                let construct = role != RegionRole::Function;
                Some(SyncRecords {
                    region,
                    leave_ns: if construct { released } else { acquired },
                    lock: Some(LockHold {
                        paradigm: Paradigm::OpenMp,
                        id,
                        order,
                        acquired_ns: acquired,
                        released_ns: released,
                    }),
                    leave_after_release: construct,
                })
            }
        }
    }
}

impl SyncThreads {
    /// The writer of thread (`pid`, `tid`)'s events, if it has any and
    /// no location took them yet.
    fn claim(&mut self, src: &SyncSources<'_>, pid: u32, tid: u32) -> Option<ThreadWriter> {
        let k = *self.index.get(&(pid, tid))?;
        self.take(src, k)
    }

    /// The writer of thread `k`'s events, unless a location took them.
    fn take(&mut self, src: &SyncSources<'_>, k: usize) -> Option<ThreadWriter> {
        if std::mem::replace(&mut self.claimed[k], true) {
            return None;
        }
        Some(ThreadWriter::new(src, &self.threads[k]))
    }
}

/// One thread's records, written in time order as far as asked
/// ([`ThreadWriter::write_until`]): its events by request time (lock
/// events first at equal times), and the records each leaves for later
/// (its `Leave`, the lock's acquisition and release) in a heap by time.
struct ThreadWriter {
    items: Vec<(u64, ThreadSync)>,
    next: usize,
    pending: std::collections::BinaryHeap<Pending>,
    seq: u64,
}

impl ThreadWriter {
    fn new(src: &SyncSources<'_>, th: &SyncThread) -> ThreadWriter {
        let mut items: Vec<(u64, ThreadSync)> = th
            .lock_ranges
            .iter()
            .flat_map(|r| r.clone())
            .map(|i| ThreadSync::Lock(i as u32))
            .chain(th.calls.iter().copied())
            .map(|item| (src.start_ns(item), item))
            .collect();
        items.sort_by_key(|&(t, _)| t);
        ThreadWriter {
            items,
            next: 0,
            pending: Default::default(),
            seq: 0,
        }
    }

    /// Writes the records up to `limit` (time, and whether records at
    /// that very time go too), or all of them; returns how many.
    fn write_until(
        &mut self,
        src: &mut SyncSources<'_>,
        defs: &mut Defs,
        sink: &mut dyn Otf2Sink,
        limit: Option<(u64, bool)>,
    ) -> Result<u64, String> {
        let mut count = 0u64;
        loop {
            let item = self.items.get(self.next).map(|&(t, _)| t);
            let pending = self.pending.peek().map(|r| r.0 .0);
            // what waits goes first at an event's request time
            let (t, from_pending) = match (pending, item) {
                (Some(p), Some(r)) if p <= r => (p, true),
                (_, Some(r)) => (r, false),
                (Some(p), None) => (p, true),
                (None, None) => return Ok(count),
            };
            if let Some((until, inclusive)) = limit {
                if t > until || (t == until && !inclusive) {
                    return Ok(count);
                }
            }
            if from_pending {
                let Some(std::cmp::Reverse((t, _, k))) = self.pending.pop() else {
                    return Ok(count);
                };
                let e = match k {
                    EventKey::Leave(region) => Event::Leave { region },
                    EventKey::Acquire(paradigm, lock, order) => Event::AcquireLock {
                        paradigm,
                        lock,
                        order,
                    },
                    EventKey::Release(paradigm, lock, order) => Event::ReleaseLock {
                        paradigm,
                        lock,
                        order,
                    },
                };
                defs.see(t);
                count += 1;
                sink.event(t, &e)?;
                continue;
            }
            let (requested, item) = self.items[self.next];
            self.next += 1;
            let Some(r) = src.records(item, defs) else {
                continue;
            };
            let region = r.region;
            defs.see(requested);
            count += 1;
            sink.event(requested, &Event::Enter { region })?;
            let mut push = |t: u64, k: EventKey| {
                self.seq += 1;
                self.pending.push(std::cmp::Reverse((t, self.seq, k)));
            };
            // (records at one instant go in the order pushed)
            if !r.leave_after_release {
                push(r.leave_ns, EventKey::Leave(region));
            }
            if let Some(l) = &r.lock {
                push(l.acquired_ns, EventKey::Acquire(l.paradigm, l.id, l.order));
                push(l.released_ns, EventKey::Release(l.paradigm, l.id, l.order));
            }
            if r.leave_after_release {
                push(r.leave_ns, EventKey::Leave(region));
            }
        }
    }
}

/// The index of thread (`pid`, `tid`) in `threads`, added (of process
/// index `process`, named by `name`) when new.
fn sync_thread(
    threads: &mut Vec<SyncThread>,
    index: &mut FxHashMap<(u32, u32), usize>,
    process: u32,
    pid: u32,
    tid: u32,
    name: impl FnOnce() -> Option<String>,
) -> usize {
    *index.entry((pid, tid)).or_insert_with(|| {
        threads.push(SyncThread {
            process,
            pid,
            tid,
            name: name(),
            lock_ranges: Vec::new(),
            calls: Vec::new(),
        });
        threads.len() - 1
    })
}

impl<'a> SyncPart<'a> {
    /// The lock events of `locks` and the OpenMP events `omp` of
    /// `analysis`, as `options` filters them.
    fn new(
        analysis: &'a Analysis<'a>,
        locks: Option<&'a LockEvents>,
        omp: &'a crate::openmp::sync::OmpSyncEvents,
        futex: Option<&'a crate::futex::FutexEvents>,
        thread_names: &FxHashMap<(u32, u32), &str>,
        options: &'a ExportOptions,
    ) -> SyncPart<'a> {
        static EMPTY: std::sync::OnceLock<crate::locks::EventSet> = std::sync::OnceLock::new();
        let set = locks.map_or_else(|| EMPTY.get_or_init(Default::default), |l| &l.set);
        let recording = analysis.recording;
        let mut sources = SyncSources {
            analysis,
            filter: &options.filter,
            set,
            omp,
            selection: locks
                .map(|l| Selection::new(&options.filter, set, &l.critical_path, &l.names)),
            omp_path: super::timeline::openmp_on_path(analysis, omp.len()),
            order: vec![0; set.events.len()],
            omp_lock: vec![(0, 0); omp.len()],
            sites: FxHashMap::default(),
            futex: futex.map(|ev| {
                let on_path = super::timeline::futex_on_path(analysis, ev.waits.len());
                let mut woke_kept = vec![false; ev.wakes.len()];
                for i in 0..ev.waits.len() {
                    if let Some(k) = ev.waits[i].waker() {
                        if super::timeline::keeps_futex_wait(&options.filter, ev, on_path, i) {
                            if let Some(b) = woke_kept.get_mut(k as usize) {
                                *b = true;
                            }
                        }
                    }
                }
                FutexSources {
                    ev,
                    shown: crate::futex::ShownSites::new(recording, &analysis.symbols, ev),
                    on_path,
                    woke_kept,
                }
            }),
        };
        // Acquisition order per lock: the rank of each acquisition by time.
        let mut by_object: FxHashMap<u32, Vec<(u64, u32)>> = FxHashMap::default();
        for (i, e) in set.events.iter().enumerate() {
            if e.is_lock() && e.outcome() == Outcome::Acquired && sources.keeps_lock(i) {
                by_object
                    .entry(e.object)
                    .or_default()
                    .push((e.acquired_ns(), i as u32));
            }
        }
        for v in by_object.values_mut() {
            v.sort_unstable();
            for (k, &(_, i)) in v.iter().enumerate() {
                sources.order[i as usize] = k as u32 + 1;
            }
        }
        // OpenMP mutexes: an id after the pthread locks' per (process,
        // kind, wait id), and the acquisition order.
        let mut by_object: BTreeMap<(u32, u8, u64), Vec<(u64, u32)>> = BTreeMap::new();
        for (j, e) in omp.iter().enumerate() {
            if !e.barrier && sources.keeps_omp(j) {
                by_object
                    .entry((e.process, e.kind, e.object))
                    .or_default()
                    .push((e.acquired_ns, j as u32));
            }
        }
        let first_id = set.objects.len() as u32;
        for (k, v) in by_object.values_mut().enumerate() {
            v.sort_unstable();
            for (n, &(_, j)) in v.iter().enumerate() {
                sources.omp_lock[j as usize] = (first_id + k as u32, n as u32 + 1);
            }
        }
        // The threads: those with lock events in the order of their
        // events, then those with OpenMP events only.
        let mut threads: Vec<SyncThread> = Vec::new();
        let mut index: FxHashMap<(u32, u32), usize> = FxHashMap::default();
        for (thread, run) in set.runs_by_thread() {
            let info = &set.threads[thread as usize];
            let k = sync_thread(
                &mut threads,
                &mut index,
                info.process,
                info.pid,
                info.tid,
                || info.name.clone(),
            );
            threads[k].lock_ranges.push(run);
        }
        // a thread's name as its lock trace has it
        let name_of = |pid: u32, tid: u32| thread_names.get(&(pid, tid)).map(|n| n.to_string());
        for (j, e) in omp.iter().enumerate() {
            let pid = e.pid(recording);
            let k = sync_thread(&mut threads, &mut index, e.process, pid, e.tid, || {
                name_of(pid, e.tid)
            });
            threads[k].calls.push(ThreadSync::Omp(j as u32));
        }
        if let Some(ev) = futex {
            let calls = (0..ev.waits.len() as u32)
                .map(|i| (ev.waits[i as usize].thread(), ThreadSync::FutexWait(i)))
                .chain(
                    (0..ev.wakes.len() as u32)
                        .map(|i| (ev.wakes[i as usize].thread(), ThreadSync::FutexWake(i))),
                );
            for (thread, call) in calls {
                let t = ev.threads[thread as usize];
                let k = sync_thread(&mut threads, &mut index, t.process, t.pid, t.tid, || {
                    name_of(t.pid, t.tid)
                });
                threads[k].calls.push(call);
            }
        }
        let claimed = vec![false; threads.len()];
        SyncPart {
            sources,
            threads: SyncThreads {
                threads,
                index,
                claimed,
            },
        }
    }

    /// Its sources and its threads, borrowed apart.
    fn split(&mut self) -> (&mut SyncSources<'a>, &mut SyncThreads) {
        (&mut self.sources, &mut self.threads)
    }

    /// A location per thread no rank's location took, in the location
    /// group of its process: a rank's (`rank_groups`, pid → group) or one
    /// of its own.
    fn write_rest(
        &mut self,
        sink: &mut dyn Otf2Sink,
        defs: &mut Defs,
        hosts: &mut BTreeMap<String, u32>,
        rank_groups: &FxHashMap<u32, u32>,
        next_location: &mut u64,
        written: &mut Written,
    ) -> Result<(), ExportError> {
        let w = |e: String| ExportError::Writer(e);
        if self.threads.threads.is_empty() {
            return Ok(());
        }
        let recording = self.sources.analysis.recording;
        let host = recording
            .meta
            .as_ref()
            .map(|m| m.host.clone())
            .filter(|h| !h.is_empty())
            .unwrap_or_else(|| "localhost".into());
        let node = defs.node(&host, hosts);
        let mut groups: FxHashMap<u32, u32> = rank_groups.clone();
        for k in 0..self.threads.threads.len() {
            let Some(mut writer) = self.threads.take(&self.sources, k) else {
                continue;
            };
            let th = &self.threads.threads[k];
            let (pid, tid) = (th.pid, th.tid);
            let group = *groups.entry(pid).or_insert_with(|| {
                let pname = recording
                    .processes
                    .get(th.process as usize)
                    .and_then(|p| p.trace.cmdline.first().cloned())
                    .unwrap_or_default();
                let name = defs.string(&format!("{pname} (pid {pid})"));
                defs.d.location_groups.push(LocationGroup { name, node });
                (defs.d.location_groups.len() - 1) as u32
            });
            let id = *next_location;
            *next_location += 1;
            let name = defs.string(&match &th.name {
                Some(comm) => format!("{comm} (tid {tid})"),
                None => format!("tid {tid}"),
            });
            sink.begin_location(id).map_err(w)?;
            let count = writer
                .write_until(&mut self.sources, defs, sink, None)
                .map_err(w)?;
            sink.end_location().map_err(w)?;
            defs.d.locations.push(Location {
                id,
                name,
                group,
                events: count,
            });
            written.events += count;
            written.locations += 1;
        }
        Ok(())
    }
}
