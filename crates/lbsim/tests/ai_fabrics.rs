//! The `ai` fabric kind (GPU servers, a NIC per GPU, NVLink, rails, planes, dual-ToR): the same
//! graph as SimAI's file of that cluster, each path class at its exact time, rail-aligned
//! traffic under one leaf (counted by port), closed-form path counts, and its keys' errors.

mod common;

use common::{
    bytes_by_port, check_conservation_of, run, scenario, scenario_toml, with_cm, TempDir,
};
use lbsim::ids::HostId;
use lbsim::time::SimTime;
use lbsim::{Origin, Scenario, ScenarioFile, Simulation};

/// The `ai` kind with `sets` on top, and the connection matrix `cm` as its workload.
fn ai(cm: &str, sets: &[&str]) -> Result<Scenario, String> {
    let mut all = vec!["topology.kind=ai"];
    all.extend_from_slice(sets);
    with_cm("", cm, &all)
}

/// Two servers of two GPUs, rail-optimized, 100 Gb/s NICs and 1 us links, NVLink at 1.6 Tb/s
/// and 25 ns: the cluster of the SimAI file below.
const TWO_BY_TWO: &[&str] = &[
    "topology.servers=2",
    "topology.leaf_servers=2",
    "topology.server.gpus=2",
    "topology.server.nvlink_gbps=1600",
    "topology.server.nvlink_latency_ns=25",
    "topology.link_gbps=100",
    "topology.link_latency_ns=1000",
];

/// SimAI's file of that cluster: GPUs 0-3, NVSwitches 4 and 5, rail leaves 6 (GPUs 0, 2) and 7
/// (GPUs 1, 3), spines 8 and 9 (a leaf's two down links give it two up links).
const TWO_BY_TWO_SIMAI: &str = "10 2 2 4 12 H100\n4 5 6 7 8 9\n\
    0 4 1600Gbps 0.000025ms 0\n0 6 100Gbps 0.001ms 0\n\
    1 4 1600Gbps 0.000025ms 0\n1 7 100Gbps 0.001ms 0\n\
    2 5 1600Gbps 0.000025ms 0\n2 6 100Gbps 0.001ms 0\n\
    3 5 1600Gbps 0.000025ms 0\n3 7 100Gbps 0.001ms 0\n\
    6 8 100Gbps 0.001ms 0\n6 9 100Gbps 0.001ms 0\n\
    7 8 100Gbps 0.001ms 0\n7 9 100Gbps 0.001ms 0\n";

#[test]
fn the_generated_cluster_is_the_graph_simais_file_gives() {
    let sc = ai("0->1 id 1 start 0 size 100\n", TWO_BY_TWO).unwrap();
    let dir = TempDir::new("ai-fabrics", "simai");
    let path = dir.join("fabric.txt");
    std::fs::write(&path, TWO_BY_TWO_SIMAI).unwrap();
    let file = ScenarioFile::from_toml(
        "",
        &[format!("topology.simai_topo=\"{}\"", path.display())],
        &Origin::builtin(),
    )
    .unwrap();
    let imported = Scenario::build(file, &Origin::builtin()).unwrap();
    assert_eq!(
        format!("{:?}", sc.topology.links),
        format!("{:?}", imported.topology.links)
    );
    for a in 0..4 {
        for b in 0..4 {
            let (a, b) = (HostId(a), HostId(b));
            assert_eq!(
                sc.topology.count_paths(a, b),
                imported.topology.count_paths(a, b)
            );
            assert_eq!(
                sc.topology.same_domain(a, b),
                imported.topology.same_domain(a, b)
            );
        }
    }
}

#[test]
fn each_path_class_takes_its_exact_time() {
    for (pair, want) in common::rail_2x2_path_classes() {
        let cm = format!("{pair} id 1 start 0 size 65536\n");
        let sim = run(ai(&cm, TWO_BY_TWO).unwrap());
        assert_eq!(sim.flows()[0].finish, Some(SimTime(want)), "{pair}");
        assert_eq!(sim.summary().lower_bound_ps, want, "{pair}");
        check_conservation_of(&sim, pair);
    }
}

