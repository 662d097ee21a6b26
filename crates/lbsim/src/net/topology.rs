//! The fabric as data: a layered link graph (hosts, switches in tiers, one egress port per end of
//! each cable) and everything derived from it that the other layers ask for: a host's attachment
//! and its group at each tier, each switch's next hops toward a destination, path counts for
//! host-decided paths, each port's tier, the cuts the bound and failure-aware rates need, and a
//! partition of the switches for the parallel engine. No layer above `net` does fabric
//! arithmetic; generators (`clos.rs`) and imports only produce the graph.
//!
//! Routing is valley-free up-down, computed from the graph once ([`Builder::finish`]): a packet
//! climbs until it meets a switch with its destination below, then descends. Ports are laid out
//! so that every next-hop group is a contiguous run of a switch's ports (down ports first, up
//! ports after), so a load-balancing decision sees its candidates as one slice. A switch whose
//! hosts below split evenly over its down ports routes by arithmetic on the destination's
//! index (a subtraction, a compare and a shift); any other by a table over the hosts below it.
//!
//! Port numbering: the hosts' ports come first, host by host (on the usual fabrics one each:
//! port h is host h's uplink); then each switch's ports follow in switch order (switches
//! lowest tier first, scale-up switches last).
//!
//! A host may have several ports: network uplinks (a dual-ToR NIC, a port per plane), which are
//! a next-hop group like a switch's, and links to scale-up switches (NVSwitches), which carry
//! traffic between the hosts of one scale-up domain (the GPUs of a server). Scale-up switches
//! sit outside the tiers: no group, cut or tier counts them.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::ids::{HostId, NodeId, PortId, SwitchId};
use crate::time::{BitsPerSec, SimTime};

/// Where a switch forwards a packet for a destination.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Route {
    /// Exactly one port leads toward the destination.
    Port(PortId),
    /// Any of `n` consecutive ports starting at `first` (a next-hop group).
    Group { first: PortId, n: u32 },
}

#[derive(Clone, Debug)]
pub struct SwitchInfo {
    /// 0 for the switches hosts attach to, one more per tier above.
    pub tier: u8,
    /// Index within its tier (the number in its name, e.g. `agg:5`).
    pub index: u32,
    pub port_base: u32,
    pub ports: u32,
    down: Down,
    /// The up-going group: ports `port_base + up_first ..` (`up_n` of them; none at the top).
    up_first: u32,
    up_n: u32,
}

/// How a switch reaches the hosts below it, `lo..lo + span`.
///
/// Even: host `d` among them leaves by down port `(d - lo) / unit`, or `(d - lo) >> shift` when
/// `unit` is 0 (a power of two). Table (`table` is not `NO_TABLE`): entry `d - lo` of the
/// topology's flat down table packs the group's first down port (high 16 bits) and its size
/// (low 16; 0: not below, go up).
#[derive(Clone, Copy, Debug, Default)]
struct Down {
    lo: u32,
    span: u32,
    shift: u32,
    unit: u32,
    table: u32,
}

const NO_TABLE: u32 = u32::MAX;

/// The tier of scale-up switches (NVSwitches): outside the Clos tiers.
pub const SCALE_UP: u8 = u8::MAX;

/// Hosts with more than one port: each host's ports, network uplinks first, then scale-up.
#[derive(Clone, Debug)]
struct HostPorts {
    /// Host h's ports are `base[h]..base[h + 1]`.
    base: Vec<u32>,
    /// How many of them are network uplinks.
    net: Vec<u16>,
    /// Each host's scale-up domain (`NO_DOMAIN`: none).
    domain: Vec<u32>,
}

const NO_DOMAIN: u32 = u32::MAX;

#[derive(Clone, Debug)]
pub struct LinkSpec {
    pub rate: BitsPerSec,
    pub latency: SimTime,
    pub from: NodeId,
    pub to: NodeId,
}

/// Which group at one tier each host belongs to (the hosts below one switch of that tier, or
/// below all the switches of that tier with the same hosts below).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GroupMap {
    /// Groups are consecutive runs of this many hosts.
    Div(u32),
    /// Group of each host.
    Table(Arc<[u32]>),
}

impl GroupMap {
    #[inline]
    pub fn of(&self, h: HostId) -> u32 {
        match self {
            GroupMap::Div(n) => h.0 / n,
            GroupMap::Table(t) => t[h.idx()],
        }
    }
}

/// One tier as `lbsim topology` prints it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct TierSummary {
    pub name: &'static str,
    pub switches: u32,
    /// Least and most down ports (and up ports) of a switch of the tier.
    pub down: (u32, u32),
    pub up: (u32, u32),
    /// Total capacity of the tier's down and up links.
    pub down_bps: u128,
    pub up_bps: u128,
    /// Paths between two hosts whose lowest common tier is this one (None: no such pair).
    pub paths: Option<u64>,
}

/// The fabric as a run's `fabric.json` records it (what `lbsim topology` prints), for reports.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct FabricSummary {
    pub label: String,
    pub hosts: u32,
    pub switches: u32,
    /// Egress ports (one per direction of each cable).
    pub links: u32,
    pub host_gbps: f64,
    /// Least and most uplinks of a host, and of scale-up links.
    pub host_uplinks: (u32, u32),
    pub scale_up_links: (u32, u32),
    /// Scale-up domains and switches (zero: none).
    pub scale_up_domains: u32,
    pub scale_up_switches: u32,
    /// Tiers, lowest first.
    pub tiers: Vec<TierSummary>,
    pub bisection_gbps: f64,
}

/// A cut of the fabric the bound and failure-aware rates treat as one server: the links out of
/// one group at one tier (`up`) or into it (not `up`), or a host's own link up or down (tier
/// `None`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Cut {
    pub tier: Option<u8>,
    pub up: bool,
    pub index: u32,
}

/// A built topology: its switches, the spec of every egress port's link, and what routing and
/// the other layers derive from them.
#[derive(Clone, Debug)]
pub struct Topology {
    pub hosts: u32,
    pub switches: Vec<SwitchInfo>,
    pub links: Vec<LinkSpec>,
    pub host_rate: BitsPerSec,
    /// How `describe` names the fabric (e.g. `fat_tree k=8`).
    label: String,
    /// Tier names, lowest first (`tor`, `agg`, `core`; `leaf`, `spine`).
    tier_names: Vec<&'static str>,
    /// Port tiers in path order (`host_up`, `tor_up`, ..., `tor_down`).
    port_tiers: Vec<String>,
    down_table: Vec<u32>,
    /// Per tier: each host's group, and how many groups.
    groups: Vec<(GroupMap, u32)>,
    /// Per tier: the number of up ports every switch of the tier has, if they agree.
    up_degree: Vec<Option<u32>>,
    /// Every down group has one port, and every host one uplink (so a path is named by its
    /// switches' up choices alone).
    single_down: bool,
    /// Per (tier, up) cut kind below the top: for each group, a range of `cut_ports`.
    cut_index: Vec<Vec<(u32, u32)>>,
    cut_ports: Vec<u32>,
    /// Per (tier, up) cut kind: each group's cut capacity, and the capacity of its hosts' links.
    cut_bps: Vec<Vec<u64>>,
    group_bps: Vec<Vec<u64>>,
    /// htsim's fat-tree numbering of aggregation uplinks (k/2), where it applies.
    htsim_fat_tree: Option<u32>,
    /// Hosts with several ports or scale-up links (None: one uplink each, port h).
    host_ports: Option<Box<HostPorts>>,
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

/// Physical parameters of a link.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LinkParams {
    pub rate: BitsPerSec,
    pub latency: SimTime,
    /// Added to every hop into a switch.
    pub switch_latency: SimTime,
}

