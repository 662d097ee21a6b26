//! Load balancing: the registry of schemes, and the two kinds of policy they are made of.
//!
//! The study's central contrast is who decides. A *host* policy chooses each packet's entropy (path
//! label) and sees only end-to-end feedback (ACKs, their ECN echo, losses). A *switch* policy picks
//! an egress port among the next-hop group from the switch's local state only. A scheme is one
//! host policy plus one switch policy; the types keep the two apart: host policies never see a
//! queue, switch policies never see an ACK.
//!
//! A scheme is one file: a `Def` type implementing [`Scheme`], which declares everything about the
//! scheme ([`SchemeInfo`]: name, side, granularity, summary, its options with their defaults and
//! ranges, its capabilities) and builds its two policies. The registry is the block of `pub mod`
//! lines below, one per scheme: `build.rs` turns it into one invocation of [`schemes!`], which
//! generates [`SCHEMES`] and the policy enums [`HostLb`] and [`SwitchLb`] (one variant per scheme)
//! with their `match` dispatch, so a packet hop costs no virtual call. Adding a scheme is one new
//! file and one line in that block.

/// The `Scheme` items that every switch-side scheme without options shares: no config, and hosts
/// keep one fixed entropy per flow (as ECMP's do). `$build` makes one switch's policy from its
/// context.
macro_rules! switch_side_scheme {
    ($switch:ty, |$ctx:pat_param| $build:expr) => {
        type Config = ();
        type Host = $crate::lb::ecmp::FixedEntropy;
        type Switch = $switch;
        fn config(_: &$crate::lb::config::Options) {}
        fn host(
            _: &(),
            _: &$crate::lb::FlowCtx,
            rng: &mut $crate::rng::SimRng,
        ) -> $crate::lb::ecmp::FixedEntropy {
            $crate::lb::ecmp::FixedEntropy::new(rng)
        }
        fn switch(_: &(), $ctx: &$crate::lb::SwitchCtx) -> $switch {
            $build
        }
    };
}

pub mod config;
pub mod port;
#[cfg(test)]
mod testutil;

// The registry: one line per scheme, in the order `lbsim list` and `compare` show them. build.rs
// reads the lines between the markers (and rustfmt.toml keeps rustfmt from sorting them).
// schemes: begin
pub mod ecmp;
pub mod subflow;
pub mod plb;
pub mod flowlet;
pub mod spray;
pub mod switch_rr;
pub mod switch_rr_simple;
pub mod switch_random;
pub mod switch_p2c;
pub mod jsq;
pub mod switch_ar;
pub mod reps;
pub mod host_dr;
pub mod ofan;
pub mod mrc;
// schemes: end

use std::sync::LazyLock;

use crate::ids::{FlowId, HostId};
use crate::net::{Port, Topology};
use crate::rng::{rng_for, SimRng, Stream};
use crate::time::SimTime;
use config::{LoadBalancingConfig, OptSpec, Options};
use serde::Serialize;

/// Who makes the per-packet path decision.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Side {
    Host,
    Switch,
}

/// What a scheme declares about itself (in its own file, as `Scheme::INFO`).
#[derive(Clone, Copy, Debug)]
pub struct SchemeInfo {
    /// `load_balancing.scheme`.
    pub name: &'static str,
    /// Who decides each packet's path.
    pub side: Side,
    /// What is balanced: "flow", "subflow", "flowlet" or "packet".
    pub granularity: &'static str,
    /// The study's grouping (granularity, then how packet schemes choose).
    pub family: Family,
    /// One line for `lbsim list`.
    pub summary: &'static str,
    /// The `load_balancing.*` options it reads, with their kinds, ranges and defaults (any other
    /// option is rejected).
    pub options: &'static [&'static OptSpec],
    /// Its switch policy reads queue occupancies, so a next-hop group's ports are brought up to
    /// date before every decision.
    pub reads_queues: bool,
    /// After routing converges around a failure, its switch policy follows the weights: it never
    /// picks a dead port (weight 0).
    pub honours_weights: bool,
    /// A host-decided scheme whose switches decode the path from the entropy (instead of hashing
    /// it as ECMP does): the host's choice only means something with its own switch policy.
    pub own_switch_decoding: bool,
}

impl SchemeInfo {
    /// A scheme whose switches decide each path; no options and no capabilities until the
    /// builders below add them.
    pub const fn switch(name: &'static str, granularity: &'static str) -> SchemeInfo {
        SchemeInfo::new(name, Side::Switch, granularity)
    }

