//! Host DR, destination rotation (DRB, Cao et al., CoNEXT'13; the study's "Host DR"): each flow
//! rotates over every valid path to its destination, one packet per path in turn, so the load a
//! host puts on each path is exactly even and deterministic.
//!
//! Paths are through the lowest common tier: the (k/2)^2 cores for an inter-pod flow of a
//! fat-tree, the k/2 aggregation switches of the pod for an intra-pod flow, a single path under
//! one leaf; in a leaf-spine, the spines; on any Clos, the product of the up degrees below that
//! tier (the fabric counts them: `Topology::path_count`). A flow starts at a random path index
//! and packet i uses index (start + i) mod count. Indices are mixed-radix numbers whose lowest
//! digit is the first uplink, so consecutive ones change the first hop (DRB's digit reversal):
//! on a fat-tree index i goes up ToR port j = i mod h, then agg port m = (i / h) mod h (core
//! j*h + m), with h = k/2.
//!
//! A switch hash cannot pin a path, so the scheme pairs the host rotation with [`SourceRouted`]
//! switches that read the path from the entropy: the entropy *is* the path index. ACKs echo their
//! data packet's entropy and so retrace its path in reverse (the ToR and agg positions are the
//! same on both sides of a core). This is why host_dr needs the topology at the host.
//!
//! No options. With a failure model, the host should drop paths it learns are dead (the study's
//! fork fixes the list at flow start, a quirk not to copy); lbsim has no failures yet.

use super::config::Options;
use super::{FlowCtx, HostPolicy, PacketView, Scheme, SchemeInfo, SwitchCtx, SwitchPolicy};
use crate::net::Port;
use crate::rng::SimRng;
use crate::time::SimTime;
use rand::Rng;

/// The `host_dr` scheme.
pub struct Def;

impl Scheme for Def {
    const INFO: SchemeInfo = SchemeInfo::host("host_dr", "packet")
        .rotating()
        .summary(
            "DRB: each flow rotates over every path to its destination (source-routed entropy)",
        )
        // Not honouring weights: the host chose the path, routing weights do not apply.
        .decoding_own_paths();
    type Config = ();
    type Host = Box<HostDr>;
    type Switch = SourceRouted;
    fn config(_: &Options) {}
    fn host(_: &(), ctx: &FlowCtx, rng: &mut SimRng) -> Box<HostDr> {
        Box::new(HostDr::new(ctx, rng))
    }
    fn switch(_: &(), ctx: &SwitchCtx) -> SourceRouted {
        SourceRouted::new(ctx)
    }
}

/// Number of distinct paths between the flow's endpoints (each is an entropy in 0..count), as
/// the fabric counts them. A fabric where paths are not named by their up choices is refused
/// before a run (see `Topology::paths_named_by_up_choices`).
pub fn path_count(ctx: &FlowCtx) -> u32 {
    ctx.topology.path_count(ctx.src, ctx.dst).unwrap_or(1)
}

#[derive(Clone, Debug)]
pub struct HostDr {
    count: u32,
    next: u32,
}

impl HostDr {
    pub fn new(ctx: &FlowCtx, rng: &mut SimRng) -> Self {
        let count = path_count(ctx).max(1);
        HostDr {
            count,
            next: rng.gen_range(0..count),
        }
    }
}

impl HostPolicy for HostDr {
    #[inline]
    fn next_entropy(&mut self, _now: SimTime, _rng: &mut SimRng) -> u32 {
        let e = self.next;
        self.next = if e + 1 == self.count { 0 } else { e + 1 };
        e
    }
}

/// Switch side of host_dr: decodes the path index carried in the entropy for this tier.
#[derive(Clone, Debug)]
pub struct SourceRouted {
    /// Divisor that brings this tier's digit to the bottom: 1 at ToRs and leaves, h at aggs.
    div: u32,
}

impl SourceRouted {
    pub fn new(ctx: &SwitchCtx) -> Self {
        SourceRouted {
            div: ctx.topology.path_digit(ctx.tier()).unwrap_or(1).max(1),
        }
    }
}

impl SwitchPolicy for SourceRouted {
    #[inline]
    fn choose(&mut self, pkt: &PacketView, group: &[Port], _rng: &mut SimRng) -> usize {
        ((pkt.entropy / self.div) % group.len() as u32) as usize
    }

