//! The hosts: NIC scheduling (the round-robin over flows, pacing, the EQDS credit pacer), flow
//! starts and timers, and what a host does with each packet it receives (data, ACKs, NACKs,
//! credits). Host-side load balancing lives here; the flows' transport state machines answer
//! what to send and reply, and the fabric carries what the NIC puts on the wire.

use std::collections::VecDeque;

use super::fabric::Fabric;
use super::telemetry::PathLog;
use super::{Cx, Event};
use crate::ids::{FlowId, HostId, PortId};
use crate::lb::port::{self as port_lb, PortCtx, PortLb, PATH_MASK};
use crate::lb::{AckInfo, HostLbs, HostSetup};
use crate::net::{Packet, PacketKind, Topology};
use crate::rng::Stream;
use crate::scenario::Scenario;
use crate::time::{BitsPerSec, SimTime};
use crate::transport::cc::CcKind;
use crate::transport::endpoint::Transmit;
use crate::transport::Flow;

struct Host {
    /// Flows with data to send, served round-robin.
    active: VecDeque<FlowId>,
    /// Earliest time the constant-rate pacer lets the next data packet go.
    next_send: SimTime,
    wake_pending: bool,
    /// When the pending wake-up is due; one superseded by an earlier wake-up is ignored.
    wake_at: SimTime,
    /// EQDS: flows this receiver still owes credit, served round-robin by the credit pacer
    /// (each flow's count is its `pulls_left`).
    pulls: VecDeque<FlowId>,
    next_pull: SimTime,
    pull_pending: bool,
    /// PFC: `next_send` as it was when the ToR paused the NIC (which parks `next_send` far
    /// beyond the run, so that the NIC pulls no data and `try_send` needs no check).
    paused_send: SimTime,
    /// PFC: how many of the host's ports are paused (the NIC pulls no data while any is).
    paused_ports: u16,
}

/// The NIC of a host with several ports keeps a transmit queue per port and pulls the next
/// packet while some port is idle and none holds more than this many packets' time ahead: a
/// packet whose port (its entropy's choice) is busy waits there, and a flow held to one port
/// cannot flood it.
const NIC_QUEUE_PACKETS: u64 = 4;

/// Hosts with several ports (`Topology::single_homed` is false): per host port its pacer,
/// its pacing rate and how far ahead its queue may run. Which port a packet takes is the
/// fabric's (`Fabric::host_port`).
struct MultiPort {
    next_send: Vec<SimTime>,
    pace: Vec<BitsPerSec>,
    ahead: Vec<SimTime>,
    /// Per flow: its destination shares its NVLink domain (it leaves by a scale-up port).
    scale_up: Vec<bool>,
    /// Per host: its ring's flows that leave by a scale-up port. A GPU's NVLink and NIC are
    /// separate links fed by separate copy engines: a backlog on one does not hold the other.
    scale_up_in_ring: Vec<u32>,
}

impl MultiPort {
    fn new(sc: &Scenario) -> MultiPort {
        let topo = &sc.topology;
        let st = &sc.settings;
        let n = topo.switch_ports().start;
        let mtu = (st.packet.payload_bytes + st.packet.header_bytes) as u64;
        let rate = |p: usize| topo.links[p].rate;
        let pace: Vec<BitsPerSec> = (0..n)
            .map(|p| crate::stats::bound::pace_rate(rate(p), st.rate_coef).unwrap_or(rate(p)))
            .collect();
        MultiPort {
            next_send: vec![SimTime::ZERO; n],
            ahead: (0..n)
                .map(|p| rate(p).serialization(NIC_QUEUE_PACKETS * mtu))
                .collect(),
            pace,
            scale_up: sc
                .flows
                .iter()
                .map(|f| topo.same_domain(f.src, f.dst))
                .collect(),
            scale_up_in_ring: vec![0; topo.hosts as usize],
        }
    }

