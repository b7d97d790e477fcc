//! Text every front end and every output shares (TUI, GUI, `rocescope
//! stats`, the HTML report): bytes, durations, addresses, the analysis flags
//! and causes, the cells of the QP and episode tables. Needs no model: only
//! the store's row types and the analysis report, so that `rocescope-report`
//! and the workbench core format a QP or an episode the same way.

use std::net::Ipv6Addr;

use rocescope_decoders::analysis::{
    Counters, Episode, EpisodeCause, QpReport, Report, Series, TimeState,
};
/// The one formatter of each unit (`rocescope_decoders::units`), here
/// beside the rest of the text the views show.
pub use rocescope_decoders::units::{duration_text, size_text};
use rocescope_decoders::{FieldValue, Opcode};

use crate::store::Flags;

/// `1.2 kB`: a byte count in decimal units.
/// What the diagnosis says when it has nothing to tell: no drop, no QP in
/// error or stuck, no disagreement with the card's counters.
pub const NO_FINDINGS: &str = "no findings: no throughput drop, no QP in error or stuck";

/// Time since `t0_ns` in seconds with ns digits, or `#N` for captures whose
/// timestamps are packet indices (`ordinal`).
pub fn rel_time_text(t0_ns: u64, ts_ns: u64, ordinal: bool) -> String {
    if ordinal {
        return format!("#{ts_ns}");
    }
    let d = ts_ns.saturating_sub(t0_ns);
    format!("{}.{:09}", d / 1_000_000_000, d % 1_000_000_000)
}

/// A wall-clock time (ns since the Unix epoch) as UTC with every digit:
/// `2025-11-29 07:06:40.000005662 UTC`.
pub fn utc_text(ns: u64) -> String {
    let secs = ns / 1_000_000_000;
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Howard Hinnant's civil_from_days, for days since 1970-01-01.
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02}.{:09} UTC",
        rem / 3_600,
        rem % 3_600 / 60,
        rem % 60,
        ns % 1_000_000_000
    )
}

/// `1 question`, `2 questions`: a count and its noun in the number it takes.
pub fn counted(n: u64, one: &str, many: &str) -> String {
    if n == 1 {
        format!("{n} {one}")
    } else {
        format!("{n} {many}")
    }
}

/// A rate of rows a second in the unit that suits it: `2.15 M rows/s`,
/// `10.7 k rows/s`, `9 rows/s` (not `0.00 M rows/s` for a small table).
pub fn rows_rate_text(rows: u64, secs: f64) -> String {
    let rate = rows as f64 / secs.max(1e-9);
    if rate >= 1e6 {
        format!("{:.2} M rows/s", rate / 1e6)
    } else if rate >= 1e3 {
        format!("{:.1} k rows/s", rate / 1e3)
    } else {
        format!("{rate:.0} rows/s")
    }
}

/// An address as people write it (IPv4-mapped addresses as IPv4, native
/// IB LIDs as `LID 0x0001`).
pub fn addr(a: [u8; 16]) -> rocescope_decoders::Endpoint {
    rocescope_decoders::Endpoint(a)
}

/// NAKs of every kind a QP received.
pub fn naks(c: &Counters) -> u64 {
    c.packet_seq_err
        + c.rnr_nak
        + c.nak_invalid_request
        + c.nak_remote_access
        + c.nak_remote_operational
}

/// Retransmission episodes of a QP, of every cause.
pub fn episodes_of(q: &QpReport) -> u64 {
    q.episodes_by_cause.iter().map(|(_, n)| n).sum()
}

/// Analysis verdicts of a row, as short tags (`RETX NAK ...`).
pub fn flag_text(f: Flags) -> String {
    let tags = [
        (Flags::RETRANSMISSION, "RETX"),
        (Flags::NAK, "NAK"),
        (Flags::OUT_OF_SEQUENCE, "OOS"),
        (Flags::DUPLICATE, "DUP"),
        (Flags::CAPTURE_LOSS, "CAPLOSS"),
        (Flags::CNP, "CNP"),
        (Flags::ECN_CE, "CE"),
        (Flags::ICRC_BAD, "BAD-ICRC"),
    ];
    let mut s = String::new();
    for (flag, tag) in tags {
        if f.contains(flag) {
            if !s.is_empty() {
                s.push(' ');
            }
            s.push_str(tag);
        }
    }
    s
}

/// The kind of event a row is, for colouring: the most serious first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowClass {
    Error,
    Retransmission,
    OutOfOrder,
    Congestion,
    NotRoce,
    Normal,
}

