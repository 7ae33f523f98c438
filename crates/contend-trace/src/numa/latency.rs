//! The calibrated latencies, `latency.json` (docs/numa.md, "The latency
//! file"): what `contend numa calibrate` writes and the model of
//! Nikolopoulos (Section 2.3) reads.
//!
//! ```text
//! {
//!   "nodes": N,
//!   "l_nocont_ns": [N],            local latency without contention, node i
//!   "l_cont_ns":   [N][N],         local latency of node i with m = 1..N contenders
//!   "r_nocont_ns": [N][N],         from node k to node i without contention (k = i: null)
//!   "r_cont_ns":   [N][N][N],      from k to i with m = 1..N contenders (k = i: null)
//!   "restart_ns":  [N] (optional)  the time window of Eq. 2 (restart latency)
//!   "calibration": {…} (optional)  how it was measured (written by calibrate)
//! }
//! ```
//!
//! All latencies are nanoseconds per access. The diagonal of the remote
//! tables is ignored (a local access is `l`, not `r`): calibrate writes
//! `null` there, so on a machine with one node every remote figure is
//! absent rather than zero.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::NumaFileError;

/// The latencies of one machine (Nikolopoulos, Section 2.2 and Eq. 11–12).
/// Indices are NUMA node numbers 0..`nodes`; contention degrees m run
/// from 1 to `nodes` and are stored at index m − 1.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LatencyTable {
    /// Number of nodes N.
    pub nodes: usize,
    /// `l_nocont` of each node i, ns: a dependent (back-to-back) load from
    /// node i's memory by a CPU of node i, no other load on that memory.
    pub l_nocont_ns: Vec<f64>,
    /// `l_cont(m)` of each node i, ns, for m = 1..N (index m − 1): the same
    /// load while m contenders read node i's memory.
    pub l_cont_ns: Vec<Vec<f64>>,
    /// `r_ki,nocont`, ns, indexed `[k][i]`: a load by a CPU of node k from
    /// node i's memory; `null` (ignored) where k = i.
    pub r_nocont_ns: Vec<Vec<Option<f64>>>,
    /// `r_ki,cont(m)`, ns, indexed `[k][i][m − 1]`; `null` where k = i.
    pub r_cont_ns: Vec<Vec<Option<Vec<f64>>>>,
    /// The restart latency of each node, ns: the time window of Eq. 2 (the
    /// paper's "restart latency of a local memory access without
    /// contention"). When absent, Eq. 2 uses `l_nocont_ns`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restart_ns: Option<Vec<f64>>,
    /// How the table was measured (written by `contend numa calibrate`;
    /// absent in tables users write by hand).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calibration: Option<Calibration>,
}

/// How a [`LatencyTable`] was measured: the machine, the sizes, every
/// measured point (the seed's Figure 2) and what disturbed the measurement.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Calibration {
    /// `contend` version that measured.
    pub tool_version: String,
    /// Host name.
    pub host: String,
    /// CPU model (`/proc/cpuinfo`).
    pub cpu_model: String,
    /// Kernel release.
    pub kernel: String,
    /// When, UTC, RFC 3339.
    pub date_utc: String,
    /// The CPUs of each node, `[N][…]` (empty for a memory-only node).
    pub node_cpus: Vec<Vec<u32>>,
    /// Bytes of each pointer-chasing and contender buffer.
    pub buffer_bytes: u64,
    /// Dependent loads per measured round of the master.
    pub loads_per_round: u64,
    /// Rounds per point (the median is kept).
    pub rounds: u32,
    /// Whether the buffers were bound to their node with `mbind(2)`
    /// (false when the kernel has no NUMA memory policy: then they lie
    /// where the kernel put them).
    pub memory_bound: bool,
    /// Cache-line size, bytes (the bytes one dependent load brings in).
    pub line_bytes: u64,
    /// Work time between two loads in the throughput rounds, ns (the
    /// seed's `num_iters` loop, Figure 1).
    pub work_ns: f64,
    /// Every measured point, in the order measured.
    pub points: Vec<CurvePoint>,
    /// Rounds measured again because the master or a contender did not
    /// have its CPU the whole round (another program ran there).
    pub disturbed_rounds: u32,
    /// Points still disturbed after every retry (their medians include
    /// disturbed rounds).
    pub disturbed_points: u32,
    /// Facts worth knowing about this calibration, one sentence each.
    pub notes: Vec<String>,
}

