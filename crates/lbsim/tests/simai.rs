//! SimAI topology files: the five shapes SimAI's generator writes import with the expected
//! hosts, tiers, switch counts and host ports, and every defect is refused naming its line.
//!
//! `LBSIM_SIMAI_DIR=dir cargo test -p lbsim --test simai -- --ignored` imports every file
//! under `dir` (e.g. the output of SimAI's own generator) and reports each.

use std::path::{Path, PathBuf};

use lbsim::ids::{HostId, SwitchId};
use lbsim::net::simai_topo::{load, parse, size};
use lbsim::net::topology::SCALE_UP;
use lbsim::net::Topology;
use lbsim::ConfigError;

/// The fabrics SimAI's generator writes: GPUs on leaves one per rail (rail-optimized) or in
/// consecutive runs (not), on one leaf or two (dual ToR: a leaf in each of two halves), leaves
/// on every spine, or (dual plane) each half of the leaves on its own half of the spines.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Shape {
    RailSingleTor,
    RailDualTorSinglePlane,
    RailDualTorDualPlane,
    PlainSingleTor,
    PlainDualTor,
}

#[derive(Clone, Copy, Debug)]
struct Spec {
    shape: Shape,
    gpus: u32,
    gpus_per_server: u32,
    nvswitches_per_server: u32,
    /// GPUs per leaf on a plain fabric; GPUs per rail leaf per segment is this over the rails.
    gpus_per_leaf: u32,
    spines: u32,
}

/// What a generated file should import as.
#[derive(Debug)]
struct Expect {
    leaves: u32,
    spines: u32,
    nvswitches: u32,
    /// Network links per GPU.
    planes: u32,
}

impl Spec {
    fn dual(&self) -> bool {
        !matches!(self.shape, Shape::RailSingleTor | Shape::PlainSingleTor)
    }
    fn rail(&self) -> bool {
        matches!(
            self.shape,
            Shape::RailSingleTor | Shape::RailDualTorSinglePlane | Shape::RailDualTorDualPlane
        )
    }
    /// Leaves in one plane, and the leaf (within its plane) of GPU `g`.
    fn plane_leaves(&self) -> u32 {
        if self.rail() {
            // A segment: gpus_per_leaf GPUs on each rail, one leaf per rail.
            let seg = self.gpus_per_server * self.gpus_per_leaf;
            self.gpus.div_ceil(seg) * self.gpus_per_server
        } else {
            self.gpus.div_ceil(self.gpus_per_leaf)
        }
    }
    fn leaf_of(&self, g: u32) -> u32 {
        if self.rail() {
            let seg = self.gpus_per_server * self.gpus_per_leaf;
            g / seg * self.gpus_per_server + g % self.gpus_per_server
        } else {
            g / self.gpus_per_leaf
        }
    }

    /// The file, and what it should import as.
    fn generate(&self) -> (String, Expect) {
        let planes = if self.dual() { 2 } else { 1 };
        let servers = self.gpus / self.gpus_per_server;
        let nvs = servers * self.nvswitches_per_server;
        let per_plane = self.plane_leaves();
        let leaves = per_plane * planes;
        let first_nv = self.gpus;
        let first_leaf = first_nv + nvs;
        let first_spine = first_leaf + leaves;
        let nodes = first_spine + self.spines;
        let dual_plane = self.shape == Shape::RailDualTorDualPlane;
        let spines_per_leaf = if dual_plane {
            self.spines / 2
        } else {
            self.spines
        };
        let links = self.gpus * (self.nvswitches_per_server + planes) + leaves * spines_per_leaf;
        let mut out = format!(
            "{nodes} {} {nvs} {} {links} H100\n",
            self.gpus_per_server,
            leaves + self.spines
        );
        for id in first_nv..nodes {
            out += &format!("{id} ");
        }
        out.push('\n');
        let mut cable = |a: u32, b: u32, rate: &str, lat: &str| {
            out += &format!("{a} {b} {rate} {lat} 0\n");
        };
        for g in 0..self.gpus {
            let server = g / self.gpus_per_server;
            for k in 0..self.nvswitches_per_server {
                let nv = first_nv + server * self.nvswitches_per_server + k;
                cable(g, nv, "2880Gbps", "0.000025ms");
            }
            for p in 0..planes {
                cable(
                    g,
                    first_leaf + p * per_plane + self.leaf_of(g),
                    "400Gbps",
                    "0.0005ms",
                );
            }
        }
        for l in 0..leaves {
            let (lo, n) = if dual_plane {
                (l / per_plane * spines_per_leaf, spines_per_leaf)
            } else {
                (0, self.spines)
            };
            for s in lo..lo + n {
                cable(first_leaf + l, first_spine + s, "400Gbps", "0.0005ms");
            }
        }
        let expect = Expect {
            leaves,
            spines: self.spines,
            nvswitches: nvs,
            planes,
        };
        (out, expect)
    }
}

