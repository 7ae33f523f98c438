//! Decoding of one thread's records of a rank trace (ENTER, EXIT,
//! compact and completion records, chunk after chunk) into calls, with the
//! clock correction to rank 0.

use crate::clock::ClockFit;
use crate::mpi::{
    Completion, CompletionKind, MpiEvent, MpiEvents, MpiOp, Peer, ProbedMessage, RecvPost,
    SendPost, StartedRequest,
};
use crate::mpi_format::{self as f, Head};

use std::collections::BTreeMap;

/// Linear interpolation of the clock offset between the `MPI_Init` and
/// `MPI_Finalize` measurements: `(offset ns, local time ns)` each.
pub(super) struct ClockCorrection {
    pub(super) init: (i64, u64),
    pub(super) fin: Option<(i64, u64)>,
}

impl ClockCorrection {
    /// `t + o(t)`, with `o` interpolated (extrapolated beyond the two
    /// measurements), clamped to `0..=u64::MAX`.
    pub(super) fn apply(&self, t: u64) -> u64 {
        let (o0, a0) = self.init;
        let o = match self.fin {
            Some((o1, a1)) if a1 > a0 => {
                let slope = (i128::from(o1) - i128::from(o0)) as f64 / (a1 - a0) as f64;
                i128::from(o0) + (slope * (i128::from(t) - i128::from(a0)) as f64) as i128
            }
            _ => i128::from(o0),
        };
        (i128::from(t) + o).clamp(0, i128::from(u64::MAX)) as u64
    }
}

/// Operation classes by ENTER payload layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Class {
    None,
    Send {
        blocking: bool,
    },
    Recv {
        blocking: bool,
    },
    SendRecv,
    Probe,
    WaitTest,
    Collective,
    CommCreate,
    CommFree,
    /// `MPI_Comm_idup`: the parent's id; EXIT: the request's id.
    CommIdup,
    /// `MPI_Abort`: the communicator's id and the error code; no EXIT.
    Abort,
    PersistentInit, // Send_init family, Recv_init: posted only by Start(all)
}

pub(super) fn class_of(op: MpiOp) -> Class {
    use MpiOp::*;
    match op {
        Init | InitThread | Finalize => Class::None,
        Abort => Class::Abort,
        CommIdup => Class::CommIdup,
        Send | Ssend | Bsend | Rsend => Class::Send { blocking: true },
        Isend | Issend | Ibsend | Irsend => Class::Send { blocking: false },
        Recv | Mrecv => Class::Recv { blocking: true },
        Irecv | Imrecv => Class::Recv { blocking: false },
        Sendrecv | SendrecvReplace => Class::SendRecv,
        Probe | Iprobe | Mprobe | Improbe => Class::Probe,
        Wait | Waitall | Waitany | Waitsome | Test | Testall | Testany | Testsome => {
            Class::WaitTest
        }
        CommSplit | CommDup | CommCreate | CommCreateGroup | IntercommCreate => Class::CommCreate,
        CommFree => Class::CommFree,
        SendInit | SsendInit | BsendInit | RsendInit | RecvInit => Class::PersistentInit,
        Start | Startall | RequestFree => Class::None,
        _ if op.is_collective() => Class::Collective,
        _ => Class::None,
    }
}

pub(super) fn peer(v: i32) -> Peer {
    match v {
        f::PEER_ANY => Peer::Any,
        v if v >= 0 => Peer::Rank(v as u32),
        _ => Peer::Null,
    }
}

/// Decodes one thread's records, chunk after chunk.
pub(super) struct ThreadDecoder {
    pub(super) tid: u32,
    /// The current time on the trace clock (TSC ticks or ns).
    pub(super) time: u64,
    /// Ticks → CLOCK_MONOTONIC ns of a TSC trace; `None` when the trace
    /// clock is CLOCK_MONOTONIC (times are ns already).
    pub(super) clock: Option<ClockFit>,
    /// Call site of the previous ENTER in the current chunk (the compact
    /// form refers to it).
    pub(super) last_site: Option<u64>,
    /// The call entered and not yet exited (boxed: filled in place and
    /// handed on as a pointer, never moved as a 200-byte value).
    pub(super) open: Option<Box<MpiEvent>>,
    /// Damage messages already given (one of each kind per thread).
    pub(super) said_unknown_tag: bool,
    pub(super) said_unknown_op: bool,
    pub(super) said_bad_peer: bool,
    /// The last call stored, emptied, for the next call to fill.
    spare: Option<Box<MpiEvent>>,
    /// The chunk's words when its bytes are not 8-byte aligned.
    words: Vec<u64>,
}

