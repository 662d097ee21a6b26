//! The lower bound holds on every run: random small scenarios (topology, workload including
//! connection matrices with flows both ways and trigger chains, collectives started late and
//! repeated, MoE layers (routing, capacity and server limits drawn), two jobs sharing the fabric, oversubscribed leaf-spines, random 2- and 3-tier Clos
//! (tapers, parallel cables, per-tier rates and latencies), imported SimAI graphs (GPUs on
//! NVSwitches, rail-optimized or not, dual-ToR, two planes), generated GPU clusters (the `ai`
//! kind: rails or not, dual-ToR, planes, tapers, NVLink domains), sizes, ACK sizes, paced
//! hosts, every scheme, loss recovery and congestion control, and on top each option those read:
//! a scheme's, a loss recovery's and a CC's own keys, ECN marking, PFC, link failures and
//! convergence, telemetry, rank placement and all-to-all orders, NIC port policies) never finish before their
//! bound, nor does any collective before its own; they conserve packets and deliver every byte
//! exactly once; and each gives the same flows, counters and telemetry when it is cut into two
//! or three partitions. CI draws 2,000 cases; `LBSIM_PROPTEST_CASES` sets the count, and the
//! ignored `nightly_*` test draws 20,000.

mod common;

use lbsim::stats::telemetry::Collected;
use lbsim::{Origin, Scenario, ScenarioFile, Simulation};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};

#[derive(Clone, Debug)]
enum Topo {
    FatTree(u32),
    LeafSpine {
        leaves: u32,
        hosts: u32,
        spines: u32,
        oversubscription: u32,
    },
    /// A Clos from per-tier radices: `tiers` as (down, up, gbps factor x 10, latency in ns),
    /// lowest first, hosts, hosts per pod (three tiers).
    Clos {
        hosts: u32,
        pod_hosts: Option<u32>,
        tiers: Vec<(u32, u32, u32, u32)>,
    },
    /// A SimAI topology file as its generator shapes them: servers of `gps` GPUs with `nv`
    /// NVSwitches each (NVLink at `nvlink` x the NIC rate), rail-optimized leaves (one per
    /// GPU position) or one leaf per server, each doubled when `dual` (dual-ToR), the doubles
    /// on their own spines when `planes`; `spines` spines (per plane) at (rate in tenths of
    /// the NIC's, latency in ns).
    Simai {
        servers: u32,
        gps: u32,
        nv: u32,
        rail: bool,
        dual: bool,
        planes: bool,
        spines: u32,
        nvlink: u32,
        spine: (u32, u32),
    },
    /// The `ai` kind: `servers` of `gpus`, NICs of `ports` over `planes`, rail leaves or not,
    /// `leaf_servers` a leaf, spines from the taper `over` and the uplinks' rate (tenths of the
    /// NIC's), NVLink at `nvlink` x the NIC rate (0: none) over `domain` servers.
    Ai {
        servers: u32,
        gpus: u32,
        ports: u32,
        planes: u32,
        rails: bool,
        leaf_servers: u32,
        over: u32,
        up_tenths: u32,
        nvlink: u32,
        domain: u32,
    },
}

impl Topo {
    fn hosts(&self) -> u32 {
        match *self {
            Topo::FatTree(k) => k * k * k / 4,
            Topo::LeafSpine { leaves, hosts, .. } => leaves * hosts,
            Topo::Clos { hosts, .. } => hosts,
            Topo::Simai { servers, gps, .. } => servers * gps,
            Topo::Ai { servers, gpus, .. } => servers * gpus,
        }
    }
}

/// The SimAI file of `t` (a `Topo::Simai`), NIC links at `gbps` and `ns`.
fn simai_text(t: &Topo, gbps: u32, ns: u32) -> String {
    let Topo::Simai {
        servers,
        gps,
        nv,
        rail,
        dual,
        planes,
        spines,
        nvlink,
        spine: (sg, sl),
    } = *t
    else {
        unreachable!("a SimAI topology")
    };
    let gpus = servers * gps;
    let nvs = servers * nv;
    let per_plane = if rail { gps } else { servers };
    let sides = if dual { 2 } else { 1 };
    let leaves = per_plane * sides;
    let spine_sets = if dual && planes { 2 } else { 1 };
    let switches = leaves + spines * spine_sets;
    let (nv0, leaf0) = (gpus, gpus + nvs);
    let spine0 = leaf0 + leaves;
    let mut links = Vec::new();
    for g in 0..gpus {
        let (server, pos) = (g / gps, g % gps);
        for j in 0..nv {
            links.push(format!(
                "{g} {} {}Gbps {}ns 0",
                nv0 + server * nv + j,
                gbps * nvlink,
                ns / 20
            ));
        }
        let leaf = if rail { pos } else { server };
        for side in 0..sides {
            links.push(format!(
                "{g} {} {gbps}Gbps {}us 0",
                leaf0 + side * per_plane + leaf,
                ns as f64 / 1000.0
            ));
        }
    }
    for l in 0..leaves {
        let set = if spine_sets == 2 { l / per_plane } else { 0 };
        for k in 0..spines {
            links.push(format!(
                "{} {} {}Gbps {}ns 0",
                leaf0 + l,
                spine0 + set * spines + k,
                (gbps as f64 * sg as f64 / 10.0),
                sl
            ));
        }
    }
    let ids: Vec<String> = (gpus..gpus + nvs + switches)
        .map(|i| i.to_string())
        .collect();
    format!(
        "{} {gps} {nvs} {switches} {} H100\n{} \n{}\n",
        gpus + nvs + switches,
        links.len(),
        ids.join(" "),
        links.join("\n")
    )
}

