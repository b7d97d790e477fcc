//! A scenario read from TOML: the raw shape serde fills, then every value
//! checked, each error naming the file, the line and the key.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::*;
use crate::params::Params;

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
    #[serde(default)]
    cnp: Vec<RawCnp>,
    #[serde(default)]
    pause: Vec<RawPause>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPause {
    node: String,
    at_ns: i64,
    quanta: i64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCnp {
    qp: i64,
    at_ns: i64,
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
        let mut cnps = Vec::new();
        for (i, c) in raw.cnp.iter().enumerate() {
            let p = |k: &'static str| [Seg::Key("cnp"), Seg::Index(i), Seg::Key(k)];
            if c.qp < 0 || c.qp as usize >= qps.len() {
                return Err(ctx.err(
                    &p("qp"),
                    format!(
                        "QP {} does not exist (0 ..= {})",
                        c.qp,
                        qps.len().saturating_sub(1)
                    ),
                ));
            }
            cnps.push(CnpAt {
                qp: c.qp as usize,
                at_ns: nonneg(&ctx, &p("at_ns"), Some(c.at_ns), 0)?,
            });
        }
        let mut pauses = Vec::new();
        for (i, p) in raw.pause.iter().enumerate() {
            let path = |k: &'static str| [Seg::Key("pause"), Seg::Index(i), Seg::Key(k)];
            let node = node_index(&ctx, &path("node"), &nodes, &p.node)?;
            let quanta = u16::try_from(p.quanta).map_err(|_| {
                ctx.err(
                    &path("quanta"),
                    format!(
                        "{} quanta is not a PFC pause time (0 ..= {})",
                        p.quanta,
                        u16::MAX
                    ),
                )
            })?;
            pauses.push(PauseAt {
                node,
                at_ns: nonneg(&ctx, &path("at_ns"), Some(p.at_ns), 0)?,
                quanta,
            });
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
            cnps,
            pauses,
        };
        scenario
            .check_params()
            .map_err(|(k, m)| ctx.err(&[Seg::Key("params"), Seg::Key(k)], m))?;
        Ok(scenario)
    }
}
