//! PLB, Protective Load Balancing (Qureshi et al., SIGCOMM'22; Linux `tcp_plb`): the host keeps one
//! entropy per flow and re-draws it when the flow sees sustained congestion.
//!
//! Rounds: a round ends at the first ACK of a packet sent after the round began, i.e. about one
//! RTT of ACKs (the `sent_at` the ACK echoes is what dates the packet; no RTT estimate is needed).
//! The first round begins with the first ACK. A round is congested when at least
//! `plb_congested_fraction` of its ACKs carried ECN. Consecutive congested rounds are counted (a
//! clean round resets the count); the flow re-paths when the count reaches
//! `plb_idle_rehash_rounds` with nothing in flight, or `plb_rehash_rounds` regardless (Linux:
//! 3 and 12). A timeout re-paths at once and suspends congestion re-pathing for
//! `plb_suspend_us` (Linux: 60 to 120 s; 60 s here).
//!
//! The study's "ECN threshold 50%, change threshold 40%": we read the first as the switches'
//! marking threshold (half the buffer, set with `topology.ecn_threshold_bytes`; REPS's "ECN
//! threshold 10%" only makes sense that way) and the second as the marked fraction that makes a
//! round congested. The default fraction here is PLB's own 50%; set
//! `load_balancing.plb_congested_fraction=0.4` to use the study's value.
//!
//! "Nothing in flight" is packets sent minus ACKs received; the idealized transport never learns of
//! a loss, so a dropped packet keeps the count above zero (the 12-round rule still applies).

use super::config::{Opt, Options};
use super::ecmp::HashPolicy;
use super::{AckInfo, FlowCtx, HostPolicy, Scheme, SchemeInfo, SwitchCtx, ENTROPY_SPACE};
use crate::rng::SimRng;
use crate::time::SimTime;
use rand::Rng;

/// `load_balancing.plb_congested_fraction`: a round is congested when at least this fraction
/// of its ACKs was ECN-marked (0.5, PLB's; the study's "change threshold" is 0.4).
pub const CONGESTED_FRACTION: Opt<f64> = Opt::fraction("plb_congested_fraction", 0.5);
/// `load_balancing.plb_rehash_rounds`: re-path after this many consecutive congested rounds,
/// whatever is in flight (12, Linux).
pub const REHASH_ROUNDS: Opt<u32> = Opt::count("plb_rehash_rounds", 12, 1, u32::MAX);
/// `load_balancing.plb_idle_rehash_rounds`: re-path after this many consecutive congested
/// rounds when nothing is in flight (3, Linux).
pub const IDLE_REHASH_ROUNDS: Opt<u32> = Opt::count("plb_idle_rehash_rounds", 3, 1, u32::MAX);
/// `load_balancing.plb_suspend_us`: after a timeout, no congestion re-path for this long
/// (60 s, Linux).
pub const SUSPEND: Opt<SimTime> = Opt::micros("plb_suspend_us", 60_000_000.0);

/// The `plb` scheme.
pub struct Def;

impl Scheme for Def {
    const INFO: SchemeInfo = SchemeInfo::host("plb", "flowlet")
        .summary("PLB: re-draw the flow's entropy after consecutive ECN-congested rounds")
        .options(&[
            &CONGESTED_FRACTION.spec,
            &REHASH_ROUNDS.spec,
            &IDLE_REHASH_ROUNDS.spec,
            &SUSPEND.spec,
        ])
        .honouring_weights();
    type Config = PlbConfig;
    type Host = Box<Plb>;
    type Switch = HashPolicy;
    fn config(o: &Options) -> PlbConfig {
        PlbConfig {
            congested_fraction: o.get(&CONGESTED_FRACTION),
            rehash_rounds: o.get(&REHASH_ROUNDS),
            idle_rehash_rounds: o.get(&IDLE_REHASH_ROUNDS),
            suspend: o.get(&SUSPEND),
        }
    }
    fn host(cfg: &PlbConfig, _: &FlowCtx, rng: &mut SimRng) -> Box<Plb> {
        Box::new(Plb::new(*cfg, rng))
    }
    fn switch(_: &PlbConfig, ctx: &SwitchCtx) -> HashPolicy {
        HashPolicy::new(ctx)
    }
}

