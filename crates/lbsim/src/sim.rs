//! The simulation: one owned world (arenas of ports, hosts, switches, flows and packets addressed by
//! typed ids), the event set, and the handlers that move packets.
//!
//! A packet hop is one event: its arrival at the far end of the link. FIFO ports compute departure
//! times when they accept a packet (see `net::port`), and only the head of each port's ring has a
//! pending arrival. Host NICs pull the next data packet from the host's round-robin flow
//! scheduler when they go idle (one wake-up event per data packet), so data never queues inside
//! a host and ACKs, which are put on the NIC as they are made, go ahead of data not yet started.

use std::collections::VecDeque;

use crate::engine::EventQueue;
use crate::failure::{self, Effect, Fault, Weights};
use crate::ids::{FlowId, HostId, NodeId, PortId, SwitchId};
use crate::lb::{AckInfo, HostLbs, PacketView, SwitchCtx, SwitchKind, SwitchLb};
use crate::net::{Packet, PacketKind, Port, Route, Slots};
use crate::rng::{rng_for, SimRng, Stream};
use crate::scenario::Scenario;
use crate::stats::{self, bound, FlowRecord, Summary};
use crate::time::{BitsPerSec, SimTime};
use crate::transport::cc::{AckSample, Cc, CcCtx, CcKind, LossKind};
use crate::transport::reliable::{Next, Receiver, Reply, Sender};
use crate::transport::{flow_key, Flow, LossRecoveryKind};
use crate::workload::FlowSpec;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Event {
    FlowStart(FlowId),
    /// The head of this port's ring has reached the far end of the link.
    Arrive(PortId),
    /// The host's NIC is idle and its pacer allows the next data packet.
    HostWake(HostId),
    /// A scheduled change of the fabric: an index into `Simulation::controls`.
    Control(u32),
    /// The flow's no-progress timer (a missing-ACK timeout for the host's policy).
    FlowTimer(FlowId),
    /// The host's credit pacer (EQDS) may send the next pull.
    PullWake(HostId),
}

/// A scheduled change of the fabric.
#[derive(Clone, Copy, Debug)]
enum Control {
    Fail(usize),
    Recover(usize),
    /// Routing learns the current state of failure `i`'s links.
    Converge(usize),
}

/// An event packed into 4 bytes (3-bit kind, 29-bit id) so heap entries stay 16 bytes.
#[derive(Clone, Copy, Debug)]
struct Packed(u32);

impl From<Packed> for u32 {
    #[inline(always)]
    fn from(p: Packed) -> u32 {
        p.0
    }
}

impl From<u32> for Packed {
    #[inline(always)]
    fn from(x: u32) -> Packed {
        Packed(x)
    }
}

const ID_BITS: u32 = 29;
const ID_MASK: u32 = (1 << ID_BITS) - 1;
const _: () = assert!(ID_MASK == crate::ids::MAX_EVENT_ID);

pub use crate::ids::MAX_EVENT_ID;

impl From<Event> for Packed {
    #[inline]
    fn from(e: Event) -> Packed {
        let (tag, id) = match e {
            Event::FlowStart(f) => (0, f.0),
            Event::Arrive(p) => (1, p.0),
            Event::HostWake(h) => (2, h.0),
            Event::Control(i) => (3, i),
            Event::FlowTimer(f) => (4, f.0),
            Event::PullWake(h) => (5, h.0),
        };
        debug_assert!(id <= ID_MASK);
        Packed((tag << ID_BITS) | id)
    }
}

impl From<Packed> for Event {
    #[inline]
    fn from(p: Packed) -> Event {
        let id = p.0 & ID_MASK;
        match p.0 >> ID_BITS {
            0 => Event::FlowStart(FlowId(id)),
            1 => Event::Arrive(PortId(id)),
            2 => Event::HostWake(HostId(id)),
            3 => Event::Control(id),
            4 => Event::FlowTimer(FlowId(id)),
            _ => Event::PullWake(HostId(id)),
        }
    }
}

struct Host {
    /// Flows with data to send, served round-robin.
    active: VecDeque<FlowId>,
    /// Earliest time the constant-rate pacer lets the next data packet go.
    next_send: SimTime,
    wake_pending: bool,
    /// EQDS: credits owed (flow, entropy of the packet that earned it), paced out in order.
    pulls: VecDeque<(FlowId, u32)>,
    next_pull: SimTime,
    pull_pending: bool,
}

struct Switch {
    lb: SwitchLb,
    rng: SimRng,
}

/// Counters for conservation checks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    pub data_sent: u64,
    pub data_delivered: u64,
    pub data_dropped: u64,
    pub acks_sent: u64,
    pub acks_delivered: u64,
    pub acks_dropped: u64,
    pub ecn_marks: u64,
    /// Packets (data or ACK) lost on failed links; included in the dropped counts.
    pub link_losses: u64,
    /// Packets dropped because converged routing had no path (included in the dropped counts).
    pub unroutable: u64,
    /// Data packets trimmed to their headers (still counted as data; delivered as headers).
    pub trimmed: u64,
    /// Data packets the receiver did not use: already held, or out of order under go-back-N.
    pub discarded: u64,
}

/// How often (in events) the run loop calls its observer: a power of two, so the check is a mask.
pub const OBSERVE_EVENTS: u64 = 1 << 16;

/// The run's progress, as handed to the observer of [`Simulation::run_observed`].
#[derive(Clone, Copy, Debug)]
pub struct Progress {
    /// Simulated time of the event just popped.
    pub now: SimTime,
    pub events: u64,
    pub completed: u64,
    pub flows: u64,
}

/// Where packets are when the run stops.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct InFlight {
    pub data: u64,
    pub acks: u64,
}

