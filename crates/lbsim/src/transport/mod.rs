//! Transport: per-flow sender and receiver state, with congestion control (`cc`) and loss
//! recovery (`reliable`) as independent policies.
//!
//! The study's idealized stack is the default and the fast path: congestion control is a
//! constant rate (`rate_coef` x line rate, shared round-robin by the host's active flows, see
//! `crate::sim`), and loss recovery is zero-overhead rateless erasure coding: the sender keeps
//! sending new packets until an ACK says the receiver holds as many bytes as the message, so a
//! lost packet costs only its slot. Such a flow carries no scoreboard at all. Every data packet is
//! ACKed; ACKs echo the ECN mark, the entropy and the send time for the adaptive schemes.

pub mod cc;
pub mod reliable;

use serde::{Deserialize, Serialize};

use crate::ids::FlowId;
use crate::lb::HostLb;
use crate::time::SimTime;
use crate::workload::FlowSpec;
use cc::Cc;
use reliable::{Receiver, Sender};

/// `transport.loss_recovery`
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LossRecoveryKind {
    /// Zero-overhead rateless erasure coding: send new packets until the receiver holds the message.
    IdealErasure,
    /// A real erasure code: the message plus k repair packets, decoded from any n of them; a
    /// timeout sends more when the sender has run out.
    Erasure,
    /// Selective ACKs, loss declared after `reorder_threshold` later transmissions were ACKed.
    Sack,
    /// RoCE: in-order receiver, NACK of the first gap, the sender rewinds to it.
    GoBackN,
    /// NDP: full queues trim payloads, the receiver NACKs the header, the sender resends at once.
    Trim,
}

impl LossRecoveryKind {
    pub const ALL: [LossRecoveryKind; 5] = [
        LossRecoveryKind::IdealErasure,
        LossRecoveryKind::Erasure,
        LossRecoveryKind::Sack,
        LossRecoveryKind::GoBackN,
        LossRecoveryKind::Trim,
    ];

    pub fn name(self) -> &'static str {
        match self {
            LossRecoveryKind::IdealErasure => "ideal_erasure",
            LossRecoveryKind::Erasure => "erasure",
            LossRecoveryKind::Sack => "sack",
            LossRecoveryKind::GoBackN => "go_back_n",
            LossRecoveryKind::Trim => "trim",
        }
    }
}

/// A flow's sender and receiver state, laid out by hand: a packet's arrival at the receiver touches
/// only the first cache line, and the sender's send and ACK paths the next ones (at scale every
/// flow access is a cache miss, and a miss per line touched).
#[derive(Clone, Debug)]
#[repr(C, align(64))]
pub struct Flow {
    // Line 1: the receiver.
    /// Receiver: payload bytes handed to the application (each byte once).
    pub recv_bytes: u64,
    pub data_packets_received: u64,
    /// Receiver: when the receiver came to hold the whole message.
    pub finish: Option<SimTime>,
    /// Loss recovery's receiver state; None with ideal erasure.
    pub rx: Option<Box<Receiver>>,
    /// The message size (a copy of `spec.size_bytes` on the receiver's line).
    pub size: u64,
    /// Receiver (DCQCN): when it last sent a congestion notification.
    pub last_cnp: Option<SimTime>,
    // Lines 2-4: the sender.
    pub lb: HostLb,
    pub spec: FlowSpec,
    /// Payload bytes put on the wire so far (originals, repairs and retransmissions).
    pub sent_bytes: u64,
    /// Sender: with a per-flow rate (failure-aware idealized CC, DCQCN, Swift below one packet),
    /// the earliest next send.
    pub next_send: SimTime,
    /// Sender: when the last ACK, NACK or credit (or the start) was seen.
    pub last_ack: SimTime,
    pub data_packets_sent: u64,
    pub cc: Cc,
    /// Loss recovery's sender state; None on the idealized fast path (ideal erasure, constant CC).
    pub tx: Option<Box<Sender>>,
    pub next_seq: u32,
    /// Transmissions so far (the next data packet's `xmit`).
    pub next_xmit: u32,
    /// Sender: an ACK confirmed completion, stop sending.
    pub sender_done: bool,
    /// Sender: the flow is in its host's round-robin ring (it leaves it while it may not send).
    pub in_ring: bool,
    // Cold.
    pub packets_dropped: u64,
    /// When the flow actually started (a gated flow starts when its trigger fires).
    pub started: Option<SimTime>,
    /// Sender: how many no-ACK timeouts fired.
    pub timeouts: u64,
    /// Sender: data packets sent again (retransmissions; erasure repairs are not counted).
    pub retransmissions: u64,
}

impl Flow {
    pub fn new(spec: FlowSpec, lb: HostLb, cc: Cc) -> Flow {
        debug_assert_eq!(std::mem::offset_of!(Flow, lb), 64);
        Flow {
            size: spec.size_bytes,
            spec,
            lb,
            cc,
            tx: None,
            rx: None,
            sent_bytes: 0,
            data_packets_sent: 0,
            next_seq: 0,
            next_xmit: 0,
            recv_bytes: 0,
            data_packets_received: 0,
            finish: None,
            sender_done: false,
            packets_dropped: 0,
            started: None,
            last_ack: SimTime::ZERO,
            timeouts: 0,
            next_send: SimTime::ZERO,
            in_ring: false,
            last_cnp: None,
            retransmissions: 0,
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
