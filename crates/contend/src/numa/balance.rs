//! The page-migration algorithm of Nikolopoulos, Section 3.2 and Figure 8:
//! balance the latency of remote accesses over the nodes by moving pages.
//!
//! With `RL_i = Σ_{q≠i} R'_qi r_qi` the remote latency load of node i
//! (latencies r from Eq. 12, l from Eq. 11), one invocation on node i is
//! Figure 8:
//!
//! ```text
//!  (2)  for each page p located in n_i
//!  (3)    if ∃ j ≠ i: R'_ji,p r_ji > L_i,p l_i
//!  (4)      select the j with the largest R'_ji,p r_ji
//!  (5)      migrate p to n_j
//!  (8)  sort the remaining pages of n_i by Σ_{j≠i} R'_ji,p r_ji, descending
//!  (9)  for each page p from the top of the sorted list
//! (10)    if Σ_{q≠i} R'_qi,p r_qi > L_i,p l_i
//! (11)      find n_k (k ≠ i) with the least RL_k
//! (12)      if RL_k + L_i,p r_ik + Σ_{q≠i,k} R'_qi,p r_qk < RL_i
//! (13)        migrate p to n_k
//! ```
//!
//! Line 1 picks the node of largest RL; the text adds that the algorithm
//! "is invoked in an iterative manner on each node, in order of descending
//! remote memory access latency" and "runs repeatedly, until
//! max_i RL_i cannot be reduced further". So one *pass* runs Figure 8 on
//! every node in descending order of RL (recomputed at the start of the
//! pass), and passes repeat while each lowers max_i RL_i.
//!
//! Decisions (docs/numa.md): the latencies l_i and r_ki of a pass are the
//! model's (Eq. 11–12) for the histogram at the start of that pass, and RL
//! is updated after every migration; ties pick the lowest node number
//! (lines 4 and 11) and, in the sorted list, the lower page address; the
//! first pass is always kept (it is the algorithm as printed), a later pass
//! only if it lowers max_i RL_i (else it is undone and the algorithm
//! stops), at most [`MAX_PASSES`] passes. A page moved in a pass is not
//! looked at again in that pass. The plan lists each moved page once,
//! from its node before the first pass to its node after the last.

use serde::Serialize;

use super::model::{estimate, Estimate, Histogram, ModelError, Variant};
use contend_trace::numa::{LatencyTable, PageAccesses};

/// Passes at most (each must lower max_i RL_i after the first).
pub const MAX_PASSES: u32 = 64;

/// One page: its node and the accesses to it from each node.
#[derive(Debug, Clone, PartialEq)]
struct Page {
    pid: Option<u32>,
    page: u64,
    home: u32,
    start: usize,
    len: usize,
}

/// The per-page histograms (Section 3.2: L_i,p and R'_ji,p), compactly:
/// each page's source nodes and accesses lie in one shared array.
#[derive(Debug, Clone, PartialEq)]
pub struct PageHistogram {
    n: usize,
    pages: Vec<Page>,
    sources: Vec<(u32, f64)>,
}

impl PageHistogram {
    /// Builds the per-page histograms of `n` nodes from rows of a page
    /// histogram (`page,from_node,to_node,accesses`); rows of one page
    /// must be given together or not, in any order.
    ///
    /// Errors: a row names a node ≥ `n` ([`ModelError::UnknownNode`]).
    pub fn from_rows(
        n: usize,
        rows: &[PageAccesses],
        what: &str,
    ) -> Result<PageHistogram, ModelError> {
        let keyed = rows
            .iter()
            .map(|r| (None, r.page, r.from_node, r.to_node, r.accesses));
        PageHistogram::build(n, keyed, what)
    }

