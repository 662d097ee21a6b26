//! Workloads: the flows a run starts, and how they wait on each other. `permutation` (a random
//! derangement: every host sends one message and receives one), `all_to_all` (every ordered
//! pair), collectives over placed ranks (`collective`: rings, halving-doubling, pairwise
//! all-to-all, FSDP training), several `[[jobs]]` side by side, `connection_matrix` (htsim's
//! text format, with triggers), `chakra` (MLCommons execution traces replayed) and `training`
//! (a transformer's training iteration, generated as Chakra traces and replayed).

pub mod chakra;
pub mod collective;
pub mod config;
pub mod connection_matrix;
pub mod moe;
pub mod training;

use rand::seq::SliceRandom;

use crate::config::{limits, ConfigError, Origin};
use crate::ids::HostId;
use crate::net::Topology;
use crate::rng::{rng_for, Stream};
use crate::time::SimTime;
use collective::{Algo, Builder, JobSpec, JobWork, Labels, Placement};
pub use config::{AllToAllAlgorithm, MoePopularity, TrafficSpec, WorkloadConfig, WorkloadKind};

/// Each flow's identity: its source, its destination and its number among the flows between
/// the same pair, in list order, hashed. Per-flow draws (entropies, path choices, a policy's own
/// stream) key on it rather than on the flow's place in the list, so adding, removing or
/// reordering other flows moves no flow's paths; paired experiments compare like with like.
pub fn flow_identities(flows: &[FlowSpec]) -> Vec<u64> {
    use crate::rng::mix64;
    let pair = |i: u32| {
        let f = &flows[i as usize];
        ((f.src.0 as u64) << 32) | f.dst.0 as u64
    };
    // Flows grouped by pair, in list order within a pair (a stable sort): 4 bytes a flow while
    // it runs, where a map of the pairs cost about 40 (a million-flow all-to-all: 43 MB).
    let mut order: Vec<u32> = (0..flows.len() as u32).collect();
    order.sort_by_key(|&i| pair(i));
    let mut ids = vec![0u64; flows.len()];
    let mut last = None;
    let mut k = 0u64;
    for &i in &order {
        let p = pair(i);
        k = if last == Some(p) { k + 1 } else { 0 };
        last = Some(p);
        ids[i as usize] = mix64(mix64(p) ^ k);
    }
    ids
}

/// One message to move.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlowSpec {
    pub src: HostId,
    pub dst: HostId,
    pub size_bytes: u64,
    pub start: SimTime,
}

/// A trigger: after `needed` activations it starts its target flows `delay` later. An activation
/// comes from a flow whose receiver completes (`on_recv_done`) or whose sender learns it is done
/// (`on_send_done`). A multishot trigger starts one target per activation, in order (htsim's
/// semantics); a oneshot or barrier trigger starts all its targets once.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Trigger {
    pub needed: u32,
    pub multishot: bool,
    pub delay: SimTime,
    /// Flow indices started when the trigger fires.
    pub targets: Vec<u32>,
}

/// Dependencies between flows (collective steps, traces with triggers). Vectors indexed by flow
/// are either empty (no flow has the property) or one entry per flow.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Dependencies {
    pub triggers: Vec<Trigger>,
    /// Per flow: triggers activated when its receiver holds the whole message.
    pub on_recv_done: Vec<Vec<u32>>,
    /// Per flow: triggers activated when its sender learns the message is complete.
    pub on_send_done: Vec<Vec<u32>>,
    /// Per flow: it starts only when a trigger targets it (its `start` is then ignored).
    pub gated: Vec<bool>,
    /// Per flow: how many starts it waits for (empty, 0 or 1: the first trigger that targets it
    /// starts it). A flow waiting for several starts begins at the last of them: every trigger
    /// targeting it has fired and waited its delay (and, if `timed`, its own `start` has come),
    /// which is how a Chakra node that depends on several others waits for all of them.
    pub waits: Vec<u32>,
    /// Per flow: a gated flow that also waits for its own `start` time (one of its `waits`).
    pub timed: Vec<bool>,
}

impl Dependencies {
    pub fn is_empty(&self) -> bool {
        self.triggers.is_empty()
    }

    pub fn gated(&self, flow: usize) -> bool {
        self.gated.get(flow).copied().unwrap_or(false)
    }

    /// How many starts `flow` waits for (at least 1).
    pub fn waits(&self, flow: usize) -> u32 {
        self.waits.get(flow).copied().unwrap_or(1).max(1)
    }

    /// Whether `flow`'s own `start` counts (an ungated flow's always does).
    pub fn timed(&self, flow: usize) -> bool {
        !self.gated(flow) || self.timed.get(flow).copied().unwrap_or(false)
    }

    /// The same dependencies with per-flow vectors that say nothing emptied (a canonical form
    /// for comparisons).
    pub fn normalized(mut self) -> Dependencies {
        if self.on_recv_done.iter().all(Vec::is_empty) {
            self.on_recv_done.clear();
        }
        if self.on_send_done.iter().all(Vec::is_empty) {
            self.on_send_done.clear();
        }
        if !self.gated.iter().any(|g| *g) {
            self.gated.clear();
        }
        if self.waits.iter().all(|w| *w <= 1) {
            self.waits.clear();
        }
        if !self.timed.iter().any(|t| *t) {
            self.timed.clear();
        }
        self
    }
}

/// What a workload generates: flows, how they wait on each other, and what they belong to.
#[derive(Clone, Debug, Default)]
pub struct Workload {
    pub flows: Vec<FlowSpec>,
    pub deps: Dependencies,
    pub labels: Labels,
    /// Each flow's id (flows.csv's `flow_id`): a connection matrix's own ids; empty for
    /// generated workloads, whose flows are numbered 0, 1, 2, ...
    pub ids: Vec<u64>,
    /// Links a connection matrix's `failure` lines fail from the start (as `[[failures]]`
    /// names them).
    pub failed_links: Vec<String>,
}