/// Random SimAI graphs: every shape its generator writes, at small sizes.
fn simai() -> impl Strategy<Value = Topo> {
    (
        (1u32..4, 1u32..4, 0u32..3),
        (any::<bool>(), any::<bool>(), any::<bool>()),
        (1u32..3, prop_oneof![Just(4u32), Just(16)], tier_link()),
    )
        .prop_map(
            |((servers, gps, nv), (rail, dual, planes), (spines, nvlink, spine))| Topo::Simai {
                servers: servers.max(if gps == 1 { 2 } else { 1 }),
                gps,
                nv,
                rail,
                dual,
                planes,
                spines,
                nvlink,
                spine,
            },
        )
}

#[derive(Clone, Debug)]
struct Case {
    topo: Topo,
    gbps: u32,
    latency_ns: u32,
    switch_ns: u32,
    buffer: u64,
    payload: u32,
    header: u32,
    ack: u32,
    scheme: usize,
    lr: usize,
    cc: usize,
    workload: usize,
    bytes: u64,
    /// Connection-matrix flows: (src, dst, bytes, start in ns, waits on the previous flow).
    cm: Vec<(u32, u32, u64, u32, bool)>,
    /// Collectives and jobs: start in microseconds, and repetitions.
    start_us: u32,
    iterations: u32,
    /// transport.rate_coef in hundredths.
    rate_coef: u32,
    seed: u64,
    /// Further options: (family in `EXTRAS`, a draw that picks its keys and values).
    extras: Vec<(usize, u32)>,
}

/// The families of options drawn on top of the core case. Each is applied only where the case
/// reads it (a scheme's keys with that scheme, ...), since anything else is refused as a no-op.
const EXTRAS: &[&str] = &[
    "scheme",
    "loss_recovery",
    "cc",
    "ecn",
    "pfc",
    "failure",
    "telemetry",
    "placement",
    "port",
];

const LRS: &[&str] = &["ideal_erasure", "erasure", "sack", "go_back_n", "trim"];
const CCS: &[&str] = &[
    "constant", "dctcp", "swift", "mswift", "nscc", "eqds", "dcqcn",
];
const WORKLOADS: &[&str] = &[
    "permutation",
    "all_to_all",
    "incast",
    "outcast",
    "connection_matrix",
    "ring_allreduce",
    "halving_doubling_allreduce",
    "fsdp",
    "ring_allgather",
    "ring_reduce_scatter",
    "pairwise_all_to_all",
    "jobs",
    "moe",
];

/// A tier's links: a rate of 5, 10 or 20 tenths of the host links' and a latency.
fn tier_link() -> impl Strategy<Value = (u32, u32)> {
    (
        prop_oneof![Just(5u32), Just(10), Just(20)],
        prop_oneof![Just(0u32), Just(200), Just(1500)],
    )
}

/// Random 2- and 3-tier Clos: any leaf and pod sizes, tapers (fewer uplinks than downlinks),
/// parallel cables, per-tier rates and latencies.
fn clos() -> impl Strategy<Value = Topo> {
    let two = (1u32..4, 1u32..4, 1u32..3, 1u32..3, tier_link()).prop_map(
        |(leaves, per_leaf, spines, bundle, (g, l))| {
            let per_leaf = per_leaf.max(if leaves == 1 { 2 } else { 1 });
            Topo::Clos {
                hosts: leaves * per_leaf,
                pod_hosts: None,
                tiers: vec![
                    (per_leaf, spines * bundle, 10, 0),
                    (leaves * bundle, 0, g, l),
                ],
            }
        },
    );
    let three = (
        (1u32..3, 1u32..3, 1u32..3),
        (1u32..3, 1u32..3, 1u32..3, 1u32..3),
        (tier_link(), tier_link()),
    )
        .prop_map(|((pods, tors, per_tor), (aggs, b1, group, b2), (t1, t2))| {
            let per_tor = per_tor.max(if pods * tors == 1 { 2 } else { 1 });
            Topo::Clos {
                hosts: pods * tors * per_tor,
                pod_hosts: Some(tors * per_tor),
                tiers: vec![
                    (per_tor, aggs * b1, 10, 0),
                    (tors * b1, group * b2, t1.0, t1.1),
                    (pods * b2, 0, t2.0, t2.1),
                ],
            }
        });
    prop_oneof![two, three]
}

/// Random `ai` clusters, valid by construction: leaves that divide the servers, tapers that
/// give a whole number of spines.
fn ai() -> impl Strategy<Value = Topo> {
    (
        (1u32..5, 1u32..4, 1u32..3, any::<bool>(), any::<bool>()),
        (
            any::<bool>(),
            1u32..3,
            prop_oneof![Just(5u32), Just(10), Just(20)],
        ),
        (
            prop_oneof![Just(0u32), Just(4), Just(16)],
            any::<bool>(),
            any::<bool>(),
        ),
    )
        .prop_map(
            |(
                (servers, gpus, ports, two_planes, rails),
                (whole, over, up_tenths),
                (nvlink, wide, _),
            )| {
                let gpus = if servers * gpus < 2 { 2 } else { gpus };
                let leaf_servers = if whole { servers } else { 1 };
                let down = if rails {
                    leaf_servers
                } else {
                    leaf_servers * gpus
                };
                // spines = down x 10 / (up_tenths x over) must be a whole number >= 1.
                let (over, up_tenths) = if (down * 10) % (up_tenths * over) == 0 {
                    (over, up_tenths)
                } else {
                    (1, 10)
                };
                Topo::Ai {
                    servers,
                    gpus,
                    ports,
                    planes: if ports == 2 && two_planes { 2 } else { 1 },
                    rails,
                    leaf_servers,
                    over,
                    up_tenths,
                    nvlink,
                    domain: if wide { servers } else { 1 },
                }
            },
        )
}

