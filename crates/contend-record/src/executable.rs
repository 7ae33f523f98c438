//! Finding and inspecting the program to run: `PATH` search as a shell
//! does it, and the ELF checks that tell whether the collector can be
//! preloaded (static, setuid/setgid, 32-bit programs cannot load it).

use std::ffi::OsStr;
use std::fs;
use std::io::{self, Read};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::launch::RecordError;

/// Resolves a program name as `execvp` and a shell do: a name containing
/// `/` is a path (relative to `cwd`); any other name is searched in the
/// directories of `path_var` (an empty entry is `cwd`; unset means
/// `/usr/local/bin:/usr/bin:/bin`), and the first executable regular file
/// wins.
pub fn resolve_command(
    name: &str,
    path_var: Option<&OsStr>,
    cwd: &Path,
) -> Result<PathBuf, RecordError> {
    if name.is_empty() {
        return Err(RecordError::CommandNotFound {
            name: name.to_string(),
        });
    }
    if name.contains('/') {
        let p = cwd.join(name);
        return match fs::metadata(&p) {
            Err(_) => Err(RecordError::CommandNotFound {
                name: name.to_string(),
            }),
            Ok(_) if is_executable_file(&p) => Ok(PathBuf::from(name)),
            Ok(_) => Err(RecordError::NotExecutable {
                path: PathBuf::from(name),
            }),
        };
    }
    let path_var = path_var.unwrap_or(OsStr::new("/usr/local/bin:/usr/bin:/bin"));
    let mut not_executable = None;
    for entry in path_var.as_bytes().split(|&b| b == b':') {
        let dir = if entry.is_empty() {
            cwd.to_path_buf()
        } else {
            cwd.join(OsStr::from_bytes(entry))
        };
        let candidate = dir.join(name);
        if is_executable_file(&candidate) {
            return Ok(candidate);
        }
        if not_executable.is_none() && candidate.is_file() {
            not_executable = Some(candidate);
        }
    }
    match not_executable {
        Some(path) => Err(RecordError::NotExecutable { path }),
        None => Err(RecordError::CommandNotFound {
            name: name.to_string(),
        }),
    }
}

pub(crate) fn is_executable_file(p: &Path) -> bool {
    fs::metadata(p).is_ok_and(|m| m.is_file() && m.mode() & 0o111 != 0)
        && nix::unistd::access(p, nix::unistd::AccessFlags::X_OK).is_ok()
}

/// Reasons why the collector cannot be loaded into `program`, one warning
/// each (empty when nothing stands in the way): a statically linked ELF
/// (no `PT_INTERP`: no dynamic loader runs, so nothing reads
/// `LD_PRELOAD`), a setuid or setgid file that changes the process's
/// identity (the loader then runs in secure-execution mode and ignores
/// `LD_PRELOAD`), a 32-bit program (the collector is 64-bit). For a script
/// (`#!`) its interpreter is inspected instead.
pub fn inspect_executable(program: &Path) -> Vec<String> {
    let mut warnings = Vec::new();
    inspect_into(program, 0, &mut warnings);
    warnings
}