pub struct Simulation {
    sc: Scenario,
    now: SimTime,
    events: EventQueue<Packed>,
    event_count: u64,
    hops: u64,
    ports: Vec<Port>,
    /// The packets the ports hold.
    slots: Slots,
    hosts: Vec<Host>,
    switches: Vec<Switch>,
    flows: Vec<Flow>,
    host_lbs: HostLbs,
    mss: u32,
    header: u32,
    ack_bytes: u32,
    pace_rate: BitsPerSec,
    completed: u64,
    counters: Counters,
    ended: Option<SimTime>,
    /// The switch policy reads queue lengths.
    sync_groups: bool,
    controls: Vec<Control>,
    /// Routing's belief of each port's capacity (hundredths), updated on convergence.
    routing_cap: Vec<u32>,
    weights: Weights,
    routing_epoch: u32,
    /// Hosts per ToR (leaf): destination host -> destination ToR for weighted groups.
    hosts_per_tor: u32,
    /// No-ACK time after which a host policy hears `on_timeout`.
    rto: SimTime,
    /// Activations received by each trigger.
    trigger_counts: Vec<u32>,
    /// Per-flow sending rates (failure-aware idealized CC), recomputed when links fail or recover.
    flow_rates: Option<Vec<BitsPerSec>>,
    /// Each port's actual capacity (hundredths), for the failure-aware rates.
    actual_cap: Vec<u32>,
    lr: LossRecoveryKind,
    cc: CcKind,
    /// Switches trim instead of dropping data (NDP).
    trim: bool,
    trim_header: u16,
    /// Ports put control packets ahead of data (trimming, EQDS).
    prio: bool,
    ctrl_cap: u64,
    /// Alternates NDP's choice between trimming the arriving or the newest queued packet.
    trim_coin: bool,
    /// EQDS: a receiver's gap between credits.
    pull_gap: SimTime,
    /// DCQCN: a receiver's least gap between congestion notifications of a flow.
    cnp_interval: SimTime,
    /// Flows keep a retransmission / no-progress timer.
    timers: bool,
    /// RED marking: Kmax and the probability there (None: step marking at the threshold).
    red: Option<(u64, f64)>,
    red_salt: u64,
    /// `Stream::FlowPath`: each flow's per-packet path draws.
    path_base: u64,
}

/// Whether a data packet arriving at `p` now is CE-marked: above the threshold, always (step
/// marking) or with RED's probability rising to `pmax` at Kmax. The coin is drawn from the
/// port's own stream (the run's RED salt, the port and the count of packets it has accepted):
/// deterministic, with no RNG state per port, and traffic elsewhere never moves it.
#[inline]
fn marks(p: &Port, red: Option<(u64, f64)>, salt: u64, port: PortId) -> bool {
    let (q, k) = (p.queued_bytes, p.ecn_threshold_bytes);
    q > k
        && red.is_none_or(|(kmax, pmax)| {
            let draw = crate::rng::mix64(crate::rng::mix64(salt ^ port.0 as u64) ^ p.accepted());
            let coin = draw as f64 / 2f64.powi(64);
            q >= kmax || coin < pmax * (q - k) as f64 / (kmax - k) as f64
        })
}

/// What a flow's CC knows of its path: the idle round trip of a full packet and its ACK.
fn cc_ctx(
    topo: &crate::net::Topology,
    spec: &FlowSpec,
    line_rate: BitsPerSec,
    pk: &crate::net::config::PacketConfig,
    trimming: bool,
) -> CcCtx {
    let path = topo.path(spec.src, spec.dst);
    let mtu = pk.payload_bytes + pk.header_bytes;
    let ser: SimTime = path.rates.iter().fold(SimTime::ZERO, |t, r| {
        t + r.serialization(mtu as u64) + r.serialization(pk.ack_bytes as u64)
    });
    let base_rtt = ser + path.latency + path.latency;
    let bdp_wire = line_rate.0 as u128 * base_rtt.ps() as u128 / 8 / 1_000_000_000_000;
    CcCtx {
        base_rtt,
        line_rate,
        mss: pk.payload_bytes,
        mtu,
        hops: path.rates.len() as u32,
        bdp: (bdp_wire * pk.payload_bytes as u128 / mtu as u128) as u64,
        trimming,
    }
}

