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

pub mod config;
pub mod ecmp;
pub mod flowlet;
pub mod host_dr;
pub mod jsq;
pub mod ofan;
pub mod plb;
pub mod reps;
pub mod spray;
pub mod subflow;
pub mod switch_ar;
pub mod switch_random;
pub mod switch_rr;
#[cfg(test)]
mod testutil;

use crate::ids::{FlowId, HostId};
use crate::net::{Port, Shape, Tier, Topology};
use crate::rng::{rng_for, SimRng, Stream};
use crate::time::SimTime;
use config::LoadBalancingConfig;
use rand::Rng;
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
    /// N fixed entropies, packets striped round-robin (MPTCP-like).
    Subflow,
    /// One entropy, re-drawn after sustained ECN congestion (PLB).
    Plb,
    /// Recycle entropies of unmarked ACKs, explore otherwise (REPS).
    Reps,
    /// Rotate over the explicit paths to the destination (DRB); needs `SwitchKind::SourceRouted`.
    Rotation,
}

/// Which switch policy a scheme uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SwitchKind {
    /// Hash of (flow, entropy, switch salt) modulo the group size.
    Hash,
    /// Round-robin over the group, reshuffling the order after every 5 wraps.
    RoundRobin,
    /// Round-robin in one fixed random order, never reshuffled.
    PlainRoundRobin,
    /// A uniformly random port.
    Random,
    /// The shortest queue in bytes, ties at random.
    Jsq,
    /// The lowest occupancy bin (5/10/20% of the buffer), ties at random.
    QuantizedAr,
    /// Keep a flow's port within a flowlet; a new flowlet takes the shortest queue.
    FlowletAr,
    /// Per-destination rotation over an IWRR schedule.
    Ofan,
    /// The entropy is the path: decode this tier's port from it (host_dr).
    SourceRouted,
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
    /// The `load_balancing.*` options this scheme reads (others are rejected).
    pub options: &'static [&'static str],
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
        options: &[],
    },
    SchemeInfo {
        name: "subflow",
        side: Side::Host,
        granularity: "subflow",
        summary: "MPTCP-like: load_balancing.subflows (4) fixed entropies, packets striped round-robin",
        host: HostKind::Subflow,
        switch: SwitchKind::Hash,
        options: &["subflows"],
    },
    SchemeInfo {
        name: "plb",
        side: Side::Host,
        granularity: "flowlet",
        summary: "PLB: re-draw the flow's entropy after consecutive ECN-congested rounds",
        host: HostKind::Plb,
        switch: SwitchKind::Hash,
        options: &[
            "plb_congested_fraction",
            "plb_rehash_rounds",
            "plb_idle_rehash_rounds",
            "plb_suspend_us",
        ],
    },
    SchemeInfo {
        name: "flowlet_ar",
        side: Side::Switch,
        granularity: "flowlet",
        summary: "switch flowlets: after a load_balancing.flowlet_gap_us (10) gap, move to the shortest queue",
        host: HostKind::Fixed,
        switch: SwitchKind::FlowletAr,
        options: &["flowlet_gap_us"],
    },
    SchemeInfo {
        name: "host_spray",
        side: Side::Host,
        granularity: "packet",
        summary: "oblivious packet spraying (OPS): a fresh random entropy per packet",
        host: HostKind::Oblivious,
        switch: SwitchKind::Hash,
        options: &[],
    },
    SchemeInfo {
        name: "switch_rr",
        side: Side::Switch,
        granularity: "packet",
        summary: "switch round-robin over the next-hop group, order reshuffled after every 5 wraps",
        host: HostKind::Fixed,
        switch: SwitchKind::RoundRobin,
        options: &[],
    },
    SchemeInfo {
        name: "switch_rr_simple",
        side: Side::Switch,
        granularity: "packet",
        summary: "plain switch round-robin in a fixed random order",
        host: HostKind::Fixed,
        switch: SwitchKind::PlainRoundRobin,
        options: &[],
    },
    SchemeInfo {
        name: "switch_random",
        side: Side::Switch,
        granularity: "packet",
        summary: "a uniformly random next hop per packet (RSQ)",
        host: HostKind::Fixed,
        switch: SwitchKind::Random,
        options: &[],
    },
    SchemeInfo {
        name: "switch_jsq",
        side: Side::Switch,
        granularity: "packet",
        summary: "join the shortest queue (bytes), ties at random",
        host: HostKind::Fixed,
        switch: SwitchKind::Jsq,
        options: &[],
    },
    SchemeInfo {
        name: "switch_ar",
        side: Side::Switch,
        granularity: "packet",
        summary: "Spectrum-X style: lowest queue bin (5/10/20% of buffer), ties at random",
        host: HostKind::Fixed,
        switch: SwitchKind::QuantizedAr,
        options: &["ar_refresh_ns"],
    },
    SchemeInfo {
        name: "reps",
        side: Side::Host,
        granularity: "packet",
        summary: "REPS: reuse entropies of unmarked ACKs (8-slot ring), explore otherwise, freeze on failure",
        host: HostKind::Reps,
        switch: SwitchKind::Hash,
        options: &["reps_freeze_us", "reps_explore_packets"],
    },
    SchemeInfo {
        name: "host_dr",
        side: Side::Host,
        granularity: "packet",
        summary: "DRB: each flow rotates over every path to its destination (source-routed entropy)",
        host: HostKind::Rotation,
        switch: SwitchKind::SourceRouted,
        options: &[],
    },
    SchemeInfo {
        name: "ofan",
        side: Side::Switch,
        granularity: "packet",
        summary: "switch rotation per destination ToR/pod and class over an IWRR schedule",
        host: HostKind::Fixed,
        switch: SwitchKind::Ofan,
        options: &[],
    },
];

