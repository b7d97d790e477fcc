//! Scenarios: endpoints, QPs and their workloads, faults, service slots,
//! sniffer, profiler, duration and seed, read from TOML
//! (`assets/scenarios/*.toml`) or built in code.
//!
//! Every load error names the file, the line and the key: unknown keys,
//! wrong types, and values the model cannot run (negative rates, 0 QPs, a
//! window of 0, more QPs than a card's state table).

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::params::{ParamError, Params};

mod toml_load;

/// A scenario that could not be loaded.
#[derive(Debug, Clone, PartialEq)]
pub struct ScenarioError {
    /// The file (or the name given to text loaded from memory).
    pub file: String,
    /// 1-based line of the offending key, when known.
    pub line: Option<usize>,
    /// Dotted path of the offending key, e.g. `qp[1].count`.
    pub key: String,
    /// What is wrong.
    pub message: String,
}

/// `FILE:LINE: KEY: MESSAGE`, without the parts that are not known.
impl std::fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.file)?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        if !self.key.is_empty() {
            write!(f, ": {}", self.key)?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for ScenarioError {}

/// Kind of RoCE endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeKind {
    /// The BALBOA FPGA stack.
    Balboa,
    /// A ConnectX-like NIC.
    Connectx,
}

/// One endpoint.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NodeSpec {
    /// Name used by QPs, faults and the sniffer.
    pub name: String,
    /// What it is.
    pub kind: NodeKind,
}

/// RDMA operation of a workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OpKind {
    /// RDMA WRITE.
    Write,
    /// RDMA READ.
    Read,
    /// Alternating WRITE and READ.
    Mixed,
    /// SEND, each message into a receive WQE the responder's host posted
    /// (`recv_queue_depth`); with none, the responder answers RNR.
    Send,
}

/// Application-slot operator (DLRM preprocessing) on 32-bit words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AppOp {
    /// No application slot.
    None,
    /// Negative integers become 0.
    Neg2zero,
    /// `ln(1 + x)` on f32 values (negative ones as 0).
    Logarithm,
    /// `x mod app_modulus` on u32 values.
    Modulus,
}

/// One QP and its workload (a `[[qp]]` with `count = N` expands to N).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct QpSpec {
    /// Requester node index.
    pub from: usize,
    /// Responder node index.
    pub to: usize,
    /// Operation.
    pub op: OpKind,
    /// Message size.
    pub size_bytes: u64,
    /// Messages to post (0 = until the run ends).
    pub messages: u64,
    /// Work requests outstanding at once.
    pub queue_depth: u32,
    /// Offered rate (0 = post again as soon as one completes).
    pub rate_gbps: f64,
    /// First post.
    pub start_ns: u64,
    /// AES-CTR on this QP's payloads.
    pub aes: bool,
    /// DPI on this QP's WRITE payloads at the responder.
    pub dpi: bool,
    /// Application-slot operator on this QP's payloads.
    pub app: AppOp,
    /// Every N-th message carries a payload the DPI rejects (0 = none).
    pub dpi_bad_every: u64,
    /// SEND: receive WQEs the responder's host keeps posted (0 = always
    /// one ready).
    pub recv_queue_depth: u32,
    /// SEND: the responder's host posts one receive WQE this often, up to
    /// `recv_queue_depth` (the application consuming its messages).
    pub recv_post_ns: u64,
}

impl QpSpec {
    /// A QP of `op` from node `from` to node `to` posting `size_bytes`
    /// messages until the run ends, `queue_depth` at once, as fast as they
    /// complete, with no slot operators and a receive WQE always ready.
    pub fn plain(from: usize, to: usize, op: OpKind, size_bytes: u64, queue_depth: u32) -> QpSpec {
        QpSpec {
            from,
            to,
            op,
            size_bytes,
            messages: 0,
            queue_depth,
            rate_gbps: 0.0,
            start_ns: 0,
            aes: false,
            dpi: false,
            app: AppOp::None,
            dpi_bad_every: 0,
            recv_queue_depth: 0,
            recv_post_ns: 0,
        }
    }
}

