//! The network: packets, egress ports with their links, and fabric topologies.

pub mod packet;
pub mod port;
pub mod topology;

pub use packet::{Packet, PacketKind};
pub use port::{Port, Slots};
pub use topology::{LinkParams, PathProfile, Route, Shape, Tier, Topology};
