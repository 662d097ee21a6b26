//! Quantized adaptive routing, Spectrum-X style (the study's "Switch Pkt AR"): every candidate
//! queue is put in a bin by its occupancy relative to its buffer (0 below 5%, 1 below 10%, 2 below
//! 20%, else 3) and the packet takes a port in the lowest bin, ties at random. Coarse bins make
//! many ports tie, so among lightly loaded ports the choice is random, not exact JSQ.
//!
//! Public simulators refresh the bins at most every 100 ns, so decisions read stale state (part of
//! the model: a burst can herd onto a port that looked empty). `load_balancing.ar_refresh_ns`
//! sets that period; the default 0 reads fresh occupancies on every packet, which is what the
//! study's description of the hardware assumes. Each switch in lbsim has a single next-hop group
//! (its uplinks), so one cache per switch is exact.

use super::config::{Opt, Options};
use super::ecmp::FixedEntropy;
use super::jsq::argmin_random_ties;
use super::{FlowCtx, PacketView, Scheme, SchemeInfo, SwitchCtx, SwitchPolicy};
use crate::net::Port;
use crate::rng::SimRng;
use crate::time::SimTime;

/// `load_balancing.ar_refresh_ns`: queue bins are refreshed at most this often (0: fresh on
/// every packet; public simulators use 100).
pub const REFRESH: Opt<SimTime> = Opt::nanos("ar_refresh_ns", 0.0);

/// The `switch_ar` scheme.
pub struct Def;

impl Scheme for Def {
    const INFO: SchemeInfo = SchemeInfo::switch("switch_ar", "packet")
        .adaptive()
        .summary("Spectrum-X style: lowest queue bin (5/10/20% of buffer), ties at random")
        .options(&[&REFRESH.spec])
        .reading_queues()
        .honouring_weights();
    type Config = ArConfig;
    type Host = FixedEntropy;
    type Switch = QuantizedAr;
    fn config(o: &Options) -> ArConfig {
        ArConfig {
            refresh: o.get(&REFRESH),
        }
    }
    fn host(_: &ArConfig, _: &FlowCtx, rng: &mut SimRng) -> FixedEntropy {
        FixedEntropy::new(rng)
    }
    fn switch(cfg: &ArConfig, _: &SwitchCtx) -> QuantizedAr {
        QuantizedAr::new(*cfg)
    }
}

/// The scheme's options.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ArConfig {
    pub refresh: SimTime,
}

impl Default for ArConfig {
    fn default() -> Self {
        Def::config(&Options::defaults(&Def::INFO))
    }
}

/// The occupancy bin of a queue holding `queued` of `buffer` bytes.
#[inline]
pub fn bin(queued: u64, buffer: u64) -> u8 {
    let (q, b) = (queued as u128 * 100, buffer as u128);
    if q < 5 * b {
        0
    } else if q < 10 * b {
        1
    } else if q < 20 * b {
        2
    } else {
        3
    }
}

#[derive(Clone, Debug)]
pub struct QuantizedAr {
    cfg: ArConfig,
    bins: Vec<u8>,
    refreshed: Option<SimTime>,
}

impl QuantizedAr {
    pub fn new(cfg: ArConfig) -> Self {
        QuantizedAr {
            cfg,
            bins: Vec::new(),
            refreshed: None,
        }
    }
}

impl QuantizedAr {
    fn refresh(&mut self, pkt: &PacketView, group: &[Port]) {
        let stale = match self.refreshed {
            None => true,
            Some(t) => pkt.now >= t.saturating_add(self.cfg.refresh),
        };
        if stale || self.bins.len() != group.len() {
            self.bins.clear();
            self.bins
                .extend(group.iter().map(|p| bin(p.queued_bytes, p.buffer_bytes)));
            self.refreshed = Some(pkt.now);
        }
    }
}

impl SwitchPolicy for QuantizedAr {
    #[inline]
    fn choose(&mut self, pkt: &PacketView, group: &[Port], rng: &mut SimRng) -> usize {
        if self.cfg.refresh == SimTime::ZERO {
            return argmin_random_ties(
                group.len(),
                |i| bin(group[i].queued_bytes, group[i].buffer_bytes),
                rng,
            );
        }
        self.refresh(pkt, group);
        let bins = &self.bins;
        argmin_random_ties(bins.len(), |i| bins[i], rng)
    }

    /// The lowest bin among live ports (weight above zero), read from the same refreshed bins
    /// as without failures.
    fn weighted(&mut self, pkt: &PacketView, group: &[Port], w: &[u32], rng: &mut SimRng) -> usize {
        let live = |i: usize, b: u8| if w[i] == 0 { u8::MAX } else { b };
        if self.cfg.refresh == SimTime::ZERO {
            return argmin_random_ties(
                group.len(),
                |i| live(i, bin(group[i].queued_bytes, group[i].buffer_bytes)),
                rng,
            );
        }
        self.refresh(pkt, group);
        let bins = &self.bins;
        argmin_random_ties(bins.len(), |i| live(i, bins[i]), rng)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lb::testutil::{histogram, ports, view};
    use crate::rng::{rng_for, Stream};

    #[test]
    fn bins_at_5_10_and_20_percent() {
        let b = 1000;
        let got: Vec<u8> = [0, 49, 50, 99, 100, 199, 200, 1000]
            .iter()
            .map(|&q| bin(q, b))
            .collect();
        assert_eq!(got, vec![0, 0, 1, 1, 2, 2, 3, 3]);
    }

    #[test]
    fn lowest_bin_wins_and_its_members_tie() {
        let mut rng = rng_for(6, Stream::Switch, 0);
        let mut p = QuantizedAr::new(ArConfig::default());
        // 10 and 40 bytes are both bin 0: a tie, unlike JSQ. 60 is bin 1, 300 bin 3.
        let g = ports(1000, &[60, 10, 300, 40]);
        let c = histogram(
            (0..4000).map(|_| p.choose(&view(0, SimTime::ZERO), &g, &mut rng)),
            4,
        );
        assert_eq!((c[0], c[2]), (0, 0));
        assert!((1850..2150).contains(&c[1]), "{c:?}");
        let g = ports(1000, &[150, 250, 120, 90]);
        assert!((0..50).all(|_| p.choose(&view(0, SimTime::ZERO), &g, &mut rng) == 3));
    }

    #[test]
    fn with_a_refresh_period_decisions_read_stale_bins() {
        let mut rng = rng_for(6, Stream::Switch, 1);
        let mut p = QuantizedAr::new(ArConfig {
            refresh: SimTime::from_ns(100),
        });
        let mut g = ports(1000, &[500, 0]);
        assert_eq!(p.choose(&view(0, SimTime::ZERO), &g, &mut rng), 1);
        // Port 1 fills up, but until the refresh it still looks empty.
        g[1].queued_bytes = 900;
        g[0].queued_bytes = 0;
        assert_eq!(p.choose(&view(0, SimTime::from_ns(99)), &g, &mut rng), 1);
        assert_eq!(p.choose(&view(0, SimTime::from_ns(100)), &g, &mut rng), 0);
        // Fresh mode sees the change at once.
        let mut q = QuantizedAr::new(ArConfig::default());
        assert_eq!(q.choose(&view(0, SimTime::ZERO), &g, &mut rng), 0);
    }
}