/// Kind of injected fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FaultKind {
    /// The frame disappears.
    Loss,
    /// The frame arrives with a bad ICRC.
    Corrupt,
    /// The frame is held back by `delay_ns` (later ones overtake it).
    Reorder,
    /// The frame arrives twice.
    Duplicate,
    /// The link is down between `start_ns` and `end_ns`.
    LinkDown,
    /// Not on the link: the node's host stalls a payload's DMA read (the
    /// host, PCIe, memory) for up to `delay_ns`, drawn evenly from a tenth
    /// of it up, before the packet can go; `direction` is ignored.
    HostStall,
}

/// Which way on a node's link to the switch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LinkDir {
    /// Frames the node sends.
    ToSwitch,
    /// Frames the switch sends to the node.
    FromSwitch,
    /// Both.
    Both,
}

/// Where on a frame's way a fault rule acts: the place a capture point
/// sees the loss at (`segment` in the multi-point analysis).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FaultAt {
    /// On the node's link to or from the switch (`direction`).
    #[default]
    Wire,
    /// In the switch's queue toward the node: after a mirror at the
    /// switch saw the frame, before the link to the node.
    Switch,
    /// In the node's receiving stack: after the node's own sniffer saw
    /// the frame (a receive buffer that overflows, say).
    Stack,
}

/// One fault rule.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FaultSpec {
    /// What happens.
    pub kind: FaultKind,
    /// Node whose link it is on.
    pub node: usize,
    /// Which way.
    pub direction: LinkDir,
    /// Where: on the wire (the default), in the switch's queue toward
    /// `node`, or in `node`'s receiving stack.
    pub at: FaultAt,
    /// Only frames of this QP (index in the scenario's QP list).
    pub qp: Option<usize>,
    /// Chance per matching frame.
    pub probability: f64,
    /// Hit exactly the n-th matching frame (1-based; 0 = not used).
    pub nth: u64,
    /// Active from.
    pub start_ns: u64,
    /// Active until (0 = to the end).
    pub end_ns: u64,
    /// Extra delay of a reordered frame.
    pub delay_ns: u64,
    /// The rule's timeline (`start_ns`, `end_ns`, `nth`) starts again every
    /// this many ns (0 = once): a run until stopped meets a link-down
    /// window or an n-th frame loss again and again.
    pub every_ns: u64,
}

/// The traffic sniffer next to one card's MAC.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SnifferSpec {
    /// Node whose RX and TX it captures.
    pub node: usize,
    /// The card's 64-bit filter word (see `sniffer::filter`).
    pub filter: u64,
    /// Model a card whose RoCE port comparison is fixed (`12 b7`); the card
    /// as built compares `b7 12` and never applies the RoCE bits.
    pub fixed_card: bool,
    /// Reproduce the RTL quirk that cuts RX frames by the TX side's opcode flags.
    pub rx_cut_quirk: bool,
    /// Tag frames rx/tx (the card cannot; the simulator knows).
    pub tag_direction: bool,
}

/// The per-cycle profiler.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProfilerSpec {
    /// Whether probes are sampled at all.
    pub enabled: bool,
    /// Sample every this many cycles (1 = every cycle).
    pub every_cycles: u64,
    /// Emit a sample only when the value changed.
    pub on_change: bool,
    /// Only probes whose name contains one of these (empty = all).
    pub probes: Vec<String>,
}

impl Default for ProfilerSpec {
    fn default() -> Self {
        ProfilerSpec {
            enabled: true,
            every_cycles: 25_000,
            on_change: true,
            probes: Vec::new(),
        }
    }
}

