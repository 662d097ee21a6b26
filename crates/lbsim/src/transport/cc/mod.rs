//! Congestion control: one policy per flow behind the [`CongestionControl`] trait (one file
//! each, one line each in [`REGISTRY`]), independent of the load balancer and of loss recovery. The simulator tells a policy about every send, every ACK
//! and every loss its loss recovery declares; the policy answers with a window (bytes in flight
//! allowed) and/or a pacing rate.
//!
//! `constant` is the study's idealized CC (no state: the host shares its line rate among its
//! flows); `eqds` is receiver-driven, so its sender side is only a credit count kept by the
//! simulator (the receiver's pull pacer lives in `crate::sim`).

use serde::{Deserialize, Serialize};

use crate::time::{BitsPerSec, SimTime};

pub mod dcqcn;
pub mod dctcp;
pub mod nscc;
pub mod swift;

pub use dcqcn::{Dcqcn, DcqcnConfig, DcqcnParams, DcqcnProfile};
pub use dctcp::{Dctcp, DctcpConfig};
pub use nscc::{Nscc, NsccConfig};
pub use swift::{Swift, SwiftConfig};

/// `transport.cc`
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CcKind {
    /// Idealized: every flow sends at rate_coef x line rate shared by its host's active flows.
    Constant,
    Dctcp,
    Dcqcn,
    Swift,
    /// Swift fed with the median of recent delay samples, blind to reordering-declared losses.
    Mswift,
    /// Ultra Ethernet's sender-based CC.
    Nscc,
    /// Receiver-driven: one BDP unsolicited, then only on the receiver's paced credit.
    Eqds,
}

impl CcKind {
    pub const ALL: [CcKind; 7] = [
        CcKind::Constant,
        CcKind::Dctcp,
        CcKind::Dcqcn,
        CcKind::Swift,
        CcKind::Mswift,
        CcKind::Nscc,
        CcKind::Eqds,
    ];

    pub fn name(self) -> &'static str {
        info(self).name
    }
}

/// What a policy knows about its flow's path when the flow starts.
#[derive(Clone, Copy, Debug)]
pub struct CcCtx {
    /// Round trip of one full data packet out and its ACK back on an idle path.
    pub base_rtt: SimTime,
    /// The most the flow may send at: the NIC's line rate x `transport.rate_coef`.
    pub line_rate: BitsPerSec,
    /// Payload bytes of a full data packet.
    pub mss: u32,
    /// Wire bytes of a full data packet.
    pub mtu: u32,
    /// Links on the path (a 3-tier fat-tree across pods: 6).
    pub hops: u32,
    /// line_rate x base_rtt, in payload bytes.
    pub bdp: u64,
    /// Loss recovery trims packets (NSCC's target delay depends on it).
    pub trimming: bool,
}

#[cfg(test)]
impl CcCtx {
    /// The unit tests' path: 4096-byte payloads in 4160-byte packets over six hops, no trimming.
    pub(crate) fn test(base_rtt: SimTime, gbps: f64, bdp: u64) -> CcCtx {
        CcCtx {
            base_rtt,
            line_rate: BitsPerSec::from_gbps(gbps),
            mss: 4096,
            mtu: 4160,
            hops: 6,
            bdp,
            trimming: false,
        }
    }
}

/// The field a config's `validate` names once `edit` has spoilt its defaults (unit tests).
#[cfg(test)]
pub(crate) fn rejected_field<C: Default>(
    validate: fn(&C) -> Result<(), (&'static str, String)>,
    edit: fn(&mut C),
) -> &'static str {
    let mut c = C::default();
    edit(&mut c);
    validate(&c).unwrap_err().0
}

/// What the sender learns from one ACK of a data packet.
#[derive(Clone, Copy, Debug)]
pub struct AckSample {
    pub now: SimTime,
    /// Payload bytes this ACK newly acknowledges (0 for a duplicate or a spurious retransmission).
    pub acked_bytes: u64,
    /// The acknowledged data packet carried a CE mark.
    pub ecn: bool,
    /// Round trip of the acknowledged transmission (now - its send time).
    pub rtt: SimTime,
    /// DCQCN: the receiver sent a congestion notification with this ACK (at most one per
    /// `dcqcn.cnp_interval_us` per flow).
    pub cnp: bool,
    /// Payload bytes still in flight after this ACK.
    pub inflight: u64,
}

