//! The calls of one MPI rank in memory at 48 bytes each ([`MpiEvents`]),
//! instead of one 232-byte [`MpiEvent`] with two heap vectors per call:
//! the fields every call has in a fixed-size record, the call site and
//! communicator interned per rank, the send and receive postings, the
//! completions and the fields few calls have (root, collective bytes,
//! created communicator, probed message, request, return code, started
//! persistent requests) in side arrays the record indexes. Calls are read
//! through [`MpiEventRef`], a borrowed view with the same field names as
//! [`MpiEvent`] (the completions and started requests as slices), and
//! added as [`MpiEvent`] values, the form the trace reader and the tests
//! build. Issue 15 ("analysis at memory speed": the MPI analysis at most
//! 64 bytes of peak memory per event).

use rustc_hash::FxHashMap;

use crate::mpi::{
    Completion, MpiEvent, MpiOp, Peer, ProbedMessage, RecvPost, SendPost, StartedRequest,
};

/// No entry in a side array.
const NONE: u32 = u32::MAX;

/// Flag of [`CallRecord::flags`]: `posts[post]` is the call's send.
const HAS_SEND: u8 = 1;
/// Flag of [`CallRecord::flags`]: the call's receive is `posts[post]`, or
/// `posts[post + 1]` when it also has a send (`Sendrecv`).
const HAS_RECV: u8 = 2;

/// One call: what every call has, and where the rest is. 48 bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct CallRecord {
    enter_ns: u64,
    exit_ns: u64,
    /// Index into [`MpiEvents::sites`].
    site: u32,
    /// Index into [`MpiEvents::comms`].
    comm: u32,
    tid: u32,
    /// First of its completions in [`MpiEvents::completions`]; the next
    /// call's (or the array's end) ends them.
    completions: u32,
    /// Its send and/or receive in [`MpiEvents::posts`] ([`HAS_SEND`],
    /// [`HAS_RECV`]).
    post: u32,
    /// Index into [`MpiEvents::rare`], [`NONE`] when every rare field has
    /// its default.
    rare: u32,
    op: MpiOp,
    flags: u8,
}

/// A send or receive posting: a [`SendPost`] or [`RecvPost`] (the same
/// fields). 32 bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct PostRecord {
    peer: Peer,
    tag: i32,
    bytes: u64,
    request: u64,
}

/// The fields few calls have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct RareFields {
    root: Option<u32>,
    coll_bytes_sent: u64,
    coll_bytes_recv: u64,
    created_comm: Option<u64>,
    return_code: i32,
    probed: Option<ProbedMessage>,
    request: u64,
    /// Its started requests: `starts[first..first + count]`.
    starts_first: u32,
    starts_count: u32,
}

impl RareFields {
    fn is_default(&self) -> bool {
        self.root.is_none()
            && self.coll_bytes_sent == 0
            && self.coll_bytes_recv == 0
            && self.created_comm.is_none()
            && self.return_code == 0
            && self.probed.is_none()
            && self.request == 0
            && self.starts_count == 0
    }
}

/// The calls of one rank, in the order they were added (the reader adds
/// them in the order they were entered), at 48 bytes per call plus 32
/// bytes per completion and per send or receive posting; see the module
/// docs. Built with [`MpiEvents::push`] or from a `Vec<MpiEvent>`; read
/// with [`MpiEvents::get`], [`MpiEvents::at`] and [`MpiEvents::iter`].
#[derive(Debug, Clone, PartialEq, Default)]
pub struct MpiEvents {
    calls: Vec<CallRecord>,
    completions: Vec<Completion>,
    posts: Vec<PostRecord>,
    rare: Vec<RareFields>,
    starts: Vec<StartedRequest>,
    /// Distinct call sites (return addresses), in order of first use.
    sites: Vec<u64>,
    /// Distinct communicator ids, in order of first use.
    comms: Vec<u64>,
    site_index: FxHashMap<u64, u32>,
    comm_index: FxHashMap<u64, u32>,
    /// The last site and communicator interned (consecutive calls often
    /// share them: no hash lookup then).
    last: LastInterned,
}

