//! A capture file opened under a memory cap far below its index: the
//! older index chunks go to disk segments, and the workbench's model says
//! the same of every row as with the whole index in memory (rows, frame
//! bytes, filters, the analysis), and says how much is on disk.
#![allow(clippy::unwrap_used)]

mod support;

use std::path::Path;

use rocescope_core::Model;
use rocescope_core::session::SessionLimits;
use rocescope_core::source::open;
use support::{all_rows, file_spec, filtered, finished};

/// 200,000 frames: three whole index chunks and part of a fourth.
const FRAMES: u64 = 200_000;

fn model(path: &Path, limits: &SessionLimits) -> Model {
    finished(open(file_spec(path), limits).unwrap())
}

#[test]
fn a_capped_file_index_reads_back_as_the_whole_one() {
    let folder = rocescope_testkit::temp_dir("file-memory");
    let capture = folder.path().join("resends.pcap");
    rocescope_replay::synth::write_resending_header_only_pcap(&capture, FRAMES, 1_000).unwrap();
    let segments = folder.path().join("segments");
    let tiny = SessionLimits {
        max_memory_bytes: 1 << 20,
        max_disk_bytes: None,
        dir: Some(segments.clone()),
        index_dir: None,
    };
    let mut capped = model(&capture, &tiny);
    let mut whole = model(&capture, &SessionLimits::default());

    // Below the process's baseline only the chunk being filled stays: the
    // three whole chunks are on disk.
    let spill = capped.store().spill_stats().unwrap();
    assert_eq!(spill.rows_on_disk, 3 * 65_536, "{spill:?}");
    assert!(spill.disk_bytes >= spill.rows_on_disk * 24, "{spill:?}");
    assert_eq!(spill.rows_deleted, 0);
    assert_eq!(capped.store().spill_error(), None);
    assert_eq!(whole.store().spill_stats().unwrap().rows_on_disk, 0);
    let status = rocescope_core::status::status_line(&capped).parts();
    assert!(
        status
            .iter()
            .any(|p| p.text.starts_with("196608 rows on disk (")),
        "{status:?}"
    );

    assert_eq!(capped.store().len(), FRAMES);
    let rows = all_rows(&capped);
    assert_eq!(rows, all_rows(&whole), "every row, verdicts included");
    let resent = rows
        .iter()
        .filter(|r| {
            r.flags
                .contains(rocescope_replay::store::Flags::RETRANSMISSION)
        })
        .count();
    assert!(resent > 50, "{resent} resends found");
    for i in [0, 1, 65_535, 65_536, 131_071, 150_001, FRAMES - 1] {
        assert_eq!(
            capped.store().frame_bytes(i).unwrap(),
            whole.store().frame_bytes(i).unwrap()
        );
        assert_eq!(capped.store().row(i), whole.store().row(i));
    }
    let mid_ns = rows[100_000].ts_ns;
    assert_eq!(
        capped.store().seek_time(mid_ns),
        whole.store().seek_time(mid_ns)
    );
    assert_eq!(capped.report(), whole.report());

    for f in [
        "retransmission",
        "opcode == 17",
        "psn > 20000 && !retransmission",
    ] {
        let shown = filtered(&mut capped, f);
        assert!(!shown.is_empty(), "{f}");
        assert_eq!(shown, filtered(&mut whole, f), "{f}");
    }

    drop(capped);
    assert!(
        !segments.exists(),
        "the session's segments are removed with the store"
    );
}
