//! The diagnosis: where a QP's data rate falls well below its level and
//! why, from the evidence around it, and what happened to QPs that are not
//! throughput drops (retries exhausted, fatal NAKs, a QP stuck to the end).
//!
//! Rules, each tested in `tests.rs` (a missing finding and a false one both
//! fail); the table of cases and what is told is `decoders/DIAGNOSIS.md`.
//!
//! - A drop is a stretch of bins below half the level of a steady stream.
//!   Its level is the mean of the bins before it, except after a CNP: then
//!   it is the level before the first CNP, kept until the rate is back (a
//!   DCQCN-style cut steps down at most by half per CNP, so a moving level
//!   would follow the staircase down and never see a drop).
//! - Bins with nothing sent and nothing outstanding are idle: a drop made
//!   mostly of them is the sender pausing between messages, not a finding.
//! - A drop is explained by, in this order: a retransmission episode over
//!   it (its trigger: the NAK, the timer, RNR, an implied NAK), evidence
//!   from other sources (PFC, DPI), ECN marks and CNPs in either direction
//!   (READ data flows back, so its marks and CNPs do too), a window full at
//!   the window the capture shows, else nothing ("unexplained", with the
//!   series it was read from).
//! - Drops of one cause on one QP are one finding: count, spread, the worst
//!   one, and each as an item.
//! - A QP whose traffic ends with data unacknowledged is not "the end of
//!   the workload": it is stuck, or in error once its retries ran out.

use std::fmt::Write;

use super::{
    AnalysisConfig, CardCounters, Counters, Episode, EpisodeCause, QpErrorReason, QpReport, Series,
    TIME_STATES, TimeState, TimerExpiry, WindowFrom,
};
use crate::headers::NakCode;
use crate::units::duration_text;

mod card;
mod events;

pub(crate) use card::card;
use events::qp_events;

/// What a finding is attributed to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum FindingCause {
    /// Loss on the wire and the Go-Back-N resend that followed a NAK.
    LossGoBackN,
    /// The requester stalled until its retransmission timer fired.
    TimeoutStall,
    /// The responder answered RNR: no receive buffer.
    ReceiverNotReady,
    /// A READ response went missing and the READ was re-issued.
    ReadResponseLoss,
    /// The window of outstanding packets was full for long stretches.
    WindowLimited,
    /// Switches marked congestion (ECN) and CNPs came back.
    Congestion,
    /// The link was paused (PFC).
    PfcPause,
    /// The PCIe read-tag limit slowed the host's READ path.
    ReadTagLimit,
    /// The DPI slot dropped packets.
    DpiDrop,
    /// The capture missed frames then (a sniffer's or a live link's
    /// drops, or PSNs ACKs show were sent): a gap in what was captured,
    /// not a fall in what was sent.
    CaptureLoss,
    /// The sender had nothing to send: no requests and nothing outstanding.
    /// Never a finding of its own (idle time is not a drop); kept for
    /// evidence notes.
    SenderIdle,
    /// The QP's requests were waiting on its host: mid-message, window
    /// open, the link free, no signal in the capture (the host, PCIe, the
    /// card's payload fetch).
    HostLimited,
    /// Other QPs took the link the QP sends on: it waited its turn.
    LinkShared,
    /// Nothing tells it: the capture holds none of the QP's requests, so
    /// its time by state is not known.
    Unexplained,
    /// The retry count ran out: the QP is in error.
    RetriesExceeded,
    /// The RNR retry count ran out: the QP is in error.
    RnrRetriesExceeded,
    /// A fatal NAK (invalid request, remote access or remote operational
    /// error): the QP is in error.
    FatalNak,
    /// The QP's traffic ended with data unacknowledged: a dead QP, not the
    /// end of its workload.
    QpStuck,
    /// The card's own counters disagree with the capture over the same
    /// interval (the sniffer missed frames, or the reverse).
    CardCounterMismatch,
    /// The card reports its network stack down ("STRM down" above 0).
    StreamDown,
}

