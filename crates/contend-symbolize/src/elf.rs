//! Reading one ELF module: load segments, symbol tables, DWARF.
//!
//! Files are memory-mapped and never copied; uncompressed DWARF sections are
//! handed to gimli as slices of the mapping ([`SectionBytes`]), compressed
//! ones (`SHF_COMPRESSED` or GNU `.zdebug_*`) are inflated once into memory.

use std::fmt;
use std::fs::File;
use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use memmap2::Mmap;
use object::{
    CompressionFormat, Object, ObjectSection, ObjectSegment, ObjectSymbol, SectionKind,
    SegmentFlags, SymbolKind,
};

use super::maps::Mapping;

/// Bytes of an opened file: a read-only memory map, or a heap buffer for
/// files that cannot be mapped and for inflated compressed sections.
#[derive(Clone)]
enum Backing {
    Map(Arc<Mmap>),
    /// A `Vec` kept as it was made: `Arc<[u8]>` from a `Vec` would copy it
    /// (an inflated `.debug_info` twice in memory for a moment: libc's is
    /// 5.8 MB).
    Heap(Arc<Vec<u8>>),
}

impl Deref for Backing {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Backing::Map(m) => m,
            Backing::Heap(h) => h.as_slice(),
        }
    }
}

/// A byte range of a [`Backing`]; the buffer type of the gimli reader.
#[derive(Clone)]
pub(crate) struct SectionBytes {
    backing: Backing,
    start: usize,
    len: usize,
}

impl SectionBytes {
    fn empty() -> SectionBytes {
        SectionBytes {
            backing: Backing::Heap(Arc::new(Vec::new())),
            start: 0,
            len: 0,
        }
    }
}

impl Deref for SectionBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.backing[self.start..self.start + self.len]
    }
}

impl fmt::Debug for SectionBytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SectionBytes({} bytes)", self.len)
    }
}

// SAFETY: the bytes live in an `Arc`ed memory map or heap buffer that is
// never mutated or moved while any clone exists, so the address returned by
// `deref` is stable across moves and clones of `SectionBytes`.
unsafe impl gimli::StableDeref for SectionBytes {}
// SAFETY: as above; clones share the same `Arc` and thus the same address.
unsafe impl gimli::CloneStableDeref for SectionBytes {}

/// The DWARF reader type used throughout.
pub(crate) type Reader = gimli::EndianReader<gimli::RunTimeEndian, SectionBytes>;

/// Why a file could not be opened as an ELF module.
///
/// The underlying error is part of the message (and not also a
/// [`std::error::Error::source`], so that a chain of errors does not
/// repeat it).
#[derive(Debug, thiserror::Error)]
pub(crate) enum OpenError {
    /// `open(2)` failed.
    #[error("cannot open {}: {error}", path.display())]
    Open {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        error: std::io::Error,
    },
    /// `fstat(2)` failed.
    #[error("cannot stat {}: {error}", path.display())]
    Stat {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        error: std::io::Error,
    },
    /// A device file (a `/dev/zero` mapping) or a directory: not a module.
    #[error("{} is not a regular file", path.display())]
    NotARegularFile {
        /// The path.
        path: PathBuf,
    },
    /// The file could neither be memory-mapped nor read.
    #[error("cannot read {}: {error}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error of the read.
        error: std::io::Error,
    },
    /// The file was read but is not ELF.
    #[error("{}: {error}", path.display())]
    NotElf {
        /// The file.
        path: PathBuf,
        /// What it is instead.
        error: NotElf,
    },
}

/// Bytes that `object` cannot parse as an ELF file.
#[derive(Debug, thiserror::Error)]
pub(crate) enum NotElf {
    /// Not an object file `object` knows at all.
    #[error("not an ELF file ({0})")]
    Unparsable(object::Error),
    /// An object file of another format (PE, Mach-O, ...).
    #[error("not an ELF file ({0:?})")]
    OtherFormat(object::BinaryFormat),
}

