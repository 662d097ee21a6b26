//! DCQCN reaction point (Zhu et al., "Congestion Control for Large-Scale RDMA Deployments",
//! SIGCOMM 2015): a rate, not a window, cut on each congestion notification packet (CNP) the
//! receiver returns for ECN-marked data, and raised again by a timer and a byte counter.
//!
//! State: the current rate RC, the target rate RT, alpha (the estimated congestion level,
//! starting at 1), the timer and byte-counter stage counts T and BC, and the next expiry of the
//! rate-increase timer and of the alpha timer. Both timers start at the first CNP: before it the
//! flow sends at line rate, where an increase has no effect.
//!
//! - CNP: RT <- RC, RC <- RC (1 - alpha / 2), alpha <- (1 - g) alpha + g; T, BC, the byte count
//!   and both timers restart.
//! - Alpha timer, each `alpha_timer_us` without a CNP: alpha <- (1 - g) alpha.
//! - Increase event, each `timer_us` (a T stage) and each `byte_counter_bytes` sent (a BC stage),
//!   judged on the stage counts before the event: while max(T, BC) < F, fast recovery
//!   RC <- (RT + RC) / 2, so the first F events of either kind after a cut halve the gap to the
//!   target; once both exceed F, hyper increase RT += i x R_HAI with i = min(T, BC) - F, then
//!   RC <- (RT + RC) / 2; in between, additive increase RT += R_AI, then RC <- (RT + RC) / 2.
//!
//! Rates stay within [min rate, line rate]. Losses get no reaction (RoCE relies on PFC). The
//! simulator schedules no events for CC, so every call first replays, in time order and each at
//! its own instant, the timer expiries up to `now`: the result is the same whenever and however
//! often the simulator asks.

use serde::{Deserialize, Serialize};

use super::{
    check_min, check_positive, check_range, AckSample, CcCtx, CongestionControl, LossKind,
};
use crate::time::{BitsPerSec, SimTime};

/// `[transport.dcqcn]`; defaults are the DCQCN paper's recommended settings (g, both timers,
/// the byte counter, F, the CNP interval, R_AI); R_HAI and the floor are the values usually
/// paired with them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DcqcnConfig {
    /// Gain of alpha's moving average (1/256).
    pub g: f64,
    /// Additive-increase step R_AI, Mb/s (40).
    pub rate_ai_mbps: f64,
    /// Hyper-increase step R_HAI, Mb/s (200).
    pub rate_hai_mbps: f64,
    /// Rate-increase timer period, us (55).
    pub timer_us: f64,
    /// Alpha-decay timer period, us (55).
    pub alpha_timer_us: f64,
    /// Bytes sent per byte-counter stage (10 MB).
    pub byte_counter_bytes: u64,
    /// Fast-recovery stages F (5).
    pub fast_recovery_steps: u32,
    /// The receiver's minimum gap between two CNPs of a flow, us (50); used by the simulator's
    /// receiver, carried here with the rest of DCQCN.
    pub cnp_interval_us: f64,
    /// Rate floor, Mb/s (100).
    pub min_rate_mbps: f64,
}

impl Default for DcqcnConfig {
    fn default() -> Self {
        DcqcnConfig {
            g: 1.0 / 256.0,
            rate_ai_mbps: 40.0,
            rate_hai_mbps: 200.0,
            timer_us: 55.0,
            alpha_timer_us: 55.0,
            byte_counter_bytes: 10_000_000,
            fast_recovery_steps: 5,
            cnp_interval_us: 50.0,
            min_rate_mbps: 100.0,
        }
    }
}

impl DcqcnConfig {
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        check_range("g", self.g, f64::MIN_POSITIVE, 1.0)?;
        check_min("rate_ai_mbps", self.rate_ai_mbps, 0.0)?;
        check_min("rate_hai_mbps", self.rate_hai_mbps, 0.0)?;
        // A timer period under a picosecond would never advance simulated time.
        check_min("timer_us", self.timer_us, 1e-6)?;
        check_min("alpha_timer_us", self.alpha_timer_us, 1e-6)?;
        if self.byte_counter_bytes == 0 {
            return Err(("byte_counter_bytes", "must be at least 1".to_string()));
        }
        check_min("cnp_interval_us", self.cnp_interval_us, 0.0)?;
        check_positive("min_rate_mbps", self.min_rate_mbps)?;
        Ok(())
    }
}

/// Next expiries, running from the first CNP on.
#[derive(Clone, Copy, Debug)]
struct Timers {
    rate: SimTime,
    alpha: SimTime,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    Timer,
    Bytes,
}

