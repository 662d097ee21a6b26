//! Plain switch round-robin (the study's "Switch Pkt" without reshuffling): the round-robin of
//! `switch_rr` in one random order drawn at first use and never reshuffled, so synchronized
//! flows can stay in lock-step on the same ports. No options.

use super::switch_rr::{RoundRobin, RoundRobinConfig};
use super::{Scheme, SchemeInfo};

/// The `switch_rr_simple` scheme.
pub struct Def;

impl Scheme for Def {
    const INFO: SchemeInfo = SchemeInfo::switch("switch_rr_simple", "packet")
        .summary("plain switch round-robin in a fixed random order")
        .honouring_weights();
    switch_side_scheme!(RoundRobin, |_| {
        RoundRobin::new(RoundRobinConfig {
            reshuffle_after_wraps: 0,
        })
    });
}
