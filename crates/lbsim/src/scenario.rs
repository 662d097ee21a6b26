//! Scenario configuration: the raw file (serde, every field documented with its unit in its name,
//! unknown keys rejected), `--set key.path=value` overrides, and validation into a built
//! [`Scenario`]. Errors name the file and line, or the key.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::failure::{self, FailureConfig, FailureSpec, LinkFailure};
use crate::ids::MAX_EVENT_ID;
use crate::lb;
use crate::net::{LinkParams, Topology};
use crate::stats::bound;
use crate::time::{BitsPerSec, SimTime};
use crate::workload::{self, Dependencies, FlowSpec};

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

pub use crate::transport::cc::{CcConfigs, CcKind};
pub use crate::transport::LossRecoveryKind;

/// A policy config's verdict: Ok, or the offending field and why.
type CheckResult = Result<(), (&'static str, String)>;

/// `[transport.eqds]`: receiver-driven transport (Olteanu et al., NSDI 2022).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct EqdsConfig {
    /// Data a sender may send before its first credit, in BDPs of its path (EQDS: one BDP).
    pub unsolicited_bdp: f64,
    /// The receiver paces credits (one full packet each) at this fraction of its link (EQDS: 0.99).
    pub pull_rate: f64,
}

impl Default for EqdsConfig {
    fn default() -> Self {
        EqdsConfig {
            unsolicited_bdp: 1.0,
            pull_rate: 0.99,
        }
    }
}

/// `[transport]`
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TransportConfig {
    pub cc: CcKind,
    /// Fraction of the NIC's line rate a host sends data at (0 < rate_coef <= 1); with a real CC,
    /// the most any flow may send at.
    pub rate_coef: f64,
    pub loss_recovery: LossRecoveryKind,
    /// Retransmission timeout floor (default 100 us, the Ultra Ethernet floor): the timer is
    /// SRTT + 4 RTTVAR but never less. With the ideal erasure transport and constant CC it is a
    /// fixed no-ACK time that only tells the host's load balancer that ACKs stopped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rto_us: Option<f64>,
    /// Double the timeout on each consecutive expiry (reset by an RTT sample).
    pub rto_backoff: bool,
    /// erasure: repair packets sent with every message (default 25, the study's k: about 5% of
    /// a 2 MiB message).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub erasure_extra_packets: Option<u32>,
    /// sack (and loss detection for the erasure schemes under a windowed CC): a transmission is
    /// lost once one sent this many later was ACKed (default 3; the study: about 6 for
    /// all-to-all and 32 for permutation under spraying).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reorder_threshold: Option<u32>,
    /// The study's idealized CC under failures: each flow sends at B/F, F the flows per unit of
    /// live capacity on its most loaded cut (see `failure::flow_shares`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub failure_aware_rate: bool,
    #[serde(skip_serializing_if = "is_default")]
    pub dctcp: crate::transport::cc::DctcpConfig,
    #[serde(skip_serializing_if = "is_default")]
    pub dcqcn: crate::transport::cc::DcqcnConfig,
    #[serde(skip_serializing_if = "is_default")]
    pub swift: crate::transport::cc::SwiftConfig,
    #[serde(skip_serializing_if = "is_default")]
    pub mswift: crate::transport::cc::swift::MswiftConfig,
    #[serde(skip_serializing_if = "is_default")]
    pub nscc: crate::transport::cc::NsccConfig,
    #[serde(skip_serializing_if = "is_default")]
    pub eqds: EqdsConfig,
}

impl Default for TransportConfig {
    fn default() -> Self {
        TransportConfig {
            cc: CcKind::Constant,
            rate_coef: 1.0,
            loss_recovery: LossRecoveryKind::IdealErasure,
            rto_us: None,
            rto_backoff: true,
            erasure_extra_packets: None,
            reorder_threshold: None,
            failure_aware_rate: false,
            dctcp: Default::default(),
            dcqcn: Default::default(),
            swift: Default::default(),
            mswift: Default::default(),
            nscc: Default::default(),
            eqds: Default::default(),
        }
    }
}

impl TransportConfig {
    pub fn cc_configs(&self) -> CcConfigs {
        CcConfigs {
            dctcp: self.dctcp.clone(),
            dcqcn: self.dcqcn.clone(),
            swift: self.swift.clone(),
            mswift: self.mswift.clone(),
            nscc: self.nscc.clone(),
        }
    }

