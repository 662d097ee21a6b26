//! An egress port: a FIFO output queue (drop-tail on a byte buffer, ECN marking above a
//! threshold), a serializer, and the link it drives.
//!
//! A FIFO port that never pauses knows each packet's departure the moment it accepts it: the
//! serializer frees up at `busy_until`, so a packet accepted at `now` finishes at
//! max(now, busy_until) + serialization and reaches the far end one latency later. The port
//! therefore keeps one ring of accepted packets (queued, in service, or on the wire) and needs a
//! single pending event: the arrival of the ring's head. Occupancy is brought up to date lazily
//! (`sync`) before anything reads or changes it; the time-average is exact without it, since each
//! packet's stay is known when it is accepted.
//!
//! The packets themselves live in one shared [`Slots`] store, a cache line each, recycled
//! last-freed-first: the slot a packet leaves when it reaches a switch is the one it takes in the
//! next queue, so a hop writes a line that is already in cache, and the store's working set is the
//! packets in flight rather than every queue's high-water mark. A port keeps its packets as a ring
//! of 16-byte entries (departure, size, slot) in FIFO order, so retiring departures and finding
//! the next arrival read consecutive entries of one small array and never a packet.

use crate::ids::NodeId;
use crate::net::{Fault, Packet, PacketKind};
use crate::time::{BitsPerSec, SimTime};

/// No slot: the end of the free list.
const NIL: u32 = u32::MAX;

/// One stored packet; `next` links the free list.
#[derive(Clone, Copy, Debug)]
#[repr(C, align(64))]
struct Slot {
    pkt: Packet,
    next: u32,
    /// PFC: the port the packet reached its current switch by (its input port there).
    ingress: u32,
}

/// Every port's packets, plus a free list used as a stack.
#[derive(Debug)]
pub struct Slots {
    slots: Vec<Slot>,
    /// The most recently freed slot (NIL: none), whose `next` links the rest.
    free: u32,
    /// Free slots of stores absorbed whole (see [`Slots::absorb`]), on no free list.
    abandoned: usize,
}

impl Default for Slots {
    fn default() -> Slots {
        Slots {
            slots: Vec::new(),
            free: NIL,
            abandoned: 0,
        }
    }
}

impl Slots {
    pub fn new() -> Slots {
        Slots::default()
    }

    /// Stores a packet not yet on any port, in the most recently freed slot (still in cache);
    /// the caller hands the slot to `Port::accept` or back to `release`.
    #[inline]
    pub fn insert(&mut self, pkt: Packet) -> u32 {
        let i = self.free;
        if i == NIL {
            assert!(
                self.slots.len() < NIL as usize,
                "fewer than 2^32 - 1 packets in flight"
            );
            self.slots.push(Slot {
                pkt,
                next: NIL,
                ingress: NIL,
            });
            return self.slots.len() as u32 - 1;
        }
        // A reused slot keeps its stale `ingress`: PFC sets it before it is read.
        let s = &mut self.slots[i as usize];
        self.free = s.next;
        s.pkt = pkt;
        s.next = NIL;
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

    /// PFC: records that the packet in slot `i` entered its switch by port `ingress`.
    #[inline]
    pub fn set_ingress(&mut self, i: u32, ingress: u32) {
        self.slots[i as usize].ingress = ingress;
    }

    /// PFC: the port the packet in slot `i` entered its switch by.
    #[inline]
    pub fn ingress(&self, i: u32) -> u32 {
        self.slots[i as usize].ingress
    }

    /// Slots holding a packet (for conservation checks).
    pub fn in_use(&self) -> usize {
        let mut free = 0;
        let mut i = self.free;
        while i != NIL {
            free += 1;
            i = self.slots[i as usize].next;
        }
        self.slots.len() - free - self.abandoned
    }

    /// Appends store `other`, which holds `held` packets, and returns the offset its slots now
    /// start at (a partitioned run gathering its stores into one: one copy of the store instead
    /// of a random read and write per packet). `other`'s free slots are not reused.
    pub fn absorb(&mut self, mut other: Slots, held: usize) -> u32 {
        let base = self.slots.len();
        assert!(
            base + other.slots.len() < NIL as usize,
            "fewer than 2^32 - 1 slots"
        );
        debug_assert_eq!(other.in_use(), held, "every packet of the store is held");
        self.abandoned += other.slots.len() - held;
        self.slots.append(&mut other.slots);
        base as u32
    }

    /// Frees slot `i` (its packet was delivered, dropped or lost).
    #[inline]
    pub fn release(&mut self, i: u32) {
        self.slots[i as usize].next = self.free;
        self.free = i;
    }

    /// Asks for slot `i`'s line ahead of the packet's arrival, long after it was written.
    #[inline(always)]
    pub fn prefetch(&self, i: u32) {
        if let Some(s) = self.slots.get(i as usize) {
            crate::engine::prefetch(s);
        }
    }
}

/// One accepted packet as its port sees it.
#[derive(Clone, Copy, Debug, Default)]
pub struct Held {
    /// When its last bit leaves the port.
    pub tx_end: SimTime,
    /// Its slot in the store.
    pub slot: u32,
    pub bytes: u16,
    /// A data packet (anything else counts against the control bytes).
    pub data: bool,
}

/// A port's ring: a power-of-two number of entries (never zero), addressed by free-running
/// counters taken modulo its length: the accepted packets, oldest first, at positions
/// `head..tail`, on the wire or not yet sent before `dep`, not yet departed from `dep` on. The
/// length invariant, kept by the only constructor, makes every masked counter an index in
/// bounds, so the per-hop reads skip the bounds check (about five accesses per event: 2% of the
/// instructions, measured with cachegrind). The mask is kept rather than derived from the
/// length, which cost two instructions per access (2% more with the bounds check gone).
#[derive(Debug)]
#[repr(C)]
struct Ring {
    buf: Box<[Held]>,
    /// `buf.len() - 1`.
    mask: u32,
    head: u32,
    dep: u32,
    tail: u32,
}

impl Ring {
    fn with_len(len: usize) -> Ring {
        assert!(len.is_power_of_two(), "a ring's length is a power of two");
        assert!(len <= 1 << 31, "a ring's counters are 32-bit");
        Ring {
            buf: vec![Held::default(); len].into_boxed_slice(),
            mask: (len - 1) as u32,
            head: 0,
            dep: 0,
            tail: 0,
        }
    }