/// The unit tests' links: 100 Gb/s, 1 us, no switch latency (round numbers for hand checks).
#[cfg(test)]
pub(crate) const TEST_LINKS: LinkParams = LinkParams {
    rate: BitsPerSec(100_000_000_000),
    latency: SimTime(1_000_000),
    switch_latency: SimTime::ZERO,
};

/// A fabric as a generator or an import emits it: hosts (one uplink each, ports `0..hosts`),
/// then switches in order, lowest tier first, each with its ports' links, down ports first.
pub struct Builder {
    t: Topology,
}

impl Builder {
    pub fn new(hosts: u32, host_rate: BitsPerSec, tier_names: &[&'static str]) -> Builder {
        Builder {
            t: Topology {
                hosts,
                switches: Vec::new(),
                links: Vec::new(),
                host_rate,
                label: String::new(),
                tier_names: tier_names.to_vec(),
                port_tiers: Vec::new(),
                down_table: Vec::new(),
                groups: Vec::new(),
                up_degree: Vec::new(),
                single_down: true,
                cut_index: Vec::new(),
                cut_ports: Vec::new(),
                cut_bps: Vec::new(),
                group_bps: Vec::new(),
                htsim_fat_tree: None,
                host_ports: None,
            },
        }
    }

    pub fn label(&mut self, label: String) {
        self.t.label = label;
    }

    /// The next link; a switch's links follow its [`Builder::switch`].
    pub fn link(&mut self, p: LinkParams, from: NodeId, to: NodeId) {
        let latency = match to {
            NodeId::Switch(_) => p.latency + p.switch_latency,
            NodeId::Host(_) => p.latency,
        };
        self.t.links.push(LinkSpec {
            rate: p.rate,
            latency,
            from,
            to,
        });
        if let NodeId::Switch(_) = from {
            self.t.switches.last_mut().expect("switch begun").ports += 1;
        }
    }

    /// Begins switch `index` of `tier`; its links follow.
    pub fn switch(&mut self, tier: u8, index: u32) -> SwitchId {
        self.t.switches.push(SwitchInfo {
            tier,
            index,
            port_base: self.t.links.len() as u32,
            ports: 0,
            down: Down::default(),
            up_first: 0,
            up_n: 0,
        });
        SwitchId(self.t.switches.len() as u32 - 1)
    }

    /// Checks the graph and computes routing and everything derived from it. The error names
    /// the node or link at fault.
    pub fn finish(mut self) -> Result<Topology, String> {
        let t = &mut self.t;
        let tiers = t
            .switches
            .iter()
            .filter(|s| s.tier != SCALE_UP)
            .map(|s| s.tier as usize + 1)
            .max()
            .unwrap_or(0);
        if tiers == 0 || t.tier_names.len() < tiers {
            return Err("a fabric needs switches, and a name for each tier".into());
        }
        // Every link's ends exist, every host link comes first (one a host), every other link
        // belongs to a switch, and every cable runs both ways.
        let n_sw = t.switches.len();
        let exists = |n: NodeId| match n {
            NodeId::Host(h) => h.0 < t.hosts,
            NodeId::Switch(s) => s.idx() < n_sw,
        };
        if let Some(l) = t.links.iter().find(|l| !exists(l.from) || !exists(l.to)) {
            return Err(format!(
                "a link from {:?} to {:?}: no such node",
                l.from, l.to
            ));
        }
        let switch_ports: u64 = t.switches.iter().map(|s| s.ports as u64).sum();
        let host_links = t.links.len() as u64 - switch_ports.min(t.links.len() as u64);
        if t.links[host_links as usize..]
            .iter()
            .any(|l| matches!(l.from, NodeId::Host(_)))
        {
            return Err("every host's links come before every switch's".into());
        }
        type End = (u8, u32);
        let key = |n: NodeId| match n {
            NodeId::Host(h) => (0u8, h.0),
            NodeId::Switch(s) => (1u8, s.0),
        };
        // Per pair of ends (lower first): links one way less links the other.
        let mut ends: BTreeMap<(End, End), (i64, NodeId, NodeId)> = BTreeMap::new();
        for l in &t.links {
            let (a, b) = (key(l.from), key(l.to));
            let (k, dir) = if a < b { ((a, b), 1) } else { ((b, a), -1) };
            ends.entry(k).or_insert((0, l.from, l.to)).0 += dir;
        }
        if let Some((_, a, b)) = ends.values().find(|e| e.0 != 0) {
            return Err(format!(
                "the links between {} and {} do not run both ways",
                t.node_name(*a),
                t.node_name(*b)
            ));
        }
        if let Some(i) = t.switches.iter().position(|s| s.ports == 0) {
            return Err(format!(
                "{} has no links",
                t.node_name(NodeId::Switch(SwitchId(i as u32)))
            ));
        }
        // Host by host: one or more network links (to first-tier switches), then any to
        // scale-up switches.
        let mut base = Vec::with_capacity(t.hosts as usize + 1);
        let mut net = Vec::with_capacity(t.hosts as usize);
        let mut p = 0usize;
        for h in 0..t.hosts {
            base.push(p as u32);
            let mine = |p: usize| {
                t.links
                    .get(p)
                    .filter(|l| l.from == NodeId::Host(HostId(h)))
                    .map(|l| match l.to {
                        NodeId::Switch(s) => t.switches[s.idx()].tier,
                        NodeId::Host(_) => SCALE_UP - 1,
                    })
            };
            let first = p;
            while mine(p) == Some(0) {
                p += 1;
            }
            let n_net = p - first;
            while mine(p) == Some(SCALE_UP) {
                p += 1;
            }
            if n_net == 0 || mine(p).is_some() || n_net >= 1 << 16 {
                return Err(format!(
                    "host:{h} must link to first-tier switches (one or more), then to any \
                     scale-up switches, its links together and in host order"
                ));
            }
            net.push(n_net as u16);
        }
        base.push(p as u32);
        if p as u64 != host_links {
            return Err("every host's links come before every switch's, in host order".into());
        }
        let multi = p as u32 != t.hosts;
        // Down ports first, up ports after, each one tier away.
        let sw_tiers: Vec<u8> = t.switches.iter().map(|s| s.tier).collect();
        let mut up_ports: Vec<(u32, u32)> = Vec::with_capacity(t.switches.len());
        for (i, s) in t.switches.iter().enumerate() {
            let mut first_up = None;
            for p in s.port_base..s.port_base + s.ports {
                let to = match t.links[p as usize].to {
                    NodeId::Host(_) => -1,
                    NodeId::Switch(x) => sw_tiers[x.idx()] as i32,
                };
                let me = s.tier as i32;
                if s.tier == SCALE_UP {
                    if to != -1 {
                        return Err(format!(
                            "link {}: a scale-up switch links to hosts only",
                            t.link_name(PortId(p))
                        ));
                    }
                } else if to == me + 1 {
                    first_up.get_or_insert(p - s.port_base);
                } else if to == me - 1 {
                    if first_up.is_some() {
                        return Err(format!(
                            "{}: down ports must come before up ports",
                            t.node_name(NodeId::Switch(SwitchId(i as u32)))
                        ));
                    }
                } else {
                    return Err(format!(
                        "link {}: links join adjacent tiers only",
                        t.link_name(PortId(p))
                    ));
                }
            }
            let f = first_up.unwrap_or(s.ports);
            up_ports.push((f, s.ports - f));
        }
        // Hosts below each switch, lowest tier first (children come before parents).
        let mut order: Vec<usize> = (0..t.switches.len()).collect();
        order.sort_by_key(|&i| t.switches[i].tier);
        let mut below: Vec<Ranges> = vec![Ranges::default(); t.switches.len()];
        for &i in &order {
            let s = &t.switches[i];
            let mut r = Vec::new();
            for p in s.port_base..s.port_base + up_ports[i].0 {
                match t.links[p as usize].to {
                    NodeId::Host(h) => r.push((h.0, h.0 + 1)),
                    NodeId::Switch(c) => r.extend_from_slice(&below[c.idx()].0),
                }
            }
            below[i] = Ranges::merged(r);
        }
        // Up groups: every up neighbour must have the same hosts below (then every up port is as
        // good as any for a destination not below), and the top tier must reach every host.
        let all = Ranges(vec![(0, t.hosts)]);
        for (i, s) in t.switches.iter().enumerate() {
            let (f, n) = up_ports[i];
            let name = || t.node_name(NodeId::Switch(SwitchId(i as u32)));
            if n == 0 {
                if below[i] != all && s.tier != SCALE_UP {
                    return Err(format!(
                        "{}: a switch without uplinks must reach every host below it",
                        name()
                    ));
                }
                continue;
            }
            let parent = |p: u32| match t.links[(s.port_base + p) as usize].to {
                NodeId::Switch(x) => x.idx(),
                NodeId::Host(_) => unreachable!("up ports lead to switches"),
            };
            let first = parent(f);
            if (f..f + n).any(|p| below[parent(p)] != below[first]) {
                return Err(format!(
                    "{}: its uplinks lead to switches with different hosts below (not a Clos)",
                    name()
                ));
            }
        }
        let mut single_down_hosts = true;
        // A host's uplinks, like a switch's, lead to switches with the same hosts below; its
        // scale-up switches all join the same hosts (its domain), itself among them.
        let mut domains: BTreeMap<&Ranges, u32> = BTreeMap::new();
        let mut domain = vec![NO_DOMAIN; t.hosts as usize];
        for h in 0..t.hosts as usize {
            let to = |p: u32| match t.links[p as usize].to {
                NodeId::Switch(x) => x.idx(),
                NodeId::Host(_) => unreachable!("checked above"),
            };
            let (a, m, b) = (base[h], base[h] + net[h] as u32, base[h + 1]);
            if (a..m).any(|p| below[to(p)] != below[to(a)]) {
                return Err(format!(
                    "host:{h}: its uplinks lead to switches with different hosts below"
                ));
            }
            if m < b {
                let set = &below[to(m)];
                let inside = set.0.iter().any(|&(lo, hi)| (lo..hi).contains(&(h as u32)));
                if !inside || (m..b).any(|p| below[to(p)] != *set) {
                    return Err(format!(
                        "host:{h}: its scale-up switches must all join the same hosts"
                    ));
                }
                let n = domains.len() as u32;
                domain[h] = *domains.entry(set).or_insert(n);
            }
        }
        // Scale-up domains do not overlap.
        for (set, &d) in &domains {
            for &(lo, hi) in &set.0 {
                if let Some(h) = (lo..hi).find(|&h| domain[h as usize] != d) {
                    return Err(format!(
                        "host:{h} is joined to scale-up switches of another domain without \
                         being in it"
                    ));
                }
            }
        }
        if multi || !domains.is_empty() {
            // A host's choice among its uplinks is one no switch's up choice names.
            single_down_hosts = net.iter().all(|&n| n == 1);
            t.host_ports = Some(Box::new(HostPorts { base, net, domain }));
        }
        // Down routing.
        let mut table = Vec::new();
        let mut single_down = true;
        let mut downs = Vec::with_capacity(t.switches.len());
        for (i, s) in t.switches.iter().enumerate() {
            let nd = up_ports[i].0;
            let child = |p: u32| match t.links[(s.port_base + p) as usize].to {
                NodeId::Host(h) => Ranges(vec![(h.0, h.0 + 1)]),
                NodeId::Switch(c) => below[c.idx()].clone(),
            };
            let (lo, hi) = below[i].bounds();
            let even = below[i].0.len() == 1 && nd > 0 && {
                let unit = (hi - lo) / nd;
                unit * nd == hi - lo
                    && (0..nd).all(|p| child(p).0 == [(lo + p * unit, lo + (p + 1) * unit)])
            };
            let down = if even {
                let unit = (hi - lo) / nd;
                Down {
                    lo,
                    span: hi - lo,
                    shift: unit.trailing_zeros(),
                    unit: if unit.is_power_of_two() { 0 } else { unit },
                    table: NO_TABLE,
                }
            } else {
                let off = table.len();
                table.resize(off + (hi - lo) as usize, 0u32);
                for p in 0..nd {
                    for (a, b) in child(p).0 {
                        for h in a..b {
                            let e = &mut table[off + (h - lo) as usize];
                            let (first, n) = (*e >> 16, *e & 0xffff);
                            *e = if n == 0 {
                                (p << 16) | 1
                            } else if first + n == p {
                                single_down = false;
                                *e + 1
                            } else {
                                return Err(format!(
                                    "{}: its ports toward host:{h} are not consecutive",
                                    t.node_name(NodeId::Switch(SwitchId(i as u32)))
                                ));
                            };
                        }
                    }
                }
                if nd >= 1 << 16 || off > NO_TABLE as usize - 1 {
                    return Err("a switch has too many ports".into());
                }
                Down {
                    lo,
                    span: hi - lo,
                    shift: 0,
                    unit: 0,
                    table: off as u32,
                }
            };
            downs.push(down);
        }
        for (i, s) in t.switches.iter_mut().enumerate() {
            s.down = downs[i];
            (s.up_first, s.up_n) = up_ports[i];
        }
        t.down_table = table;
        t.single_down = single_down && single_down_hosts;
        // Groups per tier: the distinct host sets below the tier's switches, numbered in order of
        // their first host; a host's group at each tier is that of the switches above it.
        let mut groups = Vec::with_capacity(tiers);
        let mut switch_group = vec![0u32; t.switches.len()];
        for tier in 0..tiers as u8 {
            let mut sets: BTreeMap<&Ranges, u32> = BTreeMap::new();
            for (i, s) in t.switches.iter().enumerate() {
                if s.tier == tier {
                    sets.entry(&below[i]).or_insert(0);
                }
            }
            let mut by_first: Vec<&Ranges> = sets.keys().copied().collect();
            by_first.sort_by_key(|r| r.bounds().0);
            for (g, r) in by_first.iter().enumerate() {
                sets.insert(r, g as u32);
            }
            let mut host_group = vec![u32::MAX; t.hosts as usize];
            for (r, &g) in &sets {
                for &(a, b) in &r.0 {
                    for h in a..b {
                        if host_group[h as usize] != u32::MAX {
                            return Err(format!(
                                "host:{h} is below two different groups of {} switches",
                                t.tier_names[tier as usize]
                            ));
                        }
                        host_group[h as usize] = g;
                    }
                }
            }
            if let Some(h) = host_group.iter().position(|&g| g == u32::MAX) {
                return Err(format!(
                    "host:{h} has no {} switch above it",
                    t.tier_names[tier as usize]
                ));
            }
            for (i, s) in t.switches.iter().enumerate() {
                if s.tier == tier {
                    switch_group[i] = sets[&below[i]];
                }
            }
            let n = sets.len() as u32;
            let size = t.hosts / n;
            let map = if size * n == t.hosts
                && host_group
                    .iter()
                    .enumerate()
                    .all(|(h, &g)| g == h as u32 / size)
            {
                GroupMap::Div(size)
            } else {
                GroupMap::Table(host_group.into())
            };
            groups.push((map, n));
        }
        t.groups = groups;
        t.up_degree = (0..tiers as u8)
            .map(|tier| {
                let mut d = t.switches.iter().filter(|s| s.tier == tier).map(|s| s.up_n);
                let first = d.next()?;
                d.all(|x| x == first).then_some(first)
            })
            .collect();
        // Cuts below the top tier: a group's up cut is its switches' up ports; its down cut the
        // ports of the tier above that lead into its switches. Each kept in port order.
        let mut cut_lists: Vec<Vec<Vec<u32>>> = (0..2 * tiers.saturating_sub(1))
            .map(|k| vec![Vec::new(); t.groups[k / 2].1 as usize])
            .collect();
        for (i, s) in t.switches.iter().enumerate() {
            let tier = s.tier as usize;
            if s.tier == SCALE_UP {
                continue;
            }
            if tier + 1 < tiers {
                for p in s.port_base + s.up_first..s.port_base + s.ports {
                    cut_lists[2 * tier][switch_group[i] as usize].push(p);
                }
            }
            if tier >= 1 {
                for p in s.port_base..s.port_base + s.up_first {
                    if let NodeId::Switch(c) = t.links[p as usize].to {
                        cut_lists[2 * (tier - 1) + 1][switch_group[c.idx()] as usize].push(p);
                    }
                }
            }
        }
        t.cut_index = cut_lists
            .into_iter()
            .map(|lists| {
                lists
                    .into_iter()
                    .map(|l| {
                        let a = t.cut_ports.len() as u32;
                        t.cut_ports.extend(l);
                        (a, t.cut_ports.len() as u32)
                    })
                    .collect()
            })
            .collect();
        t.cut_bps = t
            .cut_index
            .iter()
            .map(|c| {
                c.iter()
                    .map(|&(a, b)| {
                        t.cut_ports[a as usize..b as usize]
                            .iter()
                            .fold(0u64, |x, &p| x.saturating_add(t.links[p as usize].rate.0))
                    })
                    .collect()
            })
            .collect();
        t.group_bps = (0..tiers.saturating_sub(1))
            .map(|tier| {
                let (map, n) = &t.groups[tier];
                let mut v = vec![0u64; *n as usize];
                for h in 0..t.hosts {
                    let g = map.of(HostId(h)) as usize;
                    for p in t.host_net_ports(HostId(h)) {
                        v[g] = v[g].saturating_add(t.links[p].rate.0);
                    }
                }
                v
            })
            .collect();
        // Port tiers in path order: host_up, each tier's up, the top's down, each tier's down.
        let names = &t.tier_names[..tiers];
        let mut pt = vec!["host_up".to_string()];
        pt.extend(names[..tiers - 1].iter().map(|n| format!("{n}_up")));
        pt.extend(names.iter().rev().map(|n| format!("{n}_down")));
        if t.scale_up() {
            pt.extend(["nvlink_up".to_string(), "nvlink_down".to_string()]);
        }
        t.port_tiers = pt;
        Ok(self.t)
    }
}

/// A set of hosts as sorted, disjoint, non-adjacent half-open ranges.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
struct Ranges(Vec<(u32, u32)>);

impl Ranges {
    fn merged(mut r: Vec<(u32, u32)>) -> Ranges {
        r.sort_unstable();
        let mut out: Vec<(u32, u32)> = Vec::with_capacity(r.len());
        for (a, b) in r {
            match out.last_mut() {
                Some(last) if a <= last.1 => last.1 = last.1.max(b),
                _ => out.push((a, b)),
            }
        }
        Ranges(out)
    }

