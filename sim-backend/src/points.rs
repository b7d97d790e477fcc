//! Capture points: the same traffic seen from several places (each card's
//! sniffer, a mirror at the switch), each point with a clock of its own
//! and its own capture loss: the simulator's ground truth for the
//! multi-point analysis (`rocescope_replay::points`).
//!
//! A scenario names its points in `[[point]]` tables, or `sim --points
//! a,sw,b` names them on the command line ([`Scenario::set_points`]).
//! A point at a node sees what the node sends when its first bit leaves
//! and what it receives when its last bit has passed the MAC (where the
//! card's sniffer taps); a point at the switch sees every frame to or
//! from the nodes that have points (all frames when none do) when its
//! last bit has reached the switch, before the switch queues it (an
//! ingress mirror). Each point's clock reads
//! `offset_ns + t + t * drift_ppm / 1e6` at true time `t`.
//!
//! [`PointsTruth`] is what happened to every frame lost on its way: where
//! ([`DropPlace`]) and, named after the points around it, on which
//! segment ([`PointsTruth::segment`]: `a>sw`, `sw>b`, `b`).

use std::path::Path;

use serde::Serialize;

use crate::engine::{FrameRef, RecordSink};
use crate::rng::mix64;
use crate::scenario::{NodeSpec, QpSpec, Scenario};

/// Where a point taps the traffic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Tap {
    /// A node's own sniffer: what it sends and receives.
    Node(usize),
    /// A mirror at the switch's ingress.
    Switch,
}

/// One capture point.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PointSpec {
    /// Its name (`a`, `sw`, `b`): the analysis names segments after it.
    pub name: String,
    pub tap: Tap,
    /// Its clock at true time 0.
    pub offset_ns: u64,
    /// How fast its clock runs against true time, parts per million.
    pub drift_ppm: f64,
    /// Chance that it misses a frame (capture loss, not wire loss).
    pub capture_loss: f64,
}

/// A `[[point]]` table as written.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawPoint {
    name: String,
    tap: Option<String>,
    offset_ns: Option<i64>,
    drift_ppm: Option<f64>,
    capture_loss: Option<f64>,
}

/// The largest drift a point's clock may have: a crystal far out of spec
/// is still within 1,000 ppm.
pub const MAX_DRIFT_PPM: f64 = 1000.0;

/// The default clock of the `i`-th point of a scenario with `seed`: an
/// offset within 2 ms and a drift within ±60 ppm (what cheap crystals
/// give), so that a run with `--points` exercises the alignment.
pub fn default_clock(seed: u64, i: usize) -> (u64, f64) {
    // The index in the low bits: one SplitMix64 round spreads a change
    // upward only.
    let h = mix64(mix64(seed ^ 0x706f_696e_7473) ^ i as u64);
    let offset_ns = h % 2_000_000;
    let drift_ppm = ((h >> 32) % 12_001) as f64 / 100.0 - 60.0;
    (offset_ns, drift_ppm)
}

/// The tap a point's name or `tap` value names: a node's name, `switch`
/// (`sw`, `mirror`), or `a` and `b`, the first QP's requester and
/// responder.
fn tap_named(name: &str, nodes: &[NodeSpec], qps: &[QpSpec]) -> Result<Tap, String> {
    if let Some(i) = nodes.iter().position(|n| n.name == name) {
        return Ok(Tap::Node(i));
    }
    match name {
        "switch" | "sw" | "mirror" => Ok(Tap::Switch),
        "a" => qps
            .first()
            .map(|q| Tap::Node(q.from))
            .ok_or_else(|| "no QP: `a` is the first QP's requester".to_owned()),
        "b" => qps
            .first()
            .map(|q| Tap::Node(q.to))
            .ok_or_else(|| "no QP: `b` is the first QP's responder".to_owned()),
        _ => {
            let names: Vec<&str> = nodes.iter().map(|n| n.name.as_str()).collect();
            Err(format!(
                "`{name}` is no place to capture: a node ({}), switch, or a and b (the first QP's ends)",
                names.join(", ")
            ))
        }
    }
}

fn check_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= 16
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if ok {
        Ok(())
    } else {
        Err(format!(
            "point name `{name}`: 1 to 16 letters, digits, `_` or `-` (it names files and segments)"
        ))
    }
}

fn check_clock(drift_ppm: f64, capture_loss: f64) -> Result<(), (&'static str, String)> {
    if !(drift_ppm.is_finite() && drift_ppm.abs() <= MAX_DRIFT_PPM) {
        return Err((
            "drift_ppm",
            format!("{drift_ppm} is impossible: within ±{MAX_DRIFT_PPM} ppm"),
        ));
    }
    if !(0.0..1.0).contains(&capture_loss) {
        return Err((
            "capture_loss",
            format!("{capture_loss} is impossible: a chance within 0 ..< 1"),
        ));
    }
    Ok(())
}

