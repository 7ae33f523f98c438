//! The meter time series of a recording, `meters.cmts` (`contend record
//! --meters`): every value the meter engine computed while the target ran,
//! with its trigger state, so that `contend report` can show the meters
//! over the run and split waits and service time by meter state. The one
//! definition of the layout (writer and reader); prose in
//! docs/trace-format.md, "Meter samples".
//!
//! Little-endian. A 32-byte header, then records of `u32 tag, u32 payload
//! length` and the payload:
//!
//! | offset | type | header field |
//! |---|---|---|
//! | 0 | char\[8\] | magic `CNTDMTRS` |
//! | 8 | u32 | version (1) |
//! | 12 | u32 | header size (32) |
//! | 16 | u64 | start: CLOCK_MONOTONIC ns when metering began |
//! | 24 | u64 | the meters' interval, ns |
//!
//! - tag 1, COLUMN: JSON `{"index", "name", "unit", "scope", "label",
//!   "high", "low"}` declaring a meter before its first value;
//! - tag 2, VALUES: `u64` CLOCK_MONOTONIC ns, then per value `u32` column,
//!   `u32` trigger state (0 none, 1 clear, 2 high), `f64` value;
//! - tag 3, NOTE: one sentence (UTF-8) about what was and was not metered
//!   (no hardware counters, no calibration).
//!
//! Each record is written with one `write`, so the file survives the
//! launcher being killed up to its last whole record; a record cut short
//! at the end is left out and reported.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::TraceError;

/// File name in a recording.
pub const FILE_NAME: &str = "meters.cmts";
/// Magic.
pub const MAGIC: &[u8; 8] = b"CNTDMTRS";
/// Version written and read.
pub const VERSION: u32 = 1;
/// Header size, bytes.
pub const HEADER_SIZE: usize = 32;
/// Record tag: a column declaration.
pub const TAG_COLUMN: u32 = 1;
/// Record tag: values at one instant.
pub const TAG_VALUES: u32 = 2;
/// Record tag: a note (UTF-8 sentence).
pub const TAG_NOTE: u32 = 3;

/// A meter of the file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Column {
    /// Its index, referred to by values.
    pub index: u32,
    /// Meter name (`memory_latency`).
    pub name: String,
    /// Unit.
    pub unit: String,
    /// Scope (`machine`, `node:0`, `cpu:1`).
    pub scope: String,
    /// Label ("" for most).
    #[serde(default)]
    pub label: String,
    /// High trigger level.
    pub high: Option<f64>,
    /// Low trigger level.
    pub low: Option<f64>,
}

/// One value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Value {
    /// Column index.
    pub column: u32,
    /// Trigger state code (0 none, 1 clear, 2 high).
    pub state: u32,
    /// The value.
    pub value: f64,
}

/// Values at one instant.
#[derive(Debug, Clone, PartialEq)]
pub struct Tick {
    /// CLOCK_MONOTONIC ns.
    pub t_ns: u64,
    /// The values computed then.
    pub values: Vec<Value>,
}

/// A meters file read.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct MetersFile {
    /// The file.
    pub path: PathBuf,
    /// When metering began, CLOCK_MONOTONIC ns.
    pub start_ns: u64,
    /// The meters' interval, ns.
    pub interval_ns: u64,
    /// Meters by index order of declaration.
    pub columns: Vec<Column>,
    /// Instants in file order.
    pub ticks: Vec<Tick>,
    /// Notes of the recorder about what was and was not metered.
    pub notes: Vec<String>,
    /// Problems found (a record cut short, unknown tags), one sentence each.
    pub damage: Vec<String>,
}

/// Writes a meters file.
pub struct MetersWriter {
    file: std::fs::File,
    path: PathBuf,
}

impl MetersWriter {
    /// Creates `path` with its header.
    ///
    /// Errors: [`TraceError::Io`] naming the file.
    pub fn create(
        path: &Path,
        start_ns: u64,
        interval_ns: u64,
    ) -> Result<MetersWriter, TraceError> {
        let io = |source| TraceError::Io {
            path: path.to_path_buf(),
            source,
        };
        let mut file = std::fs::File::create(path).map_err(io)?;
        let mut h = Vec::with_capacity(HEADER_SIZE);
        h.extend_from_slice(MAGIC);
        h.extend_from_slice(&VERSION.to_le_bytes());
        h.extend_from_slice(&(HEADER_SIZE as u32).to_le_bytes());
        h.extend_from_slice(&start_ns.to_le_bytes());
        h.extend_from_slice(&interval_ns.to_le_bytes());
        file.write_all(&h).map_err(io)?;
        Ok(MetersWriter {
            file,
            path: path.to_path_buf(),
        })
    }

    fn record(&mut self, tag: u32, payload: &[u8]) -> Result<(), TraceError> {
        let mut r = Vec::with_capacity(8 + payload.len());
        r.extend_from_slice(&tag.to_le_bytes());
        r.extend_from_slice(&(payload.len() as u32).to_le_bytes());
        r.extend_from_slice(payload);
        self.file.write_all(&r).map_err(|source| TraceError::Io {
            path: self.path.clone(),
            source,
        })
    }

    /// Declares a column.
    ///
    /// Errors: [`TraceError::Io`].
    pub fn column(&mut self, c: &Column) -> Result<(), TraceError> {
        let json = serde_json::to_vec(c).expect("serialisable");
        self.record(TAG_COLUMN, &json)
    }

