//! The report's rows: one type per thing every output lists (QPs,
//! episodes, findings). `stats --json` serialises them as they are, the
//! Parquet/CSV tables take their columns from them, the HTML report and the
//! lessons read them. A field is added here once; each output's test
//! compares its fields with [`Row::specimen`]'s and fails on one it leaves
//! out without saying why.

use std::collections::BTreeMap;

use serde::Serialize;

use super::{CARD_QP, Counters, Episode, Finding, FindingItem, Report, TimeState};
use crate::Endpoint;

/// A row type of the report, with a specimen that has every optional field
/// present (for the outputs' completeness tests).
pub trait Row: Serialize {
    fn specimen() -> Self;
}

/// A requester QP: the `qps` of `stats --json` and the `qps` table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct QpRow {
    pub src_ip: String,
    pub dst_ip: String,
    pub dest_qp: u32,
    pub requester_qp: Option<u32>,
    pub both_request: bool,
    pub packets: u64,
    pub wire_bytes: u64,
    /// New payload bytes (WRITE and SEND payload, READ response payload;
    /// resends not counted) over the QP's span: bytes/ns is GB/s.
    pub goodput_gbytes_s: f64,
    pub requests: u64,
    pub responses: u64,
    pub next_psn: u32,
    pub oldest_unacked_psn: Option<u32>,
    pub outstanding_packets: u32,
    /// As the requester counts them: its card may not have taken the last
    /// responses yet.
    pub outstanding_counted: u32,
    pub window_packets: u32,
    /// Its state when the capture ends (that of its time by state).
    pub state_at_end: Option<&'static str>,
    /// From its first request to the end of its last packet; the states'
    /// times sum to it.
    pub span_ns: u64,
    pub time_by_state_ns: BTreeMap<&'static str, u64>,
    pub error: Option<QpErrorRow>,
    pub retransmitted_packets: u64,
    pub retransmitted_bytes: u64,
    pub episodes_by_cause: BTreeMap<&'static str, u64>,
    pub naks: NaksRow,
    pub capture_loss_packets: u64,
    pub duplicate_acks: u64,
    pub duplicate_read_responses: u64,
    pub out_of_sequence: u64,
    pub cnps: u64,
    pub ecn_marked: u64,
    pub rtt_p50_ns: Option<u64>,
    pub rtt_p99_ns: Option<u64>,
    /// Every counter under its mlx5/rxe name.
    pub counters: BTreeMap<&'static str, u64>,
}

/// The QP went to the error state.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct QpErrorRow {
    pub ts_ns: u64,
    pub psn: u32,
    pub frame: u64,
    pub reason: &'static str,
}

/// NAKs a QP received, by kind.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NaksRow {
    pub psn_seq_err: u64,
    pub rnr: u64,
    pub invalid_request: u64,
    pub remote_access_err: u64,
    pub remote_op_err: u64,
}

/// A Go-Back-N episode.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EpisodeRow {
    /// The QP's index in `qps`.
    pub qp: u32,
    pub dest_qp: Option<u32>,
    pub cause: &'static str,
    /// The NAK was not captured: the cause is inferred from the resend.
    pub nak_inferred: bool,
    /// Frame numbers count from 1, as Wireshark's do.
    pub first_frame: u64,
    pub last_frame: u64,
    pub start_ns: u64,
    pub end_ns: u64,
    pub from_psn: u32,
    pub packets_resent: u64,
    pub bytes_resent: u64,
    pub recovery_ns: u64,
    pub recovered: bool,
    pub silence_ns: u64,
    pub retries: u32,
    pub timer_expiries: u32,
    /// Lumina's latencies as one capture shows them: the generation where
    /// it saw the gap (the receiver's side), the reaction where it did not
    /// (the requester's).
    pub nak_generation_ns: Option<u64>,
    pub nak_reaction_ns: Option<u64>,
    /// Loss evidence the requester did not act on before its timer fired.
    pub unacted: Option<UnactedRow>,
}

/// Loss evidence before a timer-driven resend.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UnactedRow {
    pub cause: &'static str,
    pub ts_ns: u64,
    pub frame: u64,
    pub psn: u32,
}

/// A throughput-drop finding; `items` are the drops it stands for.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FindingRow {
    /// The QP's index in `qps`; `None`: a finding about the card.
    pub qp: Option<u32>,
    pub dest_qp: Option<u32>,
    pub start_ns: u64,
    pub end_ns: u64,
    pub before_gbytes_s: f64,
    pub during_gbytes_s: f64,
    pub cause: &'static str,
    pub first_frame: Option<u64>,
    pub text: String,
    pub count: usize,
    pub evidence_frames: Vec<u64>,
    pub series: Vec<&'static str>,
    pub items: Vec<FindingItemRow>,
}

