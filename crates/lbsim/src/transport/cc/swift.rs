//! Swift (Kumar et al., "Swift: Delay is Simple and Effective for Congestion Control in the
//! Datacenter", SIGCOMM 2020) and MSwift (Gerstein, Silberstein, Keslassy, arXiv 2509.07907).
//!
//! Swift keeps the measured delay near a target with AIMD on a window that may fall below one
//! packet (it then paces one packet per `srtt x MSS / cwnd`). The target is the base target plus
//! `per_hop_ns` for each link of the path plus a flow-scaling term
//! `fs = clamp(a / sqrt(cwnd) + b, 0, fs_range)` (cwnd in packets), with a and b chosen so fs is
//! `fs_range` at `fs_min_cwnd_packets` and 0 at `fs_max_cwnd_packets`: many small windows get a
//! larger target, which keeps the queue they build from triggering cuts they cannot afford.
//! `fs_range` is 5 x the base target unless set, as htsim's Swift-style sender sets it; without
//! it, a host running a hundred flows at once drives their windows to a hundredth of a packet,
//! paced hundreds of microseconds apart, and its link idles while they creep back.
//!
//! Per ACK, with delay the ACK's RTT: below target, cwnd += ai x MSS x acked / cwnd (ai packets
//! per RTT), or cwnd += ai x acked when cwnd is under one packet (per-RTT growth would be too slow
//! there); at or above target, at most once per smoothed RTT,
//! cwnd *= max(1 - beta (delay - target) / delay, 1 - max_mdf). A loss declared by reordering or
//! a NACK cuts cwnd by max_mdf, once per RTT as well; so does a timeout, and five timeouts in a
//! row drop it to the minimum.
//!
//! MSwift feeds the same law with the median of the last W delay samples, so a few packets
//! delayed on one bad path of a sprayed flow do not cut the whole window, and ignores losses
//! declared by reordering, which under packet spraying are not a sign of congestion.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use super::{check_positive, check_range, AckSample, CcCtx, CongestionControl, LossKind};
use crate::time::{BitsPerSec, SimTime};

/// Without `median_window`, MSwift's window follows cwnd in packets, up to this many samples.
const MAX_AUTO_MEDIAN_WINDOW: usize = 1024;

/// `[transport.swift]`, read by both Swift and MSwift; defaults from the Swift paper.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SwiftConfig {
    /// Base target delay, us; unset uses the path's base RTT, so the target allows
    /// `hops x per_hop_ns` of queueing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base_target_us: Option<f64>,
    /// Target added per link of the path, ns (topology scaling, h in the paper).
    pub per_hop_ns: f64,
    /// Range of the flow-scaling term, us; unset is 5 x the base target (htsim's Swift-style
    /// sender sets it so, with the paper's 0.1 and 100 packets), 0 disables flow scaling.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fs_range_us: Option<f64>,
    /// Window, in packets, at or below which flow scaling adds its whole range (0.1, the paper).
    pub fs_min_cwnd_packets: f64,
    /// Window, in packets, at or above which flow scaling adds nothing (100, the paper).
    pub fs_max_cwnd_packets: f64,
    /// Additive increase, packets per RTT (1).
    pub ai_packets: f64,
    /// Multiplicative-decrease gain on the relative excess delay (0.8, the paper).
    pub beta: f64,
    /// Largest fraction one decrease removes (0.5, the paper).
    pub max_mdf: f64,
    /// Smallest window, packets (0.01: Swift paces below one packet).
    pub min_cwnd_packets: f64,
    /// Largest window, packets; unset is 1.5 BDP: a lone flow fills the path and may queue the
    /// half BDP beyond, and a flow whose delay stays under target (its bottleneck not in the
    /// network) cannot grow without bound.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_cwnd_packets: Option<f64>,
    /// The window a flow starts with, in BDPs of its path (1: a lone flow fills its path from
    /// its first RTT and queues nothing; more starts it ahead of the queues it will meet).
    pub init_cwnd_bdp: f64,
}

