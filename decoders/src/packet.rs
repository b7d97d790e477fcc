//! Lax whole-frame decoding: link layer to ICRC, as far as the bytes go.

use crate::error::{DecodeError, Layer, take};
use crate::headers::*;
use crate::icrc::{icrc_v1, icrc_v2};
use crate::opcode::Headers;
use crate::wire::u16_at;

/// The IANA UDP port of RoCEv2.
pub const ROCEV2_UDP_PORT: u16 = 4791;
/// EtherType of RoCEv1 (IBoE).
pub const ETHERTYPE_ROCEV1: u16 = 0x8915;
pub const ETHERTYPE_IPV4: u16 = 0x0800;
pub const ETHERTYPE_IPV6: u16 = 0x86DD;
/// GRH next-header value that announces a BTH.
pub const GRH_NEXT_HEADER_BTH: u8 = 0x1B;

/// Link layer of the frames, from the capture's link type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkLayer {
    Ethernet,
    /// Raw IP: version from the first nibble.
    RawIp,
    Ipv4,
    Ipv6,
    LinuxSll,
    LinuxSll2,
}

impl LinkLayer {
    /// Map a pcap LINKTYPE_ value; `None` for link types rocescope does not decode.
    pub fn from_linktype(linktype: u32) -> Option<LinkLayer> {
        Some(match linktype {
            1 => LinkLayer::Ethernet,
            12 | 101 => LinkLayer::RawIp,
            228 => LinkLayer::Ipv4,
            229 => LinkLayer::Ipv6,
            113 => LinkLayer::LinuxSll,
            276 => LinkLayer::LinuxSll2,
            _ => return None,
        })
    }
}

/// Which UDP destination ports carry RoCEv2 (4791 plus the user's).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DecodeConfig {
    pub extra_roce_ports: Vec<u16>,
}

impl DecodeConfig {
    #[inline]
    pub fn is_roce_port(&self, port: u16) -> bool {
        port == ROCEV2_UDP_PORT || self.extra_roce_ports.contains(&port)
    }
}

/// The network-layer header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IpHeader<'a> {
    V4(Ipv4Slice<'a>),
    V6(Ipv6Slice<'a>),
}

impl<'a> IpHeader<'a> {
    pub fn as_bytes(&self) -> &'a [u8] {
        match self {
            IpHeader::V4(h) => h.as_bytes(),
            IpHeader::V6(h) => h.as_bytes(),
        }
    }
    pub fn ecn(&self) -> u8 {
        match self {
            IpHeader::V4(h) => h.ecn(),
            IpHeader::V6(h) => h.ecn(),
        }
    }
    pub fn dscp(&self) -> u8 {
        match self {
            IpHeader::V4(h) => h.dscp(),
            IpHeader::V6(h) => h.dscp(),
        }
    }
    /// Source address, IPv4 mapped into the v6 space (`::ffff:a.b.c.d`).
    pub fn src_v6(&self) -> [u8; 16] {
        match self {
            IpHeader::V4(h) => v4_mapped(h.src()),
            IpHeader::V6(h) => h.src(),
        }
    }
    pub fn dst_v6(&self) -> [u8; 16] {
        match self {
            IpHeader::V4(h) => v4_mapped(h.dst()),
            IpHeader::V6(h) => h.dst(),
        }
    }
    pub fn src_addr(&self) -> std::net::IpAddr {
        match self {
            IpHeader::V4(h) => h.src().into(),
            IpHeader::V6(h) => h.src().into(),
        }
    }
    pub fn dst_addr(&self) -> std::net::IpAddr {
        match self {
            IpHeader::V4(h) => h.dst().into(),
            IpHeader::V6(h) => h.dst().into(),
        }
    }
}

fn v4_mapped(a: [u8; 4]) -> [u8; 16] {
    let mut m = [0u8; 16];
    m[10] = 0xFF;
    m[11] = 0xFF;
    m[12..].copy_from_slice(&a);
    m
}

/// RoCE flavour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RoceVersion {
    /// EtherType 0x8915 + GRH.
    V1,
    /// UDP/IP, destination port 4791 (or a configured one).
    V2,
}

/// ICRC verdict of a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IcrcStatus {
    Ok,
    /// Stored and computed values differ.
    Bad { stored: u32, computed: u32 },
    /// The capture ends before the ICRC (header-only or snaplen): not checkable.
    Truncated,
    /// Not a RoCE frame, or its lengths do not say where the ICRC is.
    None,
}