fn topo() -> impl Strategy<Value = Topo> {
    prop_oneof![
        1 => ai(),
        1 => clos(),
        1 => simai(),
        1 => prop_oneof![Just(2u32), Just(4)].prop_map(Topo::FatTree),
        1 => (1u32..4, 1u32..5, 1u32..3, prop_oneof![Just(1u32), Just(4)]).prop_map(
            |(leaves, hosts, spines, oversubscription)| Topo::LeafSpine {
                leaves,
                hosts: hosts.max(if leaves == 1 { 2 } else { 1 }),
                spines,
                oversubscription,
            }
        ),
    ]
}

fn case() -> impl Strategy<Value = Case> {
    (
        (
            topo(),
            // Slow links serialize a packet over several synchronization windows.
            prop_oneof![Just(1u32), Just(10), Just(100), Just(400), Just(800)],
            prop_oneof![Just(0u32), Just(100), Just(500), Just(1000)],
            prop_oneof![Just(0u32), Just(300)],
            prop_oneof![Just(12_000u64), Just(60_000), Just(800_000)],
            prop_oneof![Just(1000u32), Just(4096)],
            prop_oneof![Just(62u32), Just(82)],
            prop_oneof![Just(64u32), Just(1000), Just(4000)],
        ),
        (
            0usize..lbsim::lb::SCHEMES.len(),
            0usize..LRS.len(),
            prop_oneof![3 => Just(0usize), 1 => 1usize..CCS.len()],
            0usize..WORKLOADS.len(),
            prop_oneof![1u64..5000, 5000u64..200_000],
            prop::collection::vec(
                (0u32..64, 0u32..64, 1u64..100_000, 0u32..5000, any::<bool>()),
                1..8,
            ),
            prop_oneof![Just(0u32), Just(3), Just(20), Just(100)],
            1u32..4,
            prop_oneof![2 => Just(100u32), 1 => Just(50), 1 => Just(30)],
            any::<u64>(),
            prop::collection::vec((0usize..EXTRAS.len(), any::<u32>()), 0..4),
        ),
    )
        .prop_map(
            |(
                (topo, gbps, latency_ns, switch_ns, buffer, payload, header, ack),
                (
                    scheme,
                    lr,
                    cc,
                    workload,
                    bytes,
                    cm,
                    start_us,
                    iterations,
                    rate_coef,
                    seed,
                    extras,
                ),
            )| Case {
                topo,
                gbps,
                latency_ns,
                switch_ns,
                buffer,
                payload,
                header,
                ack,
                scheme,
                lr,
                cc,
                workload,
                bytes,
                cm,
                start_us,
                iterations,
                rate_coef,
                seed,
                extras,
            },
        )
}

/// Sets `key` to `value`, replacing an earlier setting of it.
fn set(s: &mut Vec<String>, key: &str, value: impl std::fmt::Display) {
    let prefix = format!("{key}=");
    s.retain(|k| !k.starts_with(&prefix));
    s.push(format!("{prefix}{value}"));
}

