//! `workload.kind = "moe"`: Mixture-of-Experts expert parallelism. An expert-parallel group of
//! experts / experts_per_gpu GPUs holds the routed experts in order (expert e on the group's
//! rank e / experts_per_gpu). Per layer every GPU routes its tokens, each to `top_k` distinct
//! experts drawn by popularity; the dispatch all-to-all sends each token once to every GPU that
//! holds one of its experts (as DeepEP does: the GPU applies its experts to one copy), the
//! experts compute, and the combine all-to-all sends the results back over the reversed pairs.
//! With `hierarchical`, a token bound for another server is relayed as DeepEP's internode
//! kernels do (see `relayed`).
//!
//! Routing, per token: experts are drawn one at a time without replacement, each with
//! probability proportional to its weight among those still allowed (successive sampling).
//! With `max_servers` M > 0, once a token's experts span M servers only experts on those
//! servers are allowed. With a capacity, tokens are then admitted to their experts in the order
//! token 0 of every rank, token 1 of every rank, ... (so no rank is favoured), each token's
//! experts in draw order, and an expert full by then drops the token (an assignment dropped).
//! A token still goes to a GPU if one of its other experts there kept it.
//!
//! Phases chain as whole collectives (every flow of one received, then the compute), as FSDP's
//! do: per layer forward, the gap (attention), dispatch, expert compute, combine; then backward,
//! last layer first: the combine's reverse (gradients to the experts, combine's bytes per
//! element), twice the expert compute, the dispatch's reverse (gradients back, dispatch's bytes
//! per element), twice the gap.

use std::collections::BTreeMap;
use std::ops::Range;

use rand::Rng;

use super::collective::{self, Algo, Builder, CollectiveInfo, Cond, Labels};
use crate::rng::{mix64, rng_for, SimRng, Stream};
use crate::time::SimTime;

/// How tokens choose experts.
#[derive(Clone, Debug, PartialEq)]
pub struct Router {
    pub tokens_per_gpu: u32,
    pub experts: u32,
    pub top_k: u32,
    pub experts_per_gpu: u32,
    /// Per expert, its popularity (non-negative, at least `top_k` positive).
    pub weights: Vec<f64>,
    /// The most tokens an expert takes per layer (None: no cap).
    pub capacity: Option<u64>,
    /// The most servers a token's experts lie on (0: any number).
    pub max_servers: u32,
}

/// One layer's routing over a group of ranks.
#[derive(Clone, Debug, PartialEq)]
pub struct Routing {
    /// Ranks in the group.
    pub ranks: u32,
    /// Per token (rank r's token t at (r x tokens_per_gpu + t) x top_k), its experts in draw
    /// order.
    pub experts: Vec<u32>,
    /// Per entry of `experts`: whether the expert kept the token (false: dropped by capacity).
    pub kept: Vec<bool>,
    /// Assignments dropped by the capacity.
    pub dropped: u64,
    /// Per expert, the tokens it kept.
    pub load: Vec<u64>,
}

impl Routing {
    /// Per ordered pair (src x ranks + dst): the tokens of `src` sent to `dst`, each once
    /// whatever the number of its experts there (including src = dst: tokens that stay).
    pub fn pair_tokens(&self, r: &Router) -> Vec<u64> {
        let n = self.ranks as usize;
        let (t, k) = (r.tokens_per_gpu as usize, r.top_k as usize);
        let mut out = vec![0u64; n * n];
        let mut gpus: Vec<u32> = Vec::with_capacity(k);
        for src in 0..n {
            for tok in 0..t {
                let at = (src * t + tok) * k;
                gpus.clear();
                for i in at..at + k {
                    if self.kept[i] {
                        let g = self.experts[i] / r.experts_per_gpu;
                        if !gpus.contains(&g) {
                            gpus.push(g);
                        }
                    }
                }
                for &g in &gpus {
                    out[src * n + g as usize] += 1;
                }
            }
        }
        out
    }

    /// Per (rank, server) with `servers` each rank's: the tokens of the rank with at least one
    /// kept expert on a GPU of the server.
    pub fn server_tokens(&self, r: &Router, servers: &[u32]) -> BTreeMap<(u32, u32), u64> {
        let n = self.ranks as usize;
        let (t, k) = (r.tokens_per_gpu as usize, r.top_k as usize);
        let mut out = BTreeMap::new();
        let mut seen: Vec<u32> = Vec::with_capacity(k);
        for src in 0..n {
            for tok in 0..t {
                let at = (src * t + tok) * k;
                seen.clear();
                for i in at..at + k {
                    let s = servers[(self.experts[i] / r.experts_per_gpu) as usize];
                    if self.kept[i] && !seen.contains(&s) {
                        seen.push(s);
                        *out.entry((src as u32, s)).or_default() += 1;
                    }
                }
            }
        }
        out
    }
}

