//! Load balancing: the registry of schemes, and the two kinds of policy they are made of.
//!
//! The study's central contrast is who decides. A *host* policy chooses each packet's entropy (path
//! label) and sees only end-to-end feedback (ACKs, their ECN echo, losses). A *switch* policy picks
//! an egress port among the next-hop group from the switch's local state only. A scheme is one
//! host policy plus one switch policy; the types keep the two apart: host policies never see a
//! queue, switch policies never see an ACK.
//!
//! Adding a scheme: one file with its policy (a `HostPolicy` or `SwitchPolicy` implementation and
//! its config), one variant in the matching state enum below, and one row in [`SCHEMES`].

pub mod ecmp;
pub mod spray;
pub mod switch_rr;

use crate::ids::HostId;
use crate::net::{Port, Shape, Tier, Topology};
use crate::rng::SimRng;
use crate::scenario::LoadBalancingConfig;
use crate::time::SimTime;
use serde::Serialize;

/// Who makes the per-packet path decision.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Side {
    Host,
    Switch,
}

/// Which host policy a scheme uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HostKind {
    /// One entropy for the flow's life.
    Fixed,
    /// A fresh uniform entropy per packet (OPS).
    Oblivious,
}

/// Which switch policy a scheme uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SwitchKind {
    /// Hash of (flow, entropy, switch salt) modulo the group size.
    Hash,
    /// Round-robin over the group, reshuffling the order after every 5 wraps.
    RoundRobin,
}

/// One registry entry.
#[derive(Clone, Copy, Debug)]
pub struct SchemeInfo {
    pub name: &'static str,
    pub side: Side,
    pub granularity: &'static str,
    pub summary: &'static str,
    pub host: HostKind,
    pub switch: SwitchKind,
}

/// Every load-balancing scheme lbsim implements, in the order `compare` runs them.
pub const SCHEMES: &[SchemeInfo] = &[
    SchemeInfo {
        name: "ecmp",
        side: Side::Switch,
        granularity: "flow",
        summary: "hash of the 5-tuple and a per-flow entropy at every switch",
        host: HostKind::Fixed,
        switch: SwitchKind::Hash,
    },
    SchemeInfo {
        name: "host_spray",
        side: Side::Host,
        granularity: "packet",
        summary: "oblivious packet spraying (OPS): a fresh random entropy per packet",
        host: HostKind::Oblivious,
        switch: SwitchKind::Hash,
    },
    SchemeInfo {
        name: "switch_rr",
        side: Side::Switch,
        granularity: "packet",
        summary: "switch round-robin over the next-hop group, order reshuffled after every 5 wraps",
        host: HostKind::Fixed,
        switch: SwitchKind::RoundRobin,
    },
];

pub fn scheme(name: &str) -> Option<&'static SchemeInfo> {
    SCHEMES.iter().find(|s| s.name == name)
}

pub fn scheme_names() -> Vec<&'static str> {
    SCHEMES.iter().map(|s| s.name).collect()
}

/// Size of the entropy space hosts draw from.
pub const ENTROPY_SPACE: u32 = 1 << 16;

/// End-to-end feedback a host policy may use.
#[derive(Clone, Copy, Debug)]
pub struct AckInfo {
    /// The entropy of the data packet this ACK answers.
    pub entropy: u32,
    /// The data packet was CE-marked somewhere on its path.
    pub ecn: bool,
    /// When the acknowledged data packet was sent (now - sent_at is an RTT sample).
    pub sent_at: SimTime,
    pub now: SimTime,
}

/// What a host policy may know about its flow when it is created. Only `host_dr` reads the
/// topology (it rotates over explicit paths, so the host must know them).
#[derive(Clone, Copy)]
pub struct FlowCtx<'a> {
    pub src: HostId,
    pub dst: HostId,
    pub topology: &'a Topology,
    pub config: &'a LoadBalancingConfig,
}