    fn bounds(&self) -> (u32, u32) {
        match (self.0.first(), self.0.last()) {
            (Some(f), Some(l)) => (f.0, l.1),
            _ => (0, 0),
        }
    }
}

impl Topology {
    /// A k-ary fat-tree; `k` must be even and at least 2.
    pub fn fat_tree(k: u32, p: LinkParams) -> Topology {
        super::clos::fat_tree(k, p)
    }

    /// A leaf-spine fabric. Leaf-spine links run at `uplink_rate`.
    pub fn leaf_spine(
        hosts_per_leaf: u32,
        leaves: u32,
        spines: u32,
        p: LinkParams,
        uplink_rate: BitsPerSec,
    ) -> Topology {
        super::clos::leaf_spine(hosts_per_leaf, leaves, spines, p, uplink_rate)
    }

    pub(crate) fn set_htsim_fat_tree(&mut self, half_k: u32) {
        self.htsim_fat_tree = Some(half_k);
    }

    /// The fabric in a few words (`fat_tree k=8`, `leaf_spine 8x16 hosts, 8 spines`).
    pub fn describe(&self) -> &str {
        &self.label
    }

    /// Number of switch tiers.
    pub fn tiers(&self) -> u8 {
        self.groups.len() as u8
    }

    /// Host `h`'s first network uplink.
    pub fn host_uplink(&self, h: HostId) -> PortId {
        match &self.host_ports {
            None => PortId(h.0),
            Some(hp) => PortId(hp.base[h.idx()]),
        }
    }

