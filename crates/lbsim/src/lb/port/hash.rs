//! `hash`: each flow keeps one port for its life, chosen by a hash of its identity (a NIC
//! bonding driver's layer-3+4 policy). Flows spread over the ports; a single flow uses one.

use super::{PortCtx, PortInfo, PortPolicy};
use crate::lb::ecmp::bucket;
use crate::rng::{mix64, SimRng};

pub const INFO: PortInfo = PortInfo {
    name: "hash",
    summary: "per flow: a hash of the flow's identity picks its port for its life",
    options: &[],
};

/// Salt that keeps the port choice independent of the path hashes switches make.
const SALT: u64 = 0x706f_7274_6861_7368;

#[derive(Clone, Debug)]
pub struct Hash;

impl PortPolicy for Hash {
    #[inline]
    fn choose(&mut self, cx: &PortCtx, _: &mut SimRng) -> usize {
        bucket(mix64(cx.ident ^ SALT), cx.ports.len())
    }
}
