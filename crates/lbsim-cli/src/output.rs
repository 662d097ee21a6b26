//! Output formats: summary.json, flows.csv (written atomically), and the text tables.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use lbsim::{lb, RunOutput, Scenario, Summary};

/// Writes `bytes` to `path` via a temporary file and a rename, so a reader never sees half a file;
/// a write that fails (a full disk) removes its temporary file.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let tmp = tmp_path(path);
    let done = std::fs::write(&tmp, bytes)
        .with_context(|| format!("cannot write {}", path.display()))
        .and_then(|_| {
            std::fs::rename(&tmp, path).with_context(|| format!("cannot write {}", path.display()))
        });
    if done.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    done
}

/// `dir/.name.tmp-PID`: the process id keeps two writers of one file from sharing a temporary
/// name, and tells whose a leftover is.
pub fn tmp_path(path: &Path) -> std::path::PathBuf {
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    dir.join(format!(".{name}.tmp-{}", std::process::id()))
}

pub fn write_run(dir: &Path, res: &RunOutput) -> Result<()> {
    std::fs::create_dir_all(dir)
        .with_context(|| format!("cannot create output directory {}", dir.display()))?;
    for (name, bytes) in run_files(res)? {
        write_atomic(&dir.join(name), &bytes)?;
    }
    Ok(())
}

/// The files of a run's output directory and their bytes, in the order they are written:
/// flows.csv, collectives.csv (for collective workloads), summary.json last (its presence marks
/// a finished run directory).
pub fn run_files(res: &RunOutput) -> Result<Vec<(&'static str, Vec<u8>)>> {
    let mut files = Vec::new();
    let mut w = csv::Writer::from_writer(Vec::new());
    for r in &res.flows {
        w.serialize(r)?;
    }
    files.push(("flows.csv", w.into_inner().context("csv")?));
    let mut value = serde_json::to_value(&res.summary)?;
    if !res.collectives.is_empty() {
        let mut w = csv::Writer::from_writer(Vec::new());
        for r in &res.collectives.collectives {
            w.serialize(r)?;
        }
        files.push(("collectives.csv", w.into_inner().context("csv")?));
        // A section of its own: summary.json's other fields stay as they are.
        if let serde_json::Value::Object(m) = &mut value {
            m.insert(
                "collectives".into(),
                serde_json::to_value(&res.collectives)?,
            );
        }
    }
    if res.interrupted {
        // Only then: an ended run's summary.json is unchanged.
        if let serde_json::Value::Object(m) = &mut value {
            m.insert("interrupted".into(), true.into());
        }
    }
    let mut json = serde_json::to_vec_pretty(&value)?;
    json.push(b'\n');
    files.push(("summary.json", json));
    let mut fabric = serde_json::to_vec_pretty(&res.fabric)?;
    fabric.push(b'\n');
    files.push(("fabric.json", fabric));
    Ok(files)
}

fn us(ps: u64) -> f64 {
    ps as f64 / 1e6
}

fn opt_us(ps: Option<u64>) -> String {
    ps.map(|p| format!("{:.2}", us(p)))
        .unwrap_or_else(|| "-".into())
}

pub fn one_line(s: &Summary) -> String {
    format!(
        "{} {} on {}: {}/{} flows done, CCT {} us, bound {:.2} us, CCT/bound {}, drops {}, max queue {} B, {} events in {:.2} s ({:.1} M events/s)",
        s.scheme,
        s.workload,
        s.topology,
        s.flows_completed,
        s.flows,
        opt_us(s.cct_ps),
        us(s.lower_bound_ps),
        s.cct_over_bound
            .map(|r| format!("{r:.4}"))
            .unwrap_or_else(|| "-".into()),
        s.packets_dropped,
        s.max_queue_bytes,
        s.events,
        s.wall_seconds,
        s.events_per_second / 1e6
    )
}

