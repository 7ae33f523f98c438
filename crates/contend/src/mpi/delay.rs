//! Root causes of wait states: the delay analysis of Böhme, Geimer, Wolf
//! et al. ("Identifying the Root Causes of Wait States in Large-Scale
//! Parallel Applications", ICPP 2010; ACM TOPC 3(2), 2016), on the
//! regions of [`super::timeline`].
//!
//! A wait state W (rank w waited `ω(W)` ns for rank d, which was late at its
//! call `e_d`) has a **synchronisation interval** on each of the two ranks:
//! from the end of their previous synchronisation (the latest message
//! between them, either way, or collective instance they both took part
//! in, before W's calls; the end of `MPI_Init` when there is none) to the
//! entry of W's call on w and of `e_d` on d. Within it, `t_p(r)` is the
//! time rank p spent in region r outside wait states and `ω_p` the waiting
//! time of p's wait states.
//!
//! * **Delay** (TOPC 2016, Section 3.2): the excess time of the delaying
//!   rank per region, `δ(r) = max(0, t_d(r) − t_w(r))`, and its excess
//!   waiting `δ_ω = max(0, ω_d − ω_w)`. The total `Δ = Σ_r δ(r) + δ_ω`.
//! * **Costs** (Section 3.3). W's waiting time is distributed over what
//!   made d late, in proportion: region r of d gets the **short-term
//!   cost** `ω(W) · δ(r)/Δ` (the waiting it caused directly). W itself
//!   carries `R(W)`, the waiting of later wait states it caused by
//!   propagation (computed first: the analysis replays the wait states
//!   backward in time, by the instant each wait ends); region r gets the
//!   **long-term cost** `R(W) · δ(r)/Δ`. The rest, `(ω(W) + R(W)) · δ_ω/Δ`,
//!   is waiting that d passed on: it is added to `R(W')` of d's wait states
//!   W' in the interval, in proportion to their waits. Those W' are
//!   **propagating** wait states; `ω(W) · δ_ω/Δ` of W is **indirect**
//!   waiting, the rest direct.
//! * So every nanosecond of waiting ends up as a cost of some region of
//!   some rank: Σ short-term + Σ long-term = Σ ω over the wait states
//!   whose causing rank has a trace.
//! * **Root cause of a wait state**: the region with the largest delay
//!   when W is mostly direct (`Σ δ(r) ≥ δ_ω`); otherwise the root cause
//!   of the longest wait state W' of d in the interval (followed back
//!   until a direct one).
//!
//! When `Δ = 0` (the late rank spent no more time than the waiting one in
//! the interval: the intervals did not start together) the whole cost
//! goes to the computation right before the late call. The costs are
//! computed in `f64` and rounded to ns for the report. Runs in
//! O(wait states × events per synchronisation interval).

use contend_trace::mpi::MpiOp;
use rustc_hash::FxHashMap;
use serde::Serialize;

use super::analysis::MpiAnalysis;
use super::timeline::{Region, RegionSums, Timeline, NO_SITE};

/// The wait states ready to be replayed, as their places in the order by
/// the instant each wait ends, latest first ([`delay_analysis`]): a bit
/// per place, and the first word that may hold one.
struct ReadyPlaces {
    words: Vec<u64>,
    first: usize,
}

impl ReadyPlaces {
    /// `n` places, none marked.
    fn new(n: usize) -> ReadyPlaces {
        ReadyPlaces {
            words: vec![0; n.div_ceil(64)],
            first: usize::MAX,
        }
    }

    /// Marks place `p` (< `n`).
    fn mark(&mut self, p: usize) {
        self.words[p / 64] |= 1 << (p % 64);
        self.first = self.first.min(p / 64);
    }

    /// Unmarks and returns the first marked place, if any.
    fn take_first(&mut self) -> Option<usize> {
        while let Some(&w) = self.words.get(self.first) {
            if w != 0 {
                let p = self.first * 64 + w.trailing_zeros() as usize;
                self.words[self.first] = w & (w - 1);
                return Some(p);
            }
            self.first += 1;
        }
        self.first = usize::MAX;
        None
    }
}

