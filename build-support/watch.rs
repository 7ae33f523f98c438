//! Shared by the workspace's build scripts (included with `#[path]`):
//! telling Cargo to rerun a build script when a probed path appears or
//! changes.

use std::path::Path;

/// Makes Cargo rerun the build script when `path` (a file the script
/// probed, such as a header) changes or appears: the file itself when it
/// exists, else the nearest directory above it that exists (a new file
/// below it changes the directory tree Cargo watches), unless that
/// directory is one of `too_big_to_watch` (system directories Cargo would
/// scan on every build; the caller then watches a package database that
/// an installation changes). A missing path is never named itself: Cargo
/// would rerun the script, and rebuild the crate, on every build.
pub fn watch(path: &Path, too_big_to_watch: &[&str]) {
    if path.exists() {
        println!("cargo:rerun-if-changed={}", path.display());
        return;
    }
    let mut dir = path.parent();
    while let Some(d) = dir {
        if d.is_dir() {
            if !too_big_to_watch.iter().any(|b| Path::new(b) == d) {
                println!("cargo:rerun-if-changed={}", d.display());
            }
            return;
        }
        dir = d.parent();
    }
}
