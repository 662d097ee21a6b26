//! `workload.kind = "training"`: a 2-layer toy model's flows and compute as computed by hand;
//! its graphs written as Chakra files replay to the same flows and times; `pg_name` process
//! groups run their own collectives; bad keys are refused by name; the iteration split adds up.

mod common;

use std::collections::BTreeMap;

use common::TempDir;
use lbsim::time::SimTime;
use lbsim::workload::chakra::{self, proto, CommGroups, Options};
use lbsim::{Origin, Scenario, ScenarioFile};

/// The default scenario on a k=4 fat-tree (16 hosts, one rank each) with `sets` on top.
fn training(sets: &[&str]) -> Result<Scenario, String> {
    let mut all: Vec<String> = vec!["topology.k=4".into(), "workload.kind=training".into()];
    all.extend(sets.iter().map(|s| s.to_string()));
    let file = ScenarioFile::builtin(&all).map_err(|e| e.to_string())?;
    Scenario::build(file, &Origin::builtin()).map_err(|e| e.to_string())
}

/// The toy: 2 layers, hidden 64, FFN 128, sequence 32, 2 micro-batches of 1 sequence, BF16,
/// tp 2 x pp 2 x dp 2, 4 TFLOP/s.
const TOY: &[&str] = &[
    "workload.training_layers=2",
    "workload.training_hidden=64",
    "workload.training_ffn_hidden=128",
    "workload.training_seq_len=32",
    "workload.training_micro_batch=1",
    "workload.training_micro_batches=2",
    "workload.training_bytes_per_element=2",
    "workload.training_tp=2",
    "workload.training_pp=2",
    "workload.training_dp=2",
    "workload.training_tflops=4",
];

fn toy(extra: &[&str]) -> Scenario {
    let sets: Vec<&str> = TOY.iter().chain(extra).copied().collect();
    training(&sets).unwrap()
}

/// Flows by communication class: (count, sizes).
fn by_class(sc: &Scenario) -> BTreeMap<String, (usize, Vec<u64>)> {
    let ch = sc.labels.chakra.as_ref().unwrap();
    assert_eq!(ch.flow_class.len(), sc.flows.len());
    let mut out: BTreeMap<String, (usize, Vec<u64>)> = BTreeMap::new();
    for (f, &c) in sc.flows.iter().zip(&ch.flow_class) {
        let e = out.entry(ch.classes[c as usize].clone()).or_default();
        e.0 += 1;
        if !e.1.contains(&f.size_bytes) {
            e.1.push(f.size_bytes);
        }
    }
    out
}

