//! Telemetry inside a run: the tallies the fabric and hosts keep while it is on (the most bytes
//! a port held since the last sample, bytes it accepted, trims; the entropies a sampled flow
//! sent; the event log), and the sampler the run loop calls at interval boundaries, which turns
//! them and the ports' and flows' own state into rows for a [`TelemetrySink`].
//!
//! Nothing here changes what the simulation does: the sampler reads ports without syncing them
//! (`Port::occupancy_at`), reads each CC's rate without advancing it, pushes no event and draws
//! no random number. With telemetry off the fabric and hosts hold `None` and pay one branch per
//! packet admitted or sent.

use super::fabric::Fabric;
use super::Simulation;
use crate::ids::{FlowId, PortId};
use crate::net::{Port, Slots};
use crate::scenario::Scenario;
use crate::stats::telemetry::{
    EventKind, EventKinds, EventRecord, FlowSample, PortInfo, PortSample, TelemetryPlan,
    TelemetrySink,
};
use crate::time::SimTime;
use crate::transport::Flow;

/// Rows buffered per table before they go to the sink.
const BATCH_ROWS: usize = 8192;

/// No port or flow.
const NIL: u32 = u32::MAX;

/// What the fabric counts for one port between two samples.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct PortTally {
    /// The most bytes held just after an admission since the last sample.
    max: u64,
    /// Bytes accepted since the run began.
    bytes_in: u64,
    /// Data packets trimmed since the run began.
    trims: u64,
}

#[derive(Clone, Copy, Debug)]
pub(super) struct RawEvent {
    t: SimTime,
    kind: EventKind,
    port: u32,
    flow: u32,
}

/// The fabric's side of telemetry.
#[derive(Debug)]
pub(super) struct Observe {
    tally: Vec<PortTally>,
    log: Vec<RawEvent>,
    kinds: EventKinds,
}

impl Observe {
    /// The port accepted `bytes`, and now holds `held`.
    #[inline]
    pub(super) fn pushed(&mut self, port: PortId, bytes: u16, held: u64) {
        let t = &mut self.tally[port.idx()];
        t.bytes_in += bytes as u64;
        t.max = t.max.max(held);
    }

    pub(super) fn trimmed(&mut self, now: SimTime, port: PortId, flow: FlowId) {
        self.tally[port.idx()].trims += 1;
        if self.kinds.trims {
            self.log(now, EventKind::Trim, Some(port), flow);
        }
    }

    #[cold]
    fn log(&mut self, t: SimTime, kind: EventKind, port: Option<PortId>, flow: FlowId) {
        self.log.push(RawEvent {
            t,
            kind,
            port: port.map_or(NIL, |p| p.0),
            flow: flow.0,
        });
    }

    /// PFC paused `port` (a PAUSE frame reached it, or a pause was imposed on it).
    #[cold]
    pub(super) fn paused(&mut self, now: SimTime, port: PortId) {
        self.note(now, EventKind::Pause, Some(port), FlowId(NIL));
    }

    /// Records an event of `kind` if the plan asks for it.
    #[cold]
    fn note(&mut self, t: SimTime, kind: EventKind, port: Option<PortId>, flow: FlowId) {
        let on = match kind {
            EventKind::Drop => self.kinds.drops,
            EventKind::Mark => self.kinds.marks,
            EventKind::Trim => self.kinds.trims,
            EventKind::Pause => self.kinds.pauses,
        };
        if on {
            self.log(t, kind, port, flow);
        }
    }
}

/// Logs an event about the packet in slot `i`, if telemetry is on.
#[inline(always)]
pub(super) fn observe(
    obs: &mut Option<Box<Observe>>,
    slots: &Slots,
    t: SimTime,
    kind: EventKind,
    port: Option<PortId>,
    i: u32,
) {
    if let Some(o) = obs {
        o.note(t, kind, port, slots.pkt(i).flow);
    }
}

/// The hosts' side: the entropies each sampled flow put on data packets since the last sample.
#[derive(Debug)]
pub(super) struct PathLog {
    /// Flow -> its index in `seen` (NIL: not sampled).
    slot: Vec<u32>,
    seen: Vec<Vec<u32>>,
}

impl PathLog {
    #[inline]
    pub(super) fn note(&mut self, f: FlowId, entropy: u32) {
        let s = self.slot[f.idx()];
        if s != NIL {
            let v = &mut self.seen[s as usize];
            // Most schemes repeat the last entropy: keep those out of the sort at the sample.
            if v.last() != Some(&entropy) {
                v.push(entropy);
            }
        }
    }

