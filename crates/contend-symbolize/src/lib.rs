//! Offline symbolization of recorded addresses.
//!
//! The in-process collector records raw addresses only: lock call sites
//! (return addresses from `__builtin_return_address(0)`) and lock object
//! addresses. After the run, this module turns them into names using the
//! recorded `maps/<pid>.maps` snapshots ([`ProcessMaps`]) and the ELF files
//! they name ([`Symbolizer`]).
//!
//! ```no_run
//! use contend_symbolize::{ProcessMaps, Symbolizer};
//!
//! let maps = ProcessMaps::from_file("contend.data/maps/1234.maps")?;
//! let mut sym = Symbolizer::new(); // share it across all processes
//! let site = sym.resolve_code(&maps, 0x5555_5555_52e2);
//! println!("{}", site.display_short()); // e.g. "worker (queue.c:82)"
//! if let Some(var) = sym.resolve_data(&maps, 0x5555_5555_8100) {
//!     println!("{}", var.display_short()); // e.g. "queue_lock"
//! }
//! for module in sym.modules_without_debug_info() {
//!     eprintln!("no debug information: {module}");
//! }
//! # Ok::<(), contend_symbolize::SymbolizeError>(())
//! ```
//!
//! # Design constraints
//!
//! * **Offline and read-only.** Nothing here touches a live process: modules
//!   are opened by the path recorded in the maps snapshot, so a file rebuilt
//!   or deleted since the run cannot be trusted. When the recording says
//!   what each module was (build ID, or size and modification time, and a
//!   kept copy: [`Symbolizer::set_recorded_modules`]), the file at the path
//!   is used only while it is still that module, else the copy, else
//!   nothing: the module's addresses stay addresses
//!   ([`ModuleFileState`]). Without that, mappings marked ` (deleted)` are
//!   not opened, and a file whose inode differs from the recorded one is
//!   still used but flagged ([`ModuleInfo::replaced`]).
//! * **Return addresses.** A call site is the address *after* the call, which
//!   may already belong to the next source line (or, after a `noreturn` call,
//!   to the next function). File, line and function are therefore looked up
//!   at `return_address − 1`, while [`CodeLocation::address`] and
//!   [`CodeLocation::module_offset`] stay those of the return address.
//! * **Position independence.** Addresses are translated to ELF virtual
//!   addresses (the address space of DWARF and symbol tables) per mapping:
//!   `addr − map.start + map.file_offset` gives the file offset, and the
//!   `PT_LOAD` program header mapping that offset gives the virtual address.
//!   This is right for PIE executables, shared libraries and non-PIE
//!   executables alike, without assuming a layout.
//! * **Degrade, never fail.** Lookups never panic and never return errors:
//!   DWARF (from the module or a separate debug file) is used when present,
//!   else the symbol tables (`.symtab` of the module or of its debug file,
//!   plus `.dynsym`), else the bare `module+offset`
//!   ([`DebugInfoSource`] says which). Modules that could not be opened or
//!   lack DWARF are listed by [`Symbolizer::modules_without_debug_info`] so a
//!   report can say which sites lack debug information.
//! * **Many lookups, few modules.** Each ELF file is opened, memory-mapped
//!   and parsed once per [`Symbolizer`]; DWARF is parsed lazily per
//!   compilation unit by `addr2line`; every resolved (module, address) pair
//!   is cached, so repeated call sites cost one hash lookup after a binary
//!   search in the maps snapshot.
//! * **Separate debug information** is found by build ID under
//!   `<debug_dir>/.build-id/`, by `.gnu_debuglink`, in the debuginfod client
//!   cache and, when the user configured `DEBUGINFOD_URLS`, through
//!   `debuginfod-find` with a timeout. Compressed debug sections
//!   (`SHF_COMPRESSED`, `.zdebug_*`), dwz supplementary files
//!   (`.gnu_debugaltlink`) and split DWARF (`.dwo` files in the compilation
//!   directory) are read. addr2line 0.24 cannot read GCC's DWARF 5 `.dwo`
//!   files; for those the skeleton's line table still gives file and line,
//!   and the symbol table the function.
//!
//! * **Members of variables.** A data address is named by the `STT_OBJECT`
//!   symbol covering it; with DWARF, an address inside an array or a struct
//!   is named by element and member (`stripe_locks[6]`, `table.lock`)
//!   from the variable's type ([`DataSymbol::member`]).
//!
//! Not handled: MiniDebugInfo (`.gnu_debugdata`), DWARF variables without
//! a symbol, thread-local variables, and the `[vdso]` (reported as
//! `[vdso]+offset`).

