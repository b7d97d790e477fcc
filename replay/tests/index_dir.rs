//! A store opened from a saved index (`Store::open_kept`): the rows of a
//! fresh index, every one at once; and a rows file changed under the open
//! store is read as an error said by the store, never as other rows.
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;

use rocescope_replay::store::{NO_CONVERSATION, NoAnalysis, Row, SpillConfig, Store};

/// Two whole index chunks and part of a third.
const FRAMES: u64 = 150_000;

fn open(path: &std::path::Path, dir: Option<&std::path::Path>) -> std::sync::Arc<Store> {
    open_with(path, dir, Box::new(NoAnalysis), None)
}

/// [`open`] under `--max-memory CAP`.
fn open_capped(path: &std::path::Path, dir: &std::path::Path, cap: u64) -> std::sync::Arc<Store> {
    let spill = SpillConfig {
        dir: path.with_extension("session"),
        max_memory_bytes: cap,
        max_disk_bytes: None,
        remove_on_drop: true,
    };
    open_with(path, Some(dir), Box::new(NoAnalysis), Some(spill))
}

/// Rows read back from the rows file when asked for (not in memory).
fn rows_on_disk(s: &Store) -> u64 {
    s.spill_stats().map_or(0, |st| st.rows_on_disk)
}

/// `path` opened as the commands open it, and indexed; the index kept in
/// `dir` when given.
fn open_with(
    path: &std::path::Path,
    dir: Option<&std::path::Path>,
    analyzer: Box<dyn rocescope_replay::store::Analyzer>,
    spill: Option<SpillConfig>,
) -> std::sync::Arc<Store> {
    let s = Store::open_kept(
        path,
        Default::default(),
        analyzer,
        &Default::default(),
        spill,
        dir,
    )
    .unwrap();
    s.wait();
    s
}

/// A fresh folder `name` with a capture of `frames` header-only packets (a
/// resend every 1,000): the capture's path, and where to keep its index.
fn resends_in(name: &str, frames: u64) -> (PathBuf, PathBuf) {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let capture = dir.join("resends.pcap");
    rocescope_replay::synth::write_resending_header_only_pcap(&capture, frames, 1_000).unwrap();
    (capture, dir.join("indexes"))
}

fn all_rows(s: &Store) -> Vec<Row> {
    let mut v = Vec::new();
    s.rows(0..s.len(), &mut v);
    v
}

#[test]
fn a_saved_index_reads_back_and_a_changed_one_is_never_rows() {
    let (capture, kept) = resends_in("index-dir", FRAMES);
    let fresh = open(&capture, None);
    let first = open(&capture, Some(&kept));
    let status = first.index_dir_status().unwrap();
    assert!(!status.index.reused && status.error.is_none(), "{status:?}");
    drop(first);

    // Uncapped, every chunk read back stays in memory.
    let whole = open(&capture, Some(&kept));
    assert!(whole.index_dir_status().unwrap().index.reused);
    assert_eq!(rows_on_disk(&whole), 0);
    let rows = all_rows(&whole);
    assert_eq!(rows, all_rows(&fresh));
    drop(whole);
    // Under a cap, the newest chunks that fit stay in memory: with 1 MiB
    // left once the cache of chunks read back has its 3 MiB, the last
    // (18,928 rows, 454 KB), not the one before (1.5 MiB).
    let part = open_capped(&capture, &kept, 4 << 20);
    assert_eq!(rows_on_disk(&part), 2 * 65_536);
    assert_eq!(all_rows(&part), rows);
    drop(part);

    // A tiny cap: every chunk is read back from the rows file.
    let second = open_capped(&capture, &kept, 1 << 20);
    let status = second.index_dir_status().unwrap();
    assert!(status.index.reused, "{status:?}");
    assert_eq!(second.len(), FRAMES);
    assert_eq!(rows_on_disk(&second), FRAMES);
    assert_eq!(all_rows(&second), rows);
    assert_eq!(second.stats(), fresh.stats());
    assert_eq!(second.conversations(), fresh.conversations());
    assert_eq!(
        second.frame_bytes(FRAMES - 1).unwrap(),
        fresh.frame_bytes(FRAMES - 1).unwrap()
    );
    assert_eq!(second.spill_error(), None);

    // The rows file changed while the store is open: the first chunk's
    // rows are read again (the cache holds the last two read) and fail
    // their checksum; they read as placeholders, and the store says why.
    let rows_file = std::fs::read_dir(&status.folder)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "seg"))
        .unwrap();
    let mut bytes = std::fs::read(&rows_file).unwrap();
    bytes[10] ^= 0xFF;
    std::fs::write(&rows_file, &bytes).unwrap();
    let _ = second.row(65_536);
    let _ = second.row(2 * 65_536);
    let r = second.row(5).unwrap();
    assert_ne!(r, rows[5]);
    assert_eq!(r.conversation, NO_CONVERSATION, "a placeholder: {r:?}");
    let err = second.spill_error().unwrap();
    assert!(err.contains("fail their checksum"), "{err}");
    drop(second);
    // And the next open finds it stale.
    let third = open(&capture, Some(&kept));
    let status = third.index_dir_status().unwrap();
    assert!(!status.index.reused, "{status:?}");
    assert!(
        status
            .index
            .stale
            .as_deref()
            .unwrap()
            .contains("fails its checksum"),
        "{status:?}"
    );
    assert_eq!(all_rows(&third), rows);
    let _ = std::fs::remove_dir_all(capture.parent().unwrap());
}

