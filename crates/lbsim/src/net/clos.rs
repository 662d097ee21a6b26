//! Clos fabrics as graphs: 2- or 3-tier Clos from per-tier radices and links (tapered or not,
//! with parallel links), and the k-ary fat-tree and the leaf-spine as presets of it. A generator
//! only lays out hosts, switches and links (down ports first); routing and everything else
//! derived from the graph is [`Builder::finish`]'s.

use super::topology::{Builder, LinkParams, Topology};
use crate::ids::{HostId, NodeId, SwitchId};
use crate::time::{BitsPerSec, SimTime};

/// A k-ary fat-tree: k pods of k/2 ToRs and k/2 aggregation switches, (k/2)^2 cores, k/2 hosts
/// per ToR (k^3/4 hosts): the Clos whose every radix is k/2, the core's k. `k` must be even and
/// at least 2.
pub fn fat_tree(k: u32, p: LinkParams) -> Topology {
    assert!(k >= 2 && k.is_multiple_of(2), "fat-tree k must be even");
    let h = k / 2;
    let tier = |down, up| TierSpec { down, up, link: p };
    let spec = ClosSpec {
        hosts: k * k * k / 4,
        pod_hosts: Some(h * h),
        tiers: vec![tier(h, h), tier(h, h), tier(k, 0)],
    };
    let mut t = clos(
        &spec,
        p.switch_latency,
        &["tor", "agg", "core"],
        format!("fat_tree k={k}"),
    )
    .expect("a fat-tree is a Clos");
    t.set_htsim_fat_tree(h);
    t
}

/// A leaf-spine fabric: every leaf links once to every spine, at `uplink_rate`.
pub fn leaf_spine(
    hosts_per_leaf: u32,
    leaves: u32,
    spines: u32,
    p: LinkParams,
    uplink_rate: BitsPerSec,
) -> Topology {
    let up = LinkParams {
        rate: uplink_rate,
        ..p
    };
    let spec = ClosSpec {
        hosts: hosts_per_leaf * leaves,
        pod_hosts: None,
        tiers: vec![
            TierSpec {
                down: hosts_per_leaf,
                up: spines,
                link: p,
            },
            TierSpec {
                down: leaves,
                up: 0,
                link: up,
            },
        ],
    };
    clos(
        &spec,
        p.switch_latency,
        &["leaf", "spine"],
        format!("leaf_spine {leaves}x{hosts_per_leaf} hosts, {spines} spines"),
    )
    .expect("a leaf-spine is a Clos")
}

/// One tier of a [`ClosSpec`], lowest first.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TierSpec {
    /// Down ports of each switch (hosts under a leaf; links to the tier below otherwise).
    pub down: u32,
    /// Up ports of each switch (0 at the top tier).
    pub up: u32,
    /// Rate and latency of the tier's down links (tier 0's are the host links).
    pub link: LinkParams,
}

/// A 2- or 3-tier Clos, as htsim's `.topo` files describe one: per tier its switches' down and
/// up radices and its down links; the counts follow. Two tiers: every leaf links to every spine
/// (`down[1] / leaves` parallel links). Three: pods of `pod_hosts` hosts; every ToR of a pod
/// links to every aggregation switch of the pod; the cores form one group per aggregation
/// position, and aggregation switch j of every pod links to every core of group j.
#[derive(Clone, Debug, PartialEq)]
pub struct ClosSpec {
    pub hosts: u32,
    /// Hosts per pod (three tiers only).
    pub pod_hosts: Option<u32>,
    pub tiers: Vec<TierSpec>,
}

/// The description a [`CountError`] blames.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Blame {
    Hosts,
    PodHosts,
    /// The number of tiers.
    Tiers,
    /// A tier's down or up radix.
    Down(usize),
    Up(usize),
}

/// Why a [`ClosSpec`]'s radices do not add up, and which of them to blame (an import names
/// the line that gave it, a scenario the key).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CountError {
    pub blame: Blame,
    pub msg: String,
}