#![deny(missing_docs)]

mod datatype;
mod debugfind;
mod elf;
mod identity;
mod maps;
mod symbolizer;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub use identity::{ModuleFileState, RecordedModule};
pub use maps::{MalformedLine, Mapping, MapsLineError, Perms, ProcessMaps, Snapshot};
pub use symbolizer::{demangle, ModuleInfo, Symbolizer, SymbolizerOptions};

/// Errors of reading maps files.
///
/// Symbol lookups themselves never fail; problems with modules are reported
/// through [`Symbolizer::modules`] instead.
#[derive(Debug, thiserror::Error)]
pub enum SymbolizeError {
    /// The maps file does not exist (the process may have died before its
    /// collector wrote it).
    #[error("maps file {} is missing", path.display())]
    MapsMissing {
        /// The file that was looked for.
        path: PathBuf,
    },
    /// The maps file exists but could not be read.
    #[error("maps file {} is unreadable: {source}", path.display())]
    MapsUnreadable {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The maps file has content but not a single parseable mapping.
    #[error("maps file {}: malformed line {line}: {reason} ({skipped} malformed line(s), no valid mapping)", path.display())]
    MapsMalformed {
        /// The file.
        path: PathBuf,
        /// 1-based number of the first malformed line.
        line: usize,
        /// What is wrong with that line.
        reason: MapsLineError,
        /// Number of malformed lines in the file.
        skipped: usize,
    },
}

/// Where the information in a [`CodeLocation`] came from, best first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum DebugInfoSource {
    /// DWARF debug information (file, line, inlining; function name).
    Dwarf,
    /// An ELF symbol table (`.symtab` and `.dynsym`): function name only.
    SymbolTable,
    /// Nothing: only the module and offset are known (or not even the module).
    None,
}

/// An enclosing frame of an inlined call site (see
/// [`CodeLocation::inlined_into`]).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct InlinedFrame {
    /// Demangled name of the enclosing function.
    pub function: Option<String>,
    /// Source file of the place in that function where the inner function
    /// was inlined (path as recorded in DWARF).
    pub file: Option<String>,
    /// 1-based line of that place.
    pub line: Option<u32>,
    /// 1-based column of that place, when recorded.
    pub column: Option<u32>,
}

/// The symbolized form of one code address (a lock call site).
///
/// File, line and function describe the *call instruction*
/// (`return_address − 1`); `address` and `module_offset` are those of the
/// return address itself.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct CodeLocation {
    /// The return address as recorded (in the traced process).
    pub address: u64,
    /// Path of the mapped module (as recorded in the maps snapshot), or its
    /// pseudo name (`[vdso]`, `[anon:...]`); `None` if no mapping covers the
    /// address or the mapping is anonymous.
    pub module: Option<String>,
    /// Offset of the return address in the module. When the module's ELF
    /// headers could be read this is the **ELF virtual address** (what
    /// `addr2line -e module`, symbol tables and DWARF use; for a PIE or
    /// shared library, the offset from the load base). When the module could
    /// not be read it is the **file offset** `address − map.start +
    /// map.file_offset`; for pseudo mappings and anonymous memory it is
    /// `address − map.start`; with no mapping it is the address itself.
    pub module_offset: u64,
    /// Demangled name of the function containing the call (with DWARF: the
    /// innermost, possibly inlined, function; see `inlined_into`).
    pub function: Option<String>,
    /// Bytes from the start of the function's symbol to the return address,
    /// when a covering symbol-table entry exists.
    pub function_offset: Option<u64>,
    /// Source file of the call (full path as recorded in DWARF).
    pub file: Option<String>,
    /// 1-based source line of the call.
    pub line: Option<u32>,
    /// 1-based source column of the call, when recorded.
    pub column: Option<u32>,
    /// When the call lies in inlined code: the enclosing frames, innermost
    /// first, ending with the real (not inlined) function; empty otherwise.
    ///
    /// Choice: `function`, `file` and `line` always describe the same,
    /// innermost frame (the inlined function and the line inside it), so the
    /// three agree with the source; the physical function that appears in
    /// stack traces is the last element here.
    pub inlined_into: Vec<InlinedFrame>,
    /// Where the information came from.
    pub debug: DebugInfoSource,
}

