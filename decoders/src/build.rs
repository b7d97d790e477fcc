//! Packet builders: any RoCE or native InfiniBand packet with correct
//! lengths, pad count, checksums, ICRC (and VCRC), for the simulator and for
//! tests.

use crate::headers::{
    AtomicAckEthSlice, Bth, CnpSlice, Ext, FethSlice, IethSlice, ImmDtSlice, Ipv4Slice, Ipv6Slice,
    Lnh, Lrh, LrhSlice, RdethSlice, UdpSlice, XrcEthSlice, atomic_ack_eth_field, eth_field,
    feth_field, ieth_field, immdt_field, ipv4_checksum, ipv4_field, ipv6_field, rdeth_field,
    udp_field, xrceth_field,
};
use crate::icrc::{icrc_ib, icrc_v1, icrc_v2, vcrc};
use crate::opcode::{Headers, Opcode};
use crate::packet::{
    ETHERTYPE_IPV4, ETHERTYPE_IPV6, ETHERTYPE_ROCEV1, GRH_NEXT_HEADER_BTH, ROCEV2_UDP_PORT,
    RoceVersion, v4_mapped,
};

/// Network header of a built packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NetHeader {
    Ipv4 {
        src: [u8; 4],
        dst: [u8; 4],
        dscp: u8,
        ecn: u8,
        ttl: u8,
        id: u16,
    },
    /// IPv6 for RoCEv2; for RoCEv1 the same fields fill the GRH.
    Ipv6 {
        src: [u8; 16],
        dst: [u8; 16],
        traffic_class: u8,
        flow_label: u32,
        hop_limit: u8,
    },
}

impl NetHeader {
    /// The IPv6 header's or GRH's fields (src, dst, traffic class, flow
    /// label, hop limit); IPv4 values mapped, as a GRH carries them.
    fn ipv6_fields(&self) -> ([u8; 16], [u8; 16], u8, u32, u8) {
        match *self {
            NetHeader::Ipv6 {
                src,
                dst,
                traffic_class,
                flow_label,
                hop_limit,
            } => (src, dst, traffic_class, flow_label, hop_limit),
            NetHeader::Ipv4 {
                src: src4,
                dst: dst4,
                dscp,
                ecn,
                ttl,
                ..
            } => (
                v4_mapped(src4),
                v4_mapped(dst4),
                (dscp << 2) | (ecn & 3),
                0,
                ttl,
            ),
        }
    }
}

/// Everything needed to write one RoCE frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PacketBuilder {
    pub eth_dst: [u8; 6],
    pub eth_src: [u8; 6],
    /// 802.1Q TCIs, outermost first (at most two; more are ignored).
    pub vlans: Vec<u16>,
    pub version: RoceVersion,
    /// RoCEv2: the IP header; RoCEv1: the GRH; native IB: the GRH when
    /// `lrh.lnh` is global (IPv4 values mapped, as for RoCEv1).
    pub net: NetHeader,
    /// Native IB ([`RoceVersion::Ib`]) only: the LRH (its PktLen is set
    /// here). No Ethernet header is written for IB.
    pub lrh: Lrh,
    pub udp_src_port: u16,
    pub udp_dst_port: u16,
    /// `pad_count` is overwritten from the payload length.
    pub bth: Bth,
    /// Values of the extended headers; the opcode decides which are written.
    pub ext: Ext,
    /// Pad frames to the 60-byte Ethernet minimum as a NIC does.
    pub pad_to_min_frame: bool,
}

