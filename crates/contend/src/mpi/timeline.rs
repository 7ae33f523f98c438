//! Where each rank's time goes: its time line cut into **regions**, the
//! MPI calls (outside their wait states) and the computation between
//! them, shared by the delay analysis ([`super::delay`]) and the cross-rank
//! critical path ([`mod@super::critical_path`]).
//!
//! Scalasca's analyses compare the time ranks spend in each *call path*
//! (Böhme et al., TOPC 2016, Section 3.2; IPDPS 2012, Section III). The
//! recorder sees only MPI calls, so a call path here is one of:
//!
//! * [`Region::Call`]: the time inside an MPI call at one call site (MPI
//!   function and return address resolved to the user's source), minus the
//!   wait state counted in it;
//! * [`Region::Compute`]: the time between two consecutive MPI calls of the
//!   rank, named by the call it follows and the call it precedes ("after
//!   `MPI_Recv` at halo.c:40, before `MPI_Send` at halo.c:52"): the
//!   computation interval of the program between those two lines.
//!
//! Call sites are identified across ranks by where they resolve (module,
//! function, file:line and MPI function), not by address, so the same line
//! of a program run as several processes (with address-space layout
//! randomisation) is one site ([`SiteTable`]).
//!
//! Wait states (`WaitState`, after the thresholds) always lie at the start
//! of the call they are counted in: `[enter, enter + wait]` (every pattern
//! waits from its call's entry for a later event of another rank; see
//! docs/mpi-wait-states.md).

use std::collections::HashMap;

use contend_trace::mpi::{MpiEvents, MpiOp, MpiRecording};
use rustc_hash::{FxHashMap, FxHashSet};

use super::analysis::{MpiAnalysis, WaitState};
use super::report::{MpiOptions, SiteResolver};
use crate::symbols::ResolvedSite;

/// "No call site": the start of a rank's trace as the first end of a
/// computation region.
pub const NO_SITE: u32 = u32::MAX;

/// A region of a rank's time line (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Region {
    /// Inside an MPI call at site id `.0` ([`SiteTable`]), outside the
    /// call's wait state.
    Call(u32),
    /// Computing after the call at site `.0` ([`NO_SITE`]: the start of the
    /// trace) until the call at site `.1`.
    Compute(u32, u32),
}

/// Time per [`Region`], ns, summed in dense tables instead of a hash map
/// (the delay analysis and the critical path add to one for every call
/// they walk): calls by site id, computations by the site they follow and
/// then a short list of the sites they precede. [`RegionSums::clear`] costs
/// the regions touched, not the tables.
#[derive(Debug, Clone, Default)]
pub struct RegionSums {
    /// By site id + 1 ([`NO_SITE`] at 0): ns inside calls there.
    calls: Vec<u64>,
    /// By the site id + 1 of the call before ([`NO_SITE`] at 0): (site id
    /// of the call after, ns) per computation that follows it.
    computes: Vec<Vec<(u32, u64)>>,
    /// The regions with time, in the order they got it.
    touched: Vec<Region>,
}

/// Index of site id `site` in [`RegionSums`]' tables ([`NO_SITE`] → 0).
fn slot_of(site: u32) -> usize {
    site.wrapping_add(1) as usize
}

impl RegionSums {
    /// Adds `ns` to region `r` (nothing for 0 ns).
    pub fn add(&mut self, r: Region, ns: u64) {
        if ns == 0 {
            return;
        }
        match r {
            Region::Call(site) => {
                let i = slot_of(site);
                if self.calls.len() <= i {
                    self.calls.resize(i + 1, 0);
                }
                if self.calls[i] == 0 {
                    self.touched.push(r);
                }
                self.calls[i] += ns;
            }
            Region::Compute(before, after) => {
                let i = slot_of(before);
                if self.computes.len() <= i {
                    self.computes.resize_with(i + 1, Vec::new);
                }
                let list = &mut self.computes[i];
                match list.iter_mut().find(|e| e.0 == after) {
                    Some(e) => e.1 += ns,
                    None => {
                        list.push((after, ns));
                        self.touched.push(r);
                    }
                }
            }
        }
    }

    /// The time of region `r`, ns (0 when it has none).
    pub fn get(&self, r: Region) -> u64 {
        match r {
            Region::Call(site) => self.calls.get(slot_of(site)).copied().unwrap_or(0),
            Region::Compute(before, after) => self
                .computes
                .get(slot_of(before))
                .and_then(|l| l.iter().find(|e| e.0 == after))
                .map_or(0, |e| e.1),
        }
    }

