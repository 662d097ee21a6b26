//! A reference schedule written apart from the simulator, and random loss-free chains that must
//! agree with it within 1%: every flow's finish and every collective's completion time.
//!
//! The reference: each host's NIC sends one packet at a time at line rate, taking its active
//! flows in plain round-robin (f1 f2 f3 f1 ...; flows that start at one instant join in index
//! order), a data packet no sooner than its predecessor's wire size at line rate x `rate_coef`
//! after it. A flow sends exactly its message: full packets, then the remainder. Every data
//! packet is answered on arrival by an ACK, which the receiver's NIC sends after the packet it
//! is sending (ACKs are not paced, and data waits for them). Each packet then crosses its path
//! store-and-forward: each link's serialization at its rate plus its latency (and the switch
//! latency on the way into a switch), once the link has finished the packets given it before
//! (a short last packet cannot overtake the full one ahead of it). A flow completes when its
//! last packet arrives, and its sender learns so when that packet's ACK arrives; triggers
//! count those and start their targets their delay later (a flow waiting for several starts
//! begins at the last).
//!
//! The cases keep contention at the NICs: one path per pair (one host per leaf with one
//! spine, every link carrying one host's traffic at least as fast as its NIC; every host under
//! one leaf; or the two-host fat-tree), and a host receives from one host at a time (rings,
//! halving-doubling and pairwise rounds in step, connection matrices along a derangement). What
//! is left in the fabric is an ACK meeting data on a host's downlink.
//!
//! Ignored until issue 38 is fixed: a finished idealized-erasure flow keeps sending for a round
//! trip (sharing its NIC with the next flow, and making its receiver send ACKs), which the
//! reference does not; and rings and FSDP (several ranks a host start flows together) also need
//! plain round-robin, where the simulator now serves a flow starting on an idle NIC twice
//! (f1 f1 f2 f3 ...). With both, every case here agreed exactly. `LBSIM_REFERENCE_VERBOSE=1`
//! prints every case.

mod common;

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, VecDeque};
use std::path::Path;

use lbsim::net::config::TopologyKind;
use lbsim::Scenario;

/// Largest relative error allowed, on CCTs and on finishes (measured from the first start).
const TOLERANCE: f64 = 0.01;

/// SplitMix64: the cases' own generator, seeded per family.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in lo..=hi.
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo + 1)
    }
    fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.next() as usize % xs.len()]
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
}

// ---------------------------------------------------------------------------------------------
// The reference.

/// Picoseconds to put `bytes` on a link of `bps` bits per second, rounded up.
fn ser(bps: u64, bytes: u64) -> u64 {
    (bytes as u128 * 8_000_000_000_000).div_ceil(bps as u128) as u64
}

/// Which link: (tier, index), unique in the fabrics the cases use.
type LinkKey = (u8, u32);

/// One link of a path: who drives it, its rate, and its latency (the switch latency included
/// on a link into a switch).
#[derive(Clone, Copy, Debug)]
struct Link {
    key: LinkKey,
    bps: u64,
    latency: u64,
}

/// The fabric's shape as the reference reads it from `[topology]`. Every pair of hosts has
/// one path: leaf-spine with one spine, or the two-host fat-tree.
struct Hops {
    kind: TopologyKind,
    hosts_per_leaf: u32,
    host_bps: u64,
    uplink_bps: u64,
    link_ps: u64,
    switch_ps: u64,
}

impl Hops {
    fn new(sc: &Scenario) -> Hops {
        let t = &sc.file.topology;
        match t.kind {
            TopologyKind::LeafSpine => assert_eq!(t.spines, 1, "one path per pair"),
            TopologyKind::FatTree => assert_eq!(t.k, 2, "one path per pair"),
            TopologyKind::Clos | TopologyKind::Simai | TopologyKind::Ai => {
                unreachable!("the reference draws leaf-spines and fat-trees")
            }
        }
        let gbps = |g: f64| (g * 1e9).round() as u64;
        Hops {
            kind: t.kind,
            hosts_per_leaf: t.hosts_per_leaf,
            host_bps: gbps(t.link_gbps),
            uplink_bps: gbps(
                t.hosts_per_leaf as f64 * t.link_gbps / (t.spines as f64 * t.oversubscription),
            ),
            link_ps: (t.link_latency_ns * 1000.0).round() as u64,
            switch_ps: (t.switch_latency_ns * 1000.0).round() as u64,
        }
    }