impl PacketBuilder {
    /// A RoCEv2/IPv4 packet with BALBOA's defaults (ECT(0), UDP source port
    /// 18488, P_Key 0xFFFF, AckReq on requests).
    pub fn rocev2_ipv4(src: [u8; 4], dst: [u8; 4], opcode: Opcode, dest_qp: u32, psn: u32) -> Self {
        let is_request = opcode.operation().is_some_and(|op| op.is_request());
        PacketBuilder {
            eth_dst: [0x02, 0, 0, 0, dst[2], dst[3]],
            eth_src: [0x02, 0, 0, 0, src[2], src[3]],
            vlans: Vec::new(),
            version: RoceVersion::V2,
            net: NetHeader::Ipv4 {
                src,
                dst,
                dscp: 0,
                ecn: 0b10,
                ttl: 64,
                id: 0,
            },
            udp_src_port: 18488,
            udp_dst_port: ROCEV2_UDP_PORT,
            bth: Bth {
                opcode: opcode.0,
                dest_qp: dest_qp & 0xFF_FFFF,
                psn: psn & 0xFF_FFFF,
                ack_req: is_request,
                ..Bth::default()
            },
            ext: Ext::default(),
            pad_to_min_frame: true,
            lrh: Lrh::default(),
        }
    }

    /// A native InfiniBand packet from LID `slid` to LID `dlid` (local: no
    /// GRH; set `lrh.lnh` to [`Lnh::IbaGlobal`] and `net` for one), VL 0,
    /// SL 0, P_Key 0xFFFF, AckReq on requests.
    pub fn ib(slid: u16, dlid: u16, opcode: Opcode, dest_qp: u32, psn: u32) -> Self {
        let mut b = Self::rocev2_ipv4([0; 4], [0; 4], opcode, dest_qp, psn);
        b.version = RoceVersion::Ib;
        b.net = NetHeader::Ipv6 {
            src: [0; 16],
            dst: [0; 16],
            traffic_class: 0,
            flow_label: 0,
            hop_limit: 64,
        };
        b.pad_to_min_frame = false;
        b.lrh = Lrh {
            slid,
            dlid,
            ..Lrh::default()
        };
        b
    }

    /// A whole RoCEv2/IPv4 frame carrying an RDMA CM REQ (`rep` false) or
    /// REP over UD QP 1, with the fields the RC analysis pairs connections
    /// by: the sender's communication id, for a REP the REQ's it answers,
    /// and the sender's QPN.
    pub fn cm_frame(
        src: [u8; 4],
        dst: [u8; 4],
        rep: bool,
        local_comm_id: u32,
        remote_comm_id: u32,
        local_qpn: u32,
    ) -> Vec<u8> {
        // A MAD: base version 1, the CM class (7), class version 2,
        // method 3 (Send); the attribute at 16, the message from 24.
        let mut mad = vec![0u8; 256];
        mad[..4].copy_from_slice(&[1, 0x07, 2, 3]);
        let attr: u16 = if rep { 0x0013 } else { 0x0010 };
        mad[16..18].copy_from_slice(&attr.to_be_bytes());
        mad[24..28].copy_from_slice(&local_comm_id.to_be_bytes());
        if rep {
            mad[28..32].copy_from_slice(&remote_comm_id.to_be_bytes());
            mad[36..40].copy_from_slice(&(local_qpn << 8).to_be_bytes());
        } else {
            mad[56..60].copy_from_slice(&(local_qpn << 8).to_be_bytes());
        }
        let mut b = PacketBuilder::rocev2_ipv4(src, dst, Opcode::UD_SEND_ONLY, 1, 7);
        b.ext.deth = crate::Deth {
            qkey: 0x8001_0000,
            src_qp: 1,
        };
        b.build(&mad)
    }

    /// Build the whole frame with `payload` into a new vector.
    pub fn build(&self, payload: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(128 + payload.len());
        self.build_into(payload, &mut out);
        out
    }

