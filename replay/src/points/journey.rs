//! Flows across the points (one id per flow whichever point saw it, each
//! address pair's points in path order) and each frame followed from
//! point to point: a journey.
//!
//! Copies of one frame (a group of equal content) become journeys by
//! aligned time: taken in path order, a copy at a point joins the journey
//! whose latest copy is upstream of it and not later than it (within the
//! alignment's error), the latest such; else it starts a journey of its
//! own. A resent PSN is sent after its first copy left, so each copy
//! downstream finds its own.

use std::collections::HashMap;

use super::align::Aligned;
use super::group::{Entry, Groups, IDX_BITS, MARK_SPAN_BITS, MarkSpans, for_each_group};
use super::latency::Bins;
use super::{MAX_POINTS, PointInput, PointsConfig, PointsError, joined_all};
use crate::store::ConvKey;

/// What leaving a journey or a copy unpaired costs at a point without
/// times (its times are interpolated between frames shared with another
/// point, off by about their spacing).
const ORDINAL_TOL_NS: i64 = 20_000;

/// Not a flow, not a QP.
pub(super) const NONE: u32 = u32::MAX;

/// Two addresses that exchange frames, and which way runs in path order.
#[derive(Debug, Clone)]
pub(super) struct AddrPair {
    /// The points that saw any frame between them.
    pub seen: u16,
    /// Frames from `lo` to `hi` pass the points in index order (`None`:
    /// not decided).
    pub lo_forward: Option<bool>,
}

/// What a flow is in its QP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Role {
    Request,
    Response,
    Other,
}

/// A QP across the points: its request and response flows.
#[derive(Debug, Clone)]
pub(super) struct Qp {
    pub req: Option<u32>,
    pub resp: Option<u32>,
}

/// The points a flow passes, in order.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct PathPts {
    pub pts: [u8; MAX_POINTS],
    pub len: u8,
}

impl PathPts {
    pub fn as_slice(&self) -> &[u8] {
        &self.pts[..usize::from(self.len)]
    }
    /// Where point `p` is on the path.
    #[inline]
    pub fn pos(&self, p: usize) -> Option<usize> {
        self.as_slice().iter().position(|&x| usize::from(x) == p)
    }
}

/// Every flow any point saw.
#[derive(Debug, Default)]
pub(super) struct Flows {
    pub keys: Vec<ConvKey>,
    /// Each point's conversation ids to flows.
    by_point: Vec<Vec<u32>>,
    pub pair_of: Vec<u32>,
    /// The flow goes from its pair's lower address.
    pub from_lo: Vec<bool>,
    pub pairs: Vec<AddrPair>,
    pub qps: Vec<Qp>,
    /// Each flow's QP and role.
    pub role: Vec<(u32, Role)>,
    pub paths: Vec<PathPts>,
    /// Address pairs whose direction no frame told.
    pub undecided: usize,
}

