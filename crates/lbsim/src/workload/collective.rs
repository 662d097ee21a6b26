//! Collectives over groups of ranks placed on hosts, chained by dependencies: ring all-reduce,
//! reduce-scatter and all-gather, halving-doubling all-reduce, direct and pairwise all-to-all,
//! FSDP training iterations, and several jobs sharing the fabric.
//!
//! Generation works on *conditions*: a condition is "these flows have been received, plus a
//! delay" (or an absolute time). A transfer between two ranks on different hosts becomes a flow
//! gated by its condition; a transfer between ranks on the same host never enters the network
//! (the host has one NIC and intra-host links are not modelled), so it completes at once and its
//! successors simply inherit its condition. Conditions are joined by dominance: everything in a
//! collective starts after the collective's start, so when a join mixes the collective's start
//! with flows of that collective, the flows alone decide (levels below make this explicit).

use std::collections::BTreeMap;
use std::ops::Range;
use std::rc::Rc;

use rand::seq::SliceRandom;
use serde::{Deserialize, Serialize};

use super::{Dependencies, FlowSpec, Trigger};
use crate::ids::HostId;
use crate::net::Topology;
use crate::rng::{rng_for, Stream};
use crate::time::SimTime;

/// How ranks map onto hosts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Placement {
    /// Rank r on host first_host + r / gpus_per_host: a small group stays under one ToR or pod
    /// (`per_server` on GPU clusters: a server's GPUs in order, then the next server's).
    #[serde(alias = "per_server")]
    Linear,
    /// Hosts drawn at random (seeded) from the whole fabric.
    Random,
    /// Consecutive hosts' worth of ranks on consecutive ToRs, so every ring hop leaves its ToR.
    PerTor,
    /// GPU clusters: servers (NVLink domains) in order, every other one's GPUs backwards, so
    /// consecutive ranks on two servers are GPUs of one rail (the ring's hop between servers
    /// turns at a rail leaf) and every other hop crosses NVLink.
    RailAligned,
}

/// Collective algorithms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Algo {
    RingAllreduce,
    RingReduceScatter,
    RingAllgather,
    HalvingDoublingAllreduce,
    /// Reduce-scatter inside each server (over NVLink), an all-reduce of each shard across the
    /// servers among the GPUs of one position (rail), then an all-gather inside each server.
    HierarchicalAllreduce,
    AllToAllDirect,
    /// Direct, each rank r sending to r+1, r+2, ... in turn (not every rank to 0, 1, ...).
    AllToAllShifted,
    AllToAllPairwise,
    /// Shifted, at most C messages of a rank in flight: message i waits for message i-C.
    AllToAllLimited(u32),
    /// Shifted, one message of a rank at a time.
    AllToAllSerial,
    /// One message from every host h to `hosts[h]` (a drawn derangement).
    Permutation,
    /// Every other rank sends to rank 0.
    Incast,
    /// Rank 0 sends to every other rank.
    Outcast,
    /// MoE: tokens to their experts' GPUs (a size per pair).
    MoeDispatch,
    /// MoE: the experts' results back to the tokens' GPUs.
    MoeCombine,
    /// MoE backward: the combine's gradients to the experts (the combine's pairs reversed).
    MoeCombineBackward,
    /// MoE backward: the dispatch's gradients back (the dispatch's pairs reversed).
    MoeDispatchBackward,
}

impl Algo {
    pub fn name(self) -> &'static str {
        match self {
            Algo::RingAllreduce => "ring_allreduce",
            Algo::RingReduceScatter => "ring_reduce_scatter",
            Algo::RingAllgather => "ring_allgather",
            Algo::HalvingDoublingAllreduce => "halving_doubling_allreduce",
            Algo::HierarchicalAllreduce => "hierarchical_allreduce",
            Algo::AllToAllDirect => "all_to_all",
            Algo::AllToAllShifted => "all_to_all_shifted",
            Algo::AllToAllPairwise => "all_to_all_pairwise",
            Algo::AllToAllLimited(_) => "all_to_all_limited",
            Algo::AllToAllSerial => "all_to_all_serial",
            Algo::Permutation => "permutation",
            Algo::Incast => "incast",
            Algo::Outcast => "outcast",
            Algo::MoeDispatch => "moe_dispatch",
            Algo::MoeCombine => "moe_combine",
            Algo::MoeCombineBackward => "moe_combine_bwd",
            Algo::MoeDispatchBackward => "moe_dispatch_bwd",
        }
    }
}

