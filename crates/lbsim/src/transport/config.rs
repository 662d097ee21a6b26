//! `[transport]`: congestion control, loss recovery and their options as the scenario file gives
//! them, validated against the topology they run on.

use serde::{Deserialize, Serialize};

use crate::config::{is_default, limits, ConfigError, Origin};
use crate::net::config::TopologyConfig;

use super::cc::{CcConfigs, CcKind};
use super::LossRecoveryKind;

/// A policy config's verdict: Ok, or the offending field and why.
type CheckResult = Result<(), (&'static str, String)>;

/// `transport.tail_loss_probe` when unset: on for Swift and MSwift with the loss recoveries
/// that detect losses from ACKs (sack, erasure, ideal_erasure). Their window falls to about
/// one packet when many flows share a link (127 per host in the 128-host all-to-all), so a
/// lost last packet has nothing behind it to reveal the loss and waits out the RTO floor;
/// RACK-TLP (RFC 8985), Linux's default loss detection, probes after 2 SRTT instead. Off for
/// the idealized constant rate and EQDS (no window), go-back-N (RoCE: the receiver's NACK and
/// the RoCE timer) and trim (losses come back as NACKs), and off by default for DCTCP,
/// DCQCN and NSCC, whose windows stay large enough that losses are found from later ACKs.
pub fn default_tail_loss_probe(cc: CcKind, lr: LossRecoveryKind) -> bool {
    matches!(cc, CcKind::Swift | CcKind::Mswift)
        && matches!(
            lr,
            LossRecoveryKind::Sack | LossRecoveryKind::Erasure | LossRecoveryKind::IdealErasure
        )
}

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
    /// RACK-TLP's tail-loss probe (RFC 8985 section 7): 2 SRTT after the last ACK with data
    /// outstanding, one packet goes past the window (new data, else a copy of the highest
    /// outstanding packet) instead of waiting for the RTO. Unset: see [`default_tail_loss_probe`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tail_loss_probe: Option<bool>,
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
            tail_loss_probe: None,
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
    pub fn validate(&self, topo: &TopologyConfig, o: &Origin) -> Result<(), ConfigError> {
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
        if self.tail_loss_probe == Some(true) {
            let why = match (cc, lr) {
                (_, LossRecoveryKind::GoBackN) => Some(
                    "go_back_n rewinds to the receiver's NACK or on the RoCE timeout; RoCE has \
                     no probe"
                        .to_string(),
                ),
                (CcKind::Eqds, _) => {
                    Some("cc = eqds sends only on credit; a probe has no window to pass".into())
                }
                (CcKind::Constant, LossRecoveryKind::IdealErasure) => Some(
                    "the idealized transport (constant CC, ideal_erasure) keeps no scoreboard to \
                     probe"
                        .into(),
                ),
                _ => None,
            };
            if let Some(why) = why {
                return Err(err("tail_loss_probe", why));
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
        let ecn = topo.ecn_threshold();
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
        if topo.return_to_sender.is_some() && lr != LossRecoveryKind::Trim {
            return Err(ConfigError::Invalid {
                origin: o.name.clone(),
                key: "topology.return_to_sender".into(),
                msg: format!(
                    "is read only by transport.loss_recovery = \"trim\", not \"{}\"",
                    lr.name()
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
