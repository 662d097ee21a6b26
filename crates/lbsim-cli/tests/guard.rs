//! Guard rails: memory refusal, --out checks, signals and exit codes, progress, sweep locks,
//! and `show` / `list` completeness.

mod common;

use common::TempDir;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn cmd() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_lbsim"));
    c.env_remove("LBSIM_PROGRESS_SECONDS");
    c
}

fn lbsim(args: &[&str]) -> Output {
    cmd().args(args).output().expect("lbsim runs")
}

fn tmpdir(name: &str) -> TempDir {
    TempDir::new("guard", name)
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn fails_with(o: Output, needles: &[&str]) {
    let e = stderr(&o);
    assert!(!o.status.success(), "expected failure, got success: {e}");
    assert!(!e.contains("panicked"), "panic on bad input: {e}");
    assert!(!e.contains("memory allocation"), "allocation failure: {e}");
    for n in needles {
        assert!(e.contains(n), "error should mention `{n}`: {e}");
    }
}

fn repo_file(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(rel)
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.to_str().unwrap().to_string()
}

const HUGE: [&str; 6] = [
    "--set",
    "topology.k=64",
    "--set",
    "workload.kind=all_to_all",
    "--set",
    "workload.message_bytes=4096",
];

#[test]
fn run_too_large_for_memory_is_refused_with_the_estimate() {
    for sub in [
        &["run"][..],
        &["compare", "--schemes", "ecmp"],
        &["queue-scaling", "--schemes", "ecmp", "--packets", "1"],
    ] {
        let args: Vec<&str> = sub.iter().chain(HUGE.iter()).copied().collect();
        let t0 = Instant::now();
        fails_with(
            lbsim(&args),
            &[
                "estimated",
                "TiB",
                "4294901760 flows",
                "available",
                "total",
                "--force",
            ],
        );
        assert!(t0.elapsed() < Duration::from_secs(20), "refused late");
    }
    let d = tmpdir("mem-sweep");
    let f = write(
        &d,
        "big.toml",
        "[base.workload]\nkind = \"all_to_all\"\nmessage_bytes = 4096\n[grid]\n\"topology.k\" = [4, 64]\n",
    );
    let out = d.join("out");
    fails_with(
        lbsim(&["sweep", &f, "--out", out.to_str().unwrap()]),
        &["p0001", "topology.k=64", "estimated", "--force"],
    );
}

#[test]
fn out_that_is_a_file_is_refused_before_running() {
    let d = tmpdir("out-file");
    let file = write(&d, "taken", "x");
    let sweep = write(
        &d,
        "s.toml",
        "[base.topology]\nk = 4\n[grid]\n\"load_balancing.scheme\" = [\"ecmp\"]\n",
    );
    let cases: Vec<Vec<&str>> = vec![
        vec!["run", "--set", "topology.k=4", "--out", &file],
        vec!["compare", "--set", "topology.k=4", "--out", &file],
        vec![
            "queue-scaling",
            "--set",
            "topology.k=4",
            "--schemes",
            "ecmp",
            "--packets",
            "1",
            "--out",
            &file,
        ],
        vec!["sweep", &sweep, "--out", &file],
        vec!["paper", "--out", &file],
    ];
    for c in cases {
        let t0 = Instant::now();
        let o = lbsim(&c);
        fails_with(o, &[&file, "not a directory"]);
        // Refused before simulating: no run's output printed.
        assert!(t0.elapsed() < Duration::from_secs(5), "{c:?} checked late");
    }
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "x");
}