pub fn row_class(f: Flags) -> RowClass {
    if f.contains(Flags::ICRC_BAD) || f.contains(Flags::NAK) {
        RowClass::Error
    } else if f.contains(Flags::RETRANSMISSION) {
        RowClass::Retransmission
    } else if f.contains(Flags::OUT_OF_SEQUENCE) || f.contains(Flags::DUPLICATE) {
        RowClass::OutOfOrder
    } else if f.contains(Flags::CNP) || f.contains(Flags::ECN_CE) {
        RowClass::Congestion
    } else if !f.contains(Flags::ROCE) {
        RowClass::NotRoce
    } else {
        RowClass::Normal
    }
}

/// An opcode name short enough for a list column.
pub fn short_opcode(op: u8) -> String {
    Opcode(op)
        .name()
        .to_string()
        .replace("RDMA ", "")
        .replace("Response", "Resp")
        .replace("Acknowledge", "ACK")
}

/// A field's value as the detail trees show it: addresses, keys, QPNs and
/// CRCs in hex, the rest in decimal.
pub fn field_value(name: &str, value: &FieldValue<'_>) -> String {
    match value {
        FieldValue::U64(v) => {
            if name.ends_with("destqp")
                || name.ends_with("va")
                || name.ends_with("r_key")
                || name.ends_with("crc")
            {
                format!("0x{v:x}")
            } else {
                v.to_string()
            }
        }
        FieldValue::Bool(b) => u8::from(*b).to_string(),
        FieldValue::Ipv4(a) => std::net::Ipv4Addr::from(*a).to_string(),
        FieldValue::Ipv6(a) => Ipv6Addr::from(*a).to_string(),
        FieldValue::Mac(m) => m
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<Vec<_>>()
            .join(":"),
        FieldValue::Bytes(b) => format!("{} bytes", b.len()),
    }
}

/// Wire throughput of `s` (GB/s) resampled to `n` equal columns over
/// `[start_ns, end_ns)`: each column is the mean rate of the bins it covers,
/// or the rate of the bin it lies in when bins are wider than columns.
/// Costs O(n + bins in range), so a plot draws about two points per pixel
/// whatever the capture's length.
pub fn resample_rate(s: &Series, start_ns: f64, end_ns: f64, n: usize) -> Vec<f64> {
    let mut out = vec![0.0; n];
    if n == 0 || s.bins.is_empty() || s.bin_ns == 0 || end_ns <= start_ns {
        return out;
    }
    let col_ns = (end_ns - start_ns) / n as f64;
    let bin_ns = s.bin_ns as f64;
    let origin = s.start_ns as f64;
    let nb = s.bins.len();
    for (c, slot) in out.iter_mut().enumerate() {
        let a = start_ns + c as f64 * col_ns;
        let b = a + col_ns;
        let first = ((a - origin) / bin_ns).floor();
        let last = ((b - origin) / bin_ns).ceil() - 1.0;
        if last < 0.0 || first >= nb as f64 {
            continue;
        }
        let first = first.max(0.0) as usize;
        let last = (last as usize).min(nb - 1);
        let mut sum = 0.0;
        for i in first..=last {
            sum += s.rate_gbytes_s(i);
        }
        *slot = sum / (last + 1 - first) as f64;
    }
    out
}

/// Why an episode started, in words (the report's tables, the plots'
/// captions).
pub fn cause_text(c: EpisodeCause) -> &'static str {
    match c {
        EpisodeCause::NakSeqErr => "NAK (PSN sequence error)",
        EpisodeCause::Rnr => "RNR NAK (no receive buffer)",
        EpisodeCause::Timeout => "timeout (no NAK, the timer fired)",
        EpisodeCause::ImpliedNak => "READ response lost (READ re-issued)",
    }
}

/// Why an episode started, short enough for a legend or a list column.
pub fn cause_short(c: EpisodeCause) -> &'static str {
    match c {
        EpisodeCause::NakSeqErr => "NAK",
        EpisodeCause::Rnr => "RNR NAK",
        EpisodeCause::Timeout => "timeout",
        EpisodeCause::ImpliedNak => "READ re-issued",
    }
}

/// Every episode cause, in the order legends list them.
pub const CAUSES: [EpisodeCause; 4] = [
    EpisodeCause::NakSeqErr,
    EpisodeCause::Rnr,
    EpisodeCause::Timeout,
    EpisodeCause::ImpliedNak,
];