impl IcrcStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            IcrcStatus::Ok => "ok",
            IcrcStatus::Bad { .. } => "bad",
            IcrcStatus::Truncated => "truncated",
            IcrcStatus::None => "none",
        }
    }
}

/// The RoCE part of a frame: from the BTH on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Roce<'a> {
    pub version: RoceVersion,
    /// RoCEv1 only.
    pub grh: Option<Ipv6Slice<'a>>,
    pub bth: BthSlice<'a>,
    /// Byte offset of the BTH in the frame.
    pub bth_offset: usize,
    pub ext: ExtHeaders<'a>,
    /// Byte offset of the payload (after the last extended header).
    pub payload_offset: usize,
    /// The captured payload bytes (without pad and ICRC; may be cut short).
    pub payload: &'a [u8],
    /// Payload length the length fields announce (without pad), even when the
    /// capture holds less.
    pub payload_len: usize,
    /// Offset of the ICRC (equals the end of the RoCE packet minus 4).
    pub icrc_offset: usize,
    pub icrc: IcrcStatus,
}

impl Roce<'_> {
    /// The ICRC as stored (read big-endian, as Wireshark shows it), if captured.
    pub fn stored_icrc_be(&self, frame: &[u8]) -> Option<u32> {
        take(frame, self.icrc_offset, 4, Layer::Icrc)
            .ok()
            .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }
}

/// A frame decoded as far as its bytes go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Packet<'a> {
    pub frame: &'a [u8],
    /// Offset of the network layer (after link header and tags).
    pub net_offset: usize,
    pub eth: Option<EthernetSlice<'a>>,
    pub vlans: [Option<VlanSlice<'a>>; 2],
    /// Protocol of the network layer (EtherType), when the link layer told it.
    pub ethertype: Option<u16>,
    pub ip: Option<IpHeader<'a>>,
    pub udp: Option<UdpSlice<'a>>,
    /// Offset of the UDP header.
    pub udp_offset: usize,
    pub roce: Option<Roce<'a>>,
    /// Where and why decoding stopped before the frame's announced end; `None`
    /// when every announced byte was decoded (or the frame is simply not RoCE).
    pub stop: Option<DecodeError>,
}

impl<'a> Packet<'a> {
    fn empty(frame: &'a [u8]) -> Self {
        Packet {
            frame,
            net_offset: 0,
            eth: None,
            vlans: [None, None],
            ethertype: None,
            ip: None,
            udp: None,
            udp_offset: 0,
            roce: None,
            stop: None,
        }
    }

    /// The ICRC verdict ("none" for frames that are not RoCE).
    pub fn icrc(&self) -> IcrcStatus {
        self.roce.map_or(IcrcStatus::None, |r| r.icrc)
    }

    /// True when the frame is RoCE and the capture cut it (header-only/snaplen).
    pub fn is_truncated(&self) -> bool {
        self.stop.is_some_and(|e| e.is_truncation())
    }
}

/// Decode one captured frame. Never panics; stops at the first layer whose
/// bytes are missing or invalid and records where in [`Packet::stop`].
pub fn decode<'a>(frame: &'a [u8], link: LinkLayer, cfg: &DecodeConfig) -> Packet<'a> {
    let mut p = Packet::empty(frame);
    if let Err(e) = decode_into(&mut p, link, cfg) {
        p.stop = Some(e);
    }
    p
}