    /// Checks the options against the chosen CC and loss recovery: an option only another one
    /// reads is an error (it would silently do nothing), as are combinations that cannot work.
    fn validate(&self, topo: &TopologyConfig, o: &Origin) -> Result<(), ConfigError> {
        let err = |key: &str, msg: String| ConfigError::Invalid {
            origin: o.name.clone(),
            key: format!("transport.{key}"),
            msg,
        };
        let cc = self.cc;
        let lr = self.loss_recovery;
        let d = TransportConfig::default();
        let tables: [(&str, bool, &[CcKind]); 6] = [
            ("dctcp", self.dctcp != d.dctcp, &[CcKind::Dctcp]),
            ("dcqcn", self.dcqcn != d.dcqcn, &[CcKind::Dcqcn]),
            (
                "swift",
                self.swift != d.swift,
                &[CcKind::Swift, CcKind::Mswift],
            ),
            ("mswift", self.mswift != d.mswift, &[CcKind::Mswift]),
            ("nscc", self.nscc != d.nscc, &[CcKind::Nscc]),
            ("eqds", self.eqds != d.eqds, &[CcKind::Eqds]),
        ];
        for (name, given, users) in tables {
            if given && !users.contains(&cc) {
                let users: Vec<&str> = users.iter().map(|c| c.name()).collect();
                return Err(err(
                    name,
                    format!(
                        "[transport.{name}] is read only by cc = {}, not {}",
                        users.join(" or "),
                        cc.name()
                    ),
                ));
            }
        }
        let checks: [(&str, CheckResult); 5] = [
            ("dctcp", self.dctcp.validate()),
            ("dcqcn", self.dcqcn.validate()),
            ("swift", self.swift.validate()),
            ("mswift", self.mswift.validate()),
            ("nscc", self.nscc.validate()),
        ];
        for (name, r) in checks {
            if let Err((field, msg)) = r {
                return Err(err(&format!("{name}.{field}"), msg));
            }
        }
        if !(self.eqds.unsolicited_bdp.is_finite() && self.eqds.unsolicited_bdp >= 0.0) {
            return Err(err("eqds.unsolicited_bdp", "must be >= 0".into()));
        }
        if !(self.eqds.pull_rate.is_finite()
            && self.eqds.pull_rate > 0.0
            && self.eqds.pull_rate <= 1.0)
        {
            return Err(err("eqds.pull_rate", "must be in (0, 1]".into()));
        }
        if self
            .erasure_extra_packets
            .is_some_and(|x| x as u64 > limits::MESSAGE_PACKETS)
        {
            return Err(err(
                "erasure_extra_packets",
                format!(
                    "at most {} repair packets per message (the most packets a message may have)",
                    limits::MESSAGE_PACKETS
                ),
            ));
        }
        if self.erasure_extra_packets.is_some() && lr != LossRecoveryKind::Erasure {
            return Err(err(
                "erasure_extra_packets",
                format!(
                    "is read only by loss_recovery = \"erasure\", not \"{}\"",
                    lr.name()
                ),
            ));
        }
        if let Some(x) = self.reorder_threshold {
            if x == 0 {
                return Err(err("reorder_threshold", "must be at least 1".into()));
            }
            if matches!(lr, LossRecoveryKind::GoBackN | LossRecoveryKind::Trim) {
                return Err(err(
                    "reorder_threshold",
                    format!(
                        "{} detects losses from NACKs, not from reordering; the threshold is read \
                         by sack (and by the erasure schemes under a windowed CC)",
                        lr.name()
                    ),
                ));
            }
        }
        if self.failure_aware_rate && cc != CcKind::Constant {
            return Err(err(
                "failure_aware_rate",
                format!(
                    "is the idealized constant-rate CC's rule; cc = {} finds its own rate",
                    cc.name()
                ),
            ));
        }
        let ecn = topo
            .ecn_threshold_bytes
            .unwrap_or(topo.buffer_bytes / defaults::ECN_THRESHOLD_DIVISOR);
        if matches!(cc, CcKind::Dctcp | CcKind::Dcqcn) && ecn >= topo.buffer_bytes {
            return Err(ConfigError::Invalid {
                origin: o.name.clone(),
                key: "topology.ecn_threshold_bytes".into(),
                msg: format!(
                    "cc = {} reacts only to ECN marks, and a threshold at or above the buffer \
                     ({} bytes) never marks",
                    cc.name(),
                    topo.buffer_bytes
                ),
            });
        }
        if topo.trim_header_bytes.is_some() && lr != LossRecoveryKind::Trim {
            return Err(ConfigError::Invalid {
                origin: o.name.clone(),
                key: "topology.trim_header_bytes".into(),
                msg: format!(
                    "is read only by transport.loss_recovery = \"trim\", not \"{}\"",
                    lr.name()
                ),
            });
        }
        Ok(())
    }
}

/// `[load_balancing]`. Scheme options are optional: unset means the documented default, and an
/// option given for a scheme that does not read it is rejected (`lb::SchemeInfo::options`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LoadBalancingConfig {
    /// A name from the registry (`lbsim list`).
    pub scheme: String,
    /// `subflow`: subflows per flow, each with a fixed entropy (4, the study's setting).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subflows: Option<u32>,
    /// `plb`: a round is congested when at least this fraction of its ACKs was ECN-marked
    /// (0.5, PLB's; the study's "change threshold" is 0.4).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plb_congested_fraction: Option<f64>,
    /// `plb`: re-path after this many consecutive congested rounds (12, Linux).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plb_rehash_rounds: Option<u32>,
    /// `plb`: re-path after this many consecutive congested rounds if nothing is in flight
    /// (3, Linux).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plb_idle_rehash_rounds: Option<u32>,
    /// `plb`: after a timeout, no congestion re-path for this long (60 s, Linux).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plb_suspend_us: Option<f64>,
    /// `reps`: how long a flow stays frozen after a failure-like timeout (10 ms, REPS).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reps_freeze_us: Option<f64>,
    /// `reps`: random entropies sent after leaving the frozen state (16, REPS).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reps_explore_packets: Option<u32>,
    /// `switch_ar`: queue bins are refreshed at most this often (0: fresh on every packet;
    /// public simulators use 100).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ar_refresh_ns: Option<f64>,
    /// `flowlet_ar`: an idle gap longer than this starts a new flowlet (10, the study's fork).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flowlet_gap_us: Option<f64>,
}

impl Default for LoadBalancingConfig {
    fn default() -> Self {
        LoadBalancingConfig {
            scheme: "ecmp".into(),
            subflows: None,
            plb_congested_fraction: None,
            plb_rehash_rounds: None,
            plb_idle_rehash_rounds: None,
            plb_suspend_us: None,
            reps_freeze_us: None,
            reps_explore_packets: None,
            ar_refresh_ns: None,
            flowlet_gap_us: None,
        }
    }
}

