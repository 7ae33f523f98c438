//! Where each rank's time goes: its time line cut into **regions**, the
//! MPI calls (outside their wait states) and the computation between
//! them, shared by the delay analysis ([`super::delay`]) and the cross-rank
//! critical path ([`super::critical_path`]).
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
use rustc_hash::FxHashMap;

use super::analysis::{MpiAnalysis, WaitState};
use super::report::{MpiOptions, SiteResolver};
use crate::symbols::ResolvedSite;

/// "No call site": the start of a rank's trace as the first end of a
/// computation region.
pub const NO_SITE: u32 = u32::MAX;
const NONE: u32 = u32::MAX;

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

/// The call sites of a recording, identified across ranks: every event's
/// site id and, per id, the MPI function and where it resolved.
#[derive(Debug, Clone, Default)]
pub struct SiteTable {
    /// Per site id: the MPI function and the resolved location.
    pub sites: Vec<(MpiOp, ResolvedSite)>,
    /// Per rank trace (indexed like [`MpiRecording::ranks`]), per event:
    /// its site id.
    pub per_rank: Vec<Vec<u32>>,
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
            let mut per_event = Vec::with_capacity(t.events.len());
            for e in &t.events {
                let si = *resolved.entry((t.pid, e.site)).or_insert_with(|| {
                    infos.push(if e.site == 0 {
                        ResolvedSite {
                            debug: "none",
                            display: "unknown".into(),
                            ..ResolvedSite::default()
                        }
                    } else {
                        resolver.site(t.pid, e.site)
                    });
                    infos.len() - 1
                });
                let id = *ids.entry((si, e.op)).or_insert_with(|| {
                    let s = &infos[si];
                    let key = (
                        s.display.clone(),
                        s.module.clone().unwrap_or_default(),
                        e.op,
                    );
                    *by_key.entry(key).or_insert_with(|| {
                        table.sites.push((e.op, s.clone()));
                        (table.sites.len() - 1) as u32
                    })
                });
                per_event.push(id);
            }
            table.per_rank.push(per_event);
        }
        table
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
    /// Per rank index, per event: index into `waits` of the wait state
    /// counted in that call, `u32::MAX` for none.
    wait_at: Vec<Vec<u32>>,
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
        let mut wait_at: Vec<Vec<u32>> = rec
            .ranks
            .iter()
            .map(|t| vec![NONE; t.events.len()])
            .collect();
        let mut waits = Vec::new();
        for w in &analysis.waits {
            if w.wait_ns == 0 || w.wait_ns < opts.threshold(w.pattern) {
                continue;
            }
            let Some(&ri) = index.get(&w.rank) else {
                continue;
            };
            let Some(slot) = wait_at[ri].get_mut(w.event) else {
                continue;
            };
            if *slot != NONE {
                continue; // one wait per call (the analysis gives one)
            }
            *slot = waits.len() as u32;
            waits.push(*w);
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
        self.sites
            .per_rank
            .get(ri)
            .and_then(|v| v.get(ev))
            .copied()
            .unwrap_or(NO_SITE)
    }

    /// Index into [`Timeline::waits`] of the wait state counted in event
    /// `ev` of rank index `ri`.
    pub fn wait_index(&self, ri: usize, ev: usize) -> Option<usize> {
        match self.wait_at.get(ri).and_then(|v| v.get(ev)) {
            Some(&i) if i != NONE => Some(i as usize),
            _ => None,
        }
    }

    /// The wait counted in event `ev` of rank index `ri`, ns (0 for none),
    /// never more than the call's duration.
    pub fn wait_ns(&self, ri: usize, ev: usize) -> u64 {
        let d = self
            .events(ri)
            .get(ev)
            .map_or(0, |e| e.exit_ns.saturating_sub(e.enter_ns));
        self.wait_index(ri, ev)
            .map_or(0, |i| self.waits[i].wait_ns.min(d))
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
            None => match evs.first() {
                Some(e) => (0, e.enter_ns, NO_SITE),
                None => return,
            },
        };
        for (i, e) in evs.iter().enumerate().take(end).skip(first) {
            let site = self.site(ri, i);
            let gap = e.enter_ns.saturating_sub(reach);
            if gap > 0 {
                region(Region::Compute(prev_site, site), gap);
            }
            let d = e.exit_ns.saturating_sub(e.enter_ns);
            let w = self.wait_ns(ri, i);
            if w > 0 {
                wait(i, w);
            }
            if d > w {
                region(Region::Call(site), d - w);
            }
            reach = reach.max(e.exit_ns.max(e.enter_ns));
            prev_site = site;
        }
        if let Some(t) = to.filter(|&t| t < evs.len()) {
            let gap = evs.enter_ns(t).saturating_sub(reach);
            if gap > 0 {
                region(Region::Compute(prev_site, self.site(ri, t)), gap);
            }
        }
    }
}