/// Applies the case's further options (`EXTRAS`) where it reads them; returns the families
/// applied.
fn extras(c: &Case, s: &mut Vec<String>) -> Vec<usize> {
    let scheme = lbsim::lb::SCHEMES[c.scheme].name;
    let (lr, cc, w) = (LRS[c.lr], CCS[c.cc], WORKLOADS[c.workload]);
    let mut applied = Vec::new();
    let mut drawn = Vec::new();
    for &(family, v) in &c.extras {
        // A family drawn twice keeps its first draw: the second's keys could contradict it.
        if drawn.contains(&family) {
            continue;
        }
        drawn.push(family);
        // `pick(k, xs)`: the k-th independent choice among xs from this draw.
        let pick = |k: u32, xs: &[&str]| -> String {
            let x = (v as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15 >> k) >> 7;
            xs[(x % xs.len() as u64) as usize].to_string()
        };
        let before = s.clone();
        match EXTRAS[family] {
            "scheme" => match scheme {
                "subflow" => set(s, "load_balancing.subflows", pick(0, &["1", "2", "8"])),
                "plb" => {
                    set(
                        s,
                        "load_balancing.plb_congested_fraction",
                        pick(0, &["0.1", "0.9"]),
                    );
                    set(s, "load_balancing.plb_rehash_rounds", pick(1, &["1", "12"]));
                    set(
                        s,
                        "load_balancing.plb_idle_rehash_rounds",
                        pick(2, &["1", "3"]),
                    );
                    set(
                        s,
                        "load_balancing.plb_suspend_us",
                        pick(3, &["1", "60000000"]),
                    );
                }
                "flowlet_ar" => set(s, "load_balancing.flowlet_gap_us", pick(0, &["0.5", "100"])),
                "switch_ar" => set(s, "load_balancing.ar_refresh_ns", pick(0, &["100", "5000"])),
                "reps" => {
                    set(s, "load_balancing.reps_freeze_us", pick(0, &["0", "100"]));
                    set(
                        s,
                        "load_balancing.reps_explore_packets",
                        pick(1, &["1", "64"]),
                    );
                }
                _ => {}
            },
            "loss_recovery" => match lr {
                "erasure" => set(
                    s,
                    "transport.erasure_extra_packets",
                    pick(0, &["0", "1", "200"]),
                ),
                "trim" => {
                    set(s, "topology.trim_header_bytes", pick(0, &["64", "128"]));
                    set(s, "topology.return_to_sender", pick(1, &["true", "false"]));
                    set(
                        s,
                        "topology.control_buffer_bytes",
                        c.buffer / pick(2, &["1", "10"]).parse::<u64>().unwrap(),
                    );
                }
                "sack" | "go_back_n" => {
                    if lr == "sack" {
                        set(s, "transport.reorder_threshold", pick(0, &["1", "10"]));
                    }
                    set(s, "transport.rto_us", pick(1, &["5", "1000"]));
                    set(s, "transport.rto_backoff", pick(2, &["true", "false"]));
                    if lr == "sack" {
                        set(s, "transport.tail_loss_probe", pick(3, &["true", "false"]));
                    }
                }
                _ => {}
            },
            "cc" => match cc {
                "dctcp" => {
                    set(s, "transport.dctcp.g", pick(0, &["0.0625", "0.5"]));
                    set(
                        s,
                        "transport.dctcp.min_window_packets",
                        pick(1, &["1", "2"]),
                    );
                    set(
                        s,
                        "transport.dctcp.additive_increase_packets",
                        pick(2, &["1", "4"]),
                    );
                }
                "swift" => {
                    set(s, "transport.swift.beta", pick(0, &["0.5", "0.8"]));
                    set(s, "transport.swift.per_hop_ns", pick(1, &["0", "500"]));
                    set(s, "transport.swift.init_cwnd_bdp", pick(2, &["0.5", "2"]));
                }
                "mswift" => set(
                    s,
                    "transport.mswift.median_window",
                    pick(0, &["1", "4", "16"]),
                ),
                "nscc" => {
                    set(s, "transport.nscc.maxwnd_bdp", pick(0, &["0.75", "3"]));
                    set(
                        s,
                        "transport.nscc.apply_interval_mtus",
                        pick(1, &["1", "8"]),
                    );
                }
                "eqds" => {
                    set(s, "transport.eqds.unsolicited_bdp", pick(0, &["0", "3"]));
                    set(s, "transport.eqds.pull_rate", pick(1, &["0.5", "0.99"]));
                }
                "dcqcn" => {
                    let profile = pick(0, &["nic", "paper"]);
                    set(s, "transport.dcqcn.profile", &profile);
                    if profile == "nic" {
                        let clamp = pick(1, &["true", "false"]);
                        set(s, "transport.dcqcn.clamp_target_rate", clamp);
                    }
                    set(s, "transport.dcqcn.cnp_interval_us", pick(2, &["1", "50"]));
                }
                _ => {}
            },
            "ecn" => {
                let tenths: u64 = pick(0, &["1", "5", "9"]).parse().unwrap();
                let k = c.buffer * tenths / 10;
                set(s, "topology.ecn_threshold_bytes", k);
                if pick(1, &["step", "red"]) == "red" {
                    set(s, "topology.ecn_kmax_bytes", (k + c.buffer) / 2 + 1);
                    set(s, "topology.ecn_pmax", pick(2, &["0.2", "1.0"]));
                }
            }
            // PFC makes the data class lossless, which trimming contradicts. Its headroom (two
            // link latencies at the fastest rate) can reach a few MB on the drawn fabrics.
            "pfc" if lr != "trim" => {
                set(s, "topology.pfc", "true");
                set(s, "topology.buffer_bytes", c.buffer + 8_000_000);
                if pick(0, &["derived", "given"]) == "given" {
                    set(s, "topology.pfc_xoff_bytes", c.buffer + 1_000_000);
                    set(s, "topology.pfc_xon_bytes", (c.buffer + 1_000_000) / 2);
                }
            }
            "pfc" => {}
            "failure" => {
                let kind = pick(0, &["down", "degraded", "flaky"]);
                s.retain(|k| !k.starts_with("failures.0."));
                set(s, "failures.0.kind", &kind);
                set(s, "failures.0.random_fraction", pick(1, &["0.05", "0.3"]));
                set(s, "failures.0.at_us", pick(2, &["0", "3"]));
                if pick(3, &["", "recover"]) == "recover" {
                    set(s, "failures.0.recover_at_us", "40");
                }
                match kind.as_str() {
                    "degraded" => set(s, "failures.0.rate_fraction", pick(4, &["0.1", "0.5"])),
                    "flaky" => {
                        set(s, "failures.0.loss_good", "0");
                        set(s, "failures.0.loss_bad", pick(4, &["0.3", "1"]));
                        set(s, "failures.0.p_good_to_bad", "0.05");
                        set(s, "failures.0.p_bad_to_good", "0.2");
                    }
                    _ => {}
                }
                if pick(5, &["", "converge"]) == "converge" {
                    set(s, "failure.convergence_us", pick(6, &["0", "5", "1000"]));
                }
                if cc == "constant" && pick(7, &["", "aware"]) == "aware" {
                    set(s, "transport.failure_aware_rate", "true");
                }
            }
            "telemetry" => {
                set(s, "telemetry.enabled", "true");
                set(s, "telemetry.sample_ns", pick(0, &["730", "5000"]));
                set(s, "telemetry.flows", pick(1, &["none", "all"]));
                set(
                    s,
                    "telemetry.events",
                    pick(
                        2,
                        &["\"none\"", "[\"drops\",\"marks\",\"trims\",\"pauses\"]"],
                    ),
                );
            }
            "port" => {
                // A host-side port policy needs hosts with several ports.
                if matches!(c.topo, Topo::Ai { ports, .. } if ports > 1) {
                    let port = pick(0, &lbsim::lb::port::port_names());
                    set(s, "load_balancing.port", &port);
                    if port == "adaptive" {
                        set(
                            s,
                            "load_balancing.port_hold_us",
                            pick(1, &["0", "8", "100"]),
                        );
                        set(
                            s,
                            "load_balancing.port_loss_hold_us",
                            pick(2, &["0", "1000"]),
                        );
                    }
                }
            }
            "placement" => {
                // Rail-aligned placement and PXN need servers: a fabric with NVLink domains.
                let servers = matches!(c.topo, Topo::Ai { nvlink, .. } if nvlink > 0)
                    || matches!(c.topo, Topo::Simai { nv, .. } if nv > 0);
                if matches!(
                    w,
                    "ring_allreduce"
                        | "halving_doubling_allreduce"
                        | "ring_allgather"
                        | "ring_reduce_scatter"
                        | "pairwise_all_to_all"
                        | "incast"
                        | "outcast"
                        | "moe"
                ) {
                    set(s, "workload.gpus_per_host", pick(0, &["1", "2", "4"]));
                    let placements: &[&str] = if servers {
                        &["linear", "random", "per_tor", "rail_aligned"]
                    } else {
                        &["linear", "random", "per_tor"]
                    };
                    set(s, "workload.placement", pick(1, placements));
                }
                if w == "all_to_all" {
                    set(
                        s,
                        "workload.all_to_all_algorithm",
                        pick(0, &["direct", "shifted", "pairwise"]),
                    );
                }
                let collective = !matches!(w, "permutation" | "connection_matrix" | "jobs");
                if servers && collective && pick(2, &["", "pxn"]) == "pxn" {
                    set(s, "workload.pxn", "true");
                }
            }
            _ => unreachable!(),
        }
        if *s != before {
            applied.push(family);
        }
    }
    applied
}

