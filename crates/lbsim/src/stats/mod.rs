//! Results: per-flow records, the run summary (the JSON contract), and lower bounds.

pub mod bound;
pub mod collectives;
pub mod telemetry;

use serde::Serialize;

use crate::time::SimTime;

/// One row of flows.csv.
#[derive(Clone, Debug, Serialize)]
pub struct FlowRecord {
    /// The flow's id in its connection matrix; for generated workloads its index (0, 1, ...).
    pub flow_id: u64,
    pub src: u32,
    pub dst: u32,
    pub size_bytes: u64,
    pub start_ps: u64,
    pub finish_ps: Option<u64>,
    pub fct_ps: Option<u64>,
    pub data_packets_sent: u64,
    pub packets_dropped: u64,
    /// Data packets sent again by loss recovery.
    pub retransmissions: u64,
    /// Retransmission (or no-ACK) timeouts.
    pub timeouts: u64,
}

/// summary.json. Field names are a contract other tools rely on.
#[derive(Clone, Debug, Serialize)]
pub struct Summary {
    pub scheme: String,
    pub workload: String,
    pub topology: String,
    pub hosts: u32,
    pub flows: u64,
    pub flows_completed: u64,
    /// Collective completion time: last completion minus first start (null if any flow is unfinished).
    pub cct_ps: Option<u64>,
    /// No run can finish sooner (from the first start): dependencies, host links and every
    /// flow's own path counted; see `bound`.
    pub lower_bound_ps: u64,
    pub cct_over_bound: Option<f64>,
    /// The bound as if every flow could start at its own start time, triggers ignored (equal
    /// to `lower_bound_ps` without dependencies; smaller, so the ratio larger, with them).
    pub lower_bound_ignoring_deps_ps: u64,
    pub cct_over_bound_ignoring_deps: Option<f64>,
    pub mean_fct_ps: Option<f64>,
    pub p99_fct_ps: Option<u64>,
    pub data_packets_sent: u64,
    pub data_packets_delivered: u64,
    pub packets_dropped: u64,
    pub ecn_marks: u64,
    pub max_queue_bytes: u64,
    /// Time-average over all switch egress ports, from time zero to the end of the run.
    pub mean_queue_bytes: f64,
    /// When the run ended: the last completion, or the end_time cap.
    pub end_ps: u64,
    pub events: u64,
    /// Packets (data and ACKs) put on a link, summed over all links.
    pub packet_hops: u64,
    /// Packets lost on failed links (included in packets_dropped).
    pub link_losses: u64,
    /// Links failed by `[[failures]]`, by name.
    pub failed_links: Vec<String>,
    /// No-ACK timeouts the hosts' policies heard (with a reliable transport: retransmission
    /// timeouts).
    pub timeouts: u64,
    /// `transport.cc` and `transport.loss_recovery`.
    pub cc: String,
    pub loss_recovery: String,
    /// Data packets sent again by loss recovery (erasure repairs are not retransmissions).
    pub retransmissions: u64,
    /// Data packets whose payload a full queue trimmed (loss_recovery = "trim").
    pub packets_trimmed: u64,
    /// Data packets a receiver did not use: already held (spurious retransmissions), or out of
    /// order under go-back-N. Nothing is handed to the application twice.
    pub discarded_packets: u64,
    /// Trimmed headers sent back to their senders (NDP's return-to-sender), present only when
    /// there were any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rts_packets: Option<u64>,
    /// PFC (present only with `topology.pfc`): PAUSE frames sent, and how long egress ports
    /// were paused (summed over ports, the most of one port, how many ports were paused at
    /// all, and the most paused ports as `link=ps`, longest first).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pfc_pause_frames: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pfc_pause_ps: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pfc_max_port_pause_ps: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pfc_ports_paused: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pfc_top_paused_ports: Option<Vec<String>>,
    /// PFC: pause time per kind of link, `kind=ps` (`tor-agg=...`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pfc_pause_by_link_kind: Option<Vec<String>>,
    pub wall_seconds: f64,
    pub events_per_second: f64,
    pub seed: u64,
}

impl Summary {
    /// The fields that do not depend on the wall clock, as JSON (for determinism checks).
    pub fn deterministic_json(&self) -> String {
        let mut s = self.clone();
        s.wall_seconds = 0.0;
        s.events_per_second = 0.0;
        serde_json::to_string(&s).unwrap_or_default()
    }
}

/// Nearest-rank percentile of sorted values (p in 0..=100).
pub fn percentile(sorted: &[u64], p: f64) -> Option<u64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, sorted.len()) - 1])
}

pub fn us(t: SimTime) -> f64 {
    t.as_us()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile(&v, 99.0), Some(99));
        assert_eq!(percentile(&v, 100.0), Some(100));
        assert_eq!(percentile(&v, 0.0), Some(1));
        assert_eq!(percentile(&[], 50.0), None);
    }
}