fn check(t: &Topology, spec: &Spec, e: &Expect) {
    let what = format!("{spec:?}");
    assert_eq!(t.hosts, spec.gpus, "{what}");
    assert_eq!(t.tiers(), 2, "{what}");
    let count = |tier: u8| t.switches.iter().filter(|s| s.tier == tier).count() as u32;
    assert_eq!(
        (count(0), count(1), count(SCALE_UP)),
        (e.leaves, e.spines, e.nvswitches),
        "{what}"
    );
    assert_eq!(t.tier_names()[..2], ["asw", "psw"], "{what}");
    let ports = (e.planes + spec.nvswitches_per_server) as usize;
    for h in 0..spec.gpus {
        assert_eq!(t.host_ports(HostId(h)).len(), ports, "{what} host {h}");
        assert_eq!(
            t.host_net_ports(HostId(h)).len(),
            e.planes as usize,
            "{what} host {h}"
        );
    }
    if spec.nvswitches_per_server > 0 {
        let gps = spec.gpus_per_server;
        assert!(t.same_domain(HostId(0), HostId(gps - 1)), "{what}");
        assert!(!t.same_domain(HostId(0), HostId(gps)), "{what}");
    }
    assert_eq!(t.host_rate.0, 400_000_000_000, "{what}");
    assert!(
        t.describe().contains(&format!("{} GPUs", spec.gpus)),
        "{what}"
    );
}

fn specs() -> Vec<Spec> {
    let shapes = [
        Shape::RailSingleTor,
        Shape::RailDualTorSinglePlane,
        Shape::RailDualTorDualPlane,
        Shape::PlainSingleTor,
        Shape::PlainDualTor,
    ];
    let mut v = Vec::new();
    for shape in shapes {
        for (gpus, gps, nvs, per_leaf, spines) in [
            (32, 8, 1, 2, 4),
            (32, 8, 2, 2, 4),
            (32, 4, 1, 4, 2),
            (16, 8, 0, 16, 2),
            (64, 8, 1, 64, 8),
        ] {
            v.push(Spec {
                shape,
                gpus,
                gpus_per_server: gps,
                nvswitches_per_server: nvs,
                gpus_per_leaf: per_leaf,
                spines,
            });
        }
    }
    v
}

#[test]
fn simai_shapes_import() {
    for spec in specs() {
        let (text, e) = spec.generate();
        let t = parse(&text, "gen.topo")
            .unwrap_or_else(|err| panic!("{spec:?}: {err}\n{}", &text[..text.len().min(2000)]));
        check(&t, &spec, &e);
        assert_eq!(
            size(&text),
            Some((spec.gpus as u128, t.links.len() as u128)),
            "{spec:?}"
        );
    }
}

#[test]
fn simai_rail_leaves_hold_one_rail() {
    // Rail-optimized, 32 GPUs, 8 per server, 2 per rail leaf: leaf r of segment s holds GPUs
    // 16s + r and 16s + 8 + r; the leaves' SwitchIds follow file order.
    let spec = Spec {
        shape: Shape::RailDualTorDualPlane,
        gpus: 32,
        gpus_per_server: 8,
        nvswitches_per_server: 1,
        gpus_per_leaf: 2,
        spines: 4,
    };
    let (text, _) = spec.generate();
    let t = parse(&text, "rail").unwrap();
    let below = |s: u32| -> Vec<u32> {
        (0..t.hosts)
            .filter(|&h| t.is_below(SwitchId(s), HostId(h)))
            .collect()
    };
    assert_eq!(below(0), [0, 8]);
    assert_eq!(below(9), [17, 25]);
    // The second plane's leaves follow, over the same GPUs; each spine has a plane's leaves.
    assert_eq!(below(16), [0, 8]);
    assert_eq!(below(32), (0..32).collect::<Vec<_>>());
    // Dual ToR: the two leaves of a rail form one group.
    assert_eq!(t.leaf_hosts().len(), 16);
    // Each GPU's network ports lead to the same rail leaf in each plane.
    let r = t.host_net_ports(HostId(9));
    let ends: Vec<String> = r.map(|p| format!("{:?}", t.links[p].to)).collect();
    assert_eq!(ends, ["Switch(SwitchId(1))", "Switch(SwitchId(17))"]);
}

