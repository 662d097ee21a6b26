//! `[workload]` and `[[jobs]]`: what traffic to generate, as the scenario file gives it.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::net::config::{PacketConfig, TopologyConfig};
use crate::workload;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkloadKind {
    Permutation,
    AllToAll,
    ConnectionMatrix,
    RingAllreduce,
    RingReduceScatter,
    RingAllgather,
    HalvingDoublingAllreduce,
    /// Reduce-scatter inside each server, all-reduce across servers per position (rail), then
    /// all-gather inside each server (NCCL's tree-less hierarchical scheme).
    HierarchicalAllreduce,
    /// FSDP training: per layer an all-gather, compute, then a reduce-scatter.
    Fsdp,
    /// `fan_in` senders to one receiver (the group's first rank), one message each.
    Incast,
    /// One sender (the group's first rank) to `fan_in` receivers, one message each.
    Outcast,
    /// An MLCommons Chakra execution trace replayed: compute delays, point-to-point messages
    /// and collectives, waiting on each other as the trace's dependencies say.
    Chakra,
    /// Mixture-of-Experts expert parallelism: per layer a dispatch all-to-all of tokens to the
    /// GPUs of their routed experts, the experts' compute, then the combine all-to-all back.
    Moe,
    /// A transformer's training iteration under tensor, pipeline, data (and expert)
    /// parallelism, generated as a Chakra graph per rank and replayed.
    Training,
}

impl WorkloadKind {
    pub fn name(self) -> &'static str {
        match self {
            WorkloadKind::Permutation => "permutation",
            WorkloadKind::AllToAll => "all_to_all",
            WorkloadKind::ConnectionMatrix => "connection_matrix",
            WorkloadKind::RingAllreduce => "ring_allreduce",
            WorkloadKind::RingReduceScatter => "ring_reduce_scatter",
            WorkloadKind::RingAllgather => "ring_allgather",
            WorkloadKind::HalvingDoublingAllreduce => "halving_doubling_allreduce",
            WorkloadKind::HierarchicalAllreduce => "hierarchical_allreduce",
            WorkloadKind::Fsdp => "fsdp",
            WorkloadKind::Incast => "incast",
            WorkloadKind::Outcast => "outcast",
            WorkloadKind::Chakra => "chakra",
            WorkloadKind::Moe => "moe",
            WorkloadKind::Training => "training",
        }
    }
}

/// `workload.all_to_all_algorithm`
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AllToAllAlgorithm {
    /// Every pair at once; every rank's messages in destination order (0, 1, 2, ...).
    Direct,
    /// Every pair at once; rank r's messages in the order r+1, r+2, ... (mod n), as collective
    /// libraries schedule them, so the ranks' sends do not all converge on one destination.
    Shifted,
    /// n-1 rounds; in round i rank r sends to r+i once its previous round is complete.
    Pairwise,
    /// Shifted order with at most `all_to_all_concurrency` (C) messages of a rank in flight:
    /// message i starts once message i-C is received (C chains of sends, as a library's
    /// channels each working through their peers).
    Limited,
    /// One message at a time: rank r sends to r+1, then once that is received to r+2, ...
    Serial,
}

impl AllToAllAlgorithm {
    /// `workload.all_to_all_algorithm` when unset: `shifted`, the order of the study's public
    /// all-to-all generator (each host's destinations s+1, s+2, ...) and of collective
    /// libraries (NCCL's all-to-all loops over peers (rank + r) mod n). `direct` makes every
    /// host send to host 0, then 1, ...: a rotating incast at each destination's downlink.
    pub const DEFAULT: AllToAllAlgorithm = AllToAllAlgorithm::Shifted;

    /// The schedule it runs; `concurrency` is C for `limited`.
    pub fn algo(self, concurrency: u32) -> workload::collective::Algo {
        use workload::collective::Algo;
        match self {
            AllToAllAlgorithm::Direct => Algo::AllToAllDirect,
            AllToAllAlgorithm::Shifted => Algo::AllToAllShifted,
            AllToAllAlgorithm::Pairwise => Algo::AllToAllPairwise,
            AllToAllAlgorithm::Limited => Algo::AllToAllLimited(concurrency),
            AllToAllAlgorithm::Serial => Algo::AllToAllSerial,
        }
    }
}

