//! `[topology]` and `[packet]`: the fabric's and the packets' settings as the scenario file
//! gives them.

use serde::{Deserialize, Serialize};

use crate::config::defaults;

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
    /// RED-style marking (DCQCN's switch): between the threshold (Kmin) and this (Kmax) a data
    /// packet is marked with probability rising linearly to `ecn_pmax`; above it, always.
    /// Unset: every packet above the threshold is marked (DCTCP's step).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ecn_kmax_bytes: Option<u64>,
    /// RED's marking probability at Kmax (default 1; the DCQCN paper used 0.01).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ecn_pmax: Option<f64>,
    /// Trimming: what is left of a data packet whose payload a full queue cut (default 64 bytes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trim_header_bytes: Option<u32>,
    /// Trimming and EQDS: bytes of control packets (trimmed headers, ACKs, NACKs, credits) a port
    /// holds in its priority queue before dropping them (default: the data buffer).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub control_buffer_bytes: Option<u64>,
    /// An htsim `.topo` tier file (relative to the scenario file): sets `kind` and the sizes,
    /// `link_gbps`, the latencies and (with Queue_*) `buffer_bytes` from it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub htsim_topo: Option<std::path::PathBuf>,
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
            ecn_kmax_bytes: None,
            ecn_pmax: None,
            trim_header_bytes: None,
            control_buffer_bytes: None,
            htsim_topo: None,
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

impl TopologyConfig {
    /// The ECN marking threshold Kmin: `ecn_threshold_bytes`, or its default share of the
    /// buffer.
    pub fn ecn_threshold(&self) -> u64 {
        self.ecn_threshold_bytes
            .unwrap_or(self.buffer_bytes / defaults::ECN_THRESHOLD_DIVISOR)
    }
}