/// Why loss recovery declared a packet lost.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LossKind {
    /// Enough later packets were acknowledged (SACK reorder threshold).
    Reorder,
    /// The receiver said so: a trimmed header's NACK or go-back-N's out-of-order NACK.
    Nack,
    /// The retransmission timer expired.
    Timeout,
}

/// Per-CC parameters, `[transport.<cc>]` tables; every field has its paper's default.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CcConfigs {
    pub dctcp: DctcpConfig,
    pub dcqcn: DcqcnConfig,
    pub swift: SwiftConfig,
    /// MSwift reads `[transport.swift]` too; this adds its median window.
    pub mswift: swift::MswiftConfig,
    pub nscc: NsccConfig,
}

/// A sender-side congestion control: told of every send, ACK and declared loss; answers with
/// a window (bytes in flight allowed) and/or its own pacing rate. Each one lives in its own
/// file and is named once in [`REGISTRY`].
pub trait CongestionControl: Send + std::fmt::Debug {
    /// Bytes the flow may have in flight, if window-limited.
    fn window(&self) -> Option<u64> {
        None
    }
    /// The flow's own pacing rate at `now`, if it has one (else the host's line rate applies).
    fn rate(&mut self, _now: SimTime) -> Option<BitsPerSec> {
        None
    }
    /// The pacing rate as of the last update, read without advancing the CC's clock
    /// (telemetry); None if it does not pace.
    fn current_rate(&self) -> Option<BitsPerSec> {
        None
    }
    fn on_send(&mut self, _now: SimTime, _bytes: u64) {}
    fn on_ack(&mut self, _s: &AckSample) {}
    /// Loss recovery declared `bytes` of payload lost.
    fn on_loss(&mut self, _now: SimTime, _bytes: u64, _kind: LossKind) {}
}

/// One congestion control: its `transport.cc` name and how a flow's state is built (None: no
/// sender state; `constant` paces at the host's share of the line, `eqds` waits for credit the
/// simulator keeps).
pub struct CcInfo {
    pub kind: CcKind,
    pub name: &'static str,
    pub build: Option<BuildCc>,
}

/// Builds one flow's state from the `[transport.<cc>]` tables and the flow's path.
pub type BuildCc = fn(&CcConfigs, &CcCtx) -> Box<dyn CongestionControl>;

/// Every congestion control, one line each.
pub const REGISTRY: &[CcInfo] = &[
    CcInfo {
        kind: CcKind::Constant,
        name: "constant",
        build: None,
    },
    CcInfo {
        kind: CcKind::Dctcp,
        name: "dctcp",
        build: Some(|c, x| Box::new(Dctcp::new(&c.dctcp, x))),
    },
    CcInfo {
        kind: CcKind::Dcqcn,
        name: "dcqcn",
        build: Some(|c, x| Box::new(Dcqcn::new(&c.dcqcn, x))),
    },
    CcInfo {
        kind: CcKind::Swift,
        name: "swift",
        build: Some(|c, x| Box::new(Swift::new(&c.swift, None, x))),
    },
    CcInfo {
        kind: CcKind::Mswift,
        name: "mswift",
        build: Some(|c, x| Box::new(Swift::new(&c.swift, Some(&c.mswift), x))),
    },
    CcInfo {
        kind: CcKind::Nscc,
        name: "nscc",
        build: Some(|c, x| Box::new(Nscc::new(&c.nscc, x))),
    },
    CcInfo {
        kind: CcKind::Eqds,
        name: "eqds",
        build: None,
    },
];

fn info(kind: CcKind) -> &'static CcInfo {
    REGISTRY
        .iter()
        .find(|i| i.kind == kind)
        .expect("every CcKind has a registry line")
}

/// A flow's congestion controller; `None` for the CCs without sender state.
#[derive(Debug)]
pub struct Cc(Option<Box<dyn CongestionControl>>);

impl Cc {
    /// No sender state (the idealized transport).
    pub const CONSTANT: Cc = Cc(None);

    pub fn new(kind: CcKind, cfg: &CcConfigs, ctx: &CcCtx) -> Cc {
        Cc(info(kind).build.map(|b| b(cfg, ctx)))
    }

    #[inline]
    pub fn window(&self) -> Option<u64> {
        self.0.as_ref().and_then(|c| c.window())
    }

    /// [`CongestionControl::current_rate`]: read only, for telemetry.
    pub fn current_rate(&self) -> Option<BitsPerSec> {
        self.0.as_ref().and_then(|c| c.current_rate())
    }