/// `workload.chakra_algorithms.all_reduce`
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AllReduceAlgorithm {
    Ring,
    /// Needs a power-of-two number of ranks.
    HalvingDoubling,
}

/// `workload.chakra_algorithms`: the algorithm each Chakra collective type runs as (all-gather
/// and reduce-scatter are always rings).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ChakraAlgorithms {
    /// ALL_REDUCE: `ring` or `halving_doubling` (ring).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub all_reduce: Option<AllReduceAlgorithm>,
    /// ALL_TO_ALL: `direct`, `shifted`, `pairwise`, `limited` or `serial` (direct).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub all_to_all: Option<AllToAllAlgorithm>,
    /// ALL_TO_ALL under `limited`: messages in flight per rank
    /// (`defaults::ALL_TO_ALL_CONCURRENCY`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub all_to_all_concurrency: Option<u32>,
}

/// `workload.moe_popularity`: how often each routed expert is chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MoePopularity {
    /// Every expert alike.
    Uniform,
    /// Expert e (from 0) weighs 1 / (e + 1)^`moe_zipf_exponent`: expert 0 is the most popular.
    Zipf,
    /// `moe_expert_weights`, one weight per expert.
    Weights,
}

impl MoePopularity {
    pub fn name(self) -> &'static str {
        match self {
            MoePopularity::Uniform => "uniform",
            MoePopularity::Zipf => "zipf",
            MoePopularity::Weights => "weights",
        }
    }
}

