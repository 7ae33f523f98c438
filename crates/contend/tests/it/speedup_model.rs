//! The speed-up loss model on scale directories built by hand: a
//! manifest (`scale.json`) and, per run, a minimal recording (`meta.json`
//! with counters, `service.csamp`, lock traces), with numbers chosen so
//! that every output is known (Venter 2016, Eq. 3.2–3.8, Tables 4.1–4.8,
//! 4.11; docs/model.md). Plus the error cases: a failed run, a missing run
//! directory, a corrupt manifest, no usable pair.

use std::collections::BTreeMap;
use std::path::Path;

use contend::render::{render_scale, OutputFormat};
use contend::report::RenderOptions;
use contend::speedup::{analyze_scale_dir, scale_report, SpeedupError};
use contend::NoProgress;
use contend_trace::counters::{CounterValue, MissingCounter, RunCounters};
use contend_trace::meta::RunMeta;
use contend_trace::scale::{ScaleManifest, ScaleRun, SCALE_FORMAT_VERSION};
use contend_trace::service::{
    encode_header, encode_tick, Entry, Header, TickHeader, ENTRY_NEW, FILE_NAME,
};
use contend_trace::{Phase, Primitive, RawOp, TraceBuilder, NO_STACK};

const NO_PMU: &str = "not supported: no hardware PMU on this machine (ENOENT)";

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1.0)
}

macro_rules! assert_close {
    ($a:expr, $b:expr) => {{
        let (a, b): (f64, f64) = ($a, $b);
        assert!(close(a, b), "{} = {a}, expected {b}", stringify!($a));
    }};
}

/// One run to write.
struct Run {
    m: u32,
    n: u32,
    repeat: u32,
    stress: bool,
    wall_s: f64,
    /// CPU time from wait4, s.
    cpu_s: f64,
    cycles: Option<u64>,
    misses: Option<u64>,
    /// Sampling: ticks of `interval_ms`, each thread receiving the given
    /// ms of service per interval.
    ticks: u64,
    taus_ms: Vec<u64>,
    locks: bool,
    exit_code: Option<i32>,
    bandwidth: Option<f64>,
}

impl Run {
    fn new(m: u32, n: u32, repeat: u32, wall_s: f64, cpu_s: f64) -> Run {
        Run {
            m,
            n,
            repeat,
            stress: false,
            wall_s,
            cpu_s,
            cycles: None,
            misses: None,
            ticks: 0,
            taus_ms: Vec::new(),
            locks: false,
            exit_code: Some(0),
            bandwidth: None,
        }
    }
    fn samples(mut self, ticks: u64, taus_ms: &[u64]) -> Run {
        self.ticks = ticks;
        self.taus_ms = taus_ms.to_vec();
        self
    }
    fn dir(&self) -> String {
        format!(
            "m{}-n{}-r{}{}",
            self.m,
            self.n,
            self.repeat,
            if self.stress { "-stress" } else { "" }
        )
    }
}

const MS: u64 = 1_000_000;
const INTERVAL_MS: u64 = 100;

fn write_samples(dir: &Path, r: &Run) {
    let start = 1_000 * MS;
    let mut b = encode_header(&Header {
        start_ns: start,
        interval_ns: INTERVAL_MS * MS,
        cpus: r.n,
        clk_tck: 100,
        kernel_tick_ns: 4_000_000,
    })
    .to_vec();
    for k in 1..=r.ticks {
        let entries: Vec<Entry> = r
            .taus_ms
            .iter()
            .enumerate()
            .map(|(i, &tau)| Entry {
                pid: 500,
                tid: 500 + i as u32,
                run_ns: k * tau * MS,
                wait_ns: 0,
                slices: k as u32,
                flags: if k == 1 { ENTRY_NEW } else { 0 },
            })
            .collect();
        encode_tick(
            &mut b,
            &TickHeader {
                monotonic_ns: start + k * INTERVAL_MS * MS,
                run_queue: r.n,
                flags: 0,
            },
            &entries,
        );
    }
    std::fs::write(dir.join(FILE_NAME), b).unwrap();
}

