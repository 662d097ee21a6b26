//! Fabric forwarding: egress admission (drop-tail, trimming, ECN and RED marking), arrivals at
//! the far end of a link, and each switch's next-hop choice.

use super::*;

impl Simulation {
    /// Offers the packet in slot `i` to an egress port: drop-tail on the byte buffer (or
    /// trimming), CE mark above the threshold. On priority ports control packets have their own
    /// buffer and go first.
    #[inline]
    pub(super) fn enqueue(&mut self, port: PortId, mut i: u32) {
        let (bytes, kind) = {
            let pk = self.slots.pkt(i);
            (pk.wire_bytes as u64, pk.kind)
        };
        let p = &mut self.ports[port.idx()];
        p.sync(self.now);
        if self.prio && kind != PacketKind::Data {
            // Host NICs (ports 0..hosts) never drop, control packets included: their ACKs wait
            // at most for the data packet in service.
            let host_nic = port.idx() < self.hosts.len();
            if !host_nic && p.ctrl_bytes as u64 + bytes > self.ctrl_cap {
                p.stats.drops += 1;
                self.lose(i);
                return;
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
                self.lose(i);
                return;
            }
            if kind == PacketKind::Data && marks(p, self.red, self.red_salt, port) {
                self.slots.pkt_mut(i).ecn = true;
                p.stats.ecn_marks += 1;
                self.counters.ecn_marks += 1;
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
                self.counters.trimmed += 1;
                if p.ctrl_bytes as u64 + self.trim_header as u64 > self.ctrl_cap {
                    p.stats.drops += 1;
                    self.lose(i);
                    return;
                }
            }
        }
        self.admit(port, i);
    }

    /// Puts the admitted packet in slot `i` on the port; the ring's new head gets its arrival
    /// event.
    #[inline]
    pub(super) fn admit(&mut self, port: PortId, i: u32) {
        self.hops += 1;
        let p = &mut self.ports[port.idx()];
        if p.push(self.now, i, &self.slots) {
            let t = p.head_arrival().expect("just pushed");
            self.events.push(t, Event::Arrive(port).into());
        }
    }

    /// Accounts a packet dropped by a queue or lost on a link, and frees its slot.
    pub(super) fn lose(&mut self, i: u32) {
        let packet = self.slots.pkt(i);
        if packet.kind.is_forward() {
            self.counters.data_dropped += 1;
            self.flows[packet.flow.idx()].packets_dropped += 1;
        } else {
            self.counters.acks_dropped += 1;
        }
        self.slots.release(i);
    }

    pub(super) fn on_arrive(&mut self, port: PortId) {
        let p = &mut self.ports[port.idx()];
        let i = p.pop_arrived(self.now);
        if let Some(next) = p.nth(0) {
            self.events
                .push(next.tx_end + p.latency, Event::Arrive(port).into());
            // The next packet to arrive is read then, the one after it later still: ask for
            // their lines now. A host handles an arrival with its flow's line: fetch that too.
            match p.peer {
                NodeId::Switch(_) => self.slots.prefetch(next.slot),
                NodeId::Host(_) => {
                    if let Some(after) = p.nth(1) {
                        self.slots.prefetch(after.slot);
                    }
                    let pk = self.slots.pkt(next.slot);
                    let f = &self.flows[pk.flow.idx()];
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
            self.counters.link_losses += 1;
            self.lose(i);
            return;
        }
        match p.peer {
            NodeId::Switch(s) => self.forward(s, i),
            NodeId::Host(h) => self.receive(h, i),
        }
    }

    pub(super) fn forward(&mut self, s: SwitchId, i: u32) {
        let packet = *self.slots.pkt(i);
        let out = match self.sc.topology.route(s, packet.dst) {
            Route::Port(p) => p,
            Route::Group { first, n } => {
                let is_ack = !packet.kind.is_forward();
                let weights = self.weights.get(s, packet.dst.0 / self.hosts_per_tor);
                if weights.is_some_and(|w| w.iter().all(|&x| x == 0)) {
                    // Converged routing knows no path to the destination from here.
                    self.counters.unroutable += 1;
                    self.lose(i);
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
        self.enqueue(out, i);
    }
}

/// Whether a data packet arriving at `p` now is CE-marked: above the threshold, always (step
/// marking) or with RED's probability rising to `pmax` at Kmax. The coin is drawn from the
/// port's own stream (the run's RED salt, the port and the count of packets it has accepted):
/// deterministic, with no RNG state per port, and traffic elsewhere never moves it.
#[inline]
pub(super) fn marks(p: &Port, red: Option<(u64, f64)>, salt: u64, port: PortId) -> bool {
    let (q, k) = (p.queued_bytes, p.ecn_threshold_bytes);
    q > k
        && red.is_none_or(|(kmax, pmax)| {
            let draw = crate::rng::mix64(crate::rng::mix64(salt ^ port.0 as u64) ^ p.accepted());
            let coin = draw as f64 / 2f64.powi(64);
            q >= kmax || coin < pmax * (q - k) as f64 / (kmax - k) as f64
        })
}
