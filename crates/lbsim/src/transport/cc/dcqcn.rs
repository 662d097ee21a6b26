//! DCQCN reaction point (Zhu et al., "Congestion Control for Large-Scale RDMA Deployments",
//! SIGCOMM 2015): a rate, not a window, cut on congestion notification packets (CNPs) the
//! receiver returns for ECN-marked data, and raised again by a timer (and, in the paper, a byte
//! counter). Two profiles, `[transport.dcqcn] profile`:
//!
//! - `nic` (default): the rules of the NICs that run DCQCN (NVIDIA ConnectX; their parameter
//!   reference lists them) as HPCC's ns-3 models them ("Mellanox DCQCN"), with its `dcqcn`
//!   constants and its rule for scaling the rate steps with the line rate (R_AI = 5 Mb/s and
//!   R_HAI = 50 Mb/s per 25 Gb/s of line rate; 40 and 400 Mb/s at 200 Gb/s, 160 and 1,600 Mb/s
//!   at 800 Gb/s). CNPs only set flags. Every `rate_decrease_interval_us` (4) the sender cuts
//!   once if a CNP came since the last check: RC <- RC (1 - alpha / 2), and RT <- RC first only
//!   if a timer increase happened since the previous cut (`clamp_target_rate = false`, the NIC
//!   default), so a burst of cuts keeps the rate it came from as its target and recovers to it.
//!   Every `alpha_timer_us` (1) alpha <- (1 - g) alpha + g if a CNP came in that slot, else
//!   (1 - g) alpha. The increase timer (`timer_us`, 300) runs from the last cut: fast recovery
//!   RC <- (RT + RC) / 2 for the first F (1) periods, then one additive period
//!   (RT += R_AI), then hyper periods (RT += R_HAI), each followed by RC <- (RT + RC) / 2. No
//!   byte counter. The first CNP only starts the clocks (its cut comes at the first check).
//! - `paper`: the paper's reaction point with its 40 Gb/s constants, unscaled: every CNP cuts at
//!   once with RT <- RC; alpha decays each `alpha_timer_us` (55) without a CNP; increase events
//!   come from the timer (55 us) and a byte counter (10 MB), judged on both stage counts (fast
//!   recovery while max(T, BC) < F = 5, hyper RT += i R_HAI with i = min(T, BC) - F once both
//!   pass F, additive RT += R_AI (40 Mb/s) in between). At 100-800 Gb/s its additive step is
//!   so small against the line rate that a flow cut deep stays starved for milliseconds (an
//!   8-to-1 incast at 800 Gb/s: two flows at 3.5 Gb/s for 10 ms); kept to compare with it.
//!
//! Every field left unset takes its profile's value. Rates stay within [min rate, line rate].
//! Losses get no reaction (RoCE relies on PFC). The simulator schedules no events for CC, so
//! every call first replays, in time order and each at its own instant, the clock expiries up to
//! `now`: the result is the same whenever and however often the simulator asks.

use serde::{Deserialize, Serialize};

use super::{
    check_min, check_positive, check_range, AckSample, CcCtx, CongestionControl, LossKind,
};
use crate::time::{BitsPerSec, SimTime};

/// Which reaction-point rules and constants a DCQCN flow follows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DcqcnProfile {
    /// Deployed NICs' rules, constants scaled with the line rate (HPCC's ns-3 `dcqcn`).
    #[default]
    Nic,
    /// The SIGCOMM 2015 paper's rules and 40 Gb/s constants.
    Paper,
}

/// `[transport.dcqcn]`. Every numeric field is optional: unset, it takes the profile's value
/// (`DcqcnParams::resolve` lists them).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DcqcnConfig {
    pub profile: DcqcnProfile,
    /// Gain of alpha's moving average (both: 1/256).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub g: Option<f64>,
    /// Additive-increase step R_AI, Mb/s (nic: 5 per 25 Gb/s of line rate; paper: 40).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate_ai_mbps: Option<f64>,
    /// Hyper-increase step R_HAI, Mb/s (nic: 50 per 25 Gb/s; paper: 200).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate_hai_mbps: Option<f64>,
    /// Rate-increase timer period, us (nic: 300; paper: 55).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timer_us: Option<f64>,
    /// Alpha update period, us (nic: 1, every slot; paper: 55, a decay without a CNP).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alpha_timer_us: Option<f64>,
    /// Bytes sent per byte-counter stage (paper: 10 MB; nic: none, the timer alone).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub byte_counter_bytes: Option<u64>,
    /// Fast-recovery stages F (nic: 1; paper: 5).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fast_recovery_steps: Option<u32>,
    /// The receiver's minimum gap between two CNPs of a flow, us (nic: 4; paper: 50); used by
    /// the simulator's receiver, carried here with the rest of DCQCN.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cnp_interval_us: Option<f64>,
    /// nic: the sender cuts at most once per this period, us (4). The paper cuts per CNP.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate_decrease_interval_us: Option<f64>,
    /// nic: RT <- RC on every cut, as the paper does (false: only after a timer increase).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clamp_target_rate: Option<bool>,
    /// Rate floor, Mb/s (both: 100).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_rate_mbps: Option<f64>,
}