fn op(s: f64, primitive: Primitive, phase: Phase, object: u64) -> RawOp {
    RawOp {
        ticks: (s * 1e9) as u64,
        object,
        site: 0x401000 + object,
        primitive,
        phase,
        stack: NO_STACK,
    }
}

/// Thread 501 waits 0.9 s for a mutex thread 500 holds; thread 500 later
/// spins 0.2 s on a spinlock; thread 502, which the sampler never saw run
/// (a reader or main thread, not one of the m workers), waits 7 s at a
/// condition variable. CLOCK_MONOTONIC ticks (ns).
fn write_locks(dir: &Path) {
    use Phase::*;
    use Primitive::*;
    let (m, s) = (0x6000u64, 0x7000u64);
    let bytes = TraceBuilder {
        pid: 500,
        threads: vec![
            (
                500,
                vec![
                    op(1.0, Mutex, Immediate, m),
                    op(2.0, Mutex, Release, m),
                    op(3.0, Spin, Request, s),
                    op(3.2, Spin, Acquired, s),
                    op(3.3, Spin, Release, s),
                ],
            ),
            (
                501,
                vec![
                    op(1.1, Mutex, Request, m),
                    op(2.0, Mutex, Acquired, m),
                    op(2.1, Mutex, Release, m),
                ],
            ),
            (
                502,
                vec![
                    op(0.5, Cond, Request, 0x8000),
                    op(7.5, Cond, Acquired, 0x8000),
                ],
            ),
        ],
        ..TraceBuilder::default()
    }
    .to_bytes();
    std::fs::create_dir_all(dir.join("locks")).unwrap();
    std::fs::write(dir.join("locks").join("500.ctrace"), bytes).unwrap();
}

fn counter(value: u64) -> CounterValue {
    CounterValue {
        value,
        raw: value,
        time_enabled_ns: 1,
        time_running_ns: 1,
        user_only: false,
    }
}

fn write_run(scale: &Path, r: &Run) -> ScaleRun {
    let dir = scale.join(r.dir());
    std::fs::create_dir_all(&dir).unwrap();
    let mut available = BTreeMap::new();
    let mut missing = Vec::new();
    match r.cycles {
        Some(c) => {
            available.insert("cycles".to_string(), counter(c));
        }
        None => missing.push(MissingCounter {
            name: "cycles".into(),
            reason: NO_PMU.into(),
        }),
    }
    match r.misses {
        Some(c) => {
            available.insert("llc_misses".to_string(), counter(c));
        }
        None => missing.push(MissingCounter {
            name: "llc_misses".into(),
            reason: NO_PMU.into(),
        }),
    }
    let meta = RunMeta {
        tool_version: "test".into(),
        command: vec!["./prog".into(), r.m.to_string()],
        host: "testhost".into(),
        cpu_model: "Test CPU".into(),
        cpus: 8,
        complete: true,
        exit_code: r.exit_code,
        wall_ns: Some((r.wall_s * 1e9) as u64),
        clock: "monotonic".into(),
        pid: Some(500),
        counters: Some(RunCounters {
            available,
            missing,
            cpu_time_ns: Some((r.cpu_s * 1e9).round() as u64),
            scope: None,
        }),
        cpus_allowed: Some((0..r.n).collect()),
        ..RunMeta::default()
    };
    meta.write(&dir).unwrap();
    if r.ticks > 0 {
        write_samples(&dir, r);
    }
    if r.locks {
        write_locks(&dir);
    }
    ScaleRun {
        m: r.m,
        n: r.n,
        repeat: r.repeat,
        stress: r.stress,
        cpus: (0..r.n).collect(),
        dir: r.dir(),
        command: vec!["./prog".into(), r.m.to_string()],
        exit_code: r.exit_code,
        signal: None,
        wall_s: r.wall_s,
        stress_bandwidth_bytes_per_s: r.bandwidth,
        ..ScaleRun::default()
    }
}

