//! NSCC, the sender-based congestion control of the Ultra Ethernet Transport (UEC specification
//! 1.0, NSCC section; the design of SMaRTT, Bonato et al.): one window driven by two signals of
//! different speed, the ECN echo (the queue a packet met right now) and the queueing delay
//! `rtt - base_rtt` (how long it waited).
//!
//! Per ACK, by quadrant:
//! - no ECN, delay < target: proportional increase, `prop x (target - delay) / target` bytes
//!   per window of ACKs; or, once the delay stayed under `fast_increase_delay_us` for a whole
//!   window, fast increase, `fast_increase_scale` window bytes per byte acked (until an ACK
//!   breaks the streak);
//! - no ECN, delay >= target: fair increase, `fair` bytes per window of ACKs (per ACK,
//!   fair x acked / cwnd): the same per RTT for every flow, so competing windows converge;
//! - ECN, delay >= target: multiplicative decrease, at most once per base RTT,
//!   cwnd *= max(1 - beta (avg - target) / avg, min_md_factor), avg the queueing delay averaged
//!   over about the last base RTT (each sample weighs its gap since the previous one, in base
//!   RTTs, so dense and sparse ACKs forget at the same pace);
//! - ECN, delay < target: fair decrease, `fd x cwnd / BDP` bytes per byte acked, so per window
//!   of ACKs `fd x cwnd^2 / BDP`: a larger window gives up more. This is SMaRTT's rule (Bonato
//!   et al., arXiv:2404.01630) and that of UEC's first htsim model (uec.cpp, `fair_decrease`,
//!   fd 0.8, applied as `cwnd -= dec_bytes x cwnd / bdp`); the UEC 1.0 text leaves the window
//!   alone here for the load balancer to act. Without it a queue held between the ECN threshold
//!   and the target moved no window, so competing windows kept whatever ratio they reached
//!   (two senders into one 800 Gb/s host sat at 601 and 296 KB for the whole run);
//! - every base RTT, whatever the quadrant: eta, a constant the same for every flow (UEC's htsim
//!   model, uec.cpp `_eta`, 0.15 MSS x scale_a, added in `fulfill_adjustment`), so a window cut
//!   to the minimum regrows even while every ACK is marked.
//!
//! Increases and fair decreases accumulate and reach the window every `apply_interval_mtus`
//! packets acked or every base RTT, whichever comes first; a multiplicative decrease drops what
//! had accumulated. Increase constants are defined for a 150 kB, 12 us reference network and
//! scaled by BDP / 150 kB (and the proportional one by target / 12 us too), as UEC prescribes,
//! so defaults hold across speeds.
//!
//! Quick adapt: time is cut into epochs of one base RTT. A NACK (a trimmed packet) or a delay
//! over `quick_adapt_factor x target` during an epoch marks it; when a marked epoch ends having
//! acknowledged less than `quick_adapt_fraction x maxwnd`, the window is set to what it
//! acknowledged: what the path actually delivered, at once, instead of several halvings. At most
//! once per epoch, and it also blocks decreases for a base RTT, since the ACKs of what was
//! already in flight describe the queue the new window was sized for. A loss declared by NACK
//! (without quick adapt) or by reordering takes its bytes out of the window; a timeout drops it
//! to the minimum. The window stays within [min window, maxwnd], and starts at maxwnd.

use serde::{Deserialize, Serialize};

use super::{
    check_min, check_positive, check_range, AckSample, CcCtx, CongestionControl, LossKind,
};
use crate::time::SimTime;

/// UEC's reference network, on which the increase constants are defined: 100 Gb/s x 12 us.
const REFERENCE_BDP: f64 = 150_000.0;
const REFERENCE_RTT_PS: f64 = 12e6;

