//! `contend record --function` on C++ programs
//! (tests/programs/cxx_functions.cpp): functions named as the source names
//! them, and no probe where a C++ exception would end the program.

use std::process::Command;

use crate::common::*;
use serde_json::Value;

/// The program's result line.
fn result(stdout: &str) -> Value {
    let line = stdout
        .lines()
        .find(|l| l.starts_with('{'))
        .unwrap_or_else(|| panic!("no result line in {stdout:?}"));
    serde_json::from_str(line).expect("the result line is JSON")
}

/// `contend record --function FUNCTIONS` of `exe` into a fresh directory.
fn record(exe: &std::path::Path, functions: &str) -> (Output, Value, tempfile::TempDir) {
    let dir = tempdir();
    let rec = dir.path().join("rec");
    let mut cmd = Command::new(contend_bin());
    cmd.args(["record", "--function", functions, "-o"])
        .arg(&rec)
        .arg("--")
        .arg(exe);
    let out = run_timeout(cmd, RUN_TIMEOUT);
    assert!(out.success(), "{}", out.describe());
    let report = report_json(&rec);
    (out, report, dir)
}

/// The SCI row of function block `name`, if any.
fn function_block<'r>(report: &'r Value, name: &str) -> Option<&'r Value> {
    report["sci"]["blocks"]
        .as_array()?
        .iter()
        .find(|b| b["kind"] == "function" && b["name"] == name)
}

/// `middle` and `work::step(double)` are found by the names the source
/// gives them (the symbols are `_Z6middlei` and `_ZN4work4stepEd`) and
/// probed; the report names them so; `work::step` alone names two
/// overloads and is refused with both. Built without exceptions, so that
/// nothing is refused for them (the next test).
#[test]
fn cxx_functions_are_found_by_their_source_names() {
    require_tool!("g++");
    let _serial = serial();
    let exe = build("cxx_functions.cpp", &["-fno-exceptions"]);
    let (out, report, _dir) = record(&exe, "middle,work::step,work::step(double)");
    assert_eq!(result(&out.stdout)["sum"], 18_000_000, "{}", out.describe());
    assert!(
        out.stderr
            .contains("function work::step is not probed: `work::step` names 2 functions of")
            && out
                .stderr
                .contains("work::step(int), work::step(double); give one with its parameters"),
        "{}",
        out.describe()
    );
    for name in ["middle(int)", "work::step(double)"] {
        let b = function_block(&report, name)
            .unwrap_or_else(|| panic!("no block {name}: {}", report["sci"]["blocks"]));
        assert_eq!(u(b, "occurrences"), 3000, "{b}");
        assert_eq!(b["site"]["function"], name, "{b}");
    }
    assert!(function_block(&report, "work::step(int)").is_none());
}

/// Probing a function an exception passes through ended the program in
/// std::terminate (exit 134, every run): in a module with C++ exception
/// tables nothing is probed unless asked, the program runs to its end with
/// its exceptions caught, and the recorder says why and how to ask.
#[test]
fn functions_that_exceptions_pass_through_are_not_probed() {
    require_tool!("g++");
    let _serial = serial();
    let exe = build("cxx_functions.cpp", &[]);
    let (out, report, _dir) = record(&exe, "middle");
    let r = result(&out.stdout);
    assert_eq!(r["caught"], 1000, "{}", out.describe());
    assert_eq!(r["sum"], 16_500_500, "{}", out.describe());
    assert!(
        out.stderr.contains("function middle is not probed")
            && out.stderr.contains("has exception-handling tables")
            && out.stderr.contains("--probe-exception-code"),
        "{}",
        out.describe()
    );
    assert!(function_block(&report, "middle(int)").is_none());
}
