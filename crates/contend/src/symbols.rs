//! Names for recorded addresses, shared by every analysis of a recording:
//! call sites (return addresses) as function and file:line, global objects
//! as symbols, through the recorded memory maps and the DWARF symbolizer of
//! `contend-symbolize`.
//!
//! One [`Symbols`] serves all analyses of one recording, so that an ELF
//! file and its DWARF are opened and parsed once even when the lock and the
//! MPI analysis both resolve sites in it. Call sites inside system headers
//! (the `std::lock_guard` → `std::mutex::lock` → `__gthread_mutex_lock`
//! chain inlined into the user's function) are attributed to the user's
//! frame ([`attribute_to_user_frame`]).

use std::sync::Mutex;

use contend_symbolize::{
    CodeLocation, DebugInfoSource, ModuleFileState, ProcessMaps, RecordedModule, Symbolizer,
};
use contend_trace::buildid_cache::BuildIdCache;
use contend_trace::modules::ModulesFile;

/// A call site resolved for display.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ResolvedSite {
    /// Function, demangled.
    pub function: Option<String>,
    /// Source file.
    pub file: Option<String>,
    /// Source line.
    pub line: Option<u32>,
    /// Module path.
    pub module: Option<String>,
    /// Offset in the module.
    pub offset: u64,
    /// `dwarf`, `symbols` or `none`.
    pub debug: &'static str,
    /// Short form, e.g. `dequeue (queue.c:82)`.
    pub display: String,
}

impl ResolvedSite {
    /// A site known only by its address (no maps, or symbolization
    /// skipped): shown as the hexadecimal address.
    pub fn address_only(address: u64) -> ResolvedSite {
        ResolvedSite {
            offset: address,
            debug: "none",
            display: format!("{address:#x}"),
            ..ResolvedSite::default()
        }
    }
}

/// Names objects and call sites of the processes of a recording, by
/// process index; implemented over [`Symbols`] for a recording, and by
/// plain fakes in tests.
pub trait Resolver {
    /// Resolves the call site with return address `address` in process
    /// `process` (index in the recording).
    fn site(&mut self, process: u32, address: u64) -> ResolvedSite;
    /// Names a global or static object, `None` for heap/stack objects.
    fn object(&mut self, process: u32, address: u64) -> Option<String>;
    /// Size in bytes of the function holding the call site with return
    /// address `address` (its symbol's size), `None` when unknown (the
    /// default: fakes that know no sizes).
    fn function_size(&mut self, _process: u32, _address: u64) -> Option<u64> {
        None
    }
}

/// The symbolizer of one analysis run, shared by the analyses (interior
/// mutability: its caches fill as sites are resolved).
pub struct Symbols {
    /// `None`: resolve nothing (addresses only).
    symbolizer: Option<Mutex<Symbolizer>>,
}

impl Default for Symbols {
    fn default() -> Self {
        Symbols::new()
    }
}

impl Symbols {
    /// Resolves through the DWARF symbolizer (symbol tables, separate
    /// debug files; see `contend_symbolize`).
    pub fn new() -> Symbols {
        Symbols {
            symbolizer: Some(Mutex::new(Symbolizer::new())),
        }
    }

    /// Drops the symbolizer's DWARF contexts
    /// ([`Symbolizer::release_debug_info`]: what was resolved stays, a new
    /// address builds its module's context again) and gives the C
    /// library's free memory back to the system, so that the analyses
    /// after the one that resolved do not carry debug information at
    /// their peak (docs/benchmarks.md, "Debug information released between
    /// analyses").
    pub fn release_debug_info(&self) {
        if let Some(s) = &self.symbolizer {
            lock(s).release_debug_info();
        }
        // The contexts are thousands of small allocations: without a trim
        // their memory stays in the allocator's free lists. Trimmed even
        // when nothing was released: what the analysis that just ended
        // freed goes back too (memcached's report peaks 5 MB lower so).
        #[cfg(all(target_os = "linux", target_env = "gnu"))]
        // SAFETY: malloc_trim only returns free memory of the allocator to
        // the system; it touches no live allocation.
        unsafe {
            libc::malloc_trim(0);
        }
    }

    /// Resolves nothing: every site is its address and no object has a
    /// name. For analyses that need totals only (the speed-up model reads
    /// lock wait totals of many runs, not their call sites).
    pub fn unresolved() -> Symbols {
        Symbols { symbolizer: None }
    }

