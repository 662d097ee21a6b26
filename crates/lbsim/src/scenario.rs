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
use crate::net::{LinkParams, Topology};
use crate::stats::bound;
use crate::time::{BitsPerSec, SimTime};
pub use crate::transport::cc::{CcConfigs, CcKind};
pub use crate::transport::config::{EqdsConfig, TransportConfig};
pub use crate::transport::LossRecoveryKind;
pub use crate::workload::config::{AllToAllAlgorithm, TrafficSpec, WorkloadConfig, WorkloadKind};
use crate::workload::{self, Dependencies, FlowSpec};

/// A scenario file, as written by the user. `Default` is the built-in scenario: the study's
/// 128-host fat-tree (k=8, 800 Gb/s, 0.5 us links, 800 KB buffers) with a 2 MiB permutation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ScenarioFile {
    pub seed: u64,
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
}

impl Default for ScenarioFile {
    fn default() -> Self {
        ScenarioFile {
            seed: 1,
            end_time_us: None,
            topology: TopologyConfig::default(),
            packet: PacketConfig::default(),
            transport: TransportConfig::default(),
            load_balancing: LoadBalancingConfig::default(),
            workload: WorkloadConfig::default(),
            failure: FailureConfig::default(),
            failures: Vec::new(),
            jobs: Vec::new(),
        }
    }
}

/// Re-attributes an error about a key to the last `--set` that set it (or a section holding
/// it): the value came from the command line, not from the file. Keys are compared in `--set`
/// form (`failures[0].at_us` is `failures.0.at_us`).
fn blame_sets(e: ConfigError, sets: &[String]) -> ConfigError {
    let ConfigError::Invalid { key, msg, .. } = &e else {
        return e;
    };
    let dotted = key.replace('[', ".").replace(']', "");
    for arg in sets.iter().rev() {
        let Ok((path, _)) = parse_set(arg) else {
            continue;
        };
        let set = path.join(".");
        if dotted == set || dotted.starts_with(&format!("{set}.")) {
            let msg = if dotted == set {
                msg.clone()
            } else {
                format!("key `{key}`: {msg}")
            };
            return ConfigError::Set {
                arg: arg.clone(),
                msg,
            };
        }
    }
    e
}

/// Parses one `key.path=value` override. The value is read as a TOML value (number, bool, string,
/// array); anything that is not valid TOML is taken as a bare string.
pub fn parse_set(arg: &str) -> Result<(Vec<String>, toml::Value), ConfigError> {
    let err = |msg: &str| ConfigError::Set {
        arg: arg.to_string(),
        msg: msg.to_string(),
    };
    let (key, value) = arg
        .split_once('=')
        .ok_or_else(|| err("expected key.path=value"))?;
    let key = key.trim();
    if key.is_empty() || key.split('.').any(|p| p.trim().is_empty()) {
        return Err(err("empty key"));
    }
    let value = value.trim();
    let parsed = match toml::from_str::<toml::Table>(&format!("v = {value}"))
        .ok()
        .and_then(|mut t| t.remove("v"))
    {
        // `1e15` on a command line means the number: an integer key takes it as one.
        Some(toml::Value::Float(x))
            if value.contains(['e', 'E']) && x.fract() == 0.0 && x.abs() <= (1u64 << 53) as f64 =>
        {
            toml::Value::Integer(x as i64)
        }
        Some(v) => v,
        None if is_integer_text(value) => {
            return Err(err(&format!(
                "{value} is past the largest integer a scenario holds ({})",
                i64::MAX
            )))
        }
        None => toml::Value::String(value.to_string()),
    };
    Ok((
        key.split('.').map(|s| s.trim().to_string()).collect(),
        parsed,
    ))
}

/// An integer as TOML writes one (sign, digits, underscores), whatever its size.
fn is_integer_text(v: &str) -> bool {
    let digits = v.strip_prefix(['+', '-']).unwrap_or(v);
    digits.starts_with(|c: char| c.is_ascii_digit())
        && digits.chars().all(|c| c.is_ascii_digit() || c == '_')
}

/// Applies overrides to a parsed TOML table (see [`set_path`] for how a path reaches into
/// lists).
pub fn apply_sets(table: &mut toml::Table, sets: &[String]) -> Result<(), ConfigError> {
    for arg in sets {
        let (path, value) = parse_set(arg)?;
        let parts: Vec<&str> = path.iter().map(String::as_str).collect();
        set_path(table, &parts, Some(value)).map_err(|msg| ConfigError::Set {
            arg: arg.clone(),
            msg,
        })?;
    }
    Ok(())
}

