//! The small tables: QPs, episodes and findings from the analysis report,
//! profiler samples and slot decisions from the store's records.

use polars::prelude::*;
use rocescope_decoders::analysis::{
    Counters, EpisodeCause, EpisodeRow, FindingRow, QpRow, Report, TimeState, UnactedRow,
};
use rocescope_replay::points::PointsReport;
use rocescope_replay::record::{Record, SlotKind, Verdict};
use rocescope_replay::store::Store;

use crate::DataError;

fn addr(a: [u8; 16]) -> String {
    rocescope_decoders::Endpoint(a).to_string()
}

/// Columns holding QP numbers and PSNs (24-bit) or the `qp` id: signed
/// 32-bit. Other unsigned columns (counts, times, lengths) go to signed
/// 64-bit.
const INT32_COLUMNS: [&str; 10] = [
    "qp",
    "error_psn",
    "unacted_psn",
    "dest_qp",
    "requester_qp",
    "next_psn",
    "oldest_unacked_psn",
    "from_psn",
    "qpn",
    "psn",
];

/// The signed type a column is written as: Spark has no unsigned types
/// (it reads UINT_64 as decimal(20,0) and pushes no filter down on one).
fn signed_type(name: &str, dtype: &DataType) -> Option<DataType> {
    match dtype {
        DataType::UInt64 => Some(DataType::Int64),
        DataType::UInt32 if INT32_COLUMNS.contains(&name) => Some(DataType::Int32),
        DataType::UInt32 => Some(DataType::Int64),
        DataType::UInt16 => Some(DataType::Int32),
        DataType::UInt8 => Some(DataType::Int16),
        _ => None,
    }
}

/// A table of `columns`, every integer column signed (a value that does
/// not fit is an error naming the column, never a silent wrap).
fn frame(columns: Vec<Column>) -> Result<DataFrame, DataError> {
    let height = columns.first().map_or(0, |c| c.len());
    let columns = columns
        .into_iter()
        .map(|c| match signed_type(c.name(), c.dtype()) {
            Some(t) => c.strict_cast(&t),
            None => Ok(c),
        })
        .collect::<PolarsResult<Vec<_>>>()?;
    Ok(DataFrame::new(height, columns)?)
}

/// One row per QP conversation: the figures of `rocescope stats`.
pub fn qps(r: &Report) -> Result<DataFrame, DataError> {
    qp_table(&r.qp_rows())
}

/// How a table names a row's field at `path` (nested objects flattened):
/// the one rule the tables and their completeness test share.
pub fn column_name(table: &str, path: &[&str]) -> String {
    match (table, path) {
        (_, ["counters", name]) => format!("counter_{name}"),
        (_, ["episodes_by_cause", cause]) => format!("episodes_{cause}"),
        (_, ["time_by_state_ns", state]) => format!("time_{state}_ns"),
        (_, ["error", "ts_ns"]) => "error_ns".into(),
        ("findings", [rate @ ("before_gbytes_s" | "during_gbytes_s")]) => {
            rate.replace("_gbytes_s", "_rate_gbytes_s")
        }
        _ => path.join("_"),
    }
}

/// Fields of a table's rows it leaves out, and why (its completeness test
/// holds the rest to the row type).
pub fn left_out(table: &str) -> &'static [(&'static str, &'static str)] {
    match table {
        "findings" => &[
            ("evidence_frames", "frame lists: `stats --json` has them"),
            ("series", "plot names: `stats --json` has them"),
            (
                "items",
                "the drops a finding tells: `count`; `stats --json` lists them",
            ),
        ],
        _ => &[],
    }
}

