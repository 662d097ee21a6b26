//! MLCommons Chakra execution traces: one file per rank, a sequence of length-delimited
//! protobuf messages (a varint length, then the message), a `GlobalMetadata` first and then
//! `Node`s. The messages below keep the public schema's (`et_def.proto`) field numbers for
//! the fields lbsim reads; every other field is skipped as protobuf skips unknown fields.
//!
//! Replay: each rank's nodes run in dependency order (data and control dependencies alike).
//! A `COMP_NODE` is a delay of `duration_micros` on its rank; a `COMM_SEND_NODE` to `comm_dst`
//! is a flow of `comm_size` bytes, completed when its receiver holds it, and the matching
//! `COMM_RECV_NODE` (the k-th receive from that source with that `comm_tag` takes the k-th such
//! send) completes with it; a `COMM_COLL_NODE` is the collective `comm_type` over all ranks,
//! the k-th collective of every rank's trace being one collective, each rank joining it when
//! its own dependencies are done, expanded into lbsim's schedules ([`collective::schedule`]);
//! a `METADATA_NODE` takes no time. Anything else is refused, naming the node, or skipped with
//! a count under `chakra_skip_unknown` (a skipped node completes with its dependencies; a
//! dependency on a node id the trace does not have, as in traces cut from longer ones, is
//! dropped and counted too). Counts are per trace file (an SPMD replay's once).
//!
//! A node's completion is a *condition*: the largest of terms "these flows have been received,
//! then this much compute". A flow waiting on a condition of several terms waits for one
//! trigger per term (`Dependencies::waits`), so compute and communication overlap exactly as
//! the graph allows.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use super::collective::Algo;
use super::config::{AllReduceAlgorithm, AllToAllAlgorithm, ChakraAlgorithms};
use crate::config::{limits, ConfigError};
use crate::time::SimTime;

mod format;
mod replay;
#[cfg(test)]
mod tests;

pub use format::{decode, encode, proto};
pub use replay::{
    rank_count, replay, replay_nodes, ChakraLabels, CommSpan, Cond, RankInfo, RankTimes, Replay,
};

/// The collective kinds replayed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Coll {
    Algo(Algo),
    Barrier,
}

/// What a node does, once read.
#[derive(Clone, Debug, PartialEq)]
enum Op {
    /// Takes no time (metadata, or a skipped node).
    Nop,
    Comp(SimTime),
    Send {
        peer: u32,
        bytes: u64,
        tag: i64,
        /// Its `pg_name`'s group (1 + index in `CommGroups::groups`), for labels only.
        group: u32,
    },
    Recv {
        peer: u32,
        bytes: u64,
        tag: i64,
    },
    Coll {
        kind: Coll,
        comm_type: i64,
        bytes: u64,
        /// The ranks it runs over: 0 for all of them, else 1 + the index of its `pg_name` in
        /// `CommGroups::groups`.
        group: u32,
    },
}

#[derive(Clone, Debug)]
struct TNode {
    id: u64,
    name: String,
    op: Op,
    /// Indices of the nodes it depends on.
    deps: Vec<usize>,
}

/// One rank's trace, its nodes in a dependency order.
#[derive(Clone, Debug)]
struct RankTrace {
    path: String,
    nodes: Vec<TNode>,
    skipped: u32,
    /// Dependencies on node ids the trace does not have, dropped under `chakra_skip_unknown`.
    dropped_deps: u32,
}

/// What a Chakra replay reads besides the files.
#[derive(Clone, Debug)]
pub struct Options {
    pub ranks: Option<u32>,
    pub skip_unknown: bool,
    pub algorithms: ChakraAlgorithms,
    pub payload_bytes: u32,
    /// Process groups by name (`workload.chakra_comm_groups`): a COMM_COLL_NODE whose
    /// `pg_name` names one runs over its ranks only. None: `pg_name` is not read, every
    /// collective runs over all ranks.
    pub comm_groups: Option<CommGroups>,
}

