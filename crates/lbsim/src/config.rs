//! What every layer's configuration shares: the error for bad user input and where the input
//! came from, the validation helpers, and every option's default and cap in one place (`lbsim
//! show` prints the defaults from here). The lowest layer: it imports nothing of the crate.

use std::path::{Path, PathBuf};

/// An error in user input: a scenario, an override, or a trace file.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{origin}: {msg}")]
    Parse { origin: String, msg: String },
    #[error("{origin}: key `{key}`: {msg}")]
    Invalid {
        origin: String,
        key: String,
        msg: String,
    },
    #[error("--set {arg}: {msg}")]
    Set { arg: String, msg: String },
    #[error("{path}:{line}: {msg}")]
    Trace {
        path: String,
        line: usize,
        msg: String,
    },
    #[error("{path}: {msg}")]
    Io { path: String, msg: String },
}

/// Where a scenario came from, for error messages and relative paths.
#[derive(Clone, Debug)]
pub struct Origin {
    pub name: String,
    pub dir: Option<PathBuf>,
    /// The `--set` overrides applied on top: an error about a key one of them set names that
    /// `--set`, not the file.
    pub sets: Vec<String>,
}

impl Origin {
    pub fn builtin() -> Origin {
        Origin::named("built-in default scenario", None)
    }
    pub fn file(path: &Path) -> Origin {
        Origin::named(
            &path.display().to_string(),
            path.parent().map(Path::to_path_buf),
        )
    }
    /// A scenario called `name` whose relative paths resolve against `dir`.
    pub fn named(name: &str, dir: Option<PathBuf>) -> Origin {
        Origin {
            name: name.to_string(),
            dir,
            sets: Vec::new(),
        }
    }
    /// The same origin with the `--set` overrides that were applied to it.
    pub fn with_sets(mut self, sets: &[String]) -> Origin {
        self.sets = sets.to_vec();
        self
    }
}

pub fn check(ok: bool, origin: &Origin, key: &str, msg: &str) -> Result<(), ConfigError> {
    if ok {
        Ok(())
    } else {
        Err(invalid(origin, key, msg))
    }
}

/// The error for `key` of the file `origin` names.
pub fn invalid(origin: &Origin, key: impl Into<String>, msg: impl Into<String>) -> ConfigError {
    ConfigError::Invalid {
        origin: origin.name.clone(),
        key: key.into(),
        msg: msg.into(),
    }
}

/// The slowest link rate, in Gb/s: 1 kb/s (a rate rounds to whole bits per second).
pub const MIN_GBPS: f64 = 1e-6;

pub fn finite_nonneg(x: f64) -> bool {
    x.is_finite() && x >= 0.0
}

/// The defaults of options left unset in a scenario file, in one place (`lbsim show` prints
/// them through [`ScenarioFile::effective`]).
pub mod defaults {
    /// `transport.rto_us`: the Ultra Ethernet floor.
    pub const RTO_US: f64 = 100.0;
    /// `topology.ecn_threshold_bytes` = the buffer / this (20%).
    pub const ECN_THRESHOLD_DIVISOR: u64 = 5;
    /// `topology.ecn_pmax` (with `ecn_kmax_bytes`).
    pub const ECN_PMAX: f64 = 1.0;
    /// `topology.trim_header_bytes`.
    pub const TRIM_HEADER_BYTES: u32 = 64;
    /// `topology.return_to_sender`: NDP returns a header that meets a full header queue to its
    /// sender (Handley et al., SIGCOMM 2017, section 3.2).
    pub const RETURN_TO_SENDER: bool = true;
    /// `topology.pfc_xon_bytes` = XOFF less this many MTUs. `pfc_xoff_bytes` defaults to the
    /// buffer less the headroom (`TopologyConfig::pfc_headroom`: 2 x cable delay x rate + 2
    /// MTU, the IEEE 802.1Qbb guidance for lossless headroom), the latest a switch can pause
    /// without loss; XON two frames below keeps a pause from flapping on every departure.
    /// htsim fixes 15 and 12 MTU instead, which at 800 Gb/s and 0.5 us cables (100 KB in flight
    /// per round trip) pauses long before a buffer fills.
    pub const PFC_XON_MTUS: u64 = 2;
    /// `transport.erasure_extra_packets`: the study's k.
    pub const ERASURE_EXTRA_PACKETS: u32 = 25;
    /// `transport.reorder_threshold`: SACK's.
    pub const REORDER_THRESHOLD: u32 = 3;
    /// `end_time_us` with failures and none given: this many times the lower bound, so a flow
    /// pinned to a dead path cannot run forever (the study's runs end well inside it).
    pub const FAILURE_END_TIME_BOUNDS: u64 = 20;
    /// The most links on any path of the fabrics lbsim builds (host-ToR-agg-core-agg-ToR-host).
    pub const MAX_PATH_LINKS: u64 = 6;
    /// `workload.moe_*` (kind `moe`): one small layer that runs on the default fabric in about
    /// a second: 64 routed experts, 4 per GPU (an expert-parallel group of 16 GPUs), each token
    /// to 8 of them, DeepSeek-V3's hidden size, FP8 dispatch and BF16 combine, forward and
    /// backward, no compute (communication only) and no capacity or server limit.
    pub const MOE_TOKENS_PER_GPU: u32 = 1024;
    pub const MOE_HIDDEN: u32 = 7168;
    pub const MOE_DISPATCH_BYTES_PER_ELEMENT: u32 = 1;
    pub const MOE_COMBINE_BYTES_PER_ELEMENT: u32 = 2;
    pub const MOE_EXPERTS: u32 = 64;
    pub const MOE_TOP_K: u32 = 8;
    pub const MOE_EXPERTS_PER_GPU: u32 = 4;
    /// `workload.moe_zipf_exponent` with `moe_popularity = "zipf"`.
    pub const MOE_ZIPF_EXPONENT: f64 = 1.0;
    /// `workload.moe_capacity_factor`: 0, no cap (no token is dropped).
    pub const MOE_CAPACITY_FACTOR: f64 = 0.0;
    /// `workload.moe_max_servers`: 0, a token's experts on any number of servers.
    pub const MOE_MAX_SERVERS: u32 = 0;
    pub const MOE_COMPUTE_US: f64 = 0.0;
    pub const MOE_LAYER_GAP_US: f64 = 0.0;
    pub const MOE_LAYERS: u32 = 1;
    pub const MOE_BACKWARD: bool = true;
    /// `workload.moe_hierarchical`: every GPU sends to every GPU direct.
    pub const MOE_HIERARCHICAL: bool = false;
    /// `workload.all_to_all_concurrency` under `all_to_all_algorithm = "limited"`: ours, not a
    /// library's (NCCL's effective count follows its peer-to-peer channels,
    /// NCCL_MAX_P2P_NCHANNELS over NCCL_NCHANNELS_PER_NET_PEER, and varies by version).
    pub const ALL_TO_ALL_CONCURRENCY: u32 = 8;
    /// `workload.pxn_chunk_bytes`: NCCL's NCCL_P2P_NET_CHUNKSIZE default, 128 KiB.
    pub const PXN_CHUNK_BYTES: u64 = 131072;
    /// `workload.training_tp`, `training_pp`, `training_dp`: a small layout (8 ranks).
    pub const TRAINING_TP: u32 = 2;
    pub const TRAINING_PP: u32 = 2;
    pub const TRAINING_DP: u32 = 2;
    /// `workload.training_micro_batch`: sequences per micro-batch.
    pub const TRAINING_MICRO_BATCH: u32 = 1;
    /// `workload.training_micro_batches`: per iteration per pipeline.
    pub const TRAINING_MICRO_BATCHES: u32 = 4;
    /// `workload.training_bytes_per_element`: BF16.
    pub const TRAINING_BYTES_PER_ELEMENT: u32 = 2;
    /// `workload.training_tflops`: achieved BF16 TFLOP/s per H100, as Llama 3's pre-training
    /// reports (380 to 430 TFLOP/s per GPU, 38-43% of the 989 dense peak; Dubey et al. 2024,
    /// Table 4).
    pub const TRAINING_TFLOPS: f64 = 400.0;
    /// `workload.training_fsdp`.
    pub const TRAINING_FSDP: bool = false;
}