/// The delay analysis of every counted wait state ([`delay_analysis`]).
#[derive(Debug, Clone, Default)]
pub struct DelayAnalysis {
    /// Per (world rank, region) with a cost: its short-term and long-term
    /// cost, ns, most total cost first.
    pub costs: Vec<DelayCost>,
    /// Per counted wait state (indexed like [`Timeline::waits`]).
    pub waits: Vec<WaitCause>,
    /// Waiting whose causing rank has no trace (or no causing call), ns:
    /// not attributed to any delay.
    pub unattributed_ns: f64,
}

/// The cost of the delays of one rank in one region.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DelayCost {
    /// World rank that was late.
    pub rank: u32,
    /// Where its excess time was spent.
    pub region: Region,
    /// Waiting it caused directly, ns (TOPC 2016: short-term delay cost).
    pub short_term_ns: f64,
    /// Waiting it caused through propagation, ns (long-term delay cost).
    pub long_term_ns: f64,
}

/// What the delay analysis found for one wait state.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct WaitCause {
    /// Of its waiting time, the part caused by delays of the causing rank
    /// (outside wait states), ns.
    pub direct_ns: f64,
    /// The part caused by wait states of the causing rank (propagated), ns.
    pub indirect_ns: f64,
    /// Waiting of later wait states it caused by propagation, ns (`R(W)`):
    /// the wait state is *propagating* when this is above 0.
    pub propagated_ns: f64,
    /// Its root cause: the rank and region of the delay it comes from;
    /// `None` when the causing rank has no trace.
    pub root: Option<(u32, Region)>,
    /// The start of the synchronisation interval: the previous call of
    /// the waiting rank and of the causing rank that synchronised them
    /// (event indices; `None`: the start of the trace).
    pub interval_from: (Option<usize>, Option<usize>),
}

/// A previous synchronisation between two ranks.
#[derive(Clone, Copy)]
enum SyncPeer {
    /// A message with `peer`, whose call there was `peer_ev`.
    Message { peer: u32, peer_ev: usize },
    /// Collective instance `inst` of `analysis.collectives`.
    Collective { comm: u64, inst: usize },
}

