//! NDP's return-to-sender: a trimmed header that meets a full control queue goes back to its
//! sender, which resends at once; without it the header is dropped and only the timer recovers.

mod common;

use common::{check_conservation_of, run, scenario};

/// An 8 -> 1 incast through 20 KB data queues whose control queues hold two 64-byte headers.
fn incast(rts: bool) -> lbsim::Simulation {
    run(scenario(&[
        "topology.k=4",
        "topology.buffer_bytes=20000",
        "topology.control_buffer_bytes=128",
        "transport.loss_recovery=trim",
        &format!("topology.return_to_sender={rts}"),
        "workload.kind=incast",
        "workload.fan_in=8",
        "workload.message_bytes=262144",
    ]))
}

#[test]
fn returned_headers_are_counted_and_resent_without_a_timeout() {
    let sim = incast(true);
    check_conservation_of(&sim, "rts");
    let s = sim.summary();
    let c = sim.counters();
    assert_eq!(s.flows_completed, s.flows);
    let returned = s.rts_packets.expect("headers returned");
    assert!(returned > 0);
    assert_eq!(returned, c.returned);
    // Nothing lost, nothing waited for the timer, and every byte reached the receiver once:
    // each trimmed packet was resent once (from its NACK or its return), no copy discarded.
    assert_eq!(s.packets_dropped, 0);
    assert_eq!(s.timeouts, 0);
    assert_eq!(s.discarded_packets, 0);
    assert_eq!(s.retransmissions, s.packets_trimmed);
    let payload = 4096;
    let packets: u64 = sim
        .flows()
        .iter()
        .map(|f| f.spec.size_bytes.div_ceil(payload))
        .sum();
    // Delivered: every packet once with its payload, plus the headers that reached the receiver.
    assert_eq!(
        s.data_packets_delivered,
        packets + s.packets_trimmed - returned
    );
    assert_eq!(s.data_packets_sent, packets + s.retransmissions);
}

#[test]
fn without_return_to_sender_a_header_is_dropped_and_the_timer_recovers() {
    let sim = incast(false);
    check_conservation_of(&sim, "no rts");
    let s = sim.summary();
    assert_eq!(s.flows_completed, s.flows);
    assert_eq!(s.rts_packets, None);
    assert_eq!(sim.counters().returned, 0);
    assert!(s.packets_dropped > 0, "headers dropped");
    assert!(s.timeouts > 0, "recovered by timeout");
    assert_eq!(s.discarded_packets, 0);
    // Returning them is much faster than waiting for the 100 us timer.
    let with = incast(true).summary().cct_ps.unwrap();
    assert!(s.cct_ps.unwrap() > 3 * with, "{:?} vs {with}", s.cct_ps);
}

#[test]
fn return_to_sender_is_read_only_with_trimming() {
    let f = lbsim::ScenarioFile::builtin(&["topology.return_to_sender=false".into()]).unwrap();
    let e = lbsim::Scenario::build(f, &lbsim::Origin::builtin())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("topology.return_to_sender") && e.contains("trim"),
        "{e}"
    );
}