impl FindingCause {
    pub fn name(self) -> &'static str {
        match self {
            FindingCause::LossGoBackN => "loss_go_back_n",
            FindingCause::TimeoutStall => "timeout_stall",
            FindingCause::ReceiverNotReady => "receiver_not_ready",
            FindingCause::ReadResponseLoss => "read_response_loss",
            FindingCause::WindowLimited => "window_limited",
            FindingCause::Congestion => "congestion",
            FindingCause::PfcPause => "pfc_pause",
            FindingCause::ReadTagLimit => "read_tag_limit",
            FindingCause::DpiDrop => "dpi_drop",
            FindingCause::CaptureLoss => "capture_loss",
            FindingCause::SenderIdle => "sender_idle",
            FindingCause::HostLimited => "host_limited",
            FindingCause::LinkShared => "link_shared",
            FindingCause::Unexplained => "unexplained",
            FindingCause::RetriesExceeded => "retries_exceeded",
            FindingCause::RnrRetriesExceeded => "rnr_retries_exceeded",
            FindingCause::FatalNak => "fatal_nak",
            FindingCause::QpStuck => "qp_stuck",
            FindingCause::CardCounterMismatch => "card_counter_mismatch",
            FindingCause::StreamDown => "stream_down",
        }
    }

    /// Plural phrase for a group of drops of this cause.
    fn drops_phrase(self) -> &'static str {
        match self {
            FindingCause::LossGoBackN => "drops from loss and Go-Back-N resends",
            FindingCause::TimeoutStall => "stalls until the retransmission timer fired",
            FindingCause::ReceiverNotReady => "drops from RNR NAKs",
            FindingCause::ReadResponseLoss => "drops from lost READ responses",
            FindingCause::WindowLimited => "drops with the window full",
            FindingCause::Congestion => "drops under congestion (ECN, CNPs)",
            FindingCause::PfcPause => "drops under PFC pauses",
            FindingCause::ReadTagLimit => "drops at the PCIe read-tag limit",
            FindingCause::DpiDrop => "drops from DPI-slot drops",
            FindingCause::CaptureLoss => "drops where the capture missed frames",
            FindingCause::SenderIdle => "drops with the sender idle between messages",
            FindingCause::HostLimited => "drops waiting on the host",
            FindingCause::LinkShared => "drops sharing the link with other QPs",
            FindingCause::Unexplained => "unexplained drops",
            FindingCause::RetriesExceeded => "retry exhaustions",
            FindingCause::RnrRetriesExceeded => "RNR retry exhaustions",
            FindingCause::FatalNak => "fatal NAKs",
            FindingCause::QpStuck => "stuck ends",
            FindingCause::CardCounterMismatch => "counter disagreements",
            FindingCause::StreamDown => "stream-down reports",
        }
    }
}

/// Evidence from outside the frames (and frames the capture missed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Note {
    pub ts_ns: u64,
    pub what: FindingCause,
    /// How many (frames the capture missed; 1 for the others).
    pub count: u64,
    /// Capture loss the analysis found in the PSNs (gaps ACKs covered),
    /// not counted by the source: the two may count the same frames.
    pub from_psns: bool,
}

/// One drop or event a finding tells.
#[derive(Debug, Clone, PartialEq)]
pub struct FindingItem {
    pub start_ns: u64,
    pub end_ns: u64,
    pub before_gbytes_s: f64,
    pub during_gbytes_s: f64,
    /// The row to jump to (the first evidence), when there is one.
    pub first_index: Option<u64>,
    /// One sentence for people.
    pub text: String,
}

/// One finding: a kind of trouble on one QP, with its evidence.
#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    /// QP conversation (index into the report's QPs).
    pub qp: u32,
    /// From the first item's start to the last one's end.
    pub start_ns: u64,
    pub end_ns: u64,
    /// Rates of the worst item (the one that lost the most bytes).
    pub before_gbytes_s: f64,
    pub during_gbytes_s: f64,
    pub cause: FindingCause,
    /// The row to jump to (the worst item's first evidence), when there is one.
    pub first_index: Option<u64>,
    /// One sentence for people; for several items, their count, spread
    /// and the worst.
    pub text: String,
    /// Each drop or event, in time order (one for a single).
    pub items: Vec<FindingItem>,
    /// Rows of the packets it rests on (NAKs, resends, the last retry),
    /// at most [`MAX_EVIDENCE_ROWS`], ascending.
    pub rows: Vec<u64>,
    /// The series it was read from ([`super::Bin`] field names).
    pub series: Vec<&'static str>,
}

/// The `qp` of a finding about the card rather than one QP.
pub const CARD_QP: u32 = u32::MAX;

/// Rows a finding lists as its evidence.
pub const MAX_EVIDENCE_ROWS: usize = 64;

/// A drop is a bin below this share of the level...
const DROP_SHARE: f64 = 0.5;
/// ...and it ends when the rate is back above this share.
const RECOVER_SHARE: f64 = 0.8;
/// The level before a CNP holds until the recent level is back above
/// this share of it.
const ANCHOR_BACK_SHARE: f64 = 0.9;
/// Bins of history that make the level.
const HISTORY_BINS: usize = 8;
/// A drop must last at least this many bins.
const MIN_DROP_BINS: usize = 4;
/// History bins that must carry data for the level to count.
const MIN_BUSY_BINS: usize = 6;
/// Below this level (GB/s) a QP is too quiet to call a drop.
const MIN_LEVEL_GBYTES_S: f64 = 0.05;
/// A QP silent this many of its round trips (and the timeout silence) with
/// data unacknowledged at the end of the capture is stuck.
const STUCK_RTTS: u64 = 8;

pub(crate) fn addr(a: [u8; 16]) -> crate::Endpoint {
    crate::Endpoint(a)
}

