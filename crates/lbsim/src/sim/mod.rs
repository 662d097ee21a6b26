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
mod telemetry;

use crate::engine::EventQueue;
use crate::ids::{FlowId, HostId, PortId};
use crate::scenario::Scenario;
use crate::stats::telemetry::TelemetrySink;
use crate::time::{BitsPerSec, SimTime};
use crate::transport::cc::{Cc, CcCtx, CcKind};
use crate::transport::reliable::{Receiver, Sender};
use crate::transport::{Flow, LossRecoveryKind};
use crate::workload::FlowSpec;
use control::ControlPlane;
use fabric::{Arrival, Fabric};
use host::{Env, Hosts};
pub use parallel::{Parallel, ParallelStats};

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
    /// PFC: a PAUSE or RESUME frame reaches this port (an egress), flipping its peer's
    /// request.
    Pfc(PortId),
    /// PFC: a switch egress port's next packet has finished serializing; the switch's input
    /// counters see it leave.
    Depart(PortId),
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
        // The tag is the first tie-break between equal-time events of one rank: failures and
        // routing changes first, so that what arrives at that instant sees them.
        let (tag, id) = match e {
            Event::Control(i) => (0, i),
            Event::FlowStart(f) => (1, f.0),
            Event::Arrive(p) => (2, p.0),
            Event::HostWake(h) => (3, h.0),
            Event::FlowTimer(f) => (4, f.0),
            Event::PullWake(h) => (5, h.0),
            Event::Pfc(p) => (6, p.0),
            Event::Depart(p) => (7, p.0),
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
            0 => Event::Control(id),
            1 => Event::FlowStart(FlowId(id)),
            2 => Event::Arrive(PortId(id)),
            3 => Event::HostWake(HostId(id)),
            4 => Event::FlowTimer(FlowId(id)),
            5 => Event::PullWake(HostId(id)),
            6 => Event::Pfc(PortId(id)),
            _ => Event::Depart(PortId(id)),
        }
    }
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
    /// Trimmed headers sent back to their senders (no longer data: counted in `acks_sent`
    /// from then on).
    pub returned: u64,
    /// Data packets the receiver did not use: already held, or out of order under go-back-N.
    pub discarded: u64,
}