/// The switch counts a [`ClosSpec`] implies: per tier, (switches, parallel links to each
/// switch above it), and pods.
pub fn counts(s: &ClosSpec) -> Result<(Vec<(u32, u32)>, u32), CountError> {
    fn fail<T>(blame: Blame, msg: String) -> Result<T, CountError> {
        Err(CountError { blame, msg })
    }
    let div = |a: u64, b: u64, blame: Blame, what: &str| -> Result<u32, CountError> {
        if b == 0 || !a.is_multiple_of(b) || a / b == 0 || a / b > u32::MAX as u64 {
            fail(blame, format!("{what}: {a} does not divide into {b}s"))
        } else {
            Ok((a / b) as u32)
        }
    };
    let t = &s.tiers;
    if !(2..=3).contains(&t.len()) {
        return fail(
            Blame::Tiers,
            format!("{} tiers: a Clos has 2 or 3", t.len()),
        );
    }
    if let Some(i) = t.iter().position(|x| x.down == 0) {
        return fail(Blame::Down(i), format!("tier {i}: down must be at least 1"));
    }
    if let Some(i) = t[..t.len() - 1].iter().position(|x| x.up == 0) {
        return fail(
            Blame::Up(i),
            format!("tier {i}: up must be at least 1 below the top tier"),
        );
    }
    let top = t.len() - 1;
    if t[top].up != 0 {
        return fail(
            Blame::Up(top),
            "the top tier has no uplinks (up = 0)".into(),
        );
    }
    let (h, d, u) = (
        s.hosts as u64,
        |i: usize| t[i].down as u64,
        |i: usize| t[i].up as u64,
    );
    let leaves = div(h, d(0), Blame::Down(0), "hosts over tier 0's down ports")?;
    if t.len() == 2 {
        // Each spine reaches every leaf, b links each.
        let b = div(
            d(1),
            leaves as u64,
            Blame::Down(1),
            "tier 1's down ports over the leaves",
        )?;
        let spines = div(
            u(0),
            b as u64,
            Blame::Up(0),
            "tier 0's up ports over the parallel links",
        )?;
        return Ok((vec![(leaves, b), (spines, 0)], 1));
    }
    let Some(pod) = s.pod_hosts else {
        return fail(Blame::PodHosts, "a 3-tier Clos needs pod_hosts".into());
    };
    let pod = pod as u64;
    let pods = div(h, pod, Blame::PodHosts, "hosts over pod_hosts")?;
    let lp = div(
        pod,
        d(0),
        Blame::Down(0),
        "pod_hosts over tier 0's down ports",
    )?;
    let b1 = div(
        d(1),
        lp as u64,
        Blame::Down(1),
        "tier 1's down ports over a pod's ToRs",
    )?;
    let aggs = div(
        u(0),
        b1 as u64,
        Blame::Up(0),
        "tier 0's up ports over the parallel links to each agg",
    )?;
    let cores = div(
        pods as u64 * aggs as u64 * u(1),
        d(2),
        Blame::Down(2),
        "aggregation uplinks over tier 2's down ports",
    )?;
    let group = div(
        cores as u64,
        aggs as u64,
        Blame::Down(2),
        "cores over aggregation positions",
    )?;
    let b2 = div(
        u(1),
        group as u64,
        Blame::Up(1),
        "tier 1's up ports over its core group",
    )?;
    if pods as u64 * b2 as u64 != d(2) {
        return fail(
            Blame::Down(2),
            format!(
                "tier 2's down ports {}: a core links to one aggregation switch per pod \
                 ({pods}) with {b2} links each",
                d(2)
            ),
        );
    }
    Ok((vec![(leaves, b1), (pods * aggs, b2), (cores, 0)], pods))
}

/// Builds `s`, named by `names` (one per tier) and described by `label`.
pub fn clos(
    s: &ClosSpec,
    switch_latency: SimTime,
    names: &[&'static str],
    label: String,
) -> Result<Topology, String> {
    let (n, pods) = counts(s).map_err(|e| e.msg)?;
    let total: u64 = n.iter().map(|x| x.0 as u64).sum();
    if total >= 1 << 24 || s.hosts >= 1 << 24 {
        return Err(format!("{total} switches and {} hosts: too large", s.hosts));
    }
    let p = |i: usize| LinkParams {
        switch_latency,
        ..s.tiers[i].link
    };
    let mut b = Builder::new(s.hosts, s.tiers[0].link.rate, names);
    b.label(label);
    let base: Vec<u32> = n
        .iter()
        .scan(0, |acc, x| {
            let v = *acc;
            *acc += x.0;
            Some(v)
        })
        .collect();
    let sw = |tier: usize, i: u32| NodeId::Switch(SwitchId(base[tier] + i));
    let hpl = s.tiers[0].down;
    for host in 0..s.hosts {
        b.link(p(0), NodeId::Host(HostId(host)), sw(0, host / hpl));
    }
    if s.tiers.len() == 2 {
        let (leaves, bundle) = n[0];
        let spines = n[1].0;
        for l in 0..leaves {
            let me = NodeId::Switch(b.switch(0, l));
            for d in 0..hpl {
                b.link(p(0), me, NodeId::Host(HostId(l * hpl + d)));
            }
            for x in 0..spines {
                for _ in 0..bundle {
                    b.link(p(1), me, sw(1, x));
                }
            }
        }
        for x in 0..spines {
            let me = NodeId::Switch(b.switch(1, x));
            for l in 0..leaves {
                for _ in 0..bundle {
                    b.link(p(1), me, sw(0, l));
                }
            }
        }
        return b.finish();
    }
    let (tors, b1) = n[0];
    let (aggs, b2) = n[1];
    let cores = n[2].0;
    let (lp, ap) = (tors / pods, aggs / pods);
    let group = cores / ap;
    for i in 0..tors {
        let me = NodeId::Switch(b.switch(0, i));
        let pod = i / lp;
        for d in 0..hpl {
            b.link(p(0), me, NodeId::Host(HostId(i * hpl + d)));
        }
        for a in 0..ap {
            for _ in 0..b1 {
                b.link(p(1), me, sw(1, pod * ap + a));
            }
        }
    }
    for i in 0..aggs {
        let me = NodeId::Switch(b.switch(1, i));
        let (pod, pos) = (i / ap, i % ap);
        for t in 0..lp {
            for _ in 0..b1 {
                b.link(p(1), me, sw(0, pod * lp + t));
            }
        }
        for c in 0..group {
            for _ in 0..b2 {
                b.link(p(2), me, sw(2, pos * group + c));
            }
        }
    }
    for i in 0..cores {
        let me = NodeId::Switch(b.switch(2, i));
        let pos = i / group;
        for pod in 0..pods {
            for _ in 0..b2 {
                b.link(p(2), me, sw(1, pod * ap + pos));
            }
        }
    }
    b.finish()
}
