//! Collectives with dependencies, placement, FSDP training, jobs, trigger import and export,
//! and per-collective lower bounds.

mod common;

use common::{check_conservation, run, scenario, scenario_toml};
use lbsim::stats::bound::Sizes;
use lbsim::stats::collectives as coll;
use lbsim::time::SimTime;
use lbsim::workload::connection_matrix;
use lbsim::{Origin, Scenario, ScenarioFile};

const LS_2X4: &[&str] = &[
    "topology.kind=leaf_spine",
    "topology.hosts_per_leaf=2",
    "topology.leaves=4",
    "topology.spines=2",
];

fn with(base: &[&str], more: &[&str]) -> Scenario {
    let v: Vec<&str> = base.iter().chain(more).copied().collect();
    scenario(&v)
}

fn build_err(sets: &[&str]) -> String {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let f = ScenarioFile::builtin(&sets).unwrap();
    Scenario::build(f, &Origin::builtin())
        .map(|_| ())
        .unwrap_err()
        .to_string()
}

fn sizes(sc: &Scenario) -> Sizes {
    Sizes {
        mss: sc.file.packet.payload_bytes,
        header: sc.file.packet.header_bytes,
        ack: sc.file.packet.ack_bytes,
        pace: lbsim::stats::bound::pace_rate(sc.topology.host_rate, sc.settings.rate_coef),
    }
}

#[test]
fn ring_allreduce_on_idle_paths_is_within_a_few_percent_of_its_bound() {
    // 4 ranks on 4 leaves: one flow per leaf uplink pair, every hop the same 4-link path.
    let sc = with(
        LS_2X4,
        &[
            "workload.kind=ring_allreduce",
            "workload.placement=per_tor",
            "workload.group_size=4",
            "workload.message_bytes=16777216",
            "load_balancing.scheme=host_spray",
        ],
    );
    assert_eq!(sc.flows.len(), 4 * 6);
    let c = &sc.labels.collectives[0];
    // The bound from the flows equals the closed form 2(n-1) T(S/n).
    let tail = {
        let p = sc.topology.path(sc.flows[0].src, sc.flows[0].dst);
        let pkt = 4096 + 62;
        p.rates[1..]
            .iter()
            .fold(p.latency, |t, r| t + r.serialization(pkt))
    };
    let closed = coll::ring_allreduce(4, 16777216, sc.topology.host_rate, tail, sizes(&sc));
    assert_eq!(c.bound, closed);
    let res = lbsim::run(sc);
    let r = &res.collectives.collectives[0];
    let x = r.cct_over_bound.unwrap();
    assert!((1.0..1.05).contains(&x), "CCT/bound {x}");
    assert_eq!(
        res.collectives.jobs[0].finish_ps,
        Some(r.finish_ps.unwrap())
    );
}

#[test]
fn ecmp_is_slower_than_spraying_on_a_spread_ring() {
    // 16 ranks, consecutive ranks on different leaves: 4 flows per leaf share 4 uplinks.
    let cct = |scheme: &str| {
        let sc = scenario(&[
            "topology.kind=leaf_spine",
            "topology.hosts_per_leaf=4",
            "topology.leaves=4",
            "topology.spines=4",
            "workload.kind=ring_allreduce",
            "workload.placement=per_tor",
            "workload.message_bytes=4194304",
            &format!("load_balancing.scheme={scheme}"),
        ]);
        let res = lbsim::run(sc);
        res.collectives.collectives[0].cct_over_bound.unwrap()
    };
    let (ecmp, spray, ofan) = (cct("ecmp"), cct("host_spray"), cct("ofan"));
    assert!(
        ecmp > 1.3 * spray && ecmp > 1.3 * ofan,
        "ecmp {ecmp} spray {spray} ofan {ofan}"
    );
}

