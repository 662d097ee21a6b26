//! Link failures and routing convergence.
//!
//! A failure hits a cable (both directions of a link). `down` is a black hole: the port keeps
//! serializing at line rate and the packet is lost on the wire, so the port's queue looks short
//! and a queue-reading switch policy keeps choosing it (the study's failure mechanism).
//! `degraded` keeps `rate_fraction` of the rate. `flaky` loses packets in bursts (a two-state
//! Gilbert-Elliott chain stepped once per packet).
//!
//! Routing learns of a failure `failure.convergence_us` (the study's G) after it happens; until
//! then switches forward as before. From then on every next-hop group toward a destination is
//! weighted by the capacity of the whole path through each port (0 = dead: left out; a degraded
//! link proportionally less: W-ECMP). Without `convergence_us` routing never converges. Hosts
//! learn only from end-to-end signals (missing ACKs), never from routing.

use std::collections::BTreeMap;

use rand::Rng;
use serde::{Deserialize, Serialize};

use crate::config::{invalid, ConfigError, Origin};
use crate::ids::{HostId, NodeId, PortId, SwitchId};
pub use crate::net::fault::{Fault, GilbertElliott};
use crate::net::{Cut, GroupMap, Route, Topology};
use crate::rng::{rng_for, Stream};
use crate::time::SimTime;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureKind {
    Down,
    Degraded,
    Flaky,
}

/// One `[[failures]]` entry.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FailureSpec {
    pub kind: FailureKind,
    /// A link name as `lbsim topology --links` prints it, e.g. `tor:3-agg:1` (either direction).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub link: Option<String>,
    /// Each ToR-aggregation and aggregation-core (leaf-spine) cable fails independently with this
    /// probability, drawn from the scenario seed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub random_fraction: Option<f64>,
    /// A switch as `lbsim topology --links` names it, e.g. `leaf:2`: every cable it has fails
    /// (a switch, or with one entry per switch a plane).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub switch: Option<String>,
    /// When the failure starts.
    #[serde(default)]
    pub at_us: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recover_at_us: Option<f64>,
    /// degraded: the fraction of the rate the link keeps (e.g. 0.1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate_fraction: Option<f64>,
    /// flaky: loss probability per packet in the good state.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub loss_good: Option<f64>,
    /// flaky: loss probability per packet in the bad state.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub loss_bad: Option<f64>,
    /// flaky: per-packet probability of moving from good to bad.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p_good_to_bad: Option<f64>,
    /// flaky: per-packet probability of moving from bad to good.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p_bad_to_good: Option<f64>,
}

impl FailureSpec {
    /// Link `link` down from time zero, never recovering (a trace's failure lines).
    pub fn down_from_start(link: String) -> FailureSpec {
        FailureSpec {
            kind: FailureKind::Down,
            link: Some(link),
            random_fraction: None,
            switch: None,
            at_us: 0.0,
            recover_at_us: None,
            rate_fraction: None,
            loss_good: None,
            loss_bad: None,
            p_good_to_bad: None,
            p_bad_to_good: None,
        }
    }
}

/// `[failure]`: routing's reaction.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FailureConfig {
    /// Time from a failure (or recovery) to converged routing (the study's G); absent = never.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub convergence_us: Option<f64>,
}

/// What a failed link does to traffic.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Effect {
    Down,
    Degraded(f64),
    Flaky(GilbertElliott),
}

/// A resolved failure of one cable.
#[derive(Clone, Debug)]
pub struct LinkFailure {
    /// Both directions of the cable.
    pub ports: [PortId; 2],
    pub name: String,
    pub effect: Effect,
    pub at: SimTime,
    pub recover: Option<SimTime>,
}

fn prob(v: Option<f64>, key: String, origin: &Origin, kind: &str) -> Result<f64, ConfigError> {
    let v = v.ok_or_else(|| {
        invalid(
            origin,
            key.clone(),
            format!("required for kind = \"{kind}\""),
        )
    })?;
    if !(0.0..=1.0).contains(&v) {
        return Err(invalid(
            origin,
            key,
            format!("must be a probability in [0, 1], got {v}"),
        ));
    }
    Ok(v)
}

/// The cables a random failure may hit: those between switches, one port per cable (the upward
/// direction), in port order.
fn fabric_cables(topo: &Topology) -> Vec<PortId> {
    (0..topo.links.len() as u32)
        .map(PortId)
        .filter(|&p| topo.is_fabric_uplink(p))
        .collect()
}

