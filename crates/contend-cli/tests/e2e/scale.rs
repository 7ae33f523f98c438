//! End-to-end tests of `contend scale` (the 1-core vs n-core experiment
//! runner), `contend stress memory` (the memory contention generator) and
//! the speed-up report on the scale directories they leave (Venter 2016,
//! Sections 3.1, 3.2.2.1 and 4.1.4).
//!
//! The model's own equations are unit-tested with hand-computed values in
//! `contend::speedup`; "A measured equals the program's CPU time / wall
//! time" is tested with a known-shape program in `e2e_service.rs`. Here:
//! the runner's manifest and run directories, failures, interrupts and bad
//! flags; programs of known shape through the whole pipeline (ω of a purely
//! compute-bound program, D of a serialised one); the bundled example and
//! real programs (pigz, xz); and the generator.
//!
//! Every test takes the `serial()` lock: the accuracy tests must not share
//! the two CPUs with another experiment of this binary.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::common::*;
use serde_json::Value;

/// Time limit of one `contend scale` in these tests.
const SCALE_TIMEOUT: Duration = Duration::from_secs(60);

/// `contend scale ARGS… -o DIR -- CMD…`.
fn scale_command(dir: &Path, args: &[&str], cmd: &[&str]) -> Command {
    let mut c = Command::new(contend_bin());
    c.arg("scale")
        .args(args)
        .arg("-o")
        .arg(dir)
        .arg("--")
        .args(cmd);
    c
}

fn scale(dir: &Path, args: &[&str], cmd: &[&str]) -> Output {
    run_timeout(scale_command(dir, args, cmd), SCALE_TIMEOUT)
}