/// An item before grouping: its cause, rows and series.
struct Item {
    cause: FindingCause,
    item: FindingItem,
    /// The evidence part of the sentence (after the QP and the rates).
    evidence: String,
    rows: Vec<u64>,
    series: &'static [&'static str],
}

/// What the diagnosis reads besides the QPs.
pub(crate) struct Context<'a> {
    pub episodes: &'a [Episode],
    pub notes: &'a std::collections::VecDeque<Note>,
    pub cfg: &'a AnalysisConfig,
    /// First and last packet of the source.
    pub t0_ns: u64,
    pub end_ns: u64,
}

pub(crate) fn diagnose(qps: &[QpReport], cx: &Context<'_>) -> Vec<Finding> {
    let mut out = Vec::new();
    for (qp_id, qp) in qps.iter().enumerate() {
        let qp_id = qp_id as u32;
        let mut items = drops(qp_id, qp, qps, cx);
        items.extend(qp_events(qp_id, qp, cx));
        out.extend(group(qp, qp_id, items, cx.t0_ns));
    }
    out.sort_by_key(|f| (f.start_ns, f.qp));
    out
}

fn head(qp: &QpReport) -> String {
    format!(
        "QP 0x{:06x} {} > {}",
        qp.dest_qp,
        addr(qp.requester),
        addr(qp.responder)
    )
}

fn secs(ts_ns: u64, t0_ns: u64) -> f64 {
    ts_ns.saturating_sub(t0_ns) as f64 / 1e9
}

/// Group items of one cause into one finding each.
fn group(qp: &QpReport, qp_id: u32, items: Vec<Item>, t0_ns: u64) -> Vec<Finding> {
    let mut causes: Vec<FindingCause> = Vec::new();
    for it in &items {
        if !causes.contains(&it.cause) {
            causes.push(it.cause);
        }
    }
    let mut out = Vec::new();
    for cause in causes {
        let mut mine: Vec<&Item> = items.iter().filter(|i| i.cause == cause).collect();
        mine.sort_by_key(|i| i.item.start_ns);
        let lost = |i: &Item| {
            (i.item.before_gbytes_s - i.item.during_gbytes_s).max(0.0)
                * (i.item.end_ns - i.item.start_ns) as f64
        };
        let Some(worst) = mine
            .iter()
            .copied()
            .max_by(|a, b| lost(a).total_cmp(&lost(b)))
        else {
            continue;
        };
        let start_ns = mine.iter().map(|i| i.item.start_ns).min().unwrap_or(0);
        let end_ns = mine.iter().map(|i| i.item.end_ns).max().unwrap_or(start_ns);
        let mut rows: Vec<u64> = mine.iter().flat_map(|i| i.rows.iter().copied()).collect();
        rows.sort_unstable();
        rows.dedup();
        rows.truncate(MAX_EVIDENCE_ROWS);
        let mut series: Vec<&'static str> = Vec::new();
        for s in mine.iter().flat_map(|i| i.series.iter()) {
            if !series.contains(s) {
                series.push(s);
            }
        }
        let text = if mine.len() == 1 {
            worst.item.text.clone()
        } else {
            let total: u64 = mine.iter().map(|i| i.item.end_ns - i.item.start_ns).sum();
            format!(
                "{}: {} {} from {:.6} s to {:.6} s ({} in all); the worst, {:.1} -> {:.1} GB/s at {:.6} s for {}: {}",
                head(qp),
                mine.len(),
                cause.drops_phrase(),
                secs(start_ns, t0_ns),
                secs(end_ns, t0_ns),
                duration_text(total),
                worst.item.before_gbytes_s,
                worst.item.during_gbytes_s,
                secs(worst.item.start_ns, t0_ns),
                duration_text(worst.item.end_ns - worst.item.start_ns),
                worst.evidence,
            )
        };
        out.push(Finding {
            qp: qp_id,
            start_ns,
            end_ns,
            before_gbytes_s: worst.item.before_gbytes_s,
            during_gbytes_s: worst.item.during_gbytes_s,
            cause,
            first_index: worst.item.first_index,
            text,
            items: mine.iter().map(|i| i.item.clone()).collect(),
            rows,
            series,
        });
    }
    out
}

/// Per-bin quantities of one QP, both directions on the request series' bins.
struct Bins {
    rate: Vec<f64>,
    /// Requests sent in the bin.
    requests: Vec<u64>,
    /// Outstanding at the end of the bin (carried through empty bins).
    outstanding: Vec<u32>,
    max_outstanding: Vec<u32>,
    marks: Vec<u32>,
    cnps: Vec<u32>,
}

