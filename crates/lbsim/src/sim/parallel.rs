//! A partitioned run: one world split by pod (leaf), each part a whole `Simulation` that
//! handles only the events of the nodes it owns, on its own thread, in conservative windows.
//!
//! Why the result cannot depend on the thread count:
//! - The event order is canonical: (time, rank, event) (see `engine::queue` and `Cx::push`),
//!   a key that names an event by what it is, not by when or where it was pushed.
//! - Every event touches the state of one node's partition only. A packet crossing a cut (a
//!   link between partitions, always switch to switch) is shipped with its arrival time; the
//!   window is the least switch-to-switch latency, so a packet leaving in one window arrives
//!   in a later one, and its departure is final before the window it arrives in begins.
//! - Failures and routing changes are replicated: every partition applies them to its copy.
//! - A run ends at the end of the window in which the last flow completes, with one
//!   partition or many (the single-threaded loop does the same).
//! - Counts are added up; each is counted where its event happened, so none twice.
//!
//! The exchange between partitions is two barriers per window and one mailbox per partition
//! (see `Exchange`): the one interface a multi-process transport would replace.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use super::control::RemoteStarts;
use super::fabric::{Cut, INSIDE, RECEIVES, SHIPS};
use super::{Event, Progress, Simulation, OBSERVE_EVENTS};
use crate::ids::{FlowId, NodeId, PortId};
use crate::net::{Packet, Topology};
use crate::time::SimTime;

/// What a partitioned run measured of itself (wall-clock fields aside, a function of the
/// scenario and the partition count).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ParallelStats {
    pub partitions: u32,
    pub window_ps: u64,
    /// Windows run (windows in which nothing was due anywhere are skipped).
    pub windows: u64,
    /// Packets shipped across cuts, and flow starts sent to another partition.
    pub shipped_packets: u64,
    pub remote_starts: u64,
    /// The most packets shipped in one window.
    pub max_shipped_per_window: u64,
    /// Events each partition handled.
    pub events: Vec<u64>,
    /// Wall seconds each partition waited at the window barriers (its idle share).
    pub wait_seconds: Vec<f64>,
    pub wall_seconds: f64,
    /// Serial parts of `wall_seconds` (Amdahl's share): building the other partitions'
    /// worlds and cutting them apart, and gathering them back into one.
    pub setup_seconds: f64,
    pub gather_seconds: f64,
}

/// Whether a run went parallel, and if not, why.
#[derive(Clone, Debug, PartialEq)]
pub enum Parallel {
    Ran(ParallelStats),
    /// Ran on one thread; the reason the scenario cannot be partitioned (yet).
    Single(String),
}

/// Which partition owns each node.
struct Plan {
    n: usize,
    host: Vec<u8>,
    switch: Vec<u8>,
}

impl Plan {
    /// Pods (fat-tree) or leaves (leaf-spine) in `n` contiguous blocks with their hosts; cores
    /// or spines dealt round-robin.
    fn new(topo: &Topology, threads: usize) -> Result<Plan, String> {
        let (groups, host_group, switch_group) = topo.partition_groups();
        let n = threads.min(groups as usize).min(u8::MAX as usize);
        if n < 2 {
            return Err(format!(
                "{groups} pods or leaves and {threads} threads: one partition"
            ));
        }
        let block = |g: u32| (g as usize * n / groups as usize) as u8;
        let host = host_group.into_iter().map(block).collect();
        let switch = topo
            .switches
            .iter()
            .zip(switch_group)
            .map(|(s, g)| match g {
                Some(g) => block(g),
                None => (s.index as usize % n) as u8,
            })
            .collect();
        Ok(Plan { n, host, switch })
    }

    fn owner(&self, node: NodeId) -> u8 {
        match node {
            NodeId::Host(h) => self.host[h.idx()],
            NodeId::Switch(s) => self.switch[s.idx()],
        }
    }
}

/// Where a trigger's activations come from.
#[derive(Clone, Copy, PartialEq)]
enum Fed {
    None,
    One(u8),
    Many,
}

