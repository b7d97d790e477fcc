//! The store over real files: rows, conversations, queries by range and
//! time, bytes read back by offset, live growth, bad input.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rocescope_decoders::{DecodeConfig, IcrcStatus, LinkLayer, Opcode, PacketBuilder, decode};
use rocescope_replay::store::{
    Decoded, Flags, Ingest, IngestFrame, NoAnalysis, Store, decode_onto,
};
use rocescope_replay::{CaptureReader, TimeBase};

fn sample() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../assets/captures/sample-write-read.pcap")
}

fn open(path: &Path) -> Arc<Store> {
    let s = Store::open(path, DecodeConfig::default(), Box::new(NoAnalysis)).unwrap();
    s.wait();
    s
}

fn tmp(name: &str) -> PathBuf {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("store");
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

#[test]
fn sample_rows_match_the_capture() {
    let store = open(&sample());
    assert_eq!(store.len(), 15);
    let p = store.progress();
    assert!(p.complete && p.error.is_none());
    assert_eq!(p.bytes_done, p.bytes_total);
    let stats = store.stats();
    assert_eq!(stats.packets, 15);
    assert_eq!(stats.roce_packets, 15);
    assert_eq!(stats.icrc_errors, 0);
    assert_eq!(stats.truncated, 0);

    let mut rows = Vec::new();
    store.rows(0..100, &mut rows);
    assert_eq!(rows.len(), 15);
    assert_eq!(rows[0].psn, 100);
    assert_eq!(rows[0].opcode, Opcode::RC_WRITE_FIRST.0);
    assert!(rows[0].flags.contains(Flags::ROCE | Flags::ACK_REQ));
    assert!(rows[3].flags.contains(Flags::NAK | Flags::RESPONSE));
    assert!(rows[14].flags.contains(Flags::CNP | Flags::BECN));
    assert!(rows.windows(2).all(|w| w[0].ts_ns <= w[1].ts_ns));

    // Two one-way flows: requests to QP 0x12, ACKs/responses/CNP to QP 0x11.
    let convs = store.conversations();
    assert_eq!(convs.len(), 2);
    assert_eq!(convs[0].key.dest_qp, 0x12);
    assert_eq!(convs[0].key.src_addr().to_string(), "10.0.0.1");
    assert_eq!(convs[0].packets + convs[1].packets, 15);
    assert_eq!(rows[1].conversation, 1);

    // Bytes come back from the file by offset and decode as at ingest.
    let mut reader = CaptureReader::open(&sample()).unwrap();
    let mut i = 0;
    while let Some(f) = reader.next_frame().unwrap() {
        let bytes = store.frame_bytes(i).unwrap();
        assert_eq!(bytes, f.data, "row {i}");
        i += 1;
    }
    let b = store.frame_bytes(4).unwrap();
    let p = decode(&b, LinkLayer::Ethernet, &DecodeConfig::default());
    assert_eq!(p.bth().unwrap().psn(), 103);
    assert_eq!(p.icrc(), IcrcStatus::Ok);
    assert!(store.frame_bytes(15).is_err());
}

#[test]
fn time_queries() {
    let store = open(&sample());
    let rows: Vec<_> = (0..store.len()).map(|i| store.row(i).unwrap()).collect();
    let t5 = rows[5].ts_ns;
    assert_eq!(store.seek_time(t5), 5);
    assert_eq!(store.seek_time(t5 + 1), 6);
    assert_eq!(store.seek_time(0), 0);
    assert_eq!(store.seek_time(u64::MAX), 15);
    assert_eq!(store.time_window(rows[2].ts_ns, rows[6].ts_ns), 2..6);
    assert_eq!(store.time_window(rows[6].ts_ns, rows[2].ts_ns), 6..6);
}

#[test]
fn a_live_store_grows_and_is_queryable_while_it_grows() {
    let store = Store::live(TimeBase::Nanoseconds);
    let mut ingest = Ingest::new(DecodeConfig::default(), Box::new(NoAnalysis));
    let mut buf = Vec::new();
    for i in 0..1000u32 {
        PacketBuilder::rocev2_ipv4([10, 0, 0, 1], [10, 0, 0, 2], Opcode::RC_WRITE_ONLY, 7, i)
            .build_into(&[1, 2, 3, 4], &mut buf);
        let frame = IngestFrame::ethernet(u64::from(i) * 100, &buf);
        store.ingest(&mut ingest, &frame);
        if i == 499 {
            store.flush_live(&mut ingest);
            assert_eq!(store.len(), 500);
            assert!(!store.progress().complete);
        }
    }
    store.finish_live(&mut ingest);
    assert_eq!(store.len(), 1000);
    assert!(store.progress().complete);
    assert_eq!(store.row(999).unwrap().psn, 999);
    let bytes = store.frame_bytes(321).unwrap();
    let p = decode(&bytes, LinkLayer::Ethernet, &DecodeConfig::default());
    assert_eq!(p.bth().unwrap().psn(), 321);
    assert_eq!(store.time_window(10_000, 20_000), 100..200);
}

/// A visitor of a live store's frames may wait on another thread that
/// appends (an export's workers hand batches over a channel while the
/// ingest goes on): the bytes' lock is not held across the visit. It was,
/// and `attach --partitions` deadlocked on its first window: the appending
/// ingest waited for the lock, and with a writer waiting, no other reader
/// got in.
#[test]
fn a_frame_visitor_may_wait_for_an_append() {
    use std::sync::mpsc;
    use std::time::Duration;
    let store = Store::live(TimeBase::Nanoseconds);
    let mut ingest = Ingest::new(DecodeConfig::default(), Box::new(NoAnalysis));
    let mut buf = Vec::new();
    let mut feed = |store: &Store, ingest: &mut Ingest, i: u32| {
        PacketBuilder::rocev2_ipv4([10, 0, 0, 1], [10, 0, 0, 2], Opcode::RC_WRITE_ONLY, 7, i)
            .build_into(&[1, 2, 3, 4], &mut buf);
        store.ingest(ingest, &IngestFrame::ethernet(u64::from(i) * 100, &buf));
    };
    for i in 0..100 {
        feed(&store, &mut ingest, i);
    }
    store.flush_live(&mut ingest);
    let (appended_tx, appended_rx) = mpsc::channel();
    std::thread::scope(|s| {
        let store = &store;
        let visitor = s.spawn(move || {
            let mut waited = None;
            store
                .for_each_frame(0..100, |i, _, _| {
                    if i == 0 {
                        // Let the append happen, and wait for it.
                        waited = Some(appended_rx.recv_timeout(Duration::from_secs(10)).is_ok());
                    }
                    std::ops::ControlFlow::Continue(())
                })
                .unwrap();
            waited
        });
        s.spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            for i in 100..200 {
                feed(store, &mut ingest, i);
            }
            store.flush_live(&mut ingest);
            let _ = appended_tx.send(());
        });
        assert_eq!(
            visitor.join().unwrap(),
            Some(true),
            "the append waited on the visit"
        );
    });
    assert_eq!(store.len(), 200);
}

