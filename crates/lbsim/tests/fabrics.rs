//! Fabrics beyond the study's: tapered Clos built from per-tier radices, checked against exact
//! hand calculations, closed-form path counts and the invariants every fabric must keep.

mod common;

use common::{check_conservation_of, run, with_cm, TempDir};
use lbsim::ids::{HostId, NodeId, SwitchId};
use lbsim::net::{Route, Topology};
use lbsim::time::SimTime;
use lbsim::Scenario;
use std::sync::atomic::{AtomicUsize, Ordering};

/// htsim's `fat_tree_128_4os` shape: a k=8 fat-tree whose aggregation switches have one uplink
/// each (4:1 at the aggregation tier), so 4 cores; tier 2 at `core_gbps`.
fn tapered(core_gbps: f64) -> String {
    format!(
        "[topology]\nkind = \"clos\"\nhosts = 128\npod_hosts = 16\nlink_gbps = 100\n\
         link_latency_ns = 1000\n\
         [[topology.tier]]\ndown = 4\nup = 4\n\
         [[topology.tier]]\ndown = 4\nup = 1\ngbps = 200\nlatency_ns = 500\n\
         [[topology.tier]]\ndown = 8\ngbps = {core_gbps}\nlatency_ns = 2000\n\
         [packet]\nheader_bytes = 82\n"
    )
}

#[test]
fn a_tapered_clos_has_the_counts_its_radices_give() {
    let sc = with_cm(&tapered(50.0), "0->127 id 1 start 0 size 100\n", &[]).unwrap();
    let t = &sc.topology;
    let count = |tier: u8| t.switches.iter().filter(|s| s.tier == tier).count();
    assert_eq!((t.hosts, count(0), count(1), count(2)), (128, 32, 32, 4));
    // A ToR's 4 uplinks reach its pod's 4 aggs; an agg's one uplink reaches one core; a core
    // reaches the agg at its position in each of the 8 pods.
    let ports = |tier: u8| t.switches.iter().find(|s| s.tier == tier).unwrap().ports;
    assert_eq!((ports(0), ports(1), ports(2)), (8, 5, 8));
    assert_eq!(t.describe(), "clos 3 tiers, 128 hosts");
    // Paths between hosts under one ToR, one pod, across pods: 1, 4, and 4 x 1.
    let n = |a, b| t.path_count(HostId(a), HostId(b));
    assert_eq!((n(0, 1), n(0, 4), n(0, 127)), (Some(1), Some(4), Some(4)));
}

#[test]
fn one_flow_across_a_tapered_core_finishes_at_its_exact_time() {
    // 16 packets of 4,178 B. Per packet: 334,240 ps on a 100G host link, 167,120 on a 200G
    // ToR-agg link, 668,480 on a 50G agg-core link. A pipeline of equal packets finishes at the
    // first packet's crossing plus 15 of the slowest link's serializations.
    let sc = with_cm(&tapered(50.0), "0->127 id 1 start 0 size 65536\n", &[]).unwrap();
    let sim = run(sc);
    let first = 2 * (334_240 + 167_120 + 668_480) + 2 * (1_000_000 + 500_000 + 2_000_000);
    let want = first + 15 * 668_480;
    assert_eq!(sim.flows()[0].finish, Some(SimTime(want)));
    let s = sim.summary();
    assert!(s.lower_bound_ps <= want, "{} > {want}", s.lower_bound_ps);
    check_conservation_of(&sim, "tapered");
}

#[test]
fn every_route_of_a_clos_reaches_its_destination_by_any_choice() {
    for toml in [tapered(100.0), bundled_leaf_spine()] {
        let sc = with_cm(&toml, "0->1 id 1 start 0 size 100\n", &[]).unwrap();
        let t = &sc.topology;
        for src in 0..t.hosts {
            for dst in (0..t.hosts).step_by(7) {
                if src == dst {
                    continue;
                }
                let mut link = &t.links[src as usize];
                let mut hops = 0;
                while let NodeId::Switch(sw) = link.to {
                    let p = match t.route(sw, HostId(dst)) {
                        Route::Port(p) => p,
                        Route::Group { first, n } => {
                            lbsim::ids::PortId(first.0 + (src + dst + hops) % n)
                        }
                    };
                    assert_eq!(t.links[p.idx()].from, NodeId::Switch(sw));
                    link = &t.links[p.idx()];
                    hops += 1;
                    assert!(hops <= 6, "{src} -> {dst}");
                }
                assert_eq!(link.to, NodeId::Host(HostId(dst)));
            }
        }
    }
}

