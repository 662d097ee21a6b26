//! `fat_tree`: the k-ary fat-tree (`topology.k`), a preset of the 3-tier Clos.

use super::{KindInfo, Size};
use crate::config::{check, ConfigError, Origin};
use crate::net::config::TopologyConfig;
use crate::net::topology::{LinkParams, Topology};

pub const INFO: KindInfo = KindInfo {
    name: "fat_tree",
    summary: "3-tier k-ary fat-tree (topology.k even): k^3/4 hosts",
    keys: &["k"],
};

pub fn build(t: &TopologyConfig, p: LinkParams, o: &Origin) -> Result<Topology, ConfigError> {
    check(
        t.k >= 2 && t.k.is_multiple_of(2),
        o,
        "topology.k",
        &format!("fat-tree k must be even and at least 2, got {}", t.k),
    )?;
    check(
        t.k <= 128,
        o,
        "topology.k",
        "at most 128 (over 500,000 hosts)",
    )?;
    Ok(crate::net::clos::fat_tree(t.k, p))
}

pub fn size(t: &TopologyConfig) -> Option<Size> {
    let k = t.k as u128;
    // k^3/4 hosts; host-ToR, ToR-aggregation and aggregation-core cables, k^3/4 each.
    let hosts = k * k * k / 4;
    Some(Size {
        hosts,
        ports: 6 * hosts,
        switch_ports: 5 * hosts,
    })
}
