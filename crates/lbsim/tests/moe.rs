//! `workload.kind = "moe"`: a layer whose routing is fixed equals the plain all-to-all; the
//! per-pair bytes follow the popularity's closed form and the expert draws pass a chi-square
//! test; node-limited routing and the capacity factor hold on every token; bad input is
//! refused naming its key; the same seed gives the same flows.csv.

mod common;

use std::collections::BTreeMap;

use common::{run, scenario};
use lbsim::rng::{rng_for, Stream};
use lbsim::workload::moe::{route, Router};
use lbsim::{Origin, Scenario, ScenarioFile};

/// The default scenario on a k=4 fat-tree (16 hosts) with `sets` on top.
fn moe(sets: &[&str]) -> Result<Scenario, String> {
    let mut all: Vec<String> = vec!["topology.k=4".into(), "workload.kind=moe".into()];
    all.extend(sets.iter().map(|s| s.to_string()));
    let file = ScenarioFile::builtin(&all).map_err(|e| e.to_string())?;
    Scenario::build(file, &Origin::builtin()).map_err(|e| e.to_string())
}

/// A GPU cluster (`topology.kind = "ai"`, an otherwise empty file) with `sets` on top.
fn moe_ai(sets: &[&str]) -> Result<Scenario, String> {
    let mut all: Vec<String> = vec!["topology.kind=ai".into(), "workload.kind=moe".into()];
    all.extend(sets.iter().map(|s| s.to_string()));
    let file = ScenarioFile::from_toml("", &all, &Origin::builtin()).map_err(|e| e.to_string())?;
    Scenario::build(file, &Origin::builtin()).map_err(|e| e.to_string())
}

#[test]
fn a_layer_whose_every_token_picks_every_expert_is_the_plain_all_to_all() {
    // top_k = experts: every token goes to every expert, one expert per GPU, so each GPU
    // sends every other exactly one token (hidden x 2 bytes) in each of the four phases,
    // whatever the draws: the shifted all-to-all of those bytes, four times, each waiting for
    // the previous one whole (compute and gaps zero).
    let m = moe(&[
        "workload.moe_experts=8",
        "workload.moe_experts_per_gpu=1",
        "workload.moe_top_k=8",
        "workload.moe_tokens_per_gpu=1",
        "workload.moe_hidden=20000",
        "workload.moe_dispatch_bytes_per_element=2",
        "workload.moe_combine_bytes_per_element=2",
        "workload.moe_popularity=\"uniform\"",
        "workload.moe_layers=1",
        "workload.moe_backward=true",
    ])
    .unwrap();
    let a = scenario(&[
        "topology.k=4",
        "workload.kind=all_to_all",
        "workload.group_size=8",
        "workload.message_bytes=40000",
        "workload.iterations=4",
    ]);
    assert_eq!(m.flows.len(), 4 * 8 * 7);
    assert_eq!(m.flows, a.flows);
    assert_eq!(m.deps, a.deps);
    let kinds: Vec<&str> = m.labels.collectives.iter().map(|c| c.algo.name()).collect();
    assert_eq!(
        kinds,
        [
            "moe_dispatch",
            "moe_combine",
            "moe_combine_bwd",
            "moe_dispatch_bwd"
        ]
    );
    let (mo, ao) = (lbsim::run(m), lbsim::run(a));
    let json = |o: &lbsim::RunOutput| serde_json::to_string(&o.flows).unwrap();
    assert_eq!(json(&mo), json(&ao));
    let cct = |o: &lbsim::RunOutput| -> Vec<(Option<u64>, u64)> {
        o.collectives
            .collectives
            .iter()
            .map(|c| (c.cct_ps, c.bound_ps))
            .collect()
    };
    assert_eq!(cct(&mo), cct(&ao));
    assert!(cct(&mo).iter().all(|c| c.0.is_some()));
    assert_eq!(mo.summary.cct_ps, ao.summary.cct_ps);
    assert_eq!(mo.summary.lower_bound_ps, ao.summary.lower_bound_ps);
    let moe = &mo.collectives.moe;
    assert_eq!(moe.len(), 1);
    assert_eq!((moe[0].assignments, moe[0].dropped), (64, 0));
    assert_eq!(moe[0].max_expert_tokens, 8);
}