/// `[transport.nscc]`; defaults from the UEC 1.0 NSCC parameter table unless noted.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct NsccConfig {
    /// Target queueing delay, us; unset is 0.75 x base RTT when switches trim (UEC's value),
    /// 1 x base RTT when they do not (no trim NACK warns early, so the queue may run longer).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_qdelay_us: Option<f64>,
    /// Largest window, also the initial one, in BDPs (1.5).
    pub maxwnd_bdp: f64,
    /// Multiplicative-decrease gain on the relative excess delay (gamma, 0.8).
    pub beta: f64,
    /// Smallest factor one decrease multiplies the window by (max_md_jump, 0.5).
    pub min_md_factor: f64,
    /// Fair increase per window of ACKs, in MTUs at the reference BDP (fi, 5).
    pub fair_increase_mtus: f64,
    /// Increase added once per base RTT whatever the quadrant, in MTUs at the reference BDP
    /// (eta, 0.15, UEC's htsim model); 0 turns it off.
    pub eta_mtus: f64,
    /// Fair decrease on an ECN echo with the delay under target: per byte acked the window loses
    /// `fair_decrease x cwnd / BDP` bytes (fd, 0.8, SMaRTT and UEC's first htsim model); 0 is
    /// the UEC 1.0 text's no change.
    pub fair_decrease: f64,
    /// Proportional increase per window of ACKs at zero delay, in MTUs at the reference BDP and
    /// a 12 us target (alpha, 4).
    pub proportional_gain_mtus: f64,
    /// Fast increase, window bytes per byte acked at the reference BDP (fi_scale, 0.25; 1 would
    /// double the window per RTT).
    pub fast_increase_scale: f64,
    /// Queueing delay under which the path counts as empty for fast increase, us (1, as in the
    /// UEC's htsim model).
    pub fast_increase_delay_us: f64,
    /// A delay over this many targets marks the epoch for quick adapt (4); 0 disables the delay
    /// trigger, leaving NACKs.
    pub quick_adapt_factor: f64,
    /// Quick adapt acts only if the epoch delivered less than this fraction of maxwnd (1/8,
    /// qa_gate 3).
    pub quick_adapt_fraction: f64,
    /// Accumulated increases are applied after this many full packets of payload are acked (8),
    /// or after a base RTT.
    pub apply_interval_mtus: u32,
    /// Smallest window, in packets (1: the window is all that limits the sender).
    pub min_window_packets: f64,
}

impl Default for NsccConfig {
    fn default() -> Self {
        NsccConfig {
            target_qdelay_us: None,
            maxwnd_bdp: 1.5,
            beta: 0.8,
            min_md_factor: 0.5,
            fair_increase_mtus: 5.0,
            eta_mtus: 0.15,
            fair_decrease: 0.8,
            proportional_gain_mtus: 4.0,
            fast_increase_scale: 0.25,
            fast_increase_delay_us: 1.0,
            quick_adapt_factor: 4.0,
            quick_adapt_fraction: 0.125,
            apply_interval_mtus: 8,
            min_window_packets: 1.0,
        }
    }
}

impl NsccConfig {
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        if let Some(t) = self.target_qdelay_us {
            check_positive("target_qdelay_us", t)?;
        }
        check_positive("maxwnd_bdp", self.maxwnd_bdp)?;
        check_range("beta", self.beta, 0.0, 1.0)?;
        check_range("min_md_factor", self.min_md_factor, 0.0, 1.0)?;
        check_min("fair_increase_mtus", self.fair_increase_mtus, 0.0)?;
        check_min("eta_mtus", self.eta_mtus, 0.0)?;
        check_min("fair_decrease", self.fair_decrease, 0.0)?;
        check_min("proportional_gain_mtus", self.proportional_gain_mtus, 0.0)?;
        check_min("fast_increase_scale", self.fast_increase_scale, 0.0)?;
        check_min("fast_increase_delay_us", self.fast_increase_delay_us, 0.0)?;
        check_min("quick_adapt_factor", self.quick_adapt_factor, 0.0)?;
        check_range("quick_adapt_fraction", self.quick_adapt_fraction, 0.0, 1.0)?;
        check_min("min_window_packets", self.min_window_packets, 1.0)?;
        Ok(())
    }
}

