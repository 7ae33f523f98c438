//! Access histograms as CSV (docs/numa.md, "Access histograms"):
//!
//! - per node pair, `from_node,to_node,accesses`: the N + 1 histograms of
//!   Nikolopoulos, Section 2.3 (`from_node == to_node` counts the local
//!   accesses L_i, any other row the remote accesses R'_ki from node k =
//!   `from_node` to node i = `to_node`);
//! - per page, `page,from_node,to_node,accesses`: the same per page, where
//!   `to_node` is the node the page lies on (the input of the migration
//!   algorithm, Section 3);
//! - a recording's samples, `numa/samples.csv`:
//!   `pid,page,from_node,to_node,samples` (samples, not accesses;
//!   `numa/sampler.json` says what a sample stands for).
//!
//! Nodes are numbered from 0. A page is a hexadecimal (`0x7f3a…`) or
//! decimal address. Counts are non-negative numbers (estimates may be
//! fractional). Columns may come in any order (found by the header's
//! names); blank lines and lines starting with `#` are skipped; rows with
//! the same key are added. Anything else (a missing column, a short row,
//! a non-numeric or negative count) is an error naming the file and line.

use std::fmt::Write as _;
use std::path::Path;

use super::latency::write_atomically;
use super::NumaFileError;

/// One row of a node histogram: `accesses` from CPUs of node `from_node`
/// to memory of node `to_node`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NodeAccesses {
    /// Node of the accessing CPUs (k).
    pub from_node: u32,
    /// Node of the memory accessed (i).
    pub to_node: u32,
    /// Number of accesses (≥ 0).
    pub accesses: f64,
}

/// One row of a page histogram: `accesses` from CPUs of `from_node` to the
/// page at `page`, which lies on `to_node`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PageAccesses {
    /// The page's address (its first byte).
    pub page: u64,
    /// Node of the accessing CPUs.
    pub from_node: u32,
    /// Node the page lies on.
    pub to_node: u32,
    /// Number of accesses (≥ 0).
    pub accesses: f64,
}

/// One row of a recording's sample file: `samples` samples of process
/// `pid` whose data address lay on `page`, taken on a CPU of `from_node`
/// while the page lay on `to_node`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PageSamples {
    /// The sampled process.
    pub pid: u32,
    /// The page's address.
    pub page: u64,
    /// Node of the CPU the sample was taken on.
    pub from_node: u32,
    /// Node the page lay on.
    pub to_node: u32,
    /// Number of samples.
    pub samples: u64,
}

/// The header of a node histogram.
pub const NODE_HEADER: &str = "from_node,to_node,accesses";
/// The header of a page histogram.
pub const PAGE_HEADER: &str = "page,from_node,to_node,accesses";
/// The header of a recording's sample file.
pub const SAMPLES_HEADER: &str = "pid,page,from_node,to_node,samples";

/// A parsed CSV: for each data row its line number and the fields in the
/// order of `columns`.
struct Csv {
    rows: Vec<(usize, Vec<String>)>,
}

fn read_text(path: &Path) -> Result<String, NumaFileError> {
    let bytes = std::fs::read(path).map_err(|source| NumaFileError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    String::from_utf8(bytes).map_err(|e| NumaFileError::Invalid {
        path: path.to_path_buf(),
        problem: format!(
            "not a text file (invalid UTF-8 at byte {})",
            e.utf8_error().valid_up_to()
        ),
    })
}

/// Splits `text` into rows holding `columns` (found by the header's names).
fn parse_csv(
    path: &Path,
    text: &str,
    columns: &[&str],
    expected: &str,
) -> Result<Csv, NumaFileError> {
    let mut lines = text
        .lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.trim()))
        .filter(|(_, l)| !l.is_empty() && !l.starts_with('#'));
    let Some((header_line, header)) = lines.next() else {
        return Err(NumaFileError::Invalid {
            path: path.to_path_buf(),
            problem: format!("empty file: expected the header `{expected}` and rows"),
        });
    };
    let names: Vec<String> = header
        .split(',')
        .map(|h| h.trim().to_ascii_lowercase())
        .collect();
    let mut index = Vec::with_capacity(columns.len());
    for c in columns {
        match names.iter().position(|n| n == c) {
            Some(i) => index.push(i),
            None => {
                return Err(NumaFileError::Row {
                    path: path.to_path_buf(),
                    line: header_line,
                    problem: format!(
                        "the header `{header}` has no column `{c}` (expected `{expected}`)"
                    ),
                })
            }
        }
    }
    let mut rows = Vec::new();
    for (line, l) in lines {
        let fields: Vec<&str> = l.split(',').map(str::trim).collect();
        if fields.len() != names.len() {
            return Err(NumaFileError::Row {
                path: path.to_path_buf(),
                line,
                problem: format!(
                    "{} fields, but the header has {} (`{header}`)",
                    fields.len(),
                    names.len()
                ),
            });
        }
        rows.push((line, index.iter().map(|&i| fields[i].to_string()).collect()));
    }
    Ok(Csv { rows })
}

