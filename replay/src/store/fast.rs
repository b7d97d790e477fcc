//! The indexer's fast path for the commonest frame of a header-only
//! capture: Ethernet II, IPv4 without options, UDP to a RoCE port, a BTH
//! with no extended header, a RETH or an AETH, cut before the ICRC.
//!
//! For such a frame the generic decoder builds a whole `Packet` (every
//! layer's offset, the extended-header table, the stop error) and the
//! `Observation` then looks each header up again; here the few fields the
//! row and the analysis read are taken in one pass. Anything else (VLAN
//! tags, IP options or fragments, IPv6, other opcodes, a frame whose ICRC
//! was captured, any length the generic decoder would call invalid)
//! returns false and takes the generic path, so the result is the same
//! `PacketInfo` bit for bit (checked against `decode_frame` in the tests).

use rocescope_decoders::{
    AethSlice, BthSlice, DecodeConfig, Headers, Opcode, OpcodeKind, RethSlice, Syndrome,
};

use super::decoded::PacketInfo;
use super::ingest::IngestFrame;
use super::row::{Flags, Row};

const ETH_LEN: usize = 14;
const IPV4_LEN: usize = 20;
const UDP_LEN: usize = 8;
const BTH_AT: usize = ETH_LEN + IPV4_LEN + UDP_LEN;
const BTH_LEN: usize = 12;
const ICRC_LEN: usize = 4;
/// pcap LINKTYPE_ETHERNET.
const LINKTYPE_ETHERNET: u32 = 1;

/// The flags an opcode alone gives a RoCE frame: CNP, and RESPONSE for
/// READ responses and ACKs.
static OPCODE_FLAGS: [u16; 256] = {
    let mut t = [0u16; 256];
    let mut i = 0;
    while i < 256 {
        let op = Opcode(i as u8);
        if matches!(op.kind(), OpcodeKind::Cnp) {
            t[i] |= Flags::CNP.0;
        }
        if let Some(o) = op.operation()
            && o.is_response()
        {
            t[i] |= Flags::RESPONSE.0;
        }
        i += 1;
    }
    t
};

/// `f` if `on`, else no flag: a mask, not a branch.
#[inline(always)]
fn flag_if(f: Flags, on: bool) -> u16 {
    f.0 & 0u16.wrapping_sub(u16::from(on))
}

#[inline(always)]
fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

/// Writes the frame's `PacketInfo` into `out` and returns true when the
/// frame has the fast path's shape; else returns false and leaves `out` as
/// it was.
///
/// Into a slot, not returned: built in a caller's stack frame and copied
/// into the batch, the 128-byte value was read back (by the copy and the
/// counters) in wider loads than the stores that wrote it, which the CPU
/// cannot forward, and the stalls cost a tenth of the indexing time
/// (BENCHMARKS.md, "Why the indexer is built so": the decode slot).
#[inline(always)]
pub(crate) fn decode_header_only(
    cfg: &DecodeConfig,
    f: &IngestFrame<'_>,
    out: &mut PacketInfo,
) -> bool {
    shape(cfg, f, out).is_some()
}

