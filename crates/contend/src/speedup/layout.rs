//! Sections of the report of a scale directory: the speed-up loss model
//! (Venter 2016, Eq. 3.2–3.8; Tables 4.1–4.8 and 4.11; docs/model.md),
//! drawn by every table format like the lock sections.
//!
//! Order: the experiment (fields), warnings, speed-up loss per m, time
//! lost, work and wall time with their spread over repeats, service time
//! (Table 4.8), cache misses (Tables 4.1, 4.3) or why there are none, the
//! split of the time lost to dependencies (Table 4.11), the memory model
//! (Eq. 3.6, 3.7) with its modelled C(n), and induced memory contention
//! (Tables 4.6, 4.7).

use super::analysis::{ModelledWork, ScaleReport, SpeedupReport, SpeedupRow};
use crate::report::layout::{command_line, Body, Cell, Column, Panel, Row, Table};

fn col(title: &str, key: &str, numeric: bool) -> Column {
    Column {
        legend: None,
        title: title.to_string(),
        key: key.to_string(),
        numeric,
        detail: false,
        label: false,
        wrap: false,
    }
}

fn num(title: &str, key: &str) -> Column {
    col(title, key, true)
}

fn section(id: &'static str, title: &str, caption: &str, body: Body) -> Panel {
    Panel {
        id,
        title: title.to_string(),
        caption: caption.to_string(),
        body,
    }
}

fn table(columns: Vec<Column>, rows: Vec<Row>) -> Body {
    Body::Table(Table {
        columns,
        rows,
        ..Table::default()
    })
}

/// A real with `d` decimals; empty for `None`.
fn dec(x: Option<f64>, d: usize) -> Cell {
    x.map_or(Cell::Empty, |x| Cell::Decimal(x, d))
}

/// Seconds, 3 decimals, sign kept.
fn secs(x: f64) -> Cell {
    Cell::Decimal(x, 3)
}

/// A relative standard deviation, per cent → a share cell.
fn rsd(x: Option<f64>) -> Cell {
    x.map_or(Cell::Empty, |p| Cell::Fraction(p / 100.0))
}

/// A work value: a count of cycles, or CPU seconds.
fn work(x: f64, cycles: bool) -> Cell {
    if cycles {
        Cell::Count(x.max(0.0).round() as u64)
    } else {
        secs(x)
    }
}

fn row_key(r: &SpeedupRow) -> String {
    format!("m{}", r.m)
}

fn experiment_section(r: &ScaleReport, s: &SpeedupReport) -> Panel {
    let mut measure = s.work_measure.clone();
    if !s.work_measure_note.is_empty() {
        measure = format!("{measure} ({})", s.work_measure_note);
    }
    let mut fields = vec![
        ("scale_dir", "Scale directory", s.scale_dir.clone()),
        ("command", "Command", command_line(&s.command)),
        ("work_measure", "Work measure C", measure),
        (
            "cache_misses",
            "Cache misses",
            s.cache_misses_missing
                .clone()
                .unwrap_or_else(|| "counted".to_string()),
        ),
        ("repeat", "Repeats", s.repeat.to_string()),
        (
            "machine",
            "Sockets × cores per socket",
            format!("{} × {}", s.sockets, s.cores_per_socket),
        ),
        (
            "complete",
            "Experiment complete",
            if s.complete { "yes" } else { "no" }.to_string(),
        ),
    ];
    if let Some(k) = s.stress_threads {
        fields.push((
            "stress_threads",
            "Memory contention generator threads",
            k.to_string(),
        ));
    }
    for (k, l, v) in [
        ("host", "Host", r.run.host.clone()),
        ("cpu_model", "CPU model", r.run.cpu_model.clone()),
        (
            "tool_version",
            "contend version",
            r.run.tool_version.clone(),
        ),
    ] {
        if !v.is_empty() {
            fields.push((k, l, v));
        }
    }
    let rows = fields
        .into_iter()
        .map(|(key, label, value)| Row {
            key: key.to_string(),
            cells: vec![Cell::Text(label.to_string()), Cell::Text(value)],
        })
        .collect();
    let mut label = col("Field", "field", false);
    label.label = true;
    section(
        "experiment",
        "Experiment",
        "The scale experiment.",
        Body::Table(Table {
            columns: vec![label, col("Value", "value", false)],
            rows,
            fields: true,
            ..Table::default()
        }),
    )
}

