use super::*;
use std::sync::Arc;

fn node(id: u64, t: i32, deps: &[u64], attr: Vec<proto::AttributeProto>) -> proto::Node {
    proto::Node {
        id,
        name: format!("n{id}"),
        r#type: t,
        data_deps: deps.to_vec(),
        attr,
        ..Default::default()
    }
}

fn opt() -> Options {
    Options {
        ranks: None,
        skip_unknown: false,
        algorithms: ChakraAlgorithms::default(),
        payload_bytes: 4096,
        comm_groups: None,
    }
}

#[test]
fn encode_decode_round_trips_and_truncation_is_named() {
    let nodes = vec![
        proto::Node {
            duration_micros: 10,
            ..node(1, proto::COMP_NODE, &[], vec![])
        },
        node(
            2,
            proto::COMM_SEND_NODE,
            &[1],
            vec![proto::int32("comm_dst", 1), proto::int64("comm_size", 5000)],
        ),
    ];
    let bytes = encode("0.0.4", &nodes);
    let (v, back) = decode(&bytes, "t.0.et").unwrap();
    assert_eq!((v.as_str(), &back), ("0.0.4", &nodes));
    let e = decode(&bytes[..bytes.len() - 3], "t.0.et")
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("t.0.et: truncated") && e.contains("after node id 1"),
        "{e}"
    );
    let e = decode(&[0x1f, 0x8b, 0], "g.et").unwrap_err().to_string();
    assert!(e.contains("gzip"), "{e}");
}

#[test]
fn conditions_simplify_to_the_terms_that_matter() {
    let a = Cond::flow(3).then(SimTime(5));
    let b = Cond::flow(4).then(SimTime(5));
    assert_eq!(a.join(&b).0, vec![(Arc::from([3, 4]), SimTime(5))]);
    // An absolute time before any flow term is implied by it.
    let c = Cond::at(SimTime(2)).join(&a);
    assert_eq!(c.0, a.0);
    // A later absolute time is not.
    assert_eq!(Cond::at(SimTime(9)).join(&a).0.len(), 2);
}

#[test]
fn unknown_nodes_are_refused_or_skipped() {
    let t = vec![(
        "u.et".to_string(),
        vec![
            node(7, 2, &[], vec![]),
            node(
                8,
                proto::COMM_COLL_NODE,
                &[7],
                vec![
                    proto::int64("comm_type", proto::ALL_REDUCE),
                    proto::int64("comm_size", 4096),
                ],
            ),
        ],
    )];
    let e = replay_nodes(
        &t,
        &[0, 1],
        SimTime::ZERO,
        &Options {
            ranks: Some(2),
            ..opt()
        },
    )
    .err()
    .unwrap()
    .to_string();
    assert!(
        e.contains("u.et: node id 7") && e.contains("MEM_LOAD_NODE"),
        "{e}"
    );
    let r = replay_nodes(
        &t,
        &[0, 1],
        SimTime::ZERO,
        &Options {
            ranks: Some(2),
            skip_unknown: true,
            ..opt()
        },
    )
    .unwrap();
    assert_eq!(r.labels.chakra.unwrap().skipped_nodes, 1);
    assert_eq!(r.flows.len(), 4);
}

#[test]
fn a_rank_waits_for_its_compute_and_its_receive() {
    // Rank 0: COMP 10 us, SEND 1 MB to 1. Rank 1: COMP 3 us, RECV from 0, SEND back.
    let attrs = |k: &str, p: i32| vec![proto::int32(k, p), proto::int64("comm_size", 1000)];
    let r0 = vec![
        proto::Node {
            duration_micros: 10,
            ..node(1, proto::COMP_NODE, &[], vec![])
        },
        node(2, proto::COMM_SEND_NODE, &[1], attrs("comm_dst", 1)),
    ];
    let r1 = vec![
        proto::Node {
            duration_micros: 3,
            ..node(1, proto::COMP_NODE, &[], vec![])
        },
        node(2, proto::COMM_RECV_NODE, &[], attrs("comm_src", 0)),
        node(3, proto::COMM_SEND_NODE, &[1, 2], attrs("comm_dst", 0)),
    ];
    let t = vec![("a.0.et".to_string(), r0), ("a.1.et".to_string(), r1)];
    let r = replay_nodes(&t, &[0, 5], SimTime::ZERO, &opt()).unwrap();
    assert_eq!(r.flows.len(), 2);
    assert_eq!(r.flows[0].start, SimTime::from_us(10));
    assert!(!r.deps.gated(0) && r.deps.gated(1));
    // The reply waits for the message only: rank 1's 3 us of compute are implied by it,
    // since the message itself starts at 10 us.
    assert_eq!(r.deps.waits(1), 1);
    assert!(!r.deps.timed(1));
}
