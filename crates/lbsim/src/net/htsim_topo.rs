//! htsim's `.topo` tier files (as the Ultra Ethernet fork of htsim and ASTRA-sim's htsim
//! backend read them): a header (`Nodes N`, `Tiers 2|3`, `Podsize P`) and per `Tier T` its
//! `Downlink_speed_Gbps`, `Radix_Down`, `Radix_Up`, `Downlink_Latency_ns`,
//! `Switch_Latency_ns`, `Queue_Down`, `Queue_Up`, `Oversubscribed` and `Bundle`; keys are
//! case-insensitive, `#` starts a comment.
//!
//! The counts follow as htsim derives them (pods of `Podsize` hosts; ToRs, aggregation switches
//! and cores from the radices; `Bundle` parallel links, which must agree with the radices). A
//! k-ary fat-tree with one speed and one latency imports as `fat_tree`, two tiers with one link
//! between every leaf and spine as `leaf_spine`, anything else (tapers, per-tier speeds and
//! latencies, parallel links) as a `clos`. One switch latency and one queue size serve every
//! tier. Anything else is refused with the line that departs from what lbsim can build.

use std::collections::BTreeMap;
use std::path::Path;

use super::clos::{counts, Blame, ClosSpec, TierSpec};
use super::config::{TierConfig, TopologyConfig, TopologyKind};
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
    let n = tiers.len();
    let line = |tier: usize, k: &str| get(tier, k).map_or(0, |v| v.1);
    // Per tier: (down radix, up radix, downlink speed).
    let mut r = Vec::with_capacity(n);
    for tier in 0..n {
        let (down, dl) = req(tier, "radix_down")?;
        let (speed, sl) = req(tier, "downlink_speed_gbps")?;
        if down == 0 || speed == 0 {
            let l = if down == 0 { dl } else { sl };
            return Err(err(
                l,
                format!("tier {tier}'s radix and speed must be positive"),
            ));
        }
        // As `topology.link_gbps` is bounded; products of radices and speeds stay in range.
        if speed > 1_000_000_000 {
            return Err(err(
                sl,
                format!("Downlink_speed_Gbps {speed}: at most 1e9 Gb/s"),
            ));
        }
        let up = if tier + 1 < n {
            let (u, ul) = req(tier, "radix_up")?;
            if u == 0 {
                return Err(err(ul, format!("tier {tier}'s Radix_Up must be positive")));
            }
            u
        } else {
            if let Some((_, ul)) = get(tier, "radix_up") {
                return Err(err(ul, "the top tier has no uplinks".into()));
            }
            0
        };
        r.push((down, up, speed));
    }
    // The counts, as htsim derives them (the Clos generator's own derivation), each failure
    // named by the line of the value it blames.
    let (rd0, ru0, speed0) = r[0];
    let pod_hosts = if n == 3 {
        let (p, _) = head
            .get("podsize")
            .copied()
            .ok_or_else(|| err(0, "missing the `Podsize` header line".into()))?;
        Some(p)
    } else {
        None
    };
    let small = |v: u64, ln: usize| {
        u32::try_from(v)
            .ok()
            .filter(|&v| v < 1 << 24)
            .ok_or_else(|| err(ln, format!("{v} is too large")))
    };
    let link = super::topology::LinkParams {
        rate: crate::time::BitsPerSec(1),
        latency: crate::time::SimTime::ZERO,
        switch_latency: crate::time::SimTime::ZERO,
    };
    let spec = ClosSpec {
        hosts: small(nodes, head["nodes"].1)?,
        pod_hosts: pod_hosts.map(|p| small(p, head["podsize"].1)).transpose()?,
        tiers: (0..n)
            .map(|i| {
                Ok(TierSpec {
                    down: small(r[i].0, line(i, "radix_down"))?,
                    up: small(r[i].1, line(i, "radix_up"))?,
                    link,
                })
            })
            .collect::<Result<_, ConfigError>>()?,
    };
    let (counted, pods) = counts(&spec).map_err(|e| {
        let ln = match e.blame {
            Blame::Hosts => head["nodes"].1,
            Blame::PodHosts => head.get("podsize").map_or(0, |p| p.1),
            Blame::Tiers => head["tiers"].1,
            Blame::Down(i) => line(i, "radix_down"),
            Blame::Up(i) => line(i, "radix_up"),
        };
        err(ln, e.msg)
    })?;
    let leaves = counted[0].0 as u64;
    // The cables between a switch of tier t - 1 and one of tier t.
    let bundles: Vec<u64> = std::iter::once(1)
        .chain(counted[..n - 1].iter().map(|c| c.1 as u64))
        .collect();
    for (tier, &b) in bundles.iter().enumerate() {
        if let Some((given, ln)) = get(tier, "bundle").filter(|g| g.0 != b) {
            return Err(err(
                ln,
                format!("Bundle {given}: the radices give {b} links between each pair of switches"),
            ));
        }
    }
    for tier in 0..n {
        let Some((o, ol)) = get(tier, "oversubscribed") else {
            continue;
        };
        if tier + 1 == n {
            if o != 1 {
                return Err(err(ol, format!("Oversubscribed {o} on the top tier")));
            }
            continue;
        }
        let (down, up, speed) = r[tier];
        let over = (down as f64 * speed as f64) / (up as f64 * r[tier + 1].2 as f64);
        if (o as f64 - over).abs() > 1e-9 {
            return Err(err(
                ol,
                format!(
                    "Oversubscribed {o}, but {down} links down at {speed} Gb/s over {up} uplinks \
                     at {} Gb/s are {over}:1",
                    r[tier + 1].2
                ),
            ));
        }
    }
    let lats: Vec<Option<u64>> = (0..n)
        .map(|t| get(t, "downlink_latency_ns").map(|v| v.0))
        .collect();
    let one_latency = lats.iter().all(|l| *l == lats[0]);
    let one_speed = r.iter().all(|x| x.2 == speed0);
    let h = rd0;
    let k_ary = n == 3
        && one_speed
        && [ru0, r[1].0, r[1].1].iter().all(|&x| x == h)
        && r[2].0 == 2 * h
        && nodes == 2 * h * h * h;
    if k_ary && one_latency {
        t.kind = TopologyKind::FatTree;
        t.k = 2 * h as u32;
        t.link_gbps = speed0 as f64;
    } else if n == 2 && bundles[1] == 1 && one_latency {
        t.kind = TopologyKind::LeafSpine;
        t.hosts_per_leaf = rd0 as u32;
        t.leaves = leaves as u32;
        t.spines = ru0 as u32;
        t.oversubscription = (rd0 as f64 * speed0 as f64) / (ru0 as f64 * r[1].2 as f64);
        t.link_gbps = speed0 as f64;
    } else {
        t.kind = TopologyKind::Clos;
        t.hosts = Some(nodes as u32);
        t.pod_hosts = (n == 3).then(|| (nodes / pods as u64) as u32);
        t.tier = (0..n)
            .map(|i| TierConfig {
                down: r[i].0 as u32,
                up: r[i].1 as u32,
                gbps: Some(r[i].2 as f64),
                latency_ns: lats[i].map(|l| l as f64),
            })
            .collect();
        t.link_gbps = speed0 as f64;
    }
    if let Some(l) = lats[0] {
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

    /// Found by fuzzing (fuzz/regressions/topo): a speed whose product with a radix overflowed
    /// u64 (a panic with overflow checks, a wrong oversubscription without).
    #[test]
    fn a_speed_past_any_link_is_refused_naming_its_line() {
        let text = "Nodes 128\nTiers 3\nPodsize 16\nTier 0\nOversubscribed 1\n\
                    Downlink_speed_Gbps 10000000000000000000\nRadix_Down 4\nRadix_Up 4\n\
                    Tier 1\nDownlink_speed_Gbps 100\nRadix_Down 4\nRadix_Up 4\n\
                    Tier 2\nDownlink_speed_Gbps 100\nRadix_Down 8\n";
        let e = topo(text).unwrap_err();
        assert!(e.contains("x.topo:6") && e.contains("at most 1e9"), "{e}");
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
        // A faster core, or fewer aggregation uplinks (2:1 at the aggregation tier), is a Clos.
        let t = topo(&FT.replace(
            "Tier 2\nDownlink_speed_Gbps 100",
            "Tier 2\nDownlink_speed_Gbps 200",
        ))
        .unwrap();
        assert_eq!(t.kind, TopologyKind::Clos);
        let gbps: Vec<_> = t.tier.iter().map(|x| x.gbps).collect();
        assert_eq!(gbps, [Some(100.0), Some(100.0), Some(200.0)]);
        let t = topo(&FT.replace(
            "Radix_Up 4\nDownlink_Latency_ns 1000\nBundle",
            "Radix_Up 2\nDownlink_Latency_ns 1000\nBundle",
        ))
        .unwrap();
        assert_eq!((t.kind, t.tier[1].up), (TopologyKind::Clos, 2));
        // ... whose radices must still add up: 8 pods x 4 aggs x 4 uplinks over cores of 12.
        let e = topo(&FT.replace("Radix_Down 8", "Radix_Down 12")).unwrap_err();
        assert!(e.starts_with("x.topo:22:"), "{e}");
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
        assert!(e.starts_with("x.topo:15:") && e.contains("leaves"), "{e}");
        // Two links from each leaf to each spine: a Clos.
        let t = topo(
            &ls.replace("Radix_Down 4", "Radix_Down 8")
                .replace("Radix_Up 2", "Radix_Up 4")
                .replace("Oversubscribed 4", "Oversubscribed 2"),
        )
        .unwrap();
        assert_eq!(
            (t.kind, t.tier[0].up, t.tier[1].down),
            (TopologyKind::Clos, 4, 8)
        );
    }

    /// The shapes of htsim's oversubscribed fat-tree files (`fat_tree_128_4os`,
    /// `fat_tree_1024_8os`): they import and build.
    #[test]
    fn htsims_oversubscribed_fat_trees_build() {
        let os4 = "Nodes 128\nTiers 3\nPodsize 16\nTier 0\nOversubscribed 1\n\
            Downlink_speed_Gbps 100\nRadix_Down 4\nRadix_Up 4\nDownlink_Latency_ns 1000\n\
            Switch_Latency_ns 0\nTier 1\nOversubscribed 4\nDownlink_speed_Gbps 100\nRadix_Down 4\n\
            Radix_Up 1\nDownlink_Latency_ns 1000\nSwitch_Latency_ns 0\nBundle 1\nTier 2\n\
            Downlink_speed_Gbps 100\nRadix_Down 8\nDownlink_Latency_ns 1000\nSwitch_Latency_ns 0\n\
            Bundle 1\n";
        let os8 = "Nodes 1024\nTiers 3\nPodsize 64\nTier 0\nOversubscribed 4\n\
            Downlink_speed_Gbps 100\nRadix_Down 8\nRadix_Up 2\nDownlink_Latency_ns 1000\n\
            Switch_Latency_ns 0\nTier 1\nOversubscribed 2\nDownlink_speed_Gbps 100\nRadix_Down 8\n\
            Radix_Up 4\nDownlink_Latency_ns 1000\nSwitch_Latency_ns 0\nBundle 1\nTier 2\n\
            Downlink_speed_Gbps 100\nRadix_Down 16\nDownlink_Latency_ns 1000\n\
            Switch_Latency_ns 0\nBundle 1\n";
        // (hosts, ToRs, aggs, cores)
        for (text, want) in [(os4, (128, 32, 32, 4)), (os8, (1024, 128, 32, 8))] {
            let t = topo(text).unwrap();
            assert_eq!(t.kind, TopologyKind::Clos);
            let built = t.build(&crate::config::Origin::builtin()).unwrap();
            let n = |tier: u8| built.switches.iter().filter(|s| s.tier == tier).count();
            assert_eq!((built.hosts as usize, n(0), n(1), n(2)), want);
        }
    }
}
