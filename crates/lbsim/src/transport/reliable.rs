//! Loss recovery: the sender's scoreboard and the receiver's reassembly state.
//!
//! The sender numbers every transmission (`xmit`, echoed by ACKs and NACKs) and keeps the
//! unresolved ones in send order. An ACK resolves its transmission; a transmission is declared
//! lost when one sent `reorder_threshold` or more transmissions after it has been ACKed (a
//! duplicate-ACK threshold counted in send order, so retransmissions are judged like
//! originals; the ACKs in between need not have arrived), when a NACK names it, or when the
//! retransmission timer fires. Losses release their bytes from the window; whether the
//! data is sent again depends on the scheme:
//!
//! - `sack` and `trim` resend each lost sequence number once per loss, ahead of new data. Each
//!   data packet is ACKed on its own (NDP and UET do the same), and the ACK also reports which
//!   of the 16 sequence numbers below its own the receiver holds (the 16 bits the ACK's payload
//!   field leaves free), as SACK's blocks do: a lost ACK is made good by the next one instead of
//!   costing a retransmission the receiver would discard. A sequence number known this way
//!   resolves its transmission at once when it sits where the ACKed one implies (in send order,
//!   as far below it as its sequence number is), else when it reaches the scoreboard's front.
//! - `go_back_n` (RoCE) rewinds to the sequence number the receiver NACKed, or to the oldest
//!   unacknowledged one on a timeout.
//! - `erasure` never resends: any n of the n + k coded packets decode the message, and a timeout
//!   after the sender has run out of coded packets allows as many more as are still missing.
//! - `ideal_erasure` with a windowed CC only needs the losses to release the window; it sends
//!   the message's packets and one new packet per loss declared, then waits (the timer covers
//!   a lost tail).
//!
//! The timer is SRTT + 4 RTTVAR (RFC 6298) floored at `transport.rto_us`, doubling on
//! consecutive timeouts when `transport.rto_backoff` is on.
//!
//! With `transport.tail_loss_probe`, the timer first fires as RACK-TLP's probe timeout (RFC 8985
//! section 7): PTO = 2 x SRTT after the last ACK or the last new data sent, whichever is later
//! (no delayed-ACK allowance: lbsim's receivers ACK every packet at once), or the RTO if that is
//! sooner. The probe declares nothing lost and
//! tells no congestion control: it lets one packet past the window, new data if there is any,
//! else a copy of the highest outstanding sequence number (erasure: one more coded packet).
//! Whichever of the two copies is ACKed first resolves both. After a probe the RTO is armed from
//! the probe's time, and the next probe waits for an ACK (one probe per tail).

use std::collections::VecDeque;

use super::LossRecoveryKind;
use crate::time::{BitsPerSec, SimTime};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TxState {
    Out,
    Acked,
    Lost,
}

#[derive(Clone, Copy, Debug)]
struct Tx {
    seq: u32,
    payload: u32,
    state: TxState,
}

/// What one ACK, NACK or timeout did to the scoreboard.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    /// Payload bytes of sequence numbers acknowledged for the first time.
    pub newly_acked: u64,
    /// Transmissions declared lost, and their payload bytes.
    pub lost: u32,
    pub lost_bytes: u64,
}

/// A fixed-size bit set over a message's sequence numbers.
#[derive(Clone, Debug, Default)]
pub struct Bits(Vec<u64>);

impl Bits {
    pub fn new(n: u32) -> Bits {
        Bits(vec![0; (n as usize).div_ceil(64)])
    }
    #[inline]
    pub fn get(&self, i: u32) -> bool {
        self.0
            .get(i as usize / 64)
            .is_some_and(|w| w >> (i % 64) & 1 == 1)
    }
    /// Bit k says whether `seq - 1 - k` is set, for the 16 numbers below `seq`.
    pub fn below(&self, seq: u32) -> u16 {
        (0..16u32.min(seq)).fold(0, |m, k| m | (self.get(seq - 1 - k) as u16) << k)
    }
    /// Sets bit `i`; returns whether it was clear.
    #[inline]
    pub fn set(&mut self, i: u32) -> bool {
        let w = &mut self.0[i as usize / 64];
        let was = *w >> (i % 64) & 1 == 1;
        *w |= 1 << (i % 64);
        !was
    }
}

