//! REPS, Recycled Entropy Packet Spraying (Bonato et al., arXiv 2407.21625; the study's "Host
//! AR"): the host sprays, but re-uses entropies whose ACKs came back unmarked, so packets follow
//! paths known to be good, and simply forgets the ones that came back ECN-marked.
//!
//! Per flow, a ring of 8 (entropy, valid) slots. An unmarked ACK writes its entropy at the head
//! and advances it (overwriting the oldest when full). A packet uses a random entropy while
//! exploring, else the oldest valid cached one (clearing its bit), else a random one (which is also
//! what the first RTT does). A timeout that looks like a failure freezes the flow: packets then
//! cycle through the cached entropies, valid or not, while good ACKs keep being recorded; after
//! `reps_freeze_us` the ring is cleared and the next `reps_explore_packets` use random entropies.
//!
//! Timeouts follow the paper's two rules. With trimming (`transport.loss_recovery = "trim"`) a
//! congested queue trims instead of dropping, so a timeout means a packet vanished: every timeout
//! freezes. Without it, a timeout freezes only if the largest RTT seen before it is under 1.65 x
//! the smallest (a queue that long would explain the timeout without a failure). Trim NACKs, like
//! ECN-marked ACKs, are not recycled. The idealized transport of the study never times out, so
//! freezing only matters once a transport calls `on_timeout`.

use super::config::{Opt, Options};
use super::ecmp::HashPolicy;
use super::{AckInfo, FlowCtx, HostPolicy, Scheme, SchemeInfo, SwitchCtx, ENTROPY_SPACE};
use crate::rng::SimRng;
use crate::time::SimTime;
use rand::Rng;

/// `load_balancing.reps_freeze_us`: how long a flow stays frozen after a failure-like timeout
/// (10 ms, REPS).
pub const FREEZE: Opt<SimTime> = Opt::micros("reps_freeze_us", 10_000.0);
/// `load_balancing.reps_explore_packets`: random entropies sent after leaving the frozen state
/// (16, REPS).
pub const EXPLORE_PACKETS: Opt<u32> = Opt::count("reps_explore_packets", 16, 0, u32::MAX);

/// The `reps` scheme.
pub struct Def;

impl Scheme for Def {
    const INFO: SchemeInfo = SchemeInfo::host("reps", "packet")
        .adaptive()
        .summary("REPS: reuse entropies of unmarked ACKs (8-slot ring), explore otherwise, freeze on failure")
        .options(&[&FREEZE.spec, &EXPLORE_PACKETS.spec])
        .honouring_weights();
    type Config = RepsConfig;
    type Host = Box<Reps>;
    type Switch = HashPolicy;
    fn config(o: &Options) -> RepsConfig {
        RepsConfig {
            freeze: o.get(&FREEZE),
            explore_packets: o.get(&EXPLORE_PACKETS),
            trimming: false,
        }
    }
    fn host(cfg: &RepsConfig, ctx: &FlowCtx, _: &mut SimRng) -> Box<Reps> {
        Box::new(Reps::new(RepsConfig {
            trimming: ctx.trimming,
            ..*cfg
        }))
    }
    fn switch(_: &RepsConfig, ctx: &SwitchCtx) -> HashPolicy {
        HashPolicy::new(ctx)
    }
}

const SLOTS: usize = 8;
/// A timeout is taken for a failure only if max RTT < FREEZE_RTT_RATIO x min RTT (the paper).
const FREEZE_RTT_RATIO: f64 = 1.65;

/// REPS parameters (the options above); defaults from the REPS paper.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RepsConfig {
    pub freeze: SimTime,
    pub explore_packets: u32,
    /// The fabric trims (set from the transport, not a `load_balancing` key): every timeout
    /// is taken for a failure.
    pub trimming: bool,
}

impl Default for RepsConfig {
    fn default() -> Self {
        Def::config(&Options::defaults(&Def::INFO))
    }
}

#[derive(Clone, Debug)]
pub struct Reps {
    cfg: RepsConfig,
    evs: [u32; SLOTS],
    /// Bit i: slot i holds an entropy not yet reused.
    valid: u8,
    /// Bit i: slot i was ever written (what a frozen flow cycles over).
    filled: u8,
    /// Next slot to write; also the oldest entry when the ring is full.
    head: u8,
    explore: u32,
    frozen_until: Option<SimTime>,
    cursor: u8,
    min_rtt: SimTime,
    max_rtt: SimTime,
}

