//! The analysis' report as JSON, the schema `stats --json` documents, for
//! every command that prints one (`stats`, `sim --headless`, `attach`).

use rocescope_decoders::analysis::{Counters, Episode, Report, TimeState};
use rocescope_replay::points::PointsReport;
use rocescope_replay::text::addr;
use serde_json::{Map, Value, json};

fn counters_json(c: &Counters) -> Value {
    Value::Object(
        c.named()
            .iter()
            .map(|(k, v)| ((*k).to_owned(), json!(v)))
            .collect::<Map<_, _>>(),
    )
}

fn episode_json(e: &Episode) -> Value {
    json!({
        "qp": e.qp,
        "cause": e.cause.name(),
        "first_frame": e.first_index + 1,
        "last_frame": e.last_index + 1,
        "start_ns": e.start_ns,
        "from_psn": e.from_psn,
        "packets_resent": e.packets_resent,
        "bytes_resent": e.bytes_resent,
        "recovery_ns": e.recovery_ns,
        "recovered": e.recovered,
        "silence_ns": e.silence_ns,
        "retries": e.retries,
        "timer_expiries": e.timer_expiries,
        // Lumina's latencies as one capture shows them: the generation
        // where it saw the gap (the receiver's side), the reaction where
        // it did not (the requester's).
        "nak_generation_ns": e.nak_generation_ns,
        "nak_reaction_ns": e.nak_reaction_ns,
        // Loss evidence the requester did not act on before its timer fired.
        "unacted": e.unacted.map(|u| json!({
            "cause": u.cause.name(),
            "ts_ns": u.ts_ns,
            "frame": u.index + 1,
            "psn": u.psn,
        })),
    })
}