/// The QPs' table from their rows; `qp` is a row's place, the id episodes
/// and findings refer to.
pub fn qp_table(q: &[QpRow]) -> Result<DataFrame, DataError> {
    let col_u64 = |name: &str, f: &dyn Fn(&QpRow) -> u64| {
        Column::new(name.into(), q.iter().map(f).collect::<Vec<u64>>())
    };
    let mut columns = vec![
        Column::new("qp".into(), (0..q.len() as u32).collect::<Vec<u32>>()),
        Column::new(
            "src_ip".into(),
            q.iter().map(|q| q.src_ip.as_str()).collect::<Vec<_>>(),
        ),
        Column::new(
            "dst_ip".into(),
            q.iter().map(|q| q.dst_ip.as_str()).collect::<Vec<_>>(),
        ),
        Column::new(
            "dest_qp".into(),
            q.iter().map(|q| q.dest_qp).collect::<Vec<_>>(),
        ),
        Column::new(
            "requester_qp".into(),
            q.iter().map(|q| q.requester_qp).collect::<Vec<_>>(),
        ),
        Column::new(
            "both_request".into(),
            q.iter().map(|q| q.both_request).collect::<Vec<_>>(),
        ),
        col_u64("packets", &|q| q.packets),
        col_u64("wire_bytes", &|q| q.wire_bytes),
        Column::new(
            "goodput_gbytes_s".into(),
            q.iter().map(|q| q.goodput_gbytes_s).collect::<Vec<_>>(),
        ),
        col_u64("requests", &|q| q.requests),
        col_u64("responses", &|q| q.responses),
        Column::new(
            "next_psn".into(),
            q.iter().map(|q| q.next_psn).collect::<Vec<_>>(),
        ),
        Column::new(
            "oldest_unacked_psn".into(),
            q.iter().map(|q| q.oldest_unacked_psn).collect::<Vec<_>>(),
        ),
        Column::new(
            "outstanding_packets".into(),
            q.iter().map(|q| q.outstanding_packets).collect::<Vec<_>>(),
        ),
        Column::new(
            "outstanding_counted".into(),
            q.iter().map(|q| q.outstanding_counted).collect::<Vec<_>>(),
        ),
        col_u64("retransmitted_packets", &|q| q.retransmitted_packets),
        col_u64("retransmitted_bytes", &|q| q.retransmitted_bytes),
    ];
    for cause in EpisodeCause::ALL {
        let name = column_name("qps", &["episodes_by_cause", cause.name()]);
        columns.push(col_u64(&name, &|q| {
            q.episodes_by_cause.get(cause.name()).copied().unwrap_or(0)
        }));
    }
    columns.extend([
        col_u64("naks_psn_seq_err", &|q| q.naks.psn_seq_err),
        col_u64("naks_rnr", &|q| q.naks.rnr),
        col_u64("naks_invalid_request", &|q| q.naks.invalid_request),
        col_u64("naks_remote_access_err", &|q| q.naks.remote_access_err),
        col_u64("naks_remote_op_err", &|q| q.naks.remote_op_err),
        col_u64("capture_loss_packets", &|q| q.capture_loss_packets),
        col_u64("duplicate_acks", &|q| q.duplicate_acks),
        col_u64("duplicate_read_responses", &|q| q.duplicate_read_responses),
        col_u64("out_of_sequence", &|q| q.out_of_sequence),
        col_u64("cnps", &|q| q.cnps),
        col_u64("ecn_marked", &|q| q.ecn_marked),
        Column::new(
            "window_packets".into(),
            q.iter().map(|q| q.window_packets).collect::<Vec<_>>(),
        ),
        Column::new(
            "state_at_end".into(),
            q.iter().map(|q| q.state_at_end).collect::<Vec<_>>(),
        ),
        col_u64("span_ns", &|q| q.span_ns),
    ]);
    for state in TimeState::ALL {
        let name = column_name("qps", &["time_by_state_ns", state.name()]);
        columns.push(col_u64(&name, &|q| {
            q.time_by_state_ns.get(state.name()).copied().unwrap_or(0)
        }));
    }
    columns.extend([
        Column::new(
            "error_reason".into(),
            q.iter()
                .map(|q| q.error.as_ref().map(|e| e.reason))
                .collect::<Vec<_>>(),
        ),
        Column::new(
            "error_ns".into(),
            q.iter()
                .map(|q| q.error.as_ref().map(|e| e.ts_ns))
                .collect::<Vec<_>>(),
        ),
        Column::new(
            "error_psn".into(),
            q.iter()
                .map(|q| q.error.as_ref().map(|e| e.psn))
                .collect::<Vec<_>>(),
        ),
        Column::new(
            "error_frame".into(),
            q.iter()
                .map(|q| q.error.as_ref().map(|e| e.frame))
                .collect::<Vec<_>>(),
        ),
        Column::new(
            "rtt_p50_ns".into(),
            q.iter().map(|q| q.rtt_p50_ns).collect::<Vec<_>>(),
        ),
        Column::new(
            "rtt_p99_ns".into(),
            q.iter().map(|q| q.rtt_p99_ns).collect::<Vec<_>>(),
        ),
    ]);
    // Every counter under its mlx5/rxe name, for holding next to
    // `rdma statistic`.
    for (name, _) in Counters::default().named() {
        columns.push(col_u64(&column_name("qps", &["counters", name]), &|q| {
            q.counters.get(name).copied().unwrap_or(0)
        }));
    }
    frame(columns)
}

