//! Fabric shapes and their up-down routing.
//!
//! Ports are laid out so that every next-hop group is a contiguous run of a switch's ports: routing
//! is arithmetic on the destination's index (no per-destination tables), and a load-balancing
//! decision sees its candidate ports as one slice.
//!
//! Port numbering: ports `0..hosts` are the host NICs (port h is host h's uplink); then each
//! switch's ports follow in switch order, down ports first, up ports after.

use crate::ids::{HostId, NodeId, PortId, SwitchId};
use crate::time::{BitsPerSec, SimTime};

/// The shape of a fabric.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// 3-tier k-ary fat-tree: k pods of k/2 ToRs and k/2 aggregation switches, (k/2)^2 cores,
    /// k/2 hosts per ToR: k^3/4 hosts.
    FatTree { k: u32 },
    /// 2-tier leaf-spine: every leaf connects once to every spine.
    LeafSpine {
        hosts_per_leaf: u32,
        leaves: u32,
        spines: u32,
    },
}

/// The tier of a switch, lowest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tier {
    Tor,
    Agg,
    Core,
}

impl Tier {
    pub fn name(self) -> &'static str {
        match self {
            Tier::Tor => "tor",
            Tier::Agg => "agg",
            Tier::Core => "core",
        }
    }
}

/// Where a switch forwards a packet for a destination.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Route {
    /// Exactly one port leads down toward the destination.
    Port(PortId),
    /// Any of `n` consecutive ports starting at `first` (the up-going next-hop group).
    Group { first: PortId, n: u32 },
}

#[derive(Clone, Debug)]
pub struct SwitchInfo {
    pub tier: Tier,
    /// Index within its tier (the number in its name, e.g. `agg:5`).
    pub index: u32,
    pub port_base: u32,
    pub ports: u32,
    /// Fat-tree routing, worked out once per switch (see [`Down`]).
    down: Down,
}

/// The hosts below a fat-tree switch are `lo..lo + span`; host `d` among them is reached by down
/// port `(d - lo) / unit`, or `(d - lo) >> shift` when `unit` is 0 (k/2 a power of two), and
/// every other host by the up-going group. A route is then a subtraction, a compare
/// and a shift, where working out the host's ToR and pod on every hop cost about 20 instructions.
#[derive(Clone, Copy, Debug, Default)]
struct Down {
    lo: u32,
    span: u32,
    shift: u32,
    unit: u32,
}

#[derive(Clone, Debug)]
pub struct LinkSpec {
    pub rate: BitsPerSec,
    pub latency: SimTime,
    pub from: NodeId,
    pub to: NodeId,
}

/// A built topology: its switches and the spec of every egress port's link.
#[derive(Clone, Debug)]
pub struct Topology {
    pub shape: Shape,
    pub hosts: u32,
    pub switches: Vec<SwitchInfo>,
    pub links: Vec<LinkSpec>,
    pub host_rate: BitsPerSec,
}

/// The shortest path between two hosts, for lower bounds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathProfile {
    /// Rates of the links in path order (the first is the sender's NIC).
    pub rates: Vec<BitsPerSec>,
    /// Total propagation (and switch) latency.
    pub latency: SimTime,
}

impl PathProfile {
    /// Time for a lone packet of `wire_bytes` to cross the idle path (store and forward).
    pub fn packet_time(&self, wire_bytes: u64) -> SimTime {
        self.rates
            .iter()
            .fold(self.latency, |t, r| t + r.serialization(wire_bytes))
    }
}

/// Physical parameters shared by the constructors.
#[derive(Clone, Copy, Debug)]
pub struct LinkParams {
    pub rate: BitsPerSec,
    pub latency: SimTime,
    pub switch_latency: SimTime,
}

/// The unit tests' links: 100 Gb/s, 1 us, no switch latency (round numbers for hand checks).
#[cfg(test)]
pub(crate) const TEST_LINKS: LinkParams = LinkParams {
    rate: BitsPerSec(100_000_000_000),
    latency: SimTime(1_000_000),
    switch_latency: SimTime::ZERO,
};

