//! `[load_balancing]`: the scheme and its options as the scenario file gives them.
//!
//! This file knows how an option is typed, checked, read and printed, not which options exist:
//! each scheme declares the options it reads in its own file (an [`Opt`] constant per option,
//! listed in its `SchemeInfo::options`), and the set of keys `[load_balancing]` accepts is the
//! union over the registry.

use std::marker::PhantomData;

use serde::de::{self, DeserializeSeed, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::config::{finite_nonneg, ConfigError, Origin};
use crate::lb;
use crate::time::SimTime;

/// What an option holds: its type, range and default (in the unit its key names).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum OptKind {
    /// A whole number in `min..=max`.
    Count { default: u32, min: u32, max: u32 },
    /// A fraction in (0, 1].
    Fraction { default: f64 },
    /// A non-negative number of microseconds (below 10^12), kept as picoseconds.
    Micros { default: f64 },
    /// A non-negative number of nanoseconds (below 10^12), kept as picoseconds.
    Nanos { default: f64 },
}

/// One `load_balancing.*` option: its key (without the section) and kind.
#[derive(Debug, PartialEq)]
pub struct OptSpec {
    pub key: &'static str,
    pub kind: OptKind,
}

/// An option's value as the file gives it: a count, or a real number for the other kinds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum OptValue {
    Count(u32),
    Real(f64),
}

impl OptSpec {
    pub fn default_value(&self) -> OptValue {
        match self.kind {
            OptKind::Count { default, .. } => OptValue::Count(default),
            OptKind::Fraction { default }
            | OptKind::Micros { default }
            | OptKind::Nanos { default } => OptValue::Real(default),
        }
    }

    /// Whether `v` is in range; if not, what the key must be.
    pub fn check(&self, v: OptValue) -> Result<(), String> {
        let real = match v {
            OptValue::Real(x) => x,
            OptValue::Count(n) => n as f64,
        };
        let (ok, must) = match self.kind {
            OptKind::Count { min, max, .. } => {
                let n = match v {
                    OptValue::Count(n) => n,
                    OptValue::Real(_) => return Err("must be a whole number".into()),
                };
                let must = if max == u32::MAX {
                    format!("must be >= {min}")
                } else {
                    format!("must be between {min} and {max}")
                };
                ((min..=max).contains(&n), must)
            }
            OptKind::Fraction { .. } => (
                real.is_finite() && real > 0.0 && real <= 1.0,
                "must be in (0, 1]".into(),
            ),
            OptKind::Micros { .. } => (
                finite_nonneg(real) && real < 1e12,
                "must be a non-negative number of microseconds".into(),
            ),
            OptKind::Nanos { .. } => (
                finite_nonneg(real) && real < 1e12,
                "must be a non-negative number of nanoseconds".into(),
            ),
        };
        if ok {
            Ok(())
        } else {
            Err(must)
        }
    }

    /// The value as the run uses it, in the key's unit (`lbsim show` prints this): a duration
    /// is rounded to whole picoseconds.
    pub fn effective(&self, v: OptValue) -> OptValue {
        match (self.kind, v) {
            (OptKind::Micros { .. }, OptValue::Real(us)) => {
                OptValue::Real(SimTime::from_us_f64(us).ps() as f64 / 1e6)
            }
            (OptKind::Nanos { .. }, OptValue::Real(ns)) => {
                OptValue::Real(SimTime::from_ns_f64(ns).ps() as f64 / 1e3)
            }
            _ => v,
        }
    }
}

/// A typed handle on an option, the constant a scheme declares and reads it through:
/// `Opt<u32>` for counts, `Opt<f64>` for fractions, `Opt<SimTime>` for durations.
#[derive(Debug)]
pub struct Opt<T> {
    pub spec: OptSpec,
    ty: PhantomData<fn() -> T>,
}

impl<T> Opt<T> {
    const fn new(key: &'static str, kind: OptKind) -> Self {
        Opt {
            spec: OptSpec { key, kind },
            ty: PhantomData,
        }
    }
}

impl Opt<u32> {
    pub const fn count(key: &'static str, default: u32, min: u32, max: u32) -> Self {
        Opt::new(key, OptKind::Count { default, min, max })
    }
}

impl Opt<f64> {
    pub const fn fraction(key: &'static str, default: f64) -> Self {
        Opt::new(key, OptKind::Fraction { default })
    }
}

impl Opt<SimTime> {
    pub const fn micros(key: &'static str, default_us: f64) -> Self {
        Opt::new(
            key,
            OptKind::Micros {
                default: default_us,
            },
        )
    }
    pub const fn nanos(key: &'static str, default_ns: f64) -> Self {
        Opt::new(
            key,
            OptKind::Nanos {
                default: default_ns,
            },
        )
    }
}

