//! `workload.kind = "training"`: iterations of a transformer's training under tensor (tp),
//! pipeline (pp), data (dp) and, for MoE models, expert (ep) parallelism, written as one
//! MLCommons Chakra graph per rank (`proto::Node`s) and replayed by the Chakra replay, so that
//! `lbsim export-chakra` writes exactly what a run replays.
//!
//! Ranks: rank = (stage x dp + replica) x tp + t: tp innermost (consecutive ranks, one server
//! under linear placement), pp outermost, as Megatron-LM orders them. Process groups are named
//! `KIND.N` (`tp.3`, `dp.0`, ...); the replay counts a group's traffic under KIND.
//!
//! Per rank, one compute stream runs in 1F1B order (stage s of p: min(p - s - 1, m) forwards,
//! then one forward and one backward in turn, then the remaining backwards). A layer's forward
//! is its attention's compute, a tp all-reduce of the activations, its MLP's compute (MoE: the
//! ep dispatch all-to-all, the experts' compute, the combine all-to-all), a tp all-reduce
//! (Megatron's two per layer); its backward is the same in reverse at twice the compute. A
//! stage sends its output activations to the next stage and its input gradients to the
//! previous one (COMM_SEND / COMM_RECV, micro_batch x seq x hidden elements; every tp rank
//! sends its own copy, Megatron without scatter-gather). Gradients leave the stream: each
//! layer's are all-reduced over dp (with fsdp: reduce-scattered) as soon as the layer's last
//! backward is done, overlapping the rest of the backward; with fsdp each layer's weights are
//! all-gathered over dp before its first forward, one layer after another from the start (and
//! kept until its last backward, as FSDP's `reshard_after_forward = false`). An MoE layer's
//! expert gradients are all-reduced over the ranks holding the same experts (dp / ep of them).
//! The next iteration starts when the stream and every gradient collective of the rank are
//! done. Not modelled: embeddings and the output layer, the optimizer step, recomputation.
//!
//! Compute from FLOPs, per layer and micro-batch of T = micro_batch x seq tokens, forward:
//! attention 2 x 4h^2 x T (Q, K, V, O projections; grouped-query K/V counted full width) plus
//! 4 x T x seq x h (scores and their product with V, no causal saving); a dense MLP 2 x 3hf x T
//! (SwiGLU's three matrices); an MoE MLP 2 x 3h f_e x T x (top_k + shared) (each token's routed
//! and shared experts, the load assumed balanced over the ep group). A rank computes 1/tp of
//! it; time = FLOPs / (tp x training_tflops), backward twice the forward.
//!
//! MoE dispatch and combine are drawn as `kind = "moe"` draws them ([`moe::route`]: each of a
//! rank's T tokens to top_k distinct experts, uniformly, experts / ep on each rank of the ep
//! group, a token sent once to each rank holding one of its experts), one draw per stage, ep
//! group, iteration, micro-batch and layer shared by the tp ranks, and written as COMM_SEND /
//! COMM_RECV pairs of tokens x h elements: the experts' compute waits for every token it
//! receives, what follows the combine for every result. The experts' compute is the balanced
//! load's (T x (top_k + shared) tokens' worth on every rank).

use std::collections::BTreeMap;

use super::chakra::{proto, CommGroups};
use super::moe;
use crate::rng::{mix64, rng_for, Stream};
use crate::time::SimTime;

/// A model's shape.
#[derive(Clone, Debug, PartialEq)]
pub struct Model {
    pub layers: u32,
    pub hidden: u64,
    pub ffn_hidden: u64,
    pub seq_len: u64,
    /// MoE models: routed experts per MoE layer (0: dense).
    pub experts: u32,
    pub top_k: u32,
    pub expert_ffn_hidden: u64,
    pub shared_experts: u32,
    /// Leading layers with a dense MLP (MoE models).
    pub dense_layers: u32,
}