pub fn generate(
    file: &TrafficSpec,
    topo: &Topology,
    origin: &Origin,
) -> Result<Workload, ConfigError> {
    let err = |key: String, msg: String| ConfigError::Invalid {
        origin: origin.name.clone(),
        key,
        msg,
    };
    let jobs: Vec<(String, &WorkloadConfig)> = if file.jobs.is_empty() {
        vec![("workload".to_string(), file.workload)]
    } else {
        if *file.workload != WorkloadConfig::default() {
            return Err(err(
                "workload".into(),
                "`[[jobs]]` replaces `[workload]`: move these settings into a job".into(),
            ));
        }
        (0..file.jobs.len())
            .map(|i| (format!("jobs.{i}"), &file.jobs[i]))
            .collect()
    };
    let mut b = Builder::default();
    let mut labels = Labels::default();
    for (j, (prefix, w)) in jobs.iter().enumerate() {
        check_keys(w, prefix, origin)?;
        if w.kind == WorkloadKind::ConnectionMatrix {
            if !file.jobs.is_empty() {
                return Err(err(
                    format!("{prefix}.kind"),
                    "a connection matrix cannot be one of several `[[jobs]]`".into(),
                ));
            }
            let path = w.path.as_ref().ok_or_else(|| {
                err(
                    format!("{prefix}.path"),
                    "connection_matrix needs a path to a .cm file".into(),
                )
            })?;
            let path = match (&origin.dir, path.is_relative()) {
                (Some(dir), true) => dir.join(path),
                _ => path.clone(),
            };
            let connection_matrix::Matrix {
                flows,
                deps,
                ids,
                failures,
            } = connection_matrix::load(&path, topo.hosts, file.packet.payload_bytes)?;
            let failed_links = failures
                .iter()
                .map(|&(sw, link, line)| {
                    topo.htsim_agg_uplink(sw, link)
                        .map_err(|msg| ConfigError::Trace {
                            path: path.display().to_string(),
                            line,
                            msg,
                        })
                })
                .collect::<Result<Vec<String>, ConfigError>>()?;
            check_span(&flows, &deps, file, topo).map_err(|msg| ConfigError::Trace {
                path: path.display().to_string(),
                line: 0,
                msg,
            })?;
            return Ok(Workload {
                flows,
                deps,
                labels,
                ids,
                failed_links,
            });
        }
        if w.kind == WorkloadKind::Chakra {
            if !file.jobs.is_empty() {
                return Err(err(
                    format!("{prefix}.kind"),
                    "a Chakra trace cannot be one of several `[[jobs]]`".into(),
                ));
            }
            let chakra::Replay {
                flows,
                deps,
                labels,
            } = chakra_replay(w, topo, file, origin)?;
            check_span(&flows, &deps, file, topo).map_err(|msg| err("workload".into(), msg))?;
            return Ok(Workload {
                flows,
                deps,
                labels,
                ids: Vec::new(),
                failed_links: Vec::new(),
            });
        }
        if w.kind == WorkloadKind::Training {
            if !file.jobs.is_empty() {
                return Err(err(
                    format!("{prefix}.kind"),
                    "a training workload cannot be one of several `[[jobs]]`".into(),
                ));
            }
            let t = training_traces(w, topo, file, origin)?;
            let hosts = t.hosts;
            let start = t.start;
            let opt = chakra::Options {
                ranks: None,
                skip_unknown: false,
                algorithms: Default::default(),
                payload_bytes: file.packet.payload_bytes,
                comm_groups: Some(t.groups),
            };
            let named: Vec<(String, Vec<chakra::proto::Node>)> = t
                .ranks
                .into_iter()
                .enumerate()
                .map(|(r, nodes)| (format!("training rank {r}"), nodes))
                .collect();
            let chakra::Replay {
                flows,
                deps,
                mut labels,
            } = chakra::replay_nodes(&named, &hosts, start, &opt)?;
            if let Some(j) = labels.jobs.first_mut() {
                j.kind = "training";
            }
            check_span(&flows, &deps, file, topo).map_err(|msg| err("workload".into(), msg))?;
            return Ok(Workload {
                flows,
                deps,
                labels,
                ids: Vec::new(),
                failed_links: Vec::new(),
            });
        }
        let spec = resolve(w, topo, file, j as u32, prefix, origin)?;
        let hosts = spec.0;
        let servers = match w.pxn {
            Some(true) => Some(
                topo.domain_runs()
                    .map_err(|m| err(format!("{prefix}.pxn"), m))?,
            ),
            _ => None,
        };
        b.relay_by_rail(servers.as_deref());
        let chunk = w
            .pxn_chunk_bytes
            .unwrap_or(crate::config::defaults::PXN_CHUNK_BYTES);
        if w.pxn_chunk_bytes.is_some() && w.pxn != Some(true) {
            return Err(err(
                format!("{prefix}.pxn_chunk_bytes"),
                "applies only with pxn = true".into(),
            ));
        }
        if chunk != 0 && chunk < file.packet.payload_bytes as u64 {
            return Err(err(
                format!("{prefix}.pxn_chunk_bytes"),
                format!(
                    "must be 0 (whole transfers) or at least a packet's payload ({} bytes), got \
                     {chunk}",
                    file.packet.payload_bytes
                ),
            ));
        }
        b.pxn_chunk(chunk);
        b.servers(topo.domain_runs().ok().as_deref());
        b.channels(w.channels.unwrap_or(1));
        collective::job(
            &mut b,
            &mut labels,
            &JobSpec {
                job: j as u32,
                work: spec.1,
                hosts: &hosts,
                groups: spec.2,
                iterations: spec.3,
                start: spec.4,
            },
        );
    }
    let (flows, deps) = b.finish();
    if flows.is_empty() {
        return Err(err(
            "workload".into(),
            "no flow crosses the network (every rank of every group shares one host)".into(),
        ));
    }
    let key = if file.jobs.is_empty() {
        "workload"
    } else {
        "jobs"
    };
    check_span(&flows, &deps, file, topo).map_err(|msg| err(key.into(), msg))?;
    Ok(Workload {
        flows,
        deps,
        labels,
        ids: Vec::new(),
        failed_links: Vec::new(),
    })
}

/// Reads and replays `[workload]`'s Chakra traces on ranks placed as for collectives.
fn chakra_replay(
    w: &WorkloadConfig,
    topo: &Topology,
    file: &TrafficSpec,
    origin: &Origin,
) -> Result<chakra::Replay, ConfigError> {
    let err = |key: &str, msg: String| ConfigError::Invalid {
        origin: origin.name.clone(),
        key: format!("workload.{key}"),
        msg,
    };
    let path = w.path.as_ref().ok_or_else(|| {
        err(
            "path",
            "chakra needs a path: a trace file, a directory of NAME.RANK.et files or a NAME              prefix"
                .into(),
        )
    })?;
    let path = match (&origin.dir, path.is_relative()) {
        (Some(dir), true) => dir.join(path),
        _ => path.clone(),
    };
    let start = start_time(w.start_us).ok_or_else(|| {
        err(
            "start_us",
            "must be a non-negative number of microseconds".into(),
        )
    })?;
    if w.chakra_ranks.is_some_and(|n| n < 2) {
        return Err(err("chakra_ranks", "must be at least 2".into()));
    }
    if let Some(a) = &w.chakra_algorithms {
        if a.all_to_all_concurrency == Some(0) {
            return Err(err(
                "chakra_algorithms.all_to_all_concurrency",
                "must be at least 1 (1 is `serial`)".into(),
            ));
        }
        if a.all_to_all_concurrency.is_some() && a.all_to_all != Some(AllToAllAlgorithm::Limited) {
            return Err(err(
                "chakra_algorithms.all_to_all_concurrency",
                "applies only with chakra_algorithms.all_to_all = \"limited\"".into(),
            ));
        }
    }
    let opt = chakra::Options {
        ranks: w.chakra_ranks,
        skip_unknown: w.chakra_skip_unknown.unwrap_or(false),
        algorithms: w.chakra_algorithms.clone().unwrap_or_default(),
        payload_bytes: file.packet.payload_bytes,
        comm_groups: None,
    };
    let files = chakra::files(&path)?;
    let ranks = chakra::rank_count(&files, &opt, &path.display().to_string())?;
    let mut opt = opt;
    if let Some(g) = &w.chakra_comm_groups {
        let g = match (&origin.dir, g.is_relative()) {
            (Some(dir), true) => dir.join(g),
            _ => g.clone(),
        };
        let groups = chakra::CommGroups::load(&g)?;
        groups.check(Some(ranks)).map_err(|m| ConfigError::Io {
            path: g.display().to_string(),
            msg: format!("workload.chakra_comm_groups: {m}"),
        })?;
        opt.comm_groups = Some(groups);
    }
    let gpus = w.gpus_per_host.unwrap_or(1);
    if gpus == 0 {
        return Err(err("gpus_per_host", "must be at least 1".into()));
    }
    let (placement, first) = placement_and_first_host(w, topo).map_err(|(k, m)| err(k, m))?;
    let key = if w.chakra_ranks.is_some() {
        "chakra_ranks"
    } else {
        "path"
    };
    let hosts = collective::place(topo, placement, ranks, gpus, first, file.seed, 0)
        .map_err(|m| err(key, m))?;
    chakra::replay(&files, &hosts, start, &opt)
}