/// 4 leaves of 8 hosts, 2 spines, 2 parallel links between each leaf and spine.
fn bundled_leaf_spine() -> String {
    "[topology]\nkind = \"clos\"\nhosts = 32\nlink_gbps = 100\n\
     [[topology.tier]]\ndown = 8\nup = 4\n\
     [[topology.tier]]\ndown = 8\n"
        .to_string()
}

#[test]
fn parallel_links_form_one_next_hop_group() {
    let sc = with_cm(&bundled_leaf_spine(), "0->31 id 1 start 0 size 100\n", &[]).unwrap();
    let t = &sc.topology;
    // A spine reaches leaf 3 over its two links to it: down ports 6 and 7.
    let spine = SwitchId(4);
    let base = t.switches[spine.idx()].port_base;
    assert_eq!(
        t.route(spine, HostId(31)),
        Route::Group {
            first: lbsim::ids::PortId(base + 6),
            n: 2
        }
    );
    // Paths are no longer named by up choices alone: host_dr is refused on this fabric.
    assert_eq!(t.path_count(HostId(0), HostId(31)), None);
    let e = with_cm(
        &bundled_leaf_spine(),
        "0->31 id 1 start 0 size 100\n",
        &["load_balancing.scheme=host_dr"],
    )
    .unwrap_err();
    assert!(e.contains("host_dr") && e.contains("clos"), "{e}");
    // Spraying over it delivers everything.
    for scheme in ["ecmp", "host_spray", "ofan", "switch_ar"] {
        let sc = with_cm(
            &bundled_leaf_spine(),
            "0->31 id 1 start 0 size 1000000\n5->20 id 2 start 0 size 1000000\n",
            &[&format!("load_balancing.scheme={scheme}")],
        )
        .unwrap();
        let sim = run(sc);
        assert!(sim.flows().iter().all(|f| f.finish.is_some()), "{scheme}");
        check_conservation_of(&sim, scheme);
    }
}

#[test]
fn a_clos_with_the_fat_trees_radices_is_the_fat_tree() {
    let clos = "[topology]\nkind = \"clos\"\nhosts = 128\npod_hosts = 16\n\
                [[topology.tier]]\ndown = 4\nup = 4\n[[topology.tier]]\ndown = 4\nup = 4\n\
                [[topology.tier]]\ndown = 8\n";
    let a = with_cm(clos, "0->127 id 1 start 0 size 100\n", &[]).unwrap();
    let b = with_cm("", "0->127 id 1 start 0 size 100\n", &[]).unwrap();
    let (a, b) = (&a.topology, &b.topology);
    assert_eq!(a.links.len(), b.links.len());
    for p in 0..a.links.len() as u32 {
        let p = lbsim::ids::PortId(p);
        assert_eq!(a.link_name(p), b.link_name(p));
    }
    for s in 0..a.switches.len() as u32 {
        for d in 0..a.hosts {
            assert_eq!(
                a.route(SwitchId(s), HostId(d)),
                b.route(SwitchId(s), HostId(d))
            );
        }
    }
}

#[test]
fn clos_keys_that_do_not_describe_a_clos_are_refused_by_name() {
    let cases: &[(&str, &str)] = &[
        (
            "[topology]\nkind = \"clos\"\n[[topology.tier]]\ndown = 4\nup = 1\n[[topology.tier]]\ndown = 4\n",
            "topology.hosts",
        ),
        (
            "[topology]\nkind = \"clos\"\nhosts = 16\n[[topology.tier]]\ndown = 4\nup = 1\n",
            "topology.tier",
        ),
        (
            "[topology]\nkind = \"clos\"\nhosts = 16\n[[topology.tier]]\ndown = 4\nup = 1\n\
             [[topology.tier]]\ndown = 3\n",
            "topology.tier",
        ),
        (
            "[topology]\nkind = \"clos\"\nhosts = 16\n[[topology.tier]]\ndown = 4\nup = 1\n\
             [[topology.tier]]\ndown = 4\ngbps = -1\n",
            "topology.tier[1].gbps",
        ),
        (
            "[topology]\nkind = \"clos\"\nhosts = 64\n[[topology.tier]]\ndown = 4\nup = 2\n\
             [[topology.tier]]\ndown = 4\nup = 2\n[[topology.tier]]\ndown = 4\n",
            "topology.pod_hosts",
        ),
        (
            "[topology]\nkind = \"clos\"\nhosts = 16\n[[topology.tier]]\ndown = 4\nup = 1\nwidth = 3\n\
             [[topology.tier]]\ndown = 4\n",
            "width",
        ),
    ];
    for (toml, key) in cases {
        let e = with_cm(toml, "0->1 id 1 start 0 size 100\n", &[]).unwrap_err();
        assert!(e.contains(key), "{key}: {e}");
    }
}

