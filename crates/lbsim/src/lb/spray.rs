//! Oblivious packet spraying (OPS, the study's "Host Pkt"): a fresh uniform entropy per packet,
//! with no feedback and no failure handling. Switches hash the label as in ECMP.

use super::config::Options;
use super::ecmp::HashPolicy;
use super::{FlowCtx, HostPolicy, Scheme, SchemeInfo, SwitchCtx, ENTROPY_SPACE};
use crate::rng::SimRng;
use crate::time::SimTime;
use rand::Rng;

/// The `host_spray` scheme.
pub struct Def;

impl Scheme for Def {
    const INFO: SchemeInfo = SchemeInfo::host("host_spray", "packet")
        .summary("oblivious packet spraying (OPS): a fresh random entropy per packet")
        .honouring_weights();
    type Config = ();
    type Host = Oblivious;
    type Switch = HashPolicy;
    fn config(_: &Options) {}
    fn host(_: &(), _: &FlowCtx, _: &mut SimRng) -> Oblivious {
        Oblivious
    }
    fn switch(_: &(), ctx: &SwitchCtx) -> HashPolicy {
        HashPolicy::new(ctx)
    }
    /// No per-flow state: every flow shares one policy.
    fn shared_host(_: &()) -> Option<Oblivious> {
        Some(Oblivious)
    }
}

#[derive(Clone, Debug, Default)]
pub struct Oblivious;

impl HostPolicy for Oblivious {
    #[inline]
    fn next_entropy(&mut self, _now: SimTime, rng: &mut SimRng) -> u32 {
        rng.gen_range(0..ENTROPY_SPACE)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::{rng_for, Stream};

    #[test]
    fn entropies_are_spread_uniformly() {
        let mut rng = rng_for(3, Stream::Host, 0);
        let mut p = Oblivious;
        let mut low = 0;
        for _ in 0..10_000 {
            if p.next_entropy(SimTime::ZERO, &mut rng) < ENTROPY_SPACE / 2 {
                low += 1;
            }
        }
        assert!((4800..5200).contains(&low), "{low}");
    }
}