/// A preset: (name, model, source).
pub fn presets() -> Vec<(&'static str, Model)> {
    let llama = |layers, hidden, ffn_hidden| Model {
        layers,
        hidden,
        ffn_hidden,
        seq_len: 8192,
        experts: 0,
        top_k: 0,
        expert_ffn_hidden: 0,
        shared_experts: 0,
        dense_layers: layers,
    };
    vec![
        // Llama 3 (Dubey et al. 2024, "The Llama 3 Herd of Models", Table 3), sequence 8192.
        ("llama3_8b", llama(32, 4096, 14336)),
        ("llama3_70b", llama(80, 8192, 28672)),
        ("llama3_405b", llama(126, 16384, 53248)),
        // DeepSeek-V3 (arXiv 2412.19437): 61 layers, the first 3 dense (FFN 18432), hidden
        // 7168, 256 routed experts and 1 shared of intermediate size 2048, 8 per token,
        // pre-trained at sequence 4096.
        (
            "deepseek_v3",
            Model {
                layers: 61,
                hidden: 7168,
                ffn_hidden: 18432,
                seq_len: 4096,
                experts: 256,
                top_k: 8,
                expert_ffn_hidden: 2048,
                shared_experts: 1,
                dense_layers: 3,
            },
        ),
    ]
}

/// The model without a `model` preset: a small one of Llama 3's shape (for quick runs).
pub fn default_model() -> Model {
    Model {
        layers: 4,
        hidden: 2048,
        ffn_hidden: 7168,
        seq_len: 2048,
        experts: 0,
        top_k: 0,
        expert_ffn_hidden: 0,
        shared_experts: 0,
        dense_layers: 4,
    }
}

/// How the model is trained.
#[derive(Clone, Debug, PartialEq)]
pub struct Parallel {
    pub tp: u32,
    pub pp: u32,
    pub dp: u32,
    pub ep: u32,
    pub micro_batch: u64,
    pub micro_batches: u32,
    pub bytes_per_element: u64,
    pub fsdp: bool,
    pub tflops: f64,
    pub iterations: u32,
    /// Draws MoE routing (the scenario's seed).
    pub seed: u64,
}

impl Parallel {
    pub fn ranks(&self) -> u32 {
        self.tp * self.pp * self.dp
    }
    pub fn rank(&self, stage: u32, replica: u32, t: u32) -> u32 {
        (stage * self.dp + replica) * self.tp + t
    }
}

/// One stage's layers: stage s of p gets layers/p, the first layers % p stages one more.
pub fn stage_layers(layers: u32, pp: u32, s: u32) -> std::ops::Range<u32> {
    let (base, extra) = (layers / pp, layers % pp);
    let lo = s * base + s.min(extra);
    lo..lo + base + u32::from(s < extra)
}

impl Model {
    pub fn moe_layer(&self, l: u32) -> bool {
        self.experts > 0 && l >= self.dense_layers
    }
    fn attn_params(&self) -> u128 {
        4 * (self.hidden as u128).pow(2)
    }
    fn mlp_params(&self, l: u32) -> u128 {
        if self.moe_layer(l) {
            // Routed and shared experts (the router's h x experts is negligible).
            3 * self.hidden as u128
                * self.expert_ffn_hidden as u128
                * (self.experts + self.shared_experts) as u128
        } else {
            3 * self.hidden as u128 * self.ffn_hidden as u128
        }
    }
    /// Forward FLOPs of layer `l`'s attention and MLP for `tokens` tokens (whole, before tp).
    pub fn forward_flops(&self, l: u32, tokens: u128) -> (u128, u128) {
        let (h, s) = (self.hidden as u128, self.seq_len as u128);
        let attn = 2 * self.attn_params() * tokens + 4 * tokens * s * h;
        let mlp = if self.moe_layer(l) {
            2 * 3
                * h
                * self.expert_ffn_hidden as u128
                * tokens
                * (self.top_k + self.shared_experts) as u128
        } else {
            2 * self.mlp_params(l) * tokens
        };
        (attn, mlp)
    }
}

/// FLOPs as time at `tflops` TFLOP/s on each of `tp` ranks: FLOPs / (tp x tflops) picoseconds
/// (a TFLOP/s is one FLOP per picosecond), rounded to the nearest.
pub fn flops_time(flops: u128, tp: u32, tflops: f64) -> SimTime {
    if tflops.fract() == 0.0 && tflops >= 1.0 {
        let d = tp as u128 * tflops as u128;
        return SimTime(((flops + d / 2) / d).min(u64::MAX as u128) as u64);
    }
    SimTime((flops as f64 / (tp as f64 * tflops)).round() as u64)
}

/// Every rank's graph and the process groups.
pub struct Traces {
    pub ranks: Vec<Vec<proto::Node>>,
    pub groups: CommGroups,
}

fn str_attr(name: &str, v: &str) -> proto::AttributeProto {
    proto::AttributeProto {
        name: name.into(),
        doc_string: String::new(),
        value: Some(proto::Value::StringVal(v.into())),
    }
}