    /// The call site with return address `address` in a process with
    /// memory `maps` (`None`: no maps known, shown as the bare address),
    /// attributed to the user's frame ([`attribute_to_user_frame`]).
    pub fn site(&self, maps: Option<&ProcessMaps>, address: u64) -> ResolvedSite {
        let (Some(maps), Some(symbolizer)) = (maps, &self.symbolizer) else {
            return ResolvedSite::address_only(address);
        };
        let mut loc = lock(symbolizer).resolve_code(maps, address);
        attribute_to_user_frame(&mut loc);
        name_inlined_lambda(&mut loc);
        ResolvedSite {
            display: loc.display_short(),
            function: loc.function,
            file: loc.file,
            line: loc.line,
            module: loc.module,
            offset: loc.module_offset,
            debug: match loc.debug {
                DebugInfoSource::Dwarf => "dwarf",
                DebugInfoSource::SymbolTable => "symbols",
                DebugInfoSource::None => "none",
            },
        }
    }

    /// Checks every module against what the recording says it was
    /// (`modules.json`): a module is then read from the file at its path
    /// only while that is still the recorded file, else from its copy in
    /// the build-id cache (the one the recording names, else the user's
    /// default one), else not at all (its sites stay addresses). Call
    /// before resolving anything; [`Symbols::module_warnings`] then says
    /// which modules were not the recorded files.
    pub fn use_recorded_modules(&self, modules: &ModulesFile) {
        let Some(symbolizer) = &self.symbolizer else {
            return;
        };
        let mut caches: Vec<BuildIdCache> = Vec::new();
        if let Some(dir) = &modules.cache_dir {
            caches.push(BuildIdCache::at(dir));
        }
        if let Ok(c) = BuildIdCache::open_default() {
            if !caches.contains(&c) {
                caches.push(c);
            }
        }
        let recorded = modules
            .modules
            .iter()
            .filter(|m| m.identifies())
            .map(|m| RecordedModule {
                path: m.path.clone(),
                build_id: m.build_id.clone(),
                size: m.size,
                mtime_ns: m.mtime_ns,
                cached_copy: m
                    .build_id
                    .as_deref()
                    .and_then(|id| caches.iter().find_map(|c| c.lookup(id))),
            });
        lock(symbolizer).set_recorded_modules(recorded);
    }

    /// One sentence per module used so far that is not the file at its
    /// path any more: resolved from the build-id cache's copy instead, or
    /// not resolved at all (its call sites and objects shown as
    /// addresses). Empty when every module was verified or nothing was
    /// recorded to check against.
    pub fn module_warnings(&self) -> Vec<String> {
        let Some(symbolizer) = &self.symbolizer else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for m in lock(symbolizer).modules() {
            if m.code_lookups + m.data_lookups == 0 {
                continue;
            }
            match &m.file_state {
                ModuleFileState::Mismatch { recorded, found } => {
                    // A file without a build ID is identified by size and
                    // time and never copied: the cache cannot help it.
                    let copy = if recorded.starts_with("build ID") {
                        "the build-id cache has no copy of the recorded file"
                    } else {
                        "it has no build ID, so no copy of it was kept (link with -Wl,--build-id to have one kept)"
                    };
                    let what = if found == "no file" {
                        format!("{} no longer exists ({recorded} recorded)", m.path)
                    } else {
                        format!(
                            "{} was rebuilt since the recording ({recorded} recorded, {found} now)",
                            m.path
                        )
                    };
                    out.push(format!(
                        "{what} and {copy}; its call sites and variables are shown as addresses, not resolved against the file now at that path"
                    ));
                }
                ModuleFileState::FromCache(copy) => out.push(format!(
                    "{} {}; its call sites are resolved from the copy in the build-id cache ({}), so lines refer to the source as it was when recorded",
                    m.path,
                    if std::path::Path::new(&m.path).exists() {
                        "was rebuilt since the recording"
                    } else {
                        "no longer exists"
                    },
                    copy.display()
                )),
                ModuleFileState::Unchecked | ModuleFileState::Verified => {}
            }
        }
        out
    }

    /// Paths of the modules used so far that were not read because they
    /// are not the recorded files ([`Symbols::module_warnings`] says so);
    /// lists of modules lacking debug information leave them out.
    pub fn mismatched_modules(&self) -> Vec<String> {
        let Some(symbolizer) = &self.symbolizer else {
            return Vec::new();
        };
        lock(symbolizer)
            .modules()
            .into_iter()
            .filter(|m| matches!(m.file_state, ModuleFileState::Mismatch { .. }))
            .map(|m| m.path)
            .collect()
    }

