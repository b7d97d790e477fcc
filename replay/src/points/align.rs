//! Each address pair's direction along the points, and each point's clock
//! against the first's.
//!
//! Both come from frames seen once at each of two points (a group with one
//! sighting per point), read in windows of the lower point's time and
//! never stored: per window the smallest time difference each way.
//!
//! Direction: between points `i < j`, frames going `i` to `j` reach `j`
//! later than frames going back (one-way delays are positive), so the
//! orientation whose smallest `t_j - t_i` is larger, window by window, is
//! the one that runs in path order.
//!
//! Clocks: per window `U` the smallest `t_j - t_i` of frames going `i` to
//! `j` and `V` the smallest `t_i - t_j` of frames coming back, each less
//! the frame's serialisation once per link between the points; `(U - V)
//! / 2` is `j`'s clock less `i`'s there. A line through the windows'
//! values (the worst windows left out once) is the offset and the drift.

use super::fit::{EMPTY, Fit, Window, fit_windows};
use super::group::{Entry, Groups, for_each_group, for_each_group_all};
use super::journey::Flows;
use super::journey::NONE;
use super::{PointInput, PointSummary, PointsConfig, PointsError, joined_all};

/// Windows of a point's time the direction votes are taken in.
const VOTE_WINDOWS: usize = 16;
/// Windows the clocks are fitted over.
const FIT_WINDOWS: usize = 64;
const _: () = assert!(FIT_WINDOWS.is_multiple_of(VOTE_WINDOWS));
/// A point is aligned against another when they share at least this
/// many frames.
const MIN_SHARED: u64 = 8;

/// Nanoseconds a frame of `wire_len` bytes (Ethernet header to ICRC, as a
/// capture's original length counts it) takes on a link of `gbps`: with
/// its FCS, preamble and inter-frame gap, as the wire carries it.
pub(super) fn serialisation_ns(wire_len: u16, gbps: f64) -> f64 {
    let bytes = f64::from(wire_len.max(60)) + 4.0 + 8.0 + 12.0;
    bytes * 8.0 / gbps.max(1e-3)
}

/// How a point's clock reads in the first point's.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Mapping {
    /// `t_p = t_0 + o_int + o_frac + d * (t_0 - t0)`.
    Linear { o_int: i64, o_frac: f64, d: f64 },
    /// No times: its frame indices against the first point's times at
    /// frames both saw, in order, and the usual time between two frames.
    Order(Vec<(u64, f64)>, f64),
    /// Not aligned.
    None,
}

/// The clocks, and the flows with their directions decided.
#[derive(Debug)]
pub(super) struct Aligned {
    pub flows: Flows,
    pub maps: Vec<Mapping>,
    pub summaries: Vec<PointSummary>,
    /// The first point's first frame.
    pub t0: u64,
    pub warnings: Vec<String>,
    /// How far before an upstream copy a downstream one may be and still
    /// be the same journey: the alignment's error.
    pub tol_ns: i64,
    /// Each point's first and last frame, aligned (relative to `t0`).
    pub spans: Vec<(i64, i64)>,
}

impl Aligned {
    /// Point `p`'s time `ts` in the first point's clock, relative to `t0`.
    #[inline(always)]
    pub fn at(&self, p: usize, ts: u64) -> Option<i64> {
        match &self.maps[p] {
            Mapping::Linear { o_int, o_frac, d } => {
                // Times are below 2^63 ns (the year 2262): whole in i64.
                let rel = (ts as i64)
                    .wrapping_sub(self.t0 as i64)
                    .wrapping_sub(*o_int);
                Some(round((rel as f64 - o_frac) / (1.0 + d)))
            }
            Mapping::Order(anchors, spacing) => Some(by_order(anchors, *spacing, ts)),
            Mapping::None => None,
        }
    }

    pub fn is_ordinal(&self, p: usize) -> bool {
        matches!(self.maps[p], Mapping::Order(..))
    }
}

/// `x` to the nearest integer (half away from zero), without a call to
/// the C library's `round` (x86-64's baseline has no rounding instruction).
#[inline]
fn round(x: f64) -> i64 {
    (x + if x >= 0.0 { 0.5 } else { -0.5 }) as i64
}