/// One measured point: a master on `master_node` reading `memory_node`'s
/// memory while `contenders` threads stream from the same memory.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct CurvePoint {
    /// Node of the master's CPU (k).
    pub master_node: u32,
    /// The master's CPU.
    pub master_cpu: u32,
    /// Node whose memory is read (i).
    pub memory_node: u32,
    /// Number of contenders m.
    pub contenders: u32,
    /// The contenders' CPUs.
    pub contender_cpus: Vec<u32>,
    /// Back-to-back latency, ns per dependent load (median of the rounds).
    pub latency_ns: f64,
    /// The master's throughput reading back to back, bytes/s
    /// (`line_bytes / latency`).
    pub back_to_back_bytes_per_s: f64,
    /// The master's throughput with `work_ns` of dependent work between
    /// loads, bytes/s (the seed's Figure 2, top); `null` where not
    /// measured.
    pub throughput_bytes_per_s: Option<f64>,
    /// What the contenders read together, bytes/s.
    pub contender_bytes_per_s: f64,
    /// Lowest and highest latency of the rounds, `[min, max]` ns: the
    /// round-to-round spread the median hides (absent in files written
    /// before it was recorded).
    pub latency_range_ns: Option<[f64; 2]>,
    /// Lowest and highest throughput with work of the rounds, `[min,
    /// max]` bytes/s; `null` where the throughput was not measured.
    pub throughput_range_bytes_per_s: Option<[f64; 2]>,
    /// Time per iteration of the throughput loop with its load hitting L1
    /// (the work between loads and one cached load), ns, median of the
    /// rounds, each timed right after the round's throughput beside the
    /// same contenders: the CPU's side of an iteration. The memory's share
    /// of an iteration is `line_bytes × 1e9 / throughput_bytes_per_s −
    /// work_alone_ns`, which a change of the CPU's speed between points
    /// does not move. `null` where the throughput was not measured and in
    /// files written before it was recorded.
    pub work_alone_ns: Option<f64>,
    /// For m ≥ 1: whether the contention is *resolved*, i.e. every round's
    /// latency with these contenders exceeds every round's latency of the
    /// same master and memory without them ([`contention_resolved`]);
    /// `null` for m = 0 and in older files.
    pub contention_resolved: Option<bool>,
}

impl CurvePoint {
    /// The memory's share of one iteration of the throughput loop, ns:
    /// its time per iteration (`line_bytes` × 1e9 / `throughput_bytes_per_s`)
    /// less the same loop's with its load cached (`work_alone_ns`), so
    /// that a CPU running faster or slower between points does not move
    /// it. `None` where either was not measured.
    pub fn memory_share_ns(&self, line_bytes: u64) -> Option<f64> {
        let throughput = self.throughput_bytes_per_s.filter(|&t| t > 0.0)?;
        Some(line_bytes as f64 * 1e9 / throughput - self.work_alone_ns?)
    }
}

/// Whether contended rounds are resolvably slower than uncontended ones:
/// the lowest contended latency exceeds the highest uncontended one (the
/// two sets of rounds do not overlap). With 3 rounds each, a machine on
/// which contention changes nothing gives this by chance in 1 of 20
/// calibrations (the 3 largest of 6 exchangeable values all fall on the
/// contended side: 1 / C(6, 3)). Both ranges are `[min, max]` ns.
pub fn contention_resolved(uncontended_ns: [f64; 2], contended_ns: [f64; 2]) -> bool {
    contended_ns[0] > uncontended_ns[1]
}