    #[inline(always)]
    fn len(&self) -> usize {
        self.buf.len()
    }

    /// Where counter `n` sits in the ring.
    #[inline(always)]
    fn pos(&self, n: u32) -> usize {
        (n & self.mask) as usize
    }

    #[inline(always)]
    fn at(&self, n: u32) -> &Held {
        let i = self.pos(n);
        debug_assert!(i < self.buf.len());
        // SAFETY: `mask` is the length minus one and the length a non-zero power of two
        // (`with_len`, the only place either is set), so `n & mask < len`.
        unsafe { self.buf.get_unchecked(i) }
    }

    #[inline(always)]
    fn at_mut(&mut self, n: u32) -> &mut Held {
        let i = self.pos(n);
        debug_assert!(i < self.buf.len());
        // SAFETY: as in `at`.
        unsafe { self.buf.get_unchecked_mut(i) }
    }
}

/// Laid out by hand, hottest fields first, so that forwarding a packet touches two cache lines of
/// the port (and the ring's): at large scale every hop lands on a port not in cache, and each
/// line is a miss.
#[derive(Debug)]
#[repr(C, align(64))]
pub struct Port {
    // Line 1: occupancy and the ring.
    /// When the serializer finishes everything accepted so far.
    pub busy_until: SimTime,
    /// Bytes held by the port (queued or in service), as of the last `sync`.
    pub queued_bytes: u64,
    /// When the entry at `dep` finishes serializing (MAX if none), so that `sync` reads nothing
    /// until then.
    dep_end: SimTime,
    /// The accepted packets and the counters into them.
    ring: Ring,
    /// Picoseconds per byte when the rate divides 8e12 exactly (the common case), for a cheap
    /// serialization time; otherwise 0 and the exact division is used.
    ps_per_byte: u32,
    /// PFC: the port is paused; waiting data has no departure (`UNSCHEDULED`) until resumed.
    pub paused: bool,
    /// A partitioned run ships this port's packets to another partition: its ring keeps the
    /// packets that reached the far end until the window ends, instead of an event each, and
    /// never schedules arrivals (see [`Port::note_empty`] and [`Port::pop_retired`]).
    pub ships: bool,
    // Line 2.
    /// Integral of held bytes over time, in byte-picoseconds, from time zero to the departure of
    /// every packet accepted so far: each packet adds its size times its stay (acceptance to
    /// departure, both known when it is accepted), so departures cost nothing.
    area: u128,
    /// Propagation delay of the link (plus the receiving switch's latency, if any).
    pub latency: SimTime,
    pub buffer_bytes: u64,
    pub ecn_threshold_bytes: u64,
    /// The largest occupancy reached.
    pub max_bytes: u64,
    pub peer: NodeId,
    /// Bytes of control packets held (queued or in service), as of the last `sync`.
    pub ctrl_bytes: u32,
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
    /// PFC: bytes of waiting data whose departure a pause left unknown, and since when the
    /// occupancy integral has counted them.
    paused_bytes: u64,
    paused_since: SimTime,
    /// `tail` when the port was last empty (see [`Port::accepted`]): 0 but on a shipping port,
    /// whose ring is never rewound.
    base: u32,
    /// PFC: the next entry whose departure the switch's input counters have not yet seen
    /// (see [`Port::take_departed`]).
    pfc_next: u32,
}

/// Counters of rare events.
#[derive(Debug, Default, Clone)]
pub struct PortStats {
    pub drops: u64,
    pub ecn_marks: u64,
    /// Packets lost on the link (down or flaky).
    pub link_losses: u64,
    /// PFC: how long the port has been paused in all, up to `paused_at` if it is paused now.
    pub pause_total: SimTime,
    /// PFC: when the current pause began.
    pub paused_at: SimTime,
    /// PFC: how many times it was paused.
    pub pauses: u64,
}

impl Port {
    /// PFC: the departure of data a pause holds back, far beyond any run (simulated time stays
    /// below 2^62 ps) and far enough below `u64::MAX` that adding a latency cannot overflow; an
    /// arrival event computed from it is stale and never reached.
    pub const UNSCHEDULED: SimTime = SimTime(u64::MAX >> 1);

