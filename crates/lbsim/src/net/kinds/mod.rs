//! The fabric kinds `topology.kind` names: one file each (its keys' checks, its size before it
//! is built, its generator) and one line in [`kinds!`], which makes `TopologyKind` and its
//! dispatch. What `lbsim list` prints comes from here.

use serde::{Deserialize, Serialize};

use super::config::TopologyConfig;
use super::topology::{LinkParams, Topology};
use crate::config::{check, invalid, ConfigError, Origin, MIN_GBPS};
use crate::time::{BitsPerSec, SimTime};

pub mod ai;
pub mod clos;
pub mod fat_tree;
pub mod leaf_spine;
pub mod simai;

/// What a kind says of itself.
pub struct KindInfo {
    pub name: &'static str,
    /// One line for `lbsim list`.
    pub summary: &'static str,
    /// The `[topology]` keys only this kind reads.
    pub keys: &'static [&'static str],
}

/// Upper bounds of a fabric's hosts, ports and switch ports, from its keys alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Size {
    pub hosts: u128,
    pub ports: u128,
    pub switch_ports: u128,
}

macro_rules! kinds {
    ($($variant:ident => $module:ident),* $(,)?) => {
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
        #[serde(rename_all = "snake_case")]
        pub enum TopologyKind {
            $($variant),*
        }

        impl TopologyKind {
            pub const ALL: &'static [TopologyKind] = &[$(TopologyKind::$variant),*];

            pub fn info(self) -> &'static KindInfo {
                match self {
                    $(TopologyKind::$variant => &$module::INFO),*
                }
            }

            fn generate(
                self,
                t: &TopologyConfig,
                p: LinkParams,
                o: &Origin,
            ) -> Result<Topology, ConfigError> {
                match self {
                    $(TopologyKind::$variant => $module::build(t, p, o)),*
                }
            }

            /// The fabric's size from its keys (None: they do not describe one).
            pub fn size(self, t: &TopologyConfig) -> Option<Size> {
                match self {
                    $(TopologyKind::$variant => $module::size(t)),*
                }
            }
        }
    };
}

kinds! {
    FatTree => fat_tree,
    LeafSpine => leaf_spine,
    Clos => clos,
    Simai => simai,
    Ai => ai,
}

impl TopologyConfig {
    /// The links' shared parameters (`link_gbps`, `link_latency_ns`, `switch_latency_ns`).
    pub fn link_params(&self) -> LinkParams {
        LinkParams {
            rate: BitsPerSec::from_gbps(self.link_gbps),
            latency: SimTime::from_ns_f64(self.link_latency_ns),
            switch_latency: SimTime::from_ns_f64(self.switch_latency_ns),
        }
    }

    /// Checks the fabric's keys and builds it. Errors name the key; a key that only another
    /// kind reads, set to other than its default, is refused rather than ignored.
    pub fn build(&self, o: &Origin) -> Result<Topology, ConfigError> {
        // The kind's own keys first: their errors are the more specific.
        let t = self.kind.generate(self, self.link_params(), o)?;
        self.check_kind_keys(o)?;
        check(t.hosts >= 2, o, "topology", "needs at least two hosts")?;
        Ok(t)
    }

    fn check_kind_keys(&self, o: &Origin) -> Result<(), ConfigError> {
        let (Ok(toml::Value::Table(mine)), Ok(toml::Value::Table(def))) = (
            toml::Value::try_from(self),
            toml::Value::try_from(TopologyConfig::default()),
        ) else {
            return Ok(());
        };
        let own = self.kind.info().keys;
        for k in TopologyKind::ALL {
            for key in k.info().keys.iter().filter(|key| !own.contains(key)) {
                if mine.get(*key) != def.get(*key) {
                    let readers: Vec<&str> = TopologyKind::ALL
                        .iter()
                        .filter(|x| x.info().keys.contains(key))
                        .map(|x| x.info().name)
                        .collect();
                    return Err(invalid(
                        o,
                        format!("topology.{key}"),
                        format!(
                            "is read only by topology.kind = {}, not {} (which reads {})",
                            readers.join(", "),
                            self.kind.info().name,
                            own.join(", ")
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Upper bounds of hosts, ports and switch ports, before building.
    pub fn size(&self) -> Option<Size> {
        self.kind.size(self)
    }
}

/// A link rate in Gb/s a generator derived or read, checked as `link_gbps` is.
pub(crate) fn rate(gbps: f64, o: &Origin, key: &str, how: &str) -> Result<BitsPerSec, ConfigError> {
    check(
        gbps.is_finite() && (MIN_GBPS..=1e9).contains(&gbps),
        o,
        key,
        &format!("{how} {gbps:e} Gb/s; it must be from 1e-6 (1 kb/s) to 1e9"),
    )?;
    Ok(BitsPerSec::from_gbps(gbps))
}