/// The last (value, index) interned per table; equal whatever it holds (a
/// cache, not content).
#[derive(Debug, Clone, Default)]
struct LastInterned {
    site: Option<(u64, u32)>,
    comm: Option<(u64, u32)>,
}

impl PartialEq for LastInterned {
    fn eq(&self, _: &LastInterned) -> bool {
        true
    }
}

/// One call of an [`MpiEvents`]: the fields of [`MpiEvent`], with the
/// started requests and completions borrowed. Cheap to make (a copy of
/// the fixed fields) and `Copy`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MpiEventRef<'a> {
    /// [`MpiEvent::op`].
    pub op: MpiOp,
    /// [`MpiEvent::tid`].
    pub tid: u32,
    /// [`MpiEvent::enter_ns`], ns.
    pub enter_ns: u64,
    /// [`MpiEvent::exit_ns`], ns.
    pub exit_ns: u64,
    /// [`MpiEvent::site`].
    pub site: u64,
    /// [`MpiEvent::comm`].
    pub comm: u64,
    /// [`MpiEvent::root`].
    pub root: Option<u32>,
    /// [`MpiEvent::coll_bytes_sent`], bytes.
    pub coll_bytes_sent: u64,
    /// [`MpiEvent::coll_bytes_recv`], bytes.
    pub coll_bytes_recv: u64,
    /// [`MpiEvent::send`].
    pub send: Option<SendPost>,
    /// [`MpiEvent::recv`].
    pub recv: Option<RecvPost>,
    /// [`MpiEvent::starts`].
    pub starts: &'a [StartedRequest],
    /// [`MpiEvent::completions`].
    pub completions: &'a [Completion],
    /// [`MpiEvent::created_comm`].
    pub created_comm: Option<u64>,
    /// [`MpiEvent::return_code`].
    pub return_code: i32,
    /// [`MpiEvent::probed`].
    pub probed: Option<ProbedMessage>,
    /// [`MpiEvent::request`].
    pub request: u64,
}

impl MpiEventRef<'_> {
    /// The call as an owned [`MpiEvent`].
    pub fn to_event(&self) -> MpiEvent {
        MpiEvent {
            op: self.op,
            tid: self.tid,
            enter_ns: self.enter_ns,
            exit_ns: self.exit_ns,
            site: self.site,
            comm: self.comm,
            root: self.root,
            coll_bytes_sent: self.coll_bytes_sent,
            coll_bytes_recv: self.coll_bytes_recv,
            send: self.send,
            recv: self.recv,
            starts: self.starts.to_vec(),
            completions: self.completions.to_vec(),
            created_comm: self.created_comm,
            return_code: self.return_code,
            probed: self.probed,
            request: self.request,
        }
    }
}

/// An index into a side array as stored; the arrays of one rank stay far
/// below 2³² entries (a rank's trace holds fewer calls than that).
fn index(n: usize) -> u32 {
    u32::try_from(n).expect("more than 2^32 entries in one rank's MPI calls")
}

impl MpiEvents {
    /// An empty list with room for `calls` calls.
    pub fn with_capacity(calls: usize) -> MpiEvents {
        MpiEvents {
            calls: Vec::with_capacity(calls),
            ..MpiEvents::default()
        }
    }

    /// Number of calls.
    pub fn len(&self) -> usize {
        self.calls.len()
    }

    /// No calls.
    pub fn is_empty(&self) -> bool {
        self.calls.is_empty()
    }

    /// Adds a call after the others.
    pub fn push(&mut self, e: MpiEvent) {
        self.push_ref(&e.as_ref_parts());
    }

