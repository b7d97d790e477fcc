//! `rocescope info`: open a capture exactly as the workbench does (the same
//! store, indexed on its background thread) and summarise it.

use std::io::Write;
use std::path::{Path, PathBuf};

use rocescope_decoders::DecodeConfig;
use rocescope_replay::TimeBase;
use rocescope_replay::store::NoAnalysis;
use rocescope_replay::wave::WaveOptions;
use serde_json::json;

use super::args::FileArgs;
use super::capture::{align_wave, ila_json, indexing_error, open_store_with};

/// A waveform's interfaces (port, then the interface in words); empty for a
/// capture.
fn interfaces(
    file: &Path,
    options: &WaveOptions,
) -> Vec<(usize, rocescope_replay::wave::AxisInterface)> {
    let Ok(r) = rocescope_replay::CaptureReader::open_with(file, options) else {
        return Vec::new();
    };
    r.wave()
        .map(|w| w.interfaces().iter().cloned().enumerate().collect())
        .unwrap_or_default()
}

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Capture file (pcap, pcapng, BALBOA sniffer dump) or waveform (VCD, FST,
    /// a Vivado ILA capture as CSV or VCD).
    file: PathBuf,
    /// Print one JSON object.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    file_args: FileArgs,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    summarise(&args.file, args.json, &args.file_args)
}