/// Per trigger: the partitions of the completions that activate it.
fn shared_triggers(sc: &crate::scenario::Scenario, plan: &Plan) -> Vec<Fed> {
    let deps = &sc.deps;
    let mut fed = vec![Fed::None; deps.triggers.len()];
    for (list, recv) in [(&deps.on_recv_done, true), (&deps.on_send_done, false)] {
        for (f, ts) in list.iter().enumerate() {
            let spec = &sc.flows[f];
            let at = plan.host[if recv { spec.dst } else { spec.src }.idx()];
            for &t in ts {
                let e = &mut fed[t as usize];
                *e = match *e {
                    Fed::None => Fed::One(at),
                    Fed::One(p) if p == at => Fed::One(p),
                    _ => Fed::Many,
                };
            }
        }
    }
    fed
}

/// A message between partitions.
enum Msg {
    /// A packet reaches the far end of this cut link at this time.
    Packet(PortId, SimTime, Packet),
    /// A trigger fired in another partition starts this flow here at this time.
    Start(SimTime, FlowId),
    /// A shared trigger was activated at this time (sent to every partition).
    Activate(SimTime, u32),
}

/// What a partition tells the others at each window's end.
#[derive(Clone, Copy, Default)]
struct Status {
    next: Option<SimTime>,
    completed: u64,
    events: u64,
}

/// A barrier that spins briefly, then yields, instead of parking at once: a window is a few
/// hundred microseconds of work, and std's `Barrier` (a condvar) costs a sleep and a wake-up,
/// tens of microseconds, twice per window. Yielding keeps it fair when threads outnumber cores.
struct Barrier {
    n: usize,
    arrived: AtomicUsize,
    generation: AtomicUsize,
    /// A partition panicked: the others must not wait for it forever.
    failed: AtomicBool,
}

/// Marks the barrier failed if its partition's thread unwinds, so that the others stop
/// waiting and the panic reaches the caller instead of a hang.
struct FailOnPanic<'a>(&'a Barrier);

impl Drop for FailOnPanic<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.failed.store(true, Ordering::SeqCst);
        }
    }
}

impl Barrier {
    fn new(n: usize) -> Barrier {
        Barrier {
            n,
            arrived: AtomicUsize::new(0),
            generation: AtomicUsize::new(0),
            failed: AtomicBool::new(false),
        }
    }

    fn wait(&self) {
        let g = self.generation.load(Ordering::Acquire);
        if self.arrived.fetch_add(1, Ordering::AcqRel) + 1 == self.n {
            self.arrived.store(0, Ordering::Relaxed);
            self.generation.fetch_add(1, Ordering::Release);
            return;
        }
        let backoff = crossbeam_utils::Backoff::new();
        while self.generation.load(Ordering::Acquire) == g {
            if self.failed.load(Ordering::Relaxed) {
                panic!("another partition of the run panicked");
            }
            if backoff.is_completed() {
                std::thread::yield_now();
            } else {
                backoff.snooze();
            }
        }
    }
}

/// The window-end exchange: statuses, mailboxes and the two barriers. A process-level
/// backend (MPI) would implement the same three steps: all-gather the statuses, deliver
/// each partition's messages, and agree on the next window.
struct Exchange {
    barrier: Barrier,
    status: Vec<Mutex<Status>>,
    mail: Vec<Mutex<Vec<Msg>>>,
    /// Set by partition 0 before the first barrier of a window; read by all after it.
    stop: AtomicBool,
}

/// What a partition's loop hands back.
#[derive(Default)]
struct PartRun {
    windows: u64,
    shipped: u64,
    starts: u64,
    max_shipped: u64,
    wait: f64,
    stopped: bool,
}

