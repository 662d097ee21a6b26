//! The network: packets, egress ports with their links, and fabric topologies.

pub mod clos;
pub mod config;
pub mod htsim_topo;
pub mod simai_topo;
pub mod kinds;
pub mod fault;
pub mod packet;
pub mod port;
pub mod topology;

pub use fault::{Fault, GilbertElliott};
pub use packet::{Packet, PacketKind};
pub use port::{Port, Slots};
pub use topology::{Builder, Cut, GroupMap, LinkParams, PathProfile, Route, TierSummary, Topology};
