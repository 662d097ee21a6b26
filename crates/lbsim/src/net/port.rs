//! An egress port: a FIFO output queue (drop-tail on a byte buffer, ECN marking above a
//! threshold), a serializer, and the link it drives.
//!
//! A FIFO port that never pauses knows each packet's departure the moment it accepts it: the
//! serializer frees up at `busy_until`, so a packet accepted at `now` finishes at
//! max(now, busy_until) + serialization and reaches the far end one latency later. The port
//! therefore keeps one list of accepted packets (queued, in service, or on the wire) and needs a
//! single pending event: the arrival of the list's head. Occupancy is brought up to date lazily
//! (`sync`) before anything reads or changes it, which keeps the time-average exact.
//!
//! The packets themselves live in one shared [`Slots`] store, a cache line each, linked per port
//! and recycled last-freed-first: the slot a packet leaves when it reaches a switch is the one it
//! takes in the next queue, so a hop writes a line that is already in cache, and the store's
//! working set is the packets in flight rather than every queue's high-water mark.

use crate::failure::Fault;
use crate::ids::NodeId;
use crate::net::{Packet, PacketKind};
use crate::time::{BitsPerSec, SimTime};

/// No slot: the end of a list.
const NIL: u32 = u32::MAX;

/// One accepted packet.
#[derive(Clone, Copy, Debug)]
#[repr(C, align(64))]
pub struct Slot {
    pub pkt: Packet,
    /// When its last bit leaves the port.
    pub tx_end: SimTime,
    /// The next packet on the same port, or the next free slot.
    next: u32,
}

/// Every port's packets: slots linked into per-port FIFO lists, plus a free list used as a stack.
#[derive(Debug)]
pub struct Slots {
    slots: Vec<Slot>,
    /// The most recently freed slot (NIL: none), whose `next` links the rest.
    free: u32,
}

impl Default for Slots {
    fn default() -> Slots {
        Slots {
            slots: Vec::new(),
            free: NIL,
        }
    }
}

impl Slots {
    pub fn new() -> Slots {
        Slots::default()
    }

    /// Stores a packet not yet on any port, in the most recently freed slot (still in cache);
    /// the caller hands the slot to `Port::push` or back to `release`.
    #[inline]
    pub fn insert(&mut self, pkt: Packet) -> u32 {
        let slot = Slot {
            pkt,
            tx_end: SimTime::ZERO,
            next: NIL,
        };
        let i = self.free;
        if i == NIL {
            assert!(
                self.slots.len() < NIL as usize,
                "fewer than 2^32 - 1 packets in flight"
            );
            self.slots.push(slot);
            return self.slots.len() as u32 - 1;
        }
        let s = &mut self.slots[i as usize];
        self.free = s.next;
        *s = slot;
        i
    }

    /// The packet in slot `i`.
    #[inline]
    pub fn pkt(&self, i: u32) -> &Packet {
        &self.slots[i as usize].pkt
    }

    #[inline]
    pub fn pkt_mut(&mut self, i: u32) -> &mut Packet {
        &mut self.slots[i as usize].pkt
    }

    /// Slots holding a packet (for conservation checks).
    pub fn in_use(&self) -> usize {
        let mut free = 0;
        let mut i = self.free;
        while i != NIL {
            free += 1;
            i = self.slots[i as usize].next;
        }
        self.slots.len() - free
    }

    /// Frees slot `i` (its packet was delivered, dropped or lost).
    #[inline]
    pub fn release(&mut self, i: u32) {
        self.slots[i as usize].next = self.free;
        self.free = i;
    }

    /// Asks for slot `i`'s line: a queued packet is read when its predecessor departs, long
    /// after it was written, so the hint is given one departure earlier.
    #[inline(always)]
    fn prefetch(&self, i: u32) {
        if let Some(s) = self.slots.get(i as usize) {
            crate::engine::prefetch(s);
        }
    }

    #[inline]
    fn get(&self, i: u32) -> &Slot {
        &self.slots[i as usize]
    }

    #[inline]
    fn get_mut(&mut self, i: u32) -> &mut Slot {
        &mut self.slots[i as usize]
    }
}

