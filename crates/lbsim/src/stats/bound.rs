//! Lower bounds on collective completion time.
//!
//! Per host, the NIC must put on the wire every byte it sends (its data packets, and one ACK per
//! data packet it receives) and the ToR must deliver every byte it receives (its data, and the ACKs
//! of its own data): max(bytes sent, bytes received) / link rate. A host's last bit cannot finish
//! before that time after its earliest start, and it still has to cross the shortest path of its
//! flows: propagation plus one store-and-forward serialization of the smallest packet at each
//! switch. The bound is the largest over hosts, and never below any single flow's own bound
//! (start + its bytes / rate + its path). Lost packets and ACK round trips are not counted, so
//! no run can beat it.

use crate::net::Topology;
use crate::time::SimTime;
use crate::transport::Flow;
use crate::workload::FlowSpec;

/// Packet sizes the bound needs.
#[derive(Clone, Copy, Debug)]
pub struct Sizes {
    pub mss: u32,
    pub header: u32,
    pub ack: u32,
}

/// Wire bytes of a message's data packets without loss.
pub fn data_wire_bytes(size: u64, s: Sizes) -> u64 {
    size + Flow::packets_needed(size, s.mss) * s.header as u64
}

/// Smallest data packet of the message on the wire.
fn min_packet(size: u64, s: Sizes) -> u64 {
    let rem = size % s.mss as u64;
    let payload = if rem == 0 { s.mss as u64 } else { rem };
    payload.min(s.mss as u64) + s.header as u64
}

/// The time for a lone packet to cross the path beyond the first link, plus propagation.
pub(crate) fn path_tail(topo: &Topology, f: &FlowSpec, s: Sizes) -> SimTime {
    let p = topo.path(f.src, f.dst);
    let pkt = min_packet(f.size_bytes, s);
    p.rates[1..]
        .iter()
        .fold(p.latency, |t, r| t + r.serialization(pkt))
}

/// The lower bound of the whole workload, as an absolute time (flows may start late).
pub fn lower_bound(topo: &Topology, flows: &[FlowSpec], s: Sizes) -> SimTime {
    let n = topo.hosts as usize;
    let mut send = vec![0u64; n];
    let mut recv = vec![0u64; n];
    let mut start = vec![SimTime::MAX; n];
    let mut tail = vec![SimTime::MAX; n];
    let mut best = SimTime::ZERO;
    for f in flows {
        let data = data_wire_bytes(f.size_bytes, s);
        let acks = Flow::packets_needed(f.size_bytes, s.mss) * s.ack as u64;
        let (a, b) = (f.src.idx(), f.dst.idx());
        send[a] += data;
        recv[a] += acks;
        recv[b] += data;
        send[b] += acks;
        let t = path_tail(topo, f, s);
        for h in [a, b] {
            start[h] = start[h].min(f.start);
            tail[h] = tail[h].min(t);
        }
        best = best.max(f.start + topo.host_rate.serialization(data) + t);
    }
    for h in 0..n {
        if start[h] == SimTime::MAX {
            continue;
        }
        let bytes = send[h].max(recv[h]);
        best = best.max(start[h] + topo.host_rate.serialization(bytes) + tail[h]);
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::HostId;
    use crate::net::LinkParams;
    use crate::time::BitsPerSec;

    #[test]
    fn single_flow_bound_by_hand() {
        let topo = Topology::fat_tree(
            4,
            LinkParams {
                rate: BitsPerSec::from_gbps(100.0),
                latency: SimTime::from_ns(1000),
                switch_latency: SimTime::ZERO,
            },
        );
        let s = Sizes {
            mss: 4096,
            header: 82,
            ack: 64,
        };
        let f = FlowSpec {
            src: HostId(0),
            dst: HostId(15),
            size_bytes: 8192,
            start: SimTime::ZERO,
        };
        // 2 packets of 4178 B at 100 Gb/s (334.24 ns each) + 6 x 1 us + 5 more serializations.
        let expect = 2 * 334_240 + 6_000_000 + 5 * 334_240;
        assert_eq!(lower_bound(&topo, &[f], s), SimTime(expect));
    }
}