/// One collective instance: which flows are its own, for per-collective results.
#[derive(Clone, Debug, PartialEq)]
pub struct CollectiveInfo {
    pub job: u32,
    /// Index of the rank group within its job.
    pub group: u32,
    pub iteration: u32,
    /// FSDP layer; None for plain collectives.
    pub layer: Option<u32>,
    pub algo: Algo,
    pub ranks: u32,
    /// S: the buffer per rank (per pair for all-to-all; for MoE phases, all bytes between
    /// distinct ranks).
    pub bytes: u64,
    /// Its flows (contiguous; empty if every rank shares one host).
    pub flows: Range<u32>,
    /// Compute time that precedes it (FSDP: the layer's compute before its reduce-scatter).
    pub compute_before: SimTime,
    /// The collective's own lower bound from its start (filled in by `Scenario::build`).
    pub bound: SimTime,
}

/// One job: its kind and when it starts.
#[derive(Clone, Debug, PartialEq)]
pub struct JobInfo {
    pub kind: &'static str,
    pub start: SimTime,
    pub iterations: u32,
}

/// What the generator knows about the flows it made (empty for single-shot workloads).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Labels {
    pub jobs: Vec<JobInfo>,
    pub collectives: Vec<CollectiveInfo>,
    /// A Chakra replay's ranks and critical-path data.
    pub chakra: Option<super::chakra::ChakraLabels>,
    /// MoE jobs: each layer's routing (tokens dropped, expert load).
    pub moe: Vec<super::moe::MoeLayerInfo>,
}

/// When something can start: all of `flows` received, then `delay`; with no flows, at `delay`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cond {
    level: u32,
    /// Shared: a collective's completion is waited on by every rank of the next one.
    flows: Rc<[u32]>,
    delay: SimTime,
}

impl Cond {
    pub fn at(t: SimTime) -> Cond {
        Cond {
            level: 0,
            flows: Rc::from([]),
            delay: t,
        }
    }

    /// `d` later.
    pub fn then(&self, d: SimTime) -> Cond {
        Cond {
            delay: self.delay + d,
            ..self.clone()
        }
    }

    /// All of `conds`, as [`Cond::join`], but the very condition of one of them when the
    /// join adds nothing to it: a collective-wide condition then stays one shared list, and one
    /// trigger (`Builder::finish` tells long lists apart by address).
    pub(super) fn join_shared(conds: &[Cond]) -> Cond {
        let j = Cond::join(conds);
        conds
            .iter()
            .find(|c| c.level == j.level && c.delay == j.delay && c.flows == j.flows)
            .cloned()
            .unwrap_or(j)
    }

    /// All of `conds`: only the highest level counts (it dominates the rest).
    fn join<'a>(conds: impl IntoIterator<Item = &'a Cond>) -> Cond {
        let mut out: Option<(u32, Vec<u32>, SimTime)> = None;
        for c in conds {
            match &mut out {
                Some(o) if c.level < o.0 => {}
                Some(o) if c.level == o.0 => {
                    o.1.extend_from_slice(&c.flows);
                    o.2 = o.2.max(c.delay);
                }
                _ => out = Some((c.level, c.flows.to_vec(), c.delay)),
            }
        }
        let (level, mut flows, delay) = out.expect("join of nothing");
        flows.sort_unstable();
        flows.dedup();
        Cond {
            level,
            flows: flows.into(),
            delay,
        }
    }
}

/// Accumulates flows and their gating conditions.
#[derive(Default)]
pub struct Builder {
    flows: Vec<FlowSpec>,
    gate: Vec<Option<Cond>>,
    level: u32,
    coll_first: u32,
    coll_start: Option<Cond>,
    /// PXN: each host's NVLink domain as (first host, hosts); None: transfers go direct.
    domains: Option<Vec<(u32, u32)>>,
    /// Each host's server and its position there (hierarchical collectives); None: every
    /// host is a server of its own.
    servers: Option<Vec<(u32, u32)>>,
    /// Rings split over this many channels (0 or 1: one ring).
    channels: u32,
    /// PXN: a relayed transfer goes in chunks of this many bytes, each sent on by the relay as
    /// it lands (0: the whole message, then on).
    pxn_chunk: u64,
}

impl Builder {
    /// Opens a collective that starts when `start` holds.
    pub(super) fn begin(&mut self, start: &Cond) -> Cond {
        self.level += 2;
        self.coll_first = self.flows.len() as u32;
        let c = Cond {
            level: self.level,
            ..start.clone()
        };
        self.coll_start = Some(c.clone());
        c
    }

