//! A live store bounded in memory answers every query as an unbounded one
//! does, from memory and disk segments alike; with a disk cap, its ring
//! deletes the oldest rows and counts them.
#![allow(clippy::unwrap_used)]

use std::ops::ControlFlow;
use std::path::PathBuf;
use std::sync::Arc;

use rocescope_decoders::DecodeConfig;
use rocescope_replay::TimeBase;
use rocescope_replay::store::{
    Ingest, IngestFrame, NoAnalysis, Row, SpillConfig, Store, StoreError,
};

fn frames(n: u64) -> Vec<(u64, Vec<u8>)> {
    rocescope_replay::synth::header_only_frames(n)
}

fn session_dir(name: &str) -> PathBuf {
    let d = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("spill")
        .join(name);
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// Feed the frames as a live source does: a frame at a time, in blocks,
/// published every 16 Ki frames.
fn feed(store: &Store, frames: &[(u64, Vec<u8>)]) {
    let mut ingest = Ingest::new(DecodeConfig::default(), Box::new(NoAnalysis));
    for (ts_ns, data) in frames {
        store.ingest(&mut ingest, &IngestFrame::ethernet(*ts_ns, data));
    }
    store.finish_live(&mut ingest);
}

/// Rows `rows` of `store` read back as the frames fed in.
fn assert_frames(store: &Store, input: &[(u64, Vec<u8>)], rows: impl IntoIterator<Item = u64>) {
    for i in rows {
        assert_eq!(
            store.frame_bytes(i).unwrap(),
            input[i as usize].1,
            "row {i}"
        );
    }
}

fn all_rows(s: &Store) -> Vec<Row> {
    let mut v = Vec::new();
    s.rows(0..s.len(), &mut v);
    v
}

#[test]
fn a_bounded_store_answers_as_an_unbounded_one() {
    let input = frames(400_000);
    let free = Store::live(TimeBase::Nanoseconds);
    feed(&free, &input);
    let dir = session_dir("bounded");
    let cap = 6 << 20;
    let bounded = Store::live_bounded(
        TimeBase::Nanoseconds,
        SpillConfig {
            dir: dir.clone(),
            max_memory_bytes: cap,
            max_disk_bytes: None,
            remove_on_drop: true,
        },
    )
    .unwrap();
    feed(&bounded, &input);

    let st = bounded.spill_stats().unwrap();
    assert!(st.memory_bytes <= cap, "{st:?}");
    assert!(st.rows_on_disk >= 300_000, "{st:?}");
    assert!(st.disk_bytes > 20 << 20, "{st:?}");
    assert_eq!(st.disk_written_bytes, st.disk_bytes);
    assert_eq!((st.rows_deleted, st.segments_deleted), (0, 0));
    assert_eq!(bounded.spill_error(), None);
    assert_eq!(bounded.first_row(), 0);

    // Rows (offsets aside, which differ by segment layout), bytes, time
    // searches: the same.
    assert_eq!(bounded.len(), free.len());
    assert_eq!(bounded.stats(), free.stats());
    let strip = |v: Vec<Row>| -> Vec<Row> {
        v.into_iter()
            .map(|r| Row {
                file_offset: 0,
                ..r
            })
            .collect()
    };
    assert_eq!(strip(all_rows(&bounded)), strip(all_rows(&free)));
    assert_frames(&bounded, &input, [0, 1, 65_535, 65_536, 123_457, 399_999]);
    let mut n = 0usize;
    bounded
        .for_each_frame(0..bounded.len(), |i, _, bytes| {
            assert_eq!(bytes, input[i as usize].1.as_slice(), "row {i}");
            n += 1;
            ControlFlow::Continue(())
        })
        .unwrap();
    assert_eq!(n, input.len());
    for k in [0usize, 7, 70_000, 250_001, 399_999] {
        let t = input[k].0;
        assert_eq!(bounded.seek_time(t), free.seek_time(t), "seek {t}");
        assert_eq!(bounded.seek_time(t + 1), free.seek_time(t + 1));
    }
    assert_eq!(bounded.seek_time(u64::MAX), free.len());

    drop(bounded);
    assert!(
        !dir.exists(),
        "the session folder is removed with the store"
    );
}

#[test]
fn the_disk_ring_deletes_the_oldest_rows_and_counts_them() {
    let input = frames(400_000);
    let dir = session_dir("ring");
    let max_disk = 12 << 20;
    let store = Arc::clone(
        &Store::live_bounded(
            TimeBase::Nanoseconds,
            SpillConfig {
                dir: dir.clone(),
                max_memory_bytes: 4 << 20,
                max_disk_bytes: Some(max_disk),
                remove_on_drop: true,
            },
        )
        .unwrap(),
    );
    feed(&store, &input);
    let st = store.spill_stats().unwrap();
    assert!(st.disk_bytes <= max_disk, "{st:?}");
    assert!(st.rows_deleted > 0 && st.segments_deleted > 0, "{st:?}");
    assert!(st.bytes_deleted > 0, "{st:?}");
    let first = store.first_row();
    assert_eq!(first, st.rows_deleted, "the ring deletes from the start");
    assert_eq!(store.len(), input.len() as u64, "row numbers stay");

    // Deleted rows say so; kept rows read back whole.
    assert!(matches!(
        store.frame_bytes(0),
        Err(StoreError::Deleted { row: 0 })
    ));
    assert_frames(
        &store,
        &input,
        [first, first + 1, first + 65_537, input.len() as u64 - 1],
    );
    let mut kept = 0u64;
    store
        .for_each_frame(0..store.len(), |i, _, bytes| {
            if i >= first {
                assert_eq!(bytes, input[i as usize].1.as_slice(), "row {i}");
                kept += 1;
            } else {
                assert!(bytes.is_empty(), "row {i} was deleted");
            }
            ControlFlow::Continue(())
        })
        .unwrap();
    assert_eq!(kept, input.len() as u64 - first);
    // A time inside the deleted part finds the first kept row or a
    // placeholder before it, never a row past it.
    assert!(store.seek_time(input[10].0) <= first);
    assert_eq!(store.seek_time(input[first as usize + 5].0), first + 5);
}

#[test]
fn a_session_folder_that_cannot_be_made_is_named() {
    let folder = rocescope_testkit::temp_dir("spill-file");
    let file = folder.path().join("a-file");
    std::fs::write(&file, b"not a folder").unwrap();
    let err = Store::live_bounded(
        TimeBase::Nanoseconds,
        SpillConfig {
            dir: file.join("session"),
            max_memory_bytes: 1 << 20,
            max_disk_bytes: None,
            remove_on_drop: true,
        },
    )
    .unwrap_err();
    assert!(err.to_string().contains("rocescope-spill-file"), "{err}");
    let _ = std::fs::remove_file(&file);
}

#[test]
fn records_past_their_share_are_let_go_and_counted() {
    use rocescope_replay::Record;
    let store = Store::live_bounded(
        TimeBase::Nanoseconds,
        SpillConfig {
            dir: session_dir("records"),
            max_memory_bytes: 2 << 20,
            max_disk_bytes: None,
            remove_on_drop: true,
        },
    )
    .unwrap();
    let n = 10_000u64;
    for ts_ns in 0..n {
        store.push_record(Record::Annotation {
            ts_ns,
            text: String::new(),
        });
    }
    let kept = store.record_count() as u64;
    let st = store.spill_stats().unwrap();
    assert!(kept < n, "{kept}");
    assert_eq!(kept + st.records_deleted, n, "every record kept or counted");
    // The newest are the ones kept.
    let last = store.records_where(|_| true).pop().unwrap();
    assert_eq!(
        last,
        Record::Annotation {
            ts_ns: n - 1,
            text: String::new()
        }
    );
}

#[test]
fn two_stores_in_one_folder_remove_only_their_own_segments() {
    let input = frames(200_000);
    let dir = session_dir("shared");
    let cfg = SpillConfig {
        dir: dir.clone(),
        max_memory_bytes: 2 << 20,
        max_disk_bytes: None,
        remove_on_drop: true,
    };
    let first = Store::live_bounded(TimeBase::Nanoseconds, cfg.clone()).unwrap();
    feed(&first, &input);
    let second = Store::live_bounded(TimeBase::Nanoseconds, cfg).unwrap();
    feed(&second, &input);
    assert!(second.spill_stats().unwrap().rows_on_disk > 0);
    drop(first);
    let left = std::fs::read_dir(&dir).unwrap().count();
    assert!(left > 0, "the second store's segments stay");
    // The second store still reads its rows from disk.
    assert_eq!(second.frame_bytes(1).unwrap(), input[1].1);
    assert_eq!(second.frame_bytes(100_001).unwrap(), input[100_001].1);
    assert!(dir.exists());
    drop(second);
    assert!(!dir.exists(), "the last store removes the folder");
}
