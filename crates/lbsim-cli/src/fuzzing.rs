//! One input of each fuzz target: what the coverage-guided harnesses in `fuzz/` call, and what
//! `tests/fuzz_corpus.rs` replays from the committed corpora. Each takes raw bytes, hands them
//! to a parser as a user's file would reach it, and returns normally whatever the input (an
//! error is an answer; a panic, a hang or an allocation past the memory estimate is a defect).
//!
//! Inputs that name other files (`path`, `base_file`, `*_topo`) are left unread: a fuzzer must
//! not wander the file system (`/dev/zero` would never end), and each of those formats has a
//! target of its own.

use std::path::Path;

use lbsim::net::config::TopologyConfig;
use lbsim::{Origin, Scenario, ScenarioFile};

/// The most a fuzzed scenario may be estimated to need before it is built.
const MAX_BYTES: u128 = 64 << 20;

/// One input of a target.
pub type Target = fn(&[u8]);

/// The fuzz targets, by name.
pub const TARGETS: &[(&str, Target)] = &[
    ("scenario", scenario),
    ("sweep", sweep),
    ("cm", cm),
    ("topo", topo),
    ("chakra", chakra),
    ("simai", simai),
];

fn text(data: &[u8]) -> Option<&str> {
    std::str::from_utf8(data).ok()
}

/// Whether the input names a file to read.
fn names_files(t: &str) -> bool {
    t.contains("path") || t.contains("_topo") || t.contains("base_file")
}

/// Builds `file` if its estimate is known and small.
fn build_small(file: ScenarioFile, origin: &Origin) {
    let small = lbsim::memory::estimate(&file.traffic()).is_some_and(|e| e.bytes <= MAX_BYTES);
    if small {
        let _ = Scenario::build(file, origin);
    }
}

/// A scenario file, then after a line `---` one `--set key=value` per line.
pub fn scenario(data: &[u8]) {
    let Some(t) = text(data) else { return };
    if names_files(t) {
        return;
    }
    let (toml, sets) = t.split_once("\n---\n").unwrap_or((t, ""));
    let sets: Vec<String> = sets.lines().map(str::to_string).collect();
    let origin = Origin::builtin();
    if let Ok(file) = ScenarioFile::from_toml(toml, &sets, &origin) {
        build_small(file, &origin);
    }
}

/// A sweep file (every point's scenario is built and checked against the memory estimate).
pub fn sweep(data: &[u8]) {
    let Some(t) = text(data) else { return };
    if names_files(t) {
        return;
    }
    let _ = crate::sweep::Plan::from_text(t, Path::new("fuzz.sweep.toml"), false);
}

/// An htsim connection matrix (either dialect) for a 128-host fabric.
pub fn cm(data: &[u8]) {
    let Some(t) = text(data) else { return };
    let _ = lbsim::workload::connection_matrix::parse(t, "fuzz.cm", 128, 4096);
}

/// An htsim `.topo` tier file, then the fabric it describes if small.
pub fn topo(data: &[u8]) {
    let Some(t) = text(data) else { return };
    let mut cfg = TopologyConfig::default();
    if lbsim::net::htsim_topo::apply(t, "fuzz.topo", &mut cfg).is_ok() {
        let small = cfg.size().is_some_and(|s| s.ports <= 1 << 16);
        if small {
            let _ = cfg.build(&Origin::builtin());
        }
    }
}

/// A Chakra execution trace (framed protobuf), then its replay as one rank's trace on 4 hosts.
pub fn chakra(data: &[u8]) {
    use lbsim::workload::chakra::{decode, replay_nodes};
    let Ok((_, nodes)) = decode(data, "fuzz.et") else {
        return;
    };
    if nodes.len() > 4096 {
        return;
    }
    let opt = lbsim::workload::chakra::Options {
        ranks: None,
        skip_unknown: true,
        algorithms: Default::default(),
        payload_bytes: 4096,
        comm_groups: None,
    };
    let traces = vec![("fuzz.et".to_string(), nodes)];
    let _ = replay_nodes(&traces, &[0, 1, 2, 3], lbsim::time::SimTime::ZERO, &opt);
}

/// A SimAI topology file.
pub fn simai(data: &[u8]) {
    let Some(t) = text(data) else { return };
    let _ = lbsim::net::simai_topo::parse(t, "fuzz.simai");
}
