//! `lbsim queue-scaling`: the mean switch queue against the message length, per scheme, and the
//! slope of log q(m) against log m (the study's finding 4: about 1 for plain round-robin and JSQ,
//! 0.5 for random choice and spraying, 0 for destination rotation).

use std::fmt::Write as _;
use std::path::Path;

use anyhow::{bail, Context, Result};
use rayon::prelude::*;

use lbsim::experiments::{self, QueueScalingPoint, SchemeScaling};
use lbsim::{lb, ScenarioFile};

use crate::output::write_atomic;
use crate::{load_file, ScenarioArgs};

pub struct Options {
    pub schemes: Option<Vec<String>>,
    pub packets: Vec<u64>,
    pub workload: Option<String>,
    pub seeds: u64,
    pub out: Option<std::path::PathBuf>,
    pub jobs: Option<usize>,
    pub force: bool,
}

/// True if the scenario file or an override sets `topology.buffer_bytes`.
fn buffer_given(args: &ScenarioArgs) -> Result<bool> {
    for s in &args.sets {
        let (path, _) = lbsim::scenario::parse_set(s)?;
        if path == ["topology", "buffer_bytes"] {
            return Ok(true);
        }
    }
    if let Some(p) = &args.scenario {
        let text = std::fs::read_to_string(p)
            .with_context(|| format!("cannot read scenario file {}", p.display()))?;
        let given = toml::from_str::<toml::Table>(&text)
            .ok()
            .and_then(|t| t.get("topology")?.get("buffer_bytes").cloned())
            .is_some();
        return Ok(given);
    }
    Ok(false)
}

pub fn run(args: &ScenarioArgs, opt: Options) -> Result<()> {
    if opt.packets.is_empty() || opt.packets.contains(&0) {
        bail!("--packets: give one or more positive message lengths in packets");
    }
    let cap = lbsim::scenario::limits::MESSAGE_PACKETS;
    if let Some(m) = opt.packets.iter().find(|&&m| m > cap) {
        bail!("--packets {m}: a message may have at most {cap} packets");
    }
    if opt.seeds == 0 {
        bail!("--seeds: must be at least 1");
    }
    // This command's own defaults: a buffer that never drops (unless one is given), then the
    // user's overrides, then --workload.
    let mut sets = Vec::new();
    if !buffer_given(args)? {
        sets.push(format!(
            "topology.buffer_bytes={}",
            experiments::QUEUE_SCALING_BUFFER_BYTES
        ));
    }
    sets.extend(args.sets.iter().cloned());
    if let Some(w) = &opt.workload {
        sets.push(format!("workload.kind={w}"));
    }
    let args = ScenarioArgs {
        scenario: args.scenario.clone(),
        sets,
    };
    let (file, origin): (ScenarioFile, _) = load_file(&args)?;
    let schemes: Vec<String> = match opt.schemes {
        Some(v) => v.into_iter().map(|s| s.trim().to_string()).collect(),
        None => lb::scheme_names().into_iter().map(String::from).collect(),
    };
    if schemes.is_empty() {
        bail!("--schemes: empty list");
    }
    for name in &schemes {
        if lb::scheme(name).is_none() {
            bail!(
                "--schemes: unknown scheme `{name}`; valid schemes: {}",
                lb::scheme_names().join(", ")
            );
        }
    }
    if let Some(dir) = &opt.out {
        crate::guard::check_out(dir)?;
    }
    // The longest messages are the largest runs; check them before any scenario is built.
    let mut largest = file.clone();
    let m = opt.packets.iter().copied().max().unwrap_or(1);
    largest.workload.message_bytes = m.saturating_mul(file.packet.payload_bytes as u64);
    if let Some(e) = largest.memory_estimate() {
        let n = schemes.len() * opt.packets.len() * opt.seeds as usize;
        let at_once = crate::guard::concurrency(opt.jobs, n);
        crate::guard::check_memory("queue-scaling", &e, at_once, opt.force)?;
    }
    let runs = experiments::queue_scaling_runs(&file, &origin, &schemes, &opt.packets, opt.seeds)?;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(opt.jobs.unwrap_or(0))
        .build()
        .context("cannot start worker threads")?;
    let points: Vec<QueueScalingPoint> = pool.install(|| {
        runs.par_iter()
            .map(|r| QueueScalingPoint::new(r, &lbsim::run(r.scenario.clone()).summary))
            .collect()
    });
    let curves = experiments::summarize(&points, &schemes, &opt.packets);
    let p = &file.packet;
    print!(
        "{}",
        table(&curves, &file, opt.seeds, p.payload_bytes + p.header_bytes)
    );
    if let Some(dir) = &opt.out {
        write_csvs(dir, &points, &curves)?;
    }
    Ok(())
}

fn table(curves: &[SchemeScaling], file: &ScenarioFile, seeds: u64, wire: u32) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "mean switch queue in packets ({wire} B) by message length m (packets); {} on {:?} k={}, buffer {} B, mean of {seeds} seed(s) from {}",
        file.workload.kind.name(),
        file.topology.kind,
        file.topology.k,
        file.topology.buffer_bytes,
        file.seed
    );
    let _ = write!(o, "{:<18}", "scheme");
    if let Some(c) = curves.first() {
        for m in &c.m {
            let _ = write!(o, " {:>10}", format!("m={m}"));
        }
    }
    let _ = writeln!(o, " {:>7}", "slope");
    for c in curves {
        let _ = write!(o, "{:<18}", c.scheme);
        for q in &c.mean_queue_packets {
            let _ = write!(o, " {:>10.3}", q);
        }
        let slope = c
            .slope
            .map(|s| format!("{s:.2}"))
            .unwrap_or_else(|| "-".into());
        let _ = writeln!(o, " {slope:>7}");
    }
    o
}

fn write_csvs(dir: &Path, points: &[QueueScalingPoint], curves: &[SchemeScaling]) -> Result<()> {
    std::fs::create_dir_all(dir)
        .with_context(|| format!("cannot create output directory {}", dir.display()))?;
    let mut w = csv::Writer::from_writer(Vec::new());
    for p in points {
        w.serialize(p)?;
    }
    write_atomic(
        &dir.join("queue_scaling.csv"),
        &w.into_inner().context("csv")?,
    )?;
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(["scheme", "slope"])?;
    for c in curves {
        let s = c.slope.map(|s| s.to_string()).unwrap_or_default();
        w.write_record([c.scheme.as_str(), s.as_str()])?;
    }
    write_atomic(&dir.join("slopes.csv"), &w.into_inner().context("csv")?)?;
    Ok(())
}