impl Bins {
    fn of(qp: &QpReport) -> Bins {
        let s = &qp.series;
        let rev = qp.reverse_series.as_ref();
        let n = s.bins.len();
        // The reverse bin covering request bin `i`, when both have one width.
        let back = |i: usize| {
            let t = s.bin_start_ns(i);
            rev.filter(|r| r.bin_ns == s.bin_ns && t >= r.start_ns)
                .and_then(|r| r.bins.get(((t - r.start_ns) / r.bin_ns) as usize))
        };
        let mut carried = 0;
        let mut b = Bins {
            rate: Vec::with_capacity(n),
            requests: Vec::with_capacity(n),
            outstanding: Vec::with_capacity(n),
            max_outstanding: Vec::with_capacity(n),
            marks: Vec::with_capacity(n),
            cnps: Vec::with_capacity(n),
        };
        for (i, bin) in s.bins.iter().enumerate() {
            let r = back(i);
            // The QP's data rate: goodput both ways (WRITEs go out, READ data comes back).
            b.rate.push(
                s.goodput_gbytes_s(i) + r.map_or(0.0, |r| r.goodput_bytes as f64 / s.bin_ns as f64),
            );
            b.requests.push(bin.packets);
            if let Some(o) = bin.end_outstanding {
                carried = o;
            }
            b.outstanding.push(carried);
            b.max_outstanding.push(bin.max_outstanding.max(carried));
            b.marks.push(bin.ecn_marked + r.map_or(0, |r| r.ecn_marked));
            b.cnps.push(bin.cnps + r.map_or(0, |r| r.cnps));
        }
        b
    }
}

/// Wire bytes of a QP (both directions) in the bins starting in `t1..t2`.
fn wire_between(qp: &QpReport, t1: u64, t2: u64) -> u64 {
    std::iter::once(&qp.series)
        .chain(qp.reverse_series.as_ref())
        .map(|s| {
            // Bins starting in t1..t2, by index: this runs for every drop
            // against every QP that shares a host.
            let first = t1.saturating_sub(s.start_ns).div_ceil(s.bin_ns) as usize;
            let end = t2.saturating_sub(s.start_ns).div_ceil(s.bin_ns) as usize;
            s.bins
                .get(first.min(s.bins.len())..end.min(s.bins.len()))
                .map_or(0, |bins| bins.iter().map(|b| b.wire_bytes).sum::<u64>())
        })
        .sum()
}

/// The QPs sharing a host with `qp` kept the link as busy (wire bytes,
/// resends included) while `qp`'s goodput fell: its share of a busy link
/// shrank, it was not slowed.
fn shared_link(qp_id: u32, qps: &[QpReport], before: (u64, u64), during: (u64, u64)) -> bool {
    let me = &qps[qp_id as usize];
    let hosts = [me.requester, me.responder];
    let sharing: Vec<&QpReport> = qps
        .iter()
        .filter(|q| hosts.contains(&q.requester) || hosts.contains(&q.responder))
        .collect();
    let others_during: u64 = sharing
        .iter()
        .filter(|q| !std::ptr::eq(**q, me))
        .map(|q| wire_between(q, during.0, during.1))
        .sum();
    if others_during == 0 || before.1 <= before.0 || during.1 <= during.0 {
        return false;
    }
    let rate = |(t1, t2): (u64, u64)| {
        sharing.iter().map(|q| wire_between(q, t1, t2)).sum::<u64>() as f64 / (t2 - t1) as f64
    };
    rate(during) >= RECOVER_SHARE * rate(before)
}