    /// Builds from `(pid, page, from_node, to_node, accesses)`; a page is
    /// identified by its pid and address.
    ///
    /// Errors: as [`PageHistogram::from_rows`].
    pub fn build(
        n: usize,
        rows: impl IntoIterator<Item = (Option<u32>, u64, u32, u32, f64)>,
        what: &str,
    ) -> Result<PageHistogram, ModelError> {
        let mut all: Vec<(Option<u32>, u64, u32, u32, f64)> = Vec::new();
        for r in rows {
            for node in [r.2, r.3] {
                if node as usize >= n {
                    return Err(ModelError::UnknownNode {
                        what: what.to_string(),
                        node,
                        nodes: n,
                    });
                }
            }
            if r.4 != 0.0 {
                all.push(r);
            }
        }
        all.sort_by_key(|a| (a.0, a.1, a.2));
        let mut pages: Vec<Page> = Vec::new();
        let mut sources: Vec<(u32, f64)> = Vec::with_capacity(all.len());
        for (pid, page, from, to, acc) in all {
            let same = pages.last().is_some_and(|p| p.pid == pid && p.page == page);
            if !same {
                pages.push(Page {
                    pid,
                    page,
                    home: to,
                    start: sources.len(),
                    len: 0,
                });
            }
            let p = pages.last_mut().expect("pushed above");
            if sources[p.start..].last().is_some_and(|s| s.0 == from) {
                sources.last_mut().expect("non-empty").1 += acc;
            } else {
                sources.push((from, acc));
                p.len += 1;
            }
        }
        Ok(PageHistogram { n, pages, sources })
    }

    /// Number of nodes.
    pub fn nodes(&self) -> usize {
        self.n
    }

    /// Number of pages with accesses.
    pub fn len(&self) -> usize {
        self.pages.len()
    }

    /// True when no page has accesses.
    pub fn is_empty(&self) -> bool {
        self.pages.is_empty()
    }

    fn sources_of(&self, p: usize) -> &[(u32, f64)] {
        let pg = &self.pages[p];
        &self.sources[pg.start..pg.start + pg.len]
    }

    /// The node histogram the pages form (each page's accesses counted at
    /// its node).
    pub fn node_histogram(&self) -> Histogram {
        self.node_histogram_with(|p| self.pages[p].home)
    }

    fn node_histogram_with(&self, home: impl Fn(usize) -> u32) -> Histogram {
        let mut h = Histogram::new(self.n);
        for p in 0..self.pages.len() {
            let i = home(p) as usize;
            for &(k, a) in self.sources_of(p) {
                h.add(k as usize, i, a);
            }
        }
        h
    }

    /// The `top` pages with the most accesses: (pid, page, node, accesses,
    /// local accesses), most first, ties by address.
    pub fn hottest(&self, top: usize) -> Vec<(Option<u32>, u64, u32, f64, f64)> {
        let mut v: Vec<(Option<u32>, u64, u32, f64, f64)> = (0..self.pages.len())
            .map(|p| {
                let pg = &self.pages[p];
                let total: f64 = self.sources_of(p).iter().map(|s| s.1).sum();
                let local: f64 = self
                    .sources_of(p)
                    .iter()
                    .filter(|s| s.0 == pg.home)
                    .map(|s| s.1)
                    .sum();
                (pg.pid, pg.page, pg.home, total, local)
            })
            .collect();
        v.sort_by(|a, b| b.3.total_cmp(&a.3).then((a.0, a.1).cmp(&(b.0, b.1))));
        v.truncate(top);
        v
    }
}

/// One page to move.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Migration {
    /// The process whose page it is, when known.
    pub pid: Option<u32>,
    /// The page's address.
    pub page: u64,
    /// Its node now.
    pub from_node: u32,
    /// Its node after the plan.
    pub to_node: u32,
    /// Accesses to it (all nodes).
    pub accesses: f64,
}

/// The migration plan and what it changes.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// Pages to move, the most accessed first (ties by address).
    pub migrations: Vec<Migration>,
    /// Passes kept (see the module docs).
    pub passes: u32,
    /// Moves made by lines 2–7 (competitive migration), over kept passes.
    pub competitive_moves: u64,
    /// Moves made by lines 8–16 (balancing), over kept passes.
    pub balancing_moves: u64,
    /// max_i RL_i before the plan, ns.
    pub max_remote_load_before_ns: f64,
    /// max_i RL_i after the plan, ns (latencies of the placement after).
    pub max_remote_load_after_ns: f64,
    /// The node histogram after the plan.
    pub after: Histogram,
}

