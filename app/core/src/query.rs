//! Read-only queries the front ends share: what the ladder of a QP shows,
//! the QP and episode tables' rows as text, times relative to the capture.
//! UI-free, so that the TUI and the GUI compute them once; the text that
//! needs no model is `rocescope_replay::text` (re-exported here).

use rocescope_decoders::analysis::{Episode, QpReport, Report};
use rocescope_replay::TimeBase;
use rocescope_replay::points::PointsReport;
use rocescope_replay::store::Row;
use rocescope_replay::text;
// The model-free text lives below the core, shared with the report.
pub use rocescope_replay::text::{
    EPISODE_COLUMNS, QP_COLUMNS, RowClass, addr, duration_text, field_value, flag_text, naks,
    resample_rate, row_class, short_opcode, size_text, state_rgb, time_bar, time_by_state_text,
};

use crate::Model;

/// Store conversation ids of the two directions of report QP `q`:
/// (requests, responses).
pub fn qp_conversations(model: &Model, q: &QpReport) -> (Option<u32>, Option<u32>) {
    let convs = model.store.conversations();
    let req = convs
        .iter()
        .position(|c| {
            c.key.src == q.requester && c.key.dst == q.responder && c.key.dest_qp == q.dest_qp
        })
        .map(|i| i as u32);
    let resp = q.requester_qp.and_then(|rq| {
        convs
            .iter()
            .position(|c| {
                c.key.src == q.responder && c.key.dst == q.requester && c.key.dest_qp == rq
            })
            .map(|i| i as u32)
    });
    (req, resp)
}

/// One arrow of a ladder diagram.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LadderRow {
    /// Row number in the store ([`UNSEEN_ROW`] for a frame the first
    /// point never saw).
    pub index: u64,
    pub row: Row,
    /// Requester -> responder (a request); otherwise a response or ACK.
    pub rightward: bool,
    /// A frame lost before it reached the first point (a response lost on
    /// `sw>a`): not in its capture, drawn from the points that saw it.
    pub unseen: Option<LaneSpan>,
}

/// [`LadderRow::index`] of a frame the first point never saw.
pub const UNSEEN_ROW: u64 = u64::MAX;

impl LadderRow {
    /// Where its arrow runs across the capture points' lanes.
    pub fn lane_span(&self, model: &Model) -> Option<LaneSpan> {
        self.unseen.or_else(|| lane_span(model, self.index))
    }
}

/// The QP's frames lost before they reached the first point, with their
/// lanes, between `from_ns` and `to_ns` (the first point's clock): the
/// ladder draws them among the first point's frames.
fn unseen_losses(model: &Model, q: &QpReport, from_ns: u64, to_ns: u64) -> Vec<LadderRow> {
    let Some(r) = model.points() else {
        return Vec::new();
    };
    r.losses
        .iter()
        .filter(|l| l.ts_ns >= from_ns && l.ts_ns <= to_ns && l.seen & 1 == 0)
        .filter_map(|l| {
            let request = l.src == q.requester && l.dst == q.responder && l.dest_qp == q.dest_qp;
            let response = l.src == q.responder
                && l.dst == q.requester
                && q.requester_qp.is_none_or(|qpn| qpn == l.dest_qp);
            if !request && !response {
                return None;
            }
            let way = &r
                .flows
                .iter()
                .find(|f| f.src == l.src && f.dst == l.dst && f.dest_qp == l.dest_qp)?
                .points;
            let (&first, &last) = (way.first()?, way.last()?);
            let to = last_seen(way, l.seen).unwrap_or(first);
            let rightward = rightward(way, first);
            let stack = l.kind == rocescope_replay::points::LossKind::Stack;
            Some(LadderRow {
                index: UNSEEN_ROW,
                row: Row {
                    ts_ns: l.ts_ns,
                    file_offset: 0,
                    caplen: 0,
                    origlen: 0,
                    conversation: rocescope_replay::store::NO_CONVERSATION,
                    opcode: l.opcode,
                    psn: l.psn,
                    flags: rocescope_replay::store::Flags::ROCE,
                    port: 0,
                    dir: None,
                },
                rightward: request,
                unseen: Some(LaneSpan {
                    from: usize::from(first),
                    to: usize::from(if stack { last } else { to }),
                    rightward,
                    vanished: true,
                }),
            })
        })
        .collect()
}