/// Why the DWARF of an opened file could not be loaded.
#[derive(Debug, thiserror::Error)]
pub(crate) enum DwarfError {
    /// The file holding the DWARF is not ELF.
    #[error(transparent)]
    NotElf(#[from] NotElf),
    /// The file range of a (possibly compressed) section cannot be read.
    #[error("section {name}: {error}")]
    SectionRange {
        /// Section name.
        name: String,
        /// What `object` reported.
        error: object::Error,
    },
    /// A section offset does not fit in `usize`.
    #[error("section {name}: offset too large")]
    OffsetTooLarge {
        /// Section name.
        name: String,
    },
    /// A section size does not fit in `usize`.
    #[error("section {name}: size too large")]
    SizeTooLarge {
        /// Section name.
        name: String,
    },
    /// A section's file range extends past the end of the file.
    #[error("section {name} extends past the end of the file")]
    PastEnd {
        /// Section name.
        name: String,
    },
    /// A compressed section could not be inflated.
    #[error("section {name}: cannot decompress: {error}")]
    Decompress {
        /// Section name.
        name: String,
        /// What `object` reported.
        error: object::Error,
    },
    /// gimli or addr2line refused the DWARF.
    #[error("{0}")]
    Dwarf(gimli::Error),
}

/// Opens and memory-maps a file.
fn open_backing(path: &Path) -> Result<Backing, OpenError> {
    let file = File::open(path).map_err(|error| OpenError::Open {
        path: path.to_path_buf(),
        error,
    })?;
    // Device files (`/dev/zero` mappings) and directories are not modules.
    let meta = file.metadata().map_err(|error| OpenError::Stat {
        path: path.to_path_buf(),
        error,
    })?;
    if !meta.is_file() {
        return Err(OpenError::NotARegularFile {
            path: path.to_path_buf(),
        });
    }
    // SAFETY: the map is read-only. If another process truncates the file
    // while it is mapped, reads could fault; this is the usual trade-off of
    // debuggers and symbolizers (addr2line's own loader does the same).
    match unsafe { Mmap::map(&file) } {
        Ok(m) => Ok(Backing::Map(Arc::new(m))),
        Err(_) => std::fs::read(path)
            .map(|v| Backing::Heap(Arc::new(v)))
            .map_err(|error| OpenError::Read {
                path: path.to_path_buf(),
                error,
            }),
    }
}

/// A `PT_LOAD` program header.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Segment {
    /// `p_vaddr`.
    pub vaddr: u64,
    /// `p_memsz`.
    pub memsz: u64,
    /// `p_offset`.
    pub offset: u64,
    /// `p_filesz`.
    pub filesz: u64,
    /// `PF_X` set.
    pub exec: bool,
}

/// A defined symbol: start address (ELF virtual address), size, raw name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Sym {
    pub addr: u64,
    pub size: u64,
    pub name: String,
    /// End of the symbol's section (for zero-sized symbols; else `u64::MAX`).
    pub section_end: u64,
}

/// How far past a zero-sized function symbol an address is still
/// attributed to it (when it is the nearest preceding symbol).
pub(crate) const UNSIZED_SPAN: u64 = 4096;

/// Sorted symbols with a "covering" lookup.
#[derive(Debug, Default)]
pub(crate) struct SymbolTable {
    syms: Vec<Sym>,
}

impl SymbolTable {
    fn finish(&mut self) {
        self.syms
            .sort_by(|a, b| a.addr.cmp(&b.addr).then(b.size.cmp(&a.size)));
        self.syms
            .dedup_by(|a, b| a.addr == b.addr && a.size == b.size && a.name == b.name);
    }

    pub fn len(&self) -> usize {
        self.syms.len()
    }

    /// The symbol with the highest start `<= addr` whose `[addr, addr+size)`
    /// covers `addr` (zero-sized symbols only match exactly). Looks back over
    /// a few preceding symbols to find an enclosing one past nested/alias
    /// entries.
    pub fn covering(&self, addr: u64) -> Option<&Sym> {
        let end = self.syms.partition_point(|s| s.addr <= addr);
        self.syms[..end]
            .iter()
            .rev()
            .take(64)
            .find(|s| addr < s.addr.saturating_add(s.size.max(1)))
    }

    /// For code: like [`SymbolTable::covering`], but when no sized symbol
    /// covers `addr`, a zero-sized symbol (hand-written assembly without
    /// `.size`, `_init`) that is the nearest preceding symbol is taken to
    /// extend up to [`UNSIZED_SPAN`] bytes, within its section.
    pub fn covering_code(&self, addr: u64) -> Option<&Sym> {
        self.covering(addr).or_else(|| {
            let end = self.syms.partition_point(|s| s.addr <= addr);
            let s = &self.syms[..end].last()?;
            let limit = s.section_end.min(s.addr.saturating_add(UNSIZED_SPAN));
            (s.size == 0 && addr < limit).then_some(*s)
        })
    }
}