impl Default for SwiftConfig {
    fn default() -> Self {
        SwiftConfig {
            base_target_us: None,
            per_hop_ns: 500.0,
            fs_range_us: None,
            fs_min_cwnd_packets: 0.1,
            fs_max_cwnd_packets: 100.0,
            ai_packets: 1.0,
            beta: 0.8,
            max_mdf: 0.5,
            min_cwnd_packets: 0.01,
            max_cwnd_packets: None,
            init_cwnd_bdp: 1.0,
        }
    }
}

impl SwiftConfig {
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        if let Some(t) = self.base_target_us {
            check_range("base_target_us", t, 0.0, f64::INFINITY)?;
        }
        check_range("per_hop_ns", self.per_hop_ns, 0.0, f64::INFINITY)?;
        if let Some(r) = self.fs_range_us {
            check_range("fs_range_us", r, 0.0, f64::INFINITY)?;
        }
        check_positive("fs_min_cwnd_packets", self.fs_min_cwnd_packets)?;
        check_positive("fs_max_cwnd_packets", self.fs_max_cwnd_packets)?;
        if self.fs_max_cwnd_packets <= self.fs_min_cwnd_packets {
            return Err((
                "fs_max_cwnd_packets",
                format!(
                    "must exceed fs_min_cwnd_packets ({}), got {}",
                    self.fs_min_cwnd_packets, self.fs_max_cwnd_packets
                ),
            ));
        }
        check_range("ai_packets", self.ai_packets, 0.0, f64::INFINITY)?;
        check_range("beta", self.beta, 0.0, 1.0)?;
        check_range("max_mdf", self.max_mdf, 0.0, 1.0)?;
        check_positive("min_cwnd_packets", self.min_cwnd_packets)?;
        check_positive("init_cwnd_bdp", self.init_cwnd_bdp)?;
        if let Some(m) = self.max_cwnd_packets {
            check_range("max_cwnd_packets", m, self.min_cwnd_packets, f64::INFINITY)?;
        }
        Ok(())
    }
}

/// `[transport.mswift]`: what MSwift adds to `[transport.swift]`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MswiftConfig {
    /// Delay samples the median is taken over; unset follows the window, one sample per packet
    /// of cwnd (at least 1, at most 1024), i.e. about one RTT of ACKs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub median_window: Option<u32>,
}

impl MswiftConfig {
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        if self.median_window == Some(0) {
            return Err(("median_window", "must be at least 1".to_string()));
        }
        Ok(())
    }
}

/// MSwift's running median of the last delay samples.
#[derive(Clone, Debug)]
struct MedianFilter {
    fixed: Option<usize>,
    samples: VecDeque<u64>,
    scratch: Vec<u64>,
}

impl MedianFilter {
    /// Adds a sample and returns the median of the last `fixed` (else `auto`) samples; with an
    /// even count, the lower of the two middle ones, so the answer is always a real sample.
    fn push(&mut self, sample: u64, auto: usize) -> u64 {
        let len = self.fixed.unwrap_or(auto).max(1);
        self.samples.push_back(sample);
        while self.samples.len() > len {
            self.samples.pop_front();
        }
        self.scratch.clear();
        self.scratch.extend(self.samples.iter().copied());
        let mid = (self.scratch.len() - 1) / 2;
        *self.scratch.select_nth_unstable(mid).1
    }
}

/// Consecutive timeouts after which the window falls to its minimum (Swift, Algorithm 1).
const RETX_RESET_THRESHOLD: u32 = 5;

#[derive(Clone, Debug)]
pub struct Swift {
    mss: f64,
    ai: f64,
    beta: f64,
    max_mdf: f64,
    min_cwnd: f64,
    max_cwnd: f64,
    /// Base target plus the hop term, ps.
    fixed_target: f64,
    /// Flow scaling, ps: fs = clamp(fs_a / sqrt(cwnd packets) + fs_b, 0, fs_range).
    fs_range: f64,
    fs_a: f64,
    fs_b: f64,
    line_rate: f64,
    base_rtt: f64,
    cwnd: f64,
    /// Smoothed RTT, ps (gain 1/8); None before the first sample.
    srtt: Option<f64>,
    last_decrease: Option<SimTime>,
    /// Timeouts since the last ACK (Swift: the window drops to the minimum only after
    /// RETX_RESET_THRESHOLD of them in a row).
    timeouts_in_row: u32,
    /// MSwift only.
    median: Option<MedianFilter>,
}