fn summarise(file: &Path, json_out: bool, file_args: &FileArgs) -> anyhow::Result<()> {
    let cfg = DecodeConfig {
        extra_roce_ports: file_args.decode.roce_ports.clone(),
    };
    let wave = file_args.align.wave.as_deref();
    let options = &file_args.wave_args.options();
    let limits = &file_args.memory.limits();
    let store = open_store_with(file, cfg, Box::new(NoAnalysis), options, limits)?;
    let spill = store.spill_stats().unwrap_or_default();
    let spill_error = store.spill_error();
    let alignment = align_wave(file, wave, options)?;
    let ports = if matches!(
        store.format(),
        Some(rocescope_replay::CaptureFormat::Wave(_))
    ) {
        interfaces(file, options)
    } else {
        Vec::new()
    };
    let progress = store.progress();
    let stats = store.stats();
    let convs = store.conversations();
    let rows = store.len();
    let index_bytes_per_packet = if rows > 0 {
        store.index_bytes_held() as f64 / rows as f64
    } else {
        0.0
    };
    let secs = progress.elapsed_ns as f64 / 1e9;
    let rate_pps = if secs > 0.0 { rows as f64 / secs } else { 0.0 };
    let ordinal = store.time_base() == TimeBase::Ordinal;
    let format = store.format().map(|f| f.to_string()).unwrap_or_default();
    let span_ns = match (stats.first_ts_ns, stats.last_ts_ns) {
        (Some(a), Some(b)) => b - a,
        _ => 0,
    };
    let warnings = store.warnings();
    let kept = store.index_dir_status();
    let reused = kept.as_ref().is_some_and(|k| k.index.reused);

    if json_out {
        let v = json!({
            "file": file.display().to_string(),
            "format": format,
            "packets": stats.packets,
            "roce_packets": stats.roce_packets,
            "conversations": convs.len(),
            "time_base": if ordinal { "ordinal" } else { "ns" },
            "first_ts_ns": stats.first_ts_ns,
            "last_ts_ns": stats.last_ts_ns,
            "span_ns": if ordinal { serde_json::Value::Null } else { span_ns.into() },
            "icrc_errors": stats.icrc_errors,
            "truncated_frames": stats.truncated,
            "malformed_frames": stats.malformed,
            "undecoded_frames": stats.undecoded,
            "records": store.record_count(),
            "captured_bytes": stats.captured_bytes,
            "wire_bytes": stats.wire_bytes,
            "time_sorted": store.time_sorted(),
            "index_bytes_per_packet": index_bytes_per_packet,
            "index_bytes_allocated": store.index_bytes(),
            "max_memory_bytes": limits.max_memory_bytes,
            "index_rows_on_disk": spill.rows_on_disk,
            "index_disk_bytes": spill.disk_bytes,
            "index_spill_error": spill_error,
            "peak_rss_bytes": rocescope_core::session::peak_rss_bytes(),
            "indexing_rate_pps": rate_pps,
            "indexing_s": secs,
            "index_dir": kept.as_ref().map(|k| json!({
                "dir": k.dir.display().to_string(),
                "folder": k.folder.display().to_string(),
                "reused": k.index.reused,
                "stale": k.index.stale,
                "saved_bytes": k.saved_bytes,
                "error": k.error,
                "analysis_reused": k.analysis.reused,
                "analysis_stale": k.analysis.stale,
                "summary": k.summary(),
            })),
            "warnings": crate::cli::capture::warnings_json(&warnings),
            "error": progress.error,
            "ila": store.ila().as_ref().map(ila_json),
            "interfaces": ports.iter().map(|(port, i)| json!({
                "port": port, "name": i.name, "width_bits": i.width_bits, "clock": i.clock_name,
                "tkeep": i.has_tkeep, "tready": i.has_tready,
            })).collect::<Vec<_>>(),
            "alignment": alignment.as_ref().map(|a| json!({
                "wave": wave.map(|w| w.display().to_string()),
                "offset_ns": a.offset_ns, "spread_ns": a.spread_ns, "matched": a.matched,
                "capture_unmatched": a.capture_unmatched, "wave_unmatched": a.wave_unmatched,
                "ordinal": a.ordinal,
            })),
        });
        writeln!(std::io::stdout().lock(), "{v}")?;
    } else {
        let mut out = std::io::stdout().lock();
        writeln!(out, "file            {}", file.display())?;
        writeln!(out, "format          {format}")?;
        writeln!(out, "packets         {}", stats.packets)?;
        writeln!(out, "RoCE packets    {}", stats.roce_packets)?;
        writeln!(out, "conversations   {}", convs.len())?;
        if ordinal {
            writeln!(
                out,
                "time span       ordinal (the card's converted pcap has packet numbers, not times)"
            )?;
        } else {
            writeln!(out, "time span       {:.9} s", span_ns as f64 / 1e9)?;
        }
        writeln!(out, "ICRC errors     {}", stats.icrc_errors)?;
        writeln!(
            out,
            "truncated       {} (captured shorter than on the wire)",
            stats.truncated
        )?;
        if stats.malformed > 0 {
            writeln!(out, "malformed       {}", stats.malformed)?;
        }
        if stats.undecoded > 0 {
            writeln!(
                out,
                "undecoded       {} (link type not decoded)",
                stats.undecoded
            )?;
        }
        writeln!(
            out,
            "index memory    {index_bytes_per_packet:.1} bytes/packet ({:.1} KiB allocated)",
            store.index_bytes() as f64 / 1024.0
        )?;
        if spill.rows_on_disk > 0 {
            writeln!(
                out,
                "index on disk   {} of {rows} rows ({:.1} MiB; --max-memory {:.1} MiB)",
                spill.rows_on_disk,
                spill.disk_bytes as f64 / 1048576.0,
                limits.max_memory_bytes as f64 / 1048576.0
            )?;
        }
        if let Some(e) = &spill_error {
            writeln!(out, "index spill     {e}")?;
        }
        if let Some(k) = &kept {
            writeln!(out, "index           {}", k.describe())?;
        }
        if reused {
            writeln!(out, "index read in   {secs:.3} s (not indexed)")?;
        } else {
            writeln!(
                out,
                "indexing rate   {:.2} Mpackets/s ({secs:.3} s)",
                rate_pps / 1e6
            )?;
        }
        for c in convs.iter().take(8) {
            writeln!(
                out,
                "  {} > {} QP 0x{:06x}: {} packets, {} bytes",
                c.key.src_addr(),
                c.key.dst_addr(),
                c.key.dest_qp,
                c.packets,
                c.wire_bytes
            )?;
        }
        if convs.len() > 8 {
            writeln!(out, "  ... {} more conversations", convs.len() - 8)?;
        }
        for (port, i) in &ports {
            writeln!(
                out,
                "port {port}          {}",
                crate::cli::decode::describe(i)
            )?;
        }
        if let Some(ila) = store.ila() {
            writeln!(out, "capture         {}", ila.describe())?;
        }
        if let Some(a) = &alignment {
            writeln!(out, "alignment       {a}")?;
        }
    }
    crate::cli::capture::warn_unread(file, &warnings);
    // The summary above is of what was read; the run fails with the reason.
    match indexing_error(file, &store) {
        Some(e) => Err(anyhow::anyhow!(e)),
        None => Ok(()),
    }
}
