//! The simulation: one owned world (arenas of ports, hosts, switches, flows and packets addressed by
//! typed ids), the event set, and the handlers that move packets.
//!
//! Per packet hop there are exactly two events: the end of its serialization at an egress port and
//! its arrival at the far end of the link (only the head of each link's in-flight ring is
//! scheduled). Host NICs pull data from the host's round-robin flow scheduler when they go idle,
//! so data never queues inside a host; ACKs wait in the NIC's priority queue.

use std::collections::VecDeque;

use crate::engine::EventQueue;
use crate::ids::{FlowId, HostId, NodeId, PacketId, PortId, SwitchId};
use crate::lb::{AckInfo, FlowCtx, HostLb, PacketView, SwitchCtx, SwitchLb};
use crate::net::{Packet, PacketKind, PacketSlab, Port, Route};
use crate::rng::{rng_for, SimRng, Stream};
use crate::scenario::Scenario;
use crate::stats::{self, bound, FlowRecord, Summary};
use crate::time::{BitsPerSec, SimTime};
use crate::transport::{flow_key, Flow};

#[derive(Clone, Copy, Debug)]
enum Event {
    FlowStart(FlowId),
    /// The packet in service at this port has been serialized.
    TxDone(PortId),
    /// The head of this port's link has reached the far end.
    Arrive(PortId),
    /// The host's pacing gap has elapsed.
    HostWake(HostId),
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
    events: EventQueue<Event>,
    event_count: u64,
    ports: Vec<Port>,
    hosts: Vec<Host>,
    switches: Vec<Switch>,
    flows: Vec<Flow>,
    packets: PacketSlab,
    mss: u32,
    header: u32,
    ack_bytes: u32,
    pace_rate: BitsPerSec,
    completed: u64,
    counters: Counters,
    ended: Option<SimTime>,
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
            events.push(f.start, Event::FlowStart(FlowId(i as u32)));
        }
        Simulation {
            mss: sc.file.packet.payload_bytes,
            header: sc.file.packet.header_bytes,
            ack_bytes: sc.file.packet.ack_bytes,
            now: SimTime::ZERO,
            events,
            event_count: 0,
            ports,
            hosts,
            switches,
            flows,
            packets: PacketSlab::default(),
            pace_rate: BitsPerSec(pace_rate.0.max(1)),
            completed: 0,
            counters: Counters::default(),
            ended: None,
            sc,
        }
    }

    /// Runs until every flow has completed, or the end-time cap, or nothing is left to happen.
    pub fn run(&mut self) {
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
            match ev {
                Event::FlowStart(f) => self.on_flow_start(f),
                Event::TxDone(p) => self.on_tx_done(p),
                Event::Arrive(p) => self.on_arrive(p),
                Event::HostWake(h) => {
                    self.hosts[h.idx()].wake_pending = false;
                    self.try_send(h);
                }
            }
            if self.completed == total {
                break;
            }
        }
        self.ended = Some(self.now);
    }

    fn on_flow_start(&mut self, f: FlowId) {
        let src = self.flows[f.idx()].spec.src;
        self.hosts[src.idx()].active.push_back(f);
        self.try_send(src);
    }

    /// Lets host `h` put its next data packet on its idle NIC, if the pacer allows.
    fn try_send(&mut self, h: HostId) {
        let port = PortId(h.0);
        if self.ports[port.idx()].current.is_some() {
            return;
        }
        let host = &mut self.hosts[h.idx()];
        if host.active.is_empty() {
            return;
        }
        if self.now < host.next_send {
            if !host.wake_pending {
                host.wake_pending = true;
                self.events.push(host.next_send, Event::HostWake(h));
            }
            return;
        }
        // Round-robin over flows that still send; finished ones leave the ring here.
        let f = loop {
            match host.active.pop_front() {
                None => return,
                Some(f) if self.flows[f.idx()].sender_done => continue,
                Some(f) => break f,
            }
        };
        host.active.push_back(f);
        let flow = &mut self.flows[f.idx()];
        let payload = flow.next_payload(self.mss);
        let entropy = flow.lb.next_entropy(self.now, &mut host.rng);
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
            sent_at: self.now,
        };
        flow.next_seq = flow.next_seq.wrapping_add(1);
        flow.sent_bytes += payload as u64;
        flow.data_packets_sent += 1;
        self.counters.data_sent += 1;
        host.next_send = self.now + self.pace_rate.serialization(pkt.wire_bytes as u64);
        let id = self.packets.alloc(pkt);
        self.start_tx(port, id);
    }

    /// Starts serializing `pkt` on the idle `port`.
    #[inline]
    fn start_tx(&mut self, port: PortId, pkt: PacketId) {
        let bytes = self.packets.get(pkt).wire_bytes;
        let p = &mut self.ports[port.idx()];
        debug_assert!(p.current.is_none());
        p.account(self.now);
        p.queued_bytes += bytes as u64;
        p.current = Some(pkt);
        let done = self.now + p.serialization(bytes);
        self.events.push(done, Event::TxDone(port));
    }

    /// Offers `pkt` to a switch egress queue: drop-tail on the byte buffer, CE mark above the
    /// threshold, start service if idle.
    #[inline]
    fn enqueue(&mut self, port: PortId, pkt: PacketId) {
        let now = self.now;
        let packet = self.packets.get_mut(pkt);
        let bytes = packet.wire_bytes as u64;
        let p = &mut self.ports[port.idx()];
        if p.queued_bytes + bytes > p.buffer_bytes {
            p.stats.drops += 1;
            let (kind, flow) = (packet.kind, packet.flow);
            self.packets.free(pkt);
            match kind {
                PacketKind::Data => {
                    self.counters.data_dropped += 1;
                    self.flows[flow.idx()].packets_dropped += 1;
                }
                PacketKind::Ack => self.counters.acks_dropped += 1,
            }
            return;
        }
        if packet.kind == PacketKind::Data && p.queued_bytes > p.ecn_threshold_bytes {
            packet.ecn = true;
            p.stats.ecn_marks += 1;
            self.counters.ecn_marks += 1;
        }
        p.account(now);
        p.queued_bytes += bytes;
        p.stats.max_bytes = p.stats.max_bytes.max(p.queued_bytes);
        if p.current.is_none() {
            p.current = Some(pkt);
            let done = now + p.serialization(bytes as u32);
            self.events.push(done, Event::TxDone(port));
        } else {
            p.queue.push_back(pkt);
        }
    }

    fn on_tx_done(&mut self, port: PortId) {
        let now = self.now;
        let p = &mut self.ports[port.idx()];
        let pkt = p.current.take().expect("a packet in service");
        let bytes = self.packets.get(pkt).wire_bytes;
        p.account(now);
        p.queued_bytes -= bytes as u64;
        p.stats.tx_packets += 1;
        let arrival = now + p.latency;
        p.wire.push_back((arrival, pkt));
        if p.wire.len() == 1 {
            self.events.push(arrival, Event::Arrive(port));
        }
        if let Some(next) = p.prio.pop_front().or_else(|| p.queue.pop_front()) {
            let b = self.packets.get(next).wire_bytes;
            p.current = Some(next);
            let done = now + p.serialization(b);
            self.events.push(done, Event::TxDone(port));
        } else if (port.0) < self.sc.topology.hosts {
            self.try_send(HostId(port.0));
        }
    }

    fn on_arrive(&mut self, port: PortId) {
        let p = &mut self.ports[port.idx()];
        let (_, pkt) = p.wire.pop_front().expect("a packet on the wire");
        if let Some(&(next, _)) = p.wire.front() {
            self.events.push(next, Event::Arrive(port));
        }
        match p.peer {
            NodeId::Switch(s) => self.forward(s, pkt),
            NodeId::Host(h) => self.receive(h, pkt),
        }
    }

    fn forward(&mut self, s: SwitchId, pkt: PacketId) {
        let packet = self.packets.get(pkt);
        let out = match self.sc.topology.route(s, packet.dst) {
            Route::Port(p) => p,
            Route::Group { first, n } => {
                let is_ack = packet.kind == PacketKind::Ack;
                let view = PacketView {
                    src: packet.src,
                    dst: packet.dst,
                    flow_key: flow_key(packet.flow, is_ack),
                    entropy: packet.entropy,
                    is_ack,
                    now: self.now,
                };
                let group = &self.ports[first.idx()..first.idx() + n as usize];
                let sw = &mut self.switches[s.idx()];
                let i = sw.lb.choose(&view, group, &mut sw.rng);
                PortId(first.0 + i as u32)
            }
        };
        self.enqueue(out, pkt);
    }

    fn receive(&mut self, h: HostId, pkt: PacketId) {
        let packet = *self.packets.get(pkt);
        let flow = &mut self.flows[packet.flow.idx()];
        match packet.kind {
            PacketKind::Data => {
                debug_assert_eq!(packet.dst, h);
                self.counters.data_delivered += 1;
                flow.recv_bytes += packet.payload as u64;
                flow.data_packets_received += 1;
                if flow.finish.is_none() && flow.recv_bytes >= flow.spec.size_bytes {
                    flow.finish = Some(self.now);
                    self.completed += 1;
                }
                // The data packet's slot becomes its ACK.
                let ack = self.packets.get_mut(pkt);
                ack.kind = PacketKind::Ack;
                ack.src = h;
                ack.dst = packet.src;
                ack.wire_bytes = self.ack_bytes;
                ack.payload = 0;
                ack.done = flow.finish.is_some();
                self.counters.acks_sent += 1;
                let nic = PortId(h.0);
                if self.ports[nic.idx()].current.is_none() {
                    self.start_tx(nic, pkt);
                } else {
                    self.ports[nic.idx()].prio.push_back(pkt);
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
                if packet.done {
                    flow.sender_done = true;
                }
                self.packets.free(pkt);
            }
        }
    }

    pub fn now(&self) -> SimTime {
        self.now
    }

    pub fn counters(&self) -> Counters {
        self.counters
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
            let ids = p
                .queue
                .iter()
                .chain(p.prio.iter())
                .chain(p.current.iter())
                .copied()
                .chain(p.wire.iter().map(|w| w.1));
            for id in ids {
                match self.packets.get(id).kind {
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
            max = max.max(p.stats.max_bytes);
            over |= p.stats.max_bytes > p.buffer_bytes;
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
                start_ps: f.spec.start.ps(),
                finish_ps: f.finish.map(|t| t.ps()),
                fct_ps: f.finish.map(|t| (t - f.spec.start).ps()),
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
            .map(|f| f.spec.start)
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
        let lb = bound::lower_bound(&sc.topology, &sc.flows, sizes) - first_start;
        let mut fcts: Vec<u64> = self
            .flows
            .iter()
            .filter_map(|f| f.finish.map(|t| (t - f.spec.start).ps()))
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
