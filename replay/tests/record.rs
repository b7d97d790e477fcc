//! Tests of the recording format: every record kind written by
//! `PcapngWriter` and read back by `CaptureReader::next_item`, tshark
//! interop, damaged payloads, files cut at every byte, and writer errors.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{self, Write};
use std::path::PathBuf;
use std::process::Command;

use rocescope_replay::capture::{CaptureError, CaptureItem, CaptureReader, LinkType};
use rocescope_replay::pcapng_writer::MAX_FRAME_BYTES;
use rocescope_replay::record::{
    DropCount, DropReason, GroundTruth, MarkerKind, PAYLOAD_HEADER_BYTES, ProbeDef, ProfilerSample,
    QpState, QpStateChange, ROCESCOPE_PEN, RecordError, RecordType, RetransmitCause, SlotDecision,
    SlotKind, TruthEvent, Verdict,
};
use rocescope_replay::{Direction, PcapngWriter, Record, SkippedRecords};

// ---------------------------------------------------------------- samples

fn bytes(n: usize, seed: u8) -> Vec<u8> {
    (0..n)
        .map(|i| (i as u8).wrapping_mul(29).wrapping_add(seed))
        .collect()
}

fn frame(ts_ns: u64, port: u8, direction: Option<Direction>, len: usize, cut: u32) -> Record {
    Record::Frame {
        ts_ns,
        port,
        direction,
        orig_len: len as u32 + cut,
        data: bytes(len, port ^ len as u8),
    }
}

/// Every non-frame record kind with edge values, in no particular order.
fn every_kind() -> Vec<Record> {
    let mut out = vec![
        Record::ProbeDef(ProbeDef {
            probe: 7,
            name: "tx_fifo_fill".into(),
            unit: "beats".into(),
            module: "roce/tx".into(),
        }),
        Record::ProbeDef(ProbeDef {
            probe: u16::MAX,
            name: String::new(),
            unit: String::new(),
            module: "ünïcødé ✓".into(),
        }),
        Record::Profiler(ProfilerSample {
            cycle: 250_000_000,
            ts_ns: 1_000_000_000,
            probe: 7,
            value: -42,
        }),
        Record::Profiler(ProfilerSample {
            cycle: u64::MAX,
            ts_ns: u64::MAX,
            probe: 0,
            value: i64::MIN,
        }),
        Record::Annotation {
            ts_ns: 3,
            text: "QP 0x2a falls from 5.6 to 1.1 GB/s here".into(),
        },
        Record::Annotation {
            ts_ns: 0,
            text: String::new(),
        },
    ];
    for (i, slot) in [SlotKind::Aes, SlotKind::Dpi, SlotKind::App]
        .into_iter()
        .enumerate()
    {
        for (j, verdict) in [Verdict::Pass, Verdict::Drop, Verdict::Transformed]
            .into_iter()
            .enumerate()
        {
            out.push(Record::Slot(SlotDecision {
                ts_ns: 1_203_000_000 + (i * 3 + j) as u64,
                slot,
                qpn: 0x2a,
                psn: 0xff_ffff,
                verdict,
                latency_ns: 44,
                detail: u32::MAX - j as u32,
            }));
        }
    }
    for (i, state) in [
        QpState::Reset,
        QpState::Init,
        QpState::Rtr,
        QpState::Rts,
        QpState::Sqd,
        QpState::Sqe,
        QpState::Err,
    ]
    .into_iter()
    .enumerate()
    {
        out.push(Record::QpState(QpStateChange {
            ts_ns: 5_000 + i as u64,
            qpn: 0x00ab_cdef,
            state,
            next_psn: 100 + i as u32,
            oldest_unacked_psn: 90,
            epsn: 0x00ff_ffff,
            msn: 12,
            outstanding: 16,
            retry_count: 7,
        }));
    }
    for (i, event) in [
        TruthEvent::WireDrop,
        TruthEvent::WireCorrupt,
        TruthEvent::CaptureDrop,
        TruthEvent::Retransmit {
            cause: RetransmitCause::Nak,
        },
        TruthEvent::Retransmit {
            cause: RetransmitCause::Timeout,
        },
        TruthEvent::NakSent { code: 0 },
        TruthEvent::NakSent { code: 255 },
        TruthEvent::CnpSent,
        TruthEvent::EcnMarked,
        TruthEvent::PfcPause { ns: 335_544 },
        TruthEvent::DpiDrop,
        TruthEvent::Unknown {
            code: 4242,
            arg: 0xdead_beef_0000_0001,
        },
    ]
    .into_iter()
    .enumerate()
    {
        out.push(Record::Truth(GroundTruth {
            ts_ns: 7_000 + i as u64,
            qpn: 3,
            psn: i as u32,
            event,
        }));
    }
    for (i, kind) in [MarkerKind::Start, MarkerKind::Reconnect, MarkerKind::Stop]
        .into_iter()
        .enumerate()
    {
        out.push(Record::Marker {
            ts_ns: 9_000 + i as u64,
            kind,
            text: format!("agent 10.0.0.{i}:4790"),
        });
    }
    for reason in [
        DropReason::QueueFull,
        DropReason::CaptureLoss,
        DropReason::Other,
    ] {
        // Not an interface of the recording: stored as a custom block.
        out.push(Record::Drops(DropCount {
            ts_ns: 11_000,
            interface: u32::MAX,
            dropped: u64::MAX,
            reason,
        }));
    }
    out
}