/// A `training` workload's graphs, placed: what a run replays and `lbsim export-chakra` writes.
pub struct TrainingPlan {
    pub model: training::Model,
    pub par: training::Parallel,
    pub ranks: Vec<Vec<chakra::proto::Node>>,
    pub groups: chakra::CommGroups,
    /// Rank r's host.
    pub hosts: Vec<u32>,
    pub start: SimTime,
}

/// `[workload]`'s training keys checked, its ranks placed and its graphs generated.
pub fn training_traces(
    w: &WorkloadConfig,
    topo: &Topology,
    file: &TrafficSpec,
    origin: &Origin,
) -> Result<TrainingPlan, ConfigError> {
    use crate::config::defaults as d;
    let err = |key: &str, msg: String| ConfigError::Invalid {
        origin: origin.name.clone(),
        key: format!("workload.{key}"),
        msg,
    };
    let base = match &w.model {
        None => training::default_model(),
        Some(m) => training::presets()
            .into_iter()
            .find(|p| p.0 == m)
            .map(|p| p.1)
            .ok_or_else(|| {
                let names: Vec<&str> = training::presets().iter().map(|p| p.0).collect();
                err(
                    "model",
                    format!(
                        "unknown model `{m}` for kind training; presets: {}",
                        names.join(", ")
                    ),
                )
            })?,
    };
    let positive = |key: &str, v: Option<u32>, default: u64| match v.map_or(default, u64::from) {
        0 => Err(err(key, "must be at least 1".into())),
        x => Ok(x),
    };
    let layers = positive("training_layers", w.training_layers, base.layers as u64)? as u32;
    let experts = w.training_experts.unwrap_or(base.experts);
    let model = training::Model {
        layers,
        hidden: positive("training_hidden", w.training_hidden, base.hidden)?,
        ffn_hidden: positive(
            "training_ffn_hidden",
            w.training_ffn_hidden,
            base.ffn_hidden,
        )?,
        seq_len: positive("training_seq_len", w.training_seq_len, base.seq_len)?,
        experts,
        top_k: w.training_top_k.unwrap_or(base.top_k),
        expert_ffn_hidden: w
            .training_expert_ffn_hidden
            .map_or(base.expert_ffn_hidden, u64::from),
        shared_experts: w.training_shared_experts.unwrap_or(base.shared_experts),
        dense_layers: w
            .training_dense_layers
            .unwrap_or(base.dense_layers.min(layers)),
    };
    let moe_keys = [
        ("training_ep", w.training_ep.is_some()),
        ("training_top_k", w.training_top_k.is_some()),
        (
            "training_expert_ffn_hidden",
            w.training_expert_ffn_hidden.is_some(),
        ),
        (
            "training_shared_experts",
            w.training_shared_experts.is_some(),
        ),
        ("training_dense_layers", w.training_dense_layers.is_some()),
    ];
    if experts == 0 {
        if let Some((k, _)) = moe_keys.iter().find(|k| k.1) {
            return Err(err(
                k,
                "applies only to MoE models (training_experts > 0, e.g. model = \"deepseek_v3\")"
                    .into(),
            ));
        }
    } else {
        if model.top_k == 0 || model.top_k > experts {
            return Err(err(
                "training_top_k",
                format!(
                    "must be 1 to training_experts ({experts}), got {}",
                    model.top_k
                ),
            ));
        }
        if model.expert_ffn_hidden == 0 {
            return Err(err(
                "training_expert_ffn_hidden",
                "must be at least 1".into(),
            ));
        }
        if model.dense_layers > layers {
            return Err(err(
                "training_dense_layers",
                format!(
                    "{} dense layers, but the model has {layers}",
                    model.dense_layers
                ),
            ));
        }
    }
    let tp = positive("training_tp", w.training_tp, d::TRAINING_TP as u64)? as u32;
    let pp = positive("training_pp", w.training_pp, d::TRAINING_PP as u64)? as u32;
    let dp = positive("training_dp", w.training_dp, d::TRAINING_DP as u64)? as u32;
    if pp > layers {
        return Err(err(
            "training_pp",
            format!("{pp} pipeline stages for {layers} layers: a stage needs a layer"),
        ));
    }
    let ep = if experts == 0 {
        1
    } else {
        // Default: the most ranks of a replica group that split the experts evenly.
        let gcd = |mut a: u32, mut b: u32| {
            while b != 0 {
                (a, b) = (b, a % b);
            }
            a
        };
        let ep = w.training_ep.unwrap_or(gcd(dp, experts));
        if ep == 0 || !dp.is_multiple_of(ep) || !experts.is_multiple_of(ep) {
            return Err(err(
                "training_ep",
                format!("must divide training_dp ({dp}) and the experts ({experts}), got {ep}"),
            ));
        }
        ep
    };
    let tflops = w.training_tflops.unwrap_or(d::TRAINING_TFLOPS);
    if !(tflops.is_finite() && tflops > 0.0 && tflops <= 1e6) {
        return Err(err(
            "training_tflops",
            format!("must be a positive number of TFLOP/s up to 1e6, got {tflops}"),
        ));
    }
    let iterations = w.iterations.unwrap_or(1);
    if iterations == 0 {
        return Err(err("iterations", "must be at least 1".into()));
    }
    let par = training::Parallel {
        tp,
        pp,
        dp,
        ep,
        micro_batch: positive(
            "training_micro_batch",
            w.training_micro_batch,
            d::TRAINING_MICRO_BATCH as u64,
        )?,
        micro_batches: positive(
            "training_micro_batches",
            w.training_micro_batches,
            d::TRAINING_MICRO_BATCHES as u64,
        )? as u32,
        bytes_per_element: positive(
            "training_bytes_per_element",
            w.training_bytes_per_element,
            d::TRAINING_BYTES_PER_ELEMENT as u64,
        )?,
        fsdp: w.training_fsdp.unwrap_or(d::TRAINING_FSDP),
        tflops,
        iterations,
        seed: file.seed,
    };
    let ranks = tp as u64 * pp as u64 * dp as u64;
    if ranks < 2 {
        return Err(err(
            "training_dp",
            "tp x pp x dp is 1 rank: nothing crosses the network".into(),
        ));
    }
    // Sizes: every message within what a run may send, and the tags within an i32.
    let payload = file.packet.payload_bytes;
    let elem = par.bytes_per_element as u128;
    let act = par.micro_batch as u128 * model.seq_len as u128 * model.hidden as u128 * elem;
    let h = model.hidden as u128;
    let layer_params = 4 * h * h
        + 3 * h
            * if experts > 0 {
                model.expert_ffn_hidden as u128 * (experts + model.shared_experts) as u128
            } else {
                0
            }
            .max(model.ffn_hidden as u128);
    let big = |key: &str, what: &str, bytes: u128| -> Result<(), ConfigError> {
        let b = u64::try_from(bytes).unwrap_or(u64::MAX);
        limits::check_message(b, payload).map_err(|m| err(key, format!("{what}: {m}")))
    };
    big("training_micro_batch", "a micro-batch's activations", act)?;
    big(
        "training_micro_batch",
        "a micro-batch's MoE dispatch",
        act * model.top_k as u128,
    )?;
    big(
        "training_tp",
        "a layer's weights on one tp rank",
        layer_params / tp as u128 * elem,
    )?;
    let tags = iterations as u64 * 2 * par.micro_batches as u64
        + if experts > 0 {
            iterations as u64 * par.micro_batches as u64 * layers as u64 * 4
        } else {
            0
        };
    if tags > i32::MAX as u64 {
        return Err(err(
            "training_micro_batches",
            format!("{iterations} iteration(s) x {} micro-batches need {tags} message tags, more than an i32 holds", par.micro_batches),
        ));
    }
    // Nodes: per micro-batch and layer at most 8 on the stream (MoE layers: a send and a
    // receive per ep peer in each of 4 phases), plus messages and collectives.
    let per_stage = layers.div_ceil(pp) as u64;
    let per_layer = 8 + if experts > 0 { 8 * (ep as u64 - 1) } else { 0 };
    let nodes = ranks
        * iterations as u64
        * (par.micro_batches as u64 * (per_stage * per_layer + 4) + per_stage * 3);
    if nodes > limits::TRAINING_NODES {
        return Err(err(
            "training_micro_batches",
            format!(
                "{ranks} ranks x {iterations} iteration(s) x {} micro-batches x {per_stage} layers per stage are about {nodes} Chakra nodes, more than the {} a run generates",
                par.micro_batches,
                limits::TRAINING_NODES
            ),
        ));
    }
    if experts > 0 && ep > 1 {
        // The routing draws, as `moe` counts them: tokens x ep x top_k per layer, for every
        // MoE layer, micro-batch, iteration and ep group of every stage (tp ranks share them).
        let tokens = par.micro_batch * model.seq_len;
        let layer = tokens as u128 * ep as u128 * model.top_k as u128;
        if tokens > u32::MAX as u64 || layer > limits::MOE_LAYER_DRAWS as u128 {
            return Err(err(
                "training_seq_len",
                format!(
                    "micro_batch x seq_len = {tokens} tokens x ep {ep} x top_k {} are {layer} \
                     expert draws in one layer, more than the {} the generator holds at once",
                    model.top_k,
                    limits::MOE_LAYER_DRAWS
                ),
            ));
        }
        let moe_layers = (layers - model.dense_layers.min(layers)) as u128;
        let draws = layer
            * moe_layers
            * par.micro_batches as u128
            * iterations as u128
            * (pp as u128 * (dp / ep) as u128);
        if draws > limits::MOE_DRAWS as u128 {
            return Err(err(
                "training_micro_batches",
                format!(
                    "{draws} expert draws (tokens x ep x top_k x MoE layers x micro-batches x \
                     iterations x ep groups), more than the {} the generator makes",
                    limits::MOE_DRAWS
                ),
            ));
        }
    }
    // Every rank's compute in series (its stage's layers, forward and backward, every
    // micro-batch) must fit in a run's time.
    let tokens = par.micro_batch as u128 * model.seq_len as u128;
    let flops: u128 = (0..layers)
        .map(|l| {
            let (a, m) = model.forward_flops(l, tokens);
            3 * (a + m)
        })
        .sum::<u128>()
        * par.micro_batches as u128
        * iterations as u128;
    if flops as f64 / (tp as f64 * tflops) >= (limits::TIME_PS / 2) as f64 {
        return Err(err(
            "training_tflops",
            "the compute of an iteration is past the time a run may simulate".into(),
        ));
    }
    let start = start_time(w.start_us).ok_or_else(|| {
        err(
            "start_us",
            "must be a non-negative number of microseconds".into(),
        )
    })?;
    let gpus = w.gpus_per_host.unwrap_or(1);
    if gpus == 0 {
        return Err(err("gpus_per_host", "must be at least 1".into()));
    }
    let (placement, first) = placement_and_first_host(w, topo).map_err(|(k, m)| err(k, m))?;
    let hosts = collective::place(topo, placement, ranks as u32, gpus, first, file.seed, 0)
        .map_err(|m| err("training_dp", format!("tp {tp} x pp {pp} x dp {dp}: {m}")))?;
    // tp's all-reduces run over NVLink: a tp group must sit in one server.
    if tp > 1 {
        if let Ok(runs) = topo.domain_runs() {
            let mut server = vec![0u32; topo.hosts as usize];
            for (i, r) in runs.iter().enumerate() {
                for h in r.clone() {
                    server[h as usize] = i as u32;
                }
            }
            let most = runs.iter().map(|r| r.len()).max().unwrap_or(1) as u64 * gpus as u64;
            for g in hosts.chunks(tp as usize) {
                if g.iter()
                    .any(|&h| server[h as usize] != server[g[0] as usize])
                {
                    return Err(err(
                        "training_tp",
                        format!(
                            "a tensor-parallel group of {tp} ranks (hosts {:?}) spans servers: \
                             tp must fit in one server (at most {most} GPUs here) and its ranks \
                             be placed there (placement linear, first_host at a server's start)",
                            g
                        ),
                    ));
                }
            }
        }
    }
    let t = training::generate(&model, &par);
    Ok(TrainingPlan {
        model,
        par,
        ranks: t.ranks,
        groups: t.groups,
        hosts,
        start,
    })
}

