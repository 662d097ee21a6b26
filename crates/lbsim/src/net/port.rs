//! An egress port: an output queue (drop-tail in bytes, ECN marking above a threshold), a
//! serializer, and the link it drives. Only the packet in service has a pending event (its end of
//! transmission); the link keeps in-flight packets in a ring and only its head has a pending arrival,
//! so the event set grows with busy links, not with packets.

use std::collections::VecDeque;

use crate::ids::{NodeId, PacketId};
use crate::time::{BitsPerSec, SimTime};

#[derive(Debug)]
pub struct Port {
    pub rate: BitsPerSec,
    /// Picoseconds per byte when the rate divides 8e12 exactly (the common case), for a cheap
    /// serialization time; otherwise 0 and the exact division is used.
    ps_per_byte: u64,
    /// Propagation delay of the link (plus the receiving switch's latency, if any).
    pub latency: SimTime,
    pub peer: NodeId,
    pub buffer_bytes: u64,
    pub ecn_threshold_bytes: u64,
    /// Data (and, at switches, all) packets waiting, in FIFO order.
    pub queue: VecDeque<PacketId>,
    /// Control packets served before `queue` (used at host NICs for ACKs).
    pub prio: VecDeque<PacketId>,
    /// Bytes held by the port, including the packet in service.
    pub queued_bytes: u64,
    /// The packet being serialized, if any.
    pub current: Option<PacketId>,
    /// Packets on the wire: (arrival time at the peer, packet), in arrival order.
    pub wire: VecDeque<(SimTime, PacketId)>,
    pub stats: PortStats,
}

/// Occupancy statistics, kept incrementally: the time-average is an integral updated on change.
#[derive(Debug, Default, Clone)]
pub struct PortStats {
    pub max_bytes: u64,
    /// Integral of queued bytes over time, in byte-picoseconds, up to `last_change`.
    pub area: u128,
    pub last_change: SimTime,
    pub drops: u64,
    pub ecn_marks: u64,
    pub tx_packets: u64,
}

impl Port {
    pub fn new(
        rate: BitsPerSec,
        latency: SimTime,
        peer: NodeId,
        buffer_bytes: u64,
        ecn: u64,
    ) -> Port {
        let ps_per_byte = if 8_000_000_000_000u64.is_multiple_of(rate.0) {
            8_000_000_000_000u64 / rate.0
        } else {
            0
        };
        Port {
            rate,
            ps_per_byte,
            latency,
            peer,
            buffer_bytes,
            ecn_threshold_bytes: ecn,
            queue: VecDeque::new(),
            prio: VecDeque::new(),
            queued_bytes: 0,
            current: None,
            wire: VecDeque::new(),
            stats: PortStats::default(),
        }
    }

    #[inline]
    pub fn serialization(&self, bytes: u32) -> SimTime {
        if self.ps_per_byte != 0 {
            SimTime(bytes as u64 * self.ps_per_byte)
        } else {
            self.rate.serialization(bytes as u64)
        }
    }

    /// Records a change of occupancy at `now` (call before changing `queued_bytes`).
    #[inline]
    pub fn account(&mut self, now: SimTime) {
        let dt = now.0 - self.stats.last_change.0;
        self.stats.area += self.queued_bytes as u128 * dt as u128;
        self.stats.last_change = now;
    }

    /// The occupancy integral closed at `now`, without changing the port.
    pub fn area_until(&self, now: SimTime) -> u128 {
        let dt = now.0.saturating_sub(self.stats.last_change.0);
        self.stats.area + self.queued_bytes as u128 * dt as u128
    }
}
