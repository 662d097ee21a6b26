//! The fabric: egress ports and the packet store, switches and the routing they forward by.
//! It admits packets (drop-tail, trimming, ECN and RED marking), moves them over links and
//! picks each switch's next hop; what reaches a host, and what is lost, it hands back.

use super::telemetry::{observe, Observe};
use super::{Cx, Event};
use crate::failure::Weights;
use crate::ids::{HostId, NodeId, PortId, SwitchId};
use crate::lb::{PacketView, SwitchCtx, SwitchLb};
use crate::net::{PacketKind, Port, Route, Slots, Topology};
use crate::rng::{rng_for, SimRng, Stream};
use crate::scenario::Scenario;
use crate::stats::telemetry::EventKind;
use crate::transport::{flow_key, Flow};

struct Switch {
    lb: SwitchLb,
    rng: SimRng,
}

/// What became of a packet that reached the far end of a link.
pub(super) enum Arrival {
    /// A switch put it on its next egress port.
    Forwarded,
    /// Lost on the link or dropped by the next queue: the slot still holds it, to account.
    Lost(u32),
    /// It reached host `h`.
    AtHost(HostId, u32),
}

pub(super) struct Fabric {
    pub(super) ports: Vec<Port>,
    /// The packets the ports hold.
    pub(super) slots: Slots,
    switches: Vec<Switch>,
    /// Packets put on links so far.
    pub(super) hops: u64,
    /// Ports put control packets ahead of data (trimming, EQDS).
    pub(super) prio: bool,
    /// Priority ports: bytes of control packets a switch port holds.
    pub(super) ctrl_cap: u64,
    /// Switches trim instead of dropping data (NDP).
    trim: bool,
    trim_header: u16,
    /// Alternates NDP's choice between trimming the arriving or the newest queued packet.
    trim_coin: bool,
    /// RED marking: Kmax and the probability there (None: step marking at the threshold).
    red: Option<(u64, f64)>,
    red_salt: u64,
    /// The switch policy reads queue lengths.
    sync_groups: bool,
    /// Hosts per ToR (leaf): destination host -> destination ToR for weighted groups.
    hosts_per_tor: u32,
    /// Converged routing's weights, and how many times routing converged.
    weights: Weights,
    routing_epoch: u32,
    /// Telemetry's per-port tallies and event log (None: off, and nothing is paid for it).
    pub(super) obs: Option<Box<Observe>>,
}

impl Fabric {
    pub(super) fn new(sc: &Scenario) -> Fabric {
        let st = &sc.settings;
        let topo = &sc.topology;
        let prio = st.priority_ports();
        let ports = topo
            .links
            .iter()
            .map(|l| {
                let (buf, ecn) = match l.from {
                    // Host NICs never drop: the pacer only releases what the link can carry.
                    NodeId::Host(_) => (u64::MAX, u64::MAX),
                    NodeId::Switch(_) => (st.buffer_bytes, sc.ecn_threshold_bytes),
                };
                let mut p = Port::new(l.rate, l.latency, l.to, buf, ecn);
                p.prio = prio;
                p
            })
            .collect();
        let switches = topo
            .switches
            .iter()
            .enumerate()
            .map(|(s, info)| {
                let ctx = SwitchCtx {
                    tier: info.tier,
                    index: info.index,
                    shape: topo.shape,
                    salt: crate::rng::derive_seed(st.seed, Stream::Salt, s as u64),
                };
                Switch {
                    lb: SwitchLb::new(sc.scheme, &ctx, &st.load_balancing),
                    rng: rng_for(st.seed, Stream::Switch, s as u64),
                }
            })
            .collect();
        let hosts_per_tor = match topo.shape {
            crate::net::Shape::FatTree { k } => k / 2,
            crate::net::Shape::LeafSpine { hosts_per_leaf, .. } => hosts_per_leaf,
        };
        Fabric {
            ports,
            slots: Slots::new(),
            switches,
            hops: 0,
            prio,
            ctrl_cap: st.control_buffer_bytes,
            trim: st.loss_recovery == crate::transport::LossRecoveryKind::Trim,
            trim_header: st.trim_header_bytes as u16,
            trim_coin: false,
            red: st.red,
            red_salt: crate::rng::derive_seed(st.seed, Stream::Salt, u64::MAX),
            sync_groups: sc.scheme.reads_queues,
            hosts_per_tor,
            weights: Weights::default(),
            routing_epoch: 0,
            obs: None,
        }
    }