/// The sender's loss-recovery state.
#[derive(Clone, Debug)]
pub struct Sender {
    pub lr: LossRecoveryKind,
    /// Packets in the message (at least 1).
    pub packets: u32,
    /// Sequence numbers the sender may use: the message (plus k repairs with erasure).
    pub limit: u32,
    mss: u32,
    size: u64,
    /// Unresolved transmissions in send order; `out[0]` is transmission `base_xmit`.
    out: VecDeque<Tx>,
    base_xmit: u32,
    highest_acked: Option<u32>,
    /// 0: no reorder-based detection.
    reorder: u32,
    /// Payload bytes sent and neither ACKed nor declared lost.
    pub inflight: u64,
    /// Sequence numbers acknowledged (sack, trim, erasure).
    acked: Bits,
    pub acked_count: u32,
    /// Go-back-N: every sequence number below this is acknowledged.
    pub snd_una: u32,
    /// Lost sequence numbers waiting to be sent again, oldest first.
    rtx: VecDeque<u32>,
    /// One past the highest sequence number sent.
    pub seq_high: u32,
    srtt: Option<SimTime>,
    rttvar: SimTime,
    backoff: u32,
    rto_floor: SimTime,
    backoff_on: bool,
    /// EQDS: packets the sender may still put on the wire (one BDP unsolicited, then pulls).
    pub credit: u32,
    pub credit_based: bool,
    /// Tail-loss probe state; None when off.
    pub tlp: Option<Tlp>,
    /// What the flow's pacing gap was measured from (see [`Pace`]).
    pub pace: Pace,
}

/// The last data packet's departure, its bytes on the wire and the rate cap it left under: the
/// basis of the gap a paced flow waits, kept so that a CC that stops pacing before the gap ends
/// (Swift's window back at a packet) can release the packet it held.
#[derive(Clone, Copy, Debug, Default)]
pub struct Pace {
    pub sent: SimTime,
    pub wire: u32,
    pub cap: Option<BitsPerSec>,
}

/// RACK-TLP's tail-loss probe (RFC 8985 section 7) as one sender keeps it.
#[derive(Clone, Copy, Debug, Default)]
pub struct Tlp {
    /// A probe may be sent: an ACK came since the last one.
    armed: bool,
    /// When the last probe fired (the RTO then runs from here).
    fired_at: SimTime,
    /// When new data last left other than as a probe: the probe timer restarts there too.
    new_data_at: SimTime,
    /// The next packet may exceed the window: the probe.
    pub pass_window: bool,
    /// A copy of this sequence number, outstanding as this transmission, is queued as the probe.
    copy_of: Option<(u32, u32)>,
    /// (original, copy) transmissions of the probed sequence number: an ACK of either resolves
    /// both.
    pair: Option<(u32, u32)>,
}

/// What the sender sends next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Next {
    pub seq: u32,
    pub payload: u32,
    pub retransmission: bool,
}