    /// A scheme whose hosts decide each path (through the entropy they stamp).
    pub const fn host(name: &'static str, granularity: &'static str) -> SchemeInfo {
        SchemeInfo::new(name, Side::Host, granularity)
    }

    const fn new(name: &'static str, side: Side, granularity: &'static str) -> SchemeInfo {
        SchemeInfo {
            name,
            side,
            granularity,
            family: Family::of_granularity(granularity),
            summary: "",
            options: &[],
            reads_queues: false,
            honours_weights: false,
            own_switch_decoding: false,
        }
    }

    pub const fn summary(mut self, summary: &'static str) -> SchemeInfo {
        self.summary = summary;
        self
    }

    pub const fn options(mut self, options: &'static [&'static OptSpec]) -> SchemeInfo {
        self.options = options;
        self
    }

    pub const fn reading_queues(mut self) -> SchemeInfo {
        self.reads_queues = true;
        self
    }

    pub const fn honouring_weights(mut self) -> SchemeInfo {
        self.honours_weights = true;
        self
    }

    pub const fn decoding_own_paths(mut self) -> SchemeInfo {
        self.own_switch_decoding = true;
        self
    }

    /// A packet scheme that chooses by feedback (queues, ACKs) rather than obliviously.
    pub const fn adaptive(mut self) -> SchemeInfo {
        self.family = Family::PacketAdaptive;
        self
    }

    /// A packet scheme that rotates deterministically over the paths to each destination.
    pub const fn rotating(mut self) -> SchemeInfo {
        self.family = Family::Rotation;
        self
    }
}

/// How the study groups schemes: by granularity, and packet schemes by how they pick a path.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Family {
    Flow,
    Flowlet,
    Subflow,
    /// A fresh path per packet, blind to state (random, round-robin).
    PacketOblivious,
    /// A path per packet chosen by feedback: queue occupancy at the switch or ACKs at the host.
    PacketAdaptive,
    /// Destination-based rotation over every path (DRB-like), queues kept O(1).
    Rotation,
}

impl Family {
    pub const ALL: [Family; 6] = [
        Family::Flow,
        Family::Flowlet,
        Family::Subflow,
        Family::PacketOblivious,
        Family::PacketAdaptive,
        Family::Rotation,
    ];

    const fn of_granularity(g: &str) -> Family {
        match g.as_bytes() {
            b"flow" => Family::Flow,
            b"flowlet" => Family::Flowlet,
            b"subflow" => Family::Subflow,
            _ => Family::PacketOblivious,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Family::Flow => "flow",
            Family::Flowlet => "flowlet",
            Family::Subflow => "subflow",
            Family::PacketOblivious => "packet, oblivious",
            Family::PacketAdaptive => "packet, adaptive",
            Family::Rotation => "rotation",
        }
    }
}

/// A load-balancing scheme: what it is and how its policies are built. Implemented once per
/// scheme file, by a type named `Def`.
pub trait Scheme {
    const INFO: SchemeInfo;
    /// Its options, read once per run (`()` for a scheme without options).
    type Config;
    /// Per-flow host state (box anything larger than a few bytes: one per flow).
    type Host: HostPolicy + Clone + std::fmt::Debug;
    /// Per-switch state.
    type Switch: SwitchPolicy + Clone + std::fmt::Debug;
    /// Reads its options (validated already; only those in `INFO.options`).
    fn config(o: &Options) -> Self::Config;
    /// The host policy of one flow, drawing from the flow's own stream.
    fn host(cfg: &Self::Config, ctx: &FlowCtx, rng: &mut SimRng) -> Self::Host;
    /// The policy of one switch.
    fn switch(cfg: &Self::Config, ctx: &SwitchCtx) -> Self::Switch;
    /// A host policy that keeps no per-flow state: every flow shares this one, and the run keeps
    /// no per-flow table (its `on_ack` and `on_timeout` are never called).
    fn shared_host(_cfg: &Self::Config) -> Option<Self::Host> {
        None
    }
}

