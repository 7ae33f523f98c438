//! Shared helpers of the end-to-end tests: build a test program from
//! `tests/programs/` with gcc/g++, run it alone and under `contend record`,
//! and read `contend report --format json`.
//!
//! Every external process runs with a time limit; on timeout its whole
//! process tree is killed and the test fails, so no test can hang the suite.

#![allow(dead_code)]

use std::collections::hash_map::DefaultHasher;
use std::ffi::OsStr;
use std::hash::{Hash, Hasher};
use std::io::Read;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use serde_json::Value;

/// Default time limit for one recorded test program.
pub const RUN_TIMEOUT: Duration = Duration::from_secs(60);

/// The `contend` binary under test.
pub fn contend_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_contend"))
}

/// `tests/programs/` at the workspace root.
pub fn programs_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/programs")
}

/// Path of a test program's source.
pub fn program_source(name: &str) -> PathBuf {
    programs_dir().join(name)
}

/// True when `tool --version` runs.
pub fn have(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok()
}

/// `tool` found on PATH (an executable file), without running it.
pub fn which(tool: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(tool))
        .find(|p| p.is_file())
}

/// Returns early from the calling test, printing why, when a tool is missing.
#[macro_export]
macro_rules! require_tool {
    ($tool:expr) => {
        if !$crate::common::have($tool) {
            eprintln!(
                "SKIP {}: `{}` is not installed, so this test cannot run",
                module_path!(),
                $tool
            );
            return;
        }
    };
}

/// Tests that measure time or load the machine take this lock so that they
/// do not run at the same time as each other (within one test binary).
pub fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// A fresh temporary directory, removed when dropped.
pub fn tempdir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("contend-e2e-")
        .tempdir()
        .expect("create a temporary directory")
}

/// The standard flags the test programs must compile cleanly with.
pub const CFLAGS: &[&str] = &["-Wall", "-Wextra", "-Werror", "-O1", "-g", "-pthread"];

/// Builds `tests/programs/<src>` with the standard flags plus `extra`
/// (placed after the source, so `-l` options link) and returns the
/// executable. C files use gcc -std=c11, C++ files g++ -std=c++17.
///
/// Outputs are cached in the target directory under a hash of the source
/// text and the flags, so every test process (and every later run) builds
/// each variant once. Concurrent builds of the same variant (by several
/// processes, or several threads of one) are harmless: each compiles to a
/// private name and renames into place.
pub fn build(src: &str, extra: &[&str]) -> PathBuf {
    build_source(&program_source(src), extra)
}

/// The `*.h` files beside `source`, in name order.
fn local_headers(source: &Path) -> Vec<PathBuf> {
    let dir = source.parent().unwrap_or(Path::new("."));
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "h"))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// [`build`] for a source file anywhere (e.g. under `examples/`).
pub fn build_source(source: &Path, extra: &[&str]) -> PathBuf {
    let src = source.file_name().unwrap().to_string_lossy().to_string();
    let src = src.as_str();
    let text = std::fs::read(source)
        .unwrap_or_else(|e| panic!("cannot read test program {}: {e}", source.display()));
    let (compiler, std_flag) = compiler_for(src);

    let mut h = DefaultHasher::new();
    text.hash(&mut h);
    // Local headers (`#include "accuracy_common.h"`) are part of the build.
    for header in local_headers(source) {
        std::fs::read(&header).unwrap_or_default().hash(&mut h);
    }
    extra.hash(&mut h);
    compiler.hash(&mut h);
    CFLAGS.hash(&mut h);
    let stem = Path::new(src)
        .file_stem()
        .unwrap()
        .to_string_lossy()
        .to_string();
    let dir = cache_dir().join(format!("{stem}-{:016x}", h.finish()));
    let exe = dir.join(&stem);
    if exe.exists() {
        return exe;
    }
    std::fs::create_dir_all(&dir).expect("create the program cache directory");
    // Private to this process and this call: tests of one binary run on
    // several threads and may build the same variant at once.
    static BUILDS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = BUILDS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = dir.join(format!(".{stem}.{}.{n}.tmp", std::process::id()));
    let mut cmd = Command::new(compiler);
    cmd.arg(std_flag)
        .args(CFLAGS)
        .arg("-o")
        .arg(&tmp)
        .arg(source)
        .args(extra)
        .current_dir(&dir);
    let out = run_timeout(cmd, Duration::from_secs(120));
    assert!(
        out.success(),
        "{compiler} failed to build {}:\n{}",
        source.display(),
        out.stderr
    );
    // The first build to finish stays: replacing a program another test
    // is recording would make its recording name a rebuilt binary.
    if std::fs::hard_link(&tmp, &exe).is_err() && !exe.exists() {
        panic!(
            "cannot move the built program into place at {}",
            exe.display()
        );
    }
    let _ = std::fs::remove_file(&tmp);
    exe
}