    /// Packets this port has accepted since it was last empty (modulo 2^32): a per-port count
    /// that no other port's traffic moves.
    #[inline]
    pub fn accepted(&self) -> u64 {
        self.ring.tail.wrapping_sub(self.base) as u64
    }

    /// A shipping port, before it accepts a packet: `empty` says whether every packet it held
    /// has reached the far end by now, as the single world sees it, which would have emptied
    /// (and rewound) the ring; the count [`Port::accepted`] restarts there.
    #[inline]
    pub fn note_empty(&mut self, empty: bool) {
        if empty {
            self.base = self.ring.tail;
        }
    }

    /// Removes the head, which has departed and reached the far end, and returns its slot,
    /// leaving the ring where it is: a shipping port calls it directly, so that
    /// [`Port::accepted`] keeps counting from `base`; [`Port::pop_arrived`] rewinds after it.
    #[inline(always)]
    pub fn pop_retired(&mut self) -> u32 {
        debug_assert!(self.ring.head != self.ring.dep, "a packet that departed");
        let i = self.at(self.ring.head).slot;
        self.ring.head = self.ring.head.wrapping_add(1);
        i
    }

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
            dep_end: SimTime::MAX,
            ring: Ring::with_len(1),
            ps_per_byte: ps_per_byte(rate),
            pfc_next: 0,
            paused: false,
            ships: false,
            area: 0,
            latency,
            buffer_bytes,
            ecn_threshold_bytes: ecn,
            max_bytes: 0,
            peer,
            ctrl_bytes: 0,
            faulty: false,
            prio: false,
            rate,
            nominal_rate: rate,
            fault: Fault::Healthy,
            stats: PortStats::default(),
            paused_bytes: 0,
            paused_since: SimTime::ZERO,
            base: 0,
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

    #[inline(always)]
    fn at(&self, n: u32) -> &Held {
        self.ring.at(n)
    }

    #[inline(always)]
    fn at_mut(&mut self, n: u32) -> &mut Held {
        self.ring.at_mut(n)
    }

    /// Retires every packet whose serialization ended by `now`.
    #[inline]
    pub fn sync(&mut self, now: SimTime) {
        while self.dep_end <= now {
            let e = *self.at(self.ring.dep);
            self.queued_bytes -= e.bytes as u64;
            if !e.data {
                self.ctrl_bytes -= e.bytes as u32;
            }
            self.ring.dep = self.ring.dep.wrapping_add(1);
            self.dep_end = if self.ring.dep == self.ring.tail {
                SimTime::MAX
            } else {
                self.at(self.ring.dep).tx_end
            };
        }
    }

    /// Whether the serializer is idle at `now` (call after `sync`).
    #[inline]
    pub fn idle(&self, now: SimTime) -> bool {
        self.busy_until <= now
    }

    /// Packets held: on the wire, in service or queued.
    #[inline]
    pub fn len(&self) -> usize {
        self.ring.tail.wrapping_sub(self.ring.head) as usize
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.ring.head == self.ring.tail
    }

    /// Doubles the ring, keeping every entry at its counter modulo the new length.
    #[cold]
    fn grow(&mut self) {
        let mut ring = Ring::with_len((2 * self.ring.len()).max(8));
        let mut n = self.ring.head;
        while n != self.ring.tail {
            *ring.at_mut(n) = *self.at(n);
            n = n.wrapping_add(1);
        }
        (ring.head, ring.dep, ring.tail) = (self.ring.head, self.ring.dep, self.ring.tail);
        self.ring = ring;
    }