/// Flow index of (step, rank) in a ring of n ranks with one rank per host.
fn ring_dependencies_hold(sc: Scenario, n: usize, steps: usize) {
    assert_eq!(sc.flows.len(), n * steps);
    let sim = run(sc);
    check_conservation(&sim);
    let f = sim.flows();
    for s in 1..steps {
        for r in 0..n {
            let me = &f[s * n + r];
            let pred = &f[(s - 1) * n + (r + n - 1) % n];
            assert_eq!(pred.spec.dst, me.spec.src);
            // Nobody sends step s before receiving its step s-1 chunk, and no later than that.
            assert_eq!(me.started, pred.finish, "step {s} rank {r}");
        }
    }
}

#[test]
fn no_rank_sends_the_next_step_before_receiving_the_previous_chunk() {
    ring_dependencies_hold(
        scenario(&[
            "topology.k=4",
            "workload.kind=ring_reduce_scatter",
            "workload.message_bytes=409600",
            "load_balancing.scheme=switch_rr",
        ]),
        16,
        15,
    );
    ring_dependencies_hold(
        scenario(&[
            "topology.k=4",
            "workload.kind=ring_allgather",
            "workload.placement=random",
            "workload.group_size=8",
            "workload.message_bytes=409600",
        ]),
        8,
        7,
    );
}

#[test]
fn ranks_on_one_host_exchange_without_flows() {
    // 8 ranks on 4 hosts (2 per host): only the crossings 1->2, 3->4, 5->6, 7->0 are flows.
    // Rank 2k+1 forwards at step s what rank 2k got at step s-2 from host k-1: the same-host
    // hop in between is instantaneous, so steps 0 and 1 start at once.
    let sc = scenario(&[
        "topology.k=4",
        "workload.kind=ring_allgather",
        "workload.gpus_per_host=2",
        "workload.group_size=8",
        "workload.message_bytes=80000",
    ]);
    assert!(sc.flows.iter().all(|f| f.src != f.dst));
    assert_eq!(sc.flows.len(), 4 * 7);
    let sim = run(sc);
    let f = sim.flows();
    for s in 0..7 {
        for k in 0..4 {
            let me = &f[4 * s + k];
            assert_eq!(
                (me.spec.src.0, me.spec.dst.0),
                (k as u32, (k as u32 + 1) % 4)
            );
            let want = if s < 2 {
                Some(SimTime::ZERO)
            } else {
                f[4 * (s - 2) + (k + 3) % 4].finish
            };
            assert_eq!(me.started, want, "step {s} host {k}");
        }
    }
}

#[test]
fn halving_doubling_and_pairwise_complete_and_meet_their_closed_forms() {
    let sc = with(
        LS_2X4,
        &[
            "workload.kind=halving_doubling_allreduce",
            "workload.placement=per_tor",
            "workload.group_size=4",
            "workload.message_bytes=1048576",
        ],
    );
    assert_eq!(sc.flows.len(), 4 * 4);
    let p = sc.topology.path(sc.flows[0].src, sc.flows[0].dst);
    let tail = p.rates[1..]
        .iter()
        .fold(p.latency, |t, r| t + r.serialization(4158));
    let want =
        coll::halving_doubling_allreduce(4, 1048576, sc.topology.host_rate, tail, sizes(&sc));
    // Partners at distance 2 are on leaves 0/2 and 1/3: the same path shape as distance 1.
    assert_eq!(sc.labels.collectives[0].bound, want);
    let res = lbsim::run(sc);
    assert!(res.collectives.collectives[0].cct_over_bound.unwrap() >= 1.0);

    let sc = scenario(&[
        "topology.k=4",
        "workload.kind=all_to_all",
        "workload.all_to_all_algorithm=pairwise",
        "workload.group_size=8",
        "workload.message_bytes=65536",
    ]);
    assert_eq!(sc.flows.len(), 8 * 7);
    let sim = run(sc);
    let f = sim.flows();
    // Round i+1 of rank r starts once its own round-i send and its round-i receive are done.
    for i in 1..7 {
        for r in 0..8 {
            let me = &f[i * 8 + r];
            let own = &f[(i - 1) * 8 + r];
            let inc = &f[(i - 1) * 8 + (r + 8 - i) % 8];
            assert_eq!(inc.spec.dst, me.spec.src);
            assert_eq!(me.started, own.finish.max(inc.finish));
        }
    }
}