#[test]
fn failures_weights_and_rates_work_on_a_tapered_clos() {
    // The one uplink of agg 0 (pod 0) fails and routing converges at once: pod 0's ToRs route
    // around it through the other aggs, and every other pod's ToRs avoid their agg 0 (its core
    // no longer reaches pod 0) for pod 0's hosts; every flow finishes.
    let toml = tapered(100.0)
        + "[failure]\nconvergence_us = 0\n\
           [[failures]]\nlink = \"agg:0-core:0\"\nat_us = 0\nkind = \"down\"\n";
    // Every host of pod 0 sends to one in another pod (ECMP hashes some onto agg 0).
    let cm: String = (0..16)
        .map(|i| {
            format!(
                "{i}->{} id {} start 0 size 200000\n",
                16 + (i * 7 + 20) % 112,
                i + 1
            )
        })
        .collect();
    for scheme in ["ecmp", "host_spray", "ofan", "reps"] {
        let sc = with_cm(&toml, &cm, &[&format!("load_balancing.scheme={scheme}")]).unwrap();
        let sim = run(sc);
        assert!(sim.flows().iter().all(|f| f.finish.is_some()), "{scheme}");
        assert_eq!(sim.counters().unroutable, 0, "{scheme}");
        check_conservation_of(&sim, scheme);
    }
    // Without convergence, ECMP's flows pinned to the dead uplink never finish.
    let never = toml.replace("convergence_us = 0", "");
    let sim = run(with_cm(
        &never,
        &cm,
        &["load_balancing.scheme=ecmp", "end_time_us=2000"],
    )
    .unwrap());
    assert!(sim.flows().iter().any(|f| f.finish.is_none()));
}

#[test]
fn a_tapered_clos_runs_alike_on_one_and_three_threads() {
    let cm: String = (0..128)
        .map(|i| {
            format!(
                "{i}->{} id {} start 0 size 200000\n",
                (i * 37 + 11) % 128,
                i + 1
            )
        })
        .filter(|l| {
            let (a, b) = l.split_once("->").unwrap();
            a != b.split(' ').next().unwrap()
        })
        .collect();
    let runs: Vec<String> = [1, 3]
        .iter()
        .map(|th| {
            let sc = with_cm(&tapered(100.0), &cm, &[&format!("threads={th}")]).unwrap();
            let sim = run(sc);
            serde_json::to_string(&sim.summary()).unwrap()
        })
        .collect();
    assert_eq!(runs[0], runs[1]);
}

#[test]
fn partitions_of_a_clos_are_its_pods() {
    let t = Topology::fat_tree(
        4,
        lbsim::net::LinkParams {
            rate: lbsim::time::BitsPerSec::from_gbps(100.0),
            latency: SimTime::from_ns(1000),
            switch_latency: SimTime::ZERO,
        },
    );
    let (groups, hosts, switches) = t.partition_groups();
    assert_eq!(groups, 4);
    assert_eq!(hosts[..8], [0, 0, 0, 0, 1, 1, 1, 1]);
    // ToRs 0..7 and aggs 8..15 in their pods; cores shared.
    assert_eq!(switches[2], Some(1));
    assert_eq!(switches[9], Some(0));
    assert_eq!(switches[16], None);
}