/// One row per run of one state of a requester QP's time (the runs its
/// time by state sums): every nanosecond of its span in one row.
pub fn qp_states(r: &Report) -> Result<DataFrame, DataError> {
    let (mut qp, mut dest_qp, mut start, mut end, mut state) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for (i, q) in r.qps.iter().enumerate() {
        for (s, e, st) in q.states.iter() {
            qp.push(i as u32);
            dest_qp.push(q.dest_qp);
            start.push(s);
            end.push(e);
            state.push(st.name());
        }
    }
    frame(vec![
        Column::new("qp".into(), qp),
        Column::new("dest_qp".into(), dest_qp),
        Column::new("start_ns".into(), start),
        Column::new("end_ns".into(), end),
        Column::new("state".into(), state),
    ])
}

/// One row per Go-Back-N episode.
pub fn episodes(r: &Report) -> Result<DataFrame, DataError> {
    episode_table(&r.episode_rows())
}

/// The episodes' table from their rows.
pub fn episode_table(e: &[EpisodeRow]) -> Result<DataFrame, DataError> {
    let col = |name: &str, f: &dyn Fn(&EpisodeRow) -> u64| {
        Column::new(name.into(), e.iter().map(f).collect::<Vec<u64>>())
    };
    let unacted = |f: &dyn Fn(&UnactedRow) -> u64| {
        e.iter()
            .map(|e| e.unacted.as_ref().map(f))
            .collect::<Vec<Option<u64>>>()
    };
    frame(vec![
        Column::new("qp".into(), e.iter().map(|e| e.qp).collect::<Vec<_>>()),
        Column::new(
            "dest_qp".into(),
            e.iter().map(|e| e.dest_qp).collect::<Vec<_>>(),
        ),
        Column::new(
            "cause".into(),
            e.iter().map(|e| e.cause).collect::<Vec<_>>(),
        ),
        Column::new(
            "nak_inferred".into(),
            e.iter().map(|e| e.nak_inferred).collect::<Vec<_>>(),
        ),
        col("first_frame", &|e| e.first_frame),
        col("last_frame", &|e| e.last_frame),
        col("start_ns", &|e| e.start_ns),
        col("end_ns", &|e| e.end_ns),
        Column::new(
            "from_psn".into(),
            e.iter().map(|e| e.from_psn).collect::<Vec<_>>(),
        ),
        col("packets_resent", &|e| e.packets_resent),
        col("bytes_resent", &|e| e.bytes_resent),
        col("recovery_ns", &|e| e.recovery_ns),
        Column::new(
            "recovered".into(),
            e.iter().map(|e| e.recovered).collect::<Vec<_>>(),
        ),
        col("silence_ns", &|e| e.silence_ns),
        col("retries", &|e| u64::from(e.retries)),
        col("timer_expiries", &|e| u64::from(e.timer_expiries)),
        Column::new(
            "unacted_cause".into(),
            e.iter()
                .map(|e| e.unacted.as_ref().map(|u| u.cause))
                .collect::<Vec<_>>(),
        ),
        Column::new("unacted_ts_ns".into(), unacted(&|u| u.ts_ns)),
        Column::new("unacted_frame".into(), unacted(&|u| u.frame)),
        Column::new(
            "unacted_psn".into(),
            e.iter()
                .map(|e| e.unacted.as_ref().map(|u| u.psn))
                .collect::<Vec<_>>(),
        ),
        Column::new(
            "nak_generation_ns".into(),
            e.iter().map(|e| e.nak_generation_ns).collect::<Vec<_>>(),
        ),
        Column::new(
            "nak_reaction_ns".into(),
            e.iter().map(|e| e.nak_reaction_ns).collect::<Vec<_>>(),
        ),
    ])
}

/// One row per throughput-drop finding, with its sentence.
pub fn findings(r: &Report) -> Result<DataFrame, DataError> {
    finding_table(&r.finding_rows())
}

