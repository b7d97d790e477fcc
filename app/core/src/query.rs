//! Read-only queries and text the front ends share: what the ladder of a QP
//! shows, throughput resampled to a plot's columns, the analysis flags and
//! times as text. UI-free, so that the TUI and the GUI compute them once.

use rocescope_decoders::Opcode;
use rocescope_decoders::analysis::{Counters, QpReport, Report, Series};
use rocescope_replay::TimeBase;
use rocescope_replay::store::{Flags, Row};

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
    /// Row number in the store.
    pub index: u64,
    pub row: Row,
    /// Requester -> responder (a request); otherwise a response or ACK.
    pub rightward: bool,
}

/// The QP the ladder shows: the selected one, else the first.
pub fn ladder_qp(model: &Model) -> Option<&QpReport> {
    let report = model.report();
    model
        .selected_qp
        .and_then(|i| report.qps.get(i as usize))
        .or(report.qps.first())
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
        })
        .collect()
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

/// Time relative to the first packet, in seconds with ns digits (`#N` for
/// captures whose timestamps are packet indices).
pub fn rel_time(model: &Model, ts_ns: u64) -> String {
    let t0 = model.store.stats().first_ts_ns.unwrap_or(0);
    if model.store.time_base() == TimeBase::Ordinal {
        return format!("#{ts_ns}");
    }
    let d = ts_ns.saturating_sub(t0);
    format!("{}.{:09}", d / 1_000_000_000, d % 1_000_000_000)
}

pub fn human_bytes(b: u64) -> String {
    match b {
        0..1_000 => format!("{b} B"),
        1_000..1_000_000 => format!("{:.1} kB", b as f64 / 1e3),
        1_000_000..1_000_000_000 => format!("{:.1} MB", b as f64 / 1e6),
        _ => format!("{:.2} GB", b as f64 / 1e9),
    }
}

/// NAKs of every kind a QP received.
pub fn naks(c: &Counters) -> u64 {
    c.packet_seq_err
        + c.rnr_nak
        + c.nak_invalid_request
        + c.nak_remote_access
        + c.nak_remote_operational
}

/// QP `qp`'s state at `ts_ns` (the time cursor) in a word or two, as the
/// QP views show it: what it is doing then, not what it ever did.
pub fn qp_state(report: &Report, qp: usize, ts_ns: u64) -> &'static str {
    report
        .qp_state_at(qp as u32, ts_ns)
        .map_or("-", |s| s.name())
}

/// An address as people write it (IPv4-mapped addresses as IPv4).
pub fn addr(a: [u8; 16]) -> std::net::IpAddr {
    let v6 = std::net::Ipv6Addr::from(a);
    v6.to_ipv4_mapped()
        .map_or(std::net::IpAddr::V6(v6), std::net::IpAddr::V4)
}

/// A field's value as the detail trees show it: addresses, keys, QPNs and
/// CRCs in hex, the rest in decimal.
pub fn field_value(name: &str, value: &rocescope_decoders::FieldValue<'_>) -> String {
    use rocescope_decoders::FieldValue;
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
        FieldValue::Ipv6(a) => std::net::Ipv6Addr::from(*a).to_string(),
        FieldValue::Mac(m) => m
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<Vec<_>>()
            .join(":"),
        FieldValue::Bytes(b) => format!("{} bytes", b.len()),
    }
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