/// Sets the value at the dotted path `parts` in `table`, or removes the key when `value` is
/// `None`. A numeric part indexes a list: `failures.0.random_fraction` reaches into the first
/// `[[failures]]` entry. A missing key followed by a number is created as a list, and the index
/// one past the end appends an entry, so `failures.0.kind=down` adds a failure to a scenario that
/// has none; a larger index is an error naming the list.
pub fn set_path(
    table: &mut toml::Table,
    parts: &[&str],
    value: Option<toml::Value>,
) -> Result<(), String> {
    if parts.is_empty() || parts.iter().any(|p| p.is_empty()) {
        return Err("empty key part".into());
    }
    set_in_table(table, parts, 0, value)
}

fn set_in_table(
    t: &mut toml::Table,
    parts: &[&str],
    i: usize,
    value: Option<toml::Value>,
) -> Result<(), String> {
    if i + 1 == parts.len() {
        match value {
            None => t.remove(parts[i]),
            Some(v) => t.insert(parts[i].to_string(), v),
        };
        return Ok(());
    }
    let list = parts[i + 1].parse::<usize>().is_ok();
    if value.is_none() && !t.contains_key(parts[i]) {
        // Nothing to remove.
        return Ok(());
    }
    let next = t.entry(parts[i].to_string()).or_insert_with(|| {
        if list {
            toml::Value::Array(Vec::new())
        } else {
            toml::Value::Table(toml::Table::new())
        }
    });
    set_in_value(next, parts, i + 1, value)
}