/// For every counted wait state: the calls of its waiting and of its
/// causing rank that ended their previous synchronisation (see the module
/// docs), found in one forward sweep per rank.
fn previous_syncs(
    tl: &Timeline<'_>,
    analysis: &MpiAnalysis,
) -> Vec<(Option<usize>, Option<usize>)> {
    let n_ranks = tl.rec.ranks.len();
    let mut syncs: Vec<Vec<(usize, SyncPeer)>> = vec![Vec::new(); n_ranks];
    for m in &analysis.messages {
        let recv_ev = m.recv_complete.unwrap_or(m.recv_post);
        if let Some(&ri) = tl.index.get(&m.source) {
            syncs[ri].push((
                m.send_post,
                SyncPeer::Message {
                    peer: m.dest,
                    peer_ev: recv_ev,
                },
            ));
        }
        if let Some(&ri) = tl.index.get(&m.dest) {
            syncs[ri].push((
                recv_ev,
                SyncPeer::Message {
                    peer: m.source,
                    peer_ev: m.send_post,
                },
            ));
        }
    }
    // Member → local rank per communicator, from its instances.
    let mut local: FxHashMap<u64, FxHashMap<u32, usize>> = FxHashMap::default();
    for (k, inst) in analysis.collectives.iter().enumerate() {
        let map = local.entry(inst.comm).or_default();
        for (li, &(r, _)) in inst.events.iter().enumerate() {
            let ev = inst.done.get(li).copied().unwrap_or(inst.events[li].1);
            map.entry(r).or_insert(li);
            if let Some(&ri) = tl.index.get(&r) {
                syncs[ri].push((
                    ev,
                    SyncPeer::Collective {
                        comm: inst.comm,
                        inst: k,
                    },
                ));
            }
        }
    }
    let mut waits_of: Vec<Vec<usize>> = vec![Vec::new(); n_ranks];
    for (i, w) in tl.waits.iter().enumerate() {
        if let Some(&ri) = tl.index.get(&w.rank) {
            waits_of[ri].push(i);
        }
    }
    let mut out = vec![(None, None); tl.waits.len()];
    for ri in 0..n_ranks {
        if waits_of[ri].is_empty() {
            continue;
        }
        let s = &mut syncs[ri];
        s.sort_by_key(|x| x.0);
        let ws = &mut waits_of[ri];
        ws.sort_by_key(|&i| tl.waits[i].event);
        let mut last_msg: FxHashMap<u32, (usize, usize)> = FxHashMap::default();
        let mut last_coll: FxHashMap<u64, (usize, usize)> = FxHashMap::default();
        let mut j = 0;
        for &wi in ws.iter() {
            let w = &tl.waits[wi];
            while j < s.len() && s[j].0 < w.event {
                match s[j].1 {
                    SyncPeer::Message { peer, peer_ev } => {
                        last_msg.insert(peer, (s[j].0, peer_ev));
                    }
                    SyncPeer::Collective { comm, inst } => {
                        last_coll.insert(comm, (s[j].0, inst));
                    }
                }
                j += 1;
            }
            let Some(e_d) = w.cause_event else {
                continue;
            };
            let mut best: Option<(usize, usize)> =
                last_msg.get(&w.cause).copied().filter(|&(_, pe)| pe < e_d);
            for (comm, &(ev, inst)) in &last_coll {
                let Some(&li) = local.get(comm).and_then(|m| m.get(&w.cause)) else {
                    continue;
                };
                let Some(&pe) = analysis.collectives[inst].done.get(li) else {
                    continue;
                };
                if pe < e_d && best.is_none_or(|b| ev > b.0) {
                    best = Some((ev, pe));
                }
            }
            out[wi] = match best {
                Some((a, b)) => (Some(a), Some(b)),
                None => (None, None),
            };
        }
    }
    out
}

/// The start of a synchronisation interval without a previous
/// synchronisation: after `MPI_Init` when the rank's first call is it
/// (and lies before `until`), else the rank's first call.
fn trace_start(tl: &Timeline<'_>, ri: usize, until: usize) -> Option<usize> {
    match tl.events(ri).first() {
        Some(e) if matches!(e.op, MpiOp::Init | MpiOp::InitThread) && until > 0 => Some(0),
        _ => None,
    }
}

