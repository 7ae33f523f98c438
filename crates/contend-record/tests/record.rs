//! Tests of the recording launcher (`contend_record::launch`) on small C programs
//! compiled with `gcc` at test time.
//!
//! Signal forwarding is tested in a child process (this test binary run
//! again as a launcher, see [`launcher_helper`]) so that the signals sent to
//! the launcher do not reach the other tests' targets.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use contend_record::{record, RecordError, RecordOptions};
use contend_trace::meta::{MetaError, RunMeta};
use contend_trace::LockTrace;

/// Compiles `src` into `dir/name` with `gcc`; `None` if gcc fails (the
/// error is printed).
fn try_cc(dir: &Path, name: &str, src: &str, extra: &[&str]) -> Option<PathBuf> {
    let c = dir.join(format!("{name}.c"));
    let exe = dir.join(name);
    fs::write(&c, src).unwrap();
    let out = Command::new("gcc")
        .args(["-O1", "-o"])
        .arg(&exe)
        .arg(&c)
        .args(extra)
        .output()
        .expect("gcc must be installed to run these tests");
    if out.status.success() {
        Some(exe)
    } else {
        eprintln!("gcc {name}: {}", String::from_utf8_lossy(&out.stderr));
        None
    }
}

fn cc(dir: &Path, name: &str, src: &str) -> PathBuf {
    try_cc(dir, name, src, &["-pthread"]).expect("gcc failed")
}

fn opts(output: PathBuf, command: &[&str]) -> RecordOptions {
    RecordOptions {
        output,
        command: command.iter().map(|s| s.to_string()).collect(),
        ..RecordOptions::default()
    }
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

const EXIT3: &str = "int main(void) { return 3; }\n";

#[test]
fn exit_status_and_run_description() {
    let t = tempfile::tempdir().unwrap();
    let exe = cc(t.path(), "exit3", EXIT3);
    let out = t.path().join("rec");
    let o = record(&opts(out.clone(), &[s(&exe), "arg"])).unwrap();
    assert_eq!(o.dir, out);
    assert_eq!(o.exit_code, Some(3));
    assert_eq!(o.signal, None);
    assert_eq!(o.shell_status(), 3);
    assert!(o.wall_ns > 0);
    assert!(out.join("locks").is_dir() && out.join("maps").is_dir());

    let m = RunMeta::read(&out).unwrap();
    assert!(m.complete);
    assert_eq!(m.format_version, 1);
    assert_eq!(m.tool_version, env!("CARGO_PKG_VERSION"));
    assert_eq!(m.command, vec![s(&exe).to_string(), "arg".to_string()]);
    assert_eq!(m.exit_code, Some(3));
    assert_eq!(m.signal, None);
    assert!(m.pid.is_some_and(|p| p > 0));
    assert_eq!(m.wall_ns, Some(o.wall_ns));
    assert_eq!(
        m.end_monotonic_ns,
        Some(m.start_monotonic_ns + m.wall_ns.unwrap())
    );
    assert!(
        m.start_utc.ends_with('Z') && m.start_utc.len() == 27,
        "{}",
        m.start_utc
    );
    assert!(m
        .end_utc
        .as_deref()
        .is_some_and(|e| e >= m.start_utc.as_str()));
    assert!(m.cpus >= 1);
    assert!(!m.kernel.is_empty() && !m.host.is_empty());
    assert_eq!(m.cwd, std::env::current_dir().unwrap().to_str().unwrap());
    assert_eq!(m.warnings, o.warnings);
    match m.clock.as_str() {
        "tsc" => {
            // 2 start points and the end point.
            assert_eq!(m.calibration.len(), 3, "{:?}", m.calibration);
            assert!(m.tsc_hz > 100_000_000, "{}", m.tsc_hz);
            let (a, b) = (m.calibration[0], m.calibration[2]);
            assert!(b.ticks > a.ticks && b.monotonic_ns > a.monotonic_ns);
        }
        "monotonic" => {
            assert_eq!(m.tsc_hz, 0);
            assert!(m.calibration.is_empty());
        }
        other => panic!("clock {other}"),
    }
    // Environment summary: only the collector's variables and LD_PRELOAD.
    let abs = fs::canonicalize(&out).unwrap();
    assert_eq!(m.env.get("CONTEND_DIR").map(String::as_str), Some(s(&abs)));
    assert_eq!(m.env.get("CONTEND_CLOCK"), Some(&m.clock));
    assert!(m.env.contains_key("LD_PRELOAD"));
    assert!(!m.env.contains_key("PATH"));
}

#[test]
fn target_gets_collector_environment() {
    let t = tempfile::tempdir().unwrap();
    let exe = cc(
        t.path(),
        "envdump",
        r#"#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    FILE *f = fopen(argv[1], "w");
    const char *names[] = {"LD_PRELOAD", "CONTEND_DIR", "CONTEND_CLOCK", "CONTEND_TSC_HZ",
                           "CONTEND_STACK_EVERY", "CONTEND_CHUNK_KB"};
    fprintf(f, "argv0=%s\n", argv[0]);
    for (int i = 0; i < 6; i++) {
        const char *v = getenv(names[i]);
        fprintf(f, "%s=%s\n", names[i], v ? v : "(unset)");
    }
    return fclose(f) != 0;
}
"#,
    );
    let out = t.path().join("rec");
    let dump = t.path().join("env.txt");
    let mut o = opts(out.clone(), &[s(&exe), s(&dump)]);
    o.stack_every = 7;
    o.chunk_kb = Some(64);
    let outcome = record(&o).unwrap();
    assert_eq!(outcome.exit_code, Some(0));
    let text = fs::read_to_string(&dump).unwrap();
    let get = |k: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(k)?.strip_prefix('='))
            .unwrap_or_else(|| panic!("{k} missing in {text}"))
            .to_string()
    };
    let m = RunMeta::read(&out).unwrap();
    assert_eq!(get("argv0"), s(&exe));
    let collector = contend_collector::install_lock_collector().unwrap();
    assert!(
        get("LD_PRELOAD").starts_with(s(&collector)),
        "{}",
        get("LD_PRELOAD")
    );
    assert_eq!(get("CONTEND_DIR"), s(&fs::canonicalize(&out).unwrap()));
    assert_eq!(get("CONTEND_CLOCK"), m.clock);
    assert_eq!(get("CONTEND_TSC_HZ"), m.tsc_hz.to_string());
    assert_eq!(get("CONTEND_STACK_EVERY"), "7");
    assert_eq!(get("CONTEND_CHUNK_KB"), "64");
    assert_eq!(m.stack_every, 7);
    assert_eq!(
        m.env.get("CONTEND_CHUNK_KB").map(String::as_str),
        Some("64")
    );

    let mut bad = opts(t.path().join("rec2"), &[s(&exe)]);
    bad.chunk_kb = Some(3);
    assert!(matches!(
        record(&bad),
        Err(RecordError::InvalidChunkSize { kb: 3 })
    ));
    assert!(!t.path().join("rec2").exists());
}

