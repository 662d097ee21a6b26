//! The hosts: NIC scheduling (the round-robin over flows, pacing, the EQDS credit pacer), flow
//! starts and timers, and what a host does with each packet it receives (data, ACKs, NACKs,
//! credits).

use super::*;
use crate::transport::endpoint::Transmit;

impl Simulation {
    pub(super) fn on_flow_start(&mut self, f: FlowId) {
        let flow = &mut self.flows[f.idx()];
        if flow.started.is_some() {
            return;
        }
        if let Some(w) = self.start_waits.get_mut(f.idx()).filter(|w| **w > 1) {
            *w -= 1;
            return;
        }
        flow.started = Some(self.now);
        flow.in_ring = true;
        let src = flow.src;
        flow.last_ack = self.now;
        let rto = flow.tx.as_ref().map_or(self.rto, |t| t.rto());
        self.hosts[src.idx()].active.push_back(f);
        self.try_send(src);
        if self.timers {
            self.events.push(self.now + rto, Event::FlowTimer(f).into());
        }
    }

    /// The flow's timer: after a whole timeout without an ACK, the host policy hears
    /// `on_timeout` and loss recovery declares everything outstanding lost. Re-arms itself until
    /// the flow is done.
    pub(super) fn on_flow_timer(&mut self, f: FlowId) {
        let now = self.now;
        let flow = &mut self.flows[f.idx()];
        let Some(due) = flow.poll_timeout(self.rto) else {
            return;
        };
        if now < due {
            self.events.push(due, Event::FlowTimer(f).into());
            return;
        }
        self.host_lbs.on_timeout(f, now);
        let next = self.flows[f.idx()].on_timeout(now, self.rto);
        self.events.push(next, Event::FlowTimer(f).into());
        self.wake_flow(f);
    }

    /// Puts a flow that left its host's ring (window, credit or nothing to send) back in it.
    pub(super) fn wake_flow(&mut self, f: FlowId) {
        let flow = &mut self.flows[f.idx()];
        if flow.in_ring || flow.sender_done || flow.started.is_none() {
            return;
        }
        flow.in_ring = true;
        let src = flow.src;
        self.hosts[src.idx()].active.push_back(f);
        self.try_send(src);
    }

    /// EQDS: sends the receiver's next credit if its pacer allows, else waits for it.
    pub(super) fn try_pull(&mut self, h: HostId) {
        let now = self.now;
        let host = &mut self.hosts[h.idx()];
        if host.pull_pending || host.pulls.is_empty() {
            return;
        }
        if host.next_pull > now {
            host.pull_pending = true;
            self.events.push(host.next_pull, Event::PullWake(h).into());
            return;
        }
        while let Some((f, entropy)) = host.pulls.pop_front() {
            let flow = &self.flows[f.idx()];
            if flow.finish.is_some() {
                continue;
            }
            let pull = Packet {
                flow: f,
                src: h,
                dst: flow.src,
                seq: 0,
                xmit: 0,
                entropy,
                sent_at: now,
                wire_bytes: self.ack_bytes as u16,
                payload: 0,
                kind: PacketKind::Pull,
                ecn: false,
                done: false,
                cnp: false,
            };
            host.next_pull = now + self.pull_gap;
            if !host.pulls.is_empty() {
                host.pull_pending = true;
                self.events.push(host.next_pull, Event::PullWake(h).into());
            }
            self.counters.acks_sent += 1;
            let i = self.slots.insert(pull);
            self.enqueue(PortId(h.0), i);
            return;
        }
    }