#[test]
fn rail_aligned_traffic_stays_under_its_rail_leaf_and_cross_rail_climbs() {
    // 4 servers of 8 GPUs under one unit of rail leaves: every GPU sends to its rail peer on
    // the next server (all traffic rail-aligned), then to the next server's next rail.
    let base = [
        "topology.servers=4",
        "topology.leaf_servers=4",
        "telemetry.enabled=true",
        "load_balancing.scheme=host_spray",
    ];
    let cm = |shift: u32| {
        let mut s = String::new();
        for h in 0..32u32 {
            let (server, g) = (h / 8, h % 8);
            let dst = ((server + 1) % 4) * 8 + (g + shift) % 8;
            s.push_str(&format!("{h}->{dst} id {} start 0 size 100000\n", h + 1));
        }
        s
    };
    let (sim, ports) = bytes_by_port(ai(&cm(0), &base).unwrap());
    assert_eq!(sim.summary().flows_completed, 32);
    let up: u64 = ports
        .iter()
        .filter(|(from, to, _)| from.starts_with("leaf") && to.starts_with("spine"))
        .map(|p| p.2)
        .sum();
    let spine: u64 = ports
        .iter()
        .filter(|(from, _, _)| from.starts_with("spine"))
        .map(|p| p.2)
        .sum();
    let leaf_down: u64 = ports
        .iter()
        .filter(|(from, to, _)| from.starts_with("leaf") && !to.starts_with("spine"))
        .map(|p| p.2)
        .sum();
    assert_eq!(
        (up, spine),
        (0, 0),
        "rail-aligned traffic reached the spines"
    );
    assert!(leaf_down >= 32 * 100_000, "{leaf_down}");
    // Shifted by one rail, every flow climbs to the spines and comes down the other rail.
    let (_, ports) = bytes_by_port(ai(&cm(1), &base).unwrap());
    let spine: u64 = ports
        .iter()
        .filter(|(from, _, _)| from.starts_with("spine"))
        .map(|p| p.2)
        .sum();
    assert!(spine >= 32 * 100_000, "{spine}");
}

#[test]
fn path_counts_follow_ports_planes_and_spines() {
    // 2 servers of 2 GPUs, one unit: GPU 0 and GPU 2 share rail 0, GPU 3 is on rail 1.
    let count = |extra: &[&str], a: u32, b: u32| {
        let mut sets = TWO_BY_TWO.to_vec();
        sets.extend_from_slice(extra);
        let sc = ai("0->2 id 1 start 0 size 100\n", &sets).unwrap();
        sc.topology.count_paths(HostId(a), HostId(b))
    };
    // One port: one leaf path on the rail, 2 spines across rails.
    assert_eq!((count(&[], 0, 2), count(&[], 0, 3)), (1, 2));
    // Dual-ToR (two ports on one plane): 2 leaves on the rail; across rails
    // 2 uplinks x 4 spines (a leaf of 2 x 100G down has 2 up; two leaves a rail: 4) x 2 leaves.
    let dual = ["topology.server.nic_ports=2"];
    assert_eq!((count(&dual, 0, 2), count(&dual, 0, 3)), (2, 2 * 2 * 2));
    // Two planes: one leaf per plane on the rail, 2 planes x 2 spines across.
    let planes = ["topology.server.nic_ports=2", "topology.planes=2"];
    assert_eq!((count(&planes, 0, 2), count(&planes, 0, 3)), (2, 2 * 2));
    // Leaves per server pair (not rails): one leaf holds all four GPUs' NICs.
    let flat = ["topology.rails=false"];
    assert_eq!((count(&flat, 0, 2), count(&flat, 0, 3)), (1, 1));
}

#[test]
fn a_sprayed_flow_uses_both_planes() {
    // One flow across servers and rails on a two-plane cluster of 2 x 100G ports per NIC.
    let run_with = |scheme: &str| {
        let mut sets = TWO_BY_TWO.to_vec();
        let scheme = format!("load_balancing.scheme={scheme}");
        sets.extend([
            "topology.server.nic_ports=2",
            "topology.planes=2",
            "topology.buffer_bytes=4000000",
            "telemetry.enabled=true",
            scheme.as_str(),
        ]);
        let (sim, ports) = bytes_by_port(ai("0->3 id 1 start 0 size 4000000\n", &sets).unwrap());
        check_conservation_of(&sim, &scheme);
        assert!(sim.summary().lower_bound_ps <= sim.flows()[0].finish.unwrap().ps());
        // GPU 0's ports: to leaf 0 (plane 0) and leaf 2 (plane 1).
        let sent = |leaf: &str| {
            ports
                .iter()
                .find(|(from, to, _)| from == "host:0" && to == leaf)
                .unwrap()
                .2
        };
        (
            sim.flows()[0].finish.unwrap().ps(),
            sent("leaf:0"),
            sent("leaf:2"),
        )
    };
    // ECMP keeps the flow on one port: one port's rate (payload alone takes 320 us).
    let (ecmp, a, b) = run_with("ecmp");
    assert!(ecmp > 4_000_000 * 8 * 10, "{ecmp}");
    assert!(a == 0 || b == 0, "ECMP split one flow: {a} and {b} bytes");
    // Sprayed, its packets take both planes about equally and it finishes well before.
    let (spray, a, b) = run_with("host_spray");
    let (lo, hi) = (a.min(b) as f64, a.max(b) as f64);
    assert!(lo > 0.9 * hi, "planes carried {a} and {b} bytes");
    assert!((spray as f64) < 0.6 * ecmp as f64, "{spray} vs {ecmp}");
}

