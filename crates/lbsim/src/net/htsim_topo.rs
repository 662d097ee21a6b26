//! htsim's `.topo` tier files (as the Ultra Ethernet fork of htsim and ASTRA-sim's htsim
//! backend read them): a header (`Nodes N`, `Tiers 2|3`, `Podsize P`) and per `Tier T` its
//! `Downlink_speed_Gbps`, `Radix_Down`, `Radix_Up`, `Downlink_Latency_ns`,
//! `Switch_Latency_ns`, `Queue_Down`, `Queue_Up`, `Oversubscribed` and `Bundle`; keys are
//! case-insensitive, `#` starts a comment.
//!
//! lbsim builds what it can model: two tiers as a leaf-spine (`Radix_Down` of tier 0 hosts per
//! leaf, `Radix_Up` spines, the spines' downlink speed giving the oversubscription), three as a
//! k-ary fat-tree (every radix k/2, the core's k, one speed, no oversubscription). One link
//! latency, one switch latency and one queue size serve every tier. Anything else is refused
//! with the line that departs from what lbsim can build.

use std::collections::BTreeMap;
use std::path::Path;

use super::config::{TopologyConfig, TopologyKind};
use crate::config::ConfigError;

/// Per-tier attributes: value and line.
type Attrs = BTreeMap<&'static str, (u64, usize)>;

const KEYS: &[&str] = &[
    "downlink_speed_gbps",
    "radix_up",
    "radix_down",
    "queue_up",
    "queue_down",
    "oversubscribed",
    "bundle",
    "switch_latency_ns",
    "downlink_latency_ns",
];

/// Reads `path` and sets the fabric it describes in `t`.
pub fn load(path: &Path, t: &mut TopologyConfig) -> Result<(), ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|e| ConfigError::Io {
        path: path.display().to_string(),
        msg: format!("cannot read htsim topology: {e}"),
    })?;
    apply(&text, &path.display().to_string(), t)
}