impl Sender {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        lr: LossRecoveryKind,
        size: u64,
        mss: u32,
        extra: u32,
        reorder: u32,
        rto_floor: SimTime,
        backoff_on: bool,
        credit: Option<u32>,
    ) -> Sender {
        let packets = size.div_ceil(mss as u64).max(1).min(u32::MAX as u64 / 2) as u32;
        // Ideal erasure sends one new packet per loss declared (`lose`), not until the ACK of
        // completion returns: the packets sent less the losses cover the message.
        let limit = match lr {
            LossRecoveryKind::Erasure => packets.saturating_add(extra),
            _ => packets,
        };
        let reorder = match lr {
            LossRecoveryKind::GoBackN | LossRecoveryKind::Trim => 0,
            _ => reorder,
        };
        let tracks = matches!(
            lr,
            LossRecoveryKind::Sack | LossRecoveryKind::Trim | LossRecoveryKind::Erasure
        );
        Sender {
            lr,
            packets,
            limit,
            mss,
            size,
            out: VecDeque::new(),
            base_xmit: 0,
            highest_acked: None,
            reorder,
            inflight: 0,
            // One bit per usable sequence number (the message, plus repairs for erasure).
            acked: if tracks {
                Bits::new(limit)
            } else {
                Bits::default()
            },
            acked_count: 0,
            snd_una: 0,
            rtx: VecDeque::new(),
            seq_high: 0,
            srtt: None,
            rttvar: SimTime::ZERO,
            backoff: 0,
            rto_floor,
            backoff_on,
            credit: credit.unwrap_or(u32::MAX),
            credit_based: credit.is_some(),
            tlp: None,
            pace: Pace::default(),
        }
    }

    /// Turns the tail-loss probe on (`transport.tail_loss_probe`).
    pub fn with_tail_loss_probe(mut self, on: bool) -> Sender {
        self.tlp = on.then(|| Tlp {
            armed: true,
            ..Tlp::default()
        });
        self
    }

    /// When the timer is due, counted from `since` (the last ACK, or the next send while nothing
    /// is in flight), and whether it is the probe: while a probe is armed and data is
    /// outstanding, 2 SRTT after `since` or the last new data sent, whichever is later (RFC 8985
    /// 7.2), unless the RTO from `since` is sooner; else the RTO (from the last probe if one
    /// fired since).
    pub fn timer(&self, since: SimTime) -> (SimTime, bool) {
        let rto = self.rto();
        match (&self.tlp, self.srtt) {
            (Some(t), Some(srtt)) if t.armed && self.inflight > 0 => {
                let pto = since.max(t.new_data_at) + SimTime(srtt.0.saturating_mul(2));
                let rto = since + rto;
                (pto.min(rto), pto < rto)
            }
            (Some(t), _) => (since.max(t.fired_at) + rto, false),
            (None, _) => (since + rto, false),
        }
    }

    /// The probe timer fired at `now` with `next_seq` the next new sequence number: let one
    /// packet past the window, and if there is no new data, queue the probe's packet.
    pub fn on_probe(&mut self, now: SimTime, next_seq: u32) {
        let Some(t) = &mut self.tlp else {
            return;
        };
        t.armed = false;
        t.fired_at = now;
        t.pass_window = true;
        if self.peek(next_seq).is_some() {
            return;
        }
        match self.lr {
            LossRecoveryKind::Erasure => {
                self.limit = self.limit.saturating_add(1);
                if self.acked.0.len() * 64 < self.limit as usize {
                    self.acked.0.resize((self.limit as usize).div_ceil(64), 0);
                }
            }
            _ => {
                // The highest sequence number still outstanding.
                let last = self
                    .out
                    .iter()
                    .enumerate()
                    .rev()
                    .find(|(_, x)| x.state == TxState::Out && !self.acked.get(x.seq));
                if let Some((i, x)) = last {
                    let xmit = self.base_xmit.wrapping_add(i as u32);
                    let seq = x.seq;
                    if let Some(t) = &mut self.tlp {
                        t.copy_of = Some((seq, xmit));
                    }
                    self.rtx.push_back(seq);
                }
            }
        }
    }

    /// Payload of sequence number `seq`: the message in MSS chunks; erasure repairs are full.
    pub fn payload_of(&self, seq: u32) -> u32 {
        let off = seq as u64 * self.mss as u64;
        if off >= self.size {
            if self.lr == LossRecoveryKind::IdealErasure || self.lr == LossRecoveryKind::Erasure {
                self.mss
            } else {
                0
            }
        } else {
            (self.size - off).min(self.mss as u64) as u32
        }
    }

    fn is_acked(&self, seq: u32) -> bool {
        match self.lr {
            LossRecoveryKind::GoBackN => seq < self.snd_una,
            LossRecoveryKind::IdealErasure => false,
            _ => self.acked.get(seq),
        }
    }

    /// The next packet to send, if loss recovery has one (retransmissions first); `next_seq` is
    /// the flow's next new sequence number.
    pub fn peek(&mut self, next_seq: u32) -> Option<Next> {
        while let Some(&seq) = self.rtx.front() {
            if self.is_acked(seq) {
                self.rtx.pop_front();
                continue;
            }
            return Some(Next {
                seq,
                payload: self.payload_of(seq),
                retransmission: true,
            });
        }
        (next_seq < self.limit).then(|| Next {
            seq: next_seq,
            payload: self.payload_of(next_seq),
            retransmission: false,
        })
    }

    /// Records transmission `xmit` of `next` (which `peek` returned), sent at `now`.
    pub fn on_sent(&mut self, next: Next, xmit: u32, now: SimTime) {
        if next.retransmission {
            self.rtx.pop_front();
        }
        if self.out.is_empty() {
            self.base_xmit = xmit;
        }
        debug_assert_eq!(self.base_xmit + self.out.len() as u32, xmit);
        self.out.push_back(Tx {
            seq: next.seq,
            payload: next.payload,
            state: TxState::Out,
        });
        self.inflight += next.payload as u64;
        if self.credit_based {
            self.credit = self.credit.saturating_sub(1);
        }
        if let Some(t) = &mut self.tlp {
            if !next.retransmission && !t.pass_window {
                t.new_data_at = now;
            }
            t.pass_window = false;
            if let Some((seq, orig)) = t.copy_of {
                if next.retransmission && next.seq == seq {
                    t.copy_of = None;
                    t.pair = Some((orig, xmit));
                }
            }
        }
    }

    /// Transmission `xmit` arrived: no longer in flight.
    fn resolve(&mut self, xmit: u32) {
        if let Some(t) = self.tx_mut(xmit) {
            if t.state == TxState::Out {
                t.state = TxState::Acked;
                let p = t.payload as u64;
                self.inflight -= p;
            }
        }
    }

    fn tx_mut(&mut self, xmit: u32) -> Option<&mut Tx> {
        let i = xmit.wrapping_sub(self.base_xmit) as usize;
        self.out.get_mut(i)
    }

    /// Marks `seq` acknowledged; returns its payload if it was not already.
    fn ack_seq(&mut self, seq: u32) -> u64 {
        match self.lr {
            LossRecoveryKind::IdealErasure | LossRecoveryKind::GoBackN => 0,
            _ => {
                if seq < self.limit.min(self.acked.0.len() as u32 * 64) && self.acked.set(seq) {
                    self.acked_count += 1;
                    self.payload_of(seq) as u64
                } else {
                    0
                }
            }
        }
    }

    fn sample_rtt(&mut self, rtt: SimTime) {
        match self.srtt {
            None => {
                self.srtt = Some(rtt);
                self.rttvar = SimTime(rtt.0 / 2);
            }
            Some(s) => {
                let err = s.0.abs_diff(rtt.0);
                self.rttvar = SimTime((3 * self.rttvar.0 + err) / 4);
                self.srtt = Some(SimTime((7 * s.0 + rtt.0) / 8));
            }
        }
        self.backoff = 0;
    }

    /// The retransmission timeout now.
    pub fn rto(&self) -> SimTime {
        let base = match self.srtt {
            None => self.rto_floor,
            Some(s) => SimTime(s.0 + 4 * self.rttvar.0).max(self.rto_floor),
        };
        SimTime(base.0.saturating_mul(1 << self.backoff.min(10)))
    }

    /// An ACK of transmission `xmit` carrying `seq` (go-back-N: the next sequence number the
    /// receiver expects) and, for sack and trim, the receiver's bitmap of the 16 sequence numbers
    /// below it (see [`Bits::below`]), sent at `sent_at`.
    pub fn on_ack(
        &mut self,
        xmit: u32,
        seq: u32,
        sack: u16,
        now: SimTime,
        sent_at: SimTime,
    ) -> Outcome {
        let mut o = Outcome::default();
        self.sample_rtt(now - sent_at);
        self.resolve(xmit);
        if let Some(t) = &mut self.tlp {
            t.armed = true;
            if let Some((a, b)) = t.pair {
                let other = if xmit == a {
                    Some(b)
                } else if xmit == b {
                    Some(a)
                } else {
                    None
                };
                if let Some(other) = other {
                    t.pair = None;
                    self.resolve(other);
                }
            }
        }
        match self.lr {
            LossRecoveryKind::GoBackN => {
                if seq > self.snd_una {
                    let from = self.snd_una;
                    o.newly_acked = (from..seq).map(|s| self.payload_of(s) as u64).sum();
                    self.snd_una = seq;
                    self.retire_below(seq);
                }
            }
            LossRecoveryKind::IdealErasure => {
                o.newly_acked = self.payload_of(seq) as u64;
            }
            LossRecoveryKind::Sack | LossRecoveryKind::Trim => {
                o.newly_acked = self.ack_seq(seq);
                let mut bits = sack;
                while bits != 0 {
                    let k = bits.trailing_zeros();
                    bits &= bits - 1;
                    let Some(s) = seq.checked_sub(k + 1) else {
                        break;
                    };
                    let p = self.ack_seq(s);
                    if p > 0 {
                        o.newly_acked += p;
                        // Its transmission, if it left as far before this one as it is below.
                        let x = xmit.wrapping_sub(k + 1);
                        if self.tx_mut(x).is_some_and(|t| t.seq == s) {
                            self.resolve(x);
                        }
                    }
                }
            }
            _ => o.newly_acked = self.ack_seq(seq),
        }
        if self
            .highest_acked
            .is_none_or(|h| xmit.wrapping_sub(h) as i32 > 0)
        {
            self.highest_acked = Some(xmit);
        }
        self.detect(&mut o);
        o
    }

    /// Go-back-N: the receiver takes packets only in order, so a cumulative ACK of `una` says
    /// every earlier transmission arrived, whether or not its own ACK did. Since a rewind drops
    /// the scoreboard, the outstanding sequence numbers ascend and those below `una` lead it.
    fn retire_below(&mut self, una: u32) {
        for t in self.out.iter_mut() {
            if t.seq >= una {
                break;
            }
            if t.state == TxState::Out {
                t.state = TxState::Acked;
                self.inflight -= t.payload as u64;
            }
        }
    }

    /// Pops resolved transmissions off the front, declaring lost those that `reorder` later ones
    /// overtook.
    fn detect(&mut self, o: &mut Outcome) {
        while let Some(&t) = self.out.front() {
            if self.sacked(t) {
                self.inflight -= t.payload as u64;
                self.out.pop_front();
                self.base_xmit = self.base_xmit.wrapping_add(1);
                continue;
            }
            let lost = t.state == TxState::Out
                && self.reorder > 0
                && self
                    .highest_acked
                    .is_some_and(|h| h.wrapping_sub(self.base_xmit) as i32 >= self.reorder as i32);
            if t.state == TxState::Out && !lost {
                break;
            }
            if lost {
                self.lose(t, o);
            }
            self.out.pop_front();
            self.base_xmit = self.base_xmit.wrapping_add(1);
        }
    }

    /// An outstanding transmission whose sequence number an ACK's bitmap reported received.
    fn sacked(&self, t: Tx) -> bool {
        t.state == TxState::Out
            && matches!(self.lr, LossRecoveryKind::Sack | LossRecoveryKind::Trim)
            && self.acked.get(t.seq)
    }

    fn lose(&mut self, t: Tx, o: &mut Outcome) {
        self.inflight -= t.payload as u64;
        if self.lr == LossRecoveryKind::IdealErasure {
            self.limit = self.limit.saturating_add(1);
        }
        o.lost += 1;
        o.lost_bytes += t.payload as u64;
        if matches!(self.lr, LossRecoveryKind::Sack | LossRecoveryKind::Trim)
            && !self.acked.get(t.seq)
        {
            self.rtx.push_back(t.seq);
        }
    }

    /// A NACK of transmission `xmit`: trimming's "this one lost its payload", or go-back-N's
    /// "I expected `seq`". Returns the outcome and, for go-back-N, the sequence to rewind to.
    pub fn on_nack(&mut self, xmit: u32, seq: u32) -> (Outcome, Option<u32>) {
        let mut o = Outcome::default();
        if let Some(t) = &mut self.tlp {
            t.armed = true;
        }
        match self.lr {
            LossRecoveryKind::GoBackN => {
                if seq > self.snd_una {
                    o.newly_acked = (self.snd_una..seq).map(|s| self.payload_of(s) as u64).sum();
                    self.snd_una = seq;
                }
                // What lies below the NACKed sequence number arrived; everything from the gap on
                // is discarded by the receiver.
                self.retire_below(self.snd_una);
                self.drop_all(&mut o);
                (o, Some(seq))
            }
            _ => {
                if let Some(t) = self.tx_mut(xmit) {
                    if t.state == TxState::Out {
                        t.state = TxState::Lost;
                        let t = *t;
                        self.lose(t, &mut o);
                    }
                }
                self.detect(&mut o);
                (o, None)
            }
        }
    }

    fn drop_all(&mut self, o: &mut Outcome) {
        if let Some(t) = &mut self.tlp {
            t.pair = None;
            t.copy_of = None;
        }
        let out = std::mem::take(&mut self.out);
        for t in out {
            if self.sacked(t) {
                self.inflight -= t.payload as u64;
            } else if t.state == TxState::Out {
                self.lose(t, o);
            }
        }
        self.highest_acked = None;
    }

    /// The timer fired: every outstanding transmission is lost. Returns the outcome and, for
    /// go-back-N, the sequence number to rewind to.
    pub fn on_timeout(&mut self, next_seq: u32) -> (Outcome, Option<u32>) {
        let mut o = Outcome::default();
        self.drop_all(&mut o);
        if self.backoff_on {
            self.backoff += 1;
        }
        if self.credit_based {
            // Credit died with the lost packets; resend the oldest on the timer's authority.
            self.credit = self.credit.max(1);
        }
        match self.lr {
            LossRecoveryKind::GoBackN => (o, Some(self.snd_una)),
            LossRecoveryKind::Erasure if next_seq >= self.limit => {
                let missing = self.packets.saturating_sub(self.acked_count).max(1);
                self.limit = self.limit.saturating_add(missing);
                if self.acked.0.len() * 64 < self.limit as usize {
                    self.acked.0.resize((self.limit as usize).div_ceil(64), 0);
                }
                (o, None)
            }
            _ => (o, None),
        }
    }

    /// Whether the sender itself knows the receiver holds everything (all sequence numbers ACKed).
    pub fn all_acked(&self) -> bool {
        match self.lr {
            LossRecoveryKind::Sack | LossRecoveryKind::Trim => self.acked_count >= self.packets,
            LossRecoveryKind::GoBackN => self.snd_una >= self.packets,
            _ => false,
        }
    }
}

