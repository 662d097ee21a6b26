//! The simulation: one owned world (arenas of ports, hosts, switches, flows and packets addressed by
//! typed ids), the event set, and the handlers that move packets.
//!
//! A packet hop is one event: its arrival at the far end of the link. FIFO ports compute departure
//! times when they accept a packet (see `net::port`), and only the head of each port's ring has a
//! pending arrival. Host NICs pull the next data packet from the host's round-robin flow
//! scheduler when they go idle (one wake-up event per data packet), so data never queues inside
//! a host and ACKs, which are put on the NIC as they are made, go ahead of data not yet started.

use std::collections::VecDeque;

use crate::engine::EventQueue;
use crate::failure::{self, Effect, Fault, Weights};
use crate::ids::{FlowId, HostId, NodeId, PortId, SwitchId};
use crate::lb::{AckInfo, FlowCtx, HostLb, PacketView, SwitchCtx, SwitchKind, SwitchLb};
use crate::net::{Packet, PacketKind, Port, Route};
use crate::rng::{rng_for, SimRng, Stream};
use crate::scenario::Scenario;
use crate::stats::{self, bound, FlowRecord, Summary};
use crate::time::{BitsPerSec, SimTime};
use crate::transport::{flow_key, Flow};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Event {
    FlowStart(FlowId),
    /// The head of this port's ring has reached the far end of the link.
    Arrive(PortId),
    /// The host's NIC is idle and its pacer allows the next data packet.
    HostWake(HostId),
    /// A scheduled change of the fabric: an index into `Simulation::controls`.
    Control(u32),
    /// The flow's no-progress timer (a missing-ACK timeout for the host's policy).
    FlowTimer(FlowId),
}

/// A scheduled change of the fabric.
#[derive(Clone, Copy, Debug)]
enum Control {
    Fail(usize),
    Recover(usize),
    /// Routing learns the current state of failure `i`'s links.
    Converge(usize),
}

/// An event packed into 4 bytes (3-bit kind, 29-bit id) so heap entries stay 16 bytes.
#[derive(Clone, Copy, Debug)]
struct Packed(u32);

const ID_BITS: u32 = 29;
const ID_MASK: u32 = (1 << ID_BITS) - 1;

/// The largest id an event can carry.
pub const MAX_EVENT_ID: u32 = ID_MASK;

impl From<Event> for Packed {
    #[inline]
    fn from(e: Event) -> Packed {
        let (tag, id) = match e {
            Event::FlowStart(f) => (0, f.0),
            Event::Arrive(p) => (1, p.0),
            Event::HostWake(h) => (2, h.0),
            Event::Control(i) => (3, i),
            Event::FlowTimer(f) => (4, f.0),
        };
        debug_assert!(id <= ID_MASK);
        Packed((tag << ID_BITS) | id)
    }
}

impl From<Packed> for Event {
    #[inline]
    fn from(p: Packed) -> Event {
        let id = p.0 & ID_MASK;
        match p.0 >> ID_BITS {
            0 => Event::FlowStart(FlowId(id)),
            1 => Event::Arrive(PortId(id)),
            2 => Event::HostWake(HostId(id)),
            3 => Event::Control(id),
            _ => Event::FlowTimer(FlowId(id)),
        }
    }
}

struct Host {
    /// Flows with data to send, served round-robin.
    active: VecDeque<FlowId>,
    /// Earliest time the constant-rate pacer lets the next data packet go.
    next_send: SimTime,
    wake_pending: bool,
    rng: SimRng,
}

struct Switch {
    lb: SwitchLb,
    rng: SimRng,
}

/// Counters for conservation checks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    pub data_sent: u64,
    pub data_delivered: u64,
    pub data_dropped: u64,
    pub acks_sent: u64,
    pub acks_delivered: u64,
    pub acks_dropped: u64,
    pub ecn_marks: u64,
    /// Packets (data or ACK) lost on failed links; included in the dropped counts.
    pub link_losses: u64,
    /// Packets dropped because converged routing had no path (included in the dropped counts).
    pub unroutable: u64,
}

/// Where packets are when the run stops.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct InFlight {
    pub data: u64,
    pub acks: u64,
}

