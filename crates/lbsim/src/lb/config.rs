//! `[load_balancing]`: the scheme and its options as the scenario file gives them.

use serde::{Deserialize, Serialize};

use crate::config::{check, finite_nonneg, ConfigError, Origin};
use crate::lb;
use crate::time::SimTime;

/// `[load_balancing]`. Scheme options are optional: unset means the documented default, and an
/// option given for a scheme that does not read it is rejected (`lb::SchemeInfo::options`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LoadBalancingConfig {
    /// A name from the registry (`lbsim list`).
    pub scheme: String,
    /// `subflow`: subflows per flow, each with a fixed entropy (4, the study's setting).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subflows: Option<u32>,
    /// `plb`: a round is congested when at least this fraction of its ACKs was ECN-marked
    /// (0.5, PLB's; the study's "change threshold" is 0.4).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plb_congested_fraction: Option<f64>,
    /// `plb`: re-path after this many consecutive congested rounds (12, Linux).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plb_rehash_rounds: Option<u32>,
    /// `plb`: re-path after this many consecutive congested rounds if nothing is in flight
    /// (3, Linux).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plb_idle_rehash_rounds: Option<u32>,
    /// `plb`: after a timeout, no congestion re-path for this long (60 s, Linux).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plb_suspend_us: Option<f64>,
    /// `reps`: how long a flow stays frozen after a failure-like timeout (10 ms, REPS).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reps_freeze_us: Option<f64>,
    /// `reps`: random entropies sent after leaving the frozen state (16, REPS).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reps_explore_packets: Option<u32>,
    /// `switch_ar`: queue bins are refreshed at most this often (0: fresh on every packet;
    /// public simulators use 100).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ar_refresh_ns: Option<f64>,
    /// `flowlet_ar`: an idle gap longer than this starts a new flowlet (10, the study's fork).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flowlet_gap_us: Option<f64>,
}

impl Default for LoadBalancingConfig {
    fn default() -> Self {
        LoadBalancingConfig {
            scheme: "ecmp".into(),
            subflows: None,
            plb_congested_fraction: None,
            plb_rehash_rounds: None,
            plb_idle_rehash_rounds: None,
            plb_suspend_us: None,
            reps_freeze_us: None,
            reps_explore_packets: None,
            ar_refresh_ns: None,
            flowlet_gap_us: None,
        }
    }
}

impl LoadBalancingConfig {
    /// Every scheme option, as named in `[load_balancing]`.
    pub const OPTION_KEYS: &'static [&'static str] = &[
        "subflows",
        "plb_congested_fraction",
        "plb_rehash_rounds",
        "plb_idle_rehash_rounds",
        "plb_suspend_us",
        "reps_freeze_us",
        "reps_explore_packets",
        "ar_refresh_ns",
        "flowlet_gap_us",
    ];

    /// The options that are set, in `OPTION_KEYS` order.
    pub fn given_options(&self) -> Vec<&'static str> {
        let set = [
            self.subflows.is_some(),
            self.plb_congested_fraction.is_some(),
            self.plb_rehash_rounds.is_some(),
            self.plb_idle_rehash_rounds.is_some(),
            self.plb_suspend_us.is_some(),
            self.reps_freeze_us.is_some(),
            self.reps_explore_packets.is_some(),
            self.ar_refresh_ns.is_some(),
            self.flowlet_gap_us.is_some(),
        ];
        Self::OPTION_KEYS
            .iter()
            .zip(set)
            .filter(|(_, s)| *s)
            .map(|(k, _)| *k)
            .collect()
    }

    pub fn subflow_config(&self) -> lb::subflow::SubflowConfig {
        let d = lb::subflow::SubflowConfig::default();
        lb::subflow::SubflowConfig {
            subflows: self.subflows.unwrap_or(d.subflows),
        }
    }

    pub fn plb_config(&self) -> lb::plb::PlbConfig {
        let d = lb::plb::PlbConfig::default();
        lb::plb::PlbConfig {
            congested_fraction: self.plb_congested_fraction.unwrap_or(d.congested_fraction),
            rehash_rounds: self.plb_rehash_rounds.unwrap_or(d.rehash_rounds),
            idle_rehash_rounds: self.plb_idle_rehash_rounds.unwrap_or(d.idle_rehash_rounds),
            suspend: self.plb_suspend_us.map_or(d.suspend, SimTime::from_us_f64),
        }
    }

    pub fn reps_config(&self) -> lb::reps::RepsConfig {
        let d = lb::reps::RepsConfig::default();
        lb::reps::RepsConfig {
            freeze: self.reps_freeze_us.map_or(d.freeze, SimTime::from_us_f64),
            explore_packets: self.reps_explore_packets.unwrap_or(d.explore_packets),
            trimming: false,
        }
    }

    pub fn ar_config(&self) -> lb::switch_ar::ArConfig {
        let d = lb::switch_ar::ArConfig::default();
        lb::switch_ar::ArConfig {
            refresh: self.ar_refresh_ns.map_or(d.refresh, SimTime::from_ns_f64),
        }
    }

    pub fn flowlet_config(&self) -> lb::flowlet::FlowletConfig {
        let d = lb::flowlet::FlowletConfig::default();
        lb::flowlet::FlowletConfig {
            gap: self.flowlet_gap_us.map_or(d.gap, SimTime::from_us_f64),
        }
    }

    /// Rejects options the scheme does not read and out-of-range values.
    pub fn validate(&self, scheme: &lb::SchemeInfo, o: &Origin) -> Result<(), ConfigError> {
        for key in self.given_options() {
            if !scheme.options.contains(&key) {
                let takes = if scheme.options.is_empty() {
                    "takes no options".to_string()
                } else {
                    format!("takes only {}", scheme.options.join(", "))
                };
                return Err(ConfigError::Invalid {
                    origin: o.name.clone(),
                    key: format!("load_balancing.{key}"),
                    msg: format!(
                        "applies only to scheme {}; scheme `{}` {takes}",
                        lb::schemes_with_option(key).join(", "),
                        scheme.name
                    ),
                });
            }
        }
        let us_ok = |x: Option<f64>| x.is_none_or(|v| finite_nonneg(v) && v < 1e12);
        check(
            self.subflows.is_none_or(|n| (1..=1024).contains(&n)),
            o,
            "load_balancing.subflows",
            "must be between 1 and 1024",
        )?;
        check(
            self.plb_congested_fraction
                .is_none_or(|f| f.is_finite() && f > 0.0 && f <= 1.0),
            o,
            "load_balancing.plb_congested_fraction",
            "must be in (0, 1]",
        )?;
        check(
            self.plb_rehash_rounds.is_none_or(|n| n >= 1),
            o,
            "load_balancing.plb_rehash_rounds",
            "must be >= 1",
        )?;
        check(
            self.plb_idle_rehash_rounds.is_none_or(|n| n >= 1),
            o,
            "load_balancing.plb_idle_rehash_rounds",
            "must be >= 1",
        )?;
        check(
            us_ok(self.plb_suspend_us),
            o,
            "load_balancing.plb_suspend_us",
            "must be a non-negative number of microseconds",
        )?;
        check(
            us_ok(self.reps_freeze_us),
            o,
            "load_balancing.reps_freeze_us",
            "must be a non-negative number of microseconds",
        )?;
        check(
            us_ok(self.ar_refresh_ns),
            o,
            "load_balancing.ar_refresh_ns",
            "must be a non-negative number of nanoseconds",
        )?;
        check(
            us_ok(self.flowlet_gap_us),
            o,
            "load_balancing.flowlet_gap_us",
            "must be a non-negative number of microseconds",
        )?;
        Ok(())
    }
}