/// Writes `records` and returns the file and the offset after each record.
fn write_all(records: &[Record]) -> (Vec<u8>, Vec<u64>) {
    let mut w = PcapngWriter::new(Vec::new()).unwrap();
    let mut ends = Vec::with_capacity(records.len());
    let mut end = w.position();
    for r in records {
        w.write_record(r).unwrap();
        end = w.position();
        ends.push(end);
    }
    let file = w.finish().unwrap();
    assert_eq!(file.len() as u64, end);
    (file, ends)
}

/// Reads every item as owned records.
fn read_items(file: &[u8]) -> (Vec<Record>, CaptureReader<&[u8]>) {
    let mut r = CaptureReader::new(file).unwrap();
    let mut out = Vec::new();
    while let Some(item) = r.next_item().unwrap() {
        out.push(match item {
            CaptureItem::Frame(f) => {
                assert_eq!(f.linktype, LinkType::ETHERNET);
                assert_eq!(f.caplen as usize, f.data.len());
                f.to_record()
            }
            CaptureItem::Record(r) => r,
        });
    }
    (out, r)
}

/// A mix of frames and records, with drops on declared interfaces (ISBs).
fn mixed() -> Vec<Record> {
    let mut out = Vec::new();
    let kinds = every_kind();
    let dirs = [None, Some(Direction::Rx), Some(Direction::Tx)];
    for (i, rec) in kinds.into_iter().enumerate() {
        let port = (i % 3) as u8;
        let dir = dirs[i % 3];
        out.push(frame(
            1_700_000_000_000_000_000 + i as u64 * 997,
            port,
            dir,
            i % 70,
            (i % 2) as u32 * 1000,
        ));
        out.push(rec);
    }
    // Interface ids follow first use: (0, None) = 0, (1, Rx) = 1, (2, Tx) = 2.
    for (interface, reason) in [
        (0, DropReason::CaptureLoss),
        (1, DropReason::QueueFull),
        (2, DropReason::Other),
    ] {
        out.push(Record::Drops(DropCount {
            ts_ns: 1_700_000_001_000_000_000 + u64::from(interface),
            interface,
            dropped: 1 << (40 + interface),
            reason,
        }));
    }
    out.push(frame(u64::MAX, 255, Some(Direction::Tx), 1514, 0));
    out
}

// ---------------------------------------------------------------- round trips

#[test]
fn every_record_kind_round_trips() {
    let records = mixed();
    let (file, _) = write_all(&records);
    let (back, reader) = read_items(&file);
    assert_eq!(back, records);
    assert_eq!(reader.skipped_records(), SkippedRecords::default());
    assert!(reader.warnings().is_empty(), "{:?}", reader.warnings());
}