/// One rank's graph under construction.
struct Graph {
    nodes: Vec<proto::Node>,
    /// The compute stream's last node.
    stream: Option<u64>,
    /// What the next stream node also waits for.
    pending: Vec<u64>,
}

impl Graph {
    fn push(
        &mut self,
        name: String,
        t: i32,
        deps: Vec<u64>,
        attr: Vec<proto::AttributeProto>,
    ) -> u64 {
        let id = self.nodes.len() as u64;
        self.nodes.push(proto::Node {
            id,
            name,
            r#type: t,
            data_deps: deps,
            attr,
            ..Default::default()
        });
        id
    }
    fn after_stream(&mut self, extra: &[u64]) -> Vec<u64> {
        let mut v: Vec<u64> = self.stream.iter().chain(extra).copied().collect();
        for p in std::mem::take(&mut self.pending) {
            if !v.contains(&p) {
                v.push(p);
            }
        }
        v
    }
    fn comp(&mut self, name: String, d: SimTime, extra: &[u64]) -> u64 {
        let deps = self.after_stream(extra);
        let id = self.push(
            name,
            proto::COMP_NODE,
            deps,
            vec![proto::int64("lbsim_duration_ps", d.ps() as i64)],
        );
        // The schema's whole microseconds, for other simulators (lbsim reads the picoseconds).
        self.nodes[id as usize].duration_micros = (d.ps() + 500_000) / 1_000_000;
        self.stream = Some(id);
        id
    }
    fn coll(&mut self, name: String, comm_type: i64, bytes: u64, pg: &str, deps: Vec<u64>) -> u64 {
        self.push(
            name,
            proto::COMM_COLL_NODE,
            deps,
            vec![
                proto::int64("comm_type", comm_type),
                proto::int64("comm_size", bytes as i64),
                str_attr("pg_name", pg),
            ],
        )
    }
    fn stream_coll(&mut self, name: String, comm_type: i64, bytes: u64, pg: &str) -> u64 {
        let deps = self.after_stream(&[]);
        let id = self.coll(name, comm_type, bytes, pg, deps);
        self.stream = Some(id);
        id
    }
    /// One MoE phase: rank `me`'s sends (`out[q]` bytes to rank `ranks[q]`) once the stream is
    /// done, then its receives (`inc[q]` from `ranks[q]`); the stream goes on when all have
    /// arrived (and the sends were issued).
    #[allow(clippy::too_many_arguments)]
    fn exchange(
        &mut self,
        name: &str,
        me: usize,
        ranks: &[u32],
        out: &[u64],
        inc: &[u64],
        tag: u32,
        pg: &str,
    ) {
        let n = ranks.len();
        let before = self.after_stream(&[]);
        let mut done: Vec<u64> = Vec::new();
        for i in 1..n {
            let q = (me + i) % n;
            if out[q] > 0 {
                done.push(self.push(
                    format!("{name}.send{}", ranks[q]),
                    proto::COMM_SEND_NODE,
                    before.clone(),
                    vec![
                        proto::int32("comm_dst", ranks[q] as i32),
                        proto::int64("comm_size", out[q] as i64),
                        proto::int32("comm_tag", tag as i32),
                        str_attr("pg_name", pg),
                    ],
                ));
            }
        }
        for i in 1..n {
            let q = (me + n - i) % n;
            if inc[q] > 0 {
                done.push(self.push(
                    format!("{name}.recv{}", ranks[q]),
                    proto::COMM_RECV_NODE,
                    before.clone(),
                    vec![
                        proto::int32("comm_src", ranks[q] as i32),
                        proto::int64("comm_size", inc[q] as i64),
                        proto::int32("comm_tag", tag as i32),
                        str_attr("pg_name", pg),
                    ],
                ));
            }
        }
        // What follows waits for all of them (or, with nothing to move, for the stream).
        if !done.is_empty() {
            self.stream = None;
            self.pending.extend(done);
        } else {
            self.pending.extend(before);
            self.stream = None;
        }
    }

    fn p2p(&mut self, send: bool, name: String, peer: u32, bytes: u64, tag: u32, pg: &str) {
        let (t, key) = if send {
            (proto::COMM_SEND_NODE, "comm_dst")
        } else {
            (proto::COMM_RECV_NODE, "comm_src")
        };
        let deps = self.after_stream(&[]);
        let id = self.push(
            name,
            t,
            deps,
            vec![
                proto::int32(key, peer as i32),
                proto::int64("comm_size", bytes as i64),
                proto::int32("comm_tag", tag as i32),
                str_attr("pg_name", pg),
            ],
        );
        // A receive is on the stream (what follows waits for it); a send is not.
        if !send {
            self.stream = Some(id);
        }
    }
}