#[test]
fn bad_cluster_keys_are_refused_by_name() {
    let cm = "0->1 id 1 start 0 size 100\n";
    for (sets, key) in [
        (vec![], "topology.servers"),
        (
            vec!["topology.servers=4", "topology.planes=2"],
            "topology.planes",
        ),
        (
            vec!["topology.servers=4", "topology.server.nic_ports=3"],
            "topology.server.nic_ports",
        ),
        (
            vec!["topology.servers=6", "topology.leaf_servers=4"],
            "topology.leaf_servers",
        ),
        (
            vec!["topology.servers=4", "topology.oversubscription=3"],
            "topology.oversubscription",
        ),
        (
            vec!["topology.servers=4", "topology.server.gpus=0"],
            "topology.server.gpus",
        ),
        (
            vec!["topology.servers=4", "topology.server.domain_servers=3"],
            "topology.server.domain_servers",
        ),
        (
            vec!["topology.servers=4", "topology.server.nvlink_gbps=-1"],
            "topology.server.nvlink_gbps",
        ),
        // A failed switch must exist, and be a switch.
        (
            vec![
                "topology.servers=4",
                "failures.0.kind=down",
                "failures.0.switch=\"leaf:99\"",
            ],
            "failures[0].switch",
        ),
        (
            vec![
                "topology.servers=4",
                "failures.0.kind=down",
                "failures.0.switch=\"host:0\"",
            ],
            "failures[0].switch",
        ),
        (
            vec![
                "topology.servers=4",
                "failures.0.kind=down",
                "failures.0.switch=\"leaf:0\"",
                "failures.0.random_fraction=0.1",
            ],
            "failures[0]",
        ),
    ] {
        let e = ai(cm, &sets).unwrap_err();
        assert!(e.contains(key), "{sets:?}: {e}");
    }
    // The cluster's keys on another kind are refused, not ignored.
    let file = ScenarioFile::builtin(&["topology.servers=4".into()]).unwrap();
    let e = Scenario::build(file, &Origin::builtin())
        .unwrap_err()
        .to_string();
    assert!(e.contains("topology.servers") && e.contains("ai"), "{e}");
}

