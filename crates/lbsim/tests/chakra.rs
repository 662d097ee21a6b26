//! Chakra execution traces replayed: exact times on hand-built traces, and lbsim's own FSDP
//! workload written as a trace and replayed to the same flows and completion times.

mod common;

use common::TempDir;
use lbsim::workload::chakra::{encode, proto};
use lbsim::{Origin, Scenario, ScenarioFile};

/// A fresh directory for one test's trace files, removed when the test passes.
fn dir(name: &str) -> TempDir {
    TempDir::new("chakra", name)
}

fn node(id: u64, t: i32, deps: &[u64], attr: Vec<proto::AttributeProto>) -> proto::Node {
    proto::Node {
        id,
        name: format!("node{id}"),
        r#type: t,
        data_deps: deps.to_vec(),
        attr,
        ..Default::default()
    }
}

fn comp(id: u64, deps: &[u64], us: u64) -> proto::Node {
    proto::Node {
        duration_micros: us,
        ..node(id, proto::COMP_NODE, deps, vec![])
    }
}

fn coll(id: u64, deps: &[u64], t: i64, bytes: i64) -> proto::Node {
    node(
        id,
        proto::COMM_COLL_NODE,
        deps,
        vec![
            proto::int64("comm_type", t),
            proto::int64("comm_size", bytes),
        ],
    )
}

fn p2p(id: u64, deps: &[u64], send: bool, peer: i32, bytes: i64) -> proto::Node {
    let (t, key) = if send {
        (proto::COMM_SEND_NODE, "comm_dst")
    } else {
        (proto::COMM_RECV_NODE, "comm_src")
    };
    node(
        id,
        t,
        deps,
        vec![proto::int32(key, peer), proto::int64("comm_size", bytes)],
    )
}

fn build(sets: &[String]) -> Result<Scenario, lbsim::ConfigError> {
    ScenarioFile::builtin(sets).and_then(|f| Scenario::build(f, &Origin::builtin()))
}

