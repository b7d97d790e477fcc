//! Several capture points of the same traffic as one session: each
//! point's clock aligned with the first's, each frame followed from point
//! to point, each loss placed on the segment it happened on.
//!
//! Each point is a store of its own, indexed as any capture; at ingest a
//! [`PointTap`] takes a [`Sighting`] of every RoCE frame (its content
//! hash, time, row). [`analyse`] then, over the points' sightings:
//!
//! 1. groups them by content (`group.rs`): the frames of one group are
//!    copies of one frame, seen at different points or sent again;
//! 2. decides each address pair's direction (its votes taken bucket by
//!    bucket as step 1 sorts them, while they are in the cache) and aligns
//!    the clocks (`align.rs`): offset and drift of each point against the
//!    first, from frames seen at both in both directions;
//! 3. follows each frame from point to point (`journey.rs`): a copy at a
//!    point downstream belongs to the latest copy upstream that was not
//!    after it; which points saw it is its path;
//! 4. writes each point's marks (its frames' journeys and paths) span by
//!    span on a thread of the point's own (`place.rs`), and in the same
//!    pass walks the receiver's and the requester's points in their own
//!    order (`walk.rs`): requests the receiver saw in sequence and never
//!    accepted (dropped in its stack), and Lumina's NAK generation, NAK
//!    reaction and resend span;
//! 5. places every loss (`place.rs`): missing at a point the frame went
//!    past is capture loss there; vanished after a point is lost on the
//!    segment after it, both segments named where a lossy capture leaves
//!    the place open; and measures each segment's one-way latency
//!    (`latency.rs`).
//!
//! The assumption of the alignment, as NTP's: each point stamps a frame at
//! its first bit when its host sends it and at its last bit when it
//! arrives (a sniffer after the MAC, a switch's ingress); so between two
//! consecutive points a frame spends one serialisation at the link rate
//! plus a delay that is the same both ways when no queue holds it. The
//! smallest delays of each direction (frames no queue held), corrected by
//! the serialisation, give the offset as half their difference.

mod align;
mod fit;
mod group;
mod journey;
mod latency;
mod place;
mod session;
pub mod tap;
mod walk;

use rocescope_decoders::analysis::QpEnds;

use crate::store::Conversation;
pub use session::{Point, analyse_points};
pub use tap::{
    PointTap, SharedSightings, Sighting, Sightings, WideCounts, content_hash, flow_hash,
};

/// At most this many points (a frame's path is a 16-bit mask).
pub const MAX_POINTS: usize = 16;

/// One point as the analysis reads it.
#[derive(Debug, Clone, Copy)]
pub struct PointInput<'a> {
    /// Its name (`a`, `sw`, `b`): segments are named after it.
    pub name: &'a str,
    /// Its frames, in its capture's order.
    pub sightings: &'a [Sighting],
    /// Its sightings counted at ingest, if kept: used only while they
    /// count exactly `sightings` (else the grouping counts them itself).
    pub counts: Option<&'a WideCounts>,
    /// Its store's conversations (by id).
    pub conversations: &'a [Conversation],
    /// Its RC analysis' QPs: which flows are a QP's requests and
    /// responses.
    pub qps: &'a [QpEnds],
    /// Its capture has no times (a converted sniffer pcap): frame indices,
    /// aligned by order.
    pub ordinal: bool,
    /// The offset against the first point, given by hand
    /// (`--point NAME=FILE@OFFSET`): used instead of the estimate.
    pub fixed_offset_ns: Option<i64>,
    /// Sightings let go before these (a live session's bound).
    pub let_go: u64,
}

/// How the analysis runs.
#[derive(Debug, Clone)]
pub struct PointsConfig {
    /// The links' rate, for each frame's serialisation.
    pub link_gbps: f64,
    /// Threads to group and follow frames on.
    pub threads: usize,
    /// Bins of each segment's latency series (at most 2^24: more are
    /// taken as 2^24).
    pub series_bins: usize,
    /// The points are still receiving (a live session): a frame is judged
    /// only once every point's capture has run past it, so that a frame
    /// on its way to a point behind the others is not called lost.
    pub live: bool,
}