/// Process groups, as ASTRA-sim's comm-group file gives them: `{"NAME": [ranks...], ...}`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CommGroups {
    /// Where they came from, for errors (the file, or the generator).
    pub source: String,
    pub groups: BTreeMap<String, Vec<u32>>,
}

impl CommGroups {
    /// Reads a comm-group JSON file; errors name the file and the key.
    pub fn load(path: &Path) -> Result<CommGroups, ConfigError> {
        let name = path.display().to_string();
        let io = |msg: String| ConfigError::Io {
            path: name.clone(),
            msg: format!("workload.chakra_comm_groups: {msg}"),
        };
        let text = std::fs::read_to_string(path)
            .map_err(|e| io(format!("cannot read the comm-group file: {e}")))?;
        let groups: BTreeMap<String, Vec<u32>> = serde_json::from_str(&text).map_err(|e| {
            io(format!(
                "not a comm-group file ({e}): expected {{\"NAME\": [rank, ...], ...}}"
            ))
        })?;
        let g = CommGroups {
            source: name.clone(),
            groups,
        };
        g.check(None).map_err(io)?;
        Ok(g)
    }

    /// Every group non-empty without repeated ranks, and (given the rank count) every rank
    /// below it.
    pub fn check(&self, ranks: Option<u32>) -> Result<(), String> {
        for (name, members) in &self.groups {
            if members.is_empty() {
                return Err(format!("group `{name}` has no ranks"));
            }
            let mut seen = BTreeSet::new();
            for &r in members {
                if !seen.insert(r) {
                    return Err(format!("group `{name}` lists rank {r} twice"));
                }
                if let Some(n) = ranks.filter(|&n| r >= n) {
                    return Err(format!(
                        "group `{name}` has rank {r}, but the ranks are 0 to {}",
                        n - 1
                    ));
                }
            }
        }
        Ok(())
    }

    /// The JSON text of the groups (as `load` reads it).
    pub fn to_json(&self) -> String {
        let mut s = serde_json::to_string_pretty(&self.groups).expect("a map of lists");
        s.push('\n');
        s
    }
}

/// The trace files `path` names: a file (one rank), a directory of `NAME.RANK.et` files, or a
/// prefix `NAME` with files `NAME.0.et`, `NAME.1.et`, ... beside it (as ASTRA-sim names them).
pub fn files(path: &Path) -> Result<Vec<PathBuf>, ConfigError> {
    let io = |msg: String| ConfigError::Io {
        path: path.display().to_string(),
        msg,
    };
    if path.is_file() {
        return Ok(vec![path.to_path_buf()]);
    }
    let (dir, prefix) = if path.is_dir() {
        (path.to_path_buf(), None)
    } else {
        let dir = path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if !dir.join(format!("{name}.0.et")).is_file() {
            return Err(io(
                "no such file or directory (nor a prefix of NAME.0.et, NAME.1.et, ... files)"
                    .into(),
            ));
        }
        (dir.to_path_buf(), Some(name))
    };
    let rd = std::fs::read_dir(&dir).map_err(|e| io(format!("cannot read directory: {e}")))?;
    // rank -> file, per prefix.
    let mut by_prefix: BTreeMap<String, BTreeMap<u32, PathBuf>> = BTreeMap::new();
    for e in rd {
        let e = e.map_err(|e| io(format!("cannot read directory: {e}")))?;
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(stem) = name.strip_suffix(".et") else {
            continue;
        };
        let Some((pre, rank)) = stem.rsplit_once('.') else {
            continue;
        };
        let Ok(rank) = rank.parse::<u32>() else {
            continue;
        };
        if prefix.as_deref().is_some_and(|p| p != pre) {
            continue;
        }
        by_prefix
            .entry(pre.to_string())
            .or_default()
            .insert(rank, e.path());
    }
    let mut it = by_prefix.into_iter();
    let Some((pre, ranks)) = it.next() else {
        return Err(io(
            "no Chakra trace files (NAME.RANK.et, e.g. trace.0.et) in this directory".into(),
        ));
    };
    if let Some((other, _)) = it.next() {
        return Err(io(format!(
            "traces of two runs here (`{pre}.*.et` and `{other}.*.et`): name one as \
             workload.path = \"DIR/{pre}\""
        )));
    }
    let n = ranks.len() as u32;
    if let Some((i, _)) = ranks.keys().enumerate().find(|(i, r)| *i as u32 != **r) {
        return Err(io(format!(
            "{n} files `{pre}.RANK.et` but rank {i}'s is missing: ranks must be 0 to {}",
            n - 1
        )));
    }
    Ok(ranks.into_values().collect())
}