/// Successive sampling of two experts from probabilities `p`: the chance each is among the two,
/// p_e (1 + sum_{m != e} p_m / (1 - p_m)), and the chance of each unordered pair.
fn top2(p: &[f64]) -> (Vec<f64>, BTreeMap<(usize, usize), f64>) {
    let e = p.len();
    let incl = (0..e)
        .map(|i| {
            p[i] * (1.0
                + (0..e)
                    .filter(|&m| m != i)
                    .map(|m| p[m] / (1.0 - p[m]))
                    .sum::<f64>())
        })
        .collect();
    let mut pairs = BTreeMap::new();
    for a in 0..e {
        for b in a + 1..e {
            pairs.insert(
                (a, b),
                p[a] * p[b] / (1.0 - p[a]) + p[b] * p[a] / (1.0 - p[b]),
            );
        }
    }
    (incl, pairs)
}

fn zipf(e: usize, s: f64) -> Vec<f64> {
    let w: Vec<f64> = (0..e).map(|i| (i as f64 + 1.0).powf(-s)).collect();
    let sum: f64 = w.iter().sum();
    w.iter().map(|x| x / sum).collect()
}

#[test]
fn per_pair_bytes_follow_the_closed_form_and_draws_pass_chi_square() {
    // 8 experts, one per GPU, top-2, 64 tokens a GPU, one byte a token: a dispatch flow's size
    // is the tokens its source routes to its destination's expert, T x pi_dst in expectation,
    // Binomial(T, pi_dst) per seed.
    const T: f64 = 64.0;
    const SEEDS: u64 = 150;
    for (pop, s) in [("uniform", 0.0), ("zipf", 1.2)] {
        let p = zipf(8, s);
        let (incl, _) = top2(&p);
        let mut sums = [[0u64; 8]; 8];
        for seed in 0..SEEDS {
            let mut sets = vec![
                format!("seed={seed}"),
                "workload.moe_experts=8".into(),
                "workload.moe_experts_per_gpu=1".into(),
                "workload.moe_top_k=2".into(),
                "workload.moe_tokens_per_gpu=64".into(),
                "workload.moe_hidden=1".into(),
                "workload.moe_dispatch_bytes_per_element=1".into(),
                "workload.moe_backward=false".into(),
                format!("workload.moe_popularity=\"{pop}\""),
            ];
            if pop == "zipf" {
                sets.push(format!("workload.moe_zipf_exponent={s}"));
            }
            let refs: Vec<&str> = sets.iter().map(String::as_str).collect();
            let sc = moe(&refs).unwrap();
            let d = &sc.labels.collectives[0];
            assert_eq!(d.algo.name(), "moe_dispatch");
            for f in &sc.flows[d.flows.start as usize..d.flows.end as usize] {
                sums[f.src.idx()][f.dst.idx()] += f.size_bytes;
            }
        }
        // 4.5 standard deviations of the mean over the seeds, per pair; and the uniform
        // closed form must be far off under Zipf (the test cannot pass by ignoring weights).
        let mut far_from_uniform = 0;
        for (i, row) in sums.iter().enumerate() {
            for (j, &sum) in row.iter().enumerate() {
                if i == j {
                    assert_eq!(sum, 0, "local tokens never enter the network");
                    continue;
                }
                let mean = sum as f64 / SEEDS as f64;
                let sd = (T * incl[j] * (1.0 - incl[j]) / SEEDS as f64).sqrt();
                let want = T * incl[j];
                assert!(
                    (mean - want).abs() < 4.5 * sd,
                    "{pop}: pair {i}->{j}: mean {mean} against {want} (sd {sd})"
                );
                if (mean - T * 2.0 / 8.0).abs() > 10.0 * sd {
                    far_from_uniform += 1;
                }
            }
        }
        assert_eq!(far_from_uniform > 0, pop == "zipf", "{pop}");
    }

    // Chi-square over the unordered pairs each token draws (28 categories, 27 degrees of
    // freedom), Zipf 1.2 and uniform, 200 seeds of 8 GPUs x 64 tokens: the bound is the mean
    // plus six standard deviations (p about 1e-5), and the same counts against the wrong law
    // (the other one, or every pair alike under Zipf) are far above it.
    let dof = 27.0f64;
    let limit = dof + 6.0 * (2.0 * dof).sqrt();
    let chi2 = |counts: &BTreeMap<(usize, usize), u64>, q: &BTreeMap<(usize, usize), f64>| {
        let n: u64 = counts.values().sum();
        q.iter()
            .map(|(k, &qk)| {
                let o = counts.get(k).copied().unwrap_or(0) as f64;
                let e = n as f64 * qk;
                (o - e) * (o - e) / e
            })
            .sum::<f64>()
    };
    let mut stats = Vec::new();
    for s in [1.2, 0.0] {
        let r = Router {
            tokens_per_gpu: 64,
            experts: 8,
            top_k: 2,
            experts_per_gpu: 1,
            weights: zipf(8, s),
            capacity: None,
            max_servers: 0,
        };
        let mut counts: BTreeMap<(usize, usize), u64> = BTreeMap::new();
        for seed in 0..200 {
            let x = route(
                &r,
                &[0, 1, 2, 3, 4, 5, 6, 7],
                &mut rng_for(seed, Stream::Moe, 9),
            );
            for tok in x.experts.chunks(2) {
                let (a, b) = (tok[0].min(tok[1]) as usize, tok[0].max(tok[1]) as usize);
                *counts.entry((a, b)).or_default() += 1;
            }
        }
        let own = chi2(&counts, &top2(&zipf(8, s)).1);
        assert!(own < limit, "Zipf {s}: chi-square {own} over {limit}");
        let other = chi2(&counts, &top2(&zipf(8, 1.2 - s)).1);
        assert!(
            other > 10.0 * limit,
            "Zipf {s} against the other law: {other}"
        );
        stats.push(own);
    }
    // Of the expected size (27 on average), not suspiciously near zero.
    assert!(stats.iter().all(|&c| c > 5.0), "{stats:?}");
}