impl Default for PointsConfig {
    fn default() -> Self {
        PointsConfig {
            link_gbps: 100.0,
            threads: std::thread::available_parallelism().map_or(1, |n| n.get().min(8)),
            series_bins: 200,
            live: false,
        }
    }
}

/// Why the points cannot be analysed at all.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PointsError {
    #[error("a session of points needs at least two (given {0})")]
    TooFew(usize),
    #[error("at most {MAX_POINTS} points (given {0})")]
    TooMany(usize),
    #[error("point `{0}` is named twice")]
    SameName(String),
    /// No two points saw a common frame (their names).
    #[error("{} share no traffic: not the same exchange? (no frame was seen at two of them)", .0.join(" and "))]
    NothingShared(Vec<String>),
    /// A thread of a step of the matching panicked (a rocescope bug): the
    /// analysis is lost with this error rather than shown without that
    /// thread's share, whose frames would read as lost.
    #[error(
        "the matching's {0} failed on one of its threads (a rocescope bug: please report it); the points are not analysed"
    )]
    ThreadFailed(&'static str),
    /// A step's counts did not add up to the sightings (a rocescope bug):
    /// the analysis is lost with this error rather than shown with
    /// frames left out.
    #[error(
        "the matching's {0} did not add up to the sightings (a rocescope bug: please report it); the points are not analysed"
    )]
    Miscounted(&'static str),
}

/// A scoped thread of the matching's `step` joined: its panic is
/// [`PointsError::ThreadFailed`], never a share silently left out.
pub(super) fn joined<T>(
    h: std::thread::ScopedJoinHandle<'_, T>,
    step: &'static str,
) -> Result<T, PointsError> {
    h.join().map_err(|_| PointsError::ThreadFailed(step))
}

/// [`joined`] for every thread of a step, in order.
pub(super) fn joined_all<'s, T: 's>(
    handles: impl IntoIterator<Item = std::thread::ScopedJoinHandle<'s, T>>,
    step: &'static str,
) -> Result<Vec<T>, PointsError> {
    handles.into_iter().map(|h| joined(h, step)).collect()
}

/// One point's clock and what it saw.
#[derive(Debug, Clone, PartialEq)]
pub struct PointSummary {
    pub name: String,
    /// `t_point = t_first + offset_ns + (t_first - t0) * drift_ppm / 1e6`,
    /// `t0` the first point's first frame.
    pub offset_ns: i64,
    pub drift_ppm: f64,
    /// How far the fitted clock is from the evidence: the largest
    /// distance of a window's offset from the line, ns.
    pub spread_ns: u64,
    /// Frames it saw (RoCE).
    pub frames: u64,
    /// Frames it missed that the points around it saw, or that the
    /// receiver acknowledged.
    pub capture_loss: u64,
    /// Frames shared with the point it was aligned against.
    pub matched: u64,
    /// The point it was aligned against (the first, unless it shares too
    /// little with it).
    pub reference: Option<usize>,
    /// The offset was given by hand.
    pub fixed: bool,
    /// No times: aligned by order.
    pub ordinal: bool,
    /// Aligned at all (a point sharing nothing is left out).
    pub aligned: bool,
    /// Only one direction was shared: the offset assumes no delay beyond
    /// the serialisation.
    pub one_way: bool,
    /// Its first and last frame in the first point's clock.
    pub first_ns: u64,
    pub last_ns: u64,
    /// It ends (or starts) well inside the others: frames after its end
    /// are not expected there.
    pub ended_early: bool,
}

/// What a lost frame's place is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LossKind {
    /// Lost on the wire (or a switch's queue) between two points.
    Wire,
    /// Seen by the receiver's own point, never accepted: dropped in its
    /// receiving stack.
    Stack,
    /// Two or more places no evidence tells apart.
    Either,
}

impl LossKind {
    pub fn name(self) -> &'static str {
        match self {
            LossKind::Wire => "wire",
            LossKind::Stack => "stack",
            LossKind::Either => "either",
        }
    }
}

