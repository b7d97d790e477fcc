//! Synthetic captures for benchmarks and tests: the same file for every benchmark
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
    header_only_traffic(n, None, |t_ns, b, payload| out.write(t_ns, b, payload))?;
    out.finish()
}

/// [`write_header_only_pcap`]'s traffic where every `resend_every`-th
/// frame that would be a WRITE goes back two PSNs instead (a resend the
/// RC analysis finds): rows with verdicts all through a large capture,
/// for tests that compare what every row says.
pub fn write_resending_header_only_pcap(
    path: &Path,
    n: u64,
    resend_every: u64,
) -> std::io::Result<()> {
    let mut out = SynthPcap::create(path)?;
    header_only_traffic(n, Some(resend_every), |t_ns, b, payload| {
        out.write(t_ns, b, payload)
    })?;
    out.finish()
}

/// The frames of [`write_header_only_pcap`]'s capture, as (ts_ns, bytes),
/// made in memory: the same bytes a reader of that file returns.
pub fn header_only_frames(n: u64) -> Vec<(u64, Vec<u8>)> {
    let mut frames = Vec::with_capacity(n as usize);
    let made: std::io::Result<()> = header_only_traffic(n, None, |t_ns, b, payload| {
        let mut data = Vec::new();
        b.build_headers_into(payload, &mut data);
        frames.push((t_ns, data));
        Ok(())
    });
    debug_assert!(made.is_ok(), "building in memory does not fail");
    frames
}

/// `n` RC WRITE FIRSTs from 10.0.0.1 to DestQP 0x12 of 10.0.0.2, PSN `i`,
/// RETH VA `0x1000 * (i + 1)`, 64 payload bytes, to UDP port `udp_port`
/// (another RoCE port: `--roce-port`), as (ts_ns, frame) 1 µs apart.
pub fn writes_to_port(udp_port: u16, n: u32) -> Vec<(u64, Vec<u8>)> {
    (0..n)
        .map(|i| {
            let mut b = PacketBuilder::rocev2_ipv4(
                [10, 0, 0, 1],
                [10, 0, 0, 2],
                Opcode::RC_WRITE_FIRST,
                0x12,
                i,
            );
            b.udp_dst_port = udp_port;
            b.ext.reth = rocescope_decoders::Reth {
                va: 0x1000 * u64::from(i + 1),
                rkey: 7,
                dma_len: 8192,
            };
            (u64::from(i) * 1000, b.build(&[0; 64]))
        })
        .collect()
}

fn header_only_traffic(
    n: u64,
    resend_every: Option<u64>,
    mut emit: impl FnMut(u64, &PacketBuilder, usize) -> std::io::Result<()>,
) -> std::io::Result<()> {
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
            if resend_every.is_some_and(|k| i % k == 0) {
                psn[qp] = psn[qp].wrapping_sub(2) & 0xFF_FFFF;
            }
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
        emit(t_ns, &b, payload)?;
    }
    Ok(())
}

/// A second header-only capture, made unlike [`write_header_only_pcap`]'s:
/// pcapng (one interface per direction), 24 QPs, RC READs (a 16 KiB READ
/// request answered by four READ responses) beside WRITE Only with their
/// ACKs, uneven gaps and an ECN-CE mark now and then. Seven frames a
/// transaction: request, four responses, WRITE, ACK.
pub fn write_read_mix_pcapng(path: &Path, n: u64) -> std::io::Result<()> {
    use crate::record::Direction;
    const QPS: usize = 24;
    const SEGMENT: usize = 4096;
    let file = File::create(path)?;
    let mut out = crate::pcapng_writer::PcapngWriter::with_capacity(1 << 20, file)?;
    let mut psn = [0x00FF_FFF0u32; QPS];
    let mut t_ns = 1_764_500_000_000_000_000u64;
    let mut buf = Vec::new();
    let (a, b) = ([192, 168, 7, 1], [192, 168, 7, 2]);
    let mut i = 0u64;
    'out: loop {
        for (qp, next_psn) in psn.iter_mut().enumerate() {
            let p = *next_psn;
            let at = |k: u32| (p + k) & 0xFF_FFFF;
            let mut frames: [(PacketBuilder, usize, Direction); 7] = [
                (read_request(a, b, qp, p), 0, Direction::Tx),
                (
                    response(b, a, qp, Opcode::RC_READ_RESPONSE_FIRST, p),
                    SEGMENT,
                    Direction::Rx,
                ),
                (
                    response(b, a, qp, Opcode::RC_READ_RESPONSE_MIDDLE, at(1)),
                    SEGMENT,
                    Direction::Rx,
                ),
                (
                    response(b, a, qp, Opcode::RC_READ_RESPONSE_MIDDLE, at(2)),
                    SEGMENT,
                    Direction::Rx,
                ),
                (
                    response(b, a, qp, Opcode::RC_READ_RESPONSE_LAST, at(3)),
                    SEGMENT,
                    Direction::Rx,
                ),
                (
                    PacketBuilder::rocev2_ipv4(
                        a,
                        b,
                        Opcode::RC_WRITE_ONLY,
                        0x4000 + qp as u32,
                        at(4),
                    ),
                    SEGMENT,
                    Direction::Tx,
                ),
                (response(b, a, qp, Opcode::RC_ACK, at(4)), 0, Direction::Rx),
            ];
            frames[5].0.ext.reth.dma_len = SEGMENT as u32;
            frames[6].0.ext.aeth.syndrome = Syndrome::Ack { credits: 20 }.to_u8();
            for (k, (fb, payload, dir)) in frames.iter_mut().enumerate() {
                if i == n {
                    break 'out;
                }
                if let rocescope_decoders::NetHeader::Ipv4 { ecn, .. } = &mut fb.net
                    && i.is_multiple_of(97)
                {
                    *ecn = 3;
                }
                fb.build_headers_into(*payload, &mut buf);
                let origlen = (fb.header_len() + *payload + 4) as u32;
                t_ns += 90 + (i * 37 + k as u64 * 11) % 120;
                out.write_frame(t_ns, 0, Some(*dir), origlen, &buf)?;
                i += 1;
            }
            *next_psn = at(5);
        }
    }
    out.finish()?;
    Ok(())
}

fn read_request(src: [u8; 4], dst: [u8; 4], qp: usize, psn: u32) -> PacketBuilder {
    let mut b =
        PacketBuilder::rocev2_ipv4(src, dst, Opcode::RC_READ_REQUEST, 0x4000 + qp as u32, psn);
    b.ext.reth.dma_len = 4 * 4096;
    b
}

/// A frame of the responder's, to the requester's QP.
fn response(src: [u8; 4], dst: [u8; 4], qp: usize, op: Opcode, psn: u32) -> PacketBuilder {
    let mut b = PacketBuilder::rocev2_ipv4(src, dst, op, 0x5000 + qp as u32, psn);
    b.ext.aeth.msn = psn & 0xFFFF;
    b
}