fn write_scale(scale: &Path, threads: Vec<u32>, sockets: u32, c: u32, runs: &[Run]) {
    let manifest = ScaleManifest {
        format_version: SCALE_FORMAT_VERSION,
        tool_version: "test".into(),
        command: vec!["./prog".into(), "{threads}".into()],
        threads,
        repeat: 2,
        stress_threads: runs.iter().any(|r| r.stress).then_some(1),
        cpus_available: (0..8).collect(),
        sockets,
        cores_per_socket: c,
        started_unix_s: 1.0e9,
        complete: true,
        runs: runs.iter().map(|r| write_run(scale, r)).collect(),
        ..ScaleManifest::default()
    };
    manifest.write(scale).unwrap();
}

/// m = 2, two repeats, no PMU (CPU time is the work measure):
///
/// - 1 core: walls 9 and 11 s, CPU 9.6 and 10.4 s; 100 samples of 100 ms
///   with both threads at 50 ms: service 10 s, A(2,1) = 2.
/// - 2 cores: walls 7.5 and 8.5 s, CPU 12.2 and 13.2 s; 80 samples with
///   the threads at 100 and 60 ms: service 12.8 s, A = 1.6; lock traces
///   with a 0.9 s mutex wait and a 0.2 s spin, which is taken out of the
///   CPU time: C = 12 and 13 s.
///
/// By hand: C(1) = 10, C(2) = 12.5, ω = 0.25, P = S = 1.6/1.25 = 1.28,
/// R = 0.32, D = 0.4, T(1) = 10, T(2) = 8, T(1)/T(2) = 1.25; time lost
/// R·T = 2.56 and D·T = 3.2 core-s, 1.28 and 1.6 wall s, unexplained
/// 8 − 5 − 1.28 − 1.6 = 0.12 s; ideal running time 10/2 = 5 s, +60 %;
/// service +28 %; RSD of C(1) √0.32/10 = 5.657 %, of C(2) √0.5/12.5, of
/// T(1) √2/10, of T(2) √0.5/8; Table 4.11: 3.2 − 0.9 = 2.3 s unaccounted.
fn uma_runs() -> Vec<Run> {
    let mut v = vec![
        Run::new(2, 1, 0, 9.0, 9.6).samples(100, &[50, 50]),
        Run::new(2, 1, 1, 11.0, 10.4).samples(100, &[50, 50]),
    ];
    for (rep, wall, cpu) in [(0, 7.5, 12.2), (1, 8.5, 13.2)] {
        let mut r = Run::new(2, 2, rep, wall, cpu).samples(80, &[100, 60]);
        r.locks = true;
        v.push(r);
    }
    v
}

