//! A flow's transport as a state machine without I/O: the simulation hands it each packet that
//! reaches one of its ends and each timer expiry, with the time, and it answers with what to do
//! (the reply to send, whether the flow completed, when its timer is due). It reads no clock,
//! queue or other flow, so it is tested here without a simulation.

use super::cc::{AckSample, LossKind};
use super::reliable::{Next, Pace, Receiver, Reply};
use super::{Flow, LossRecoveryKind};
use crate::net::{Packet, PacketKind};
use crate::time::{BitsPerSec, SimTime};

/// What a flow can send now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transmit {
    /// The sender knows the receiver holds everything.
    Finished,
    /// Its own pacer lets the next packet go at this time.
    PacedUntil(SimTime),
    /// Its window, credit or loss recovery holds it back until an ACK, credit or timeout.
    Blocked,
    /// The idealized sender's packets cover the message: it waits for the completion, an ACK
    /// that shows a hole, or a probe when neither comes within a round trip.
    Covered,
    /// This packet may go now.
    Ready(Next),
}

/// What the receiving end does with one data packet (or trimmed header).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DataReceipt {
    /// The packet brought something the receiver did not hold (false: discarded).
    pub fresh: bool,
    /// The control packet to send back (ACK or NACK) and the sequence number it carries.
    pub reply: Option<(PacketKind, u32)>,
    /// The receiver holds the whole message.
    pub complete: bool,
    /// ... and did not before this packet.
    pub just_done: bool,
    /// DCQCN: the reply carries a congestion notification.
    pub cnp: bool,
    /// sack and trim: which of the 16 sequence numbers below the ACKed one the receiver holds
    /// (bit i: seq - 1 - i), carried in the ACK's otherwise unused payload field.
    pub sack: u16,
}

impl Flow {
    /// What the sender may put on the wire at `now` (`mss`: payload of a full packet).
    #[inline]
    pub fn poll_transmit(&mut self, now: SimTime, mss: u32) -> Transmit {
        if self.sender_done {
            return Transmit::Finished;
        }
        if self.next_send > now {
            return Transmit::PacedUntil(self.next_send);
        }
        let Some(tx) = &mut self.tx else {
            if self.covered(mss) {
                return Transmit::Covered;
            }
            return Transmit::Ready(Next {
                seq: self.next_seq,
                payload: self.next_payload(mss),
                retransmission: false,
            });
        };
        match tx.peek(self.next_seq) {
            Some(n)
                if tx.credit > 0
                    && (tx.tlp.is_some_and(|t| t.pass_window)
                        || !self.cc.window().is_some_and(|w| {
                            tx.inflight > 0 && tx.inflight + n.payload as u64 > w
                        })) =>
            {
                Transmit::Ready(n)
            }
            _ => Transmit::Blocked,
        }
    }

    /// `next` (from [`Flow::poll_transmit`]) left at `now` as transmission [`Flow::next_xmit`],
    /// `wire` bytes long; `share` caps the flow's rate (failure-aware rates), its CC may too.
    #[inline]
    pub fn on_transmit(&mut self, next: Next, now: SimTime, wire: u32, share: Option<BitsPerSec>) {
        let mut rate = share;
        if self.tx.is_some() {
            if let Some(r) = self.cc.rate(now) {
                rate = Some(rate.map_or(r, |x| BitsPerSec(x.0.min(r.0))));
            }
        }
        if let Some(r) = rate {
            self.next_send = if r.0 == 0 {
                SimTime::MAX
            } else {
                now + r.serialization(wire as u64)
            };
        }
        let xmit = self.next_xmit();
        if !next.retransmission {
            self.next_seq = self.next_seq.wrapping_add(1);
        }
        if let Some(tx) = &mut self.tx {
            tx.pace = Pace {
                sent: now,
                wire,
                cap: share,
            };
            // Go-back-N resends by rewinding, so a sequence number below the highest yet sent
            // is a retransmission too.
            if next.retransmission || next.seq < tx.seq_high {
                self.retransmissions += 1;
            }
            tx.seq_high = tx.seq_high.max(next.seq + 1);
            tx.on_sent(next, xmit, now);
            self.cc.on_send(now, next.payload as u64);
        }
        self.unsent = self.unsent.saturating_sub(next.payload as u64);
        self.data_packets_sent += 1;
    }

