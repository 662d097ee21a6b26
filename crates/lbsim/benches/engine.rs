//! Micro-benchmarks: the event set under a hold model (pop the earliest, schedule one a short,
//! varying delay ahead, as packet hops do) and one forwarding decision per switch scheme.
//! `cargo bench -p lbsim`.

use criterion::{black_box, criterion_group, criterion_main, BatchSize, Criterion};
use lbsim::engine::EventQueue;
use lbsim::ids::{HostId, NodeId, SwitchId};
use lbsim::lb::{PacketView, Side, SwitchCtx, SwitchLb, SCHEMES};
use lbsim::net::{LinkParams, Port, Topology};
use lbsim::rng::{rng_for, Stream};
use lbsim::scenario::LoadBalancingConfig;
use lbsim::time::{BitsPerSec, SimTime};

/// xorshift64: a cheap deterministic delay source that does not dominate the measurement.
fn next(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

fn event_queue(c: &mut Criterion) {
    let mut g = c.benchmark_group("event_queue_hold");
    for pending in [1_000u32, 16_000, 128_000] {
        g.bench_function(format!("{pending}_pending"), |b| {
            b.iter_batched_ref(
                || {
                    // 1 ns buckets, delays up to 2 us: a 100 Gb/s fabric's hops.
                    let mut q: EventQueue<u32> = EventQueue::with_bucket_ps(1024);
                    let mut x = 0x9e37_79b9_7f4a_7c15;
                    for i in 0..pending {
                        q.push(SimTime(next(&mut x) % 2_000_000), i);
                    }
                    (q, x)
                },
                |(q, x)| {
                    for _ in 0..1000 {
                        let (t, e) = q.pop().expect("held");
                        q.push(SimTime(t.0 + 40_000 + next(x) % 2_000_000), black_box(e));
                    }
                },
                BatchSize::LargeInput,
            )
        });
    }
    g.finish();
}

fn switch_choice(c: &mut Criterion) {
    let mut g = c.benchmark_group("switch_choose");
    let cfg = LoadBalancingConfig::default();
    // An aggregation switch of a k=8 fat-tree (switches 32..63).
    let topo = Topology::fat_tree(
        8,
        LinkParams {
            rate: BitsPerSec::from_gbps(800.0),
            latency: SimTime::from_ns(500),
            switch_latency: SimTime::ZERO,
        },
    );
    let ctx = SwitchCtx {
        topology: &topo,
        switch: SwitchId(32),
        salt: 7,
    };
    let group: Vec<Port> = (0..4)
        .map(|i| {
            let mut p = Port::new(
                BitsPerSec::from_gbps(800.0),
                SimTime::from_ns(500),
                NodeId::Host(HostId(i)),
                800_000,
                160_000,
            );
            p.queued_bytes = 4158 * (i as u64 % 3);
            p
        })
        .collect();
    // Host-decided schemes hash at switches as ECMP does, unless they decode the entropy.
    for s in SCHEMES
        .iter()
        .filter(|s| s.side == Side::Switch || s.own_switch_decoding)
    {
        let mut lb = SwitchLb::new(s, &ctx, &cfg);
        let mut rng = rng_for(1, Stream::Switch, 0);
        let mut key = 1u64;
        g.bench_function(s.name, |b| {
            b.iter(|| {
                let view = PacketView {
                    weights: None,
                    epoch: 0,
                    src: HostId(3),
                    dst: HostId(90),
                    flow_key: next(&mut key),
                    entropy: key as u32,
                    is_ack: false,
                    now: SimTime(key),
                };
                black_box(lb.choose(&view, &group, &mut rng))
            })
        });
    }
    g.finish();
}

criterion_group!(benches, event_queue, switch_choice);
criterion_main!(benches);