#[test]
fn path_counts_match_closed_forms_for_every_generator() {
    let p = lbsim::net::LinkParams {
        rate: lbsim::time::BitsPerSec::from_gbps(100.0),
        latency: SimTime::from_ns(1000),
        switch_latency: SimTime::ZERO,
    };
    // Fat-tree: 1 under a ToR, k/2 in a pod, (k/2)^2 across pods.
    for k in [4u32, 6, 8] {
        let t = Topology::fat_tree(k, p);
        let h = k / 2;
        let want = [Some(1), Some(h as u64), Some((h * h) as u64)];
        let got: Vec<_> = t.tier_summaries().iter().map(|s| s.paths).collect();
        assert_eq!(got, want, "k={k}");
        assert_eq!(
            t.count_paths(HostId(0), HostId(t.hosts - 1)),
            (h * h) as u64
        );
        assert_eq!(t.path_count(HostId(0), HostId(t.hosts - 1)), Some(h * h));
    }
    // Leaf-spine: one path per spine.
    let t = Topology::leaf_spine(4, 5, 3, p, p.rate);
    assert_eq!(t.count_paths(HostId(0), HostId(19)), 3);
    assert_eq!(t.count_paths(HostId(0), HostId(1)), 1);
    // A 3-tier Clos with parallel cables (ASTRA-sim's 8-node file): 2 ToR uplinks, then 4 agg
    // uplinks, then 2 cables from the core down to the destination pod's agg: 16 across pods,
    // 2 within a pod.
    let toml = "[topology]\nkind = \"clos\"\nhosts = 8\npod_hosts = 4\nlink_gbps = 200\n\
                [[topology.tier]]\ndown = 2\nup = 2\n[[topology.tier]]\ndown = 2\nup = 4\n\
                [[topology.tier]]\ndown = 4\ngbps = 100\n";
    let sc = with_cm(toml, "0->7 id 1 start 0 size 100\n", &[]).unwrap();
    let t = &sc.topology;
    assert_eq!(t.count_paths(HostId(0), HostId(7)), 16);
    assert_eq!(t.count_paths(HostId(0), HostId(2)), 2);
    assert_eq!(t.count_paths(HostId(0), HostId(1)), 1);
    // Every path of the tapered Clos: 4 ToR uplinks x 1 agg uplink.
    let sc = with_cm(&tapered(100.0), "0->127 id 1 start 0 size 100\n", &[]).unwrap();
    assert_eq!(sc.topology.count_paths(HostId(0), HostId(127)), 4);
}

/// host_spray over a long run uses every path between two hosts equally often, parallel
/// cables and tapers included. Its packets carry uniform entropies (lb::spray's own test), and
/// each switch's hash picks within its group, so each path's share of traffic is its share of
/// the entropy space: every entropy is walked through the switches and the paths' shares are
/// tested against the uniform law over the paths the fabric counts (chi-square: a hash that
/// favoured some paths, or never reached one, fails).
#[test]
fn host_spray_uses_every_path_equally_often() {
    use lbsim::lb::config::LoadBalancingConfig;
    use lbsim::lb::{scheme, PacketView, SwitchCtx, SwitchLb};
    use lbsim::net::Port;
    use lbsim::rng::{rng_for, Stream};
    use std::collections::BTreeMap;
    let astra = "[topology]\nkind = \"clos\"\nhosts = 8\npod_hosts = 4\nlink_gbps = 200\n\
                 [[topology.tier]]\ndown = 2\nup = 2\n[[topology.tier]]\ndown = 2\nup = 4\n\
                 [[topology.tier]]\ndown = 4\ngbps = 100\n";
    for (toml, src, dst) in [(astra, 0, 7), (&tapered(50.0)[..], 0, 127), ("", 0, 127)] {
        let sc = with_cm(toml, "0->1 id 1 start 0 size 100\n", &[]).unwrap();
        let t = &sc.topology;
        let info = scheme("host_spray").unwrap();
        let cfg = LoadBalancingConfig::default();
        let mut switches: Vec<SwitchLb> = (0..t.switches.len() as u32)
            .map(|s| {
                let ctx = SwitchCtx {
                    topology: t,
                    switch: SwitchId(s),
                    salt: lbsim::rng::derive_seed(9, Stream::Salt, s as u64),
                };
                SwitchLb::new(info, &ctx, &cfg)
            })
            .collect();
        let ports: Vec<Port> = t
            .links
            .iter()
            .map(|l| Port::new(l.rate, l.latency, l.to, 1 << 20, 1 << 19))
            .collect();
        let mut rng = rng_for(5, Stream::Host, 0);
        let (src, dst) = (HostId(src), HostId(dst));
        let n = lbsim::lb::ENTROPY_SPACE;
        let mut seen: BTreeMap<Vec<u32>, u32> = BTreeMap::new();
        for entropy in 0..n {
            let i = entropy;
            let mut link = &t.links[t.host_uplink(src).idx()];
            let mut path = Vec::new();
            while let NodeId::Switch(sw) = link.to {
                let port = match t.route(sw, dst) {
                    Route::Port(p) => p,
                    Route::Group { first, n } => {
                        let view = PacketView {
                            weights: None,
                            epoch: 0,
                            src,
                            dst,
                            flow_key: lbsim::transport::flow_key(src, dst, false),
                            entropy,
                            is_ack: false,
                            now: SimTime(i as u64),
                        };
                        let g = &ports[first.idx()..first.idx() + n as usize];
                        let k = switches[sw.idx()].choose(&view, g, &mut rng);
                        lbsim::ids::PortId(first.0 + k as u32)
                    }
                };
                path.push(port.0);
                link = &t.links[port.idx()];
            }
            *seen.entry(path).or_default() += 1;
        }
        let paths = t.count_paths(src, dst);
        assert_eq!(seen.len() as u64, paths, "{}", t.describe());
        let expect = n as f64 / paths as f64;
        let chi2: f64 = seen
            .values()
            .map(|&c| (c as f64 - expect).powi(2) / expect)
            .sum();
        // About a one-in-a-million tail for these degrees of freedom.
        let df = (paths - 1) as f64;
        assert!(
            chi2 < df + 7.0 * (2.0 * df).sqrt(),
            "{}: chi2 {chi2:.1} on {df} df",
            t.describe()
        );
    }
}