/// The port driving the opposite direction of `port`'s cable.
pub fn reverse(topo: &Topology, port: PortId) -> PortId {
    topo.reverse(port)
}

/// Validates the `[[failures]]` entries and resolves them to cables.
pub fn resolve(
    specs: &[FailureSpec],
    topo: &Topology,
    seed: u64,
    origin: &Origin,
) -> Result<Vec<LinkFailure>, ConfigError> {
    let mut names: BTreeMap<String, PortId> = BTreeMap::new();
    if specs.iter().any(|s| s.link.is_some()) {
        for i in 0..topo.links.len() {
            names.insert(topo.link_name(PortId(i as u32)), PortId(i as u32));
        }
    }
    let mut out = Vec::new();
    for (i, s) in specs.iter().enumerate() {
        let key = |k: &str| format!("failures[{i}].{k}");
        if !(s.at_us.is_finite() && s.at_us >= 0.0) {
            return Err(invalid(
                origin,
                key("at_us"),
                "must be a non-negative time in microseconds",
            ));
        }
        if let Some(r) = s.recover_at_us {
            if !(r.is_finite() && r > s.at_us) {
                return Err(invalid(
                    origin,
                    key("recover_at_us"),
                    format!("must be after at_us ({}), got {r}", s.at_us),
                ));
            }
        }
        let kind = match s.kind {
            FailureKind::Down => "down",
            FailureKind::Degraded => "degraded",
            FailureKind::Flaky => "flaky",
        };
        let flaky_keys = [
            ("loss_good", s.loss_good),
            ("loss_bad", s.loss_bad),
            ("p_good_to_bad", s.p_good_to_bad),
            ("p_bad_to_good", s.p_bad_to_good),
        ];
        if s.kind != FailureKind::Flaky {
            if let Some((k, _)) = flaky_keys.iter().find(|(_, v)| v.is_some()) {
                return Err(invalid(
                    origin,
                    key(k),
                    format!("applies only to kind = \"flaky\", not \"{kind}\""),
                ));
            }
        }
        if s.kind != FailureKind::Degraded && s.rate_fraction.is_some() {
            return Err(invalid(
                origin,
                key("rate_fraction"),
                format!("applies only to kind = \"degraded\", not \"{kind}\""),
            ));
        }
        let effect = match s.kind {
            FailureKind::Down => Effect::Down,
            FailureKind::Degraded => {
                let f = s.rate_fraction.ok_or_else(|| {
                    invalid(
                        origin,
                        key("rate_fraction"),
                        "required for kind = \"degraded\"",
                    )
                })?;
                if !(f > 0.0 && f <= 1.0) {
                    return Err(invalid(
                        origin,
                        key("rate_fraction"),
                        format!("must be in (0, 1], got {f}"),
                    ));
                }
                Effect::Degraded(f)
            }
            FailureKind::Flaky => Effect::Flaky(GilbertElliott {
                loss_good: prob(s.loss_good, key("loss_good"), origin, kind)?,
                loss_bad: prob(s.loss_bad, key("loss_bad"), origin, kind)?,
                p_good_to_bad: prob(s.p_good_to_bad, key("p_good_to_bad"), origin, kind)?,
                p_bad_to_good: prob(s.p_bad_to_good, key("p_bad_to_good"), origin, kind)?,
            }),
        };
        let at = SimTime::from_us_f64(s.at_us);
        let recover = s.recover_at_us.map(SimTime::from_us_f64);
        let cables: Vec<PortId> = match (&s.link, s.random_fraction, &s.switch) {
            (None, None, Some(name)) => {
                // Each cable once: by the port leaving the switch.
                let cables: Vec<PortId> = (0..topo.links.len() as u32)
                    .map(PortId)
                    .filter(|&p| topo.node_name(topo.links[p.idx()].from) == name.trim())
                    .collect();
                if cables.is_empty() || name.trim().starts_with("host:") {
                    return Err(invalid(
                        origin,
                        key("switch"),
                        format!("no switch named `{name}`; `lbsim topology --links` names them"),
                    ));
                }
                cables
            }
            (Some(name), None, None) => {
                let p = *names.get(name.trim()).ok_or_else(|| {
                    invalid(
                        origin,
                        key("link"),
                        format!("no link named `{name}`; `lbsim topology --links` lists the valid names for this topology"),
                    )
                })?;
                vec![p]
            }
            (None, Some(f), None) => {
                let f = prob(Some(f), key("random_fraction"), origin, kind)?;
                let mut rng = rng_for(seed, Stream::Failure, i as u64);
                fabric_cables(topo)
                    .into_iter()
                    .filter(|_| rng.gen_bool(f))
                    .collect()
            }
            _ => {
                return Err(invalid(
                    origin,
                    format!("failures[{i}]"),
                    "give exactly one of `link`, `switch` or `random_fraction`",
                ))
            }
        };
        for p in cables {
            out.push(LinkFailure {
                ports: [p, reverse(topo, p)],
                name: topo.link_name(p),
                effect,
                at,
                recover,
            });
        }
    }
    Ok(out)
}

