//! `simai`: a fabric imported from a SimAI / ns-3 topology file (`topology.simai_topo`), the
//! link graph itself: GPUs as hosts, NVSwitches as scale-up switches, network tiers found from
//! the graph (see `net::simai_topo`). Every link's rate and latency come from the file.

use std::path::Path;

use super::{KindInfo, Size};
use crate::config::{check, ConfigError, Origin};
use crate::net::config::TopologyConfig;
use crate::net::topology::{LinkParams, Topology};

pub const INFO: KindInfo = KindInfo {
    name: "simai",
    summary: "a SimAI / ns-3 topology file: topology.simai_topo (GPUs, NVSwitches, tiers)",
    keys: &["simai_topo"],
};

/// Reads the file at `path` (resolved against the scenario's directory), makes it the fabric
/// of `t`, and refuses the keys it would override.
pub fn import(path: &Path, t: &mut TopologyConfig, o: &Origin) -> Result<(), ConfigError> {
    let def = TopologyConfig::default();
    for (key, set) in [
        ("link_gbps", t.link_gbps != def.link_gbps),
        ("link_latency_ns", t.link_latency_ns != def.link_latency_ns),
        (
            "switch_latency_ns",
            t.switch_latency_ns != def.switch_latency_ns,
        ),
    ] {
        check(
            !set,
            o,
            &format!("topology.{key}"),
            "has no effect with topology.simai_topo: the file gives every link's rate and latency",
        )?;
    }
    let topo = crate::net::simai_topo::load(path)?;
    let fastest = topo.links.iter().map(|l| l.rate.0).max().unwrap_or(1);
    let longest = topo.links.iter().map(|l| l.latency.ps()).max().unwrap_or(0);
    t.kind = super::TopologyKind::Simai;
    t.simai_topo = Some(path.to_path_buf());
    t.file_links = Some((fastest, longest as f64 / 1000.0));
    Ok(())
}

pub fn build(t: &TopologyConfig, _: LinkParams, o: &Origin) -> Result<Topology, ConfigError> {
    let Some(path) = &t.simai_topo else {
        return Err(crate::config::invalid(
            o,
            "topology.simai_topo",
            "is needed by topology.kind = \"simai\": the file to import",
        ));
    };
    crate::net::simai_topo::load(path)
}

pub fn size(t: &TopologyConfig) -> Option<Size> {
    let text = std::fs::read_to_string(t.simai_topo.as_ref()?).ok()?;
    let (hosts, ports) = crate::net::simai_topo::size(&text)?;
    Some(Size {
        hosts,
        ports,
        switch_ports: ports.saturating_sub(hosts),
    })
}