#[test]
fn uma_model_by_hand() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write_scale(dir, vec![2], 1, 2, &uma_runs());
    let s = analyze_scale_dir(dir, &NoProgress).unwrap();
    assert_eq!(s.work_measure, "cpu time");
    assert_eq!(s.work_unit, "s");
    assert!(
        s.work_measure_note.contains("no hardware PMU"),
        "{}",
        s.work_measure_note
    );
    assert!(
        s.cache_misses_missing
            .as_deref()
            .is_some_and(|m| m.contains("llc_misses") && m.contains("no hardware PMU")),
        "{:?}",
        s.cache_misses_missing
    );
    assert!(s.warnings.is_empty(), "{:?}", s.warnings);
    assert_eq!(s.by_threads.len(), 1);
    let r = &s.by_threads[0];
    assert_eq!((r.m, r.n, r.runs_1, r.runs_m), (2, 2, 2, 2));
    assert_close!(r.work_1, 10.0);
    assert_close!(r.work_m, 12.5);
    assert_close!(r.omega, 0.25);
    assert_close!(r.active_threads_measured, 1.6);
    assert_close!(r.active_threads_modelled, 1.6);
    assert_close!(r.active_threads_1core.unwrap(), 2.0);
    assert_close!(r.useful_threads, 1.28);
    assert_close!(r.speedup_model, 1.28);
    assert_close!(r.loss_memory, 0.32);
    assert_close!(r.loss_dependencies, 0.4);
    assert_close!(r.wall_1_s, 10.0);
    assert_close!(r.wall_m_s, 8.0);
    assert_close!(r.speedup_measured, 1.25);
    assert_close!(r.time_lost_memory_s, 2.56);
    assert_close!(r.time_lost_dependencies_s, 3.2);
    assert_close!(r.wall_lost_memory_s, 1.28);
    assert_close!(r.wall_lost_dependencies_s, 1.6);
    assert_close!(r.wall_lost_unexplained_s, 0.12);
    assert_close!(r.service_time_1_s, 10.0);
    assert_close!(r.service_time_m_s, 12.8);
    assert_close!(r.service_time_change_pct.unwrap(), 28.0);
    assert_close!(r.ideal_running_time_s, 5.0);
    assert_close!(r.actual_running_time_s, 8.0);
    assert_close!(r.running_time_change_pct.unwrap(), 60.0);
    assert_close!(r.work_1_rsd_pct.unwrap(), 100.0 * 0.32f64.sqrt() / 10.0);
    assert_close!(r.work_m_rsd_pct.unwrap(), 100.0 * 0.5f64.sqrt() / 12.5);
    assert_close!(r.wall_1_rsd_pct.unwrap(), 100.0 * 2f64.sqrt() / 10.0);
    assert_close!(r.wall_m_rsd_pct.unwrap(), 100.0 * 0.5f64.sqrt() / 8.0);
    // No counters: absent, never zero.
    assert_eq!(r.cache_misses_1, None);
    assert_eq!(r.cycles_per_miss, None);
    assert_eq!(r.misses_per_second, None);
    // Table 4.11.
    let d = r.dependencies.as_ref().expect("lock traces were read");
    assert_eq!(d.runs, 2);
    assert_close!(d.total_s, 3.2);
    assert_close!(d.lock_wait_s, 0.9);
    assert_close!(d.spin_wait_s, 0.2);
    assert_close!(d.other_sync_wait_s, 0.0);
    assert_close!(d.unaccounted_s, 2.3);
    // Regression (pigz -p 2): the 7 s condition wait of a thread beyond
    // the m workers is not lost speed-up; it once made "unaccounted"
    // 3.2 − 0.9 − 7 = −4.7 s.
    assert_close!(d.other_threads_wait_s, 7.0);
    assert_close!(d.waits_beyond_loss_s, 0.0);
    assert!(d.unaccounted_s >= 0.0);
    // Eq. 3.6 through (1, 1/9.6), (1, 1/10.4), (2, 1/12), (2, 1/13): the
    // least-squares line passes through the mean 1/C at each n, so the
    // modelled C(1) = 2/(1/9.6 + 1/10.4) = 9.984 and C(2) =
    // 2/(1/12 + 1/13) = 12.48; ω(2, 2) = 0.25.
    let mm = r.memory_model.as_ref().unwrap();
    assert_eq!(mm.points, 4);
    assert_eq!(mm.mu, None);
    let at = |n: u32| mm.modelled.iter().find(|w| w.n == n).unwrap();
    assert_close!(at(1).work.unwrap(), 9.984);
    assert_close!(at(2).work.unwrap(), 12.48);
    assert_close!(at(2).omega.unwrap(), 0.25);
    assert_close!(mm.intercept, 2.0 / 9.984 - 1.0 / 12.48);
    assert_close!(mm.slope, 1.0 / 12.48 - 1.0 / 9.984);
    // n = 4: 1/C = intercept + 4·slope is still positive.
    let c4 = 1.0 / (mm.intercept + 4.0 * mm.slope);
    assert_close!(at(4).work.unwrap(), c4);
    assert!(r.numa.is_none());
    assert!(r.stress.is_empty());

    // The report: JSON keys of the contract, and every table format.
    let report = scale_report(dir, &NoProgress).unwrap();
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["speedup"]["work_measure"], "cpu time");
    let row = &json["speedup"]["by_threads"][0];
    for key in [
        "m",
        "active_threads_measured",
        "active_threads_modelled",
        "omega",
        "loss_memory",
        "loss_dependencies",
        "speedup_model",
        "speedup_measured",
        "time_lost_memory_s",
        "time_lost_dependencies_s",
        "service_time_1_s",
        "service_time_m_s",
        "wall_1_s",
        "wall_m_s",
    ] {
        assert!(row.get(key).is_some_and(|v| v.is_number()), "{key}: {row}");
    }
    assert!(row.get("cycles_per_miss").is_none(), "{row}");
    assert_eq!(row["dependencies"]["lock_wait_s"], 0.9);
    // Every table format (`svg` draws one chart).
    for format in OutputFormat::ALL
        .into_iter()
        .filter(|&f| f != OutputFormat::Svg)
    {
        let text = render_scale(&report, format, &RenderOptions::default());
        assert!(
            text.contains("0.32") || format == OutputFormat::Json,
            "{format}:\n{text}"
        );
    }
    let text = render_scale(&report, OutputFormat::Text, &RenderOptions::default());
    for want in [
        "Speed-up loss",
        "cpu time",
        "Time lost",
        "Service time",
        "Lock",
    ] {
        assert!(text.contains(want), "{want} missing:\n{text}");
    }

    // Every recording's own service JSON has wall_s, cpu_s, active_threads.
    let rec = contend::Recording::open(&dir.join("m2-n2-r0")).unwrap();
    let report = contend::analyze(&rec, &Default::default(), &NoProgress).into_report();
    let svc = report.section::<contend::service::ServiceReport>();
    let v = serde_json::to_value(svc.unwrap()).unwrap();
    assert_eq!(v["wall_s"], 8.0);
    assert!(close(v["cpu_s"].as_f64().unwrap(), 12.8));
    assert!(close(v["active_threads"].as_f64().unwrap(), 1.6));
}