/// The DWARF of a module (from the module itself or a separate debug file).
pub(crate) struct Dwarf {
    /// The module's addr2line context: built when the module is opened (so
    /// that bad DWARF is found then), dropped by [`Dwarf::release`] and
    /// built again by the next lookup ([`Dwarf::context`]; `None` inside
    /// when that fails).
    ctx: std::cell::OnceCell<Option<addr2line::Context<Reader>>>,
    /// Times `ctx` was built: 1 at opening, one more per rebuild after a
    /// release.
    pub context_builds: std::cell::Cell<u64>,
    /// The file the DWARF was read from.
    pub file: PathBuf,
    /// The opened DWARF file and its dwz supplementary file, kept to build
    /// `skeleton_only` on demand.
    src: Opened,
    sup: Option<Opened>,
    /// A second context that never loads split-DWARF `.dwo` files, built the
    /// first time a lookup through a loaded `.dwo` fails (addr2line 0.24
    /// cannot read some GCC DWARF 5 `.dwo` files); the skeleton units still
    /// give file and line.
    skeleton_only: std::cell::OnceCell<Option<addr2line::Context<Reader>>>,
    /// The module's variables by address, for member names, built the
    /// first time a data address needs them.
    types: std::cell::OnceCell<Option<super::datatype::TypeIndex>>,
}

impl Dwarf {
    /// The module's context, built again if it was released; `None` when
    /// the DWARF cannot be loaded again.
    pub fn context(&self) -> Option<&addr2line::Context<Reader>> {
        self.ctx
            .get_or_init(|| {
                self.context_builds.set(self.context_builds.get() + 1);
                load_context(&self.src, self.sup.as_ref()).ok()
            })
            .as_ref()
    }

    /// Drops the contexts and the type index, the bulk of a module's
    /// memory (for glibc's debug information, tens of MB of parsed unit
    /// headers, abbreviations and file tables); they are built again when
    /// next needed. The file's pages read while building them (all of a compressed
    /// section, which is inflated whole) leave the process's resident
    /// memory too: memcached's 4 MB debug file stayed resident through the
    /// analyses after the lock analysis's naming.
    pub fn release(&mut self) {
        self.ctx.take();
        self.skeleton_only.take();
        self.types.take();
        self.src.drop_resident_pages();
        if let Some(sup) = &self.sup {
            sup.drop_resident_pages();
        }
    }

    /// The index of the module's variables and their types
    /// ([`super::datatype`]); `None` if the DWARF cannot be loaded again.
    pub fn type_index(&self) -> Option<&super::datatype::TypeIndex> {
        self.types
            .get_or_init(|| {
                let mut dwarf = self.src.load_dwarf(false).ok()?;
                if let Some(sup) = &self.sup {
                    sup.load_as_sup(&mut dwarf, true).ok()?;
                }
                dwarf.populate_abbreviations_cache(gimli::AbbreviationsCacheStrategy::Duplicates);
                Some(super::datatype::TypeIndex::build(dwarf))
            })
            .as_ref()
    }

    /// The context that skips `.dwo` files (see `skeleton_only`).
    pub fn skeleton_only(&self) -> Option<&addr2line::Context<Reader>> {
        self.skeleton_only
            .get_or_init(|| load_context(&self.src, self.sup.as_ref()).ok())
            .as_ref()
    }
}

/// Everything read from one module, kept for the life of the symbolizer.
pub(crate) struct ModuleData {
    pub build_id: Option<Vec<u8>>,
    pub segments: Vec<Segment>,
    pub functions: SymbolTable,
    pub objects: SymbolTable,
    /// Where `functions` came from (`.symtab` of the module or of its debug
    /// file, else `.dynsym`).
    pub dwarf: Option<Dwarf>,
    /// Why no DWARF could be used, when `dwarf` is `None`.
    pub dwarf_problem: Option<DwarfProblem>,
}