#[test]
fn the_bound_counts_a_tapered_pods_uplinks() {
    // Pod 0's 16 hosts each send 1 MB to pod 1: their NICs need W / 100G each, but pod 0's
    // links to the cores (4 aggs x 1 uplink at 100G) carry 400G, a quarter of the hosts'.
    let cm: String = (0..16)
        .map(|i| format!("{i}->{} id {} start 0 size 1000000\n", 16 + i, i + 1))
        .collect();
    let sc = with_cm(&tapered(100.0), &cm, &["load_balancing.scheme=host_spray"]).unwrap();
    let wire = 1_000_000u64 + 245 * 82; // 245 packets of up to 4,096 B
                                        // 20 ps per byte at 400 Gb/s.
    let pod_cut_ps = 16 * wire * 20;
    let sim = run(sc);
    let s = sim.summary();
    assert!(
        s.lower_bound_ps >= pod_cut_ps,
        "{} < {pod_cut_ps}",
        s.lower_bound_ps
    );
    assert!(s.cct_ps.unwrap() >= s.lower_bound_ps);
    check_conservation_of(&sim, "pod cut");
}

#[test]
fn a_key_of_another_fabric_kind_is_refused_not_ignored() {
    for (sets, key, kinds) in [
        (&["topology.spines=4"][..], "topology.spines", "leaf_spine"),
        (
            &["topology.oversubscription=2"][..],
            "topology.oversubscription",
            "leaf_spine",
        ),
        (&["topology.hosts=16"][..], "topology.hosts", "clos"),
        (
            &["topology.kind=leaf_spine", "topology.k=4"][..],
            "topology.k",
            "fat_tree",
        ),
        (
            &["topology.kind=leaf_spine", "topology.pod_hosts=4"][..],
            "topology.pod_hosts",
            "clos",
        ),
    ] {
        let Err(e) = with_cm("", "0->1 id 1 start 0 size 100\n", sets) else {
            panic!("{sets:?} accepted");
        };
        assert!(e.contains(key) && e.contains(kinds), "{sets:?}: {e}");
    }
    // The defaults of other kinds' keys are fine (`lbsim show` writes them all).
    with_cm("", "0->1 id 1 start 0 size 100\n", &["topology.spines=8"]).unwrap();
}

