//! `ai`: a training cluster of servers, each GPU a host with its own NIC (`[topology.server]`:
//! GPUs, ports per NIC, NVLink rate and latency, servers per NVLink domain), on a 2-tier fabric
//! of leaves and spines: rail-optimized (NIC i of `leaf_servers` servers under leaf i) or one
//! leaf per `leaf_servers` servers, in `planes` independent copies, a NIC's ports spread over
//! the planes and, past one port per plane, over two leaves of a plane (dual-ToR); with
//! `zone_servers`, zones of leaves and spines joined by a core tier, tapered by
//! `core_oversubscription`. The shapes of DGX SuperPOD, Alibaba HPN, Spectrum-X, MRC's planes
//! and Meta's zones (see the presets in `scenarios/`).

use super::{rate, KindInfo, Size};
use crate::config::{check, finite_nonneg, invalid, ConfigError, Origin};
use crate::ids::{HostId, NodeId, SwitchId};
use crate::net::config::{ServerConfig, TopologyConfig};
use crate::net::topology::{Builder, LinkParams, Topology, SCALE_UP};
use crate::time::SimTime;

pub const INFO: KindInfo = KindInfo {
    name: "ai",
    summary: "GPU servers, a NIC per GPU, NVLink: topology.servers, [topology.server], rails, \
              planes, leaf_servers, uplink_gbps, oversubscription, zone_servers, \
              core_oversubscription",
    keys: &[
        "servers",
        "server",
        "rails",
        "planes",
        "leaf_servers",
        "uplink_gbps",
        "oversubscription",
        "zone_servers",
        "core_oversubscription",
    ],
};

/// The cluster's shape, every count checked.
#[derive(Clone, Copy, Debug)]
struct Shape {
    servers: u32,
    gpus: u32,
    /// Ports per NIC, and per plane (2: dual-ToR).
    ports: u32,
    planes: u32,
    sides: u32,
    rails: bool,
    leaf_servers: u32,
    /// Per plane: leaves, each leaf's down and up ports (one up link to each spine of its
    /// zone), and spines per zone.
    leaves: u32,
    down: u32,
    spines: u32,
    /// Zones (1: no core tier), servers per zone, and per plane the core switches (each spine
    /// links once to every core of its plane).
    zones: u32,
    zone_servers: u32,
    cores: u32,
    /// Servers per NVLink domain (0: no NVLink).
    domain: u32,
}

impl Shape {
    fn hosts(&self) -> u32 {
        self.servers * self.gpus
    }

    fn leaves_per_zone(&self) -> u32 {
        self.leaves / self.zones
    }

    /// The zone of leaf `i` (index within its plane).
    fn leaf_zone(&self, i: u32) -> u32 {
        i / self.leaves_per_zone()
    }

    fn domains(&self) -> u32 {
        self.servers.checked_div(self.domain).unwrap_or(0)
    }

    /// Index within its plane of the leaf that port `side` of GPU `g` of `server` reaches.
    fn leaf(&self, server: u32, g: u32, side: u32) -> u32 {
        let unit = server / self.leaf_servers;
        let group = if self.rails { self.gpus } else { 1 };
        let within = if self.rails { g } else { 0 };
        (unit * group + within) * self.sides + side
    }
}

fn server(t: &TopologyConfig) -> ServerConfig {
    t.server.clone().unwrap_or_default()
}