    /// The tests' shorthand for [`Port::accept`], reading size and class from the slot.
    #[cfg(test)]
    pub fn push(&mut self, now: SimTime, i: u32, slots: &Slots) -> bool {
        let p = slots.pkt(i);
        self.accept(now, i, p.wire_bytes, p.kind == PacketKind::Data)
    }

    /// Accepts the packet in slot `i`, `bytes` long and a data packet or not, at `now` (after
    /// `sync` and the admission check); returns true if the port held nothing, i.e. the caller
    /// must schedule the head's arrival. The caller passes size and class, which it read with
    /// the packet, so that a hop reads the slot once (in `forward`).
    #[inline(always)]
    pub fn accept(&mut self, now: SimTime, i: u32, bytes: u16, data: bool) -> bool {
        if self.len() == self.ring.len() {
            self.grow();
        }
        self.queued_bytes += bytes as u64;
        self.max_bytes = self.max_bytes.max(self.queued_bytes);
        if !data {
            self.ctrl_bytes += bytes as u32;
            if self.prio && self.ring.dep != self.ring.tail {
                return self.insert_ahead(now, i, bytes);
            }
        }
        let start = self.busy_until.max(now);
        let tx_end = start + self.serialization(bytes);
        self.busy_until = tx_end;
        self.area += bytes as u128 * (tx_end.0 - now.0) as u128;
        let was_empty = self.is_empty();
        if self.ring.dep == self.ring.tail {
            self.dep_end = tx_end;
        }
        let tail = self.ring.tail;
        *self.at_mut(tail) = Held {
            tx_end,
            slot: i,
            bytes,
            data,
        };
        self.ring.tail = tail.wrapping_add(1);
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
    /// started when its predecessor did (or when it came), both no later than now. The ring has
    /// room for one more. Returns whether the packet became the head (only on a paused port).
    fn insert_ahead(&mut self, now: SimTime, i: u32, bytes: u16) -> bool {
        if self.paused {
            return self.insert_paused(now, i, bytes);
        }
        let ser = self.serialization(bytes);
        let mut at = self.ring.dep.wrapping_add(1);
        while at != self.ring.tail && !self.at(at).data {
            at = at.wrapping_add(1);
        }
        let tx_end = self.at(at.wrapping_sub(1)).tx_end + ser;
        let mut n = self.ring.tail;
        while n != at {
            let prev = *self.at(n.wrapping_sub(1));
            self.area += prev.bytes as u128 * ser.0 as u128;
            *self.at_mut(n) = Held {
                tx_end: prev.tx_end + ser,
                ..prev
            };
            n = n.wrapping_sub(1);
        }
        *self.at_mut(at) = Held {
            tx_end,
            slot: i,
            bytes,
            data: false,
        };
        self.ring.tail = self.ring.tail.wrapping_add(1);
        self.busy_until = self.busy_until + ser;
        self.area += bytes as u128 * (tx_end.0 - now.0) as u128;
        false
    }

    /// The first waiting entry without a departure (a paused port's waiting data), or `tail`.
    fn first_unscheduled(&self) -> u32 {
        let mut at = self.ring.dep;
        while at != self.ring.tail && self.at(at).tx_end != Port::UNSCHEDULED {
            at = at.wrapping_add(1);
        }
        at
    }

    /// Counts the paused data's bytes in the occupancy integral up to `now`.
    fn count_paused(&mut self, now: SimTime) {
        self.area += self.paused_bytes as u128 * (now.0 - self.paused_since.0) as u128;
        self.paused_since = now;
    }

    /// A paused port takes a control packet: it goes out after what is in service and the
    /// control packets waiting (the entries with departures), ahead of the paused data, which
    /// moves back one place and keeps no departure. Returns whether it became the head (nothing
    /// was on the wire), so that the caller schedules its arrival.
    #[cold]
    #[inline(never)]
    fn insert_paused(&mut self, now: SimTime, i: u32, bytes: u16) -> bool {
        let at = self.first_unscheduled();
        let tx_end = self.busy_until.max(now) + self.serialization(bytes);
        let mut n = self.ring.tail;
        while n != at {
            let prev = *self.at(n.wrapping_sub(1));
            *self.at_mut(n) = prev;
            n = n.wrapping_sub(1);
        }
        *self.at_mut(at) = Held {
            tx_end,
            slot: i,
            bytes,
            data: false,
        };
        self.ring.tail = self.ring.tail.wrapping_add(1);
        self.busy_until = tx_end;
        self.area += bytes as u128 * (tx_end.0 - now.0) as u128;
        if at == self.ring.dep {
            self.dep_end = tx_end;
        }
        at == self.ring.head
    }

    /// A paused port accepts a data packet (after `sync` and the admission check): it waits,
    /// without a departure, until the port resumes. (Control packets go through `push`.)
    pub fn push_paused(&mut self, now: SimTime, i: u32, slots: &Slots) {
        let p = slots.pkt(i);
        let (bytes, data) = (p.wire_bytes, p.kind == PacketKind::Data);
        debug_assert!(self.paused && self.prio && data, "data on a paused port");
        if self.len() == self.ring.len() {
            self.grow();
        }
        self.queued_bytes += bytes as u64;
        self.max_bytes = self.max_bytes.max(self.queued_bytes);
        self.count_paused(now);
        self.paused_bytes += bytes as u64;
        let tail = self.ring.tail;
        *self.at_mut(tail) = Held {
            tx_end: Port::UNSCHEDULED,
            slot: i,
            bytes,
            data,
        };
        self.ring.tail = tail.wrapping_add(1);
    }

    /// PFC: the peer paused this port at `now` (call after `sync`). The packet in service
    /// finishes and control packets keep their departures; the waiting data loses its
    /// departures (its stays are counted up to now, then as paused bytes) until `resume`.
    pub fn pause(&mut self, now: SimTime) {
        debug_assert!(!self.paused && self.prio);
        self.paused = true;
        self.stats.pauses += 1;
        self.stats.paused_at = now;
        self.paused_since = now;
        if self.ring.dep == self.ring.tail {
            return;
        }
        // On a priority port the entry at `dep` is in service, then come the waiting control
        // packets, then the waiting data.
        let mut n = self.ring.dep.wrapping_add(1);
        while n != self.ring.tail && !self.at(n).data {
            n = n.wrapping_add(1);
        }
        if n == self.ring.tail {
            return;
        }
        self.busy_until = self.at(n.wrapping_sub(1)).tx_end;
        while n != self.ring.tail {
            let e = *self.at(n);
            self.area -= e.bytes as u128 * (e.tx_end.0 - now.0) as u128;
            self.paused_bytes += e.bytes as u64;
            self.at_mut(n).tx_end = Port::UNSCHEDULED;
            n = n.wrapping_add(1);
        }
    }

    /// PFC: the peer let this port go at `now` (call after `sync`): the paused data departs
    /// back to back after what is scheduled. Returns whether the head got a departure (nothing
    /// was on the wire), so that the caller schedules its arrival.
    pub fn resume(&mut self, now: SimTime) -> bool {
        debug_assert!(self.paused);
        self.paused = false;
        self.stats.pause_total = self.stats.pause_total + (now - self.stats.paused_at);
        self.count_paused(now);
        self.paused_bytes = 0;
        let first = self.first_unscheduled();
        if first == self.ring.tail {
            return false;
        }
        let mut t = self.busy_until.max(now);
        let mut n = first;
        while n != self.ring.tail {
            let b = self.at(n).bytes;
            t = t + self.serialization(b);
            self.at_mut(n).tx_end = t;
            self.area += b as u128 * (t.0 - now.0) as u128;
            n = n.wrapping_add(1);
        }
        self.busy_until = t;
        if first == self.ring.dep {
            self.dep_end = self.at(first).tx_end;
        }
        first == self.ring.head
    }

    /// PFC: how long the port has been paused up to `end` (the current pause counted to it).
    pub fn paused_for(&self, end: SimTime) -> SimTime {
        let mut t = self.stats.pause_total;
        if self.paused {
            t = t + (end - self.stats.paused_at);
        }
        t
    }

    /// When the next packet finishes serializing (MAX: none; `UNSCHEDULED`: paused data);
    /// call after `sync`.
    #[inline]
    pub fn next_departure(&self) -> SimTime {
        self.dep_end
    }

    /// PFC: the next packet that has finished serializing (as of the last `sync`) and that
    /// the switch's input counters have not yet seen, oldest first. Call before the head
    /// arrives, so that its slot still holds it.
    #[inline]
    pub fn take_departed(&mut self) -> Option<Held> {
        if self.pfc_next == self.ring.dep {
            return None;
        }
        let e = *self.at(self.pfc_next);
        self.pfc_next = self.pfc_next.wrapping_add(1);
        Some(e)
    }

    /// Swaps the arriving packet (slot `*i`) into the newest waiting packet's place (if that is
    /// data of the same size, not in service), which keeps its departure, and points `*i` at the
    /// packet it displaced; returns whether it did (NDP trims the arriving packet or the last
    /// one queued alternately, so that no flow's packets are trimmed in phase).
    pub fn swap_tail(&mut self, i: &mut u32, bytes: u16) -> bool {
        if self.ring.dep == self.ring.tail || self.ring.dep.wrapping_add(1) == self.ring.tail {
            return false;
        }
        let last = self.ring.tail.wrapping_sub(1);
        let e = self.at_mut(last);
        if !e.data || e.bytes != bytes {
            return false;
        }
        std::mem::swap(&mut e.slot, i);
        true
    }

    /// The `k`-th oldest packet held (0: the head, the next to arrive at the far end).
    #[inline]
    pub fn nth(&self, k: usize) -> Option<Held> {
        (k < self.len()).then(|| *self.at(self.ring.head.wrapping_add(k as u32)))
    }

    /// Asks for the head's ring entry, which the next arrival reads (finding it loads the port's
    /// first line, the arrival's other read).
    #[inline(always)]
    pub fn prefetch_head(&self) {
        crate::engine::prefetch(self.at(self.ring.head));
    }

    /// Arrival time of the head at the far end.
    #[inline]
    pub fn head_arrival(&self) -> Option<SimTime> {
        self.nth(0).map(|e| e.tx_end + self.latency)
    }

    /// Removes the head, which has reached the far end at `now`, and returns its slot (still
    /// holding the packet, which moves on in it).
    #[inline(always)]
    pub fn pop_arrived(&mut self, now: SimTime) -> u32 {
        self.sync(now);
        let i = self.pop_retired();
        if self.ring.head == self.ring.tail {
            // Restart at the ring's first entry, so that a port that is often empty touches
            // only the first lines of its ring however large it grew once.
            self.ring.head = 0;
            self.ring.dep = 0;
            self.ring.tail = 0;
            self.pfc_next = 0;
        }
        i
    }

    /// Its packets' store was appended to another at offset `base` (see [`Slots::absorb`]):
    /// the ring follows, reading no packet.
    pub fn rebase(&mut self, base: u32) {
        let mut n = self.ring.head;
        while n != self.ring.tail {
            self.at_mut(n).slot += base;
            n = n.wrapping_add(1);
        }
    }

    /// The packets held, oldest first (on the wire, then in service, then queued).
    pub fn packets(&self) -> impl Iterator<Item = Held> + '_ {
        (0..self.len()).map_while(|k| self.nth(k))
    }