fn row_err(path: &Path, line: usize, problem: String) -> NumaFileError {
    NumaFileError::Row {
        path: path.to_path_buf(),
        line,
        problem,
    }
}

fn node(path: &Path, line: usize, column: &str, s: &str) -> Result<u32, NumaFileError> {
    s.parse::<u32>().map_err(|_| {
        row_err(
            path,
            line,
            format!("{column} `{s}` is not a node number (0, 1, 2, …)"),
        )
    })
}

fn count(path: &Path, line: usize, column: &str, s: &str) -> Result<f64, NumaFileError> {
    let v: f64 = s
        .parse()
        .map_err(|_| row_err(path, line, format!("{column} `{s}` is not a number")))?;
    if !v.is_finite() || v < 0.0 {
        return Err(row_err(
            path,
            line,
            format!("{column} `{s}` is negative or not finite: counts are numbers ≥ 0"),
        ));
    }
    Ok(v)
}

/// Parses a page address: `0x…` hexadecimal or decimal.
pub fn parse_page(s: &str) -> Option<u64> {
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => s.parse().ok(),
    }
}

fn page(path: &Path, line: usize, s: &str) -> Result<u64, NumaFileError> {
    parse_page(s).ok_or_else(|| {
        row_err(
            path,
            line,
            format!("page `{s}` is not an address (0x7f3a5c000000 or decimal)"),
        )
    })
}

/// Reads a node histogram (`from_node,to_node,accesses`); rows of the same
/// node pair are added, in order of first appearance.
///
/// Errors: the file cannot be read, lacks the header's columns, or a row
/// is short, names no node or holds a negative or non-numeric count
/// (naming the file and line).
pub fn read_node_accesses(path: &Path) -> Result<Vec<NodeAccesses>, NumaFileError> {
    let text = read_text(path)?;
    let csv = parse_csv(
        path,
        &text,
        &["from_node", "to_node", "accesses"],
        NODE_HEADER,
    )?;
    let mut out: Vec<NodeAccesses> = Vec::new();
    let mut at = std::collections::HashMap::new();
    for (line, f) in &csv.rows {
        let r = NodeAccesses {
            from_node: node(path, *line, "from_node", &f[0])?,
            to_node: node(path, *line, "to_node", &f[1])?,
            accesses: count(path, *line, "accesses", &f[2])?,
        };
        match at.get(&(r.from_node, r.to_node)) {
            Some(&i) => {
                let row: &mut NodeAccesses = &mut out[i];
                row.accesses += r.accesses;
            }
            None => {
                at.insert((r.from_node, r.to_node), out.len());
                out.push(r);
            }
        }
    }
    Ok(out)
}