#[test]
fn the_presets_build_at_the_studys_scale() {
    for (name, hosts, switches) in [
        ("rail-optimized-1024", 1024, 32 + 32 + 128),
        ("two-plane-1024", 1024, 2 * (32 + 32) + 128),
        ("hpn-1024", 1024, 2 * (8 + 60) + 128),
        // Racks, zone spines, core, NVLink.
        ("meta-zones-896", 896, 56 + 4 * 16 + 2 + 112),
    ] {
        let path = format!("{}/../../scenarios/{name}.toml", env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(&path).unwrap();
        let sc = scenario_toml(&text, &[]);
        assert_eq!(sc.topology.hosts, hosts, "{name}");
        assert_eq!(sc.topology.switches.len(), switches as usize, "{name}");
    }
}

#[test]
fn a_failed_plane_costs_its_bandwidth_not_the_flow() {
    // Two planes of 100G ports; plane 1 (leaves 2 and 3, spines 2 and 3) fails at time zero,
    // or in the middle of the flow. The NIC sees its port's carrier: its packets go out of the
    // plane that is up, at one port's rate, and the flow completes.
    let finish = |scheme: &str, at_us: &str| {
        let mut sets = TWO_BY_TWO.to_vec();
        let scheme = format!("load_balancing.scheme={scheme}");
        sets.extend([
            "topology.server.nic_ports=2",
            "topology.planes=2",
            "topology.buffer_bytes=4000000",
            scheme.as_str(),
        ]);
        let failures: Vec<String> = ["leaf:2", "leaf:3", "spine:2", "spine:3"]
            .iter()
            .enumerate()
            .flat_map(|(i, sw)| {
                [
                    format!("failures.{i}.kind=down"),
                    format!("failures.{i}.switch=\"{sw}\""),
                    format!("failures.{i}.at_us={at_us}"),
                ]
            })
            .collect();
        sets.extend(failures.iter().map(String::as_str));
        let sim = run(ai("0->3 id 1 start 0 size 4000000\n", &sets).unwrap());
        check_conservation_of(&sim, &scheme);
        sim.flows()[0].finish.expect("the flow completes").ps()
    };
    // One 100G port: 977 packets of 4,158 B at 332,640 ps each.
    let one_port = 977 * 332_640u64;
    for scheme in ["host_spray", "ecmp", "reps"] {
        let t = finish(scheme, "0");
        eprintln!("plane 1 down from 0: {scheme} finishes at {t} ps");
        assert!(
            t >= one_port && (t as f64) < 1.02 * one_port as f64,
            "{scheme}: {t} ps against {one_port} on one port"
        );
    }
    // Failed in the middle of a sprayed flow: the packets lost in the plane are sent again.
    let t = finish("host_spray", "100");
    eprintln!("plane 1 down at 100 us: host_spray finishes at {t} ps");
    assert!(
        t >= 186_000_000 && (t as f64) < 1.2 * one_port as f64,
        "{t}"
    );
}

#[test]
fn a_failed_leaf_of_a_dual_tor_pair_costs_its_bandwidth_not_the_flow() {
    // Dual-ToR on one plane: GPU 0 on leaves 0 and 1 (rail 0), GPU 3 on leaves 2 and 3. Leaf 0
    // fails from time zero; routing converges at once, so spines stop sending down to it.
    for (pair, scheme) in [
        ("0->3", "host_spray"),
        ("3->0", "host_spray"),
        ("3->0", "ecmp"),
    ] {
        let mut sets = TWO_BY_TWO.to_vec();
        let scheme_key = format!("load_balancing.scheme={scheme}");
        sets.extend([
            "topology.server.nic_ports=2",
            "topology.buffer_bytes=4000000",
            "failures.0.kind=down",
            "failures.0.switch=\"leaf:0\"",
            "failure.convergence_us=0",
            scheme_key.as_str(),
        ]);
        let cm = format!("{pair} id 1 start 0 size 4000000\n");
        let sim = run(ai(&cm, &sets).unwrap());
        check_conservation_of(&sim, pair);
        let t = sim.flows()[0].finish.expect("the flow completes").ps();
        eprintln!("leaf 0 down: {pair} {scheme} finishes at {t} ps");
        let one_port = 977 * 332_640u64;
        assert!(
            t >= one_port && (t as f64) < 1.02 * one_port as f64,
            "{pair} {scheme}: {t} ps against {one_port} on one port"
        );
    }
}

/// A ring all-reduce over every GPU of 4 servers of 8 on one unit of rail leaves: bytes the
/// spines sent, and the run.
fn ring_on_rails(placement: &str) -> (Simulation, u64) {
    let placement = format!("workload.placement={placement}");
    let sc = scenario(&[
        "topology.kind=ai",
        "topology.servers=4",
        "topology.leaf_servers=4",
        "telemetry.enabled=true",
        "workload.kind=ring_allreduce",
        "workload.message_bytes=1048576",
        &placement,
    ]);
    let (sim, ports) = bytes_by_port(sc);
    let spine = ports
        .iter()
        .filter(|(from, to, _)| from.starts_with("spine") || to.starts_with("spine"))
        .map(|p| p.2)
        .sum();
    (sim, spine)
}

#[test]
fn a_rail_aligned_ring_crosses_servers_on_one_rail_and_never_a_spine() {
    // Rank order snakes through the servers (GPUs 0-7, then 7-0, ...), so the hop from one
    // server to the next joins two GPUs of one rail: one leaf, no spine.
    let (sim, spine) = ring_on_rails("rail_aligned");
    check_conservation_of(&sim, "rail_aligned");
    assert_eq!(sim.summary().flows_completed, sim.summary().flows);
    assert_eq!(spine, 0, "a rail-aligned ring reached the spines");
    // Ranks in server order cross from GPU 7 to the next server's GPU 0: another rail.
    let (sim, spine) = ring_on_rails("per_server");
    assert_eq!(sim.summary().flows_completed, sim.summary().flows);
    assert!(spine > 0);
    // The rail-aligned ring's network hops are rail-local, so it is no slower.
    let (a, b) = (
        ring_on_rails("rail_aligned").0.summary().cct_ps.unwrap(),
        sim.summary().cct_ps.unwrap(),
    );
    assert!(a <= b, "rail-aligned {a} ps, per-server {b} ps");
}

/// `TWO_BY_TWO` with `extra` on top and the built-in workload's keys.
fn two_by_two(extra: &[&str]) -> Scenario {
    let mut sets = vec!["topology.kind=ai"];
    sets.extend_from_slice(TWO_BY_TWO);
    sets.extend_from_slice(extra);
    scenario(&sets)
}

#[test]
fn pxn_moves_cross_rail_data_over_nvlink_then_one_rail() {
    // One 64 KiB message from GPU 1 (server 0, rail 1) to GPU 2 (server 1, rail 0). Direct, it
    // climbs to a spine: 4 network hops. Under PXN it crosses NVLink to GPU 0 (server 0, rail
    // 0), then GPU 0's NIC carries it under rail leaf 0: the two legs' exact times in a row.
    let one = [
        "workload.kind=outcast",
        "workload.fan_in=1",
        "workload.first_host=1",
        "workload.message_bytes=65536",
    ];
    let [nvlink, rail, spine] = common::rail_2x2_path_classes().map(|(_, t)| t);
    let sim = run(two_by_two(&one));
    assert_eq!(sim.summary().cct_ps, Some(spine));
    let mut pxn = one.to_vec();
    pxn.push("workload.pxn=true");
    let sim = run(two_by_two(&pxn));
    check_conservation_of(&sim, "pxn");
    let legs: Vec<(u32, u32)> = sim
        .flows()
        .iter()
        .map(|f| (f.spec.src.0, f.spec.dst.0))
        .collect();
    assert_eq!(legs, [(1, 0), (0, 2)]);
    assert_eq!(sim.summary().cct_ps, Some(nvlink + rail));
    assert_eq!(sim.summary().lower_bound_ps, nvlink + rail);
    // An all-to-all under PXN never reaches a spine.
    let mut a2a = vec![
        "workload.kind=all_to_all",
        "workload.pxn=true",
        "telemetry.enabled=true",
    ];
    a2a.push("workload.message_bytes=100000");
    let (sim, ports) = bytes_by_port(two_by_two(&a2a));
    assert_eq!(sim.summary().flows_completed, sim.summary().flows);
    let spine: u64 = ports
        .iter()
        .filter(|(from, to, _)| from.starts_with("spine") || to.starts_with("spine"))
        .map(|p| p.2)
        .sum();
    assert_eq!(spine, 0);
    // PXN needs servers.
    let file = ScenarioFile::builtin(&[
        "workload.kind=all_to_all".into(),
        "workload.pxn=true".into(),
    ])
    .unwrap();
    let e = Scenario::build(file, &Origin::builtin())
        .unwrap_err()
        .to_string();
    assert!(e.contains("workload.pxn"), "{e}");
}

#[test]
fn a_hierarchical_allreduce_takes_its_three_phases_exact_times() {
    // 2 servers of 2 GPUs, S = 64 KiB: a reduce-scatter of 32 KiB halves over NVLink (8
    // packets each way at once), a ring all-reduce of each half across the two servers on its
    // rail (two steps of 16 KiB, 4 packets), then the all-gather over NVLink: nothing shares
    // a link, so each step is its message's time alone.
    let sc = two_by_two(&[
        "workload.kind=hierarchical_allreduce",
        "workload.message_bytes=65536",
    ]);
    let legs: Vec<(u32, u32, u64)> = sc
        .flows
        .iter()
        .map(|f| (f.src.0, f.dst.0, f.size_bytes))
        .collect();
    let k = 32768;
    assert_eq!(
        legs,
        [
            (0, 1, k),
            (1, 0, k),
            (2, 3, k),
            (3, 2, k),
            // Rail 0 (GPUs 0 and 2), both steps, then rail 1.
            (0, 2, k / 2),
            (2, 0, k / 2),
            (0, 2, k / 2),
            (2, 0, k / 2),
            (1, 3, k / 2),
            (3, 1, k / 2),
            (1, 3, k / 2),
            (3, 1, k / 2),
            (0, 1, k),
            (1, 0, k),
            (2, 3, k),
            (3, 2, k),
        ]
    );
    let (nic, nv) = (332_640u64, 20_790u64);
    let nvlink = 2 * (nv + 25_000) + 7 * nv;
    let rail = 2 * (nic + 1_000_000) + 3 * nic;
    let want = 2 * nvlink + 2 * rail;
    assert_eq!(sc.labels.collectives[0].bound, SimTime(want));
    let sim = run(sc);
    check_conservation_of(&sim, "hierarchical");
    // The rail ring's second step starts the instant its first step's last packet lands, when
    // that packet's 64-byte ACK takes the NIC first: once, 5.12 ns at 100 Gb/s. (Across NVLink
    // the ACK and the next data leave by different ports.)
    let ack = 64 * 8 * 10;
    assert_eq!(sim.summary().cct_ps, Some(want + ack));
}

#[test]
fn a_hierarchical_allreduce_keeps_to_rails_and_beats_the_flat_ring() {
    // 4 servers of 8 GPUs on one unit of rail leaves: 2n(g-1) NVLink transfers and 2n(m-1)
    // rail transfers, none through a spine; against the flat ring it sends a 1/8 of the bytes
    // per GPU over the network.
    let sc = |kind: &str, placement: &str| {
        scenario(&[
            "topology.kind=ai",
            "topology.servers=4",
            "topology.leaf_servers=4",
            "telemetry.enabled=true",
            &format!("workload.kind={kind}"),
            "workload.message_bytes=4194304",
            &format!("workload.placement={placement}"),
        ])
    };
    for placement in ["per_server", "rail_aligned"] {
        let h = sc("hierarchical_allreduce", placement);
        assert_eq!(h.flows.len(), 2 * 32 * 7 + 2 * 32 * 3);
        for f in &h.flows {
            let same_server = f.src.0 / 8 == f.dst.0 / 8;
            let same_rail = f.src.0 % 8 == f.dst.0 % 8;
            assert!(same_server || same_rail, "{placement}: {f:?}");
        }
        let (sim, ports) = bytes_by_port(h);
        check_conservation_of(&sim, placement);
        let spine: u64 = ports
            .iter()
            .filter(|(from, to, _)| from.starts_with("spine") || to.starts_with("spine"))
            .map(|p| p.2)
            .sum();
        assert_eq!(spine, 0, "{placement}");
        let x = sim.summary().cct_ps.unwrap() as f64 / sim.summary().lower_bound_ps as f64;
        assert!((1.0..1.1).contains(&x), "{placement}: CCT/bound {x}");
        let flat = run(sc("ring_allreduce", placement));
        assert!(
            sim.summary().cct_ps.unwrap() < flat.summary().cct_ps.unwrap(),
            "{placement}"
        );
    }
    // A group that does not fill whole servers is refused by name.
    let file = ScenarioFile::builtin(&[
        "topology.kind=ai".into(),
        "topology.servers=4".into(),
        "topology.leaf_servers=4".into(),
        "workload.kind=hierarchical_allreduce".into(),
        "workload.group_size=12".into(),
    ])
    .unwrap();
    let e = Scenario::build(file, &Origin::builtin())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("workload.group_size") && e.contains("whole servers"),
        "{e}"
    );
}

