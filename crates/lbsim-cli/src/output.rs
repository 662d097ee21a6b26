//! Output formats: summary.json, flows.csv (written atomically), and the text tables.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Context, Result};
use lbsim::{lb, RunOutput, Scenario, Summary};

/// Writes `bytes` to `path` via a temporary file and a rename, so a reader never sees half a file.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.tmp"));
    std::fs::write(&tmp, bytes).with_context(|| format!("cannot write {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}

pub fn write_run(dir: &Path, res: &RunOutput) -> Result<()> {
    std::fs::create_dir_all(dir)
        .with_context(|| format!("cannot create output directory {}", dir.display()))?;
    let mut w = csv::Writer::from_writer(Vec::new());
    for r in &res.flows {
        w.serialize(r)?;
    }
    let csv = w.into_inner().context("csv")?;
    write_atomic(&dir.join("flows.csv"), &csv)?;
    let mut value = serde_json::to_value(&res.summary)?;
    if !res.collectives.is_empty() {
        let mut w = csv::Writer::from_writer(Vec::new());
        for r in &res.collectives.collectives {
            w.serialize(r)?;
        }
        let csv = w.into_inner().context("csv")?;
        write_atomic(&dir.join("collectives.csv"), &csv)?;
        // A section of its own: summary.json's other fields stay as they are.
        if let serde_json::Value::Object(m) = &mut value {
            m.insert(
                "collectives".into(),
                serde_json::to_value(&res.collectives)?,
            );
        }
    }
    let mut json = serde_json::to_vec_pretty(&value)?;
    json.push(b'\n');
    write_atomic(&dir.join("summary.json"), &json)?;
    Ok(())
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
    o.push_str("  fsdp               FSDP training: per layer all-gather, compute, reduce-scatter (workload.model)\n");
    o.push_str("topologies (topology.kind):\n");
    o.push_str("  fat_tree           3-tier k-ary fat-tree (topology.k even): k^3/4 hosts\n");
    o.push_str(
        "  leaf_spine         2-tier: topology.hosts_per_leaf, leaves, spines, oversubscription\n",
    );
    o
}

pub fn topology(sc: &Scenario, links: bool) -> String {
    let t = &sc.topology;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "{:?}: {} hosts, {} switches, {} links (one per direction), host rate {} Gb/s",
        t.shape,
        t.hosts,
        t.switches.len(),
        t.links.len(),
        t.host_rate.gbps()
    );
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
