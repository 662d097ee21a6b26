//! `lbsim sweep`: results.csv, determinism, shards and --collect, resume after an interruption,
//! and clear errors on bad input. No Slurm needed (the real-Slurm run is .ci/slurm-test.sh).

mod common;

use common::TempDir;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn lbsim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lbsim"))
        .args(args)
        .output()
        .expect("lbsim runs")
}

fn tmpdir(name: &str) -> TempDir {
    TempDir::new("sweep", name)
}

fn ok(o: &Output) -> String {
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "lbsim failed: {e}");
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn fails_with(o: Output, needles: &[&str]) {
    let e = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(!o.status.success(), "expected failure: {e}");
    assert!(!e.contains("panicked"), "panic on bad input: {e}");
    for n in needles {
        assert!(e.contains(n), "error should mention `{n}`: {e}");
    }
}

const SWEEP: &str = r#"
seeds = 2
[base]
seed = 1
[base.topology]
k = 4
[base.workload]
message_bytes = 65536
[grid]
"load_balancing.scheme" = ["ecmp", "host_spray"]
"topology.buffer_bytes" = [100000, 800000]
"#;

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.to_str().unwrap().to_string()
}

/// results.csv without the wall-clock columns (they differ from run to run).
fn figures(dir: &Path) -> Vec<Vec<String>> {
    let mut rd = csv::Reader::from_path(dir.join("results.csv")).unwrap();
    let h: Vec<String> = rd.headers().unwrap().iter().map(String::from).collect();
    let keep: Vec<usize> = (0..h.len())
        .filter(|&i| h[i] != "wall_seconds" && h[i] != "events_per_second")
        .collect();
    let mut rows = vec![keep.iter().map(|&i| h[i].clone()).collect::<Vec<_>>()];
    for r in rd.records() {
        let r = r.unwrap();
        rows.push(keep.iter().map(|&i| r[i].to_string()).collect());
    }
    rows
}

/// summary.json's top-level numbers as written (`  "key": 1.25,`), by key.
fn json_number_texts(summary: &str) -> Vec<(String, String)> {
    summary
        .lines()
        .filter_map(|l| {
            let (k, v) = l.strip_prefix("  \"")?.split_once("\": ")?;
            let v = v.trim_end_matches(',');
            v.parse::<f64>()
                .is_ok()
                .then(|| (k.to_string(), v.to_string()))
        })
        .collect()
}

#[test]
fn results_csv_numbers_are_summary_json_numbers_digit_for_digit() {
    let d = tmpdir("float-text");
    let f = write(
        &d,
        "s.toml",
        "[base.topology]\nk = 4\n[base.workload]\nmessage_bytes = 65536\n\
         [grid]\n\"load_balancing.scheme\" = [\"ecmp\", \"host_spray\"]\n",
    );
    let out = d.join("out");
    ok(&lbsim(&[
        "sweep",
        &f,
        "--out",
        out.to_str().unwrap(),
        "--quiet",
    ]));
    // A ratio whose nearest-double text a fast float parser reads one unit off (...365).
    let run = out.join("points/p0001/seed-1/summary.json");
    let text = std::fs::read_to_string(&run).unwrap();
    let (_, cob) = json_number_texts(&text)
        .into_iter()
        .find(|(k, _)| k == "cct_over_bound")
        .unwrap();
    let text = text.replacen(
        &format!("\"cct_over_bound\": {cob}"),
        "\"cct_over_bound\": 1.0662604093400363",
        1,
    );
    std::fs::write(&run, text).unwrap();
    ok(&lbsim(&["sweep", "--collect", out.to_str().unwrap()]));
    let mut rd = csv::Reader::from_path(out.join("results.csv")).unwrap();
    let h: Vec<String> = rd.headers().unwrap().iter().map(String::from).collect();
    let rows: Vec<csv::StringRecord> = rd.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), 2);
    let mut compared = 0;
    for (row, point) in rows.iter().zip(["p0000", "p0001"]) {
        let summary =
            std::fs::read_to_string(out.join("points").join(point).join("seed-1/summary.json"))
                .unwrap();
        for (k, v) in json_number_texts(&summary) {
            let i = h.iter().position(|c| *c == k).unwrap();
            assert_eq!(row[i], v, "{point} {k}");
            compared += 1;
        }
    }
    assert!(compared > 20, "{compared}");
    let i = h.iter().position(|c| c == "cct_over_bound").unwrap();
    assert_eq!(&rows[1][i], "1.0662604093400363");
}