    /// Routing converged on new weights.
    pub(super) fn set_routing(&mut self, weights: Weights) {
        self.weights = weights;
        self.routing_epoch += 1;
    }

    /// Asks for the lines an arrival at `port` will read.
    #[inline(always)]
    pub(super) fn prefetch_port(&self, port: PortId) {
        self.ports[port.idx()].prefetch_head();
    }

    /// Offers the packet in slot `i` to a switch's egress port: drop-tail on the byte buffer (or
    /// trimming), CE mark above the threshold. On priority ports control packets have their own
    /// buffer and go first. Returns the slot of a packet dropped, if one was.
    #[inline]
    fn enqueue(&mut self, cx: &mut Cx, port: PortId, mut i: u32) -> Option<u32> {
        let (bytes, kind) = {
            let pk = self.slots.pkt(i);
            (pk.wire_bytes as u64, pk.kind)
        };
        let p = &mut self.ports[port.idx()];
        p.sync(cx.now);
        if self.prio && kind != PacketKind::Data {
            if p.ctrl_bytes as u64 + bytes > self.ctrl_cap {
                p.stats.drops += 1;
                observe(
                    &mut self.obs,
                    &self.slots,
                    cx.now,
                    EventKind::Drop,
                    Some(port),
                    i,
                );
                return Some(i);
            }
        } else {
            let held = if self.prio {
                p.data_bytes()
            } else {
                p.queued_bytes
            };
            let full = held + bytes > p.buffer_bytes;
            if full && !self.trim {
                p.stats.drops += 1;
                observe(
                    &mut self.obs,
                    &self.slots,
                    cx.now,
                    EventKind::Drop,
                    Some(port),
                    i,
                );
                return Some(i);
            }
            if kind == PacketKind::Data && marks(p, self.red, self.red_salt, port) {
                self.slots.pkt_mut(i).ecn = true;
                p.stats.ecn_marks += 1;
                cx.counters.ecn_marks += 1;
                observe(
                    &mut self.obs,
                    &self.slots,
                    cx.now,
                    EventKind::Mark,
                    Some(port),
                    i,
                );
            }
            if full {
                // NDP: trim the arriving packet or, every other time, the newest queued one
                // (which the arriving packet replaces), so no flow is trimmed in phase.
                self.trim_coin = !self.trim_coin;
                if self.trim_coin {
                    p.swap_tail(&mut i, bytes as u16);
                }
                let packet = self.slots.pkt_mut(i);
                packet.kind = PacketKind::Header;
                packet.payload = 0;
                packet.wire_bytes = self.trim_header;
                cx.counters.trimmed += 1;
                if let Some(o) = &mut self.obs {
                    o.trimmed(cx.now, port, self.slots.pkt(i).flow);
                }
                if p.ctrl_bytes as u64 + self.trim_header as u64 > self.ctrl_cap {
                    p.stats.drops += 1;
                    observe(
                        &mut self.obs,
                        &self.slots,
                        cx.now,
                        EventKind::Drop,
                        Some(port),
                        i,
                    );
                    return Some(i);
                }
            }
        }
        self.admit(cx, port, i);
        None
    }

    /// A host puts the packet in slot `i` on its NIC. Host NICs never drop, control packets
    /// included: the pacer releases data only as fast as the link carries it, and an ACK waits
    /// at most for the data packet in service.
    #[inline]
    pub(super) fn inject(&mut self, cx: &mut Cx, port: PortId, i: u32) {
        self.ports[port.idx()].sync(cx.now);
        self.admit(cx, port, i);
    }

    /// Puts the admitted packet in slot `i` on the port; the ring's new head gets its arrival
    /// event.
    #[inline]
    pub(super) fn admit(&mut self, cx: &mut Cx, port: PortId, i: u32) {
        self.hops += 1;
        let p = &mut self.ports[port.idx()];
        let was_empty = p.push(cx.now, i, &self.slots);
        if let Some(o) = &mut self.obs {
            o.pushed(port, self.slots.pkt(i).wire_bytes, p.queued_bytes);
        }
        if was_empty {
            let t = p.head_arrival().expect("just pushed");
            cx.push(t, Event::Arrive(port));
        }
    }

