//! The tables an mpiP user expects beside the wait states (mpiP's report:
//! "Callsite Time statistics" per rank, "Callsite Message Sent
//! statistics", and a rank × rank view of who waited for whom):
//!
//! * the **wait matrix**: per waiting rank and causing rank, the wait
//!   states and their waiting (point to point and collective);
//! * **message statistics per call site**: sends posted there (every
//!   `MPI_Send`-family call, the send half of `MPI_Sendrecv`, every
//!   activation of a persistent send) with their count, bytes, smallest,
//!   largest, average and a log2 histogram of sizes; collective call sites
//!   with the bytes each call contributed;
//! * **per call site and rank**: calls, total, smallest, average and
//!   largest duration, wait, and the share of the rank's running time and
//!   of its time in MPI.
//!
//! Call sites are the ids of [`SiteTable`](super::SiteTable) (the same line
//! on every rank is one site).

use std::collections::BTreeMap;

use rustc_hash::FxHashMap;
use serde::Serialize;

use super::timeline::Timeline;

/// Waiting of one rank for another (JSON `mpi.wait_matrix[]`).
#[derive(Debug, Clone, Serialize, Default, PartialEq)]
pub struct MpiWaitPairRow {
    /// World rank that waited.
    pub rank: u32,
    /// World rank it waited for (the late rank).
    pub cause: u32,
    /// Wait states.
    pub wait_states: u64,
    /// Σ wait, ns.
    pub wait_ns: u64,
    /// Of it, point to point (late sender, late receiver), ns.
    pub p2p_wait_ns: u64,
    /// Of it, collective, ns.
    pub collective_wait_ns: u64,
}

/// One bucket of a message-size histogram: sizes from `min_bytes` to
/// `max_bytes` inclusive (0; 1; 2–3; 4–7; … powers of two).
#[derive(Debug, Clone, Copy, Serialize, Default, PartialEq, Eq)]
pub struct SizeBucket {
    /// Smallest size of the bucket, bytes.
    pub min_bytes: u64,
    /// Largest size of the bucket, bytes.
    pub max_bytes: u64,
    /// Messages (or calls) in it.
    pub count: u64,
}

/// The bucket index of `bytes`: 0 for 0, else 1 + ⌊log2 bytes⌋.
fn bucket(bytes: u64) -> u32 {
    if bytes == 0 {
        0
    } else {
        64 - bytes.leading_zeros()
    }
}

fn bucket_bounds(b: u32) -> (u64, u64) {
    match b {
        0 => (0, 0),
        64 => (1 << 63, u64::MAX),
        _ => (1u64 << (b - 1), (1u64 << b) - 1),
    }
}

#[derive(Default, Clone)]
struct SizeAcc {
    n: u64,
    sum: u64,
    min: u64,
    max: u64,
    buckets: BTreeMap<u32, u64>,
}

impl SizeAcc {
    fn add(&mut self, bytes: u64) {
        if self.n == 0 || bytes < self.min {
            self.min = bytes;
        }
        self.max = self.max.max(bytes);
        self.n += 1;
        self.sum = self.sum.saturating_add(bytes);
        *self.buckets.entry(bucket(bytes)).or_default() += 1;
    }
    fn histogram(&self) -> Vec<SizeBucket> {
        self.buckets
            .iter()
            .map(|(&b, &count)| {
                let (min_bytes, max_bytes) = bucket_bounds(b);
                SizeBucket {
                    min_bytes,
                    max_bytes,
                    count,
                }
            })
            .collect()
    }
}

/// Messages sent from one call site (JSON `mpi.messages_by_site[]`;
/// mpiP's "Callsite Message Sent statistics").
#[derive(Debug, Clone, Serialize, Default, PartialEq)]
pub struct MpiMessageSiteRow {
    /// `p2p` (sends posted) or `collective` (bytes each call contributed).
    pub kind: String,
    /// The MPI function, e.g. `MPI_Isend`.
    pub operation: String,
    /// The call site, e.g. `main (halo.c:52)`.
    pub site: String,
    /// Messages sent (p2p) or calls (collective).
    pub messages: u64,
    /// Σ bytes.
    pub bytes: u64,
    /// Smallest, bytes.
    pub min_bytes: u64,
    /// Largest, bytes.
    pub max_bytes: u64,
    /// `bytes / messages`.
    pub avg_bytes: u64,
    /// Sizes in log2 buckets (only buckets with messages).
    pub histogram: Vec<SizeBucket>,
    /// Ranks that sent from here.
    pub ranks: u32,
}