impl LatencyTable {
    /// Reads and checks `path` ([`LatencyTable::check`]).
    ///
    /// Errors: the file cannot be read ([`NumaFileError::Io`]), is not JSON
    /// of this shape ([`NumaFileError::Json`]) or is inconsistent
    /// ([`NumaFileError::Invalid`]); every message names `path`.
    pub fn read(path: &Path) -> Result<LatencyTable, NumaFileError> {
        let bytes = std::fs::read(path).map_err(|source| NumaFileError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        LatencyTable::from_json(path, &bytes)
    }

    /// Parses and checks the content of a latency file; `path` is only used
    /// in errors.
    pub fn from_json(path: &Path, bytes: &[u8]) -> Result<LatencyTable, NumaFileError> {
        let table: LatencyTable =
            serde_json::from_slice(bytes).map_err(|source| NumaFileError::Json {
                path: path.to_path_buf(),
                what: "latency table (docs/numa.md)",
                source,
            })?;
        table.check().map_err(|problem| NumaFileError::Invalid {
            path: path.to_path_buf(),
            problem,
        })?;
        Ok(table)
    }

    /// Writes the table as pretty JSON to `path` (through a temporary file
    /// renamed into place). Errors: [`NumaFileError::Io`].
    pub fn write(&self, path: &Path) -> Result<(), NumaFileError> {
        let mut json = serde_json::to_vec_pretty(self).expect("a latency table serialises");
        json.push(b'\n');
        write_atomically(path, &json)
    }

    /// Checks the shapes (N, N×N, N×N×N), that every latency the model
    /// uses is a positive finite number and that every off-diagonal remote
    /// entry is present. Returns the first problem as a sentence naming the
    /// field and its indices.
    pub fn check(&self) -> Result<(), String> {
        let n = self.nodes;
        if n == 0 {
            return Err("`nodes` is 0: a machine has at least one node".into());
        }
        // The name is built only for an error: a table of 64 nodes has
        // 260 000 entries.
        let positive = |what: &dyn Fn() -> String, v: f64| -> Result<(), String> {
            if v.is_finite() && v > 0.0 {
                Ok(())
            } else {
                Err(format!(
                    "{} is {v}: latencies must be positive numbers of ns",
                    what()
                ))
            }
        };
        let len = |what: &dyn Fn() -> String, got: usize, expected: &str| -> Result<(), String> {
            if got == n {
                Ok(())
            } else {
                Err(format!(
                    "{} has {got} entries, expected {n} ({expected}, `nodes` = {n})",
                    what()
                ))
            }
        };
        len(
            &|| "l_nocont_ns".to_string(),
            self.l_nocont_ns.len(),
            "one per node",
        )?;
        for (i, v) in self.l_nocont_ns.iter().enumerate() {
            positive(&|| format!("l_nocont_ns[{i}]"), *v)?;
        }
        len(
            &|| "l_cont_ns".to_string(),
            self.l_cont_ns.len(),
            "one row per node",
        )?;
        for (i, row) in self.l_cont_ns.iter().enumerate() {
            len(&|| format!("l_cont_ns[{i}]"), row.len(), "m = 1..N")?;
            for (m, v) in row.iter().enumerate() {
                positive(&|| format!("l_cont_ns[{i}][{m}] (m = {})", m + 1), *v)?;
            }
        }
        if let Some(r) = &self.restart_ns {
            len(&|| "restart_ns".to_string(), r.len(), "one per node")?;
            for (i, v) in r.iter().enumerate() {
                positive(&|| format!("restart_ns[{i}]"), *v)?;
            }
        }
        len(
            &|| "r_nocont_ns".to_string(),
            self.r_nocont_ns.len(),
            "one row per source node k",
        )?;
        len(
            &|| "r_cont_ns".to_string(),
            self.r_cont_ns.len(),
            "one row per source node k",
        )?;
        for k in 0..n {
            len(
                &|| format!("r_nocont_ns[{k}]"),
                self.r_nocont_ns[k].len(),
                "one per target node i",
            )?;
            len(
                &|| format!("r_cont_ns[{k}]"),
                self.r_cont_ns[k].len(),
                "one per target node i",
            )?;
            for i in (0..n).filter(|&i| i != k) {
                match self.r_nocont_ns[k][i] {
                    Some(v) => positive(&|| format!("r_nocont_ns[{k}][{i}]"), v)?,
                    None => {
                        return Err(format!(
                            "r_nocont_ns[{k}][{i}] is null: the latency from node {k} to node {i} is needed"
                        ))
                    }
                }
                match &self.r_cont_ns[k][i] {
                    Some(row) => {
                        len(&|| format!("r_cont_ns[{k}][{i}]"), row.len(), "m = 1..N")?;
                        for (m, v) in row.iter().enumerate() {
                            positive(&|| format!("r_cont_ns[{k}][{i}][{m}] (m = {})", m + 1), *v)?;
                        }
                    }
                    None => {
                        return Err(format!(
                            "r_cont_ns[{k}][{i}] is null: the latencies from node {k} to node {i} under contention are needed"
                        ))
                    }
                }
            }
        }
        Ok(())
    }

    /// `l_nocont` of node `i`, ns. Panics if `i` ≥ `nodes` (callers check
    /// node numbers against [`LatencyTable::nodes`] first).
    pub fn l_nocont(&self, i: usize) -> f64 {
        self.l_nocont_ns[i]
    }

    /// `l_cont(m)` of node `i`, ns, for m = 1..N.
    pub fn l_cont(&self, i: usize, m: usize) -> f64 {
        self.l_cont_ns[i][m - 1]
    }

    /// `r_ki,nocont`, ns (k ≠ i; for k = i, `l_nocont(i)`).
    pub fn r_nocont(&self, k: usize, i: usize) -> f64 {
        if k == i {
            return self.l_nocont(i);
        }
        self.r_nocont_ns[k][i].unwrap_or(f64::NAN)
    }

    /// `r_ki,cont(m)`, ns, for m = 1..N (k ≠ i; for k = i, `l_cont(i, m)`).
    pub fn r_cont(&self, k: usize, i: usize, m: usize) -> f64 {
        if k == i {
            return self.l_cont(i, m);
        }
        self.r_cont_ns[k][i]
            .as_ref()
            .map_or(f64::NAN, |row| row[m - 1])
    }

    /// The time window of Eq. 2 for node `i`, ns: the restart latency when
    /// the table has one, else `l_nocont(i)`.
    pub fn window(&self, i: usize) -> f64 {
        self.restart_ns.as_ref().map_or(self.l_nocont(i), |r| r[i])
    }
}

/// Writes `bytes` to `path` through a temporary file beside it that is
/// renamed into place, so a reader never sees half a file.
pub(crate) fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), NumaFileError> {
    use std::io::Write;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "numa".into());
    let tmp = path.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
    let io = |p: &Path| {
        let p = p.to_path_buf();
        move |source| NumaFileError::Io { path: p, source }
    };
    let result = (|| {
        let mut f = std::fs::File::create(&tmp).map_err(io(&tmp))?;
        f.write_all(bytes).map_err(io(&tmp))?;
        f.sync_all().map_err(io(&tmp))?;
        std::fs::rename(&tmp, path).map_err(io(path))
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    fn two_nodes() -> LatencyTable {
        LatencyTable {
            nodes: 2,
            l_nocont_ns: vec![100.0, 110.0],
            l_cont_ns: vec![vec![150.0, 200.0], vec![160.0, 210.0]],
            r_nocont_ns: vec![vec![None, Some(180.0)], vec![Some(190.0), None]],
            r_cont_ns: vec![
                vec![None, Some(vec![230.0, 300.0])],
                vec![Some(vec![240.0, 310.0]), None],
            ],
            restart_ns: None,
            calibration: None,
        }
    }

    #[test]
    fn contention_is_resolved_only_when_the_rounds_do_not_overlap() {
        assert!(contention_resolved([100.0, 104.0], [104.5, 120.0]));
        assert!(!contention_resolved([100.0, 104.0], [104.0, 120.0]));
        assert!(!contention_resolved([100.0, 104.0], [99.0, 103.0]));
        assert!(!contention_resolved([100.0, 104.0], [90.0, 95.0]));
    }

    #[test]
    fn a_point_written_before_the_rounds_were_kept_still_reads() {
        let p: CurvePoint = serde_json::from_str(
            r#"{"master_node":0,"master_cpu":0,"memory_node":0,"contenders":1,"contender_cpus":[1],
                "latency_ns":150.0,"back_to_back_bytes_per_s":4e8,"throughput_bytes_per_s":2e8,
                "contender_bytes_per_s":1e10}"#,
        )
        .unwrap();
        assert_eq!(p.latency_range_ns, None);
        assert_eq!(p.contention_resolved, None);
    }

    #[test]
    fn accessors_follow_the_paper_indices() {
        let t = two_nodes();
        t.check().unwrap();
        assert_eq!(t.l_cont(1, 2), 210.0);
        assert_eq!(t.r_nocont(1, 0), 190.0);
        assert_eq!(t.r_cont(0, 1, 1), 230.0);
        // The diagonal is the local latency.
        assert_eq!(t.r_nocont(0, 0), 100.0);
        assert_eq!(t.r_cont(1, 1, 2), 210.0);
        // No restart latency: the window is l_nocont.
        assert_eq!(t.window(1), 110.0);
    }

    #[test]
    fn shapes_and_values_are_checked() {
        let mut t = two_nodes();
        t.l_cont_ns[1].pop();
        assert!(t
            .check()
            .unwrap_err()
            .contains("l_cont_ns[1] has 1 entries"));
        let mut t = two_nodes();
        t.r_nocont_ns[0][1] = None;
        assert!(t.check().unwrap_err().contains("from node 0 to node 1"));
        let mut t = two_nodes();
        t.l_nocont_ns[0] = -3.0;
        assert!(t.check().unwrap_err().contains("l_nocont_ns[0] is -3"));
        let mut t = two_nodes();
        t.nodes = 0;
        assert!(t.check().is_err());
    }

    #[test]
    fn json_round_trip_and_errors_name_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("latency.json");
        two_nodes().write(&p).unwrap();
        assert_eq!(LatencyTable::read(&p).unwrap(), two_nodes());
        std::fs::write(&p, b"{\"nodes\": 1").unwrap();
        let e = LatencyTable::read(&p).unwrap_err().to_string();
        assert!(
            e.contains("latency.json") && e.contains("not a valid latency table"),
            "{e}"
        );
        // One node: null remote entries are fine.
        std::fs::write(
            &p,
            br#"{"nodes":1,"l_nocont_ns":[90],"l_cont_ns":[[120]],"r_nocont_ns":[[null]],"r_cont_ns":[[null]]}"#,
        )
        .unwrap();
        let t = LatencyTable::read(&p).unwrap();
        assert_eq!(t.l_cont(0, 1), 120.0);
    }
}