    /// A data packet or trimmed header reached the receiver at `now`. `cnp_gap`: with DCQCN,
    /// the least gap between two congestion notifications of this flow.
    pub fn on_data(&mut self, p: &Packet, now: SimTime, cnp_gap: Option<SimTime>) -> DataReceipt {
        self.data_packets_received += 1;
        let was_done = self.finish.is_some();
        let mut fresh = true;
        let mut sack = 0;
        let (kind, seq) = match &mut self.rx {
            None => {
                // Repair packets past completion carry nothing new.
                self.recv_bytes = (self.recv_bytes + p.payload as u64).min(self.size);
                (PacketKind::Ack, p.seq)
            }
            Some(_) if p.kind == PacketKind::Header => (PacketKind::Nack, p.seq),
            Some(rx) => {
                let d = rx.on_data(p.seq);
                fresh = d.fresh;
                sack = d.sack;
                match **rx {
                    // A coded message is handed over whole when it decodes.
                    Receiver::Coded { .. } if d.complete && !was_done => {
                        self.recv_bytes = self.size;
                    }
                    Receiver::Coded { .. } => {}
                    _ if d.fresh => self.recv_bytes += p.payload as u64,
                    _ => {}
                }
                match d.reply {
                    Reply::Ack(s) => (PacketKind::Ack, s),
                    Reply::Nack(s) => (PacketKind::Nack, s),
                    Reply::None => (PacketKind::Pull, 0),
                }
            }
        };
        let complete = match &self.rx {
            None => self.recv_bytes >= self.size,
            Some(rx) => rx.complete(),
        };
        let just_done = !was_done && complete;
        if just_done {
            self.finish = Some(now);
        }
        let cnp = cnp_gap.is_some_and(|gap| p.ecn && self.last_cnp.is_none_or(|t| now - t >= gap));
        if cnp {
            self.last_cnp = Some(now);
        }
        DataReceipt {
            fresh,
            reply: (kind != PacketKind::Pull).then_some((kind, seq)),
            complete,
            just_done,
            cnp,
            sack,
        }
    }

    /// An ACK reached the sender at `now`; true if the sender has just learnt that the
    /// receiver holds everything.
    pub fn on_ack(&mut self, p: &Packet, now: SimTime) -> bool {
        self.last_ack = now;
        let mut done = p.done;
        if self.tx.is_none() {
            self.note_ack(p.xmit);
        }
        if let Some(tx) = &mut self.tx {
            let o = tx.on_ack(p.xmit, p.seq, p.payload, now, p.sent_at);
            if tx.lr == LossRecoveryKind::GoBackN && self.next_seq < tx.snd_una {
                self.next_seq = tx.snd_una;
            }
            self.cc.on_ack(&AckSample {
                now,
                acked_bytes: o.newly_acked,
                ecn: p.ecn,
                rtt: now - p.sent_at,
                cnp: p.cnp,
                inflight: tx.inflight,
            });
            if o.lost > 0 {
                self.cc.on_loss(now, o.lost_bytes, LossKind::Reorder);
            }
            done |= tx.all_acked();
        }
        self.finish_sending(done)
    }

    /// After an ACK at `now`: a CC that paced the flow and no longer does (Swift's window back
    /// at a packet or more: the flow is ACK-clocked again) releases the packet its pacer held,
    /// which then waits only for the rate cap it left under. A flow below one packet hears an
    /// ACK only for the packet it last sent, so without this it would wait out a gap set by a
    /// window it no longer has. A rate that merely changes keeps the send time set when the
    /// packet left, as hardware pacers (Carousel) and htsim's Swift-style sender do; htsim
    /// likewise cancels the pacing once the window allows a packet. True if the next packet may
    /// go sooner than before.
    pub fn repace(&mut self, now: SimTime) -> bool {
        let Some(tx) = &self.tx else {
            return false;
        };
        if self.next_send <= now || self.next_send == SimTime::MAX {
            return false;
        }
        if self.cc.current_rate().is_some() {
            return false;
        }
        let p = tx.pace;
        let at = match p.cap {
            None => p.sent,
            Some(r) if r.0 == 0 => return false,
            Some(r) => p.sent + r.serialization(p.wire as u64),
        };
        if at >= self.next_send {
            return false;
        }
        self.next_send = at;
        true
    }

