//! The service-time figure: active threads, CPUs busy and run-queue
//! length over the run, from the samples (`service-over-time`).

use contend_trace::service::SampleFile;

use crate::report::figure::{Axis, Figure, Lines, Plot};

/// Per sampling interval, over the seconds since the target started: the
/// active threads, τ / ΔT_cp = Σ τ_j / max τ_j (the service time all
/// threads received in it over the longest any one received: Venter 2016,
/// Section 3.1.2, the per-interval term of Listing 3.3, whose average is
/// the report's "Active threads A, measured"); the CPUs busy, Σ τ_j / ΔT
/// (the service time over the interval's length: the report's "CPU time /
/// wall time" per interval, at most n); and the system run-queue length at
/// its end. Threads taking turns at a lock count as active in both of
/// their intervals (A assumes a thread waiting for a CPU is active), so A
/// lies above the CPUs busy where threads wait in the run queue or take
/// turns. `None` with fewer than two samples.
pub fn over_time(file: &SampleFile) -> Option<Figure> {
    if file.ticks.len() < 2 {
        return None;
    }
    let start = file.header.start_ns;
    let (mut active, mut busy, mut queue) = (Vec::new(), Vec::new(), Vec::new());
    let intervals = super::intervals(file);
    for ((dt, taus), tick) in intervals.iter().zip(&file.ticks) {
        let x = tick.header.monotonic_ns.saturating_sub(start) as f64 / 1e9;
        if *dt > 0 {
            let tau: u64 = taus.iter().sum();
            let longest = taus.iter().copied().max().unwrap_or(0);
            active.push((x, super::interval_active_threads(tau, longest)));
            busy.push((x, tau as f64 / *dt as f64));
        }
        if let Some(rq) = tick.header.run_queue_read() {
            queue.push((x, f64::from(rq)));
        }
    }
    Some(Figure {
        name: "service-over-time".into(),
        title: "Service time over time".into(),
        caption: "Per sampling interval: the active threads (Σ τ / max τ, the service time all threads received over the longest any one received, Venter 2016, Listing 3.3: threads in the run queue or taking turns at a lock count as active), the CPUs busy (the service time ÷ the interval) and the system run-queue length (runnable tasks, the sampler included) at each tick that read it (the ticks the sampler made from the scheduler events after sleeping through them read none).".into(),
        plot: Plot::Lines(Lines {
            series: vec![
                ("Active threads (Στ / max τ)".into(), active),
                ("CPUs busy (Στ / interval)".into(), busy),
                ("Run queue".into(), queue),
            ],
            x: Axis::new("Time since start", "s"),
            y: Axis::new("Threads", "threads"),
        }),
    })
}