    /// The links from `src` to `dst`, the sender's NIC first.
    fn path(&self, src: u32, dst: u32) -> Vec<Link> {
        let (h, up) = (self.host_bps, self.uplink_bps);
        // (tier, index, rate): every tier but the last leads into a switch.
        let tiers: Vec<(u8, u32, u64)> = match self.kind {
            TopologyKind::LeafSpine => {
                let (a, b) = (src / self.hosts_per_leaf, dst / self.hosts_per_leaf);
                if a == b {
                    vec![(0, src, h), (9, dst, h)]
                } else {
                    vec![(0, src, h), (1, a, up), (2, b, up), (9, dst, h)]
                }
            }
            // Host, ToR and aggregation switch per pod, one core: the pod is the host.
            TopologyKind::FatTree => vec![
                (0, src, h),
                (1, src, h),
                (2, src, h),
                (3, dst, h),
                (4, dst, h),
                (9, dst, h),
            ],
            TopologyKind::Clos | TopologyKind::Simai | TopologyKind::Ai => {
                unreachable!("the reference draws leaf-spines and fat-trees")
            }
        };
        let last = tiers.len() - 1;
        tiers
            .iter()
            .enumerate()
            .map(|(i, &(tier, index, bps))| Link {
                key: (tier, index),
                bps,
                latency: self.link_ps + if i < last { self.switch_ps } else { 0 },
            })
            .collect()
    }
}

/// What the reference says of one flow (picoseconds).
#[derive(Clone, Copy, Debug, Default)]
struct RefFlow {
    start: u64,
    finish: u64,
    packets: u64,
}

/// A packet on its way: its flow, whether it is data (else the flow's ACK) and its message's
/// last (or that one's ACK), its payload and size, and the next link it takes.
#[derive(Clone, Copy, Debug)]
struct Pkt {
    flow: usize,
    data: bool,
    last: bool,
    payload: u64,
    wire: u64,
    hop: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    /// Packet `i` reaches the input of its next link (or, past its last, its host).
    Hop(usize),
    Start(usize),
    /// The host's NIC may take its next data packet.
    Nic(u32),
}

impl Ev {
    /// Order at one instant: arrivals (as they were scheduled), then starts by flow index, then
    /// the NICs' choices, so that the flows starting at an instant are all in the ring, in index
    /// order, before the NIC takes the first of them.
    fn order(&self) -> (u8, u64) {
        match *self {
            Ev::Hop(_) => (0, 0),
            Ev::Start(f) => (1, f as u64),
            Ev::Nic(_) => (2, 0),
        }
    }
}

/// An event in the reference's queue: (time, order at that time, sequence, event).
type Due = (u64, (u8, u64), u64, Ev);

#[derive(Default)]
struct Nic {
    ring: VecDeque<usize>,
    /// The earliest next data packet (the rate_coef pacer).
    paced: u64,
    /// The pending `Nic` event, if any.
    wake: Option<u64>,
}

struct Reference<'a> {
    sc: &'a Scenario,
    hops: Hops,
    /// Each direction's links (data takes (src, dst), its ACKs (dst, src)).
    paths: BTreeMap<(u32, u32), Vec<Link>>,
    /// When each link (a NIC is its host's first link) finishes what it has been given.
    free: BTreeMap<LinkKey, u64>,
    pace_bps: u64,
    /// The NIC serves a flow that starts on it while idle at once, then puts it behind the
    /// flows starting at the same instant (the simulator's order today, issue 38 item 10:
    /// f1 f1 f2 f3 ...), instead of plain round-robin. Only for the comparison's second column.
    first_slot_twice: bool,
    events: BinaryHeap<Reverse<Due>>,
    seq: u64,
    pkts: Vec<Pkt>,
    nics: Vec<Nic>,
    unsent: Vec<u64>,
    got: Vec<u64>,
    waits: Vec<u32>,
    started: Vec<Option<u64>>,
    finish: Vec<Option<u64>>,
    packets: Vec<u64>,
    counts: Vec<u32>,
    fired: Vec<bool>,
}

