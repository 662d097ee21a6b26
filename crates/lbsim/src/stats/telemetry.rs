//! Telemetry: time series of what happens inside a run. `[telemetry]` as the file gives it
//! ([`TelemetryConfig`]), resolved against the topology and the flows into a [`TelemetryPlan`]
//! (which ports, flows and event kinds, how often), the rows the simulation hands out
//! ([`PortInfo`], [`PortSample`], [`FlowSample`], [`EventRecord`]) and the [`TelemetrySink`]
//! they are handed to. The library writes no file: a front end's sink does (the CLI writes
//! Parquet or CSV tables).
//!
//! Sampling only reads: the simulation samples at interval boundaries from its run loop, before
//! it handles the first event past a boundary, computing each port's occupancy from its ring
//! without syncing it, and draws no random number; results are the same with telemetry on or
//! off.

use serde::{Deserialize, Serialize};

use crate::config::{ConfigError, Origin};
use crate::ids::{FlowId, PortId};
use crate::net::Topology;
use crate::time::SimTime;

/// `telemetry.sample_ns` when not given: 1 us.
pub const DEFAULT_SAMPLE_NS: u64 = 1000;

/// `[telemetry]` as the file gives it. Off unless `enabled`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TelemetryConfig {
    /// Telemetry is collected only when true (false).
    pub enabled: bool,
    /// The sampling interval in nanoseconds (1000).
    pub sample_ns: u64,
    /// `"all"`, `"none"`, a tier (`host_up`, `tor_up`, ...), a link name (`tor:3-agg:1`), or a
    /// list of tiers and link names (`"all"`).
    pub ports: toml::Value,
    /// `"all"`, `"none"` or a list of flow ids as flows.csv gives them (`"none"`).
    pub flows: toml::Value,
    /// `"none"` or a list of `drops`, `marks`, `trims`, `pauses` (`"none"`).
    pub events: toml::Value,
    /// `parquet` or `csv`.
    pub format: TelemetryFormat,
}

impl Default for TelemetryConfig {
    fn default() -> Self {
        TelemetryConfig {
            enabled: false,
            sample_ns: DEFAULT_SAMPLE_NS,
            ports: toml::Value::String("all".into()),
            flows: toml::Value::String("none".into()),
            events: toml::Value::String("none".into()),
            format: TelemetryFormat::Parquet,
        }
    }
}

/// How a front end writes the tables.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TelemetryFormat {
    #[default]
    Parquet,
    Csv,
}

impl TelemetryFormat {
    /// The tables' file extension.
    pub fn extension(self) -> &'static str {
        match self {
            TelemetryFormat::Parquet => "parquet",
            TelemetryFormat::Csv => "csv",
        }
    }
}

/// The kinds of event the `events` table can record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    /// A packet dropped: by a full buffer, lost on a failed link (port set) or unroutable after
    /// convergence (no port).
    Drop,
    /// A data packet CE-marked at a switch port.
    Mark,
    /// A data packet's payload trimmed at a full switch port.
    Trim,
    /// An egress port paused by PFC (no flow): one per pause, not per frame that finds it
    /// paused already.
    Pause,
}

impl EventKind {
    pub const ALL: [EventKind; 4] = [
        EventKind::Drop,
        EventKind::Mark,
        EventKind::Trim,
        EventKind::Pause,
    ];

    /// The name in the `events` key (plural) and in the table's `kind` column (singular).
    pub fn key(self) -> &'static str {
        match self {
            EventKind::Drop => "drops",
            EventKind::Mark => "marks",
            EventKind::Trim => "trims",
            EventKind::Pause => "pauses",
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            EventKind::Drop => "drop",
            EventKind::Mark => "mark",
            EventKind::Trim => "trim",
            EventKind::Pause => "pause",
        }
    }
}

/// Which event kinds are recorded.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EventKinds {
    pub drops: bool,
    pub marks: bool,
    pub trims: bool,
    pub pauses: bool,
}