/// The workload counted in series (the latest start, every trigger delay, and all data at the
/// host link rate) must fit in [`limits::TIME_PS`]. Counted in u128: nothing here can overflow.
fn check_span(
    flows: &[FlowSpec],
    deps: &Dependencies,
    file: &TrafficSpec,
    topo: &Topology,
) -> Result<(), String> {
    let p = &file.packet;
    let (mss, header) = (p.payload_bytes.max(1) as u128, p.header_bytes as u128);
    let bytes: u128 = flows
        .iter()
        .map(|f| {
            let size = f.size_bytes as u128;
            size + size.div_ceil(mss).max(1) * header
        })
        .sum();
    let start = flows.iter().map(|f| f.start.ps()).max().unwrap_or(0) as u128;
    let delays: u128 = deps.triggers.iter().map(|t| t.delay.ps() as u128).sum();
    let data = bytes * 8 * 1_000_000_000_000 / topo.host_rate.0.max(1) as u128;
    let span = start + delays + data;
    if span < limits::TIME_PS as u128 {
        return Ok(());
    }
    let s = |ps: u128| {
        let x = ps as f64 / 1e12;
        if ps == 0 {
            "0 s".to_string()
        } else if (1e-3..1e4).contains(&x) {
            format!("{x:.3} s")
        } else {
            format!("{x:.3e} s")
        }
    };
    Err(format!(
        "the workload counted in series is {} of simulated time (latest start {}, trigger delays \
         {}, {bytes} bytes of data at the {} Gb/s host link {}), past the {} ps (about 53 days) a \
         run may simulate: shrink the messages, the flow count or the delays",
        s(span),
        s(start),
        s(delays),
        topo.host_rate.gbps(),
        s(data),
        limits::TIME_PS
    ))
}

/// A kind's own keys: the ones of [workload] named with its prefix (`moe_`, `training_`).
fn own(prefix: &str) -> Vec<&'static str> {
    WorkloadConfig::OPTION_KEYS
        .iter()
        .filter(|k| k.starts_with(prefix))
        .copied()
        .collect()
}