fn read_rank(path: &Path, opt: &Options, spmd: bool) -> Result<RankTrace, ConfigError> {
    let name = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|e| ConfigError::Io {
        path: name.clone(),
        msg: format!("cannot read Chakra trace: {e}"),
    })?;
    let (_, nodes) = decode(&bytes, &name)?;
    build_rank(nodes, &name, opt, spmd)
}

/// Reads one rank's nodes into their operations and a dependency order.
fn build_rank(
    nodes: Vec<proto::Node>,
    name: &str,
    opt: &Options,
    spmd: bool,
) -> Result<RankTrace, ConfigError> {
    let err = |id: u64, msg: String| ConfigError::Io {
        path: name.to_string(),
        msg: format!("node id {id}: {msg}"),
    };
    let mut index: BTreeMap<u64, usize> = BTreeMap::new();
    for (i, n) in nodes.iter().enumerate() {
        if index.insert(n.id, i).is_some() {
            return Err(err(n.id, "a second node with this id".into()));
        }
    }
    let pg_index: BTreeMap<&str, u32> = opt
        .comm_groups
        .iter()
        .flat_map(|g| g.groups.keys().enumerate())
        .map(|(i, k)| (k.as_str(), i as u32 + 1))
        .collect();
    let mut skipped = 0;
    let mut dropped_deps = 0;
    let mut ctrls: Vec<Vec<usize>> = Vec::with_capacity(nodes.len());
    let mut out: Vec<TNode> = Vec::with_capacity(nodes.len());
    for n in &nodes {
        let int = |key: &str| -> Result<Option<i64>, ConfigError> {
            match n.attr(key) {
                None => Ok(None),
                Some(v) => v
                    .int()
                    .map(Some)
                    .ok_or_else(|| err(n.id, format!("attribute `{key}` is not an integer"))),
            }
        };
        let need = |key: &str| -> Result<i64, ConfigError> {
            int(key)?.ok_or_else(|| {
                err(
                    n.id,
                    format!(
                        "a {} needs the attribute `{key}`",
                        proto::NODE_TYPES[n.r#type as usize]
                    ),
                )
            })
        };
        let size = |key: &str| -> Result<u64, ConfigError> {
            let v = need(key)?;
            let v = u64::try_from(v).map_err(|_| err(n.id, format!("`{key}` {v} is negative")))?;
            limits::check_message(v, opt.payload_bytes)
                .map_err(|m| err(n.id, format!("`{key}`: {m}")))?;
            Ok(v)
        };
        let peer = |key: &str| -> Result<u32, ConfigError> {
            let v = need(key)?;
            u32::try_from(v).map_err(|_| err(n.id, format!("`{key}` {v} is not a rank")))
        };
        // The node's process group, read only when groups are given: 0 for none (all ranks).
        let pg = || -> Result<u32, ConfigError> {
            let Some(groups) = &opt.comm_groups else {
                return Ok(0);
            };
            let name = match n.attr("pg_name") {
                None => return Ok(0),
                Some(proto::Value::StringVal(s)) => s.clone(),
                Some(v) => match v.int() {
                    Some(i) => i.to_string(),
                    None => return Err(err(n.id, "attribute `pg_name` is not a string".into())),
                },
            };
            match pg_index.get(name.as_str()) {
                Some(&i) => Ok(i),
                None => Err(err(
                    n.id,
                    format!(
                        "pg_name `{name}` is not a group of workload.chakra_comm_groups ({})",
                        groups.source
                    ),
                )),
            }
        };
        let unknown = |what: String| -> Result<Op, ConfigError> {
            if opt.skip_unknown {
                Ok(Op::Nop)
            } else {
                Err(err(
                    n.id,
                    format!(
                        "{what}, which lbsim does not replay (set workload.chakra_skip_unknown \
                         = true to skip such nodes)"
                    ),
                ))
            }
        };
        let op = match n.r#type {
            proto::METADATA_NODE => Op::Nop,
            proto::COMP_NODE => {
                // lbsim's own traces carry the exact duration in picoseconds beside the
                // schema's whole microseconds.
                let ps = match int("lbsim_duration_ps")? {
                    Some(ps) if ps >= 0 => ps as u128,
                    Some(ps) => {
                        return Err(err(n.id, format!("`lbsim_duration_ps` {ps} is negative")))
                    }
                    None => (n.duration_micros as u128) * 1_000_000,
                };
                if ps >= limits::TIME_PS as u128 {
                    return Err(err(
                        n.id,
                        format!(
                            "duration_micros {} is past the time a run may simulate",
                            n.duration_micros
                        ),
                    ));
                }
                Op::Comp(SimTime(ps as u64))
            }
            t @ (proto::COMM_SEND_NODE | proto::COMM_RECV_NODE) if spmd => {
                return Err(err(
                    n.id,
                    format!(
                        "a {} under workload.chakra_ranks: an SPMD replay of one rank's trace \
                         has collectives only (give one trace per rank instead)",
                        proto::NODE_TYPES[t as usize]
                    ),
                ))
            }
            proto::COMM_SEND_NODE => Op::Send {
                peer: peer("comm_dst")?,
                bytes: size("comm_size")?,
                tag: int("comm_tag")?.unwrap_or(0),
                group: pg()?,
            },
            proto::COMM_RECV_NODE => Op::Recv {
                peer: peer("comm_src")?,
                bytes: size("comm_size")?,
                tag: int("comm_tag")?.unwrap_or(0),
            },
            proto::COMM_COLL_NODE if int("comm_type")?.is_none() => {
                skipped += 1;
                unknown("a COMM_COLL_NODE without a `comm_type` attribute".into())?
            }
            proto::COMM_COLL_NODE => {
                let t = need("comm_type")?;
                let bytes =
                    size("comm_size").or_else(
                        |e| {
                            if t == proto::BARRIER {
                                Ok(0)
                            } else {
                                Err(e)
                            }
                        },
                    )?;
                let a = &opt.algorithms;
                let kind = match t {
                    proto::ALL_REDUCE => Some(Coll::Algo(match a.all_reduce {
                        Some(AllReduceAlgorithm::HalvingDoubling) => Algo::HalvingDoublingAllreduce,
                        _ => Algo::RingAllreduce,
                    })),
                    proto::ALL_GATHER => Some(Coll::Algo(Algo::RingAllgather)),
                    proto::REDUCE_SCATTER => Some(Coll::Algo(Algo::RingReduceScatter)),
                    proto::ALL_TO_ALL => Some(Coll::Algo(
                        a.all_to_all.unwrap_or(AllToAllAlgorithm::Direct).algo(
                            a.all_to_all_concurrency
                                .unwrap_or(crate::config::defaults::ALL_TO_ALL_CONCURRENCY),
                        ),
                    )),
                    proto::BARRIER => Some(Coll::Barrier),
                    _ => None,
                };
                match kind {
                    Some(kind) => Op::Coll {
                        kind,
                        comm_type: t,
                        bytes,
                        group: pg()?,
                    },
                    None => {
                        skipped += 1;
                        unknown(format!(
                            "collective comm_type {t} ({})",
                            usize::try_from(t)
                                .ok()
                                .and_then(|i| proto::COLL_TYPES.get(i))
                                .unwrap_or(&"not in the schema")
                        ))?
                    }
                }
            }
            t => {
                skipped += 1;
                unknown(format!(
                    "node type {t} ({})",
                    usize::try_from(t)
                        .ok()
                        .and_then(|i| proto::NODE_TYPES.get(i))
                        .unwrap_or(&"not in the schema")
                ))?
            }
        };
        let (mut deps, mut ctrl) = (Vec::new(), Vec::new());
        for (k, d) in n.data_deps.iter().chain(&n.ctrl_deps).enumerate() {
            let Some(&i) = index.get(d) else {
                if opt.skip_unknown {
                    dropped_deps += 1;
                    continue;
                }
                return Err(err(
                    n.id,
                    format!(
                        "depends on node id {d}, which the trace does not have (set \
                         workload.chakra_skip_unknown = true to drop such dependencies)"
                    ),
                ));
            };
            let list = if k < n.data_deps.len() {
                &mut deps
            } else {
                &mut ctrl
            };
            if !list.contains(&i) {
                list.push(i);
            }
        }
        out.push(TNode {
            id: n.id,
            name: n.name.clone(),
            op,
            deps,
        });
        ctrls.push(ctrl);
    }
    let n = out.len();
    let with_ctrl: Vec<Vec<usize>> = (0..n)
        .map(|i| {
            let mut d = out[i].deps.clone();
            d.extend(ctrls[i].iter().filter(|c| !out[i].deps.contains(c)));
            d
        })
        .collect();
    let order = match kahn(&with_ctrl) {
        Ok(order) => {
            for (t, d) in out.iter_mut().zip(with_ctrl) {
                t.deps = d;
            }
            order
        }
        Err(i) => {
            let data: Vec<Vec<usize>> = out.iter().map(|t| t.deps.clone()).collect();
            match kahn(&data) {
                Err(i) => {
                    return Err(err(
                        out[i].id,
                        "dependency cycle: this node waits, through its data dependencies, \
                         on itself"
                            .into(),
                    ))
                }
                // Control dependencies that loop (older converters wrote parent links there):
                // the data dependencies alone order the replay, as Chakra's feeder does.
                Ok(order) if opt.skip_unknown => {
                    dropped_deps += ctrls.iter().map(|c| c.len() as u32).sum::<u32>();
                    order
                }
                Ok(_) => {
                    return Err(err(
                        out[i].id,
                        "dependency cycle through control dependencies (ctrl_deps): set \
                         workload.chakra_skip_unknown = true to replay by data dependencies \
                         only"
                            .into(),
                    ))
                }
            }
        }
    };
    let mut pos = vec![0; n];
    for (p, &i) in order.iter().enumerate() {
        pos[i] = p;
    }
    let mut nodes: Vec<TNode> = order.iter().map(|&i| out[i].clone()).collect();
    for t in &mut nodes {
        for d in &mut t.deps {
            *d = pos[*d];
        }
    }
    Ok(RankTrace {
        path: name.to_string(),
        nodes,
        skipped,
        dropped_deps,
    })
}

/// A dependency order of nodes whose dependencies are `deps` (Kahn's algorithm, ready nodes
/// in file order, so deterministic), or a node on a cycle.
fn kahn(deps: &[Vec<usize>]) -> Result<Vec<usize>, usize> {
    let n = deps.len();
    let mut indeg: Vec<usize> = deps.iter().map(Vec::len).collect();
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (i, d) in deps.iter().enumerate() {
        for &p in d {
            children[p].push(i);
        }
    }
    let mut ready: BTreeSet<usize> = (0..n).filter(|&i| indeg[i] == 0).collect();
    let mut order = Vec::with_capacity(n);
    while let Some(i) = ready.pop_first() {
        order.push(i);
        for &c in &children[i] {
            indeg[c] -= 1;
            if indeg[c] == 0 {
                ready.insert(c);
            }
        }
    }
    if order.len() < n {
        return Err((0..n).find(|&i| indeg[i] > 0).expect("a node on a cycle"));
    }
    Ok(order)
}