impl CodeLocation {
    /// A location knowing nothing but the address (and maybe the module).
    pub fn bare(address: u64, module: Option<String>, module_offset: u64) -> CodeLocation {
        CodeLocation {
            address,
            module,
            module_offset,
            function: None,
            function_offset: None,
            file: None,
            line: None,
            column: None,
            inlined_into: Vec::new(),
            debug: DebugInfoSource::None,
        }
    }

    /// The physical (outermost, not inlined) function name: the last of
    /// `inlined_into` if any, else `function`.
    pub fn outer_function(&self) -> Option<&str> {
        match self.inlined_into.last() {
            Some(f) => f.function.as_deref(),
            None => self.function.as_deref(),
        }
    }

    /// File name of the module (last path component), if any.
    pub fn module_name(&self) -> Option<&str> {
        self.module.as_deref().map(basename)
    }

    /// A compact one-line form for tables:
    /// * `worker (queue.c:82)` with function and line (file name only);
    /// * `libfoo.so:func+0x1c` with a function but no line (symbol table);
    /// * `queue.c:82 (prog)` with a line but no function;
    /// * `memcached+0x1a2b3` with only the module (`module_offset`, hex);
    /// * `0x7f12...` with nothing at all.
    pub fn display_short(&self) -> String {
        match (&self.function, &self.file, self.line) {
            (Some(func), Some(file), Some(line)) => format!("{func} ({}:{line})", basename(file)),
            (Some(func), _, _) => {
                let mut s = match self.module_name() {
                    Some(m) => format!("{m}:{func}"),
                    None => func.clone(),
                };
                if let Some(off) = self.function_offset {
                    s.push_str(&format!("+{off:#x}"));
                }
                s
            }
            (None, Some(file), Some(line)) => match self.module_name() {
                Some(m) => format!("{}:{line} ({m})", basename(file)),
                None => format!("{}:{line}", basename(file)),
            },
            _ => match self.module_name() {
                Some(m) => format!("{m}+{:#x}", self.module_offset),
                None => format!("{:#x}", self.address),
            },
        }
    }
}

impl std::fmt::Display for CodeLocation {
    /// Same as [`CodeLocation::display_short`].
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.display_short())
    }
}

/// A global or static variable containing a data address (a lock object).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct DataSymbol {
    /// Demangled variable name (e.g. `queue_lock`, `ns::Queue::lock_`).
    pub name: String,
    /// Bytes from the start of the variable to the address (non-zero for a
    /// lock inside a struct or array).
    pub offset: u64,
    /// Size of the variable in bytes, from the symbol table (0 if unknown).
    pub size: u64,
    /// Path of the module defining the variable.
    pub module: String,
    /// The element or member of the variable the address lies in, from
    /// DWARF types: `[6]` of `stripe_locks`, `.lock` of `table`,
    /// `.shards[2].mu`; `None` without DWARF, or when the address is the
    /// variable itself or a lock type (see [`Symbolizer::resolve_data`]).
    pub member: Option<String>,
    /// Bytes from the start of that member to the address (0 when the
    /// address is the member itself).
    pub member_offset: u64,
}

impl DataSymbol {
    /// `name` or `name+0x10` (offset in hex when non-zero); with a member
    /// `stripe_locks[6]`, `table.lock` (and `+0x…` if the address is
    /// inside that member rather than at its start).
    pub fn display_short(&self) -> String {
        match &self.member {
            Some(m) if self.member_offset == 0 => format!("{}{m}", self.name),
            Some(m) => format!("{}{m}+{:#x}", self.name, self.member_offset),
            None if self.offset == 0 => self.name.clone(),
            None => format!("{}+{:#x}", self.name, self.offset),
        }
    }
}

/// The GNU build ID (contents of the `NT_GNU_BUILD_ID` note, usually 20
/// bytes) of the ELF file at `path`; `None` if the file cannot be read, is
/// not ELF or has no build ID.
pub fn build_id(path: impl AsRef<Path>) -> Option<Vec<u8>> {
    elf::read_build_id(path.as_ref())
}