#[test]
fn default_all_to_all_is_shifted_and_labelled() {
    let sc = scenario(&["topology.k=4", "workload.kind=all_to_all"]);
    // Host s sends to s+1, s+2, ... (mod 16), the study's generator's and NCCL's order; the
    // `direct` order (every host to 0, 1, ...) only when asked for.
    assert_eq!(sc.flows.len(), 16 * 15);
    for (i, f) in sc.flows.iter().enumerate() {
        let (s, k) = (i as u32 / 15, i as u32 % 15);
        assert_eq!((f.src.0, f.dst.0), (s, (s + k + 1) % 16), "flow {i}");
    }
    let shifted = scenario(&[
        "topology.k=4",
        "workload.kind=all_to_all",
        "workload.all_to_all_algorithm=shifted",
    ]);
    assert_eq!(sc.flows, shifted.flows);
    let direct = scenario(&[
        "topology.k=4",
        "workload.kind=all_to_all",
        "workload.all_to_all_algorithm=direct",
    ]);
    assert_eq!(
        direct.flows,
        lbsim::workload::all_to_all(16, 2 * 1024 * 1024)
    );
    assert_eq!(
        sc.file.effective().workload.all_to_all_algorithm,
        Some(lbsim::scenario::AllToAllAlgorithm::Shifted)
    );
    assert!(sc.deps.is_empty());
    assert_eq!(sc.labels.collectives.len(), 1);
    let sc = scenario(&["topology.k=4"]);
    assert_eq!(
        sc.flows,
        lbsim::workload::permutation(16, 2 * 1024 * 1024, 1)
    );
}

#[test]
fn shifted_all_to_all_staggers_destinations_and_avoids_the_synchronized_incast() {
    let base = [
        "topology.k=4",
        "topology.buffer_bytes=20000",
        "load_balancing.scheme=host_spray",
        "workload.kind=all_to_all",
        "workload.message_bytes=262144",
    ];
    let sc = with(&base, &["workload.all_to_all_algorithm=shifted"]);
    assert_eq!(sc.flows.len(), 16 * 15);
    // Host r's flows go to r+1, r+2, ... in that order; the same pairs as direct.
    for (i, f) in sc.flows.iter().enumerate() {
        let (r, k) = (i as u32 / 15, i as u32 % 15);
        assert_eq!((f.src.0, f.dst.0), (r, (r + k + 1) % 16));
    }
    let mut pairs: Vec<(u32, u32)> = sc.flows.iter().map(|f| (f.src.0, f.dst.0)).collect();
    pairs.sort();
    let direct = with(&base, &["workload.all_to_all_algorithm=direct"]);
    let mut want: Vec<(u32, u32)> = direct.flows.iter().map(|f| (f.src.0, f.dst.0)).collect();
    want.sort();
    assert_eq!(pairs, want);
    // Direct order sends every host's n-th packet to the same destination at once: with
    // 5-packet buffers that incast drops over 3x more and finishes later.
    let shifted = run(sc).summary();
    let direct = run(direct).summary();
    assert!(
        direct.packets_dropped > 3 * shifted.packets_dropped,
        "{direct:?} {shifted:?}"
    );
    assert!(shifted.cct_ps.unwrap() < direct.cct_ps.unwrap());
}

/// Writes `text` as `name` in a fresh directory; returns the directory (keep it while the file
/// is needed) and the file's path.
fn write_cm(name: &str, text: &str) -> (common::TempDir, std::path::PathBuf) {
    let dir = common::TempDir::new("coll", name);
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    (dir, p)
}