#[derive(Clone, Debug)]
pub struct Nscc {
    base_rtt: SimTime,
    /// Target queueing delay, ps.
    target: f64,
    beta: f64,
    min_md_factor: f64,
    /// Bytes per window of ACKs.
    fair_bytes: f64,
    /// Bytes added per base RTT (eta).
    eta_bytes: f64,
    /// Fair decrease per byte acked, per byte of window: fd / BDP.
    fd_per_bdp: f64,
    /// When eta was last added.
    last_eta: Option<SimTime>,
    /// Bytes per window of ACKs at zero delay.
    prop_bytes: f64,
    fast_scale: f64,
    /// ps.
    fast_delay: f64,
    /// Quick-adapt delay trigger, ps (infinite when disabled).
    qa_delay: f64,
    /// Quick adapt acts below this many bytes per epoch.
    qa_bytes: f64,
    apply_bytes: u64,
    min_cwnd: f64,
    max_cwnd: f64,
    cwnd: f64,
    /// Increase accumulated since the last application, bytes.
    pending: f64,
    acked_since_apply: u64,
    last_apply: Option<SimTime>,
    /// Bytes acked since the delay last reached `fast_delay` (or an ECN echo).
    fast_count: u64,
    fast: bool,
    /// Averaged queueing delay, ps, and when it last took a sample.
    avg_delay: Option<f64>,
    last_delay_at: SimTime,
    last_md: Option<SimTime>,
    /// Quick adapt: the current epoch's end (None before the first ACK or loss), what it
    /// acknowledged, and whether a trigger marked it.
    qa_epoch_end: Option<SimTime>,
    epoch_acked: u64,
    qa_marked: bool,
}

impl Nscc {
    pub fn new(cfg: &NsccConfig, ctx: &CcCtx) -> Nscc {
        let base = ctx.base_rtt.ps() as f64;
        let target = match cfg.target_qdelay_us {
            Some(us) => us * 1e6,
            None if ctx.trimming => 0.75 * base,
            None => base,
        };
        let scale_a = ctx.bdp as f64 / REFERENCE_BDP;
        let scale_b = target / REFERENCE_RTT_PS;
        let mtu = ctx.mtu as f64;
        let mss = ctx.mss as f64;
        let min_cwnd = cfg.min_window_packets * mss;
        let max_cwnd = (cfg.maxwnd_bdp * ctx.bdp as f64).max(min_cwnd);
        Nscc {
            base_rtt: ctx.base_rtt,
            target,
            beta: cfg.beta,
            min_md_factor: cfg.min_md_factor,
            fair_bytes: cfg.fair_increase_mtus * mtu * scale_a,
            eta_bytes: cfg.eta_mtus * mtu * scale_a,
            last_eta: None,
            fd_per_bdp: cfg.fair_decrease / (ctx.bdp as f64).max(1.0),
            prop_bytes: cfg.proportional_gain_mtus * mtu * scale_a * scale_b,
            fast_scale: cfg.fast_increase_scale * scale_a,
            fast_delay: cfg.fast_increase_delay_us * 1e6,
            qa_delay: if cfg.quick_adapt_factor > 0.0 {
                cfg.quick_adapt_factor * target
            } else {
                f64::INFINITY
            },
            qa_bytes: cfg.quick_adapt_fraction * max_cwnd,
            apply_bytes: cfg.apply_interval_mtus as u64 * ctx.mss as u64,
            min_cwnd,
            max_cwnd,
            cwnd: max_cwnd,
            pending: 0.0,
            acked_since_apply: 0,
            last_apply: None,
            fast_count: 0,
            fast: false,
            avg_delay: None,
            last_delay_at: SimTime::ZERO,
            last_md: None,
            qa_epoch_end: None,
            epoch_acked: 0,
            qa_marked: false,
        }
    }

    /// Bytes the flow may have in flight.
    #[inline]
    pub fn window(&self) -> u64 {
        self.cwnd as u64
    }

    /// The target queueing delay.
    pub fn target(&self) -> SimTime {
        SimTime(self.target.round() as u64)
    }

    fn sample_delay(&mut self, now: SimTime, delay: f64) {
        self.avg_delay = Some(match self.avg_delay {
            None => delay,
            Some(avg) => {
                let gap = now.ps().saturating_sub(self.last_delay_at.ps()) as f64;
                let w = (gap / self.base_rtt.ps().max(1) as f64).min(1.0);
                avg + w * (delay - avg)
            }
        });
        self.last_delay_at = now;
    }

