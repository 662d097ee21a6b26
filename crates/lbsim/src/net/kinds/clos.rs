//! `clos`: a 2- or 3-tier Clos from per-tier radices, rates and latencies (`topology.hosts`,
//! `pod_hosts`, and one `[[topology.tier]]` table per tier, lowest first), tapered wherever a
//! tier's uplinks carry less than its downlinks. htsim's `.topo` files import as this.

use super::{rate, KindInfo, Size};
use crate::config::{check, finite_nonneg, invalid, ConfigError, Origin};
use crate::net::clos::{clos, counts, Blame, ClosSpec, TierSpec};
use crate::net::config::TopologyConfig;
use crate::net::topology::{LinkParams, Topology};
use crate::time::SimTime;

pub const INFO: KindInfo = KindInfo {
    name: "clos",
    summary: "2- or 3-tier Clos: topology.hosts, pod_hosts, [[topology.tier]] down, up, gbps, \
              latency_ns (tapers)",
    keys: &["hosts", "pod_hosts", "tier"],
};

/// The spec the keys give, each tier's links defaulting to `link_gbps` and `link_latency_ns`.
fn spec(t: &TopologyConfig, p: LinkParams, o: &Origin) -> Result<ClosSpec, ConfigError> {
    let hosts = t
        .hosts
        .ok_or_else(|| invalid(o, "topology.hosts", "required for kind = \"clos\""))?;
    check(
        (2..1 << 24).contains(&hosts),
        o,
        "topology.hosts",
        "must be from 2 to 16,777,215",
    )?;
    check(
        (2..=3).contains(&t.tier.len()),
        o,
        "topology.tier",
        &format!(
            "a Clos has 2 or 3 tiers ([[topology.tier]] tables, lowest first), got {}",
            t.tier.len()
        ),
    )?;
    let mut tiers = Vec::new();
    for (i, x) in t.tier.iter().enumerate() {
        let key = |k: &str| format!("topology.tier[{i}].{k}");
        let link = LinkParams {
            rate: match x.gbps {
                Some(g) => rate(g, o, &key("gbps"), "is")?,
                None => p.rate,
            },
            latency: match x.latency_ns {
                Some(l) => {
                    check(
                        finite_nonneg(l) && l < 1e9,
                        o,
                        &key("latency_ns"),
                        "must be a non-negative number of nanoseconds",
                    )?;
                    SimTime::from_ns_f64(l)
                }
                None => p.latency,
            },
            switch_latency: p.switch_latency,
        };
        tiers.push(TierSpec {
            down: x.down,
            up: x.up,
            link,
        });
    }
    if t.tier.len() == 3 {
        check(
            t.pod_hosts.is_some(),
            o,
            "topology.pod_hosts",
            "required for a 3-tier Clos",
        )?;
    } else {
        check(
            t.pod_hosts.is_none(),
            o,
            "topology.pod_hosts",
            "applies only to a 3-tier Clos",
        )?;
    }
    Ok(ClosSpec {
        hosts,
        pod_hosts: t.pod_hosts,
        tiers,
    })
}

pub fn build(t: &TopologyConfig, p: LinkParams, o: &Origin) -> Result<Topology, ConfigError> {
    let s = spec(t, p, o)?;
    let names: &[&'static str] = if s.tiers.len() == 2 {
        &["leaf", "spine"]
    } else {
        &["tor", "agg", "core"]
    };
    // The radices first, each error on the key to blame; then the graph's own checks.
    if let Err(e) = counts(&s) {
        let key = match e.blame {
            Blame::Hosts => "topology.hosts".to_string(),
            Blame::PodHosts => "topology.pod_hosts".to_string(),
            Blame::Tiers => "topology.tier".to_string(),
            Blame::Down(i) => format!("topology.tier[{i}].down"),
            Blame::Up(i) => format!("topology.tier[{i}].up"),
        };
        return Err(invalid(o, key, e.msg));
    }
    let label = format!("clos {} tiers, {} hosts", s.tiers.len(), s.hosts);
    clos(&s, p.switch_latency, names, label).map_err(|msg| invalid(o, "topology.tier", msg))
}

pub fn size(t: &TopologyConfig) -> Option<Size> {
    let s = spec(t, t.link_params(), &Origin::builtin()).ok()?;
    let (n, _) = counts(&s).ok()?;
    let hosts = s.hosts as u128;
    // Every switch port drives one link; hosts one each.
    let switch_ports: u128 = n
        .iter()
        .zip(&s.tiers)
        .map(|(&(count, _), x)| count as u128 * (x.down + x.up) as u128)
        .sum();
    Some(Size {
        hosts,
        ports: hosts + switch_ports,
        switch_ports,
    })
}