impl Swift {
    /// `mswift` set makes this MSwift.
    pub fn new(cfg: &SwiftConfig, mswift: Option<&MswiftConfig>, ctx: &CcCtx) -> Swift {
        let mss = ctx.mss as f64;
        let base = match cfg.base_target_us {
            Some(us) => us * 1e6,
            None => ctx.base_rtt.ps() as f64,
        };
        let fixed_target = base + ctx.hops as f64 * cfg.per_hop_ns * 1e3;
        let fs_range = cfg.fs_range_us.map_or(5.0 * base, |us| us * 1e6);
        let (fs_a, fs_b) = if fs_range > 0.0 {
            let (lo, hi) = (
                1.0 / cfg.fs_min_cwnd_packets.sqrt(),
                1.0 / cfg.fs_max_cwnd_packets.sqrt(),
            );
            let a = fs_range / (lo - hi);
            (a, -a * hi)
        } else {
            (0.0, 0.0)
        };
        let min_cwnd = cfg.min_cwnd_packets * mss;
        let max_cwnd = match cfg.max_cwnd_packets {
            Some(p) => p * mss,
            None => 1.5 * ctx.bdp as f64,
        }
        .max(min_cwnd);
        Swift {
            mss,
            ai: cfg.ai_packets,
            beta: cfg.beta,
            max_mdf: cfg.max_mdf,
            min_cwnd,
            max_cwnd,
            fixed_target,
            fs_range,
            fs_a,
            fs_b,
            line_rate: ctx.line_rate.0 as f64,
            base_rtt: ctx.base_rtt.ps() as f64,
            cwnd: (cfg.init_cwnd_bdp * ctx.bdp as f64)
                .max(mss)
                .clamp(min_cwnd, max_cwnd),
            srtt: None,
            last_decrease: None,
            timeouts_in_row: 0,
            median: mswift.map(|m| MedianFilter {
                fixed: m.median_window.map(|w| w as usize),
                samples: VecDeque::new(),
                scratch: Vec::new(),
            }),
        }
    }

    /// Bytes the flow may have in flight: at least one packet, which pacing then spaces out.
    #[inline]
    pub fn window(&self) -> u64 {
        self.cwnd.max(self.mss) as u64
    }

    /// With cwnd under one packet, one packet per `srtt x MSS / cwnd`.
    pub fn pacing_rate(&self) -> Option<BitsPerSec> {
        if self.cwnd >= self.mss {
            return None;
        }
        let rtt = self.srtt.unwrap_or(self.base_rtt);
        if rtt <= 0.0 {
            return None;
        }
        let bps = self.cwnd * 8.0 * 1e12 / rtt;
        Some(BitsPerSec(bps.min(self.line_rate).round().max(1.0) as u64))
    }

    /// The current target delay.
    pub fn target(&self) -> SimTime {
        SimTime(self.target_ps().round() as u64)
    }

    fn target_ps(&self) -> f64 {
        if self.fs_range == 0.0 {
            return self.fixed_target;
        }
        let fs = self.fs_a / (self.cwnd / self.mss).sqrt() + self.fs_b;
        self.fixed_target + fs.clamp(0.0, self.fs_range)
    }

    /// At most one decrease per smoothed RTT: the delay of packets sent before a cut does not
    /// reflect it yet.
    fn can_decrease(&self, now: SimTime) -> bool {
        match self.last_decrease {
            None => true,
            Some(t) => {
                let rtt = self.srtt.unwrap_or(self.base_rtt);
                now.ps().saturating_sub(t.ps()) as f64 >= rtt
            }
        }
    }
}

