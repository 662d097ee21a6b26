//! Replay: conditions, the flows and triggers each rank's nodes become.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use super::{build_rank, proto, read_rank, Coll, CommGroups, Op, Options, RankTrace, TNode};
use crate::config::ConfigError;
use crate::ids::HostId;
use crate::time::SimTime;
use crate::workload::collective::{self, Algo, CollectiveInfo, JobInfo, Labels, Transfers};
use crate::workload::{Dependencies, FlowSpec, Trigger};

/// One term of a condition: every flow in the set received, then the delay (no flows: an
/// absolute time).
type Term = (Arc<[u32]>, SimTime);

/// A condition: the latest of its terms. Kept simplified: no term is implied by another.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cond(pub(super) Vec<Term>);

fn subset(a: &[u32], b: &[u32]) -> bool {
    let mut j = 0;
    for x in a {
        while j < b.len() && b[j] < *x {
            j += 1;
        }
        if j == b.len() || b[j] != *x {
            return false;
        }
    }
    true
}

impl Cond {
    pub(super) fn at(t: SimTime) -> Cond {
        Cond(vec![(Arc::from([]), t)])
    }

    pub(super) fn then(&self, d: SimTime) -> Cond {
        Cond(self.0.iter().map(|(f, t)| (f.clone(), *t + d)).collect())
    }

    pub(super) fn join(&self, other: &Cond) -> Cond {
        Cond::simplify(self.0.iter().chain(&other.0).cloned().collect())
    }

    fn simplify(mut terms: Vec<Term>) -> Cond {
        // Terms with equal delays are one term over the union of their flows.
        terms.sort_by(|a, b| a.1.cmp(&b.1).then_with(|| a.0.cmp(&b.0)));
        let mut merged: Vec<Term> = Vec::with_capacity(terms.len());
        for t in terms {
            match merged.last_mut() {
                Some(last) if last.1 == t.1 => {
                    if last.0 != t.0 {
                        let mut u: Vec<u32> = last.0.iter().chain(t.0.iter()).copied().collect();
                        u.sort_unstable();
                        u.dedup();
                        last.0 = u.into();
                    }
                }
                _ => merged.push(t),
            }
        }
        // A term is implied by a later-or-equal one over a superset of its flows.
        let keep: Vec<bool> = (0..merged.len())
            .map(|i| !(i + 1..merged.len()).any(|j| subset(&merged[i].0, &merged[j].0)))
            .collect();
        Cond(
            merged
                .into_iter()
                .zip(keep)
                .filter(|(_, k)| *k)
                .map(|(t, _)| t)
                .collect(),
        )
    }

    pub(super) fn flow(id: u32) -> Cond {
        Cond(vec![(Arc::from([id]), SimTime::ZERO)])
    }

    /// When the condition holds, given each flow's finish (None: never).
    fn eval(&self, finish: &[Option<u64>]) -> Option<u64> {
        let mut best = 0;
        for (fs, d) in &self.0 {
            let mut t = 0;
            for &f in fs.iter() {
                t = t.max(finish[f as usize]?);
            }
            best = best.max(t + d.ps());
        }
        Some(best)
    }
}

/// The flows a replay makes, with each one's gate (the terms it waits for).
#[derive(Default)]
struct Gen {
    flows: Vec<FlowSpec>,
    gates: Vec<Vec<Term>>,
}

impl Gen {
    /// `bytes` from host `src` to host `dst` once `cond` holds; its completion.
    fn send(&mut self, src: u32, dst: u32, bytes: u64, cond: &Cond) -> Cond {
        if src == dst || bytes == 0 {
            return cond.clone();
        }
        let id = self.flows.len() as u32;
        let start = cond
            .0
            .iter()
            .filter(|t| t.0.is_empty())
            .map(|t| t.1)
            .max()
            .unwrap_or(SimTime::ZERO);
        self.flows.push(FlowSpec {
            src: HostId(src),
            dst: HostId(dst),
            size_bytes: bytes,
            start,
        });
        self.gates.push(cond.0.clone());
        Cond::flow(id)
    }