pub fn scheme(name: &str) -> Option<&'static SchemeInfo> {
    SCHEMES.iter().find(|s| s.name == name)
}

pub fn scheme_names() -> Vec<&'static str> {
    SCHEMES.iter().map(|s| s.name).collect()
}

/// The schemes that read the option `key` (a `load_balancing.*` field name).
pub fn schemes_with_option(key: &str) -> Vec<&'static str> {
    SCHEMES
        .iter()
        .filter(|s| s.options.contains(&key))
        .map(|s| s.name)
        .collect()
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
    /// Switches trim congested packets instead of dropping them.
    pub trimming: bool,
}

/// A host-side policy: chooses the entropy of each packet of one flow.
pub trait HostPolicy {
    fn next_entropy(&mut self, now: SimTime, rng: &mut SimRng) -> u32;
    fn on_ack(&mut self, _ack: AckInfo) {}
    /// The transport's retransmission timer fired (a loss the host could not otherwise see).
    fn on_timeout(&mut self, _now: SimTime) {}
}

/// Per-flow host policy state, dispatched without a vtable. Policies with more than a few bytes of
/// state are boxed, so that a run's table of them stays small (one scheme runs at a time).
#[derive(Clone, Debug)]
pub enum HostLb {
    Fixed(ecmp::FixedEntropy),
    Oblivious(spray::Oblivious),
    Subflow(Box<subflow::Subflows>),
    Plb(Box<plb::Plb>),
    Reps(Box<reps::Reps>),
    Rotation(Box<host_dr::HostDr>),
}

/// Dispatches one call to the policy inside a `HostLb`.
macro_rules! host_dispatch {
    ($self:expr, $p:ident => $call:expr) => {
        match $self {
            HostLb::Fixed($p) => $call,
            HostLb::Oblivious($p) => $call,
            HostLb::Subflow($p) => $call,
            HostLb::Plb($p) => $call,
            HostLb::Reps($p) => $call,
            HostLb::Rotation($p) => $call,
        }
    };
}