fn manifest(dir: &Path) -> Value {
    let p = dir.join("scale.json");
    let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn runs(m: &Value) -> &Vec<Value> {
    m["runs"].as_array().expect("runs is an array")
}

fn num(v: &Value, key: &str) -> f64 {
    v[key]
        .as_f64()
        .unwrap_or_else(|| panic!("`{key}` is not a number in {v}"))
}

/// The `speedup.by_threads[]` row of thread count `m`.
fn row(report: &Value, m: u64) -> Value {
    report["speedup"]["by_threads"]
        .as_array()
        .unwrap_or_else(|| panic!("no speedup.by_threads: {report}"))
        .iter()
        .find(|r| r["m"] == m)
        .unwrap_or_else(|| panic!("no by_threads row for m = {m}: {}", report["speedup"]))
        .clone()
}

/// The keys of `speedup.by_threads[]` the issue names; all numbers.
const ROW_KEYS: &[&str] = &[
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
];

/// Every key is there and the row is consistent with the equations it
/// reports: D = m − A (Eq. 3.8), S = A/(1+ω) (Eq. 3.4), R = A − S
/// (Eq. 3.2, 3.3), measured speed-up = T(1)/T(m).
fn check_row(r: &Value, m: f64) {
    for k in ROW_KEYS {
        assert!(r[k].is_number(), "by_threads row lacks number `{k}`: {r}");
    }
    let a = num(r, "active_threads_measured");
    let w = num(r, "omega");
    let close = |x: f64, y: f64| (x - y).abs() <= 1e-6 * (1.0 + y.abs());
    assert!(close(num(r, "loss_dependencies"), m - a), "{r}");
    assert!(close(num(r, "speedup_model"), a / (1.0 + w)), "{r}");
    assert!(close(num(r, "loss_memory"), a - a / (1.0 + w)), "{r}");
    assert!(
        close(
            num(r, "speedup_measured"),
            num(r, "wall_1_s") / num(r, "wall_m_s")
        ),
        "{r}"
    );
    assert!(num(r, "wall_1_s") > 0.0 && num(r, "wall_m_s") > 0.0, "{r}");
    assert!(num(r, "service_time_1_s") > 0.0 && num(r, "service_time_m_s") > 0.0);
}

/// Runs `contend scale ARGS -- CMD` and reads the `by_threads` row of
/// m = 2 up to three times, until `within` accepts it; panics with every
/// attempt's row when none does. Other load on the shared test machine can
/// disturb one experiment (see each test for what it does to the value);
/// a model or runner that is wrong fails every attempt. An attempt that
/// `disturbed` recognises as disturbed by other programs (its own
/// repeats disagree) does not count: up to five such attempts are made
/// again.
fn m2_row_within(
    name: &str,
    args: &[&str],
    cmd: &[&str],
    within: impl Fn(&Value) -> bool,
    disturbed: impl Fn(&Value) -> bool,
) -> Value {
    let mut seen = Vec::new();
    let (mut attempt, mut redone) = (0, 0);
    while attempt < 3 {
        let tmp = tempdir();
        let dir = tmp.path().join(format!("{name}.scale"));
        let out = scale(&dir, args, cmd);
        assert!(out.success(), "{}", out.describe());
        let r = row(&report_json(&dir), 2);
        check_row(&r, 2.0);
        if within(&r) {
            return r;
        }
        let again = redone < 5 && disturbed(&r);
        seen.push(format!(
            "attempt {attempt}{}: omega {:.4}, A {:.3}, D {:.3}: {r}",
            if again {
                " (disturbed: made again)"
            } else {
                ""
            },
            num(&r, "omega"),
            num(&r, "active_threads_measured"),
            num(&r, "loss_dependencies")
        ));
        if again {
            redone += 1;
        } else {
            attempt += 1;
        }
    }
    panic!(
        "{name}: no attempt within the tolerance:\n{}",
        seen.join("\n")
    );
}

/// The runs (dir names) of a manifest in order.
fn run_dirs(m: &Value) -> Vec<String> {
    runs(m)
        .iter()
        .map(|r| r["dir"].as_str().unwrap_or_default().to_string())
        .collect()
}

fn cpus(r: &Value, key: &str) -> Vec<u64> {
    r[key]
        .as_array()
        .unwrap_or_else(|| panic!("`{key}` is not an array in {r}"))
        .iter()
        .filter_map(Value::as_u64)
        .collect()
}

/// The bundled example (examples/scaling) end to end with m = 2, two
/// repeats: the manifest, the run directories, the program's own output
/// captured per run, and the speed-up report with every key.
///
/// Known shape: a quarter of the example's work is a phase serialised on
/// one mutex, so on 2 cores at least that part has one active thread:
/// A ≤ 250/(95 + 60) ≈ 1.6 even with the other phases perfectly parallel,
/// i.e. D ≥ 0.4; other load only lowers A further. D > 0.25 must hold.
#[test]
fn scale_runs_the_bundled_example_end_to_end() {
    let _serial = serial();
    let root = programs_dir()
        .parent()
        .and_then(Path::parent)
        .unwrap()
        .to_path_buf();
    let prog = build_source(&root.join("examples/scaling/scaling.c"), &[]);
    let tmp = tempdir();
    let dir = tmp.path().join("ex.scale");
    let prog_s = prog.to_str().unwrap();
    let out = scale(
        &dir,
        &["--threads", "2", "--repeat", "2"],
        &[prog_s, "{threads}"],
    );
    assert!(out.success(), "{}", out.describe());
    assert!(
        out.stdout.is_empty(),
        "the program's output must not reach contend's stdout: {}",
        out.describe()
    );
    assert!(
        out.stderr.contains("made 4 of 4 runs (0 failed)"),
        "{}",
        out.describe()
    );
    let m = manifest(&dir);
    assert_eq!(m["format_version"], 1);
    assert_eq!(m["complete"], true);
    assert_eq!(m["stopped"], Value::Null);
    assert_eq!(m["planned_runs"], 4);
    assert_eq!(m["repeat"], 2);
    assert_eq!(m["threads"], serde_json::json!([2]));
    assert_eq!(m["command"], serde_json::json!([prog_s, "{threads}"]));
    // Repeats interleaved: r0 of every configuration before r1.
    assert_eq!(
        run_dirs(&m),
        vec!["m2-n1-r0", "m2-n2-r0", "m2-n1-r1", "m2-n2-r1"]
    );
    let avail = cpus(&m, "cpus_available");
    for r in runs(&m) {
        assert_eq!(r["command"], serde_json::json!([prog_s, "2"]), "{r}");
        assert_eq!(r["exit_code"], 0, "{r}");
        assert_eq!(r["signal"], Value::Null);
        assert_eq!(r["stress"], false);
        let n = r["n"].as_u64().unwrap();
        assert_eq!(cpus(r, "cpus"), avail[..n as usize].to_vec(), "{r}");
        assert!(num(r, "wall_s") > 0.0);
        let rd = dir.join(r["dir"].as_str().unwrap());
        for f in ["meta.json", "service.csamp", "stdout.txt", "stderr.txt"] {
            assert!(rd.join(f).is_file(), "{} lacks {f}", rd.display());
        }
        let stdout = std::fs::read_to_string(rd.join("stdout.txt")).unwrap();
        assert!(stdout.contains("threads=2 "), "{stdout}");
        // The recording says where it ran and with which environment.
        let meta: Value =
            serde_json::from_str(&std::fs::read_to_string(rd.join("meta.json")).unwrap()).unwrap();
        assert_eq!(cpus(&meta, "cpus_allowed"), cpus(r, "cpus"), "{meta}");
        assert_eq!(meta["env"]["OMP_NUM_THREADS"], "2", "{}", meta["env"]);
    }
    let report = report_json(&dir);
    assert!(report["speedup"]["work_measure"].is_string(), "{report}");
    let r = row(&report, 2);
    check_row(&r, 2.0);
    assert_eq!(r["n"], 2);
    let d = num(&r, "loss_dependencies");
    assert!(
        d > 0.25,
        "the serialised phase must show as speed-up lost to dependencies: {r}"
    );
}

/// `mb` MiB of text that compresses well (words from a small vocabulary in
/// pseudo-random order), so pigz and xz have real work.
fn generated_file(dir: &Path, mb: usize) -> PathBuf {
    let words = [
        "lock",
        "wait",
        "hold",
        "thread",
        "core",
        "memory",
        "contention",
        "speedup",
        "service",
        "time",
        "queue",
        "barrier",
        "cache",
        "miss",
        "cycle",
        "omega",
    ];
    let mut x: u64 = 0x9e3779b97f4a7c15;
    let mut text = String::with_capacity(mb << 20);
    while text.len() < mb << 20 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        text.push_str(words[(x % 16) as usize]);
        text.push(if x.is_multiple_of(11) { '\n' } else { ' ' });
        if x.is_multiple_of(7) {
            text.push_str(&(x % 100_000).to_string());
        }
    }
    let p = dir.join("input.txt");
    std::fs::write(&p, text).unwrap();
    p
}