#[test]
fn killed_target_reports_signal() {
    let t = tempfile::tempdir().unwrap();
    let exe = cc(
        t.path(),
        "selfkill",
        "#include <signal.h>\n#include <unistd.h>\n\
         int main(void) { kill(getpid(), SIGKILL); pause(); return 0; }\n",
    );
    let out = t.path().join("rec");
    let o = record(&opts(out.clone(), &[s(&exe)])).unwrap();
    assert_eq!(o.exit_code, None);
    assert_eq!(o.signal, Some(9));
    assert_eq!(o.shell_status(), 128 + 9);
    let m = RunMeta::read(&out).unwrap();
    assert!(m.complete);
    assert_eq!((m.exit_code, m.signal), (None, Some(9)));
}

#[test]
fn script_runs_through_its_interpreter() {
    let t = tempfile::tempdir().unwrap();
    let script = t.path().join("run.sh");
    fs::write(&script, "#!/bin/sh\nexit 5\n").unwrap();
    fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let o = record(&opts(t.path().join("rec"), &[s(&script)])).unwrap();
    assert_eq!(o.exit_code, Some(5));
    assert!(
        !o.warnings
            .iter()
            .any(|w| w.contains("is statically linked")),
        "{:?}",
        o.warnings
    );
}

#[test]
fn existing_output_is_refused_or_replaced_only_if_a_recording() {
    let t = tempfile::tempdir().unwrap();
    let exe = cc(t.path(), "exit3", EXIT3);

    // A directory that is not a recording: refused, even with force.
    let other = t.path().join("precious");
    fs::create_dir(&other).unwrap();
    fs::write(other.join("data.txt"), "keep me").unwrap();
    let mut o = opts(other.clone(), &[s(&exe)]);
    let e = record(&o).unwrap_err();
    assert!(matches!(e, RecordError::OutputExists { .. }), "{e}");
    assert!(e.to_string().contains("precious"), "{e}");
    o.force = true;
    let e = record(&o).unwrap_err();
    assert!(matches!(e, RecordError::NotARecording { .. }), "{e}");
    assert!(e.to_string().contains("precious") && e.to_string().contains("not a recording"));
    assert_eq!(
        fs::read_to_string(other.join("data.txt")).unwrap(),
        "keep me"
    );

    // A plain file: refused with force too.
    let file = t.path().join("file.data");
    fs::write(&file, "x").unwrap();
    let mut o = opts(file.clone(), &[s(&exe)]);
    o.force = true;
    assert!(matches!(record(&o), Err(RecordError::NotARecording { .. })));
    assert_eq!(fs::read_to_string(&file).unwrap(), "x");

    // A recording: refused without force, replaced with it.
    let rec = t.path().join("rec");
    let mut o = opts(rec.clone(), &[s(&exe)]);
    record(&o).unwrap();
    let marker = rec.join("locks").join("old.ctrace");
    fs::write(&marker, "old").unwrap();
    let e = record(&o).unwrap_err();
    assert!(matches!(e, RecordError::OutputExists { .. }), "{e}");
    assert!(marker.exists());
    o.force = true;
    let outcome = record(&o).unwrap();
    assert_eq!(outcome.exit_code, Some(3));
    assert!(!marker.exists(), "the old recording was not removed");
    assert!(RunMeta::read(&rec).unwrap().complete);

    // A directory with only locks/ (the launcher died before meta.json)
    // also counts as a recording.
    let partial = t.path().join("partial");
    fs::create_dir_all(partial.join("locks")).unwrap();
    let mut o = opts(partial.clone(), &[s(&exe)]);
    o.force = true;
    record(&o).unwrap();
}