#[test]
fn a_hand_written_barrier_gives_the_expected_start_times() {
    // A: 0->1 (16 packets) and B: 2->3 (32 packets) both intra-ToR at 100 Gb/s, 1 us links;
    // C waits for both (barrier) plus 1 us; D waits for C's sender (oneshot, send done).
    let cm = "Nodes 16\nConnections 4\nTriggers 2\n\
              0->1 id 1 start 0 size 65536 recv_done_trigger 7\n\
              2->3 id 2 start 0 size 131072 recv_done_trigger 7\n\
              1->2 id 3 trigger 7 size 4096 send_done_trigger 8\n\
              3->0 id 4 trigger 8 size 4096\n\
              trigger id 7 barrier delay 1000000\ntrigger id 8 oneshot\n";
    let (_dir, p) = write_cm("barrier.cm", cm);
    let sc = scenario(&[
        "topology.k=4",
        "topology.link_gbps=100",
        "topology.link_latency_ns=1000",
        "packet.header_bytes=82",
        "workload.kind=connection_matrix",
        &format!("workload.path=\"{}\"", p.display()),
    ]);
    assert_eq!(sc.deps.triggers[0].needed, 2);
    let sim = run(sc);
    let f = sim.flows();
    let ser = 334_240u64;
    let b_done = 32 * ser + ser + 2_000_000;
    assert_eq!(f[0].finish, Some(SimTime(16 * ser + ser + 2_000_000)));
    assert_eq!(f[1].finish, Some(SimTime(b_done)));
    assert_eq!(f[2].started, Some(SimTime(b_done + 1_000_000)));
    // C is 1->2 across ToRs in one pod (4 hops); its ACK returns over 4 hops.
    let c_start = b_done + 1_000_000;
    let c_done = c_start + ser + 3 * ser + 4_000_000;
    assert_eq!(f[2].finish, Some(SimTime(c_done)));
    assert_eq!(
        f[3].started,
        Some(SimTime(c_done + 4 * 64 * 80 + 4_000_000))
    );
}

#[test]
fn trigger_cycles_and_undefined_ids_are_clear_errors() {
    let (_dir, p) = write_cm(
        "cycle.cm",
        "0->1 id 1 trigger 1 size 8 recv_done_trigger 1\ntrigger id 1 oneshot\n",
    );
    let e = build_err(&[
        "workload.kind=connection_matrix",
        &format!("workload.path=\"{}\"", p.display()),
    ]);
    assert!(e.contains("cycle.cm:1") && e.contains("cycle"), "{e}");
    let (_dir, p) = write_cm("undef.cm", "0->1 id 1 size 8\n1->2 id 2 trigger 4 size 8\n");
    let e = build_err(&[
        "workload.kind=connection_matrix",
        &format!("workload.path=\"{}\"", p.display()),
    ]);
    assert!(
        e.contains("undef.cm:2") && e.contains("undefined trigger id 4"),
        "{e}"
    );
}

#[test]
fn export_then_import_gives_the_same_flows_and_dependencies() {
    for sets in [
        &[
            "topology.k=4",
            "workload.kind=fsdp",
            "workload.layers=2",
            "workload.layer_bytes=100000",
            "workload.compute_us_per_layer=3",
            "workload.gpus_per_host=2",
            "workload.iterations=2",
        ][..],
        &[
            "topology.k=4",
            "workload.kind=all_to_all",
            "workload.all_to_all_algorithm=pairwise",
            "workload.placement=random",
            "workload.gpus_per_host=4",
            "workload.message_bytes=5000",
        ][..],
    ] {
        let sc = scenario(sets);
        let text = connection_matrix::write(&sc.flows, &sc.deps, &sc.flow_ids, sc.topology.hosts);
        let connection_matrix::Matrix {
            flows, deps, ids, ..
        } = connection_matrix::parse(&text, "x.cm", sc.topology.hosts, 4096).unwrap();
        assert_eq!(ids, (1..=flows.len() as u64).collect::<Vec<_>>());
        assert_eq!(flows, sc.flows);
        assert_eq!(deps, sc.deps.clone().normalized());
        assert!(!deps.is_empty());
    }
}