impl Flows {
    pub fn new(inputs: &[PointInput<'_>]) -> Flows {
        let mut f = Flows::default();
        let mut ids: HashMap<ConvKey, u32> = HashMap::new();
        let mut pair_ids: HashMap<([u8; 16], [u8; 16]), u32> = HashMap::new();
        for (point, p) in inputs.iter().enumerate() {
            let mut local = Vec::with_capacity(p.conversations.len());
            for c in p.conversations {
                let k = c.key;
                let id = *ids.entry(k).or_insert_with(|| {
                    let (lo, hi) = if k.src <= k.dst {
                        (k.src, k.dst)
                    } else {
                        (k.dst, k.src)
                    };
                    let pair = *pair_ids.entry((lo, hi)).or_insert_with(|| {
                        f.pairs.push(AddrPair {
                            seen: 0,
                            lo_forward: None,
                        });
                        (f.pairs.len() - 1) as u32
                    });
                    f.keys.push(k);
                    f.pair_of.push(pair);
                    f.from_lo.push(k.src == lo);
                    f.role.push((NONE, Role::Other));
                    (f.keys.len() - 1) as u32
                });
                if c.packets > 0 {
                    let pair = f.pair_of[id as usize] as usize;
                    f.pairs[pair].seen |= 1 << point;
                }
                local.push(id);
            }
            f.by_point.push(local);
        }
        // QPs as the points' analyses pair them.
        let mut qp_ids: HashMap<([u8; 16], [u8; 16], u32), u32> = HashMap::new();
        for p in inputs {
            for q in p.qps {
                let (req, resp, dest_qp, req_qp) =
                    (q.requester, q.responder, q.dest_qp, q.requester_qp);
                let qp = *qp_ids.entry((req, resp, dest_qp)).or_insert_with(|| {
                    f.qps.push(Qp {
                        req: None,
                        resp: None,
                    });
                    (f.qps.len() - 1) as u32
                });
                let q = &mut f.qps[qp as usize];
                if let Some(&id) = ids.get(&ConvKey {
                    src: req,
                    dst: resp,
                    dest_qp,
                }) {
                    q.req = Some(id);
                }
                if let Some(rq) = req_qp
                    && let Some(&id) = ids.get(&ConvKey {
                        src: resp,
                        dst: req,
                        dest_qp: rq,
                    })
                {
                    q.resp = Some(id);
                }
            }
        }
        for (qp, q) in f.qps.iter().enumerate() {
            if let Some(r) = q.req {
                f.role[r as usize] = (qp as u32, Role::Request);
            }
        }
        for (qp, q) in f.qps.iter().enumerate() {
            if let Some(r) = q.resp
                && f.role[r as usize].1 == Role::Other
            {
                f.role[r as usize] = (qp as u32, Role::Response);
            }
        }
        f
    }

    /// The flow of point `p`'s conversation `conv`.
    #[inline]
    pub fn flow_of(&self, p: usize, conv: u32) -> Option<u32> {
        self.by_point
            .get(p)
            .and_then(|v| v.get(conv as usize))
            .copied()
            .filter(|&f| f != NONE)
    }

    /// Point `p`'s conversation ids to flows (`NONE`: none), for a pass
    /// over one point's sightings.
    #[inline]
    pub fn point_flows(&self, p: usize) -> &[u32] {
        self.by_point.get(p).map_or(&[], Vec::as_slice)
    }

    /// Whether `flow` passes the points in index order (`None`: not told).
    #[inline]
    pub fn forward(&self, flow: u32) -> Option<bool> {
        let f = flow as usize;
        let pair = &self.pairs[self.pair_of[f] as usize];
        pair.lo_forward.map(|lf| lf == self.from_lo[f])
    }

    /// Each flow's points in its order, once directions are decided.
    pub fn settle(&mut self, n: usize) {
        self.undecided = self
            .pairs
            .iter()
            .filter(|p| p.lo_forward.is_none() && p.seen.count_ones() > 1)
            .count();
        self.paths = (0..self.keys.len())
            .map(|f| {
                let pair = &self.pairs[self.pair_of[f] as usize];
                let forward = self.forward(f as u32).unwrap_or(self.from_lo[f]);
                let mut path = PathPts::default();
                let order: Vec<usize> = if forward {
                    (0..n).collect()
                } else {
                    (0..n).rev().collect()
                };
                for p in order {
                    if pair.seen & (1 << p) != 0 {
                        path.pts[usize::from(path.len)] = p as u8;
                        path.len += 1;
                    }
                }
                path
            })
            .collect();
    }
}

/// One frame followed from point to point: 32 bytes (times after the
/// first as differences; PSN and opcode in one word), written once per
/// frame and read again by every later step.
#[derive(Debug, Clone, Copy)]
pub(super) struct Journey {
    pub flow: u32,
    /// PSN (24 bits) | opcode, as the entries keep them.
    psn_op: u32,
    pub syndrome: u8,
    /// The points that saw it.
    pub seen: u16,
    /// An earlier copy reached the last point of its way (the receiver
    /// may have taken that one).
    pub earlier_reached: bool,
    /// Aligned time at the first point that saw it.
    pub t: i64,
    /// To the last point that saw it.
    last_after: i32,
    /// To the next copy (a resend; `u32::MAX`: none, or later than
    /// that), and back to the first copy.
    next_after: u32,
    first_before: u32,
}

const _: () = assert!(std::mem::size_of::<Journey>() == 32);

impl Journey {
    /// Its PSN (24 bits).
    #[inline]
    pub fn psn(&self) -> u32 {
        self.psn_op >> 8
    }
    #[inline]
    pub fn opcode(&self) -> u8 {
        self.psn_op as u8
    }
    /// Aligned time at the last point that saw it.
    pub fn t_last(&self) -> i64 {
        self.t + i64::from(self.last_after)
    }
    /// The next copy's `t`, `i64::MAX` without.
    pub fn next_copy(&self) -> i64 {
        if self.next_after == u32::MAX {
            i64::MAX
        } else {
            self.t + i64::from(self.next_after)
        }
    }
    /// The first copy's `t` (its own for the first).
    pub fn first_copy(&self) -> i64 {
        self.t - i64::from(self.first_before)
    }
}

/// One-way latency of a journey between two adjacent points: 8 bytes,
/// its time kept as the series' bin it falls in.
#[derive(Debug, Clone, Copy)]
pub(super) struct LatSample {
    /// The series' bin (24 bits: [`super::latency::MAX_SERIES_BINS`]) |
    /// the point it left (4 bits: [`MAX_POINTS`]) | the point it reached.
    key: u32,
    pub ns: i32,
}

const _: () = assert!(std::mem::size_of::<LatSample>() == 8);
const _: () = assert!(MAX_POINTS <= 16 && super::latency::MAX_SERIES_BINS <= 1 << 24);

impl LatSample {
    #[inline]
    pub fn new(from: u8, to: u8, bin: u32, ns: i32) -> LatSample {
        LatSample {
            key: bin << 8 | u32::from(from & 0xF) << 4 | u32::from(to & 0xF),
            ns,
        }
    }
    #[inline]
    pub fn from(&self) -> u8 {
        (self.key >> 4) as u8 & 0xF
    }
    #[inline]
    pub fn to(&self) -> u8 {
        self.key as u8 & 0xF
    }
    #[inline]
    pub fn bin(&self) -> u32 {
        self.key >> 8
    }
}

/// The journeys one thread followed.
#[derive(Debug, Default)]
pub(super) struct Part {
    pub journeys: Vec<Journey>,
    pub latency: Vec<LatSample>,
    /// Its sightings' marks as [`record`]s, span of the marks after span
    /// ([`MarkSpans`]), each span's from `record_starts[span]`.
    records: Vec<u64>,
    record_starts: Vec<usize>,
}

/// A sighting's mark as the thread that follows its journey writes it,
/// into the room of its span of the marks (written in order there, not
/// at random among all of a point's marks): the mark's journey, `seen`
/// and fate (`Delivered` or `Unjudged`: 2 bits), and the sighting's place
/// in its span above them.
const RECORD_MARK_BITS: u32 = 50;
const _: () = assert!(RECORD_MARK_BITS + MARK_SPAN_BITS == 64);

#[inline]
fn record(mark: u64, i: usize) -> u64 {
    debug_assert!(mark >> RECORD_MARK_BITS == 0);
    mark | ((i & ((1 << MARK_SPAN_BITS) - 1)) as u64) << RECORD_MARK_BITS
}

/// Every journey (each thread's in a part of its own: never copied into
/// one list), and each sighting's.
#[derive(Debug, Default)]
pub(super) struct Followed {
    pub parts: Vec<Part>,
    /// Where each part's journeys start among all.
    bases: Vec<u32>,
    /// How each point's sightings are cut into spans of the marks (the
    /// parts' records are kept span by span, [`Followed::write_span`]).
    spans: MarkSpans,
}

/// A sighting's mark: its journey as numbered by its thread, and its
/// path but for the flow (the sighting's own).
pub(super) fn mark(raw: u32, cell: &super::PathCell) -> u64 {
    u64::from(raw) | (cell.pack() & 0xFFFF) << 32 | (cell.pack() >> 48) << 48
}

/// No journey yet: zero, so that the marks come zeroed from the
/// allocator rather than filled (a mark's `seen` is never empty).
pub(super) const UNMARKED: u64 = 0;

/// A journey's index in its part takes the low bits of its raw id.
pub(super) const PART_SHIFT: u32 = 27;

impl Followed {
    /// Where each part's journeys start among all.
    pub fn bases(&self) -> &[u32] {
        &self.bases
    }