fn compiler_for(src: &str) -> (&'static str, &'static str) {
    if src.ends_with(".cpp") {
        ("g++", "-std=c++17")
    } else {
        ("gcc", "-std=c11")
    }
}

/// Builds a shared library from `src` with `-shared -fPIC` plus `extra`,
/// into directory `dir` as `name`; returns its path.
pub fn build_shared_into(src: &str, dir: &Path, name: &str, extra: &[&str]) -> PathBuf {
    let source = program_source(src);
    let (compiler, std_flag) = compiler_for(src);
    let lib = dir.join(name);
    let mut cmd = Command::new(compiler);
    cmd.arg(std_flag)
        .args(CFLAGS)
        .args(["-shared", "-fPIC", "-o"])
        .arg(&lib)
        .arg(&source)
        .args(extra);
    let out = run_timeout(cmd, Duration::from_secs(120));
    assert!(
        out.success(),
        "{compiler} failed to build {}:\n{}",
        lib.display(),
        out.stderr
    );
    lib
}

/// Builds an executable from `src` into `dir` as `name` (no caching).
pub fn build_into(src: &str, dir: &Path, name: &str, extra: &[&str]) -> PathBuf {
    let source = program_source(src);
    let (compiler, std_flag) = compiler_for(src);
    let exe = dir.join(name);
    let mut cmd = Command::new(compiler);
    cmd.arg(std_flag)
        .args(CFLAGS)
        .arg("-o")
        .arg(&exe)
        .arg(&source)
        .args(extra)
        .current_dir(dir);
    let out = run_timeout(cmd, Duration::from_secs(120));
    assert!(
        out.success(),
        "{compiler} failed to build {}:\n{}",
        exe.display(),
        out.stderr
    );
    exe
}

fn cache_dir() -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("e2e-programs");
        std::fs::create_dir_all(&d).expect("create the program cache directory");
        d
    })
    .clone()
}

/// What a finished process left.
#[derive(Debug, Clone)]
pub struct Output {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
}

impl Output {
    pub fn success(&self) -> bool {
        self.status.success()
    }
    /// The exit code, or None if a signal ended the process.
    pub fn code(&self) -> Option<i32> {
        self.status.code()
    }
    /// The signal that ended the process, if any.
    pub fn signal(&self) -> Option<i32> {
        self.status.signal()
    }
    /// Shell-style status: the code, or 128 + signal.
    pub fn shell_status(&self) -> i32 {
        match (self.status.code(), self.status.signal()) {
            (Some(c), _) => c,
            (None, Some(s)) => 128 + s,
            _ => -1,
        }
    }
    /// A description for assertion messages.
    pub fn describe(&self) -> String {
        format!(
            "status {} after {:.2?}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.shell_status(),
            self.elapsed,
            tail(&self.stdout, 4000),
            tail(&self.stderr, 4000)
        )
    }
}

fn tail(s: &str, n: usize) -> &str {
    if s.len() <= n {
        return s;
    }
    let mut start = s.len() - n;
    while !s.is_char_boundary(start) {
        start += 1;
    }
    &s[start..]
}

/// Every process whose parent chain leads to `pid` (not `pid` itself),
/// read from /proc; children before their own children.
pub fn descendants(pid: u32) -> Vec<u32> {
    let mut parent_of = Vec::new();
    if let Ok(rd) = std::fs::read_dir("/proc") {
        for e in rd.flatten() {
            let Some(p) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
                continue;
            };
            if let Some(pp) = parent_pid(p) {
                parent_of.push((p, pp));
            }
        }
    }
    let mut out = Vec::new();
    let mut frontier = vec![pid];
    while let Some(p) = frontier.pop() {
        for &(c, pp) in &parent_of {
            if pp == p && !out.contains(&c) {
                out.push(c);
                frontier.push(c);
            }
        }
    }
    out
}

