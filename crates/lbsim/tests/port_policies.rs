//! Host-side port policies (`load_balancing.port`) on a cluster whose NICs have two ports, one
//! per plane: a lone flow striped over both at exactly half its one-port time, a flow pinned
//! by hash, a degraded plane left by the adaptive policy and not by the blind ones, the ACK on
//! the data's plane, and the key's errors.

mod common;

use common::{bytes_by_port, check_conservation_of, run, with_cm};
use lbsim::{Scenario, Simulation};

/// Two servers of two GPUs, each GPU's NIC with a 100G port on each of two planes, 1 us links.
const TWO_PLANES: &[&str] = &[
    "topology.kind=ai",
    "topology.servers=2",
    "topology.leaf_servers=2",
    "topology.server.gpus=2",
    "topology.server.nic_ports=2",
    "topology.planes=2",
    "topology.link_gbps=100",
    "topology.link_latency_ns=1000",
    "topology.buffer_bytes=4000000",
];

/// 4 MB from GPU 0 to GPU 3 (other server, other rail): 977 packets, the last short.
const ONE_FLOW: &str = "0->3 id 1 start 0 size 4000000\n";

fn cluster(toml: &str, sets: &[&str]) -> Result<Scenario, String> {
    let mut all = TWO_PLANES.to_vec();
    all.extend_from_slice(sets);
    with_cm(toml, ONE_FLOW, &all)
}

fn finish(sim: &Simulation) -> u64 {
    sim.flows()[0].finish.expect("the flow completes").ps()
}

/// One full packet (4,158 B) at 100 Gb/s.
const PACKET_PS: u64 = 332_640;

#[test]
fn a_lone_flow_striped_by_the_host_takes_half_its_one_port_time() {
    let t = |sets: &[&str]| {
        let sim = run(cluster("", sets).unwrap());
        check_conservation_of(&sim, &format!("{sets:?}"));
        finish(&sim)
    };
    let one_port = t(&["load_balancing.port=hash"]);
    // On one port the 976 full packets leave back to back; striped in turn, the other port
    // carries 488 of them at the same time: exactly that much earlier.
    for port in ["round_robin", "idle", "adaptive"] {
        for scheme in ["ecmp", "host_spray"] {
            let s = format!("load_balancing.scheme={scheme}");
            let p = format!("load_balancing.port={port}");
            assert_eq!(
                t(&[&s, &p]),
                one_port - 488 * PACKET_PS,
                "{port} with {scheme}"
            );
        }
    }
    // ECMP's flow on one port whether the scheme or a hash chooses it.
    assert_eq!(t(&["load_balancing.scheme=ecmp"]), one_port);
    // Random ports leave one idle while the other runs its four packets ahead: slower than
    // striping, faster than one port.
    let spray = t(&["load_balancing.port=spray"]);
    assert!(
        spray > one_port - 488 * PACKET_PS && spray < one_port * 6 / 10,
        "{spray}"
    );
}

#[test]
fn a_hashed_flow_keeps_one_plane_and_its_acks_come_back_on_it() {
    for (port, both) in [("hash", false), ("round_robin", true)] {
        let p = format!("load_balancing.port={port}");
        let sc = cluster(
            "",
            &[
                "load_balancing.scheme=host_spray",
                &p,
                "telemetry.enabled=true",
            ],
        )
        .unwrap();
        let (sim, ports) = bytes_by_port(sc);
        check_conservation_of(&sim, port);
        let sent = |from: &str, to: &str| {
            ports
                .iter()
                .find(|(f, t, _)| f == from && t == to)
                .unwrap_or_else(|| panic!("no port {from} -> {to}"))
                .2
        };
        // GPU 0's ports go to leaves 0 (plane 0) and 2 (plane 1); GPU 3's to leaves 1 and 3.
        let data = [sent("host:0", "leaf:0"), sent("host:0", "leaf:2")];
        let acks = [sent("host:3", "leaf:1"), sent("host:3", "leaf:3")];
        for plane in 0..2 {
            // Each plane's ACKs answer that plane's data: one ACK per data packet.
            assert_eq!(
                data[plane] == 0,
                acks[plane] == 0,
                "{port}: {data:?} {acks:?}"
            );
        }
        if both {
            assert!(data[0].abs_diff(data[1]) <= 4158, "{port}: {data:?}");
        } else {
            assert!(data.contains(&0), "{port}: {data:?}");
        }
    }
}