/// Why a module has no usable DWARF (shown to users as
/// [`crate::ModuleInfo::problem`]).
#[derive(Debug, thiserror::Error)]
pub(crate) enum DwarfProblem {
    /// Neither the module nor its separate debug file has DWARF.
    #[error("no DWARF debug information found")]
    NotFound,
    /// DWARF was found but could not be loaded.
    #[error("{}: bad DWARF: {error}", file.display())]
    Bad {
        /// The file the DWARF is in.
        file: PathBuf,
        /// What is wrong with it.
        error: DwarfError,
    },
    /// The module has no DWARF of its own and no separate debug file was
    /// found; says where the search looked, so a report can suggest a fix.
    #[error(
        "no DWARF in {} and no separate debug file found ({}; debug dirs [{}]; {debuginfod})",
        module.display(),
        build_id.as_deref().map_or("no build ID".to_string(), |b| format!("build ID {b}")),
        debug_dirs.iter().map(|d| d.display().to_string()).collect::<Vec<_>>().join(", ")
    )]
    NoDebugFile {
        /// The module.
        module: PathBuf,
        /// Its build ID (lowercase hex), if it has one.
        build_id: Option<String>,
        /// The debug directories searched.
        debug_dirs: Vec<PathBuf>,
        /// How far debuginfod was used.
        debuginfod: DebuginfodUse,
    },
}

/// How far the debug-file search used debuginfod.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DebuginfodUse {
    /// Turned off in the options.
    Disabled,
    /// `debuginfod-find` was run (or its cache looked at, with URLs set).
    Tried,
    /// Only the client cache was looked at: no server URLs.
    NoUrls,
}

impl fmt::Display for DebuginfodUse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DebuginfodUse::Disabled => "debuginfod disabled",
            DebuginfodUse::Tried => "debuginfod tried",
            DebuginfodUse::NoUrls => "DEBUGINFOD_URLS not set",
        })
    }
}

/// What the debug-file search needs to know about a module.
pub(crate) struct ModuleIds {
    pub build_id: Option<Vec<u8>>,
    pub debuglink: Option<(String, u32)>,
}

/// An opened ELF file (cheap to clone: shares its mapping).
#[derive(Clone)]
pub(crate) struct Opened {
    backing: Backing,
}

impl Opened {
    pub fn open(path: &Path) -> Result<Opened, OpenError> {
        let backing = open_backing(path)?;
        let o = Opened { backing };
        o.parse().map_err(|error| OpenError::NotElf {
            path: path.to_path_buf(),
            error,
        })?;
        Ok(o)
    }

    /// Gives the pages of the file read so far back to the kernel (they
    /// stay in the page cache; a later read maps them again). For a file
    /// read into memory instead, nothing.
    fn drop_resident_pages(&self) {
        if let Backing::Map(m) = &self.backing {
            // SAFETY: the map is a read-only private mapping this process
            // never writes, so it holds no private copies: dropping its
            // pages loses nothing, and reading them again gives the file's
            // bytes, as the first read did (the assumption every read of
            // the map already makes: that the file is not changed in place
            // while it is open).
            let _ = unsafe { m.unchecked_advise(memmap2::UncheckedAdvice::DontNeed) };
        }
    }