/// Generates, from the registry's modules (each with a `Def: Scheme`), everything that lists
/// the schemes: `SCHEMES`, the enums `HostLb` (per flow) and `SwitchLb` (per switch) with one
/// variant per scheme, and the `match`es that build and dispatch them. build.rs writes the one
/// invocation, from the `pub mod` lines of the registry.
macro_rules! schemes {
    ($($v:ident => $m:ident,)*) => {
        /// Every load-balancing scheme lbsim implements, in the order `compare` runs them.
        pub const SCHEMES: &[SchemeInfo] = &[$(<$m::Def as Scheme>::INFO),*];

        /// Per-flow host policy state, dispatched without a vtable (one variant per scheme).
        #[derive(Clone, Debug)]
        pub enum HostLb {
            $($v(<$m::Def as Scheme>::Host),)*
        }

        impl HostLb {
            #[inline]
            pub fn next_entropy(&mut self, now: SimTime, rng: &mut SimRng) -> u32 {
                match self {
                    $(HostLb::$v(p) => p.next_entropy(now, rng),)*
                }
            }

            pub fn on_timeout(&mut self, now: SimTime) {
                match self {
                    $(HostLb::$v(p) => p.on_timeout(now),)*
                }
            }

            #[inline]
            pub fn on_ack(&mut self, ack: AckInfo) {
                match self {
                    $(HostLb::$v(p) => p.on_ack(ack),)*
                }
            }
        }

        impl HostLbs {
            /// The host policy state of flows given by (source, destination, identity), each
            /// drawing from its own stream `Stream::Flow` named by its identity
            /// (`workload::flow_identities`), not by its place in the list.
            pub fn new(
                scheme: &SchemeInfo,
                flows: impl Iterator<Item = (HostId, HostId, u64)>,
                setup: &HostSetup,
            ) -> HostLbs {
                $(if scheme.name == <$m::Def as Scheme>::INFO.name {
                    return host_table::<$m::Def>(HostLb::$v, flows, setup);
                })*
                unreachable!("scheme `{}` is not registered", scheme.name)
            }
        }

        /// Per-switch policy state, dispatched without a vtable (one variant per scheme).
        #[derive(Clone, Debug)]
        pub enum SwitchLb {
            $($v(<$m::Def as Scheme>::Switch),)*
        }

        impl SwitchLb {
            pub fn new(
                scheme: &SchemeInfo,
                ctx: &SwitchCtx,
                config: &LoadBalancingConfig,
            ) -> SwitchLb {
                $(if scheme.name == <$m::Def as Scheme>::INFO.name {
                    let cfg = <$m::Def as Scheme>::config(
                        &config.options(&<$m::Def as Scheme>::INFO),
                    );
                    return SwitchLb::$v(<$m::Def as Scheme>::switch(&cfg, ctx));
                })*
                unreachable!("scheme `{}` is not registered", scheme.name)
            }

            /// Picks a port of `group`. With routing weights (after a failure converged), the
            /// policy's `weighted` decides (see [`SwitchPolicy`]); the caller drops the
            /// packet when every weight is zero.
            #[inline]
            pub fn choose(&mut self, pkt: &PacketView, group: &[Port], rng: &mut SimRng) -> usize {
                if let Some(w) = pkt.weights {
                    return self.weighted(pkt, group, w, rng);
                }
                match self {
                    $(SwitchLb::$v(p) => p.choose(pkt, group, rng),)*
                }
            }

            fn weighted(
                &mut self,
                pkt: &PacketView,
                group: &[Port],
                w: &[u32],
                rng: &mut SimRng,
            ) -> usize {
                match self {
                    $(SwitchLb::$v(p) => p.weighted(pkt, group, w, rng),)*
                }
            }
        }
    };
}

include!(concat!(env!("OUT_DIR"), "/schemes.rs"));

pub fn scheme(name: &str) -> Option<&'static SchemeInfo> {
    SCHEMES.iter().find(|s| s.name == name)
}

pub fn scheme_names() -> Vec<&'static str> {
    SCHEMES.iter().map(|s| s.name).collect()
}

/// Every scheme option, once each, in registry order, then the port policies' options.
pub fn all_options() -> &'static [&'static OptSpec] {
    static ALL: LazyLock<Vec<&'static OptSpec>> = LazyLock::new(|| {
        let mut v: Vec<&'static OptSpec> = Vec::new();
        let ports = port::PORTS.iter().flat_map(|p| p.options);
        for o in SCHEMES.iter().flat_map(|s| s.options).chain(ports) {
            if !v.iter().any(|x| x.key == o.key) {
                v.push(o);
            }
        }
        v
    });
    &ALL
}

