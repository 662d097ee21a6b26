//! Multi-run experiments built on [`crate::run`]: the queue-scaling study (how the mean switch
//! queue q grows with the message length m, and the slope of log q against log m).
//!
//! The study's finding 4: plain round-robin and JSQ grow as Theta(m), random choice and host
//! spraying as Theta(sqrt m), destination rotation (host_dr, ofan) stays Theta(1): slopes near
//! 1, 0.5 and 0. This module only builds the runs and reduces their results; running them (in
//! parallel or not) is the caller's business, so the library stays free of threads.

use crate::scenario::{ConfigError, Origin, Scenario, ScenarioFile};
use crate::Summary;

/// The buffer `lbsim queue-scaling` uses unless the scenario sets one: large enough that no
/// packet is dropped, so queues show their natural growth.
pub const QUEUE_SCALING_BUFFER_BYTES: u64 = 100_000_000;

/// One planned run: `scheme` with messages of `m` packets under `seed`.
pub struct QueueScalingRun {
    pub scheme: String,
    pub m: u64,
    pub seed: u64,
    pub scenario: Scenario,
}

/// Builds every (scheme, m, seed) run from `base`: message_bytes = m x payload, seeds
/// base.seed, base.seed + 1, ... Errors name the scheme or key at fault, before anything runs.
pub fn queue_scaling_runs(
    base: &ScenarioFile,
    origin: &Origin,
    schemes: &[String],
    packets: &[u64],
    seeds: u64,
) -> Result<Vec<QueueScalingRun>, ConfigError> {
    let mut runs = Vec::new();
    for scheme in schemes {
        for &m in packets {
            for i in 0..seeds {
                let mut f = base.clone();
                f.load_balancing.scheme = scheme.clone();
                f.workload.message_bytes = m.saturating_mul(base.packet.payload_bytes as u64);
                f.seed = base.seed.wrapping_add(i);
                let scenario = Scenario::build(f, origin)?;
                runs.push(QueueScalingRun {
                    scheme: scheme.clone(),
                    m,
                    seed: base.seed.wrapping_add(i),
                    scenario,
                });
            }
        }
    }
    Ok(runs)
}

/// The measurement of one run.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct QueueScalingPoint {
    pub scheme: String,
    pub m: u64,
    pub seed: u64,
    pub mean_queue_bytes: f64,
    /// mean_queue_bytes over a full data packet's wire size.
    pub mean_queue_packets: f64,
    pub cct_over_bound: Option<f64>,
}

impl QueueScalingPoint {
    pub fn new(run: &QueueScalingRun, s: &Summary) -> Self {
        let p = &run.scenario.file.packet;
        let wire = (p.payload_bytes + p.header_bytes) as f64;
        QueueScalingPoint {
            scheme: run.scheme.clone(),
            m: run.m,
            seed: run.seed,
            mean_queue_bytes: s.mean_queue_bytes,
            mean_queue_packets: s.mean_queue_bytes / wire,
            cct_over_bound: s.cct_over_bound,
        }
    }
}

/// One scheme's curve: q(m) averaged over seeds, and the fitted log-log slope.
#[derive(Clone, Debug, PartialEq)]
pub struct SchemeScaling {
    pub scheme: String,
    pub m: Vec<u64>,
    pub mean_queue_bytes: Vec<f64>,
    pub mean_queue_packets: Vec<f64>,
    /// None with fewer than two message sizes of positive queue.
    pub slope: Option<f64>,
}

