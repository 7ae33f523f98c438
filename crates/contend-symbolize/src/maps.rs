//! Parsing of recorded `/proc/<pid>/maps` snapshots (`maps/<pid>.maps`).
//!
//! The collector appends a snapshot of `/proc/<pid>/maps` at start, whenever a
//! call site lies outside every executable mapping of the previous snapshot
//! (a library loaded later by `dlopen`), and at exit. Each snapshot opens with
//! a header line `# snapshot <n> <monotonic_ns>`. Text without any header (a
//! plain copy of `/proc/self/maps`) is read as one snapshot numbered 0.
//!
//! An address resolves in the **latest** snapshot that covers it: a library
//! unloaded and replaced by another at the same address is resolved against
//! the newer one, while an address only covered by an early snapshot (a
//! library `dlclose`d before exit) still resolves.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::SymbolizeError;

/// Access permissions of a mapping, the 4-character `perms` column of
/// `/proc/<pid>/maps` (`r-xp`, `rw-s`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub struct Perms {
    /// `r`: readable.
    pub read: bool,
    /// `w`: writable.
    pub write: bool,
    /// `x`: executable.
    pub exec: bool,
    /// `s`: shared mapping (`p` = private copy-on-write).
    pub shared: bool,
}

impl Perms {
    /// Parses the 4-character column; `None` unless it matches `[r-][w-][x-][ps]`.
    pub fn parse(s: &str) -> Option<Perms> {
        let b = s.as_bytes();
        if b.len() != 4 {
            return None;
        }
        let flag = |c: u8, yes: u8| match c {
            c if c == yes => Some(true),
            b'-' => Some(false),
            _ => None,
        };
        Some(Perms {
            read: flag(b[0], b'r')?,
            write: flag(b[1], b'w')?,
            exec: flag(b[2], b'x')?,
            shared: match b[3] {
                b's' => true,
                b'p' => false,
                _ => return None,
            },
        })
    }
}

impl fmt::Display for Perms {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}{}{}{}",
            if self.read { 'r' } else { '-' },
            if self.write { 'w' } else { '-' },
            if self.exec { 'x' } else { '-' },
            if self.shared { 's' } else { 'p' }
        )
    }
}

/// One line of `/proc/<pid>/maps`: the virtual address range `[start, end)`
/// (bytes, in the traced process's address space) and what backs it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mapping {
    /// First address of the mapping (inclusive).
    pub start: u64,
    /// One past the last address of the mapping (exclusive).
    pub end: u64,
    /// Access permissions.
    pub perms: Perms,
    /// Offset in bytes into the backing file of the byte mapped at `start`
    /// (0 for anonymous mappings).
    pub file_offset: u64,
    /// Device column (`major:minor`, hexadecimal), as recorded.
    pub dev: String,
    /// Inode of the backing file (0 for anonymous mappings).
    pub inode: u64,
    /// Backing path: an absolute file path, a pseudo name such as `[heap]`,
    /// `[stack]`, `[vdso]`, `[anon:name]`, or `None` for an unnamed anonymous
    /// mapping. A trailing ` (deleted)` is removed and reported in `deleted`.
    pub path: Option<String>,
    /// The kernel marked the file ` (deleted)`: it was removed or replaced
    /// after being mapped, so the file now at `path` is not the mapped one.
    pub deleted: bool,
}

impl Mapping {
    /// Whether `addr` lies in `[start, end)`.
    pub fn contains(&self, addr: u64) -> bool {
        self.start <= addr && addr < self.end
    }

    /// Whether the mapping is backed by a file (its path is absolute), as
    /// opposed to anonymous memory or a pseudo mapping like `[heap]`.
    pub fn is_file_backed(&self) -> bool {
        self.path.as_deref().is_some_and(|p| p.starts_with('/'))
    }

    /// Whether the mapping is anonymous and unnamed (no path at all): the
    /// kind of mapping that holds the tail of a module's `.bss`.
    pub fn is_anonymous(&self) -> bool {
        self.path.is_none()
    }

