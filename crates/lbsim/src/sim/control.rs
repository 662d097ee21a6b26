//! The control plane: fabric changes (failures, recoveries, routing convergence), failure-aware
//! rates, and the triggers that start dependent flows.

use super::*;

/// `Stream::Failure` indices of the flaky ports' loss chains (two per failed cable), above the
/// indices failure resolution draws its random cables from.
const FLAKY_STREAMS: u64 = 1 << 32;

impl Simulation {
    /// Recomputes the failure-aware per-flow rates from the links' actual capacities.
    pub(super) fn update_flow_rates(&mut self) {
        if !self.sc.settings.failure_aware_rate {
            return;
        }
        let shares = failure::flow_shares(&self.sc.topology, &self.sc.flows, &self.actual_cap);
        let line = self.pace_rate.0 as f64;
        let rates: Vec<BitsPerSec> = shares
            .iter()
            .map(|s| BitsPerSec((line * s).round() as u64))
            .collect();
        // A flow whose rate was zero (every path through a cut down) waits with no wake-up
        // scheduled; once its rate is positive again it may send at once.
        // One wake-up per host, however many of its flows resume.
        let now = self.now;
        let mut woken = std::collections::BTreeSet::new();
        for (i, r) in rates.iter().enumerate() {
            let flow = &mut self.flows[i];
            if r.0 > 0 && flow.next_send == SimTime::MAX {
                flow.next_send = now;
                woken.insert(flow.src);
            }
        }
        for h in woken {
            self.hosts[h.idx()].wake_pending = true;
            self.hosts[h.idx()].wake_at = now;
            self.events.push(now, Event::HostWake(h).into());
        }
        self.flow_rates = Some(rates);
    }

    pub(super) fn on_control(&mut self, c: Control) {
        match c {
            Control::Fail(i) => {
                let f = self.sc.failures[i].clone();
                for port in f.ports {
                    self.actual_cap[port.idx()] = failure::capacity_units(Some(f.effect));
                }
                self.update_flow_rates();
                for (n, port) in f.ports.iter().enumerate() {
                    let p = &mut self.ports[port.idx()];
                    match f.effect {
                        Effect::Down => p.set_fault(Fault::Down),
                        Effect::Degraded(x) => p.set_rate(BitsPerSec(
                            ((p.nominal_rate.0 as f64) * x).round().max(1.0) as u64,
                        )),
                        Effect::Flaky(ge) => p.set_fault(Fault::Flaky {
                            ge,
                            bad: false,
                            rng: Box::new(rng_for(
                                self.sc.settings.seed,
                                Stream::Failure,
                                FLAKY_STREAMS + 2 * i as u64 + n as u64,
                            )),
                        }),
                    }
                }
            }
            Control::Recover(i) => {
                for port in self.sc.failures[i].ports {
                    self.actual_cap[port.idx()] = failure::FULL_CAPACITY;
                }
                self.update_flow_rates();
                for port in self.sc.failures[i].ports {
                    let p = &mut self.ports[port.idx()];
                    p.set_fault(Fault::Healthy);
                    let r = p.nominal_rate;
                    p.set_rate(r);
                }
            }
            Control::Converge(i) => {
                let f = &self.sc.failures[i];
                let recovered = f.recover.is_some_and(|r| self.now >= r);
                let cap = if recovered {
                    100
                } else {
                    failure::capacity_units(Some(f.effect))
                };
                for port in f.ports {
                    self.routing_cap[port.idx()] = cap;
                }
                self.weights = Weights::compute(&self.sc.topology, &self.routing_cap);
                self.routing_epoch += 1;
            }
        }
    }

    /// Activates the triggers that flow `f`'s receive (or send) completion feeds.
    pub(super) fn activate_all(&mut self, f: FlowId, recv: bool) {
        let deps = &self.sc.deps;
        let list = if recv {
            &deps.on_recv_done
        } else {
            &deps.on_send_done
        };
        let Some(ts) = list.get(f.idx()) else {
            return;
        };
        for &t in ts {
            let tr = &deps.triggers[t as usize];
            let count = &mut self.trigger_counts[t as usize];
            *count += 1;
            let fire = *count == tr.needed || (tr.multishot && *count > tr.needed);
            if fire {
                for &target in &tr.targets {
                    self.events
                        .push(self.now + tr.delay, Event::FlowStart(FlowId(target)).into());
                }
            }
        }
    }
}