/// `0x000011`: a QP number as every table writes it.
pub fn qpn(n: u32) -> String {
    format!("0x{n:06x}")
}

/// `QP 0x000011`: the responder's QPN, as the tables name a QP.
pub fn qp_name(q: &QpReport) -> String {
    format!("QP {}", qpn(q.dest_qp))
}

/// `10.0.0.1 > 10.0.0.2`: requester to responder, as the packet summaries
/// write a flow; `(both ends request)` where the responder's requests are
/// the row the other way.
pub fn qp_route(q: &QpReport) -> String {
    let both = if q.both_request {
        " (both ends request)"
    } else {
        ""
    };
    format!("{} > {}{both}", addr(q.requester), addr(q.responder))
}

/// A round trip, or `-` when none was measured.
pub fn rtt_text(ns: Option<u64>) -> String {
    ns.map_or_else(|| "-".to_owned(), duration_text)
}

/// Column headings of the QP tables (one row per QP conversation).
pub const QP_COLUMNS: [&str; 11] = [
    "QP",
    "requester > responder",
    "state",
    "next PSN",
    "oldest",
    "window",
    "bytes",
    "retx",
    "NAKs",
    "CNPs",
    "RTT p50",
];

/// The cells of QP `i`'s row under [`QP_COLUMNS`], its state and
/// outstanding packets as at `ts_ns` (the time cursor; the end of the
/// capture for a summary), so that "window full" and the count beside it
/// tell the same time. The window is the analysis' `window_packets`, a
/// parameter of the run, not a constant; `≥N` when the capture shows
/// only that the window is at least the most outstanding.
pub fn qp_cells(report: &Report, i: usize, ts_ns: u64) -> Option<[String; 11]> {
    let q = report.qps.get(i)?;
    let c = &q.counters;
    let state = report
        .time_state_at(i as u32, ts_ns)
        .map_or("-", |s| s.name());
    Some([
        qpn(q.dest_qp),
        qp_route(q),
        state.to_owned(),
        q.next_psn.to_string(),
        q.oldest_unacked_psn
            .map_or_else(|| "-".to_owned(), |p| p.to_string()),
        format!(
            "{}/{}{}",
            report.outstanding_at(i as u32, ts_ns).unwrap_or(0),
            if q.window_seen { "" } else { "≥" },
            q.window_packets
        ),
        size_text(q.wire_bytes),
        c.retransmitted_packets.to_string(),
        naks(c).to_string(),
        c.np_cnp_sent.to_string(),
        rtt_text(q.rtt_p50_ns),
    ])
}

