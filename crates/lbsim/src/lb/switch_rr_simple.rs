//! Plain switch round-robin (the study's "Switch Pkt" without reshuffling): the round-robin of
//! `switch_rr` in one random order drawn at first use and never reshuffled, so synchronized
//! flows can stay in lock-step on the same ports. No options.

use super::config::Options;
use super::ecmp::FixedEntropy;
use super::switch_rr::{RoundRobin, RoundRobinConfig};
use super::{FlowCtx, Scheme, SchemeInfo, Side, SwitchCtx};
use crate::rng::SimRng;

/// The `switch_rr_simple` scheme.
pub struct Def;

impl Scheme for Def {
    const INFO: SchemeInfo = SchemeInfo {
        name: "switch_rr_simple",
        side: Side::Switch,
        granularity: "packet",
        summary: "plain switch round-robin in a fixed random order",
        options: &[],
        reads_queues: false,
        honours_weights: true,
        own_switch_decoding: false,
    };
    type Config = ();
    type Host = FixedEntropy;
    type Switch = RoundRobin;
    fn config(_: &Options) {}
    fn host(_: &(), _: &FlowCtx, rng: &mut SimRng) -> FixedEntropy {
        FixedEntropy::new(rng)
    }
    fn switch(_: &(), _: &SwitchCtx) -> RoundRobin {
        RoundRobin::new(RoundRobinConfig {
            reshuffle_after_wraps: 0,
        })
    }
}
