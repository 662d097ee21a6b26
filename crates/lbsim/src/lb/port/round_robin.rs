//! `round_robin`: each host sends its packets on its ports in turn, whatever flow they belong
//! to (a NIC striping packets over its ports). A lone flow gets every port's bandwidth.

use super::{PortCtx, PortInfo, PortPolicy};
use crate::rng::SimRng;

pub const INFO: PortInfo = PortInfo {
    name: "round_robin",
    summary: "per packet: each host cycles over its ports",
    options: &[],
};

#[derive(Clone, Debug)]
pub struct RoundRobin {
    /// Per host: the port its next packet takes.
    next: Vec<u32>,
}

impl RoundRobin {
    pub fn new(hosts: usize) -> RoundRobin {
        RoundRobin {
            next: vec![0; hosts],
        }
    }
}

impl PortPolicy for RoundRobin {
    #[inline]
    fn choose(&mut self, cx: &PortCtx, _: &mut SimRng) -> usize {
        let n = &mut self.next[cx.host.idx()];
        let k = *n as usize % cx.ports.len();
        *n = (k + 1) as u32;
        k
    }
}
