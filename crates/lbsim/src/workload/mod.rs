//! Workloads: the flows a run starts. `permutation` (a random derangement: every host sends one
//! message and receives one, standing in for one step of a ring collective), `all_to_all` (every
//! ordered pair), and `connection_matrix` (htsim's text format).

pub mod connection_matrix;

use rand::seq::SliceRandom;

use crate::ids::HostId;
use crate::net::Topology;
use crate::rng::{rng_for, Stream};
use crate::scenario::{ConfigError, Origin, ScenarioFile, WorkloadKind};
use crate::time::SimTime;

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
/// (`on_send_done`). A multishot trigger fires again on every later activation (targets already
/// started are left alone); a oneshot or barrier trigger fires once.
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
}

impl Dependencies {
    pub fn is_empty(&self) -> bool {
        self.triggers.is_empty()
    }

    pub fn gated(&self, flow: usize) -> bool {
        self.gated.get(flow).copied().unwrap_or(false)
    }
}

/// What a workload generates: flows, and how they wait on each other.
#[derive(Clone, Debug, Default)]
pub struct Workload {
    pub flows: Vec<FlowSpec>,
    pub deps: Dependencies,
}

pub fn generate(
    file: &ScenarioFile,
    topo: &Topology,
    origin: &Origin,
) -> Result<Workload, ConfigError> {
    Ok(Workload {
        flows: generate_flows(file, topo, origin)?,
        deps: Dependencies::default(),
    })
}

fn generate_flows(
    file: &ScenarioFile,
    topo: &Topology,
    origin: &Origin,
) -> Result<Vec<FlowSpec>, ConfigError> {
    let w = &file.workload;
    let needs_size = matches!(w.kind, WorkloadKind::Permutation | WorkloadKind::AllToAll);
    if needs_size && w.message_bytes == 0 {
        return Err(ConfigError::Invalid {
            origin: origin.name.clone(),
            key: "workload.message_bytes".into(),
            msg: "must be positive".into(),
        });
    }
    Ok(match w.kind {
        WorkloadKind::Permutation => permutation(topo.hosts, w.message_bytes, file.seed),
        WorkloadKind::AllToAll => all_to_all(topo.hosts, w.message_bytes),
        WorkloadKind::ConnectionMatrix => {
            let path = w.path.as_ref().ok_or_else(|| ConfigError::Invalid {
                origin: origin.name.clone(),
                key: "workload.path".into(),
                msg: "connection_matrix needs a path to a .cm file".into(),
            })?;
            let path = match (&origin.dir, path.is_relative()) {
                (Some(dir), true) => dir.join(path),
                _ => path.clone(),
            };
            connection_matrix::load(&path, topo.hosts)?
        }
    })
}

/// A uniformly random derangement (no host sends to itself), drawn by rejection.
pub fn permutation(hosts: u32, size: u64, seed: u64) -> Vec<FlowSpec> {
    let mut rng = rng_for(seed, Stream::Workload, 0);
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

/// Every ordered pair of distinct hosts, all starting at time zero.
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

#[cfg(test)]
mod tests {
    use super::*;

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