/// `[workload]`
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WorkloadConfig {
    pub kind: WorkloadKind,
    /// Size of each flow's message (permutation, all_to_all).
    pub message_bytes: u64,
    /// Connection-matrix file (htsim's format); relative paths resolve against the scenario
    /// file's directory.
    pub path: Option<PathBuf>,
    /// Collectives and fsdp: ranks per group (default: every GPU of the hosts from first_host
    /// on, divided among the groups).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub group_size: Option<u32>,
    /// Collectives and fsdp: independent groups running side by side (1), placed one after
    /// another in placement order.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub groups: Option<u32>,
    /// Collectives and fsdp: ranks (GPUs) per host, sharing its one NIC (1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpus_per_host: Option<u32>,
    /// Collectives and fsdp: `linear` (alias `per_server`), `random`, `per_tor` or
    /// `rail_aligned` (linear).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub placement: Option<workload::collective::Placement>,
    /// Linear placement: index of the first host used (0).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_host: Option<u32>,
    /// Collectives and fsdp on GPU clusters: a transfer between two servers whose GPUs sit on
    /// different rails first crosses NVLink to the GPU of the destination's rail, then leaves
    /// by that GPU's NIC (NCCL's PXN) (false).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pxn: Option<bool>,
    /// PXN: the relay sends a transfer on in chunks of this many bytes as each lands over
    /// NVLink (`defaults::PXN_CHUNK_BYTES`; 0: the whole transfer lands first).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pxn_chunk_bytes: Option<u64>,
    /// Rings (ring collectives and fsdp): channels, each a ring over S / channels whose order
    /// follows the servers (leaving each server on the rail it enters the next by, a
    /// different rail per channel, as NCCL builds its rings) (1: one ring in rank order).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub channels: Option<u32>,
    /// all_to_all: `direct`, `shifted`, `pairwise`, `limited` or `serial`
    /// (`AllToAllAlgorithm::DEFAULT`: shifted).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub all_to_all_algorithm: Option<AllToAllAlgorithm>,
    /// all_to_all under `limited`: messages a rank keeps in flight
    /// (`defaults::ALL_TO_ALL_CONCURRENCY`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub all_to_all_concurrency: Option<u32>,
    /// fsdp: preset `llama3_7b`, `llama3_70b` or `llama3_405b`; the keys below override it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// fsdp: layers per iteration.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub layers: Option<u32>,
    /// fsdp: bytes of one layer's weights (FP8: one per parameter), all-gathered and
    /// reduce-scattered once per layer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub layer_bytes: Option<u64>,
    /// fsdp: compute time per layer in microseconds, between its all-gather and reduce-scatter.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compute_us_per_layer: Option<f64>,
    /// Collectives and fsdp: back-to-back repetitions (1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iterations: Option<u32>,
    /// Start time in microseconds (0); the usual way to stagger `[[jobs]]`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_us: Option<f64>,
    /// incast and outcast: peers of the one receiver (sender) (default: every other host).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fan_in: Option<u32>,
    /// chakra: replay the one rank's trace `path` names on this many ranks (SPMD), its
    /// collectives over all of them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chakra_ranks: Option<u32>,
    /// chakra: skip node types (and collective types) lbsim does not model, counting them,
    /// instead of refusing the trace (false).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chakra_skip_unknown: Option<bool>,
    /// moe: tokens each GPU routes per layer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub moe_tokens_per_gpu: Option<u32>,
    /// moe: elements in a token's hidden state.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub moe_hidden: Option<u32>,
    /// moe: bytes per element the dispatch sends (1: FP8).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub moe_dispatch_bytes_per_element: Option<u32>,
    /// moe: bytes per element the combine sends (2: BF16).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub moe_combine_bytes_per_element: Option<u32>,
    /// moe: routed experts per layer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub moe_experts: Option<u32>,
    /// moe: experts each token is routed to (distinct).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub moe_top_k: Option<u32>,
    /// moe: experts per GPU; the expert-parallel group is experts / experts_per_gpu ranks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub moe_experts_per_gpu: Option<u32>,
    /// moe: `uniform`, `zipf` or `weights`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub moe_popularity: Option<MoePopularity>,
    /// moe with `zipf` popularity: the exponent (non-negative).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub moe_zipf_exponent: Option<f64>,
    /// moe with `weights` popularity: one non-negative weight per expert.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub moe_expert_weights: Option<Vec<f64>>,
    /// moe: an expert takes at most ceil(factor x tokens x top_k / experts) tokens of a layer,
    /// the rest dropped (0: no cap).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub moe_capacity_factor: Option<f64>,
    /// moe: a token's experts lie on at most this many servers (0: any number).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub moe_max_servers: Option<u32>,
    /// moe: forward expert compute between a dispatch and its combine, in microseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub moe_compute_us: Option<f64>,
    /// moe: forward compute between one layer's combine and the next layer's dispatch, in
    /// microseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub moe_layer_gap_us: Option<f64>,
    /// moe: MoE layers per iteration.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub moe_layers: Option<u32>,
    /// moe: after the forward layers, the backward pass (each layer's combine and dispatch
    /// reversed, last layer first, compute twice the forward's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub moe_backward: Option<bool>,
    /// moe: a token for another server crosses the network once, to the GPU there on its own
    /// GPU's rail, which forwards it over NVLink to its experts' GPUs (and the combine back the
    /// same way: DeepEP's internode kernels) (false: every GPU sends to every GPU direct).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub moe_hierarchical: Option<bool>,
    /// chakra: ASTRA-sim's comm-group JSON file (`{"NAME": [ranks...]}`): a collective
    /// whose `pg_name` names a group runs over its ranks only; relative paths resolve against
    /// the scenario file's directory.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chakra_comm_groups: Option<PathBuf>,
    /// training: transformer layers (the model's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub training_layers: Option<u32>,
    /// training: hidden size.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub training_hidden: Option<u32>,
    /// training: MLP (SwiGLU) intermediate size of a dense layer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub training_ffn_hidden: Option<u32>,
    /// training: tokens per sequence.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub training_seq_len: Option<u32>,
    /// training: sequences per micro-batch (1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub training_micro_batch: Option<u32>,
    /// training: micro-batches per iteration per pipeline (4).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub training_micro_batches: Option<u32>,
    /// training: bytes per activation, gradient and weight element on the wire (2: BF16).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub training_bytes_per_element: Option<u32>,
    /// training: tensor-parallel ranks (consecutive ranks, inside a server).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub training_tp: Option<u32>,
    /// training: pipeline stages.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub training_pp: Option<u32>,
    /// training: data-parallel replicas.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub training_dp: Option<u32>,
    /// training, MoE models: expert-parallel ranks (a divisor of training_dp).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub training_ep: Option<u32>,
    /// training: weights sharded over the data-parallel group, each layer's all-gathered
    /// before its first forward and its gradients reduce-scattered (false: all-reduced).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub training_fsdp: Option<bool>,
    /// training: achieved dense BF16 TFLOP/s per GPU (400).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub training_tflops: Option<f64>,
    /// training, MoE models: leading layers with a dense MLP.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub training_dense_layers: Option<u32>,
    /// training, MoE models: routed experts per MoE layer (0: a dense model).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub training_experts: Option<u32>,
    /// training, MoE models: experts per token.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub training_top_k: Option<u32>,
    /// training, MoE models: an expert's intermediate size (routed and shared alike).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub training_expert_ffn_hidden: Option<u32>,
    /// training, MoE models: shared experts every token also runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub training_shared_experts: Option<u32>,
    /// chakra: the algorithm per collective type (a table: serialized after the plain keys).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chakra_algorithms: Option<ChakraAlgorithms>,
}