impl Counters {
    /// Adds a partition's counts (each counted where its event happened, so none twice).
    fn add(&mut self, o: &Counters) {
        let Counters {
            data_sent,
            data_delivered,
            data_dropped,
            acks_sent,
            acks_delivered,
            acks_dropped,
            ecn_marks,
            link_losses,
            unroutable,
            trimmed,
            returned,
            discarded,
        } = *o;
        self.data_sent += data_sent;
        self.data_delivered += data_delivered;
        self.data_dropped += data_dropped;
        self.acks_sent += acks_sent;
        self.acks_delivered += acks_delivered;
        self.acks_dropped += acks_dropped;
        self.ecn_marks += ecn_marks;
        self.link_losses += link_losses;
        self.unroutable += unroutable;
        self.trimmed += trimmed;
        self.returned += returned;
        self.discarded += discarded;
    }
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

/// One run: the scenario, the clock and event set, and the parts that own the world's state.
/// Each part's methods take the others they need explicitly, so the borrows say which part
/// touches what; the handlers here only route an event to its part and carry results between
/// parts.
pub struct Simulation {
    sc: Scenario,
    /// The clock, the event set and the counters: what every handler may touch.
    cx: Cx,
    event_count: u64,
    completed: u64,
    ended: Option<SimTime>,
    /// Ports, the packet store, switches and the routing they forward by.
    fabric: Fabric,
    /// Host NICs, their schedulers and host-side load balancing.
    hosts: Hosts,
    flows: Vec<Flow>,
    /// Failures, convergence, failure-aware rates and triggers.
    control: ControlPlane,
    /// Telemetry's sampler (None: off, or run without a sink).
    tel: Option<Box<telemetry::Sampler>>,
    /// The synchronization window: the least latency of any switch-to-switch link, so that a
    /// packet crossing a cut between partitions arrives no sooner than the next window.
    window: SimTime,
    /// Threads to run on (1: the single loop); see `parallel`.
    threads: usize,
    /// How the last run went parallel, or why it did not (None: one thread was asked for).
    parallel: Option<Parallel>,
}

/// What handling one event may touch besides the parts: the time and rank of the event being
/// handled, the event set and the run's counters. One part of the world that handlers borrow,
/// rather than a view built per event: copying the clock into a fresh view and reaching the
/// event set through it cost about ten instructions per event.
struct Cx {
    now: SimTime,
    /// The rank of the event being handled (see [`Cx::push`]).
    rank: u32,
    /// A partitioned run: the event being handled, packed (0 in the single loop, which has no
    /// shipping ports to read it).
    key: u32,
    events: EventQueue<Packed>,
    counters: Counters,
}

impl Cx {
    /// Schedules `e` at `t`. An event scheduled for the current instant ranks one above the
    /// event that caused it (so it pops after it); anything later ranks 0. The rank is thus
    /// the length of the zero-delay chain behind an event, known from the event alone.
    #[inline(always)]
    fn push(&mut self, t: SimTime, e: Event) {
        let rank = if t == self.now { self.rank + 1 } else { 0 };
        self.events.push_ranked(t, rank, e.into());
    }
}

/// Whether event `a` (time, rank, event) is handled before the event `b` being handled (its
/// key packed as the run loop keeps it): the canonical order (see `engine::queue`).
fn sorts_before(a: (SimTime, u32, Event), b: (SimTime, u32, u32)) -> bool {
    (a.0, a.1, u32::from(Packed::from(a.2))) < b
}

/// Borrows `$s`'s parts but the hosts and control plane as a host handler's [`Env`].
macro_rules! env {
    ($s:ident) => {
        Env {
            cx: &mut $s.cx,
            topo: &$s.sc.topology,
            fabric: &mut $s.fabric,
            flows: &mut $s.flows,
            rates: $s.control.rates(),
        }
    };
}

mod parallel;

/// The idle round trip from `src` to `dst`: a full data packet out and an ACK back, serialized
/// at every hop, plus the propagation both ways.
fn base_rtt(
    topo: &crate::net::Topology,
    src: crate::ids::HostId,
    dst: crate::ids::HostId,
    pk: &crate::net::config::PacketConfig,
) -> SimTime {
    let path = topo.path(src, dst);
    let mtu = (pk.payload_bytes + pk.header_bytes) as u64;
    let ser = path.rates.iter().fold(SimTime::ZERO, |t, r| {
        t + r.serialization(mtu) + r.serialization(pk.ack_bytes as u64)
    });
    ser + path.latency + path.latency
}

/// The rate a flow's source can send it at: the host's pacer, or on hosts with several ports
/// the ports toward its destination together, each paced.
fn line_rate(sc: &Scenario, spec: &FlowSpec, pace_rate: BitsPerSec) -> BitsPerSec {
    let topo = &sc.topology;
    if topo.single_homed() {
        return pace_rate;
    }
    let (first, n) = match topo.host_route(spec.src, spec.dst) {
        crate::net::Route::Port(p) => (p.0, 1),
        crate::net::Route::Group { first, n } => (first.0, n),
    };
    let sum = (first..first + n).fold(0u64, |x, p| x.saturating_add(topo.links[p as usize].rate.0));
    crate::stats::bound::pace_rate(BitsPerSec(sum), sc.settings.rate_coef)
        .unwrap_or(BitsPerSec(sum))
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
    let base_rtt = base_rtt(topo, spec.src, spec.dst, pk);
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

/// The event calendar's bucket width and span, in picoseconds. Buckets are a fraction of the
/// fastest link's ACK time (a few events each). The span is twice the longest hop, a link's
/// latency plus a full packet's serialization on it, which is as far ahead as arrivals (most
/// events) are ever scheduled: a longer wheel ran slower (ARCHITECTURE.md, "The hot path").
fn calendar_shape(
    topo: &crate::net::Topology,
    pk: &crate::net::config::PacketConfig,
) -> (u64, u64) {
    let fastest = topo.links.iter().map(|l| l.rate.0).max().unwrap_or(1);
    let width = BitsPerSec(fastest).serialization(pk.ack_bytes as u64).ps() / BUCKETS_PER_ACK_TIME;
    let mtu = (pk.payload_bytes + pk.header_bytes) as u64;
    let hop = topo
        .links
        .iter()
        .map(|l| (l.latency + l.rate.serialization(mtu)).ps())
        .max()
        .unwrap_or(0);
    (width, hop.saturating_mul(2))
}

/// The least latency of a switch-to-switch link (1 ps if there is none).
fn sync_window(topo: &crate::net::Topology) -> SimTime {
    use crate::ids::NodeId;
    topo.links
        .iter()
        .filter(|l| matches!((l.from, l.to), (NodeId::Switch(_), NodeId::Switch(_))))
        .map(|l| l.latency)
        .min()
        .unwrap_or(SimTime(1))
        .max(SimTime(1))
}

/// Every flow's transport state as the settings give it: the idealized fast path keeps none.
fn build_flows(sc: &Scenario, pace_rate: BitsPerSec) -> Vec<Flow> {
    let st = &sc.settings;
    let pk = &st.packet;
    let (lr, cc_kind) = (st.loss_recovery, st.cc);
    sc.flows
        .iter()
        .map(|spec| {
            if !st.reliable() {
                return Flow::new(*spec, Cc::CONSTANT);
            }
            let cctx = cc_ctx(
                &sc.topology,
                spec,
                line_rate(sc, spec, pace_rate),
                pk,
                lr == LossRecoveryKind::Trim,
            );
            let mut flow = Flow::new(*spec, Cc::new(cc_kind, &st.ccs, &cctx));
            let credit = (cc_kind == CcKind::Eqds).then(|| {
                ((st.eqds.unsolicited_bdp * cctx.bdp as f64 / pk.payload_bytes as f64).ceil()
                    as u32)
                    .max(1)
            });
            if let Some(c) = credit {
                let needed = Flow::packets_needed(spec.size_bytes, pk.payload_bytes).max(1);
                flow.pulls_left = (needed.min(u32::MAX as u64) as u32).saturating_sub(c);
            }
            flow.tx = Some(Box::new(
                Sender::new(
                    lr,
                    spec.size_bytes,
                    pk.payload_bytes,
                    st.erasure_extra_packets,
                    st.reorder_threshold,
                    sc.rto,
                    st.rto_backoff,
                    credit,
                )
                .with_tail_loss_probe(st.tail_loss_probe),
            ));
            flow.rx = Receiver::new(lr, spec.size_bytes, pk.payload_bytes).map(Box::new);
            flow
        })
        .collect()
}

impl Simulation {
    pub fn new(sc: Scenario) -> Simulation {
        let st = &sc.settings;
        let topo = &sc.topology;
        // The lower bound counts data at this rate: one formula for both.
        let pace_rate =
            crate::stats::bound::pace_rate(topo.host_rate, st.rate_coef).unwrap_or(topo.host_rate);
        let fabric = Fabric::new(&sc);
        let hosts = Hosts::new(&sc, pace_rate);
        let flows = build_flows(&sc, pace_rate);
        let (width, span) = calendar_shape(topo, &st.packet);
        let mut events = EventQueue::with_span(width, span);
        for (i, f) in sc.flows.iter().enumerate() {
            if sc.deps.timed(i) {
                events.push(f.start, Event::FlowStart(FlowId(i as u32)).into());
            }
        }
        let control = ControlPlane::new(&sc, pace_rate, &mut events);
        let window = sync_window(&sc.topology);
        Simulation {
            cx: Cx {
                now: SimTime::ZERO,
                rank: 0,
                key: 0,
                events,
                counters: Counters::default(),
            },
            event_count: 0,
            completed: 0,
            ended: None,
            fabric,
            hosts,
            flows,
            control,
            tel: None,
            window,
            threads: 1,
            parallel: None,
            sc,
        }
    }

    /// Runs on `n` threads (partitions of the fabric) where the scenario allows; the results
    /// are the same for every `n`. Call before running.
    pub fn set_threads(&mut self, n: usize) {
        self.threads = n.max(1);
    }

    /// How the run went parallel, or why it stayed on one thread (None: one was asked for).
    pub fn parallel(&self) -> Option<&Parallel> {
        self.parallel.as_ref()
    }

    /// The synchronization window (see the field).
    pub fn sync_window(&self) -> SimTime {
        self.window
    }

    /// PFC: pauses egress `port` from `from` until `to`, as if the node it feeds had sent a
    /// PAUSE and then a RESUME (in force together with the fabric's own frames): for exact
    /// checks and what-if studies. Call before running.
    ///
    /// # Panics
    /// If the scenario has PFC off, or `to` is before `from`.
    pub fn impose_pause(&mut self, port: PortId, from: SimTime, to: SimTime) {
        assert!(self.fabric.pfc.is_some(), "impose_pause needs topology.pfc");
        assert!(from <= to, "a pause ends after it begins");
        self.control
            .impose_pause(&mut self.cx.events, port, from, to);
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
        self.run_with(observe, None)
    }

    /// Like [`Simulation::run_observed`], and if the scenario has `[telemetry]` on, hands its
    /// rows to `sink`: at each interval boundary, before the first event past it, and at the
    /// end (the last, partial interval). Sampling only reads the world, so the run's results
    /// are those of [`Simulation::run_observed`].
    pub fn run_with(
        &mut self,
        observe: &mut dyn FnMut(&Progress) -> bool,
        mut sink: Option<&mut dyn TelemetrySink>,
    ) -> bool {
        if self.threads > 1 && self.event_count == 0 {
            let tel = sink.is_some() && self.sc.telemetry.is_some();
            match self.run_parallel(self.threads, observe, tel) {
                Ok(stopped) => return stopped,
                Err(why) => self.parallel = Some(Parallel::Single(why)),
            }
        }
        let mut stopped = false;
        // With telemetry off this stays MAX, and the loop's one comparison never holds.
        let mut next_sample = match sink.as_deref_mut() {
            Some(s) => self.start_telemetry(s),
            None => SimTime::MAX,
        };
        if !self.control.rates_computed() {
            let cx = &mut self.cx;
            self.control
                .update_flow_rates(cx, &self.sc, &mut self.flows, &mut self.hosts);
        }
        let cap = self.sc.end_time.unwrap_or(SimTime::MAX);
        let total = self.flows.len() as u64;
        // Once every flow is done the run goes on to the end of that synchronization window
        // (as a partitioned run must: see `parallel`), and no further.
        let mut stop_at = if self.completed == total && total > 0 {
            self.window_end(self.cx.now)
        } else {
            SimTime::MAX
        };
        // What is due from `stop_at` on is left pending: `now` stays at the last event handled.
        while let Some((t, rank, ev, next)) = self.cx.events.pop_ranked_before(stop_at) {
            if t > cap {
                // The run stops at the cap; what was pending is left undone. A run whose flows
                // all completed ends at its last event, as a partitioned run does (the cap only
                // cut the window that runs on past the last completion).
                if !(total > 0 && self.completed == total) {
                    self.cx.now = cap;
                }
                break;
            }
            if t > next_sample {
                if let Some(s) = sink.as_deref_mut() {
                    next_sample = self.sample_before(t, s);
                }
            }
            self.cx.now = t;
            self.cx.rank = rank;
            self.event_count += 1;
            if self.event_count & (OBSERVE_EVENTS - 1) == 0 {
                if let Some(s) = sink.as_deref_mut() {
                    self.drain_telemetry_events(s);
                }
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
                self.fabric.prefetch_port(p);
            }
            self.handle(Event::from(ev));
            if self.completed == total && stop_at == SimTime::MAX {
                stop_at = self.window_end(t);
            }
        }
        self.ended = Some(self.cx.now);
        if let Some(s) = sink {
            self.finish_telemetry(self.cx.now, s);
        }
        stopped
    }

    /// Routes an event to the part that handles it.
    #[inline(always)]
    fn handle(&mut self, ev: Event) {
        match ev {
            Event::FlowStart(f) => {
                self.hosts.on_flow_start(&mut env!(self), f);
                self.control.flows_changed(&mut self.cx);
            }
            Event::Arrive(p) => self.on_arrive(p),
            Event::HostWake(h) => self.hosts.on_wake(&mut env!(self), h),
            Event::Control(i) => {
                let cx = &mut self.cx;
                let (sc, fabric) = (&self.sc, &mut self.fabric);
                let (flows, hosts) = (&mut self.flows, &mut self.hosts);
                self.control.on_control(cx, i, sc, fabric, flows, hosts);
            }
            Event::FlowTimer(f) => self.hosts.on_flow_timer(&mut env!(self), f),
            Event::PullWake(h) => self.hosts.on_pull_wake(&mut env!(self), h),
            Event::Pfc(p) => {
                let cx = &mut self.cx;
                if let Some((h, paused)) = self.fabric.on_pfc_frame(cx, p) {
                    self.hosts.on_nic_pause(cx, h, paused);
                }
            }
            Event::Depart(p) => self.fabric.on_depart(&mut self.cx, p),
        }
    }

    /// The end of the synchronization window holding time `t`: windows are `window` long and
    /// start at multiples of it, fixed by the topology whatever the thread count.
    fn window_end(&self, t: SimTime) -> SimTime {
        let w = self.window.ps();
        SimTime((t.ps() / w + 1) * w)
    }

    /// A packet reached the far end of `port`'s link: a switch forwards it, a host takes it.
    #[inline]
    fn on_arrive(&mut self, port: PortId) {
        let cx = &mut self.cx;
        let (h, i) = match self
            .fabric
            .on_arrive(cx, &self.sc.topology, &self.flows, port)
        {
            Arrival::Forwarded => return,
            Arrival::Lost(i) => return self.lose(i),
            Arrival::AtHost(h, i) => (h, i),
        };
        let got = self.hosts.receive(&mut env!(self), h, i);
        // Triggers fire before the sender's ring moves on, as the flow saw its completion first.
        if let Some((f, recv)) = got.done {
            self.completed += recv as u64;
            self.control
                .activate_all(&mut self.cx, &self.sc.deps, f, recv);
            if !recv {
                self.control.flows_changed(&mut self.cx);
            }
        }
        if let Some((f, t)) = got.timer {
            self.cx.push(t, Event::FlowTimer(f));
        }
        if let Some(f) = got.wake {
            self.hosts.wake_flow(&mut env!(self), f, got.repaced);
        }
    }

    /// Accounts a packet dropped by a queue or lost on a link, and frees its slot.
    fn lose(&mut self, i: u32) {
        let packet = self.fabric.slots.pkt(i);
        if packet.kind.is_forward() {
            self.cx.counters.data_dropped += 1;
            self.flows[packet.flow.idx()].packets_dropped += 1;
        } else {
            self.cx.counters.acks_dropped += 1;
        }
        self.fabric.slots.release(i);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_calendar_spans_twice_the_longest_hop_in_quarter_ack_buckets() {
        // The benchmark's setting: 100 Gb/s, 1 us links, 4,096 + 82 B packets, 64 B ACKs. An
        // ACK serializes in 5,120 ps; a packet in 334,240 ps.
        let topo = crate::net::Topology::fat_tree(8, crate::net::topology::TEST_LINKS);
        let pk = crate::net::config::PacketConfig {
            payload_bytes: 4096,
            header_bytes: 82,
            ack_bytes: 64,
        };
        assert_eq!(calendar_shape(&topo, &pk), (1280, 2 * 1_334_240));
        let q = EventQueue::<Packed>::with_span(1280, 2 * 1_334_240);
        assert_eq!(q.wheel_buckets(), 4096);
    }

    #[test]
    fn events_pack_losslessly() {
        for e in [
            Event::FlowStart(FlowId(0)),
            Event::Arrive(PortId(MAX_EVENT_ID)),
            Event::HostWake(HostId(12345)),
            Event::PullWake(HostId(7)),
            Event::Pfc(PortId(MAX_EVENT_ID)),
            Event::Depart(PortId(3)),
        ] {
            assert_eq!(Event::from(Packed::from(e)), e);
        }
    }

    /// A shipping port's last arrival at the instant a packet is pushed onto it came first if
    /// it sorts first: earlier, or as early with a lower rank, or the same rank and a lower
    /// event (a lower port's arrival, or any arrival before a host's wake-up).
    #[test]
    fn an_arrival_sorts_before_the_event_being_handled_by_time_rank_then_event() {
        let t = SimTime::from_ns(10);
        let key = |e: Event| u32::from(Packed::from(e));
        let arrive = |p: u32| Event::Arrive(PortId(p));
        assert!(sorts_before(
            (SimTime::from_ns(9), 0, arrive(9)),
            (t, 0, key(arrive(1)))
        ));
        assert!(!sorts_before(
            (SimTime::from_ns(11), 0, arrive(1)),
            (t, 0, key(arrive(9)))
        ));
        assert!(sorts_before((t, 0, arrive(9)), (t, 1, key(arrive(1)))));
        assert!(sorts_before((t, 0, arrive(1)), (t, 0, key(arrive(9)))));
        assert!(!sorts_before((t, 0, arrive(9)), (t, 0, key(arrive(1)))));
        assert!(sorts_before(
            (t, 0, arrive(9)),
            (t, 0, key(Event::HostWake(HostId(0))))
        ));
        assert!(!sorts_before(
            (t, 0, arrive(0)),
            (t, 0, key(Event::FlowStart(FlowId(9))))
        ));
    }
}