    /// From now on, relay transfers between the servers `runs` (`Topology::domain_runs`) by
    /// rail (PXN), or not (None).
    pub fn relay_by_rail(&mut self, runs: Option<&[Range<u32>]>) {
        self.domains = runs.map(|runs| {
            runs.iter()
                .flat_map(|r| r.clone().map(move |_| (r.start, r.len() as u32)))
                .collect()
        });
    }

    /// Hierarchical collectives see the servers `runs` (`Topology::domain_runs`): a host's
    /// server and its position there; None, every host a server of its own.
    pub fn servers(&mut self, runs: Option<&[Range<u32>]>) {
        self.servers = runs.map(|runs| {
            runs.iter()
                .flat_map(|r| r.clone().map(move |h| (r.start, h - r.start)))
                .collect()
        });
    }

    /// From now on PXN relays in chunks of `bytes` (0: whole messages).
    pub fn pxn_chunk(&mut self, bytes: u64) {
        self.pxn_chunk = bytes;
    }

    /// From now on rings run as `c` channels, each over S/c (see [`channel_order`]).
    pub fn channels(&mut self, c: u32) {
        self.channels = c;
    }

    /// Host `h`'s server and position (see [`Builder::servers`]).
    pub fn server_of(&self, h: u32) -> (u32, u32) {
        self.servers.as_ref().map_or((h, 0), |s| s[h as usize])
    }

    /// A transfer of `bytes` from `src` to `dst` once `cond` holds; returns its completion.
    /// Under PXN one between domains whose hosts sit at different positions (rails) crosses
    /// NVLink to the host of `src`'s domain at `dst`'s position first.
    pub(super) fn send(&mut self, src: u32, dst: u32, bytes: u64, cond: &Cond) -> Cond {
        if let Some(d) = &self.domains {
            let ((fs, ns), (fd, _)) = (d[src as usize], d[dst as usize]);
            let relay = fs + (dst - fd);
            if fs != fd && src - fs != dst - fd && dst - fd < ns {
                let chunk = self.pxn_chunk;
                if chunk == 0 || bytes <= chunk {
                    let there = self.direct(src, relay, bytes, cond);
                    return self.direct(relay, dst, bytes, &there);
                }
                // NVLink carries the chunks one after another into the relay's buffer; the
                // relay's NIC sends each on as it lands.
                let mut landed = cond.clone();
                let mut legs = Vec::new();
                for i in 0..bytes.div_ceil(chunk) {
                    let b = chunk.min(bytes - i * chunk);
                    landed = self.direct(src, relay, b, &landed);
                    legs.push(self.direct(relay, dst, b, &landed));
                }
                return Cond::join(&legs);
            }
        }
        self.direct(src, dst, bytes, cond)
    }

    fn direct(&mut self, src: u32, dst: u32, bytes: u64, cond: &Cond) -> Cond {
        if src == dst {
            return cond.clone();
        }
        let id = self.flows.len() as u32;
        let gated = !cond.flows.is_empty();
        self.flows.push(FlowSpec {
            src: HostId(src),
            dst: HostId(dst),
            size_bytes: bytes,
            start: if gated { SimTime::ZERO } else { cond.delay },
        });
        self.gate.push(gated.then(|| cond.clone()));
        Cond {
            level: self.level + 1,
            flows: Rc::from([id]),
            delay: SimTime::ZERO,
        }
    }

    /// Closes the collective: its completion (every flow received) and its flow range.
    pub(super) fn end(&mut self) -> (Cond, Range<u32>) {
        let r = self.coll_first..self.flows.len() as u32;
        let start = self.coll_start.take().expect("begin before end");
        let done = if r.is_empty() {
            start
        } else {
            Cond {
                level: self.level + 1,
                flows: r.clone().collect::<Vec<u32>>().into(),
                delay: SimTime::ZERO,
            }
        };
        (done, r)
    }