impl HostLb {
    pub fn new(kind: HostKind, ctx: &FlowCtx, rng: &mut SimRng) -> HostLb {
        let cfg = ctx.config;
        match kind {
            HostKind::Fixed => HostLb::Fixed(ecmp::FixedEntropy::new(rng)),
            HostKind::Oblivious => HostLb::Oblivious(spray::Oblivious),
            HostKind::Subflow => {
                HostLb::Subflow(Box::new(subflow::Subflows::new(cfg.subflow_config(), rng)))
            }
            HostKind::Plb => HostLb::Plb(Box::new(plb::Plb::new(cfg.plb_config(), rng))),
            HostKind::Reps => HostLb::Reps(Box::new(reps::Reps::new(reps::RepsConfig {
                trimming: ctx.trimming,
                ..cfg.reps_config()
            }))),
            HostKind::Rotation => HostLb::Rotation(Box::new(host_dr::HostDr::new(ctx, rng))),
        }
    }

    #[inline]
    pub fn next_entropy(&mut self, now: SimTime, rng: &mut SimRng) -> u32 {
        host_dispatch!(self, p => p.next_entropy(now, rng))
    }

    pub fn on_timeout(&mut self, now: SimTime) {
        host_dispatch!(self, p => p.on_timeout(now))
    }

    #[inline]
    pub fn on_ack(&mut self, ack: AckInfo) {
        host_dispatch!(self, p => p.on_ack(ack))
    }
}

/// Every flow's host policy. Oblivious spraying keeps no per-flow state, so its flows need no
/// table at all: the send path then touches nothing but the flow's own line.
#[derive(Clone, Debug)]
pub enum HostLbs {
    Oblivious,
    PerFlow(Vec<HostLb>),
}

impl HostLbs {
    /// The policy state of flows given by (source, destination), flow i drawing from its own
    /// stream `Stream::Flow` i.
    pub fn new(
        kind: HostKind,
        flows: impl Iterator<Item = (HostId, HostId)>,
        topology: &Topology,
        config: &LoadBalancingConfig,
        trimming: bool,
        seed: u64,
    ) -> HostLbs {
        if kind == HostKind::Oblivious {
            return HostLbs::Oblivious;
        }
        let per_flow = flows
            .enumerate()
            .map(|(i, (src, dst))| {
                let ctx = FlowCtx {
                    src,
                    dst,
                    topology,
                    config,
                    trimming,
                };
                HostLb::new(kind, &ctx, &mut rng_for(seed, Stream::Flow, i as u64))
            })
            .collect();
        HostLbs::PerFlow(per_flow)
    }

    #[inline]
    pub fn next_entropy(&mut self, f: FlowId, now: SimTime, rng: &mut SimRng) -> u32 {
        match self {
            HostLbs::Oblivious => spray::Oblivious.next_entropy(now, rng),
            HostLbs::PerFlow(v) => v[f.idx()].next_entropy(now, rng),
        }
    }

    pub fn on_timeout(&mut self, f: FlowId, now: SimTime) {
        if let HostLbs::PerFlow(v) = self {
            v[f.idx()].on_timeout(now);
        }
    }

