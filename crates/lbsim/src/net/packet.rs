//! Packets and the slab that owns them. Packets are addressed by `PacketId`; a freed slot is reused,
//! so a steady-state run allocates nothing per packet.

use crate::ids::{FlowId, HostId, PacketId};
use crate::time::SimTime;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PacketKind {
    Data,
    Ack,
}

#[derive(Clone, Copy, Debug)]
pub struct Packet {
    pub flow: FlowId,
    /// Where the packet comes from and goes to (for an ACK: the data's receiver and sender).
    pub src: HostId,
    pub dst: HostId,
    /// Bytes on the wire (payload + headers).
    pub wire_bytes: u32,
    /// Application bytes carried (0 for an ACK).
    pub payload: u32,
    /// Data: per-flow sequence number. ACK: the sequence number acknowledged.
    pub seq: u32,
    /// Path label chosen by the sender; an ACK echoes the label of the data it answers.
    pub entropy: u32,
    pub kind: PacketKind,
    /// Data: CE mark set by a switch. ACK: the echo of the data packet's mark.
    pub ecn: bool,
    /// ACK only: the receiver now holds the whole message.
    pub done: bool,
    /// When the data packet left its sender (ACKs keep the value for RTT samples).
    pub sent_at: SimTime,
}

/// A slab of packets with a free list.
#[derive(Debug, Default)]
pub struct PacketSlab {
    slots: Vec<Packet>,
    free: Vec<u32>,
    live: usize,
}

impl PacketSlab {
    pub fn alloc(&mut self, p: Packet) -> PacketId {
        self.live += 1;
        if let Some(i) = self.free.pop() {
            self.slots[i as usize] = p;
            PacketId(i)
        } else {
            self.slots.push(p);
            PacketId(self.slots.len() as u32 - 1)
        }
    }

    pub fn free(&mut self, id: PacketId) {
        self.live -= 1;
        self.free.push(id.0);
    }

    #[inline]
    pub fn get(&self, id: PacketId) -> &Packet {
        &self.slots[id.idx()]
    }

    #[inline]
    pub fn get_mut(&mut self, id: PacketId) -> &mut Packet {
        &mut self.slots[id.idx()]
    }

    /// Packets currently allocated (in queues or on wires).
    pub fn live(&self) -> usize {
        self.live
    }

    /// The most packets ever allocated at once.
    pub fn capacity_used(&self) -> usize {
        self.slots.len()
    }
}