/// The QP the ladder shows: the selected one, else the first.
pub fn ladder_qp(model: &Model) -> Option<&QpReport> {
    let report = model.report();
    model
        .selected_qp
        .and_then(|i| report.qps.get(i as usize))
        .or(report.qps.first())
}

/// The ladder's heading: the QP as the tables name it, its route, the
/// requester's QPN and the QP's state at the time cursor.
pub fn ladder_title(model: &Model) -> Option<String> {
    ladder_title_within(model, usize::MAX)
}

/// [`ladder_title`] in at most `width` characters where it can be: the
/// requester's QPN is left out first, as the least needed part.
pub fn ladder_title_within(model: &Model, width: usize) -> Option<String> {
    let report = model.report();
    let q = ladder_qp(model)?;
    let index = report.qps.iter().position(|r| std::ptr::eq(r, q))?;
    let state = qp_state(report, index, model.cursor_ns());
    let full = format!(
        "{} {} (requester QP {}), {state} at the cursor",
        text::qp_name(q),
        text::qp_route(q),
        q.requester_qp.map_or("?".into(), text::qpn),
    );
    if full.chars().count() <= width {
        return Some(full);
    }
    Some(format!(
        "{} {}, {state} at the cursor",
        text::qp_name(q),
        text::qp_route(q)
    ))
}

/// Up to `count` packets of QP `q` (both directions) around the selected
/// row, up to the time cursor, scanning the store in chunks.
pub fn ladder_rows(model: &Model, q: &QpReport, count: usize) -> Vec<LadderRow> {
    let (req, resp) = qp_conversations(model, q);
    let horizon = model.horizon();
    let center = model.selected.unwrap_or(0).min(horizon.saturating_sub(1));
    let ours = |r: &Row| Some(r.conversation) == req || Some(r.conversation) == resp;
    let mut before = Vec::new();
    let mut after = Vec::new();
    let mut buf = Vec::new();
    let chunk = 2048u64;
    // Bounded scans: a QP that is rare in a huge capture stops after this many rows.
    let max_scan = 1u64 << 22;
    let mut lo = center;
    while before.len() < count / 2 && lo > 0 && center - lo < max_scan {
        let a = lo.saturating_sub(chunk);
        buf.clear();
        model.store.rows(a..lo, &mut buf);
        for (k, r) in buf.iter().enumerate().rev() {
            if ours(r) {
                before.push((a + k as u64, *r));
                if before.len() >= count / 2 {
                    break;
                }
            }
        }
        lo = a;
    }
    before.reverse();
    let mut hi = center;
    while after.len() < count - before.len() && hi < horizon && hi - center < max_scan {
        let b = (hi + chunk).min(horizon);
        buf.clear();
        model.store.rows(hi..b, &mut buf);
        for (k, r) in buf.iter().enumerate() {
            if ours(r) {
                after.push((hi + k as u64, *r));
                if after.len() >= count - before.len() {
                    break;
                }
            }
        }
        hi = b;
    }
    before
        .into_iter()
        .chain(after)
        .map(|(index, row)| LadderRow {
            index,
            row,
            rightward: Some(row.conversation) == req,
            unseen: None,
        })
        .collect::<Vec<_>>()
        .merge_unseen(model, q, count)
}

/// The ladder's rows with the QP's frames the first point never saw in
/// their time order, as many as fit.
trait MergeUnseen {
    fn merge_unseen(self, model: &Model, q: &QpReport, count: usize) -> Vec<LadderRow>;
}