#[test]
fn every_payload_round_trips_and_every_prefix_is_an_error() {
    for r in every_kind() {
        let mut p = Vec::new();
        assert!(r.encode_payload(&mut p));
        assert!(p.len() >= PAYLOAD_HEADER_BYTES);
        assert_eq!(
            u16::from_le_bytes([p[0], p[1]]),
            r.record_type().unwrap().code()
        );
        assert_eq!(p[2], 1, "version");
        assert_eq!(Record::decode_payload(&p).as_ref(), Ok(&r));
        // Padding and appended fields are ignored.
        let mut longer = p.clone();
        longer.extend_from_slice(&[0, 0, 0, 0xaa]);
        assert_eq!(Record::decode_payload(&longer).as_ref(), Ok(&r));
        for cut in 0..p.len() {
            match Record::decode_payload(&p[..cut]) {
                Err(RecordError::Truncated { offset, .. }) => assert!(offset <= cut),
                other => panic!("{r:?} cut at {cut}: {other:?}"),
            }
        }
    }
}

#[test]
fn many_frames_on_several_ports_and_directions() {
    let dirs = [None, Some(Direction::Rx), Some(Direction::Tx)];
    let mut w = PcapngWriter::with_capacity(4096, Vec::new()).unwrap();
    let mut expect = Vec::new();
    let mut ts = 1_700_000_000_123_456_789u64;
    let data = bytes(9000, 1);
    for i in 0..20_000usize {
        let port = (i * 7 % 5) as u8;
        let dir = dirs[i * 11 % 3];
        let len = (i * 131) % 1600;
        // Irregular gaps, some of them 0 and some crossing 2^32 ns.
        ts += (i as u64 * 2_654_435_761) % 5_000_000_000;
        let orig = len as u32 + (i % 4 == 0) as u32 * 4;
        w.write_frame(ts, port, dir, orig, &data[..len]).unwrap();
        let iface = w.interface_id(port, dir).unwrap();
        expect.push((ts, port, dir, orig, len, iface));
    }
    assert_eq!(w.interfaces(), 15);
    assert_eq!(w.frames_written(), 20_000);
    let file = w.finish().unwrap();

    // next_frame and next_item see the same frames.
    let mut r = CaptureReader::with_buffer_size(&file[..], 1000).unwrap();
    let mut n = 0;
    while let Some(f) = r.next_frame().unwrap() {
        let (ts, port, dir, orig, len, iface) = expect[n];
        assert_eq!(f.index, n as u64);
        assert_eq!(f.ts_ns, ts, "frame {n}");
        assert_eq!(f.port, Some(port));
        assert_eq!(f.direction, dir);
        assert_eq!(f.origlen, orig);
        assert_eq!(f.data, &data[..len]);
        assert_eq!(f.interface, iface);
        n += 1;
    }
    assert_eq!(n, expect.len());
    let (items, _) = read_items(&file);
    assert_eq!(items.len(), expect.len());
}

#[test]
fn interfaces_are_declared_once_and_named() {
    let mut w = PcapngWriter::new(Vec::new()).unwrap();
    assert_eq!(w.interface_id(3, Some(Direction::Rx)).unwrap(), 0);
    assert_eq!(w.interface_id(3, Some(Direction::Tx)).unwrap(), 1);
    assert_eq!(w.interface_id(3, None).unwrap(), 2);
    assert_eq!(w.interface_id(3, Some(Direction::Rx)).unwrap(), 0);
    assert_eq!(w.interface_id(255, Some(Direction::Tx)).unwrap(), 3);
    let file = w.finish().unwrap();
    let text = String::from_utf8_lossy(&file);
    for name in ["rocescope", "port3-rx", "port3-tx", "port3", "port255-tx"] {
        assert!(text.contains(name), "{name} missing");
    }
    // Every block is padded to 32 bits.
    assert_eq!(file.len() % 4, 0);
}

#[test]
fn pcap_files_yield_frames_through_next_item() {
    let mut f = Vec::new();
    for v in [0xa1b2_c3d4u32, 0x0002_0004] {
        f.extend_from_slice(&v.to_le_bytes());
    }
    for v in [0u32, 0, 65535, 1, 10, 20, 4, 4] {
        f.extend_from_slice(&v.to_le_bytes());
    }
    f.extend_from_slice(&[1, 2, 3, 4]);
    let mut r = CaptureReader::new(&f[..]).unwrap();
    match r.next_item().unwrap() {
        Some(CaptureItem::Frame(fr)) => {
            assert_eq!(fr.data, &[1, 2, 3, 4]);
            assert_eq!((fr.port, fr.direction), (None, None));
        }
        other => panic!("{other:?}"),
    }
    assert!(r.next_item().unwrap().is_none());
}

