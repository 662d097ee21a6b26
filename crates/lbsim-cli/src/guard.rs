//! Checks made before any simulating: will it fit in memory, can the results be written, is
//! another sweep writing into the same directory; and the exit codes a run ends with.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use lbsim::memory::{human_bytes, MemoryEstimate};

/// Exit codes other than 0 and 1 (every other error), documented in the README.
pub const EXIT_UNFINISHED: u8 = 3;
pub const EXIT_SIGINT: u8 = 130;
pub const EXIT_SIGTERM: u8 = 143;

/// An error that ends the process with a given exit code (after its results were written).
#[derive(Debug)]
pub struct Exit {
    pub code: u8,
    pub msg: String,
}

impl std::fmt::Display for Exit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.msg)
    }
}

impl std::error::Error for Exit {}

/// `--jobs`: at least one run at a time.
pub fn parse_jobs(s: &str) -> std::result::Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(0) => Err("must be at least 1 (omit --jobs to use every core)".into()),
        Ok(n) => Ok(n),
        Err(_) => Err(format!("`{s}` is not a number of parallel runs")),
    }
}

/// Runs at once: `jobs` (default: every core), no more than there are runs.
pub fn concurrency(jobs: Option<usize>, runs: usize) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    jobs.unwrap_or(cores).min(runs).max(1)
}

/// MemAvailable and MemTotal in bytes, or None where /proc/meminfo cannot be read.
fn meminfo() -> Option<(u128, u128)> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let field = |name: &str| -> Option<u128> {
        let line = text.lines().find(|l| l.starts_with(name))?;
        let kb: u128 = line[name.len()..]
            .trim()
            .trim_end_matches("kB")
            .trim()
            .parse()
            .ok()?;
        Some(kb * 1024)
    };
    Some((field("MemAvailable:")?, field("MemTotal:")?))
}

/// Refuses `runs` copies of a run estimated at `est` when they cannot fit in the memory
/// available now, unless `force`; skipped where the machine's memory is unknown.
pub fn check_memory(what: &str, est: &MemoryEstimate, runs: usize, force: bool) -> Result<()> {
    let Some((avail, total)) = meminfo() else {
        return Ok(());
    };
    let need = est.bytes.saturating_mul(runs as u128);
    if need <= avail {
        return Ok(());
    }
    let at_once = if runs > 1 {
        format!(" x {runs} runs at once (lower --jobs to run fewer)")
    } else {
        String::new()
    };
    let msg = format!(
        "{what} needs an estimated {} ({} flows, {} ports, up to {} packets in flight){at_once}, \
         more than the {} available on this machine ({} total); shrink the scenario, or pass \
         --force to try anyway",
        human_bytes(est.bytes),
        est.flows,
        est.ports,
        est.packets,
        human_bytes(avail),
        human_bytes(total)
    );
    if force {
        eprintln!("warning: {msg}; going ahead (--force)");
        return Ok(());
    }
    bail!(msg)
}

/// Makes sure results can be written to `dir` before anything runs: it must be a directory (or
/// creatable as one) that this process can write to. Creates it.
pub fn check_out(dir: &Path) -> Result<()> {
    if dir.exists() && !dir.is_dir() {
        bail!(
            "--out {}: exists and is not a directory; give a directory for the results",
            dir.display()
        );
    }
    std::fs::create_dir_all(dir)
        .with_context(|| format!("--out {}: cannot create the directory", dir.display()))?;
    let probe = dir.join(format!(".lbsim-write-test-{}", std::process::id()));
    File::create(&probe)
        .with_context(|| format!("--out {}: the directory is not writable", dir.display()))?;
    let _ = std::fs::remove_file(&probe);
    Ok(())
}

/// A sweep's hold on its output directory, released when dropped (and by the OS when the
/// process dies, so a killed sweep leaves no stale lock).
pub struct DirLock {
    _files: Vec<File>,
}

/// Name of the lock file in a sweep directory.
pub const LOCK_FILE: &str = ".lbsim.lock";

/// Locks `dir` for a sweep: a whole sweep takes the lock exclusively; a shard takes it shared
/// (shards of one sweep run side by side on purpose) and its own shard lock exclusively.
pub fn lock_dir(dir: &Path, shard: Option<(usize, usize)>) -> Result<DirLock> {
    let open = |p: PathBuf| -> Result<File> {
        OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&p)
            .with_context(|| format!("cannot create the lock file {}", p.display()))
    };
    let busy = |what: &str| {
        anyhow::anyhow!(
            "{} is in use by another lbsim sweep ({what} {} is held); wait for it to end, or \
             give another --out",
            dir.display(),
            dir.join(LOCK_FILE).display()
        )
    };
    let main = open(dir.join(LOCK_FILE))?;
    match shard {
        None => {
            main.try_lock().map_err(|_| busy("its lock"))?;
            Ok(DirLock { _files: vec![main] })
        }
        Some((i, n)) => {
            main.try_lock_shared()
                .map_err(|_| busy("its lock, taken by a whole sweep,"))?;
            let own = open(dir.join(format!("{LOCK_FILE}-shard-{i}-of-{n}")))?;
            own.try_lock()
                .map_err(|_| busy(&format!("shard {i}/{n}'s lock, beside")))?;
            Ok(DirLock {
                _files: vec![main, own],
            })
        }
    }
}

/// The top-level keys of a sweep file and of a scenario file, to name the real mistake when one
/// is given where the other belongs.
const SWEEP_KEYS: &[&str] = &["grid", "base", "base_file", "seeds"];
const SCENARIO_KEYS: &[&str] = &[
    "topology",
    "packet",
    "transport",
    "load_balancing",
    "workload",
    "failure",
    "failures",
    "jobs",
    "end_time_us",
];

fn top_keys(text: &str) -> Vec<String> {
    toml::from_str::<toml::Table>(text)
        .map(|t| t.keys().cloned().collect())
        .unwrap_or_default()
}

fn describe(k: &str, text: &str) -> String {
    // `[grid]` for a table, `seeds` for a plain key, as the file writes it.
    match toml::from_str::<toml::Table>(text)
        .ok()
        .and_then(|t| t.get(k).cloned())
    {
        Some(toml::Value::Table(_)) => format!("[{k}]"),
        Some(toml::Value::Array(a)) if a.iter().all(|v| v.is_table()) && !a.is_empty() => {
            format!("[[{k}]]")
        }
        _ => format!("`{k}`"),
    }
}

/// Err if a file given as a scenario is a sweep file.
pub fn not_a_sweep_file(path: &Path, text: &str) -> Result<()> {
    let keys = top_keys(text);
    if let Some(k) = SWEEP_KEYS.iter().find(|k| keys.iter().any(|x| x == *k)) {
        bail!(
            "{}: this looks like a sweep file (it has {}), not a scenario; use lbsim sweep {}",
            path.display(),
            describe(k, text),
            path.display()
        );
    }
    Ok(())
}

/// Err if a file given as a sweep is a scenario file.
pub fn not_a_scenario_file(path: &Path, text: &str) -> Result<()> {
    let keys = top_keys(text);
    if keys.iter().any(|k| SWEEP_KEYS.contains(&k.as_str())) {
        return Ok(());
    }
    if let Some(k) = SCENARIO_KEYS.iter().find(|k| keys.iter().any(|x| x == *k)) {
        bail!(
            "{}: this looks like a scenario file (it has {}), not a sweep; use lbsim run {} \
             (or lbsim compare), or name it in a sweep file's base_file",
            path.display(),
            describe(k, text),
            path.display()
        );
    }
    Ok(())
}
