//! Packets. A packet is a small Copy value held in a cache-line slot of the ports' shared store
//! (`port::Slots`) while it is queued or on a wire. Sizes are 16-bit (scenarios reject larger
//! frames) so the packet stays 40 bytes and a slot one line.

use crate::ids::{FlowId, HostId};
use crate::time::SimTime;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PacketKind {
    Data,
    /// A data packet whose payload a full queue trimmed away (NDP): only the headers go on.
    Header,
    Ack,
    /// Negative acknowledgement: of a trimmed header, or go-back-N's "expected this instead".
    Nack,
    /// EQDS credit: the receiver lets the sender put one more packet on the wire.
    Pull,
    /// A trimmed header that met a full control queue and was sent back to its sender (NDP's
    /// return-to-sender), which resends the packet as on a NACK. A control packet: one that
    /// meets a full queue again is dropped.
    Returned,
}

impl PacketKind {
    /// Carries data (or what is left of it) from sender to receiver.
    #[inline]
    pub fn is_forward(self) -> bool {
        matches!(self, PacketKind::Data | PacketKind::Header)
    }
}

#[derive(Clone, Copy, Debug)]
pub struct Packet {
    pub flow: FlowId,
    /// Where the packet comes from and goes to (for an ACK: the data's receiver and sender).
    pub src: HostId,
    pub dst: HostId,
    /// Data: the packet's sequence number in the message. ACK: the sequence number acknowledged
    /// (go-back-N: the next one expected, a cumulative ACK). NACK: the sequence number to resend.
    pub seq: u32,
    /// Per-flow transmission counter (a retransmission gets a new one); ACKs and NACKs echo it,
    /// which lets the sender tell transmissions apart and count reordering in send order.
    pub xmit: u32,
    /// Path label chosen by the sender; an ACK echoes the label of the data it answers.
    pub entropy: u32,
    /// When the data packet left its sender (ACKs keep the value for RTT samples).
    pub sent_at: SimTime,
    /// Bytes on the wire (payload + headers).
    pub wire_bytes: u16,
    /// Application bytes carried (0 for control packets and trimmed headers; a sack or trim
    /// ACK carries its SACK bitmap here instead, see `transport::reliable`).
    pub payload: u16,
    pub kind: PacketKind,
    /// Data: CE mark set by a switch. ACK: the echo of the data packet's mark.
    pub ecn: bool,
    /// ACK only: the receiver now holds the whole message.
    pub done: bool,
    /// ACK only (DCQCN): the receiver sends a congestion notification with this ACK.
    pub cnp: bool,
}

#[cfg(test)]
mod tests {
    #[test]
    fn packets_stay_forty_bytes() {
        assert_eq!(std::mem::size_of::<super::Packet>(), 40);
    }
}
