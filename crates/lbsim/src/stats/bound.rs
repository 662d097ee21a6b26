//! Lower bounds on completion time.
//!
//! CCT ends when the last receiver holds its whole message, so only the bytes that must cross a
//! link before that instant count. Those are the data packets (payload plus headers) and nothing
//! else: an ACK is sent after the data it acknowledges has arrived, so every ACK may trail the
//! last completion, and any that a run sends earlier only makes it slower. (Counting ACKs gave
//! bounds a run beats, e.g. two 64 KiB flows in opposite directions with 1000-B ACKs: 0.96.)
//!
//! Per flow f with earliest start s_f, wire bytes W_f and the path's tail
//! tail_f = propagation + store-and-forward of its smallest packet at every link past the first:
//! - the flow alone: s_f + N(f) + tail_f, and the flow alone through its ToRs' cuts (below);
//! - a host's NIC (a single server with release times): for every threshold t among the starts
//!   of its outgoing flows, t + N(those starting at or after t) + their smallest tail;
//! - a host's downlink, the same over its incoming flows at line rate B (the bytes reach the ToR
//!   no earlier than one serialization on the uplink plus the latencies before it, and host
//!   links are alike);
//! - a ToR's uplinks (every flow leaving its hosts crosses them; spines x uplink rate in a
//!   leaf-spine) and its downlinks from above, each as one server of their summed rate: for every
//!   threshold t among the flows' earliest arrivals there (the smallest packet's store and
//!   forward and the propagation before the cut), t + their bytes / rate + the smallest tail past
//!   the cut; likewise a higher tier's group (a pod) where that tier is tapered, its uplinks
//!   carrying less than its hosts' links (elsewhere the NIC terms dominate it).
//!
//! N is the NIC's time for data: W / B at line rate; with `rate_coef` < 1 the host's pacer
//! spaces every data packet by its wire time at the pacing rate P, and only the last one sent
//! leaves at line rate: the sum over the packets of their paced times, less the largest
//! (paced - line) time of one packet among them (each rounded up, as the pacer does).
//!
//! With dependencies, s_f is itself bounded: a trigger cannot fire before the `needed`-th
//! smallest of its feeders' bounds (order statistics are monotone), and a gated flow cannot
//! start before the earliest trigger that targets it fires plus its delay. A barrier that needs
//! every activation its feeders can give (a collective's end) waits for the whole set, so it also
//! fires no earlier than the set's busiest host link allows (the NIC and downlink terms above,
//! over the set's flows from their bounded starts): a ring's steps chain through one flow at a
//! time, but its host links carry a step each, and the next collective waits for all of them.
//! [`schedule`] computes these in time order, like Dijkstra's algorithm (delays and durations
//! are non-negative). The bound is the largest of all the terms; no run of any scheme can beat
//! it.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::ops::Range;

use crate::ids::{HostId, NodeId};
use crate::net::{Cut, Route, Topology};
use crate::time::{BitsPerSec, SimTime};
use crate::transport::Flow;
use crate::workload::{Dependencies, FlowSpec};

/// Packet sizes the bound needs (`ack` is kept for callers that size ACK traffic; the bound
/// itself does not count ACKs), and the rate hosts pace data at (None: line rate).
#[derive(Clone, Copy, Debug)]
pub struct Sizes {
    pub mss: u32,
    pub header: u32,
    pub ack: u32,
    pub pace: Option<BitsPerSec>,
}

/// The host pacer's rate: line rate x `rate_coef`, rounded, at least 1 b/s (what the simulation
/// paces at; None when that is the line rate).
pub fn pace_rate(line: BitsPerSec, rate_coef: f64) -> Option<BitsPerSec> {
    let r = BitsPerSec((((line.0 as f64) * rate_coef).round() as u64).max(1));
    (r != line).then_some(r)
}

/// Wire bytes of a message's data packets without loss.
pub fn data_wire_bytes(size: u64, s: Sizes) -> u64 {
    size.saturating_add(Flow::packets_needed(size, s.mss).saturating_mul(s.header as u64))
}