#[test]
fn node_limited_routing_keeps_each_tokens_experts_on_at_most_m_servers() {
    // 16 GPUs on 4 servers, 2 experts each, top-6: without a limit tokens span up to 4
    // servers; with M = 1 or 2, never more than M.
    let servers: Vec<u32> = (0..16).map(|r| r / 4).collect();
    let span = |m: u32, seed: u64| {
        let r = Router {
            tokens_per_gpu: 100,
            experts: 32,
            top_k: 6,
            experts_per_gpu: 2,
            weights: zipf(32, 0.8),
            capacity: None,
            max_servers: m,
        };
        let x = route(&r, &servers, &mut rng_for(seed, Stream::Moe, 0));
        x.experts
            .chunks(6)
            .map(|tok| {
                let mut s: Vec<u32> = tok.iter().map(|&e| servers[(e / 2) as usize]).collect();
                s.sort_unstable();
                s.dedup();
                s.len()
            })
            .max()
            .unwrap()
    };
    for seed in 0..5 {
        assert_eq!(span(0, seed), 4);
        assert_eq!(span(1, seed), 1);
        assert_eq!(span(2, seed), 2);
    }
    // On a GPU cluster the servers are its NVLink domains: 4 servers of 4 GPUs, one token a
    // GPU to two experts on one server, over 20 layers: each GPU's dispatch flows of a layer
    // go to one server.
    let sc = moe_ai(&[
        "topology.servers=4",
        "topology.leaf_servers=4",
        "topology.server.gpus=4",
        "workload.moe_experts=16",
        "workload.moe_experts_per_gpu=1",
        "workload.moe_top_k=2",
        "workload.moe_tokens_per_gpu=1",
        "workload.moe_hidden=1000",
        "workload.moe_max_servers=1",
        "workload.moe_layers=20",
        "workload.moe_backward=false",
    ])
    .unwrap();
    let runs = sc.topology.domain_runs().unwrap();
    assert_eq!(runs.len(), 4);
    let server = |h: u32| runs.iter().position(|r| r.contains(&h)).unwrap();
    let mut cross = 0;
    for c in sc
        .labels
        .collectives
        .iter()
        .filter(|c| c.algo.name() == "moe_dispatch")
    {
        let mut dst: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
        for f in &sc.flows[c.flows.start as usize..c.flows.end as usize] {
            dst.entry(f.src.0).or_default().push(server(f.dst.0));
            cross += usize::from(server(f.dst.0) != server(f.src.0));
        }
        for (src, mut s) in dst {
            s.dedup();
            assert_eq!(s.len(), 1, "GPU {src} sent to servers {s:?}");
        }
    }
    assert!(cross > 0, "some tokens leave their server");
    // Too few experts on a server for a token's top_k: refused naming the key.
    let e = moe(&[
        "workload.gpus_per_host=4",
        "workload.moe_experts=16",
        "workload.moe_experts_per_gpu=1",
        "workload.moe_top_k=5",
        "workload.moe_max_servers=1",
    ])
    .unwrap_err();
    assert!(e.contains("`workload.moe_max_servers`"), "{e}");
}

