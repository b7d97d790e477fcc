//! Discrete-event simulator of the BALBOA RoCE stack, its peers and the
//! network between them: the default source of the rocescope workbench.
//!
//! - [`Scenario`]: what to simulate, from TOML (`assets/scenarios/`) or code;
//!   [`Scenario::set`] overrides any [`Params`] by name.
//! - [`Simulator`]: `new(scenario)` (the finite, reproducible run of
//!   `sim --headless`, tests and experiments) or `live(scenario)` (a
//!   workload runs until stopped, in bounded memory), then [`Simulator::run_until`] /
//!   [`Simulator::step`] hand out [`rocescope_replay::Record`]s as they happen;
//!   [`Simulator::run_until_into`] lends frames to a [`RecordSink`] instead
//!   (no allocation per frame).
//! - [`experiments`]: the paper's measurements computed from the model.

pub mod dcqcn;
pub mod engine;
pub mod experiments;
pub mod params;
pub mod points;
mod queue;
pub mod rng;
pub mod scenario;
pub mod slots;
pub mod sniffer;
mod template;
pub mod whatif;
pub mod wire;

pub use engine::{
    FrameRef, HeaderFrame, PeriodStats, QpStats, RecordSink, SimStats, Simulator, StoreSink,
};
pub use params::{ParamError, ParamInfo, Params};
pub use points::{PointSpec, PointStores, PointsTruth};
pub use scenario::{
    AppOp, CnpAt, FaultKind, FaultSpec, LinkDir, NodeKind, NodeSpec, OpKind, PauseAt, ProfilerSpec,
    QpSpec, Scenario, ScenarioError, SnifferSpec,
};
