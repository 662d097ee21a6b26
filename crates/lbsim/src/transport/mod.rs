//! Transport: per-flow sender and receiver state.
//!
//! The idealized stack of the study: congestion control is a constant rate (`rate_coef` x line
//! rate, shared round-robin by the host's active flows, see `crate::sim`), and loss recovery is
//! zero-overhead rateless erasure coding: the sender keeps sending new packets until an ACK says
//! the receiver holds as many bytes as the message, so a lost packet costs only its slot. Every
//! data packet is ACKed; ACKs echo the ECN mark and the entropy for the adaptive schemes.

use crate::ids::FlowId;
use crate::lb::HostLb;
use crate::time::SimTime;
use crate::workload::FlowSpec;

/// A flow's sender and receiver state.
#[derive(Clone, Debug)]
pub struct Flow {
    pub spec: FlowSpec,
    pub lb: HostLb,
    /// Payload bytes put on the wire so far (originals and repair packets).
    pub sent_bytes: u64,
    pub data_packets_sent: u64,
    pub next_seq: u32,
    /// Receiver: payload bytes received.
    pub recv_bytes: u64,
    pub data_packets_received: u64,
    /// Receiver: when the receiver came to hold the whole message.
    pub finish: Option<SimTime>,
    /// Sender: an ACK confirmed completion, stop sending.
    pub sender_done: bool,
    pub packets_dropped: u64,
    /// When the flow actually started (a gated flow starts when its trigger fires).
    pub started: Option<SimTime>,
    /// Sender: when the last ACK (or the start) was seen.
    pub last_ack: SimTime,
    /// Sender: how many no-ACK timeouts fired.
    pub timeouts: u64,
    /// Sender: with a per-flow rate (failure-aware idealized CC), the earliest next send.
    pub next_send: SimTime,
}

impl Flow {
    pub fn new(spec: FlowSpec, lb: HostLb) -> Flow {
        Flow {
            spec,
            lb,
            sent_bytes: 0,
            data_packets_sent: 0,
            next_seq: 0,
            recv_bytes: 0,
            data_packets_received: 0,
            finish: None,
            sender_done: false,
            packets_dropped: 0,
            started: None,
            last_ack: SimTime::ZERO,
            timeouts: 0,
            next_send: SimTime::ZERO,
        }
    }

    /// Payload of the next data packet: the message in `mss` chunks, then full-size repair packets.
    #[inline]
    pub fn next_payload(&self, mss: u32) -> u32 {
        let left = self.spec.size_bytes.saturating_sub(self.sent_bytes);
        if left == 0 {
            mss
        } else {
            left.min(mss as u64) as u32
        }
    }

    /// Number of data packets the message needs without loss.
    pub fn packets_needed(size: u64, mss: u32) -> u64 {
        size.div_ceil(mss as u64)
    }
}

/// Hash of a packet's 5-tuple. The flow id stands for the ports; the direction bit makes an ACK's
/// tuple differ from its data's, as reversed addresses do.
#[inline]
pub fn flow_key(flow: FlowId, is_ack: bool) -> u64 {
    crate::rng::mix64(((flow.0 as u64) << 1) | is_ack as u64)
}