    /// When host `h` may pull its next packet for the network (`.0`) and for its scale-up
    /// domain (`.1`): some port idle and its pacer allowing, and none of that kind's ports
    /// running further ahead than its limit.
    fn ready(
        &self,
        fabric: &mut Fabric,
        topo: &Topology,
        h: HostId,
        now: SimTime,
    ) -> (SimTime, SimTime) {
        let mut idle = SimTime::MAX;
        let mut drained = [SimTime::ZERO; 2];
        let net_end = topo.host_net_ports(h).end;
        for p in topo.host_ports(h) {
            let port = &mut fabric.ports[p];
            port.sync(now);
            idle = idle.min(port.busy_until.max(self.next_send[p]));
            // The pacer's backlog counts as queued: paced on average, bursts of a few.
            let queued_until = port.busy_until.max(self.next_send[p]);
            let d = &mut drained[(p >= net_end) as usize];
            *d = (*d).max(SimTime(
                queued_until.ps().saturating_sub(self.ahead[p].ps()),
            ));
        }
        (idle.max(drained[0]), idle.max(drained[1]))
    }

    /// The earlier of `ready`'s two times among the kinds host `h`'s ring holds flows of.
    fn ready_any(&self, ready: (SimTime, SimTime), h: HostId, ring: usize) -> SimTime {
        let up = self.scale_up_in_ring[h.idx()] as usize;
        match (ring > up, up > 0) {
            (true, true) => ready.0.min(ready.1),
            (false, true) => ready.1,
            _ => ready.0,
        }
    }

    /// Flow `f` joins (`+1`) or leaves (`-1`) host `h`'s ring.
    fn count(&mut self, h: HostId, f: FlowId, joins: bool) {
        if self.scale_up[f.idx()] {
            let c = &mut self.scale_up_in_ring[h.idx()];
            *c = if joins { *c + 1 } else { *c - 1 };
        }
    }
}

impl MultiPort {
    /// `entropy` stamped with the port the host's port policy chooses for a packet of flow `f`
    /// (identity `ident`) to `dst`; unchanged when the destination shares its NVLink domain.
    fn choose_port(
        &self,
        pl: &mut PortLb,
        e: &Env,
        (h, f, ident): (HostId, FlowId, u64),
        dst: HostId,
        entropy: u32,
        rng: &mut crate::rng::SimRng,
    ) -> u32 {
        if e.topo.same_domain(h, dst) {
            return entropy;
        }
        let net = e.topo.host_net_ports(h);
        let n = net.len().min(port_lb::MAX_PORTS);
        let mut free_at = [SimTime::ZERO; port_lb::MAX_PORTS];
        for (k, p) in net.clone().take(n).enumerate() {
            free_at[k] = e.fabric.ports[p].busy_until.max(self.next_send[p]);
        }
        let cx = PortCtx {
            host: h,
            flow: f,
            ident,
            now: e.cx.now,
            ports: &e.fabric.ports[net.start..net.start + n],
            free_at: &free_at[..n],
        };
        port_lb::stamp(entropy, pl.choose(&cx, rng))
    }
}

/// Per-flow sending caps (failure-aware rates), if the control plane keeps them.
pub(super) type Rates<'a> = Option<&'a [BitsPerSec]>;

/// What a host's handlers touch besides the hosts: the event context, the fabric their NICs
/// feed (and its topology), the flows, and the per-flow rate caps.
pub(super) struct Env<'a> {
    pub cx: &'a mut Cx,
    pub topo: &'a Topology,
    pub fabric: &'a mut Fabric,
    pub flows: &'a mut [Flow],
    pub rates: Rates<'a>,
}

/// What receiving one packet asks of the other parts, in this order.
pub(super) struct Received {
    /// The flow's receive (true) or send (false) side completed: its triggers fire.
    pub done: Option<(FlowId, bool)>,
    /// The tail-loss probe is due sooner than the flow's pending timer event: schedule one then.
    pub timer: Option<(FlowId, SimTime)>,
    /// An ACK, NACK or credit may let the flow send again.
    pub wake: Option<FlowId>,
    /// ... and the ACK shortened the gap its pacer holds the next packet for.
    pub repaced: bool,
}