impl LoadBalancingConfig {
    /// Every scheme option, as named in `[load_balancing]`.
    pub const OPTION_KEYS: &'static [&'static str] = &[
        "subflows",
        "plb_congested_fraction",
        "plb_rehash_rounds",
        "plb_idle_rehash_rounds",
        "plb_suspend_us",
        "reps_freeze_us",
        "reps_explore_packets",
        "ar_refresh_ns",
        "flowlet_gap_us",
    ];

    /// The options that are set, in `OPTION_KEYS` order.
    pub fn given_options(&self) -> Vec<&'static str> {
        let set = [
            self.subflows.is_some(),
            self.plb_congested_fraction.is_some(),
            self.plb_rehash_rounds.is_some(),
            self.plb_idle_rehash_rounds.is_some(),
            self.plb_suspend_us.is_some(),
            self.reps_freeze_us.is_some(),
            self.reps_explore_packets.is_some(),
            self.ar_refresh_ns.is_some(),
            self.flowlet_gap_us.is_some(),
        ];
        Self::OPTION_KEYS
            .iter()
            .zip(set)
            .filter(|(_, s)| *s)
            .map(|(k, _)| *k)
            .collect()
    }

    pub fn subflow_config(&self) -> lb::subflow::SubflowConfig {
        let d = lb::subflow::SubflowConfig::default();
        lb::subflow::SubflowConfig {
            subflows: self.subflows.unwrap_or(d.subflows),
        }
    }

    pub fn plb_config(&self) -> lb::plb::PlbConfig {
        let d = lb::plb::PlbConfig::default();
        lb::plb::PlbConfig {
            congested_fraction: self.plb_congested_fraction.unwrap_or(d.congested_fraction),
            rehash_rounds: self.plb_rehash_rounds.unwrap_or(d.rehash_rounds),
            idle_rehash_rounds: self.plb_idle_rehash_rounds.unwrap_or(d.idle_rehash_rounds),
            suspend: self.plb_suspend_us.map_or(d.suspend, SimTime::from_us_f64),
        }
    }

    pub fn reps_config(&self) -> lb::reps::RepsConfig {
        let d = lb::reps::RepsConfig::default();
        lb::reps::RepsConfig {
            freeze: self.reps_freeze_us.map_or(d.freeze, SimTime::from_us_f64),
            explore_packets: self.reps_explore_packets.unwrap_or(d.explore_packets),
            trimming: false,
        }
    }

    pub fn ar_config(&self) -> lb::switch_ar::ArConfig {
        let d = lb::switch_ar::ArConfig::default();
        lb::switch_ar::ArConfig {
            refresh: self.ar_refresh_ns.map_or(d.refresh, SimTime::from_ns_f64),
        }
    }

    pub fn flowlet_config(&self) -> lb::flowlet::FlowletConfig {
        let d = lb::flowlet::FlowletConfig::default();
        lb::flowlet::FlowletConfig {
            gap: self.flowlet_gap_us.map_or(d.gap, SimTime::from_us_f64),
        }
    }

    /// Rejects options the scheme does not read and out-of-range values.
    fn validate(&self, scheme: &lb::SchemeInfo, o: &Origin) -> Result<(), ConfigError> {
        for key in self.given_options() {
            if !scheme.options.contains(&key) {
                let takes = if scheme.options.is_empty() {
                    "takes no options".to_string()
                } else {
                    format!("takes only {}", scheme.options.join(", "))
                };
                return Err(ConfigError::Invalid {
                    origin: o.name.clone(),
                    key: format!("load_balancing.{key}"),
                    msg: format!(
                        "applies only to scheme {}; scheme `{}` {takes}",
                        lb::schemes_with_option(key).join(", "),
                        scheme.name
                    ),
                });
            }
        }
        let us_ok = |x: Option<f64>| x.is_none_or(|v| finite_nonneg(v) && v < 1e12);
        check(
            self.subflows.is_none_or(|n| (1..=1024).contains(&n)),
            o,
            "load_balancing.subflows",
            "must be between 1 and 1024",
        )?;
        check(
            self.plb_congested_fraction
                .is_none_or(|f| f.is_finite() && f > 0.0 && f <= 1.0),
            o,
            "load_balancing.plb_congested_fraction",
            "must be in (0, 1]",
        )?;
        check(
            self.plb_rehash_rounds.is_none_or(|n| n >= 1),
            o,
            "load_balancing.plb_rehash_rounds",
            "must be >= 1",
        )?;
        check(
            self.plb_idle_rehash_rounds.is_none_or(|n| n >= 1),
            o,
            "load_balancing.plb_idle_rehash_rounds",
            "must be >= 1",
        )?;
        check(
            us_ok(self.plb_suspend_us),
            o,
            "load_balancing.plb_suspend_us",
            "must be a non-negative number of microseconds",
        )?;
        check(
            us_ok(self.reps_freeze_us),
            o,
            "load_balancing.reps_freeze_us",
            "must be a non-negative number of microseconds",
        )?;
        check(
            us_ok(self.ar_refresh_ns),
            o,
            "load_balancing.ar_refresh_ns",
            "must be a non-negative number of nanoseconds",
        )?;
        check(
            us_ok(self.flowlet_gap_us),
            o,
            "load_balancing.flowlet_gap_us",
            "must be a non-negative number of microseconds",
        )?;
        Ok(())
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkloadKind {
    Permutation,
    AllToAll,
    ConnectionMatrix,
    RingAllreduce,
    RingReduceScatter,
    RingAllgather,
    HalvingDoublingAllreduce,
    /// FSDP training: per layer an all-gather, compute, then a reduce-scatter.
    Fsdp,
    /// `fan_in` senders to one receiver (the group's first rank), one message each.
    Incast,
    /// One sender (the group's first rank) to `fan_in` receivers, one message each.
    Outcast,
}

impl WorkloadKind {
    pub fn name(self) -> &'static str {
        match self {
            WorkloadKind::Permutation => "permutation",
            WorkloadKind::AllToAll => "all_to_all",
            WorkloadKind::ConnectionMatrix => "connection_matrix",
            WorkloadKind::RingAllreduce => "ring_allreduce",
            WorkloadKind::RingReduceScatter => "ring_reduce_scatter",
            WorkloadKind::RingAllgather => "ring_allgather",
            WorkloadKind::HalvingDoublingAllreduce => "halving_doubling_allreduce",
            WorkloadKind::Fsdp => "fsdp",
            WorkloadKind::Incast => "incast",
            WorkloadKind::Outcast => "outcast",
        }
    }
}

