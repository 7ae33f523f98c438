//! Where the headers of an MPI implementation are and how the MPI
//! recorder (`collector/mpi`) is compiled against them: shared by the build
//! script (which builds a recorder for every implementation installed when
//! `contend` is built) and the library ([`crate::install_mpi_recorder`]
//! builds one when it is first needed for an implementation installed
//! later). Uses nothing but `std`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

/// An MPI implementation's headers as the recorder build looks for them.
pub struct MpiHeaders {
    /// Short name in the library file name (`openmpi`, `mpich`).
    pub name: &'static str,
    /// The `-D` define selecting the implementation in the C sources.
    pub define: &'static str,
    /// pkg-config package giving its include path.
    pub pkg: &'static str,
    /// Include directories tried besides pkg-config's.
    pub fallback: &'static [&'static str],
    /// A string its `mpi.h` contains (to tell the two apart).
    pub marker: &'static str,
    /// The Debian package holding the headers (for messages).
    pub debian_package: &'static str,
}

/// Open MPI, then MPICH.
pub const MPI_HEADERS: &[MpiHeaders] = &[
    MpiHeaders {
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
        debian_package: "libopenmpi-dev",
    },
    MpiHeaders {
        name: "mpich",
        define: "CONTEND_MPI_MPICH",
        pkg: "mpich",
        fallback: &[
            "/usr/include/x86_64-linux-gnu/mpich",
            "/usr/include/aarch64-linux-gnu/mpich",
            "/usr/include/mpich-x86_64",
        ],
        marker: "MPICH_VERSION",
        debian_package: "libmpich-dev",
    },
];

/// C sources of the recorder, relative to `collector/mpi`; `mpi_fortran.c`
/// (Open MPI's Fortran entry points) is added for Open MPI only (MPICH's
/// `mpif.h`/`mpi` bindings call the C `MPI_*` functions), and
/// `mpi_f08_mpich.c` (MPICH's `mpi_f08` bindings, which call `PMPI_*`
/// directly) for MPICH only.
pub const MPI_SOURCES: &[&str] = &["mpi_trace.c", "mpi_wrap.c"];
/// The recorder's own headers, relative to `collector/mpi`.
pub const MPI_HEADER_FILES: &[&str] = &["mpi_rec.h", "mpi_core.h", "mpi_funcs.h"];

/// pkg-config's include directories of `h` (none without pkg-config or
/// the package).
fn pkg_config_dirs(h: &MpiHeaders) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if let Ok(out) = Command::new("pkg-config")
        .args(["--cflags", h.pkg])
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
    dirs
}

/// Every `mpi.h` path the probe looks at for `h`, found or not: the build
/// script watches them (a missing one through the nearest directory that
/// exists), so installing the headers later rebuilds the recorder.
pub fn probed_headers(h: &MpiHeaders) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = pkg_config_dirs(h)
        .into_iter()
        .chain(h.fallback.iter().map(PathBuf::from))
        .map(|d| d.join("mpi.h"))
        .collect();
    v.dedup();
    v
}

/// Include directories of `h`: pkg-config's, then the usual Debian/Fedora
/// locations that hold an `mpi.h`.
pub fn include_dirs(h: &MpiHeaders) -> Vec<PathBuf> {
    let mut dirs = pkg_config_dirs(h);
    for d in h.fallback {
        let p = PathBuf::from(d);
        if p.join("mpi.h").is_file() && !dirs.contains(&p) {
            dirs.push(p);
        }
    }
    dirs
}

/// The directory among `dirs` whose `mpi.h` is `h`'s (contains its
/// marker).
pub fn header_dir<'d>(h: &MpiHeaders, dirs: &'d [PathBuf]) -> Option<&'d PathBuf> {
    dirs.iter().find(|d| {
        std::fs::read_to_string(d.join("mpi.h"))
            .map(|text| text.contains(h.marker))
            .unwrap_or(false)
    })
}

/// The compiler arguments (after any target-selection flags) that build
/// the recorder for `h` into `output`, from the sources in `mpi_src`
/// (`collector/mpi`) and the format headers in `include`
/// (`collector/include`): C11, `-Wall -Wextra -Werror`, `-O2`, a shared
/// library bound at load time that exports only the wrapped entry points
/// and is not linked against `libmpi` (every PMPI function is looked up at
/// run time, so it loads into non-MPI processes too).
pub fn compile_args(
    h: &MpiHeaders,
    include: &Path,
    mpi_src: &Path,
    dirs: &[PathBuf],
    output: &Path,
) -> Vec<OsString> {
    let mut a: Vec<OsString> = [
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
        "-Wl,--no-undefined",
    ]
    .iter()
    .map(OsString::from)
    .collect();
    a.push(format!("-D{}", h.define).into());
    a.push(format!("-Wl,-soname,libcontend_mpi_{}.so", h.name).into());
    a.push("-I".into());
    a.push(include.into());
    a.push("-I".into());
    a.push(mpi_src.into());
    for d in dirs {
        a.push("-I".into());
        a.push(d.into());
    }
    a.push("-o".into());
    a.push(output.into());
    for s in MPI_SOURCES {
        a.push(mpi_src.join(s).into());
    }
    if h.name == "openmpi" {
        a.push(mpi_src.join("mpi_fortran.c").into());
    }
    if h.name == "mpich" {
        a.push(mpi_src.join("mpi_f08_mpich.c").into());
    }
    a.push("-ldl".into());
    a.push("-lpthread".into());
    a
}