/// Blocks of frames (bytes back to back), raw or decoded elsewhere, mixed
/// with single frames: the same rows and bytes as one frame at a time.
#[test]
fn live_blocks_store_the_same_rows_and_bytes_as_single_frames() {
    let frames: Vec<Vec<u8>> = (0..300u32)
        .map(|i| {
            let mut f = Vec::new();
            PacketBuilder::rocev2_ipv4([10, 0, 0, 1], [10, 0, 0, 2], Opcode::RC_WRITE_ONLY, 7, i)
                .build_into(&vec![i as u8; (i % 7) as usize], &mut f);
            f
        })
        .collect();
    let frame = |i: usize, file_offset: u64| IngestFrame {
        ts_ns: i as u64 * 100,
        data: &frames[i],
        origlen: frames[i].len() as u32,
        linktype: 1,
        port: (i % 3) as u8,
        dir: None,
        file_offset,
    };
    let cfg = DecodeConfig::default();
    let one = Store::live(TimeBase::Nanoseconds);
    let mut ingest = Ingest::new(cfg.clone(), Box::new(NoAnalysis));
    for i in 0..frames.len() {
        one.ingest(&mut ingest, &frame(i, 0));
    }
    one.finish_live(&mut ingest);

    let blocks = Store::live(TimeBase::Nanoseconds);
    let mut ingest = Ingest::new(cfg.clone(), Box::new(NoAnalysis));
    let block = |range: std::ops::Range<usize>| {
        let mut bytes = Vec::new();
        let mut starts = Vec::new();
        for i in range.clone() {
            starts.push(bytes.len() as u64);
            bytes.extend_from_slice(&frames[i]);
        }
        (bytes, starts)
    };
    // Single frames pending before a block must keep their place.
    for i in 0..10 {
        blocks.ingest(&mut ingest, &frame(i, 0));
    }
    let (bytes, starts) = block(10..150);
    blocks.ingest_block(
        &mut ingest,
        &bytes,
        (10..150).map(|i| frame(i, starts[i - 10])),
    );
    blocks.ingest(&mut ingest, &frame(150, 0));
    let (bytes, starts) = block(151..300);
    let mut decoded = Decoded::default();
    for i in 151..300 {
        decode_onto(&mut decoded, &cfg, &frame(i, starts[i - 151]));
    }
    blocks.ingest_decoded_block(&mut ingest, &bytes, &mut decoded, 1);
    blocks.finish_live(&mut ingest);

    assert_eq!(blocks.len(), one.len());
    let (mut a, mut b) = (Vec::new(), Vec::new());
    one.rows(0..one.len(), &mut a);
    blocks.rows(0..blocks.len(), &mut b);
    for (i, (x, y)) in a.iter().zip(&b).enumerate() {
        assert_eq!(
            (x.ts_ns, x.psn, x.caplen, x.port, x.flags),
            (y.ts_ns, y.psn, y.caplen, y.port, y.flags),
            "row {i}"
        );
        assert_eq!(blocks.frame_bytes(i as u64).unwrap(), frames[i], "row {i}");
    }
    assert_eq!(blocks.stats(), one.stats());
    assert_eq!(blocks.conversations(), one.conversations());
}