/// The group names of rank (stage, replica, t).
struct Names {
    tp: String,
    pp: String,
    dp: String,
    ep: String,
    /// The ranks holding the same experts (gradients of expert weights).
    edp: String,
}

/// Process groups of the layout (only those of two ranks or more).
pub fn groups(par: &Parallel, moe: bool) -> CommGroups {
    let mut g: BTreeMap<String, Vec<u32>> = BTreeMap::new();
    for s in 0..par.pp {
        for d in 0..par.dp {
            for t in 0..par.tp {
                let r = par.rank(s, d, t);
                let n = names(par, s, d, t);
                if par.tp > 1 {
                    g.entry(n.tp).or_default().push(r);
                }
                if par.pp > 1 {
                    g.entry(n.pp).or_default().push(r);
                }
                if par.dp > 1 {
                    g.entry(n.dp).or_default().push(r);
                }
                if moe && par.ep > 1 {
                    g.entry(n.ep).or_default().push(r);
                }
                if moe && par.dp / par.ep > 1 {
                    g.entry(n.edp).or_default().push(r);
                }
            }
        }
    }
    CommGroups {
        source: "workload.kind = \"training\"".into(),
        groups: g,
    }
}

fn names(par: &Parallel, s: u32, d: u32, t: u32) -> Names {
    let ep = par.ep.max(1);
    Names {
        tp: format!("tp.{}", s * par.dp + d),
        pp: format!("pp.{}", d * par.tp + t),
        dp: format!("dp.{}", s * par.tp + t),
        ep: format!("ep.{}", (s * par.tp + t) * (par.dp / ep) + d / ep),
        edp: format!("dp.e{}.{}", s * par.tp + t, d % ep),
    }
}

/// The 1F1B order of stage `s` of `pp` over `m` micro-batches: (micro-batch, forward?).
pub fn one_f_one_b(s: u32, pp: u32, m: u32) -> Vec<(u32, bool)> {
    let warm = (pp - s - 1).min(m);
    let mut v: Vec<(u32, bool)> = (0..warm).map(|j| (j, true)).collect();
    for i in 0..m - warm {
        v.push((warm + i, true));
        v.push((i, false));
    }
    v.extend((m - warm..m).map(|j| (j, false)));
    v
}