    /// Parses one line of `/proc/<pid>/maps`; the error says what is wrong
    /// with it.
    pub fn parse_line(line: &str) -> Result<Mapping, MapsLineError> {
        let mut rest = line.trim_end_matches(['\n', '\r']);
        let mut fields = [""; 5];
        for (i, slot) in fields.iter_mut().enumerate() {
            rest = rest.trim_start_matches([' ', '\t']);
            let end = rest.find([' ', '\t']).unwrap_or(rest.len());
            if end == 0 {
                return Err(MapsLineError::Columns { found: i });
            }
            *slot = &rest[..end];
            rest = &rest[end..];
        }
        let [range, perms, offset, dev, inode] = fields;
        let (start, end) = range
            .split_once('-')
            .ok_or_else(|| MapsLineError::NoDash(range.to_string()))?;
        let start = u64::from_str_radix(start, 16)
            .map_err(|_| MapsLineError::BadStart(start.to_string()))?;
        let end =
            u64::from_str_radix(end, 16).map_err(|_| MapsLineError::BadEnd(end.to_string()))?;
        if end < start {
            return Err(MapsLineError::EndBelowStart { start, end });
        }
        let perms =
            Perms::parse(perms).ok_or_else(|| MapsLineError::BadPerms(perms.to_string()))?;
        let file_offset = u64::from_str_radix(offset, 16)
            .map_err(|_| MapsLineError::BadOffset(offset.to_string()))?;
        let dev_ok = dev.split_once(':').is_some_and(|(a, b)| {
            u32::from_str_radix(a, 16).is_ok() && u32::from_str_radix(b, 16).is_ok()
        });
        if !dev_ok {
            return Err(MapsLineError::BadDevice(dev.to_string()));
        }
        let inode: u64 = inode
            .parse()
            .map_err(|_| MapsLineError::BadInode(inode.to_string()))?;
        let path = rest.trim_start_matches([' ', '\t']);
        let (path, deleted) = match path.strip_suffix(" (deleted)") {
            Some(p) => (p, true),
            None => (path, false),
        };
        Ok(Mapping {
            start,
            end,
            perms,
            file_offset,
            dev: dev.to_string(),
            inode,
            path: (!path.is_empty()).then(|| path.to_string()),
            deleted,
        })
    }
}

/// One snapshot of a process's mappings.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Snapshot {
    /// Snapshot number `<n>` from the header (0 for header-less text).
    pub index: u64,
    /// CLOCK_MONOTONIC time of the snapshot in nanoseconds, from the header
    /// (`None` for header-less text or an unreadable header).
    pub monotonic_ns: Option<u64>,
    /// The mappings, sorted by `start`.
    pub mappings: Vec<Mapping>,
}

impl Snapshot {
    /// Index into `mappings` of the mapping covering `addr` (binary search).
    pub fn find_index(&self, addr: u64) -> Option<usize> {
        let i = self.mappings.partition_point(|m| m.start <= addr);
        let i = i.checked_sub(1)?;
        self.mappings[i].contains(addr).then_some(i)
    }
}

/// What is wrong with a line of a maps file ([`Mapping::parse_line`], and
/// a `# snapshot` header line).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
pub enum MapsLineError {
    /// Fewer than the 5 columns every mapping has (range, permissions,
    /// offset, device, inode).
    #[error("expected 5 or 6 columns, found {found}")]
    Columns {
        /// Columns found.
        found: usize,
    },
    /// The address range column has no `-`.
    #[error("address range {0:?} has no '-'")]
    NoDash(String),
    /// The start address is not hexadecimal.
    #[error("bad start address {0:?}")]
    BadStart(String),
    /// The end address is not hexadecimal.
    #[error("bad end address {0:?}")]
    BadEnd(String),
    /// The range ends before it starts.
    #[error("end {end:#x} below start {start:#x}")]
    EndBelowStart {
        /// Start address.
        start: u64,
        /// End address.
        end: u64,
    },
    /// The permissions column is not `[r-][w-][x-][ps]`.
    #[error("bad permissions {0:?}")]
    BadPerms(String),
    /// The offset column is not hexadecimal.
    #[error("bad offset {0:?}")]
    BadOffset(String),
    /// The device column is not `major:minor` in hexadecimal.
    #[error("bad device {0:?}")]
    BadDevice(String),
    /// The inode column is not a decimal number.
    #[error("bad inode {0:?}")]
    BadInode(String),
    /// A `# snapshot` line without a number and a time
    /// (`# snapshot <n> <monotonic_ns>`).
    #[error("bad snapshot header {0:?}")]
    BadSnapshotHeader(String),
}

/// A line of a maps file that could not be parsed and was skipped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MalformedLine {
    /// 1-based line number in the file or text.
    pub line: usize,
    /// What was wrong with it.
    pub reason: MapsLineError,
}

impl fmt::Display for MalformedLine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "malformed line {}: {}", self.line, self.reason)
    }
}

/// All recorded maps snapshots of one process image (one `<pid>.maps` or
/// `<pid>.<n>.maps` file).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ProcessMaps {
    /// Snapshots in file order (the last is the latest).
    pub snapshots: Vec<Snapshot>,
    /// Lines that were skipped because they could not be parsed.
    pub malformed: Vec<MalformedLine>,
    /// The file this was read from (`None` when parsed from text).
    pub source: Option<PathBuf>,
}