#[test]
fn command_not_found_creates_nothing() {
    let t = tempfile::tempdir().unwrap();
    let out = t.path().join("rec");
    let e = record(&opts(out.clone(), &["contend-no-such-command-4711"])).unwrap_err();
    assert!(matches!(e, RecordError::CommandNotFound { .. }), "{e}");
    assert_eq!(
        e.to_string(),
        "command not found: contend-no-such-command-4711"
    );
    assert_eq!(e.shell_status(), Some(127));
    assert!(!out.exists());

    let missing = t.path().join("missing-program");
    let e = record(&opts(out.clone(), &[s(&missing)])).unwrap_err();
    assert!(matches!(e, RecordError::CommandNotFound { .. }), "{e}");
    assert!(!out.exists());

    let not_exec = t.path().join("plain.txt");
    fs::write(&not_exec, "x").unwrap();
    let e = record(&opts(out.clone(), &[s(&not_exec)])).unwrap_err();
    assert!(matches!(e, RecordError::NotExecutable { .. }), "{e}");
    assert_eq!(e.shell_status(), Some(126));
    assert!(!out.exists());

    assert!(matches!(
        record(&opts(out.clone(), &[])),
        Err(RecordError::EmptyCommand)
    ));
}

#[test]
fn statically_linked_program_is_refused_or_run_with_a_warning() {
    let t = tempfile::tempdir().unwrap();
    let Some(exe) = try_cc(t.path(), "static3", EXIT3, &["-static"]) else {
        eprintln!("skipped: static libc is not available (gcc -static failed)");
        return;
    };
    let out = t.path().join("rec");
    // Refused before it runs, nothing created (when its futex waits are
    // not traced through the tracepoints instead: the default, tested
    // end to end in contend-cli's futex_tracepoints).
    match record(&RecordOptions {
        futex_trace: contend_record::futex_trace::FutexTraceMode::Off,
        ..opts(out.clone(), &[s(&exe)])
    }) {
        Err(e @ RecordError::CannotTrace { .. }) => {
            let m = e.to_string();
            assert!(m.contains("static3") && m.contains("--yes"), "{m}");
        }
        other => panic!("expected CannotTrace, got {other:?}"),
    }
    assert!(!out.exists());
    // Run anyway when asked.
    let o = record(&RecordOptions {
        run_untraced: true,
        ..opts(out.clone(), &[s(&exe)])
    })
    .unwrap();
    assert_eq!(o.exit_code, Some(3));
    let w = o
        .warnings
        .iter()
        .find(|w| w.contains("is statically linked"))
        .unwrap_or_else(|| panic!("no warning in {:?}", o.warnings));
    assert!(w.contains("static3") && w.contains("LD_PRELOAD"), "{w}");
    assert!(
        o.warnings
            .iter()
            .any(|w| w.contains("no lock trace was written")),
        "{:?}",
        o.warnings
    );
    assert_eq!(o.traces, 0);
    // The warnings are in the run description too.
    assert_eq!(RunMeta::read(&out).unwrap().warnings, o.warnings);
}