    fn parse(&self) -> Result<object::File<'_>, NotElf> {
        let file = object::File::parse(&*self.backing).map_err(NotElf::Unparsable)?;
        if file.format() != object::BinaryFormat::Elf {
            return Err(NotElf::OtherFormat(file.format()));
        }
        Ok(file)
    }

    pub fn ids(&self) -> ModuleIds {
        let Ok(f) = self.parse() else {
            return ModuleIds {
                build_id: None,
                debuglink: None,
            };
        };
        ModuleIds {
            build_id: f.build_id().ok().flatten().map(<[u8]>::to_vec),
            debuglink: f
                .gnu_debuglink()
                .ok()
                .flatten()
                .map(|(n, crc)| (String::from_utf8_lossy(n).into_owned(), crc)),
        }
    }

    /// `(name, build id)` of the `.gnu_debugaltlink` (dwz supplementary file).
    pub fn debugaltlink(&self) -> Option<(PathBuf, Vec<u8>)> {
        let f = self.parse().ok()?;
        let (name, id) = f.gnu_debugaltlink().ok()??;
        Some((
            PathBuf::from(String::from_utf8_lossy(name).into_owned()),
            id.to_vec(),
        ))
    }

    /// Whether the file carries DWARF line/function information.
    pub fn has_dwarf(&self) -> bool {
        let Ok(f) = self.parse() else { return false };
        f.section_by_name(".debug_info").is_some_and(|s| {
            s.kind() != SectionKind::UninitializedData && s.size() > 0 && s.file_range().is_some()
        })
    }

    /// Whether the file has a `.symtab` with at least one defined symbol.
    pub fn has_symtab(&self) -> bool {
        let Ok(f) = self.parse() else { return false };
        f.symbols().any(|s| s.is_definition())
    }

    pub fn segments(&self) -> Vec<Segment> {
        let Ok(f) = self.parse() else {
            return Vec::new();
        };
        f.segments()
            .map(|s| {
                let (offset, filesz) = s.file_range();
                let exec = match s.flags() {
                    SegmentFlags::Elf { p_flags } => p_flags & object::elf::PF_X != 0,
                    _ => false,
                };
                Segment {
                    vaddr: s.address(),
                    memsz: s.size(),
                    offset,
                    filesz,
                    exec,
                }
            })
            .collect()
    }

    /// Adds the defined function (`functions`) and data object (`objects`)
    /// symbols of `.symtab` (`dynamic == false`) or `.dynsym`.
    pub fn add_symbols(
        &self,
        dynamic: bool,
        functions: &mut SymbolTable,
        objects: &mut SymbolTable,
    ) {
        let Ok(f) = self.parse() else { return };
        let iter: Box<dyn Iterator<Item = object::Symbol<'_, '_>>> = if dynamic {
            Box::new(f.dynamic_symbols())
        } else {
            Box::new(f.symbols())
        };
        for s in iter {
            if !s.is_definition() {
                continue;
            }
            let Ok(name) = s.name() else { continue };
            if name.is_empty() {
                continue;
            }
            let table = match s.kind() {
                SymbolKind::Text => &mut *functions,
                SymbolKind::Data => &mut *objects,
                _ => continue,
            };
            let section_end = if s.size() == 0 {
                s.section_index()
                    .and_then(|i| f.section_by_index(i).ok())
                    .map_or(0, |sec| sec.address().saturating_add(sec.size()))
            } else {
                u64::MAX
            };
            table.syms.push(Sym {
                addr: s.address(),
                size: s.size(),
                name: name.to_string(),
                section_end,
            });
        }
    }

    fn section(&self, f: &object::File<'_>, name: &str) -> Result<SectionBytes, DwarfError> {
        let Some(sec) = f.section_by_name(name) else {
            return Ok(SectionBytes::empty());
        };
        if sec.kind() == SectionKind::UninitializedData || sec.file_range().is_none() {
            return Ok(SectionBytes::empty());
        }
        let name = || name.to_string();
        let range = sec
            .compressed_file_range()
            .map_err(|error| DwarfError::SectionRange {
                name: name(),
                error,
            })?;
        if range.format == CompressionFormat::None {
            let start = usize::try_from(range.offset)
                .map_err(|_| DwarfError::OffsetTooLarge { name: name() })?;
            let len = usize::try_from(range.uncompressed_size)
                .map_err(|_| DwarfError::SizeTooLarge { name: name() })?;
            let fits = matches!(start.checked_add(len), Some(end) if end <= self.backing.len());
            if !fits {
                return Err(DwarfError::PastEnd { name: name() });
            }
            return Ok(SectionBytes {
                backing: self.backing.clone(),
                start,
                len,
            });
        }
        let data = sec
            .uncompressed_data()
            .map_err(|error| DwarfError::Decompress {
                name: name(),
                error,
            })?;
        let len = data.len();
        Ok(SectionBytes {
            backing: Backing::Heap(Arc::new(data.into_owned())),
            start: 0,
            len,
        })
    }

    fn endian(f: &object::File<'_>) -> gimli::RunTimeEndian {
        if f.is_little_endian() {
            gimli::RunTimeEndian::Little
        } else {
            gimli::RunTimeEndian::Big
        }
    }

    /// Loads the DWARF sections (`dwo` selects `.dwo` section names).
    pub fn load_dwarf(&self, dwo: bool) -> Result<gimli::Dwarf<Reader>, DwarfError> {
        self.load_dwarf_sections(dwo, true)
    }

    /// Loads the DWARF sections that name code: [`Opened::load_dwarf`]
    /// without the location lists (`.debug_loc`, `.debug_loclists`), which
    /// say where variables live and which no address-to-line lookup reads.
    /// They are often the largest sections of an optimised build, and
    /// compressed ones would be inflated for nothing (libc 2.36's debug
    /// file: 1.4 MB, 6 ms).
    pub fn load_code_dwarf(&self, dwo: bool) -> Result<gimli::Dwarf<Reader>, DwarfError> {
        self.load_dwarf_sections(dwo, false)
    }

    fn load_dwarf_sections(
        &self,
        dwo: bool,
        locations: bool,
    ) -> Result<gimli::Dwarf<Reader>, DwarfError> {
        let f = self.parse()?;
        let endian = Self::endian(&f);
        gimli::Dwarf::load(|id| -> Result<Reader, DwarfError> {
            let name = if dwo { id.dwo_name() } else { Some(id.name()) };
            let bytes = match name {
                Some(n) if locations || !is_location_list(id) => self.section(&f, n)?,
                _ => SectionBytes::empty(),
            };
            Ok(gimli::EndianReader::new(bytes, endian))
        })
    }

    /// Loads this file's DWARF as the supplementary (dwz) part of `dwarf`;
    /// without its location lists unless `locations` (as
    /// [`Opened::load_code_dwarf`]).
    pub fn load_as_sup(
        &self,
        dwarf: &mut gimli::Dwarf<Reader>,
        locations: bool,
    ) -> Result<(), DwarfError> {
        let f = self.parse()?;
        let endian = Self::endian(&f);
        dwarf.load_sup(|id| -> Result<Reader, DwarfError> {
            let bytes = if locations || !is_location_list(id) {
                self.section(&f, id.name())?
            } else {
                SectionBytes::empty()
            };
            Ok(gimli::EndianReader::new(bytes, endian))
        })
    }

    /// CRC-32 of the whole file, as stored in `.gnu_debuglink`.
    pub fn crc32(&self) -> u32 {
        crc32(&self.backing)
    }
}