/// The little-endian 64-bit words of `bytes` (a trailing partial word
/// dropped): the bytes themselves when they are 8-byte aligned on a
/// little-endian machine, else copied into `buf`.
fn words_of<'b>(bytes: &'b [u8], buf: &'b mut Vec<u64>) -> &'b [u64] {
    let whole = &bytes[..bytes.len() / 8 * 8];
    if cfg!(target_endian = "little") {
        // SAFETY: every bit pattern is a valid u64; `align_to` gives the
        // aligned middle only where the alignment allows it.
        let (head, middle, tail) = unsafe { whole.align_to::<u64>() };
        if head.is_empty() && tail.is_empty() {
            return middle;
        }
    }
    buf.clear();
    buf.extend(
        whole
            .chunks_exact(8)
            .map(|w| u64::from_le_bytes(w.try_into().unwrap_or([0; 8]))),
    );
    buf
}

impl ThreadDecoder {
    pub(super) fn new(tid: u32, clock: Option<ClockFit>) -> ThreadDecoder {
        ThreadDecoder {
            tid,
            time: 0,
            clock,
            last_site: None,
            open: None,
            said_unknown_tag: false,
            said_unknown_op: false,
            said_bad_peer: false,
            spare: None,
            words: Vec::new(),
        }
    }

    /// Keeps `ev` (stored in the columns already) for the next call.
    fn recycle(&mut self, ev: Box<MpiEvent>) {
        self.spare = Some(ev);
    }

    /// The current time as CLOCK_MONOTONIC ns of the rank.
    fn now_ns(&self) -> u64 {
        match &self.clock {
            Some(fit) => fit.to_ns(self.time),
            None => self.time,
        }
    }

    /// The number of ENTER records in a chunk's records (`bytes` as for
    /// [`ThreadDecoder::chunk`]): at least the events the chunk gives, so
    /// the rank's event list is reserved once at its final size instead
    /// of growing to up to twice it.
    pub(super) fn count_enters(bytes: &[u8]) -> usize {
        let mut count = 0;
        let mut words = bytes.chunks_exact(8);
        while let Some(w) = words.next() {
            let word = u64::from_le_bytes(w.try_into().unwrap_or([0; 8]));
            if word == 0 {
                break;
            }
            let hd = Head::decode(word);
            if hd.tag == f::REC_ENTER {
                count += 1;
            }
            // skip the payload (a record cut short ends the walk)
            let n = usize::from(hd.n);
            if n > 0 && words.nth(n - 1).is_none() {
                break;
            }
        }
        count
    }

    pub(super) fn chunk(
        &mut self,
        base: u64,
        bytes: &[u8],
        events: &mut MpiEvents,
        comms: &mut BTreeMap<u64, Vec<Option<u32>>>,
        damage: &mut Vec<String>,
    ) {
        self.time = base;
        self.last_site = None;
        let mut words = std::mem::take(&mut self.words);
        let view = words_of(bytes, &mut words);
        self.decode_words(view, events, comms, damage);
        self.words = words;
    }