/// A time by order: between the anchors around `ts`, in proportion where
/// they are as far apart as their frames usually are; across a silence
/// (a timer's wait) the frame is as near in time to the nearer anchor as
/// it is in frames.
fn by_order(anchors: &[(u64, f64)], spacing: f64, ts: u64) -> i64 {
    let i = anchors.partition_point(|(a, _)| *a <= ts);
    let v = match (
        i.checked_sub(1).and_then(|k| anchors.get(k)),
        anchors.get(i),
    ) {
        (Some(&(a0, t0)), Some(&(a1, t1))) if a1 > a0 => {
            let frames = (a1 - a0) as f64;
            if t1 - t0 > 4.0 * frames * spacing {
                let (d0, d1) = ((ts - a0) as f64, (a1 - ts) as f64);
                if d0 <= d1 {
                    t0 + d0 * spacing
                } else {
                    t1 - d1 * spacing
                }
            } else {
                t0 + (t1 - t0) * (ts - a0) as f64 / frames
            }
        }
        (Some(&(a0, t)), _) => t + (ts.saturating_sub(a0)) as f64 * spacing,
        (None, Some(&(a1, t))) => t - (a1.saturating_sub(ts)) as f64 * spacing,
        (None, None) => 0.0,
    };
    round(v)
}

/// A window's minima from the flows of one address pair going one way,
/// taken in the direction votes' pass before the direction is known: each
/// way's value as it would be if that way runs in path order (`u`) or
/// against it (`v`), with the place in the thread's entries where it was
/// first reached, so that the windows made of them once the directions are
/// decided are the ones a second pass over the entries would make.
#[derive(Debug, Clone, Copy)]
pub(super) struct Cand {
    w: Window,
    at_u: usize,
    at_v: usize,
}

const CAND_EMPTY: Cand = Cand {
    w: EMPTY,
    at_u: usize::MAX,
    at_v: usize::MAX,
};

/// Candidate windows a thread keeps at most (48 bytes each): with more
/// address pairs than fit, the clocks take a pass of their own instead.
const MAX_CANDS: usize = 1 << 16;

/// The candidates' slot: address pair, its way, point pair, window.
#[inline]
fn cand_slot(pair: usize, from_lo: bool, n: usize, i: usize, j: usize, w: usize) -> usize {
    (((pair * 2 + usize::from(from_lo)) * n + i) * n + j) * FIT_WINDOWS + w
}

/// The window of `ts` in a span starting at `first` of `len` ns.
#[inline]
fn window_of(ts: u64, first: u64, len: u64, windows: usize) -> usize {
    let off = ts.saturating_sub(first);
    let num = off as u128 * windows as u128;
    let den = len.max(1) as u128 + 1;
    // In 64 bits whenever it fits (a capture shorter than centuries): a
    // 128-bit division is a library call, several times slower.
    match (u64::try_from(num), u64::try_from(den)) {
        (Ok(num), Ok(den)) => (num / den) as usize,
        _ => (num / den) as usize,
    }
}

/// Every pair of points present once in a group: (lower, higher) entries.
#[inline]
fn unique_pairs(g: &[Entry], mut f: impl FnMut(&Entry, &Entry)) {
    // At most one sighting per point (entries are sorted by point).
    if g.windows(2).any(|w| w[0].point() == w[1].point()) {
        return;
    }
    for (k, a) in g.iter().enumerate() {
        for b in &g[k + 1..] {
            f(a, b);
        }
    }
}

#[derive(Debug)]
struct Spans {
    first: Vec<u64>,
    len: Vec<u64>,
}

impl Spans {
    /// From each point's first and last time.
    fn of(spans: &[(u64, u64)]) -> Spans {
        Spans {
            first: spans.iter().map(|s| s.0).collect(),
            len: spans.iter().map(|s| s.1 - s.0).collect(),
        }
    }
}

