//! Exporting a 2M-packet header-only RoCE capture: the packets table to
//! Parquet (and CSV, JSON lines) against indexing the same file with the RC
//! analysis on, in the same run; peak memory growth of the export.
//!
//! `cargo bench -p rocescope-data --bench export [-- PACKETS] [parquet|csv|jsonl|partitions|none]...`
//! (`BATCH_ROWS=N` in the environment: rows per batch, a Parquet row group).
//! `partitions`: every table to `target/bench-data/fleet/` as
//! `rocescope export --partition --window 10ms` writes it (kept, for
//! `benches/fleet_engines.py`), then `rocescope query`'s SQL over the
//! folder timed with and without a time filter.
#![allow(clippy::unwrap_used)]
// getrusage, for the CPU time the export takes on all its threads.
#![allow(unsafe_code)]

use std::path::Path;
use std::time::Instant;

use polars::prelude::DataType;
use rocescope_data::{ExportOptions, Source, Table, export, query_parquet_tables};
use rocescope_decoders::DecodeConfig;
use rocescope_replay::store::{RcAnalyzer, Store};
use rocescope_replay::synth;

use rocescope_testkit::proc_status_kib as status_kib;

/// User plus system CPU time of the whole process (all threads), in s.
fn cpu_s() -> f64 {
    // SAFETY: getrusage only writes the struct it is given.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
        return 0.0;
    }
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

fn main() {
    let n = rocescope_testkit::number_arg(2_000_000);
    let dir = rocescope_testkit::bench_data();
    let path = dir.join(format!("header-only-{n}.pcap"));
    if !path.exists() {
        synth::write_header_only_pcap(&path, n).unwrap();
    }
    println!("capture: {} ({n} packets)", path.display());
    // Warm the page cache (through a small buffer: no 200 MB allocation).
    std::io::copy(
        &mut std::fs::File::open(&path).unwrap(),
        &mut std::io::sink(),
    )
    .unwrap();

    // Index as `rocescope export` does: the RC analysis on.
    let analysis = RcAnalyzer::default();
    let cpu0 = cpu_s();
    let t = Instant::now();
    let store = Store::open(&path, DecodeConfig::default(), Box::new(analysis.clone())).unwrap();
    store.wait();
    let index_s = t.elapsed().as_secs_f64();
    let index_cpu_s = cpu_s() - cpu0;
    assert_eq!(store.len(), n);
    let report = analysis.0.lock().unwrap().report();
    let index_rate = n as f64 / index_s;
    println!(
        "index (with RC analysis): {index_s:.3} s, {:.2} Mpackets/s, CPU {index_cpu_s:.3} s",
        index_rate / 1e6
    );

    let src = Source {
        store: &store,
        report: &report,
        capture: "bench",
        extra_profiler: &[],
        points: None,
    };
    // Formats named on the command line, or all three.
    let mut formats: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| ["parquet", "csv", "jsonl"].contains(&a.as_str()))
        .collect();
    if std::env::args().any(|a| a == "partitions") {
        partitions(&src, &dir, n, index_rate);
    }
    // `none`: index only (to measure the export's share by difference).
    if formats.is_empty() && !std::env::args().any(|a| a == "none" || a == "partitions") {
        formats = vec!["parquet".into(), "csv".into(), "jsonl".into()];
    }
    for ext in &formats {
        let out = dir.join(format!("export-{n}.{ext}"));
        let _ = std::fs::write("/proc/self/clear_refs", "5");
        let base_kib = status_kib("VmRSS:");
        let cpu0 = cpu_s();
        let t = Instant::now();
        let opts = ExportOptions {
            batch_rows: std::env::var("BATCH_ROWS")
                .ok()
                .and_then(|v| v.parse().ok()),
            ..ExportOptions::default()
        };
        let s = export(&src, Table::Packets, &out, &opts).unwrap();
        let secs = t.elapsed().as_secs_f64();
        let cpu = cpu_s() - cpu0;
        let peak_kib = status_kib("VmHWM:");
        assert_eq!(s.rows, n);
        let rate = n as f64 / secs;
        let size = std::fs::metadata(&out).map(|m| m.len()).unwrap_or(0);
        println!(
            "export packets -> {ext}: {secs:.3} s, {:.2} Mrows/s ({:.2}x the indexing rate), \
             CPU {cpu:.3} s ({:.2}x indexing's), {:.1} MB, peak RSS growth {:.1} MB",
            rate / 1e6,
            rate / index_rate,
            cpu / index_cpu_s.max(1e-9),
            size as f64 / 1e6,
            peak_kib.saturating_sub(base_kib) as f64 / 1024.0,
        );
        let _ = std::fs::remove_file(&out);
    }
}

/// Every table as fleet partitions of 10 ms, then SQL over the folder.
fn partitions(src: &Source<'_>, dir: &Path, n: u64, index_rate: f64) {
    let fleet = dir.join("fleet");
    let _ = std::fs::remove_dir_all(&fleet);
    let opts = ExportOptions {
        partition_window_ns: Some(10_000_000),
        ..ExportOptions::default()
    };
    let t = Instant::now();
    let mut files = 0;
    for table in Table::ALL {
        let s = export(src, table, &fleet, &opts).unwrap();
        if table == Table::Packets {
            assert_eq!(s.rows, n);
        }
        files += s.files.len();
    }
    let secs = t.elapsed().as_secs_f64();
    let rate = n as f64 / secs;
    println!(
        "export every table -> partitions: {secs:.3} s, {:.2} Mrows/s of packets \
         ({:.2}x the indexing rate), {files} files under {}",
        rate / 1e6,
        rate / index_rate,
        fleet.display()
    );
    let tables: Vec<(&str, std::path::PathBuf)> = ["packets", "qps"]
        .into_iter()
        .map(|t| (t, fleet.join(t)))
        .collect();
    let bounds = query_parquet_tables(
        &tables,
        "SELECT min(ts_ns) AS lo, max(ts_ns) AS hi FROM packets",
    )
    .unwrap();
    let get = |c: &str| bounds.column(c).unwrap().i64().unwrap().get(0).unwrap();
    let (lo, hi) = (get("lo"), get("hi"));
    // A tenth of the capture's time.
    let cut = lo + (hi - lo) / 10;
    for (what, sql) in [
        (
            "no filter",
            "SELECT capture, count(*) AS n, sum(CAST(retransmission AS BIGINT)) AS retx FROM packets GROUP BY capture".to_owned(),
        ),
        (
            "time filter (first tenth)",
            format!("SELECT capture, count(*) AS n, sum(CAST(retransmission AS BIGINT)) AS retx FROM packets WHERE ts_ns < {cut} GROUP BY capture"),
        ),
    ] {
        // Best of 3 (the files are in the page cache after the first).
        let mut best = f64::MAX;
        let mut rows = 0;
        for _ in 0..3 {
            let t = Instant::now();
            let df = query_parquet_tables(&tables, &sql).unwrap();
            best = best.min(t.elapsed().as_secs_f64());
            let n = df.column("n").unwrap().cast(&DataType::Int64).unwrap();
            rows = n.i64().unwrap().iter().flatten().sum::<i64>();
        }
        println!("rocescope query, {what}: {best:.3} s (best of 3), {rows} rows counted; ts_ns < {cut}");
    }
}