/// The delay analysis of every wait state of `tl` (see the module docs).
pub fn delay_analysis(tl: &Timeline<'_>, analysis: &MpiAnalysis) -> DelayAnalysis {
    let n = tl.waits.len();
    let prev = previous_syncs(tl, analysis);
    let mut out = DelayAnalysis {
        waits: vec![WaitCause::default(); n],
        ..DelayAnalysis::default()
    };
    // The synchronisation intervals, and which wait states of the late
    // rank lie in each: W must be replayed before them (it may pass
    // waiting on to them).
    let cause_of = |i: usize| -> Option<(usize, usize)> {
        let w = &tl.waits[i];
        let di = *tl.index.get(&w.cause)?;
        let e_d = w.cause_event?;
        (e_d < tl.events(di).len() && tl.index.contains_key(&w.rank)).then_some((di, e_d))
    };
    let intervals: Vec<(Option<usize>, Option<usize>)> = (0..n)
        .map(|i| {
            let Some((di, e_d)) = cause_of(i) else {
                return (None, None);
            };
            let w = &tl.waits[i];
            match prev[i] {
                (Some(a), Some(b)) => (Some(a), Some(b)),
                _ => (
                    trace_start(tl, tl.index[&w.rank], w.event),
                    trace_start(tl, di, e_d),
                ),
            }
        })
        .collect();
    let mut indegree = vec![0u32; n];
    let mut feeds: Vec<Vec<u32>> = vec![Vec::new(); n];
    for i in 0..n {
        let Some((di, e_d)) = cause_of(i) else {
            continue;
        };
        let from = intervals[i].1.map_or(0, |a| a + 1);
        // the causing rank's wait states in calls from..e_d
        let list = tl.wait_list(di);
        let a = list.partition_point(|&(e, _)| (e as usize) < from);
        let b = list.partition_point(|&(e, _)| (e as usize) < e_d);
        for &(_, k) in list.get(a..b).unwrap_or(&[]) {
            feeds[i].push(k);
            indegree[k as usize] += 1;
        }
    }
    // Backward replay in dependency order; among the ready ones, by the
    // instant each wait ends, latest first (a cycle, from clocks out of
    // step, is broken the same way).
    let end = |i: usize| {
        let w = &tl.waits[i];
        match tl.index.get(&w.rank) {
            Some(&ri) => tl.events(ri).enter_ns(w.event) + w.wait_ns,
            None => 0,
        }
    };
    // each wait state's key read once (its call's entry lies in another
    // part of memory for every wait state), not at every comparison
    let keys: Vec<(u64, u32, usize, usize)> = (0..n)
        .map(|i| (end(i), tl.waits[i].rank, tl.waits[i].event, i))
        .collect();
    let key = |i: usize| keys[i];
    let mut by_end: Vec<usize> = (0..n).collect();
    by_end.sort_unstable_by_key(|&i| std::cmp::Reverse(key(i)));
    // The ready wait states as their places in `by_end` (the keys are
    // distinct: the first place is the latest key), so the next one is
    // the first place marked: a word of 64 at a time instead of a heap.
    let mut place = vec![0u32; n];
    for (p, &i) in by_end.iter().enumerate() {
        place[i] = p as u32;
    }
    let mut ready = ReadyPlaces::new(n);
    for i in (0..n).filter(|&i| indegree[i] == 0) {
        ready.mark(place[i] as usize);
    }
    let mut next_any = 0;
    let mut order: Vec<usize> = Vec::with_capacity(n);
    let mut done = vec![false; n];
    let mut carried = vec![0f64; n];
    // Per wait state, the longest wait state of the causing rank it passed
    // waiting on to, when that is where most of it came from.
    let mut follow: Vec<Option<usize>> = vec![None; n];
    let mut costs: FxHashMap<(u32, Region), (f64, f64)> = FxHashMap::default();
    let mut td = RegionSums::default();
    let mut tw = RegionSums::default();
    let mut waits_d: Vec<(usize, u64)> = Vec::new();
    while order.len() < n {
        // (a place is marked only while its wait state is not replayed,
        // and at most once: no check for one replayed already)
        let i = match ready.take_first() {
            Some(p) => by_end[p],
            None => {
                while next_any < n && done[by_end[next_any]] {
                    next_any += 1;
                }
                match by_end.get(next_any) {
                    Some(&i) => i,
                    None => break,
                }
            }
        };
        done[i] = true;
        order.push(i);
        for &k in &feeds[i] {
            let k = k as usize;
            indegree[k] = indegree[k].saturating_sub(1);
            if indegree[k] == 0 && !done[k] {
                ready.mark(place[k] as usize);
            }
        }
        let w = tl.waits[i];
        let omega = w.wait_ns as f64;
        let r_w = carried[i];
        let Some((di, e_d)) = cause_of(i) else {
            out.unattributed_ns += omega + r_w;
            out.waits[i].direct_ns = omega;
            continue;
        };
        let wi = tl.index[&w.rank];
        let (a_w, a_d) = intervals[i];
        out.waits[i].interval_from = (a_w, a_d);
        td.clear();
        tw.clear();
        waits_d.clear();
        let mut omega_d = 0u64;
        let mut in_d: Vec<(usize, u64)> = Vec::new();
        tl.walk(
            di,
            a_d,
            Some(e_d),
            |r, ns| td.add(r, ns),
            |ev, ns| in_d.push((ev, ns)),
        );
        for (ev, ns) in in_d {
            match tl.wait_index(di, ev) {
                Some(k) if !done[k] => {
                    waits_d.push((k, ns));
                    omega_d += ns;
                }
                // Already replayed (clocks out of order): its waiting
                // counts as time in the call.
                _ => td.add(Region::Call(tl.site(di, ev)), ns),
            }
        }
        let mut omega_w = 0u64;
        tl.walk(
            wi,
            a_w,
            Some(w.event),
            |r, ns| tw.add(r, ns),
            |_, ns| omega_w += ns,
        );
        let mut delays: Vec<(Region, u64)> = td
            .iter()
            .filter_map(|(r, t)| {
                let d = t.saturating_sub(tw.get(r));
                (d > 0).then_some((r, d))
            })
            .collect();
        delays.sort_unstable_by_key(|&(r, _)| r);
        let delta_omega = omega_d.saturating_sub(omega_w);
        let sum_delays: u64 = delays.iter().map(|d| d.1).sum();
        let total = (sum_delays + delta_omega) as f64;
        if total == 0.0 {
            // Nothing late inside the interval: the computation before the
            // late call.
            let before = if e_d > 0 {
                tl.site(di, e_d - 1)
            } else {
                NO_SITE
            };
            let r = Region::Compute(before, tl.site(di, e_d));
            let c = costs.entry((w.cause, r)).or_default();
            c.0 += omega;
            c.1 += r_w;
            out.waits[i].direct_ns = omega;
            out.waits[i].root = Some((w.cause, r));
            continue;
        }
        for &(r, d) in &delays {
            let share = d as f64 / total;
            let c = costs.entry((w.cause, r)).or_default();
            c.0 += omega * share;
            c.1 += r_w * share;
        }
        let indirect_share = delta_omega as f64 / total;
        out.waits[i].direct_ns = omega * (1.0 - indirect_share);
        out.waits[i].indirect_ns = omega * indirect_share;
        if delta_omega > 0 && omega_d > 0 {
            let passed = (omega + r_w) * indirect_share;
            for &(k, ns) in &waits_d {
                carried[k] += passed * ns as f64 / omega_d as f64;
            }
        }
        if sum_delays >= delta_omega {
            let &(r, _) = delays
                .iter()
                .max_by_key(|&&(r, d)| (d, std::cmp::Reverse(r)))
                .unwrap_or(&(Region::Compute(NO_SITE, tl.site(di, e_d)), 0));
            out.waits[i].root = Some((w.cause, r));
        } else {
            follow[i] = waits_d
                .iter()
                .max_by_key(|&&(k, ns)| (ns, std::cmp::Reverse(k)))
                .map(|&(k, _)| k);
        }
    }
    for (i, c) in carried.iter().enumerate() {
        out.waits[i].propagated_ns = *c;
    }
    // Forward: a wait state passed on follows the root of the one it
    // came from (replayed later, so earlier in time).
    for &i in order.iter().rev() {
        if let Some(k) = follow[i] {
            out.waits[i].root = out.waits[k].root;
        }
    }
    out.costs = costs
        .into_iter()
        .map(|((rank, region), (s, l))| DelayCost {
            rank,
            region,
            short_term_ns: s,
            long_term_ns: l,
        })
        .collect();
    out.costs.sort_by(|a, b| {
        (b.short_term_ns + b.long_term_ns)
            .total_cmp(&(a.short_term_ns + a.long_term_ns))
            .then(a.rank.cmp(&b.rank))
            .then(a.region.cmp(&b.region))
    });
    out
}

