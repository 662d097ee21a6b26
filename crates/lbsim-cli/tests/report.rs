//! `lbsim report`: a self-contained HTML page with every expected figure, deterministic. The
//! browser check (headless Chromium, console errors, screenshot) is .ci/report-test.sh.

mod common;

use common::TempDir;
use std::process::{Command, Output};

fn lbsim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lbsim"))
        .args(args)
        .output()
        .expect("lbsim runs")
}

fn ok(o: &Output) {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// `lbsim report DIR -o HTML`, which must succeed; the page it wrote.
fn report(dir: &std::path::Path, html: &std::path::Path) -> String {
    ok(&lbsim(&[
        "report",
        dir.to_str().unwrap(),
        "-o",
        html.to_str().unwrap(),
    ]));
    std::fs::read_to_string(html).unwrap()
}

fn tmpdir(name: &str) -> TempDir {
    TempDir::new("report", name)
}

#[test]
fn report_has_every_figure_and_fetches_nothing() {
    let d = tmpdir("figs");
    let q = d.join("q.toml");
    std::fs::write(
        &q,
        "seeds = 2\n[base.topology]\nk = 4\nbuffer_bytes = 100000000\n[grid]\n\"load_balancing.scheme\" = [\"host_spray\", \"ofan\"]\n\"workload.message_bytes\" = [65536, 262144, 1048576]\n",
    )
    .unwrap();
    let g = d.join("g.toml");
    std::fs::write(
        &g,
        "[base.topology]\nk = 4\n[base.workload]\nmessage_bytes = 65536\n[[base.failures]]\nkind = \"down\"\nlink = \"tor:0-agg:0\"\n[grid]\n\"load_balancing.scheme\" = [\"reps\", \"switch_ar\"]\n\"failure.convergence_us\" = [0, 50, \"unset\"]\n",
    )
    .unwrap();
    let res = d.join("res");
    for (f, name) in [(&q, "queue"), (&g, "fail")] {
        ok(&lbsim(&[
            "sweep",
            f.to_str().unwrap(),
            "--out",
            res.join(name).to_str().unwrap(),
        ]));
    }
    let html_path = d.join("report.html");
    let html = report(&res, &html_path);
    for id in [
        "lbsim-version",
        "fig-cct-queue-permutation",
        "fig-fct-queue-permutation-0",
        "fig-queue-queue-permutation-0",
        "table-slopes-queue-permutation-0",
        "table-raw-queue",
        "scenario-queue",
        "fig-cct-fail-permutation",
        "fig-failure-fail-failure-convergence-us-permutation",
        "table-raw-fail",
    ] {
        assert!(html.contains(&format!("id=\"{id}\"")), "missing #{id}");
    }
    assert!(html.contains("never"), "unset G is labelled never");
    assert!(html.contains("slope"));
    for bad in ["http://", "https://", "<link", "<img", "src="] {
        assert!(
            !html.contains(bad),
            "report must be self-contained: found {bad}"
        );
    }
    // Deterministic: the same results give the same bytes.
    let again = d.join("again.html");
    assert_eq!(html, report(&res, &again));
    // One sweep directory alone works too.
    report(&res.join("fail"), &again);
}

#[test]
fn report_of_a_non_sweep_directory_fails_clearly() {
    let d = tmpdir("bad");
    let o = lbsim(&[
        "report",
        d.to_str().unwrap(),
        "-o",
        d.join("r.html").to_str().unwrap(),
    ]);
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success() && e.contains("no results here") && !e.contains("panicked"),
        "{e}"
    );
}

#[test]
fn report_of_a_run_and_of_a_compare_directory() {
    let d = tmpdir("run");
    let scenario = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios/llama3-7b-small.toml");
    let run = d.join("run");
    ok(&lbsim(&[
        "run",
        scenario.to_str().unwrap(),
        "--set",
        "workload.iterations=1",
        "--out",
        run.to_str().unwrap(),
        "--quiet",
    ]));
    let html_path = d.join("run.html");
    let html = report(&run, &html_path);
    for id in [
        "lbsim-version",
        "run-summary",
        "fig-run-fct",
        "fig-run-timeline-ofan",
        "fig-run-flows-ofan",
        "telemetry",
        "fabric",
    ] {
        assert!(html.contains(&format!("id=\"{id}\"")), "missing #{id}");
    }
    // The fabric's tiers from the run's fabric.json, top first: a k=4 fat-tree's 4 cores over
    // 8 aggregation switches over 8 ToRs over 16 hosts.
    let tiers: Vec<usize> = [
        "core: 4 switches",
        "agg: 8 switches",
        "tor: 8 switches",
        "hosts: 16",
    ]
    .iter()
    .map(|t| html.find(t).unwrap_or_else(|| panic!("missing {t}")))
    .collect();
    assert!(tiers.windows(2).all(|w| w[0] < w[1]), "{tiers:?}");
    // Eight collectives (4 layers x all-gather and reduce-scatter), each a bar with its bound.
    assert_eq!(html.matches("(bound ").count(), 8);
    assert!(!html.contains("fig-run-cct"), "one run: no per-scheme bars");

    let cmp = d.join("cmp");
    ok(&lbsim(&[
        "compare",
        "--set",
        "topology.k=4",
        "--set",
        "workload.message_bytes=65536",
        "--schemes",
        "ofan,ecmp,reps",
        "--out",
        cmp.to_str().unwrap(),
    ]));
    let html = report(&cmp, &html_path);
    assert!(html.contains("id=\"fig-run-cct\""));
    // Schemes side by side in family order: flow, packet adaptive, rotation.
    let (e, r, o) = (
        html.find("</span> ecmp</th>").unwrap(),
        html.find("</span> reps</th>").unwrap(),
        html.find("</span> ofan</th>").unwrap(),
    );
    assert!(e < r && r < o);
    // A permutation starts every flow at zero: no host timeline.
    assert!(!html.contains("fig-run-flows"));

    // A broken summary is an error naming the file.
    std::fs::write(cmp.join("ecmp/summary.json"), "{").unwrap();
    let out = lbsim(&[
        "report",
        cmp.to_str().unwrap(),
        "-o",
        html_path.to_str().unwrap(),
    ]);
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && e.contains("ecmp/summary.json") && !e.contains("panicked"),
        "{e}"
    );
}