impl Default for WorkloadConfig {
    fn default() -> Self {
        WorkloadConfig {
            kind: WorkloadKind::Permutation,
            message_bytes: 2 * 1024 * 1024,
            path: None,
            group_size: None,
            groups: None,
            gpus_per_host: None,
            placement: None,
            first_host: None,
            pxn: None,
            pxn_chunk_bytes: None,
            channels: None,
            all_to_all_algorithm: None,
            all_to_all_concurrency: None,
            model: None,
            layers: None,
            layer_bytes: None,
            compute_us_per_layer: None,
            iterations: None,
            start_us: None,
            fan_in: None,
            chakra_ranks: None,
            chakra_skip_unknown: None,
            chakra_algorithms: None,
            moe_tokens_per_gpu: None,
            moe_hidden: None,
            moe_dispatch_bytes_per_element: None,
            moe_combine_bytes_per_element: None,
            moe_experts: None,
            moe_top_k: None,
            moe_experts_per_gpu: None,
            moe_popularity: None,
            moe_zipf_exponent: None,
            moe_expert_weights: None,
            moe_capacity_factor: None,
            moe_max_servers: None,
            moe_compute_us: None,
            moe_layer_gap_us: None,
            moe_layers: None,
            moe_backward: None,
            moe_hierarchical: None,
            chakra_comm_groups: None,
            training_layers: None,
            training_hidden: None,
            training_ffn_hidden: None,
            training_seq_len: None,
            training_micro_batch: None,
            training_micro_batches: None,
            training_bytes_per_element: None,
            training_tp: None,
            training_pp: None,
            training_dp: None,
            training_ep: None,
            training_fsdp: None,
            training_tflops: None,
            training_dense_layers: None,
            training_experts: None,
            training_top_k: None,
            training_expert_ffn_hidden: None,
            training_shared_experts: None,
        }
    }
}