/// A real multi-threaded program: pigz -p {threads} compressing a
/// generated file to its standard output (which goes to stdout.txt).
#[test]
fn scale_runs_pigz_end_to_end() {
    require_tool!("pigz");
    let _serial = serial();
    let tmp = tempdir();
    let input = generated_file(tmp.path(), 8);
    let dir = tmp.path().join("pigz.scale");
    let out = scale(
        &dir,
        &["--threads", "2", "--repeat", "2"],
        &["pigz", "-p", "{threads}", "-c", input.to_str().unwrap()],
    );
    assert!(out.success(), "{}", out.describe());
    let m = manifest(&dir);
    assert_eq!(runs(&m).len(), 4);
    for r in runs(&m) {
        assert_eq!(r["command"][2], "2", "{r}");
        assert_eq!(r["exit_code"], 0, "{r}");
        let rd = dir.join(r["dir"].as_str().unwrap());
        let gz = std::fs::read(rd.join("stdout.txt")).unwrap();
        assert!(
            gz.len() > 1000 && gz[..2] == [0x1f, 0x8b],
            "not gzip output"
        );
        assert!(num(r, "wall_s") < 5.0, "{r}");
    }
    let report = report_json(&dir);
    let r = row(&report, 2);
    check_row(&r, 2.0);
    // pigz -p 2 runs two compression threads plus its reader/writer.
    let a = num(&r, "active_threads_measured");
    assert!(a > 0.5 && a <= 3.5, "{r}");
}

/// xz -T{threads} (the placeholder inside a word) on a generated file.
#[test]
fn scale_runs_xz_end_to_end() {
    require_tool!("xz");
    let _serial = serial();
    let tmp = tempdir();
    let input = generated_file(tmp.path(), 4);
    let dir = tmp.path().join("xz.scale");
    let out = scale(
        &dir,
        &["--threads", "2", "--repeat", "2"],
        &["xz", "-T{threads}", "-0", "-c", input.to_str().unwrap()],
    );
    assert!(out.success(), "{}", out.describe());
    let m = manifest(&dir);
    assert_eq!(runs(&m).len(), 4);
    for r in runs(&m) {
        assert_eq!(r["command"][1], "-T2", "{r}");
        assert_eq!(r["exit_code"], 0, "{r}");
        let rd = dir.join(r["dir"].as_str().unwrap());
        let xz = std::fs::read(rd.join("stdout.txt")).unwrap();
        assert!(xz.starts_with(b"\xfd7zXZ"), "not xz output");
    }
    let report = report_json(&dir);
    check_row(&row(&report, 2), 2.0);
}

/// A purely compute-bound program (register arithmetic, fixed total work
/// split over m threads, no sharing) must show ω = C(m)/C(1) − 1 ≈ 0
/// (Eq. 3.5).
///
/// Tolerance 0.05: without a PMU the work measure is CPU time (see
/// `counters.rs`), which for identical register-only work differs between
/// 1 and 2 cores only by the two threads' context switches on one core
/// (microseconds each) and by CPU-time accounting noise; measured on this
/// VM while other builds ran, |ω| ≤ 0.008 and the work's RSD across
/// repeats 0.1–1.3 %. A work measure that mixed in wall time or waiting
/// would be off by far more (the 1-core wall time is twice the 2-core one).
#[test]
fn compute_bound_program_has_omega_near_zero() {
    let _serial = serial();
    let prog = build("scale_compute.c", &[]);
    m2_row_within(
        "compute",
        &["--threads", "2", "--repeat", "3"],
        &[prog.to_str().unwrap(), "{threads}"],
        |r| num(r, "omega").abs() <= 0.05 && num(r, "loss_memory").abs() <= 0.1,
        // The same register-only work repeats within 0.1–1.3 % on a quiet
        // machine: repeats 5 % apart were slowed by other programs.
        |r| num(r, "work_1_rsd_pct") > 5.0 || num(r, "work_m_rsd_pct") > 5.0,
    );
}