    /// Both `a` and `b`, without the terms a flow's own gate implies: a flow g finishes after
    /// every term of its gate, so a term (F, d) is implied by a term (G, e) when some g in G
    /// waited for (F', d') with F within F' and d' + e at least d.
    pub(super) fn join(&self, a: &Cond, b: &Cond) -> Cond {
        let c = a.join(b);
        if c.0.len() < 2 {
            return c;
        }
        let implied = |x: &Term, y: &Term| {
            y.0.iter().any(|&g| {
                self.gates[g as usize]
                    .iter()
                    .any(|(f2, d2)| *d2 + y.1 >= x.1 && subset(&x.0, f2))
            })
        };
        let keep: Vec<bool> = (0..c.0.len())
            .map(|i| !(0..c.0.len()).any(|j| j != i && implied(&c.0[i], &c.0[j])))
            .collect();
        Cond(
            c.0.into_iter()
                .zip(keep)
                .filter(|(_, k)| *k)
                .map(|(t, _)| t)
                .collect(),
        )
    }

    /// One trigger per distinct term; a flow waits for each of its terms' triggers (and its
    /// own start time when a term is absolute).
    fn finish(&self) -> Dependencies {
        let n = self.flows.len();
        let mut deps = Dependencies {
            on_recv_done: vec![Vec::new(); n],
            gated: vec![false; n],
            waits: vec![1; n],
            timed: vec![false; n],
            ..Dependencies::default()
        };
        let mut index: BTreeMap<&Term, u32> = BTreeMap::new();
        for (f, gate) in self.gates.iter().enumerate() {
            let flow_terms: Vec<&Term> = gate.iter().filter(|t| !t.0.is_empty()).collect();
            if flow_terms.is_empty() {
                continue;
            }
            let timed = flow_terms.len() < gate.len();
            deps.gated[f] = true;
            deps.timed[f] = timed;
            deps.waits[f] = flow_terms.len() as u32 + timed as u32;
            for term in flow_terms {
                let t = *index.entry(term).or_insert_with(|| {
                    let t = deps.triggers.len() as u32;
                    for &p in term.0.iter() {
                        deps.on_recv_done[p as usize].push(t);
                    }
                    deps.triggers.push(Trigger {
                        needed: term.0.len() as u32,
                        multishot: false,
                        delay: term.1,
                        targets: Vec::new(),
                    });
                    t
                });
                deps.triggers[t as usize].targets.push(f as u32);
            }
        }
        deps.normalized()
    }
}

/// A collective's transfers between ranks placed on hosts, tracking each rank's completion
/// (every transfer into or out of it done).
struct CollTransfers<'a> {
    gen: &'a mut Gen,
    hosts: &'a [u32],
    done: Vec<Cond>,
}

impl Transfers for CollTransfers<'_> {
    type C = Cond;
    fn send(&mut self, src: usize, dst: usize, bytes: u64, cond: &Cond) -> Cond {
        let c = self.gen.send(self.hosts[src], self.hosts[dst], bytes, cond);
        self.done[src] = self.gen.join(&self.done[src], &c);
        self.done[dst] = self.gen.join(&self.done[dst], &c);
        c
    }
    fn join(&mut self, a: &Cond, b: &Cond) -> Cond {
        self.gen.join(a, b)
    }
}

