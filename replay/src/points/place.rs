//! Every frame's fate: where each point that missed a frame it should
//! have seen had capture loss, where each lost frame was lost, and the
//! report.
//!
//! A point is expected to see a frame when the frame's way passes it and
//! its capture was running then. Missing at a point before the last one
//! that saw it: capture loss there. Missing at every point after the last
//! one that saw it: lost on the segment after that point, unless the
//! receiver accepted it (a response at or past its PSN, before it was
//! sent again): then the points after it missed it. Where the next point
//! missed other frames around that time, the frame may have passed it
//! unseen: the segments after it are named too (`a>sw or sw>b`). A
//! request the receiver's own point saw and the receiver never took
//! (`walk.rs`), with no response from anywhere accepting it, was dropped
//! in the receiving stack.

use std::collections::HashMap;
use std::sync::Arc;

use rocescope_decoders::Endpoint;
use rocescope_decoders::psn::psn_diff;

use super::align::Aligned;
use super::group::MARK_SPAN_BITS;
use super::journey::{Followed, Journey, NONE, Role, UNMARKED, mark};
use super::walk::{self, Walked, Walker};
use super::{
    CaptureLoss, Fate, FlowPath, Loss, LossKind, MAX_CAPTURE_LOSSES, PathCell, PointInput,
    PointPaths, PointsConfig, PointsError, PointsReport, joined_all, latency,
};
use crate::store::prefault;

/// A frame is judged at a point only when the point's capture ran past
/// it by twice the longest one-way latency seen (its way to the point may
/// take that long), within these bounds.
const IN_FLIGHT_MIN_NS: i64 = 10_000;
const IN_FLIGHT_MAX_NS: i64 = 200_000;
/// A point that missed a frame within this of a loss may have missed the
/// lost frame too.
const LOSSY_NS: i64 = 1_000_000;

fn is_read_response(op: u8) -> bool {
    matches!(op, 0x0D..=0x10)
}

/// Whether the point at `pos` of `j`'s way was capturing when `j` passed.
fn expected(a: &Aligned, j: &Journey, point: usize, downstream: bool, in_flight: i64) -> bool {
    if !a.summaries[point].aligned {
        return false;
    }
    let (lo, hi) = a.spans[point];
    if downstream {
        j.t >= lo && j.t + in_flight <= hi
    } else {
        j.t - in_flight >= lo && j.t <= hi
    }
}

/// The responses of one QP as the points saw them: (time at the point
/// nearest the responder, PSN, accepts up to and including the PSN).
type Answers = Vec<(i64, u32, bool)>;

/// Whether the receiver accepted request `j` before it was sent again:
/// an ACK or READ response at or past its PSN, or a NAK asking for a
/// later one. Not when an earlier copy was accepted already, or reached
/// the receiver's point (a later response then says nothing of this
/// copy: a receiver that coalesces its ACKs answers late).
fn accepted(answers: &Answers, j: &Journey) -> bool {
    if j.earlier_reached {
        return false;
    }
    let accepts = |r: &(i64, u32, bool)| {
        let d = psn_diff(r.1, j.psn());
        if r.2 { d >= 0 } else { d > 0 }
    };
    let from = answers.partition_point(|r| r.0 <= j.first_copy());
    let at = answers.partition_point(|r| r.0 <= j.t);
    if answers[from.min(at)..at].iter().any(accepts) {
        return false;
    }
    answers[at..]
        .iter()
        .take_while(|r| r.0 < j.next_copy())
        .any(accepts)
}

