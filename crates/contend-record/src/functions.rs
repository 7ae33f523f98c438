//! Which functions `contend record --function` probes: the names on the
//! command line resolved to (ELF file, file offset) through the symbol
//! tables of the program and of the shared libraries it loads, before the
//! program starts (Mosli Bouksiaa et al., TPDS 2019, Section 3.1: the user
//! gives a binary and a set of function names).
//!
//! A request is `NAME` (searched in the executable, then in its libraries
//! in load order, as the dynamic linker would bind it), `LIB:NAME` (in the
//! library whose file name starts with LIB, e.g. `libz:deflate`, or in the
//! ELF file at path LIB) or `MODULE:0xOFFSET` (a file offset, which must be
//! where a function symbol starts: a uprobe in the middle of an
//! instruction crashes the program). C++ functions are named by their
//! mangled symbol (as `nm` prints it). A name that cannot be found, in a
//! stripped file (no `.symtab`) or at all, is refused with the reason; the
//! recording goes on without it.

use std::path::{Path, PathBuf};
use std::process::Command;

use contend_trace::probes::{ProbeSpec, RefusedProbe};

/// What one `--function` word asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FunctionRequest {
    /// The word as given.
    pub text: String,
    /// The module part (`LIB` of `LIB:NAME`), if any.
    pub module: Option<String>,
    /// The symbol or offset.
    pub target: FunctionTarget,
}

/// A symbol name or a file offset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FunctionTarget {
    /// A function symbol.
    Symbol(String),
    /// A file offset (`MODULE:0xOFFSET`).
    Offset(u64),
}

/// A bad `--function` list.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FunctionListError {
    /// An empty name in the list (`--function a,,b`).
    #[error("--function: empty function name in `{list}`")]
    Empty {
        /// The list given.
        list: String,
    },
    /// `MODULE:0x...` whose number does not parse.
    #[error("--function {word}: `{offset}` is not a hexadecimal offset")]
    BadOffset {
        /// The word.
        word: String,
        /// The offset part.
        offset: String,
    },
    /// An offset without a module.
    #[error("--function {word}: a file offset needs its module (MODULE:0xOFFSET)")]
    OffsetWithoutModule {
        /// The word.
        word: String,
    },
}

/// Splits `--function` values (each comma-separated) into requests.
pub fn parse_function_list(values: &[String]) -> Result<Vec<FunctionRequest>, FunctionListError> {
    let mut out = Vec::new();
    for list in values {
        for word in list.split(',') {
            let word = word.trim();
            if word.is_empty() {
                return Err(FunctionListError::Empty { list: list.clone() });
            }
            // `MODULE:NAME`: the module is everything before the last ':'
            // unless that is part of a C++ name (`ns::f`).
            let (module, name) = match word.rfind(':') {
                Some(i) if i > 0 && !word[..i].ends_with(':') && !word[i + 1..].is_empty() => {
                    (Some(word[..i].to_string()), &word[i + 1..])
                }
                _ => (None, word),
            };
            let target = if let Some(hex) = name.strip_prefix("0x") {
                let off =
                    u64::from_str_radix(hex, 16).map_err(|_| FunctionListError::BadOffset {
                        word: word.into(),
                        offset: name.into(),
                    })?;
                if module.is_none() {
                    return Err(FunctionListError::OffsetWithoutModule { word: word.into() });
                }
                FunctionTarget::Offset(off)
            } else {
                FunctionTarget::Symbol(name.to_string())
            };
            out.push(FunctionRequest {
                text: word.to_string(),
                module,
                target,
            });
        }
    }
    Ok(out)
}

