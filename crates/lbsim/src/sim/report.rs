//! What a run reports: accessors for tests and front ends, flows.csv records and summary.json.

use super::{Counters, InFlight, Simulation};
use crate::ids::PortId;
use crate::scenario::Scenario;
use crate::stats::{self, bound, FlowRecord, Summary};
use crate::time::SimTime;
use crate::transport::Flow;

impl Simulation {
    pub fn now(&self) -> SimTime {
        self.cx.now
    }

    pub fn scenario(&self) -> &Scenario {
        &self.sc
    }

    /// Time-average bytes held by egress port `port` from time zero to the end of the run, and the
    /// most it held.
    pub fn port_queue(&self, port: PortId) -> (f64, u64) {
        let p = &self.fabric.ports[port.idx()];
        let end = self.ended.unwrap_or(self.cx.now);
        let mean = if end.ps() == 0 {
            0.0
        } else {
            p.area_until(end) as f64 / end.ps() as f64
        };
        (mean, p.max_bytes)
    }

    /// Bytes egress port `port` holds (queued or in service) when the run ended.
    pub fn port_bytes_held(&self, port: PortId) -> u64 {
        let end = self.ended.unwrap_or(self.cx.now);
        self.fabric.ports[port.idx()].occupancy_at(end).1
    }

    /// PFC: how long egress `port` was paused, to the end of the run (zero with PFC off).
    pub fn port_pause(&self, port: PortId) -> SimTime {
        let end = self.ended.unwrap_or(self.cx.now);
        self.fabric.ports[port.idx()].paused_for(end)
    }

    /// PFC: PAUSE frames the switches sent (None with PFC off).
    pub fn pfc_pause_frames(&self) -> Option<u64> {
        self.fabric.pfc.as_ref().map(|p| p.pause_frames)
    }

    /// PFC: the most data bytes one switch input port held (None with PFC off).
    pub fn pfc_max_held(&self) -> Option<u64> {
        self.fabric.pfc.as_ref().map(|p| p.max_held)
    }

    /// PFC: pause time summed per kind of link (`tor-agg`: every ToR's uplinks), as
    /// `kind=ps` in port order (host NICs first, then each tier's down and up links).
    fn pfc_pause_by_kind(&self) -> Vec<String> {
        let mut kinds: Vec<(String, u64)> = Vec::new();
        let topo = &self.sc.topology;
        for i in 0..self.fabric.ports.len() {
            let name = topo.link_name(PortId(i as u32));
            let kind = name
                .split('-')
                .map(|n| n.split(':').next().unwrap_or(n))
                .collect::<Vec<_>>()
                .join("-");
            let t = self.port_pause(PortId(i as u32)).ps();
            match kinds.iter_mut().find(|k| k.0 == kind) {
                Some(k) => k.1 += t,
                None => kinds.push((kind, t)),
            }
        }
        kinds.iter().map(|(k, t)| format!("{k}={t}")).collect()
    }

    /// The PFC fields of summary.json: frames, total, largest and count of paused ports, and
    /// the most paused ports by name.
    fn pfc_summary(&self) -> Option<(u64, u64, u64, u64, Vec<String>)> {
        /// Ports named in `pfc_top_paused_ports`.
        const TOP: usize = 8;
        let pfc = self.fabric.pfc.as_ref()?;
        let mut paused: Vec<(u64, usize)> = (0..self.fabric.ports.len())
            .map(|i| (self.port_pause(PortId(i as u32)).ps(), i))
            .filter(|&(t, _)| t > 0)
            .collect();
        let total = paused.iter().map(|p| p.0).sum();
        let max = paused.iter().map(|p| p.0).max().unwrap_or(0);
        let count = paused.len() as u64;
        paused.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        let top = paused
            .iter()
            .take(TOP)
            .map(|&(t, i)| format!("{}={t}", self.sc.topology.link_name(PortId(i as u32))))
            .collect();
        Some((pfc.pause_frames, total, max, count, top))
    }

    /// Packets the port dropped (its buffer was full).
    pub fn port_drops(&self, port: PortId) -> u64 {
        self.fabric.ports[port.idx()].stats.drops
    }

    pub fn counters(&self) -> Counters {
        self.cx.counters
    }

    /// Packets put on links so far (data and ACKs).
    pub fn hops(&self) -> u64 {
        self.fabric.hops
    }

    pub fn events(&self) -> u64 {
        self.event_count
    }

    pub fn flows(&self) -> &[Flow] {
        &self.flows
    }

    /// Packets in the ports' shared store (equals `in_flight`'s total unless a slot leaked).
    pub fn packets_stored(&self) -> usize {
        self.fabric.slots.in_use()
    }

    /// Counts the packets held in queues, in service and on wires, by kind.
    pub fn in_flight(&self) -> InFlight {
        let mut f = InFlight::default();
        for p in &self.fabric.ports {
            for held in p.packets() {
                if self.fabric.slots.pkt(held.slot).kind.is_forward() {
                    f.data += 1;
                } else {
                    f.acks += 1;
                }
            }
        }
        f
    }

    /// The largest occupancy any switch egress port reached, and whether one ever exceeded its buffer.
    pub fn max_switch_queue(&self) -> (u64, bool) {
        let r = self.sc.topology.switch_ports();
        let mut max = 0;
        let mut over = false;
        // Priority ports hold control packets in a buffer of their own.
        let extra = if self.fabric.prio {
            self.fabric.ctrl_cap
        } else {
            0
        };
        for p in &self.fabric.ports[r] {
            max = max.max(p.max_bytes);
            over |= p.max_bytes > p.buffer_bytes + extra;
        }
        // With PFC the buffer is each input port's share: egress queues may hold more.
        if let Some(pfc) = &self.fabric.pfc {
            over = pfc.max_held > pfc.buffer;
        }
        (max, over)
    }

