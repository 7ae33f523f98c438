//! MariaDB (Debian's `mariadbd`, 10.6 or later) under `sysbench
//! oltp_read_write`, recorded with `contend record`: InnoDB's latches
//! (`srw_mutex`, `ssux_lock`, …) wait with `syscall(SYS_futex, …)`, so
//! their waits appear in the futex section — with wait times, at
//! `mariadbd`'s own call sites — where the lock tables, which see glibc's
//! pthread functions only, never showed them.
//!
//! The test starts everything itself and stops it by PID: `mariadbd` on
//! an empty data directory in a temporary directory (InnoDB creates its
//! system tablespace; `--skip-grant-tables`, so no `mariadb-install-db`,
//! which spends about 8 s waiting here), on a socket in that directory,
//! with networking off; a database is a subdirectory of the data
//! directory, so `sbtest` is made with `mkdir` (no client needed).
//! sysbench prepares one small table and runs 8 threads for 3 s; then
//! `mariadbd` gets SIGTERM (its PID from its `--pid-file`) and the
//! recording ends with it. SKIP (printed) when `mariadbd` or `sysbench`
//! is not installed (scripts/test.sh installs Debian's
//! `mariadb-server-core`, which starts no service, and `sysbench`).
//!
//! Debian's `mariadbd` is stripped and exports no InnoDB function, so
//! without its debug file (`mariadb-server-core-dbgsym`, from Debian's
//! debug archive) the user sees the latch waits at `mariadbd+0x…` sites
//! (kind `futex`); with it, by function (`srw_mutex_impl<…>::wait_and_lock`
//! …), kind `innodb latch`. The test checks whichever case holds here.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::*;
use serde_json::Value;

/// `mariadbd`, from `PATH` or Debian's /usr/sbin.
fn mariadbd() -> Option<PathBuf> {
    which("mariadbd").or_else(|| {
        let p = PathBuf::from("/usr/sbin/mariadbd");
        p.exists().then_some(p)
    })
}

/// True if `exe` has a `.symtab` or a separate debug file for its build
/// id is installed: then its InnoDB functions can be named.
fn has_symbols(exe: &Path) -> bool {
    let sections = Command::new("readelf").arg("-S").arg(exe).output();
    if sections.is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains(".symtab")) {
        return true;
    }
    let Ok(out) = Command::new("readelf").arg("-n").arg(exe).output() else {
        return false;
    };
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .find_map(|l| l.trim().strip_prefix("Build ID: "))
        .map(str::trim)
        .is_some_and(|id| {
            id.len() > 2
                && Path::new(&format!(
                    "/usr/lib/debug/.build-id/{}/{}.debug",
                    &id[..2],
                    &id[2..]
                ))
                .exists()
        })
}

/// sysbench's `oltp_read_write` against the server's socket.
fn sysbench(sysbench: &Path, socket: &Path, args: &[&str]) -> Output {
    let mut cmd = Command::new(sysbench);
    cmd.arg("oltp_read_write")
        .arg("--db-driver=mysql")
        .arg(format!("--mysql-socket={}", socket.display()))
        .args(["--mysql-user=root", "--tables=1", "--table-size=2000"])
        .args(args);
    run_timeout(cmd, Duration::from_secs(60))
}