    /// Host `h`'s ports: its network uplinks, then its scale-up links.
    #[inline]
    pub fn host_ports(&self, h: HostId) -> std::ops::Range<usize> {
        match &self.host_ports {
            None => h.idx()..h.idx() + 1,
            Some(hp) => hp.base[h.idx()] as usize..hp.base[h.idx() + 1] as usize,
        }
    }

    /// Host `h`'s network uplinks.
    pub fn host_net_ports(&self, h: HostId) -> std::ops::Range<usize> {
        match &self.host_ports {
            None => h.idx()..h.idx() + 1,
            Some(hp) => {
                let a = hp.base[h.idx()] as usize;
                a..a + hp.net[h.idx()] as usize
            }
        }
    }

    /// Whether every host has exactly one port (port h), as on the generated fabrics.
    pub fn single_homed(&self) -> bool {
        self.host_ports.is_none()
    }

    /// Whether the fabric has scale-up switches.
    pub fn scale_up(&self) -> bool {
        self.host_ports
            .as_ref()
            .is_some_and(|hp| hp.domain.iter().any(|&d| d != NO_DOMAIN))
    }

    /// Whether `a` and `b` share a scale-up domain (their traffic crosses it, not the network).
    #[inline]
    pub fn same_domain(&self, a: HostId, b: HostId) -> bool {
        self.host_ports.as_ref().is_some_and(|hp| {
            let d = hp.domain[a.idx()];
            d != NO_DOMAIN && d == hp.domain[b.idx()] && a != b
        })
    }

    /// The ports host `h` may send a packet for `dst` on: its scale-up links if they share a
    /// domain, else its network uplinks.
    #[inline]
    pub fn host_route(&self, h: HostId, dst: HostId) -> Route {
        let Some(hp) = &self.host_ports else {
            return Route::Port(PortId(h.0));
        };
        let (a, m, b) = (
            hp.base[h.idx()],
            hp.base[h.idx()] + hp.net[h.idx()] as u32,
            hp.base[h.idx() + 1],
        );
        let (first, n) = if self.same_domain(h, dst) {
            (m, b - m)
        } else {
            (a, m - a)
        };
        if n == 1 {
            Route::Port(PortId(first))
        } else {
            Route::Group {
                first: PortId(first),
                n,
            }
        }
    }

