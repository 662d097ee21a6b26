//! MPTCP-like subflows (the study's "Host Subflow"): a flow opens `subflows` subflows (the study:
//! 4), each with its own fixed random entropy, and stripes its packets over them round-robin. With
//! an idealized constant-rate sender no subflow ever lacks window, so round-robin is exactly what
//! "send on whichever subflow has window" reduces to.

use super::config::{Opt, Options};
use super::ecmp::HashPolicy;
use super::{FlowCtx, HostPolicy, Scheme, SchemeInfo, SwitchCtx, ENTROPY_SPACE};
use crate::rng::SimRng;
use crate::time::SimTime;
use rand::Rng;

/// `load_balancing.subflows`: subflows per flow, 1 to 1024 (4, the study's setting).
pub const SUBFLOWS: Opt<u32> = Opt::count("subflows", 4, 1, 1024);

/// The `subflow` scheme.
pub struct Def;

impl Scheme for Def {
    const INFO: SchemeInfo = SchemeInfo::host("subflow", "subflow")
        .summary(
            "MPTCP-like: load_balancing.subflows (4) fixed entropies, packets striped round-robin",
        )
        .options(&[&SUBFLOWS.spec])
        .honouring_weights();
    type Config = SubflowConfig;
    type Host = Box<Subflows>;
    type Switch = HashPolicy;
    fn config(o: &Options) -> SubflowConfig {
        SubflowConfig {
            subflows: o.get(&SUBFLOWS),
        }
    }
    fn host(cfg: &SubflowConfig, _: &FlowCtx, rng: &mut SimRng) -> Box<Subflows> {
        Box::new(Subflows::new(*cfg, rng))
    }
    fn switch(_: &SubflowConfig, ctx: &SwitchCtx) -> HashPolicy {
        HashPolicy::new(ctx)
    }
}

/// The scheme's options.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SubflowConfig {
    pub subflows: u32,
}

impl Default for SubflowConfig {
    fn default() -> Self {
        Def::config(&Options::defaults(&Def::INFO))
    }
}

#[derive(Clone, Debug)]
pub struct Subflows {
    entropies: Vec<u32>,
    next: usize,
}

impl Subflows {
    pub fn new(cfg: SubflowConfig, rng: &mut SimRng) -> Self {
        let n = cfg.subflows.max(1) as usize;
        Subflows {
            entropies: (0..n).map(|_| rng.gen_range(0..ENTROPY_SPACE)).collect(),
            next: 0,
        }
    }
}

impl HostPolicy for Subflows {
    #[inline]
    fn next_entropy(&mut self, _now: SimTime, _rng: &mut SimRng) -> u32 {
        let e = self.entropies[self.next];
        self.next = (self.next + 1) % self.entropies.len();
        e
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::{rng_for, Stream};

    #[test]
    fn packets_stripe_round_robin_over_fixed_labels() {
        let mut rng = rng_for(5, Stream::Flow, 0);
        let mut p = Subflows::new(SubflowConfig { subflows: 4 }, &mut rng);
        let first: Vec<u32> = (0..4)
            .map(|_| p.next_entropy(SimTime::ZERO, &mut rng))
            .collect();
        for _ in 0..25 {
            let again: Vec<u32> = (0..4)
                .map(|_| p.next_entropy(SimTime::ZERO, &mut rng))
                .collect();
            assert_eq!(again, first);
        }
        // Four independent draws from 65536 labels: almost surely distinct.
        let mut d = first.clone();
        d.sort();
        d.dedup();
        assert_eq!(d.len(), 4, "{first:?}");
    }

    #[test]
    fn one_subflow_is_ecmp() {
        let mut rng = rng_for(5, Stream::Flow, 1);
        let mut p = Subflows::new(SubflowConfig { subflows: 1 }, &mut rng);
        let e = p.next_entropy(SimTime::ZERO, &mut rng);
        assert!((0..50).all(|_| p.next_entropy(SimTime::ZERO, &mut rng) == e));
    }
}
