//! The real captures in ../shared/captures decode to exactly what tshark
//! prints for them, and every ICRC verifies. Skipped (with a message) where
//! ../shared is absent, as on a fresh clone.
#![allow(clippy::unwrap_used)]

use std::collections::HashMap;
use std::path::PathBuf;

use rocescope_decoders::{DecodeConfig, IcrcStatus, LinkLayer, OpcodeKind, decode, decode_headers};

fn captures_dir() -> Option<PathBuf> {
    rocescope_testkit::shared_captures()
}

/// The bytes of the shared capture `name`, `None` where the shared
/// captures are not on this machine.
fn capture_bytes(name: &str) -> Option<Vec<u8>> {
    let dir = captures_dir()?;
    Some(std::fs::read(dir.join(name)).unwrap())
}

/// Frames of a little-endian classic pcap (enough for these two files).
fn pcap_frames(bytes: &[u8]) -> Vec<&[u8]> {
    assert_eq!(&bytes[..4], &[0xd4, 0xc3, 0xb2, 0xa1]);
    let mut off = 24;
    let mut out = Vec::new();
    while off + 16 <= bytes.len() {
        let caplen = u32::from_le_bytes(bytes[off + 8..off + 12].try_into().unwrap()) as usize;
        out.push(&bytes[off + 16..off + 16 + caplen]);
        off += 16 + caplen;
    }
    out
}

fn fields_of(frame: &[u8]) -> HashMap<&'static str, u64> {
    let p = decode(frame, LinkLayer::Ethernet, &DecodeConfig::default());
    let mut m = HashMap::new();
    p.for_each_field(&mut |f| {
        if let Some(v) = f.value.as_u64() {
            m.insert(f.name, v);
        }
    });
    m
}

fn parse_num(s: &str) -> u64 {
    match s.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).unwrap(),
        None => s.parse().unwrap(),
    }
}

#[test]
fn rxe_capture_matches_tshark_field_by_field() {
    let Some(dir) = captures_dir() else { return };
    let bytes = std::fs::read(dir.join("rxe-write-read.pcap")).unwrap();
    let frames = pcap_frames(&bytes);
    assert_eq!(frames.len(), 12);
    let tsv = std::fs::read_to_string(dir.join("rxe-write-read.tshark-fields.tsv")).unwrap();
    let mut lines = tsv.lines();
    let header: Vec<&str> = lines.next().unwrap().split('\t').collect();
    let mut checked = 0;
    for line in lines {
        let cols: Vec<&str> = line.split('\t').collect();
        let n: usize = cols[0].parse().unwrap();
        let frame = frames[n - 1];
        let got = fields_of(frame);
        for (name, want) in header.iter().zip(&cols).skip(1) {
            if *name == "frame.len" {
                assert_eq!(frame.len() as u64, parse_num(want), "frame {n} {name}");
                continue;
            }
            if want.is_empty() {
                assert!(
                    !got.contains_key(name),
                    "frame {n}: {name} should be absent"
                );
            } else {
                assert_eq!(got.get(name), Some(&parse_num(want)), "frame {n}: {name}");
                checked += 1;
            }
        }
    }
    assert!(checked >= 60, "only {checked} values compared");
}

#[test]
fn rxe_capture_icrcs_all_verify() {
    let Some(bytes) = capture_bytes("rxe-write-read.pcap") else {
        return;
    };
    for (i, frame) in pcap_frames(&bytes).into_iter().enumerate() {
        let p = decode(frame, LinkLayer::Ethernet, &DecodeConfig::default());
        assert_eq!(p.icrc(), IcrcStatus::Ok, "frame {}: {}", i + 1, p.summary());
        assert_eq!(p.stop(), None, "frame {}", i + 1);
    }
}

#[test]
fn decode_headers_is_decode_without_the_icrc() {
    let Some(bytes) = capture_bytes("rxe-write-read.pcap") else {
        return;
    };
    for (i, frame) in pcap_frames(&bytes).into_iter().enumerate() {
        let cfg = DecodeConfig::default();
        let (full, headers) = (
            decode(frame, LinkLayer::Ethernet, &cfg),
            decode_headers(frame, LinkLayer::Ethernet, &cfg),
        );
        assert_eq!(headers.icrc(), IcrcStatus::Unchecked, "frame {}", i + 1);
        assert_eq!(full.icrc(), IcrcStatus::Ok, "frame {}", i + 1);
        assert_eq!(
            headers.summary().to_string(),
            full.summary().to_string().replace(" ICRC ok", "")
        );
        assert_eq!(headers.ext(), full.ext(), "frame {}", i + 1);
        assert_eq!(headers.payload_len(), full.payload_len());
        assert_eq!(headers.stop(), full.stop());
    }
}

#[test]
fn read_response_span_reuses_psns_and_carries_payload() {
    let Some(bytes) = capture_bytes("rxe-write-read.pcap") else {
        return;
    };
    let frames = pcap_frames(&bytes);
    let p = decode(frames[6], LinkLayer::Ethernet, &DecodeConfig::default());
    assert_eq!(p.payload_len(), 1024);
    assert_eq!(p.payload().len(), 1024);
    let write = decode(frames[3], LinkLayer::Ethernet, &DecodeConfig::default());
    assert_eq!(write.payload_len(), 18);
    assert_eq!(write.bth().unwrap().pad_count(), 2);
}

#[test]
fn cx4lx_cnp_is_recognised_with_valid_icrc() {
    let Some(bytes) = capture_bytes("cx4lx-cnp.pcap") else {
        return;
    };
    let frames = pcap_frames(&bytes);
    assert_eq!(frames.len(), 1);
    let p = decode(frames[0], LinkLayer::Ethernet, &DecodeConfig::default());
    let bth = p.bth().unwrap();
    assert_eq!(bth.opcode().kind(), OpcodeKind::Cnp);
    assert!(bth.becn());
    assert_eq!(bth.dest_qp(), 0x118);
    assert_eq!(bth.psn(), 0);
    assert_eq!(p.ext().cnp().unwrap().reserved_nonzero(), 0);
    assert_eq!(p.icrc(), IcrcStatus::Ok);
    assert_eq!(p.stored_icrc_be(), Some(0x82fd002a));
    assert_eq!(p.udp().unwrap().src_port(), 0);
    assert_eq!(p.ip().unwrap().dscp(), 48);
    assert_eq!(p.ip().unwrap().ecn(), 0b10);
    let s = p.summary().to_string();
    assert!(s.contains("CNP QP=0x000118") && s.contains("BECN"), "{s}");
}