fn loss_section(s: &SpeedupReport) -> Panel {
    let rows = s
        .by_threads
        .iter()
        .map(|r| Row {
            key: row_key(r),
            cells: vec![
                Cell::Count(r.m.into()),
                Cell::Count(r.n.into()),
                Cell::Real(r.active_threads_measured),
                Cell::Real(r.active_threads_modelled),
                Cell::Decimal(r.omega, 3),
                Cell::Real(r.speedup_model),
                Cell::Real(r.speedup_measured),
                Cell::Real(r.loss_memory),
                Cell::Real(r.loss_dependencies),
            ],
        })
        .collect();
    section(
        "speedup",
        "Speed-up loss",
        "Per thread count m on n cores: average active threads A measured (Listing 3.3) and modelled \
         (Listing 3.4); ω = C(m)/C(1) − 1 (Eq. 3.5); modelled speed-up S = A/(1+ω) (Eq. 3.4) beside the \
         measured T(1)/T(m); speed-up lost to memory contention R = A − S (Eq. 3.3) and to other \
         dependencies D = m − A (Eq. 3.8), in threads: m = S + R + D (cf. Venter 2016, Table 4.5).",
        table(
            vec![
                num("m", "m").explained("threads the program ran with"),
                num("n", "n").explained("cores it ran on"),
                num("A meas.", "active_threads_measured").explained("average number of active threads on m cores, measured from service time: Στ / ΣΔT_cp (Venter 2016, Listing 3.3), threads"),
                num("A model", "active_threads_modelled").explained("the same modelled for n cores (Venter 2016, Listing 3.4), threads"),
                num("ω", "omega").explained("C(m)/C(1) − 1: work added by memory contention per unit of useful work (Venter 2016, Eq. 3.5); with C as CPU time it includes busy waiting the lock collector does not see"),
                num("S model", "speedup_model").explained("modelled speed-up S = A/(1+ω), the threads doing useful work (the thesis's P; Venter 2016, Eq. 3.2, 3.4), threads"),
                num("S meas.", "speedup_measured").explained("measured speed-up T(1)/T(m)"),
                num("R memory", "loss_memory").explained("speed-up lost to memory contention, A − S (Venter 2016, Eq. 3.3), threads"),
                num("D deps", "loss_dependencies").explained("speed-up lost to other dependencies (locks, waits, idleness), m − A (Venter 2016, Eq. 3.8), threads"),
            ],
            rows,
        ),
    )
}

fn time_lost_section(s: &SpeedupReport) -> Panel {
    let rows = s
        .by_threads
        .iter()
        .map(|r| Row {
            key: row_key(r),
            cells: vec![
                Cell::Count(r.m.into()),
                secs(r.time_lost_memory_s),
                secs(r.time_lost_dependencies_s),
                secs(r.wall_lost_memory_s),
                secs(r.wall_lost_dependencies_s),
                secs(r.wall_lost_unexplained_s),
            ],
        })
        .collect();
    section(
        "time_lost",
        "Time lost",
        "Time lost to memory contention R·T(m) and to other dependencies D·T(m) in core-seconds (summed \
         over the m cores, like service time), and the same spread over the cores (÷ m) in seconds of \
         wall time, which with the unexplained rest add up to T(m) − T(1)/m (cf. Venter 2016, Table 4.5; \
         docs/model.md).",
        table(
            vec![
                num("m", "m").explained("threads the program ran with"),
                num("Memory (core-s)", "time_lost_memory_s").explained("CPU time lost to memory contention, R × T(m), core-seconds"),
                num("Deps (core-s)", "time_lost_dependencies_s").explained("CPU time lost to dependencies, D × T(m), core-seconds"),
                num("Memory (wall s)", "wall_lost_memory_s").explained("wall time lost to memory contention, R × T(m) / m, s"),
                num("Deps (wall s)", "wall_lost_dependencies_s").explained("wall time lost to dependencies, D × T(m) / m, s"),
                num("Unexplained (s)", "wall_lost_unexplained_s").explained("T(m) − T(1)/m − both wall losses: what the model does not explain, s"),
            ],
            rows,
        ),
    )
}

