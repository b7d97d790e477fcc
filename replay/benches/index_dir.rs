//! `--index-dir`: time to a full index on a second open (the index read
//! back from its folder) against the first (the file indexed, then its
//! index written there) and against an open without `--index-dir`.
//!
//! Each open is timed to the moment every row is queryable (the store's
//! length is the capture's) and to the store's completion: without the RC
//! analysis (`info`) they are the same; with it (the workbench, `stats`),
//! a reused index brings its analysis back too (kept beside it at the
//! first open), so no frame is read.
//!
//! `cargo bench -p rocescope-replay --bench index_dir -- [PACKETS] [RUNS]
//! [keep]` (defaults: 5,000,000 header-only packets with a resend every
//! 1,000, 3 runs each; the median is shown). The capture goes to
//! target/bench-data/ and the index to target/tmp/; both are removed at
//! the end unless `keep`. The opens are `Store::open_kept` as the commands
//! call it, without a memory cap.

use std::path::Path;
use std::time::{Duration, Instant};

use rocescope_replay::store::{Analyzer, NoAnalysis, RcAnalyzer, Store};

/// Seconds to read every row in turn, as a filter's scan does.
fn scan(store: &Store) -> f64 {
    let t = Instant::now();
    let mut rows = Vec::with_capacity(65_536);
    let mut retransmissions = 0u64;
    for at in (0..store.len()).step_by(65_536) {
        rows.clear();
        store.rows(at..at + 65_536, &mut rows);
        retransmissions += rows
            .iter()
            .filter(|r| {
                r.flags
                    .contains(rocescope_replay::store::Flags::RETRANSMISSION)
            })
            .count() as u64;
    }
    std::hint::black_box(retransmissions);
    t.elapsed().as_secs_f64()
}

/// Seconds to every row, to the store's completion, and to scan every
/// row once complete.
fn open(
    path: &Path,
    index_dir: Option<&Path>,
    analysed: bool,
    n: u64,
) -> Result<(f64, f64, bool, f64), Box<dyn std::error::Error>> {
    let analyzer: Box<dyn Analyzer> = if analysed {
        Box::new(RcAnalyzer::default())
    } else {
        Box::new(NoAnalysis)
    };
    let t = Instant::now();
    let store = Store::open_kept(
        path,
        Default::default(),
        analyzer,
        &Default::default(),
        None,
        index_dir,
    )?;
    while store.len() < n && !store.wait_timeout(Duration::from_micros(200)) {}
    let rows_s = t.elapsed().as_secs_f64();
    store.wait();
    let done_s = t.elapsed().as_secs_f64();
    assert_eq!(store.len(), n, "every row");
    let reused = store
        .index_dir_status()
        .is_some_and(|k| k.index.reused && (k.analysis.reused || !analysed));
    if let Some(e) = store.index_dir_status().and_then(|k| k.error) {
        return Err(e.into());
    }
    Ok((rows_s, done_s, reused, scan(&store)))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = rocescope_testkit::bench_args();
    let nums: Vec<u64> = args.iter().filter_map(|a| a.parse().ok()).collect();
    let n = nums.first().copied().unwrap_or(5_000_000);
    let runs = nums.get(1).copied().unwrap_or(3).max(1) as usize;
    let keep = args.iter().any(|a| a == "keep");
    let data = rocescope_testkit::bench_data();
    let path = data.join(format!("index-dir-{n}.pcap"));
    if !path.exists() {
        rocescope_replay::synth::write_resending_header_only_pcap(&path, n, 1_000)?;
    }
    let file_bytes = std::fs::metadata(&path)?.len();
    let dir = rocescope_testkit::build_tmp().join(format!("index-dir-{}", std::process::id()));
    let (plain, kept): (Option<&Path>, _) = (None, Some(dir.as_path()));
    println!(
        "{n} header-only packets ({:.2} GB), {runs} runs each, median",
        file_bytes as f64 / 1e9
    );
    for analysed in [false, true] {
        let what = if analysed {
            "RC analysis (open, stats)"
        } else {
            "no analysis (info)"
        };
        // Warm the page cache: every open below reads the file from memory.
        open(&path, plain, analysed, n)?;
        let (mut fresh, mut first, mut second, mut second_rows) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let (mut fresh_scan, mut second_scan) = (Vec::new(), Vec::new());
        for _ in 0..runs {
            let (_, done, _, scanned) = open(&path, plain, analysed, n)?;
            fresh.push(done);
            fresh_scan.push(scanned);
            let _ = std::fs::remove_dir_all(&dir);
            let (_, done, reused, _) = open(&path, kept, analysed, n)?;
            assert!(!reused);
            first.push(done);
            let (rows, done, reused, scanned) = open(&path, kept, analysed, n)?;
            assert!(
                reused,
                "the second open reads the index (and analysis) back"
            );
            second_rows.push(rows);
            second.push(done);
            second_scan.push(scanned);
        }
        let files: Vec<_> = std::fs::read_dir(&dir)?
            .flatten()
            .flat_map(|e| std::fs::read_dir(e.path()).into_iter().flatten().flatten())
            .collect();
        let size = |f: &std::fs::DirEntry| f.metadata().map_or(0, |m| m.len());
        let index_bytes: u64 = files.iter().map(size).sum();
        let analysis_bytes: u64 = files
            .iter()
            .filter(|f| f.file_name() == "analysis")
            .map(size)
            .sum();
        let (fresh, first, second, second_rows) = (
            median(fresh),
            median(first),
            median(second),
            median(second_rows),
        );
        println!(
            "{what}: without --index-dir {fresh:.3} s; first open {first:.3} s (index and write, {:.1} MiB kept, {:.1} MiB of it the analysis); second open: every row in {:.1} ms ({:.0}x), complete in {second:.3} s ({:.1}x the open without)",
            index_bytes as f64 / 1048576.0,
            analysis_bytes as f64 / 1048576.0,
            second_rows * 1e3,
            first / second_rows,
            fresh / second,
        );
        println!(
            "  a scan of every row: {:.1} ms on the fresh index, {:.1} ms on the reused one",
            median(fresh_scan) * 1e3,
            median(second_scan) * 1e3
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
    if !keep {
        let _ = std::fs::remove_file(&path);
    }
    Ok(())
}