/// The optional keys each kind reads.
fn keys_for(kind: WorkloadKind) -> Vec<&'static str> {
    const GROUPS: &[&str] = &["group_size", "groups"];
    // Where the ranks go and when they run: every collective kind reads these.
    const PLACE: &[&str] = &[
        "gpus_per_host",
        "placement",
        "first_host",
        "pxn",
        "pxn_chunk_bytes",
        "iterations",
        "start_us",
    ];
    let extra: &[&str] = match kind {
        WorkloadKind::Permutation => return vec!["start_us"],
        WorkloadKind::ConnectionMatrix => return vec!["path"],
        WorkloadKind::Chakra => {
            return vec![
                "path",
                "gpus_per_host",
                "placement",
                "first_host",
                "start_us",
                "chakra_ranks",
                "chakra_skip_unknown",
                "chakra_algorithms",
                "chakra_comm_groups",
            ]
        }
        WorkloadKind::Training => {
            let place = [
                "model",
                "gpus_per_host",
                "placement",
                "first_host",
                "iterations",
                "start_us",
            ];
            return [&place[..], &own("training_")].concat();
        }
        // One group whose size is the fan-in.
        WorkloadKind::Incast | WorkloadKind::Outcast => return [&["fan_in"], PLACE].concat(),
        WorkloadKind::AllToAll => &["all_to_all_algorithm", "all_to_all_concurrency"],
        WorkloadKind::Fsdp => &[
            "model",
            "layers",
            "layer_bytes",
            "compute_us_per_layer",
            "channels",
        ],
        // The group is the expert-parallel group: its size follows from the experts.
        WorkloadKind::Moe => return [&["groups"], PLACE, &own("moe_")].concat(),
        WorkloadKind::RingAllreduce
        | WorkloadKind::RingReduceScatter
        | WorkloadKind::RingAllgather => &["channels"],
        WorkloadKind::HalvingDoublingAllreduce | WorkloadKind::HierarchicalAllreduce => &[],
    };
    [GROUPS, PLACE, extra].concat()
}

fn check_keys(w: &WorkloadConfig, prefix: &str, origin: &Origin) -> Result<(), ConfigError> {
    let allowed = keys_for(w.kind);
    for key in w.given_options() {
        if !allowed.contains(&key) {
            let kinds: Vec<&str> = ALL_KINDS
                .iter()
                .filter(|k| keys_for(**k).contains(&key))
                .map(|k| k.name())
                .collect();
            return Err(ConfigError::Invalid {
                origin: origin.name.clone(),
                key: format!("{prefix}.{key}"),
                msg: format!(
                    "applies only to workload kinds {}; kind `{}` takes {}",
                    kinds.join(", "),
                    w.kind.name(),
                    if allowed.is_empty() {
                        "none".to_string()
                    } else {
                        allowed.join(", ")
                    }
                ),
            });
        }
    }
    Ok(())
}

const ALL_KINDS: &[WorkloadKind] = &[
    WorkloadKind::Permutation,
    WorkloadKind::AllToAll,
    WorkloadKind::ConnectionMatrix,
    WorkloadKind::RingAllreduce,
    WorkloadKind::RingReduceScatter,
    WorkloadKind::RingAllgather,
    WorkloadKind::HalvingDoublingAllreduce,
    WorkloadKind::HierarchicalAllreduce,
    WorkloadKind::Fsdp,
    WorkloadKind::Incast,
    WorkloadKind::Outcast,
    WorkloadKind::Chakra,
    WorkloadKind::Moe,
    WorkloadKind::Training,
];

type Resolved = (Vec<u32>, JobWork, u32, u32, SimTime);