/// The option named `key` (a `load_balancing.*` field name), if a scheme reads it.
pub fn option(key: &str) -> Option<&'static OptSpec> {
    all_options().iter().copied().find(|o| o.key == key)
}

/// Every key `[load_balancing]` accepts: `scheme`, `port`, then every option.
pub fn section_keys() -> &'static [&'static str] {
    static KEYS: LazyLock<Vec<&'static str>> = LazyLock::new(|| {
        ["scheme", "port"]
            .into_iter()
            .chain(all_options().iter().map(|o| o.key))
            .collect()
    });
    &KEYS
}

/// The schemes that read the option `key`.
pub fn schemes_with_option(key: &str) -> Vec<&'static str> {
    SCHEMES
        .iter()
        .filter(|s| s.options.iter().any(|o| o.key == key))
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
    /// The data packet was CE-marked somewhere on its path (a NACK or returned header counts
    /// as marked, too).
    pub ecn: bool,
    /// A NACK of a trimmed packet or a header returned to its sender: the packet's payload was
    /// lost on the path its entropy names.
    pub loss: bool,
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

/// A boxed policy is a policy (large per-flow state is boxed to keep the flow table small).
impl<T: HostPolicy + ?Sized> HostPolicy for Box<T> {
    #[inline]
    fn next_entropy(&mut self, now: SimTime, rng: &mut SimRng) -> u32 {
        (**self).next_entropy(now, rng)
    }
    #[inline]
    fn on_ack(&mut self, ack: AckInfo) {
        (**self).on_ack(ack)
    }
    fn on_timeout(&mut self, now: SimTime) {
        (**self).on_timeout(now)
    }
}

/// Every flow's host policy. A scheme whose host policy keeps no per-flow state (oblivious
/// spraying) has no table at all: the send path then touches nothing but the flow's own line.
#[derive(Clone, Debug)]
pub enum HostLbs {
    Shared(HostLb),
    PerFlow(Vec<HostLb>),
}

/// What building the flows' host policies reads besides the flows.
pub struct HostSetup<'a> {
    pub topology: &'a Topology,
    pub config: &'a LoadBalancingConfig,
    /// Switches trim congested packets instead of dropping them.
    pub trimming: bool,
    /// The run's seed: a flow's policy draws from `Stream::Flow` at its identity.
    pub seed: u64,
}

/// The host table of scheme `S`, its options read once.
fn host_table<S: Scheme>(
    wrap: fn(S::Host) -> HostLb,
    flows: impl Iterator<Item = (HostId, HostId, u64)>,
    setup: &HostSetup,
) -> HostLbs {
    let cfg = S::config(&setup.config.options(&S::INFO));
    if let Some(shared) = S::shared_host(&cfg) {
        return HostLbs::Shared(wrap(shared));
    }
    let per_flow = flows
        .map(|(src, dst, ident)| {
            let ctx = FlowCtx {
                src,
                dst,
                topology: setup.topology,
                trimming: setup.trimming,
            };
            wrap(S::host(
                &cfg,
                &ctx,
                &mut rng_for(setup.seed, Stream::Flow, ident),
            ))
        })
        .collect();
    HostLbs::PerFlow(per_flow)
}