/// One lost frame, placed.
#[derive(Debug, Clone, PartialEq)]
pub struct Loss {
    pub src: [u8; 16],
    pub dst: [u8; 16],
    pub dest_qp: u32,
    pub psn: u32,
    pub opcode: u8,
    /// `a>sw`, `sw>b`, `b` (the receiving stack), `a>sw or sw>b`.
    pub segment: String,
    pub kind: LossKind,
    /// When it was last seen, in the first point's clock.
    pub ts_ns: u64,
    /// The points that saw it (bit = point index).
    pub seen: u16,
    /// Where each point that saw it has it: (point, row).
    pub rows: Vec<(u8, u64)>,
    /// Why it is placed there, in words.
    pub evidence: String,
    /// A request (not a response).
    pub request: bool,
}

/// A frame a point missed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CaptureLoss {
    pub point: u8,
    pub ts_ns: u64,
    pub dest_qp: u32,
    pub psn: u32,
    pub opcode: u8,
}

/// The one-way latency of one segment in one direction.
#[derive(Debug, Clone, PartialEq)]
pub struct SegmentLatency {
    /// `a>sw`: from the first named point to the second.
    pub name: String,
    pub from: u8,
    pub to: u8,
    pub frames: u64,
    pub p50_ns: i64,
    pub p99_ns: i64,
    pub min_ns: i64,
    pub max_ns: i64,
    /// Frames seen downstream before they were seen upstream.
    pub negative: u64,
    /// (bin start in the first point's clock, p50, p99) per bin with
    /// frames.
    pub series: Vec<(u64, i64, i64)>,
}

/// Lumina's latencies of one NAK episode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EpisodeTimes {
    /// The requests' DestQP.
    pub dest_qp: u32,
    /// The PSN the NAK asks for.
    pub psn: u32,
    /// The NAK, in the first point's clock.
    pub ts_ns: u64,
    /// The receiver: the out-of-sequence arrival to its NAK (at the
    /// receiver's point).
    pub nak_generation_ns: Option<i64>,
    /// The requester: the NAK's arrival to its first resend (at the
    /// requester's point).
    pub nak_reaction_ns: Option<i64>,
    /// The requester's first resend to its last of the pass.
    pub resend_span_ns: Option<i64>,
    /// The points each was read at.
    pub generation_at: Option<u8>,
    pub reaction_at: Option<u8>,
}

/// A frame's path at one point, as the packet list shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PathCell {
    /// The points that saw it.
    pub seen: u16,
    /// The points on its way (the address pair's), in order.
    pub flow: u32,
    pub fate: Fate,
}

/// What became of a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Fate {
    /// Seen at every point on its way that was capturing.
    #[default]
    Delivered,
    /// Lost after the point at this position of its path.
    LostAfter(u8),
    /// Dropped in the receiving stack.
    Stack,
    /// Not judged: outside another point's capture, or a flow on no
    /// point's path but one.
    Unjudged,
}

impl PathCell {
    /// `seen` (16 bits) | `flow` (32) | fate (8) | the position it was
    /// lost after (8).
    pub(crate) fn pack(&self) -> u64 {
        let (code, pos) = match self.fate {
            Fate::Delivered => (0u64, 0u64),
            Fate::LostAfter(p) => (1, u64::from(p)),
            Fate::Stack => (2, 0),
            Fate::Unjudged => (3, 0),
        };
        u64::from(self.seen) | u64::from(self.flow) << 16 | code << 48 | pos << 56
    }

    pub(crate) fn unpack(v: u64) -> PathCell {
        let fate = match (v >> 48) & 0xFF {
            0 => Fate::Delivered,
            1 => Fate::LostAfter((v >> 56) as u8),
            2 => Fate::Stack,
            _ => Fate::Unjudged,
        };
        PathCell {
            seen: v as u16,
            flow: (v >> 16) as u32,
            fate,
        }
    }
}

/// Each journey's flow, to read a path's flow off its mark.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JourneyFlows {
    /// Where each thread's journeys start.
    bases: Vec<u32>,
    /// Each thread's journeys' flows.
    flows: Vec<Vec<u32>>,
}