fn drops(qp_id: u32, qp: &QpReport, qps: &[QpReport], cx: &Context<'_>) -> Vec<Item> {
    let s = &qp.series;
    let bins = Bins::of(qp);
    let n = s.bins.len();
    let mut out = Vec::new();
    let mut i = HISTORY_BINS;
    // The level before the first CNP of a run of them.
    let mut anchor: Option<f64> = None;
    let mut last_cnp_bin: Option<usize> = None;
    while i < n {
        let history = i - HISTORY_BINS..i;
        let moving: f64 = history.clone().map(|h| bins.rate[h]).sum::<f64>() / HISTORY_BINS as f64;
        // Only a steady stream has a level to fall from: bursty traffic
        // with idle bins between bursts is not a drop.
        let busy = history.clone().filter(|&h| bins.rate[h] > 0.0).count();
        let steady = moving >= MIN_LEVEL_GBYTES_S && busy >= MIN_BUSY_BINS;
        if bins.cnps[i] > 0 {
            if anchor.is_none() && steady {
                anchor = Some(moving);
            }
            last_cnp_bin = Some(i);
        }
        if let (Some(a), Some(c)) = (anchor, last_cnp_bin) {
            // Back to the level, with no CNP for a while: the cut is over.
            if moving >= ANCHOR_BACK_SHARE * a && i >= c + HISTORY_BINS {
                anchor = None;
            }
        }
        let level = anchor.unwrap_or(moving);
        if !(anchor.is_some() || steady) || bins.rate[i] >= DROP_SHARE * level {
            i += 1;
            continue;
        }
        let start = i;
        let mut end = i + 1;
        while end < n && bins.rate[end] < RECOVER_SHARE * level {
            end += 1;
        }
        let during = (start..end).map(|b| bins.rate[b]).sum::<f64>() / (end - start) as f64;
        if end - start < MIN_DROP_BINS {
            // A blip of a bin or three is burstiness, not a drop.
            i = end;
            continue;
        }
        let start_ns = s.bin_start_ns(start);
        let end_ns = s.bin_start_ns(end);
        if end == n && during == 0.0 {
            // The traffic stopped. With nothing left unacknowledged that is
            // the end of a workload; a stuck QP is told by `qp_events`.
            break;
        }
        if qp.error.is_some_and(|e| e.ts_ns <= start_ns) {
            // A QP in error sends nothing: its error finding tells it.
            break;
        }
        // The sender had nothing posted for most of it: idle, not a drop.
        // Its time by state tells (a pause frame holds a sender with
        // nothing outstanding, which is not idle); without it, bins with
        // nothing sent and nothing outstanding.
        let idle = match shares(qp, start_ns, end_ns) {
            Some(sh) => sh[TimeState::Idle as usize] >= 0.5,
            None => {
                let n = (start..end)
                    .filter(|&b| bins.requests[b] == 0 && bins.outstanding[b] == 0)
                    .count();
                n * 2 >= end - start
            }
        };
        if idle {
            i = end;
            continue;
        }
        let shared = shared_link(
            qp_id,
            qps,
            (s.bin_start_ns(start - HISTORY_BINS), start_ns),
            (start_ns, end_ns),
        );
        if let Some(it) = explain(
            qp_id,
            qp,
            shared,
            &bins,
            cx,
            start..end,
            start_ns,
            end_ns,
            level,
            during,
            anchor.is_some(),
        ) {
            out.push(it);
        }
        i = end + HISTORY_BINS;
        anchor = None;
    }
    out.extend(episodes_between_drops(qp_id, qp, &bins, cx, &out));
    out
}

/// Loss the requester recovered from that no drop above tells: a
/// Go-Back-N episode shorter than the series' bins can show (a run long
/// enough to coarsen them to tens of µs hides a 40 µs recovery) or on a
/// stream too bursty to have a level. Told whatever the bin width, so that
/// a long live session says what a short recording of it says. Episodes
/// not recovered are the QP's error or stuck end (`qp_events`).
fn episodes_between_drops(
    qp_id: u32,
    qp: &QpReport,
    bins: &Bins,
    cx: &Context<'_>,
    told: &[Item],
) -> Vec<Item> {
    let s = &qp.series;
    let mut out = Vec::new();
    for e in cx.episodes.iter().filter(|e| e.qp == qp_id && e.recovered) {
        let end_ns = e.end_ns.max(e.start_ns + e.recovery_ns).max(e.start_ns + 1);
        // A drop above already tells it (its evidence starts two bins early).
        if told.iter().any(|t| {
            t.item.start_ns.saturating_sub(2 * s.bin_ns) < end_ns && e.start_ns < t.item.end_ns
        }) {
            continue;
        }
        let (Some(first), Some(last)) = (s.index_at(e.start_ns), s.index_at(end_ns - 1)) else {
            continue;
        };
        let mean = |r: std::ops::Range<usize>| {
            let n = r.len().max(1);
            r.map(|b| bins.rate[b]).sum::<f64>() / n as f64
        };
        let before = mean(first.saturating_sub(HISTORY_BINS)..first);
        let during = mean(first..last + 1);
        let (cause, mut evidence, rows) = episode_evidence(qp, e);
        if last + 1 - first < MIN_DROP_BINS {
            // The bins' width unsaid: a capture numbered by frames has no
            // times to give it in.
            evidence.push_str(" (too short for the rate series' bins to show as a drop)");
        }
        let text = format!(
            "{}: {:.1} -> {:.1} GB/s at {:.6} s for {}: {evidence}",
            head(qp),
            before,
            during,
            secs(e.start_ns, cx.t0_ns),
            duration_text(end_ns - e.start_ns),
        );
        out.push(Item {
            cause,
            item: FindingItem {
                start_ns: e.start_ns,
                end_ns,
                before_gbytes_s: before,
                during_gbytes_s: during,
                first_index: Some(e.first_index),
                text,
            },
            evidence,
            rows,
            series: &["goodput_bytes", "retransmitted_packets"],
        });
    }
    out
}

