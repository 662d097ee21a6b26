//! `lbsim export-cm`: writes a scenario's generated workload (flows and triggers) in htsim's
//! connection-matrix format, so the same traffic can be run by htsim or re-imported.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

use crate::{build, load_file, output, ScenarioArgs};

#[derive(Args)]
pub struct ExportArgs {
    #[command(flatten)]
    pub scenario: ScenarioArgs,
    /// Output file (.cm).
    #[arg(short = 'o', long = "out")]
    pub out: PathBuf,
}

pub fn main(a: ExportArgs) -> Result<()> {
    let (file, origin) = load_file(&a.scenario)?;
    let sc = build(file, &origin)?;
    let text = lbsim::workload::connection_matrix::write(
        &sc.flows,
        &sc.deps,
        &sc.flow_ids,
        sc.topology.hosts,
    );
    output::write_atomic(&a.out, text.as_bytes())?;
    println!(
        "wrote {} flows and {} triggers to {}",
        sc.flows.len(),
        sc.deps.triggers.len(),
        a.out.display()
    );
    Ok(())
}