/// One region named for the report: an MPI call site or the computation
/// between two of them (see [`super::timeline::Region`]).
#[derive(Debug, Clone, Serialize, Default, PartialEq)]
pub struct MpiRegionName {
    /// `mpi` (time inside an MPI call outside its wait state) or
    /// `computation` (between two MPI calls).
    pub kind: String,
    /// The full name: `MPI_Recv at main (app.c:40)` or `computation after
    /// MPI_Recv at main (app.c:40) before MPI_Send at main (app.c:52)`.
    pub region: String,
    /// For `mpi`: the MPI function; for `computation`: the call it ends
    /// at (`MPI_Send`).
    pub operation: String,
    /// For `mpi`: the call site; for `computation`: the site of the call it
    /// ends at.
    pub site: String,
    /// For `computation`: the call it follows (`MPI_Recv at main
    /// (app.c:40)`, or `start` at the beginning of the trace); empty for
    /// `mpi`.
    pub after: String,
}

impl MpiRegionName {
    /// The name of `r` in `tl`'s site table.
    pub fn of(tl: &Timeline<'_>, r: Region) -> MpiRegionName {
        let site = |id: u32| match tl.sites.sites.get(id as usize) {
            Some((op, s)) => (op.name().to_string(), s.display.clone()),
            None => (String::new(), "end".to_string()),
        };
        match r {
            Region::Call(s) => {
                let (operation, site) = site(s);
                MpiRegionName {
                    kind: "mpi".into(),
                    region: tl.sites.region_name(r),
                    operation,
                    site,
                    after: String::new(),
                }
            }
            Region::Compute(a, b) => {
                let (operation, site) = site(b);
                MpiRegionName {
                    kind: "computation".into(),
                    region: tl.sites.region_name(r),
                    operation,
                    site,
                    after: tl.sites.call_name(a),
                }
            }
        }
    }
}

