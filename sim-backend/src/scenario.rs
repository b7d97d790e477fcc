//! Scenarios: endpoints, QPs and their workloads, faults, service slots,
//! sniffer, profiler, duration and seed, read from TOML
//! (`assets/scenarios/*.toml`) or built in code.
//!
//! Every load error names the file, the line and the key: unknown keys,
//! wrong types, and values the model cannot run (negative rates, 0 QPs, a
//! window of 0, more QPs than a card's state table).

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::params::{ParamError, Params};

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
}

/// Length of a finite run of a scenario that gives neither `duration_ns`
/// nor `finite_run_ns`.
pub const DEFAULT_FINITE_RUN_NS: u64 = 10_000_000;

/// The scenarios shipped in `assets/scenarios/`, by name.
pub const BUILTIN: &[(&str, &str)] = &[
    (
        "default",
        include_str!("../../assets/scenarios/default.toml"),
    ),
    (
        "lossy-link",
        include_str!("../../assets/scenarios/lossy-link.toml"),
    ),
    ("incast", include_str!("../../assets/scenarios/incast.toml")),
    (
        "line-rate",
        include_str!("../../assets/scenarios/line-rate.toml"),
    ),
    (
        "window-stall",
        include_str!("../../assets/scenarios/window-stall.toml"),
    ),
    (
        "read-heavy",
        include_str!("../../assets/scenarios/read-heavy.toml"),
    ),
    ("aes", include_str!("../../assets/scenarios/aes.toml")),
    (
        "dpi-drop",
        include_str!("../../assets/scenarios/dpi-drop.toml"),
    ),
    (
        "teaching-basic",
        include_str!("../../assets/scenarios/teaching-basic.toml"),
    ),
    ("dcqcn", include_str!("../../assets/scenarios/dcqcn.toml")),
    ("pfc", include_str!("../../assets/scenarios/pfc.toml")),
    ("rnr", include_str!("../../assets/scenarios/rnr.toml")),
    (
        "host-stall",
        include_str!("../../assets/scenarios/host-stall.toml"),
    ),
];