impl MergeUnseen for Vec<LadderRow> {
    fn merge_unseen(mut self, model: &Model, q: &QpReport, count: usize) -> Vec<LadderRow> {
        let (Some(a), Some(b)) = (self.first(), self.last()) else {
            return self;
        };
        let extra = unseen_losses(model, q, a.row.ts_ns, b.row.ts_ns);
        if extra.is_empty() {
            return self;
        }
        self.extend(extra);
        // Stable: a lost frame after the frames of its time.
        self.sort_by_key(|r| r.row.ts_ns);
        self.truncate(count.max(1));
        self
    }
}

/// Time relative to the first packet, in seconds with ns digits (`#N` for
/// captures whose timestamps are packet indices).
pub fn rel_time(model: &Model, ts_ns: u64) -> String {
    let t0 = model.store.stats().first_ts_ns.unwrap_or(0);
    text::rel_time_text(t0, ts_ns, model.store.time_base() == TimeBase::Ordinal)
}

/// QP `qp`'s state at `ts_ns` (the time cursor), as the QP views show it:
/// what it is doing then, not what it ever did; from the runs its time by
/// state is summed from.
pub fn qp_state(report: &Report, qp: usize, ts_ns: u64) -> &'static str {
    report
        .time_state_at(qp as u32, ts_ns)
        .map_or("-", |s| s.name())
}

/// The ladder QP's time state at `ts_ns` (the ladder's state band), from
/// the runs its time by state sums.
pub fn ladder_state(model: &Model, ts_ns: u64) -> Option<rocescope_decoders::analysis::TimeState> {
    let report = model.report();
    let q = ladder_qp(model)?;
    let index = report.qps.iter().position(|r| std::ptr::eq(r, q))?;
    report.time_state_at(index as u32, ts_ns)
}

/// The QP table's rows as text, states as at the time cursor.
pub fn qp_rows(model: &Model) -> Vec<[String; 11]> {
    let report = model.report();
    let ts_ns = model.cursor_ns();
    (0..report.qps.len())
        .filter_map(|i| text::qp_cells(report, i, ts_ns))
        .collect()
}

/// Episode `e`'s row as text, its start as the packet list writes times.
pub fn episode_row(model: &Model, e: &Episode) -> [String; 8] {
    text::episode_cells(model.report(), e, rel_time(model, e.start_ns))
}

/// Why the packet list is empty, in a few words (both front ends show it
/// where the rows would be): nothing matches the filter (or nothing yet,
/// while its scan runs), the replay clock is before the first packet, or
/// the source has given nothing (yet).
pub fn empty_list_text(model: &Model) -> String {
    if model.filter().is_some() {
        let (scanned, len) = model.filter_progress();
        return if scanned < len {
            format!("no match yet (filtering {}%)", scanned * 100 / len.max(1))
        } else {
            "no packet matches the filter".into()
        };
    }
    if model.store.len() > model.store.first_row() {
        return "none before the time cursor".into();
    }
    if model.store.progress().complete {
        "none in this source".into()
    } else {
        "none yet".into()
    }
}

/// One line of the Losses view: a lost frame as placed, or a frame one
/// point's capture missed (capture loss, told apart from wire loss).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LossItem {
    /// `PointsReport::losses[i]`.
    Placed(usize),
    /// `PointsReport::capture_losses[i]`.
    Missed(usize),
}

/// Column headings of the Losses view.
pub const LOSS_VIEW_COLUMNS: [&str; 8] = [
    "segment", "time", "flow", "QP", "opcode", "PSN", "seen at", "evidence",
];

/// The Losses view's lines: the placed losses segment by segment (in the
/// order of the latency table, `a>sw or sw>b` after them), each segment's
/// by time, then each point's capture loss by time. Computed once per
/// analysis (the model keeps it).
pub fn loss_items(r: &PointsReport) -> Vec<LossItem> {
    let order: Vec<String> = text::losses_by_segment(r)
        .into_iter()
        .map(|(s, _, _)| s)
        .collect();
    let mut placed: Vec<usize> = (0..r.losses.len()).collect();
    placed.sort_by_key(|&i| {
        let l = &r.losses[i];
        (
            order
                .iter()
                .position(|s| *s == l.segment)
                .unwrap_or(usize::MAX),
            l.ts_ns,
        )
    });
    let mut missed: Vec<usize> = (0..r.capture_losses.len()).collect();
    missed.sort_by_key(|&i| (r.capture_losses[i].point, r.capture_losses[i].ts_ns));
    placed
        .into_iter()
        .map(LossItem::Placed)
        .chain(missed.into_iter().map(LossItem::Missed))
        .collect()
}

