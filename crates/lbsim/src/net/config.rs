//! `[topology]` and `[packet]`: the fabric's and the packets' settings as the scenario file
//! gives them.

use serde::{Deserialize, Serialize};

use crate::config::defaults;

pub use super::kinds::TopologyKind;

/// `[[topology.tier]]`: one tier of a `clos` fabric, lowest first.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TierConfig {
    /// Down ports of each switch of the tier (hosts under a leaf; links to the tier below).
    pub down: u32,
    /// Up ports of each switch (0, the default, at the top tier).
    #[serde(default)]
    pub up: u32,
    /// The rate of the tier's down links (default `link_gbps`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gbps: Option<f64>,
    /// The latency of the tier's down links (default `link_latency_ns`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency_ns: Option<f64>,
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
    /// Clos: the number of hosts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hosts: Option<u32>,
    /// Clos with three tiers: hosts per pod.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pod_hosts: Option<u32>,
    /// Clos: the tiers, lowest first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tier: Vec<TierConfig>,
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
    /// Trimming: a trimmed header that meets a full control queue goes back to its sender, once,
    /// which treats it as a NACK (NDP's return-to-sender; default on). Off: it is dropped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub return_to_sender: Option<bool>,
    /// Priority flow control (IEEE 802.1Qbb) on the data class: a switch pauses the upstream
    /// egress of an input port whose data held in the switch exceeds `pfc_xoff_bytes`, and resumes it at
    /// `pfc_xon_bytes`; `buffer_bytes` is then each input port's share of the switch buffer.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub pfc: bool,
    /// PFC: pause above this many bytes held from one input port (default: the buffer less
    /// the headroom 2 x link latency x rate + 2 MTU).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pfc_xoff_bytes: Option<u64>,
    /// PFC: resume at or below this many bytes (default: XOFF less 2 MTU).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pfc_xon_bytes: Option<u64>,
    /// An htsim `.topo` tier file (relative to the scenario file): sets `kind` and the sizes,
    /// `link_gbps`, the latencies and (with Queue_*) `buffer_bytes` from it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub htsim_topo: Option<std::path::PathBuf>,
    /// A SimAI / ns-3 topology file (relative to the scenario file): the whole fabric, every
    /// link's rate and latency from it (`kind = "simai"`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub simai_topo: Option<std::path::PathBuf>,
    /// `ai`: servers, their make-up, and the fabric's shape (see `kinds::ai`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub servers: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server: Option<ServerConfig>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rails: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub planes: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub leaf_servers: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uplink_gbps: Option<f64>,
    /// `ai`: servers per zone (a pod of leaves and spines); with more than one zone a core
    /// tier joins the zones' spines (default: every server, one zone, no core).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zone_servers: Option<u32>,
    /// `ai` with zones: a spine's down bandwidth (to its zone's leaves) over its up bandwidth
    /// to the core (1; Meta's clusters taper 7:1 between zones).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub core_oversubscription: Option<f64>,
    /// An imported graph's fastest link (b/s) and longest latency (ns), for PFC's headroom.
    #[serde(skip)]
    pub file_links: Option<(u64, f64)>,
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
            hosts: None,
            pod_hosts: None,
            tier: Vec::new(),
            link_gbps: 800.0,
            link_latency_ns: 500.0,
            switch_latency_ns: 0.0,
            buffer_bytes: 800_000,
            ecn_threshold_bytes: None,
            ecn_kmax_bytes: None,
            ecn_pmax: None,
            trim_header_bytes: None,
            control_buffer_bytes: None,
            return_to_sender: None,
            pfc: false,
            pfc_xoff_bytes: None,
            pfc_xon_bytes: None,
            htsim_topo: None,
            simai_topo: None,
            servers: None,
            server: None,
            rails: None,
            planes: None,
            leaf_servers: None,
            uplink_gbps: None,
            zone_servers: None,
            core_oversubscription: None,
            file_links: None,
        }
    }
}

