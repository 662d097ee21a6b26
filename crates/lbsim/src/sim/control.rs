//! The control plane: fabric changes (failures, recoveries, routing convergence), failure-aware
//! rates, and the triggers that start dependent flows.

use super::fabric::Fabric;
use super::host::{Hosts, Rates};
use super::{Cx, Event};
use crate::engine::EventQueue;
use crate::failure::{self, Effect, Fault, Weights};
use crate::ids::FlowId;
use crate::rng::{rng_for, Stream};
use crate::scenario::Scenario;
use crate::time::{BitsPerSec, SimTime};
use crate::transport::Flow;
use crate::workload::Dependencies;

/// `Stream::Failure` indices of the flaky ports' loss chains (two per failed cable), above the
/// indices failure resolution draws its random cables from.
const FLAKY_STREAMS: u64 = 1 << 32;

/// A scheduled change of the fabric.
#[derive(Clone, Copy, Debug)]
enum Control {
    Fail(usize),
    Recover(usize),
    /// Routing learns the current state of failure `i`'s links.
    Converge(usize),
    /// PFC: a pause imposed on a port from outside begins (true) or ends.
    Pause(crate::ids::PortId, bool),
    /// The failure-aware rates are recomputed: the flows sending changed at this instant.
    Rates,
}

pub(super) struct ControlPlane {
    /// The scheduled changes, indexed by `Event::Control`.
    controls: Vec<Control>,
    /// Routing's belief of each port's capacity (hundredths), updated on convergence.
    routing_cap: Vec<u32>,
    /// Each port's actual capacity (hundredths), for the failure-aware rates.
    actual_cap: Vec<u32>,
    /// Per-flow sending rates (failure-aware idealized CC), recomputed when links fail or recover.
    flow_rates: Option<Vec<BitsPerSec>>,
    /// Whether `flow_rates` has been computed once (at the run's start).
    computed: bool,
    /// `Control::Rates`'s index, when failure-aware rates may change with the flows sending,
    /// and whether its event is pending.
    rates_event: Option<u32>,
    rates_pending: bool,
    /// Activations received by each trigger.
    trigger_counts: Vec<u32>,
    line_rate: BitsPerSec,
    /// A partitioned run: which flows start in this partition (their source host is its own),
    /// and the starts it owes other partitions (None: one world).
    pub(super) remote: Option<Box<RemoteStarts>>,
}

pub(super) struct RemoteStarts {
    /// Per flow: the partition its source host is in.
    pub(super) owner: Vec<u8>,
    pub(super) me: u8,
    pub(super) out: Vec<(SimTime, FlowId)>,
    /// Per trigger: fed from several partitions. Such a trigger is counted by every partition
    /// from the activations all of them gather at each window's end (`acts`), and each starts
    /// its own targets: its delay of at least one window leaves the time to.
    pub(super) shared: Vec<bool>,
    pub(super) acts: Vec<(SimTime, u32)>,
}

impl ControlPlane {
    /// Schedules every failure's change, recovery and convergence in `events`.
    pub(super) fn new(
        sc: &Scenario,
        line_rate: BitsPerSec,
        events: &mut EventQueue<super::Packed>,
    ) -> ControlPlane {
        let mut controls = Vec::new();
        for (i, f) in sc.failures.iter().enumerate() {
            let mut at = |t: SimTime, c: Control| {
                events.push(t, Event::Control(controls.len() as u32).into());
                controls.push(c);
            };
            at(f.at, Control::Fail(i));
            if let Some(g) = sc.convergence {
                at(f.at + g, Control::Converge(i));
            }
            if let Some(r) = f.recover {
                at(r, Control::Recover(i));
                if let Some(g) = sc.convergence {
                    at(r + g, Control::Converge(i));
                }
            }
        }
        let rates_event = (sc.settings.failure_aware_rate && !sc.failures.is_empty()).then(|| {
            controls.push(Control::Rates);
            controls.len() as u32 - 1
        });
        let links = sc.topology.links.len();
        ControlPlane {
            rates_event,
            rates_pending: false,
            controls,
            routing_cap: vec![failure::FULL_CAPACITY; links],
            actual_cap: vec![failure::FULL_CAPACITY; links],
            flow_rates: None,
            computed: false,
            trigger_counts: vec![0; sc.deps.triggers.len()],
            line_rate,
            remote: None,
        }
    }