/// All point-to-point messages sent (JSON `mpi.message_sizes`).
#[derive(Debug, Clone, Serialize, Default, PartialEq)]
pub struct MpiMessageSizes {
    /// Sends posted (to a rank, not `MPI_PROC_NULL`).
    pub messages: u64,
    /// Σ bytes.
    pub bytes: u64,
    /// Smallest, bytes.
    pub min_bytes: u64,
    /// Largest, bytes.
    pub max_bytes: u64,
    /// `bytes / messages`.
    pub avg_bytes: u64,
    /// Sizes in log2 buckets.
    pub histogram: Vec<SizeBucket>,
}

/// One call site on one rank (JSON `mpi.by_site_rank[]`; mpiP's
/// "Callsite Time statistics").
#[derive(Debug, Clone, Serialize, Default, PartialEq)]
pub struct MpiSiteRankRow {
    /// The MPI function.
    pub operation: String,
    /// The call site, e.g. `main (halo.c:52)`.
    pub site: String,
    /// World rank.
    pub rank: u32,
    /// Calls.
    pub events: u64,
    /// Σ duration, ns.
    pub duration_ns: u64,
    /// Shortest call, ns.
    pub min_ns: u64,
    /// `duration_ns / events`, ns.
    pub avg_ns: u64,
    /// Longest call, ns.
    pub max_ns: u64,
    /// Σ wait of its wait states, ns.
    pub wait_ns: u64,
    /// `duration_ns` over the rank's running time (first call to last), a
    /// fraction (mpiP's App%).
    pub app_share: f64,
    /// `duration_ns` over the rank's time in MPI, a fraction (mpiP's MPI%).
    pub mpi_share: f64,
}

/// The wait matrix of `tl`'s counted wait states, by waiting rank, then
/// causing rank.
pub fn wait_matrix(tl: &Timeline<'_>) -> Vec<MpiWaitPairRow> {
    let mut m: BTreeMap<(u32, u32), MpiWaitPairRow> = BTreeMap::new();
    for w in &tl.waits {
        let row = m
            .entry((w.rank, w.cause))
            .or_insert_with(|| MpiWaitPairRow {
                rank: w.rank,
                cause: w.cause,
                ..MpiWaitPairRow::default()
            });
        row.wait_states += 1;
        row.wait_ns += w.wait_ns;
        if w.pattern.is_p2p() {
            row.p2p_wait_ns += w.wait_ns;
        } else {
            row.collective_wait_ns += w.wait_ns;
        }
    }
    m.into_values().collect()
}

/// Message statistics per call site (most bytes first) and over all
/// point-to-point sends.
pub fn message_statistics(tl: &Timeline<'_>) -> (Vec<MpiMessageSiteRow>, MpiMessageSizes) {
    use contend_trace::mpi::Peer;
    let mut sites: FxHashMap<(u32, bool), (SizeAcc, Vec<u32>)> = FxHashMap::default();
    let mut all = SizeAcc::default();
    for (ri, t) in tl.rec.ranks.iter().enumerate() {
        if tl.index.get(&t.rank) != Some(&ri) {
            continue;
        }
        for (ei, e) in t.events.iter().enumerate() {
            let site = tl.site(ri, ei);
            let mut add = |collective: bool, bytes: u64| {
                let (acc, ranks) = sites.entry((site, collective)).or_default();
                acc.add(bytes);
                if ranks.last() != Some(&t.rank) {
                    ranks.push(t.rank);
                }
            };
            if let Some(s) = e.send.filter(|s| matches!(s.dest, Peer::Rank(_))) {
                add(false, s.bytes);
                all.add(s.bytes);
            }
            for s in e.starts.iter().filter_map(|st| st.send) {
                if matches!(s.dest, Peer::Rank(_)) {
                    add(false, s.bytes);
                    all.add(s.bytes);
                }
            }
            if e.op.is_collective() && e.coll_bytes_sent > 0 {
                add(true, e.coll_bytes_sent);
            }
        }
    }
    let mut rows: Vec<MpiMessageSiteRow> = sites
        .into_iter()
        .filter(|((site, _), _)| tl.keeps_site(*site))
        .map(|((site, collective), (acc, mut ranks))| {
            ranks.sort_unstable();
            ranks.dedup();
            let (op, display) = match tl.sites.sites.get(site as usize) {
                Some((op, s)) => (op.name().to_string(), s.display.clone()),
                None => (String::new(), "unknown".into()),
            };
            MpiMessageSiteRow {
                kind: if collective { "collective" } else { "p2p" }.into(),
                operation: op,
                site: display,
                messages: acc.n,
                bytes: acc.sum,
                min_bytes: acc.min,
                max_bytes: acc.max,
                avg_bytes: acc.sum.checked_div(acc.n).unwrap_or(0),
                histogram: acc.histogram(),
                ranks: ranks.len() as u32,
            }
        })
        .collect();
    rows.sort_by(|a, b| {
        b.bytes
            .cmp(&a.bytes)
            .then(b.messages.cmp(&a.messages))
            .then(a.site.cmp(&b.site))
            .then(a.operation.cmp(&b.operation))
            .then(a.kind.cmp(&b.kind))
    });
    let sizes = MpiMessageSizes {
        messages: all.n,
        bytes: all.sum,
        min_bytes: all.min,
        max_bytes: all.max,
        avg_bytes: all.sum.checked_div(all.n).unwrap_or(0),
        histogram: all.histogram(),
    };
    (rows, sizes)
}

