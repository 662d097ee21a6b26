//! An egress port: a FIFO output queue (drop-tail on a byte buffer, ECN marking above a
//! threshold), a serializer, and the link it drives.
//!
//! A FIFO port that never pauses knows each packet's departure the moment it accepts it: the
//! serializer frees up at `busy_until`, so a packet accepted at `now` finishes at
//! max(now, busy_until) + serialization and reaches the far end one latency later. The port
//! therefore keeps one ring of accepted packets (queued, in service, or on the wire) and needs a
//! single pending event: the arrival of the ring's head. Occupancy is brought up to date lazily
//! (`sync`) before anything reads or changes it, which keeps the time-average exact.

use std::collections::VecDeque;

use crate::failure::Fault;
use crate::ids::NodeId;
use crate::net::{Packet, PacketKind};
use crate::time::{BitsPerSec, SimTime};

/// One accepted packet.
#[derive(Clone, Copy, Debug)]
pub struct Slot {
    /// When its last bit leaves the port.
    pub tx_end: SimTime,
    pub pkt: Packet,
}

/// Laid out by hand, hottest fields first, so that forwarding a packet touches two cache lines of
/// the port: at large scale every hop lands on a port not in cache, and each line is a miss.
#[derive(Debug)]
#[repr(C, align(64))]
pub struct Port {
    // Line 1: the ring and the occupancy integral's clock.
    /// Accepted packets in FIFO order; `ring[..departed]` are on the wire, the rest queued or in
    /// service.
    pub ring: VecDeque<Slot>,
    /// When the serializer finishes everything accepted so far.
    pub busy_until: SimTime,
    /// Bytes held by the port (queued or in service), as of the last `sync`.
    pub queued_bytes: u64,
    last_change: SimTime,
    departed: u32,
    /// Picoseconds per byte when the rate divides 8e12 exactly (the common case), for a cheap
    /// serialization time; otherwise 0 and the exact division is used.
    ps_per_byte: u32,
    // Line 2.
    /// Integral of queued bytes over time, in byte-picoseconds, up to `last_change`.
    area: u128,
    /// Propagation delay of the link (plus the receiving switch's latency, if any).
    pub latency: SimTime,
    pub buffer_bytes: u64,
    pub ecn_threshold_bytes: u64,
    /// The largest occupancy reached.
    pub max_bytes: u64,
    pub peer: NodeId,
    /// `fault` is not `Healthy` (checked on every arrival without touching `fault`).
    pub faulty: bool,
    /// Control packets (headers, ACKs, NACKs, pulls) go ahead of queued data (trimming, EQDS).
    pub prio: bool,
    /// Bytes of control packets held (queued or in service), as of the last `sync`.
    pub ctrl_bytes: u32,
    // Cold.
    pub rate: BitsPerSec,
    /// The rate when healthy (a degraded link runs below it).
    pub nominal_rate: BitsPerSec,
    /// Whether packets reaching the far end are lost (failures).
    pub fault: Fault,
    pub stats: PortStats,
}

/// Counters of rare events.
#[derive(Debug, Default, Clone)]
pub struct PortStats {
    pub drops: u64,
    pub ecn_marks: u64,
    /// Packets lost on the link (down or flaky).
    pub link_losses: u64,
}

impl Port {
    pub fn new(
        rate: BitsPerSec,
        latency: SimTime,
        peer: NodeId,
        buffer_bytes: u64,
        ecn: u64,
    ) -> Port {
        Port {
            ring: VecDeque::new(),
            busy_until: SimTime::ZERO,
            queued_bytes: 0,
            last_change: SimTime::ZERO,
            departed: 0,
            ps_per_byte: ps_per_byte(rate),
            area: 0,
            latency,
            buffer_bytes,
            ecn_threshold_bytes: ecn,
            max_bytes: 0,
            peer,
            faulty: false,
            prio: false,
            ctrl_bytes: 0,
            rate,
            nominal_rate: rate,
            fault: Fault::Healthy,
            stats: PortStats::default(),
        }
    }

    /// Changes the serialization rate for packets accepted from now on (packets already accepted
    /// keep the departure times they were given).
    pub fn set_fault(&mut self, fault: Fault) {
        self.faulty = !matches!(fault, Fault::Healthy);
        self.fault = fault;
    }

    pub fn set_rate(&mut self, rate: BitsPerSec) {
        self.rate = rate;
        self.ps_per_byte = ps_per_byte(rate);
    }

    #[inline]
    pub fn serialization(&self, bytes: u16) -> SimTime {
        if self.ps_per_byte != 0 {
            SimTime(bytes as u64 * self.ps_per_byte as u64)
        } else {
            self.rate.serialization(bytes as u64)
        }
    }

