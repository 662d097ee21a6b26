//! The simulation: one owned world (arenas of ports, hosts, switches, flows and packets addressed by
//! typed ids), the event set, and the handlers that move packets.
//!
//! A packet hop is one event: its arrival at the far end of the link. FIFO ports compute departure
//! times when they accept a packet (see `net::port`), and only the head of each port's ring has a
//! pending arrival. Host NICs pull the next data packet from the host's round-robin flow
//! scheduler when they go idle (one wake-up event per data packet), so data never queues inside
//! a host and ACKs, which are put on the NIC as they are made, go ahead of data not yet started.

mod control;
mod fabric;
mod host;
mod report;

use std::collections::VecDeque;

use crate::engine::EventQueue;
use crate::failure::{self, Effect, Fault, Weights};
use crate::ids::{FlowId, HostId, NodeId, PortId, SwitchId};
use crate::lb::{AckInfo, HostLbs, PacketView, SwitchCtx, SwitchLb};
use crate::net::{Packet, PacketKind, Port, Route, Slots};
use crate::rng::{rng_for, SimRng, Stream};
use crate::scenario::Scenario;
use crate::stats::{self, bound, FlowRecord, Summary};
use crate::time::{BitsPerSec, SimTime};
use crate::transport::cc::{Cc, CcCtx, CcKind};
use crate::transport::reliable::{Receiver, Sender};
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

/// Calendar buckets per ACK serialization time on the fastest link: measured on the benchmark
/// suite, a quarter keeps a few events per bucket at every scale.
const BUCKETS_PER_ACK_TIME: u64 = 4;

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
    /// Starts each flow still waits for (`Dependencies::waits`; empty when none waits twice).
    start_waits: Vec<u32>,
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
                    lb: SwitchLb::new(sc.scheme, &ctx, lb_cfg),
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
            sc.scheme,
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
        // Calendar buckets a fraction of the fastest link's ACK time: a few events each.
        let fastest = topo.links.iter().map(|l| l.rate.0).max().unwrap_or(1);
        let width = BitsPerSec(fastest)
            .serialization(st.packet.ack_bytes as u64)
            .ps()
            / BUCKETS_PER_ACK_TIME;
        let mut events = EventQueue::with_bucket_ps(width);
        for (i, f) in sc.flows.iter().enumerate() {
            if sc.deps.timed(i) {
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
            sync_groups: sc.scheme.reads_queues,
            controls,
            routing_cap: vec![failure::FULL_CAPACITY; topo.links.len()],
            weights: Weights::default(),
            routing_epoch: 0,
            hosts_per_tor,
            rto: sc.rto,
            trigger_counts: vec![0; sc.deps.triggers.len()],
            start_waits: sc.deps.waits.clone(),
            flow_rates: None,
            actual_cap: vec![failure::FULL_CAPACITY; topo.links.len()],
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
