//! The library's layers, checked: every module names only modules of lower layers (or its own),
//! so the import graph has no cycle. The order is the one ARCHITECTURE.md draws.

use std::collections::BTreeMap;
use std::path::Path;

/// Lowest first. A module may use any module of a lower layer, never one of its own layer or above.
const LAYERS: &[&[&str]] = &[
    &["time", "ids", "rng", "config"],
    &["engine"],
    &["net"],
    &["lb"],
    &["workload"],
    &["transport"],
    &["failure", "stats"],
    &["memory"],
    &["scenario"],
    &["sim"],
    &["experiments"],
];

fn layer_of(m: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&m))
}

/// The top-level module a source file belongs to (`lb/reps.rs` -> `lb`).
fn module_of(rel: &Path) -> String {
    let first = rel
        .components()
        .next()
        .unwrap()
        .as_os_str()
        .to_string_lossy();
    first.trim_end_matches(".rs").to_string()
}

/// `crate::x` references in code (comments and doc comments left out).
fn uses(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines() {
        let code = match line.find("//") {
            Some(i) => &line[..i],
            None => line,
        };
        let mut rest = code;
        while let Some(i) = rest.find("crate::") {
            let tail = &rest[i + 7..];
            let name: String = tail
                .chars()
                .take_while(|c| c.is_ascii_lowercase() || *c == '_' || c.is_ascii_digit())
                .collect();
            if !name.is_empty() {
                out.push(name);
            }
            rest = tail;
        }
    }
    out
}

fn walk(dir: &Path, root: &Path, out: &mut Vec<(String, String)>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            walk(&p, root, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            let rel = p.strip_prefix(root).unwrap().to_path_buf();
            out.push((
                module_of(&rel),
                std::fs::read_to_string(&p).unwrap() + &format!("\n// file {}", rel.display()),
            ));
        }
    }
}

#[test]
fn modules_only_use_lower_layers() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    walk(&root, &root, &mut files);
    let mut bad: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (module, text) in &files {
        if module == "lib" {
            continue;
        }
        let Some(own) = layer_of(module) else {
            panic!("module `{module}` is in no layer: add it to LAYERS and ARCHITECTURE.md");
        };
        for dep in uses(text) {
            if dep == *module {
                continue;
            }
            // The crate root's `run` builds and runs a scenario: it sits with `scenario`.
            let dep_layer = match dep.as_str() {
                "run" | "run_observed" => layer_of("scenario"),
                d => layer_of(d),
            };
            let ok = dep_layer.is_some_and(|l| l < own);
            if !ok {
                bad.entry(module.clone()).or_default().push(dep);
            }
        }
    }
    for v in bad.values_mut() {
        v.sort();
        v.dedup();
    }
    assert!(
        bad.is_empty(),
        "modules using their own layer or a higher one: {bad:?}"
    );
}

#[test]
fn the_simulation_never_reads_the_raw_scenario_file() {
    // The scenario is resolved once (Scenario::settings, every default applied); a `.file`
    // read in the simulation would be a second place that applies defaults.
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/sim");
    let mut reads = Vec::new();
    let mut files = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        files += 1;
        let text = std::fs::read_to_string(&p).unwrap();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        for (i, l) in text.lines().enumerate() {
            let code = l.split("//").next().unwrap_or("");
            if code.contains(".file.") || code.contains(".file,") || code.contains("&sc.file") {
                reads.push(format!("{name}:{}: {}", i + 1, l.trim()));
            }
        }
    }
    assert!(
        files >= 4,
        "the simulation's files were not found in {}",
        dir.display()
    );
    assert!(
        reads.is_empty(),
        "the simulation reads the raw file: {reads:?}"
    );
}

/// No layer above `net` does fabric arithmetic: the fabric's numbering (switch port bases, hosts
/// per leaf, k/2, tiers matched by name) lives in `net::topology` and its generators, and
/// everything else asks the `Topology` (a host's leaf and groups, routes, cuts, path counts,
/// partitions). The compiler enforces most of it (routing's data is private to `net`); this
/// test catches the arithmetic that could still be redone from public fields, in the library
/// and in the CLI and Python crates, outside tests.
#[test]
fn only_net_knows_the_fabrics_numbering() {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let roots = [
        manifest.join("src"),
        manifest.join("../lbsim-cli/src"),
        manifest.join("../lbsim-py/src"),
    ];
    const FORBIDDEN: &[&str] = &[
        "port_base",
        "hosts_per_leaf",
        "hosts_per_tor",
        "k / 2",
        "k * k",
        "Shape::",
        "Tier::",
        ".shape",
    ];
    let mut bad = Vec::new();
    let mut files = 0;
    for root in &roots {
        let mut all = Vec::new();
        walk(root, root, &mut all);
        for (module, text) in all {
            if module == "net" && root.ends_with("src") && root.starts_with(manifest) {
                continue;
            }
            files += 1;
            for (i, line) in text.lines().enumerate() {
                // Tests may build their expectations by hand; they come last in a file.
                if line.trim_start().starts_with("#[cfg(test)]") {
                    break;
                }
                let code = line.split("//").next().unwrap_or("");
                // String literals (keys in messages, help text) are not arithmetic.
                let code: String = code.split('"').step_by(2).collect();
                for f in FORBIDDEN {
                    if code.contains(f) {
                        let file = text
                            .lines()
                            .last()
                            .unwrap_or("")
                            .trim_start_matches("// file ");
                        bad.push(format!("{file}:{}: `{f}`: {}", i + 1, line.trim()));
                    }
                }
            }
        }
    }
    assert!(files > 50, "sources not found");
    assert!(
        bad.is_empty(),
        "fabric arithmetic outside net:\n{}",
        bad.join("\n")
    );
}