/// What a replay knows for its results: per rank, when it ends and its compute; per flow, what
/// it waited for (to walk the critical path back from each rank's end).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ChakraLabels {
    pub ranks: Vec<RankInfo>,
    gates: Vec<Vec<Term>>,
    pub skipped_nodes: u32,
    pub dropped_deps: u32,
    /// Per collective (as in `Labels::collectives`): the Chakra node id on its group's first
    /// rank and its name.
    pub collective_nodes: Vec<(u64, String)>,
    pub start: SimTime,
    /// With process groups (else empty): communication classes, a group's name up to its
    /// first `.` (`tp.3` is `tp`), `all` for collectives over every rank and `p2p` for
    /// messages without a `pg_name`.
    pub classes: Vec<String>,
    /// Per flow, its class (an index in `classes`); empty without groups.
    pub flow_class: Vec<u16>,
    /// Per collective, its class; empty without groups.
    pub collective_class: Vec<u16>,
    /// Each rank's communication operations, for its communication time per class.
    pub spans: Vec<CommSpan>,
    /// With groups: each compute node of each rank, (rank, its end, its duration).
    compute_spans: Vec<(u32, Cond, SimTime)>,
}

/// One communication operation of one rank: a collective from the moment all its members have
/// arrived to the rank's part done, or a message from its send to its receipt.
#[derive(Clone, Debug, PartialEq)]
pub struct CommSpan {
    pub rank: u32,
    pub class: u16,
    begin: Cond,
    end: Cond,
}

#[derive(Clone, Debug, PartialEq)]
pub struct RankInfo {
    pub host: u32,
    pub trace: String,
    /// Every COMP node's duration, summed.
    pub compute: SimTime,
    end: Cond,
}

/// A rank's results once the flows ran.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RankTimes {
    /// From the replay's start to the rank's last node done.
    pub iteration: u64,
    /// Compute and communication along the rank's critical path (they add up to `iteration`).
    pub critical_compute: u64,
    pub critical_comm: u64,
    /// With process groups: `critical_comm` by class (they add up to it); else empty.
    pub critical_comm_by_class: BTreeMap<String, u64>,
}

impl ChakraLabels {
    /// The index of class `name`, added if new.
    fn class(&mut self, name: &str) -> u16 {
        match self.classes.iter().position(|x| x == name) {
            Some(i) => i as u16,
            None => {
                self.classes.push(name.to_string());
                (self.classes.len() - 1) as u16
            }
        }
    }

    /// Rank `r`'s time with any of its communication in flight, and of that the time it also
    /// computes (communication hidden behind compute). None if a span never finished.
    pub fn rank_overlap(&self, r: usize, times: &[(u64, Option<u64>)]) -> Option<(u64, u64)> {
        let finish: Vec<Option<u64>> = times.iter().map(|t| t.1).collect();
        let mut comm: Vec<(u64, u64)> = Vec::new();
        for s in self.spans.iter().filter(|s| s.rank as usize == r) {
            comm.push((s.begin.eval(&finish)?, s.end.eval(&finish)?));
        }
        let mut comp: Vec<(u64, u64)> = Vec::new();
        for (q, e, d) in &self.compute_spans {
            if *q as usize == r {
                let e = e.eval(&finish)?;
                comp.push((e.saturating_sub(d.ps()), e));
            }
        }
        let (comm, comp) = (merge(comm), merge(comp));
        let busy = comm.iter().map(|(a, b)| b - a).sum();
        // Both lists sorted and disjoint: walk them together.
        let (mut i, mut j, mut both) = (0, 0, 0u64);
        while i < comm.len() && j < comp.len() {
            let (a, b) = (comm[i].0.max(comp[j].0), comm[i].1.min(comp[j].1));
            if a < b {
                both += b - a;
            }
            if comm[i].1 < comp[j].1 {
                i += 1;
            } else {
                j += 1;
            }
        }
        Some((busy, both))
    }

    /// Rank `r`'s communication time per class: its operations' spans summed (operations of
    /// one class that overlap each count in full). None if one never finished.
    pub fn rank_comm(
        &self,
        r: usize,
        times: &[(u64, Option<u64>)],
    ) -> Option<BTreeMap<String, u64>> {
        let finish: Vec<Option<u64>> = times.iter().map(|t| t.1).collect();
        let mut out = BTreeMap::new();
        for s in self.spans.iter().filter(|s| s.rank as usize == r) {
            let (b, e) = (s.begin.eval(&finish)?, s.end.eval(&finish)?);
            *out.entry(self.classes[s.class as usize].clone())
                .or_insert(0u64) += e.saturating_sub(b);
        }
        Some(out)
    }