/// Decides each address pair's direction, then each point's clock.
/// `votes`: each grouping thread's [`Votes`], done.
pub(super) fn align(
    inputs: &[PointInput<'_>],
    mut flows: Flows,
    groups: &Groups,
    votes: Vec<VotePart>,
    cfg: &PointsConfig,
) -> Result<Aligned, PointsError> {
    let n = inputs.len();
    let sp = Spans::of(&groups.spans);
    let (shared, windows) = directions(n, &mut flows, votes);
    let mut warnings = Vec::new();
    // Points sharing no frame with any other: said, and left out.
    let mut alone = Vec::new();
    for p in 0..n {
        let with: u64 = (0..n).filter(|&q| q != p).map(|q| shared[p * n + q]).sum();
        if with == 0 && !inputs[p].sightings.is_empty() {
            alone.push(p);
        }
    }
    let any_shared = (0..n).any(|p| (0..n).any(|q| q != p && shared[p * n + q] > 0));
    if !any_shared {
        return Err(PointsError::NothingShared(
            inputs.iter().map(|p| p.name.to_owned()).collect(),
        ));
    }
    for &p in &alone {
        let others: Vec<&str> = (0..n).filter(|&q| q != p).map(|q| inputs[q].name).collect();
        warnings.push(format!(
            "{} shares no traffic with {}: not the same exchange? It is left out of the analysis",
            inputs[p].name,
            others.join(" or ")
        ));
    }
    let t0 = sp.first[0];
    let fits = fit_pairs(inputs, &flows, groups, &sp, cfg, windows)?;
    let mut maps = vec![Mapping::None; n];
    let mut summaries: Vec<PointSummary> = inputs
        .iter()
        .map(|p| PointSummary {
            name: p.name.to_owned(),
            offset_ns: 0,
            drift_ppm: 0.0,
            spread_ns: 0,
            frames: p.sightings.len() as u64,
            capture_loss: 0,
            matched: 0,
            reference: None,
            fixed: false,
            ordinal: p.ordinal,
            aligned: false,
            one_way: false,
            first_ns: 0,
            last_ns: 0,
            ended_early: false,
        })
        .collect();
    // The first point is the clock everything is read in; an ordinal
    // first point keeps its indices as its times.
    maps[0] = Mapping::Linear {
        o_int: 0,
        o_frac: 0.0,
        d: 0.0,
    };
    summaries[0].aligned = !alone.contains(&0);
    // Each other point against the first, or against the aligned point
    // it shares most with; by hand where given.
    let mut todo: Vec<usize> = (1..n).filter(|p| !alone.contains(p)).collect();
    while !todo.is_empty() {
        let mut progressed = false;
        let mut k = 0;
        while k < todo.len() {
            let p = todo[k];
            if let Some(fixed) = inputs[p].fixed_offset_ns {
                maps[p] = Mapping::Linear {
                    o_int: fixed,
                    o_frac: 0.0,
                    d: 0.0,
                };
                let s = &mut summaries[p];
                s.fixed = true;
                s.aligned = true;
                s.offset_ns = fixed;
                s.matched = shared[p];
                s.reference = Some(0);
                todo.swap_remove(k);
                progressed = true;
                continue;
            }
            let refs: Vec<usize> = (0..n)
                .filter(|&r| r != p && maps[r] != Mapping::None && !inputs[r].ordinal)
                .collect();
            let best = refs
                .iter()
                .copied()
                .filter(|&r| shared[p * n + r] >= MIN_SHARED)
                // A point without times takes its order from the point it
                // shares most with (its neighbour: both past the same
                // losses); one with times from the first where it can.
                .max_by_key(|&r| (r == 0 && !inputs[p].ordinal, shared[p * n + r]));
            let Some(r) = best else {
                k += 1;
                continue;
            };
            let mapped = if inputs[p].ordinal {
                order_map(&flows, groups, p, r, &maps, t0).map(|m| (m, None))
            } else {
                let (lo, hi) = (r.min(p), r.max(p));
                fits[lo * n + hi]
                    .as_ref()
                    .map(|f| (compose(&maps[r], f, r < p, &sp, r, p, t0), Some(*f)))
            };
            let Some((m, fit)) = mapped else {
                k += 1;
                continue;
            };
            let s = &mut summaries[p];
            if let (Mapping::Linear { o_int, o_frac, d }, Some(f)) = (&m, fit) {
                s.offset_ns = o_int + o_frac.round() as i64;
                s.drift_ppm = d * 1e6;
                s.spread_ns = f.spread_ns.round() as u64;
                s.one_way = f.one_way;
            }
            s.matched = shared[p * n + r];
            s.reference = Some(r);
            s.aligned = true;
            maps[p] = m;
            todo.swap_remove(k);
            progressed = true;
        }
        if !progressed {
            for &p in &todo {
                warnings.push(format!(
                    "{}: too few frames shared with the aligned points to align its clock; left out",
                    inputs[p].name
                ));
            }
            break;
        }
    }
    for s in &summaries {
        if s.one_way {
            warnings.push(format!(
                "{}: frames were shared one way only: its offset assumes no delay beyond the serialisation",
                s.name
            ));
        }
    }
    let mut a = Aligned {
        flows,
        maps,
        summaries,
        t0,
        warnings,
        tol_ns: 0,
        spans: vec![(0, 0); n],
    };
    let worst = a
        .summaries
        .iter()
        .filter(|s| s.aligned && !s.ordinal)
        .map(|s| s.spread_ns as i64)
        .max()
        .unwrap_or(0);
    a.tol_ns = (3 * worst).clamp(500, 2_000);
    for p in 0..n {
        let (Some(lo), Some(hi)) = (
            a.at(p, sp.first[p]),
            a.at(p, sp.first[p].saturating_add(sp.len[p])),
        ) else {
            continue;
        };
        a.spans[p] = (lo, hi);
        let s = &mut a.summaries[p];
        s.first_ns = (t0 as i64 + lo).max(0) as u64;
        s.last_ns = (t0 as i64 + hi).max(0) as u64;
    }
    ended_early(&mut a);
    Ok(a)
}

/// A point whose capture stops (or starts) well inside the others': said,
/// and its frames judged only within its span.
fn ended_early(a: &mut Aligned) {
    let aligned: Vec<usize> = (0..a.maps.len())
        .filter(|&p| a.summaries[p].aligned)
        .collect();
    let Some(last) = aligned.iter().map(|&p| a.spans[p].1).max() else {
        return;
    };
    let Some(first) = aligned.iter().map(|&p| a.spans[p].0).min() else {
        return;
    };
    let whole = (last - first).max(1);
    for &p in &aligned {
        let (lo, hi) = a.spans[p];
        let short_end = last - hi > whole / 20 && last - hi > 1_000_000;
        let late_start = lo - first > whole / 20 && lo - first > 1_000_000;
        if short_end || late_start {
            a.summaries[p].ended_early = true;
            let name = a.summaries[p].name.clone();
            let what = match (late_start, short_end) {
                (true, true) => "starts late and ends early",
                (true, false) => "starts late",
                _ => "ends early",
            };
            a.warnings.push(format!(
                "{name} {what} ({} of {} ms): only the frames of its span are judged there",
                fmt_ms(hi - lo),
                fmt_ms(whole)
            ));
        }
    }
}

fn fmt_ms(ns: i64) -> String {
    format!("{:.3}", ns as f64 / 1e6)
}

/// One thread's share of the votes: per slot the smallest difference
/// each way, the frames each point pair shares, and its candidate windows
/// of the clocks (empty when they take a pass of their own).
pub(super) type VotePart = (Vec<(i64, i64)>, Vec<u64>, Vec<Cand>);

/// One grouping thread's votes on each address pair's orientation and
/// its count of the frames each point pair shares, taken bucket by
/// bucket as the grouping sorts them (one pass over the entries fewer);
/// while there are few enough address pairs, the clocks' windows of
/// every way each pair may turn out to run (see [`Cand`]) too.
#[derive(Debug)]
pub(super) struct Votes<'a> {
    n: usize,
    pair_of: &'a [u32],
    from_lo: &'a [bool],
    /// Each point is ordinal (empty when none is: the pairs then skip
    /// the question).
    ordinal: Vec<bool>,
    sp: Spans,
    gbps: f64,
    with_clocks: bool,
    mins: Vec<(i64, i64)>,
    shared: Vec<u64>,
    cand: Vec<Cand>,
}

