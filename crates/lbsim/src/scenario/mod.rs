//! Scenario configuration: the raw file (serde, every field documented with its unit in its name,
//! unknown keys rejected), `--set key.path=value` overrides, and validation into a built
//! [`Scenario`]. Errors name the file and line, or the key.

use serde::{Deserialize, Serialize};

use crate::config::{check, finite_nonneg, is_default, MIN_GBPS};
pub use crate::config::{defaults, limits, ConfigError, Origin};
use crate::failure::{self, FailureConfig, FailureSpec, LinkFailure};
use crate::ids::MAX_EVENT_ID;
use crate::lb;
pub use crate::lb::config::LoadBalancingConfig;
use crate::memory::{self, MemoryEstimate};
pub use crate::net::config::{PacketConfig, TopologyConfig, TopologyKind};
use crate::net::Topology;
use crate::stats::bound;
pub use crate::stats::telemetry::{TelemetryConfig, TelemetryFormat, TelemetryPlan};
use crate::time::SimTime;
pub use crate::transport::cc::{CcConfigs, CcKind};
pub use crate::transport::config::{EqdsConfig, TransportConfig};
pub use crate::transport::LossRecoveryKind;
pub use crate::workload::config::{AllToAllAlgorithm, TrafficSpec, WorkloadConfig, WorkloadKind};
use crate::workload::{self, Dependencies, FlowSpec};

mod build;
mod set;
use set::blame_sets;
pub use set::{apply_sets, parse_set, set_path};

/// A scenario file, as written by the user. `Default` is the built-in scenario: the study's
/// 128-host fat-tree (k=8, 800 Gb/s, 0.5 us links, 800 KB buffers) with a 2 MiB permutation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ScenarioFile {
    pub seed: u64,
    /// Threads one run uses (partitions of the fabric); results are the same for any count.
    /// Unset: every core for `lbsim run`, one per run inside sweeps.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub threads: Option<u32>,
    /// Stop the run here; flows unfinished by then are reported as such.
    pub end_time_us: Option<f64>,
    pub topology: TopologyConfig,
    pub packet: PacketConfig,
    pub transport: TransportConfig,
    pub load_balancing: LoadBalancingConfig,
    pub workload: WorkloadConfig,
    /// Routing's reaction to failures.
    #[serde(skip_serializing_if = "is_default")]
    pub failure: FailureConfig,
    /// `[[failures]]`: links that go down, degrade or turn flaky.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub failures: Vec<FailureSpec>,
    /// `[[jobs]]`: several workloads sharing the fabric, each with `[workload]`'s keys (its own
    /// placement and `start_us`); when present it replaces `[workload]`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub jobs: Vec<WorkloadConfig>,
    /// `[telemetry]`: time series of ports, flows and events (off by default).
    #[serde(skip_serializing_if = "is_default")]
    pub telemetry: TelemetryConfig,
}

impl Default for ScenarioFile {
    fn default() -> Self {
        ScenarioFile {
            seed: 1,
            threads: None,
            end_time_us: None,
            topology: TopologyConfig::default(),
            packet: PacketConfig::default(),
            transport: TransportConfig::default(),
            load_balancing: LoadBalancingConfig::default(),
            workload: WorkloadConfig::default(),
            failure: FailureConfig::default(),
            failures: Vec::new(),
            jobs: Vec::new(),
            telemetry: TelemetryConfig::default(),
        }
    }
}

impl ScenarioFile {
    /// Reads a scenario from TOML text plus overrides.
    pub fn from_toml(text: &str, sets: &[String], origin: &Origin) -> Result<Self, ConfigError> {
        // Deserialize the text itself first: toml's errors then carry the line and column.
        let file: ScenarioFile = toml::from_str(text).map_err(|e| ConfigError::Parse {
            origin: origin.name.clone(),
            msg: serde_msg(e.to_string()),
        })?;
        if sets.is_empty() {
            return Ok(file);
        }
        let mut table: toml::Table = toml::from_str(text).map_err(|e| ConfigError::Parse {
            origin: origin.name.clone(),
            msg: e.to_string(),
        })?;
        apply_sets(&mut table, sets)?;
        Self::from_table(table, origin, "after --set").map_err(|e| blame_sets(e, sets))
    }

    /// The built-in default with overrides.
    pub fn builtin(sets: &[String]) -> Result<Self, ConfigError> {
        Self::from_toml("", sets, &Origin::builtin())
    }

