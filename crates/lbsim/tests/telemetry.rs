//! Telemetry: the series add up exactly to what the run reports, flows' series end at their
//! message, events match the counters, results are the same with telemetry on or off, and bad
//! `[telemetry]` input is an error naming the key.

mod common;

use lbsim::ids::PortId;
use lbsim::stats::telemetry::{Collected, EventKind};
use lbsim::{Origin, Scenario, ScenarioFile, Simulation};

fn build(sets: &[&str]) -> Result<Scenario, String> {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let file = ScenarioFile::builtin(&sets).map_err(|e| e.to_string())?;
    Scenario::build(file, &Origin::builtin().with_sets(&sets)).map_err(|e| e.to_string())
}

fn sampled(sets: &[&str]) -> (Simulation, Collected) {
    let mut sim = Simulation::new(build(sets).expect("valid scenario"));
    let mut rows = Collected::default();
    sim.run_with(&mut |_| true, Some(&mut rows));
    (sim, rows)
}

const SMALL: &[&str] = &[
    "topology.k=4",
    "workload.message_bytes=262144",
    "topology.buffer_bytes=40000",
    "load_balancing.scheme=host_spray",
    "telemetry.enabled=true",
    // Not a divisor of the run: the last interval is partial.
    "telemetry.sample_ns=730",
];

#[test]
fn port_series_add_up_to_the_run_exactly() {
    let (sim, rows) = sampled(SMALL);
    assert!(sim.summary().end_ps % 730_000 != 0);
    check_port_series(&sim, &rows, 730_000);
    // Some port queued, and some interval saw its buffer's worth of drops.
    assert!(rows.ports.iter().any(|r| r.queue_max_bytes > 0));
    assert!(rows.ports.iter().any(|r| r.utilisation > 0.9));
    assert!(sim.summary().packets_dropped > 0);
}

/// Every port's series: contiguous intervals of `sample` ps to the end, integrals adding up to
/// the run's time-average exactly, bytes sent at most the line rate, host NICs' bytes accounted.
fn check_port_series(sim: &Simulation, rows: &Collected, sample: u64) {
    let end = sim.summary().end_ps;
    let ports = sim.scenario().topology.links.len();
    assert_eq!(rows.port_index.len(), ports);
    let pk = &sim.scenario().settings.packet;
    let mtu = (pk.payload_bytes + pk.header_bytes) as u64;
    for p in 0..ports {
        let series: Vec<_> = rows.ports.iter().filter(|r| r.port == p as u32).collect();
        // Contiguous intervals from zero to the end, the last one partial.
        assert_eq!(series[0].t_start_ps, 0);
        for w in series.windows(2) {
            assert_eq!(w[0].t_end_ps, w[1].t_start_ps);
            assert_eq!(w[0].t_end_ps - w[0].t_start_ps, sample);
        }
        assert_eq!(series.last().unwrap().t_end_ps, end);
        // The time-average over the run is summary's, exactly: the integrals add up.
        let area: u128 = series.iter().map(|r| r.queue_area).sum();
        let (mean, max) = sim.port_queue(PortId(p as u32));
        assert_eq!(area as f64 / end as f64, mean, "port {p}");
        let weighted: f64 = series
            .iter()
            .map(|r| r.queue_mean_bytes * (r.t_end_ps - r.t_start_ps) as f64)
            .sum::<f64>()
            / end as f64;
        assert!((weighted - mean).abs() <= 1e-9 * mean.max(1.0), "port {p}");
        assert_eq!(series.iter().map(|r| r.queue_max_bytes).max(), Some(max));
        let drops: u64 = series.iter().map(|r| r.drops).sum();
        assert_eq!(drops, sim.port_drops(PortId(p as u32)));
        // A packet's bytes count in the interval its serialization ends in: at most one
        // packet over the line rate.
        let rate = sim.scenario().topology.links[p].rate.0 as f64;
        assert!(series.iter().all(|r| {
            let line = rate * (r.t_end_ps - r.t_start_ps) as f64 / 8e12;
            r.bytes_sent as f64 <= line + mtu as f64
                && (r.utilisation - r.bytes_sent as f64 / line).abs() < 1e-9
        }));
        // A host NIC sends its flow's data packets and an ACK per data packet it receives:
        // what it sent by the end plus what it still holds is all of that.
        if p < sim.scenario().topology.hosts as usize {
            let sent: u64 = series.iter().map(|r| r.bytes_sent).sum();
            let flows = sim.flows();
            let data: u64 = flows
                .iter()
                .filter(|f| f.spec.src.0 == p as u32)
                .map(|f| f.data_packets_sent * mtu)
                .sum();
            let acks: u64 = flows
                .iter()
                .filter(|f| f.spec.dst.0 == p as u32)
                .map(|f| f.data_packets_received * pk.ack_bytes as u64)
                .sum();
            assert_eq!(
                sent + sim.port_bytes_held(PortId(p as u32)),
                data + acks,
                "host {p}"
            );
        }
    }
}