    /// One trigger per distinct condition; every flow of a condition activates it on receipt.
    pub fn finish(self) -> (Vec<FlowSpec>, Dependencies) {
        let n = self.flows.len();
        let mut deps = Dependencies::default();
        let mut index: BTreeMap<(Rc<[u32]>, SimTime), u32> = BTreeMap::new();
        // Long conditions (a whole collective) are shared clones: compare them by address
        // (kept alive by the map, so no address is reused).
        let mut by_ptr: BTreeMap<(usize, SimTime), u32> = BTreeMap::new();
        let mut on_recv: Vec<Vec<u32>> = vec![Vec::new(); n];
        let mut gated = vec![false; n];
        for (f, g) in self.gate.into_iter().enumerate() {
            let Some(c) = g else { continue };
            gated[f] = true;
            let key = (c.flows, c.delay);
            let long = key.0.len() > 16;
            let pk = (Rc::as_ptr(&key.0) as *const u32 as usize, key.1);
            let found = if long {
                by_ptr.get(&pk)
            } else {
                index.get(&key)
            };
            let t = match found {
                Some(&t) => t,
                None => {
                    let t = deps.triggers.len() as u32;
                    for &p in key.0.iter() {
                        on_recv[p as usize].push(t);
                    }
                    deps.triggers.push(Trigger {
                        needed: key.0.len() as u32,
                        multishot: false,
                        delay: key.1,
                        targets: Vec::new(),
                    });
                    if long {
                        by_ptr.insert(pk, t);
                    }
                    index.insert(key, t);
                    t
                }
            };
            deps.triggers[t as usize].targets.push(f as u32);
        }
        if !deps.triggers.is_empty() {
            deps.on_recv_done = on_recv;
            deps.gated = gated;
        }
        (self.flows, deps)
    }

    pub fn flows(&self) -> &[FlowSpec] {
        &self.flows
    }
}

/// What a collective's schedule needs from a generator: a transfer between two ranks once a
/// condition holds (returning its completion), and the join of two conditions. The schedules
/// below ([`schedule`]) are written once against it; [`Builder`] implements it for generated
/// collectives, and Chakra replay for its own per-rank conditions.
pub trait Transfers {
    type C: Clone;
    /// `bytes` from rank `src` to rank `dst` once `cond` holds; its completion.
    fn send(&mut self, src: usize, dst: usize, bytes: u64, cond: &Self::C) -> Self::C;
    /// Both `a` and `b`.
    fn join(&mut self, a: &Self::C, b: &Self::C) -> Self::C;
    /// Rank `r`'s server and its position there, for hierarchical schedules (by default
    /// every rank is a server of its own).
    fn server(&self, r: usize) -> (u32, u32) {
        (r as u32, 0)
    }
}

/// Ring steps over `ranks` (indices into `recv`), rank i sending `chunk` to rank i+1 once it
/// holds what it forwards (`recv`); returns, per rank, when it holds its last chunk.
fn ring<T: Transfers>(
    t: &mut T,
    ranks: &[usize],
    steps: usize,
    chunk: u64,
    mut recv: Vec<T::C>,
) -> Vec<T::C> {
    let n = ranks.len();
    for _ in 0..steps {
        let mut next = recv.clone();
        for i in 0..n {
            let d = (i + 1) % n;
            next[d] = t.send(ranks[i], ranks[d], chunk, &recv[i]);
        }
        recv = next;
    }
    recv
}

/// Each server's ranks as (position, rank), in rank order; servers in the order of their
/// first rank.
fn servers_of(locate: impl Fn(usize) -> (u32, u32), n: usize) -> Vec<Vec<(u32, usize)>> {
    let mut servers: Vec<(u32, Vec<(u32, usize)>)> = Vec::new();
    for r in 0..n {
        let (s, pos) = locate(r);
        match servers.iter_mut().find(|x| x.0 == s) {
            Some(x) => x.1.push((pos, r)),
            None => servers.push((s, vec![(pos, r)])),
        }
    }
    servers.into_iter().map(|x| x.1).collect()
}

/// The ranks grouped by server (servers in order of their first rank), each server's ranks by
/// position; None unless every server has as many.
pub fn by_server(locate: impl Fn(usize) -> (u32, u32), n: usize) -> Option<Vec<Vec<usize>>> {
    let servers = servers_of(locate, n);
    let g = servers[0].len();
    if servers.iter().any(|v| v.len() != g) {
        return None;
    }
    Some(
        servers
            .into_iter()
            .map(|mut v| {
                v.sort_unstable();
                v.into_iter().map(|(_, r)| r).collect()
            })
            .collect(),
    )
}

