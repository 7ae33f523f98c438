//! Symbols that stay true after a rebuild: `contend record` writes the
//! build ID of every mapped object into `modules.json` and copies the files
//! into the build-id cache; `contend report` of an old recording resolves
//! a rebuilt program from that copy, or says plainly that the program
//! changed and shows its sites as addresses, never the new file's lines.
//! Also: locks in global arrays and structs are named by element and
//! member from DWARF (`stripe_locks[6]`, `table.lock`), and `contend
//! cache` lists and prunes the cache.
//!
//! Every command runs with `XDG_CACHE_HOME` in the test's own directory,
//! so the user's cache is neither used nor changed.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::common::*;

const SRC: &str = "rebuild_sites.c";

/// Compiles `source` (C) with the standard test flags plus `extra` into
/// `exe` (replacing it, as `make` does).
fn compile(source: &Path, exe: &Path, extra: &[&str]) {
    let mut cmd = Command::new("gcc");
    cmd.arg("-std=c11")
        .args(CFLAGS)
        .arg("-o")
        .arg(exe)
        .arg(source)
        .args(extra);
    let out = run_timeout(cmd, std::time::Duration::from_secs(120));
    assert!(out.success(), "gcc {}:\n{}", source.display(), out.stderr);
}

/// `contend ARGS…` with the test's cache directory.
fn contend(cache_home: &Path, args: &[&str]) -> Output {
    let mut cmd = Command::new(contend_bin());
    cmd.args(args).env("XDG_CACHE_HOME", cache_home);
    run_timeout(cmd, RUN_TIMEOUT)
}

fn record_with(cache_home: &Path, dir: &Path, exe: &Path, extra: &[&str]) {
    let (d, e) = (dir.to_str().unwrap(), exe.to_str().unwrap());
    let mut args = vec!["record", "-o", d, "--force"];
    args.extend_from_slice(extra);
    args.extend(["--", e]);
    let out = contend(cache_home, &args);
    assert!(out.success(), "contend record: {}", out.describe());
}

fn report(cache_home: &Path, dir: &Path) -> Value {
    let out = contend(
        cache_home,
        &["report", dir.to_str().unwrap(), "--format", "json"],
    );
    assert!(out.success(), "contend report: {}", out.describe());
    serde_json::from_str(&out.stdout).expect("report JSON")
}

/// The `by_site` row of function `f`, if any.
fn site<'a>(r: &'a Value, f: &str) -> Option<&'a Value> {
    r["locks"]["by_site"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["function"] == f)
}

/// The lines of the program's call sites, as (function, line), sorted.
fn sites_in(r: &Value, exe: &Path) -> Vec<(String, u64)> {
    let mut v: Vec<(String, u64)> = r["locks"]["by_site"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["module"].as_str() == exe.to_str())
        // lock sites, not main's pthread_join
        .filter(|s| !s["kinds"].as_array().unwrap().iter().any(|k| k == "join"))
        .map(|s| {
            (
                s["function"].as_str().unwrap_or("?").to_string(),
                s["line"].as_u64().unwrap_or(0),
            )
        })
        .collect();
    v.sort();
    v
}