impl CongestionControl for Swift {
    fn window(&self) -> Option<u64> {
        Some(Swift::window(self))
    }
    fn rate(&mut self, _now: SimTime) -> Option<BitsPerSec> {
        self.pacing_rate()
    }
    fn current_rate(&self) -> Option<BitsPerSec> {
        self.pacing_rate()
    }
    fn on_send(&mut self, _now: SimTime, _bytes: u64) {}
    fn on_ack(&mut self, s: &AckSample) {
        self.timeouts_in_row = 0;
        let rtt = s.rtt.ps();
        self.srtt = Some(match self.srtt {
            None => rtt as f64,
            Some(v) => v + (rtt as f64 - v) / 8.0,
        });
        let delay = match &mut self.median {
            None => rtt,
            Some(m) => {
                let auto =
                    ((self.cwnd / self.mss).ceil() as usize).clamp(1, MAX_AUTO_MEDIAN_WINDOW);
                m.push(rtt, auto)
            }
        } as f64;
        let target = self.target_ps();
        if delay < target {
            let acked = s.acked_bytes as f64;
            if self.cwnd >= self.mss {
                self.cwnd += self.ai * acked * self.mss / self.cwnd;
            } else {
                self.cwnd += self.ai * acked;
            }
        } else if self.can_decrease(s.now) {
            let f = (1.0 - self.beta * (delay - target) / delay).max(1.0 - self.max_mdf);
            self.cwnd *= f;
            self.last_decrease = Some(s.now);
        }
        self.cwnd = self.cwnd.clamp(self.min_cwnd, self.max_cwnd);
    }
    fn on_loss(&mut self, now: SimTime, _bytes: u64, kind: LossKind) {
        match kind {
            LossKind::Reorder if self.median.is_some() => {}
            LossKind::Reorder | LossKind::Nack => {
                if self.can_decrease(now) {
                    self.cwnd = (self.cwnd * (1.0 - self.max_mdf)).max(self.min_cwnd);
                    self.last_decrease = Some(now);
                }
            }
            LossKind::Timeout => {
                self.timeouts_in_row += 1;
                // As for fast recovery, the multiplicative cut is once per RTT (Algorithm 1).
                if self.timeouts_in_row >= RETX_RESET_THRESHOLD {
                    self.cwnd = self.min_cwnd;
                    self.last_decrease = Some(now);
                } else if self.can_decrease(now) {
                    self.cwnd = (self.cwnd * (1.0 - self.max_mdf)).max(self.min_cwnd);
                    self.last_decrease = Some(now);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 4096;
    const BDP: u64 = 125_000; // 100 Gb/s x 10 us

    fn ctx() -> CcCtx {
        CcCtx {
            base_rtt: SimTime::from_us(10),
            line_rate: BitsPerSec::from_gbps(100.0),
            mss: MSS as u32,
            mtu: MSS as u32 + 64,
            hops: 6,
            bdp: BDP,
            trimming: false,
        }
    }

    fn ack(now: SimTime, rtt: SimTime) -> AckSample {
        AckSample {
            now,
            acked_bytes: MSS,
            ecn: false,
            rtt,
            cnp: false,
            inflight: 0,
        }
    }

    fn swift() -> Swift {
        Swift::new(&SwiftConfig::default(), None, &ctx())
    }

    /// Without flow scaling: the target is the base RTT plus the hop term, 13 us.
    fn swift_fixed_target() -> Swift {
        let cfg = SwiftConfig {
            fs_range_us: Some(0.0),
            ..SwiftConfig::default()
        };
        Swift::new(&cfg, None, &ctx())
    }

    fn mswift(w: u32) -> Swift {
        let m = MswiftConfig {
            median_window: Some(w),
        };
        Swift::new(&SwiftConfig::default(), Some(&m), &ctx())
    }

    fn us(x: u64) -> SimTime {
        SimTime::from_us(x)
    }

    #[test]
    fn target_is_base_rtt_plus_the_hop_term() {
        // 10 us + 6 hops x 500 ns.
        assert_eq!(swift_fixed_target().target(), us(13));
        let cfg = SwiftConfig {
            base_target_us: Some(20.0),
            per_hop_ns: 100.0,
            fs_range_us: Some(0.0),
            ..SwiftConfig::default()
        };
        assert_eq!(
            Swift::new(&cfg, None, &ctx()).target(),
            SimTime::from_ns(20_600)
        );
    }

    #[test]
    fn below_target_grows_about_ai_packets_per_rtt() {
        let mut s = swift();
        let w0 = s.cwnd;
        let mut now = us(0);
        for _ in 0..10 {
            let n = (s.cwnd / MSS as f64) as u64;
            for _ in 0..n {
                now = now + SimTime::from_ns(300);
                s.on_ack(&ack(now, us(10)));
            }
        }
        let grown = (s.cwnd - w0) / MSS as f64;
        assert!(
            (grown - 10.0).abs() < 0.5,
            "grew {grown} packets in 10 RTTs"
        );
    }

    #[test]
    fn delay_twice_the_target_cuts_by_0_6_once_per_rtt() {
        let mut s = swift_fixed_target();
        let w0 = s.cwnd;
        s.on_ack(&ack(us(100), us(26)));
        assert!(
            (s.cwnd - 0.6 * w0).abs() < 1e-9,
            "{} vs {}",
            s.cwnd,
            0.6 * w0
        );
        // Within the same RTT (srtt = 26 us): no second cut, and no growth either.
        s.on_ack(&ack(us(120), us(26)));
        assert!((s.cwnd - 0.6 * w0).abs() < 1e-9);
        s.on_ack(&ack(us(126), us(26)));
        assert!((s.cwnd - 0.36 * w0).abs() < 1e-9);
    }

    #[test]
    fn one_decrease_removes_at_most_max_mdf() {
        let mut s = swift();
        let w0 = s.cwnd;
        // 1 - 0.8 x 117/130 = 0.28 would be deeper than 1 - max_mdf.
        s.on_ack(&ack(us(100), us(130)));
        assert!((s.cwnd - 0.5 * w0).abs() < 1e-9);
    }

    /// Swift's Algorithm 1: a retransmission timeout cuts by max_mdf only if the window was not
    /// cut within the last RTT (the reset to the minimum after five in a row is unguarded).
    #[test]
    fn a_timeout_within_an_rtt_of_a_cut_does_not_cut_again() {
        let mut s = swift();
        let w0 = s.cwnd;
        s.on_loss(us(1), MSS, LossKind::Nack);
        assert_eq!(s.cwnd, 0.5 * w0);
        // 5 us later, within the 10 us RTT (no sample yet: the base RTT).
        s.on_loss(us(6), MSS, LossKind::Timeout);
        assert_eq!(s.cwnd, 0.5 * w0, "cut once per RTT");
        s.on_loss(us(11), MSS, LossKind::Timeout);
        assert_eq!(s.cwnd, 0.25 * w0, "a whole RTT after the cut");
    }

    #[test]
    fn under_one_packet_the_window_is_paced() {
        let mut s = swift();
        assert_eq!(s.pacing_rate(), None);
        let w0 = s.cwnd;
        s.on_loss(us(1), MSS, LossKind::Timeout);
        assert_eq!(s.cwnd, 0.5 * w0, "one timeout: a max_mdf cut");
        for _ in 1..RETX_RESET_THRESHOLD {
            s.on_loss(us(1), MSS, LossKind::Timeout);
        }
        assert_eq!(s.cwnd, 0.01 * MSS as f64, "five in a row: the minimum");
        assert_eq!(s.window(), MSS);
        // 40.96 bytes per 10 us (no RTT sample yet: the base RTT).
        assert_eq!(s.pacing_rate(), Some(BitsPerSec(32_768_000)));
        // Growth under one packet is ai x acked: 40.96 + 4096 bytes.
        s.on_ack(&ack(us(20), us(10)));
        assert!((s.cwnd - 4136.96).abs() < 1e-9);
        assert_eq!(s.pacing_rate(), None);
    }

    #[test]
    fn pacing_follows_the_smoothed_rtt() {
        let mut s = swift();
        s.cwnd = 2048.0;
        s.srtt = Some(SimTime::from_us(16).ps() as f64);
        // Half a packet per 16 us.
        assert_eq!(s.pacing_rate(), Some(BitsPerSec(1_024_000_000)));
    }

    #[test]
    fn mswift_median_ignores_two_outliers_in_five() {
        let (mut sw, mut ms) = (swift(), mswift(5));
        let mut now = us(0);
        let mut feed = |s: &mut Swift, rtt| {
            now = now + us(1);
            s.on_ack(&ack(now, rtt));
        };
        for _ in 0..3 {
            feed(&mut sw, us(10));
            feed(&mut ms, us(10));
        }
        let (w_sw, w_ms) = (sw.cwnd, ms.cwnd);
        for _ in 0..2 {
            feed(&mut sw, us(50));
            feed(&mut ms, us(50));
        }
        assert!(sw.cwnd < 0.8 * w_sw, "Swift cuts on the outlier");
        assert!(ms.cwnd > w_ms, "MSwift keeps growing: median 10 us");
        // A third slow sample makes it the median: now MSwift cuts too.
        let w = ms.cwnd;
        feed(&mut ms, us(50));
        assert!(ms.cwnd < w);
    }

    #[test]
    fn mswift_default_median_window_follows_cwnd() {
        let mut ms = Swift::new(
            &SwiftConfig::default(),
            Some(&MswiftConfig::default()),
            &ctx(),
        );
        for i in 0..40 {
            ms.on_ack(&ack(us(i), us(10)));
        }
        // cwnd is now ~32 packets, so ~32 samples: slow ones must be a majority (17) before the
        // median moves, where a 5-sample window would have cut at the third.
        let mut slow = 0;
        let mut w = ms.cwnd;
        while ms.cwnd >= w {
            w = ms.cwnd;
            slow += 1;
            ms.on_ack(&ack(us(40 + slow), us(50)));
        }
        assert!((16..=18).contains(&slow), "cut after {slow} slow samples");
    }

    #[test]
    fn reorder_losses_cut_swift_but_not_mswift() {
        let (mut sw, mut ms) = (swift(), mswift(5));
        let w0 = sw.cwnd;
        sw.on_loss(us(1), MSS, LossKind::Reorder);
        ms.on_loss(us(1), MSS, LossKind::Reorder);
        assert_eq!(sw.cwnd, 0.5 * w0);
        assert_eq!(ms.cwnd, w0);
        // Once per RTT: a second loss right after does nothing.
        sw.on_loss(us(2), MSS, LossKind::Nack);
        assert_eq!(sw.cwnd, 0.5 * w0);
        // NACKs and timeouts count for MSwift.
        ms.on_loss(us(3), MSS, LossKind::Nack);
        assert_eq!(ms.cwnd, 0.5 * w0);
        for _ in 0..RETX_RESET_THRESHOLD {
            ms.on_loss(us(4), MSS, LossKind::Timeout);
        }
        assert_eq!(ms.cwnd, 0.01 * MSS as f64);
    }

    #[test]
    fn the_first_window_is_init_cwnd_bdp_of_the_path_within_its_bounds() {
        assert_eq!(swift().window(), BDP);
        let at = |init: f64| {
            let cfg = SwiftConfig {
                init_cwnd_bdp: init,
                ..SwiftConfig::default()
            };
            Swift::new(&cfg, None, &ctx()).window()
        };
        assert_eq!(at(1.2), BDP * 6 / 5);
        assert_eq!(at(3.0), BDP * 3 / 2, "capped at max_cwnd, 1.5 BDP");
        assert_eq!(at(0.001), MSS, "at least a packet is allowed in flight");
    }

    #[test]
    fn window_is_capped_at_one_and_a_half_bdp() {
        let mut s = swift();
        for i in 0..10_000 {
            s.on_ack(&ack(SimTime::from_ns(i * 100), us(10)));
        }
        assert_eq!(s.window(), BDP * 3 / 2);
    }

    #[test]
    fn flow_scaling_spans_its_range_between_the_two_windows() {
        let cfg = SwiftConfig {
            fs_range_us: Some(5.0),
            max_cwnd_packets: Some(1000.0),
            ..SwiftConfig::default()
        };
        let mut s = Swift::new(&cfg, None, &ctx());
        let t = |s: &mut Swift, pkts: f64| {
            s.cwnd = pkts * MSS as f64;
            s.target_ps() / 1e6
        };
        assert!((t(&mut s, 0.1) - 18.0).abs() < 1e-9);
        assert!((t(&mut s, 0.05) - 18.0).abs() < 1e-9);
        assert!((t(&mut s, 100.0) - 13.0).abs() < 1e-9);
        assert!((t(&mut s, 200.0) - 13.0).abs() < 1e-9);
        // a = 5 / (1/sqrt(0.1) - 1/10), b = -a/10: at 1 packet, fs = 0.9 a.
        let a = 5.0 / (10f64.sqrt() - 0.1);
        assert!((t(&mut s, 1.0) - (13.0 + 0.9 * a)).abs() < 1e-9);
    }

    /// By default flow scaling spans 5 x the base target (10 us here): 50 us at 0.1 packets or
    /// less, nothing at 100 packets or more; with a 1 BDP initial window (30.5 packets of 4,096
    /// B) it adds a = 50 / (1/sqrt(0.1) - 1/10) over sqrt(30.5), less a/10.
    #[test]
    fn flow_scaling_is_on_by_default_over_five_base_targets() {
        let cfg = SwiftConfig {
            max_cwnd_packets: Some(1000.0),
            ..SwiftConfig::default()
        };
        let mut s = Swift::new(&cfg, None, &ctx());
        let a = 50.0 / (10f64.sqrt() - 0.1);
        let w = BDP as f64 / MSS as f64;
        assert!((s.target_ps() / 1e6 - (13.0 + a / w.sqrt() - a / 10.0)).abs() < 1e-9);
        s.cwnd = 0.1 * MSS as f64;
        assert!((s.target_ps() / 1e6 - 63.0).abs() < 1e-9);
        s.cwnd = 100.0 * MSS as f64;
        assert!((s.target_ps() / 1e6 - 13.0).abs() < 1e-9);
    }

    #[test]
    fn validation_names_the_bad_field() {
        assert!(SwiftConfig::default().validate().is_ok());
        assert!(MswiftConfig::default().validate().is_ok());
        let bad = |f: fn(&mut SwiftConfig)| {
            let mut c = SwiftConfig::default();
            f(&mut c);
            c.validate().unwrap_err().0
        };
        assert_eq!(bad(|c| c.base_target_us = Some(-1.0)), "base_target_us");
        assert_eq!(bad(|c| c.per_hop_ns = f64::NAN), "per_hop_ns");
        assert_eq!(bad(|c| c.fs_range_us = Some(-1.0)), "fs_range_us");
        assert_eq!(bad(|c| c.fs_min_cwnd_packets = 0.0), "fs_min_cwnd_packets");
        assert_eq!(bad(|c| c.fs_max_cwnd_packets = 0.05), "fs_max_cwnd_packets");
        assert_eq!(bad(|c| c.ai_packets = f64::INFINITY), "ai_packets");
        assert_eq!(bad(|c| c.beta = 1.5), "beta");
        assert_eq!(bad(|c| c.max_mdf = -0.1), "max_mdf");
        assert_eq!(bad(|c| c.min_cwnd_packets = 0.0), "min_cwnd_packets");
        assert_eq!(bad(|c| c.init_cwnd_bdp = 0.0), "init_cwnd_bdp");
        assert_eq!(
            bad(|c| c.max_cwnd_packets = Some(0.001)),
            "max_cwnd_packets"
        );
        let m = MswiftConfig {
            median_window: Some(0),
        };
        assert_eq!(m.validate().unwrap_err().0, "median_window");
    }
}