    fn intern(
        values: &mut Vec<u64>,
        index_of: &mut FxHashMap<u64, u32>,
        last: &mut Option<(u64, u32)>,
        v: u64,
    ) -> u32 {
        if let Some((lv, li)) = *last {
            if lv == v {
                return li;
            }
        }
        let i = *index_of.entry(v).or_insert_with(|| {
            values.push(v);
            index(values.len() - 1)
        });
        *last = Some((v, i));
        i
    }

    /// Appends a call given as a view (of another list's call, or of an
    /// [`MpiEvent`] through [`MpiEvent::as_ref_parts`]).
    pub fn push_ref(&mut self, e: &MpiEventRef<'_>) {
        let site = Self::intern(
            &mut self.sites,
            &mut self.site_index,
            &mut self.last.site,
            e.site,
        );
        let comm = Self::intern(
            &mut self.comms,
            &mut self.comm_index,
            &mut self.last.comm,
            e.comm,
        );
        let post = index(self.posts.len());
        let mut flags = 0;
        if let Some(s) = e.send {
            flags |= HAS_SEND;
            self.posts.push(PostRecord {
                peer: s.dest,
                tag: s.tag,
                bytes: s.bytes,
                request: s.request,
            });
        }
        if let Some(r) = e.recv {
            flags |= HAS_RECV;
            self.posts.push(PostRecord {
                peer: r.source,
                tag: r.tag,
                bytes: r.bytes,
                request: r.request,
            });
        }
        let mut rare = RareFields {
            root: e.root,
            coll_bytes_sent: e.coll_bytes_sent,
            coll_bytes_recv: e.coll_bytes_recv,
            created_comm: e.created_comm,
            return_code: e.return_code,
            probed: e.probed,
            request: e.request,
            starts_first: index(self.starts.len()),
            starts_count: index(e.starts.len()),
        };
        if rare.starts_count == 0 {
            rare.starts_first = 0;
        }
        let rare = if rare.is_default() {
            NONE
        } else {
            self.starts.extend_from_slice(e.starts);
            self.rare.push(rare);
            index(self.rare.len() - 1)
        };
        let completions = index(self.completions.len());
        self.completions.extend_from_slice(e.completions);
        self.calls.push(CallRecord {
            enter_ns: e.enter_ns,
            exit_ns: e.exit_ns,
            site,
            comm,
            tid: e.tid,
            completions,
            post: if flags == 0 { 0 } else { post },
            rare,
            op: e.op,
            flags,
        });
    }