#[test]
fn fsdp_7b_preset_runs_end_to_end_on_a_small_fabric() {
    // The 7B preset's structure and compute, with 2 layers and 1/1000 of the layer bytes.
    let sc = scenario(&[
        "topology.k=4",
        "workload.kind=fsdp",
        "workload.model=llama3_7b",
        "workload.layers=2",
        "workload.layer_bytes=218750",
        "workload.compute_us_per_layer=20",
        "workload.gpus_per_host=8",
        "workload.iterations=2",
        "load_balancing.scheme=ofan",
    ]);
    assert_eq!(sc.labels.collectives.len(), 2 * 2 * 2);
    let res = lbsim::run(sc);
    assert_eq!(res.summary.flows_completed, res.summary.flows);
    let rep = &res.collectives;
    assert_eq!(rep.iterations.len(), 2);
    for it in &rep.iterations {
        assert_eq!(it.compute_ps, 2 * 20_000_000);
        let t = it.time_ps.unwrap();
        let share = it.network_wait_share.unwrap();
        assert!(t > it.compute_ps && share > 0.0 && share < 1.0, "{it:?}");
    }
    assert_eq!(
        rep.iterations[1].start_ps,
        rep.iterations[0].end_ps.unwrap()
    );
    // Every collective's CCT is at least its bound; a reduce-scatter starts a compute after
    // its all-gather ends.
    let c = &rep.collectives;
    for r in c {
        assert!(r.cct_over_bound.unwrap() >= 1.0, "{r:?}");
    }
    for pair in c.chunks(2) {
        assert_eq!(
            pair[1].start_ps.unwrap(),
            pair[0].finish_ps.unwrap() + 20_000_000
        );
    }
    let job = &rep.jobs[0];
    assert_eq!(job.kind, "fsdp");
    assert_eq!(job.finish_ps, rep.iterations[1].end_ps);
}

#[test]
fn an_in_order_fsdp_layer_ends_near_its_bound() {
    // Eight ranks a host in ring order: 7 of 8 ring hops stay in a server, so a chain of steps
    // crosses the network every 8th step while every host link carries a chunk each step. With
    // one stream a link the run is paced by the host links (about 19% slower than their bytes:
    // a host's eight concurrent chunks finish together, and the next host waits for the first),
    // and compute dominates as in a training layer. The bound must see that the reduce-scatter
    // cannot start before the all-gather's host links are done (a bound that starts it after
    // the all-gather's longest chain alone gives 1.08).
    let sc = scenario(&[
        "topology.k=4",
        "workload.kind=fsdp",
        "workload.layers=1",
        "workload.layer_bytes=33554432",
        "workload.compute_us_per_layer=4000",
        "workload.gpus_per_host=8",
        "workload.placement=linear",
        "workload.iterations=1",
        "load_balancing.scheme=ofan",
    ]);
    let res = lbsim::run(sc);
    let s = &res.summary;
    assert_eq!(s.flows_completed, s.flows);
    let r = s.cct_ps.unwrap() as f64 / s.lower_bound_ps as f64;
    assert!((1.0..1.04).contains(&r), "CCT/bound {r}: {s:?}");
}

#[test]
fn presets_carry_the_documented_numbers() {
    let m = lbsim::workload::collective::preset("llama3_405b").unwrap();
    assert_eq!((m.layers, m.layer_bytes), (126, 3_214_285_714));
    assert_eq!(m.compute_per_layer, SimTime::from_us_f64(197_486.0));
    let m = lbsim::workload::collective::preset("llama3_7b").unwrap();
    assert_eq!((m.layers, m.layer_bytes), (32, 218_750_000));
}

#[test]
fn jobs_share_the_fabric_with_their_own_start_and_placement() {
    let toml = "[topology]\nk = 4\n\
                [[jobs]]\nkind = \"ring_allreduce\"\ngroup_size = 8\nmessage_bytes = 80000\n\
                [[jobs]]\nkind = \"ring_allgather\"\ngroup_size = 8\nfirst_host = 8\nstart_us = 50\nmessage_bytes = 80000\n";
    let sc = scenario_toml(toml, &[]);
    assert_eq!(sc.labels.jobs.len(), 2);
    let second = sc.labels.collectives[1].flows.clone();
    assert!(sc.flows[second.start as usize..second.end as usize]
        .iter()
        .all(|f| f.src.0 >= 8 && f.dst.0 >= 8));
    let res = lbsim::run(sc);
    let j = &res.collectives.jobs;
    assert_eq!(j[1].start_ps, 50_000_000);
    assert!(res.flows[second.start as usize].start_ps == 50_000_000);
    assert!(j[0].jct_ps.is_some() && j[1].jct_ps.is_some());
    let e =
        scenario_err("[workload]\nkind = \"all_to_all\"\n[[jobs]]\nkind = \"ring_allgather\"\n");
    assert!(e.contains("`workload`") && e.contains("[[jobs]]"), "{e}");
}