impl Reps {
    pub fn new(cfg: RepsConfig) -> Self {
        Reps {
            cfg,
            evs: [0; SLOTS],
            valid: 0,
            filled: 0,
            head: 0,
            explore: 0,
            frozen_until: None,
            cursor: 0,
            min_rtt: SimTime::MAX,
            max_rtt: SimTime::ZERO,
        }
    }

    pub fn is_frozen(&self) -> bool {
        self.frozen_until.is_some()
    }

    /// Number of cached entropies still valid for reuse.
    pub fn valid_count(&self) -> u32 {
        self.valid.count_ones()
    }
}

impl HostPolicy for Reps {
    fn next_entropy(&mut self, now: SimTime, rng: &mut SimRng) -> u32 {
        if let Some(until) = self.frozen_until {
            if now < until {
                // Cycle over every slot ever written, in ring order.
                for _ in 0..SLOTS {
                    let i = self.cursor as usize;
                    self.cursor = ((i + 1) % SLOTS) as u8;
                    if self.filled & (1 << i) != 0 {
                        return self.evs[i];
                    }
                }
                return rng.gen_range(0..ENTROPY_SPACE);
            }
            self.frozen_until = None;
            self.valid = 0;
            self.filled = 0;
            self.explore = self.cfg.explore_packets;
        }
        if self.explore > 0 {
            self.explore -= 1;
            return rng.gen_range(0..ENTROPY_SPACE);
        }
        if self.valid != 0 {
            // The oldest valid entry: scan from the head (the oldest slot) forward.
            for k in 0..SLOTS {
                let i = (self.head as usize + k) % SLOTS;
                if self.valid & (1 << i) != 0 {
                    self.valid &= !(1 << i);
                    return self.evs[i];
                }
            }
        }
        rng.gen_range(0..ENTROPY_SPACE)
    }

    fn on_ack(&mut self, ack: AckInfo) {
        let rtt = ack.now - ack.sent_at;
        self.min_rtt = self.min_rtt.min(rtt);
        self.max_rtt = self.max_rtt.max(rtt);
        if ack.ecn {
            return;
        }
        let i = self.head as usize;
        self.evs[i] = ack.entropy;
        self.valid |= 1 << i;
        self.filled |= 1 << i;
        self.head = ((i + 1) % SLOTS) as u8;
    }

