//! Helpers shared by the scenario tests.
#![allow(dead_code)]

use lbsim::{Origin, Scenario, ScenarioFile, Simulation};

mod tempdir;
#[allow(unused_imports)]
pub use tempdir::TempDir;

/// The built-in default with `sets` applied.
pub fn scenario(sets: &[&str]) -> Scenario {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let file = ScenarioFile::builtin(&sets).expect("valid overrides");
    Scenario::build(file, &Origin::builtin()).expect("valid scenario")
}

/// A scenario from TOML text plus overrides.
pub fn scenario_toml(text: &str, sets: &[&str]) -> Scenario {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let file = ScenarioFile::from_toml(text, &sets, &Origin::builtin()).expect("valid scenario");
    Scenario::build(file, &Origin::builtin()).expect("valid scenario")
}

/// A scenario from `toml` whose workload is the connection matrix `cm`.
pub fn with_cm(toml: &str, cm: &str, sets: &[&str]) -> Result<Scenario, String> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static CALLS: AtomicUsize = AtomicUsize::new(0);
    let n = CALLS.fetch_add(1, Ordering::Relaxed);
    let dir = TempDir::new("with-cm", &n.to_string());
    let path = dir.join("w.cm");
    std::fs::write(&path, cm).unwrap();
    let mut all = vec![
        "workload.kind=connection_matrix".to_string(),
        format!("workload.path=\"{}\"", path.display()),
    ];
    all.extend(sets.iter().map(|s| s.to_string()));
    let file =
        ScenarioFile::from_toml(toml, &all, &Origin::builtin()).map_err(|e| e.to_string())?;
    Scenario::build(file, &Origin::builtin()).map_err(|e| e.to_string())
}

pub fn run(sc: Scenario) -> Simulation {
    let mut sim = Simulation::new(sc);
    sim.run();
    sim
}

/// Packets sent = delivered + dropped + still in the fabric, for data and ACKs; no queue ever
/// held more than its buffer; per-flow counters add up to the totals.
pub fn check_conservation(sim: &Simulation) {
    check_conservation_of(sim, "");
}

/// `check_conservation`, naming the case in failure messages.
pub fn check_conservation_of(sim: &Simulation, what: &str) {
    let c = sim.counters();
    let f = sim.in_flight();
    // A trimmed header sent back to its sender leaves the data and joins the control packets.
    assert_eq!(
        c.data_sent,
        c.data_delivered + c.data_dropped + c.returned + f.data,
        "{what} data: {c:?} {f:?}"
    );
    assert_eq!(
        c.acks_sent,
        c.acks_delivered + c.acks_dropped + f.acks,
        "{what} acks: {c:?} {f:?}"
    );
    // Every stored packet sits on some port: none leaked, none freed twice.
    assert_eq!(
        sim.packets_stored(),
        (f.data + f.acks) as usize,
        "{what}: packet store"
    );
    assert!(
        !sim.max_switch_queue().1,
        "{what}: a queue exceeded its buffer"
    );
    let sent: u64 = sim.flows().iter().map(|f| f.data_packets_sent).sum();
    assert_eq!(sent, c.data_sent, "{what}");
    let dropped: u64 = sim.flows().iter().map(|f| f.packets_dropped).sum();
    assert_eq!(dropped, c.data_dropped, "{what}");
}

/// Two servers of two GPUs, rail-optimized (GPUs 0 and 2 on rail 0, 1 and 3 on rail 1), 100 Gb/s
/// NICs and 1 us links, NVLink at 1.6 Tb/s and 25 ns: each path class of a lone 64 KiB flow
/// and when its last byte arrives. 16 packets of 4,158 B: 332,640 ps on a 100G link, 20,790 ps
/// on the NVLink; the first packet crosses every link (serialization and latency), the other
/// 15 follow at the slowest link's serialization.
pub fn rail_2x2_path_classes() -> [(&'static str, u64); 3] {
    let (nic, nv) = (332_640u64, 20_790u64);
    [
        // Same server: over NVLink, not the NIC.
        ("0->1", 2 * (nv + 25_000) + 15 * nv),
        // Same rail, another server: up to the rail leaf and down.
        ("2->0", 2 * (nic + 1_000_000) + 15 * nic),
        // Another rail and server: leaf, spine, leaf.
        ("1->2", 4 * (nic + 1_000_000) + 15 * nic),
    ]
}

/// Bytes each port sent over the run, by the names of the nodes it joins.
pub fn bytes_by_port(sc: Scenario) -> (Simulation, Vec<(String, String, u64)>) {
    let mut sim = Simulation::new(sc);
    let mut rows = lbsim::stats::telemetry::Collected::default();
    sim.run_with(&mut |_| true, Some(&mut rows));
    let mut sent = vec![0u64; rows.port_index.len()];
    for r in &rows.ports {
        sent[r.port as usize] += r.bytes_sent;
    }
    let named = rows
        .port_index
        .iter()
        .map(|p| (p.from.clone(), p.to.clone(), sent[p.port as usize]))
        .collect();
    (sim, named)
}
