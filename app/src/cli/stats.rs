//! `rocescope stats`: the RC analysis of a capture: per-QP table, counters
//! named as mlx5/rxe name them, retransmission episodes and the diagnosis of
//! throughput drops.

use std::io::Write;
use std::path::{Path, PathBuf};

use rocescope_decoders::analysis::AnalysisConfig;
use rocescope_replay::text::{
    cause_short, counted, episodes_of, naks, qp_route, qpn, recovery_text, rtt_text, size_text,
    time_by_state_text,
};
use serde_json::{Value, json};

use super::args::{FileArgs, PointArgs};
use super::output::{multipoint_json, report_json};
use crate::cli::capture::{
    align_wave, ila_json, index_analysed, indexing_error, warn_unread, warnings_json,
};

/// Drops of a grouped finding the text output lists under it.
const MAX_ITEMS: usize = 20;

/// Heap room for the report, asked for before indexing. The report is
/// built while other threads give the index and the hand-over batches
/// back (`munmap`, which holds the address-space lock), and glibc grows
/// the heap in 128 KiB steps, each a `brk` that waits for that lock: the
/// report's first milliseconds were spent waiting (`perf record -e
/// sched:sched_switch -g`). With 64 MiB of padding the heap grows once; the
/// pages are still faulted in only as they are used, without the lock.
fn pad_heap() {
    use crate::malloc::{Tune, tune};
    tune(&[Tune::TopPad(64 << 20), Tune::TrimThreshold(128 << 20)]);
}

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Capture file (pcap, pcapng, BALBOA sniffer dump) or waveform (VCD, FST,
    /// a Vivado ILA capture as CSV or VCD); or --point, several.
    #[arg(required_unless_present = "points", conflicts_with = "points")]
    file: Option<PathBuf>,
    /// Print one JSON object.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    file_args: FileArgs,
    /// --point, twice or more; and --link-gbps, the link rate.
    #[command(flatten)]
    points: PointArgs,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    if args.points.given()? {
        return points(&args);
    }
    let Some(file) = &args.file else {
        anyhow::bail!("give a capture, or two or more --point NAME=FILE");
    };
    analyse(file, args.json, &args.file_args, args.points.link_gbps)
}