#[test]
fn meta_round_trip_and_truncated_file() {
    let t = tempfile::tempdir().unwrap();
    let exe = cc(t.path(), "exit3", EXIT3);
    let out = t.path().join("rec");
    record(&opts(out.clone(), &[s(&exe)])).unwrap();
    let m = RunMeta::read(&out).unwrap();
    let copy = t.path().join("copy");
    fs::create_dir(&copy).unwrap();
    m.write(&copy).unwrap();
    assert_eq!(RunMeta::read(&copy).unwrap(), m);

    // Cut the file in the middle: the error names the file.
    let path = out.join("meta.json");
    let bytes = fs::read(&path).unwrap();
    fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
    let e = RunMeta::read(&out).unwrap_err();
    assert!(matches!(e, MetaError::NotJson { .. }), "{e}");
    let msg = e.to_string();
    assert!(msg.contains(s(&path)), "{msg}");

    // A wrong type is reported with the field.
    fs::write(&path, r#"{"complete": true, "exit_code": "three"}"#).unwrap();
    let msg = RunMeta::read(&out).unwrap_err().to_string();
    assert!(msg.contains(s(&path)) && msg.contains("exit_code"), "{msg}");
}

const THREADED: &str = r#"#include <pthread.h>
#include <stdio.h>
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static long counter;
static void *work(void *arg) {
    (void)arg;
    for (int i = 0; i < 20000; i++) {
        pthread_mutex_lock(&m);
        counter++;
        pthread_mutex_unlock(&m);
    }
    return NULL;
}
int main(void) {
    pthread_t t[4];
    for (int i = 0; i < 4; i++) pthread_create(&t[i], NULL, work, NULL);
    for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
    return counter == 80000 ? 0 : 1;
}
"#;

#[test]
fn threaded_program_yields_lock_traces() {
    let t = tempfile::tempdir().unwrap();
    let exe = cc(t.path(), "threads", THREADED);
    let out = t.path().join("rec");
    let o = record(&opts(out.clone(), &[s(&exe)])).unwrap();
    assert_eq!(o.exit_code, Some(0));
    assert!(o.traces >= 1, "warnings: {:?}", o.warnings);
    assert!(o.warnings.is_empty(), "{:?}", o.warnings);
    let pid = RunMeta::read(&out).unwrap().pid.unwrap();
    let trace_path = out.join("locks").join(format!("{pid}.ctrace"));
    let trace = LockTrace::open(&trace_path).unwrap();
    assert_eq!(trace.pid, pid);
    assert!(trace.finished());
    assert!(trace.damage.is_empty(), "{:?}", trace.damage);
    // 4 threads × 20000 × (lock + unlock), at least.
    assert!(trace.op_count() >= 160_000, "{} ops", trace.op_count());
    assert!(out.join("maps").join(format!("{pid}.maps")).is_file());
}

// --- Signal forwarding, in a separate launcher process ----------------------

const HELPER_OUT: &str = "CONTEND_TEST_HELPER_OUTPUT";
const HELPER_CMD: &str = "CONTEND_TEST_HELPER_COMMAND";

/// Not a test of its own: when the variables above are set, this test binary
/// was started by [`run_launcher`] to act as a launcher. It records the
/// command and prints the outcome and whether the signal dispositions were
/// restored afterwards.
#[test]
fn launcher_helper() {
    let (Some(out), Some(cmd)) = (std::env::var_os(HELPER_OUT), std::env::var(HELPER_CMD).ok())
    else {
        return;
    };
    let command: Vec<&str> = cmd.split('\x1f').collect();
    let o = record(&opts(PathBuf::from(out), &command)).unwrap();
    let restored = [libc::SIGINT, libc::SIGTERM, libc::SIGQUIT]
        .iter()
        .all(|&sig| {
            // SAFETY: queries the disposition only.
            unsafe {
                let mut old: libc::sigaction = std::mem::zeroed();
                libc::sigaction(sig, std::ptr::null(), &mut old) == 0
                    && old.sa_sigaction == libc::SIG_DFL
            }
        });
    println!(
        "OUTCOME exit={:?} signal={:?} restored={restored}",
        o.exit_code, o.signal
    );
}

/// A launcher process recording `command` into `out`; `ignore_hup` starts it
/// with SIGHUP ignored, as `nohup` would.
fn run_launcher(out: &Path, command: &[&str], ignore_hup: bool) -> std::process::Child {
    let mut c = Command::new(std::env::current_exe().unwrap());
    c.args([
        "--exact",
        "launcher_helper",
        "--nocapture",
        "--test-threads=1",
    ])
    .env(HELPER_OUT, out)
    .env(HELPER_CMD, command.join("\x1f"))
    .stdout(Stdio::piped());
    // The disposition is set both ways: the test may itself run with SIGHUP
    // ignored (under nohup), which the launcher would pass on.
    let hup = if ignore_hup {
        libc::SIG_IGN
    } else {
        libc::SIG_DFL
    };
    use std::os::unix::process::CommandExt;
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        c.pre_exec(move || {
            libc::signal(libc::SIGHUP, hup);
            // a suite run in the background inherits SIGINT/SIGQUIT ignored
            for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGQUIT] {
                libc::signal(sig, libc::SIG_DFL);
            }
            Ok(())
        });
    }
    c.spawn().unwrap()
}