impl EventKinds {
    pub fn any(self) -> bool {
        self.drops || self.marks || self.trims || self.pauses
    }

    fn set(&mut self, k: EventKind) {
        match k {
            EventKind::Drop => self.drops = true,
            EventKind::Mark => self.marks = true,
            EventKind::Trim => self.trims = true,
            EventKind::Pause => self.pauses = true,
        }
    }
}

/// `[telemetry]` resolved: what to sample, and how often.
#[derive(Clone, Debug, PartialEq)]
pub struct TelemetryPlan {
    pub sample: SimTime,
    /// Sampled ports, ascending.
    pub ports: Vec<PortId>,
    /// Sampled flows (indices into the workload's flows), ascending.
    pub flows: Vec<FlowId>,
    pub events: EventKinds,
    pub format: TelemetryFormat,
}

/// A key's value as a list of strings: a string alone, or an array of strings.
fn names(v: &toml::Value) -> Option<Vec<&str>> {
    match v {
        toml::Value::String(s) => Some(vec![s.as_str()]),
        toml::Value::Array(a) => a.iter().map(|x| x.as_str()).collect(),
        _ => None,
    }
}

impl TelemetryConfig {
    /// The plan for this topology and these flows (`flow_id(i)`: flow i's id in flows.csv), or
    /// None when telemetry is off; an error names the key and the value it cannot place.
    pub fn resolve(
        &self,
        topo: &Topology,
        flows: usize,
        flow_id: impl Fn(usize) -> u64,
        origin: &Origin,
    ) -> Result<Option<TelemetryPlan>, ConfigError> {
        let err = |key: &str, msg: String| ConfigError::Invalid {
            origin: origin.name.clone(),
            key: format!("telemetry.{key}"),
            msg,
        };
        if self.sample_ns == 0 {
            return Err(err(
                "sample_ns",
                "must be a positive number of nanoseconds".into(),
            ));
        }
        let sample_ps = self
            .sample_ns
            .checked_mul(1000)
            .filter(|&ps| ps < crate::config::limits::TIME_PS)
            .ok_or_else(|| err("sample_ns", "past the longest run lbsim simulates".into()))?;
        // Checked whether enabled or not, so a mistake shows before it is switched on.
        let ports = self.ports(topo).map_err(|m| err("ports", m))?;
        let flows = self.flows(flows, flow_id).map_err(|m| err("flows", m))?;
        let events = self.events().map_err(|m| err("events", m))?;
        if !self.enabled {
            // A valid setting of telemetry that is off would change nothing: say so.
            let d = TelemetryConfig::default();
            let set = [
                ("sample_ns", self.sample_ns != d.sample_ns),
                ("ports", self.ports != d.ports),
                ("flows", self.flows != d.flows),
                ("events", self.events != d.events),
                ("format", self.format != d.format),
            ];
            if let Some((key, _)) = set.iter().find(|(_, differs)| *differs) {
                return Err(err(
                    key,
                    "is read only with telemetry.enabled = true (telemetry is off)".into(),
                ));
            }
        }
        Ok(self.enabled.then_some(TelemetryPlan {
            sample: SimTime(sample_ps),
            ports,
            flows,
            events,
            format: self.format,
        }))
    }

