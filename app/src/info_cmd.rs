//! `rocescope info`: open a capture exactly as the workbench does (the same
//! store, indexed on its background thread) and summarise it.

use std::io::{IsTerminal, Write};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;

use rocescope_decoders::DecodeConfig;
use rocescope_replay::CaptureError;
use rocescope_replay::TimeBase;
use rocescope_replay::store::{Analyzer, NoAnalysis, Store, StoreError};
use rocescope_replay::wave::WaveOptions;
use serde_json::json;

/// Open `file` in a store and wait for the index, drawing a progress bar on
/// a terminal when indexing takes a while.
pub fn open_store(
    file: &Path,
    cfg: DecodeConfig,
    analyzer: Box<dyn Analyzer>,
) -> anyhow::Result<Arc<Store>> {
    open_store_with(file, cfg, analyzer, &WaveOptions::default())
}

/// [`open_store`] with how a waveform or ILA capture is read.
pub fn open_store_with(
    file: &Path,
    cfg: DecodeConfig,
    analyzer: Box<dyn Analyzer>,
    wave: &WaveOptions,
) -> anyhow::Result<Arc<Store>> {
    let store = match Store::open_with(file, cfg, analyzer, wave) {
        Ok(s) => s,
        // The open error already names the path; the others say where in it.
        Err(e @ StoreError::Capture(CaptureError::Open { .. } | CaptureError::Wave(_))) => {
            return Err(e.into());
        }
        Err(e) => return Err(anyhow::Error::new(e).context(file.display().to_string())),
    };
    let tty = std::io::stderr().is_terminal();
    let mut drew = false;
    // Woken at the end, not at the next tick: a 100 ms sleep made every
    // `info` and `stats` take a whole number of ticks.
    while !store.wait_timeout(Duration::from_millis(100)) {
        let p = store.progress();
        if tty && !p.complete && p.bytes_total > 0 {
            let pct = p.bytes_done as f64 * 100.0 / p.bytes_total as f64;
            let width = 30;
            let filled = ((pct / 100.0) * width as f64) as usize;
            eprint!(
                "\rindexing [{}{}] {pct:5.1}% {} packets",
                "#".repeat(filled.min(width)),
                " ".repeat(width - filled.min(width)),
                p.rows
            );
            drew = true;
        }
    }
    if drew {
        eprint!("\r{}\r", " ".repeat(70));
    }
    Ok(store)
}

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

pub fn run(
    file: &Path,
    json_out: bool,
    roce_ports: Vec<u16>,
    wave: Option<&Path>,
    options: &WaveOptions,
) -> anyhow::Result<()> {
    let cfg = DecodeConfig {
        extra_roce_ports: roce_ports,
    };
    let store = open_store_with(file, cfg, Box::new(NoAnalysis), options)?;
    let alignment = match wave {
        Some(w) => Some(
            rocescope_replay::wave::align(file, w, options)
                .with_context(|| format!("aligning {} with {}", w.display(), file.display()))?,
        ),
        None => None,
    };
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
            "indexing_rate_pps": rate_pps,
            "indexing_s": secs,
            "warnings": warnings.iter().map(|w| json!({"offset": w.offset, "message": w.message})).collect::<Vec<_>>(),
            "error": progress.error,
            "interfaces": ports.iter().map(|(port, i)| json!({
                "port": port, "name": i.name, "width_bits": i.width_bits, "clock": i.clock_name,
                "tkeep": i.has_tkeep, "tready": i.has_tready,
            })).collect::<Vec<_>>(),
            "ila": store.ila().as_ref().map(ila_json),
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
        writeln!(
            out,
            "indexing rate   {:.2} Mpackets/s ({secs:.3} s)",
            rate_pps / 1e6
        )?;
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
                crate::decode_cmd::describe(i)
            )?;
        }
        if let Some(ila) = store.ila() {
            writeln!(out, "capture         {}", ila.describe())?;
        }
        if let Some(a) = &alignment {
            writeln!(out, "alignment       {a}")?;
        }
    }
    for w in &warnings {
        eprintln!(
            "rocescope: warning: {}: {} (at byte {})",
            file.display(),
            w.message,
            w.offset
        );
    }
    // The summary above is of what was read; the run fails with the reason.
    match indexing_error(file, &store) {
        Some(e) => Err(anyhow::anyhow!(e)),
        None => Ok(()),
    }
}

/// An ILA capture's windows as JSON (`info`, `stats`).
pub fn ila_json(ila: &rocescope_replay::wave::ila::IlaSummary) -> serde_json::Value {
    json!({
        "sample_clock_hz": ila.sample_clock_hz,
        "windows": ila.windows.iter().map(|w| json!({
            "first_sample": w.first_sample, "samples": w.samples,
            "first_ns": ila.sample_ns(w.first_sample),
            "trigger_sample": w.trigger_sample,
        })).collect::<Vec<_>>(),
        "triggers_ns": ila.triggers_ns(),
        "cut_at_window_start": ila.cut_at_start,
        "cut_at_window_end": ila.cut_at_end,
        "between_windows": "unknown: the windows' samples are placed end to end",
        "summary": ila.describe(),
    })
}

/// Why indexing `file` stopped before its end, naming the file, `None`
/// when it read to the end.
pub fn indexing_error(file: &Path, store: &Store) -> Option<String> {
    let e = store.progress().error?;
    let name = file.display().to_string();
    Some(if e.contains(&name) {
        e
    } else {
        format!("{name}: indexing stopped early: {e}")
    })
}
