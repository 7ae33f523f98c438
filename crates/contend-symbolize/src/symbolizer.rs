//! The [`Symbolizer`]: per-module cache and address lookups.

use std::borrow::Cow;
use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use addr2line::LookupContinuation;

use serde::{Deserialize, Serialize};

use super::debugfind::{self, SearchState};
use super::elf::{self, DebuginfodUse, DwarfProblem, ModuleData, OpenError, Opened};
use super::identity::{self, ModuleFileState, RecordedModule};
use super::maps::{Mapping, ProcessMaps};
use super::{CodeLocation, DataSymbol, DebugInfoSource, InlinedFrame};

/// Where and how to look for debug information.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SymbolizerOptions {
    /// Roots of separate debug files, searched as
    /// `<dir>/.build-id/<xx>/<rest>.debug` and `<dir>/<module dir>/<debuglink>`.
    /// Default: `["/usr/lib/debug"]`.
    pub debug_dirs: Vec<PathBuf>,
    /// Whether to use debuginfod at all: its client cache and, when
    /// `debuginfod_urls` is set, `debuginfod-find`. Default: `true`.
    pub debuginfod: bool,
    /// debuginfod server URLs (space-separated); `debuginfod-find` is only
    /// run when this is set and non-empty. Default: `$DEBUGINFOD_URLS`.
    pub debuginfod_urls: Option<String>,
    /// The `debuginfod-find` program (looked up on `PATH` unless it contains
    /// a `/`). Default: `debuginfod-find`.
    pub debuginfod_find: PathBuf,
    /// Time limit for one `debuginfod-find` run; after two consecutive
    /// timeouts it is not run again by this symbolizer. Default: 5 s.
    pub debuginfod_timeout: Duration,
    /// The debuginfod client cache directory (`<cache>/<build-id>/debuginfo`).
    /// Default `None`: `$DEBUGINFOD_CACHE_PATH`, then
    /// `$XDG_CACHE_HOME/debuginfod_client`, then `~/.cache/debuginfod_client`.
    /// When set, it is also passed to `debuginfod-find`.
    pub debuginfod_cache: Option<PathBuf>,
}

impl Default for SymbolizerOptions {
    fn default() -> Self {
        SymbolizerOptions {
            debug_dirs: vec![PathBuf::from("/usr/lib/debug")],
            debuginfod: true,
            debuginfod_urls: std::env::var("DEBUGINFOD_URLS")
                .ok()
                .filter(|s| !s.trim().is_empty()),
            debuginfod_find: PathBuf::from("debuginfod-find"),
            debuginfod_timeout: Duration::from_secs(5),
            debuginfod_cache: None,
        }
    }
}

/// What the symbolizer knows about one module it was asked about.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModuleInfo {
    /// Path as recorded in the maps snapshot (with ` (deleted)` appended if
    /// the mapping was marked so).
    pub path: String,
    /// Best information available for code in this module: `Dwarf` if DWARF
    /// was found, `SymbolTable` if it has function symbols, else `None`
    /// (including when the file could not be opened).
    pub debug: DebugInfoSource,
    /// The file DWARF was read from: the module itself or a separate debug
    /// file; `None` without DWARF.
    pub debug_file: Option<PathBuf>,
    /// Build ID of the module in lowercase hex, if it has one.
    pub build_id: Option<String>,
    /// Why the module could not be opened, or why it has no usable DWARF.
    pub problem: Option<String>,
    /// The file now at `path` has a different inode than the one recorded:
    /// it was replaced (rebuilt, upgraded) after the run, so names may be
    /// wrong.
    pub replaced: bool,
    /// Number of `resolve_code` calls that landed in this module.
    pub code_lookups: u64,
    /// Number of `resolve_data` calls that landed in this module.
    pub data_lookups: u64,
    /// Times the module's DWARF context was built: 1 when it was opened
    /// with DWARF, one more each time a lookup needed it again after
    /// [`Symbolizer::release_debug_info`] (an address not resolved
    /// before); 0 without DWARF.
    #[serde(default)]
    pub dwarf_context_builds: u64,
    /// Which file was read for the module, checked against what the
    /// recording says it was ([`Symbolizer::set_recorded_modules`]).
    pub file_state: ModuleFileState,
}

