//! Per-collective, per-iteration and per-job results, computed after a run from flow start and
//! finish times and the generator's labels; and lower bounds per collective.
//!
//! Closed forms, with T(x) = wire(x) / B + L the time for a message of x bytes alone on an idle
//! path (wire: payload plus headers; L: propagation plus store-and-forward of the last packet
//! beyond the NIC), n ranks, S bytes:
//! - ring all-reduce: 2(n-1) T(S/n), i.e. 2(n-1)/n x S/B + 2(n-1) L
//! - ring reduce-scatter, ring all-gather: (n-1) T(S/n)
//! - halving-doubling all-reduce: 2 sum_{k=1..log2 n} T(S/2^k)
//! - direct all-to-all (S per pair): (n-1) wire(S)/B + L
//! - pairwise all-to-all: (n-1) T(S)
//!
//! The bound a run is compared with ([`bound`]) is computed from the generated flows themselves
//! ([`bound::schedule`]): every flow alone on its path, started when its triggers can first fire,
//! and every host link carrying the bytes released to it, whichever is larger. When every rank has
//! its own host and all paths are alike it equals the closed form; with several ranks per host,
//! same-host steps cost nothing and the chain is shorter.

use std::collections::BTreeMap;
use std::ops::Range;

use serde::Serialize;

use super::bound::{self, Sizes};
use super::FlowRecord;
use crate::net::Topology;
use crate::time::{BitsPerSec, SimTime};
use crate::workload::collective::Labels;
use crate::workload::{Dependencies, FlowSpec};

fn t_msg(bytes: u64, rate: BitsPerSec, lat: SimTime, s: Sizes) -> SimTime {
    rate.serialization(bound::data_wire_bytes(bytes.max(1), s)) + lat
}

pub fn ring_allreduce(n: u64, bytes: u64, rate: BitsPerSec, lat: SimTime, s: Sizes) -> SimTime {
    SimTime(2 * (n - 1) * t_msg(bytes.div_ceil(n), rate, lat, s).ps())
}

pub fn ring_reduce_scatter(
    n: u64,
    bytes: u64,
    rate: BitsPerSec,
    lat: SimTime,
    s: Sizes,
) -> SimTime {
    SimTime((n - 1) * t_msg(bytes.div_ceil(n), rate, lat, s).ps())
}

pub fn ring_allgather(n: u64, bytes: u64, rate: BitsPerSec, lat: SimTime, s: Sizes) -> SimTime {
    ring_reduce_scatter(n, bytes, rate, lat, s)
}

pub fn halving_doubling_allreduce(
    n: u64,
    bytes: u64,
    rate: BitsPerSec,
    lat: SimTime,
    s: Sizes,
) -> SimTime {
    let half: u64 = (1..=n.trailing_zeros())
        .map(|k| t_msg(bytes.div_ceil(1 << k), rate, lat, s).ps())
        .sum();
    SimTime(2 * half)
}

pub fn all_to_all_direct(n: u64, bytes: u64, rate: BitsPerSec, lat: SimTime, s: Sizes) -> SimTime {
    SimTime((n - 1) * rate.serialization(bound::data_wire_bytes(bytes, s)).ps()) + lat
}

pub fn all_to_all_pairwise(
    n: u64,
    bytes: u64,
    rate: BitsPerSec,
    lat: SimTime,
    s: Sizes,
) -> SimTime {
    SimTime((n - 1) * t_msg(bytes, rate, lat, s).ps())
}

/// The lower bound of the collective made of `range`'s flows, from its start: the longest
/// dependency chain inside it, or the busiest host's bytes, whichever is larger.
pub fn bound(
    topo: &Topology,
    flows: &[FlowSpec],
    deps: &Dependencies,
    range: &Range<u32>,
    s: Sizes,
) -> SimTime {
    if range.is_empty() {
        return SimTime::ZERO;
    }
    let r = range.start as usize..range.end as usize;
    let starts = bound::schedule(topo, flows, deps, r.clone(), s);
    bound::bound_from_starts(topo, flows, &starts, r, s)
}