    /// Rank `r`'s times given every flow's (start, finish); None if a flow it needs never
    /// finished.
    pub fn rank_times(&self, r: usize, times: &[(u64, Option<u64>)]) -> Option<RankTimes> {
        let finish: Vec<Option<u64>> = times.iter().map(|t| t.1).collect();
        let start = self.start.ps();
        let end = self.ranks[r].end.eval(&finish)?;
        let (mut compute, mut comm) = (0u64, 0u64);
        let mut by_class: BTreeMap<String, u64> = BTreeMap::new();
        let mut terms: &[Term] = &self.ranks[r].end.0;
        let mut at = end;
        loop {
            // The term that decided `at` (the first of equals).
            let Some((fs, d)) = terms.iter().find(|(fs, d)| {
                let t = fs
                    .iter()
                    .map(|&f| finish[f as usize].unwrap_or(u64::MAX))
                    .max()
                    .unwrap_or(0);
                t.saturating_add(d.ps()) == at
            }) else {
                // The flow started after its gate held (cannot happen): count it as waiting.
                comm += at.saturating_sub(start);
                if !self.flow_class.is_empty() {
                    *by_class.entry("wait".into()).or_default() += at.saturating_sub(start);
                }
                break;
            };
            compute += d.ps();
            let Some(&f) = fs
                .iter()
                .max_by_key(|&&f| (finish[f as usize], std::cmp::Reverse(f)))
            else {
                // An absolute time: the replay's start plus compute.
                compute = compute.saturating_sub(start);
                break;
            };
            let (s, e) = (times[f as usize].0, finish[f as usize].unwrap_or(0));
            comm += e - s;
            if let Some(&c) = self.flow_class.get(f as usize) {
                *by_class
                    .entry(self.classes[c as usize].clone())
                    .or_default() += e - s;
            }
            at = s;
            terms = &self.gates[f as usize];
            if terms.iter().all(|t| t.0.is_empty()) {
                // Ungated: it started at its own time, the start plus compute.
                compute += s.saturating_sub(start);
                break;
            }
        }
        Some(RankTimes {
            iteration: end - start,
            critical_compute: compute,
            critical_comm: comm,
            critical_comm_by_class: by_class,
        })
    }
}

/// Intervals sorted and merged where they overlap or touch.
fn merge(mut v: Vec<(u64, u64)>) -> Vec<(u64, u64)> {
    v.retain(|(a, b)| b > a);
    v.sort_unstable();
    let mut out: Vec<(u64, u64)> = Vec::with_capacity(v.len());
    for (a, b) in v {
        match out.last_mut() {
            Some(l) if a <= l.1 => l.1 = l.1.max(b),
            _ => out.push((a, b)),
        }
    }
    out
}

/// A Chakra workload: flows, dependencies, and labels for collectives and ranks.
pub struct Replay {
    pub flows: Vec<FlowSpec>,
    pub deps: Dependencies,
    pub labels: Labels,
}

/// The number of ranks the traces at `files` describe under `opt` (for placement).
pub fn rank_count(files: &[PathBuf], opt: &Options, name: &str) -> Result<u32, ConfigError> {
    match (files.len(), opt.ranks) {
        (1, Some(n)) => Ok(n),
        (1, None) => Err(ConfigError::Io {
            path: name.to_string(),
            msg: "one rank's trace: replay it on N ranks with workload.chakra_ranks = N".into(),
        }),
        (n, Some(r)) if r as usize != n => Err(ConfigError::Io {
            path: name.to_string(),
            msg: format!(
                "{n} rank traces but workload.chakra_ranks = {r}: the ranks mismatch (leave \
                 chakra_ranks out to replay one rank per file)"
            ),
        }),
        (n, _) => Ok(n as u32),
    }
}