fn work_section(s: &SpeedupReport) -> Panel {
    let cycles = s.work_unit == "cycles";
    let rows = s
        .by_threads
        .iter()
        .map(|r| Row {
            key: row_key(r),
            cells: vec![
                Cell::Count(r.m.into()),
                work(r.work_1, cycles),
                work(r.work_m, cycles),
                Cell::Change(crate::speedup::change_pct(r.work_1, r.work_m)),
                rsd(r.work_1_rsd_pct),
                rsd(r.work_m_rsd_pct),
                secs(r.wall_1_s),
                secs(r.wall_m_s),
                rsd(r.wall_1_rsd_pct),
                rsd(r.wall_m_rsd_pct),
            ],
        })
        .collect();
    let unit = if cycles { "cycles" } else { "CPU seconds" };
    section(
        "work",
        "Work and wall time",
        &format!(
            "Work C on 1 and on n = m cores ({unit}; cf. Venter 2016, Table 4.2), wall time T, and their \
             relative standard deviation over the repeats (Table 4.4; empty with one repeat)."
        ),
        table(
            vec![
                num("m", "m").explained("threads the program ran with"),
                num("C(1)", "work_1").explained("work on 1 core: cycles, or CPU seconds without a hardware PMU (Venter 2016, Section 3.1.1)"),
                num("C(m)", "work_m").explained("work on m cores, same unit"),
                num("Change", "work_change_pct"),
                num("RSD C(1)", "work_1_rsd_pct").explained("relative standard deviation of C(1) over the repeats, %"),
                num("RSD C(m)", "work_m_rsd_pct").explained("relative standard deviation of C(m) over the repeats, %"),
                num("T(1) s", "wall_1_s").explained("wall time on 1 core, s"),
                num("T(m) s", "wall_m_s").explained("wall time on m cores, s"),
                num("RSD T(1)", "wall_1_rsd_pct").explained("relative standard deviation of T(1), %"),
                num("RSD T(m)", "wall_m_rsd_pct").explained("relative standard deviation of T(m), %"),
            ],
            rows,
        ),
    )
}

fn service_section(s: &SpeedupReport) -> Panel {
    let rows = s
        .by_threads
        .iter()
        .map(|r| Row {
            key: row_key(r),
            cells: vec![
                Cell::Count(r.m.into()),
                secs(r.service_time_1_s),
                secs(r.service_time_m_s),
                Cell::Change(r.service_time_change_pct),
                secs(r.ideal_running_time_s),
                secs(r.actual_running_time_s),
                Cell::Change(r.running_time_change_pct),
            ],
        })
        .collect();
    section(
        "service_time",
        "Service time",
        "Total service time of the m threads on 1 core and on n = m cores, the ideal running time on m \
         cores (service time on 1 core ÷ m) and the actual one T(m), seconds (cf. Venter 2016, Table 4.8).",
        table(
            vec![
                num("m", "m").explained("threads the program ran with"),
                num("Service 1 core", "service_time_1_s"),
                num("Service m cores", "service_time_m_s"),
                num("Change", "service_time_change_pct"),
                num("Ideal T", "ideal_running_time_s").explained("T(1)/m, s"),
                num("Actual T", "actual_running_time_s"),
                num("Over ideal", "running_time_change_pct").explained("T(m) over the ideal T(1)/m, %"),
            ],
            rows,
        ),
    )
}

