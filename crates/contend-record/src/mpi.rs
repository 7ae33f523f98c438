//! MPI support of the launcher: which MPI implementation a command uses
//! (Open MPI or MPICH, from the launcher and the program's ELF), the
//! recorder library to preload for it, and the rank traces it left.

use std::ffi::OsStr;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::launch::{RecordError, RecordOptions};
use contend_collector::MpiImplementation;

/// Number of MPI rank traces (`rank-*.cmpi`) in `DIR/mpi`.
pub(crate) fn count_mpi_ranks(mpi: &Path) -> usize {
    fs::read_dir(mpi).map_or(0, |entries| {
        entries
            .filter_map(Result::ok)
            .filter(|e| {
                let name = e.file_name();
                let name = name.to_string_lossy();
                name.starts_with("rank-") && name.ends_with(".cmpi")
            })
            .count()
    })
}

/// The MPI implementation for `--mpi` and the installed recorder library.
pub(crate) fn mpi_recorder(
    opts: &RecordOptions,
    program: &Path,
    cwd: &Path,
) -> Result<(MpiImplementation, PathBuf), RecordError> {
    let imp = match opts.mpi_impl {
        Some(imp) => imp,
        None => detect_mpi_implementation(
            program,
            &opts.command[1..],
            cwd,
            std::env::var_os("PATH").as_deref(),
        )
        .map_err(|e| RecordError::Mpi { problem: e.into() })?,
    };
    match contend_collector::install_mpi_recorder(imp) {
        Ok(Some(path)) => Ok((imp, path)),
        Ok(None) => Err(RecordError::Mpi {
            problem: MpiProblem::NoRecorder {
                implementation: imp,
            },
        }),
        Err(source) => Err(RecordError::Collector { source }),
    }
}

/// Which MPI implementation a command uses, for `--mpi` (the recorder must
/// match the ABI of the `libmpi` loaded into the ranks).
///
/// Tried in order: the dynamic dependencies (`libmpi.so*`: Open MPI,
/// `libmpich.so*`: MPICH) of the program and of every argument that names
/// an ELF file (the application after `mpirun -np 4`); the launcher's name
/// after resolving symbolic links (`orterun`, `*openmpi*`: Open MPI;
/// `*mpich*`, `*hydra*`: MPICH); the `--version` output of an
/// `mpirun`/`mpiexec`; the same for the `mpirun` found on `PATH` (a Python
/// script with mpi4py, a shell script).
///
/// # Errors
///
/// [`MpiDetectError::Undetermined`] when none of these tells, its message
/// saying how to name the implementation (`--mpi-impl`).
pub fn detect_mpi_implementation(
    program: &Path,
    args: &[String],
    cwd: &Path,
    path_var: Option<&OsStr>,
) -> Result<MpiImplementation, MpiDetectError> {
    // 1. ELF files among the program and its arguments
    let mut files = vec![program.to_path_buf()];
    for a in args {
        if a.starts_with('-') || a.is_empty() {
            continue;
        }
        let p = if a.contains('/') || cwd.join(a).is_file() {
            cwd.join(a)
        } else if let Some(found) = path_var.and_then(|pv| {
            std::env::split_paths(pv)
                .map(|d| d.join(a))
                .find(|p| p.is_file())
        }) {
            found
        } else {
            continue;
        };
        if p.is_file() {
            files.push(p);
        }
    }
    for f in &files {
        if let Some(imp) = mpi_of_elf(f) {
            return Ok(imp);
        }
    }
    // 2./3. the launcher, then the mpirun on PATH
    let mut launchers = vec![program.to_path_buf()];
    if let Some(pv) = path_var {
        if let Some(m) = std::env::split_paths(pv)
            .map(|d| d.join("mpirun"))
            .find(|p| p.is_file())
        {
            launchers.push(m);
        }
    }
    for l in &launchers {
        if let Some(imp) = mpi_of_launcher(l) {
            return Ok(imp);
        }
    }
    Err(MpiDetectError::Undetermined {
        program: program.to_path_buf(),
    })
}

/// Why `--mpi` cannot be honoured ([`RecordError::Mpi`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MpiProblem {
    /// The command's MPI implementation cannot be told.
    #[error(transparent)]
    Undetermined(#[from] MpiDetectError),
    /// There is no MPI recorder for the implementation: its headers were
    /// missing when contend was built and are missing now (a recorder is
    /// built when first needed once they are installed).
    #[error(
        "no {} headers are installed, so there is no MPI recorder for {}; install them \
         (Debian: {}): contend builds the recorder when it is next needed",
        implementation.name(),
        implementation.name(),
        debian_dev_package(*implementation)
    )]
    NoRecorder {
        /// The implementation the command uses.
        implementation: MpiImplementation,
    },
}