fn point_name(r: &PointsReport, p: u8) -> &str {
    r.points
        .get(usize::from(p))
        .map_or("?", |s| s.name.as_str())
}

/// The place an item names: its segment (`a>sw`, `b` for the receiving
/// stack), or `capture sw` for a frame point `sw` missed.
pub fn loss_segment(r: &PointsReport, item: LossItem) -> String {
    match item {
        LossItem::Placed(i) => r
            .losses
            .get(i)
            .map_or_else(String::new, |l| l.segment.clone()),
        LossItem::Missed(i) => r.capture_losses.get(i).map_or_else(String::new, |c| {
            format!("capture {}", point_name(r, c.point))
        }),
    }
}

/// An item's cells under [`LOSS_VIEW_COLUMNS`], its time as the packet
/// list writes the first point's times.
pub fn loss_row(model: &Model, r: &PointsReport, item: LossItem) -> [String; 8] {
    let segment = loss_segment(r, item);
    match item {
        LossItem::Placed(i) => {
            let Some(l) = r.losses.get(i) else {
                return Default::default();
            };
            [
                segment,
                rel_time(model, l.ts_ns),
                format!("{} > {}", addr(l.src), addr(l.dst)),
                text::qpn(l.dest_qp),
                short_opcode(l.opcode),
                l.psn.to_string(),
                text::points_named(r, l.seen),
                l.evidence.clone(),
            ]
        }
        LossItem::Missed(i) => {
            let Some(c) = r.capture_losses.get(i) else {
                return Default::default();
            };
            let name = point_name(r, c.point);
            [
                segment,
                rel_time(model, c.ts_ns),
                "-".to_owned(),
                text::qpn(c.dest_qp),
                short_opcode(c.opcode),
                c.psn.to_string(),
                format!("not {name}"),
                format!(
                    "{name}'s capture missed it; the points around it saw it (not lost on the wire)"
                ),
            ]
        }
    }
}

/// What the Losses view says of an item below the list: its place in
/// words (wire, receiving stack, either), its evidence, and where each
/// point that saw it has it.
pub fn loss_evidence(r: &PointsReport, item: LossItem) -> Vec<String> {
    match item {
        LossItem::Placed(i) => {
            let Some(l) = r.losses.get(i) else {
                return Vec::new();
            };
            let what = if l.request { "request" } else { "response" };
            let place = match l.kind {
                rocescope_replay::points::LossKind::Wire => {
                    format!("lost on the wire between the points of {}", l.segment)
                }
                rocescope_replay::points::LossKind::Stack => format!(
                    "dropped in {}'s receiving stack: its point saw it, the receiver acted as if it had not",
                    l.segment
                ),
                rocescope_replay::points::LossKind::Either => {
                    format!("lost at {}: no evidence tells these apart", l.segment)
                }
            };
            let rows: Vec<String> = l
                .rows
                .iter()
                .map(|&(p, row)| format!("{} frame {}", point_name(r, p), row + 1))
                .collect();
            vec![
                format!("A {what} {place}."),
                format!("Evidence: {}.", l.evidence),
                if rows.is_empty() {
                    "Seen at no point (its loss is known from the receiver's behaviour).".into()
                } else {
                    format!("Where it was seen: {}.", rows.join(", "))
                },
            ]
        }
        LossItem::Missed(i) => {
            let Some(c) = r.capture_losses.get(i) else {
                return Vec::new();
            };
            let name = point_name(r, c.point);
            vec![
                format!("Capture loss at {name}, not wire loss."),
                format!(
                    "Evidence: {name} missed a frame the points around it saw, or that the receiver acknowledged."
                ),
            ]
        }
    }
}