/// Reads a page histogram (`page,from_node,to_node,accesses`); rows of the
/// same page and source node are added. Every row of one page must name
/// the same `to_node` (a page lies on one node).
///
/// Errors: as [`read_node_accesses`], and a page given on two nodes.
pub fn read_page_accesses(path: &Path) -> Result<Vec<PageAccesses>, NumaFileError> {
    let text = read_text(path)?;
    let csv = parse_csv(
        path,
        &text,
        &["page", "from_node", "to_node", "accesses"],
        PAGE_HEADER,
    )?;
    let mut out: Vec<PageAccesses> = Vec::new();
    let mut at = std::collections::HashMap::new();
    let mut home: std::collections::HashMap<u64, (u32, usize)> = std::collections::HashMap::new();
    for (line, f) in &csv.rows {
        let r = PageAccesses {
            page: page(path, *line, &f[0])?,
            from_node: node(path, *line, "from_node", &f[1])?,
            to_node: node(path, *line, "to_node", &f[2])?,
            accesses: count(path, *line, "accesses", &f[3])?,
        };
        match home.get(&r.page) {
            Some(&(n, first)) if n != r.to_node => {
                return Err(row_err(
                    path,
                    *line,
                    format!(
                        "page {:#x} lies on node {} here but on node {n} at line {first}: a page lies on one node",
                        r.page, r.to_node
                    ),
                ))
            }
            Some(_) => {}
            None => {
                home.insert(r.page, (r.to_node, *line));
            }
        }
        match at.get(&(r.page, r.from_node)) {
            Some(&i) => {
                let row: &mut PageAccesses = &mut out[i];
                row.accesses += r.accesses;
            }
            None => {
                at.insert((r.page, r.from_node), out.len());
                out.push(r);
            }
        }
    }
    Ok(out)
}

/// Reads a recording's sample file (`pid,page,from_node,to_node,samples`).
///
/// Errors: as [`read_node_accesses`]; counts must be whole numbers.
pub fn read_page_samples(path: &Path) -> Result<Vec<PageSamples>, NumaFileError> {
    let text = read_text(path)?;
    let csv = parse_csv(
        path,
        &text,
        &["pid", "page", "from_node", "to_node", "samples"],
        SAMPLES_HEADER,
    )?;
    csv.rows
        .iter()
        .map(|(line, f)| {
            Ok(PageSamples {
                pid: f[0].parse().map_err(|_| {
                    row_err(path, *line, format!("pid `{}` is not a process id", f[0]))
                })?,
                page: page(path, *line, &f[1])?,
                from_node: node(path, *line, "from_node", &f[2])?,
                to_node: node(path, *line, "to_node", &f[3])?,
                samples: f[4].parse().map_err(|_| {
                    row_err(
                        path,
                        *line,
                        format!("samples `{}` is not a whole number ≥ 0", f[4]),
                    )
                })?,
            })
        })
        .collect()
}