impl PointSpec {
    pub(crate) fn from_raw(
        r: &RawPoint,
        i: usize,
        nodes: &[NodeSpec],
        qps: &[QpSpec],
        seed: u64,
    ) -> Result<PointSpec, (&'static str, String)> {
        check_name(&r.name).map_err(|m| ("name", m))?;
        let tap = tap_named(r.tap.as_deref().unwrap_or(&r.name), nodes, qps)
            .map_err(|m| (if r.tap.is_some() { "tap" } else { "name" }, m))?;
        let (offset, drift) = default_clock(seed, i);
        let offset_ns = match r.offset_ns {
            None => offset,
            Some(v) if v < 0 => {
                return Err((
                    "offset_ns",
                    format!("{v} is impossible: a clock starts at 0 or later"),
                ));
            }
            Some(v) => v as u64,
        };
        let drift_ppm = r.drift_ppm.unwrap_or(drift);
        let capture_loss = r.capture_loss.unwrap_or(0.0);
        check_clock(drift_ppm, capture_loss)?;
        Ok(PointSpec {
            name: r.name.clone(),
            tap,
            offset_ns,
            drift_ppm,
            capture_loss,
        })
    }

    /// The point's clock at true time `t_ns`.
    pub fn clock_ns(&self, t_ns: u64) -> u64 {
        let drift = (t_ns as f64 * self.drift_ppm * 1e-6).round() as i64;
        (self.offset_ns + t_ns).saturating_add_signed(drift)
    }
}

impl Scenario {
    /// Capture points from a list as `sim --points` takes it: `a,sw,b`,
    /// or `NAME=TAP` items (`alice=balboa0,mirror=switch,bob=balboa1`),
    /// in path order; each with the default clock of its place in the
    /// list. Replaces the scenario's own points.
    pub fn set_points(&mut self, list: &str) -> Result<(), String> {
        let mut points: Vec<PointSpec> = Vec::new();
        for (i, item) in list.split(',').map(str::trim).enumerate() {
            let (name, tap) = item.split_once('=').unwrap_or((item, item));
            check_name(name)?;
            if points.iter().any(|p| p.name == name) {
                return Err(format!("point `{name}` is named twice"));
            }
            let tap = tap_named(tap, &self.nodes, &self.qps)?;
            let (offset_ns, drift_ppm) = default_clock(self.seed, i);
            points.push(PointSpec {
                name: name.to_owned(),
                tap,
                offset_ns,
                drift_ppm,
                capture_loss: 0.0,
            });
        }
        if points.len() < 2 {
            return Err(format!(
                "`{list}`: at least two points, in path order (a,sw,b)"
            ));
        }
        if points.len() > MAX_POINTS {
            return Err(format!("`{list}`: at most {MAX_POINTS} points"));
        }
        self.points = points;
        Ok(())
    }

    /// Sets one point's property (`sw.drift_ppm=40`, `b.offset_ns=150000`,
    /// `sw.capture_loss=0.001`), as `sim --point-set` takes it.
    pub fn set_point(&mut self, assignment: &str) -> Result<(), String> {
        let Some((key, value)) = assignment.split_once('=') else {
            return Err(format!("`{assignment}`: expected NAME.KEY=VALUE"));
        };
        let Some((name, key)) = key.trim().split_once('.') else {
            return Err(format!(
                "`{assignment}`: expected NAME.KEY=VALUE (offset_ns, drift_ppm, capture_loss)"
            ));
        };
        let Some(p) = self.points.iter_mut().find(|p| p.name == name) else {
            let names: Vec<&str> = self.points.iter().map(|p| p.name.as_str()).collect();
            return Err(format!(
                "`{assignment}`: no point `{name}` (points: {})",
                names.join(", ")
            ));
        };
        let value = value.trim();
        let num = |v: &str| {
            v.parse::<f64>()
                .map_err(|_| format!("`{assignment}`: {v} is not a number"))
        };
        let mut next = p.clone();
        match key {
            "offset_ns" => {
                next.offset_ns = value.parse().map_err(|_| {
                    format!("`{assignment}`: an offset is a whole number of ns, 0 or more")
                })?
            }
            "drift_ppm" => next.drift_ppm = num(value)?,
            "capture_loss" => next.capture_loss = num(value)?,
            _ => {
                return Err(format!(
                    "`{assignment}`: no key `{key}` (offset_ns, drift_ppm, capture_loss)"
                ));
            }
        }
        check_clock(next.drift_ppm, next.capture_loss)
            .map_err(|(_, m)| format!("`{assignment}`: {m}"))?;
        *p = next;
        Ok(())
    }
}

/// At most this many points: the analysis keeps a frame's path as a
/// 16-bit mask.
pub const MAX_POINTS: usize = 16;