    /// The regions with time and their time, ns, in the order they first
    /// got time.
    pub fn iter(&self) -> impl Iterator<Item = (Region, u64)> + '_ {
        self.touched.iter().map(|&r| (r, self.get(r)))
    }

    /// Empties the sums (the tables keep their size).
    pub fn clear(&mut self) {
        for &r in &self.touched {
            match r {
                Region::Call(site) => self.calls[slot_of(site)] = 0,
                Region::Compute(before, _) => self.computes[slot_of(before)].clear(),
            }
        }
        self.touched.clear();
    }
}

/// The call sites of a recording, identified across ranks: every event's
/// site id and, per id, the MPI function and where it resolved.
#[derive(Debug, Clone, Default)]
pub struct SiteTable {
    /// Per site id: the MPI function and the resolved location.
    pub sites: Vec<(MpiOp, ResolvedSite)>,
    /// Per rank trace (indexed like [`MpiRecording::ranks`]), per
    /// interned call site of its events ([`MpiEvents::site_slot`]): the
    /// site id for each MPI function called there (one, unless a return
    /// address is shared by several functions). Per site, not per event:
    /// 4 bytes per call less (9 MB for docs/benchmarks.md's hpcc
    /// recording).
    per_rank: Vec<Vec<Vec<(MpiOp, u32)>>>,
}

impl SiteTable {
    /// Resolves every event's call site with `resolver` (once per process
    /// and address) and gives one id per (displayed location, module, MPI
    /// function): the same line called by several ranks is one site.
    pub fn resolve(rec: &MpiRecording, resolver: &mut dyn SiteResolver) -> SiteTable {
        let mut resolved: FxHashMap<(u32, u64), usize> = FxHashMap::default();
        let mut infos: Vec<ResolvedSite> = Vec::new();
        let mut ids: FxHashMap<(usize, MpiOp), u32> = FxHashMap::default();
        let mut by_key: HashMap<(String, String, MpiOp), u32> = HashMap::new();
        let mut table = SiteTable::default();
        for t in &rec.ranks {
            let mut per_slot: Vec<Vec<(MpiOp, u32)>> = vec![Vec::new(); t.events.site_slots()];
            for i in 0..t.events.len() {
                let (slot, op) = (t.events.site_slot(i), t.events.op(i));
                let known = &mut per_slot[slot as usize];
                if known.iter().any(|&(o, _)| o == op) {
                    continue;
                }
                let site = t.events.site_address(slot).unwrap_or(0);
                let si = *resolved.entry((t.pid, site)).or_insert_with(|| {
                    infos.push(if site == 0 {
                        ResolvedSite {
                            debug: "none",
                            display: "unknown".into(),
                            ..ResolvedSite::default()
                        }
                    } else {
                        resolver.site(t.pid, site)
                    });
                    infos.len() - 1
                });
                let id = *ids.entry((si, op)).or_insert_with(|| {
                    let s = &infos[si];
                    let key = (s.display.clone(), s.module.clone().unwrap_or_default(), op);
                    *by_key.entry(key).or_insert_with(|| {
                        table.sites.push((op, s.clone()));
                        (table.sites.len() - 1) as u32
                    })
                });
                per_slot[slot as usize].push((op, id));
            }
            table.per_rank.push(per_slot);
        }
        table
    }

    /// The site id of the calls of `op` at interned call site `slot` of
    /// rank index `ri` ([`MpiEvents::site_slot`]); [`NO_SITE`] for a
    /// rank, slot or function this table was not resolved with.
    pub fn id(&self, ri: usize, slot: u32, op: MpiOp) -> u32 {
        id_in(self.per_rank.get(ri).map_or(&[][..], |r| &r[..]), slot, op)
    }

    /// `MPI_Send at main (app.c:12)`; `start` for [`NO_SITE`].
    pub fn call_name(&self, id: u32) -> String {
        match self.sites.get(id as usize) {
            Some((op, s)) => format!("{} at {}", op.name(), s.display),
            None => "start".to_string(),
        }
    }

    /// The display name of a region: `MPI_Recv at main (app.c:40)`, or
    /// `computation after MPI_Recv at main (app.c:40) before MPI_Send at
    /// main (app.c:52)`.
    pub fn region_name(&self, r: Region) -> String {
        match r {
            Region::Call(s) => self.call_name(s),
            Region::Compute(a, b) => {
                format!(
                    "computation after {} before {}",
                    self.call_name(a),
                    self.call_name(b)
                )
            }
        }
    }
}