/// A healthy port's capacity in [`capacity_units`]: hundredths of the link.
pub const FULL_CAPACITY: u32 = 100;

/// Routing's view of every port's usable capacity, in hundredths (100 = full, 0 = dead).
pub fn capacity_units(effect: Option<Effect>) -> u32 {
    match effect {
        None | Some(Effect::Flaky(_)) => FULL_CAPACITY,
        Some(Effect::Down) => 0,
        Some(Effect::Degraded(f)) => ((f * FULL_CAPACITY as f64).round() as u32).max(1),
    }
}

/// Converged next-hop weights: for each (switch, destination leaf group) whose group is not
/// uniform, the weight of each port of the group (the capacity of the paths through it).
/// Absent = uniform.
#[derive(Clone, Debug)]
pub struct Weights {
    /// Indexed by switch; inner map keyed by destination leaf group.
    pub by_switch: Vec<BTreeMap<u32, Box<[u32]>>>,
    pub any: bool,
    /// Each destination's leaf group (the fabric's), looked up only when there are weights.
    leaf_groups: GroupMap,
}

impl Default for Weights {
    fn default() -> Self {
        Weights {
            by_switch: Vec::new(),
            any: false,
            leaf_groups: GroupMap::Div(1),
        }
    }
}

impl Weights {
    /// The weights of switch `s`'s group toward host `dst` (None: all equal).
    #[inline]
    pub fn get(&self, s: SwitchId, dst: HostId) -> Option<&[u32]> {
        if !self.any {
            return None;
        }
        let leaf = self.leaf_groups.of(dst);
        self.by_switch[s.idx()].get(&leaf).map(|b| &**b)
    }

    /// Recomputes every group's weights from per-port capacities `cap` (hundredths), per
    /// destination leaf group: a port's weight is the lesser of its own capacity and the
    /// capacity of the switch it leads to, and a switch's capacity toward the destination is
    /// the mean of its next hops' weights (the destination's leaf has no limit). Switches that
    /// route down are worked out lowest tier first, then those that route up, highest first, so
    /// every next hop is known before it is needed.
    pub fn compute(topo: &Topology, cap: &[u32]) -> Weights {
        let mut by_switch = vec![BTreeMap::new(); topo.switches.len()];
        let mut any = false;
        let mut order: Vec<usize> = (0..topo.switches.len()).collect();
        order.sort_by_key(|&s| topo.switches[s].tier);
        let leaves = topo.leaf_hosts();
        let mut value = vec![u32::MAX; topo.switches.len()];
        let mut w = Vec::new();
        for (t, hosts) in leaves.iter().enumerate() {
            let dst = hosts[0];
            let home = topo.leaf_of(dst);
            let down = order
                .iter()
                .filter(|&&s| topo.is_below(SwitchId(s as u32), dst));
            let up = order
                .iter()
                .rev()
                .filter(|&&s| !topo.is_below(SwitchId(s as u32), dst));
            for &s in down.chain(up) {
                let sw = SwitchId(s as u32);
                if sw == home {
                    value[s] = u32::MAX;
                    continue;
                }
                let (first, n, grouped) = match topo.route(sw, dst) {
                    // A scale-up switch outside the destination's domain: no route at all.
                    Route::Group { n: 0, .. } => continue,
                    Route::Port(p) => (p, 1, false),
                    Route::Group { first, n } => (first, n, true),
                };
                w.clear();
                w.extend((first.0..first.0 + n).map(|p| {
                    let next = match topo.links[p as usize].to {
                        NodeId::Switch(x) => value[x.idx()],
                        NodeId::Host(_) => u32::MAX,
                    };
                    cap[p as usize].min(next)
                }));
                value[s] = w.iter().sum::<u32>() / n.max(1);
                if grouped && (w.iter().any(|&x| x != w[0]) || w[0] == 0) {
                    by_switch[s].insert(t as u32, w.clone().into_boxed_slice());
                    any = true;
                }
            }
        }
        Weights {
            by_switch,
            any,
            leaf_groups: topo.groups(0).0.clone(),
        }
    }
}