    pub fn flow_records(&self) -> Vec<FlowRecord> {
        self.flows
            .iter()
            .enumerate()
            .map(|(i, f)| FlowRecord {
                flow_id: self.sc.flow_id(i),
                src: f.spec.src.0,
                dst: f.spec.dst.0,
                size_bytes: f.spec.size_bytes,
                start_ps: f.started.unwrap_or(f.spec.start).ps(),
                finish_ps: f.finish.map(|t| t.ps()),
                fct_ps: f
                    .finish
                    .map(|t| (t - f.started.unwrap_or(f.spec.start)).ps()),
                data_packets_sent: f.data_packets_sent,
                packets_dropped: f.packets_dropped,
                retransmissions: f.retransmissions,
                timeouts: f.timeouts,
            })
            .collect()
    }

    pub fn summary(&self) -> Summary {
        let sc = &self.sc;
        let end = self.ended.unwrap_or(self.cx.now);
        let first_start = self
            .flows
            .iter()
            .filter_map(|f| f.started)
            .min()
            .unwrap_or(SimTime::ZERO);
        let all_done = self.completed == self.flows.len() as u64;
        let last = self.flows.iter().filter_map(|f| f.finish).max();
        let cct = if all_done {
            last.map(|t| t - first_start)
        } else {
            None
        };
        let pk = &sc.settings.packet;
        let sizes = bound::Sizes {
            mss: pk.payload_bytes,
            header: pk.header_bytes,
            ack: pk.ack_bytes,
            pace: bound::pace_rate(sc.topology.host_rate, sc.settings.rate_coef),
        };
        let rel = |t: SimTime| SimTime(t.ps().saturating_sub(first_start.ps()));
        let lb = rel(bound::lower_bound_with_deps(
            &sc.topology,
            &sc.flows,
            &sc.deps,
            sizes,
        ));
        let lb_no_deps = rel(bound::lower_bound_ignoring_deps(
            &sc.topology,
            &sc.flows,
            &sc.deps,
            sizes,
        ));
        let ratio = |b: SimTime| cct.map(|c| c.ps() as f64 / b.ps().max(1) as f64);
        let mut fcts: Vec<u64> = self
            .flows
            .iter()
            .filter_map(|f| {
                f.finish
                    .map(|t| (t - f.started.unwrap_or(f.spec.start)).ps())
            })
            .collect();
        fcts.sort_unstable();
        let mean_fct = if fcts.is_empty() {
            None
        } else {
            Some(fcts.iter().map(|&x| x as f64).sum::<f64>() / fcts.len() as f64)
        };
        let r = sc.topology.switch_ports();
        let nports = r.len().max(1) as f64;
        let area: u128 = self.fabric.ports[r].iter().map(|p| p.area_until(end)).sum();
        let mean_queue = if end.ps() == 0 {
            0.0
        } else {
            area as f64 / nports / end.ps() as f64
        };
        let pfc = self.pfc_summary();
        Summary {
            scheme: sc.scheme.name.to_string(),
            workload: sc.settings.workload_label.to_string(),
            topology: sc.settings.topology_label.clone(),
            hosts: sc.topology.hosts,
            flows: self.flows.len() as u64,
            flows_completed: self.completed,
            cct_ps: cct.map(|t| t.ps()),
            lower_bound_ps: lb.ps(),
            cct_over_bound: ratio(lb),
            lower_bound_ignoring_deps_ps: lb_no_deps.ps(),
            cct_over_bound_ignoring_deps: ratio(lb_no_deps),
            mean_fct_ps: mean_fct,
            p99_fct_ps: stats::percentile(&fcts, 99.0),
            data_packets_sent: self.cx.counters.data_sent,
            data_packets_delivered: self.cx.counters.data_delivered,
            packets_dropped: self.cx.counters.data_dropped + self.cx.counters.acks_dropped,
            ecn_marks: self.cx.counters.ecn_marks,
            max_queue_bytes: self.max_switch_queue().0,
            mean_queue_bytes: mean_queue,
            end_ps: end.ps(),
            events: self.event_count,
            packet_hops: self.fabric.hops,
            link_losses: self.cx.counters.link_losses,
            failed_links: sc.failures.iter().map(|f| f.name.clone()).collect(),
            timeouts: self.flows.iter().map(|f| f.timeouts).sum(),
            cc: sc.settings.cc.name().to_string(),
            loss_recovery: sc.settings.loss_recovery.name().to_string(),
            retransmissions: self.flows.iter().map(|f| f.retransmissions).sum(),
            packets_trimmed: self.cx.counters.trimmed,
            discarded_packets: self.cx.counters.discarded,
            rts_packets: (self.cx.counters.returned > 0).then_some(self.cx.counters.returned),
            pfc_pause_frames: pfc.as_ref().map(|p| p.0),
            pfc_pause_ps: pfc.as_ref().map(|p| p.1),
            pfc_max_port_pause_ps: pfc.as_ref().map(|p| p.2),
            pfc_ports_paused: pfc.as_ref().map(|p| p.3),
            pfc_top_paused_ports: pfc.map(|p| p.4),
            pfc_pause_by_link_kind: self.fabric.pfc.is_some().then(|| self.pfc_pause_by_kind()),
            wall_seconds: 0.0,
            events_per_second: 0.0,
            seed: sc.settings.seed,
        }
    }
}