// ---------------------------------------------------------------- tshark

fn tshark_available() -> bool {
    rocescope_testkit::available(&[rocescope_testkit::TSHARK])
}

fn temp_file(name: &str, bytes: &[u8]) -> PathBuf {
    // One folder in the test build's for the whole binary; the next run
    // overwrites its files.
    let dir = rocescope_testkit::build_tmp().join("replay-record");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

fn tshark(path: &std::path::Path, args: &[&str]) -> String {
    let out = Command::new("tshark")
        .arg("-r")
        .arg(path)
        .args(args)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "tshark failed: {stderr}");
    let complaints: Vec<&str> = stderr
        .lines()
        .filter(|l| !l.contains("Running as user") && !l.trim().is_empty())
        .collect();
    assert!(complaints.is_empty(), "tshark complained: {stderr}");
    String::from_utf8(out.stdout).unwrap()
}

/// tshark (4.0 at least) lists every custom block as a numbered "PCAPNG
/// Custom Block" record between the frames; ISBs are not listed. Frames are
/// the records with an interface id.
#[test]
fn tshark_reads_recordings() {
    if !tshark_available() {
        return;
    }
    let records = mixed();
    let (file, _) = write_all(&records);
    let path = temp_file("record.pcapng", &file);
    let packets_only = tshark(
        &path,
        &[
            "-Y",
            "frame.interface_id",
            "-T",
            "fields",
            "-e",
            "frame.number",
        ],
    );
    let all = tshark(
        &path,
        &[
            "-T",
            "fields",
            "-E",
            "separator=,",
            "-e",
            "frame.number",
            "-e",
            "frame.len",
            "-e",
            "frame.cap_len",
            "-e",
            "frame.interface_id",
            "-e",
            "frame.interface_name",
            "-e",
            "frame.packet_flags_direction",
            "-e",
            "frame.time_epoch",
        ],
    );
    let _ = std::fs::remove_file(&path);

    let frames: Vec<&Record> = records
        .iter()
        .filter(|r| matches!(r, Record::Frame { .. }))
        .collect();
    // Drops on declared interfaces are ISBs; everything else a custom block.
    let custom_blocks = records
        .iter()
        .filter(|r| match r {
            Record::Frame { .. } => false,
            Record::Drops(d) => d.interface == u32::MAX,
            _ => true,
        })
        .count();
    assert_eq!(packets_only.lines().count(), frames.len(), "{packets_only}");
    let lines: Vec<&str> = all.lines().collect();
    assert_eq!(lines.len(), frames.len() + custom_blocks, "{all}");
    for (i, line) in lines.iter().enumerate() {
        assert!(line.starts_with(&format!("{},", i + 1)), "{line}");
    }
    let packet_lines: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| !l.split(',').nth(3).unwrap_or_default().is_empty())
        .collect();
    assert_eq!(packet_lines.len(), frames.len(), "{all}");

    let mut ifaces: Vec<(u8, Option<Direction>)> = Vec::new();
    for (line, rec) in packet_lines.iter().zip(frames) {
        let Record::Frame {
            ts_ns,
            port,
            direction,
            orig_len,
            data,
        } = rec
        else {
            unreachable!()
        };
        let id = match ifaces.iter().position(|k| *k == (*port, *direction)) {
            Some(id) => id,
            None => {
                ifaces.push((*port, *direction));
                ifaces.len() - 1
            }
        };
        let name = match direction {
            Some(d) => format!("port{port}-{d}"),
            None => format!("port{port}"),
        };
        let f: Vec<&str> = line.split(',').collect();
        assert_eq!(f[1], orig_len.to_string(), "frame.len: {line}");
        assert_eq!(f[2], data.len().to_string(), "frame.cap_len: {line}");
        assert_eq!(f[3], id.to_string(), "frame.interface_id: {line}");
        assert_eq!(f[4], name, "frame.interface_name: {line}");
        let flag = match direction {
            None => "",
            Some(Direction::Rx) => "0x00000001",
            Some(Direction::Tx) => "0x00000002",
        };
        assert_eq!(f[5], flag, "direction flag: {line}");
        // Epoch seconds with 9 decimals: exact ns (tshark's double-free
        // formatting is exact for these values).
        let (sec, frac) = f[6].split_once('.').unwrap();
        let tshark_ns =
            sec.parse::<u128>().unwrap() * 1_000_000_000 + frac.parse::<u128>().unwrap();
        assert_eq!(tshark_ns, u128::from(*ts_ns), "time: {line}");
    }
}