/// PLB parameters (the options above); defaults from the PLB paper and Linux.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PlbConfig {
    pub congested_fraction: f64,
    pub rehash_rounds: u32,
    pub idle_rehash_rounds: u32,
    pub suspend: SimTime,
}

impl Default for PlbConfig {
    fn default() -> Self {
        Def::config(&Options::defaults(&Def::INFO))
    }
}

#[derive(Clone, Debug)]
pub struct Plb {
    cfg: PlbConfig,
    entropy: u32,
    /// Start of the current round; `None` until the first ACK.
    round_start: Option<SimTime>,
    acked: u32,
    marked: u32,
    consecutive: u32,
    sent: u64,
    acks: u64,
    /// Draw a new entropy before the next packet (ACK handlers have no random stream).
    repath_pending: bool,
    suspended_until: SimTime,
    pub repaths: u32,
}

impl Plb {
    pub fn new(cfg: PlbConfig, rng: &mut SimRng) -> Self {
        Plb {
            cfg,
            entropy: rng.gen_range(0..ENTROPY_SPACE),
            round_start: None,
            acked: 0,
            marked: 0,
            consecutive: 0,
            sent: 0,
            acks: 0,
            repath_pending: false,
            suspended_until: SimTime::ZERO,
            repaths: 0,
        }
    }

    fn end_round(&mut self, now: SimTime) {
        let congested =
            self.acked > 0 && self.marked as f64 >= self.cfg.congested_fraction * self.acked as f64;
        self.acked = 0;
        self.marked = 0;
        self.round_start = Some(now);
        if !congested {
            self.consecutive = 0;
            return;
        }
        self.consecutive += 1;
        let idle = self.acks >= self.sent;
        if now >= self.suspended_until
            && (self.consecutive >= self.cfg.rehash_rounds
                || (idle && self.consecutive >= self.cfg.idle_rehash_rounds))
        {
            self.repath_pending = true;
            self.consecutive = 0;
        }
    }
}

impl HostPolicy for Plb {
    fn next_entropy(&mut self, _now: SimTime, rng: &mut SimRng) -> u32 {
        if self.repath_pending {
            self.repath_pending = false;
            self.repaths += 1;
            self.entropy = rng.gen_range(0..ENTROPY_SPACE);
        }
        self.sent += 1;
        self.entropy
    }

    fn on_ack(&mut self, ack: AckInfo) {
        self.acks += 1;
        let start = *self.round_start.get_or_insert(ack.now);
        self.acked += 1;
        self.marked += ack.ecn as u32;
        if ack.sent_at > start {
            self.end_round(ack.now);
        }
    }