fn outcome_line(mut child: std::process::Child) -> String {
    let mut text = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut text)
        .unwrap();
    let status = child.wait().unwrap();
    assert!(status.success(), "launcher failed: {status}\n{text}");
    // libtest prints the test name on the same line.
    text.lines()
        .find_map(|l| l.find("OUTCOME ").map(|i| l[i..].to_string()))
        .unwrap_or_else(|| panic!("no outcome in {text}"))
}

/// Waits for `file` to appear (the target is running).
fn wait_for(file: &Path) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !file.exists() {
        assert!(
            Instant::now() < deadline,
            "{} never appeared",
            file.display()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

const WAIT_FOR_SIGNAL: &str = r#"#include <stdio.h>
#include <unistd.h>
int main(int argc, char **argv) {
    fclose(fopen(argv[1], "w"));
    for (;;) pause();
}
"#;

#[test]
fn termination_signals_are_forwarded_and_the_run_completed() {
    let t = tempfile::tempdir().unwrap();
    let exe = cc(t.path(), "waiter", WAIT_FOR_SIGNAL);
    for (sig, name) in [(libc::SIGTERM, "term"), (libc::SIGINT, "int")] {
        let out = t.path().join(format!("rec-{name}"));
        let ready = t.path().join(format!("ready-{name}"));
        let launcher = run_launcher(&out, &[s(&exe), s(&ready)], false);
        wait_for(&ready);
        // SAFETY: plain syscall to our own child.
        assert_eq!(unsafe { libc::kill(launcher.id() as i32, sig) }, 0);
        let line = outcome_line(launcher);
        assert_eq!(
            line,
            format!("OUTCOME exit=None signal=Some({sig}) restored=true")
        );
        let m = RunMeta::read(&out).unwrap();
        assert!(m.complete);
        assert_eq!(m.signal, Some(sig));
    }
}

#[test]
fn ignored_hangup_stays_ignored_for_the_target() {
    let t = tempfile::tempdir().unwrap();
    let exe = cc(
        t.path(),
        "hupcheck",
        r#"#include <signal.h>
int main(void) {
    struct sigaction sa;
    sigaction(SIGHUP, 0, &sa);
    return sa.sa_handler == SIG_IGN ? 42 : 0;
}
"#,
    );
    let out = t.path().join("rec");
    let line = outcome_line(run_launcher(&out, &[s(&exe)], true));
    assert!(line.starts_with("OUTCOME exit=Some(42) "), "{line}");
    let out2 = t.path().join("rec2");
    let line = outcome_line(run_launcher(&out2, &[s(&exe)], false));
    assert!(line.starts_with("OUTCOME exit=Some(0) "), "{line}");
}
