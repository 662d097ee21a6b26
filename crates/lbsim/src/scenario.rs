//! Scenario configuration: the raw file (serde, every field documented with its unit in its name,
//! unknown keys rejected), `--set key.path=value` overrides, and validation into a built
//! [`Scenario`]. Errors name the file and line, or the key.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::lb;
use crate::net::{LinkParams, Topology};
use crate::time::{BitsPerSec, SimTime};
use crate::workload::{self, FlowSpec};

/// An error in user input: a scenario, an override, or a trace file.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{origin}: {msg}")]
    Parse { origin: String, msg: String },
    #[error("{origin}: key `{key}`: {msg}")]
    Invalid {
        origin: String,
        key: String,
        msg: String,
    },
    #[error("--set {arg}: {msg}")]
    Set { arg: String, msg: String },
    #[error("{path}:{line}: {msg}")]
    Trace {
        path: String,
        line: usize,
        msg: String,
    },
    #[error("{path}: {msg}")]
    Io { path: String, msg: String },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TopologyKind {
    FatTree,
    LeafSpine,
}

/// `[topology]`
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TopologyConfig {
    pub kind: TopologyKind,
    /// Fat-tree arity (even): k^3/4 hosts.
    pub k: u32,
    /// Leaf-spine: hosts under each leaf.
    pub hosts_per_leaf: u32,
    /// Leaf-spine: number of leaves.
    pub leaves: u32,
    /// Leaf-spine: number of spines (one link from every leaf to every spine).
    pub spines: u32,
    /// Leaf-spine: host capacity over uplink capacity per leaf; sets the uplink rate to
    /// hosts_per_leaf x link_gbps / (spines x oversubscription).
    pub oversubscription: f64,
    pub link_gbps: f64,
    pub link_latency_ns: f64,
    /// Added to every hop into a switch.
    pub switch_latency_ns: f64,
    /// Drop-tail buffer per switch egress port.
    pub buffer_bytes: u64,
    /// CE-mark data packets arriving to a queue holding more than this (default: 20% of the buffer).
    pub ecn_threshold_bytes: Option<u64>,
}

impl Default for TopologyConfig {
    fn default() -> Self {
        TopologyConfig {
            kind: TopologyKind::FatTree,
            k: 8,
            hosts_per_leaf: 16,
            leaves: 8,
            spines: 8,
            oversubscription: 1.0,
            link_gbps: 800.0,
            link_latency_ns: 500.0,
            switch_latency_ns: 0.0,
            buffer_bytes: 800_000,
            ecn_threshold_bytes: None,
        }
    }
}

/// `[packet]`
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PacketConfig {
    pub payload_bytes: u32,
    /// Headers on every data packet (RoCEv2: 62).
    pub header_bytes: u32,
    pub ack_bytes: u32,
}