    /// The least and most uplinks of a host, and the least and most scale-up links.
    pub fn host_port_counts(&self) -> ((u32, u32), (u32, u32)) {
        let mut up = (u32::MAX, 0);
        let mut scale = (u32::MAX, 0);
        for h in 0..self.hosts {
            let n = self.host_net_ports(HostId(h)).len() as u32;
            let m = self.host_ports(HostId(h)).len() as u32 - n;
            up = (up.0.min(n), up.1.max(n));
            scale = (scale.0.min(m), scale.1.max(m));
        }
        (up, scale)
    }

    /// The servers: runs of consecutive hosts in one scale-up domain, in host order (a host in
    /// none is a run of its own). Err: the fabric has no scale-up switches, so no servers.
    pub fn domain_runs(&self) -> Result<Vec<std::ops::Range<u32>>, String> {
        let Some(hp) = self.host_ports.as_ref().filter(|_| self.scale_up()) else {
            return Err(
                "needs servers: a fabric with NVLink domains (kind \"ai\" or a SimAI file)"
                    .to_string(),
            );
        };
        let mut runs: Vec<std::ops::Range<u32>> = Vec::new();
        for h in 0..self.hosts {
            match runs.last_mut() {
                Some(r)
                    if hp.domain[h as usize] != NO_DOMAIN
                        && hp.domain[h as usize] == hp.domain[r.start as usize] =>
                {
                    r.end = h + 1
                }
                _ => runs.push(h..h + 1),
            }
        }
        Ok(runs)
    }

    /// Scale-up domains and scale-up switches (None: the fabric has none).
    pub fn scale_up_summary(&self) -> Option<(u32, u32)> {
        let hp = self.host_ports.as_ref().filter(|_| self.scale_up())?;
        let domains = hp.domain.iter().filter(|&&d| d != NO_DOMAIN).max()? + 1;
        let switches = self.switches.iter().filter(|s| s.tier == SCALE_UP).count();
        Some((domains, switches as u32))
    }

    /// The host whose port `port` is, if a host's.
    pub fn port_host(&self, port: PortId) -> Option<HostId> {
        match self.links.get(port.idx())?.from {
            NodeId::Host(h) => Some(h),
            NodeId::Switch(_) => None,
        }
    }

    /// The switch host `h`'s first uplink attaches to.
    #[inline]
    pub fn leaf_of(&self, h: HostId) -> SwitchId {
        match self.links[self.host_uplink(h).idx()].to {
            NodeId::Switch(s) => s,
            NodeId::Host(_) => unreachable!("a host's link leads to a switch"),
        }
    }

    /// The port of `h`'s first leaf that leads down to it.
    pub fn host_downlink(&self, h: HostId) -> PortId {
        self.reverse(self.host_uplink(h))
    }

    /// Host `h`'s group at `tier` (tier 0: the hosts under its leaf).
    #[inline]
    pub fn group(&self, tier: u8, h: HostId) -> u32 {
        self.groups[tier as usize].0.of(h)
    }

    /// The host-to-group map at `tier` and the number of groups.
    pub fn groups(&self, tier: u8) -> (&GroupMap, u32) {
        // A scale-up switch (outside the tiers) has one route per host: the top's groups do.
        let (m, n) = &self.groups[(tier as usize).min(self.groups.len() - 1)];
        (m, *n)
    }

    /// The lowest tier at which `a` and `b` share a group (0: one leaf).
    pub fn common_tier(&self, a: HostId, b: HostId) -> u8 {
        (0..self.tiers())
            .find(|&t| self.group(t, a) == self.group(t, b))
            .expect("the top tier holds every host")
    }

    /// The hosts of each leaf group, each list in host order.
    pub fn leaf_hosts(&self) -> Vec<Vec<HostId>> {
        let (m, n) = self.groups(0);
        let mut out = vec![Vec::new(); n as usize];
        for h in 0..self.hosts {
            out[m.of(HostId(h)) as usize].push(HostId(h));
        }
        out
    }

    /// Whether `dst` is below switch `s` (it routes down toward it).
    #[inline]
    pub fn is_below(&self, s: SwitchId, dst: HostId) -> bool {
        let d = &self.switches[s.idx()].down;
        let off = dst.0.wrapping_sub(d.lo);
        off < d.span && (d.table == NO_TABLE || self.down_table[(d.table + off) as usize] != 0)
    }

    /// The next hop(s) at switch `sw` toward host `dst`.
    #[inline]
    pub fn route(&self, sw: SwitchId, dst: HostId) -> Route {
        let s = &self.switches[sw.idx()];
        let base = s.port_base;
        let d = s.down;
        let off = dst.0.wrapping_sub(d.lo);
        if off < d.span {
            if d.table == NO_TABLE {
                // Division is slow on the per-hop path: every power-of-two unit shifts.
                let port = off.checked_div(d.unit).unwrap_or(off >> d.shift);
                return Route::Port(PortId(base + port));
            }
            let e = self.down_table[(d.table + off) as usize];
            match e & 0xffff {
                0 => {}
                1 => return Route::Port(PortId(base + (e >> 16))),
                n => {
                    return Route::Group {
                        first: PortId(base + (e >> 16)),
                        n,
                    }
                }
            }
        }
        Route::Group {
            first: PortId(base + s.up_first),
            n: s.up_n,
        }
    }

    /// Number of distinct up-down paths from `src` to `dst`, when a path is named by its up
    /// choices alone and every switch of a tier has as many uplinks (None otherwise).
    pub fn path_count(&self, src: HostId, dst: HostId) -> Option<u32> {
        let top = self.common_tier(src, dst);
        (0..top).try_fold(1u32, |n, t| {
            n.checked_mul(self.up_degree[t as usize].filter(|_| self.single_down)?)
        })
    }

    /// What a path index is divided by to give the uplink chosen at a switch of `tier` (the
    /// product of the up degrees below it), when [`Topology::path_count`] applies.
    pub fn path_digit(&self, tier: u8) -> Option<u32> {
        (0..tier.min(self.tiers())).try_fold(1u32, |n, t| {
            n.checked_mul(self.up_degree[t as usize].filter(|_| self.single_down)?)
        })
    }

    /// Whether host-decided paths ([`Topology::path_count`]) are defined on this fabric.
    pub fn paths_named_by_up_choices(&self) -> bool {
        self.single_down && self.up_degree.iter().all(Option::is_some)
    }

    /// The cuts a flow from `src` to `dst` crosses, in order: its host's link up, its
    /// destination's link down, then for each tier it leaves, its source group's up cut and its
    /// destination group's down cut.
    pub fn cuts(&self, src: HostId, dst: HostId) -> impl Iterator<Item = Cut> + '_ {
        // Within a scale-up domain: the source's scale-up links and the destination's.
        let host_tier = self.same_domain(src, dst).then_some(SCALE_UP);
        let host = [
            Cut {
                tier: host_tier,
                up: true,
                index: src.0,
            },
            Cut {
                tier: host_tier,
                up: false,
                index: dst.0,
            },
        ];
        let tiers = if host_tier.is_some() {
            0
        } else {
            self.tiers().saturating_sub(1)
        };
        host.into_iter().chain((0..tiers).flat_map(move |t| {
            let (a, b) = (self.group(t, src), self.group(t, dst));
            let both = [
                Cut {
                    tier: Some(t),
                    up: true,
                    index: a,
                },
                Cut {
                    tier: Some(t),
                    up: false,
                    index: b,
                },
            ];
            both.into_iter().filter(move |_| a != b)
        }))
    }