/// m threads serialised on one mutex (scale_serial.c): the holder
/// computes, the others wait asleep, so exactly one thread is active at
/// any time and D = m − A (Eq. 3.8) must be m − 1.
///
/// Tolerance 0.1 threads. A (Listing 3.3) is Σ service / Σ critical-path
/// service per sampling interval, so an interval in which the lock passes
/// from one thread to the other counts the tail of one critical section
/// and the head of the next as two active threads (e.g. 6 ms + 4 ms of a
/// 10 ms interval gives 10/6 = 1.67). glibc's mutex is unfair, so without
/// other load one thread usually re-takes the lock and hand-offs are rare
/// (D = 0.99 at the default 10 ms interval); with other load preempting
/// the holder they become frequent (D = 0.84–0.93 was seen with 5–20 ms
/// holds). The test holds the lock 20 ms and samples every 2 ms, so a
/// hand-off touches one interval in ten: measured D = 0.996–0.998 for
/// m = 2 at a load average of 2.7.
#[test]
fn serialised_program_loses_m_minus_one_threads_to_dependencies() {
    let _serial = serial();
    let prog = build("scale_serial.c", &[]);
    m2_row_within(
        "busy",
        &["--threads", "2", "--repeat", "2", "--interval", "2ms"],
        &[prog.to_str().unwrap(), "{threads}", "busy", "10", "20"],
        |r| (num(r, "loss_dependencies") - 1.0).abs() <= 0.1,
        |_| false,
    );
}

/// The shape literally: threads that only sleep between lock
/// waits (each holds the lock while sleeping). D is close to m − 1, not
/// m: Listing 3.3 averages over the intervals in which some thread ran
/// (Σ τ / Σ max τ), so the idle time is not counted and the runs are the
/// hand-offs. In a 10 ms interval with a hand-off, the releaser (unlock,
/// failed re-lock) and the waiter (wake-up, lock, nanosleep) both run a few
/// microseconds, one after the other, and count as up to two active
/// threads; so A lies a little above 1. Measured on this VM: D = 0.80–0.88
/// for m = 2. Tolerance: D within 0.3 of m − 1 (and clearly below m). On a
/// machine saturated by other work the releaser wins the lock back more
/// often and the waiter's failed wake-ups add bursts (D = 0.66 was seen
/// with two memory-streaming threads on both CPUs), hence the attempts.
#[test]
fn sleeping_lock_holders_show_d_close_to_m_minus_one() {
    let _serial = serial();
    let prog = build("scale_serial.c", &[]);
    m2_row_within(
        "sleep",
        &["--threads", "2", "--repeat", "2"],
        &[prog.to_str().unwrap(), "{threads}", "sleep"],
        |r| (num(r, "loss_dependencies") - 1.0).abs() <= 0.3,
        |_| false,
    );
}

/// `{threads}` is replaced in every word, also inside one, and
/// OMP_NUM_THREADS is set; thread counts run in the order given; more
/// threads than CPUs runs on all CPUs with a warning.
#[test]
fn threads_are_substituted_and_omp_num_threads_set() {
    let _serial = serial();
    let tmp = tempdir();
    let dir = tmp.path().join("subst.scale");
    let cpus_online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
    let many = "1000";
    let out = scale(
        &dir,
        &["--threads", &format!("{many},1"), "--repeat", "1"],
        &[
            "sh",
            "-c",
            "echo \"$0 $1 omp=$OMP_NUM_THREADS\"; echo to-stderr >&2",
            "-x{threads}y",
            "{threads}{threads}",
        ],
    );
    assert!(out.success(), "{}", out.describe());
    assert!(
        out.stderr.contains("1000 threads but only"),
        "no warning about more threads than CPUs ({cpus_online}): {}",
        out.describe()
    );
    let m = manifest(&dir);
    let avail = cpus(&m, "cpus_available").len();
    let names = run_dirs(&m);
    let mut want = vec!["m1000-n1-r0".to_string()];
    if avail > 1 {
        want.push(format!("m1000-n{avail}-r0"));
    }
    want.push("m1-n1-r0".into());
    assert_eq!(names, want);
    assert!(m["warnings"].to_string().contains("1000 threads but only"));
    for r in runs(&m) {
        let t = r["m"].as_u64().unwrap();
        let rd = dir.join(r["dir"].as_str().unwrap());
        let stdout = std::fs::read_to_string(rd.join("stdout.txt")).unwrap();
        assert_eq!(stdout, format!("-x{t}y {t}{t} omp={t}\n"));
        let stderr = std::fs::read_to_string(rd.join("stderr.txt")).unwrap();
        assert_eq!(stderr, "to-stderr\n");
        assert_eq!(r["command"][3], format!("-x{t}y"));
    }
}

/// `--show-output` lets the program write to contend's own stdout.
#[test]
fn show_output_passes_the_program_output_through() {
    let _serial = serial();
    let tmp = tempdir();
    let dir = tmp.path().join("show.scale");
    let out = scale(
        &dir,
        &["--threads", "1", "--repeat", "2", "--show-output"],
        &["echo", "hello-{threads}"],
    );
    assert!(out.success(), "{}", out.describe());
    assert_eq!(out.stdout, "hello-1\nhello-1\n");
    assert!(!dir.join("m1-n1-r0/stdout.txt").exists());
}