/// The recording as the delay and critical-path passes see it: per rank
/// the events, their site ids and the wait state counted in each.
pub struct Timeline<'a> {
    /// The recording.
    pub rec: &'a MpiRecording,
    /// The call sites.
    pub sites: &'a SiteTable,
    /// World rank → index in `rec.ranks` (the first trace of a rank).
    pub index: FxHashMap<u32, usize>,
    /// The wait states counted (at least their threshold), in the order of
    /// [`MpiAnalysis::waits`].
    pub waits: Vec<WaitState>,
    /// Per rank index: (event, index into `waits`) of the wait states
    /// counted in its calls, in order of event (at most one per call).
    /// Per wait state, not per call: wait states are rare (17 k among the
    /// 2.2 million calls of docs/benchmarks.md's hpcc recording), and a
    /// lookup is a binary search.
    wait_at: Vec<Vec<(u32, u32)>>,
    /// Per site id: listed in the per-site tables (`--site`); `None`: all.
    keep: Option<Vec<bool>>,
}

impl<'a> Timeline<'a> {
    /// The time lines of `rec` with the wait states of `analysis` that
    /// reach their threshold in `opts`.
    pub fn new(
        rec: &'a MpiRecording,
        analysis: &MpiAnalysis,
        sites: &'a SiteTable,
        opts: &MpiOptions,
    ) -> Timeline<'a> {
        let mut index = FxHashMap::default();
        for (i, t) in rec.ranks.iter().enumerate() {
            index.entry(t.rank).or_insert(i);
        }
        let mut wait_at: Vec<Vec<(u32, u32)>> = vec![Vec::new(); rec.ranks.len()];
        let mut waits = Vec::new();
        let mut counted: FxHashSet<(usize, u32)> = FxHashSet::default();
        for w in &analysis.waits {
            if w.wait_ns == 0 || w.wait_ns < opts.threshold(w.pattern) {
                continue;
            }
            let Some(&ri) = index.get(&w.rank) else {
                continue;
            };
            let Ok(event) = u32::try_from(w.event) else {
                continue;
            };
            if w.event >= rec.ranks[ri].events.len() || !counted.insert((ri, event)) {
                continue; // one wait per call (the analysis gives one)
            }
            wait_at[ri].push((event, waits.len() as u32));
            waits.push(*w);
        }
        for at in &mut wait_at {
            at.sort_unstable();
        }
        Timeline {
            rec,
            sites,
            index,
            waits,
            wait_at,
            keep: None,
        }
    }

    /// Lists only the sites for which `keep` is true in the per-site
    /// tables (the analyses still see every event).
    pub fn keep_sites(&mut self, keep: impl Fn(&ResolvedSite) -> bool) {
        self.keep = Some(self.sites.sites.iter().map(|(_, s)| keep(s)).collect());
    }

    /// True when site `id` is listed in the per-site tables.
    pub fn keeps_site(&self, id: u32) -> bool {
        match &self.keep {
            None => true,
            Some(k) => k.get(id as usize).copied().unwrap_or(false),
        }
    }

    /// True when region `r` is listed: its call site, or for a computation
    /// either of the calls around it, is kept.
    pub fn keeps_region(&self, r: Region) -> bool {
        match r {
            Region::Call(s) => self.keeps_site(s),
            Region::Compute(a, b) => self.keeps_site(a) || self.keeps_site(b),
        }
    }

    /// The events of rank index `ri`.
    pub fn events(&self, ri: usize) -> &'a MpiEvents {
        &self.rec.ranks[ri].events
    }

    /// The site id of event `ev` of rank index `ri` ([`NO_SITE`] if the
    /// table has none).
    pub fn site(&self, ri: usize, ev: usize) -> u32 {
        match self.rec.ranks.get(ri) {
            Some(t) if ev < t.events.len() => {
                self.sites.id(ri, t.events.site_slot(ev), t.events.op(ev))
            }
            _ => NO_SITE,
        }
    }

    /// The calls `range` of rank index `ri` in order, each with its times,
    /// function, site id and counted wait state ([`CallBrief`]): what the
    /// per-call passes need, read from the call columns without building
    /// each call's whole view, and the wait states met in order instead of
    /// searched. The range is cut to the rank's calls.
    pub fn calls(&self, ri: usize, range: std::ops::Range<usize>) -> Calls<'_, 'a> {
        let len = self.rec.ranks.get(ri).map_or(0, |t| t.events.len());
        let range = range.start.min(len)..range.end.min(len);
        let waits = self.wait_at.get(ri).map_or(&[][..], |w| &w[..]);
        let next_wait = waits.partition_point(|&(e, _)| (e as usize) < range.start);
        Calls {
            waits_of: &self.waits,
            events: self.rec.ranks.get(ri).map(|t| &t.events),
            slots: self.sites.per_rank.get(ri).map_or(&[][..], |r| &r[..]),
            range,
            waits,
            next_wait,
        }
    }

    /// The wait states counted in the calls of rank index `ri`: (event,
    /// index into [`Timeline::waits`]), in order of event.
    pub fn wait_list(&self, ri: usize) -> &[(u32, u32)] {
        self.wait_at.get(ri).map_or(&[][..], |w| &w[..])
    }

    /// Index into [`Timeline::waits`] of the wait state counted in event
    /// `ev` of rank index `ri`.
    pub fn wait_index(&self, ri: usize, ev: usize) -> Option<usize> {
        let at = self.wait_at.get(ri)?;
        let ev = u32::try_from(ev).ok()?;
        at.binary_search_by_key(&ev, |&(event, _)| event)
            .ok()
            .map(|j| at[j].1 as usize)
    }

    /// The wait counted in event `ev` of rank index `ri`, ns (0 for none),
    /// never more than the call's duration.
    pub fn wait_ns(&self, ri: usize, ev: usize) -> u64 {
        let Some(k) = self.wait_index(ri, ev) else {
            return 0;
        };
        self.capped_wait_ns(ri, ev, k)
    }

    /// Wait state `k` of event `ev` (which exists) of rank index `ri`, ns,
    /// never more than the call's duration.
    fn capped_wait_ns(&self, ri: usize, ev: usize, k: usize) -> u64 {
        let evs = self.events(ri);
        let d = evs.exit_ns(ev).saturating_sub(evs.enter_ns(ev));
        self.waits[k].wait_ns.min(d)
    }

    /// Walks the time of rank index `ri` from the end of event `from`
    /// (`None`: from the entry of its first event, which is included) to
    /// the entry of event `to` (`None`: to the exit of its last event):
    /// `region(r, ns)` for every call strictly between them (its time
    /// outside its wait state) and every gap between calls (computation);
    /// `wait(ev, ns)` for every call between them with a wait state.
    /// Gaps are measured from the latest exit so far, so calls that
    /// overlap (several threads) leave no negative gap.
    pub fn walk(
        &self,
        ri: usize,
        from: Option<usize>,
        to: Option<usize>,
        mut region: impl FnMut(Region, u64),
        mut wait: impl FnMut(usize, u64),
    ) {
        let evs = self.events(ri);
        let end = to.unwrap_or(evs.len()).min(evs.len());
        let (first, mut reach, mut prev_site) = match from {
            Some(a) if a < evs.len() => {
                (a + 1, evs.exit_ns(a).max(evs.enter_ns(a)), self.site(ri, a))
            }
            Some(_) => return,
            None if evs.is_empty() => return,
            None => (0, evs.enter_ns(0), NO_SITE),
        };
        for c in self.calls(ri, first..end) {
            let gap = c.enter_ns.saturating_sub(reach);
            if gap > 0 {
                region(Region::Compute(prev_site, c.site), gap);
            }
            let d = c.duration_ns();
            let w = c.wait.map_or(0, |(_, ns)| ns);
            if w > 0 {
                wait(c.event, w);
            }
            if d > w {
                region(Region::Call(c.site), d - w);
            }
            reach = reach.max(c.exit_ns.max(c.enter_ns));
            prev_site = c.site;
        }
        if let Some(t) = to.filter(|&t| t < evs.len()) {
            let gap = evs.enter_ns(t).saturating_sub(reach);
            if gap > 0 {
                region(Region::Compute(prev_site, self.site(ri, t)), gap);
            }
        }
    }
}