    /// The ports of a cut, in port order.
    pub fn cut_ports(&self, c: Cut) -> impl Iterator<Item = PortId> + '_ {
        let (own, many): (std::ops::Range<usize>, &[u32]) = match c.tier {
            None => (self.host_net_ports(HostId(c.index)), &[]),
            Some(SCALE_UP) => {
                let h = HostId(c.index);
                (self.host_net_ports(h).end..self.host_ports(h).end, &[])
            }
            Some(t) => {
                let (a, b) = self.cut_index[2 * t as usize + !c.up as usize][c.index as usize];
                (0..0, &self.cut_ports[a as usize..b as usize])
            }
        };
        // A host's cut down: the ports that lead into it, one per cable of the cut up.
        let up = c.up;
        own.map(move |p| {
            let p = PortId(p as u32);
            if up {
                p
            } else {
                self.reverse(p)
            }
        })
        .chain(many.iter().map(|&p| PortId(p)))
    }

    /// The summed rate of a cut's links (at least 1 b/s).
    pub fn cut_rate(&self, c: Cut) -> BitsPerSec {
        let bps = match c.tier {
            None if self.host_ports.is_none() && c.up => self.links[c.index as usize].rate.0,
            None | Some(SCALE_UP) => self
                .cut_ports(c)
                .fold(0u64, |x, p| x.saturating_add(self.links[p.idx()].rate.0)),
            Some(t) => self.cut_bps[2 * t as usize + !c.up as usize][c.index as usize],
        };
        BitsPerSec(bps.max(1))
    }

    /// Whether a group's cut carries less than its hosts' links (a tapered tier).
    pub fn tapered(&self, c: Cut) -> bool {
        match c.tier {
            None | Some(SCALE_UP) => false,
            Some(t) => {
                self.cut_bps[2 * t as usize + !c.up as usize][c.index as usize]
                    < self.group_bps[t as usize][c.index as usize]
            }
        }
    }

    /// A partition of the fabric into `groups` blocks for the parallel engine: the groups of
    /// the tier below the top (pods of a fat-tree, leaves of a leaf-spine), each host and each
    /// switch below the top in its group's block; top-tier switches are shared out by index.
    /// Returns the number of groups, and each host's and each switch's group (None: top tier).
    /// Groups that a scale-up domain spans (a server's GPUs on several rail leaves) are one:
    /// its links are far shorter than a window, so cutting them would stop the run from being
    /// partitioned at all.
    pub fn partition_groups(&self) -> (u32, Vec<u32>, Vec<Option<u32>>) {
        let t = self.tiers().saturating_sub(2);
        let (map, n) = self.groups(t);
        let mut of: Vec<u32> = (0..n).collect();
        if let Some(hp) = self.host_ports.as_ref().filter(|_| self.scale_up()) {
            fn root(of: &mut [u32], mut g: u32) -> u32 {
                while of[g as usize] != g {
                    of[g as usize] = of[of[g as usize] as usize];
                    g = of[g as usize];
                }
                g
            }
            // Each domain's first host's group, then every other host's joined to it.
            let mut first: BTreeMap<u32, u32> = BTreeMap::new();
            for h in 0..self.hosts {
                let d = hp.domain[h as usize];
                if d == NO_DOMAIN {
                    continue;
                }
                let g = map.of(HostId(h));
                let f = *first.entry(d).or_insert(g);
                let (a, b) = (root(&mut of, f), root(&mut of, g));
                if a != b {
                    of[a.max(b) as usize] = a.min(b);
                }
            }
            // Merged groups renumbered in the order of their first host.
            let roots: Vec<u32> = (0..n).map(|g| root(&mut of, g)).collect();
            let mut label = vec![u32::MAX; n as usize];
            let mut next = 0;
            for h in 0..self.hosts {
                let r = roots[map.of(HostId(h)) as usize] as usize;
                if label[r] == u32::MAX {
                    label[r] = next;
                    next += 1;
                }
            }
            let of: Vec<u32> = roots.iter().map(|&r| label[r as usize]).collect();
            let host = (0..self.hosts)
                .map(|h| of[map.of(HostId(h)) as usize])
                .collect();
            let top = self.tiers() - 1;
            let switch = self
                .switches
                .iter()
                .map(|s| (s.tier != top).then(|| of[map.of(HostId(s.down.lo)) as usize]))
                .collect();
            return (next, host, switch);
        }
        let host = (0..self.hosts).map(|h| map.of(HostId(h))).collect();
        let top = self.tiers() - 1;
        let switch = self
            .switches
            .iter()
            .map(|s| (s.tier != top).then(|| map.of(HostId(s.down.lo))))
            .collect();
        (n, host, switch)
    }

    /// The shortest path from `src` to `dst`.
    pub fn path(&self, src: HostId, dst: HostId) -> PathProfile {
        // Walk the routes, always taking a group's first port: every up-down path has the same
        // length and the same rates at each tier.
        let mut rates = Vec::with_capacity(6);
        let mut latency = SimTime::ZERO;
        let first = match self.host_route(src, dst) {
            Route::Port(p) => p,
            Route::Group { first, .. } => first,
        };
        let mut link = &self.links[first.idx()];
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

    /// Number of distinct up-down paths from `src` to `dst` (every choice of every next-hop
    /// group on the way), counted over the routes.
    pub fn count_paths(&self, src: HostId, dst: HostId) -> u64 {
        fn from(t: &Topology, link: &LinkSpec, dst: HostId) -> u64 {
            match link.to {
                NodeId::Host(_) => 1,
                NodeId::Switch(s) => {
                    let (first, n) = match t.route(s, dst) {
                        Route::Port(p) => (p.0, 1),
                        Route::Group { first, n } => (first.0, n),
                    };
                    (first..first + n)
                        .map(|p| from(t, &t.links[p as usize], dst))
                        .sum()
                }
            }
        }
        let (first, n) = match self.host_route(src, dst) {
            Route::Port(p) => (p.0, 1),
            Route::Group { first, n } => (first.0, n),
        };
        (first..first + n)
            .map(|p| from(self, &self.links[p as usize], dst))
            .sum()
    }

    /// Per tier, lowest first: what `lbsim topology` prints of it.
    pub fn tier_summaries(&self) -> Vec<TierSummary> {
        (0..self.tiers())
            .map(|tier| {
                let mut s = TierSummary {
                    name: self.tier_names[tier as usize],
                    switches: 0,
                    down: (u32::MAX, 0),
                    up: (u32::MAX, 0),
                    down_bps: 0,
                    up_bps: 0,
                    paths: None,
                };
                for sw in self.switches.iter().filter(|x| x.tier == tier) {
                    s.switches += 1;
                    let nd = sw.up_first;
                    s.down = (s.down.0.min(nd), s.down.1.max(nd));
                    s.up = (s.up.0.min(sw.up_n), s.up.1.max(sw.up_n));
                    for p in sw.port_base..sw.port_base + sw.ports {
                        let r = self.links[p as usize].rate.0 as u128;
                        if p < sw.port_base + nd {
                            s.down_bps += r;
                        } else {
                            s.up_bps += r;
                        }
                    }
                }
                // Two hosts whose lowest common tier is this one.
                let far = (1..self.hosts).map(HostId).find(|&h| {
                    self.common_tier(HostId(0), h) == tier && !self.same_domain(HostId(0), h)
                });
                s.paths = far.map(|h| self.count_paths(HostId(0), h));
                s
            })
            .collect()
    }

    /// The summary a run records in `fabric.json`.
    pub fn fabric_summary(&self) -> FabricSummary {
        let (host_uplinks, scale_up_links) = self.host_port_counts();
        let (domains, scale) = self.scale_up_summary().unwrap_or((0, 0));
        FabricSummary {
            label: self.label.clone(),
            hosts: self.hosts,
            switches: self.switches.len() as u32,
            links: self.links.len() as u32,
            host_gbps: self.host_rate.gbps(),
            host_uplinks,
            scale_up_links,
            scale_up_domains: domains,
            scale_up_switches: scale,
            tiers: self.tier_summaries(),
            bisection_gbps: self.bisection_bps() as f64 / 1e9,
        }
    }

    /// Half the least total capacity of any tier's uplinks (the hosts' links counted as the
    /// first): what crosses a cut of the hosts into two halves along the fabric's groups.
    pub fn bisection_bps(&self) -> u128 {
        let hosts: u128 = (0..self.hosts)
            .flat_map(|h| self.host_net_ports(HostId(h)))
            .map(|p| self.links[p].rate.0 as u128)
            .sum();
        let tiers = self.tier_summaries();
        let ups = tiers[..tiers.len().saturating_sub(1)]
            .iter()
            .map(|t| t.up_bps);
        std::iter::once(hosts).chain(ups).min().unwrap_or(0) / 2
    }

    /// The fabric as a Graphviz graph: one node per host and switch, ranked by tier, one edge
    /// per cable labelled with its rate.
    pub fn dot(&self) -> String {
        use std::fmt::Write as _;
        let mut o =
            String::from("graph fabric {\n  rankdir=BT;\n  node [shape=box, fontsize=10];\n");
        let _ = writeln!(o, "  subgraph hosts {{ rank=same; node [shape=ellipse];");
        for h in 0..self.hosts {
            let _ = writeln!(o, "    \"host:{h}\";");
        }
        o.push_str("  }\n");
        for tier in 0..self.tiers() {
            let _ = writeln!(
                o,
                "  subgraph {} {{ rank=same;",
                self.tier_names[tier as usize]
            );
            for (i, s) in self.switches.iter().enumerate() {
                if s.tier == tier {
                    let name = self.node_name(NodeId::Switch(SwitchId(i as u32)));
                    let _ = writeln!(o, "    \"{name}\";");
                }
            }
            o.push_str("  }\n");
        }
        if self.scale_up() {
            o.push_str("  subgraph scale_up { rank=same;\n");
            for (i, s) in self.switches.iter().enumerate() {
                if s.tier == SCALE_UP {
                    let name = self.node_name(NodeId::Switch(SwitchId(i as u32)));
                    let _ = writeln!(o, "    \"{name}\";");
                }
            }
            o.push_str("  }\n");
        }
        // Each cable once: from its lower end.
        for (p, l) in self.links.iter().enumerate() {
            let lower = match (l.from, l.to) {
                (NodeId::Host(_), _) => true,
                (NodeId::Switch(a), NodeId::Switch(b)) => {
                    self.switches[a.idx()].tier < self.switches[b.idx()].tier
                }
                _ => false,
            };
            if lower {
                let _ = writeln!(
                    o,
                    "  \"{}\" -- \"{}\" [label=\"{}G\"];",
                    self.node_name(l.from),
                    self.node_name(l.to),
                    self.links[p].rate.gbps()
                );
            }
        }
        o.push_str("}\n");
        o
    }

    /// Tier names, lowest first.
    pub fn tier_names(&self) -> &[&'static str] {
        &self.tier_names[..self.tiers() as usize]
    }

    pub fn node_name(&self, n: NodeId) -> String {
        match n {
            NodeId::Host(h) => format!("host:{}", h.0),
            NodeId::Switch(s) => {
                let info = &self.switches[s.idx()];
                match self.tier_names.get(info.tier as usize) {
                    Some(n) if info.tier != SCALE_UP => format!("{n}:{}", info.index),
                    _ => format!("nvswitch:{}", info.index),
                }
            }
        }
    }

    /// The name of the link driven by `port`, e.g. `tor:3-agg:1`.
    pub fn link_name(&self, port: PortId) -> String {
        let l = &self.links[port.idx()];
        format!("{}-{}", self.node_name(l.from), self.node_name(l.to))
    }

    /// The tier of the link a port drives, named by its tier and direction: `host_up` (host
    /// NIC), `tor_up`, `agg_up`, `core_down`, `agg_down`, `tor_down`; on a leaf-spine
    /// `leaf_up`, `spine_down`, `leaf_down`.
    pub fn port_tier(&self, port: PortId) -> &str {
        let l = &self.links[port.idx()];
        let tier = |n: NodeId| match n {
            NodeId::Host(_) => -1i32,
            NodeId::Switch(s) => self.switches[s.idx()].tier as i32,
        };
        let (a, b) = (tier(l.from), tier(l.to));
        let top = self.tiers() as usize;
        let scale = SCALE_UP as i32;
        let i = if b == scale {
            2 * top
        } else if a == scale {
            2 * top + 1
        } else if a < 0 {
            0
        } else if b > a {
            1 + a as usize
        } else {
            top + (top - 1 - a as usize)
        };
        &self.port_tiers[i]
    }

    /// The port tiers in path order (`host_up` first, the leaves' `_down` last).
    pub fn port_tiers(&self) -> &[String] {
        &self.port_tiers
    }

    /// The switches' ports (after every host's).
    pub fn switch_ports(&self) -> std::ops::Range<usize> {
        let first = match &self.host_ports {
            None => self.hosts as usize,
            Some(hp) => hp.base[self.hosts as usize] as usize,
        };
        first..self.links.len()
    }

    /// The port of the opposite direction of `port`'s cable.
    pub fn reverse(&self, port: PortId) -> PortId {
        let l = &self.links[port.idx()];
        let range = match l.to {
            NodeId::Host(h) => self.host_ports(h),
            NodeId::Switch(s) => {
                let i = &self.switches[s.idx()];
                i.port_base as usize..(i.port_base + i.ports) as usize
            }
        };
        let back = range
            .into_iter()
            .find(|&p| self.links[p].to == l.from)
            .expect("every link has a reverse");
        PortId(back as u32)
    }

    /// Whether `port` joins two switches, driving the cable upward.
    pub fn is_fabric_uplink(&self, port: PortId) -> bool {
        let l = &self.links[port.idx()];
        match (l.from, l.to) {
            (NodeId::Switch(a), NodeId::Switch(b)) => {
                self.switches[a.idx()].tier < self.switches[b.idx()].tier
            }
            _ => false,
        }
    }

    /// htsim's name for aggregation switch `sw`'s uplink `link` on a 3-tier fat-tree (switch s
    /// at pod position s mod k/2 reaches core (s mod k/2) x k/2 + link), as our link name.
    pub fn htsim_agg_uplink(&self, sw: u32, link: u32) -> Result<String, String> {
        let Some(h) = self.htsim_fat_tree else {
            return Err(
                "a failure of an aggregation uplink needs a 3-tier fat-tree (topology.kind \
                 = \"fat_tree\"); other fabrics have no htsim numbering of them"
                    .into(),
            );
        };
        if sw >= 2 * h * h {
            return Err(format!(
                "switch_id {sw}: the fat-tree has {} aggregation switches (0 to {})",
                2 * h * h,
                2 * h * h - 1
            ));
        }
        if link >= h {
            return Err(format!(
                "link_id {link}: an aggregation switch has {h} uplinks (0 to {})",
                h - 1
            ));
        }
        Ok(format!("agg:{sw}-core:{}", (sw % h) * h + link))
    }

    /// The inverse of [`Topology::htsim_agg_uplink`] on a link name of either direction:
    /// (switch, link).
    pub fn htsim_agg_uplink_of(&self, name: &str) -> Option<(u32, u32)> {
        let h = self.htsim_fat_tree?;
        let (a, b) = name.split_once('-')?;
        let (agg, core) = if a.starts_with("agg:") {
            (a, b)
        } else {
            (b, a)
        };
        let sw: u32 = agg.strip_prefix("agg:")?.parse().ok()?;
        let core: u32 = core.strip_prefix("core:")?.parse().ok()?;
        (core / h == sw % h).then_some((sw, core % h))
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
            0 if tor == s.index => Route::Port(PortId(s.port_base + in_tor)),
            1 if pod == s.index / h => Route::Port(PortId(s.port_base + tor - pod * h)),
            2 => Route::Port(PortId(s.port_base + pod)),
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
    fn leaf_spine_routes_match_the_tiers_definition() {
        for (hpl, leaves, spines) in [(4, 3, 2), (3, 5, 4), (16, 8, 8)] {
            let t = Topology::leaf_spine(hpl, leaves, spines, params(), params().rate);
            for (i, s) in t.switches.iter().enumerate() {
                for dst in 0..t.hosts {
                    let want = match s.tier {
                        0 if dst / hpl == s.index => Route::Port(PortId(s.port_base + dst % hpl)),
                        0 => Route::Group {
                            first: PortId(s.port_base + hpl),
                            n: spines,
                        },
                        _ => Route::Port(PortId(s.port_base + dst / hpl)),
                    };
                    assert_eq!(t.route(SwitchId(i as u32), HostId(dst)), want);
                }
            }
        }
    }

    #[test]
    fn fat_tree_counts_groups_and_path_counts() {
        let t = Topology::fat_tree(8, params());
        assert_eq!(t.hosts, 128);
        assert_eq!(t.switches.len(), 32 + 32 + 16);
        // Every switch has k ports; hosts one each.
        assert_eq!(t.links.len(), 128 + 80 * 8);
        assert!(t.switches.iter().all(|s| s.ports == 8));
        assert_eq!(t.groups(0), (&GroupMap::Div(4), 32));
        assert_eq!(t.groups(1), (&GroupMap::Div(16), 8));
        assert_eq!(t.groups(2), (&GroupMap::Div(128), 1));
        let n = |a, b| t.path_count(HostId(a), HostId(b));
        assert_eq!((n(0, 1), n(0, 4), n(0, 127)), (Some(1), Some(4), Some(16)));
        assert_eq!(t.path_digit(1), Some(4));
        assert_eq!(t.common_tier(HostId(0), HostId(20)), 2);
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
    fn names_tiers_and_cuts() {
        let t = Topology::fat_tree(4, params());
        let tor_base = t.switches[3].port_base;
        assert_eq!(t.link_name(PortId(tor_base + 2)), "tor:3-agg:2");
        assert_eq!(t.link_name(PortId(0)), "host:0-tor:0");
        assert_eq!(
            t.port_tiers(),
            [
                "host_up",
                "tor_up",
                "agg_up",
                "core_down",
                "agg_down",
                "tor_down"
            ]
        );
        assert_eq!(t.port_tier(PortId(tor_base + 2)), "tor_up");
        assert_eq!(t.port_tier(PortId(tor_base)), "tor_down");
        // Host 0 to host 15: its link, host 15's link, ToR 0 up, ToR 7 down, pod 0 up, pod 3 down.
        let cuts: Vec<Cut> = t.cuts(HostId(0), HostId(15)).collect();
        assert_eq!(cuts.len(), 6);
        assert_eq!(t.cut_ports(cuts[2]).count(), 2);
        // Pod 3's down cut: one port from each of the 4 cores.
        let down: Vec<PortId> = t.cut_ports(cuts[5]).collect();
        assert_eq!(down.len(), 4);
        assert!(down.iter().all(|&p| t.link_name(p).starts_with("core:")));
        assert_eq!(t.cuts(HostId(0), HostId(1)).count(), 2);
        let ls = Topology::leaf_spine(2, 3, 2, params(), params().rate);
        assert_eq!(
            ls.port_tiers(),
            ["host_up", "leaf_up", "spine_down", "leaf_down"]
        );
    }

    /// Two hosts under one leaf, by hand; `edit` breaks it before it is checked.
    fn tiny(edit: impl FnOnce(&mut Builder)) -> Result<Topology, String> {
        let p = params();
        let mut b = Builder::new(2, p.rate, &["leaf"]);
        let leaf = NodeId::Switch(SwitchId(0));
        b.link(p, NodeId::Host(HostId(0)), leaf);
        b.link(p, NodeId::Host(HostId(1)), leaf);
        edit(&mut b);
        b.finish()
    }

    fn with_leaf(b: &mut Builder, hosts: &[u32]) {
        let p = params();
        let me = NodeId::Switch(b.switch(0, 0));
        for &h in hosts {
            b.link(p, me, NodeId::Host(HostId(h)));
        }
    }

    #[test]
    fn malformed_graphs_are_refused_not_built() {
        assert!(tiny(|b| with_leaf(b, &[0, 1])).is_ok());
        let bad: Vec<(Result<Topology, String>, &str)> = vec![
            // The leaf never links back to host 1.
            (tiny(|b| with_leaf(b, &[0])), "both ways"),
            // A link to a switch that does not exist.
            (
                tiny(|b| {
                    with_leaf(b, &[0, 1]);
                    b.link(
                        params(),
                        NodeId::Switch(SwitchId(0)),
                        NodeId::Switch(SwitchId(7)),
                    );
                }),
                "no such node",
            ),
            // A second link of host 0, after the switches began.
            (
                tiny(|b| {
                    with_leaf(b, &[0, 1]);
                    b.link(
                        params(),
                        NodeId::Host(HostId(0)),
                        NodeId::Switch(SwitchId(0)),
                    );
                }),
                "come before",
            ),
            // A switch with no links.
            (
                tiny(|b| {
                    with_leaf(b, &[0, 1]);
                    b.switch(0, 1);
                }),
                "no links",
            ),
            // Host 1's link to a switch of the second tier.
            (
                {
                    let p = params();
                    let mut b = Builder::new(2, p.rate, &["leaf", "spine"]);
                    b.link(p, NodeId::Host(HostId(0)), NodeId::Switch(SwitchId(0)));
                    b.link(p, NodeId::Host(HostId(1)), NodeId::Switch(SwitchId(1)));
                    let l = NodeId::Switch(b.switch(0, 0));
                    b.link(p, l, NodeId::Host(HostId(0)));
                    let s = NodeId::Switch(b.switch(1, 0));
                    b.link(p, s, NodeId::Host(HostId(1)));
                    b.finish()
                },
                "first-tier",
            ),
        ];
        for (r, want) in bad {
            let e = r.expect_err("refused");
            assert!(e.contains(want), "{want}: {e}");
        }
    }

    #[test]
    fn htsim_agg_uplink_names_round_trip() {
        let t = Topology::fat_tree(8, params());
        let name = t.htsim_agg_uplink(5, 3).unwrap();
        assert_eq!(name, "agg:5-core:7");
        assert_eq!(t.htsim_agg_uplink_of(&name), Some((5, 3)));
        assert_eq!(t.htsim_agg_uplink_of("core:7-agg:5"), Some((5, 3)));
        assert_eq!(t.htsim_agg_uplink_of("agg:5-core:3"), None);
        let ls = Topology::leaf_spine(2, 3, 2, params(), params().rate);
        assert!(ls.htsim_agg_uplink(0, 0).is_err());
    }
}
