//! The `lbsim` command line: runs scenarios, compares schemes, and writes results.

mod export;
mod queue_scaling;

use lbsim_cli::{bench, guard, output, paper, progress, report, sweep, telemetry};

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use clap::{Args, Parser, Subcommand};
use rayon::prelude::*;

use lbsim::{lb, Origin, Scenario, ScenarioFile};

/// mimalloc maps its arenas with `madvise(MADV_HUGEPAGE)`, so a run's state (ports, rings,
/// packet slots, the event wheel, flows) sits on 2 MiB pages where the kernel's transparent huge
/// pages are in `madvise` mode (a common default), and the TLB stops missing on every hop.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(
    name = "lbsim",
    version,
    about = "Packet-level simulator for load balancing in AI-training networks"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Args, Clone)]
struct ScenarioArgs {
    /// Scenario file (TOML); without one, the built-in default: the study's 128-host fat-tree,
    /// 800 Gb/s, 2 MiB permutation.
    scenario: Option<PathBuf>,
    /// Override any scenario key, e.g. --set topology.k=4 --set workload.kind=all_to_all
    #[arg(long = "set", value_name = "KEY=VALUE")]
    sets: Vec<String>,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run one configuration; print a one-line summary and optionally write summary.json and flows.csv.
    Run {
        #[command(flatten)]
        scenario: ScenarioArgs,
        /// Write DIR/summary.json and DIR/flows.csv.
        #[arg(long)]
        out: Option<PathBuf>,
        /// Run even if the run is estimated not to fit in memory.
        #[arg(long)]
        force: bool,
        /// No progress on stderr.
        #[arg(long)]
        quiet: bool,
        /// Threads (partitions of the fabric) for this run; the results are the same for any
        /// count. Default: the scenario's `threads`, else every core. Given, the run's window
        /// statistics are printed on stderr.
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=256))]
        threads: Option<u32>,
    },
    /// Run the configuration once per load-balancing scheme and print a comparison table.
    Compare {
        #[command(flatten)]
        scenario: ScenarioArgs,
        /// Comma-separated scheme names (default: all; see `lbsim list`).
        #[arg(long, value_delimiter = ',')]
        schemes: Option<Vec<String>>,
        /// Write DIR/<scheme>/summary.json and flows.csv for each scheme.
        #[arg(long)]
        out: Option<PathBuf>,
        /// Runs in parallel (default: all cores).
        #[arg(long, value_parser = guard::parse_jobs)]
        jobs: Option<usize>,
        /// Run even if the runs at once are estimated not to fit in memory.
        #[arg(long)]
        force: bool,
    },
    /// Write the scenario's generated workload (flows and triggers) as an htsim connection matrix.
    ExportCm(export::ExportArgs),
    /// Write the scenario's training workload (or Chakra traces) as ASTRA-sim-style Chakra
    /// files DIR/NAME.RANK.et and DIR/comm_groups.json.
    ExportChakra(export::ChakraExportArgs),
    /// List load-balancing schemes, workloads and topologies.
    List,
    /// Summarise the scenario's fabric (tiers, ports, rates, oversubscription, bisection, path
    /// counts); with --links, name every link; with --dot, write it as a Graphviz graph instead.
    Topology {
        #[command(flatten)]
        scenario: ScenarioArgs,
        #[arg(long)]
        links: bool,
        /// Print the fabric as a Graphviz graph (`dot -Tsvg`) and nothing else.
        #[arg(long, conflicts_with = "links")]
        dot: bool,
    },
    /// Print the scenario (defaults filled in, overrides applied) as TOML, its file paths
    /// absolute.
    Show {
        #[command(flatten)]
        scenario: ScenarioArgs,
        /// Write it to FILE instead, its file paths relative to FILE's directory.
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
    },
    /// Mean switch queue against message length per scheme, and the log-log slope.
    QueueScaling {
        #[command(flatten)]
        scenario: ScenarioArgs,
        /// Comma-separated scheme names (default: all).
        #[arg(long, value_delimiter = ',')]
        schemes: Option<Vec<String>>,
        /// Message lengths in packets (message_bytes = m x payload).
        #[arg(long, value_delimiter = ',', default_value = "16,64,256,1024,4096")]
        packets: Vec<u64>,
        /// Workload (default: the scenario's).
        #[arg(long, value_parser = ["permutation", "all_to_all"])]
        workload: Option<String>,
        /// Runs per point, seeds seed, seed+1, ...; q is averaged over them.
        #[arg(long, default_value_t = 1)]
        seeds: u64,
        /// Write DIR/queue_scaling.csv (one row per run) and DIR/slopes.csv.
        #[arg(long)]
        out: Option<PathBuf>,
        /// Runs in parallel (default: all cores).
        #[arg(long, value_parser = guard::parse_jobs)]
        jobs: Option<usize>,
        /// Run even if the runs at once are estimated not to fit in memory.
        #[arg(long)]
        force: bool,
    },
    /// Run the fixed benchmark suite (each case in its own process) and report speed and memory.
    Bench {
        /// `quick` (perm-128, a2a-128, a2a-1024, perm-8192) or `full` (adds perm-65536).
        #[arg(long, default_value = "quick")]
        suite: String,
        /// Write DIR/bench.csv and DIR/bench.json.
        #[arg(long)]
        out: Option<PathBuf>,
        /// Run one case in this process and print its row as JSON (used by the suite).
        #[arg(long, hide = true)]
        case: Option<String>,
        /// Threads per case (results are the same for any count).
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=256))]
        threads: u32,
    },
    /// Run the cartesian product of scenario keys (a sweep file) on all cores, on Slurm or in
    /// shards; resumable; writes DIR/results.csv.
    Sweep(sweep::SweepArgs),
    /// Write a self-contained HTML report (inline SVG figures) of sweep results.
    Report(report::ReportArgs),
    /// Run the study's experiments as sweeps, write the report, and check its findings.
    Paper(paper::PaperArgs),
}