/// One row of collectives.csv.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct CollectiveRecord {
    pub job: u32,
    pub group: u32,
    pub iteration: u32,
    pub layer: Option<u32>,
    pub kind: String,
    /// A replay with process groups (`training`, or `chakra` with `chakra_comm_groups`): the
    /// communication class of its group (`tp`, `pp`, `dp`, `ep`, or the group's name up to its
    /// first `.`); absent otherwise, and then not a column.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub comm: Option<String>,
    pub ranks: u32,
    pub bytes: u64,
    pub flows: u32,
    pub flows_completed: u32,
    pub start_ps: Option<u64>,
    pub finish_ps: Option<u64>,
    /// Last receive minus first start of its flows (null if unfinished or if it has none).
    pub cct_ps: Option<u64>,
    pub bound_ps: u64,
    pub cct_over_bound: Option<f64>,
}

/// One training iteration (or one repetition of a collective) of a job, over all its groups.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct IterationRecord {
    pub job: u32,
    pub iteration: u32,
    /// The previous iteration's end (the job's start for the first).
    pub start_ps: u64,
    pub end_ps: Option<u64>,
    pub time_ps: Option<u64>,
    /// Compute time inside the iteration (FSDP: layers x compute per layer).
    pub compute_ps: u64,
    /// Share of the iteration not covered by compute: time spent waiting on the network.
    pub network_wait_share: Option<f64>,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct JobRecord {
    pub job: u32,
    pub kind: String,
    pub start_ps: u64,
    pub finish_ps: Option<u64>,
    /// Job completion time: finish minus start.
    pub jct_ps: Option<u64>,
    pub collectives: u32,
    pub mean_cct_over_bound: Option<f64>,
    pub max_cct_over_bound: Option<f64>,
    pub mean_iteration_ps: Option<f64>,
    pub network_wait_share: Option<f64>,
}

/// One rank of a Chakra replay.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct RankRecord {
    pub rank: u32,
    pub host: u32,
    pub trace: String,
    /// From the replay's start to the rank's last node done (null if a flow it needs never
    /// finished).
    pub iteration_ps: Option<u64>,
    /// Every COMP node of the rank, summed.
    pub compute_ps: u64,
    /// Along the rank's critical path (walked back from its last node): compute, and time in
    /// the network; the two add up to `iteration_ps`.
    pub critical_compute_ps: Option<u64>,
    pub critical_comm_ps: Option<u64>,
    /// With process groups: `critical_comm_ps` by communication class (exposed
    /// communication), and the rank's communication time by class (each of its collectives
    /// from the moment every member has arrived to its own part done, each message it sends
    /// from send to receipt).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exposed_comm_ps: Option<BTreeMap<String, u64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub comm_ps: Option<BTreeMap<String, u64>>,
}

/// The slowest rank's iteration split (summary.json's `collectives.chakra.iteration`): its
/// critical path's compute and exposed communication per class add up to the iteration; the
/// rank's own communication in flight, and the part of it during which the rank computes.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct IterationSplit {
    pub rank: u32,
    pub time_ps: u64,
    pub compute_ps: u64,
    pub exposed_comm_ps: BTreeMap<String, u64>,
    pub exposed_comm_total_ps: u64,
    /// Time with any of the rank's communication in flight (its collectives from all members
    /// arrived to its part done, its sends to their receipt; concurrent ones counted once).
    pub comm_ps: u64,
    /// Of `comm_ps`, the time the rank also computes: communication hidden behind compute.
    pub overlap_ps: u64,
}

/// One collective of a Chakra replay: its node on rank 0 (collectives.csv's `layer` is its
/// position among the trace's collectives).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct ChakraCollective {
    pub index: u32,
    pub node_id: u64,
    pub name: String,
    pub kind: String,
    pub bytes: u64,
    pub cct_ps: Option<u64>,
    pub bound_ps: u64,
}

