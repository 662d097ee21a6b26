//! Ofan, switch destination rotation (the study's switch DR): each switch rotates the packets
//! bound for one destination over its uplinks, so the traffic toward each destination is spread
//! exactly evenly and deterministically (queues stay O(1) instead of growing with the message).
//!
//! A ToR (or leaf) keeps a pointer per (destination ToR, class); an aggregation switch per
//! (destination pod, class); classes are data and ACK. Each pointer walks a schedule of egress
//! ports: an IWRR schedule ([`iwrr_schedule`]) built when the destination is first seen, walked
//! from a random slot; the ACK pointer starts half a schedule away from the data pointer. Cores
//! and downward hops have one choice and never get here.
//!
//! Weights are all 1 without failures (every uplink reaches every destination), so a schedule is
//! a random order of the uplinks. After routing converges around a failure the weights are the
//! converged path capacities (0 for a dead port; a ToR uplink in proportion to the cores it
//! reaches that still reach the destination), and schedules and pointers are rebuilt. Before
//! convergence the old schedule is kept, so packets keep going onto a dead port. No options.

use super::{PacketView, Scheme, SchemeInfo, SwitchCtx, SwitchPolicy};
use crate::net::{GroupMap, Port};
use crate::rng::SimRng;
use rand::seq::SliceRandom;
use rand::Rng;

/// The `ofan` scheme.
pub struct Def;

impl Scheme for Def {
    const INFO: SchemeInfo = SchemeInfo::switch("ofan", "packet")
        .rotating()
        .summary("switch rotation per destination ToR/pod and class over an IWRR schedule")
        .honouring_weights();
    switch_side_scheme!(Ofan, |ctx| Ofan::new(ctx));
}

fn gcd(a: u32, b: u32) -> u32 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// Interleaved weighted round-robin over ports with `weights`: divide the weights by their GCD,
/// shuffle the port order once, then emit, round after round, every port that has weight left.
/// Weights 2,2,2,1 give 7 slots with the fourth port once. Zero-weight ports never appear; all
/// zero gives an empty schedule. The length is the sum of the reduced weights.
pub fn iwrr_schedule(weights: &[u32], rng: &mut SimRng) -> Vec<u32> {
    let g = weights.iter().fold(0, |g, &w| gcd(g, w));
    if g == 0 {
        return Vec::new();
    }
    let mut left: Vec<u32> = weights.iter().map(|w| w / g).collect();
    let mut order: Vec<u32> = (0..weights.len() as u32).collect();
    order.shuffle(rng);
    let total: u32 = left.iter().sum();
    let mut out = Vec::with_capacity(total as usize);
    while out.len() < total as usize {
        for &p in &order {
            if left[p as usize] > 0 {
                left[p as usize] -= 1;
                out.push(p);
            }
        }
    }
    out
}

#[derive(Clone, Debug, Default)]
struct Rotation {
    /// Empty until the destination is first seen.
    schedule: Vec<u32>,
    /// Next slot for data (0) and ACKs (1).
    ptr: [u32; 2],
    /// The routing epoch the schedule was built in.
    epoch: u32,
}

impl Rotation {
    /// (Re)builds the schedule from `weights` and restarts both pointers at random.
    fn build(&mut self, weights: &[u32], epoch: u32, rng: &mut SimRng) {
        self.schedule = iwrr_schedule(weights, rng);
        self.epoch = epoch;
        let len = self.schedule.len() as u32;
        let start = if len == 0 { 0 } else { rng.gen_range(0..len) };
        // Half a schedule away, in plain modular arithmetic: right for any length.
        self.ptr = [start, (start + len / 2) % len.max(1)];
    }

    fn next(&mut self, is_ack: bool) -> usize {
        let c = is_ack as usize;
        let slot = self.ptr[c] as usize;
        self.ptr[c] = if slot + 1 == self.schedule.len() {
            0
        } else {
            slot as u32 + 1
        };
        self.schedule[slot] as usize
    }
}

#[derive(Clone, Debug)]
pub struct Ofan {
    /// The destination key: the destination's group at this switch's tier (its ToR or leaf at
    /// the first tier, its pod at the aggregation tier).
    keys: GroupMap,
    rotations: Vec<Rotation>,
}

impl Ofan {
    pub fn new(ctx: &SwitchCtx) -> Self {
        let (keys, n) = ctx.topology.groups(ctx.tier());
        Ofan {
            keys: keys.clone(),
            rotations: vec![Rotation::default(); n as usize],
        }
    }
}

impl SwitchPolicy for Ofan {
    #[inline]
    fn choose(&mut self, pkt: &PacketView, group: &[Port], rng: &mut SimRng) -> usize {
        let r = &mut self.rotations[self.keys.of(pkt.dst) as usize];
        if r.schedule.is_empty() || r.epoch != pkt.epoch {
            r.build(&vec![1; group.len()], pkt.epoch, rng);
        }
        r.next(pkt.is_ack)
    }