#[test]
fn the_capacity_factor_caps_every_experts_tokens() {
    // Zipf 1.5 over 16 experts: expert 0 is asked for far more than its share; at factor 1.0
    // each expert keeps at most ceil(16 x 128 x 4 / 16) = 512 tokens and the rest is dropped.
    let servers: Vec<u32> = (0..16).collect();
    for (factor, cap) in [(1.0, 512u64), (1.25, 640), (0.3, 154)] {
        let r = Router {
            tokens_per_gpu: 128,
            experts: 16,
            top_k: 4,
            experts_per_gpu: 1,
            weights: zipf(16, 1.5),
            capacity: Some(cap),
            max_servers: 0,
        };
        let x = route(&r, &servers, &mut rng_for(3, Stream::Moe, 0));
        let mut load = [0u64; 16];
        for (e, k) in x.experts.iter().zip(&x.kept) {
            if *k {
                load[*e as usize] += 1;
            }
        }
        assert_eq!(load.to_vec(), x.load);
        assert!(load.iter().all(|&l| l <= cap), "{factor}: {load:?}");
        assert_eq!(load[0], cap, "expert 0 is full");
        let kept = load.iter().sum::<u64>();
        assert_eq!(kept + x.dropped, 16 * 128 * 4);
        assert!(x.dropped > 0);
    }
    // Through the scenario: the same cap from the key, the drops in the collectives report, and
    // smaller dispatches than without it.
    let base = [
        "workload.moe_experts=16",
        "workload.moe_experts_per_gpu=1",
        "workload.moe_top_k=4",
        "workload.moe_tokens_per_gpu=128",
        "workload.moe_hidden=64",
        "workload.moe_popularity=\"zipf\"",
        "workload.moe_zipf_exponent=1.5",
        "workload.moe_backward=false",
    ];
    let with = |extra: &[&str]| {
        let mut s = base.to_vec();
        s.extend_from_slice(extra);
        lbsim::run(moe(&s).unwrap())
    };
    let capped = with(&["workload.moe_capacity_factor=1.0"]);
    let free = with(&[]);
    let (c, f) = (&capped.collectives.moe[0], &free.collectives.moe[0]);
    assert_eq!(c.max_expert_tokens, 512);
    assert!(f.max_expert_tokens > 512 && f.dropped == 0, "{f:?}");
    assert_eq!(c.assignments, 16 * 128 * 4);
    assert!(c.dropped > 0);
    let bytes = |o: &lbsim::RunOutput| o.collectives.collectives[0].bytes;
    assert!(bytes(&capped) < bytes(&free));
}

