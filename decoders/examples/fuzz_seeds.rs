//! Writes the fuzz seed corpus (decoders/fuzz/corpus/decode): one frame per
//! opcode family and layout, plus header-only and cut variants.
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;

use rocescope_decoders::*;

fn main() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/decode");
    std::fs::create_dir_all(&dir).unwrap();
    let mut n = 0;
    let mut save = |name: &str, bytes: &[u8]| {
        std::fs::write(dir.join(name), bytes).unwrap();
        n += 1;
    };
    for opc in [
        0x04u8, 0x06, 0x07, 0x0A, 0x0B, 0x0C, 0x0D, 0x11, 0x12, 0x13, 0x17, 0x1C, 0x2A, 0x4A, 0x51,
        0x64, 0x65, 0x81, 0xAA, 0xB1, 0xC3,
    ] {
        let mut b =
            PacketBuilder::rocev2_ipv4([10, 0, 0, 1], [10, 0, 0, 2], Opcode(opc), 0x12, 811);
        b.ext.reth.dma_len = 4096;
        b.ext.aeth.syndrome = if opc == 0x11 { 0x60 } else { 0x1F };
        let payload = if Opcode(opc).is_cnp() {
            vec![]
        } else {
            vec![0xAB; 13]
        };
        save(&format!("v4-{opc:02x}"), &b.build(&payload));
        let mut hdr = Vec::new();
        b.build_headers_into(4096, &mut hdr);
        save(&format!("v4-{opc:02x}-header-only"), &hdr);
        let full = b.build(&payload);
        save(&format!("v4-{opc:02x}-cut"), &full[..full.len() / 2]);
    }
    let mut b =
        PacketBuilder::rocev2_ipv4([10, 0, 0, 1], [10, 0, 0, 2], Opcode::RC_WRITE_ONLY, 1, 2);
    b.vlans = vec![100, 200];
    save("qinq-write", &b.build(&[1, 2, 3]));
    b.vlans.clear();
    b.net = NetHeader::Ipv6 {
        src: [0xfe; 16],
        dst: [0x80; 16],
        traffic_class: 2,
        flow_label: 77,
        hop_limit: 64,
    };
    save("v6-write", &b.build(&[1, 2, 3]));
    b.version = RoceVersion::V1;
    save("v1-write", &b.build(&[1, 2, 3]));
    println!("wrote {n} seeds to {}", dir.display());
}