pub(super) struct Hosts {
    hosts: Vec<Host>,
    lbs: HostLbs,
    mss: u32,
    header: u32,
    ack_bytes: u32,
    /// Every host's NIC pacer: line rate x `rate_coef`.
    pace_rate: BitsPerSec,
    /// No-ACK time after which a host policy hears `on_timeout`.
    rto: SimTime,
    /// The idealized sender's completion timer: a sender whose packets cover its message and
    /// that hears neither the completion nor any ACK for this long (the fabric's longest base
    /// round trip) takes every unanswered packet as lost and sends as many new ones.
    probe_after: SimTime,
    /// Flows keep a retransmission / no-progress timer.
    timers: bool,
    /// Starts each flow still waits for (`Dependencies::waits`; empty when none waits twice).
    start_waits: Vec<u32>,
    /// EQDS: receivers pace credits, a gap apart.
    eqds: bool,
    pull_gap: SimTime,
    /// DCQCN: a receiver's least gap between congestion notifications of a flow.
    cnp_gap: Option<SimTime>,
    /// `Stream::FlowPath`: each flow's per-packet path draws.
    path_base: u64,
    /// Each flow's identity (`workload::flow_identities`), naming its path stream.
    idents: Vec<u64>,
    /// Telemetry: the entropies sampled flows sent in the current interval (None: off).
    pub(super) paths: Option<Box<PathLog>>,
    /// A partitioned run: the hosts this partition owns (None: all). The control plane's
    /// replicated handlers wake only these; another partition wakes its own.
    pub(super) owned: Option<Vec<bool>>,
    /// Hosts with several ports (None: one each, port h).
    multi: Option<Box<MultiPort>>,
    /// The host-side port policy (None: the scheme's switch policy chooses, at the fabric).
    port_lb: Option<Box<PortLb>>,
    /// What of an echoed entropy host policies see: the path without a port policy's stamp.
    path_mask: u32,
}

impl Hosts {
    pub(super) fn new(sc: &Scenario, pace_rate: BitsPerSec) -> Hosts {
        let st = &sc.settings;
        let topo = &sc.topology;
        let pk = &st.packet;
        let hosts = (0..topo.hosts)
            .map(|_| Host {
                active: VecDeque::new(),
                next_send: SimTime::ZERO,
                wake_pending: false,
                wake_at: SimTime::ZERO,
                pulls: VecDeque::new(),
                next_pull: SimTime::ZERO,
                pull_pending: false,
                paused_send: SimTime::ZERO,
                paused_ports: 0,
            })
            .collect();
        let setup = HostSetup {
            topology: topo,
            config: &st.load_balancing,
            trimming: st.loss_recovery == crate::transport::LossRecoveryKind::Trim,
            seed: st.seed,
        };
        let idents = crate::workload::flow_identities(&sc.flows);
        let lbs = HostLbs::new(
            sc.scheme,
            sc.flows
                .iter()
                .zip(&idents)
                .map(|(f, &i)| (f.src, f.dst, i)),
            &setup,
        );
        let port_lb = st
            .load_balancing
            .port_info()
            .filter(|_| !topo.single_homed())
            .and_then(|p| {
                let o = st.load_balancing.port_options(p);
                PortLb::new(p.name, &o, topo.hosts as usize, sc.flows.len())
            })
            .map(Box::new);
        Hosts {
            hosts,
            lbs,
            mss: pk.payload_bytes,
            header: pk.header_bytes,
            ack_bytes: pk.ack_bytes,
            pace_rate,
            rto: sc.rto,
            probe_after: longest_base_rtt(sc),
            timers: st.reliable() || !sc.failures.is_empty(),
            start_waits: sc.deps.waits.clone(),
            eqds: st.cc == CcKind::Eqds,
            pull_gap: BitsPerSec(
                ((topo.host_rate.0 as f64) * st.eqds.pull_rate)
                    .round()
                    .max(1.0) as u64,
            )
            .serialization((pk.payload_bytes + pk.header_bytes) as u64),
            cnp_gap: (st.cc == CcKind::Dcqcn).then_some(st.cnp_interval),
            path_base: crate::rng::stream_base(st.seed, Stream::FlowPath),
            idents,
            paths: None,
            owned: None,
            multi: (!topo.single_homed()).then(|| Box::new(MultiPort::new(sc))),
            path_mask: if port_lb.is_some() {
                PATH_MASK
            } else {
                u32::MAX
            },
            port_lb,
        }
    }