#[test]
fn bad_input_is_refused_naming_its_key() {
    for (sets, key) in [
        (&["workload.moe_top_k=65"][..], "moe_top_k"),
        (&["workload.moe_top_k=0"], "moe_top_k"),
        (&["workload.moe_experts_per_gpu=3"], "moe_experts_per_gpu"),
        (&["workload.moe_experts_per_gpu=64"], "moe_experts_per_gpu"),
        (
            &[
                "workload.moe_popularity=\"zipf\"",
                "workload.moe_zipf_exponent=-1",
            ],
            "moe_zipf_exponent",
        ),
        (&["workload.moe_zipf_exponent=1"], "moe_zipf_exponent"),
        (
            &[
                "workload.moe_popularity=\"weights\"",
                "workload.moe_expert_weights=[1.0, 2.0]",
            ],
            "moe_expert_weights",
        ),
        (
            &["workload.moe_popularity=\"weights\""],
            "moe_expert_weights",
        ),
        (
            &[
                "workload.moe_experts=4",
                "workload.moe_experts_per_gpu=1",
                "workload.moe_top_k=2",
                "workload.moe_popularity=\"weights\"",
                "workload.moe_expert_weights=[1.0, 0.0, 0.0, -1.0]",
            ],
            "moe_expert_weights",
        ),
        (
            &[
                "workload.moe_experts=4",
                "workload.moe_experts_per_gpu=1",
                "workload.moe_top_k=2",
                "workload.moe_popularity=\"weights\"",
                "workload.moe_expert_weights=[1.0, 0.0, 0.0, 0.0]",
            ],
            "moe_expert_weights",
        ),
        (
            &["workload.moe_capacity_factor=-0.5"],
            "moe_capacity_factor",
        ),
        (&["workload.moe_compute_us=-1"], "moe_compute_us"),
        (&["workload.moe_layer_gap_us=1e300"], "moe_layer_gap_us"),
        (&["workload.moe_layers=0"], "moe_layers"),
        (&["workload.moe_hidden=0"], "moe_hidden"),
        (
            &["workload.moe_tokens_per_gpu=4000000000"],
            "moe_tokens_per_gpu",
        ),
        (
            &["workload.moe_tokens_per_gpu=3000000"],
            "moe_tokens_per_gpu",
        ),
        (
            &["workload.moe_experts=128", "workload.moe_experts_per_gpu=2"],
            "moe_experts",
        ),
        (
            &[
                "workload.groups=2",
                "workload.moe_experts=48",
                "workload.moe_experts_per_gpu=4",
            ],
            "groups",
        ),
        (&["workload.group_size=4"], "group_size"),
        (
            &["workload.kind=all_to_all", "workload.moe_top_k=2"],
            "moe_top_k",
        ),
    ] {
        let e = moe(sets).unwrap_err();
        assert!(
            e.contains(&format!("key `workload.{key}`")),
            "{sets:?}: {e}"
        );
    }
}

#[test]
fn the_same_seed_gives_the_same_flows_and_another_seed_does_not() {
    // (flows.csv's bytes through the CLI: lbsim-cli's tests/cli.rs.)
    let records = |seed: u32| {
        let seed = format!("seed={seed}");
        let sc = moe(&[
            &seed,
            "workload.moe_popularity=\"zipf\"",
            "workload.moe_tokens_per_gpu=64",
            "workload.moe_layers=2",
        ])
        .unwrap();
        serde_json::to_string(&run(sc).flow_records()).unwrap()
    };
    let (a, b, c) = (records(5), records(5), records(6));
    assert!(a.len() > 1000);
    assert_eq!(a, b);
    assert_ne!(a, c);
}