/// A live session's horizon (in the first point's clock, less the
/// origin): the earliest of the points' last frames, and why it is where
/// it is; `None` when the points' captures are whole.
fn live_horizon(
    inputs: &[PointInput<'_>],
    a: &Aligned,
    cfg: &PointsConfig,
) -> Option<(i64, String)> {
    if !cfg.live {
        return None;
    }
    if let Some(p) = (0..inputs.len()).find(|&p| !a.summaries[p].aligned) {
        return Some((
            i64::MIN / 4,
            format!(
                "live: no frame judged lost until {} shares frames with the others",
                name(inputs, p as u8)
            ),
        ));
    }
    let (p, h) = (0..inputs.len())
        .map(|p| (p, a.spans[p].1))
        .min_by_key(|x| x.1)?;
    Some((
        h,
        format!(
            "live: frames judged up to {}'s last frame (the points behind it may still see the later ones)",
            name(inputs, p as u8)
        ),
    ))
}

fn name<'a>(inputs: &'a [PointInput<'_>], p: u8) -> &'a str {
    inputs.get(usize::from(p)).map_or("?", |i| i.name)
}

/// One point as the marking pass leaves it: each sighting's mark and
/// row, and its walk's findings (a host's point).
struct MarkedPoint {
    marks: Vec<u64>,
    rows: Vec<u64>,
    walked: Option<Walked>,
}

/// Point `p`'s marks written span by span from the journeys' records and,
/// each span while it is in the cache, its sightings read once: their
/// rows, the marks of those no journey took (their own flow: an unaligned
/// point's), and (`walk`: a host's point) the walk of its QPs' ends.
fn mark_point(
    inputs: &[PointInput<'_>],
    a: &Aligned,
    f: &Followed,
    p: usize,
    walk: bool,
) -> MarkedPoint {
    let sightings = inputs[p].sightings;
    let flows = &a.flows;
    let mut marks: Vec<u64> = bytemuck::allocation::zeroed_vec(sightings.len());
    let mut rows: Vec<u64> = Vec::with_capacity(sightings.len());
    // Fresh pages (the journeys' records still held): 2 MiB ones, a fault
    // each rather than one per 4 KiB.
    prefault::advise_huge(&mut marks);
    prefault::advise_huge(rows.spare_capacity_mut());
    let mut walker = walk.then(|| Walker::new(flows, a, p, inputs[p].conversations.len()));
    let first = f.first_span(p);
    let span = 1 << MARK_SPAN_BITS;
    for (k, (chunk, seen)) in marks
        .chunks_mut(span)
        .zip(sightings.chunks(span))
        .enumerate()
    {
        f.write_span(first + k, chunk);
        for (m, s) in chunk.iter_mut().zip(seen) {
            rows.push(s.row);
            if let Some(w) = &mut walker {
                w.step(s, f.journey_of_mark(*m));
            }
            if *m == UNMARKED {
                *m = super::own_mark(p, flows.flow_of(p, s.conv).unwrap_or(NONE));
            }
        }
    }
    MarkedPoint {
        marks,
        rows,
        walked: walker.map(Walker::finish),
    }
}

/// The lost journeys' fates (`fates`, by id; `is_lost`, a bit per
/// journey) patched into one point's marks: returns their (journey, row)
/// in the point's order.
fn patch_lost(
    m: &mut MarkedPoint,
    f: &Followed,
    fates: &[(u32, Fate)],
    is_lost: &[u64],
) -> Vec<(u32, u64)> {
    let mut found = Vec::new();
    for (mk, &row) in m.marks.iter_mut().zip(&m.rows) {
        // A frame no journey took has its own flow in its mark.
        if super::is_own_mark(*mk) {
            continue;
        }
        let id = f.journey_of_mark(*mk);
        let lost = is_lost
            .get(id as usize / 64)
            .is_some_and(|w| w >> (id % 64) & 1 != 0);
        if !lost {
            continue;
        }
        let Ok(k) = fates.binary_search_by_key(&id, |x| x.0) else {
            continue;
        };
        let jr = f.get(id);
        found.push((id, row));
        let cell = PathCell {
            seen: jr.seen,
            flow: jr.flow,
            fate: fates[k].1,
        };
        *mk = mark(*mk as u32, &cell);
    }
    found
}

pub(super) fn place(
    inputs: &[PointInput<'_>],
    a: &Aligned,
    f: &mut Followed,
    cfg: &PointsConfig,
) -> Result<PointsReport, PointsError> {
    let n = inputs.len();
    let flows = &a.flows;
    let longest = f
        .latency()
        .iter()
        .flat_map(|l| l.iter())
        .map(|s| i64::from(s.ns))
        .max()
        .unwrap_or(0);
    let in_flight = (2 * longest + IN_FLIGHT_MIN_NS).clamp(IN_FLIGHT_MIN_NS, IN_FLIGHT_MAX_NS);
    // The latency's percentiles and series on a thread of their own while
    // the frames are placed.
    let samples: Vec<Vec<super::journey::LatSample>> = f
        .parts
        .iter_mut()
        .map(|p| std::mem::take(&mut p.latency))
        .collect();
    let names: Vec<String> = inputs.iter().map(|p| p.name.to_owned()).collect();
    let (t0, bins) = (a.t0, super::journey::series_bins(a, cfg));
    let latency_thread = std::thread::Builder::new()
        .name("rocescope-points".into())
        .spawn({
            let names = names.clone();
            move || {
                crate::contain::contain(|| {
                    let slices: Vec<&[super::journey::LatSample]> =
                        samples.iter().map(Vec::as_slice).collect();
                    latency::segments(&slices, &names, bins, t0)
                })
            }
        });
    // Each point's marks written span by span on a thread of its own,
    // and in the same pass, each span of its sightings read once while
    // its marks are in the cache: its rows, the marks of frames no
    // journey took (their own flow), and a host's walk (`walk.rs`).
    let mut marked: Vec<MarkedPoint> = std::thread::scope(|sc| {
        let f: &Followed = f;
        let handles: Vec<_> = (0..n)
            .map(|p| sc.spawn(move || mark_point(inputs, a, f, p, walk::walks(p, n, a))))
            .collect();
        joined_all(handles, "marking")
    })?;
    f.drop_records();
    let w = walk::merge(marked.iter_mut().filter_map(|m| m.walked.take()));
    let expected =
        |a: &Aligned, j: &Journey, p: usize, down: bool| expected(a, j, p, down, in_flight);
    let last_host = |flow: u32| {
        flows.paths[flow as usize]
            .as_slice()
            .last()
            .is_some_and(|&p| p == 0 || usize::from(p) + 1 == n)
    };
    // The requests the receiver did not take, by journey.
    let mut not_taken: Vec<(u32, &'static str, bool)> = w.not_taken.clone();
    not_taken.sort_unstable_by_key(|x| x.0);
    not_taken.dedup_by_key(|x| x.0);
    let taken_not = |id: u32| {
        not_taken
            .binary_search_by_key(&id, |x| x.0)
            .ok()
            .map(|k| (not_taken[k].1, not_taken[k].2))
    };
    // One pass, each part's journeys on a thread of its own: capture loss
    // before the last point that saw each frame; the frames that vanished
    // after it (or that the receiver did not take), and the QPs whose
    // responses they need; each journey's flow for the paths.
    let horizon = live_horizon(inputs, a, cfg);
    let horizon_t = horizon.as_ref().map(|h| h.0);
    // What each flow's journeys are judged by: the points on its way (as
    // a mask), whether it ends at a host's point, whether its last point
    // ends its requests' way (no `virtual_end`).
    let facts: Vec<(u16, bool, bool)> = (0..flows.paths.len())
        .map(|fl| {
            let mask = flows.paths[fl]
                .as_slice()
                .iter()
                .fold(0u16, |m, &p| m | 1 << p);
            let host = last_host(fl as u32);
            (mask, host, host || flows.role[fl].1 != Role::Request)
        })
        .collect();
    let flagged_ids: Vec<u32> = not_taken.iter().map(|x| x.0).collect();
    let judge = Judge {
        a,
        facts: &facts,
        flagged: &flagged_ids,
        horizon_t,
        in_flight,
    };
    let scans: Vec<Scan> = std::thread::scope(|sc| {
        let judge = &judge;
        let handles: Vec<_> = f
            .parts
            .iter()
            .zip(f.bases())
            .map(|(part, &base)| sc.spawn(move || judge.scan(&part.journeys, base)))
            .collect();
        joined_all(handles, "placing")
    })?;
    let mut missed: Vec<Vec<i64>> = vec![Vec::new(); n];
    let mut capture_losses = Vec::new();
    let mut vanished: Vec<(u32, usize)> = Vec::new();
    // The QPs whose responses are needed.
    let mut ask: Vec<bool> = vec![false; flows.qps.len()];
    let mut journey_flows = Vec::with_capacity(scans.len());
    for scan in scans {
        for (p, t) in scan.missed {
            missed[usize::from(p)].push(t);
        }
        let room = MAX_CAPTURE_LOSSES.saturating_sub(capture_losses.len());
        capture_losses.extend(scan.capture_losses.into_iter().take(room));
        vanished.extend(scan.vanished);
        for qp in scan.ask {
            if let Some(x) = ask.get_mut(qp as usize) {
                *x = true;
            }
        }
        journey_flows.push(scan.flows);
    }
    let mut note_missed = |p: u8, j: &Journey, missed: &mut Vec<Vec<i64>>| {
        missed[usize::from(p)].push(j.t);
        if capture_losses.len() < MAX_CAPTURE_LOSSES {
            capture_losses.push(capture_loss(a, p, j));
        }
    };
    // Those QPs' responses, from every point, in time order.
    let mut answers: Vec<Answers> = vec![Answers::new(); flows.qps.len()];
    if ask.contains(&true) {
        // By flow: the responses of a QP asked for.
        let asked: Vec<bool> = flows
            .role
            .iter()
            .map(|&(qp, role)| role == Role::Response && ask.get(qp as usize) == Some(&true))
            .collect();
        for j in f.parts.iter().flat_map(|p| &p.journeys) {
            if !asked[j.flow as usize] {
                continue;
            }
            let qp = flows.role[j.flow as usize].0 as usize;
            let ack = j.syndrome != super::tap::NO_SYNDROME && j.syndrome & 0x60 == 0;
            let nak_seq = j.syndrome != super::tap::NO_SYNDROME && j.syndrome == 0x60;
            if ack || is_read_response(j.opcode()) {
                answers[qp].push((j.t, j.psn(), true));
            } else if nak_seq {
                answers[qp].push((j.t, j.psn(), false));
            }
        }
        for v in &mut answers {
            v.sort_unstable_by_key(|r| r.0);
        }
    }
    let empty = Answers::new();
    // The lost journeys' fates (the others' is the usual), by id.
    let mut fates: Vec<(u32, Fate)> = Vec::new();
    // Which vanished requests the receiver accepted after all.
    let mut lost: Vec<(u32, usize)> = Vec::new();
    let mut stack: Vec<(u32, &'static str)> = Vec::new();
    for &(id, last_seen) in &vanished {
        let j = f.get(id);
        let path = flows.paths[j.flow as usize].as_slice();
        let (qp, role) = flows.role[j.flow as usize];
        let took = role == Role::Request && accepted(answers.get(qp as usize).unwrap_or(&empty), j);
        if let Some((why, said)) = taken_not(id) {
            if said || !took {
                stack.push((id, why));
            }
            continue;
        }
        if took {
            // It got there: the points after the last that saw it missed it.
            for &p in &path[last_seen + 1..] {
                if expected(a, j, usize::from(p), true) {
                    note_missed(p, j, &mut missed);
                }
            }
        } else {
            lost.push((id, last_seen));
        }
    }
    for v in &mut missed {
        v.sort_unstable();
    }
    let lossy_near = |p: u8, t: i64| {
        let v = &missed[usize::from(p)];
        let k = v.partition_point(|&x| x < t - LOSSY_NS);
        v.get(k).is_some_and(|&x| x <= t + LOSSY_NS)
    };
    let mut losses = Vec::new();
    let mut loss_ids: Vec<u32> = Vec::new();
    for &(id, last_seen) in &lost {
        let j = *f.get(id);
        let key = flows.keys[j.flow as usize];
        let path = flows.paths[j.flow as usize].as_slice();
        let from = path[last_seen];
        let dst_name = || Endpoint(key.dst).to_string();
        let mut candidates = Vec::new();
        let mut pos = last_seen;
        let mut at = from;
        loop {
            let next = path[pos + 1..]
                .iter()
                .position(|&p| expected(a, &j, usize::from(p), true))
                .map(|k| pos + 1 + k);
            match next {
                Some(k) => {
                    let q = path[k];
                    candidates.push(format!("{}>{}", name(inputs, at), name(inputs, q)));
                    if !lossy_near(q, j.t) {
                        break;
                    }
                    // It may have passed `q` unseen.
                    if k + 1 == path.len() {
                        if last_host(j.flow) {
                            if flows.role[j.flow as usize].1 == Role::Request {
                                candidates.push(name(inputs, q).to_owned());
                            }
                        } else {
                            candidates.push(format!("{}>{}", name(inputs, q), dst_name()));
                        }
                        break;
                    }
                    pos = k;
                    at = q;
                }
                None => {
                    if !last_host(j.flow) {
                        candidates.push(format!("{}>{}", name(inputs, at), dst_name()));
                    }
                    break;
                }
            }
        }
        if candidates.is_empty() {
            continue;
        }
        let seen_names: Vec<&str> = path[..=last_seen]
            .iter()
            .filter(|&&p| j.seen & (1 << p) != 0)
            .map(|&p| name(inputs, p))
            .collect();
        let mut evidence = format!("seen at {}", seen_names.join(", "));
        let after: Vec<&str> = path[last_seen + 1..]
            .iter()
            .filter(|&&p| expected(a, &j, usize::from(p), true))
            .map(|&p| name(inputs, p))
            .collect();
        if !after.is_empty() {
            evidence.push_str(&format!(
                ", never at {} (capturing then)",
                after.join(" or ")
            ));
        }
        if flows.role[j.flow as usize].1 == Role::Request {
            evidence.push_str("; no response accepted it");
        }
        if candidates.len() > 1 {
            evidence.push_str(&format!(
                "; {} missed other frames around then, so it may have passed unseen",
                after.first().copied().unwrap_or("the next point")
            ));
        }
        fates.push((id, Fate::LostAfter(last_seen as u8)));
        loss_ids.push(id);
        losses.push(loss(
            inputs,
            a,
            f,
            id,
            candidates.join(" or "),
            if candidates.len() > 1 {
                LossKind::Either
            } else {
                LossKind::Wire
            },
            evidence,
        ));
    }
    for &(id, why) in &stack {
        let j = *f.get(id);
        let path = flows.paths[j.flow as usize].as_slice();
        let Some(&r) = path.last() else { continue };
        fates.push((id, Fate::Stack));
        loss_ids.push(id);
        losses.push(loss(
            inputs,
            a,
            f,
            id,
            name(inputs, r).to_owned(),
            LossKind::Stack,
            format!("seen at {}, its receiver; {why}", name(inputs, r)),
        ));
    }
    // The lost frames' fates patched into their marks (the others' is
    // the usual, marked where the journeys were made), their rows kept for
    // their losses (the journeys keep no list of their members): each
    // point's marks read once more on a thread of its own, only when a
    // frame was lost.
    fates.sort_unstable_by_key(|x| x.0);
    let journeys = Arc::new(super::JourneyFlows::new(f.bases().to_vec(), journey_flows));
    if !fates.is_empty() {
        // A bit per journey: the few lost found among the marks at a glance.
        let mut is_lost = vec![0u64; f.len().div_ceil(64)];
        for &(id, _) in &fates {
            is_lost[id as usize / 64] |= 1 << (id % 64);
        }
        let f: &Followed = f;
        let (fates, is_lost) = (&fates, &is_lost);
        let found: Vec<Vec<(u32, u64)>> = std::thread::scope(|sc| {
            let handles: Vec<_> = marked
                .iter_mut()
                .map(|m| sc.spawn(move || patch_lost(m, f, fates, is_lost)))
                .collect();
            joined_all(handles, "paths of a point")
        })?;
        // The lost frames' rows, point by point, each in its capture's order.
        let mut rows: HashMap<u32, Vec<(u8, u64)>> =
            loss_ids.iter().map(|&id| (id, Vec::new())).collect();
        for (p, found) in found.iter().enumerate() {
            for (id, row) in found {
                if let Some(v) = rows.get_mut(id) {
                    v.push((p as u8, *row));
                }
            }
        }
        for (l, id) in losses.iter_mut().zip(&loss_ids) {
            if let Some(r) = rows.remove(id) {
                l.rows = r;
            }
        }
    }
    losses.sort_by_key(|l| (l.ts_ns, l.dest_qp, l.psn));
    capture_losses.sort_by_key(|c| (c.ts_ns, c.point));
    let paths: Vec<PointPaths> = marked
        .into_iter()
        .map(|m| PointPaths::new(m.rows, m.marks, Arc::clone(&journeys)))
        .collect();
    // Told as a warning in its own words, the rest of the report kept.
    let (segments, latency_failed) = match latency_told(latency_thread) {
        Ok(s) => (s, None),
        Err(why) => (Vec::new(), Some(why)),
    };
    let mut summaries = a.summaries.clone();
    for (p, v) in missed.iter().enumerate() {
        summaries[p].capture_loss = v.len() as u64;
    }
    let mut warnings = a.warnings.clone();
    if let Some((_, why)) = horizon.and_then(|(h, why)| {
        let last = a.spans.iter().map(|s| s.1).max().unwrap_or(h);
        (h + in_flight < last).then_some((h, why))
    }) {
        warnings.push(why);
    }
    if let Some(why) = latency_failed {
        warnings.push(format!(
            "the segments' latency could not be measured ({why})"
        ));
    }
    if flows.undecided > 0 {
        warnings.push(format!(
            "{} address pair(s) went one way only between the points: their direction is taken in the points' order",
            flows.undecided
        ));
    }
    for s in &segments {
        if s.p50_ns < -a.tol_ns {
            let (from, to) = (name(inputs, s.from), name(inputs, s.to));
            warnings.push(format!(
                "{to} sees frames before {from} does on {} (median {} ns): are the points given in path order?",
                s.name, s.p50_ns
            ));
        }
    }
    Ok(PointsReport {
        points: summaries,
        losses,
        capture_losses,
        segments,
        episodes: w.episodes(a),
        flows: flows
            .keys
            .iter()
            .zip(&flows.paths)
            .map(|(k, p)| FlowPath {
                src: k.src,
                dst: k.dst,
                dest_qp: k.dest_qp,
                points: p.as_slice().to_vec(),
            })
            .collect(),
        paths,
        journeys: f.len() as u64,
        warnings,
        t0_ns: a.t0,
    })
}

/// A frame point `p` missed, as the report lists it.
fn capture_loss(a: &Aligned, p: u8, j: &Journey) -> CaptureLoss {
    CaptureLoss {
        point: p,
        ts_ns: (a.t0 as i64 + j.t).max(0) as u64,
        dest_qp: a.flows.keys[j.flow as usize].dest_qp,
        psn: j.psn(),
        opcode: j.opcode(),
    }
}

/// What the first pass over the journeys judges them by.
struct Judge<'a> {
    a: &'a Aligned,
    /// Per flow: the points on its way (a mask), it ends at a host's
    /// point, its last point ends its requests' way.
    facts: &'a [(u16, bool, bool)],
    /// The journeys the receiver did not take, in order.
    flagged: &'a [u32],
    horizon_t: Option<i64>,
    in_flight: i64,
}

/// What the first pass found among one part's journeys, in their order.
#[derive(Debug, Default)]
struct Scan {
    /// (point, journey's time) of each frame a point missed.
    missed: Vec<(u8, i64)>,
    /// The first [`MAX_CAPTURE_LOSSES`] of them.
    capture_losses: Vec<CaptureLoss>,
    /// (journey, the position of the last point that saw it).
    vanished: Vec<(u32, usize)>,
    /// QPs whose responses are needed.
    ask: Vec<u32>,
    /// Each journey's flow.
    flows: Vec<u32>,
}

impl Judge<'_> {
    /// The part whose journeys start at id `base`.
    fn scan(&self, journeys: &[Journey], base: u32) -> Scan {
        let (a, flows) = (self.a, &self.a.flows);
        let mut out = Scan {
            flows: Vec::with_capacity(journeys.len()),
            ..Scan::default()
        };
        let from = self.flagged.partition_point(|&id| id < base);
        let mut next_flagged = self.flagged[from..].iter().copied().peekable();
        for (k, j) in journeys.iter().enumerate() {
            out.flows.push(j.flow);
            let id = base + k as u32;
            let flagged = next_flagged.next_if_eq(&id).is_some();
            if self.horizon_t.is_some_and(|h| j.t + self.in_flight > h) {
                // Live: a point has not run past it yet.
                continue;
            }
            let (mask, host, ends) = self.facts[j.flow as usize];
            if j.seen & mask == mask && ends && !flagged {
                // The usual frame: seen at every point on its way, none
                // missed, none after the last to vanish before.
                continue;
            }
            let path = flows.paths[j.flow as usize].as_slice();
            if path.len() < 2 && host {
                continue;
            }
            let last_seen = path
                .iter()
                .rposition(|&p| j.seen & (1 << p) != 0)
                .unwrap_or(0);
            for &p in &path[..last_seen] {
                if j.seen & (1 << p) == 0 && expected(a, j, usize::from(p), false, self.in_flight) {
                    out.missed.push((p, j.t));
                    if out.capture_losses.len() < MAX_CAPTURE_LOSSES {
                        out.capture_losses.push(capture_loss(a, p, j));
                    }
                }
            }
            let (qp, role) = flows.role[j.flow as usize];
            let beyond = path[last_seen + 1..]
                .iter()
                .any(|&p| expected(a, j, usize::from(p), true, self.in_flight));
            let virtual_end = last_seen + 1 == path.len() && !ends;
            if beyond || virtual_end || flagged {
                out.vanished.push((id, last_seen));
                if role == Role::Request && (qp as usize) < flows.qps.len() {
                    out.ask.push(qp);
                }
            }
        }
        out
    }
}

fn loss(
    inputs: &[PointInput<'_>],
    a: &Aligned,
    f: &Followed,
    id: u32,
    segment: String,
    kind: LossKind,
    evidence: String,
) -> Loss {
    let j = f.get(id);
    let key = a.flows.keys[j.flow as usize];
    let _ = inputs;
    Loss {
        src: key.src,
        dst: key.dst,
        dest_qp: key.dest_qp,
        psn: j.psn(),
        opcode: j.opcode(),
        segment,
        kind,
        ts_ns: (a.t0 as i64 + j.t_last()).max(0) as u64,
        seen: j.seen,
        // Filled in from the points' marks (`place`).
        rows: Vec::new(),
        evidence,
        request: a.flows.role[j.flow as usize].1 == Role::Request,
    }
}

/// The latency's thread: its segments, its error, or its panic's words.
type LatencyThread =
    std::thread::JoinHandle<Result<Result<Vec<super::SegmentLatency>, PointsError>, String>>;

/// What the latency's thread came to: its segments, or why not in words
/// (its error, or its panic's words and place).
fn latency_told(
    thread: std::io::Result<LatencyThread>,
) -> Result<Vec<super::SegmentLatency>, String> {
    match thread {
        Err(e) => Err(format!("its thread could not start: {e}")),
        Ok(t) => match t.join() {
            Ok(Ok(Ok(s))) => Ok(s),
            Ok(Ok(Err(e))) => Err(e.to_string()),
            Ok(Err(why)) => Err(format!(
                "its thread failed: {why}; a rocescope bug: please report it"
            )),
            Err(_) => Err("its thread failed; a rocescope bug: please report it".into()),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A latency thread that panics is told in the panic's words, never
    /// read as "no segments".
    #[test]
    fn a_failed_latency_thread_is_told_in_its_words() {
        let ran = std::thread::Builder::new().spawn(|| {
            crate::contain::contain(
                || -> Result<Vec<super::super::SegmentLatency>, PointsError> {
                    panic!("the latency of the test fails")
                },
            )
        });
        let why = latency_told(ran).expect_err("a failure");
        assert!(
            why.starts_with("its thread failed: ") && why.contains("the latency of the test fails"),
            "{why}"
        );
        let fine = std::thread::Builder::new().spawn(|| crate::contain::contain(|| Ok(Vec::new())));
        assert_eq!(latency_told(fine).map(|s| s.len()), Ok(0));
    }
}