    /// Distinct entropies flow slot `s` used since the last call, forgetting them.
    fn take(&mut self, s: usize) -> u32 {
        let v = &mut self.seen[s];
        v.sort_unstable();
        v.dedup();
        let n = v.len() as u32;
        v.clear();
        n
    }
}

/// A sampled port's values at the previous boundary.
#[derive(Clone, Copy, Debug, Default)]
struct PortPrev {
    area: u128,
    held: u64,
    sent: u64,
    drops: u64,
    marks: u64,
    trims: u64,
    losses: u64,
}

/// The run loop's sampler.
pub(super) struct Sampler {
    plan: TelemetryPlan,
    /// The previous boundary (the current interval's start).
    prev: SimTime,
    ports: Vec<PortPrev>,
    /// Each sampled flow's retransmissions at the previous boundary, and whether its series
    /// has ended (receiver and sender both done at a sample).
    flows: Vec<(u64, bool)>,
    port_rows: Vec<PortSample>,
    flow_rows: Vec<FlowSample>,
    event_rows: Vec<EventRecord>,
}

impl Sampler {
    /// The sampler for `plan`, and the tallies it reads, handed to the fabric and hosts.
    pub(super) fn new(
        plan: &TelemetryPlan,
        ports: usize,
        flows: usize,
    ) -> (Sampler, Box<Observe>, Option<Box<PathLog>>) {
        let obs = Box::new(Observe {
            tally: vec![PortTally::default(); ports],
            log: Vec::new(),
            kinds: plan.events,
        });
        let paths = (!plan.flows.is_empty()).then(|| {
            let mut slot = vec![NIL; flows];
            for (j, f) in plan.flows.iter().enumerate() {
                slot[f.idx()] = j as u32;
            }
            Box::new(PathLog {
                slot,
                seen: vec![Vec::new(); plan.flows.len()],
            })
        });
        let s = Sampler {
            plan: plan.clone(),
            prev: SimTime::ZERO,
            ports: vec![PortPrev::default(); plan.ports.len()],
            flows: vec![(0, false); plan.flows.len()],
            port_rows: Vec::new(),
            flow_rows: Vec::new(),
            event_rows: Vec::new(),
        };
        (s, obs, paths)
    }

    /// The next boundary to sample.
    pub(super) fn next(&self) -> SimTime {
        self.prev + self.plan.sample
    }

    /// The `port_index` rows.
    pub(super) fn port_index(&self, sc: &Scenario, ports: &[Port]) -> Vec<PortInfo> {
        let topo = &sc.topology;
        self.plan
            .ports
            .iter()
            .map(|&p| {
                let l = &topo.links[p.idx()];
                let buf = ports[p.idx()].buffer_bytes;
                PortInfo {
                    port: p.0,
                    link: topo.link_name(p),
                    tier: topo.port_tier(p).to_string(),
                    from: topo.node_name(l.from),
                    to: topo.node_name(l.to),
                    rate_bps: l.rate.0,
                    buffer_bytes: (buf != u64::MAX).then_some(buf),
                }
            })
            .collect()
    }

    /// Closes the interval `(prev, b]`: one row per sampled port and per flow active in it
    /// (started, and not both received and known to the sender as received before it began).
    fn sample(
        &mut self,
        b: SimTime,
        fabric: &mut Fabric,
        mut paths: Option<&mut PathLog>,
        flows: &[Flow],
        sc: &Scenario,
    ) {
        let a = self.prev;
        let len = (b - a).ps();
        let obs = fabric.obs.as_mut().expect("telemetry on");
        for (j, &pid) in self.plan.ports.iter().enumerate() {
            let p = &fabric.ports[pid.idx()];
            let (area, held) = p.occupancy_at(b);
            let t = &mut obs.tally[pid.idx()];
            let prev = &mut self.ports[j];
            let now = PortPrev {
                area,
                held,
                sent: t.bytes_in - held,
                drops: p.stats.drops,
                marks: p.stats.ecn_marks,
                trims: t.trims,
                losses: p.stats.link_losses,
            };
            let bytes_sent = now.sent - prev.sent;
            self.port_rows.push(PortSample {
                t_start_ps: a.ps(),
                t_end_ps: b.ps(),
                port: pid.0,
                queue_area: area - prev.area,
                queue_mean_bytes: (area - prev.area) as f64 / len as f64,
                queue_max_bytes: t.max.max(prev.held),
                bytes_sent,
                utilisation: (bytes_sent as f64 * 8.0 * 1e12) / (p.rate.0 as f64 * len as f64),
                drops: now.drops - prev.drops,
                ecn_marks: now.marks - prev.marks,
                trims: now.trims - prev.trims,
                link_losses: now.losses - prev.losses,
            });
            t.max = 0;
            *prev = now;
        }
        for (j, &f) in self.plan.flows.iter().enumerate() {
            let fl = &flows[f.idx()];
            let used = paths.as_deref_mut().map_or(0, |log| log.take(j));
            let (rtx, ended) = &mut self.flows[j];
            if fl.started.is_none() || *ended {
                continue;
            }
            let tx = fl.tx.as_deref();
            self.flow_rows.push(FlowSample {
                t_start_ps: a.ps(),
                t_end_ps: b.ps(),
                flow: sc.flow_id(f.idx()),
                cwnd_bytes: tx.and(fl.cc.window()),
                rate_bps: tx.and(fl.cc.current_rate()).map(|r| r.0),
                bytes_in_flight: tx.map(|t| t.inflight),
                bytes_acked: fl.recv_bytes,
                retransmissions: fl.retransmissions - *rtx,
                paths: used,
            });
            *rtx = fl.retransmissions;
            *ended = fl.finish.is_some() && fl.sender_done;
        }
        self.prev = b;
    }