pub(crate) fn inspect_into(program: &Path, depth: u32, warnings: &mut Vec<String>) {
    let shown = program.display();
    let Ok(meta) = fs::metadata(program) else {
        return;
    };
    // Secure-execution mode only when the identity actually changes.
    if meta.mode() & 0o4000 != 0 && meta.uid() != unsafe { libc::getuid() } {
        warnings.push(format!(
            "{shown} is setuid: the loader ignores LD_PRELOAD in secure-execution mode, \
             so its locks cannot be traced"
        ));
    }
    if meta.mode() & 0o2000 != 0 && meta.gid() != unsafe { libc::getgid() } {
        warnings.push(format!(
            "{shown} is setgid: the loader ignores LD_PRELOAD in secure-execution mode, \
             so its locks cannot be traced"
        ));
    }
    let Ok(mut file) = fs::File::open(program) else {
        return;
    };
    let mut head = [0u8; 256];
    let mut n = 0;
    while n < head.len() {
        match file.read(&mut head[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return,
        }
    }
    let head = &head[..n];
    if let Some(line) = head.strip_prefix(b"#!") {
        // The kernel runs the interpreter, which reads LD_PRELOAD instead.
        let line = line.split(|&b| b == b'\n').next().unwrap_or_default();
        let interp = line
            .split(|b| b.is_ascii_whitespace())
            .find(|w| !w.is_empty());
        if let (Some(interp), true) = (interp, depth < 4) {
            inspect_into(Path::new(OsStr::from_bytes(interp)), depth + 1, warnings);
        }
        return;
    }
    if !head.starts_with(b"\x7fELF") {
        return;
    }
    // SAFETY: the mapping is read only; a concurrent change of the file can
    // at worst give a wrong answer, never unsoundness in `object`, which
    // only reads through bounds-checked slices.
    let Ok(map) = (unsafe { memmap2::Mmap::map(&file) }) else {
        return;
    };
    match elf_kind(&map) {
        Some(ElfKind::Static) if !is_dynamic_loader(program) => warnings.push(format!(
            "{shown} is statically linked: its locks cannot be traced \
             (LD_PRELOAD needs a dynamically linked program)"
        )),
        Some(ElfKind::Dynamic32) if cfg!(target_pointer_width = "64") => warnings.push(format!(
            "{shown} is a 32-bit program: the 64-bit collector cannot be loaded into it, \
             so its locks cannot be traced"
        )),
        _ => {}
    }
}

#[derive(Debug, PartialEq, Eq)]
pub(crate) enum ElfKind {
    Static,
    Dynamic32,
    Dynamic64,
}

/// Classifies an ELF image by its program headers: dynamically linked
/// means it names an interpreter (`PT_INTERP`), the dynamic loader that
/// honours `LD_PRELOAD`. A static-pie has a dynamic section but no
/// interpreter, and counts as static.
pub(crate) fn elf_kind(data: &[u8]) -> Option<ElfKind> {
    use object::read::elf::{FileHeader, ProgramHeader};
    fn has_interp<H: FileHeader>(data: &[u8]) -> Option<bool> {
        let header = H::parse(data).ok()?;
        let endian = header.endian().ok()?;
        let phdrs = header.program_headers(endian, data).ok()?;
        Some(
            phdrs
                .iter()
                .any(|ph| ph.p_type(endian) == object::elf::PT_INTERP),
        )
    }
    match object::FileKind::parse(data).ok()? {
        object::FileKind::Elf64 => {
            let dynamic = has_interp::<object::elf::FileHeader64<object::Endianness>>(data)?;
            Some(if dynamic {
                ElfKind::Dynamic64
            } else {
                ElfKind::Static
            })
        }
        object::FileKind::Elf32 => {
            let dynamic = has_interp::<object::elf::FileHeader32<object::Endianness>>(data)?;
            Some(if dynamic {
                ElfKind::Dynamic32
            } else {
                ElfKind::Static
            })
        }
        _ => None,
    }
}

/// The dynamic loader run as a program (`ld-linux-x86-64.so.2 ./prog`) has
/// no interpreter of its own but does honour `LD_PRELOAD`.
pub(crate) fn is_dynamic_loader(program: &Path) -> bool {
    program
        .file_name()
        .map(|n| n.to_string_lossy())
        .is_some_and(|n| {
            n.starts_with("ld-linux")
                || n.starts_with("ld.so")
                || n.starts_with("ld64.so")
                || n.starts_with("ld-musl")
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_like_a_shell() {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        fs::create_dir(&bin).unwrap();
        let exe = bin.join("tool");
        fs::write(&exe, "#!/bin/sh\n").unwrap();
        fs::set_permissions(&exe, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        let plain = bin.join("data");
        fs::write(&plain, "x").unwrap();
        fs::set_permissions(&plain, std::os::unix::fs::PermissionsExt::from_mode(0o644)).unwrap();
        let path = std::env::join_paths(["/nonexistent", bin.to_str().unwrap()]).unwrap();
        assert_eq!(
            resolve_command("tool", Some(&path), dir.path()).unwrap(),
            exe
        );
        assert!(matches!(
            resolve_command("nope", Some(&path), dir.path()),
            Err(RecordError::CommandNotFound { .. })
        ));
        let e = resolve_command("data", Some(&path), dir.path()).unwrap_err();
        assert_eq!(e.shell_status(), Some(126), "{e}");
        assert_eq!(
            resolve_command("bin/tool", Some(&path), dir.path()).unwrap(),
            PathBuf::from("bin/tool")
        );
        assert!(matches!(
            resolve_command("bin/nope", Some(&path), dir.path()),
            Err(RecordError::CommandNotFound { .. })
        ));
        // An empty PATH entry is the working directory.
        assert_eq!(
            resolve_command("tool", Some(OsStr::new(":/nonexistent")), &bin).unwrap(),
            exe
        );
    }

    #[test]
    fn setuid_file_of_another_user_is_flagged() {
        if unsafe { libc::getuid() } != 0 {
            eprintln!("skipped: needs root to give a file to another user");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let exe = dir.path().join("suid");
        fs::write(&exe, "#!/bin/sh\n").unwrap();
        std::os::unix::fs::chown(&exe, Some(65534), None).unwrap();
        fs::set_permissions(&exe, std::os::unix::fs::PermissionsExt::from_mode(0o4755)).unwrap();
        let w = inspect_executable(&exe);
        assert!(
            w.iter()
                .any(|w| w.contains("setuid: the loader ignores LD_PRELOAD")),
            "{w:?}"
        );
    }

    #[test]
    fn elf_classification() {
        let me = fs::read("/bin/sh").unwrap();
        assert_eq!(elf_kind(&me), Some(ElfKind::Dynamic64));
        assert_eq!(elf_kind(b"not an elf"), None);
        assert!(inspect_executable(Path::new("/bin/sh")).is_empty());
    }
}
