//! Fast header writer for the sniffer: the RoCEv2/IPv4 headers the
//! simulator's packets carry, written straight into a small array with the
//! per-packet fields (PSN, opcode, lengths, pad count, ECN, BECN, RETH, AETH)
//! patched in, byte for byte what `rocescope_decoders::PacketBuilder` writes
//! for the same packet (checked by the test below). Opcodes with extended
//! headers other than RETH, AETH and CNP are left to the builder.

use rocescope_decoders::{Aeth, Headers, Opcode, PacketBuilder, Reth, ext_len};

use crate::sniffer::CutFlags;

/// Longest header this writer produces: Ethernet + IPv4 + UDP + BTH + 16.
pub(crate) const MAX_HDR: usize = 14 + 20 + 8 + 12 + 16;

/// What the simulator needs to know about an opcode, looked up once.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct OpInfo {
    /// Bytes of extended headers.
    pub ext: u8,
    pub reth: bool,
    pub aeth: bool,
    pub cnp: bool,
    /// The BTH AckReq bit as the builder sets it.
    pub ack_req: bool,
    /// Only RETH / AETH / CNP extended headers: [`write_headers`] applies.
    pub simple: bool,
    /// The sniffer's cut flags.
    pub cut: CutFlags,
}

/// Per-opcode facts for all 256 opcode values.
pub(crate) fn op_table() -> Box<[OpInfo; 256]> {
    let mut t = Box::new([OpInfo::default(); 256]);
    for (op, info) in t.iter_mut().enumerate() {
        let op = op as u8;
        let h = Opcode(op).headers();
        let b = PacketBuilder::rocev2_ipv4([0; 4], [0; 4], Opcode(op), 0, 0);
        let known = Headers(Headers::RETH.0 | Headers::AETH.0 | Headers::CNP.0);
        *info = OpInfo {
            ext: ext_len(h) as u8,
            reth: h.contains(Headers::RETH),
            aeth: h.contains(Headers::AETH),
            cnp: h.contains(Headers::CNP),
            ack_req: b.bth.ack_req && op != Opcode::CNP.0,
            simple: h.0 & !known.0 == 0,
            cut: CutFlags::of_opcode(op),
        };
    }
    t
}

/// The per-packet fields of a header.
#[derive(Debug, Clone, Copy)]
pub(crate) struct HdrFields {
    pub src_ip: [u8; 4],
    pub dst_ip: [u8; 4],
    pub udp_src_port: u16,
    pub opcode: u8,
    pub dest_qp: u32,
    pub psn: u32,
    pub ecn: u8,
    pub becn: bool,
    pub payload_len: usize,
    pub reth: Reth,
    pub aeth: Aeth,
}