/// Every rank's graph. The caller has checked the shape (sizes fit, tags fit an i32).
pub fn generate(model: &Model, par: &Parallel) -> Traces {
    let tokens = par.micro_batch as u128 * model.seq_len as u128;
    let elem = par.bytes_per_element;
    let act = par.micro_batch * model.seq_len * model.hidden * elem;
    let m = par.micro_batches;
    let moe = model.experts > 0;
    let token = model.hidden * elem;
    let ep = par.ep.max(1) as usize;
    let router = moe::Router {
        tokens_per_gpu: tokens as u32,
        experts: model.experts,
        top_k: model.top_k,
        experts_per_gpu: model.experts / par.ep.max(1),
        weights: vec![1.0; model.experts as usize],
        capacity: None,
        max_servers: 0,
    };
    // Tags of MoE messages come after the pipeline's (iterations x 2m of them).
    let moe_tag = |it: u32, j: u32, l: u32, phase: u32| {
        par.iterations * 2 * m + ((it * m + j) * model.layers + l) * 4 + phase
    };
    // One routing per (stage, ep group of replicas, iteration, micro-batch, layer), shared by
    // the tp ranks: tokens per ordered pair of the group's ranks.
    let mut routing: BTreeMap<(u32, u32, u32, u32, u32), Vec<u64>> = BTreeMap::new();
    // Rank `me`'s bytes to each rank of its ep group (`.0`: its tokens to their experts) and
    // from each (`.1`: the reverse).
    let mut ep_bytes = |s: u32, block: u32, it: u32, j: u32, l: u32, me: usize| {
        let pt = routing.entry((s, block, it, j, l)).or_insert_with(|| {
            let index = [block, it, j, l]
                .iter()
                .fold(mix64(s as u64), |a, &x| mix64(a ^ x as u64));
            let mut rng = rng_for(par.seed, Stream::Moe, index);
            moe::route(&router, &vec![0; ep], &mut rng).pair_tokens(&router)
        });
        let out: Vec<u64> = (0..ep).map(|q| pt[me * ep + q] * token).collect();
        let back: Vec<u64> = (0..ep).map(|q| pt[q * ep + me] * token).collect();
        (out, back)
    };
    let mut ranks: Vec<Vec<proto::Node>> = Vec::with_capacity(par.ranks() as usize);
    for s in 0..par.pp {
        let layers = stage_layers(model.layers, par.pp, s);
        let order = one_f_one_b(s, par.pp, m);
        for d in 0..par.dp {
            for t in 0..par.tp {
                let nm = names(par, s, d, t);
                let (block, me) = (d / ep as u32, (d % ep as u32) as usize);
                let ep_ranks: Vec<u32> = (0..ep as u32)
                    .map(|i| par.rank(s, block * ep as u32 + i, t))
                    .collect();
                let mut g = Graph {
                    nodes: Vec::new(),
                    stream: None,
                    pending: Vec::new(),
                };
                let mut prev_iter: Vec<u64> = Vec::new();
                for it in 0..par.iterations {
                    let mut grads: Vec<u64> = Vec::new();
                    // With fsdp, each layer's weights gathered, one layer after another.
                    let mut gathered: BTreeMap<u32, u64> = BTreeMap::new();
                    if par.fsdp && par.dp > 1 {
                        let mut last: Option<u64> = None;
                        for l in layers.clone() {
                            let w = (model.attn_params() + model.mlp_params(l)) as u64
                                / par.tp as u64
                                * elem;
                            let deps: Vec<u64> = match last {
                                Some(x) => vec![x],
                                None => prev_iter.clone(),
                            };
                            let id = g.coll(
                                format!("it{it}.L{l}.weights_allgather"),
                                proto::ALL_GATHER,
                                w,
                                &nm.dp,
                                deps,
                            );
                            gathered.insert(l, id);
                            last = Some(id);
                        }
                    }
                    // The iteration's first stream node waits for the previous iteration.
                    g.pending = std::mem::take(&mut prev_iter);
                    for &(j, fwd) in &order {
                        let tag = |back: bool| it * 2 * m + j + if back { m } else { 0 };
                        let pfx = format!("it{it}.mb{j}");
                        if fwd {
                            if s > 0 {
                                let peer = par.rank(s - 1, d, t);
                                g.p2p(
                                    false,
                                    format!("{pfx}.fwd.recv"),
                                    peer,
                                    act,
                                    tag(false),
                                    &nm.pp,
                                );
                            }
                            for l in layers.clone() {
                                let (fa, fm) = model.forward_flops(l, tokens);
                                let ex: Vec<u64> = gathered
                                    .get(&l)
                                    .filter(|_| j == 0)
                                    .copied()
                                    .into_iter()
                                    .collect();
                                g.comp(
                                    format!("{pfx}.L{l}.fwd.attn"),
                                    flops_time(fa, par.tp, par.tflops),
                                    &ex,
                                );
                                if par.tp > 1 {
                                    g.stream_coll(
                                        format!("{pfx}.L{l}.fwd.attn_allreduce"),
                                        proto::ALL_REDUCE,
                                        act,
                                        &nm.tp,
                                    );
                                }
                                let routed = model.moe_layer(l) && par.ep > 1;
                                let (out, back) = if routed {
                                    ep_bytes(s, block, it, j, l, me)
                                } else {
                                    Default::default()
                                };
                                if routed {
                                    g.exchange(
                                        &format!("{pfx}.L{l}.fwd.dispatch"),
                                        me,
                                        &ep_ranks,
                                        &out,
                                        &back,
                                        moe_tag(it, j, l, 0),
                                        &nm.ep,
                                    );
                                }
                                g.comp(
                                    format!("{pfx}.L{l}.fwd.mlp"),
                                    flops_time(fm, par.tp, par.tflops),
                                    &[],
                                );
                                if routed {
                                    g.exchange(
                                        &format!("{pfx}.L{l}.fwd.combine"),
                                        me,
                                        &ep_ranks,
                                        &back,
                                        &out,
                                        moe_tag(it, j, l, 1),
                                        &nm.ep,
                                    );
                                }
                                if par.tp > 1 {
                                    g.stream_coll(
                                        format!("{pfx}.L{l}.fwd.mlp_allreduce"),
                                        proto::ALL_REDUCE,
                                        act,
                                        &nm.tp,
                                    );
                                }
                            }
                            if s + 1 < par.pp {
                                let peer = par.rank(s + 1, d, t);
                                g.p2p(
                                    true,
                                    format!("{pfx}.fwd.send"),
                                    peer,
                                    act,
                                    tag(false),
                                    &nm.pp,
                                );
                            }
                        } else {
                            if s + 1 < par.pp {
                                let peer = par.rank(s + 1, d, t);
                                g.p2p(
                                    false,
                                    format!("{pfx}.bwd.recv"),
                                    peer,
                                    act,
                                    tag(true),
                                    &nm.pp,
                                );
                            }
                            for l in layers.clone().rev() {
                                let (fa, fm) = model.forward_flops(l, tokens);
                                let routed = model.moe_layer(l) && par.ep > 1;
                                let (out, back) = if routed {
                                    ep_bytes(s, block, it, j, l, me)
                                } else {
                                    Default::default()
                                };
                                if routed {
                                    // The combine's gradients to the experts.
                                    g.exchange(
                                        &format!("{pfx}.L{l}.bwd.combine"),
                                        me,
                                        &ep_ranks,
                                        &out,
                                        &back,
                                        moe_tag(it, j, l, 2),
                                        &nm.ep,
                                    );
                                }
                                g.comp(
                                    format!("{pfx}.L{l}.bwd.mlp"),
                                    flops_time(2 * fm, par.tp, par.tflops),
                                    &[],
                                );
                                if routed {
                                    // The dispatch's gradients back to the tokens' ranks.
                                    g.exchange(
                                        &format!("{pfx}.L{l}.bwd.dispatch"),
                                        me,
                                        &ep_ranks,
                                        &back,
                                        &out,
                                        moe_tag(it, j, l, 3),
                                        &nm.ep,
                                    );
                                }
                                if par.tp > 1 {
                                    g.stream_coll(
                                        format!("{pfx}.L{l}.bwd.mlp_allreduce"),
                                        proto::ALL_REDUCE,
                                        act,
                                        &nm.tp,
                                    );
                                }
                                let c = g.comp(
                                    format!("{pfx}.L{l}.bwd.attn"),
                                    flops_time(2 * fa, par.tp, par.tflops),
                                    &[],
                                );
                                if par.tp > 1 {
                                    g.stream_coll(
                                        format!("{pfx}.L{l}.bwd.attn_allreduce"),
                                        proto::ALL_REDUCE,
                                        act,
                                        &nm.tp,
                                    );
                                }
                                if j + 1 == m {
                                    // The layer's last backward: its gradients leave the stream.
                                    grads.extend(grad_sync(&mut g, model, par, &nm, it, l, c, moe));
                                }
                            }
                            if s > 0 {
                                let peer = par.rank(s - 1, d, t);
                                g.p2p(
                                    true,
                                    format!("{pfx}.bwd.send"),
                                    peer,
                                    act,
                                    tag(true),
                                    &nm.pp,
                                );
                            }
                        }
                    }
                    prev_iter = g.stream.iter().chain(&grads).copied().collect();
                }
                ranks.push(g.nodes);
            }
        }
    }
    // Ranks were built stage-major, replica, then t: the rank order itself.
    Traces {
        ranks,
        groups: groups(par, moe),
    }
}