#[test]
fn a_cut_file_keeps_every_whole_frame_and_warns() {
    let bytes = std::fs::read(sample()).unwrap();
    let cut = tmp("cut.pcap");
    std::fs::write(&cut, &bytes[..bytes.len() - 30]).unwrap();
    let store = open(&cut);
    assert_eq!(store.len(), 14);
    let w = store.warnings();
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(w[0].offset > 0);
}

#[test]
fn not_a_capture_fails_at_open() {
    let junk = tmp("junk.bin");
    std::fs::write(&junk, [0x42u8; 100]).unwrap();
    let err = Store::open(&junk, DecodeConfig::default(), Box::new(NoAnalysis)).unwrap_err();
    assert!(err.to_string().contains("byte 0"), "{err}");
}

#[test]
fn header_only_frames_count_as_truncated_not_bad() {
    let path = tmp("hdr.pcap");
    let mut out = Vec::new();
    for v in [0xa1b2_3c4du32, 0x0004_0002, 0, 0, 65535, 1] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    let mut buf = Vec::new();
    for i in 0..10u32 {
        let b =
            PacketBuilder::rocev2_ipv4([10, 0, 0, 1], [10, 0, 0, 2], Opcode::RC_WRITE_MIDDLE, 7, i);
        b.build_headers_into(4096, &mut buf);
        for v in [
            1u32,
            i,
            buf.len() as u32,
            (b.header_len() + 4096 + 4) as u32,
        ] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.extend_from_slice(&buf);
    }
    std::fs::write(&path, out).unwrap();
    let store = open(&path);
    let s = store.stats();
    assert_eq!((s.packets, s.truncated, s.icrc_errors), (10, 10, 0));
    assert_eq!(store.row(0).unwrap().origlen, 54 + 4096 + 4);
    assert_eq!(store.row(0).unwrap().caplen, 54);
}

