//! Power of two choices (the "supermarket model": Mitzenmacher, IEEE TPDS 2001; Vvedenskaya,
//! Dobrushin and Karpelevich 1996; balls into bins: Azar, Broder, Karlin and Upfal, 1999): for each
//! packet the switch draws two distinct ports of the next-hop group uniformly at random from its
//! own stream and sends the packet to the one holding fewer queued bytes; a tie goes to the first
//! drawn, and a group of one port takes it. One random choice (`switch_random`) lets queues
//! drift as a random walk; sampling a second port and keeping the shorter makes the tail of the
//! queue lengths fall doubly exponentially instead of geometrically, at the cost of reading two
//! queues instead of the whole group (`switch_jsq`). Because each decision samples, synchronized
//! flows do not all herd onto the one momentarily shortest port as they do under exact JSQ.
//!
//! After routing converges around a failure, the two are drawn among the live ports (weight
//! above zero) only, uniformly: a degraded port's slower queue is what steers packets away from
//! it. No options.

use super::{PacketView, Scheme, SchemeInfo, SwitchPolicy};
use crate::net::Port;
use crate::rng::{below, SimRng};

/// The `switch_p2c` scheme.
pub struct Def;

impl Scheme for Def {
    const INFO: SchemeInfo = SchemeInfo::switch("switch_p2c", "packet")
        .adaptive()
        .summary("power of two choices: two random ports of the next-hop group, the shorter queue")
        .reading_queues()
        .honouring_weights();
    switch_side_scheme!(TwoChoices, |_| TwoChoices);
}

/// Two distinct indices of `0..n` (n >= 2), uniformly at random, in the order drawn: the
/// second is drawn among the other n - 1.
#[inline]
fn two_of(n: usize, rng: &mut SimRng) -> (usize, usize) {
    let a = below(rng, n as u32);
    let b = below(rng, n as u32 - 1);
    (a as usize, if b >= a { b as usize + 1 } else { b as usize })
}

/// Of ports `a` (drawn first) and `b`, the one with fewer queued bytes; `a` on a tie.
#[inline]
fn shorter(group: &[Port], a: usize, b: usize) -> usize {
    if group[b].queued_bytes < group[a].queued_bytes {
        b
    } else {
        a
    }
}

#[derive(Clone, Debug, Default)]
pub struct TwoChoices;

impl SwitchPolicy for TwoChoices {
    #[inline]
    fn choose(&mut self, _pkt: &PacketView, group: &[Port], rng: &mut SimRng) -> usize {
        if group.len() < 2 {
            return 0;
        }
        let (a, b) = two_of(group.len(), rng);
        shorter(group, a, b)
    }

    /// The same among the live ports (weight above zero); one live port takes every packet.
    fn weighted(&mut self, _: &PacketView, group: &[Port], w: &[u32], rng: &mut SimRng) -> usize {
        let live = |k: usize| {
            (0..w.len())
                .filter(|&i| w[i] > 0)
                .nth(k)
                .expect("routing leaves a live port")
        };
        let n = w.iter().filter(|&&x| x > 0).count();
        if n < 2 {
            return live(0);
        }
        let (a, b) = two_of(n, rng);
        shorter(group, live(a), live(b))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lb::testutil::{histogram, ports, view};
    use crate::rng::{rng_for, Stream};
    use crate::time::SimTime;

    fn picks(g: &[Port], w: Option<&[u32]>, n: usize, seed: u64) -> Vec<u32> {
        let mut rng = rng_for(seed, Stream::Switch, 0);
        let mut p = TwoChoices;
        let pkt = PacketView {
            weights: w,
            ..view(0, SimTime::ZERO)
        };
        histogram(
            (0..n).map(|_| match w {
                None => p.choose(&pkt, g, &mut rng),
                Some(w) => p.weighted(&pkt, g, w, &mut rng),
            }),
            g.len(),
        )
    }

    #[test]
    fn with_two_ports_it_always_takes_the_shorter_and_a_lone_port_takes_all() {
        for seed in 0..20 {
            assert_eq!(
                picks(&ports(1 << 20, &[500, 499]), None, 200, seed),
                [0, 200]
            );
            assert_eq!(picks(&ports(1 << 20, &[0, 1]), None, 200, seed), [200, 0]);
        }
        assert_eq!(picks(&ports(1 << 20, &[7]), None, 50, 1), [50]);
    }

    #[test]
    fn the_longest_of_n_ports_is_never_picked() {
        for n in 2..=16usize {
            for seed in 0..10u64 {
                // Distinct occupancies in a seed-dependent order; the longest somewhere inside.
                let queued: Vec<u64> = (0..n as u64)
                    .map(|i| crate::rng::mix64(seed * 100 + i) % 1000 * 16 + i)
                    .collect();
                let longest = (0..n).max_by_key(|&i| queued[i]).unwrap();
                let c = picks(&ports(1 << 20, &queued), None, 500, seed);
                assert_eq!(c[longest], 0, "n={n} {queued:?} {c:?}");
            }
        }
    }

    #[test]
    fn a_port_is_taken_as_often_as_it_is_drawn_with_a_longer_one() {
        // With distinct queues, the port with r longer ones is taken with probability
        // 2r / (n (n - 1)): here 1/2, 1/3, 1/6 and 0 for the shortest to the longest.
        let c = picks(&ports(1 << 20, &[20, 0, 30, 10]), None, 12_000, 3);
        let want = [2000, 6000, 0, 4000];
        for i in 0..4 {
            assert!(c[i].abs_diff(want[i]) < 250, "{c:?}");
        }
        assert_eq!(c[2], 0);
        // Equal queues: the first drawn wins, and it is uniform.
        let c = picks(&ports(1 << 20, &[5; 4]), None, 12_000, 4);
        assert!(c.iter().all(|&x| x.abs_diff(3000) < 200), "{c:?}");
    }

    #[test]
    fn after_convergence_only_live_ports_are_drawn() {
        // Ports 0 and 3 are dead and hold the shortest queues; the live ones keep the
        // two-choice distribution among themselves (2/3, 1/3, 0), whatever their weights.
        let g = ports(1 << 20, &[0, 10, 20, 0, 30]);
        let c = picks(&g, Some(&[0, 1, 4, 0, 2]), 9000, 5);
        assert_eq!((c[0], c[3], c[4]), (0, 0, 0), "{c:?}");
        assert!(c[1].abs_diff(6000) < 250, "{c:?}");
        // One live port takes every packet, however long its queue.
        let c = picks(&g, Some(&[0, 0, 0, 0, 1]), 100, 6);
        assert_eq!(c, [0, 0, 0, 0, 100]);
        // All live, equal weights: the same choice as without weights, draw for draw.
        let all = picks(&g, Some(&[1; 5]), 3000, 7);
        assert_eq!(all, picks(&g, None, 3000, 7));
    }
}
