//! Switch random (the study's RSQ): a uniformly random next hop per packet. Oblivious like
//! spraying, but decided per hop: its queues grow as a zero-drift random walk, Theta(sqrt m) in
//! the message length m. No options.

use super::{weighted_pick, PacketView, Scheme, SchemeInfo, SwitchPolicy};
use crate::net::Port;
use crate::rng::SimRng;
use rand::Rng;

/// The `switch_random` scheme.
pub struct Def;

impl Scheme for Def {
    const INFO: SchemeInfo = SchemeInfo::switch("switch_random", "packet")
        .summary("a uniformly random next hop per packet (RSQ)")
        .honouring_weights();
    switch_side_scheme!(RandomPort, |_| RandomPort);
}

#[derive(Clone, Debug, Default)]
pub struct RandomPort;

impl SwitchPolicy for RandomPort {
    #[inline]
    fn choose(&mut self, _pkt: &PacketView, group: &[Port], rng: &mut SimRng) -> usize {
        rng.gen_range(0..group.len())
    }

    /// A random port in proportion to the weights.
    fn weighted(&mut self, _: &PacketView, _: &[Port], w: &[u32], rng: &mut SimRng) -> usize {
        weighted_pick(rng.gen(), w)
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