/// Why a module's file was not read.
#[derive(Debug, thiserror::Error)]
enum ModuleError {
    /// The mapping was marked ` (deleted)`: the file now at its path is not
    /// the one that was mapped.
    #[error("{path} was deleted or replaced while mapped; not opening the file now at that path")]
    Deleted {
        /// The path as recorded (without ` (deleted)`).
        path: String,
    },
    /// The file could not be opened as an ELF module.
    #[error(transparent)]
    Open(#[from] OpenError),
    /// The file at the path is not the module that was recorded, and no
    /// copy of that one was found.
    #[error("{path} is not the file that was recorded ({recorded} recorded, {found} now) and no copy of it was found; not using it")]
    Mismatch {
        /// The path.
        path: String,
        /// What was recorded.
        recorded: String,
        /// What is there now.
        found: String,
    },
}

struct Module {
    path: String,
    data: Result<ModuleData, ModuleError>,
    debug_file: Option<PathBuf>,
    replaced: bool,
    code_lookups: u64,
    data_lookups: u64,
    file_state: ModuleFileState,
}

impl Module {
    fn best_source(&self) -> DebugInfoSource {
        match &self.data {
            Ok(d) if d.dwarf.is_some() => DebugInfoSource::Dwarf,
            Ok(d) if d.functions.len() > 0 => DebugInfoSource::SymbolTable,
            _ => DebugInfoSource::None,
        }
    }
}

/// Cached result of a code lookup in one module (everything but the address).
#[derive(Clone)]
struct Resolved {
    function: Option<String>,
    function_offset: Option<u64>,
    file: Option<String>,
    line: Option<u32>,
    column: Option<u32>,
    inlined_into: Vec<InlinedFrame>,
    debug: DebugInfoSource,
}

/// Cached result of a data lookup: demangled name, offset, symbol size.
#[derive(Clone)]
struct DataHit {
    name: String,
    offset: u64,
    size: u64,
}

/// Resolves code and data addresses of traced processes to names.
///
/// Holds every module it opened (memory-mapped, parsed once) and caches every
/// resolved `(module, offset)`; share one symbolizer across all processes of
/// a recording. Lookups take `&mut self` (they fill caches). The type is
/// `Send`, not `Sync`: use one per thread for parallel symbolization.
pub struct Symbolizer {
    opts: SymbolizerOptions,
    modules: Vec<Module>,
    by_key: HashMap<String, usize>,
    code_cache: HashMap<(usize, u64), Resolved>,
    data_cache: HashMap<(usize, u64), Option<DataHit>>,
    member_cache: HashMap<(usize, u64), Option<(String, u64)>>,
    search: SearchState,
    recorded: HashMap<String, RecordedModule>,
}

impl Default for Symbolizer {
    fn default() -> Self {
        Symbolizer::new()
    }
}

impl Symbolizer {
    /// A symbolizer with [`SymbolizerOptions::default`].
    pub fn new() -> Symbolizer {
        Symbolizer::with_options(SymbolizerOptions::default())
    }

    /// A symbolizer with the given options.
    pub fn with_options(opts: SymbolizerOptions) -> Symbolizer {
        Symbolizer {
            opts,
            modules: Vec::new(),
            by_key: HashMap::new(),
            code_cache: HashMap::new(),
            data_cache: HashMap::new(),
            member_cache: HashMap::new(),
            search: SearchState::default(),
            recorded: HashMap::new(),
        }
    }

    /// The options in use.
    pub fn options(&self) -> &SymbolizerOptions {
        &self.opts
    }

    /// Tells the symbolizer what the recording says each module was (its
    /// build ID, or size and modification time, and a kept copy). A module
    /// listed here is read from the file at its path only while that file
    /// is still the recorded one, else from the copy, else not at all
    /// (its addresses stay addresses; [`ModuleInfo::file_state`] says
    /// which). Call before the first lookup: a module already opened keeps
    /// the file it was opened from.
    pub fn set_recorded_modules(&mut self, modules: impl IntoIterator<Item = RecordedModule>) {
        self.recorded = modules.into_iter().map(|m| (m.path.clone(), m)).collect();
    }