/// How a run of timer intervals reads: "1.000 ms, then 64.000 ms x6", and
/// whose schedule it matches.
fn schedule(silences_ns: &[u64]) -> String {
    let mut runs: Vec<(u64, usize)> = Vec::new();
    for &s in silences_ns {
        match runs.last_mut() {
            Some((v, k)) if s.abs_diff(*v) * 10 <= *v => *k += 1,
            _ => runs.push((s, 1)),
        }
    }
    let mut text = String::new();
    for (j, (v, k)) in runs.iter().enumerate() {
        if j > 0 {
            text.push_str(", then ");
        }
        text.push_str(&duration_text(*v));
        if *k > 1 {
            let _ = write!(text, " x{k}");
        }
    }
    let near = |v: u64, want: u64| v.abs_diff(want) * 4 <= want;
    let balboa = silences_ns.first().is_some_and(|&f| near(f, 1_000_000))
        && silences_ns[1..].iter().all(|&s| near(s, 64_000_000));
    if balboa {
        text.push_str(if silences_ns.len() > 1 {
            " (BALBOA's schedule: 1 ms, then 64 ms)"
        } else {
            " (BALBOA's first interval, 1 ms)"
        });
        return text;
    }
    // IBTA: 4.096 µs x 2^timeout, one value for the QP.
    if let [(v, _)] = runs.as_slice() {
        let k = ((*v as f64) / 4096.0).log2().round();
        if (0.0..=31.0).contains(&k) {
            let ibta = (4096.0 * k.exp2()) as u64;
            if near(*v, ibta) {
                let _ = write!(
                    text,
                    " (IBTA local ACK timeout {k}: 4.096 µs x 2^{k} = {})",
                    duration_text(ibta)
                );
            }
        }
    }
    text
}

fn expiries_of<'a>(qp: &'a QpReport, e: &Episode) -> impl Iterator<Item = &'a TimerExpiry> {
    let (from, to) = (e.start_ns, e.end_ns);
    qp.timer_expiries
        .iter()
        .filter(move |x| x.ts_ns >= from && x.ts_ns <= to)
}

/// The sentence for an episode: its trigger, passes and timers.
fn episode_evidence(qp: &QpReport, e: &Episode) -> (FindingCause, String, Vec<u64>) {
    let mut ev = String::new();
    let mut rows = vec![e.first_index, e.last_index];
    let cause = match e.cause {
        EpisodeCause::NakSeqErr if e.nak_inferred => {
            let _ = write!(
                ev,
                "loss at PSN {} (its NAK was not captured), Go-Back-N resent {} packets",
                e.from_psn, e.packets_resent
            );
            FindingCause::LossGoBackN
        }
        EpisodeCause::NakSeqErr => {
            let _ = write!(
                ev,
                "NAK (PSN sequence error) at PSN {}, Go-Back-N resent {} packets",
                e.from_psn, e.packets_resent
            );
            FindingCause::LossGoBackN
        }
        EpisodeCause::Timeout => {
            let silences: Vec<u64> = expiries_of(qp, e).map(|x| x.silence_ns).collect();
            rows.extend(expiries_of(qp, e).map(|x| x.index));
            let first = silences.first().copied().unwrap_or(e.silence_ns);
            let _ = write!(
                ev,
                "no ACK for {}, then the timer fired and {} packets were resent from PSN {}",
                duration_text(first),
                e.packets_resent,
                e.from_psn
            );
            if silences.len() > 1 {
                let _ = write!(
                    ev,
                    "; the timer fired {} times: {}",
                    silences.len(),
                    schedule(&silences)
                );
            }
            if let Some(u) = e.unacted {
                rows.push(u.index);
                let what = match u.cause {
                    EpisodeCause::ImpliedNak => {
                        format!("the gap in READ responses at PSN {}", u.psn)
                    }
                    _ => format!("the NAK at PSN {}", u.psn),
                };
                let _ = write!(
                    ev,
                    "; timeout after {}; {what} was visible {} earlier: the requester did not act on it",
                    duration_text(e.silence_ns.min(first)),
                    duration_text(e.start_ns.saturating_sub(u.ts_ns)),
                );
            }
            FindingCause::TimeoutStall
        }
        EpisodeCause::Rnr => {
            let _ = write!(
                ev,
                "RNR NAK at PSN {}: the responder had no receive buffer",
                e.from_psn
            );
            FindingCause::ReceiverNotReady
        }
        EpisodeCause::ImpliedNak => {
            let _ = write!(
                ev,
                "a READ response went missing; the READ was re-issued from PSN {}",
                e.from_psn
            );
            FindingCause::ReadResponseLoss
        }
    };
    if e.retries > 0 && e.cause != EpisodeCause::Timeout {
        let _ = write!(
            ev,
            "; {} more Go-Back-N pass{}",
            e.retries,
            if e.retries == 1 { "" } else { "es" }
        );
    }
    if e.recovered {
        let _ = write!(ev, ", recovery took {}", duration_text(e.recovery_ns));
    } else {
        let _ = write!(ev, ", not recovered when the capture ends");
    }
    rows.sort_unstable();
    rows.dedup();
    (cause, ev, rows)
}

