//! Helpers shared by the scenario tests.
#![allow(dead_code)]

use std::ffi::OsStr;
use std::ops::Deref;
use std::path::{Path, PathBuf};

use lbsim::{Origin, Scenario, ScenarioFile, Simulation};

/// The built-in default with `sets` applied.
pub fn scenario(sets: &[&str]) -> Scenario {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let file = ScenarioFile::builtin(&sets).expect("valid overrides");
    Scenario::build(file, &Origin::builtin()).expect("valid scenario")
}

/// A scenario from TOML text plus overrides.
pub fn scenario_toml(text: &str, sets: &[&str]) -> Scenario {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let file = ScenarioFile::from_toml(text, &sets, &Origin::builtin()).expect("valid scenario");
    Scenario::build(file, &Origin::builtin()).expect("valid scenario")
}

pub fn run(sc: Scenario) -> Simulation {
    let mut sim = Simulation::new(sc);
    sim.run();
    sim
}

/// Packets sent = delivered + dropped + still in the fabric, for data and ACKs; no queue ever
/// held more than its buffer; per-flow counters add up to the totals.
pub fn check_conservation(sim: &Simulation) {
    check_conservation_of(sim, "");
}

/// `check_conservation`, naming the case in failure messages.
pub fn check_conservation_of(sim: &Simulation, what: &str) {
    let c = sim.counters();
    let f = sim.in_flight();
    // A trimmed header sent back to its sender leaves the data and joins the control packets.
    assert_eq!(
        c.data_sent,
        c.data_delivered + c.data_dropped + c.returned + f.data,
        "{what} data: {c:?} {f:?}"
    );
    assert_eq!(
        c.acks_sent,
        c.acks_delivered + c.acks_dropped + f.acks,
        "{what} acks: {c:?} {f:?}"
    );
    // Every stored packet sits on some port: none leaked, none freed twice.
    assert_eq!(
        sim.packets_stored(),
        (f.data + f.acks) as usize,
        "{what}: packet store"
    );
    assert!(
        !sim.max_switch_queue().1,
        "{what}: a queue exceeded its buffer"
    );
    let sent: u64 = sim.flows().iter().map(|f| f.data_packets_sent).sum();
    assert_eq!(sent, c.data_sent, "{what}");
    let dropped: u64 = sim.flows().iter().map(|f| f.packets_dropped).sum();
    assert_eq!(dropped, c.data_dropped, "{what}");
}

/// A fresh directory for one test's files, `temp_dir()/lbsim-<prefix>-<pid>-<name>`; it is
/// removed when dropped, except while the thread panics (the test failed): then it stays, and
/// one line on stderr names it, so the files can be inspected. Derefs to its `Path`.
#[derive(Debug)]
pub struct TempDir(PathBuf);

impl TempDir {
    /// Creates the directory, removing one a previous run left behind. Names must be unique
    /// among tests running at the same time in one test binary.
    pub fn new(prefix: &str, name: &str) -> TempDir {
        let d = std::env::temp_dir().join(format!("lbsim-{prefix}-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display()));
        TempDir(d)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Deref for TempDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for TempDir {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<OsStr> for TempDir {
    fn as_ref(&self) -> &OsStr {
        self.0.as_os_str()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("test failed: its files are kept in {}", self.0.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}