impl<'a> Reference<'a> {
    fn new(sc: &'a Scenario, first_slot_twice: bool) -> Reference<'a> {
        let hops = Hops::new(sc);
        let pace_bps = (hops.host_bps as f64 * sc.file.transport.rate_coef).round() as u64;
        let n = sc.flows.len();
        Reference {
            sc,
            hops,
            paths: BTreeMap::new(),
            free: BTreeMap::new(),
            pace_bps,
            first_slot_twice,
            events: BinaryHeap::new(),
            seq: 0,
            pkts: Vec::new(),
            nics: (0..sc.topology.hosts).map(|_| Nic::default()).collect(),
            unsent: sc.flows.iter().map(|f| f.size_bytes).collect(),
            got: vec![0; n],
            waits: (0..n).map(|f| sc.deps.waits(f)).collect(),
            started: vec![None; n],
            finish: vec![None; n],
            packets: vec![0; n],
            counts: vec![0; sc.deps.triggers.len()],
            fired: vec![false; sc.deps.triggers.len()],
        }
    }

    fn push(&mut self, t: u64, ev: Ev) {
        self.seq += 1;
        self.events.push(Reverse((t, ev.order(), self.seq, ev)));
    }

    /// The links from `src` to `dst`; checked once against the topology's own shortest path.
    fn path(&mut self, src: u32, dst: u32) -> &[Link] {
        let hops = &self.hops;
        let topo = &self.sc.topology;
        self.paths.entry((src, dst)).or_insert_with(|| {
            let p = hops.path(src, dst);
            let t = topo.path(lbsim::ids::HostId(src), lbsim::ids::HostId(dst));
            let rates: Vec<u64> = t.rates.iter().map(|r| r.0).collect();
            let mine: Vec<u64> = p.iter().map(|l| l.bps).collect();
            let latency: u64 = p.iter().map(|l| l.latency).sum();
            assert_eq!(
                (rates, t.latency.ps()),
                (mine, latency),
                "path {src}->{dst}"
            );
            p
        })
    }

    /// Packet `i` at the input of its next link at `t`: it starts across once the link has
    /// finished the packets before it, and reaches the far end a serialization and a latency
    /// later.
    fn hop(&mut self, t: u64, i: usize) {
        let p = self.pkts[i];
        let spec = self.sc.flows[p.flow];
        let (from, to) = if p.data {
            (spec.src.0, spec.dst.0)
        } else {
            (spec.dst.0, spec.src.0)
        };
        let path = self.path(from, to);
        let Some(&link) = path.get(p.hop) else {
            return self.arrive(t, p);
        };
        let free = self.free.entry(link.key).or_insert(0);
        let start = t.max(*free);
        *free = start + ser(link.bps, p.wire);
        self.pkts[i].hop += 1;
        self.push(start + ser(link.bps, p.wire) + link.latency, Ev::Hop(i));
    }

    fn run(mut self) -> Vec<RefFlow> {
        for f in 0..self.sc.flows.len() {
            if self.sc.deps.timed(f) {
                self.push(self.sc.flows[f].start.ps(), Ev::Start(f));
            }
        }
        while let Some(Reverse((t, _, _, ev))) = self.events.pop() {
            match ev {
                Ev::Start(f) => self.start(t, f),
                Ev::Nic(h) => self.nic(t, h),
                Ev::Hop(i) => self.hop(t, i),
            }
        }
        (0..self.sc.flows.len())
            .map(|f| RefFlow {
                start: self.started[f].expect("every flow starts"),
                finish: self.finish[f].expect("every flow finishes"),
                packets: self.packets[f],
            })
            .collect()
    }

    fn start(&mut self, t: u64, f: usize) {
        if self.started[f].is_some() {
            return;
        }
        if self.waits[f] > 1 {
            self.waits[f] -= 1;
            return;
        }
        self.started[f] = Some(t);
        let h = self.sc.flows[f].src.0;
        self.nics[h as usize].ring.push_back(f);
        let ready = self.ready(h).max(t);
        if self.first_slot_twice && ready == t {
            self.send(t, h);
        } else {
            self.wake(h, ready);
        }
    }

    /// When host `h`'s NIC may take a data packet: it is idle and its pacer allows.
    fn ready(&self, h: u32) -> u64 {
        let idle = self.free.get(&(0, h)).copied().unwrap_or(0);
        idle.max(self.nics[h as usize].paced)
    }

    fn wake(&mut self, h: u32, at: u64) {
        let nic = &mut self.nics[h as usize];
        if nic.wake.is_some_and(|w| w <= at) {
            return;
        }
        nic.wake = Some(at);
        self.push(at, Ev::Nic(h));
    }

    fn nic(&mut self, t: u64, h: u32) {
        let nic = &mut self.nics[h as usize];
        if nic.wake != Some(t) {
            return; // superseded
        }
        nic.wake = None;
        if nic.ring.is_empty() {
            return;
        }
        let ready = self.ready(h);
        if ready > t {
            self.wake(h, ready);
        } else {
            self.send(t, h);
        }
    }

    /// The NIC of host `h` puts the next packet of its ring's first flow on the wire at `t`.
    fn send(&mut self, t: u64, h: u32) {
        let pk = &self.sc.file.packet;
        let (mss, header) = (pk.payload_bytes as u64, pk.header_bytes as u64);
        let nic = &mut self.nics[h as usize];
        let f = nic.ring.pop_front().expect("a flow to serve");
        let payload = self.unsent[f].min(mss);
        self.unsent[f] -= payload;
        self.packets[f] += 1;
        let wire = payload + header;
        nic.paced = t + ser(self.pace_bps, wire);
        if self.unsent[f] > 0 {
            nic.ring.push_back(f);
        }
        let more = !nic.ring.is_empty();
        self.pkts.push(Pkt {
            flow: f,
            data: true,
            last: self.unsent[f] == 0,
            payload,
            wire,
            hop: 0,
        });
        self.hop(t, self.pkts.len() - 1);
        if more {
            self.wake(h, self.ready(h));
        }
    }

    /// Packet `p` reaches its host at `t`.
    fn arrive(&mut self, t: u64, p: Pkt) {
        let f = p.flow;
        if !p.data {
            if !p.last {
                return;
            }
            // The ACK of the last packet: the sender learns the message is complete.
            for &tr in self.sc.deps.on_send_done.get(f).into_iter().flatten() {
                self.activate(t, tr as usize);
            }
            return;
        }
        self.got[f] += p.payload;
        let last = self.got[f] >= self.sc.flows[f].size_bytes;
        // Every data packet is ACKed at once: the ACK takes the receiver's NIC after whatever
        // it is sending, and the links back behind what they carry.
        self.pkts.push(Pkt {
            flow: f,
            data: false,
            last,
            payload: 0,
            wire: self.sc.file.packet.ack_bytes as u64,
            hop: 0,
        });
        self.hop(t, self.pkts.len() - 1);
        if !last {
            return;
        }
        self.finish[f] = Some(t);
        for &tr in self.sc.deps.on_recv_done.get(f).into_iter().flatten() {
            self.activate(t, tr as usize);
        }
    }

    fn activate(&mut self, t: u64, tr: usize) {
        let trig = &self.sc.deps.triggers[tr];
        self.counts[tr] += 1;
        let fire = if trig.multishot {
            self.counts[tr] >= trig.needed
        } else {
            !self.fired[tr] && self.counts[tr] == trig.needed
        };
        if !fire {
            return;
        }
        self.fired[tr] = true;
        let at = t + trig.delay.ps();
        for &g in &trig.targets {
            self.push(at, Ev::Start(g as usize));
        }
    }
}

fn reference(sc: &Scenario, first_slot_twice: bool) -> Vec<RefFlow> {
    Reference::new(sc, first_slot_twice).run()
}

// ---------------------------------------------------------------------------------------------
// Hand checks of the reference itself.

#[test]
fn the_reference_gives_the_closed_forms_of_one_flow_and_of_two_sharing_a_nic() {
    // 800 Gb/s, 500 ns links, 300 ns switches, one host per leaf: 4 hops, 3 into switches.
    let sets = [
        "topology.kind=leaf_spine",
        "topology.leaves=2",
        "topology.hosts_per_leaf=1",
        "topology.spines=1",
        "topology.switch_latency_ns=300",
        "workload.kind=connection_matrix",
    ];
    let dir = common::TempDir::new("reference", "closed-forms");
    // One flow of 10 full packets and a 100-byte tail; then two flows at once from host 0.
    let one = "Nodes 2\nConnections 1\n0->1 id 1 start 0 size 41060\n";
    let two =
        "Nodes 2\nConnections 2\n0->1 id 1 start 0 size 40960\n0->1 id 2 start 0 size 40960\n";
    let build = |name: &str, text: &str| {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        let mut s: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        s.push(format!("workload.path=\"{}\"", path.display()));
        let s: Vec<&str> = s.iter().map(String::as_str).collect();
        common::scenario(&s)
    };
    let full = 41_580; // 4158 B at 800 Gb/s
    let tail = 1_620; // 162 B
    let latency = 4 * 500_000 + 3 * 300_000;
    // The tenth full packet leaves the NIC at 9 x full and crosses four links; the tail,
    // right behind it, waits for it at every link (store-and-forward: no overtaking).
    let r = reference(&build("one.cm", one), false);
    assert_eq!(r[0].finish, 9 * full + 4 * full + tail + latency);
    assert_eq!(r[0].packets, 11);
    // Alternating, flow 1's tenth packet is the NIC's 19th, flow 2's the 20th. ACKs go the
    // other way and never delay host 0's data.
    let r = reference(&build("two.cm", two), false);
    assert_eq!(r[0].finish, 18 * full + 4 * full + latency);
    assert_eq!(r[1].finish, 19 * full + 4 * full + latency);
    // Serving flow 1 twice first (f1 f1 f2 f1 f2 ...) ends it a slot sooner, at the 18th.
    let q = reference(&build("two.cm", two), true);
    assert_eq!(q[0].finish, 17 * full + 4 * full + latency);
    assert_eq!(q[1].finish, r[1].finish);
}

// ---------------------------------------------------------------------------------------------
// Comparison with the simulator.

/// The worst relative errors of one case.
#[derive(Clone, Copy, Debug, Default)]
struct Errors {
    /// CCT: each collective's (or the run's, if it has none).
    cct: f64,
    /// The same against the reference that serves a starting flow twice.
    cct_first_twice: f64,
    /// Each flow's finish, measured from the first start.
    finish: f64,
    finish_first_twice: f64,
    /// Data packets the simulator sent beyond the message's, over the reference's.
    extra_packets: f64,
}

fn rel(sim: u64, reference: u64, span: u64) -> f64 {
    sim.abs_diff(reference) as f64 / span.max(1) as f64
}

/// CCTs from (start, finish) per flow: per collective, or of the run.
fn ccts(sc: &Scenario, times: &[(u64, u64)]) -> Vec<u64> {
    let span = |r: std::ops::Range<usize>| {
        let s = times[r.clone()].iter().map(|t| t.0).min().unwrap();
        let e = times[r].iter().map(|t| t.1).max().unwrap();
        e - s
    };
    if sc.labels.collectives.is_empty() {
        return vec![span(0..times.len())];
    }
    sc.labels
        .collectives
        .iter()
        .filter(|c| !c.flows.is_empty())
        .map(|c| span(c.flows.start as usize..c.flows.end as usize))
        .collect()
}

fn compare(sc: Scenario, what: &str) -> Errors {
    assert!(!sc.flows.is_empty(), "{what}: no flows");
    let plain = reference(&sc, false);
    let twice = reference(&sc, true);
    let want = ccts(
        &sc,
        &plain
            .iter()
            .map(|r| (r.start, r.finish))
            .collect::<Vec<_>>(),
    );
    let want2 = ccts(
        &sc,
        &twice
            .iter()
            .map(|r| (r.start, r.finish))
            .collect::<Vec<_>>(),
    );
    let sim = common::run(sc.clone());
    assert_eq!(sim.counters().data_dropped, 0, "{what}: lost packets");
    let recs = sim.flow_records();
    let got: Vec<(u64, u64)> = recs
        .iter()
        .map(|r| {
            (
                r.start_ps,
                r.finish_ps.unwrap_or_else(|| panic!("{what}: unfinished")),
            )
        })
        .collect();
    let have = ccts(&sc, &got);
    let mut e = Errors::default();
    for ((g, w), w2) in have.iter().zip(&want).zip(&want2) {
        e.cct = e.cct.max(rel(*g, *w, *w));
        e.cct_first_twice = e.cct_first_twice.max(rel(*g, *w2, *w2));
    }
    let origin = plain.iter().map(|r| r.start).min().unwrap();
    let (mut sent, mut needed) = (0, 0);
    for (((g, r), r2), rec) in got.iter().zip(&plain).zip(&twice).zip(&recs) {
        e.finish = e.finish.max(rel(g.1, r.finish, r.finish - origin));
        let f2 = rel(g.1, r2.finish, r2.finish - origin);
        e.finish_first_twice = e.finish_first_twice.max(f2);
        sent += rec.data_packets_sent;
        needed += r.packets;
    }
    e.extra_packets = (sent - needed) as f64 / needed as f64;
    e
}

/// A fabric whose only contention is at the NICs, for `hosts` hosts, and the packet and rate
/// settings, drawn at random.
fn fabric(rng: &mut Rng, hosts: u32) -> Vec<String> {
    let mut s = vec![
        format!("seed={}", rng.range(1, 1000)),
        format!("topology.link_gbps={}", rng.pick(&[100, 400, 800])),
        format!(
            "topology.link_latency_ns={}",
            rng.pick(&[0, 200, 500, 1000])
        ),
        format!("topology.switch_latency_ns={}", rng.pick(&[0, 300])),
        format!("packet.payload_bytes={}", rng.pick(&[1000, 4096])),
        format!("packet.header_bytes={}", rng.pick(&[62, 82])),
        format!("packet.ack_bytes={}", rng.pick(&[64, 128])),
        format!("transport.rate_coef={}", rng.pick(&[1.0, 1.0, 0.9])),
    ];
    match rng.range(0, if hosts == 2 { 2 } else { 1 }) {
        0 => s.extend([
            "topology.kind=leaf_spine".to_string(),
            format!("topology.leaves={hosts}"),
            "topology.hosts_per_leaf=1".to_string(),
            "topology.spines=1".to_string(),
            format!("topology.oversubscription={}", rng.pick(&[1.0, 0.5])),
        ]),
        1 => s.extend([
            "topology.kind=leaf_spine".to_string(),
            "topology.leaves=1".to_string(),
            format!("topology.hosts_per_leaf={hosts}"),
            "topology.spines=1".to_string(),
        ]),
        _ => s.push("topology.k=2".to_string()),
    }
    s
}

fn payload(s: &[String]) -> u64 {
    let v = s
        .iter()
        .find_map(|x| x.strip_prefix("packet.payload_bytes="))
        .unwrap();
    v.parse().unwrap()
}

/// Collective keys: `ranks` ranks at `gpus` per host from host 0, maybe a later start.
fn ranks(rng: &mut Rng, s: &mut Vec<String>, ranks: u64, gpus: u64) {
    s.extend([
        format!("workload.group_size={ranks}"),
        format!("workload.gpus_per_host={gpus}"),
    ]);
    if rng.chance(50) {
        s.push(format!(
            "workload.start_us={}",
            rng.range(1, 40) as f64 / 2.0
        ));
    }
}

type Gen = fn(&mut Rng, &Path, usize) -> Vec<String>;

fn ring(rng: &mut Rng, kind: &str) -> Vec<String> {
    let hosts = rng.range(2, 6);
    let gpus = rng.pick(&[1, 1, 2, 3]);
    let mut s = fabric(rng, hosts as u32);
    let n = hosts * gpus;
    // A chunk of 16 to 48 packets, its last one short.
    let bytes = n * (rng.range(16, 48) * payload(&s) - rng.range(0, 999));
    s.extend([
        format!("workload.kind={kind}"),
        format!("workload.message_bytes={bytes}"),
        format!("workload.iterations={}", rng.range(1, 2)),
    ]);
    ranks(rng, &mut s, n, gpus);
    s
}

fn ring_allgather(rng: &mut Rng, _: &Path, _: usize) -> Vec<String> {
    ring(rng, "ring_allgather")
}

fn ring_reduce_scatter(rng: &mut Rng, _: &Path, _: usize) -> Vec<String> {
    ring(rng, "ring_reduce_scatter")
}

fn ring_allreduce(rng: &mut Rng, _: &Path, _: usize) -> Vec<String> {
    ring(rng, "ring_allreduce")
}

fn halving_doubling(rng: &mut Rng, _: &Path, _: usize) -> Vec<String> {
    let gpus = rng.pick(&[1, 1, 2]);
    let hosts = if gpus == 1 {
        rng.pick(&[2, 4, 8])
    } else {
        rng.pick(&[2, 4])
    };
    let mut s = fabric(rng, hosts as u32);
    let n = hosts * gpus;
    let bytes = n * (rng.range(16, 48) * payload(&s) - rng.range(0, 999));
    s.extend([
        "workload.kind=halving_doubling_allreduce".to_string(),
        format!("workload.message_bytes={bytes}"),
    ]);
    ranks(rng, &mut s, n, gpus);
    s
}

fn pairwise(rng: &mut Rng, _: &Path, _: usize) -> Vec<String> {
    let hosts = rng.range(2, 6);
    let gpus = rng.pick(&[1, 1, 2]);
    let mut s = fabric(rng, hosts as u32);
    let bytes = rng.range(16, 48) * payload(&s) - rng.range(0, 999);
    s.extend([
        "workload.kind=all_to_all".to_string(),
        "workload.all_to_all_algorithm=pairwise".to_string(),
        format!("workload.message_bytes={bytes}"),
    ]);
    ranks(rng, &mut s, hosts * gpus, gpus);
    s
}

fn fsdp(rng: &mut Rng, _: &Path, _: usize) -> Vec<String> {
    let hosts = rng.range(2, 5);
    let gpus = rng.pick(&[1, 1, 2, 4]);
    let mut s = fabric(rng, hosts as u32);
    let n = hosts * gpus;
    let bytes = n * (rng.range(16, 40) * payload(&s) - rng.range(0, 999));
    s.extend([
        "workload.kind=fsdp".to_string(),
        format!("workload.layers={}", rng.range(1, 3)),
        format!("workload.layer_bytes={bytes}"),
        format!(
            "workload.compute_us_per_layer={}",
            rng.pick(&[0.0, 0.5, 3.0])
        ),
        format!("workload.iterations={}", rng.range(1, 2)),
    ]);
    ranks(rng, &mut s, n, gpus);
    s
}

/// A derangement of `n` hosts: each host sends only to its image, so each receives from one.
fn derangement(rng: &mut Rng, n: u32) -> Vec<u32> {
    loop {
        let mut p: Vec<u32> = (0..n).collect();
        for i in (1..n as usize).rev() {
            p.swap(i, rng.range(0, i as u64) as usize);
        }
        if p.iter().enumerate().all(|(i, &x)| i as u32 != x) {
            return p;
        }
    }
}

/// Connection matrices, all flows at their own start times unless `Chained`.
#[derive(Clone, Copy, PartialEq)]
enum Matrix {
    /// Hosts 0..n send one flow each to hosts n..2n, which send nothing.
    Apart,
    /// Every host sends one flow along a derangement.
    Permutation,
    /// Flows along a derangement with triggers: on receipt or on the sender's learning, one
    /// feeder or a barrier of two, with delays.
    Chained,
}

fn matrix(rng: &mut Rng, dir: &Path, i: usize, m: Matrix) -> Vec<String> {
    let chained = m == Matrix::Chained;
    let hosts = rng.range(2, 8) as u32;
    let mut s = fabric(rng, hosts);
    let mss = payload(&s);
    let to = if m == Matrix::Apart {
        let half = hosts.div_ceil(2);
        (0..hosts).map(|h| (h + half) % hosts).collect()
    } else {
        derangement(rng, hosts)
    };
    let count = match m {
        Matrix::Apart => hosts as u64 / 2,
        Matrix::Permutation => hosts as u64,
        Matrix::Chained => rng.range(3, 12),
    };
    let mut flows: Vec<String> = Vec::new();
    let mut feeds: Vec<Vec<String>> = Vec::new();
    let mut triggers = Vec::new();
    for f in 0..count as usize {
        let src = if chained {
            rng.range(0, hosts as u64 - 1) as u32
        } else {
            f as u32
        };
        let size = rng.range(10, 60) * mss - rng.range(0, mss - 1);
        let mut line = format!("{src}->{} id {} size {size}", to[src as usize], f + 1);
        if chained && f > 0 && rng.chance(70) {
            let t = triggers.len() + 1;
            let delay = rng.pick(&[0, 0, 200_000, 3_000_000]);
            let fed_by = if f > 1 && rng.chance(30) { 2 } else { 1 };
            for _ in 0..fed_by {
                let g = rng.range(0, f as u64 - 1) as usize;
                let kind = if rng.chance(30) { "send" } else { "recv" };
                feeds[g].push(format!(" {kind}_done_trigger {t}"));
            }
            triggers.push(if fed_by == 1 {
                format!("trigger id {t} oneshot delay {delay}")
            } else {
                format!("trigger id {t} barrier count 2 delay {delay}")
            });
            line.push_str(&format!(" start 0 trigger {t}"));
        } else {
            line.push_str(&format!(" start {}", rng.range(0, 20) * 500_000));
        }
        flows.push(line);
        feeds.push(Vec::new());
    }
    let mut text = format!("Nodes {hosts}\nConnections {count}\n");
    if !triggers.is_empty() {
        text.push_str(&format!("Triggers {}\n", triggers.len()));
    }
    for t in &triggers {
        text.push_str(&format!("{t}\n"));
    }
    for (l, fs) in flows.iter().zip(&feeds) {
        text.push_str(&format!("{l}{}\n", fs.concat()));
    }
    let path = dir.join(format!("{i}.cm"));
    std::fs::write(&path, &text).unwrap();
    s.extend([
        "workload.kind=connection_matrix".to_string(),
        format!("workload.path=\"{}\"", path.display()),
    ]);
    s
}

fn apart(rng: &mut Rng, dir: &Path, i: usize) -> Vec<String> {
    matrix(rng, dir, i, Matrix::Apart)
}

fn permutation(rng: &mut Rng, dir: &Path, i: usize) -> Vec<String> {
    matrix(rng, dir, i, Matrix::Permutation)
}

fn triggers(rng: &mut Rng, dir: &Path, i: usize) -> Vec<String> {
    matrix(rng, dir, i, Matrix::Chained)
}

/// Runs `cases` random cases of one family against the reference; prints the family's worst
/// errors and fails if any exceeds the tolerance.
fn family(name: &str, seed: u64, cases: usize, generate: Gen) {
    let verbose = std::env::var_os("LBSIM_REFERENCE_VERBOSE").is_some();
    let dir = common::TempDir::new("reference", name);
    let mut rng = Rng(seed);
    let mut worst = Errors::default();
    let mut failed = Vec::new();
    for i in 0..cases {
        let sets = generate(&mut rng, &dir, i);
        let refs: Vec<&str> = sets.iter().map(String::as_str).collect();
        let sc = common::scenario(&refs);
        let flows = sc.flows.len();
        let e = compare(sc, &format!("{name} {sets:?}"));
        if verbose {
            eprintln!(
                "{name} {i}: {flows} flows, CCT {:.3}% (first slot twice {:.3}%), finish {:.3}% \
                 ({:.3}%), extra packets {:.1}%: {sets:?}",
                100.0 * e.cct,
                100.0 * e.cct_first_twice,
                100.0 * e.finish,
                100.0 * e.finish_first_twice,
                100.0 * e.extra_packets
            );
        }
        if e.cct > TOLERANCE || e.finish > TOLERANCE {
            failed.push(format!("{e:?} {sets:?}"));
        }
        worst.cct = worst.cct.max(e.cct);
        worst.cct_first_twice = worst.cct_first_twice.max(e.cct_first_twice);
        worst.finish = worst.finish.max(e.finish);
        worst.finish_first_twice = worst.finish_first_twice.max(e.finish_first_twice);
        worst.extra_packets = worst.extra_packets.max(e.extra_packets);
    }
    eprintln!(
        "{name}: {cases} cases, max error of CCT {:.3}% and of finish {:.3}% (against the \
         reference serving a starting flow twice: {:.3}% and {:.3}%), max extra packets {:.1}%",
        100.0 * worst.cct,
        100.0 * worst.finish,
        100.0 * worst.cct_first_twice,
        100.0 * worst.finish_first_twice,
        100.0 * worst.extra_packets
    );
    assert!(
        failed.is_empty(),
        "{name}: {} of {cases} cases off the reference by more than {}%:\n{}",
        failed.len(),
        100.0 * TOLERANCE,
        failed.join("\n")
    );
}

#[test]
fn lone_flows_agree_with_the_reference_schedule() {
    family("apart", 9, 10, apart);
}

#[test]
fn one_flow_per_host_agrees_with_the_reference_schedule() {
    family("permutation", 1, 10, permutation);
}

#[test]
fn ring_allgathers_agree_with_the_reference_schedule() {
    family("ring_allgather", 2, 8, ring_allgather);
}

#[test]
fn ring_reduce_scatters_agree_with_the_reference_schedule() {
    family("ring_reduce_scatter", 3, 8, ring_reduce_scatter);
}

#[test]
fn ring_allreduces_agree_with_the_reference_schedule() {
    family("ring_allreduce", 4, 8, ring_allreduce);
}

#[test]
fn halving_doubling_allreduces_agree_with_the_reference_schedule() {
    family("halving_doubling", 5, 8, halving_doubling);
}

#[test]
fn pairwise_all_to_alls_agree_with_the_reference_schedule() {
    family("pairwise", 6, 8, pairwise);
}

#[test]
fn fsdp_iterations_agree_with_the_reference_schedule() {
    family("fsdp", 7, 8, fsdp);
}

#[test]
fn connection_matrices_with_triggers_agree_with_the_reference_schedule() {
    family("triggers", 8, 10, triggers);
}