#[test]
fn simai_load_reads_a_file_and_names_unreadable_ones() {
    let dir = std::env::temp_dir().join(format!("lbsim-simai-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("t.topo");
    std::fs::write(&p, specs()[0].generate().0).unwrap();
    assert_eq!(load(&p).unwrap().hosts, 32);
    let missing = dir.join("missing.topo");
    match load(&missing) {
        Err(ConfigError::Io { path, .. }) => assert_eq!(path, missing.display().to_string()),
        other => panic!("{:?}", other.map(|t| t.hosts)),
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The table's base file: 4 GPUs, 2 per server, an NVSwitch each (4, 5), dual ToR with leaves
/// 6, 7 (plane A) and 8, 9 (plane B), spines 10 and 11. Line 3 + 3g is GPU g's NVSwitch link,
/// the next two its leaves; lines 15-22 the leaf-spine links (leaf 6 on 15 and 16, ...).
fn base() -> String {
    Spec {
        shape: Shape::PlainDualTor,
        gpus: 4,
        gpus_per_server: 2,
        nvswitches_per_server: 1,
        gpus_per_leaf: 2,
        spines: 2,
    }
    .generate()
    .0
}

const HEAD: &str = "12 2 2 6 20 H100";

/// `base` with line `n` (1-based) replaced (None: removed), and the header's link count
/// adjusted for a removal.
fn edit(n: usize, with: Option<&str>) -> String {
    let mut v: Vec<String> = base().lines().map(str::to_string).collect();
    match with {
        Some(w) => v[n - 1] = w.to_string(),
        None => {
            v.remove(n - 1);
            v[0] = "12 2 2 6 19 H100".into();
        }
    }
    v.join("\n") + "\n"
}

/// `base` with a link line appended (the header's count raised).
fn plus(line: &str) -> String {
    base().replacen(HEAD, "12 2 2 6 21 H100", 1) + line + "\n"
}

/// `base` with the header replaced.
fn head(h: &str) -> String {
    edit(1, Some(h))
}

/// A switch chain `tiers` long above one leaf: GPUs 0 and 1 (one server, no NVSwitch) on
/// switch 2, then 2-3, 3-4, ...
fn chain(tiers: u32) -> String {
    let mut t = format!("{} 2 0 {tiers} {} x\n", 2 + tiers, tiers + 1);
    for i in 2..2 + tiers {
        t += &format!("{i} ");
    }
    t += "\n0 2 1Gbps 1ns 0\n1 2 1Gbps 1ns 0\n";
    for i in 2..1 + tiers {
        t += &format!("{i} {} 1Gbps 1ns 0\n", i + 1);
    }
    t
}

#[test]
fn simai_defects_are_refused_naming_their_line() {
    assert!(parse(&base(), "base").is_ok());
    assert_eq!(parse(&chain(4), "chain").unwrap().tiers(), 4);
    // An extra switch 12 (the header says 7 switches) on leaf 6 and spine 10, or on nothing.
    let spine_spine = base()
        .replacen(HEAD, "13 2 2 7 22 H100", 1)
        .replacen("11 \n", "11 12 \n", 1)
        + "6 12 1Gbps 1ns 0\n10 12 1Gbps 1ns 0\n";
    let lonely = base()
        .replacen(HEAD, "13 2 2 7 20 H100", 1)
        .replacen("11 \n", "11 12 \n", 1);
    // GPU 0 without its two leaf links (lines 4 and 5).
    let no_net = base().replacen(HEAD, "12 2 2 6 18 H100", 1).replacen(
        "0 6 400Gbps 0.0005ms 0\n0 8 400Gbps 0.0005ms 0\n",
        "",
        1,
    );
    let unreachable =
        base()
            .replacen(HEAD, "14 2 2 8 21 H100", 1)
            .replacen("11 \n", "11 12 13 \n", 1)
            + "12 13 1Gbps 1ns 0\n";
    let cases: Vec<(&str, String, usize, &str)> = vec![
        ("empty file", String::new(), 1, "empty file"),
        ("header lacks a field", head("12 2 2 6 20"), 1, "gpu_type"),
        ("header lacks fields", head("12 2"), 1, "nvswitch_count"),
        (
            "non-integer header field",
            head("12 2 2 six 20 H100"),
            1,
            "`six`",
        ),
        (
            "negative header field",
            head("12 -2 2 6 20 H100"),
            1,
            "`-2`",
        ),
        (
            "header extra token",
            head("12 2 2 6 20 H100 x"),
            1,
            "extra token",
        ),
        ("node cap", head("16777216 2 2 6 20 H100"), 1, "2^24"),
        ("link cap", head("12 2 2 6 67108864 H100"), 1, "2^26"),
        (
            "switches exceed nodes",
            head("12 2 6 7 20 H100"),
            1,
            "exceed",
        ),
        ("one GPU", head("12 2 3 8 20 H100"), 1, "at least 2"),
        (
            "no network switch",
            head("12 2 8 0 20 H100"),
            1,
            "switch_count 0",
        ),
        (
            "gpus_per_server 0",
            head("12 0 2 6 20 H100"),
            1,
            "does not divide",
        ),
        (
            "gpus_per_server 3",
            head("12 3 2 6 20 H100"),
            1,
            "does not divide",
        ),
        (
            "NVSwitches per server",
            head("12 2 3 5 20 H100"),
            1,
            "whole number",
        ),
        ("no switch line", HEAD.to_string() + "\n", 2, "switch ids"),
        (
            "too few switch ids",
            edit(2, Some("4 5 6 7 8 9 10")),
            2,
            "7 switch ids",
        ),
        (
            "switch line extra token",
            edit(2, Some("4 5 6 7 8 9 10 11 12")),
            2,
            "extra",
        ),
        (
            "a GPU listed",
            edit(2, Some("3 5 6 7 8 9 10 11")),
            2,
            "3 is out of place",
        ),
        (
            "NVSwitches not first",
            edit(2, Some("6 7 4 5 8 9 10 11")),
            2,
            "NVSwitch ids",
        ),
        (
            "non-integer switch id",
            edit(2, Some("4 5 6 7 8 9 10 z")),
            2,
            "`z`",
        ),
        (
            "id out of range",
            edit(3, Some("0 12 2880Gbps 0.000025ms 0")),
            3,
            "out of range",
        ),
        (
            "non-integer id",
            edit(3, Some("0 x4 2880Gbps 0.000025ms 0")),
            3,
            "`x4`",
        ),
        (
            "self link",
            edit(15, Some("6 6 400Gbps 0.0005ms 0")),
            15,
            "itself",
        ),
        (
            "GPU-GPU link",
            edit(3, Some("0 1 2880Gbps 0.000025ms 0")),
            3,
            "between GPUs",
        ),
        (
            "NVSwitch-switch",
            plus("4 10 400Gbps 0.0005ms 0"),
            23,
            "GPUs only",
        ),
        (
            "NVSwitch-NVSwitch",
            plus("4 5 400Gbps 0.0005ms 0"),
            23,
            "GPUs only",
        ),
        (
            "other server's NVSwitch",
            plus("0 5 2880Gbps 1ns 0"),
            23,
            "own server",
        ),
        (
            "GPU without NVSwitch link",
            edit(3, None),
            3,
            "no link to NVSwitch 4",
        ),
        (
            "GPU without network link",
            no_net,
            3,
            "no link to a network switch",
        ),
        (
            "repeated link",
            plus("10 6 400Gbps 0.0005ms 0"),
            23,
            "second link",
        ),
        (
            "link lacks a field",
            edit(4, Some("0 6 400Gbps 0.0005ms")),
            4,
            "error_rate",
        ),
        (
            "link extra token",
            edit(4, Some("0 6 400Gbps 0.0005ms 0 0")),
            4,
            "extra token",
        ),
        (
            "rate without unit",
            edit(4, Some("0 6 400 0.0005ms 0")),
            4,
            "no unit",
        ),
        (
            "rate unknown unit",
            edit(4, Some("0 6 400GB/s 0.0005ms 0")),
            4,
            "no unit",
        ),
        (
            "rate zero",
            edit(4, Some("0 6 0Gbps 0.0005ms 0")),
            4,
            "not positive",
        ),
        (
            "rate negative",
            edit(4, Some("0 6 -400Gbps 0.0005ms 0")),
            4,
            "not positive",
        ),
        (
            "rate not a number",
            edit(4, Some("0 6 fourGbps 0.0005ms 0")),
            4,
            "not a number",
        ),
        (
            "latency without unit",
            edit(4, Some("0 6 400Gbps 0.0005 0")),
            4,
            "no unit",
        ),
        (
            "latency negative",
            edit(4, Some("0 6 400Gbps -5ns 0")),
            4,
            "negative",
        ),
        (
            "latency infinite",
            edit(4, Some("0 6 400Gbps infms 0")),
            4,
            "not a number",
        ),
        (
            "latency too long",
            edit(4, Some("0 6 400Gbps 2s 0")),
            4,
            "below 1 s",
        ),
        (
            "error rate",
            edit(4, Some("0 6 400Gbps 0.0005ms 0.01")),
            4,
            "flaky",
        ),
        (
            "error rate NaN",
            edit(4, Some("0 6 400Gbps 0.0005ms nan")),
            4,
            "not a number",
        ),
        (
            "more links than declared",
            base() + "6 10 1Gbps 1ns 0\n",
            23,
            "more link lines",
        ),
        (
            "fewer links than declared",
            base().replacen(HEAD, "12 2 2 6 21 H100", 1),
            1,
            "link_count 21",
        ),
        ("switch with no links", lonely, 2, "switch 12 has no links"),
        (
            "unreachable switches",
            unreachable,
            23,
            "switch 12 is not reachable",
        ),
        (
            "leaf to leaf",
            plus("6 7 400Gbps 0.0005ms 0"),
            23,
            "adjacent tiers",
        ),
        ("spine to spine", spine_spine, 24, "adjacent tiers"),
        (
            "GPU on a spine",
            plus("0 10 400Gbps 0.0005ms 0"),
            15,
            "adjacent tiers",
        ),
        ("five tiers", chain(5), 8, "at most 4 tiers"),
    ];
    for (what, text, line, needle) in cases {
        match parse(&text, "bad.topo") {
            Err(ConfigError::Trace { path, line: l, msg }) => {
                assert_eq!(path, "bad.topo");
                assert!(
                    l == line && msg.contains(needle),
                    "{what}: line {l}: {msg} (expected line {line}, `{needle}`)\n{text}"
                );
            }
            Err(e) => panic!("{what}: {e}"),
            Ok(_) => panic!("{what}: accepted\n{text}"),
        }
    }
}

#[test]
fn simai_builder_refusals_name_the_file() {
    // Leaf 4 (GPUs 0, 1) on spines 6 and 7, leaf 5 (GPUs 2, 3) on spine 7 only: spine 6, a
    // top switch, does not reach every GPU.
    let t = "8 2 0 4 7 x\n4 5 6 7\n0 4 1Gbps 1ns 0\n1 4 1Gbps 1ns 0\n2 5 1Gbps 1ns 0\n\
             3 5 1Gbps 1ns 0\n4 6 1Gbps 1ns 0\n4 7 1Gbps 1ns 0\n5 7 1Gbps 1ns 0\n";
    match parse(t, "odd.topo") {
        Err(ConfigError::Trace { path, line, msg }) => {
            assert_eq!((path.as_str(), line), ("odd.topo", 0), "{msg}");
            assert!(msg.contains("cannot build"), "{msg}");
        }
        other => panic!("{:?}", other.map(|t| t.hosts)),
    }
}

/// Every file under `dir`, recursively, sorted.
fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    v.sort();
    for p in v {
        if p.is_dir() {
            files(&p, out);
        } else {
            out.push(p);
        }
    }
}

#[test]
#[ignore = "needs LBSIM_SIMAI_DIR: a directory of SimAI topology files"]
fn simai_generator_files_import() {
    let dir = std::env::var("LBSIM_SIMAI_DIR").expect("LBSIM_SIMAI_DIR");
    let mut all = Vec::new();
    files(Path::new(&dir), &mut all);
    let mut refused = Vec::new();
    for p in &all {
        let start = std::time::Instant::now();
        match load(p) {
            Ok(t) => {
                let text = std::fs::read_to_string(p).unwrap();
                let (hosts, ports) = size(&text).expect("a header");
                assert_eq!((hosts, ports), (t.hosts as u128, t.links.len() as u128));
                let tiers: Vec<u32> = t.tier_summaries().iter().map(|s| s.switches).collect();
                let nvs = t.switches.iter().filter(|s| s.tier == SCALE_UP).count();
                let ports: Vec<usize> = [0, t.hosts - 1]
                    .iter()
                    .map(|&h| t.host_ports(HostId(h)).len())
                    .collect();
                println!(
                    "ok {}: {} GPUs, switches per tier {tiers:?}, {nvs} NVSwitches, {} ports, \
                     host ports {ports:?}, {:?}",
                    p.display(),
                    t.hosts,
                    t.links.len(),
                    start.elapsed()
                );
            }
            Err(e) => {
                println!("REFUSED {e}");
                refused.push(e.to_string());
            }
        }
    }
    println!(
        "{} files, {} imported, {} refused",
        all.len(),
        all.len() - refused.len(),
        refused.len()
    );
    assert!(refused.is_empty(), "{refused:#?}");
}

/// Mangled generator files (tokens swapped for odd ones, lines dropped, repeated or cut) are
/// refused or imported, never a panic. `LBSIM_SIMAI_FUZZ=n` runs n cases instead of 1000.
#[test]
fn simai_mangled_files_never_panic() {
    const ODD: &[&str] = &[
        "0",
        "1",
        "2",
        "3",
        "7",
        "-1",
        "4294967295",
        "4294967296",
        "16777215",
        "67108863",
        "99999999999999999999",
        "",
        "x",
        "1Gbps",
        "0Gbps",
        "1e999Gbps",
        "0.000025ms",
        "-0ms",
        "1e-999s",
        "0",
        "0.5",
        "nan",
        "H100",
        "10",
    ];
    let n: u64 = std::env::var("LBSIM_SIMAI_FUZZ")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000);
    let seeds: Vec<String> = specs()
        .iter()
        .filter(|s| s.gpus <= 32)
        .map(|s| s.generate().0)
        .chain([base(), chain(4)])
        .collect();
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = |m: usize| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x % m as u64) as usize
    };
    let mut imported = 0;
    for _ in 0..n {
        let seed = &seeds[next(seeds.len())];
        let mut lines: Vec<Vec<String>> = seed
            .lines()
            .map(|l| l.split_whitespace().map(str::to_string).collect())
            .collect();
        for _ in 0..1 + next(3) {
            let i = next(lines.len());
            match next(5) {
                0 => {
                    lines.remove(i);
                }
                1 => {
                    let l = lines[next(lines.len())].clone();
                    lines.insert(i, l);
                }
                2 if !lines[i].is_empty() => {
                    let k = next(lines[i].len());
                    lines[i].truncate(k);
                }
                _ => {
                    let l = &mut lines[i];
                    let t = ODD[next(ODD.len())].to_string();
                    if l.is_empty() {
                        l.push(t);
                    } else {
                        let j = next(l.len() + 1);
                        if j == l.len() {
                            l.push(t);
                        } else {
                            l[j] = t;
                        }
                    }
                }
            }
            if lines.is_empty() {
                break;
            }
        }
        let text: String = lines.iter().map(|l| l.join(" ") + "\n").collect();
        let cut = next(text.len() + 1);
        let text = if next(4) == 0 && text.is_char_boundary(cut) {
            &text[..cut]
        } else {
            &text[..]
        };
        let _ = size(text);
        if parse(text, "fuzz").is_ok() {
            imported += 1;
        }
    }
    assert!(imported < n);
}