/// The ELF files of a program: itself, then the shared libraries the
/// dynamic loader would load for it, in load order (`ld.so --list`, which
/// resolves them without running the program). Only the program when it
/// is not a dynamically linked ELF file or the loader cannot list it.
pub fn program_modules(program: &Path) -> Vec<PathBuf> {
    let program = std::fs::canonicalize(program).unwrap_or_else(|_| program.to_path_buf());
    let program = program.as_path();
    let mut out = vec![program.to_path_buf()];
    let Some(interp) = interpreter(program) else {
        return out;
    };
    let Ok(o) = Command::new(&interp)
        .arg("--list")
        .arg(program)
        .env_remove("LD_PRELOAD")
        .output()
    else {
        return out;
    };
    if !o.status.success() {
        return out;
    }
    for line in String::from_utf8_lossy(&o.stdout).lines() {
        // "libz.so.1 => /lib/x86_64-linux-gnu/libz.so.1 (0x...)" or
        // "/lib64/ld-linux-x86-64.so.2 (0x...)"
        let line = line.trim();
        let path = match line.split_once("=>") {
            Some((_, rest)) => rest.trim(),
            None => line,
        };
        let path = path.split(" (").next().unwrap_or("").trim();
        if path.starts_with('/') {
            let p = PathBuf::from(path);
            if !out.contains(&p) {
                out.push(p);
            }
        }
    }
    out
}

/// The program's `PT_INTERP`, if it has one.
fn interpreter(program: &Path) -> Option<PathBuf> {
    let data = std::fs::read(program).ok()?;
    let file = object::File::parse(&*data).ok()?;
    use object::read::elf::{FileHeader, ProgramHeader};
    let object::File::Elf64(elf) = file else {
        return None;
    };
    let endian = elf.endian();
    let header = elf.elf_header();
    for ph in header.program_headers(endian, &*data).ok()? {
        if ph.p_type(endian) == object::elf::PT_INTERP {
            let bytes = ph.data(endian, &*data).ok()?;
            let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
            return Some(PathBuf::from(
                String::from_utf8_lossy(&bytes[..end]).into_owned(),
            ));
        }
    }
    None
}

/// A function symbol of an ELF file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FunctionSymbol {
    /// Its name.
    pub name: String,
    /// Its ELF virtual address.
    pub vaddr: u64,
    /// Its size, bytes: the symbol's, or for a symbol without one
    /// (`_init`, hand-written assembly) up to the end of its section; 0 =
    /// unknown (the nearest function below covers an address).
    pub size: u64,
    /// Offset of its first instruction in the file.
    pub file_offset: u64,
}

/// The function symbols of one ELF file.
#[derive(Debug, Clone, Default)]
pub struct ModuleSymbols {
    /// The file.
    pub path: PathBuf,
    /// Defined function symbols (`.symtab` and `.dynsym`), by address.
    pub functions: Vec<FunctionSymbol>,
    /// The file has no `.symtab` (stripped): only exported functions are
    /// known.
    pub stripped: bool,
    /// Loadable segments: (virtual address, size in the file, file offset).
    pub segments: Vec<(u64, u64, u64)>,
    /// The file is a Go program (a `.go.buildinfo` section or Go's build-ID
    /// note, `.note.go.buildid`): see [`GO_RETURN_PROBES`].
    pub go: bool,
    /// The file has exception-handling tables (a non-empty
    /// `.gcc_except_table`: C++ with exceptions, Rust that unwinds on
    /// panic): see [`EXCEPTION_RETURN_PROBES`].
    pub exceptions: bool,
    /// Why the file could not be read, if it could not.
    pub error: Option<String>,
}

/// A demangled C++ name without its parameter list and what follows it
/// (`ns::f(int) const` → `ns::f`, `f<int>(int)` → `f<int>`): the name
/// up to its first `(` outside template brackets.
fn without_parameters(demangled: &str) -> &str {
    let mut depth = 0i32;
    for (i, c) in demangled.char_indices() {
        match c {
            '<' => depth += 1,
            '>' => depth -= 1,
            '(' if depth == 0 && i > 0 => return &demangled[..i],
            _ => {}
        }
    }
    demangled
}

/// Why no function of a Go program is probed. A function's return is seen
/// through a return probe (uretprobe): the kernel replaces the return
/// address on the stack with its trampoline and keeps the real one per
/// thread. A goroutine can return on another thread than it entered on,
/// where the kernel knows no return address, and Go's own stack walks
/// (its garbage collector, preemption, tracebacks) meet a return address
/// they do not know: the program dies (SIGILL at the trampoline, or Go's
/// "unknown pc" fatal error; 5 runs of 5 with a probed
/// `sync.(*Mutex).lockSlow`, Go 1.2x, Linux 6.18). Probes must never
/// change the program's behaviour, so a Go program is not probed at all.
pub const GO_RETURN_PROBES: &str = "is a Go program, whose goroutines can return on another thread than they entered on and whose stack walks do not know the kernel's return trampoline: return probes (uretprobes) make it crash, so none of its functions is probed (Go's own profiles, runtime/pprof, show where it spends its time and blocks)";