/// `path` opened with the RC analysis under `cfg`, the index kept in `dir`.
fn open_analysed(
    path: &std::path::Path,
    dir: Option<&std::path::Path>,
    cfg: rocescope_decoders::analysis::AnalysisConfig,
) -> (std::sync::Arc<Store>, rocescope_replay::store::RcAnalyzer) {
    let an = rocescope_replay::store::RcAnalyzer::with_config(cfg);
    (open_with(path, dir, Box::new(an.clone()), None), an)
}

#[test]
fn the_analysis_is_kept_beside_the_index_and_taken_back_only_under_its_settings() {
    use rocescope_decoders::analysis::AnalysisConfig;
    let (capture, kept) = resends_in("index-dir-analysis", 20_000);
    let plain = AnalysisConfig::default();
    let other = AnalysisConfig {
        window_packets: 8,
        ..plain
    };
    let report = |cfg, dir: Option<&std::path::Path>| {
        let (s, an) = open_analysed(&capture, dir, cfg);
        (s.index_dir_status(), an.finish_report())
    };
    let (_, fresh) = report(plain, None);
    assert!(
        !fresh.episodes.is_empty(),
        "the capture has resends to find"
    );
    let (status, first) = report(plain, Some(&kept));
    let status = status.unwrap();
    assert!(
        !status.index.reused && !status.analysis.reused,
        "{status:?}"
    );
    assert_eq!(first, fresh);

    // The second open takes both back: the same findings, no frame read.
    let (status, second) = report(plain, Some(&kept));
    let status = status.unwrap();
    assert!(status.index.reused && status.analysis.reused, "{status:?}");
    assert!(status.summary().contains("the analysis too"), "{status:?}");
    assert_eq!(second, fresh);

    // Other settings: the rows are taken back, the analysis made again
    // (and said why), and kept for the next open under them.
    let (_, fresh_other) = report(other, None);
    assert_ne!(fresh_other, fresh, "the window changes what is found");
    let (status, third) = report(other, Some(&kept));
    let status = status.unwrap();
    assert!(status.index.reused && !status.analysis.reused, "{status:?}");
    let why = status.analysis.stale.unwrap();
    assert!(why.contains("other settings"), "{why}");
    assert_eq!(third, fresh_other);
    let (status, fourth) = report(other, Some(&kept));
    assert!(status.unwrap().analysis.reused);
    assert_eq!(fourth, fresh_other);
}