/// A whole, validated scenario.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Scenario {
    /// Short name.
    pub name: String,
    /// One paragraph for humans.
    pub description: String,
    /// Seed of every random choice.
    pub seed: u64,
    /// Simulated time of a finite run: the bound of every run when the
    /// scenario gives `duration_ns`; else what runs that must end take
    /// (`sim --headless`, tests, experiments: `finite_run_ns`, 10 ms by
    /// default).
    pub duration_ns: u64,
    /// True when the scenario gives no `duration_ns`: it describes a
    /// workload, and a live run ([`crate::Simulator::live`]: the agent, the
    /// workbench) goes on posting messages until it is stopped.
    pub until_stopped: bool,
    /// Model parameters (defaults overridden by `[params]` and `set`).
    pub params: Params,
    /// Endpoints (all attached to one switch).
    pub nodes: Vec<NodeSpec>,
    /// QPs, one entry per QP.
    pub qps: Vec<QpSpec>,
    /// Fault rules.
    pub faults: Vec<FaultSpec>,
    /// The sniffer, if any.
    pub sniffer: Option<SnifferSpec>,
    /// The profiler.
    pub profiler: ProfilerSpec,
    /// Capture points (`[[point]]`, `sim --points`): each writes a capture
    /// of its own with its own clock; none by default.
    pub points: Vec<crate::points::PointSpec>,
    /// CNPs delivered at given times (`[[cnp]]`); none by default.
    pub cnps: Vec<CnpAt>,
    /// PFC frames delivered at given times (`[[pause]]`); none by default.
    pub pauses: Vec<PauseAt>,
}

/// A PFC frame (priority 3) from the switch that reaches node `node` at
/// `at_ns`, holding its transmitter for `quanta` (512 bit times each),
/// whatever the switch's queues: a capture's pauses replayed by `whatif`,
/// whose cause (other hosts' traffic into the switch) is not in the
/// scenario. Sent only where PFC is on (`pfc_enabled`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct PauseAt {
    /// The node (index among the scenario's nodes).
    pub node: usize,
    /// When it reaches the node.
    pub at_ns: u64,
    /// Its hold, in quanta of 512 bit times.
    pub quanta: u16,
}

/// A CNP the requester of QP `qp` receives at `at_ns`, whatever the switch
/// does: a capture's CNPs replayed by `whatif`, whose cause (queues of
/// traffic the capture does not show) is not in the scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct CnpAt {
    /// The QP (index among the scenario's QPs).
    pub qp: usize,
    /// When it reaches the requester.
    pub at_ns: u64,
}

/// Length of a finite run of a scenario that gives neither `duration_ns`
/// nor `finite_run_ns`.
pub const DEFAULT_FINITE_RUN_NS: u64 = 10_000_000;

/// The scenarios shipped in `assets/scenarios/`, by name.
pub const BUILTIN: &[(&str, &str)] = &[
    (
        "default",
        include_str!("../../../assets/scenarios/default.toml"),
    ),
    (
        "lossy-link",
        include_str!("../../../assets/scenarios/lossy-link.toml"),
    ),
    (
        "incast",
        include_str!("../../../assets/scenarios/incast.toml"),
    ),
    (
        "line-rate",
        include_str!("../../../assets/scenarios/line-rate.toml"),
    ),
    (
        "window-stall",
        include_str!("../../../assets/scenarios/window-stall.toml"),
    ),
    (
        "read-heavy",
        include_str!("../../../assets/scenarios/read-heavy.toml"),
    ),
    ("aes", include_str!("../../../assets/scenarios/aes.toml")),
    (
        "dpi-drop",
        include_str!("../../../assets/scenarios/dpi-drop.toml"),
    ),
    (
        "teaching-basic",
        include_str!("../../../assets/scenarios/teaching-basic.toml"),
    ),
    (
        "dcqcn",
        include_str!("../../../assets/scenarios/dcqcn.toml"),
    ),
    ("pfc", include_str!("../../../assets/scenarios/pfc.toml")),
    ("rnr", include_str!("../../../assets/scenarios/rnr.toml")),
    (
        "host-stall",
        include_str!("../../../assets/scenarios/host-stall.toml"),
    ),
];