/// The receiver's reassembly state.
#[derive(Clone, Debug)]
pub enum Receiver {
    /// sack and trim: which sequence numbers arrived.
    Selective { got: Bits, count: u32, packets: u32 },
    /// go_back_n: the next sequence number accepted, and the one last NACKed.
    InOrder {
        expected: u32,
        nacked: Option<u32>,
        packets: u32,
    },
    /// erasure: distinct coded packets held.
    Coded { count: u32, packets: u32 },
}

/// What the receiver answers a data packet with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reply {
    /// ACK carrying this sequence number (go-back-N: the next one expected).
    Ack(u32),
    /// NACK: go-back-N's expected sequence number.
    Nack(u32),
    /// Nothing (a go-back-N duplicate or an out-of-order packet already NACKed).
    None,
}

/// The receiver's view of one data packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Delivery {
    /// Packet-level news: the sequence number was new (counts toward completion).
    pub fresh: bool,
    pub reply: Reply,
    /// Selective: which of the 16 sequence numbers below this one are held ([`Bits::below`]).
    pub sack: u16,
    /// The receiver now holds the whole message.
    pub complete: bool,
}

impl Receiver {
    pub fn new(lr: LossRecoveryKind, size: u64, mss: u32) -> Option<Receiver> {
        let packets = size.div_ceil(mss as u64).max(1).min(u32::MAX as u64 / 2) as u32;
        match lr {
            LossRecoveryKind::IdealErasure => None,
            LossRecoveryKind::Sack | LossRecoveryKind::Trim => Some(Receiver::Selective {
                got: Bits::new(packets),
                count: 0,
                packets,
            }),
            LossRecoveryKind::GoBackN => Some(Receiver::InOrder {
                expected: 0,
                nacked: None,
                packets,
            }),
            LossRecoveryKind::Erasure => Some(Receiver::Coded { count: 0, packets }),
        }
    }

