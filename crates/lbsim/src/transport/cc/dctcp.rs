//! DCTCP (Alizadeh et al., SIGCOMM 2010; RFC 8257): the window shrinks in proportion to the
//! fraction of its bytes the switches ECN-marked, instead of halving on any sign of congestion.
//!
//! State: cwnd (bytes), alpha (the smoothed marked fraction, starting at 1 as RFC 8257
//! recommends) and one observation window at a time. A window begins at an ACK and records the
//! cumulative bytes sent so far; it ends once the bytes acknowledged or declared lost reach that
//! mark, i.e. once the flight outstanding at its start has left the network (about one RTT).
//! Lost bytes count as retired so that a loss never stretches every later window.
//!
//! At a window's end: alpha <- (1 - g) alpha + g F, F the window's marked bytes over its acked
//! bytes; then, only if the window saw a mark, cwnd <- cwnd (1 - alpha / 2) with the new alpha.
//! The cut depends on marks, not on alpha > 0: alpha decays slowly, and cutting every window
//! while it is positive would keep shrinking an uncongested flow for dozens of RTTs.
//!
//! Until its first mark, a window grows additively: cwnd += ai x MSS x acked / cwnd per ACK, ai
//! packets per window. There is no slow start: the window starts at one BDP. A loss of any kind
//! halves cwnd at most once per window, and a window a loss already cut skips its ECN cut (TCP
//! reduces once per window of data, whatever the signal).

use serde::{Deserialize, Serialize};

use super::{
    check_min, check_positive, check_range, AckSample, CcCtx, CongestionControl, LossKind,
};
use crate::time::SimTime;

/// `[transport.dctcp]`
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DctcpConfig {
    /// Gain of alpha's moving average (1/16, RFC 8257 section 4.2 and the DCTCP paper).
    pub g: f64,
    /// Initial window in packets; unset starts at one BDP (at least one MSS).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub initial_window_packets: Option<f64>,
    /// Smallest window, in packets (1: a window-only sender needs at least one packet).
    pub min_window_packets: f64,
    /// Congestion-avoidance growth per window without marks, in packets (1, as TCP Reno).
    pub additive_increase_packets: f64,
}

impl Default for DctcpConfig {
    fn default() -> Self {
        DctcpConfig {
            g: 1.0 / 16.0,
            initial_window_packets: None,
            min_window_packets: 1.0,
            additive_increase_packets: 1.0,
        }
    }
}

impl DctcpConfig {
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        check_range("g", self.g, f64::MIN_POSITIVE, 1.0)?;
        if let Some(w) = self.initial_window_packets {
            check_positive("initial_window_packets", w)?;
        }
        check_min("min_window_packets", self.min_window_packets, 1.0)?;
        check_min(
            "additive_increase_packets",
            self.additive_increase_packets,
            0.0,
        )?;
        Ok(())
    }
}

#[derive(Clone, Debug)]
pub struct Dctcp {
    g: f64,
    /// Growth per window, bytes.
    ai_bytes: f64,
    min_cwnd: f64,
    cwnd: f64,
    alpha: f64,
    /// Cumulative payload bytes sent.
    sent: u64,
    /// Cumulative payload bytes acknowledged or declared lost.
    retired: u64,
    /// `sent` when the current window began; None while no window is open (nothing in flight).
    window_end: Option<u64>,
    win_acked: u64,
    win_marked: u64,
    /// A loss already cut the current window.
    win_cut: bool,
}

impl Dctcp {
    pub fn new(cfg: &DctcpConfig, ctx: &CcCtx) -> Dctcp {
        let mss = ctx.mss as f64;
        let min_cwnd = cfg.min_window_packets * mss;
        let initial = match cfg.initial_window_packets {
            Some(p) => p * mss,
            None => (ctx.bdp as f64).max(mss),
        };
        Dctcp {
            g: cfg.g,
            ai_bytes: cfg.additive_increase_packets * mss,
            min_cwnd,
            cwnd: initial.max(min_cwnd),
            alpha: 1.0,
            sent: 0,
            retired: 0,
            window_end: None,
            win_acked: 0,
            win_marked: 0,
            win_cut: false,
        }
    }