#[inline(always)]
fn shape(cfg: &DecodeConfig, f: &IngestFrame<'_>, out: &mut PacketInfo) -> Option<()> {
    let d = f.data;
    if f.linktype != LINKTYPE_ETHERNET || d.len() < BTH_AT + BTH_LEN {
        return None;
    }
    // Ethernet II carrying IPv4 with a 20-byte header, UDP, not a fragment.
    let ip = &d[ETH_LEN..ETH_LEN + IPV4_LEN];
    if be16(d, 12) != 0x0800 || ip[0] != 0x45 || ip[9] != 17 || be16(ip, 6) & 0x3FFF != 0 {
        return None;
    }
    let total_len = usize::from(be16(ip, 2));
    let udp = &d[ETH_LEN + IPV4_LEN..BTH_AT];
    if !cfg.is_roce_port(be16(udp, 2)) {
        return None;
    }
    let udp_len = usize::from(be16(udp, 4));
    // The generic decoder's length checks; their errors take its path.
    if total_len < IPV4_LEN || udp_len < UDP_LEN || udp_len > total_len - IPV4_LEN {
        return None;
    }
    let end = ETH_LEN + IPV4_LEN + udp_len;
    if end < BTH_AT + BTH_LEN + ICRC_LEN || d.len() >= end {
        // Too short for a BTH (an error), or the ICRC was captured (verified
        // by the generic path).
        return None;
    }
    let icrc_offset = end - ICRC_LEN;
    let bth = BthSlice::from_slice(d, BTH_AT).ok()?;
    let opcode = bth.opcode();
    let hdrs = opcode.headers();
    let ext_at = BTH_AT + BTH_LEN;
    let (ext_len, reth, aeth) = if hdrs == Headers::NONE {
        (0, None, None)
    } else if hdrs == Headers::RETH {
        let r = RethSlice::from_slice(d, ext_at).ok()?;
        (RethSlice::LEN, Some(r), None)
    } else if hdrs == Headers::AETH {
        let a = AethSlice::from_slice(d, ext_at).ok()?;
        (AethSlice::LEN, None, Some(a))
    } else {
        return None;
    };
    let after_headers = ext_at + ext_len;
    if after_headers > icrc_offset {
        return None;
    }
    let payload_len = icrc_offset.checked_sub(after_headers + usize::from(bth.pad_count()))?;

    let caplen = d.len() as u32;
    let origlen = f.origlen.max(caplen);
    let ecn_ce = ip[1] & 3 == 3;
    let psn = bth.psn();

    // The flags `classify` gives a cut RoCE frame, or-ed together from
    // zero: no branch per flag.
    let nak = aeth.is_some_and(|a| Syndrome::is_nak_raw(a.syndrome_raw()));
    let flags = Flags(
        Flags::CUT.0
            | Flags::ROCE.0
            | OPCODE_FLAGS[usize::from(opcode.0)]
            | flag_if(Flags::ECN_CE, ecn_ce)
            | flag_if(Flags::ACK_REQ, bth.ack_req())
            | flag_if(Flags::BECN, bth.becn())
            | flag_if(Flags::FECN, bth.fecn())
            | flag_if(Flags::NAK, nak),
    );
    out.row = Row {
        ts_ns: f.ts_ns,
        file_offset: f.file_offset,
        caplen,
        origlen,
        opcode: opcode.0,
        psn,
        flags,
        port: f.port,
        dir: f.dir,
        ..Row::default()
    };
    // The observation's time, PSN, opcode and wire length are the row's.
    out.set_v4(
        [ip[12], ip[13], ip[14], ip[15]],
        [ip[16], ip[17], ip[18], ip[19]],
        bth.dest_qp(),
        aeth.map(|a| (a.syndrome_raw(), a.msn())),
        reth.map(|r| r.dma_len()),
        payload_len as u32,
        ecn_ce,
    );
    Some(())
}

/// A header-only RoCEv2 frame over IPv4 as the fields its bytes were
/// written from (the simulator's usual capture): the store takes its row
/// from them ([`Staged::push_roce_v4`](super::Staged::push_roce_v4))
/// instead of reading the bytes back.
///
/// The frame they describe: Ethernet II, IPv4 with a 20-byte header, not a
/// fragment, UDP to port 4791, then a BTH (FECN clear, pad count that of
/// `payload_len`) and the one extended header its opcode has (none, a RETH
/// or an AETH), cut right after it; the IPv4 and UDP lengths those of the
/// whole packet, which fit their 16 bits. That is the fast path's shape,
/// and the row is the one it gives (checked against the decoder in debug
/// builds and in the tests).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RoceV4Fields {
    pub src: [u8; 4],
    pub dst: [u8; 4],
    /// IP ECN field = CE (11).
    pub ecn_ce: bool,
    pub opcode: u8,
    pub becn: bool,
    pub ack_req: bool,
    /// 24 bits.
    pub dest_qp: u32,
    /// 24 bits.
    pub psn: u32,
    /// The RETH's DMA length, when the opcode has a RETH.
    pub reth_dma_len: Option<u32>,
    /// The AETH's syndrome and MSN (24 bits), when the opcode has an AETH.
    pub aeth: Option<(u8, u32)>,
    /// Payload bytes on the wire (without pad and ICRC).
    pub payload_len: u32,
}