impl JourneyFlows {
    pub(crate) fn new(bases: Vec<u32>, flows: Vec<Vec<u32>>) -> JourneyFlows {
        JourneyFlows { bases, flows }
    }

    fn flow(&self, raw: u32) -> u32 {
        let part = (raw >> journey::PART_SHIFT) as usize;
        let k = (raw & ((1 << journey::PART_SHIFT) - 1)) as usize;
        self.flows
            .get(part)
            .and_then(|v| v.get(k))
            .copied()
            .unwrap_or(journey::NONE)
    }
}

/// A frame no journey took: its own point's, its flow in the mark.
const OWN_FLOW: u32 = 0x8000_0000;

/// The mark of a frame no journey took (an unaligned point's).
pub(crate) fn own_mark(point: usize, flow: u32) -> u64 {
    let cell = PathCell {
        seen: 1 << point,
        flow: 0,
        fate: Fate::Unjudged,
    };
    u64::from(OWN_FLOW | (flow & !OWN_FLOW))
        | (cell.pack() & 0xFFFF) << 32
        | (cell.pack() >> 48) << 48
}

/// Whether a mark is [`own_mark`]'s: a journey's raw id has its part (a
/// grouping thread, at most 8 by default) below the top bit.
pub(crate) fn is_own_mark(mark: u64) -> bool {
    let raw = mark as u32;
    raw != journey::NONE && raw & OWN_FLOW != 0
}

/// One point's frames' paths: their rows, and each one's mark as the
/// analysis left it (its journey, `seen`, fate), read when asked.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PointPaths {
    pub rows: Vec<u64>,
    marks: Vec<u64>,
    journeys: std::sync::Arc<JourneyFlows>,
}

impl PointPaths {
    pub(crate) fn new(
        rows: Vec<u64>,
        marks: Vec<u64>,
        journeys: std::sync::Arc<JourneyFlows>,
    ) -> PointPaths {
        PointPaths {
            rows,
            marks,
            journeys,
        }
    }

    fn cell(&self, mark: u64) -> PathCell {
        let raw = mark as u32;
        let flow = if is_own_mark(mark) {
            raw & !OWN_FLOW
        } else {
            self.journeys.flow(raw)
        };
        let mut c = PathCell::unpack(mark & 0xFFFF_0000_0000_0000);
        c.seen = (mark >> 32) as u16;
        c.flow = flow;
        c
    }

    /// The path of the frame at `row`.
    pub fn get(&self, row: u64) -> Option<PathCell> {
        let i = self.rows.binary_search(&row).ok()?;
        self.marks.get(i).map(|&m| self.cell(m))
    }

    /// Every frame's row and path, in row order.
    pub fn iter(&self) -> impl Iterator<Item = (u64, PathCell)> + '_ {
        self.rows
            .iter()
            .zip(&self.marks)
            .map(|(&r, &m)| (r, self.cell(m)))
    }

    pub fn len(&self) -> usize {
        self.rows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }
}

/// A flow as the points see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlowPath {
    pub src: [u8; 16],
    pub dst: [u8; 16],
    pub dest_qp: u32,
    /// The points on its way, in the order it passes them.
    pub points: Vec<u8>,
}

/// The whole analysis.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PointsReport {
    pub points: Vec<PointSummary>,
    pub losses: Vec<Loss>,
    /// Frames points missed (the first [`MAX_CAPTURE_LOSSES`]; the
    /// counts are in [`PointSummary::capture_loss`]).
    pub capture_losses: Vec<CaptureLoss>,
    pub segments: Vec<SegmentLatency>,
    pub episodes: Vec<EpisodeTimes>,
    pub flows: Vec<FlowPath>,
    /// Each point's frames' paths, by row.
    pub paths: Vec<PointPaths>,
    /// Frames followed (one per frame, however many points saw it).
    pub journeys: u64,
    /// What the analysis could not do or doubts, in words.
    pub warnings: Vec<String>,
    /// The first point's first frame (`t0` of the clocks).
    pub t0_ns: u64,
}

/// Capture losses listed at most (each point's count is whole).
pub const MAX_CAPTURE_LOSSES: usize = 100_000;