    /// Drops every module's DWARF contexts and type index, the largest
    /// part of a symbolizer's memory; symbol tables, module facts and every
    /// address resolved so far stay. A later lookup of an address not
    /// resolved before builds its module's context again (as long as the
    /// first time, about 0.1 s for glibc's debug information).
    pub fn release_debug_info(&mut self) {
        for m in &mut self.modules {
            if let Ok(d) = &mut m.data {
                if let Some(dwarf) = &mut d.dwarf {
                    dwarf.release();
                }
            }
        }
    }

    /// The size in bytes of the function (its symbol-table entry) that
    /// holds the call whose return address is `return_address`, `None`
    /// when the address is in no module, the module cannot be read, or the
    /// covering symbol has no size. For recognising thin lock wrappers
    /// (a function of a few instructions around one lock call).
    pub fn function_size(&mut self, maps: &ProcessMaps, return_address: u64) -> Option<u64> {
        let map = maps.find(return_address)?;
        if !map.is_file_backed() {
            return None;
        }
        let idx = self.module_index(map);
        let data = self.modules[idx].data.as_ref().ok()?;
        let vaddr = data.vaddr_of(map, return_address)?;
        let sym = data.functions.covering_code(vaddr.saturating_sub(1))?;
        (sym.size > 0).then_some(sym.size)
    }

    /// Symbolizes a call site: `return_address` (a return address in the
    /// traced process, as recorded) is located in `maps`, and its module's
    /// DWARF, symbol tables or nothing are consulted at `return_address − 1`.
    ///
    /// Never fails: what could not be found is `None` in the result, and
    /// [`CodeLocation::debug`] says how far it got.
    pub fn resolve_code(&mut self, maps: &ProcessMaps, return_address: u64) -> CodeLocation {
        let Some(map) = maps.find(return_address) else {
            return CodeLocation::bare(return_address, None, return_address);
        };
        if !map.is_file_backed() {
            return CodeLocation::bare(
                return_address,
                map.path.clone(),
                return_address - map.start,
            );
        }
        let path = map.path.clone().unwrap_or_default();
        let file_offset = (return_address - map.start).wrapping_add(map.file_offset);
        let idx = self.module_index(map);
        let module = &mut self.modules[idx];
        module.code_lookups += 1;
        let Ok(data) = &module.data else {
            return CodeLocation::bare(return_address, Some(path), file_offset);
        };
        let Some(vaddr) = data.vaddr_of(map, return_address) else {
            return CodeLocation::bare(return_address, Some(path), file_offset);
        };
        let r = self
            .code_cache
            .entry((idx, vaddr))
            .or_insert_with(|| lookup_code(data, vaddr));
        CodeLocation {
            address: return_address,
            module: Some(path),
            module_offset: vaddr,
            function: r.function.clone(),
            function_offset: r.function_offset,
            file: r.file.clone(),
            line: r.line,
            column: r.column,
            inlined_into: r.inlined_into.clone(),
            debug: r.debug,
        }
    }