/// Where the packet list (the first point's capture) has an item: the
/// frame's row when the first point saw it, else `None` (the caller seeks
/// to its time).
pub fn loss_first_row(r: &PointsReport, item: LossItem) -> Option<u64> {
    match item {
        LossItem::Placed(i) => r
            .losses
            .get(i)?
            .rows
            .iter()
            .find(|(p, _)| *p == 0)
            .map(|&(_, row)| row),
        LossItem::Missed(_) => None,
    }
}

/// The packet list's Path cell of row `index` (a frame of the first
/// point's capture): the points that saw it in path order, those that
/// missed it in brackets, `x` where it vanished (`a sw b`, `a [sw] b`,
/// `a x`); `None` without points, empty for a frame no point follows
/// (not RoCE).
pub fn path_cell(model: &Model, index: u64) -> Option<String> {
    let r = model.points()?;
    Some(
        r.path_at(0, index)
            .map(|c| r.path_text(&c))
            .unwrap_or_default(),
    )
}

/// How a ladder arrow crosses the capture points' lanes (one lane per
/// point, in path order, the first point's on the left).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaneSpan {
    /// The lane it starts at (the first point on its way).
    pub from: usize,
    /// The last lane that saw it.
    pub to: usize,
    /// Its way runs left to right.
    pub rightward: bool,
    /// It vanished after `to`: the arrow ends between `to` and the next
    /// lane on its way (past the last lane: the receiver's stack).
    pub vanished: bool,
}

/// The ladder's lanes in a session of capture points: their names.
pub fn ladder_lanes(model: &Model) -> Option<Vec<&str>> {
    let r = model.points()?;
    Some(r.points.iter().map(|p| p.name.as_str()).collect())
}

/// The last point along `way` where a frame was seen (`seen`: a bit per
/// point).
fn last_seen(way: &[u8], seen: u16) -> Option<u8> {
    way.iter().rev().find(|&&p| seen & (1 << p) != 0).copied()
}

/// A flow along `way` from point `first` runs to the right (towards higher
/// points); a flow seen at one point alone, from the first point.
fn rightward(way: &[u8], first: u8) -> bool {
    way.get(1).map_or(first == 0, |&next| next > first)
}

/// Where the arrow of row `index` (a frame of the first point's capture)
/// runs across the lanes; `None` without points or for a frame no point
/// follows.
pub fn lane_span(model: &Model, index: u64) -> Option<LaneSpan> {
    use rocescope_replay::points::Fate;
    let r = model.points()?;
    let cell = r.path_at(0, index)?;
    let way = &r.flows.get(cell.flow as usize)?.points;
    let (&first, &last) = (way.first()?, way.last()?);
    let rightward = rightward(way, first);
    let lane = |p: u8| usize::from(p);
    // Not judged (outside another point's capture): as far as it was seen.
    let seen_last = last_seen(way, cell.seen).unwrap_or(last);
    let (to, vanished) = match cell.fate {
        Fate::LostAfter(pos) => (lane(*way.get(usize::from(pos))?), true),
        Fate::Stack => (lane(last), true),
        Fate::Delivered => (lane(last), false),
        Fate::Unjudged => (lane(seen_last), false),
    };
    Some(LaneSpan {
        from: lane(first),
        to,
        rightward,
        vanished,
    })
}

/// One bin of a segment's latency series: (ms since the capture's first
/// packet, p50 µs, p99 µs).
pub type LatencyPoint = (f64, f64, f64);

