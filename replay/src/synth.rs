//! Synthetic captures for benchmarks: the same file for every benchmark
//! that compares against indexing (replay's index, data's export).

use std::io::{BufWriter, Write};
use std::path::Path;

use rocescope_decoders::{Opcode, PacketBuilder, Syndrome};

/// Header-only RC WRITE traffic on 8 QPs with its ACKs, as the card's
/// sniffer cuts it (70-byte WRITE First, 54-byte Middle/Last, 58-byte ACK).
pub fn write_header_only_pcap(path: &Path, n: u64) -> std::io::Result<()> {
    let mut out = BufWriter::with_capacity(1 << 20, std::fs::File::create(path)?);
    for v in [0xa1b2_3c4du32, 0x0004_0002, 0, 0, 65535, 1] {
        out.write_all(&v.to_le_bytes())?;
    }
    let mut buf = Vec::new();
    let mut psn = [0u32; 8];
    let mut t_ns = 1_764_400_000_000_000_000u64;
    for i in 0..n {
        let qp = (i % 8) as usize;
        let (b, payload) = if i % 2 == 1 {
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
            let opcode = [
                Opcode::RC_WRITE_FIRST,
                Opcode::RC_WRITE_MIDDLE,
                Opcode::RC_WRITE_MIDDLE,
                Opcode::RC_WRITE_LAST,
            ][(psn[qp] % 4) as usize];
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
        for v in [
            (t_ns / 1_000_000_000) as u32,
            (t_ns % 1_000_000_000) as u32,
            buf.len() as u32,
            origlen,
        ] {
            out.write_all(&v.to_le_bytes())?;
        }
        out.write_all(&buf)?;
    }
    out.flush()
}
