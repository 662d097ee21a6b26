//! Switch round-robin (the study's "Switch Pkt"): one counter per switch walks the next-hop group in
//! a random order; after `reshuffle_after_wraps` passes the order is reshuffled at random, which
//! breaks the lock-step that plain round-robin falls into. With reshuffling off it is plain RR.

use super::{weighted_pick, PacketView, Scheme, SchemeInfo, SwitchPolicy};
use crate::net::Port;
use crate::rng::SimRng;
use rand::seq::SliceRandom;
use rand::Rng;

/// The `switch_rr` scheme (`switch_rr_simple` is the same policy without reshuffling).
pub struct Def;

impl Scheme for Def {
    const INFO: SchemeInfo = SchemeInfo::switch("switch_rr", "packet")
        .summary("switch round-robin over the next-hop group, order reshuffled after every 5 wraps")
        .honouring_weights();
    switch_side_scheme!(RoundRobin, |_| RoundRobin::new(RoundRobinConfig::default()));
}

#[derive(Clone, Copy, Debug)]
pub struct RoundRobinConfig {
    /// Passes over the group between reshuffles (the study: 5); 0 = never reshuffle.
    pub reshuffle_after_wraps: u32,
}

impl Default for RoundRobinConfig {
    fn default() -> Self {
        RoundRobinConfig {
            reshuffle_after_wraps: 5,
        }
    }
}

#[derive(Clone, Debug)]
pub struct RoundRobin {
    cfg: RoundRobinConfig,
    order: Vec<u32>,
    counter: u32,
}

impl RoundRobin {
    pub fn new(cfg: RoundRobinConfig) -> Self {
        RoundRobin {
            cfg,
            order: Vec::new(),
            counter: 0,
        }
    }
}

impl SwitchPolicy for RoundRobin {
    fn choose(&mut self, _pkt: &PacketView, group: &[Port], rng: &mut SimRng) -> usize {
        let n = group.len() as u32;
        if self.order.len() != n as usize {
            // First use (or a group of another size): start from a random order.
            self.order = (0..n).collect();
            self.order.shuffle(rng);
            self.counter = 0;
        }
        let pick = self.order[(self.counter % n) as usize];
        self.counter += 1;
        if self.cfg.reshuffle_after_wraps > 0 && self.counter == self.cfg.reshuffle_after_wraps * n
        {
            self.counter = 0;
            self.order.shuffle(rng);
        }
        pick as usize
    }

    /// Walks the rotation, accepting a port with probability weight / max weight: dead ports
    /// are skipped, degraded ones visited proportionally less.
    fn weighted(&mut self, pkt: &PacketView, group: &[Port], w: &[u32], rng: &mut SimRng) -> usize {
        let max = w.iter().copied().max().unwrap_or(0).max(1);
        for _ in 0..64 {
            let i = self.choose(pkt, group, rng);
            if w[i] == max || (w[i] > 0 && rng.gen_range(0..max) < w[i]) {
                return i;
            }
        }
        weighted_pick(rng.gen(), w)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lb::testutil;
    use crate::rng::{rng_for, Stream};
    use crate::time::SimTime;

    fn group(n: usize) -> Vec<Port> {
        testutil::ports(1, &vec![0; n])
    }

    fn view() -> PacketView<'static> {
        testutil::view(0, SimTime::ZERO)
    }

    #[test]
    fn every_wrap_visits_each_port_once() {
        let g = group(4);
        let mut rng = rng_for(9, Stream::Switch, 0);
        let mut rr = RoundRobin::new(RoundRobinConfig::default());
        let mut orders = Vec::new();
        for _wrap in 0..20 {
            let mut seen: Vec<usize> = (0..4).map(|_| rr.choose(&view(), &g, &mut rng)).collect();
            orders.push(seen.clone());
            seen.sort();
            assert_eq!(seen, vec![0, 1, 2, 3]);
        }
        // Within a block of 5 wraps the order is fixed; across blocks it gets reshuffled.
        for b in 0..4 {
            for w in 1..5 {
                assert_eq!(orders[b * 5], orders[b * 5 + w]);
            }
        }
        assert!((1..4).any(|b| orders[b * 5] != orders[0]));
    }

    #[test]
    fn plain_round_robin_never_reshuffles() {
        let g = group(3);
        let mut rng = rng_for(9, Stream::Switch, 1);
        let mut rr = RoundRobin::new(RoundRobinConfig {
            reshuffle_after_wraps: 0,
        });
        let first: Vec<usize> = (0..3).map(|_| rr.choose(&view(), &g, &mut rng)).collect();
        for _ in 0..50 {
            let again: Vec<usize> = (0..3).map(|_| rr.choose(&view(), &g, &mut rng)).collect();
            assert_eq!(again, first);
        }
    }
}