/// Each segment's one-way latency over the capture, as the Overview
/// plots it: (segment, [(ms since the capture's first packet, p50 µs,
/// p99 µs)] per bin with frames), segments in the latency table's order.
pub fn segment_latency_series(model: &Model) -> Vec<(String, Vec<LatencyPoint>)> {
    let Some(r) = model.points() else {
        return Vec::new();
    };
    let t0 = model.store.stats().first_ts_ns.unwrap_or(r.t0_ns);
    r.segments
        .iter()
        .filter(|s| !s.series.is_empty())
        .map(|s| {
            let points = s
                .series
                .iter()
                .map(|&(t, p50, p99)| {
                    (
                        (t as f64 - t0 as f64) / 1e6,
                        p50 as f64 / 1e3,
                        p99 as f64 / 1e3,
                    )
                })
                .collect();
            (s.name.clone(), points)
        })
        .collect()
}

/// The widest Path cell the session can have, in characters: every
/// point's name in brackets, and an `x`.
pub fn path_chars(r: &PointsReport) -> usize {
    r.points
        .iter()
        .map(|p| p.name.chars().count() + 3)
        .sum::<usize>()
        + 1
}

/// The Losses view's heading: `a>sw 5, b 1, capture loss sw 2`, or
/// `none`.
pub fn losses_heading(r: &PointsReport) -> String {
    let mut parts: Vec<String> = text::losses_by_segment(r)
        .into_iter()
        .map(|(s, n, _)| format!("{s} {n}"))
        .collect();
    let missed: Vec<String> = r
        .points
        .iter()
        .filter(|p| p.capture_loss > 0)
        .map(|p| format!("{} {}", p.name, p.capture_loss))
        .collect();
    if parts.is_empty() && missed.is_empty() {
        return "none".into();
    }
    if !missed.is_empty() {
        parts.push(format!("capture loss {}", missed.join(", ")));
    }
    parts.join(", ")
}

/// An item's time in the first point's clock.
pub fn loss_ts_ns(r: &PointsReport, item: LossItem) -> Option<u64> {
    match item {
        LossItem::Placed(i) => r.losses.get(i).map(|l| l.ts_ns),
        LossItem::Missed(i) => r.capture_losses.get(i).map(|c| c.ts_ns),
    }
}

/// Which columns of a table fit in `width` (characters or pixels), each
/// column `widths[i]` wide with `gap` between neighbours: all of them if
/// they fit, else the columns of `drop_order` are left out in that order,
/// one at a time, until the rest fit (or none is left to drop: the caller
/// then cuts the last column). Both front ends lay their tables out by it,
/// so that a narrow window hides whole columns instead of cutting every
/// cell.
pub fn fit_columns(widths: &[u32], drop_order: &[usize], gap: u32, width: u32) -> Vec<bool> {
    let mut keep = vec![true; widths.len()];
    let total = |keep: &[bool]| {
        let kept: Vec<u32> = widths
            .iter()
            .zip(keep)
            .filter(|(_, k)| **k)
            .map(|(w, _)| *w)
            .collect();
        kept.iter().sum::<u32>() + gap * (kept.len().saturating_sub(1) as u32)
    };
    for &i in drop_order {
        if total(&keep) <= width {
            break;
        }
        if let Some(k) = keep.get_mut(i) {
            *k = false;
        }
    }
    keep
}

/// Changed against twin goodput, in percent.
pub fn whatif_gain_pct(
    twin: &rocescope_sim::whatif::QpOutcome,
    changed: &rocescope_sim::whatif::QpOutcome,
) -> f64 {
    (changed.goodput_gbytes_s / twin.goodput_gbytes_s.max(1e-12) - 1.0) * 100.0
}

/// The lessons list's line of lesson `l`, the list's `i`th (from 0):
/// number, title, summary, scenario and the student's progress.
pub fn lesson_list_line(model: &Model, i: usize, l: &crate::lesson::Lesson) -> String {
    format!(
        "{}. {} — {} (scenario: {}; {})",
        i + 1,
        l.title,
        l.summary,
        l.scenario,
        model.lesson_progress(l)
    )
}