/// Parent pid from /proc/<pid>/stat.
pub fn parent_pid(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // "pid (comm) state ppid ..." — comm may contain spaces and parens.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// The command name (`comm`) of a process.
pub fn comm(pid: u32) -> Option<String> {
    Some(
        std::fs::read_to_string(format!("/proc/{pid}/comm"))
            .ok()?
            .trim()
            .to_string(),
    )
}

/// Sends `sig` (a number) to `pid`; false if it failed. Uses the shell's
/// built-in `kill`, which exists even where procps' kill(1) is not
/// installed.
pub fn kill(pid: u32, sig: i32) -> bool {
    Command::new("sh")
        .arg("-c")
        .arg(format!("kill -{sig} {pid}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Kills a child and everything it started, innermost last-started first.
/// Sends `sig` to every process of the process group `pgid`, as a
/// terminal does for Ctrl-C (SIGINT) to its foreground group.
pub fn kill_group(pgid: u32, sig: i32) -> bool {
    // procps's kill takes a negative pid after `--` (dash's builtin does
    // not).
    Command::new("/bin/kill")
        .arg(format!("-{sig}"))
        .arg("--")
        .arg(format!("-{pgid}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

pub fn kill_tree(child: &mut Child) {
    let pid = child.id();
    let mut all = descendants(pid);
    all.reverse();
    for p in all {
        kill(p, 9);
    }
    let _ = child.kill();
}

/// Gives `cmd` Ctrl-C and hang-up as a terminal's foreground job gets them
/// (default dispositions): a test run in the background of a
/// non-interactive shell (or under nohup) inherits SIGINT/SIGHUP ignored,
/// and exec keeps an ignored signal ignored.
pub fn terminal_signals(cmd: &mut Command) {
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            libc::signal(libc::SIGHUP, libc::SIG_DFL);
            Ok(())
        });
    }
}

/// Spawns `cmd` with piped stdout/stderr (stdin closed) in its own process
/// group, collecting output on background threads.
pub struct Running {
    pub child: Child,
    started: Instant,
    stdout: Option<std::thread::JoinHandle<String>>,
    stderr: Option<std::thread::JoinHandle<String>>,
}

/// Reads a child's pipe to its end on a thread of its own (so a full pipe
/// never blocks the child) and hands back the text.
fn drain(mut pipe: impl Read + Send + 'static) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = pipe.read_to_end(&mut v);
        String::from_utf8_lossy(&v).into_owned()
    })
}

impl Running {
    pub fn spawn(mut cmd: Command) -> Running {
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        terminal_signals(&mut cmd);
        let mut child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
        let stdout = child.stdout.take().map(drain);
        let stderr = child.stderr.take().map(drain);
        Running {
            child,
            started: Instant::now(),
            stdout,
            stderr,
        }
    }

    /// Spawns with stdout left to the caller (`child.stdout` is set), for
    /// tests that read the target's output while it runs.
    pub fn spawn_streaming(mut cmd: Command) -> Running {
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        terminal_signals(&mut cmd);
        let mut child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
        let stderr = child.stderr.take().map(drain);
        Running {
            child,
            started: Instant::now(),
            stdout: None,
            stderr,
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits up to `timeout`; None if still running.
    pub fn wait_for(&mut self, timeout: Duration) -> Option<Output> {
        let deadline = Instant::now() + timeout;
        loop {
            match self.child.try_wait().expect("wait for a child") {
                Some(status) => return Some(self.collect(status)),
                None if Instant::now() >= deadline => return None,
                None => std::thread::sleep(Duration::from_millis(10)),
            }
        }
    }

    /// Waits up to `timeout`, then kills the process tree and panics.
    pub fn wait_or_kill(mut self, timeout: Duration, what: &str) -> Output {
        if let Some(o) = self.wait_for(timeout) {
            return o;
        }
        kill_tree(&mut self.child);
        let status = self.child.wait().expect("wait after kill");
        let o = self.collect(status);
        panic!(
            "{what} did not finish within {timeout:?}; killed.\n{}",
            o.describe()
        );
    }

    fn collect(&mut self, status: ExitStatus) -> Output {
        // A grandchild may still hold the pipes open; don't wait for it forever.
        let join = |h: Option<std::thread::JoinHandle<String>>| -> String {
            let Some(h) = h else { return String::new() };
            let deadline = Instant::now() + Duration::from_secs(10);
            while !h.is_finished() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(10));
            }
            if h.is_finished() {
                h.join().unwrap_or_default()
            } else {
                "<output still open after 10 s>".into()
            }
        };
        Output {
            status,
            stdout: join(self.stdout.take()),
            stderr: join(self.stderr.take()),
            elapsed: self.started.elapsed(),
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            kill_tree(&mut self.child);
            let _ = self.child.wait();
        }
    }
}

/// Runs `cmd` to completion within `timeout` (kills its tree and panics
/// otherwise).
pub fn run_timeout(cmd: Command, timeout: Duration) -> Output {
    let what = format!("{cmd:?}");
    Running::spawn(cmd).wait_or_kill(timeout, &what)
}

/// Runs a program directly (no recording).
pub fn run_plain<S: AsRef<OsStr>>(prog: &Path, args: &[S]) -> Output {
    let mut cmd = Command::new(prog);
    cmd.args(args);
    run_timeout(cmd, RUN_TIMEOUT)
}

/// The `contend record -o <dir> --force -- prog args…` command.
pub fn record_command<S: AsRef<OsStr>>(dir: &Path, prog: &Path, args: &[S]) -> Command {
    let mut cmd = Command::new(contend_bin());
    cmd.arg("record")
        .arg("-o")
        .arg(dir)
        .arg("--force")
        .arg("--")
        .arg(prog)
        .args(args);
    cmd
}

/// Runs `contend record -o <dir> -- prog args…` to completion.
pub fn record<S: AsRef<OsStr>>(dir: &Path, prog: &Path, args: &[S]) -> Output {
    record_timeout(dir, prog, args, RUN_TIMEOUT)
}

/// [`record`] with a time limit of its own.
pub fn record_timeout<S: AsRef<OsStr>>(
    dir: &Path,
    prog: &Path,
    args: &[S],
    timeout: Duration,
) -> Output {
    run_timeout(record_command(dir, prog, args), timeout)
}

/// Runs `contend report <dir> ARGS…` to completion (raw output).
pub fn report_raw<S: AsRef<OsStr>>(dir: &Path, args: &[S]) -> Output {
    let mut cmd = Command::new(contend_bin());
    cmd.arg("report").arg(dir).args(args);
    run_timeout(cmd, Duration::from_secs(120))
}

/// `contend compare DIRS… --format json`, which must succeed within
/// `timeout`; parsed.
pub fn compare_json<P: AsRef<OsStr>>(dirs: &[P], timeout: Duration) -> Value {
    let mut cmd = Command::new(contend_bin());
    cmd.arg("compare").args(dirs).args(["--format", "json"]);
    let out = run_timeout(cmd, timeout);
    assert!(out.success(), "{}", out.describe());
    serde_json::from_str(&out.stdout).expect("compare JSON")
}

/// `contend report <dir> --format json`, which must succeed; parsed.
pub fn report_json(dir: &Path) -> Value {
    report_json_with(dir, &[] as &[&str])
}

/// `contend report <dir> --format json ARGS…`, which must succeed; parsed.
pub fn report_json_with<S: AsRef<OsStr>>(dir: &Path, args: &[S]) -> Value {
    let mut all: Vec<&OsStr> = vec![OsStr::new("--format"), OsStr::new("json")];
    all.extend(args.iter().map(|a| a.as_ref()));
    let out = report_raw(dir, &all);
    assert!(
        out.success(),
        "contend report {} --format json failed:\n{}",
        dir.display(),
        out.describe()
    );
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "contend report --format json printed invalid JSON ({e}):\n{}",
            out.describe()
        )
    })
}