/// An 8-to-1 incast under PFC with buffers small enough to pause: 20 KB at 100 Gb/s over
/// 100 ns cables pauses an input port above 9,184 bytes.
const PFC_INCAST: &[&str] = &[
    "topology.k=4",
    "topology.link_gbps=100",
    "topology.link_latency_ns=100",
    "topology.buffer_bytes=20000",
    "topology.pfc=true",
    "workload.kind=incast",
    "workload.fan_in=8",
    "workload.message_bytes=262144",
    "telemetry.enabled=true",
    "telemetry.sample_ns=730",
    "telemetry.events=[\"drops\", \"pauses\"]",
];

#[test]
fn paused_ports_series_add_up_and_every_pause_is_an_event() {
    let (sim, rows) = sampled(PFC_INCAST);
    let s = sim.summary();
    // Paused data has no departure yet: its bytes count as held, never as a stay to cut.
    check_port_series(&sim, &rows, 730_000);
    // Occupancy rises only at admissions, so no interval's mean exceeds its maximum.
    assert!(rows
        .ports
        .iter()
        .all(|r| r.queue_mean_bytes <= r.queue_max_bytes as f64));
    assert!(rows.ports.iter().any(|r| r.queue_mean_bytes > 0.0));
    // Each PAUSE frame pauses its port (nothing else pauses here): one event each, on a port.
    let frames = s.pfc_pause_frames.unwrap();
    assert!(frames > 0);
    let pauses: Vec<_> = rows
        .events
        .iter()
        .filter(|e| e.kind == EventKind::Pause)
        .collect();
    assert_eq!(pauses.len() as u64, frames);
    assert!(pauses.iter().all(|e| e.port.is_some() && e.flow.is_none()));
    assert_eq!(s.packets_dropped, 0);
    assert!(rows.events.iter().all(|e| e.kind == EventKind::Pause));
}

#[test]
fn headers_returned_to_their_sender_are_not_drops() {
    // The return-to-sender incast: 20 KB data queues, control queues of two 64-byte headers.
    let (sim, rows) = sampled(&[
        "topology.k=4",
        "topology.buffer_bytes=20000",
        "topology.control_buffer_bytes=128",
        "transport.loss_recovery=trim",
        "topology.return_to_sender=true",
        "workload.kind=incast",
        "workload.fan_in=8",
        "workload.message_bytes=262144",
        "telemetry.enabled=true",
        "telemetry.events=[\"drops\"]",
    ]);
    let s = sim.summary();
    assert!(s.rts_packets.unwrap() > 0);
    let events = rows.events.len() as u64;
    let drops: u64 = rows.ports.iter().map(|r| r.drops).sum();
    assert_eq!((events, drops), (s.packets_dropped, s.packets_dropped));
}

#[test]
fn flow_series_end_at_the_message_size() {
    let mut sets = SMALL.to_vec();
    sets.extend([
        "telemetry.flows=all",
        "telemetry.ports=none",
        "transport.cc=dctcp",
        "transport.loss_recovery=sack",
    ]);
    let (sim, rows) = sampled(&sets);
    assert!(rows.ports.is_empty() && rows.port_index.is_empty());
    for (i, f) in sim.flows().iter().enumerate() {
        let series: Vec<_> = rows.flows.iter().filter(|r| r.flow == i as u64).collect();
        let last = series.last().expect("a started flow has rows");
        assert_eq!(last.bytes_acked, f.spec.size_bytes, "flow {i}");
        assert!(f.finish.unwrap().ps() <= last.t_end_ps);
        assert!(series
            .windows(2)
            .all(|w| w[0].bytes_acked <= w[1].bytes_acked));
        let rtx: u64 = series.iter().map(|r| r.retransmissions).sum();
        assert_eq!(rtx, f.retransmissions, "flow {i}");
        assert!(series
            .iter()
            .all(|r| r.cwnd_bytes.is_some() && r.bytes_in_flight.is_some()));
        // Spraying: a fresh entropy per packet, so intervals with several packets use several.
        assert!(series.iter().any(|r| r.paths > 1), "flow {i}");
    }
    // ECMP keeps one entropy per flow.
    let mut ecmp = sets.clone();
    ecmp.push("load_balancing.scheme=ecmp");
    let (_, rows) = sampled(&ecmp);
    assert!(rows.flows.iter().all(|r| r.paths <= 1));
    assert!(rows.flows.iter().any(|r| r.paths == 1));
}

#[test]
fn events_match_the_counters() {
    let mut sets = SMALL.to_vec();
    sets.extend([
        "telemetry.events=[\"drops\", \"marks\", \"trims\", \"pauses\"]",
        "transport.loss_recovery=trim",
    ]);
    let (sim, rows) = sampled(&sets);
    let s = sim.summary();
    let count = |k: EventKind| rows.events.iter().filter(|e| e.kind == k).count() as u64;
    assert_eq!(count(EventKind::Drop), s.packets_dropped);
    assert_eq!(count(EventKind::Mark), s.ecn_marks);
    assert_eq!(count(EventKind::Trim), s.packets_trimmed);
    assert!(s.packets_trimmed > 0 && s.ecn_marks > 0);
    assert!(rows.events.windows(2).all(|w| w[0].t_ps <= w[1].t_ps));
    let trims: u64 = rows.ports.iter().map(|r| r.trims).sum();
    assert_eq!(trims, s.packets_trimmed);
    let marks: u64 = rows.ports.iter().map(|r| r.ecn_marks).sum();
    assert_eq!(marks, s.ecn_marks);
}

