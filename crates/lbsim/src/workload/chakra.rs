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
use std::sync::Arc;

use prost::Message;

use super::collective::{self, Algo, CollectiveInfo, JobInfo, Labels, Transfers};
use super::config::{AllReduceAlgorithm, AllToAllAlgorithm, ChakraAlgorithms};
use super::{Dependencies, FlowSpec, Trigger};
use crate::config::{limits, ConfigError};
use crate::ids::HostId;
use crate::time::SimTime;

/// The schema's messages, as far as lbsim reads them (field numbers as in `et_def.proto`).
pub mod proto {
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct GlobalMetadata {
        #[prost(string, tag = "1")]
        pub version: String,
        #[prost(message, repeated, tag = "2")]
        pub attr: Vec<AttributeProto>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct AttributeProto {
        #[prost(string, tag = "1")]
        pub name: String,
        #[prost(string, tag = "2")]
        pub doc_string: String,
        #[prost(
            oneof = "Value",
            tags = "3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31"
        )]
        pub value: Option<Value>,
    }

    /// The scalar members of `AttributeProto.value` (the list members are skipped).
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Value {
        #[prost(double, tag = "3")]
        DoubleVal(f64),
        #[prost(float, tag = "5")]
        FloatVal(f32),
        #[prost(int32, tag = "7")]
        Int32Val(i32),
        #[prost(int64, tag = "9")]
        Int64Val(i64),
        #[prost(uint32, tag = "11")]
        Uint32Val(u32),
        #[prost(uint64, tag = "13")]
        Uint64Val(u64),
        #[prost(sint32, tag = "15")]
        Sint32Val(i32),
        #[prost(sint64, tag = "17")]
        Sint64Val(i64),
        #[prost(fixed32, tag = "19")]
        Fixed32Val(u32),
        #[prost(fixed64, tag = "21")]
        Fixed64Val(u64),
        #[prost(sfixed32, tag = "23")]
        Sfixed32Val(i32),
        #[prost(sfixed64, tag = "25")]
        Sfixed64Val(i64),
        #[prost(bool, tag = "27")]
        BoolVal(bool),
        #[prost(string, tag = "29")]
        StringVal(String),
        #[prost(bytes = "vec", tag = "31")]
        BytesVal(Vec<u8>),
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Node {
        #[prost(uint64, tag = "1")]
        pub id: u64,
        #[prost(string, tag = "2")]
        pub name: String,
        /// A `NodeType`.
        #[prost(int32, tag = "3")]
        pub r#type: i32,
        #[prost(uint64, repeated, tag = "4")]
        pub ctrl_deps: Vec<u64>,
        #[prost(uint64, repeated, tag = "5")]
        pub data_deps: Vec<u64>,
        #[prost(uint64, tag = "6")]
        pub start_time_micros: u64,
        #[prost(uint64, tag = "7")]
        pub duration_micros: u64,
        #[prost(message, repeated, tag = "10")]
        pub attr: Vec<AttributeProto>,
    }

    /// `NodeType`.
    pub const METADATA_NODE: i32 = 1;
    pub const COMP_NODE: i32 = 4;
    pub const COMM_SEND_NODE: i32 = 5;
    pub const COMM_RECV_NODE: i32 = 6;
    pub const COMM_COLL_NODE: i32 = 7;

    /// `NodeType` names, by value.
    pub const NODE_TYPES: &[&str] = &[
        "INVALID_NODE",
        "METADATA_NODE",
        "MEM_LOAD_NODE",
        "MEM_STORE_NODE",
        "COMP_NODE",
        "COMM_SEND_NODE",
        "COMM_RECV_NODE",
        "COMM_COLL_NODE",
    ];

    /// `CollectiveCommType`.
    pub const ALL_REDUCE: i64 = 0;
    pub const ALL_GATHER: i64 = 2;
    pub const ALL_TO_ALL: i64 = 6;
    pub const REDUCE_SCATTER: i64 = 7;
    pub const BARRIER: i64 = 9;

    /// `CollectiveCommType` names, by value.
    pub const COLL_TYPES: &[&str] = &[
        "ALL_REDUCE",
        "REDUCE",
        "ALL_GATHER",
        "GATHER",
        "SCATTER",
        "BROADCAST",
        "ALL_TO_ALL",
        "REDUCE_SCATTER",
        "REDUCE_SCATTER_BLOCK",
        "BARRIER",
    ];

    impl Node {
        pub fn attr(&self, name: &str) -> Option<&Value> {
            self.attr
                .iter()
                .find(|a| a.name == name)
                .and_then(|a| a.value.as_ref())
        }
    }

    impl Value {
        /// The value as an integer, whatever integer member carries it.
        pub fn int(&self) -> Option<i64> {
            Some(match *self {
                Value::Int32Val(v) | Value::Sint32Val(v) | Value::Sfixed32Val(v) => v as i64,
                Value::Int64Val(v) | Value::Sint64Val(v) | Value::Sfixed64Val(v) => v,
                Value::Uint32Val(v) | Value::Fixed32Val(v) => v as i64,
                Value::Uint64Val(v) | Value::Fixed64Val(v) => i64::try_from(v).ok()?,
                Value::BoolVal(b) => b as i64,
                _ => return None,
            })
        }
    }

    /// An attribute with an `int64_val` (as Chakra's generators write `comm_type` and
    /// `comm_size`).
    pub fn int64(name: &str, v: i64) -> AttributeProto {
        AttributeProto {
            name: name.into(),
            doc_string: String::new(),
            value: Some(Value::Int64Val(v)),
        }
    }

    /// An attribute with an `int32_val` (as they write `comm_src`, `comm_dst`, `comm_tag`).
    pub fn int32(name: &str, v: i32) -> AttributeProto {
        AttributeProto {
            name: name.into(),
            doc_string: String::new(),
            value: Some(Value::Int32Val(v)),
        }
    }
}