#[test]
fn mariadb_innodb_latches_under_sysbench() {
    let Some(server) = mariadbd() else {
        eprintln!(
            "SKIP mariadb_innodb_latches_under_sysbench: mariadbd is not installed \
             (Debian: mariadb-server-core)"
        );
        return;
    };
    let Some(bench) = which("sysbench") else {
        eprintln!("SKIP mariadb_innodb_latches_under_sysbench: sysbench is not installed");
        return;
    };
    let _serial = serial();
    let tmp = tempdir();
    let data = tmp.path().join("data");
    std::fs::create_dir_all(data.join("sbtest")).expect("make the data directory");
    let socket = tmp.path().join("mariadb.sock");
    let pid_file = tmp.path().join("mariadbd.pid");
    let rec = tmp.path().join("mariadb.data");
    let args = [
        "--no-defaults".to_string(),
        format!("--datadir={}", data.display()),
        format!("--socket={}", socket.display()),
        format!("--pid-file={}", pid_file.display()),
        format!("--log-error={}", tmp.path().join("error.log").display()),
        "--skip-networking".into(),
        "--skip-grant-tables".into(),
        "--user=root".into(),
        "--innodb-buffer-pool-size=32M".into(),
        "--innodb-log-file-size=8M".into(),
        "--innodb-flush-log-at-trx-commit=0".into(),
    ];
    let mut running = Running::spawn(record_command(&rec, &server, &args));
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut pid = None;
    while Instant::now() < deadline {
        if let Some(out) = running.wait_for(Duration::ZERO) {
            let log = std::fs::read_to_string(tmp.path().join("error.log")).unwrap_or_default();
            panic!(
                "mariadbd ended before it listened:\n{}\nerror log:\n{log}",
                out.describe()
            );
        }
        pid = std::fs::read_to_string(&pid_file)
            .ok()
            .and_then(|s| s.trim().parse::<u32>().ok());
        if pid.is_some() && socket.exists() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let Some(pid) = pid.filter(|_| socket.exists()) else {
        let out = running.wait_or_kill(Duration::ZERO, "mariadbd");
        panic!("mariadbd made no socket within 60 s:\n{}", out.describe());
    };

    let prepared = sysbench(&bench, &socket, &["prepare"]);
    assert!(prepared.success(), "{}", prepared.describe());
    let ran = sysbench(&bench, &socket, &["--threads=8", "--time=3", "run"]);
    assert!(ran.success(), "{}", ran.describe());
    let transactions = ran
        .stdout
        .lines()
        .find(|l| l.trim_start().starts_with("transactions:"))
        .unwrap_or("")
        .to_string();
    eprintln!("sysbench: {}", transactions.trim());

    // Stop the server itself (not through the launcher), by its PID.
    assert_eq!(
        comm(pid).as_deref(),
        Some("mariadbd"),
        "the pid file names mariadbd"
    );
    assert!(kill(pid, 15), "kill -TERM {pid}");
    let out = running.wait_or_kill(Duration::from_secs(60), "contend record -- mariadbd");
    assert!(
        matches!(out.shell_status(), 0 | 143),
        "mariadbd ends on SIGTERM (exit 0, or by the signal):\n{}",
        out.describe()
    );

    let report = report_json(&rec);
    check_innodb_latches(&report, &server);
}

/// The futex waits at `mariadbd`'s own call sites: present, with wait
/// time, named as well as the binary allows, and absent from the lock
/// tables (what contend showed before futex recording).
fn check_innodb_latches(report: &Value, server: &Path) {
    let in_server = |s: &Value| {
        s["module"]
            .as_str()
            .is_some_and(|m| Path::new(m).file_name() == server.file_name())
    };
    let futex = &report["futex"];
    let sites: Vec<&Value> = futex["by_site"]
        .as_array()
        .unwrap_or_else(|| panic!("no futex section: {}", report["warnings"]))
        .iter()
        .filter(|s| in_server(s) && u(s, "events") > 0)
        .collect();
    eprintln!("futex summary: {}", futex["summary"]);
    for s in sites.iter().take(8) {
        eprintln!(
            "  {} kind {} events {} contended {} wait {} ns",
            s["display"], s["kind"], s["events"], s["contended_events"], s["wait_ns"]
        );
    }
    assert!(
        !sites.is_empty(),
        "InnoDB's latches wait in mariadbd's own code: futex.by_site = {}",
        futex["by_site"]
    );
    let waited: u64 = sites.iter().map(|s| u(s, "wait_ns")).sum();
    let slept: u64 = sites.iter().map(|s| u(s, "contended_events")).sum();
    assert!(
        waited > 0 && slept > 0,
        "8 sysbench threads on 2 CPUs make InnoDB latches sleep: {sites:?}"
    );

    // Hidden before: the lock tables (glibc's pthread functions) have no
    // row at these sites, and their waits are not in locks.summary.
    let offsets: Vec<&str> = sites.iter().filter_map(|s| s["offset"].as_str()).collect();
    assert_eq!(
        offsets.len(),
        sites.len(),
        "every site has its offset: {sites:?}"
    );
    let lock_sites = report["locks"]["by_site"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for l in lock_sites.iter().filter(|l| in_server(l)) {
        assert!(
            !offsets.contains(&l["offset"].as_str().unwrap_or("")),
            "a futex site is also a lock-table site: {l}"
        );
    }

    if has_symbols(server) {
        eprintln!("mariadbd has symbols here: checking the InnoDB functions by name");
        let latch = |s: &&&Value| {
            let f = s["function"].as_str().unwrap_or("");
            s["kind"] == "innodb latch"
                && (f.contains("srw_") || f.contains("ssux_lock") || f.contains("latch"))
        };
        let named: u64 = sites.iter().filter(latch).map(|s| u(s, "wait_ns")).sum();
        assert!(
            named > 0,
            "the latch waits are named by their InnoDB function: {sites:?}"
        );
    } else {
        // Stripped, no debug file: each site is `mariadbd+0x…`, its
        // function unknown, and the report says which module lacks
        // debug information.
        for s in &sites {
            assert!(
                s["display"]
                    .as_str()
                    .is_some_and(|d| d.contains("mariadbd+0x")),
                "a stripped mariadbd's site is module+offset: {s}"
            );
            assert!(
                matches!(s["debug"].as_str(), Some("symbols") | Some("none")),
                "{s}"
            );
        }
    }
}