/// `[packet]`
/// `[topology.server]` of kind `ai`: one training server.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ServerConfig {
    /// GPUs, each a host with its own NIC.
    pub gpus: u32,
    /// Ports per NIC, each at `topology.link_gbps`: spread over the planes, then over two
    /// leaves of a plane.
    pub nic_ports: u32,
    /// Each GPU's NVLink to its domain's switch, per direction (0: no NVLink). H100: 900 GB/s
    /// both directions together.
    pub nvlink_gbps: f64,
    pub nvlink_latency_ns: f64,
    /// Servers per NVLink domain (9 for a 72-GPU rack of 8-GPU servers).
    pub domain_servers: u32,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            gpus: 8,
            nic_ports: 1,
            nvlink_gbps: 3600.0,
            nvlink_latency_ns: 25.0,
            domain_servers: 1,
        }
    }
}

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
    /// PFC headroom: what can still arrive from an input port after it crosses XOFF, for the
    /// fastest link of `rate_bps` (bits per second) with `latency_ps` of cable: the pause frame's
    /// trip up and the data already on the wire back (2 x latency x rate), the frame the
    /// upstream port is sending when the pause lands and the one that crossed XOFF (2 MTU).
    pub fn pfc_headroom(&self, rate_bps: u64, latency_ps: u64, mtu: u64) -> u64 {
        let wire = (2 * latency_ps as u128 * rate_bps as u128).div_ceil(8_000_000_000_000);
        wire as u64 + 2 * mtu
    }

    /// The fastest link's rate in bits per second: the host links, or a leaf-spine's uplinks
    /// if oversubscription below 1 makes them faster.
    pub fn fastest_link_bps(&self) -> u64 {
        if let Some((bps, _)) = self.file_links {
            return bps;
        }
        let mut gbps = self.link_gbps;
        if self.kind == TopologyKind::LeafSpine {
            let up = self.hosts_per_leaf as f64 * self.link_gbps
                / (self.spines.max(1) as f64 * self.oversubscription);
            if up.is_finite() {
                gbps = gbps.max(up);
            }
        }
        if self.kind == TopologyKind::Clos {
            for t in &self.tier {
                gbps = gbps.max(t.gbps.unwrap_or(0.0));
            }
        }
        if self.kind == TopologyKind::Ai {
            gbps = gbps.max(super::kinds::ai::extremes(self).0);
        }
        crate::time::BitsPerSec::from_gbps(gbps).0
    }

    /// The longest link latency in nanoseconds (a Clos may give each tier its own).
    pub fn longest_latency_ns(&self) -> f64 {
        if let Some((_, ns)) = self.file_links {
            return ns;
        }
        let mut ns = self.link_latency_ns;
        if self.kind == TopologyKind::Clos {
            for t in &self.tier {
                ns = ns.max(t.latency_ns.unwrap_or(0.0));
            }
        }
        if self.kind == TopologyKind::Ai {
            ns = ns.max(super::kinds::ai::extremes(self).1);
        }
        ns
    }

    /// PFC headroom for these links and packets (see `pfc_headroom`).
    pub fn pfc_headroom_for(&self, pk: &PacketConfig) -> u64 {
        let latency = crate::time::SimTime::from_ns_f64(self.longest_latency_ns()).ps();
        let mtu = (pk.payload_bytes + pk.header_bytes) as u64;
        self.pfc_headroom(self.fastest_link_bps(), latency, mtu)
    }

    /// PFC's (XOFF, XON) as given or defaulted (see `defaults::PFC_XON_MTUS`).
    pub fn pfc_thresholds(&self, headroom: u64, mtu: u64) -> (u64, u64) {
        let xoff = self
            .pfc_xoff_bytes
            .unwrap_or(self.buffer_bytes.saturating_sub(headroom));
        let xon = self
            .pfc_xon_bytes
            .unwrap_or(xoff.saturating_sub(defaults::PFC_XON_MTUS * mtu));
        (xoff, xon)
    }

    /// The ECN marking threshold Kmin: `ecn_threshold_bytes`, or its default share of the
    /// buffer.
    pub fn ecn_threshold(&self) -> u64 {
        self.ecn_threshold_bytes
            .unwrap_or(self.buffer_bytes / defaults::ECN_THRESHOLD_DIVISOR)
    }
}