/// Where QP `q`'s time went: "window_full 97.1%, sending 2.9%", the
/// states of at least 0.1% of its span, the largest first; `-` without
/// accounted time.
pub fn time_by_state_text(q: &QpReport) -> String {
    let s = &q.states;
    let span = s.end_ns.saturating_sub(s.start_ns);
    if span == 0 {
        return "-".to_owned();
    }
    let mut by: Vec<(u64, &str)> = TimeState::ALL
        .iter()
        .map(|&st| (s.totals_ns[st as usize], st.name()))
        .filter(|&(ns, _)| ns * 1000 >= span)
        .collect();
    by.sort_by_key(|b| std::cmp::Reverse(b.0));
    by.iter()
        .map(|(ns, name)| format!("{name} {:.1}%", *ns as f64 * 100.0 / span as f64))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The colour each time state is drawn in, the same in both workbenches
/// and the report: reds for trouble, blue for the window, greens for the
/// wire, grey for idle.
pub fn state_rgb(s: TimeState) -> [u8; 3] {
    match s {
        TimeState::Error => [220, 50, 47],
        TimeState::WaitingOnTimer => [203, 75, 22],
        TimeState::RnrWait => [211, 54, 130],
        TimeState::Recovering => [222, 165, 30],
        TimeState::Paused => [140, 120, 220],
        TimeState::WindowFull => [38, 139, 210],
        TimeState::Sending => [120, 190, 60],
        TimeState::Sharing => [42, 161, 152],
        TimeState::RateLimited => [240, 210, 100],
        TimeState::HostLimited => [160, 170, 180],
        TimeState::Idle => [80, 80, 80],
    }
}

/// QP `q`'s time by state as a bar of `cells` cells: the states held, in
/// the order that decides, each its share of the cells (the largest
/// remainders rounded up, so they fill the bar); none without accounted
/// time.
pub fn time_bar(q: &QpReport, cells: usize) -> Vec<(TimeState, usize)> {
    let s = &q.states;
    let span: u64 = s.totals_ns.iter().sum();
    if span == 0 || cells == 0 {
        return Vec::new();
    }
    let exact: Vec<(TimeState, f64)> = TimeState::ALL
        .iter()
        .map(|&st| {
            (
                st,
                s.totals_ns[st as usize] as f64 * cells as f64 / span as f64,
            )
        })
        .filter(|&(_, x)| x > 0.0)
        .collect();
    let mut out: Vec<(TimeState, usize)> = exact.iter().map(|&(st, x)| (st, x as usize)).collect();
    let mut left = cells - out.iter().map(|c| c.1).sum::<usize>();
    let mut order: Vec<usize> = (0..exact.len()).collect();
    order.sort_by(|&a, &b| (exact[b].1.fract()).total_cmp(&exact[a].1.fract()));
    for i in order {
        if left == 0 {
            break;
        }
        out[i].1 += 1;
        left -= 1;
    }
    out.retain(|c| c.1 > 0);
    out
}

/// Column headings of the episode lists.
pub const EPISODE_COLUMNS: [&str; 8] = [
    "frame", "time", "QP", "cause", "from PSN", "resent", "bytes", "recovery",
];

/// How an episode ended: its recovery time, or that it did not recover.
pub fn recovery_text(e: &Episode) -> String {
    if e.recovered {
        duration_text(e.recovery_ns)
    } else {
        "not recovered".to_owned()
    }
}

/// The cells of an episode's row under [`EPISODE_COLUMNS`]; `time` is its
/// start as the caller writes times ([`rel_time_text`]).
pub fn episode_cells(report: &Report, e: &Episode, time: String) -> [String; 8] {
    let qp = report
        .qps
        .get(e.qp as usize)
        .map_or_else(|| format!("#{}", e.qp), |q| qpn(q.dest_qp));
    [
        (e.first_index + 1).to_string(),
        time,
        qp,
        cause_short(e.cause).to_owned(),
        e.from_psn.to_string(),
        e.packets_resent.to_string(),
        size_text(e.bytes_resent),
        recovery_text(e),
    ]
}

// ---------------------------------------------------------------- capture points

/// A signed duration: `-1.25 µs`, `640 ns`.
pub fn signed_duration_text(ns: i64) -> String {
    if ns < 0 {
        format!("-{}", duration_text(ns.unsigned_abs()))
    } else {
        duration_text(ns as u64)
    }
}

/// Column headings of the capture points' table.
pub const POINT_COLUMNS: [&str; 7] = [
    "point",
    "offset",
    "drift",
    "spread",
    "frames",
    "capture loss",
    "aligned",
];

/// The cells of point `i`'s row under [`POINT_COLUMNS`].
pub fn point_cells(r: &crate::points::PointsReport, i: usize) -> Option<[String; 7]> {
    let p = r.points.get(i)?;
    let how = if i == 0 {
        "the clock".to_owned()
    } else if !p.aligned {
        "left out".to_owned()
    } else if p.fixed {
        "by hand".to_owned()
    } else if p.ordinal {
        "by order".to_owned()
    } else {
        let by = p
            .reference
            .and_then(|k| r.points.get(k))
            .map_or("?", |q| q.name.as_str());
        let way = if p.one_way { ", one way" } else { "" };
        format!("{} frames with {by}{way}", p.matched)
    };
    let (offset, drift, spread) = if i == 0 || !p.aligned || p.ordinal {
        ("-".to_owned(), "-".to_owned(), "-".to_owned())
    } else {
        (
            signed_duration_text(p.offset_ns),
            format!("{:+.2} ppm", p.drift_ppm),
            if p.fixed {
                "-".to_owned()
            } else {
                duration_text(p.spread_ns)
            },
        )
    };
    Some([
        p.name.clone(),
        offset,
        drift,
        spread,
        p.frames.to_string(),
        p.capture_loss.to_string(),
        how,
    ])
}

/// Column headings of the segments' latency table.
pub const SEGMENT_COLUMNS: [&str; 5] = ["segment", "frames", "p50", "p99", "max"];

/// The cells of a segment's row under [`SEGMENT_COLUMNS`].
pub fn segment_cells(s: &crate::points::SegmentLatency) -> [String; 5] {
    [
        s.name.clone(),
        s.frames.to_string(),
        signed_duration_text(s.p50_ns),
        signed_duration_text(s.p99_ns),
        signed_duration_text(s.max_ns),
    ]
}

/// Column headings of the losses' table.
pub const LOSS_COLUMNS: [&str; 6] = ["time", "QP", "PSN", "opcode", "segment", "seen at"];

/// The points a mask names, in index order: `a, sw`.
pub fn points_named(r: &crate::points::PointsReport, mask: u16) -> String {
    r.points
        .iter()
        .enumerate()
        .filter(|(i, _)| mask & (1 << i) != 0)
        .map(|(_, p)| p.name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The cells of a loss's row under [`LOSS_COLUMNS`]; `time` as the caller
/// writes times.
pub fn loss_cells(
    r: &crate::points::PointsReport,
    l: &crate::points::Loss,
    time: String,
) -> [String; 6] {
    [
        time,
        qpn(l.dest_qp),
        l.psn.to_string(),
        short_opcode(l.opcode),
        l.segment.clone(),
        points_named(r, l.seen),
    ]
}

/// Losses per segment (as placed, `a>sw or sw>b` its own), in path order
/// of their first appearance: (segment, frames, of which requests).
pub fn losses_by_segment(r: &crate::points::PointsReport) -> Vec<(String, u64, u64)> {
    let mut out: Vec<(String, u64, u64)> = Vec::new();
    for l in &r.losses {
        match out.iter_mut().find(|(s, _, _)| *s == l.segment) {
            Some(e) => {
                e.1 += 1;
                e.2 += u64::from(l.request);
            }
            None => out.push((l.segment.clone(), 1, u64::from(l.request))),
        }
    }
    // Segments in the order of the latency table, then the others.
    let order = |s: &str| {
        r.segments
            .iter()
            .position(|x| x.name == s)
            .unwrap_or(usize::MAX)
    };
    out.sort_by_key(|(s, _, _)| (order(s), s.clone()));
    out
}

/// Column headings of the NAK episodes' latencies (Lumina's).
pub const EPISODE_TIMES_COLUMNS: [&str; 6] = [
    "time",
    "QP",
    "PSN",
    "NAK generation",
    "NAK reaction",
    "resend span",
];

/// The cells of one NAK episode's row under [`EPISODE_TIMES_COLUMNS`].
pub fn episode_times_cells(e: &crate::points::EpisodeTimes, time: String) -> [String; 6] {
    let d = |v: Option<i64>| v.map_or_else(|| "-".to_owned(), signed_duration_text);
    [
        time,
        qpn(e.dest_qp),
        e.psn.to_string(),
        d(e.nak_generation_ns),
        d(e.nak_reaction_ns),
        d(e.resend_span_ns),
    ]
}

/// The capture points' summary both workbenches' Overviews show: one-way
/// latency per segment, losses by segment, capture loss, each clock.
pub fn points_overview_lines(r: &crate::points::PointsReport) -> Vec<String> {
    let mut out = vec![format!(
        "{:<8} {:>10} {:>10} {:>8}",
        "segment", "p50", "p99", "frames"
    )];
    for s in &r.segments {
        let c = segment_cells(s);
        out.push(format!("{:<8} {:>10} {:>10} {:>8}", c[0], c[2], c[3], c[1]));
    }
    let by = losses_by_segment(r);
    if by.is_empty() {
        out.push("losses: none placed".to_owned());
    } else {
        let parts: Vec<String> = by.iter().map(|(s, n, _)| format!("{s} {n}")).collect();
        out.push(format!("losses: {}", parts.join(", ")));
    }
    for p in r.points.iter().filter(|p| p.capture_loss > 0) {
        out.push(format!(
            "capture loss: {} missed {}",
            p.name,
            counted(p.capture_loss, "frame", "frames")
        ));
    }
    for i in 1..r.points.len() {
        if let Some(c) = point_cells(r, i) {
            out.push(match (c[1] == "-", c[3] == "-") {
                (true, _) => format!("clock {}: {}", c[0], c[6]),
                (false, true) => format!("clock {}: {} by hand", c[0], c[1]),
                (false, false) => format!("clock {}: {} {} ±{}", c[0], c[1], c[2], c[3]),
            });
        }
    }
    out.extend(r.warnings.iter().map(|w| format!("note: {w}")));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A QP's time bar fills its cells, each state its share of them.
    #[test]
    fn a_time_bar_fills_its_cells_by_share() {
        use rocescope_decoders::analysis::{AnalysisConfig, Observation, RcAnalysis};
        use rocescope_decoders::{DecodeConfig, LinkLayer, Opcode, PacketBuilder, decode};
        let mut an = RcAnalysis::new(AnalysisConfig::default());
        // 4 WRITEs back to back, then 10 µs idle, twice.
        let mut t = 1_000u64;
        for psn in 0..8u32 {
            let op = match psn % 4 {
                0 => Opcode::RC_WRITE_FIRST,
                3 => Opcode::RC_WRITE_LAST,
                _ => Opcode::RC_WRITE_MIDDLE,
            };
            let f = PacketBuilder::rocev2_ipv4([10, 0, 0, 1], [10, 0, 0, 2], op, 0x12, psn)
                .build(&[0; 4096]);
            let p = decode(&f, LinkLayer::Ethernet, &DecodeConfig::default());
            let o = Observation::from_packet(&p, t, f.len() as u32).unwrap();
            an.observe(u64::from(psn), &o);
            t += if psn % 4 == 3 { 10_000 } else { 335 };
        }
        let r = an.report();
        let bar = time_bar(&r.qps[0], 40);
        assert_eq!(bar.iter().map(|c| c.1).sum::<usize>(), 40, "{bar:?}");
        let sending = bar
            .iter()
            .find(|c| c.0 == TimeState::Sending)
            .map_or(0, |c| c.1);
        let idle = bar
            .iter()
            .find(|c| c.0 == TimeState::Idle)
            .map_or(0, |c| c.1);
        // 8 x 335 ns sending, 10 µs idle.
        assert!(
            (9..=12).contains(&sending) && (28..=31).contains(&idle),
            "{bar:?}"
        );
        assert!(time_bar(&r.qps[0], 0).is_empty());
    }

    #[test]
    fn resample_keeps_the_mean_and_fills_wide_bins() {
        let mut s = Series::new(0);
        let bin = s.bin_ns;
        for i in 0..100u64 {
            s.bin_mut(i * bin).wire_bytes = bin * (i % 2);
        }
        let start = s.start_ns as f64;
        let end = start + 100.0 * bin as f64;
        // 10 columns of 10 bins: mean rate 0.5 GB/s each.
        let r = resample_rate(&s, start, end, 10);
        assert!(r.iter().all(|v| (v - 0.5).abs() < 1e-9), "{r:?}");
        // 1000 columns of a tenth of a bin: every column is its bin's rate.
        let r = resample_rate(&s, start, end, 1000);
        assert_eq!(r[5], 0.0);
        assert!((r[15] - 1.0).abs() < 1e-9);
        // Outside the series: zero.
        assert!(
            resample_rate(&s, end + 1.0, end + 1e6, 4)
                .iter()
                .all(|v| *v == 0.0)
        );
    }

    #[test]
    fn flags_as_text() {
        assert_eq!(flag_text(Flags(0)), "");
        let f = Flags(Flags::RETRANSMISSION.0 | Flags::NAK.0 | Flags::ROCE.0);
        assert_eq!(flag_text(f), "RETX NAK");
        assert_eq!(row_class(f), RowClass::Error);
    }

    #[test]
    fn times_and_sizes_in_words() {
        assert_eq!(duration_text(999), "999 ns");
        assert_eq!(duration_text(3_000), "3 µs");
        assert_eq!(size_text(9_100), "8.9 KiB");
        assert_eq!(rel_time_text(10, 1_000_000_010, false), "1.000000000");
        assert_eq!(rel_time_text(0, 7, true), "#7");
        assert_eq!(qpn(0x12), "0x000012");
        assert_eq!(utc_text(0), "1970-01-01 00:00:00.000000000 UTC");
        assert_eq!(
            utc_text(1_764_400_000_000_005_662),
            "2025-11-29 07:06:40.000005662 UTC"
        );
        assert_eq!(
            utc_text(951_782_400_000_000_000),
            "2000-02-29 00:00:00.000000000 UTC"
        );
        assert_eq!(counted(1, "question", "questions"), "1 question");
        assert_eq!(counted(0, "question", "questions"), "0 questions");
        assert_eq!(rows_rate_text(6_166, 0.578), "10.7 k rows/s");
        assert_eq!(rows_rate_text(1, 0.117), "9 rows/s");
        assert_eq!(rows_rate_text(2_000_000, 0.1), "20.00 M rows/s");
        assert_eq!(rows_rate_text(0, 0.0), "0 rows/s");
    }
}