fn analyse(
    file: &Path,
    json_out: bool,
    file_args: &FileArgs,
    link_gbps: Option<f64>,
) -> anyhow::Result<()> {
    let roce_ports = file_args.decode.roce_ports.clone();
    let wave = file_args.align.wave.as_deref();
    let options = &file_args.wave_args.options();
    let limits = &file_args.memory.limits();
    pad_heap();
    let (store, analysis) = index_analysed(
        file,
        roce_ports,
        options,
        AnalysisConfig {
            link_gbps: link_gbps.unwrap_or(0.0),
            ..AnalysisConfig::default()
        },
        limits,
    )?;
    let stats = store.stats();
    // A card's converted capture numbers its packets: no time to account.
    let ordinal = store.time_base() == rocescope_replay::TimeBase::Ordinal;
    let warnings = store.warnings();
    // A source that stopped early is told, and the run fails after what
    // it read (as `decode` does): never an analysis that looks whole.
    let failed = indexing_error(file, &store);
    let ila = store.ila();
    // The index is not read again: its pages go back on another thread
    // while this one writes the report (else the process's exit gives them
    // back after the output, a few ms on one core).
    let give_back = std::thread::Builder::new()
        .name("rocescope-free".into())
        .spawn(move || drop(store));
    let report = analysis.finish_report();
    let alignment = align_wave(file, wave, options)?;
    if json_out {
        let mut v = report_json(&report);
        if ordinal && let Some(qps) = v["qps"].as_array_mut() {
            for q in qps {
                q["span_ns"] = Value::Null;
                q["time_by_state_ns"] = Value::Null;
            }
        }
        if let Some(obj) = v.as_object_mut() {
            obj.insert("warnings".into(), warnings_json(&warnings));
            obj.insert("error".into(), failed.as_deref().into());
            if let Some(ila) = &ila {
                obj.insert("ila".into(), ila_json(ila));
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
        warn_unread(file, &warnings);
        let _ = give_back.map(|t| t.join());
        return failed.map_or(Ok(()), |e| Err(anyhow::anyhow!(e)));
    }
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "{}: {} packets, {} RoCE, {}",
        file.display(),
        stats.packets,
        stats.roce_packets,
        counted(
            report.qps.len() as u64,
            "QP conversation",
            "QP conversations"
        )
    )?;
    if let (Some(a), Some(w)) = (&alignment, wave) {
        writeln!(out, "{}: {a}", w.display())?;
    }
    if let Some(ila) = &ila {
        writeln!(out, "{}", ila.describe())?;
    }
    writeln!(out)?;
    // Whole words in 80 columns: two heading lines, and each QP's route
    // on a line of its own below its numbers.
    writeln!(
        out,
        "{:<8} {:>9} {:>7} {:>9} {:>6} {:>6} {:>8} {:>8} {:>10}",
        "", "", "", "", "", "", "capture", "unACKed", "RTT"
    )?;
    writeln!(
        out,
        "{:<8} {:>9} {:>7} {:>9} {:>6} {:>6} {:>8} {:>8} {:>10}",
        "QP", "packets", "resent", "episodes", "NAKs", "CNPs", "loss", "at end", "p50"
    )?;
    for q in &report.qps {
        let c = &q.counters;
        writeln!(
            out,
            "{:<8} {:>9} {:>7} {:>9} {:>6} {:>6} {:>8} {:>8} {:>10}",
            qpn(q.dest_qp),
            q.packets,
            c.retransmitted_packets,
            episodes_of(q),
            naks(c),
            c.np_cnp_sent,
            c.capture_loss_packets,
            q.outstanding,
            rtt_text(q.rtt_p50_ns)
        )?;
        writeln!(out, "  {}", qp_route(q))?;
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
            "time by state (each QP's span from its first request; link {} Gb/s):",
            report.link_gbps
        )?;
        // The states wrap under the QP to keep within 80 columns.
        for q in &report.qps {
            writeln!(
                out,
                "  {}  span {}, goodput {:.2} GB/s",
                qpn(q.dest_qp),
                rocescope_replay::text::duration_text(q.states.end_ns - q.states.start_ns),
                q.goodput_gbytes_s()
            )?;
            for line in wrap(&time_by_state_text(q), 74) {
                writeln!(out, "    {line}")?;
            }
        }
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
        writeln!(
            out,
            "{:>8}  {:<8}  {:<14}  {:>8}  {:>6}  {:>8}  recovery",
            "frame", "QP", "cause", "from PSN", "resent", "bytes"
        )?;
        for e in report.episodes.iter().take(50) {
            writeln!(
                out,
                "{:>8}  {:<8}  {:<14}  {:>8}  {:>6}  {:>8}  {}",
                e.first_index + 1,
                report
                    .qps
                    .get(e.qp as usize)
                    .map_or_else(|| format!("#{}", e.qp), |q| qpn(q.dest_qp)),
                cause_short(e.cause),
                e.from_psn,
                e.packets_resent,
                size_text(e.bytes_resent),
                recovery_text(e)
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
    drop(out);
    warn_unread(file, &warnings);
    let _ = give_back.map(|t| t.join());
    failed.map_or(Ok(()), |e| Err(anyhow::anyhow!(e)))
}

/// `stats --point ...`: the points' analysis: clocks, one-way latency per
/// segment, losses by segment, capture loss, the NAK episodes' latencies
/// (`stats FILE` gives one point's RC analysis; the JSON holds the first
/// point's beside `multipoint`).
fn points(args: &Args) -> anyhow::Result<()> {
    pad_heap();
    let opened = crate::cli::capture::OpenedPoints::open(
        &args.points,
        &args.file_args.decode,
        &args.file_args.wave_args.options(),
        &args.file_args.memory.limits(),
    )?
    .finish();
    let r = &opened.report;
    if args.json {
        let mut v = report_json(&opened.first);
        if let Some(obj) = v.as_object_mut() {
            obj.insert(
                "warnings".into(),
                warnings_json(&opened.points[0].store.warnings()),
            );
            obj.insert("error".into(), opened.failed.as_deref().into());
            obj.insert("multipoint".into(), multipoint_json(r, &opened.files));
        }
        writeln!(std::io::stdout().lock(), "{v}")?;
        return opened.finished();
    }
    let mut out = std::io::stdout().lock();
    points_text(
        &mut out,
        &opened.report,
        &opened.files,
        args.points.link_gbps(),
    )?;
    drop(out);
    opened.finished()
}

/// Losses and NAK episodes `stats` lists (the rest are counted).
const MAX_LISTED: usize = 30;

/// The points' analysis in words (`stats --point`, `attach --point`);
/// `sources` names where each point's frames came from.
pub(crate) fn points_text(
    out: &mut impl Write,
    r: &rocescope_replay::points::PointsReport,
    sources: &[std::path::PathBuf],
    link_gbps: f64,
) -> anyhow::Result<()> {
    use rocescope_replay::text::{
        EPISODE_TIMES_COLUMNS, LOSS_COLUMNS, POINT_COLUMNS, SEGMENT_COLUMNS, episode_times_cells,
        loss_cells, losses_by_segment, point_cells, rel_time_text, segment_cells,
    };
    writeln!(
        out,
        "{} capture points, {} frames followed ({} RoCE frames in all)",
        r.points.len(),
        r.journeys,
        r.points.iter().map(|p| p.frames).sum::<u64>()
    )?;
    let table = |out: &mut dyn Write, head: &[&str], rows: &[Vec<String>]| -> std::io::Result<()> {
        let widths: Vec<usize> = (0..head.len())
            .map(|c| {
                rows.iter()
                    .map(|r| r[c].chars().count())
                    .chain([head[c].chars().count()])
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let line = |cells: Vec<String>| {
            cells
                .iter()
                .zip(&widths)
                .map(|(c, w)| format!("{c:<w$}"))
                .collect::<Vec<_>>()
                .join("  ")
                .trim_end()
                .to_owned()
        };
        writeln!(
            out,
            "  {}",
            line(head.iter().map(|h| (*h).to_owned()).collect())
        )?;
        for row in rows {
            writeln!(out, "  {}", line(row.clone()))?;
        }
        Ok(())
    };
    writeln!(out)?;
    writeln!(
        out,
        "clocks, against {}'s (a frame's serialisation at {} Gb/s taken out):",
        r.points.first().map_or("?", |p| p.name.as_str()),
        link_gbps
    )?;
    let rows: Vec<Vec<String>> = (0..r.points.len())
        .filter_map(|i| point_cells(r, i).map(|c| c.to_vec()))
        .collect();
    table(out, &POINT_COLUMNS, &rows)?;
    for (i, f) in sources.iter().enumerate() {
        writeln!(out, "  {}: {}", r.points[i].name, f.display())?;
    }
    writeln!(out)?;
    writeln!(out, "one-way latency per segment:")?;
    let rows: Vec<Vec<String>> = r
        .segments
        .iter()
        .map(|s| segment_cells(s).to_vec())
        .collect();
    table(out, &SEGMENT_COLUMNS, &rows)?;
    writeln!(out)?;
    let by = losses_by_segment(r);
    if by.is_empty() {
        writeln!(out, "losses: none placed")?;
    } else {
        writeln!(out, "losses by segment:")?;
        for (seg, n, requests) in &by {
            writeln!(
                out,
                "  {seg:<14} {}, {} requests",
                counted(*n, "frame", "frames"),
                requests
            )?;
        }
        writeln!(out)?;
        let t0 = r.t0_ns;
        let rows: Vec<Vec<String>> = r
            .losses
            .iter()
            .take(MAX_LISTED)
            .map(|l| loss_cells(r, l, rel_time_text(t0, l.ts_ns, false)).to_vec())
            .collect();
        table(out, &LOSS_COLUMNS, &rows)?;
        for l in r.losses.iter().take(MAX_LISTED.min(5)) {
            writeln!(out, "    PSN {}: {}", l.psn, l.evidence)?;
        }
        if r.losses.len() > MAX_LISTED {
            writeln!(out, "  ... {} more", r.losses.len() - MAX_LISTED)?;
        }
    }
    let missed: u64 = r.points.iter().map(|p| p.capture_loss).sum();
    if missed > 0 {
        writeln!(out)?;
        for p in r.points.iter().filter(|p| p.capture_loss > 0) {
            writeln!(
                out,
                "capture loss: {} missed {} the points around it saw (not lost on the wire)",
                p.name,
                counted(p.capture_loss, "frame", "frames")
            )?;
        }
    }
    if !r.episodes.is_empty() {
        writeln!(out)?;
        writeln!(
            out,
            "NAK episodes (Lumina's latencies, read at the receiver's and the requester's points):"
        )?;
        let rows: Vec<Vec<String>> = r
            .episodes
            .iter()
            .take(MAX_LISTED)
            .map(|e| episode_times_cells(e, rel_time_text(r.t0_ns, e.ts_ns, false)).to_vec())
            .collect();
        table(out, &EPISODE_TIMES_COLUMNS, &rows)?;
        if r.episodes.len() > MAX_LISTED {
            writeln!(out, "  ... {} more", r.episodes.len() - MAX_LISTED)?;
        }
    }
    for w in &r.warnings {
        writeln!(out)?;
        writeln!(out, "note: {w}")?;
    }
    Ok(())
}

/// `text` in lines of at most `width` characters, broken after commas.
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = vec![String::new()];
    for part in text.split_inclusive(", ") {
        let last = lines.last_mut().map_or(0, |l| l.chars().count());
        if last > 0 && last + part.trim_end().chars().count() > width {
            lines.push(String::new());
        }
        if let Some(l) = lines.last_mut() {
            l.push_str(part);
        }
    }
    lines.into_iter().map(|l| l.trim_end().to_owned()).collect()
}
