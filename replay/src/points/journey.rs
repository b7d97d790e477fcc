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
use super::group::{Entry, Groups, IDX_BITS, for_each_group, sighting};
use super::{MAX_POINTS, PointInput, PointsConfig, qp_ends};
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
            for (req, resp, dest_qp, req_qp) in qp_ends(p.report) {
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

/// One frame followed from point to point.
#[derive(Debug, Clone, Copy)]
pub(super) struct Journey {
    pub flow: u32,
    pub psn: u32,
    pub opcode: u8,
    pub syndrome: u8,
    /// The points that saw it.
    pub seen: u16,
    /// Its members in [`Followed::members`], in path order.
    pub first: u32,
    pub count: u8,
    /// Aligned time at the first and last point that saw it.
    pub t: i64,
    pub t_last: i64,
    /// The next copy's `t` (a resend), `i64::MAX` without.
    pub next_copy: i64,
    /// The first copy's `t` (its own for the first).
    pub first_copy: i64,
    /// An earlier copy reached the last point of its way (the receiver
    /// may have taken that one).
    pub earlier_reached: bool,
}

/// One-way latency of a journey between two adjacent points.
#[derive(Debug, Clone, Copy)]
pub(super) struct LatSample {
    pub from: u8,
    pub to: u8,
    pub t: i64,
    pub ns: i64,
}

/// Every journey, and each sighting's.
#[derive(Debug, Default)]
pub(super) struct Followed {
    pub journeys: Vec<Journey>,
    /// Point (high bits) and sighting index of each journey's members.
    pub members: Vec<u64>,
    /// Each point's sightings' journeys (`NONE`: not followed).
    pub journey_of: Vec<Vec<u32>>,
    pub latency: Vec<LatSample>,
}

impl Followed {
    pub fn members(&self, j: &Journey) -> &[u64] {
        let s = j.first as usize;
        &self.members[s..s + usize::from(j.count)]
    }
}

/// A copy in a group: its place on the path and aligned time.
#[derive(Debug, Clone, Copy)]
struct Copy {
    pos: u8,
    t: i64,
    at: u64,
}

/// One journey of `members` (in path order), with its latency samples.
fn emit(
    out: &mut Followed,
    flow: u32,
    first: &super::Sighting,
    path: &PathPts,
    a: &Aligned,
    members: &[Copy],
) {
    let (Some(f), Some(l)) = (members.first(), members.last()) else {
        return;
    };
    let mut seen = 0u16;
    for c in members {
        seen |= 1 << path.pts[usize::from(c.pos)];
    }
    for w in members.windows(2) {
        let (p, q) = (
            path.pts[usize::from(w[0].pos)],
            path.pts[usize::from(w[1].pos)],
        );
        if w[1].pos == w[0].pos + 1
            && !a.is_ordinal(usize::from(p))
            && !a.is_ordinal(usize::from(q))
        {
            out.latency.push(LatSample {
                from: p,
                to: q,
                t: w[0].t,
                ns: w[1].t - w[0].t,
            });
        }
    }
    out.journeys.push(Journey {
        flow,
        psn: first.psn,
        opcode: first.opcode,
        syndrome: first.syndrome,
        seen,
        first: out.members.len() as u32,
        count: members.len() as u8,
        t: f.t,
        t_last: l.t,
        next_copy: i64::MAX,
        first_copy: f.t,
        earlier_reached: false,
    });
    out.members.extend(members.iter().map(|c| c.at));
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

/// Follows every frame: each group's copies into journeys.
pub(super) fn follow(
    inputs: &[PointInput<'_>],
    flows: &Flows,
    groups: &Groups,
    a: &Aligned,
    _cfg: &PointsConfig,
) -> Followed {
    let chunks = groups.chunks();
    let parts: Vec<Followed> = std::thread::scope(|s| {
        let handles: Vec<_> = chunks
            .iter()
            .map(|range| {
                let entries = &groups.entries[range.clone()];
                s.spawn(move || follow_part(inputs, flows, entries, a))
            })
            .collect();
        handles.into_iter().filter_map(|h| h.join().ok()).collect()
    });
    let mut out = Followed {
        journey_of: inputs
            .iter()
            .map(|p| vec![NONE; p.sightings.len()])
            .collect(),
        ..Followed::default()
    };
    for mut part in parts {
        let base_j = out.journeys.len() as u32;
        let base_m = out.members.len() as u32;
        for j in &mut part.journeys {
            j.first += base_m;
        }
        out.members.append(&mut part.members);
        out.latency.append(&mut part.latency);
        for (k, j) in part.journeys.iter().enumerate() {
            let id = base_j + k as u32;
            let s = j.first as usize;
            for &m in &out.members[s..s + usize::from(j.count)] {
                let (p, i) = (
                    (m >> IDX_BITS) as usize,
                    (m & ((1 << IDX_BITS) - 1)) as usize,
                );
                if let Some(slot) = out.journey_of.get_mut(p).and_then(|v| v.get_mut(i)) {
                    *slot = id;
                }
            }
        }
        out.journeys.append(&mut part.journeys);
    }
    out
}

fn follow_part(
    inputs: &[PointInput<'_>],
    flows: &Flows,
    entries: &[Entry],
    a: &Aligned,
) -> Followed {
    let mut out = Followed::default();
    let mut copies: Vec<Copy> = Vec::new();
    // Open journeys of the group being followed: (last pos, last t,
    // members start in `scratch`, count).
    let mut open: Vec<(u8, i64, Vec<Copy>)> = Vec::new();
    let tol = a.tol_ns;
    for_each_group(entries, |g| {
        let first = sighting(inputs, &g[0]);
        let Some(flow) = flows.flow_of(g[0].point(), first.conv) else {
            return;
        };
        let path = &flows.paths[flow as usize];
        copies.clear();
        for e in g {
            let p = e.point();
            let (Some(pos), Some(t)) = (path.pos(p), a.at(p, sighting(inputs, e).ts_ns)) else {
                continue;
            };
            copies.push(Copy {
                pos: pos as u8,
                t,
                at: e.at,
            });
        }
        if copies.is_empty() {
            return;
        }
        let once = copies.windows(2).all(|w| w[0].pos != w[1].pos);
        let start = out.journeys.len();
        if once {
            // The usual group: one copy per point, one journey.
            copies.sort_unstable_by_key(|c| c.pos);
            emit(&mut out, flow, first, path, a, &copies);
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
                emit(&mut out, flow, first, path, a, members);
            }
        }
        let mine = &mut out.journeys[start..];
        let first_t = mine.first().map_or(0, |j| j.t);
        let end = path.as_slice().last().map_or(0, |&p| 1u16 << p);
        let mut reached = false;
        for k in 0..mine.len() {
            if k > 0 {
                let next = mine[k].t;
                mine[k - 1].next_copy = next;
                mine[k].first_copy = first_t;
            }
            mine[k].earlier_reached = reached;
            reached |= mine[k].seen & end != 0;
        }
    });
    out
}
