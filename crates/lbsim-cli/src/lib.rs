//! The front end's library: everything the `lbsim` binary does that other front ends (the
//! Python package) reuse: loading scenario files, output files, sweeps, reports, guards.

pub mod bench;
pub mod fuzzing;
pub mod guard;
pub mod output;
pub mod paper;
pub mod progress;
pub mod report;
pub mod sweep;
pub mod telemetry;

use std::path::Path;

use anyhow::{Context, Result};
use lbsim::{Origin, ScenarioFile};

/// Reads the scenario file at `path` (the built-in default without one) with `sets` applied:
/// the file and its origin, which error messages name.
pub fn load_scenario(path: Option<&Path>, sets: &[String]) -> Result<(ScenarioFile, Origin)> {
    match path {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read scenario file {}", path.display()))?;
            guard::not_a_sweep_file(path, &text)?;
            let origin = Origin::file(path).with_sets(sets);
            Ok((ScenarioFile::from_toml(&text, sets, &origin)?, origin))
        }
        None => Ok((
            ScenarioFile::builtin(sets)?,
            Origin::builtin().with_sets(sets),
        )),
    }
}
