//! `leaf_spine`: every leaf linked once to every spine (`topology.hosts_per_leaf`, `leaves`,
//! `spines`, `oversubscription`), a preset of the 2-tier Clos.

use super::{rate, KindInfo, Size};
use crate::config::{check, ConfigError, Origin};
use crate::net::config::TopologyConfig;
use crate::net::topology::{LinkParams, Topology};

pub const INFO: KindInfo = KindInfo {
    name: "leaf_spine",
    summary: "2-tier: topology.hosts_per_leaf, leaves, spines, oversubscription",
    keys: &["hosts_per_leaf", "leaves", "spines", "oversubscription"],
};

pub fn build(t: &TopologyConfig, p: LinkParams, o: &Origin) -> Result<Topology, ConfigError> {
    check(
        t.hosts_per_leaf >= 1,
        o,
        "topology.hosts_per_leaf",
        "must be >= 1",
    )?;
    check(t.leaves >= 1, o, "topology.leaves", "must be >= 1")?;
    check(t.spines >= 1, o, "topology.spines", "must be >= 1")?;
    check(
        t.oversubscription.is_finite() && t.oversubscription > 0.0,
        o,
        "topology.oversubscription",
        "must be positive",
    )?;
    check(
        (t.hosts_per_leaf as u64 * t.leaves as u64) < (1 << 24),
        o,
        "topology.leaves",
        "too many hosts",
    )?;
    let up = rate(
        uplink_gbps(t),
        o,
        "topology.oversubscription",
        "makes the uplink rate hosts_per_leaf x link_gbps / (spines x oversubscription)",
    )?;
    Ok(crate::net::clos::leaf_spine(
        t.hosts_per_leaf,
        t.leaves,
        t.spines,
        p,
        up,
    ))
}

/// The leaf-spine links' rate in Gb/s: hosts_per_leaf x link_gbps / (spines x
/// oversubscription).
pub fn uplink_gbps(t: &TopologyConfig) -> f64 {
    t.hosts_per_leaf as f64 * t.link_gbps / (t.spines.max(1) as f64 * t.oversubscription)
}

pub fn size(t: &TopologyConfig) -> Option<Size> {
    let hosts = t.hosts_per_leaf as u128 * t.leaves as u128;
    let up = t.leaves as u128 * t.spines as u128;
    Some(Size {
        hosts,
        ports: 2 * (hosts + up),
        switch_ports: hosts + 2 * up,
    })
}
