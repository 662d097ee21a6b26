//! `spray`: each packet takes a port drawn uniformly at random (from the packet's own draws,
//! so other flows never shift a flow's choices).

use super::{PortCtx, PortInfo, PortPolicy};
use crate::rng::SimRng;
use rand::Rng;

pub const INFO: PortInfo = PortInfo {
    name: "spray",
    summary: "per packet: a port drawn uniformly at random",
    options: &[],
};

#[derive(Clone, Debug)]
pub struct Spray;

impl PortPolicy for Spray {
    #[inline]
    fn choose(&mut self, cx: &PortCtx, rng: &mut SimRng) -> usize {
        rng.gen_range(0..cx.ports.len())
    }
}