/// The report as JSON: the schema `rocescope stats --json` documents.
pub fn report_json(r: &Report) -> Value {
    // QP states are those when the capture ends.
    let end_ns = r.qps.iter().map(|q| q.last_ts_ns).max().unwrap_or(0);
    let qps: Vec<Value> = r
        .qps
        .iter()
        .enumerate()
        .map(|(i, q)| {
            let c = &q.counters;
            // From the same runs as its time by state.
            let state = r.time_state_at(i as u32, end_ns).map(|s| s.name());
            let by_state: Map<String, Value> = TimeState::ALL
                .iter()
                .map(|&s| (s.name().to_owned(), json!(q.states.totals_ns[s as usize])))
                .collect();
            let by_cause: Map<String, Value> = q
                .episodes_by_cause
                .iter()
                .map(|(k, n)| (k.name().to_owned(), json!(n)))
                .collect();
            json!({
                "src_ip": addr(q.requester).to_string(),
                "dst_ip": addr(q.responder).to_string(),
                "dest_qp": q.dest_qp,
                "requester_qp": q.requester_qp,
                "both_request": q.both_request,
                "packets": q.packets,
                "wire_bytes": q.wire_bytes,
                "requests": q.requests,
                "responses": q.responses,
                "next_psn": q.next_psn,
                "oldest_unacked_psn": q.oldest_unacked_psn,
                "outstanding_packets": q.outstanding,
                // As the requester counts them: its card may not have taken
                // the last responses yet.
                "outstanding_counted": q.outstanding_counted,
                "window_packets": q.window_packets,
                "state_at_end": state,
                // Every ns of its span, from its first request to the end of
                // its last packet, in one state: they sum to span_ns.
                "span_ns": q.states.end_ns - q.states.start_ns,
                "time_by_state_ns": by_state,
                "error": q.error.map(|e| json!({
                    "ts_ns": e.ts_ns,
                    "psn": e.psn,
                    "frame": e.index + 1,
                    "reason": e.reason.name(),
                })),
                "retransmitted_packets": c.retransmitted_packets,
                "retransmitted_bytes": c.retransmitted_bytes,
                "episodes_by_cause": by_cause,
                "naks": {
                    "psn_seq_err": c.packet_seq_err,
                    "rnr": c.rnr_nak,
                    "invalid_request": c.nak_invalid_request,
                    "remote_access_err": c.nak_remote_access,
                    "remote_op_err": c.nak_remote_operational,
                },
                "capture_loss_packets": c.capture_loss_packets,
                "duplicate_acks": c.duplicate_acks,
                "duplicate_read_responses": c.duplicate_read_responses,
                "out_of_sequence": c.out_of_sequence,
                "cnps": c.np_cnp_sent,
                "ecn_marked": c.np_ecn_marked_roce_packets,
                "rtt_p50_ns": q.rtt_p50_ns,
                "rtt_p99_ns": q.rtt_p99_ns,
                "counters": counters_json(c),
            })
        })
        .collect();
    json!({
        "qps": qps,
        "link_gbps": r.link_gbps,
        "counters": counters_json(&r.counters),
        "episodes": r.episodes.iter().map(episode_json).collect::<Vec<_>>(),
        "findings": r.findings.iter().map(|f| json!({
            "qp": f.qp,
            "start_ns": f.start_ns,
            "end_ns": f.end_ns,
            "before_gbytes_s": f.before_gbytes_s,
            "during_gbytes_s": f.during_gbytes_s,
            "cause": f.cause.name(),
            "first_frame": f.first_index.map(|i| i + 1),
            "text": f.text,
            "count": f.items.len(),
            "evidence_frames": f.rows.iter().map(|i| i + 1).collect::<Vec<_>>(),
            "series": f.series,
            "items": f.items.iter().map(|i| json!({
                "start_ns": i.start_ns,
                "end_ns": i.end_ns,
                "before_gbytes_s": i.before_gbytes_s,
                "during_gbytes_s": i.during_gbytes_s,
                "first_frame": i.first_index.map(|i| i + 1),
                "text": i.text,
            })).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
    })
}

/// A session of capture points as JSON: `stats --json`'s `multipoint`
/// (the contract of issue 47: `points`, `losses`, `segments`, `episodes`,
/// each with the keys it names; more beside them).
pub fn multipoint_json(r: &PointsReport, files: &[std::path::PathBuf]) -> Value {
    let name = |p: usize| r.points.get(p).map_or("?", |s| s.name.as_str());
    json!({
        "t0_ns": r.t0_ns,
        "points": r.points.iter().enumerate().map(|(i, p)| json!({
            "name": p.name,
            "offset_ns": p.offset_ns,
            "drift_ppm": p.drift_ppm,
            "frames": p.frames,
            "capture_loss": p.capture_loss,
            "file": files.get(i).map(|f| f.display().to_string()),
            "spread_ns": p.spread_ns,
            "matched": p.matched,
            "reference": p.reference.map(name),
            "fixed": p.fixed,
            "ordinal": p.ordinal,
            "aligned": p.aligned,
            "one_way": p.one_way,
            "first_ns": p.first_ns,
            "last_ns": p.last_ns,
            "ended_early": p.ended_early,
        })).collect::<Vec<_>>(),
        "losses": r.losses.iter().map(|l| json!({
            "src": addr(l.src).to_string(),
            "dst": addr(l.dst).to_string(),
            "dest_qp": l.dest_qp,
            "psn": l.psn,
            "opcode": l.opcode,
            "segment": l.segment,
            "ts_ns": l.ts_ns,
            "kind": l.kind.name(),
            "request": l.request,
            "seen_at": (0..r.points.len()).filter(|p| l.seen & (1 << p) != 0).map(name).collect::<Vec<_>>(),
            "frames": l.rows.iter().map(|(p, row)| json!({"point": name(usize::from(*p)), "frame": row + 1})).collect::<Vec<_>>(),
            "evidence": l.evidence,
        })).collect::<Vec<_>>(),
        "segments": r.segments.iter().map(|s| json!({
            "segment": s.name,
            "frames": s.frames,
            "p50_ns": s.p50_ns,
            "p99_ns": s.p99_ns,
            "min_ns": s.min_ns,
            "max_ns": s.max_ns,
            "negative": s.negative,
            "series": s.series.iter().map(|(t, p50, p99)| json!([t, p50, p99])).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
        "episodes": r.episodes.iter().map(|e| json!({
            "dest_qp": e.dest_qp,
            "psn": e.psn,
            "nak_generation_ns": e.nak_generation_ns,
            "nak_reaction_ns": e.nak_reaction_ns,
            "resend_span_ns": e.resend_span_ns,
            "ts_ns": e.ts_ns,
            "generation_at": e.generation_at.map(|p| name(usize::from(p))),
            "reaction_at": e.reaction_at.map(|p| name(usize::from(p))),
        })).collect::<Vec<_>>(),
        "capture_losses": r.capture_losses.iter().map(|c| json!({
            "point": name(usize::from(c.point)),
            "ts_ns": c.ts_ns,
            "dest_qp": c.dest_qp,
            "psn": c.psn,
            "opcode": c.opcode,
        })).collect::<Vec<_>>(),
        "journeys": r.journeys,
        "warnings": r.warnings,
    })
}