#[allow(clippy::too_many_arguments)]
fn explain(
    qp_id: u32,
    qp: &QpReport,
    shared: bool,
    bins: &Bins,
    cx: &Context<'_>,
    range: std::ops::Range<usize>,
    start_ns: u64,
    end_ns: u64,
    before: f64,
    during: f64,
    after_cnp: bool,
) -> Option<Item> {
    let s = &qp.series;
    // Evidence may start a little before the rate falls.
    let from = start_ns.saturating_sub(2 * s.bin_ns);
    let mut evidence = String::new();
    let mut first_index = None;
    let mut rows = Vec::new();
    let ep = cx.episodes.iter().find(|e| {
        e.qp == qp_id && e.start_ns < end_ns && e.end_ns.max(e.start_ns + e.recovery_ns) >= from
    });
    let marks: u32 = range.clone().map(|b| bins.marks[b]).sum();
    let cnp_from = range
        .start
        .saturating_sub(if after_cnp { HISTORY_BINS } else { 2 });
    let cnps: u32 = (cnp_from..range.end).map(|b| bins.cnps[b]).sum();
    let (cause, series): (FindingCause, &'static [&'static str]) = if let Some(e) = ep {
        first_index = Some(e.first_index);
        let (c, ev, r) = episode_evidence(qp, e);
        evidence = ev;
        rows = r;
        (c, &["goodput_bytes", "retransmitted_packets"])
    } else if let Some(missed) = Some(missed_frames(cx, from, end_ns)).filter(|&n| n > 0) {
        let _ = write!(
            evidence,
            "the capture missed {missed} frame{} then: a gap in what was captured, not a fall in what was sent",
            if missed == 1 { "" } else { "s" }
        );
        (FindingCause::CaptureLoss, &["goodput_bytes"])
    } else if let Some(note) = cx
        .notes
        .iter()
        .find(|n| n.what != FindingCause::CaptureLoss && n.ts_ns >= from && n.ts_ns < end_ns)
    {
        evidence.push_str(match note.what {
            FindingCause::PfcPause => "the link was paused (PFC)",
            FindingCause::DpiDrop => "the DPI slot dropped packets",
            FindingCause::ReadTagLimit => "the host's PCIe read tags ran out",
            _ => "reported by the source",
        });
        (note.what, &["goodput_bytes"])
    } else if marks + cnps > 0 {
        if after_cnp {
            let first_cnp = (cnp_from..range.end).find(|&b| bins.cnps[b] > 0);
            let _ = write!(
                evidence,
                "congestion: a stepwise rate cut (DCQCN-style) from the level before the first CNP"
            );
            if let Some(b) = first_cnp {
                let _ = write!(evidence, " at {:.6} s", secs(s.bin_start_ns(b), cx.t0_ns));
            }
            let _ = write!(evidence, "; {cnps} CNPs, {marks} ECN-marked packets");
        } else {
            let _ = write!(
                evidence,
                "congestion: {marks} ECN-marked packets, {cnps} CNPs"
            );
        }
        (
            FindingCause::Congestion,
            &["goodput_bytes", "ecn_marked", "cnps"],
        )
    } else if shared {
        // Healthy: other QPs on the same hosts took the bandwidth.
        return None;
    } else if let Some(grown) = grown_state(qp, start_ns, end_ns, s.bin_ns) {
        let cause = match grown {
            TimeState::WindowFull => FindingCause::WindowLimited,
            TimeState::Recovering => FindingCause::LossGoBackN,
            TimeState::WaitingOnTimer => FindingCause::TimeoutStall,
            TimeState::RnrWait => FindingCause::ReceiverNotReady,
            TimeState::Paused => FindingCause::PfcPause,
            TimeState::RateLimited => FindingCause::Congestion,
            TimeState::Sharing => FindingCause::LinkShared,
            TimeState::Idle => FindingCause::SenderIdle,
            TimeState::HostLimited | TimeState::Sending | TimeState::Error => {
                FindingCause::HostLimited
            }
        };
        if cause == FindingCause::WindowLimited {
            let _ = write!(
                evidence,
                "the window full at {} packets ({})",
                qp.window_packets,
                match qp.window_from {
                    WindowFrom::Configured => "the configured window",
                    WindowFrom::Source => "the source's window",
                    WindowFrom::Held => "the capture shows the sender held at it",
                    WindowFrom::MostOutstanding => "the most outstanding seen",
                },
            );
            if let Some(rtt) = qp.rtt_p50_ns {
                let _ = write!(
                    evidence,
                    " with an ACK round trip of {}",
                    duration_text(rtt)
                );
            }
        } else {
            evidence.push_str(match grown {
                TimeState::Paused => "the link was paused (PFC)",
                TimeState::RateLimited => "paced after CNPs (congestion control)",
                TimeState::Sharing => "other QPs took the link it sends on",
                TimeState::Idle => "the sender had nothing posted between messages",
                TimeState::Recovering => "recovering from loss",
                TimeState::WaitingOnTimer => "waiting on the retransmission timer",
                TimeState::RnrWait => "waiting on RNR NAKs",
                _ => "waiting on the host (mid-message, window open, the link free: the host, PCIe or the card's payload fetch)",
            });
        }
        (
            cause,
            &["goodput_bytes", "end_outstanding", "time_by_state"],
        )
    } else {
        evidence.push_str(
            "the capture holds none of this QP's requests: its time by state is not known",
        );
        (
            FindingCause::Unexplained,
            &["goodput_bytes", "end_outstanding"],
        )
    };
    // Every drop names where its time went, against before it.
    if let Some(t) = states_text(qp, start_ns, end_ns, s.bin_ns) {
        let _ = write!(evidence, "; time: {t}");
    }
    let text = format!(
        "{}: {:.1} -> {:.1} GB/s at {:.6} s for {}: {evidence}",
        head(qp),
        before,
        during,
        secs(start_ns, cx.t0_ns),
        duration_text(end_ns - start_ns),
    );
    Some(Item {
        cause,
        item: FindingItem {
            start_ns,
            end_ns,
            before_gbytes_s: before,
            during_gbytes_s: during,
            first_index,
            text,
        },
        evidence,
        rows,
        series,
    })
}