impl Simulation {
    pub fn new(sc: Scenario) -> Simulation {
        let st = &sc.settings;
        let seed = st.seed;
        let topo = &sc.topology;
        let buffer = st.buffer_bytes;
        let trim = st.loss_recovery == LossRecoveryKind::Trim;
        let prio = trim || st.cc == CcKind::Eqds;
        let ports = topo
            .links
            .iter()
            .map(|l| {
                let (buf, ecn) = match l.from {
                    // Host NICs never drop: the pacer only releases what the link can carry.
                    NodeId::Host(_) => (u64::MAX, u64::MAX),
                    NodeId::Switch(_) => (buffer, sc.ecn_threshold_bytes),
                };
                let mut p = Port::new(l.rate, l.latency, l.to, buf, ecn);
                p.prio = prio;
                p
            })
            .collect();
        let hosts = (0..topo.hosts)
            .map(|_| Host {
                active: VecDeque::new(),
                next_send: SimTime::ZERO,
                wake_pending: false,
                pulls: VecDeque::new(),
                next_pull: SimTime::ZERO,
                pull_pending: false,
            })
            .collect();
        let lb_cfg = &st.load_balancing;
        let switches = topo
            .switches
            .iter()
            .enumerate()
            .map(|(s, info)| {
                let ctx = SwitchCtx {
                    tier: info.tier,
                    index: info.index,
                    shape: topo.shape,
                    salt: crate::rng::derive_seed(seed, Stream::Salt, s as u64),
                };
                Switch {
                    lb: SwitchLb::new(sc.scheme.switch, &ctx, lb_cfg),
                    rng: rng_for(seed, Stream::Switch, s as u64),
                }
            })
            .collect();
        let pace_rate = BitsPerSec(((topo.host_rate.0 as f64) * st.rate_coef).round() as u64);
        let pace_rate = BitsPerSec(pace_rate.0.max(1));
        let pk = &st.packet;
        let lr = st.loss_recovery;
        let cc_kind = st.cc;
        let ccs = &st.ccs;
        let reliable = lr != LossRecoveryKind::IdealErasure || cc_kind != CcKind::Constant;
        let host_lbs = HostLbs::new(
            sc.scheme.host,
            sc.flows.iter().map(|f| (f.src, f.dst)),
            topo,
            lb_cfg,
            trim,
            seed,
        );
        let flows = sc
            .flows
            .iter()
            .map(|spec| {
                if !reliable {
                    return Flow::new(*spec, Cc::CONSTANT);
                }
                let cctx = cc_ctx(topo, spec, pace_rate, pk, lr == LossRecoveryKind::Trim);
                let mut flow = Flow::new(*spec, Cc::new(cc_kind, ccs, &cctx));
                let credit = (cc_kind == CcKind::Eqds).then(|| {
                    ((st.eqds.unsolicited_bdp * cctx.bdp as f64 / pk.payload_bytes as f64).ceil()
                        as u32)
                        .max(1)
                });
                flow.tx = Some(Box::new(Sender::new(
                    lr,
                    spec.size_bytes,
                    pk.payload_bytes,
                    st.erasure_extra_packets,
                    st.reorder_threshold,
                    sc.rto,
                    st.rto_backoff,
                    credit,
                )));
                flow.rx = Receiver::new(lr, spec.size_bytes, pk.payload_bytes).map(Box::new);
                flow
            })
            .collect();
        // Calendar buckets a quarter of the fastest link's ACK time: a few events each.
        let fastest = topo.links.iter().map(|l| l.rate.0).max().unwrap_or(1);
        let width = BitsPerSec(fastest)
            .serialization(st.packet.ack_bytes as u64)
            .ps()
            / 4;
        let mut events = EventQueue::with_bucket_ps(width);
        for (i, f) in sc.flows.iter().enumerate() {
            if !sc.deps.gated(i) {
                events.push(f.start, Event::FlowStart(FlowId(i as u32)).into());
            }
        }
        let mut controls = Vec::new();
        for (i, f) in sc.failures.iter().enumerate() {
            let mut at = |t: SimTime, c: Control| {
                events.push(t, Event::Control(controls.len() as u32).into());
                controls.push(c);
            };
            at(f.at, Control::Fail(i));
            if let Some(g) = sc.convergence {
                at(f.at + g, Control::Converge(i));
            }
            if let Some(r) = f.recover {
                at(r, Control::Recover(i));
                if let Some(g) = sc.convergence {
                    at(r + g, Control::Converge(i));
                }
            }
        }
        let hosts_per_tor = match topo.shape {
            crate::net::Shape::FatTree { k } => k / 2,
            crate::net::Shape::LeafSpine { hosts_per_leaf, .. } => hosts_per_leaf,
        };
        Simulation {
            mss: st.packet.payload_bytes,
            header: st.packet.header_bytes,
            ack_bytes: st.packet.ack_bytes,
            now: SimTime::ZERO,
            events,
            event_count: 0,
            hops: 0,
            ports,
            slots: Slots::new(),
            hosts,
            switches,
            flows,
            host_lbs,
            pace_rate,
            completed: 0,
            counters: Counters::default(),
            ended: None,
            sync_groups: !matches!(
                sc.scheme.switch,
                SwitchKind::Hash
                    | SwitchKind::RoundRobin
                    | SwitchKind::PlainRoundRobin
                    | SwitchKind::Random
                    | SwitchKind::Ofan
                    | SwitchKind::SourceRouted
            ),
            controls,
            routing_cap: vec![100; topo.links.len()],
            weights: Weights::default(),
            routing_epoch: 0,
            hosts_per_tor,
            rto: sc.rto,
            trigger_counts: vec![0; sc.deps.triggers.len()],
            flow_rates: None,
            actual_cap: vec![100; topo.links.len()],
            lr,
            cc: cc_kind,
            trim,
            trim_header: st.trim_header_bytes as u16,
            prio,
            ctrl_cap: st.control_buffer_bytes,
            trim_coin: false,
            pull_gap: BitsPerSec(
                ((topo.host_rate.0 as f64) * st.eqds.pull_rate)
                    .round()
                    .max(1.0) as u64,
            )
            .serialization((pk.payload_bytes + pk.header_bytes) as u64),
            cnp_interval: st.cnp_interval,
            timers: reliable || !sc.failures.is_empty(),
            red: st.red,
            red_salt: crate::rng::derive_seed(seed, Stream::Salt, u64::MAX),
            path_base: crate::rng::stream_base(seed, Stream::FlowPath),
            sc,
        }
    }

    /// Recomputes the failure-aware per-flow rates from the links' actual capacities.
    fn update_flow_rates(&mut self) {
        if !self.sc.settings.failure_aware_rate {
            return;
        }
        let shares = failure::flow_shares(&self.sc.topology, &self.sc.flows, &self.actual_cap);
        let line = self.pace_rate.0 as f64;
        let rates: Vec<BitsPerSec> = shares
            .iter()
            .map(|s| BitsPerSec((line * s).round() as u64))
            .collect();
        // A flow whose rate was zero (every path through a cut down) waits with no wake-up
        // scheduled; once its rate is positive again it may send at once.
        let now = self.now;
        for (i, r) in rates.iter().enumerate() {
            let flow = &mut self.flows[i];
            if r.0 > 0 && flow.next_send == SimTime::MAX {
                flow.next_send = now;
                let h = flow.src;
                self.hosts[h.idx()].wake_pending = true;
                self.events.push(now, Event::HostWake(h).into());
            }
        }
        self.flow_rates = Some(rates);
    }

    /// Runs until every flow has completed, or the end-time cap, or nothing is left to happen.
    pub fn run(&mut self) {
        self.run_observed(&mut |_| true);
    }

