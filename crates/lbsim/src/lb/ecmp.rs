//! ECMP: the host keeps one entropy for the flow's life and every switch hashes (5-tuple, entropy,
//! its own salt) onto the next-hop group. Per-switch salts avoid hash polarization (the same
//! choice at every tier). The hash is also what routes host-sprayed packets: a label names a path.

use super::{
    weighted_pick, HostPolicy, PacketView, Scheme, SchemeInfo, SwitchCtx, SwitchPolicy,
    ENTROPY_SPACE,
};
use crate::net::Port;
use crate::rng::{mix64, SimRng};
use crate::time::SimTime;
use rand::Rng;

/// The `ecmp` scheme.
pub struct Def;

impl Scheme for Def {
    const INFO: SchemeInfo = SchemeInfo::switch("ecmp", "flow")
        .summary("hash of the 5-tuple and a per-flow entropy at every switch")
        .honouring_weights();
    switch_side_scheme!(HashPolicy, |ctx| HashPolicy::new(ctx));
}

/// Host side of ECMP (and of the switch-decided schemes): one random entropy per flow.
#[derive(Clone, Debug)]
pub struct FixedEntropy {
    pub entropy: u32,
}

impl FixedEntropy {
    pub fn new(rng: &mut SimRng) -> Self {
        FixedEntropy {
            entropy: rng.gen_range(0..ENTROPY_SPACE),
        }
    }
}

impl HostPolicy for FixedEntropy {
    fn next_entropy(&mut self, _now: SimTime, _rng: &mut SimRng) -> u32 {
        self.entropy
    }
}

/// Switch side: a salted hash modulo the group size.
#[derive(Clone, Debug)]
pub struct HashPolicy {
    pub salt: u64,
}

impl HashPolicy {
    /// The hash every host-decided scheme's switches use (its salt is the switch's).
    pub fn new(ctx: &SwitchCtx) -> Self {
        HashPolicy { salt: ctx.salt }
    }

    #[inline]
    pub fn hash(&self, flow_key: u64, entropy: u32) -> u64 {
        mix64(flow_key ^ mix64(self.salt ^ ((entropy as u64) << 32)))
    }
}

/// Maps a hash uniformly onto 0..n by multiply-shift (no division on the hot path).
#[inline]
pub fn bucket(hash: u64, n: usize) -> usize {
    (((hash >> 32) * n as u64) >> 32) as usize
}

impl SwitchPolicy for HashPolicy {
    #[inline]
    fn choose(&mut self, pkt: &PacketView, group: &[Port], _rng: &mut SimRng) -> usize {
        bucket(self.hash(pkt.flow_key, pkt.entropy), group.len())
    }

    /// W-ECMP: the same hash, mapped onto the ports in proportion to their weights.
    fn weighted(&mut self, pkt: &PacketView, _: &[Port], w: &[u32], _: &mut SimRng) -> usize {
        weighted_pick(self.hash(pkt.flow_key, pkt.entropy), w)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::{rng_for, Stream};

    #[test]
    fn fixed_entropy_never_changes() {
        let mut rng = rng_for(1, Stream::Flow, 0);
        let mut p = FixedEntropy::new(&mut rng);
        let e = p.next_entropy(SimTime::ZERO, &mut rng);
        for _ in 0..100 {
            assert_eq!(p.next_entropy(SimTime::ZERO, &mut rng), e);
        }
    }

    #[test]
    fn hash_spreads_flows_like_balls_into_bins() {
        // 8000 flows over 8 ports: each port's share is within 10% of 1000 (a fair hash's
        // binomial standard deviation is about 30).
        let p = HashPolicy { salt: 42 };
        let mut counts = [0u32; 8];
        for f in 0..8000u64 {
            let h = p.hash(mix64(f), 7);
            counts[bucket(h, 8)] += 1;
        }
        for c in counts {
            assert!((900..1100).contains(&c), "{counts:?}");
        }
    }

    #[test]
    fn salts_decorrelate_switches() {
        let a = HashPolicy { salt: 1 };
        let b = HashPolicy { salt: 2 };
        let same = (0..1000u64)
            .filter(|f| bucket(a.hash(*f, 0), 4) == bucket(b.hash(*f, 0), 4))
            .count();
        // Independent choices agree about a quarter of the time.
        assert!((200..300).contains(&same), "{same}");
    }
}