impl Simulation {
    /// Why this run cannot be partitioned, if it cannot.
    fn unpartitionable(&self, plan: &Plan, telemetry: bool) -> Option<String> {
        let sc = &self.sc;
        if self.fabric.pfc.is_some() {
            return Some("PFC's pause frames do not cross partitions yet".into());
        }
        if telemetry {
            return Some("telemetry samples one world".into());
        }
        // A cut link shorter than the window (a scale-up domain's, across pods or leaves)
        // would deliver inside the window it was sent in.
        if let Some(l) = sc
            .topology
            .links
            .iter()
            .find(|l| plan.owner(l.from) != plan.owner(l.to) && l.latency < self.window)
        {
            return Some(format!(
                "the link {}-{} crosses partitions and is shorter than a window",
                sc.topology.node_name(l.from),
                sc.topology.node_name(l.to)
            ));
        }
        if sc.settings.failure_aware_rate && !sc.failures.is_empty() {
            return Some(
                "failure-aware rates follow which flows are sending, seen in one world".into(),
            );
        }
        // A trigger fed from one partition may start flows in another no sooner than a
        // window; one fed from several is counted everywhere at window ends, so its delay
        // must be a window too.
        let fed = shared_triggers(sc, plan);
        for (t, (fed, tr)) in fed.iter().zip(&sc.deps.triggers).enumerate() {
            let what = match *fed {
                Fed::Many => "counts completions in several partitions",
                Fed::One(p)
                    if tr
                        .targets
                        .iter()
                        .any(|&g| plan.host[sc.flows[g as usize].src.idx()] != p) =>
                {
                    "starts a flow in another partition"
                }
                _ => continue,
            };
            if tr.delay < self.window {
                return Some(format!(
                    "trigger {t} {what} sooner than one window ({} ps) after it fires",
                    self.window.ps()
                ));
            }
        }
        None
    }

    /// Makes this world partition `me` of `plan`: it keeps the events of its own nodes only.
    fn become_part(&mut self, plan: &Plan, me: u8) {
        let topo = &self.sc.topology;
        let kind = topo
            .links
            .iter()
            .map(
                |l| match (plan.owner(l.from) == me, plan.owner(l.to) == me) {
                    (true, false) => SHIPS,
                    (false, true) => RECEIVES,
                    _ => INSIDE,
                },
            )
            .collect();
        let to = topo.links.iter().map(|l| plan.owner(l.to)).collect();
        let cut = Cut::new(kind, to);
        for (p, &k) in self.fabric.ports.iter_mut().zip(&cut.kind) {
            p.ships = k == SHIPS;
        }
        self.fabric.cut = Some(Box::new(cut));
        self.hosts.owned = Some(plan.host.iter().map(|&o| o == me).collect());
        let owner: Vec<u8> = self
            .sc
            .flows
            .iter()
            .map(|f| plan.host[f.src.idx()])
            .collect();
        // Before any event is handled the set holds flow starts and control changes only.
        for (t, rank, ev) in self.cx.events.drain_all() {
            match Event::from(ev) {
                Event::FlowStart(f) if owner[f.idx()] != me => {}
                _ => self.cx.events.push_ranked(t, rank, ev),
            }
        }
        let shared = shared_triggers(&self.sc, plan)
            .into_iter()
            .map(|f| f == Fed::Many)
            .collect();
        self.control.remote = Some(Box::new(RemoteStarts {
            owner,
            me,
            out: Vec::new(),
            shared,
            acts: Vec::new(),
        }));
        if !self.control.rates_computed() {
            let cx = &mut self.cx;
            self.control
                .update_flow_rates(cx, &self.sc, &mut self.flows, &mut self.hosts);
        }
    }

    /// Handles every event before `end` (and not past `cap`); control changes are counted by
    /// partition 0 only, as every partition applies them.
    fn run_window(&mut self, end: SimTime, cap: SimTime, count_controls: bool) {
        let limit = end.min(SimTime(cap.ps().saturating_add(1)));
        while let Some((t, rank, ev, next)) = self.cx.events.pop_ranked_before(limit) {
            self.cx.now = t;
            self.cx.rank = rank;
            self.cx.key = ev.into();
            let ev = Event::from(ev);
            if count_controls || !matches!(ev, Event::Control(_)) {
                self.event_count += 1;
            }
            if let Some(Event::Arrive(p)) = next.map(Event::from) {
                self.fabric.prefetch_port(p);
            }
            self.handle(ev);
        }
    }