/// Record, rebuild with two lines added at the top, report the old
/// recording: the sites are the recorded lines (from the cache's copy,
/// with a warning saying so); with the cache emptied they are addresses,
/// with a warning naming the changed build ID and no advice to install
/// debug symbols. Before build IDs were recorded, every line here came out
/// two too high.
#[test]
fn rebuilt_program_keeps_its_recorded_sites() {
    require_tool!("gcc");
    let tmp = tempdir();
    let cache_home = tmp.path().join("cache-home");
    let source = tmp.path().join(SRC);
    let original = std::fs::read_to_string(program_source(SRC)).unwrap();
    std::fs::write(&source, &original).unwrap();
    let exe = tmp.path().join("rebuild_sites");
    compile(&source, &exe, &[]);
    let dir = tmp.path().join("run.data");
    record_with(&cache_home, &dir, &exe, &[]);

    let hot = line_of(SRC, "SITE hot") as u64;
    let first = line_of(SRC, "SITE first") as u64;
    let member = line_of(SRC, "SITE member") as u64;
    let plain = line_of(SRC, "SITE plain") as u64;
    let expected = vec![
        ("cold_section".to_string(), first),
        ("cold_section".to_string(), member),
        ("cold_section".to_string(), plain),
        ("hot_section".to_string(), hot),
    ];

    // As recorded: the right lines, locks named by element and member, no
    // warning about modules.
    let r = report(&cache_home, &dir);
    assert_eq!(sites_in(&r, &exe), expected, "{:#}", r["locks"]["by_site"]);
    for name in ["stripe_locks[6]", "stripe_locks[0]", "table.lock", "plain"] {
        lock_row(&r, name);
    }
    assert!(
        u(lock_row(&r, "stripe_locks[6]"), "wait_ns") > 0,
        "the hot lock waited"
    );
    assert!(!warnings(&r).contains("rebuilt"), "{}", warnings(&r));
    let modules: Value =
        serde_json::from_slice(&std::fs::read(dir.join("modules.json")).unwrap()).unwrap();
    let me = modules["modules"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["path"].as_str() == exe.to_str())
        .expect("the program is in modules.json");
    let build_id = me["build_id"].as_str().expect("gcc gives a build ID");
    assert_eq!(me["cached"], true, "{me}");

    // `contend cache` lists it.
    let list = contend(&cache_home, &["cache"]);
    assert!(list.success(), "{}", list.describe());
    assert!(
        list.stdout.contains(build_id) && list.stdout.contains(exe.to_str().unwrap()),
        "{}",
        list.stdout
    );

    // Rebuild with two lines added at the top: every line moves by two.
    std::fs::write(&source, format!("/* added */\n/* added */\n{original}")).unwrap();
    compile(&source, &exe, &[]);
    let r = report(&cache_home, &dir);
    assert_eq!(
        sites_in(&r, &exe),
        expected,
        "resolved from the cache's copy: {:#}",
        r["locks"]["by_site"]
    );
    lock_row(&r, "stripe_locks[6]");
    // The same recording without modules.json (as every recording was
    // before build IDs were recorded) resolves against the rebuilt file:
    // every line two too high, silently. This is what the test guards.
    let old_style = tmp.path().join("old-style.data");
    copy_dir(&dir, &old_style);
    std::fs::remove_file(old_style.join("modules.json")).unwrap();
    let shifted: Vec<(String, u64)> = expected.iter().map(|(f, l)| (f.clone(), l + 2)).collect();
    let r_old = report(&cache_home, &old_style);
    assert_eq!(sites_in(&r_old, &exe), shifted);
    assert!(!warnings(&r_old).contains("rebuilt"));
    let w = warnings(&r);
    assert!(
        w.contains(&format!(
            "{} was rebuilt since the recording; its call sites are resolved from the copy in the build-id cache",
            exe.display()
        )),
        "{w}"
    );

    // Without the copy: addresses, and a warning that says why.
    let pruned = contend(&cache_home, &["cache", "prune", "--max-size", "0"]);
    assert!(pruned.success(), "{}", pruned.describe());
    assert!(pruned.stderr.contains(build_id), "{}", pruned.stderr);
    let r = report(&cache_home, &dir);
    let hot_row = site(&r, "hot_section");
    assert!(
        hot_row.is_none() && sites_in(&r, &exe).iter().all(|s| s.1 == 0),
        "no line of the rebuilt file: {:#}",
        r["locks"]["by_site"]
    );
    let w = warnings(&r);
    assert!(
        w.contains(&format!(
            "{} was rebuilt since the recording (build ID {build_id} recorded, build ID ",
            exe.display()
        )) && w.contains("shown as addresses"),
        "{w}"
    );
    assert!(
        !r["locks"]["sites_without_debug_info"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m.as_str() == exe.to_str()),
        "a rebuilt program lacks no debug symbols: {:#}",
        r["locks"]
    );
    assert!(
        lock_row_named(&r, "stripe_locks").is_none(),
        "no variable named from the rebuilt file"
    );
}

/// A row of `by_lock` whose name starts with `prefix`.
fn lock_row_named<'a>(r: &'a Value, prefix: &str) -> Option<&'a Value> {
    r["locks"]["by_lock"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["name"].as_str().is_some_and(|n| n.starts_with(prefix)))
}

/// `--no-buildid-cache` copies nothing but still records the build IDs, so
/// the report after a rebuild says the program changed. A program linked
/// without a build ID is checked by size and modification time.
#[test]
fn without_cache_or_build_id_the_change_is_named() {
    require_tool!("gcc");
    let tmp = tempdir();
    let cache_home = tmp.path().join("cache-home");
    let source = tmp.path().join(SRC);
    let original = std::fs::read_to_string(program_source(SRC)).unwrap();
    std::fs::write(&source, &original).unwrap();
    let exe = tmp.path().join("rebuild_sites");
    compile(&source, &exe, &[]);
    let dir = tmp.path().join("run.data");
    record_with(&cache_home, &dir, &exe, &["--no-buildid-cache"]);
    assert!(
        !cache_home.join("contend/buildid").exists(),
        "--no-buildid-cache copies nothing"
    );
    let modules: Value =
        serde_json::from_slice(&std::fs::read(dir.join("modules.json")).unwrap()).unwrap();
    assert_eq!(modules["cache_dir"], Value::Null);
    std::fs::write(&source, format!("/* added */\n/* added */\n{original}")).unwrap();
    compile(&source, &exe, &[]);
    let r = report(&cache_home, &dir);
    assert!(
        site(&r, "hot_section").is_none(),
        "{:#}",
        r["locks"]["by_site"]
    );
    let w = warnings(&r);
    assert!(
        w.contains(&format!(
            "{} was rebuilt since the recording",
            exe.display()
        )) && w.contains("the build-id cache has no copy"),
        "{w}"
    );

    // No build ID: size and modification time identify the file.
    std::fs::write(&source, &original).unwrap();
    compile(&source, &exe, &["-Wl,--build-id=none"]);
    record_with(&cache_home, &dir, &exe, &[]);
    let r = report(&cache_home, &dir);
    assert_eq!(
        site(&r, "hot_section").and_then(|s| s["line"].as_u64()),
        Some(line_of(SRC, "SITE hot") as u64)
    );
    std::fs::write(&source, format!("/* added */\n/* added */\n{original}")).unwrap();
    compile(&source, &exe, &["-Wl,--build-id=none"]);
    let r = report(&cache_home, &dir);
    assert!(
        site(&r, "hot_section").is_none(),
        "{:#}",
        r["locks"]["by_site"]
    );
    let w = warnings(&r);
    assert!(
        w.contains(&format!(
            "{} was rebuilt since the recording (",
            exe.display()
        )) && w.contains("bytes, modified"),
        "{w}"
    );
}

/// Copies the recording directory `from` (files and subdirectories) to `to`.
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), &target).unwrap();
        }
    }
}