    /// Journeys in all.
    pub fn len(&self) -> usize {
        self.parts.iter().map(|p| p.journeys.len()).sum()
    }

    /// Journey `id`.
    pub fn get(&self, id: u32) -> &Journey {
        let part = self.bases.partition_point(|&b| b <= id).saturating_sub(1);
        let k = (id - self.bases.get(part).copied().unwrap_or(0)) as usize;
        &self.parts[part].journeys[k]
    }

    /// The journey a mark names (`NONE`: none).
    #[inline]
    pub fn journey_of_mark(&self, mark: u64) -> u32 {
        let raw = mark as u32;
        if mark == UNMARKED || raw == NONE {
            return NONE;
        }
        let part = (raw >> PART_SHIFT) as usize;
        self.bases
            .get(part)
            .map_or(NONE, |b| b + (raw & ((1 << PART_SHIFT) - 1)))
    }

    /// The first span of point `p`'s marks.
    pub fn first_span(&self, p: usize) -> usize {
        self.spans.first.get(p).copied().unwrap_or(0)
    }

    /// Span `span` of the marks (`chunk`, zeroed: 2^[`MARK_SPAN_BITS`]
    /// sightings of a point, or its last ones) from the parts' records:
    /// each sighting's journey as its thread numbered it (part in the high
    /// bits, `NONE` for none) in the low 32 bits, the path's `seen`, fate
    /// and position ([`mark`]) above; left `UNMARKED` where no journey
    /// took it. The span's writes fall within 128 KiB, where a write to a
    /// point's marks at random (each copy's, as its journey was made)
    /// missed the caches and the TLB nearly every time.
    pub fn write_span(&self, span: usize, chunk: &mut [u64]) {
        for part in &self.parts {
            let (Some(&from), Some(&to)) = (
                part.record_starts.get(span),
                part.record_starts.get(span + 1),
            ) else {
                continue;
            };
            for &r in part.records.get(from..to).unwrap_or(&[]) {
                // Room left by a sighting no journey took.
                if r == UNMARKED {
                    continue;
                }
                if let Some(m) = chunk.get_mut((r >> RECORD_MARK_BITS) as usize) {
                    *m = r & ((1 << RECORD_MARK_BITS) - 1);
                }
            }
        }
    }