    /// One partition's loop: exchange, then run the agreed window, until the run is over.
    fn part_loop(
        &mut self,
        me: usize,
        x: &Exchange,
        mut observe: Option<&mut dyn FnMut(&Progress) -> bool>,
    ) -> PartRun {
        let cap = self.sc.end_time.unwrap_or(SimTime::MAX);
        let total = self.flows.len() as u64;
        let w = self.window.ps();
        let mut run = PartRun::default();
        let mut outbox: Vec<Vec<Msg>> = (0..x.mail.len()).map(|_| Vec::new()).collect();
        let (mut seen_events, mut last_observed) = (0u64, 0u64);
        let mut seen_completed = 0;
        let _fail = FailOnPanic(&x.barrier);
        let wait = |b: &Barrier| {
            let t = Instant::now();
            b.wait();
            t.elapsed().as_secs_f64()
        };
        // Events before this time have been handled (the last window's limit).
        let mut horizon = SimTime::ZERO;
        loop {
            if let Some(obs) = observe.as_deref_mut() {
                if seen_events - last_observed >= OBSERVE_EVENTS {
                    last_observed = seen_events;
                    let p = Progress {
                        now: self.cx.now,
                        events: seen_events,
                        completed: seen_completed,
                        flows: total,
                    };
                    if !obs(&p) {
                        x.stop.store(true, Ordering::SeqCst);
                    }
                }
            }
            let starts = self.control.remote.as_ref().expect("a partition");
            let triggers = &self.sc.deps.triggers;
            let next = [
                self.cx.events.peek_time(),
                self.fabric.next_shipment(),
                starts.out.iter().map(|s| s.0).min(),
                // The soonest a shared trigger activated here could start a flow.
                starts
                    .acts
                    .iter()
                    .map(|&(t, i)| t + triggers[i as usize].delay)
                    .min(),
            ]
            .into_iter()
            .flatten()
            .min();
            *x.status[me].lock().expect("status") = Status {
                next,
                completed: self.completed,
                events: self.event_count,
            };
            run.wait += wait(&x.barrier);
            let all: Vec<Status> = x
                .status
                .iter()
                .map(|s| *s.lock().expect("status"))
                .collect();
            seen_completed = all.iter().map(|s| s.completed).sum();
            seen_events = all.iter().map(|s| s.events).sum();
            let next = all.iter().filter_map(|s| s.next).min();
            if x.stop.load(Ordering::SeqCst) {
                run.stopped = true;
                break;
            }
            if total > 0 && seen_completed == total {
                break;
            }
            let Some(next) = next else { break };
            if next > cap {
                self.cx.now = cap;
                break;
            }
            let end = SimTime((next.ps() / w + 1) * w);
            // What reached the far end of a cut link before this window leaves its ring;
            // then ship what arrives in the coming window (see the module's note).
            self.fabric.retire_shipped(SimTime(end.ps() - w));
            let mut shipped = 0;
            self.fabric.ship(end, |to, port, t, pkt| {
                outbox[to as usize].push(Msg::Packet(port, t, pkt));
                shipped += 1;
            });
            let starts = self.control.remote.as_mut().expect("a partition");
            for (t, f) in starts.out.drain(..) {
                outbox[starts.owner[f.idx()] as usize].push(Msg::Start(t, f));
                run.starts += 1;
            }
            let mut acts = std::mem::take(&mut starts.acts);
            for (to, o) in outbox.iter_mut().enumerate() {
                if to != me {
                    o.extend(acts.iter().map(|&(t, i)| Msg::Activate(t, i)));
                }
            }
            run.shipped += shipped;
            run.max_shipped = run.max_shipped.max(shipped);
            for (to, msgs) in outbox.iter_mut().enumerate() {
                if !msgs.is_empty() {
                    x.mail[to].lock().expect("mail").append(msgs);
                }
            }
            run.wait += wait(&x.barrier);
            let mail = std::mem::take(&mut *x.mail[me].lock().expect("mail"));
            for m in mail {
                match m {
                    Msg::Packet(port, t, pkt) => {
                        debug_assert!(t.ps() >= end.ps() - w, "a packet shipped too late");
                        self.fabric.take_shipped(&mut self.cx.events, port, t, pkt)
                    }
                    Msg::Start(t, f) => self.cx.events.push(t, Event::FlowStart(f).into()),
                    Msg::Activate(t, i) => acts.push((t, i)),
                }
            }
            if !acts.is_empty() {
                self.control
                    .apply_shared(&mut self.cx.events, &self.sc.deps, acts);
            }
            run.windows += 1;
            horizon = end.min(SimTime(cap.ps().saturating_add(1)));
            self.run_window(end, cap, me == 0);
        }
        // The single world ends with everything that arrived before the last window's end
        // popped from its rings.
        self.fabric.retire_shipped(horizon);
        run
    }