// ---------------------------------------------------------------- damage

/// A custom block with the given enterprise number around `payload`.
fn custom_block(pen: u32, payload: &[u8]) -> Vec<u8> {
    let pad = (4 - payload.len() % 4) % 4;
    let len = (16 + payload.len() + pad) as u32;
    let mut b = Vec::new();
    b.extend_from_slice(&0x0000_0badu32.to_le_bytes());
    b.extend_from_slice(&len.to_le_bytes());
    b.extend_from_slice(&pen.to_le_bytes());
    b.extend_from_slice(payload);
    b.extend(std::iter::repeat_n(0, pad));
    b.extend_from_slice(&len.to_le_bytes());
    b
}

fn payload_of(r: &Record) -> Vec<u8> {
    let mut p = Vec::new();
    assert!(r.encode_payload(&mut p));
    p
}

#[test]
fn damaged_and_unknown_payloads_are_skipped_and_counted() {
    let slot = Record::Slot(SlotDecision {
        ts_ns: 1,
        slot: SlotKind::Dpi,
        qpn: 2,
        psn: 3,
        verdict: Verdict::Drop,
        latency_ns: 44,
        detail: 0,
    });
    let note = Record::Annotation {
        ts_ns: 2,
        text: "ok".into(),
    };
    let good = payload_of(&slot);
    let mut bad_enum = good.clone();
    bad_enum[PAYLOAD_HEADER_BYTES] = 9; // slot kind
    let cut = good[..good.len() - 3].to_vec();
    let mut bad_utf8 = payload_of(&note);
    bad_utf8[PAYLOAD_HEADER_BYTES + 4] = 0xc3; // lone lead byte
    let mut huge_str = payload_of(&note);
    huge_str[PAYLOAD_HEADER_BYTES..PAYLOAD_HEADER_BYTES + 4]
        .copy_from_slice(&u32::MAX.to_le_bytes());
    let mut version0 = good.clone();
    version0[2] = 0;
    let mut newer = good.clone();
    newer[2] = 2;
    let mut unknown = good.clone();
    unknown[0..2].copy_from_slice(&999u16.to_le_bytes());
    let mut bad_truth = payload_of(&Record::Truth(GroundTruth {
        ts_ns: 0,
        qpn: 0,
        psn: 0,
        event: TruthEvent::Retransmit {
            cause: RetransmitCause::Nak,
        },
    }));
    let arg_at = PAYLOAD_HEADER_BYTES + 10;
    bad_truth[arg_at] = 7; // no such cause

    let (mut file, _) = write_all(std::slice::from_ref(&note));
    let damaged: [&[u8]; 6] = [&bad_enum, &cut, &bad_utf8, &huge_str, &version0, &bad_truth];
    for p in damaged {
        file.extend(custom_block(ROCESCOPE_PEN, p));
    }
    file.extend(custom_block(ROCESCOPE_PEN, &newer));
    file.extend(custom_block(ROCESCOPE_PEN, &unknown));
    file.extend(custom_block(ROCESCOPE_PEN, &[]));
    // Someone else's custom blocks: ignored, not counted.
    file.extend(custom_block(32473, &good));
    file.extend(custom_block(ROCESCOPE_PEN, &good));

    let (back, reader) = read_items(&file);
    assert_eq!(back, vec![note, slot]);
    assert_eq!(
        reader.skipped_records(),
        SkippedRecords {
            unknown_type: 1,
            newer_version: 1,
            malformed: 7,
        }
    );
    let w = reader.warnings();
    assert_eq!(w.len(), 7, "{w:?}");
    let text: Vec<String> = w.iter().map(ToString::to_string).collect();
    rocescope_testkit::assert_contains(
        &text[0],
        "field slot at payload byte 12 has invalid value 9",
    );
    assert!(text[1].contains("is cut"), "{}", text[1]);
    assert!(text[2].contains("not valid UTF-8"), "{}", text[2]);
    rocescope_testkit::assert_contains(&text[3], "field text at payload byte 16 is cut");
    assert!(text[4].contains("version"), "{}", text[4]);
    rocescope_testkit::assert_contains(&text[5], &format!("field arg at payload byte {arg_at}"));
    rocescope_testkit::assert_contains(&text[6], "field type at payload byte 0 is cut");
    // Each names the block's offset in the file.
    assert!(
        w.iter()
            .all(|w| w.offset > 0 && text[0].contains("custom block at byte"))
    );

    // next_frame is not bothered by any of it.
    let mut r = CaptureReader::new(&file[..]).unwrap();
    assert!(r.next_frame().unwrap().is_none());
    assert!(r.warnings().is_empty());
}