/// Bins of history whose time by state a drop is held against.
fn before_of(start_ns: u64, bin_ns: u64) -> u64 {
    start_ns.saturating_sub(HISTORY_BINS as u64 * bin_ns)
}

/// Shares of each state in `from..to` of QP `qp`'s span (none without
/// accounted time).
fn shares(qp: &QpReport, from: u64, to: u64) -> Option<[f64; TIME_STATES]> {
    let ns = qp.states.between(from, to);
    let total: u64 = ns.iter().sum();
    (total > 0).then(|| ns.map(|n| n as f64 / total as f64))
}

/// The state (other than sending) whose share of the drop grew the most
/// against the bins before it, by a tenth of the drop at least; else the
/// one that held most of the drop (the QP was already held there, and
/// what held it gave less).
fn grown_state(qp: &QpReport, start_ns: u64, end_ns: u64, bin_ns: u64) -> Option<TimeState> {
    let during = shares(qp, start_ns, end_ns)?;
    let before = shares(qp, before_of(start_ns, bin_ns), start_ns).unwrap_or([0.0; TIME_STATES]);
    let waits = TimeState::ALL
        .into_iter()
        .filter(|&s| s != TimeState::Sending);
    let grown = waits.clone().max_by(|&a, &b| {
        let g = |s: TimeState| during[s as usize] - before[s as usize];
        g(a).total_cmp(&g(b))
    })?;
    if during[grown as usize] - before[grown as usize] >= GREW {
        return Some(grown);
    }
    waits.max_by(|&a, &b| during[a as usize].total_cmp(&during[b as usize]))
}

/// A state's share of a drop that grew this much against before it names
/// the drop.
const GREW: f64 = 0.1;

/// "window_full 81% (12% before), recovering 12% (0% before)": the
/// states of at least 5% of the drop, the largest first (at most four).
fn states_text(qp: &QpReport, start_ns: u64, end_ns: u64, bin_ns: u64) -> Option<String> {
    let during = shares(qp, start_ns, end_ns)?;
    let before = shares(qp, before_of(start_ns, bin_ns), start_ns).unwrap_or([0.0; TIME_STATES]);
    let mut by: Vec<TimeState> = TimeState::ALL
        .into_iter()
        .filter(|&s| during[s as usize] >= 0.05)
        .collect();
    by.sort_by(|&a, &b| during[b as usize].total_cmp(&during[a as usize]));
    let parts: Vec<String> = by
        .iter()
        .take(4)
        .map(|&s| {
            format!(
                "{} {:.0}% ({:.0}% before)",
                s.name(),
                during[s as usize] * 100.0,
                before[s as usize] * 100.0
            )
        })
        .collect();
    (!parts.is_empty()).then(|| parts.join(", "))
}

/// Frames the capture missed in `from..end_ns`: the source's count, or
/// the PSNs the ACKs showed were sent where it counts fewer (both may
/// count the same frames).
fn missed_frames(cx: &Context<'_>, from: u64, end_ns: u64) -> u64 {
    let (mut counted, mut psns) = (0, 0);
    for n in cx
        .notes
        .iter()
        .filter(|n| n.what == FindingCause::CaptureLoss && n.ts_ns >= from && n.ts_ns < end_ns)
    {
        *if n.from_psns { &mut psns } else { &mut counted } += n.count;
    }
    counted.max(psns)
}

fn nak_name(code: NakCode) -> &'static str {
    match code {
        NakCode::InvalidRequest => "Invalid Request NAK",
        NakCode::RemoteAccessError => "Remote Access Error NAK",
        NakCode::RemoteOperationalError => "Remote Operational Error NAK",
        _ => "NAK",
    }
}