/// A scenario on the SimAI topology file `topo` whose workload is the connection matrix `cm`.
fn on_simai(topo: &str, cm: &str, sets: &[&str]) -> Result<Scenario, String> {
    static CALLS: AtomicUsize = AtomicUsize::new(0);
    let n = CALLS.fetch_add(1, Ordering::Relaxed);
    let dir = TempDir::new("simai-runs", &n.to_string());
    let path = dir.join("fabric.txt");
    std::fs::write(&path, topo).unwrap();
    let mut all = vec![format!("topology.simai_topo=\"{}\"", path.display())];
    all.extend(sets.iter().map(|s| s.to_string()));
    let all: Vec<&str> = all.iter().map(String::as_str).collect();
    with_cm("", cm, &all)
}

/// Two servers of two GPUs, rail-optimized: GPUs 0 and 2 on rail leaf 6, GPUs 1 and 3 on rail
/// leaf 7, one spine (8); each server's GPUs joined by its NVSwitch (4, 5) at 1.6 Tb/s and
/// 25 ns; network links 100 Gb/s and 1 us.
const RAIL_2X2: &str = "9 2 2 3 10 H100\n4 5 6 7 8 \n\
    0 4 1600Gbps 0.000025ms 0\n0 6 100Gbps 0.001ms 0\n\
    1 4 1600Gbps 0.000025ms 0\n1 7 100Gbps 0.001ms 0\n\
    2 5 1600Gbps 0.000025ms 0\n2 6 100Gbps 0.001ms 0\n\
    3 5 1600Gbps 0.000025ms 0\n3 7 100Gbps 0.001ms 0\n\
    6 8 100Gbps 0.001ms 0\n7 8 100Gbps 0.001ms 0\n";

#[test]
fn an_imported_simai_fabric_carries_each_path_class_at_its_exact_time() {
    for (pair, want) in common::rail_2x2_path_classes() {
        let cm = format!("{pair} id 1 start 0 size 65536\n");
        let sc = on_simai(RAIL_2X2, &cm, &[]).unwrap();
        let sim = run(sc);
        assert_eq!(sim.flows()[0].finish, Some(SimTime(want)), "{pair}");
        // Alone on its path, the flow meets its bound exactly.
        assert_eq!(sim.summary().lower_bound_ps, want, "{pair}");
        check_conservation_of(&sim, pair);
    }
}

/// Two servers of two GPUs, not rail-optimized, dual-ToR: GPUs 0 and 1 on leaves 6 and 7,
/// GPUs 2 and 3 on leaves 8 and 9, every leaf on spines 10 and 11; all network links 100G.
const DUAL_TOR: &str = "12 2 2 6 16 H100\n4 5 6 7 8 9 10 11\n\
    0 4 1600Gbps 0.000025ms 0\n0 6 100Gbps 0.001ms 0\n0 7 100Gbps 0.001ms 0\n\
    1 4 1600Gbps 0.000025ms 0\n1 6 100Gbps 0.001ms 0\n1 7 100Gbps 0.001ms 0\n\
    2 5 1600Gbps 0.000025ms 0\n2 8 100Gbps 0.001ms 0\n2 9 100Gbps 0.001ms 0\n\
    3 5 1600Gbps 0.000025ms 0\n3 8 100Gbps 0.001ms 0\n3 9 100Gbps 0.001ms 0\n\
    6 10 100Gbps 0.001ms 0\n6 11 100Gbps 0.001ms 0\n7 10 100Gbps 0.001ms 0\n\
    7 11 100Gbps 0.001ms 0\n8 10 100Gbps 0.001ms 0\n8 11 100Gbps 0.001ms 0\n\
    9 10 100Gbps 0.001ms 0\n9 11 100Gbps 0.001ms 0\n";

