//! Bad user input through the command line: each case exits non-zero with an error (no panic,
//! no backtrace) naming the key, the `--set`, or the file and line that caused it.

use std::path::PathBuf;
use std::process::{Command, Output};

fn lbsim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lbsim"))
        .env_remove("LBSIM_PROGRESS_SECONDS")
        .args(args)
        .output()
        .expect("lbsim runs")
}

fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("lbsim-input-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
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
