//! Indexing a 2M-packet header-only RoCE capture: rate, peak memory per
//! packet, time to the first rows, against `tshark -r FILE` on the same file.
//!
//! `cargo bench -p rocescope-replay --bench index [-- PACKETS]`
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use rocescope_decoders::DecodeConfig;
use rocescope_replay::store::{Analyzer, NoAnalysis, RcAnalyzer, Store};
use rocescope_replay::synth;

fn status_kib(field: &str) -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

fn main() {
    let n: u64 = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(2_000_000);
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/bench-data");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("header-only-{n}.pcap"));
    if !path.exists() {
        synth::write_header_only_pcap(&path, n).unwrap();
    }
    let size = std::fs::metadata(&path).unwrap().len();
    println!(
        "capture: {} ({n} packets, {:.1} MB)",
        path.display(),
        size as f64 / 1e6
    );

    // Warm the page cache so both tools read from memory.
    let _ = std::fs::read(&path).unwrap();

    let tshark_s = Command::new("tshark")
        .arg("-r")
        .arg(&path)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .ok()
        .filter(|s| s.success())
        .map(|_| ());
    let tshark_s = tshark_s.map(|_| {
        let t = Instant::now();
        let _ = Command::new("tshark")
            .arg("-r")
            .arg(&path)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status();
        t.elapsed().as_secs_f64()
    });

    match tshark_s {
        Some(ts) => println!("tshark -r: {ts:.3} s, {:.0} packets/s", n as f64 / ts),
        None => println!("tshark not installed: no comparison"),
    }
    for (name, analysis) in [("decode only", false), ("with RC analysis", true)] {
        let analyzer: Box<dyn Analyzer> = if analysis {
            Box::new(RcAnalyzer::default())
        } else {
            Box::new(NoAnalysis)
        };
        let (secs, first_rows_ms, index_bytes, per_packet) = index_once(&path, n, analyzer);
        let rate = n as f64 / secs;
        println!(
            "rocescope index ({name}): {secs:.3} s, {:.1} Mpackets/s",
            rate / 1e6
        );
        println!("  first rows visible after {first_rows_ms:.2} ms");
        println!(
            "  index {index_bytes:.1} bytes/packet; peak RSS growth {per_packet:.1} bytes/packet all in"
        );
        if let Some(ts) = tshark_s {
            println!("  {:.0}x faster than tshark -r", ts / secs);
        }
    }
}

/// Index once; returns (seconds, ms to the first rows, index bytes per
/// packet, peak RSS growth per packet).
fn index_once(path: &Path, n: u64, analyzer: Box<dyn Analyzer>) -> (f64, f64, f64, f64) {
    // Peak memory of the indexing alone: reset the high-water mark first.
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    let base_kib = status_kib("VmRSS:");
    let t = Instant::now();
    let store = Store::open(path, DecodeConfig::default(), analyzer).unwrap();
    while store.is_empty() {
        std::hint::spin_loop();
    }
    let first_rows_ms = t.elapsed().as_secs_f64() * 1e3;
    store.wait();
    let secs = t.elapsed().as_secs_f64();
    let peak_kib = status_kib("VmHWM:");
    assert_eq!(store.len(), n);
    let per_packet = (peak_kib.saturating_sub(base_kib)) as f64 * 1024.0 / n as f64;
    (
        secs,
        first_rows_ms,
        store.index_bytes() as f64 / n as f64,
        per_packet,
    )
}
