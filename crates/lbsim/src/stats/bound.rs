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
//! - the flow alone: s_f + W_f / B + tail_f;
//! - a host's NIC (a single server with release times): for every threshold t among the starts
//!   of its outgoing flows, t + (bytes of those starting at or after t) / B + their smallest tail;
//! - a host's downlink, the same over its incoming flows (the bytes reach the ToR no earlier than
//!   one serialization on the uplink plus the latencies before it, and host links are alike).
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

use crate::net::Topology;
use crate::time::SimTime;
use crate::transport::Flow;
use crate::workload::{Dependencies, FlowSpec};

/// Packet sizes the bound needs (`ack` is kept for callers that size ACK traffic; the bound
/// itself does not count ACKs).
#[derive(Clone, Copy, Debug)]
pub struct Sizes {
    pub mss: u32,
    pub header: u32,
    pub ack: u32,
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

/// A flow alone on an idle path: its NIC time plus its tail.
fn alone(topo: &Topology, f: &FlowSpec, s: Sizes) -> SimTime {
    topo.host_rate
        .serialization(data_wire_bytes(f.size_bytes, s))
        + path_tail(topo, f, s)
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
    let alone = started.iter().map(|&i| {
        let f = &flows[i as usize];
        starts[i as usize].unwrap()
            + topo
                .host_rate
                .serialization(data_wire_bytes(f.size_bytes, s))
            + path_tail(topo, f, s)
    });
    alone
        .max()
        .unwrap_or(SimTime::ZERO)
        .max(link_bound(topo, flows, &started, starts, s))
}

/// One server (a host link) with jobs released over time, sorted by release time, latest first:
/// for every release time t, t plus the bytes released at or after t plus the smallest tail
/// among them.
fn release_bound(topo: &Topology, jobs: &[(SimTime, u64, SimTime)]) -> SimTime {
    let (mut bytes, mut tail, mut best) = (0u64, SimTime::MAX, SimTime::ZERO);
    for (i, j) in jobs.iter().enumerate() {
        bytes = bytes.saturating_add(j.1);
        tail = tail.min(j.2);
        // Evaluate once per distinct release time, after all jobs released then are counted.
        if jobs.get(i + 1).is_none_or(|n| n.0 != j.0) {
            best = best.max(j.0 + topo.host_rate.serialization(bytes) + tail);
        }
    }
    best
}

/// The busiest host link's term over the flows of `set` (distinct indices, each started, from
/// its bounded start in `start`): every source NIC and every destination downlink as a single
/// server with release times.
fn link_bound(
    topo: &Topology,
    flows: &[FlowSpec],
    set: &[u32],
    start: &[Option<SimTime>],
    s: Sizes,
) -> SimTime {
    let mut best = SimTime::ZERO;
    // (host, start, wire bytes, tail), grouped by host with the latest starts first.
    let mut jobs: Vec<(u32, SimTime, u64, SimTime)> = Vec::with_capacity(set.len());
    let mut scratch: Vec<(SimTime, u64, SimTime)> = Vec::new();
    for out in [true, false] {
        jobs.clear();
        for &i in set {
            let f = &flows[i as usize];
            let st = start[i as usize].expect("the set's flows have started");
            let host = if out { f.src.0 } else { f.dst.0 };
            jobs.push((
                host,
                st,
                data_wire_bytes(f.size_bytes, s),
                path_tail(topo, f, s),
            ));
        }
        jobs.sort_unstable_by_key(|j| (j.0, Reverse(j.1)));
        for group in jobs.chunk_by(|a, b| a.0 == b.0) {
            scratch.clear();
            scratch.extend(group.iter().map(|j| (j.1, j.2, j.3)));
            best = best.max(release_bound(topo, &scratch));
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