    #[inline]
    pub fn rate(&mut self, now: SimTime) -> Option<BitsPerSec> {
        self.0.as_mut().and_then(|c| c.rate(now))
    }

    #[inline]
    pub fn on_send(&mut self, now: SimTime, bytes: u64) {
        if let Some(c) = &mut self.0 {
            c.on_send(now, bytes);
        }
    }

    #[inline]
    pub fn on_ack(&mut self, s: &AckSample) {
        if let Some(c) = &mut self.0 {
            c.on_ack(s);
        }
    }

    #[inline]
    pub fn on_loss(&mut self, now: SimTime, bytes: u64, kind: LossKind) {
        if let Some(c) = &mut self.0 {
            c.on_loss(now, bytes, kind);
        }
    }
}

/// Ok if `v` is finite and within `[lo, hi]` (`hi` may be infinite); else the field and why.
/// `check_range` with no upper end.
fn check_min(field: &'static str, v: f64, lo: f64) -> Result<(), (&'static str, String)> {
    check_range(field, v, lo, f64::INFINITY)
}

fn check_range(
    field: &'static str,
    v: f64,
    lo: f64,
    hi: f64,
) -> Result<(), (&'static str, String)> {
    if v.is_finite() && v >= lo && v <= hi {
        return Ok(());
    }
    let want = if hi.is_infinite() {
        format!(">= {lo}")
    } else {
        format!("in [{lo}, {hi}]")
    };
    Err((field, format!("must be a finite number {want}, got {v}")))
}

/// Ok if `v` is finite and strictly positive.
fn check_positive(field: &'static str, v: f64) -> Result<(), (&'static str, String)> {
    if v.is_finite() && v > 0.0 {
        Ok(())
    } else {
        Err((field, format!("must be a finite number > 0, got {v}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cc_configs_round_trip_through_toml() {
        let mut cfg = CcConfigs::default();
        let text = toml::to_string(&cfg).unwrap();
        assert_eq!(toml::from_str::<CcConfigs>(&text).unwrap(), cfg);
        cfg.dctcp.initial_window_packets = Some(12.5);
        cfg.dcqcn.profile = DcqcnProfile::Paper;
        cfg.dcqcn.byte_counter_bytes = Some(1 << 20);
        cfg.swift.base_target_us = Some(25.0);
        cfg.swift.max_cwnd_packets = Some(64.0);
        cfg.mswift.median_window = Some(9);
        cfg.nscc.target_qdelay_us = Some(4.0);
        cfg.nscc.apply_interval_mtus = 3;
        let text = toml::to_string(&cfg).unwrap();
        assert_eq!(toml::from_str::<CcConfigs>(&text).unwrap(), cfg);
        // Every table may be partial: unset fields keep their defaults.
        let partial: CcConfigs = toml::from_str("[swift]\nbeta = 0.5\n").unwrap();
        assert_eq!(partial.swift.beta, 0.5);
        assert_eq!(partial.swift.max_mdf, SwiftConfig::default().max_mdf);
        assert_eq!(partial.dctcp, DctcpConfig::default());
    }

    #[test]
    fn unknown_cc_fields_are_rejected() {
        for text in [
            "[dctcp]\ngain = 0.1\n",
            "[dcqcn]\nrate_ai = 40.0\n",
            "[swift]\nmedian_window = 5\n",
            "[mswift]\nbeta = 0.8\n",
            "[nscc]\ntarget_us = 3.0\n",
            "[hpcc]\n",
        ] {
            let err = toml::from_str::<CcConfigs>(text).unwrap_err().to_string();
            assert!(err.contains("unknown field"), "{text}: {err}");
        }
    }

    #[test]
    fn every_cc_has_one_registry_line_and_its_serde_name() {
        for k in CcKind::ALL {
            assert_eq!(REGISTRY.iter().filter(|i| i.kind == k).count(), 1, "{k:?}");
            let text = toml::to_string(&std::collections::BTreeMap::from([("cc", k)])).unwrap();
            assert_eq!(text.trim(), format!("cc = \"{}\"", k.name()));
        }
        assert_eq!(REGISTRY.len(), CcKind::ALL.len());
    }

    #[test]
    fn default_configs_are_valid() {
        let cfg = CcConfigs::default();
        cfg.dctcp.validate().unwrap();
        cfg.dcqcn.validate().unwrap();
        cfg.swift.validate().unwrap();
        cfg.mswift.validate().unwrap();
        cfg.nscc.validate().unwrap();
    }
}