#[test]
fn ring_channels_spread_the_server_crossings_over_every_rail() {
    // 4 servers of 8 GPUs, one unit of rail leaves. One ring crosses between servers on two
    // rails only; 8 channels, each S/8 over a ring that leaves a server on the rail it enters
    // the next by (channel c on rails c-1 and c), put every rail to work.
    let sc = |sets: &[&str]| {
        let mut v = vec![
            "topology.kind=ai",
            "topology.servers=4",
            "topology.leaf_servers=4",
            "telemetry.enabled=true",
            "workload.kind=ring_allreduce",
            "workload.message_bytes=8388608",
        ];
        v.extend_from_slice(sets);
        scenario(&v)
    };
    let one = sc(&["workload.placement=rail_aligned"]);
    assert_eq!(
        one.flows,
        sc(&["workload.placement=rail_aligned", "workload.channels=1"]).flows
    );
    let rails = |ports: &[(String, String, u64)]| -> Vec<u64> {
        // Bytes each rail's leaf sent down to its GPUs.
        let mut by = vec![0u64; 8];
        for (from, to, b) in ports {
            if from.starts_with("leaf") && !to.starts_with("spine") {
                let gpu: u32 = to
                    .trim_start_matches(|c: char| !c.is_ascii_digit())
                    .parse()
                    .unwrap();
                by[(gpu % 8) as usize] += b;
            }
        }
        by
    };
    let (one, ports) = bytes_by_port(one);
    let used = rails(&ports).iter().filter(|&&b| b > 0).count();
    assert_eq!(used, 2, "{:?}", rails(&ports));
    for placement in ["rail_aligned", "per_server"] {
        let p = format!("workload.placement={placement}");
        let eight = sc(&[&p, "workload.channels=8"]);
        assert_eq!(eight.flows.len(), 8 * 2 * 31 * 32);
        assert!(eight.flows.iter().all(|f| f.size_bytes == 8388608 / 8 / 32));
        for f in &eight.flows {
            let (a, b) = (f.src.0, f.dst.0);
            assert!(a / 8 == b / 8 || a % 8 == b % 8, "{placement}: {f:?}");
        }
        let (eight, ports) = bytes_by_port(eight);
        check_conservation_of(&eight, placement);
        let by = rails(&ports);
        // Equal data per rail (ACKs, counted too, may differ by a few).
        let (lo, hi) = (by.iter().min().unwrap(), by.iter().max().unwrap());
        assert!(*lo > 0 && (hi - lo) * 1000 < *hi, "{placement}: {by:?}");
        let spine: u64 = ports
            .iter()
            .filter(|(from, _, _)| from.starts_with("spine"))
            .map(|p| p.2)
            .sum();
        assert_eq!(spine, 0, "{placement}");
        let (a, b) = (
            eight.summary().cct_ps.unwrap(),
            one.summary().cct_ps.unwrap(),
        );
        // Each NIC carries two channels' S/8 instead of the whole S: about 4x less.
        assert!(a * 3 < b, "{placement}: 8 channels {a} ps, one ring {b} ps");
        let x = a as f64 / eight.summary().lower_bound_ps as f64;
        assert!((1.0..1.1).contains(&x), "{placement}: CCT/bound {x}");
    }
    let e = build_err_ai(&["workload.kind=ring_allreduce", "workload.channels=0"]);
    assert!(e.contains("workload.channels"), "{e}");
    let e = build_err_ai(&["workload.kind=all_to_all", "workload.channels=2"]);
    assert!(e.contains("workload.channels"), "{e}");
}

