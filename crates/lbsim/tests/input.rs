//! Bad user input: every scenario key, override and connection matrix that cannot be run is
//! refused with an error naming the key, the `--set`, or the file and line that caused it.

mod common;

use lbsim::{Origin, Scenario, ScenarioFile};

fn sets(s: &[&str]) -> Vec<String> {
    s.iter().map(|x| x.to_string()).collect()
}

/// The built-in default with `s` applied, built; the error as text.
fn build_err(s: &[&str]) -> String {
    let r = ScenarioFile::builtin(&sets(s)).and_then(|f| Scenario::build(f, &Origin::builtin()));
    match r {
        Ok(_) => panic!("{s:?} should be refused"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn set_appends_a_failures_entry_to_a_scenario_without_one() {
    let f = ScenarioFile::builtin(&sets(&[
        "topology.k=4",
        "failures.0.kind=down",
        "failures.0.random_fraction=0.1",
    ]))
    .unwrap();
    assert_eq!(f.failures.len(), 1);
    assert_eq!(f.failures[0].random_fraction, Some(0.1));
    let sc = Scenario::build(f, &Origin::builtin()).unwrap();
    assert!(!sc.failures.is_empty());
    // One past the end appends another entry; further is an error naming the key.
    let f = ScenarioFile::builtin(&sets(&[
        "failures.0.kind=down",
        "failures.0.random_fraction=0.1",
        "failures.1.kind=degraded",
        "failures.1.random_fraction=0.1",
        "failures.1.rate_fraction=0.5",
    ]))
    .unwrap();
    assert_eq!(f.failures.len(), 2);
    let e = build_err(&["failures.1.kind=down"]);
    assert!(
        e.contains("--set failures.1.kind=down")
            && e.contains("`failures`")
            && e.contains("out of range"),
        "{e}"
    );
    // Jobs are lists of tables too.
    let f = ScenarioFile::builtin(&sets(&[
        "jobs.0.kind=ring_allreduce",
        "jobs.0.group_size=4",
    ]))
    .unwrap();
    assert_eq!(f.jobs.len(), 1);
}

/// Writes `text` as a connection matrix and builds the built-in default (k=4) on it; returns
/// the file's name and the error as text.
fn cm_err(name: &str, text: &str, extra: &[&str]) -> (String, String) {
    let dir = common::TempDir::new("input", name);
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    let mut s = vec![
        "topology.k=4".to_string(),
        "workload.kind=connection_matrix".to_string(),
        format!("workload.path=\"{}\"", path.display()),
    ];
    s.extend(extra.iter().map(|x| x.to_string()));
    let r = ScenarioFile::builtin(&s).and_then(|f| Scenario::build(f, &Origin::builtin()));
    match r {
        Ok(_) => panic!("{name} should be refused:\n{text}"),
        Err(e) => (path.display().to_string(), e.to_string()),
    }
}

#[test]
fn message_sizes_past_the_cap_name_the_key_and_the_cap() {
    // 2^64 - 1 is past TOML's integers: said so, not "expected u64, found a string".
    let e = build_err(&["workload.message_bytes=18446744073709551615"]);
    assert!(
        e.contains("workload.message_bytes") && e.contains("9223372036854775807"),
        "{e}"
    );
    assert!(!e.contains("string"), "{e}");
    // 1e15 bytes (written either way) is far more packets than one message may have.
    for v in ["1e15", "1000000000000000"] {
        let e = build_err(&["topology.k=4", &format!("workload.message_bytes={v}")]);
        assert!(
            e.contains("workload.message_bytes")
                && e.contains("1073741824 packets")
                && e.contains("packet.payload_bytes"),
            "{e}"
        );
    }
    // The cap counts packets: tiny payloads reach it sooner.
    let e = build_err(&[
        "topology.k=4",
        "packet.payload_bytes=1",
        "workload.message_bytes=8589934592",
    ]);
    assert!(e.contains("workload.message_bytes"), "{e}");
    // FSDP's layer size and each job's size are checked under their own keys.
    let e = build_err(&[
        "topology.k=4",
        "workload.kind=fsdp",
        "workload.layers=1",
        "workload.layer_bytes=9000000000000000",
        "workload.compute_us_per_layer=1",
    ]);
    assert!(e.contains("workload.layer_bytes"), "{e}");
    let e = build_err(&[
        "topology.k=4",
        "jobs.0.kind=all_to_all",
        "jobs.0.message_bytes=9000000000000000",
    ]);
    assert!(e.contains("jobs.0.message_bytes"), "{e}");
}

#[test]
fn workload_past_the_simulated_clock_is_refused() {
    // Each message is within the packet cap, but at 1 Mb/s the data alone is centuries.
    let e = build_err(&[
        "topology.k=4",
        "topology.link_gbps=0.001",
        "workload.message_bytes=1099511627776",
    ]);
    assert!(
        e.contains("key `workload`") && e.contains("simulated time"),
        "{e}"
    );
    // FSDP: the compute of every layer of every iteration in series.
    let e = build_err(&[
        "topology.k=4",
        "workload.kind=fsdp",
        "workload.layers=100000",
        "workload.layer_bytes=4096",
        "workload.compute_us_per_layer=900000000000",
        "workload.group_size=2",
    ]);
    assert!(e.contains("simulated time"), "{e}");
}

#[test]
fn connection_matrix_sizes_starts_and_delays_past_the_caps_name_the_line() {
    let (p, e) = cm_err(
        "past-u64.cm",
        "Nodes 16\n0->1 id 1 size 18446744073709551616\n",
        &[],
    );
    assert!(
        e.starts_with(&format!("{p}:2:")) && e.contains("too large"),
        "{e}"
    );
    let (p, e) = cm_err("big.cm", "0->1 id 1 size 18446744073709551615\n", &[]);
    assert!(
        e.starts_with(&format!("{p}:1:")) && e.contains("1073741824 packets"),
        "{e}"
    );
    // A start at the end of time used to panic in the run.
    let (p, e) = cm_err(
        "start.cm",
        "Nodes 16\n\n0->1 id 1 start 18446744073709551615 size 4\n",
        &[],
    );
    assert!(
        e.starts_with(&format!("{p}:3:")) && e.contains("start"),
        "{e}"
    );
    let (p, e) = cm_err(
        "delay.cm",
        "0->1 id 1 size 4 recv_done_trigger 1\n1->2 id 2 trigger 1 size 4\n\
         trigger id 1 oneshot delay 18446744073709551615\n",
        &[],
    );
    assert!(
        e.starts_with(&format!("{p}:3:")) && e.contains("delay"),
        "{e}"
    );
    // Every delay in series: each is allowed, their sum is not.
    let mut t = String::from("0->1 id 1 size 4 recv_done_trigger 1\n");
    for i in 1..40 {
        t += &format!(
            "{}->{} id {} trigger {i} size 4 recv_done_trigger {}\n",
            i % 16,
            (i + 1) % 16,
            i + 1,
            i + 1
        );
    }
    for i in 1..41 {
        t += &format!("trigger id {i} oneshot delay 4000000000000000000\n");
    }
    let (p, e) = cm_err("chain.cm", &t, &[]);
    assert!(e.contains(&p) && e.contains("simulated time"), "{e}");
}

#[test]
fn connection_matrix_edge_cases_name_the_line() {
    let (p, e) = cm_err("empty.cm", "", &[]);
    assert!(
        e.starts_with(&format!("{p}:0:")) && e.contains("empty file"),
        "{e}"
    );
    let (p, e) = cm_err("comments.cm", "# nothing\n\nNodes 16\n", &[]);
    assert!(
        e.starts_with(&format!("{p}:0:")) && e.contains("no connections"),
        "{e}"
    );
    let (p, e) = cm_err("token.cm", "Nodes 16\nConnextions 1\n0->1 size 4\n", &[]);
    assert!(
        e.starts_with(&format!("{p}:2:")) && e.contains("`Connextions`"),
        "{e}"
    );
    let (p, e) = cm_err("field.cm", "0->1 size 4 color 3\n", &[]);
    assert!(
        e.starts_with(&format!("{p}:1:")) && e.contains("`color`") && e.contains("size"),
        "{e}"
    );
    for n in [0, 1] {
        let (p, e) = cm_err(
            &format!("nodes{n}.cm"),
            &format!("Nodes {n}\n0->1 size 4\n"),
            &[],
        );
        assert!(
            e.starts_with(&format!("{p}:1:")) && e.contains("at least 2"),
            "{e}"
        );
    }
    let (p, e) = cm_err("dup.cm", "0->1 id 7 size 4\n# x\n1->2 id 7 size 4\n", &[]);
    assert!(
        e.starts_with(&format!("{p}:3:"))
            && e.contains("duplicate flow id 7")
            && e.contains("line 1"),
        "{e}"
    );
    let (p, e) = cm_err(
        "undef.cm",
        "0->1 id 1 size 4 recv_done_trigger 1\n1->2 id 2 trigger 2 size 4\ntrigger id 1 oneshot\n",
        &[],
    );
    assert!(
        e.starts_with(&format!("{p}:2:")) && e.contains("trigger id 2"),
        "{e}"
    );
    let (p, e) = cm_err("selfloop.cm", "3->3 id 1 size 4\n", &[]);
    assert!(e.starts_with(&format!("{p}:1:")), "{e}");
    let (p, e) = cm_err("hosts.cm", "Nodes 17\n0->1 size 4\n", &[]);
    assert!(e.starts_with(&format!("{p}:1:")) && e.contains("16"), "{e}");
}

#[test]
fn fan_in_and_first_host_out_of_range_blame_their_own_key() {
    for kind in ["incast", "outcast"] {
        let k = format!("workload.kind={kind}");
        let e = build_err(&["topology.k=4", &k, "workload.fan_in=100"]);
        assert!(
            e.contains("key `workload.fan_in`") && e.contains("16"),
            "{e}"
        );
        let e = build_err(&["topology.k=4", &k, "workload.first_host=15"]);
        assert!(e.contains("key `workload.first_host`"), "{e}");
        let e = build_err(&[
            "topology.k=4",
            &k,
            "workload.first_host=12",
            "workload.fan_in=8",
        ]);
        assert!(
            e.contains("key `workload.fan_in`") && e.contains("first_host"),
            "{e}"
        );
    }
    let e = build_err(&[
        "topology.k=4",
        "workload.kind=ring_allreduce",
        "workload.first_host=15",
    ]);
    assert!(e.contains("key `workload.first_host`"), "{e}");
    let e = build_err(&[
        "topology.k=4",
        "workload.kind=ring_allreduce",
        "workload.groups=9",
    ]);
    assert!(e.contains("key `workload.groups`"), "{e}");
    let e = build_err(&[
        "topology.k=4",
        "workload.kind=ring_allreduce",
        "workload.group_size=17",
    ]);
    assert!(e.contains("key `workload.group_size`"), "{e}");
}

#[test]
fn errors_from_a_set_value_name_the_set_not_the_file() {
    let path = std::path::Path::new("dir/s.toml");
    let text = "[topology]\nk = 4\n";
    let cases = [
        (
            "workload.message_bytes=1000000000000000",
            "1073741824 packets",
        ),
        ("topology.link_gbps=-5", "positive"),
        ("topology.nope=1", "unknown field `nope`"),
        ("topology.k=x", "invalid type"),
        ("workload.kind=incast", "fan_in"),
        ("failures.0.at_us=-1", "at_us"),
    ];
    for (set, needle) in cases {
        let mut s = vec![set.to_string()];
        if set == "workload.kind=incast" {
            s.push("workload.fan_in=99".into());
        }
        if set.starts_with("failures") {
            s.insert(0, "failures.0.kind=down".into());
            s.insert(1, "failures.0.random_fraction=0.1".into());
        }
        let origin = Origin::file(path).with_sets(&s);
        let e = ScenarioFile::from_toml(text, &s, &origin)
            .and_then(|f| Scenario::build(f, &origin))
            .unwrap_err()
            .to_string();
        let blamed = if needle == "fan_in" {
            s[1].as_str()
        } else {
            set
        };
        assert!(
            e.starts_with(&format!("--set {blamed}: ")) && e.contains(needle),
            "{set}: {e}"
        );
        assert!(!e.contains("s.toml"), "{set}: {e}");
    }
    // A bad value in the file itself still names the file, whatever else was set.
    let s = sets(&["workload.message_bytes=4096"]);
    let origin = Origin::file(path).with_sets(&s);
    let e = ScenarioFile::from_toml("[topology]\nk = 5\n", &s, &origin)
        .and_then(|f| Scenario::build(f, &origin))
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("dir/s.toml: key `topology.k`"), "{e}");
}

/// Writes `text` as a connection matrix and builds the built-in default (k=4) on it.
fn cm_scenario(name: &str, text: &str) -> Scenario {
    let dir = common::TempDir::new("input", name);
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    let s = vec![
        "topology.k=4".to_string(),
        "workload.kind=connection_matrix".to_string(),
        format!("workload.path=\"{}\"", path.display()),
    ];
    let f = ScenarioFile::builtin(&s).unwrap();
    Scenario::build(f, &Origin::builtin()).unwrap()
}

#[test]
fn connection_matrix_flows_keep_their_file_ids() {
    // flows.csv's flow_id is the file's id, not the row: `id 3` on the first line stays 3.
    let sc = cm_scenario(
        "ids.cm",
        "Nodes 16\n0->1 id 3 start 0 size 4096\n2->5 id 1 start 0 size 8192\n",
    );
    let out = lbsim::run(sc);
    let ids: Vec<_> = out.flows.iter().map(|f| f.flow_id).collect();
    assert_eq!(ids, [3, 1]);
    assert_eq!(out.flows[1].size_bytes, 8192);
    // Generated workloads keep numbering their flows 0, 1, 2, ...
    let out = lbsim::run(common::scenario(&[
        "topology.k=4",
        "workload.message_bytes=4096",
    ]));
    let ids: Vec<_> = out.flows.iter().map(|f| f.flow_id).collect();
    assert_eq!(ids, (0..16).collect::<Vec<_>>());
}

#[test]
fn link_rates_below_one_kbps_and_oversized_repair_counts_are_refused() {
    // 1e-12 Gb/s rounds to 0 b/s, which divided by zero in the run.
    let e = build_err(&["topology.k=4", "topology.link_gbps=1e-12"]);
    assert!(e.contains("key `topology.link_gbps`"), "{e}");
    for o in ["1e300", "1e-300"] {
        let e = build_err(&[
            "topology.kind=leaf_spine",
            "topology.hosts_per_leaf=4",
            "topology.leaves=2",
            &format!("topology.oversubscription={o}"),
        ]);
        assert!(
            e.contains("key `topology.oversubscription`") && e.contains("uplink"),
            "{e}"
        );
    }
    // The repair count overflowed the sender's 32-bit packet counters.
    let e = build_err(&[
        "topology.k=4",
        "transport.loss_recovery=erasure",
        "transport.erasure_extra_packets=4294967295",
    ]);
    assert!(e.contains("key `transport.erasure_extra_packets`"), "{e}");
}

#[test]
fn connection_matrix_failure_lines_fail_aggregation_uplinks_or_name_the_line() {
    // k=4: aggregation switch 5 (pod position 1) reaches cores 2 and 3.
    let dir = common::TempDir::new("input", "uet");
    let path = dir.join("f.cm");
    std::fs::write(
        &path,
        "Nodes 16\nConnections 1\nFailures 1\n0->13 id 1 start 0 size 4096\n\
         failure switch_type AGG switch_id 5 link_id 1\n",
    )
    .unwrap();
    let s = sets(&[
        "topology.k=4",
        "workload.kind=connection_matrix",
        &format!("workload.path=\"{}\"", path.display()),
    ]);
    let sc = Scenario::build(ScenarioFile::builtin(&s).unwrap(), &Origin::builtin()).unwrap();
    let names: Vec<&str> = sc.failures.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["agg:5-core:3"]);
    assert!(sc.end_time.is_some());
    let (p, e) = cm_err(
        "fail-range.cm",
        "Failures 1\n0->13 size 4096\nfailure switch_type AGG switch_id 8 link_id 0\n",
        &[],
    );
    assert!(
        e.starts_with(&format!("{p}:3:")) && e.contains("8 aggregation switches"),
        "{e}"
    );
    let (p, e) = cm_err(
        "fail-link.cm",
        "Failures 1\n0->13 size 4096\nfailure switch_type AGG switch_id 1 link_id 2\n",
        &[],
    );
    assert!(
        e.starts_with(&format!("{p}:3:")) && e.contains("2 uplinks"),
        "{e}"
    );
    let (p, e) = cm_err(
        "fail-leaf.cm",
        "Failures 1\n0->13 size 4096\nfailure switch_type AGG switch_id 1 link_id 0\n",
        // k back to its default: a fat-tree's key on a leaf-spine is refused on its own.
        &["topology.kind=leaf_spine", "topology.k=8"],
    );
    assert!(
        e.starts_with(&format!("{p}:3:")) && e.contains("fat-tree"),
        "{e}"
    );
}

#[test]
fn htsim_topo_files_build_the_fabric_or_name_the_line() {
    let dir = common::TempDir::new("input", "topo");
    let path = dir.join("ls.topo");
    std::fs::write(
        &path,
        "Nodes 32\nTiers 2\nPodsize 32\nTier 0\nDownlink_speed_Gbps 100\nRadix_Down 8\n\
         Radix_Up 2\nDownlink_Latency_ns 1000\nOversubscribed 4\nTier 1\n\
         Downlink_speed_Gbps 100\nRadix_Down 4\nDownlink_Latency_ns 1000\n",
    )
    .unwrap();
    // Relative to the scenario file's directory.
    let origin = Origin::named("s.toml", Some(dir.to_path_buf()));
    let f =
        ScenarioFile::from_toml("[topology]\nhtsim_topo = \"ls.topo\"\n", &[], &origin).unwrap();
    let sc = Scenario::build(f, &origin).unwrap();
    assert_eq!(sc.topology.hosts, 32);
    assert_eq!(
        sc.settings.topology_label,
        "leaf_spine 4x8 hosts, 2 spines 100G"
    );
    let e = build_err(&["topology.htsim_topo=\"/nonexistent/x.topo\""]);
    assert!(
        e.contains("/nonexistent/x.topo") && e.contains("cannot read"),
        "{e}"
    );
}

/// An option that would change nothing in the chosen configuration is refused naming it, not
/// silently ignored: telemetry settings with telemetry off, a convergence time with no
/// failure to converge from (fabric keys of another kind: tests/fabrics.rs).
#[test]
fn options_that_would_do_nothing_are_refused_by_name() {
    for (set, key, needs) in [
        (
            "telemetry.sample_ns=500",
            "telemetry.sample_ns",
            "telemetry.enabled",
        ),
        (
            "telemetry.ports=\"tor_up\"",
            "telemetry.ports",
            "telemetry.enabled",
        ),
        (
            "telemetry.flows=\"all\"",
            "telemetry.flows",
            "telemetry.enabled",
        ),
        (
            "telemetry.events=[\"drops\"]",
            "telemetry.events",
            "telemetry.enabled",
        ),
        (
            "telemetry.format=\"csv\"",
            "telemetry.format",
            "telemetry.enabled",
        ),
        (
            "failure.convergence_us=10",
            "failure.convergence_us",
            "[[failures]]",
        ),
    ] {
        let e = build_err(&[set]);
        assert!(e.contains(key) && e.contains(needs), "{set}: {e}");
    }
    // With what they need, each is fine.
    let ok = |s: &[&str]| {
        ScenarioFile::builtin(&sets(s))
            .and_then(|f| Scenario::build(f, &Origin::builtin()))
            .unwrap()
    };
    ok(&["telemetry.enabled=true", "telemetry.sample_ns=500"]);
    ok(&[
        "failures.0.link=\"tor:0-agg:0\"",
        "failures.0.at_us=0",
        "failures.0.kind=\"down\"",
        "failure.convergence_us=10",
    ]);
}
