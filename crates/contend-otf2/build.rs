//! Builds the C shim over libotf2 when libotf2's headers are found
//! (`$OTF2_ROOT/include`, `/usr/include`, `/usr/local/include`), links
//! `libotf2`, and sets `cfg(has_otf2)`. Without them the crate still
//! builds, and writing OTF2 says that this build lacks libotf2 and how to
//! get it. Every header path looked at is watched (see `watch`), so
//! installing the library later rebuilds the crate.

#[path = "../../build-support/watch.rs"]
mod watch;

use std::path::PathBuf;

fn main() {
    println!("cargo::rustc-check-cfg=cfg(has_otf2)");
    println!("cargo:rerun-if-changed=src/shim.c");
    println!("cargo:rerun-if-env-changed=OTF2_ROOT");
    // Debian's package database: an apt-get install of libotf2-trace-dev
    // under /usr/include (too large a tree to watch) changes it
    if std::path::Path::new(DPKG_STATUS).exists() {
        println!("cargo:rerun-if-changed={DPKG_STATUS}");
    }
    let mut roots: Vec<PathBuf> = Vec::new();
    if let Some(r) = std::env::var_os("OTF2_ROOT") {
        roots.push(PathBuf::from(r));
    }
    roots.push(PathBuf::from("/usr"));
    roots.push(PathBuf::from("/usr/local"));
    let mut found = None;
    for root in &roots {
        let header = root.join("include/otf2/otf2.h");
        watch(&header);
        if found.is_none() && header.exists() {
            found = Some(root.clone());
        }
    }
    let Some(root) = found else {
        println!(
            "cargo:warning=libotf2 not found (no include/otf2/otf2.h under $OTF2_ROOT, /usr or /usr/local): \
             `contend export --format otf2` will say so; install libotf2-trace-dev (Debian/Ubuntu) and rebuild"
        );
        return;
    };
    cc::Build::new()
        .file("src/shim.c")
        .include(root.join("include"))
        .std("c11")
        .flag("-Wall")
        .flag("-Wextra")
        .flag("-Werror")
        .compile("contend_otf2_shim");
    if root != std::path::Path::new("/usr") {
        for lib in ["lib", "lib64"] {
            println!(
                "cargo:rustc-link-search=native={}",
                root.join(lib).display()
            );
        }
    }
    println!("cargo:rustc-link-lib=otf2");
    println!("cargo:rustc-cfg=has_otf2");
}

/// Debian's package database, watched so that installing libotf2 is noticed.
const DPKG_STATUS: &str = "/var/lib/dpkg/status";

/// Directories too large to watch (Cargo scans a watched directory's whole
/// tree on every build); the package database stands in for them.
const TOO_BIG_TO_WATCH: &[&str] = &["/", "/usr", "/usr/include"];

/// Watches `path`, a header the probe looked at ([`watch::watch`] with
/// [`TOO_BIG_TO_WATCH`]).
fn watch(path: &std::path::Path) {
    watch::watch(path, TOO_BIG_TO_WATCH)
}