/// Validates one job's keys and places its ranks.
fn resolve(
    w: &WorkloadConfig,
    topo: &Topology,
    file: &TrafficSpec,
    job: u32,
    prefix: &str,
    origin: &Origin,
) -> Result<Resolved, ConfigError> {
    let seed = file.seed;
    let payload = file.packet.payload_bytes;
    let err = |key: &str, msg: String| ConfigError::Invalid {
        origin: origin.name.clone(),
        key: format!("{prefix}.{key}"),
        msg,
    };
    let start = start_time(w.start_us).ok_or_else(|| {
        err(
            "start_us",
            "must be a non-negative number of microseconds".into(),
        )
    })?;
    if w.all_to_all_concurrency.is_some()
        && w.all_to_all_algorithm != Some(AllToAllAlgorithm::Limited)
    {
        return Err(err(
            "all_to_all_concurrency",
            "applies only with all_to_all_algorithm = \"limited\"".into(),
        ));
    }
    if let Some(c) = w.channels {
        if !(1..=limits::CHANNELS).contains(&c) {
            return Err(err(
                "channels",
                format!("must be from 1 to {}, got {c}", limits::CHANNELS),
            ));
        }
    }
    let iterations = w.iterations.unwrap_or(1);
    if iterations == 0 {
        return Err(err("iterations", "must be at least 1".into()));
    }
    let needs_size = !matches!(
        w.kind,
        WorkloadKind::Fsdp | WorkloadKind::ConnectionMatrix | WorkloadKind::Moe
    );
    if needs_size && w.message_bytes == 0 {
        return Err(err("message_bytes", "must be positive".into()));
    }
    if needs_size {
        limits::check_message(w.message_bytes, payload).map_err(|m| err("message_bytes", m))?;
    }
    if w.kind == WorkloadKind::Permutation {
        // Every host sends one message to another: drawn as before, kept as one collective.
        let flows = permutation_stream(topo.hosts, w.message_bytes, seed, job as u64);
        let hosts: Vec<u32> = flows.iter().map(|f| f.dst.0).collect();
        return Ok((
            hosts,
            JobWork::Collective {
                algo: Algo::Permutation,
                bytes: w.message_bytes,
            },
            1,
            1,
            start,
        ));
    }
    let gpus = w.gpus_per_host.unwrap_or(1);
    if gpus == 0 {
        return Err(err("gpus_per_host", "must be at least 1".into()));
    }
    let groups = w.groups.unwrap_or(1);
    if groups == 0 {
        return Err(err("groups", "must be at least 1".into()));
    }
    let (placement, first) = placement_and_first_host(w, topo).map_err(|(k, m)| err(k, m))?;
    let avail = topo.hosts - first;
    let capacity = avail as u64 * gpus as u64;
    // What the ranks can be placed on, for messages: "16 hosts x 1 GPUs = 16 ranks".
    let have = format!(
        "{avail} hosts{} x {gpus} GPUs = {capacity} ranks",
        if first > 0 {
            format!(" from first_host {first}")
        } else {
            String::new()
        }
    );
    if capacity < 2 {
        // One host with one GPU: only first_host can have left so little.
        return Err(err(
            "first_host",
            format!(
                "from host {first} on only 1 host x 1 GPU is left; a group needs at least 2 ranks"
            ),
        ));
    }
    let moe = match w.kind {
        WorkloadKind::Moe => Some(moe_router(w, payload, &err)?),
        _ => None,
    };
    let n = match (w.group_size, w.kind) {
        (_, WorkloadKind::Moe) => {
            let (r, _) = moe.as_ref().expect("moe checked above");
            let n = (r.experts / r.experts_per_gpu) as u64;
            if n * groups as u64 > capacity {
                let key = if n <= capacity && groups > 1 {
                    "groups"
                } else {
                    "moe_experts"
                };
                return Err(err(
                    key,
                    format!(
                        "{groups} expert-parallel group(s) of {} experts at {} per GPU are {} \
                         ranks, more than the {have}",
                        r.experts,
                        r.experts_per_gpu,
                        n * groups as u64
                    ),
                ));
            }
            n
        }
        (_, WorkloadKind::Incast | WorkloadKind::Outcast) => match w.fan_in {
            Some(0) => return Err(err("fan_in", "must be at least 1".into())),
            Some(f) if f as u64 + 1 > capacity => {
                let one = if w.kind == WorkloadKind::Incast {
                    "receiver"
                } else {
                    "sender"
                };
                return Err(err(
                    "fan_in",
                    format!(
                        "{f} peers and the {one} are {} ranks, more than the {have}",
                        f as u64 + 1
                    ),
                ));
            }
            Some(f) => f as u64 + 1,
            None => capacity,
        },
        (Some(n), _) => n as u64,
        (None, _) => {
            let n = capacity / groups as u64;
            if n < 2 {
                return Err(err(
                    "groups",
                    format!("{groups} groups over the {have} leave {n} rank(s) per group; a group needs at least 2"),
                ));
            }
            n
        }
    };
    if n < 2 {
        return Err(err("group_size", "a group needs at least 2 ranks".into()));
    }
    if n * groups as u64 > capacity {
        // One group fits: the number of groups is what is too large.
        let key = if n <= capacity && groups > 1 {
            "groups"
        } else {
            "group_size"
        };
        return Err(err(
            key,
            format!(
                "{groups} group(s) of {n} ranks are {} ranks, more than the {have}",
                n * groups as u64
            ),
        ));
    }
    if w.kind == WorkloadKind::HalvingDoublingAllreduce && !n.is_power_of_two() {
        return Err(err(
            "group_size",
            format!("halving_doubling_allreduce needs a power-of-two group, got {n}"),
        ));
    }
    let ranks = (n * groups as u64) as u32;
    let hosts = collective::place(topo, placement, ranks, gpus, first, seed, job)
        .map_err(|m| err("group_size", m))?;
    if w.kind == WorkloadKind::HierarchicalAllreduce {
        let mut b = collective::Builder::default();
        b.servers(topo.domain_runs().ok().as_deref());
        for (g, h) in hosts.chunks(n as usize).enumerate() {
            if collective::by_server(|r| b.server_of(h[r]), h.len()).is_none() {
                return Err(err(
                    "group_size",
                    format!(
                        "hierarchical_allreduce needs as many ranks on every server (NVLink \
                         domain, or host on a fabric without servers), but group {g}'s {n} ranks \
                         are spread unevenly: choose a group size that fills whole servers"
                    ),
                ));
            }
        }
    }
    let work = match w.kind {
        WorkloadKind::Moe => {
            let (router, m) = moe.expect("moe checked above");
            let draws = (router.tokens_per_gpu as u128)
                * (ranks as u128)
                * (router.top_k as u128)
                * (m.layers as u128)
                * (iterations as u128);
            if draws > limits::MOE_DRAWS as u128 {
                return Err(err(
                    "moe_tokens_per_gpu",
                    format!(
                        "{} tokens per GPU x {ranks} ranks x top_k {} x {} layer(s) x \
                         {iterations} iteration(s) are {draws} expert draws, more than the {} \
                         the generator makes",
                        router.tokens_per_gpu,
                        router.top_k,
                        m.layers,
                        limits::MOE_DRAWS
                    ),
                ));
            }
            let layer = router.tokens_per_gpu as u64 * n * router.top_k as u64;
            if layer > limits::MOE_LAYER_DRAWS {
                return Err(err(
                    "moe_tokens_per_gpu",
                    format!(
                        "{} tokens per GPU x {n} ranks x top_k {} are {layer} expert draws in \
                         one layer, more than the {} the generator holds at once",
                        router.tokens_per_gpu,
                        router.top_k,
                        limits::MOE_LAYER_DRAWS
                    ),
                ));
            }
            // Forward and backward compute, every layer in series, from the start.
            let per_layer = (m.compute.ps() as u128 + m.layer_gap.ps() as u128)
                * if m.backward { 3 } else { 1 };
            let series = (m.layers as u128 * iterations as u128)
                .saturating_mul(per_layer)
                .saturating_add(start.ps() as u128);
            if series >= limits::TIME_PS as u128 {
                return Err(err(
                    "moe_compute_us",
                    format!(
                        "{} layers x {iterations} iteration(s) of compute are {:.3e} s of \
                         simulated time in series, past the {} ps (about 53 days) a run may \
                         simulate",
                        m.layers,
                        series as f64 / 1e12,
                        limits::TIME_PS
                    ),
                ));
            }
            // Servers: the fabric's NVLink domains, or else each host.
            let runs = topo
                .domain_runs()
                .unwrap_or_else(|_| (0..topo.hosts).map(|h| h..h + 1).collect());
            let server_of_host: Vec<u32> = runs
                .iter()
                .enumerate()
                .flat_map(|(i, r)| r.clone().map(move |_| i as u32))
                .collect();
            let servers: Vec<u32> = hosts.iter().map(|&h| server_of_host[h as usize]).collect();
            let n = n as usize;
            for g in 0..groups as usize {
                moe_check_servers(&router, &servers[g * n..(g + 1) * n])
                    .map_err(|msg| err("moe_max_servers", msg))?;
            }
            JobWork::Moe(Box::new(moe::MoeModel {
                router,
                servers,
                runs,
                seed,
                ..m
            }))
        }
        WorkloadKind::Fsdp => {
            let base = match &w.model {
                None => None,
                Some(m) => Some(collective::preset(m).ok_or_else(|| {
                    err(
                        "model",
                        format!(
                            "unknown model `{m}`; presets: {}",
                            collective::preset_names().join(", ")
                        ),
                    )
                })?),
            };
            let layers = w.layers.or(base.map(|b| b.layers));
            let bytes = w.layer_bytes.or(base.map(|b| b.layer_bytes));
            let compute = match w.compute_us_per_layer {
                Some(us) if us.is_finite() && (0.0..1e12).contains(&us) => {
                    Some(SimTime::from_us_f64(us))
                }
                Some(_) => {
                    return Err(err(
                        "compute_us_per_layer",
                        "must be a non-negative number of microseconds".into(),
                    ))
                }
                None => base.map(|b| b.compute_per_layer),
            };
            let missing = |k: &str| err(k, "fsdp needs it (or a `model` preset)".into());
            let layers = layers.ok_or_else(|| missing("layers"))?;
            let layer_bytes = bytes.ok_or_else(|| missing("layer_bytes"))?;
            let compute = compute.ok_or_else(|| missing("compute_us_per_layer"))?;
            if layers == 0 {
                return Err(err("layers", "must be at least 1".into()));
            }
            if layer_bytes == 0 {
                return Err(err("layer_bytes", "must be positive".into()));
            }
            limits::check_message(layer_bytes, payload).map_err(|m| err("layer_bytes", m))?;
            // Every layer's compute, one after another, from the start.
            let series = (layers as u128 * iterations as u128)
                .saturating_mul(compute.ps() as u128)
                .saturating_add(start.ps() as u128);
            if series >= limits::TIME_PS as u128 {
                return Err(err(
                    "compute_us_per_layer",
                    format!(
                        "{layers} layers x {iterations} iteration(s) of {} us of compute are \
                         {:.3e} s of simulated time in series, past the {} ps (about 53 days) a \
                         run may simulate",
                        compute.as_us(),
                        series as f64 / 1e12,
                        limits::TIME_PS
                    ),
                ));
            }
            JobWork::Fsdp(collective::FsdpModel {
                layers,
                layer_bytes,
                compute_per_layer: compute,
            })
        }
        kind => JobWork::Collective {
            algo: match kind {
                WorkloadKind::RingAllreduce => Algo::RingAllreduce,
                WorkloadKind::RingReduceScatter => Algo::RingReduceScatter,
                WorkloadKind::RingAllgather => Algo::RingAllgather,
                WorkloadKind::HalvingDoublingAllreduce => Algo::HalvingDoublingAllreduce,
                WorkloadKind::HierarchicalAllreduce => Algo::HierarchicalAllreduce,
                WorkloadKind::Incast => Algo::Incast,
                WorkloadKind::Outcast => Algo::Outcast,
                _ => w
                    .all_to_all_algorithm
                    .unwrap_or(AllToAllAlgorithm::DEFAULT)
                    .algo(a2a_concurrency(w.all_to_all_concurrency, &err)?),
            },
            bytes: w.message_bytes,
        },
    };
    Ok((hosts, work, groups, iterations, start))
}