    /// The occupancy integral from time zero to `end` (no earlier than any acceptance), without
    /// changing the port: what is accepted counts to its departure, so the stays of packets
    /// still held at `end` are cut there.
    pub fn area_until(&self, end: SimTime) -> u128 {
        let mut area = self.area;
        if self.paused_bytes > 0 {
            area += self.paused_bytes as u128 * (end.0 - self.paused_since.0) as u128;
        }
        let mut n = self.ring.tail;
        while n != self.ring.dep {
            n = n.wrapping_sub(1);
            let e = self.at(n);
            if e.tx_end == Port::UNSCHEDULED {
                continue; // paused data: counted above, up to `end`
            }
            if e.tx_end <= end {
                break;
            }
            area -= e.bytes as u128 * (e.tx_end.0 - end.0) as u128;
        }
        area
    }

    /// [`Port::area_until`]`(end)` and the bytes held at `end` (accepted by then, serialization
    /// ending after it), in one walk, without changing the port (telemetry reads ports this way:
    /// a `sync` it added could not change what a later `sync` finds, but reading needs none).
    pub fn occupancy_at(&self, end: SimTime) -> (u128, u64) {
        let (mut area, mut held) = (self.area, 0);
        if self.paused_bytes > 0 {
            area += self.paused_bytes as u128 * (end.0 - self.paused_since.0) as u128;
            held += self.paused_bytes;
        }
        let mut n = self.ring.tail;
        while n != self.ring.dep {
            n = n.wrapping_sub(1);
            let e = self.at(n);
            if e.tx_end == Port::UNSCHEDULED {
                continue; // paused data: counted above, up to `end`
            }
            if e.tx_end <= end {
                break;
            }
            area -= e.bytes as u128 * (e.tx_end.0 - end.0) as u128;
            held += e.bytes as u64;
        }
        (area, held)
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
        // The ring's buffer, mask and counters sit in the first line with the occupancy.
        assert!(std::mem::offset_of!(Port, ring) + std::mem::size_of::<Ring>() <= 64);
        assert_eq!(std::mem::offset_of!(Port, area), 64);
        assert_eq!(std::mem::size_of::<Slot>(), 64);
        assert_eq!(std::mem::size_of::<Held>(), 16);
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
        assert!(p.push(SimTime::ZERO, st.insert(pkt(0)), &st));
        assert!(!p.push(SimTime::ZERO, st.insert(pkt(1)), &st));
        assert_eq!(p.head_arrival(), Some(SimTime(80_000 + 500_000)));
        assert_eq!(p.queued_bytes, 2000);
        p.sync(SimTime(80_000));
        assert_eq!(p.queued_bytes, 1000);
        let first = p.pop_arrived(SimTime(580_000));
        assert_eq!(st.pkt(first).seq, 0);
        assert_eq!(p.head_arrival(), Some(SimTime(160_000 + 500_000)));
        // A late packet starts when it arrives, not when the last one ended.
        p.sync(SimTime(1_000_000));
        assert!(p.idle(SimTime(1_000_000)));
        p.push(SimTime(1_000_000), st.insert(pkt(2)), &st);
        assert_eq!(p.busy_until, SimTime(1_080_000));
    }