/// The transfers of one collective over `n` ranks, rank r starting when `starts[r]` holds.
/// `bytes` is S (per pair for all-to-all).
#[allow(clippy::needless_range_loop)] // ranks index several vectors at once
pub fn schedule<T: Transfers>(t: &mut T, algo: Algo, bytes: u64, starts: &[T::C]) {
    let n = starts.len();
    let chunk = bytes.div_ceil(n as u64).max(1);
    match algo {
        Algo::RingAllreduce | Algo::RingReduceScatter | Algo::RingAllgather => {
            let steps = if algo == Algo::RingAllreduce {
                2 * (n - 1)
            } else {
                n - 1
            };
            // recv[r]: rank r holds the chunk it must forward next.
            let ranks: Vec<usize> = (0..n).collect();
            ring(t, &ranks, steps, chunk, starts.to_vec());
        }
        Algo::HierarchicalAllreduce => {
            let servers = by_server(|r| t.server(r), n).expect("servers checked at generation");
            let (m, g) = (servers.len(), servers[0].len());
            let shard = bytes.div_ceil(g as u64).max(1);
            let mut at = starts.to_vec();
            // Inside each server, then across servers per position, then inside again.
            let inside = |t: &mut T, at: &mut Vec<T::C>| {
                for s in &servers {
                    let got = ring(
                        t,
                        s,
                        g - 1,
                        shard,
                        s.iter().map(|&r| at[r].clone()).collect(),
                    );
                    for (&r, c) in s.iter().zip(got) {
                        at[r] = c;
                    }
                }
            };
            inside(t, &mut at);
            for j in 0..g {
                let rail: Vec<usize> = servers.iter().map(|s| s[j]).collect();
                let chunk = shard.div_ceil(m as u64).max(1);
                let c = rail.iter().map(|&r| at[r].clone()).collect();
                let got = ring(t, &rail, 2 * (m - 1), chunk, c);
                for (&r, c) in rail.iter().zip(got) {
                    at[r] = c;
                }
            }
            inside(t, &mut at);
        }
        Algo::HalvingDoublingAllreduce => {
            let log = n.trailing_zeros();
            // Reduce-scatter by halving (distance n/2 down to 1), all-gather by doubling back.
            let dists: Vec<usize> = (0..log)
                .map(|k| n >> (k + 1))
                .chain((0..log).rev().map(|k| n >> (k + 1)))
                .collect();
            let mut recv = starts.to_vec();
            for d in dists {
                let part = bytes.div_ceil((n / d) as u64).max(1);
                let mut next = recv.clone();
                for r in 0..n {
                    let p = r ^ d;
                    next[p] = t.send(r, p, part, &recv[r]);
                }
                recv = next;
            }
        }
        Algo::AllToAllDirect => {
            for r in 0..n {
                for d in 0..n {
                    if r != d {
                        t.send(r, d, bytes, &starts[r]);
                    }
                }
            }
        }
        Algo::AllToAllShifted => {
            for r in 0..n {
                for i in 1..n {
                    let d = (r + i) % n;
                    t.send(r, d, bytes, &starts[r]);
                }
            }
        }
        Algo::AllToAllLimited(_) | Algo::AllToAllSerial => {
            let c = match algo {
                Algo::AllToAllLimited(c) => c.max(1) as usize,
                _ => 1,
            };
            for r in 0..n {
                // done[i]: message i's completion; message i waits for message i-c.
                let mut done: Vec<T::C> = Vec::with_capacity(n - 1);
                for i in 1..n {
                    let d = (r + i) % n;
                    let cond = if i > c { &done[i - 1 - c] } else { &starts[r] };
                    let x = t.send(r, d, bytes, &cond.clone());
                    done.push(x);
                }
            }
        }
        Algo::Permutation => unreachable!("a permutation is not scheduled over ranks"),
        Algo::MoeDispatch
        | Algo::MoeCombine
        | Algo::MoeCombineBackward
        | Algo::MoeDispatchBackward => unreachable!("MoE phases have a size per pair: `exchange`"),
        Algo::Incast => {
            for r in 1..n {
                t.send(r, 0, bytes, &starts[r]);
            }
        }
        Algo::Outcast => {
            for r in 1..n {
                t.send(0, r, bytes, &starts[0]);
            }
        }
        Algo::AllToAllPairwise => {
            // Round i: r sends to r+i; a rank moves on once its own send and its receive of the
            // previous round are both complete.
            let mut own = starts.to_vec();
            let mut recv = starts.to_vec();
            for i in 1..n {
                let ready: Vec<T::C> = (0..n).map(|r| t.join(&own[r], &recv[r])).collect();
                for r in 0..n {
                    let d = (r + i) % n;
                    let c = t.send(r, d, bytes, &ready[r]);
                    own[r] = c.clone();
                    recv[d] = c;
                }
            }
        }
    }
}

/// A [`Builder`] seen through ranks placed on `hosts`.
struct OnHosts<'a> {
    b: &'a mut Builder,
    hosts: &'a [u32],
}

impl Transfers for OnHosts<'_> {
    type C = Cond;
    fn send(&mut self, src: usize, dst: usize, bytes: u64, cond: &Cond) -> Cond {
        self.b.send(self.hosts[src], self.hosts[dst], bytes, cond)
    }
    fn join(&mut self, a: &Cond, b: &Cond) -> Cond {
        Cond::join([a, b])
    }
    fn server(&self, r: usize) -> (u32, u32) {
        self.b.server_of(self.hosts[r])
    }
}