fn load_file(args: &ScenarioArgs) -> Result<(ScenarioFile, Origin)> {
    lbsim_cli::load_scenario(args.scenario.as_deref(), &args.sets)
}

fn build(file: ScenarioFile, origin: &Origin) -> Result<Scenario> {
    Ok(Scenario::build(file, origin)?)
}

/// Builds `file` for `runs` runs at once, refusing (unless `force`) what would not fit in
/// memory: estimated from the file before the flows are generated where it can be (an
/// all-to-all on 65,536 hosts would die generating them), else from the built scenario.
fn build_checked(
    file: ScenarioFile,
    origin: &Origin,
    what: &str,
    runs: usize,
    force: bool,
) -> Result<Scenario> {
    let pre = file.memory_estimate();
    if let Some(e) = &pre {
        guard::check_memory(what, e, runs, force)?;
    }
    let sc = build(file, origin)?;
    if pre.is_none() {
        let e = sc.memory_estimate();
        guard::check_memory(what, &e, runs, force)?;
    }
    Ok(sc)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match real_main(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            match e.downcast_ref::<guard::Exit>() {
                Some(x) => ExitCode::from(x.code),
                None => ExitCode::FAILURE,
            }
        }
    }
}

/// `lbsim run`: one run with progress; Ctrl-C or SIGTERM stops it and writes what is done.
fn run_one(
    args: &ScenarioArgs,
    out: Option<&Path>,
    force: bool,
    quiet: bool,
    threads: Option<u32>,
) -> Result<()> {
    let (mut file, origin) = load_file(args)?;
    file.threads = threads.or(file.threads).or_else(|| {
        std::thread::available_parallelism()
            .ok()
            .map(|n| n.get().min(256) as u32)
    });
    let capped = file.end_time_us.is_some();
    if let Some(dir) = out {
        guard::check_out(dir)?;
    }
    let sc = build_checked(file, &origin, "this run", 1, force)?;
    if sc.telemetry.is_some() && out.is_none() {
        eprintln!(
            "note: [telemetry] is on but there is no --out DIR to write it to; not collected"
        );
    }
    let stop = progress::Stop::install()?;
    let mut shown = progress::RunProgress::new(quiet);
    let tel = out.map(telemetry::dir);
    let (res, _) = telemetry::run(sc, tel.as_deref(), &mut |p| {
        shown.update(p);
        stop.signal().is_none()
    })?;
    shown.finish();
    println!("{}", output::one_line(&res.summary));
    if let (Some(_), Some(p)) = (threads, &res.parallel) {
        eprintln!("{}", output::parallel_lines(p));
    }
    if let Some(dir) = out {
        output::write_run(dir, &res)?;
    }
    let s = &res.summary;
    let written = out
        .map(|d| format!("; results so far in {}", d.display()))
        .unwrap_or_default();
    if res.interrupted {
        let (name, code) = match stop.signal() {
            Some(signal_hook::consts::SIGTERM) => ("SIGTERM", guard::EXIT_SIGTERM),
            _ => ("SIGINT", guard::EXIT_SIGINT),
        };
        return Err(guard::Exit {
            code,
            msg: format!(
                "interrupted by {name} at {:.2} us simulated, {}/{} flows done{written}",
                s.end_ps as f64 / 1e6,
                s.flows_completed,
                s.flows
            ),
        }
        .into());
    }
    if s.flows_completed < s.flows && !capped {
        return Err(guard::Exit {
            code: guard::EXIT_UNFINISHED,
            msg: format!(
                "{} of {} flows unfinished when the run ended at {:.2} us (nothing left to \
                 happen, or the automatic cap of a run with failures); set end_time_us to \
                 make a cap expected{written}",
                s.flows - s.flows_completed,
                s.flows,
                s.end_ps as f64 / 1e6
            ),
        }
        .into());
    }
    Ok(())
}