    /// Build the whole frame, replacing the contents of `out`.
    pub fn build_into(&self, payload: &[u8], out: &mut Vec<u8>) {
        out.clear();
        let layout = self.write_headers(payload.len(), out);
        out.extend_from_slice(payload);
        out.extend(std::iter::repeat_n(0u8, layout.pad));
        let icrc = {
            let transport = out.get(layout.bth_offset..).unwrap_or(&[]);
            let net = out
                .get(layout.net_offset..layout.net_offset + layout.net_len)
                .unwrap_or(&[]);
            match self.version {
                RoceVersion::V1 => icrc_v1(net, transport),
                RoceVersion::Ib => {
                    let (lrh, grh) = net.split_at(net.len().min(LrhSlice::LEN));
                    icrc_ib(lrh, (!grh.is_empty()).then_some(grh), transport)
                }
                RoceVersion::V2 => {
                    let udp = out
                        .get(layout.udp_offset..layout.udp_offset + 8)
                        .unwrap_or(&[]);
                    icrc_v2(net, udp, transport)
                }
            }
        };
        out.extend_from_slice(&icrc.to_le_bytes());
        if self.version == RoceVersion::Ib {
            let v = vcrc(out.get(layout.net_offset..).unwrap_or(&[]));
            out.extend_from_slice(&v.to_le_bytes());
            return;
        }
        if self.pad_to_min_frame && out.len() < 60 {
            out.resize(60, 0);
        }
    }

    /// Write only the headers of a packet whose payload is `payload_len` bytes,
    /// with the length fields of the whole packet: what a header-only capture
    /// or a snaplen-cut capture holds.
    pub fn build_headers_into(&self, payload_len: usize, out: &mut Vec<u8>) {
        out.clear();
        self.write_headers(payload_len, out);
    }

    /// Bytes of link, network and transport headers before the payload.
    pub fn header_len(&self) -> usize {
        let link = match self.version {
            RoceVersion::Ib => 0,
            _ => 14 + 4 * self.vlans.len().min(2),
        };
        let net = match (self.version, self.net) {
            (RoceVersion::V2, NetHeader::Ipv4 { .. }) => 20 + 8,
            (RoceVersion::V2, NetHeader::Ipv6 { .. }) => 40 + 8,
            (RoceVersion::V1, _) => 40,
            (RoceVersion::Ib, _) if self.lrh.lnh == Lnh::IbaGlobal => 8 + 40,
            (RoceVersion::Ib, _) => 8,
        };
        link + net + 12 + ext_len(Opcode(self.bth.opcode).headers())
    }