    pub fn from_table(
        table: toml::Table,
        origin: &Origin,
        when: &str,
    ) -> Result<Self, ConfigError> {
        serde_path_to_error::deserialize(toml::Value::Table(table)).map_err(|e| {
            let path = e.path().to_string();
            ConfigError::Invalid {
                origin: format!("{} ({when})", origin.name),
                key: path,
                msg: serde_msg(e.into_inner().to_string()),
            }
        })
    }

    pub fn to_toml(&self) -> String {
        toml::to_string(self).expect("scenario serializes")
    }

    pub fn scheme(&self) -> Result<&'static lb::SchemeInfo, String> {
        lb::scheme(&self.load_balancing.scheme).ok_or_else(|| {
            format!(
                "unknown scheme `{}`; valid schemes: {}",
                self.load_balancing.scheme,
                lb::scheme_names().join(", ")
            )
        })
    }
}

/// A deserializer's message without the trailing "in `key`" line (the error names the key
/// already), and with the fix for a float given to an integer key.
fn serde_msg(msg: String) -> String {
    let mut m = msg.trim_end().to_string();
    if let Some((head, last)) = m.rsplit_once('\n') {
        if last.starts_with("in `") {
            m = head.trim_end().to_string();
        }
    }
    if m.contains("invalid type: floating point") && m.contains("expected u") {
        m.push_str(" (the key takes a whole number; TOML reads 1e15 and 4.0 as floats)");
    }
    m
}

/// A validated scenario: the topology built and the flows generated.
#[derive(Clone, Debug)]
pub struct Scenario {
    pub file: ScenarioFile,
    pub scheme: &'static lb::SchemeInfo,
    pub topology: Topology,
    pub flows: Vec<FlowSpec>,
    /// Each flow's id for flows.csv (see [`Scenario::flow_id`]): a connection matrix's own ids,
    /// empty for generated workloads.
    pub flow_ids: Vec<u64>,
    /// How flows wait on each other (empty for single-shot workloads).
    pub deps: Dependencies,
    /// Which flows belong to which job and collective (empty for traces).
    pub labels: workload::collective::Labels,
    pub ecn_threshold_bytes: u64,
    /// The run stops here (`end_time_us`; with failures and no cap, 20 x the lower bound, so
    /// a flow pinned to a dead path cannot run forever).
    pub end_time: Option<SimTime>,
    pub failures: Vec<LinkFailure>,
    /// The study's G; None = routing never converges.
    pub convergence: Option<SimTime>,
    /// A flow that hears no ACK for this long tells its host policy (`on_timeout`).
    pub rto: SimTime,
    /// What telemetry samples (None: off).
    pub telemetry: Option<TelemetryPlan>,
    /// Everything else the simulation reads, resolved once with every default applied: the
    /// simulation never reads `file`.
    pub settings: Settings,
}

/// The scenario's settings as the simulation reads them: typed, validated, defaulted.
#[derive(Clone, Debug)]
pub struct Settings {
    pub seed: u64,
    /// `threads` (None: the front end's default).
    pub threads: Option<u32>,
    pub packet: PacketConfig,
    /// Drop-tail buffer of every switch egress port.
    pub buffer_bytes: u64,
    /// Priority ports: bytes of control packets a switch port holds (`control_buffer_bytes`,
    /// default the buffer).
    pub control_buffer_bytes: u64,
    /// What is left of a trimmed packet.
    pub trim_header_bytes: u32,
    /// Trimming: a header meeting a full control queue goes back to its sender (once).
    pub return_to_sender: bool,
    /// PFC on the data class: (XOFF, XON) in bytes held from one input port.
    pub pfc: Option<(u64, u64)>,
    /// RED marking: Kmax and the probability there (None: step marking at the threshold).
    pub red: Option<(u64, f64)>,
    pub rate_coef: f64,
    pub failure_aware_rate: bool,
    pub loss_recovery: LossRecoveryKind,
    pub cc: CcKind,
    pub ccs: CcConfigs,
    pub eqds: EqdsConfig,
    /// DCQCN: a receiver's least gap between congestion notifications of a flow.
    pub cnp_interval: SimTime,
    pub erasure_extra_packets: u32,
    pub reorder_threshold: u32,
    /// RACK-TLP's tail-loss probe (`transport.tail_loss_probe`, defaulted per CC and LR).
    pub tail_loss_probe: bool,
    pub rto_backoff: bool,
    pub load_balancing: LoadBalancingConfig,
    /// summary.json's `workload` and `topology` labels; `[[jobs]]` are labelled by their kinds
    /// in file order, joined by `+` (`[workload]` does not run then).
    pub workload_label: String,
    pub topology_label: String,
}