    /// The head of `port`'s ring reached the far end of the link. `flows` is read only to ask
    /// for the line the next arrival at a host will touch.
    #[inline]
    pub(super) fn on_arrive(
        &mut self,
        cx: &mut Cx,
        topo: &Topology,
        flows: &[Flow],
        port: PortId,
    ) -> Arrival {
        let p = &mut self.ports[port.idx()];
        let i = p.pop_arrived(cx.now);
        if let Some(next) = p.nth(0) {
            cx.push(next.tx_end + p.latency, Event::Arrive(port));
            // The next packet to arrive is read then, the one after it later still: ask for
            // their lines now. A host handles an arrival with its flow's line: fetch that too.
            match p.peer {
                NodeId::Switch(_) => self.slots.prefetch(next.slot),
                NodeId::Host(_) => {
                    if let Some(after) = p.nth(1) {
                        self.slots.prefetch(after.slot);
                    }
                    let pk = self.slots.pkt(next.slot);
                    let f = &flows[pk.flow.idx()];
                    if pk.kind.is_forward() {
                        crate::engine::prefetch(&f.recv_bytes);
                    } else {
                        crate::engine::prefetch(&f.tx);
                    }
                }
            }
        }
        if p.faulty && p.fault.loses() {
            p.stats.link_losses += 1;
            cx.counters.link_losses += 1;
            observe(
                &mut self.obs,
                &self.slots,
                cx.now,
                EventKind::Drop,
                Some(port),
                i,
            );
            return Arrival::Lost(i);
        }
        match p.peer {
            NodeId::Switch(s) => self.forward(cx, topo, s, i),
            NodeId::Host(h) => Arrival::AtHost(h, i),
        }
    }

    #[inline]
    fn forward(&mut self, cx: &mut Cx, topo: &Topology, s: SwitchId, i: u32) -> Arrival {
        let packet = *self.slots.pkt(i);
        let out = match topo.route(s, packet.dst) {
            Route::Port(p) => p,
            Route::Group { first, n } => {
                let is_ack = !packet.kind.is_forward();
                let weights = self.weights.get(s, packet.dst.0 / self.hosts_per_tor);
                if weights.is_some_and(|w| w.iter().all(|&x| x == 0)) {
                    // Converged routing knows no path to the destination from here.
                    cx.counters.unroutable += 1;
                    observe(&mut self.obs, &self.slots, cx.now, EventKind::Drop, None, i);
                    return Arrival::Lost(i);
                }
                let view = PacketView {
                    weights,
                    epoch: self.routing_epoch,
                    src: packet.src,
                    dst: packet.dst,
                    flow_key: flow_key(packet.flow, is_ack),
                    entropy: packet.entropy,
                    is_ack,
                    now: cx.now,
                };
                let group = &mut self.ports[first.idx()..first.idx() + n as usize];
                // Queue-reading policies must see occupancy as of now.
                if self.sync_groups {
                    for p in group.iter_mut() {
                        p.sync(cx.now);
                    }
                }
                let group = &*group;
                let sw = &mut self.switches[s.idx()];
                let i = sw.lb.choose(&view, group, &mut sw.rng);
                PortId(first.0 + i as u32)
            }
        };
        match self.enqueue(cx, out, i) {
            None => Arrival::Forwarded,
            Some(dropped) => Arrival::Lost(dropped),
        }
    }
}

/// Whether a data packet arriving at `p` now is CE-marked: above the threshold, always (step
/// marking) or with RED's probability rising to `pmax` at Kmax. The coin is drawn from the
/// port's own stream (the run's RED salt, the port and the count of packets it has accepted):
/// deterministic, with no RNG state per port, and traffic elsewhere never moves it.
#[inline]
fn marks(p: &Port, red: Option<(u64, f64)>, salt: u64, port: PortId) -> bool {
    let (q, k) = (p.queued_bytes, p.ecn_threshold_bytes);
    q > k
        && red.is_none_or(|(kmax, pmax)| {
            let draw = crate::rng::mix64(crate::rng::mix64(salt ^ port.0 as u64) ^ p.accepted());
            let coin = draw as f64 / 2f64.powi(64);
            q >= kmax || coin < pmax * (q - k) as f64 / (kmax - k) as f64
        })
}
