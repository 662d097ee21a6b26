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
