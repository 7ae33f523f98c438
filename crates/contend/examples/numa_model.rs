//! Times the NUMA model (bench/numa_model.sh, docs/benchmarks.md): Eq.
//! 1–13 for 8 and 64 nodes (dense histograms, every node accessed from
//! every node), and the migration algorithm on a million pages over 8 and
//! 64 nodes. Prints one line per case: the mean time of one call.
//!
//! Usage: `numa_model [REPEATS]` (default 20 for the model, 3 for the
//! plans).

use std::time::Instant;

use contend::numa::balance::{balance, PageHistogram};
use contend::numa::model::{estimate, Histogram, Variant};
use contend_trace::numa::LatencyTable;

fn table(n: usize) -> LatencyTable {
    LatencyTable {
        nodes: n,
        l_nocont_ns: vec![100.0; n],
        l_cont_ns: vec![(1..=n).map(|m| 100.0 + 20.0 * m as f64).collect(); n],
        r_nocont_ns: (0..n)
            .map(|k| {
                (0..n)
                    .map(|i| (k != i).then_some(150.0 + 10.0 * k.abs_diff(i) as f64))
                    .collect()
            })
            .collect(),
        r_cont_ns: (0..n)
            .map(|k| {
                (0..n)
                    .map(|i| {
                        (k != i).then(|| {
                            (1..=n)
                                .map(|m| 150.0 + 10.0 * k.abs_diff(i) as f64 + 30.0 * m as f64)
                                .collect()
                        })
                    })
                    .collect()
            })
            .collect(),
        restart_ns: None,
        calibration: None,
    }
}

struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
}

fn main() {
    let repeats: u32 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(20);
    let mut rng = Lcg(7);
    for n in [8usize, 64] {
        let lat = table(n);
        let mut h = Histogram::new(n);
        for k in 0..n {
            for i in 0..n {
                h.add(k, i, (rng.next() % 1_000_000) as f64 + 1.0);
            }
        }
        let t = Instant::now();
        let mut sink = 0.0;
        for _ in 0..repeats {
            sink += estimate(&h, &lat, 1e10, Variant::Printed)
                .unwrap()
                .overhead_ns;
        }
        let per = t.elapsed().as_secs_f64() / f64::from(repeats);
        println!(
            "model (Eq. 1-13), {n} nodes: {:.3} ms per estimate (overhead {:.0} ns)",
            per * 1e3,
            sink / f64::from(repeats)
        );
    }
    for n in [8usize, 64] {
        let lat = table(n);
        // A million pages, each on a random node, accessed by its own node
        // and 1 to 3 others; a tenth of them are hot spots on node 0.
        let mut rows = Vec::with_capacity(3_000_000);
        for p in 0..1_000_000u64 {
            let home = if p % 10 == 0 {
                0
            } else {
                (rng.next() % n as u64) as u32
            };
            rows.push((
                None,
                0x1000_0000 + p * 4096,
                home,
                home,
                (rng.next() % 100) as f64 + 1.0,
            ));
            for _ in 0..1 + rng.next() % 3 {
                let from = (rng.next() % n as u64) as u32;
                rows.push((
                    None,
                    0x1000_0000 + p * 4096,
                    from,
                    home,
                    (rng.next() % 100) as f64 + 1.0,
                ));
            }
        }
        let t = Instant::now();
        let pages = PageHistogram::build(n, rows, "synthetic").unwrap();
        let build = t.elapsed().as_secs_f64();
        let reps = repeats.clamp(1, 3);
        let t = Instant::now();
        let mut moved = 0;
        let mut passes = 0;
        for _ in 0..reps {
            let plan = balance(&pages, &lat, 1e10, Variant::Printed).unwrap();
            moved = plan.migrations.len();
            passes = plan.passes;
        }
        let per = t.elapsed().as_secs_f64() / f64::from(reps);
        println!(
            "migration plan, {n} nodes, {} pages: {:.0} ms per plan ({passes} passes, {moved} pages moved); building the page histogram {:.0} ms",
            pages.len(),
            per * 1e3,
            build * 1e3
        );
    }
}