/// Runs one collective over ranks placed on `hosts` (host of each rank), starting at `start`.
/// Returns its completion and its flows. `bytes` is S (per pair for all-to-all).
pub fn collective(
    b: &mut Builder,
    algo: Algo,
    hosts: &[u32],
    bytes: u64,
    start: &Cond,
) -> (Cond, Range<u32>) {
    let n = hosts.len();
    let s0 = b.begin(start);
    if algo == Algo::Permutation {
        // One message from every host h to `hosts[h]`.
        for (r, &d) in hosts.iter().enumerate() {
            b.send(r as u32, d, bytes, &s0);
        }
    } else if b.channels > 1
        && matches!(
            algo,
            Algo::RingAllreduce | Algo::RingReduceScatter | Algo::RingAllgather
        )
    {
        let c = b.channels;
        let part = bytes.div_ceil(c as u64).max(1);
        for ch in 0..c {
            let order = channel_order(|r| b.server_of(hosts[r]), n, ch);
            let hosts: Vec<u32> = order.iter().map(|&r| hosts[r]).collect();
            let hosts = &hosts[..];
            schedule(&mut OnHosts { b, hosts }, algo, part, &vec![s0.clone(); n]);
        }
    } else {
        schedule(&mut OnHosts { b, hosts }, algo, bytes, &vec![s0; n]);
    }
    b.end()
}

/// Channel `ch`'s ring over `n` ranks located by `locate` (server, position): the servers in
/// the order of their first rank, each one's ranks by position starting at `ch` (mod the
/// server's ranks), every other server's backwards, so the ring leaves server k and enters
/// server k+1 at GPUs of one position (one rail): channel ch's hops between servers use rails
/// ch-1 and ch, and g channels use every rail twice. Ranks sharing a position keep their
/// order.
pub fn channel_order(locate: impl Fn(usize) -> (u32, u32), n: usize, ch: u32) -> Vec<usize> {
    let mut out = Vec::with_capacity(n);
    for (k, mut v) in servers_of(locate, n).into_iter().enumerate() {
        let g = v.iter().map(|x| x.0).max().unwrap_or(0) + 1;
        v.sort_by_key(|&(pos, r)| ((pos + g - ch % g) % g, r));
        if k % 2 == 1 {
            // Backwards, from position ch-1 down to ch.
            v.reverse();
        }
        out.extend(v.into_iter().map(|x| x.1));
    }
    out
}

/// An all-to-all over ranks placed on `hosts` with a size per ordered pair (`sizes[src x n +
/// dst]` bytes; a zero sends nothing), each rank's messages in the shifted order r+1, r+2, ...
/// (as `AllToAllShifted`), all starting at `start`. Returns its completion and its flows.
pub fn exchange(b: &mut Builder, hosts: &[u32], sizes: &[u64], start: &Cond) -> (Cond, Range<u32>) {
    let n = hosts.len();
    let s0 = b.begin(start);
    for r in 0..n {
        for i in 1..n {
            let d = (r + i) % n;
            let bytes = sizes[r * n + d];
            if bytes > 0 {
                b.send(hosts[r], hosts[d], bytes, &s0);
            }
        }
    }
    b.end()
}

/// Places `ranks` ranks on hosts; errors are messages for the caller to attach to a key.
pub fn place(
    topo: &Topology,
    placement: Placement,
    ranks: u32,
    gpus_per_host: u32,
    first_host: u32,
    seed: u64,
    job: u32,
) -> Result<Vec<u32>, String> {
    let need = ranks.div_ceil(gpus_per_host);
    let avail = topo.hosts.saturating_sub(first_host);
    if need > avail {
        return Err(format!(
            "{ranks} ranks at {gpus_per_host} per host need {need} hosts, but only {avail} are \
             available ({} hosts x {gpus_per_host} GPUs{})",
            topo.hosts,
            if first_host > 0 {
                format!(", from host {first_host}")
            } else {
                String::new()
            }
        ));
    }
    let slots: Vec<u32> = match placement {
        Placement::Linear => (0..need).map(|q| first_host + q).collect(),
        Placement::Random => {
            let mut rng = rng_for(seed, Stream::Workload, 1 + job as u64);
            let mut h: Vec<u32> = (0..topo.hosts).collect();
            h.shuffle(&mut rng);
            h.truncate(need as usize);
            h
        }
        Placement::RailAligned => {
            // The servers in order, every other one walked backwards (first_host is linear's).
            let runs = topo
                .domain_runs()
                .map_err(|m| format!("rail_aligned {m}"))?;
            let mut order: Vec<u32> = Vec::with_capacity(topo.hosts as usize);
            for (k, r) in runs.into_iter().enumerate() {
                if k % 2 == 0 {
                    order.extend(r);
                } else {
                    order.extend(r.rev());
                }
            }
            order.truncate(need as usize);
            order
        }
        Placement::PerTor => {
            // Round-robin over the leaves: the q-th slot is the next unused host of leaf q mod
            // leaves, a leaf that has run out passed over.
            let leaves = topo.leaf_hosts();
            let mut next = vec![0usize; leaves.len()];
            let mut out = Vec::with_capacity(need as usize);
            let mut l = 0;
            while out.len() < need as usize {
                if let Some(h) = leaves[l].get(next[l]) {
                    out.push(h.0);
                    next[l] += 1;
                }
                l = (l + 1) % leaves.len();
            }
            out
        }
    };
    Ok((0..ranks)
        .map(|r| slots[(r / gpus_per_host) as usize])
        .collect())
}