fn cache_section(s: &SpeedupReport) -> Panel {
    let title = "Cache misses";
    if let Some(why) = &s.cache_misses_missing {
        return section(
            "cache_misses",
            title,
            "Why there are no cache-miss metrics.",
            Body::Paragraph(format!(
                "No cycles per cache miss, miss rate or cache misses on 1 vs m cores (Venter 2016, \
                 Tables 4.1 and 4.3): {why}."
            )),
        );
    }
    let rows = s
        .by_threads
        .iter()
        .map(|r| Row {
            key: row_key(r),
            cells: vec![
                Cell::Count(r.m.into()),
                r.cache_misses_1
                    .map_or(Cell::Empty, |x| Cell::Count(x.round() as u64)),
                r.cache_misses_m
                    .map_or(Cell::Empty, |x| Cell::Count(x.round() as u64)),
                Cell::Change(r.cache_misses_change_pct),
                rsd(r.cache_misses_rsd_pct),
                dec(r.cycles_per_miss, 2),
                r.misses_per_second
                    .map_or(Cell::Empty, |x| Cell::Count(x.round() as u64)),
            ],
        })
        .collect();
    section(
        "cache_misses",
        title,
        "Last-level cache misses on 1 and on m cores (cf. Venter 2016, Table 4.3) with their spread over \
         repeats (Table 4.4); on m cores, work cycles per miss (CCM: lower = more memory-bound, idle time \
         excluded) and misses per second of wall time (Table 4.1).",
        table(
            vec![
                num("m", "m").explained("threads the program ran with"),
                num("Misses 1 core", "cache_misses_1"),
                num("Misses m cores", "cache_misses_m"),
                num("Change", "cache_misses_change_pct"),
                num("RSD", "cache_misses_rsd_pct"),
                num("CCM", "cycles_per_miss").explained("cycles per last-level cache miss"),
                num("Misses/s", "misses_per_second"),
            ],
            rows,
        ),
    )
}

fn dependencies_section(s: &SpeedupReport) -> Option<Panel> {
    let rows: Vec<Row> = s
        .by_threads
        .iter()
        .filter_map(|r| {
            let d = r.dependencies.as_ref()?;
            Some(Row {
                key: row_key(r),
                cells: vec![
                    Cell::Count(r.m.into()),
                    secs(d.total_s),
                    secs(d.lock_wait_s),
                    secs(d.other_sync_wait_s),
                    secs(d.unaccounted_s),
                    secs(d.spin_wait_s),
                    secs(d.other_threads_wait_s),
                    secs(d.waits_beyond_loss_s),
                ],
            })
        })
        .collect();
    (!rows.is_empty()).then(|| {
        section(
            "dependencies",
            "Lock waits in the time lost to dependencies",
            "The time lost to other dependencies D·T(m) (core-seconds) split into time the m workers (the \
             threads with the most service time) waited for mutexes and rwlocks, time at condition \
             variables, barriers and semaphores, and the rest not accounted for by a traced wait; spinlock \
             waits are busy time, counted in A, shown for reference; waits of other threads are not lost \
             speed-up (cf. Venter 2016, Table 4.11).",
            table(
                vec![
                    num("m", "m").explained("threads the program ran with"),
                    num("Deps (core-s)", "total_s"),
                    num("Lock wait", "lock_wait_s").explained("time the m workers waited for mutexes and rwlocks, core-seconds"),
                    num("Other sync wait", "other_sync_wait_s").explained("time the m workers waited at condition variables, barriers and semaphores, core-seconds"),
                    num("Unaccounted", "unaccounted_s").explained("D × T(m) − lock wait − other sync wait, never below 0: idleness no recorded wait explains, core-seconds"),
                    num("Spin wait", "spin_wait_s").explained("the workers' wait in spinlocks, core-seconds: on a CPU, so counted in A, not in D (and taken out of C when C is CPU time)"),
                    num("Other threads", "other_threads_wait_s").explained("waits of the threads beyond the m workers (reader, writer, main thread), core-seconds: not lost speed-up"),
                    num("Beyond loss", "waits_beyond_loss_s").explained("how much the workers' waits exceed D × T(m): waits while no thread ran, which A does not count as lost, core-seconds"),
                ],
                rows,
            ),
        )
    })
}