/// Rejection draws from the whole popularity before a token's draw scans the allowed experts.
const TRIES: u32 = 16;

/// Routes every token of a group of ranks whose servers are `servers` (one entry per rank, the
/// group's rank count) for one layer, drawing from `rng`. The router must be valid (see
/// `workload::resolve`): enough positive weights, and enough experts on any `max_servers`
/// servers.
pub fn route(r: &Router, servers: &[u32], rng: &mut SimRng) -> Routing {
    let n = servers.len();
    let (t, k) = (r.tokens_per_gpu as usize, r.top_k as usize);
    let e = r.experts as usize;
    let mut cum = Vec::with_capacity(e);
    let mut total = 0.0f64;
    for &w in &r.weights {
        total += w;
        cum.push(total);
    }
    let server = |x: u32| servers[(x / r.experts_per_gpu) as usize];
    let mut experts = Vec::with_capacity(n * t * k);
    let mut chosen: Vec<u32> = Vec::with_capacity(k);
    let mut srv: Vec<u32> = Vec::with_capacity(k);
    for _ in 0..n * t {
        chosen.clear();
        srv.clear();
        for _ in 0..k {
            let limited = r.max_servers > 0 && srv.len() >= r.max_servers as usize;
            let allowed = |x: u32, chosen: &[u32]| {
                r.weights[x as usize] > 0.0
                    && !chosen.contains(&x)
                    && (!limited || srv.contains(&server(x)))
            };
            let mut got = None;
            for _ in 0..TRIES {
                let u = rng.gen::<f64>() * total;
                let x = cum.partition_point(|&c| c <= u).min(e - 1) as u32;
                if allowed(x, &chosen) {
                    got = Some(x);
                    break;
                }
            }
            let x = got.unwrap_or_else(|| {
                // The allowed experts' weights, scanned: a draw among them alone.
                let sum: f64 = (0..r.experts)
                    .filter(|&x| allowed(x, &chosen))
                    .map(|x| r.weights[x as usize])
                    .sum();
                let mut u = rng.gen::<f64>() * sum;
                let mut last = None;
                for x in (0..r.experts).filter(|&x| allowed(x, &chosen)) {
                    last = Some(x);
                    u -= r.weights[x as usize];
                    if u < 0.0 {
                        return x;
                    }
                }
                // Rounding left u at or just above zero: the last allowed expert.
                last.expect("a valid router always has an allowed expert")
            });
            chosen.push(x);
            if !srv.contains(&server(x)) {
                srv.push(server(x));
            }
        }
        experts.extend_from_slice(&chosen);
    }
    let mut kept = vec![true; experts.len()];
    let mut load = vec![0u64; e];
    let mut dropped = 0;
    // Admission by capacity: token 0 of every rank, then token 1, ..., each token's experts in
    // draw order.
    for tok in 0..t {
        for src in 0..n {
            let at = (src * t + tok) * k;
            for i in at..at + k {
                let x = experts[i] as usize;
                if r.capacity.is_some_and(|c| load[x] >= c) {
                    kept[i] = false;
                    dropped += 1;
                } else {
                    load[x] += 1;
                }
            }
        }
    }
    Routing {
        ranks: n as u32,
        experts,
        kept,
        dropped,
        load,
    }
}

/// A `moe` job: the router, sizes and times of its layers.
#[derive(Clone, Debug, PartialEq)]
pub struct MoeModel {
    pub router: Router,
    pub hidden: u32,
    pub dispatch_bytes_per_element: u32,
    pub combine_bytes_per_element: u32,
    /// Forward expert compute between a dispatch and its combine (backward: twice).
    pub compute: SimTime,
    /// Forward compute before each layer's dispatch (backward: twice, after its dispatch's
    /// reverse).
    pub layer_gap: SimTime,
    pub layers: u32,
    pub backward: bool,
    /// Tokens for another server relayed by the GPU there on their own GPU's rail (DeepEP's
    /// internode dispatch and combine).
    pub hierarchical: bool,
    /// The server of every rank of the job (all its groups, in placement order).
    pub servers: Vec<u32>,
    /// Each server's hosts (the fabric's NVLink domains, or one host each).
    pub runs: Vec<Range<u32>>,
    pub seed: u64,
}