    /// Like [`Simulation::run`], and every [`OBSERVE_EVENTS`] events hands `observe` the run's
    /// progress; if it answers false the run stops there (returning true), and `summary()` and
    /// `flow_records()` report the state at that instant. Checking a counter every 2^16 events
    /// keeps the hot path as it was; the observer may read the wall clock, the model never does.
    pub fn run_observed(&mut self, observe: &mut dyn FnMut(&Progress) -> bool) -> bool {
        let mut stopped = false;
        if self.flow_rates.is_none() {
            self.update_flow_rates();
        }
        let cap = self.sc.end_time.unwrap_or(SimTime::MAX);
        let total = self.flows.len() as u64;
        while let Some((t, ev, next)) = self.events.pop_peek() {
            if t > cap {
                // The run stops at the cap; what was pending is left undone.
                self.now = cap;
                break;
            }
            self.now = t;
            self.event_count += 1;
            if self.event_count & (OBSERVE_EVENTS - 1) == 0 {
                let p = Progress {
                    now: t,
                    events: self.event_count,
                    completed: self.completed,
                    flows: total,
                };
                if !observe(&p) {
                    stopped = true;
                    break;
                }
            }
            // An arrival reads its port's first line, then the head's ring entry, both long
            // untouched: ask for them an event ahead (fetching ports two events ahead measured
            // slower).
            if let Some(Event::Arrive(p)) = next.map(Event::from) {
                self.ports[p.idx()].prefetch_head();
            }
            match Event::from(ev) {
                Event::FlowStart(f) => self.on_flow_start(f),
                Event::Arrive(p) => self.on_arrive(p),
                Event::HostWake(h) => {
                    self.hosts[h.idx()].wake_pending = false;
                    self.try_send(h);
                }
                Event::Control(i) => self.on_control(self.controls[i as usize]),
                Event::FlowTimer(f) => self.on_flow_timer(f),
                Event::PullWake(h) => {
                    self.hosts[h.idx()].pull_pending = false;
                    self.try_pull(h);
                }
            }
            if self.completed == total {
                break;
            }
        }
        self.ended = Some(self.now);
        stopped
    }

    fn on_flow_start(&mut self, f: FlowId) {
        let flow = &mut self.flows[f.idx()];
        if flow.started.is_some() {
            return;
        }
        flow.started = Some(self.now);
        flow.in_ring = true;
        let src = flow.src;
        flow.last_ack = self.now;
        let rto = flow.tx.as_ref().map_or(self.rto, |t| t.rto());
        self.hosts[src.idx()].active.push_back(f);
        self.try_send(src);
        if self.timers {
            self.events.push(self.now + rto, Event::FlowTimer(f).into());
        }
    }

    /// The flow's timer: after a whole timeout without an ACK, the host policy hears
    /// `on_timeout` and loss recovery declares everything outstanding lost. Re-arms itself until
    /// the flow is done.
    fn on_flow_timer(&mut self, f: FlowId) {
        let now = self.now;
        let flow = &mut self.flows[f.idx()];
        if flow.sender_done {
            return;
        }
        let rto = flow.tx.as_ref().map_or(self.rto, |t| t.rto());
        let due = flow.last_ack + rto;
        if now < due {
            self.events.push(due, Event::FlowTimer(f).into());
            return;
        }
        self.host_lbs.on_timeout(f, now);
        flow.timeouts += 1;
        let next = match &mut flow.tx {
            None => now + self.rto,
            Some(tx) => {
                let (o, rewind) = tx.on_timeout(flow.next_seq);
                if let Some(seq) = rewind {
                    flow.next_seq = seq;
                }
                flow.cc.on_loss(now, o.lost_bytes, LossKind::Timeout);
                flow.last_ack = now;
                now + tx.rto()
            }
        };
        self.events.push(next, Event::FlowTimer(f).into());
        self.wake_flow(f);
    }

    /// Puts a flow that left its host's ring (window, credit or nothing to send) back in it.
    fn wake_flow(&mut self, f: FlowId) {
        let flow = &mut self.flows[f.idx()];
        if flow.in_ring || flow.sender_done || flow.started.is_none() {
            return;
        }
        flow.in_ring = true;
        let src = flow.src;
        self.hosts[src.idx()].active.push_back(f);
        self.try_send(src);
    }