/// max_i RL_i of an estimate.
fn max_remote_load(e: &Estimate) -> f64 {
    e.nodes.iter().map(|n| n.remote_load_ns).fold(0.0, f64::max)
}

/// Moves page `p` from node `i` to node `j` in the histogram `h` and the
/// remote loads `rl` (latencies `lat`).
fn move_page(
    pages: &PageHistogram,
    p: usize,
    i: usize,
    j: usize,
    h: &mut Histogram,
    rl: &mut [f64],
    lat: &dyn Fn(usize, usize) -> f64,
) {
    for &(q, a) in pages.sources_of(p) {
        let q = q as usize;
        h.add(q, i, -a);
        h.add(q, j, a);
        if q != i {
            rl[i] -= a * lat(q, i);
        }
        if q != j {
            rl[j] += a * lat(q, j);
        }
    }
}

/// Runs the migration algorithm (Figure 8, iterated as the module docs
/// say) on `pages` with the latencies `lat`, run time `time_ns` and form
/// `variant` of Eq. 9.
///
/// Errors: those of [`estimate`].
pub fn balance(
    pages: &PageHistogram,
    lat: &LatencyTable,
    time_ns: f64,
    variant: Variant,
) -> Result<Plan, ModelError> {
    let n = pages.n;
    let initial: Vec<u32> = pages.pages.iter().map(|p| p.home).collect();
    let mut home = initial.clone();
    let mut h = pages.node_histogram();
    let mut est = estimate(&h, lat, time_ns, variant)?;
    let before_max = max_remote_load(&est);
    let mut current_max = before_max;
    let mut passes = 0;
    let (mut competitive, mut balancing) = (0u64, 0u64);
    while passes < MAX_PASSES && n > 1 {
        let saved_home = home.clone();
        let latency = |k: usize, i: usize| est.latency(k, i);
        let mut rl: Vec<f64> = est.nodes.iter().map(|nm| nm.remote_load_ns).collect();
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by(|&a, &b| rl[b].total_cmp(&rl[a]).then(a.cmp(&b)));
        let mut buckets: Vec<Vec<usize>> = vec![Vec::new(); n];
        for (p, &node) in home.iter().enumerate() {
            buckets[node as usize].push(p);
        }
        let mut moved = vec![false; home.len()];
        let (mut comp, mut bal) = (0u64, 0u64);
        for &i in &order {
            let l_i = latency(i, i);
            // Lines 2–7: competitive migration.
            let mut remaining = Vec::new();
            for &p in &buckets[i] {
                if moved[p] || home[p] as usize != i {
                    continue;
                }
                let src = pages.sources_of(p);
                let local = src.iter().find(|s| s.0 as usize == i).map_or(0.0, |s| s.1) * l_i;
                let mut best: Option<(usize, f64)> = None;
                for &(j, a) in src {
                    let j = j as usize;
                    if j == i {
                        continue;
                    }
                    let w = a * latency(j, i);
                    if w > local && best.is_none_or(|(bj, bw)| w > bw || (w == bw && j < bj)) {
                        best = Some((j, w));
                    }
                }
                match best {
                    Some((j, _)) => {
                        move_page(pages, p, i, j, &mut h, &mut rl, &latency);
                        home[p] = j as u32;
                        moved[p] = true;
                        comp += 1;
                    }
                    None => remaining.push(p),
                }
            }
            // Lines 8–16: balancing by the remote latency of pages.
            let mut candidates: Vec<(usize, f64)> = remaining
                .into_iter()
                .filter_map(|p| {
                    let src = pages.sources_of(p);
                    let mut remote = 0.0;
                    let mut local = 0.0;
                    for &(q, a) in src {
                        if q as usize == i {
                            local = a * l_i;
                        } else {
                            remote += a * latency(q as usize, i);
                        }
                    }
                    (remote > local).then_some((p, remote))
                })
                .collect();
            candidates.sort_by(|a, b| {
                b.1.total_cmp(&a.1).then(
                    (pages.pages[a.0].pid, pages.pages[a.0].page)
                        .cmp(&(pages.pages[b.0].pid, pages.pages[b.0].page)),
                )
            });
            for (p, _) in candidates {
                // Line 11: the least loaded other node.
                let Some(k) = (0..n)
                    .filter(|&k| k != i)
                    .min_by(|&a, &b| rl[a].total_cmp(&rl[b]).then(a.cmp(&b)))
                else {
                    break;
                };
                // Line 12: k's remote load after the move, RL_k +
                // L_i,p r_ik + Σ_{q≠i,k} R'_qi,p r_qk.
                let new_k: f64 = rl[k]
                    + pages
                        .sources_of(p)
                        .iter()
                        .filter(|s| s.0 as usize != k)
                        .map(|&(q, a)| a * latency(q as usize, k))
                        .sum::<f64>();
                if new_k < rl[i] {
                    move_page(pages, p, i, k, &mut h, &mut rl, &latency);
                    home[p] = k as u32;
                    moved[p] = true;
                    bal += 1;
                }
            }
        }
        if comp + bal == 0 {
            break;
        }
        let new_est = estimate(&h, lat, time_ns, variant)?;
        let new_max = max_remote_load(&new_est);
        if passes > 0 && new_max >= current_max * (1.0 - 1e-12) {
            // This pass did not lower the maximum: undo it and stop.
            home = saved_home;
            break;
        }
        passes += 1;
        competitive += comp;
        balancing += bal;
        current_max = new_max;
        est = new_est;
    }
    let mut migrations: Vec<Migration> = (0..home.len())
        .filter(|&p| home[p] != initial[p])
        .map(|p| Migration {
            pid: pages.pages[p].pid,
            page: pages.pages[p].page,
            from_node: initial[p],
            to_node: home[p],
            accesses: pages.sources_of(p).iter().map(|s| s.1).sum(),
        })
        .collect();
    migrations.sort_by(|a, b| {
        b.accesses
            .total_cmp(&a.accesses)
            .then((a.pid, a.page).cmp(&(b.pid, b.page)))
    });
    let after = pages.node_histogram_with(|p| home[p]);
    Ok(Plan {
        migrations,
        passes,
        competitive_moves: competitive,
        balancing_moves: balancing,
        max_remote_load_before_ns: before_max,
        max_remote_load_after_ns: current_max,
        after,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_group_their_rows() {
        let rows = [
            PageAccesses {
                page: 0x2000,
                from_node: 1,
                to_node: 0,
                accesses: 3.0,
            },
            PageAccesses {
                page: 0x1000,
                from_node: 0,
                to_node: 0,
                accesses: 5.0,
            },
            PageAccesses {
                page: 0x2000,
                from_node: 0,
                to_node: 0,
                accesses: 1.0,
            },
            PageAccesses {
                page: 0x1000,
                from_node: 0,
                to_node: 0,
                accesses: 2.0,
            },
        ];
        let ph = PageHistogram::from_rows(2, &rows, "p.csv").unwrap();
        assert_eq!(ph.len(), 2);
        assert_eq!(ph.sources_of(0), &[(0, 7.0)]);
        assert_eq!(ph.sources_of(1), &[(0, 1.0), (1, 3.0)]);
        let h = ph.node_histogram();
        assert_eq!((h.local(0), h.get(1, 0)), (8.0, 3.0));
        assert_eq!(ph.hottest(1)[0], (None, 0x1000, 0, 7.0, 7.0));
        let bad = [PageAccesses {
            page: 1,
            from_node: 2,
            to_node: 0,
            accesses: 1.0,
        }];
        assert!(PageHistogram::from_rows(2, &bad, "p.csv").is_err());
    }
}