    /// A port whose ring counters sit `n` entries before wrapping around, idle at time zero.
    fn port_near_wrap(n: u32) -> Port {
        let mut p = port();
        p.ring = Ring::with_len(8);
        p.ring.head = 0u32.wrapping_sub(n);
        p.ring.dep = p.ring.head;
        p.ring.tail = p.ring.head;
        p
    }

    #[test]
    fn control_packets_overtake_waiting_data_on_a_priority_port() {
        for wrap in [0, 2, 6] {
            control_overtakes_data(port_near_wrap(wrap));
        }
    }

    fn control_overtakes_data(mut p: Port) {
        let mut st = Slots::new();
        p.prio = true;
        for s in 0..3 {
            p.push(SimTime::ZERO, st.insert(pkt(s)), &st);
        }
        // Data 0 is in service until 80 ns; a 100-byte ACK (8 ns) goes next, then a second
        // one behind it, and data 1 and 2 move back by 16 ns.
        let mut ack = pkt(9);
        ack.kind = PacketKind::Ack;
        ack.wire_bytes = 100;
        assert!(!p.push(SimTime(10_000), st.insert(ack), &st));
        ack.seq = 10;
        p.push(SimTime(20_000), st.insert(ack), &st);
        let order: Vec<(u32, u64)> = p
            .packets()
            .map(|x| (st.pkt(x.slot).seq, x.tx_end.0))
            .collect();
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
        assert!(q.push(SimTime::ZERO, st.insert(ack), &st));
    }

