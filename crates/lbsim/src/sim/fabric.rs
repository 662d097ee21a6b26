//! The fabric: egress ports and the packet store, switches and the routing they forward by.
//! It admits packets (drop-tail, trimming, ECN and RED marking), moves them over links and
//! picks each switch's next hop; what reaches a host, and what is lost, it hands back.

use super::telemetry::{observe, Observe};
use super::{Cx, Event};
use crate::failure::Weights;
use crate::ids::{HostId, NodeId, PortId, SwitchId};
use crate::lb::{PacketView, SwitchCtx, SwitchLb};
use crate::net::{Fault, Packet, PacketKind, Port, Route, Slots, Topology};
use crate::rng::{rng_for, SimRng, Stream};
use crate::scenario::Scenario;
use crate::stats::telemetry::EventKind;
use crate::time::SimTime;
use crate::transport::{flow_key, Flow};

/// A NIC sees its own ports' carrier: a packet its policy put on a port that is down leaves by
/// the next port of the group that is up (all down: as chosen, to be lost there).
#[inline]
fn carrier(group: &[Port], i: usize) -> usize {
    if !group[i].faulty {
        return i;
    }
    (0..group.len())
        .map(|k| (i + k) % group.len())
        .find(|&k| !matches!(group[k].fault, Fault::Down))
        .unwrap_or(i)
}

/// Whose policy makes a choice among a next-hop group.
#[derive(Clone, Copy)]
enum Chooser {
    Switch(SwitchId),
    Host(HostId),
}

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
    /// Hosts with several ports: each host's choice among its ports toward a destination, by
    /// the scheme's switch policy, as at any next-hop group (empty: one port each).
    host_choice: Vec<Switch>,
    /// Hosts stamp the port they chose in the entropy (`load_balancing.port`): a host's group
    /// reads it, and every policy sees the entropy without it (`path_mask`).
    stamped: bool,
    path_mask: u32,
    /// Packets put on links so far.
    pub(super) hops: u64,
    /// Ports put control packets ahead of data (trimming, EQDS).
    pub(super) prio: bool,
    /// Priority ports: bytes of control packets a switch port holds.
    pub(super) ctrl_cap: u64,
    /// Switches trim instead of dropping data (NDP).
    trim: bool,
    /// A trimmed header meeting a full control queue goes back to its sender (NDP).
    rts: bool,
    trim_header: u16,
    /// Per port: alternates NDP's choice between trimming the arriving or the newest queued
    /// packet (each port its own, so that no other port's traffic moves it).
    trim_coin: Vec<bool>,
    /// RED marking: Kmax and the probability there (None: step marking at the threshold).
    red: Option<(u64, f64)>,
    red_salt: u64,
    /// The switch policy reads queue lengths.
    sync_groups: bool,
    /// Converged routing's weights, and how many times routing converged.
    weights: Weights,
    routing_epoch: u32,
    /// Telemetry's per-port tallies and event log (None: off, and nothing is paid for it).
    pub(super) obs: Option<Box<Observe>>,
    /// Priority flow control, if on.
    pub(super) pfc: Option<Box<Pfc>>,
    /// A partitioned run: the links this partition shares with others (None: one world).
    pub(super) cut: Option<Box<Cut>>,
}

/// How a partition sees a port (see [`Cut`]).
pub(super) const INSIDE: u8 = 0;
/// The port is the partition's own and feeds another partition's node: its packets are
/// shipped there, and leave its ring at the first window end after they arrive.
pub(super) const SHIPS: u8 = 1;
/// The port is another partition's and feeds a node of this one: arrivals come from
/// `Cut::inbound`, in the order they were shipped.
pub(super) const RECEIVES: u8 = 2;