    /// Hands the event log's rows to the sink.
    fn drain_events(&mut self, fabric: &mut Fabric, sc: &Scenario, sink: &mut dyn TelemetrySink) {
        let obs = fabric.obs.as_mut().expect("telemetry on");
        if obs.log.is_empty() {
            return;
        }
        self.event_rows
            .extend(obs.log.drain(..).map(|e| EventRecord {
                t_ps: e.t.ps(),
                kind: e.kind,
                port: (e.port != NIL).then_some(e.port),
                flow: (e.flow != NIL).then(|| sc.flow_id(e.flow as usize)),
            }));
        sink.events(&self.event_rows);
        self.event_rows.clear();
    }

    /// Hands the buffered rows to the sink, all of them or once a table has a batch.
    fn flush(&mut self, sink: &mut dyn TelemetrySink, all: bool) {
        if !self.port_rows.is_empty() && (all || self.port_rows.len() >= BATCH_ROWS) {
            sink.ports(&self.port_rows);
            self.port_rows.clear();
        }
        if !self.flow_rows.is_empty() && (all || self.flow_rows.len() >= BATCH_ROWS) {
            sink.flows(&self.flow_rows);
            self.flow_rows.clear();
        }
    }
}

impl Simulation {
    /// Telemetry's start: the tallies go to the fabric and hosts, the port index to the sink.
    /// Returns the first boundary (MAX when off).
    pub(super) fn start_telemetry(&mut self, sink: &mut dyn TelemetrySink) -> SimTime {
        let Some(plan) = &self.sc.telemetry else {
            return SimTime::MAX;
        };
        if self.tel.is_none() {
            let (s, obs, paths) = Sampler::new(plan, self.fabric.ports.len(), self.flows.len());
            sink.port_index(&s.port_index(&self.sc, &self.fabric.ports));
            self.fabric.obs = Some(obs);
            self.hosts.paths = paths;
            self.tel = Some(Box::new(s));
        }
        self.tel.as_ref().map_or(SimTime::MAX, |s| s.next())
    }

    /// Samples every boundary before `t` (the next event's time, not yet handled); returns the
    /// next boundary.
    #[cold]
    pub(super) fn sample_before(&mut self, t: SimTime, sink: &mut dyn TelemetrySink) -> SimTime {
        let Some(s) = self.tel.as_mut() else {
            return SimTime::MAX;
        };
        while s.next() < t {
            let b = s.next();
            s.sample(
                b,
                &mut self.fabric,
                self.hosts.paths.as_deref_mut(),
                &self.flows,
                &self.sc,
            );
            s.flush(sink, false);
        }
        s.drain_events(&mut self.fabric, &self.sc, sink);
        s.next()
    }

    /// Hands the event log to the sink (between boundaries, so that it stays small).
    pub(super) fn drain_telemetry_events(&mut self, sink: &mut dyn TelemetrySink) {
        if let Some(s) = self.tel.as_mut() {
            s.drain_events(&mut self.fabric, &self.sc, sink);
        }
    }

    /// The run ended at `end`: the boundaries up to it, then the partial interval to it.
    pub(super) fn finish_telemetry(&mut self, end: SimTime, sink: &mut dyn TelemetrySink) {
        let Some(s) = self.tel.as_mut() else {
            return;
        };
        loop {
            let b = s.next().min(end);
            if b <= s.prev {
                break;
            }
            s.sample(
                b,
                &mut self.fabric,
                self.hosts.paths.as_deref_mut(),
                &self.flows,
                &self.sc,
            );
            s.flush(sink, false);
        }
        s.drain_events(&mut self.fabric, &self.sc, sink);
        s.flush(sink, true);
    }
}
