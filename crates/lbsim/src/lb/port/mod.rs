//! Port policies: which of its NIC's ports (or planes) a host puts each packet on, on fabrics
//! whose hosts have several (`topology.kind = "ai"` with `nic_ports` or `planes` above 1).
//! The scheme still chooses the path inside the plane: its entropy is hashed or decoded by the
//! switches as on any fabric, so a port policy composes with every scheme.
//!
//! `load_balancing.port` names the policy. Unset (`scheme`), the NIC's ports are one more
//! next-hop group, chosen by the scheme's switch policy as a leaf would (what a NIC bonding
//! driver hashing on the header does). Any other policy chooses on the host, when the packet is
//! put on the NIC, and stamps its choice in the entropy's top byte ([`PORT_SHIFT`]): the ACK
//! echoes it, so the receiver answers on the same plane and the sender learns which port a
//! piece of feedback is about. Switches and host schemes see the entropy without that byte.
//!
//! A policy is one file: a type implementing [`PortPolicy`] and its [`PortInfo`], and one line in
//! [`PORTS`] and in [`PortLb`]'s dispatch.

pub mod adaptive;
pub mod hash;
pub mod idle;
pub mod round_robin;
pub mod spray;

use super::config::{OptSpec, Options};
use crate::ids::{FlowId, HostId};
use crate::net::Port;
use crate::rng::SimRng;
use crate::time::SimTime;

/// The entropy's bits above this carry the port a host policy chose (0-based, below 256).
pub const PORT_SHIFT: u32 = 24;
/// The bits of an entropy that name a path inside a plane.
pub const PATH_MASK: u32 = (1 << PORT_SHIFT) - 1;

/// The most ports toward the fabric a host may have under a port policy.
pub const MAX_PORTS: usize = 16;

/// The name of the default: the scheme's switch policy chooses among the NIC's ports.
pub const SCHEME: &str = "scheme";

/// What a port policy declares about itself (in its own file).
#[derive(Clone, Copy, Debug)]
pub struct PortInfo {
    /// `load_balancing.port`.
    pub name: &'static str,
    /// One line for `lbsim list`.
    pub summary: &'static str,
    /// The `load_balancing.*` options it reads.
    pub options: &'static [&'static OptSpec],
}

/// Every port policy besides `scheme`, in the order `lbsim list` shows them.
pub const PORTS: &[PortInfo] = &[
    hash::INFO,
    round_robin::INFO,
    spray::INFO,
    idle::INFO,
    adaptive::INFO,
];

/// The default's entry, for listings.
pub const SCHEME_INFO: PortInfo = PortInfo {
    name: SCHEME,
    summary: "the scheme's switch policy chooses among the NIC's ports, as at a leaf (default)",
    options: &[],
};

/// The policy named `name` (`scheme` included).
pub fn port(name: &str) -> Option<&'static PortInfo> {
    std::iter::once(&SCHEME_INFO)
        .chain(PORTS)
        .find(|p| p.name == name)
}

/// Every `load_balancing.port` value.
pub fn port_names() -> Vec<&'static str> {
    std::iter::once(SCHEME)
        .chain(PORTS.iter().map(|p| p.name))
        .collect()
}

/// What a port policy sees when a host puts a packet on its NIC.
pub struct PortCtx<'a> {
    pub host: HostId,
    pub flow: FlowId,
    /// The flow's identity (`workload::flow_identities`): stable whatever the flow's index.
    pub ident: u64,
    pub now: SimTime,
    /// The host's ports toward the fabric (its NVLink port excluded).
    pub ports: &'a [Port],
    /// When each of those ports could start the packet: its queue drained and its pacer ready.
    pub free_at: &'a [SimTime],
}

