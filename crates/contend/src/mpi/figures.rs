//! The MPI section's figures: wait per rank (experienced, split into
//! point-to-point and collective, with the wait each rank caused), wait
//! per pattern, and the event classes (Venter 2016, Tables 4.13–4.15 as
//! charts).

use super::analysis::Pattern;
use super::report::MpiReport;
use crate::report::figure::{time_unit, Axis, Bars, Figure, Plot, Series};

/// The figures of the MPI section.
pub fn report_figures(r: &MpiReport) -> Vec<Figure> {
    let mut out = Vec::new();
    if !r.by_rank.is_empty() {
        let max = r
            .by_rank
            .iter()
            .map(|x| x.wait_ns.max(x.caused_ns))
            .max()
            .unwrap_or(0) as f64;
        let (div, unit) = time_unit(max);
        out.push(Figure {
            name: "mpi-wait-by-rank".into(),
            title: "MPI wait per rank".into(),
            caption: "Time each rank lost in wait states (point to point and collective, stacked) and the wait it caused other ranks (line). Venter 2016, Table 4.15.".into(),
            plot: Plot::Bars(Bars {
                categories: r.by_rank.iter().map(|x| format!("rank {}", x.rank)).collect(),
                series: vec![
                    Series {
                        label: "Point-to-point wait".into(),
                        values: r.by_rank.iter().map(|x| x.p2p_wait_ns as f64 / div).collect(),
                    },
                    Series {
                        label: "Collective wait".into(),
                        values: r
                            .by_rank
                            .iter()
                            .map(|x| x.collective_wait_ns as f64 / div)
                            .collect(),
                    },
                ],
                stacked: true,
                lines: vec![Series {
                    label: "Wait caused".into(),
                    values: r.by_rank.iter().map(|x| x.caused_ns as f64 / div).collect(),
                }],
                x: Axis::new("Rank", ""),
                y: Axis::new("Wait time", unit),
                ordered: true,
            }),
        });
    }
    let patterns: Vec<Pattern> = Pattern::ALL.to_vec();
    let max = patterns
        .iter()
        .map(|&p| r.pattern(p).wait_ns)
        .max()
        .unwrap_or(0) as f64;
    if max > 0.0 {
        let (div, unit) = time_unit(max);
        out.push(Figure {
            name: "mpi-wait-by-pattern".into(),
            title: "MPI wait per pattern".into(),
            caption: "Time lost in each wait-state pattern, all ranks. Venter 2016, Table 4.14."
                .into(),
            plot: Plot::Bars(Bars {
                categories: patterns.iter().map(|p| p.label().to_string()).collect(),
                series: vec![Series {
                    label: "Wait".into(),
                    values: patterns
                        .iter()
                        .map(|&p| r.pattern(p).wait_ns as f64 / div)
                        .collect(),
                }],
                stacked: false,
                lines: Vec::new(),
                x: Axis::new("Pattern", ""),
                y: Axis::new("Wait time", unit),
                ordered: false,
            }),
        });
    }
    let classes = [("Point to point", &r.p2p), ("Collective", &r.collective)];
    let max = classes
        .iter()
        .map(|c| c.1.duration_ns.max(c.1.wait_ns))
        .max()
        .unwrap_or(0) as f64;
    if max > 0.0 {
        let (div, unit) = time_unit(max);
        out.push(Figure {
            name: "mpi-classes".into(),
            title: "MPI time per event class".into(),
            caption: "Time spent in the MPI calls of each class and the part of it lost in wait states. Venter 2016, Table 4.13.".into(),
            plot: Plot::Bars(Bars {
                categories: classes.iter().map(|c| c.0.to_string()).collect(),
                series: vec![
                    Series {
                        label: "Duration".into(),
                        values: classes.iter().map(|c| c.1.duration_ns as f64 / div).collect(),
                    },
                    Series {
                        label: "Wait".into(),
                        values: classes.iter().map(|c| c.1.wait_ns as f64 / div).collect(),
                    },
                ],
                stacked: false,
                lines: Vec::new(),
                x: Axis::new("Event class", ""),
                y: Axis::new("Time", unit),
                ordered: false,
            }),
        });
    }
    out
}