    fn ports(&self, topo: &Topology) -> Result<Vec<PortId>, String> {
        let tiers = topo.port_tiers();
        let want = || {
            format!(
                "expected \"all\", \"none\", a tier ({}), a link name as `lbsim topology --links` \
                 prints it (e.g. {}), or a list of tiers and link names",
                tiers.join(", "),
                topo.link_name(PortId(topo.links.len() as u32 - 1))
            )
        };
        let list = names(&self.ports).ok_or_else(|| format!("{}; got {}", want(), self.ports))?;
        let n = topo.links.len();
        let mut on = vec![false; n];
        let mut by_name = None;
        for name in list {
            match name {
                "all" => on.iter_mut().for_each(|x| *x = true),
                "none" => {}
                t if tiers.iter().any(|x| x == t) => {
                    for (i, x) in on.iter_mut().enumerate() {
                        *x |= topo.port_tier(PortId(i as u32)) == t;
                    }
                }
                link => {
                    let map = by_name.get_or_insert_with(|| {
                        (0..n)
                            .map(|i| (topo.link_name(PortId(i as u32)), i))
                            .collect::<std::collections::HashMap<_, _>>()
                    });
                    match map.get(link) {
                        Some(&i) => on[i] = true,
                        None => return Err(format!("no tier or link named `{link}`; {}", want())),
                    }
                }
            }
        }
        Ok((0..n)
            .filter(|&i| on[i])
            .map(|i| PortId(i as u32))
            .collect())
    }

    fn flows(&self, flows: usize, flow_id: impl Fn(usize) -> u64) -> Result<Vec<FlowId>, String> {
        let want = "expected \"all\", \"none\" or a list of flow ids (flows.csv's flow_id)";
        let ids: Vec<u64> = match &self.flows {
            toml::Value::String(s) if s == "all" => {
                return Ok((0..flows).map(|i| FlowId(i as u32)).collect())
            }
            toml::Value::String(s) if s == "none" => return Ok(Vec::new()),
            toml::Value::Integer(i) => vec![u64::try_from(*i).map_err(|_| want.to_string())?],
            toml::Value::Array(a) => a
                .iter()
                .map(|x| x.as_integer().and_then(|i| u64::try_from(i).ok()))
                .collect::<Option<_>>()
                .ok_or_else(|| format!("{want}; got {}", self.flows))?,
            v => return Err(format!("{want}; got {v}")),
        };
        let index: std::collections::HashMap<u64, usize> =
            (0..flows).map(|i| (flow_id(i), i)).collect();
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            match index.get(&id) {
                Some(&i) => out.push(FlowId(i as u32)),
                None => return Err(format!("no flow with id {id} in this workload")),
            }
        }
        out.sort_unstable();
        out.dedup();
        Ok(out)
    }

    fn events(&self) -> Result<EventKinds, String> {
        let keys: Vec<&str> = EventKind::ALL.iter().map(|k| k.key()).collect();
        let want = || {
            format!(
                "expected \"none\" or a list of {}",
                keys.iter()
                    .map(|k| format!("\"{k}\""))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        let list = names(&self.events).ok_or_else(|| format!("{}; got {}", want(), self.events))?;
        let mut kinds = EventKinds::default();
        for name in list {
            if name == "none" {
                continue;
            }
            match EventKind::ALL.iter().find(|k| k.key() == name) {
                Some(&k) => kinds.set(k),
                None => return Err(format!("unknown event kind `{name}`; {}", want())),
            }
        }
        Ok(kinds)
    }
}

/// One row of the `port_index` table: a sampled port and the link it drives.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PortInfo {
    pub port: u32,
    pub link: String,
    pub tier: String,
    pub from: String,
    pub to: String,
    pub rate_bps: u64,
    /// The drop-tail buffer (None for host NICs, which never drop).
    pub buffer_bytes: Option<u64>,
}

/// One row of the `ports` table: one port over one interval `(t_start_ps, t_end_ps]`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PortSample {
    pub t_start_ps: u64,
    pub t_end_ps: u64,
    pub port: u32,
    /// The occupancy integral over the interval, in byte-picoseconds (not a column: the tables
    /// carry `queue_mean_bytes`; summed over a run it is the port's whole integral exactly).
    #[serde(skip)]
    pub queue_area: u128,
    /// `queue_area` over the interval's length.
    pub queue_mean_bytes: f64,
    /// The most bytes held at any instant of the interval.
    pub queue_max_bytes: u64,
    /// Bytes whose serialization ended in the interval.
    pub bytes_sent: u64,
    /// bytes_sent x 8 over the port's rate (at the interval's end) x the interval.
    pub utilisation: f64,
    pub drops: u64,
    pub ecn_marks: u64,
    pub trims: u64,
    pub link_losses: u64,
}