/// One drop of a finding.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FindingItemRow {
    pub start_ns: u64,
    pub end_ns: u64,
    pub before_gbytes_s: f64,
    pub during_gbytes_s: f64,
    pub first_frame: Option<u64>,
    pub text: String,
}

fn named(c: &Counters) -> BTreeMap<&'static str, u64> {
    c.named().into_iter().collect()
}

impl Report {
    /// The QPs as rows; states at the end are those when the capture ends.
    pub fn qp_rows(&self) -> Vec<QpRow> {
        let end_ns = self.qps.iter().map(|q| q.last_ts_ns).max().unwrap_or(0);
        self.qps
            .iter()
            .enumerate()
            .map(|(i, q)| {
                let c = &q.counters;
                QpRow {
                    src_ip: Endpoint(q.requester).to_string(),
                    dst_ip: Endpoint(q.responder).to_string(),
                    dest_qp: q.dest_qp,
                    requester_qp: q.requester_qp,
                    both_request: q.both_request,
                    packets: q.packets,
                    wire_bytes: q.wire_bytes,
                    goodput_gbytes_s: q.goodput_gbytes_s(),
                    requests: q.requests,
                    responses: q.responses,
                    next_psn: q.next_psn,
                    oldest_unacked_psn: q.oldest_unacked_psn,
                    outstanding_packets: q.outstanding,
                    outstanding_counted: q.outstanding_counted,
                    window_packets: q.window_packets,
                    state_at_end: self.time_state_at(i as u32, end_ns).map(|s| s.name()),
                    span_ns: q.states.end_ns - q.states.start_ns,
                    time_by_state_ns: TimeState::ALL
                        .iter()
                        .map(|&s| (s.name(), q.states.totals_ns[s as usize]))
                        .collect(),
                    error: q.error.map(|e| QpErrorRow {
                        ts_ns: e.ts_ns,
                        psn: e.psn,
                        frame: e.index + 1,
                        reason: e.reason.name(),
                    }),
                    retransmitted_packets: c.retransmitted_packets,
                    retransmitted_bytes: c.retransmitted_bytes,
                    episodes_by_cause: q
                        .episodes_by_cause
                        .iter()
                        .map(|(k, n)| (k.name(), *n))
                        .collect(),
                    naks: NaksRow {
                        psn_seq_err: c.packet_seq_err,
                        rnr: c.rnr_nak,
                        invalid_request: c.nak_invalid_request,
                        remote_access_err: c.nak_remote_access,
                        remote_op_err: c.nak_remote_operational,
                    },
                    capture_loss_packets: c.capture_loss_packets,
                    duplicate_acks: c.duplicate_acks,
                    duplicate_read_responses: c.duplicate_read_responses,
                    out_of_sequence: c.out_of_sequence,
                    cnps: c.np_cnp_sent,
                    ecn_marked: c.np_ecn_marked_roce_packets,
                    rtt_p50_ns: q.rtt_p50_ns,
                    rtt_p99_ns: q.rtt_p99_ns,
                    counters: named(c),
                }
            })
            .collect()
    }

    /// The episodes as rows, in time order.
    pub fn episode_rows(&self) -> Vec<EpisodeRow> {
        self.episodes.iter().map(|e| self.episode_row(e)).collect()
    }

    fn episode_row(&self, e: &Episode) -> EpisodeRow {
        EpisodeRow {
            qp: e.qp,
            dest_qp: self.qps.get(e.qp as usize).map(|q| q.dest_qp),
            cause: e.cause.name(),
            nak_inferred: e.nak_inferred,
            first_frame: e.first_index + 1,
            last_frame: e.last_index + 1,
            start_ns: e.start_ns,
            end_ns: e.end_ns,
            from_psn: e.from_psn,
            packets_resent: e.packets_resent,
            bytes_resent: e.bytes_resent,
            recovery_ns: e.recovery_ns,
            recovered: e.recovered,
            silence_ns: e.silence_ns,
            retries: e.retries,
            timer_expiries: e.timer_expiries,
            nak_generation_ns: e.nak_generation_ns,
            nak_reaction_ns: e.nak_reaction_ns,
            unacted: e.unacted.map(|u| UnactedRow {
                cause: u.cause.name(),
                ts_ns: u.ts_ns,
                frame: u.index + 1,
                psn: u.psn,
            }),
        }
    }