impl ModuleData {
    /// ELF virtual address of `addr`, which lies in `map`, a file mapping of
    /// this module: `addr − map.start + map.file_offset` is the file offset,
    /// translated to a virtual address through the `PT_LOAD` header that
    /// maps that offset. `None` if no segment maps that offset.
    pub fn vaddr_of(&self, map: &Mapping, addr: u64) -> Option<u64> {
        let off = addr.checked_sub(map.start)?.checked_add(map.file_offset)?;
        let seg = self.segment_for_offset(map, off)?;
        Some(off - seg.offset + seg.vaddr)
    }

    /// Load bias of the module (runtime address − ELF virtual address),
    /// deduced from one of its file mappings.
    pub fn bias_from(&self, map: &Mapping) -> Option<u64> {
        let vaddr = self.vaddr_of(map, map.start)?;
        Some(map.start.wrapping_sub(vaddr))
    }

    /// Whether a virtual address lies inside some `PT_LOAD` segment's memory
    /// image (`[p_vaddr, p_vaddr + p_memsz)`).
    pub fn vaddr_in_image(&self, vaddr: u64) -> bool {
        self.segments
            .iter()
            .any(|s| s.vaddr <= vaddr && vaddr < s.vaddr.saturating_add(s.memsz))
    }

    fn segment_for_offset(&self, map: &Mapping, off: u64) -> Option<&Segment> {
        let page_down = |x: u64| x & !0xfff;
        let in_file = |s: &&Segment| s.offset <= off && off < s.offset + s.filesz;
        let in_mem = |s: &&Segment| page_down(s.offset) <= off && off < s.offset + s.memsz;
        // Prefer the segment whose executability matches the mapping, then any
        // segment with that offset in its file image, then its memory image
        // (the zero-filled tail of .bss sharing the last file page).
        self.segments
            .iter()
            .filter(in_file)
            .find(|s| s.exec == map.perms.exec)
            .or_else(|| self.segments.iter().find(in_file))
            .or_else(|| {
                self.segments
                    .iter()
                    .filter(in_mem)
                    .find(|s| s.exec == map.perms.exec)
            })
            .or_else(|| self.segments.iter().find(in_mem))
    }
}