fn build_err_ai(sets: &[&str]) -> String {
    let mut v: Vec<String> = [
        "topology.kind=ai",
        "topology.servers=4",
        "topology.leaf_servers=4",
    ]
    .map(String::from)
    .to_vec();
    v.extend(sets.iter().map(|s| s.to_string()));
    let file = ScenarioFile::builtin(&v).unwrap();
    Scenario::build(file, &Origin::builtin())
        .map(|_| ())
        .unwrap_err()
        .to_string()
}

#[test]
fn a_gpus_nvlink_and_nic_traffic_do_not_hold_each_other_up() {
    // GPU 0 sends 1 MB to GPU 1 over NVLink and 1 MB to GPU 2 through its NIC at once. Its
    // NVLink and its NIC are separate links fed by separate engines: each flow takes exactly
    // its time alone (the NIC's backlog once held the NVLink flow to the NIC's rate: 79.9 us
    // instead of 5.1 us).
    let alone = |cm: &str| {
        let sim = run(ai(cm, TWO_BY_TWO).unwrap());
        sim.flows()[0].finish.unwrap()
    };
    let nv = alone("0->1 id 1 start 0 size 1000000\n");
    let nic = alone("0->2 id 1 start 0 size 1000000\n");
    let sim = run(ai(
        "0->1 id 1 start 0 size 1000000\n0->2 id 2 start 0 size 1000000\n",
        TWO_BY_TWO,
    )
    .unwrap());
    check_conservation_of(&sim, "nvlink and nic");
    let f = sim.flows();
    assert_eq!((f[0].finish.unwrap(), f[1].finish.unwrap()), (nv, nic));
}