/// Failing runs (a non-zero exit, a signal) are recorded with their status,
/// the experiment goes on, contend exits with 1, and the report leaves them
/// out with a warning naming them.
#[test]
fn failing_runs_are_recorded_and_reported() {
    let _serial = serial();
    let tmp = tempdir();
    let dir = tmp.path().join("fail.scale");
    // m = 2 fails on 2 cores only (exit 3); m = 3 aborts on 1 core only.
    // The CPU count comes from the affinity (nproc would read
    // OMP_NUM_THREADS).
    let script = "n=$(awk '/Cpus_allowed_list/ {print $2}' /proc/self/status); \
                  case \"$1:$n\" in 2:0-1|2:0,1) exit 3;; 3:0) kill -ABRT $$;; esac; \
                  i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done";
    let out = scale(
        &dir,
        &["--threads", "2,3", "--repeat", "1"],
        &["sh", "-c", script, "sh", "{threads}"],
    );
    assert_eq!(out.code(), Some(1), "{}", out.describe());
    let m = manifest(&dir);
    assert_eq!(m["complete"], true, "failures do not stop the experiment");
    let by = |name: &str| -> Value {
        runs(&m)
            .iter()
            .find(|r| r["dir"] == name)
            .unwrap_or_else(|| panic!("no run {name}: {m}"))
            .clone()
    };
    if cpus(&m, "cpus_available") != vec![0, 1] {
        eprintln!("this test expects CPUs 0-1; skipping the per-run checks");
        return;
    }
    assert_eq!(by("m2-n1-r0")["exit_code"], 0);
    assert_eq!(by("m2-n2-r0")["exit_code"], 3);
    assert_eq!(by("m3-n1-r0")["signal"], 6);
    assert_eq!(by("m3-n1-r0")["exit_code"], Value::Null);
    assert_eq!(by("m3-n2-r0")["exit_code"], 0);
    assert!(
        out.stderr.contains("run m2-n2-r0 failed (exit status 3)")
            && out
                .stderr
                .contains("run m3-n1-r0 failed (killed by signal 6)")
            && out.stderr.contains("made 4 of 4 runs (2 failed)"),
        "{}",
        out.describe()
    );
    // Every run, failed or not, is a recording.
    for name in ["m2-n2-r0", "m3-n1-r0"] {
        assert!(dir.join(name).join("meta.json").is_file());
    }
    let report = report_raw(&dir, &["--format", "json"]);
    let text = format!("{}{}", report.stdout, report.stderr);
    assert!(
        text.contains("m2-n2-r0") && text.contains("exited with status 3"),
        "the report must name the failed run: {}",
        report.describe()
    );
    assert!(text.contains("m3-n1-r0"), "{}", report.describe());
}

/// A program that cannot start at all stops the experiment with a clear
/// error: before the first run nothing is left behind; later, the manifest
/// keeps the runs made and says why it stopped.
#[test]
fn a_command_that_cannot_start_stops_the_experiment() {
    let _serial = serial();
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempdir();
    let bad = tmp.path().join("prog2");
    std::fs::write(&bad, "#!/nonexistent/interpreter\n").unwrap();
    std::fs::set_permissions(&bad, std::fs::Permissions::from_mode(0o755)).unwrap();
    let good = tmp.path().join("prog1");
    std::fs::write(&good, "#!/bin/sh\nexit 0\n").unwrap();
    std::fs::set_permissions(&good, std::fs::Permissions::from_mode(0o755)).unwrap();
    let template = tmp.path().join("prog{threads}");

    let dir = tmp.path().join("first.scale");
    let out = scale(
        &dir,
        &["--threads", "2", "--repeat", "1"],
        &[template.to_str().unwrap()],
    );
    assert_eq!(out.code(), Some(127), "{}", out.describe());
    assert!(
        out.stderr.contains("run m2-n1-r0") && out.stderr.contains("cannot start"),
        "{}",
        out.describe()
    );
    assert!(!dir.exists(), "nothing recorded, nothing left behind");

    let dir = tmp.path().join("later.scale");
    let out = scale(
        &dir,
        &["--threads", "1,2", "--repeat", "2"],
        &[template.to_str().unwrap()],
    );
    assert_eq!(out.code(), Some(127), "{}", out.describe());
    let m = manifest(&dir);
    assert_eq!(run_dirs(&m), vec!["m1-n1-r0"]);
    assert_eq!(m["complete"], false);
    let why = m["stopped"].as_str().unwrap_or_default();
    assert!(why.contains("cannot start"), "{m}");
    assert!(
        out.stderr.contains("the runs made before are in"),
        "{}",
        out.describe()
    );

    // Not found at all: refused before anything is created (for every m).
    let dir = tmp.path().join("missing.scale");
    let missing = tmp.path().join("nothere{threads}");
    let out = scale(
        &dir,
        &["--threads", "1", "--repeat", "1"],
        &[missing.to_str().unwrap()],
    );
    assert_eq!(out.code(), Some(127), "{}", out.describe());
    assert!(
        out.stderr.contains("command not found"),
        "{}",
        out.describe()
    );
    assert!(!dir.exists());
}

