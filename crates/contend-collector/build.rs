//! Builds `libcontend_lock.so`, the LD_PRELOAD lock collector, from the C
//! sources in `collector/src` into `$OUT_DIR`; `src/lib.rs` embeds the
//! result.
//!
//! The `cc` crate only finds the C compiler (honouring `CC` and the
//! cross-compilation conventions) and its target-selection flags (`-m...`,
//! `--target`); the other flags are ours and fixed, so the library is
//! optimised the same way in debug and release builds of the Rust crates:
//! its hot path runs inside every lock call of the profiled program.

use std::env;
use std::path::PathBuf;
use std::process::Command;

/// C sources of the collector, relative to `collector/src`.
const SOURCES: &[&str] = &["real.c", "collector.c", "maps.c", "wrappers.c"];
/// Headers and the linker version script (rebuild triggers only).
const OTHER_INPUTS: &[&str] = &[
    "collector/src/collector.h",
    "collector/src/lock_collector.map",
    "collector/include/contend/trace_format.h",
];

fn main() {
    let manifest = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let root = manifest.join("../..");
    let src = root.join("collector/src");
    let include = root.join("collector/include");
    let out_dir = PathBuf::from(env::var_os("OUT_DIR").expect("OUT_DIR"));
    let output = out_dir.join("libcontend_lock.so");

    let target_os = env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if target_os != "linux" {
        panic!("the contend lock collector is Linux-only (target OS: {target_os})");
    }

    for s in SOURCES {
        println!("cargo:rerun-if-changed={}", src.join(s).display());
    }
    for f in OTHER_INPUTS {
        println!("cargo:rerun-if-changed={}", root.join(f).display());
    }

    println!("cargo:rerun-if-env-changed=CC");
    let compiler = cc::Build::new().cargo_metadata(false).get_compiler();
    let mut cmd = Command::new(compiler.path());
    // Only the target-selection flags of cc's defaults (e.g. -m64, --target),
    // not its -O/-g choices: our optimisation flags are fixed below.
    for arg in compiler.args() {
        let a = arg.to_string_lossy();
        if a.starts_with("-m") || a.starts_with("--target") {
            cmd.arg(arg);
        }
    }
    cmd.args([
        "-std=c11",
        "-D_GNU_SOURCE",
        "-Wall",
        "-Wextra",
        "-Werror",
        "-fPIC",
        "-O2",
        // only the interposed functions are exported
        "-fvisibility=hidden",
        "-shared",
        "-Wl,-soname,libcontend_lock.so",
        // bind everything at load time: no lazy PLT resolution in a hook
        "-Wl,-z,now",
        "-Wl,--no-undefined",
    ])
    .arg(format!(
        "-Wl,--version-script={}",
        src.join("lock_collector.map").display()
    ))
    .arg("-I")
    .arg(&include)
    .arg("-o")
    .arg(&output);
    for s in SOURCES {
        cmd.arg(src.join(s));
    }
    cmd.args(["-ldl", "-lpthread"]);

    let status = cmd.status().unwrap_or_else(|e| {
        panic!(
            "cannot run the C compiler {}: {e}",
            compiler.path().display()
        )
    });
    if !status.success() {
        panic!("building libcontend_lock.so failed ({status}): {cmd:?}");
    }
}
