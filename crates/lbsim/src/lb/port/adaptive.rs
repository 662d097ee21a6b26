//! `adaptive`: each packet takes, among its flow's ports not held, the one that can start it
//! first (as `idle`), ties in turn; a flow holds for a while a port whose packets came back
//! CE-marked (`port_hold_us`) or were lost or trimmed (`port_loss_hold_us`), as REPS forgets an
//! entropy that came back marked; with every port held, the one released first. This is what the host can learn end to end about a plane: a congested or degraded
//! plane beyond the NIC (a failed spine, a slow link) loses the flow's traffic until it clears.

use super::{PortCtx, PortInfo, PortPolicy, MAX_PORTS};
use crate::ids::FlowId;
use crate::lb::config::{Opt, Options};
use crate::rng::SimRng;
use crate::time::SimTime;

/// `load_balancing.port_hold_us`: how long a flow leaves a port out after a CE-marked ACK
/// (8 us: about two base round trips of a two-tier fabric).
pub const HOLD: Opt<SimTime> = Opt::micros("port_hold_us", 8.0);
/// `load_balancing.port_loss_hold_us`: how long after a loss or a trim (100 us).
pub const LOSS_HOLD: Opt<SimTime> = Opt::micros("port_loss_hold_us", 100.0);

pub const INFO: PortInfo = PortInfo {
    name: "adaptive",
    summary:
        "per packet, as idle, but a port whose ACKs came back marked or lost is left out a while",
    options: &[&HOLD.spec, &LOSS_HOLD.spec],
};

#[derive(Clone, Debug)]
pub struct Adaptive {
    hold: SimTime,
    loss_hold: SimTime,
    /// Per flow: the port its next packet tries first.
    next: Vec<u8>,
    /// Per flow and port: until when the port is left out (`MAX_PORTS` per flow).
    held: Vec<SimTime>,
}

impl Adaptive {
    pub fn new(o: &Options, flows: usize) -> Adaptive {
        Adaptive {
            hold: o.get(&HOLD),
            loss_hold: o.get(&LOSS_HOLD),
            next: vec![0; flows],
            held: vec![SimTime::ZERO; flows * MAX_PORTS],
        }
    }

    fn held_mut(&mut self, f: FlowId, port: usize) -> Option<&mut SimTime> {
        (port < MAX_PORTS).then(|| &mut self.held[f.idx() * MAX_PORTS + port])
    }
}

impl PortPolicy for Adaptive {
    fn choose(&mut self, cx: &PortCtx, _: &mut SimRng) -> usize {
        let n = cx.ports.len().min(MAX_PORTS);
        let held = &self.held[cx.flow.idx() * MAX_PORTS..][..n];
        let start = self.next[cx.flow.idx()] as usize % n;
        // Among the ports not held, the one that can start the packet first, ties in turn (as
        // `idle`: many flows of a host in step would otherwise all pick the same port and
        // leave the other idle); with every port held, the one released first.
        let free = |k: usize| cx.free_at[k].max(cx.now);
        let mut best: Option<usize> = None;
        for k in (start..n).chain(0..start) {
            if held[k] <= cx.now && best.is_none_or(|b| free(k) < free(b)) {
                best = Some(k);
            }
        }
        let best = best.unwrap_or_else(|| {
            (start..n)
                .chain(0..start)
                .min_by_key(|&k| held[k])
                .expect("a host has a port")
        });
        self.next[cx.flow.idx()] = ((best + 1) % n) as u8;
        best
    }

    fn on_ack(&mut self, f: FlowId, port: usize, ecn: bool, now: SimTime) {
        let until = now + self.hold;
        if let Some(h) = self.held_mut(f, port).filter(|_| ecn) {
            *h = (*h).max(until);
        }
    }

    fn on_loss(&mut self, f: FlowId, port: usize, now: SimTime) {
        let until = now + self.loss_hold;
        if let Some(h) = self.held_mut(f, port) {
            *h = (*h).max(until);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::HostId;
    use crate::net::Port;

    fn cx<'a>(ports: &'a [Port], free: &'a [SimTime], now: SimTime) -> PortCtx<'a> {
        PortCtx {
            host: HostId(0),
            flow: FlowId(0),
            ident: 0,
            now,
            ports,
            free_at: free,
        }
    }

    #[test]
    fn a_marked_port_is_left_out_for_its_hold_then_back_in_turn() {
        let mut p = Adaptive::new(&Options::port_defaults(&INFO), 1);
        let ports = crate::lb::testutil::ports(1000, &[0, 0, 0]);
        let free = [SimTime::ZERO; 3];
        let mut rng = crate::rng::rng_for(1, crate::rng::Stream::Switch, 0);
        let t = |us| SimTime::from_us(us);
        let seq: Vec<usize> = (0..4)
            .map(|_| p.choose(&cx(&ports, &free, t(0)), &mut rng))
            .collect();
        assert_eq!(seq, [0, 1, 2, 0]);
        p.on_ack(FlowId(0), 1, true, t(1));
        p.on_ack(FlowId(0), 2, false, t(1));
        // Port 1 held until 9 us: skipped at 2 us, back at 9 us.
        let seq: Vec<usize> = (0..3)
            .map(|_| p.choose(&cx(&ports, &free, t(2)), &mut rng))
            .collect();
        assert_eq!(seq, [2, 0, 2]);
        assert_eq!(p.choose(&cx(&ports, &free, t(9)), &mut rng), 0);
        assert_eq!(p.choose(&cx(&ports, &free, t(9)), &mut rng), 1);
        // Every port held: the one released first.
        p.on_loss(FlowId(0), 0, t(10));
        p.on_ack(FlowId(0), 1, true, t(10));
        p.on_ack(FlowId(0), 2, true, t(11));
        assert_eq!(p.choose(&cx(&ports, &free, t(12)), &mut rng), 1);
    }
}