#[test]
fn sweep_writes_one_row_per_point_and_seed_deterministically() {
    let d = tmpdir("rows");
    let f = write(&d, "s.toml", SWEEP);
    let a = d.join("a");
    let b = d.join("b");
    ok(&lbsim(&[
        "sweep",
        &f,
        "--out",
        a.to_str().unwrap(),
        "--jobs",
        "1",
    ]));
    ok(&lbsim(&[
        "sweep",
        &f,
        "--out",
        b.to_str().unwrap(),
        "--jobs",
        "2",
    ]));
    let fa = figures(&a);
    assert_eq!(fa, figures(&b), "--jobs must not change results");
    let h = &fa[0];
    for col in [
        "point",
        "load_balancing.scheme",
        "topology.buffer_bytes",
        "run_seed",
        "scheme",
        "cct_over_bound",
        "mean_queue_bytes",
        "flows_completed",
        "failed_links",
    ] {
        assert!(h.contains(&col.to_string()), "missing column {col}: {h:?}");
    }
    assert_eq!(fa.len(), 1 + 4 * 2);
    // Sorted point order, first grid key slowest, seeds base+r.
    assert_eq!(fa[1][..4], ["p0000", "ecmp", "100000", "1"]);
    assert_eq!(fa[2][..4], ["p0000", "ecmp", "100000", "2"]);
    assert_eq!(fa[3][..4], ["p0001", "ecmp", "800000", "1"]);
    assert_eq!(fa[8][..4], ["p0003", "host_spray", "800000", "2"]);
    // Per-collective records are a tidy table of their own, not a JSON cell.
    assert!(!h.contains(&"collectives".to_string()), "{h:?}");
    let mut rd = csv::Reader::from_path(a.join("collectives.csv")).unwrap();
    let ch: Vec<String> = rd.headers().unwrap().iter().map(String::from).collect();
    assert_eq!(
        ch[..6],
        [
            "point",
            "load_balancing.scheme",
            "topology.buffer_bytes",
            "run_seed",
            "job",
            "group"
        ]
    );
    let rows: Vec<csv::StringRecord> = rd.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), 8, "a permutation is one collective per run");
    let cct = |row: &[String], cols: &[String]| {
        row[cols.iter().position(|c| c == "cct_ps").unwrap()].clone()
    };
    for (i, r) in rows.iter().enumerate() {
        let r: Vec<String> = r.iter().map(String::from).collect();
        assert_eq!(r[..4], fa[i + 1][..4]);
        assert_eq!(cct(&r, &ch), cct(&fa[i + 1], h), "row {i}");
    }
    for p in ["p0000/seed-1", "p0003/seed-2"] {
        for f in ["summary.json", "flows.csv", "scenario.toml"] {
            assert!(a.join("points").join(p).join(f).is_file(), "{p}/{f}");
        }
    }
    // A re-run does nothing and says so.
    let out = ok(&lbsim(&["sweep", &f, "--out", a.to_str().unwrap()]));
    assert!(out.contains("0 runs done, 8 already finished"), "{out}");
}

#[test]
fn shards_then_collect_equal_a_local_run() {
    let d = tmpdir("shards");
    let f = write(&d, "s.toml", SWEEP);
    let local = d.join("local");
    let sharded = d.join("sharded");
    ok(&lbsim(&["sweep", &f, "--out", local.to_str().unwrap()]));
    let s = sharded.to_str().unwrap();
    ok(&lbsim(&["sweep", &f, "--out", s, "--shard", "0/3"]));
    fails_with(
        lbsim(&["sweep", "--collect", s]),
        &["not finished", "p0000 seed 2"],
    );
    ok(&lbsim(&["sweep", &f, "--out", s, "--shard", "1/3"]));
    ok(&lbsim(&["sweep", &f, "--out", s, "--shard", "2/3"]));
    let out = ok(&lbsim(&["sweep", "--collect", s]));
    assert!(out.contains("8 runs merged"), "{out}");
    assert_eq!(figures(&local), figures(&sharded));
}

#[test]
fn array_keys_and_unset_work() {
    let d = tmpdir("arrays");
    let f = write(
        &d,
        "s.toml",
        r#"
[base.topology]
k = 4
[base.workload]
message_bytes = 65536
[[base.failures]]
kind = "down"
random_fraction = 0.0
[grid]
"failures.0.random_fraction" = [0.0, 0.5]
"failure.convergence_us" = [5, "unset"]
"#,
    );
    let out = d.join("o");
    ok(&lbsim(&["sweep", &f, "--out", out.to_str().unwrap()]));
    let rows = figures(&out);
    let col = |name: &str| rows[0].iter().position(|c| c == name).unwrap();
    let (frac, g, failed) = (
        col("failures.0.random_fraction"),
        col("failure.convergence_us"),
        col("failed_links"),
    );
    assert_eq!(rows.len(), 5);
    for r in &rows[1..] {
        assert_eq!(r[failed].is_empty(), r[frac] == "0.0", "{r:?}");
        let sc = std::fs::read_to_string(out.join(format!("points/{}/seed-1/scenario.toml", r[0])))
            .unwrap();
        assert_eq!(sc.contains("convergence_us"), r[g] != "unset", "{sc}");
    }
}

