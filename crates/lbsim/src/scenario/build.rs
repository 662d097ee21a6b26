//! Validation of a scenario file and building the topology, workload and failures from it.

use super::set::blame_sets;
use super::*;

impl Scenario {
    /// Validates `file` and builds the topology and workload. An error about a key that one of
    /// `origin.sets` set names that `--set`.
    pub fn build(file: ScenarioFile, origin: &Origin) -> Result<Scenario, ConfigError> {
        Self::build_unblamed(file, origin).map_err(|e| blame_sets(e, &origin.sets))
    }

    fn build_unblamed(mut file: ScenarioFile, origin: &Origin) -> Result<Scenario, ConfigError> {
        if let Some(p) = file.topology.htsim_topo.clone() {
            let p = match (&origin.dir, p.is_relative()) {
                (Some(dir), true) => dir.join(p),
                _ => p,
            };
            crate::net::htsim_topo::load(&p, &mut file.topology)?;
        }
        if let Some(p) = file.topology.simai_topo.clone() {
            check(
                file.topology.htsim_topo.is_none(),
                origin,
                "topology.simai_topo",
                "and topology.htsim_topo each describe the whole fabric: give one",
            )?;
            let p = match (&origin.dir, p.is_relative()) {
                (Some(dir), true) => dir.join(p),
                _ => p,
            };
            crate::net::kinds::simai::import(&p, &mut file.topology, origin)?;
        }
        let t = &file.topology;
        let o = origin;
        check(
            t.link_gbps.is_finite() && (MIN_GBPS..=1e6).contains(&t.link_gbps),
            o,
            "topology.link_gbps",
            "must be a positive rate in Gb/s, at least 1e-6 (1 kb/s) and at most 1e6",
        )?;
        check(
            finite_nonneg(t.link_latency_ns) && t.link_latency_ns < 1e9,
            o,
            "topology.link_latency_ns",
            "must be a non-negative number of nanoseconds",
        )?;
        check(
            finite_nonneg(t.switch_latency_ns) && t.switch_latency_ns < 1e9,
            o,
            "topology.switch_latency_ns",
            "must be a non-negative number of nanoseconds",
        )?;
        let p = &file.packet;
        check(
            p.payload_bytes > 0,
            o,
            "packet.payload_bytes",
            "must be positive",
        )?;
        check(p.ack_bytes > 0, o, "packet.ack_bytes", "must be positive")?;
        check(
            p.payload_bytes.checked_add(p.header_bytes).is_some(),
            o,
            "packet.header_bytes",
            "too large",
        )?;
        let mtu = (p.payload_bytes + p.header_bytes) as u64;
        check(
            t.buffer_bytes >= mtu,
            o,
            "topology.buffer_bytes",
            &format!("must hold at least one full packet ({mtu} bytes)"),
        )?;
        let tr = &file.transport;
        check(
            tr.rate_coef.is_finite() && tr.rate_coef > 0.0 && tr.rate_coef <= 1.0,
            o,
            "transport.rate_coef",
            "must be in (0, 1]",
        )?;
        tr.validate(t, o)?;
        check(
            mtu <= u16::MAX as u64 && p.ack_bytes <= u16::MAX as u32,
            o,
            "packet.payload_bytes",
            "payload + headers (and ACKs) must fit in 65,535 bytes",
        )?;
        if let Some(h) = t.trim_header_bytes {
            check(
                h > 0 && (h as u64) < mtu,
                o,
                "topology.trim_header_bytes",
                &format!("must be positive and smaller than a full packet ({mtu} bytes)"),
            )?;
        }
        let kmin = t.ecn_threshold();
        if let Some(kmax) = t.ecn_kmax_bytes {
            check(
                kmax > kmin,
                o,
                "topology.ecn_kmax_bytes",
                &format!("must exceed the marking threshold Kmin ({kmin} bytes)"),
            )?;
        }
        if let Some(pm) = t.ecn_pmax {
            check(
                t.ecn_kmax_bytes.is_some(),
                o,
                "topology.ecn_pmax",
                "needs topology.ecn_kmax_bytes (RED marking)",
            )?;
            check(
                pm.is_finite() && pm > 0.0 && pm <= 1.0,
                o,
                "topology.ecn_pmax",
                "must be in (0, 1]",
            )?;
        }
        if let Some(c) = t.control_buffer_bytes {
            check(
                c >= 64 && c < u32::MAX as u64,
                o,
                "topology.control_buffer_bytes",
                "must be at least 64 bytes and below 4 GB",
            )?;
        }
        check_pfc(t, p, tr.loss_recovery, o)?;
        let scheme = file.scheme().map_err(|msg| ConfigError::Invalid {
            origin: o.name.clone(),
            key: "load_balancing.scheme".into(),
            msg,
        })?;
        file.load_balancing.validate(scheme, o)?;
        if let Some(n) = file.threads {
            check(
                (1..=256).contains(&n),
                o,
                "threads",
                "must be from 1 to 256",
            )?;
        }
        let end_time = match file.end_time_us {
            None => None,
            Some(us) => {
                check(
                    us.is_finite() && us > 0.0,
                    o,
                    "end_time_us",
                    "must be a positive number of microseconds",
                )?;
                Some(SimTime::from_us_f64(us))
            }
        };
        // Events name ports, hosts, flows and fabric changes by a 29-bit id: refuse what would
        // not fit before allocating it (the counts are upper bounds, exact but for ranks that
        // share a host).
        if let Some(e) = file.memory_estimate() {
            let max = MAX_EVENT_ID as u128;
            check(
                e.ports <= max,
                o,
                "topology",
                &format!("{} ports; events can name at most {max}", e.ports),
            )?;
            check(
                e.flows <= max,
                o,
                "workload",
                &format!(
                    "about {} flows; events can name at most {max} flows in one run",
                    e.flows
                ),
            )?;
        }
        let topology = t.build(o)?;
        check(
            !scheme.own_switch_decoding || topology.paths_named_by_up_choices(),
            o,
            "load_balancing.scheme",
            &format!(
                "{} names each path by its uplink choices, which this fabric ({}) does not \
                 allow: some switches of a tier have more uplinks than others, parallel \
                 links lead down, or hosts have several uplinks",
                scheme.name,
                topology.describe()
            ),
        )?;
        let port = file.load_balancing.port_name();
        if port != lb::port::SCHEME {
            let ((_, most), _) = topology.host_port_counts();
            check(
                most > 1 && most as usize <= lb::port::MAX_PORTS,
                o,
                "load_balancing.port",
                &if most <= 1 {
                    format!(
                        "chooses among a host's ports, and this fabric's hosts have one each \
                         ({}); it applies to topology.kind = \"ai\" with nic_ports or planes \
                         above 1",
                        topology.describe()
                    )
                } else {
                    format!(
                        "chooses among at most {} ports; this fabric's hosts have up to {most}",
                        lb::port::MAX_PORTS
                    )
                },
            )?;
        }
        let ecn = t.ecn_threshold();
        let workload::Workload {
            flows,
            deps,
            mut labels,
            ids: flow_ids,
            failed_links,
        } = workload::generate(&file.traffic(), &topology, origin)?;
        let sizes = bound::Sizes {
            mss: file.packet.payload_bytes,
            header: file.packet.header_bytes,
            ack: file.packet.ack_bytes,
            pace: bound::pace_rate(topology.host_rate, file.transport.rate_coef),
        };
        for c in &mut labels.collectives {
            c.bound = crate::stats::collectives::bound(&topology, &flows, &deps, &c.flows, sizes);
        }
        check(
            flows.len() <= MAX_EVENT_ID as usize,
            o,
            "workload",
            &format!(
                "{} flows; events can name at most {MAX_EVENT_ID} flows in one run",
                flows.len()
            ),
        )?;
        // A connection matrix's failure lines join `[[failures]]`: down from the start.
        let mut specs = file.failures.clone();
        specs.extend(failed_links.into_iter().map(FailureSpec::down_from_start));
        let failures = failure::resolve(&specs, &topology, file.seed, origin)?;
        // Each failure schedules up to three fabric changes (fail, recover, converge).
        check(
            failures.len() as u64 * 4 <= MAX_EVENT_ID as u64,
            o,
            "failures",
            "too many failed links for one run",
        )?;
        let convergence = match file.failure.convergence_us {
            None => None,
            Some(g) => {
                check(
                    finite_nonneg(g),
                    o,
                    "failure.convergence_us",
                    "must be a non-negative number of microseconds",
                )?;
                check(
                    !file.failures.is_empty(),
                    o,
                    "failure.convergence_us",
                    "routing converges after a failure: with no [[failures]] it changes nothing",
                )?;
                Some(SimTime::from_us_f64(g))
            }
        };
        let rto = match file.transport.rto_us {
            None => SimTime::from_us_f64(defaults::RTO_US),
            Some(us) => {
                check(
                    us.is_finite() && us > 0.0,
                    o,
                    "transport.rto_us",
                    "must be a positive number of microseconds",
                )?;
                SimTime::from_us_f64(us)
            }
        };
        check_transport_no_ops(&file, o)?;
        let end_time = match (end_time, specs.is_empty()) {
            (None, false) => {
                let sizes = bound::Sizes {
                    mss: file.packet.payload_bytes,
                    header: file.packet.header_bytes,
                    ack: file.packet.ack_bytes,
                    pace: None,
                };
                let lb = bound::lower_bound(&topology, &flows, sizes);
                // With dependencies the flows run in steps: allow for every step in series
                // (every flow's bytes one after another, plus every trigger's delay and a
                // longest path per trigger), which no collective exceeds.
                let chain = if deps.is_empty() {
                    SimTime::ZERO
                } else {
                    let bytes = flows.iter().fold(0u64, |a, f| {
                        a.saturating_add(bound::data_wire_bytes(f.size_bytes, sizes))
                    });
                    let path = SimTime(
                        topology
                            .links
                            .iter()
                            .map(|l| l.latency.ps())
                            .max()
                            .unwrap_or(0)
                            * defaults::MAX_PATH_LINKS,
                    );
                    deps.triggers
                        .iter()
                        .fold(topology.host_rate.serialization(bytes), |t, tr| {
                            t.saturating_add(tr.delay).saturating_add(path)
                        })
                };
                Some(SimTime(
                    lb.max(chain)
                        .ps()
                        .saturating_mul(defaults::FAILURE_END_TIME_BOUNDS),
                ))
            }
            (e, _) => e,
        };
        let telemetry = file.telemetry.resolve(
            &topology,
            flows.len(),
            |i| flow_ids.get(i).copied().unwrap_or(i as u64),
            o,
        )?;
        let settings = Settings::resolve(&file, &topology);
        Ok(Scenario {
            telemetry,
            settings,
            scheme,
            topology,
            flows,
            flow_ids,
            deps,
            labels,
            ecn_threshold_bytes: ecn,
            end_time,
            failures,
            convergence,
            rto,
            file,
        })
    }
}

