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
const SOURCES: &[&str] = &[
    "real.c",
    "collector.c",
    "maps.c",
    "wrappers.c",
    "regions.c",
    "futex.c",
    "ompt.c",
    "create.c",
    "gomp.c",
    "names.c",
    "sampling.c",
    "join.c",
];
/// Headers and the linker version script (rebuild triggers only).
const OTHER_INPUTS: &[&str] = &[
    "collector/src/collector.h",
    "collector/src/lock_collector.map",
    "collector/include/contend/trace_format.h",
    "collector/include/contend/raw_mm.h",
    "collector/include/contend/say.h",
    "collector/include/contend/clock.h",
    "collector/include/contend/zero_fill.h",
    "collector/include/contend/region.h",
    "collector/include/contend/region_format.h",
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

    build_mpi_recorders(&root, &include, &out_dir, &compiler);
}

#[allow(dead_code)] // shared with the library, which uses more of it
#[path = "src/mpi_headers.rs"]
mod mpi_headers;
#[path = "../../build-support/watch.rs"]
mod watch;

use mpi_headers::{compile_args, header_dir, include_dirs, probed_headers, MPI_HEADERS};

/// Directories too large to watch recursively for a header that may
/// appear in them (Cargo scans a watched directory's whole tree on every
/// build); the package databases below are watched instead.
const TOO_BIG_TO_WATCH: &[&str] = &[
    "/",
    "/usr",
    "/usr/lib",
    "/usr/lib64",
    "/usr/lib/x86_64-linux-gnu",
    "/usr/lib/aarch64-linux-gnu",
];
/// Package databases: installing the MPI headers with the package manager
/// changes them.
const PACKAGE_DATABASES: &[&str] = &["/var/lib/dpkg/status", "/var/lib/rpm"];

/// Watches `path`, an `mpi.h` the probe looked at ([`watch::watch`] with
/// [`TOO_BIG_TO_WATCH`]; the package databases, watched always, notice an
/// installation below a directory too large to watch).
fn watch(path: &std::path::Path) {
    watch::watch(path, TOO_BIG_TO_WATCH)
}

/// Builds `libcontend_mpi_<impl>.so` for every MPI implementation whose
/// headers are installed. A missing implementation leaves an empty file:
/// the library then builds that recorder when `record --mpi` first needs
/// it (`install_mpi_recorder`), once the headers are there. Headers that
/// are found but do not compile fail the build. Every header path looked
/// at is watched ([`watch`]), so installing headers later and running
/// `cargo build` again rebuilds the recorders.
fn build_mpi_recorders(
    root: &std::path::Path,
    include: &std::path::Path,
    out_dir: &std::path::Path,
    compiler: &cc::Tool,
) {
    let mpi_src = root.join("collector/mpi");
    for s in mpi_headers::MPI_SOURCES
        .iter()
        .chain(mpi_headers::MPI_HEADER_FILES)
        .chain(&["mpi_fortran.c", "mpi_f08_mpich.c"])
    {
        println!("cargo:rerun-if-changed={}", mpi_src.join(s).display());
    }
    println!(
        "cargo:rerun-if-changed={}",
        root.join("collector/include/contend/mpi_trace_format.h")
            .display()
    );
    println!(
        "cargo:rerun-if-changed={}",
        root.join("collector/include/contend/clock.h").display()
    );
    println!(
        "cargo:rerun-if-changed={}",
        root.join("collector/include/contend/zero_fill.h").display()
    );
    println!("cargo:rerun-if-env-changed=CONTEND_NO_MPI");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
    for db in PACKAGE_DATABASES {
        if std::path::Path::new(db).exists() {
            println!("cargo:rerun-if-changed={db}");
        }
    }
    let disabled = env::var_os("CONTEND_NO_MPI").is_some();
    let arch = env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    for imp in MPI_HEADERS {
        let output = out_dir.join(format!("libcontend_mpi_{}.so", imp.name));
        if !disabled {
            for p in probed_headers(imp) {
                // another architecture's directories cannot hold ours
                let other_arch = ["x86_64", "aarch64"]
                    .iter()
                    .any(|a| *a != arch && p.to_string_lossy().contains(a));
                if !other_arch {
                    watch(&p);
                }
            }
        }
        let dirs = if disabled {
            Vec::new()
        } else {
            include_dirs(imp)
        };
        if header_dir(imp, &dirs).is_none() {
            std::fs::write(&output, b"").expect("write empty MPI recorder placeholder");
            println!(
                "cargo:warning=no {} headers found: `contend record --mpi` will build the {} recorder when first needed, once they are installed",
                imp.name, imp.name
            );
            continue;
        }
        let mut cmd = Command::new(compiler.path());
        for arg in compiler.args() {
            let a = arg.to_string_lossy();
            if a.starts_with("-m") || a.starts_with("--target") {
                cmd.arg(arg);
            }
        }
        cmd.args(compile_args(imp, include, &mpi_src, &dirs, &output));
        let status = cmd.status().unwrap_or_else(|e| {
            panic!(
                "cannot run the C compiler {}: {e}",
                compiler.path().display()
            )
        });
        if !status.success() {
            panic!(
                "building the MPI recorder for {} failed ({status}): {cmd:?}",
                imp.name
            );
        }
    }
}