    /// Lets host `h` put its next data packet on its NIC if the NIC is idle and the pacer allows;
    /// otherwise makes sure a wake-up is pending for when both will.
    pub(super) fn try_send(&mut self, h: HostId) {
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
        // Round-robin over flows that may send; finished ones, and ones that their window,
        // credit or loss recovery holds back, leave the ring here (an ACK, credit or timeout
        // puts them back). A flow whose own pacer holds it back is passed over.
        let mut earliest = SimTime::MAX;
        let mut tries = host.active.len();
        let (f, next) = loop {
            if tries == 0 {
                if earliest < SimTime::MAX {
                    host.wake_pending = true;
                    self.events.push(earliest, Event::HostWake(h).into());
                }
                return;
            }
            tries -= 1;
            let Some(f) = host.active.pop_front() else {
                return;
            };
            match self.flows[f.idx()].poll_transmit(now, self.mss) {
                Transmit::Ready(next) => break (f, next),
                Transmit::PacedUntil(t) => {
                    earliest = earliest.min(t);
                    host.active.push_back(f);
                }
                Transmit::Finished | Transmit::Blocked => self.flows[f.idx()].in_ring = false,
            }
        };
        host.active.push_back(f);
        let flow = &mut self.flows[f.idx()];
        let wire = next.payload + self.header;
        // The flow's own stream, indexed by its packet count: other flows never shift it.
        let mut draws = crate::rng::packet_rng(self.path_base, f.0 as u64, flow.data_packets_sent);
        let entropy = self.host_lbs.next_entropy(f, now, &mut draws);
        let pkt = Packet {
            flow: f,
            src: flow.src,
            dst: flow.dst,
            seq: next.seq,
            xmit: flow.next_xmit(),
            entropy,
            sent_at: now,
            wire_bytes: wire as u16,
            payload: next.payload as u16,
            kind: PacketKind::Data,
            ecn: false,
            done: false,
            cnp: false,
        };
        let share = self.flow_rates.as_ref().map(|r| r[f.idx()]);
        flow.on_transmit(next, now, wire, share);
        self.counters.data_sent += 1;
        host.next_send = now + self.pace_rate.serialization(wire as u64);
        let next_send = host.next_send;
        let i = self.slots.insert(pkt);
        self.admit(port, i);
        let ready = self.ports[port.idx()].busy_until.max(next_send);
        let host = &mut self.hosts[h.idx()];
        // The round-robin's next flow sends at the wake-up: fetch its line now.
        if let Some(&g) = host.active.front() {
            crate::engine::prefetch(&self.flows[g.idx()].tx);
        }
        host.wake_pending = true;
        self.events.push(ready, Event::HostWake(h).into());
    }

    pub(super) fn receive(&mut self, h: HostId, i: u32) {
        let now = self.now;
        let packet = *self.slots.pkt(i);
        if !packet.kind.is_forward() {
            self.slots.release(i);
        }
        let f = packet.flow;
        let flow = &mut self.flows[f.idx()];
        match packet.kind {
            PacketKind::Data | PacketKind::Header => {
                debug_assert_eq!(packet.dst, h);
                self.counters.data_delivered += 1;
                let cnp_gap = (self.cc == CcKind::Dcqcn).then_some(self.cnp_interval);
                let r = flow.on_data(&packet, now, cnp_gap);
                if !r.fresh {
                    self.counters.discarded += 1;
                }
                if r.just_done {
                    self.completed += 1;
                }
                // The reply keeps the data's flow, transmission, entropy, ECN mark and send time.
                if let Some((kind, seq)) = r.reply {
                    let mut ack = packet;
                    ack.kind = kind;
                    ack.seq = seq;
                    ack.src = h;
                    ack.dst = packet.src;
                    ack.wire_bytes = self.ack_bytes as u16;
                    ack.payload = 0;
                    ack.done = flow.finish.is_some();
                    ack.cnp = r.cnp;
                    self.counters.acks_sent += 1;
                    *self.slots.pkt_mut(i) = ack;
                    self.enqueue(PortId(h.0), i);
                } else {
                    self.slots.release(i);
                }
                if self.cc == CcKind::Eqds && !r.complete {
                    self.hosts[h.idx()].pulls.push_back((f, packet.entropy));
                    self.try_pull(h);
                }
                if r.just_done {
                    self.activate_all(f, true);
                }
            }
            PacketKind::Ack => {
                self.counters.acks_delivered += 1;
                self.host_lbs.on_ack(
                    f,
                    AckInfo {
                        entropy: packet.entropy,
                        ecn: packet.ecn,
                        sent_at: packet.sent_at,
                        now,
                    },
                );
                if flow.on_ack(&packet, now) {
                    self.activate_all(f, false);
                }
                self.wake_flow(f);
            }
            PacketKind::Nack => {
                self.counters.acks_delivered += 1;
                // To a host policy a NACK is a congested path: its queue overflowed.
                self.host_lbs.on_ack(
                    f,
                    AckInfo {
                        entropy: packet.entropy,
                        ecn: true,
                        sent_at: packet.sent_at,
                        now,
                    },
                );
                if flow.on_nack(&packet, now) {
                    self.activate_all(f, false);
                }
                self.wake_flow(f);
            }
            PacketKind::Pull => {
                self.counters.acks_delivered += 1;
                flow.on_credit(now);
                self.wake_flow(f);
            }
        }
    }
}