    /// The host chose the path: routing weights do not apply.
    fn weighted(
        &mut self,
        pkt: &PacketView,
        group: &[Port],
        _w: &[u32],
        rng: &mut SimRng,
    ) -> usize {
        self.choose(pkt, group, rng)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::{HostId, NodeId, SwitchId};
    use crate::lb::config::LoadBalancingConfig;
    use crate::lb::SwitchLb;
    use crate::net::{LinkParams, Route, Topology};
    use crate::rng::{rng_for, Stream};
    use crate::time::BitsPerSec;

    fn params() -> LinkParams {
        LinkParams {
            rate: BitsPerSec::from_gbps(100.0),
            latency: SimTime::from_ns(500),
            switch_latency: SimTime::ZERO,
        }
    }

    /// Follows a packet with `entropy` from `src` to `dst` through source-routed switches;
    /// returns the switches visited.
    fn walk(t: &Topology, src: u32, dst: u32, entropy: u32) -> Vec<SwitchId> {
        let cfg = LoadBalancingConfig::default();
        let mut link = &t.links[src as usize];
        let mut seen = Vec::new();
        let mut rng = rng_for(0, Stream::Switch, 0);
        while let NodeId::Switch(sw) = link.to {
            seen.push(sw);
            let port = match t.route(sw, HostId(dst)) {
                Route::Port(p) => p,
                Route::Group { first, n } => {
                    let ctx = SwitchCtx {
                        topology: t,
                        switch: sw,
                        salt: 0,
                    };
                    // The registry builds host_dr's switches as a run does.
                    let mut p = match SwitchLb::new(&Def::INFO, &ctx, &cfg) {
                        SwitchLb::HostDr(p) => p,
                        _ => unreachable!(),
                    };
                    let group: Vec<Port> = (0..n)
                        .map(|_| Port::new(params().rate, SimTime::ZERO, link.to, 1, 1))
                        .collect();
                    let view = PacketView {
                        weights: None,
                        epoch: 0,
                        src: HostId(src),
                        dst: HostId(dst),
                        flow_key: 0,
                        entropy,
                        is_ack: false,
                        now: SimTime::ZERO,
                    };
                    crate::ids::PortId(first.0 + p.choose(&view, &group, &mut rng) as u32)
                }
            };
            link = &t.links[port.idx()];
        }
        assert_eq!(link.to, NodeId::Host(HostId(dst)));
        seen
    }

    fn flow(t: &Topology, src: u32, dst: u32, seed: u64) -> (HostDr, SimRng) {
        let ctx = FlowCtx {
            src: HostId(src),
            dst: HostId(dst),
            topology: t,
            trimming: false,
        };
        let mut rng = rng_for(seed, Stream::Flow, 0);
        (HostDr::new(&ctx, &mut rng), rng)
    }

    #[test]
    fn inter_pod_rotation_visits_every_core_once_per_cycle_and_alternates_aggs() {
        let t = Topology::fat_tree(8, params());
        let (mut p, mut rng) = flow(&t, 0, 127, 3);
        let paths: Vec<Vec<SwitchId>> = (0..32)
            .map(|_| walk(&t, 0, 127, p.next_entropy(SimTime::ZERO, &mut rng)))
            .collect();
        // src ToR, agg, core, dst agg, dst ToR.
        assert!(paths.iter().all(|w| w.len() == 5));
        let mut cores: Vec<u32> = paths[..16].iter().map(|w| w[2].0).collect();
        cores.sort();
        cores.dedup();
        assert_eq!(cores.len(), 16);
        for i in 0..16 {
            assert_eq!(paths[i], paths[i + 16], "the rotation repeats");
            assert_ne!(
                paths[i][1],
                paths[i + 1][1],
                "consecutive paths share an agg"
            );
        }
    }

    #[test]
    fn acks_retrace_the_data_path() {
        let t = Topology::fat_tree(4, params());
        for e in 0..4 {
            let mut fwd = walk(&t, 1, 14, e);
            let back = walk(&t, 14, 1, e);
            fwd.reverse();
            assert_eq!(fwd, back, "entropy {e}");
        }
    }

    #[test]
    fn intra_pod_rotates_over_aggs_and_intra_tor_has_one_path() {
        let t = Topology::fat_tree(8, params());
        let (mut p, mut rng) = flow(&t, 0, 5, 1);
        let aggs: Vec<SwitchId> = (0..8)
            .map(|_| walk(&t, 0, 5, p.next_entropy(SimTime::ZERO, &mut rng))[1])
            .collect();
        let mut d = aggs[..4].to_vec();
        d.sort();
        d.dedup();
        assert_eq!(d.len(), 4);
        assert_eq!(aggs[..4], aggs[4..]);
        let (mut q, mut rng) = flow(&t, 0, 3, 1);
        assert!((0..5).all(|_| q.next_entropy(SimTime::ZERO, &mut rng) == 0));
    }

    #[test]
    fn leaf_spine_rotates_over_spines_from_a_random_start() {
        let t = Topology::leaf_spine(4, 3, 5, params(), params().rate);
        let starts: Vec<u32> = (0..20)
            .map(|seed| {
                let (mut p, mut rng) = flow(&t, 0, 11, seed);
                let e: Vec<u32> = (0..6)
                    .map(|_| p.next_entropy(SimTime::ZERO, &mut rng))
                    .collect();
                for w in e.windows(2) {
                    assert_eq!(w[1], (w[0] + 1) % 5);
                }
                let spines: Vec<SwitchId> = e.iter().map(|&x| walk(&t, 0, 11, x)[1]).collect();
                assert_eq!(spines[0], spines[5]);
                e[0]
            })
            .collect();
        assert!((0..5).all(|s| starts.contains(&s)), "{starts:?}");
    }
}