/// The scenario's overrides, and the connection-matrix text if it has one.
fn sets(c: &Case) -> (Vec<String>, Option<String>) {
    let mut s = vec![
        format!("seed={}", c.seed % 1000),
        format!("topology.link_gbps={}", c.gbps),
        format!("topology.link_latency_ns={}", c.latency_ns),
        format!("topology.switch_latency_ns={}", c.switch_ns),
        format!("topology.buffer_bytes={}", c.buffer),
        format!("packet.payload_bytes={}", c.payload),
        format!("packet.header_bytes={}", c.header),
        format!("packet.ack_bytes={}", c.ack),
        format!(
            "load_balancing.scheme={}",
            lbsim::lb::SCHEMES[c.scheme].name
        ),
        format!("transport.loss_recovery={}", LRS[c.lr]),
        format!("transport.cc={}", CCS[c.cc]),
        format!("workload.message_bytes={}", c.bytes),
        format!("transport.rate_coef={}", c.rate_coef as f64 / 100.0),
        // A cap keeps pathological combinations (go-back-N under spraying) short; a run it
        // stops has no CCT and only the invariants are checked.
        "end_time_us=20000".to_string(),
    ];
    match &c.topo {
        &Topo::FatTree(k) => s.push(format!("topology.k={k}")),
        &Topo::LeafSpine {
            leaves,
            hosts,
            spines,
            oversubscription,
        } => s.extend([
            "topology.kind=leaf_spine".to_string(),
            format!("topology.leaves={leaves}"),
            format!("topology.hosts_per_leaf={hosts}"),
            format!("topology.spines={spines}"),
            format!("topology.oversubscription={oversubscription}"),
        ]),
        Topo::Clos {
            hosts,
            pod_hosts,
            tiers,
        } => {
            s.extend([
                "topology.kind=clos".to_string(),
                format!("topology.hosts={hosts}"),
            ]);
            if let Some(p) = pod_hosts {
                s.push(format!("topology.pod_hosts={p}"));
            }
            let t: Vec<String> = tiers
                .iter()
                .map(|&(down, up, g, l)| {
                    format!(
                        "{{down={down},up={up},gbps={},latency_ns={l}}}",
                        c.gbps as f64 * g as f64 / 10.0
                    )
                })
                .collect();
            s.push(format!("topology.tier=[{}]", t.join(",")));
        }
        &Topo::Ai {
            servers,
            gpus,
            ports,
            planes,
            rails,
            leaf_servers,
            over,
            up_tenths,
            nvlink,
            domain,
        } => s.extend([
            "topology.kind=ai".to_string(),
            format!("topology.servers={servers}"),
            format!("topology.leaf_servers={leaf_servers}"),
            format!("topology.rails={rails}"),
            format!("topology.planes={planes}"),
            format!("topology.oversubscription={over}"),
            format!(
                "topology.uplink_gbps={}",
                c.gbps as f64 * up_tenths as f64 / 10.0
            ),
            format!("topology.server.gpus={gpus}"),
            format!("topology.server.nic_ports={ports}"),
            format!("topology.server.nvlink_gbps={}", c.gbps * nvlink),
            format!("topology.server.nvlink_latency_ns={}", c.latency_ns / 20),
            format!("topology.server.domain_servers={domain}"),
        ]),
        // The file gives every link (written by `check`).
        Topo::Simai { .. } => s.retain(|k| {
            !["link_gbps", "link_latency_ns", "switch_latency_ns"]
                .iter()
                .any(|key| k.starts_with(&format!("topology.{key}=")))
        }),
    }
    let n = c.topo.hosts();
    let w = WORKLOADS[c.workload];
    if w == "jobs" {
        // Two jobs, the second on the upper half of the hosts (all of them if too few) and
        // started later: a ring all-reduce and a ring all-gather, each repeated.
        s.retain(|k| !k.starts_with("workload."));
        let g = (n / 2).max(2);
        let first = if n >= 4 { n / 2 } else { 0 };
        for (j, kind, first, start) in [
            (0, "ring_allreduce", 0, c.start_us),
            (1, "ring_allgather", first, c.start_us + 7),
        ] {
            s.extend([
                format!("jobs.{j}.kind={kind}"),
                format!("jobs.{j}.group_size={g}"),
                format!("jobs.{j}.first_host={first}"),
                format!("jobs.{j}.message_bytes={}", c.bytes),
                format!("jobs.{j}.start_us={start}"),
                format!("jobs.{j}.iterations={}", c.iterations),
            ]);
        }
        return (s, None);
    }
    if w == "pairwise_all_to_all" {
        s.extend([
            "workload.kind=all_to_all".to_string(),
            "workload.all_to_all_algorithm=pairwise".to_string(),
        ]);
    } else {
        s.push(format!("workload.kind={w}"));
    }
    if matches!(
        w,
        "ring_allreduce"
            | "halving_doubling_allreduce"
            | "fsdp"
            | "ring_allgather"
            | "ring_reduce_scatter"
            | "pairwise_all_to_all"
    ) {
        // Started late and repeated: each collective's bound is measured from its own start.
        s.extend([
            format!("workload.start_us={}", c.start_us),
            format!("workload.iterations={}", c.iterations),
        ]);
    }
    if matches!(w, "incast" | "outcast") {
        s.push(format!(
            "workload.fan_in={}",
            (c.seed as u32 % n.max(2)).max(1)
        ));
    }
    if w == "halving_doubling_allreduce" {
        let g = 1u32 << (31 - n.leading_zeros());
        s.push(format!("workload.group_size={g}"));
    }
    if w == "fsdp" {
        // Two layers, so each collective's end gates the next after a compute; several ranks a
        // host in ring order put most steps inside a server (the barriers' host-link terms).
        s.extend([
            "workload.layers=2".to_string(),
            format!("workload.layer_bytes={}", c.bytes * 4),
            format!("workload.compute_us_per_layer={}", c.seed % 7 * 10),
            format!("workload.gpus_per_host={}", 1 + c.seed / 7 % 8),
            format!(
                "workload.placement={}",
                if (c.seed / 56).is_multiple_of(2) {
                    "linear"
                } else {
                    "random"
                }
            ),
        ]);
    }
    if w == "moe" {
        // Up to 8 GPUs of 1-3 experts each, sizes from the drawn bytes, every routing option
        // and the relayed (hierarchical) phases drawn from the seed (a server limit of 1 with top_k within one GPU's experts, so it
        // is always feasible), two layers, started late and repeated.
        let g = n.clamp(2, 8) as u64;
        let per = 1 + c.seed % 3;
        let limited = c.seed.is_multiple_of(4);
        let top = if limited {
            1 + c.seed / 4 % per
        } else {
            1 + c.seed / 4 % (g * per)
        };
        let tokens = 1 + c.seed / 16 % 32;
        s.extend([
            format!("workload.moe_experts={}", g * per),
            format!("workload.moe_experts_per_gpu={per}"),
            format!("workload.moe_top_k={top}"),
            format!("workload.moe_max_servers={}", u64::from(limited)),
            format!("workload.moe_tokens_per_gpu={tokens}"),
            format!("workload.moe_hidden={}", (c.bytes / tokens).max(1)),
            format!(
                "workload.moe_combine_bytes_per_element={}",
                1 + c.seed / 512 % 2
            ),
            "workload.moe_layers=2".to_string(),
            format!(
                "workload.moe_backward={}",
                (c.seed / 1024).is_multiple_of(2)
            ),
            format!(
                "workload.moe_hierarchical={}",
                (c.seed / 3).is_multiple_of(2)
            ),
            format!("workload.moe_compute_us={}", c.seed % 5 * 3),
            format!("workload.moe_layer_gap_us={}", c.seed % 3 * 2),
            format!("workload.start_us={}", c.start_us),
            format!("workload.iterations={}", c.iterations),
        ]);
        match c.seed / 2048 % 3 {
            0 => {}
            1 => s.extend([
                "workload.moe_popularity=\"zipf\"".to_string(),
                "workload.moe_zipf_exponent=1.2".to_string(),
                "workload.moe_capacity_factor=1.1".to_string(),
            ]),
            _ => s.push(format!(
                "workload.moe_capacity_factor={}",
                1 + c.seed / 8192 % 3
            )),
        }
    }
    if w != "connection_matrix" {
        return (s, None);
    }
    // Flows both ways between random pairs; some wait on the previous flow's receiver.
    let mut text = format!("Nodes {n}\n");
    let mut lines = Vec::new();
    let mut triggers = Vec::new();
    let mut id = 1;
    for (i, &(a, b, size, start_ns, wait)) in c.cm.iter().enumerate() {
        let (src, mut dst) = (a % n, b % n);
        if src == dst {
            dst = (dst + 1) % n;
        }
        for (x, y) in [(src, dst), (dst, src)] {
            let mut l = format!(
                "{x}->{y} id {id} start {} size {size}",
                start_ns as u64 * 1000
            );
            if wait && i > 0 {
                l.push_str(&format!(" trigger {}", i));
            }
            if i + 1 < c.cm.len() && x == src {
                l.push_str(&format!(" recv_done_trigger {}", i + 1));
                triggers.push(format!("trigger id {} oneshot", i + 1));
            }
            lines.push(l);
            id += 1;
        }
    }
    text.push_str(&format!("Connections {}\n", lines.len()));
    text.push_str(&format!("Triggers {}\n", triggers.len()));
    for t in &triggers {
        text.push_str(t);
        text.push('\n');
    }
    for l in &lines {
        text.push_str(l);
        text.push('\n');
    }
    (s, Some(text))
}