/// m = 4 on a two-socket machine with c = 2 cores per socket, cycles and
/// cache misses counted, one repeat, and a stressed run on 4 cores:
///
/// - n = 1: 1000 cycles, 100 misses, 8 s; samples 4 × 25 ms: A(4,1) = 4;
/// - n = 2: 1250 cycles, 105 misses, 5 s;
/// - n = 4: 2000 cycles, 110 misses, 4 s; samples (100, 100, 100, 20)
///   ms: A = 3.2, service 40 × 0.32 = 12.8 s;
/// - n = 4 stressed: 2400 cycles, 4.4 s, 44 samples: service 14.08 s,
///   2 GB/s.
///
/// ω = 1, P = S = 1.6, R = 1.6, D = 0.8; T(1)/T(4) = 2. Eq. 3.6 through
/// n = 1, 2 (≤ c): slope 1/1250 − 1/1000 = −0.0002, intercept 0.0012;
/// with r = 110: μ = 0.132, L = 0.022 per cycle, λ = 2L on c cores. Eq. 3.7:
/// δ = (2000 − 1250)/(4 − 2) = 375 cycles per remote core, C(8) = 1250 +
/// 6·375 = 3500. CCM = 2000/110; 27.5 misses/s; misses +10 %. Stress:
/// +20 % cycles, ω = 1.4, service +10 %.
#[test]
fn numa_cycles_and_stress_by_hand() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let mut runs = vec![
        Run::new(4, 1, 0, 8.0, 8.0).samples(80, &[25, 25, 25, 25]),
        Run::new(4, 2, 0, 5.0, 9.0).samples(50, &[100, 100, 50, 50]),
        Run::new(4, 4, 0, 4.0, 12.8).samples(40, &[100, 100, 100, 20]),
        Run::new(4, 4, 0, 4.4, 14.08).samples(44, &[100, 100, 100, 20]),
    ];
    for (r, (cy, mi)) in runs
        .iter_mut()
        .zip([(1000, 100), (1250, 105), (2000, 110), (2400, 121)])
    {
        r.cycles = Some(cy);
        r.misses = Some(mi);
    }
    runs[3].stress = true;
    runs[3].bandwidth = Some(2e9);
    write_scale(dir, vec![4], 2, 2, &runs);
    let s = analyze_scale_dir(dir, &NoProgress).unwrap();
    assert_eq!(s.work_measure, "cycles");
    assert_eq!(s.work_unit, "cycles");
    assert_eq!(s.work_measure_note, "");
    assert_eq!(s.cache_misses_missing, None);
    assert_eq!(s.stress_threads, Some(1));
    let r = &s.by_threads[0];
    assert_eq!((r.m, r.n, r.runs_1, r.runs_m), (4, 4, 1, 1));
    assert_close!(r.omega, 1.0);
    assert_close!(r.active_threads_measured, 3.2);
    assert_close!(r.active_threads_1core.unwrap(), 4.0);
    assert_close!(r.speedup_model, 1.6);
    assert_close!(r.loss_memory, 1.6);
    assert_close!(r.loss_dependencies, 0.8);
    assert_close!(r.speedup_measured, 2.0);
    assert_close!(r.time_lost_memory_s, 6.4);
    assert_close!(r.time_lost_dependencies_s, 3.2);
    // One repeat: no spread to report.
    assert_eq!(r.work_1_rsd_pct, None);
    assert_close!(r.cache_misses_1.unwrap(), 100.0);
    assert_close!(r.cache_misses_m.unwrap(), 110.0);
    assert_close!(r.cache_misses_change_pct.unwrap(), 10.0);
    assert_close!(r.cycles_per_miss.unwrap(), 2000.0 / 110.0);
    assert_close!(r.misses_per_second.unwrap(), 27.5);
    let mm = r.memory_model.as_ref().unwrap();
    assert_eq!(mm.points, 2);
    assert_close!(mm.slope, -0.0002);
    assert_close!(mm.intercept, 0.0012);
    assert_close!(mm.mu.unwrap(), 0.132);
    assert_close!(mm.l.unwrap(), 0.022);
    assert_close!(mm.lambda.unwrap(), 0.044);
    let ns: Vec<u32> = mm.modelled.iter().map(|w| w.n).collect();
    assert_eq!(ns, vec![1, 2]);
    assert_close!(mm.modelled[1].work.unwrap(), 1250.0);
    let numa = r.numa.as_ref().expect("two sockets, m > c");
    assert_eq!((numa.c, numa.runs_c), (2, 1));
    assert_close!(numa.work_c, 1250.0);
    assert_close!(numa.delta, 375.0);
    assert_close!(numa.delta_per_miss.unwrap(), 375.0 / 110.0);
    let at = |n: u32| numa.modelled.iter().find(|w| w.n == n).unwrap();
    assert_close!(at(4).work.unwrap(), 2000.0);
    assert_close!(at(8).work.unwrap(), 3500.0);
    assert_close!(at(8).omega.unwrap(), 2.5);
    assert_eq!(r.stress.len(), 1);
    let st = &r.stress[0];
    assert_eq!((st.n, st.runs), (4, 1));
    assert_close!(st.work_without, 2000.0);
    assert_close!(st.work_with, 2400.0);
    assert_close!(st.work_change_pct.unwrap(), 20.0);
    assert_close!(st.omega_with.unwrap(), 1.4);
    assert_close!(st.service_time_without_s, 12.8);
    assert_close!(st.service_time_with_s, 14.08);
    assert_close!(st.service_time_change_pct.unwrap(), 10.0);
    assert_close!(st.bandwidth_bytes_per_s.unwrap(), 2e9);
    assert_close!(st.wall_with_s, 4.4);
    let report = scale_report(dir, &NoProgress).unwrap();
    let text = render_scale(&report, OutputFormat::Text, &RenderOptions::default());
    for want in ["NUMA", "Induced", "18.18"] {
        assert!(text.contains(want), "{want} missing:\n{text}");
    }
    let csv = render_scale(&report, OutputFormat::Csv, &RenderOptions::default());
    assert!(csv.contains("speedup_model"), "{csv}");
    // LaTeX gets the model's symbols as math, not raw Unicode.
    let tex = render_scale(&report, OutputFormat::Latex, &RenderOptions::default());
    assert!(
        tex.contains("$\\omega$") && tex.contains("$\\delta$"),
        "{tex}"
    );
    for c in ['ω', 'μ', 'λ', 'δ', '−', '×', '÷', '≤', '·'] {
        assert!(!tex.contains(c), "{c} in LaTeX:\n{tex}");
    }
}

