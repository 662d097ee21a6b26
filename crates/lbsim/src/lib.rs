//! lbsim: a packet-level simulator for load balancing in AI-training networks.
//!
//! Layers, lowest first: `time`/`ids`/`rng`/`config` (units, identities, seeded streams, errors
//! and defaults), `engine` (the event set), `net` (packets, ports, topologies), `lb`
//! (load-balancing policies), `workload`, `transport` (senders and receivers), `failure` and
//! `stats`, `memory`, `scenario` (the file and its validation), `sim` (the world and its
//! handlers), `experiments`. Lower layers never import higher ones (`tests/layers.rs` checks).
//! The library reads no wall clock inside a run and has no global state; [`run`] times a whole
//! run from the outside.

pub mod config;
pub mod engine;
pub mod experiments;
pub mod failure;
pub mod ids;
pub mod lb;
pub mod memory;
pub mod net;
pub mod rng;
pub mod scenario;
pub mod sim;
pub mod stats;
pub mod time;
pub mod transport;
pub mod workload;

pub use scenario::{ConfigError, Origin, Scenario, ScenarioFile};
pub use sim::Simulation;
pub use stats::{FlowRecord, Summary};

/// The outcome of one run.
pub struct RunOutput {
    pub summary: Summary,
    pub flows: Vec<FlowRecord>,
    /// Per-job, per-iteration and per-collective results (empty for traces).
    pub collectives: stats::collectives::CollectiveReport,
    /// The observer stopped the run before it ended (see [`run_observed`]).
    pub interrupted: bool,
    /// How the run used `threads` (None: one thread was asked for).
    pub parallel: Option<sim::Parallel>,
    /// The fabric it ran on (`fabric.json`).
    pub fabric: net::topology::FabricSummary,
}

/// Builds, runs and summarizes one scenario, filling in the wall-clock fields.
pub fn run(sc: Scenario) -> RunOutput {
    run_observed(sc, &mut |_| true)
}

/// [`run`] with an observer called every [`sim::OBSERVE_EVENTS`] events; answering false stops
/// the run, and the output then holds what was done by that instant (`interrupted` set).
pub fn run_observed(sc: Scenario, observe: &mut dyn FnMut(&sim::Progress) -> bool) -> RunOutput {
    run_with(sc, observe, None)
}

/// [`run_observed`], handing the scenario's telemetry (if `[telemetry]` is on) to `sink`.
pub fn run_with(
    sc: Scenario,
    observe: &mut dyn FnMut(&sim::Progress) -> bool,
    sink: Option<&mut dyn stats::telemetry::TelemetrySink>,
) -> RunOutput {
    let labels = sc.labels.clone();
    let fabric = sc.topology.fabric_summary();
    let t0 = std::time::Instant::now();
    let threads = sc.settings.threads.unwrap_or(1) as usize;
    let mut sim = Simulation::new(sc);
    sim.set_threads(threads);
    let interrupted = sim.run_with(observe, sink);
    let wall = t0.elapsed().as_secs_f64();
    let mut summary = sim.summary();
    summary.wall_seconds = wall;
    summary.events_per_second = if wall > 0.0 {
        summary.events as f64 / wall
    } else {
        0.0
    };
    let flows = sim.flow_records();
    RunOutput {
        summary,
        collectives: stats::collectives::report(&labels, &flows),
        flows,
        interrupted,
        parallel: sim.parallel().cloned(),
        fabric,
    }
}