    /// After routing converged around a failure: the schedule is the IWRR of the converged
    /// weights, rebuilt (pointers re-randomized) whenever routing changes. At an aggregation
    /// switch the pointer is per destination pod; the weights of the first destination seen in
    /// that pod after the change are used.
    fn weighted(
        &mut self,
        pkt: &PacketView,
        _: &[Port],
        weights: &[u32],
        rng: &mut SimRng,
    ) -> usize {
        let r = &mut self.rotations[self.keys.of(pkt.dst) as usize];
        if r.schedule.is_empty() || r.epoch != pkt.epoch {
            r.build(weights, pkt.epoch, rng);
        }
        r.next(pkt.is_ack)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::HostId;
    use crate::lb::testutil;
    use crate::net::Topology;
    use crate::rng::{rng_for, Stream};
    use crate::time::SimTime;

    fn group(n: usize) -> Vec<Port> {
        testutil::ports(1, &vec![0; n])
    }

    fn view(dst: u32, is_ack: bool) -> PacketView<'static> {
        PacketView {
            weights: None,
            epoch: 0,
            src: HostId(0),
            dst: HostId(dst),
            flow_key: 0,
            entropy: 0,
            is_ack,
            now: SimTime::ZERO,
        }
    }

    fn counts(s: &[u32], n: usize) -> Vec<u32> {
        let mut c = vec![0; n];
        for &p in s {
            c[p as usize] += 1;
        }
        c
    }

    #[test]
    fn iwrr_reduces_by_the_gcd_and_interleaves() {
        let mut rng = rng_for(1, Stream::Switch, 0);
        for w in [[2, 2, 2, 1], [1600, 1600, 1600, 800]] {
            let s = iwrr_schedule(&w, &mut rng);
            assert_eq!(s.len(), 7, "{s:?}");
            assert_eq!(counts(&s, 4), vec![2, 2, 2, 1]);
            // Round 1 is every port once, round 2 the three with weight left.
            let mut first = s[..4].to_vec();
            first.sort();
            assert_eq!(first, vec![0, 1, 2, 3]);
            assert!(!s[4..].contains(&3));
            // Within each round the order is the same shuffled order.
            let second: Vec<u32> = s[..4].iter().copied().filter(|&p| p != 3).collect();
            assert_eq!(second, s[4..].to_vec());
        }
        assert_eq!(iwrr_schedule(&[3, 0, 6], &mut rng).len(), 3);
        assert!(!iwrr_schedule(&[3, 0, 6], &mut rng).contains(&1));
        assert!(iwrr_schedule(&[0, 0], &mut rng).is_empty());
        assert_eq!(iwrr_schedule(&[5, 5, 5], &mut rng).len(), 3);
    }

    #[test]
    fn iwrr_shuffles_the_port_order() {
        let mut rng = rng_for(1, Stream::Switch, 1);
        let mut firsts = [0u32; 4];
        for _ in 0..400 {
            firsts[iwrr_schedule(&[1, 1, 1, 1], &mut rng)[0] as usize] += 1;
        }
        assert!(firsts.iter().all(|&c| (60..140).contains(&c)), "{firsts:?}");
    }

    /// Ofan at the first switch of `tier`.
    fn ofan(t: &Topology, tier: u8) -> Ofan {
        let s = t.switches.iter().position(|s| s.tier == tier).unwrap();
        Ofan::new(&SwitchCtx {
            topology: t,
            switch: crate::ids::SwitchId(s as u32),
            salt: 0,
        })
    }

    fn fat_tree(k: u32) -> Topology {
        Topology::fat_tree(k, crate::net::topology::TEST_LINKS)
    }

    #[test]
    fn each_destination_rotates_over_every_uplink() {
        let mut rng = rng_for(1, Stream::Switch, 2);
        let mut o = ofan(&fat_tree(8), 0);
        let g = group(4);
        // Hosts 40..43 share ToR 10: one rotation. Interleave another destination.
        let mut a = Vec::new();
        for i in 0..40u32 {
            a.push(o.choose(&view(40 + i % 4, false), &g, &mut rng) as u32);
            o.choose(&view(100, false), &g, &mut rng);
        }
        for w in a.chunks(4) {
            assert_eq!(counts(w, 4), vec![1, 1, 1, 1], "{a:?}");
            assert_eq!(w, &a[..4]);
        }
    }

    #[test]
    fn the_ack_pointer_starts_half_a_schedule_away() {
        let leaf_spine = Topology::leaf_spine(
            4,
            3,
            5,
            crate::net::topology::TEST_LINKS,
            crate::net::topology::TEST_LINKS.rate,
        );
        for (n, topo, tier, dst) in [
            (4usize, fat_tree(8), 1, 90u32),
            (3, fat_tree(6), 0, 20),
            (5, leaf_spine, 0, 9),
        ] {
            for seed in 0..10 {
                let mut rng = rng_for(seed, Stream::Switch, 3);
                let mut o = ofan(&topo, tier);
                let g = group(n);
                let data: Vec<usize> = (0..n)
                    .map(|_| o.choose(&view(dst, false), &g, &mut rng))
                    .collect();
                let acks: Vec<usize> = (0..n)
                    .map(|_| o.choose(&view(dst, true), &g, &mut rng))
                    .collect();
                // Both walk the same schedule; the ACK walk is the data walk shifted by n/2.
                let shifted: Vec<usize> = (0..n).map(|i| data[(i + n / 2) % n]).collect();
                assert_eq!(acks, shifted, "n={n} seed={seed}");
            }
        }
    }

    #[test]
    fn the_start_slot_is_random() {
        let g = group(4);
        let mut firsts = [0u32; 4];
        for seed in 0..200 {
            let mut rng = rng_for(seed, Stream::Switch, 4);
            let mut o = ofan(&fat_tree(8), 1);
            firsts[o.choose(&view(0, false), &g, &mut rng)] += 1;
        }
        assert!(firsts.iter().all(|&c| c > 25), "{firsts:?}");
    }
}
