//! The wait states of matched messages (late sender, late receiver,
//! blocking probes) and of collective instances (wait at barrier, wait at
//! N×N, late broadcast, early reduce, early scan), with the rank that
//! caused each (Geimer et al. 2009; docs/mpi-wait-states.md).

use std::collections::BTreeMap;

use rustc_hash::FxHashMap as HashMap;

use contend_trace::mpi::{MpiEventRef, MpiOp, MpiRankTrace, Peer, SELF_COMM};

use super::matching::{duration, event, World};
use super::{
    is_blocking_probe, is_test, CollectiveInstance, MatchStats, Message, Pattern, WaitState,
};

/// Per event of `t`: the index of the previous event of the same thread
/// (`None` for a thread's first call).
pub(super) fn previous_on_thread(t: &MpiRankTrace) -> Vec<Option<usize>> {
    let mut last: HashMap<u32, usize> = HashMap::default();
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
pub(super) fn finding_probe(
    rt: &MpiRankTrace,
    prev: &[Option<usize>],
    m: &Message,
) -> Option<usize> {
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
pub(super) fn p2p_waits(world: &World<'_>, messages: &[Message]) -> Vec<WaitState> {
    // (rank, completing event) → best (wait, pattern, cause, cause event)
    type Best = (u64, Pattern, u32, usize);
    let mut best: HashMap<(u32, usize), Best> = HashMap::default();
    let mut offer = |rank: u32, ev: usize, w: u64, p: Pattern, cause: u32, cause_ev: usize| {
        if w == 0 {
            return;
        }
        let slot = best.entry((rank, ev)).or_insert((0, p, cause, cause_ev));
        if w > slot.0 {
            *slot = (w, p, cause, cause_ev);
        }
    };
    // Per receiving rank with a blocking probe that found a message: the
    // previous event of each event's thread (built on first need).
    let mut prev: HashMap<u32, Option<Vec<Option<usize>>>> = HashMap::default();
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
                let p = rt.events.at(pi);
                let w = sp.enter_ns.min(p.exit_ns).saturating_sub(p.enter_ns);
                offer(m.dest, pi, w, Pattern::LateSender, m.source, m.send_post);
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
                    m.send_post,
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
                    m.recv_post,
                );
            }
        }
    }
    let mut out: Vec<WaitState> = best
        .into_iter()
        .map(
            |((rank, event), (wait_ns, pattern, cause, cause_event))| WaitState {
                pattern,
                rank,
                event,
                wait_ns,
                cause,
                cause_event: Some(cause_event),
            },
        )
        .collect();
    out.sort_by_key(|w| (w.rank, w.event));
    out
}

