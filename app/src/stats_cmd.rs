//! `rocescope stats`: the RC analysis of a capture: per-QP table, counters
//! named as mlx5/rxe name them, retransmission episodes and the diagnosis of
//! throughput drops.

use std::io::Write;
use std::path::Path;

use rocescope_decoders::DecodeConfig;
use rocescope_decoders::analysis::{AnalysisConfig, Counters, Episode, Report, TimeState};
use rocescope_replay::store::RcAnalyzer;
use rocescope_replay::text::{
    addr, cause_short, episodes_of, naks, qp_route, qpn, recovery_text, rtt_text,
    time_by_state_text,
};
use serde_json::{Map, Value, json};

use crate::info_cmd::open_store;

/// Drops of a grouped finding the text output lists under it.
const MAX_ITEMS: usize = 20;

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

/// Open `file` as the workbench does, with the RC analysis, and take its
/// report once indexing is done.
pub fn open_analysed(
    file: &Path,
    roce_ports: Vec<u16>,
) -> anyhow::Result<(std::sync::Arc<rocescope_replay::store::Store>, Report)> {
    let (store, analysis) = index_analysed(file, roce_ports, 0.0)?;
    Ok((store, analysis.finish_report()))
}

/// `file` indexed with the RC analysis (its link rate `link_gbps`, 0 for
/// the source's or the fastest the capture shows), and the analysis.
fn index_analysed(
    file: &Path,
    roce_ports: Vec<u16>,
    link_gbps: f64,
) -> anyhow::Result<(std::sync::Arc<rocescope_replay::store::Store>, RcAnalyzer)> {
    let analysis = RcAnalyzer::with_config(AnalysisConfig {
        link_gbps,
        ..AnalysisConfig::default()
    });
    let cfg = DecodeConfig {
        extra_roce_ports: roce_ports,
    };
    let store = open_store(file, cfg, Box::new(analysis.clone()))?;
    Ok((store, analysis))
}