/// The delay costs of one rank (JSON `mpi.delay.by_rank[]`).
#[derive(Debug, Clone, Serialize, Default, PartialEq)]
pub struct MpiDelayRankRow {
    /// World rank.
    pub rank: u32,
    /// Waiting its delays caused directly, ns.
    pub short_term_ns: u64,
    /// Waiting its delays caused through propagation, ns.
    pub long_term_ns: u64,
    /// `short_term_ns + long_term_ns`.
    pub cost_ns: u64,
    /// `cost_ns` over all waiting attributed, a fraction.
    pub share: f64,
    /// Wait states whose root cause lies on this rank.
    pub root_of: u64,
}

/// The delay costs of one region, over all ranks or of one rank (JSON
/// `mpi.delay.by_region[]`, `mpi.delay.by_rank_region[]`).
#[derive(Debug, Clone, Serialize, Default, PartialEq)]
pub struct MpiDelayRegionRow {
    /// World rank (`by_rank_region`), `None` over all ranks.
    pub rank: Option<u32>,
    /// The region.
    #[serde(flatten)]
    pub name: MpiRegionName,
    /// Waiting caused directly, ns.
    pub short_term_ns: u64,
    /// Waiting caused through propagation, ns.
    pub long_term_ns: u64,
    /// `short_term_ns + long_term_ns`.
    pub cost_ns: u64,
    /// `cost_ns` over all waiting attributed, a fraction.
    pub share: f64,
    /// Ranks with a delay cost here (`by_region`); 1 for `by_rank_region`.
    pub ranks: u32,
}

/// One of the longest wait states with its cause and root cause (JSON
/// `mpi.delay.wait_states[]`).
#[derive(Debug, Clone, Serialize, Default, PartialEq)]
pub struct MpiRootCauseRow {
    /// World rank that waited.
    pub rank: u32,
    /// Its call: `MPI_Recv at main (app.c:40)`.
    pub call: String,
    /// The pattern (`late_sender`, …).
    pub pattern: String,
    /// When the call was entered, ns on the common time line.
    pub enter_ns: u64,
    /// The wait, ns.
    pub wait_ns: u64,
    /// The rank it waited for directly (the late rank).
    pub cause: u32,
    /// Of the wait, the part the late rank's own wait states passed on
    /// (propagation), ns.
    pub indirect_ns: u64,
    /// Waiting of later wait states this one caused, ns.
    pub propagated_ns: u64,
    /// The rank of its root cause.
    pub root_rank: Option<u32>,
    /// The region of its root cause.
    pub root: Option<MpiRegionName>,
}