#[derive(Clone, Debug)]
pub struct Dcqcn {
    g: f64,
    rai: f64,
    rhai: f64,
    timer: SimTime,
    alpha_timer: SimTime,
    byte_counter: u64,
    f: u32,
    line: f64,
    min_rate: f64,
    /// Current rate RC, b/s.
    rc: f64,
    /// Target rate RT, b/s.
    rt: f64,
    alpha: f64,
    t: u32,
    bc: u32,
    /// Bytes sent since the last byte-counter stage.
    bytes: u64,
    timers: Option<Timers>,
}

impl Dcqcn {
    pub fn new(cfg: &DcqcnConfig, ctx: &CcCtx) -> Dcqcn {
        let line = ctx.line_rate.0 as f64;
        Dcqcn {
            g: cfg.g,
            rai: cfg.rate_ai_mbps * 1e6,
            rhai: cfg.rate_hai_mbps * 1e6,
            timer: SimTime::from_us_f64(cfg.timer_us),
            alpha_timer: SimTime::from_us_f64(cfg.alpha_timer_us),
            byte_counter: cfg.byte_counter_bytes,
            f: cfg.fast_recovery_steps,
            line,
            min_rate: (cfg.min_rate_mbps * 1e6).min(line),
            rc: line,
            rt: line,
            alpha: 1.0,
            t: 0,
            bc: 0,
            bytes: 0,
            timers: None,
        }
    }

    /// The flow's sending rate at `now`.
    pub fn rate(&mut self, now: SimTime) -> BitsPerSec {
        self.advance(now);
        BitsPerSec(self.rc.round() as u64)
    }

    pub fn alpha(&self) -> f64 {
        self.alpha
    }

    /// Target rate RT, b/s.
    pub fn target_rate(&self) -> f64 {
        self.rt
    }

    /// Replays every timer expiry at or before `now`, earliest first (rate timer first on a tie).
    fn advance(&mut self, now: SimTime) {
        let Some(mut tm) = self.timers else { return };
        loop {
            if tm.rate <= tm.alpha {
                if tm.rate > now {
                    break;
                }
                tm.rate = tm.rate + self.timer;
                self.increase(Stage::Timer);
            } else {
                if tm.alpha > now {
                    break;
                }
                tm.alpha = tm.alpha + self.alpha_timer;
                self.alpha *= 1.0 - self.g;
            }
        }
        self.timers = Some(tm);
    }

    fn increase(&mut self, stage: Stage) {
        let (hi, lo) = (self.t.max(self.bc), self.t.min(self.bc));
        if hi >= self.f {
            if lo > self.f {
                self.rt += (lo - self.f) as f64 * self.rhai;
            } else {
                self.rt += self.rai;
            }
            self.rt = self.clamp(self.rt);
        }
        self.rc = self.clamp((self.rt + self.rc) / 2.0);
        match stage {
            Stage::Timer => self.t = self.t.saturating_add(1),
            Stage::Bytes => self.bc = self.bc.saturating_add(1),
        }
    }

    fn clamp(&self, r: f64) -> f64 {
        r.max(self.min_rate).min(self.line)
    }
}

impl CongestionControl for Dcqcn {
    fn rate(&mut self, now: SimTime) -> Option<BitsPerSec> {
        Some(Dcqcn::rate(self, now))
    }
    fn current_rate(&self) -> Option<BitsPerSec> {
        Some(BitsPerSec(self.rc.round() as u64))
    }
    fn on_send(&mut self, now: SimTime, bytes: u64) {
        self.advance(now);
        self.bytes += bytes;
        while self.bytes >= self.byte_counter {
            self.bytes -= self.byte_counter;
            self.increase(Stage::Bytes);
        }
    }
    fn on_ack(&mut self, s: &AckSample) {
        self.advance(s.now);
        if !s.cnp {
            return;
        }
        self.rt = self.rc;
        self.rc = self.clamp(self.rc * (1.0 - self.alpha / 2.0));
        self.alpha = (1.0 - self.g) * self.alpha + self.g;
        self.t = 0;
        self.bc = 0;
        self.bytes = 0;
        self.timers = Some(Timers {
            rate: s.now + self.timer,
            alpha: s.now + self.alpha_timer,
        });
    }
    /// RoCE leaves losses to PFC and go-back-N: no rate change.
    fn on_loss(&mut self, _now: SimTime, _bytes: u64, _kind: LossKind) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    const G: f64 = 1.0 / 256.0;

    fn ctx() -> CcCtx {
        CcCtx::test(SimTime::from_us(10), 100.0, 125_000)
    }

    fn ack(now: SimTime, cnp: bool) -> AckSample {
        AckSample {
            now,
            acked_bytes: 4096,
            ecn: cnp,
            rtt: SimTime::from_us(10),
            cnp,
            inflight: 0,
        }
    }