/// One row of the `flows` table: one flow over one interval, for each interval from the one it
/// started in to the one its receiver completed in.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FlowSample {
    pub t_start_ps: u64,
    pub t_end_ps: u64,
    /// flows.csv's flow_id.
    pub flow: u64,
    /// A window-based CC's congestion window at the interval's end (None without one).
    pub cwnd_bytes: Option<u64>,
    /// A rate-based CC's (or Swift's sub-packet) pacing rate as of its last update.
    pub rate_bps: Option<u64>,
    /// Payload bytes sent and neither acknowledged nor declared lost (None for the idealized
    /// transport, which keeps no scoreboard).
    pub bytes_in_flight: Option<u64>,
    /// Payload bytes the receiver holds (and has acknowledged) at the interval's end.
    pub bytes_acked: u64,
    /// Data packets sent again by loss recovery in the interval.
    pub retransmissions: u64,
    /// Distinct entropies (path labels) on the data packets the flow sent in the interval.
    pub paths: u32,
}

/// One row of the `events` table.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct EventRecord {
    pub t_ps: u64,
    #[serde(serialize_with = "kind_name")]
    pub kind: EventKind,
    pub port: Option<u32>,
    /// flows.csv's flow_id of the packet's flow.
    pub flow: Option<u64>,
}

fn kind_name<S: serde::Serializer>(k: &EventKind, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(k.name())
}

/// Where the simulation hands its telemetry: rows in batches, each table's rows in time order.
/// `port_index` is called once, before any sample.
pub trait TelemetrySink {
    fn port_index(&mut self, rows: &[PortInfo]);
    fn ports(&mut self, rows: &[PortSample]);
    fn flows(&mut self, rows: &[FlowSample]);
    fn events(&mut self, rows: &[EventRecord]);
}

/// A sink that keeps every row (tests, small runs).
#[derive(Clone, Debug, Default)]
pub struct Collected {
    pub port_index: Vec<PortInfo>,
    pub ports: Vec<PortSample>,
    pub flows: Vec<FlowSample>,
    pub events: Vec<EventRecord>,
}

impl TelemetrySink for Collected {
    fn port_index(&mut self, rows: &[PortInfo]) {
        self.port_index.extend_from_slice(rows);
    }
    fn ports(&mut self, rows: &[PortSample]) {
        self.ports.extend_from_slice(rows);
    }
    fn flows(&mut self, rows: &[FlowSample]) {
        self.flows.extend_from_slice(rows);
    }
    fn events(&mut self, rows: &[EventRecord]) {
        self.events.extend_from_slice(rows);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::topology::TEST_LINKS;

    #[test]
    fn every_port_has_a_tier_of_its_shape() {
        let t = Topology::fat_tree(4, TEST_LINKS);
        let mut count = std::collections::BTreeMap::new();
        for i in 0..t.links.len() {
            let tier = t.port_tier(PortId(i as u32));
            assert!(t.port_tiers().iter().any(|x| x == tier), "{tier}");
            *count.entry(tier).or_insert(0) += 1;
        }
        // 16 hosts: every tier has 16 ports.
        assert!(count.values().all(|&c| c == 16), "{count:?}");
        let l = Topology::leaf_spine(2, 3, 2, TEST_LINKS, TEST_LINKS.rate);
        let names: std::collections::BTreeSet<_> = (0..l.links.len())
            .map(|i| l.port_tier(PortId(i as u32)))
            .collect();
        assert_eq!(
            names.into_iter().collect::<Vec<_>>(),
            vec!["host_up", "leaf_down", "leaf_up", "spine_down"]
        );
    }
}