/// Writes the row of `f`, a frame of the shape [`RoceV4Fields`] describes
/// written from `h`, into `out`: what [`decode_header_only`] gives it.
#[inline(always)]
pub(crate) fn row_of_fields(f: &IngestFrame<'_>, h: &RoceV4Fields, out: &mut PacketInfo) {
    let caplen = f.data.len() as u32;
    let nak = h
        .aeth
        .is_some_and(|(syndrome, _)| Syndrome::is_nak_raw(syndrome));
    let flags = Flags(
        Flags::CUT.0
            | Flags::ROCE.0
            | OPCODE_FLAGS[usize::from(h.opcode)]
            | flag_if(Flags::ECN_CE, h.ecn_ce)
            | flag_if(Flags::ACK_REQ, h.ack_req)
            | flag_if(Flags::BECN, h.becn)
            | flag_if(Flags::NAK, nak),
    );
    out.row = Row {
        ts_ns: f.ts_ns,
        file_offset: f.file_offset,
        caplen,
        origlen: f.origlen.max(caplen),
        opcode: h.opcode,
        psn: h.psn & 0x00FF_FFFF,
        flags,
        port: f.port,
        dir: f.dir,
        ..Row::default()
    };
    out.set_v4(
        h.src,
        h.dst,
        h.dest_qp,
        h.aeth,
        h.reth_dma_len,
        h.payload_len,
        h.ecn_ce,
    );
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use rocescope_decoders::analysis::Observation;
    use rocescope_decoders::{LinkLayer, Opcode, PacketBuilder, Syndrome, decode};

    use super::*;
    use crate::store::ingest::{decode_frame, decode_frame_generic};

    fn frame(data: &[u8], origlen: u32, linktype: u32) -> IngestFrame<'_> {
        IngestFrame {
            ts_ns: 1_764_400_000_000_000_167,
            data,
            origlen,
            linktype,
            port: 3,
            dir: None,
            file_offset: 4096,
        }
    }

    /// Every cut of `full` (and `full` itself), and every one-byte change of
    /// its first 70 bytes cut to the headers: the indexer's answer must be
    /// the generic decoder's. Returns how many took the fast path.
    fn check_all(cfg: &DecodeConfig, full: &[u8], headers_len: usize) -> usize {
        let mut fast = 0;
        let mut check = |data: &[u8]| {
            // Raw IP reads the same bytes as another frame: never fast.
            for linktype in [1, 101] {
                for origlen in [0, 9000] {
                    let f = frame(data, origlen, linktype);
                    let got = decode_frame(cfg, &f);
                    assert_eq!(got, decode_frame_generic(cfg, &f), "frame {data:02x?}");
                    // The row's observation is the decoder's, bit for bit.
                    let want = LinkLayer::from_linktype(linktype).and_then(|l| {
                        let origlen = got.rows[0].row.origlen;
                        Observation::from_packet(&decode(data, l, cfg), f.ts_ns, origlen)
                    });
                    assert_eq!(got.rows[0].obs(&got.wide), want, "frame {data:02x?}");
                    let mut info = PacketInfo::default();
                    fast += usize::from(decode_header_only(cfg, &f, &mut info));
                }
            }
        };
        for cut in 0..=full.len() {
            check(&full[..cut]);
        }
        let mut cut = full[..headers_len.min(full.len())].to_vec();
        for at in 0..cut.len().min(70) {
            let was = cut[at];
            for v in [0x00, 0xFF, was ^ 0x01, was ^ 0x02, was ^ 0x40, was ^ 0x80] {
                cut[at] = v;
                check(&cut);
            }
            cut[at] = was;
        }
        fast
    }

    #[test]
    fn every_opcode_cut_and_mutated_matches_the_generic_decoder() {
        let cfg = DecodeConfig {
            extra_roce_ports: vec![4792],
        };
        let mut fast = 0;
        for op in 0..=255u8 {
            // The payload length sets the pad count.
            for (ecn, payload, ack_req) in [(0u8, 40usize, false), (3, 42, true), (1, 41, false)] {
                let mut b = PacketBuilder::rocev2_ipv4(
                    [10, 0, 0, 1],
                    [10, 0, 0, 2],
                    Opcode(op),
                    0x0012_3456,
                    0x00FF_FFFE,
                );
                b.bth.ack_req = ack_req;
                b.bth.becn = ack_req;
                b.ext.reth.dma_len = 16384;
                b.ext.aeth.syndrome = if ack_req {
                    Syndrome::Nak(rocescope_decoders::NakCode::PsnSequenceError).to_u8()
                } else {
                    Syndrome::Ack { credits: 31 }.to_u8()
                };
                b.ext.aeth.msn = 77;
                if let rocescope_decoders::NetHeader::Ipv4 { ecn: e, .. } = &mut b.net {
                    *e = ecn;
                }
                let full = b.build(&vec![0xA5; payload]);
                fast += check_all(&cfg, &full, b.header_len());
            }
        }
        // The WRITE, SEND, READ request and ACK opcodes are the fast path's.
        assert!(fast > 10_000, "fast path taken {fast} times");
    }

    /// The row taken from a header-only frame's fields is the decoder's
    /// row of its bytes: every opcode of the fields' shape, each ECN value,
    /// every pad count, ACK, NAK and RNR syndromes, 24-bit wraps.
    #[test]
    fn the_row_from_fields_is_the_decoders() {
        let cfg = DecodeConfig::default();
        let syndromes = [
            Syndrome::Ack { credits: 31 },
            Syndrome::Nak(rocescope_decoders::NakCode::PsnSequenceError),
            Syndrome::RnrNak { timer: 3 },
        ];
        let mut checked = 0;
        for op in 0..=255u8 {
            let hdrs = Opcode(op).headers();
            if ![Headers::NONE, Headers::RETH, Headers::AETH].contains(&hdrs) {
                continue;
            }
            for (i, payload) in [0usize, 1, 2, 3, 4096, 1023, 65_000]
                .into_iter()
                .enumerate()
            {
                let (src, dst) = ([10, 0, 0, 1 + i as u8], [10, 0, 1, 2]);
                let i32 = i as u32;
                let mut b = PacketBuilder::rocev2_ipv4(
                    src,
                    dst,
                    Opcode(op),
                    0x00FF_FFFE + i32,
                    0x00FF_FFFC + i32,
                );
                b.bth.ack_req = i % 2 == 0;
                b.bth.becn = i % 3 == 0;
                b.ext.reth.dma_len = 16384 + i32;
                let syndrome = syndromes[i % 3].to_u8();
                b.ext.aeth.syndrome = syndrome;
                b.ext.aeth.msn = 0x00FF_FFF0 + i32;
                let ecn = i as u8 % 4;
                if let rocescope_decoders::NetHeader::Ipv4 { ecn: e, .. } = &mut b.net {
                    *e = ecn;
                }
                let mut d = Vec::new();
                b.build_headers_into(payload, &mut d);
                let origlen = (b.header_len() + payload + 4) as u32;
                let f = frame(&d, origlen, 1);
                let fields = RoceV4Fields {
                    src,
                    dst,
                    ecn_ce: ecn == 3,
                    opcode: op,
                    becn: b.bth.becn,
                    ack_req: b.bth.ack_req,
                    dest_qp: b.bth.dest_qp,
                    psn: b.bth.psn,
                    reth_dma_len: (hdrs == Headers::RETH).then_some(b.ext.reth.dma_len),
                    aeth: (hdrs == Headers::AETH).then_some((syndrome, b.ext.aeth.msn)),
                    payload_len: payload as u32,
                };
                let mut got = PacketInfo::default();
                row_of_fields(&f, &fields, &mut got);
                assert_eq!(got, decode_frame_generic(&cfg, &f).rows[0], "{fields:?}");
                checked += 1;
            }
        }
        assert!(checked > 100, "{checked} frames");
    }

    #[test]
    fn the_fast_path_takes_the_bench_capture_frames() {
        let cfg = DecodeConfig::default();
        for (op, payload) in [
            (Opcode::RC_WRITE_FIRST, 4096),
            (Opcode::RC_WRITE_MIDDLE, 4096),
            (Opcode::RC_ACK, 0),
            (Opcode::RC_READ_REQUEST, 0),
        ] {
            let b = PacketBuilder::rocev2_ipv4([10, 0, 0, 1], [10, 0, 0, 2], op, 0x200, 5);
            let mut d = Vec::new();
            b.build_headers_into(payload, &mut d);
            let origlen = (b.header_len() + payload + 4) as u32;
            let f = frame(&d, origlen, 1);
            let mut info = PacketInfo::default();
            assert!(decode_header_only(&cfg, &f, &mut info));
            assert_eq!(info, decode_frame_generic(&cfg, &f).rows[0]);
            assert!(info.row.flags.contains(Flags::CUT | Flags::ROCE));
            // A whole frame has its ICRC verified by the generic path.
            let whole = b.build(&vec![0; payload]);
            let mut untouched = PacketInfo::default();
            assert!(!decode_header_only(
                &cfg,
                &frame(&whole, 0, 1),
                &mut untouched
            ));
            assert_eq!(untouched, PacketInfo::default());
        }
    }
}