#[test]
fn bad_sweeps_fail_clearly() {
    let d = tmpdir("bad");
    let o = d.join("o");
    let o = o.to_str().unwrap();
    let f = write(&d, "unknown.toml", "[grid]\n\"topology.kk\" = [1]\n");
    fails_with(
        lbsim(&["sweep", &f, "--out", o]),
        &["unknown.toml", "topology.kk"],
    );
    let f = write(&d, "empty.toml", "[grid]\n\"topology.k\" = []\n");
    fails_with(
        lbsim(&["sweep", &f, "--out", o]),
        &["topology.k", "empty list"],
    );
    let f = write(&d, "scalar.toml", "[grid]\n\"topology.k\" = 4\n");
    fails_with(lbsim(&["sweep", &f, "--out", o]), &["topology.k", "list"]);
    let f = write(
        &d,
        "badval.toml",
        "[base.topology]\nk = 4\n[grid]\n\"load_balancing.scheme\" = [\"ecmp\", \"magic\"]\n",
    );
    fails_with(
        lbsim(&["sweep", &f, "--out", o]),
        &["p0001", "load_balancing.scheme", "magic"],
    );
    let f = write(&d, "idx.toml", "[grid]\n\"failures.3.kind\" = [\"down\"]\n");
    fails_with(
        lbsim(&["sweep", &f, "--out", o]),
        &["failures", "out of range"],
    );
    let f = write(&d, "ok.toml", SWEEP);
    for bad in ["4/4", "1/0", "x"] {
        fails_with(
            lbsim(&["sweep", &f, "--out", o, "--shard", bad]),
            &["--shard", bad],
        );
    }
    fails_with(
        lbsim(&["sweep", "--collect", d.join("nothing").to_str().unwrap()]),
        &["sweep.json"],
    );
    // Same directory, different sweep: refused, nothing overwritten.
    ok(&lbsim(&["sweep", &f, "--out", o]));
    let f2 = write(&d, "other.toml", &SWEEP.replace("100000", "200000"));
    fails_with(lbsim(&["sweep", &f2, "--out", o]), &["different sweep"]);
    // --slurm without sbatch on PATH.
    let empty = d.join("emptybin");
    std::fs::create_dir_all(&empty).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_lbsim"))
        .args([
            "sweep",
            &f,
            "--out",
            d.join("s").to_str().unwrap(),
            "--slurm",
        ])
        .env("PATH", &empty)
        .output()
        .unwrap();
    fails_with(out, &["sbatch", "not found"]);
    assert!(
        d.join("s/slurm/sweep.sbatch").is_file(),
        "script written for manual submission"
    );
}

