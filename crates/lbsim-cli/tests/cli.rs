//! End-to-end tests of the `lbsim` binary: outputs, determinism, and errors on bad input.

mod common;

use common::TempDir;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn lbsim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lbsim"))
        .args(args)
        .output()
        .expect("lbsim runs")
}

fn tmpdir(name: &str) -> TempDir {
    TempDir::new("cli", name)
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Bad input: non-zero exit, a message containing every `needle`, and no panic.
fn fails_with(o: Output, needles: &[&str]) {
    let e = stderr(&o);
    assert!(!o.status.success(), "expected failure, got success: {e}");
    assert!(!e.contains("panicked"), "panic on bad input: {e}");
    for n in needles {
        assert!(e.contains(n), "error should mention `{n}`: {e}");
    }
}

fn repo_file(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(rel)
}

#[test]
fn run_writes_summary_and_flows_deterministically() {
    let d = tmpdir("run");
    let mut outs = Vec::new();
    for rep in ["a", "b"] {
        let out = d.join(rep);
        let o = lbsim(&[
            "run",
            "--set",
            "topology.k=4",
            "--set",
            "load_balancing.scheme=host_spray",
            "--out",
            out.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        let summary: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap())
                .unwrap();
        for key in [
            "scheme",
            "workload",
            "hosts",
            "flows",
            "flows_completed",
            "cct_ps",
            "lower_bound_ps",
            "cct_over_bound",
            "mean_fct_ps",
            "p99_fct_ps",
            "data_packets_sent",
            "packets_dropped",
            "max_queue_bytes",
            "mean_queue_bytes",
            "events",
            "wall_seconds",
            "events_per_second",
            "seed",
        ] {
            assert!(summary.get(key).is_some(), "summary.json lacks {key}");
        }
        assert_eq!(summary["hosts"], 16);
        let flows = std::fs::read_to_string(out.join("flows.csv")).unwrap();
        assert!(flows.starts_with(
            "flow_id,src,dst,size_bytes,start_ps,finish_ps,fct_ps,data_packets_sent,packets_dropped,retransmissions,timeouts\n"
        ));
        assert_eq!(flows.lines().count(), 17);
        let mut s = summary.as_object().unwrap().clone();
        s.remove("wall_seconds");
        s.remove("events_per_second");
        outs.push((serde_json::to_string(&s).unwrap(), flows));
    }
    assert_eq!(outs[0], outs[1]);
}

#[test]
fn jobs_scenarios_are_labelled_by_their_jobs_not_the_default_workload() {
    // Two ring all-reduces side by side: nothing of the default [workload] (a permutation) runs.
    let d = tmpdir("jobs-label");
    let scn = d.join("jobs.toml");
    std::fs::write(
        &scn,
        "[topology]\nk = 4\n\
         [[jobs]]\nkind = \"ring_allreduce\"\ngroup_size = 8\nmessage_bytes = 64000\n\
         [[jobs]]\nkind = \"ring_allreduce\"\ngroup_size = 8\nfirst_host = 8\nmessage_bytes = 64000\n",
    )
    .unwrap();
    let out = d.join("out");
    let o = lbsim(&[
        "run",
        scn.to_str().unwrap(),
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["workload"], "ring_allreduce+ring_allreduce");
    let line = String::from_utf8_lossy(&o.stdout);
    assert!(
        line.contains("ring_allreduce+ring_allreduce") && !line.contains("permutation"),
        "{line}"
    );
}

#[test]
fn compare_prints_a_row_per_scheme_and_writes_per_scheme_dirs() {
    let d = tmpdir("compare");
    let o = lbsim(&[
        "compare",
        "--set",
        "topology.k=4",
        "--set",
        "workload.message_bytes=65536",
        "--schemes",
        "ecmp,host_spray",
        "--out",
        d.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let table = String::from_utf8_lossy(&o.stdout);
    assert!(table.contains("CCT/bound"));
    assert!(table.lines().any(|l| l.starts_with("ecmp ")));
    assert!(table.lines().any(|l| l.starts_with("host_spray ")));
    assert!(d.join("ecmp/summary.json").exists());
    assert!(d.join("host_spray/flows.csv").exists());
}

#[test]
fn list_names_schemes_workloads_topologies() {
    let o = lbsim(&["list"]);
    assert!(o.status.success());
    let s = String::from_utf8_lossy(&o.stdout);
    for n in [
        "ecmp",
        "host_spray",
        "switch_rr",
        "permutation",
        "all_to_all",
        "connection_matrix",
        "fat_tree",
        "leaf_spine",
    ] {
        assert!(s.contains(n), "list lacks {n}");
    }
    // Every registered scheme gets a line: name, who decides, granularity, summary.
    for sc in lbsim::lb::SCHEMES {
        let side = match sc.side {
            lbsim::lb::Side::Host => "host",
            lbsim::lb::Side::Switch => "switch",
        };
        assert!(
            s.lines().any(|l| {
                let w: Vec<&str> = l.split_whitespace().collect();
                w.len() > 3 && w[..3] == [sc.name, side, sc.granularity]
            }),
            "list lacks {}:\n{s}",
            sc.name
        );
    }
    assert!(s.contains("switch_p2c         switch packet   power of two choices"));
}

#[test]
fn shipped_scenarios_are_valid_and_default_matches_builtin() {
    for entry in std::fs::read_dir(repo_file("scenarios")).unwrap() {
        let p = entry.unwrap().path();
        if p.extension().is_some_and(|e| e == "toml") {
            let o = lbsim(&["show", p.to_str().unwrap()]);
            assert!(o.status.success(), "{}: {}", p.display(), stderr(&o));
        }
    }
    let a = lbsim(&[
        "show",
        repo_file("scenarios/default.toml").to_str().unwrap(),
    ]);
    let b = lbsim(&["show"]);
    assert_eq!(
        a.stdout, b.stdout,
        "scenarios/default.toml drifted from the built-in default"
    );
}

#[test]
fn moe_runs_give_the_same_flows_csv_per_seed_and_show_reads_back() {
    let d = tmpdir("moe");
    let sets = [
        "topology.k=4",
        "workload.kind=moe",
        "workload.moe_tokens_per_gpu=128",
        "workload.moe_popularity=\"zipf\"",
        "workload.moe_zipf_exponent=1.2",
        "workload.moe_capacity_factor=1.5",
        "workload.moe_layers=2",
    ];
    let flows = |name: &str, seed: u32, scenario: Option<&Path>| {
        let out = d.join(name);
        let seed = format!("seed={seed}");
        let mut args: Vec<&str> = vec!["run", "--quiet", "--out", out.to_str().unwrap()];
        if let Some(p) = scenario {
            args.push(p.to_str().unwrap());
        } else {
            for s in sets.iter().chain([&seed.as_str()]) {
                args.extend(["--set", s]);
            }
        }
        let o = lbsim(&args);
        assert!(o.status.success(), "{}", stderr(&o));
        let csv = std::fs::read_to_string(out.join("collectives.csv")).unwrap();
        assert!(csv.contains(",moe_dispatch_bwd,"), "{csv}");
        std::fs::read(out.join("flows.csv")).unwrap()
    };
    let a = flows("a", 3, None);
    assert_eq!(a, flows("b", 3, None));
    assert_ne!(a, flows("c", 4, None));
    // `show` prints every moe key's value in effect, and the file reads back to the same run.
    let mut args = vec!["show"];
    let seed = "seed=3";
    for s in sets.iter().chain([&seed]) {
        args.extend(["--set", s]);
    }
    let o = lbsim(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8(o.stdout).unwrap();
    for needle in ["moe_hidden = 7168", "moe_top_k = 8", "moe_max_servers = 0"] {
        assert!(text.contains(needle), "{needle}: {text}");
    }
    let path = d.join("shown.toml");
    std::fs::write(&path, &text).unwrap();
    assert_eq!(flows("d", 0, Some(&path)), a);
    assert!(String::from_utf8(lbsim(&["list"]).stdout)
        .unwrap()
        .contains("\n  moe "));
}

#[test]
fn show_states_the_shifted_all_to_all_order() {
    let o = lbsim(&["show", "--set", "workload.kind=all_to_all"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let s = String::from_utf8(o.stdout).unwrap();
    assert!(s.contains("\nall_to_all_algorithm = \"shifted\"\n"), "{s}");
    // A scenario that does not run an all-to-all names the default among the unread options.
    let s = String::from_utf8(lbsim(&["show"]).stdout).unwrap();
    assert!(
        s.contains("# workload.all_to_all_algorithm = \"shifted\" "),
        "{s}"
    );
}

#[test]
fn bad_input_gives_clear_errors() {
    let d = tmpdir("bad");
    let unknown = d.join("unknown.toml");
    std::fs::write(&unknown, "seed = 1\n[topology]\nkk = 4\n").unwrap();
    fails_with(
        lbsim(&["run", unknown.to_str().unwrap()]),
        &["unknown.toml", "kk", "line 3"],
    );

    let wrong = d.join("wrong.toml");
    std::fs::write(&wrong, "[topology]\nk = \"eight\"\n").unwrap();
    fails_with(
        lbsim(&["run", wrong.to_str().unwrap()]),
        &["wrong.toml", "line 2"],
    );

    fails_with(
        lbsim(&["run", "--set", "topology.k=5"]),
        &["topology.k", "even"],
    );
    fails_with(lbsim(&["run", "--set", "topology.bogus=1"]), &["bogus"]);
    fails_with(lbsim(&["run", "--set", "noequals"]), &["noequals"]);
    fails_with(
        lbsim(&["run", "--set", "load_balancing.scheme=magic"]),
        &["magic", "host_spray"],
    );
    fails_with(
        lbsim(&["compare", "--schemes", "ecmp,nope"]),
        &["nope", "valid schemes"],
    );
    fails_with(
        lbsim(&["run", "does-not-exist.toml"]),
        &["does-not-exist.toml"],
    );

    let cm = d.join("bad.cm");
    std::fs::write(
        &cm,
        "Nodes 16\nConnections 1\n0->99 id 1 start 0 size 100\n",
    )
    .unwrap();
    fails_with(
        lbsim(&[
            "run",
            "--set",
            "topology.k=4",
            "--set",
            "workload.kind=connection_matrix",
            "--set",
            &format!("workload.path={}", cm.display()),
        ]),
        &["bad.cm:3", "out of range"],
    );
    fails_with(
        lbsim(&[
            "run",
            "--set",
            "workload.kind=connection_matrix",
            "--set",
            "workload.path=missing.cm",
        ]),
        &["missing.cm"],
    );
    fails_with(
        lbsim(&["run", "--set", "workload.kind=connection_matrix"]),
        &["workload.path"],
    );

    let f = d.join("fail.toml");
    std::fs::write(
        &f,
        "[[failures]]\nkind = \"down\"\nlink = \"tor:0-agg:99\"\n",
    )
    .unwrap();
    fails_with(
        lbsim(&["run", f.to_str().unwrap()]),
        &["fail.toml", "failures[0].link", "lbsim topology --links"],
    );
    fails_with(
        lbsim(&["run", f.to_str().unwrap(), "--set", "failures.4.at_us=1"]),
        &["out of range"],
    );
}

#[test]
fn connection_matrix_runs_relative_to_scenario_file() {
    let d = tmpdir("cm");
    std::fs::write(
        d.join("two.cm"),
        "Nodes 16\nConnections 2\n# two flows\n0->5 id 1 start 0 size 65536\n5->0 id 2 start 1000000 size 65536\n",
    )
    .unwrap();
    std::fs::write(
        d.join("s.toml"),
        "[topology]\nk = 4\n[workload]\nkind = \"connection_matrix\"\npath = \"two.cm\"\n",
    )
    .unwrap();
    let out = d.join("out");
    let o = lbsim(&[
        "run",
        d.join("s.toml").to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let flows = std::fs::read_to_string(out.join("flows.csv")).unwrap();
    assert!(flows
        .lines()
        .nth(2)
        .unwrap()
        .starts_with("2,5,0,65536,1000000,"));
}

fn lbsim_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lbsim"))
        .current_dir(dir)
        .args(args)
        .output()
        .expect("lbsim runs")
}

#[test]
fn show_output_reads_back_to_the_same_run_wherever_it_is_saved() {
    let d = tmpdir("show-paths");
    for sub in ["cm", "show"] {
        std::fs::create_dir_all(d.join(sub)).unwrap();
    }
    std::fs::write(
        d.join("cm/multi.cm"),
        "Nodes 16\nConnections 2\n0->5 id 1 start 0 size 65536\n5->0 id 2 start 1000000 size 65536\n",
    )
    .unwrap();
    std::fs::write(
        d.join("cm/scn.toml"),
        "[topology]\nk = 4\n[workload]\nkind = \"connection_matrix\"\npath = \"multi.cm\"\n",
    )
    .unwrap();
    let flows = |scenario: &str, out: &str| {
        let o = lbsim_in(&d, &["run", scenario, "--quiet", "--out", out]);
        assert!(o.status.success(), "{scenario}: {}", stderr(&o));
        std::fs::read_to_string(d.join(out).join("flows.csv")).unwrap()
    };
    let original = flows("cm/scn.toml", "r0");
    // Printed: saved anywhere, its paths still name the files the original read.
    let o = lbsim_in(&d, &["show", "cm/scn.toml"]);
    assert!(o.status.success(), "{}", stderr(&o));
    std::fs::write(d.join("show/s.toml"), &o.stdout).unwrap();
    assert_eq!(flows("show/s.toml", "r1"), original);
    // Written with --out: paths relative to the written file, so the two move together.
    let o = lbsim_in(&d, &["show", "cm/scn.toml", "--out", "show/rel.toml"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let rel = std::fs::read_to_string(d.join("show/rel.toml")).unwrap();
    assert!(rel.contains("\npath = \"../cm/multi.cm\"\n"), "{rel}");
    assert_eq!(flows("show/rel.toml", "r2"), original);
}

/// Every field of summary.json, flows.csv and collectives.csv has a row (or a mention) in the
/// README's Output section: a new field without documentation fails here.
#[test]
fn readme_documents_every_output_field() {
    let readme = std::fs::read_to_string(repo_file("README.md")).unwrap();
    let start = readme.find("\n## Output").expect("an Output section");
    let end = readme[start + 1..]
        .find("\n## ")
        .map_or(readme.len(), |e| start + 1 + e);
    let section = &readme[start..end];
    let d = tmpdir("fields");
    let out = d.join("ring");
    let o = lbsim(&[
        "run",
        "--quiet",
        "--set",
        "topology.k=4",
        "--set",
        "workload.kind=ring_allreduce",
        "--set",
        "workload.message_bytes=65536",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    let mut fields: Vec<String> = summary.as_object().unwrap().keys().cloned().collect();
    fields.push("interrupted".into());
    // Fields present only with PFC, or when a trimmed header was returned: an incast through
    // small data and control queues has both (PFC on the first, trimming on the second).
    for extra in [
        &["topology.pfc=true", "transport.loss_recovery=go_back_n"][..],
        &[
            "transport.loss_recovery=trim",
            "topology.control_buffer_bytes=128",
        ],
    ] {
        let out = d.join("extra");
        let mut args = vec![
            "run",
            "--quiet",
            "--set",
            "topology.k=4",
            "--set",
            "topology.buffer_bytes=150000",
            "--set",
            "workload.kind=incast",
            "--set",
            "workload.fan_in=8",
            "--out",
            out.to_str().unwrap(),
        ];
        for s in extra {
            args.extend(["--set", s]);
        }
        let o = lbsim(&args);
        assert!(o.status.success(), "{}", stderr(&o));
        let s: serde_json::Value =
            serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
        let keys = s.as_object().unwrap().keys();
        let new: Vec<String> = keys.filter(|k| !fields.contains(k)).cloned().collect();
        assert!(!new.is_empty(), "{extra:?} adds fields");
        fields.extend(new);
    }
    for csv in ["flows.csv", "collectives.csv"] {
        let text = std::fs::read_to_string(out.join(csv)).unwrap();
        let header = text.lines().next().unwrap();
        fields.extend(header.split(',').map(str::to_string));
    }
    let missing: Vec<&String> = fields
        .iter()
        .filter(|f| !section.contains(&format!("`{f}`")))
        .collect();
    assert!(
        missing.is_empty(),
        "README's Output section lacks {missing:?}"
    );
    // Every telemetry table and column has its row in the Telemetry section.
    let start = readme.find("\n## Telemetry").expect("a Telemetry section");
    let end = readme[start + 1..]
        .find("\n## ")
        .map_or(readme.len(), |e| start + 1 + e);
    let section = &readme[start..end];
    let tel = d.join("telemetry");
    let o = lbsim(&[
        "run",
        "--quiet",
        "--set",
        "topology.k=4",
        "--set",
        "workload.message_bytes=65536",
        "--set",
        "telemetry.enabled=true",
        "--set",
        "telemetry.format=csv",
        "--set",
        "telemetry.flows=all",
        "--set",
        "telemetry.events=[\"drops\", \"marks\", \"trims\", \"pauses\"]",
        "--out",
        tel.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let mut fields = Vec::new();
    for table in ["port_index", "ports", "flows", "events"] {
        fields.push(table.to_string());
        let text = std::fs::read_to_string(tel.join(format!("telemetry/{table}.csv"))).unwrap();
        let header = text.lines().next().unwrap();
        fields.extend(header.split(',').map(str::to_string));
    }
    let mut sc: toml::Table =
        toml::from_str(&String::from_utf8(lbsim(&["show"]).stdout).unwrap()).unwrap();
    let keys = sc.remove("telemetry").expect("show prints [telemetry]");
    fields.extend(keys.as_table().unwrap().keys().cloned());
    let missing: Vec<&String> = fields
        .iter()
        .filter(|f| !section.contains(&format!("`{f}`")))
        .collect();
    assert!(
        missing.is_empty(),
        "README's Telemetry section lacks {missing:?}"
    );
}

#[test]
fn topology_summarises_tiers_taper_bisection_and_paths() {
    let out = lbsim(&[
        "topology",
        "--set",
        "topology.kind=clos",
        "--set",
        "topology.hosts=128",
        "--set",
        "topology.pod_hosts=16",
        "--set",
        "topology.link_gbps=100",
        "--set",
        "topology.tier=[{down=4,up=4},{down=4,up=1},{down=8}]",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0].starts_with("clos 3 tiers, 128 hosts: 128 hosts, 68 switches"),
        "{text}"
    );
    // The aggregation tier: 32 switches of 4 down and 1 up, 4:1; 4 paths between pods.
    let agg: Vec<&str> = lines[3].split_whitespace().collect();
    assert_eq!(agg[..5], ["1", "agg", "32", "4", "1"], "{text}");
    assert_eq!(agg[7], "4.000:1", "{text}");
    assert_eq!(lines[4].split_whitespace().last(), Some("4"), "{text}");
    // Half of 4 pods' worth of core links: 8 pods x 4 uplinks x 100G / 2.
    assert!(
        lines[5].starts_with("bisection bandwidth 1.600 Tb/s"),
        "{text}"
    );
    let dot = lbsim(&["topology", "--dot", "--set", "topology.k=4"]);
    let dot = String::from_utf8(dot.stdout).unwrap();
    assert!(dot.starts_with("graph fabric {"), "{dot}");
    // 16 host cables, 16 ToR-agg, 16 agg-core.
    assert_eq!(dot.matches(" -- ").count(), 48, "{dot}");
    assert!(dot.contains("\"host:0\" -- \"tor:0\""), "{dot}");
}

/// A disk that fills mid-write, as a file-size limit makes it (SIGXFSZ ignored, so a write past
/// the limit fails with EFBIG as it would with ENOSPC): a clear error naming the file, a
/// non-zero exit, and nothing left behind under a final name or a temporary one, for the run's
/// files and for telemetry streamed while it ran.
#[cfg(unix)]
#[test]
fn a_full_disk_gives_a_clear_error_and_leaves_no_partial_file() {
    let d = tmpdir("full-disk");
    for (name, limit_kb, extra, file) in [
        ("run", 2, "", "flows.csv"),
        (
            "telemetry",
            64,
            "--set telemetry.enabled=true --set telemetry.format=\"csv\"",
            "ports.csv",
        ),
    ] {
        let out = d.join(name);
        let script = format!(
            "trap '' XFSZ; ulimit -f {limit_kb}; exec \"$0\" run --quiet --set topology.k=4 \
             --set workload.kind=all_to_all --set workload.message_bytes=65536 {extra} --out \"$1\""
        );
        let o = Command::new("sh")
            .args(["-c", &script, env!("CARGO_BIN_EXE_lbsim")])
            .arg(&out)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{name}: {err}");
        assert!(
            err.contains("cannot write") && err.contains(file) && err.contains("too large"),
            "{name}: {err}"
        );
        let mut left = Vec::new();
        for dir in [out.clone(), out.join("telemetry")] {
            if let Ok(rd) = std::fs::read_dir(&dir) {
                for e in rd {
                    let e = e.unwrap();
                    if e.file_type().unwrap().is_file() {
                        left.push(e.file_name().to_string_lossy().into_owned());
                    }
                }
            }
        }
        assert!(left.is_empty(), "{name}: left {left:?}");
    }
}

/// An output whose final name cannot be written (taken by a directory; running as root, no
/// permission bit would stop it) ends the run with an error naming it, exit code 1, and no
/// temporary file left; the files written before it are whole.
#[test]
fn an_unwritable_output_file_gives_a_clear_error_and_leaves_no_temporary() {
    let d = tmpdir("unwritable");
    let out = d.join("run");
    std::fs::create_dir_all(out.join("summary.json")).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_lbsim"))
        .args(["run", "--quiet", "--set", "topology.k=4"])
        .args(["--set", "workload.message_bytes=65536", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("cannot write") && err.contains("summary.json") && !err.contains("panicked"),
        "{err}"
    );
    let names: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        names
            .iter()
            .all(|n| ["summary.json", "flows.csv", "collectives.csv"].contains(&n.as_str())),
        "{names:?}"
    );
    let flows = std::fs::read_to_string(out.join("flows.csv")).unwrap();
    assert_eq!(flows.lines().count(), 17, "a header and 16 flows");
}

#[test]
fn export_chakra_writes_a_training_run_that_replays_to_the_same_outputs() {
    let d = tmpdir("export-chakra");
    let et = d.join("et");
    let sets = [
        "topology.k=4",
        "workload.kind=training",
        "workload.training_layers=2",
        "workload.training_hidden=256",
        "workload.training_ffn_hidden=512",
        "workload.training_seq_len=128",
    ];
    let mut args: Vec<&str> = vec!["export-chakra", "--out", et.to_str().unwrap()];
    for s in &sets {
        args.extend(["--set", s]);
    }
    let o = lbsim(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let mut names: Vec<String> = std::fs::read_dir(&et)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let want: Vec<String> = std::iter::once("comm_groups.json".to_string())
        .chain((0..8).map(|r| format!("training.{r}.et")))
        .collect();
    assert_eq!(names, want);
    let run = |name: &str, extra: &[String]| {
        let out = d.join(name);
        let mut a: Vec<String> = vec!["run".into(), "--quiet".into(), "--out".into()];
        a.push(out.to_str().unwrap().into());
        for s in extra {
            a.extend(["--set".into(), s.clone()]);
        }
        let o = lbsim(&a.iter().map(String::as_str).collect::<Vec<_>>());
        assert!(o.status.success(), "{}", stderr(&o));
        let read = |f: &str| std::fs::read(out.join(f)).unwrap();
        (read("flows.csv"), read("collectives.csv"))
    };
    let a = run("a", &sets.map(String::from));
    let b = run(
        "b",
        &[
            "topology.k=4".into(),
            "workload.kind=chakra".into(),
            format!("workload.path=\"{}\"", et.display()),
            format!(
                "workload.chakra_comm_groups=\"{}\"",
                et.join("comm_groups.json").display()
            ),
        ],
    );
    assert_eq!(a, b);
    assert!(String::from_utf8_lossy(&a.1).starts_with("job,group,iteration,layer,kind,comm,"));
    // A smaller export to the same directory leaves no rank of the larger one behind.
    let mut args: Vec<&str> = vec!["export-chakra", "--out", et.to_str().unwrap()];
    for s in &sets {
        args.extend(["--set", s]);
    }
    args.extend(["--set", "workload.training_dp=1"]);
    assert!(lbsim(&args).status.success());
    assert_eq!(std::fs::read_dir(&et).unwrap().count(), 5);
    // Another name's rank traces there are refused, not deleted.
    let theirs = et.join("mine.0.et");
    std::fs::write(&theirs, b"x").unwrap();
    fails_with(lbsim(&args), &["other rank traces", "mine.0.et"]);
    assert!(theirs.exists());
    std::fs::remove_file(&theirs).unwrap();
    fails_with(
        lbsim(&["export-chakra", "--out", et.to_str().unwrap()]),
        &["export-chakra", "`permutation`"],
    );
}