pub fn table(results: &[RunOutput]) -> String {
    let mut o = String::new();
    if let Some(first) = results.first() {
        let s = &first.summary;
        let _ = writeln!(
            o,
            "{} on {} ({} hosts, {} flows, seed {})",
            s.workload, s.topology, s.hosts, s.flows, s.seed
        );
    }
    let _ = writeln!(
        o,
        "{:<18} {:>12} {:>12} {:>9} {:>13} {:>12} {:>9} {:>14} {:>8}",
        "scheme",
        "CCT(us)",
        "bound(us)",
        "CCT/bound",
        "mean FCT(us)",
        "p99 FCT(us)",
        "drops",
        "max queue(B)",
        "done"
    );
    for r in results {
        let s = &r.summary;
        let _ = writeln!(
            o,
            "{:<18} {:>12} {:>12.2} {:>9} {:>13} {:>12} {:>9} {:>14} {:>8}",
            s.scheme,
            opt_us(s.cct_ps),
            us(s.lower_bound_ps),
            s.cct_over_bound
                .map(|x| format!("{x:.3}"))
                .unwrap_or_else(|| "-".into()),
            s.mean_fct_ps
                .map(|x| format!("{:.2}", x / 1e6))
                .unwrap_or_else(|| "-".into()),
            opt_us(s.p99_fct_ps),
            s.packets_dropped,
            s.max_queue_bytes,
            format!("{}/{}", s.flows_completed, s.flows)
        );
    }
    o
}

pub fn list() -> String {
    let mut o = String::from("load-balancing schemes (load_balancing.scheme):\n");
    for s in lb::SCHEMES {
        let side = match s.side {
            lb::Side::Host => "host",
            lb::Side::Switch => "switch",
        };
        let _ = writeln!(
            o,
            "  {:<18} {:<6} {:<8} {}",
            s.name, side, s.granularity, s.summary
        );
    }
    o.push_str("port policies of hosts with several ports (load_balancing.port):\n");
    for p in std::iter::once(&lb::port::SCHEME_INFO).chain(lb::port::PORTS) {
        let _ = writeln!(o, "  {:<18} {}", p.name, p.summary);
    }
    o.push_str("workloads (workload.kind):\n");
    o.push_str("  permutation        random derangement: every host sends workload.message_bytes to one other host\n");
    o.push_str(
        "  all_to_all         every ordered pair of hosts exchanges workload.message_bytes\n",
    );
    o.push_str(
        "  connection_matrix  htsim connection-matrix file at workload.path (start times in ps, triggers)\n",
    );
    o.push_str(
        "  ring_allreduce     ring reduce-scatter then all-gather over workload.group_size ranks\n",
    );
    o.push_str("  ring_reduce_scatter, ring_allgather   one half of the ring\n");
    o.push_str(
        "  halving_doubling_allreduce   recursive halving then doubling (power-of-two group)\n",
    );
    o.push_str(
        "  hierarchical_allreduce   reduce-scatter inside each server, all-reduce per rail across servers, all-gather inside\n",
    );
    o.push_str("  fsdp               FSDP training: per layer all-gather, compute, reduce-scatter (workload.model)\n");
    o.push_str("  incast             workload.fan_in senders each send one message to the group's first host\n");
    o.push_str("  outcast            the group's first host sends one message to each of workload.fan_in hosts\n");
    o.push_str("  chakra             MLCommons Chakra execution traces at workload.path (compute, messages, collectives)\n");
    o.push_str("  moe                Mixture-of-Experts layers: dispatch all-to-all to the routed experts' GPUs, compute, combine back (workload.moe_*)\n");
    o.push_str("  training           a transformer's training iteration under tp/pp/dp(/ep), as Chakra graphs per rank (workload.model, workload.training_*)\n");
    o.push_str("congestion control (transport.cc):\n ");
    for c in lbsim::scenario::CcKind::ALL {
        let _ = write!(o, " {}", c.name());
    }
    o.push_str("\nloss recovery (transport.loss_recovery):\n ");
    for l in lbsim::scenario::LossRecoveryKind::ALL {
        let _ = write!(o, " {}", l.name());
    }
    o.push('\n');
    o.push_str("topologies (topology.kind):\n");
    for k in lbsim::scenario::TopologyKind::ALL {
        let i = k.info();
        let _ = writeln!(o, "  {:<18} {}", i.name, i.summary);
    }
    o
}

