//! Transport: per-flow sender and receiver state, with congestion control (`cc`) and loss
//! recovery (`reliable`) as independent policies.
//!
//! The study's idealized stack is the default and the fast path: congestion control is a
//! constant rate (`rate_coef` x line rate, shared round-robin by the host's active flows, see
//! `crate::sim`), and loss recovery is zero-overhead rateless erasure coding: a lost packet
//! costs only its slot. The sender sends new packets until the packets sent, less those it takes
//! as lost (the holes below its highest ACK), cover the message; then it waits for the ACK that
//! says the receiver holds the message, sending one more packet only when no ACK comes within
//! the fabric's base round trip (its ACK shows any lost tail as holes). Such a flow keeps two
//! counters and no scoreboard. Every data packet is
//! ACKed; ACKs echo the ECN mark, the entropy and the send time for the adaptive schemes.

pub mod cc;
pub mod config;
pub mod endpoint;
pub mod reliable;

use serde::{Deserialize, Serialize};

use crate::ids::HostId;
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
    /// Selective ACKs, loss declared once a transmission sent `reorder_threshold` later is ACKed.
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
/// only the first cache line, and the sender's send and ACK paths only the second (at scale every
/// flow access is a cache miss, and a miss per line touched). The host policy's per-flow state
/// lives apart (`crate::lb::HostLbs`), and congestion control is only read when loss recovery is
/// (the idealized stack needs neither).
#[derive(Debug)]
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
    // Line 2: the sender.
    /// Loss recovery's sender state; None on the idealized fast path (ideal erasure, constant CC).
    pub tx: Option<Box<Sender>>,
    /// Message bytes not yet sent once (the fast path's next payload; repairs follow at zero).
    pub unsent: u64,
    /// Sender: with a per-flow rate (failure-aware idealized CC, DCQCN, Swift below one packet),
    /// the earliest next send.
    pub next_send: SimTime,
    /// Sender: when the last ACK, NACK or credit (or the start) was seen.
    pub last_ack: SimTime,
    /// Data packets put on the wire; its low 32 bits are the next packet's `xmit`.
    pub data_packets_sent: u64,
    /// Copies of `spec.src` and `spec.dst` on the sender's line.
    pub src: HostId,
    pub dst: HostId,
    pub next_seq: u32,
    /// Sender: an ACK confirmed completion, stop sending.
    pub sender_done: bool,
    /// Sender: the flow is in its host's round-robin ring (it leaves it while it may not send).
    pub in_ring: bool,
    /// Fast path: one past the highest transmission an ACK has answered.
    pub xmit_hi: u32,
    /// Fast path: transmissions below `xmit_hi` not answered, taken as lost (as the study's
    /// sender takes the holes below its highest ACK). The sender stops once its packets less
    /// these cover the message.
    pub holes: u32,
    // Cold.
    /// Congestion control; `Constant` whenever `tx` is None.
    pub cc: Cc,
    pub spec: FlowSpec,
    pub packets_dropped: u64,
    /// When the flow actually started (a gated flow starts when its trigger fires).
    pub started: Option<SimTime>,
    /// Sender: how many no-ACK timeouts fired.
    pub timeouts: u64,
    /// Sender: data packets sent again (retransmissions; erasure repairs are not counted).
    pub retransmissions: u64,
    /// When the simulation's pending timer event for this flow is due ([`Flow::arm_timer`]).
    pub timer_at: SimTime,
    /// Fast path: when the sender last found its packets covered the message and stopped.
    pub covered_at: SimTime,
    /// EQDS receiver: credits still to pull for this flow. Set to what the message needs past
    /// the unsolicited window (the backlog its first packet announces), one more per trimmed
    /// header (the credit that packet spent bought nothing).
    pub pulls_left: u32,
    /// EQDS receiver: the flow is in its host's pull ring.
    pub pull_queued: bool,
    /// EQDS receiver: entropy the pulls carry (the latest packet's).
    pub pull_entropy: u32,
}

impl Flow {
    pub fn new(spec: FlowSpec, cc: Cc) -> Flow {
        Flow {
            size: spec.size_bytes,
            unsent: spec.size_bytes,
            src: spec.src,
            dst: spec.dst,
            spec,
            cc,
            tx: None,
            rx: None,
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
            in_ring: false,
            last_cnp: None,
            retransmissions: 0,
            timer_at: SimTime::ZERO,
            xmit_hi: 0,
            holes: 0,
            covered_at: SimTime::ZERO,
            pulls_left: 0,
            pull_queued: false,
            pull_entropy: 0,
        }
    }

    /// Gathers a flow whose sides ran in different partitions: `self` holds the sender's
    /// copy, `rx` the receiver's, `others` are every other copy. The sender's fields stay, the
    /// receiver's are taken from `rx`, and drops (counted where they happen) are summed. Every
    /// field is named, so a new one cannot be forgotten here.
    pub fn gather(&mut self, rx: Option<&mut Flow>, others_dropped: u64) {
        let Flow {
            recv_bytes,
            data_packets_received,
            finish,
            rx: receiver,
            size: _,
            last_cnp,
            tx: _,
            unsent: _,
            next_send: _,
            last_ack: _,
            data_packets_sent: _,
            src: _,
            dst: _,
            next_seq: _,
            sender_done: _,
            in_ring: _,
            xmit_hi: _,
            holes: _,
            cc: _,
            spec: _,
            packets_dropped,
            started: _,
            timeouts: _,
            retransmissions: _,
            timer_at: _,
            covered_at: _,
            pulls_left,
            pull_queued,
            pull_entropy,
        } = self;
        if let Some(r) = rx {
            *recv_bytes = r.recv_bytes;
            *data_packets_received = r.data_packets_received;
            *finish = r.finish;
            *receiver = r.rx.take();
            *last_cnp = r.last_cnp;
            *pulls_left = r.pulls_left;
            *pull_queued = r.pull_queued;
            *pull_entropy = r.pull_entropy;
        }
        *packets_dropped += others_dropped;
    }

