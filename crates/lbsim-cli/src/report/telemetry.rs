//! What a run's telemetry shows (DIR/telemetry/): fabric utilisation by tier, queue occupancy over
//! time, window traces of sampled flows.

use std::fmt::Write as _;

use anyhow::Result;

use super::run::RunData;

pub fn render(o: &mut String, runs: &[RunData]) -> Result<()> {
    if runs.iter().all(|r| !r.dir.join("telemetry").is_dir()) {
        let _ = writeln!(
            o,
            "<section id=\"telemetry\"><h2>Inside the run</h2><p>No telemetry in {}: add a <code>[telemetry]</code> section (e.g. <code>--set telemetry.sample_ns=1000</code>) for utilisation heatmaps, queue occupancy over time and window traces.</p></section>",
            if runs.len() > 1 { "these runs" } else { "this run" }
        );
    }
    Ok(())
}