impl Topology {
    /// A k-ary fat-tree; `k` must be even and at least 2.
    pub fn fat_tree(k: u32, p: LinkParams) -> Topology {
        assert!(k >= 2 && k.is_multiple_of(2), "fat-tree k must be even");
        let h = k / 2;
        let hosts = k * k * k / 4;
        let tors = k * h;
        let aggs = k * h;
        let cores = h * h;
        let mut t = Topology::start(Shape::FatTree { k }, hosts, p);
        let tor = |i: u32| SwitchId(i);
        let agg = |i: u32| SwitchId(tors + i);
        let core = |i: u32| SwitchId(tors + aggs + i);
        let sw = NodeId::Switch;
        for host in 0..hosts {
            t.push_link(p, NodeId::Host(HostId(host)), sw(tor(host / h)));
        }
        // Each switch's ports: down first, then up (routing relies on this order).
        for i in 0..tors {
            let pod = i / h;
            let down = (0..h).map(|d| NodeId::Host(HostId(i * h + d)));
            let up = (0..h).map(|u| sw(agg(pod * h + u)));
            t.push_switch(p, Tier::Tor, i, down.chain(up));
        }
        for i in 0..aggs {
            let (pod, pos) = (i / h, i % h);
            let down = (0..h).map(|d| sw(tor(pod * h + d)));
            let up = (0..h).map(|u| sw(core(pos * h + u)));
            t.push_switch(p, Tier::Agg, i, down.chain(up));
        }
        for i in 0..cores {
            let pos = i / h;
            let down = (0..k).map(|pod| sw(agg(pod * h + pos)));
            t.push_switch(p, Tier::Core, i, down);
        }
        // Below a ToR: its h hosts, one port each; an aggregation switch: its pod's h * h
        // hosts, h per port; a core: every host, a pod's worth per port.
        let pow2 = h.is_power_of_two();
        let sh = h.trailing_zeros();
        for s in &mut t.switches {
            let (lo, span, per) = match s.tier {
                Tier::Tor => (s.index * h, h, 0),
                Tier::Agg => ((s.index / h) * h * h, h * h, 1),
                Tier::Core => (0, hosts, 2),
            };
            s.down = Down {
                lo,
                span,
                shift: per * sh,
                unit: if pow2 { 0 } else { h.pow(per) },
            };
        }
        t
    }

    /// A leaf-spine fabric. Leaf-spine links run at `uplink_rate`.
    pub fn leaf_spine(
        hosts_per_leaf: u32,
        leaves: u32,
        spines: u32,
        p: LinkParams,
        uplink_rate: BitsPerSec,
    ) -> Topology {
        let hosts = hosts_per_leaf * leaves;
        let shape = Shape::LeafSpine {
            hosts_per_leaf,
            leaves,
            spines,
        };
        let mut t = Topology::start(shape, hosts, p);
        let up = LinkParams {
            rate: uplink_rate,
            ..p
        };
        let leaf = SwitchId;
        let spine = |i: u32| SwitchId(leaves + i);
        for host in 0..hosts {
            t.push_link(
                p,
                NodeId::Host(HostId(host)),
                NodeId::Switch(leaf(host / hosts_per_leaf)),
            );
        }
        for l in 0..leaves {
            let down =
                (0..hosts_per_leaf).map(|d| (p, NodeId::Host(HostId(l * hosts_per_leaf + d))));
            let spines = (0..spines).map(|s| (up, NodeId::Switch(spine(s))));
            t.push_switch_links(Tier::Tor, l, down.chain(spines));
        }
        for s in 0..spines {
            let down = (0..leaves).map(|l| NodeId::Switch(leaf(l)));
            t.push_switch(up, Tier::Agg, s, down);
        }
        t
    }

    fn start(shape: Shape, hosts: u32, p: LinkParams) -> Topology {
        Topology {
            shape,
            hosts,
            switches: Vec::new(),
            links: Vec::new(),
            host_rate: p.rate,
        }
    }

    /// Switch `index` of `tier`, its ports' links (all with `p`) to `peers` in order.
    fn push_switch(
        &mut self,
        p: LinkParams,
        tier: Tier,
        index: u32,
        peers: impl Iterator<Item = NodeId>,
    ) {
        self.push_switch_links(tier, index, peers.map(|to| (p, to)));
    }