/// Bad flags give clear errors and create nothing.
#[test]
fn bad_flags_give_clear_errors() {
    let _serial = serial();
    let tmp = tempdir();
    let dir = tmp.path().join("bad.scale");
    let cases: &[(&[&str], &str)] = &[
        (&["--threads", ""], "at least one thread count"),
        (&["--threads", "0"], "at least 1"),
        (&["--threads", "2,2"], "given twice"),
        (&["--threads", "two"], "`two` is not a thread count"),
        (&["--threads", "2,"], "empty entry"),
        (&["--threads", "2", "--repeat", "0"], "--repeat"),
        (&["--threads", "2", "--stress", "0"], "--stress"),
        (
            &["--threads", "2", "--interval", "10 parsecs"],
            "--interval",
        ),
    ];
    for (args, want) in cases {
        let out = scale(&dir, args, &["true"]);
        assert_eq!(out.code(), Some(2), "{args:?}: {}", out.describe());
        assert!(out.stderr.contains(want), "{args:?}: {}", out.describe());
        assert!(!dir.exists(), "{args:?} created {}", dir.display());
    }
    // No `--` before the command: clap refuses and shows the usage with it.
    let mut c = Command::new(contend_bin());
    c.args(["scale", "--threads", "2", "-o"])
        .arg(&dir)
        .arg("true");
    let out = run_timeout(c, SCALE_TIMEOUT);
    assert_eq!(out.code(), Some(2), "{}", out.describe());
    assert!(
        out.stderr.contains("unexpected argument 'true'") && out.stderr.contains("-- <CMD>"),
        "{}",
        out.describe()
    );
    // No command, no --threads.
    let mut c = Command::new(contend_bin());
    c.args(["scale", "--threads", "2", "--"]);
    let out = run_timeout(c, SCALE_TIMEOUT);
    assert_eq!(out.code(), Some(2), "{}", out.describe());
    assert!(out.stderr.contains("<CMD>"), "{}", out.describe());
    let mut c = Command::new(contend_bin());
    c.args(["scale", "--", "true"]);
    let out = run_timeout(c, SCALE_TIMEOUT);
    assert_eq!(out.code(), Some(2), "{}", out.describe());
    assert!(out.stderr.contains("--threads"), "{}", out.describe());
    // An existing directory: refused; --force replaces only a scale
    // directory.
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("precious.txt"), "keep").unwrap();
    let out = scale(&dir, &["--threads", "1", "--repeat", "1"], &["true"]);
    assert_eq!(out.code(), Some(2));
    assert!(out.stderr.contains("already exists"), "{}", out.describe());
    let out = scale(
        &dir,
        &["--threads", "1", "--repeat", "1", "--force"],
        &["true"],
    );
    assert_eq!(out.code(), Some(2));
    assert!(
        out.stderr.contains("not a scale directory"),
        "{}",
        out.describe()
    );
    assert!(dir.join("precious.txt").is_file());
    std::fs::remove_file(dir.join("precious.txt")).unwrap();
    let out = scale(
        &dir,
        &["--threads", "1", "--repeat", "1", "--force"],
        &["true"],
    );
    assert!(
        out.success(),
        "an empty directory is used: {}",
        out.describe()
    );
    let out = scale(
        &dir,
        &["--threads", "1", "--repeat", "1", "--force"],
        &["true"],
    );
    assert!(
        out.success(),
        "a scale directory is replaced: {}",
        out.describe()
    );
}

/// Ctrl-C (SIGINT to the foreground process group, as a terminal sends
/// it: contend and the program) interrupts the current run and stops the
/// experiment: no further run is made, the interrupted run's recording is
/// completed and listed, the manifest says why it stopped; exit status 130.
#[test]
fn ctrl_c_stops_cleanly_with_the_runs_finished() {
    let _serial = serial();
    let tmp = tempdir();
    let dir = tmp.path().join("int.scale");
    let mut running = Running::spawn(scale_command(
        &dir,
        &["--threads", "1,2", "--repeat", "20"],
        &["sleep", "0.2"],
    ));
    // Wait until a few runs are in the manifest.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let made = std::fs::read_to_string(dir.join("scale.json"))
            .ok()
            .and_then(|t| serde_json::from_str::<Value>(&t).ok())
            .map_or(0, |m| runs(&m).len());
        if made >= 2 {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "no runs after 30 s");
        std::thread::sleep(Duration::from_millis(20));
    }
    // The group Running started contend in (process_group(0)), as the
    // terminal's foreground group.
    let pgid = running.pid();
    assert!(kill_group(pgid, 2), "SIGINT to the process group");
    let out = running
        .wait_for(Duration::from_secs(30))
        .expect("contend scale must stop after Ctrl-C");
    assert_eq!(out.code(), Some(130), "{}", out.describe());
    assert!(
        out.stderr.contains("experiment stopped"),
        "{}",
        out.describe()
    );
    let m = manifest(&dir);
    assert_eq!(m["complete"], false);
    assert!(
        m["stopped"]
            .as_str()
            .unwrap_or_default()
            .contains("interrupted"),
        "{m}"
    );
    let made = runs(&m).len();
    assert!((2..60).contains(&made), "{made} runs");
    for r in runs(&m) {
        let meta: Value = serde_json::from_str(
            &std::fs::read_to_string(dir.join(r["dir"].as_str().unwrap()).join("meta.json"))
                .unwrap(),
        )
        .unwrap();
        assert_eq!(
            meta["complete"], true,
            "every listed run is a finished recording"
        );
    }
    // No temporary output files are left behind.
    let stray: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with('.'))
        .map(|e| e.file_name())
        .collect();
    assert!(stray.is_empty(), "{stray:?}");
}