impl Settings {
    /// Flows keep loss-recovery and CC state: anything but the idealized stack (ideal erasure
    /// at a constant rate), which needs neither.
    pub fn reliable(&self) -> bool {
        self.loss_recovery != LossRecoveryKind::IdealErasure || self.cc != CcKind::Constant
    }

    /// Ports put control packets ahead of data, in a buffer of their own (trimming, EQDS, and
    /// PFC, whose control class is never paused).
    pub fn priority_ports(&self) -> bool {
        self.loss_recovery == LossRecoveryKind::Trim
            || self.cc == CcKind::Eqds
            || self.pfc.is_some()
    }

    fn resolve(file: &ScenarioFile, topology: &Topology) -> Settings {
        let t = &file.topology;
        let tr = &file.transport;
        // An imported graph gives its own rates (its label names the file).
        let topology_label = match t.simai_topo {
            Some(_) => topology.describe().to_string(),
            None => format!("{} {}G", topology.describe(), t.link_gbps),
        };
        Settings {
            seed: file.seed,
            threads: file.threads,
            packet: file.packet.clone(),
            buffer_bytes: t.buffer_bytes,
            control_buffer_bytes: t.control_buffer_bytes.unwrap_or(t.buffer_bytes),
            trim_header_bytes: t.trim_header_bytes.unwrap_or(defaults::TRIM_HEADER_BYTES),
            return_to_sender: t.return_to_sender.unwrap_or(defaults::RETURN_TO_SENDER),
            pfc: t.pfc.then(|| {
                let mtu = (file.packet.payload_bytes + file.packet.header_bytes) as u64;
                t.pfc_thresholds(t.pfc_headroom_for(&file.packet), mtu)
            }),
            red: t
                .ecn_kmax_bytes
                .map(|k| (k, t.ecn_pmax.unwrap_or(defaults::ECN_PMAX))),
            rate_coef: tr.rate_coef,
            failure_aware_rate: tr.failure_aware_rate,
            loss_recovery: tr.loss_recovery,
            cc: tr.cc,
            ccs: tr.cc_configs(),
            eqds: tr.eqds.clone(),
            cnp_interval: SimTime::from_us_f64(tr.dcqcn.cnp_interval_us()),
            erasure_extra_packets: tr
                .erasure_extra_packets
                .unwrap_or(defaults::ERASURE_EXTRA_PACKETS),
            reorder_threshold: tr.reorder_threshold.unwrap_or(defaults::REORDER_THRESHOLD),
            tail_loss_probe: tr.tail_loss_probe.unwrap_or_else(|| {
                crate::transport::config::default_tail_loss_probe(tr.cc, tr.loss_recovery)
            }),
            rto_backoff: tr.rto_backoff,
            load_balancing: file.load_balancing.clone(),
            workload_label: if file.jobs.is_empty() {
                file.workload.kind.name().to_string()
            } else {
                let kinds: Vec<&str> = file.jobs.iter().map(|j| j.kind.name()).collect();
                kinds.join("+")
            },
            topology_label,
        }
    }
}

impl Scenario {
    /// Flow `i`'s id in flows.csv: its id in the connection matrix, or `i` for generated
    /// workloads.
    pub fn flow_id(&self, i: usize) -> u64 {
        self.flow_ids.get(i).copied().unwrap_or(i as u64)
    }
}