/// `all_to_all_concurrency` checked: positive (C); its default when unset.
fn a2a_concurrency(
    c: Option<u32>,
    err: &dyn Fn(&str, String) -> ConfigError,
) -> Result<u32, ConfigError> {
    match c {
        Some(0) => Err(err(
            "all_to_all_concurrency",
            "must be at least 1 (1 is `serial`)".into(),
        )),
        c => Ok(c.unwrap_or(crate::config::defaults::ALL_TO_ALL_CONCURRENCY)),
    }
}

/// `moe`'s keys checked: its router (servers still unknown) and the rest of its model (its
/// servers and seed still to be filled in).
fn moe_router(
    w: &WorkloadConfig,
    payload: u32,
    err: &dyn Fn(&str, String) -> ConfigError,
) -> Result<(moe::Router, moe::MoeModel), ConfigError> {
    use crate::config::defaults as d;
    let positive = |key: &str, v: Option<u32>, default: u32| match v.unwrap_or(default) {
        0 => Err(err(key, "must be at least 1".into())),
        x => Ok(x),
    };
    let tokens = positive(
        "moe_tokens_per_gpu",
        w.moe_tokens_per_gpu,
        d::MOE_TOKENS_PER_GPU,
    )?;
    let hidden = positive("moe_hidden", w.moe_hidden, d::MOE_HIDDEN)?;
    let dispatch = positive(
        "moe_dispatch_bytes_per_element",
        w.moe_dispatch_bytes_per_element,
        d::MOE_DISPATCH_BYTES_PER_ELEMENT,
    )?;
    let combine = positive(
        "moe_combine_bytes_per_element",
        w.moe_combine_bytes_per_element,
        d::MOE_COMBINE_BYTES_PER_ELEMENT,
    )?;
    let experts = positive("moe_experts", w.moe_experts, d::MOE_EXPERTS)?;
    if experts > limits::MOE_EXPERTS {
        return Err(err(
            "moe_experts",
            format!("{experts} experts; at most {}", limits::MOE_EXPERTS),
        ));
    }
    let top_k = positive("moe_top_k", w.moe_top_k, d::MOE_TOP_K)?;
    if top_k > experts {
        return Err(err(
            "moe_top_k",
            format!("{top_k} distinct experts per token, but there are only {experts} experts"),
        ));
    }
    let per_gpu = positive(
        "moe_experts_per_gpu",
        w.moe_experts_per_gpu,
        d::MOE_EXPERTS_PER_GPU,
    )?;
    if !experts.is_multiple_of(per_gpu) {
        return Err(err(
            "moe_experts_per_gpu",
            format!(
                "must divide moe_experts: {experts} experts do not split into GPUs of {per_gpu}"
            ),
        ));
    }
    if experts / per_gpu < 2 {
        return Err(err(
            "moe_experts_per_gpu",
            format!(
                "{experts} experts at {per_gpu} per GPU are one GPU: an expert-parallel group \
                 needs at least 2"
            ),
        ));
    }
    // The most one rank sends one other: every token, in the wider element.
    let most = (tokens as u64) * (hidden as u64) * (dispatch.max(combine) as u64);
    limits::check_message(most, payload).map_err(|m| {
        err(
            "moe_tokens_per_gpu",
            format!("a GPU's tokens all sent to one other GPU: {m}"),
        )
    })?;
    let popularity = w.moe_popularity.unwrap_or(MoePopularity::Uniform);
    if w.moe_zipf_exponent.is_some() && popularity != MoePopularity::Zipf {
        return Err(err(
            "moe_zipf_exponent",
            format!(
                "applies only to moe_popularity = \"zipf\" (it is \"{}\")",
                popularity.name()
            ),
        ));
    }
    if w.moe_expert_weights.is_some() && popularity != MoePopularity::Weights {
        return Err(err(
            "moe_expert_weights",
            format!(
                "applies only to moe_popularity = \"weights\" (it is \"{}\")",
                popularity.name()
            ),
        ));
    }
    let weights: Vec<f64> = match popularity {
        MoePopularity::Uniform => vec![1.0; experts as usize],
        MoePopularity::Zipf => {
            let s = w.moe_zipf_exponent.unwrap_or(d::MOE_ZIPF_EXPONENT);
            if !(s.is_finite() && (0.0..=1e3).contains(&s)) {
                return Err(err(
                    "moe_zipf_exponent",
                    format!("must be a non-negative number up to 1000, got {s}"),
                ));
            }
            // Expert e weighs 1 / (e+1)^s (a weight that underflows to zero is never drawn,
            // and too few left is refused below).
            (0..experts).map(|e| (e as f64 + 1.0).powf(-s)).collect()
        }
        MoePopularity::Weights => {
            let v = w.moe_expert_weights.clone().ok_or_else(|| {
                err(
                    "moe_expert_weights",
                    format!("moe_popularity = \"weights\" needs one weight per expert ({experts})"),
                )
            })?;
            if v.len() != experts as usize {
                return Err(err(
                    "moe_expert_weights",
                    format!("has {} weights; moe_experts is {experts}", v.len()),
                ));
            }
            if let Some(i) = v
                .iter()
                .position(|x| !(x.is_finite() && *x >= 0.0 && *x < 1e300))
            {
                return Err(err(
                    "moe_expert_weights",
                    format!(
                        "weight {i} is {}: weights must be non-negative numbers",
                        v[i]
                    ),
                ));
            }
            v
        }
    };
    let live = weights.iter().filter(|&&x| x > 0.0).count() as u32;
    if live < top_k {
        let key = match popularity {
            MoePopularity::Weights => "moe_expert_weights",
            _ => "moe_zipf_exponent",
        };
        return Err(err(
            key,
            format!("only {live} experts have a positive weight; each token needs {top_k}"),
        ));
    }
    let factor = w.moe_capacity_factor.unwrap_or(d::MOE_CAPACITY_FACTOR);
    if !(factor.is_finite() && (0.0..=1e6).contains(&factor)) {
        return Err(err(
            "moe_capacity_factor",
            format!("must be a non-negative number up to 1e6 (0: no cap), got {factor}"),
        ));
    }
    let n = (experts / per_gpu) as f64;
    let capacity = (factor > 0.0).then(|| {
        (factor * tokens as f64 * n * top_k as f64 / experts as f64)
            .ceil()
            .max(1.0) as u64
    });
    let us = |key: &str, v: Option<f64>, default: f64| match v.unwrap_or(default) {
        x if x.is_finite() && (0.0..1e12).contains(&x) => Ok(SimTime::from_us_f64(x)),
        _ => Err(err(
            key,
            "must be a non-negative number of microseconds".into(),
        )),
    };
    let compute = us("moe_compute_us", w.moe_compute_us, d::MOE_COMPUTE_US)?;
    let layer_gap = us("moe_layer_gap_us", w.moe_layer_gap_us, d::MOE_LAYER_GAP_US)?;
    let layers = positive("moe_layers", w.moe_layers, d::MOE_LAYERS)?;
    let router = moe::Router {
        tokens_per_gpu: tokens,
        experts,
        top_k,
        experts_per_gpu: per_gpu,
        weights,
        capacity,
        max_servers: w.moe_max_servers.unwrap_or(d::MOE_MAX_SERVERS),
    };
    let model = moe::MoeModel {
        router: router.clone(),
        hidden,
        dispatch_bytes_per_element: dispatch,
        combine_bytes_per_element: combine,
        compute,
        layer_gap,
        layers,
        backward: w.moe_backward.unwrap_or(d::MOE_BACKWARD),
        hierarchical: w.moe_hierarchical.unwrap_or(d::MOE_HIERARCHICAL),
        servers: Vec::new(),
        runs: Vec::new(),
        seed: 0,
    };
    Ok((router, model))
}

