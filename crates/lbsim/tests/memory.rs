//! The memory estimate: made before generating flows, it counts what the built scenario holds.

use lbsim::memory::human_bytes;
use lbsim::{Origin, Scenario, ScenarioFile};

fn file(sets: &[&str]) -> ScenarioFile {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    ScenarioFile::builtin(&sets).unwrap()
}

#[test]
fn estimate_before_generation_counts_all_to_all_pairs() {
    let e = file(&["topology.k=64", "workload.kind=all_to_all"])
        .memory_estimate()
        .unwrap();
    assert_eq!(e.flows, 65536 * 65535);
    assert!(e.bytes > 1 << 40, "{}", human_bytes(e.bytes));
}

#[test]
fn estimate_before_generation_matches_the_built_scenario() {
    for sets in [
        &["topology.k=4", "workload.kind=all_to_all"][..],
        &["topology.k=4"][..],
        &["topology.k=4", "workload.kind=ring_allreduce"][..],
        &[
            "topology.kind=leaf_spine",
            "topology.leaves=4",
            "topology.hosts_per_leaf=4",
            "topology.spines=2",
        ][..],
    ] {
        let f = file(sets);
        let pre = f.memory_estimate().unwrap();
        let sc = Scenario::build(f, &Origin::builtin()).unwrap();
        let post = sc.memory_estimate();
        assert_eq!((pre.flows, pre.ports), (post.flows, post.ports), "{sets:?}");
        let (a, b) = (pre.bytes as f64, post.bytes as f64);
        assert!((a - b).abs() <= 0.1 * b, "{sets:?}: {a} vs {b}");
    }
}