/// `workload.all_to_all_algorithm`
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AllToAllAlgorithm {
    /// Every pair at once; every rank's messages in destination order (0, 1, 2, ...).
    Direct,
    /// Every pair at once; rank r's messages in the order r+1, r+2, ... (mod n), as collective
    /// libraries schedule them, so the ranks' sends do not all converge on one destination.
    Shifted,
    /// n-1 rounds; in round i rank r sends to r+i once its previous round is complete.
    Pairwise,
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
    /// Collectives and fsdp: ranks per group (default: every GPU of the hosts from first_host
    /// on, divided among the groups).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub group_size: Option<u32>,
    /// Collectives and fsdp: independent groups running side by side (1), placed one after
    /// another in placement order.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub groups: Option<u32>,
    /// Collectives and fsdp: ranks (GPUs) per host, sharing its one NIC (1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpus_per_host: Option<u32>,
    /// Collectives and fsdp: `linear`, `random` or `per_tor` (linear).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub placement: Option<workload::collective::Placement>,
    /// Linear placement: index of the first host used (0).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_host: Option<u32>,
    /// all_to_all: `direct` or `pairwise` (direct).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub all_to_all_algorithm: Option<AllToAllAlgorithm>,
    /// fsdp: preset `llama3_7b`, `llama3_70b` or `llama3_405b`; the keys below override it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// fsdp: layers per iteration.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub layers: Option<u32>,
    /// fsdp: bytes of one layer's weights (FP8: one per parameter), all-gathered and
    /// reduce-scattered once per layer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub layer_bytes: Option<u64>,
    /// fsdp: compute time per layer in microseconds, between its all-gather and reduce-scatter.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compute_us_per_layer: Option<f64>,
    /// Collectives and fsdp: back-to-back repetitions (1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iterations: Option<u32>,
    /// Start time in microseconds (0); the usual way to stagger `[[jobs]]`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_us: Option<f64>,
    /// incast and outcast: peers of the one receiver (sender) (default: every other host).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fan_in: Option<u32>,
}

impl Default for WorkloadConfig {
    fn default() -> Self {
        WorkloadConfig {
            kind: WorkloadKind::Permutation,
            message_bytes: 2 * 1024 * 1024,
            path: None,
            group_size: None,
            groups: None,
            gpus_per_host: None,
            placement: None,
            first_host: None,
            all_to_all_algorithm: None,
            model: None,
            layers: None,
            layer_bytes: None,
            compute_us_per_layer: None,
            iterations: None,
            start_us: None,
            fan_in: None,
        }
    }
}

impl WorkloadConfig {
    /// Every optional key, as named in `[workload]`.
    pub const OPTION_KEYS: &'static [&'static str] = &[
        "path",
        "group_size",
        "groups",
        "gpus_per_host",
        "placement",
        "first_host",
        "all_to_all_algorithm",
        "model",
        "layers",
        "layer_bytes",
        "compute_us_per_layer",
        "iterations",
        "start_us",
        "fan_in",
    ];

    /// The optional keys that are set, in `OPTION_KEYS` order.
    pub fn given_options(&self) -> Vec<&'static str> {
        let set = [
            self.path.is_some(),
            self.group_size.is_some(),
            self.groups.is_some(),
            self.gpus_per_host.is_some(),
            self.placement.is_some(),
            self.first_host.is_some(),
            self.all_to_all_algorithm.is_some(),
            self.model.is_some(),
            self.layers.is_some(),
            self.layer_bytes.is_some(),
            self.compute_us_per_layer.is_some(),
            self.iterations.is_some(),
            self.start_us.is_some(),
            self.fan_in.is_some(),
        ];
        Self::OPTION_KEYS
            .iter()
            .zip(set)
            .filter(|(_, s)| *s)
            .map(|(k, _)| *k)
            .collect()
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
    /// Routing's reaction to failures.
    #[serde(skip_serializing_if = "is_default")]
    pub failure: FailureConfig,
    /// `[[failures]]`: links that go down, degrade or turn flaky.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub failures: Vec<FailureSpec>,
    /// `[[jobs]]`: several workloads sharing the fabric, each with `[workload]`'s keys (its own
    /// placement and `start_us`); when present it replaces `[workload]`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub jobs: Vec<WorkloadConfig>,
}

fn is_default<T: Default + PartialEq>(t: &T) -> bool {
    *t == T::default()
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
            failure: FailureConfig::default(),
            failures: Vec::new(),
            jobs: Vec::new(),
        }
    }
}

/// Where a scenario came from, for error messages and relative paths.
#[derive(Clone, Debug)]
pub struct Origin {
    pub name: String,
    pub dir: Option<PathBuf>,
    /// The `--set` overrides applied on top: an error about a key one of them set names that
    /// `--set`, not the file.
    pub sets: Vec<String>,
}

impl Origin {
    pub fn builtin() -> Origin {
        Origin::named("built-in default scenario", None)
    }
    pub fn file(path: &Path) -> Origin {
        Origin::named(
            &path.display().to_string(),
            path.parent().map(Path::to_path_buf),
        )
    }
    /// A scenario called `name` whose relative paths resolve against `dir`.
    pub fn named(name: &str, dir: Option<PathBuf>) -> Origin {
        Origin {
            name: name.to_string(),
            dir,
            sets: Vec::new(),
        }
    }
    /// The same origin with the `--set` overrides that were applied to it.
    pub fn with_sets(mut self, sets: &[String]) -> Origin {
        self.sets = sets.to_vec();
        self
    }
}