    /// Symbolizes a data address (a lock object) as a global or static
    /// variable: an `STT_OBJECT` symbol of `.symtab`/`.dynsym` covering it in
    /// the module whose mapping contains it. An address in an unnamed
    /// anonymous mapping directly following a module's file mapping (the
    /// part of `.bss` past the last file page) is looked up in that module
    /// via its load bias, if it falls inside the module's memory image.
    ///
    /// Returns `None` for heap, stack and other non-module memory, for
    /// modules that cannot be read, and when no symbol covers the address.
    ///
    /// An address inside the variable (a lock in an array or a struct) is
    /// named by element and member from DWARF types when the module has
    /// them ([`DataSymbol::member`]), also at the variable's start
    /// (`stripe_locks[0]`, `table.lock` for a lock that is the struct's
    /// first member): the walk goes down to the first type declared in a
    /// system header (`pthread_mutex_t`), so a variable that is itself a
    /// lock keeps its plain name.
    pub fn resolve_data(&mut self, maps: &ProcessMaps, address: u64) -> Option<DataSymbol> {
        let (si, mi) = maps.locate(address)?;
        let snapshot = &maps.snapshots[si];
        let map = &snapshot.mappings[mi];
        let (module_map, via_bias) = if map.is_file_backed() {
            (map, false)
        } else if map.is_anonymous() && mi > 0 {
            let prev = &snapshot.mappings[mi - 1];
            if prev.end != map.start || !prev.is_file_backed() {
                return None;
            }
            (prev, true)
        } else {
            return None;
        };
        let idx = self.module_index(module_map);
        let module = &mut self.modules[idx];
        module.data_lookups += 1;
        let data = module.data.as_ref().ok()?;
        let vaddr = if via_bias {
            let v = address.wrapping_sub(data.bias_from(module_map)?);
            if !data.vaddr_in_image(v) {
                return None;
            }
            v
        } else {
            data.vaddr_of(map, address)?
        };
        let hit = self
            .data_cache
            .entry((idx, vaddr))
            .or_insert_with(|| {
                data.objects.covering(vaddr).map(|s| DataHit {
                    name: demangle(&s.name),
                    offset: vaddr - s.addr,
                    size: s.size,
                })
            })
            .clone()?;
        let member = self
            .member_cache
            .entry((idx, vaddr))
            .or_insert_with(|| {
                let index = data.dwarf.as_ref()?.type_index()?;
                index.member(vaddr - hit.offset, hit.offset)
            })
            .clone();
        Some(DataSymbol {
            name: hit.name,
            offset: hit.offset,
            size: hit.size,
            module: module_map.path.clone().unwrap_or_default(),
            member_offset: member.as_ref().map_or(0, |m| m.1),
            member: member.map(|m| m.0),
        })
    }

    /// Every module looked up so far (by code or data address), in first-use
    /// order, with its debug-information status.
    pub fn modules(&self) -> Vec<ModuleInfo> {
        self.modules
            .iter()
            .map(|m| {
                let (build_id, problem) = match &m.data {
                    Ok(d) => (
                        d.build_id.as_deref().map(debugfind::hex),
                        d.dwarf_problem.as_ref().map(ToString::to_string),
                    ),
                    Err(e) => (None, Some(e.to_string())),
                };
                ModuleInfo {
                    path: m.path.clone(),
                    debug: m.best_source(),
                    debug_file: m.debug_file.clone(),
                    build_id,
                    problem,
                    replaced: m.replaced,
                    code_lookups: m.code_lookups,
                    data_lookups: m.data_lookups,
                    dwarf_context_builds: match &m.data {
                        Ok(d) => d.dwarf.as_ref().map_or(0, |w| w.context_builds.get()),
                        Err(_) => 0,
                    },
                    file_state: m.file_state.clone(),
                }
            })
            .collect()
    }

    /// Paths (sorted) of modules that `resolve_code` landed in and that have
    /// no DWARF: they could not be opened, or only a symbol table (or nothing)
    /// was found. Sites in them lack file and line. A module left unused
    /// because it is not the recorded file
    /// ([`ModuleFileState::Mismatch`]) is not listed: debug symbols would
    /// not help it.
    pub fn modules_without_debug_info(&self) -> Vec<String> {
        let mut v: Vec<String> = self
            .modules
            .iter()
            .filter(|m| m.code_lookups > 0 && m.best_source() != DebugInfoSource::Dwarf)
            .filter(|m| !matches!(m.file_state, ModuleFileState::Mismatch { .. }))
            .map(|m| m.path.clone())
            .collect();
        v.sort();
        v
    }

    /// Index of the module backing the file mapping `map`, opening it on first
    /// use. A mapping marked ` (deleted)` is never opened.
    fn module_index(&mut self, map: &Mapping) -> usize {
        let path = map.path.as_deref().unwrap_or_default();
        if !map.deleted {
            // Hot path: no allocation.
            if let Some(&i) = self.by_key.get(path) {
                return i;
            }
        }
        let key = if map.deleted {
            format!("{path} (deleted)")
        } else {
            path.to_string()
        };
        if let Some(&i) = self.by_key.get(&key) {
            return i;
        }
        let module = if map.deleted {
            Module {
                path: key.clone(),
                data: Err(ModuleError::Deleted {
                    path: path.to_string(),
                }),
                debug_file: None,
                replaced: true,
                code_lookups: 0,
                data_lookups: 0,
                file_state: ModuleFileState::Unchecked,
            }
        } else {
            self.open_module(Path::new(path), map.inode)
        };
        let i = self.modules.len();
        self.modules.push(module);
        self.by_key.insert(key, i);
        i
    }