#[test]
fn pxn_relays_moe_traffic_between_rails() {
    // 2 servers of 4 GPUs, rail-optimized: under PXN a token for another server's GPU on
    // another rail crosses NVLink first, so every flow that leaves a server joins two GPUs of
    // one rail; the same bytes arrive either way.
    let base = [
        "topology.servers=2",
        "topology.leaf_servers=2",
        "topology.server.gpus=4",
        "workload.moe_experts=8",
        "workload.moe_experts_per_gpu=1",
        "workload.moe_top_k=3",
        "workload.moe_tokens_per_gpu=16",
        "workload.moe_hidden=512",
    ];
    let with = |pxn: bool| {
        let mut s = base.to_vec();
        let p = format!("workload.pxn={pxn}");
        s.push(&p);
        moe_ai(&s).unwrap()
    };
    let (plain, pxn) = (with(false), with(true));
    let runs = pxn.topology.domain_runs().unwrap();
    let at = |h: u32| {
        let r = runs.iter().find(|r| r.contains(&h)).unwrap();
        (r.start, h - r.start)
    };
    let mut relayed = 0;
    for f in &pxn.flows {
        let ((s, rs), (d, rd)) = (at(f.src.0), at(f.dst.0));
        if s != d {
            assert_eq!(rs, rd, "{f:?} crosses servers off its rail");
        }
    }
    for f in &plain.flows {
        let ((s, rs), (d, rd)) = (at(f.src.0), at(f.dst.0));
        relayed += usize::from(s != d && rs != rd);
    }
    assert!(relayed > 0);
    assert!(pxn.flows.len() > plain.flows.len());
    let o = lbsim::run(pxn);
    assert_eq!(o.summary.flows_completed as usize, o.flows.len());
    assert!(o.collectives.collectives.iter().all(|c| c.cct_ps.is_some()));
}

#[test]
fn hierarchical_dispatch_crosses_servers_once_per_token_on_its_rail() {
    // One GPU per server (a fat-tree's hosts): the relay is the destination itself, so the
    // relayed phases are the direct ones, flow for flow.
    let on_fat_tree = |h: bool| {
        let s = format!("workload.moe_hierarchical={h}");
        moe(&["workload.moe_tokens_per_gpu=64", &s]).unwrap()
    };
    let (plain, relayed) = (on_fat_tree(false), on_fat_tree(true));
    assert_eq!(plain.flows, relayed.flows);
    assert_eq!(plain.deps, relayed.deps);
    // 2 servers of 4 GPUs, 3 experts a token: a token with several experts on the other
    // server crosses once, to the GPU of its own rail there, so fewer bytes cross and every
    // flow between servers joins two GPUs of one rail.
    let base = [
        "topology.servers=2",
        "topology.leaf_servers=2",
        "topology.server.gpus=4",
        "workload.moe_experts=16",
        "workload.moe_experts_per_gpu=2",
        "workload.moe_top_k=3",
        "workload.moe_tokens_per_gpu=32",
        "workload.moe_hidden=512",
    ];
    let on_ai = |h: bool| {
        let mut s = base.to_vec();
        let x = format!("workload.moe_hierarchical={h}");
        s.push(&x);
        moe_ai(&s).unwrap()
    };
    let (plain, relayed) = (on_ai(false), on_ai(true));
    let runs = relayed.topology.domain_runs().unwrap();
    let at = |h: u32| {
        let r = runs.iter().find(|r| r.contains(&h)).unwrap();
        (r.start, h - r.start)
    };
    let cross = |sc: &Scenario, phase: &str| -> u64 {
        let c = sc
            .labels
            .collectives
            .iter()
            .find(|c| c.algo.name() == phase)
            .unwrap();
        sc.flows[c.flows.start as usize..c.flows.end as usize]
            .iter()
            .filter(|f| at(f.src.0).0 != at(f.dst.0).0)
            .map(|f| f.size_bytes)
            .sum()
    };
    for phase in [
        "moe_dispatch",
        "moe_combine",
        "moe_combine_bwd",
        "moe_dispatch_bwd",
    ] {
        let (p, r) = (cross(&plain, phase), cross(&relayed, phase));
        assert!(0 < r && r < p, "{phase}: {r} bytes relayed, {p} direct");
    }
    for f in &relayed.flows {
        let ((s, rs), (d, rd)) = (at(f.src.0), at(f.dst.0));
        assert!(s == d || rs == rd, "{f:?} crosses servers off its rail");
    }
    let o = lbsim::run(relayed);
    assert_eq!(o.summary.flows_completed as usize, o.flows.len());
    for c in &o.collectives.collectives {
        assert!(c.cct_ps.unwrap() >= c.bound_ps, "{c:?}");
    }
}