    /// Runs this scenario in `threads` partitions, or says why it cannot (then nothing has
    /// run). Returns whether the observer stopped the run.
    pub(super) fn run_parallel(
        &mut self,
        threads: usize,
        observe: &mut dyn FnMut(&Progress) -> bool,
        telemetry: bool,
    ) -> Result<bool, String> {
        let plan = Plan::new(&self.sc.topology, threads)?;
        if let Some(why) = self.unpartitionable(&plan, telemetry) {
            return Err(why);
        }
        let wall = Instant::now();
        // Each partition's world is built (its scenario copied) on its own thread.
        let sc = &self.sc;
        let mut parts: Vec<Simulation> = std::thread::scope(|s| {
            let hs: Vec<_> = (1..plan.n)
                .map(|_| s.spawn(move || Simulation::new(sc.clone())))
                .collect();
            hs.into_iter()
                .map(|h| h.join().expect("a partition builds"))
                .collect()
        });
        self.become_part(&plan, 0);
        for (i, p) in parts.iter_mut().enumerate() {
            p.become_part(&plan, i as u8 + 1);
        }
        let setup = wall.elapsed().as_secs_f64();
        let x = Exchange {
            barrier: Barrier::new(plan.n),
            status: (0..plan.n).map(|_| Mutex::new(Status::default())).collect(),
            mail: (0..plan.n).map(|_| Mutex::new(Vec::new())).collect(),
            stop: AtomicBool::new(false),
        };
        let runs: Vec<PartRun> = std::thread::scope(|s| {
            let hs: Vec<_> = parts
                .iter_mut()
                .enumerate()
                .map(|(i, p)| {
                    let x = &x;
                    s.spawn(move || p.part_loop(i + 1, x, None))
                })
                .collect();
            let mine = self.part_loop(0, &x, Some(observe));
            std::iter::once(mine)
                .chain(hs.into_iter().map(|h| h.join().expect("a partition runs")))
                .collect()
        });
        let mut events: Vec<u64> = Vec::with_capacity(plan.n);
        events.push(self.event_count);
        for p in &parts {
            events.push(p.event_count);
        }
        let gathering = Instant::now();
        self.gather(&plan, parts);
        let gather = gathering.elapsed().as_secs_f64();
        self.event_count = events.iter().sum();
        self.parallel = Some(Parallel::Ran(ParallelStats {
            partitions: plan.n as u32,
            window_ps: self.window.ps(),
            windows: runs[0].windows,
            shipped_packets: runs.iter().map(|r| r.shipped).sum(),
            remote_starts: runs.iter().map(|r| r.starts).sum(),
            max_shipped_per_window: runs.iter().map(|r| r.max_shipped).max().unwrap_or(0),
            events,
            wait_seconds: runs.iter().map(|r| r.wait).collect(),
            wall_seconds: wall.elapsed().as_secs_f64(),
            setup_seconds: setup,
            gather_seconds: gather,
        }));
        Ok(runs[0].stopped)
    }