/// Every flows.csv record and summary field (but the wall clock) of a run.
fn results(sim: &Simulation) -> String {
    let mut s = sim.summary();
    s.wall_seconds = 0.0;
    s.events_per_second = 0.0;
    format!(
        "{}\n{}",
        serde_json::to_string(&s).unwrap(),
        serde_json::to_string(&sim.flow_records()).unwrap()
    )
}

#[test]
fn telemetry_never_perturbs_results() {
    let cases: &[&[&str]] = &[
        &["load_balancing.scheme=ecmp"],
        &["load_balancing.scheme=switch_jsq"],
        &[
            "load_balancing.scheme=reps",
            "transport.cc=dctcp",
            "transport.loss_recovery=sack",
        ],
        &[
            "transport.cc=dcqcn",
            "topology.ecn_kmax_bytes=30000",
            "transport.loss_recovery=go_back_n",
        ],
        &["transport.cc=swift", "transport.loss_recovery=trim"],
        &["transport.cc=eqds", "transport.loss_recovery=trim"],
    ];
    for case in cases {
        let mut off: Vec<&str> = SMALL.to_vec();
        off.extend_from_slice(case);
        off.retain(|s| !s.starts_with("telemetry."));
        let mut on = SMALL.to_vec();
        on.extend_from_slice(case);
        on.extend([
            "telemetry.flows=all",
            "telemetry.events=[\"drops\", \"marks\", \"trims\"]",
            "telemetry.sample_ns=100",
        ]);
        let plain = common::run(build(&off).unwrap());
        let (observed, rows) = sampled(&on);
        assert!(!rows.ports.is_empty() && !rows.flows.is_empty(), "{case:?}");
        assert_eq!(results(&plain), results(&observed), "{case:?}");
        assert_eq!(plain.events(), observed.events(), "{case:?}");
    }
}

#[test]
fn telemetry_is_off_without_a_sink_or_unless_enabled() {
    let mut sets = SMALL.to_vec();
    // Off, with telemetry's other settings left out too (with telemetry off they are refused).
    sets.retain(|s| !s.starts_with("telemetry."));
    let (_, rows) = sampled(&sets);
    assert!(rows.port_index.is_empty() && rows.ports.is_empty());
    assert!(build(&sets).unwrap().telemetry.is_none());
}

#[test]
fn bad_telemetry_input_names_the_key() {
    let err = |extra: &[&str]| {
        let mut sets = SMALL.to_vec();
        sets.extend_from_slice(extra);
        build(&sets).map(|_| ()).unwrap_err()
    };
    let e = err(&["telemetry.sample_rate=3"]);
    assert!(e.contains("sample_rate"), "{e}");
    let e = err(&["telemetry.ports=leaf_up"]);
    assert!(
        e.contains("telemetry.ports") && e.contains("leaf_up") && e.contains("tor_up"),
        "{e}"
    );
    let e = err(&["telemetry.ports=[\"tor_up\", \"tor:3-agg:9\"]"]);
    assert!(
        e.contains("telemetry.ports") && e.contains("tor:3-agg:9"),
        "{e}"
    );
    let e = err(&["telemetry.ports=3"]);
    assert!(e.contains("telemetry.ports"), "{e}");
    let e = err(&["telemetry.events=[\"drops\", \"losses\"]"]);
    assert!(
        e.contains("telemetry.events") && e.contains("losses"),
        "{e}"
    );
    let e = err(&["telemetry.flows=[1, 99]"]);
    assert!(e.contains("telemetry.flows") && e.contains("99"), "{e}");
    let e = err(&["telemetry.sample_ns=0"]);
    assert!(e.contains("telemetry.sample_ns"), "{e}");
    let e = err(&["telemetry.format=xlsx"]);
    assert!(e.contains("telemetry.format") && e.contains("xlsx"), "{e}");
    // Errors show even with telemetry off.
    let e = build(&["topology.k=4", "telemetry.ports=spine"]).unwrap_err();
    assert!(e.contains("telemetry.ports"), "{e}");
    // Link names and tiers as the topology names them are taken.
    let sc = build(&[
        "topology.k=4",
        "telemetry.enabled=true",
        "telemetry.ports=[\"tor:3-agg:2\", \"core_down\"]",
        "telemetry.flows=[2, 5]",
    ])
    .unwrap();
    let plan = sc.telemetry.unwrap();
    assert_eq!(plan.ports.len(), 1 + 16);
    assert_eq!(plan.flows.len(), 2);
}
