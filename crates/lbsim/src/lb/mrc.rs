//! MRC-like multipath spraying (OCP's Multipath Reliable Connection as publicly described: an
//! 800G NIC over many planes, every packet of a connection on another of 128-256 entropy values,
//! a congested value swapped for a new one, a path that lost a packet left out, trimming). Each
//! flow owns `mrc_paths` labels (entropies: each a fixed path through hashing switches, its
//! plane chosen by the NIC's port policy) and sprays its packets over them in turn. An ACK
//! that comes back CE-marked swaps its label for a fresh one (its slot's next generation); a
//! NACK of a trimmed packet, or a header returned to the sender, retires the label for
//! `mrc_retire_us`, after which it rejoins the rotation. Not modelled: MRC's probing of a retired
//! path, and retiring a path on a silent drop found from SACK holes (here a dead link without
//! trimming reaches the flow as its transport's retransmission, and converged routing's weights
//! steer the hash off dead ports as for ECMP).

use super::config::{Opt, Options};
use super::ecmp::HashPolicy;
use super::{AckInfo, FlowCtx, HostPolicy, Scheme, SchemeInfo, SwitchCtx, ENTROPY_SPACE};
use crate::rng::SimRng;
use crate::time::SimTime;
use rand::Rng;

/// `load_balancing.mrc_paths`: path labels per flow (256: "hundreds of paths").
pub const PATHS: Opt<u32> = Opt::count("mrc_paths", 256, 1, ENTROPY_SPACE);
/// `load_balancing.mrc_retire_us`: how long a path that lost or had trimmed a packet stays out
/// (100 us, about ten base round trips of a two-tier fabric; MRC's own value is not public).
pub const RETIRE: Opt<SimTime> = Opt::micros("mrc_retire_us", 100.0);

/// The `mrc` scheme.
pub struct Def;

