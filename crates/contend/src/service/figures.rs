//! The service-time figure: active threads and run-queue length over the
//! run, from the samples (`service-over-time`).

use contend_trace::service::SampleFile;

use crate::report::figure::{Axis, Figure, Lines, Plot};

/// Per sampling interval: the active threads (the service time all
/// threads received in it ÷ its length, Venter 2016, Section 3.1.2) and
/// the system run-queue length at its end, over the seconds since the
/// target started. `None` with fewer than two samples.
pub fn over_time(file: &SampleFile) -> Option<Figure> {
    if file.ticks.len() < 2 {
        return None;
    }
    let start = file.header.start_ns;
    let mut active = Vec::new();
    let mut queue = Vec::new();
    let intervals = super::intervals(file);
    for ((dt, taus), tick) in intervals.iter().zip(&file.ticks) {
        let x = tick.header.monotonic_ns.saturating_sub(start) as f64 / 1e9;
        if *dt > 0 {
            let tau: u64 = taus.iter().sum();
            active.push((x, tau as f64 / *dt as f64));
        }
        queue.push((x, f64::from(tick.header.run_queue)));
    }
    Some(Figure {
        name: "service-over-time".into(),
        title: "Service time over time".into(),
        caption: "Active threads per sampling interval (service time received by all threads ÷ interval) and the system run-queue length (runnable tasks, the sampler included) at each sample.".into(),
        plot: Plot::Lines(Lines {
            series: vec![
                ("Active threads".into(), active),
                ("Run queue".into(), queue),
            ],
            x: Axis::new("Time since start", "s"),
            y: Axis::new("Threads", "threads"),
        }),
    })
}