/// A host-side policy: chooses the entropy of each packet of one flow.
pub trait HostPolicy {
    fn next_entropy(&mut self, now: SimTime, rng: &mut SimRng) -> u32;
    fn on_ack(&mut self, _ack: AckInfo) {}
    /// The transport's retransmission timer fired (a loss the host could not otherwise see).
    fn on_timeout(&mut self, _now: SimTime) {}
}

/// Per-flow host policy state, dispatched without boxing.
#[derive(Clone, Debug)]
pub enum HostLb {
    Fixed(ecmp::FixedEntropy),
    Oblivious(spray::Oblivious),
}

impl HostLb {
    pub fn new(kind: HostKind, _ctx: &FlowCtx, rng: &mut SimRng) -> HostLb {
        match kind {
            HostKind::Fixed => HostLb::Fixed(ecmp::FixedEntropy::new(rng)),
            HostKind::Oblivious => HostLb::Oblivious(spray::Oblivious),
        }
    }

    #[inline]
    pub fn next_entropy(&mut self, now: SimTime, rng: &mut SimRng) -> u32 {
        match self {
            HostLb::Fixed(p) => p.next_entropy(now, rng),
            HostLb::Oblivious(p) => p.next_entropy(now, rng),
        }
    }

    pub fn on_timeout(&mut self, now: SimTime) {
        match self {
            HostLb::Fixed(p) => p.on_timeout(now),
            HostLb::Oblivious(p) => p.on_timeout(now),
        }
    }

    #[inline]
    pub fn on_ack(&mut self, ack: AckInfo) {
        match self {
            HostLb::Fixed(p) => p.on_ack(ack),
            HostLb::Oblivious(p) => p.on_ack(ack),
        }
    }
}

/// What a switch knows about itself.
#[derive(Clone, Copy, Debug)]
pub struct SwitchCtx {
    pub tier: Tier,
    /// Index within its tier.
    pub index: u32,
    pub shape: Shape,
    /// Per-switch hash salt drawn from the scenario seed.
    pub salt: u64,
}

/// What a switch knows about the packet it is forwarding.
#[derive(Clone, Copy, Debug)]
pub struct PacketView {
    pub src: HostId,
    pub dst: HostId,
    /// Hash of the packet's 5-tuple (direction-aware).
    pub flow_key: u64,
    pub entropy: u32,
    pub is_ack: bool,
    pub now: SimTime,
}

/// A switch-side policy: picks an index into the next-hop group `group` (the candidate egress
/// ports, whose queues it may read).
pub trait SwitchPolicy {
    fn choose(&mut self, pkt: &PacketView, group: &[Port], rng: &mut SimRng) -> usize;
}

/// Per-switch policy state.
#[derive(Clone, Debug)]
pub enum SwitchLb {
    Hash(ecmp::HashPolicy),
    RoundRobin(switch_rr::RoundRobin),
}

impl SwitchLb {
    pub fn new(kind: SwitchKind, ctx: &SwitchCtx, _config: &LoadBalancingConfig) -> SwitchLb {
        match kind {
            SwitchKind::Hash => SwitchLb::Hash(ecmp::HashPolicy { salt: ctx.salt }),
            SwitchKind::RoundRobin => SwitchLb::RoundRobin(switch_rr::RoundRobin::new(
                switch_rr::RoundRobinConfig::default(),
            )),
        }
    }

    #[inline]
    pub fn choose(&mut self, pkt: &PacketView, group: &[Port], rng: &mut SimRng) -> usize {
        match self {
            SwitchLb::Hash(p) => p.choose(pkt, group, rng),
            SwitchLb::RoundRobin(p) => p.choose(pkt, group, rng),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_names_are_unique_and_snake_case() {
        let names = scheme_names();
        for (i, n) in names.iter().enumerate() {
            assert!(n.chars().all(|c| c.is_ascii_lowercase() || c == '_'), "{n}");
            assert!(!names[i + 1..].contains(n), "duplicate {n}");
        }
        assert!(scheme("ecmp").is_some());
        assert!(scheme("nope").is_none());
    }
}