/// `topology.pfc` and its thresholds: read only with PFC on, XON below XOFF, and XOFF leaving
/// the headroom below the buffer; trimming and PFC are alternatives.
fn check_pfc(
    t: &TopologyConfig,
    p: &PacketConfig,
    lr: LossRecoveryKind,
    o: &Origin,
) -> Result<(), ConfigError> {
    if !t.pfc {
        for (set, key) in [
            (t.pfc_xoff_bytes.is_some(), "topology.pfc_xoff_bytes"),
            (t.pfc_xon_bytes.is_some(), "topology.pfc_xon_bytes"),
        ] {
            check(!set, o, key, "is read only with topology.pfc = true")?;
        }
        return Ok(());
    }
    check(
        lr != LossRecoveryKind::Trim,
        o,
        "topology.pfc",
        "PFC makes the data class lossless, so trimming (transport.loss_recovery = \"trim\") \
         would never fire: the two are alternatives",
    )?;
    let mtu = (p.payload_bytes + p.header_bytes) as u64;
    let headroom = t.pfc_headroom_for(p);
    let room = t.buffer_bytes.saturating_sub(headroom);
    let why = format!(
        "headroom {headroom} bytes (2 x link latency x the fastest link's rate + 2 MTU of \
         {mtu} bytes) below topology.buffer_bytes ({}) leaves {room} bytes",
        t.buffer_bytes
    );
    let (xoff, xon) = t.pfc_thresholds(headroom, mtu);
    match t.pfc_xoff_bytes {
        Some(x) => check(
            x <= room && x >= mtu,
            o,
            "topology.pfc_xoff_bytes",
            &format!("must be at least one full packet ({mtu} bytes) and at most the buffer less the headroom: {why}"),
        )?,
        None => check(
            xoff >= mtu,
            o,
            "topology.buffer_bytes",
            &format!("with topology.pfc must leave XOFF at least one full packet: {why}"),
        )?,
    }
    check(
        xon < xoff,
        o,
        if t.pfc_xon_bytes.is_some() {
            "topology.pfc_xon_bytes"
        } else {
            "topology.pfc_xoff_bytes"
        },
        &format!("XON ({xon} bytes) must be below XOFF ({xoff} bytes)"),
    )
}