#[test]
fn a_collective_bound_is_measured_from_its_own_start() {
    // One collective started late: its bound is a duration from that start, the same as when
    // it starts at zero, and (it being the whole workload) the same as summary.json's.
    let cases: &[&[&str]] = &[
        &[
            "workload.kind=ring_allgather",
            "workload.message_bytes=262144",
            "workload.start_us=20",
        ],
        &[
            "workload.kind=ring_allreduce",
            "workload.message_bytes=262144",
            "workload.start_us=100",
        ],
        &[
            "workload.kind=all_to_all",
            "workload.all_to_all_algorithm=pairwise",
            "workload.message_bytes=65536",
            "workload.start_us=20",
        ],
    ];
    for case in cases {
        let late = with(&["topology.k=4", "workload.group_size=4"], case);
        let at_zero: Vec<&str> = case
            .iter()
            .copied()
            .filter(|s| !s.starts_with("workload.start_us"))
            .collect();
        let early = with(&["topology.k=4", "workload.group_size=4"], &at_zero);
        assert_eq!(late.labels.collectives.len(), 1, "{case:?}");
        let bound = late.labels.collectives[0].bound;
        assert_eq!(bound, early.labels.collectives[0].bound, "{case:?}");
        let res = lbsim::run(late);
        let (c, s) = (&res.collectives.collectives[0], &res.summary);
        assert_eq!(c.bound_ps, s.lower_bound_ps, "{case:?}");
        assert_eq!(c.cct_ps, s.cct_ps, "{case:?}");
        assert!(c.cct_over_bound.unwrap() >= 1.0, "{case:?}");
        assert_eq!(
            res.collectives.jobs[0].mean_cct_over_bound,
            s.cct_over_bound
        );
    }
}

fn scenario_err(toml: &str) -> String {
    let f = ScenarioFile::from_toml(toml, &[], &Origin::builtin()).unwrap();
    Scenario::build(f, &Origin::builtin())
        .map(|_| ())
        .unwrap_err()
        .to_string()
}

#[test]
fn bad_collective_input_is_rejected_with_clear_errors() {
    let e = build_err(&[
        "topology.k=4",
        "workload.kind=ring_allreduce",
        "workload.gpus_per_host=2",
        "workload.group_size=33",
    ]);
    assert!(
        e.contains("workload.group_size") && e.contains("16 hosts x 2 GPUs"),
        "{e}"
    );
    let e = build_err(&[
        "topology.k=4",
        "workload.kind=halving_doubling_allreduce",
        "workload.group_size=12",
    ]);
    assert!(e.contains("power-of-two") && e.contains("12"), "{e}");
    let e = build_err(&["workload.kind=permutation", "workload.placement=random"]);
    assert!(
        e.contains("workload.placement")
            && e.contains("ring_allreduce")
            && e.contains("permutation"),
        "{e}"
    );
    let e = build_err(&["workload.kind=ring_allreduce", "workload.layers=3"]);
    assert!(e.contains("workload.layers") && e.contains("fsdp"), "{e}");
    let e = build_err(&["workload.kind=fsdp", "workload.model=gpt5"]);
    assert!(e.contains("gpt5") && e.contains("llama3_405b"), "{e}");
    let e = build_err(&["workload.kind=fsdp"]);
    assert!(e.contains("workload.layers"), "{e}");
    let e = build_err(&[
        "workload.kind=ring_allreduce",
        "workload.group_size=2",
        "workload.gpus_per_host=2",
    ]);
    assert!(e.contains("no flow crosses the network"), "{e}");
}

