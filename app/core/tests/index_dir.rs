//! A capture file's index kept in `--index-dir`: the workbench's second
//! open has every row at once, read back from the saved index (the status
//! line says so), and its model says the same of every row as a fresh
//! index: rows with their verdicts, frame bytes, time searches, filters,
//! and the RC analysis, which reads the frames again.
#![allow(clippy::unwrap_used)]

mod support;

use rocescope_core::session::SessionLimits;
use rocescope_core::source::open;
use support::{all_rows, file_spec, filtered, finished};

/// Three whole index chunks and part of a fourth.
const FRAMES: u64 = 200_000;

#[test]
fn a_reused_index_has_every_row_at_once_and_the_same_model() {
    let folder = rocescope_testkit::temp_dir("index-dir-model");
    let capture = folder.path().join("resends.pcap");
    rocescope_replay::synth::write_resending_header_only_pcap(&capture, FRAMES, 1_000).unwrap();
    let kept = SessionLimits {
        index_dir: Some(folder.path().join("indexes")),
        ..SessionLimits::default()
    };
    let first = finished(open(file_spec(&capture), &kept).unwrap());
    let status = first.store().index_dir_status().unwrap();
    assert!(
        !status.index.reused && status.index.stale.is_none(),
        "{status:?}"
    );
    assert!(status.saved_bytes.unwrap() >= FRAMES * 24, "{status:?}");
    drop(first);

    let second = open(file_spec(&capture), &kept).unwrap();
    // Every row before any indexing could have run: read back, not indexed.
    assert_eq!(second.store().len(), FRAMES);
    assert!(second.store().index_dir_status().unwrap().index.reused);
    rocescope_testkit::assert_starts_with(second.status(), "index: reused from ");
    let mut second = finished(second);
    let mut fresh = finished(open(file_spec(&capture), &SessionLimits::default()).unwrap());

    let rows = all_rows(&second);
    assert_eq!(rows, all_rows(&fresh), "every row, verdicts included");
    assert!(
        rows.iter()
            .filter(|r| r
                .flags
                .contains(rocescope_replay::store::Flags::RETRANSMISSION))
            .count()
            > 50
    );
    for i in [0, 65_535, 65_536, 150_001, FRAMES - 1] {
        assert_eq!(
            second.store().frame_bytes(i).unwrap(),
            fresh.store().frame_bytes(i).unwrap()
        );
    }
    let mid_ns = rows[100_000].ts_ns;
    assert_eq!(
        second.store().seek_time(mid_ns),
        fresh.store().seek_time(mid_ns)
    );
    assert_eq!(second.store().stats(), fresh.store().stats());
    assert_eq!(
        second.store().conversations(),
        fresh.store().conversations()
    );
    assert_eq!(second.store().time_sorted(), fresh.store().time_sorted());
    assert_eq!(second.report(), fresh.report(), "the analysis, run again");
    for f in ["retransmission", "psn > 20000 && !retransmission"] {
        let shown = filtered(&mut second, f);
        assert!(!shown.is_empty(), "{f}");
        assert_eq!(shown, filtered(&mut fresh, f), "{f}");
    }
}