/// Per call site and rank (most time first, then site and rank);
/// `span_ns` and `mpi_ns` give each rank's running time and time in MPI
/// (by world rank) for the shares.
pub fn site_rank_statistics(
    tl: &Timeline<'_>,
    span_ns: &FxHashMap<u32, u64>,
    mpi_ns: &FxHashMap<u32, u64>,
) -> Vec<MpiSiteRankRow> {
    #[derive(Default)]
    struct Acc {
        n: u64,
        sum: u64,
        min: u64,
        max: u64,
        wait: u64,
    }
    let mut m: FxHashMap<(u32, u32), Acc> = FxHashMap::default();
    for (ri, t) in tl.rec.ranks.iter().enumerate() {
        if tl.index.get(&t.rank) != Some(&ri) {
            continue;
        }
        // per site id of this rank (a dense table: sites are few)
        let mut by_site: Vec<Acc> = Vec::new();
        for c in tl.calls(ri, 0..t.events.len()) {
            let d = c.duration_ns();
            let a = match dense_slot(&mut by_site, c.site) {
                Some(a) => a,
                None => m.entry((c.site, t.rank)).or_default(),
            };
            if a.n == 0 || d < a.min {
                a.min = d;
            }
            a.max = a.max.max(d);
            a.n += 1;
            a.sum += d;
            a.wait += c.wait.map_or(0, |(_, ns)| ns);
        }
        for (site, a) in by_site.into_iter().enumerate() {
            if a.n > 0 {
                m.insert((site as u32, t.rank), a);
            }
        }
    }
    let frac = |x: u64, of: Option<&u64>| match of {
        Some(&o) if o > 0 => x as f64 / o as f64,
        _ => 0.0,
    };
    let mut rows: Vec<MpiSiteRankRow> = m
        .into_iter()
        .filter(|((site, _), _)| tl.keeps_site(*site))
        .map(|((site, rank), a)| {
            let (op, display) = match tl.sites.sites.get(site as usize) {
                Some((op, s)) => (op.name().to_string(), s.display.clone()),
                None => (String::new(), "unknown".into()),
            };
            MpiSiteRankRow {
                operation: op,
                site: display,
                rank,
                events: a.n,
                duration_ns: a.sum,
                min_ns: a.min,
                avg_ns: a.sum.checked_div(a.n).unwrap_or(0),
                max_ns: a.max,
                wait_ns: a.wait,
                app_share: frac(a.sum, span_ns.get(&rank)),
                mpi_share: frac(a.sum, mpi_ns.get(&rank)),
            }
        })
        .collect();
    rows.sort_by(|a, b| {
        b.duration_ns
            .cmp(&a.duration_ns)
            .then(a.site.cmp(&b.site))
            .then(a.operation.cmp(&b.operation))
            .then(a.rank.cmp(&b.rank))
    });
    rows
}

/// The entry for `site` of a table indexed by site id, grown as needed;
/// `None` for [`super::timeline::NO_SITE`].
fn dense_slot<T: Default>(table: &mut Vec<T>, site: u32) -> Option<&mut T> {
    if site == super::timeline::NO_SITE {
        return None;
    }
    let i = site as usize;
    if table.len() <= i {
        table.resize_with(i + 1, T::default);
    }
    table.get_mut(i)
}