// ---------------------------------------------------------------- raw TOML

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScenario {
    name: Option<String>,
    description: Option<String>,
    seed: Option<u64>,
    duration_ns: Option<u64>,
    finite_run_ns: Option<u64>,
    #[serde(default)]
    params: BTreeMap<String, RawParam>,
    #[serde(default)]
    node: Vec<RawNode>,
    #[serde(default)]
    qp: Vec<RawQp>,
    #[serde(default)]
    fault: Vec<RawFault>,
    sniffer: Option<RawSniffer>,
    profiler: Option<RawProfiler>,
    #[serde(default)]
    point: Vec<crate::points::RawPoint>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum RawParam {
    Bool(bool),
    Int(i64),
    Float(f64),
    Text(String),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawNode {
    name: String,
    kind: NodeKind,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawQp {
    from: String,
    to: String,
    count: Option<i64>,
    op: Option<OpKind>,
    size_bytes: Option<i64>,
    messages: Option<i64>,
    queue_depth: Option<i64>,
    rate_gbps: Option<f64>,
    start_ns: Option<i64>,
    aes: Option<bool>,
    dpi: Option<bool>,
    app: Option<AppOp>,
    dpi_bad_every: Option<i64>,
    recv_queue_depth: Option<i64>,
    recv_post_ns: Option<i64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFault {
    kind: FaultKind,
    node: String,
    direction: Option<LinkDir>,
    at: Option<FaultAt>,
    qp: Option<i64>,
    probability: Option<f64>,
    nth: Option<i64>,
    start_ns: Option<i64>,
    end_ns: Option<i64>,
    delay_ns: Option<i64>,
    every_ns: Option<i64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSniffer {
    node: String,
    filter: Option<u64>,
    fixed_card: Option<bool>,
    rx_cut_quirk: Option<bool>,
    tag_direction: Option<bool>,
    enabled: Option<bool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawProfiler {
    enabled: Option<bool>,
    every_cycles: Option<i64>,
    on_change: Option<bool>,
    probes: Option<Vec<String>>,
}

// ---------------------------------------------------------------- spans

/// One step of a key path.
#[derive(Debug, Clone)]
enum Seg {
    Key(&'static str),
    Name(String),
    Index(usize),
}

fn path_text(path: &[Seg]) -> String {
    let mut s = String::new();
    for seg in path {
        match seg {
            Seg::Key(k) => push_key(&mut s, k),
            Seg::Name(k) => push_key(&mut s, k),
            Seg::Index(i) => s.push_str(&format!("[{i}]")),
        }
    }
    s
}

fn push_key(s: &mut String, k: &str) {
    if !s.is_empty() {
        s.push('.');
    }
    s.push_str(k);
}

fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()
        .iter()
        .take(offset.min(text.len()))
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

type DeVal<'a> = toml::de::DeValue<'a>;
type SpannedVal<'a> = toml::Spanned<DeVal<'a>>;

/// The byte offset of the key at `path` (or of its value for array items).
fn span_of(text: &str, path: &[Seg]) -> Option<usize> {
    let root = toml::de::DeTable::parse(text).ok()?;
    let mut table = root.get_ref();
    let mut cur: Option<&SpannedVal<'_>> = None;
    let mut at = None;
    for seg in path {
        match seg {
            Seg::Key(_) | Seg::Name(_) => {
                let k: &str = match seg {
                    Seg::Key(k) => k,
                    Seg::Name(k) => k.as_str(),
                    Seg::Index(_) => return at,
                };
                if let Some(v) = cur {
                    match v.get_ref() {
                        DeVal::Table(t) => table = t,
                        _ => return at,
                    }
                }
                let (key, val) = table.iter().find(|(key, _)| key.get_ref() == k)?;
                at = Some(key.span().start);
                cur = Some(val);
            }
            Seg::Index(i) => {
                let v = cur?;
                let DeVal::Array(a) = v.get_ref() else {
                    return at;
                };
                let item = a.get(*i)?;
                at = Some(item.span().start);
                cur = Some(item);
            }
        }
    }
    at
}

/// The dotted key whose key or value span holds `offset`, deepest first.
fn key_at(text: &str, offset: usize) -> Option<String> {
    let root = toml::de::DeTable::parse(text).ok()?;
    fn walk(t: &toml::de::DeTable<'_>, offset: usize, prefix: &str) -> Option<String> {
        for (k, v) in t.iter() {
            let name = if prefix.is_empty() {
                k.get_ref().to_string()
            } else {
                format!("{prefix}.{}", k.get_ref())
            };
            let inside = k.span().contains(&offset) || v.span().contains(&offset);
            if let Some(found) = walk_val(v, offset, &name) {
                return Some(found);
            }
            if inside {
                return Some(name);
            }
        }
        None
    }
    fn walk_val(v: &SpannedVal<'_>, offset: usize, name: &str) -> Option<String> {
        match v.get_ref() {
            DeVal::Table(t) => walk(t, offset, name),
            DeVal::Array(a) => a.iter().enumerate().find_map(|(i, item)| {
                let n = format!("{name}[{i}]");
                walk_val(item, offset, &n).or_else(|| item.span().contains(&offset).then_some(n))
            }),
            _ => None,
        }
    }
    walk(root.get_ref(), offset, "")
}

struct Ctx<'a> {
    file: &'a str,
    text: &'a str,
}

impl Ctx<'_> {
    fn err(&self, path: &[Seg], message: impl Into<String>) -> ScenarioError {
        ScenarioError {
            file: self.file.to_owned(),
            line: span_of(self.text, path).map(|o| line_of(self.text, o)),
            key: path_text(path),
            message: message.into(),
        }
    }
}

fn nonneg(ctx: &Ctx<'_>, path: &[Seg], v: Option<i64>, default: u64) -> Result<u64, ScenarioError> {
    match v {
        None => Ok(default),
        Some(v) if v < 0 => Err(ctx.err(path, format!("{v} is impossible: must not be negative"))),
        Some(v) => Ok(v as u64),
    }
}

fn seed_of(raw: &RawScenario) -> u64 {
    raw.seed.unwrap_or(1)
}

fn node_index(
    ctx: &Ctx<'_>,
    path: &[Seg],
    nodes: &[NodeSpec],
    name: &str,
) -> Result<usize, ScenarioError> {
    nodes.iter().position(|n| n.name == name).ok_or_else(|| {
        let names: Vec<&str> = nodes.iter().map(|n| n.name.as_str()).collect();
        ctx.err(
            path,
            format!("no node named `{name}` (nodes: {})", names.join(", ")),
        )
    })
}

impl Scenario {
    /// Parses and validates a scenario; `file` names it in errors.
    pub fn from_toml(text: &str, file: &str) -> Result<Scenario, ScenarioError> {
        let ctx = Ctx { file, text };
        let raw: RawScenario = toml::from_str(text).map_err(|e| {
            let offset = e.span().map(|s| s.start);
            let key = offset
                .and_then(|o| key_at(text, o))
                .or_else(|| {
                    // serde names unknown fields in its message.
                    e.message().split('`').nth(1).map(str::to_owned)
                })
                .unwrap_or_else(|| "(document)".to_owned());
            ScenarioError {
                file: file.to_owned(),
                line: offset.map(|o| line_of(text, o)),
                key,
                message: e.message().trim().to_owned(),
            }
        })?;
        let mut params = Params::default();
        for (name, v) in &raw.params {
            let path = [Seg::Key("params"), Seg::Name(name.clone())];
            let r = match v {
                RawParam::Bool(b) => params.set_f64(name, if *b { 1.0 } else { 0.0 }),
                RawParam::Int(i) => params.set_f64(name, *i as f64),
                RawParam::Float(f) => params.set_f64(name, *f),
                RawParam::Text(t) => params.set(name, t),
            };
            r.map_err(|e| ctx.err(&path, e.to_string()))?;
        }
        let mut nodes = Vec::new();
        for (i, n) in raw.node.iter().enumerate() {
            if nodes.iter().any(|x: &NodeSpec| x.name == n.name) {
                return Err(ctx.err(
                    &[Seg::Key("node"), Seg::Index(i), Seg::Key("name")],
                    format!("node `{}` is defined twice", n.name),
                ));
            }
            nodes.push(NodeSpec {
                name: n.name.clone(),
                kind: n.kind,
            });
        }
        if nodes.len() < 2 {
            return Err(ctx.err(
                &[Seg::Key("node")],
                "at least two [[node]] entries are needed",
            ));
        }
        if nodes.len() > 250 {
            return Err(ctx.err(&[Seg::Key("node")], "at most 250 nodes"));
        }
        let mut qps = Vec::new();
        for (i, q) in raw.qp.iter().enumerate() {
            let p = |k: &'static str| [Seg::Key("qp"), Seg::Index(i), Seg::Key(k)];
            let from = node_index(&ctx, &p("from"), &nodes, &q.from)?;
            let to = node_index(&ctx, &p("to"), &nodes, &q.to)?;
            if from == to {
                return Err(ctx.err(&p("to"), "a QP needs two different nodes"));
            }
            let count = nonneg(&ctx, &p("count"), q.count, 1)?;
            if count == 0 {
                return Err(ctx.err(&p("count"), "0 QPs is impossible: count must be at least 1"));
            }
            let size_bytes = nonneg(&ctx, &p("size_bytes"), q.size_bytes, 65_536)?;
            if size_bytes == 0 || size_bytes > 1 << 31 {
                return Err(ctx.err(
                    &p("size_bytes"),
                    format!("{size_bytes} is impossible: must be 1 ..= 2 GiB"),
                ));
            }
            let queue_depth = nonneg(&ctx, &p("queue_depth"), q.queue_depth, 4)?;
            if queue_depth == 0 || queue_depth > 65_536 {
                return Err(ctx.err(
                    &p("queue_depth"),
                    format!("{queue_depth} is impossible: must be 1 ..= 65536"),
                ));
            }
            let rate_gbps = q.rate_gbps.unwrap_or(0.0);
            if !(rate_gbps.is_finite() && rate_gbps >= 0.0) {
                return Err(ctx.err(
                    &p("rate_gbps"),
                    format!("{rate_gbps} is impossible: a rate must not be negative"),
                ));
            }
            let spec = QpSpec {
                from,
                to,
                op: q.op.unwrap_or(OpKind::Write),
                size_bytes,
                messages: nonneg(&ctx, &p("messages"), q.messages, 0)?,
                queue_depth: queue_depth as u32,
                rate_gbps,
                start_ns: nonneg(&ctx, &p("start_ns"), q.start_ns, 0)?,
                aes: q.aes.unwrap_or(false),
                dpi: q.dpi.unwrap_or(false),
                app: q.app.unwrap_or(AppOp::None),
                dpi_bad_every: nonneg(&ctx, &p("dpi_bad_every"), q.dpi_bad_every, 0)?,
                recv_queue_depth: u32::try_from(nonneg(
                    &ctx,
                    &p("recv_queue_depth"),
                    q.recv_queue_depth,
                    0,
                )?)
                .unwrap_or(u32::MAX),
                recv_post_ns: nonneg(&ctx, &p("recv_post_ns"), q.recv_post_ns, 0)?,
            };
            if spec.recv_queue_depth > 0 && spec.recv_post_ns == 0 {
                return Err(ctx.err(
                    &p("recv_post_ns"),
                    "a receive queue needs recv_post_ns > 0: how often its host posts a WQE",
                ));
            }
            for _ in 0..count {
                qps.push(spec.clone());
            }
            for node in [from, to] {
                let used = qps
                    .iter()
                    .filter(|s| s.from == node || s.to == node)
                    .count() as u64;
                if used > params.qp_table_size {
                    return Err(ctx.err(
                        &p("count"),
                        format!(
                            "node `{}` would hold {used} QPs, more than its state table ({} QPs, qp_table_size)",
                            nodes[node].name, params.qp_table_size
                        ),
                    ));
                }
            }
        }
        if qps.is_empty() {
            return Err(ctx.err(
                &[Seg::Key("qp")],
                "0 QPs is impossible: add at least one [[qp]]",
            ));
        }
        let mut faults = Vec::new();
        for (i, f) in raw.fault.iter().enumerate() {
            let p = |k: &'static str| [Seg::Key("fault"), Seg::Index(i), Seg::Key(k)];
            let node = node_index(&ctx, &p("node"), &nodes, &f.node)?;
            let probability = f.probability.unwrap_or(0.0);
            if !(0.0..=1.0).contains(&probability) {
                return Err(ctx.err(
                    &p("probability"),
                    format!("{probability} is impossible: must be within 0 ..= 1"),
                ));
            }
            let qp = match f.qp {
                None => None,
                Some(q) if q < 0 || q as usize >= qps.len() => {
                    return Err(ctx.err(
                        &p("qp"),
                        format!("QP {q} does not exist (0 ..= {})", qps.len() - 1),
                    ));
                }
                Some(q) => Some(q as usize),
            };
            let start_ns = nonneg(&ctx, &p("start_ns"), f.start_ns, 0)?;
            let end_ns = nonneg(&ctx, &p("end_ns"), f.end_ns, 0)?;
            if end_ns != 0 && end_ns <= start_ns {
                return Err(ctx.err(&p("end_ns"), "end_ns must be after start_ns"));
            }
            let nth = nonneg(&ctx, &p("nth"), f.nth, 0)?;
            let every_ns = nonneg(&ctx, &p("every_ns"), f.every_ns, 0)?;
            if every_ns != 0 && (start_ns >= every_ns || end_ns > every_ns) {
                return Err(ctx.err(
                    &p("every_ns"),
                    format!(
                        "{every_ns} is impossible: start_ns and end_ns must lie within one period"
                    ),
                ));
            }
            if f.kind != FaultKind::LinkDown && probability == 0.0 && nth == 0 {
                return Err(ctx.err(
                    &p("probability"),
                    "a fault needs a probability > 0 or nth >= 1",
                ));
            }
            let at = f.at.unwrap_or_default();
            if at != FaultAt::Wire {
                if !matches!(f.kind, FaultKind::Loss) {
                    return Err(ctx.err(
                        &p("at"),
                        "only a loss happens in the switch's queue or a stack (kind = \"loss\")",
                    ));
                }
                if f.direction.is_some_and(|d| d != LinkDir::FromSwitch) {
                    return Err(ctx.err(
                        &p("direction"),
                        "a loss in the switch's queue or a stack is of frames toward the node: direction = \"from_switch\" or none",
                    ));
                }
            }
            faults.push(FaultSpec {
                kind: f.kind,
                node,
                direction: f.direction.unwrap_or(LinkDir::Both),
                at,
                qp,
                probability,
                nth,
                start_ns,
                end_ns,
                delay_ns: nonneg(&ctx, &p("delay_ns"), f.delay_ns, 2_000)?,
                every_ns,
            });
        }
        let sniffer = match &raw.sniffer {
            Some(s) if s.enabled.unwrap_or(true) => Some(SnifferSpec {
                node: node_index(
                    &ctx,
                    &[Seg::Key("sniffer"), Seg::Key("node")],
                    &nodes,
                    &s.node,
                )?,
                filter: s
                    .filter
                    .unwrap_or(crate::sniffer::filter::ROCE_V4_HEADER_ONLY),
                fixed_card: s.fixed_card.unwrap_or(true),
                rx_cut_quirk: s.rx_cut_quirk.unwrap_or(true),
                tag_direction: s.tag_direction.unwrap_or(true),
            }),
            _ => None,
        };
        let mut profiler = ProfilerSpec::default();
        if let Some(p) = &raw.profiler {
            let path = [Seg::Key("profiler"), Seg::Key("every_cycles")];
            profiler.enabled = p.enabled.unwrap_or(true);
            profiler.every_cycles = nonneg(&ctx, &path, p.every_cycles, profiler.every_cycles)?;
            if profiler.every_cycles == 0 {
                return Err(ctx.err(&path, "0 is impossible: sample at least every cycle (1)"));
            }
            profiler.on_change = p.on_change.unwrap_or(true);
            profiler.probes = p.probes.clone().unwrap_or_default();
        }
        if raw.duration_ns.is_some() && raw.finite_run_ns.is_some() {
            return Err(ctx.err(
                &[Seg::Key("finite_run_ns")],
                "give duration_ns (every run ends there) or finite_run_ns (the scenario runs until stopped; finite runs take this long), not both",
            ));
        }
        let (key, given) = match (raw.duration_ns, raw.finite_run_ns) {
            (Some(d), _) => ("duration_ns", Some(d)),
            (None, f) => ("finite_run_ns", f),
        };
        let duration_ns = given.unwrap_or(DEFAULT_FINITE_RUN_NS);
        if duration_ns == 0 {
            return Err(ctx.err(&[Seg::Key(key)], "0 is impossible: a run needs time"));
        }
        let mut points = Vec::new();
        for (i, r) in raw.point.iter().enumerate() {
            let path = |k: &'static str| [Seg::Key("point"), Seg::Index(i), Seg::Key(k)];
            let spec = crate::points::PointSpec::from_raw(r, i, &nodes, &qps, seed_of(&raw))
                .map_err(|(k, m)| ctx.err(&path(k), m))?;
            if points
                .iter()
                .any(|p: &crate::points::PointSpec| p.name == spec.name)
            {
                return Err(ctx.err(
                    &path("name"),
                    format!("point `{}` is defined twice", spec.name),
                ));
            }
            points.push(spec);
        }
        let scenario = Scenario {
            name: raw.name.unwrap_or_else(|| file.to_owned()),
            description: raw.description.unwrap_or_default(),
            seed: raw.seed.unwrap_or(1),
            duration_ns,
            until_stopped: raw.duration_ns.is_none(),
            params,
            nodes,
            qps,
            faults,
            sniffer,
            profiler,
            points,
        };
        scenario
            .check_params()
            .map_err(|(k, m)| ctx.err(&[Seg::Key("params"), Seg::Key(k)], m))?;
        Ok(scenario)
    }

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
        let spec = QpSpec {
            from: 0,
            to: 1,
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
        };
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
            sniffer: None,
            profiler: ProfilerSpec {
                enabled: false,
                ..ProfilerSpec::default()
            },
            points: Vec::new(),
        }
    }
}
