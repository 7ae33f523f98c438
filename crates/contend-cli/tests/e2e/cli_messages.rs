//! An honest command line: contend's own options are checked before the
//! command runs, and every error says each thing once and names the cause
//! (compared verbatim).

use std::path::Path;
use std::process::Command;

use crate::common::{contend_bin, tempdir};
use crate::golden::fixtures;

/// Runs `contend args` in `dir`; (exit code, standard error).
fn run(dir: &Path, args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(contend_bin())
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Regression: a mistyped option before the command was run as the
/// command ("command not found: --lihgt", exit 127).
#[test]
fn a_mistyped_option_is_refused_with_the_nearest_one() {
    let tmp = tempdir();
    let (code, err) = run(
        tmp.path(),
        &["record", "--stak-every", "3", "-o", "x.data", "--", "true"],
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("unexpected argument '--stak-every'"), "{err}");
    assert!(
        err.contains("a similar argument exists: '--stack-every'"),
        "{err}"
    );
    assert!(!tmp.path().join("x.data").exists());
    // The program's own options after its name, or after `--`, are its own.
    let (code, err) = run(
        tmp.path(),
        &["record", "-o", "y.data", "/bin/echo", "--not-ours"],
    );
    assert_eq!(code, Some(0), "{err}");
    let (code, err) = run(
        tmp.path(),
        &["record", "-o", "z.data", "--", "/bin/echo", "-n"],
    );
    assert_eq!(code, Some(0), "{err}");
}

#[test]
fn errors_name_the_cause_once() {
    let tmp = tempdir();
    let d = tmp.path();
    let cases: &[(&[&str], &str)] = &[
        (
            &["record", "-o", "/nonexistent-contend/dir/x.data", "--", "true"],
            "contend: error: /nonexistent-contend/dir/x.data: cannot create it: the directory /nonexistent-contend/dir does not exist\n",
        ),
        (
            &["report", "no-such.data"],
            "contend: error: no-such.data: no such recording; `contend record -o no-such.data -- CMD` makes one\n",
        ),
    ];
    for (args, want) in cases {
        let (code, err) = run(d, args);
        assert_eq!(code, Some(2), "{args:?}");
        assert_eq!(&err, want, "{args:?}");
    }
    // An existing recording: --force is named.
    assert_eq!(run(d, &["record", "-o", "a.data", "--", "true"]).0, Some(0));
    let (_, err) = run(d, &["record", "-o", "a.data", "--", "true"]);
    assert_eq!(
        err,
        "contend: error: a.data: already exists; choose another output directory with -o, or replace the recording with --force\n"
    );
    // Links are never followed or removed, even with --force.
    std::os::unix::fs::symlink("a.data", d.join("link.data")).unwrap();
    std::os::unix::fs::symlink("nowhere", d.join("dangling.data")).unwrap();
    let (_, err) = run(d, &["record", "--force", "-o", "link.data", "--", "true"]);
    assert_eq!(
        err,
        "contend: error: link.data: is a symbolic link (to a.data); give the directory itself or another name with -o\n"
    );
    let (_, err) = run(
        d,
        &["record", "--force", "-o", "dangling.data", "--", "true"],
    );
    assert_eq!(
        err,
        "contend: error: dangling.data: is a symbolic link to nowhere, which does not exist; give the directory itself or another name with -o\n"
    );
    assert!(
        d.join("a.data/meta.json").is_file(),
        "the recording survived"
    );
    // A directory that is not a recording: no suggestion to record into it.
    std::fs::create_dir(d.join("plain")).unwrap();
    let (_, err) = run(d, &["report", "plain"]);
    assert_eq!(
        err,
        "contend: error: plain: not a contend recording (it holds no meta.json, locks/ or mpi/); `contend record -o NEW.data -- CMD` makes one\n"
    );
}

#[test]
fn comparing_a_scale_directory_says_what_it_is() {
    let tmp = fixtures();
    let (code, err) = run(
        tmp.path(),
        &["compare", "scaling.scale", "sharequeue-two.data"],
    );
    assert_eq!(code, Some(2));
    assert_eq!(
        err,
        "contend: error: scaling.scale: a scale directory (contend scale), not one recording: `contend report scaling.scale` shows its speed-up model, and each of its runs (scaling.scale/<run>, listed in scale.json) is a recording to report or compare\n"
    );
}

#[test]
fn filters_that_select_nothing_say_so() {
    let tmp = fixtures();
    let out = Command::new(contend_bin())
        .args([
            "report",
            "sharequeue-single.data",
            "--format",
            "json",
            "--lock",
            "queue_lok",
            "--thread",
            "1",
        ])
        .current_dir(tmp.path())
        .output()
        .unwrap();
    assert!(out.status.success());
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let w: Vec<&str> = r["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|w| w.as_str())
        .collect();
    assert!(
        w.contains(&"--lock queue_lok: no lock of this recording has that name or address; near: queue_lock"),
        "{w:?}"
    );
    assert!(
        w.contains(&"--thread 1: no traced thread has this id (2 threads)"),
        "{w:?}"
    );
}

/// Shell completions and manual pages come from the command tree itself.
#[test]
fn completions_and_manual_pages() {
    let tmp = tempdir();
    for shell in ["bash", "zsh", "fish"] {
        let out = Command::new(contend_bin())
            .args(["completions", shell])
            .output()
            .unwrap();
        assert!(out.status.success(), "{shell}");
        let text = String::from_utf8_lossy(&out.stdout);
        for word in ["record", "report", "compare", "export", "min-duration"] {
            assert!(text.contains(word), "{shell}: {word}");
        }
    }
    let (code, err) = run(tmp.path(), &["man", "-o", "man"]);
    assert_eq!(code, Some(0), "{err}");
    for page in [
        "contend.1",
        "contend-record.1",
        "contend-report.1",
        "contend-export.1",
    ] {
        let text = std::fs::read_to_string(tmp.path().join("man").join(page)).unwrap();
        assert!(text.starts_with(".ie") || text.contains(".TH"), "{page}");
    }
    let text = std::fs::read_to_string(tmp.path().join("man/contend-report.1")).unwrap();
    assert!(text.contains("min\\-duration"), "{text}");
}

/// Text reports explain their abbreviated headings under the first table
/// that uses them (once per report); `--no-legend` leaves them out.
#[test]
fn legends_explain_headings_once() {
    let tmp = fixtures();
    let text = |extra: &[&str]| {
        let mut args = vec!["report", "sharequeue-two.data"];
        args.extend_from_slice(extra);
        let out = Command::new(contend_bin())
            .args(&args)
            .current_dir(tmp.path())
            .output()
            .unwrap();
        assert!(out.status.success());
        String::from_utf8(out.stdout).unwrap()
    };
    let with = text(&[]);
    let legend = "CP events  events on the critical path";
    assert_eq!(with.matches(legend).count(), 1, "{with}");
    assert!(
        with.contains("Contended  acquisitions that did not succeed at once"),
        "{with}"
    );
    let without = text(&["--no-legend"]);
    assert!(
        !without.contains("events on the critical path:"),
        "{without}"
    );
    assert!(!without.contains(legend), "{without}");
    // The scale report explains its symbols and cites the thesis by name.
    let out = Command::new(contend_bin())
        .args(["report", "scaling.scale"])
        .current_dir(tmp.path())
        .output()
        .unwrap();
    let scale = String::from_utf8(out.stdout).unwrap();
    for want in [
        "ω         C(m)/C(1) − 1",
        "S model   modelled speed-up",
        "Venter 2016, Eq. 3.6",
    ] {
        assert!(scale.contains(want), "{want}:\n{scale}");
    }
}