    /// Call `i`, or `None` past the end. Inlined, with lookups that cannot
    /// panic, so that a loop reading only some fields costs only those.
    #[inline]
    pub fn get(&self, i: usize) -> Option<MpiEventRef<'_>> {
        let c = self.calls.get(i)?;
        let end = self
            .calls
            .get(i + 1)
            .map_or(self.completions.len(), |n| n.completions as usize);
        let post = |k: u32| self.posts.get(k as usize).copied();
        let send = if c.flags & HAS_SEND != 0 {
            post(c.post).map(|p| SendPost {
                dest: p.peer,
                tag: p.tag,
                bytes: p.bytes,
                request: p.request,
            })
        } else {
            None
        };
        let recv = if c.flags & HAS_RECV != 0 {
            post(c.post + u32::from(c.flags & HAS_SEND != 0)).map(|p| RecvPost {
                source: p.peer,
                tag: p.tag,
                bytes: p.bytes,
                request: p.request,
            })
        } else {
            None
        };
        let rare = if c.rare == NONE {
            None
        } else {
            self.rare.get(c.rare as usize)
        };
        let starts = rare.map_or(&[][..], |r| {
            let first = r.starts_first as usize;
            self.starts
                .get(first..first + r.starts_count as usize)
                .unwrap_or(&[])
        });
        Some(MpiEventRef {
            op: c.op,
            tid: c.tid,
            enter_ns: c.enter_ns,
            exit_ns: c.exit_ns,
            site: self.sites.get(c.site as usize).copied().unwrap_or(0),
            comm: self.comms.get(c.comm as usize).copied().unwrap_or(0),
            root: rare.and_then(|r| r.root),
            coll_bytes_sent: rare.map_or(0, |r| r.coll_bytes_sent),
            coll_bytes_recv: rare.map_or(0, |r| r.coll_bytes_recv),
            send,
            recv,
            starts,
            completions: self
                .completions
                .get(c.completions as usize..end)
                .unwrap_or(&[]),
            created_comm: rare.and_then(|r| r.created_comm),
            return_code: rare.map_or(0, |r| r.return_code),
            probed: rare.and_then(|r| r.probed),
            request: rare.map_or(0, |r| r.request),
        })
    }

    /// Call `i`. Panics past the end, like indexing a slice.
    #[inline]
    pub fn at(&self, i: usize) -> MpiEventRef<'_> {
        self.get(i)
            .unwrap_or_else(|| panic!("MPI call {i} of a rank with {} calls", self.calls.len()))
    }

    /// The first call.
    pub fn first(&self) -> Option<MpiEventRef<'_>> {
        self.get(0)
    }

    /// The last call.
    pub fn last(&self) -> Option<MpiEventRef<'_>> {
        self.len().checked_sub(1).and_then(|i| self.get(i))
    }

    /// The calls in order.
    pub fn iter(&self) -> Iter<'_> {
        Iter {
            events: self,
            range: 0..self.calls.len(),
        }
    }

    /// Enter time of call `i`, ns (without making its view). Panics past
    /// the end.
    pub fn enter_ns(&self, i: usize) -> u64 {
        self.calls[i].enter_ns
    }

    /// Exit time of call `i`, ns. Panics past the end.
    pub fn exit_ns(&self, i: usize) -> u64 {
        self.calls[i].exit_ns
    }

    /// The MPI function of call `i`. Panics past the end.
    pub fn op(&self, i: usize) -> MpiOp {
        self.calls[i].op
    }

    /// The calling thread of call `i`. Panics past the end.
    pub fn tid(&self, i: usize) -> u32 {
        self.calls[i].tid
    }

    /// The communicator of call `i` (its handle as recorded). Panics past
    /// the end.
    pub fn comm(&self, i: usize) -> u64 {
        self.comms
            .get(self.calls[i].comm as usize)
            .copied()
            .unwrap_or(0)
    }

    /// The interned call site of call `i`: an index below
    /// [`MpiEvents::site_slots`], the same for every call from the same
    /// return address ([`MpiEvents::site_address`]). Panics past the end.
    pub fn site_slot(&self, i: usize) -> u32 {
        self.calls[i].site
    }

    /// Number of distinct call sites (return addresses) of the calls.
    pub fn site_slots(&self) -> usize {
        self.sites.len()
    }

    /// The return address of interned call site `slot`
    /// ([`MpiEvents::site_slot`]); `None` past the end.
    pub fn site_address(&self, slot: u32) -> Option<u64> {
        self.sites.get(slot as usize).copied()
    }

    /// Whether the calls are in order of enter time.
    pub fn is_sorted_by_enter(&self) -> bool {
        self.calls.is_sorted_by_key(|c| c.enter_ns)
    }

    /// Puts the calls in order of enter time, stably (a rank whose
    /// threads called MPI concurrently); rebuilds the side arrays in the
    /// new order.
    pub fn sort_by_enter(&mut self) {
        if self.is_sorted_by_enter() {
            return;
        }
        let mut order: Vec<u32> = (0..index(self.calls.len())).collect();
        order.sort_by_key(|&i| self.calls[i as usize].enter_ns);
        let mut sorted = MpiEvents::with_capacity(self.calls.len());
        for i in order {
            sorted.push_ref(&self.at(i as usize));
        }
        *self = sorted;
    }

    /// Applies `f` to every enter and exit time (ns → ns).
    pub fn map_times(&mut self, f: impl Fn(u64) -> u64) {
        for c in &mut self.calls {
            c.enter_ns = f(c.enter_ns);
            c.exit_ns = f(c.exit_ns);
        }
    }

    /// Every call as an owned [`MpiEvent`] (to change calls, then build
    /// the list again with `MpiEvents::from`).
    pub fn to_vec(&self) -> Vec<MpiEvent> {
        self.iter().map(|e| e.to_event()).collect()
    }

    /// Frees unused capacity of every array.
    pub fn shrink_to_fit(&mut self) {
        self.calls.shrink_to_fit();
        self.completions.shrink_to_fit();
        self.posts.shrink_to_fit();
        self.rare.shrink_to_fit();
        self.starts.shrink_to_fit();
        self.sites.shrink_to_fit();
        self.comms.shrink_to_fit();
    }

    /// Bytes held by the arrays (their capacity; the two interning maps
    /// not counted).
    pub fn heap_bytes(&self) -> usize {
        use std::mem::size_of;
        self.calls.capacity() * size_of::<CallRecord>()
            + self.completions.capacity() * size_of::<Completion>()
            + self.posts.capacity() * size_of::<PostRecord>()
            + self.rare.capacity() * size_of::<RareFields>()
            + self.starts.capacity() * size_of::<StartedRequest>()
            + (self.sites.capacity() + self.comms.capacity()) * size_of::<u64>()
    }
}

