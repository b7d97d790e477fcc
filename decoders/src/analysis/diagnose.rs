//! Throughput-drop diagnosis: find where a QP's data rate falls well below
//! its recent level and say why, from the evidence around it.

use std::fmt::Write;
use std::net::{IpAddr, Ipv6Addr};

use super::{AnalysisConfig, Episode, EpisodeCause, QpReport};

/// What a drop is attributed to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
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
    /// The sender had nothing to send: no requests and nothing outstanding.
    SenderIdle,
    /// None of the above was seen.
    Unexplained,
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
            FindingCause::SenderIdle => "sender_idle",
            FindingCause::Unexplained => "unexplained",
        }
    }
}

/// Evidence from outside the frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Note {
    pub ts_ns: u64,
    pub what: FindingCause,
}

/// One explained throughput drop.
#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    /// QP conversation (index into the report's QPs).
    pub qp: u32,
    pub start_ns: u64,
    pub end_ns: u64,
    pub before_gbytes_s: f64,
    pub during_gbytes_s: f64,
    pub cause: FindingCause,
    /// The row to jump to (the episode's first evidence), when there is one.
    pub first_index: Option<u64>,
    /// One sentence for people.
    pub text: String,
}

/// A drop is a bin below this share of the recent level...
const DROP_SHARE: f64 = 0.5;
/// ...and it ends when the rate is back above this share.
const RECOVER_SHARE: f64 = 0.8;
/// Bins of history that make the recent level.
const HISTORY_BINS: usize = 8;
/// A drop must last at least this many bins.
const MIN_DROP_BINS: usize = 4;
/// History bins that must carry data for the level to count.
const MIN_BUSY_BINS: usize = 6;
/// Below this recent level (GB/s) a QP is too quiet to call a drop.
const MIN_LEVEL_GBYTES_S: f64 = 0.05;

pub(crate) fn addr(a: [u8; 16]) -> IpAddr {
    let v6 = Ipv6Addr::from(a);
    v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4)
}

/// Human duration: ns, µs, ms or s with three significant figures.
pub(crate) fn human_ns(ns: u64) -> String {
    let f = ns as f64;
    if ns < 1_000 {
        format!("{ns} ns")
    } else if ns < 1_000_000 {
        format!("{:.3} µs", f / 1e3).replace(".000", "")
    } else if ns < 1_000_000_000 {
        format!("{:.3} ms", f / 1e6)
    } else {
        format!("{:.3} s", f / 1e9)
    }
}

pub(crate) fn diagnose(
    qps: &[QpReport],
    episodes: &[Episode],
    notes: &[Note],
    cfg: &AnalysisConfig,
    t0_ns: u64,
) -> Vec<Finding> {
    let mut out = Vec::new();
    for (qp_id, qp) in qps.iter().enumerate() {
        let s = &qp.series;
        let rev = qp.reverse_series.as_ref();
        // The QP's data rate: goodput both ways (WRITEs go out, READ data comes back).
        let rate = |i: usize| -> f64 {
            let t = s.bin_start_ns(i);
            let back = rev.map_or(0.0, |r| {
                if r.bin_ns == s.bin_ns && t >= r.start_ns {
                    r.goodput_gbytes_s(((t - r.start_ns) / r.bin_ns) as usize)
                } else {
                    0.0
                }
            });
            s.goodput_gbytes_s(i) + back
        };
        let n = s.bins.len();
        let mut i = HISTORY_BINS;
        while i < n {
            let history = i - HISTORY_BINS..i;
            let level: f64 = history.clone().map(rate).sum::<f64>() / HISTORY_BINS as f64;
            // Only a steady stream has a level to fall from: bursty traffic
            // with idle bins between bursts is not a drop.
            let busy = history.filter(|&h| rate(h) > 0.0).count();
            if level < MIN_LEVEL_GBYTES_S || busy < MIN_BUSY_BINS || rate(i) >= DROP_SHARE * level {
                i += 1;
                continue;
            }
            let start = i;
            let mut end = i + 1;
            while end < n && rate(end) < RECOVER_SHARE * level {
                end += 1;
            }
            let during = (start..end).map(rate).sum::<f64>() / (end - start) as f64;
            if end - start < MIN_DROP_BINS {
                // A blip of a bin or three is burstiness, not a drop.
                i = end;
                continue;
            }
            if end == n && during == 0.0 {
                // The traffic stopped for good: the end of a workload, not a drop.
                break;
            }
            let start_ns = s.bin_start_ns(start);
            let end_ns = s.bin_start_ns(end);
            out.push(explain(
                qp_id as u32,
                qp,
                episodes,
                notes,
                cfg,
                start_ns,
                end_ns,
                level,
                during,
                start..end,
                t0_ns,
            ));
            i = end + HISTORY_BINS;
        }
    }
    out.sort_by_key(|f| f.start_ns);
    out
}

