//! Call sites that do not mislead: an unoptimised C++ build has its
//! `std::mutex` sites in a libstdc++ header (`__gthread_mutex_lock`,
//! gthr-default.h). Without recorded stacks the report keeps them there but
//! says so, and that `--stack-every 1` moves them to the user's line; with
//! a stack for every operation (condition waits included: theirs is
//! recorded with the release of their mutex) none is left and nothing is
//! said.

use std::process::Command;

use crate::common::*;

fn record_with(dir: &std::path::Path, exe: &std::path::Path, extra: &[&str]) {
    let mut cmd = Command::new(contend_bin());
    cmd.arg("record")
        .arg("-o")
        .arg(dir)
        .args(extra)
        .arg("--")
        .arg(exe);
    let out = run_timeout(cmd, RUN_TIMEOUT);
    assert!(out.success(), "{}", out.describe());
}

#[test]
fn cpp_o0_sites_in_a_header_are_explained() {
    require_tool!("g++");
    let _serial = serial();
    let tmp = tempdir();
    let exe = build("stdmutex.cpp", &["-O0"]);

    let dir = tmp.path().join("plain");
    record_with(&dir, &exe, &[]);
    let report = report_json(&dir);
    let in_header = report["locks"]["by_site"]
        .as_array()
        .unwrap()
        .iter()
        .any(|s| s["file"].as_str().is_some_and(|f| f.ends_with(".h")));
    assert!(
        in_header,
        "at -O0 without stacks the sites are in libstdc++ headers: {:#}",
        report["locks"]["by_site"]
    );
    let w = warnings(&report);
    assert!(
        w.contains("have their call site in a system header (")
            && w.contains(
                "record with --stack-every 1 to attribute them to the calling line in your code"
            ),
        "{w}"
    );

    let dir = tmp.path().join("stacks");
    record_with(&dir, &exe, &["--stack-every", "1"]);
    let report = report_json(&dir);
    // Every operation now has a stack (a condition wait the one recorded
    // with the release of its mutex): no site is left in a header and
    // nothing is said.
    let w = warnings(&report);
    assert!(!w.contains("system header"), "{w}");
    let in_header = report["locks"]["by_site"]
        .as_array()
        .unwrap()
        .iter()
        .any(|s| {
            s["file"]
                .as_str()
                .is_some_and(|f| !f.ends_with("stdmutex.cpp"))
        });
    assert!(!in_header, "{:#}", report["locks"]["by_site"]);
}

/// A lambda run by `std::thread` is inlined into libstdc++'s thread entry,
/// and the debug information names its body only `operator()`: its call
/// sites take the name of its closure type (`work(long int)::<lambda()>`,
/// a lambda in `work`) from the frames it is inlined into. (GCC does not
/// number the closure types there: the two lambdas share the name and are
/// told apart by line.)
#[test]
fn a_lambdas_sites_are_named_after_its_closure_type() {
    require_tool!("g++");
    let _serial = serial();
    let tmp = tempdir();
    let exe = build("cxx_lambda.cpp", &["-O2"]);
    let dir = tmp.path().join("rec");
    record_with(&dir, &exe, &[]);
    let report = report_json(&dir);
    let sites = report["locks"]["by_site"].as_array().unwrap();
    for marker in ["// ADDER-LINE", "// DOUBLER-LINE"] {
        let line = u64::from(line_of("cxx_lambda.cpp", marker));
        let site = sites
            .iter()
            .find(|s| {
                s["line"] == line
                    && s["file"]
                        .as_str()
                        .is_some_and(|f| f.ends_with("cxx_lambda.cpp"))
            })
            .unwrap_or_else(|| panic!("no site at line {line}: {sites:?}"));
        assert_eq!(site["function"], "work(long int)::<lambda()>", "{site}");
        assert_eq!(u(site, "events"), 20_000, "{site}");
    }
}