/// The collective wait states, instance by instance, and the instances
/// analysed. A nonblocking collective (`MPI_Iallreduce` …) arrives at its
/// posting call and waits in the call that completed it (`colls`): its
/// wait is measured there, from that call's entry, like the blocking
/// form's in the blocking call; a member whose request was completed by a
/// `Test*`, or never, has no wait.
pub(super) fn collective_waits(
    world: &World<'_>,
    colls: &super::matching::CollectiveCompletions,
    stats: &mut MatchStats,
    warnings: &mut Vec<String>,
) -> (Vec<WaitState>, Vec<CollectiveInstance>) {
    // Per communicator, per member rank: its collective calls in order.
    let mut calls: BTreeMap<u64, BTreeMap<u32, Vec<usize>>> = BTreeMap::new();
    for (ri, t) in world.rec.ranks.iter().enumerate() {
        if world.index.get(&t.rank) != Some(&ri) {
            continue;
        }
        let evs = &t.events;
        for ei in 0..evs.len() {
            let comm = evs.comm(ei);
            if evs.op(ei).is_collective() && comm != SELF_COMM {
                calls
                    .entry(comm)
                    .or_default()
                    .entry(t.rank)
                    .or_default()
                    .push(ei);
            }
        }
    }
    let mut out = Vec::new();
    let mut instances_out = Vec::new();
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
            let mut evs: Vec<(u32, MpiEventRef<'_>)> = Vec::with_capacity(members.len());
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
            let event_of = |r: u32| per_rank.get(&r).and_then(|v| v.get(k)).copied();
            // (posting call, the call its wait is spent in) per member
            let done_of = |r: u32| -> Option<usize> {
                let post = event_of(r)?;
                if !op.is_nonblocking_collective() {
                    return Some(post);
                }
                colls.get(*world.index.get(&r)?)?.get(&post).copied()
            };
            let members_ev: Vec<Member<'_>> = evs
                .iter()
                .map(|&(r, e)| Member {
                    rank: r,
                    arrive: e,
                    wait_in: done_of(r)
                        .and_then(|d| world.trace(r).and_then(|t| t.events.get(d)))
                        .filter(|w| !is_test(w.op)),
                })
                .collect();
            match instance_waits(pattern, &members_ev) {
                Ok(ws) => {
                    stats.collectives += 1;
                    for (rank, wait_ns, cause) in ws {
                        if wait_ns == 0 {
                            continue;
                        }
                        let Some(event) = done_of(rank) else {
                            continue;
                        };
                        out.push(WaitState {
                            pattern,
                            rank,
                            event,
                            wait_ns,
                            cause,
                            cause_event: event_of(cause),
                        });
                    }
                    instances_out.push(CollectiveInstance {
                        comm: *comm,
                        op,
                        events: members
                            .iter()
                            .filter_map(|&m| event_of(m).map(|e| (m, e)))
                            .collect(),
                        done: members
                            .iter()
                            .filter_map(|&m| event_of(m).map(|e| done_of(m).unwrap_or(e)))
                            .collect(),
                    });
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
    (out, instances_out)
}

/// One member of a collective instance: when it arrived (entered the
/// collective, or posted the nonblocking one) and the call its wait is
/// spent in (the collective itself, or the `Wait*` that completed the
/// nonblocking one; `None`: no wait possible).
pub(super) struct Member<'e> {
    pub(super) rank: u32,
    pub(super) arrive: MpiEventRef<'e>,
    pub(super) wait_in: Option<MpiEventRef<'e>>,
}

/// The waits of one collective instance: `(rank, wait_ns, cause)` per
/// member, members in local rank order; an error names why the instance
/// cannot be analysed (roots that disagree or are not members). A member
/// arriving at `arrive` waits for the late rank from the entry of its
/// `wait_in` call, clipped to that call (for a blocking collective the two
/// are the same call: docs/mpi-wait-states.md, "Collective patterns").
pub(super) fn instance_waits(
    pattern: Pattern,
    evs: &[Member<'_>],
) -> Result<Vec<(u32, u64, u32)>, String> {
    // the wait of member m for an arrival at `t`
    let wait_for = |m: &Member<'_>, t: u64| -> u64 {
        m.wait_in
            .map_or(0, |w| t.saturating_sub(w.enter_ns).min(duration(w)))
    };
    let arrivals = || evs.iter().map(|m| (m.rank, m.arrive));
    let all_wait_for = |last: (u32, MpiEventRef<'_>)| -> Vec<(u32, u64, u32)> {
        evs.iter()
            .map(|m| (m.rank, wait_for(m, last.1.enter_ns), last.0))
            .collect()
    };
    match pattern {
        Pattern::WaitAtBarrier => {
            let last = latest(arrivals()).ok_or("no members")?;
            Ok(all_wait_for(last))
        }
        Pattern::WaitAtNxN => {
            let contributors = arrivals().filter(|(_, e)| e.coll_bytes_sent > 0);
            let last = match latest(contributors) {
                Some(l) => l,
                None => latest(arrivals()).ok_or("no members")?,
            };
            Ok(all_wait_for(last))
        }
        Pattern::LateBroadcast | Pattern::EarlyReduce => {
            let pairs: Vec<(u32, MpiEventRef<'_>)> = arrivals().collect();
            let root = common_root(&pairs)?;
            let rm = evs
                .iter()
                .find(|m| m.rank == root)
                .ok_or_else(|| format!("root rank {root} is not a member"))?;
            if pattern == Pattern::LateBroadcast {
                Ok(evs
                    .iter()
                    .map(|m| {
                        let w = if m.rank == root {
                            0
                        } else {
                            wait_for(m, rm.arrive.enter_ns)
                        };
                        (m.rank, w, root)
                    })
                    .collect())
            } else {
                // The earliest non-root entry; ties go to the lowest local rank.
                let first = arrivals().filter(|(r, _)| *r != root).fold(
                    None::<(u32, MpiEventRef<'_>)>,
                    |acc, x| match acc {
                        Some(a) if a.1.enter_ns <= x.1.enter_ns => Some(a),
                        _ => Some(x),
                    },
                );
                Ok(match first {
                    Some((fr, fe)) => vec![(root, wait_for(rm, fe.enter_ns), fr)],
                    None => Vec::new(),
                })
            }
        }
        Pattern::EarlyScan => {
            let mut out = Vec::with_capacity(evs.len());
            let mut max: Option<(u32, MpiEventRef<'_>)> = None;
            for m in evs {
                match max {
                    Some(x) if x.1.enter_ns >= m.arrive.enter_ns => {}
                    _ => max = Some((m.rank, m.arrive)),
                }
                let (mr, me) = max.unwrap_or((m.rank, m.arrive));
                out.push((m.rank, wait_for(m, me.enter_ns), mr));
            }
            Ok(out)
        }
        Pattern::LateSender | Pattern::LateReceiver => Ok(Vec::new()),
    }
}

/// The latest entry of `set`; ties go to the first (lowest local rank).
pub(super) fn latest<'e>(
    set: impl Iterator<Item = (u32, MpiEventRef<'e>)>,
) -> Option<(u32, MpiEventRef<'e>)> {
    set.fold(None, |acc: Option<(u32, MpiEventRef<'_>)>, x| match acc {
        Some(a) if a.1.enter_ns >= x.1.enter_ns => Some(a),
        _ => Some(x),
    })
}

/// The root all members name, as a world rank.
pub(super) fn common_root(evs: &[(u32, MpiEventRef<'_>)]) -> Result<u32, String> {
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
