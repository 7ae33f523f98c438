//! The NUMA topology of this machine from sysfs
//! (`/sys/devices/system/node`): the online nodes, the CPUs of each, which
//! nodes have memory, the node distances (the ACPI SLIT), and the node of
//! every CPU. A kernel without NUMA support has no `node` directory: the
//! machine is then one node holding every online CPU.

use std::path::{Path, PathBuf};

use crate::cpus::{online_cpu_list, parse_cpu_list};

/// The sysfs directory of the nodes.
pub const NODE_DIR: &str = "/sys/devices/system/node";

/// One NUMA node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    /// The kernel's node number.
    pub id: u32,
    /// Its online CPUs (empty for a memory-only node, such as CXL memory).
    pub cpus: Vec<u32>,
    /// Whether it has memory (false for a CPU-only node).
    pub memory: bool,
    /// Distance to every node by node number (the SLIT, 10 = local);
    /// empty when unknown.
    pub distance: Vec<u32>,
}

/// The nodes of the machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Topology {
    /// Online nodes, by number.
    pub nodes: Vec<Node>,
    /// Where the facts come from (the sysfs directory, or why the machine
    /// is taken as one node).
    pub source: String,
}

fn read(path: &Path) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
}

impl Topology {
    /// The topology of this machine.
    pub fn read() -> Topology {
        Topology::read_from(Path::new(NODE_DIR), &online_cpu_list())
    }

    /// The topology described by the sysfs node directory `dir`; `online`
    /// are the online CPUs (used when `dir` is missing: one node with all
    /// of them).
    pub fn read_from(dir: &Path, online: &[u32]) -> Topology {
        let one = |why: String| Topology {
            nodes: vec![Node {
                id: 0,
                cpus: online.to_vec(),
                memory: true,
                distance: vec![10],
            }],
            source: why,
        };
        let Some(list) = read(&dir.join("online")) else {
            return one(format!(
                "{} is missing (a kernel without NUMA): one node with every CPU",
                dir.display()
            ));
        };
        let Ok(ids) = parse_cpu_list(&list) else {
            return one(format!(
                "{}/online is `{list}`: not a node list",
                dir.display()
            ));
        };
        let memory: Vec<u32> = read(&dir.join("has_memory"))
            .and_then(|s| parse_cpu_list(&s).ok())
            .unwrap_or_else(|| ids.clone());
        let nodes = ids
            .iter()
            .map(|&id| {
                let node_dir: PathBuf = dir.join(format!("node{id}"));
                let cpus = read(&node_dir.join("cpulist"))
                    .and_then(|s| {
                        if s.is_empty() {
                            Some(Vec::new())
                        } else {
                            parse_cpu_list(&s).ok()
                        }
                    })
                    .unwrap_or_default()
                    .into_iter()
                    .filter(|c| online.is_empty() || online.contains(c))
                    .collect();
                let distance = read(&node_dir.join("distance"))
                    .map(|s| {
                        s.split_whitespace()
                            .filter_map(|d| d.parse().ok())
                            .collect()
                    })
                    .unwrap_or_default();
                Node {
                    id,
                    cpus,
                    memory: memory.contains(&id),
                    distance,
                }
            })
            .collect();
        Topology {
            nodes,
            source: dir.display().to_string(),
        }
    }

    /// N: the highest node number + 1 (node numbers index the latency
    /// table and the histograms).
    pub fn node_count(&self) -> usize {
        self.nodes
            .iter()
            .map(|n| n.id as usize + 1)
            .max()
            .unwrap_or(1)
    }

    /// The node of `cpu`, when it is online.
    pub fn node_of_cpu(&self, cpu: u32) -> Option<u32> {
        self.nodes
            .iter()
            .find(|n| n.cpus.contains(&cpu))
            .map(|n| n.id)
    }

    /// Node of every CPU number up to the highest online CPU.
    pub fn cpu_nodes(&self) -> Vec<Option<u32>> {
        let max = self
            .nodes
            .iter()
            .flat_map(|n| n.cpus.iter().copied())
            .max()
            .map_or(0, |c| c as usize + 1);
        (0..max as u32).map(|c| self.node_of_cpu(c)).collect()
    }

    /// The node `id`, when online.
    pub fn node(&self, id: u32) -> Option<&Node> {
        self.nodes.iter().find(|n| n.id == id)
    }

    /// Distance from node `a` to node `b` (the SLIT); 10 for a = b, 20
    /// when unknown.
    pub fn distance(&self, a: u32, b: u32) -> u32 {
        if a == b {
            return 10;
        }
        self.node(a)
            .and_then(|n| n.distance.get(b as usize).copied())
            .unwrap_or(20)
    }

    /// Node numbers missing between 0 and the highest (sysfs may number
    /// nodes sparsely).
    pub fn gaps(&self) -> Vec<u32> {
        (0..self.node_count() as u32)
            .filter(|id| self.node(*id).is_none())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fixture in sysfs form: two sockets (nodes 0 and 1 with CPUs) and
    /// a CXL memory node 2 without CPUs.
    fn fixture() -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        let w = |p: &str, s: &str| {
            let path = d.path().join(p);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, s).unwrap();
        };
        w("online", "0-2\n");
        w("has_memory", "0-2\n");
        w("node0/cpulist", "0-3\n");
        w("node0/distance", "10 21 14\n");
        w("node1/cpulist", "4-7\n");
        w("node1/distance", "21 10 24\n");
        w("node2/cpulist", "\n");
        w("node2/distance", "14 24 10\n");
        d
    }

    #[test]
    fn sysfs_nodes_cpus_and_distances() {
        let d = fixture();
        let t = Topology::read_from(d.path(), &[0, 1, 2, 3, 4, 5, 6, 7]);
        assert_eq!(t.node_count(), 3);
        assert_eq!(t.nodes[1].cpus, vec![4, 5, 6, 7]);
        assert!(t.nodes[2].cpus.is_empty() && t.nodes[2].memory);
        assert_eq!(t.node_of_cpu(5), Some(1));
        assert_eq!(t.cpu_nodes()[3], Some(0));
        assert_eq!(t.distance(0, 2), 14);
        assert_eq!(t.distance(2, 1), 24);
        assert!(t.gaps().is_empty());
    }

    #[test]
    fn no_numa_in_the_kernel_is_one_node() {
        let d = tempfile::tempdir().unwrap();
        let t = Topology::read_from(&d.path().join("missing"), &[0, 1]);
        assert_eq!(t.nodes.len(), 1);
        assert_eq!(t.nodes[0].cpus, vec![0, 1]);
        assert!(t.source.contains("one node"));
    }

    #[test]
    fn this_machine_has_its_cpus_on_nodes() {
        let t = Topology::read();
        assert!(!t.nodes.is_empty());
        for c in online_cpu_list() {
            assert!(t.node_of_cpu(c).is_some(), "CPU {c} on no node: {t:?}");
        }
    }
}