pub fn topology(sc: &Scenario, links: bool) -> String {
    let t = &sc.topology;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "{}: {} hosts, {} switches, {} links (one per direction), host rate {} Gb/s",
        t.describe(),
        t.hosts,
        t.switches.len(),
        t.links.len(),
        t.host_rate.gbps()
    );
    let range = |(a, b): (u32, u32)| {
        if a == b {
            a.to_string()
        } else {
            format!("{a}-{b}")
        }
    };
    let tb = |bps: u128| bps as f64 / 1e12;
    let _ = writeln!(
        o,
        "tier  name   switches  down  up  down Tb/s    up Tb/s  oversubscription  paths"
    );
    for (i, s) in t.tier_summaries().iter().enumerate() {
        let over = if s.up_bps == 0 {
            "-".to_string()
        } else {
            format!("{:.3}:1", s.down_bps as f64 / s.up_bps as f64)
        };
        let paths = s.paths.map_or("-".to_string(), |p| p.to_string());
        let _ = writeln!(
            o,
            "{i:<5} {:<6} {:>8}  {:>4}  {:>2}  {:>9.3}  {:>9.3}  {over:>16}  {paths:>5}",
            s.name,
            s.switches,
            range(s.down),
            range(s.up),
            tb(s.down_bps),
            tb(s.up_bps),
        );
    }
    let _ = writeln!(
        o,
        "bisection bandwidth {:.3} Tb/s; paths: between two hosts whose lowest common tier is \
         that row's",
        tb(t.bisection_bps())
    );
    if !t.single_homed() {
        let (up, scale) = t.host_port_counts();
        let _ = writeln!(
            o,
            "hosts: {} uplinks each (a next-hop group, chosen by the scheme's entropy), {} \
             scale-up links",
            range(up),
            range(scale)
        );
    }
    if let Some((domains, switches)) = t.scale_up_summary() {
        let _ = writeln!(
            o,
            "scale-up: {domains} domains, {switches} switches; traffic between hosts of one \
             domain crosses it, not the network"
        );
    }
    if links {
        for i in 0..t.links.len() {
            let l = &t.links[i];
            let _ = writeln!(
                o,
                "{}\t{} Gb/s\t{} ns",
                t.link_name(lbsim::ids::PortId(i as u32)),
                l.rate.gbps(),
                l.latency.ps() as f64 / 1e3
            );
        }
    }
    o
}