#[test]
fn the_adaptive_policy_leaves_a_degraded_plane_the_blind_ones_do_not() {
    // Plane 1's spines keep a quarter of their rate: the plane carries 50 Gb/s, plane 0 100.
    let degraded = "[[failures]]\nkind = \"degraded\"\nswitch = \"spine:2\"\nrate_fraction = 0.25\n\
                    [[failures]]\nkind = \"degraded\"\nswitch = \"spine:3\"\nrate_fraction = 0.25\n";
    let run_with = |port: &str| {
        let p = format!("load_balancing.port={port}");
        let sc = cluster(
            degraded,
            &[
                "load_balancing.scheme=host_spray",
                "transport.loss_recovery=sack",
                // The default buffer: marks come back while the plane's queue still matters.
                "topology.buffer_bytes=800000",
                &p,
                "telemetry.enabled=true",
            ],
        )
        .unwrap();
        let (sim, ports) = bytes_by_port(sc);
        check_conservation_of(&sim, port);
        let sent = |to: &str| {
            ports
                .iter()
                .find(|(f, t, _)| f == "host:0" && t == to)
                .unwrap()
                .2
        };
        (finish(&sim), sent("leaf:0"), sent("leaf:2"))
    };
    let (rr, a, b) = run_with("round_robin");
    // In turn, half the packets wait on the slow plane whatever it shows.
    assert!(a.abs_diff(b) < a / 20, "round_robin: {a} and {b} bytes");
    let (idle, ..) = run_with("idle");
    assert_eq!(idle, rr, "the NIC's own queues cannot see the plane");
    let (adaptive, a, b) = run_with("adaptive");
    eprintln!("degraded plane: round_robin {rr} ps, adaptive {adaptive} ps ({a} and {b} bytes)");
    assert!(a > 3 * b / 2, "adaptive: {a} and {b} bytes");
    assert!((adaptive as f64) < 0.7 * rr as f64, "{adaptive} vs {rr}");
}

#[test]
fn a_failed_plane_costs_each_port_policy_its_bandwidth_not_the_flow() {
    // Plane 1 down from time zero: the NIC's carrier sends everything on plane 0.
    let failed: String = ["leaf:2", "leaf:3", "spine:2", "spine:3"]
        .iter()
        .map(|sw| format!("[[failures]]\nkind = \"down\"\nswitch = \"{sw}\"\nat_us = 0\n"))
        .collect();
    let one_port = finish(&run(cluster("", &["load_balancing.port=hash"]).unwrap()));
    for port in ["hash", "round_robin", "spray", "idle", "adaptive"] {
        let p = format!("load_balancing.port={port}");
        let sim = run(cluster(&failed, &["load_balancing.scheme=host_spray", &p]).unwrap());
        check_conservation_of(&sim, port);
        let t = finish(&sim);
        assert!(
            t >= one_port - 2 * PACKET_PS && (t as f64) < 1.02 * one_port as f64,
            "{port}: {t} ps against {one_port} on one port"
        );
    }
}

#[test]
fn the_port_key_is_checked_by_name() {
    let err = |toml: &str, sets: &[&str]| cluster(toml, sets).unwrap_err();
    let e = err("", &["load_balancing.port=magic"]);
    assert!(
        e.contains("load_balancing.port") && e.contains("round_robin") && e.contains("adaptive"),
        "{e}"
    );
    let e = err(
        "",
        &["load_balancing.port=hash", "load_balancing.port_hold_us=3"],
    );
    assert!(
        e.contains("load_balancing.port_hold_us") && e.contains("port = adaptive"),
        "{e}"
    );
    let e = err(
        "",
        &[
            "load_balancing.port=adaptive",
            "load_balancing.port_hold_us=-1",
        ],
    );
    assert!(e.contains("port_hold_us"), "{e}");
    assert!(cluster(
        "",
        &[
            "load_balancing.port=adaptive",
            "load_balancing.port_hold_us=3"
        ]
    )
    .is_ok());
    // A fabric whose hosts have one port each has nothing to choose.
    let e = with_cm(
        "",
        ONE_FLOW,
        &["topology.k=4", "load_balancing.port=round_robin"],
    )
    .unwrap_err();
    assert!(
        e.contains("load_balancing.port") && e.contains("one each"),
        "{e}"
    );
    // The default may be named anywhere.
    assert!(with_cm(
        "",
        ONE_FLOW,
        &["topology.k=4", "load_balancing.port=scheme"]
    )
    .is_ok());
}

#[test]
fn many_flows_of_one_host_in_step_fill_both_ports_under_adaptive() {
    // 32 flows of 16 KiB from GPU 0, as an all-to-all's share: were each flow's first packet to
    // go on its first port, every flow would queue on port 0 while port 1 idled (CCT/bound
    // 1.85). Free ports first, as `idle`, gives idle's time.
    let cm: String = std::iter::once(String::new())
        .chain((0..32).map(|i| format!("0->{} id {} start 0 size 16384\n", 2 + i % 2, i + 1)))
        .collect();
    let run_with = |port: &str| {
        let p = format!("load_balancing.port={port}");
        let mut sets = TWO_PLANES.to_vec();
        sets.push(&p);
        let sim = run(with_cm("", &cm, &sets).unwrap());
        check_conservation_of(&sim, port);
        (
            sim.summary().cct_ps.unwrap(),
            sim.summary().cct_over_bound.unwrap(),
        )
    };
    let (idle, ratio) = run_with("idle");
    assert!(ratio < 1.2, "idle {ratio}");
    assert_eq!(run_with("adaptive").0, idle);
}