impl<'a> Votes<'a> {
    /// Per address pair and point pair (i < j): per window the smallest
    /// `t_j - t_i` of frames from the pair's lower address, and of frames
    /// from its higher one. `spans`: each point's first and last time.
    pub fn new(
        inputs: &[PointInput<'_>],
        flows: &'a Flows,
        spans: &[(u64, u64)],
        cfg: &PointsConfig,
    ) -> Votes<'a> {
        let n = inputs.len();
        let pairs = flows.pairs.len();
        let cands = pairs * 2 * n * n * FIT_WINDOWS;
        let with_clocks = cands <= MAX_CANDS;
        let ordinal = if inputs.iter().any(|p| p.ordinal) {
            inputs.iter().map(|p| p.ordinal).collect()
        } else {
            Vec::new()
        };
        Votes {
            n,
            pair_of: &flows.pair_of,
            from_lo: &flows.from_lo,
            ordinal,
            sp: Spans::of(spans),
            gbps: cfg.link_gbps,
            with_clocks,
            mins: vec![(i64::MAX, i64::MAX); pairs * n * n * VOTE_WINDOWS],
            shared: vec![0u64; n * n],
            cand: if with_clocks {
                vec![CAND_EMPTY; cands]
            } else {
                Vec::new()
            },
        }
    }