    /// The port host `h` sends the packet in slot `i` on.
    #[inline(always)]
    fn port_for(&self, e: &mut Env, h: HostId, i: u32) -> PortId {
        match &self.multi {
            None => PortId(h.0),
            Some(_) => e.fabric.host_port(e.cx, e.topo, h, i),
        }
    }

    /// The fast path's timer: the host policy's no-ACK timeout (with failures) and the completion
    /// timer of a sender whose packets cover its message, whichever is due first.
    fn on_fast_timer(&mut self, e: &mut Env, f: FlowId) {
        let now = e.cx.now;
        let flow = &mut e.flows[f.idx()];
        if flow.sender_done || now != flow.timer_at {
            return;
        }
        let probe = flow
            .covered(self.mss)
            .then(|| flow.completion_due(self.probe_after));
        let policy = self.timers.then(|| flow.last_ack + self.rto);
        let Some(due) = probe.into_iter().chain(policy).min() else {
            return;
        };
        if now < due {
            e.cx.push(flow.arm_timer(due), Event::FlowTimer(f));
            return;
        }
        let mut next = policy;
        if policy.is_some_and(|d| d <= now) {
            flow.timeouts += 1;
            next = Some(now + self.rto);
            self.lbs.on_timeout(f, now);
        }
        let flow = &mut e.flows[f.idx()];
        if probe.is_some_and(|d| d <= now) {
            // As a retransmission timeout declares everything outstanding lost; an ACK that
            // still comes for one of them takes its hole back. The timer is armed again when
            // the new packets have gone and the sender stops.
            flow.give_up_outstanding();
        }
        if let Some(at) = next {
            e.cx.push(flow.arm_timer(at), Event::FlowTimer(f));
        }
        self.wake_flow(e, f, false);
    }

    /// Host `h` looks at its ring at `cx.now` (its flows' rates changed).
    pub(super) fn schedule_wake(&mut self, cx: &mut Cx, h: HostId) {
        if self.owned.as_ref().is_some_and(|o| !o[h.idx()]) {
            return;
        }
        let host = &mut self.hosts[h.idx()];
        host.wake_pending = true;
        host.wake_at = cx.now;
        cx.push(cx.now, Event::HostWake(h));
    }

    /// PFC: host `h`'s ToR paused its NIC (`paused`), which then pulls no data from its flows
    /// (control packets still go), or let it go, and the host may send again.
    #[inline(never)]
    pub(super) fn on_nic_pause(&mut self, cx: &mut Cx, h: HostId, paused: bool) {
        let host = &mut self.hosts[h.idx()];
        if paused {
            host.paused_ports += 1;
            if host.paused_ports == 1 {
                host.paused_send = host.next_send;
                host.next_send = crate::net::Port::UNSCHEDULED;
            }
            return;
        }
        host.paused_ports -= 1;
        if host.paused_ports > 0 {
            return;
        }
        host.next_send = host.paused_send;
        if !host.active.is_empty() {
            self.schedule_wake(cx, h);
        }
    }

    pub(super) fn on_flow_start(&mut self, e: &mut Env, f: FlowId) {
        if e.flows[f.idx()].started.is_some() {
            return;
        }
        // A flow gated by several triggers starts at the last of them.
        if let Some(w) = self.start_waits.get_mut(f.idx()).filter(|w| **w > 1) {
            *w -= 1;
            return;
        }
        let flow = &mut e.flows[f.idx()];
        if !flow.start(e.cx.now) {
            return;
        }
        let src = flow.src;
        let rto = flow.tx.as_ref().map_or(self.rto, |t| t.rto());
        self.hosts[src.idx()].active.push_back(f);
        if let Some(m) = &mut self.multi {
            m.count(src, f, true);
        }
        // The NIC picks once every flow starting at this instant has joined its ring (a wake-up
        // ranks after them), so flows starting together take turns from their first packet:
        // picking at once gave the first of them, alone on an idle NIC, two turns in a row.
        let host = &self.hosts[src.idx()];
        if !(host.wake_pending && host.wake_at <= e.cx.now) {
            self.schedule_wake(e.cx, src);
        }
        if self.timers {
            let at = e.flows[f.idx()].arm_timer(e.cx.now + rto);
            e.cx.push(at, Event::FlowTimer(f));
        }
    }