#[test]
fn a_recording_keeps_its_records_next_to_the_frames() {
    use rocescope_replay::record::{Record, SlotDecision, SlotKind, Verdict};
    use rocescope_replay::{Direction, PcapngWriter};
    let path = tmp("rec.pcapng");
    let mut w = PcapngWriter::new(std::fs::File::create(&path).unwrap()).unwrap();
    let mut buf = Vec::new();
    for i in 0..20u32 {
        PacketBuilder::rocev2_ipv4([10, 0, 0, 1], [10, 0, 0, 2], Opcode::RC_WRITE_ONLY, 7, i)
            .build_into(&[9; 8], &mut buf);
        let dir = if i % 2 == 0 {
            Direction::Tx
        } else {
            Direction::Rx
        };
        w.write_frame(1_000 + u64::from(i), 1, Some(dir), buf.len() as u32, &buf)
            .unwrap();
        let slot = SlotDecision {
            ts_ns: 1_000 + u64::from(i),
            slot: SlotKind::Dpi,
            qpn: 7,
            psn: i,
            verdict: Verdict::Pass,
            latency_ns: 44,
            detail: 0,
        };
        w.write_record(&Record::Slot(slot)).unwrap();
    }
    w.flush().unwrap();
    drop(w);
    let store = open(&path);
    assert_eq!(store.len(), 20);
    assert_eq!(store.record_count(), 20);
    let slots = store.records_where(|r| matches!(r, Record::Slot(_)));
    assert_eq!(slots.len(), 20);
    let r = store.row(3).unwrap();
    assert_eq!((r.port, r.dir, r.ts_ns), (1, Some(Direction::Rx), 1_003));
    assert_eq!(store.frame_bytes(3).unwrap().len(), r.caplen as usize);
}

#[test]
fn the_rc_analysis_runs_at_ingest_and_flags_rows() {
    use rocescope_decoders::analysis::EpisodeCause;
    use rocescope_replay::store::RcAnalyzer;
    let analysis = RcAnalyzer::default();
    let store = Store::open(
        &sample(),
        DecodeConfig::default(),
        Box::new(analysis.clone()),
    )
    .unwrap();
    store.wait();
    let flags: Vec<Flags> = (0..store.len())
        .map(|i| store.row(i).unwrap().flags)
        .collect();
    assert!(
        flags[2].contains(Flags::OUT_OF_SEQUENCE),
        "PSN 102 arrives after 100"
    );
    for i in [5, 6, 7] {
        assert!(flags[i].contains(Flags::RETRANSMISSION), "row {i}");
    }
    assert_eq!(
        flags
            .iter()
            .filter(|f| f.contains(Flags::RETRANSMISSION))
            .count(),
        3
    );
    let report = analysis.0.lock().unwrap().report();
    assert_eq!(report.qps.len(), 1);
    assert_eq!(report.episodes.len(), 1);
    assert_eq!(report.episodes[0].cause, EpisodeCause::NakSeqErr);
    assert_eq!(report.episodes[0].packets_resent, 3);
    assert_eq!(report.counters.np_cnp_sent, 1);
}

#[test]
fn frames_read_in_bulk_match_frames_read_one_by_one() {
    // More rows than one step of the bulk reader.
    let path = tmp("bulk.pcap");
    let frame = PacketBuilder::rocev2_ipv4([10, 0, 0, 1], [10, 0, 0, 2], Opcode::RC_ACK, 0x12, 7)
        .build(&[]);
    // One a second, each a few bytes shorter than the last (t % 7).
    let frames = (0..10_000u64).map(|t| (t * 1_000_000, &frame[..frame.len() - (t % 7) as usize]));
    std::fs::write(&path, rocescope_testkit::pcap_bytes(1, frames)).unwrap();
    let big = open(&path);
    assert_eq!(big.len(), 10_000);
    let mut seen = 0u64;
    big.for_each_frame(0..big.len(), |i, row, bytes| {
        assert_eq!(i, seen);
        assert_eq!(big.row(i).unwrap(), *row);
        assert_eq!(bytes.len(), frame.len() - (i % 7) as usize);
        assert_eq!(bytes, &frame[..bytes.len()]);
        seen += 1;
        std::ops::ControlFlow::Continue(())
    })
    .unwrap();
    assert_eq!(seen, 10_000);

    let store = open(&sample());
    let mut seen = 0u64;
    store
        .for_each_frame(0..store.len(), |i, row, bytes| {
            assert_eq!(store.row(i).unwrap(), *row);
            assert_eq!(bytes, store.frame_bytes(i).unwrap().as_slice(), "row {i}");
            seen += 1;
            std::ops::ControlFlow::Continue(())
        })
        .unwrap();
    assert_eq!(seen, store.len());
    assert_eq!(store.link_layer(0), Some(LinkLayer::Ethernet));
    // A sub-range, stopped early.
    let mut got = Vec::new();
    store
        .for_each_frame(3..store.len(), |i, _, _| {
            got.push(i);
            if got.len() == 2 {
                std::ops::ControlFlow::Break(())
            } else {
                std::ops::ControlFlow::Continue(())
            }
        })
        .unwrap();
    assert_eq!(got, vec![3, 4]);
}