    /// What [`directions`] takes.
    pub fn done(self) -> VotePart {
        (self.mins, self.shared, self.cand)
    }
}

impl super::group::BucketVisit for Votes<'_> {
    fn bucket(&mut self, entries: &[Entry], at: usize) {
        let Votes {
            n,
            pair_of,
            from_lo,
            ordinal,
            sp,
            gbps,
            with_clocks,
            mins,
            shared,
            cand,
        } = self;
        let (n, gbps, with_clocks) = (*n, *gbps, *with_clocks);
        // Where the group starts among the thread's entries.
        let mut next_at = at;
        for_each_group(entries, |g| {
            let at = next_at;
            next_at += g.len();
            // At most one sighting per point (entries are sorted by point).
            if g.windows(2).any(|w| w[0].point() == w[1].point()) {
                return;
            }
            for (k, a) in g.iter().enumerate() {
                let later = &g[k + 1..];
                if later.is_empty() {
                    break;
                }
                // What each pair of `a` with a later copy reads of `a`,
                // once for them all: its way, windows, serialisation.
                let i = a.point();
                let flow = a.flow;
                let (pair, from_lo) = if flow == NONE {
                    (0, false)
                } else {
                    (pair_of[flow as usize] as usize, from_lo[flow as usize])
                };
                // floor(floor(64 x) / 4) = floor(16 x): the vote's
                // window from the clock's, one division fewer.
                let w_fit = window_of(a.ts, sp.first[i], sp.len[i], FIT_WINDOWS);
                let w_vote = (w_fit / (FIT_WINDOWS / VOTE_WINDOWS)).min(VOTE_WINDOWS - 1);
                let w_cand = w_fit.min(FIT_WINDOWS - 1);
                let ser_one = serialisation_ns(a.wire_len(), gbps);
                // Its time in its span, read only where a window takes it
                // (a 64-bit integer made a float: several instructions).
                let x = || a.ts.saturating_sub(sp.first[i]) as f64;
                for b in later {
                    let j = b.point();
                    shared[i * n + j] += 1;
                    shared[j * n + i] += 1;
                    if !ordinal.is_empty() && (ordinal[i] || ordinal[j]) {
                        continue;
                    }
                    if flow == NONE {
                        continue;
                    }
                    let d = b.ts as i64 - a.ts as i64;
                    let slot = ((pair * n + i) * n + j) * VOTE_WINDOWS + w_vote;
                    if let Some(m) = mins.get_mut(slot) {
                        if from_lo {
                            m.0 = m.0.min(d);
                        } else {
                            m.1 = m.1.min(d);
                        }
                    }
                    if !with_clocks {
                        continue;
                    }
                    let ser = (j - i) as f64 * ser_one;
                    // Near zero: the clocks may differ by an epoch.
                    let d = (d - pair_base(sp, i, j)) as f64;
                    let Some(c) = cand.get_mut(cand_slot(pair, from_lo, n, i, j, w_cand)) else {
                        continue;
                    };
                    let (u, v) = (d - ser, -d - ser);
                    if u < c.w.u {
                        c.w.u = u;
                        c.w.tu = x();
                        c.at_u = at;
                    }
                    if v < c.w.v {
                        c.w.v = v;
                        c.w.tv = x();
                        c.at_v = at;
                    }
                }
            }
        });
    }
}