/// A profile's values with the user's fields over them.
#[derive(Clone, Debug, PartialEq)]
pub struct DcqcnParams {
    pub profile: DcqcnProfile,
    pub g: f64,
    pub rate_ai_mbps: f64,
    pub rate_hai_mbps: f64,
    pub timer_us: f64,
    pub alpha_timer_us: f64,
    /// None: no byte counter.
    pub byte_counter_bytes: Option<u64>,
    pub fast_recovery_steps: u32,
    pub cnp_interval_us: f64,
    pub rate_decrease_interval_us: f64,
    pub clamp_target_rate: bool,
    pub min_rate_mbps: f64,
}

impl DcqcnParams {
    /// The parameters a flow at `line` runs with.
    pub fn resolve(cfg: &DcqcnConfig, line: BitsPerSec) -> DcqcnParams {
        let per_25g = line.0 as f64 / 25e9;
        let base = match cfg.profile {
            DcqcnProfile::Nic => DcqcnParams {
                profile: DcqcnProfile::Nic,
                g: 1.0 / 256.0,
                rate_ai_mbps: 5.0 * per_25g,
                rate_hai_mbps: 50.0 * per_25g,
                timer_us: 300.0,
                alpha_timer_us: 1.0,
                byte_counter_bytes: None,
                fast_recovery_steps: 1,
                cnp_interval_us: 4.0,
                rate_decrease_interval_us: 4.0,
                clamp_target_rate: false,
                min_rate_mbps: 100.0,
            },
            DcqcnProfile::Paper => DcqcnParams {
                profile: DcqcnProfile::Paper,
                g: 1.0 / 256.0,
                rate_ai_mbps: 40.0,
                rate_hai_mbps: 200.0,
                timer_us: 55.0,
                alpha_timer_us: 55.0,
                byte_counter_bytes: Some(10_000_000),
                fast_recovery_steps: 5,
                cnp_interval_us: 50.0,
                rate_decrease_interval_us: 0.0,
                clamp_target_rate: true,
                min_rate_mbps: 100.0,
            },
        };
        DcqcnParams {
            profile: base.profile,
            g: cfg.g.unwrap_or(base.g),
            rate_ai_mbps: cfg.rate_ai_mbps.unwrap_or(base.rate_ai_mbps),
            rate_hai_mbps: cfg.rate_hai_mbps.unwrap_or(base.rate_hai_mbps),
            timer_us: cfg.timer_us.unwrap_or(base.timer_us),
            alpha_timer_us: cfg.alpha_timer_us.unwrap_or(base.alpha_timer_us),
            byte_counter_bytes: cfg.byte_counter_bytes.or(base.byte_counter_bytes),
            fast_recovery_steps: cfg.fast_recovery_steps.unwrap_or(base.fast_recovery_steps),
            cnp_interval_us: cfg.cnp_interval_us.unwrap_or(base.cnp_interval_us),
            rate_decrease_interval_us: cfg
                .rate_decrease_interval_us
                .unwrap_or(base.rate_decrease_interval_us),
            clamp_target_rate: cfg.clamp_target_rate.unwrap_or(base.clamp_target_rate),
            min_rate_mbps: cfg.min_rate_mbps.unwrap_or(base.min_rate_mbps),
        }
    }
}