/// A JSON value as u64 (panics with the path when missing).
pub fn u(v: &Value, path: &str) -> u64 {
    let mut cur = v;
    for key in path.split('.') {
        cur = match key.parse::<usize>() {
            Ok(i) if cur.is_array() => &cur[i],
            _ => &cur[key],
        };
    }
    cur.as_u64()
        .unwrap_or_else(|| panic!("`{path}` is not an unsigned integer: {cur}"))
}

/// The `locks.by_lock` row whose name is `name`.
pub fn lock_row<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["locks"]["by_lock"]
        .as_array()
        .expect("locks.by_lock is an array")
        .iter()
        .find(|l| l["name"] == name)
        .unwrap_or_else(|| {
            panic!(
                "no lock named {name} in by_lock: {}",
                serde_json::to_string_pretty(&report["locks"]["by_lock"]).unwrap()
            )
        })
}

/// All `warnings[]` joined into one string (for `contains` checks).
pub fn warnings(report: &Value) -> String {
    report["warnings"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|w| w.as_str())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

/// One chunk header of a lock trace (docs/trace-format.md, "Chunks"): a
/// chunk's, or a slot's of a slot chunk (`in_slot`; "Slot chunks").
pub struct ChunkHead {
    pub tid: u32,
    pub sequence: u32,
    pub flags: u32,
    pub base_ticks: u64,
    /// It has the chunk magic (the chunk was started).
    pub started: bool,
    pub in_slot: bool,
}

/// The chunks the lock trace at `path` claimed (its header's count), and
/// the headers of those in the file, in file order, a slot chunk's by the
/// headers of its slots that were handed out (a thread's first chunks once
/// its process has a second thread; docs/trace-format.md, "Slot chunks").
pub fn trace_chunk_heads(path: &Path) -> (usize, Vec<ChunkHead>) {
    use contend_trace::format::{self, chunk, header as h};
    let bytes = std::fs::read(path).unwrap();
    let u32_at = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap());
    let u64_at = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap());
    let head = |at: usize, in_slot: bool| ChunkHead {
        tid: u32_at(at + chunk::TID),
        sequence: u32_at(at + chunk::SEQUENCE),
        flags: u32_at(at + chunk::FLAGS),
        base_ticks: u64_at(at + chunk::BASE_TICKS),
        started: u32_at(at + chunk::MAGIC) == format::CHUNK_MAGIC,
        in_slot,
    };
    let size = u32_at(h::CHUNK_SIZE) as usize;
    let data = u64_at(h::DATA_OFFSET) as usize;
    let claimed = u32_at(h::CHUNKS_CLAIMED) as usize;
    let heads = (0..claimed)
        .map(|i| data + i * size)
        .filter(|&at| at + size <= bytes.len())
        .flat_map(|at| {
            let c = head(at, false);
            if c.flags & format::CHUNK_SLOTS == 0 {
                return vec![c];
            }
            let slot = c.sequence as usize;
            (0..(size - format::CHUNK_HEADER_SIZE) / slot)
                .map(|k| head(at + format::CHUNK_HEADER_SIZE + k * slot, true))
                .filter(|s| s.started)
                .collect()
        })
        .collect();
    (claimed, heads)
}