#[test]
fn foreign_statistics_blocks_become_drop_records() {
    // An IDB (µs) and ISBs as dumpcap writes them: ifdrop, osdrop, neither.
    let mut w = PcapngWriter::new(Vec::new()).unwrap();
    w.write_frame(10, 0, None, 4, &[1, 2, 3, 4]).unwrap();
    let mut file = w.finish().unwrap();
    let isb = |opts: &[(u16, u64)]| {
        let mut body = Vec::new();
        body.extend_from_slice(&0u32.to_le_bytes());
        body.extend_from_slice(&0u32.to_le_bytes());
        body.extend_from_slice(&77u32.to_le_bytes());
        for (code, v) in opts {
            body.extend_from_slice(&code.to_le_bytes());
            body.extend_from_slice(&8u16.to_le_bytes());
            body.extend_from_slice(&v.to_le_bytes());
        }
        body.extend_from_slice(&[0; 4]);
        let len = (12 + body.len()) as u32;
        let mut b = Vec::new();
        b.extend_from_slice(&5u32.to_le_bytes());
        b.extend_from_slice(&len.to_le_bytes());
        b.extend(body);
        b.extend_from_slice(&len.to_le_bytes());
        b
    };
    file.extend(isb(&[(4, 100), (5, 3), (7, 9)]));
    file.extend(isb(&[(7, 9)]));
    file.extend(isb(&[(4, 100)]));
    let (back, reader) = read_items(&file);
    let drops = |dropped, reason| {
        Record::Drops(DropCount {
            ts_ns: 77,
            interface: 0,
            dropped,
            reason,
        })
    };
    assert_eq!(
        back[1..],
        [
            drops(3, DropReason::CaptureLoss),
            drops(9, DropReason::QueueFull)
        ]
    );
    assert!(reader.warnings().is_empty());
}

#[test]
fn statistics_for_undeclared_interfaces_are_warned_about() {
    let (mut file, _) = write_all(&[]);
    let mut b = Vec::new();
    for v in [5u32, 28, 9, 0, 0, 0, 28] {
        b.extend_from_slice(&v.to_le_bytes());
    }
    file.extend(b);
    let (back, reader) = read_items(&file);
    assert!(back.is_empty());
    assert_eq!(reader.skipped_records().malformed, 1);
    assert!(reader.warnings()[0].message.contains("interface 9"));
}

#[test]
fn cut_at_every_byte_reads_every_complete_block() {
    let records: Vec<Record> = mixed().into_iter().take(24).collect();
    let (file, ends) = write_all(&records);
    let shb_len = u32::from_le_bytes(file[4..8].try_into().unwrap()) as usize;
    for cut in 0..=file.len() {
        let part = &file[..cut];
        let mut r = match CaptureReader::with_buffer_size(part, 256) {
            Ok(r) => r,
            Err(e) => {
                assert!(cut < shb_len, "cut {cut}: {e}");
                assert!(
                    matches!(
                        e,
                        CaptureError::Truncated { .. } | CaptureError::TooShort { .. }
                    ),
                    "cut {cut}: {e}"
                );
                continue;
            }
        };
        let mut got = Vec::new();
        while let Some(item) = r.next_item().unwrap() {
            got.push(match item {
                CaptureItem::Frame(f) => f.to_record(),
                CaptureItem::Record(r) => r,
            });
        }
        let complete = ends.iter().filter(|&&e| e as usize <= cut).count();
        assert_eq!(got, records[..complete], "cut at {cut}");
        let at_boundary = cut == shb_len || ends.contains(&(cut as u64));
        // A cut between an IDB and its frame leaves a complete IDB: no
        // warning either.
        if !at_boundary {
            assert!(
                r.warnings().len() == 1 || is_block_boundary(&file, cut),
                "cut at {cut}: {:?}",
                r.warnings()
            );
        }
    }
}