impl DcqcnConfig {
    /// The receiver's CNP gap, us (the profile's unless set).
    pub fn cnp_interval_us(&self) -> f64 {
        DcqcnParams::resolve(self, BitsPerSec(25_000_000_000)).cnp_interval_us
    }

    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        let opt = |field, v: Option<f64>, lo: f64| v.map_or(Ok(()), |v| check_min(field, v, lo));
        if let Some(g) = self.g {
            check_range("g", g, f64::MIN_POSITIVE, 1.0)?;
        }
        opt("rate_ai_mbps", self.rate_ai_mbps, 0.0)?;
        opt("rate_hai_mbps", self.rate_hai_mbps, 0.0)?;
        // A timer period under a picosecond would never advance simulated time.
        opt("timer_us", self.timer_us, 1e-6)?;
        opt("alpha_timer_us", self.alpha_timer_us, 1e-6)?;
        if self.byte_counter_bytes == Some(0) {
            return Err(("byte_counter_bytes", "must be at least 1".to_string()));
        }
        opt("cnp_interval_us", self.cnp_interval_us, 0.0)?;
        match (self.profile, self.rate_decrease_interval_us) {
            (DcqcnProfile::Nic, v) => opt("rate_decrease_interval_us", v, 1e-6)?,
            (DcqcnProfile::Paper, Some(_)) => {
                return Err((
                    "rate_decrease_interval_us",
                    "is read by the `nic` profile only (the paper cuts on every CNP)".to_string(),
                ))
            }
            (DcqcnProfile::Paper, None) => {}
        }
        if self.profile == DcqcnProfile::Paper && self.clamp_target_rate.is_some() {
            return Err((
                "clamp_target_rate",
                "is read by the `nic` profile only (the paper sets RT <- RC on every cut)"
                    .to_string(),
            ));
        }
        if self.profile == DcqcnProfile::Nic && self.byte_counter_bytes.is_some() {
            return Err((
                "byte_counter_bytes",
                "is read by the `paper` profile only (the `nic` profile increases on its timer)"
                    .to_string(),
            ));
        }
        if let Some(v) = self.min_rate_mbps {
            check_positive("min_rate_mbps", v)?;
        }
        Ok(())
    }
}

/// Next expiries, running from the first CNP on.
#[derive(Clone, Copy, Debug)]
struct Timers {
    /// The next increase event (paper: from the last CNP; nic: from the last cut, or never
    /// before the first cut).
    rate: SimTime,
    alpha: SimTime,
    /// nic: the next rate-decrease check, if a CNP is waiting for one.
    cut: SimTime,
    /// nic: where the check grid starts (the first CNP).
    origin: SimTime,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    Timer,
    Bytes,
}

#[derive(Clone, Debug)]
pub struct Dcqcn {
    nic: bool,
    g: f64,
    rai: f64,
    rhai: f64,
    timer: SimTime,
    alpha_timer: SimTime,
    /// u64::MAX: no byte counter.
    byte_counter: u64,
    f: u32,
    decrease_every: SimTime,
    clamp: bool,
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
    /// nic: a CNP came in the current alpha slot.
    alpha_cnp: bool,
    /// nic: a CNP came since the last decrease check.
    cut_pending: bool,
    timers: Option<Timers>,
}

