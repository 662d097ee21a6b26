//! Simulated time and physical units.
//!
//! Time is an integer count of picoseconds so that runs are exact and reproducible: no floating
//! point ever decides an event order. Rates are integer bits per second.

use std::fmt;

/// A point in simulated time, in picoseconds since the start of the run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SimTime(pub u64);

impl SimTime {
    pub const ZERO: SimTime = SimTime(0);
    pub const MAX: SimTime = SimTime(u64::MAX);

    /// Saturates at [`SimTime::MAX`] (about 213 days), as every operation on times does: a time
    /// past the end of the run stays past it instead of wrapping to the start.
    pub const fn from_ns(ns: u64) -> SimTime {
        SimTime(ns.saturating_mul(1_000))
    }
    pub const fn from_us(us: u64) -> SimTime {
        SimTime(us.saturating_mul(1_000_000))
    }
    /// Rounds a non-negative, finite number of nanoseconds to the nearest picosecond.
    pub fn from_ns_f64(ns: f64) -> SimTime {
        SimTime((ns * 1_000.0).round() as u64)
    }
    pub fn from_us_f64(us: f64) -> SimTime {
        SimTime((us * 1_000_000.0).round() as u64)
    }
    pub const fn ps(self) -> u64 {
        self.0
    }
    pub fn as_us(self) -> f64 {
        self.0 as f64 / 1e6
    }
    pub fn saturating_add(self, d: SimTime) -> SimTime {
        SimTime(self.0.saturating_add(d.0))
    }
}

impl std::ops::Add for SimTime {
    type Output = SimTime;
    #[inline]
    fn add(self, o: SimTime) -> SimTime {
        SimTime(self.0.saturating_add(o.0))
    }
}

impl std::ops::Sub for SimTime {
    type Output = SimTime;
    fn sub(self, o: SimTime) -> SimTime {
        SimTime(self.0 - o.0)
    }
}

impl fmt::Display for SimTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.3}us", self.as_us())
    }
}

/// A link rate in bits per second.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BitsPerSec(pub u64);

impl BitsPerSec {
    pub fn from_gbps(gbps: f64) -> BitsPerSec {
        BitsPerSec((gbps * 1e9).round() as u64)
    }
    pub fn gbps(self) -> f64 {
        self.0 as f64 / 1e9
    }
    /// Time to serialize `bytes` onto a link of this rate, rounded up to a whole picosecond.
    #[inline]
    pub fn serialization(self, bytes: u64) -> SimTime {
        const BIT_PS: u64 = 8 * 1_000_000_000_000;
        // Packets (under 2.3 MB) take the 64-bit division; the 128-bit one is a library call.
        if let Some(bits) = bytes.checked_mul(BIT_PS) {
            return SimTime(bits.div_ceil(self.0));
        }
        let bits = bytes as u128 * BIT_PS as u128;
        SimTime(bits.div_ceil(self.0 as u128) as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        #[test]
        fn serialization_is_the_exact_ceiling(bytes in 0u64..1 << 40, rate in 1u64..1 << 50) {
            let want = (bytes as u128 * 8_000_000_000_000).div_ceil(rate as u128) as u64;
            proptest::prop_assert_eq!(BitsPerSec(rate).serialization(bytes), SimTime(want));
        }
    }

    #[test]
    fn serialization_is_exact_at_round_rates() {
        // 4158 B at 800 Gb/s = 41.58 ns.
        assert_eq!(
            BitsPerSec::from_gbps(800.0).serialization(4158),
            SimTime(41_580)
        );
        // 4178 B at 100 Gb/s = 334.24 ns.
        assert_eq!(
            BitsPerSec::from_gbps(100.0).serialization(4178),
            SimTime(334_240)
        );
        // Rounds up: 1 B at 3 b/s.
        assert_eq!(BitsPerSec(3).serialization(1), SimTime(2_666_666_666_667));
    }

    #[test]
    fn time_arithmetic_saturates_instead_of_wrapping() {
        // A failure at a huge time plus a convergence delay must stay in the far future.
        let at = SimTime::from_us(u64::MAX / 1_000_000);
        assert_eq!(at + SimTime::from_us(1_000), SimTime::MAX);
        assert_eq!(SimTime::from_us(u64::MAX), SimTime::MAX);
        assert_eq!(SimTime::from_ns(u64::MAX / 10), SimTime::MAX);
        assert_eq!(SimTime::from_us_f64(1e30), SimTime::MAX);
        assert_eq!(SimTime::MAX + SimTime::MAX, SimTime::MAX);
    }

    #[test]
    fn unit_conversions() {
        assert_eq!(SimTime::from_us(2), SimTime(2_000_000));
        assert_eq!(SimTime::from_ns_f64(0.5), SimTime(500));
        assert_eq!(SimTime::from_us_f64(1.5).ps(), 1_500_000);
    }
}