/// Whether a token of the group whose ranks sit on `servers` can always find its top_k
/// experts on at most max_servers servers: whatever servers its first draws land on (only
/// servers with a positive-weight expert can be drawn), the max_servers emptiest of them hold
/// at least top_k such experts.
fn moe_check_servers(r: &moe::Router, servers: &[u32]) -> Result<(), String> {
    if r.max_servers == 0 {
        return Ok(());
    }
    let mut per: std::collections::BTreeMap<u32, u32> = std::collections::BTreeMap::new();
    for (e, w) in r.weights.iter().enumerate() {
        if *w > 0.0 {
            *per.entry(servers[e / r.experts_per_gpu as usize])
                .or_default() += 1;
        }
    }
    if per.len() <= r.max_servers as usize {
        return Ok(());
    }
    let mut counts: Vec<u32> = per.into_values().collect();
    counts.sort_unstable();
    let least: u32 = counts[..r.max_servers as usize].iter().sum();
    if least >= r.top_k {
        return Ok(());
    }
    Err(format!(
        "{} server(s) may hold only {least} of the experts (with a positive weight) while a \
         token needs top_k = {}: the group's {} servers hold {:?} experts each",
        r.max_servers,
        r.top_k,
        counts.len(),
        counts
    ))
}

/// A uniformly random derangement (no host sends to itself), drawn by rejection.
pub fn permutation(hosts: u32, size: u64, seed: u64) -> Vec<FlowSpec> {
    permutation_stream(hosts, size, seed, 0)
}

/// As [`permutation`], from workload stream `index` (one per job).
fn permutation_stream(hosts: u32, size: u64, seed: u64, index: u64) -> Vec<FlowSpec> {
    let mut rng = rng_for(seed, Stream::Workload, index << 32);
    let mut dst: Vec<u32> = (0..hosts).collect();
    loop {
        dst.shuffle(&mut rng);
        if dst.iter().enumerate().all(|(i, d)| i as u32 != *d) {
            break;
        }
    }
    dst.iter()
        .enumerate()
        .map(|(s, d)| FlowSpec {
            src: HostId(s as u32),
            dst: HostId(*d),
            size_bytes: size,
            start: SimTime::ZERO,
        })
        .collect()
}

/// Every ordered pair of distinct hosts, all starting at time zero, in the `direct` order (each
/// host to 0, 1, 2, ...; the default `shifted` order is built by `collective::schedule`).
pub fn all_to_all(hosts: u32, size: u64) -> Vec<FlowSpec> {
    let mut v = Vec::with_capacity(hosts as usize * (hosts as usize - 1));
    for s in 0..hosts {
        for d in 0..hosts {
            if s != d {
                v.push(FlowSpec {
                    src: HostId(s),
                    dst: HostId(d),
                    size_bytes: size,
                    start: SimTime::ZERO,
                });
            }
        }
    }
    v
}

/// `placement` and `first_host` as collectives and traces read them: the first host only with
/// linear placement, and a host the topology has. An error is (key, message).
fn placement_and_first_host(
    w: &WorkloadConfig,
    topo: &Topology,
) -> Result<(Placement, u32), (&'static str, String)> {
    let first = w.first_host.unwrap_or(0);
    let placement = w.placement.unwrap_or(Placement::Linear);
    if w.first_host.is_some() && placement != Placement::Linear {
        return Err(("first_host", "applies only to placement `linear`".into()));
    }
    if first >= topo.hosts {
        return Err((
            "first_host",
            format!(
                "host {first} does not exist: the topology has {} hosts (0 to {})",
                topo.hosts,
                topo.hosts - 1
            ),
        ));
    }
    Ok((placement, first))
}

/// `start_us` as a time (absent: zero); None when it is not a non-negative finite number below
/// 10^12 us.
fn start_time(us: Option<f64>) -> Option<SimTime> {
    match us {
        None => Some(SimTime::ZERO),
        Some(us) if us.is_finite() && (0.0..1e12).contains(&us) => Some(SimTime::from_us_f64(us)),
        Some(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flows_identity_is_its_pair_and_its_number_among_that_pairs_flows() {
        let f = |s: u32, d: u32| FlowSpec {
            src: HostId(s),
            dst: HostId(d),
            size_bytes: 1,
            start: SimTime::ZERO,
        };
        let a = flow_identities(&[f(0, 1), f(2, 3), f(0, 1), f(1, 0)]);
        // Two flows between one pair differ; a reversed pair is another pair.
        assert_ne!(a[0], a[2]);
        assert_ne!(a[0], a[3]);
        // Listing other flows first, or dropping them, renames nobody: the first 0->1 is the
        // first wherever it sits.
        let b = flow_identities(&[f(1, 0), f(0, 1), f(5, 6), f(0, 1), f(2, 3)]);
        assert_eq!((b[1], b[3], b[4], b[0]), (a[0], a[2], a[1], a[3]));
        assert_eq!(flow_identities(&[f(0, 1)])[0], a[0]);
    }

    #[test]
    fn permutation_is_a_derangement_and_seeded() {
        let a = permutation(64, 1, 1);
        let b = permutation(64, 1, 1);
        let c = permutation(64, 1, 2);
        assert_eq!(a, b);
        assert_ne!(a, c);
        let mut seen = [false; 64];
        for f in &a {
            assert_ne!(f.src, f.dst);
            assert!(!seen[f.dst.idx()]);
            seen[f.dst.idx()] = true;
        }
    }

    #[test]
    fn all_to_all_counts() {
        assert_eq!(all_to_all(128, 1).len(), 16_256);
    }
}