    fn on_timeout(&mut self, now: SimTime) {
        if self.frozen_until.is_some() {
            return;
        }
        let no_samples = self.min_rtt == SimTime::MAX;
        if self.cfg.trimming
            || no_samples
            || (self.max_rtt.0 as f64) < FREEZE_RTT_RATIO * self.min_rtt.0 as f64
        {
            self.frozen_until = Some(now.saturating_add(self.cfg.freeze));
            self.cursor = self.head;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::{rng_for, Stream};

    fn ack(entropy: u32, ecn: bool, rtt_us: u64, now_us: u64) -> AckInfo {
        AckInfo {
            entropy,
            ecn,
            loss: false,
            sent_at: SimTime::from_us(now_us - rtt_us),
            now: SimTime::from_us(now_us),
        }
    }

    #[test]
    fn unmarked_acks_are_recycled_oldest_first_and_marked_ones_dropped() {
        let mut rng = rng_for(2, Stream::Flow, 0);
        let mut p = Reps::new(RepsConfig::default());
        p.on_ack(ack(11, false, 5, 10));
        p.on_ack(ack(12, true, 5, 10));
        p.on_ack(ack(13, false, 5, 10));
        let t = SimTime::from_us(10);
        assert_eq!(p.next_entropy(t, &mut rng), 11);
        assert_eq!(p.next_entropy(t, &mut rng), 13);
        assert_eq!(p.valid_count(), 0);
        // Empty ring: random entropies, not the recycled ones.
        let r: Vec<u32> = (0..4).map(|_| p.next_entropy(t, &mut rng)).collect();
        assert!(
            r.iter().all(|&e| e != 11 && e != 13 && e < ENTROPY_SPACE),
            "{r:?}"
        );
    }

    #[test]
    fn a_full_ring_overwrites_its_oldest_entries() {
        let mut rng = rng_for(2, Stream::Flow, 1);
        let mut p = Reps::new(RepsConfig::default());
        for e in 0..10 {
            p.on_ack(ack(100 + e, false, 5, 10));
        }
        let t = SimTime::from_us(10);
        let got: Vec<u32> = (0..8).map(|_| p.next_entropy(t, &mut rng)).collect();
        assert_eq!(got, (102..110).collect::<Vec<u32>>());
    }

    #[test]
    fn a_good_path_keeps_being_reused_and_a_congested_one_is_abandoned() {
        // Feedback loop: entropies below 1000 are "congested" (marked). After the first random
        // packets, the flow settles on unmarked labels only.
        let mut rng = rng_for(2, Stream::Flow, 2);
        let mut p = Reps::new(RepsConfig::default());
        let mut pending = std::collections::VecDeque::new();
        let mut marked_late = 0;
        for i in 0..2000u64 {
            let e = p.next_entropy(SimTime::from_us(i), &mut rng);
            if i > 100 && e < 1000 {
                marked_late += 1;
            }
            pending.push_back(e);
            if pending.len() > 8 {
                let e = pending.pop_front().unwrap();
                p.on_ack(ack(e, e < 1000, 8, i + 8));
            }
        }
        // Random labels would be under 1000 about 1.5% of the time (28 of 1900); recycling only
        // draws new ones when the ring runs dry, which an all-good feedback stream never does.
        assert!(marked_late <= 3, "{marked_late}");
    }

    #[test]
    fn freezing_cycles_cached_entropies_then_explores() {
        let mut rng = rng_for(2, Stream::Flow, 3);
        let cfg = RepsConfig::default();
        let mut p = Reps::new(cfg);
        for e in [7, 8, 9] {
            p.on_ack(ack(e, false, 5, 10));
        }
        // Consume them: the bits are clear but the entropies stay cached.
        for _ in 0..3 {
            p.next_entropy(SimTime::from_us(10), &mut rng);
        }
        p.on_timeout(SimTime::from_us(20));
        assert!(p.is_frozen());
        let t = SimTime::from_us(30);
        let cyc: Vec<u32> = (0..6).map(|_| p.next_entropy(t, &mut rng)).collect();
        assert_eq!(cyc, vec![7, 8, 9, 7, 8, 9]);
        // A good ACK while frozen is recorded (in slot 3, where the cycle now stands) and joins.
        p.on_ack(ack(5, false, 5, 40));
        let cyc: Vec<u32> = (0..4).map(|_| p.next_entropy(t, &mut rng)).collect();
        assert_eq!(cyc, vec![5, 7, 8, 9]);
        // After 10 ms: ring cleared, 16 random packets, then (with nothing valid) still random.
        let after = SimTime::from_us(20) + cfg.freeze;
        let ex: Vec<u32> = (0..16).map(|_| p.next_entropy(after, &mut rng)).collect();
        assert!(!p.is_frozen());
        assert!(ex.iter().all(|e| ![5, 7, 8, 9].contains(e)), "{ex:?}");
        // Exploration ignores the ring: a fresh good ACK is used only once exploring is over.
        let mut q = Reps::new(cfg);
        q.on_ack(ack(1, false, 5, 10));
        q.on_timeout(SimTime::from_us(10));
        let later = SimTime::from_us(10) + cfg.freeze;
        q.next_entropy(later, &mut rng); // leaves freezing, explores (1 of 16)
        q.on_ack(ack(3, false, 5, 10_020));
        let ex: Vec<u32> = (0..15).map(|_| q.next_entropy(later, &mut rng)).collect();
        assert!(!ex.contains(&3));
        assert_eq!(q.next_entropy(later, &mut rng), 3);
    }

    #[test]
    fn a_timeout_after_long_queues_does_not_freeze() {
        let mut p = Reps::new(RepsConfig::default());
        p.on_ack(ack(1, false, 5, 10));
        p.on_ack(ack(2, false, 9, 20)); // 9 us >= 1.65 x 5 us
        p.on_timeout(SimTime::from_us(30));
        assert!(!p.is_frozen());
        let mut q = Reps::new(RepsConfig::default());
        q.on_ack(ack(1, false, 5, 10));
        q.on_ack(ack(2, false, 8, 20));
        q.on_timeout(SimTime::from_us(30));
        assert!(q.is_frozen());
    }

    #[test]
    fn with_trimming_every_timeout_freezes_even_after_long_queues() {
        let cfg = RepsConfig {
            trimming: true,
            ..RepsConfig::default()
        };
        let mut p = Reps::new(cfg);
        p.on_ack(ack(1, false, 5, 10));
        p.on_ack(ack(2, false, 9, 20));
        p.on_timeout(SimTime::from_us(30));
        assert!(p.is_frozen());
    }
}