    #[test]
    fn a_paused_port_holds_data_lets_control_pass_and_resumes_back_to_back() {
        for wrap in [0, 1, 5] {
            pause_and_resume(port_near_wrap(wrap));
        }
    }

    fn pause_and_resume(mut p: Port) {
        let ns = |n: u64| SimTime(n * 1000);
        let mut st = Slots::new();
        p.prio = true;
        for s in 0..3 {
            p.push(SimTime::ZERO, st.insert(pkt(s)), &st);
        }
        // Paused at 40 ns: data 0 finishes at 80 ns; data 1 and 2 lose their departures.
        p.sync(ns(40));
        p.pause(ns(40));
        assert_eq!(p.busy_until, ns(80));
        // A 100-byte ACK at 50 ns goes out after data 0; data 3 at 60 ns waits.
        let mut ack = pkt(9);
        ack.kind = PacketKind::Ack;
        ack.wire_bytes = 100;
        assert!(!p.push(ns(50), st.insert(ack), &st));
        p.sync(ns(60));
        p.push_paused(ns(60), st.insert(pkt(3)), &st);
        let order = |p: &Port| -> Vec<(u32, u64)> {
            p.packets()
                .map(|x| (st.pkt(x.slot).seq, x.tx_end.0 / 1000))
                .collect()
        };
        let max = Port::UNSCHEDULED.0 / 1000;
        assert_eq!(
            order(&p),
            vec![(0, 80), (9, 88), (1, max), (2, max), (3, max)]
        );
        // Mid-pause the integral counts the waiting data up to the instant asked.
        let mid = (80 + 150 + 150 + 90) * 1000 * 1000 + 100 * 38 * 1000;
        assert_eq!(p.area_until(ns(150)), mid as u128);
        // Telemetry reads the same integral, and the three paused packets as held.
        assert_eq!(p.occupancy_at(ns(150)), (mid as u128, 3000));
        p.sync(ns(150));
        assert_eq!(p.next_departure(), Port::UNSCHEDULED);
        assert_eq!((p.queued_bytes, p.data_bytes()), (3000, 3000));
        // Resumed at 200 ns: data 1, 2, 3 back to back.
        p.sync(ns(200));
        assert!(
            !p.resume(ns(200)),
            "data 0 and the ACK are still on the wire"
        );
        assert_eq!(
            order(&p),
            vec![(0, 80), (9, 88), (1, 280), (2, 360), (3, 440)]
        );
        assert_eq!(p.busy_until, ns(440));
        assert_eq!(p.next_departure(), ns(280));
        assert_eq!(p.paused_for(ns(1000)), ns(160));
        let full = (80 + 280 + 360 + 380) * 1000 * 1000 + 100 * 38 * 1000;
        assert_eq!(p.area_until(ns(1000)), full as u128);
        // At 300 ns data 1 has left; 2 and 3 are held until 360 and 440 ns.
        let at_300 = full - (60 + 140) * 1000 * 1000;
        assert_eq!(p.occupancy_at(ns(300)), (at_300 as u128, 2000));
        // A port paused with nothing on the wire puts a control packet at its head.
        let mut q = port();
        q.prio = true;
        q.pause(SimTime::ZERO);
        q.push_paused(SimTime::ZERO, st.insert(pkt(0)), &st);
        assert!(
            q.push(ns(1), st.insert(ack), &st),
            "the ACK is the new head"
        );
        assert_eq!(q.head_arrival(), Some(ns(9) + q.latency));
        q.sync(ns(20));
        assert!(!q.resume(ns(20)));
        assert_eq!(q.nth(1).unwrap().tx_end, ns(100));
    }