impl MpiEvent {
    /// A call of `op` by thread `tid` at time 0 with every other field at
    /// its default ([`crate::mpi::WORLD_COMM`], no postings, completions or
    /// site, `MPI_SUCCESS`), for the fields that matter to be set after.
    pub fn new(op: MpiOp, tid: u32) -> MpiEvent {
        MpiEvent {
            op,
            tid,
            enter_ns: 0,
            exit_ns: 0,
            site: 0,
            comm: crate::mpi::WORLD_COMM,
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

    /// The view of this event's fields ([`MpiEventRef`]).
    pub fn as_ref_parts(&self) -> MpiEventRef<'_> {
        MpiEventRef {
            op: self.op,
            tid: self.tid,
            enter_ns: self.enter_ns,
            exit_ns: self.exit_ns,
            site: self.site,
            comm: self.comm,
            root: self.root,
            coll_bytes_sent: self.coll_bytes_sent,
            coll_bytes_recv: self.coll_bytes_recv,
            send: self.send,
            recv: self.recv,
            starts: &self.starts,
            completions: &self.completions,
            created_comm: self.created_comm,
            return_code: self.return_code,
            probed: self.probed,
            request: self.request,
        }
    }
}

impl From<Vec<MpiEvent>> for MpiEvents {
    fn from(events: Vec<MpiEvent>) -> MpiEvents {
        let mut out = MpiEvents::with_capacity(events.len());
        for e in &events {
            out.push_ref(&e.as_ref_parts());
        }
        out
    }
}

impl FromIterator<MpiEvent> for MpiEvents {
    fn from_iter<I: IntoIterator<Item = MpiEvent>>(iter: I) -> MpiEvents {
        let mut out = MpiEvents::default();
        for e in iter {
            out.push(e);
        }
        out
    }
}

/// The calls of an [`MpiEvents`] in order ([`MpiEvents::iter`]).
#[derive(Debug, Clone)]
pub struct Iter<'a> {
    events: &'a MpiEvents,
    range: std::ops::Range<usize>,
}

impl<'a> Iterator for Iter<'a> {
    type Item = MpiEventRef<'a>;
    #[inline]
    fn next(&mut self) -> Option<MpiEventRef<'a>> {
        self.range.next().map(|i| self.events.at(i))
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.range.size_hint()
    }
    #[inline]
    fn nth(&mut self, n: usize) -> Option<MpiEventRef<'a>> {
        self.range.nth(n).map(|i| self.events.at(i))
    }
}