    fn us(x: u64) -> SimTime {
        SimTime::from_us(x)
    }

    #[test]
    fn starts_at_line_rate_and_a_cnp_cuts_by_half_alpha() {
        let mut d = Dcqcn::new(&DcqcnConfig::default(), &ctx());
        assert_eq!(d.rate(us(0)), BitsPerSec::from_gbps(100.0));
        // Not a CNP: nothing happens.
        d.on_ack(&ack(us(1), false));
        assert_eq!(d.rate(us(1)), BitsPerSec::from_gbps(100.0));
        // alpha = 1: RC halves, RT keeps the old RC, alpha stays (1-g) + g = 1.
        d.on_ack(&ack(us(1), true));
        assert_eq!(d.rate(us(1)), BitsPerSec::from_gbps(50.0));
        assert_eq!(d.target_rate(), 100e9);
        assert_eq!(d.alpha(), 1.0);
        // One alpha period later alpha = 1 - g; the next CNP cuts by alpha / 2 of that.
        d.on_ack(&ack(us(56), false));
        let a = 1.0 - G;
        assert!((d.alpha() - a).abs() < 1e-15);
        let rc = (100e9 + 50e9) / 2.0; // the rate timer fired at 56 us too: fast recovery
        assert_eq!(d.rate(us(56)), BitsPerSec(rc as u64));
        d.on_ack(&ack(us(57), true));
        assert_eq!(d.target_rate(), rc);
        assert_eq!(d.rate(us(57)).0, (rc * (1.0 - a / 2.0)).round() as u64);
        assert!((d.alpha() - ((1.0 - G) * a + G)).abs() < 1e-15);
    }

    #[test]
    fn five_timer_periods_are_five_fast_recovery_halvings() {
        let mut d = Dcqcn::new(&DcqcnConfig::default(), &ctx());
        // Two CNPs (alpha stays 1): RT = 50, RC = 25 Gb/s, RT below line rate so that an
        // additive step would show.
        d.on_ack(&ack(us(10), true));
        d.on_ack(&ack(us(10), true));
        // Each period halves the gap to RT: 37.5, 43.75, 46.875, 48.4375, 49.21875 Gb/s.
        assert_eq!(d.rate(us(10 + 54)), BitsPerSec::from_gbps(25.0));
        assert_eq!(d.rate(us(10 + 55)), BitsPerSec::from_gbps(37.5));
        assert_eq!(d.rate(us(10 + 4 * 55)), BitsPerSec::from_gbps(48.4375));
        assert_eq!(d.rate(us(10 + 5 * 55)), BitsPerSec::from_gbps(49.21875));
        assert_eq!(d.target_rate(), 50e9);
        // The sixth is additive: RT + 40 Mb/s.
        d.rate(us(10 + 6 * 55));
        assert_eq!(d.target_rate(), 50.04e9);
    }

    #[test]
    fn additive_then_hyper_increase() {
        // F = 1 and a 1000-byte counter keep the stages short.
        let cfg = DcqcnConfig {
            fast_recovery_steps: 1,
            byte_counter_bytes: 1000,
            ..DcqcnConfig::default()
        };
        let mut d = Dcqcn::new(&cfg, &ctx());
        let t0 = us(10);
        d.on_ack(&ack(t0, true)); // RC 50, RT 100, alpha 1
        d.on_ack(&ack(t0, true)); // RC 25, RT 50
        let (mut rc, mut rt) = (25e9, 50e9);
        let (ai, hai) = (40e6, 200e6);
        let close = |d: &mut Dcqcn, now, rc: f64, rt: f64| {
            assert!(
                (d.rate(now).0 as f64 - rc).abs() <= 1.0,
                "{:?} vs {rc}",
                d.rate(now)
            );
            assert!(
                (d.target_rate() - rt).abs() < 1e-3,
                "{} vs {rt}",
                d.target_rate()
            );
        };
        // BC stage 1 of (T, BC) = (0, 0): fast recovery.
        d.on_send(t0, 1000);
        rc = (rt + rc) / 2.0;
        close(&mut d, t0, rc, rt);
        // (0, 1): max reached F, min did not pass it: additive.
        d.on_send(t0, 1000);
        rt += ai;
        rc = (rt + rc) / 2.0;
        close(&mut d, t0, rc, rt);
        // Timer at (0, 2), then (1, 2): additive both times.
        for k in 1..=2 {
            rt += ai;
            rc = (rt + rc) / 2.0;
            close(&mut d, t0 + us(55 * k), rc, rt);
        }
        // Timer at (2, 2): both past F = 1, hyper with i = 1.
        rt += hai;
        rc = (rt + rc) / 2.0;
        close(&mut d, t0 + us(165), rc, rt);
        // Bytes at (3, 2): i = 1; then (3, 3): i = 2.
        d.on_send(t0 + us(166), 1000);
        rt += hai;
        rc = (rt + rc) / 2.0;
        close(&mut d, t0 + us(166), rc, rt);
        d.on_send(t0 + us(166), 1000);
        rt += 2.0 * hai;
        rc = (rt + rc) / 2.0;
        close(&mut d, t0 + us(166), rc, rt);
    }