/// A host-side port policy. One value serves every host and flow of a run; it keeps what state
/// it needs per host or per flow.
pub trait PortPolicy {
    /// The index into `cx.ports` this packet goes on (a port that is down is replaced by the
    /// next one up afterwards, as for any NIC choice).
    fn choose(&mut self, cx: &PortCtx, rng: &mut SimRng) -> usize;
    /// An ACK of a packet flow `flow` sent on port `port` came back, CE-marked or not.
    fn on_ack(&mut self, _flow: FlowId, _port: usize, _ecn: bool, _now: SimTime) {}
    /// A packet flow `flow` sent on port `port` was lost or trimmed (a NACK or a returned header).
    fn on_loss(&mut self, _flow: FlowId, _port: usize, _now: SimTime) {}
}

/// The port policy of a run, dispatched without a vtable.
#[derive(Clone, Debug)]
pub enum PortLb {
    Hash(hash::Hash),
    RoundRobin(round_robin::RoundRobin),
    Spray(spray::Spray),
    Idle(idle::Idle),
    Adaptive(adaptive::Adaptive),
}

impl PortLb {
    /// The policy `name` for `hosts` hosts and `flows` flows; None for `scheme` (no host-side
    /// choice).
    pub fn new(name: &str, o: &Options, hosts: usize, flows: usize) -> Option<PortLb> {
        Some(match name {
            "hash" => PortLb::Hash(hash::Hash),
            "round_robin" => PortLb::RoundRobin(round_robin::RoundRobin::new(hosts)),
            "spray" => PortLb::Spray(spray::Spray),
            "idle" => PortLb::Idle(idle::Idle::new(hosts)),
            "adaptive" => PortLb::Adaptive(adaptive::Adaptive::new(o, flows)),
            _ => return None,
        })
    }

    #[inline]
    pub fn choose(&mut self, cx: &PortCtx, rng: &mut SimRng) -> usize {
        match self {
            PortLb::Hash(p) => p.choose(cx, rng),
            PortLb::RoundRobin(p) => p.choose(cx, rng),
            PortLb::Spray(p) => p.choose(cx, rng),
            PortLb::Idle(p) => p.choose(cx, rng),
            PortLb::Adaptive(p) => p.choose(cx, rng),
        }
    }

    #[inline]
    pub fn on_ack(&mut self, flow: FlowId, port: usize, ecn: bool, now: SimTime) {
        if let PortLb::Adaptive(p) = self {
            p.on_ack(flow, port, ecn, now);
        }
    }

    pub fn on_loss(&mut self, flow: FlowId, port: usize, now: SimTime) {
        if let PortLb::Adaptive(p) = self {
            p.on_loss(flow, port, now);
        }
    }
}

/// The port a stamped entropy names.
#[inline]
pub fn stamped_port(entropy: u32) -> usize {
    (entropy >> PORT_SHIFT) as usize
}

/// `entropy` with port `k` stamped in its top byte.
#[inline]
pub fn stamp(entropy: u32, k: usize) -> u32 {
    debug_assert!(k < 256 && entropy <= PATH_MASK);
    (entropy & PATH_MASK) | ((k as u32) << PORT_SHIFT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_policy_is_listed_once_and_builds() {
        let names = port_names();
        assert_eq!(names[0], SCHEME);
        for (i, n) in names.iter().enumerate() {
            assert!(!names[i + 1..].contains(n), "{n} listed twice");
            assert!(port(n).is_some());
        }
        let o = Options::port_defaults(&adaptive::INFO);
        for p in PORTS {
            assert!(PortLb::new(p.name, &o, 2, 2).is_some(), "{}", p.name);
        }
        assert!(PortLb::new(SCHEME, &o, 2, 2).is_none());
    }

    #[test]
    fn a_stamp_keeps_the_path_and_names_the_port() {
        let e = stamp(0xABCD, 3);
        assert_eq!(e & PATH_MASK, 0xABCD);
        assert_eq!(stamped_port(e), 3);
        // Every entropy a scheme draws fits under the stamp.
        const { assert!(super::super::ENTROPY_SPACE <= PATH_MASK + 1) };
    }
}
