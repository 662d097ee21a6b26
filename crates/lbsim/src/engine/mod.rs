//! The discrete-event engine: the pending-event set. It knows nothing of networks; the simulation
//! (crate::sim) owns the world and dispatches the events it pops.

pub mod queue;

pub use queue::EventQueue;

/// Asks for the cache line holding `x` ahead of its use. At scale most per-hop state (a queued
/// packet, a flow) was last touched long ago and misses every cache; where the next access is
/// known one step early, the hint hides that latency.
#[inline(always)]
pub fn prefetch<T>(x: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is only a hint: it never faults and changes no architectural state.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
            (x as *const T).cast(),
        )
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = x;
}