impl HostLbs {
    #[inline]
    pub fn next_entropy(&mut self, f: FlowId, now: SimTime, rng: &mut SimRng) -> u32 {
        match self {
            HostLbs::Shared(p) => p.next_entropy(now, rng),
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

/// What a switch knows about itself: which switch it is, and the fabric it may ask about its
/// destinations' groups and the paths hosts name.
#[derive(Clone, Copy, Debug)]
pub struct SwitchCtx<'a> {
    pub topology: &'a Topology,
    pub switch: crate::ids::SwitchId,
    /// Per-switch hash salt drawn from the scenario seed.
    pub salt: u64,
}

impl SwitchCtx<'_> {
    /// This switch's tier (0: hosts attach to it).
    pub fn tier(&self) -> u8 {
        self.topology.switches[self.switch.idx()].tier
    }
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
    /// Hash of the packet's addresses (direction-aware); with `entropy`, its 5-tuple.
    pub flow_key: u64,
    pub entropy: u32,
    pub is_ack: bool,
    pub now: SimTime,
}

/// A switch-side policy: picks an index into the next-hop group `group` (the candidate egress
/// ports, whose queues it may read).
pub trait SwitchPolicy {
    fn choose(&mut self, pkt: &PacketView, group: &[Port], rng: &mut SimRng) -> usize;
    /// The choice once routing has converged around a failure: `w` is each port's weight (the
    /// capacity of the paths through it; 0 = dead, never all 0). A scheme that declares
    /// `honours_weights` never picks a dead port here; oblivious policies pick in proportion
    /// to the weights (W-ECMP), queue-reading ones by queue among the live ports.
    fn weighted(&mut self, pkt: &PacketView, group: &[Port], w: &[u32], rng: &mut SimRng) -> usize;
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
    use testutil::{ports, view};

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
        let mut rng = rng_for(6, Stream::Switch, 2);
        let mut lb = SwitchLb::SwitchAr(switch_ar::QuantizedAr::new(switch_ar::ArConfig {
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
        let mut rng = rng_for(8, Stream::Switch, 3);
        let mut lb = SwitchLb::Flowlet(flowlet::FlowletAr::new(flowlet::FlowletConfig::default()));
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
        let SwitchLb::Flowlet(p) = &lb else {
            unreachable!()
        };
        assert_eq!(p.flowlets, 2);
    }

    #[test]
    fn families_follow_the_study() {
        let expect = [
            ("ecmp", Family::Flow),
            ("plb", Family::Flowlet),
            ("flowlet_ar", Family::Flowlet),
            ("subflow", Family::Subflow),
            ("host_spray", Family::PacketOblivious),
            ("switch_rr", Family::PacketOblivious),
            ("switch_rr_simple", Family::PacketOblivious),
            ("switch_random", Family::PacketOblivious),
            ("switch_p2c", Family::PacketAdaptive),
            ("switch_jsq", Family::PacketAdaptive),
            ("switch_ar", Family::PacketAdaptive),
            ("reps", Family::PacketAdaptive),
            ("host_dr", Family::Rotation),
            ("ofan", Family::Rotation),
        ];
        for (n, f) in expect {
            assert_eq!(scheme(n).unwrap().family, f, "{n}");
        }
        for n in scheme_names() {
            let s = scheme(n).unwrap();
            // A packet scheme that reads queues cannot be oblivious.
            if s.granularity == "packet" && s.reads_queues {
                assert_eq!(s.family, Family::PacketAdaptive, "{n}");
            }
            if s.granularity != "packet" {
                assert!(s.family < Family::PacketOblivious, "{n}");
            }
        }
    }

    #[test]
    fn registry_names_are_unique_and_snake_case() {
        let names = scheme_names();
        for (i, n) in names.iter().enumerate() {
            assert!(
                n.starts_with(|c: char| c.is_ascii_lowercase())
                    && n.chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'),
                "{n}"
            );
            assert!(!names[i + 1..].contains(n), "duplicate {n}");
        }
        assert!(scheme("ecmp").is_some());
        assert!(scheme("nope").is_none());
    }

    #[test]
    fn options_are_one_spec_per_key_and_their_defaults_are_valid() {
        // A key two schemes share must be the same option (same kind, range and default).
        for s in SCHEMES {
            for o in s.options {
                assert_eq!(option(o.key), Some(*o), "{}: {}", s.name, o.key);
                assert!(o.check(o.default_value()).is_ok(), "{}: {}", s.name, o.key);
                assert!(o.key != "scheme" && !o.key.contains('.'), "{}", o.key);
            }
        }
        for p in port::PORTS {
            for o in p.options {
                assert_eq!(option(o.key), Some(*o), "{}: {}", p.name, o.key);
                assert!(o.check(o.default_value()).is_ok(), "{}: {}", p.name, o.key);
                // A port policy's option is no scheme's: validation tells them apart by key.
                assert!(schemes_with_option(o.key).is_empty(), "{}", o.key);
            }
        }
        assert_eq!(&section_keys()[..2], ["scheme", "port"]);
        assert_eq!(section_keys().len(), 2 + all_options().len());
        assert_eq!(schemes_with_option("subflows"), vec!["subflow"]);
        assert!(schemes_with_option("nope").is_empty());
    }

    /// A switch of every kind of position the capability tests use: a fat-tree ToR (Ofan keys
    /// its rotations by the destination's ToR, so destinations stay below 128).
    fn ctx() -> SwitchCtx<'static> {
        static TOPO: std::sync::OnceLock<Topology> = std::sync::OnceLock::new();
        SwitchCtx {
            topology: TOPO.get_or_init(|| Topology::fat_tree(8, crate::net::topology::TEST_LINKS)),
            switch: crate::ids::SwitchId(0),
            salt: 11,
        }
    }

    /// A varied stream of packets: flows, entropies, destinations, data and ACKs, times.
    fn packets(n: u64) -> impl Iterator<Item = PacketView<'static>> {
        (0..n).map(|i| PacketView {
            src: HostId((i % 7) as u32),
            dst: HostId(((i * 37) % 128) as u32),
            entropy: crate::rng::mix64(i) as u32 % ENTROPY_SPACE,
            is_ack: i % 5 == 0,
            ..view(crate::rng::mix64(i % 40), SimTime::from_ns(i * 300))
        })
    }