fn decode_into<'a>(
    p: &mut Packet<'a>,
    link: LinkLayer,
    cfg: &DecodeConfig,
) -> Result<(), DecodeError> {
    let frame = p.frame;
    let (ethertype, mut off) = match link {
        LinkLayer::Ethernet => {
            let eth = EthernetSlice::from_slice(frame, 0)?;
            p.eth = Some(eth);
            let mut et = eth.ethertype();
            let mut off = EthernetSlice::LEN;
            let mut tags = 0;
            while matches!(et, 0x8100 | 0x88A8 | 0x9100) {
                if tags == 2 {
                    return Err(DecodeError::invalid(Layer::Vlan, off, "third VLAN tag TPID", et.into()));
                }
                let tag = VlanSlice::from_slice(frame, off)?;
                p.vlans[tags] = Some(tag);
                tags += 1;
                et = tag.ethertype();
                off += VlanSlice::LEN;
            }
            (et, off)
        }
        LinkLayer::LinuxSll => {
            let h = take(frame, 0, 16, Layer::LinuxSll)?;
            (u16_at(h, 14), 16)
        }
        LinkLayer::LinuxSll2 => {
            let h = take(frame, 0, 20, Layer::LinuxSll2)?;
            (u16_at(h, 0), 20)
        }
        LinkLayer::Ipv4 => (ETHERTYPE_IPV4, 0),
        LinkLayer::Ipv6 => (ETHERTYPE_IPV6, 0),
        LinkLayer::RawIp => match frame.first().map(|b| b >> 4) {
            Some(4) => (ETHERTYPE_IPV4, 0),
            Some(6) => (ETHERTYPE_IPV6, 0),
            Some(v) => return Err(DecodeError::invalid(Layer::Ipv4, 0, "IP version", v.into())),
            None => return Err(DecodeError::truncated(Layer::Ipv4, 0, 20, 0)),
        },
    };
    p.net_offset = off;
    p.ethertype = Some(ethertype);

    // Network layer: find the UDP header (v2) or the GRH (v1).
    let ip_payload_len = match ethertype {
        ETHERTYPE_IPV4 => {
            let ip = Ipv4Slice::from_slice(frame, off)?;
            p.ip = Some(IpHeader::V4(ip));
            if ip.protocol() != 17 || ip.more_fragments() || ip.fragment_offset() != 0 {
                return Ok(());
            }
            off += ip.header_len();
            usize::from(ip.total_len()) - ip.header_len()
        }
        ETHERTYPE_IPV6 => {
            let ip = Ipv6Slice::from_slice(frame, off)?;
            p.ip = Some(IpHeader::V6(ip));
            if ip.next_header() != 17 {
                return Ok(());
            }
            off += Ipv6Slice::LEN;
            usize::from(ip.payload_len())
        }
        ETHERTYPE_ROCEV1 => {
            let grh = Ipv6Slice::from_slice_as(frame, off, Layer::Grh)?;
            if grh.next_header() != GRH_NEXT_HEADER_BTH {
                return Err(DecodeError::invalid(
                    Layer::Grh,
                    off,
                    "next header",
                    grh.next_header().into(),
                ));
            }
            let bth_offset = off + Ipv6Slice::LEN;
            let end = bth_offset + usize::from(grh.payload_len());
            return decode_transport(p, RoceVersion::V1, Some(grh), bth_offset, end);
        }
        _ => return Ok(()),
    };

    let udp = UdpSlice::from_slice(frame, off)?;
    p.udp = Some(udp);
    p.udp_offset = off;
    if !cfg.is_roce_port(udp.dst_port()) {
        return Ok(());
    }
    let udp_len = usize::from(udp.length());
    if udp_len < UdpSlice::LEN || udp_len > ip_payload_len {
        return Err(DecodeError::invalid(Layer::Udp, off, "length", udp_len as u64));
    }
    let end = off + udp_len;
    decode_transport(p, RoceVersion::V2, None, off + UdpSlice::LEN, end)
}