/// Each address pair's orientation from the threads' votes, and the
/// frames each point pair shares (`shared[p * n + q]`); with the clocks'
/// windows each thread made, ready for [`fit_pairs`].
fn directions(
    n: usize,
    flows: &mut Flows,
    parts: Vec<VotePart>,
) -> (Vec<u64>, Option<Vec<Vec<Window>>>) {
    let pairs = flows.pairs.len();
    let slots = pairs * n * n * VOTE_WINDOWS;
    let with_clocks = pairs * 2 * n * n * FIT_WINDOWS <= MAX_CANDS;
    let mut mins = vec![(i64::MAX, i64::MAX); slots];
    let mut shared = vec![0u64; n * n];
    for (m, s, _) in &parts {
        for (a, b) in mins.iter_mut().zip(m) {
            a.0 = a.0.min(b.0);
            a.1 = a.1.min(b.1);
        }
        for (a, b) in shared.iter_mut().zip(s) {
            *a += b;
        }
    }
    for pair in 0..pairs {
        let mut votes = 0i64;
        for i in 0..n {
            for j in i + 1..n {
                for w in 0..VOTE_WINDOWS {
                    let (lo, hi) = mins[((pair * n + i) * n + j) * VOTE_WINDOWS + w];
                    if lo != i64::MAX && hi != i64::MAX && lo != hi {
                        votes += if lo > hi { 1 } else { -1 };
                    }
                }
            }
        }
        flows.pairs[pair].lo_forward = match votes.signum() {
            1 => Some(true),
            -1 => Some(false),
            _ => None,
        };
    }
    flows.settle(n);
    let wins = with_clocks.then(|| {
        parts
            .iter()
            .map(|(_, _, cand)| decided_windows(flows, cand, n))
            .collect()
    });
    (shared, wins)
}

/// One thread's clock windows from its candidates, the directions decided:
/// a frame going in path order gives its way's `u`, one coming back its
/// `v`; of equal values the one first reached in the thread's entries, as
/// a pass over them in order would keep.
fn decided_windows(flows: &Flows, cand: &[Cand], n: usize) -> Vec<Window> {
    let mut wins = vec![EMPTY; n * n * FIT_WINDOWS];
    let mut at = vec![(usize::MAX, usize::MAX); n * n * FIT_WINDOWS];
    for (pair, p) in flows.pairs.iter().enumerate() {
        let Some(lo_forward) = p.lo_forward else {
            continue;
        };
        for from_lo in [false, true] {
            let forward = lo_forward == from_lo;
            for k in 0..n * n * FIT_WINDOWS {
                let Some(c) = cand.get(cand_slot(pair, from_lo, n, 0, 0, 0) + k) else {
                    continue;
                };
                let (w, a) = (&mut wins[k], &mut at[k]);
                if forward {
                    if c.w.u < w.u || (c.w.u == w.u && c.at_u < a.0) {
                        w.u = c.w.u;
                        w.tu = c.w.tu;
                        a.0 = c.at_u;
                    }
                } else if c.w.v < w.v || (c.w.v == w.v && c.at_v < a.1) {
                    w.v = c.w.v;
                    w.tv = c.w.tv;
                    a.1 = c.at_v;
                }
            }
        }
    }
    wins
}