    /// Size in bytes of the function holding the call site with return
    /// address `address` (its symbol-table entry), `None` when unknown.
    pub fn function_size(&self, maps: Option<&ProcessMaps>, address: u64) -> Option<u64> {
        let (maps, symbolizer) = (maps?, self.symbolizer.as_ref()?);
        lock(symbolizer).function_size(maps, address)
    }

    /// The names of the functions at code address `address`: the
    /// innermost (possibly inlined) function first, then every function
    /// it is inlined into, outermost last; empty when unknown. For
    /// telling what kind of code waits (a Rust `Mutex::lock_contended`
    /// vs `Condvar::wait`), where the attributed site keeps one name.
    pub fn site_functions(&self, maps: Option<&ProcessMaps>, address: u64) -> Vec<String> {
        let (Some(maps), Some(symbolizer)) = (maps, &self.symbolizer) else {
            return Vec::new();
        };
        let loc = lock(symbolizer).resolve_code(maps, address);
        loc.function
            .into_iter()
            .chain(loc.inlined_into.into_iter().filter_map(|f| f.function))
            .collect()
    }

    /// The symbol naming the global or static object at `address`
    /// (`queue_lock`, `cache+0x40`); `None` for heap and stack objects,
    /// without maps, or when resolving nothing.
    pub fn object(&self, maps: Option<&ProcessMaps>, address: u64) -> Option<String> {
        let (maps, symbolizer) = (maps?, self.symbolizer.as_ref()?);
        lock(symbolizer)
            .resolve_data(maps, address)
            .map(|d| d.display_short())
    }
}

/// The symbolizer, also after a panic elsewhere poisoned the lock (its
/// caches stay consistent: every lookup completes before it returns).
fn lock(m: &Mutex<Symbolizer>) -> std::sync::MutexGuard<'_, Symbolizer> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// True for source files of the compiler's and the C library's headers
/// (`/usr/include/…`, `/usr/lib/gcc/…`, libstdc++'s `c++/` tree) and of
/// Rust's standard library (`/rustc/<commit>/library/…`, inlined into
/// every Rust program).
pub fn is_system_header(file: &str) -> bool {
    file.starts_with("/rustc/")
        || file.starts_with("/usr/include/")
        || file.starts_with("/usr/lib/gcc/")
        || file.starts_with("/usr/lib/llvm")
        || file.contains("/include/c++/")
}

/// Moves a call site that lies in code inlined from a system header (a
/// `std::lock_guard` → `std::mutex::lock` → `__gthread_mutex_lock` chain)
/// to the outermost inlining frame in the user's code, so the site is the
/// line the user wrote. Sites outside system headers are left alone.
pub fn attribute_to_user_frame(loc: &mut CodeLocation) {
    if !loc.file.as_deref().is_some_and(is_system_header) {
        return;
    }
    if let Some(k) = loc
        .inlined_into
        .iter()
        .position(|f| f.file.as_deref().is_some_and(|f| !is_system_header(f)))
    {
        let frame = loc.inlined_into[k].clone();
        loc.function = frame.function;
        loc.file = frame.file;
        loc.line = frame.line;
        loc.column = frame.column;
        loc.function_offset = None;
        loc.inlined_into.drain(..=k);
    }
}

/// Names a call site in an inlined C++ lambda after its closure type: the
/// debug information names the lambda's body only `operator()` (GCC gives
/// an inlined lambda no linkage name; `addr2line` shows the same), so
/// every lambda of a program would share that name in the tables. The
/// frames it is inlined into name its closure type in their template
/// arguments (`std::__invoke_impl<void, main()::<lambda()> >` for a lambda
/// run by `std::thread`, `std::function` or an algorithm), which is then
/// the function's name: `main()::<lambda()>`, the lambda in `main`. Left
/// as it is when no frame names one ([`closure_type`]).
pub fn name_inlined_lambda(loc: &mut CodeLocation) {
    if loc.function.as_deref() != Some("operator()") {
        return;
    }
    if let Some(closure) = loc
        .inlined_into
        .iter()
        .find_map(|f| f.function.as_deref().and_then(closure_type))
    {
        loc.function = Some(closure.to_string());
    }
}