    /// Writes a note (one sentence about what is and is not metered).
    ///
    /// Errors: [`TraceError::Io`].
    pub fn note(&mut self, text: &str) -> Result<(), TraceError> {
        self.record(TAG_NOTE, text.as_bytes())
    }

    /// Writes the values of one instant.
    ///
    /// Errors: [`TraceError::Io`].
    pub fn values(&mut self, t_ns: u64, values: &[Value]) -> Result<(), TraceError> {
        let mut p = Vec::with_capacity(8 + 16 * values.len());
        p.extend_from_slice(&t_ns.to_le_bytes());
        for v in values {
            p.extend_from_slice(&v.column.to_le_bytes());
            p.extend_from_slice(&v.state.to_le_bytes());
            p.extend_from_slice(&v.value.to_le_bytes());
        }
        self.record(TAG_VALUES, &p)
    }
}

impl MetersFile {
    /// Reads a meters file as far as it goes.
    ///
    /// Errors: the file cannot be read, or its header is not a meters
    /// file of this version ([`TraceError::Format`], naming the file).
    pub fn read(path: &Path) -> Result<MetersFile, TraceError> {
        let b = std::fs::read(path).map_err(|source| TraceError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        if b.len() < HEADER_SIZE || &b[..8] != MAGIC {
            return Err(TraceError::format(path, "not a meters file (bad magic)"));
        }
        let u32_at = |o: usize| u32::from_le_bytes(b[o..o + 4].try_into().expect("4 bytes"));
        let u64_at = |o: usize| u64::from_le_bytes(b[o..o + 8].try_into().expect("8 bytes"));
        let version = u32_at(8);
        if version != VERSION {
            return Err(TraceError::format(
                path,
                format!("meters file version {version}; this contend reads version {VERSION}"),
            ));
        }
        let hs = (u32_at(12) as usize).max(HEADER_SIZE);
        let mut f = MetersFile {
            path: path.to_path_buf(),
            start_ns: u64_at(16),
            interval_ns: u64_at(24),
            ..MetersFile::default()
        };
        let mut at = hs;
        while at < b.len() {
            if at + 8 > b.len() {
                f.damage
                    .push(format!("{}: the last record is cut short", path.display()));
                break;
            }
            let (tag, len) = (u32_at(at), u32_at(at + 4) as usize);
            let body = at + 8;
            if body + len > b.len() {
                f.damage
                    .push(format!("{}: the last record is cut short", path.display()));
                break;
            }
            let p = &b[body..body + len];
            match tag {
                TAG_COLUMN => match serde_json::from_slice::<Column>(p) {
                    Ok(c) => f.columns.push(c),
                    Err(e) => f.damage.push(format!(
                        "{}: a column declaration at byte {at} is not valid ({e})",
                        path.display()
                    )),
                },
                TAG_VALUES if len >= 8 && (len - 8) % 16 == 0 => {
                    let t_ns = u64::from_le_bytes(p[..8].try_into().expect("8 bytes"));
                    let values = p[8..]
                        .chunks_exact(16)
                        .map(|c| Value {
                            column: u32::from_le_bytes(c[..4].try_into().expect("4")),
                            state: u32::from_le_bytes(c[4..8].try_into().expect("4")),
                            value: f64::from_le_bytes(c[8..].try_into().expect("8")),
                        })
                        .collect();
                    f.ticks.push(Tick { t_ns, values });
                }
                TAG_NOTE => f.notes.push(String::from_utf8_lossy(p).into_owned()),
                _ => f.damage.push(format!(
                    "{}: unknown record (tag {tag}, {len} bytes) at byte {at} skipped",
                    path.display()
                )),
            }
            at = body + len;
        }
        Ok(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn written_file_reads_back_and_survives_a_cut() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(FILE_NAME);
        let mut w = MetersWriter::create(&p, 100, 10).unwrap();
        let c = Column {
            index: 0,
            name: "memory_latency".into(),
            unit: "ns".into(),
            scope: "machine".into(),
            label: String::new(),
            high: Some(200.0),
            low: Some(150.0),
        };
        w.column(&c).unwrap();
        w.note("no calibration").unwrap();
        w.values(
            110,
            &[Value {
                column: 0,
                state: 1,
                value: 120.5,
            }],
        )
        .unwrap();
        w.values(
            120,
            &[Value {
                column: 0,
                state: 2,
                value: 250.0,
            }],
        )
        .unwrap();
        drop(w);
        let f = MetersFile::read(&p).unwrap();
        assert_eq!((f.start_ns, f.interval_ns), (100, 10));
        assert_eq!(f.columns, vec![c]);
        assert_eq!(f.ticks.len(), 2);
        assert_eq!(f.ticks[1].values[0].state, 2);
        assert_eq!(f.notes, vec!["no calibration".to_string()]);
        assert!(f.damage.is_empty());
        // Cut in the middle of the last record: the first tick stays.
        let len = std::fs::metadata(&p).unwrap().len();
        std::fs::OpenOptions::new()
            .write(true)
            .open(&p)
            .unwrap()
            .set_len(len - 5)
            .unwrap();
        let f = MetersFile::read(&p).unwrap();
        assert_eq!(f.ticks.len(), 1);
        assert_eq!(f.damage.len(), 1, "{:?}", f.damage);
        std::fs::write(&p, b"nonsense, not a meters file at all").unwrap();
        let e = MetersFile::read(&p).unwrap_err().to_string();
        assert!(e.contains("bad magic") && e.contains("meters.cmts"), "{e}");
    }
}