/// Smallest data packet of the message on the wire.
fn min_packet(size: u64, s: Sizes) -> u64 {
    let rem = size % s.mss as u64;
    let payload = if rem == 0 { s.mss as u64 } else { rem };
    payload.min(s.mss as u64) + s.header as u64
}

/// The time for a lone packet to cross the path beyond the first link, plus propagation.
pub(crate) fn path_tail(topo: &Topology, f: &FlowSpec, s: Sizes) -> SimTime {
    let p = topo.path(f.src, f.dst);
    let pkt = min_packet(f.size_bytes, s);
    p.rates[1..]
        .iter()
        .fold(p.latency, |t, r| t + r.serialization(pkt))
}

/// A flow's data as the NIC sees it: wire bytes, the sum of its packets' paced times and the
/// most one of them gains by leaving last at line rate (both zero without pacing).
#[derive(Clone, Copy, Debug, Default)]
struct Nic {
    bytes: u64,
    paced: u64,
    gain: u64,
}

impl Nic {
    fn of(topo: &Topology, size: u64, s: Sizes) -> Nic {
        let bytes = data_wire_bytes(size, s);
        // Hosts with several ports pace each port: their NIC terms count line rate (lower).
        let Some(p) = s.pace.filter(|_| topo.single_homed()) else {
            return Nic {
                bytes,
                ..Nic::default()
            };
        };
        let n = Flow::packets_needed(size, s.mss);
        let (full, last) = (s.mss as u64 + s.header as u64, min_packet(size, s));
        let gain = |w: u64| p.serialization(w).ps() - topo.host_rate.serialization(w).ps();
        Nic {
            bytes,
            paced: p
                .serialization(full)
                .ps()
                .saturating_mul(n.saturating_sub(1))
                .saturating_add(p.serialization(last).ps()),
            gain: if n > 1 {
                gain(full).max(gain(last))
            } else {
                gain(last)
            },
        }
    }

    fn add(self, o: Nic) -> Nic {
        Nic {
            bytes: self.bytes.saturating_add(o.bytes),
            paced: self.paced.saturating_add(o.paced),
            gain: self.gain.max(o.gain),
        }
    }

    /// The NIC's least time to put all of it out (a host with one port).
    fn time(self, topo: &Topology, s: Sizes) -> SimTime {
        match s.pace {
            None => topo.host_rate.serialization(self.bytes),
            Some(_) => SimTime(self.paced - self.gain),
        }
    }
}

/// The host ports a flow leaves its source by (`up`) or reaches its destination by: the
/// first two of its cuts.
fn host_cut(topo: &Topology, f: &FlowSpec, up: bool) -> Cut {
    let mut c = topo.cuts(f.src, f.dst);
    let first = c.next().expect("a flow crosses its hosts' links");
    if up {
        first
    } else {
        c.next().expect("and its destination's")
    }
}

impl Nic {
    /// The least time to put it out through a flow's host ports (all of them at line rate
    /// where a host has several).
    fn time_at(self, topo: &Topology, s: Sizes, f: &FlowSpec) -> SimTime {
        if topo.single_homed() {
            self.time(topo, s)
        } else {
            topo.cut_rate(host_cut(topo, f, true))
                .serialization(self.bytes)
        }
    }
}

/// The links of the path from `src` to `dst` (the routes' first choices, as
/// [`Topology::path`]): (rate, latency) of each, the NIC first.
fn hops(topo: &Topology, src: HostId, dst: HostId) -> Vec<(BitsPerSec, SimTime)> {
    let mut out = Vec::with_capacity(6);
    let first = match topo.host_route(src, dst) {
        Route::Port(p) => p,
        Route::Group { first, .. } => first,
    };
    let mut link = &topo.links[first.idx()];
    loop {
        out.push((link.rate, link.latency));
        let NodeId::Switch(sw) = link.to else {
            return out;
        };
        let port = match topo.route(sw, dst) {
            Route::Port(p) => p,
            Route::Group { first, .. } => first,
        };
        link = &topo.links[port.idx()];
    }
}