/// Encodes a trace: `GlobalMetadata` then the nodes, each length-delimited.
pub fn encode(version: &str, nodes: &[proto::Node]) -> Vec<u8> {
    let mut out = Vec::new();
    let meta = proto::GlobalMetadata {
        version: version.into(),
        attr: Vec::new(),
    };
    meta.encode_length_delimited(&mut out).expect("a Vec grows");
    for n in nodes {
        n.encode_length_delimited(&mut out).expect("a Vec grows");
    }
    out
}

/// Decodes a trace file's bytes: its metadata's version and its nodes. `name` is used in errors.
pub fn decode(bytes: &[u8], name: &str) -> Result<(String, Vec<proto::Node>), ConfigError> {
    let err = |msg: String| ConfigError::Io {
        path: name.to_string(),
        msg,
    };
    if bytes.starts_with(&[0x1f, 0x8b]) {
        return Err(err(
            "a gzip-compressed trace: decompress it first (gunzip)".into()
        ));
    }
    if bytes.is_empty() {
        return Err(err(
            "empty file: a Chakra trace starts with its GlobalMetadata".into(),
        ));
    }
    let mut buf = bytes;
    let mut nodes = Vec::new();
    let mut version = None;
    while !buf.is_empty() {
        let offset = bytes.len() - buf.len();
        let what = match (&version, nodes.last()) {
            (None, _) => "the GlobalMetadata".to_string(),
            (Some(_), None) => "the first node".to_string(),
            (Some(_), Some(n)) => {
                let n: &proto::Node = n;
                format!("the node after node id {}", n.id)
            }
        };
        let len = prost::encoding::decode_varint(&mut buf).map_err(|_| {
            err(format!(
                "truncated at byte {offset}: the length of {what} is cut off"
            ))
        })?;
        if len > buf.len() as u64 {
            return Err(err(format!(
                "truncated at byte {offset}: {what} says {len} bytes, {} remain",
                buf.len()
            )));
        }
        let (msg, rest) = buf.split_at(len as usize);
        buf = rest;
        if version.is_none() {
            let m = proto::GlobalMetadata::decode(msg).map_err(|e| {
                err(format!(
                    "byte {offset}: {what} is not a valid protobuf message ({e})"
                ))
            })?;
            version = Some(m.version);
        } else {
            let n = proto::Node::decode(msg).map_err(|e| {
                err(format!(
                    "byte {offset}: {what} is not a valid Chakra node ({e})"
                ))
            })?;
            nodes.push(n);
        }
    }
    Ok((version.unwrap_or_default(), nodes))
}

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
                let ps = (n.duration_micros as u128) * 1_000_000;
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
                    proto::ALL_TO_ALL => Some(Coll::Algo(match a.all_to_all {
                        Some(AllToAllAlgorithm::Pairwise) => Algo::AllToAllPairwise,
                        Some(AllToAllAlgorithm::Shifted) => Algo::AllToAllShifted,
                        _ => Algo::AllToAllDirect,
                    })),
                    proto::BARRIER => Some(Coll::Barrier),
                    _ => None,
                };
                match kind {
                    Some(kind) => Op::Coll {
                        kind,
                        comm_type: t,
                        bytes,
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

/// One term of a condition: every flow in the set received, then the delay (no flows: an
/// absolute time).
type Term = (Arc<[u32]>, SimTime);

/// A condition: the latest of its terms. Kept simplified: no term is implied by another.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cond(Vec<Term>);

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
    fn at(t: SimTime) -> Cond {
        Cond(vec![(Arc::from([]), t)])
    }

    fn then(&self, d: SimTime) -> Cond {
        Cond(self.0.iter().map(|(f, t)| (f.clone(), *t + d)).collect())
    }

    fn join(&self, other: &Cond) -> Cond {
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

    fn flow(id: u32) -> Cond {
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
    fn join(&self, a: &Cond, b: &Cond) -> Cond {
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
    /// Per collective (as in `Labels::collectives`): the Chakra node id on rank 0 and its name.
    pub collective_nodes: Vec<(u64, String)>,
    pub start: SimTime,
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
}

impl ChakraLabels {
    /// Rank `r`'s times given every flow's (start, finish); None if a flow it needs never
    /// finished.
    pub fn rank_times(&self, r: usize, times: &[(u64, Option<u64>)]) -> Option<RankTimes> {
        let finish: Vec<Option<u64>> = times.iter().map(|t| t.1).collect();
        let start = self.start.ps();
        let end = self.ranks[r].end.eval(&finish)?;
        let (mut compute, mut comm) = (0u64, 0u64);
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
        })
    }
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
    run(&traces, hosts, start)
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
    run(&traces, hosts, start)
}

#[allow(clippy::needless_range_loop)] // ranks index several vectors at once
fn run(traces: &[RankTrace], hosts: &[u32], start: SimTime) -> Result<Replay, ConfigError> {
    let n = hosts.len();
    let trace = |r: usize| &traces[if traces.len() == 1 { 0 } else { r }];
    let err = |r: usize, id: u64, msg: String| ConfigError::Io {
        path: trace(r).path.clone(),
        msg: format!("node id {id}: {msg}"),
    };
    // Each rank's collectives in its dependency order.
    let colls: Vec<Vec<usize>> = (0..n)
        .map(|r| {
            let t = trace(r);
            (0..t.nodes.len())
                .filter(|&i| matches!(t.nodes[i].op, Op::Coll { .. }))
                .collect()
        })
        .collect();
    for r in 1..n {
        if colls[r].len() != colls[0].len() {
            return Err(ConfigError::Io {
                path: trace(r).path.clone(),
                msg: format!(
                    "{} collectives, but {} has {}: every rank runs the same collectives",
                    colls[r].len(),
                    trace(0).path,
                    colls[0].len()
                ),
            });
        }
    }
    for (k, &i0) in colls[0].iter().enumerate() {
        let Op::Coll {
            comm_type: t0,
            bytes: b0,
            ..
        } = trace(0).nodes[i0].op
        else {
            unreachable!()
        };
        for r in 1..n {
            let node = &trace(r).nodes[colls[r][k]];
            if let Op::Coll {
                comm_type, bytes, ..
            } = node.op
            {
                if (comm_type, bytes) != (t0, b0) {
                    return Err(err(
                        r,
                        node.id,
                        format!(
                            "collective {k} of the trace is comm_type {comm_type} of {bytes} \
                             bytes here, comm_type {t0} of {b0} bytes on rank 0"
                        ),
                    ));
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
    // Per rank: each node's completion, dependencies left, and which collective a node is.
    let mut done: Vec<Vec<Option<Cond>>> =
        (0..n).map(|r| vec![None; trace(r).nodes.len()]).collect();
    let mut coll_of: Vec<BTreeMap<usize, usize>> = (0..n)
        .map(|r| colls[r].iter().enumerate().map(|(k, &i)| (i, k)).collect())
        .collect();
    // Per collective: each rank's start once it has arrived.
    let mut arrived: Vec<Vec<Option<Cond>>> = vec![vec![None; n]; colls[0].len()];
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
    // been replayed or a collective not every rank has reached, and the others go on.
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
                    Op::Comp(d) => c.then(*d),
                    Op::Send { peer, bytes, tag } => {
                        if *peer as usize >= n || *peer as usize == r {
                            return Err(err(
                                r,
                                node.id,
                                format!("sends to rank {peer}, but the ranks are 0 to {}", n - 1),
                            ));
                        }
                        let f = gen.send(hosts[r], hosts[*peer as usize], *bytes, &c);
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
                    Op::Coll { kind, bytes, .. } => {
                        let k = coll_of[r][&i];
                        if arrived[k][r].is_none() {
                            arrived[k][r] = Some(c);
                        }
                        if arrived[k].iter().any(Option::is_none) {
                            break;
                        }
                        // Every rank has arrived: expand it, and every rank moves past it.
                        let starts: Vec<Cond> =
                            arrived[k].iter().map(|c| c.clone().unwrap()).collect();
                        let first = gen.flows.len() as u32;
                        let mut tr = CollTransfers {
                            gen: &mut gen,
                            hosts,
                            done: starts.clone(),
                        };
                        let (algo, label_bytes) = match *kind {
                            Coll::Barrier => {
                                let all = starts
                                    .iter()
                                    .skip(1)
                                    .fold(starts[0].clone(), |a, b| tr.gen.join(&a, b));
                                tr.done = vec![all; n];
                                (None, 0)
                            }
                            Coll::Algo(a) => {
                                if a == Algo::HalvingDoublingAllreduce && !n.is_power_of_two() {
                                    return Err(err(
                                        r,
                                        node.id,
                                        format!(
                                            "halving-doubling all-reduce needs a power-of-two \
                                             number of ranks, not {n} (workload.\
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
                                    bytes.div_ceil(n as u64)
                                } else {
                                    *bytes
                                };
                                if b > 0 {
                                    collective::schedule(&mut tr, a, b, &starts);
                                }
                                (Some(a), b)
                            }
                        };
                        let ends = std::mem::take(&mut tr.done);
                        let range = first..gen.flows.len() as u32;
                        if let Some(algo) = algo {
                            labels.collectives.push(CollectiveInfo {
                                job: 0,
                                group: 0,
                                iteration: 0,
                                layer: Some(k as u32),
                                algo,
                                ranks: n as u32,
                                bytes: label_bytes,
                                flows: range,
                                compute_before: SimTime::ZERO,
                                bound: SimTime::ZERO,
                            });
                            let n0 = &trace(0).nodes[colls[0][k]];
                            chakra.collective_nodes.push((n0.id, n0.name.clone()));
                        }
                        for (q, e) in ends.into_iter().enumerate() {
                            let iq = colls[q][k];
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

#[cfg(test)]
mod tests {
    use super::*;

    fn node(id: u64, t: i32, deps: &[u64], attr: Vec<proto::AttributeProto>) -> proto::Node {
        proto::Node {
            id,
            name: format!("n{id}"),
            r#type: t,
            data_deps: deps.to_vec(),
            attr,
            ..Default::default()
        }
    }

    fn opt() -> Options {
        Options {
            ranks: None,
            skip_unknown: false,
            algorithms: ChakraAlgorithms::default(),
            payload_bytes: 4096,
        }
    }

    #[test]
    fn encode_decode_round_trips_and_truncation_is_named() {
        let nodes = vec![
            proto::Node {
                duration_micros: 10,
                ..node(1, proto::COMP_NODE, &[], vec![])
            },
            node(
                2,
                proto::COMM_SEND_NODE,
                &[1],
                vec![proto::int32("comm_dst", 1), proto::int64("comm_size", 5000)],
            ),
        ];
        let bytes = encode("0.0.4", &nodes);
        let (v, back) = decode(&bytes, "t.0.et").unwrap();
        assert_eq!((v.as_str(), &back), ("0.0.4", &nodes));
        let e = decode(&bytes[..bytes.len() - 3], "t.0.et")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("t.0.et: truncated") && e.contains("after node id 1"),
            "{e}"
        );
        let e = decode(&[0x1f, 0x8b, 0], "g.et").unwrap_err().to_string();
        assert!(e.contains("gzip"), "{e}");
    }

    #[test]
    fn conditions_simplify_to_the_terms_that_matter() {
        let a = Cond::flow(3).then(SimTime(5));
        let b = Cond::flow(4).then(SimTime(5));
        assert_eq!(a.join(&b).0, vec![(Arc::from([3, 4]), SimTime(5))]);
        // An absolute time before any flow term is implied by it.
        let c = Cond::at(SimTime(2)).join(&a);
        assert_eq!(c.0, a.0);
        // A later absolute time is not.
        assert_eq!(Cond::at(SimTime(9)).join(&a).0.len(), 2);
    }

    #[test]
    fn unknown_nodes_are_refused_or_skipped() {
        let t = vec![(
            "u.et".to_string(),
            vec![
                node(7, 2, &[], vec![]),
                node(
                    8,
                    proto::COMM_COLL_NODE,
                    &[7],
                    vec![
                        proto::int64("comm_type", proto::ALL_REDUCE),
                        proto::int64("comm_size", 4096),
                    ],
                ),
            ],
        )];
        let e = replay_nodes(
            &t,
            &[0, 1],
            SimTime::ZERO,
            &Options {
                ranks: Some(2),
                ..opt()
            },
        )
        .err()
        .unwrap()
        .to_string();
        assert!(
            e.contains("u.et: node id 7") && e.contains("MEM_LOAD_NODE"),
            "{e}"
        );
        let r = replay_nodes(
            &t,
            &[0, 1],
            SimTime::ZERO,
            &Options {
                ranks: Some(2),
                skip_unknown: true,
                ..opt()
            },
        )
        .unwrap();
        assert_eq!(r.labels.chakra.unwrap().skipped_nodes, 1);
        assert_eq!(r.flows.len(), 4);
    }

    #[test]
    fn a_rank_waits_for_its_compute_and_its_receive() {
        // Rank 0: COMP 10 us, SEND 1 MB to 1. Rank 1: COMP 3 us, RECV from 0, SEND back.
        let attrs = |k: &str, p: i32| vec![proto::int32(k, p), proto::int64("comm_size", 1000)];
        let r0 = vec![
            proto::Node {
                duration_micros: 10,
                ..node(1, proto::COMP_NODE, &[], vec![])
            },
            node(2, proto::COMM_SEND_NODE, &[1], attrs("comm_dst", 1)),
        ];
        let r1 = vec![
            proto::Node {
                duration_micros: 3,
                ..node(1, proto::COMP_NODE, &[], vec![])
            },
            node(2, proto::COMM_RECV_NODE, &[], attrs("comm_src", 0)),
            node(3, proto::COMM_SEND_NODE, &[1, 2], attrs("comm_dst", 0)),
        ];
        let t = vec![("a.0.et".to_string(), r0), ("a.1.et".to_string(), r1)];
        let r = replay_nodes(&t, &[0, 5], SimTime::ZERO, &opt()).unwrap();
        assert_eq!(r.flows.len(), 2);
        assert_eq!(r.flows[0].start, SimTime::from_us(10));
        assert!(!r.deps.gated(0) && r.deps.gated(1));
        // The reply waits for the message only: rank 1's 3 us of compute are implied by it,
        // since the message itself starts at 10 us.
        assert_eq!(r.deps.waits(1), 1);
        assert!(!r.deps.timed(1));
    }
}