/// Starts a several-second run, signals it after a moment, and checks the partial results.
fn interrupted_run(signal: &str, code: i32) {
    let d = tmpdir(&format!("sig-{signal}"));
    let out = d.join("out");
    let child = cmd()
        .args([
            "run",
            repo_file("scenarios/bench-a2a-128.toml").to_str().unwrap(),
        ])
        .args(["--out", out.to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    let t0 = Instant::now();
    let k = Command::new("kill")
        .args([&format!("-{signal}"), &child.id().to_string()])
        .status()
        .unwrap();
    assert!(k.success());
    let o = child.wait_with_output().unwrap();
    assert!(t0.elapsed() < Duration::from_secs(5), "slow to stop");
    assert_eq!(o.status.code(), Some(code), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&format!("interrupted by SIG{signal}")),
        "{}",
        stderr(&o)
    );
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(s["interrupted"], true);
    let (done, flows) = (
        s["flows_completed"].as_u64().unwrap(),
        s["flows"].as_u64().unwrap(),
    );
    assert!(
        done < flows,
        "{done}/{flows}: the run ended before the signal"
    );
    let csv = std::fs::read_to_string(out.join("flows.csv")).unwrap();
    let rows: Vec<&str> = csv.lines().skip(1).collect();
    assert_eq!(rows.len() as u64, flows, "every flow has a row");
    // Unfinished flows are the ones with an empty finish_ps.
    let unfinished = rows
        .iter()
        .filter(|r| r.split(',').nth(5) == Some(""))
        .count();
    assert_eq!(unfinished as u64, flows - done);
    assert!(!std::fs::read_dir(&out).unwrap().any(|e| e
        .unwrap()
        .file_name()
        .to_string_lossy()
        .contains(".tmp")));
}

#[test]
fn sigint_writes_partial_results_and_exits_130() {
    interrupted_run("INT", 130);
}

#[test]
fn sigterm_writes_partial_results_and_exits_143() {
    interrupted_run("TERM", 143);
}

#[test]
fn unfinished_flows_exit_3_unless_end_time_is_set() {
    let d = tmpdir("unfinished");
    let f = write(
        &d,
        "fail.toml",
        "[topology]\nk = 4\n[workload]\nmessage_bytes = 65536\n[[failures]]\nkind = \"down\"\nlink = \"tor:0-agg:0\"\n",
    );
    let o = lbsim(&["run", &f, "--out", d.join("a").to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(stderr(&o).contains("unfinished"), "{}", stderr(&o));
    assert!(d.join("a/flows.csv").is_file() && d.join("a/summary.json").is_file());
    let o = lbsim(&["run", &f, "--set", "end_time_us=200"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

#[test]
fn progress_lines_in_logs_for_runs_and_sweeps() {
    let run = [
        "run",
        "--set",
        "topology.k=8",
        "--set",
        "workload.kind=all_to_all",
        "--set",
        "workload.message_bytes=65536",
    ];
    let o = cmd()
        .env("LBSIM_PROGRESS_SECONDS", "0.1")
        .args(run)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let e = stderr(&o);
    let line = e
        .lines()
        .find(|l| l.starts_with("progress: "))
        .unwrap_or_else(|| panic!("{e}"));
    for n in ["simulated", "/16256 flows done", "M events/s", "ETA"] {
        assert!(line.contains(n), "{line}");
    }
    let mut quiet = run.to_vec();
    quiet.push("--quiet");
    let o = cmd()
        .env("LBSIM_PROGRESS_SECONDS", "0.1")
        .args(&quiet)
        .output()
        .unwrap();
    assert!(!stderr(&o).contains("progress"), "{}", stderr(&o));
    let d = tmpdir("progress-sweep");
    let f = write(
        &d,
        "s.toml",
        "[base.topology]\nk = 8\n[base.workload]\nkind = \"all_to_all\"\nmessage_bytes = 32768\n[grid]\n\"load_balancing.scheme\" = [\"ecmp\", \"host_spray\"]\n",
    );
    let o = cmd()
        .env("LBSIM_PROGRESS_SECONDS", "0.1")
        .args([
            "sweep",
            &f,
            "--jobs",
            "1",
            "--out",
            d.join("out").to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.lines().any(|l| l.starts_with("progress: ")
            && l.contains("/2 runs done")
            && l.contains("ETA")),
        "{e}"
    );
}

#[test]
fn jobs_zero_and_swapped_files_name_the_real_cause() {
    for c in [
        &["compare", "--jobs", "0"][..],
        &["queue-scaling", "--jobs", "0"],
        &["paper", "--jobs", "0"],
        &["sweep", "x.toml", "--jobs", "0"],
    ] {
        fails_with(lbsim(c), &["--jobs", "at least 1"]);
    }
    let sweep = repo_file("sweeps/example.toml");
    let sweep = sweep.to_str().unwrap();
    for sub in ["run", "compare", "show"] {
        fails_with(
            lbsim(&[sub, sweep]),
            &[
                "example.toml",
                "looks like a sweep file",
                "[grid]",
                "lbsim sweep",
            ],
        );
    }
    let sc = repo_file("scenarios/default.toml");
    fails_with(
        lbsim(&["sweep", sc.to_str().unwrap()]),
        &[
            "default.toml",
            "looks like a scenario file",
            "[topology]",
            "lbsim run",
        ],
    );
}

#[test]
fn second_sweep_into_one_directory_is_refused_until_the_first_ends() {
    let d = tmpdir("lock");
    let f = write(
        &d,
        "s.toml",
        "[base.topology]\nk = 8\n[base.workload]\nkind = \"all_to_all\"\nmessage_bytes = 65536\n[grid]\n\"load_balancing.scheme\" = [\"ecmp\", \"host_spray\"]\n",
    );
    let out = d.join("out");
    let o = out.to_str().unwrap();
    let mut first = cmd()
        .args(["sweep", &f, "--jobs", "1", "--quiet", "--out", o])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // sweep.json is written once the lock is held.
    let t0 = Instant::now();
    while !out.join("sweep.json").exists() {
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "the first sweep never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    fails_with(
        lbsim(&["sweep", &f, "--out", o]),
        &[o, "in use by another lbsim sweep"],
    );
    fails_with(
        lbsim(&["sweep", &f, "--shard", "0/2", "--out", o]),
        &[o, "in use by another lbsim sweep"],
    );
    assert!(first.wait().unwrap().success());
    // Released when the first ended: the same sweep now finds everything done.
    let o2 = lbsim(&["sweep", &f, "--out", o]);
    assert!(o2.status.success(), "{}", stderr(&o2));
    assert!(
        stdout(&o2).contains("2 already finished"),
        "{}",
        stdout(&o2)
    );
}

#[test]
fn show_prints_every_default_and_reads_back_the_same() {
    let d = tmpdir("show");
    for sets in [
        &[][..],
        &["--set", "load_balancing.scheme=plb"],
        &["--set", "workload.kind=all_to_all"],
        &[
            "--set",
            "load_balancing.scheme=reps",
            "--set",
            "transport.loss_recovery=erasure",
        ],
        &[
            "--set",
            "transport.loss_recovery=trim",
            "--set",
            "transport.cc=eqds",
        ],
        &[
            "--set",
            "transport.cc=dcqcn",
            "--set",
            "topology.ecn_kmax_bytes=400000",
        ],
        &[
            "--set",
            "transport.cc=dcqcn",
            "--set",
            "topology.ecn_kmax_bytes=400000",
            "--set",
            "topology.pfc=true",
            "--set",
            "transport.loss_recovery=go_back_n",
        ],
    ] {
        let mut args = vec!["show"];
        args.extend_from_slice(sets);
        let a = lbsim(&args);
        assert!(a.status.success(), "{}", stderr(&a));
        let text = stdout(&a);
        for needle in [
            "rto_us = 100.0",
            "ecn_threshold_bytes = 160000",
            "[transport.dctcp]",
            "[transport.dcqcn]",
            "[transport.swift]",
            "[transport.mswift]",
            "[transport.nscc]",
            "[transport.eqds]",
            "subflows = 4",
            "plb_rehash_rounds = 12",
            "plb_idle_rehash_rounds = 3",
            "plb_congested_fraction = 0.5",
            "plb_suspend_us = 60000000.0",
            "reps_freeze_us = 10000.0",
            "reps_explore_packets = 16",
            "ar_refresh_ns = 0.0",
            "flowlet_gap_us = 10.0",
            "erasure_extra_packets = 25",
            "trim_header_bytes = 64",
            "return_to_sender = true",
            "control_buffer_bytes = 800000",
            "pfc_xoff_bytes = 691684",
            "pfc_xon_bytes = 683368",
            "ecn_pmax = 1.0",
        ] {
            assert!(
                text.contains(needle),
                "{sets:?}: show lacks {needle}:\n{text}"
            );
        }
        // Printed back: the same text, and the same run.
        let f = write(&d, "shown.toml", &text);
        let b = lbsim(&["show", &f]);
        assert_eq!(stdout(&b), text, "{sets:?}: {}", stderr(&b));
        let small = [
            "--set",
            "topology.k=4",
            "--set",
            "workload.message_bytes=65536",
        ];
        let strip = |o: Output| -> String {
            assert!(o.status.success(), "{}", stderr(&o));
            let s = stdout(&o);
            s[..s.find(" events in ").unwrap()].to_string()
        };
        let mut direct = vec!["run", "--quiet"];
        direct.extend_from_slice(sets);
        direct.extend_from_slice(&small);
        let mut reread = vec!["run", "--quiet", &f];
        reread.extend_from_slice(&small);
        assert_eq!(strip(lbsim(&direct)), strip(lbsim(&reread)), "{sets:?}");
    }
}

#[test]
fn list_names_every_workload_cc_and_loss_recovery() {
    let o = lbsim(&["list"]);
    assert!(o.status.success());
    let s = stdout(&o);
    for n in [
        "permutation",
        "all_to_all",
        "incast",
        "outcast",
        "connection_matrix",
        "ring_allreduce",
        "ring_reduce_scatter",
        "ring_allgather",
        "halving_doubling_allreduce",
        "fsdp",
        "constant",
        "dctcp",
        "dcqcn",
        "swift",
        "mswift",
        "nscc",
        "eqds",
        "ideal_erasure",
        "erasure",
        "sack",
        "go_back_n",
        "trim",
        "ofan",
        "flowlet_ar",
        "fat_tree",
        "leaf_spine",
    ] {
        assert!(
            s.split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .any(|w| w == n),
            "list lacks {n}:\n{s}"
        );
    }
}