#[test]
fn failed_and_missing_runs_are_warnings_and_left_out() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let mut runs = uma_runs();
    // A third 2-core repeat that failed, with numbers that would change
    // every mean if it were used.
    let mut failed = Run::new(2, 2, 2, 100.0, 100.0).samples(10, &[100, 100]);
    failed.exit_code = Some(3);
    runs.push(failed);
    write_scale(dir, vec![2], 1, 2, &runs);
    // And a run whose directory is gone.
    let mut m = ScaleManifest::read(dir).unwrap();
    m.runs.push(ScaleRun {
        m: 2,
        n: 1,
        repeat: 2,
        dir: "m2-n1-r2".into(),
        exit_code: Some(0),
        wall_s: 50.0,
        ..ScaleRun::default()
    });
    // The runner's own notes are carried over.
    m.stopped = Some("interrupted by the user".into());
    m.complete = false;
    m.warnings = vec!["m = 2: the generator shares CPUs with the program".into()];
    m.runs[0].warnings = vec!["placement note".into()];
    m.write(dir).unwrap();
    let s = analyze_scale_dir(dir, &NoProgress).unwrap();
    let r = &s.by_threads[0];
    assert_eq!((r.runs_1, r.runs_m), (2, 2));
    assert_close!(r.omega, 0.25);
    assert_close!(r.wall_m_s, 8.0);
    assert!(!s.complete);
    let w = &s.warnings;
    assert_eq!(w.len(), 5, "{w:?}");
    assert!(
        w[0].contains("scale.json") && w[0].contains("interrupted by the user"),
        "{w:?}"
    );
    assert!(w[1].contains("shares CPUs"), "{w:?}");
    assert!(
        w[2].contains("m2-n1-r0") && w[2].contains("placement note"),
        "{w:?}"
    );
    assert!(
        w[3].contains("m2-n2-r2") && w[3].contains("status 3"),
        "{w:?}"
    );
    assert!(w[4].contains("m2-n1-r2"), "{w:?}");
}