fn memory_model_section(s: &SpeedupReport) -> Option<Panel> {
    let rows: Vec<Row> = s
        .by_threads
        .iter()
        .filter_map(|r| {
            let mm = r.memory_model.as_ref()?;
            Some(Row {
                key: row_key(r),
                cells: vec![
                    Cell::Count(r.m.into()),
                    Cell::Count(mm.points.into()),
                    Cell::Text(format!("{:.4e}", mm.slope)),
                    Cell::Text(format!("{:.4e}", mm.intercept)),
                    mm.mu
                        .map_or(Cell::Empty, |x| Cell::Text(format!("{x:.4e}"))),
                    mm.l.map_or(Cell::Empty, |x| Cell::Text(format!("{x:.4e}"))),
                    mm.lambda
                        .map_or(Cell::Empty, |x| Cell::Text(format!("{x:.4e}"))),
                ],
            })
        })
        .collect();
    (!rows.is_empty()).then(|| {
        section(
            "memory_model",
            "Memory model",
            "Line of best fit (Listing 3.1) through (n, 1/C(n)) of the runs on one socket: from \
             C(n) = r/(μ − n·L) (Eq. 3.6) the intercept is μ/r and the slope −L/r; μ, L and λ = n·L \
             (requests per work unit) need the cache misses r (docs/model.md).",
            table(
                vec![
                    num("m", "m").explained("threads the program ran with"),
                    num("Points", "points"),
                    num("Slope", "slope"),
                    num("Intercept", "intercept"),
                    num("μ", "mu").explained("memory service time per request (Venter 2016, Listing 3.1)"),
                    num("L", "l").explained("memory latency per request without contention (Venter 2016, Listing 3.1)"),
                    num("λ", "lambda").explained("memory request rate (Venter 2016, Listing 3.1)"),
                ],
                rows,
            ),
        )
    })
}

fn modelled_rows(
    r: &SpeedupRow,
    model: &str,
    works: &[ModelledWork],
    cycles: bool,
    out: &mut Vec<Row>,
) {
    for w in works {
        out.push(Row {
            key: format!("m{}:n{}:{model}", r.m, w.n),
            cells: vec![
                Cell::Count(r.m.into()),
                Cell::Count(w.n.into()),
                Cell::Text(if w.extrapolated {
                    format!("{model}, extrapolated")
                } else {
                    model.to_string()
                }),
                w.work
                    .map_or(Cell::Text("saturated".into()), |x| work(x, cycles)),
                dec(w.omega, 3),
            ],
        });
    }
}

fn modelled_section(s: &SpeedupReport) -> Option<Panel> {
    let cycles = s.work_unit == "cycles";
    let mut rows = Vec::new();
    for r in &s.by_threads {
        if let Some(mm) = &r.memory_model {
            modelled_rows(r, "Venter 2016, Eq. 3.6", &mm.modelled, cycles, &mut rows);
        }
        if let Some(numa) = &r.numa {
            modelled_rows(
                r,
                "Venter 2016, Eq. 3.7 (NUMA)",
                &numa.modelled,
                cycles,
                &mut rows,
            );
        }
    }
    (!rows.is_empty()).then(|| {
        section(
            "modelled_work",
            "Modelled work",
            "C(n) and ω(m, n) modelled for other core counts n (Eq. 3.6 on one socket; Eq. 3.7 beyond it); \
             saturated = the model's memory queue cannot keep up (μ ≤ n·L).",
            table(
                vec![
                    num("m", "m").explained("threads the program ran with"),
                    num("n", "n").explained("cores it ran on"),
                    col("Model", "model", false).explained("the equation of Venter 2016 that gives C(n); extrapolated: n is more than the machine's CPUs, no run backs the value"),
                    num("C(n)", "work"),
                    num("ω(m,n)", "omega").explained("ω of m threads on n cores, modelled"),
                ],
                rows,
            ),
        )
    })
}