fn real_main(cli: Cli) -> Result<()> {
    match cli.cmd {
        Cmd::Run {
            scenario,
            out,
            force,
            quiet,
            threads,
        } => run_one(&scenario, out.as_deref(), force, quiet, threads),
        Cmd::Compare {
            scenario,
            schemes,
            out,
            jobs,
            force,
        } => compare(&scenario, schemes, out.as_deref(), jobs, force),
        Cmd::ExportCm(a) => export::main(a),
        Cmd::ExportChakra(a) => export::chakra(a),
        Cmd::List => {
            print!("{}", output::list());
            Ok(())
        }
        Cmd::Topology {
            scenario,
            links,
            dot,
        } => {
            let (file, origin) = load_file(&scenario)?;
            let sc = build(file, &origin)?;
            if dot {
                print!("{}", sc.topology.dot());
            } else {
                print!("{}", output::topology(&sc, links));
            }
            Ok(())
        }
        Cmd::Show { scenario, out } => {
            let (mut file, origin) = load_file(&scenario)?;
            build(file.clone(), &origin)?;
            // Standard output may be saved anywhere, so its paths are absolute; a file written
            // here can carry paths relative to itself.
            let base = out.as_deref().map(|f| f.parent().unwrap_or(Path::new("")));
            output::show_paths(&mut file, &origin, base)?;
            let text = output::show(&file);
            match &out {
                Some(f) => output::write_atomic(f, text.as_bytes())?,
                None => print!("{text}"),
            }
            Ok(())
        }
        Cmd::QueueScaling {
            scenario,
            schemes,
            packets,
            workload,
            seeds,
            out,
            jobs,
            force,
        } => queue_scaling::run(
            &scenario,
            queue_scaling::Options {
                schemes,
                packets,
                workload,
                seeds,
                out,
                jobs,
                force,
            },
        ),
        Cmd::Bench {
            suite,
            out,
            case,
            threads,
        } => match case {
            Some(c) => bench::run_child(&c, threads),
            None => bench::run_suite(&suite, out.as_deref(), threads),
        },
        Cmd::Sweep(a) => sweep::main(a),
        Cmd::Report(a) => report::main(a),
        Cmd::Paper(a) => paper::main(a),
    }
}

fn compare(
    args: &ScenarioArgs,
    schemes: Option<Vec<String>>,
    out: Option<&Path>,
    jobs: Option<usize>,
    force: bool,
) -> Result<()> {
    let (file, origin) = load_file(args)?;
    let names: Vec<String> = match schemes {
        Some(v) => v.into_iter().map(|s| s.trim().to_string()).collect(),
        None => lb::scheme_names().into_iter().map(String::from).collect(),
    };
    if names.is_empty() {
        bail!("--schemes: empty list");
    }
    if let Some(dir) = out {
        guard::check_out(dir)?;
    }
    let at_once = guard::concurrency(jobs, names.len());
    // Validate every configuration before running any.
    let mut scenarios = Vec::new();
    for name in &names {
        if lb::scheme(name).is_none() {
            bail!(
                "--schemes: unknown scheme `{name}`; valid schemes: {}",
                lb::scheme_names().join(", ")
            );
        }
        let mut f = file.clone();
        f.load_balancing.scheme = name.clone();
        scenarios.push(build_checked(f, &origin, "compare", at_once, force)?);
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(jobs.unwrap_or(0))
        .build()
        .context("cannot start worker threads")?;
    if out.is_none() && scenarios.iter().any(|s| s.telemetry.is_some()) {
        eprintln!(
            "note: [telemetry] is on but there is no --out DIR to write it to; not collected"
        );
    }
    // Each scheme's telemetry streams into its own DIR/<scheme>/telemetry as it runs.
    let results: Vec<lbsim::RunOutput> = pool.install(|| {
        scenarios
            .into_par_iter()
            .map(|sc| {
                let tel = out.map(|d| telemetry::dir(&d.join(sc.scheme.name)));
                telemetry::run(sc, tel.as_deref(), &mut |_| true).map(|(r, _)| r)
            })
            .collect::<Result<Vec<_>>>()
    })?;
    print!("{}", output::table(&results));
    if let Some(dir) = out {
        for r in &results {
            output::write_run(&dir.join(&r.summary.scheme), r)?;
        }
    }
    Ok(())
}