/// Where a frame was lost.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "place")]
pub enum DropPlace {
    /// On the node's link: toward the switch, or from it.
    Link { node: usize, to_switch: bool },
    /// In the switch's queue toward the node (full, or a fault there).
    SwitchQueue { node: usize },
    /// In the node's receiving stack, after its sniffer saw it: a fault
    /// there, a failed ICRC check, a DPI verdict.
    Stack { node: usize },
}

/// Why a frame was dropped in a receiving stack (or elsewhere).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DropWhy {
    /// A fault rule, or a full switch queue.
    Lost,
    /// Damaged on a link: the receiver's ICRC check failed.
    Icrc,
    /// The DPI slot rejected its payload.
    Dpi,
    /// A SEND with no receive WQE posted for it: answered with an RNR NAK,
    /// and the requests after it discarded until it comes again.
    Rnr,
}

/// A frame that did not reach its receiver's transport.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct DropTruth {
    /// True time (not any point's clock).
    pub ts_ns: u64,
    pub src_node: usize,
    pub dst_node: usize,
    pub dest_qp: u32,
    pub psn: u32,
    pub opcode: u8,
    pub place: DropPlace,
    pub why: DropWhy,
    /// A request dropped in a stack while its receiver was already
    /// discarding requests after an earlier loss (out of sequence): its
    /// loss changes nothing the receiver does, and nothing on the wire
    /// tells it.
    pub behind_loss: bool,
}

/// A frame a point missed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct CaptureDropTruth {
    pub point: usize,
    pub ts_ns: u64,
    pub dest_qp: u32,
    pub psn: u32,
    pub opcode: u8,
}

/// What happened to every lost frame, and what each point missed.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct PointsTruth {
    pub drops: Vec<DropTruth>,
    pub capture_drops: Vec<CaptureDropTruth>,
    /// Frames each point captured.
    pub frames: Vec<u64>,
}

impl PointsTruth {
    /// The segment a drop happened on, named after the points of
    /// `points` as the analysis names it: `X>Y` between the last point
    /// that saw the frame and the next one on its way, `Y` in the stack
    /// of a receiver whose point saw it; `None` when no point saw it
    /// before it was lost.
    pub fn segment(d: &DropTruth, points: &[PointSpec]) -> Option<String> {
        let at_node = |n: usize| points.iter().find(|p| p.tap == Tap::Node(n));
        let switch = points.iter().find(|p| p.tap == Tap::Switch);
        // The frame's way through the points: sender, switch, receiver.
        let (src, dst) = (at_node(d.src_node), at_node(d.dst_node));
        // Which of the three places a point saw it at before the drop.
        let (before, after): (Vec<&PointSpec>, Vec<&PointSpec>) = match d.place {
            DropPlace::Link {
                to_switch: true, ..
            } => (
                src.into_iter().collect(),
                switch.into_iter().chain(dst).collect(),
            ),
            DropPlace::Link {
                to_switch: false, ..
            }
            | DropPlace::SwitchQueue { .. } => (
                src.into_iter().chain(switch).collect(),
                dst.into_iter().collect(),
            ),
            DropPlace::Stack { .. } => (
                src.into_iter().chain(switch).chain(dst).collect(),
                Vec::new(),
            ),
        };
        let last = before.last()?;
        Some(match after.first() {
            Some(next) => format!("{}>{}", last.name, next.name),
            None if matches!(d.place, DropPlace::Stack { .. }) && dst.is_some() => {
                last.name.clone()
            }
            None => format!("{}>", last.name),
        })
    }
}

/// Writes each point's frames to a pcapng file of its own, as the
/// simulator emits them.
struct PointWriters {
    writers: Vec<rocescope_replay::PcapngWriter<std::io::BufWriter<std::fs::File>>>,
    error: Option<std::io::Error>,
}

impl RecordSink for PointWriters {
    fn frame(&mut self, _f: FrameRef<'_>) {}
    fn record(&mut self, _r: rocescope_replay::Record) {}
    fn point_frame(&mut self, point: u8, f: FrameRef<'_>) {
        if self.error.is_some() {
            return;
        }
        if let Some(w) = self.writers.get_mut(usize::from(point))
            && let Err(e) = w.write_frame(f.ts_ns, 0, None, f.orig_len, f.data)
        {
            self.error = Some(e);
        }
    }
}

/// Each capture point's frames into an in-memory store of its own, as a
/// live feed (what `sim --points` would write, read back); the simulator's
/// own frames and records are not kept.
#[derive(Debug)]
pub struct PointStores {
    points: Vec<(
        rocescope_replay::points::Point,
        rocescope_replay::store::Ingest,
    )>,
}

impl PointStores {
    /// A store for each of `scenario`'s points, named as they are.
    pub fn new(scenario: &Scenario) -> PointStores {
        PointStores {
            points: scenario
                .points
                .iter()
                .map(|p| rocescope_replay::points::Point::in_memory(&p.name))
                .collect(),
        }
    }