/// The delay analysis in the report (JSON `mpi.delay`; docs/json.md,
/// docs/mpi-wait-states.md "Root causes").
#[derive(Debug, Clone, Serialize, Default, PartialEq)]
pub struct MpiDelayReport {
    /// Σ waiting of the counted wait states, ns.
    pub wait_ns: u64,
    /// Σ short-term costs, ns: waiting caused directly by delays.
    pub short_term_ns: u64,
    /// Σ long-term costs, ns: waiting caused by propagation (equal to the
    /// indirect waiting of all wait states).
    pub long_term_ns: u64,
    /// Waiting for ranks without a trace, ns (no delay to attribute it to).
    pub unattributed_ns: u64,
    /// Wait states that caused later wait states (propagating).
    pub propagating_wait_states: u64,
    /// Wait states caused more by the late rank's own waiting than by its
    /// delays (indirect).
    pub indirect_wait_states: u64,
    /// Per rank with a cost or a wait state rooted there, most cost first.
    pub by_rank: Vec<MpiDelayRankRow>,
    /// Per region over all ranks, most cost first.
    pub by_region: Vec<MpiDelayRegionRow>,
    /// Per rank and region, most cost first.
    pub by_rank_region: Vec<MpiDelayRegionRow>,
    /// The longest wait states, longest first, with their root causes: at
    /// most [`ROOT_CAUSE_ROWS`] by default, every one with
    /// `contend report --root-causes all` (a number N lists N;
    /// [`super::MpiOptions::root_cause_rows`]).
    pub wait_states: Vec<MpiRootCauseRow>,
    /// How many wait states there are (the length of `wait_states` when
    /// none was left out); rows of ranks without a trace are never listed.
    pub wait_states_total: u64,
    /// True when `wait_states` lists fewer wait states than
    /// `wait_states_total` (cut at the row limit).
    pub wait_states_truncated: bool,
}

/// How many wait states `mpi.delay.wait_states` lists by default
/// (`--root-causes` changes it).
pub const ROOT_CAUSE_ROWS: usize = 20;

fn ns(x: f64) -> u64 {
    x.round().max(0.0) as u64
}

/// The report of `d`, computed on `tl`, listing the [`ROOT_CAUSE_ROWS`]
/// longest wait states.
pub fn delay_report(tl: &Timeline<'_>, d: &DelayAnalysis) -> MpiDelayReport {
    delay_report_rows(tl, d, ROOT_CAUSE_ROWS)
}