    fn switch_of(s: &SchemeInfo) -> SwitchLb {
        SwitchLb::new(s, &ctx(), &LoadBalancingConfig::default())
    }

    #[test]
    fn a_scheme_that_says_it_does_not_read_queues_does_not() {
        // The simulation skips syncing a group's ports for such schemes: their choices must not
        // depend on the queues at all.
        let full = ports(1 << 20, &[900_000, 0, 50, 7]);
        let empty = ports(1 << 20, &[0; 4]);
        for s in SCHEMES.iter().filter(|s| !s.reads_queues) {
            let (mut a, mut b) = (switch_of(s), switch_of(s));
            let (mut ra, mut rb) = (rng_for(3, Stream::Switch, 0), rng_for(3, Stream::Switch, 0));
            for p in packets(2000) {
                let (x, y) = (a.choose(&p, &full, &mut ra), b.choose(&p, &empty, &mut rb));
                assert_eq!(x, y, "{}", s.name);
            }
        }
    }

    #[test]
    fn a_scheme_that_reads_queues_avoids_the_one_full_port() {
        let g = ports(1 << 20, &[0, 900_000, 0, 0]);
        for s in SCHEMES.iter().filter(|s| s.reads_queues) {
            assert_eq!(
                s.side,
                Side::Switch,
                "{}: a host policy sees no queue",
                s.name
            );
            let mut lb = switch_of(s);
            let mut rng = rng_for(4, Stream::Switch, 0);
            for p in packets(2000) {
                assert_ne!(lb.choose(&p, &g, &mut rng), 1, "{}", s.name);
            }
        }
    }

    #[test]
    fn a_scheme_that_honours_weights_never_picks_a_dead_port() {
        // Port 0 is dead and its queue the shortest; port 2 has twice the others' capacity.
        let w = [0u32, 1, 2, 1];
        let g = ports(1 << 20, &[0, 3000, 9000, 6000]);
        let mut ignoring = Vec::new();
        for s in SCHEMES {
            if !s.honours_weights {
                ignoring.push(s.name);
                continue;
            }
            let mut lb = switch_of(s);
            let mut rng = rng_for(5, Stream::Switch, 0);
            for p in packets(2000) {
                let p = PacketView {
                    weights: Some(&w),
                    epoch: 1,
                    ..p
                };
                let i = lb.choose(&p, &g, &mut rng);
                assert!(i != 0 && i < 4, "{}: {i}", s.name);
            }
        }
        // Only a source-routed scheme leaves the path to the host.
        for n in ignoring {
            assert!(scheme(n).unwrap().own_switch_decoding, "{n}");
        }
    }

    #[test]
    fn host_decided_schemes_hash_at_switches_unless_they_decode_the_entropy() {
        let g = ports(1 << 20, &[0, 10, 20, 30]);
        let ecmp = scheme("ecmp").unwrap();
        for s in SCHEMES.iter().filter(|s| s.side == Side::Host) {
            assert!(!s.reads_queues, "{}", s.name);
            let (mut a, mut b) = (switch_of(s), switch_of(ecmp));
            let mut rng = rng_for(6, Stream::Switch, 0);
            let same = packets(2000)
                .filter(|p| a.choose(p, &g, &mut rng) == b.choose(p, &g, &mut rng))
                .count();
            if s.own_switch_decoding {
                assert!(same < 1000, "{}: {same}", s.name);
            } else {
                assert_eq!(same, 2000, "{}", s.name);
            }
        }
        assert!(SCHEMES
            .iter()
            .all(|s| !s.own_switch_decoding || s.side == Side::Host));
    }

    #[test]
    fn per_flow_host_state_stays_small() {
        // One entry per flow (a million in a 1024-host all-to-all): large state is boxed.
        assert!(std::mem::size_of::<HostLb>() <= 16);
    }
}