/// Builds the per-module data: segments and symbols of `module`, plus those of
/// `debug` (a separate debug file) when given, and DWARF from whichever has it.
pub(crate) fn build_module(
    module: &Opened,
    debug: Option<(&Opened, PathBuf)>,
    module_path: &Path,
    sup: Option<&Opened>,
) -> ModuleData {
    let ids = module.ids();
    let mut functions = SymbolTable::default();
    let mut objects = SymbolTable::default();
    if module.has_symtab() {
        module.add_symbols(false, &mut functions, &mut objects);
    } else if let Some((d, _)) = &debug {
        d.add_symbols(false, &mut functions, &mut objects);
    }
    module.add_symbols(true, &mut functions, &mut objects);
    functions.finish();
    objects.finish();

    let (dwarf_src, dwarf_path) = if module.has_dwarf() {
        (Some(module), module_path.to_path_buf())
    } else if let Some((d, p)) = &debug {
        (d.has_dwarf().then_some(*d), p.clone())
    } else {
        (None, PathBuf::new())
    };
    let (dwarf, dwarf_problem) = match dwarf_src {
        None => (None, Some(DwarfProblem::NotFound)),
        Some(src) => match load_context(src, sup) {
            Ok(ctx) => (
                Some(Dwarf {
                    ctx: std::cell::OnceCell::from(Some(ctx)),
                    context_builds: std::cell::Cell::new(1),
                    file: dwarf_path,
                    src: src.clone(),
                    sup: sup.cloned(),
                    skeleton_only: std::cell::OnceCell::new(),
                    types: std::cell::OnceCell::new(),
                }),
                None,
            ),
            Err(error) => (
                None,
                Some(DwarfProblem::Bad {
                    file: dwarf_path,
                    error,
                }),
            ),
        },
    };
    ModuleData {
        build_id: ids.build_id,
        segments: module.segments(),
        functions,
        objects,
        dwarf,
        dwarf_problem,
    }
}

/// `.debug_loc` and `.debug_loclists`: where variables live, read by the
/// type index, never by an address-to-line lookup
/// ([`Opened::load_code_dwarf`]).
fn is_location_list(id: gimli::SectionId) -> bool {
    matches!(
        id,
        gimli::SectionId::DebugLoc | gimli::SectionId::DebugLocLists
    )
}

fn load_context(
    src: &Opened,
    sup: Option<&Opened>,
) -> Result<addr2line::Context<Reader>, DwarfError> {
    let mut dwarf = src.load_code_dwarf(false)?;
    if let Some(sup) = sup {
        sup.load_as_sup(&mut dwarf, false)?;
    }
    dwarf.populate_abbreviations_cache(gimli::AbbreviationsCacheStrategy::Duplicates);
    addr2line::Context::from_dwarf(dwarf).map_err(DwarfError::Dwarf)
}

/// Loads a split-DWARF `.dwo` file for `load`, or `None`.
pub(crate) fn load_dwo(
    load: &addr2line::SplitDwarfLoad<Reader>,
) -> Option<Arc<gimli::Dwarf<Reader>>> {
    use gimli::Reader as _;
    let mut path = PathBuf::new();
    if let Some(dir) = &load.comp_dir {
        path.push(String::from_utf8_lossy(&dir.to_slice().ok()?).into_owned());
    }
    path.push(String::from_utf8_lossy(&load.path.as_ref()?.to_slice().ok()?).into_owned());
    let opened = Opened::open(&path).ok()?;
    let mut dwarf = opened.load_code_dwarf(true).ok()?;
    let header = dwarf.units().next().ok()??;
    let unit = dwarf.unit(header).ok()?;
    if unit.dwo_id != Some(load.dwo_id) {
        return None;
    }
    dwarf.make_dwo(&load.parent);
    Some(Arc::new(dwarf))
}

/// The GNU build ID (`NT_GNU_BUILD_ID` note) of the ELF file at `path`.
pub(crate) fn read_build_id(path: &Path) -> Option<Vec<u8>> {
    Opened::open(path).ok()?.ids().build_id
}