/// Where a flow meets the fabric cuts it crosses past its hosts' links: for each, the cut, the
/// earliest arrival of its smallest packet there and its tail past it (from its start). Its
/// leaves' cuts whenever it leaves its leaf; a higher tier's cuts only where the tier is
/// tapered (elsewhere a group's cut carries as much as its hosts' links, which the NIC and
/// downlink terms already count).
fn crossings(topo: &Topology, f: &FlowSpec, s: Sizes) -> Vec<(Cut, SimTime, SimTime)> {
    let mut out = Vec::new();
    if topo.same_domain(f.src, f.dst) {
        return out; // inside a scale-up domain: no fabric cut
    }
    let tiers = topo.tiers().saturating_sub(1);
    let mut h = Vec::new();
    for t in 0..tiers {
        let (a, b) = (topo.group(t, f.src), topo.group(t, f.dst));
        if a == b {
            break;
        }
        let up = Cut {
            tier: Some(t),
            up: true,
            index: a,
        };
        let down = Cut {
            tier: Some(t),
            up: false,
            index: b,
        };
        let (up_on, down_on) = (t == 0 || topo.tapered(up), t == 0 || topo.tapered(down));
        if !(up_on || down_on) {
            continue;
        }
        if h.is_empty() {
            h = hops(topo, f.src, f.dst);
        }
        let m = h.len();
        let pkt = min_packet(f.size_bytes, s);
        // Before link k: store and forward and propagation on the links before it.
        let before = |k: usize| {
            h[..k]
                .iter()
                .fold(SimTime::ZERO, |t, &(r, l)| t + r.serialization(pkt) + l)
        };
        // Past link k's serialization: its propagation, then the later links.
        let past = |k: usize| {
            h[k + 1..]
                .iter()
                .fold(h[k].1, |t, &(r, l)| t + r.serialization(pkt) + l)
        };
        // Link t + 1 leaves the source's group at tier t; link m - 2 - t enters the
        // destination's.
        let (ku, kd) = (t as usize + 1, m - 2 - t as usize);
        if up_on {
            out.push((up, before(ku), past(ku)));
        }
        if down_on {
            out.push((down, before(kd), past(kd)));
        }
    }
    out
}

/// A flow alone on an idle path: its NIC time plus its tail, or its time through either of its
/// ToRs' cuts, whichever is longer (from its start).
fn alone(topo: &Topology, f: &FlowSpec, s: Sizes) -> SimTime {
    let nic = Nic::of(topo, f.size_bytes, s);
    let mut t = nic.time_at(topo, s, f) + path_tail(topo, f, s);
    for (cut, at, tail) in crossings(topo, f, s) {
        t = t.max(at + topo.cut_rate(cut).serialization(nic.bytes) + tail);
    }
    t
}

/// The lower bound of independent flows, each from its own `start` (dependencies ignored), as
/// an absolute time.
pub fn lower_bound(topo: &Topology, flows: &[FlowSpec], s: Sizes) -> SimTime {
    let starts: Vec<Option<SimTime>> = flows.iter().map(|f| Some(f.start)).collect();
    bound_from_starts(topo, flows, &starts, 0..flows.len(), s)
}

/// The bound with triggers ignored: gated flows as if they could start with the earliest
/// ungated one (their own `start` means nothing). Valid, but looser than
/// [`lower_bound_with_deps`]: what summary.json calls `lower_bound_ignoring_deps_ps`.
pub fn lower_bound_ignoring_deps(
    topo: &Topology,
    flows: &[FlowSpec],
    deps: &Dependencies,
    s: Sizes,
) -> SimTime {
    if deps.gated.is_empty() {
        return lower_bound(topo, flows, s);
    }
    let origin = origin(flows, deps, 0..flows.len());
    let starts: Vec<Option<SimTime>> = (0..flows.len())
        .map(|f| {
            Some(if deps.gated(f) {
                origin
            } else {
                flows[f].start
            })
        })
        .collect();
    bound_from_starts(topo, flows, &starts, 0..flows.len(), s)
}

