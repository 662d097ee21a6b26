//! `lbsim sweep`: the cartesian product of scenario keys, run in parallel, resumable, shardable
//! across machines (Slurm job arrays, Kubernetes Indexed Jobs), merged into one results.csv.
//!
//! Layout of the output directory:
//! - `sweep.json`: the plan (grid keys, every point's values and full scenario, seeds). A re-run
//!   or a shard checks that it plans the same sweep before touching anything.
//! - `points/pNNNN/seed-S/`: one finished run (summary.json, flows.csv, scenario.toml). It is
//!   written under a temporary name and renamed, so it either exists whole or not at all; a
//!   re-run skips it.
//! - `results.csv`: one row per (point, seed): the grid values and every summary.json field.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Instant;

use anyhow::{anyhow, bail, Context, Result};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use lbsim::{Origin, Scenario, ScenarioFile};

use crate::output::{write_atomic, write_run};

/// A grid value that removes the key (e.g. `failure.convergence_us`: absent means "never").
pub const UNSET: &str = "unset";

#[derive(clap::Args, Clone, Debug, Default)]
pub struct SweepArgs {
    /// Sweep file (TOML): `seeds`, `[base]` (or `base_file`), `[grid]`; see sweeps/example.toml.
    pub sweep: Option<PathBuf>,
    /// Runs in parallel (default: all cores).
    #[arg(long, value_parser = crate::guard::parse_jobs)]
    pub jobs: Option<usize>,
    /// Run even if the runs at once are estimated not to fit in memory.
    #[arg(long)]
    pub force: bool,
    /// No progress bar or progress lines on stderr.
    #[arg(long)]
    pub quiet: bool,
    /// Output directory (default: results/<sweep file name>).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Run only share i of N (0 <= i < N) of the runs, e.g. --shard $SLURM_ARRAY_TASK_ID/8;
    /// merge the shards with --collect.
    #[arg(long, value_name = "i/N")]
    pub shard: Option<String>,
    /// Submit the sweep to Slurm as a job array (sbatch) instead of running it here.
    #[arg(long)]
    pub slurm: bool,
    /// Slurm partition.
    #[arg(long, requires = "slurm")]
    pub partition: Option<String>,
    /// At most this many array tasks; the runs are dealt round-robin over them.
    #[arg(long, requires = "slurm", default_value_t = 64)]
    pub array_max: usize,
    /// CPUs per array task (each task runs that many simulations at once).
    #[arg(long, requires = "slurm", default_value_t = 1)]
    pub cpus_per_task: usize,
    /// Block until the job array ends (sbatch --wait), then collect.
    #[arg(long, requires = "slurm")]
    pub wait: bool,
    /// Merge the finished runs in DIR into DIR/results.csv (after sharded runs).
    #[arg(long, value_name = "DIR", conflicts_with_all = ["sweep", "shard", "slurm", "out"])]
    pub collect: Option<PathBuf>,
}

/// The sweep file as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SweepFile {
    #[serde(default = "one")]
    seeds: u64,
    base: Option<toml::Table>,
    base_file: Option<PathBuf>,
    #[serde(default)]
    grid: toml::Table,
    /// Named axes: each value a bundle of keys set together (`[axes.NAME.VALUE]`).
    #[serde(default)]
    axes: toml::Table,
    /// Points whose scenario is refused are left out (listed in sweep.json) instead of
    /// failing the sweep: for grids where some combinations do not apply.
    #[serde(default)]
    skip_invalid: bool,
}

fn one() -> u64 {
    1
}

/// The plan, as stored in `sweep.json`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Manifest {
    pub lbsim_version: String,
    pub sweep_file: String,
    pub seeds: u64,
    /// Grid keys, in column order.
    pub keys: Vec<String>,
    pub points: Vec<PointInfo>,
    /// Points left out by `skip_invalid`: their grid label and why the scenario was refused.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<SkippedPoint>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct SkippedPoint {
    pub id: String,
    pub values: Vec<String>,
    pub reason: String,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct PointInfo {
    /// `p0000`, ...: the directory under `points/`.
    pub id: String,
    /// The grid values, as text, in `keys` order.
    pub values: Vec<String>,
    /// The point's whole scenario (seed = its first seed).
    pub scenario: String,
}

impl Manifest {
    /// Same runs planned (versions and file names may differ).
    fn same_plan(&self, other: &Manifest) -> bool {
        self.seeds == other.seeds && self.keys == other.keys && self.points == other.points
    }

    pub fn seeds_of(&self, p: &PointInfo) -> Result<Vec<u64>> {
        let f: ScenarioFile = toml::from_str(&p.scenario)
            .with_context(|| format!("sweep.json: point {}: bad scenario", p.id))?;
        Ok((0..self.seeds).map(|r| f.seed.wrapping_add(r)).collect())
    }
}

/// A sweep ready to run: the plan plus what is needed to build each point's scenario.
pub struct Plan {
    pub manifest: Manifest,
    files: Vec<ScenarioFile>,
    origin: Origin,
    /// The largest point's memory estimate (None: not known before building, e.g. a
    /// connection matrix, or every point was checked when built).
    peak: Option<lbsim::memory::MemoryEstimate>,
    force: bool,
}

