//! The analysis' report as JSON, the schema `stats --json` documents, for
//! every command that prints one (`stats`, `sim --headless`, `attach`):
//! the report's rows (`analysis::rows`) as they serialise.

use rocescope_decoders::analysis::{Counters, Report};
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

/// The report as JSON: the schema `rocescope stats --json` documents.
pub fn report_json(r: &Report) -> Value {
    json!({
        "qps": r.qp_rows(),
        "link_gbps": r.link_gbps,
        "counters": counters_json(&r.counters),
        "episodes": r.episode_rows(),
        "findings": r.finding_rows(),
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