impl<T: OptType> Opt<T> {
    /// The value when the option is not given.
    pub fn default(&self) -> T {
        T::from_value(&self.spec.kind, self.spec.default_value())
    }
}

/// The Rust type an option's value is read as.
pub trait OptType: Sized {
    fn from_value(kind: &OptKind, v: OptValue) -> Self;
}

impl OptType for u32 {
    fn from_value(_: &OptKind, v: OptValue) -> u32 {
        match v {
            OptValue::Count(n) => n,
            OptValue::Real(_) => unreachable!("a count option holds a count"),
        }
    }
}

impl OptType for f64 {
    fn from_value(_: &OptKind, v: OptValue) -> f64 {
        match v {
            OptValue::Real(x) => x,
            OptValue::Count(n) => n as f64,
        }
    }
}

impl OptType for SimTime {
    fn from_value(kind: &OptKind, v: OptValue) -> SimTime {
        let x = f64::from_value(kind, v);
        match kind {
            OptKind::Nanos { .. } => SimTime::from_ns_f64(x),
            _ => SimTime::from_us_f64(x),
        }
    }
}

/// `[load_balancing]`. Scheme options are optional: unset means the default its scheme
/// declares, and an option given for a scheme that does not read it is rejected.
#[derive(Clone, Debug, PartialEq)]
pub struct LoadBalancingConfig {
    /// A name from the registry (`lbsim list`).
    pub scheme: String,
    /// `port`: the port policy of hosts with several ports (None: `scheme`, see [`lb::port`]).
    pub port: Option<String>,
    /// The options given, in registry order ([`lb::all_options`]).
    given: Vec<(&'static OptSpec, OptValue)>,
}

impl Default for LoadBalancingConfig {
    fn default() -> Self {
        LoadBalancingConfig {
            scheme: "ecmp".into(),
            port: None,
            given: Vec::new(),
        }
    }
}

/// A scheme's view of `[load_balancing]`: the options it declared, each given or defaulted.
#[derive(Clone, Copy, Debug)]
pub struct Options<'a> {
    given: &'a [(&'static OptSpec, OptValue)],
    scheme: &'static str,
    declared: &'static [&'static OptSpec],
}

impl Options<'_> {
    /// Every option at its default (what a scheme's `Default` config is).
    pub fn defaults(scheme: &lb::SchemeInfo) -> Options<'static> {
        Options {
            given: &[],
            scheme: scheme.name,
            declared: scheme.options,
        }
    }

    /// Every option of a port policy at its default.
    pub fn port_defaults(port: &lb::port::PortInfo) -> Options<'static> {
        Options {
            given: &[],
            scheme: port.name,
            declared: port.options,
        }
    }

    /// The option's value. Panics if the scheme did not declare it (it could never be set).
    pub fn get<T: OptType>(&self, o: &Opt<T>) -> T {
        assert!(
            self.declared.contains(&&o.spec),
            "scheme `{}` reads load_balancing.{} without declaring it in its options",
            self.scheme,
            o.spec.key
        );
        let v = self
            .given
            .iter()
            .find(|(s, _)| s.key == o.spec.key)
            .map_or(o.spec.default_value(), |(_, v)| *v);
        T::from_value(&o.spec.kind, v)
    }
}

impl LoadBalancingConfig {
    /// The keys of the options that are set, in registry order.
    pub fn given_options(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.given.iter().map(|(s, _)| s.key)
    }

    /// The value given for `key`, if any.
    pub fn value(&self, key: &str) -> Option<OptValue> {
        self.given.iter().find(|(s, _)| s.key == key).map(|g| g.1)
    }

    /// Sets an option (replacing any value it had), keeping registry order.
    pub fn set(&mut self, spec: &'static OptSpec, v: OptValue) {
        self.given.retain(|(s, _)| s.key != spec.key);
        let rank = |key: &str| lb::all_options().iter().position(|s| s.key == key);
        let at = self
            .given
            .iter()
            .position(|(s, _)| rank(s.key) > rank(spec.key))
            .unwrap_or(self.given.len());
        self.given.insert(at, (spec, v));
    }