/// A stop signal sent to contend alone (SIGTERM, e.g. from a job
/// scheduler) is forwarded to the running program; a program that catches
/// it and exits 0 must still stop the experiment (regression: only the
/// program's exit status was looked at, so the experiment went on).
#[test]
fn stop_signal_caught_by_the_program_still_stops_the_experiment() {
    let _serial = serial();
    let tmp = tempdir();
    let dir = tmp.path().join("term.scale");
    // Exits 0 on SIGTERM; otherwise runs 5 s.
    let script = "trap 'exit 0' TERM; i=0; while [ $i -lt 50 ]; do sleep 0.1; i=$((i+1)); done";
    let mut running = Running::spawn(scale_command(
        &dir,
        &["--threads", "1", "--repeat", "3"],
        &["sh", "-c", script],
    ));
    // Wait until the first run's recording exists (the program runs).
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !dir.join("m1-n1-r0").join("meta.json").exists() {
        assert!(std::time::Instant::now() < deadline, "no run started");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(300));
    assert!(kill(running.pid(), 15), "SIGTERM to contend");
    let out = running
        .wait_for(Duration::from_secs(30))
        .expect("contend scale must stop after SIGTERM");
    let m = manifest(&dir);
    assert_eq!(m["complete"], false, "{}", out.describe());
    assert!(
        m["stopped"]
            .as_str()
            .unwrap_or_default()
            .contains("interrupted"),
        "{m}"
    );
    assert_eq!(runs(&m).len(), 1, "{m}");
    assert_eq!(runs(&m)[0]["exit_code"], 0, "{m}");
}

fn stress(args: &[&str]) -> Output {
    let mut c = Command::new(contend_bin());
    c.args(["stress", "memory"]).args(args);
    run_timeout(c, Duration::from_secs(30))
}

/// The generator runs for the duration asked and reports a positive
/// bandwidth per thread and in total (the absolute value depends on the
/// machine and is not asserted).
#[test]
fn stress_memory_reports_bandwidth() {
    let _serial = serial();
    let out = stress(&[
        "--threads",
        "2",
        "--duration",
        "0.3",
        "--buffer-mb",
        "16",
        "--format",
        "json",
    ]);
    assert!(out.success(), "{}", out.describe());
    let r: Value = serde_json::from_str(&out.stdout).unwrap();
    let elapsed = num(&r, "elapsed_s");
    assert!((0.28..3.0).contains(&elapsed), "{r}");
    assert!(num(&r, "bandwidth_bytes_per_s") > 0.0, "{r}");
    assert!(num(&r, "bytes_read") > 0.0 && num(&r, "bytes_written") > 0.0);
    assert_eq!(r["buffer_bytes_per_thread"], 16 << 20);
    let threads = r["threads"].as_array().unwrap();
    assert_eq!(threads.len(), 2);
    let mut sum = 0.0;
    for t in threads {
        assert!(num(t, "bandwidth_bytes_per_s") > 0.0, "{t}");
        sum += num(t, "bytes_read") + num(t, "bytes_written");
    }
    assert_eq!(sum, num(&r, "bytes_read") + num(&r, "bytes_written"));
    #[cfg(target_arch = "x86_64")]
    assert_ne!(r["method"], "plain", "x86-64 has non-temporal stores");

    let out = stress(&["--threads", "1", "--duration", "100ms", "--buffer-mb", "8"]);
    assert!(out.success(), "{}", out.describe());
    assert!(
        out.stdout.contains("bandwidth GB/s") && out.stdout.contains(" total "),
        "{}",
        out.describe()
    );
}

/// Ctrl-C ends an open-ended generator run with its report.
#[test]
fn stress_memory_stops_on_ctrl_c() {
    let _serial = serial();
    let mut c = Command::new(contend_bin());
    c.args([
        "stress",
        "memory",
        "--threads",
        "1",
        "--buffer-mb",
        "8",
        "--format",
        "json",
    ]);
    let mut running = Running::spawn(c);
    std::thread::sleep(Duration::from_millis(400));
    assert!(kill(running.pid(), 2));
    let out = running
        .wait_for(Duration::from_secs(20))
        .expect("the generator must stop on SIGINT");
    assert!(out.success(), "{}", out.describe());
    let r: Value = serde_json::from_str(&out.stdout).unwrap();
    assert!(num(&r, "bandwidth_bytes_per_s") > 0.0);
}

#[test]
fn stress_memory_bad_flags() {
    let _serial = serial();
    for (args, want) in [
        (
            vec!["--threads", "0", "--duration", "0.1"],
            "at least one thread",
        ),
        (vec!["--cpus", "999", "--duration", "0.1"], "CPU"),
        (vec!["--duration", "0"], "--duration"),
        (vec!["--duration", "soon"], "--duration"),
        (vec!["--buffer-mb", "0", "--duration", "0.1"], "--buffer-mb"),
        (vec!["--format", "xml", "--duration", "0.1"], "--format"),
    ] {
        let out = stress(&args);
        assert_eq!(out.code(), Some(2), "{args:?}: {}", out.describe());
        assert!(out.stderr.contains(want), "{args:?}: {}", out.describe());
    }
}