    /// EQDS: sends the receiver's next credit if its pacer allows, else waits for it.
    fn try_pull(&mut self, h: HostId) {
        let now = self.now;
        let host = &mut self.hosts[h.idx()];
        if host.pull_pending || host.pulls.is_empty() {
            return;
        }
        if host.next_pull > now {
            host.pull_pending = true;
            self.events.push(host.next_pull, Event::PullWake(h).into());
            return;
        }
        while let Some((f, entropy)) = host.pulls.pop_front() {
            let flow = &self.flows[f.idx()];
            if flow.finish.is_some() {
                continue;
            }
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
                self.events.push(host.next_pull, Event::PullWake(h).into());
            }
            self.counters.acks_sent += 1;
            let i = self.slots.insert(pull);
            self.enqueue(PortId(h.0), i);
            return;
        }
    }

    fn on_control(&mut self, c: Control) {
        match c {
            Control::Fail(i) => {
                let f = self.sc.failures[i].clone();
                for port in f.ports {
                    self.actual_cap[port.idx()] = failure::capacity_units(Some(f.effect));
                }
                self.update_flow_rates();
                for (n, port) in f.ports.iter().enumerate() {
                    let p = &mut self.ports[port.idx()];
                    match f.effect {
                        Effect::Down => p.set_fault(Fault::Down),
                        Effect::Degraded(x) => p.set_rate(BitsPerSec(
                            ((p.nominal_rate.0 as f64) * x).round().max(1.0) as u64,
                        )),
                        Effect::Flaky(ge) => p.set_fault(Fault::Flaky {
                            ge,
                            bad: false,
                            rng: Box::new(rng_for(
                                self.sc.settings.seed,
                                Stream::Failure,
                                (1 << 32) + 2 * i as u64 + n as u64,
                            )),
                        }),
                    }
                }
            }
            Control::Recover(i) => {
                for port in self.sc.failures[i].ports {
                    self.actual_cap[port.idx()] = 100;
                }
                self.update_flow_rates();
                for port in self.sc.failures[i].ports {
                    let p = &mut self.ports[port.idx()];
                    p.set_fault(Fault::Healthy);
                    let r = p.nominal_rate;
                    p.set_rate(r);
                }
            }
            Control::Converge(i) => {
                let f = &self.sc.failures[i];
                let recovered = f.recover.is_some_and(|r| self.now >= r);
                let cap = if recovered {
                    100
                } else {
                    failure::capacity_units(Some(f.effect))
                };
                for port in f.ports {
                    self.routing_cap[port.idx()] = cap;
                }
                self.weights = Weights::compute(&self.sc.topology, &self.routing_cap);
                self.routing_epoch += 1;
            }
        }
    }

    /// Lets host `h` put its next data packet on its NIC if the NIC is idle and the pacer allows;
    /// otherwise makes sure a wake-up is pending for when both will.
    fn try_send(&mut self, h: HostId) {
        let now = self.now;
        let port = PortId(h.0);
        let host = &mut self.hosts[h.idx()];
        if host.active.is_empty() || host.wake_pending {
            return;
        }
        let p = &mut self.ports[port.idx()];
        p.sync(now);
        let ready = p.busy_until.max(host.next_send);
        if ready > now {
            host.wake_pending = true;
            self.events.push(ready, Event::HostWake(h).into());
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
                    self.events.push(earliest, Event::HostWake(h).into());
                }
                return;
            }
            tries -= 1;
            let Some(f) = host.active.pop_front() else {
                return;
            };
            let flow = &mut self.flows[f.idx()];
            if flow.sender_done {
                flow.in_ring = false;
                continue;
            }
            if flow.next_send > now {
                earliest = earliest.min(flow.next_send);
                host.active.push_back(f);
                continue;
            }
            let Some(tx) = &mut flow.tx else {
                break (f, None);
            };
            let next = tx.peek(flow.next_seq);
            let blocked = match next {
                None => true,
                Some(n) => {
                    tx.credit == 0
                        || flow
                            .cc
                            .window()
                            .is_some_and(|w| tx.inflight > 0 && tx.inflight + n.payload as u64 > w)
                }
            };
            if blocked {
                flow.in_ring = false;
                continue;
            }
            break (f, next);
        };
        host.active.push_back(f);
        let flow = &mut self.flows[f.idx()];
        let next = match next {
            Some(n) => n,
            None => Next {
                seq: flow.next_seq,
                payload: flow.next_payload(self.mss),
                retransmission: false,
            },
        };
        let wire = next.payload + self.header;
        let mut rate = self.flow_rates.as_ref().map(|r| r[f.idx()]);
        if flow.tx.is_some() {
            if let Some(r) = flow.cc.rate(now) {
                rate = Some(rate.map_or(r, |x| BitsPerSec(x.0.min(r.0))));
            }
        }
        if let Some(r) = rate {
            flow.next_send = if r.0 == 0 {
                SimTime::MAX
            } else {
                now + r.serialization(wire as u64)
            };
        }
        // The flow's own stream, indexed by its packet count: other flows never shift it.
        let mut draws = crate::rng::packet_rng(self.path_base, f.0 as u64, flow.data_packets_sent);
        let entropy = self.host_lbs.next_entropy(f, now, &mut draws);
        let xmit = flow.next_xmit();
        let pkt = Packet {
            flow: f,
            src: flow.src,
            dst: flow.dst,
            seq: next.seq,
            xmit,
            entropy,
            sent_at: now,
            wire_bytes: wire as u16,
            payload: next.payload as u16,
            kind: PacketKind::Data,
            ecn: false,
            done: false,
            cnp: false,
        };
        if !next.retransmission {
            flow.next_seq = flow.next_seq.wrapping_add(1);
        }
        if let Some(tx) = &mut flow.tx {
            // Go-back-N resends by rewinding, so a sequence number below the highest yet sent
            // is a retransmission too.
            if next.retransmission || next.seq < tx.seq_high {
                flow.retransmissions += 1;
            }
            tx.seq_high = tx.seq_high.max(next.seq + 1);
            tx.on_sent(next, xmit);
            flow.cc.on_send(now, next.payload as u64);
        }
        flow.unsent = flow.unsent.saturating_sub(next.payload as u64);
        flow.data_packets_sent += 1;
        self.counters.data_sent += 1;
        host.next_send = now + self.pace_rate.serialization(wire as u64);
        let next_send = host.next_send;
        let i = self.slots.insert(pkt);
        self.admit(port, i);
        let ready = self.ports[port.idx()].busy_until.max(next_send);
        let host = &mut self.hosts[h.idx()];
        // The round-robin's next flow sends at the wake-up: fetch its line now.
        if let Some(&g) = host.active.front() {
            crate::engine::prefetch(&self.flows[g.idx()].tx);
        }
        host.wake_pending = true;
        self.events.push(ready, Event::HostWake(h).into());
    }

    /// Offers the packet in slot `i` to an egress port: drop-tail on the byte buffer (or
    /// trimming), CE mark above the threshold. On priority ports control packets have their own
    /// buffer and go first.
    #[inline]
    fn enqueue(&mut self, port: PortId, mut i: u32) {
        let (bytes, kind) = {
            let pk = self.slots.pkt(i);
            (pk.wire_bytes as u64, pk.kind)
        };
        let p = &mut self.ports[port.idx()];
        p.sync(self.now);
        if self.prio && kind != PacketKind::Data {
            // Host NICs (ports 0..hosts) never drop, control packets included: their ACKs wait
            // at most for the data packet in service.
            let host_nic = port.idx() < self.hosts.len();
            if !host_nic && p.ctrl_bytes as u64 + bytes > self.ctrl_cap {
                p.stats.drops += 1;
                self.lose(i);
                return;
            }
        } else {
            let held = if self.prio {
                p.data_bytes()
            } else {
                p.queued_bytes
            };
            let full = held + bytes > p.buffer_bytes;
            if full && !self.trim {
                p.stats.drops += 1;
                self.lose(i);
                return;
            }
            if kind == PacketKind::Data && marks(p, self.red, self.red_salt, port) {
                self.slots.pkt_mut(i).ecn = true;
                p.stats.ecn_marks += 1;
                self.counters.ecn_marks += 1;
            }
            if full {
                // NDP: trim the arriving packet or, every other time, the newest queued one
                // (which the arriving packet replaces), so no flow is trimmed in phase.
                self.trim_coin = !self.trim_coin;
                if self.trim_coin {
                    p.swap_tail(&mut i, bytes as u16);
                }
                let packet = self.slots.pkt_mut(i);
                packet.kind = PacketKind::Header;
                packet.payload = 0;
                packet.wire_bytes = self.trim_header;
                self.counters.trimmed += 1;
                if p.ctrl_bytes as u64 + self.trim_header as u64 > self.ctrl_cap {
                    p.stats.drops += 1;
                    self.lose(i);
                    return;
                }
            }
        }
        self.admit(port, i);
    }

    /// Puts the admitted packet in slot `i` on the port; the ring's new head gets its arrival
    /// event.
    #[inline]
    fn admit(&mut self, port: PortId, i: u32) {
        self.hops += 1;
        let p = &mut self.ports[port.idx()];
        if p.push(self.now, i, &self.slots) {
            let t = p.head_arrival().expect("just pushed");
            self.events.push(t, Event::Arrive(port).into());
        }
    }

    /// Accounts a packet dropped by a queue or lost on a link, and frees its slot.
    fn lose(&mut self, i: u32) {
        let packet = self.slots.pkt(i);
        if packet.kind.is_forward() {
            self.counters.data_dropped += 1;
            self.flows[packet.flow.idx()].packets_dropped += 1;
        } else {
            self.counters.acks_dropped += 1;
        }
        self.slots.release(i);
    }

    fn on_arrive(&mut self, port: PortId) {
        let p = &mut self.ports[port.idx()];
        let i = p.pop_arrived(self.now);
        if let Some(next) = p.nth(0) {
            self.events
                .push(next.tx_end + p.latency, Event::Arrive(port).into());
            // The next packet to arrive is read then, the one after it later still: ask for
            // their lines now. A host handles an arrival with its flow's line: fetch that too.
            match p.peer {
                NodeId::Switch(_) => self.slots.prefetch(next.slot),
                NodeId::Host(_) => {
                    if let Some(after) = p.nth(1) {
                        self.slots.prefetch(after.slot);
                    }
                    let pk = self.slots.pkt(next.slot);
                    let f = &self.flows[pk.flow.idx()];
                    if pk.kind.is_forward() {
                        crate::engine::prefetch(&f.recv_bytes);
                    } else {
                        crate::engine::prefetch(&f.tx);
                    }
                }
            }
        }
        if p.faulty && p.fault.loses() {
            p.stats.link_losses += 1;
            self.counters.link_losses += 1;
            self.lose(i);
            return;
        }
        match p.peer {
            NodeId::Switch(s) => self.forward(s, i),
            NodeId::Host(h) => self.receive(h, i),
        }
    }

    fn forward(&mut self, s: SwitchId, i: u32) {
        let packet = *self.slots.pkt(i);
        let out = match self.sc.topology.route(s, packet.dst) {
            Route::Port(p) => p,
            Route::Group { first, n } => {
                let is_ack = !packet.kind.is_forward();
                let weights = self.weights.get(s, packet.dst.0 / self.hosts_per_tor);
                if weights.is_some_and(|w| w.iter().all(|&x| x == 0)) {
                    // Converged routing knows no path to the destination from here.
                    self.counters.unroutable += 1;
                    self.lose(i);
                    return;
                }
                let view = PacketView {
                    weights,
                    epoch: self.routing_epoch,
                    src: packet.src,
                    dst: packet.dst,
                    flow_key: flow_key(packet.flow, is_ack),
                    entropy: packet.entropy,
                    is_ack,
                    now: self.now,
                };
                let group = &mut self.ports[first.idx()..first.idx() + n as usize];
                // Queue-reading policies must see occupancy as of now.
                if self.sync_groups {
                    for p in group.iter_mut() {
                        p.sync(self.now);
                    }
                }
                let group = &*group;
                let sw = &mut self.switches[s.idx()];
                let i = sw.lb.choose(&view, group, &mut sw.rng);
                PortId(first.0 + i as u32)
            }
        };
        self.enqueue(out, i);
    }

    fn receive(&mut self, h: HostId, i: u32) {
        let now = self.now;
        let packet = *self.slots.pkt(i);
        if !packet.kind.is_forward() {
            self.slots.release(i);
        }
        let f = packet.flow;
        let flow = &mut self.flows[f.idx()];
        match packet.kind {
            PacketKind::Data | PacketKind::Header => {
                debug_assert_eq!(packet.dst, h);
                self.counters.data_delivered += 1;
                flow.data_packets_received += 1;
                let was_done = flow.finish.is_some();
                let (kind, seq) = match &mut flow.rx {
                    None => {
                        // Repair packets past completion carry nothing new.
                        flow.recv_bytes = (flow.recv_bytes + packet.payload as u64).min(flow.size);
                        (PacketKind::Ack, packet.seq)
                    }
                    Some(_) if packet.kind == PacketKind::Header => (PacketKind::Nack, packet.seq),
                    Some(rx) => {
                        let d = rx.on_data(packet.seq);
                        if !d.fresh {
                            self.counters.discarded += 1;
                        }
                        match **rx {
                            // A coded message is handed over whole when it decodes.
                            Receiver::Coded { .. } if d.complete && !was_done => {
                                flow.recv_bytes = flow.size;
                            }
                            Receiver::Coded { .. } => {}
                            _ if d.fresh => flow.recv_bytes += packet.payload as u64,
                            _ => {}
                        }
                        match d.reply {
                            Reply::Ack(s) => (PacketKind::Ack, s),
                            Reply::Nack(s) => (PacketKind::Nack, s),
                            Reply::None => (PacketKind::Pull, 0),
                        }
                    }
                };
                let complete = match &flow.rx {
                    None => flow.recv_bytes >= flow.size,
                    Some(rx) => rx.complete(),
                };
                let just_done = !was_done && complete;
                if just_done {
                    flow.finish = Some(now);
                    self.completed += 1;
                }
                let cnp = self.cc == CcKind::Dcqcn
                    && packet.ecn
                    && flow.last_cnp.is_none_or(|t| now - t >= self.cnp_interval);
                if cnp {
                    flow.last_cnp = Some(now);
                }
                // The reply keeps the data's flow, transmission, entropy, ECN mark and send time.
                if kind != PacketKind::Pull {
                    let mut ack = packet;
                    ack.kind = kind;
                    ack.seq = seq;
                    ack.src = h;
                    ack.dst = packet.src;
                    ack.wire_bytes = self.ack_bytes as u16;
                    ack.payload = 0;
                    ack.done = flow.finish.is_some();
                    ack.cnp = cnp;
                    self.counters.acks_sent += 1;
                    *self.slots.pkt_mut(i) = ack;
                    self.enqueue(PortId(h.0), i);
                } else {
                    self.slots.release(i);
                }
                if self.cc == CcKind::Eqds && !complete {
                    self.hosts[h.idx()].pulls.push_back((f, packet.entropy));
                    self.try_pull(h);
                }
                if just_done {
                    self.activate_all(f, true);
                }
            }
            PacketKind::Ack => {
                self.counters.acks_delivered += 1;
                self.host_lbs.on_ack(
                    f,
                    AckInfo {
                        entropy: packet.entropy,
                        ecn: packet.ecn,
                        sent_at: packet.sent_at,
                        now,
                    },
                );
                flow.last_ack = now;
                let mut done = packet.done;
                if let Some(tx) = &mut flow.tx {
                    let o = tx.on_ack(packet.xmit, packet.seq, now, packet.sent_at);
                    if tx.lr == LossRecoveryKind::GoBackN && flow.next_seq < tx.snd_una {
                        flow.next_seq = tx.snd_una;
                    }
                    flow.cc.on_ack(&AckSample {
                        now,
                        acked_bytes: o.newly_acked,
                        ecn: packet.ecn,
                        rtt: now - packet.sent_at,
                        cnp: packet.cnp,
                        inflight: tx.inflight,
                    });
                    if o.lost > 0 {
                        flow.cc.on_loss(now, o.lost_bytes, LossKind::Reorder);
                    }
                    done |= tx.all_acked();
                }
                if done && !flow.sender_done {
                    flow.sender_done = true;
                    self.activate_all(f, false);
                }
                self.wake_flow(f);
            }
            PacketKind::Nack => {
                self.counters.acks_delivered += 1;
                // To a host policy a NACK is a congested path: its queue overflowed.
                self.host_lbs.on_ack(
                    f,
                    AckInfo {
                        entropy: packet.entropy,
                        ecn: true,
                        sent_at: packet.sent_at,
                        now,
                    },
                );
                flow.last_ack = now;
                if let Some(tx) = &mut flow.tx {
                    let (o, rewind) = tx.on_nack(packet.xmit, packet.seq);
                    if let Some(seq) = rewind {
                        flow.next_seq = seq;
                    }
                    flow.cc.on_loss(now, o.lost_bytes, LossKind::Nack);
                    if tx.all_acked() && !flow.sender_done {
                        flow.sender_done = true;
                        self.activate_all(f, false);
                    }
                }
                self.wake_flow(f);
            }
            PacketKind::Pull => {
                self.counters.acks_delivered += 1;
                flow.last_ack = now;
                if let Some(tx) = &mut flow.tx {
                    tx.credit = tx.credit.saturating_add(1);
                }
                self.wake_flow(f);
            }
        }
    }

    /// Activates the triggers that flow `f`'s receive (or send) completion feeds.
    fn activate_all(&mut self, f: FlowId, recv: bool) {
        let deps = &self.sc.deps;
        let list = if recv {
            &deps.on_recv_done
        } else {
            &deps.on_send_done
        };
        let Some(ts) = list.get(f.idx()) else {
            return;
        };
        for &t in ts {
            let tr = &deps.triggers[t as usize];
            let count = &mut self.trigger_counts[t as usize];
            *count += 1;
            let fire = *count == tr.needed || (tr.multishot && *count > tr.needed);
            if fire {
                for &target in &tr.targets {
                    self.events
                        .push(self.now + tr.delay, Event::FlowStart(FlowId(target)).into());
                }
            }
        }
    }

    pub fn now(&self) -> SimTime {
        self.now
    }

    pub fn scenario(&self) -> &Scenario {
        &self.sc
    }

    /// Time-average bytes held by egress port `port` from time zero to the end of the run, and the
    /// most it held.
    pub fn port_queue(&self, port: PortId) -> (f64, u64) {
        let p = &self.ports[port.idx()];
        let end = self.ended.unwrap_or(self.now);
        let mean = if end.ps() == 0 {
            0.0
        } else {
            p.area_until(end) as f64 / end.ps() as f64
        };
        (mean, p.max_bytes)
    }

    /// Packets the port dropped (its buffer was full).
    pub fn port_drops(&self, port: PortId) -> u64 {
        self.ports[port.idx()].stats.drops
    }

    pub fn counters(&self) -> Counters {
        self.counters
    }

    /// Packets put on links so far (data and ACKs).
    pub fn hops(&self) -> u64 {
        self.hops
    }

    pub fn events(&self) -> u64 {
        self.event_count
    }

    pub fn flows(&self) -> &[Flow] {
        &self.flows
    }

    /// Packets in the ports' shared store (equals `in_flight`'s total unless a slot leaked).
    pub fn packets_stored(&self) -> usize {
        self.slots.in_use()
    }

    /// Counts the packets held in queues, in service and on wires, by kind.
    pub fn in_flight(&self) -> InFlight {
        let mut f = InFlight::default();
        for p in &self.ports {
            for held in p.packets() {
                if self.slots.pkt(held.slot).kind.is_forward() {
                    f.data += 1;
                } else {
                    f.acks += 1;
                }
            }
        }
        f
    }

    /// The largest occupancy any switch egress port reached, and whether one ever exceeded its buffer.
    pub fn max_switch_queue(&self) -> (u64, bool) {
        let r = self.sc.topology.switch_ports();
        let mut max = 0;
        let mut over = false;
        // Priority ports hold control packets in a buffer of their own.
        let extra = if self.prio { self.ctrl_cap } else { 0 };
        for p in &self.ports[r] {
            max = max.max(p.max_bytes);
            over |= p.max_bytes > p.buffer_bytes + extra;
        }
        (max, over)
    }

    pub fn flow_records(&self) -> Vec<FlowRecord> {
        self.flows
            .iter()
            .enumerate()
            .map(|(i, f)| FlowRecord {
                flow_id: self.sc.flow_id(i),
                src: f.spec.src.0,
                dst: f.spec.dst.0,
                size_bytes: f.spec.size_bytes,
                start_ps: f.started.unwrap_or(f.spec.start).ps(),
                finish_ps: f.finish.map(|t| t.ps()),
                fct_ps: f
                    .finish
                    .map(|t| (t - f.started.unwrap_or(f.spec.start)).ps()),
                data_packets_sent: f.data_packets_sent,
                packets_dropped: f.packets_dropped,
                retransmissions: f.retransmissions,
                timeouts: f.timeouts,
            })
            .collect()
    }

    pub fn summary(&self) -> Summary {
        let sc = &self.sc;
        let end = self.ended.unwrap_or(self.now);
        let first_start = self
            .flows
            .iter()
            .filter_map(|f| f.started)
            .min()
            .unwrap_or(SimTime::ZERO);
        let all_done = self.completed == self.flows.len() as u64;
        let last = self.flows.iter().filter_map(|f| f.finish).max();
        let cct = if all_done {
            last.map(|t| t - first_start)
        } else {
            None
        };
        let sizes = bound::Sizes {
            mss: self.mss,
            header: self.header,
            ack: self.ack_bytes,
        };
        let rel = |t: SimTime| SimTime(t.ps().saturating_sub(first_start.ps()));
        let lb = rel(bound::lower_bound_with_deps(
            &sc.topology,
            &sc.flows,
            &sc.deps,
            sizes,
        ));
        let lb_no_deps = rel(bound::lower_bound_ignoring_deps(
            &sc.topology,
            &sc.flows,
            &sc.deps,
            sizes,
        ));
        let ratio = |b: SimTime| cct.map(|c| c.ps() as f64 / b.ps().max(1) as f64);
        let mut fcts: Vec<u64> = self
            .flows
            .iter()
            .filter_map(|f| {
                f.finish
                    .map(|t| (t - f.started.unwrap_or(f.spec.start)).ps())
            })
            .collect();
        fcts.sort_unstable();
        let mean_fct = if fcts.is_empty() {
            None
        } else {
            Some(fcts.iter().map(|&x| x as f64).sum::<f64>() / fcts.len() as f64)
        };
        let r = sc.topology.switch_ports();
        let nports = r.len().max(1) as f64;
        let area: u128 = self.ports[r].iter().map(|p| p.area_until(end)).sum();
        let mean_queue = if end.ps() == 0 {
            0.0
        } else {
            area as f64 / nports / end.ps() as f64
        };
        Summary {
            scheme: sc.scheme.name.to_string(),
            workload: sc.settings.workload_label.to_string(),
            topology: sc.settings.topology_label.clone(),
            hosts: sc.topology.hosts,
            flows: self.flows.len() as u64,
            flows_completed: self.completed,
            cct_ps: cct.map(|t| t.ps()),
            lower_bound_ps: lb.ps(),
            cct_over_bound: ratio(lb),
            lower_bound_ignoring_deps_ps: lb_no_deps.ps(),
            cct_over_bound_ignoring_deps: ratio(lb_no_deps),
            mean_fct_ps: mean_fct,
            p99_fct_ps: stats::percentile(&fcts, 99.0),
            data_packets_sent: self.counters.data_sent,
            data_packets_delivered: self.counters.data_delivered,
            packets_dropped: self.counters.data_dropped + self.counters.acks_dropped,
            ecn_marks: self.counters.ecn_marks,
            max_queue_bytes: self.max_switch_queue().0,
            mean_queue_bytes: mean_queue,
            end_ps: end.ps(),
            events: self.event_count,
            packet_hops: self.hops,
            link_losses: self.counters.link_losses,
            failed_links: sc.failures.iter().map(|f| f.name.clone()).collect(),
            timeouts: self.flows.iter().map(|f| f.timeouts).sum(),
            cc: self.cc.name().to_string(),
            loss_recovery: self.lr.name().to_string(),
            retransmissions: self.flows.iter().map(|f| f.retransmissions).sum(),
            packets_trimmed: self.counters.trimmed,
            discarded_packets: self.counters.discarded,
            wall_seconds: 0.0,
            events_per_second: 0.0,
            seed: sc.settings.seed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_pack_losslessly() {
        for e in [
            Event::FlowStart(FlowId(0)),
            Event::Arrive(PortId(MAX_EVENT_ID)),
            Event::HostWake(HostId(12345)),
        ] {
            assert_eq!(Event::from(Packed::from(e)), e);
        }
    }
}