/// One layer's routing outcome, for summary.json.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct MoeLayerInfo {
    pub job: u32,
    pub group: u32,
    pub iteration: u32,
    pub layer: u32,
    /// Token-to-expert assignments drawn (tokens x top_k).
    pub assignments: u64,
    /// Of which dropped by the capacity.
    pub dropped: u64,
    /// The most tokens one expert kept, and the mean (assignments kept / experts).
    pub max_expert_tokens: u64,
    pub mean_expert_tokens: f64,
}

/// The routing stream of one layer of one iteration of one group of a job.
fn layer_rng(seed: u64, job: u32, group: u32, iteration: u32, layer: u32) -> SimRng {
    let index = mix64(mix64(mix64(job as u64) ^ group as u64) ^ iteration as u64) ^ layer as u64;
    rng_for(seed, Stream::Moe, index)
}

/// Which way a phase moves the tokens of a layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Way {
    /// From each token's GPU to its experts' GPUs (dispatch, the combine's gradients).
    Out,
    /// From the experts' GPUs back to each token's GPU (combine, the dispatch's gradients).
    Back,
}

/// One layer's traffic: tokens per ordered pair of ranks (src x n + dst) and, for the relayed
/// variant, per (rank, server) the tokens of the rank with an expert on the server.
struct LayerTokens {
    pairs: Vec<u64>,
    servers: BTreeMap<(u32, u32), u64>,
}

/// Generates one group's iterations of a `moe` job on ranks placed on `hosts`, from `start`;
/// returns its end.
#[allow(clippy::too_many_arguments)]
pub(super) fn group(
    b: &mut Builder,
    labels: &mut Labels,
    m: &MoeModel,
    job: u32,
    group: u32,
    hosts: &[u32],
    iterations: u32,
    start: Cond,
) -> Cond {
    let n = hosts.len();
    let servers = &m.servers[group as usize * n..(group as usize + 1) * n];
    let h = m.hidden as u64;
    let (db, cb) = (
        h * m.dispatch_bytes_per_element as u64,
        h * m.combine_bytes_per_element as u64,
    );
    let mut cond = start;
    let mut gap = SimTime::ZERO;
    for it in 0..iterations {
        let mut tokens: Vec<LayerTokens> = Vec::with_capacity(m.layers as usize);
        // (kind, layer, way, bytes per token, compute before).
        let mut phases: Vec<(Algo, u32, Way, u64, SimTime)> = Vec::new();
        for l in 0..m.layers {
            let routing = route(
                &m.router,
                servers,
                &mut layer_rng(m.seed, job, group, it, l),
            );
            let kept: u64 = routing.load.iter().sum();
            labels.moe.push(MoeLayerInfo {
                job,
                group,
                iteration: it,
                layer: l,
                assignments: routing.experts.len() as u64,
                dropped: routing.dropped,
                max_expert_tokens: routing.load.iter().copied().max().unwrap_or(0),
                mean_expert_tokens: kept as f64 / m.router.experts as f64,
            });
            tokens.push(LayerTokens {
                pairs: routing.pair_tokens(&m.router),
                servers: if m.hierarchical {
                    routing.server_tokens(&m.router, servers)
                } else {
                    BTreeMap::new()
                },
            });
            phases.push((Algo::MoeDispatch, l, Way::Out, db, gap + m.layer_gap));
            phases.push((Algo::MoeCombine, l, Way::Back, cb, m.compute));
            gap = SimTime::ZERO;
        }
        if m.backward {
            for l in (0..m.layers).rev() {
                phases.push((Algo::MoeCombineBackward, l, Way::Out, cb, gap));
                phases.push((
                    Algo::MoeDispatchBackward,
                    l,
                    Way::Back,
                    db,
                    m.compute + m.compute,
                ));
                gap = m.layer_gap + m.layer_gap;
            }
        }
        for (algo, l, way, per_token, before) in phases {
            let t = &tokens[l as usize];
            let start = cond.then(before);
            let ((done, flows), bytes) = if m.hierarchical {
                relayed(b, m, hosts, servers, t, way, per_token, &start)
            } else {
                // Back: dst's results to src, so the pairs transposed.
                let sizes: Vec<u64> = (0..n * n)
                    .map(|i| match way {
                        Way::Out => t.pairs[i],
                        Way::Back => t.pairs[(i % n) * n + i / n],
                    })
                    .map(|x| x * per_token)
                    .collect();
                let bytes = (0..n * n)
                    .filter(|i| i % n != i / n)
                    .map(|i| sizes[i])
                    .sum();
                (collective::exchange(b, hosts, &sizes, &start), bytes)
            };
            labels.collectives.push(CollectiveInfo {
                job,
                group,
                iteration: it,
                layer: Some(l),
                algo,
                ranks: n as u32,
                bytes,
                flows,
                compute_before: before,
                bound: SimTime::ZERO,
            });
            cond = done;
        }
    }
    cond
}