    /// The NIC went idle or the pacer allows the next packet.
    #[inline]
    pub(super) fn on_wake(&mut self, e: &mut Env, h: HostId) {
        let host = &mut self.hosts[h.idx()];
        // A wake-up superseded by an earlier one has been served already.
        if host.wake_pending && host.wake_at == e.cx.now {
            host.wake_pending = false;
            self.try_send(e, h);
        }
    }

    /// The flow's timer: after a whole timeout without an ACK, the host policy hears
    /// `on_timeout` and loss recovery declares everything outstanding lost. Re-arms itself until
    /// the flow is done.
    pub(super) fn on_flow_timer(&mut self, e: &mut Env, f: FlowId) {
        if e.flows[f.idx()].tx.is_none() {
            return self.on_fast_timer(e, f);
        }
        let now = e.cx.now;
        let flow = &mut e.flows[f.idx()];
        let Some(due) = flow.poll_timeout(self.rto) else {
            return;
        };
        if now != flow.timer_at {
            return; // superseded by a sooner event (a tail-loss probe)
        }
        if now < due {
            e.cx.push(flow.arm_timer(due), Event::FlowTimer(f));
            return;
        }
        // A probe is not a loss: the host's policy hears only real timeouts.
        if !flow.probe_due() {
            self.lbs.on_timeout(f, now);
        }
        let flow = &mut e.flows[f.idx()];
        let next = flow.on_timeout(now, self.rto);
        e.cx.push(flow.arm_timer(next), Event::FlowTimer(f));
        self.wake_flow(e, f, false);
    }

    /// Puts a flow that left its host's ring (window, credit or nothing to send) back in it;
    /// `repaced`: its pacer now lets it go sooner, which the host's pending wake-up may not cover.
    pub(super) fn wake_flow(&mut self, e: &mut Env, f: FlowId, repaced: bool) {
        let flow = &mut e.flows[f.idx()];
        let src = flow.src;
        if flow.rejoin_ring() {
            self.hosts[src.idx()].active.push_back(f);
            if let Some(m) = &mut self.multi {
                m.count(src, f, true);
            }
        } else if !(repaced && flow.in_ring) {
            return;
        }
        self.try_send(e, src);
    }

    /// The credit pacer allows the next pull.
    pub(super) fn on_pull_wake(&mut self, e: &mut Env, h: HostId) {
        self.hosts[h.idx()].pull_pending = false;
        self.try_pull(e, h);
    }

    /// EQDS: a packet of flow `f` reached its receiver `h`. The first tells the receiver the
    /// sender's backlog, which it then pulls at its pacer's rate whatever arrives (EQDS's
    /// receiver credits senders with backlog; one credit per arrival held the credit in flight
    /// to the unsolicited window). A trimmed header asks for one more, served first.
    #[cold]
    fn owe_pulls(&mut self, e: &mut Env, h: HostId, f: FlowId, packet: &Packet) {
        let flow = &mut e.flows[f.idx()];
        flow.pull_entropy = packet.entropy;
        let host = &mut self.hosts[h.idx()];
        if packet.kind == PacketKind::Header {
            flow.pulls_left = flow.pulls_left.saturating_add(1);
            if flow.pull_queued {
                // Retransmissions first: to the ring's front.
                if let Some(i) = host.pulls.iter().position(|&g| g == f) {
                    host.pulls.remove(i);
                }
            }
            host.pulls.push_front(f);
            flow.pull_queued = true;
        } else if !flow.pull_queued && flow.pulls_left > 0 {
            host.pulls.push_back(f);
            flow.pull_queued = true;
        }
        self.try_pull(e, h);
    }