    /// Retires every packet whose serialization ended by `now`, integrating occupancy at each
    /// departure.
    #[inline]
    pub fn sync(&mut self, now: SimTime) {
        while let Some(s) = self.ring.get(self.departed as usize) {
            if s.tx_end > now {
                break;
            }
            let (t, b, data) = (s.tx_end, s.pkt.wire_bytes, s.pkt.kind == PacketKind::Data);
            self.account(t);
            self.queued_bytes -= b as u64;
            if !data {
                self.ctrl_bytes -= b as u32;
            }
            self.departed += 1;
        }
    }

    /// Whether the serializer is idle at `now` (call after `sync`).
    #[inline]
    pub fn idle(&self, now: SimTime) -> bool {
        self.busy_until <= now
    }

    /// Accepts a packet at `now` (after `sync` and the admission check); returns true if the
    /// ring was empty, i.e. the caller must schedule the head's arrival.
    #[inline]
    pub fn push(&mut self, now: SimTime, pkt: Packet) -> bool {
        let bytes = pkt.wire_bytes;
        self.account(now);
        self.queued_bytes += bytes as u64;
        self.max_bytes = self.max_bytes.max(self.queued_bytes);
        if pkt.kind != PacketKind::Data {
            self.ctrl_bytes += bytes as u32;
            if self.prio && (self.departed as usize) < self.ring.len() {
                self.insert_ahead(pkt);
                return false;
            }
        }
        let start = self.busy_until.max(now);
        let tx_end = start + self.serialization(bytes);
        self.busy_until = tx_end;
        self.ring.push_back(Slot { tx_end, pkt });
        self.ring.len() == 1
    }

    /// Bytes of data packets held (what trimming and a priority port's drop-tail limit count).
    #[inline]
    pub fn data_bytes(&self) -> u64 {
        self.queued_bytes - self.ctrl_bytes as u64
    }

    /// Puts a control packet behind the packet in service and the control packets already
    /// waiting, ahead of every waiting data packet, whose departures all move back by its
    /// serialization. The packet in service is `ring[departed]`: everything before it has left
    /// and it started when its predecessor did (or when it came), both no later than now.
    fn insert_ahead(&mut self, pkt: Packet) {
        let ser = self.serialization(pkt.wire_bytes);
        let mut i = self.departed as usize + 1;
        while i < self.ring.len() && self.ring[i].pkt.kind != PacketKind::Data {
            i += 1;
        }
        let tx_end = self.ring[i - 1].tx_end + ser;
        for s in self.ring.range_mut(i..) {
            s.tx_end = s.tx_end + ser;
        }
        self.busy_until = self.busy_until + ser;
        self.ring.insert(i, Slot { tx_end, pkt });
    }

    /// Replaces the newest waiting packet (if it is data of `wire_bytes`, not in service) with
    /// `pkt`, keeping its departure, and returns it (NDP trims the arriving packet or the last
    /// one queued alternately, so that no flow's packets are trimmed in phase).
    pub fn swap_tail(&mut self, pkt: Packet) -> Option<Packet> {
        let n = self.ring.len();
        if n < self.departed as usize + 2 {
            return None;
        }
        let tail = &mut self.ring[n - 1];
        if tail.pkt.kind != PacketKind::Data || tail.pkt.wire_bytes != pkt.wire_bytes {
            return None;
        }
        Some(std::mem::replace(&mut tail.pkt, pkt))
    }

    /// Arrival time of the ring's head at the far end.
    #[inline]
    pub fn head_arrival(&self) -> Option<SimTime> {
        self.ring.front().map(|s| s.tx_end + self.latency)
    }

    /// Removes the head, which has reached the far end at `now`.
    #[inline]
    pub fn pop_arrived(&mut self, now: SimTime) -> Packet {
        self.sync(now);
        let s = self.ring.pop_front().expect("a packet on the wire");
        debug_assert!(self.departed > 0);
        self.departed -= 1;
        s.pkt
    }

    #[inline]
    fn account(&mut self, now: SimTime) {
        let dt = now.0 - self.last_change.0;
        self.area += self.queued_bytes as u128 * dt as u128;
        self.last_change = now;
    }

    /// The occupancy integral closed at `end` (not before the last change), without changing the
    /// port.
    pub fn area_until(&self, end: SimTime) -> u128 {
        let mut area = self.area;
        let mut last = self.last_change;
        let mut bytes = self.queued_bytes;
        for s in self.ring.iter().skip(self.departed as usize) {
            if s.tx_end > end {
                break;
            }
            area += bytes as u128 * (s.tx_end.0 - last.0) as u128;
            last = s.tx_end;
            bytes -= s.pkt.wire_bytes as u64;
        }
        area + bytes as u128 * end.0.saturating_sub(last.0) as u128
    }
}