/// The lower bound with dependencies: flows start no earlier than their triggers allow. An
/// absolute time; flows whose triggers can never fire are left out (they never run).
pub fn lower_bound_with_deps(
    topo: &Topology,
    flows: &[FlowSpec],
    deps: &Dependencies,
    s: Sizes,
) -> SimTime {
    if deps.is_empty() {
        return lower_bound(topo, flows, s);
    }
    let range = 0..flows.len();
    let starts = schedule(topo, flows, deps, range.clone(), s);
    origin(flows, deps, range.clone()) + bound_from_starts(topo, flows, &starts, range, s)
}

/// Where [`schedule`] measures a range's times from: the earliest start of its ungated flows
/// (zero if it has none: then everything waits on triggers fed from outside).
pub(crate) fn origin(flows: &[FlowSpec], deps: &Dependencies, range: Range<usize>) -> SimTime {
    range
        .filter(|&f| !deps.gated(f))
        .map(|f| flows[f].start)
        .min()
        .unwrap_or(SimTime::ZERO)
}

/// The bound of the flows in `range` with earliest starts `starts` (indexed by flow; `None`
/// never starts): the largest of the per-flow, per-NIC and per-downlink terms.
pub(crate) fn bound_from_starts(
    topo: &Topology,
    flows: &[FlowSpec],
    starts: &[Option<SimTime>],
    range: Range<usize>,
    s: Sizes,
) -> SimTime {
    let started: Vec<u32> = range
        .filter(|&i| starts[i].is_some())
        .map(|i| i as u32)
        .collect();
    let alone = started
        .iter()
        .map(|&i| starts[i as usize].unwrap() + alone(topo, &flows[i as usize], s));
    alone
        .max()
        .unwrap_or(SimTime::ZERO)
        .max(link_bound(topo, flows, &started, starts, s))
}

/// One server with jobs (release, data, tail past it) released over time, sorted by release
/// time, latest first: for every release time t and every tail q, over the jobs released at or
/// after t whose tails are at least q, t plus the server's time for their data (`time`) plus q.
/// (Thresholds on the tail too keep the bound monotone: a job released later never lowers it
/// by bringing a short tail into an earlier threshold's set.)
fn release_bound(jobs: &[(SimTime, Nic, SimTime)], time: impl Fn(Nic) -> SimTime) -> SimTime {
    let mut tails: Vec<SimTime> = jobs.iter().map(|j| j.2).collect();
    tails.sort_unstable();
    tails.dedup();
    let mut best = SimTime::ZERO;
    for &q in &tails {
        let mut data = Nic::default();
        let mut last = None;
        for j in jobs.iter().filter(|j| j.2 >= q) {
            // Evaluate once per distinct release time, after all jobs released then are counted.
            if let Some(t) = last.filter(|&t| t != j.0) {
                best = best.max(t + time(data) + q);
            }
            data = data.add(j.1);
            last = Some(j.0);
        }
        if let Some(t) = last {
            best = best.max(t + time(data) + q);
        }
    }
    best
}