/// A count as CSV: integers without a fraction, others with up to 6
/// decimals.
fn fmt_count(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        let s = format!("{v:.6}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// Writes a node histogram with the header [`NODE_HEADER`].
/// Errors: [`NumaFileError::Io`].
pub fn write_node_accesses(path: &Path, rows: &[NodeAccesses]) -> Result<(), NumaFileError> {
    let mut s = String::from(NODE_HEADER);
    s.push('\n');
    for r in rows {
        let _ = writeln!(s, "{},{},{}", r.from_node, r.to_node, fmt_count(r.accesses));
    }
    write_atomically(path, s.as_bytes())
}

/// Writes a page histogram with the header [`PAGE_HEADER`] (pages in
/// hexadecimal). Errors: [`NumaFileError::Io`].
pub fn write_page_accesses(path: &Path, rows: &[PageAccesses]) -> Result<(), NumaFileError> {
    let mut s = String::from(PAGE_HEADER);
    s.push('\n');
    for r in rows {
        let _ = writeln!(
            s,
            "{:#x},{},{},{}",
            r.page,
            r.from_node,
            r.to_node,
            fmt_count(r.accesses)
        );
    }
    write_atomically(path, s.as_bytes())
}

/// Writes a recording's sample file with the header [`SAMPLES_HEADER`].
/// Errors: [`NumaFileError::Io`].
pub fn write_page_samples(path: &Path, rows: &[PageSamples]) -> Result<(), NumaFileError> {
    let mut s = String::from(SAMPLES_HEADER);
    s.push('\n');
    for r in rows {
        let _ = writeln!(
            s,
            "{},{:#x},{},{},{}",
            r.pid, r.page, r.from_node, r.to_node, r.samples
        );
    }
    write_atomically(path, s.as_bytes())
}

/// One page of a migration plan (`contend numa balance -o plan.csv`):
/// move `page` (of process `pid`, when known) from `from_node` to
/// `to_node`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PlannedMove {
    /// The process, when known.
    pub pid: Option<u32>,
    /// The page's address.
    pub page: u64,
    /// Where it lies (as far as the plan knows; informational).
    pub from_node: Option<u32>,
    /// Where to put it.
    pub to_node: u32,
    /// Accesses to it (informational).
    pub accesses: Option<f64>,
}

/// The header of a migration plan.
pub const PLAN_HEADER: &str = "pid,page,from_node,to_node,accesses";

/// Writes a migration plan with the header [`PLAN_HEADER`] (an unknown pid
/// or node is an empty field). Errors: [`NumaFileError::Io`].
pub fn write_plan(path: &Path, rows: &[PlannedMove]) -> Result<(), NumaFileError> {
    let mut s = String::from(PLAN_HEADER);
    s.push('\n');
    for r in rows {
        let _ = writeln!(
            s,
            "{},{:#x},{},{},{}",
            r.pid.map(|p| p.to_string()).unwrap_or_default(),
            r.page,
            r.from_node.map(|n| n.to_string()).unwrap_or_default(),
            r.to_node,
            r.accesses.map(fmt_count).unwrap_or_default()
        );
    }
    write_atomically(path, s.as_bytes())
}

/// Reads a migration plan: the columns `page` and `to_node` are needed;
/// `pid`, `from_node` and `accesses` are used when present and not empty.
///
/// Errors: as [`read_node_accesses`].
pub fn read_plan(path: &Path) -> Result<Vec<PlannedMove>, NumaFileError> {
    let text = read_text(path)?;
    let csv = parse_csv(path, &text, &["page", "to_node"], PLAN_HEADER)?;
    let header: Vec<String> = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with('#'))
        .unwrap_or_default()
        .split(',')
        .map(|h| h.trim().to_ascii_lowercase())
        .collect();
    let col = |name: &str| header.iter().position(|h| h == name);
    let (pid_col, from_col, acc_col) = (col("pid"), col("from_node"), col("accesses"));
    let rows_all: Vec<Vec<String>> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .skip(1)
        .map(|l| l.split(',').map(|f| f.trim().to_string()).collect())
        .collect();
    let mut out = Vec::with_capacity(csv.rows.len());
    for ((line, f), all) in csv.rows.iter().zip(&rows_all) {
        let opt = |c: Option<usize>| c.and_then(|i| all.get(i)).filter(|v| !v.is_empty());
        out.push(PlannedMove {
            pid: match opt(pid_col) {
                Some(v) => {
                    Some(v.parse().map_err(|_| {
                        row_err(path, *line, format!("pid `{v}` is not a process id"))
                    })?)
                }
                None => None,
            },
            page: page(path, *line, &f[0])?,
            from_node: match opt(from_col) {
                Some(v) => Some(node(path, *line, "from_node", v)?),
                None => None,
            },
            to_node: node(path, *line, "to_node", &f[1])?,
            accesses: match opt(acc_col) {
                Some(v) => Some(count(path, *line, "accesses", v)?),
                None => None,
            },
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(text: &str) -> (tempfile::TempDir, std::path::PathBuf) {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("h.csv");
        std::fs::write(&p, text).unwrap();
        (d, p)
    }

    #[test]
    fn node_rows_are_read_in_any_column_order_and_added() {
        let (_d, p) = file("# from a tool\naccesses,to_node,from_node\n10,0,0\n5,1,0\n\n2.5,0,0\n");
        let rows = read_node_accesses(&p).unwrap();
        assert_eq!(
            rows,
            vec![
                NodeAccesses {
                    from_node: 0,
                    to_node: 0,
                    accesses: 12.5
                },
                NodeAccesses {
                    from_node: 0,
                    to_node: 1,
                    accesses: 5.0
                },
            ]
        );
    }

    #[test]
    fn bad_counts_name_file_and_line() {
        let (_d, p) = file("from_node,to_node,accesses\n0,0,10\n0,1,-4\n");
        let e = read_node_accesses(&p).unwrap_err().to_string();
        assert!(
            e.ends_with("h.csv:3: accesses `-4` is negative or not finite: counts are numbers ≥ 0"),
            "{e}"
        );
        let (_d, p) = file("from_node,to_node,accesses\n0,0,ten\n");
        let e = read_node_accesses(&p).unwrap_err().to_string();
        assert!(e.contains("h.csv:2: accesses `ten` is not a number"), "{e}");
        let (_d, p) = file("from_node,to_node,accesses\n0,x,1\n");
        assert!(read_node_accesses(&p)
            .unwrap_err()
            .to_string()
            .contains("to_node `x` is not a node number"));
        let (_d, p) = file("from_node,to_node,accesses\n0,1\n");
        assert!(read_node_accesses(&p)
            .unwrap_err()
            .to_string()
            .contains("2 fields, but the header has 3"));
        let (_d, p) = file("from,to,n\n0,1,2\n");
        assert!(read_node_accesses(&p)
            .unwrap_err()
            .to_string()
            .contains("no column `from_node`"));
        let (_d, p) = file("");
        assert!(read_node_accesses(&p)
            .unwrap_err()
            .to_string()
            .contains("empty file"));
    }

    #[test]
    fn pages_lie_on_one_node() {
        let (_d, p) =
            file("page,from_node,to_node,accesses\n0x1000,0,1,3\n4096,1,1,4\n0x2000,0,0,1\n");
        let rows = read_page_accesses(&p).unwrap();
        assert_eq!(rows.len(), 3);
        assert_eq!(rows[1].page, 0x1000);
        let (_d, p) = file("page,from_node,to_node,accesses\n0x1000,0,1,3\n0x1000,1,0,4\n");
        let e = read_page_accesses(&p).unwrap_err().to_string();
        assert!(
            e.contains(":3: page 0x1000 lies on node 0 here but on node 1 at line 2"),
            "{e}"
        );
    }

    #[test]
    fn write_then_read() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("pages.csv");
        let rows = vec![
            PageAccesses {
                page: 0x7f00_0000_1000,
                from_node: 1,
                to_node: 0,
                accesses: 7.0,
            },
            PageAccesses {
                page: 0x7f00_0000_2000,
                from_node: 0,
                to_node: 0,
                accesses: 0.25,
            },
        ];
        write_page_accesses(&p, &rows).unwrap();
        assert_eq!(read_page_accesses(&p).unwrap(), rows);
        let s = d.path().join("samples.csv");
        let samples = vec![PageSamples {
            pid: 42,
            page: 0x1000,
            from_node: 0,
            to_node: 0,
            samples: 9,
        }];
        write_page_samples(&s, &samples).unwrap();
        assert_eq!(read_page_samples(&s).unwrap(), samples);
        let plan = d.path().join("plan.csv");
        let moves = vec![
            PlannedMove {
                pid: Some(7),
                page: 0x1000,
                from_node: Some(0),
                to_node: 1,
                accesses: Some(3.0),
            },
            PlannedMove {
                pid: None,
                page: 0x2000,
                from_node: None,
                to_node: 0,
                accesses: None,
            },
        ];
        write_plan(&plan, &moves).unwrap();
        assert_eq!(read_plan(&plan).unwrap(), moves);
        std::fs::write(&plan, "page,to_node\n0x3000,2\n").unwrap();
        assert_eq!(read_plan(&plan).unwrap()[0].to_node, 2);
        let n = d.path().join("nodes.csv");
        let nodes = vec![NodeAccesses {
            from_node: 0,
            to_node: 1,
            accesses: 1e6,
        }];
        write_node_accesses(&n, &nodes).unwrap();
        assert_eq!(
            std::fs::read_to_string(&n).unwrap(),
            "from_node,to_node,accesses\n0,1,1000000\n"
        );
    }
}