/// 4 servers of 2 GPUs in 2 zones of 2 servers: a rail leaf per server and GPU (leaf_servers
/// 1), one spine per zone, spines joined by `cores` core switches (4 leaves per zone over a
/// taper of 4 / cores); 100 Gb/s links of 1 us.
fn zones(cores: u32, extra: &[&str]) -> Scenario {
    let mut v = zone_sets(cores);
    v.extend_from_slice(extra);
    scenario(&v)
}

#[test]
fn zones_join_through_a_core_tier_at_its_exact_time_and_taper() {
    let sc = zones(4, &[]);
    let (a, far, near) = (HostId(0), HostId(4), HostId(2));
    // Across zones: leaf, spine, one of 4 cores, spine, leaf; inside a zone on one rail:
    // leaf, spine, leaf.
    assert_eq!(sc.topology.count_paths(a, far), 4);
    assert_eq!(sc.topology.count_paths(a, near), 1);
    assert_eq!(zones(1, &[]).topology.count_paths(a, far), 1);
    let nic = 332_640u64;
    for (pair, hops) in [("0->4", 6u64), ("0->2", 4)] {
        let cm = format!("{pair} id 1 start 0 size 65536\n");
        let sim = run(with_cm("", &cm, &zone_sets(4)).unwrap());
        let want = hops * (nic + 1_000_000) + 15 * nic;
        assert_eq!(sim.flows()[0].finish, Some(SimTime(want)), "{pair}");
        check_conservation_of(&sim, pair);
    }
    // Zone 0's four GPUs each send 1 MB to zone 1: at 1:1 the spine's four core links carry
    // them side by side; at 4:1 one core link carries all four.
    let cm: String = (0..4)
        .map(|h| format!("{h}->{} id {} start 0 size 1000000\n", h + 4, h + 1))
        .collect();
    let cct = |cores: u32| {
        let mut sets = zone_sets(cores);
        sets.push("load_balancing.scheme=host_spray");
        let sim = run(with_cm("", &cm, &sets).unwrap());
        check_conservation_of(&sim, "taper");
        assert_eq!(sim.summary().flows_completed, 4);
        sim.summary().cct_ps.unwrap()
    };
    let (flat, tapered) = (cct(4), cct(1));
    // One flow alone: 1 MB at 100 Gb/s is 80 us of payload.
    assert!(flat < 95_000_000, "1:1 {flat} ps");
    assert!(
        tapered > 300_000_000 && tapered < 380_000_000,
        "4:1 {tapered} ps"
    );
}

fn zone_sets<'a>(cores: u32) -> Vec<&'a str> {
    let taper = match cores {
        4 => "topology.core_oversubscription=1",
        2 => "topology.core_oversubscription=2",
        _ => "topology.core_oversubscription=4",
    };
    vec![
        "topology.kind=ai",
        "topology.servers=4",
        "topology.leaf_servers=1",
        "topology.zone_servers=2",
        "topology.server.gpus=2",
        "topology.link_gbps=100",
        "topology.link_latency_ns=1000",
        taper,
    ]
}

