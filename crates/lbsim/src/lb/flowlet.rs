//! Flowlet adaptive routing (switch, CONGA/LetFlow-lite; the study's "Switch Flowlet"): a switch
//! remembers each flow's port and the time of its last packet. A packet arriving more than
//! `load_balancing.flowlet_gap_us` after the flow's previous one (default 10 us, the study's fork;
//! LetFlow/CONGA use hundreds of us) starts a new flowlet, which goes to the least-occupied port
//! (the current port if it ties for least, else at random among the least); otherwise it keeps
//! the flowlet's port, so packets within a flowlet stay in order. The study's fork moves only to a
//! strictly better port and only half the time; lbsim always takes the shortest queue.
//!
//! The table is a BTreeMap keyed by the 5-tuple hash (data and ACKs are separate flows), so its
//! iteration order could never depend on a hasher; it is only ever looked up, never iterated.
//! Entries are kept for the whole run (a real switch ages them out; a run's flows are finite).

use std::collections::BTreeMap;

use super::config::{Opt, Options};
use super::ecmp::FixedEntropy;
use super::{FlowCtx, PacketView, Scheme, SchemeInfo, SwitchCtx, SwitchPolicy};
use crate::net::Port;
use crate::rng::SimRng;
use crate::time::SimTime;

/// `load_balancing.flowlet_gap_us`: an idle gap longer than this starts a new flowlet (10, the
/// study's fork).
pub const GAP: Opt<SimTime> = Opt::micros("flowlet_gap_us", 10.0);

/// The `flowlet_ar` scheme.
pub struct Def;

impl Scheme for Def {
    const INFO: SchemeInfo = SchemeInfo::switch("flowlet_ar", "flowlet")
        .summary("switch flowlets: after a load_balancing.flowlet_gap_us (10) gap, move to the shortest queue")
        .options(&[&GAP.spec])
        .reading_queues()
        .honouring_weights();
    type Config = FlowletConfig;
    type Host = FixedEntropy;
    type Switch = FlowletAr;
    fn config(o: &Options) -> FlowletConfig {
        FlowletConfig { gap: o.get(&GAP) }
    }
    fn host(_: &FlowletConfig, _: &FlowCtx, rng: &mut SimRng) -> FixedEntropy {
        FixedEntropy::new(rng)
    }
    fn switch(cfg: &FlowletConfig, _: &SwitchCtx) -> FlowletAr {
        FlowletAr::new(*cfg)
    }
}

/// The scheme's options.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FlowletConfig {
    pub gap: SimTime,
}

impl Default for FlowletConfig {
    fn default() -> Self {
        Def::config(&Options::defaults(&Def::INFO))
    }
}

#[derive(Clone, Copy, Debug)]
struct Entry {
    last: SimTime,
    port: u32,
}

#[derive(Clone, Debug)]
pub struct FlowletAr {
    cfg: FlowletConfig,
    table: BTreeMap<u64, Entry>,
    /// Flowlets started (first packets included), for tests and diagnostics.
    pub flowlets: u64,
}

impl FlowletAr {
    pub fn new(cfg: FlowletConfig) -> Self {
        FlowletAr {
            cfg,
            table: BTreeMap::new(),
            flowlets: 0,
        }
    }
}

impl FlowletAr {
    #[inline]
    fn pick(
        &mut self,
        pkt: &PacketView,
        group: &[Port],
        live: impl Fn(usize) -> bool,
        rng: &mut SimRng,
    ) -> usize {
        let n = group.len();
        let gap = self.cfg.gap;
        // The 5-tuple: addresses and entropy (two flows between one pair are two flowlets).
        let key = pkt.flow_key ^ crate::rng::mix64(pkt.entropy as u64);
        let e = self.table.entry(key).or_insert(Entry {
            last: SimTime::ZERO,
            port: u32::MAX,
        });
        let fresh = e.port == u32::MAX
            || pkt.now - e.last > gap
            || e.port as usize >= n
            || !live(e.port as usize);
        e.last = pkt.now;
        if fresh {
            self.flowlets += 1;
            let q = |i: usize| {
                if live(i) {
                    group[i].queued_bytes
                } else {
                    u64::MAX
                }
            };
            let min = (0..n).map(q).min().unwrap_or(0);
            let keep = (e.port as usize) < n && q(e.port as usize) == min;
            if !keep {
                e.port = super::jsq::argmin_random_ties(n, q, rng) as u32;
            }
        }
        e.port as usize
    }
}

impl SwitchPolicy for FlowletAr {
    fn choose(&mut self, pkt: &PacketView, group: &[Port], rng: &mut SimRng) -> usize {
        self.pick(pkt, group, |_| true, rng)
    }

    /// As `choose`, among live ports only (weight above zero). A flowlet whose port died starts
    /// a new flowlet on a live one and stays there.
    fn weighted(&mut self, pkt: &PacketView, group: &[Port], w: &[u32], rng: &mut SimRng) -> usize {
        self.pick(pkt, group, |i| w[i] > 0, rng)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lb::testutil::{ports, view};
    use crate::rng::{rng_for, Stream};

    #[test]
    fn packets_within_the_gap_keep_their_port_even_when_it_fills() {
        let mut rng = rng_for(8, Stream::Switch, 0);
        let mut p = FlowletAr::new(FlowletConfig::default());
        let mut g = ports(1 << 20, &[500, 0, 700]);
        let first = p.choose(&view(1, SimTime::ZERO), &g, &mut rng);
        assert_eq!(first, 1);
        g[1].queued_bytes = 100_000;
        for i in 1..50 {
            // 5 us apart: never a 10 us gap.
            assert_eq!(p.choose(&view(1, SimTime::from_us(5 * i)), &g, &mut rng), 1);
        }
        // Another flow sees the current queues.
        assert_eq!(p.choose(&view(2, SimTime::from_us(250)), &g, &mut rng), 0);
        assert_eq!(p.flowlets, 2);
    }

    #[test]
    fn a_gap_longer_than_the_threshold_moves_the_flowlet_to_the_shortest_queue() {
        let mut rng = rng_for(8, Stream::Switch, 1);
        let mut p = FlowletAr::new(FlowletConfig::default());
        let mut g = ports(1 << 20, &[0, 10, 10]);
        assert_eq!(p.choose(&view(7, SimTime::ZERO), &g, &mut rng), 0);
        g[0].queued_bytes = 50;
        // Exactly the gap: same flowlet. More than the gap: a new one, on port 1 or 2.
        assert_eq!(p.choose(&view(7, SimTime::from_us(10)), &g, &mut rng), 0);
        let moved = p.choose(&view(7, SimTime::from_us(21)), &g, &mut rng);
        assert!(moved == 1 || moved == 2);
        // A new flowlet stays put when its port ties for shortest.
        g[moved].queued_bytes = 0;
        g[3 - moved].queued_bytes = 0;
        g[0].queued_bytes = 0;
        assert_eq!(
            p.choose(&view(7, SimTime::from_us(40)), &g, &mut rng),
            moved
        );
        assert_eq!(p.flowlets, 3);
    }

    #[test]
    fn the_gap_is_configurable() {
        let mut rng = rng_for(8, Stream::Switch, 2);
        let mut p = FlowletAr::new(FlowletConfig {
            gap: SimTime::from_us(1),
        });
        let mut g = ports(1 << 20, &[0, 10]);
        assert_eq!(p.choose(&view(3, SimTime::ZERO), &g, &mut rng), 0);
        g[0].queued_bytes = 20;
        assert_eq!(p.choose(&view(3, SimTime::from_us(2)), &g, &mut rng), 1);
    }
}