impl ProcessMaps {
    /// Reads and parses a maps file.
    ///
    /// Malformed lines are skipped and listed in [`ProcessMaps::malformed`]
    /// (a file truncated mid-line by a killed process stays usable).
    ///
    /// # Errors
    /// [`SymbolizeError::MapsMissing`] if the file does not exist,
    /// [`SymbolizeError::MapsUnreadable`] if it cannot be read, and
    /// [`SymbolizeError::MapsMalformed`] (naming the first bad line) if it has
    /// content but not one parseable mapping. An empty file is not an error:
    /// it yields no snapshots, and every lookup then fails softly.
    pub fn from_file(path: impl AsRef<Path>) -> Result<ProcessMaps, SymbolizeError> {
        let path = path.as_ref();
        let bytes = std::fs::read(path).map_err(|source| {
            if source.kind() == std::io::ErrorKind::NotFound {
                SymbolizeError::MapsMissing {
                    path: path.to_path_buf(),
                }
            } else {
                SymbolizeError::MapsUnreadable {
                    path: path.to_path_buf(),
                    source,
                }
            }
        })?;
        let mut maps = ProcessMaps::parse(&String::from_utf8_lossy(&bytes));
        maps.source = Some(path.to_path_buf());
        if maps.mapping_count() == 0 {
            if let Some(first) = maps.malformed.first() {
                return Err(SymbolizeError::MapsMalformed {
                    path: path.to_path_buf(),
                    line: first.line,
                    reason: first.reason.clone(),
                    skipped: maps.malformed.len(),
                });
            }
        }
        Ok(maps)
    }

    /// Parses maps text: snapshots introduced by `# snapshot <n> <monotonic_ns>`
    /// lines, or plain `/proc/<pid>/maps` content (one snapshot, index 0).
    ///
    /// Never fails: unparseable lines are skipped and listed in
    /// [`ProcessMaps::malformed`]; other `#` lines and blank lines are ignored.
    pub fn parse(text: &str) -> ProcessMaps {
        let mut maps = ProcessMaps::default();
        let mut current: Option<Snapshot> = None;
        for (i, line) in text.lines().enumerate() {
            let lineno = i + 1;
            let trimmed = line.trim();
            if trimmed.is_empty() {
                continue;
            }
            if let Some(comment) = trimmed.strip_prefix('#') {
                let mut words = comment.split_whitespace();
                if words.next() != Some("snapshot") {
                    continue;
                }
                let next_index = current
                    .as_ref()
                    .or(maps.snapshots.last())
                    .map_or(0, |s| s.index + 1);
                let index = words.next().and_then(|w| w.parse::<u64>().ok());
                let ns = words.next().and_then(|w| w.parse::<u64>().ok());
                if index.is_none() || ns.is_none() {
                    maps.malformed.push(MalformedLine {
                        line: lineno,
                        reason: MapsLineError::BadSnapshotHeader(trimmed.to_string()),
                    });
                }
                if let Some(done) = current.take() {
                    maps.snapshots.push(done);
                }
                current = Some(Snapshot {
                    index: index.unwrap_or(next_index),
                    monotonic_ns: ns,
                    mappings: Vec::new(),
                });
                continue;
            }
            match Mapping::parse_line(line) {
                Ok(m) => current
                    .get_or_insert_with(Snapshot::default)
                    .mappings
                    .push(m),
                Err(reason) => maps.malformed.push(MalformedLine {
                    line: lineno,
                    reason,
                }),
            }
        }
        if let Some(done) = current.take() {
            maps.snapshots.push(done);
        }
        for s in &mut maps.snapshots {
            s.mappings.sort_by_key(|m| (m.start, m.end));
        }
        maps
    }

    /// Total number of mappings over all snapshots.
    pub fn mapping_count(&self) -> usize {
        self.snapshots.iter().map(|s| s.mappings.len()).sum()
    }

    /// The mapping covering `addr` in the latest snapshot that covers it.
    pub fn find(&self, addr: u64) -> Option<&Mapping> {
        let (s, m) = self.locate(addr)?;
        Some(&self.snapshots[s].mappings[m])
    }

    /// Like [`ProcessMaps::find`], but returns `(snapshot index, mapping
    /// index)` into `snapshots[..].mappings`, so neighbouring mappings of the
    /// same snapshot can be inspected.
    pub fn locate(&self, addr: u64) -> Option<(usize, usize)> {
        self.snapshots
            .iter()
            .enumerate()
            .rev()
            .find_map(|(si, s)| s.find_index(addr).map(|mi| (si, mi)))
    }
}