/// The site id of `op` at `slot` in one rank's part of a [`SiteTable`].
fn id_in(slots: &[Vec<(MpiOp, u32)>], slot: u32, op: MpiOp) -> u32 {
    slots
        .get(slot as usize)
        .and_then(|ops| ops.iter().find(|&&(o, _)| o == op))
        .map_or(NO_SITE, |&(_, id)| id)
}

/// One call as [`Timeline::calls`] gives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallBrief {
    /// Index in the rank's events.
    pub event: usize,
    /// The MPI function.
    pub op: MpiOp,
    /// Entry, ns on the common time line.
    pub enter_ns: u64,
    /// Exit, ns.
    pub exit_ns: u64,
    /// Site id ([`SiteTable`]; [`NO_SITE`] when unresolved).
    pub site: u32,
    /// The wait state counted in the call: its index in
    /// [`Timeline::waits`] and its wait, ns, never more than the call's
    /// duration.
    pub wait: Option<(usize, u64)>,
}

impl CallBrief {
    /// Exit − entry, ns (0 for a call that never returned).
    pub fn duration_ns(&self) -> u64 {
        self.exit_ns.saturating_sub(self.enter_ns)
    }
}

/// The iterator of [`Timeline::calls`].
pub struct Calls<'t, 'a> {
    waits_of: &'t [WaitState],
    events: Option<&'a MpiEvents>,
    slots: &'t [Vec<(MpiOp, u32)>],
    range: std::ops::Range<usize>,
    waits: &'t [(u32, u32)],
    next_wait: usize,
}