/// The findings' table from their rows (see [`left_out`]).
pub fn finding_table(f: &[FindingRow]) -> Result<DataFrame, DataError> {
    frame(vec![
        // -1: a finding about the card, not a QP.
        Column::new(
            "qp".into(),
            f.iter()
                .map(|f| f.qp.map_or(-1, |q| q as i32))
                .collect::<Vec<i32>>(),
        ),
        Column::new(
            "dest_qp".into(),
            f.iter().map(|f| f.dest_qp).collect::<Vec<_>>(),
        ),
        Column::new(
            "start_ns".into(),
            f.iter().map(|f| f.start_ns).collect::<Vec<_>>(),
        ),
        Column::new(
            "end_ns".into(),
            f.iter().map(|f| f.end_ns).collect::<Vec<_>>(),
        ),
        Column::new(
            "before_rate_gbytes_s".into(),
            f.iter().map(|f| f.before_gbytes_s).collect::<Vec<_>>(),
        ),
        Column::new(
            "during_rate_gbytes_s".into(),
            f.iter().map(|f| f.during_gbytes_s).collect::<Vec<_>>(),
        ),
        Column::new(
            "cause".into(),
            f.iter().map(|f| f.cause).collect::<Vec<_>>(),
        ),
        Column::new(
            "first_frame".into(),
            f.iter().map(|f| f.first_frame).collect::<Vec<_>>(),
        ),
        Column::new(
            "text".into(),
            f.iter().map(|f| f.text.as_str()).collect::<Vec<_>>(),
        ),
        Column::new(
            "count".into(),
            f.iter().map(|f| f.count as u32).collect::<Vec<_>>(),
        ),
    ])
}

/// One row per profiler sample, with its probe's name, unit and module:
/// the store's, then those of `extra` (a waveform's chosen signals).
pub fn profiler(store: &Store, extra: &[Record]) -> Result<DataFrame, DataError> {
    let mut records =
        store.records_where(|r| matches!(r, Record::Profiler(_) | Record::ProbeDef(_)));
    records.extend(
        extra
            .iter()
            .filter(|r| matches!(r, Record::Profiler(_) | Record::ProbeDef(_)))
            .cloned(),
    );
    let mut defs = std::collections::HashMap::new();
    for r in &records {
        if let Record::ProbeDef(d) = r {
            defs.insert(d.probe, d);
        }
    }
    let samples: Vec<_> = records
        .iter()
        .filter_map(|r| match r {
            Record::Profiler(s) => Some(s),
            _ => None,
        })
        .collect();
    let def =
        |p: u16, f: fn(&rocescope_replay::record::ProbeDef) -> &str| defs.get(&p).map(|d| f(d));
    frame(vec![
        Column::new(
            "ts_ns".into(),
            samples.iter().map(|s| s.ts_ns).collect::<Vec<_>>(),
        ),
        Column::new(
            "cycle".into(),
            samples.iter().map(|s| s.cycle).collect::<Vec<_>>(),
        ),
        Column::new(
            "probe".into(),
            samples.iter().map(|s| s.probe).collect::<Vec<_>>(),
        ),
        Column::new(
            "probe_name".into(),
            samples
                .iter()
                .map(|s| def(s.probe, |d| &d.name))
                .collect::<Vec<_>>(),
        ),
        Column::new(
            "unit".into(),
            samples
                .iter()
                .map(|s| def(s.probe, |d| &d.unit))
                .collect::<Vec<_>>(),
        ),
        Column::new(
            "module".into(),
            samples
                .iter()
                .map(|s| def(s.probe, |d| &d.module))
                .collect::<Vec<_>>(),
        ),
        Column::new(
            "value".into(),
            samples.iter().map(|s| s.value).collect::<Vec<_>>(),
        ),
    ])
}

/// One row per service-slot decision.
pub fn slots(store: &Store) -> Result<DataFrame, DataError> {
    let records = store.records_where(|r| matches!(r, Record::Slot(_)));
    let d: Vec<_> = records
        .iter()
        .filter_map(|r| match r {
            Record::Slot(s) => Some(s),
            _ => None,
        })
        .collect();
    frame(vec![
        Column::new(
            "ts_ns".into(),
            d.iter().map(|s| s.ts_ns).collect::<Vec<_>>(),
        ),
        Column::new(
            "slot".into(),
            d.iter()
                .map(|s| match s.slot {
                    SlotKind::Aes => "aes",
                    SlotKind::Dpi => "dpi",
                    SlotKind::App => "app",
                })
                .collect::<Vec<_>>(),
        ),
        Column::new("qpn".into(), d.iter().map(|s| s.qpn).collect::<Vec<_>>()),
        Column::new("psn".into(), d.iter().map(|s| s.psn).collect::<Vec<_>>()),
        Column::new(
            "verdict".into(),
            d.iter()
                .map(|s| match s.verdict {
                    Verdict::Pass => "pass",
                    Verdict::Drop => "drop",
                    Verdict::Transformed => "transformed",
                })
                .collect::<Vec<_>>(),
        ),
        Column::new(
            "latency_ns".into(),
            d.iter().map(|s| s.latency_ns).collect::<Vec<_>>(),
        ),
        Column::new(
            "detail".into(),
            d.iter().map(|s| s.detail).collect::<Vec<_>>(),
        ),
    ])
}

