//! The speed-up loss chart of a scale directory: per thread count m, the
//! threads doing useful work P, the speed-up lost to memory contention R
//! and to other dependencies D (stacked, P + R + D = m), with the measured
//! and the modelled speed-up (Venter 2016, Eq. 3.2–3.8; docs/model.md).

use super::ScaleReport;
use crate::report::figure::{Axis, Bars, Figure, Plot, Series};

/// The figures of a scale report (none without a usable thread count).
pub fn figures(s: &ScaleReport) -> Vec<Figure> {
    let rows = &s.speedup.by_threads;
    if rows.is_empty() {
        return Vec::new();
    }
    vec![Figure {
        name: "speedup-loss".into(),
        title: "Speed-up loss".into(),
        caption: "Per thread count m: threads doing useful work P = A/(1+ω), speed-up lost to memory contention R = A − P and to other dependencies D = m − A (stacked to m); lines: the measured speed-up T(1)/T(m) and the modelled S = A/(1+ω).".into(),
        plot: Plot::Bars(Bars {
            categories: rows.iter().map(|r| format!("m = {}", r.m)).collect(),
            series: vec![
                Series {
                    label: "P (useful)".into(),
                    values: rows.iter().map(|r| r.useful_threads).collect(),
                },
                Series {
                    label: "R (memory contention)".into(),
                    values: rows.iter().map(|r| r.loss_memory).collect(),
                },
                Series {
                    label: "D (other dependencies)".into(),
                    values: rows.iter().map(|r| r.loss_dependencies).collect(),
                },
            ],
            stacked: true,
            lines: vec![
                Series {
                    label: "Speed-up, measured".into(),
                    values: rows.iter().map(|r| r.speedup_measured).collect(),
                },
                Series {
                    label: "Speed-up, modelled".into(),
                    values: rows.iter().map(|r| r.speedup_model).collect(),
                },
            ],
            x: Axis::new("Threads", ""),
            y: Axis::new("Speed-up and its loss", "threads"),
            ordered: true,
        }),
    }]
}