#[test]
fn corrupt_manifest_and_no_usable_pair_are_named_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(dir.join("scale.json"), "{ not json").unwrap();
    let e = analyze_scale_dir(dir, &NoProgress).unwrap_err();
    assert!(matches!(e, SpeedupError::Manifest(_)), "{e:?}");
    assert!(e.to_string().contains("scale.json"), "{e}");

    // Only 1-core runs: nothing to model.
    let runs = vec![Run::new(2, 1, 0, 9.0, 9.6).samples(10, &[50, 50])];
    write_scale(dir, vec![2], 1, 2, &runs);
    let e = analyze_scale_dir(dir, &NoProgress).unwrap_err();
    assert!(matches!(e, SpeedupError::NoUsablePair { .. }), "{e:?}");
    let msg = e.to_string();
    assert!(
        msg.contains(&dir.display().to_string()) && msg.contains("no usable run on 2 cores"),
        "{msg}"
    );

    // The 2-core run was killed: the pair is not usable either.
    let mut killed = Run::new(2, 2, 0, 8.0, 12.0).samples(10, &[100, 60]);
    killed.exit_code = None;
    let runs = vec![Run::new(2, 1, 0, 9.0, 9.6).samples(10, &[50, 50]), killed];
    write_scale(dir, vec![2], 1, 2, &runs);
    let mut m = ScaleManifest::read(dir).unwrap();
    m.runs[1].signal = Some(9);
    m.write(dir).unwrap();
    let msg = analyze_scale_dir(dir, &NoProgress).unwrap_err().to_string();
    assert!(msg.contains("signal 9"), "{msg}");
}