/// Transport options the chosen configuration never reads, set to other than their defaults
/// (`show` writes the defaults, and its output must read back), are refused naming them.
fn check_transport_no_ops(file: &ScenarioFile, o: &Origin) -> Result<(), ConfigError> {
    use crate::config::invalid;
    use crate::transport::{cc::CcKind, LossRecoveryKind};
    let tr = &file.transport;
    let ideal = tr.cc == CcKind::Constant && tr.loss_recovery == LossRecoveryKind::IdealErasure;
    let why_ideal = "the idealized transport (constant CC, ideal_erasure) keeps no scoreboard";
    if ideal
        && tr
            .reorder_threshold
            .is_some_and(|x| x != defaults::REORDER_THRESHOLD)
    {
        return Err(invalid(
            o,
            "transport.reorder_threshold",
            format!("{why_ideal}: no reordering is ever counted"),
        ));
    }
    if ideal && !tr.rto_backoff {
        return Err(invalid(
            o,
            "transport.rto_backoff",
            format!("{why_ideal}: it never retransmits on a timeout to back off from"),
        ));
    }
    let rto_set = tr.rto_us.is_some_and(|us| us != defaults::RTO_US);
    if ideal && rto_set && file.failures.is_empty() {
        return Err(invalid(
            o,
            "transport.rto_us",
            format!(
                "{why_ideal}, and without [[failures]] no host policy waits for a timeout: \
                 it changes nothing"
            ),
        ));
    }
    if tr.failure_aware_rate && file.failures.is_empty() {
        return Err(invalid(
            o,
            "transport.failure_aware_rate",
            "rates follow impaired links: with no [[failures]] it changes nothing",
        ));
    }
    Ok(())
}