    /// As [`Topology::push_switch`], each link with its own parameters.
    fn push_switch_links(
        &mut self,
        tier: Tier,
        index: u32,
        links: impl Iterator<Item = (LinkParams, NodeId)>,
    ) {
        self.begin_switch(tier, index);
        let me = NodeId::Switch(SwitchId(self.switches.len() as u32 - 1));
        for (p, to) in links {
            self.push_link(p, me, to);
        }
    }

    fn begin_switch(&mut self, tier: Tier, index: u32) {
        self.switches.push(SwitchInfo {
            tier,
            index,
            port_base: self.links.len() as u32,
            ports: 0,
            down: Down::default(),
        });
    }

    fn push_link(&mut self, p: LinkParams, from: NodeId, to: NodeId) {
        let latency = match to {
            NodeId::Switch(_) => p.latency + p.switch_latency,
            NodeId::Host(_) => p.latency,
        };
        self.links.push(LinkSpec {
            rate: p.rate,
            latency,
            from,
            to,
        });
        if let NodeId::Switch(_) = from {
            self.switches.last_mut().expect("switch begun").ports += 1;
        }
    }

    pub fn host_uplink(&self, h: HostId) -> PortId {
        PortId(h.0)
    }

    /// The next hop(s) at switch `sw` toward host `dst`.
    #[inline]
    pub fn route(&self, sw: SwitchId, dst: HostId) -> Route {
        let s = &self.switches[sw.idx()];
        let base = s.port_base;
        match self.shape {
            Shape::FatTree { k } => {
                let d = s.down;
                let off = dst.0.wrapping_sub(d.lo);
                if off < d.span {
                    // Division is slow on the per-hop path: every power-of-two k shifts.
                    let port = off.checked_div(d.unit).unwrap_or(off >> d.shift);
                    Route::Port(PortId(base + port))
                } else {
                    // Only ToRs and aggregation switches go up (a core's span is every host).
                    Route::Group {
                        first: PortId(base + k / 2),
                        n: k / 2,
                    }
                }
            }
            Shape::LeafSpine {
                hosts_per_leaf,
                spines,
                ..
            } => match s.tier {
                Tier::Tor => {
                    if dst.0 / hosts_per_leaf == s.index {
                        Route::Port(PortId(base + dst.0 % hosts_per_leaf))
                    } else {
                        Route::Group {
                            first: PortId(base + hosts_per_leaf),
                            n: spines,
                        }
                    }
                }
                _ => Route::Port(PortId(base + dst.0 / hosts_per_leaf)),
            },
        }
    }

    /// The shortest path from `src` to `dst`.
    pub fn path(&self, src: HostId, dst: HostId) -> PathProfile {
        // Walk the routes, always taking a group's first port: every up-down path has the same
        // length and the same rates in these shapes.
        let mut rates = Vec::with_capacity(6);
        let mut latency = SimTime::ZERO;
        let mut link = &self.links[self.host_uplink(src).idx()];
        loop {
            rates.push(link.rate);
            latency = latency + link.latency;
            match link.to {
                NodeId::Host(h) => {
                    debug_assert_eq!(h, dst);
                    break;
                }
                NodeId::Switch(sw) => {
                    let port = match self.route(sw, dst) {
                        Route::Port(p) => p,
                        Route::Group { first, .. } => first,
                    };
                    link = &self.links[port.idx()];
                }
            }
        }
        PathProfile { rates, latency }
    }

    pub fn node_name(&self, n: NodeId) -> String {
        match n {
            NodeId::Host(h) => format!("host:{}", h.0),
            NodeId::Switch(s) => {
                let info = &self.switches[s.idx()];
                let tier = match (self.shape, info.tier) {
                    (Shape::LeafSpine { .. }, Tier::Tor) => "leaf",
                    (Shape::LeafSpine { .. }, _) => "spine",
                    (_, t) => t.name(),
                };
                format!("{tier}:{}", info.index)
            }
        }
    }

