//! Writes a synthetic header-only RoCE capture for benchmarks: N frames of
//! RC WRITE traffic on 8 QPs (70-byte WRITE First/Only with RETH, 54-byte
//! Middle/Last, 58-byte ACKs), as the card's sniffer cuts them, with
//! origlen telling the wire length.
//!
//! `cargo run --release -p rocescope --example gen_capture -- 2000000 /tmp/hdr.pcap`
#![allow(clippy::unwrap_used)]

use std::io::{BufWriter, Write};

use rocescope_decoders::{Opcode, PacketBuilder, Syndrome};

fn main() {
    let mut args = std::env::args().skip(1);
    let n: u64 = args
        .next()
        .and_then(|a| a.parse().ok())
        .unwrap_or(2_000_000);
    let path = args
        .next()
        .unwrap_or_else(|| "/tmp/rocescope-header-only.pcap".into());
    let mut out = BufWriter::with_capacity(1 << 20, std::fs::File::create(&path).unwrap());
    out.write_all(&0xa1b2_3c4du32.to_le_bytes()).unwrap();
    out.write_all(&2u16.to_le_bytes()).unwrap();
    out.write_all(&4u16.to_le_bytes()).unwrap();
    out.write_all(&[0; 8]).unwrap();
    out.write_all(&65535u32.to_le_bytes()).unwrap();
    out.write_all(&1u32.to_le_bytes()).unwrap();

    let mut buf = Vec::new();
    let mut psn = [0u32; 8];
    let mut t_ns = 1_764_400_000_000_000_000u64;
    for i in 0..n {
        let qp = (i % 8) as usize;
        let ack = i % 2 == 1;
        let (b, payload) = if ack {
            let mut b = PacketBuilder::rocev2_ipv4(
                [10, 0, 0, 2],
                [10, 0, 0, 1],
                Opcode::RC_ACK,
                0x100 + qp as u32,
                psn[qp],
            );
            b.ext.aeth.syndrome = Syndrome::Ack { credits: 31 }.to_u8();
            (b, 0)
        } else {
            psn[qp] = (psn[qp] + 1) & 0xFF_FFFF;
            let opcode = match psn[qp] % 4 {
                0 => Opcode::RC_WRITE_FIRST,
                1 | 2 => Opcode::RC_WRITE_MIDDLE,
                _ => Opcode::RC_WRITE_LAST,
            };
            let mut b = PacketBuilder::rocev2_ipv4(
                [10, 0, 0, 1],
                [10, 0, 0, 2],
                opcode,
                0x200 + qp as u32,
                psn[qp],
            );
            b.ext.reth.dma_len = 16384;
            (b, 4096)
        };
        b.build_headers_into(payload, &mut buf);
        let origlen = (b.header_len() + payload + 4) as u32;
        t_ns += 167;
        out.write_all(&((t_ns / 1_000_000_000) as u32).to_le_bytes())
            .unwrap();
        out.write_all(&((t_ns % 1_000_000_000) as u32).to_le_bytes())
            .unwrap();
        out.write_all(&(buf.len() as u32).to_le_bytes()).unwrap();
        out.write_all(&origlen.to_le_bytes()).unwrap();
        out.write_all(&buf).unwrap();
    }
    out.flush().unwrap();
    eprintln!("wrote {n} header-only frames to {path}");
}