/// `lbsim show`: the scenario with every default that applies filled in (from
/// `ScenarioFile::effective`, the library's one place for them) and every CC's section, a
/// valid scenario file that reads back to the same scenario; then, as comments, the options
/// only another scheme, loss recovery or CC reads, with their defaults.
pub fn show(file: &lbsim::ScenarioFile) -> String {
    use lbsim::scenario::LossRecoveryKind;
    let eff = file.effective();
    let mut text = eff.to_toml();
    // The CC sections equal to their defaults are left out by the serializer; put them back
    // right after [transport] (a later [transport.x] header is valid TOML).
    let tr = &eff.transport;
    let sections: [(&str, Result<String, toml::ser::Error>); 6] = [
        ("dctcp", toml::to_string(&tr.dctcp)),
        ("dcqcn", toml::to_string(&tr.dcqcn)),
        ("swift", toml::to_string(&tr.swift)),
        ("mswift", toml::to_string(&tr.mswift)),
        ("nscc", toml::to_string(&tr.nscc)),
        ("eqds", toml::to_string(&tr.eqds)),
    ];
    let mut add = String::new();
    for (name, body) in sections {
        let header = format!("[transport.{name}]\n");
        if let (false, Ok(body)) = (text.contains(&header), body) {
            let _ = write!(add, "\n{header}{body}");
        }
    }
    match text.find("\n[load_balancing]\n") {
        Some(i) => text.insert_str(i, &add),
        None => text.push_str(&add),
    }
    // [telemetry] is left out when it is the default (off): show it anyway.
    if !text.contains("\n[telemetry]\n") {
        if let Ok(body) = toml::to_string(&eff.telemetry) {
            let _ = write!(text, "\n[telemetry]\n{body}");
        }
    }
    // The value an option takes in `f` filled in (a scenario where it applies).
    let value = |f: lbsim::ScenarioFile, section: &str, key: &str| -> Option<String> {
        let t = toml::Table::try_from(f.effective()).ok()?;
        Some(t.get(section)?.get(key)?.to_string())
    };
    let mut notes = Vec::new();
    let scheme = &eff.load_balancing.scheme;
    let own = lb::scheme(scheme).map_or(&[][..], |s| s.options);
    for key in lb::all_options().iter().map(|o| o.key) {
        if own.iter().any(|o| o.key == key) {
            continue;
        }
        let users = lb::schemes_with_option(key);
        let mut f = eff.clone();
        f.load_balancing.scheme = users.first().map_or(String::new(), |s| s.to_string());
        if let Some(v) = value(f, "load_balancing", key) {
            notes.push((
                format!("load_balancing.{key} = {v}"),
                format!("scheme {}", users.join(", ")),
            ));
        }
    }
    let with_lr = |lr: LossRecoveryKind| {
        let mut f = eff.clone();
        f.transport.loss_recovery = lr;
        f
    };
    let lr = eff.transport.loss_recovery;
    if tr.erasure_extra_packets.is_none() {
        if let Some(v) = value(
            with_lr(LossRecoveryKind::Erasure),
            "transport",
            "erasure_extra_packets",
        ) {
            notes.push((
                format!("transport.erasure_extra_packets = {v}"),
                "loss_recovery erasure".into(),
            ));
        }
    }
    if tr.reorder_threshold.is_none() {
        if let Some(v) = value(
            with_lr(LossRecoveryKind::Sack),
            "transport",
            "reorder_threshold",
        ) {
            notes.push((
                format!("transport.reorder_threshold = {v}"),
                format!(
                    "loss_recovery sack and the erasure schemes, not {}",
                    lr.name()
                ),
            ));
        }
    }
    let trim = with_lr(LossRecoveryKind::Trim);
    for key in [
        "trim_header_bytes",
        "return_to_sender",
        "control_buffer_bytes",
    ] {
        let unset = match key {
            "trim_header_bytes" => eff.topology.trim_header_bytes.is_none(),
            "return_to_sender" => eff.topology.return_to_sender.is_none(),
            _ => eff.topology.control_buffer_bytes.is_none(),
        };
        if unset {
            if let Some(v) = value(trim.clone(), "topology", key) {
                let who = match key {
                    "control_buffer_bytes" => {
                        "loss_recovery trim, cc eqds and pfc (default: the buffer)"
                    }
                    _ => "loss_recovery trim",
                };
                notes.push((format!("topology.{key} = {v}"), who.into()));
            }
        }
    }
    // DCQCN's unset fields take its profile's values, some scaled with the line rate: show them.
    {
        let d = &tr.dcqcn;
        let line = lbsim::time::BitsPerSec(
            (eff.topology.link_gbps * tr.rate_coef * 1e9)
                .round()
                .max(1.0) as u64,
        );
        let p = lbsim::transport::cc::DcqcnParams::resolve(d, line);
        let profile = format!("{:?}", p.profile).to_lowercase();
        let who = format!(
            "cc dcqcn, profile {profile} at {} Gb/s",
            line.0 as f64 / 1e9
        );
        let mut fields = vec![
            ("g", d.g.is_none(), p.g.to_string()),
            (
                "rate_ai_mbps",
                d.rate_ai_mbps.is_none(),
                p.rate_ai_mbps.to_string(),
            ),
            (
                "rate_hai_mbps",
                d.rate_hai_mbps.is_none(),
                p.rate_hai_mbps.to_string(),
            ),
            ("timer_us", d.timer_us.is_none(), p.timer_us.to_string()),
            (
                "alpha_timer_us",
                d.alpha_timer_us.is_none(),
                p.alpha_timer_us.to_string(),
            ),
            (
                "fast_recovery_steps",
                d.fast_recovery_steps.is_none(),
                p.fast_recovery_steps.to_string(),
            ),
            (
                "cnp_interval_us",
                d.cnp_interval_us.is_none(),
                p.cnp_interval_us.to_string(),
            ),
            (
                "min_rate_mbps",
                d.min_rate_mbps.is_none(),
                p.min_rate_mbps.to_string(),
            ),
        ];
        // Each profile's own fields: the paper's byte counter, the NIC's decrease rules.
        match p.byte_counter_bytes {
            Some(b) => fields.push((
                "byte_counter_bytes",
                d.byte_counter_bytes.is_none(),
                b.to_string(),
            )),
            None => fields.extend([
                (
                    "rate_decrease_interval_us",
                    d.rate_decrease_interval_us.is_none(),
                    p.rate_decrease_interval_us.to_string(),
                ),
                (
                    "clamp_target_rate",
                    d.clamp_target_rate.is_none(),
                    p.clamp_target_rate.to_string(),
                ),
            ]),
        }
        for (key, unset, v) in fields {
            if unset {
                notes.push((format!("transport.dcqcn.{key} = {v}"), who.clone()));
            }
        }
    }
    if !eff.topology.pfc {
        let mut f = eff.clone();
        f.topology.pfc = true;
        if f.transport.loss_recovery == LossRecoveryKind::Trim {
            f.transport.loss_recovery = LossRecoveryKind::GoBackN;
        }
        for key in ["pfc_xoff_bytes", "pfc_xon_bytes"] {
            if let Some(v) = value(f.clone(), "topology", key) {
                let who = match key {
                    "pfc_xoff_bytes" => "topology.pfc (default: the buffer less the headroom)",
                    _ => "topology.pfc (default: XOFF less 2 MTU)",
                };
                notes.push((format!("topology.{key} = {v}"), who.into()));
            }
        }
    }
    let a2a =
        |w: &lbsim::scenario::WorkloadConfig| w.kind == lbsim::scenario::WorkloadKind::AllToAll;
    if !a2a(&eff.workload) && !eff.jobs.iter().any(a2a) {
        let mut f = eff.clone();
        f.workload.kind = lbsim::scenario::WorkloadKind::AllToAll;
        if let Some(v) = value(f, "workload", "all_to_all_algorithm") {
            notes.push((
                format!("workload.all_to_all_algorithm = {v}"),
                "workload.kind all_to_all (host s sends to s+1, s+2, ...)".into(),
            ));
        }
    }
    if tr.mswift.median_window.is_none() {
        notes.push((
            "transport.mswift.median_window = (unset: one delay sample per packet of window)"
                .into(),
            "cc mswift".into(),
        ));
    }
    if eff.topology.ecn_kmax_bytes.is_none() {
        notes.push((
            "topology.ecn_kmax_bytes = (unset: step marking at the threshold)".into(),
            "RED marking, e.g. for cc dcqcn".into(),
        ));
        let mut f = eff.clone();
        f.topology.ecn_kmax_bytes = Some(f.topology.buffer_bytes);
        if let Some(v) = value(f, "topology", "ecn_pmax") {
            notes.push((
                format!("topology.ecn_pmax = {v}"),
                "RED marking (with ecn_kmax_bytes)".into(),
            ));
        }
    }
    if !notes.is_empty() {
        text.push_str(
            "\n# Options this scenario does not read (setting one here is an error), with their\n\
             # defaults and who reads them:\n",
        );
        let w = notes.iter().map(|(a, _)| a.len()).max().unwrap_or(0);
        for (a, b) in notes {
            let _ = writeln!(text, "# {a:<w$}  # {b}");
        }
    }
    text
}