/// The first lambda closure type named in the template arguments of a
/// function's name as GCC's debug information spells it (`__invoke<void,
/// ns::Pool::run(int)::<lambda(int)> >` → `ns::Pool::run(int)::<lambda(int)>`):
/// the template argument that holds the first `::<lambda(`, from after
/// its `<` or `, ` to its `,` or closing `>` (brackets balanced: a lambda
/// within a lambda is one type). `None` when the name holds no closure
/// type.
pub fn closure_type(name: &str) -> Option<&str> {
    let at = name.find("::<lambda(")?;
    let b = name.as_bytes();
    // backward: the enclosing scope (`f<int>(long)`, `ns::C::m() const`)
    // to the start of the template argument
    let mut depth = 0i32;
    let mut start = 0;
    for i in (0..at).rev() {
        match b[i] {
            b')' | b'>' => depth += 1,
            b'(' | b'<' if depth > 0 => depth -= 1,
            b'<' | b',' if depth == 0 => {
                start = i + 1;
                break;
            }
            _ => {}
        }
    }
    // the space after a template argument list's comma
    while b.get(start) == Some(&b' ') {
        start += 1;
    }
    if start >= at {
        return None;
    }
    // forward: to the argument's end (a `,` or the list's `>`), past the
    // closure type and whatever names a lambda inside it
    let mut depth = 0i32;
    let mut end = b.len();
    for (i, &c) in b.iter().enumerate().skip(at) {
        match c {
            b'<' | b'(' => depth += 1,
            b'>' | b')' if depth > 0 => depth -= 1,
            b'>' | b')' | b',' if depth == 0 => {
                end = i;
                break;
            }
            _ => {}
        }
    }
    let closure = name[start..end].trim_end();
    closure.ends_with('>').then_some(closure)
}

/// The C, C++ and OpenMP runtime libraries, by file name before `.so` or
/// a `-` version (`libc.so.6`, `libc-2.31.so`, `ld-linux-x86-64.so.2`):
/// their code is never the user's, whatever debug information they have.
const RUNTIME_LIBRARIES: [&str; 13] = [
    "libc",
    "libpthread",
    "libstdc++",
    "libgcc_s",
    "libgomp",
    "libomp",
    "libiomp5",
    "libm",
    "libdl",
    "librt",
    "libatomic",
    "ld-linux",
    "ld-musl",
];

/// True when `module` (a path) is one of the [`RUNTIME_LIBRARIES`].
pub fn is_runtime_library(module: &str) -> bool {
    let name = module.rsplit('/').next().unwrap_or(module);
    RUNTIME_LIBRARIES.iter().any(|stem| {
        name.strip_prefix(stem)
            .is_some_and(|rest| rest.starts_with(".so") || rest.starts_with('-'))
    })
}