/// Writes the headers of a packet (lengths of the whole packet) into `out`;
/// returns their length. `info` must be `simple` and belong to `f.opcode`.
#[inline(always)]
pub(crate) fn write_headers(f: &HdrFields, info: &OpInfo, out: &mut [u8; MAX_HDR]) -> usize {
    let (s, d) = (f.src_ip, f.dst_ip);
    out[..14].copy_from_slice(&[
        0x02, 0, 0, 0, d[2], d[3], 0x02, 0, 0, 0, s[2], s[3], 0x08, 0x00,
    ]);
    let pad = (4 - f.payload_len % 4) % 4;
    let transport_len = 12 + usize::from(info.ext) + f.payload_len + pad + 4;
    let dscp: u8 = if f.opcode == Opcode::CNP.0 { 48 } else { 0 };
    let tos = (dscp << 2) | (f.ecn & 3);
    let total = ((20 + 8 + transport_len) as u16).to_be_bytes();
    // The header checksum from its 16-bit words (the constant ones summed
    // here: version/IHL, flags, TTL/protocol); ten words cannot overflow.
    let word = |a: u8, b: u8| u32::from(u16::from_be_bytes([a, b]));
    let mut sum = word(0x45, tos) + word(total[0], total[1]) + 0x4000 + word(64, 17);
    sum += word(s[0], s[1]) + word(s[2], s[3]) + word(d[0], d[1]) + word(d[2], d[3]);
    sum = (sum & 0xFFFF) + (sum >> 16);
    sum = (sum & 0xFFFF) + (sum >> 16);
    let csum = (!(sum as u16)).to_be_bytes();
    out[14..34].copy_from_slice(&[
        0x45, tos, total[0], total[1], 0, 0, 0x40, 0, 64, 17, csum[0], csum[1], s[0], s[1], s[2],
        s[3], d[0], d[1], d[2], d[3],
    ]);
    let sp = f.udp_src_port.to_be_bytes();
    let ul = ((8 + transport_len) as u16).to_be_bytes();
    out[34..42].copy_from_slice(&[sp[0], sp[1], 0x12, 0xB7, ul[0], ul[1], 0, 0]);
    let q = (f.dest_qp & 0xFF_FFFF).to_be_bytes();
    let p = (f.psn & 0xFF_FFFF).to_be_bytes();
    out[42..54].copy_from_slice(&[
        f.opcode,
        0x40 | ((pad as u8 & 3) << 4),
        0xFF,
        0xFF,
        u8::from(f.becn) << 6,
        q[1],
        q[2],
        q[3],
        u8::from(info.ack_req) << 7,
        p[1],
        p[2],
        p[3],
    ]);
    let mut n = 54;
    if info.reth {
        out[n..n + 8].copy_from_slice(&f.reth.va.to_be_bytes());
        out[n + 8..n + 12].copy_from_slice(&f.reth.rkey.to_be_bytes());
        out[n + 12..n + 16].copy_from_slice(&f.reth.dma_len.to_be_bytes());
        n += 16;
    }
    if info.aeth {
        let m = f.aeth.msn.to_be_bytes();
        out[n..n + 4].copy_from_slice(&[f.aeth.syndrome, m[1], m[2], m[3]]);
        n += 4;
    }
    if info.cnp {
        out[n..n + 16].fill(0);
        n += 16;
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;
    use rocescope_decoders::NetHeader;

    #[test]
    fn headers_match_the_packet_builder_byte_for_byte() {
        let table = op_table();
        let mut s = 7u64;
        let mut r = || crate::rng::splitmix64(&mut s);
        let mut checked = 0;
        for op in 0..=255u8 {
            let info = table[usize::from(op)];
            if !info.simple {
                continue;
            }
            for _ in 0..40 {
                let f = HdrFields {
                    src_ip: [10, 0, (r() % 3) as u8, r() as u8],
                    dst_ip: [10, 0, (r() % 3) as u8, r() as u8],
                    udp_src_port: r() as u16,
                    opcode: op,
                    dest_qp: r() as u32,
                    psn: r() as u32,
                    ecn: (r() % 4) as u8,
                    becn: r() % 2 == 0,
                    payload_len: match r() % 4 {
                        0 => 0,
                        1 => 4096,
                        _ => (r() % 70_000) as usize,
                    },
                    reth: Reth {
                        va: r(),
                        rkey: r() as u32,
                        dma_len: r() as u32,
                    },
                    aeth: Aeth {
                        syndrome: r() as u8,
                        msn: r() as u32 & 0xFF_FFFF,
                    },
                };
                let mut b =
                    PacketBuilder::rocev2_ipv4(f.src_ip, f.dst_ip, Opcode(op), f.dest_qp, f.psn);
                if let NetHeader::Ipv4 { ecn, dscp, .. } = &mut b.net {
                    *ecn = f.ecn;
                    if op == Opcode::CNP.0 {
                        *dscp = 48;
                    }
                }
                b.udp_src_port = f.udp_src_port;
                b.bth.mig_req = true;
                b.bth.becn = f.becn;
                b.ext.reth = f.reth;
                b.ext.aeth = f.aeth;
                if op == Opcode::CNP.0 {
                    b.bth.ack_req = false;
                }
                let mut want = Vec::new();
                b.build_headers_into(f.payload_len, &mut want);
                let mut got = [0u8; MAX_HDR];
                let n = write_headers(&f, &info, &mut got);
                assert_eq!(n, b.header_len(), "opcode {op:#x}");
                assert_eq!(&got[..n], &want[..], "opcode {op:#x} {f:?}");
                checked += 1;
            }
        }
        assert!(checked > 40 * 10, "{checked}");
        // The opcodes the simulator sends are all covered.
        for op in [
            0x06u8, 0x07, 0x08, 0x0A, 0x0C, 0x0D, 0x0E, 0x0F, 0x10, 0x11, 0x81,
        ] {
            assert!(table[usize::from(op)].simple, "{op:#x}");
        }
    }
}