    pub fn complete(&self) -> bool {
        match *self {
            Receiver::Selective { count, packets, .. } => count >= packets,
            Receiver::InOrder {
                expected, packets, ..
            } => expected >= packets,
            Receiver::Coded { count, packets } => count >= packets,
        }
    }

    /// A data packet with sequence number `seq` arrived intact.
    pub fn on_data(&mut self, seq: u32) -> Delivery {
        match self {
            Receiver::Selective { got, count, .. } => {
                let fresh = got.set(seq);
                if fresh {
                    *count += 1;
                }
                let sack = got.below(seq);
                Delivery {
                    fresh,
                    reply: Reply::Ack(seq),
                    sack,
                    complete: self.complete(),
                }
            }
            Receiver::InOrder {
                expected, nacked, ..
            } => {
                let (fresh, reply) = if seq == *expected {
                    *expected += 1;
                    *nacked = None;
                    (true, Reply::Ack(*expected))
                } else if seq < *expected {
                    // A duplicate: re-ACK so a sender that lost the ACK still moves on.
                    (false, Reply::Ack(*expected))
                } else if *nacked != Some(*expected) {
                    *nacked = Some(*expected);
                    (false, Reply::Nack(*expected))
                } else {
                    (false, Reply::None)
                };
                Delivery {
                    fresh,
                    reply,
                    sack: 0,
                    complete: self.complete(),
                }
            }
            Receiver::Coded { count, .. } => {
                *count += 1;
                Delivery {
                    fresh: true,
                    reply: Reply::Ack(seq),
                    sack: 0,
                    complete: self.complete(),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u32 = 1000;

    fn sender(lr: LossRecoveryKind, size: u64, reorder: u32) -> Sender {
        Sender::new(lr, size, MSS, 2, reorder, SimTime::from_us(100), true, None)
    }

    fn send_all(s: &mut Sender, next_seq: &mut u32, xmit: &mut u32) -> Vec<Next> {
        let mut v = vec![];
        while let Some(n) = s.peek(*next_seq) {
            s.on_sent(n, *xmit, SimTime::ZERO);
            *xmit += 1;
            if !n.retransmission {
                *next_seq += 1;
            }
            v.push(n);
        }
        v
    }

    #[test]
    fn sack_declares_a_loss_after_threshold_later_acks_and_resends_it_once() {
        let mut s = sender(LossRecoveryKind::Sack, 10 * MSS as u64 - 300, 3);
        let (mut seq, mut x) = (0, 0);
        let sent = send_all(&mut s, &mut seq, &mut x);
        assert_eq!(sent.len(), 10);
        assert_eq!(sent[9].payload, 700);
        assert_eq!(s.inflight, 9 * 1000 + 700);
        let t = SimTime::from_us(10);
        // Transmission 0 is lost; 1 and 2 are ACKed: not yet.
        for k in 1..3 {
            let o = s.on_ack(k, k, 0, t, SimTime::ZERO);
            assert_eq!((o.newly_acked, o.lost), (1000, 0));
        }
        // The third later ACK makes it lost.
        let o = s.on_ack(3, 3, 0, t, SimTime::ZERO);
        assert_eq!((o.lost, o.lost_bytes), (1, 1000));
        assert_eq!(s.inflight, 5 * 1000 + 700);
        let again = send_all(&mut s, &mut seq, &mut x);
        assert_eq!(
            again,
            vec![Next {
                seq: 0,
                payload: 1000,
                retransmission: true
            }]
        );
        // The retransmission (xmit 10) is ACKed; the rest follow; everything is acknowledged once.
        assert_eq!(s.on_ack(10, 0, 0, t, SimTime::ZERO).newly_acked, 1000);
        for k in 4..10 {
            s.on_ack(k, k, 0, t, SimTime::ZERO);
        }
        assert!(s.all_acked());
        assert_eq!(s.inflight, 0);
        // A late duplicate ACK changes nothing.
        assert_eq!(s.on_ack(0, 0, 0, t, SimTime::ZERO), Outcome::default());
    }

    #[test]
    fn a_spuriously_declared_loss_is_not_resent_once_acked() {
        let mut s = sender(LossRecoveryKind::Sack, 5 * MSS as u64, 1);
        let (mut seq, mut x) = (0, 0);
        send_all(&mut s, &mut seq, &mut x);
        let t = SimTime::from_us(10);
        assert_eq!(s.on_ack(1, 1, 0, t, SimTime::ZERO).lost, 1);
        // The "lost" packet was only late.
        s.on_ack(0, 0, 0, t, SimTime::ZERO);
        assert!(send_all(&mut s, &mut seq, &mut x).is_empty());
    }

    #[test]
    fn trim_nack_resends_at_once_without_reorder_detection() {
        let mut s = sender(LossRecoveryKind::Trim, 4 * MSS as u64, 3);
        let (mut seq, mut x) = (0, 0);
        send_all(&mut s, &mut seq, &mut x);
        let t = SimTime::from_us(10);
        for k in 1..4 {
            assert_eq!(s.on_ack(k, k, 0, t, SimTime::ZERO).lost, 0);
        }
        let (o, rewind) = s.on_nack(0, 0);
        assert_eq!((o.lost, rewind), (1, None));
        assert_eq!(send_all(&mut s, &mut seq, &mut x)[0].seq, 0);
    }

    #[test]
    fn go_back_n_rewinds_to_the_nacked_sequence_and_acks_cumulatively() {
        let mut s = sender(LossRecoveryKind::GoBackN, 6 * MSS as u64, 3);
        let (mut seq, mut x) = (0, 0);
        send_all(&mut s, &mut seq, &mut x);
        let t = SimTime::from_us(10);
        assert_eq!(s.on_ack(0, 1, 0, t, SimTime::ZERO).newly_acked, 1000);
        // Packet 1 lost: the receiver NACKs 1 when 2 arrives.
        let (o, rewind) = s.on_nack(2, 1);
        assert_eq!(rewind, Some(1));
        assert_eq!(o.lost, 5);
        assert_eq!(s.inflight, 0);
        assert_eq!(s.snd_una, 1);
        let mut r = Receiver::new(LossRecoveryKind::GoBackN, 6 * MSS as u64, MSS).unwrap();
        assert_eq!(r.on_data(0).reply, Reply::Ack(1));
        assert_eq!(r.on_data(2).reply, Reply::Nack(1));
        assert_eq!(r.on_data(3).reply, Reply::None, "one NACK per gap");
        assert_eq!(r.on_data(1).reply, Reply::Ack(2));
        assert_eq!(r.on_data(0).reply, Reply::Ack(2), "duplicates re-ACK");
    }

    #[test]
    fn go_back_n_nack_loses_only_what_the_receiver_discarded() {
        let mut s = sender(LossRecoveryKind::GoBackN, 6 * MSS as u64, 3);
        let (mut seq, mut x) = (0, 0);
        send_all(&mut s, &mut seq, &mut x);
        // 0 and 1 arrived but their ACKs were lost; 2 was lost; 3 makes the receiver NACK 2.
        let (o, rewind) = s.on_nack(3, 2);
        assert_eq!(rewind, Some(2));
        assert_eq!(
            o.newly_acked, 2000,
            "the NACK's cumulative point covers 0 and 1"
        );
        assert_eq!(
            (o.lost, o.lost_bytes),
            (4, 4000),
            "2 to 5: only what lies at or past the gap"
        );
        assert_eq!(s.inflight, 0);
    }

    #[test]
    fn go_back_n_cumulative_ack_retires_earlier_transmissions_whose_acks_were_lost() {
        let mut s = sender(LossRecoveryKind::GoBackN, 6 * MSS as u64, 3);
        let (mut seq, mut x) = (0, 0);
        send_all(&mut s, &mut seq, &mut x);
        assert_eq!(s.inflight, 6000);
        let t = SimTime::from_us(10);
        // The ACKs of transmissions 0 and 1 are lost; 2's ACK says "next expected 3".
        let o = s.on_ack(2, 3, 0, t, SimTime::ZERO);
        assert_eq!(o.newly_acked, 3000);
        assert_eq!(
            s.inflight, 3000,
            "0 and 1 were delivered: no longer in flight"
        );
        for k in 3..6 {
            s.on_ack(k, k + 1, 0, t, SimTime::ZERO);
        }
        assert!(s.all_acked());
        assert_eq!(s.inflight, 0);
    }

    #[test]
    fn erasure_sends_k_repairs_and_more_only_after_a_timeout() {
        let mut s = sender(LossRecoveryKind::Erasure, 8 * MSS as u64, 3);
        let (mut seq, mut x) = (0, 0);
        let sent = send_all(&mut s, &mut seq, &mut x);
        assert_eq!(sent.len(), 10, "8 + k = 2");
        assert!(sent.iter().all(|n| n.payload == 1000 && !n.retransmission));
        // Only 5 arrive: 3 missing, the timeout allows 3 more.
        for k in 0..5 {
            s.on_ack(k, k, 0, SimTime::from_us(10), SimTime::ZERO);
        }
        s.on_timeout(seq);
        assert_eq!(send_all(&mut s, &mut seq, &mut x).len(), 3);
        let mut r = Receiver::new(LossRecoveryKind::Erasure, 8 * MSS as u64, MSS).unwrap();
        for k in 0..7 {
            assert!(!r.on_data(k * 3).complete);
        }
        assert!(r.on_data(100).complete, "any 8 coded packets decode");
    }

    #[test]
    fn rto_follows_rfc6298_with_a_floor_and_backoff() {
        let mut s = Sender::new(
            LossRecoveryKind::Sack,
            4000,
            MSS,
            0,
            3,
            SimTime::from_us(5),
            true,
            None,
        );
        assert_eq!(s.rto(), SimTime::from_us(5));
        let n = s.peek(0).unwrap();
        s.on_sent(n, 0, SimTime::ZERO);
        s.on_ack(0, 0, 0, SimTime::from_us(10), SimTime::from_us(8));
        // srtt 2 us, rttvar 1 us: 6 us.
        assert_eq!(s.rto(), SimTime::from_us(6));
        s.on_timeout(1);
        assert_eq!(s.rto(), SimTime::from_us(12));
    }

    #[test]
    fn selective_acks_report_the_16_sequence_numbers_below() {
        let mut r = Receiver::new(LossRecoveryKind::Sack, 40 * MSS as u64, MSS).unwrap();
        for s in [0, 1, 2, 5, 20] {
            r.on_data(s);
        }
        assert_eq!(r.on_data(3).sack, 0b111);
        // Below 6: 5, then 3, 2, 1, 0 (4 missing).
        assert_eq!(r.on_data(6).sack, 0b11_1101);
        // Below 22: 20 (bit 1) and 6 (bit 15); 5 is 17 below, out of reach.
        assert_eq!(r.on_data(22).sack, 0x8002);
    }

    /// A bitmap names a sequence number whose transmission is not where the ACKed one implies
    /// (a retransmission, sent out of order): it is resolved when it reaches the front.
    #[test]
    fn a_sacked_transmission_out_of_place_is_resolved_at_the_front_not_lost() {
        let mut s = sender(LossRecoveryKind::Sack, 6 * MSS as u64, 3);
        let (mut seq, mut x) = (0, 0);
        send_all(&mut s, &mut seq, &mut x);
        let t = SimTime::from_us(10);
        for k in 1..4 {
            s.on_ack(k, k, 0, t, SimTime::ZERO);
        }
        // 0 is declared lost and resent as transmission 6.
        assert_eq!(send_all(&mut s, &mut seq, &mut x).len(), 1);
        // The ACKs of 4 and of 0's retransmission are lost; 5's reports 4, 3, 2, 1 and 0.
        let o = s.on_ack(5, 5, 0b1_1111, t, SimTime::ZERO);
        assert_eq!((o.newly_acked, o.lost), (3000, 0), "5, 4 and 0");
        assert_eq!(s.inflight, 0);
        assert!(s.all_acked());
    }

    #[test]
    fn selective_receiver_counts_each_sequence_once() {
        let mut r = Receiver::new(LossRecoveryKind::Sack, 3000, MSS).unwrap();
        assert!(r.on_data(2).fresh);
        assert!(!r.on_data(2).fresh);
        r.on_data(0);
        assert!(r.on_data(1).complete);
    }
}