/// Replays the traces `files` (one per rank, or one for all under `opt.ranks`) with rank r on
/// host `hosts[r]`, from `start`.
pub fn replay(
    files: &[PathBuf],
    hosts: &[u32],
    start: SimTime,
    opt: &Options,
) -> Result<Replay, ConfigError> {
    let spmd = files.len() == 1;
    let traces: Vec<RankTrace> = files
        .iter()
        .map(|p| read_rank(p, opt, spmd))
        .collect::<Result<_, _>>()?;
    run(&traces, hosts, start, opt.comm_groups.as_ref())
}

/// Replays in-memory traces (one per rank, or one for all ranks): for tests and tools.
pub fn replay_nodes(
    traces: &[(String, Vec<proto::Node>)],
    hosts: &[u32],
    start: SimTime,
    opt: &Options,
) -> Result<Replay, ConfigError> {
    let spmd = traces.len() == 1 && hosts.len() > 1;
    let traces: Vec<RankTrace> = traces
        .iter()
        .map(|(name, nodes)| build_rank(nodes.clone(), name, opt, spmd))
        .collect::<Result<_, _>>()?;
    run(&traces, hosts, start, opt.comm_groups.as_ref())
}

#[allow(clippy::needless_range_loop)] // ranks index several vectors at once
fn run(
    traces: &[RankTrace],
    hosts: &[u32],
    start: SimTime,
    groups: Option<&CommGroups>,
) -> Result<Replay, ConfigError> {
    let n = hosts.len();
    let trace = |r: usize| &traces[if traces.len() == 1 { 0 } else { r }];
    let err = |r: usize, id: u64, msg: String| ConfigError::Io {
        path: trace(r).path.clone(),
        msg: format!("node id {id}: {msg}"),
    };
    // Group 0 is every rank; group 1 + i is the i-th named process group.
    let mut members: Vec<Vec<usize>> = vec![(0..n).collect()];
    let mut names: Vec<&str> = vec![""];
    if let Some(g) = groups {
        g.check(Some(n as u32)).map_err(|m| ConfigError::Io {
            path: g.source.clone(),
            msg: format!("workload.chakra_comm_groups: {m}"),
        })?;
        for (name, m) in &g.groups {
            members.push(m.iter().map(|&r| r as usize).collect());
            names.push(name);
        }
    }
    let gid = |op: &Op| match op {
        Op::Coll { group, .. } => *group as usize,
        _ => unreachable!("collectives only"),
    };
    // Per group, per member (in the group's order), its collectives in dependency order.
    let mut colls: Vec<Vec<Vec<usize>>> =
        members.iter().map(|m| vec![Vec::new(); m.len()]).collect();
    let position: Vec<BTreeMap<usize, usize>> = members
        .iter()
        .map(|m| m.iter().enumerate().map(|(p, &r)| (r, p)).collect())
        .collect();
    for r in 0..n {
        let t = trace(r);
        for i in 0..t.nodes.len() {
            if !matches!(t.nodes[i].op, Op::Coll { .. }) {
                continue;
            }
            let g = gid(&t.nodes[i].op);
            let Some(&p) = position[g].get(&r) else {
                return Err(err(
                    r,
                    t.nodes[i].id,
                    format!(
                        "a collective of group `{}`, which does not have rank {r} ({})",
                        names[g],
                        groups.map_or("", |g| g.source.as_str())
                    ),
                ));
            };
            colls[g][p].push(i);
        }
    }
    for (g, m) in members.iter().enumerate() {
        let r0 = m[0];
        for (p, &r) in m.iter().enumerate().skip(1) {
            if colls[g][p].len() != colls[g][0].len() {
                let what = if g == 0 {
                    "every rank runs the same collectives".to_string()
                } else {
                    format!(
                        "every rank of group `{}` runs the same collectives",
                        names[g]
                    )
                };
                let of = if g == 0 {
                    String::new()
                } else {
                    format!(" of group `{}`", names[g])
                };
                return Err(ConfigError::Io {
                    path: trace(r).path.clone(),
                    msg: format!(
                        "{} collectives{of}, but {} has {}: {what}",
                        colls[g][p].len(),
                        trace(r0).path,
                        colls[g][0].len()
                    ),
                });
            }
        }
        for (k, &i0) in colls[g][0].iter().enumerate() {
            let Op::Coll {
                comm_type: t0,
                bytes: b0,
                ..
            } = trace(r0).nodes[i0].op
            else {
                unreachable!()
            };
            for (p, &r) in m.iter().enumerate().skip(1) {
                let node = &trace(r).nodes[colls[g][p][k]];
                if let Op::Coll {
                    comm_type, bytes, ..
                } = node.op
                {
                    if (comm_type, bytes) != (t0, b0) {
                        let of = if g == 0 {
                            String::new()
                        } else {
                            format!(" of group `{}`", names[g])
                        };
                        return Err(err(
                            r,
                            node.id,
                            format!(
                                "collective {k}{of} of the trace is comm_type {comm_type} of \
                                 {bytes} bytes here, comm_type {t0} of {b0} bytes on rank {r0}"
                            ),
                        ));
                    }
                }
            }
        }
    }
    let mut gen = Gen::default();
    let mut labels = Labels::default();
    let mut chakra = ChakraLabels {
        start,
        ..ChakraLabels::default()
    };
    // With groups: each flow's and collective's class (its group's name up to the first `.`).
    let mut class_of_group: Vec<u16> = Vec::new();
    if groups.is_some() {
        for (g, name) in names.iter().enumerate() {
            let c = if g == 0 {
                "all"
            } else {
                name.split('.').next().unwrap_or(name)
            };
            let i = match chakra.classes.iter().position(|x| x == c) {
                Some(i) => i,
                None => {
                    chakra.classes.push(c.to_string());
                    chakra.classes.len() - 1
                }
            };
            class_of_group.push(i as u16);
        }
    }
    // Per rank: each node's completion, dependencies left, and which collective a node is.
    let mut done: Vec<Vec<Option<Cond>>> =
        (0..n).map(|r| vec![None; trace(r).nodes.len()]).collect();
    let mut coll_of: Vec<BTreeMap<usize, usize>> = vec![BTreeMap::new(); n];
    for (g, m) in members.iter().enumerate() {
        for (p, &r) in m.iter().enumerate() {
            for (k, &i) in colls[g][p].iter().enumerate() {
                coll_of[r].insert(i, k);
            }
        }
    }
    // Per group, per collective: each member's start once it has arrived.
    let mut arrived: Vec<Vec<Vec<Option<Cond>>>> = members
        .iter()
        .enumerate()
        .map(|(g, m)| vec![vec![None; m.len()]; colls[g][0].len()])
        .collect();
    // Sends by (src, dst, tag): their completions in order; receives taken so far.
    let mut sends: BTreeMap<(u32, u32, i64), Vec<Cond>> = BTreeMap::new();
    let mut taken: BTreeMap<(u32, u32, i64), usize> = BTreeMap::new();
    let mut next = vec![0usize; n];
    let start_cond = Cond::at(start);
    let dep_cond = |gen: &Gen, done: &[Option<Cond>], node: &TNode| -> Cond {
        let mut c = start_cond.clone();
        for &d in &node.deps {
            c = gen.join(&c, done[d].as_ref().expect("dependencies come first"));
        }
        c
    };
    // Nodes run in each rank's dependency order; a rank stops at a receive whose send has not
    // been replayed or a collective not every member has reached, and the others go on.
    loop {
        let mut progress = false;
        for r in 0..n {
            let t = trace(r);
            while next[r] < t.nodes.len() {
                let i = next[r];
                let node = &t.nodes[i];
                let c = dep_cond(&gen, &done[r], node);
                let out = match &node.op {
                    Op::Nop => c,
                    Op::Comp(d) => {
                        let e = c.then(*d);
                        if groups.is_some() && *d > SimTime::ZERO {
                            chakra.compute_spans.push((r as u32, e.clone(), *d));
                        }
                        e
                    }
                    Op::Send {
                        peer,
                        bytes,
                        tag,
                        group,
                    } => {
                        if *peer as usize >= n || *peer as usize == r {
                            return Err(err(
                                r,
                                node.id,
                                format!("sends to rank {peer}, but the ranks are 0 to {}", n - 1),
                            ));
                        }
                        let first = gen.flows.len();
                        let f = gen.send(hosts[r], hosts[*peer as usize], *bytes, &c);
                        if groups.is_some() {
                            let cl = if *group == 0 {
                                chakra.class("p2p")
                            } else {
                                class_of_group[*group as usize]
                            };
                            chakra.flow_class.resize(gen.flows.len(), cl);
                            if gen.flows.len() > first {
                                chakra.spans.push(CommSpan {
                                    rank: r as u32,
                                    class: cl,
                                    begin: c.clone(),
                                    end: f.clone(),
                                });
                            }
                        }
                        sends
                            .entry((r as u32, *peer, *tag))
                            .or_default()
                            .push(f.clone());
                        f
                    }
                    Op::Recv { peer, tag, .. } => {
                        if *peer as usize >= n || *peer as usize == r {
                            return Err(err(
                                r,
                                node.id,
                                format!(
                                    "receives from rank {peer}, but the ranks are 0 to {}",
                                    n - 1
                                ),
                            ));
                        }
                        let key = (*peer, r as u32, *tag);
                        let k = taken.get(&key).copied().unwrap_or(0);
                        let Some(s) = sends.get(&key).and_then(|v| v.get(k)) else {
                            break;
                        };
                        let s = s.clone();
                        taken.insert(key, k + 1);
                        gen.join(&c, &s)
                    }
                    Op::Coll {
                        kind, bytes, group, ..
                    } => {
                        let g = *group as usize;
                        let m = &members[g];
                        let k = coll_of[r][&i];
                        let p = position[g][&r];
                        if arrived[g][k][p].is_none() {
                            arrived[g][k][p] = Some(c);
                        }
                        if arrived[g][k].iter().any(Option::is_none) {
                            break;
                        }
                        // Every member has arrived: expand it, and every member moves past it.
                        let gn = m.len();
                        let starts: Vec<Cond> =
                            arrived[g][k].iter().map(|c| c.clone().unwrap()).collect();
                        let ghosts: Vec<u32> = m.iter().map(|&q| hosts[q]).collect();
                        let first = gen.flows.len() as u32;
                        let mut tr = CollTransfers {
                            gen: &mut gen,
                            hosts: &ghosts,
                            done: starts.clone(),
                        };
                        let (algo, label_bytes) = match *kind {
                            Coll::Barrier => {
                                let all = starts
                                    .iter()
                                    .skip(1)
                                    .fold(starts[0].clone(), |a, b| tr.gen.join(&a, b));
                                tr.done = vec![all; gn];
                                (None, 0)
                            }
                            Coll::Algo(a) => {
                                if a == Algo::HalvingDoublingAllreduce && !gn.is_power_of_two() {
                                    return Err(err(
                                        r,
                                        node.id,
                                        format!(
                                            "halving-doubling all-reduce needs a power-of-two \
                                             number of ranks, not {gn} (workload.\
                                             chakra_algorithms.all_reduce)"
                                        ),
                                    ));
                                }
                                // ALL_TO_ALL's comm_size is a rank's whole buffer: per pair
                                // a 1/n share.
                                let b = if matches!(
                                    a,
                                    Algo::AllToAllDirect
                                        | Algo::AllToAllShifted
                                        | Algo::AllToAllPairwise
                                ) {
                                    bytes.div_ceil(gn as u64)
                                } else {
                                    *bytes
                                };
                                if b > 0 && (g == 0 || gn > 1) {
                                    collective::schedule(&mut tr, a, b, &starts);
                                }
                                (Some(a), b)
                            }
                        };
                        let ends = std::mem::take(&mut tr.done);
                        let range = first..gen.flows.len() as u32;
                        if groups.is_some() {
                            let cl = class_of_group[g];
                            chakra.flow_class.resize(gen.flows.len(), cl);
                            if !range.is_empty() {
                                let begin = starts
                                    .iter()
                                    .skip(1)
                                    .fold(starts[0].clone(), |a, b| gen.join(&a, b));
                                for (q, e) in m.iter().zip(&ends) {
                                    chakra.spans.push(CommSpan {
                                        rank: *q as u32,
                                        class: cl,
                                        begin: begin.clone(),
                                        end: e.clone(),
                                    });
                                }
                            }
                        }
                        if let Some(algo) = algo {
                            labels.collectives.push(CollectiveInfo {
                                job: 0,
                                group: g as u32,
                                iteration: 0,
                                layer: Some(k as u32),
                                algo,
                                ranks: gn as u32,
                                bytes: label_bytes,
                                flows: range,
                                compute_before: SimTime::ZERO,
                                bound: SimTime::ZERO,
                            });
                            let n0 = &trace(m[0]).nodes[colls[g][0][k]];
                            chakra.collective_nodes.push((n0.id, n0.name.clone()));
                            if groups.is_some() {
                                chakra.collective_class.push(class_of_group[g]);
                            }
                        }
                        for (p, e) in ends.into_iter().enumerate() {
                            let q = m[p];
                            let iq = colls[g][p][k];
                            done[q][iq] = Some(e);
                            if q != r && next[q] == iq {
                                next[q] += 1;
                            }
                        }
                        coll_of[r].remove(&i);
                        next[r] += 1;
                        progress = true;
                        continue;
                    }
                };
                done[r][i] = Some(out);
                next[r] += 1;
                progress = true;
            }
        }
        if (0..n).all(|r| next[r] == trace(r).nodes.len()) {
            break;
        }
        if !progress {
            let r = (0..n).find(|&r| next[r] < trace(r).nodes.len()).unwrap();
            let node = &trace(r).nodes[next[r]];
            let why = match node.op {
                Op::Recv { peer, tag, .. } => format!(
                    "waits for a message from rank {peer} (comm_tag {tag}) that rank {peer}'s \
                     trace never sends before it waits itself"
                ),
                _ => "a collective some rank never reaches (its dependencies wait on this \
                      rank)"
                    .into(),
            };
            return Err(err(
                r,
                node.id,
                format!("the replay deadlocks: rank {r} {why}"),
            ));
        }
    }
    if gen.flows.is_empty() {
        return Err(ConfigError::Io {
            path: trace(0).path.clone(),
            msg: "no flow crosses the network (no communication, or every rank on one host)".into(),
        });
    }
    for r in 0..n {
        let t = trace(r);
        let end = done[r]
            .iter()
            .flatten()
            .fold(start_cond.clone(), |a, b| gen.join(&a, b));
        let compute = t
            .nodes
            .iter()
            .map(|x| match x.op {
                Op::Comp(d) => d,
                _ => SimTime::ZERO,
            })
            .fold(SimTime::ZERO, |a, b| a + b);
        chakra.ranks.push(RankInfo {
            host: hosts[r],
            trace: t.path.clone(),
            compute,
            end,
        });
    }
    chakra.skipped_nodes = traces.iter().map(|t| t.skipped).sum();
    chakra.dropped_deps = traces.iter().map(|t| t.dropped_deps).sum();
    let deps = gen.finish();
    chakra.gates = gen.gates;
    labels.jobs.push(JobInfo {
        kind: "chakra",
        start,
        iterations: 1,
    });
    labels.chakra = Some(chakra);
    Ok(Replay {
        flows: gen.flows,
        deps,
        labels,
    })
}