/// CRC-32 (IEEE 802.3, as used by zlib and `.gnu_debuglink`).
pub(crate) fn crc32(data: &[u8]) -> u32 {
    static TABLE: std::sync::OnceLock<[u32; 256]> = std::sync::OnceLock::new();
    let table = TABLE.get_or_init(|| {
        let mut t = [0u32; 256];
        for (i, e) in t.iter_mut().enumerate() {
            let mut c = i as u32;
            for _ in 0..8 {
                c = if c & 1 != 0 {
                    0xEDB8_8320 ^ (c >> 1)
                } else {
                    c >> 1
                };
            }
            *e = c;
        }
        t
    });
    let mut crc = !0u32;
    for &b in data {
        crc = table[((crc ^ u32::from(b)) & 0xff) as usize] ^ (crc >> 8);
    }
    !crc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32_matches_known_vector() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(crc32(b""), 0);
    }

    #[test]
    fn problems_read_as_before() {
        let p = DwarfProblem::NoDebugFile {
            module: PathBuf::from("/bin/x"),
            build_id: Some("ab12".into()),
            debug_dirs: vec![PathBuf::from("/usr/lib/debug"), PathBuf::from("/d")],
            debuginfod: DebuginfodUse::NoUrls,
        };
        assert_eq!(
            p.to_string(),
            "no DWARF in /bin/x and no separate debug file found (build ID ab12; \
             debug dirs [/usr/lib/debug, /d]; DEBUGINFOD_URLS not set)"
        );
        let p = DwarfProblem::NoDebugFile {
            module: PathBuf::from("/bin/x"),
            build_id: None,
            debug_dirs: vec![],
            debuginfod: DebuginfodUse::Disabled,
        };
        assert_eq!(
            p.to_string(),
            "no DWARF in /bin/x and no separate debug file found (no build ID; \
             debug dirs []; debuginfod disabled)"
        );
        let e = Opened::open(Path::new("/")).err().unwrap();
        assert!(matches!(e, OpenError::NotARegularFile { .. }), "{e:?}");
        assert_eq!(e.to_string(), "/ is not a regular file");
        let e = Opened::open(Path::new("/nonexistent/contend"))
            .err()
            .unwrap();
        assert!(matches!(e, OpenError::Open { .. }), "{e:?}");
        assert!(e
            .to_string()
            .starts_with("cannot open /nonexistent/contend: "));
        let dir = tempfile::tempdir().unwrap();
        let text = dir.path().join("text");
        std::fs::write(&text, "not ELF").unwrap();
        let e = Opened::open(&text).err().unwrap();
        assert!(
            matches!(
                e,
                OpenError::NotElf {
                    error: NotElf::Unparsable(_),
                    ..
                }
            ),
            "{e:?}"
        );
        assert!(
            e.to_string()
                .starts_with(&format!("{}: not an ELF file (", text.display())),
            "{e}"
        );
    }

    #[test]
    fn covering_symbol_respects_size() {
        let mut t = SymbolTable::default();
        for (addr, size, name) in [
            (0x100, 0x10, "a"),
            (0x200, 0x40, "b"),
            (0x210, 0x8, "inner"),
            (0x300, 0, "z"),
        ] {
            t.syms.push(Sym {
                addr,
                size,
                name: name.into(),
                section_end: if name == "z" { 0x320 } else { u64::MAX },
            });
        }
        t.finish();
        assert_eq!(t.covering(0x105).map(|s| s.name.as_str()), Some("a"));
        assert_eq!(t.covering(0x110), None);
        assert_eq!(t.covering(0x212).map(|s| s.name.as_str()), Some("inner"));
        assert_eq!(t.covering(0x230).map(|s| s.name.as_str()), Some("b"));
        assert_eq!(t.covering(0x300).map(|s| s.name.as_str()), Some("z"));
        assert_eq!(t.covering(0x301), None);
        assert_eq!(t.covering(0x50), None);
        // Code: a zero-sized nearest symbol extends a little, sized ones do not.
        assert_eq!(t.covering_code(0x301).map(|s| s.name.as_str()), Some("z"));
        assert_eq!(t.covering_code(0x31f).map(|s| s.name.as_str()), Some("z"));
        // ... but not past the end of its section.
        assert_eq!(t.covering_code(0x320), None);
        assert_eq!(t.covering_code(0x110), None);
        assert_eq!(t.covering_code(0x50), None);
    }
}
