//! Findings from the card's own counters, held against the capture.

use super::*;

/// Findings from the card's own counters: the first reading against the
/// last, and the capture's series of every flow over the same interval.
pub(crate) fn card<'a>(
    readings: &[(u64, CardCounters)],
    series: impl Iterator<Item = &'a Series>,
    totals: &Counters,
    t0_ns: u64,
) -> Vec<Finding> {
    let mut out = Vec::new();
    let finding = |cause, start_ns, end_ns, text: String| Finding {
        qp: CARD_QP,
        start_ns,
        end_ns,
        before_gbytes_s: 0.0,
        during_gbytes_s: 0.0,
        cause,
        first_index: None,
        items: vec![FindingItem {
            start_ns,
            end_ns,
            before_gbytes_s: 0.0,
            during_gbytes_s: 0.0,
            first_index: None,
            text: text.clone(),
        }],
        text,
        rows: Vec::new(),
        series: vec!["retransmitted_packets"],
    };
    if let Some((ts, c)) = readings.iter().find(|(_, c)| c.stream_down > 0) {
        out.push(finding(
            FindingCause::StreamDown,
            *ts,
            *ts,
            format!(
                "the card at {:.6} s: STRM down = {}: its network stack is down until the card is reprogrammed; nothing it sends or receives after counts",
                secs(*ts, t0_ns),
                c.stream_down
            ),
        ));
    }
    let (Some(&(t1, first)), Some(&(t2, last))) = (readings.first(), readings.last()) else {
        return out;
    };
    if t2 <= t1 {
        return out;
    }
    // Resends the capture shows between the readings (bins inside them).
    let mut seen_retx = 0u64;
    for s in series {
        for (i, b) in s.bins.iter().enumerate() {
            let t = s.bin_start_ns(i);
            if t >= t1 && t + s.bin_ns <= t2 {
                seen_retx += b.retransmitted_packets;
            }
        }
    }
    let card_retx = last.retransmissions.saturating_sub(first.retransmissions);
    let when = format!(
        "between {:.6} s and {:.6} s",
        secs(t1, t0_ns),
        secs(t2, t0_ns)
    );
    if card_retx != seen_retx {
        let why = if card_retx > seen_retx {
            "the sniffer missed frames the card sent"
        } else {
            "the capture holds resends the card did not send (another requester's, or counters of another card)"
        };
        out.push(finding(
            FindingCause::CardCounterMismatch,
            t1,
            t2,
            format!(
                "the card counted {card_retx} retransmissions {when}, the capture shows {seen_retx}: {why}"
            ),
        ));
    }
    let card_drops = last.psn_drops.saturating_sub(first.psn_drops);
    let loss_seen = totals.packet_seq_err + totals.out_of_sequence + totals.retransmitted_packets;
    if card_drops > 0 && loss_seen == 0 {
        out.push(finding(
            FindingCause::CardCounterMismatch,
            t1,
            t2,
            format!(
                "the card dropped {card_drops} requests for their PSN {when}; the capture shows no gap, NAK or resend: the sniffer missed the frames around them"
            ),
        ));
    }
    out
}