    /// The points, their stores finished, in the scenario's order.
    pub fn finish(self) -> Vec<rocescope_replay::points::Point> {
        self.points
            .into_iter()
            .map(|(p, mut ingest)| {
                p.store.finish_live(&mut ingest);
                p
            })
            .collect()
    }
}

impl RecordSink for PointStores {
    fn frame(&mut self, _f: FrameRef<'_>) {}
    fn record(&mut self, _r: rocescope_replay::Record) {}
    fn point_frame(&mut self, point: u8, f: FrameRef<'_>) {
        if let Some((p, ingest)) = self.points.get_mut(usize::from(point)) {
            p.store.ingest(ingest, &f.ingest_frame());
        }
    }
}

/// What [`write_points`] wrote.
#[derive(Debug, Clone)]
pub struct PointsRun {
    /// Each point's file, in the scenario's order.
    pub files: Vec<std::path::PathBuf>,
    /// `truth.json` beside them.
    pub truth_file: std::path::PathBuf,
    pub truth: PointsTruth,
    pub sim_time_ns: u64,
}

/// Runs `scenario`'s finite run and writes each of its points' captures to
/// `dir/NAME.pcapng` and the truth to `dir/truth.json`.
pub fn write_points(scenario: Scenario, dir: &Path) -> std::io::Result<PointsRun> {
    if scenario.points.is_empty() {
        return Err(std::io::Error::other(format!(
            "scenario {} has no capture points ([[point]] or --points a,sw,b)",
            scenario.name
        )));
    }
    std::fs::create_dir_all(dir)?;
    let mut files = Vec::new();
    let mut writers = Vec::new();
    for p in &scenario.points {
        let path = dir.join(format!("{}.pcapng", p.name));
        let file = std::fs::File::create(&path)
            .map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
        writers.push(rocescope_replay::PcapngWriter::new(
            std::io::BufWriter::with_capacity(1 << 20, file),
        )?);
        files.push(path);
    }
    let points = scenario.points.clone();
    let mut sim = crate::Simulator::new(scenario);
    let mut sink = PointWriters {
        writers,
        error: None,
    };
    sim.run_into(&mut sink);
    if let Some(e) = sink.error.take() {
        return Err(e);
    }
    for w in &mut sink.writers {
        w.flush()?;
    }
    let truth = sim.points_truth().cloned().unwrap_or_default();
    let truth_file = dir.join("truth.json");
    std::fs::write(&truth_file, truth_json(&sim, &points, &truth).to_string())?;
    Ok(PointsRun {
        files,
        truth_file,
        truth,
        sim_time_ns: sim.now_ns(),
    })
}

/// The truth as `truth.json` holds it: the points with their clocks, each
/// drop with its segment, each frame a point missed.
pub fn truth_json(
    sim: &crate::Simulator,
    points: &[PointSpec],
    truth: &PointsTruth,
) -> serde_json::Value {
    let ip = |n: usize| format!("10.0.0.{}", n + 1);
    let sc = sim.scenario();
    serde_json::json!({
        "scenario": sc.name,
        "seed": sc.seed,
        "sim_time_ns": sim.now_ns(),
        "points": points.iter().enumerate().map(|(i, p)| serde_json::json!({
            "name": p.name,
            "tap": match p.tap { Tap::Node(n) => sc.nodes[n].name.clone(), Tap::Switch => "switch".into() },
            "offset_ns": p.offset_ns,
            "drift_ppm": p.drift_ppm,
            "capture_loss": p.capture_loss,
            "frames": truth.frames.get(i).copied().unwrap_or(0),
            "capture_drops": truth.capture_drops.iter().filter(|c| c.point == i).count(),
        })).collect::<Vec<_>>(),
        "drops": truth.drops.iter().map(|d| serde_json::json!({
            "ts_ns": d.ts_ns,
            "src": ip(d.src_node),
            "dst": ip(d.dst_node),
            "dest_qp": d.dest_qp,
            "psn": d.psn,
            "opcode": d.opcode,
            "segment": PointsTruth::segment(d, points),
            "why": d.why,
            "place": d.place,
            "behind_loss": d.behind_loss,
        })).collect::<Vec<_>>(),
        "capture_drops": truth.capture_drops.iter().map(|c| serde_json::json!({
            "point": points.get(c.point).map(|p| p.name.clone()),
            "ts_ns": c.ts_ns,
            "dest_qp": c.dest_qp,
            "psn": c.psn,
            "opcode": c.opcode,
        })).collect::<Vec<_>>(),
    })
}