/// `scale --stress 1` runs every configuration once more with the
/// generator beside it, on a CPU the program does not use where there is
/// one, and records the generator's bandwidth; the report compares them
/// (Tables 4.6/4.7).
#[test]
fn scale_with_stress_records_stress_runs() {
    let _serial = serial();
    let prog = build("scale_compute.c", &[]);
    let tmp = tempdir();
    let dir = tmp.path().join("stress.scale");
    let out = scale(
        &dir,
        &[
            "--threads",
            "2",
            "--repeat",
            "1",
            "--stress",
            "1",
            "--stress-buffer-mb",
            "16",
        ],
        &[prog.to_str().unwrap(), "{threads}", "20000000"],
    );
    assert!(out.success(), "{}", out.describe());
    let m = manifest(&dir);
    assert_eq!(m["stress_threads"], 1);
    let avail = cpus(&m, "cpus_available");
    let names = run_dirs(&m);
    assert_eq!(names[0], "m2-n1-r0");
    assert_eq!(names[1], "m2-n1-r0-stress");
    for r in runs(&m) {
        let stressed = r["stress"].as_bool().unwrap();
        assert_eq!(r["dir"].as_str().unwrap().ends_with("-stress"), stressed);
        assert_eq!(r["exit_code"], 0, "{r}");
        if !stressed {
            assert_eq!(r["stress_bandwidth_bytes_per_s"], Value::Null, "{r}");
            continue;
        }
        assert!(num(r, "stress_bandwidth_bytes_per_s") > 0.0, "{r}");
        let sc = cpus(r, "stress_cpus");
        assert_eq!(sc.len(), 1, "{r}");
        let target = cpus(r, "cpus");
        if target.len() < avail.len() {
            assert!(!target.contains(&sc[0]), "a free CPU exists: {r}");
        } else {
            assert!(
                r["warnings"].to_string().contains("share CPU"),
                "sharing must be said: {r}"
            );
        }
    }
    if avail.len() >= 2 {
        assert!(out.stderr.contains("share CPU"), "{}", out.describe());
    }
    let report = report_json(&dir);
    let r = row(&report, 2);
    let s = r["stress"]
        .as_array()
        .unwrap_or_else(|| panic!("no stress comparison in {r}"));
    assert!(!s.is_empty(), "{r}");
    assert!(
        s.iter().all(|c| num(c, "bandwidth_bytes_per_s") > 0.0),
        "{r}"
    );
}

/// The help of both commands shows examples and the run directory names.
#[test]
fn help_shows_examples() {
    let _serial = serial();
    let mut c = Command::new(contend_bin());
    c.args(["scale", "--help"]);
    let out = run_timeout(c, SCALE_TIMEOUT);
    assert!(out.success(), "{}", out.describe());
    for want in [
        "Examples:",
        "-- xz -T{threads}",
        "DIR/m<m>-n<n>-r<repeat>[-stress]",
        "--stress <K>",
    ] {
        assert!(out.stdout.contains(want), "no `{want}` in:\n{}", out.stdout);
    }
    let mut c = Command::new(contend_bin());
    c.args(["stress", "memory", "--help"]);
    let out = run_timeout(c, SCALE_TIMEOUT);
    assert!(out.success(), "{}", out.describe());
    assert!(
        out.stdout.contains("Examples:") && out.stdout.contains("--duration"),
        "{}",
        out.stdout
    );
}

/// On a terminal (util-linux `script` provides one) the progress bar
/// appears after a second with the runs done and the time left, and the
/// program's output still goes to its files, not to the terminal.
#[test]
fn progress_bar_shows_on_a_terminal() {
    let _serial = serial();
    let Some(script) = which("script") else {
        eprintln!("SKIP: `script` (util-linux) is not installed");
        return;
    };
    let tmp = tempdir();
    let dir = tmp.path().join("bar.scale");
    let inner = format!(
        "{} scale --threads 1 --repeat 4 -o {} -- sh -c 'echo program-output; sleep 0.4'",
        contend_bin().display(),
        dir.display()
    );
    let mut c = Command::new(script);
    c.args(["-qec", &inner, "/dev/null"]);
    let out = run_timeout(c, SCALE_TIMEOUT);
    assert!(out.success(), "{}", out.describe());
    assert!(
        out.stdout.contains("runs,") && out.stdout.contains("left"),
        "no progress bar on the terminal:\n{}",
        out.stdout
    );
    assert!(out.stdout.contains("made 4 of 4 runs"), "{}", out.stdout);
    assert!(!out.stdout.contains("program-output"), "{}", out.stdout);
    let captured = std::fs::read_to_string(dir.join("m1-n1-r3/stdout.txt")).unwrap();
    assert_eq!(captured, "program-output\n");
}
