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

/// The column `name` of `rows`: `f` of each.
fn column<'a, R, T>(rows: &'a [R], name: &str, f: impl Fn(&'a R) -> T) -> Column
where
    Series: NamedFrom<Vec<T>, [T]>,
{
    Column::new(name.into(), rows.iter().map(f).collect::<Vec<T>>())
}

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
    let mut columns = vec![
        Column::new("qp".into(), (0..q.len() as u32).collect::<Vec<u32>>()),
        column(q, "src_ip", |q| q.src_ip.as_str()),
        column(q, "dst_ip", |q| q.dst_ip.as_str()),
        column(q, "dest_qp", |q| q.dest_qp),
        column(q, "requester_qp", |q| q.requester_qp),
        column(q, "both_request", |q| q.both_request),
        column(q, "packets", |q| q.packets),
        column(q, "wire_bytes", |q| q.wire_bytes),
        column(q, "goodput_gbytes_s", |q| q.goodput_gbytes_s),
        column(q, "requests", |q| q.requests),
        column(q, "responses", |q| q.responses),
        column(q, "next_psn", |q| q.next_psn),
        column(q, "oldest_unacked_psn", |q| q.oldest_unacked_psn),
        column(q, "outstanding_packets", |q| q.outstanding_packets),
        column(q, "outstanding_counted", |q| q.outstanding_counted),
        column(q, "retransmitted_packets", |q| q.retransmitted_packets),
        column(q, "retransmitted_bytes", |q| q.retransmitted_bytes),
    ];
    for cause in EpisodeCause::ALL {
        let name = column_name("qps", &["episodes_by_cause", cause.name()]);
        columns.push(column(q, &name, |q| {
            q.episodes_by_cause.get(cause.name()).copied().unwrap_or(0)
        }));
    }
    columns.extend([
        column(q, "naks_psn_seq_err", |q| q.naks.psn_seq_err),
        column(q, "naks_rnr", |q| q.naks.rnr),
        column(q, "naks_invalid_request", |q| q.naks.invalid_request),
        column(q, "naks_remote_access_err", |q| q.naks.remote_access_err),
        column(q, "naks_remote_op_err", |q| q.naks.remote_op_err),
        column(q, "capture_loss_packets", |q| q.capture_loss_packets),
        column(q, "duplicate_acks", |q| q.duplicate_acks),
        column(q, "duplicate_read_responses", |q| {
            q.duplicate_read_responses
        }),
        column(q, "out_of_sequence", |q| q.out_of_sequence),
        column(q, "cnps", |q| q.cnps),
        column(q, "ecn_marked", |q| q.ecn_marked),
        column(q, "window_packets", |q| q.window_packets),
        column(q, "state_at_end", |q| q.state_at_end),
        column(q, "span_ns", |q| q.span_ns),
    ]);
    for state in TimeState::ALL {
        let name = column_name("qps", &["time_by_state_ns", state.name()]);
        columns.push(column(q, &name, |q| {
            q.time_by_state_ns.get(state.name()).copied().unwrap_or(0)
        }));
    }
    columns.extend([
        column(q, "error_reason", |q| q.error.as_ref().map(|e| e.reason)),
        column(q, "error_ns", |q| q.error.as_ref().map(|e| e.ts_ns)),
        column(q, "error_psn", |q| q.error.as_ref().map(|e| e.psn)),
        column(q, "error_frame", |q| q.error.as_ref().map(|e| e.frame)),
        column(q, "rtt_p50_ns", |q| q.rtt_p50_ns),
        column(q, "rtt_p99_ns", |q| q.rtt_p99_ns),
    ]);
    // Every counter under its mlx5/rxe name, for holding next to
    // `rdma statistic`.
    for (name, _) in Counters::default().named() {
        columns.push(column(q, &column_name("qps", &["counters", name]), |q| {
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
    let unacted = |f: &dyn Fn(&UnactedRow) -> u64| {
        e.iter()
            .map(|e| e.unacted.as_ref().map(f))
            .collect::<Vec<Option<u64>>>()
    };
    frame(vec![
        column(e, "qp", |e| e.qp),
        column(e, "dest_qp", |e| e.dest_qp),
        column(e, "cause", |e| e.cause),
        column(e, "nak_inferred", |e| e.nak_inferred),
        column(e, "first_frame", |e| e.first_frame),
        column(e, "last_frame", |e| e.last_frame),
        column(e, "start_ns", |e| e.start_ns),
        column(e, "end_ns", |e| e.end_ns),
        column(e, "from_psn", |e| e.from_psn),
        column(e, "packets_resent", |e| e.packets_resent),
        column(e, "bytes_resent", |e| e.bytes_resent),
        column(e, "recovery_ns", |e| e.recovery_ns),
        column(e, "recovered", |e| e.recovered),
        column(e, "silence_ns", |e| e.silence_ns),
        column(e, "retries", |e| u64::from(e.retries)),
        column(e, "timer_expiries", |e| u64::from(e.timer_expiries)),
        column(e, "unacted_cause", |e| e.unacted.as_ref().map(|u| u.cause)),
        Column::new("unacted_ts_ns".into(), unacted(&|u| u.ts_ns)),
        Column::new("unacted_frame".into(), unacted(&|u| u.frame)),
        column(e, "unacted_psn", |e| e.unacted.as_ref().map(|u| u.psn)),
        column(e, "nak_generation_ns", |e| e.nak_generation_ns),
        column(e, "nak_reaction_ns", |e| e.nak_reaction_ns),
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
        column(f, "qp", |f| f.qp.map_or(-1, |q| q as i32)),
        column(f, "dest_qp", |f| f.dest_qp),
        column(f, "start_ns", |f| f.start_ns),
        column(f, "end_ns", |f| f.end_ns),
        column(f, "before_rate_gbytes_s", |f| f.before_gbytes_s),
        column(f, "during_rate_gbytes_s", |f| f.during_gbytes_s),
        column(f, "cause", |f| f.cause),
        column(f, "first_frame", |f| f.first_frame),
        column(f, "text", |f| f.text.as_str()),
        column(f, "count", |f| f.count as u32),
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
        column(&samples, "ts_ns", |s| s.ts_ns),
        column(&samples, "cycle", |s| s.cycle),
        column(&samples, "probe", |s| s.probe),
        column(&samples, "probe_name", |s| def(s.probe, |d| &d.name)),
        column(&samples, "unit", |s| def(s.probe, |d| &d.unit)),
        column(&samples, "module", |s| def(s.probe, |d| &d.module)),
        column(&samples, "value", |s| s.value),
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
        column(&d, "ts_ns", |s| s.ts_ns),
        column(&d, "slot", |s| match s.slot {
            SlotKind::Aes => "aes",
            SlotKind::Dpi => "dpi",
            SlotKind::App => "app",
        }),
        column(&d, "qpn", |s| s.qpn),
        column(&d, "psn", |s| s.psn),
        column(&d, "verdict", |s| match s.verdict {
            Verdict::Pass => "pass",
            Verdict::Drop => "drop",
            Verdict::Transformed => "transformed",
        }),
        column(&d, "latency_ns", |s| s.latency_ns),
        column(&d, "detail", |s| s.detail),
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
        column(l, "ts_ns", |x| x.ts_ns),
        column(l, "src", |x| addr(x.src)),
        column(l, "dst", |x| addr(x.dst)),
        column(l, "dest_qp", |x| x.dest_qp),
        column(l, "psn", |x| x.psn),
        column(l, "opcode", |x| x.opcode),
        column(l, "request", |x| x.request),
        column(l, "segment", |x| x.segment.clone()),
        column(l, "kind", |x| x.kind.name()),
        column(l, "seen_at", |x| seen(x.seen)),
        Column::new("frames".into(), l.iter().map(frames).collect::<Vec<_>>()),
        column(l, "evidence", |x| x.evidence.clone()),
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