#[test]
fn the_link_type_of_a_raw_ip_capture_is_kept_per_port() {
    // LINKTYPE_RAW (101): the frames start at the IP header.
    let frame = PacketBuilder::rocev2_ipv4([10, 0, 0, 1], [10, 0, 0, 2], Opcode::RC_ACK, 0x12, 7)
        .build(&[]);
    let ip = &frame[14..];
    let path = tmp("raw-ip.pcap");
    let frames = (0..3u64).map(|t| (t * 1_000_000, ip));
    std::fs::write(&path, rocescope_testkit::pcap_bytes(101, frames)).unwrap();
    let store = open(&path);
    assert_eq!(store.len(), 3);
    assert_eq!(
        store.link_layer(store.row(0).unwrap().port),
        Some(LinkLayer::RawIp)
    );
    store
        .for_each_frame(0..3, |_, row, bytes| {
            let p = decode(
                bytes,
                store.link_layer(row.port).unwrap(),
                &DecodeConfig::default(),
            );
            assert_eq!(p.bth().unwrap().opcode(), Opcode::RC_ACK);
            std::ops::ControlFlow::Continue(())
        })
        .unwrap();
}

/// A capture several index chunks long: every row as written, with and
/// without the RC analysis (the reader then decodes the batches itself),
/// and when indexing ends the index holds its chunks and nothing more (a
/// chunk made ready ahead and not used goes back).
#[test]
fn a_capture_of_several_chunks_keeps_every_row_and_no_spare() {
    use rocescope_replay::store::RcAnalyzer;
    const CHUNK_ROWS: u64 = 1 << 16;
    let n = 3 * CHUNK_ROWS + 5;
    let path = tmp("chunks.pcap");
    let frame = PacketBuilder::rocev2_ipv4([10, 0, 0, 1], [10, 0, 0, 2], Opcode::RC_ACK, 0x12, 0)
        .build(&[]);
    // Cut before the ICRC, as a header-only capture is.
    let mut cut = frame[..frame.len() - 4].to_vec();
    let mut file = Vec::with_capacity(24 + n as usize * (16 + cut.len()));
    for v in [0xa1b2_c3d4u32, 0x0004_0002, 0, 0, 65535, 1] {
        file.extend_from_slice(&v.to_le_bytes());
    }
    for i in 0..n {
        // The PSN, the BTH's last three bytes.
        cut[42 + 9..42 + 12].copy_from_slice(&(i as u32).to_be_bytes()[1..]);
        file.extend_from_slice(&(i as u32 / 1_000_000).to_le_bytes());
        file.extend_from_slice(&(i as u32 % 1_000_000).to_le_bytes());
        file.extend_from_slice(&(cut.len() as u32).to_le_bytes());
        file.extend_from_slice(&(frame.len() as u32).to_le_bytes());
        file.extend_from_slice(&cut);
    }
    std::fs::write(&path, &file).unwrap();
    let analyses: [Box<dyn rocescope_replay::store::Analyzer>; 2] =
        [Box::new(NoAnalysis), Box::new(RcAnalyzer::default())];
    for analysis in analyses {
        let store = Store::open(&path, DecodeConfig::default(), analysis).unwrap();
        store.wait();
        assert_eq!(store.len(), n);
        let mut rows = Vec::new();
        store.rows(0..n, &mut rows);
        for (i, r) in rows.iter().enumerate() {
            assert_eq!(r.psn, i as u32 & 0xFF_FFFF, "row {i}");
            assert_eq!(r.ts_ns, i as u64 * 1_000, "row {i}");
            assert!(r.flags.contains(Flags::ROCE | Flags::CUT), "row {i}");
        }
        assert_eq!(store.stats().truncated, n);
        // Four chunks of 65,536 rows of 24 bytes: the last holds 5 rows.
        assert_eq!(store.index_bytes(), 4 * CHUNK_ROWS * 24);
    }
    let _ = std::fs::remove_file(&path);
}