/// Lowercase hexadecimal form of a build ID (as used in `.build-id/` paths
/// and by debuginfod).
pub fn build_id_hex(id: &[u8]) -> String {
    debugfind::hex(id)
}

fn basename(p: &str) -> &str {
    p.rsplit('/').next().unwrap_or(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "\
# snapshot 0 1000
5581a000-5581b000 r--p 00000000 08:01 1234                       /opt/app/bin/server
5581b000-5581d000 r-xp 00001000 08:01 1234                       /opt/app/bin/server
5581d000-5581e000 rw-p 00003000 08:01 1234                       /opt/app/bin/server
5581e000-55820000 rw-p 00000000 00:00 0 
55821000-55842000 rw-p 00000000 00:00 0                          [heap]
7f0000000000-7f0000001000 r-xp 00000000 08:01 99                 /usr/lib/libold.so (deleted)
7ffd00000000-7ffd00002000 rw-p 00000000 00:00 0                          [stack]
# snapshot 1 2000
7f0000000000-7f0000002000 r-xp 00000000 08:01 77                 /usr/lib/lib with space.so
";

    #[test]
    fn parses_snapshots_and_fields() {
        let m = ProcessMaps::parse(SAMPLE);
        assert!(m.malformed.is_empty(), "{:?}", m.malformed);
        assert_eq!(m.snapshots.len(), 2);
        assert_eq!(m.snapshots[0].index, 0);
        assert_eq!(m.snapshots[0].monotonic_ns, Some(1000));
        assert_eq!(m.snapshots[1].index, 1);
        assert_eq!(m.snapshots[0].mappings.len(), 7);
        let text = &m.snapshots[0].mappings[1];
        assert_eq!(text.start, 0x5581b000);
        assert_eq!(text.end, 0x5581d000);
        assert_eq!(text.file_offset, 0x1000);
        assert_eq!(text.perms.to_string(), "r-xp");
        assert!(text.perms.exec && !text.perms.write && !text.perms.shared);
        assert_eq!(text.inode, 1234);
        assert_eq!(text.dev, "08:01");
        assert_eq!(text.path.as_deref(), Some("/opt/app/bin/server"));
        assert!(text.is_file_backed());
        let anon = &m.snapshots[0].mappings[3];
        assert_eq!(anon.path, None);
        assert!(anon.is_anonymous());
        let heap = &m.snapshots[0].mappings[4];
        assert_eq!(heap.path.as_deref(), Some("[heap]"));
        assert!(!heap.is_file_backed() && !heap.is_anonymous());
        let old = &m.snapshots[0].mappings[5];
        assert!(old.deleted);
        assert_eq!(old.path.as_deref(), Some("/usr/lib/libold.so"));
    }

    #[test]
    fn latest_covering_snapshot_wins() {
        let m = ProcessMaps::parse(SAMPLE);
        // Covered by both snapshots: the later one wins.
        let hit = m.find(0x7f0000000800).unwrap();
        assert_eq!(hit.path.as_deref(), Some("/usr/lib/lib with space.so"));
        // Only in the later snapshot.
        assert_eq!(m.find(0x7f0000001800).unwrap().inode, 77);
        // Only in the earlier snapshot.
        assert_eq!(m.find(0x5581b123).unwrap().inode, 1234);
        assert_eq!(m.locate(0x5581b123), Some((0, 1)));
        // Gaps and ends are exclusive.
        assert!(m.find(0x55820000).is_none());
        assert!(m.find(0x5581a000 - 1).is_none());
        assert!(m.find(0).is_none());
        assert!(m.find(u64::MAX).is_none());
    }

    #[test]
    fn headerless_text_is_one_snapshot() {
        let m = ProcessMaps::parse(
            "00400000-00401000 r-xp 00000000 fd:00 5 /bin/x\n00600000-00601000 rw-p 00000000 fd:00 5 /bin/x\n",
        );
        assert_eq!(m.snapshots.len(), 1);
        assert_eq!(m.snapshots[0].index, 0);
        assert_eq!(m.snapshots[0].monotonic_ns, None);
        assert_eq!(m.mapping_count(), 2);
    }

    #[test]
    fn malformed_lines_are_counted_and_skipped() {
        let text = "\
# snapshot 0 5
00400000-00401000 r-xp 00000000 fd:00 5 /bin/x
garbage
00500000 r-xp 00000000 fd:00 5 /bin/y
00600000-00601000 rwzp 00000000 fd:00 5 /bin/x
00700000-00601000 r--p 00000000 fd:00 5 /bin/x
00800000-00801000 r--p 0000zz00 fd:00 5 /bin/x
00900000-00901000 r--p 00000000 fd00 5 /bin/x
00a00000-00a01000 r--p 00000000 fd:00 five /bin/x
# snapshot seven
00b00000-00b0
";
        let m = ProcessMaps::parse(text);
        let lines: Vec<usize> = m.malformed.iter().map(|l| l.line).collect();
        assert_eq!(lines, vec![3, 4, 5, 6, 7, 8, 9, 10, 11]);
        assert_eq!(m.mapping_count(), 1);
        // The bad header still starts a new snapshot, numbered after the last.
        assert_eq!(m.snapshots.len(), 2);
        assert_eq!(m.snapshots[1].index, 1);
        assert!(m.malformed[0].to_string().contains("malformed line 3"));
        assert_eq!(m.malformed[0].reason, MapsLineError::Columns { found: 1 });
        assert_eq!(
            m.malformed[3].reason,
            MapsLineError::EndBelowStart {
                start: 0x700000,
                end: 0x601000
            }
        );
        assert_eq!(
            m.malformed[3].to_string(),
            "malformed line 6: end 0x601000 below start 0x700000"
        );
        assert_eq!(
            m.malformed[7].reason,
            MapsLineError::BadSnapshotHeader("# snapshot seven".into())
        );
        assert_eq!(
            m.malformed[7].reason.to_string(),
            "bad snapshot header \"# snapshot seven\""
        );
    }

    #[test]
    fn perms_roundtrip() {
        for s in ["r-xp", "rw-s", "---p", "rwxp"] {
            assert_eq!(Perms::parse(s).unwrap().to_string(), s);
        }
        assert!(Perms::parse("rwx").is_none());
        assert!(Perms::parse("rwxq").is_none());
        assert!(Perms::parse("xr-p").is_none());
    }

    #[test]
    fn display_short_forms() {
        let mut loc =
            CodeLocation::bare(0x5555_0000_1234, Some("/usr/bin/memcached".into()), 0x1a2b3);
        assert_eq!(loc.display_short(), "memcached+0x1a2b3");
        loc.function = Some("do_item_get".into());
        loc.function_offset = Some(0x1c);
        loc.debug = DebugInfoSource::SymbolTable;
        assert_eq!(loc.display_short(), "memcached:do_item_get+0x1c");
        loc.file = Some("/src/queue.c".into());
        loc.line = Some(82);
        loc.function = Some("worker".into());
        assert_eq!(loc.display_short(), "worker (queue.c:82)");
        assert_eq!(
            CodeLocation::bare(0xabc, None, 0xabc).display_short(),
            "0xabc"
        );
        let mut d = DataSymbol {
            name: "locks".into(),
            offset: 0x28,
            size: 400,
            module: "/bin/x".into(),
            member: None,
            member_offset: 0,
        };
        assert_eq!(d.display_short(), "locks+0x28");
        d.member = Some("[1]".into());
        assert_eq!(d.display_short(), "locks[1]");
        d.member_offset = 4;
        assert_eq!(d.display_short(), "locks[1]+0x4");
    }

    #[test]
    fn maps_file_errors_name_the_file() {
        let dir =
            std::env::temp_dir().join(format!("contend-symbolize-unit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let missing = dir.join("123.maps");
        let e = ProcessMaps::from_file(&missing).unwrap_err();
        assert!(matches!(e, SymbolizeError::MapsMissing { .. }));
        assert!(e.to_string().contains("123.maps"), "{e}");
        let bad = dir.join("124.maps");
        std::fs::write(&bad, "# snapshot 0 1\nnot a mapping\n").unwrap();
        let e = ProcessMaps::from_file(&bad).unwrap_err();
        assert!(
            matches!(e, SymbolizeError::MapsMalformed { line: 2, .. }),
            "{e:?}"
        );
        assert!(
            e.to_string().contains("124.maps") && e.to_string().contains("line 2"),
            "{e}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