    /// The findings as rows, in the order the diagnosis gives them.
    pub fn finding_rows(&self) -> Vec<FindingRow> {
        self.findings.iter().map(|f| self.finding_row(f)).collect()
    }

    fn finding_row(&self, f: &Finding) -> FindingRow {
        let item = |i: &FindingItem| FindingItemRow {
            start_ns: i.start_ns,
            end_ns: i.end_ns,
            before_gbytes_s: i.before_gbytes_s,
            during_gbytes_s: i.during_gbytes_s,
            first_frame: i.first_index.map(|i| i + 1),
            text: i.text.clone(),
        };
        FindingRow {
            qp: (f.qp != CARD_QP).then_some(f.qp),
            dest_qp: self.qps.get(f.qp as usize).map(|q| q.dest_qp),
            start_ns: f.start_ns,
            end_ns: f.end_ns,
            before_gbytes_s: f.before_gbytes_s,
            during_gbytes_s: f.during_gbytes_s,
            cause: f.cause.name(),
            first_frame: f.first_index.map(|i| i + 1),
            text: f.text.clone(),
            count: f.items.len(),
            evidence_frames: f.rows.iter().map(|i| i + 1).collect(),
            series: f.series.clone(),
            items: f.items.iter().map(item).collect(),
        }
    }
}

impl Row for QpRow {
    fn specimen() -> Self {
        QpRow {
            src_ip: "10.0.0.1".into(),
            dst_ip: "10.0.0.2".into(),
            dest_qp: 0x100,
            requester_qp: Some(0x200),
            both_request: false,
            packets: 10,
            wire_bytes: 10_000,
            goodput_gbytes_s: 1.5,
            requests: 8,
            responses: 2,
            next_psn: 8,
            oldest_unacked_psn: Some(6),
            outstanding_packets: 2,
            outstanding_counted: 2,
            window_packets: 16,
            state_at_end: Some(TimeState::Idle.name()),
            span_ns: 1_000,
            time_by_state_ns: TimeState::ALL.iter().map(|s| (s.name(), 1)).collect(),
            error: Some(QpErrorRow {
                ts_ns: 1,
                psn: 1,
                frame: 1,
                reason: "retry_exceeded",
            }),
            retransmitted_packets: 0,
            retransmitted_bytes: 0,
            episodes_by_cause: super::EpisodeCause::ALL
                .iter()
                .map(|c| (c.name(), 0))
                .collect(),
            naks: NaksRow {
                psn_seq_err: 0,
                rnr: 0,
                invalid_request: 0,
                remote_access_err: 0,
                remote_op_err: 0,
            },
            capture_loss_packets: 0,
            duplicate_acks: 0,
            duplicate_read_responses: 0,
            out_of_sequence: 0,
            cnps: 0,
            ecn_marked: 0,
            rtt_p50_ns: Some(1),
            rtt_p99_ns: Some(1),
            counters: named(&Counters::default()),
        }
    }
}

impl Row for EpisodeRow {
    fn specimen() -> Self {
        EpisodeRow {
            qp: 0,
            dest_qp: Some(0x100),
            cause: "timeout",
            nak_inferred: false,
            first_frame: 1,
            last_frame: 2,
            start_ns: 0,
            end_ns: 1,
            from_psn: 0,
            packets_resent: 1,
            bytes_resent: 1,
            recovery_ns: 1,
            recovered: true,
            silence_ns: 1,
            retries: 0,
            timer_expiries: 1,
            nak_generation_ns: Some(1),
            nak_reaction_ns: Some(1),
            unacted: Some(UnactedRow {
                cause: "implied_nak",
                ts_ns: 0,
                frame: 1,
                psn: 0,
            }),
        }
    }
}

impl Row for FindingRow {
    fn specimen() -> Self {
        let item = FindingItemRow {
            start_ns: 0,
            end_ns: 1,
            before_gbytes_s: 1.0,
            during_gbytes_s: 0.5,
            first_frame: Some(1),
            text: String::new(),
        };
        FindingRow {
            qp: Some(0),
            dest_qp: Some(0x100),
            start_ns: 0,
            end_ns: 1,
            before_gbytes_s: 1.0,
            during_gbytes_s: 0.5,
            cause: "window_full",
            first_frame: Some(1),
            text: String::new(),
            count: 1,
            evidence_frames: vec![1],
            series: vec![],
            items: vec![item],
        }
    }
}
