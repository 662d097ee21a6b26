//! Helpers for the policies' unit tests: synthetic port groups and packet views.

use super::PacketView;
use crate::ids::{HostId, NodeId};
use crate::net::Port;
use crate::time::{BitsPerSec, SimTime};

/// A group of idle ports with `buffer` bytes each and the given occupancies.
pub fn ports(buffer: u64, queued: &[u64]) -> Vec<Port> {
    queued
        .iter()
        .map(|&q| {
            let mut p = Port::new(
                BitsPerSec::from_gbps(100.0),
                SimTime::ZERO,
                NodeId::Host(HostId(0)),
                buffer,
                buffer,
            );
            p.queued_bytes = q;
            p
        })
        .collect()
}

pub fn view(flow_key: u64, now: SimTime) -> PacketView<'static> {
    PacketView {
        weights: None,
        epoch: 0,
        src: HostId(0),
        dst: HostId(1),
        flow_key,
        entropy: 0,
        is_ack: false,
        now,
    }
}

/// How often each port index was chosen.
pub fn histogram(picks: impl Iterator<Item = usize>, n: usize) -> Vec<u32> {
    let mut c = vec![0; n];
    for p in picks {
        c[p] += 1;
    }
    c
}