/// `<dir>/locks/*.ctrace` files.
pub fn trace_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir.join("locks"))
        .map(|rd| {
            rd.flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|e| e == "ctrace"))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// Line number (1-based) of the first line of `tests/programs/<src>` that
/// contains `marker`.
pub fn line_of(src: &str, marker: &str) -> u32 {
    let text = std::fs::read_to_string(program_source(src)).expect("read test program");
    text.lines()
        .position(|l| l.contains(marker))
        .map(|i| i as u32 + 1)
        .unwrap_or_else(|| panic!("{marker} not found in {src}"))
}

/// The event records of the OTF2 archive `anchor` (`DIR/traces.otf2`) as
/// `otf2-print` lists them, per location id in order: (record name, the
/// line after the timestamp: `Region: "…" <id>`, `Model: …, Lock: …`).
/// Asserts that `otf2-print` reads the archive and that on every location
/// each region entered is left innermost first and each lock acquired is
/// released (the same model, lock and acquisition order), nothing left
/// open.
pub fn otf2_events_nested(anchor: &Path) -> std::collections::BTreeMap<u64, Vec<(String, String)>> {
    let print = Command::new("otf2-print").arg(anchor).output().unwrap();
    assert!(
        print.status.success(),
        "otf2-print {}: {}",
        anchor.display(),
        String::from_utf8_lossy(&print.stderr)
    );
    let text = String::from_utf8(print.stdout).unwrap();
    let mut per_location: std::collections::BTreeMap<u64, Vec<(String, String)>> =
        Default::default();
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 4 || !f[0].chars().all(|c| c.is_ascii_uppercase() || c == '_') {
            continue;
        }
        let Ok(location) = f[1].parse::<u64>() else {
            continue;
        };
        per_location
            .entry(location)
            .or_default()
            .push((f[0].to_string(), f[3..].join(" ")));
    }
    for (location, events) in &per_location {
        let (mut open, mut held): (Vec<&str>, Vec<&str>) = (Vec::new(), Vec::new());
        for (record, rest) in events {
            match record.as_str() {
                "ENTER" => open.push(rest),
                "LEAVE" => assert_eq!(
                    open.pop(),
                    Some(rest.as_str()),
                    "location {location}: left, not the innermost open region"
                ),
                "THREAD_ACQUIRE_LOCK" => held.push(rest),
                "THREAD_RELEASE_LOCK" => {
                    let at = held.iter().rposition(|l| *l == rest);
                    assert!(
                        at.is_some(),
                        "location {location}: released, not held: {rest}"
                    );
                    held.remove(at.unwrap());
                }
                _ => {}
            }
        }
        assert!(open.is_empty(), "location {location}: left open {open:?}");
        assert!(held.is_empty(), "location {location}: still held {held:?}");
    }
    per_location
}