    /// EQDS: sends the receiver's next credit if its pacer allows, else waits for it.
    fn try_pull(&mut self, e: &mut Env, h: HostId) {
        let now = e.cx.now;
        let host = &mut self.hosts[h.idx()];
        if host.pull_pending || host.pulls.is_empty() {
            return;
        }
        if host.next_pull > now {
            host.pull_pending = true;
            e.cx.push(host.next_pull, Event::PullWake(h));
            return;
        }
        while let Some(f) = host.pulls.pop_front() {
            let flow = &mut e.flows[f.idx()];
            if flow.finish.is_some() || flow.pulls_left == 0 {
                flow.pull_queued = false;
                continue;
            }
            flow.pulls_left -= 1;
            if flow.pulls_left > 0 {
                host.pulls.push_back(f);
            } else {
                flow.pull_queued = false;
            }
            let entropy = flow.pull_entropy;
            let pull = Packet {
                flow: f,
                src: h,
                dst: flow.src,
                seq: 0,
                xmit: 0,
                entropy,
                sent_at: now,
                wire_bytes: self.ack_bytes as u16,
                payload: 0,
                kind: PacketKind::Pull,
                ecn: false,
                done: false,
                cnp: false,
            };
            host.next_pull = now + self.pull_gap;
            if !host.pulls.is_empty() {
                host.pull_pending = true;
                e.cx.push(host.next_pull, Event::PullWake(h));
            }
            e.cx.counters.acks_sent += 1;
            let i = e.fabric.slots.insert(pull);
            let port = self.port_for(e, h, i);
            e.fabric.inject(e.cx, port, i, pull.wire_bytes, false);
            return;
        }
    }