impl DoubleEndedIterator for Iter<'_> {
    #[inline]
    fn next_back(&mut self) -> Option<Self::Item> {
        self.range.next_back().map(|i| self.events.at(i))
    }
}

impl ExactSizeIterator for Iter<'_> {}

impl<'a> IntoIterator for &'a MpiEvents {
    type Item = MpiEventRef<'a>;
    type IntoIter = Iter<'a>;
    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mpi::CompletionKind;

    fn call(op: MpiOp, enter: u64) -> MpiEvent {
        MpiEvent {
            enter_ns: enter,
            exit_ns: enter + 10,
            site: 0x400000 + enter,
            comm: 0,
            ..MpiEvent::new(op, 7)
        }
    }

    fn completion(request: u64) -> Completion {
        Completion {
            request,
            kind: CompletionKind::Recv,
            source: Some(3),
            tag: 5,
            bytes: 64,
            cancelled: false,
        }
    }

    /// Every field of every kind of call comes back as it went in.
    #[test]
    fn calls_read_back_as_they_were_added() {
        let mut sendrecv = call(MpiOp::Sendrecv, 100);
        sendrecv.send = Some(SendPost {
            dest: Peer::Rank(1),
            tag: 9,
            bytes: 8,
            request: 0,
        });
        sendrecv.recv = Some(RecvPost {
            source: Peer::Any,
            tag: -1,
            bytes: 16,
            request: 0,
        });
        sendrecv.completions = vec![completion(0), completion(0)];
        let mut irecv = call(MpiOp::Irecv, 50);
        irecv.recv = Some(RecvPost {
            source: Peer::Null,
            tag: 2,
            bytes: 4,
            request: 77,
        });
        let mut bcast = call(MpiOp::Bcast, 200);
        bcast.root = Some(2);
        bcast.coll_bytes_recv = 4096;
        bcast.comm = 0x1_0000_0002;
        bcast.return_code = 15;
        let mut start = call(MpiOp::Startall, 300);
        start.starts = vec![StartedRequest {
            mode: MpiOp::SendInit,
            comm: 0,
            send: sendrecv.send,
            recv: None,
        }];
        start.completions = vec![completion(4)];
        let mut probe = call(MpiOp::Iprobe, 400);
        probe.probed = Some(ProbedMessage {
            source: None,
            tag: 1,
            bytes: 2,
        });
        let mut split = call(MpiOp::CommSplit, 500);
        split.created_comm = Some(9);
        split.request = 5;
        let all = vec![
            call(MpiOp::Init, 0),
            sendrecv,
            irecv,
            bcast,
            start,
            probe,
            split,
            call(MpiOp::Finalize, 600),
        ];
        let packed = MpiEvents::from(all.clone());
        assert_eq!(packed.len(), all.len());
        let back: Vec<MpiEvent> = packed.iter().map(|e| e.to_event()).collect();
        assert_eq!(back, all);
        assert_eq!(packed.last().map(|e| e.op), Some(MpiOp::Finalize));
        assert!(packed.get(all.len()).is_none());
        // the calls went in out of order (the Irecv at 50 ns third)
        assert!(!packed.is_sorted_by_enter());
        let mut sorted = packed.clone();
        sorted.sort_by_enter();
        let mut want = all.clone();
        want.sort_by_key(|e| e.enter_ns);
        let back: Vec<MpiEvent> = sorted.iter().map(|e| e.to_event()).collect();
        assert_eq!(back, want);
        sorted.map_times(|t| t + 1000);
        assert_eq!(sorted.at(0).enter_ns, 1000);
        assert_eq!(sorted.at(0).exit_ns, 1010);
    }

    /// The fixed part of a call is 48 bytes.
    #[test]
    fn a_call_record_is_48_bytes() {
        assert_eq!(std::mem::size_of::<CallRecord>(), 48);
        assert_eq!(std::mem::size_of::<PostRecord>(), 32);
    }
}