/// Heap room for the report, asked for before indexing. The report is
/// built while other threads give the index and the hand-over batches
/// back (`munmap`, which holds the address-space lock), and glibc grows
/// the heap in 128 KiB steps, each a `brk` that waits for that lock: the
/// report's first milliseconds were spent waiting (`perf record -e
/// sched:sched_switch -g`). With 64 MiB of padding the heap grows once; the
/// pages are still faulted in only as they are used, without the lock.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
fn pad_heap() {
    const M_TRIM_THRESHOLD: i32 = -1;
    const M_TOP_PAD: i32 = -2;
    unsafe extern "C" {
        fn mallopt(param: i32, value: i32) -> i32;
    }
    // SAFETY: `mallopt` only tunes glibc's allocator (how far the heap
    // grows at a time and when it shrinks); no memory changes hands.
    unsafe {
        mallopt(M_TOP_PAD, 64 << 20);
        mallopt(M_TRIM_THRESHOLD, 128 << 20);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn pad_heap() {}

pub fn run(
    file: &Path,
    json_out: bool,
    roce_ports: Vec<u16>,
    wave: Option<&Path>,
    link_gbps: Option<f64>,
) -> anyhow::Result<()> {
    use anyhow::Context as _;
    pad_heap();
    if let Some(g) = link_gbps
        && !(g.is_finite() && g > 0.0)
    {
        anyhow::bail!("--link-gbps {g}: the link rate must be a positive number of Gb/s");
    }
    let (store, analysis) = index_analysed(file, roce_ports, link_gbps.unwrap_or(0.0))?;
    let stats = store.stats();
    // A card's converted capture numbers its packets: no time to account.
    let ordinal = store.time_base() == rocescope_replay::TimeBase::Ordinal;
    // The index is not read again: its pages go back on another thread
    // while this one writes the report (else the process's exit gives them
    // back after the output, a few ms on one core).
    let give_back = std::thread::Builder::new()
        .name("rocescope-free".into())
        .spawn(move || drop(store));
    let report = analysis.finish_report();
    let alignment = match wave {
        Some(w) => Some(
            rocescope_replay::wave::align(file, w, &Default::default())
                .with_context(|| format!("aligning {} with {}", w.display(), file.display()))?,
        ),
        None => None,
    };
    if json_out {
        let mut v = report_json(&report);
        if ordinal && let Some(qps) = v["qps"].as_array_mut() {
            for q in qps {
                q["span_ns"] = Value::Null;
                q["time_by_state_ns"] = Value::Null;
            }
        }
        if let (Some(a), Some(obj)) = (&alignment, v.as_object_mut()) {
            obj.insert(
                "alignment".into(),
                json!({
                    "wave": wave.map(|w| w.display().to_string()),
                    "offset_ns": a.offset_ns, "spread_ns": a.spread_ns, "matched": a.matched,
                    "capture_unmatched": a.capture_unmatched, "wave_unmatched": a.wave_unmatched,
                    "ordinal": a.ordinal,
                }),
            );
        }
        writeln!(std::io::stdout().lock(), "{v}")?;
        let _ = give_back.map(|t| t.join());
        return Ok(());
    }
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "{}: {} packets, {} RoCE, {} QP conversations",
        file.display(),
        stats.packets,
        stats.roce_packets,
        report.qps.len()
    )?;
    if let (Some(a), Some(w)) = (&alignment, wave) {
        writeln!(out, "{}: {a}", w.display())?;
    }
    writeln!(out)?;
    writeln!(
        out,
        "{:<33} {:>9} {:>8} {:>7} {:>6} {:>6} {:>7} {:>5} {:>10}",
        "QP (requester > responder)",
        "packets",
        "retrans",
        "episod",
        "NAKs",
        "CNPs",
        "cap.los",
        "outst",
        "RTT p50"
    )?;
    for q in &report.qps {
        let c = &q.counters;
        let name = format!("{} {}", qpn(q.dest_qp), qp_route(q));
        writeln!(
            out,
            "{name:<33} {:>9} {:>8} {:>7} {:>6} {:>6} {:>7} {:>5} {:>10}",
            q.packets,
            c.retransmitted_packets,
            episodes_of(q),
            naks(c),
            c.np_cnp_sent,
            c.capture_loss_packets,
            q.outstanding,
            rtt_text(q.rtt_p50_ns)
        )?;
    }
    writeln!(out)?;
    if ordinal {
        writeln!(
            out,
            "time by state: none (the capture's stamps are frame numbers, not times)"
        )?;
    } else {
        writeln!(
            out,
            "time by state (each QP's span, from its first request; link {} Gb/s):",
            report.link_gbps
        )?;
    }
    for q in report.qps.iter().filter(|_| !ordinal) {
        let name = format!("{} {}", qpn(q.dest_qp), qp_route(q));
        writeln!(
            out,
            "  {name:<33} {:>10}  {}",
            rocescope_replay::text::duration_text(q.states.end_ns - q.states.start_ns),
            time_by_state_text(q)
        )?;
    }
    writeln!(out)?;
    writeln!(out, "counters (mlx5/rxe names where they match):")?;
    for (k, v) in report.counters.named() {
        if v > 0 {
            writeln!(out, "  {k:<32} {v}")?;
        }
    }
    if !report.episodes.is_empty() {
        writeln!(out)?;
        writeln!(out, "retransmission episodes:")?;
        for e in report.episodes.iter().take(50) {
            writeln!(
                out,
                "  frame {:>8}  QP {}  {:<14} from PSN {:<8} resent {} packets ({} bytes), {}",
                e.first_index + 1,
                report
                    .qps
                    .get(e.qp as usize)
                    .map_or_else(|| format!("#{}", e.qp), |q| qpn(q.dest_qp)),
                cause_short(e.cause),
                e.from_psn,
                e.packets_resent,
                e.bytes_resent,
                if e.recovered {
                    format!("recovery {}", recovery_text(e))
                } else {
                    recovery_text(e)
                }
            )?;
        }
        if report.episodes.len() > 50 {
            writeln!(out, "  ... {} more", report.episodes.len() - 50)?;
        }
    }
    writeln!(out)?;
    if report.findings.is_empty() {
        writeln!(out, "diagnosis: {}", rocescope_replay::text::NO_FINDINGS)?;
    } else {
        writeln!(out, "diagnosis:")?;
        for f in &report.findings {
            writeln!(out, "  {}", f.text)?;
            // A grouped finding lists each of its drops under it.
            if f.items.len() > 1 {
                for i in f.items.iter().take(MAX_ITEMS) {
                    writeln!(out, "    - {}", i.text)?;
                }
                if f.items.len() > MAX_ITEMS {
                    writeln!(out, "    ... {} more", f.items.len() - MAX_ITEMS)?;
                }
            }
        }
    }
    let _ = give_back.map(|t| t.join());
    Ok(())
}
