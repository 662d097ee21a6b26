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

pub fn generate(
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