fn ps_per_byte(rate: BitsPerSec) -> u32 {
    if 8_000_000_000_000u64.is_multiple_of(rate.0) {
        u32::try_from(8_000_000_000_000u64 / rate.0).unwrap_or(0)
    } else {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::{FlowId, HostId};

    fn pkt(seq: u32) -> Packet {
        Packet {
            flow: FlowId(0),
            src: HostId(0),
            dst: HostId(1),
            wire_bytes: 1000,
            payload: 900,
            seq,
            xmit: seq,
            entropy: 0,
            kind: PacketKind::Data,
            ecn: false,
            done: false,
            cnp: false,
            sent_at: SimTime::ZERO,
        }
    }

    #[test]
    fn hot_fields_fit_two_cache_lines() {
        assert_eq!(std::mem::offset_of!(Port, rate), 128);
    }

    fn port() -> Port {
        // 100 Gb/s: 80 ps per byte; 1000-byte packets take 80 ns.
        Port::new(
            BitsPerSec::from_gbps(100.0),
            SimTime::from_ns(500),
            NodeId::Host(HostId(0)),
            10_000,
            5_000,
        )
    }

    #[test]
    fn back_to_back_packets_depart_one_serialization_apart() {
        let mut p = port();
        assert!(p.push(SimTime::ZERO, pkt(0)));
        assert!(!p.push(SimTime::ZERO, pkt(1)));
        assert_eq!(p.head_arrival(), Some(SimTime(80_000 + 500_000)));
        assert_eq!(p.queued_bytes, 2000);
        p.sync(SimTime(80_000));
        assert_eq!(p.queued_bytes, 1000);
        assert_eq!(p.pop_arrived(SimTime(580_000)).seq, 0);
        assert_eq!(p.head_arrival(), Some(SimTime(160_000 + 500_000)));
        // A late packet starts when it arrives, not when the last one ended.
        p.sync(SimTime(1_000_000));
        assert!(p.idle(SimTime(1_000_000)));
        p.push(SimTime(1_000_000), pkt(2));
        assert_eq!(p.busy_until, SimTime(1_080_000));
    }

    #[test]
    fn control_packets_overtake_waiting_data_on_a_priority_port() {
        let mut p = port();
        p.prio = true;
        for s in 0..3 {
            p.push(SimTime::ZERO, pkt(s));
        }
        // Data 0 is in service until 80 ns; a 100-byte ACK (8 ns) goes next, then a second
        // one behind it, and data 1 and 2 move back by 16 ns.
        let mut ack = pkt(9);
        ack.kind = PacketKind::Ack;
        ack.wire_bytes = 100;
        assert!(!p.push(SimTime(10_000), ack));
        ack.seq = 10;
        p.push(SimTime(20_000), ack);
        let order: Vec<(u32, u64)> = p.ring.iter().map(|s| (s.pkt.seq, s.tx_end.0)).collect();
        assert_eq!(
            order,
            vec![
                (0, 80_000),
                (9, 88_000),
                (10, 96_000),
                (1, 176_000),
                (2, 256_000)
            ]
        );
        assert_eq!(p.busy_until, SimTime(256_000));
        assert_eq!((p.queued_bytes, p.data_bytes()), (3200, 3000));
        p.sync(SimTime(96_000));
        assert_eq!((p.queued_bytes, p.ctrl_bytes), (2000, 0));
        // An idle port just queues it.
        let mut q = port();
        q.prio = true;
        assert!(q.push(SimTime::ZERO, ack));
    }

    #[test]
    fn swap_tail_keeps_the_departure_and_never_touches_the_packet_in_service() {
        let mut p = port();
        p.push(SimTime::ZERO, pkt(0));
        assert!(
            p.swap_tail(pkt(7)).is_none(),
            "the only packet is in service"
        );
        p.push(SimTime::ZERO, pkt(1));
        assert_eq!(p.swap_tail(pkt(7)).map(|k| k.seq), Some(1));
        assert_eq!(p.ring[1].pkt.seq, 7);
        assert_eq!(p.ring[1].tx_end, SimTime(160_000));
    }

    #[test]
    fn time_average_integrates_exactly() {
        let mut p = port();
        p.push(SimTime::ZERO, pkt(0));
        p.push(SimTime::ZERO, pkt(1));
        // 2000 B for 80 ns, then 1000 B for 80 ns, then empty.
        let want = 2000u128 * 80_000 + 1000 * 80_000;
        assert_eq!(p.area_until(SimTime(1_000_000)), want);
        p.sync(SimTime(1_000_000));
        assert_eq!(p.area_until(SimTime(1_000_000)), want);
    }
}
