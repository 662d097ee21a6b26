//! Packets. A packet is a small Copy value that moves by value through the ports' rings: each ring
//! is contiguous and read in order, so a hop touches memory the hardware prefetches, where a
//! global slab addressed by id cost a cache miss per hop (profiled: a quarter of the run time).

use crate::ids::{FlowId, HostId};
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