    #[inline]
    pub fn on_ack(&mut self, f: FlowId, ack: AckInfo) {
        if let HostLbs::PerFlow(v) = self {
            v[f.idx()].on_ack(ack);
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

/// What a switch knows about the packet it is forwarding, and what routing told it.
#[derive(Clone, Copy, Debug)]
pub struct PacketView<'a> {
    /// Converged routing's weight of each group port toward this destination (0 = no path);
    /// None = all equal.
    pub weights: Option<&'a [u32]>,
    /// Bumped every time routing converges: schedules built from older weights are stale.
    pub epoch: u32,
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
    Random(switch_random::RandomPort),
    Jsq(jsq::Jsq),
    QuantizedAr(switch_ar::QuantizedAr),
    FlowletAr(flowlet::FlowletAr),
    Ofan(ofan::Ofan),
    SourceRouted(host_dr::SourceRouted),
}

impl SwitchLb {
    pub fn new(kind: SwitchKind, ctx: &SwitchCtx, config: &LoadBalancingConfig) -> SwitchLb {
        use switch_rr::{RoundRobin, RoundRobinConfig};
        match kind {
            SwitchKind::Hash => SwitchLb::Hash(ecmp::HashPolicy { salt: ctx.salt }),
            SwitchKind::RoundRobin => {
                SwitchLb::RoundRobin(RoundRobin::new(RoundRobinConfig::default()))
            }
            SwitchKind::PlainRoundRobin => {
                SwitchLb::RoundRobin(RoundRobin::new(RoundRobinConfig {
                    reshuffle_after_wraps: 0,
                }))
            }
            SwitchKind::Random => SwitchLb::Random(switch_random::RandomPort),
            SwitchKind::Jsq => SwitchLb::Jsq(jsq::Jsq),
            SwitchKind::QuantizedAr => {
                SwitchLb::QuantizedAr(switch_ar::QuantizedAr::new(config.ar_config()))
            }
            SwitchKind::FlowletAr => {
                SwitchLb::FlowletAr(flowlet::FlowletAr::new(config.flowlet_config()))
            }
            SwitchKind::Ofan => SwitchLb::Ofan(ofan::Ofan::new(ctx)),
            SwitchKind::SourceRouted => {
                SwitchLb::SourceRouted(host_dr::SourceRouted::new(ctx.tier, ctx.shape))
            }
        }
    }

    /// Picks a port of `group`. With routing weights (after a failure converged), dead ports
    /// are never picked and oblivious policies pick in proportion to the weights (W-ECMP);
    /// queue-reading policies pick by queue among the live ports. The caller drops the packet
    /// when every weight is zero.
    #[inline]
    pub fn choose(&mut self, pkt: &PacketView, group: &[Port], rng: &mut SimRng) -> usize {
        if let Some(w) = pkt.weights {
            return self.choose_weighted(pkt, group, w, rng);
        }
        match self {
            SwitchLb::Hash(p) => p.choose(pkt, group, rng),
            SwitchLb::RoundRobin(p) => p.choose(pkt, group, rng),
            SwitchLb::Random(p) => p.choose(pkt, group, rng),
            SwitchLb::Jsq(p) => p.choose(pkt, group, rng),
            SwitchLb::QuantizedAr(p) => p.choose(pkt, group, rng),
            SwitchLb::FlowletAr(p) => p.choose(pkt, group, rng),
            SwitchLb::Ofan(p) => p.choose(pkt, group, rng),
            SwitchLb::SourceRouted(p) => p.choose(pkt, group, rng),
        }
    }
}

impl SwitchLb {
    fn choose_weighted(
        &mut self,
        pkt: &PacketView,
        group: &[Port],
        w: &[u32],
        rng: &mut SimRng,
    ) -> usize {
        use jsq::argmin_random_ties;
        let n = group.len();
        let shortest_live = |rng: &mut SimRng| {
            argmin_random_ties(
                n,
                |i| {
                    if w[i] == 0 {
                        u64::MAX
                    } else {
                        group[i].queued_bytes
                    }
                },
                rng,
            )
        };
        match self {
            SwitchLb::Hash(p) => weighted_pick(p.hash(pkt.flow_key, pkt.entropy), w),
            SwitchLb::Random(_) => weighted_pick(rng.gen(), w),
            SwitchLb::Jsq(_) => shortest_live(rng),
            SwitchLb::QuantizedAr(p) => p.choose_live(pkt, group, w, rng),
            SwitchLb::FlowletAr(p) => p.choose_live(pkt, group, w, rng),
            SwitchLb::RoundRobin(p) => {
                // Walk the rotation, accepting a port with probability weight / max weight:
                // dead ports are skipped, degraded ones visited proportionally less.
                let max = w.iter().copied().max().unwrap_or(0).max(1);
                for _ in 0..64 {
                    let i = p.choose(pkt, group, rng);
                    if w[i] == max || (w[i] > 0 && rng.gen_range(0..max) < w[i]) {
                        return i;
                    }
                }
                weighted_pick(rng.gen(), w)
            }
            SwitchLb::Ofan(p) => p.choose_weighted(pkt, group, w, rng),
            // The host chose the path; routing weights do not apply.
            SwitchLb::SourceRouted(p) => p.choose(pkt, group, rng),
        }
    }
}

/// Maps a uniform 64-bit value onto an index with probability proportional to `w`.
#[inline]
pub fn weighted_pick(x: u64, w: &[u32]) -> usize {
    let total: u64 = w.iter().map(|&v| v as u64).sum();
    debug_assert!(total > 0);
    let mut r = ((x >> 32) * total) >> 32;
    for (i, &v) in w.iter().enumerate() {
        if r < v as u64 {
            return i;
        }
        r -= v as u64;
    }
    w.len() - 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weighted_pick_follows_the_weights() {
        let w = [2u32, 0, 1];
        let mut counts = [0u32; 3];
        for i in 0..30_000u64 {
            counts[weighted_pick(crate::rng::mix64(i), &w)] += 1;
        }
        assert_eq!(counts[1], 0);
        assert!((19_000..21_000).contains(&counts[0]), "{counts:?}");
    }

    #[test]
    fn after_convergence_switch_ar_still_reads_its_refreshed_bins() {
        use testutil::{ports, view};
        let mut rng = rng_for(6, Stream::Switch, 2);
        let mut lb = SwitchLb::QuantizedAr(switch_ar::QuantizedAr::new(switch_ar::ArConfig {
            refresh: SimTime::from_ns(100),
        }));
        let w = [1u32, 1, 1];
        let at = |ns| PacketView {
            weights: Some(&w),
            ..view(0, SimTime::from_ns(ns))
        };
        let mut g = ports(1000, &[500, 0, 900]);
        assert_eq!(lb.choose(&at(0), &g, &mut rng), 1);
        // Port 1 fills and port 0 empties; until the refresh the bins still say port 1.
        g[1].queued_bytes = 900;
        g[0].queued_bytes = 0;
        assert_eq!(lb.choose(&at(99), &g, &mut rng), 1);
        assert_eq!(lb.choose(&at(100), &g, &mut rng), 0);
        // A dead port is never taken, even when its bin is the lowest.
        let w = [0u32, 1, 1];
        let dead = PacketView {
            weights: Some(&w),
            ..view(0, SimTime::from_ns(300))
        };
        assert_ne!(lb.choose(&dead, &g, &mut rng), 0);
    }

    #[test]
    fn after_convergence_a_flowlet_keeps_the_live_port_it_was_given() {
        use testutil::{ports, view};
        let mut rng = rng_for(8, Stream::Switch, 3);
        let mut lb =
            SwitchLb::FlowletAr(flowlet::FlowletAr::new(flowlet::FlowletConfig::default()));
        let w = [0u32, 1, 1];
        let at = |us| PacketView {
            weights: Some(&w),
            ..view(5, SimTime::from_us(us))
        };
        // Port 0 is shortest but dead: the flowlet starts on port 1.
        let mut g = ports(1 << 20, &[0, 10, 20]);
        assert_eq!(lb.choose(&at(0), &g, &mut rng), 1);
        // Within the gap it stays on port 1 however the queues move (packets stay in order).
        g[1].queued_bytes = 50_000;
        for t in 1..5 {
            assert_eq!(lb.choose(&at(t), &g, &mut rng), 1);
        }
        // After a gap it moves to the shortest live queue.
        assert_eq!(lb.choose(&at(30), &g, &mut rng), 2);
        let SwitchLb::FlowletAr(p) = &lb else {
            unreachable!()
        };
        assert_eq!(p.flowlets, 2);
    }

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

    #[test]
    fn every_option_belongs_to_a_scheme_and_is_a_config_field() {
        let all = LoadBalancingConfig::OPTION_KEYS;
        for s in SCHEMES {
            for o in s.options {
                assert!(all.contains(o), "{}: {o}", s.name);
            }
        }
        for o in all {
            assert!(
                !schemes_with_option(o).is_empty(),
                "{o} is read by no scheme"
            );
        }
        assert_eq!(schemes_with_option("subflows"), vec!["subflow"]);
    }
}