/// One phase relayed as DeepEP's internode kernels move it: a token bound for another server
/// crosses the network once, to the GPU of that server at its own GPU's position (its rail),
/// which forwards it over NVLink to each of its experts' GPUs there; coming back, the experts'
/// GPUs send their results over NVLink to that GPU, which sends the token home once all have
/// arrived. Tokens within a server go direct. Returns the phase's completion, its flows and
/// its bytes (every leg between distinct hosts).
#[allow(clippy::too_many_arguments)]
fn relayed(
    b: &mut Builder,
    m: &MoeModel,
    hosts: &[u32],
    servers: &[u32],
    t: &LayerTokens,
    way: Way,
    per_token: u64,
    start: &Cond,
) -> ((Cond, Range<u32>), u64) {
    let n = hosts.len();
    // The host of server `s` at rank r's position in its own server (wrapped if smaller).
    let relay = |r: usize, s: u32| {
        let own = &m.runs[servers[r] as usize];
        let there = &m.runs[s as usize];
        there.start + (hosts[r] - own.start) % there.len() as u32
    };
    let mut bytes = 0u64;
    let mut send = |b: &mut Builder, src: u32, dst: u32, tokens: u64, cond: &Cond| {
        if src != dst {
            bytes += tokens * per_token;
        }
        b.send(src, dst, tokens * per_token, cond)
    };
    let s0 = b.begin(start);
    match way {
        Way::Out => {
            // Per token owner, each of its peers in the shifted order; a server's network leg
            // when the first of its GPUs comes up.
            for r in 0..n {
                let mut legs: BTreeMap<u32, Cond> = BTreeMap::new();
                for i in 1..n {
                    let d = (r + i) % n;
                    let k = t.pairs[r * n + d];
                    if k == 0 {
                        continue;
                    }
                    let s = servers[d];
                    if s == servers[r] {
                        send(b, hosts[r], hosts[d], k, &s0);
                        continue;
                    }
                    let via = relay(r, s);
                    let c = legs
                        .entry(s)
                        .or_insert_with(|| send(b, hosts[r], via, t.servers[&(r as u32, s)], &s0))
                        .clone();
                    send(b, via, hosts[d], k, &c);
                }
            }
        }
        Way::Back => {
            // Per expert GPU, each token owner in the shifted order; an owner's network leg
            // from a server when the last of that server's GPUs has reached the relay.
            let mut left: BTreeMap<(usize, u32), u32> = BTreeMap::new();
            for r in 0..n {
                for d in 0..n {
                    if servers[d] != servers[r] && t.pairs[r * n + d] > 0 {
                        *left.entry((r, servers[d])).or_default() += 1;
                    }
                }
            }
            let mut arrived: BTreeMap<(usize, u32), Vec<Cond>> = BTreeMap::new();
            for d in 0..n {
                for i in 1..n {
                    let r = (d + i) % n;
                    let k = t.pairs[r * n + d];
                    if k == 0 {
                        continue;
                    }
                    let s = servers[d];
                    if s == servers[r] {
                        send(b, hosts[d], hosts[r], k, &s0);
                        continue;
                    }
                    let via = relay(r, s);
                    let c = send(b, hosts[d], via, k, &s0);
                    let all = arrived.entry((r, s)).or_default();
                    all.push(c);
                    let rest = left.get_mut(&(r, s)).expect("counted above");
                    *rest -= 1;
                    if *rest == 0 {
                        let ready = Cond::join_shared(all);
                        send(b, via, hosts[r], t.servers[&(r as u32, s)], &ready);
                    }
                }
            }
        }
    }
    (b.end(), bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn router(experts: u32, top_k: u32, per_gpu: u32, tokens: u32) -> Router {
        Router {
            tokens_per_gpu: tokens,
            experts,
            top_k,
            experts_per_gpu: per_gpu,
            weights: vec![1.0; experts as usize],
            capacity: None,
            max_servers: 0,
        }
    }

    #[test]
    fn every_token_has_top_k_distinct_experts() {
        let r = Router {
            weights: (0..16).map(|e| 1.0 / (e as f64 + 1.0).powf(2.0)).collect(),
            ..router(16, 5, 2, 50)
        };
        let x = route(&r, &[0; 8], &mut rng_for(1, Stream::Moe, 0));
        assert_eq!(x.experts.len(), 8 * 50 * 5);
        for tok in x.experts.chunks(5) {
            let mut s = tok.to_vec();
            s.sort_unstable();
            s.dedup();
            assert_eq!(s.len(), 5, "{tok:?}");
        }
        assert_eq!(x.dropped, 0);
        assert_eq!(x.load.iter().sum::<u64>(), 8 * 50 * 5);
    }

    #[test]
    fn a_token_goes_once_to_a_gpu_holding_several_of_its_experts() {
        // Every token picks all four experts, two on each of two GPUs: one token per GPU.
        let r = router(4, 4, 2, 3);
        let x = route(&r, &[0, 1], &mut rng_for(1, Stream::Moe, 0));
        assert_eq!(x.pair_tokens(&r), [3, 3, 3, 3]);
    }

    #[test]
    fn zero_weight_experts_are_never_chosen() {
        // Two positive experts on each server: one server is enough for a token's two.
        let mut r = router(8, 2, 1, 200);
        r.weights = vec![0.0, 1.0, 0.0, 3.0, 0.0, 0.5, 0.5, 0.0];
        r.max_servers = 1;
        let x = route(
            &r,
            &[0, 0, 0, 0, 1, 1, 1, 1],
            &mut rng_for(2, Stream::Moe, 0),
        );
        assert!(x.experts.iter().all(|&e| r.weights[e as usize] > 0.0));
        for tok in x.experts.chunks(2) {
            assert_eq!(tok[0] / 4, tok[1] / 4, "{tok:?}");
        }
    }

    #[test]
    fn relayed_tokens_cross_the_network_once_per_server_on_their_rail() {
        // Two servers of two GPUs (hosts 0-1, 2-3). GPU 0 sends 5 tokens to GPU 2 and 4 to
        // GPU 3, 2 of them to both: 7 cross to host 2 (GPU 0's position there), which forwards
        // 4 to GPU 3. Back: GPU 3's 4 reach host 2 over NVLink, then 7 go home.
        let m = MoeModel {
            router: router(4, 2, 1, 1),
            hidden: 1,
            dispatch_bytes_per_element: 1,
            combine_bytes_per_element: 1,
            compute: SimTime::ZERO,
            layer_gap: SimTime::ZERO,
            layers: 1,
            backward: false,
            hierarchical: true,
            servers: vec![0, 0, 1, 1],
            runs: vec![0..2, 2..4],
            seed: 0,
        };
        let mut pairs = vec![0u64; 16];
        pairs[2] = 5;
        pairs[3] = 4;
        let t = LayerTokens {
            pairs,
            servers: BTreeMap::from([((0, 1), 7)]),
        };
        let hosts = [0, 1, 2, 3];
        let mut b = Builder::default();
        let s = Cond::at(SimTime::ZERO);
        let ((out, _), bytes) = relayed(&mut b, &m, &hosts, &m.servers, &t, Way::Out, 10, &s);
        assert_eq!(bytes, 110);
        relayed(&mut b, &m, &hosts, &m.servers, &t, Way::Back, 10, &out);
        let (flows, deps) = b.finish();
        let got: Vec<(u32, u32, u64)> = flows
            .iter()
            .map(|f| (f.src.0, f.dst.0, f.size_bytes))
            .collect();
        assert_eq!(got, [(0, 2, 70), (2, 3, 40), (3, 2, 40), (2, 0, 70)]);
        // The forward waits for the network leg; the way home for the NVLink leg (flow 2),
        // which waits for the whole dispatch.
        let waits_for = |f: u32| -> Vec<Vec<u32>> {
            deps.triggers
                .iter()
                .enumerate()
                .filter(|(_, t)| t.targets.contains(&f))
                .map(|(i, _)| {
                    (0..flows.len() as u32)
                        .filter(|&p| deps.on_recv_done[p as usize].contains(&(i as u32)))
                        .collect()
                })
                .collect()
        };
        assert_eq!(waits_for(0), Vec::<Vec<u32>>::new());
        assert_eq!(waits_for(1), [vec![0]]);
        assert_eq!(waits_for(2), [vec![0, 1]]);
        assert_eq!(waits_for(3), [vec![2]]);
    }
}