    fn open_module(&mut self, path: &Path, recorded_inode: u64) -> Module {
        let replaced = recorded_inode != 0
            && std::fs::metadata(path).is_ok_and(|md| md.ino() != recorded_inode);
        let name = path.to_string_lossy().into_owned();
        // The file to read: the one at the path, or the kept copy of the
        // recorded module, or none.
        let (file, file_state) = match self.recorded.get(&name) {
            None => (path.to_path_buf(), ModuleFileState::Unchecked),
            Some(r) => match identity::choose(r, path) {
                Ok(chosen) => chosen,
                Err(state) => {
                    let (recorded, found) = match &state {
                        ModuleFileState::Mismatch { recorded, found } => {
                            (recorded.clone(), found.clone())
                        }
                        _ => Default::default(),
                    };
                    return Module {
                        path: name.clone(),
                        data: Err(ModuleError::Mismatch {
                            path: name,
                            recorded,
                            found,
                        }),
                        debug_file: None,
                        replaced,
                        code_lookups: 0,
                        data_lookups: 0,
                        file_state: state,
                    };
                }
            },
        };
        let opened = match Opened::open(&file) {
            Ok(o) => o,
            Err(e) => {
                return Module {
                    path: name,
                    data: Err(e.into()),
                    debug_file: None,
                    replaced,
                    code_lookups: 0,
                    data_lookups: 0,
                    file_state,
                }
            }
        };
        let debug = if opened.has_dwarf() {
            None
        } else {
            debugfind::find_debug_file(path, &opened.ids(), &self.opts, &mut self.search)
        };
        // The file holding the DWARF, and its dwz supplementary file if any.
        let (dwarf_holder, dwarf_path) = match &debug {
            Some((o, p)) => (o, p.clone()),
            None => (&opened, path.to_path_buf()),
        };
        let sup = dwarf_holder
            .debugaltlink()
            .and_then(|(link, id)| debugfind::find_sup_file(&dwarf_path, &link, &id, &self.opts));
        let mut data = elf::build_module(
            &opened,
            debug.as_ref().map(|(o, p)| (o, p.clone())),
            &file,
            sup.as_ref(),
        );
        if data.dwarf.is_none() && debug.is_none() {
            // Say where we looked, so a report can suggest a fix.
            let debuginfod = if !self.opts.debuginfod {
                DebuginfodUse::Disabled
            } else if self.opts.debuginfod_urls.is_some() {
                DebuginfodUse::Tried
            } else {
                DebuginfodUse::NoUrls
            };
            data.dwarf_problem = Some(DwarfProblem::NoDebugFile {
                module: path.to_path_buf(),
                build_id: data.build_id.as_deref().map(debugfind::hex),
                debug_dirs: self.opts.debug_dirs.clone(),
                debuginfod,
            });
        }
        let debug_file = data.dwarf.as_ref().map(|d| d.file.clone());
        Module {
            path: name,
            data: Ok(data),
            debug_file,
            replaced,
            code_lookups: 0,
            data_lookups: 0,
            file_state,
        }
    }
}

/// Demangles C++ (`_Z`) and Rust (`_R`, legacy `_ZN..E`) names; others are
/// returned unchanged.
/// Demangles a symbol-table name: only names mangled by the Itanium C++
/// ABI (`_Z…`, also legacy Rust) or Rust's v0 scheme (`_R…`) are
/// demangled. Any other name is a C name and kept as it is: a C mutex
/// named `Pc` is not the C++ type code for `char*`, nor `i` an `int`.
pub fn demangle(name: &str) -> String {
    if name.starts_with("_Z") || name.starts_with("_R") {
        addr2line::demangle_auto(Cow::Borrowed(name), None).into_owned()
    } else {
        name.to_string()
    }
}

/// Looks up the code at ELF virtual address `vaddr` (a return address) in a
/// module: DWARF at `vaddr − 1`, else the symbol table.
fn lookup_code(data: &ModuleData, vaddr: u64) -> Resolved {
    let probe = vaddr.saturating_sub(1);
    let sym = data.functions.covering_code(probe);
    let sym_name = sym.map(|s| demangle(&s.name));
    let function_offset = sym.map(|s| vaddr - s.addr);
    if let Some(dwarf) = &data.dwarf {
        let frames = match dwarf.context().map(|ctx| dwarf_frames(ctx, probe, true)) {
            Some(Ok(f)) => f,
            // A split-DWARF `.dwo` was loaded but could not be read: use the
            // skeleton units alone.
            Some(Err(DwoFailed)) => dwarf
                .skeleton_only()
                .and_then(|ctx| dwarf_frames(ctx, probe, false).ok().flatten()),
            // released, and the DWARF could not be loaded again
            None => None,
        };
        if let Some(frames) = frames {
            let mut frames = frames.into_iter();
            if let Some(inner) = frames.next() {
                let inlined_into: Vec<InlinedFrame> = frames.collect();
                let function = inner.function.or_else(|| {
                    if inlined_into.is_empty() {
                        sym_name.clone()
                    } else {
                        None
                    }
                });
                return Resolved {
                    function,
                    function_offset,
                    file: inner.file,
                    line: inner.line,
                    column: inner.column,
                    inlined_into,
                    debug: DebugInfoSource::Dwarf,
                };
            }
        }
    }
    Resolved {
        debug: if sym_name.is_some() {
            DebugInfoSource::SymbolTable
        } else {
            DebugInfoSource::None
        },
        function: sym_name,
        function_offset,
        file: None,
        line: None,
        column: None,
        inlined_into: Vec::new(),
    }
}

/// A lookup failed after loading a split-DWARF `.dwo` file.
struct DwoFailed;

/// DWARF frames at `probe`, innermost first; `Ok(None)` if DWARF has nothing
/// useful (no function name and no line) for it. `.dwo` files are loaded
/// when `load_dwo` is set; `Err` means a lookup failed after loading one.
fn dwarf_frames(
    ctx: &addr2line::Context<elf::Reader>,
    probe: u64,
    load_dwo: bool,
) -> Result<Option<Vec<InlinedFrame>>, DwoFailed> {
    let mut loaded = false;
    let mut lookup = ctx.find_frames(probe);
    let result = loop {
        match lookup {
            addr2line::LookupResult::Output(r) => break r,
            addr2line::LookupResult::Load { load, continuation } => {
                let dwo = if load_dwo { elf::load_dwo(&load) } else { None };
                loaded |= dwo.is_some();
                lookup = continuation.resume(dwo);
            }
        }
    };
    let mut iter = match result {
        Ok(iter) => iter,
        Err(_) if loaded => return Err(DwoFailed),
        Err(_) => return Ok(None),
    };
    let mut out = Vec::new();
    loop {
        match iter.next() {
            Ok(Some(frame)) => out.push(convert_frame(&frame)),
            Ok(None) => break,
            Err(_) if loaded && out.is_empty() => return Err(DwoFailed),
            Err(_) => break,
        }
    }
    let useful = out.iter().any(|f| f.function.is_some() || f.line.is_some());
    Ok(useful.then_some(out))
}

fn convert_frame(frame: &addr2line::Frame<'_, elf::Reader>) -> InlinedFrame {
    let function = frame
        .function
        .as_ref()
        .and_then(|f| f.demangle().ok().map(Cow::into_owned));
    let (file, line, column) = match &frame.location {
        Some(l) => (
            l.file.map(str::to_string),
            l.line,
            l.column.filter(|&c| c > 0),
        ),
        None => (None, None, None),
    };
    InlinedFrame {
        function,
        file,
        line,
        column,
    }
}

#[cfg(test)]
mod tests {
    use super::demangle;

    /// Regression: short C names were demangled as C++ type codes (a mutex
    /// `Pc` showed as `char*`, a function `i` as `int`, a mutex `m` as
    /// `unsigned long`).
    #[test]
    fn only_mangled_names_are_demangled() {
        for c_name in ["Pc", "i", "m", "queue_lock", "S_", "Z", "main"] {
            assert_eq!(demangle(c_name), c_name);
        }
        assert_eq!(demangle("_Z3fooi"), "foo(int)");
        assert_eq!(demangle("_ZN5cache4lockE"), "cache::lock");
        assert!(demangle("_RNvCs123_4demo4main").contains("demo::main"));
    }
}