impl Scenario {
    /// Loads a scenario file.
    pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| ScenarioError {
            file: file.clone(),
            line: None,
            key: String::new(),
            message: e.to_string(),
        })?;
        Scenario::from_toml(&text, &file)
    }

    /// A shipped scenario by name (`default`, `lossy-link`, ...).
    pub fn builtin(name: &str) -> Option<Scenario> {
        let (_, text) = BUILTIN.iter().find(|(n, _)| *n == name)?;
        Scenario::from_toml(text, &format!("assets/scenarios/{name}.toml")).ok()
    }

    /// Names of the shipped scenarios.
    pub fn builtin_names() -> Vec<&'static str> {
        BUILTIN.iter().map(|(n, _)| *n).collect()
    }

    /// A shipped scenario by name, or a file by path.
    pub fn resolve(name_or_path: &str) -> Result<Scenario, ScenarioError> {
        if let Some((_, text)) = BUILTIN.iter().find(|(n, _)| *n == name_or_path) {
            return Scenario::from_toml(text, &format!("assets/scenarios/{name_or_path}.toml"));
        }
        let path = Path::new(name_or_path);
        if !path.exists() {
            // Most often a shipped scenario's name mistyped: name them.
            return Err(ScenarioError {
                file: name_or_path.to_owned(),
                line: None,
                key: String::new(),
                message: format!(
                    "neither a shipped scenario ({}) nor a scenario file",
                    Scenario::builtin_names().join(", ")
                ),
            });
        }
        Scenario::load(path)
    }

    /// Bounds every run to `ns` of simulated time (`--duration`): the
    /// scenario no longer runs until stopped.
    pub fn bound_to_ns(&mut self, ns: u64) {
        self.duration_ns = ns.max(1);
        self.until_stopped = false;
    }

    /// Overrides a model parameter by name (`set("hbm_fetch_ns", "3464")`).
    /// Checks cross-parameter rules and the QP tables again.
    pub fn set(&mut self, name: &str, value: &str) -> Result<(), ParamError> {
        let before = self.params.clone();
        self.params.set(name, value)?;
        if let Err((_, message)) = self.check_params() {
            let v = self.params.get(name).unwrap_or(f64::NAN);
            self.params = before;
            return Err(ParamError::BadValue {
                name: name.to_owned(),
                value: format!("{v} ({message})"),
                kind: "possible here",
            });
        }
        Ok(())
    }

    fn check_params(&self) -> Result<(), (&'static str, String)> {
        let p = &self.params;
        if p.pfc_xon_bytes > p.pfc_xoff_bytes {
            return Err(("pfc_xon_bytes", "must not exceed pfc_xoff_bytes".to_owned()));
        }
        if p.dcqcn_min_rate_gbps > p.link_gbps {
            return Err((
                "dcqcn_min_rate_gbps",
                "must not exceed link_gbps".to_owned(),
            ));
        }
        if !p.pmtu_bytes.is_power_of_two() {
            return Err((
                "pmtu_bytes",
                format!("{} is not a power of two", p.pmtu_bytes),
            ));
        }
        for (i, _) in self.nodes.iter().enumerate() {
            let used = self.qps.iter().filter(|q| q.from == i || q.to == i).count() as u64;
            if used > p.qp_table_size {
                return Err((
                    "qp_table_size",
                    format!(
                        "node `{}` holds {used} QPs, more than the state table ({})",
                        self.nodes[i].name, p.qp_table_size
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Two BALBOA cards and one QP of `op` with `size_bytes` messages: the
    /// base of the experiments.
    pub fn two_cards(op: OpKind, size_bytes: u64, qps: usize, queue_depth: u32) -> Scenario {
        let spec = QpSpec::plain(0, 1, op, size_bytes, queue_depth);
        Scenario {
            name: "two-cards".to_owned(),
            description: String::new(),
            seed: 1,
            duration_ns: 1_000_000,
            until_stopped: false,
            params: Params::default(),
            nodes: vec![
                NodeSpec {
                    name: "balboa0".to_owned(),
                    kind: NodeKind::Balboa,
                },
                NodeSpec {
                    name: "balboa1".to_owned(),
                    kind: NodeKind::Balboa,
                },
            ],
            qps: vec![spec; qps.max(1)],
            faults: Vec::new(),
            cnps: Vec::new(),
            pauses: Vec::new(),
            sniffer: None,
            profiler: ProfilerSpec {
                enabled: false,
                ..ProfilerSpec::default()
            },
            points: Vec::new(),
        }
    }
}