impl Dcqcn {
    pub fn new(cfg: &DcqcnConfig, ctx: &CcCtx) -> Dcqcn {
        let p = DcqcnParams::resolve(cfg, ctx.line_rate);
        let line = ctx.line_rate.0 as f64;
        Dcqcn {
            nic: p.profile == DcqcnProfile::Nic,
            g: p.g,
            rai: p.rate_ai_mbps * 1e6,
            rhai: p.rate_hai_mbps * 1e6,
            timer: SimTime::from_us_f64(p.timer_us),
            alpha_timer: SimTime::from_us_f64(p.alpha_timer_us),
            byte_counter: p.byte_counter_bytes.unwrap_or(u64::MAX),
            f: p.fast_recovery_steps,
            decrease_every: SimTime::from_us_f64(p.rate_decrease_interval_us),
            clamp: p.clamp_target_rate,
            line,
            min_rate: (p.min_rate_mbps * 1e6).min(line),
            rc: line,
            rt: line,
            alpha: 1.0,
            t: 0,
            bc: 0,
            bytes: 0,
            alpha_cnp: false,
            cut_pending: false,
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

    /// Replays every clock expiry at or before `now`, earliest first; on a tie the alpha update
    /// first (a cut uses the alpha of its instant), then the decrease check, then the increase.
    fn advance(&mut self, now: SimTime) {
        let Some(mut tm) = self.timers else { return };
        loop {
            let cut = if self.cut_pending {
                tm.cut
            } else {
                SimTime::MAX
            };
            if tm.alpha <= cut && tm.alpha <= tm.rate {
                if tm.alpha > now {
                    break;
                }
                tm.alpha = tm.alpha + self.alpha_timer;
                if self.nic && self.alpha_cnp {
                    self.alpha = (1.0 - self.g) * self.alpha + self.g;
                    self.alpha_cnp = false;
                } else {
                    self.alpha *= 1.0 - self.g;
                }
            } else if cut <= tm.rate {
                if cut > now {
                    break;
                }
                self.cut_pending = false;
                self.cut(cut, &mut tm);
            } else {
                if tm.rate > now {
                    break;
                }
                tm.rate = tm.rate + self.timer;
                self.increase(Stage::Timer);
            }
        }
        self.timers = Some(tm);
    }

    /// nic: the check at `at` found a CNP.
    fn cut(&mut self, at: SimTime, tm: &mut Timers) {
        if self.clamp || self.t > 0 {
            self.rt = self.rc;
        }
        self.rc = self.clamp_rate(self.rc * (1.0 - self.alpha / 2.0));
        self.t = 0;
        tm.rate = at + self.timer;
    }

    fn increase(&mut self, stage: Stage) {
        if self.nic {
            // Timer stages alone: fast recovery, one additive period at F, hyper after it.
            if self.t == self.f {
                self.rt = self.clamp_rate(self.rt + self.rai);
            } else if self.t > self.f {
                self.rt = self.clamp_rate(self.rt + self.rhai);
            }
        } else {
            let (hi, lo) = (self.t.max(self.bc), self.t.min(self.bc));
            if hi >= self.f {
                if lo > self.f {
                    self.rt += (lo - self.f) as f64 * self.rhai;
                } else {
                    self.rt += self.rai;
                }
                self.rt = self.clamp_rate(self.rt);
            }
        }
        self.rc = self.clamp_rate((self.rt + self.rc) / 2.0);
        match stage {
            Stage::Timer => self.t = self.t.saturating_add(1),
            Stage::Bytes => self.bc = self.bc.saturating_add(1),
        }
    }

    fn clamp_rate(&self, r: f64) -> f64 {
        r.max(self.min_rate).min(self.line)
    }

    /// nic: a CNP at `now` sets the flags; the first one starts the clocks.
    fn on_cnp_nic(&mut self, now: SimTime) {
        match &mut self.timers {
            None => {
                // The first CNP: alpha starts at 1 (as it is) without a bump, the first check
                // is one decrease period away, and no increase runs before the first cut.
                self.timers = Some(Timers {
                    rate: SimTime::MAX,
                    alpha: now + self.alpha_timer,
                    cut: now + self.decrease_every,
                    origin: now,
                });
            }
            Some(tm) => {
                self.alpha_cnp = true;
                if !self.cut_pending {
                    // The first check after now on the grid that started at the first CNP.
                    let every = self.decrease_every.0.max(1);
                    let k = (now.0 - tm.origin.0) / every + 1;
                    tm.cut = SimTime(tm.origin.0 + k * every);
                }
            }
        }
        self.cut_pending = true;
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
        if self.byte_counter == u64::MAX {
            return;
        }
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
        if self.nic {
            self.on_cnp_nic(s.now);
            return;
        }
        self.rt = self.rc;
        self.rc = self.clamp_rate(self.rc * (1.0 - self.alpha / 2.0));
        self.alpha = (1.0 - self.g) * self.alpha + self.g;
        self.t = 0;
        self.bc = 0;
        self.bytes = 0;
        self.timers = Some(Timers {
            rate: s.now + self.timer,
            alpha: s.now + self.alpha_timer,
            cut: SimTime::MAX,
            origin: s.now,
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

    fn paper() -> DcqcnConfig {
        DcqcnConfig {
            profile: DcqcnProfile::Paper,
            ..DcqcnConfig::default()
        }
    }

    fn us(x: u64) -> SimTime {
        SimTime::from_us(x)
    }

    #[test]
    fn starts_at_line_rate_and_a_cnp_cuts_by_half_alpha() {
        let mut d = Dcqcn::new(&paper(), &ctx());
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
        let mut d = Dcqcn::new(&paper(), &ctx());
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
            fast_recovery_steps: Some(1),
            byte_counter_bytes: Some(1000),
            ..paper()
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
        let mut d = Dcqcn::new(&paper(), &ctx());
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

    /// Replays sends and CNPs at `events` (us, CNP or not) on two flows, one of them also
    /// asked every microsecond, checks they agree at every event and `tail` us after the last,
    /// and returns the lowest rate seen.
    fn lazy_equals_polled(cfg: &DcqcnConfig, events: &[(u64, bool)], tail: u64) -> u64 {
        let mut lazy = Dcqcn::new(cfg, &ctx());
        let mut polled = Dcqcn::new(cfg, &ctx());
        let mut t = 0;
        let mut slowest = u64::MAX;
        for &(at, cnp) in events {
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
        let end = us(events.last().unwrap().0 + tail);
        assert_eq!(lazy.rate(end), polled.rate(end));
        assert_eq!(lazy.alpha(), polled.alpha());
        assert_eq!(lazy.target_rate(), polled.target_rate());
        slowest
    }

    #[test]
    fn lazy_catch_up_equals_polling_every_period() {
        let cfg = DcqcnConfig {
            byte_counter_bytes: Some(300_000),
            ..paper()
        };
        // CNPs and sends at irregular instants.
        let events: Vec<(u64, bool)> = (0..400u64)
            .map(|i| (i * 37 + (i * i) % 11, i % 41 == 3 || i % 97 == 50))
            .collect();
        let slowest = lazy_equals_polled(&cfg, &events, 2000);
        assert!(slowest <= 50_000_000_000, "the CNPs did cut: {slowest}");
    }

    #[test]
    fn rate_stays_between_floor_and_line_rate_and_ignores_loss() {
        let mut d = Dcqcn::new(&paper(), &ctx());
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
    fn nic_profile_scales_its_steps_with_the_line_rate() {
        let at =
            |gbps: f64| DcqcnParams::resolve(&DcqcnConfig::default(), BitsPerSec::from_gbps(gbps));
        assert_eq!((at(25.0).rate_ai_mbps, at(25.0).rate_hai_mbps), (5.0, 50.0));
        assert_eq!(
            (at(800.0).rate_ai_mbps, at(800.0).rate_hai_mbps),
            (160.0, 1600.0)
        );
        let p = at(400.0);
        assert_eq!(
            (
                p.timer_us,
                p.alpha_timer_us,
                p.rate_decrease_interval_us,
                p.cnp_interval_us
            ),
            (300.0, 1.0, 4.0, 4.0)
        );
        assert_eq!(
            (
                p.fast_recovery_steps,
                p.clamp_target_rate,
                p.byte_counter_bytes
            ),
            (1, false, None)
        );
        // A field set by the user wins over the profile.
        let cfg = DcqcnConfig {
            rate_ai_mbps: Some(7.0),
            ..DcqcnConfig::default()
        };
        assert_eq!(
            DcqcnParams::resolve(&cfg, BitsPerSec::from_gbps(800.0)).rate_ai_mbps,
            7.0
        );
    }

    #[test]
    fn nic_cuts_once_per_check_and_keeps_its_target_through_a_burst() {
        // 100 Gb/s: R_AI 20 Mb/s, R_HAI 200 Mb/s; checks every 4 us from the first CNP (10 us),
        // alpha slots every 1 us, increase timer 300 us from each cut, F = 1.
        let mut d = Dcqcn::new(&DcqcnConfig::default(), &ctx());
        let g = G;
        // alpha after slots with no CNP.
        let decay = |a: f64, n: u32| (0..n).fold(a, |a, _| a * (1.0 - g));
        d.on_ack(&ack(us(10), true));
        // The first CNP only starts the clocks: line rate until the check at 14 us.
        assert_eq!(d.rate(us(13)), BitsPerSec::from_gbps(100.0));
        // Slots at 11..14 decay alpha (the first CNP is no bump); the check at 14 uses it.
        let a14 = decay(1.0, 4);
        let rc1 = 100e9 * (1.0 - a14 / 2.0);
        assert_eq!(d.rate(us(14)).0, rc1.round() as u64);
        assert_eq!(
            d.target_rate(),
            100e9,
            "no timer increase yet: the target stays"
        );
        // CNPs at 15 and 16 us: one cut, at the check at 18 us. Alpha: slot 15 decays, slot 16
        // bumps for the CNP at 15, slot 17 bumps for the one at 16, slot 18 decays.
        d.on_ack(&ack(us(15), true));
        d.on_ack(&ack(us(16), true));
        assert_eq!(d.rate(us(17)).0, rc1.round() as u64);
        let bump = |a: f64| (1.0 - g) * a + g;
        let a18 = decay(bump(bump(decay(a14, 1))), 1);
        let rc2 = rc1 * (1.0 - a18 / 2.0);
        assert_eq!(d.rate(us(18)).0, rc2.round() as u64);
        assert_eq!(d.alpha(), a18);
        assert_eq!(
            d.target_rate(),
            100e9,
            "a burst of cuts keeps the rate it came from"
        );
        // 300 us after the cut: fast recovery toward 100 Gb/s.
        assert_eq!(d.rate(us(317)).0, rc2.round() as u64);
        let rc3 = (100e9 + rc2) / 2.0;
        assert_eq!(d.rate(us(318)).0, rc3.round() as u64);
        // A CNP at 400 us, after a timer increase: this cut clamps RT to RC (check at 402).
        d.on_ack(&ack(us(400), true));
        let a402 = decay(bump(decay(a18, 400 - 18)), 1);
        let rt = rc3;
        let rc4 = rc3 * (1.0 - a402 / 2.0);
        assert_eq!(d.rate(us(402)).0, rc4.round() as u64);
        assert_eq!(d.target_rate(), rt);
        // 702: fast recovery; 1002: additive (RT + 20 Mb/s); 1302: hyper (RT + 200 Mb/s).
        let rc5 = (rt + rc4) / 2.0;
        assert_eq!(d.rate(us(702)).0, rc5.round() as u64);
        let rt6 = rt + 20e6;
        let rc6 = (rt6 + rc5) / 2.0;
        assert_eq!(d.rate(us(1002)).0, rc6.round() as u64);
        assert_eq!(d.target_rate(), rt6);
        let rt7 = rt6 + 200e6;
        assert_eq!(d.rate(us(1302)).0, ((rt7 + rc6) / 2.0).round() as u64);
        assert_eq!(d.target_rate(), rt7);
    }

    #[test]
    fn nic_lazy_catch_up_equals_polling_every_microsecond() {
        let events: Vec<(u64, bool)> = (0..400u64)
            .map(|i| (i * 37 + (i * i) % 11, i % 7 == 3 || i % 97 == 50))
            .collect();
        lazy_equals_polled(&DcqcnConfig::default(), &events, 5000);
    }

    #[test]
    fn validation_names_the_bad_field() {
        assert!(DcqcnConfig::default().validate().is_ok());
        assert!(paper().validate().is_ok());
        let bad = |f: fn(&mut DcqcnConfig)| {
            crate::transport::cc::rejected_field(DcqcnConfig::validate, f)
        };
        assert_eq!(bad(|c| c.g = Some(-0.1)), "g");
        assert_eq!(bad(|c| c.rate_ai_mbps = Some(f64::NAN)), "rate_ai_mbps");
        assert_eq!(bad(|c| c.rate_hai_mbps = Some(-1.0)), "rate_hai_mbps");
        assert_eq!(bad(|c| c.timer_us = Some(0.0)), "timer_us");
        assert_eq!(
            bad(|c| c.alpha_timer_us = Some(f64::INFINITY)),
            "alpha_timer_us"
        );
        assert_eq!(bad(|c| c.cnp_interval_us = Some(-5.0)), "cnp_interval_us");
        assert_eq!(bad(|c| c.min_rate_mbps = Some(0.0)), "min_rate_mbps");
        assert_eq!(
            bad(|c| c.rate_decrease_interval_us = Some(0.0)),
            "rate_decrease_interval_us"
        );
        // Options one profile never reads are refused, not ignored.
        assert_eq!(
            bad(|c| c.byte_counter_bytes = Some(1)),
            "byte_counter_bytes"
        );
        let paper_bad = |f: fn(&mut DcqcnConfig)| {
            let mut c = paper();
            f(&mut c);
            c.validate().unwrap_err().0
        };
        assert_eq!(
            paper_bad(|c| c.byte_counter_bytes = Some(0)),
            "byte_counter_bytes"
        );
        assert_eq!(
            paper_bad(|c| c.clamp_target_rate = Some(true)),
            "clamp_target_rate"
        );
        assert_eq!(
            paper_bad(|c| c.rate_decrease_interval_us = Some(4.0)),
            "rate_decrease_interval_us"
        );
    }
}