impl PointsReport {
    /// The path of point `point`'s frame at `row`.
    pub fn path_at(&self, point: usize, row: u64) -> Option<PathCell> {
        self.paths.get(point)?.get(row)
    }

    /// A path as the packet list writes it: the points on the frame's
    /// way in order, those that missed it in brackets, `x` where it
    /// vanished (`a sw x`, `a [sw] b`, `a sw b x` for the receiver's
    /// stack).
    pub fn path_text(&self, cell: &PathCell) -> String {
        let Some(flow) = self.flows.get(cell.flow as usize) else {
            return String::new();
        };
        let mut parts = Vec::new();
        for (pos, &p) in flow.points.iter().enumerate() {
            let name = self
                .points
                .get(usize::from(p))
                .map_or("?", |s| s.name.as_str());
            if cell.seen & (1 << p) != 0 {
                parts.push(name.to_owned());
            } else if matches!(cell.fate, Fate::LostAfter(l) if usize::from(l) < pos) {
                // After the loss: not on its way any more.
                continue;
            } else {
                parts.push(format!("[{name}]"));
            }
            if matches!(cell.fate, Fate::LostAfter(l) if usize::from(l) == pos) {
                parts.push("x".into());
            }
        }
        if cell.fate == Fate::Stack {
            parts.push("x".into());
        }
        parts.join(" ")
    }

    /// The segments of one direction, in path order.
    pub fn segment(&self, name: &str) -> Option<&SegmentLatency> {
        self.segments.iter().find(|s| s.name == name)
    }

    /// The clock of point `p` at time `t_first_ns` of the first point's.
    pub fn point_clock(&self, p: usize, t_first_ns: u64) -> Option<i64> {
        let s = self.points.get(p)?;
        let dt = t_first_ns as f64 - self.t0_ns as f64;
        Some(t_first_ns as i64 + s.offset_ns + (dt * s.drift_ppm * 1e-6).round() as i64)
    }
}

/// Analyse the points' sightings: align, follow, place.
pub fn analyse(inputs: &[PointInput<'_>], cfg: &PointsConfig) -> Result<PointsReport, PointsError> {
    let n = inputs.len();
    if n < 2 {
        return Err(PointsError::TooFew(n));
    }
    if n > MAX_POINTS {
        return Err(PointsError::TooMany(n));
    }
    for (i, p) in inputs.iter().enumerate() {
        if inputs[..i].iter().any(|q| q.name == p.name) {
            return Err(PointsError::SameName(p.name.to_owned()));
        }
    }
    let flows = journey::Flows::new(inputs);
    // The direction votes taken as the grouping sorts each bucket.
    let (groups, votes) = group::Groups::build(inputs, &flows, cfg.threads, |spans| {
        align::Votes::new(inputs, &flows, spans, cfg)
    })?;
    let votes: Vec<align::VotePart> = votes.into_iter().map(align::Votes::done).collect();
    let aligned = align::align(inputs, flows, &groups, votes, cfg)?;
    let mut followed = journey::follow(&aligned.flows, &groups, &aligned, cfg)?;
    drop(groups);
    // The marks written, the hosts walked, every frame placed.
    place::place(inputs, &aligned, &mut followed, cfg)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A step's threads joined: their results in order, and a panic in
    /// any of them the step's error (the user's words name the step), not
    /// a result without that thread's share.
    #[test]
    fn a_failed_thread_is_the_steps_error() {
        let ok = std::thread::scope(|sc| {
            let hs: Vec<_> = (0..3).map(|k| sc.spawn(move || k * 2)).collect();
            joined_all(hs, "following")
        });
        assert_eq!(ok, Ok(vec![0, 2, 4]));
        let failed = std::thread::scope(|sc| {
            let hs: Vec<_> = (0..3)
                .map(|k| {
                    sc.spawn(move || {
                        if k == 1 {
                            panic!("a share of the test fails");
                        }
                        k
                    })
                })
                .collect();
            joined_all(hs, "following")
        });
        let err = failed.unwrap_err();
        assert_eq!(err, PointsError::ThreadFailed("following"));
        assert!(
            err.to_string().contains("the matching's following failed"),
            "{err}"
        );
    }
}
