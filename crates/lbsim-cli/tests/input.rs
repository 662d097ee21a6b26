//! Bad user input through the command line: each case exits non-zero with an error (no panic,
//! no backtrace) naming the key, the `--set`, or the file and line that caused it.

mod common;

use common::TempDir;
use std::process::{Command, Output};

fn lbsim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lbsim"))
        .env_remove("LBSIM_PROGRESS_SECONDS")
        .args(args)
        .output()
        .expect("lbsim runs")
}

fn tmpdir(name: &str) -> TempDir {
    TempDir::new("input", name)
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn run_set_adds_a_failures_entry_to_a_scenario_without_one() {
    let d = tmpdir("set-failures");
    let out = d.join("out");
    let o = lbsim(&[
        "run",
        "--quiet",
        "--set",
        "topology.k=4",
        "--set",
        "workload.message_bytes=65536",
        "--set",
        "failure.convergence_us=10",
        "--set",
        "failures.0.kind=down",
        "--set",
        "failures.0.random_fraction=0.1",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert!(
        !s["failed_links"].as_array().unwrap().is_empty(),
        "{}",
        s["failed_links"]
    );
    let o = lbsim(&[
        "run",
        "--set",
        "topology.k=4",
        "--set",
        "failures.2.kind=down",
    ]);
    let e = stderr(&o);
    assert!(!o.status.success());
    assert!(
        e.contains("--set failures.2.kind=down") && e.contains("`failures` has 0 entries"),
        "{e}"
    );
}

#[test]
fn errors_from_a_set_value_name_the_set_not_the_scenario_file() {
    let d = tmpdir("set-origin");
    let f = d.join("s.toml");
    std::fs::write(&f, "[topology]\nk = 4\n").unwrap();
    let f = f.to_str().unwrap();
    for (args, blamed) in [
        (
            vec!["run", f, "--set", "workload.message_bytes=1000000000000000"],
            "--set workload.message_bytes=1000000000000000: ",
        ),
        (
            vec!["show", f, "--set", "topology.link_gbps=0"],
            "--set topology.link_gbps=0: ",
        ),
        (
            vec!["run", "--set", "topology.k=4", "--set", "topology.nope=1"],
            "--set topology.nope=1: ",
        ),
    ] {
        let o = lbsim(&args);
        let e = stderr(&o);
        assert!(!o.status.success(), "{args:?}");
        assert!(e.starts_with(&format!("error: {blamed}")), "{args:?}: {e}");
    }
}

#[test]
fn flows_csv_and_export_cm_keep_the_connection_matrix_ids() {
    let d = tmpdir("cm-ids");
    let cm = d.join("ids.cm");
    std::fs::write(
        &cm,
        "Nodes 16\nConnections 3\nTriggers 1\n0->1 id 30 start 0 size 4096 recv_done_trigger 7\n\
         2->5 id 1 start 0 size 8192\n5->9 id 4000000000 trigger 7 size 100\ntrigger id 7 oneshot\n",
    )
    .unwrap();
    let sets = [
        "--set",
        "topology.k=4",
        "--set",
        "workload.kind=connection_matrix",
    ];
    let path = format!("workload.path=\"{}\"", cm.display());
    let out = d.join("out");
    let mut args = vec!["run", "--quiet"];
    args.extend(sets);
    args.extend(["--set", &path, "--out", out.to_str().unwrap()]);
    let o = lbsim(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let csv = std::fs::read_to_string(out.join("flows.csv")).unwrap();
    let ids: Vec<&str> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').next().unwrap())
        .collect();
    assert_eq!(ids, ["30", "1", "4000000000"], "{csv}");
    // export-cm writes the same ids, so the exported file runs to the same flows.csv.
    let exported = d.join("exported.cm");
    let mut args = vec!["export-cm"];
    args.extend(sets);
    args.extend(["--set", &path, "-o", exported.to_str().unwrap()]);
    let o = lbsim(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(&exported).unwrap();
    for id in ["id 30 ", "id 1 ", "id 4000000000 "] {
        assert!(text.contains(id), "{id}: {text}");
    }
    let out2 = d.join("out2");
    let path2 = format!("workload.path=\"{}\"", exported.display());
    let mut args = vec!["run", "--quiet"];
    args.extend(sets);
    args.extend(["--set", &path2, "--out", out2.to_str().unwrap()]);
    let o = lbsim(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        std::fs::read_to_string(out2.join("flows.csv")).unwrap(),
        csv
    );
}

/// Every bad input the guard rails know of, through the binary: each exits with code 1, prints
/// no panic and no backtrace, and names the key, `--set`, file or line at fault.
#[test]
fn bad_inputs_fail_cleanly_naming_the_cause() {
    let d = tmpdir("table");
    let file = |name: &str, text: &str| {
        let p = d.join(name);
        std::fs::write(&p, text).unwrap();
        p.to_str().unwrap().to_string()
    };
    let small = file("small.toml", "[topology]\nk = 4\n");
    let float = file(
        "float.toml",
        "[topology]\nk = 4\n[workload]\nmessage_bytes = 1e15\n",
    );
    let unknown = file("unknown.toml", "[topology]\nkk = 4\n");
    // (what, connection matrix text or "", extra --set values, what stderr must name)
    let cm_cases: &[(&str, &str, &[&str])] = &[
        (
            "size-past-u64.cm",
            "Nodes 16\n0->1 id 1 size 18446744073709551616\n",
            &[":2:", "too large"],
        ),
        (
            "size-over-cap.cm",
            "0->1 id 1 size 18446744073709551615\n",
            &[":1:", "1073741824 packets"],
        ),
        ("token.cm", "Nodes 16\nfoo 3\n0->1 size 4\n", &[":2:", "`foo`"]),
        ("field.cm", "0->1 size 4 colour 3\n", &[":1:", "`colour`"]),
        ("empty.cm", "", &[":0:", "empty file"]),
        ("comments.cm", "# none\n", &[":0:", "no connections"]),
        ("nodes0.cm", "Nodes 0\n0->1 size 4\n", &[":1:", "at least 2"]),
        ("nodes1.cm", "Nodes 1\n0->1 size 4\n", &[":1:", "at least 2"]),
        (
            "dup.cm",
            "0->1 id 7 size 4\n1->2 id 7 size 4\n",
            &[":2:", "duplicate flow id 7", "line 1"],
        ),
        (
            "clash.cm",
            "0->1 size 4\n1->2 id 1 size 4\n",
            &[":1:", "line 2"],
        ),
        (
            "undefined.cm",
            "0->1 id 1 size 4 recv_done_trigger 1\n1->2 id 2 trigger 2 size 4\ntrigger id 1 oneshot\n",
            &[":2:", "trigger id 2"],
        ),
        (
            "start.cm",
            "Nodes 16\n0->1 id 1 start 18446744073709551615 size 4\n",
            &[":2:", "start"],
        ),
        (
            "delay.cm",
            "0->1 id 1 size 4 recv_done_trigger 1\n1->2 id 2 trigger 1 size 4\n\
             trigger id 1 oneshot delay 18446744073709551615\n",
            &[":3:", "delay"],
        ),
        ("node.cm", "Nodes 4\n0->9 size 4\n", &[":2:", "out of range"]),
        ("count.cm", "Connections 2\n0->1 size 4\n", &[":1:", "2 connections"]),
    ];
    let mut cases: Vec<(Vec<String>, Vec<String>)> = Vec::new();
    let v = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    for (name, text, needles) in cm_cases {
        let p = file(name, text);
        let mut n = v(needles);
        n[0] = format!("{name}{}", n[0]);
        cases.push((
            v(&[
                "run",
                &small,
                "--set",
                "workload.kind=connection_matrix",
                "--set",
                &format!("workload.path=\"{p}\""),
            ]),
            n,
        ));
    }
    let missing = d.join("missing.cm");
    cases.push((
        v(&[
            "run",
            &small,
            "--set",
            "workload.kind=connection_matrix",
            "--set",
            &format!("workload.path=\"{}\"", missing.display()),
        ]),
        v(&["missing.cm", "cannot read"]),
    ));
    // Bad --set values: the error names the --set.
    for (set, needle) in [
        ("failures.2.kind=down", "`failures` has 0 entries"),
        (
            "workload.message_bytes=18446744073709551615",
            "9223372036854775807",
        ),
        ("workload.message_bytes=1e15", "1073741824 packets"),
        (
            "workload.message_bytes=1000000000000000",
            "1073741824 packets",
        ),
        ("workload.message_bytes=-5", "u64"),
        ("workload.message_bytes=0", "positive"),
        ("topology.link_gbps=0", "positive"),
        ("topology.link_gbps=-5", "positive"),
        ("topology.link_gbps=1e-12", "at least"),
        ("transport.rate_coef=0", "(0, 1]"),
        ("transport.rate_coef=-1", "(0, 1]"),
        ("topology.nope=1", "unknown field `nope`"),
        ("topology.k=x", "invalid type"),
        ("topology.k=5", "even"),
        ("topology.k=0", "even"),
        ("topology.buffer_bytes=100", "full packet"),
        ("packet.payload_bytes=0", "positive"),
        ("packet.payload_bytes=70000", "65,535"),
        ("seed=-1", "u64"),
        ("end_time_us=-1", "positive"),
        ("transport.rto_us=0", "positive"),
        ("load_balancing.scheme=magic", "unknown scheme `magic`"),
        ("workload.kind=bogus", "unknown variant `bogus`"),
        ("workload.start_us=-1", "non-negative"),
    ] {
        cases.push((
            v(&["run", &small, "--set", set]),
            v(&[&format!("error: --set {set}: "), needle]),
        ));
    }
    // Keys whose error names one of several --set values, or a key of its own.
    let runs: &[(&[&str], &[&str])] = &[
        (
            &["workload.kind=incast", "workload.fan_in=100"],
            &["--set workload.fan_in=100", "16 ranks"],
        ),
        (
            &["workload.kind=outcast", "workload.first_host=15"],
            &["--set workload.first_host=15"],
        ),
        (
            &["workload.kind=ring_allreduce", "workload.first_host=100"],
            &["--set workload.first_host=100", "16 hosts"],
        ),
        (
            &["workload.kind=ring_allreduce", "workload.groups=9"],
            &["--set workload.groups=9"],
        ),
        (
            &["workload.kind=ring_allreduce", "workload.group_size=17"],
            &["--set workload.group_size=17"],
        ),
        (
            &["workload.kind=ring_allreduce", "workload.iterations=0"],
            &["--set workload.iterations=0", "at least 1"],
        ),
        (
            &["workload.iterations=2"],
            &["--set workload.iterations=2", "permutation"],
        ),
        (
            &["workload.kind=ring_allreduce", "workload.gpus_per_host=0"],
            &["--set workload.gpus_per_host=0"],
        ),
        (
            &[
                "workload.kind=halving_doubling_allreduce",
                "workload.group_size=6",
            ],
            &["--set workload.group_size=6", "power-of-two"],
        ),
        (
            &["workload.kind=fsdp", "workload.model=llama9"],
            &["--set workload.model=llama9", "llama3_7b"],
        ),
        (
            &[
                "workload.kind=fsdp",
                "workload.layers=100000",
                "workload.layer_bytes=4096",
                "workload.compute_us_per_layer=900000000000",
            ],
            &[
                "--set workload.compute_us_per_layer=900000000000",
                "simulated time",
            ],
        ),
        (
            &[
                "workload.kind=fsdp",
                "workload.layers=1",
                "workload.layer_bytes=9000000000000000",
                "workload.compute_us_per_layer=1",
            ],
            &["--set workload.layer_bytes=9000000000000000", "packets"],
        ),
        (
            &["workload.kind=connection_matrix"],
            &["workload.path", "needs a path"],
        ),
        (
            &["workload.fan_in=3"],
            &["--set workload.fan_in=3", "incast"],
        ),
        (
            &[
                "topology.link_gbps=0.001",
                "workload.message_bytes=1099511627776",
            ],
            &["key `workload`", "simulated time"],
        ),
        (&["failures.0.kind=down"], &["failures[0]", "link"]),
        (
            &["failures.0.kind=down", "failures.0.random_fraction=2"],
            &["--set failures.0.random_fraction=2"],
        ),
        (
            &["failures.0.kind=down", "failures.0.link=tor:99-agg:0"],
            &["--set failures.0.link=tor:99-agg:0", "topology --links"],
        ),
        (
            &["failures.0.kind=degraded", "failures.0.random_fraction=0.1"],
            &["rate_fraction", "degraded"],
        ),
        (
            &["failure.convergence_us=-1"],
            &["--set failure.convergence_us=-1"],
        ),
        (
            &["load_balancing.subflows=8"],
            &["--set load_balancing.subflows=8", "subflow"],
        ),
        (
            &[
                "transport.loss_recovery=erasure",
                "transport.erasure_extra_packets=4294967295",
            ],
            &[
                "--set transport.erasure_extra_packets=4294967295",
                "at most",
            ],
        ),
        (
            &["transport.cc=dctcp", "topology.ecn_threshold_bytes=900000"],
            &["--set topology.ecn_threshold_bytes=900000", "never marks"],
        ),
        (
            &[
                "topology.kind=leaf_spine",
                "topology.hosts_per_leaf=4",
                "topology.leaves=2",
                "topology.spines=1",
                "topology.oversubscription=1e300",
            ],
            &["--set topology.oversubscription=1e300", "uplink"],
        ),
        (
            &[
                "topology.kind=leaf_spine",
                "topology.hosts_per_leaf=4",
                "topology.leaves=2",
                "topology.oversubscription=1e-300",
            ],
            &["--set topology.oversubscription=1e-300", "uplink"],
        ),
        (
            &["topology.kind=leaf_spine", "topology.spines=0"],
            &["--set topology.spines=0"],
        ),
        (&["topology.k"], &["--set topology.k", "key.path=value"]),
    ];
    for (sets, needles) in runs {
        let mut a = v(&["run", &small]);
        for s in *sets {
            a.push("--set".into());
            a.push(s.to_string());
        }
        cases.push((a, v(needles)));
    }
    // Bad files.
    cases.push((
        v(&["run", &float]),
        v(&["float.toml", "line 4", "whole number"]),
    ));
    cases.push((v(&["run", &unknown]), v(&["unknown.toml", "line 2", "kk"])));
    cases.push((v(&["run", "no-such.toml"]), v(&["no-such.toml"])));
    cases.push((
        v(&[
            "queue-scaling",
            &small,
            "--schemes",
            "ecmp",
            "--packets",
            "2000000000",
        ]),
        v(&["--packets 2000000000", "at most"]),
    ));
    for sub in ["show", "topology", "compare", "export-cm"] {
        let mut a = v(&[sub, &small, "--set", "workload.message_bytes=1e15"]);
        if sub == "export-cm" {
            a.extend(v(&["-o", d.join("x.cm").to_str().unwrap()]));
        }
        cases.push((a, v(&["--set workload.message_bytes=1e15", "packets"])));
    }
    let mut failed = Vec::new();
    for (args, needles) in &cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = Command::new(env!("CARGO_BIN_EXE_lbsim"))
            .env("RUST_BACKTRACE", "1")
            .env_remove("LBSIM_PROGRESS_SECONDS")
            .args(&args)
            .output()
            .expect("lbsim runs");
        let e = stderr(&o);
        let ok = o.status.code() == Some(1)
            && !e.contains("panicked")
            && !e.contains("backtrace")
            && e.starts_with("error: ")
            && needles.iter().all(|n| e.contains(n.as_str()));
        if !ok {
            failed.push(format!(
                "{args:?}\n  exit {:?}, wanted 1 and {needles:?} in: {e}",
                o.status.code()
            ));
        }
    }
    assert!(
        failed.is_empty(),
        "{} of {} bad inputs:\n{}",
        failed.len(),
        cases.len(),
        failed.join("\n")
    );
}

#[test]
fn bad_chakra_traces_exit_non_zero_naming_the_file_and_node() {
    let d = tmpdir("chakra");
    // A truncated trace: a GlobalMetadata then a node whose length promises more bytes.
    std::fs::write(d.join("t.0.et"), [2u8, 10, 0, 40, 8, 1]).unwrap();
    std::fs::write(d.join("t.1.et"), [2u8, 10, 0, 40, 8, 1]).unwrap();
    let cases: [(String, &[&str]); 3] = [
        (
            d.display().to_string(),
            &["t.0.et: truncated", "the first node"],
        ),
        (
            d.join("absent.et").display().to_string(),
            &["absent.et", "no such file"],
        ),
        (d.join("t").display().to_string(), &["t.0.et: truncated"]),
    ];
    for (path, wants) in cases {
        let set = format!("workload.path=\"{path}\"");
        let o = lbsim(&[
            "run",
            "--quiet",
            "--set",
            "topology.k=4",
            "--set",
            "workload.kind=chakra",
            "--set",
            &set,
        ]);
        let e = stderr(&o);
        assert!(!o.status.success(), "{path}: {e}");
        assert!(!e.contains("panicked"), "{e}");
        for w in wants {
            assert!(e.contains(w), "{path}: wants {w}: {e}");
        }
    }
}

#[test]
fn export_cm_uet_writes_failure_lines_and_refuses_what_the_dialect_lacks() {
    let d = tmpdir("uet");
    let cm = d.join("f.cm");
    std::fs::write(
        &cm,
        "Nodes 16\nConnections 1\nFailures 1\n0->13 id 1 msg start 0 size 4096 prio 7\n\
         failure switch_type AGG switch_id 5 link_id 1\n",
    )
    .unwrap();
    let out = d.join("out.cm");
    let set = format!("workload.path=\"{}\"", cm.display());
    let base = [
        "export-cm",
        "--set",
        "topology.k=4",
        "--set",
        "workload.kind=connection_matrix",
        "--set",
        &set,
        "--dialect",
        "uet",
        "-o",
        out.to_str().unwrap(),
    ];
    let o = lbsim(&base);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(&out).unwrap();
    assert_eq!(
        text,
        "Nodes 16\nConnections 1\nTriggers 0\nFailures 1\n0->13 id 1 start 0 size 4096\n\
         failure switch_type AGG switch_id 5 link_id 1\n"
    );
    // FSDP's compute gaps are trigger delays: the dialect has none.
    let o = lbsim(&[
        "export-cm",
        "--set",
        "topology.k=4",
        "--set",
        "workload.kind=fsdp",
        "--set",
        "workload.layers=2",
        "--set",
        "workload.layer_bytes=65536",
        "--set",
        "workload.compute_us_per_layer=5",
        "--dialect",
        "uet",
        "-o",
        d.join("x.cm").to_str().unwrap(),
    ]);
    let e = stderr(&o);
    assert!(
        !o.status.success() && e.contains("no trigger delays"),
        "{e}"
    );
}