    /// PFC: pauses egress `port` from `from` to `to`, as if its peer's frames asked for it.
    pub(super) fn impose_pause(
        &mut self,
        events: &mut EventQueue<super::Packed>,
        port: crate::ids::PortId,
        from: SimTime,
        to: SimTime,
    ) {
        for (t, on) in [(from, true), (to, false)] {
            events.push(t, Event::Control(self.controls.len() as u32).into());
            self.controls.push(Control::Pause(port, on));
        }
    }

    pub(super) fn rates_computed(&self) -> bool {
        self.computed
    }

    /// A flow started or its sender finished: while a link is impaired, the failure-aware
    /// rates are recomputed once every change at this instant is in (an event ranked after
    /// them), not once per flow.
    pub(super) fn flows_changed(&mut self, cx: &mut Cx) {
        if let Some(i) = self.rates_event.filter(|_| self.flow_rates.is_some()) {
            if !self.rates_pending {
                self.rates_pending = true;
                cx.push(cx.now, Event::Control(i));
            }
        }
    }

    /// The per-flow rate caps the hosts' NICs apply, if any.
    #[inline(always)]
    pub(super) fn rates(&self) -> Rates<'_> {
        self.flow_rates.as_deref()
    }

    /// Recomputes the failure-aware per-flow rates from the links' actual capacities.
    pub(super) fn update_flow_rates(
        &mut self,
        cx: &mut Cx,
        sc: &Scenario,
        flows: &mut [Flow],
        hosts: &mut Hosts,
    ) {
        self.computed = true;
        if !sc.settings.failure_aware_rate {
            return;
        }
        // Only impaired links cap a flow below its NIC's share.
        if self.actual_cap.iter().all(|&c| c == failure::FULL_CAPACITY) {
            if self.flow_rates.take().is_some() {
                resume_waiting(cx, flows, hosts, |_| true);
            }
            return;
        }
        let shares = failure::flow_shares(&sc.topology, &sc.flows, &self.actual_cap, |i| {
            flows[i].started.is_some() && !flows[i].sender_done
        });
        let line = self.line_rate.0 as f64;
        let rates: Vec<BitsPerSec> = shares
            .iter()
            .map(|s| BitsPerSec((line * s).round() as u64))
            .collect();
        resume_waiting(cx, flows, hosts, |i| rates[i].0 > 0);
        self.flow_rates = Some(rates);
    }

    pub(super) fn on_control(
        &mut self,
        cx: &mut Cx,
        index: u32,
        sc: &Scenario,
        fabric: &mut Fabric,
        flows: &mut [Flow],
        hosts: &mut Hosts,
    ) {
        match self.controls[index as usize] {
            Control::Fail(i) => {
                let f = &sc.failures[i];
                for port in f.ports {
                    self.actual_cap[port.idx()] = failure::capacity_units(Some(f.effect));
                }
                self.update_flow_rates(cx, sc, flows, hosts);
                for (n, port) in f.ports.iter().enumerate() {
                    let p = &mut fabric.ports[port.idx()];
                    match f.effect {
                        Effect::Down => p.set_fault(Fault::Down),
                        Effect::Degraded(x) => p.set_rate(BitsPerSec(
                            ((p.nominal_rate.0 as f64) * x).round().max(1.0) as u64,
                        )),
                        Effect::Flaky(ge) => p.set_fault(Fault::Flaky {
                            ge,
                            bad: false,
                            rng: Box::new(rng_for(
                                sc.settings.seed,
                                Stream::Failure,
                                FLAKY_STREAMS + 2 * i as u64 + n as u64,
                            )),
                        }),
                    }
                }
            }
            Control::Recover(i) => {
                for port in sc.failures[i].ports {
                    self.actual_cap[port.idx()] = failure::FULL_CAPACITY;
                }
                self.update_flow_rates(cx, sc, flows, hosts);
                for port in sc.failures[i].ports {
                    let p = &mut fabric.ports[port.idx()];
                    p.set_fault(Fault::Healthy);
                    let r = p.nominal_rate;
                    p.set_rate(r);
                }
            }
            Control::Converge(i) => {
                let f = &sc.failures[i];
                let recovered = f.recover.is_some_and(|r| cx.now >= r);
                let cap = if recovered {
                    failure::FULL_CAPACITY
                } else {
                    failure::capacity_units(Some(f.effect))
                };
                for port in f.ports {
                    self.routing_cap[port.idx()] = cap;
                }
                fabric.set_routing(Weights::compute(&sc.topology, &self.routing_cap));
            }
            Control::Rates => {
                self.rates_pending = false;
                self.update_flow_rates(cx, sc, flows, hosts);
            }
            Control::Pause(port, on) => {
                if let Some((h, paused)) = fabric.impose_pause(cx, port, on) {
                    hosts.on_nic_pause(cx, h, paused);
                }
            }
        }
    }

    /// Activates the triggers that flow `f`'s receive (or send) completion feeds.
    pub(super) fn activate_all(&mut self, cx: &mut Cx, deps: &Dependencies, f: FlowId, recv: bool) {
        let list = if recv {
            &deps.on_recv_done
        } else {
            &deps.on_send_done
        };
        let Some(ts) = list.get(f.idx()) else {
            return;
        };
        for &t in ts {
            if let Some(r) = self.remote.as_mut().filter(|r| r.shared[t as usize]) {
                r.acts.push((cx.now, t));
                continue;
            }
            let tr = &deps.triggers[t as usize];
            let count = &mut self.trigger_counts[t as usize];
            *count += 1;
            for &target in fired(tr, *count) {
                let (t, f) = (cx.now + tr.delay, FlowId(target));
                match &mut self.remote {
                    Some(r) if r.owner[f.idx()] != r.me => r.out.push((t, f)),
                    _ => cx.push(t, Event::FlowStart(f)),
                }
            }
        }
    }

    /// A partitioned run: counts the activations of shared triggers that every partition
    /// gathered in a window, in time order (equal times fire at the same time, whichever
    /// counts first), and starts this partition's targets of those that fire.
    pub(super) fn apply_shared(
        &mut self,
        events: &mut EventQueue<super::Packed>,
        deps: &Dependencies,
        mut acts: Vec<(SimTime, u32)>,
    ) {
        acts.sort_unstable();
        let r = self.remote.as_ref().expect("a partition");
        for (at, t) in acts {
            let tr = &deps.triggers[t as usize];
            let count = &mut self.trigger_counts[t as usize];
            *count += 1;
            for &target in fired(tr, *count) {
                if r.owner[target as usize] == r.me {
                    events.push(at + tr.delay, Event::FlowStart(FlowId(target)).into());
                }
            }
        }
    }
}

/// The targets trigger `tr` starts on its `count`-th activation: all of them when it reaches its
/// count (oneshot, barrier); a multishot trigger starts one target per activation, in the order
/// the targets were given, as htsim's does (its first activation the first target, and so on).
fn fired(tr: &crate::workload::Trigger, count: u32) -> &[u32] {
    if tr.multishot {
        let i = count as usize;
        return tr.targets.get(i.wrapping_sub(1)..i).unwrap_or(&[]);
    }
    if count == tr.needed {
        &tr.targets
    } else {
        &[]
    }
}

/// A flow whose rate was zero (every path through a cut down) waits with no wake-up scheduled;
/// once `may_send` says its rate is positive again it may send at once. One wake-up per host,
/// however many of its flows resume.
fn resume_waiting(
    cx: &mut Cx,
    flows: &mut [Flow],
    hosts: &mut Hosts,
    may_send: impl Fn(usize) -> bool,
) {
    let mut woken = std::collections::BTreeSet::new();
    for (i, flow) in flows.iter_mut().enumerate() {
        if may_send(i) && flow.resume_rate(cx.now) {
            woken.insert(flow.src);
        }
    }
    for h in woken {
        hosts.schedule_wake(cx, h);
    }
}