/// Why no function of a module with exception-handling tables (C++, and
/// Rust built to unwind on panic) is probed unless asked
/// (`--probe-exception-code`): an exception thrown below a function
/// whose return is probed meets the kernel's trampoline in place of the
/// return address, for which the unwinder has no unwind information, and
/// the program ends (a C++ program whose exceptions pass through a probed
/// function: exit 134, "terminate called after throwing", every run; a
/// Rust panic caught above a probed function: "failed to initiate panic",
/// exit 134; Linux 6.18, GCC 12, rustc 1.9x). A thread's cancellation or
/// `pthread_exit` unwinds through such a frame unharmed (glibc's forced
/// unwinding stops there), so C code is probed.
pub const EXCEPTION_RETURN_PROBES: &str = "has exception-handling tables (C++ exceptions, Rust panics that unwind): an exception or panic that passes through a function whose return is probed (a uretprobe: the kernel's trampoline stands in for the return address, and the unwinder finds no unwind information for it) ends the program (std::terminate, or an abort), so its functions are probed only with --probe-exception-code (when nothing unwinds through them)";

impl ModuleSymbols {
    /// The function a C++ or Rust program's source calls `name`: its
    /// demangled name whole (`ns::f(int)`, `crate::module::f`), or without
    /// its parameters (`ns::f`) when that names one function only (an
    /// overloaded name gives `Err` with the candidates' demangled names).
    /// Compiler-made copies (`f(int) [clone .cold]`) are never chosen: a
    /// probe belongs on the function's entry. `Ok(None)` when no function
    /// has that name.
    pub fn by_source_name(&self, name: &str) -> Result<Option<&FunctionSymbol>, Vec<String>> {
        let mut bare: Vec<(&FunctionSymbol, String)> = Vec::new();
        for f in &self.functions {
            if !(f.name.starts_with("_Z") || f.name.starts_with("_R")) {
                continue;
            }
            let d =
                addr2line::demangle_auto(std::borrow::Cow::Borrowed(&f.name), None).into_owned();
            if d.contains(" [clone ") {
                continue;
            }
            if d == name {
                return Ok(Some(f));
            }
            if without_parameters(&d) == name && !bare.iter().any(|(g, _)| g.vaddr == f.vaddr) {
                bare.push((f, d));
            }
        }
        match bare.len() {
            0 => Ok(None),
            1 => Ok(Some(bare[0].0)),
            _ => Err(bare.into_iter().map(|(_, d)| d).collect()),
        }
    }

    /// Reads the function symbols of the ELF file at `path`.
    pub fn read(path: &Path) -> ModuleSymbols {
        let mut m = ModuleSymbols {
            path: path.to_path_buf(),
            ..ModuleSymbols::default()
        };
        let data = match std::fs::read(path) {
            Ok(d) => d,
            Err(e) => {
                m.error = Some(format!("{}: {e}", path.display()));
                return m;
            }
        };
        let file = match object::File::parse(&*data) {
            Ok(f) => f,
            Err(e) => {
                m.error = Some(format!("{}: not an ELF file ({e})", path.display()));
                return m;
            }
        };
        use object::{Object, ObjectSection, ObjectSegment, ObjectSymbol};
        m.stripped = file.section_by_name(".symtab").is_none();
        m.go = file.section_by_name(".go.buildinfo").is_some()
            || file.section_by_name(".note.go.buildid").is_some();
        m.exceptions = file
            .section_by_name(".gcc_except_table")
            .is_some_and(|t| t.size() > 0);
        let segments: Vec<(u64, u64, u64)> = file
            .segments()
            .map(|s| {
                let (off, filesz) = s.file_range();
                (s.address(), filesz, off)
            })
            .collect();
        m.segments = segments.clone();
        let offset_of = |vaddr: u64| {
            segments
                .iter()
                .find(|&&(a, sz, _)| vaddr >= a && vaddr < a + sz)
                .map(|&(a, _, off)| vaddr - a + off)
        };
        for sym in file.symbols().chain(file.dynamic_symbols()) {
            if sym.kind() != object::SymbolKind::Text || !sym.is_definition() {
                continue;
            }
            let Ok(name) = sym.name() else { continue };
            if name.is_empty() {
                continue;
            }
            let Some(file_offset) = offset_of(sym.address()) else {
                continue;
            };
            // A symbol without a size (`_init`, hand-written assembly)
            // ends with its section at the latest: `_init` then no longer
            // covers the PLT stubs after `.init`, whose samples (a call
            // through `clock_gettime@plt`) were attributed to it.
            let size = match sym.size() {
                0 => sym
                    .section_index()
                    .and_then(|i| file.section_by_index(i).ok())
                    .map(|s| (s.address() + s.size()).saturating_sub(sym.address()))
                    .unwrap_or(0),
                n => n,
            };
            m.functions.push(FunctionSymbol {
                name: name.to_string(),
                vaddr: sym.address(),
                size,
                file_offset,
            });
        }
        m.functions
            .sort_by(|a, b| a.vaddr.cmp(&b.vaddr).then(a.name.cmp(&b.name)));
        m.functions
            .dedup_by(|a, b| a.vaddr == b.vaddr && a.name == b.name);
        m
    }