/// `lbsim sweep FILE --out DIR --jobs 1` in the background, silent, to be killed.
fn spawn_sweep(file: &str, out: &str) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_lbsim"))
        .args(["sweep", file, "--out", out, "--jobs", "1"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

#[test]
fn interrupted_sweep_resumes_without_redoing_or_corrupting_finished_runs() {
    let d = tmpdir("resume");
    // Runs of a few hundred ms each, one at a time, so the kill lands mid-sweep.
    let f = write(
        &d,
        "s.toml",
        r#"
seeds = 1
[base.topology]
k = 4
[base.workload]
kind = "all_to_all"
message_bytes = 1048576
[grid]
"load_balancing.scheme" = ["host_spray", "switch_rr", "ecmp", "switch_random", "ofan", "host_dr"]
"#,
    );
    let out = d.join("o");
    let o = out.to_str().unwrap();
    let mut child = spawn_sweep(&f, o);
    let first = out.join("points/p0000/seed-1/summary.json");
    let t0 = Instant::now();
    while !first.exists() && t0.elapsed() < Duration::from_secs(120) {
        std::thread::sleep(Duration::from_millis(5));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(first.exists(), "the first run finished before the kill");
    let done: Vec<(PathBuf, Vec<u8>, std::time::SystemTime)> = (0..6)
        .map(|i| out.join(format!("points/p{i:04}/seed-1/summary.json")))
        .filter(|p| p.exists())
        .map(|p| {
            let m = std::fs::metadata(&p).unwrap().modified().unwrap();
            (p.clone(), std::fs::read(&p).unwrap(), m)
        })
        .collect();
    assert!(done.len() < 6, "the kill came too late to test resuming");
    // A crash mid-write leaves a temporary directory: the re-run must discard it.
    let stale = out.join("points/p0005/.seed-1.tmp");
    std::fs::create_dir_all(&stale).unwrap();
    std::fs::write(stale.join("summary.json"), "garbage").unwrap();
    let o2 = ok(&lbsim(&["sweep", &f, "--out", o]));
    assert!(
        o2.contains(&format!("{} already finished", done.len())),
        "{o2}"
    );
    for (p, bytes, m) in &done {
        assert_eq!(
            &std::fs::read(p).unwrap(),
            bytes,
            "{} rewritten",
            p.display()
        );
        assert_eq!(&std::fs::metadata(p).unwrap().modified().unwrap(), m);
    }
    assert!(!stale.exists());
    // The resumed sweep equals an uninterrupted one.
    let clean = d.join("clean");
    ok(&lbsim(&["sweep", &f, "--out", clean.to_str().unwrap()]));
    assert_eq!(figures(&out), figures(&clean));
}

/// A sweep killed (SIGKILL) at 20 moments drawn from a fixed seed, each time restarted, ends
/// with the results.csv of an uninterrupted run: no kill, wherever it lands (mid-run, mid-write,
/// between runs), loses or corrupts a finished run.
#[test]
fn a_sweep_killed_twenty_times_at_random_moments_resumes_to_the_same_results() {
    let d = tmpdir("kill20");
    let f = write(
        &d,
        "s.toml",
        r#"
seeds = 2
[base.topology]
k = 4
[base.workload]
kind = "all_to_all"
message_bytes = 2097152
[grid]
"load_balancing.scheme" = ["host_spray", "ecmp", "ofan", "reps"]
"#,
    );
    let out = d.join("o");
    let o = out.to_str().unwrap();
    // A fixed linear congruential stream: the same 20 moments on every run of the test.
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    let mut kills = 0;
    for _ in 0..20 {
        x = x
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        let after = Duration::from_millis(5 + (x >> 33) % 250);
        let mut child = spawn_sweep(&f, o);
        std::thread::sleep(after);
        if child.try_wait().unwrap().is_none() {
            child.kill().unwrap();
            kills += 1;
        }
        child.wait().unwrap();
    }
    assert!(
        kills >= 10,
        "only {kills} of 20 kills landed before the sweep ended"
    );
    ok(&lbsim(&["sweep", &f, "--out", o]));
    let clean = d.join("clean");
    ok(&lbsim(&["sweep", &f, "--out", clean.to_str().unwrap()]));
    assert_eq!(figures(&out), figures(&clean));
    assert_eq!(figures(&out).len(), 1 + 8);
}

#[test]
fn every_shipped_sweep_file_plans() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../sweeps");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    assert!(files.len() >= 5, "{files:?}");
    for f in files {
        // Planning builds every point: ai-fabrics' 216 points of 1,024 GPUs (a million flows
        // each for the all-to-all) take minutes, so its keys are checked without building.
        if f.ends_with("ai-fabrics.toml") {
            let t: toml::Table = toml::from_str(&std::fs::read_to_string(&f).unwrap()).unwrap();
            let axes = t["axes"].as_table().unwrap();
            let n = |a: &str| axes[a].as_table().unwrap().len();
            assert_eq!((n("fabric"), n("failures"), n("workload")), (9, 2, 2));
            for (name, v) in axes["fabric"].as_table().unwrap() {
                if let Some(file) = v.get("file").and_then(|x| x.as_str()) {
                    assert!(dir.join(file).exists(), "{name}: {file}");
                }
            }
            continue;
        }
        lbsim_cli::sweep::Plan::load(&f, false)
            .unwrap_or_else(|e| panic!("{}: {e:#}", f.display()));
    }
}

#[test]
fn a_sweep_over_training_and_a_collective_keeps_the_comm_column() {
    let d = tmpdir("training");
    let f = write(
        &d,
        "s.toml",
        r#"
seeds = 1
[base]
seed = 1
[base.topology]
k = 4
[grid]
"workload.kind" = ["ring_allreduce", "training"]
"#,
    );
    let a = d.join("a");
    ok(&lbsim(&["sweep", &f, "--out", a.to_str().unwrap()]));
    let mut rd = csv::Reader::from_path(a.join("collectives.csv")).unwrap();
    let h: Vec<String> = rd.headers().unwrap().iter().map(String::from).collect();
    let (kind, comm) = (
        h.iter().position(|c| c == "kind").unwrap(),
        h.iter().position(|c| c == "comm").unwrap(),
    );
    assert_eq!(comm, kind + 1, "{h:?}");
    let rows: Vec<csv::StringRecord> = rd.records().map(Result::unwrap).collect();
    // The ring's one row without a class, the training run's tp and dp collectives with.
    assert_eq!(rows[0][1].to_string(), "ring_allreduce");
    assert_eq!(&rows[0][comm], "");
    assert_eq!(&rows[0][kind], "ring_allreduce");
    assert!(rows[1..].iter().all(|r| ["tp", "dp"].contains(&&r[comm])));
    assert!(rows.iter().all(|r| r.len() == h.len()));
}