/// Laid out by hand, hottest fields first, so that forwarding a packet touches two cache lines of
/// the port: at large scale every hop lands on a port not in cache, and each line is a miss.
#[derive(Debug)]
#[repr(C, align(64))]
pub struct Port {
    // Line 1: the list and the occupancy integral's clock.
    /// When the serializer finishes everything accepted so far.
    pub busy_until: SimTime,
    /// Bytes held by the port (queued or in service), as of the last `sync`.
    pub queued_bytes: u64,
    last_change: SimTime,
    /// When `dep` finishes serializing (MAX if none), so that `sync` reads no slot until then.
    dep_end: SimTime,
    /// The oldest accepted packet (on the wire, or not yet sent), the first not yet departed,
    /// and the newest; NIL when none.
    head: u32,
    dep: u32,
    tail: u32,
    /// Picoseconds per byte when the rate divides 8e12 exactly (the common case), for a cheap
    /// serialization time; otherwise 0 and the exact division is used.
    ps_per_byte: u32,
    /// Bytes of control packets held (queued or in service), as of the last `sync`.
    pub ctrl_bytes: u32,
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
            busy_until: SimTime::ZERO,
            queued_bytes: 0,
            last_change: SimTime::ZERO,
            dep_end: SimTime::MAX,
            head: NIL,
            dep: NIL,
            tail: NIL,
            ps_per_byte: ps_per_byte(rate),
            ctrl_bytes: 0,
            area: 0,
            latency,
            buffer_bytes,
            ecn_threshold_bytes: ecn,
            max_bytes: 0,
            peer,
            faulty: false,
            prio: false,
            rate,
            nominal_rate: rate,
            fault: Fault::Healthy,
            stats: PortStats::default(),
        }
    }

    pub fn set_fault(&mut self, fault: Fault) {
        self.faulty = !matches!(fault, Fault::Healthy);
        self.fault = fault;
    }

    /// Changes the serialization rate for packets accepted from now on (packets already accepted
    /// keep the departure times they were given).
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
    pub fn sync(&mut self, now: SimTime, slots: &Slots) {
        while self.dep_end <= now {
            let s = slots.get(self.dep);
            let (t, b, data) = (s.tx_end, s.pkt.wire_bytes, s.pkt.kind == PacketKind::Data);
            self.account(t);
            self.queued_bytes -= b as u64;
            if !data {
                self.ctrl_bytes -= b as u32;
            }
            self.dep = s.next;
            self.dep_end = if self.dep == NIL {
                SimTime::MAX
            } else {
                let d = slots.get(self.dep);
                slots.prefetch(d.next);
                d.tx_end
            };
        }
    }

    /// Whether the serializer is idle at `now` (call after `sync`).
    #[inline]
    pub fn idle(&self, now: SimTime) -> bool {
        self.busy_until <= now
    }

    /// Accepts the packet in slot `i` at `now` (after `sync` and the admission check); returns
    /// true if the list was empty, i.e. the caller must schedule the head's arrival.
    #[inline]
    pub fn push(&mut self, now: SimTime, i: u32, slots: &mut Slots) -> bool {
        let (bytes, kind) = {
            let p = slots.pkt(i);
            (p.wire_bytes, p.kind)
        };
        self.account(now);
        self.queued_bytes += bytes as u64;
        self.max_bytes = self.max_bytes.max(self.queued_bytes);
        if kind != PacketKind::Data {
            self.ctrl_bytes += bytes as u32;
            if self.prio && self.dep != NIL {
                self.insert_ahead(i, slots);
                return false;
            }
        }
        let start = self.busy_until.max(now);
        let tx_end = start + self.serialization(bytes);
        self.busy_until = tx_end;
        let s = slots.get_mut(i);
        s.tx_end = tx_end;
        s.next = NIL;
        let was_empty = self.head == NIL;
        if was_empty {
            self.head = i;
        } else {
            slots.get_mut(self.tail).next = i;
        }
        self.tail = i;
        if self.dep == NIL {
            self.dep = i;
            self.dep_end = tx_end;
        }
        was_empty
    }

    /// Bytes of data packets held (what trimming and a priority port's drop-tail limit count).
    #[inline]
    pub fn data_bytes(&self) -> u64 {
        self.queued_bytes - self.ctrl_bytes as u64
    }

    /// Puts a control packet behind the packet in service and the control packets already
    /// waiting, ahead of every waiting data packet, whose departures all move back by its
    /// serialization. The packet in service is `dep`: everything before it has left and it
    /// started when its predecessor did (or when it came), both no later than now.
    fn insert_ahead(&mut self, n: u32, slots: &mut Slots) {
        let ser = self.serialization(slots.pkt(n).wire_bytes);
        let mut prev = self.dep;
        let mut i = slots.get(prev).next;
        while i != NIL && slots.get(i).pkt.kind != PacketKind::Data {
            prev = i;
            i = slots.get(i).next;
        }
        let tx_end = slots.get(prev).tx_end + ser;
        let mut j = i;
        while j != NIL {
            let s = slots.get_mut(j);
            s.tx_end = s.tx_end + ser;
            j = s.next;
        }
        self.busy_until = self.busy_until + ser;
        let s = slots.get_mut(n);
        s.tx_end = tx_end;
        s.next = i;
        slots.get_mut(prev).next = n;
        if i == NIL {
            self.tail = n;
        }
    }

    /// Swaps the packet in slot `i` with the newest waiting packet (if it is data of the same
    /// size, not in service), which keeps its departure; returns whether it did (NDP trims the
    /// arriving packet or the last one queued alternately, so that no flow's packets are
    /// trimmed in phase).
    pub fn swap_tail(&mut self, i: u32, slots: &mut Slots) -> bool {
        if self.dep == NIL || self.dep == self.tail {
            return false;
        }
        let (arriving, tail) = (*slots.pkt(i), *slots.pkt(self.tail));
        if tail.kind != PacketKind::Data || tail.wire_bytes != arriving.wire_bytes {
            return false;
        }
        *slots.pkt_mut(self.tail) = arriving;
        *slots.pkt_mut(i) = tail;
        true
    }

    /// Arrival time of the list's head at the far end.
    #[inline]
    pub fn head_arrival(&self, slots: &Slots) -> Option<SimTime> {
        self.head(slots).map(|s| s.tx_end + self.latency)
    }

    /// The oldest packet held (the next to arrive at the far end).
    #[inline]
    pub fn head<'a>(&self, slots: &'a Slots) -> Option<&'a Slot> {
        (self.head != NIL).then(|| slots.get(self.head))
    }

    /// Removes the head, which has reached the far end at `now`, and returns its slot (still
    /// holding the packet, which moves on in it).
    #[inline]
    pub fn pop_arrived(&mut self, now: SimTime, slots: &mut Slots) -> u32 {
        self.sync(now, slots);
        let i = self.head;
        debug_assert!(i != NIL && i != self.dep, "a packet on the wire");
        self.head = slots.get(i).next;
        if self.head == NIL {
            self.tail = NIL;
        } else {
            // The new head is read now (its arrival is scheduled); the one after it arrives next.
            slots.prefetch(slots.get(self.head).next);
        }
        i
    }

    /// The packets held, oldest first (on the wire, then in service, then queued).
    pub fn packets<'a>(&self, slots: &'a Slots) -> impl Iterator<Item = &'a Slot> + 'a {
        let mut i = self.head;
        std::iter::from_fn(move || {
            (i != NIL).then(|| {
                let s = slots.get(i);
                i = s.next;
                s
            })
        })
    }

    #[inline]
    fn account(&mut self, now: SimTime) {
        let dt = now.0 - self.last_change.0;
        self.area += self.queued_bytes as u128 * dt as u128;
        self.last_change = now;
    }

    /// The occupancy integral closed at `end` (not before the last change), without changing the
    /// port.
    pub fn area_until(&self, end: SimTime, slots: &Slots) -> u128 {
        let mut area = self.area;
        let mut last = self.last_change;
        let mut bytes = self.queued_bytes;
        let mut i = self.dep;
        while i != NIL {
            let s = slots.get(i);
            if s.tx_end > end {
                break;
            }
            area += bytes as u128 * (s.tx_end.0 - last.0) as u128;
            last = s.tx_end;
            bytes -= s.pkt.wire_bytes as u64;
            i = s.next;
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
        assert_eq!(std::mem::size_of::<Slot>(), 64);
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
        let mut st = Slots::new();
        assert!(p.push(SimTime::ZERO, st.insert(pkt(0)), &mut st));
        assert!(!p.push(SimTime::ZERO, st.insert(pkt(1)), &mut st));
        assert_eq!(p.head_arrival(&st), Some(SimTime(80_000 + 500_000)));
        assert_eq!(p.queued_bytes, 2000);
        p.sync(SimTime(80_000), &st);
        assert_eq!(p.queued_bytes, 1000);
        let first = p.pop_arrived(SimTime(580_000), &mut st);
        assert_eq!(st.pkt(first).seq, 0);
        assert_eq!(p.head_arrival(&st), Some(SimTime(160_000 + 500_000)));
        // A late packet starts when it arrives, not when the last one ended.
        p.sync(SimTime(1_000_000), &st);
        assert!(p.idle(SimTime(1_000_000)));
        p.push(SimTime(1_000_000), st.insert(pkt(2)), &mut st);
        assert_eq!(p.busy_until, SimTime(1_080_000));
    }

    #[test]
    fn control_packets_overtake_waiting_data_on_a_priority_port() {
        let mut p = port();
        let mut st = Slots::new();
        p.prio = true;
        for s in 0..3 {
            p.push(SimTime::ZERO, st.insert(pkt(s)), &mut st);
        }
        // Data 0 is in service until 80 ns; a 100-byte ACK (8 ns) goes next, then a second
        // one behind it, and data 1 and 2 move back by 16 ns.
        let mut ack = pkt(9);
        ack.kind = PacketKind::Ack;
        ack.wire_bytes = 100;
        assert!(!p.push(SimTime(10_000), st.insert(ack), &mut st));
        ack.seq = 10;
        p.push(SimTime(20_000), st.insert(ack), &mut st);
        let order: Vec<(u32, u64)> = p.packets(&st).map(|x| (x.pkt.seq, x.tx_end.0)).collect();
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
        p.sync(SimTime(96_000), &st);
        assert_eq!((p.queued_bytes, p.ctrl_bytes), (2000, 0));
        // An idle port just queues it.
        let mut q = port();
        q.prio = true;
        assert!(q.push(SimTime::ZERO, st.insert(ack), &mut st));
    }

    #[test]
    fn swap_tail_keeps_the_departure_and_never_touches_the_packet_in_service() {
        let mut p = port();
        let mut st = Slots::new();
        p.push(SimTime::ZERO, st.insert(pkt(0)), &mut st);
        let seven = st.insert(pkt(7));
        assert!(
            !p.swap_tail(seven, &mut st),
            "the only packet is in service"
        );
        p.push(SimTime::ZERO, st.insert(pkt(1)), &mut st);
        assert!(p.swap_tail(seven, &mut st));
        assert_eq!(st.pkt(seven).seq, 1);
        let tail = p.packets(&st).nth(1).unwrap();
        assert_eq!((tail.pkt.seq, tail.tx_end), (7, SimTime(160_000)));
    }

    #[test]
    fn time_average_integrates_exactly() {
        let mut p = port();
        let mut st = Slots::new();
        p.push(SimTime::ZERO, st.insert(pkt(0)), &mut st);
        p.push(SimTime::ZERO, st.insert(pkt(1)), &mut st);
        // 2000 B for 80 ns, then 1000 B for 80 ns, then empty.
        let want = 2000u128 * 80_000 + 1000 * 80_000;
        assert_eq!(p.area_until(SimTime(1_000_000), &st), want);
        p.sync(SimTime(1_000_000), &st);
        assert_eq!(p.area_until(SimTime(1_000_000), &st), want);
    }

    /// Ports sharing one store, driven through interleaved pushes, departures and arrivals, keep
    /// each packet's FIFO order and departure time, and the store recycles what arrived.
    #[test]
    fn ports_sharing_a_store_match_independent_fifos() {
        let mut st = Slots::new();
        let mut ports: Vec<Port> = (0..3).map(|_| port()).collect();
        let mut model: Vec<std::collections::VecDeque<(u32, u64)>> = vec![Default::default(); 3];
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut now = 0u64;
        let mut seq = 0;
        let mut most = 0;
        for _ in 0..5_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let k = (x % 3) as usize;
            now += (x >> 8) % 60_000;
            let t = SimTime(now);
            let p = &mut ports[k];
            p.sync(t, &st);
            while p.head_arrival(&st).is_some_and(|a| a <= t) {
                let (s, end) = model[k].pop_front().unwrap();
                let arrived = p.pop_arrived(t, &mut st);
                assert_eq!(st.pkt(arrived).seq, s);
                st.release(arrived);
                assert!(SimTime(end) + p.latency <= t);
            }
            if !(x >> 40).is_multiple_of(4) && p.queued_bytes + 1000 <= p.buffer_bytes {
                let was_empty = model[k].is_empty();
                assert_eq!(p.push(t, st.insert(pkt(seq)), &mut st), was_empty);
                model[k].push_back((seq, p.busy_until.0));
                seq += 1;
            }
            let held: Vec<(u32, u64)> = p.packets(&st).map(|s| (s.pkt.seq, s.tx_end.0)).collect();
            assert_eq!(held, model[k].iter().copied().collect::<Vec<_>>());
            most = most.max(model.iter().map(|m| m.len()).sum());
        }
        // The store grows only when every slot holds a packet.
        assert!(most > 20);
        assert_eq!(st.slots.len(), most);
    }
}
