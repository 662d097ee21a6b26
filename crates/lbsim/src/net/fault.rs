//! Per-port fault state: what happens to a packet that reaches the end of a failed link. The
//! failure schedule that sets it lives in `crate::failure`.

use rand::Rng;

use crate::rng::SimRng;

/// Gilbert-Elliott parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GilbertElliott {
    pub loss_good: f64,
    pub loss_bad: f64,
    pub p_good_to_bad: f64,
    pub p_bad_to_good: f64,
}

/// Per-port fault state, consulted when a packet reaches the end of the link.
#[derive(Clone, Debug)]
pub enum Fault {
    Healthy,
    Down,
    Flaky {
        ge: GilbertElliott,
        bad: bool,
        rng: Box<SimRng>,
    },
}

impl Fault {
    /// Whether the next packet to cross is lost.
    #[inline]
    pub fn loses(&mut self) -> bool {
        match self {
            Fault::Healthy => false,
            Fault::Down => true,
            Fault::Flaky { ge, bad, rng } => {
                let flip = if *bad {
                    ge.p_bad_to_good
                } else {
                    ge.p_good_to_bad
                };
                if rng.gen_bool(flip) {
                    *bad = !*bad;
                }
                let p = if *bad { ge.loss_bad } else { ge.loss_good };
                rng.gen_bool(p)
            }
        }
    }
}