#[test]
fn limited_all_to_all_keeps_c_messages_in_flight_and_serial_keeps_one() {
    // 8 ranks on 8 hosts, each's messages in the shifted order r+1, r+2, ...; message i of a
    // rank starts the instant its message i-C is received, and not before.
    let base = [
        "topology.k=4",
        "workload.kind=all_to_all",
        "workload.group_size=8",
        "workload.message_bytes=65536",
    ];
    for (algo, c) in [("limited", 2usize), ("serial", 1)] {
        let sc = with(
            &base,
            &[
                &format!("workload.all_to_all_algorithm={algo}"),
                "workload.all_to_all_concurrency=2",
            ][..if algo == "serial" { 1 } else { 2 }],
        );
        assert_eq!(sc.flows.len(), 8 * 7);
        for (i, f) in sc.flows.iter().enumerate() {
            let (r, k) = (i as u32 / 7, i as u32 % 7);
            assert_eq!((f.src.0, f.dst.0), (r, (r + k + 1) % 8), "{algo} flow {i}");
        }
        let name = format!("all_to_all_{algo}");
        assert_eq!(sc.labels.collectives[0].algo.name(), name);
        let sim = run(sc);
        check_conservation(&sim);
        let f = sim.flows();
        for r in 0..8 {
            for k in 0..7 {
                let me = &f[r * 7 + k];
                if k < c {
                    assert_eq!(
                        me.started,
                        Some(SimTime::ZERO),
                        "{algo} rank {r} message {k}"
                    );
                } else {
                    let prev = &f[r * 7 + k - c];
                    assert_eq!(me.started, prev.finish, "{algo} rank {r} message {k}");
                }
            }
        }
    }
    // Serial's bound is the pairwise closed form: n-1 messages one after another.
    let sc = with(&base, &["workload.all_to_all_algorithm=serial"]);
    let tail = |dst: u32| {
        let p = sc
            .topology
            .path(lbsim::ids::HostId(0), lbsim::ids::HostId(dst));
        p.rates[1..]
            .iter()
            .fold(p.latency, |t, r| t + r.serialization(4158))
    };
    // Every chain is 7 messages, on paths between the nearest (under one edge switch) and the
    // farthest (across pods).
    let t = |lat| coll::all_to_all_pairwise(8, 65536, sc.topology.host_rate, lat, sizes(&sc));
    let (near, far) = (t(tail(1)), t(tail(4)));
    let b = sc.labels.collectives[0].bound;
    assert!(b >= near && b <= far, "bound {b:?} {near:?} {far:?}");
    let res = lbsim::run(sc);
    let x = res.collectives.collectives[0].cct_over_bound.unwrap();
    assert!((1.0..1.1).contains(&x), "serial CCT/bound {x}");

    // With C at least n-1 nothing waits: the shifted all-to-all, flow for flow and to the
    // picosecond.
    let wide = with(
        &base,
        &[
            "workload.all_to_all_algorithm=limited",
            "workload.all_to_all_concurrency=7",
        ],
    );
    let shifted = with(&base, &["workload.all_to_all_algorithm=shifted"]);
    assert_eq!(wide.flows, shifted.flows);
    assert!(wide.deps.is_empty());
    let (a, b) = (lbsim::run(wide), lbsim::run(shifted));
    assert_eq!(
        a.collectives.collectives[0].finish_ps,
        b.collectives.collectives[0].finish_ps
    );
}

#[test]
fn all_to_all_concurrency_is_checked() {
    let e = build_err(&[
        "workload.kind=all_to_all",
        "workload.all_to_all_algorithm=limited",
        "workload.all_to_all_concurrency=0",
    ]);
    assert!(e.contains("workload.all_to_all_concurrency"), "{e}");
    let e = build_err(&[
        "workload.kind=all_to_all",
        "workload.all_to_all_algorithm=shifted",
        "workload.all_to_all_concurrency=4",
    ]);
    assert!(
        e.contains("workload.all_to_all_concurrency") && e.contains("limited"),
        "{e}"
    );
}