/// An FSDP model: per layer, an all-gather of the weights, the layer's compute, then a
/// reduce-scatter of the gradients.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FsdpModel {
    pub layers: u32,
    /// Weights of one layer on the wire (FP8: one byte per parameter).
    pub layer_bytes: u64,
    pub compute_per_layer: SimTime,
}

/// A preset: name, parameters, layers, compute per layer (us). See README for the derivation.
pub const PRESETS: &[(&str, u64, u32, f64)] = &[
    ("llama3_7b", 7_000_000_000, 32, 13_440.0),
    ("llama3_70b", 70_000_000_000, 80, 53_760.0),
    ("llama3_405b", 405_000_000_000, 126, 197_486.0),
];

pub fn preset(name: &str) -> Option<FsdpModel> {
    PRESETS
        .iter()
        .find(|p| p.0 == name)
        .map(|&(_, params, layers, us)| FsdpModel {
            layers,
            layer_bytes: params / layers as u64,
            compute_per_layer: SimTime::from_us_f64(us),
        })
}

pub fn preset_names() -> Vec<&'static str> {
    PRESETS.iter().map(|p| p.0).collect()
}

/// What one job runs.
#[derive(Clone, Debug)]
pub enum JobWork {
    Collective { algo: Algo, bytes: u64 },
    Fsdp(FsdpModel),
    Moe(Box<super::moe::MoeModel>),
}

/// One job: `groups` independent groups of `hosts.len() / groups` ranks each, `iterations`
/// back-to-back repetitions per group.
pub struct JobSpec<'a> {
    pub job: u32,
    pub work: JobWork,
    pub hosts: &'a [u32],
    pub groups: u32,
    pub iterations: u32,
    pub start: SimTime,
}

