//! `idle`: each packet takes the port that can start it first (its queue drained and its pacer
//! ready), ties going round the ports in turn. The NIC sees its own ports, nothing beyond: this
//! fills every port when the host has enough to send, but cannot see a congested plane.

use super::{PortCtx, PortInfo, PortPolicy};
use crate::rng::SimRng;

pub const INFO: PortInfo = PortInfo {
    name: "idle",
    summary: "per packet: the port free first (the NIC's own queues), ties in turn",
    options: &[],
};

#[derive(Clone, Debug)]
pub struct Idle {
    /// Per host: where the search for a free port starts (one past the last port used).
    next: Vec<u32>,
}

impl Idle {
    pub fn new(hosts: usize) -> Idle {
        Idle {
            next: vec![0; hosts],
        }
    }
}

impl PortPolicy for Idle {
    #[inline]
    fn choose(&mut self, cx: &PortCtx, _: &mut SimRng) -> usize {
        let n = cx.ports.len();
        let start = self.next[cx.host.idx()] as usize % n;
        let mut best = start;
        for k in (start..n).chain(0..start) {
            // A port free by now is as good as any other free one: the first in turn wins.
            if cx.free_at[k].max(cx.now) < cx.free_at[best].max(cx.now) {
                best = k;
            }
        }
        self.next[cx.host.idx()] = ((best + 1) % n) as u32;
        best
    }
}