/// True if a block ends at `at` (walking the framing from the start).
fn is_block_boundary(file: &[u8], at: usize) -> bool {
    let mut pos = 0;
    while pos < at {
        let len = u32::from_le_bytes(file[pos + 4..pos + 8].try_into().unwrap()) as usize;
        pos += len;
    }
    pos == at
}

#[test]
fn mutated_recordings_never_panic() {
    let (file, _) = write_all(&mixed());
    let mut rng = rocescope_testkit::Rng(0x1234_5678_9abc_def0u64);
    let mut next = move || rng.next_u64();
    for _ in 0..3000 {
        let mut m = file.clone();
        for _ in 0..(next() % 4 + 1) {
            let at = (next() % m.len() as u64) as usize;
            m[at] = next() as u8;
        }
        let Ok(mut r) = CaptureReader::with_buffer_size(&m[..], 512) else {
            continue;
        };
        let mut n = 0;
        while let Ok(Some(_)) = r.next_item() {
            n += 1;
            assert!(n < 10_000);
        }
    }
}

// ---------------------------------------------------------------- writer errors

#[test]
fn invalid_frames_are_rejected_and_leave_the_file_valid() {
    let mut w = PcapngWriter::new(Vec::new()).unwrap();
    let big = vec![0u8; MAX_FRAME_BYTES as usize + 1];
    let e = w.write_frame(1, 0, None, u32::MAX, &big).unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
    let e = w.write_frame(1, 0, None, 3, &[0; 4]).unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
    // The largest frame is fine.
    let max = vec![7u8; MAX_FRAME_BYTES as usize];
    w.write_frame(2, 1, None, MAX_FRAME_BYTES, &max).unwrap();
    let file = w.finish().unwrap();
    let (back, _) = read_items(&file);
    assert_eq!(back.len(), 1);
    let mut r = CaptureReader::new(&file[..]).unwrap();
    assert_eq!(r.next_frame().unwrap().unwrap().data, &max[..]);
}

/// Accepts `budget` bytes, then fails.
struct Failing {
    budget: usize,
}

impl Write for Failing {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.budget == 0 {
            return Err(io::Error::other("disk full"));
        }
        let n = buf.len().min(self.budget);
        self.budget -= n;
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[test]
fn write_errors_are_returned_and_stick() {
    let mut w = PcapngWriter::with_capacity(64, Failing { budget: 200 }).unwrap();
    let mut failed = None;
    for i in 0..100 {
        if let Err(e) = w.write_frame(i, 0, Some(Direction::Rx), 60, &[0; 60]) {
            failed = Some(i);
            assert!(e.to_string().contains("disk full"), "{e}");
            break;
        }
    }
    assert!(failed.is_some());
    let e = w
        .write_record(&Record::Annotation {
            ts_ns: 0,
            text: "x".into(),
        })
        .unwrap_err();
    assert!(e.to_string().contains("earlier write"), "{e}");
    assert!(w.flush().is_err());
}

#[test]
fn flush_reaches_the_underlying_writer() {
    let mut w = PcapngWriter::new(Vec::new()).unwrap();
    w.write_frame(1, 0, None, 1, &[1]).unwrap();
    assert!(w.get_ref().is_empty(), "buffered");
    w.flush().unwrap();
    assert_eq!(w.get_ref().len() as u64, w.position());
}

#[test]
fn record_types_and_timestamps() {
    for r in every_kind() {
        let t = r.record_type().unwrap();
        assert_eq!(RecordType::from_code(t.code()), Some(t));
        match &r {
            Record::ProbeDef(_) => assert_eq!(r.ts_ns(), 0),
            Record::Profiler(s) => assert_eq!(r.ts_ns(), s.ts_ns),
            _ => {}
        }
    }
    assert_eq!(frame(5, 0, None, 1, 0).ts_ns(), 5);
    assert_eq!(frame(5, 0, None, 1, 0).record_type(), None);
}