impl Scheme for Def {
    const INFO: SchemeInfo = SchemeInfo::host("mrc", "packet")
        .adaptive()
        .summary("MRC-like: spray in turn over mrc_paths labels, swap a marked one, retire a trimmed one for mrc_retire_us")
        .options(&[&PATHS.spec, &RETIRE.spec])
        .honouring_weights();
    type Config = MrcConfig;
    type Host = Box<Mrc>;
    type Switch = HashPolicy;
    fn config(o: &Options) -> MrcConfig {
        MrcConfig {
            paths: o.get(&PATHS),
            retire: o.get(&RETIRE),
        }
    }
    fn host(cfg: &MrcConfig, _: &FlowCtx, rng: &mut SimRng) -> Box<Mrc> {
        Box::new(Mrc::new(*cfg, rng.gen_range(0..ENTROPY_SPACE)))
    }
    fn switch(_: &MrcConfig, ctx: &SwitchCtx) -> HashPolicy {
        HashPolicy::new(ctx)
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MrcConfig {
    pub paths: u32,
    pub retire: SimTime,
}

impl Default for MrcConfig {
    fn default() -> Self {
        Def::config(&Options::defaults(&Def::INFO))
    }
}

#[derive(Clone, Debug)]
pub struct Mrc {
    cfg: MrcConfig,
    /// Offsets the flow's labels, so that flows between the same hosts differ.
    salt: u32,
    /// The next slot in turn.
    cursor: u32,
    /// Per slot, how many times its label was swapped (allocated at the first swap: a flow
    /// that never sees a mark keeps none).
    gens: Option<Box<[u16]>>,
    /// Labels out of the rotation and until when (empty until a trim).
    retired: Vec<(u32, SimTime)>,
}

impl Mrc {
    pub fn new(cfg: MrcConfig, salt: u32) -> Mrc {
        Mrc {
            cfg,
            salt,
            cursor: 0,
            gens: None,
            retired: Vec::new(),
        }
    }

    /// The label slot `i` holds now: slot + paths x generation, offset by the flow's salt, so
    /// that its slot can be read back from an echoed entropy.
    pub fn label(&self, i: u32) -> u32 {
        let g = self.gens.as_ref().map_or(0, |g| g[i as usize] as u32);
        let generations = ENTROPY_SPACE / self.cfg.paths;
        let raw = i + self.cfg.paths * (g % generations);
        (raw + self.salt) % ENTROPY_SPACE
    }

    fn slot(&self, entropy: u32) -> u32 {
        (entropy + ENTROPY_SPACE - self.salt % ENTROPY_SPACE) % ENTROPY_SPACE % self.cfg.paths
    }

    /// Labels out of the rotation now.
    pub fn retired_count(&self, now: SimTime) -> usize {
        self.retired.iter().filter(|r| r.1 > now).count()
    }
}

impl HostPolicy for Mrc {
    fn next_entropy(&mut self, now: SimTime, _: &mut SimRng) -> u32 {
        self.retired.retain(|r| r.1 > now);
        // Every label retired: the rotation goes on regardless.
        for _ in 0..self.cfg.paths {
            let e = self.label(self.cursor);
            self.cursor = (self.cursor + 1) % self.cfg.paths;
            if !self.retired.iter().any(|r| r.0 == e) {
                return e;
            }
        }
        let e = self.label(self.cursor);
        self.cursor = (self.cursor + 1) % self.cfg.paths;
        e
    }

    fn on_ack(&mut self, ack: AckInfo) {
        if ack.loss {
            let until = ack.now + self.cfg.retire;
            match self.retired.iter_mut().find(|r| r.0 == ack.entropy) {
                Some(r) => r.1 = r.1.max(until),
                None => self.retired.push((ack.entropy, until)),
            }
        } else if ack.ecn {
            // Swapped once per mark of the label it holds (a later mark of an older label of
            // the slot leaves the new one be).
            let i = self.slot(ack.entropy);
            if self.label(i) == ack.entropy {
                let n = self.cfg.paths as usize;
                let g = self
                    .gens
                    .get_or_insert_with(|| vec![0; n].into_boxed_slice());
                g[i as usize] = g[i as usize].wrapping_add(1);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::{rng_for, Stream};

    fn ack(entropy: u32, loss: bool, now_us: u64) -> AckInfo {
        AckInfo {
            entropy,
            ecn: loss,
            loss,
            sent_at: SimTime::ZERO,
            now: SimTime::from_us(now_us),
        }
    }

    #[test]
    fn labels_go_in_turn_a_trimmed_one_sits_out_and_a_marked_one_is_swapped() {
        let mut rng = rng_for(3, Stream::Flow, 0);
        let cfg = MrcConfig {
            paths: 4,
            retire: SimTime::from_us(100),
        };
        let mut p = Mrc::new(cfg, 65_530);
        let labels: Vec<u32> = (0..4).map(|i| p.label(i)).collect();
        // The salt wraps the labels round the entropy space; each reads back to its slot.
        assert_eq!(labels, [65_530, 65_531, 65_532, 65_533]);
        assert!((0..4).all(|i| p.slot(labels[i as usize]) == i));
        let t = |us| SimTime::from_us(us);
        let got: Vec<u32> = (0..8).map(|_| p.next_entropy(t(0), &mut rng)).collect();
        assert_eq!(got, [&labels[..], &labels[..]].concat());
        // A trim NACK on label 1 retires it for 100 us.
        p.on_ack(ack(labels[1], true, 5));
        let got: Vec<u32> = (0..6).map(|_| p.next_entropy(t(50), &mut rng)).collect();
        assert_eq!(
            got,
            [labels[0], labels[2], labels[3], labels[0], labels[2], labels[3]]
        );
        assert_eq!(p.retired_count(t(50)), 1);
        // Back at 105 us, in its turn.
        assert_eq!(p.next_entropy(t(105), &mut rng), labels[0]);
        assert_eq!(p.next_entropy(t(105), &mut rng), labels[1]);
        // A marked ACK swaps slot 2's label for its next generation (4 further on, wrapped);
        // a second mark of the old label changes nothing.
        p.on_ack(AckInfo {
            ecn: true,
            ..ack(labels[2], false, 110)
        });
        p.on_ack(AckInfo {
            ecn: true,
            ..ack(labels[2], false, 111)
        });
        assert_eq!(p.label(2), 0);
        assert_eq!(p.slot(0), 2);
        assert_eq!(p.next_entropy(t(112), &mut rng), 0);
        // All retired: the rotation goes on.
        for i in 0..4 {
            p.on_ack(ack(p.label(i), true, 200));
        }
        assert_eq!(p.next_entropy(t(201), &mut rng), labels[3]);
    }

    #[test]
    fn a_flow_spreads_evenly_over_its_labels() {
        let mut rng = rng_for(3, Stream::Flow, 1);
        let mut a = Mrc::new(MrcConfig::default(), 1);
        let mut count = std::collections::BTreeMap::new();
        for _ in 0..256 * 4 {
            *count
                .entry(a.next_entropy(SimTime::ZERO, &mut rng))
                .or_insert(0) += 1;
        }
        assert_eq!(count.len(), 256);
        assert!(count.values().all(|&c| c == 4));
    }
}