    #[test]
    fn alpha_decays_per_period_and_a_cnp_restarts_its_timer() {
        let mut d = Dcqcn::new(&DcqcnConfig::default(), &ctx());
        d.on_ack(&ack(us(0), true));
        d.rate(us(3 * 55));
        assert_eq!(d.alpha(), (1.0 - G) * (1.0 - G) * (1.0 - G));
        let a = d.alpha();
        // A CNP at 200 us: the next decay is due at 255 us, not at 220 us.
        d.on_ack(&ack(us(200), true));
        let a = (1.0 - G) * a + G;
        assert_eq!(d.alpha(), a);
        d.rate(us(254));
        assert_eq!(d.alpha(), a);
        d.rate(us(255));
        assert_eq!(d.alpha(), a * (1.0 - G));
    }

    #[test]
    fn lazy_catch_up_equals_polling_every_period() {
        let cfg = DcqcnConfig {
            byte_counter_bytes: 300_000,
            ..DcqcnConfig::default()
        };
        let mut lazy = Dcqcn::new(&cfg, &ctx());
        let mut polled = Dcqcn::new(&cfg, &ctx());
        // CNPs and sends at irregular instants; `polled` is also asked every microsecond.
        let events: Vec<(u64, bool)> = (0..400u64)
            .map(|i| (i * 37 + (i * i) % 11, i % 41 == 3 || i % 97 == 50))
            .collect();
        let mut t = 0;
        let mut slowest = u64::MAX;
        for &(at, cnp) in &events {
            while t < at {
                polled.rate(us(t));
                t += 1;
            }
            for d in [&mut lazy, &mut polled] {
                d.on_send(us(at), 40_000);
                if cnp {
                    d.on_ack(&ack(us(at), true));
                }
            }
            assert_eq!(lazy.rate(us(at)), polled.rate(us(at)), "at {at} us");
            slowest = slowest.min(lazy.rate(us(at)).0);
        }
        let end = us(events.last().unwrap().0 + 2000);
        assert_eq!(lazy.rate(end), polled.rate(end));
        assert_eq!(lazy.alpha(), polled.alpha());
        assert_eq!(lazy.target_rate(), polled.target_rate());
        assert!(slowest <= 50_000_000_000, "the CNPs did cut: {slowest}");
    }

    #[test]
    fn rate_stays_between_floor_and_line_rate_and_ignores_loss() {
        let mut d = Dcqcn::new(&DcqcnConfig::default(), &ctx());
        for i in 0..100 {
            d.on_ack(&ack(us(i), true));
        }
        assert_eq!(d.rate(us(100)), BitsPerSec(100_000_000));
        d.on_loss(us(100), 4096, LossKind::Timeout);
        assert_eq!(d.rate(us(100)), BitsPerSec(100_000_000));
        // A long quiet spell: back to (and capped at) line rate.
        assert_eq!(d.rate(us(1_000_000)), BitsPerSec::from_gbps(100.0));
    }

    #[test]
    fn validation_names_the_bad_field() {
        assert!(DcqcnConfig::default().validate().is_ok());
        let bad = |f: fn(&mut DcqcnConfig)| {
            crate::transport::cc::rejected_field(DcqcnConfig::validate, f)
        };
        assert_eq!(bad(|c| c.g = -0.1), "g");
        assert_eq!(bad(|c| c.rate_ai_mbps = f64::NAN), "rate_ai_mbps");
        assert_eq!(bad(|c| c.rate_hai_mbps = -1.0), "rate_hai_mbps");
        assert_eq!(bad(|c| c.timer_us = 0.0), "timer_us");
        assert_eq!(bad(|c| c.alpha_timer_us = f64::INFINITY), "alpha_timer_us");
        assert_eq!(bad(|c| c.byte_counter_bytes = 0), "byte_counter_bytes");
        assert_eq!(bad(|c| c.cnp_interval_us = -5.0), "cnp_interval_us");
        assert_eq!(bad(|c| c.min_rate_mbps = 0.0), "min_rate_mbps");
    }
}