    /// The name of the link driven by `port`, e.g. `tor:3-agg:1`.
    pub fn link_name(&self, port: PortId) -> String {
        let l = &self.links[port.idx()];
        format!("{}-{}", self.node_name(l.from), self.node_name(l.to))
    }

    pub fn switch_ports(&self) -> std::ops::Range<usize> {
        self.hosts as usize..self.links.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params() -> LinkParams {
        TEST_LINKS
    }

    /// Fat-tree routing as the tiers define it: a ToR reaches its own hosts directly, an
    /// aggregation switch its pod's ToRs, a core every pod; anything else goes up.
    fn fat_tree_route_by_definition(k: u32, s: &SwitchInfo, dst: u32) -> Route {
        let h = k / 2;
        let (tor, in_tor, pod) = (dst / h, dst % h, dst / (h * h));
        let up = Route::Group {
            first: PortId(s.port_base + h),
            n: h,
        };
        match s.tier {
            Tier::Tor if tor == s.index => Route::Port(PortId(s.port_base + in_tor)),
            Tier::Agg if pod == s.index / h => Route::Port(PortId(s.port_base + tor - pod * h)),
            Tier::Core => Route::Port(PortId(s.port_base + pod)),
            _ => up,
        }
    }

    #[test]
    fn fat_tree_routes_match_the_tiers_definition() {
        // Powers of two (shifts) and not (divisions).
        for k in [2, 4, 6, 8, 10, 12, 16] {
            let t = Topology::fat_tree(k, params());
            for (i, s) in t.switches.iter().enumerate() {
                for dst in 0..t.hosts {
                    assert_eq!(
                        t.route(SwitchId(i as u32), HostId(dst)),
                        fat_tree_route_by_definition(k, s, dst),
                        "k={k} switch {i} dst {dst}"
                    );
                }
            }
        }
    }

    #[test]
    fn fat_tree_counts() {
        let t = Topology::fat_tree(8, params());
        assert_eq!(t.hosts, 128);
        assert_eq!(t.switches.len(), 32 + 32 + 16);
        // Every switch has k ports; hosts one each.
        assert_eq!(t.links.len(), 128 + 80 * 8);
        assert!(t.switches.iter().all(|s| s.ports == 8));
    }

    #[test]
    fn fat_tree_paths_have_expected_lengths() {
        let t = Topology::fat_tree(4, params());
        assert_eq!(t.path(HostId(0), HostId(1)).rates.len(), 2); // same ToR
        assert_eq!(t.path(HostId(0), HostId(2)).rates.len(), 4); // same pod
        assert_eq!(t.path(HostId(0), HostId(15)).rates.len(), 6); // across pods
        assert_eq!(
            t.path(HostId(0), HostId(15)).latency,
            SimTime::from_ns(6000)
        );
    }

    #[test]
    fn every_route_reaches_its_destination_by_any_choice() {
        for t in [
            Topology::fat_tree(4, params()),
            Topology::leaf_spine(4, 3, 2, params(), params().rate),
        ] {
            for src in 0..t.hosts {
                for dst in 0..t.hosts {
                    if src == dst {
                        continue;
                    }
                    // Follow the group member `src + dst + depth` to cover varied choices.
                    let mut link = &t.links[src as usize];
                    let mut hops = 0;
                    while let NodeId::Switch(sw) = link.to {
                        let p = match t.route(sw, HostId(dst)) {
                            Route::Port(p) => p,
                            Route::Group { first, n } => PortId(first.0 + (src + dst + hops) % n),
                        };
                        assert_eq!(t.links[p.idx()].from, NodeId::Switch(sw));
                        link = &t.links[p.idx()];
                        hops += 1;
                        assert!(hops <= 6);
                    }
                    assert_eq!(link.to, NodeId::Host(HostId(dst)));
                }
            }
        }
    }

    #[test]
    fn link_names() {
        let t = Topology::fat_tree(4, params());
        let tor_base = t.switches[3].port_base;
        assert_eq!(t.link_name(PortId(tor_base + 2)), "tor:3-agg:2");
        assert_eq!(t.link_name(PortId(0)), "host:0-tor:0");
    }
}
