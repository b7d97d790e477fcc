use super::*;
use crate::record::Direction;

fn row(i: u64) -> Row {
    Row {
        ts_ns: 1_000 + i,
        file_offset: 24 + i * 90,
        caplen: 60,
        origlen: 1_000,
        psn: i as u32 & 0xFF_FFFF,
        ..Row::default()
    }
}

/// Memory made ready elsewhere becomes the next whole chunk, is
/// counted while it waits, is asked for only once the rows fill whole
/// chunks, and goes back when the rows are all in.
#[test]
fn a_spare_becomes_the_next_chunk() {
    let mut c = Columns::new();
    assert!(!c.wants_spare(), "no rows yet");
    let rows: Vec<Row> = (0..CHUNK_ROWS as u64 + 10).map(row).collect();
    c.extend(&rows[..1000]);
    assert!(!c.wants_spare(), "the first chunk is still small");
    c.extend(&rows[1000..40_000]);
    assert!(
        c.wants_spare(),
        "the first chunk has reached a whole chunk's room"
    );
    let before = c.heap_bytes();
    // A slab of another size is not taken.
    c.give_spare(Slab::new(CHUNK_ROWS / 2));
    assert!(c.wants_spare());
    let spare = Slab::new(CHUNK_ROWS);
    let at = spare.cols().meta.as_ptr();
    c.give_spare(spare);
    assert!(!c.wants_spare(), "one spare at a time");
    assert_eq!(
        c.heap_bytes(),
        before + (CHUNK_ROWS * STEP_ROW_BYTES) as u64
    );
    c.extend(&rows[40_000..]);
    let Some(Slot::Hot(second)) = c.chunks.get(1) else {
        panic!("no second chunk")
    };
    assert_eq!(second.slab.cols().meta.as_ptr(), at, "the spare's memory");
    assert!(c.wants_spare(), "the spare was taken");
    for (i, r) in rows.iter().enumerate() {
        assert_eq!(c.get(i as u64).as_ref(), Some(r), "row {i}");
    }
    let held = c.heap_bytes();
    c.give_spare(Slab::new(CHUNK_ROWS));
    c.drop_spare();
    assert_eq!(c.heap_bytes(), held);
}

#[test]
fn rows_round_trip_through_24_bytes() {
    let mut c = Columns::new();
    let mut rows = Vec::new();
    for i in 0..(CHUNK_ROWS as u64 * 2 + 10) {
        let r = Row {
            ts_ns: 1_000 + i * 7,
            file_offset: 24 + i * 90,
            caplen: (i % 70_000) as u32,
            origlen: 70 + (i % 9000) as u32,
            conversation: (i % 5) as u32,
            opcode: (i % 256) as u8,
            psn: (i * 3) as u32 & 0xFF_FFFF,
            flags: Flags((i * 31) as u16),
            port: (i % 4) as u8,
            dir: [None, Some(Direction::Rx), Some(Direction::Tx)][(i % 3) as usize],
        };
        c.push(&r);
        rows.push(r);
    }
    for (i, r) in rows.iter().enumerate() {
        assert_eq!(c.get(i as u64).as_ref(), Some(r), "row {i}");
    }
    assert_eq!(c.get(rows.len() as u64), None);
    // Ranges read a chunk at a time give the same rows, across chunk
    // ends, the escaped lengths and past the end.
    let n = rows.len() as u64;
    let edge = CHUNK_ROWS as u64;
    for range in [
        0..n,
        3..17,
        edge - 5..edge + 5,
        edge * 2 - 1..n + 100,
        n..n + 1,
    ] {
        let mut got = Vec::new();
        c.extend_rows(range.clone(), &mut got);
        let end = range.end.min(n);
        let want: Vec<Row> = (range.start..end).filter_map(|i| c.get(i)).collect();
        assert_eq!(got, want, "{range:?}");
    }
    assert_eq!(c.seek(1_000 + 7 * 100), 100);
    assert_eq!(c.seek(1_000 + 7 * 100 + 1), 101);
    assert_eq!(c.seek(0), 0);
    assert_eq!(c.seek(u64::MAX), rows.len() as u64);
    let rows_bytes = 3 * CHUNK_ROWS as u64 * 24;
    assert_eq!(c.heap_bytes(), rows_bytes + c.big_lens.len() as u64 * 32);
}