    /// The function covering `vaddr` (by size, or the nearest below when
    /// sizes are 0).
    pub fn covering(&self, vaddr: u64) -> Option<&FunctionSymbol> {
        let i = self.functions.partition_point(|f| f.vaddr <= vaddr);
        let f = self.functions.get(i.checked_sub(1)?)?;
        (f.size == 0 || vaddr < f.vaddr + f.size).then_some(f)
    }

    /// The function whose code holds file offset `off`.
    pub fn covering_offset(&self, off: u64) -> Option<&FunctionSymbol> {
        let &(a, _, o) = self
            .segments
            .iter()
            .find(|&&(_, sz, o)| off >= o && off < o + sz)?;
        self.covering(off - o + a)
    }

    /// The function starting at file offset `off`.
    fn at_offset(&self, off: u64) -> Option<&FunctionSymbol> {
        self.functions.iter().find(|f| f.file_offset == off)
    }
}

/// Does `module` (a request's module part) name the file `path`?
fn names_module(module: &str, path: &Path) -> bool {
    if Path::new(module) == path {
        return true;
    }
    let Some(file) = path.file_name().map(|f| f.to_string_lossy()) else {
        return false;
    };
    file == module
        || file
            .strip_prefix(module)
            .is_some_and(|rest| rest.starts_with('.') || rest.starts_with('-'))
}