impl ScenarioFile {
    /// The same scenario with every unset option that applies to it given its default value,
    /// so that it can be printed in full (`lbsim show`) and read back to the same run. Options
    /// that do not apply (another scheme's, another loss recovery's) stay unset: giving them is
    /// an error.
    pub fn effective(&self) -> ScenarioFile {
        use defaults::*;
        let mut f = self.clone();
        let lr = f.transport.loss_recovery;
        let t = &mut f.topology;
        t.ecn_threshold_bytes = Some(t.ecn_threshold());
        if t.ecn_kmax_bytes.is_some() {
            t.ecn_pmax.get_or_insert(ECN_PMAX);
        }
        if lr == LossRecoveryKind::Trim {
            t.trim_header_bytes.get_or_insert(TRIM_HEADER_BYTES);
            t.return_to_sender.get_or_insert(RETURN_TO_SENDER);
        }
        if lr == LossRecoveryKind::Trim || f.transport.cc == CcKind::Eqds || t.pfc {
            t.control_buffer_bytes.get_or_insert(t.buffer_bytes);
        }
        if t.pfc {
            let mtu = (f.packet.payload_bytes + f.packet.header_bytes) as u64;
            let (xoff, xon) = t.pfc_thresholds(t.pfc_headroom_for(&f.packet), mtu);
            t.pfc_xoff_bytes = Some(xoff);
            t.pfc_xon_bytes = Some(xon);
        }
        let tr = &mut f.transport;
        tr.rto_us.get_or_insert(RTO_US);
        if lr == LossRecoveryKind::Erasure {
            tr.erasure_extra_packets
                .get_or_insert(ERASURE_EXTRA_PACKETS);
        }
        if !matches!(lr, LossRecoveryKind::GoBackN | LossRecoveryKind::Trim) {
            tr.reorder_threshold.get_or_insert(REORDER_THRESHOLD);
        }
        let tlp = crate::transport::config::default_tail_loss_probe(tr.cc, lr);
        tr.tail_loss_probe.get_or_insert(tlp);
        if let Some(scheme) = lb::scheme(&f.load_balancing.scheme) {
            f.load_balancing.fill_defaults(scheme);
        }
        for w in std::iter::once(&mut f.workload).chain(f.jobs.iter_mut()) {
            if w.kind == WorkloadKind::AllToAll {
                let a = *w
                    .all_to_all_algorithm
                    .get_or_insert(AllToAllAlgorithm::DEFAULT);
                if a == AllToAllAlgorithm::Limited {
                    w.all_to_all_concurrency
                        .get_or_insert(crate::config::defaults::ALL_TO_ALL_CONCURRENCY);
                }
            }
            if w.kind == WorkloadKind::Moe {
                w.fill_moe_defaults();
            }
            if w.kind == WorkloadKind::Training {
                w.fill_training_defaults();
            }
        }
        f
    }
}

impl ScenarioFile {
    /// The parts of the file that decide the traffic.
    pub fn traffic(&self) -> TrafficSpec<'_> {
        TrafficSpec {
            topology: &self.topology,
            packet: &self.packet,
            workload: &self.workload,
            jobs: &self.jobs,
            seed: self.seed,
        }
    }

    /// The run's memory, estimated before anything is built (`None` for a connection matrix,
    /// whose size is known only once read: estimate the built scenario).
    pub fn memory_estimate(&self) -> Option<MemoryEstimate> {
        memory::estimate(&self.traffic())
    }
}