pub struct Simulation {
    sc: Scenario,
    now: SimTime,
    events: EventQueue<Packed>,
    event_count: u64,
    hops: u64,
    ports: Vec<Port>,
    hosts: Vec<Host>,
    switches: Vec<Switch>,
    flows: Vec<Flow>,
    mss: u32,
    header: u32,
    ack_bytes: u32,
    pace_rate: BitsPerSec,
    completed: u64,
    counters: Counters,
    ended: Option<SimTime>,
    /// The switch policy reads queue lengths.
    sync_groups: bool,
    controls: Vec<Control>,
    /// Routing's belief of each port's capacity (hundredths), updated on convergence.
    routing_cap: Vec<u32>,
    weights: Weights,
    routing_epoch: u32,
    /// Hosts per ToR (leaf): destination host -> destination ToR for weighted groups.
    hosts_per_tor: u32,
    /// No-ACK time after which a host policy hears `on_timeout`.
    rto: SimTime,
    /// Activations received by each trigger.
    trigger_counts: Vec<u32>,
    /// Per-flow sending rates (failure-aware idealized CC), recomputed when links fail or recover.
    flow_rates: Option<Vec<BitsPerSec>>,
    /// Each port's actual capacity (hundredths), for the failure-aware rates.
    actual_cap: Vec<u32>,
}

fn payload_of(flow: &Flow, mss: u32) -> u32 {
    flow.next_payload(mss)
}

impl Simulation {
    pub fn new(sc: Scenario) -> Simulation {
        let seed = sc.file.seed;
        let topo = &sc.topology;
        let buffer = sc.file.topology.buffer_bytes;
        let ports = topo
            .links
            .iter()
            .map(|l| {
                let (buf, ecn) = match l.from {
                    // Host NICs never drop: the pacer only releases what the link can carry.
                    NodeId::Host(_) => (u64::MAX, u64::MAX),
                    NodeId::Switch(_) => (buffer, sc.ecn_threshold_bytes),
                };
                Port::new(l.rate, l.latency, l.to, buf, ecn)
            })
            .collect();
        let hosts = (0..topo.hosts)
            .map(|h| Host {
                active: VecDeque::new(),
                next_send: SimTime::ZERO,
                wake_pending: false,
                rng: rng_for(seed, Stream::Host, h as u64),
            })
            .collect();
        let lb_cfg = &sc.file.load_balancing;
        let switches = topo
            .switches
            .iter()
            .enumerate()
            .map(|(s, info)| {
                let ctx = SwitchCtx {
                    tier: info.tier,
                    index: info.index,
                    shape: topo.shape,
                    salt: crate::rng::derive_seed(seed, Stream::Salt, s as u64),
                };
                Switch {
                    lb: SwitchLb::new(sc.scheme.switch, &ctx, lb_cfg),
                    rng: rng_for(seed, Stream::Switch, s as u64),
                }
            })
            .collect();
        let flows = sc
            .flows
            .iter()
            .enumerate()
            .map(|(i, spec)| {
                let mut rng = rng_for(seed, Stream::Flow, i as u64);
                let ctx = FlowCtx {
                    src: spec.src,
                    dst: spec.dst,
                    topology: topo,
                    config: lb_cfg,
                };
                Flow::new(*spec, HostLb::new(sc.scheme.host, &ctx, &mut rng))
            })
            .collect();
        let pace_rate =
            BitsPerSec(((topo.host_rate.0 as f64) * sc.file.transport.rate_coef).round() as u64);
        let mut events = EventQueue::new();
        for (i, f) in sc.flows.iter().enumerate() {
            if !sc.deps.gated(i) {
                events.push(f.start, Event::FlowStart(FlowId(i as u32)).into());
            }
        }
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
        let hosts_per_tor = match topo.shape {
            crate::net::Shape::FatTree { k } => k / 2,
            crate::net::Shape::LeafSpine { hosts_per_leaf, .. } => hosts_per_leaf,
        };
        Simulation {
            mss: sc.file.packet.payload_bytes,
            header: sc.file.packet.header_bytes,
            ack_bytes: sc.file.packet.ack_bytes,
            now: SimTime::ZERO,
            events,
            event_count: 0,
            hops: 0,
            ports,
            hosts,
            switches,
            flows,
            pace_rate: BitsPerSec(pace_rate.0.max(1)),
            completed: 0,
            counters: Counters::default(),
            ended: None,
            sync_groups: !matches!(
                sc.scheme.switch,
                SwitchKind::Hash
                    | SwitchKind::RoundRobin
                    | SwitchKind::PlainRoundRobin
                    | SwitchKind::Random
                    | SwitchKind::Ofan
                    | SwitchKind::SourceRouted
            ),
            controls,
            routing_cap: vec![100; topo.links.len()],
            weights: Weights::default(),
            routing_epoch: 0,
            hosts_per_tor,
            rto: sc.rto,
            trigger_counts: vec![0; sc.deps.triggers.len()],
            flow_rates: None,
            actual_cap: vec![100; topo.links.len()],
            sc,
        }
    }