    /// The records let go, every span's marks written.
    pub fn drop_records(&mut self) {
        for part in &mut self.parts {
            part.records = Vec::new();
            part.record_starts = Vec::new();
        }
    }

    /// Every latency sample, part by part.
    pub fn latency(&self) -> Vec<&[LatSample]> {
        self.parts.iter().map(|p| p.latency.as_slice()).collect()
    }
}

/// A copy in a group: its place on the path and aligned time.
#[derive(Debug, Clone, Copy)]
struct Copy {
    pos: u8,
    t: i64,
    at: u64,
}

/// One journey of `members` (in path order), with its latency samples,
/// its members marked with it.
fn emit(ctx: &mut Emit<'_>, out: &mut Part, first: &Entry, members: &[Copy]) {
    let (Some(f), Some(l)) = (members.first(), members.last()) else {
        return;
    };
    let path = ctx.path;
    let mut seen = 0u16;
    for c in members {
        seen |= 1 << path.pts[usize::from(c.pos)];
    }
    for w in members.windows(2) {
        let (p, q) = (
            path.pts[usize::from(w[0].pos)],
            path.pts[usize::from(w[1].pos)],
        );
        if w[1].pos == w[0].pos + 1 && (ctx.timed >> p) & (ctx.timed >> q) & 1 != 0 {
            out.latency.push(LatSample::new(
                p,
                q,
                ctx.bins.of(w[0].t),
                (w[1].t - w[0].t).clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32,
            ));
        }
    }
    let k = out.journeys.len();
    // A part past its numbers keeps its journeys unnamed.
    let raw = if k >> PART_SHIFT == 0 {
        (ctx.part << PART_SHIFT) | k as u32
    } else {
        NONE
    };
    let m = mark(
        raw,
        &super::PathCell {
            seen,
            flow: ctx.flow,
            fate: ctx.usual,
        },
    );
    for c in members {
        let (p, i) = (
            (c.at >> IDX_BITS) as usize,
            (c.at & ((1 << IDX_BITS) - 1)) as usize,
        );
        if let Some(next) = ctx.next_record.get_mut(ctx.spans.of(p, i))
            && let Some(slot) = out.records.get_mut(*next)
        {
            *slot = record(m, i);
            *next += 1;
        }
    }
    out.journeys.push(Journey {
        flow: ctx.flow,
        psn_op: first.psn_op,
        syndrome: first.syndrome(),
        seen,
        earlier_reached: false,
        t: f.t,
        last_after: (l.t - f.t).clamp(0, i64::from(i32::MAX)) as i32,
        next_after: u32::MAX,
        first_before: 0,
    });
}

/// What every journey of one group shares.
struct Emit<'a> {
    /// The points with times (not ordinal), a bit each.
    timed: u32,
    path: &'a PathPts,
    flow: u32,
    part: u32,
    usual: super::Fate,
    spans: &'a MarkSpans,
    /// Where the next record of each span of the marks goes.
    next_record: Vec<usize>,
    bins: Bins,
}