/// Rewrites the scenario's paths (`topology.htsim_topo` and `simai_topo`, the workload's and
/// each job's `path`)
/// for `show`'s output: resolved as the run reads them (against the scenario file's directory,
/// `origin`), then made relative to `base`, the directory the output is written to, or absolute
/// when there is none (standard output, which may be saved anywhere).
pub fn show_paths(
    file: &mut lbsim::ScenarioFile,
    origin: &lbsim::Origin,
    base: Option<&Path>,
) -> Result<()> {
    let base = match base {
        Some(b) => {
            let b = if b.as_os_str().is_empty() {
                Path::new(".")
            } else {
                b
            };
            Some(
                b.canonicalize()
                    .with_context(|| format!("cannot resolve directory {}", b.display()))?,
            )
        }
        None => None,
    };
    let rewrite = |p: &mut PathBuf| -> Result<()> {
        let read = match (&origin.dir, p.is_relative()) {
            (Some(dir), true) => dir.join(&*p),
            _ => p.clone(),
        };
        let real = real_path(&read)?;
        *p = match &base {
            Some(b) => relative_to(b, &real),
            None => real,
        };
        Ok(())
    };
    if let Some(p) = &mut file.topology.htsim_topo {
        rewrite(p)?;
    }
    if let Some(p) = &mut file.topology.simai_topo {
        rewrite(p)?;
    }
    for w in std::iter::once(&mut file.workload).chain(file.jobs.iter_mut()) {
        if let Some(p) = &mut w.path {
            rewrite(p)?;
        }
    }
    Ok(())
}