/// Parses `.topo` `text` (`name` for errors) into `t`'s kind, sizes, rate, latencies and buffer.
pub fn apply(text: &str, name: &str, t: &mut TopologyConfig) -> Result<(), ConfigError> {
    let err = |line: usize, msg: String| ConfigError::Trace {
        path: name.to_string(),
        line,
        msg,
    };
    let mut head: BTreeMap<&str, (u64, usize)> = BTreeMap::new();
    let mut tiers: Vec<Attrs> = Vec::new();
    let mut current: Option<usize> = None;
    for (i, raw) in text.lines().enumerate() {
        let ln = i + 1;
        let line = raw.split('#').next().unwrap_or("").trim();
        let toks: Vec<&str> = line.split_whitespace().collect();
        let Some(first) = toks.first() else { continue };
        let key = first.to_ascii_lowercase();
        let val = || -> Result<u64, ConfigError> {
            let v = toks
                .get(1)
                .ok_or_else(|| err(ln, format!("`{first}` needs a value")))?;
            v.parse().map_err(|_| {
                err(
                    ln,
                    format!("`{first}` expects a non-negative integer, found `{v}`"),
                )
            })
        };
        match key.as_str() {
            "nodes" | "tiers" | "podsize" if current.is_none() => {
                let k = match key.as_str() {
                    "nodes" => "nodes",
                    "tiers" => "tiers",
                    _ => "podsize",
                };
                head.insert(k, (val()?, ln));
            }
            "tier" => {
                let n = val()? as usize;
                if n > 2 || n != tiers.len() {
                    return Err(err(
                        ln,
                        format!("tier {n}: tiers are numbered 0, 1, 2 in order"),
                    ));
                }
                tiers.push(Attrs::new());
                current = Some(n);
            }
            k => {
                let Some(&key) = KEYS.iter().find(|x| **x == k) else {
                    return Err(err(
                        ln,
                        format!(
                            "unknown attribute `{first}` (a tier has {})",
                            KEYS.join(", ")
                        ),
                    ));
                };
                let Some(c) = current else {
                    return Err(err(ln, format!("`{first}` before any `Tier N` line")));
                };
                if tiers[c].insert(key, (val()?, ln)).is_some() {
                    return Err(err(ln, format!("a second `{first}` for tier {c}")));
                }
            }
        }
    }
    let need = |k: &str| {
        head.get(k)
            .copied()
            .ok_or_else(|| err(0, format!("missing the `{k}` header line")))
    };
    let (nodes, _) = need("nodes")?;
    let (ntiers, tl) = need("tiers")?;
    if !(2..=3).contains(&ntiers) {
        return Err(err(tl, format!("Tiers {ntiers}: htsim builds 2 or 3")));
    }
    if tiers.len() as u64 != ntiers {
        return Err(err(
            tl,
            format!("Tiers {ntiers} but {} tier sections", tiers.len()),
        ));
    }
    let get = |tier: usize, k: &str| tiers[tier].get(k).copied();
    let req = |tier: usize, k: &str| {
        get(tier, k).ok_or_else(|| err(0, format!("tier {tier} has no `{k}`")))
    };
    // One value for every tier that gives it, or the line of the first that differs.
    let uniform = |k: &str, from: usize| -> Result<Option<u64>, ConfigError> {
        let mut first: Option<(u64, usize)> = None;
        for tier in from..tiers.len() {
            if let Some((v, ln)) = get(tier, k) {
                match first {
                    Some((f, fl)) if f != v => {
                        return Err(err(
                            ln,
                            format!(
                                "tier {tier}'s {k} {v} differs from {f} on line {fl}: lbsim \
                                 gives every tier one {k}"
                            ),
                        ))
                    }
                    None => first = Some((v, ln)),
                    _ => {}
                }
            }
        }
        Ok(first.map(|f| f.0))
    };
    for tier in 0..tiers.len() {
        if let Some((b, ln)) = get(tier, "bundle").filter(|b| b.0 != 1) {
            return Err(err(
                ln,
                format!("Bundle {b}: lbsim has one cable between two switches"),
            ));
        }
    }
    let lat = uniform("downlink_latency_ns", 0)?;
    let sw = uniform("switch_latency_ns", 0)?;
    let queue = match (uniform("queue_down", 0)?, uniform("queue_up", 0)?) {
        (Some(a), Some(b)) if a != b => {
            let ln = get(0, "queue_up").map_or(0, |q| q.1);
            return Err(err(
                ln,
                format!("Queue_Up {b} differs from Queue_Down {a}: lbsim has one buffer size"),
            ));
        }
        (a, b) => a.or(b),
    };
    let (speed0, _) = req(0, "downlink_speed_gbps")?;
    let (rd0, rl0) = req(0, "radix_down")?;
    let (ru0, _) = req(0, "radix_up")?;
    if rd0 == 0 || ru0 == 0 || speed0 == 0 {
        return Err(err(
            rl0,
            "tier 0's radices and speed must be positive".into(),
        ));
    }
    if ntiers == 2 {
        let (speed1, sl1) = req(1, "downlink_speed_gbps")?;
        let (rd1, rl1) = req(1, "radix_down")?;
        if !nodes.is_multiple_of(rd0) {
            return Err(err(
                rl0,
                format!("{nodes} nodes do not fill leaves of {rd0} hosts"),
            ));
        }
        let leaves = nodes / rd0;
        if rd1 != leaves {
            return Err(err(
                rl1,
                format!(
                    "a spine's Radix_Down {rd1}, but there are {leaves} leaves: lbsim links \
                     every leaf to every spine once"
                ),
            ));
        }
        if speed1 == 0 {
            return Err(err(sl1, "speed must be positive".into()));
        }
        let over = (rd0 * speed0) as f64 / (ru0 * speed1) as f64;
        if let Some((o, ol)) = get(0, "oversubscribed") {
            if (o as f64 - over).abs() > 1e-9 {
                return Err(err(
                    ol,
                    format!(
                        "Oversubscribed {o}, but {rd0} hosts at {speed0} Gb/s over {ru0} \
                         uplinks at {speed1} Gb/s are {over}:1"
                    ),
                ));
            }
        }
        if let Some((o, ol)) = get(1, "oversubscribed").filter(|o| o.0 != 1) {
            return Err(err(ol, format!("Oversubscribed {o} on the top tier")));
        }
        t.kind = TopologyKind::LeafSpine;
        t.hosts_per_leaf = rd0 as u32;
        t.leaves = leaves as u32;
        t.spines = ru0 as u32;
        t.oversubscription = over;
    } else {
        let h = rd0;
        let k = 2 * h;
        let want = [
            (0, "radix_up", h),
            (1, "radix_down", h),
            (1, "radix_up", h),
            (2, "radix_down", k),
        ];
        for (tier, key, v) in want {
            let (got, ln) = req(tier, key)?;
            if got != v {
                return Err(err(
                    ln,
                    format!(
                        "tier {tier}'s {key} {got}: lbsim's fat-tree is k-ary (here k = {k}: \
                         every radix {h}, the core's {k})"
                    ),
                ));
            }
        }
        if let Some(ln) = head.get("podsize").filter(|p| p.0 != h * h).map(|p| p.1) {
            return Err(err(
                ln,
                format!("Podsize: a k = {k} fat-tree's pods have {} hosts", h * h),
            ));
        }
        if nodes != k * k * k / 4 {
            return Err(err(
                head["nodes"].1,
                format!(
                    "Nodes {nodes}: a k = {k} fat-tree has {} hosts",
                    k * k * k / 4
                ),
            ));
        }
        for tier in 0..3 {
            if let Some((o, ol)) = get(tier, "oversubscribed").filter(|o| o.0 != 1) {
                return Err(err(
                    ol,
                    format!(
                        "Oversubscribed {o}: lbsim's fat-tree is not oversubscribed (use a \
                         2-tier leaf-spine)"
                    ),
                ));
            }
        }
        t.kind = TopologyKind::FatTree;
        t.k = k as u32;
    }
    let speed = uniform("downlink_speed_gbps", 0)?;
    if ntiers == 3 {
        t.link_gbps = speed.unwrap_or(speed0) as f64;
    } else {
        t.link_gbps = speed0 as f64;
    }
    if let Some(l) = lat {
        t.link_latency_ns = l as f64;
    }
    if let Some(s) = sw {
        t.switch_latency_ns = s as f64;
    }
    if let Some(q) = queue {
        t.buffer_bytes = q;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const FT: &str = "Nodes 128\nTiers 3\nPodsize 16\n\nTier 0\nOversubscribed 1\n\
        Downlink_speed_Gbps 100\nRadix_Down 4\nRadix_Up 4\nDownlink_Latency_ns 1000\n\
        Switch_Latency_ns 0\n\nTier 1\nDownlink_speed_Gbps 100\nRadix_Down 4\nRadix_Up 4\n\
        Downlink_Latency_ns 1000\nBundle 1\n\nTier 2\nDownlink_speed_Gbps 100\nRadix_Down 8\n\
        Downlink_Latency_ns 1000\n";

    fn topo(text: &str) -> Result<TopologyConfig, String> {
        let mut t = TopologyConfig::default();
        apply(text, "x.topo", &mut t).map_err(|e| e.to_string())?;
        Ok(t)
    }

    #[test]
    fn three_tiers_build_a_k_ary_fat_tree() {
        let t = topo(FT).unwrap();
        assert_eq!(
            (t.kind, t.k, t.link_gbps, t.link_latency_ns),
            (TopologyKind::FatTree, 8, 100.0, 1000.0)
        );
        let e = topo(&FT.replace(
            "Tier 1\nDownlink_speed_Gbps 100",
            "Tier 1\nOversubscribed 4\nDownlink_speed_Gbps 100",
        ))
        .unwrap_err();
        assert!(
            e.starts_with("x.topo:14:") && e.contains("Oversubscribed 4"),
            "{e}"
        );
        let e = topo(&FT.replace("Radix_Down 8", "Radix_Down 8\nBundle 2")).unwrap_err();
        assert!(e.contains("Bundle 2"), "{e}");
        let e = topo(&FT.replace(
            "Tier 2\nDownlink_speed_Gbps 100",
            "Tier 2\nDownlink_speed_Gbps 200",
        ))
        .unwrap_err();
        assert!(
            e.contains("downlink_speed_gbps 200") && e.contains("line 7"),
            "{e}"
        );
        let e = topo(&FT.replace(
            "Radix_Up 4\nDownlink_Latency_ns 1000\nBundle",
            "Radix_Up 2\nDownlink_Latency_ns 1000\nBundle",
        ))
        .unwrap_err();
        assert!(e.contains("k-ary"), "{e}");
        let e = topo(&FT.replace("Bundle 1", "Colour 1")).unwrap_err();
        assert!(
            e.starts_with("x.topo:18:") && e.contains("unknown attribute"),
            "{e}"
        );
    }

    #[test]
    fn two_tiers_build_a_leaf_spine() {
        let ls = "Nodes 32\nTiers 2\nPodsize 32\n\nTier 0\nDownlink_speed_Gbps 100\nRadix_Down 8\n\
                  Radix_Up 2\nDownlink_Latency_ns 1000\nSwitch_Latency_ns 0\nOversubscribed 4\n\n\
                  Tier 1\nDownlink_speed_Gbps 100\nRadix_Down 4\nDownlink_Latency_ns 1000\n\
                  Switch_Latency_ns 0\n";
        let t = topo(ls).unwrap();
        assert_eq!(
            (
                t.kind,
                t.hosts_per_leaf,
                t.leaves,
                t.spines,
                t.oversubscription
            ),
            (TopologyKind::LeafSpine, 8, 4, 2, 4.0)
        );
        let e = topo(&ls.replace("Oversubscribed 4", "Oversubscribed 2")).unwrap_err();
        assert!(e.starts_with("x.topo:11:") && e.contains("4:1"), "{e}");
        let e = topo(&ls.replace("Radix_Down 4", "Radix_Down 5")).unwrap_err();
        assert!(e.starts_with("x.topo:15:") && e.contains("4 leaves"), "{e}");
    }
}