/// The busiest server's term over the flows of `set` (distinct indices, each started, from
/// its bounded start in `start`): every source NIC and every destination downlink as a single
/// server with release times, and every ToR's uplinks and its downlinks from above, each
/// summed into one server, over the flows that cross them.
fn link_bound(
    topo: &Topology,
    flows: &[FlowSpec],
    set: &[u32],
    start: &[Option<SimTime>],
    s: Sizes,
) -> SimTime {
    #[derive(Clone, Copy, PartialEq)]
    enum Server {
        Nic,
        Downlink,
        /// Cuts flows cross going up, then coming down: two passes keep the job list no
        /// longer than the set.
        Cut {
            up: bool,
        },
    }
    let mut best = SimTime::ZERO;
    let single = topo.single_homed();
    // (server's key, release, data, tail), grouped by key with the latest releases first.
    let mut jobs: Vec<(u64, SimTime, Nic, SimTime)> = Vec::with_capacity(set.len());
    let mut scratch: Vec<(SimTime, Nic, SimTime)> = Vec::new();
    // A cut as a key, and back.
    let key = |c: Cut| {
        ((c.tier.map_or(0, |t| t as u64 + 1)) << 33) | ((c.up as u64) << 32) | c.index as u64
    };
    let unkey = |k: u64| Cut {
        tier: match k >> 33 {
            0 => None,
            t => Some((t - 1) as u8),
        },
        up: (k >> 32) & 1 == 1,
        index: k as u32,
    };
    let servers = [
        Server::Nic,
        Server::Downlink,
        Server::Cut { up: true },
        Server::Cut { up: false },
    ];
    for server in servers {
        jobs.clear();
        for &i in set {
            let f = &flows[i as usize];
            let st = start[i as usize].expect("the set's flows have started");
            let data = match server {
                Server::Nic => Nic::of(topo, f.size_bytes, s),
                _ => Nic {
                    bytes: data_wire_bytes(f.size_bytes, s),
                    ..Nic::default()
                },
            };
            match server {
                // Hosts with several ports: one server per host and kind of port (network or
                // scale-up), keyed as its cut.
                Server::Nic if !single => jobs.push((
                    key(host_cut(topo, f, true)),
                    st,
                    data,
                    path_tail(topo, f, s),
                )),
                Server::Downlink if !single => jobs.push((
                    key(host_cut(topo, f, false)),
                    st,
                    data,
                    path_tail(topo, f, s),
                )),
                Server::Nic => jobs.push((f.src.0 as u64, st, data, path_tail(topo, f, s))),
                Server::Downlink => jobs.push((f.dst.0 as u64, st, data, path_tail(topo, f, s))),
                Server::Cut { up } => {
                    for (cut, at, tail) in crossings(topo, f, s) {
                        if cut.up == up {
                            jobs.push((key(cut), st + at, data, tail));
                        }
                    }
                }
            }
        }
        jobs.sort_unstable_by_key(|j| (j.0, Reverse(j.1)));
        for group in jobs.chunk_by(|a, b| a.0 == b.0) {
            scratch.clear();
            scratch.extend(group.iter().map(|j| (j.1, j.2, j.3)));
            let b = match server {
                Server::Nic | Server::Downlink if !single => {
                    let rate = topo.cut_rate(unkey(group[0].0));
                    release_bound(&scratch, |d| rate.serialization(d.bytes))
                }
                Server::Nic => release_bound(&scratch, |d| d.time(topo, s)),
                Server::Downlink => {
                    release_bound(&scratch, |d| topo.host_rate.serialization(d.bytes))
                }
                Server::Cut { .. } => {
                    let rate = topo.cut_rate(unkey(group[0].0));
                    release_bound(&scratch, |d| rate.serialization(d.bytes))
                }
            };
            best = best.max(b);
        }
    }
    best
}