/// `p` absolute with symbolic links resolved; a path naming no file (a Chakra `NAME` prefix)
/// resolves its directory.
fn real_path(p: &Path) -> Result<PathBuf> {
    if let Ok(c) = p.canonicalize() {
        return Ok(c);
    }
    if let (Some(dir), Some(name)) = (p.parent(), p.file_name()) {
        let dir = if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            dir
        };
        if let Ok(c) = dir.canonicalize() {
            return Ok(c.join(name));
        }
    }
    std::path::absolute(p).with_context(|| format!("cannot resolve {}", p.display()))
}

/// `target` as a path relative to the directory `base` (both absolute and resolved); `target`
/// itself when they share no root (another drive).
fn relative_to(base: &Path, target: &Path) -> PathBuf {
    let b: Vec<_> = base.components().collect();
    let t: Vec<_> = target.components().collect();
    let common = b.iter().zip(&t).take_while(|(x, y)| x == y).count();
    if common == 0 {
        return target.to_path_buf();
    }
    let mut r = PathBuf::new();
    for _ in common..b.len() {
        r.push("..");
    }
    for c in &t[common..] {
        r.push(c);
    }
    if r.as_os_str().is_empty() {
        r.push(".");
    }
    r
}

/// A partitioned run's window statistics (stderr, with `--threads`): what the scaling model
/// in ARCHITECTURE.md is fed.
pub fn parallel_lines(p: &lbsim::sim::Parallel) -> String {
    use lbsim::sim::Parallel;
    let s = match p {
        Parallel::Single(why) => return format!("threads: ran on one thread ({why})"),
        Parallel::Ran(s) => s,
    };
    let total: u64 = s.events.iter().sum();
    let windows = s.windows.max(1);
    let per_part = |v: &[u64]| {
        v.iter()
            .map(|e| format!("{:.1}%", 100.0 * *e as f64 / total.max(1) as f64))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let waits = s
        .wait_seconds
        .iter()
        .map(|w| format!("{:.0}%", 100.0 * w / s.wall_seconds.max(1e-9)))
        .collect::<Vec<_>>()
        .join(" ");
    format!(
        "threads: {} partitions, window {:.3} us, {} windows, {:.0} events/window, \
         {} packets shipped ({:.1}/window, max {}), {} remote starts\n\
         threads: events per partition {}; barrier wait (share of {:.2} s) {}; \
         serial: setup {:.2} s, gather {:.2} s",
        s.partitions,
        s.window_ps as f64 / 1e6,
        s.windows,
        total as f64 / windows as f64,
        s.shipped_packets,
        s.shipped_packets as f64 / windows as f64,
        s.max_shipped_per_window,
        s.remote_starts,
        per_part(&s.events),
        s.wall_seconds,
        waits,
        s.setup_seconds,
        s.gather_seconds
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn temporary_names_carry_the_process_id() {
        let t = super::tmp_path(std::path::Path::new("d/summary.json"));
        let pid = std::process::id().to_string();
        assert_eq!(
            t,
            std::path::Path::new("d").join(format!(".summary.json.tmp-{pid}"))
        );
        let r = crate::sweep::tmp_run_dir(std::path::Path::new("p"), 3);
        assert_eq!(
            r,
            std::path::Path::new("p").join(format!(".seed-3.tmp-{pid}"))
        );
    }
}
