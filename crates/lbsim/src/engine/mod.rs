//! The discrete-event engine: the pending-event set. It knows nothing of networks; the simulation
//! (crate::sim) owns the world and dispatches the events it pops.

pub mod queue;

pub use queue::EventQueue;