/// Re-attributes an error about a key to the last `--set` that set it (or a section holding
/// it): the value came from the command line, not from the file. Keys are compared in `--set`
/// form (`failures[0].at_us` is `failures.0.at_us`).
fn blame_sets(e: ConfigError, sets: &[String]) -> ConfigError {
    let ConfigError::Invalid { key, msg, .. } = &e else {
        return e;
    };
    let dotted = key.replace('[', ".").replace(']', "");
    for arg in sets.iter().rev() {
        let Ok((path, _)) = parse_set(arg) else {
            continue;
        };
        let set = path.join(".");
        if dotted == set || dotted.starts_with(&format!("{set}.")) {
            let msg = if dotted == set {
                msg.clone()
            } else {
                format!("key `{key}`: {msg}")
            };
            return ConfigError::Set {
                arg: arg.clone(),
                msg,
            };
        }
    }
    e
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
    let parsed = match toml::from_str::<toml::Table>(&format!("v = {value}"))
        .ok()
        .and_then(|mut t| t.remove("v"))
    {
        // `1e15` on a command line means the number: an integer key takes it as one.
        Some(toml::Value::Float(x))
            if value.contains(['e', 'E']) && x.fract() == 0.0 && x.abs() <= (1u64 << 53) as f64 =>
        {
            toml::Value::Integer(x as i64)
        }
        Some(v) => v,
        None if is_integer_text(value) => {
            return Err(err(&format!(
                "{value} is past the largest integer a scenario holds ({})",
                i64::MAX
            )))
        }
        None => toml::Value::String(value.to_string()),
    };
    Ok((
        key.split('.').map(|s| s.trim().to_string()).collect(),
        parsed,
    ))
}

/// An integer as TOML writes one (sign, digits, underscores), whatever its size.
fn is_integer_text(v: &str) -> bool {
    let digits = v.strip_prefix(['+', '-']).unwrap_or(v);
    digits.starts_with(|c: char| c.is_ascii_digit())
        && digits.chars().all(|c| c.is_ascii_digit() || c == '_')
}

/// Applies overrides to a parsed TOML table (see [`set_path`] for how a path reaches into
/// lists).
pub fn apply_sets(table: &mut toml::Table, sets: &[String]) -> Result<(), ConfigError> {
    for arg in sets {
        let (path, value) = parse_set(arg)?;
        let parts: Vec<&str> = path.iter().map(String::as_str).collect();
        set_path(table, &parts, Some(value)).map_err(|msg| ConfigError::Set {
            arg: arg.clone(),
            msg,
        })?;
    }
    Ok(())
}

/// Sets the value at the dotted path `parts` in `table`, or removes the key when `value` is
/// `None`. A numeric part indexes a list: `failures.0.random_fraction` reaches into the first
/// `[[failures]]` entry. A missing key followed by a number is created as a list, and the index
/// one past the end appends an entry, so `failures.0.kind=down` adds a failure to a scenario that
/// has none; a larger index is an error naming the list.
pub fn set_path(
    table: &mut toml::Table,
    parts: &[&str],
    value: Option<toml::Value>,
) -> Result<(), String> {
    if parts.is_empty() || parts.iter().any(|p| p.is_empty()) {
        return Err("empty key part".into());
    }
    set_in_table(table, parts, 0, value)
}

fn set_in_table(
    t: &mut toml::Table,
    parts: &[&str],
    i: usize,
    value: Option<toml::Value>,
) -> Result<(), String> {
    if i + 1 == parts.len() {
        match value {
            None => t.remove(parts[i]),
            Some(v) => t.insert(parts[i].to_string(), v),
        };
        return Ok(());
    }
    let list = parts[i + 1].parse::<usize>().is_ok();
    if value.is_none() && !t.contains_key(parts[i]) {
        // Nothing to remove.
        return Ok(());
    }
    let next = t.entry(parts[i].to_string()).or_insert_with(|| {
        if list {
            toml::Value::Array(Vec::new())
        } else {
            toml::Value::Table(toml::Table::new())
        }
    });
    set_in_value(next, parts, i + 1, value)
}

/// `v` is the value at `parts[..i]`; sets `parts[i..]` inside it.
fn set_in_value(
    v: &mut toml::Value,
    parts: &[&str],
    i: usize,
    value: Option<toml::Value>,
) -> Result<(), String> {
    let here = parts[..i].join(".");
    match v {
        toml::Value::Table(t) => set_in_table(t, parts, i, value),
        toml::Value::Array(a) => {
            let part = parts[i];
            let idx: usize = part.parse().map_err(|_| {
                format!(
                    "`{here}` is a list: index it with a number, e.g. {here}.0.<key>, not `{part}`"
                )
            })?;
            if idx > a.len() {
                return Err(format!(
                    "index {idx} is out of range: `{here}` has {} entries (index {} appends one)",
                    a.len(),
                    a.len()
                ));
            }
            if i + 1 == parts.len() {
                let Some(value) = value else {
                    return Err(format!("`{here}.{part}`: a list entry cannot be unset"));
                };
                if idx == a.len() {
                    a.push(value);
                } else {
                    a[idx] = value;
                }
                return Ok(());
            }
            if idx == a.len() {
                a.push(toml::Value::Table(toml::Table::new()));
            }
            set_in_value(&mut a[idx], parts, i + 1, value)
        }
        other => Err(format!("`{here}` is a value (`{other}`), not a section")),
    }
}