    /// [`ThreadDecoder::chunk`] on the chunk's words.
    fn decode_words(
        &mut self,
        words: &[u64],
        events: &mut MpiEvents,
        comms: &mut BTreeMap<u64, Vec<Option<u32>>>,
        damage: &mut Vec<String>,
    ) {
        let mut i = 0usize;
        while i < words.len() {
            let word = words[i];
            if word == 0 {
                break; // end of this chunk's records
            }
            let hd = Head::decode(word);
            let n = usize::from(hd.n);
            if i + 1 + n > words.len() {
                damage.push(format!(
                    "thread {}: a record runs past the end of its chunk (corrupt); rest of the chunk skipped",
                    self.tid
                ));
                break;
            }
            let p = &words[i + 1..i + 1 + n];
            i += 1 + n;
            match hd.tag {
                f::REC_TIME => {
                    if let Some(&t) = p.first() {
                        self.time = t;
                    }
                }
                f::REC_ENTER => {
                    self.time = self.time.saturating_add(u64::from(hd.arg));
                    let code = hd.small & f::SMALL_OP_MASK;
                    let Some(op) = MpiOp::from_code(u16::from(code)) else {
                        if !self.said_unknown_op {
                            self.said_unknown_op = true;
                            damage.push(format!(
                                "thread {}: unknown MPI operation code {} (call skipped)",
                                self.tid, code
                            ));
                        }
                        continue;
                    };
                    if let Some(mut prev) = self.open.take() {
                        damage.push(format!(
                            "thread {}: {} entered at {} ns has no exit record before the next call",
                            self.tid,
                            prev.op.name(),
                            prev.enter_ns
                        ));
                        prev.exit_ns = prev.enter_ns;
                        events.push_ref(&prev.as_ref_parts());
                        self.recycle(prev);
                    }
                    // the compact form leaves out a repeated call site
                    let (site, rest) = if hd.small & f::SMALL_COMPACT != 0 {
                        let site = self.last_site.unwrap_or_else(|| {
                            damage.push(format!(
                                "thread {}: a compact call record without an earlier call site in its chunk (site unknown)",
                                self.tid
                            ));
                            0
                        });
                        (Some(site), p)
                    } else {
                        match p.split_first() {
                            Some((&site, rest)) => (Some(site), rest),
                            None => (None, p),
                        }
                    };
                    if let Some(site) = site {
                        self.last_site = Some(site);
                    }
                    let mut ev = self
                        .spare
                        .take()
                        .unwrap_or_else(|| Box::new(MpiEvent::new(op, self.tid)));
                    match site.map(|site| self.enter(&mut ev, op, site, rest)) {
                        Some(true) => self.open = Some(ev),
                        _ => {
                            self.recycle(ev);
                            damage.push(format!(
                                "thread {}: {} record too short (corrupt); call skipped",
                                self.tid,
                                op.name()
                            ))
                        }
                    }
                }
                f::REC_COMPLETION => {
                    let (Some(ev), [request, tag, bytes, ..]) = (self.open.as_mut(), p) else {
                        damage.push(format!(
                            "thread {}: a completion record outside any call (ignored)",
                            self.tid
                        ));
                        continue;
                    };
                    if hd.small & f::COMPL_PROBE != 0 {
                        ev.probed = Some(ProbedMessage {
                            source: (hd.small & f::COMPL_NO_SOURCE == 0).then_some(hd.arg),
                            tag: *tag as u32 as i32,
                            bytes: *bytes,
                        });
                        continue;
                    }
                    ev.completions.push(Completion {
                        request: *request,
                        kind: if hd.small & f::COMPL_COLLECTIVE != 0 {
                            CompletionKind::Collective
                        } else if hd.small & f::COMPL_RECV != 0 {
                            CompletionKind::Recv
                        } else {
                            CompletionKind::Send
                        },
                        source: (hd.small & f::COMPL_NO_SOURCE == 0).then_some(hd.arg),
                        tag: *tag as u32 as i32,
                        bytes: *bytes,
                        cancelled: hd.small & f::COMPL_CANCELLED != 0,
                    });
                }
                f::REC_START => {
                    let (Some(ev), [comm, request, tag, bytes, ..]) = (self.open.as_mut(), p)
                    else {
                        damage.push(format!(
                            "thread {}: a start record outside any call (ignored)",
                            self.tid
                        ));
                        continue;
                    };
                    let pr = hd.arg as i32;
                    let tag = *tag as u32 as i32;
                    let fl = hd.small;
                    let mode = if fl & f::START_RECV != 0 {
                        MpiOp::RecvInit
                    } else if fl & f::START_SYNC != 0 {
                        MpiOp::SsendInit
                    } else if fl & f::START_BUFFERED != 0 {
                        MpiOp::BsendInit
                    } else if fl & f::START_READY != 0 {
                        MpiOp::RsendInit
                    } else {
                        MpiOp::SendInit
                    };
                    let mut st = StartedRequest {
                        mode,
                        comm: *comm,
                        send: None,
                        recv: None,
                    };
                    if hd.small & f::START_RECV != 0 {
                        st.recv = Some(RecvPost {
                            source: peer(pr),
                            tag,
                            bytes: *bytes,
                            request: *request,
                        });
                    } else {
                        st.send = Some(SendPost {
                            dest: peer(pr),
                            tag,
                            bytes: *bytes,
                            request: *request,
                        });
                    }
                    ev.starts.push(st);
                    self.check_peer(pr);
                }
                f::REC_EXIT => {
                    self.time = self.time.saturating_add(u64::from(hd.arg));
                    let Some(mut ev) = self.open.take() else {
                        damage.push(format!(
                            "thread {}: an exit record without its enter record (ignored)",
                            self.tid
                        ));
                        continue;
                    };
                    if ev.op as u16 != u16::from(hd.small & f::SMALL_OP_MASK) {
                        damage.push(format!(
                            "thread {}: {} entered at {} ns exits as operation {} (corrupt)",
                            self.tid,
                            ev.op.name(),
                            ev.enter_ns,
                            hd.small & f::SMALL_OP_MASK
                        ));
                    }
                    ev.exit_ns = self.now_ns().max(ev.enter_ns);
                    let extra = if hd.small & f::SMALL_COMPACT != 0 {
                        ev.return_code = 0; // MPI_SUCCESS
                        p.first().copied()
                    } else {
                        if let Some(&rc) = p.first() {
                            ev.return_code = rc as u32 as i32;
                        }
                        p.get(1).copied()
                    };
                    match class_of(ev.op) {
                        Class::Send { blocking: false } => {
                            if let (Some(s), Some(id)) = (ev.send.as_mut(), extra) {
                                s.request = id;
                            }
                        }
                        Class::Recv { blocking: false } => {
                            if let (Some(r), Some(id)) = (ev.recv.as_mut(), extra) {
                                r.request = id;
                            }
                        }
                        Class::CommCreate => {
                            ev.created_comm = extra.filter(|&id| id != f::COMM_NULL_ID);
                        }
                        Class::Collective | Class::CommIdup
                            if ev.op.is_nonblocking_collective() || ev.op == MpiOp::CommIdup =>
                        {
                            ev.request = extra.unwrap_or(0);
                        }
                        _ => {}
                    }
                    events.push_ref(&ev.as_ref_parts());
                    self.recycle(ev);
                }
                f::REC_COMM => {
                    let [id, size_first, packed @ ..] = p else {
                        continue;
                    };
                    let size = (*size_first as u32) as usize;
                    let first = (*size_first >> 32) as usize;
                    let count = hd.arg as usize;
                    if size > 1 << 24
                        || first.saturating_add(count) > size
                        || packed.len() * 2 < count
                    {
                        damage.push(format!(
                            "thread {}: a communicator record is inconsistent (ignored)",
                            self.tid
                        ));
                        continue;
                    }
                    let members = comms.entry(*id).or_insert_with(|| vec![None; size]);
                    if members.len() != size {
                        damage.push(format!(
                            "communicator {id:#x} is recorded with two sizes ({} and {size})",
                            members.len()
                        ));
                        continue;
                    }
                    for k in 0..count {
                        let w = packed[k / 2];
                        let r = if k % 2 == 0 {
                            w as u32
                        } else {
                            (w >> 32) as u32
                        };
                        members[first + k] = Some(r);
                    }
                }
                _ => {
                    if !self.said_unknown_tag {
                        self.said_unknown_tag = true;
                        damage.push(format!(
                            "thread {}: records with unknown tag {} skipped",
                            self.tid, hd.tag
                        ));
                    }
                }
            }
        }
    }