impl Scenario {
    /// The run's memory, estimated from the built scenario (flows generated, state not).
    pub fn memory_estimate(&self) -> MemoryEstimate {
        let payload = self.file.packet.payload_bytes.max(1) as u128;
        let data: u128 = self
            .flows
            .iter()
            .map(|f| (f.size_bytes as u128).div_ceil(payload))
            .sum();
        let ports = self.topology.links.len() as u128;
        let switch_ports = self.topology.switch_ports().len() as u128;
        MemoryEstimate::new(
            self.flows.len() as u128,
            ports,
            switch_ports,
            &self.file.traffic(),
            data,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_text_is_the_default() {
        let f = ScenarioFile::from_toml("", &[], &Origin::builtin()).unwrap();
        assert_eq!(f, ScenarioFile::default());
    }

    #[test]
    fn sets_override_nested_keys_with_typed_values() {
        let sets = vec![
            "topology.k=4".to_string(),
            "load_balancing.scheme=host_spray".to_string(),
            "workload.kind=\"all_to_all\"".to_string(),
        ];
        let f = ScenarioFile::builtin(&sets).unwrap();
        assert_eq!(f.topology.k, 4);
        assert_eq!(f.load_balancing.scheme, "host_spray");
        assert_eq!(f.workload.kind, WorkloadKind::AllToAll);
    }

    #[test]
    fn a_set_into_a_value_names_its_type_without_echoing_it() {
        // A value of 300 quotes: echoing it through the TOML writer overflowed its quote counter
        // (a panic with overflow checks, as the fuzz build has), and made a 300-byte message.
        let text = format!("seed = 1\n[workload]\npath = '{}'\n", "\"".repeat(300));
        let e = ScenarioFile::from_toml(&text, &["workload.path.x=1".into()], &Origin::builtin())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("`workload.path` is a string") && e.len() < 200,
            "{e}"
        );
        let text = "[topology]\nk = 8\n";
        let e = ScenarioFile::from_toml(text, &["topology.k.x=1".into()], &Origin::builtin())
            .unwrap_err()
            .to_string();
        assert!(e.contains("`topology.k` is an integer (8)"), "{e}");
    }

    #[test]
    fn unknown_keys_and_bad_types_name_the_key() {
        let e = ScenarioFile::from_toml("[topology]\nkk = 3\n", &[], &Origin::builtin())
            .unwrap_err()
            .to_string();
        assert!(e.contains("kk") && e.contains("line 2"), "{e}");
        let e = ScenarioFile::builtin(&["topology.k=\"x\"".into()])
            .unwrap_err()
            .to_string();
        assert!(e.contains("topology.k"), "{e}");
        let e = ScenarioFile::builtin(&["topology.nope=1".into()])
            .unwrap_err()
            .to_string();
        assert!(e.contains("nope"), "{e}");
    }

    #[test]
    fn sets_index_into_arrays_of_tables() {
        let text = "[[failures]]\nkind = \"down\"\nrandom_fraction = 0.01\n";
        let f = ScenarioFile::from_toml(
            text,
            &["failures.0.random_fraction=0.05".into()],
            &Origin::builtin(),
        )
        .unwrap();
        assert_eq!(f.failures[0].random_fraction, Some(0.05));
        let e = ScenarioFile::from_toml(text, &["failures.3.at_us=1".into()], &Origin::builtin())
            .unwrap_err()
            .to_string();
        assert!(e.contains("out of range"), "{e}");
        let e = ScenarioFile::from_toml(text, &["failures.kind=down".into()], &Origin::builtin())
            .unwrap_err()
            .to_string();
        assert!(e.contains("index it"), "{e}");
    }

    #[test]
    fn odd_k_is_rejected() {
        let f = ScenarioFile::builtin(&["topology.k=5".into()]).unwrap();
        let e = Scenario::build(f, &Origin::builtin())
            .unwrap_err()
            .to_string();
        assert!(e.contains("topology.k") && e.contains("even"), "{e}");
    }

    #[test]
    fn scheme_options_are_rejected_for_schemes_that_do_not_read_them() {
        let err = |sets: &[&str]| {
            let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
            let f = ScenarioFile::builtin(&sets).unwrap();
            Scenario::build(f, &Origin::builtin()).map(|_| ())
        };
        let e = err(&["load_balancing.subflows=8"]).unwrap_err().to_string();
        assert!(
            e.contains("load_balancing.subflows") && e.contains("subflow") && e.contains("ecmp"),
            "{e}"
        );
        let e = err(&[
            "load_balancing.scheme=plb",
            "load_balancing.flowlet_gap_us=5",
        ])
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("flowlet_gap_us") && e.contains("flowlet_ar"),
            "{e}"
        );
        assert!(err(&["load_balancing.scheme=subflow", "load_balancing.subflows=8"]).is_ok());
        let e = err(&["load_balancing.scheme=subflow", "load_balancing.subflows=0"])
            .unwrap_err()
            .to_string();
        assert!(e.contains("load_balancing.subflows"), "{e}");
        let e = err(&[
            "load_balancing.scheme=plb",
            "load_balancing.plb_congested_fraction=1.5",
        ])
        .unwrap_err()
        .to_string();
        assert!(e.contains("plb_congested_fraction"), "{e}");
        assert!(err(&[
            "load_balancing.scheme=switch_ar",
            "load_balancing.ar_refresh_ns=100"
        ])
        .is_ok());
    }

    #[test]
    fn unknown_scheme_lists_valid_ones() {
        let f = ScenarioFile::builtin(&["load_balancing.scheme=magic".into()]).unwrap();
        let e = Scenario::build(f, &Origin::builtin())
            .unwrap_err()
            .to_string();
        assert!(e.contains("magic") && e.contains("host_spray"), "{e}");
    }
}