/// One row per frame lost between capture points: where it was lost (the
/// segment, `a>sw`, or the receiving stack, `b`), the points that saw it
/// and the evidence. Empty without points.
pub fn losses(r: Option<&PointsReport>) -> Result<DataFrame, DataError> {
    let empty = Vec::new();
    let l = r.map_or(&empty, |r| &r.losses);
    let seen = |mask: u16| {
        r.map_or_else(String::new, |r| {
            rocescope_replay::text::points_named(r, mask)
        })
    };
    let frames = |x: &rocescope_replay::points::Loss| {
        x.rows
            .iter()
            .map(|(p, row)| {
                let name = r
                    .and_then(|r| r.points.get(usize::from(*p)))
                    .map_or("?", |s| s.name.as_str());
                format!("{name}:{}", row + 1)
            })
            .collect::<Vec<_>>()
            .join(" ")
    };
    frame(vec![
        Column::new(
            "ts_ns".into(),
            l.iter().map(|x| x.ts_ns).collect::<Vec<_>>(),
        ),
        Column::new(
            "src".into(),
            l.iter().map(|x| addr(x.src)).collect::<Vec<_>>(),
        ),
        Column::new(
            "dst".into(),
            l.iter().map(|x| addr(x.dst)).collect::<Vec<_>>(),
        ),
        Column::new(
            "dest_qp".into(),
            l.iter().map(|x| x.dest_qp).collect::<Vec<_>>(),
        ),
        Column::new("psn".into(), l.iter().map(|x| x.psn).collect::<Vec<_>>()),
        Column::new(
            "opcode".into(),
            l.iter().map(|x| x.opcode).collect::<Vec<_>>(),
        ),
        Column::new(
            "request".into(),
            l.iter().map(|x| x.request).collect::<Vec<_>>(),
        ),
        Column::new(
            "segment".into(),
            l.iter().map(|x| x.segment.clone()).collect::<Vec<_>>(),
        ),
        Column::new(
            "kind".into(),
            l.iter().map(|x| x.kind.name()).collect::<Vec<_>>(),
        ),
        Column::new(
            "seen_at".into(),
            l.iter().map(|x| seen(x.seen)).collect::<Vec<_>>(),
        ),
        Column::new("frames".into(), l.iter().map(frames).collect::<Vec<_>>()),
        Column::new(
            "evidence".into(),
            l.iter().map(|x| x.evidence.clone()).collect::<Vec<_>>(),
        ),
    ])
}

/// One row per frame of each capture point: the flow, the points that
/// saw it (its path as the packet list writes it) and its fate. Empty
/// without points.
pub fn paths(r: Option<&PointsReport>) -> Result<DataFrame, DataError> {
    use rocescope_replay::points::Fate;
    let mut point = Vec::new();
    let mut frame_no = Vec::new();
    let (mut src, mut dst, mut dest_qp) = (Vec::new(), Vec::new(), Vec::new());
    let (mut seen, mut path, mut fate) = (Vec::new(), Vec::new(), Vec::new());
    if let Some(r) = r {
        for (p, paths) in r.paths.iter().enumerate() {
            let name = r.points.get(p).map_or("?", |s| s.name.as_str());
            for (row, cell) in paths.iter() {
                let flow = r.flows.get(cell.flow as usize);
                point.push(name);
                frame_no.push(row + 1);
                src.push(flow.map(|f| addr(f.src)));
                dst.push(flow.map(|f| addr(f.dst)));
                dest_qp.push(flow.map(|f| f.dest_qp));
                seen.push(rocescope_replay::text::points_named(r, cell.seen));
                path.push(r.path_text(&cell));
                fate.push(match cell.fate {
                    Fate::Delivered => "delivered",
                    Fate::LostAfter(_) => "lost",
                    Fate::Stack => "dropped_in_stack",
                    Fate::Unjudged => "unjudged",
                });
            }
        }
    }
    frame(vec![
        Column::new("point".into(), point),
        Column::new("frame".into(), frame_no),
        Column::new("src".into(), src),
        Column::new("dst".into(), dst),
        Column::new("dest_qp".into(), dest_qp),
        Column::new("seen_at".into(), seen),
        Column::new("path".into(), path),
        Column::new("fate".into(), fate),
    ])
}