    /// Bytes the flow may have in flight.
    #[inline]
    pub fn window(&self) -> u64 {
        self.cwnd as u64
    }

    pub fn alpha(&self) -> f64 {
        self.alpha
    }

    fn maybe_end_window(&mut self) {
        let Some(end) = self.window_end else { return };
        if self.retired < end {
            return;
        }
        if self.win_acked > 0 {
            let f = self.win_marked as f64 / self.win_acked as f64;
            self.alpha = (1.0 - self.g) * self.alpha + self.g * f;
        }
        if self.win_marked > 0 && !self.win_cut {
            self.cwnd = (self.cwnd * (1.0 - self.alpha / 2.0)).max(self.min_cwnd);
        }
        self.win_acked = 0;
        self.win_marked = 0;
        self.win_cut = false;
        // The next window covers what is in flight now; with nothing in flight it opens at the
        // next ACK instead, so it is never empty.
        self.window_end = (self.sent > self.retired).then_some(self.sent);
    }
}

impl CongestionControl for Dctcp {
    fn window(&self) -> Option<u64> {
        Some(Dctcp::window(self))
    }
    fn on_send(&mut self, _now: SimTime, bytes: u64) {
        self.sent += bytes;
    }
    fn on_ack(&mut self, s: &AckSample) {
        self.retired += s.acked_bytes;
        if self.window_end.is_none() {
            self.window_end = Some(self.sent);
        }
        self.win_acked += s.acked_bytes;
        if s.ecn {
            self.win_marked += s.acked_bytes;
        }
        if self.win_marked == 0 && !self.win_cut {
            self.cwnd += self.ai_bytes * s.acked_bytes as f64 / self.cwnd;
        }
        self.maybe_end_window();
    }
    fn on_loss(&mut self, _now: SimTime, bytes: u64, _kind: LossKind) {
        self.retired += bytes;
        if !self.win_cut {
            self.cwnd = (self.cwnd / 2.0).max(self.min_cwnd);
            self.win_cut = true;
        }
        self.maybe_end_window();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 4096;

    fn ctx(bdp_packets: u64) -> CcCtx {
        CcCtx::test(SimTime::from_us(10), 400.0, bdp_packets * MSS)
    }

    fn ack(ecn: bool) -> AckSample {
        AckSample {
            now: SimTime::from_us(10),
            acked_bytes: MSS,
            ecn,
            rtt: SimTime::from_us(10),
            cnp: false,
            inflight: 0,
        }
    }

    /// One window of `n` packets, sent together and then acked; `marked(i)` marks packet i.
    fn round(c: &mut Dctcp, n: u64, marked: impl Fn(u64) -> bool) {
        for _ in 0..n {
            c.on_send(SimTime::ZERO, MSS);
        }
        for i in 0..n {
            c.on_ack(&ack(marked(i)));
        }
    }

    #[test]
    fn alpha_converges_to_a_constant_mark_fraction() {
        let mut c = Dctcp::new(&DctcpConfig::default(), &ctx(100));
        // A quarter of every window marked, whatever cwnd does meanwhile.
        for _ in 0..200 {
            round(&mut c, 8, |i| i < 2);
        }
        assert!((c.alpha() - 0.25).abs() < 0.0025, "alpha {}", c.alpha());
    }

    #[test]
    fn a_marked_window_is_cut_once_by_alpha_over_two() {
        let mut c = Dctcp::new(&DctcpConfig::default(), &ctx(100));
        let w0 = c.window() as f64;
        assert_eq!(w0, 100.0 * MSS as f64);
        for _ in 0..100 {
            c.on_send(SimTime::ZERO, MSS);
        }
        // The first 10 of 100 packets marked: no cut before the window ends, nor growth after
        // the first mark.
        for i in 0..99 {
            c.on_ack(&ack(i < 10));
            assert_eq!(c.window() as f64, w0, "ack {i}");
        }
        c.on_ack(&ack(false));
        let alpha = 15.0 / 16.0 + 0.1 / 16.0;
        assert!((c.alpha() - alpha).abs() < 1e-12);
        let want = w0 * (1.0 - alpha / 2.0);
        assert!((c.cwnd - want).abs() < 1e-6, "{} vs {want}", c.cwnd);
    }

    #[test]
    fn unmarked_windows_grow_one_mss_each_even_with_alpha_positive() {
        let mut c = Dctcp::new(&DctcpConfig::default(), &ctx(50));
        let w0 = c.cwnd;
        for _ in 0..10 {
            let n = (c.cwnd / MSS as f64) as u64;
            round(&mut c, n, |_| false);
        }
        assert!(c.alpha() > 0.5, "alpha only decays: {}", c.alpha());
        let grown = (c.cwnd - w0) / MSS as f64;
        assert!((grown - 10.0).abs() < 0.5, "grew {grown} MSS in 10 windows");
    }

    #[test]
    fn loss_halves_once_per_window() {
        let mut c = Dctcp::new(&DctcpConfig::default(), &ctx(64));
        let w0 = c.cwnd;
        for _ in 0..64 {
            c.on_send(SimTime::ZERO, MSS);
        }
        c.on_ack(&ack(false));
        let w1 = c.cwnd;
        c.on_loss(SimTime::ZERO, MSS, LossKind::Reorder);
        c.on_loss(SimTime::ZERO, MSS, LossKind::Timeout);
        assert_eq!(c.cwnd, w1 / 2.0);
        assert!(w1 > w0);
        // A mark later in the same window does not cut again, and nothing grows.
        c.on_ack(&ack(true));
        for _ in 4..64 {
            c.on_ack(&ack(false));
        }
        assert_eq!(c.cwnd, w1 / 2.0);
        // The next window may halve again.
        for _ in 0..10 {
            c.on_send(SimTime::ZERO, MSS);
        }
        c.on_ack(&ack(false));
        let w2 = c.cwnd;
        c.on_loss(SimTime::ZERO, MSS, LossKind::Nack);
        assert_eq!(c.cwnd, w2 / 2.0);
    }

    #[test]
    fn window_never_falls_below_the_floor() {
        let mut c = Dctcp::new(&DctcpConfig::default(), &ctx(4));
        for _ in 0..50 {
            round(&mut c, 4, |_| true);
            c.on_send(SimTime::ZERO, MSS);
            c.on_loss(SimTime::ZERO, MSS, LossKind::Timeout);
        }
        assert_eq!(c.window(), MSS);
    }

    #[test]
    fn initial_window_is_one_bdp_or_the_configured_packets() {
        assert_eq!(
            Dctcp::new(&DctcpConfig::default(), &ctx(30)).window(),
            30 * MSS
        );
        assert_eq!(Dctcp::new(&DctcpConfig::default(), &ctx(0)).window(), MSS);
        let cfg = DctcpConfig {
            initial_window_packets: Some(10.0),
            ..DctcpConfig::default()
        };
        assert_eq!(Dctcp::new(&cfg, &ctx(30)).window(), 10 * MSS);
    }

    #[test]
    fn validation_names_the_bad_field() {
        assert!(DctcpConfig::default().validate().is_ok());
        let bad = |f: fn(&mut DctcpConfig)| {
            crate::transport::cc::rejected_field(DctcpConfig::validate, f)
        };
        assert_eq!(bad(|c| c.g = 0.0), "g");
        assert_eq!(bad(|c| c.g = f64::NAN), "g");
        assert_eq!(bad(|c| c.g = 1.5), "g");
        assert_eq!(
            bad(|c| c.initial_window_packets = Some(-1.0)),
            "initial_window_packets"
        );
        assert_eq!(bad(|c| c.min_window_packets = 0.5), "min_window_packets");
        assert_eq!(
            bad(|c| c.additive_increase_packets = f64::INFINITY),
            "additive_increase_packets"
        );
        assert_eq!(
            bad(|c| c.additive_increase_packets = -1.0),
            "additive_increase_packets"
        );
    }
}