    #[test]
    fn ring_grows_in_fifo_order_across_the_wrap() {
        let mut p = port_near_wrap(3);
        let mut st = Slots::new();
        for s in 0..20 {
            p.push(SimTime::ZERO, st.insert(pkt(s)), &st);
        }
        let held: Vec<(u32, u64)> = p
            .packets()
            .map(|x| (st.pkt(x.slot).seq, x.tx_end.0))
            .collect();
        let want: Vec<(u32, u64)> = (0..20).map(|s| (s, 80_000 * (s as u64 + 1))).collect();
        assert_eq!(held, want);
        assert_eq!(p.ring.len(), 32);
        p.sync(SimTime(800_000));
        assert_eq!(p.queued_bytes, 10_000);
    }

    #[test]
    fn swap_tail_keeps_the_departure_and_never_touches_the_packet_in_service() {
        let mut p = port();
        let mut st = Slots::new();
        p.push(SimTime::ZERO, st.insert(pkt(0)), &st);
        let mut arriving = st.insert(pkt(7));
        assert!(
            !p.swap_tail(&mut arriving, 1000),
            "the only packet is in service"
        );
        p.push(SimTime::ZERO, st.insert(pkt(1)), &st);
        assert!(!p.swap_tail(&mut arriving, 64), "a different size");
        assert!(p.swap_tail(&mut arriving, 1000));
        assert_eq!(st.pkt(arriving).seq, 1);
        let tail = p.packets().nth(1).unwrap();
        assert_eq!((st.pkt(tail.slot).seq, tail.tx_end), (7, SimTime(160_000)));
    }

    #[test]
    fn time_average_integrates_exactly() {
        let mut p = port();
        let mut st = Slots::new();
        p.push(SimTime::ZERO, st.insert(pkt(0)), &st);
        p.push(SimTime::ZERO, st.insert(pkt(1)), &st);
        // 2000 B for 80 ns, then 1000 B for 80 ns, then empty.
        let want = 2000u128 * 80_000 + 1000 * 80_000;
        assert_eq!(p.area_until(SimTime(1_000_000)), want);
        p.sync(SimTime(1_000_000));
        assert_eq!(p.area_until(SimTime(1_000_000)), want);
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
            p.sync(t);
            while p.head_arrival().is_some_and(|a| a <= t) {
                let (s, end) = model[k].pop_front().unwrap();
                let arrived = p.pop_arrived(t);
                assert_eq!(st.pkt(arrived).seq, s);
                st.release(arrived);
                assert!(SimTime(end) + p.latency <= t);
            }
            if !(x >> 40).is_multiple_of(4) && p.queued_bytes + 1000 <= p.buffer_bytes {
                let was_empty = model[k].is_empty();
                assert_eq!(p.push(t, st.insert(pkt(seq)), &st), was_empty);
                model[k].push_back((seq, p.busy_until.0));
                seq += 1;
            }
            let held: Vec<(u32, u64)> = p
                .packets()
                .map(|s| (st.pkt(s.slot).seq, s.tx_end.0))
                .collect();
            assert_eq!(held, model[k].iter().copied().collect::<Vec<_>>());
            most = most.max(model.iter().map(|m| m.len()).sum());
        }
        // The store grows only when every slot holds a packet.
        assert!(most > 20);
        assert_eq!(st.slots.len(), most);
    }
}