fn shape(t: &TopologyConfig, o: &Origin) -> Result<Shape, ConfigError> {
    let s = server(t);
    let servers = t
        .servers
        .ok_or_else(|| invalid(o, "topology.servers", "required for kind = \"ai\""))?;
    check(servers >= 1, o, "topology.servers", "must be at least 1")?;
    check(
        (1..=1024).contains(&s.gpus),
        o,
        "topology.server.gpus",
        "must be from 1 to 1,024",
    )?;
    check(
        (servers as u64 * s.gpus as u64) < 1 << 24 && servers as u64 * s.gpus as u64 >= 2,
        o,
        "topology.servers",
        "times topology.server.gpus must be from 2 to 16,777,215 GPUs",
    )?;
    let planes = t.planes.unwrap_or(1);
    check(
        (1..=64).contains(&s.nic_ports),
        o,
        "topology.server.nic_ports",
        "must be from 1 to 64",
    )?;
    check(
        planes >= 1 && s.nic_ports.is_multiple_of(planes),
        o,
        "topology.planes",
        &format!(
            "must divide topology.server.nic_ports ({}): every NIC has a port on every plane",
            s.nic_ports
        ),
    )?;
    let sides = s.nic_ports / planes;
    check(
        sides <= 2,
        o,
        "topology.server.nic_ports",
        &format!(
            "gives {sides} ports per plane; a NIC reaches at most two leaves of a plane (dual-ToR)"
        ),
    )?;
    let rails = t.rails.unwrap_or(true);
    let leaf_servers = t
        .leaf_servers
        .unwrap_or(if rails { 32 } else { 2 })
        .min(servers);
    check(
        leaf_servers >= 1 && servers.is_multiple_of(leaf_servers),
        o,
        "topology.leaf_servers",
        &format!("must divide topology.servers ({servers})"),
    )?;
    let down = if rails {
        leaf_servers
    } else {
        leaf_servers * s.gpus
    };
    let leaves = (servers / leaf_servers) * if rails { s.gpus } else { 1 } * sides;
    check(
        t.oversubscription.is_finite() && t.oversubscription >= 1.0,
        o,
        "topology.oversubscription",
        "must be at least 1 (a leaf's down bandwidth over its up bandwidth)",
    )?;
    let up_gbps = t.uplink_gbps.unwrap_or(t.link_gbps);
    let spines = down as f64 * t.link_gbps / (up_gbps * t.oversubscription);
    // A taper such as 16:15 is written as a decimal: take the nearest whole count.
    let whole = spines.round();
    check(
        whole >= 1.0 && (spines - whole).abs() <= 1e-9 * whole && whole <= 1e6,
        o,
        "topology.oversubscription",
        &format!(
            "gives {spines} up links per leaf ({down} down x {} Gb/s / ({up_gbps} Gb/s x {})); \
             it must be a whole number, one to each spine of the plane",
            t.link_gbps, t.oversubscription
        ),
    )?;
    let zone_servers = t.zone_servers.unwrap_or(servers);
    check(
        zone_servers >= 1
            && servers.is_multiple_of(zone_servers)
            && zone_servers.is_multiple_of(leaf_servers),
        o,
        "topology.zone_servers",
        &format!(
            "must divide topology.servers ({servers}) and be a multiple of \
             topology.leaf_servers ({leaf_servers})"
        ),
    )?;
    let zones = servers / zone_servers;
    let core_over = t.core_oversubscription.unwrap_or(1.0);
    check(
        core_over.is_finite() && core_over >= 1.0,
        o,
        "topology.core_oversubscription",
        "must be at least 1 (a spine's down bandwidth over its up bandwidth)",
    )?;
    if zones == 1 {
        check(
            t.core_oversubscription.is_none(),
            o,
            "topology.core_oversubscription",
            "needs zones: set topology.zone_servers below topology.servers",
        )?;
    }
    // Per plane: a spine's down links, one per leaf of its zone; its up links, one per core.
    let zone_leaves = leaves / zones;
    let cores = zone_leaves as f64 / core_over;
    let cores_whole = cores.round();
    if zones > 1 {
        check(
            cores_whole >= 1.0 && (cores - cores_whole).abs() <= 1e-9 * cores_whole,
            o,
            "topology.core_oversubscription",
            &format!(
                "gives {cores} up links per spine ({zone_leaves} leaves of its zone / {core_over}); \
                 it must be a whole number, one to each core switch of the plane"
            ),
        )?;
    }
    check(
        finite_nonneg(s.nvlink_gbps),
        o,
        "topology.server.nvlink_gbps",
        "must be a non-negative number of Gb/s (0: no NVLink)",
    )?;
    let domain = if s.nvlink_gbps > 0.0 {
        s.domain_servers
    } else {
        0
    };
    if s.nvlink_gbps > 0.0 {
        check(
            s.domain_servers >= 1 && servers.is_multiple_of(s.domain_servers),
            o,
            "topology.server.domain_servers",
            &format!("must divide topology.servers ({servers})"),
        )?;
    }
    Ok(Shape {
        servers,
        gpus: s.gpus,
        ports: s.nic_ports,
        planes,
        sides,
        rails,
        leaf_servers,
        leaves,
        down,
        spines: whole as u32,
        zones,
        zone_servers,
        cores: if zones > 1 { cores_whole as u32 } else { 0 },
        domain,
    })
}