/// Earliest possible start of every flow in `range` (None: never starts), measured from the
/// range's own [`origin`]: ungated flows at their `start` minus the earliest ungated start,
/// gated flows whose triggers are fed only from outside the range at the origin, the rest as
/// their triggers allow. Activations from outside the range count as already done. The whole
/// workload is a range like any other (a collective alone, started late, is measured from its
/// start; nothing of it starts earlier, since every trigger waits for a flow of it).
pub(crate) fn schedule(
    topo: &Topology,
    flows: &[FlowSpec],
    deps: &Dependencies,
    range: Range<usize>,
    s: Sizes,
) -> Vec<Option<SimTime>> {
    let inside = |f: usize| range.contains(&f);
    let whole = range.start == 0 && range.end == flows.len();
    let origin = origin(flows, deps, range.clone());
    let feeds = |f: usize| {
        let r = deps.on_recv_done.get(f).into_iter().flatten();
        r.chain(deps.on_send_done.get(f).into_iter().flatten())
            .map(|&t| t as usize)
    };
    // Activations each trigger has had; outside feeders count as done before the origin.
    let mut count = vec![0u32; deps.triggers.len()];
    // Every activation a trigger can get, and its distinct feeders inside the range.
    let mut total = vec![0u32; deps.triggers.len()];
    let mut members: Vec<Vec<u32>> = vec![Vec::new(); deps.triggers.len()];
    for f in 0..flows.len() {
        for t in feeds(f) {
            total[t] += 1;
            if !inside(f) {
                count[t] += 1;
            } else if members[t].last() != Some(&(f as u32)) {
                members[t].push(f as u32);
            }
        }
    }
    // The activation count at which a trigger first fires (None: never).
    let first_fire = |t: usize| {
        let tr = &deps.triggers[t];
        match (tr.needed, tr.multishot) {
            (0, true) => Some(1),
            (0, false) => None,
            (n, _) => Some(n),
        }
    };
    let mut start: Vec<Option<SimTime>> = vec![None; flows.len()];
    // (time, 0 = start / 1 = done, flow): starts before completions at equal times.
    let mut heap: BinaryHeap<Reverse<(SimTime, u8, usize)>> = BinaryHeap::new();
    for f in range.clone() {
        if deps.timed(f) {
            heap.push(Reverse((flows[f].start.max(origin) - origin, 0, f)));
        }
    }
    // Starts each flow still waits for (a flow waiting on several begins at the last).
    let mut waiting: Vec<u32> = (0..flows.len()).map(|f| deps.waits(f)).collect();
    for (t, tr) in deps.triggers.iter().enumerate() {
        // Fired from outside before the range began: its inside targets start at the origin.
        if !whole && first_fire(t).is_some_and(|n| count[t] >= n) {
            for &g in &tr.targets {
                if inside(g as usize) {
                    heap.push(Reverse((SimTime::ZERO, 0, g as usize)));
                }
            }
        }
    }
    while let Some(Reverse((at, kind, f))) = heap.pop() {
        if kind == 0 {
            if start[f].is_some() {
                continue;
            }
            if waiting[f] > 1 {
                waiting[f] -= 1;
                continue;
            }
            start[f] = Some(at);
            heap.push(Reverse((at + alone(topo, &flows[f], s), 1, f)));
            continue;
        }
        for t in feeds(f) {
            count[t] += 1;
            if first_fire(t) == Some(count[t]) {
                // A barrier that needs every activation it can get waits for its whole set,
                // which shares host links: it cannot fire before the set's busiest link is done.
                let fire = if count[t] == total[t] && members[t].len() > 1 {
                    at.max(link_bound(topo, flows, &members[t], &start, s))
                } else {
                    at
                };
                let tr = &deps.triggers[t];
                for &g in &tr.targets {
                    if inside(g as usize) && start[g as usize].is_none() {
                        heap.push(Reverse((fire + tr.delay, 0, g as usize)));
                    }
                }
            }
        }
    }
    start
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::HostId;
    use crate::workload::Trigger;

    fn k4_100g() -> Topology {
        Topology::fat_tree(4, crate::net::topology::TEST_LINKS)
    }

    const S: Sizes = Sizes {
        mss: 4096,
        header: 82,
        ack: 64,
        pace: None,
    };

    fn flow(src: u32, dst: u32, size: u64, start: u64) -> FlowSpec {
        FlowSpec {
            src: HostId(src),
            dst: HostId(dst),
            size_bytes: size,
            start: SimTime(start),
        }
    }

    #[test]
    fn single_flow_bound_by_hand() {
        // 2 packets of 4178 B at 100 Gb/s (334.24 ns each) + 6 x 1 us + 5 more serializations.
        let expect = 2 * 334_240 + 6_000_000 + 5 * 334_240;
        assert_eq!(
            lower_bound(&k4_100g(), &[flow(0, 15, 8192, 0)], S),
            SimTime(expect)
        );
    }

    #[test]
    fn acks_do_not_count_toward_the_bound() {
        // Opposite directions: each host sends 2 data packets and receives 2; the ACKs it sends
        // may all follow the last arrival, so the bound is the lone flow's.
        let flows = [flow(0, 15, 8192, 0), flow(15, 0, 8192, 0)];
        let big_acks = Sizes { ack: 1000, ..S };
        let want = lower_bound(&k4_100g(), &flows[..1], S);
        assert_eq!(lower_bound(&k4_100g(), &flows, big_acks), want);
    }

    #[test]
    fn a_late_flow_counts_only_the_bytes_released_after_it() {
        // 0 sends 10 packets at time 0 (to another pod) and 10 more at 1 ms (within its ToR):
        // the second batch alone decides, with its own two-link tail.
        let flows = [flow(0, 15, 40960, 0), flow(0, 1, 40960, 1_000_000_000)];
        let ser = 10 * 334_240;
        let tail_intra_tor = 334_240 + 2_000_000;
        assert_eq!(
            lower_bound(&k4_100g(), &flows, S),
            SimTime(1_000_000_000 + ser + tail_intra_tor)
        );
    }

    #[test]
    fn a_paced_flow_spaces_all_but_its_last_packet_at_the_pacing_rate() {
        // rate_coef 0.5 at 100 Gb/s: the pacer lets a 4178-B packet go every 668.48 ns (160 ps
        // a byte); the last one leaves at line rate (334.24 ns). Then the tail as alone.
        let paced = Sizes {
            pace: pace_rate(BitsPerSec::from_gbps(100.0), 0.5),
            ..S
        };
        assert_eq!(paced.pace, Some(BitsPerSec::from_gbps(50.0)));
        let tail = 6_000_000 + 5 * 334_240;
        assert_eq!(
            lower_bound(&k4_100g(), &[flow(0, 15, 8192, 0)], paced),
            SimTime(668_480 + 334_240 + tail)
        );
        // 4178, 4178 and 1082 B: 2 x 668,480 + 173,120 paced, less the most a packet gains by
        // going last (a full one: 668,480 - 334,240); the tail of the 1082-B packet.
        let nic = 2 * 668_480 + 173_120 - 334_240;
        assert_eq!(
            lower_bound(&k4_100g(), &[flow(0, 15, 9192, 0)], paced),
            SimTime(nic + 6_000_000 + 5 * 86_560)
        );
        // A host's flows share its pacer: two of 2 packets each from host 0, 3 paced gaps.
        let two = [flow(0, 15, 8192, 0), flow(0, 14, 8192, 0)];
        assert_eq!(
            lower_bound(&k4_100g(), &two, paced),
            SimTime(3 * 668_480 + 334_240 + tail)
        );
        assert_eq!(pace_rate(BitsPerSec::from_gbps(100.0), 1.0), None);
    }

    #[test]
    fn a_leaf_uplink_cut_bounds_a_lone_cross_leaf_flow() {
        // 2 leaves of 2 hosts, 2 spines at 25 Gb/s (4:1): host 0 -> host 2 crosses leaf 0's
        // uplinks, 50 Gb/s together (160 ps a byte), and leaf 1's two downlinks from the spines,
        // the same. 64 packets of 4178 B: 267,392 B through the cut = 42,782,720 ps; before
        // it the first packet's NIC serialization (334,240) and 1 us; after it 1 us, one
        // serialization at 25 Gb/s (1,336,960), 1 us, one at 100 Gb/s (334,240) and 1 us.
        let topo = Topology::leaf_spine(
            2,
            2,
            2,
            crate::net::topology::TEST_LINKS,
            BitsPerSec::from_gbps(25.0),
        );
        let want = 334_240 + 1_000_000 + 42_782_720 + 3_000_000 + 1_336_960 + 334_240;
        let f = [flow(0, 2, 64 * 4096, 0)];
        assert_eq!(lower_bound(&topo, &f, S), SimTime(want));
        // The NIC alone would say 64 x 334,240 plus the tail: far less.
        assert!(64 * 334_240 + 4_000_000 + 2 * 1_336_960 + 334_240 < want);
        // Two flows out of leaf 0 from its two hosts share the cut: twice the bytes.
        let f = [flow(0, 2, 64 * 4096, 0), flow(1, 3, 64 * 4096, 0)];
        assert_eq!(lower_bound(&topo, &f, S), SimTime(want + 42_782_720));
        // Under one leaf nothing crosses: the host links decide.
        let f = [flow(0, 1, 64 * 4096, 0)];
        assert_eq!(
            lower_bound(&topo, &f, S),
            SimTime(64 * 334_240 + 2_000_000 + 334_240)
        );
    }

    fn deps_one_trigger(needed: u32, feeders: &[u32], targets: &[u32], n: usize) -> Dependencies {
        let mut on_recv_done = vec![Vec::new(); n];
        for &f in feeders {
            on_recv_done[f as usize].push(0);
        }
        let mut gated = vec![false; n];
        for &g in targets {
            gated[g as usize] = true;
        }
        Dependencies {
            triggers: vec![Trigger {
                needed,
                multishot: false,
                delay: SimTime(5_000),
                targets: targets.to_vec(),
            }],
            on_recv_done,
            on_send_done: Vec::new(),
            gated,
            ..Dependencies::default()
        }
    }

    /// Flows 0 and 1 feed one trigger (needing `needed` of them) that starts flow 2: its start.
    fn third_starts_at(flows: &[FlowSpec; 3], needed: u32) -> Option<SimTime> {
        let deps = deps_one_trigger(needed, &[0, 1], &[2], 3);
        schedule(&k4_100g(), flows, &deps, 0..3, S)[2]
    }

    #[test]
    fn a_oneshot_trigger_fires_on_its_first_feeder_not_its_last() {
        // A (short) and B (long) feed a oneshot trigger that starts C: C may start after A.
        let topo = k4_100g();
        let flows = [
            flow(0, 1, 4096, 0),
            flow(2, 3, 409600, 0),
            flow(4, 5, 4096, 0),
        ];
        let a = alone(&topo, &flows[0], S);
        assert_eq!(third_starts_at(&flows, 1), Some(a + SimTime(5_000)));
        // As a barrier of two it waits for B.
        assert_eq!(
            third_starts_at(&flows, 2),
            Some(alone(&topo, &flows[1], S) + SimTime(5_000))
        );
    }

    #[test]
    fn a_barrier_waits_for_its_feeders_to_share_their_host_link() {
        // 0 -> 1 and 0 -> 2 (10 packets each) feed a barrier that starts 4 -> 5: host 0's NIC
        // carries both, so the barrier fires no earlier than 20 serializations plus the
        // shorter tail (0 -> 1 under one ToR), not when the longer flow alone would end.
        let topo = k4_100g();
        let flows = [
            flow(0, 1, 40960, 0),
            flow(0, 2, 40960, 0),
            flow(4, 5, 4096, 0),
        ];
        let nic = 20 * 334_240 + 334_240 + 2_000_000;
        assert!(SimTime(nic) > alone(&topo, &flows[1], S));
        assert_eq!(third_starts_at(&flows, 2), Some(SimTime(nic + 5_000)));
        // The same into one host: its downlink carries both.
        let flows = [
            flow(1, 0, 40960, 0),
            flow(2, 0, 40960, 0),
            flow(4, 5, 4096, 0),
        ];
        assert_eq!(third_starts_at(&flows, 2), Some(SimTime(nic + 5_000)));
        // A oneshot trigger fed by both still fires on the first: the set is not needed whole.
        assert_eq!(
            third_starts_at(&flows, 1),
            Some(alone(&topo, &flows[0], S) + SimTime(5_000))
        );
    }

    #[test]
    fn a_flow_feeding_a_barrier_twice_counts_its_bytes_once() {
        // Receive and send completion of one flow both feed a barrier of two.
        let topo = k4_100g();
        let flows = [flow(0, 1, 40960, 0), flow(4, 5, 4096, 0)];
        let mut deps = deps_one_trigger(2, &[0], &[1], 2);
        deps.on_send_done = vec![vec![0], vec![]];
        let st = schedule(&topo, &flows, &deps, 0..2, S);
        assert_eq!(st[1], Some(alone(&topo, &flows[0], S) + SimTime(5_000)));
    }

    #[test]
    fn a_trigger_that_never_fires_leaves_its_flows_out() {
        let topo = k4_100g();
        let flows = [flow(0, 1, 4096, 0), flow(4, 5, 4096, 0)];
        let deps = deps_one_trigger(2, &[0], &[1], 2);
        let st = schedule(&topo, &flows, &deps, 0..2, S);
        assert_eq!(st[1], None);
        assert_eq!(
            lower_bound_with_deps(&topo, &flows, &deps, S),
            lower_bound(&topo, &flows[..1], S)
        );
    }
}