fn k4(path: &std::path::Path, extra: &[&str]) -> Vec<String> {
    let mut s: Vec<String> = [
        "topology.k=4",
        "topology.link_gbps=100",
        "topology.link_latency_ns=1000",
        "workload.kind=chakra",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    s.push(format!("workload.path=\"{}\"", path.display()));
    s.extend(extra.iter().map(|x| x.to_string()));
    s
}

#[test]
fn compute_then_send_takes_compute_plus_serialization_plus_propagation() {
    // Rank 0: COMP 10 us, then SEND 8192 bytes to rank 1, which receives it.
    let d = dir("p2p");
    std::fs::write(
        d.join("t.0.et"),
        encode("0.0.4", &[comp(1, &[], 10), p2p(2, &[1], true, 1, 8192)]),
    )
    .unwrap();
    std::fs::write(
        d.join("t.1.et"),
        encode("0.0.4", &[p2p(1, &[], false, 0, 8192)]),
    )
    .unwrap();
    let sc = build(&k4(&d, &[])).unwrap();
    assert_eq!(sc.flows.len(), 1);
    assert_eq!(sc.flows[0].start.ps(), 10_000_000);
    let out = lbsim::run(sc);
    // Hosts 0 and 1 share a ToR: two 4158-byte packets at 100 Gb/s (332,640 ps each) on the
    // NIC, 1 us to the ToR, the last packet again, 1 us to the host.
    let net = 2 * 332_640 + 1_000_000 + 332_640 + 1_000_000;
    assert_eq!(out.flows[0].finish_ps, Some(10_000_000 + net));
    let ch = out.collectives.chakra.as_ref().unwrap();
    let r1 = &ch.ranks[1];
    assert_eq!(r1.iteration_ps, Some(10_000_000 + net));
    assert_eq!(r1.critical_compute_ps, Some(10_000_000));
    assert_eq!(r1.critical_comm_ps, Some(net));
    // Rank 0 is done when its send is (delivered), rank 1 has no compute of its own.
    assert_eq!((ch.ranks[0].compute_ps, r1.compute_ps), (10_000_000, 0));
    assert_eq!(ch.iteration_ps, Some(10_000_000 + net));
}

#[test]
fn a_node_waits_for_the_later_of_compute_and_communication() {
    // Rank 1: COMP 50 us and, independently, RECV; its SEND back waits for both. The message
    // arrives at 2.997920 us, so the compute decides: the reply starts at 50 us.
    let d = dir("overlap");
    std::fs::write(
        d.join("o.0.et"),
        encode(
            "0.0.4",
            &[p2p(1, &[], true, 1, 8192), p2p(2, &[], false, 1, 4096)],
        ),
    )
    .unwrap();
    std::fs::write(
        d.join("o.1.et"),
        encode(
            "0.0.4",
            &[
                comp(1, &[], 50),
                p2p(2, &[], false, 0, 8192),
                p2p(3, &[1, 2], true, 0, 4096),
            ],
        ),
    )
    .unwrap();
    let out = lbsim::run(build(&k4(&d, &[])).unwrap());
    assert_eq!(out.flows[1].start_ps, 50_000_000);
    // Shorter compute: the message decides.
    let d2 = dir("overlap2");
    std::fs::copy(d.join("o.0.et"), d2.join("o.0.et")).unwrap();
    std::fs::write(
        d2.join("o.1.et"),
        encode(
            "0.0.4",
            &[
                comp(1, &[], 1),
                p2p(2, &[], false, 0, 8192),
                p2p(3, &[1, 2], true, 0, 4096),
            ],
        ),
    )
    .unwrap();
    let out = lbsim::run(build(&k4(&d2, &[])).unwrap());
    assert_eq!(out.flows[1].start_ps, out.flows[0].finish_ps.unwrap());
    let r0 = &out.collectives.chakra.as_ref().unwrap().ranks[0];
    assert_eq!(r0.critical_compute_ps, Some(0));
    assert_eq!(r0.iteration_ps, out.flows[1].finish_ps);
}

/// lbsim's FSDP workload as a Chakra trace: per layer an all-gather, a barrier (the layer's
/// compute waits for the whole gather, as lbsim's FSDP does), the compute, a reduce-scatter
/// and a barrier.
fn fsdp_trace(layers: u64, layer_bytes: i64, compute_us: u64) -> Vec<proto::Node> {
    let mut v = Vec::new();
    let mut last: Vec<u64> = Vec::new();
    for l in 0..layers {
        let b = l * 10;
        v.push(coll(b + 1, &last, proto::ALL_GATHER, layer_bytes));
        v.push(coll(b + 2, &[b + 1], proto::BARRIER, 0));
        v.push(comp(b + 3, &[b + 2], compute_us));
        v.push(coll(b + 4, &[b + 3], proto::REDUCE_SCATTER, layer_bytes));
        v.push(coll(b + 5, &[b + 4], proto::BARRIER, 0));
        last = vec![b + 5];
    }
    v
}

#[test]
fn fsdp_written_as_a_trace_replays_to_the_same_cct() {
    let d = dir("fsdp");
    let path = d.join("fsdp.et");
    std::fs::write(&path, encode("0.0.4", &fsdp_trace(3, 1 << 20, 20))).unwrap();
    let base = [
        "topology.k=4",
        "topology.link_gbps=100",
        "topology.link_latency_ns=1000",
    ];
    let mut fsdp: Vec<String> = base.iter().map(|s| s.to_string()).collect();
    fsdp.extend(
        [
            "workload.kind=fsdp",
            "workload.group_size=8",
            "workload.layers=3",
            "workload.layer_bytes=1048576",
            "workload.compute_us_per_layer=20",
            "workload.placement=per_tor",
        ]
        .iter()
        .map(|s| s.to_string()),
    );
    let a = build(&fsdp).unwrap();
    let b = build(&k4(
        &path,
        &["workload.chakra_ranks=8", "workload.placement=per_tor"],
    ))
    .unwrap();
    assert_eq!(a.flows, b.flows);
    let waits = |s: &Scenario| (0..s.flows.len()).map(|f| s.deps.waits(f)).max();
    assert_eq!((waits(&a), waits(&b)), (Some(1), Some(1)));
    let (ra, rb) = (lbsim::run(a), lbsim::run(b));
    assert!(ra.summary.cct_ps.is_some());
    assert_eq!(ra.summary.cct_ps, rb.summary.cct_ps);
    assert_eq!(ra.summary.lower_bound_ps, rb.summary.lower_bound_ps);
    let cct = |r: &lbsim::RunOutput| -> Vec<(String, Option<u64>, u64)> {
        r.collectives
            .collectives
            .iter()
            .map(|c| (c.kind.clone(), c.cct_ps, c.bound_ps))
            .collect()
    };
    assert_eq!(cct(&ra), cct(&rb));
    // Each rank's iteration ends with the last reduce-scatter; its compute is 3 x 20 us.
    let ch = rb.collectives.chakra.as_ref().unwrap();
    assert_eq!(ch.ranks.len(), 8);
    assert_eq!(ch.iteration_ps, ra.summary.cct_ps);
    for r in &ch.ranks {
        assert_eq!(r.compute_ps, 60_000_000);
        assert_eq!(r.critical_compute_ps, Some(60_000_000));
        assert_eq!(
            r.critical_compute_ps.unwrap() + r.critical_comm_ps.unwrap(),
            r.iteration_ps.unwrap()
        );
    }
}

#[test]
fn astra_sim_style_microbenchmarks_replay_one_collective_per_rank() {
    // One COMM_COLL node per rank file, node ids differing per rank, as ASTRA-sim's
    // microbenchmark generators write them.
    for (t, algo, flows) in [
        (proto::ALL_REDUCE, "ring_allreduce", 8 * 14),
        (proto::ALL_TO_ALL, "all_to_all", 8 * 7),
        (proto::ALL_GATHER, "ring_allgather", 8 * 7),
    ] {
        let d = dir(&format!("micro{t}"));
        for r in 0..8u64 {
            std::fs::write(
                d.join(format!("m.{r}.et")),
                encode("0.0.4", &[coll(r, &[], t, 1 << 20)]),
            )
            .unwrap();
        }
        let sc = build(&k4(&d, &[])).unwrap();
        assert_eq!(sc.flows.len(), flows, "{algo}");
        let out = lbsim::run(sc);
        let c = &out.collectives.collectives;
        assert_eq!((c.len(), c[0].kind.as_str()), (1, algo));
        assert!(c[0].cct_ps.unwrap() >= c[0].bound_ps);
        // The prefix form names the same traces.
        let sc = build(&k4(&d.join("m"), &[])).unwrap();
        assert_eq!(sc.flows.len(), flows);
    }
}

/// The scenario's error for `files` (name, bytes) in a fresh directory.
fn err(name: &str, files: &[(&str, Vec<u8>)], extra: &[&str], target: Option<&str>) -> String {
    let d = dir(name);
    for (f, b) in files {
        std::fs::write(d.join(f), b).unwrap();
    }
    let p = match target {
        Some(t) => d.join(t),
        None => d.to_path_buf(),
    };
    match build(&k4(&p, extra)) {
        Ok(_) => panic!("{name} should be refused"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn bad_traces_are_refused_naming_the_file_and_node() {
    let ok = encode("0.0.4", &[coll(1, &[], proto::ALL_REDUCE, 4096)]);
    // Truncated protobuf.
    let e = err(
        "trunc",
        &[
            ("t.0.et", ok.clone()),
            ("t.1.et", ok[..ok.len() - 2].to_vec()),
        ],
        &[],
        None,
    );
    assert!(
        e.contains("t.1.et: truncated") && e.contains("first node"),
        "{e}"
    );
    // Unknown node type.
    let bad = encode("0.0.4", &[node(42, 3, &[], vec![])]);
    let e = err(
        "unknown",
        &[("u.0.et", bad.clone()), ("u.1.et", bad)],
        &[],
        None,
    );
    assert!(
        e.contains("u.0.et: node id 42")
            && e.contains("MEM_STORE_NODE")
            && e.contains("chakra_skip_unknown"),
        "{e}"
    );
    // Missing file.
    let e = err("missing", &[], &[], Some("nope.et"));
    assert!(e.contains("nope.et") && e.contains("no such file"), "{e}");
    // An empty directory.
    let e = err("empty", &[], &[], None);
    assert!(e.contains("no Chakra trace files"), "{e}");
    // Ranks mismatch: two files, chakra_ranks = 4.
    let e = err(
        "mismatch",
        &[("m.0.et", ok.clone()), ("m.1.et", ok.clone())],
        &["workload.chakra_ranks=4"],
        None,
    );
    assert!(e.contains("ranks mismatch"), "{e}");
    // A gap in the ranks.
    let e = err(
        "gap",
        &[("g.0.et", ok.clone()), ("g.2.et", ok.clone())],
        &[],
        None,
    );
    assert!(e.contains("rank 1's is missing"), "{e}");
    // One rank's trace without chakra_ranks.
    let e = err("one", &[("o.et", ok.clone())], &[], Some("o.et"));
    assert!(e.contains("chakra_ranks"), "{e}");
    // A dependency on a node that is not there.
    let dep = encode("0.0.4", &[coll(1, &[9], proto::ALL_REDUCE, 4096)]);
    let e = err(
        "dep",
        &[("d.0.et", dep.clone()), ("d.1.et", dep)],
        &[],
        None,
    );
    assert!(e.contains("node id 1") && e.contains("node id 9"), "{e}");
    // Control dependencies that loop: refused, or the data dependencies alone when skipping.
    let mut a = coll(1, &[], proto::ALL_REDUCE, 4096);
    a.ctrl_deps = vec![2];
    let mut b = comp(2, &[1], 5);
    b.ctrl_deps = vec![1];
    let cyc = encode("0.0.4", &[a, b]);
    let e = err(
        "ctrl",
        &[("c.et", cyc.clone())],
        &["workload.chakra_ranks=2"],
        Some("c.et"),
    );
    assert!(
        e.contains("c.et: node id") && e.contains("ctrl_deps"),
        "{e}"
    );
    let d = dir("ctrl-ok");
    std::fs::write(d.join("c.et"), cyc).unwrap();
    let sc = build(&k4(
        &d.join("c.et"),
        &[
            "workload.chakra_ranks=2",
            "workload.chakra_skip_unknown=true",
        ],
    ))
    .unwrap();
    assert_eq!(sc.labels.chakra.as_ref().unwrap().dropped_deps, 2);
    // A receive nobody sends.
    let e = err(
        "deadlock",
        &[
            ("x.0.et", encode("0.0.4", &[p2p(5, &[], false, 1, 100)])),
            ("x.1.et", encode("0.0.4", &[p2p(6, &[], false, 0, 100)])),
        ],
        &[],
        None,
    );
    assert!(
        e.contains("x.0.et: node id 5") && e.contains("deadlocks"),
        "{e}"
    );
    // Ranks disagreeing on a collective.
    let e = err(
        "disagree",
        &[
            ("y.0.et", ok.clone()),
            (
                "y.1.et",
                encode("0.0.4", &[coll(1, &[], proto::ALL_REDUCE, 8192)]),
            ),
        ],
        &[],
        None,
    );
    assert!(
        e.contains("y.1.et: node id 1") && e.contains("rank 0"),
        "{e}"
    );
    // Halving-doubling over 3 ranks.
    let e = err(
        "hd3",
        &[("h.et", ok.clone())],
        &[
            "workload.chakra_ranks=3",
            "workload.chakra_algorithms.all_reduce=halving_doubling",
        ],
        Some("h.et"),
    );
    assert!(e.contains("power-of-two"), "{e}");
    // A key another kind reads.
    let e = err("key", &[("k.et", ok)], &["workload.layers=3"], Some("k.et"));
    assert!(e.contains("workload.layers") && e.contains("chakra"), "{e}");
}

#[test]
fn skipped_nodes_are_counted_and_algorithms_follow_the_key() {
    let d = dir("skip");
    let path = d.join("s.et");
    std::fs::write(
        &path,
        encode(
            "0.0.4",
            &[
                node(1, 2, &[], vec![]),
                coll(2, &[1], proto::ALL_REDUCE, 1 << 16),
                coll(3, &[2], 1, 1 << 16),
                coll(4, &[3], proto::ALL_TO_ALL, 1 << 16),
            ],
        ),
    )
    .unwrap();
    let sc = build(&k4(
        &path,
        &[
            "workload.chakra_ranks=8",
            "workload.chakra_skip_unknown=true",
            "workload.chakra_algorithms.all_reduce=halving_doubling",
            "workload.chakra_algorithms.all_to_all=pairwise",
        ],
    ))
    .unwrap();
    let kinds: Vec<&str> = sc
        .labels
        .collectives
        .iter()
        .map(|c| c.algo.name())
        .collect();
    assert_eq!(kinds, ["halving_doubling_allreduce", "all_to_all_pairwise"]);
    // All-to-all's comm_size is the rank's buffer: 1/8 of it per pair.
    assert_eq!(sc.labels.collectives[1].bytes, 1 << 13);
    let out = lbsim::run(sc);
    assert_eq!(out.collectives.chakra.as_ref().unwrap().skipped_nodes, 2);
    assert!(out.summary.cct_ps.is_some());
}