    /// A NACK reached the sender at `now` (a trimmed header, or go-back-N's gap); true as for
    /// [`Flow::on_ack`].
    pub fn on_nack(&mut self, p: &Packet, now: SimTime) -> bool {
        self.last_ack = now;
        let Some(tx) = &mut self.tx else {
            return false;
        };
        let (o, rewind) = tx.on_nack(p.xmit, p.seq);
        if let Some(seq) = rewind {
            self.next_seq = seq;
        }
        self.cc.on_loss(now, o.lost_bytes, LossKind::Nack);
        let done = tx.all_acked();
        self.finish_sending(done)
    }

    /// A trimmed header came back from a switch whose control queue was full (NDP's
    /// return-to-sender) at `now`: resent as on a NACK; a credit-based sender gets back the
    /// credit the packet spent, since the receiver never saw it to pull again. True as for
    /// [`Flow::on_ack`].
    pub fn on_returned(&mut self, p: &Packet, now: SimTime) -> bool {
        if let Some(tx) = &mut self.tx {
            if tx.credit_based {
                tx.credit = tx.credit.saturating_add(1);
            }
        }
        self.on_nack(p, now)
    }

    /// A credit (EQDS pull) reached the sender at `now`: one more packet may go.
    pub fn on_credit(&mut self, now: SimTime) {
        self.last_ack = now;
        if let Some(tx) = &mut self.tx {
            tx.credit = tx.credit.saturating_add(1);
        }
    }

    fn finish_sending(&mut self, done: bool) -> bool {
        if done && !self.sender_done {
            self.sender_done = true;
            return true;
        }
        false
    }

    /// When the flow's no-progress timer is due (None once the sender is done): the last ACK
    /// plus the retransmission timeout (`rto`, the floor, without loss recovery). With nothing in
    /// flight and its own pacer holding the next packet back, the timer is off until that packet
    /// goes (RFC 6298 5.1 and 5.2: it runs only while data is outstanding), so a flow paced more
    /// than an RTO apart (Swift below one packet, DCQCN) does not time out on its own gaps.
    pub fn poll_timeout(&self, rto: SimTime) -> Option<SimTime> {
        if self.sender_done {
            return None;
        }
        let Some(tx) = &self.tx else {
            return Some(self.last_ack + rto);
        };
        Some(tx.timer(self.timer_since()).0)
    }

    fn timer_since(&self) -> SimTime {
        match &self.tx {
            Some(tx) if tx.inflight == 0 => self.last_ack.max(self.next_send),
            _ => self.last_ack,
        }
    }

    /// The simulation scheduled this flow's timer event at `at`; an event at any other time is
    /// a superseded one, to be ignored.
    #[inline]
    pub fn arm_timer(&mut self, at: SimTime) -> SimTime {
        self.timer_at = at;
        at
    }

    /// After an ACK or NACK: with the tail-loss probe on, the timer may now be due sooner than
    /// the event pending for it (a probe 2 SRTT after this ACK, against an RTO counted from an
    /// earlier one); the time of the extra event to schedule, if so. Without the probe the
    /// timer only moves later and the pending event re-arms itself.
    pub fn sooner_timer(&mut self, rto: SimTime) -> Option<SimTime> {
        if self.tx.as_ref().is_none_or(|t| t.tlp.is_none()) {
            return None;
        }
        let due = self.poll_timeout(rto)?;
        (due < self.timer_at).then(|| self.arm_timer(due))
    }

    /// The timer due now is the tail-loss probe's, not a retransmission timeout: nothing is
    /// declared lost and the host's load balancer hears nothing.
    pub fn probe_due(&self) -> bool {
        self.tx
            .as_ref()
            .is_some_and(|tx| tx.timer(self.timer_since()).1)
    }