/// A point without times: its copies (in its order) join the journeys
/// upstream (in theirs) in order, the pairing that keeps their times
/// closest, a journey left out costing as much as [`ORDINAL_TOL_NS`] (it
/// vanished before the point, or the point missed it). Groups are a
/// handful of copies: the whole table is small.
fn join_in_order(open: &mut Vec<(u8, i64, Vec<Copy>)>, copies: &[Copy]) {
    let pos = copies[0].pos;
    let mut up: Vec<usize> = (0..open.len()).filter(|&i| open[i].0 < pos).collect();
    up.sort_by_key(|&i| open[i].1);
    let (m, k) = (copies.len(), up.len());
    let skip = ORDINAL_TOL_NS;
    // cost[i][j]: the first i copies against the first j journeys.
    let mut cost = vec![vec![i64::MAX / 4; k + 1]; m + 1];
    cost[0][0] = 0;
    for i in 0..=m {
        for j in 0..=k {
            let c = cost[i][j];
            if i < m {
                cost[i + 1][j] = cost[i + 1][j].min(c + skip);
            }
            if j < k {
                cost[i][j + 1] = cost[i][j + 1].min(c + skip);
            }
            if i < m && j < k {
                let d = (copies[i].t - open[up[j]].1).abs();
                cost[i + 1][j + 1] = cost[i + 1][j + 1].min(c + d);
            }
        }
    }
    // Back from the end: which copy joined which journey.
    let (mut i, mut j) = (m, k);
    let mut pairs = Vec::new();
    while i > 0 || j > 0 {
        let c = cost[i][j];
        if i > 0 && j > 0 && c == cost[i - 1][j - 1] + (copies[i - 1].t - open[up[j - 1]].1).abs() {
            pairs.push((i - 1, Some(up[j - 1])));
            i -= 1;
            j -= 1;
        } else if i > 0 && c == cost[i - 1][j] + skip {
            pairs.push((i - 1, None));
            i -= 1;
        } else {
            j -= 1;
        }
    }
    for (ci, journey) in pairs.into_iter().rev() {
        let c = copies[ci];
        match journey {
            Some(o) => {
                let jr = &mut open[o];
                jr.0 = c.pos;
                jr.1 = c.t;
                jr.2.push(c);
            }
            None => open.push((c.pos, c.t, vec![c])),
        }
    }
}

/// The latency series' bins: over every point's aligned span.
pub(super) fn series_bins(a: &Aligned, cfg: &PointsConfig) -> Bins {
    let span = (
        a.spans.iter().map(|s| s.0).min().unwrap_or(0),
        a.spans.iter().map(|s| s.1).max().unwrap_or(0),
    );
    Bins::new(span, cfg.series_bins)
}

/// Follows every frame: each group's copies into journeys.
pub(super) fn follow(
    flows: &Flows,
    groups: &Groups,
    a: &Aligned,
    cfg: &PointsConfig,
) -> Result<Followed, PointsError> {
    let bins = series_bins(a, cfg);
    let spans = &groups.spans_of_marks;
    let parts: Vec<Part> = std::thread::scope(|s| {
        let handles: Vec<_> = groups
            .all()
            .zip(&groups.span_counts)
            .enumerate()
            .map(|(k, (entries, counts))| {
                s.spawn(move || follow_part(flows, entries, a, k as u32, spans, counts, bins))
            })
            .collect();
        joined_all(handles, "following")
    })?;
    let mut bases = Vec::with_capacity(parts.len());
    let mut base = 0u32;
    for p in &parts {
        bases.push(base);
        base += p.journeys.len() as u32;
    }
    Ok(Followed {
        parts,
        bases,
        spans: spans.clone(),
    })
}