    /// What `scheme` reads from this section.
    pub fn options(&self, scheme: &lb::SchemeInfo) -> Options<'_> {
        Options {
            given: &self.given,
            scheme: scheme.name,
            declared: scheme.options,
        }
    }

    /// The port policy's name (`scheme` when unset).
    pub fn port_name(&self) -> &str {
        self.port.as_deref().unwrap_or(lb::port::SCHEME)
    }

    /// The port policy named, if it exists.
    pub fn port_info(&self) -> Option<&'static lb::port::PortInfo> {
        lb::port::port(self.port_name())
    }

    /// What the port policy reads from this section.
    pub fn port_options(&self, port: &lb::port::PortInfo) -> Options<'_> {
        Options {
            given: &self.given,
            scheme: port.name,
            declared: port.options,
        }
    }

    /// Gives every option `scheme` (and the port policy, if one is set) reads the value the
    /// run uses (its default when unset), so that `lbsim show` prints them all.
    pub fn fill_defaults(&mut self, scheme: &lb::SchemeInfo) {
        let port = self.port_info().map_or(&[][..], |p| p.options);
        for spec in scheme.options.iter().chain(port) {
            let v = self.value(spec.key).unwrap_or(spec.default_value());
            self.set(spec, spec.effective(v));
        }
    }

    /// Rejects options the scheme (or the port policy) does not read, an unknown port policy
    /// and out-of-range values.
    pub fn validate(&self, scheme: &lb::SchemeInfo, o: &Origin) -> Result<(), ConfigError> {
        let invalid = |key: &str, msg: String| ConfigError::Invalid {
            origin: o.name.clone(),
            key: format!("load_balancing.{key}"),
            msg,
        };
        let port = self.port_info().ok_or_else(|| {
            invalid(
                "port",
                format!(
                    "unknown port policy `{}`; valid ones: {}",
                    self.port_name(),
                    lb::port::port_names().join(", ")
                ),
            )
        })?;
        for key in self.given_options() {
            if lb::port::PORTS
                .iter()
                .any(|p| p.options.iter().any(|s| s.key == key))
            {
                if !port.options.iter().any(|s| s.key == key) {
                    let with: Vec<&str> = lb::port::PORTS
                        .iter()
                        .filter(|p| p.options.iter().any(|s| s.key == key))
                        .map(|p| p.name)
                        .collect();
                    return Err(invalid(
                        key,
                        format!(
                            "applies only to port = {}; the port policy is `{}`",
                            with.join(", "),
                            port.name
                        ),
                    ));
                }
                continue;
            }
            if !scheme.options.iter().any(|s| s.key == key) {
                let takes = if scheme.options.is_empty() {
                    "takes no options".to_string()
                } else {
                    let keys: Vec<&str> = scheme.options.iter().map(|s| s.key).collect();
                    format!("takes only {}", keys.join(", "))
                };
                return Err(invalid(
                    key,
                    format!(
                        "applies only to scheme {}; scheme `{}` {takes}",
                        lb::schemes_with_option(key).join(", "),
                        scheme.name
                    ),
                ));
            }
        }
        for (spec, v) in &self.given {
            spec.check(*v).map_err(|msg| invalid(spec.key, msg))?;
        }
        Ok(())
    }
}

impl Serialize for OptValue {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match *self {
            OptValue::Count(n) => s.serialize_u32(n),
            OptValue::Real(x) => s.serialize_f64(x),
        }
    }
}

impl Serialize for LoadBalancingConfig {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("scheme", &self.scheme)?;
        if let Some(p) = &self.port {
            m.serialize_entry("port", p)?;
        }
        for (spec, v) in &self.given {
            m.serialize_entry(spec.key, v)?;
        }
        m.end()
    }
}

/// A key of `[load_balancing]`.
enum Key {
    Scheme,
    Port,
    Opt(&'static OptSpec),
}

struct KeySeed;

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = Key;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Key, D::Error> {
        d.deserialize_identifier(self)
    }
}

impl Visitor<'_> for KeySeed {
    type Value = Key;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("field identifier")
    }
    fn visit_str<E: de::Error>(self, k: &str) -> Result<Key, E> {
        match k {
            "scheme" => return Ok(Key::Scheme),
            "port" => return Ok(Key::Port),
            _ => {}
        }
        lb::option(k)
            .map(Key::Opt)
            .ok_or_else(|| E::unknown_field(k, lb::section_keys()))
    }
}