#[test]
fn a_two_layer_toy_model_has_the_flows_and_compute_counted_by_hand() {
    let sc = toy(&[]);
    // T = 32 tokens. Attention forward: 2 x 4 x 64^2 x 32 + 4 x 32 x 32 x 64 = 1,048,576 +
    // 262,144 = 1,310,720 FLOPs; MLP forward: 2 x 3 x 64 x 128 x 32 = 1,572,864. On each of
    // tp = 2 ranks at 4 TFLOP/s (4 FLOPs per ps): 163,840 ps and 196,608 ps; backward twice.
    // A stage has one layer: per micro-batch 360,448 ps forward, 720,896 backward; two of each.
    let ch = sc.labels.chakra.as_ref().unwrap();
    assert_eq!(ch.ranks.len(), 8);
    for r in &ch.ranks {
        assert_eq!(r.compute, SimTime(2 * (360_448 + 720_896)));
    }
    // Activations: 1 x 32 x 64 x 2 = 4096 bytes. tp: per stage and micro-batch 2 all-reduces
    // forward, 2 backward, over 2 ranks (a ring of 2: 4 flows of half the buffer); 4 tp groups
    // x 2 micro-batches x 4 = 32 all-reduces, 128 flows of 2048 bytes. pp: per pipeline (4)
    // and micro-batch one activation forward and one gradient back: 16 flows of 4096 bytes.
    // dp: per layer one all-reduce of its gradients on each tp rank, (4 x 64^2 + 3 x 64 x 128)
    // / 2 x 2 = 40,960 bytes, over 2 replicas: 4 groups, 16 flows of 20,480 bytes.
    let got = by_class(&sc);
    let want: BTreeMap<String, (usize, Vec<u64>)> = [
        ("tp", (128, vec![2048])),
        ("pp", (16, vec![4096])),
        ("dp", (16, vec![20_480])),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    assert_eq!(got, want);
    assert_eq!(sc.flows.len(), 160);
    // tp groups are consecutive ranks; pp sends go between stages of one pipeline (rank r to
    // r + 4: stage-major layout, tp x dp = 4 ranks a stage).
    let pp: Vec<(u32, u32)> = sc
        .flows
        .iter()
        .zip(&ch.flow_class)
        .filter(|(_, &c)| ch.classes[c as usize] == "pp")
        .map(|(f, _)| (f.src.0.min(f.dst.0), f.src.0.max(f.dst.0)))
        .collect();
    assert!(pp.iter().all(|&(a, b)| b == a + 4), "{pp:?}");
    // The collectives' classes in collectives.csv's `comm`.
    let out = lbsim::run(sc);
    let comm: BTreeMap<String, usize> =
        out.collectives
            .collectives
            .iter()
            .fold(BTreeMap::new(), |mut m, c| {
                *m.entry(c.comm.clone().unwrap()).or_default() += 1;
                m
            });
    assert_eq!(comm, [("dp".to_string(), 4), ("tp".to_string(), 32)].into());
}

#[test]
fn the_generated_compute_nodes_carry_exact_picoseconds() {
    use lbsim::workload::training::{default_model, generate, Model, Parallel};
    let model = Model {
        layers: 2,
        hidden: 64,
        ffn_hidden: 128,
        seq_len: 32,
        dense_layers: 2,
        ..default_model()
    };
    let par = Parallel {
        tp: 2,
        pp: 2,
        dp: 2,
        ep: 1,
        micro_batch: 1,
        micro_batches: 2,
        bytes_per_element: 2,
        fsdp: false,
        tflops: 4.0,
        iterations: 1,
        seed: 1,
    };
    let t = generate(&model, &par);
    let mut durations: Vec<(i64, u64)> = t.ranks[0]
        .iter()
        .filter(|n| n.r#type == proto::COMP_NODE)
        .map(|n| {
            (
                n.attr("lbsim_duration_ps").unwrap().int().unwrap(),
                n.duration_micros,
            )
        })
        .collect();
    durations.sort_unstable();
    durations.dedup();
    // Whole microseconds for other simulators: all under half a microsecond round to 0.
    assert_eq!(
        durations,
        [(163_840, 0), (196_608, 0), (327_680, 0), (393_216, 0)]
    );
}

#[test]
fn fsdp_gathers_weights_and_reduce_scatters_gradients() {
    let sc = toy(&["workload.training_fsdp=true"]);
    // Per dp group (4) and layer: an all-gather and a reduce-scatter of 40,960 bytes over 2
    // ranks, each a ring of one step: 2 flows of 20,480 bytes.
    assert_eq!(by_class(&sc)["dp"], (16, vec![20_480]));
    let kinds: Vec<&str> = sc
        .labels
        .collectives
        .iter()
        .filter(|c| c.algo.name() != "ring_allreduce")
        .map(|c| c.algo.name())
        .collect();
    assert_eq!(kinds.len(), 8);
    assert!(kinds.contains(&"ring_allgather") && kinds.contains(&"ring_reduce_scatter"));
}

#[test]
fn an_moe_model_sends_its_drawn_tokens_to_the_expert_parallel_group() {
    // 2 layers, the first dense; 4 experts, top 2; tp 1, pp 1, dp 4, ep 2 (2 experts a rank):
    // two ep groups, {0, 1} and {2, 3}.
    let sc = training(&[
        "workload.training_layers=2",
        "workload.training_hidden=64",
        "workload.training_ffn_hidden=128",
        "workload.training_seq_len=32",
        "workload.training_micro_batches=1",
        "workload.training_experts=4",
        "workload.training_top_k=2",
        "workload.training_expert_ffn_hidden=32",
        "workload.training_dense_layers=1",
        "workload.training_tp=1",
        "workload.training_pp=1",
        "workload.training_dp=4",
        "workload.training_ep=2",
    ])
    .unwrap();
    let ch = sc.labels.chakra.as_ref().unwrap();
    let ep: Vec<(u32, u32, u64)> = sc
        .flows
        .iter()
        .zip(&ch.flow_class)
        .filter(|(_, &c)| ch.classes[c as usize] == "ep")
        .map(|(f, _)| (f.src.0, f.dst.0, f.size_bytes))
        .collect();
    // Each ep group's routing is `moe::route`'s: a token goes to the other rank once if one of
    // its 2 experts is there (rank r holds experts 2r, 2r+1). Dispatch and the combine's
    // gradients carry pair (a, b)'s tokens from a to b, combine and the dispatch's gradients
    // back: per group 2 ordered pairs x 4 phases, each token 64 x 2 = 128 bytes.
    assert_eq!(ep.len(), 16, "{ep:?}");
    assert!(ep.iter().all(|&(a, b, _)| a / 2 == b / 2 && a != b));
    assert!(ep
        .iter()
        .all(|&(_, _, x)| x % 128 == 0 && x > 0 && x <= 32 * 128));
    let from = |a: u32, b: u32| -> Vec<u64> {
        ep.iter()
            .filter(|f| (f.0, f.1) == (a, b))
            .map(|f| f.2)
            .collect()
    };
    for (a, b) in [(0, 1), (2, 3)] {
        let (ab, ba) = (from(a, b), from(b, a));
        assert_eq!(ab.len(), 4);
        assert_eq!(ba.len(), 4);
        // a -> b carries a's tokens (dispatch, combine grads) and b's tokens (combine,
        // dispatch grads): each size twice.
        let mut x = ab.clone();
        x.sort_unstable();
        assert_eq!((x[0], x[2]), (x[1], x[3]), "{ab:?}");
    }
    // The same draw as the moe generator's router makes for the first group.
    use lbsim::rng::{mix64, rng_for, Stream};
    use lbsim::workload::moe::{route, Router};
    let r = Router {
        tokens_per_gpu: 32,
        experts: 4,
        top_k: 2,
        experts_per_gpu: 2,
        weights: vec![1.0; 4],
        capacity: None,
        max_servers: 0,
    };
    let index = [0u32, 0, 0, 1]
        .iter()
        .fold(mix64(0), |a, &x| mix64(a ^ x as u64));
    let pairs = route(&r, &[0, 0], &mut rng_for(1, Stream::Moe, index)).pair_tokens(&r);
    assert_eq!(from(0, 1)[0], pairs[1] * 128);
    assert_eq!(from(1, 0)[0], pairs[2] * 128);
}

#[test]
fn exported_graphs_replay_as_chakra_traces_to_the_same_flows_and_times() {
    round_trip("export", TOY);
}

#[test]
fn an_exported_moe_model_replays_to_the_same_flows_and_times() {
    round_trip(
        "export-moe",
        &[
            "workload.training_layers=3",
            "workload.training_hidden=64",
            "workload.training_ffn_hidden=128",
            "workload.training_seq_len=32",
            "workload.training_micro_batches=2",
            "workload.training_experts=8",
            "workload.training_top_k=2",
            "workload.training_expert_ffn_hidden=32",
            "workload.training_dense_layers=1",
            "workload.training_tp=1",
            "workload.training_pp=2",
            "workload.training_dp=4",
            "workload.training_ep=4",
            "workload.iterations=2",
        ],
    );
}

/// `sets`' training workload written as Chakra files and replayed as `kind = "chakra"` with
/// its comm groups: the same flows, dependencies, flow times, CCTs and iteration split.
fn round_trip(name: &str, sets: &[&str]) {
    let dir = TempDir::new("training", name);
    let file = ScenarioFile::builtin(
        &sets
            .iter()
            .map(|s| s.to_string())
            .chain(["topology.k=4".into(), "workload.kind=training".into()])
            .collect::<Vec<_>>(),
    )
    .unwrap();
    let origin = Origin::builtin();
    let a = Scenario::build(file.clone(), &origin).unwrap();
    let plan =
        lbsim::workload::training_traces(&file.workload, &a.topology, &file.traffic(), &origin)
            .unwrap();
    for (r, nodes) in plan.ranks.iter().enumerate() {
        std::fs::write(
            dir.join(format!("toy.{r}.et")),
            chakra::encode("0.0.4", nodes),
        )
        .unwrap();
    }
    std::fs::write(dir.join("comm_groups.json"), plan.groups.to_json()).unwrap();
    let b = Scenario::build(
        ScenarioFile::builtin(&[
            "topology.k=4".into(),
            "workload.kind=chakra".into(),
            format!("workload.path=\"{}\"", dir.display()),
            format!(
                "workload.chakra_comm_groups=\"{}\"",
                dir.join("comm_groups.json").display()
            ),
        ])
        .unwrap(),
        &origin,
    )
    .unwrap();
    let key = |s: &Scenario| -> Vec<(u32, u32, u64)> {
        s.flows
            .iter()
            .map(|f| (f.src.0, f.dst.0, f.size_bytes))
            .collect()
    };
    assert_eq!(key(&a), key(&b));
    assert_eq!(a.deps, b.deps);
    let (ra, rb) = (lbsim::run(a), lbsim::run(b));
    let times = |o: &lbsim::RunOutput| -> Vec<(u64, Option<u64>)> {
        o.flows.iter().map(|f| (f.start_ps, f.finish_ps)).collect()
    };
    assert_eq!(times(&ra), times(&rb));
    let cct = |o: &lbsim::RunOutput| -> Vec<Option<u64>> {
        o.collectives.collectives.iter().map(|c| c.cct_ps).collect()
    };
    assert_eq!(cct(&ra), cct(&rb));
    let (ca, cb) = (
        ra.collectives.chakra.as_ref().unwrap(),
        rb.collectives.chakra.as_ref().unwrap(),
    );
    assert!(ca.iteration_ps.is_some());
    assert_eq!(ca.iteration_ps, cb.iteration_ps);
    assert_eq!(ca.iteration, cb.iteration);
}

fn coll(id: u64, pg: Option<&str>) -> proto::Node {
    let mut attr = vec![
        proto::int64("comm_type", proto::ALL_REDUCE),
        proto::int64("comm_size", 4000),
    ];
    if let Some(pg) = pg {
        attr.push(proto::AttributeProto {
            name: "pg_name".into(),
            doc_string: String::new(),
            value: Some(proto::Value::StringVal(pg.into())),
        });
    }
    proto::Node {
        id,
        name: format!("ar{id}"),
        r#type: proto::COMM_COLL_NODE,
        attr,
        ..Default::default()
    }
}

fn opt(groups: Option<CommGroups>) -> Options {
    Options {
        ranks: None,
        skip_unknown: false,
        algorithms: Default::default(),
        payload_bytes: 4096,
        comm_groups: groups,
    }
}

#[test]
fn pg_name_groups_run_their_own_rings() {
    let traces: Vec<(String, Vec<proto::Node>)> = (0..4)
        .map(|r| {
            let pg = if r < 2 { "a" } else { "b" };
            (format!("t.{r}.et"), vec![coll(1, Some(pg))])
        })
        .collect();
    let groups = CommGroups {
        source: "groups.json".into(),
        groups: [("a".to_string(), vec![0, 1]), ("b".to_string(), vec![2, 3])].into(),
    };
    let hosts = [0, 1, 2, 3];
    let g = chakra::replay_nodes(&traces, &hosts, SimTime::ZERO, &opt(Some(groups))).unwrap();
    // Two rings of 2 (4 flows of 2000 bytes each), none between the groups.
    assert_eq!(g.flows.len(), 8);
    assert!(g.flows.iter().all(|f| f.size_bytes == 2000));
    assert!(g.flows.iter().all(|f| (f.src.0 < 2) == (f.dst.0 < 2)));
    assert_eq!(g.labels.collectives.len(), 2);
    assert!(g.labels.collectives.iter().all(|c| c.ranks == 2));
    // Without groups pg_name is not read: one ring of 4 (24 flows of 1000 bytes).
    let one = chakra::replay_nodes(&traces, &hosts, SimTime::ZERO, &opt(None)).unwrap();
    assert_eq!(one.flows.len(), 24);
    assert_eq!(one.labels.collectives.len(), 1);
}

#[test]
fn bad_comm_groups_are_named() {
    let dir = TempDir::new("training", "groups");
    let traces: Vec<(String, Vec<proto::Node>)> = (0..2)
        .map(|r| (format!("t.{r}.et"), vec![coll(1, Some("x"))]))
        .collect();
    for (r, (_, n)) in traces.iter().enumerate() {
        std::fs::write(dir.join(format!("t.{r}.et")), chakra::encode("0.0.4", n)).unwrap();
    }
    let build = |json: &str| -> String {
        let g = dir.join("g.json");
        std::fs::write(&g, json).unwrap();
        let file = ScenarioFile::builtin(&[
            "topology.k=4".into(),
            "workload.kind=chakra".into(),
            format!("workload.path=\"{}\"", dir.display()),
            format!("workload.chakra_comm_groups=\"{}\"", g.display()),
        ])
        .unwrap();
        match Scenario::build(file, &Origin::builtin()) {
            Ok(_) => String::new(),
            Err(e) => e.to_string(),
        }
    };
    let e = build("{\"x\": [0, 1");
    assert!(
        e.contains("g.json") && e.contains("chakra_comm_groups") && e.contains("not a comm-group"),
        "{e}"
    );
    let e = build("{\"y\": [0, 1]}");
    assert!(
        e.contains("t.0.et") && e.contains("pg_name `x`") && e.contains("g.json"),
        "{e}"
    );
    let e = build("{\"x\": [0, 7]}");
    assert!(
        e.contains("g.json") && e.contains("rank 7") && e.contains("chakra_comm_groups"),
        "{e}"
    );
    assert_eq!(build("{\"x\": [0, 1]}"), "");
}

#[test]
fn bad_training_keys_are_named() {
    let e = |sets: &[&str]| training(sets).err().unwrap_or_default();
    let x = e(&["workload.model=\"gpt5\""]);
    assert!(
        x.contains("workload.model") && x.contains("llama3_70b"),
        "{x}"
    );
    let x = e(&["workload.training_tp=0"]);
    assert!(x.contains("workload.training_tp"), "{x}");
    let x = e(&["workload.training_ep=2"]);
    assert!(
        x.contains("workload.training_ep") && x.contains("MoE"),
        "{x}"
    );
    let x = e(&["workload.training_pp=8", "workload.training_layers=4"]);
    assert!(x.contains("workload.training_pp"), "{x}");
    let x = e(&["workload.training_dp=8"]);
    assert!(
        x.contains("workload.training_dp") && x.contains("32 ranks"),
        "{x}"
    );
    let x = e(&["workload.moe_layers=2"]);
    assert!(
        x.contains("workload.moe_layers") && x.contains("training"),
        "{x}"
    );
    let x = e(&["workload.training_tflops=0"]);
    assert!(x.contains("workload.training_tflops"), "{x}");
    // A GPU cluster of servers of 8: tp 16 spans two.
    let file = ScenarioFile::from_toml(
        "",
        &[
            "topology.kind=ai".into(),
            "topology.servers=4".into(),
            "workload.kind=training".into(),
            "workload.training_tp=16".into(),
            "workload.training_pp=1".into(),
            "workload.training_dp=1".into(),
        ],
        &Origin::builtin(),
    )
    .unwrap();
    let x = Scenario::build(file, &Origin::builtin())
        .err()
        .unwrap()
        .to_string();
    assert!(
        x.contains("workload.training_tp") && x.contains("spans servers"),
        "{x}"
    );
}

#[test]
fn the_iteration_split_adds_up_on_every_rank() {
    let out = lbsim::run(toy(&["workload.iterations=2"]));
    let ch = out.collectives.chakra.as_ref().unwrap();
    for r in &ch.ranks {
        let exposed: u64 = r.exposed_comm_ps.as_ref().unwrap().values().sum();
        assert_eq!(exposed, r.critical_comm_ps.unwrap());
        assert_eq!(
            r.critical_compute_ps.unwrap() + exposed,
            r.iteration_ps.unwrap(),
            "rank {}",
            r.rank
        );
        assert!(r
            .comm_ps
            .as_ref()
            .unwrap()
            .keys()
            .all(|k| ["tp", "pp", "dp"].contains(&k.as_str())));
    }
    let it = ch.iteration.as_ref().unwrap();
    assert_eq!(it.compute_ps + it.exposed_comm_total_ps, it.time_ps);
    assert_eq!(Some(it.time_ps), ch.iteration_ps);
    let me = &ch.ranks[it.rank as usize];
    let summed: u64 = me.comm_ps.as_ref().unwrap().values().sum();
    assert!(it.comm_ps > 0 && it.comm_ps <= summed, "{it:?}");
    assert!(it.overlap_ps <= it.comm_ps.min(me.compute_ps), "{it:?}");
    // Two iterations take longer than one: the second waits for the first's gradients.
    let one = lbsim::run(toy(&[]));
    assert!(one.collectives.chakra.unwrap().iteration_ps.unwrap() < it.time_ps);
}

#[test]
fn a_layers_gradients_overlap_the_next_layers_backward() {
    // One stage, no tp: layer 1's gradient all-reduce starts when its last backward is done
    // and runs while layer 0's backward computes (2 x (196,608 + 163,840) x 2 = 1,441,792 ps
    // at tp 1), and nothing else overlaps compute: 0 < overlap <= that.
    let out = lbsim::run(toy(&["workload.training_tp=1", "workload.training_pp=1"]));
    let it = out.collectives.chakra.unwrap().iteration.unwrap();
    assert!(it.overlap_ps > 0 && it.overlap_ps <= 1_441_792, "{it:?}");
    assert_eq!(it.exposed_comm_ps.keys().collect::<Vec<_>>(), ["dp"]);
}