/// The clock of every point pair `i < j` that shares frames both ways
/// (or one way, said so): `fits[i * n + j]`. From each thread's windows
/// when the direction votes made them, else from a pass of its own.
fn fit_pairs(
    inputs: &[PointInput<'_>],
    flows: &Flows,
    groups: &Groups,
    sp: &Spans,
    cfg: &PointsConfig,
    made: Option<Vec<Vec<Window>>>,
) -> Result<Vec<Option<Fit>>, PointsError> {
    let n = inputs.len();
    let parts = match made {
        Some(parts) => parts,
        None => window_pass(inputs, flows, groups, sp, cfg)?,
    };
    let mut wins = vec![EMPTY; n * n * FIT_WINDOWS];
    for part in parts {
        for (a, b) in wins.iter_mut().zip(part) {
            if b.u < a.u {
                a.u = b.u;
                a.tu = b.tu;
            }
            if b.v < a.v {
                a.v = b.v;
                a.tv = b.tv;
            }
        }
    }
    let mut fits = vec![None; n * n];
    for i in 0..n {
        for j in i + 1..n {
            let w = &wins[(i * n + j) * FIT_WINDOWS..(i * n + j + 1) * FIT_WINDOWS];
            fits[i * n + j] = fit_windows(w).map(|f| Fit {
                base: f.base + pair_base(sp, i, j),
                ..f
            });
        }
    }
    Ok(fits)
}

/// Each thread's clock windows in a pass of their own, the directions
/// decided (with more address pairs than [`MAX_CANDS`] allows).
fn window_pass(
    inputs: &[PointInput<'_>],
    flows: &Flows,
    groups: &Groups,
    sp: &Spans,
    cfg: &PointsConfig,
) -> Result<Vec<Vec<Window>>, PointsError> {
    let n = inputs.len();
    let gbps = cfg.link_gbps;
    let any_ordinal = inputs.iter().any(|p| p.ordinal);
    std::thread::scope(|s| {
        let handles: Vec<_> = groups
            .all()
            .map(|entries| {
                s.spawn(move || {
                    let mut wins = vec![EMPTY; n * n * FIT_WINDOWS];
                    for_each_group(entries, |g| {
                        unique_pairs(g, |a, b| {
                            let (i, j) = (a.point(), b.point());
                            if any_ordinal && (inputs[i].ordinal || inputs[j].ordinal) {
                                return;
                            }
                            if a.flow == NONE {
                                return;
                            }
                            let Some(forward) = flows.forward(a.flow) else {
                                return;
                            };
                            let k = (j - i) as f64;
                            let ser = k * serialisation_ns(a.wire_len(), gbps);
                            let x = a.ts.saturating_sub(sp.first[i]);
                            let w = window_of(a.ts, sp.first[i], sp.len[i], FIT_WINDOWS)
                                .min(FIT_WINDOWS - 1);
                            // Near zero: the clocks may differ by an epoch.
                            let d = (b.ts as i64 - a.ts as i64) - pair_base(sp, i, j);
                            let Some(win) = wins.get_mut((i * n + j) * FIT_WINDOWS + w) else {
                                return;
                            };
                            if forward {
                                let u = d as f64 - ser;
                                if u < win.u {
                                    win.u = u;
                                    win.tu = x as f64;
                                }
                            } else {
                                let v = -(d as f64) - ser;
                                if v < win.v {
                                    win.v = v;
                                    win.tv = x as f64;
                                }
                            }
                        });
                    });
                    wins
                })
            })
            .collect();
        joined_all(handles, "clock windows")
    })
}

/// What `t_j - t_i` is measured from: the points' first frames apart.
fn pair_base(sp: &Spans, i: usize, j: usize) -> i64 {
    (sp.first[j] as i128 - sp.first[i] as i128) as i64
}

/// Point `p`'s mapping from reference `r`'s and their pair's fit
/// (`r_low`: `r` is the pair's lower point).
fn compose(mr: &Mapping, f: &Fit, r_low: bool, sp: &Spans, r: usize, p: usize, t0: u64) -> Mapping {
    let Mapping::Linear {
        o_int: oi,
        o_frac: of,
        d: di,
    } = *mr
    else {
        return Mapping::None;
    };
    // The fit is of the higher point less the lower one against the
    // lower's time since its first frame: `hi = lo + base + a + b*(lo - first_lo)`.
    let lo = if r_low { r } else { p };
    let (base, a, b) = (f.base, f.a, f.b);
    if r_low {
        // p = r + base + a + b*(r - first_r), r = t0' + oi + of + di*x.
        let anchor = (t0 as i128 + oi as i128 - sp.first[lo] as i128) as f64 + of;
        let o_frac = of + a + b * anchor;
        Mapping::Linear {
            o_int: oi + base,
            o_frac,
            d: di + b * (1.0 + di),
        }
    } else {
        // r = p + base + a + b*(p - first_p) solved for p, with
        // r = t0' + oi + of + di*x:
        //   p - t0' = (oi - base + of - a - b*(t0 - first_p) + (di - b)*x) / (1 + b).
        // The integer part kept whole (clocks may differ by an epoch); the
        // rest is small: (oi - base) + (t0 - first_p) is near p's first
        // frame's time since t0.
        let k = 1.0 + b;
        let g = oi - base;
        let near = (g as i128 + t0 as i128 - sp.first[lo] as i128) as f64;
        Mapping::Linear {
            o_int: g,
            o_frac: (of - a - b * near) / k,
            d: (di - b) / k,
        }
    }
}

/// An ordinal point's times from the frames it shares with `r`, in order.
/// A frame going from `r` to `p` reaches `p` after `r` saw it and one
/// going back left `p` before: the anchors' times are moved by the one-way
/// delay between them that puts them most nearly in `p`'s order (a search
/// over 0 to 20 µs), then kept where they only grow, and `p`'s frames
/// between two anchors interpolated.
fn order_map(
    flows: &Flows,
    groups: &Groups,
    p: usize,
    r: usize,
    maps: &[Mapping],
    t0: u64,
) -> Option<Mapping> {
    let probe = Aligned {
        flows: Flows::default(),
        maps: maps.to_vec(),
        summaries: Vec::new(),
        t0,
        warnings: Vec::new(),
        tol_ns: 0,
        spans: Vec::new(),
    };
    // (p's index, r's aligned time, +1 toward p, -1 from p)
    let mut anchors: Vec<(u64, f64, f64)> = Vec::new();
    // Copies a frame has at both, in each one's order: paired in order
    // when both have as many (a resent frame seen twice at each).
    let (mut at_p, mut at_r) = (Vec::new(), Vec::new());
    for_each_group_all(groups, |g| {
        at_p.clear();
        at_r.clear();
        for e in g {
            if e.point() == p {
                at_p.push(*e);
            } else if e.point() == r {
                at_r.push(*e);
            }
        }
        if at_p.is_empty() || at_p.len() != at_r.len() {
            return;
        }
        for (a, b) in at_p.iter().zip(&at_r) {
            let Some(t) = probe.at(r, b.ts) else {
                continue;
            };
            let toward = (b.flow != NONE)
                .then(|| flows.forward(b.flow))
                .flatten()
                .map_or(0.0, |fwd| if fwd == (r < p) { 1.0 } else { -1.0 });
            anchors.push((a.ts, t as f64, toward));
        }
    });
    if anchors.len() < MIN_SHARED as usize {
        return None;
    }
    anchors.sort_by_key(|x| x.0);
    let step = (anchors.len() / 20_000).max(1);
    let inversions = |d: f64| {
        let sample: Vec<f64> = anchors
            .iter()
            .step_by(step)
            .map(|a| a.1 + a.2 * d)
            .collect();
        sample.windows(2).filter(|w| w[1] < w[0]).count()
    };
    let delay = (0..=400)
        .map(|k| f64::from(k) * 50.0)
        .min_by_key(|&d| inversions(d))
        .unwrap_or(0.0);
    let mut kept: Vec<(u64, f64)> = Vec::with_capacity(anchors.len());
    for a in anchors {
        let t = a.1 + a.2 * delay;
        if kept.last().is_none_or(|l| t >= l.1 && a.0 > l.0) {
            kept.push((a.0, t));
        }
    }
    let mut per_frame: Vec<f64> = kept
        .windows(2)
        .map(|w| (w[1].1 - w[0].1) / (w[1].0 - w[0].0) as f64)
        .collect();
    per_frame.sort_by(f64::total_cmp);
    let spacing = per_frame.get(per_frame.len() / 2).copied().unwrap_or(0.0);
    Some(Mapping::Order(kept, spacing))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::points::journey::AddrPair;

    fn flows_with(dirs: &[Option<bool>]) -> Flows {
        let mut flows = Flows::default();
        flows.pairs = dirs
            .iter()
            .map(|&lo_forward| AddrPair {
                seen: 0b11,
                lo_forward,
            })
            .collect();
        flows
    }

    #[test]
    fn decided_windows_are_what_a_second_pass_keeps() {
        let n = 2;
        // Pair 0 runs from its lower address in path order, pair 1 from
        // its higher one, pair 2 undecided.
        let flows = flows_with(&[Some(true), Some(false), None]);
        let mut cand = vec![CAND_EMPTY; 3 * 2 * n * n * FIT_WINDOWS];
        let mut put = |pair, from_lo, w, (u, tu, at_u), (v, tv, at_v)| {
            cand[cand_slot(pair, from_lo, n, 0, 1, w)] = Cand {
                w: Window { u, tu, v, tv },
                at_u,
                at_v,
            };
        };
        // Window 0: both pairs' forward ways reach u = 5; pair 1's first
        // in the entries. Their backward ways: pair 0's lower v.
        put(0, true, 0, (5.0, 10.0, 40), (9.0, 11.0, 40));
        put(1, false, 0, (5.0, 20.0, 30), (8.0, 21.0, 30));
        put(0, false, 0, (1.0, 30.0, 10), (2.0, 31.0, 10));
        put(1, true, 0, (0.5, 40.0, 20), (3.0, 41.0, 20));
        // Window 1: only the undecided pair.
        put(2, true, 1, (1.0, 50.0, 0), (1.0, 51.0, 0));
        let wins = decided_windows(&flows, &cand, n);
        let w0 = wins[FIT_WINDOWS];
        assert_eq!(
            (w0.u, w0.tu),
            (5.0, 20.0),
            "a tie goes to the first reached"
        );
        assert_eq!((w0.v, w0.tv), (2.0, 31.0), "the ways back give v");
        let w1 = wins[FIT_WINDOWS + 1];
        assert!(w1.u.is_infinite() && w1.v.is_infinite());
    }
}