/// [`delay_report`] listing the `max_rows` longest wait states
/// (`usize::MAX`: every one) in `wait_states`; `wait_states_total` counts
/// them all and `wait_states_truncated` says whether some were left out.
pub fn delay_report_rows(tl: &Timeline<'_>, d: &DelayAnalysis, max_rows: usize) -> MpiDelayReport {
    let mut r = MpiDelayReport {
        wait_ns: tl.waits.iter().map(|w| w.wait_ns).sum(),
        unattributed_ns: ns(d.unattributed_ns),
        ..MpiDelayReport::default()
    };
    let (mut short, mut long) = (0f64, 0f64);
    let mut by_rank: FxHashMap<u32, (f64, f64, u64)> = FxHashMap::default();
    let mut by_region: FxHashMap<Region, (f64, f64, u32)> = FxHashMap::default();
    for c in &d.costs {
        short += c.short_term_ns;
        long += c.long_term_ns;
        let e = by_rank.entry(c.rank).or_default();
        e.0 += c.short_term_ns;
        e.1 += c.long_term_ns;
        let e = by_region.entry(c.region).or_default();
        e.0 += c.short_term_ns;
        e.1 += c.long_term_ns;
        e.2 += 1;
    }
    for w in &d.waits {
        if w.propagated_ns > 0.5 {
            r.propagating_wait_states += 1;
        }
        if w.indirect_ns > w.direct_ns {
            r.indirect_wait_states += 1;
        }
        if let Some((rank, _)) = w.root {
            by_rank.entry(rank).or_default().2 += 1;
        }
    }
    r.short_term_ns = ns(short);
    r.long_term_ns = ns(long);
    let all = short + long;
    let share = |c: f64| if all > 0.0 { c / all } else { 0.0 };
    r.by_rank = by_rank
        .into_iter()
        .map(|(rank, (s, l, n))| MpiDelayRankRow {
            rank,
            short_term_ns: ns(s),
            long_term_ns: ns(l),
            cost_ns: ns(s + l),
            share: share(s + l),
            root_of: n,
        })
        .collect();
    r.by_rank
        .sort_by(|a, b| b.cost_ns.cmp(&a.cost_ns).then(a.rank.cmp(&b.rank)));
    let mut regions: Vec<(Region, (f64, f64, u32))> = by_region.into_iter().collect();
    regions.sort_by(|a, b| {
        (b.1 .0 + b.1 .1)
            .total_cmp(&(a.1 .0 + a.1 .1))
            .then(a.0.cmp(&b.0))
    });
    r.by_region = regions
        .into_iter()
        .filter(|(reg, _)| tl.keeps_region(*reg))
        .map(|(reg, (s, l, n))| MpiDelayRegionRow {
            rank: None,
            name: MpiRegionName::of(tl, reg),
            short_term_ns: ns(s),
            long_term_ns: ns(l),
            cost_ns: ns(s + l),
            share: share(s + l),
            ranks: n,
        })
        .collect();
    r.by_rank_region = d
        .costs
        .iter()
        .filter(|c| tl.keeps_region(c.region))
        .map(|c| MpiDelayRegionRow {
            rank: Some(c.rank),
            name: MpiRegionName::of(tl, c.region),
            short_term_ns: ns(c.short_term_ns),
            long_term_ns: ns(c.long_term_ns),
            cost_ns: ns(c.short_term_ns + c.long_term_ns),
            share: share(c.short_term_ns + c.long_term_ns),
            ranks: 1,
        })
        .collect();
    let mut longest: Vec<usize> = (0..tl.waits.len()).collect();
    longest.sort_by_key(|&i| {
        let w = &tl.waits[i];
        (std::cmp::Reverse(w.wait_ns), w.rank, w.event)
    });
    r.wait_states_total = longest.len() as u64;
    r.wait_states_truncated = longest.len() > max_rows;
    longest.truncate(max_rows);
    r.wait_states = longest
        .into_iter()
        .filter_map(|i| {
            let w = &tl.waits[i];
            let ri = *tl.index.get(&w.rank)?;
            let e = tl.events(ri).get(w.event)?;
            let c = &d.waits[i];
            Some(MpiRootCauseRow {
                rank: w.rank,
                call: tl.sites.call_name(tl.site(ri, w.event)),
                pattern: w.pattern.key().to_string(),
                enter_ns: e.enter_ns,
                wait_ns: w.wait_ns,
                cause: w.cause,
                indirect_ns: ns(c.indirect_ns),
                propagated_ns: ns(c.propagated_ns),
                root_rank: c.root.map(|r| r.0),
                root: c.root.map(|(_, reg)| MpiRegionName::of(tl, reg)),
            })
        })
        .collect();
    r
}

#[cfg(test)]
mod tests {
    use super::ReadyPlaces;
    use std::collections::BTreeSet;

    #[test]
    fn ready_places_give_the_first_marked_place_as_a_sorted_set_does() {
        let mut rng = crate::TestRng(0x9e37_79b9_7f4a_7c15);
        for n in [0usize, 1, 2, 63, 64, 65, 200, 1000] {
            let mut ready = ReadyPlaces::new(n);
            let mut want: BTreeSet<usize> = BTreeSet::new();
            assert_eq!(ready.take_first(), None, "{n}");
            for _ in 0..4 * n {
                // marks (some again, some below the first marked) and takes
                // mixed, as the replay does
                if n > 0 && rng.below(3) != 0 {
                    let p = rng.below(n as u64) as usize;
                    ready.mark(p);
                    want.insert(p);
                } else {
                    let first = want.iter().next().copied();
                    if let Some(p) = first {
                        want.remove(&p);
                    }
                    assert_eq!(ready.take_first(), first, "{n}");
                }
            }
            while let Some(p) = want.iter().next().copied() {
                want.remove(&p);
                assert_eq!(ready.take_first(), Some(p), "{n}");
            }
            assert_eq!(ready.take_first(), None, "{n}");
        }
    }
}
