//! `lbsim bench`: a fixed suite of end-to-end runs, each in its own child process so that its
//! peak memory can be read from the OS. Reports wall time, events, events/s, packet hops/s, peak
//! RSS and the CCT (so a speed-up that changes answers shows).

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use lbsim::{Origin, Scenario, ScenarioFile};

/// The study's public-simulator setting (scenarios/bench-a2a-128.toml) as overrides.
const BASE: &[&str] = &[
    "topology.link_gbps=100",
    "topology.link_latency_ns=1000",
    "topology.buffer_bytes=417800",
    "packet.header_bytes=82",
    "load_balancing.scheme=host_spray",
];

pub struct Case {
    pub name: &'static str,
    pub sets: &'static [&'static str],
    pub full_only: bool,
}

pub const CASES: &[Case] = &[
    Case {
        name: "perm-128",
        sets: &["topology.k=8", "workload.kind=permutation"],
        full_only: false,
    },
    Case {
        name: "a2a-128",
        sets: &["topology.k=8", "workload.kind=all_to_all"],
        full_only: false,
    },
    Case {
        name: "a2a-1024",
        sets: &[
            "topology.k=16",
            "workload.kind=all_to_all",
            "workload.message_bytes=262144",
        ],
        full_only: false,
    },
    Case {
        name: "perm-8192",
        sets: &["topology.k=32", "workload.kind=permutation"],
        full_only: false,
    },
    Case {
        name: "perm-65536",
        sets: &[
            "topology.k=64",
            "workload.kind=permutation",
            "workload.message_bytes=262144",
        ],
        full_only: true,
    },
];

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct BenchRow {
    pub case: String,
    /// Threads the run used (partitions of the fabric).
    pub threads: u32,
    pub hosts: u32,
    pub flows: u64,
    pub wall_seconds: f64,
    pub events: u64,
    pub events_per_second: f64,
    pub packet_hops: u64,
    pub packet_hops_per_second: f64,
    pub peak_rss_mib: f64,
    pub cct_us: Option<f64>,
    pub cct_over_bound: Option<f64>,
}

fn case(name: &str) -> Result<&'static Case> {
    CASES
        .iter()
        .find(|c| c.name == name)
        .with_context(|| format!("unknown bench case `{name}`"))
}

/// Peak resident set of this process, from /proc (Linux); 0 where unavailable.
fn peak_rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<f64>().ok())
        })
        .map(|kb| kb / 1024.0)
        .unwrap_or(0.0)
}

/// Runs one case in this process and prints its row as JSON (the child side).
pub fn run_child(name: &str, threads: u32) -> Result<()> {
    let c = case(name)?;
    let mut sets: Vec<String> = BASE.iter().chain(c.sets).map(|s| s.to_string()).collect();
    sets.push(format!("threads={threads}"));
    let file = ScenarioFile::builtin(&sets)?;
    let sc = Scenario::build(file, &Origin::builtin())?;
    let out = lbsim::run(sc);
    let s = &out.summary;
    let row = BenchRow {
        case: c.name.into(),
        threads: match &out.parallel {
            Some(lbsim::sim::Parallel::Ran(p)) => p.partitions,
            _ => 1,
        },
        hosts: s.hosts,
        flows: s.flows,
        wall_seconds: s.wall_seconds,
        events: s.events,
        events_per_second: s.events_per_second,
        packet_hops: s.packet_hops,
        packet_hops_per_second: s.packet_hops as f64 / s.wall_seconds.max(1e-9),
        peak_rss_mib: peak_rss_mib(),
        cct_us: s.cct_ps.map(|p| p as f64 / 1e6),
        cct_over_bound: s.cct_over_bound,
    };
    println!("{}", serde_json::to_string(&row)?);
    Ok(())
}

pub fn run_suite(suite: &str, out: Option<&Path>, threads: u32) -> Result<()> {
    let full = match suite {
        "quick" => false,
        "full" => true,
        other => bail!("--suite: expected `quick` or `full`, got `{other}`"),
    };
    let exe = std::env::current_exe().context("cannot find the lbsim executable")?;
    let mut rows = Vec::new();
    println!(
        "{:<11} {:>7} {:>7} {:>9} {:>9} {:>12} {:>11} {:>13} {:>9} {:>11} {:>9}",
        "case",
        "threads",
        "hosts",
        "flows",
        "wall(s)",
        "events",
        "Mevents/s",
        "Mhops/s",
        "RSS(MiB)",
        "CCT(us)",
        "CCT/LB"
    );
    for c in CASES.iter().filter(|c| full || !c.full_only) {
        let o = Command::new(&exe)
            .args(["bench", "--case", c.name, "--threads", &threads.to_string()])
            .output()
            .with_context(|| format!("cannot run bench case {}", c.name))?;
        if !o.status.success() {
            bail!(
                "bench case {} failed: {}",
                c.name,
                String::from_utf8_lossy(&o.stderr)
            );
        }
        let row: BenchRow = serde_json::from_slice(&o.stdout)
            .with_context(|| format!("bench case {} printed no result", c.name))?;
        println!(
            "{:<11} {:>7} {:>7} {:>9} {:>9.2} {:>12} {:>11.2} {:>13.2} {:>9.1} {:>11} {:>9}",
            row.case,
            row.threads,
            row.hosts,
            row.flows,
            row.wall_seconds,
            row.events,
            row.events_per_second / 1e6,
            row.packet_hops_per_second / 1e6,
            row.peak_rss_mib,
            row.cct_us
                .map(|x| format!("{x:.2}"))
                .unwrap_or_else(|| "-".into()),
            row.cct_over_bound
                .map(|x| format!("{x:.4}"))
                .unwrap_or_else(|| "-".into()),
        );
        rows.push(row);
    }
    if let Some(dir) = out {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        let mut w = csv::Writer::from_writer(Vec::new());
        for r in &rows {
            w.serialize(r)?;
        }
        crate::output::write_atomic(&dir.join("bench.csv"), &w.into_inner()?)?;
        let mut md = String::new();
        let _ = writeln!(md, "{}", serde_json::to_string_pretty(&rows)?);
        crate::output::write_atomic(&dir.join("bench.json"), md.as_bytes())?;
    }
    Ok(())
}