    /// Lets host `h` put its next data packet on its NIC if the NIC is idle and the pacer allows;
    /// otherwise makes sure a wake-up is pending for when both will.
    pub(super) fn try_send(&mut self, e: &mut Env, h: HostId) {
        let now = e.cx.now;
        let host = &mut self.hosts[h.idx()];
        if host.active.is_empty() {
            return;
        }
        let mut by_kind = None;
        let ready = match &self.multi {
            None => {
                let p = &mut e.fabric.ports[h.idx()];
                p.sync(now);
                p.busy_until.max(host.next_send)
            }
            Some(m) => {
                let r = m.ready(e.fabric, e.topo, h, now);
                by_kind = Some(r);
                m.ready_any(r, h, host.active.len()).max(host.next_send)
            }
        };
        // A wake-up already due by then covers this; a later one (a paced flow's) does not.
        if host.wake_pending && host.wake_at <= ready.max(now) {
            return;
        }
        if ready > now {
            host.wake_pending = true;
            host.wake_at = ready;
            e.cx.push(ready, Event::HostWake(h));
            return;
        }
        // Round-robin over flows that may send; finished ones, and ones that their window,
        // credit or loss recovery holds back, leave the ring here (an ACK, credit or timeout
        // puts them back). A flow whose own pacer holds it back is passed over.
        let mut earliest = SimTime::MAX;
        let mut tries = host.active.len();
        let (f, next) = loop {
            if tries == 0 {
                if earliest < SimTime::MAX {
                    host.wake_pending = true;
                    host.wake_at = earliest;
                    e.cx.push(earliest, Event::HostWake(h));
                }
                return;
            }
            tries -= 1;
            let Some(f) = host.active.pop_front() else {
                return;
            };
            // A flow whose kind of port (network or NVLink) is backed up waits its turn.
            if let (Some(m), Some(r)) = (&self.multi, by_kind) {
                let at = if m.scale_up[f.idx()] { r.1 } else { r.0 };
                if at > now {
                    earliest = earliest.min(at);
                    host.active.push_back(f);
                    continue;
                }
            }
            match e.flows[f.idx()].poll_transmit(now, self.mss) {
                Transmit::Ready(next) => break (f, next),
                Transmit::PacedUntil(t) => {
                    earliest = earliest.min(t);
                    host.active.push_back(f);
                }
                Transmit::Finished | Transmit::Blocked => {
                    e.flows[f.idx()].leave_ring();
                    if let Some(m) = &mut self.multi {
                        m.count(h, f, false);
                    }
                }
                Transmit::Covered => {
                    if let Some(m) = &mut self.multi {
                        m.count(h, f, false);
                    }
                    let flow = &mut e.flows[f.idx()];
                    flow.leave_ring();
                    flow.covered_at = now;
                    let due = flow.completion_due(self.probe_after);
                    // A pending timer due sooner looks again then.
                    if flow.timer_at <= now || flow.timer_at > due {
                        e.cx.push(flow.arm_timer(due), Event::FlowTimer(f));
                    }
                }
            }
        };
        host.active.push_back(f);
        let flow = &mut e.flows[f.idx()];
        let wire = next.payload + self.header;
        // The flow's own stream, named by its identity and indexed by its packet count: other
        // flows never shift it.
        let mut draws =
            crate::rng::packet_rng(self.path_base, self.idents[f.idx()], flow.data_packets_sent);
        let entropy = self.lbs.next_entropy(f, now, &mut draws);
        if let Some(log) = &mut self.paths {
            log.note(f, entropy);
        }
        let pkt = Packet {
            flow: f,
            src: flow.src,
            dst: flow.dst,
            seq: next.seq,
            xmit: flow.next_xmit(),
            entropy,
            sent_at: now,
            wire_bytes: wire as u16,
            payload: next.payload as u16,
            kind: PacketKind::Data,
            ecn: false,
            done: false,
            cnp: false,
        };
        let share = e.rates.map(|r| r[f.idx()]);
        flow.on_transmit(next, now, wire, share);
        let mut pkt = pkt;
        if let (Some(pl), Some(m)) = (&mut self.port_lb, &self.multi) {
            let ident = self.idents[f.idx()];
            pkt.entropy = m.choose_port(pl, e, (h, f, ident), pkt.dst, pkt.entropy, &mut draws);
        }
        e.cx.counters.data_sent += 1;
        let i = e.fabric.slots.insert(pkt);
        let ready = match &mut self.multi {
            None => {
                let port = PortId(h.0);
                host.next_send = now + self.pace_rate.serialization(wire as u64);
                e.fabric.admit(e.cx, port, i, pkt.wire_bytes, true);
                e.fabric.ports[port.idx()].busy_until.max(host.next_send)
            }
            Some(m) => {
                let port = e.fabric.host_port(e.cx, e.topo, h, i);
                let p = port.idx();
                m.next_send[p] = m.next_send[p].max(now) + m.pace[p].serialization(wire as u64);
                e.fabric.inject(e.cx, port, i, pkt.wire_bytes, true);
                // An idle port may have been free since before now: look again now.
                let r = m.ready(e.fabric, e.topo, h, now);
                m.ready_any(r, h, host.active.len())
                    .max(host.next_send)
                    .max(now)
            }
        };
        let host = &mut self.hosts[h.idx()];
        // The round-robin's next flow sends at the wake-up: fetch its line now.
        if let Some(&g) = host.active.front() {
            crate::engine::prefetch(&e.flows[g.idx()].tx);
        }
        host.wake_pending = true;
        host.wake_at = ready;
        e.cx.push(ready, Event::HostWake(h));
    }

    /// A trimmed header came back to its sender (return-to-sender): to the host policy a
    /// congested path, to the flow a NACK. Rare, so kept out of `receive`'s inlined body.
    #[cold]
    #[inline(never)]
    fn on_returned(&mut self, got: &mut Received, flow: &mut Flow, packet: &Packet, now: SimTime) {
        let f = packet.flow;
        self.lbs.on_ack(
            f,
            AckInfo {
                entropy: packet.entropy & self.path_mask,
                ecn: true,
                loss: true,
                sent_at: packet.sent_at,
                now,
            },
        );
        if flow.on_returned(packet, now) {
            got.done = Some((f, false));
        }
        got.timer = flow.sooner_timer(self.rto).map(|t| (f, t));
        got.wake = Some(f);
    }