#[test]
fn batches_store_what_single_rows_store() {
    let rows: Vec<Row> = (0..(CHUNK_ROWS as u64 * 2 + 777))
        .map(|i| Row {
            ts_ns: 1_000 + i * 7 - (i % 3),
            file_offset: 24 + i * 90,
            caplen: (i % 70_000) as u32,
            origlen: 70 + (i % 9000) as u32,
            psn: i as u32,
            ..Row::default()
        })
        .collect();
    let mut one = Columns::new();
    for r in &rows {
        one.push(r);
    }
    let mut many = Columns::new();
    let mut at = 0;
    for size in [256usize, 1024, 1, 16_384, 5_000, 70_000].iter().cycle() {
        let end = (at + size).min(rows.len());
        many.extend(&rows[at..end]);
        at = end;
        if at == rows.len() {
            break;
        }
    }
    assert_eq!(many.len(), one.len());
    assert_eq!(many.heap_bytes(), one.heap_bytes());
    assert_eq!(many.sorted, one.sorted);
    for i in 0..rows.len() as u64 {
        assert_eq!(many.get(i), one.get(i), "row {i}");
    }
}

/// The order, each chunk's latest time and the long lengths, read off
/// the written columns, against the rows themselves: a time going
/// back inside a batch, at a batch's first row, and never; in stepped
/// and wide chunks.
#[test]
fn extend_finds_order_latest_time_and_long_lengths() {
    let step = |wide: bool| if wide { 5_000_000_000 } else { 10 };
    let rows = |back_at: Option<usize>, wide: bool| -> Vec<Row> {
        (0..3000u64)
            .map(|i| Row {
                // Five seconds apart makes a chunk wide; a row two
                // steps back goes back in time.
                ts_ns: 10_000_000_000 + i * step(wide)
                    - if Some(i as usize) == back_at {
                        2 * step(wide)
                    } else {
                        0
                    },
                file_offset: 24 + i * 90,
                caplen: if i % 700 == 3 { 70_000 } else { 64 },
                origlen: 64 + (i % 5) as u32,
                ..Row::default()
            })
            .collect()
    };
    for wide in [false, true] {
        for back_at in [None, Some(1000), Some(1024), Some(2999)] {
            let rows = rows(back_at, wide);
            let mut c = Columns::new();
            for part in rows.chunks(1024) {
                c.extend(part);
            }
            assert_eq!(c.sorted, back_at.is_none(), "{back_at:?} wide {wide}");
            let latest = rows.iter().map(|r| r.ts_ns).max().unwrap();
            let chunk_max = c.chunks.iter().map(Slot::max_ts_ns).max().unwrap();
            assert_eq!(chunk_max, latest, "{back_at:?} wide {wide}");
            for (i, r) in rows.iter().enumerate() {
                assert_eq!(c.get(i as u64).as_ref(), Some(r), "row {i}");
            }
            assert_eq!(
                c.big_lens.len(),
                rows.iter().filter(|r| r.caplen > 0xFFFF).count()
            );
        }
    }
}

#[test]
fn seek_on_unsorted_timestamps() {
    let mut c = Columns::new();
    for ts in [10u64, 30, 20, 40, 35] {
        c.push(&Row {
            ts_ns: ts,
            ..Row::default()
        });
    }
    assert!(!c.sorted);
    assert_eq!(c.seek(25), 1);
    assert_eq!(c.seek(36), 3);
    assert_eq!(c.seek(41), 5);
}