    /// The next data packet's transmission number.
    #[inline]
    pub fn next_xmit(&self) -> u32 {
        self.data_packets_sent as u32
    }

    /// Payload of the next new data packet: the message in `mss` chunks, then full-size repair
    /// packets.
    #[inline]
    pub fn next_payload(&self, mss: u32) -> u32 {
        if self.unsent == 0 {
            mss
        } else {
            self.unsent.min(mss as u64) as u32
        }
    }

    /// Number of data packets the message needs without loss.
    pub fn packets_needed(size: u64, mss: u32) -> u64 {
        size.div_ceil(mss as u64)
    }

    /// Fast path: every message byte went out once and the packets sent less the ones taken as
    /// lost cover the message, so a new packet could only be a copy of one already on its way.
    #[inline]
    pub fn covered(&self, mss: u32) -> bool {
        self.unsent == 0
            && self.data_packets_sent
                >= Flow::packets_needed(self.size, mss).max(1) + self.holes as u64
    }

    /// Fast path: the completion timer fired; every transmission not answered is taken as lost.
    #[cold]
    pub fn give_up_outstanding(&mut self) {
        let sent = self.data_packets_sent as u32;
        self.holes = self.holes.saturating_add(sent.saturating_sub(self.xmit_hi));
        self.xmit_hi = self.xmit_hi.max(sent);
    }

    /// Fast path: when the completion timer of a sender whose packets cover its message is due,
    /// `after` the later of its last ACK and its stop.
    #[inline]
    pub fn completion_due(&self, after: SimTime) -> SimTime {
        self.last_ack.max(self.covered_at) + after
    }

    /// Fast path: an ACK answered transmission `xmit`. Unanswered transmissions it overtook
    /// become holes; an ACK that fills a hole (it was late, not lost) takes one back.
    #[inline]
    pub fn note_ack(&mut self, xmit: u32) {
        if xmit >= self.xmit_hi {
            self.holes = self.holes.saturating_add(xmit - self.xmit_hi);
            self.xmit_hi = xmit + 1;
        } else {
            self.holes = self.holes.saturating_sub(1);
        }
    }

    /// Starts the flow at `now` and puts it in its host's ring; false if it had started already
    /// (a trigger fired twice).
    #[inline]
    pub fn start(&mut self, now: SimTime) -> bool {
        if self.started.is_some() {
            return false;
        }
        self.started = Some(now);
        self.in_ring = true;
        self.last_ack = now;
        true
    }

    /// Puts a flow that left its host's ring back in it; false if it is there already, done, or
    /// not started.
    #[inline]
    pub fn rejoin_ring(&mut self) -> bool {
        if self.in_ring || self.sender_done || self.started.is_none() {
            return false;
        }
        self.in_ring = true;
        true
    }

    /// The flow may not send until an ACK, credit or timeout: it leaves its host's ring.
    #[inline]
    pub fn leave_ring(&mut self) {
        self.in_ring = false;
    }

    /// A flow whose per-flow rate was zero (waiting with no wake-up) may send again at `now`;
    /// true if it was waiting.
    pub fn resume_rate(&mut self, now: SimTime) -> bool {
        if self.next_send != SimTime::MAX {
            return false;
        }
        self.next_send = now;
        true
    }
}

/// Hash of a packet's addresses: with the entropy (the source port's part of the 5-tuple), what
/// a switch hashes. Taken from the endpoints, not the flow's place in the list, so a flow keeps
/// its hash wherever it is listed; flows between one pair differ by their entropies, drawn from
/// their identities. An ACK's reversed addresses give it another key; the direction bit keeps
/// them apart on a loop.
#[inline]
pub fn flow_key(src: HostId, dst: HostId, is_ack: bool) -> u64 {
    crate::rng::mix64(((((src.0 as u64) << 32) | dst.0 as u64) << 1) | is_ack as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{offset_of, size_of};

    /// The receiver's fields fill line 1 and the sender's fast path line 2.
    #[test]
    fn hot_fields_fill_one_line_per_side() {
        assert!(offset_of!(Flow, last_cnp) + size_of::<Option<SimTime>>() <= 64);
        assert_eq!(offset_of!(Flow, tx), 64);
        assert!(offset_of!(Flow, in_ring) < 128);
    }

    #[test]
    fn the_fast_path_sends_the_message_in_mss_chunks_then_repairs() {
        let spec = FlowSpec {
            src: HostId(0),
            dst: HostId(1),
            size_bytes: 10_000,
            start: SimTime::ZERO,
        };
        let mut f = Flow::new(spec, Cc::CONSTANT);
        let mut sizes = vec![];
        for _ in 0..4 {
            let p = f.next_payload(4096);
            f.unsent = f.unsent.saturating_sub(p as u64);
            sizes.push(p);
        }
        assert_eq!(sizes, vec![4096, 4096, 1808, 4096]);
        assert_eq!(size_of::<Flow>() % 64, 0);
    }
}
