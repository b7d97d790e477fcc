//! Frames built by rocescope's builders, read back by real tshark: every
//! field tshark knows must hold the value rocescope decodes (and built).
//! Skipped where tshark is not installed, unless ROCESCOPE_REQUIRE_TSHARK is
//! set (as in .ci/run), where its absence fails the test.
#![allow(clippy::unwrap_used)]

use rocescope_decoders::*;

mod support;
use support::tshark_available;

/// The fields compared, by tshark's names.
fn fields() -> Vec<&'static str> {
    support::fields_around(
        &[
            "frame.number",
            "infiniband.bth.opcode",
            "infiniband.bth.se",
            "infiniband.bth.m",
            "infiniband.bth.padcnt",
            "infiniband.bth.tver",
        ],
        &[
            "infiniband.atomiceth.swapdt",
            "infiniband.atomiceth.cmpdt",
            "infiniband.atomicacketh.origremdt",
            "infiniband.immdt",
            "infiniband.ieth",
            "infiniband.rdeth.eecnxt",
            "infiniband.invariant.crc",
            "udp.srcport",
            "ip.dsfield.ecn",
            "ip.src",
            "infiniband.grh.flowlabel",
            "infiniband.grh.paylen",
            "infiniband.grh.hoplmt",
        ],
    )
}

/// Opcodes tshark 4.0 decodes with their extended headers right. It predates
/// FLUSH/ATOMIC WRITE, labels CNP 0x81 "Unknown", has no XRC, and reads the
/// RD RDETH 8 bytes too late (BTH+8 instead of BTH+0; IBTA order is
/// BTH, RDETH, DETH). Those are compared on the BTH alone.
fn tshark_knows_ext(op: u8) -> bool {
    !matches!(op, 0x1C | 0x1D | 0x81) && !matches!(op & 0xE0, 0x40 | 0xA0)
}

fn builders() -> Vec<PacketBuilder> {
    let mut out = Vec::new();
    let mut rng = rocescope_testkit::Rng(0x1234_5678_9abc_def0u64);
    let mut rnd = move || rng.next_u64();
    for op in 0..=255u8 {
        if matches!(Opcode(op).kind(), OpcodeKind::Unknown(_)) {
            continue;
        }
        for flavour in 0..3 {
            let mut b = PacketBuilder::rocev2_ipv4(
                [10, 0, 0, 1],
                [10, 0, 0, 2],
                Opcode(op),
                rnd() as u32 & 0xFF_FFFF,
                rnd() as u32 & 0xFF_FFFF,
            );
            b.bth.solicited = rnd() & 1 == 1;
            b.bth.mig_req = rnd() & 1 == 1;
            b.bth.pkey = rnd() as u16;
            b.udp_src_port = rnd() as u16;
            b.ext.reth = Reth {
                va: rnd(),
                rkey: rnd() as u32,
                dma_len: rnd() as u32,
            };
            b.ext.aeth = Aeth {
                syndrome: [0x1F, 0x60, 0x61, 0x2E][flavour],
                msn: rnd() as u32 & 0xFF_FFFF,
            };
            b.ext.deth = Deth {
                qkey: rnd() as u32,
                src_qp: rnd() as u32 & 0xFF_FFFF,
            };
            b.ext.atomic_eth = AtomicEth {
                va: rnd(),
                rkey: rnd() as u32,
                swap_add: rnd(),
                compare: rnd(),
            };
            b.ext.atomic_ack_orig = rnd();
            b.ext.immdt = rnd() as u32;
            b.ext.ieth_rkey = rnd() as u32;
            b.ext.rdeth_ee_context = rnd() as u32 & 0xFF_FFFF;
            match flavour {
                1 => {
                    b.vlans = vec![42];
                    b.net = NetHeader::Ipv6 {
                        src: [0xfd; 16],
                        dst: [0xfe; 16],
                        traffic_class: 0x02,
                        flow_label: 0x12345,
                        hop_limit: 64,
                    };
                }
                2 => {
                    b.version = RoceVersion::V1;
                    b.net = NetHeader::Ipv6 {
                        src: [0xfe; 16],
                        dst: [0xfd; 16],
                        traffic_class: 0,
                        flow_label: 0x54321,
                        hop_limit: 1,
                    };
                }
                _ => {}
            }
            out.push(b);
        }
    }
    out
}

#[test]
fn tshark_reads_every_builder_frame_with_our_values() {
    if !tshark_available() {
        return;
    }
    let builders = builders();
    let frames: Vec<Vec<u8>> = builders
        .iter()
        .enumerate()
        .map(|(i, b)| {
            let payload: Vec<u8> = if Opcode(b.bth.opcode).is_cnp() {
                vec![]
            } else {
                (0..(i % 23) as u8).collect()
            };
            b.build(&payload)
        })
        .collect();
    let folder = rocescope_testkit::temp_dir("interop");
    let dir = folder.path().to_path_buf();
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("built.pcap");
    let secs = frames
        .iter()
        .enumerate()
        .map(|(i, f)| (i as u64 * 1_000_000, f));
    std::fs::write(&path, rocescope_testkit::pcap_bytes(1, secs)).unwrap();

    let fields = fields();
    let rows = support::tshark_fields(&path, &[], &fields);
    assert_eq!(rows.len(), frames.len(), "tshark frame count");

    let mut compared = 0;
    for (cols, (frame, b)) in rows.iter().zip(frames.iter().zip(&builders)) {
        let line = cols.join("\t");
        let p = decode(frame, LinkLayer::Ethernet, &DecodeConfig::default());
        assert_eq!(p.icrc(), IcrcStatus::Ok);
        let ours = support::our_fields(&p);
        let op = b.bth.opcode;
        for (name, theirs) in fields.iter().zip(cols).skip(1) {
            if theirs.is_empty() || *name == "ip.src" {
                continue;
            }
            let ext_field = !name.starts_with("infiniband.bth")
                && !name.starts_with("infiniband.grh")
                && name.starts_with("infiniband.")
                && *name != "infiniband.invariant.crc";
            if ext_field && !tshark_knows_ext(op) {
                continue;
            }
            // FT_BYTES fields print as bare hex.
            let want = if matches!(*name, "infiniband.immdt" | "infiniband.ieth") {
                u64::from_str_radix(theirs, 16).unwrap()
            } else {
                rocescope_testkit::tshark_number(theirs).unwrap()
            };
            assert_eq!(
                ours.get(name).copied(),
                Some(want),
                "opcode 0x{op:02x} field {name}: tshark says {theirs}; line {line}"
            );
            compared += 1;
        }
        // Fields tshark shows must be the ones we decode, and vice versa for
        // the extended headers of opcodes it knows.
        if tshark_knows_ext(op) {
            for name in [
                "infiniband.reth.va",
                "infiniband.aeth.msn",
                "infiniband.deth.srcqp",
                "infiniband.atomiceth.swapdt",
                "infiniband.atomicacketh.origremdt",
                "infiniband.rdeth.eecnxt",
            ] {
                let i = fields.iter().position(|f| *f == name).unwrap();
                assert_eq!(
                    !cols[i].is_empty(),
                    ours.contains_key(name),
                    "opcode 0x{op:02x}: {name} presence differs: {line}"
                );
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(compared > 2000, "only {compared} values compared");
}