/// A partition's links to the others. A packet crossing a cut is shipped, with its arrival
/// time, at the end of the window before the one it arrives in (its departure is final by
/// then: see `parallel`); the receiving partition schedules its arrival as the single world
/// would, and the sending one keeps it in the port's ring until a window end after it, for
/// the queue, without an event of its own (`Fabric::retire_shipped`).
pub(super) struct Cut {
    pub(super) kind: Vec<u8>,
    /// Per port: the partition its far end is in.
    to: Vec<u8>,
    /// Per receiving port: the slots of packets shipped to this partition, oldest first.
    inbound: Vec<std::collections::VecDeque<u32>>,
    /// The ports this partition ships on, and per port how many of its oldest packets are
    /// shipped.
    out_ports: Vec<PortId>,
    shipped: Vec<u32>,
}

impl Cut {
    pub(super) fn new(kind: Vec<u8>, to: Vec<u8>) -> Cut {
        let n = kind.len();
        let out_ports = (0..n as u32)
            .filter(|&p| kind[p as usize] == SHIPS)
            .map(PortId)
            .collect();
        Cut {
            inbound: (0..n).map(|_| Default::default()).collect(),
            shipped: vec![0; n],
            out_ports,
            kind,
            to,
        }
    }
}

/// PFC on the data class. A port is both an egress (of the node it leaves) and, at the switch
/// it feeds, an input port: `held` counts per input port the data bytes received by it and
/// still held in that switch's egress queues (from admission to the end of serialization,
/// seen through `Event::Depart`). Above XOFF the switch sends the input port's upstream egress
/// (the port itself) a PAUSE, at or below XON a RESUME; each frame takes effect one link
/// latency after it is sent (`Event::Pfc`), and its own serialization is neglected.
pub(super) struct Pfc {
    xoff: u64,
    xon: u64,
    /// Each input port's share of its switch's buffer: data beyond it is dropped.
    pub(super) buffer: u64,
    /// Ports 0..hosts are host NICs.
    hosts: u32,
    /// Each host port's host, when hosts have several ports (empty: port h is host h's).
    host_of: Vec<HostId>,
    /// Per input port: data bytes held in its switch's egress queues.
    held: Vec<u64>,
    /// Per input port: the switch sent a PAUSE that no RESUME followed yet.
    xoff_sent: Vec<bool>,
    /// Per egress port: the frames that reached it ask for a pause; a pause imposed from
    /// outside (`Simulation::impose_pause`).
    frame_paused: Vec<bool>,
    imposed: Vec<bool>,
    /// Per switch egress port: when its pending `Depart` event is due (MAX: none).
    depart_at: Vec<SimTime>,
    /// PAUSE frames sent (RESUMEs not counted).
    pub(super) pause_frames: u64,
    /// The most data one input port held.
    pub(super) max_held: u64,
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
            .map(|(s, _)| {
                let ctx = SwitchCtx {
                    topology: topo,
                    switch: SwitchId(s as u32),
                    salt: crate::rng::derive_seed(st.seed, Stream::Salt, s as u64),
                };
                Switch {
                    lb: SwitchLb::new(sc.scheme, &ctx, &st.load_balancing),
                    rng: rng_for(st.seed, Stream::Switch, s as u64),
                }
            })
            .collect();
        let stamped = !topo.single_homed()
            && st
                .load_balancing
                .port_info()
                .is_some_and(|p| p.name != crate::lb::port::SCHEME);
        // A host's uplinks are a group of its leaf's tier: its policy is built as a leaf's.
        let host_choice = if topo.single_homed() {
            Vec::new()
        } else {
            (0..topo.hosts)
                .map(|h| {
                    let i = (topo.switches.len() + h as usize) as u64;
                    let ctx = SwitchCtx {
                        topology: topo,
                        switch: topo.leaf_of(HostId(h)),
                        salt: crate::rng::derive_seed(st.seed, Stream::Salt, i),
                    };
                    Switch {
                        lb: SwitchLb::new(sc.scheme, &ctx, &st.load_balancing),
                        rng: rng_for(st.seed, Stream::Switch, i),
                    }
                })
                .collect()
        };
        Fabric {
            ports,
            slots: Slots::new(),
            switches,
            host_choice,
            stamped,
            path_mask: if stamped {
                crate::lb::port::PATH_MASK
            } else {
                u32::MAX
            },
            hops: 0,
            prio,
            ctrl_cap: st.control_buffer_bytes,
            trim: st.loss_recovery == crate::transport::LossRecoveryKind::Trim,
            rts: st.loss_recovery == crate::transport::LossRecoveryKind::Trim
                && st.return_to_sender,
            trim_header: st.trim_header_bytes as u16,
            trim_coin: vec![false; if prio { topo.links.len() } else { 0 }],
            red: st.red,
            red_salt: crate::rng::derive_seed(st.seed, Stream::Salt, u64::MAX),
            sync_groups: sc.scheme.reads_queues,
            weights: Weights::default(),
            routing_epoch: 0,
            obs: None,
            cut: None,
            pfc: st.pfc.map(|(xoff, xon)| {
                let n = topo.links.len();
                Box::new(Pfc {
                    xoff,
                    xon,
                    buffer: st.buffer_bytes,
                    hosts: topo.switch_ports().start as u32,
                    host_of: if topo.single_homed() {
                        Vec::new()
                    } else {
                        (0..topo.switch_ports().start as u32)
                            .filter_map(|p| topo.port_host(PortId(p)))
                            .collect()
                    },
                    held: vec![0; n],
                    xoff_sent: vec![false; n],
                    frame_paused: vec![false; n],
                    imposed: vec![false; n],
                    depart_at: vec![SimTime::MAX; n],
                    pause_frames: 0,
                    max_held: 0,
                })
            }),
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

    /// The port host `h` sends the packet in slot `i` on: the one port toward its destination,
    /// or the choice of the scheme's switch policy among them.
    pub(super) fn host_port(&mut self, cx: &Cx, topo: &Topology, h: HostId, i: u32) -> PortId {
        let packet = *self.slots.pkt(i);
        match topo.host_route(h, packet.dst) {
            Route::Port(p) => p,
            // A host port policy chose the port and stamped it (the receiver's ACK, the same
            // index on its side: the same plane back).
            Route::Group { first, n }
                if self.stamped && first.idx() == topo.host_net_ports(h).start =>
            {
                let k = crate::lb::port::stamped_port(packet.entropy) % n as usize;
                let group = &self.ports[first.idx()..first.idx() + n as usize];
                PortId(first.0 + carrier(group, k) as u32)
            }
            Route::Group { first, n } => {
                let chosen = self.choose(cx.now, Chooser::Host(h), &packet, first, n);
                // Hosts are not given converged weights, so a group always has a choice.
                chosen.unwrap_or(first)
            }
        }
    }

    /// The choice of a scheme's policy among the next-hop group `first..first + n`, with the
    /// same view of the packet at a switch and at a multi-port host's NIC. None: converged
    /// routing knows no path to the destination from this switch.
    #[inline(always)]
    fn choose(
        &mut self,
        now: SimTime,
        at: Chooser,
        packet: &Packet,
        first: PortId,
        n: u32,
    ) -> Option<PortId> {
        let (weights, chooser) = match at {
            Chooser::Switch(s) => (self.weights.get(s, packet.dst), &mut self.switches[s.idx()]),
            Chooser::Host(h) => (None, &mut self.host_choice[h.idx()]),
        };
        if weights.is_some_and(|w| w.iter().all(|&x| x == 0)) {
            return None;
        }
        let is_ack = !packet.kind.is_forward();
        let view = PacketView {
            weights,
            epoch: self.routing_epoch,
            src: packet.src,
            dst: packet.dst,
            flow_key: flow_key(packet.src, packet.dst, is_ack),
            entropy: packet.entropy & self.path_mask,
            is_ack,
            now,
        };
        let group = &mut self.ports[first.idx()..first.idx() + n as usize];
        // Queue-reading policies must see occupancy as of now.
        if self.sync_groups {
            for p in group.iter_mut() {
                p.sync(now);
            }
        }
        let mut i = chooser.lb.choose(&view, group, &mut chooser.rng);
        if let Chooser::Host(_) = at {
            i = carrier(group, i);
        }
        Some(PortId(first.0 + i as u32))
    }

    /// Offers the packet in slot `i` to a switch's egress port: drop-tail on the byte buffer (or
    /// trimming), CE mark above the threshold. On priority ports control packets have their own
    /// buffer and go first. Returns the slot of a packet dropped, if one was.
    #[inline]
    fn enqueue(
        &mut self,
        cx: &mut Cx,
        port: PortId,
        mut i: u32,
        from: PortId,
        (wire, kind): (u16, PacketKind),
    ) -> Option<u32> {
        if self.pfc.is_some() {
            return self.enqueue_pfc(cx, port, i, from, (wire, kind));
        }
        let bytes = wire as u64;
        let mut p = &mut self.ports[port.idx()];
        if p.ships {
            self.note_shipping_empty(cx, port);
            p = &mut self.ports[port.idx()];
        }
        p.sync(cx.now);
        if self.prio && kind != PacketKind::Data {
            if p.ctrl_bytes as u64 + bytes > self.ctrl_cap {
                return refused(p, &mut self.obs, &self.slots, self.rts, cx.now, port, i);
            }
        } else {
            let held = if self.prio {
                p.data_bytes()
            } else {
                p.queued_bytes
            };
            let full = held + bytes > p.buffer_bytes;
            if full && !self.trim {
                return refused(p, &mut self.obs, &self.slots, self.rts, cx.now, port, i);
            }
            if kind == PacketKind::Data && marks(p, self.red, self.red_salt, port) {
                mark(p, &mut self.obs, &mut self.slots, cx, port, i);
            }
            if full {
                // NDP: trim the arriving packet or, every other time, the newest queued one
                // (which the arriving packet replaces), so no flow is trimmed in phase.
                let coin = &mut self.trim_coin[port.idx()];
                *coin = !*coin;
                if *coin {
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
                    return refused(p, &mut self.obs, &self.slots, self.rts, cx.now, port, i);
                }
                let header = self.trim_header;
                admit_to(p, &mut self.hops, &mut self.obs, cx, port, i, header, false);
                return None;
            }
        }
        let data = kind == PacketKind::Data;
        admit_to(p, &mut self.hops, &mut self.obs, cx, port, i, wire, data);
        None
    }

    /// A host puts the packet in slot `i` on its NIC. Host NICs never drop, control packets
    /// included: the pacer releases data only as fast as the link carries it, and an ACK waits
    /// at most for the data packet in service.
    #[inline]
    pub(super) fn inject(&mut self, cx: &mut Cx, port: PortId, i: u32, wire: u16, data: bool) {
        self.ports[port.idx()].sync(cx.now);
        self.admit(cx, port, i, wire, data);
    }

    /// Puts the admitted packet in slot `i` (`wire` bytes, a data packet or not) on the port;
    /// the ring's new head gets its arrival event.
    #[inline(always)]
    pub(super) fn admit(&mut self, cx: &mut Cx, port: PortId, i: u32, wire: u16, data: bool) {
        debug_assert_eq!(
            (wire, data),
            (
                self.slots.pkt(i).wire_bytes,
                self.slots.pkt(i).kind == PacketKind::Data
            ),
            "admitted as the slot holds it"
        );
        let p = &mut self.ports[port.idx()];
        admit_to(p, &mut self.hops, &mut self.obs, cx, port, i, wire, data);
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
        if self.pfc.is_some() && !self.pfc_arrival(cx, port) {
            return Arrival::Forwarded; // a stale event: nothing arrived
        }
        debug_assert!(
            !self.ports[port.idx()].ships,
            "a shipping port has no arrivals"
        );
        let (i, peer, lost) = match self.cut.as_ref().map(|c| c.kind[port.idx()]) {
            Some(RECEIVES) => {
                let i = self.take_inbound(port);
                let p = &mut self.ports[port.idx()];
                (i, p.peer, lost_on(p))
            }
            _ => self.pop_head(cx, flows, port),
        };
        self.land(cx, topo, port, i, peer, lost)
    }

    /// Takes the head of `port`'s ring, which has reached the far end, and schedules the next.
    /// Returns its slot, the node it reached and whether the link lost it.
    #[inline(always)]
    fn pop_head(&mut self, cx: &mut Cx, flows: &[Flow], port: PortId) -> (u32, NodeId, bool) {
        let p = &mut self.ports[port.idx()];
        let i = p.pop_arrived(cx.now);
        if let Some(next) = p.nth(0) {
            // (PFC: a paused port's waiting data departs at `Port::UNSCHEDULED`, far beyond any
            // run; that event is stale, and the resume schedules the real one.)
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
        (i, p.peer, lost_on(p))
    }

    /// The packet in slot `i` reached the far end of `port`'s link: lost there if the link
    /// is faulty, else forwarded by the switch or handed to the host.
    #[inline(always)]
    fn land(
        &mut self,
        cx: &mut Cx,
        topo: &Topology,
        port: PortId,
        i: u32,
        peer: NodeId,
        lost: bool,
    ) -> Arrival {
        if lost {
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
        match peer {
            NodeId::Switch(s) => self.forward(cx, topo, s, i, port),
            NodeId::Host(h) => Arrival::AtHost(h, i),
        }
    }

    /// At a window boundary, before anything at `before` is handled: the shipped packets that
    /// reached the far end of their cut links before `before` leave their rings (their copies
    /// live on in the receiving partitions, which decide their fate). The single world popped
    /// each at its arrival event; the queue never counted them past their departure, so only
    /// the ring's length differs in between, which no decision reads.
    pub(super) fn retire_shipped(&mut self, before: SimTime) {
        let Some(c) = &mut self.cut else {
            return;
        };
        for &port in &c.out_ports {
            let p = &mut self.ports[port.idx()];
            let k = &mut c.shipped[port.idx()];
            while *k > 0 {
                let h = p.nth(0).expect("a shipped packet is held");
                let at = h.tx_end + p.latency;
                if at >= before {
                    break;
                }
                // As far as the single world's pop at the arrival synced the port, no further:
                // a report cuts the stays still running at the end from the departure cursor.
                p.sync(at);
                self.slots.release(p.pop_retired());
                *k -= 1;
            }
        }
    }

    /// A shipping port keeps the packets that reached the far end until the window ends, but
    /// the single world's ring empties at the last of those arrivals, and RED's coin counts
    /// from there: before `port` accepts a packet now, whether that moment has passed. The
    /// last arrival at this very instant came first if the event being handled sorts after
    /// it: its `Arrive` would rank 0 (scheduled a latency earlier), and events sort by
    /// (time, rank, event).
    #[inline(never)]
    fn note_shipping_empty(&mut self, cx: &Cx, port: PortId) {
        let p = &mut self.ports[port.idx()];
        let empty = match p.nth(p.len().wrapping_sub(1)) {
            None => true,
            Some(last) => super::sorts_before(
                (last.tx_end + p.latency, 0, Event::Arrive(port)),
                (cx.now, cx.rank, cx.key),
            ),
        };
        p.note_empty(empty);
    }

    /// The slot of the packet shipped from another partition that reached the far end of
    /// `port`'s link now.
    #[inline(never)]
    fn take_inbound(&mut self, port: PortId) -> u32 {
        let c = self.cut.as_mut().expect("a cut");
        c.inbound[port.idx()]
            .pop_front()
            .expect("an arrival on a cut link was shipped")
    }

    /// Ships every packet on this partition's cut links that arrives before `before` and was
    /// not shipped yet: `out(partition, port, arrival, packet)`.
    pub(super) fn ship(
        &mut self,
        before: SimTime,
        mut out: impl FnMut(u8, PortId, SimTime, crate::net::Packet),
    ) {
        let Some(c) = &mut self.cut else {
            return;
        };
        for &port in &c.out_ports {
            let p = &self.ports[port.idx()];
            let k = &mut c.shipped[port.idx()];
            while let Some(h) = p.nth(*k as usize) {
                let t = h.tx_end + p.latency;
                if t >= before {
                    break;
                }
                out(c.to[port.idx()], port, t, *self.slots.pkt(h.slot));
                *k += 1;
            }
        }
    }

    /// When the first packet not yet shipped reaches the far end of its cut link, if any. It
    /// has no event here (see [`Cut`]), so the windows must be told of it, or a run where
    /// nothing else is due would skip past its arrival.
    pub(super) fn next_shipment(&self) -> Option<SimTime> {
        let c = self.cut.as_ref()?;
        c.out_ports
            .iter()
            .filter_map(|&port| {
                let p = &self.ports[port.idx()];
                p.nth(c.shipped[port.idx()] as usize)
                    .map(|h| h.tx_end + p.latency)
            })
            .min()
    }

    /// Takes a packet shipped by another partition: it arrives at the far end of `port` at
    /// `t`, the event the single world would have scheduled.
    pub(super) fn take_shipped(
        &mut self,
        events: &mut crate::engine::EventQueue<super::Packed>,
        port: PortId,
        t: SimTime,
        pkt: crate::net::Packet,
    ) {
        let i = self.slots.insert(pkt);
        let c = self.cut.as_mut().expect("a cut");
        c.inbound[port.idx()].push_back(i);
        events.push(t, Event::Arrive(port).into());
    }

    /// Frees the copies of packets shipped here that have not arrived yet (their originals
    /// stay in the sending partition's rings).
    pub(super) fn drop_inbound(&mut self) {
        if let Some(c) = &mut self.cut {
            for q in &mut c.inbound {
                for i in q.drain(..) {
                    self.slots.release(i);
                }
            }
        }
    }

    /// Switch `s` forwards the packet in slot `i`, which came in by port `from`. A trimmed
    /// header that its queue refuses goes round once more, turned back toward its sender
    /// (return-to-sender), as one loop so that the policy and admission stay inlined once.
    #[inline]
    fn forward(
        &mut self,
        cx: &mut Cx,
        topo: &Topology,
        s: SwitchId,
        mut i: u32,
        from: PortId,
    ) -> Arrival {
        loop {
            let packet = *self.slots.pkt(i);
            let out = match topo.route(s, packet.dst) {
                Route::Port(p) => p,
                Route::Group { first, n } => {
                    match self.choose(cx.now, Chooser::Switch(s), &packet, first, n) {
                        Some(p) => p,
                        None => {
                            cx.counters.unroutable += 1;
                            observe(&mut self.obs, &self.slots, cx.now, EventKind::Drop, None, i);
                            return Arrival::Lost(i);
                        }
                    }
                }
            };
            match self.enqueue(cx, out, i, from, (packet.wire_bytes, packet.kind)) {
                None => return Arrival::Forwarded,
                // The same test as `refused`, which counted no drop for it.
                Some(dropped) if self.rts && self.slots.pkt(dropped).kind == PacketKind::Header => {
                    self.turn_around(cx, dropped);
                    i = dropped;
                }
                Some(dropped) => return Arrival::Lost(dropped),
            }
        }
    }

    /// NDP's return-to-sender: the trimmed header in slot `i` met a full control queue and
    /// goes back toward its sender as a control packet (which, meeting a full queue again, is
    /// dropped).
    #[cold]
    #[inline(never)]
    fn turn_around(&mut self, cx: &mut Cx, i: u32) {
        let p = self.slots.pkt_mut(i);
        p.kind = PacketKind::Returned;
        std::mem::swap(&mut p.src, &mut p.dst);
        cx.counters.returned += 1;
        cx.counters.acks_sent += 1;
    }

    /// `enqueue` with PFC on: control packets go ahead in their own buffer and are never
    /// paused; a data packet is dropped only if its input port's share of the buffer is full
    /// (the headroom was too small), else counted against that input port, which a PAUSE
    /// stops above XOFF. A paused egress keeps the data waiting without a departure.
    #[inline(never)]
    fn enqueue_pfc(
        &mut self,
        cx: &mut Cx,
        port: PortId,
        i: u32,
        from: PortId,
        (wire, kind): (u16, PacketKind),
    ) -> Option<u32> {
        let bytes = wire as u64;
        self.pfc_sync(cx, port);
        let pfc = self.pfc.as_mut().expect("pfc on");
        let p = &mut self.ports[port.idx()];
        if kind != PacketKind::Data {
            if p.ctrl_bytes as u64 + bytes > self.ctrl_cap {
                return refused(p, &mut self.obs, &self.slots, self.rts, cx.now, port, i);
            }
        } else {
            let f = from.idx();
            if pfc.held[f] + bytes > pfc.buffer {
                return refused(p, &mut self.obs, &self.slots, self.rts, cx.now, port, i);
            }
            if marks(p, self.red, self.red_salt, port) {
                mark(p, &mut self.obs, &mut self.slots, cx, port, i);
            }
            self.slots.set_ingress(i, from.0);
            pfc.held[f] += bytes;
            pfc.max_held = pfc.max_held.max(pfc.held[f]);
            if pfc.held[f] > pfc.xoff && !pfc.xoff_sent[f] {
                pfc.xoff_sent[f] = true;
                pfc.pause_frames += 1;
                cx.push(cx.now + self.ports[f].latency, Event::Pfc(from));
            }
            let p = &mut self.ports[port.idx()];
            if p.paused {
                self.hops += 1;
                p.push_paused(cx.now, i, &self.slots);
                if let Some(o) = &mut self.obs {
                    o.pushed(port, self.slots.pkt(i).wire_bytes, p.queued_bytes);
                }
                return None;
            }
        }
        self.admit(cx, port, i, wire, kind == PacketKind::Data);
        self.arm_depart(cx, port);
        None
    }

    /// PFC: before the head of `port` arrives, the input counters see it (and anything else
    /// departed) leave, so that its slot can move on. Returns false for a stale event: the
    /// head is not due now (it was paused after the event was scheduled).
    #[inline(never)]
    fn pfc_arrival(&mut self, cx: &mut Cx, port: PortId) -> bool {
        let switch = self.pfc.as_ref().is_some_and(|p| port.0 >= p.hosts);
        if switch {
            self.pfc_sync(cx, port);
        }
        self.ports[port.idx()].head_arrival() == Some(cx.now)
    }

    /// PFC: brings switch egress `port` up to date and lets the input counters see every
    /// packet that has finished serializing there; an input port that falls to XON is resumed.
    #[inline(never)]
    fn pfc_sync(&mut self, cx: &mut Cx, port: PortId) {
        self.ports[port.idx()].sync(cx.now);
        loop {
            let Some(e) = self.ports[port.idx()].take_departed() else {
                return;
            };
            if !e.data {
                continue;
            }
            let from = self.slots.ingress(e.slot) as usize;
            let pfc = self.pfc.as_mut().expect("pfc on");
            pfc.held[from] -= e.bytes as u64;
            if pfc.xoff_sent[from] && pfc.held[from] <= pfc.xon {
                pfc.xoff_sent[from] = false;
                cx.push(
                    cx.now + self.ports[from].latency,
                    Event::Pfc(PortId(from as u32)),
                );
            }
        }
    }

    /// PFC: makes sure an event is pending for switch egress `port`'s next departure.
    #[inline(never)]
    fn arm_depart(&mut self, cx: &mut Cx, port: PortId) {
        let t = self.ports[port.idx()].next_departure();
        let pfc = self.pfc.as_mut().expect("pfc on");
        if t < pfc.depart_at[port.idx()] && t < Port::UNSCHEDULED {
            pfc.depart_at[port.idx()] = t;
            cx.push(t, Event::Depart(port));
        }
    }

    /// PFC: switch egress `port`'s next packet has finished serializing (or an event that an
    /// earlier one superseded: then nothing has, and the next is armed again).
    #[inline(never)]
    pub(super) fn on_depart(&mut self, cx: &mut Cx, port: PortId) {
        let pfc = self.pfc.as_mut().expect("pfc on");
        if pfc.depart_at[port.idx()] <= cx.now {
            pfc.depart_at[port.idx()] = SimTime::MAX;
        }
        self.pfc_sync(cx, port);
        self.arm_depart(cx, port);
    }

    /// PFC: a PAUSE or RESUME frame reached egress `port`. Returns the host whose NIC it
    /// paused (true) or resumed.
    #[inline(never)]
    pub(super) fn on_pfc_frame(&mut self, cx: &mut Cx, port: PortId) -> Option<(HostId, bool)> {
        let pfc = self.pfc.as_mut().expect("pfc on");
        let f = &mut pfc.frame_paused[port.idx()];
        *f = !*f;
        self.apply_pause(cx, port)
    }

    /// PFC: a pause imposed on egress `port` from outside begins (`on`) or ends. Returns the
    /// host whose NIC it paused (true) or resumed.
    #[inline(never)]
    pub(super) fn impose_pause(
        &mut self,
        cx: &mut Cx,
        port: PortId,
        on: bool,
    ) -> Option<(HostId, bool)> {
        let pfc = self.pfc.as_mut().expect("pfc on");
        pfc.imposed[port.idx()] = on;
        self.apply_pause(cx, port)
    }

    /// Pauses or resumes egress `port` as its frames and any imposed pause ask; a host NIC's
    /// change is handed back for the host to act on.
    fn apply_pause(&mut self, cx: &mut Cx, port: PortId) -> Option<(HostId, bool)> {
        let pfc = self.pfc.as_ref().expect("pfc on");
        let want = pfc.frame_paused[port.idx()] || pfc.imposed[port.idx()];
        let switch = port.0 >= pfc.hosts;
        let host = pfc
            .host_of
            .get(port.idx())
            .copied()
            .unwrap_or(HostId(port.0));
        if want == self.ports[port.idx()].paused {
            return None;
        }
        if switch {
            self.pfc_sync(cx, port);
        } else {
            self.ports[port.idx()].sync(cx.now);
        }
        let p = &mut self.ports[port.idx()];
        if want {
            p.pause(cx.now);
            if let Some(o) = &mut self.obs {
                o.paused(cx.now, port);
            }
            return (!switch).then_some((host, true));
        }
        if p.resume(cx.now) {
            let t = p.head_arrival().expect("a head to resume");
            cx.push(t, Event::Arrive(port));
        }
        if switch {
            self.arm_depart(cx, port);
            None
        } else {
            Some((host, false))
        }
    }
}

/// Whether port `p`'s link loses the packet reaching its far end now (counted if so).
#[inline(always)]
fn lost_on(p: &mut Port) -> bool {
    let lost = p.faulty && p.fault.loses();
    if lost {
        p.stats.link_losses += 1;
    }
    lost
}

/// [`Fabric::admit`] for a caller that holds the port already (a hop looks it up once).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn admit_to(
    p: &mut Port,
    hops: &mut u64,
    obs: &mut Option<Box<Observe>>,
    cx: &mut Cx,
    port: PortId,
    i: u32,
    wire: u16,
    data: bool,
) {
    *hops += 1;
    let was_empty = p.accept(cx.now, i, wire, data);
    if let Some(o) = obs {
        o.pushed(port, wire, p.queued_bytes);
    }
    if was_empty && !p.ships {
        let t = p.head_arrival().expect("just pushed");
        cx.push(t, Event::Arrive(port));
    }
}

/// A port refused the packet in slot `i` (its buffer is full): counted, logged if telemetry
/// asks, and handed back for release. Under return-to-sender (`rts`) a refused header is not
/// lost but turned around by the caller, so it is neither counted nor logged as a drop.
#[inline]
fn refused(
    p: &mut Port,
    obs: &mut Option<Box<Observe>>,
    slots: &Slots,
    rts: bool,
    now: SimTime,
    port: PortId,
    i: u32,
) -> Option<u32> {
    if rts && slots.pkt(i).kind == PacketKind::Header {
        return Some(i);
    }
    p.stats.drops += 1;
    observe(obs, slots, now, EventKind::Drop, Some(port), i);
    Some(i)
}

/// The data packet in slot `i` is CE-marked at `port`.
#[inline]
fn mark(
    p: &mut Port,
    obs: &mut Option<Box<Observe>>,
    slots: &mut Slots,
    cx: &mut Cx,
    port: PortId,
    i: u32,
) {
    slots.pkt_mut(i).ecn = true;
    p.stats.ecn_marks += 1;
    cx.counters.ecn_marks += 1;
    observe(obs, slots, cx.now, EventKind::Mark, Some(port), i);
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
