//! Synthetic captures for benchmarks: the same file for every benchmark
//! that compares against indexing (replay's index, data's export).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use rocescope_decoders::{Opcode, PacketBuilder, Syndrome};

/// A nanosecond pcap file of built frames, headers only (each record's
/// original length counts the payload and ICRC it leaves out).
#[derive(Debug)]
pub struct SynthPcap {
    out: BufWriter<File>,
    buf: Vec<u8>,
}

impl SynthPcap {
    pub fn create(path: &Path) -> std::io::Result<SynthPcap> {
        let mut out = BufWriter::with_capacity(1 << 20, File::create(path)?);
        for v in [0xa1b2_3c4du32, 0x0004_0002, 0, 0, 65535, 1] {
            out.write_all(&v.to_le_bytes())?;
        }
        Ok(SynthPcap {
            out,
            buf: Vec::new(),
        })
    }

    /// One frame at `t_ns`: `b`'s headers, for a packet of `payload` bytes.
    pub fn write(&mut self, t_ns: u64, b: &PacketBuilder, payload: usize) -> std::io::Result<()> {
        b.build_headers_into(payload, &mut self.buf);
        let origlen = (b.header_len() + payload + 4) as u32;
        for v in [
            (t_ns / 1_000_000_000) as u32,
            (t_ns % 1_000_000_000) as u32,
            self.buf.len() as u32,
            origlen,
        ] {
            self.out.write_all(&v.to_le_bytes())?;
        }
        self.out.write_all(&self.buf)
    }

    pub fn finish(mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

/// Header-only RC WRITE traffic on 8 QPs with its ACKs, as the card's
/// sniffer cuts it (70-byte WRITE First, 54-byte Middle/Last, 58-byte ACK).
pub fn write_header_only_pcap(path: &Path, n: u64) -> std::io::Result<()> {
    let mut out = SynthPcap::create(path)?;
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
        t_ns += 167;
        out.write(t_ns, &b, payload)?;
    }
    out.finish()
}