    fn write_headers(&self, payload_len: usize, out: &mut Vec<u8>) -> Layout {
        let opcode = Opcode(self.bth.opcode);
        let hdrs = opcode.headers();
        let pad = (4 - payload_len % 4) % 4;
        let transport_len = 12 + ext_len(hdrs) + payload_len + pad + 4;
        if self.version == RoceVersion::Ib {
            return self.write_ib_headers(hdrs, transport_len, pad, out);
        }

        let mut eth = [0u8; eth_field::ETHERTYPE.start];
        eth[eth_field::DST].copy_from_slice(&self.eth_dst);
        eth[eth_field::SRC].copy_from_slice(&self.eth_src);
        out.extend_from_slice(&eth);
        let tags = &self.vlans[..self.vlans.len().min(2)];
        for (i, tci) in tags.iter().enumerate() {
            let tpid: u16 = if tags.len() == 2 && i == 0 {
                0x88A8
            } else {
                0x8100
            };
            out.extend_from_slice(&tpid.to_be_bytes());
            out.extend_from_slice(&tci.to_be_bytes());
        }
        let ethertype = match (self.version, self.net) {
            (RoceVersion::V1 | RoceVersion::Ib, _) => ETHERTYPE_ROCEV1,
            (RoceVersion::V2, NetHeader::Ipv4 { .. }) => ETHERTYPE_IPV4,
            (RoceVersion::V2, NetHeader::Ipv6 { .. }) => ETHERTYPE_IPV6,
        };
        out.extend_from_slice(&ethertype.to_be_bytes());

        let net_offset = out.len();
        let mut udp_offset = 0;
        match (self.version, self.net) {
            (
                RoceVersion::V2,
                NetHeader::Ipv4 {
                    src,
                    dst,
                    dscp,
                    ecn,
                    ttl,
                    id,
                },
            ) => {
                let total = (20 + 8 + transport_len) as u16;
                let mut h = [0u8; Ipv4Slice::MIN_LEN];
                h[ipv4_field::VER_IHL.start] = 0x45;
                h[ipv4_field::DSCP_ECN.start] = (dscp << 2) | (ecn & 3);
                h[ipv4_field::TOTAL_LEN].copy_from_slice(&total.to_be_bytes());
                h[ipv4_field::IDENT].copy_from_slice(&id.to_be_bytes());
                h[ipv4_field::FLAGS.start] = 0x40; // don't fragment
                h[ipv4_field::TTL.start] = ttl;
                h[ipv4_field::PROTOCOL.start] = 17;
                h[ipv4_field::SRC].copy_from_slice(&src);
                h[ipv4_field::DST].copy_from_slice(&dst);
                let csum = ipv4_checksum(&h);
                h[ipv4_field::CHECKSUM].copy_from_slice(&csum.to_be_bytes());
                out.extend_from_slice(&h);
            }
            (version, net) => {
                let fields = net.ipv6_fields();
                let (payload, next) = match version {
                    RoceVersion::V2 => (8 + transport_len, 17),
                    RoceVersion::V1 | RoceVersion::Ib => (transport_len, GRH_NEXT_HEADER_BTH),
                };
                write_ipv6(out, fields, payload, next);
            }
        }
        let net_len = out.len() - net_offset;
        if self.version == RoceVersion::V2 {
            udp_offset = out.len();
            let mut h = [0u8; UdpSlice::LEN];
            h[udp_field::SRC_PORT].copy_from_slice(&self.udp_src_port.to_be_bytes());
            h[udp_field::DST_PORT].copy_from_slice(&self.udp_dst_port.to_be_bytes());
            h[udp_field::LENGTH].copy_from_slice(&((8 + transport_len) as u16).to_be_bytes());
            // RoCEv2 leaves the UDP checksum (udp_field::CHECKSUM) zero.
            out.extend_from_slice(&h);
        }

        let bth_offset = self.write_bth(hdrs, pad, out);
        Layout {
            net_offset,
            net_len,
            udp_offset,
            bth_offset,
            pad,
        }
    }

    fn write_bth(&self, hdrs: Headers, pad: usize, out: &mut Vec<u8>) -> usize {
        let bth_offset = out.len();
        let mut bth = [0u8; 12];
        Bth {
            pad_count: pad as u8,
            ..self.bth
        }
        .write(&mut bth);
        out.extend_from_slice(&bth);
        write_ext(&self.ext, hdrs, out);
        bth_offset
    }

    /// LRH, the GRH when the LNH says global, BTH and extended headers.
    fn write_ib_headers(
        &self,
        hdrs: Headers,
        transport_len: usize,
        pad: usize,
        out: &mut Vec<u8>,
    ) -> Layout {
        let global = self.lrh.lnh == Lnh::IbaGlobal;
        let net_len = LrhSlice::LEN + if global { Ipv6Slice::LEN } else { 0 };
        let mut lrh = [0u8; LrhSlice::LEN];
        Lrh {
            pkt_len_words: ((net_len + transport_len) / 4) as u16,
            ..self.lrh
        }
        .write(&mut lrh);
        out.extend_from_slice(&lrh);
        if global {
            let fields = self.net.ipv6_fields();
            write_ipv6(out, fields, transport_len, GRH_NEXT_HEADER_BTH);
        }
        let bth_offset = self.write_bth(hdrs, pad, out);
        Layout {
            net_offset: 0,
            net_len,
            udp_offset: 0,
            bth_offset,
            pad,
        }
    }
}

