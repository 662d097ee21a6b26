//! Priority flow control: lossless incasts, pause spreading, RoCE without retransmissions,
//! freedom from deadlock on up-down routes, and a pause's exact cost.

mod common;

use std::collections::BTreeSet;

use common::{check_conservation_of, run, scenario, scenario_toml};
use lbsim::ids::{HostId, NodeId, PortId};
use lbsim::net::{Route, Topology};
use lbsim::time::SimTime;
use lbsim::Simulation;

/// 100 Gb/s, 100 ns cables: headroom 2 x 100 ns x 12.5 GB/s + 2 x 4158 = 10,816 bytes, so a
/// 20 KB buffer pauses above 9,184 bytes from one input port and resumes at 868.
const TINY: &[&str] = &[
    "topology.k=4",
    "topology.link_gbps=100",
    "topology.link_latency_ns=100",
    "topology.buffer_bytes=20000",
];

fn sets<'a>(base: &[&'a str], extra: &[&'a str]) -> Vec<&'a str> {
    base.iter().chain(extra).copied().collect()
}

/// Every sender delivers its whole message once: nothing dropped, resent or discarded.
fn assert_lossless(sim: &Simulation, what: &str) {
    check_conservation_of(sim, what);
    let s = sim.summary();
    assert_eq!(s.flows_completed, s.flows, "{what}");
    assert_eq!(s.packets_dropped, 0, "{what}");
    assert_eq!(s.retransmissions, 0, "{what}");
    assert_eq!(s.discarded_packets, 0, "{what}");
    assert_eq!(s.timeouts, 0, "{what}");
    assert_eq!(s.data_packets_sent, s.data_packets_delivered, "{what}");
    let payload = sim.scenario().file.packet.payload_bytes as u64;
    for f in sim.flows() {
        assert_eq!(
            f.data_packets_sent,
            f.spec.size_bytes.div_ceil(payload),
            "{what}: every packet sent once"
        );
    }
    assert!(
        sim.pfc_max_held().unwrap() <= sim.scenario().settings.buffer_bytes,
        "{what}"
    );
}

#[test]
fn an_incast_with_tiny_buffers_is_lossless_under_pfc() {
    let incast = sets(
        TINY,
        &[
            "workload.kind=incast",
            "workload.fan_in=8",
            "workload.message_bytes=262144",
        ],
    );
    for lr in ["go_back_n", "sack"] {
        let lr_set = format!("transport.loss_recovery={lr}");
        // Without PFC the 20 KB buffer overflows.
        let lossy = run(scenario(&sets(&incast, &[&lr_set])));
        check_conservation_of(&lossy, lr);
        assert!(
            lossy.summary().packets_dropped > 0,
            "{lr}: drops without PFC"
        );
        let sim = run(scenario(&sets(&incast, &[&lr_set, "topology.pfc=true"])));
        assert_lossless(&sim, lr);
        let s = sim.summary();
        assert!(s.pfc_pause_frames.unwrap() > 0, "{lr}");
        assert!(s.pfc_pause_ps.unwrap() > 0, "{lr}");
        // The receiver's link never idles once busy: 8 x 64 packets of 4158 bytes at 100
        // Gb/s is 170.3 us; the rest is the first packet's way and the last one's last hop.
        let cct = s.cct_ps.unwrap();
        let busy = 8 * 64 * 4158 * 80;
        assert!(cct >= busy && cct < busy + 10_000_000, "{lr}: CCT {cct}");
    }
}

/// The pause time of every egress port whose link name matches `pred`.
fn paused(sim: &Simulation, pred: impl Fn(&str) -> bool) -> Vec<(String, u64)> {
    let topo = &sim.scenario().topology;
    (0..topo.links.len() as u32)
        .map(PortId)
        .map(|p| (topo.link_name(p), sim.port_pause(p).ps()))
        .filter(|(n, t)| pred(n) && *t > 0)
        .collect()
}

#[test]
fn pause_spreads_two_hops_up_a_fat_tree_under_a_16_to_1_incast() {
    // k = 8: host 0 receives from hosts 1..=16 (3 under its ToR, 12 elsewhere in pod 0, one in
    // pod 1). The bottleneck is tor:0-host:0; one hop up are the aggregation switches' links
    // into tor:0 (and the local senders' NICs), two hops up the other ToRs' uplinks and the
    // core's links into pod 0, three hops up the remote senders' NICs.
    let sim = run(scenario(&[
        "topology.link_gbps=100",
        "topology.link_latency_ns=100",
        "topology.buffer_bytes=20000",
        "topology.pfc=true",
        "workload.kind=incast",
        "workload.fan_in=16",
        "workload.message_bytes=262144",
        "transport.loss_recovery=go_back_n",
    ]));
    assert_lossless(&sim, "16:1");
    assert!(
        paused(&sim, |n| n == "tor:0-host:0").is_empty(),
        "hosts never pause"
    );
    let one = paused(&sim, |n| n.starts_with("agg:") && n.ends_with("-tor:0"));
    let two_tor = paused(&sim, |n| {
        n.starts_with("tor:") && n.contains("-agg:") && !n.starts_with("tor:0-")
    });
    let two_core = paused(&sim, |n| n.starts_with("core:") && n.ends_with("-agg:0"))
        .into_iter()
        .chain(paused(&sim, |n| {
            n.starts_with("core:") && n.contains("-agg:")
        }))
        .collect::<Vec<_>>();
    let three = paused(&sim, |n| {
        ["host:4-", "host:8-", "host:12-", "host:16-"]
            .iter()
            .any(|h| n.starts_with(h))
    });
    assert!(!one.is_empty(), "agg -> tor:0 paused");
    assert!(!two_tor.is_empty(), "other ToRs' uplinks paused");
    assert!(!two_core.is_empty(), "core -> pod 0 paused");
    assert!(!three.is_empty(), "remote senders' NICs paused");
    let s = sim.summary();
    assert_eq!(s.pfc_ports_paused.unwrap() as usize, {
        let all = paused(&sim, |_| true);
        all.len()
    });
    let top = s.pfc_top_paused_ports.unwrap();
    assert!(!top.is_empty() && top.len() <= 8);
}

#[test]
fn roce_go_back_n_over_pfc_never_retransmits() {
    // go_back_n + dcqcn + pfc + ecmp: RoCE as deployed. Without PFC the same small buffers drop
    // and go-back-N resends; with it nothing is lost, so nothing is resent.
    let roce: &[&str] = &[
        "transport.loss_recovery=go_back_n",
        "transport.cc=dcqcn",
        "topology.ecn_threshold_bytes=4000",
        "topology.ecn_kmax_bytes=16000",
        "topology.ecn_pmax=0.2",
        "load_balancing.scheme=ecmp",
        "workload.message_bytes=524288",
    ];
    for w in ["workload.kind=permutation", "workload.kind=all_to_all"] {
        let base = sets(&sets(TINY, roce), &[w]);
        let lossy = run(scenario(&base));
        check_conservation_of(&lossy, w);
        assert!(lossy.summary().retransmissions > 0, "{w}: loss without PFC");
        let sim = run(scenario(&sets(&base, &["topology.pfc=true"])));
        assert_lossless(&sim, w);
    }
    let incast = sets(
        &sets(TINY, roce),
        &["workload.kind=incast", "workload.fan_in=8"],
    );
    let sim = run(scenario(&sets(&incast, &["topology.pfc=true"])));
    assert_lossless(&sim, "incast");
    assert!(sim.summary().pfc_pause_frames.unwrap() > 0);
}

/// Every (input link, output link) pair a packet can hold a buffer over on some route: the
/// buffer-dependency graph PFC deadlocks on if it has a cycle. Routes are walked through every
/// next-hop choice; `valley` adds down-up bounces (tor -> agg -> tor -> agg), which up-down
/// routing never takes.
fn dependencies(t: &Topology, valley: bool) -> BTreeSet<(u32, u32)> {
    fn walk(
        t: &Topology,
        dst: HostId,
        link: u32,
        bounced: bool,
        valley: bool,
        edges: &mut BTreeSet<(u32, u32)>,
    ) {
        let NodeId::Switch(sw) = t.links[link as usize].to else {
            return;
        };
        let next: Vec<u32> = match t.route(sw, dst) {
            Route::Port(p) => vec![p.0],
            Route::Group { first, n } => (first.0..first.0 + n).collect(),
        };
        if valley && !bounced {
            // Bounce down to any other switch below, which then routes up again.
            let s = &t.switches[sw.idx()];
            for p in s.port_base..s.port_base + s.ports {
                let to = t.links[p as usize].to;
                let down = matches!(to, NodeId::Switch(x) if t.switches[x.idx()].tier < s.tier);
                if down && !next.contains(&p) {
                    edges.insert((link, p));
                    walk(t, dst, p, true, valley, edges);
                }
            }
        }
        for p in next {
            edges.insert((link, p));
            walk(t, dst, p, bounced, valley, edges);
        }
    }
    let mut edges = BTreeSet::new();
    for src in 0..t.hosts {
        for dst in 0..t.hosts {
            if src != dst {
                walk(
                    t,
                    HostId(dst),
                    t.host_uplink(HostId(src)).0,
                    false,
                    valley,
                    &mut edges,
                );
            }
        }
    }
    edges
}

/// Whether a directed graph over links has a cycle (Kahn's algorithm leaves nodes behind).
fn has_cycle(n: usize, edges: &BTreeSet<(u32, u32)>) -> bool {
    let mut indegree = vec![0u32; n];
    let mut out = vec![Vec::new(); n];
    for &(a, b) in edges {
        indegree[b as usize] += 1;
        out[a as usize].push(b);
    }
    let mut ready: Vec<usize> = (0..n).filter(|&v| indegree[v] == 0).collect();
    let mut seen = 0;
    while let Some(v) = ready.pop() {
        seen += 1;
        for &w in &out[v] {
            indegree[w as usize] -= 1;
            if indegree[w as usize] == 0 {
                ready.push(w as usize);
            }
        }
    }
    seen < n
}

#[test]
fn up_down_routes_cannot_deadlock_pfc() {
    let leaf_spine =
        "[topology]\nkind = \"leaf_spine\"\nhosts_per_leaf = 4\nleaves = 4\nspines = 3\n";
    for sc in [
        scenario(&["topology.k=4"]),
        scenario(&["topology.k=6"]),
        scenario_toml(leaf_spine, &[]),
    ] {
        let t = &sc.topology;
        let edges = dependencies(t, false);
        assert!(!edges.is_empty());
        assert!(!has_cycle(t.links.len(), &edges), "{}", t.describe());
    }
    // The check finds the cycle a bounce makes (tor -> agg -> tor -> agg -> tor ...).
    let t = &scenario(&["topology.k=4"]).topology;
    let valley = dependencies(t, true);
    assert!(has_cycle(t.links.len(), &valley));
    // And heavy load terminates: every pair at once through 20 KB buffers.
    let sim = run(scenario(&sets(
        TINY,
        &[
            "topology.pfc=true",
            "workload.kind=all_to_all",
            "workload.message_bytes=131072",
            "load_balancing.scheme=host_spray",
            "transport.loss_recovery=sack",
        ],
    )));
    assert_lossless(&sim, "all-to-all");
    assert!(sim.summary().pfc_pause_frames.unwrap() > 0);
}

/// One flow host 1 -> host 0 under one ToR (k = 4, 800 Gb/s, 500 ns): packets of 4158 bytes
/// take s = 41,580 ps per link; the host puts packet i on its NIC at i s, the ToR sends it on
/// from (i + 1) s + 500 ns to (i + 2) s + 500 ns.
fn one_flow(pause: Option<(&str, SimTime, SimTime)>) -> u64 {
    let sc = scenario(&[
        "topology.k=4",
        "topology.pfc=true",
        "workload.kind=incast",
        "workload.fan_in=1",
        "workload.message_bytes=1048576",
        "transport.loss_recovery=go_back_n",
    ]);
    assert_eq!((sc.flows[0].src, sc.flows[0].dst), (HostId(1), HostId(0)));
    let mut sim = Simulation::new(sc);
    if let Some((link, from, to)) = pause {
        let topo = &sim.scenario().topology;
        let port = (0..topo.links.len() as u32)
            .map(PortId)
            .find(|&p| topo.link_name(p) == link)
            .expect("a link of that name");
        sim.impose_pause(port, from, to);
    }
    sim.run();
    assert_lossless(&sim, link_of(pause));
    if let Some((link, from, to)) = pause {
        let topo = &sim.scenario().topology;
        let total: u64 = (0..topo.links.len() as u32)
            .map(|p| sim.port_pause(PortId(p)).ps())
            .sum();
        assert_eq!(total, (to - from).ps(), "{link}: only the imposed pause");
    }
    sim.summary().cct_ps.unwrap()
}

fn link_of(pause: Option<(&str, SimTime, SimTime)>) -> &str {
    pause.map_or("none", |p| p.0)
}

#[test]
fn a_pause_delays_one_flow_by_exactly_its_length() {
    let s = 41_580;
    let d = 2_000_000; // 2 us: 200 KB pile up behind it, below XOFF (691,684 bytes)
    let base = one_flow(None);
    // 256 packets back to back, plus the first packet's serialization at the NIC and both
    // links' latency.
    assert_eq!(base, 256 * s + s + 2 * 500_000);
    // The NIC paused at a packet boundary (100 s: packet 99 just finished, packet 100 not yet
    // pulled) holds everything from packet 100 back by exactly the pause.
    let at = SimTime(100 * s);
    let nic = one_flow(Some(("host:1-tor:0", at, at + SimTime(d))));
    assert_eq!(nic, base + d);
    // The ToR's port paused half-way through packet 100 (in service from 101 s + 500 ns)
    // finishes it, then sends nothing until the pause ends, then the rest back to back: the
    // last packet leaves d - s/2 later.
    let at = SimTime(101 * s + 500_000 + s / 2);
    let tor = one_flow(Some(("tor:0-host:0", at, at + SimTime(d))));
    assert_eq!(tor, base + d - s / 2);
}

#[test]
fn pfc_thresholds_are_checked_and_named() {
    let err = |extra: &[&str]| {
        let sets: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
        lbsim::ScenarioFile::builtin(&sets)
            .and_then(|f| lbsim::Scenario::build(f, &lbsim::Origin::builtin()))
            .err()
            .map(|e| e.to_string())
    };
    // Defaults: 800 KB less 2 x 500 ns x 100 GB/s + 2 x 4158 = 691,684; XON two MTUs below.
    let sc = scenario(&["topology.pfc=true"]);
    assert_eq!(sc.settings.pfc, Some((691_684, 683_368)));
    for (extra, key) in [
        (
            &["topology.pfc_xoff_bytes=100000"][..],
            "topology.pfc_xoff_bytes",
        ),
        (&["topology.pfc_xon_bytes=100000"], "topology.pfc_xon_bytes"),
        (
            &["topology.pfc=true", "topology.pfc_xoff_bytes=700000"],
            "topology.pfc_xoff_bytes",
        ),
        (
            &[
                "topology.pfc=true",
                "topology.pfc_xoff_bytes=100000",
                "topology.pfc_xon_bytes=100000",
            ],
            "topology.pfc_xon_bytes",
        ),
        (
            &["topology.pfc=true", "topology.buffer_bytes=110000"],
            "topology.buffer_bytes",
        ),
        (
            &["topology.pfc=true", "transport.loss_recovery=trim"],
            "topology.pfc",
        ),
    ] {
        let e = err(extra).unwrap_or_else(|| panic!("{extra:?} accepted"));
        assert!(e.contains(key), "{extra:?}: {e}");
    }
    assert!(err(&[
        "topology.pfc=true",
        "topology.pfc_xoff_bytes=691684",
        "topology.pfc_xon_bytes=0"
    ])
    .is_none());
}