pub fn build(t: &TopologyConfig, p: LinkParams, o: &Origin) -> Result<Topology, ConfigError> {
    let sh = shape(t, o)?;
    let s = server(t);
    let up = LinkParams {
        rate: rate(
            t.uplink_gbps.unwrap_or(t.link_gbps),
            o,
            "topology.uplink_gbps",
            "is",
        )?,
        ..p
    };
    let nvlink = if sh.domain > 0 {
        check(
            finite_nonneg(s.nvlink_latency_ns) && s.nvlink_latency_ns < 1e9,
            o,
            "topology.server.nvlink_latency_ns",
            "must be a non-negative number of nanoseconds",
        )?;
        Some(LinkParams {
            rate: rate(s.nvlink_gbps, o, "topology.server.nvlink_gbps", "is")?,
            latency: SimTime::from_ns_f64(s.nvlink_latency_ns),
            switch_latency: SimTime::ZERO,
        })
    } else {
        None
    };
    let hosts = sh.hosts();
    // Spines per plane, over every zone.
    let spines = sh.spines * sh.zones;
    let switches = sh.planes as u64 * (sh.leaves as u64 + spines as u64 + sh.cores as u64)
        + sh.domains() as u64;
    check(
        switches < 1 << 24,
        o,
        "topology.servers",
        &format!("makes {switches} switches: too many"),
    )?;
    let per_plane = sh.leaves + spines + sh.cores;
    let leaf_id = |plane: u32, i: u32| SwitchId(plane * sh.leaves + i);
    // Spine i of a plane: zone i / spines, the (i mod spines)-th of its zone.
    let spine_id = |plane: u32, i: u32| SwitchId(sh.planes * sh.leaves + plane * spines + i);
    let core_id =
        |plane: u32, c: u32| SwitchId(sh.planes * (sh.leaves + spines) + plane * sh.cores + c);
    let nv_id = |d: u32| SwitchId(sh.planes * per_plane + d);
    let tiers: &[&str] = if sh.zones > 1 {
        &["leaf", "spine", "core"]
    } else {
        &["leaf", "spine"]
    };
    let mut b = Builder::new(hosts, p.rate, tiers);
    let zones = if sh.zones > 1 {
        format!(
            ", {} zones of {} servers, {} core switches per plane",
            sh.zones, sh.zone_servers, sh.cores
        )
    } else {
        String::new()
    };
    b.label(format!(
        "ai {} servers x {} GPUs, {} NIC port{} each, {} plane{}, {}{zones}",
        sh.servers,
        sh.gpus,
        sh.ports,
        if sh.ports == 1 { "" } else { "s" },
        sh.planes,
        if sh.planes == 1 { "" } else { "s" },
        if sh.rails {
            "rail-optimized"
        } else {
            "leaf per servers"
        }
    ));
    // Hosts' links: network ports by SwitchId (plane, then side), then NVLink.
    for h in 0..hosts {
        let (server, g) = (h / sh.gpus, h % sh.gpus);
        for plane in 0..sh.planes {
            for side in 0..sh.sides {
                let leaf = leaf_id(plane, sh.leaf(server, g, side));
                b.link(p, NodeId::Host(HostId(h)), NodeId::Switch(leaf));
            }
        }
        if let Some(nv) = nvlink {
            let d = server / sh.domain;
            b.link(nv, NodeId::Host(HostId(h)), NodeId::Switch(nv_id(d)));
        }
    }
    // Leaves, plane by plane, in the order of the least host below them.
    for plane in 0..sh.planes {
        for i in 0..sh.leaves {
            b.switch(0, plane * sh.leaves + i);
            let me = NodeId::Switch(leaf_id(plane, i));
            let side = i % sh.sides;
            let group = i / sh.sides;
            let (unit, within) = if sh.rails {
                (group / sh.gpus, Some(group % sh.gpus))
            } else {
                (group, None)
            };
            for server in unit * sh.leaf_servers..(unit + 1) * sh.leaf_servers {
                for g in 0..sh.gpus {
                    if within.is_none_or(|r| r == g) {
                        let h = HostId(server * sh.gpus + g);
                        debug_assert_eq!(sh.leaf(server, g, side), i);
                        b.link(p, me, NodeId::Host(h));
                    }
                }
            }
            let z = sh.leaf_zone(i);
            for k in 0..sh.spines {
                b.link(up, me, NodeId::Switch(spine_id(plane, z * sh.spines + k)));
            }
        }
    }
    for plane in 0..sh.planes {
        for k in 0..spines {
            b.switch(1, plane * spines + k);
            let me = NodeId::Switch(spine_id(plane, k));
            let z = k / sh.spines;
            let zl = sh.leaves_per_zone();
            for i in z * zl..(z + 1) * zl {
                b.link(up, me, NodeId::Switch(leaf_id(plane, i)));
            }
            for c in 0..sh.cores {
                b.link(up, me, NodeId::Switch(core_id(plane, c)));
            }
        }
    }
    for plane in 0..sh.planes {
        for c in 0..sh.cores {
            b.switch(2, plane * sh.cores + c);
            let me = NodeId::Switch(core_id(plane, c));
            for k in 0..spines {
                b.link(up, me, NodeId::Switch(spine_id(plane, k)));
            }
        }
    }
    if let Some(nv) = nvlink {
        for d in 0..sh.domains() {
            b.switch(SCALE_UP, d);
            let me = NodeId::Switch(nv_id(d));
            let first = d * sh.domain * sh.gpus;
            for h in first..first + sh.domain * sh.gpus {
                b.link(nv, me, NodeId::Host(HostId(h)));
            }
        }
    }
    b.finish().map_err(|m| {
        invalid(
            o,
            "topology",
            format!("lbsim cannot build this cluster: {m}"),
        )
    })
}