/// Caps on what a scenario may ask for, so that no count, sum or time the simulator keeps can
/// overflow its integer; past them a scenario is refused with an error naming the key (or the
/// connection matrix's line).
pub mod limits {
    /// `workload.channels`: NCCL's own ceiling on channels (MAXCHANNELS) is 64.
    pub const CHANNELS: u32 = 64;
    /// Data packets in one message (`packet.payload_bytes` each): sequence numbers and
    /// transmission counters are 32-bit, and retransmissions and repairs need room above the
    /// message. 4 TiB at the default 4096-byte payload.
    pub const MESSAGE_PACKETS: u64 = 1 << 30;
    /// Simulated time in picoseconds (2^62, about 53 days). A start time or trigger delay must
    /// stay below it, and so must the whole workload counted in series: the latest start, plus
    /// every trigger delay, plus all the data at the host link rate.
    pub const TIME_PS: u64 = 1 << 62;
    /// `workload.moe_experts`: routed experts per layer.
    pub const MOE_EXPERTS: u32 = 1 << 16;
    /// Expert draws a `moe` workload makes (tokens per GPU x ranks x top_k x layers x
    /// iterations x groups): each is a few random numbers, so this bounds the generator's time
    /// (a minute or so) before any flow exists.
    pub const MOE_DRAWS: u64 = 1 << 32;
    /// Expert draws of one layer of one group (tokens per GPU x ranks x top_k): the generator
    /// holds them all to admit tokens by capacity, 5 bytes each (1.3 GB here).
    pub const MOE_LAYER_DRAWS: u64 = 1 << 28;
    /// Chakra nodes a `training` workload generates over all ranks (a few hundred bytes each
    /// while generated and replayed).
    pub const TRAINING_NODES: u64 = 1 << 24;

    /// `bytes` as one message of `payload`-byte packets: within [`MESSAGE_PACKETS`], or why not.
    pub fn check_message(bytes: u64, payload: u32) -> Result<(), String> {
        let packets = bytes.div_ceil(payload.max(1) as u64);
        if packets <= MESSAGE_PACKETS {
            return Ok(());
        }
        Err(format!(
            "{bytes} bytes is {packets} packets of packet.payload_bytes = {payload}; a message \
             may have at most {MESSAGE_PACKETS} packets ({} bytes at this payload)",
            MESSAGE_PACKETS * payload as u64
        ))
    }

    /// A time in picoseconds within [`TIME_PS`], or why not.
    pub fn check_time(ps: u64) -> Result<(), String> {
        if ps < TIME_PS {
            Ok(())
        } else {
            Err(format!(
                "{ps} ps is past the {TIME_PS} ps (about 53 days) a run may simulate"
            ))
        }
    }
}

/// Whether a section equals its default (so that `show` and the writers can leave it out).
pub fn is_default<T: Default + PartialEq>(t: &T) -> bool {
    *t == T::default()
}
