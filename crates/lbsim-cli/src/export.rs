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

#[derive(Args)]
pub struct ChakraExportArgs {
    #[command(flatten)]
    pub scenario: ScenarioArgs,
    /// Output directory: NAME.RANK.et per rank and comm_groups.json.
    #[arg(short = 'o', long = "out")]
    pub out: PathBuf,
}

/// `lbsim export-chakra`: a `training` workload's per-rank Chakra graphs (or a `chakra`
/// workload's traces as read) as ASTRA-sim-style files `DIR/NAME.RANK.et` and the process
/// groups as `DIR/comm_groups.json`; a `kind = "chakra"` replay of DIR with
/// `chakra_comm_groups = "DIR/comm_groups.json"` replays the same graph.
pub fn chakra(a: ChakraExportArgs) -> Result<()> {
    use lbsim::workload::chakra::{self, proto, CommGroups};
    use lbsim::workload::WorkloadKind;
    let (file, origin) = load_file(&a.scenario)?;
    if !file.jobs.is_empty() {
        bail!("export-chakra writes one workload: this scenario has [[jobs]]");
    }
    let w = file.workload.clone();
    // Built in full first: the same checks as a run, and the fabric to place the ranks on.
    let sc = build(file.clone(), &origin)?;
    let (name, ranks, groups): (&str, Vec<Vec<u8>>, Option<CommGroups>) = match w.kind {
        WorkloadKind::Training => {
            let plan =
                lbsim::workload::training_traces(&w, &sc.topology, &file.traffic(), &origin)?;
            let ranks = plan
                .ranks
                .iter()
                .map(|nodes: &Vec<proto::Node>| chakra::encode("0.0.4", nodes))
                .collect();
            ("training", ranks, Some(plan.groups))
        }
        WorkloadKind::Chakra => {
            let rel = |p: &std::path::Path| match (&origin.dir, p.is_relative()) {
                (Some(dir), true) => dir.join(p),
                _ => p.to_path_buf(),
            };
            let path = rel(w
                .path
                .as_deref()
                .expect("a built chakra workload has a path"));
            let files = chakra::files(&path)?;
            if files.len() == 1 {
                bail!(
                    "workload kind `chakra` with one trace replayed on workload.chakra_ranks \
                     ranks: export-chakra writes one file per rank; the trace is already one"
                );
            }
            let ranks = files
                .iter()
                .map(|f| std::fs::read(f).map_err(|e| anyhow::anyhow!("{}: {e}", f.display())))
                .collect::<Result<Vec<_>>>()?;
            let groups = match &w.chakra_comm_groups {
                Some(g) => Some(CommGroups::load(&rel(g))?),
                None => None,
            };
            ("trace", ranks, groups)
        }
        k => bail!(
            "export-chakra writes workload kinds `training` and `chakra`, not `{}`",
            k.name()
        ),
    };
    std::fs::create_dir_all(&a.out)
        .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", a.out.display()))?;
    // Ranks of an earlier export under the same name that this one does not overwrite would
    // be read as more ranks: remove them. Rank traces under another name are someone else's:
    // refuse rather than delete them (a replay of the directory would mix the two).
    let mut stale = Vec::new();
    for e in std::fs::read_dir(&a.out)? {
        let e = e?;
        let f = e.file_name().to_string_lossy().into_owned();
        let Some((prefix, r)) = f
            .strip_suffix(".et")
            .and_then(|s| s.rsplit_once('.'))
            .and_then(|(p, r)| Some((p.to_string(), r.parse::<usize>().ok()?)))
        else {
            continue;
        };
        if prefix != name {
            bail!(
                "{} holds other rank traces ({f}); a replay of the directory would read them \
                 with these: export to an empty directory or remove them",
                a.out.display()
            );
        }
        if r >= ranks.len() {
            stale.push(e.path());
        }
    }
    for p in stale {
        std::fs::remove_file(p)?;
    }
    for (r, bytes) in ranks.iter().enumerate() {
        output::write_atomic(&a.out.join(format!("{name}.{r}.et")), bytes)?;
    }
    let groups_file = a.out.join("comm_groups.json");
    match &groups {
        Some(g) => output::write_atomic(&groups_file, g.to_json().as_bytes())?,
        None if groups_file.exists() => std::fs::remove_file(&groups_file)?,
        None => {}
    }
    println!(
        "wrote {} rank traces {}/{name}.RANK.et{}",
        ranks.len(),
        a.out.display(),
        if groups.is_some() {
            " and comm_groups.json"
        } else {
            ""
        }
    );
    Ok(())
}