    /// Recomputes the failure-aware per-flow rates from the links' actual capacities.
    fn update_flow_rates(&mut self) {
        if !self.sc.file.transport.failure_aware_rate {
            return;
        }
        let shares = failure::flow_shares(&self.sc.topology, &self.sc.flows, &self.actual_cap);
        let line = self.pace_rate.0 as f64;
        self.flow_rates = Some(
            shares
                .iter()
                .map(|s| BitsPerSec((line * s).round() as u64))
                .collect(),
        );
    }

    /// Runs until every flow has completed, or the end-time cap, or nothing is left to happen.
    pub fn run(&mut self) {
        if self.flow_rates.is_none() {
            self.update_flow_rates();
        }
        let cap = self.sc.end_time.unwrap_or(SimTime::MAX);
        let total = self.flows.len() as u64;
        while let Some(t) = self.events.peek_time() {
            if t > cap {
                self.now = cap;
                break;
            }
            let (t, ev) = self.events.pop().expect("peeked");
            self.now = t;
            self.event_count += 1;
            match Event::from(ev) {
                Event::FlowStart(f) => self.on_flow_start(f),
                Event::Arrive(p) => self.on_arrive(p),
                Event::HostWake(h) => {
                    self.hosts[h.idx()].wake_pending = false;
                    self.try_send(h);
                }
                Event::Control(i) => self.on_control(self.controls[i as usize]),
                Event::FlowTimer(f) => self.on_flow_timer(f),
            }
            if self.completed == total {
                break;
            }
        }
        self.ended = Some(self.now);
    }

    fn on_flow_start(&mut self, f: FlowId) {
        let flow = &mut self.flows[f.idx()];
        if flow.started.is_some() {
            return;
        }
        flow.started = Some(self.now);
        let src = flow.spec.src;
        flow.last_ack = self.now;
        self.hosts[src.idx()].active.push_back(f);
        self.try_send(src);
        if !self.sc.failures.is_empty() {
            self.events
                .push(self.now + self.rto, Event::FlowTimer(f).into());
        }
    }

    /// Tells the host policy when a flow has heard no ACK for a whole timeout; re-arms itself
    /// until the flow is done.
    fn on_flow_timer(&mut self, f: FlowId) {
        let flow = &mut self.flows[f.idx()];
        if flow.sender_done {
            return;
        }
        let due = flow.last_ack + self.rto;
        let next = if self.now >= due {
            flow.lb.on_timeout(self.now);
            flow.timeouts += 1;
            self.now + self.rto
        } else {
            due
        };
        self.events.push(next, Event::FlowTimer(f).into());
    }