#[test]
fn a_dual_homed_gpu_sends_over_both_uplinks() {
    // Header line's link count: 12 host links + 8 leaf-spine.
    let fixed = DUAL_TOR.replacen("12 2 2 6 16", "12 2 2 6 20", 1);
    let sc = on_simai(&fixed, "0->2 id 1 start 0 size 100\n", &[]).unwrap();
    let t = &sc.topology;
    assert_eq!(t.host_ports(HostId(0)).len(), 3);
    // 2 uplinks x 2 spines x 2 leaves down to GPU 2.
    assert_eq!(t.count_paths(HostId(0), HostId(2)), 8);
    assert_eq!(t.count_paths(HostId(0), HostId(1)), 1);
    let size = 4_000_000u64;
    let cm = format!("0->2 id 1 start 0 size {size}\n");
    let finish = |scheme: &str| {
        let sc = on_simai(&fixed, &cm, &[&format!("load_balancing.scheme={scheme}")]).unwrap();
        let sim = run(sc);
        check_conservation_of(&sim, scheme);
        let f = sim.flows()[0].finish.expect("done").ps();
        assert!(sim.summary().lower_bound_ps <= f, "{scheme}");
        f
    };
    // One flow under ECMP keeps one path: one uplink's rate. Sprayed, it takes both.
    let (ecmp, spray) = (finish("ecmp"), finish("host_spray"));
    let one_link = 4_000_000 * 8 * 10; // ps at 100 Gb/s, payload only
    assert!(ecmp > one_link, "{ecmp}");
    assert!(
        (spray as f64) < 0.6 * ecmp as f64,
        "sprayed {spray} ps vs ECMP {ecmp} ps"
    );
}

#[test]
fn a_simai_fabric_runs_alike_on_one_and_three_threads() {
    let cm: String = (0..4)
        .flat_map(|i| (0..4).filter(move |&j| j != i).map(move |j| (i, j)))
        .enumerate()
        .map(|(n, (i, j))| format!("{i}->{j} id {} start 0 size 300000\n", n + 1))
        .collect();
    let runs: Vec<String> = [1, 3]
        .iter()
        .map(|th| {
            let sc = on_simai(
                RAIL_2X2,
                &cm,
                &[&format!("threads={th}"), "load_balancing.scheme=host_spray"],
            )
            .unwrap();
            let sim = run(sc);
            check_conservation_of(&sim, "threads");
            assert!(sim.flows().iter().all(|f| f.finish.is_some()));
            serde_json::to_string(&sim.summary()).unwrap()
        })
        .collect();
    assert_eq!(runs[0], runs[1]);
}

#[test]
fn pfc_telemetry_and_failures_work_on_a_dual_homed_simai_fabric() {
    let fixed = DUAL_TOR.replacen("12 2 2 6 16", "12 2 2 6 20", 1);
    let cm: String = (0..4)
        .flat_map(|i| (0..4).filter(move |&j| j != i).map(move |j| (i, j)))
        .enumerate()
        .map(|(n, (i, j))| format!("{i}->{j} id {} start 0 size 1000000\n", n + 1))
        .collect();
    // Lossless: PFC pauses a GPU's ports as any switch's (a GPU stops pulling while one of
    // its ports is paused); nothing is dropped and everything arrives.
    let sc = on_simai(
        &fixed,
        &cm,
        &[
            "topology.pfc=true",
            "topology.buffer_bytes=600000",
            "topology.pfc_xoff_bytes=20000",
            "topology.pfc_xon_bytes=12000",
            "load_balancing.scheme=host_spray",
        ],
    )
    .unwrap();
    let sim = run(sc);
    check_conservation_of(&sim, "pfc");
    assert!(sim.flows().iter().all(|f| f.finish.is_some()));
    assert_eq!(sim.counters().data_dropped, 0);
    assert!(
        sim.pfc_pause_frames().unwrap() > 0,
        "the incast into each GPU pauses"
    );
    // Telemetry names the NVLink ports' tier.
    let t = &on_simai(&fixed, "0->1 id 1 start 0 size 100\n", &[])
        .unwrap()
        .topology;
    let nv = t.host_ports(HostId(0)).end - 1;
    assert_eq!(t.port_tier(lbsim::ids::PortId(nv as u32)), "nvlink_up");
    assert!(t.port_tiers().iter().any(|n| n == "nvlink_down"));
    // A leaf-spine cable down: routing converges around it (W-ECMP weights computed from the
    // imported graph) and every flow completes.
    let sc = on_simai(
        &fixed,
        &cm,
        &[
            "failures=[{kind=\"down\",link=\"asw:0-psw:0\",at_us=0}]",
            "failure.convergence_us=20",
            "load_balancing.scheme=ecmp",
        ],
    )
    .unwrap();
    let sim = run(sc);
    check_conservation_of(&sim, "failure");
    assert!(sim.flows().iter().all(|f| f.finish.is_some()));
}