/// A Chakra replay's results (summary.json's `collectives.chakra`).
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct ChakraReport {
    pub ranks: Vec<RankRecord>,
    pub collectives: Vec<ChakraCollective>,
    /// Nodes skipped under `chakra_skip_unknown`.
    pub skipped_nodes: u32,
    /// Dependencies on node ids a trace does not have, dropped under `chakra_skip_unknown`.
    pub dropped_deps: u32,
    /// The slowest rank's iteration.
    pub iteration_ps: Option<u64>,
    /// With process groups: the slowest rank's iteration split (the first such rank).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iteration: Option<IterationSplit>,
}

/// One layer's routing in a `moe` job (summary.json's `collectives.moe`): the generator's own
/// record, written as it is.
pub use crate::workload::moe::MoeLayerInfo as MoeLayerRecord;

#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct CollectiveReport {
    pub jobs: Vec<JobRecord>,
    pub iterations: Vec<IterationRecord>,
    #[serde(skip)]
    pub collectives: Vec<CollectiveRecord>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chakra: Option<ChakraReport>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub moe: Vec<MoeLayerRecord>,
}

impl CollectiveReport {
    pub fn is_empty(&self) -> bool {
        self.jobs.is_empty()
    }
}

pub fn report(labels: &Labels, flows: &[FlowRecord]) -> CollectiveReport {
    let mut out = CollectiveReport::default();
    for c in &labels.collectives {
        let fl = &flows[c.flows.start as usize..c.flows.end as usize];
        let done = fl.iter().filter(|f| f.finish_ps.is_some()).count() as u32;
        let start = fl
            .iter()
            .filter(|f| f.finish_ps.is_some())
            .map(|f| f.start_ps)
            .min();
        let finish = fl.iter().filter_map(|f| f.finish_ps).max();
        let complete = done as usize == fl.len() && !fl.is_empty();
        let cct = match (complete, start, finish) {
            (true, Some(s), Some(e)) => Some(e - s),
            _ => None,
        };
        out.collectives.push(CollectiveRecord {
            job: c.job,
            group: c.group,
            iteration: c.iteration,
            layer: c.layer,
            kind: c.algo.name().to_string(),
            comm: labels.chakra.as_ref().and_then(|ch| {
                let i = ch.collective_class.get(out.collectives.len())?;
                Some(ch.classes[*i as usize].clone())
            }),
            ranks: c.ranks,
            bytes: c.bytes,
            flows: fl.len() as u32,
            flows_completed: done,
            start_ps: start,
            finish_ps: if complete { finish } else { None },
            cct_ps: cct,
            bound_ps: c.bound.ps(),
            cct_over_bound: cct.map(|x| x as f64 / c.bound.ps().max(1) as f64),
        });
    }
    // (job, iteration) -> (end if all complete, compute of group 0).
    let mut iters: BTreeMap<(u32, u32), (Option<u64>, u64)> = BTreeMap::new();
    for (c, r) in labels.collectives.iter().zip(&out.collectives) {
        let e = iters.entry((c.job, c.iteration)).or_insert((Some(0), 0));
        e.0 = match (e.0, r.finish_ps, r.flows) {
            (Some(a), Some(b), _) => Some(a.max(b)),
            (a, None, 0) => a,
            _ => None,
        };
        if c.group == 0 {
            e.1 += c.compute_before.ps();
        }
    }
    let mut prev: Option<(u32, Option<u64>)> = None;
    for (&(job, it), &(end, compute)) in &iters {
        let start = match prev {
            Some((j, e)) if j == job => e,
            _ => Some(labels.jobs[job as usize].start.ps()),
        };
        prev = Some((job, end));
        let Some(start) = start else { continue };
        let time = end.map(|e| e.saturating_sub(start));
        out.iterations.push(IterationRecord {
            job,
            iteration: it,
            start_ps: start,
            end_ps: end,
            time_ps: time,
            compute_ps: compute,
            network_wait_share: time
                .filter(|&t| t > 0)
                .map(|t| t.saturating_sub(compute) as f64 / t as f64),
        });
    }
    if let Some(ch) = &labels.chakra {
        let times: Vec<(u64, Option<u64>)> =
            flows.iter().map(|f| (f.start_ps, f.finish_ps)).collect();
        let mut rep = ChakraReport {
            skipped_nodes: ch.skipped_nodes,
            dropped_deps: ch.dropped_deps,
            ..ChakraReport::default()
        };
        for (r, info) in ch.ranks.iter().enumerate() {
            let t = ch.rank_times(r, &times);
            let grouped = !ch.classes.is_empty();
            let comm = if grouped {
                ch.rank_comm(r, &times)
            } else {
                None
            };
            rep.ranks.push(RankRecord {
                exposed_comm_ps: t
                    .as_ref()
                    .filter(|_| grouped)
                    .map(|t| t.critical_comm_by_class.clone()),
                comm_ps: comm,
                rank: r as u32,
                host: info.host,
                trace: info.trace.clone(),
                iteration_ps: t.as_ref().map(|t| t.iteration),
                compute_ps: info.compute.ps(),
                critical_compute_ps: t.as_ref().map(|t| t.critical_compute),
                critical_comm_ps: t.as_ref().map(|t| t.critical_comm),
            });
        }
        let all: Option<Vec<u64>> = rep.ranks.iter().map(|r| r.iteration_ps).collect();
        rep.iteration_ps = all.and_then(|v| v.into_iter().max());
        if !ch.classes.is_empty() {
            rep.iteration = rep
                .ranks
                .iter()
                .filter(|r| r.iteration_ps.is_some() && r.iteration_ps == rep.iteration_ps)
                .find_map(|r| {
                    let exposed = r.exposed_comm_ps.clone()?;
                    let total: u64 = exposed.values().sum();
                    let (comm, overlap) = ch.rank_overlap(r.rank as usize, &times)?;
                    Some(IterationSplit {
                        rank: r.rank,
                        time_ps: r.iteration_ps?,
                        compute_ps: r.critical_compute_ps?,
                        exposed_comm_ps: exposed,
                        exposed_comm_total_ps: total,
                        comm_ps: comm,
                        overlap_ps: overlap,
                    })
                });
        }
        for (i, (c, (id, name))) in out.collectives.iter().zip(&ch.collective_nodes).enumerate() {
            rep.collectives.push(ChakraCollective {
                index: i as u32,
                node_id: *id,
                name: name.clone(),
                kind: c.kind.clone(),
                bytes: c.bytes,
                cct_ps: c.cct_ps,
                bound_ps: c.bound_ps,
            });
        }
        out.chakra = Some(rep);
    }
    out.moe = labels.moe.clone();
    for (j, info) in labels.jobs.iter().enumerate() {
        let j = j as u32;
        let mine: Vec<&CollectiveRecord> = out.collectives.iter().filter(|c| c.job == j).collect();
        let ratios: Vec<f64> = mine.iter().filter_map(|c| c.cct_over_bound).collect();
        let all = ratios.len() == mine.iter().filter(|c| c.flows > 0).count();
        let finish = if all {
            mine.iter().filter_map(|c| c.finish_ps).max()
        } else {
            None
        };
        let its: Vec<&IterationRecord> = out.iterations.iter().filter(|i| i.job == j).collect();
        let times: Vec<u64> = its.iter().filter_map(|i| i.time_ps).collect();
        let complete_its = times.len() == its.len() && !its.is_empty();
        let total: u64 = times.iter().sum();
        let compute: u64 = its.iter().map(|i| i.compute_ps).sum();
        out.jobs.push(JobRecord {
            job: j,
            kind: info.kind.to_string(),
            start_ps: info.start.ps(),
            finish_ps: finish,
            jct_ps: finish.map(|f| f.saturating_sub(info.start.ps())),
            collectives: mine.len() as u32,
            mean_cct_over_bound: (!ratios.is_empty())
                .then(|| ratios.iter().sum::<f64>() / ratios.len() as f64),
            max_cct_over_bound: ratios.iter().copied().reduce(f64::max),
            mean_iteration_ps: complete_its.then(|| total as f64 / times.len() as f64),
            network_wait_share: (complete_its && total > 0)
                .then(|| total.saturating_sub(compute) as f64 / total as f64),
        });
    }
    out
}
