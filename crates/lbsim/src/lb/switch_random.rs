//! Switch random (the study's RSQ): a uniformly random next hop per packet. Oblivious like
//! spraying, but decided per hop: its queues grow as a zero-drift random walk, Theta(sqrt m) in
//! the message length m. No options.

use super::{PacketView, SwitchPolicy};
use crate::net::Port;
use crate::rng::SimRng;
use rand::Rng;

#[derive(Clone, Debug, Default)]
pub struct RandomPort;

impl SwitchPolicy for RandomPort {
    #[inline]
    fn choose(&mut self, _pkt: &PacketView, group: &[Port], rng: &mut SimRng) -> usize {
        rng.gen_range(0..group.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lb::testutil::{histogram, ports, view};
    use crate::rng::{rng_for, Stream};
    use crate::time::SimTime;

    #[test]
    fn uniform_and_blind_to_queues() {
        let mut rng = rng_for(4, Stream::Switch, 0);
        let g = ports(1000, &[900, 0, 0, 0]);
        let mut p = RandomPort;
        let c = histogram(
            (0..8000).map(|_| p.choose(&view(0, SimTime::ZERO), &g, &mut rng)),
            4,
        );
        assert!(c.iter().all(|&x| (1850..2150).contains(&x)), "{c:?}");
    }
}