/// Least-squares slope of ln y against ln x over the points with x, y > 0; None when fewer than
/// two distinct x remain.
pub fn fit_loglog_slope(points: &[(f64, f64)]) -> Option<f64> {
    let pts: Vec<(f64, f64)> = points
        .iter()
        .filter(|(x, y)| *x > 0.0 && *y > 0.0 && x.is_finite() && y.is_finite())
        .map(|(x, y)| (x.ln(), y.ln()))
        .collect();
    let n = pts.len() as f64;
    if pts.len() < 2 {
        return None;
    }
    let mx = pts.iter().map(|p| p.0).sum::<f64>() / n;
    let my = pts.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = pts.iter().map(|p| (p.0 - mx) * (p.0 - mx)).sum();
    let sxy: f64 = pts.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    if sxx <= 0.0 {
        return None;
    }
    Some(sxy / sxx)
}

/// Averages the points over seeds and fits each scheme's slope; schemes and message sizes come
/// out in the order they are given.
pub fn summarize(
    points: &[QueueScalingPoint],
    schemes: &[String],
    packets: &[u64],
) -> Vec<SchemeScaling> {
    schemes
        .iter()
        .map(|scheme| {
            let mut m = Vec::new();
            let mut qb = Vec::new();
            let mut qp = Vec::new();
            for &size in packets {
                let runs: Vec<&QueueScalingPoint> = points
                    .iter()
                    .filter(|p| &p.scheme == scheme && p.m == size)
                    .collect();
                if runs.is_empty() {
                    continue;
                }
                let n = runs.len() as f64;
                m.push(size);
                qb.push(runs.iter().map(|p| p.mean_queue_bytes).sum::<f64>() / n);
                qp.push(runs.iter().map(|p| p.mean_queue_packets).sum::<f64>() / n);
            }
            let xy: Vec<(f64, f64)> = m.iter().zip(&qb).map(|(&x, &y)| (x as f64, y)).collect();
            SchemeScaling {
                scheme: scheme.clone(),
                slope: fit_loglog_slope(&xy),
                m,
                mean_queue_bytes: qb,
                mean_queue_packets: qp,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slope_of_exact_power_laws() {
        for k in [0.0, 0.5, 1.0, 2.0] {
            let pts: Vec<(f64, f64)> = [16.0, 64.0, 256.0, 1024.0]
                .iter()
                .map(|&m: &f64| (m, 3.0 * m.powf(k)))
                .collect();
            assert!((fit_loglog_slope(&pts).unwrap() - k).abs() < 1e-9, "{k}");
        }
    }

    #[test]
    fn slope_needs_two_positive_points() {
        assert_eq!(fit_loglog_slope(&[(16.0, 1.0)]), None);
        assert_eq!(fit_loglog_slope(&[(16.0, 1.0), (64.0, 0.0)]), None);
        assert_eq!(fit_loglog_slope(&[(16.0, 1.0), (16.0, 2.0)]), None);
        let s = fit_loglog_slope(&[(1.0, 1.0), (10.0, 0.0), (100.0, 100.0)]).unwrap();
        assert!((s - 1.0).abs() < 1e-12);
    }

    #[test]
    fn summarize_averages_seeds_in_the_given_order() {
        let pt = |scheme: &str, m: u64, seed: u64, q: f64| QueueScalingPoint {
            scheme: scheme.into(),
            m,
            seed,
            mean_queue_bytes: q,
            mean_queue_packets: q / 2.0,
            cct_over_bound: Some(1.0),
        };
        let pts = vec![
            pt("b", 10, 1, 2.0),
            pt("a", 100, 1, 5.0),
            pt("a", 10, 1, 1.0),
            pt("a", 10, 2, 3.0),
            pt("a", 100, 2, 15.0),
        ];
        let s = summarize(&pts, &["a".into(), "b".into()], &[10, 100]);
        assert_eq!(s[0].m, vec![10, 100]);
        assert_eq!(s[0].mean_queue_bytes, vec![2.0, 10.0]);
        assert_eq!(s[0].mean_queue_packets, vec![1.0, 5.0]);
        assert!((s[0].slope.unwrap() - 5f64.log10()).abs() < 1e-12);
        assert_eq!(s[1].m, vec![10]);
        assert_eq!(s[1].slope, None);
    }
}
