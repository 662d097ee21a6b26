//! Telemetry through the `lbsim` binary: tables under DIR/telemetry, results byte-identical
//! with telemetry on and off (separate processes), errors naming the key.

mod common;

use common::TempDir;
use std::path::PathBuf;
use std::process::{Command, Output};

fn lbsim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lbsim"))
        .args(args)
        .output()
        .expect("lbsim runs")
}

fn tmpdir(name: &str) -> TempDir {
    TempDir::new("tel", name)
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

const BASE: &[&str] = &[
    "--set",
    "topology.k=4",
    "--set",
    "workload.kind=ring_allreduce",
    "--set",
    "workload.message_bytes=1048576",
    "--set",
    "topology.buffer_bytes=30000",
];

/// summary.json without the wall-clock fields.
fn summary(dir: &std::path::Path) -> serde_json::Value {
    let mut v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("summary.json")).unwrap()).unwrap();
    let m = v.as_object_mut().unwrap();
    m.remove("wall_seconds").unwrap();
    m.remove("events_per_second").unwrap();
    v
}

#[test]
fn results_are_byte_identical_with_telemetry_on_and_off() {
    let d = tmpdir("identical");
    let (off, on) = (d.join("off"), d.join("on"));
    let run = |out: &PathBuf, extra: &[&str]| {
        let mut args = vec!["compare", "--schemes", "ecmp,switch_jsq,host_spray"];
        args.extend_from_slice(BASE);
        args.extend_from_slice(extra);
        args.extend(["--out", out.to_str().unwrap()]);
        let o = lbsim(&args);
        assert!(o.status.success(), "{}", stderr(&o));
    };
    run(&off, &[]);
    run(
        &on,
        &[
            "--set",
            "telemetry.enabled=true",
            "--set",
            "telemetry.sample_ns=50",
            "--set",
            "telemetry.flows=all",
            "--set",
            "telemetry.events=[\"drops\", \"marks\"]",
        ],
    );
    for scheme in ["ecmp", "switch_jsq", "host_spray"] {
        let (a, b) = (off.join(scheme), on.join(scheme));
        for f in ["flows.csv", "collectives.csv"] {
            assert_eq!(
                std::fs::read(a.join(f)).unwrap(),
                std::fs::read(b.join(f)).unwrap(),
                "{scheme} {f}"
            );
        }
        assert_eq!(summary(&a), summary(&b), "{scheme}");
        assert!(!a.join("telemetry").exists());
        for t in ["port_index", "ports", "flows", "events"] {
            let p = b.join(format!("telemetry/{t}.parquet"));
            assert!(std::fs::metadata(&p).unwrap().len() > 0, "{}", p.display());
        }
        // Nothing left under a temporary name.
        let left: Vec<_> = std::fs::read_dir(b.join("telemetry"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with('.'))
            .collect();
        assert!(left.is_empty(), "{left:?}");
    }
}

#[test]
fn csv_tables_hold_the_selected_ports_and_end_at_the_run_end() {
    let d = tmpdir("csv");
    let mut args = vec!["run", "--quiet"];
    args.extend_from_slice(BASE);
    args.extend([
        "--set",
        "telemetry.enabled=true",
        "--set",
        "telemetry.format=csv",
        "--set",
        "telemetry.ports=[\"tor_up\", \"host:0-tor:0\"]",
        "--out",
        d.to_str().unwrap(),
    ]);
    let o = lbsim(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let index = std::fs::read_to_string(d.join("telemetry/port_index.csv")).unwrap();
    let rows: Vec<&str> = index.lines().skip(1).collect();
    assert_eq!(rows.len(), 16 + 1);
    assert!(rows[0].starts_with("0,host:0-tor:0,host_up,host:0,tor:0,800000000000,"));
    assert!(rows[1..].iter().all(|r| r.contains(",tor_up,")));
    let end = summary(&d)["end_ps"].as_u64().unwrap();
    let ports = std::fs::read_to_string(d.join("telemetry/ports.csv")).unwrap();
    let last = ports.lines().last().unwrap();
    assert_eq!(last.split(',').nth(1).unwrap().parse::<u64>().unwrap(), end);
    assert_eq!(
        ports.lines().count() - 1,
        17 * end.div_ceil(1_000_000) as usize
    );
    assert!(!d.join("telemetry/flows.csv").exists() && !d.join("telemetry/events.csv").exists());
}

#[test]
fn bad_telemetry_keys_are_errors_naming_them() {
    let cases: &[(&str, &[&str])] = &[
        ("telemetry.sampling=5", &["sampling"]),
        (
            "telemetry.ports=tor:9-agg:0",
            &["telemetry.ports", "tor:9-agg:0"],
        ),
        (
            "telemetry.ports=[\"spine_down\"]",
            &["telemetry.ports", "spine_down"],
        ),
        ("telemetry.events=[\"drop\"]", &["telemetry.events", "drop"]),
        ("telemetry.format=json", &["telemetry.format", "json"]),
        ("telemetry.sample_ns=-1", &["telemetry.sample_ns"]),
    ];
    for (set, needles) in cases {
        let o = lbsim(&["show", "--set", "topology.k=4", "--set", set]);
        let e = stderr(&o);
        assert!(!o.status.success() && !e.contains("panicked"), "{set}: {e}");
        for n in *needles {
            assert!(e.contains(n), "{set}: error should mention `{n}`: {e}");
        }
    }
}