/// Every row read back as written, by row, by range and by time,
/// whichever layout its chunk took.
fn assert_reads_back(c: &Columns, rows: &[Row]) {
    for (i, r) in rows.iter().enumerate() {
        assert_eq!(c.get(i as u64).as_ref(), Some(r), "row {i}");
    }
    let mut got = Vec::new();
    c.extend_rows(0..rows.len() as u64, &mut got);
    assert_eq!(got, rows);
    if c.sorted {
        for (i, r) in rows.iter().enumerate().step_by(997) {
            let first = rows.partition_point(|x| x.ts_ns < r.ts_ns);
            assert_eq!(c.seek(r.ts_ns), first as u64, "seek to row {i}");
        }
    }
}

/// A chunk whose rows do not all fit 32-bit steps (a time more than
/// four seconds on, an offset 4 GiB on, a time before the chunk's
/// first) turns wide, 32 bytes a row, and keeps every row; the next
/// chunk starts stepped again.
#[test]
fn a_chunk_turns_wide_when_a_step_does_not_fit() {
    let n = CHUNK_ROWS as u64 * 4;
    let rows: Vec<Row> = (0..n)
        .map(|i| {
            let chunk = i / CHUNK_ROWS as u64;
            let k = i % CHUNK_ROWS as u64;
            let mut r = row(i);
            r.ts_ns = (1 << 40) + i * 1_000;
            // A long pause in the middle of the second chunk.
            if chunk > 1 || (chunk == 1 && k >= 30_000) {
                r.ts_ns += 5_000_000_000;
            }
            // A frame 4 GiB into a file, in the third.
            if chunk == 2 && k == 40_000 {
                r.file_offset += 1 << 32;
            }
            r
        })
        .collect();
    for batch in [1usize, 128, 5_000] {
        let mut c = Columns::new();
        for part in rows.chunks(batch) {
            c.extend(part);
        }
        assert!(c.sorted);
        assert_reads_back(&c, &rows);
        let layouts: Vec<Layout> = c
            .chunks
            .iter()
            .map(|s| match s {
                Slot::Hot(h) => h.slab.layout(),
                _ => panic!("all in memory"),
            })
            .collect();
        assert!(matches!(layouts[0], Layout::Steps { .. }), "{layouts:?}");
        assert_eq!(layouts[1..3], [Layout::Wide, Layout::Wide], "{batch}");
        assert!(matches!(layouts[3], Layout::Steps { .. }), "{layouts:?}");
        let held = CHUNK_ROWS as u64 * (2 * 24 + 2 * 32);
        assert_eq!(c.held_bytes(), held + c.big_lens.len() as u64 * 32);
    }
    // Out of order by more than the slack before the first time.
    let mut c = Columns::new();
    let back: Vec<Row> = [10_000_000_000u64, 9_000_000_000, 11_000_000_000]
        .iter()
        .map(|&ts_ns| Row {
            ts_ns,
            ..Row::default()
        })
        .collect();
    c.extend(&back);
    assert!(!c.sorted);
    assert_reads_back(&c, &back);
    assert_eq!(c.seek(9_500_000_000), 0, "file order on unsorted rows");
}

