//! A run's memory, estimated before anything large is allocated, so a front end can refuse a
//! scenario that cannot fit (an all-to-all on 65,536 hosts is 4.3 G flows) instead of dying in
//! an allocation failure.
//!
//! The estimate is counts times per-item costs. The costs were calibrated against the peak RSS
//! of `lbsim run --out` (GNU time -v, release build, 800 Gb/s fat-trees, ECMP):
//!
//! | run | flows | ports | peak RSS | estimate |
//! |---|---|---|---|---|
//! | k=8 permutation, 2 MiB | 128 | 768 | 12.3 MiB | 18.7 MiB |
//! | k=8 all-to-all, 4 KiB | 16,256 | 768 | 18.5 MiB | 22.2 MiB |
//! | k=16 all-to-all, 4 KiB | 1,047,552 | 6,144 | 494 MiB | 571 MiB |
//! | k=32 permutation, 4 KiB | 8,192 | 49,152 | 116 MiB | 124 MiB |
//!
//! The last two fix the per-flow cost (the flow's state, its spec, its record, its flows.csv row
//! and its pending start event: about 470 B) and the per-port cost (port, ring, routing: 2.1 KiB
//! measured, 2.25 KiB taken); packets in flight cost a 64-byte slot plus a 16-byte ring entry
//! each. The benchmark's a2a-1024 (463 MiB) and perm-65536 (873 MiB) come out at 571 MiB and
//! 1.2 GiB. It errs high
//! (packets are counted as if every buffer could fill), which is the safe side for a refusal.

use crate::net::config::{TopologyConfig, TopologyKind};
use crate::workload::{TrafficSpec, WorkloadConfig, WorkloadKind};

/// Fixed cost of a run: the binary, the calendar's flat bucket array, allocator slack.
const BASE_BYTES: u128 = 12 << 20;
/// Per flow: `transport::Flow`, `FlowSpec`, `FlowRecord`, its flows.csv row, its start event.
const FLOW_BYTES: u128 = 470;
/// Per egress port: the port, its ring's high-water capacity, routing and policy state.
const PORT_BYTES: u128 = 2304;
/// Per packet in flight: a 64-byte slot and a 16-byte ring entry.
const PACKET_BYTES: u128 = 80;

/// What a run is expected to hold at its peak.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryEstimate {
    pub flows: u128,
    pub ports: u128,
    /// Packets that can be in flight at once: the fewer of every data packet of every flow and
    /// what the switch buffers (plus one per port on the wire) can hold.
    pub packets: u128,
    pub bytes: u128,
}

impl MemoryEstimate {
    pub fn new(
        flows: u128,
        ports: u128,
        switch_ports: u128,
        file: &TrafficSpec,
        data: u128,
    ) -> Self {
        let mtu = (file.packet.payload_bytes + file.packet.header_bytes).max(1) as u128;
        let buffered = switch_ports * (file.topology.buffer_bytes as u128 / mtu + 1) + ports;
        let packets = data.min(buffered);
        MemoryEstimate {
            flows,
            ports,
            packets,
            bytes: BASE_BYTES + flows * FLOW_BYTES + ports * PORT_BYTES + packets * PACKET_BYTES,
        }
    }
}

/// The estimate from the scenario file alone, before the flows are generated; `None` when the
/// flow count is not known before reading a file (connection matrix: estimate the built
/// scenario instead). The counts are upper bounds: ranks sharing a host send nothing over the
/// network, and invalid settings are left to `Scenario::build` to report.
pub fn estimate(file: &TrafficSpec) -> Option<MemoryEstimate> {
    let t = &file.topology;
    let size = t.size()?;
    let (hosts, ports, switch_ports) = (size.hosts, size.ports, size.switch_ports);
    let jobs: Vec<&WorkloadConfig> = if file.jobs.is_empty() {
        vec![&file.workload]
    } else {
        file.jobs.iter().collect()
    };
    let mut flows = 0u128;
    let mut data = 0u128;
    let payload = file.packet.payload_bytes.max(1) as u128;
    for w in jobs {
        let (f, bytes) = job_flows(w, hosts, t)?;
        flows = flows.saturating_add(f);
        data = data.saturating_add(f.saturating_mul(bytes.div_ceil(payload)));
    }
    Some(MemoryEstimate::new(flows, ports, switch_ports, file, data))
}