impl Iterator for Calls<'_, '_> {
    type Item = CallBrief;

    fn next(&mut self) -> Option<CallBrief> {
        let i = self.range.next()?;
        let evs = self.events?;
        let (enter_ns, exit_ns, op) = (evs.enter_ns(i), evs.exit_ns(i), evs.op(i));
        let wait = match self.waits.get(self.next_wait) {
            Some(&(e, k)) if e as usize == i => {
                self.next_wait += 1;
                let k = k as usize;
                Some((
                    k,
                    self.waits_of[k]
                        .wait_ns
                        .min(exit_ns.saturating_sub(enter_ns)),
                ))
            }
            _ => None,
        };
        Some(CallBrief {
            event: i,
            op,
            enter_ns,
            exit_ns,
            site: id_in(self.slots, evs.site_slot(i), op),
            wait,
        })
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.range.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Random sums, cleared now and then, against a hash map.
    #[test]
    fn region_sums_add_up_as_a_map_does() {
        let mut rng = crate::TestRng(0x9E37_79B9_7F4A_7C15);
        let mut next = move || rng.next();
        let site = |v: u64| {
            if v.is_multiple_of(7) {
                NO_SITE
            } else {
                (v % 40) as u32
            }
        };
        let mut sums = RegionSums::default();
        let mut map: FxHashMap<Region, u64> = FxHashMap::default();
        for round in 0..2_000 {
            if round % 300 == 299 {
                sums.clear();
                map.clear();
            }
            let r = if next() % 2 == 0 {
                Region::Call(site(next()))
            } else {
                Region::Compute(site(next()), site(next()))
            };
            let ns = next() % 5;
            sums.add(r, ns);
            if ns > 0 {
                *map.entry(r).or_default() += ns;
            }
            let probe = Region::Compute(site(next()), site(next()));
            assert_eq!(sums.get(probe), map.get(&probe).copied().unwrap_or(0));
            assert_eq!(sums.get(r), map.get(&r).copied().unwrap_or(0));
        }
        let mut got: Vec<(Region, u64)> = sums.iter().collect();
        let mut want: Vec<(Region, u64)> = map.into_iter().collect();
        got.sort();
        want.sort();
        assert_eq!(got, want);
        assert!(got.iter().all(|&(_, ns)| ns > 0));
    }

    /// Worked by hand: the order of first time, NO_SITE as a site, and a
    /// clear that leaves nothing behind.
    #[test]
    fn region_sums_by_hand() {
        let mut s = RegionSums::default();
        s.add(Region::Compute(NO_SITE, 3), 10);
        s.add(Region::Call(3), 5);
        s.add(Region::Compute(3, 3), 1);
        s.add(Region::Call(3), 7);
        s.add(Region::Compute(NO_SITE, 3), 2);
        s.add(Region::Call(NO_SITE), 4);
        s.add(Region::Call(9), 0);
        assert_eq!(
            s.iter().collect::<Vec<_>>(),
            [
                (Region::Compute(NO_SITE, 3), 12),
                (Region::Call(3), 12),
                (Region::Compute(3, 3), 1),
                (Region::Call(NO_SITE), 4),
            ]
        );
        assert_eq!(s.get(Region::Call(9)), 0);
        s.clear();
        assert_eq!(s.iter().count(), 0);
        assert_eq!(s.get(Region::Call(3)), 0);
        assert_eq!(s.get(Region::Compute(NO_SITE, 3)), 0);
        s.add(Region::Call(3), 1);
        assert_eq!(s.iter().collect::<Vec<_>>(), [(Region::Call(3), 1)]);
    }
}