/// `window_full 81%, sending 12%`: a run's states of at least 1% of the
/// QP's span, largest first.
pub fn whatif_states_text(q: &rocescope_sim::whatif::QpOutcome) -> String {
    let total: u64 = q.time_by_state_ns.values().sum();
    if total == 0 {
        return "-".into();
    }
    let mut by: Vec<(&str, u64)> = q
        .time_by_state_ns
        .iter()
        .map(|(k, v)| (*k, *v))
        .filter(|(_, v)| *v * 100 >= total)
        .collect();
    by.sort_by_key(|s| std::cmp::Reverse(s.1));
    by.iter()
        .map(|(k, v)| format!("{k} {:.0}%", *v as f64 * 100.0 / total as f64))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The what-if beside the capture, as both workbenches show it above the
/// Overview and the QPs: a title and its lines (per QP capture / twin /
/// changed goodput, the change, time by state side by side; or the twin's
/// refusal). `None` without a what-if, so that such a session looks as
/// before.
pub fn whatif_lines(model: &Model) -> Option<(String, Vec<String>)> {
    use crate::model::WhatIfState;
    use crate::model::whatif_changes_text as changes_text;
    match model.whatif()? {
        WhatIfState::Running { changes } => Some((
            format!("what if {}", changes_text(changes)),
            vec!["running the twin and the changed run…".into()],
        )),
        WhatIfState::Ready(w) => {
            let holds = w.mismatches.is_empty();
            let mut lines = Vec::new();
            for (i, c) in w.capture.qps.iter().enumerate() {
                let (Some(t), Some(ch)) = (w.twin.qps.get(i), w.changed.qps.get(i)) else {
                    continue;
                };
                lines.push(format!(
                    "QP {} {} -> {}",
                    text::qpn(c.dest_qp),
                    c.src_ip,
                    c.dst_ip
                ));
                let mut goodput = format!(
                    "  goodput        capture {:.3} GB/s  twin {:.3} GB/s",
                    c.goodput_gbytes_s, t.goodput_gbytes_s
                );
                if holds {
                    goodput.push_str(&format!(
                        "  changed {:.3} GB/s  {:+.1}% against the twin",
                        ch.goodput_gbytes_s,
                        whatif_gain_pct(t, ch)
                    ));
                }
                lines.push(goodput);
                lines.push(format!(
                    "  time by state  capture {}",
                    whatif_states_text(c)
                ));
                lines.push(format!(
                    "                 twin    {}",
                    whatif_states_text(t)
                ));
                if holds {
                    lines.push(format!(
                        "                 changed {}",
                        whatif_states_text(ch)
                    ));
                }
            }
            let title = if holds {
                format!(
                    "what if {}: A capture and its twin, B changed",
                    changes_text(&w.changes)
                )
            } else {
                lines.push(format!(
                    "the twin does not hold (per QP goodput within {:.0}% and the same episodes by cause), so no prediction:",
                    rocescope_sim::whatif::TWIN_GOODPUT_TOLERANCE * 100.0
                ));
                for m in &w.mismatches {
                    lines.push(format!(
                        "  QP {} {} -> {}: {}",
                        text::qpn(m.dest_qp),
                        m.src_ip,
                        m.dst_ip,
                        m.why
                    ));
                }
                format!(
                    "what if {}: no prediction (the twin does not hold)",
                    changes_text(&w.changes)
                )
            };
            Some((title, lines))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_are_dropped_whole_in_their_order_until_the_rest_fit() {
        let w = [8, 19, 16, 8, 8];
        assert_eq!(fit_columns(&w, &[3, 4], 1, 100), [true; 5]);
        // 8+19+16+8+8 + 4 gaps = 63: without column 3, 54.
        assert_eq!(
            fit_columns(&w, &[3, 4], 1, 60),
            [true, true, true, false, true]
        );
        assert_eq!(
            fit_columns(&w, &[3, 4], 1, 50),
            [true, true, true, false, false]
        );
        // Nothing more to drop: the rest is kept (and cut by the caller).
        assert_eq!(
            fit_columns(&w, &[3, 4], 1, 10),
            [true, true, true, false, false]
        );
        assert_eq!(fit_columns(&[], &[], 1, 0), Vec::<bool>::new());
    }
}