/// One (point, seed) run.
struct RunSpec {
    point: usize,
    seed: u64,
}

/// Renders a grid value for CSV cells and labels: strings bare, numbers as written.
pub fn value_text(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Flattens `[grid]` into (dotted key, values) as a bundle is flattened (nested tables, as
/// `a.b = [..]` unquoted or `failures.0.x`, become dotted keys); each must be a list.
fn flatten_grid(t: &toml::Table) -> Result<Vec<(String, Vec<toml::Value>)>> {
    let mut leaves = Vec::new();
    flatten_bundle("", t, &mut leaves);
    leaves
        .into_iter()
        .map(|(key, v)| match v {
            toml::Value::Array(a) if a.is_empty() => {
                bail!("grid key `{key}`: empty list; give at least one value")
            }
            toml::Value::Array(a) => Ok((key, a)),
            other => bail!(
                "grid key `{key}`: expected a list of values, got `{other}` (write {key} = [{other}])"
            ),
        })
        .collect()
}

/// One value of a named axis: its name, the scenario file whose sections it puts in place of
/// the base's, and the (dotted key, value) pairs it then sets, in order.
type Bundle = (String, Option<toml::Table>, Vec<(String, toml::Value)>);

/// Flattens a bundle's table into (dotted key, value): nested tables become dotted keys, any
/// other value (a list included) is set whole.
fn flatten_bundle(prefix: &str, t: &toml::Table, out: &mut Vec<(String, toml::Value)>) {
    for (k, v) in t {
        let key = if prefix.is_empty() {
            k.clone()
        } else {
            format!("{prefix}.{k}")
        };
        match v {
            toml::Value::Table(sub) => flatten_bundle(&key, sub, out),
            other => out.push((key, other.clone())),
        }
    }
}

/// Reads `[axes]`: per axis its name and values, each value a bundle of keys. A bundle's
/// `file = "x.toml"` (relative to the sweep file) is a scenario file each of whose sections
/// (and top-level keys) replaces the base's whole; its other keys are set after, so they win.
fn read_axes(axes: &toml::Table, dir: Option<&Path>) -> Result<Vec<(String, Vec<Bundle>)>> {
    let mut out = Vec::new();
    for (axis, values) in axes {
        let toml::Value::Table(values) = values else {
            bail!("axis `{axis}`: expected a table of named values ([axes.{axis}.NAME])");
        };
        if values.is_empty() {
            bail!("axis `{axis}`: no values; give at least one [axes.{axis}.NAME]");
        }
        let mut bundles = Vec::new();
        for (name, v) in values {
            let toml::Value::Table(t) = v else {
                bail!("axis `{axis}` value `{name}`: expected a table of scenario keys, got `{v}`");
            };
            let mut t = t.clone();
            let mut keys = Vec::new();
            let mut file = None;
            if let Some(f) = t.remove("file") {
                let Some(f) = f.as_str() else {
                    bail!("axis `{axis}` value `{name}`: `file` must be a path (a string)");
                };
                let f = match dir {
                    Some(d) if Path::new(f).is_relative() => d.join(f),
                    _ => PathBuf::from(f),
                };
                let text = std::fs::read_to_string(&f).with_context(|| {
                    format!("axis `{axis}` value `{name}`: cannot read {}", f.display())
                })?;
                let origin = Origin::file(&f);
                ScenarioFile::from_toml(&text, &[], &origin)?;
                let ft: toml::Table =
                    toml::from_str(&text).map_err(|e| anyhow!("{}: {e}", f.display()))?;
                file = Some(ft);
            }
            flatten_bundle("", &t, &mut keys);
            bundles.push((name.clone(), file, keys));
        }
        out.push((axis.clone(), bundles));
    }
    Ok(out)
}

/// Sets `path` (dotted; numeric parts index arrays, one past the end appends) in `table`, as
/// `--set` does (`lbsim::scenario::set_path`). The string `unset` removes the key.
pub fn set_path(table: &mut toml::Table, path: &str, value: toml::Value) -> Result<(), String> {
    let parts: Vec<&str> = path.split('.').map(str::trim).collect();
    let value = (value.as_str() != Some(UNSET)).then_some(value);
    lbsim::scenario::set_path(table, &parts, value)
}

impl Plan {
    /// Reads and validates a sweep file: every point's scenario is built once, so a bad key or
    /// value is reported (naming the key and point) before anything runs.
    /// With `force`, points estimated not to fit in memory are run anyway.
    pub fn load(path: &Path, force: bool) -> Result<Plan> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read sweep file {}", path.display()))?;
        Self::from_text(&text, path, force)
    }

    pub fn from_text(text: &str, path: &Path, force: bool) -> Result<Plan> {
        let name = path.display().to_string();
        crate::guard::not_a_scenario_file(path, text)?;
        let sf: SweepFile =
            toml::from_str(text).map_err(|e| anyhow!("{name}: {}", e.to_string().trim_end()))?;
        if sf.seeds == 0 {
            bail!("{name}: `seeds` must be at least 1");
        }
        let dir = path.parent().map(Path::to_path_buf);
        let (base, origin) = match (sf.base, sf.base_file) {
            (Some(_), Some(_)) => bail!("{name}: give either [base] or base_file, not both"),
            (Some(t), None) => (t, Origin::named(&format!("{name} [base]"), dir.clone())),
            (None, Some(f)) => {
                let f = match &dir {
                    Some(d) if f.is_relative() => d.join(f),
                    _ => f,
                };
                let text = std::fs::read_to_string(&f)
                    .with_context(|| format!("{name}: base_file: cannot read {}", f.display()))?;
                let origin = Origin::file(&f);
                // Parse as a scenario first for line-numbered errors.
                ScenarioFile::from_toml(&text, &[], &origin)?;
                let t: toml::Table =
                    toml::from_str(&text).map_err(|e| anyhow!("{}: {e}", f.display()))?;
                (t, origin)
            }
            (None, None) => (toml::Table::new(), Origin::named(&name, dir.clone())),
        };
        ScenarioFile::from_table(base.clone(), &origin, "base")?;
        let grid = flatten_grid(&sf.grid).map_err(|e| anyhow!("{name}: {e}"))?;
        let axes = read_axes(&sf.axes, dir.as_deref()).map_err(|e| anyhow!("{name}: {e}"))?;
        if let Some((a, _)) = axes.iter().find(|(a, _)| grid.iter().any(|(k, _)| k == a)) {
            bail!("{name}: `{a}` is both an axis and a grid key");
        }
        // Axes come first (slowest), then the grid keys.
        let keys: Vec<String> = axes
            .iter()
            .map(|(a, _)| a.clone())
            .chain(grid.iter().map(|(k, _)| k.clone()))
            .collect();
        let dims: Vec<usize> = axes
            .iter()
            .map(|(_, b)| b.len())
            .chain(grid.iter().map(|(_, v)| v.len()))
            .collect();
        let n: usize = dims.iter().product();
        if n > 1_000_000 {
            bail!("{name}: the grid has {n} points; at most 1,000,000");
        }
        let mut points = Vec::with_capacity(n);
        let mut files = Vec::with_capacity(n);
        let mut skipped = Vec::new();
        let mut peak: Option<lbsim::memory::MemoryEstimate> = None;
        for i in 0..n {
            // Mixed radix, first key slowest: points come out in the grid's own order.
            let mut rem = i;
            let mut idx = vec![0; dims.len()];
            for (j, &d) in dims.iter().enumerate().rev() {
                idx[j] = rem % d;
                rem /= d;
            }
            let mut t = base.clone();
            let mut values = Vec::new();
            let mut label = Vec::new();
            for (j, (axis, bundles)) in axes.iter().enumerate() {
                let (value, file, sets) = &bundles[idx[j]];
                label.push(format!("{axis}={value}"));
                values.push(value.clone());
                for (k, v) in file.iter().flatten() {
                    t.insert(k.clone(), v.clone());
                }
                for (key, v) in sets {
                    set_path(&mut t, key, v.clone()).map_err(|e| {
                        anyhow!("{name}: axis `{axis}` value `{value}`: key `{key}`: {e}")
                    })?;
                }
            }
            let idx = &idx[axes.len()..];
            for (j, (key, vals)) in grid.iter().enumerate() {
                let v = vals[idx[j]].clone();
                label.push(format!("{key}={}", value_text(&v)));
                values.push(value_text(&v));
                set_path(&mut t, key, v).map_err(|e| anyhow!("{name}: grid key `{key}`: {e}"))?;
            }
            let id = format!("p{i:04}");
            let at = format!("grid point {id} ({})", label.join(", "));
            // A refused point fails the sweep, or with `skip_invalid` is listed and left out.
            let mut skip = |e: anyhow::Error, values: Vec<String>| -> Result<()> {
                if !sf.skip_invalid {
                    return Err(e);
                }
                skipped.push(SkippedPoint {
                    id: id.clone(),
                    values,
                    reason: e.to_string(),
                });
                Ok(())
            };
            let file = match ScenarioFile::from_table(t, &origin, &at) {
                Ok(f) => f,
                Err(e) => {
                    skip(
                        anyhow!("{e}{}", unknown_hint(&e.to_string(), &keys)),
                        values,
                    )?;
                    continue;
                }
            };
            // Before building: a point too large to build at all must not abort the process.
            let est = file.memory_estimate();
            if let Some(e) = &est {
                crate::guard::check_memory(&format!("{name}: {at}"), e, 1, force)?;
            }
            let sc = match Scenario::build(file.clone(), &origin) {
                Ok(sc) => sc,
                Err(e) => {
                    skip(anyhow!("{name}: {at}: {e}"), values)?;
                    continue;
                }
            };
            let est = match est {
                Some(e) => e,
                None => {
                    let e = sc.memory_estimate();
                    crate::guard::check_memory(&format!("{name}: {at}"), &e, 1, force)?;
                    e
                }
            };
            drop(sc);
            if peak.is_none_or(|p| p.bytes < est.bytes) {
                peak = Some(est);
            }
            points.push(PointInfo {
                id,
                values,
                scenario: file.to_toml(),
            });
            files.push(file);
        }
        Ok(Plan {
            manifest: Manifest {
                lbsim_version: env!("CARGO_PKG_VERSION").to_string(),
                sweep_file: name,
                seeds: sf.seeds,
                keys,
                points,
                skipped,
            },
            files,
            origin,
            peak,
            force,
        })
    }

    fn runs(&self) -> Vec<RunSpec> {
        let mut v = Vec::new();
        for (i, f) in self.files.iter().enumerate() {
            for r in 0..self.manifest.seeds {
                v.push(RunSpec {
                    point: i,
                    seed: f.seed.wrapping_add(r),
                });
            }
        }
        v
    }
}

fn unknown_hint(msg: &str, keys: &[String]) -> String {
    if msg.contains("unknown field") && !keys.is_empty() {
        " (an unknown grid key? grid keys are scenario key paths as `lbsim show` prints them)"
            .into()
    } else {
        String::new()
    }
}

pub fn run_dir(dir: &Path, point: &str, seed: u64) -> PathBuf {
    dir.join("points").join(point).join(format!("seed-{seed}"))
}

fn is_done(dir: &Path, point: &str, seed: u64) -> bool {
    run_dir(dir, point, seed).join("summary.json").is_file()
}

/// Writes `sweep.json`, or checks that the one there plans the same sweep.
pub fn write_or_check_manifest(dir: &Path, m: &Manifest) -> Result<()> {
    std::fs::create_dir_all(dir)
        .with_context(|| format!("cannot create output directory {}", dir.display()))?;
    let path = dir.join("sweep.json");
    if path.exists() {
        let old = read_manifest(dir)?;
        if !old.same_plan(m) {
            bail!(
                "{} holds a different sweep (from {}): its grid, seeds or scenarios differ; use another --out or remove it",
                dir.display(),
                old.sweep_file
            );
        }
        return Ok(());
    }
    let mut json = serde_json::to_vec_pretty(m)?;
    json.push(b'\n');
    // Shards may race to create it: a per-process temporary name, identical contents.
    crate::output::write_atomic(&path, &json)
}

pub fn read_manifest(dir: &Path) -> Result<Manifest> {
    let path = dir.join("sweep.json");
    let text = std::fs::read_to_string(&path).with_context(|| {
        format!(
            "cannot read {} (is {} a sweep output directory?)",
            path.display(),
            dir.display()
        )
    })?;
    serde_json::from_str(&text).with_context(|| format!("{}: not a sweep plan", path.display()))
}

/// Where a run is written before it is renamed into place: the process id in the name says
/// whose it is, and keeps two processes from writing into one directory.
pub fn tmp_run_dir(parent: &Path, seed: u64) -> PathBuf {
    parent.join(format!(".seed-{seed}.tmp-{}", std::process::id()))
}

/// Runs one (point, seed) into a temporary directory and renames it into place.
fn execute(plan: &Plan, dir: &Path, r: &RunSpec) -> Result<()> {
    let p = &plan.manifest.points[r.point];
    let mut f = plan.files[r.point].clone();
    f.seed = r.seed;
    let sc = Scenario::build(f.clone(), &plan.origin)
        .map_err(|e| anyhow!("point {} seed {}: {e}", p.id, r.seed))?;
    let res = lbsim::run(sc);
    let fin = run_dir(dir, &p.id, r.seed);
    let parent = fin.parent().expect("run dir has a parent");
    std::fs::create_dir_all(parent)
        .with_context(|| format!("cannot create {}", parent.display()))?;
    // Leftovers of interrupted attempts at this same run are garbage: start clean. The
    // directory lock makes this process the only one running this run (shards of one sweep
    // split the runs between them), so every `.seed-S.tmp*` here is a dead attempt's.
    let stale = format!(".seed-{}.tmp", r.seed);
    for e in std::fs::read_dir(parent)
        .with_context(|| format!("cannot read {}", parent.display()))?
        .flatten()
    {
        if e.file_name().to_string_lossy().starts_with(&stale) {
            std::fs::remove_dir_all(e.path())
                .with_context(|| format!("cannot remove {}", e.path().display()))?;
        }
    }
    let tmp = tmp_run_dir(parent, r.seed);
    write_run(&tmp, &res)?;
    write_atomic(&tmp.join("scenario.toml"), f.to_toml().as_bytes())?;
    if let Err(e) = std::fs::rename(&tmp, &fin) {
        if fin.join("summary.json").is_file() {
            // Someone else finished the same run meanwhile; theirs stands.
            let _ = std::fs::remove_dir_all(&tmp);
        } else {
            return Err(e).with_context(|| format!("cannot rename into {}", fin.display()));
        }
    }
    Ok(())
}

/// Parses `i/N`.
pub fn parse_shard(s: &str) -> Result<(usize, usize)> {
    let err = || anyhow!("--shard {s}: expected i/N with 0 <= i < N, e.g. 0/4");
    let (i, n) = s.split_once('/').ok_or_else(err)?;
    let i: usize = i.trim().parse().map_err(|_| err())?;
    let n: usize = n.trim().parse().map_err(|_| err())?;
    if n == 0 || i >= n {
        bail!("--shard {s}: out of range: need 0 <= i < N and N >= 1");
    }
    Ok((i, n))
}

pub fn main(a: SweepArgs) -> Result<()> {
    if let Some(dir) = &a.collect {
        let n = collect(dir)?;
        println!("{n} runs merged into {}", dir.join("results.csv").display());
        return Ok(());
    }
    let Some(path) = &a.sweep else {
        bail!("give a sweep file (lbsim sweep SWEEP.toml), or --collect DIR");
    };
    let out = a
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("results").join(path.file_stem().unwrap_or_default()));
    let shard = a.shard.as_deref().map(parse_shard).transpose()?;
    let plan = Plan::load(path, a.force)?;
    let skipped = &plan.manifest.skipped;
    if !skipped.is_empty() && !a.quiet {
        eprintln!(
            "{} of {} grid points left out (skip_invalid; sweep.json lists each with its reason), e.g. {} ({}): {}",
            skipped.len(),
            skipped.len() + plan.manifest.points.len(),
            skipped[0].id,
            skipped[0].values.join(", "),
            skipped[0].reason.lines().last().unwrap_or_default()
        );
    }
    if a.slurm {
        return submit_slurm(&a, path, &out, &plan);
    }
    crate::guard::check_out(&out)?;
    let s = run_plan(&plan, &out, a.jobs, shard, a.quiet)?;
    match shard {
        Some((i, n)) => println!(
            "shard {i}/{n}: {} runs done, {} already finished; merge with: lbsim sweep --collect {}",
            s.ran,
            s.skipped,
            out.display()
        ),
        None => {
            let rows = collect(&out)?;
            println!(
                "{} runs done, {} already finished, in {:.1} s; {rows} rows in {}",
                s.ran,
                s.skipped,
                s.seconds,
                out.join("results.csv").display()
            );
        }
    }
    Ok(())
}

