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
