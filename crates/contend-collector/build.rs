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
    "futex.c",
    "ompt.c",
];
/// Headers and the linker version script (rebuild triggers only).
const OTHER_INPUTS: &[&str] = &[
    "collector/src/collector.h",
    "collector/src/lock_collector.map",
    "collector/include/contend/trace_format.h",
    "collector/include/contend/raw_mm.h",
    "collector/include/contend/say.h",
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

/// C sources of the MPI recorder, relative to `collector/mpi`; the Fortran
/// entry points only for Open MPI (MPICH's Fortran bindings call the C
/// `MPI_*` functions, which the C wrappers already catch).
const MPI_SOURCES: &[&str] = &["mpi_trace.c", "mpi_wrap.c"];
const MPI_OTHER_INPUTS: &[&str] = &["mpi_rec.h", "mpi_core.h", "mpi_funcs.h", "mpi_fortran.c"];

/// An MPI implementation the recorder can be built for.
struct MpiImpl {
    /// Short name in the library file name and the `CONTEND_MPI_*` define.
    name: &'static str,
    define: &'static str,
    /// pkg-config package giving its include path.
    pkg: &'static str,
    /// Include directories tried when pkg-config has none.
    fallback: &'static [&'static str],
    /// A string its `mpi.h` contains (to tell the two apart).
    marker: &'static str,
}

const MPI_IMPLS: &[MpiImpl] = &[
    MpiImpl {
        name: "openmpi",
        define: "CONTEND_MPI_OMPI",
        pkg: "ompi-c",
        fallback: &[
            "/usr/lib/x86_64-linux-gnu/openmpi/include",
            "/usr/lib/aarch64-linux-gnu/openmpi/include",
            "/usr/include/openmpi-x86_64",
            "/usr/include/openmpi",
        ],
        marker: "OPEN_MPI",
    },
    MpiImpl {
        name: "mpich",
        define: "CONTEND_MPI_MPICH",
        pkg: "mpich",
        fallback: &[
            "/usr/include/x86_64-linux-gnu/mpich",
            "/usr/include/aarch64-linux-gnu/mpich",
            "/usr/include/mpich-x86_64",
        ],
        marker: "MPICH_VERSION",
    },
];

/// Builds `libcontend_mpi_<impl>.so` for every MPI implementation whose
/// headers are installed. A missing implementation leaves an empty file
/// (the launcher then says that `record --mpi` is not available for it);
/// headers that are found but do not compile fail the build.
fn build_mpi_recorders(
    root: &std::path::Path,
    include: &std::path::Path,
    out_dir: &std::path::Path,
    compiler: &cc::Tool,
) {
    let mpi_src = root.join("collector/mpi");
    for s in MPI_SOURCES.iter().chain(MPI_OTHER_INPUTS) {
        println!("cargo:rerun-if-changed={}", mpi_src.join(s).display());
    }
    println!(
        "cargo:rerun-if-changed={}",
        root.join("collector/include/contend/mpi_trace_format.h")
            .display()
    );
    println!("cargo:rerun-if-env-changed=CONTEND_NO_MPI");
    let disabled = env::var_os("CONTEND_NO_MPI").is_some();
    for imp in MPI_IMPLS {
        let output = out_dir.join(format!("libcontend_mpi_{}.so", imp.name));
        let dirs = if disabled {
            Vec::new()
        } else {
            mpi_include_dirs(imp)
        };
        let Some(header_dir) = dirs.iter().find(|d| {
            std::fs::read_to_string(d.join("mpi.h"))
                .map(|h| h.contains(imp.marker))
                .unwrap_or(false)
        }) else {
            std::fs::write(&output, b"").expect("write empty MPI recorder placeholder");
            println!(
                "cargo:warning=no {} headers found: `contend record --mpi` will not support {}",
                imp.name, imp.name
            );
            continue;
        };
        println!(
            "cargo:rerun-if-changed={}",
            header_dir.join("mpi.h").display()
        );
        let mut cmd = Command::new(compiler.path());
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
            "-fvisibility=hidden",
            "-shared",
            "-Wl,-z,now",
            // not linked against libmpi: every PMPI function is looked up
            // at run time, so the library loads into non-MPI processes too
            "-Wl,--no-undefined",
        ])
        .arg(format!("-D{}", imp.define))
        .arg(format!("-Wl,-soname,libcontend_mpi_{}.so", imp.name))
        .arg("-I")
        .arg(include)
        .arg("-I")
        .arg(&mpi_src);
        for d in &dirs {
            cmd.arg("-I").arg(d);
        }
        cmd.arg("-o").arg(&output);
        for s in MPI_SOURCES {
            cmd.arg(mpi_src.join(s));
        }
        if imp.name == "openmpi" {
            cmd.arg(mpi_src.join("mpi_fortran.c"));
        }
        cmd.args(["-ldl", "-lpthread"]);
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

/// Include directories of an MPI implementation: `pkg-config --cflags`,
/// else the usual Debian/Fedora locations that exist.
fn mpi_include_dirs(imp: &MpiImpl) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if let Ok(out) = Command::new("pkg-config")
        .args(["--cflags", imp.pkg])
        .output()
    {
        if out.status.success() {
            for flag in String::from_utf8_lossy(&out.stdout).split_whitespace() {
                if let Some(d) = flag.strip_prefix("-I") {
                    dirs.push(PathBuf::from(d));
                }
            }
        }
    }
    for d in imp.fallback {
        let p = PathBuf::from(d);
        if p.join("mpi.h").is_file() && !dirs.contains(&p) {
            dirs.push(p);
        }
    }
    dirs
}