    fn decrease(&mut self, now: SimTime) {
        if let Some(t) = self.last_md {
            if since(now, t) < self.base_rtt {
                return;
            }
        }
        let avg = self.avg_delay.unwrap_or(0.0);
        if avg <= self.target {
            return;
        }
        let f = (1.0 - self.beta * (avg - self.target) / avg).max(self.min_md_factor);
        self.cwnd = (self.cwnd * f).max(self.min_cwnd);
        self.last_md = Some(now);
        self.reset_increase();
    }

    /// Marks the epoch if `trigger`; at an epoch's end, acts if it was marked and delivered
    /// little. Returns whether the window was set.
    fn quick_adapt(&mut self, now: SimTime, trigger: bool) -> bool {
        self.qa_marked |= trigger;
        let Some(end) = self.qa_epoch_end else {
            self.qa_epoch_end = Some(now + self.base_rtt);
            return false;
        };
        if now < end {
            return false;
        }
        let act = self.qa_marked && (self.epoch_acked as f64) < self.qa_bytes;
        if act {
            self.cwnd = (self.epoch_acked as f64).clamp(self.min_cwnd, self.max_cwnd);
            self.last_md = Some(now);
            self.reset_increase();
        }
        self.qa_marked = false;
        self.epoch_acked = 0;
        self.qa_epoch_end = Some(now + self.base_rtt);
        act
    }

    fn reset_increase(&mut self) {
        self.pending = 0.0;
        self.fast = false;
        self.fast_count = 0;
    }
}

fn since(now: SimTime, then: SimTime) -> SimTime {
    SimTime(now.ps().saturating_sub(then.ps()))
}