/// Decode BTH, extended headers, payload and ICRC. `end` is the offset just
/// after the ICRC as the length fields announce it.
fn decode_transport<'a>(
    p: &mut Packet<'a>,
    version: RoceVersion,
    grh: Option<Ipv6Slice<'a>>,
    bth_offset: usize,
    end: usize,
) -> Result<(), DecodeError> {
    let frame = p.frame;
    const ICRC_LEN: usize = 4;
    let min_end = bth_offset + BthSlice::LEN + ICRC_LEN;
    if end < min_end {
        let (layer, at) = match version {
            RoceVersion::V1 => (Layer::Grh, p.net_offset),
            RoceVersion::V2 => (Layer::Udp, p.udp_offset),
        };
        let len = end.saturating_sub(bth_offset) as u64;
        return Err(DecodeError::invalid(layer, at, "length for a BTH and ICRC", len));
    }
    let icrc_offset = end - ICRC_LEN;
    let bth = BthSlice::from_slice(frame, bth_offset)?;
    let hdrs = bth.opcode().headers();
    let mut roce = Roce {
        version,
        grh,
        bth,
        bth_offset,
        ext: ExtHeaders::default(),
        payload_offset: bth_offset + BthSlice::LEN,
        payload: &[],
        payload_len: 0,
        icrc_offset,
        icrc: IcrcStatus::Truncated,
    };
    let result = decode_ext(frame, hdrs, &mut roce);
    if let Err(e) = result {
        p.roce = Some(roce);
        return Err(e);
    }

    let pad = usize::from(bth.pad_count());
    let after_headers = roce.payload_offset;
    let Some(payload_len) = icrc_offset.checked_sub(after_headers + pad) else {
        p.roce = Some(roce);
        return Err(DecodeError::invalid(Layer::Bth, bth_offset, "pad count for packet length", pad as u64));
    };
    roce.payload_len = payload_len;
    let captured_end = frame.len().min(after_headers + payload_len);
    roce.payload = frame.get(after_headers..captured_end).unwrap_or(&[]);

    if frame.len() < end {
        roce.icrc = IcrcStatus::Truncated;
        p.roce = Some(roce);
        let (layer, at, need) = if frame.len() < after_headers + payload_len {
            (Layer::Payload, after_headers, payload_len + pad + ICRC_LEN)
        } else {
            (Layer::Icrc, icrc_offset, ICRC_LEN)
        };
        return Err(DecodeError::truncated(layer, at, need, frame.len().saturating_sub(at)));
    }

    let transport = frame.get(bth_offset..icrc_offset).unwrap_or(&[]);
    let computed = match (version, grh, p.ip, p.udp) {
        (RoceVersion::V1, Some(g), _, _) => icrc_v1(g.as_bytes(), transport),
        (RoceVersion::V2, _, Some(ip), Some(udp)) => icrc_v2(ip.as_bytes(), udp.as_bytes(), transport),
        _ => 0,
    };
    let stored = frame
        .get(icrc_offset..end)
        .map_or(0, |b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
    roce.icrc = if stored == computed {
        IcrcStatus::Ok
    } else {
        IcrcStatus::Bad { stored, computed }
    };
    p.roce = Some(roce);
    Ok(())
}

/// Walk the opcode's extended headers in wire order.
fn decode_ext<'a>(frame: &'a [u8], hdrs: Headers, roce: &mut Roce<'a>) -> Result<(), DecodeError> {
    let limit = roce.icrc_offset;
    let mut off = roce.payload_offset;

    // Each header must be captured and must also fit before the ICRC.
    macro_rules! next {
        ($flag:expr, $ty:ident, $field:ident) => {
            if hdrs.contains($flag) {
                if off + $ty::LEN > limit {
                    return Err(DecodeError::invalid(
                        layer_of_flag($flag),
                        off,
                        "packet length for this opcode's headers",
                        (limit + 4 - roce.bth_offset) as u64,
                    ));
                }
                let view = $ty::from_slice(frame, off)?;
                roce.ext.$field = Some(view);
                off += $ty::LEN;
                roce.payload_offset = off;
            }
        };
    }
    next!(Headers::RDETH, RdethSlice, rdeth);
    next!(Headers::DETH, DethSlice, deth);
    next!(Headers::XRCETH, XrcEthSlice, xrceth);
    next!(Headers::FETH, FethSlice, feth);
    next!(Headers::RETH, RethSlice, reth);
    next!(Headers::ATOMICETH, AtomicEthSlice, atomic_eth);
    next!(Headers::AETH, AethSlice, aeth);
    next!(Headers::ATOMICACKETH, AtomicAckEthSlice, atomic_ack_eth);
    next!(Headers::IMMDT, ImmDtSlice, immdt);
    next!(Headers::IETH, IethSlice, ieth);
    next!(Headers::CNP, CnpSlice, cnp);
    Ok(())
}

fn layer_of_flag(flag: Headers) -> Layer {
    match flag {
        Headers::RDETH => Layer::Rdeth,
        Headers::DETH => Layer::Deth,
        Headers::XRCETH => Layer::Xrceth,
        Headers::FETH => Layer::Feth,
        Headers::RETH => Layer::Reth,
        Headers::ATOMICETH => Layer::AtomicEth,
        Headers::AETH => Layer::Aeth,
        Headers::ATOMICACKETH => Layer::AtomicAckEth,
        Headers::IMMDT => Layer::ImmDt,
        Headers::IETH => Layer::Ieth,
        _ => Layer::Cnp,
    }
}