/// Flows of one job and the bytes of its largest flow (upper bounds).
fn job_flows(w: &WorkloadConfig, hosts: u128, t: &TopologyConfig) -> Option<(u128, u128)> {
    let gpus = w.gpus_per_host.unwrap_or(1).max(1) as u128;
    let groups = w.groups.unwrap_or(1).max(1) as u128;
    let first = w.first_host.unwrap_or(0) as u128;
    let capacity = hosts.saturating_sub(first) * gpus;
    let n = match w.group_size {
        Some(n) => n as u128,
        None => capacity / groups,
    };
    let iters = w.iterations.unwrap_or(1).max(1) as u128;
    let s = w.message_bytes as u128;
    let per_group = match w.kind {
        WorkloadKind::ConnectionMatrix | WorkloadKind::Chakra | WorkloadKind::Training => {
            return None
        }
        WorkloadKind::Permutation => return Some((hosts, s)),
        WorkloadKind::Incast | WorkloadKind::Outcast => {
            let fan = w.fan_in.map_or(capacity.saturating_sub(1), u128::from);
            return Some((fan * iters, s));
        }
        WorkloadKind::AllToAll => (n * n.saturating_sub(1), s),
        WorkloadKind::RingAllreduce => (2 * n * n.saturating_sub(1), s.div_ceil(n.max(1))),
        WorkloadKind::RingReduceScatter | WorkloadKind::RingAllgather => {
            (n * n.saturating_sub(1), s.div_ceil(n.max(1)))
        }
        WorkloadKind::HierarchicalAllreduce => {
            // g ranks per server, n / g servers: 2n(g-1) transfers inside and 2n(n/g-1)
            // across, the largest a shard S/g (g unknown for imported fabrics: 1, the most).
            let g = match t.kind {
                TopologyKind::Ai => {
                    let sv = t.server.clone().unwrap_or_default();
                    (sv.gpus as u128) * (sv.domain_servers.max(1) as u128)
                }
                _ => gpus,
            }
            .clamp(1, n.max(1));
            let m = n.div_ceil(g);
            (2 * n * (g - 1 + m.saturating_sub(1)), s.div_ceil(g))
        }
        WorkloadKind::HalvingDoublingAllreduce => {
            let steps = 2 * (128 - n.max(1).leading_zeros() as u128);
            (n * steps, s / 2)
        }
        WorkloadKind::Moe => {
            use crate::config::defaults as d;
            let experts = w.moe_experts.unwrap_or(d::MOE_EXPERTS) as u128;
            let n = experts
                / (w.moe_experts_per_gpu
                    .unwrap_or(d::MOE_EXPERTS_PER_GPU)
                    .max(1) as u128);
            let layers = w.moe_layers.unwrap_or(d::MOE_LAYERS) as u128;
            let phases = if w.moe_backward.unwrap_or(d::MOE_BACKWARD) {
                4
            } else {
                2
            };
            let bytes = w.moe_tokens_per_gpu.unwrap_or(d::MOE_TOKENS_PER_GPU) as u128
                * w.moe_hidden.unwrap_or(d::MOE_HIDDEN) as u128
                * w.moe_dispatch_bytes_per_element
                    .unwrap_or(d::MOE_DISPATCH_BYTES_PER_ELEMENT)
                    .max(
                        w.moe_combine_bytes_per_element
                            .unwrap_or(d::MOE_COMBINE_BYTES_PER_ELEMENT),
                    ) as u128;
            // Relayed: a network leg and an NVLink leg per pair at most.
            let legs = if w.moe_hierarchical.unwrap_or(d::MOE_HIERARCHICAL) {
                2
            } else {
                1
            };
            (layers * phases * legs * n * n.saturating_sub(1), bytes)
        }
        WorkloadKind::Fsdp => {
            let preset = w
                .model
                .as_deref()
                .and_then(crate::workload::collective::preset);
            let layers = w.layers.or(preset.as_ref().map(|p| p.layers)).unwrap_or(1) as u128;
            let bytes = w
                .layer_bytes
                .or(preset.as_ref().map(|p| p.layer_bytes))
                .unwrap_or(0) as u128;
            (
                layers * 2 * n * n.saturating_sub(1),
                bytes.div_ceil(n.max(1)),
            )
        }
    };
    Some((per_group.0.saturating_mul(groups * iters), per_group.1))
}

/// `n` bytes for people: "4.3 GiB".
pub fn human_bytes(n: u128) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut x = n as f64;
    let mut u = 0;
    while x >= 1024.0 && u + 1 < UNITS.len() {
        x /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{n} B")
    } else {
        format!("{x:.1} {}", UNITS[u])
    }
}