/// Resolves the requests against `modules` (the program first): the
/// probes, and the requests refused with the reason.
/// `exception_code`: probe functions of modules with exception-handling
/// tables too (`--probe-exception-code`; else they are refused,
/// [`EXCEPTION_RETURN_PROBES`]). A Go program's are always refused
/// ([`GO_RETURN_PROBES`]).
pub fn resolve_functions(
    requests: &[FunctionRequest],
    modules: &[PathBuf],
    exception_code: bool,
) -> (Vec<ProbeSpec>, Vec<RefusedProbe>) {
    let mut cache: Vec<ModuleSymbols> = Vec::new();
    fn symbols(cache: &mut Vec<ModuleSymbols>, p: &Path) -> usize {
        if let Some(i) = cache.iter().position(|m| m.path == p) {
            return i;
        }
        cache.push(ModuleSymbols::read(p));
        cache.len() - 1
    }
    let mut probes: Vec<ProbeSpec> = Vec::new();
    let mut refused = Vec::new();
    if let Some(program) = modules.first() {
        let i = symbols(&mut cache, program);
        if cache[i].go {
            let reason = format!("{} {GO_RETURN_PROBES}", program.display());
            for req in requests {
                refused.push(RefusedProbe {
                    function: req.text.clone(),
                    reason: reason.clone(),
                });
            }
            return (probes, refused);
        }
    }
    for req in requests {
        let refuse = |reason: String| RefusedProbe {
            function: req.text.clone(),
            reason,
        };
        // Candidate files.
        let candidates: Vec<PathBuf> = match &req.module {
            None => modules.to_vec(),
            Some(m) => {
                let listed: Vec<PathBuf> = modules
                    .iter()
                    .filter(|p| names_module(m, p))
                    .cloned()
                    .collect();
                if !listed.is_empty() {
                    listed
                } else if Path::new(m).is_file() {
                    vec![std::fs::canonicalize(m).unwrap_or_else(|_| PathBuf::from(m))]
                } else {
                    refused.push(refuse(format!(
                        "no module `{m}`: the program loads {} (give a library's file name prefix, e.g. libz, or a path)",
                        modules
                            .iter()
                            .map(|p| p.display().to_string())
                            .collect::<Vec<_>>()
                            .join(", ")
                    )));
                    continue;
                }
            }
        };
        let mut found = None;
        let mut problems = Vec::new();
        let mut stripped = Vec::new();
        // a source name that names several functions (C++ overloads)
        let mut ambiguous: Option<String> = None;
        for path in &candidates {
            let i = symbols(&mut cache, path);
            let ms = &cache[i];
            if let Some(e) = &ms.error {
                problems.push(e.clone());
                continue;
            }
            let hit = match &req.target {
                FunctionTarget::Symbol(name) => match ms.functions.iter().find(|f| &f.name == name)
                {
                    Some(f) => Some(f),
                    None => match ms.by_source_name(name) {
                        Ok(f) => f,
                        Err(overloads) => {
                            ambiguous.get_or_insert(format!(
                                "`{name}` names {} functions of {}: {}; give one with its parameters",
                                overloads.len(),
                                path.display(),
                                overloads.join(", ")
                            ));
                            None
                        }
                    },
                },
                FunctionTarget::Offset(off) => ms.at_offset(*off),
            };
            if let Some(f) = hit {
                found = Some((path.clone(), f.clone()));
                break;
            }
            if ms.stripped {
                stripped.push(path.display().to_string());
            }
        }
        // One sentence for all the stripped files, however many were searched
        // (the reason below already names every file searched).
        const NO_SYMTAB: &str = "no symbol table, only exported functions can be found";
        match stripped.len() {
            0 => {}
            n if n == candidates.len() => problems.push(if n == 1 {
                format!("stripped: {NO_SYMTAB}")
            } else {
                format!("all {n} stripped: {NO_SYMTAB}")
            }),
            1 => problems.push(format!("{} is stripped: {NO_SYMTAB}", stripped[0])),
            n => problems.push(format!(
                "{} and {} are stripped: {NO_SYMTAB}",
                stripped[..n - 1].join(", "),
                stripped[n - 1]
            )),
        }
        if let (None, Some(why)) = (&found, ambiguous) {
            refused.push(refuse(why));
            continue;
        }
        let Some((path, f)) = found else {
            let what = match &req.target {
                FunctionTarget::Symbol(name) => format!("no function symbol `{name}`"),
                FunctionTarget::Offset(off) => format!(
                    "no function symbol starts at file offset {off:#x} (a uprobe must sit on the first instruction \
                     of a function: anywhere else it would crash the program)"
                ),
            };
            let place = candidates
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ");
            let mut reason = format!("{what} in {place}");
            if !problems.is_empty() {
                reason.push_str(&format!(" ({})", problems.join("; ")));
            }
            refused.push(refuse(reason));
            continue;
        };
        let m = symbols(&mut cache, &path);
        if !exception_code && cache[m].exceptions {
            refused.push(refuse(format!(
                "{} {EXCEPTION_RETURN_PROBES}",
                path.display()
            )));
            continue;
        }
        let module = path.to_string_lossy().into_owned();
        if probes
            .iter()
            .any(|p| p.module == module && p.file_offset == f.file_offset)
        {
            continue; // asked for twice
        }
        probes.push(ProbeSpec {
            id: probes.len() as u16,
            function: f.name.clone(),
            module,
            file_offset: f.file_offset,
            vaddr: f.vaddr,
            size: f.size,
            requested: req.text.clone(),
        });
    }
    (probes, refused)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `_init` has no size; it covered the PLT stubs after `.init` (up to
    /// the first symbol of `.text`), so a CPU profile put the samples of
    /// calls through the PLT in `_init`. It now ends with `.init`. Read
    /// from this test's own executable (linked with crti's `_init` and a
    /// PLT); a build without either checks nothing and says so.
    #[test]
    fn a_symbol_without_a_size_ends_with_its_section() {
        use object::{Object, ObjectSection};
        let exe = std::env::current_exe().unwrap();
        let m = ModuleSymbols::read(&exe);
        let data = std::fs::read(&exe).unwrap();
        let file = object::File::parse(&*data).unwrap();
        let (Some(init), Some(plt)) = (
            m.functions.iter().find(|f| f.name == "_init"),
            file.section_by_name(".plt"),
        ) else {
            eprintln!("no _init or no .plt in {}: not checked", exe.display());
            return;
        };
        let init_section = file.section_by_name(".init").unwrap();
        assert_eq!(
            init.vaddr + init.size,
            init_section.address() + init_section.size(),
            "{init:?}"
        );
        assert_ne!(
            m.covering(plt.address()).map(|f| f.name.as_str()),
            Some("_init")
        );
    }

    #[test]
    fn parameters_are_cut_outside_template_brackets() {
        assert_eq!(without_parameters("ns::f(int) const"), "ns::f");
        assert_eq!(
            without_parameters("f<int (*)(int)>(int)"),
            "f<int (*)(int)>"
        );
        assert_eq!(without_parameters("crate::module::f"), "crate::module::f");
        assert_eq!(
            without_parameters("(anonymous namespace)::g()"),
            "(anonymous namespace)::g"
        );
    }

    #[test]
    fn source_names_find_one_function_or_name_the_overloads() {
        let f = |name: &str, vaddr: u64| FunctionSymbol {
            name: name.into(),
            vaddr,
            size: 16,
            file_offset: vaddr,
        };
        let m = ModuleSymbols {
            functions: vec![
                f("_Z6middlei", 0x10),
                f("_ZN4work4stepEi", 0x20),
                f("_ZN4work4stepEd", 0x30),
                f("_Z5inneri.cold", 0x40),
                f("plain_c", 0x50),
            ],
            ..ModuleSymbols::default()
        };
        let at = |name: &str| m.by_source_name(name).map(|o| o.map(|s| s.vaddr));
        assert_eq!(at("middle"), Ok(Some(0x10)));
        assert_eq!(at("middle(int)"), Ok(Some(0x10)));
        assert_eq!(at("work::step(double)"), Ok(Some(0x30)));
        assert_eq!(
            at("work::step"),
            Err(vec!["work::step(int)".into(), "work::step(double)".into()])
        );
        // a compiler-made copy is never chosen; C names are matched as
        // symbols (by the caller), not here
        assert_eq!(at("inner"), Ok(None));
        assert_eq!(at("plain_c"), Ok(None));
    }

    #[test]
    fn lists_split_into_requests() {
        let r = parse_function_list(&["work,libz:deflate".into(), "/bin/x:0x1130".into()]).unwrap();
        assert_eq!(r.len(), 3);
        assert_eq!(r[0].target, FunctionTarget::Symbol("work".into()));
        assert_eq!(r[0].module, None);
        assert_eq!(r[1].module.as_deref(), Some("libz"));
        assert_eq!(r[1].target, FunctionTarget::Symbol("deflate".into()));
        assert_eq!(r[2].module.as_deref(), Some("/bin/x"));
        assert_eq!(r[2].target, FunctionTarget::Offset(0x1130));
        // A C++ qualified name is not a module.
        let r = parse_function_list(&["ns::f".into()]).unwrap();
        assert_eq!(r[0].module, None);
        assert!(parse_function_list(&["a,,b".into()]).is_err());
        assert!(matches!(
            parse_function_list(&["0x10".into()]),
            Err(FunctionListError::OffsetWithoutModule { .. })
        ));
        assert!(matches!(
            parse_function_list(&["m:0xzz".into()]),
            Err(FunctionListError::BadOffset { .. })
        ));
    }

    #[test]
    fn module_names_match_by_prefix_of_the_file_name() {
        let p = Path::new("/lib/x86_64-linux-gnu/libz.so.1");
        assert!(names_module("libz", p));
        assert!(names_module("libz.so.1", p));
        assert!(names_module("/lib/x86_64-linux-gnu/libz.so.1", p));
        assert!(!names_module("libzstd", p));
        assert!(!names_module("lib", p));
    }
}