/// What a case exercised.
#[derive(Default)]
struct Seen {
    ran: bool,
    /// Finished with a CCT.
    finished: bool,
    /// Lost or trimmed packets.
    lossy: bool,
    /// A collective that started after time zero finished.
    late: bool,
    /// The `EXTRAS` families it ran with.
    extras: Vec<usize>,
}

fn check(c: &Case, dir: &std::path::Path, i: u64) -> Result<Seen, TestCaseError> {
    let (mut s, cm) = sets(c);
    let applied = extras(c, &mut s);
    if let Topo::Simai { .. } = c.topo {
        let path = dir.join(format!("{i}.simai"));
        std::fs::write(&path, simai_text(&c.topo, c.gbps, c.latency_ns)).unwrap();
        s.push(format!("topology.simai_topo=\"{}\"", path.display()));
    }
    if let Some(text) = &cm {
        let path = dir.join(format!("{i}.cm"));
        std::fs::write(&path, text).unwrap();
        s.push(format!("workload.path=\"{}\"", path.display()));
    }
    let verbose = std::env::var_os("LBSIM_PROPTEST_VERBOSE").is_some();
    let file = match ScenarioFile::builtin(&s) {
        Ok(f) => f,
        Err(e) => {
            if verbose {
                eprintln!("skip: {e}");
            }
            return Ok(Seen::default());
        }
    };
    // Some draws are unworkable (an ECN-driven CC whose threshold never marks, a scheme that
    // needs a fat-tree): the scenario says so, and the case is skipped.
    let sc = match Scenario::build(file, &Origin::builtin()) {
        Ok(sc) => sc,
        Err(e) => {
            if verbose {
                eprintln!("skip: {e}");
            }
            return Ok(Seen::default());
        }
    };
    let labels = sc.labels.clone();
    let telemetry = sc.telemetry.is_some();
    let clock = std::time::Instant::now();
    let mut split = Simulation::new(sc.clone());
    let mut sim = Simulation::new(sc);
    let (mut rows, mut split_rows) = (Collected::default(), Collected::default());
    let run = |sim: &mut Simulation, rows: &mut Collected| {
        if telemetry {
            sim.run_with(&mut |_| true, Some(rows));
        } else {
            sim.run();
        }
    };
    run(&mut sim, &mut rows);
    // The same run cut into partitions (where the scenario allows) gives the same results.
    split.set_threads(2 + (c.seed % 2) as usize);
    run(&mut split, &mut split_rows);
    if telemetry {
        prop_assert!(
            !rows.port_index.is_empty() && !rows.ports.is_empty(),
            "{:?}",
            s
        );
        prop_assert_eq!(
            format!(
                "{:?}",
                (&split_rows.ports, &split_rows.flows, &split_rows.events)
            ),
            format!("{:?}", (&rows.ports, &rows.flows, &rows.events)),
            "telemetry: {:?} {:?}",
            s,
            cm
        );
    }
    prop_assert_eq!(
        format!("{:?}", split.flow_records()),
        format!("{:?}", sim.flow_records()),
        "{:?} on {:?} threads: {:?} {:?}",
        split
            .parallel()
            .map(|p| matches!(p, lbsim::sim::Parallel::Ran(_))),
        2 + c.seed % 2,
        s,
        cm
    );
    prop_assert_eq!(split.counters(), sim.counters(), "{:?} {:?}", s, cm);
    common::check_conservation_of(&sim, &format!("{s:?} {cm:?}"));
    for f in sim.flows() {
        if f.finish.is_some() {
            prop_assert_eq!(f.recv_bytes, f.spec.size_bytes, "each byte once: {:?}", s);
        }
    }
    let sum = sim.summary();
    if let Some(cct) = sum.cct_ps {
        prop_assert!(
            cct >= sum.lower_bound_ps,
            "CCT {} < bound {}: {:?} {:?}",
            cct,
            sum.lower_bound_ps,
            s,
            cm
        );
        prop_assert!(sum.lower_bound_ps >= sum.lower_bound_ignoring_deps_ps);
    }
    let report = lbsim::stats::collectives::report(&labels, &sim.flow_records());
    let mut late = false;
    for r in &report.collectives {
        if let Some(cct) = r.cct_ps {
            prop_assert!(cct >= r.bound_ps, "collective {:?}: {:?}", r, s);
            late |= r.start_ps.is_some_and(|t| t > 0);
        }
    }
    if verbose && clock.elapsed().as_secs_f64() > 1.0 {
        eprintln!("slow: {:.1} s: {s:?}", clock.elapsed().as_secs_f64());
    }
    Ok(Seen {
        ran: true,
        finished: sum.cct_ps.is_some(),
        lossy: sum.packets_dropped + sum.packets_trimmed > 0,
        late,
        extras: applied,
    })
}