fn follow_part(
    flows: &Flows,
    entries: &[Entry],
    a: &Aligned,
    part: u32,
    spans: &MarkSpans,
    span_counts: &[u32],
    bins: Bins,
) -> Part {
    // The usual frame is seen once at each of `n` points: a journey of
    // `n` entries and `n - 1` samples; a little over that reserved (more
    // grows the lists).
    let n = a.maps.len().max(1);
    let slack = entries.len() / 16;
    // Each span of the marks gets room for every entry of the part in it
    // (its count, taken as the grouping sorted the buckets).
    let mut record_starts = Vec::with_capacity(span_counts.len() + 1);
    let mut at = 0usize;
    for &c in span_counts {
        record_starts.push(at);
        at += c as usize;
    }
    record_starts.push(at);
    let next_record = record_starts[..span_counts.len()].to_vec();
    let mut out = Part {
        journeys: Vec::with_capacity(entries.len() / n + slack),
        latency: Vec::with_capacity(entries.len() / n * (n - 1) + slack),
        records: bytemuck::allocation::zeroed_vec(at),
        record_starts,
    };
    let mut copies: Vec<Copy> = Vec::new();
    // Open journeys of the group being followed: (last pos, last t,
    // members start in `scratch`, count).
    let mut open: Vec<(u8, i64, Vec<Copy>)> = Vec::new();
    let tol = a.tol_ns;
    let timed = (0..n)
        .filter(|&p| !a.is_ordinal(p))
        .fold(0u32, |m, p| m | 1 << p);
    let no_path = PathPts::default();
    let mut ctx = Emit {
        timed,
        path: &no_path,
        flow: NONE,
        part,
        usual: super::Fate::Delivered,
        spans,
        next_record,
        bins,
    };
    for_each_group(entries, |g| {
        let first = g[0];
        let flow = first.flow;
        if flow == NONE {
            return;
        }
        let path = &flows.paths[flow as usize];
        copies.clear();
        for e in g {
            let p = e.point();
            let (Some(pos), Some(t)) = (path.pos(p), a.at(p, e.ts)) else {
                continue;
            };
            copies.push(Copy {
                pos: pos as u8,
                t,
                at: e.member(),
            });
        }
        if copies.is_empty() {
            return;
        }
        let once = copies.windows(2).all(|w| w[0].pos != w[1].pos);
        let start = out.journeys.len();
        ctx.path = path;
        ctx.flow = flow;
        ctx.usual = if path.len < 2 {
            super::Fate::Unjudged
        } else {
            super::Fate::Delivered
        };
        if once {
            // The usual group: one copy per point, one journey. The entries
            // are in point order: the path's order, or its reverse.
            if copies.len() > 1 && copies[0].pos > copies[1].pos {
                copies.reverse();
            }
            if !copies.windows(2).all(|w| w[0].pos < w[1].pos) {
                copies.sort_unstable_by_key(|c| c.pos);
            }
            emit(&mut ctx, &mut out, &first, &copies);
        } else {
            copies.sort_unstable_by_key(|c| (c.pos, c.t));
            open.clear();
            let mut k = 0;
            while k < copies.len() {
                let pos = copies[k].pos;
                let mut e = k;
                while e < copies.len() && copies[e].pos == pos {
                    e += 1;
                }
                if a.is_ordinal(usize::from(path.pts[usize::from(pos)])) {
                    join_in_order(&mut open, &copies[k..e]);
                } else {
                    for &c in &copies[k..e] {
                        // The latest journey upstream of `c` not after it.
                        let best = open
                            .iter()
                            .enumerate()
                            .filter(|(_, (p, t, _))| *p < c.pos && *t <= c.t + tol)
                            .max_by_key(|(_, (_, t, _))| *t)
                            .map(|(i, _)| i);
                        match best {
                            Some(i) => {
                                let j = &mut open[i];
                                j.0 = c.pos;
                                j.1 = c.t;
                                j.2.push(c);
                            }
                            None => open.push((c.pos, c.t, vec![c])),
                        }
                    }
                }
                k = e;
            }
            open.sort_unstable_by_key(|(_, _, m)| m.first().map_or(0, |c| c.t));
            for (_, _, members) in &open {
                emit(&mut ctx, &mut out, &first, members);
            }
        }
        let mine = &mut out.journeys[start..];
        let first_t = mine.first().map_or(0, |j| j.t);
        let end = path.as_slice().last().map_or(0, |&p| 1u16 << p);
        let mut reached = false;
        let after = |x: i64| u32::try_from(x.max(0)).unwrap_or(u32::MAX - 1);
        for k in 0..mine.len() {
            if k > 0 {
                let next = mine[k].t;
                mine[k - 1].next_after = after(next - mine[k - 1].t);
                mine[k].first_before = after(mine[k].t - first_t);
            }
            mine[k].earlier_reached = reached;
            reached |= mine[k].seen & end != 0;
        }
    });
    out
}