    /// Host `h` takes the packet in slot `i`: data is handed to its flow's receiver (and
    /// answered), ACKs, NACKs and credits to its sender and host policy.
    #[inline]
    pub(super) fn receive(&mut self, e: &mut Env, h: HostId, i: u32) -> Received {
        let now = e.cx.now;
        let packet = *e.fabric.slots.pkt(i);
        if !packet.kind.is_forward() {
            e.fabric.slots.release(i);
        }
        let f = packet.flow;
        let flow = &mut e.flows[f.idx()];
        let mut got = Received {
            done: None,
            timer: None,
            wake: None,
            repaced: false,
        };
        match packet.kind {
            PacketKind::Data | PacketKind::Header => {
                debug_assert_eq!(packet.dst, h);
                e.cx.counters.data_delivered += 1;
                let r = flow.on_data(&packet, now, self.cnp_gap);
                if !r.fresh {
                    e.cx.counters.discarded += 1;
                }
                // The reply keeps the data's flow, transmission, entropy, ECN mark and send time.
                if let Some((kind, seq)) = r.reply {
                    let mut ack = packet;
                    ack.kind = kind;
                    ack.seq = seq;
                    ack.src = h;
                    ack.dst = packet.src;
                    ack.wire_bytes = self.ack_bytes as u16;
                    ack.payload = r.sack;
                    ack.done = flow.finish.is_some();
                    ack.cnp = r.cnp;
                    e.cx.counters.acks_sent += 1;
                    *e.fabric.slots.pkt_mut(i) = ack;
                    let data = ack.kind == PacketKind::Data;
                    let port = self.port_for(e, h, i);
                    e.fabric.inject(e.cx, port, i, ack.wire_bytes, data);
                } else {
                    e.fabric.slots.release(i);
                }
                if self.eqds && !r.complete {
                    self.owe_pulls(e, h, f, &packet);
                }
                if r.just_done {
                    got.done = Some((f, true));
                }
            }
            PacketKind::Ack => {
                e.cx.counters.acks_delivered += 1;
                if let Some(pl) = &mut self.port_lb {
                    pl.on_ack(f, port_lb::stamped_port(packet.entropy), packet.ecn, now);
                }
                self.lbs.on_ack(
                    f,
                    AckInfo {
                        entropy: packet.entropy & self.path_mask,
                        ecn: packet.ecn,
                        loss: false,
                        sent_at: packet.sent_at,
                        now,
                    },
                );
                if flow.on_ack(&packet, now) {
                    got.done = Some((f, false));
                }
                got.repaced = flow.repace(now);
                got.timer = flow.sooner_timer(self.rto).map(|t| (f, t));
                // An idealized sender still covered has nothing to send for this ACK.
                if flow.tx.is_some() || !flow.covered(self.mss) {
                    got.wake = Some(f);
                }
            }
            PacketKind::Nack => {
                e.cx.counters.acks_delivered += 1;
                // To a host policy a NACK is a congested path: its queue overflowed.
                if let Some(pl) = &mut self.port_lb {
                    pl.on_loss(f, port_lb::stamped_port(packet.entropy), now);
                }
                self.lbs.on_ack(
                    f,
                    AckInfo {
                        entropy: packet.entropy & self.path_mask,
                        ecn: true,
                        loss: true,
                        sent_at: packet.sent_at,
                        now,
                    },
                );
                if flow.on_nack(&packet, now) {
                    got.done = Some((f, false));
                }
                got.timer = flow.sooner_timer(self.rto).map(|t| (f, t));
                got.wake = Some(f);
            }
            PacketKind::Returned => {
                e.cx.counters.acks_delivered += 1;
                if let Some(pl) = &mut self.port_lb {
                    pl.on_loss(f, port_lb::stamped_port(packet.entropy), now);
                }
                self.on_returned(&mut got, flow, &packet, now);
            }
            PacketKind::Pull => {
                e.cx.counters.acks_delivered += 1;
                flow.on_credit(now);
                got.wake = Some(f);
            }
        }
        got
    }
}

/// The base round trip of the fabric's longest path (first host to last).
fn longest_base_rtt(sc: &Scenario) -> SimTime {
    let hosts = sc.topology.hosts;
    if hosts < 2 {
        return SimTime(1);
    }
    super::base_rtt(
        &sc.topology,
        HostId(0),
        HostId(hosts - 1),
        &sc.settings.packet,
    )
    .max(SimTime(1))
}