impl CongestionControl for Nscc {
    fn window(&self) -> Option<u64> {
        Some(Nscc::window(self))
    }
    fn on_send(&mut self, _now: SimTime, _bytes: u64) {}
    fn on_ack(&mut self, s: &AckSample) {
        let now = s.now;
        let delay = s.rtt.ps().saturating_sub(self.base_rtt.ps()) as f64;
        self.sample_delay(now, delay);
        let adapted = self.quick_adapt(now, delay > self.qa_delay);
        self.epoch_acked += s.acked_bytes;
        if adapted {
            return;
        }
        if s.ecn || delay >= self.fast_delay {
            self.fast = false;
            self.fast_count = 0;
        }
        let acked = s.acked_bytes as f64;
        match (s.ecn, delay >= self.target) {
            (false, false) => {
                if delay < self.fast_delay {
                    self.fast_count += s.acked_bytes;
                    self.fast |= self.fast_count as f64 >= self.cwnd;
                }
                self.pending += if self.fast {
                    self.fast_scale * acked
                } else {
                    self.prop_bytes * (self.target - delay) / self.target * acked / self.cwnd
                };
            }
            (false, true) => self.pending += self.fair_bytes * acked / self.cwnd,
            (true, true) => self.decrease(now),
            (true, false) => self.pending -= self.fd_per_bdp * self.cwnd * acked,
        }
        self.acked_since_apply += s.acked_bytes;
        let last = *self.last_apply.get_or_insert(now);
        let eta_at = *self.last_eta.get_or_insert(now);
        if self.acked_since_apply >= self.apply_bytes || since(now, last) >= self.base_rtt {
            if since(now, eta_at) >= self.base_rtt {
                self.pending += self.eta_bytes;
                self.last_eta = Some(now);
            }
            self.cwnd = (self.cwnd + self.pending).clamp(self.min_cwnd, self.max_cwnd);
            self.pending = 0.0;
            self.acked_since_apply = 0;
            self.last_apply = Some(now);
        }
    }
    fn on_loss(&mut self, now: SimTime, bytes: u64, kind: LossKind) {
        match kind {
            LossKind::Timeout => {
                self.cwnd = self.min_cwnd;
                self.reset_increase();
            }
            LossKind::Nack | LossKind::Reorder => {
                if !self.quick_adapt(now, kind == LossKind::Nack) {
                    self.cwnd = (self.cwnd - bytes as f64).max(self.min_cwnd);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 4096;
    const MTU: u64 = 4160;
    // 100 Gb/s x 12 us: the reference network, so scale_a = 1; with trimming the target is 9 us.
    const BDP: u64 = 150_000;

    fn ctx(trimming: bool) -> CcCtx {
        CcCtx {
            trimming,
            ..CcCtx::test(SimTime::from_us(12), 100.0, BDP)
        }
    }

    fn nscc() -> Nscc {
        Nscc::new(&NsccConfig::default(), &ctx(true))
    }

    fn ns(x: u64) -> SimTime {
        SimTime::from_ns(x)
    }

    /// An ACK at `now_ns` whose packet queued `qdelay_ns`.
    fn ack(now_ns: u64, qdelay_ns: u64, ecn: bool) -> AckSample {
        AckSample {
            now: ns(now_ns),
            acked_bytes: MSS,
            ecn,
            rtt: ns(12_000 + qdelay_ns),
            cnp: false,
            inflight: 0,
        }
    }

    #[test]
    fn starts_at_maxwnd_with_the_default_targets() {
        let n = nscc();
        assert_eq!(n.window(), BDP * 3 / 2);
        assert_eq!(n.target(), ns(9_000));
        assert_eq!(
            Nscc::new(&NsccConfig::default(), &ctx(false)).target(),
            ns(12_000)
        );
        let cfg = NsccConfig {
            target_qdelay_us: Some(3.0),
            ..NsccConfig::default()
        };
        assert_eq!(Nscc::new(&cfg, &ctx(true)).target(), ns(3_000));
    }

    #[test]
    fn low_delay_increase_is_proportional_and_applied_every_8_packets() {
        let mut n = nscc();
        n.cwnd = 100_000.0;
        // Delay half the target: prop = 4 MTU x 0.75 (scale_b = 9/12) = 12480 bytes per window.
        let per_ack = 4.0 * MTU as f64 * 0.75 * 0.5 * MSS as f64 / 100_000.0;
        for i in 0..7 {
            n.on_ack(&ack(100 * i, 4_500, false));
            assert_eq!(n.cwnd, 100_000.0, "applied early at ack {i}");
        }
        n.on_ack(&ack(700, 4_500, false));
        assert!(
            (n.cwnd - (100_000.0 + 8.0 * per_ack)).abs() < 1e-6,
            "{}",
            n.cwnd
        );
    }

    #[test]
    fn increases_are_applied_after_a_base_rtt_too() {
        let mut n = nscc();
        n.cwnd = 100_000.0;
        n.on_ack(&ack(0, 4_500, false));
        n.on_ack(&ack(11_999, 4_500, false));
        assert_eq!(n.cwnd, 100_000.0);
        n.on_ack(&ack(12_000, 4_500, false));
        assert!(n.cwnd > 100_000.0);
    }

    #[test]
    fn a_whole_window_of_empty_queues_switches_to_fast_increase() {
        // Proportional gain 0 isolates fast increase.
        let cfg = NsccConfig {
            proportional_gain_mtus: 0.0,
            ..NsccConfig::default()
        };
        let mut n = Nscc::new(&cfg, &ctx(true));
        n.cwnd = 10.0 * MSS as f64;
        // Acks 1-9 fill the streak; from the 10th (a whole window) each adds 0.25 x 4096; the
        // application at ack 16 brings those of acks 10-16.
        for i in 0..16 {
            n.on_ack(&ack(10 * i, 500, false));
        }
        assert_eq!(n.cwnd, 10.0 * MSS as f64 + 7.0 * 1024.0);
        // One delayed ACK breaks the streak: less than a window of clear ACKs after it (11
        // packets of a 11.75-packet window) adds nothing.
        let w = n.cwnd;
        n.on_ack(&ack(200, 2_000, false));
        for i in 0..11 {
            n.on_ack(&ack(300 + 10 * i, 500, false));
        }
        assert_eq!(n.cwnd, w);
    }

    #[test]
    fn delay_over_target_without_ecn_is_a_fair_increase() {
        let mut n = nscc();
        n.cwnd = 100_000.0;
        for i in 0..8 {
            n.on_ack(&ack(100 * i, 10_000, false));
        }
        // 5 MTU per window of ACKs: per ACK 20800 x 4096 / 100000.
        let want = 100_000.0 + 8.0 * 5.0 * MTU as f64 * MSS as f64 / 100_000.0;
        assert!((n.cwnd - want).abs() < 1e-6, "{} vs {want}", n.cwnd);
    }

    #[test]
    fn ecn_below_target_is_a_fair_decrease_that_grows_with_the_window() {
        let mut n = nscc();
        n.cwnd = 100_000.0;
        // 8 marked ACKs at 2 us (< 9 us): each takes 0.8 x 4096 x 100000 / 150000 bytes, all
        // applied at the 8th.
        for i in 0..8 {
            n.on_ack(&ack(100 * i, 2_000, true));
        }
        let want = 100_000.0 - 8.0 * 0.8 * MSS as f64 * 100_000.0 / BDP as f64;
        assert!((n.cwnd - want).abs() < 1e-6, "{} vs {want}", n.cwnd);
        // Half the window loses a quarter as much per window of ACKs: per ACK half as much.
        let mut m = nscc();
        m.cwnd = 50_000.0;
        for i in 0..8 {
            m.on_ack(&ack(100 * i, 2_000, true));
        }
        assert!((50_000.0 - m.cwnd - (100_000.0 - want) / 2.0).abs() < 1e-6);
        // fair_decrease = 0 is UEC 1.0's no change.
        let cfg = NsccConfig {
            fair_decrease: 0.0,
            eta_mtus: 0.0,
            ..NsccConfig::default()
        };
        let mut n = Nscc::new(&cfg, &ctx(true));
        n.cwnd = 100_000.0;
        for i in 0..32 {
            n.on_ack(&ack(100 * i, 2_000, true));
        }
        assert_eq!(n.cwnd, 100_000.0);
    }

    #[test]
    fn eta_is_added_once_per_base_rtt_whatever_the_quadrant() {
        let cfg = NsccConfig {
            fair_decrease: 0.0,
            ..NsccConfig::default()
        };
        let mut n = Nscc::new(&cfg, &ctx(true));
        n.cwnd = 100_000.0;
        // Marked ACKs under target every 1 us from 0: applications at 7, 15, 23 and 31 us; eta
        // (0.15 x 4160 bytes at the reference BDP) at the first 12 us after the last: 15, 31.
        for i in 0..32 {
            n.on_ack(&ack(1_000 * i, 2_000, true));
        }
        assert!(
            (n.cwnd - (100_000.0 + 2.0 * 0.15 * MTU as f64)).abs() < 1e-6,
            "{}",
            n.cwnd
        );
    }

    #[test]
    fn ecn_over_target_decreases_once_per_base_rtt() {
        let mut n = nscc();
        let w0 = n.cwnd;
        // Average delay 18 us = 2 x target: factor 1 - 0.8 x 9/18 = 0.6.
        n.on_ack(&ack(1_000, 18_000, true));
        assert!((n.cwnd - 0.6 * w0).abs() < 1e-6);
        n.on_ack(&ack(2_000, 18_000, true));
        n.on_ack(&ack(12_999, 18_000, true));
        assert!((n.cwnd - 0.6 * w0).abs() < 1e-6);
        // A base RTT after the first ACK the increases are applied: only eta (0.15 MTU) is due.
        n.on_ack(&ack(13_000, 18_000, true));
        let eta = 0.15 * MTU as f64;
        assert!((n.cwnd - (0.36 * w0 + eta)).abs() < 1e-6, "{}", n.cwnd);
    }

    #[test]
    fn one_decrease_at_most_halves() {
        let cfg = NsccConfig {
            quick_adapt_factor: 0.0,
            ..NsccConfig::default()
        };
        let mut n = Nscc::new(&cfg, &ctx(true));
        let w0 = n.cwnd;
        // 1 - 0.8 x 81/90 = 0.28, floored at 0.5.
        n.on_ack(&ack(1_000, 90_000, true));
        assert_eq!(n.cwnd, 0.5 * w0);
    }

    #[test]
    fn decrease_follows_the_average_not_one_sample() {
        let mut n = nscc();
        let w0 = n.cwnd;
        n.on_ack(&ack(0, 0, false));
        // A quarter base RTT later one marked 21 us sample: avg = 0.25 x 21 = 5.25 us < target.
        n.on_ack(&ack(3_000, 21_000, true));
        assert_eq!(n.cwnd, w0);
    }

    #[test]
    fn nack_quick_adapts_to_the_bytes_the_epoch_delivered() {
        let mut n = nscc();
        // The NACK opens the first epoch (0 - 12 us) and marks it; it also takes its bytes out.
        n.on_loss(ns(0), MSS, LossKind::Nack);
        assert_eq!(n.cwnd, (BDP * 3 / 2 - MSS) as f64);
        for i in 0..5 {
            n.on_ack(&ack(1_000 + 100 * i, 2_000, false));
        }
        // Epoch over, 5 packets (20480 B < 225000 / 8) delivered: the window becomes that.
        n.on_ack(&ack(12_000, 2_000, false));
        assert_eq!(n.window(), 5 * MSS);
        // The next epoch is not marked: nothing more.
        n.on_ack(&ack(24_000, 2_000, false));
        assert!(n.window() > 5 * MSS);
    }

    #[test]
    fn quick_adapt_needs_a_trigger_and_a_poor_epoch() {
        // Enough delivered (8 packets > 28125 B): no quick adapt despite the NACK.
        let mut n = nscc();
        n.on_loss(ns(0), MSS, LossKind::Nack);
        for i in 0..8 {
            n.on_ack(&ack(1_000 + 100 * i, 2_000, false));
        }
        n.on_ack(&ack(12_000, 2_000, false));
        assert!(n.window() > 100_000);
        // A delay over 4 x target triggers it like a NACK.
        let mut n = nscc();
        n.on_ack(&ack(0, 2_000, false));
        n.on_ack(&ack(1_000, 40_000, false));
        n.on_ack(&ack(12_000, 2_000, false));
        assert_eq!(n.window(), 2 * MSS);
        // No trigger: a quiet epoch changes nothing.
        let mut n = nscc();
        n.on_ack(&ack(0, 2_000, false));
        n.on_ack(&ack(12_000, 2_000, false));
        assert!(n.window() > 100_000);
    }

    #[test]
    fn timeout_drops_to_the_minimum_and_the_window_stays_in_bounds() {
        let mut n = nscc();
        for i in 0..100 {
            n.on_ack(&ack(100 * i, 0, false));
        }
        assert_eq!(n.window(), BDP * 3 / 2);
        n.on_loss(ns(20_000), MSS, LossKind::Timeout);
        assert_eq!(n.window(), MSS);
        n.on_loss(ns(20_000), MSS, LossKind::Reorder);
        assert_eq!(n.window(), MSS);
    }

    #[test]
    fn validation_names_the_bad_field() {
        assert!(NsccConfig::default().validate().is_ok());
        let bad =
            |f: fn(&mut NsccConfig)| crate::transport::cc::rejected_field(NsccConfig::validate, f);
        assert_eq!(bad(|c| c.target_qdelay_us = Some(0.0)), "target_qdelay_us");
        assert_eq!(bad(|c| c.maxwnd_bdp = f64::NAN), "maxwnd_bdp");
        assert_eq!(bad(|c| c.beta = 2.0), "beta");
        assert_eq!(bad(|c| c.min_md_factor = -0.5), "min_md_factor");
        assert_eq!(bad(|c| c.fair_increase_mtus = -1.0), "fair_increase_mtus");
        assert_eq!(bad(|c| c.eta_mtus = -1.0), "eta_mtus");
        assert_eq!(bad(|c| c.fair_decrease = f64::NAN), "fair_decrease");
        assert_eq!(
            bad(|c| c.proportional_gain_mtus = f64::INFINITY),
            "proportional_gain_mtus"
        );
        assert_eq!(bad(|c| c.fast_increase_scale = -0.1), "fast_increase_scale");
        assert_eq!(
            bad(|c| c.fast_increase_delay_us = f64::NAN),
            "fast_increase_delay_us"
        );
        assert_eq!(bad(|c| c.quick_adapt_factor = -4.0), "quick_adapt_factor");
        assert_eq!(
            bad(|c| c.quick_adapt_fraction = 1.5),
            "quick_adapt_fraction"
        );
        assert_eq!(bad(|c| c.min_window_packets = 0.5), "min_window_packets");
    }
}