/// Each flow's fair share of its host's line rate under the current live capacities `cap`
/// (hundredths per port): 1/F, F the largest ratio of flows to live capacity (in links) over the
/// cuts the flow crosses: its host's uplink and its destination's downlink, the source ToR's
/// uplinks and destination ToR's downlinks when it leaves its ToR, and the source pod's
/// aggregation-core links and destination pod's core-aggregation links when it leaves its pod.
/// Spraying spreads a flow over a cut's links, so a cut acts as one link of their summed
/// capacity; this is the study's "B/F of its bottleneck" for the idealized CC under failures.
pub fn flow_shares(
    topo: &Topology,
    flows: &[crate::workload::FlowSpec],
    cap: &[u32],
    active: impl Fn(usize) -> bool,
) -> Vec<f64> {
    // Only flows sending at once share a cut; one not sending is rated as if it joined them.
    let mut load: BTreeMap<Cut, f64> = BTreeMap::new();
    for (_, f) in flows.iter().enumerate().filter(|(i, _)| active(*i)) {
        for c in topo.cuts(f.src, f.dst) {
            *load.entry(c).or_default() += 1.0;
        }
    }
    // Live capacity of each cut, in links.
    let port_cap = |p: PortId| cap[p.idx()] as f64 / FULL_CAPACITY as f64;
    let capacity = |c: Cut| -> f64 { topo.cut_ports(c).map(port_cap).sum() };
    flows
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let own = if active(i) { 0.0 } else { 1.0 };
            let worst = topo
                .cuts(f.src, f.dst)
                .map(|c| (load.get(&c).copied().unwrap_or(0.0) + own) / capacity(c))
                .fold(1.0f64, f64::max);
            if worst.is_finite() {
                1.0 / worst
            } else {
                0.0
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn topo() -> Topology {
        Topology::fat_tree(4, crate::net::topology::TEST_LINKS)
    }

    fn spec(kind: FailureKind) -> FailureSpec {
        FailureSpec {
            kind,
            ..FailureSpec::down_from_start("tor:0-agg:1".into())
        }
    }

    #[test]
    fn named_link_resolves_to_both_directions() {
        let t = topo();
        let f = resolve(&[spec(FailureKind::Down)], &t, 1, &Origin::builtin()).unwrap();
        assert_eq!(f.len(), 1);
        assert_eq!(t.link_name(f[0].ports[0]), "tor:0-agg:1");
        assert_eq!(t.link_name(f[0].ports[1]), "agg:1-tor:0");
    }

    #[test]
    fn bad_specs_are_rejected_with_the_key() {
        let t = topo();
        let o = Origin::builtin();
        let mut s = spec(FailureKind::Down);
        s.link = Some("tor:0-agg:9".into());
        let e = resolve(&[s], &t, 1, &o).unwrap_err().to_string();
        assert!(
            e.contains("failures[0].link") && e.contains("lbsim topology --links"),
            "{e}"
        );
        let mut s = spec(FailureKind::Down);
        s.recover_at_us = Some(0.0);
        assert!(resolve(&[s], &t, 1, &o)
            .unwrap_err()
            .to_string()
            .contains("recover_at_us"));
        let mut s = spec(FailureKind::Down);
        s.at_us = -1.0;
        assert!(resolve(&[s], &t, 1, &o)
            .unwrap_err()
            .to_string()
            .contains("at_us"));
        let mut s = spec(FailureKind::Flaky);
        s.loss_good = Some(0.0);
        s.loss_bad = Some(1.5);
        s.p_good_to_bad = Some(0.1);
        s.p_bad_to_good = Some(0.1);
        let e = resolve(&[s], &t, 1, &o).unwrap_err().to_string();
        assert!(e.contains("loss_bad") && e.contains("[0, 1]"), "{e}");
        let s = spec(FailureKind::Degraded);
        assert!(resolve(&[s], &t, 1, &o)
            .unwrap_err()
            .to_string()
            .contains("rate_fraction"));
        let mut s = spec(FailureKind::Down);
        s.random_fraction = Some(0.5);
        assert!(resolve(&[s], &t, 1, &o)
            .unwrap_err()
            .to_string()
            .contains("exactly one"));
    }

    #[test]
    fn random_fraction_draws_fabric_cables_from_the_seed() {
        let t = topo();
        let mut s = spec(FailureKind::Down);
        s.link = None;
        s.random_fraction = Some(0.25);
        let a = resolve(&[s.clone()], &t, 1, &Origin::builtin()).unwrap();
        let b = resolve(&[s.clone()], &t, 1, &Origin::builtin()).unwrap();
        let names = |v: &[LinkFailure]| v.iter().map(|f| f.name.clone()).collect::<Vec<_>>();
        assert_eq!(names(&a), names(&b));
        // 32 fabric cables in a k=4 fat-tree (16 ToR-agg, 16 agg-core).
        assert_eq!(fabric_cables(&t).len(), 32);
        s.random_fraction = Some(1.0);
        assert_eq!(resolve(&[s], &t, 1, &Origin::builtin()).unwrap().len(), 32);
    }

    #[test]
    fn weights_avoid_a_dead_core_link_and_scale_a_degraded_one() {
        let t = topo();
        let mut cap = vec![100u32; t.links.len()];
        // agg:0 (pod 0, position 0) loses its link to core:1: toward other pods, agg:0 must
        // avoid that core, and ToRs of pod 0 weight agg:0 at half (one of its two cores left).
        let agg0 = 8; // switches: 8 ToRs, then aggs
        let p = (t.switches[agg0].port_base + 2 + 1) as usize;
        assert_eq!(t.link_name(PortId(p as u32)), "agg:0-core:1");
        cap[p] = 0;
        let w = Weights::compute(&t, &cap);
        assert_eq!(
            w.get(SwitchId(agg0 as u32), HostId(14)),
            Some(&[100, 0][..])
        );
        assert_eq!(w.get(SwitchId(0), HostId(14)), Some(&[50, 100][..]));
        // Within pod 0 nothing changes.
        assert_eq!(w.get(SwitchId(0), HostId(2)), None);
        cap[p] = 10;
        let w = Weights::compute(&t, &cap);
        assert_eq!(
            w.get(SwitchId(agg0 as u32), HostId(14)),
            Some(&[100, 10][..])
        );
    }

    #[test]
    fn flow_shares_follow_the_bottleneck_cut() {
        let t = topo();
        let flows = crate::workload::permutation(16, 1000, 1);
        let mut cap = vec![100u32; t.links.len()];
        // Failure-free permutation: the host link is the bottleneck, share 1.
        assert!(flow_shares(&t, &flows, &cap, |_| true)
            .iter()
            .all(|&x| x == 1.0));
        // Kill one of ToR 0's two uplinks: flows leaving ToR 0 share one link.
        let up = (t.switches[0].port_base + 2) as usize;
        cap[up] = 0;
        let shares = flow_shares(&t, &flows, &cap, |_| true);
        for (f, s) in flows.iter().zip(&shares) {
            if f.src.0 / 2 == 0 && f.dst.0 / 2 != 0 {
                let leaving = flows
                    .iter()
                    .filter(|g| g.src.0 / 2 == 0 && g.dst.0 / 2 != 0)
                    .count() as f64;
                assert_eq!(*s, (1.0 / leaving).min(1.0));
            }
        }
        // All-to-all on 16 hosts: 15 flows per host link.
        let a2a = crate::workload::all_to_all(16, 1000);
        let cap = vec![100u32; t.links.len()];
        assert!(flow_shares(&t, &a2a, &cap, |_| true)
            .iter()
            .all(|&x| (x - 1.0 / 15.0).abs() < 1e-12));
    }

    #[test]
    fn flaky_losses_come_in_bursts() {
        let ge = GilbertElliott {
            loss_good: 0.0,
            loss_bad: 1.0,
            p_good_to_bad: 0.01,
            p_bad_to_good: 0.1,
        };
        let mut f = Fault::Flaky {
            ge,
            bad: false,
            rng: Box::new(rng_for(1, Stream::Failure, 99)),
        };
        let losses: Vec<bool> = (0..100_000).map(|_| f.loses()).collect();
        let rate = losses.iter().filter(|&&l| l).count() as f64 / 1e5;
        // Stationary bad share = 0.01 / (0.01 + 0.1) = 0.0909.
        assert!((rate - 0.0909).abs() < 0.01, "{rate}");
        // Mean burst length is 1 / p_bad_to_good = 10 packets.
        let bursts = losses.windows(2).filter(|w| !w[0] && w[1]).count() as f64;
        let mean = (rate * 1e5) / bursts;
        assert!((mean - 10.0).abs() < 1.5, "{mean}");
    }
}