/// An IPv6 header or GRH: (src, dst, traffic class, flow label, hop limit).
fn write_ipv6(
    out: &mut Vec<u8>,
    (src, dst, tc, flow, hops): ([u8; 16], [u8; 16], u8, u32, u8),
    payload: usize,
    next: u8,
) {
    let word0 = (6u32 << 28) | (u32::from(tc) << 20) | (flow & 0xF_FFFF);
    let mut h = [0u8; Ipv6Slice::LEN];
    h[ipv6_field::VER_TC_FLOW].copy_from_slice(&word0.to_be_bytes());
    h[ipv6_field::PAYLOAD_LEN].copy_from_slice(&(payload as u16).to_be_bytes());
    h[ipv6_field::NEXT_HEADER.start] = next;
    h[ipv6_field::HOP_LIMIT.start] = hops;
    h[ipv6_field::SRC].copy_from_slice(&src);
    h[ipv6_field::DST].copy_from_slice(&dst);
    out.extend_from_slice(&h);
}

struct Layout {
    net_offset: usize,
    net_len: usize,
    udp_offset: usize,
    bth_offset: usize,
    pad: usize,
}

/// Total length of the extended headers in `hdrs`.
pub fn ext_len(hdrs: Headers) -> usize {
    const SIZES: [(Headers, usize); 11] = [
        (Headers::RDETH, 4),
        (Headers::DETH, 8),
        (Headers::XRCETH, 4),
        (Headers::FETH, 4),
        (Headers::RETH, 16),
        (Headers::ATOMICETH, 28),
        (Headers::AETH, 4),
        (Headers::ATOMICACKETH, 8),
        (Headers::IMMDT, 4),
        (Headers::IETH, 4),
        (Headers::CNP, 16),
    ];
    SIZES
        .iter()
        .filter(|(h, _)| hdrs.contains(*h))
        .map(|(_, n)| n)
        .sum()
}

fn write_ext(x: &Ext, hdrs: Headers, out: &mut Vec<u8>) {
    if hdrs.contains(Headers::RDETH) {
        let mut h = [0u8; RdethSlice::LEN];
        h[rdeth_field::EE_CONTEXT].copy_from_slice(&x.rdeth_ee_context.to_be_bytes()[1..]);
        out.extend_from_slice(&h);
    }
    if hdrs.contains(Headers::DETH) {
        x.deth.write(out);
    }
    if hdrs.contains(Headers::XRCETH) {
        let mut h = [0u8; XrcEthSlice::LEN];
        h[xrceth_field::XRC_SRQ].copy_from_slice(&x.xrc_srq.to_be_bytes()[1..]);
        out.extend_from_slice(&h);
    }
    if hdrs.contains(Headers::FETH) {
        let mut h = [0u8; FethSlice::LEN];
        h[feth_field::SEL_PLT.start] = ((x.feth_selectivity & 3) << 4) | (x.feth_placement & 0xF);
        out.extend_from_slice(&h);
    }
    if hdrs.contains(Headers::RETH) {
        x.reth.write(out);
    }
    if hdrs.contains(Headers::ATOMICETH) {
        x.atomic_eth.write(out);
    }
    if hdrs.contains(Headers::AETH) {
        x.aeth.write(out);
    }
    if hdrs.contains(Headers::ATOMICACKETH) {
        let mut h = [0u8; AtomicAckEthSlice::LEN];
        h[atomic_ack_eth_field::ORIG_REM_DATA].copy_from_slice(&x.atomic_ack_orig.to_be_bytes());
        out.extend_from_slice(&h);
    }
    if hdrs.contains(Headers::IMMDT) {
        let mut h = [0u8; ImmDtSlice::LEN];
        h[immdt_field::VALUE].copy_from_slice(&x.immdt.to_be_bytes());
        out.extend_from_slice(&h);
    }
    if hdrs.contains(Headers::IETH) {
        let mut h = [0u8; IethSlice::LEN];
        h[ieth_field::RKEY].copy_from_slice(&x.ieth_rkey.to_be_bytes());
        out.extend_from_slice(&h);
    }
    if hdrs.contains(Headers::CNP) {
        // cnp_field::RESERVED: all zero.
        out.extend_from_slice(&[0u8; CnpSlice::LEN]);
    }
}
