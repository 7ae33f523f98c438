//! The crate seams stay where docs/architecture.md says they are: the
//! offline analyses build without the collector (no C compiler), the
//! format and symbolization crates import nothing of the others, and the
//! architecture document names every module of every crate.

use std::path::{Path, PathBuf};
use std::process::Command;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The crates `package` depends on to build it (normal and build edges,
/// no dev-dependencies), by name.
fn build_dependencies(package: &str) -> Vec<String> {
    let out = Command::new(env!("CARGO"))
        .args([
            "tree",
            "--offline",
            "-p",
            package,
            "-e",
            "normal,build",
            "--prefix",
            "none",
            "--format",
            "{p}",
        ])
        .current_dir(workspace())
        .output()
        .expect("cargo tree runs");
    assert!(
        out.status.success(),
        "cargo tree -p {package}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect()
}

#[test]
fn reporting_needs_no_c_compiler() {
    let deps = build_dependencies("contend");
    assert!(deps.iter().any(|d| d == "contend-trace"), "{deps:?}");
    for forbidden in ["contend-collector", "contend-record", "cc"] {
        assert!(
            !deps.iter().any(|d| d == forbidden),
            "contend (analyses and reports) must not depend on {forbidden}: {deps:?}"
        );
    }
}

#[test]
fn formats_and_symbolization_import_nothing_of_the_others() {
    for (package, allowed) in [
        ("contend-trace", &["contend-trace"][..]),
        ("contend-symbolize", &["contend-symbolize"][..]),
        (
            "contend-record",
            &["contend-record", "contend-trace", "contend-collector"][..],
        ),
    ] {
        let deps = build_dependencies(package);
        let ours: Vec<&String> = deps
            .iter()
            .filter(|d| d.starts_with("contend"))
            .filter(|d| !allowed.contains(&d.as_str()))
            .collect();
        assert!(ours.is_empty(), "{package} depends on {ours:?}");
    }
}

/// Module names declared in `file` (`mod x;`, `pub mod x;`,
/// `pub(crate) mod x;`), without inline test modules.
fn declared_modules(file: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(file).unwrap();
    text.lines()
        .filter_map(|l| {
            let l = l.trim();
            let rest = l
                .strip_prefix("pub mod ")
                .or_else(|| l.strip_prefix("pub(crate) mod "))
                .or_else(|| l.strip_prefix("mod "))?;
            let name = rest.strip_suffix(';')?;
            Some(name.trim().to_string())
        })
        .collect()
}

#[test]
fn the_architecture_document_names_every_module() {
    let root = workspace();
    let doc = std::fs::read_to_string(root.join("docs/architecture.md"))
        .expect("docs/architecture.md exists");
    let mut missing = Vec::new();
    for krate in [
        "contend-trace",
        "contend-symbolize",
        "contend-record",
        "contend-meters",
        "contend",
        "contend-otf2",
        "contend-cli",
    ] {
        assert!(doc.contains(&format!("`{krate}`")), "crate {krate}");
        let src = root.join("crates").join(krate).join("src");
        let top = if src.join("lib.rs").exists() {
            src.join("lib.rs")
        } else {
            src.join("main.rs")
        };
        for m in declared_modules(&top) {
            if !doc.contains(&format!("`{m}`")) && !doc.contains(&format!("{m}/")) {
                missing.push(format!("{krate}::{m}"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "docs/architecture.md does not name {missing:?}"
    );
}