/// True when a resolved call site is not the user's code: a system header
/// (code inlined or instantiated from libstdc++ or glibc headers), a
/// runtime library even with line information (glibc's
/// `futex_wait (futex-internal.h:146)` where `libc6-dbg` is installed), or
/// a system library without line information (`libstdc++.so`'s
/// `std::condition_variable::wait` calling `pthread_cond_wait`). A program
/// installed under `/usr/lib` with line information is the user's.
pub fn is_system_site(site: &ResolvedSite) -> bool {
    match (&site.file, &site.module) {
        (Some(f), m) => is_system_header(f) || m.as_deref().is_some_and(is_runtime_library),
        (None, Some(m)) => m.starts_with("/usr/lib/") || m.starts_with("/lib/"),
        (None, None) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use contend_symbolize::InlinedFrame;

    fn frame(function: &str, file: &str, line: u32) -> InlinedFrame {
        InlinedFrame {
            function: Some(function.into()),
            file: Some(file.into()),
            line: Some(line),
            column: None,
        }
    }

    fn resolved(file: Option<&str>, module: &str) -> ResolvedSite {
        ResolvedSite {
            function: Some("f".into()),
            file: file.map(Into::into),
            line: file.map(|_| 1),
            module: Some(module.into()),
            ..ResolvedSite::default()
        }
    }

    /// glibc with its debug information (`libc6-dbg`) is still not the
    /// user's code; a program under /usr/lib with line information is.
    #[test]
    fn runtime_libraries_are_system_code_with_or_without_lines() {
        let libc = "/usr/lib/x86_64-linux-gnu/libc.so.6";
        assert!(is_system_site(&resolved(
            Some("./nptl/../sysdeps/nptl/futex-internal.h"),
            libc
        )));
        assert!(is_system_site(&resolved(None, libc)));
        for m in [
            "/lib/x86_64-linux-gnu/libc-2.31.so",
            "/lib64/ld-linux-x86-64.so.2",
            "/usr/lib/x86_64-linux-gnu/libstdc++.so.6",
            "/usr/lib/llvm-14/lib/libomp.so.5",
            "/usr/lib/x86_64-linux-gnu/libgomp.so.1",
        ] {
            assert!(is_system_site(&resolved(Some("/build/src/x.c"), m)), "{m}");
        }
        for m in [
            "/usr/lib/postgresql/15/bin/postgres",
            "/usr/lib/x86_64-linux-gnu/libcrypto.so.3",
            "/usr/lib/x86_64-linux-gnu/libmpi.so.40",
            "/home/u/libcache.so",
        ] {
            assert!(!is_system_site(&resolved(Some("/build/src/x.c"), m)), "{m}");
        }
        // without lines, anything under /usr/lib stays system code
        assert!(is_system_site(&resolved(
            None,
            "/usr/lib/x86_64-linux-gnu/libcrypto.so.3"
        )));
    }

    #[test]
    fn std_mutex_site_moves_to_the_users_line() {
        let mut loc = CodeLocation::bare(0x1234, Some("/bin/app".into()), 0x234);
        loc.function = Some("__gthread_mutex_lock".into());
        loc.file = Some("/usr/include/x86_64-linux-gnu/c++/12/bits/gthr-default.h".into());
        loc.line = Some(749);
        loc.inlined_into = vec![
            frame(
                "std::mutex::lock",
                "/usr/include/c++/12/bits/std_mutex.h",
                100,
            ),
            frame("worker", "/src/app.cpp", 42),
            frame("main", "/src/app.cpp", 80),
        ];
        attribute_to_user_frame(&mut loc);
        assert_eq!(loc.function.as_deref(), Some("worker"));
        assert_eq!(loc.file.as_deref(), Some("/src/app.cpp"));
        assert_eq!(loc.line, Some(42));
        assert_eq!(loc.inlined_into.len(), 1);
        // A user site is left alone.
        let before = loc.clone();
        attribute_to_user_frame(&mut loc);
        assert_eq!(loc, before);
    }

    /// Closure types as GCC's debug information names them in template
    /// arguments: in a function, a member function, a template function,
    /// a lambda within a lambda, as the first argument; none in a name
    /// without one or with a bare `<lambda(` (no scope).
    #[test]
    fn closure_types_are_found_in_template_arguments() {
        for (name, closure) in [
            (
                "__invoke_impl<void, main()::<lambda()> >",
                Some("main()::<lambda()>"),
            ),
            (
                "__invoke<ns::Pool::run(int) const::<lambda(int)>, int>",
                Some("ns::Pool::run(int) const::<lambda(int)>"),
            ),
            (
                "_M_invoke<work<long>(long)::<lambda(std::pair<int, int>)> >",
                Some("work<long>(long)::<lambda(std::pair<int, int>)>"),
            ),
            (
                "__invoke<main()::<lambda()>::operator()() const::<lambda()> >",
                Some("main()::<lambda()>::operator()() const::<lambda()>"),
            ),
            ("_M_invoke<0>", None),
            ("_M_run", None),
            ("f<::<lambda()> >", None),
        ] {
            assert_eq!(closure_type(name), closure, "{name}");
        }
    }

    /// An inlined lambda's `operator()` takes the closure type of the
    /// first frame that names one (the std::thread chain's
    /// `__invoke_impl`); another function, or a lambda whose frames name
    /// none, keeps its name.
    #[test]
    fn an_inlined_lambda_is_named_after_its_closure_type() {
        let mut loc = CodeLocation {
            function: Some("operator()".into()),
            file: Some("/src/app.cpp".into()),
            line: Some(18),
            ..CodeLocation::bare(0x1234, Some("/bin/app".into()), 0x234)
        };
        loc.inlined_into = vec![
            frame(
                "__invoke_impl<void, main()::<lambda()> >",
                "/usr/include/c++/12/bits/invoke.h",
                61,
            ),
            frame("_M_invoke<0>", "/usr/include/c++/12/bits/std_thread.h", 252),
            frame("_M_run", "/usr/include/c++/12/bits/std_thread.h", 210),
        ];
        name_inlined_lambda(&mut loc);
        assert_eq!(loc.function.as_deref(), Some("main()::<lambda()>"));
        assert_eq!(loc.line, Some(18));
        let mut other = CodeLocation {
            function: Some("worker".into()),
            ..loc.clone()
        };
        name_inlined_lambda(&mut other);
        assert_eq!(other.function.as_deref(), Some("worker"));
        let mut bare = CodeLocation {
            function: Some("operator()".into()),
            inlined_into: vec![frame("main", "/src/app.cpp", 30)],
            ..loc.clone()
        };
        name_inlined_lambda(&mut bare);
        assert_eq!(bare.function.as_deref(), Some("operator()"));
    }

    #[test]
    fn unresolved_symbols_name_nothing() {
        let s = Symbols::unresolved();
        assert_eq!(s.site(None, 0x10), ResolvedSite::address_only(0x10));
        assert_eq!(s.object(None, 0x10), None);
    }
}