#[test]
fn bad_zone_keys_are_refused_by_name() {
    for (sets, key) in [
        (&["topology.zone_servers=3"][..], "topology.zone_servers"),
        (
            &["topology.core_oversubscription=7"][..],
            "topology.core_oversubscription",
        ),
        (
            &[
                "topology.zone_servers=4",
                "topology.core_oversubscription=2",
            ][..],
            "topology.core_oversubscription",
        ),
        (
            &[
                "topology.zone_servers=2",
                "topology.core_oversubscription=0.5",
            ][..],
            "topology.core_oversubscription",
        ),
        (
            &[
                "topology.zone_servers=2",
                "topology.core_oversubscription=3",
            ][..],
            "whole number",
        ),
    ] {
        let mut v: Vec<String> = [
            "topology.kind=ai",
            "topology.servers=4",
            "topology.leaf_servers=1",
            "topology.server.gpus=2",
        ]
        .map(String::from)
        .to_vec();
        v.extend(sets.iter().map(|s| s.to_string()));
        let e = ScenarioFile::builtin(&v)
            .map_err(|e| e.to_string())
            .and_then(|f| {
                Scenario::build(f, &Origin::builtin())
                    .map(|_| ())
                    .map_err(|e| e.to_string())
            })
            .unwrap_err();
        assert!(e.contains(key), "{sets:?}: {e}");
    }
}

#[test]
fn pxn_sends_each_chunk_on_as_it_lands() {
    // 256 KiB from GPU 1 (server 0, rail 1) to GPU 2 (server 1, rail 0) under PXN. Whole, it
    // crosses NVLink to GPU 0 and then GPU 0's NIC: the two legs' times in a row. In 64 KiB
    // chunks NVLink hands them over one after another and GPU 0's NIC starts on the first as
    // soon as it lands, its 64 packets then back to back: the first chunk's NVLink time, the
    // NIC's 64 packets, and the last one's hop from the rail leaf.
    let (nic, nv) = (332_640u64, 20_790u64);
    let one = |chunk: &str| {
        let c = format!("workload.pxn_chunk_bytes={chunk}");
        let sim = run(two_by_two(&[
            "workload.kind=outcast",
            "workload.fan_in=1",
            "workload.first_host=1",
            "workload.message_bytes=262144",
            "workload.pxn=true",
            &c,
        ]));
        check_conservation_of(&sim, chunk);
        (sim.flows().len(), sim.summary().cct_ps.unwrap())
    };
    let whole = (2 * (nv + 25_000) + 63 * nv) + (2 * (nic + 1_000_000) + 63 * nic);
    assert_eq!(one("0"), (2, whole));
    assert_eq!(one("262144"), (2, whole));
    let first = 2 * (nv + 25_000) + 15 * nv;
    assert_eq!(one("65536"), (8, first + 65 * nic + 2 * 1_000_000));
    let e = build_err_ai(&[
        "workload.kind=all_to_all",
        "workload.pxn=true",
        "workload.pxn_chunk_bytes=100",
    ]);
    assert!(e.contains("workload.pxn_chunk_bytes"), "{e}");
    let e = build_err_ai(&["workload.kind=all_to_all", "workload.pxn_chunk_bytes=65536"]);
    assert!(
        e.contains("workload.pxn_chunk_bytes") && e.contains("pxn = true"),
        "{e}"
    );
}

#[test]
fn partitions_keep_each_server_whole_with_its_rail_leaves() {
    // A server's 8 GPUs reach 8 rail leaves of their unit; cutting its NVLink (25 ns, shorter
    // than any window) would leave the run on one thread. The blocks are the 4 units.
    let path = format!(
        "{}/../../scenarios/rail-optimized-1024.toml",
        env!("CARGO_MANIFEST_DIR")
    );
    let sc = scenario_toml(&std::fs::read_to_string(path).unwrap(), &[]);
    let t = &sc.topology;
    let (n, host, switch) = t.partition_groups();
    assert_eq!(n, 4);
    for h in 0..1024u32 {
        assert_eq!(host[h as usize], h / 256, "host {h}");
    }
    // Every link but a leaf's to a spine joins one block.
    for l in &t.links {
        let of = |node: lbsim::ids::NodeId| match node {
            lbsim::ids::NodeId::Host(h) => Some(host[h.idx()]),
            lbsim::ids::NodeId::Switch(s) => switch[s.idx()],
        };
        if let (Some(a), Some(b)) = (of(l.from), of(l.to)) {
            assert_eq!(a, b, "{:?}", l);
        }
    }
    // Without servers the groups are as before: a fat-tree's pods.
    assert_eq!(scenario(&["topology.k=4"]).topology.partition_groups().0, 4);
}
