//! JSQ, join the shortest queue (the study's switch "JSQ"): the candidate port holding the fewest
//! bytes, ties broken uniformly at random. Exact and instantaneous; synchronized flows still pile
//! onto the same momentarily-short port, so its queues grow as Theta(m). No options.

use super::{PacketView, Scheme, SchemeInfo, SwitchPolicy};
use crate::net::Port;
use crate::rng::{below, SimRng};

/// The `switch_jsq` scheme.
pub struct Def;

impl Scheme for Def {
    const INFO: SchemeInfo = SchemeInfo::switch("switch_jsq", "packet")
        .adaptive()
        .summary("join the shortest queue (bytes), ties at random")
        .reading_queues()
        .honouring_weights();
    switch_side_scheme!(Jsq, |_| Jsq);
}

/// The index of the smallest key, ties uniformly at random (reservoir sampling over the ties).
#[inline]
pub fn argmin_random_ties<K: Ord + Copy>(
    n: usize,
    key: impl Fn(usize) -> K,
    rng: &mut SimRng,
) -> usize {
    let mut best = 0;
    let mut best_key = key(0);
    let mut ties = 1u32;
    for i in 1..n {
        let k = key(i);
        if k < best_key {
            best = i;
            best_key = k;
            ties = 1;
        } else if k == best_key {
            ties += 1;
            if below(rng, ties) == 0 {
                best = i;
            }
        }
    }
    best
}

/// The least-occupied port of `group`, ties at random.
#[inline]
pub fn shortest(group: &[Port], rng: &mut SimRng) -> usize {
    argmin_random_ties(group.len(), |i| group[i].queued_bytes, rng)
}

#[derive(Clone, Debug, Default)]
pub struct Jsq;

impl SwitchPolicy for Jsq {
    #[inline]
    fn choose(&mut self, _pkt: &PacketView, group: &[Port], rng: &mut SimRng) -> usize {
        shortest(group, rng)
    }

    /// The shortest live queue (weight above zero), ties at random.
    fn weighted(&mut self, _: &PacketView, group: &[Port], w: &[u32], rng: &mut SimRng) -> usize {
        let q = |i: usize| {
            if w[i] == 0 {
                u64::MAX
            } else {
                group[i].queued_bytes
            }
        };
        argmin_random_ties(group.len(), q, rng)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lb::testutil::{histogram, ports, view};
    use crate::rng::{rng_for, Stream};
    use crate::time::SimTime;

    #[test]
    fn picks_the_shortest_and_breaks_ties_uniformly() {
        let mut rng = rng_for(4, Stream::Switch, 1);
        let mut p = Jsq;
        let g = ports(10_000, &[300, 200, 500, 201]);
        assert!((0..100).all(|_| p.choose(&view(0, SimTime::ZERO), &g, &mut rng) == 1));
        let g = ports(10_000, &[100, 50, 50, 60, 50]);
        let c = histogram(
            (0..9000).map(|_| p.choose(&view(0, SimTime::ZERO), &g, &mut rng)),
            5,
        );
        assert_eq!((c[0], c[3]), (0, 0));
        for i in [1, 2, 4] {
            assert!((2800..3200).contains(&c[i]), "{c:?}");
        }
    }

    #[test]
    fn follows_the_queues_as_they_change() {
        // Feeding the chosen port keeps the group balanced within one packet.
        let mut rng = rng_for(4, Stream::Switch, 2);
        let mut p = Jsq;
        let mut g = ports(1 << 30, &[0; 4]);
        for _ in 0..1000 {
            let i = p.choose(&view(0, SimTime::ZERO), &g, &mut rng);
            g[i].queued_bytes += 1000;
        }
        assert!(g.iter().all(|q| q.queued_bytes == 250_000));
    }
}
