//! Seeded random number generators. There is no global generator: every component that needs
//! randomness owns a xoshiro256++ stream derived from the scenario seed, a component tag and an
//! index, so adding a component never perturbs another one's draws.

use rand::distributions::uniform::{UniformInt, UniformSampler};
use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;

pub type SimRng = Xoshiro256PlusPlus;

/// A 64-bit mixing function (the splitmix64 finalizer): a bijection with good avalanche, used for
/// seeds and for ECMP hashing.
#[inline]
pub fn mix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Component tags, so that streams of different kinds never coincide.
#[derive(Clone, Copy, Debug)]
#[repr(u64)]
pub enum Stream {
    Workload = 1,
    Host = 2,
    Switch = 3,
    Salt = 4,
    Flow = 5,
    Failure = 6,
    /// A flow's per-packet path draws (host spraying, PLB re-draws, REPS exploration).
    FlowPath = 7,
    /// A `moe` workload's token-to-expert routing, one stream per layer of each iteration.
    Moe = 8,
}

pub fn derive_seed(seed: u64, stream: Stream, index: u64) -> u64 {
    mix64(mix64(seed ^ mix64(stream as u64)) ^ index)
}

pub fn rng_for(seed: u64, stream: Stream, index: u64) -> SimRng {
    SimRng::seed_from_u64(derive_seed(seed, stream, index))
}

/// Per-packet generators of one stream: `packet_rng(stream_base(seed, s), i, n)` is the
/// generator for the `n`-th draw point of component `i`. Nothing is stored per component, and
/// its draws depend on nothing but its own index and count, so one flow's packets never move
/// another's.
pub fn stream_base(seed: u64, stream: Stream) -> u64 {
    mix64(seed ^ mix64(stream as u64))
}

#[inline]
pub fn packet_rng(base: u64, index: u64, n: u64) -> SimRng {
    SimRng::seed_from_u64(mix64(mix64(base ^ index) ^ n))
}

/// A uniform draw from `0..n` (n > 0), for per-packet decisions: the same draw as
/// `rng.gen_range(0..n)`, which is this call after a check that the range is not empty, spelled
/// so that it inlines into a switch policy's loop (measured: `gen_range` itself stayed an
/// out-of-line call there, 1.7% more instructions on the switch_ar all-to-all).
#[inline]
pub fn below(rng: &mut SimRng, n: u32) -> u32 {
    UniformInt::<u32>::sample_single(0, n, rng)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng;

    #[test]
    fn below_is_gen_range() {
        let (mut a, mut b) = (rng_for(1, Stream::Switch, 0), rng_for(1, Stream::Switch, 0));
        for n in (1..500u32).chain([u32::MAX, 1 << 31, 3 << 29]) {
            assert_eq!(below(&mut a, n), b.gen_range(0..n));
        }
    }

    #[test]
    fn streams_are_reproducible_and_distinct() {
        let a: u64 = rng_for(7, Stream::Host, 3).gen();
        let b: u64 = rng_for(7, Stream::Host, 3).gen();
        let c: u64 = rng_for(7, Stream::Host, 4).gen();
        let d: u64 = rng_for(7, Stream::Switch, 3).gen();
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_ne!(a, d);
    }

    #[test]
    fn packet_generators_depend_only_on_their_index_and_count() {
        let base = stream_base(7, Stream::FlowPath);
        let a: u64 = packet_rng(base, 3, 10).gen();
        assert_eq!(a, packet_rng(base, 3, 10).gen::<u64>());
        assert_ne!(a, packet_rng(base, 3, 11).gen::<u64>());
        assert_ne!(a, packet_rng(base, 4, 10).gen::<u64>());
        assert_ne!(
            a,
            packet_rng(stream_base(8, Stream::FlowPath), 3, 10).gen::<u64>()
        );
    }
}