#[test]
fn compare_report_says_which_runs_did_not_finish_and_draws_them_hollow() {
    let d = tmpdir("unfinished");
    let compare = |out: &std::path::Path, extra: &[&str]| {
        let mut args = vec![
            "compare",
            "--set",
            "topology.k=4",
            "--set",
            "workload.message_bytes=65536",
            "--schemes",
            "ecmp,host_spray",
            "--out",
            out.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        ok(&lbsim(&args));
    };
    let (cmp, cap) = (d.join("cmp"), d.join("cap"));
    compare(&cmp, &[]);
    compare(&cap, &["--set", "end_time_us=1"]);
    // ecmp finished, host_spray stopped at 1 us with no flow done.
    for f in ["summary.json", "flows.csv"] {
        std::fs::copy(
            cap.join("host_spray").join(f),
            cmp.join("host_spray").join(f),
        )
        .unwrap();
    }
    let s: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(cmp.join("host_spray/summary.json")).unwrap(),
    )
    .unwrap();
    assert!(s["cct_ps"].is_null() && s["flows_completed"] == 0, "{s}");
    let end_over_bound = s["end_ps"].as_f64().unwrap() / s["lower_bound_ps"].as_f64().unwrap();
    let shown = format!("{end_over_bound:.3}");
    let html_path = d.join("cmp.html");
    let html = report(&cmp, &html_path);
    assert!(
        html.contains("<b>1 of 2 runs did not finish</b> (host_spray: 0 of 16 flows by 1.000 us)"),
        "{html}"
    );
    assert!(html.contains("<td>unfinished</td>"), "{html}");
    assert!(
        html.contains(&format!("<td>at least {shown} (end / bound)</td>")),
        "{html}"
    );
    // The bar is there, hollow, at the end over the bound.
    let bar = html
        .split("<rect ")
        .find(|r| r.contains("<title>host_spray:"))
        .expect("a bar for host_spray");
    assert!(bar.contains("fill=\"white\""), "{bar}");
    assert!(
        bar.contains(&format!(
            "host_spray: {} (unfinished: end over bound, a lower estimate)",
            shown.trim_end_matches('0')
        )),
        "{bar}"
    );
}

#[test]
fn run_report_shows_telemetry_from_parquet_and_csv_alike() {
    let d = tmpdir("tel");
    let scenario = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios/llama3-7b-small.toml");
    let mut sections = Vec::new();
    for format in ["parquet", "csv"] {
        let run = d.join(format);
        ok(&lbsim(&[
            "run",
            scenario.to_str().unwrap(),
            "--set",
            "workload.iterations=1",
            "--set",
            "telemetry.enabled=true",
            "--set",
            "telemetry.sample_ns=5000",
            "--set",
            "telemetry.flows=[0, 1]",
            "--set",
            &format!("telemetry.format={format}"),
            "--out",
            run.to_str().unwrap(),
            "--quiet",
        ]));
        let html_path = run.join("report.html");
        let html = report(&run, &html_path);
        for id in [
            "fig-tel-util-ofan",
            "fig-tel-queue-heat-ofan",
            "fig-tel-queue-tor-up-ofan",
            "fig-tel-queue-tor-down-ofan",
            "fig-tel-window-ofan",
        ] {
            assert!(
                html.contains(&format!("id=\"{id}\"")),
                "{format}: missing #{id}"
            );
        }
        assert!(!html.contains("No telemetry"));
        sections.push(html[html.find("<section id=\"telemetry\"").unwrap()..].to_string());
    }
    assert_eq!(
        sections[0], sections[1],
        "the same figures from either format"
    );
}