impl Default for PacketConfig {
    fn default() -> Self {
        PacketConfig {
            payload_bytes: 4096,
            header_bytes: 62,
            ack_bytes: 64,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CcKind {
    /// Idealized: every flow sends at rate_coef x line rate shared by its host's active flows.
    Constant,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LossRecoveryKind {
    /// Zero-overhead rateless erasure coding: send new packets until the receiver holds the message.
    IdealErasure,
}

/// `[transport]`
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TransportConfig {
    pub cc: CcKind,
    /// Fraction of the NIC's line rate a host sends data at (0 < rate_coef <= 1).
    pub rate_coef: f64,
    pub loss_recovery: LossRecoveryKind,
}

impl Default for TransportConfig {
    fn default() -> Self {
        TransportConfig {
            cc: CcKind::Constant,
            rate_coef: 1.0,
            loss_recovery: LossRecoveryKind::IdealErasure,
        }
    }
}

/// `[load_balancing]`
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LoadBalancingConfig {
    /// A name from the registry (`lbsim list`).
    pub scheme: String,
}

impl Default for LoadBalancingConfig {
    fn default() -> Self {
        LoadBalancingConfig {
            scheme: "ecmp".into(),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkloadKind {
    Permutation,
    AllToAll,
    ConnectionMatrix,
}

impl WorkloadKind {
    pub fn name(self) -> &'static str {
        match self {
            WorkloadKind::Permutation => "permutation",
            WorkloadKind::AllToAll => "all_to_all",
            WorkloadKind::ConnectionMatrix => "connection_matrix",
        }
    }
}

/// `[workload]`
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WorkloadConfig {
    pub kind: WorkloadKind,
    /// Size of each flow's message (permutation, all_to_all).
    pub message_bytes: u64,
    /// Connection-matrix file (htsim's format); relative paths resolve against the scenario
    /// file's directory.
    pub path: Option<PathBuf>,
}

impl Default for WorkloadConfig {
    fn default() -> Self {
        WorkloadConfig {
            kind: WorkloadKind::Permutation,
            message_bytes: 2 * 1024 * 1024,
            path: None,
        }
    }
}

/// A scenario file, as written by the user. `Default` is the built-in scenario: the study's
/// 128-host fat-tree (k=8, 800 Gb/s, 0.5 us links, 800 KB buffers) with a 2 MiB permutation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ScenarioFile {
    pub seed: u64,
    /// Stop the run here; flows unfinished by then are reported as such.
    pub end_time_us: Option<f64>,
    pub topology: TopologyConfig,
    pub packet: PacketConfig,
    pub transport: TransportConfig,
    pub load_balancing: LoadBalancingConfig,
    pub workload: WorkloadConfig,
}

impl Default for ScenarioFile {
    fn default() -> Self {
        ScenarioFile {
            seed: 1,
            end_time_us: None,
            topology: TopologyConfig::default(),
            packet: PacketConfig::default(),
            transport: TransportConfig::default(),
            load_balancing: LoadBalancingConfig::default(),
            workload: WorkloadConfig::default(),
        }
    }
}

/// Where a scenario came from, for error messages and relative paths.
#[derive(Clone, Debug)]
pub struct Origin {
    pub name: String,
    pub dir: Option<PathBuf>,
}

impl Origin {
    pub fn builtin() -> Origin {
        Origin {
            name: "built-in default scenario".into(),
            dir: None,
        }
    }
    pub fn file(path: &Path) -> Origin {
        Origin {
            name: path.display().to_string(),
            dir: path.parent().map(Path::to_path_buf),
        }
    }
}

/// Parses one `key.path=value` override. The value is read as a TOML value (number, bool, string,
/// array); anything that is not valid TOML is taken as a bare string.
pub fn parse_set(arg: &str) -> Result<(Vec<String>, toml::Value), ConfigError> {
    let err = |msg: &str| ConfigError::Set {
        arg: arg.to_string(),
        msg: msg.to_string(),
    };
    let (key, value) = arg
        .split_once('=')
        .ok_or_else(|| err("expected key.path=value"))?;
    let key = key.trim();
    if key.is_empty() || key.split('.').any(|p| p.trim().is_empty()) {
        return Err(err("empty key"));
    }
    let value = value.trim();
    let parsed = toml::from_str::<toml::Table>(&format!("v = {value}"))
        .ok()
        .and_then(|mut t| t.remove("v"))
        .unwrap_or_else(|| toml::Value::String(value.to_string()));
    Ok((
        key.split('.').map(|s| s.trim().to_string()).collect(),
        parsed,
    ))
}

/// Applies overrides to a parsed TOML table.
pub fn apply_sets(table: &mut toml::Table, sets: &[String]) -> Result<(), ConfigError> {
    for arg in sets {
        let (path, value) = parse_set(arg)?;
        let mut t = &mut *table;
        for part in &path[..path.len() - 1] {
            let entry = t
                .entry(part.clone())
                .or_insert_with(|| toml::Value::Table(toml::Table::new()));
            t = entry.as_table_mut().ok_or_else(|| ConfigError::Set {
                arg: arg.clone(),
                msg: format!("`{part}` is not a section"),
            })?;
        }
        t.insert(path[path.len() - 1].clone(), value);
    }
    Ok(())
}

impl ScenarioFile {
    /// Reads a scenario from TOML text plus overrides.
    pub fn from_toml(text: &str, sets: &[String], origin: &Origin) -> Result<Self, ConfigError> {
        // Deserialize the text itself first: toml's errors then carry the line and column.
        let file: ScenarioFile = toml::from_str(text).map_err(|e| ConfigError::Parse {
            origin: origin.name.clone(),
            msg: e.to_string().trim_end().to_string(),
        })?;
        if sets.is_empty() {
            return Ok(file);
        }
        let mut table: toml::Table = toml::from_str(text).map_err(|e| ConfigError::Parse {
            origin: origin.name.clone(),
            msg: e.to_string(),
        })?;
        apply_sets(&mut table, sets)?;
        Self::from_table(table, origin, "after --set")
    }

    /// The built-in default with overrides.
    pub fn builtin(sets: &[String]) -> Result<Self, ConfigError> {
        Self::from_toml("", sets, &Origin::builtin())
    }

    pub fn from_table(
        table: toml::Table,
        origin: &Origin,
        when: &str,
    ) -> Result<Self, ConfigError> {
        serde_path_to_error::deserialize(toml::Value::Table(table)).map_err(|e| {
            let path = e.path().to_string();
            ConfigError::Invalid {
                origin: format!("{} ({when})", origin.name),
                key: path,
                msg: e.into_inner().to_string(),
            }
        })
    }

    pub fn to_toml(&self) -> String {
        toml::to_string(self).expect("scenario serializes")
    }

    pub fn scheme(&self) -> Result<&'static lb::SchemeInfo, String> {
        lb::scheme(&self.load_balancing.scheme).ok_or_else(|| {
            format!(
                "unknown scheme `{}`; valid schemes: {}",
                self.load_balancing.scheme,
                lb::scheme_names().join(", ")
            )
        })
    }
}

/// A validated scenario: the topology built and the flows generated.
#[derive(Clone, Debug)]
pub struct Scenario {
    pub file: ScenarioFile,
    pub scheme: &'static lb::SchemeInfo,
    pub topology: Topology,
    pub flows: Vec<FlowSpec>,
    pub ecn_threshold_bytes: u64,
    pub end_time: Option<SimTime>,
}

fn check(ok: bool, origin: &Origin, key: &str, msg: &str) -> Result<(), ConfigError> {
    if ok {
        Ok(())
    } else {
        Err(ConfigError::Invalid {
            origin: origin.name.clone(),
            key: key.into(),
            msg: msg.into(),
        })
    }
}

fn finite_nonneg(x: f64) -> bool {
    x.is_finite() && x >= 0.0
}

impl Scenario {
    /// Validates `file` and builds the topology and workload.
    pub fn build(file: ScenarioFile, origin: &Origin) -> Result<Scenario, ConfigError> {
        let t = &file.topology;
        let o = origin;
        check(
            t.link_gbps.is_finite() && t.link_gbps > 0.0 && t.link_gbps <= 1e6,
            o,
            "topology.link_gbps",
            "must be a positive rate in Gb/s",
        )?;
        check(
            finite_nonneg(t.link_latency_ns) && t.link_latency_ns < 1e9,
            o,
            "topology.link_latency_ns",
            "must be a non-negative number of nanoseconds",
        )?;
        check(
            finite_nonneg(t.switch_latency_ns) && t.switch_latency_ns < 1e9,
            o,
            "topology.switch_latency_ns",
            "must be a non-negative number of nanoseconds",
        )?;
        let p = &file.packet;
        check(
            p.payload_bytes > 0,
            o,
            "packet.payload_bytes",
            "must be positive",
        )?;
        check(p.ack_bytes > 0, o, "packet.ack_bytes", "must be positive")?;
        check(
            p.payload_bytes.checked_add(p.header_bytes).is_some(),
            o,
            "packet.header_bytes",
            "too large",
        )?;
        let mtu = (p.payload_bytes + p.header_bytes) as u64;
        check(
            t.buffer_bytes >= mtu,
            o,
            "topology.buffer_bytes",
            &format!("must hold at least one full packet ({mtu} bytes)"),
        )?;
        let tr = &file.transport;
        check(
            tr.rate_coef.is_finite() && tr.rate_coef > 0.0 && tr.rate_coef <= 1.0,
            o,
            "transport.rate_coef",
            "must be in (0, 1]",
        )?;
        let scheme = file.scheme().map_err(|msg| ConfigError::Invalid {
            origin: o.name.clone(),
            key: "load_balancing.scheme".into(),
            msg,
        })?;
        let end_time = match file.end_time_us {
            None => None,
            Some(us) => {
                check(
                    us.is_finite() && us > 0.0,
                    o,
                    "end_time_us",
                    "must be a positive number of microseconds",
                )?;
                Some(SimTime::from_us_f64(us))
            }
        };
        let params = LinkParams {
            rate: BitsPerSec::from_gbps(t.link_gbps),
            latency: SimTime::from_ns_f64(t.link_latency_ns),
            switch_latency: SimTime::from_ns_f64(t.switch_latency_ns),
        };
        let topology = match t.kind {
            TopologyKind::FatTree => {
                check(
                    t.k >= 2 && t.k.is_multiple_of(2),
                    o,
                    "topology.k",
                    &format!("fat-tree k must be even and at least 2, got {}", t.k),
                )?;
                check(
                    t.k <= 128,
                    o,
                    "topology.k",
                    "at most 128 (over 500,000 hosts)",
                )?;
                Topology::fat_tree(t.k, params)
            }
            TopologyKind::LeafSpine => {
                check(
                    t.hosts_per_leaf >= 1,
                    o,
                    "topology.hosts_per_leaf",
                    "must be >= 1",
                )?;
                check(t.leaves >= 1, o, "topology.leaves", "must be >= 1")?;
                check(t.spines >= 1, o, "topology.spines", "must be >= 1")?;
                check(
                    t.oversubscription.is_finite() && t.oversubscription > 0.0,
                    o,
                    "topology.oversubscription",
                    "must be positive",
                )?;
                check(
                    (t.hosts_per_leaf as u64 * t.leaves as u64) < (1 << 24),
                    o,
                    "topology.leaves",
                    "too many hosts",
                )?;
                let up_gbps =
                    t.hosts_per_leaf as f64 * t.link_gbps / (t.spines as f64 * t.oversubscription);
                Topology::leaf_spine(
                    t.hosts_per_leaf,
                    t.leaves,
                    t.spines,
                    params,
                    BitsPerSec::from_gbps(up_gbps),
                )
            }
        };
        check(
            topology.hosts >= 2,
            o,
            "topology",
            "needs at least two hosts",
        )?;
        let ecn = t.ecn_threshold_bytes.unwrap_or(t.buffer_bytes / 5);
        let flows = workload::generate(&file, &topology, origin)?;
        Ok(Scenario {
            scheme,
            topology,
            flows,
            ecn_threshold_bytes: ecn,
            end_time,
            file,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_text_is_the_default() {
        let f = ScenarioFile::from_toml("", &[], &Origin::builtin()).unwrap();
        assert_eq!(f, ScenarioFile::default());
    }

    #[test]
    fn sets_override_nested_keys_with_typed_values() {
        let sets = vec![
            "topology.k=4".to_string(),
            "load_balancing.scheme=host_spray".to_string(),
            "workload.kind=\"all_to_all\"".to_string(),
        ];
        let f = ScenarioFile::builtin(&sets).unwrap();
        assert_eq!(f.topology.k, 4);
        assert_eq!(f.load_balancing.scheme, "host_spray");
        assert_eq!(f.workload.kind, WorkloadKind::AllToAll);
    }

    #[test]
    fn unknown_keys_and_bad_types_name_the_key() {
        let e = ScenarioFile::from_toml("[topology]\nkk = 3\n", &[], &Origin::builtin())
            .unwrap_err()
            .to_string();
        assert!(e.contains("kk") && e.contains("line 2"), "{e}");
        let e = ScenarioFile::builtin(&["topology.k=\"x\"".into()])
            .unwrap_err()
            .to_string();
        assert!(e.contains("topology.k"), "{e}");
        let e = ScenarioFile::builtin(&["topology.nope=1".into()])
            .unwrap_err()
            .to_string();
        assert!(e.contains("nope"), "{e}");
    }

    #[test]
    fn odd_k_is_rejected() {
        let f = ScenarioFile::builtin(&["topology.k=5".into()]).unwrap();
        let e = Scenario::build(f, &Origin::builtin())
            .unwrap_err()
            .to_string();
        assert!(e.contains("topology.k") && e.contains("even"), "{e}");
    }

    #[test]
    fn unknown_scheme_lists_valid_ones() {
        let f = ScenarioFile::builtin(&["load_balancing.scheme=magic".into()]).unwrap();
        let e = Scenario::build(f, &Origin::builtin())
            .unwrap_err()
            .to_string();
        assert!(e.contains("magic") && e.contains("host_spray"), "{e}");
    }
}