/// The global definitions of the OTF2 archive `anchor` as `otf2-print -G`
/// lists them (`LOCATION_GROUP …`, `LOCATION …`, `REGION …` lines).
pub fn otf2_definitions(anchor: &Path) -> String {
    let print = Command::new("otf2-print")
        .arg("-G")
        .arg(anchor)
        .output()
        .unwrap();
    assert!(
        print.status.success(),
        "otf2-print -G {}: {}",
        anchor.display(),
        String::from_utf8_lossy(&print.stderr)
    );
    String::from_utf8(print.stdout).unwrap()
}

/// `n` with its digits grouped by commas, as the text reports print
/// counts (`1234567` → `1,234,567`).
pub fn with_commas(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The items of the text report's "At a glance" list (`contend report
/// <dir>`, which must succeed), each joined onto one line.
pub fn at_a_glance(dir: &Path) -> Vec<String> {
    let out = report_raw(dir, &[] as &[&str]);
    assert!(out.success(), "contend report failed:\n{}", out.describe());
    let mut items: Vec<String> = Vec::new();
    let mut inside = false;
    for line in out.stdout.lines() {
        if line == "At a glance" {
            inside = true;
        } else if inside && line.is_empty() {
            break;
        } else if let (true, Some(item)) = (inside, line.strip_prefix("  - ")) {
            items.push(item.to_string());
        } else if let (true, Some(more), Some(last)) =
            (inside, line.strip_prefix("    "), items.last_mut())
        {
            last.push(' ');
            last.push_str(more);
        }
    }
    assert!(
        !items.is_empty(),
        "no \"At a glance\" list in the report:\n{}",
        out.stdout
    );
    items
}

/// The first duration in `text` as the reports print it (`1.234 ms`,
/// `12.50 s`, `523 ns`, `1,024 s`), in ns; `None` when there is none.
pub fn first_duration_ns(text: &str) -> Option<f64> {
    let words: Vec<&str> = text.split(' ').collect();
    words.windows(2).find_map(|pair| {
        let scale = match pair[1].trim_end_matches([',', '.', ';', ')', ':']) {
            "ns" => 1.0,
            "µs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            _ => return None,
        };
        let number = pair[0].trim_start_matches('(').replace(',', "");
        number.parse::<f64>().ok().map(|v| v * scale)
    })
}

/// The recording's `meta.json` (`DIR/meta.json`), which must exist and parse.
pub(crate) fn meta(dir: &std::path::Path) -> serde_json::Value {
    let path = dir.join("meta.json");
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}
