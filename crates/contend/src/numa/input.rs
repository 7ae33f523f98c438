//! What the model is applied to: histograms from CSV files a user brings,
//! or the data-address samples of a recording turned into access counts.
//!
//! A recording holds *samples* (`numa/samples.csv`); what one stands for is
//! in `numa/sampler.json`:
//! - hardware sampling (PEBS, IBS): a sample stands for `period` loads, so
//!   accesses = samples × period;
//! - software sampling (a CPU-time timer and the interrupted instruction's
//!   memory operand): a sample stands for `period` ns of CPU time spent at
//!   an instruction touching the page. A thread that spends T ns on
//!   accesses of latency l makes T / l of them, so accesses from node k to
//!   node i = samples × period_ns / r_ki,nocont (l_nocont where k = i), the
//!   uncontended latencies of the calibration. Without a calibration only
//!   the samples are shown. docs/numa.md discusses the bias of this
//!   (time-weighted) count.

use contend_trace::numa::{
    LatencyTable, NodeAccesses, NumaRecording, PageAccesses, PeriodUnit, SamplerInfo,
};

use super::balance::PageHistogram;
use super::model::{Histogram, ModelError};

/// The histograms of one run, ready for the model.
#[derive(Debug, Clone)]
pub struct NumaInput {
    /// Where they come from, for the report (`accesses.csv`, `recording
    /// contend.data`).
    pub source: String,
    /// Number of nodes the histograms span.
    pub nodes: usize,
    /// The node histogram of accesses; `None` when only samples are known
    /// (software samples without a calibration).
    pub accesses: Option<Histogram>,
    /// The per-page histograms of accesses, when known.
    pub pages: Option<PageHistogram>,
    /// Samples per node pair (recordings), as a histogram of counts.
    pub samples: Option<Histogram>,
    /// The hottest pages by samples (recordings): (pid, page, node,
    /// samples, local samples).
    pub hot_samples: Vec<(Option<u32>, u64, u32, f64, f64)>,
    /// t_ex, ns, when known.
    pub time_ns: Option<f64>,
    /// The sampler of a recording.
    pub sampler: Option<SamplerInfo>,
    /// What the reader noticed, one sentence each.
    pub warnings: Vec<String>,
}

/// Pages listed as the hottest.
pub const HOT_PAGES: usize = 100;

impl NumaInput {
    /// Input from CSV rows: a node histogram, a page histogram, or both
    /// (the node histogram then feeds Eq. 1–13 and the pages the plan).
    /// `nodes` is the latency table's node count, or `None` to take the
    /// highest node named + 1.
    ///
    /// Errors: a row names a node the table lacks
    /// ([`ModelError::UnknownNode`], naming `accesses_name` or
    /// `pages_name`).
    pub fn from_csv(
        accesses: Option<(&str, &[NodeAccesses])>,
        pages: Option<(&str, &[PageAccesses])>,
        nodes: Option<usize>,
        time_ns: Option<f64>,
    ) -> Result<NumaInput, ModelError> {
        let highest = accesses
            .iter()
            .flat_map(|(_, r)| r.iter().flat_map(|r| [r.from_node, r.to_node]))
            .chain(
                pages
                    .iter()
                    .flat_map(|(_, r)| r.iter().flat_map(|r| [r.from_node, r.to_node])),
            )
            .max()
            .map_or(1, |m| m as usize + 1);
        let n = nodes.unwrap_or(highest);
        let page_hist = match pages {
            Some((name, rows)) => Some(PageHistogram::from_rows(n, rows, name)?),
            None => None,
        };
        let node_hist = match accesses {
            Some((name, rows)) => Histogram::from_rows(n, rows, name)?,
            None => page_hist
                .as_ref()
                .map(PageHistogram::node_histogram)
                .unwrap_or_else(|| Histogram::new(n)),
        };
        let mut warnings = Vec::new();
        if let (Some((a, _)), Some((p, _)), Some(ph)) = (accesses, pages, &page_hist) {
            let from_pages = ph.node_histogram().total();
            let total = node_hist.total();
            if total > 0.0 && ((from_pages - total) / total).abs() > 0.01 {
                warnings.push(format!(
                    "{p} adds up to {from_pages} accesses but {a} to {total}: Eq. 1–13 use {a}, the migration plan and its what-if use {p}"
                ));
            }
        }
        let source = [accesses.map(|a| a.0), pages.map(|p| p.0)]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join(" and ");
        Ok(NumaInput {
            source,
            nodes: n,
            accesses: Some(node_hist),
            hot_samples: Vec::new(),
            pages: page_hist,
            samples: None,
            time_ns,
            sampler: None,
            warnings,
        })
    }

    /// Input from the NUMA part of a recording: samples, turned into
    /// accesses as the module docs say when `lat` (or, for hardware
    /// samples, the period alone) allows. `wall_ns` is the run time from
    /// `meta.json`.
    ///
    /// Errors: a sample names a node `lat` lacks
    /// ([`ModelError::UnknownNode`]).
    pub fn from_recording(
        name: &str,
        rec: &NumaRecording,
        lat: Option<&LatencyTable>,
        wall_ns: Option<u64>,
    ) -> Result<NumaInput, ModelError> {
        let info = &rec.sampler;
        let highest = rec
            .samples
            .iter()
            .flat_map(|s| [s.from_node, s.to_node])
            .max()
            .map_or(0, |m| m as usize + 1);
        let n = match lat {
            Some(t) => {
                if highest > t.nodes {
                    return Err(ModelError::UnknownNode {
                        what: format!("the recording {name}"),
                        node: highest as u32 - 1,
                        nodes: t.nodes,
                    });
                }
                t.nodes
            }
            None => highest.max(info.nodes as usize).max(1),
        };
        let sample_rows = rec.samples.iter().map(|s| {
            (
                Some(s.pid),
                s.page,
                s.from_node,
                s.to_node,
                s.samples as f64,
            )
        });
        let by_samples = PageHistogram::build(n, sample_rows, name)?;
        let samples = by_samples.node_histogram();
        let hot_samples = by_samples.hottest(HOT_PAGES);
        let weight: Option<Box<dyn Fn(u32, u32) -> f64>> = match (info.period_unit, lat) {
            (PeriodUnit::Events, _) => {
                let p = info.period as f64;
                Some(Box::new(move |_, _| p))
            }
            (PeriodUnit::Ns, Some(t)) => {
                let p = info.period as f64;
                let t = t.clone();
                Some(Box::new(move |k, i| p / t.r_nocont(k as usize, i as usize)))
            }
            (PeriodUnit::Ns, None) => None,
        };
        let (accesses, pages) = match &weight {
            Some(w) => {
                let rows = rec.samples.iter().map(|s| {
                    (
                        Some(s.pid),
                        s.page,
                        s.from_node,
                        s.to_node,
                        s.samples as f64 * w(s.from_node, s.to_node),
                    )
                });
                let ph = PageHistogram::build(n, rows, name)?;
                (Some(ph.node_histogram()), Some(ph))
            }
            None => (None, None),
        };
        let mut warnings = Vec::new();
        if wall_ns.is_none() {
            warnings.push(format!(
                "{name}: meta.json gives no run time, so the model (Eq. 2 needs t_ex) cannot be applied; give it with `contend numa estimate --recording {name} --time SECONDS`"
            ));
        }
        Ok(NumaInput {
            source: format!("recording {name}"),
            nodes: n,
            accesses,
            pages,
            samples: Some(samples),
            hot_samples,
            time_ns: wall_ns.map(|w| w as f64),
            sampler: Some(info.clone()),
            warnings,
        })
    }
}