impl ScenarioFile {
    /// Reads a scenario from TOML text plus overrides.
    pub fn from_toml(text: &str, sets: &[String], origin: &Origin) -> Result<Self, ConfigError> {
        // Deserialize the text itself first: toml's errors then carry the line and column.
        let file: ScenarioFile = toml::from_str(text).map_err(|e| ConfigError::Parse {
            origin: origin.name.clone(),
            msg: serde_msg(e.to_string()),
        })?;
        if sets.is_empty() {
            return Ok(file);
        }
        let mut table: toml::Table = toml::from_str(text).map_err(|e| ConfigError::Parse {
            origin: origin.name.clone(),
            msg: e.to_string(),
        })?;
        apply_sets(&mut table, sets)?;
        Self::from_table(table, origin, "after --set").map_err(|e| blame_sets(e, sets))
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
                msg: serde_msg(e.into_inner().to_string()),
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

/// A deserializer's message without the trailing "in `key`" line (the error names the key
/// already), and with the fix for a float given to an integer key.
fn serde_msg(msg: String) -> String {
    let mut m = msg.trim_end().to_string();
    if let Some((head, last)) = m.rsplit_once('\n') {
        if last.starts_with("in `") {
            m = head.trim_end().to_string();
        }
    }
    if m.contains("invalid type: floating point") && m.contains("expected u") {
        m.push_str(" (the key takes a whole number; TOML reads 1e15 and 4.0 as floats)");
    }
    m
}

/// A validated scenario: the topology built and the flows generated.
#[derive(Clone, Debug)]
pub struct Scenario {
    pub file: ScenarioFile,
    pub scheme: &'static lb::SchemeInfo,
    pub topology: Topology,
    pub flows: Vec<FlowSpec>,
    /// Each flow's id for flows.csv (see [`Scenario::flow_id`]): a connection matrix's own ids,
    /// empty for generated workloads.
    pub flow_ids: Vec<u64>,
    /// How flows wait on each other (empty for single-shot workloads).
    pub deps: Dependencies,
    /// Which flows belong to which job and collective (empty for traces).
    pub labels: workload::collective::Labels,
    pub ecn_threshold_bytes: u64,
    /// The run stops here (`end_time_us`; with failures and no cap, 20 x the lower bound, so
    /// a flow pinned to a dead path cannot run forever).
    pub end_time: Option<SimTime>,
    pub failures: Vec<LinkFailure>,
    /// The study's G; None = routing never converges.
    pub convergence: Option<SimTime>,
    /// A flow that hears no ACK for this long tells its host policy (`on_timeout`).
    pub rto: SimTime,
}

impl Scenario {
    /// Flow `i`'s id in flows.csv: its id in the connection matrix, or `i` for generated
    /// workloads.
    pub fn flow_id(&self, i: usize) -> u64 {
        self.flow_ids.get(i).copied().unwrap_or(i as u64)
    }
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

/// The slowest link rate, in Gb/s: 1 kb/s (a rate rounds to whole bits per second).
const MIN_GBPS: f64 = 1e-6;

fn finite_nonneg(x: f64) -> bool {
    x.is_finite() && x >= 0.0
}

impl Scenario {
    /// Validates `file` and builds the topology and workload. An error about a key that one of
    /// `origin.sets` set names that `--set`.
    pub fn build(file: ScenarioFile, origin: &Origin) -> Result<Scenario, ConfigError> {
        Self::build_unblamed(file, origin).map_err(|e| blame_sets(e, &origin.sets))
    }

    fn build_unblamed(file: ScenarioFile, origin: &Origin) -> Result<Scenario, ConfigError> {
        let t = &file.topology;
        let o = origin;
        check(
            t.link_gbps.is_finite() && (MIN_GBPS..=1e6).contains(&t.link_gbps),
            o,
            "topology.link_gbps",
            "must be a positive rate in Gb/s, at least 1e-6 (1 kb/s) and at most 1e6",
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
        tr.validate(t, o)?;
        check(
            mtu <= u16::MAX as u64 && p.ack_bytes <= u16::MAX as u32,
            o,
            "packet.payload_bytes",
            "payload + headers (and ACKs) must fit in 65,535 bytes",
        )?;
        if let Some(h) = t.trim_header_bytes {
            check(
                h > 0 && (h as u64) < mtu,
                o,
                "topology.trim_header_bytes",
                &format!("must be positive and smaller than a full packet ({mtu} bytes)"),
            )?;
        }
        let kmin = t
            .ecn_threshold_bytes
            .unwrap_or(t.buffer_bytes / defaults::ECN_THRESHOLD_DIVISOR);
        if let Some(kmax) = t.ecn_kmax_bytes {
            check(
                kmax > kmin,
                o,
                "topology.ecn_kmax_bytes",
                &format!("must exceed the marking threshold Kmin ({kmin} bytes)"),
            )?;
        }
        if let Some(pm) = t.ecn_pmax {
            check(
                t.ecn_kmax_bytes.is_some(),
                o,
                "topology.ecn_pmax",
                "needs topology.ecn_kmax_bytes (RED marking)",
            )?;
            check(
                pm.is_finite() && pm > 0.0 && pm <= 1.0,
                o,
                "topology.ecn_pmax",
                "must be in (0, 1]",
            )?;
        }
        if let Some(c) = t.control_buffer_bytes {
            check(
                c >= 64 && c < u32::MAX as u64,
                o,
                "topology.control_buffer_bytes",
                "must be at least 64 bytes and below 4 GB",
            )?;
        }
        let scheme = file.scheme().map_err(|msg| ConfigError::Invalid {
            origin: o.name.clone(),
            key: "load_balancing.scheme".into(),
            msg,
        })?;
        file.load_balancing.validate(scheme, o)?;
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
        // Events name ports, hosts, flows and fabric changes by a 29-bit id: refuse what would
        // not fit before allocating it (the counts are upper bounds, exact but for ranks that
        // share a host).
        if let Some(e) = crate::memory::estimate(&file) {
            let max = MAX_EVENT_ID as u128;
            check(
                e.ports <= max,
                o,
                "topology",
                &format!("{} ports; events can name at most {max}", e.ports),
            )?;
            check(
                e.flows <= max,
                o,
                "workload",
                &format!(
                    "about {} flows; events can name at most {max} flows in one run",
                    e.flows
                ),
            )?;
        }
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
                check(
                    (MIN_GBPS..=1e9).contains(&up_gbps),
                    o,
                    "topology.oversubscription",
                    &format!(
                        "makes the uplink rate hosts_per_leaf x link_gbps / (spines x \
                         oversubscription) {up_gbps:e} Gb/s; it must be from 1e-6 (1 kb/s) to 1e9"
                    ),
                )?;
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
        let ecn = t
            .ecn_threshold_bytes
            .unwrap_or(t.buffer_bytes / defaults::ECN_THRESHOLD_DIVISOR);
        let workload::Workload {
            flows,
            deps,
            mut labels,
            ids: flow_ids,
        } = workload::generate(&file, &topology, origin)?;
        let sizes = bound::Sizes {
            mss: file.packet.payload_bytes,
            header: file.packet.header_bytes,
            ack: file.packet.ack_bytes,
        };
        for c in &mut labels.collectives {
            c.bound = crate::stats::collectives::bound(&topology, &flows, &deps, &c.flows, sizes);
        }
        check(
            flows.len() <= MAX_EVENT_ID as usize,
            o,
            "workload",
            &format!(
                "{} flows; events can name at most {MAX_EVENT_ID} flows in one run",
                flows.len()
            ),
        )?;
        let failures = failure::resolve(&file.failures, &topology, file.seed, origin)?;
        // Each failure schedules up to three fabric changes (fail, recover, converge).
        check(
            failures.len() as u64 * 4 <= MAX_EVENT_ID as u64,
            o,
            "failures",
            "too many failed links for one run",
        )?;
        let convergence = match file.failure.convergence_us {
            None => None,
            Some(g) => {
                check(
                    finite_nonneg(g),
                    o,
                    "failure.convergence_us",
                    "must be a non-negative number of microseconds",
                )?;
                Some(SimTime::from_us_f64(g))
            }
        };
        let rto = match file.transport.rto_us {
            None => SimTime::from_us_f64(defaults::RTO_US),
            Some(us) => {
                check(
                    us.is_finite() && us > 0.0,
                    o,
                    "transport.rto_us",
                    "must be a positive number of microseconds",
                )?;
                SimTime::from_us_f64(us)
            }
        };
        let end_time = match (end_time, file.failures.is_empty()) {
            (None, false) => {
                let sizes = bound::Sizes {
                    mss: file.packet.payload_bytes,
                    header: file.packet.header_bytes,
                    ack: file.packet.ack_bytes,
                };
                let lb = bound::lower_bound(&topology, &flows, sizes);
                // With dependencies the flows run in steps: allow for every step in series
                // (every flow's bytes one after another, plus every trigger's delay and a
                // longest path per trigger), which no collective exceeds.
                let chain = if deps.is_empty() {
                    SimTime::ZERO
                } else {
                    let bytes = flows.iter().fold(0u64, |a, f| {
                        a.saturating_add(bound::data_wire_bytes(f.size_bytes, sizes))
                    });
                    let path = SimTime(
                        topology
                            .links
                            .iter()
                            .map(|l| l.latency.ps())
                            .max()
                            .unwrap_or(0)
                            * 6,
                    );
                    deps.triggers
                        .iter()
                        .fold(topology.host_rate.serialization(bytes), |t, tr| {
                            t.saturating_add(tr.delay).saturating_add(path)
                        })
                };
                Some(SimTime(lb.max(chain).ps().saturating_mul(20)))
            }
            (e, _) => e,
        };
        Ok(Scenario {
            scheme,
            topology,
            flows,
            flow_ids,
            deps,
            labels,
            ecn_threshold_bytes: ecn,
            end_time,
            failures,
            convergence,
            rto,
            file,
        })
    }
}

/// The defaults of options left unset in a scenario file, in one place (`lbsim show` prints
/// them through [`ScenarioFile::effective`]).
pub mod defaults {
    /// `transport.rto_us`: the Ultra Ethernet floor.
    pub const RTO_US: f64 = 100.0;
    /// `topology.ecn_threshold_bytes` = the buffer / this (20%).
    pub const ECN_THRESHOLD_DIVISOR: u64 = 5;
    /// `topology.ecn_pmax` (with `ecn_kmax_bytes`).
    pub const ECN_PMAX: f64 = 1.0;
    /// `topology.trim_header_bytes`.
    pub const TRIM_HEADER_BYTES: u32 = 64;
    /// `transport.erasure_extra_packets`: the study's k.
    pub const ERASURE_EXTRA_PACKETS: u32 = 25;
    /// `transport.reorder_threshold`: SACK's.
    pub const REORDER_THRESHOLD: u32 = 3;
}

/// Caps on what a scenario may ask for, so that no count, sum or time the simulator keeps can
/// overflow its integer; past them a scenario is refused with an error naming the key (or the
/// connection matrix's line).
pub mod limits {
    /// Data packets in one message (`packet.payload_bytes` each): sequence numbers and
    /// transmission counters are 32-bit, and retransmissions and repairs need room above the
    /// message. 4 TiB at the default 4096-byte payload.
    pub const MESSAGE_PACKETS: u64 = 1 << 30;
    /// Simulated time in picoseconds (2^62, about 53 days). A start time or trigger delay must
    /// stay below it, and so must the whole workload counted in series: the latest start, plus
    /// every trigger delay, plus all the data at the host link rate.
    pub const TIME_PS: u64 = 1 << 62;

    /// `bytes` as one message of `payload`-byte packets: within [`MESSAGE_PACKETS`], or why not.
    pub fn check_message(bytes: u64, payload: u32) -> Result<(), String> {
        let packets = bytes.div_ceil(payload.max(1) as u64);
        if packets <= MESSAGE_PACKETS {
            return Ok(());
        }
        Err(format!(
            "{bytes} bytes is {packets} packets of packet.payload_bytes = {payload}; a message \
             may have at most {MESSAGE_PACKETS} packets ({} bytes at this payload)",
            MESSAGE_PACKETS * payload as u64
        ))
    }

    /// A time in picoseconds within [`TIME_PS`], or why not.
    pub fn check_time(ps: u64) -> Result<(), String> {
        if ps < TIME_PS {
            Ok(())
        } else {
            Err(format!(
                "{ps} ps is past the {TIME_PS} ps (about 53 days) a run may simulate"
            ))
        }
    }
}

impl ScenarioFile {
    /// The same scenario with every unset option that applies to it given its default value,
    /// so that it can be printed in full (`lbsim show`) and read back to the same run. Options
    /// that do not apply (another scheme's, another loss recovery's) stay unset: giving them is
    /// an error.
    pub fn effective(&self) -> ScenarioFile {
        use defaults::*;
        let us = |t: SimTime| t.ps() as f64 / 1e6;
        let mut f = self.clone();
        let lr = f.transport.loss_recovery;
        let t = &mut f.topology;
        t.ecn_threshold_bytes
            .get_or_insert(t.buffer_bytes / ECN_THRESHOLD_DIVISOR);
        if t.ecn_kmax_bytes.is_some() {
            t.ecn_pmax.get_or_insert(ECN_PMAX);
        }
        if lr == LossRecoveryKind::Trim {
            t.trim_header_bytes.get_or_insert(TRIM_HEADER_BYTES);
        }
        if lr == LossRecoveryKind::Trim || f.transport.cc == CcKind::Eqds {
            t.control_buffer_bytes.get_or_insert(t.buffer_bytes);
        }
        let tr = &mut f.transport;
        tr.rto_us.get_or_insert(RTO_US);
        if lr == LossRecoveryKind::Erasure {
            tr.erasure_extra_packets
                .get_or_insert(ERASURE_EXTRA_PACKETS);
        }
        if !matches!(lr, LossRecoveryKind::GoBackN | LossRecoveryKind::Trim) {
            tr.reorder_threshold.get_or_insert(REORDER_THRESHOLD);
        }
        let options = lb::scheme(&f.load_balancing.scheme).map_or(&[][..], |s| s.options);
        let lbc = &mut f.load_balancing;
        let (sub, plb, reps) = (lbc.subflow_config(), lbc.plb_config(), lbc.reps_config());
        let (ar, flowlet) = (lbc.ar_config(), lbc.flowlet_config());
        for key in options {
            match *key {
                "subflows" => lbc.subflows = Some(sub.subflows),
                "plb_congested_fraction" => {
                    lbc.plb_congested_fraction = Some(plb.congested_fraction)
                }
                "plb_rehash_rounds" => lbc.plb_rehash_rounds = Some(plb.rehash_rounds),
                "plb_idle_rehash_rounds" => {
                    lbc.plb_idle_rehash_rounds = Some(plb.idle_rehash_rounds)
                }
                "plb_suspend_us" => lbc.plb_suspend_us = Some(us(plb.suspend)),
                "reps_freeze_us" => lbc.reps_freeze_us = Some(us(reps.freeze)),
                "reps_explore_packets" => lbc.reps_explore_packets = Some(reps.explore_packets),
                "ar_refresh_ns" => lbc.ar_refresh_ns = Some(ar.refresh.ps() as f64 / 1e3),
                "flowlet_gap_us" => lbc.flowlet_gap_us = Some(us(flowlet.gap)),
                _ => {}
            }
        }
        f
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
    fn sets_index_into_arrays_of_tables() {
        let text = "[[failures]]\nkind = \"down\"\nrandom_fraction = 0.01\n";
        let f = ScenarioFile::from_toml(
            text,
            &["failures.0.random_fraction=0.05".into()],
            &Origin::builtin(),
        )
        .unwrap();
        assert_eq!(f.failures[0].random_fraction, Some(0.05));
        let e = ScenarioFile::from_toml(text, &["failures.3.at_us=1".into()], &Origin::builtin())
            .unwrap_err()
            .to_string();
        assert!(e.contains("out of range"), "{e}");
        let e = ScenarioFile::from_toml(text, &["failures.kind=down".into()], &Origin::builtin())
            .unwrap_err()
            .to_string();
        assert!(e.contains("index it"), "{e}");
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
    fn scheme_options_are_rejected_for_schemes_that_do_not_read_them() {
        let err = |sets: &[&str]| {
            let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
            let f = ScenarioFile::builtin(&sets).unwrap();
            Scenario::build(f, &Origin::builtin()).map(|_| ())
        };
        let e = err(&["load_balancing.subflows=8"]).unwrap_err().to_string();
        assert!(
            e.contains("load_balancing.subflows") && e.contains("subflow") && e.contains("ecmp"),
            "{e}"
        );
        let e = err(&[
            "load_balancing.scheme=plb",
            "load_balancing.flowlet_gap_us=5",
        ])
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("flowlet_gap_us") && e.contains("flowlet_ar"),
            "{e}"
        );
        assert!(err(&["load_balancing.scheme=subflow", "load_balancing.subflows=8"]).is_ok());
        let e = err(&["load_balancing.scheme=subflow", "load_balancing.subflows=0"])
            .unwrap_err()
            .to_string();
        assert!(e.contains("load_balancing.subflows"), "{e}");
        let e = err(&[
            "load_balancing.scheme=plb",
            "load_balancing.plb_congested_fraction=1.5",
        ])
        .unwrap_err()
        .to_string();
        assert!(e.contains("plb_congested_fraction"), "{e}");
        assert!(err(&[
            "load_balancing.scheme=switch_ar",
            "load_balancing.ar_refresh_ns=100"
        ])
        .is_ok());
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