/// Reads an option's value by its kind (a count takes only a whole number).
struct ValueSeed(&'static OptSpec);

impl<'de> DeserializeSeed<'de> for ValueSeed {
    type Value = OptValue;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<OptValue, D::Error> {
        match self.0.kind {
            OptKind::Count { .. } => u32::deserialize(d).map(OptValue::Count),
            _ => f64::deserialize(d).map(OptValue::Real),
        }
    }
}

struct SectionVisitor;

impl<'de> Visitor<'de> for SectionVisitor {
    type Value = LoadBalancingConfig;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("struct LoadBalancingConfig")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<LoadBalancingConfig, A::Error> {
        let mut cfg = LoadBalancingConfig::default();
        let mut scheme_seen = false;
        while let Some(key) = map.next_key_seed(KeySeed)? {
            match key {
                Key::Scheme => {
                    if std::mem::replace(&mut scheme_seen, true) {
                        return Err(de::Error::duplicate_field("scheme"));
                    }
                    cfg.scheme = map.next_value()?;
                }
                Key::Port => {
                    if cfg.port.is_some() {
                        return Err(de::Error::duplicate_field("port"));
                    }
                    cfg.port = Some(map.next_value()?);
                }
                Key::Opt(spec) => {
                    if cfg.value(spec.key).is_some() {
                        return Err(de::Error::duplicate_field(spec.key));
                    }
                    let v = map.next_value_seed(ValueSeed(spec))?;
                    cfg.set(spec, v);
                }
            }
        }
        Ok(cfg)
    }
}

impl<'de> Deserialize<'de> for LoadBalancingConfig {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_struct("LoadBalancingConfig", lb::section_keys(), SectionVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<LoadBalancingConfig, String> {
        toml::from_str(text).map_err(|e| e.to_string())
    }

    #[test]
    fn options_are_read_by_their_kind_and_written_back_in_registry_order() {
        let c = parse("reps_explore_packets = 3\nscheme = \"reps\"\nreps_freeze_us = 7\n").unwrap();
        assert_eq!(c.scheme, "reps");
        // An integer is a number of microseconds; a count stays a count.
        assert_eq!(c.value("reps_freeze_us"), Some(OptValue::Real(7.0)));
        assert_eq!(c.value("reps_explore_packets"), Some(OptValue::Count(3)));
        assert_eq!(
            c.given_options().collect::<Vec<_>>(),
            vec!["reps_freeze_us", "reps_explore_packets"]
        );
        let text = toml::to_string(&c).unwrap();
        assert_eq!(
            text,
            "scheme = \"reps\"\nreps_freeze_us = 7.0\nreps_explore_packets = 3\n"
        );
        assert_eq!(parse(&text).unwrap(), c);
        assert_eq!(parse("").unwrap(), LoadBalancingConfig::default());
    }

    #[test]
    fn a_bad_key_or_value_is_named_with_what_the_section_takes() {
        let e = parse("scheme = \"plb\"\nkk = 1\n").unwrap_err();
        assert!(
            e.contains("line 2") && e.contains("unknown field `kk`"),
            "{e}"
        );
        assert!(
            e.contains("`scheme`") && e.contains("`flowlet_gap_us`"),
            "{e}"
        );
        let e = parse("subflows = 2.5\n").unwrap_err();
        assert!(e.contains("expected u32"), "{e}");
        let e = parse("subflows = 2\nsubflows = 3\n").unwrap_err();
        assert!(e.contains("subflows"), "{e}");
        let e = parse("scheme = 3\n").unwrap_err();
        assert!(e.contains("expected a string"), "{e}");
    }

    #[test]
    fn validation_names_the_key_and_the_schemes_that_read_it() {
        let o = Origin::builtin();
        let plb = lb::scheme("plb").unwrap();
        let c = parse("scheme = \"plb\"\nsubflows = 2\n").unwrap();
        let e = c.validate(plb, &o).unwrap_err().to_string();
        assert!(
            e.contains("load_balancing.subflows")
                && e.contains("applies only to scheme subflow")
                && e.contains("`plb` takes only plb_congested_fraction"),
            "{e}"
        );
        let c = parse("plb_congested_fraction = 0\n").unwrap();
        let e = c.validate(plb, &o).unwrap_err().to_string();
        assert!(e.contains("must be in (0, 1]"), "{e}");
        let sub = lb::scheme("subflow").unwrap();
        let e = parse("subflows = 1025\n").unwrap().validate(sub, &o);
        assert!(e.unwrap_err().to_string().contains("between 1 and 1024"));
        assert!(parse("subflows = 1024\n")
            .unwrap()
            .validate(sub, &o)
            .is_ok());
    }

    #[test]
    fn defaults_fill_in_as_the_run_uses_them() {
        let mut c = parse("scheme = \"plb\"\nplb_suspend_us = 1.0000001\n").unwrap();
        c.fill_defaults(lb::scheme("plb").unwrap());
        let text = toml::to_string(&c).unwrap();
        assert_eq!(
            text,
            "scheme = \"plb\"\nplb_congested_fraction = 0.5\nplb_rehash_rounds = 12\n\
             plb_idle_rehash_rounds = 3\nplb_suspend_us = 1.0\n"
        );
        assert_eq!(lb::plb::PlbConfig::default().rehash_rounds, 12);
        assert_eq!(
            lb::plb::PlbConfig::default().suspend,
            SimTime::from_us(60_000_000)
        );
    }

    #[test]
    #[should_panic(expected = "without declaring it")]
    fn a_scheme_cannot_read_an_option_it_did_not_declare() {
        let c = LoadBalancingConfig::default();
        c.options(lb::scheme("ecmp").unwrap())
            .get(&lb::subflow::SUBFLOWS);
    }
}
