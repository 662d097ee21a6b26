//! `lbsim export-cm`: writes a scenario's generated workload (flows and triggers) in htsim's
//! connection-matrix format, so the same traffic can be run by htsim or re-imported; with
//! `--dialect uet`, in the Ultra Ethernet fork's dialect (with its failure lines).

use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::{Args, ValueEnum};
use lbsim::failure::Effect;

use crate::{build, load_file, output, ScenarioArgs};

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Dialect {
    /// lbsim's: htsim's format plus trigger delays and several triggers per flow.
    Lbsim,
    /// The Ultra Ethernet htsim fork's: `Triggers`/`Failures` headers, failure lines, no
    /// extensions.
    Uet,
}

#[derive(Args)]
pub struct ExportArgs {
    #[command(flatten)]
    pub scenario: ScenarioArgs,
    /// Output file (.cm).
    #[arg(short = 'o', long = "out")]
    pub out: PathBuf,
    /// Which connection-matrix dialect to write.
    #[arg(long, value_enum, default_value = "lbsim")]
    pub dialect: Dialect,
}

pub fn main(a: ExportArgs) -> Result<()> {
    let (file, origin) = load_file(&a.scenario)?;
    let sc = build(file, &origin)?;
    if (0..sc.flows.len()).any(|f| sc.deps.waits(f) > 1) {
        bail!(
            "a flow of this workload waits for several triggers at once (a Chakra node with \
             several dependencies): connection matrices start a flow at its first trigger, so \
             they cannot express it"
        );
    }
    let text = match a.dialect {
        Dialect::Lbsim => lbsim::workload::connection_matrix::write(
            &sc.flows,
            &sc.deps,
            &sc.flow_ids,
            sc.topology.hosts,
        ),
        Dialect::Uet => {
            let mut fails = Vec::new();
            for f in &sc.failures {
                let up = sc.topology.htsim_agg_uplink_of(&f.name);
                match (up, f.effect, f.at.ps(), f.recover) {
                    (Some(u), Effect::Down, 0, None) => fails.push(u),
                    _ => bail!(
                        "failure of {}: the Ultra Ethernet dialect fails only a fat-tree's \
                         aggregation uplinks, down from the start and for good",
                        f.name
                    ),
                }
            }
            lbsim::workload::connection_matrix::write_uet(
                &sc.flows,
                &sc.deps,
                &sc.flow_ids,
                sc.topology.hosts,
                &fails,
            )
            .map_err(anyhow::Error::msg)?
        }
    };
    output::write_atomic(&a.out, text.as_bytes())?;
    println!(
        "wrote {} flows and {} triggers to {}",
        sc.flows.len(),
        sc.deps.triggers.len(),
        a.out.display()
    );
    Ok(())
}