/// The Debian package with the headers of `imp`.
fn debian_dev_package(imp: MpiImplementation) -> &'static str {
    match imp {
        MpiImplementation::OpenMpi => "libopenmpi-dev",
        MpiImplementation::Mpich => "libmpich-dev",
    }
}

/// Why [`detect_mpi_implementation`] could not tell the MPI implementation.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MpiDetectError {
    /// No `libmpi`/`libmpich` among the dependencies of the program or of
    /// the ELF files among its arguments, and no launcher contend knows.
    #[error(
        "cannot tell which MPI implementation `{}` uses (no libmpi in its dependencies or its \
         arguments', no known mpirun); name it with --mpi-impl openmpi|mpich",
        program.display()
    )]
    Undetermined {
        /// The program of the command.
        program: PathBuf,
    },
}

/// Open MPI or MPICH from an ELF file's dynamic string table
/// (`libmpi.so.40` / `libmpich.so.12` among its `DT_NEEDED`).
pub(crate) fn mpi_of_elf(path: &Path) -> Option<MpiImplementation> {
    let meta = fs::metadata(path).ok()?;
    if !meta.is_file() || meta.len() > 512 << 20 {
        return None;
    }
    let bytes = fs::read(path).ok()?;
    if !bytes.starts_with(b"\x7fELF") {
        return None;
    }
    let file = object::File::parse(&*bytes).ok()?;
    use object::read::elf::{Dyn, FileHeader};
    let needed: Vec<Vec<u8>> = match &file {
        object::File::Elf64(elf) => {
            let endian = elf.endian();
            let header = elf.elf_header();
            let data = elf.data();
            let sections = header.sections(endian, data).ok()?;
            let mut out = Vec::new();
            if let Some((dynamic, link)) = sections.dynamic(endian, data).ok()? {
                let strings = sections.strings(endian, data, link).ok()?;
                for d in dynamic {
                    if d.tag32(endian) == Some(object::elf::DT_NEEDED) {
                        if let Ok(name) = d.string(endian, strings) {
                            out.push(name.to_vec());
                        }
                    }
                }
            }
            out
        }
        _ => return None,
    };
    for n in &needed {
        if n.starts_with(b"libmpich") {
            return Some(MpiImplementation::Mpich);
        }
        if n.starts_with(b"libmpi.so") || n.starts_with(b"libmpi_") {
            return Some(MpiImplementation::OpenMpi);
        }
    }
    None
}

/// Open MPI or MPICH from a launcher: its name after resolving links, then
/// (for an `mpirun`/`mpiexec`) its `--version` output.
pub(crate) fn mpi_of_launcher(path: &Path) -> Option<MpiImplementation> {
    let real = fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let name = real.file_name()?.to_string_lossy().to_lowercase();
    if name.contains("orterun") || name.contains("openmpi") || name == "prterun" {
        return Some(MpiImplementation::OpenMpi);
    }
    if name.contains("mpich") || name.contains("hydra") {
        return Some(MpiImplementation::Mpich);
    }
    if !(name.starts_with("mpirun") || name.starts_with("mpiexec")) {
        return None;
    }
    let out = Command::new(&real)
        .arg("--version")
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    if text.contains("Open MPI") || text.contains("OpenRTE") {
        Some(MpiImplementation::OpenMpi)
    } else if text.contains("HYDRA") || text.contains("MPICH") {
        Some(MpiImplementation::Mpich)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn undetermined_implementation_is_a_typed_error() {
        let sh = Path::new("/bin/sh");
        let e = detect_mpi_implementation(sh, &["-c".into(), "true".into()], Path::new("/"), None)
            .unwrap_err();
        assert_eq!(
            e,
            MpiDetectError::Undetermined {
                program: sh.to_path_buf()
            }
        );
        let e = RecordError::Mpi { problem: e.into() }.to_string();
        assert!(
            e.starts_with("record --mpi: cannot tell which MPI implementation `/bin/sh` uses")
                && e.ends_with("name it with --mpi-impl openmpi|mpich"),
            "{e}"
        );
        let e = MpiProblem::NoRecorder {
            implementation: MpiImplementation::Mpich,
        }
        .to_string();
        assert_eq!(
            e,
            "no MPICH headers are installed, so there is no MPI recorder for MPICH; install them \
             (Debian: libmpich-dev): contend builds the recorder when it is next needed"
        );
    }
}