/// `v` is the value at `parts[..i]`; sets `parts[i..]` inside it.
fn set_in_value(
    v: &mut toml::Value,
    parts: &[&str],
    i: usize,
    value: Option<toml::Value>,
) -> Result<(), String> {
    let here = parts[..i].join(".");
    match v {
        toml::Value::Table(t) => set_in_table(t, parts, i, value),
        toml::Value::Array(a) => {
            let part = parts[i];
            let idx: usize = part.parse().map_err(|_| {
                format!(
                    "`{here}` is a list: index it with a number, e.g. {here}.0.<key>, not `{part}`"
                )
            })?;
            if idx > a.len() {
                return Err(format!(
                    "index {idx} is out of range: `{here}` has {} entries (index {} appends one)",
                    a.len(),
                    a.len()
                ));
            }
            if i + 1 == parts.len() {
                let Some(value) = value else {
                    return Err(format!("`{here}.{part}`: a list entry cannot be unset"));
                };
                if idx == a.len() {
                    a.push(value);
                } else {
                    a[idx] = value;
                }
                return Ok(());
            }
            if idx == a.len() {
                a.push(toml::Value::Table(toml::Table::new()));
            }
            set_in_value(&mut a[idx], parts, i + 1, value)
        }
        other => Err(format!("`{here}` is a value (`{other}`), not a section")),
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
    /// Everything else the simulation reads, resolved once with every default applied: the
    /// simulation never reads `file`.
    pub settings: Settings,
}

/// The scenario's settings as the simulation reads them: typed, validated, defaulted.
#[derive(Clone, Debug)]
pub struct Settings {
    pub seed: u64,
    pub packet: PacketConfig,
    /// Drop-tail buffer of every switch egress port.
    pub buffer_bytes: u64,
    /// Priority ports: bytes of control packets a switch port holds (`control_buffer_bytes`,
    /// default the buffer).
    pub control_buffer_bytes: u64,
    /// What is left of a trimmed packet.
    pub trim_header_bytes: u32,
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
    pub rto_backoff: bool,
    pub load_balancing: LoadBalancingConfig,
    /// summary.json's `workload` and `topology` labels.
    pub workload_label: &'static str,
    pub topology_label: String,
}

impl Settings {
    fn resolve(file: &ScenarioFile, topology: &Topology) -> Settings {
        let t = &file.topology;
        let tr = &file.transport;
        let topology_label = match topology.shape {
            crate::net::Shape::FatTree { k } => format!("fat_tree k={k} {}G", t.link_gbps),
            crate::net::Shape::LeafSpine {
                hosts_per_leaf,
                leaves,
                spines,
            } => format!(
                "leaf_spine {leaves}x{hosts_per_leaf} hosts, {spines} spines {}G",
                t.link_gbps
            ),
        };
        Settings {
            seed: file.seed,
            packet: file.packet.clone(),
            buffer_bytes: t.buffer_bytes,
            control_buffer_bytes: t.control_buffer_bytes.unwrap_or(t.buffer_bytes),
            trim_header_bytes: t.trim_header_bytes.unwrap_or(defaults::TRIM_HEADER_BYTES),
            red: t
                .ecn_kmax_bytes
                .map(|k| (k, t.ecn_pmax.unwrap_or(defaults::ECN_PMAX))),
            rate_coef: tr.rate_coef,
            failure_aware_rate: tr.failure_aware_rate,
            loss_recovery: tr.loss_recovery,
            cc: tr.cc,
            ccs: tr.cc_configs(),
            eqds: tr.eqds.clone(),
            cnp_interval: SimTime::from_us_f64(tr.dcqcn.cnp_interval_us),
            erasure_extra_packets: tr
                .erasure_extra_packets
                .unwrap_or(defaults::ERASURE_EXTRA_PACKETS),
            reorder_threshold: tr.reorder_threshold.unwrap_or(defaults::REORDER_THRESHOLD),
            rto_backoff: tr.rto_backoff,
            load_balancing: file.load_balancing.clone(),
            workload_label: file.workload.kind.name(),
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

impl Scenario {
    /// Validates `file` and builds the topology and workload. An error about a key that one of
    /// `origin.sets` set names that `--set`.
    pub fn build(file: ScenarioFile, origin: &Origin) -> Result<Scenario, ConfigError> {
        Self::build_unblamed(file, origin).map_err(|e| blame_sets(e, &origin.sets))
    }

    fn build_unblamed(mut file: ScenarioFile, origin: &Origin) -> Result<Scenario, ConfigError> {
        if let Some(p) = file.topology.htsim_topo.clone() {
            let p = match (&origin.dir, p.is_relative()) {
                (Some(dir), true) => dir.join(p),
                _ => p,
            };
            crate::net::htsim_topo::load(&p, &mut file.topology)?;
        }
        let t = &file.topology;
        let o = origin;
        check(
            t.link_gbps.is_finite() && (MIN_GBPS..=1e6).contains(&t.link_gbps),
            o,
            "topology.link_gbps",
            "must be a positive rate in Gb/s, at least 1e-6 (1 kb/s) and at most 1e6",
        )?;
        check(
            finite_nonneg(t.link_latency_ns) && t.link_latency_ns < 1e9,
            o,
            "topology.link_latency_ns",
            "must be a non-negative number of nanoseconds",
        )?;
        check(
            finite_nonneg(t.switch_latency_ns) && t.switch_latency_ns < 1e9,
            o,
            "topology.switch_latency_ns",
            "must be a non-negative number of nanoseconds",
        )?;
        let p = &file.packet;
        check(
            p.payload_bytes > 0,
            o,
            "packet.payload_bytes",
            "must be positive",
        )?;
        check(p.ack_bytes > 0, o, "packet.ack_bytes", "must be positive")?;
        check(
            p.payload_bytes.checked_add(p.header_bytes).is_some(),
            o,
            "packet.header_bytes",
            "too large",
        )?;
        let mtu = (p.payload_bytes + p.header_bytes) as u64;
        check(
            t.buffer_bytes >= mtu,
            o,
            "topology.buffer_bytes",
            &format!("must hold at least one full packet ({mtu} bytes)"),
        )?;
        let tr = &file.transport;
        check(
            tr.rate_coef.is_finite() && tr.rate_coef > 0.0 && tr.rate_coef <= 1.0,
            o,
            "transport.rate_coef",
            "must be in (0, 1]",
        )?;
        tr.validate(t, o)?;
        check(
            mtu <= u16::MAX as u64 && p.ack_bytes <= u16::MAX as u32,
            o,
            "packet.payload_bytes",
            "payload + headers (and ACKs) must fit in 65,535 bytes",
        )?;
        if let Some(h) = t.trim_header_bytes {
            check(
                h > 0 && (h as u64) < mtu,
                o,
                "topology.trim_header_bytes",
                &format!("must be positive and smaller than a full packet ({mtu} bytes)"),
            )?;
        }
        let kmin = t.ecn_threshold();
        if let Some(kmax) = t.ecn_kmax_bytes {
            check(
                kmax > kmin,
                o,
                "topology.ecn_kmax_bytes",
                &format!("must exceed the marking threshold Kmin ({kmin} bytes)"),
            )?;
        }
        if let Some(pm) = t.ecn_pmax {
            check(
                t.ecn_kmax_bytes.is_some(),
                o,
                "topology.ecn_pmax",
                "needs topology.ecn_kmax_bytes (RED marking)",
            )?;
            check(
                pm.is_finite() && pm > 0.0 && pm <= 1.0,
                o,
                "topology.ecn_pmax",
                "must be in (0, 1]",
            )?;
        }
        if let Some(c) = t.control_buffer_bytes {
            check(
                c >= 64 && c < u32::MAX as u64,
                o,
                "topology.control_buffer_bytes",
                "must be at least 64 bytes and below 4 GB",
            )?;
        }
        let scheme = file.scheme().map_err(|msg| ConfigError::Invalid {
            origin: o.name.clone(),
            key: "load_balancing.scheme".into(),
            msg,
        })?;
        file.load_balancing.validate(scheme, o)?;
        let end_time = match file.end_time_us {
            None => None,
            Some(us) => {
                check(
                    us.is_finite() && us > 0.0,
                    o,
                    "end_time_us",
                    "must be a positive number of microseconds",
                )?;
                Some(SimTime::from_us_f64(us))
            }
        };
        // Events name ports, hosts, flows and fabric changes by a 29-bit id: refuse what would
        // not fit before allocating it (the counts are upper bounds, exact but for ranks that
        // share a host).
        if let Some(e) = file.memory_estimate() {
            let max = MAX_EVENT_ID as u128;
            check(
                e.ports <= max,
                o,
                "topology",
                &format!("{} ports; events can name at most {max}", e.ports),
            )?;
            check(
                e.flows <= max,
                o,
                "workload",
                &format!(
                    "about {} flows; events can name at most {max} flows in one run",
                    e.flows
                ),
            )?;
        }
        let params = LinkParams {
            rate: BitsPerSec::from_gbps(t.link_gbps),
            latency: SimTime::from_ns_f64(t.link_latency_ns),
            switch_latency: SimTime::from_ns_f64(t.switch_latency_ns),
        };
        let topology = match t.kind {
            TopologyKind::FatTree => {
                check(
                    t.k >= 2 && t.k.is_multiple_of(2),
                    o,
                    "topology.k",
                    &format!("fat-tree k must be even and at least 2, got {}", t.k),
                )?;
                check(
                    t.k <= 128,
                    o,
                    "topology.k",
                    "at most 128 (over 500,000 hosts)",
                )?;
                Topology::fat_tree(t.k, params)
            }
            TopologyKind::LeafSpine => {
                check(
                    t.hosts_per_leaf >= 1,
                    o,
                    "topology.hosts_per_leaf",
                    "must be >= 1",
                )?;
                check(t.leaves >= 1, o, "topology.leaves", "must be >= 1")?;
                check(t.spines >= 1, o, "topology.spines", "must be >= 1")?;
                check(
                    t.oversubscription.is_finite() && t.oversubscription > 0.0,
                    o,
                    "topology.oversubscription",
                    "must be positive",
                )?;
                check(
                    (t.hosts_per_leaf as u64 * t.leaves as u64) < (1 << 24),
                    o,
                    "topology.leaves",
                    "too many hosts",
                )?;
                let up_gbps =
                    t.hosts_per_leaf as f64 * t.link_gbps / (t.spines as f64 * t.oversubscription);
                check(
                    (MIN_GBPS..=1e9).contains(&up_gbps),
                    o,
                    "topology.oversubscription",
                    &format!(
                        "makes the uplink rate hosts_per_leaf x link_gbps / (spines x \
                         oversubscription) {up_gbps:e} Gb/s; it must be from 1e-6 (1 kb/s) to 1e9"
                    ),
                )?;
                Topology::leaf_spine(
                    t.hosts_per_leaf,
                    t.leaves,
                    t.spines,
                    params,
                    BitsPerSec::from_gbps(up_gbps),
                )
            }
        };
        check(
            topology.hosts >= 2,
            o,
            "topology",
            "needs at least two hosts",
        )?;
        let ecn = t.ecn_threshold();
        let workload::Workload {
            flows,
            deps,
            mut labels,
            ids: flow_ids,
            failed_links,
        } = workload::generate(&file.traffic(), &topology, origin)?;
        let sizes = bound::Sizes {
            mss: file.packet.payload_bytes,
            header: file.packet.header_bytes,
            ack: file.packet.ack_bytes,
        };
        for c in &mut labels.collectives {
            c.bound = crate::stats::collectives::bound(&topology, &flows, &deps, &c.flows, sizes);
        }
        check(
            flows.len() <= MAX_EVENT_ID as usize,
            o,
            "workload",
            &format!(
                "{} flows; events can name at most {MAX_EVENT_ID} flows in one run",
                flows.len()
            ),
        )?;
        // A connection matrix's failure lines join `[[failures]]`: down from the start.
        let mut specs = file.failures.clone();
        specs.extend(failed_links.into_iter().map(|l| FailureSpec {
            kind: failure::FailureKind::Down,
            link: Some(l),
            random_fraction: None,
            at_us: 0.0,
            recover_at_us: None,
            rate_fraction: None,
            loss_good: None,
            loss_bad: None,
            p_good_to_bad: None,
            p_bad_to_good: None,
        }));
        let failures = failure::resolve(&specs, &topology, file.seed, origin)?;
        // Each failure schedules up to three fabric changes (fail, recover, converge).
        check(
            failures.len() as u64 * 4 <= MAX_EVENT_ID as u64,
            o,
            "failures",
            "too many failed links for one run",
        )?;
        let convergence = match file.failure.convergence_us {
            None => None,
            Some(g) => {
                check(
                    finite_nonneg(g),
                    o,
                    "failure.convergence_us",
                    "must be a non-negative number of microseconds",
                )?;
                Some(SimTime::from_us_f64(g))
            }
        };
        let rto = match file.transport.rto_us {
            None => SimTime::from_us_f64(defaults::RTO_US),
            Some(us) => {
                check(
                    us.is_finite() && us > 0.0,
                    o,
                    "transport.rto_us",
                    "must be a positive number of microseconds",
                )?;
                SimTime::from_us_f64(us)
            }
        };
        let end_time = match (end_time, specs.is_empty()) {
            (None, false) => {
                let sizes = bound::Sizes {
                    mss: file.packet.payload_bytes,
                    header: file.packet.header_bytes,
                    ack: file.packet.ack_bytes,
                };
                let lb = bound::lower_bound(&topology, &flows, sizes);
                // With dependencies the flows run in steps: allow for every step in series
                // (every flow's bytes one after another, plus every trigger's delay and a
                // longest path per trigger), which no collective exceeds.
                let chain = if deps.is_empty() {
                    SimTime::ZERO
                } else {
                    let bytes = flows.iter().fold(0u64, |a, f| {
                        a.saturating_add(bound::data_wire_bytes(f.size_bytes, sizes))
                    });
                    let path = SimTime(
                        topology
                            .links
                            .iter()
                            .map(|l| l.latency.ps())
                            .max()
                            .unwrap_or(0)
                            * defaults::MAX_PATH_LINKS,
                    );
                    deps.triggers
                        .iter()
                        .fold(topology.host_rate.serialization(bytes), |t, tr| {
                            t.saturating_add(tr.delay).saturating_add(path)
                        })
                };
                Some(SimTime(
                    lb.max(chain)
                        .ps()
                        .saturating_mul(defaults::FAILURE_END_TIME_BOUNDS),
                ))
            }
            (e, _) => e,
        };
        let settings = Settings::resolve(&file, &topology);
        Ok(Scenario {
            settings,
            scheme,
            topology,
            flows,
            flow_ids,
            deps,
            labels,
            ecn_threshold_bytes: ecn,
            end_time,
            failures,
            convergence,
            rto,
            file,
        })
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
        }
        if lr == LossRecoveryKind::Trim || f.transport.cc == CcKind::Eqds {
            t.control_buffer_bytes.get_or_insert(t.buffer_bytes);
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
        if let Some(scheme) = lb::scheme(&f.load_balancing.scheme) {
            f.load_balancing.fill_defaults(scheme);
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