    /// The timer fired at `now` with nothing heard since it was set: a tail-loss probe (see
    /// [`Flow::probe_due`]) lets one packet past the window; otherwise loss recovery declares the
    /// outstanding packets lost. Returns when the timer is next due.
    pub fn on_timeout(&mut self, now: SimTime, rto: SimTime) -> SimTime {
        if self.probe_due() {
            let next_seq = self.next_seq;
            let tx = self.tx.as_mut().expect("a probe needs a sender");
            tx.on_probe(now, next_seq);
            let since = self.timer_since();
            return self.tx.as_ref().map_or(now + rto, |t| t.timer(since).0);
        }
        self.timeouts += 1;
        match &mut self.tx {
            None => now + rto,
            Some(tx) => {
                let (o, rewind) = tx.on_timeout(self.next_seq);
                if let Some(seq) = rewind {
                    self.next_seq = seq;
                }
                self.cc.on_loss(now, o.lost_bytes, LossKind::Timeout);
                self.last_ack = now;
                tx.timer(now).0
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::{FlowId, HostId};
    use crate::transport::cc::Cc;
    use crate::transport::reliable::Sender;
    use crate::workload::FlowSpec;

    const MSS: u32 = 1000;

    fn flow(lr: LossRecoveryKind, size: u64) -> Flow {
        let spec = FlowSpec {
            src: HostId(0),
            dst: HostId(1),
            size_bytes: size,
            start: SimTime::ZERO,
        };
        let mut f = Flow::new(spec, Cc::CONSTANT);
        f.tx = Some(Box::new(Sender::new(
            lr,
            size,
            MSS,
            0,
            3,
            SimTime::from_us(100),
            false,
            None,
        )));
        f.rx = Receiver::new(lr, size, MSS).map(Box::new);
        f
    }

    fn data(seq: u32, kind: PacketKind, ecn: bool) -> Packet {
        Packet {
            flow: FlowId(0),
            src: HostId(0),
            dst: HostId(1),
            seq,
            xmit: seq,
            entropy: 0,
            sent_at: SimTime::ZERO,
            wire_bytes: 1062,
            payload: if kind == PacketKind::Data {
                MSS as u16
            } else {
                0
            },
            kind,
            ecn,
            done: false,
            cnp: false,
        }
    }

    fn ack_of(p: &Packet, seq: u32, done: bool) -> Packet {
        Packet {
            kind: PacketKind::Ack,
            seq,
            done,
            payload: 0,
            ..*p
        }
    }

    /// The idealized fast path (no scoreboard) sends its message once, then one packet per
    /// hole below its highest ACK, and nothing past that.
    #[test]
    fn the_idealized_sender_stops_once_its_packets_less_holes_cover_the_message() {
        let spec = FlowSpec {
            src: HostId(0),
            dst: HostId(1),
            size_bytes: 3 * MSS as u64 - 10,
            start: SimTime::ZERO,
        };
        let mut f = Flow::new(spec, Cc::CONSTANT);
        let t = SimTime::from_us(1);
        let mut send = |f: &mut Flow| match f.poll_transmit(t, MSS) {
            Transmit::Ready(n) => {
                f.on_transmit(n, t, n.payload + 62, None);
                true
            }
            other => {
                assert_eq!(other, Transmit::Covered);
                false
            }
        };
        let sent = |f: &mut Flow, send: &mut dyn FnMut(&mut Flow) -> bool| {
            let mut n = 0;
            while send(f) {
                n += 1;
            }
            n
        };
        assert_eq!(sent(&mut f, &mut send), 3);
        // The ACK of transmission 2 overtakes 0 and 1: two holes, two more packets.
        let mut ack = ack_of(&data(0, PacketKind::Data, false), 0, false);
        ack.xmit = 2;
        assert!(!f.on_ack(&ack, t));
        assert_eq!(sent(&mut f, &mut send), 2);
        // 0's ACK was late, not lost: a hole closes and nothing more goes.
        ack.xmit = 0;
        f.on_ack(&ack, t);
        assert_eq!((f.holes, sent(&mut f, &mut send)), (1, 0));
        // The completion stops the sender for good.
        ack.xmit = 4;
        ack.done = true;
        assert!(f.on_ack(&ack, t));
        assert_eq!(f.poll_transmit(t, MSS), Transmit::Finished);
        assert_eq!(f.data_packets_sent, 5);
    }

    #[test]
    fn a_sack_receiver_acks_each_packet_and_completes_once() {
        let mut f = flow(LossRecoveryKind::Sack, 3 * MSS as u64);
        let t = SimTime::from_us(1);
        let r = f.on_data(&data(1, PacketKind::Data, false), t, None);
        assert_eq!(r.reply, Some((PacketKind::Ack, 1)));
        assert!(r.fresh && !r.complete);
        assert!(!f.on_data(&data(1, PacketKind::Data, false), t, None).fresh);
        // A trimmed header is NACKed for its sequence number.
        let r = f.on_data(&data(0, PacketKind::Header, false), t, None);
        assert_eq!(r.reply, Some((PacketKind::Nack, 0)));
        f.on_data(&data(0, PacketKind::Data, false), t, None);
        let r = f.on_data(&data(2, PacketKind::Data, false), SimTime::from_us(2), None);
        assert!(r.complete && r.just_done);
        assert_eq!(f.finish, Some(SimTime::from_us(2)));
        assert_eq!(f.recv_bytes, 3 * MSS as u64);
        assert!(
            !f.on_data(&data(2, PacketKind::Data, false), t, None)
                .just_done
        );
    }

    /// SACK under spraying: each ACK also reports which of the 16 sequence numbers below its own
    /// the receiver holds (bit i: seq - 1 - i), so an ACK that is lost costs nothing when a
    /// later one arrives, instead of a retransmission once `reorder` later ACKs overtake it.
    #[test]
    fn a_lost_ack_is_made_good_by_the_next_acks_sack_bitmap() {
        let mut f = flow(LossRecoveryKind::Sack, 6 * MSS as u64);
        let t0 = SimTime::ZERO;
        for _ in 0..6 {
            let Transmit::Ready(n) = f.poll_transmit(t0, MSS) else {
                panic!("no window: all six go")
            };
            f.on_transmit(n, t0, n.payload + 62, None);
        }
        // All six arrive in order, so ACK s reports 0 to s - 1; the ACKs of 0, 1 and 2 are lost.
        let acks: Vec<Packet> = (0..6)
            .map(|seq| {
                let mut a = ack_of(&data(seq, PacketKind::Data, false), seq, false);
                a.payload = (1 << seq) - 1;
                a
            })
            .collect();
        let t = SimTime::from_us(10);
        assert!(!f.on_ack(&acks[3], t));
        assert_eq!(f.tx.as_ref().unwrap().inflight, 2 * MSS as u64);
        assert!(!f.on_ack(&acks[4], t));
        assert!(f.on_ack(&acks[5], t), "the sender knows all six arrived");
        assert_eq!(f.tx.as_ref().unwrap().inflight, 0);
        assert_eq!(f.poll_transmit(t, MSS), Transmit::Finished);
        assert_eq!(f.retransmissions, 0);
    }

    #[test]
    fn congestion_notifications_are_spaced_by_the_gap() {
        let mut f = flow(LossRecoveryKind::Sack, 10 * MSS as u64);
        let gap = Some(SimTime::from_us(50));
        let marked = |s| data(s, PacketKind::Data, true);
        assert!(f.on_data(&marked(0), SimTime::from_us(1), gap).cnp);
        assert!(!f.on_data(&marked(1), SimTime::from_us(30), gap).cnp);
        assert!(f.on_data(&marked(2), SimTime::from_us(51), gap).cnp);
        assert!(
            !f.on_data(
                &data(3, PacketKind::Data, false),
                SimTime::from_us(200),
                gap
            )
            .cnp
        );
        assert!(!f.on_data(&marked(4), SimTime::from_us(300), None).cnp);
    }

    #[test]
    fn the_sender_finishes_once_and_its_timer_stops() {
        let mut f = flow(LossRecoveryKind::Sack, 2 * MSS as u64);
        let tx = f.tx.as_mut().unwrap();
        for seq in 0..2 {
            let n = tx.peek(seq).unwrap();
            tx.on_sent(n, seq, SimTime::ZERO);
        }
        f.next_seq = 2;
        assert_eq!(
            f.poll_timeout(SimTime::from_us(7)),
            Some(SimTime::from_us(100))
        );
        let t = SimTime::from_us(5);
        assert!(!f.on_ack(&ack_of(&data(0, PacketKind::Data, false), 0, false), t));
        assert_eq!(f.last_ack, t);
        assert!(f.on_ack(&ack_of(&data(1, PacketKind::Data, false), 1, true), t));
        assert!(!f.on_ack(&ack_of(&data(1, PacketKind::Data, false), 1, true), t));
        assert_eq!(f.poll_timeout(SimTime::from_us(7)), None);
    }

    #[test]
    fn the_timer_is_off_while_nothing_is_in_flight_and_the_pacer_holds_the_next_packet() {
        let mut f = flow(LossRecoveryKind::Sack, 4 * MSS as u64);
        let tx = f.tx.as_mut().unwrap();
        let n = tx.peek(0).unwrap();
        tx.on_sent(n, 0, SimTime::ZERO);
        f.next_seq = 1;
        f.on_ack(
            &ack_of(&data(0, PacketKind::Data, false), 0, false),
            SimTime::from_us(10),
        );
        // Paced: the next packet may go only at 300 us; nothing is outstanding meanwhile.
        f.next_send = SimTime::from_us(300);
        let rto = SimTime::from_us(100);
        assert_eq!(f.poll_timeout(rto), Some(SimTime::from_us(400)));
        // Once a packet is out, the timer runs from the last ACK as before.
        let tx = f.tx.as_mut().unwrap();
        let n = tx.peek(1).unwrap();
        tx.on_sent(n, 1, SimTime::ZERO);
        f.next_seq = 2;
        f.next_send = SimTime::from_us(600);
        assert_eq!(f.poll_timeout(rto), Some(SimTime::from_us(110)));
    }

    /// Swift below one packet paces one packet per `srtt x MSS / cwnd`. An ACK that brings the
    /// window back to a packet makes the flow ACK-clocked again: its next packet goes at once,
    /// not at the end of the gap the old, tiny rate set when the last packet left.
    #[test]
    fn an_ack_that_ends_pacing_releases_the_packet_the_pacer_held() {
        use crate::transport::cc::{CcConfigs, CcCtx, CcKind};
        let mut f = flow(LossRecoveryKind::Sack, 8 * MSS as u64);
        let ctx = CcCtx {
            mss: MSS,
            mtu: MSS + 62,
            ..CcCtx::test(SimTime::from_us(10), 100.0, 125_000)
        };
        f.cc = Cc::new(CcKind::Swift, &CcConfigs::default(), &ctx);
        let t0 = SimTime::ZERO;
        // Five timeouts in a row: the window falls to its minimum, 0.01 packets.
        for _ in 0..5 {
            f.cc.on_loss(t0, 0, LossKind::Timeout);
        }
        let Transmit::Ready(n) = f.poll_transmit(t0, MSS) else {
            panic!("the first packet goes")
        };
        f.on_transmit(n, t0, n.payload + 62, None);
        // 1,062 B on the wire at 0.01 x 1,000 B per 10 us (cwnd / base RTT): about 1.06 ms.
        let gap = f.next_send;
        assert!(gap > SimTime::from_us(1000), "paced: {gap:?}");
        assert!(
            matches!(f.poll_transmit(SimTime::from_us(10), MSS), Transmit::PacedUntil(t) if t == gap)
        );
        // Its ACK, 10 us later and under the target delay, adds a packet to the window.
        let mut p = data(0, PacketKind::Data, false);
        p.sent_at = t0;
        let now = SimTime::from_us(10);
        assert!(!f.on_ack(&ack_of(&p, 0, false), now));
        assert!(f.cc.current_rate().is_none(), "a whole packet: no pacing");
        assert!(f.repace(now), "the pacer's gap moves");
        assert!(matches!(f.poll_transmit(now, MSS), Transmit::Ready(_)));
        // A second look changes nothing.
        assert!(!f.repace(now));
    }

    /// With a rate cap the gap is kept at the cap's: only the CC's pacing is released.
    #[test]
    fn repacing_keeps_a_rate_cap_and_never_delays() {
        let mut f = flow(LossRecoveryKind::Sack, 8 * MSS as u64);
        let t0 = SimTime::ZERO;
        let Transmit::Ready(n) = f.poll_transmit(t0, MSS) else {
            panic!("the first packet goes")
        };
        let cap = BitsPerSec::from_gbps(1.0);
        f.on_transmit(n, t0, n.payload + 62, Some(cap));
        let gap = f.next_send;
        assert_eq!(gap, cap.serialization((n.payload + 62) as u64));
        assert!(!f.repace(SimTime::from_ns(100)));
        assert_eq!(f.next_send, gap);
    }

    /// Two packets; the second (the tail) is lost. The first is ACKed at 10 us (sent at 0: SRTT
    /// 10 us, RTO floored at 100 us).
    fn tail_lost(tlp: bool) -> Flow {
        let mut f = flow(LossRecoveryKind::Sack, 2 * MSS as u64);
        let tx = f.tx.take().unwrap();
        f.tx = Some(Box::new(tx.with_tail_loss_probe(tlp)));
        let t0 = SimTime::ZERO;
        for _ in 0..2 {
            let Transmit::Ready(n) = f.poll_transmit(t0, MSS) else {
                panic!("no window: both go")
            };
            f.on_transmit(n, t0, n.payload + 62, None);
        }
        f.on_ack(
            &ack_of(&data(0, PacketKind::Data, false), 0, false),
            SimTime::from_us(10),
        );
        f
    }

    #[test]
    fn a_lost_tail_packet_is_probed_after_two_srtt_and_recovered_in_one_more_rtt() {
        let rto = SimTime::from_us(100);
        // Without the probe: nothing reveals the loss before the RTO, 10 + 100 us.
        let plain = tail_lost(false);
        assert_eq!(plain.poll_timeout(rto), Some(SimTime::from_us(110)));
        assert!(!plain.probe_due());

        let mut f = tail_lost(true);
        // PTO = 2 x SRTT = 20 us after the last ACK.
        let pto = SimTime::from_us(30);
        assert_eq!(f.poll_timeout(rto), Some(pto));
        assert!(f.probe_due());
        let next = f.on_timeout(pto, rto);
        // The probe declared nothing lost and counted no timeout; the RTO now runs from it.
        assert_eq!(f.timeouts, 0);
        assert_eq!(f.tx.as_ref().unwrap().inflight, MSS as u64);
        assert_eq!(next, pto + rto);
        assert!(!f.probe_due(), "one probe per tail");
        // No new data: the probe is a copy of the highest outstanding packet.
        let Transmit::Ready(n) = f.poll_transmit(pto, MSS) else {
            panic!("the probe goes at once")
        };
        assert_eq!((n.seq, n.retransmission), (1, true));
        f.on_transmit(n, pto, n.payload + 62, None);
        assert_eq!(f.retransmissions, 1);
        // Its ACK one RTT later (40 us, against 110 us for the RTO) resolves both copies.
        let mut probe = data(1, PacketKind::Data, false);
        probe.xmit = 2;
        probe.sent_at = pto;
        assert!(f.on_ack(&ack_of(&probe, 1, true), SimTime::from_us(40)));
        assert_eq!(f.tx.as_ref().unwrap().inflight, 0);
        assert_eq!(f.poll_timeout(rto), None);
    }

    /// RFC 8985 7.2: the probe timer restarts when new data is sent, so a packet that leaves
    /// after the last ACK (held by a pacer, here 15 us) is probed 2 SRTT after it left, not
    /// 2 SRTT after the ACK (which would be 5 us after it left, before it could be ACKed).
    #[test]
    fn the_probe_timer_restarts_when_new_data_is_sent() {
        let mut f = flow(LossRecoveryKind::Sack, 2 * MSS as u64);
        let tx = f.tx.take().unwrap();
        f.tx = Some(Box::new(tx.with_tail_loss_probe(true)));
        let t0 = SimTime::ZERO;
        let Transmit::Ready(n) = f.poll_transmit(t0, MSS) else {
            panic!("the first packet goes")
        };
        f.on_transmit(n, t0, n.payload + 62, None);
        // Its ACK at 10 us: SRTT 10 us, RTO floored at 100 us.
        f.on_ack(
            &ack_of(&data(0, PacketKind::Data, false), 0, false),
            SimTime::from_us(10),
        );
        let rto = SimTime::from_us(100);
        let sent = SimTime::from_us(25);
        let Transmit::Ready(n) = f.poll_transmit(sent, MSS) else {
            panic!("the second packet goes")
        };
        f.on_transmit(n, sent, n.payload + 62, None);
        assert_eq!(f.poll_timeout(rto), Some(SimTime::from_us(45)));
        assert!(f.probe_due());
        // The probe itself does not restart the timer: the RTO runs from it, 45 + 100 us.
        assert_eq!(
            f.on_timeout(SimTime::from_us(45), rto),
            SimTime::from_us(145)
        );
    }

    #[test]
    fn a_probe_prefers_new_data_when_there_is_some() {
        let mut f = tail_lost(true);
        // Make it a 3-packet message whose third packet is not yet sent: the probe is new data.
        let spec = FlowSpec {
            size_bytes: 3 * MSS as u64,
            ..f.spec
        };
        f = Flow::new(spec, Cc::CONSTANT);
        f.tx = Some(Box::new(
            Sender::new(
                LossRecoveryKind::Sack,
                3 * MSS as u64,
                MSS,
                0,
                3,
                SimTime::from_us(100),
                false,
                None,
            )
            .with_tail_loss_probe(true),
        ));
        f.rx = Receiver::new(LossRecoveryKind::Sack, 3 * MSS as u64, MSS).map(Box::new);
        let tx = f.tx.as_mut().unwrap();
        for seq in 0..2 {
            let n = tx.peek(seq).unwrap();
            tx.on_sent(n, seq, SimTime::ZERO);
        }
        f.next_seq = 2;
        f.data_packets_sent = 2;
        f.on_ack(
            &ack_of(&data(0, PacketKind::Data, false), 0, false),
            SimTime::from_us(10),
        );
        let pto = SimTime::from_us(30);
        assert_eq!(f.poll_timeout(SimTime::from_us(100)), Some(pto));
        f.on_timeout(pto, SimTime::from_us(100));
        let tx = f.tx.as_ref().unwrap();
        assert!(tx.tlp.is_some_and(|t| t.pass_window));
        let Transmit::Ready(n) = f.poll_transmit(pto, MSS) else {
            panic!("the probe goes")
        };
        assert_eq!((n.seq, n.retransmission), (2, false));
    }

    #[test]
    fn a_timeout_rewinds_go_back_n_and_counts() {
        let mut f = flow(LossRecoveryKind::GoBackN, 4 * MSS as u64);
        let tx = f.tx.as_mut().unwrap();
        for seq in 0..4 {
            let n = tx.peek(seq).unwrap();
            tx.on_sent(n, seq, SimTime::ZERO);
        }
        f.next_seq = 4;
        // Packet 0 arrived (cumulative ACK 1), the rest were lost.
        f.on_ack(
            &ack_of(&data(0, PacketKind::Data, false), 1, false),
            SimTime::from_us(3),
        );
        let now = SimTime::from_us(103);
        assert_eq!(f.poll_timeout(SimTime::from_us(100)), Some(now));
        let next = f.on_timeout(now, SimTime::from_us(100));
        assert_eq!((f.next_seq, f.timeouts), (1, 1));
        assert_eq!(f.tx.as_ref().unwrap().inflight, 0);
        assert!(next > now);
    }

    #[test]
    fn poll_transmit_sends_until_credit_runs_out_then_paces() {
        let mut f = flow(LossRecoveryKind::Sack, 3 * MSS as u64);
        // EQDS: two packets of unsolicited credit.
        f.tx = Some(Box::new(Sender::new(
            LossRecoveryKind::Sack,
            3 * MSS as u64,
            MSS,
            0,
            3,
            SimTime::from_us(100),
            false,
            Some(2),
        )));
        let now = SimTime::from_us(1);
        let mut sent = vec![];
        while let Transmit::Ready(n) = f.poll_transmit(now, MSS) {
            f.on_transmit(n, now, n.payload + 62, None);
            sent.push(n.seq);
        }
        // Credit for two packets: the third waits.
        assert_eq!(sent, vec![0, 1]);
        assert_eq!(f.poll_transmit(now, MSS), Transmit::Blocked);
        assert_eq!(f.data_packets_sent, 2);
        // A credit lets one more go; with a rate cap the next one is paced.
        f.on_credit(now);
        let share = Some(BitsPerSec::from_gbps(8.0));
        let Transmit::Ready(n) = f.poll_transmit(now, MSS) else {
            panic!("credit given")
        };
        f.on_transmit(n, now, 1000, share);
        // 1000 bytes at 8 Gb/s: 1 us.
        assert_eq!(
            f.poll_transmit(now, MSS),
            Transmit::PacedUntil(SimTime::from_us(2))
        );
        // Everything acknowledged: nothing more to send.
        for x in 0..3 {
            f.on_ack(&ack_of(&data(x, PacketKind::Data, false), x, false), now);
        }
        assert_eq!(
            f.poll_transmit(SimTime::from_us(5), MSS),
            Transmit::Finished
        );
    }
}