/// Layer `l`'s gradient collectives after its last backward compute `after`.
#[allow(clippy::too_many_arguments)]
fn grad_sync(
    g: &mut Graph,
    model: &Model,
    par: &Parallel,
    nm: &Names,
    it: u32,
    l: u32,
    after: u64,
    moe: bool,
) -> Vec<u64> {
    let elem = par.bytes_per_element;
    let tp = par.tp as u64;
    let (ty, what) = if par.fsdp {
        (proto::REDUCE_SCATTER, "reduce_scatter")
    } else {
        (proto::ALL_REDUCE, "allreduce")
    };
    let mut out = Vec::new();
    let moe_layer = model.moe_layer(l);
    // Weights replicated over dp: all but the experts of an MoE layer.
    let shared = if moe_layer {
        model.attn_params()
    } else {
        model.attn_params() + model.mlp_params(l)
    } as u64
        / tp
        * elem;
    if par.dp > 1 {
        out.push(g.coll(
            format!("it{it}.L{l}.grad_{what}"),
            ty,
            shared,
            &nm.dp,
            vec![after],
        ));
    }
    if moe && moe_layer && par.dp / par.ep > 1 {
        // Each rank holds experts / ep of them; their gradients over the ranks holding the same.
        let experts = model.mlp_params(l) as u64 / par.ep as u64 / tp * elem;
        out.push(g.coll(
            format!("it{it}.L{l}.expert_grad_{what}"),
            ty,
            experts,
            &nm.edp,
            vec![after],
        ));
    }
    out
}