pub fn size(t: &TopologyConfig) -> Option<Size> {
    let sh = shape(t, &Origin::builtin()).ok()?;
    let hosts = sh.hosts() as u128;
    let host_ports = hosts * (sh.ports as u128 + (sh.domain > 0) as u128);
    let leaf_ports = sh.planes as u128 * sh.leaves as u128 * (sh.down + sh.spines) as u128;
    // Each spine: its zone's leaves down, every core of its plane up; each core: every spine.
    let spines = sh.planes as u128 * (sh.spines * sh.zones) as u128;
    let spine_ports = spines * (sh.leaves_per_zone() + sh.cores) as u128
        + sh.planes as u128 * sh.cores as u128 * (sh.spines * sh.zones) as u128;
    let nv_ports = if sh.domain > 0 { hosts } else { 0 };
    let switch_ports = leaf_ports + spine_ports + nv_ports;
    Some(Size {
        hosts,
        ports: host_ports + switch_ports,
        switch_ports,
    })
}

/// The fastest link of the cluster in Gb/s, and its longest latency in ns.
pub fn extremes(t: &TopologyConfig) -> (f64, f64) {
    let s = server(t);
    let up = t.uplink_gbps.unwrap_or(t.link_gbps);
    (
        t.link_gbps.max(up).max(s.nvlink_gbps),
        t.link_latency_ns.max(s.nvlink_latency_ns),
    )
}