fn numa_section(s: &SpeedupReport) -> Option<Panel> {
    let cycles = s.work_unit == "cycles";
    let rows: Vec<Row> = s
        .by_threads
        .iter()
        .filter_map(|r| {
            let n = r.numa.as_ref()?;
            Some(Row {
                key: row_key(r),
                cells: vec![
                    Cell::Count(r.m.into()),
                    Cell::Count(n.c.into()),
                    work(n.work_c, cycles),
                    Cell::Decimal(n.delta, 3),
                    dec(n.delta_per_miss, 4),
                ],
            })
        })
        .collect();
    (!rows.is_empty()).then(|| {
        section(
            "numa",
            "NUMA model",
            "Work on one socket's c cores and δ = (C(m) − C(c))/(m − c), the extra work per core beyond \
             the socket (Eq. 3.7 as decided in docs/model.md); δ/r per cache miss.",
            table(
                vec![
                    num("m", "m").explained("threads the program ran with"),
                    num("c", "c"),
                    num("C(c)", "work_c"),
                    num("δ", "delta").explained("NUMA factor (Venter 2016, Eq. 3.7)"),
                    num("δ/r", "delta_per_miss"),
                ],
                rows,
            ),
        )
    })
}

fn stress_section(s: &SpeedupReport) -> Option<Panel> {
    let cycles = s.work_unit == "cycles";
    let mut rows = Vec::new();
    for r in &s.by_threads {
        for st in &r.stress {
            rows.push(Row {
                key: format!("m{}:n{}", r.m, st.n),
                cells: vec![
                    Cell::Count(r.m.into()),
                    Cell::Count(st.n.into()),
                    work(st.work_without, cycles),
                    work(st.work_with, cycles),
                    Cell::Change(st.work_change_pct),
                    secs(st.service_time_without_s),
                    secs(st.service_time_with_s),
                    Cell::Change(st.service_time_change_pct),
                    dec(st.omega_with, 3),
                    st.bandwidth_bytes_per_s
                        .map_or(Cell::Empty, |b| Cell::Decimal(b / 1e9, 2)),
                ],
            });
        }
    }
    (!rows.is_empty()).then(|| {
        section(
            "stress",
            "Induced memory contention",
            "Work and service time without and with the memory contention generator running beside the \
             program on other cores (cf. Venter 2016, Tables 4.6 and 4.7), ω against the undisturbed \
             1-core work, and the generator's bandwidth (GB/s).",
            table(
                vec![
                    num("m", "m").explained("threads the program ran with"),
                    num("n", "n").explained("cores it ran on"),
                    num("C without", "work_without"),
                    num("C with", "work_with"),
                    num("Change", "work_change_pct"),
                    num("Service without", "service_time_without_s"),
                    num("Service with", "service_time_with_s"),
                    num("Change", "service_time_change_pct"),
                    num("ω with", "omega_with"),
                    num("GB/s", "bandwidth_gb_per_s"),
                ],
                rows,
            ),
        )
    })
}

/// The panels of a scale directory's report, in display order.
pub fn panels(r: &ScaleReport) -> Vec<Panel> {
    let s = &r.speedup;
    let mut out = vec![experiment_section(r, s)];
    let warnings: Vec<String> = s
        .work_measure_caveat
        .iter()
        .chain(&r.warnings)
        .cloned()
        .collect();
    if !warnings.is_empty() {
        out.push(section(
            "warnings",
            "Warnings",
            "Problems found while reading the scale directory, and what the work measure means here.",
            Body::Warnings(warnings),
        ));
    }
    out.push(loss_section(s));
    out.push(time_lost_section(s));
    out.push(work_section(s));
    out.push(service_section(s));
    out.push(cache_section(s));
    out.extend(dependencies_section(s));
    out.extend(memory_model_section(s));
    out.extend(numa_section(s));
    out.extend(modelled_section(s));
    out.extend(stress_section(s));
    out
}