/// CCT over bound of a scenario of one flow, built from `sets` on the built-in one, and the
/// flow's hosts.
fn ratio(sets: &[&str]) -> (f64, (u32, u32)) {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let file = ScenarioFile::builtin(&sets).unwrap();
    let sc = Scenario::build(file, &Origin::builtin()).unwrap();
    assert_eq!(sc.flows.len(), 1, "{sets:?}");
    let hosts = (sc.flows[0].src.0, sc.flows[0].dst.0);
    let mut sim = Simulation::new(sc);
    sim.run();
    eprintln!("{sets:?}: CCT/bound {:?}", sim.summary().cct_over_bound);
    (sim.summary().cct_over_bound.unwrap(), hosts)
}

#[test]
fn a_lone_flow_is_bounded_by_its_pacer_and_its_leaf_uplinks() {
    // The idealized sender at rate_coef x line rate: its FCT is its paced packets plus the
    // tail, and so is the bound (the hand calculation is in stats::bound's unit tests).
    let lone = [
        "topology.k=4",
        "workload.kind=incast",
        "workload.fan_in=1",
        "workload.message_bytes=1048576",
    ];
    for coef in ["0.5", "0.3"] {
        let mut sets = lone.to_vec();
        let c = format!("transport.rate_coef={coef}");
        sets.push(&c);
        let (x, _) = ratio(&sets);
        assert!((1.0..1.001).contains(&x), "rate_coef {coef}: CCT/bound {x}");
    }
    // One host a leaf over 2 spines of 25 Gb/s (oversubscribed 2:1): a sprayed lone flow
    // between the leaves runs at the 50 Gb/s of its leaf's uplinks, which the bound counts.
    let (x, (src, dst)) = ratio(&[
        "topology.kind=leaf_spine",
        "topology.hosts_per_leaf=1",
        "topology.leaves=2",
        "topology.spines=2",
        "topology.oversubscription=2",
        "topology.link_gbps=100",
        "load_balancing.scheme=host_spray",
        "workload.kind=incast",
        "workload.fan_in=1",
        "workload.message_bytes=262144",
        "topology.buffer_bytes=4000000",
    ]);
    assert_ne!(src, dst, "one host a leaf: a flow between leaves");
    assert!((1.0..1.01).contains(&x), "leaf-spine 4:1: CCT/bound {x}");
}

