//! Findings that are not throughput drops: a QP in error (a fatal NAK, its
//! retries or RNR retries exhausted) or stuck with data unacknowledged.

use super::*;

/// Findings that are not throughput drops: the QP in error, or stuck.
pub(super) fn qp_events(qp_id: u32, qp: &QpReport, cx: &Context<'_>) -> Vec<Item> {
    let mut out = Vec::new();
    let open = cx
        .episodes
        .iter()
        .rev()
        .find(|e| e.qp == qp_id && !e.recovered);
    let item = |start_ns: u64, end_ns: u64, first_index: u64, evidence: String| FindingItem {
        start_ns,
        end_ns,
        before_gbytes_s: 0.0,
        during_gbytes_s: 0.0,
        first_index: Some(first_index),
        text: format!(
            "{} at {:.6} s: {evidence}",
            head(qp),
            secs(start_ns, cx.t0_ns)
        ),
    };
    match qp.error {
        Some(err) => {
            let (cause, evidence, rows) = match err.reason {
                QpErrorReason::Nak(code) => {
                    let what = match code {
                        NakCode::InvalidRequest => {
                            "the responder rejected the request (on BALBOA, a DPI slot rejecting a WRITE sends it)"
                        }
                        NakCode::RemoteAccessError => {
                            "the responder refused the access (R_Key, address range or rights)"
                        }
                        _ => "the responder could not carry out the request",
                    };
                    let after = if qp.last_ts_ns > err.ts_ns {
                        format!(
                            "; its traffic goes on {} after, unanswered",
                            duration_text(qp.last_ts_ns - err.ts_ns)
                        )
                    } else {
                        String::new()
                    };
                    (
                        FindingCause::FatalNak,
                        format!(
                            "{} at PSN {} (row {}): {what}; the QP is in error from then on{after}",
                            nak_name(code),
                            err.psn,
                            err.index + 1
                        ),
                        vec![err.index],
                    )
                }
                QpErrorReason::RetriesExceeded => {
                    let (ev, rows) = match open {
                        Some(e) => {
                            let silences: Vec<u64> =
                                expiries_of(qp, e).map(|x| x.silence_ns).collect();
                            let mut rows: Vec<u64> = expiries_of(qp, e).map(|x| x.index).collect();
                            rows.push(e.first_index);
                            rows.sort_unstable();
                            rows.dedup();
                            (
                                format!(
                                    "PSN {} never acknowledged; the timer fired {} times ({}) and the retry count ({}) ran out: the QP is in error from about {:.6} s (req_transport_retries_exceeded)",
                                    err.psn,
                                    e.timer_expiries,
                                    schedule(&silences),
                                    cx.cfg.retry_limit,
                                    secs(err.ts_ns, cx.t0_ns),
                                ),
                                rows,
                            )
                        }
                        None => (
                            format!(
                                "PSN {}: the retry count ran out; the QP is in error",
                                err.psn
                            ),
                            vec![err.index],
                        ),
                    };
                    (FindingCause::RetriesExceeded, ev, rows)
                }
                QpErrorReason::RnrRetriesExceeded { naks } => (
                    FindingCause::RnrRetriesExceeded,
                    format!(
                        "PSN {}: {naks} RNR NAKs in a row (the last at row {}), then no resend to the end: the RNR retry count ran out and the QP is in error from about {:.6} s (rnr_nak_retry_err)",
                        err.psn,
                        err.index + 1,
                        secs(err.ts_ns, cx.t0_ns),
                    ),
                    vec![err.index],
                ),
            };
            let start = open.map_or(err.ts_ns, |e| e.start_ns.min(err.ts_ns));
            out.push(Item {
                cause,
                item: item(start, cx.end_ns.max(err.ts_ns), err.index, evidence.clone()),
                evidence,
                rows,
                series: &["end_outstanding"],
            });
        }
        None => {
            // Data unacknowledged when the QP's traffic ends, and silence
            // long past any round trip until the capture's end: stuck.
            let wait_ns = cx
                .cfg
                .timeout_silence_ns
                .max(qp.rtt_p50_ns.unwrap_or(0).saturating_mul(STUCK_RTTS));
            let silent_ns = cx.end_ns.saturating_sub(qp.last_ts_ns);
            // A timer still firing at the end is stuck however soon the
            // capture ends; a capture cut during a NAK's resend is not.
            let retrying = open.is_some_and(|e| e.timer_expiries > 0);
            // Responses seen: a capture of one direction only shows every
            // request outstanding for ever.
            let stuck =
                qp.outstanding > 0 && qp.responses > 0 && (retrying || silent_ns >= wait_ns);
            if stuck {
                let psn = qp.oldest_unacked_psn.unwrap_or(qp.next_psn);
                let (ev, first, rows) = match open {
                    Some(e) => {
                        let silences: Vec<u64> = expiries_of(qp, e).map(|x| x.silence_ns).collect();
                        let mut retries = if silences.is_empty() {
                            format!("{} Go-Back-N passes", e.retries + 1)
                        } else {
                            format!(
                                "the timer fired {} times ({})",
                                silences.len(),
                                schedule(&silences)
                            )
                        };
                        if e.timer_expiries > 0 && e.retries + 1 >= cx.cfg.retry_limit {
                            let _ = write!(
                                retries,
                                ", which spends the retry count ({}): the next expiry, due at {:.6} s after the capture ends, puts the QP in error",
                                cx.cfg.retry_limit,
                                secs(e.end_ns.saturating_add(e.silence_ns), cx.t0_ns)
                            );
                        }
                        (
                            format!(
                                "PSN {psn} and {} more unacknowledged; {retries}, the last at {:.6} s, then nothing for {} to the capture's end: a dead QP, not the end of its workload",
                                qp.outstanding.saturating_sub(1),
                                secs(e.end_ns, cx.t0_ns),
                                duration_text(cx.end_ns.saturating_sub(e.end_ns)),
                            ),
                            e.first_index,
                            vec![e.first_index, e.last_index],
                        )
                    }
                    None => (
                        format!(
                            "PSN {psn} and {} more unacknowledged, no resend and nothing for {} to the capture's end: a dead QP, not the end of its workload",
                            qp.outstanding.saturating_sub(1),
                            duration_text(silent_ns),
                        ),
                        0,
                        Vec::new(),
                    ),
                };
                let start = open.map_or(qp.last_ts_ns, |e| e.start_ns);
                let mut it = item(start, cx.end_ns, first, ev.clone());
                if open.is_none() {
                    it.first_index = None;
                }
                out.push(Item {
                    cause: FindingCause::QpStuck,
                    item: it,
                    evidence: ev,
                    rows,
                    series: &["end_outstanding"],
                });
            }
        }
    }
    out
}