    fn on_timeout(&mut self, now: SimTime) {
        self.repath_pending = true;
        self.consecutive = 0;
        self.suspended_until = now.saturating_add(self.cfg.suspend);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::{rng_for, Stream};

    const RTT: u64 = 10_000_000; // 10 us in ps
    const GAP: u64 = 1_000_000; // a packet every 1 us: 10 ACKs a round

    /// Drives a flow that always has packets in flight: one packet per GAP, each ACKed one RTT
    /// later with the given mark. Returns the entropies used.
    fn drive(
        p: &mut Plb,
        rng: &mut SimRng,
        packets: u64,
        marked: impl Fn(u64) -> bool,
    ) -> Vec<u32> {
        let mut used = Vec::new();
        for i in 0..packets {
            let now = SimTime(i * GAP);
            used.push(p.next_entropy(now, rng));
            if i * GAP >= RTT {
                let sent = i * GAP - RTT;
                p.on_ack(AckInfo {
                    entropy: 0,
                    ecn: marked(sent / GAP),
                    loss: false,
                    sent_at: SimTime(sent),
                    now,
                });
            }
        }
        used
    }

    #[test]
    fn clean_rounds_never_repath() {
        let mut rng = rng_for(1, Stream::Flow, 0);
        let mut p = Plb::new(PlbConfig::default(), &mut rng);
        let used = drive(&mut p, &mut rng, 2000, |_| false);
        assert!(used.iter().all(|&e| e == used[0]));
        assert_eq!(p.repaths, 0);
    }

    #[test]
    fn sustained_congestion_repaths_after_twelve_rounds_with_data_in_flight() {
        let mut rng = rng_for(1, Stream::Flow, 1);
        let mut p = Plb::new(PlbConfig::default(), &mut rng);
        // Every ACK marked: rounds of about 11 packets; 12 rounds is about 130 packets after the
        // first ACK (packet 10).
        let used = drive(&mut p, &mut rng, 150, |_| true);
        let first_change = used.iter().position(|&e| e != used[0]).unwrap();
        assert!((120..150).contains(&first_change), "{first_change}");
        assert_eq!(p.repaths, 1);
    }

    #[test]
    fn the_marked_fraction_is_a_threshold_and_a_clean_round_resets_the_count() {
        let mut rng = rng_for(1, Stream::Flow, 2);
        // Rounds are 11 ACKs (12 for the first); 5 of every 11 marked is 45%: below PLB's 50%...
        let mut p = Plb::new(PlbConfig::default(), &mut rng);
        drive(&mut p, &mut rng, 3000, |i| i % 11 < 5);
        assert_eq!(p.repaths, 0);
        // ...and above the study's 40%: every round congested, a re-path every 12 rounds.
        let cfg = PlbConfig {
            congested_fraction: 0.4,
            ..PlbConfig::default()
        };
        let mut q = Plb::new(cfg, &mut rng);
        drive(&mut q, &mut rng, 3000, |i| i % 11 < 5);
        assert!((18..=23).contains(&q.repaths), "{}", q.repaths);
        // Bursts of 100 marked packets (at most 10 congested rounds) then 20 clean ones.
        let mut r = Plb::new(PlbConfig::default(), &mut rng);
        drive(&mut r, &mut rng, 3000, |i| i % 120 < 100);
        assert_eq!(r.repaths, 0);
    }

    #[test]
    fn idle_flow_repaths_after_three_congested_rounds() {
        let mut rng = rng_for(1, Stream::Flow, 3);
        let mut p = Plb::new(PlbConfig::default(), &mut rng);
        let e0 = p.next_entropy(SimTime::ZERO, &mut rng);
        // One packet per RTT, each ACKed (marked) before the next is sent. The first ACK opens
        // the first round; ACKs 1, 2, 3 close three congested rounds with nothing in flight.
        for r in 0..4u64 {
            if r > 0 {
                assert_eq!(p.next_entropy(SimTime(r * RTT), &mut rng), e0, "round {r}");
            }
            p.on_ack(AckInfo {
                entropy: e0,
                ecn: true,
                loss: false,
                sent_at: SimTime(r * RTT),
                now: SimTime(r * RTT + RTT / 2),
            });
        }
        assert_ne!(p.next_entropy(SimTime(4 * RTT), &mut rng), e0);
        assert_eq!(p.repaths, 1);
    }

    #[test]
    fn timeout_repaths_at_once_and_suspends_congestion_repathing() {
        let mut rng = rng_for(1, Stream::Flow, 4);
        let mut p = Plb::new(PlbConfig::default(), &mut rng);
        let e0 = p.next_entropy(SimTime::ZERO, &mut rng);
        p.on_timeout(SimTime(GAP));
        let e1 = p.next_entropy(SimTime(GAP), &mut rng);
        assert_ne!(e0, e1);
        assert_eq!(p.repaths, 1);
        drive(&mut p, &mut rng, 2000, |_| true);
        assert_eq!(p.repaths, 1);
    }
}