#[test]
fn every_run_meets_its_lower_bound_conserves_packets_and_delivers_once() {
    let cases: u32 = std::env::var("LBSIM_PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000);
    property(cases);
}

/// Ten times CI's draw (`cargo test --release --test bound_property -- --ignored`).
#[test]
#[ignore = "nightly: 20,000 random scenarios"]
fn nightly_every_run_meets_its_lower_bound_conserves_packets_and_delivers_once() {
    property(20_000);
}

fn property(cases: u32) {
    let dir = common::TempDir::new("bound-prop", "cases");
    let mut runner = TestRunner::new_with_rng(
        Config {
            cases,
            failure_persistence: None,
            ..Config::default()
        },
        proptest::test_runner::TestRng::deterministic_rng(
            proptest::test_runner::RngAlgorithm::ChaCha,
        ),
    );
    let seen = std::cell::RefCell::new(([0u32; 4], vec![0u32; EXTRAS.len()]));
    let counter = std::cell::Cell::new(0u64);
    let result = runner.run(&case(), |c| {
        counter.set(counter.get() + 1);
        let got = check(&c, &dir, counter.get())?;
        let mut seen = seen.borrow_mut();
        for (k, hit) in [got.ran, got.finished, got.lossy, got.late]
            .into_iter()
            .enumerate()
        {
            seen.0[k] += hit as u32;
        }
        if got.ran {
            for f in got.extras {
                seen.1[f] += 1;
            }
        }
        Ok(())
    });
    result.unwrap();
    let ([ran, finished, lossy, late], extras) = seen.into_inner();
    eprintln!(
        "{cases} random scenarios: {ran} ran, {finished} finished, {lossy} lost packets, \
         {late} finished a collective that started after zero; further options ran: {:?}",
        EXTRAS.iter().zip(&extras).collect::<Vec<_>>()
    );
    // Most draws must run and finish, and some must lose packets, or the property says little.
    assert!(ran * 10 >= cases * 7, "only {ran} of {cases} cases ran");
    assert!(
        finished * 2 >= ran,
        "only {finished} of {ran} runs finished"
    );
    assert!(lossy * 20 >= ran, "only {lossy} of {ran} runs lost packets");
    assert!(
        late * 10 >= ran,
        "only {late} of {ran} runs had a late collective"
    );
    // Every family of further options must have run in some cases, or it is not tested.
    for (name, &n) in EXTRAS.iter().zip(&extras) {
        assert!(
            n * 100 >= ran,
            "options {name} ran in only {n} of {ran} runs"
        );
    }
}