    /// The event an ENTER record starts, at call site `site`, with `q`
    /// the record's payload after the site; `None` when it is short.
    /// Fills `ev` with the call `op` entered now at `site`, from the
    /// record's words `q` after the site; false when `q` is too short
    /// (corrupt).
    pub(super) fn enter(&mut self, ev: &mut MpiEvent, op: MpiOp, site: u64, q: &[u64]) -> bool {
        ev.op = op;
        ev.tid = self.tid;
        ev.enter_ns = self.now_ns();
        ev.exit_ns = ev.enter_ns;
        ev.site = site;
        ev.comm = crate::mpi::WORLD_COMM;
        ev.root = None;
        ev.coll_bytes_sent = 0;
        ev.coll_bytes_recv = 0;
        ev.send = None;
        ev.recv = None;
        ev.starts.clear();
        ev.completions.clear();
        ev.created_comm = None;
        ev.return_code = 0;
        ev.probed = None;
        ev.request = 0;
        match class_of(op) {
            Class::None | Class::WaitTest => {}
            Class::Send { blocking } => {
                let [comm, pt, bytes, ..] = q else {
                    return false;
                };
                let (dest, tag) = f::peer_tag(*pt);
                self.check_peer(dest);
                ev.comm = *comm;
                ev.send = Some(SendPost {
                    dest: peer(dest),
                    tag,
                    bytes: *bytes,
                    request: 0,
                });
                if blocking {
                    ev.completions.push(send_completion(dest, tag, *bytes));
                }
            }
            Class::Recv { .. } => {
                let [comm, pt, bytes, ..] = q else {
                    return false;
                };
                let (source, tag) = f::peer_tag(*pt);
                self.check_peer(source);
                ev.comm = *comm;
                ev.recv = Some(RecvPost {
                    source: peer(source),
                    tag,
                    bytes: *bytes,
                    request: 0,
                });
            }
            Class::SendRecv => {
                let [comm, spt, sbytes, rpt, rbytes, ..] = q else {
                    return false;
                };
                let (dest, stag) = f::peer_tag(*spt);
                let (source, rtag) = f::peer_tag(*rpt);
                self.check_peer(dest);
                self.check_peer(source);
                ev.comm = *comm;
                ev.send = Some(SendPost {
                    dest: peer(dest),
                    tag: stag,
                    bytes: *sbytes,
                    request: 0,
                });
                ev.recv = Some(RecvPost {
                    source: peer(source),
                    tag: rtag,
                    bytes: *rbytes,
                    request: 0,
                });
                ev.completions.push(send_completion(dest, stag, *sbytes));
            }
            Class::Probe => {
                let [comm, _pt, ..] = q else {
                    return false;
                };
                ev.comm = *comm;
            }
            Class::Collective => {
                let [comm, root, sent, recv, ..] = q else {
                    return false;
                };
                ev.comm = *comm;
                let root = *root as u32 as i32;
                ev.root = (root >= 0).then_some(root as u32);
                ev.coll_bytes_sent = *sent;
                ev.coll_bytes_recv = *recv;
            }
            Class::CommCreate | Class::CommFree | Class::CommIdup | Class::Abort => {
                let Some(&comm) = q.first() else {
                    return false;
                };
                ev.comm = comm;
            }
            Class::PersistentInit => {
                let [comm, _pt, _bytes, ..] = q else {
                    return false;
                };
                ev.comm = *comm;
            }
        }
        true
    }

    /// Remembers an untranslatable peer (reported once per thread).
    pub(super) fn check_peer(&mut self, v: i32) {
        if v == f::PEER_UNKNOWN {
            self.said_bad_peer = true;
        }
    }
}

pub(super) fn send_completion(dest: i32, tag: i32, bytes: u64) -> Completion {
    Completion {
        request: 0,
        kind: CompletionKind::Send,
        source: (dest >= 0).then_some(dest as u32),
        tag,
        bytes,
        cancelled: false,
    }
}

pub(super) fn u32_at(b: &[u8], off: usize) -> u32 {
    b.get(off..off + 4)
        .map(|s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
        .unwrap_or(0)
}