/// Chunks of both layouts go to disk past the memory share, read back
/// the same, and take late flags there.
#[test]
fn stepped_and_wide_chunks_spill_and_read_back() {
    let folder = rocescope_testkit::temp_dir("columns-spill");
    let dir = folder.path().to_path_buf();
    let spill = Spill::new(super::super::spill::SpillConfig {
        dir: dir.clone(),
        // An index share of about two chunks.
        max_memory_bytes: 16 << 20,
        max_disk_bytes: None,
        remove_on_drop: true,
    })
    .unwrap();
    let mut c = Columns::bounded(spill);
    let n = CHUNK_ROWS as u64 * 6 + 3;
    let mut rows: Vec<Row> = (0..n)
        .map(|i| {
            let mut r = row(i);
            r.ts_ns = 1_000 + i * 1_000;
            // Chunks 1 and 4 wide: a frame 4 GiB on in each.
            if i == CHUNK_ROWS as u64 + 9 || i == 4 * CHUNK_ROWS as u64 + 9 {
                r.file_offset += 1 << 32;
            }
            r.flags = Flags::ROCE;
            r
        })
        .collect();
    for part in rows.chunks(4_096) {
        c.extend(part);
        c.bound();
    }
    let cold = c
        .chunks
        .iter()
        .filter(|s| matches!(s, Slot::Cold(_)))
        .count();
    assert!(cold >= 3, "{cold} chunks on disk");
    // The walks over the hot chunks start where the first one is.
    let first_hot = c.chunks.iter().position(|s| matches!(s, Slot::Hot(_)));
    assert_eq!(first_hot, Some(c.first_hot));
    let all_hot: u64 = c
        .chunks
        .iter()
        .map(|s| match s {
            Slot::Hot(h) => h.heap_bytes(),
            _ => 0,
        })
        .sum();
    assert_eq!(c.hot_chunk_bytes(), all_hot);
    assert!(matches!(
        c.chunks[1],
        Slot::Cold(ColdChunk {
            layout: Layout::Wide,
            ..
        })
    ));
    assert!(matches!(
        c.chunks[0],
        Slot::Cold(ColdChunk {
            layout: Layout::Steps { .. },
            ..
        })
    ));
    assert_reads_back(&c, &rows);
    for i in [5u64, CHUNK_ROWS as u64 + 70, n - 1] {
        c.update_flags(i, Flags::RETRANSMISSION, Flags::ROCE);
        rows[i as usize].flags = Flags::RETRANSMISSION;
    }
    assert_reads_back(&c, &rows);
    drop(c);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The disk ring deletes the oldest spilled chunks and says below which
/// frame offset the bytes are the deleted rows' only: the first kept
/// row's, which a spilled chunk keeps without being read back.
#[test]
fn the_ring_says_where_the_kept_rows_frames_start() {
    let folder = rocescope_testkit::temp_dir("columns-ring");
    let spill = Spill::new(super::super::spill::SpillConfig {
        dir: folder.path().to_path_buf(),
        max_memory_bytes: 16 << 20,
        // About three chunks on disk.
        max_disk_bytes: Some(3 * (CHUNK_ROWS * STEP_ROW_BYTES) as u64 + 1),
        remove_on_drop: true,
    })
    .unwrap();
    let mut c = Columns::bounded(spill);
    let rows: Vec<Row> = (0..CHUNK_ROWS as u64 * 12)
        .map(|i| {
            let mut r = row(i);
            r.ts_ns = 1_000 + i * 1_000;
            r.file_offset = 7 + i * 90;
            r
        })
        .collect();
    let mut last = None;
    for part in rows.chunks(4_096) {
        c.extend(part);
        if let Some(offset) = c.bound() {
            assert!(last.is_none_or(|l| l < offset));
            last = Some(offset);
            let first = c.first_row();
            assert_eq!(offset, rows[first as usize].file_offset);
            assert_eq!(c.get(first).map(|r| r.file_offset), Some(offset));
        }
    }
    assert!(c.first_row() >= 5 * CHUNK_ROWS as u64, "{}", c.first_row());
    assert!(last.is_some());
    // The deleted chunks leave the list: a session deleting one every
    // few seconds for hours holds only the kept ones.
    let kept = (c.len() - c.first_row()).div_ceil(CHUNK_ROWS as u64);
    assert_eq!(c.chunks.len() as u64, kept);
    // Their rows still read, as placeholders at the first kept row's
    // time; the kept ones whole; a time among them finds the first kept.
    let first = c.first_row();
    let mut out = Vec::new();
    c.extend_rows(first - 3..first + 2, &mut out);
    let kept_ts_ns = rows[first as usize].ts_ns;
    for p in &out[..3] {
        assert_eq!((p.ts_ns, p.conversation), (kept_ts_ns, NO_CONVERSATION));
    }
    assert_eq!(out[3..], rows[first as usize..first as usize + 2]);
    assert_eq!(c.get(7).map(|r| r.ts_ns), Some(kept_ts_ns));
    assert_eq!(c.seek(rows[7].ts_ns), first);
    assert_eq!(c.seek(rows[first as usize + 9].ts_ns), first + 9);
}