impl WorkloadConfig {
    /// Every optional key, as named in `[workload]`.
    pub const OPTION_KEYS: &'static [&'static str] = &[
        "path",
        "group_size",
        "groups",
        "gpus_per_host",
        "placement",
        "first_host",
        "pxn",
        "pxn_chunk_bytes",
        "channels",
        "all_to_all_algorithm",
        "all_to_all_concurrency",
        "model",
        "layers",
        "layer_bytes",
        "compute_us_per_layer",
        "iterations",
        "start_us",
        "fan_in",
        "chakra_ranks",
        "chakra_skip_unknown",
        "chakra_algorithms",
        "moe_tokens_per_gpu",
        "moe_hidden",
        "moe_dispatch_bytes_per_element",
        "moe_combine_bytes_per_element",
        "moe_experts",
        "moe_top_k",
        "moe_experts_per_gpu",
        "moe_popularity",
        "moe_zipf_exponent",
        "moe_expert_weights",
        "moe_capacity_factor",
        "moe_max_servers",
        "moe_compute_us",
        "moe_layer_gap_us",
        "moe_layers",
        "moe_backward",
        "moe_hierarchical",
        "chakra_comm_groups",
        "training_layers",
        "training_hidden",
        "training_ffn_hidden",
        "training_seq_len",
        "training_micro_batch",
        "training_micro_batches",
        "training_bytes_per_element",
        "training_tp",
        "training_pp",
        "training_dp",
        "training_ep",
        "training_fsdp",
        "training_tflops",
        "training_dense_layers",
        "training_experts",
        "training_top_k",
        "training_expert_ffn_hidden",
        "training_shared_experts",
    ];

    /// Every `moe_*` key that applies left unset given its default (`lbsim show`).
    pub fn fill_moe_defaults(&mut self) {
        use crate::config::defaults as d;
        self.moe_tokens_per_gpu.get_or_insert(d::MOE_TOKENS_PER_GPU);
        self.moe_hidden.get_or_insert(d::MOE_HIDDEN);
        self.moe_dispatch_bytes_per_element
            .get_or_insert(d::MOE_DISPATCH_BYTES_PER_ELEMENT);
        self.moe_combine_bytes_per_element
            .get_or_insert(d::MOE_COMBINE_BYTES_PER_ELEMENT);
        self.moe_experts.get_or_insert(d::MOE_EXPERTS);
        self.moe_top_k.get_or_insert(d::MOE_TOP_K);
        self.moe_experts_per_gpu
            .get_or_insert(d::MOE_EXPERTS_PER_GPU);
        let p = *self.moe_popularity.get_or_insert(MoePopularity::Uniform);
        if p == MoePopularity::Zipf {
            self.moe_zipf_exponent.get_or_insert(d::MOE_ZIPF_EXPONENT);
        }
        self.moe_capacity_factor
            .get_or_insert(d::MOE_CAPACITY_FACTOR);
        self.moe_max_servers.get_or_insert(d::MOE_MAX_SERVERS);
        self.moe_compute_us.get_or_insert(d::MOE_COMPUTE_US);
        self.moe_layer_gap_us.get_or_insert(d::MOE_LAYER_GAP_US);
        self.moe_layers.get_or_insert(d::MOE_LAYERS);
        self.moe_backward.get_or_insert(d::MOE_BACKWARD);
        self.moe_hierarchical.get_or_insert(d::MOE_HIERARCHICAL);
    }

    /// Every `training_*` key that applies left unset given its value in effect: the model
    /// preset's (or the default model's) shape and the defaults (`lbsim show`). An unknown
    /// preset is left for the run to refuse.
    pub fn fill_training_defaults(&mut self) {
        use crate::config::defaults as d;
        let base = match &self.model {
            None => workload::training::default_model(),
            Some(m) => match workload::training::presets().into_iter().find(|p| p.0 == m) {
                Some(p) => p.1,
                None => return,
            },
        };
        let layers = *self.training_layers.get_or_insert(base.layers);
        let u = |x: u64| u32::try_from(x).unwrap_or(u32::MAX);
        self.training_hidden.get_or_insert(u(base.hidden));
        self.training_ffn_hidden.get_or_insert(u(base.ffn_hidden));
        self.training_seq_len.get_or_insert(u(base.seq_len));
        self.training_micro_batch
            .get_or_insert(d::TRAINING_MICRO_BATCH);
        self.training_micro_batches
            .get_or_insert(d::TRAINING_MICRO_BATCHES);
        self.training_bytes_per_element
            .get_or_insert(d::TRAINING_BYTES_PER_ELEMENT);
        self.training_tp.get_or_insert(d::TRAINING_TP);
        self.training_pp.get_or_insert(d::TRAINING_PP);
        let dp = *self.training_dp.get_or_insert(d::TRAINING_DP);
        self.training_fsdp.get_or_insert(d::TRAINING_FSDP);
        self.training_tflops.get_or_insert(d::TRAINING_TFLOPS);
        let experts = *self.training_experts.get_or_insert(base.experts);
        if experts > 0 {
            self.training_top_k.get_or_insert(base.top_k);
            self.training_expert_ffn_hidden
                .get_or_insert(u(base.expert_ffn_hidden));
            self.training_shared_experts
                .get_or_insert(base.shared_experts);
            self.training_dense_layers
                .get_or_insert(base.dense_layers.min(layers));
            let gcd = |mut a: u32, mut b: u32| {
                while b != 0 {
                    (a, b) = (b, a % b);
                }
                a
            };
            self.training_ep.get_or_insert(gcd(dp, experts));
        }
    }

    /// The optional keys that are set, in `OPTION_KEYS` order.
    pub fn given_options(&self) -> Vec<&'static str> {
        let set = [
            self.path.is_some(),
            self.group_size.is_some(),
            self.groups.is_some(),
            self.gpus_per_host.is_some(),
            self.placement.is_some(),
            self.first_host.is_some(),
            self.pxn.is_some(),
            self.pxn_chunk_bytes.is_some(),
            self.channels.is_some(),
            self.all_to_all_algorithm.is_some(),
            self.all_to_all_concurrency.is_some(),
            self.model.is_some(),
            self.layers.is_some(),
            self.layer_bytes.is_some(),
            self.compute_us_per_layer.is_some(),
            self.iterations.is_some(),
            self.start_us.is_some(),
            self.fan_in.is_some(),
            self.chakra_ranks.is_some(),
            self.chakra_skip_unknown.is_some(),
            self.chakra_algorithms.is_some(),
            self.moe_tokens_per_gpu.is_some(),
            self.moe_hidden.is_some(),
            self.moe_dispatch_bytes_per_element.is_some(),
            self.moe_combine_bytes_per_element.is_some(),
            self.moe_experts.is_some(),
            self.moe_top_k.is_some(),
            self.moe_experts_per_gpu.is_some(),
            self.moe_popularity.is_some(),
            self.moe_zipf_exponent.is_some(),
            self.moe_expert_weights.is_some(),
            self.moe_capacity_factor.is_some(),
            self.moe_max_servers.is_some(),
            self.moe_compute_us.is_some(),
            self.moe_layer_gap_us.is_some(),
            self.moe_layers.is_some(),
            self.moe_backward.is_some(),
            self.moe_hierarchical.is_some(),
            self.chakra_comm_groups.is_some(),
            self.training_layers.is_some(),
            self.training_hidden.is_some(),
            self.training_ffn_hidden.is_some(),
            self.training_seq_len.is_some(),
            self.training_micro_batch.is_some(),
            self.training_micro_batches.is_some(),
            self.training_bytes_per_element.is_some(),
            self.training_tp.is_some(),
            self.training_pp.is_some(),
            self.training_dp.is_some(),
            self.training_ep.is_some(),
            self.training_fsdp.is_some(),
            self.training_tflops.is_some(),
            self.training_dense_layers.is_some(),
            self.training_experts.is_some(),
            self.training_top_k.is_some(),
            self.training_expert_ffn_hidden.is_some(),
            self.training_shared_experts.is_some(),
        ];
        Self::OPTION_KEYS
            .iter()
            .zip(set)
            .filter(|(_, s)| *s)
            .map(|(k, _)| *k)
            .collect()
    }
}

/// The parts of a scenario that decide its traffic: what the workload generator and the memory
/// estimate read (the scenario file lends them, see `ScenarioFile::traffic`).
#[derive(Clone, Copy, Debug)]
pub struct TrafficSpec<'a> {
    pub topology: &'a TopologyConfig,
    pub packet: &'a PacketConfig,
    pub workload: &'a WorkloadConfig,
    pub jobs: &'a [WorkloadConfig],
    pub seed: u64,
}