    /// Gathers the partitions' worlds into this one (partition 0): each port from the
    /// partition that owns it, each flow's sender and receiver from theirs, counts added up.
    fn gather(&mut self, plan: &Plan, mut parts: Vec<Simulation>) {
        let topo = &self.sc.topology;
        self.fabric.drop_inbound();
        for p in &mut parts {
            p.fabric.drop_inbound();
        }
        let now = parts
            .iter()
            .map(|p| p.cx.now)
            .fold(self.cx.now, SimTime::max);
        // Every packet still held is in a ring of a port its partition owns (the inbound
        // copies are gone): each store joins this one whole, and the ports moving here follow.
        let bases: Vec<u32> = parts
            .iter_mut()
            .enumerate()
            .map(|(k, part)| {
                let held = topo
                    .links
                    .iter()
                    .enumerate()
                    .filter(|(_, l)| plan.owner(l.from) as usize == k + 1)
                    .map(|(i, _)| part.fabric.ports[i].len())
                    .sum();
                let store = std::mem::take(&mut part.fabric.slots);
                self.fabric.slots.absorb(store, held)
            })
            .collect();
        for (i, l) in topo.links.iter().enumerate() {
            let (a, b) = (plan.owner(l.from) as usize, plan.owner(l.to) as usize);
            // A cut link's losses were counted where its packets landed.
            let losses = if a != b && b != 0 {
                parts[b - 1].fabric.ports[i].stats.link_losses
            } else if a != b {
                self.fabric.ports[i].stats.link_losses
            } else {
                0
            };
            if a != 0 {
                let part = &mut parts[a - 1];
                std::mem::swap(&mut self.fabric.ports[i], &mut part.fabric.ports[i]);
                self.fabric.ports[i].rebase(bases[a - 1]);
            }
            if a != b {
                self.fabric.ports[i].stats.link_losses = losses;
            }
        }
        let mut copies: Vec<Vec<Option<crate::transport::Flow>>> = parts
            .iter_mut()
            .map(|p| std::mem::take(&mut p.flows).into_iter().map(Some).collect())
            .collect();
        let own = std::mem::take(&mut self.flows);
        copies.insert(0, own.into_iter().map(Some).collect());
        let flows = (0..self.sc.flows.len())
            .map(|f| {
                let spec = &self.sc.flows[f];
                let (a, b) = (
                    plan.host[spec.src.idx()] as usize,
                    plan.host[spec.dst.idx()] as usize,
                );
                let dropped = (0..copies.len())
                    .filter(|&c| c != a)
                    .map(|c| copies[c][f].as_ref().map_or(0, |x| x.packets_dropped))
                    .sum();
                let mut flow = copies[a][f].take().expect("a sender copy");
                let mut rx = if b != a { copies[b][f].take() } else { None };
                flow.gather(rx.as_mut(), dropped);
                flow
            })
            .collect();
        self.flows = flows;
        for p in &parts {
            self.cx.counters.add(&p.cx.counters);
            self.completed += p.completed;
            self.fabric.hops += p.fabric.hops;
        }
        self.cx.now = now;
        self.ended = Some(now);
        self.fabric.cut = None;
        for p in &mut self.fabric.ports {
            p.ships = false;
        }
        self.hosts.owned = None;
        self.control.remote = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A partition that panics between windows fails the barrier, so its partner panics in
    /// turn instead of spinning forever.
    #[test]
    fn a_panicking_partition_fails_the_barrier_instead_of_hanging_it() {
        let b = Barrier::new(2);
        let (failed, partner) = std::thread::scope(|s| {
            let failed = s.spawn(|| {
                let _fail = FailOnPanic(&b);
                panic!("a partition's model failed");
            });
            let partner = s.spawn(|| b.wait());
            (failed.join(), partner.join())
        });
        assert!(failed.is_err());
        assert!(partner.is_err(), "the partner should panic, not wait");
    }
}