#[allow(clippy::too_many_arguments)]
fn explain(
    qp_id: u32,
    qp: &QpReport,
    episodes: &[Episode],
    notes: &[Note],
    cfg: &AnalysisConfig,
    start_ns: u64,
    end_ns: u64,
    before: f64,
    during: f64,
    bins: std::ops::Range<usize>,
    t0_ns: u64,
) -> Finding {
    let s = &qp.series;
    // Evidence may start a little before the rate falls.
    let from = start_ns.saturating_sub(2 * s.bin_ns);
    let mut evidence = String::new();
    let mut first_index = None;
    let ep = episodes.iter().find(|e| {
        e.qp == qp_id && e.start_ns < end_ns && e.end_ns.max(e.start_ns + e.recovery_ns) >= from
    });
    let cause = if let Some(e) = ep {
        first_index = Some(e.first_index);
        let c = match e.cause {
            EpisodeCause::NakSeqErr if e.nak_inferred => {
                let _ = write!(
                    evidence,
                    "loss at PSN {} (its NAK was not captured), Go-Back-N resent {} packets",
                    e.from_psn, e.packets_resent
                );
                FindingCause::LossGoBackN
            }
            EpisodeCause::NakSeqErr => {
                let _ = write!(
                    evidence,
                    "NAK (PSN sequence error) at PSN {}, Go-Back-N resent {} packets",
                    e.from_psn, e.packets_resent
                );
                FindingCause::LossGoBackN
            }
            EpisodeCause::Timeout => {
                let _ = write!(
                    evidence,
                    "no ACK for {}, then the timer fired and {} packets were resent from PSN {}",
                    human_ns(e.silence_ns),
                    e.packets_resent,
                    e.from_psn
                );
                FindingCause::TimeoutStall
            }
            EpisodeCause::Rnr => {
                let _ = write!(
                    evidence,
                    "RNR NAK at PSN {}: the responder had no receive buffer",
                    e.from_psn
                );
                FindingCause::ReceiverNotReady
            }
            EpisodeCause::ImpliedNak => {
                let _ = write!(
                    evidence,
                    "a READ response went missing; the READ was re-issued from PSN {}",
                    e.from_psn
                );
                FindingCause::ReadResponseLoss
            }
        };
        let _ = write!(evidence, ", recovery took {}", human_ns(e.recovery_ns));
        c
    } else if let Some(note) = notes.iter().find(|n| n.ts_ns >= from && n.ts_ns < end_ns) {
        let _ = write!(
            evidence,
            "{}",
            match note.what {
                FindingCause::PfcPause => "the link was paused (PFC)",
                FindingCause::DpiDrop => "the DPI slot dropped packets",
                FindingCause::ReadTagLimit => "the host's PCIe read tags ran out",
                _ => "reported by the source",
            }
        );
        note.what
    } else {
        let marks: u32 = bins
            .clone()
            .filter_map(|i| s.bins.get(i))
            .map(|b| b.ecn_marked)
            .sum();
        let cnps: u32 = qp.reverse_series.as_ref().map_or(0, |r| {
            r.bins
                .iter()
                .enumerate()
                .filter(|(i, _)| {
                    let t = r.bin_start_ns(*i);
                    t >= from && t < end_ns
                })
                .map(|(_, b)| b.cnps)
                .sum()
        });
        // Outstanding packets per bin, carried through bins with no traffic
        // (a stalled window shows no packets, yet 16 are in flight).
        let mut carried = s.bins[..bins.start.min(s.bins.len())]
            .iter()
            .rev()
            .find(|b| b.packets > 0 || b.max_outstanding > 0)
            .map_or(0, |b| b.max_outstanding);
        let (mut full, mut idle) = (0usize, 0usize);
        for b in bins.clone().filter_map(|i| s.bins.get(i)) {
            if b.packets > 0 || b.max_outstanding > 0 {
                carried = b.max_outstanding;
            }
            full += usize::from(carried >= cfg.window_packets);
            idle += usize::from(b.packets == 0 && carried == 0);
        }
        if marks + cnps > 0 {
            let _ = write!(
                evidence,
                "congestion: {marks} ECN-marked packets, {cnps} CNPs"
            );
            FindingCause::Congestion
        } else if full * 2 >= bins.len() {
            let _ = write!(
                evidence,
                "{} packets outstanding (window full)",
                cfg.window_packets
            );
            if let Some(rtt) = qp.rtt_p50_ns {
                let _ = write!(evidence, " with an ACK round trip of {}", human_ns(rtt));
            }
            FindingCause::WindowLimited
        } else if idle * 2 >= bins.len() {
            evidence.push_str("the sender was idle (no requests, nothing outstanding)");
            FindingCause::SenderIdle
        } else {
            evidence.push_str("no loss, congestion, window or idle evidence in the capture");
            FindingCause::Unexplained
        }
    };
    let text = format!(
        "QP 0x{:x} {}>{}: {:.1} -> {:.1} GB/s at {:.6} s for {}: {evidence}",
        qp.dest_qp,
        addr(qp.requester),
        addr(qp.responder),
        before,
        during,
        start_ns.saturating_sub(t0_ns) as f64 / 1e9,
        human_ns(end_ns - start_ns),
    );
    Finding {
        qp: qp_id,
        start_ns,
        end_ns,
        before_gbytes_s: before,
        during_gbytes_s: during,
        cause,
        first_index,
        text,
    }
}