    fn on_control(&mut self, c: Control) {
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
                                self.sc.file.seed,
                                Stream::Failure,
                                (1 << 32) + 2 * i as u64 + n as u64,
                            )),
                        }),
                    }
                }
            }
            Control::Recover(i) => {
                for port in self.sc.failures[i].ports {
                    self.actual_cap[port.idx()] = 100;
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

    /// Lets host `h` put its next data packet on its NIC if the NIC is idle and the pacer allows;
    /// otherwise makes sure a wake-up is pending for when both will.
    fn try_send(&mut self, h: HostId) {
        let now = self.now;
        let port = PortId(h.0);
        let host = &mut self.hosts[h.idx()];
        if host.active.is_empty() || host.wake_pending {
            return;
        }
        let p = &mut self.ports[port.idx()];
        p.sync(now);
        let ready = p.busy_until.max(host.next_send);
        if ready > now {
            host.wake_pending = true;
            self.events.push(ready, Event::HostWake(h).into());
            return;
        }
        // Round-robin over flows that still send; finished ones leave the ring here. With
        // per-flow rates, a flow whose own pacer holds it back is passed over.
        let mut earliest = SimTime::MAX;
        let mut tries = host.active.len();
        let f = loop {
            if tries == 0 {
                if earliest < SimTime::MAX {
                    host.wake_pending = true;
                    self.events.push(earliest, Event::HostWake(h).into());
                }
                return;
            }
            tries -= 1;
            match host.active.pop_front() {
                None => return,
                Some(f) if self.flows[f.idx()].sender_done => continue,
                Some(f) if self.flows[f.idx()].next_send > now => {
                    earliest = earliest.min(self.flows[f.idx()].next_send);
                    host.active.push_back(f);
                }
                Some(f) => break f,
            }
        };
        host.active.push_back(f);
        let flow = &mut self.flows[f.idx()];
        if let Some(rates) = &self.flow_rates {
            let r = rates[f.idx()];
            flow.next_send = if r.0 == 0 {
                SimTime::MAX
            } else {
                now + r.serialization((payload_of(flow, self.mss) + self.header) as u64)
            };
        }
        let payload = flow.next_payload(self.mss);
        let entropy = flow.lb.next_entropy(now, &mut host.rng);
        let pkt = Packet {
            flow: f,
            src: flow.spec.src,
            dst: flow.spec.dst,
            wire_bytes: payload + self.header,
            payload,
            seq: flow.next_seq,
            entropy,
            kind: PacketKind::Data,
            ecn: false,
            done: false,
            sent_at: now,
        };
        flow.next_seq = flow.next_seq.wrapping_add(1);
        flow.sent_bytes += payload as u64;
        flow.data_packets_sent += 1;
        self.counters.data_sent += 1;
        host.next_send = now + self.pace_rate.serialization(pkt.wire_bytes as u64);
        let p = &mut self.ports[port.idx()];
        self.hops += 1;
        if p.push(now, pkt) {
            let t = p.head_arrival().expect("just pushed");
            self.events.push(t, Event::Arrive(port).into());
        }
        let ready = p.busy_until.max(host.next_send);
        host.wake_pending = true;
        self.events.push(ready, Event::HostWake(h).into());
    }

    /// Offers `pkt` to an egress port: drop-tail on the byte buffer, CE mark above the threshold.
    #[inline]
    fn enqueue(&mut self, port: PortId, mut packet: Packet) {
        let now = self.now;
        let bytes = packet.wire_bytes;
        let p = &mut self.ports[port.idx()];
        p.sync(now);
        if p.queued_bytes + bytes as u64 > p.buffer_bytes {
            p.stats.drops += 1;
            self.lose(packet);
            return;
        }
        if packet.kind == PacketKind::Data && p.queued_bytes > p.ecn_threshold_bytes {
            packet.ecn = true;
            p.stats.ecn_marks += 1;
            self.counters.ecn_marks += 1;
        }
        self.hops += 1;
        if p.push(now, packet) {
            let t = p.head_arrival().expect("just pushed");
            self.events.push(t, Event::Arrive(port).into());
        }
    }

    /// Accounts a packet dropped by a queue or lost on a link.
    fn lose(&mut self, packet: Packet) {
        match packet.kind {
            PacketKind::Data => {
                self.counters.data_dropped += 1;
                self.flows[packet.flow.idx()].packets_dropped += 1;
            }
            PacketKind::Ack => self.counters.acks_dropped += 1,
        }
    }

    fn on_arrive(&mut self, port: PortId) {
        let p = &mut self.ports[port.idx()];
        let pkt = p.pop_arrived(self.now);
        if let Some(next) = p.head_arrival() {
            self.events.push(next, Event::Arrive(port).into());
        }
        if p.faulty && p.fault.loses() {
            p.stats.link_losses += 1;
            self.counters.link_losses += 1;
            self.lose(pkt);
            return;
        }
        match p.peer {
            NodeId::Switch(s) => self.forward(s, pkt),
            NodeId::Host(h) => self.receive(h, pkt),
        }
    }

    fn forward(&mut self, s: SwitchId, packet: Packet) {
        let out = match self.sc.topology.route(s, packet.dst) {
            Route::Port(p) => p,
            Route::Group { first, n } => {
                let is_ack = packet.kind == PacketKind::Ack;
                let weights = self.weights.get(s, packet.dst.0 / self.hosts_per_tor);
                if weights.is_some_and(|w| w.iter().all(|&x| x == 0)) {
                    // Converged routing knows no path to the destination from here.
                    self.counters.unroutable += 1;
                    self.lose(packet);
                    return;
                }
                let view = PacketView {
                    weights,
                    epoch: self.routing_epoch,
                    src: packet.src,
                    dst: packet.dst,
                    flow_key: flow_key(packet.flow, is_ack),
                    entropy: packet.entropy,
                    is_ack,
                    now: self.now,
                };
                let group = &mut self.ports[first.idx()..first.idx() + n as usize];
                // Queue-reading policies must see occupancy as of now.
                if self.sync_groups {
                    for p in group.iter_mut() {
                        p.sync(self.now);
                    }
                }
                let group = &*group;
                let sw = &mut self.switches[s.idx()];
                let i = sw.lb.choose(&view, group, &mut sw.rng);
                PortId(first.0 + i as u32)
            }
        };
        self.enqueue(out, packet);
    }

    fn receive(&mut self, h: HostId, packet: Packet) {
        let flow = &mut self.flows[packet.flow.idx()];
        match packet.kind {
            PacketKind::Data => {
                debug_assert_eq!(packet.dst, h);
                self.counters.data_delivered += 1;
                flow.recv_bytes += packet.payload as u64;
                flow.data_packets_received += 1;
                let just_done = flow.finish.is_none() && flow.recv_bytes >= flow.spec.size_bytes;
                if just_done {
                    flow.finish = Some(self.now);
                    self.completed += 1;
                }
                // The ACK keeps the data's flow, sequence, entropy, ECN mark and send time.
                let mut ack = packet;
                ack.kind = PacketKind::Ack;
                ack.src = h;
                ack.dst = packet.src;
                ack.wire_bytes = self.ack_bytes;
                ack.payload = 0;
                ack.done = flow.finish.is_some();
                self.counters.acks_sent += 1;
                self.enqueue(PortId(h.0), ack);
                if just_done {
                    self.activate_all(packet.flow, true);
                }
            }
            PacketKind::Ack => {
                self.counters.acks_delivered += 1;
                flow.lb.on_ack(AckInfo {
                    entropy: packet.entropy,
                    ecn: packet.ecn,
                    sent_at: packet.sent_at,
                    now: self.now,
                });
                flow.last_ack = self.now;
                if packet.done && !flow.sender_done {
                    flow.sender_done = true;
                    self.activate_all(packet.flow, false);
                }
            }
        }
    }

    /// Activates the triggers that flow `f`'s receive (or send) completion feeds.
    fn activate_all(&mut self, f: FlowId, recv: bool) {
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

    pub fn now(&self) -> SimTime {
        self.now
    }

    pub fn counters(&self) -> Counters {
        self.counters
    }

    /// Packets put on links so far (data and ACKs).
    pub fn hops(&self) -> u64 {
        self.hops
    }

    pub fn events(&self) -> u64 {
        self.event_count
    }

    pub fn flows(&self) -> &[Flow] {
        &self.flows
    }

    /// Counts the packets held in queues, in service and on wires, by kind.
    pub fn in_flight(&self) -> InFlight {
        let mut f = InFlight::default();
        for p in &self.ports {
            for slot in &p.ring {
                match slot.pkt.kind {
                    PacketKind::Data => f.data += 1,
                    PacketKind::Ack => f.acks += 1,
                }
            }
        }
        f
    }

    /// The largest occupancy any switch egress port reached, and whether one ever exceeded its buffer.
    pub fn max_switch_queue(&self) -> (u64, bool) {
        let r = self.sc.topology.switch_ports();
        let mut max = 0;
        let mut over = false;
        for p in &self.ports[r] {
            max = max.max(p.max_bytes);
            over |= p.max_bytes > p.buffer_bytes;
        }
        (max, over)
    }

    pub fn flow_records(&self) -> Vec<FlowRecord> {
        self.flows
            .iter()
            .enumerate()
            .map(|(i, f)| FlowRecord {
                flow_id: i as u32,
                src: f.spec.src.0,
                dst: f.spec.dst.0,
                size_bytes: f.spec.size_bytes,
                start_ps: f.started.unwrap_or(f.spec.start).ps(),
                finish_ps: f.finish.map(|t| t.ps()),
                fct_ps: f
                    .finish
                    .map(|t| (t - f.started.unwrap_or(f.spec.start)).ps()),
                data_packets_sent: f.data_packets_sent,
                packets_dropped: f.packets_dropped,
            })
            .collect()
    }

    pub fn summary(&self) -> Summary {
        let sc = &self.sc;
        let end = self.ended.unwrap_or(self.now);
        let first_start = self
            .flows
            .iter()
            .filter_map(|f| f.started)
            .min()
            .unwrap_or(SimTime::ZERO);
        let all_done = self.completed == self.flows.len() as u64;
        let last = self.flows.iter().filter_map(|f| f.finish).max();
        let cct = if all_done {
            last.map(|t| t - first_start)
        } else {
            None
        };
        let sizes = bound::Sizes {
            mss: self.mss,
            header: self.header,
            ack: self.ack_bytes,
        };
        let lb = SimTime(
            bound::lower_bound(&sc.topology, &sc.flows, sizes)
                .ps()
                .saturating_sub(first_start.ps()),
        );
        let mut fcts: Vec<u64> = self
            .flows
            .iter()
            .filter_map(|f| {
                f.finish
                    .map(|t| (t - f.started.unwrap_or(f.spec.start)).ps())
            })
            .collect();
        fcts.sort_unstable();
        let mean_fct = if fcts.is_empty() {
            None
        } else {
            Some(fcts.iter().map(|&x| x as f64).sum::<f64>() / fcts.len() as f64)
        };
        let r = sc.topology.switch_ports();
        let nports = r.len().max(1) as f64;
        let area: u128 = self.ports[r].iter().map(|p| p.area_until(end)).sum();
        let mean_queue = if end.ps() == 0 {
            0.0
        } else {
            area as f64 / nports / end.ps() as f64
        };
        Summary {
            scheme: sc.scheme.name.to_string(),
            workload: sc.file.workload.kind.name().to_string(),
            topology: topology_label(sc),
            hosts: sc.topology.hosts,
            flows: self.flows.len() as u64,
            flows_completed: self.completed,
            cct_ps: cct.map(|t| t.ps()),
            lower_bound_ps: lb.ps(),
            cct_over_bound: cct.map(|c| c.ps() as f64 / lb.ps().max(1) as f64),
            mean_fct_ps: mean_fct,
            p99_fct_ps: stats::percentile(&fcts, 99.0),
            data_packets_sent: self.counters.data_sent,
            data_packets_delivered: self.counters.data_delivered,
            packets_dropped: self.counters.data_dropped + self.counters.acks_dropped,
            ecn_marks: self.counters.ecn_marks,
            max_queue_bytes: self.max_switch_queue().0,
            mean_queue_bytes: mean_queue,
            end_ps: end.ps(),
            events: self.event_count,
            packet_hops: self.hops,
            link_losses: self.counters.link_losses,
            failed_links: sc.failures.iter().map(|f| f.name.clone()).collect(),
            timeouts: self.flows.iter().map(|f| f.timeouts).sum(),
            wall_seconds: 0.0,
            events_per_second: 0.0,
            seed: sc.file.seed,
        }
    }
}

fn topology_label(sc: &Scenario) -> String {
    let t = &sc.file.topology;
    match sc.topology.shape {
        crate::net::Shape::FatTree { k } => format!("fat_tree k={k} {}G", t.link_gbps),
        crate::net::Shape::LeafSpine {
            hosts_per_leaf,
            leaves,
            spines,
        } => format!(
            "leaf_spine {leaves}x{hosts_per_leaf} hosts, {spines} spines {}G",
            t.link_gbps
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_pack_losslessly() {
        for e in [
            Event::FlowStart(FlowId(0)),
            Event::Arrive(PortId(MAX_EVENT_ID)),
            Event::HostWake(HostId(12345)),
        ] {
            assert_eq!(Event::from(Packed::from(e)), e);
        }
    }
}