pub struct RunStats {
    pub ran: usize,
    pub skipped: usize,
    pub seconds: f64,
}

/// Runs the plan's unfinished runs (of one shard, if given) into `out`.
pub fn run_plan(
    plan: &Plan,
    out: &Path,
    jobs: Option<usize>,
    shard: Option<(usize, usize)>,
    quiet: bool,
) -> Result<RunStats> {
    crate::guard::check_out(out)?;
    // Held until this function returns, also on error.
    let _lock = crate::guard::lock_dir(out, shard)?;
    write_or_check_manifest(out, &plan.manifest)?;
    let all = plan.runs();
    let mine: Vec<&RunSpec> = all
        .iter()
        .enumerate()
        .filter(|(k, _)| shard.is_none_or(|(i, n)| k % n == i))
        .map(|(_, r)| r)
        .collect();
    let todo: Vec<&RunSpec> = mine
        .iter()
        .copied()
        .filter(|r| !is_done(out, &plan.manifest.points[r.point].id, r.seed))
        .collect();
    let skipped = mine.len() - todo.len();
    if let Some(e) = &plan.peak {
        let at_once = crate::guard::concurrency(jobs, todo.len());
        crate::guard::check_memory("the sweep's largest point", e, at_once, plan.force)?;
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(jobs.unwrap_or(0))
        .build()
        .context("cannot start worker threads")?;
    // indicatif draws nothing when stderr is not a terminal.
    let target = if quiet {
        ProgressDrawTarget::hidden()
    } else {
        ProgressDrawTarget::stderr()
    };
    let pb = ProgressBar::with_draw_target(Some(todo.len() as u64), target);
    pb.set_style(
        ProgressStyle::with_template("{bar:30} {pos}/{len} runs, {elapsed} elapsed, ETA {eta}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let t0 = Instant::now();
    let done = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let results: Vec<Result<()>> = std::thread::scope(|s| {
        // Logs (Slurm, nohup) see no bar: give them a line every few seconds instead.
        if crate::progress::plain_lines(quiet) && !todo.is_empty() {
            s.spawn(|| crate::progress::sweep_ticker(&done, todo.len(), &stop));
        }
        let results = pool.install(|| {
            todo.par_iter()
                .with_max_len(1)
                .map(|r| {
                    let res = execute(plan, out, r);
                    pb.inc(1);
                    done.fetch_add(1, Ordering::Relaxed);
                    res
                })
                .collect()
        });
        stop.store(true, Ordering::Relaxed);
        results
    });
    pb.finish_and_clear();
    let failed: Vec<String> = results
        .into_iter()
        .filter_map(|r| r.err().map(|e| format!("{e:#}")))
        .collect();
    if let Some(first) = failed.first() {
        bail!(
            "{} of {} runs failed; first: {first}",
            failed.len(),
            todo.len()
        );
    }
    Ok(RunStats {
        ran: todo.len(),
        skipped,
        seconds: t0.elapsed().as_secs_f64(),
    })
}

/// One finished run, as read back from its directory.
pub struct RunRecord {
    pub point: usize,
    pub seed: u64,
    pub summary: serde_json::Map<String, serde_json::Value>,
}

/// Reads every run of the plan in `dir`, in point then seed order; also returns the missing ones.
pub fn read_runs(dir: &Path, m: &Manifest) -> Result<(Vec<RunRecord>, Vec<String>)> {
    let mut runs = Vec::new();
    let mut missing = Vec::new();
    for (i, p) in m.points.iter().enumerate() {
        for seed in m.seeds_of(p)? {
            let f = run_dir(dir, &p.id, seed).join("summary.json");
            if !f.is_file() {
                missing.push(format!("{} seed {seed}", p.id));
                continue;
            }
            let text = std::fs::read_to_string(&f)
                .with_context(|| format!("cannot read {}", f.display()))?;
            let v: serde_json::Value = serde_json::from_str(&text)
                .with_context(|| format!("{}: not JSON", f.display()))?;
            let serde_json::Value::Object(summary) = v else {
                bail!("{}: not a summary object", f.display());
            };
            runs.push(RunRecord {
                point: i,
                seed,
                summary,
            });
        }
    }
    Ok((runs, missing))
}

pub fn json_cell(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::Null => String::new(),
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Array(a) => a.iter().map(json_cell).collect::<Vec<_>>().join(";"),
        other => other.to_string(),
    }
}

/// Merges the finished runs into `dir/results.csv`; every planned run must be there.
pub fn collect(dir: &Path) -> Result<usize> {
    let m = read_manifest(dir)?;
    let (runs, missing) = read_runs(dir, &m)?;
    if !missing.is_empty() {
        bail!(
            "{}: {} of {} runs are not finished (first: {}); run the sweep (or its missing shards) again, it skips finished runs",
            dir.display(),
            missing.len(),
            missing.len() + runs.len(),
            missing[..missing.len().min(5)].join(", ")
        );
    }
    // Summary columns in the order summary.json has them (first run first), then any others;
    // the nested per-collective records go to collectives.csv instead, one row each.
    let mut fields: Vec<String> = Vec::new();
    for r in &runs {
        for k in r.summary.keys() {
            if k != "collectives" && !fields.contains(k) {
                fields.push(k.clone());
            }
        }
    }
    let mut w = csv::Writer::from_writer(Vec::new());
    let mut header = vec!["point".to_string()];
    header.extend(m.keys.iter().cloned());
    header.push("run_seed".into());
    header.extend(fields.iter().cloned());
    w.write_record(&header)?;
    for r in &runs {
        let p = &m.points[r.point];
        let mut row = vec![p.id.clone()];
        row.extend(p.values.iter().cloned());
        row.push(r.seed.to_string());
        for f in &fields {
            row.push(r.summary.get(f).map(json_cell).unwrap_or_default());
        }
        w.write_record(&row)?;
    }
    write_atomic(&dir.join("results.csv"), &w.into_inner().context("csv")?)?;
    collect_collectives(dir, &m, &runs)?;
    Ok(runs.len())
}

/// `collectives.csv`: every run's collectives.csv rows, each prefixed by the run's point, grid
/// values and seed (as results.csv's rows are), for sweeps of collective workloads. Runs whose
/// collectives.csv lacks the `comm` column (replays without process groups, generated
/// collectives) leave it empty when other runs have it.
fn collect_collectives(dir: &Path, m: &Manifest, runs: &[RunRecord]) -> Result<()> {
    let mut files: Vec<(usize, u64, PathBuf, csv::StringRecord)> = Vec::new();
    for r in runs {
        let p = &m.points[r.point];
        let f = run_dir(dir, &p.id, r.seed).join("collectives.csv");
        if !f.is_file() {
            continue;
        }
        let mut rd =
            csv::Reader::from_path(&f).with_context(|| format!("cannot read {}", f.display()))?;
        let cols = rd.headers()?.clone();
        files.push((r.point, r.seed, f, cols));
    }
    let Some(header) = files
        .iter()
        .map(|x| &x.3)
        .find(|h| h.iter().any(|c| c == "comm"))
        .or(files.first().map(|x| &x.3))
        .cloned()
    else {
        return Ok(());
    };
    let mut w = csv::Writer::from_writer(Vec::new());
    let mut h = vec!["point".to_string()];
    h.extend(m.keys.iter().cloned());
    h.push("run_seed".into());
    h.extend(header.iter().map(str::to_string));
    w.write_record(&h)?;
    for (point, seed, f, cols) in &files {
        let p = &m.points[*point];
        let without: Vec<&str> = header.iter().filter(|c| *c != "comm").collect();
        let same = *cols == header;
        if !same && cols.iter().collect::<Vec<_>>() != without {
            bail!(
                "{}: its columns differ from the other runs' collectives.csv",
                f.display()
            );
        }
        let mut rd =
            csv::Reader::from_path(f).with_context(|| format!("cannot read {}", f.display()))?;
        for rec in rd.records() {
            let rec = rec.with_context(|| format!("{}: bad row", f.display()))?;
            let mut row = vec![p.id.clone()];
            row.extend(p.values.iter().cloned());
            row.push(seed.to_string());
            if same {
                row.extend(rec.iter().map(str::to_string));
            } else {
                // The missing `comm` left empty, every other column by position.
                let mut it = rec.iter();
                for c in header.iter() {
                    row.push(if c == "comm" {
                        String::new()
                    } else {
                        it.next().unwrap_or_default().to_string()
                    });
                }
            }
            w.write_record(&row)?;
        }
    }
    write_atomic(
        &dir.join("collectives.csv"),
        &w.into_inner().context("csv")?,
    )?;
    Ok(())
}

fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

fn abs(p: &Path) -> Result<PathBuf> {
    std::path::absolute(p).with_context(|| format!("cannot resolve {}", p.display()))
}

/// Writes `out/slurm/sweep.sbatch` (a job array whose task i runs shard i/N) and submits it.
fn submit_slurm(a: &SweepArgs, sweep: &Path, out: &Path, plan: &Plan) -> Result<()> {
    if a.array_max == 0 {
        bail!("--array-max: must be at least 1");
    }
    if a.cpus_per_task == 0 {
        bail!("--cpus-per-task: must be at least 1");
    }
    write_or_check_manifest(out, &plan.manifest)?;
    let runs = plan.runs().len();
    let n = a.array_max.min(runs).max(1);
    let exe = std::env::current_exe().context("cannot find the lbsim executable")?;
    let (sweep, out_abs) = (abs(sweep)?, abs(out)?);
    let logs = out_abs.join("slurm");
    std::fs::create_dir_all(&logs).with_context(|| format!("cannot create {}", logs.display()))?;
    let mut s = String::from("#!/bin/bash\n");
    s.push_str("#SBATCH --job-name=lbsim-sweep\n");
    s.push_str(&format!("#SBATCH --array=0-{}\n", n - 1));
    s.push_str(&format!("#SBATCH --cpus-per-task={}\n", a.cpus_per_task));
    s.push_str(&format!("#SBATCH --output={}/%A_%a.out\n", logs.display()));
    if let Some(p) = &a.partition {
        s.push_str(&format!("#SBATCH --partition={p}\n"));
    }
    s.push_str("set -euo pipefail\n");
    s.push_str(&format!(
        "exec {} sweep {} --out {} --shard \"$SLURM_ARRAY_TASK_ID/{n}\" --jobs \"${{SLURM_CPUS_PER_TASK:-1}}\"\n",
        sh_quote(&exe.to_string_lossy()),
        sh_quote(&sweep.to_string_lossy()),
        sh_quote(&out_abs.to_string_lossy()),
    ));
    let script = logs.join("sweep.sbatch");
    write_atomic(&script, s.as_bytes())?;
    let mut cmd = Command::new("sbatch");
    cmd.arg("--parsable");
    if a.wait {
        cmd.arg("--wait");
    }
    cmd.arg(&script);
    let o = cmd.output().map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            anyhow!(
                "--slurm: `sbatch` not found on PATH (is this a Slurm login node?); the job script is at {}; without Slurm, run shards with --shard i/N",
                script.display()
            )
        } else {
            anyhow!("--slurm: cannot run sbatch: {e}")
        }
    })?;
    let stdout = String::from_utf8_lossy(&o.stdout);
    let job = stdout.trim().split(';').next().unwrap_or("").to_string();
    if !o.status.success() {
        bail!(
            "sbatch {} failed ({}): {}{}",
            script.display(),
            o.status,
            String::from_utf8_lossy(&o.stderr).trim(),
            if job.is_empty() {
                String::new()
            } else {
                format!(" (job {job})")
            }
        );
    }
    println!(
        "submitted Slurm job array {job} ({n} tasks, {runs} runs) from {}",
        script.display()
    );
    if a.wait {
        let rows = collect(out)?;
        println!("{rows} rows in {}", out.join("results.csv").display());
    } else {
        println!(
            "when `squeue -j {job}` is empty: lbsim sweep --collect {}",
            out.display()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(s: &str) -> toml::Table {
        toml::from_str(s).unwrap()
    }

    #[test]
    fn set_path_tables_arrays_and_unset() {
        let mut t = table("[[failures]]\nkind = \"down\"\nrandom_fraction = 0.01\n[failure]\nconvergence_us = 5.0\n");
        set_path(&mut t, "failures.0.random_fraction", 0.02.into()).unwrap();
        set_path(&mut t, "topology.k", 4.into()).unwrap();
        set_path(&mut t, "failure.convergence_us", UNSET.into()).unwrap();
        assert_eq!(t["failures"][0]["random_fraction"].as_float(), Some(0.02));
        assert_eq!(t["topology"]["k"].as_integer(), Some(4));
        assert!(t["failure"].get("convergence_us").is_none());
        set_path(&mut t, "failures.1.kind", "down".into()).unwrap();
        assert_eq!(t["failures"].as_array().unwrap().len(), 2);
        let e = set_path(&mut t, "failures.5.kind", "down".into()).unwrap_err();
        assert!(e.contains("out of range") && e.contains("2 entries"), "{e}");
        let e = set_path(&mut t, "failures.x.kind", "down".into()).unwrap_err();
        assert!(e.contains("index"), "{e}");
        let e = set_path(&mut t, "topology.k.x", 1.into()).unwrap_err();
        assert!(e.contains("topology.k"), "{e}");
    }

    #[test]
    fn shard_specs() {
        assert_eq!(parse_shard("0/1").unwrap(), (0, 1));
        assert_eq!(parse_shard("3/4").unwrap(), (3, 4));
        for bad in ["4/4", "0/0", "x/2", "1", "-1/2"] {
            assert!(parse_shard(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn grid_order_is_first_key_slowest() {
        let p = Plan::from_text(
            "[base.topology]\nk = 4\n[grid]\n\"load_balancing.scheme\" = [\"ecmp\", \"host_spray\"]\n\"workload.message_bytes\" = [4096, 8192, 16384]\n",
            Path::new("t.toml"),
            false,
        )
        .unwrap();
        let v: Vec<String> = p
            .manifest
            .points
            .iter()
            .map(|p| p.values.join(","))
            .collect();
        assert_eq!(v[0], "ecmp,4096");
        assert_eq!(v[1], "ecmp,8192");
        assert_eq!(v[3], "host_spray,4096");
        assert_eq!(v.len(), 6);
    }

    #[test]
    fn axes_set_bundles_of_keys_before_the_grid() {
        let dir = std::env::temp_dir().join(format!("lbsim-axes-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        // A fabric file whose [topology] replaces the base's whole (its k would be refused
        // beside kind = "leaf_spine" if merged key by key).
        std::fs::write(
            dir.join("ls.toml"),
            "[topology]\nkind = \"leaf_spine\"\nleaves = 2\nhosts_per_leaf = 2\nspines = 1\n",
        )
        .unwrap();
        let text = "[base.topology]\nk = 4\n[grid]\n\"load_balancing.scheme\" = [\"ecmp\", \"host_spray\"]\n\
                    [axes.fabric.fat]\n\"topology.link_gbps\" = 100\n\
                    [axes.fabric.ls]\nfile = \"ls.toml\"\ntopology.spines = 2\n\
                    [axes.size.small]\nworkload.message_bytes = 4096\n";
        let p = Plan::from_text(text, &dir.join("s.toml"), false).unwrap();
        assert_eq!(p.manifest.keys, ["fabric", "size", "load_balancing.scheme"]);
        let v: Vec<String> = p
            .manifest
            .points
            .iter()
            .map(|p| p.values.join(","))
            .collect();
        assert_eq!(
            v,
            [
                "fat,small,ecmp",
                "fat,small,host_spray",
                "ls,small,ecmp",
                "ls,small,host_spray"
            ]
        );
        let f: ScenarioFile = toml::from_str(&p.manifest.points[2].scenario).unwrap();
        let t = f.topology;
        assert_eq!(f.workload.message_bytes, 4096);
        assert_eq!((t.leaves, t.hosts_per_leaf, t.spines), (2, 2, 2));
        let f: ScenarioFile = toml::from_str(&p.manifest.points[0].scenario).unwrap();
        assert_eq!((f.topology.k, f.topology.link_gbps), (4, 100.0));
        let err = |text: &str| {
            Plan::from_text(text, &dir.join("s.toml"), false)
                .err()
                .unwrap()
                .to_string()
        };
        let e = err("[grid]\nfabric = [1]\n[axes.fabric.a]\nseed = 2\n");
        assert!(e.contains("`fabric` is both an axis and a grid key"), "{e}");
        let e = err("[axes.fabric]\na = 3\n");
        assert!(
            e.contains("axis `fabric` value `a`: expected a table"),
            "{e}"
        );
        let e = err("[axes.fabric.a]\nfile = \"nope.toml\"\n");
        assert!(e.contains("axis `fabric` value `a`: cannot read"), "{e}");
        let e = err("[axes.fabric.a]\n\"topology.nope\" = 3\n");
        assert!(e.contains("fabric=a") && e.contains("nope"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn skip_invalid_leaves_refused_points_out_and_names_them() {
        let text = "[base.topology]\nk = 4\n[grid]\n\"load_balancing.scheme\" = [\"ecmp\", \"host_spray\"]\n\
                    \"load_balancing.subflows\" = [2]\n";
        let e = Plan::from_text(text, Path::new("s.toml"), false)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("load_balancing.subflows"), "{e}");
        let p = Plan::from_text(
            &format!("skip_invalid = true\n{text}"),
            Path::new("s.toml"),
            false,
        )
        .unwrap();
        assert!(p.manifest.points.is_empty());
        assert_eq!(p.manifest.skipped.len(), 2);
        assert_eq!(p.manifest.skipped[1].id, "p0001");
        assert_eq!(p.manifest.skipped[1].values, ["host_spray", "2"]);
        assert!(p.manifest.skipped[1]
            .reason
            .contains("applies only to scheme subflow"));
        let text = text.replace("[\"ecmp\", \"host_spray\"]", "[\"ecmp\", \"subflow\"]");
        let p = Plan::from_text(
            &format!("skip_invalid = true\n{text}"),
            Path::new("s.toml"),
            false,
        )
        .unwrap();
        assert_eq!(p.manifest.points.len(), 1);
        assert_eq!(p.manifest.points[0].id, "p0001");
        assert_eq!(p.runs().len(), 1);
    }
}