pub fn job(b: &mut Builder, labels: &mut Labels, j: &JobSpec) {
    let n = j.hosts.len() / j.groups as usize;
    let kind = match &j.work {
        JobWork::Collective { algo, .. } => algo.name(),
        JobWork::Fsdp(_) => "fsdp",
        JobWork::Moe(_) => "moe",
    };
    labels.jobs.push(JobInfo {
        kind,
        start: j.start,
        iterations: j.iterations,
    });
    for g in 0..j.groups {
        let hosts = &j.hosts[g as usize * n..(g as usize + 1) * n];
        let mut cond = Cond::at(j.start);
        if let JobWork::Moe(m) = &j.work {
            super::moe::group(b, labels, m, j.job, g, hosts, j.iterations, cond);
            continue;
        }
        let label = |algo, it, layer, bytes, flows, compute_before| CollectiveInfo {
            job: j.job,
            group: g,
            iteration: it,
            layer,
            algo,
            ranks: n as u32,
            bytes,
            flows,
            compute_before,
            bound: SimTime::ZERO,
        };
        for it in 0..j.iterations {
            match j.work {
                JobWork::Moe(_) => unreachable!("generated above"),
                JobWork::Collective { algo, bytes } => {
                    let (done, r) = collective(b, algo, hosts, bytes, &cond);
                    labels
                        .collectives
                        .push(label(algo, it, None, bytes, r, SimTime::ZERO));
                    cond = done;
                }
                JobWork::Fsdp(m) => {
                    for l in 0..m.layers {
                        let ag = Algo::RingAllgather;
                        let (done, r) = collective(b, ag, hosts, m.layer_bytes, &cond);
                        labels.collectives.push(label(
                            ag,
                            it,
                            Some(l),
                            m.layer_bytes,
                            r,
                            SimTime::ZERO,
                        ));
                        let rs = Algo::RingReduceScatter;
                        let c = m.compute_per_layer;
                        let (done, r) = collective(b, rs, hosts, m.layer_bytes, &done.then(c));
                        labels
                            .collectives
                            .push(label(rs, it, Some(l), m.layer_bytes, r, c));
                        cond = done;
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn topo() -> Topology {
        Topology::fat_tree(4, crate::net::topology::TEST_LINKS)
    }

    #[test]
    fn ring_allreduce_steps_and_chain() {
        let mut b = Builder::default();
        let hosts: Vec<u32> = (0..4).collect();
        collective(
            &mut b,
            Algo::RingAllreduce,
            &hosts,
            4000,
            &Cond::at(SimTime::ZERO),
        );
        let (flows, deps) = b.finish();
        assert_eq!(flows.len(), 4 * 6);
        assert!(flows.iter().all(|f| f.size_bytes == 1000));
        // Step 0 free; each later flow r -> r+1 waits for exactly the flow into r one step before.
        assert_eq!(deps.gated.iter().filter(|g| !**g).count(), 4);
        for (ti, t) in deps.triggers.iter().enumerate() {
            assert_eq!((t.needed, t.targets.len()), (1, 1));
            let f = t.targets[0] as usize;
            let p = (0..flows.len())
                .find(|&p| deps.on_recv_done[p].contains(&(ti as u32)))
                .unwrap();
            assert_eq!((p / 4 + 1, flows[p].dst), (f / 4, flows[f].src));
        }
    }

    #[test]
    fn same_host_steps_collapse() {
        // 4 ranks on 2 hosts: only the two host-crossing hops are flows, 2 per step.
        let mut b = Builder::default();
        collective(
            &mut b,
            Algo::RingAllgather,
            &[0, 0, 1, 1],
            400,
            &Cond::at(SimTime::ZERO),
        );
        let (flows, deps) = b.finish();
        assert_eq!(flows.len(), 2 * 3);
        assert!(flows.iter().all(|f| f.src != f.dst));
        // Step 1 from rank 1 (host 0) only waits on the local step 0 from rank 0: it starts at 0.
        assert_eq!(deps.gated.iter().filter(|g| !**g).count(), 4);
    }

    #[test]
    fn halving_doubling_partners_and_sizes() {
        let mut b = Builder::default();
        let hosts: Vec<u32> = (0..8).collect();
        let (_, r) = collective(
            &mut b,
            Algo::HalvingDoublingAllreduce,
            &hosts,
            8000,
            &Cond::at(SimTime::ZERO),
        );
        let flows = b.flows();
        assert_eq!(r.len(), 6 * 8);
        let sizes: Vec<u64> = (0..6).map(|s| flows[s * 8].size_bytes).collect();
        assert_eq!(sizes, [4000, 2000, 1000, 1000, 2000, 4000]);
        assert_eq!(flows[0].dst, HostId(4));
        assert_eq!(flows[16].dst, HostId(1));
    }

    #[test]
    fn placements() {
        let t = topo();
        assert_eq!(
            place(&t, Placement::Linear, 4, 2, 3, 1, 0).unwrap(),
            [3, 3, 4, 4]
        );
        // k=4: 2 hosts per ToR, 8 ToRs.
        assert_eq!(
            place(&t, Placement::PerTor, 4, 1, 0, 1, 0).unwrap(),
            [0, 2, 4, 6]
        );
        assert_eq!(place(&t, Placement::PerTor, 10, 1, 0, 1, 0).unwrap()[8], 1);
        let r = place(&t, Placement::Random, 16, 1, 0, 1, 0).unwrap();
        let mut s = r.clone();
        s.sort_unstable();
        assert_eq!(s, (0..16).collect::<Vec<_>>());
        assert_ne!(r, s);
        assert_eq!(r, place(&t, Placement::Random, 16, 1, 0, 1, 0).unwrap());
        let e = place(&t, Placement::Linear, 33, 2, 0, 1, 0).unwrap_err();
        assert!(e.contains("17 hosts"), "{e}");
    }

    #[test]
    fn join_keeps_the_dominant_level() {
        let mut b = Builder::default();
        let s = b.begin(&Cond::at(SimTime::from_us(5)));
        let a = b.send(0, 1, 10, &s);
        let j = Cond::join([&s, &a]);
        assert_eq!(&j.flows[..], [0]);
        assert_eq!(j.delay, SimTime::ZERO);
        assert_eq!(b.flows()[0].start, SimTime::from_us(5));
    }
}
