//! Lax whole-frame decoding: link layer to ICRC, as far as the bytes go.

use crate::error::{DecodeError, Layer, take};
use crate::headers::ExtKind;
use crate::headers::*;
use crate::icrc::{icrc_ib, icrc_v1, icrc_v2, vcrc};
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
    /// Native InfiniBand from the LRH (LINKTYPE_INFINIBAND, 247).
    Infiniband,
    /// An ERF record (LINKTYPE_ERF, 197): its header, then the frame; the
    /// InfiniBand record type is decoded.
    Erf,
}

impl LinkLayer {
    /// Map a pcap LINKTYPE_ value; `None` for link types rocescope does not decode.
    #[inline]
    pub fn from_linktype(linktype: u32) -> Option<LinkLayer> {
        Some(match linktype {
            1 => LinkLayer::Ethernet,
            12 | 101 => LinkLayer::RawIp,
            228 => LinkLayer::Ipv4,
            229 => LinkLayer::Ipv6,
            113 => LinkLayer::LinuxSll,
            276 => LinkLayer::LinuxSll2,
            247 => LinkLayer::Infiniband,
            197 => LinkLayer::Erf,
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
    #[inline]
    pub fn as_bytes(&self) -> &'a [u8] {
        match self {
            IpHeader::V4(h) => h.as_bytes(),
            IpHeader::V6(h) => h.as_bytes(),
        }
    }
    #[inline]
    pub fn ecn(&self) -> u8 {
        match self {
            IpHeader::V4(h) => h.ecn(),
            IpHeader::V6(h) => h.ecn(),
        }
    }
    #[inline]
    pub fn dscp(&self) -> u8 {
        match self {
            IpHeader::V4(h) => h.dscp(),
            IpHeader::V6(h) => h.dscp(),
        }
    }
    /// Source address, IPv4 mapped into the v6 space (`::ffff:a.b.c.d`).
    #[inline]
    pub fn src_v6(&self) -> [u8; 16] {
        match self {
            IpHeader::V4(h) => v4_mapped(h.src()),
            IpHeader::V6(h) => h.src(),
        }
    }
    #[inline]
    pub fn dst_v6(&self) -> [u8; 16] {
        match self {
            IpHeader::V4(h) => v4_mapped(h.dst()),
            IpHeader::V6(h) => h.dst(),
        }
    }
    #[inline]
    pub fn src_addr(&self) -> std::net::IpAddr {
        match self {
            IpHeader::V4(h) => h.src().into(),
            IpHeader::V6(h) => h.src().into(),
        }
    }
    #[inline]
    pub fn dst_addr(&self) -> std::net::IpAddr {
        match self {
            IpHeader::V4(h) => h.dst().into(),
            IpHeader::V6(h) => h.dst().into(),
        }
    }
}

/// An IPv4 address mapped into the v6 space (`::ffff:a.b.c.d`), as
/// packets, observations and conversation keys hold it. Always inlined:
/// the indexer maps the ends of every row it keys.
#[inline(always)]
pub fn v4_mapped(a: [u8; 4]) -> [u8; 16] {
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
    /// Native InfiniBand: LRH, GRH when the LNH says global, then the BTH;
    /// ICRC and VCRC.
    Ib,
}

/// ICRC verdict of a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IcrcStatus {
    Ok,
    /// Stored and computed values differ.
    Bad {
        stored: u32,
        computed: u32,
    },
    /// The capture ends before the ICRC (header-only or snaplen): not checkable.
    Truncated,
    /// Captured whole but not checked ([`decode_headers`]).
    Unchecked,
    /// Not a RoCE frame, or its lengths do not say where the ICRC is.
    None,
}

impl IcrcStatus {
    #[inline]
    pub fn as_str(self) -> &'static str {
        match self {
            IcrcStatus::Ok => "ok",
            IcrcStatus::Bad { .. } => "bad",
            IcrcStatus::Truncated => "truncated",
            IcrcStatus::Unchecked => "unchecked",
            IcrcStatus::None => "none",
        }
    }
}

/// A frame decoded as far as its bytes go.
///
/// Kept small (offsets into the frame, not slices) because the indexer
/// decodes tens of millions of these a second; the accessors hand out
/// zero-copy views.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Packet<'a> {
    /// The frame and the offsets of its extended headers.
    ext: ExtHeaders<'a>,
    link: LinkLayer,
    has_eth: bool,
    n_vlans: u8,
    ip: IpKind,
    /// IPv4 header length in bytes (with options).
    ip_len: u8,
    roce: Option<RoceVersion>,
    ethertype: Option<u16>,
    net_offset: u16,
    /// 0 when there is no UDP header.
    udp_offset: u16,
    bth_offset: u16,
    payload_offset: u16,
    payload_len: u32,
    icrc_offset: u32,
    icrc: IcrcStatus,
    /// Native IB: the LRH is at `net_offset`.
    has_lrh: bool,
    /// Native IB: a GRH follows the LRH.
    ib_global: bool,
    /// Native IB: the VCRC's verdict (stored value in the low 16 bits).
    vcrc: IcrcStatus,
    stop: Option<DecodeError>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum IpKind {
    None,
    V4,
    V6,
}

impl<'a> Packet<'a> {
    fn empty(frame: &'a [u8], link: LinkLayer) -> Self {
        Packet {
            ext: ExtHeaders::new(frame),
            link,
            has_eth: false,
            n_vlans: 0,
            ip: IpKind::None,
            ip_len: 0,
            roce: None,
            ethertype: None,
            net_offset: 0,
            udp_offset: 0,
            bth_offset: 0,
            payload_offset: 0,
            payload_len: 0,
            icrc_offset: 0,
            icrc: IcrcStatus::None,
            has_lrh: false,
            ib_global: false,
            vcrc: IcrcStatus::None,
            stop: None,
        }
    }

    /// The captured bytes.
    #[inline]
    pub fn frame(&self) -> &'a [u8] {
        self.ext.frame()
    }

    #[inline]
    pub fn link(&self) -> LinkLayer {
        self.link
    }

    #[inline]
    pub fn eth(&self) -> Option<EthernetSlice<'a>> {
        if self.has_eth {
            EthernetSlice::from_slice(self.frame(), 0).ok()
        } else {
            None
        }
    }

    /// 802.1Q/802.1ad tags, outermost first.
    #[inline]
    pub fn vlans(&self) -> impl Iterator<Item = VlanSlice<'a>> + 'a {
        let frame = self.frame();
        (0..usize::from(self.n_vlans))
            .filter_map(move |i| VlanSlice::from_slice(frame, EthernetSlice::LEN + 4 * i).ok())
    }

    /// The network-layer protocol (EtherType), when the link layer tells it.
    #[inline]
    pub fn ethertype(&self) -> Option<u16> {
        self.ethertype
    }

    /// Offset of the network layer (after link header and tags).
    #[inline]
    pub fn net_offset(&self) -> usize {
        usize::from(self.net_offset)
    }

    /// The hold an IEEE 802.3 MAC Control frame puts on the link it
    /// arrives by, in quanta of 512 bit times: a PAUSE's (opcode 1), a
    /// PFC's (0x0101) longest over its enabled classes, 0 to release it;
    /// `None` for any other frame (or one cut before its times).
    pub fn pause_quanta(&self) -> Option<u16> {
        const MAC_CONTROL: u16 = 0x8808;
        if self.ethertype != Some(MAC_CONTROL) {
            return None;
        }
        let b = self.frame().get(self.net_offset()..)?;
        let u16_at = |i: usize| b.get(i..i + 2).map(|x| u16::from_be_bytes([x[0], x[1]]));
        match u16_at(0)? {
            1 => u16_at(2),
            0x0101 => {
                let enabled = u16_at(2)?;
                (0..8)
                    .filter(|c| enabled >> c & 1 == 1)
                    .map(|c| u16_at(4 + 2 * c))
                    .try_fold(0u16, |m, q| q.map(|q| m.max(q)))
            }
            _ => None,
        }
    }

    #[inline]
    pub fn ip(&self) -> Option<IpHeader<'a>> {
        let off = self.net_offset();
        match self.ip {
            IpKind::None => None,
            IpKind::V4 => self
                .frame()
                .get(off..off + usize::from(self.ip_len))
                .map(|h| IpHeader::V4(Ipv4Slice::from_validated(h))),
            IpKind::V6 => Ipv6Slice::from_slice(self.frame(), off)
                .ok()
                .map(IpHeader::V6),
        }
    }

    #[inline]
    pub fn udp(&self) -> Option<UdpSlice<'a>> {
        match self.udp_offset {
            0 => None,
            off => UdpSlice::from_slice(self.frame(), usize::from(off)).ok(),
        }
    }

    /// Offset of the UDP header (0 when absent).
    #[inline]
    pub fn udp_offset(&self) -> usize {
        usize::from(self.udp_offset)
    }

    /// `Some` when the frame is RoCE and its BTH was captured.
    #[inline]
    pub fn roce_version(&self) -> Option<RoceVersion> {
        self.roce
    }

    /// The GRH of a RoCEv1 frame or of a global native IB frame.
    #[inline]
    pub fn grh(&self) -> Option<Ipv6Slice<'a>> {
        match self.roce {
            Some(RoceVersion::V1) => {
                Ipv6Slice::from_slice_as(self.frame(), self.net_offset(), Layer::Grh).ok()
            }
            Some(RoceVersion::Ib) if self.ib_global => Ipv6Slice::from_slice_as(
                self.frame(),
                self.net_offset() + LrhSlice::LEN,
                Layer::Grh,
            )
            .ok(),
            _ => None,
        }
    }

    /// The LRH of a native InfiniBand frame.
    #[inline]
    pub fn lrh(&self) -> Option<LrhSlice<'a>> {
        if !self.has_lrh {
            return None;
        }
        LrhSlice::from_slice(self.frame(), self.net_offset()).ok()
    }

    /// The ERF record header, when the link layer is ERF.
    #[inline]
    pub fn erf(&self) -> Option<ErfSlice<'a>> {
        match self.link {
            LinkLayer::Erf => ErfSlice::from_slice(self.frame(), 0).ok(),
            _ => None,
        }
    }

    /// The VCRC verdict of a native IB frame ("none" otherwise). `Bad`
    /// holds the 16-bit values.
    #[inline]
    pub fn vcrc(&self) -> IcrcStatus {
        self.vcrc
    }

    /// The VCRC as stored (read big-endian, as Wireshark shows it), if captured.
    #[inline]
    pub fn stored_vcrc_be(&self) -> Option<u16> {
        if self.roce != Some(RoceVersion::Ib) {
            return None;
        }
        take(self.frame(), self.icrc_offset() + 4, 2, Layer::Vcrc)
            .ok()
            .map(|b| u16::from_be_bytes([b[0], b[1]]))
    }

    #[inline]
    pub fn bth(&self) -> Option<BthSlice<'a>> {
        self.roce?;
        BthSlice::from_slice(self.frame(), usize::from(self.bth_offset)).ok()
    }

    /// Byte offset of the BTH in the frame.
    #[inline]
    pub fn bth_offset(&self) -> usize {
        usize::from(self.bth_offset)
    }

    /// The extended headers that were decoded.
    #[inline]
    pub fn ext(&self) -> &ExtHeaders<'a> {
        &self.ext
    }

    /// Byte offset of the payload (after the last extended header).
    #[inline]
    pub fn payload_offset(&self) -> usize {
        usize::from(self.payload_offset)
    }

    /// The captured payload bytes (without pad and ICRC; may be cut short).
    #[inline]
    pub fn payload(&self) -> &'a [u8] {
        if self.roce.is_none() {
            return &[];
        }
        let start = self.payload_offset();
        let end = self.frame().len().min(start + self.payload_len());
        self.frame().get(start..end).unwrap_or(&[])
    }

    /// The MAD of a UD packet to QP0 or QP1 (management datagrams), when
    /// its base header was captured.
    #[inline]
    pub fn mad(&self) -> Option<crate::mad::MadView<'a>> {
        let bth = self.bth()?;
        if bth.dest_qp() > 1 || !matches!(bth.opcode().kind(), crate::OpcodeKind::Ud(_)) {
            return None;
        }
        crate::mad::MadView::new(self.payload())
    }

    /// Payload length the length fields announce (without pad), even when the
    /// capture holds less.
    #[inline]
    pub fn payload_len(&self) -> usize {
        self.payload_len as usize
    }

    /// Offset of the ICRC (the end of the RoCE packet minus 4).
    #[inline]
    pub fn icrc_offset(&self) -> usize {
        self.icrc_offset as usize
    }

    /// The ICRC verdict ("none" for frames that are not RoCE).
    #[inline]
    pub fn icrc(&self) -> IcrcStatus {
        self.icrc
    }

    /// The ICRC as stored (read big-endian, as Wireshark shows it), if captured.
    #[inline]
    pub fn stored_icrc_be(&self) -> Option<u32> {
        self.roce?;
        take(self.frame(), self.icrc_offset(), 4, Layer::Icrc)
            .ok()
            .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// Where and why decoding stopped before the frame's announced end; `None`
    /// when every announced byte was decoded (or the frame is simply not RoCE).
    #[inline]
    pub fn stop(&self) -> Option<DecodeError> {
        self.stop
    }

    /// True when the capture cut the frame (header-only or snaplen).
    #[inline]
    pub fn is_truncated(&self) -> bool {
        self.stop.is_some_and(|e| e.is_truncation())
    }
}

fn offset16(off: usize) -> u16 {
    // Headers start within the first few hundred bytes; the caps on link
    // headers, tags and IP options keep every offset far below 64 KiB.
    u16::try_from(off).unwrap_or(u16::MAX)
}

/// Decode one captured frame. Never panics; stops at the first layer whose
/// bytes are missing or invalid and records where in [`Packet::stop`].
#[inline]
pub fn decode<'a>(frame: &'a [u8], link: LinkLayer, cfg: &DecodeConfig) -> Packet<'a> {
    let mut p = Packet::empty(frame, link);
    if let Err(e) = decode_into::<true>(&mut p, frame, link, cfg) {
        p.stop = Some(e);
    }
    p
}

/// As [`decode`], without computing the ICRC of whole frames (their
/// [`Packet::icrc`] is [`IcrcStatus::Unchecked`]): for readers that want
/// the header fields only, such as table export, where a CRC over every
/// payload would cost more than the rest of the decode.
#[inline]
pub fn decode_headers<'a>(frame: &'a [u8], link: LinkLayer, cfg: &DecodeConfig) -> Packet<'a> {
    let mut p = Packet::empty(frame, link);
    if let Err(e) = decode_into::<false>(&mut p, frame, link, cfg) {
        p.stop = Some(e);
    }
    p
}

#[inline(always)]
fn decode_into<const CHECK_ICRC: bool>(
    p: &mut Packet<'_>,
    frame: &[u8],
    link: LinkLayer,
    cfg: &DecodeConfig,
) -> Result<(), DecodeError> {
    let (ethertype, mut off) = match link {
        LinkLayer::Ethernet => {
            let eth = EthernetSlice::from_slice(frame, 0)?;
            p.has_eth = true;
            let mut et = eth.ethertype();
            let mut off = EthernetSlice::LEN;
            while matches!(et, 0x8100 | 0x88A8 | 0x9100) {
                if p.n_vlans == 2 {
                    return Err(DecodeError::invalid(
                        Layer::Vlan,
                        off,
                        "third VLAN tag TPID",
                        et.into(),
                    ));
                }
                let tag = VlanSlice::from_slice(frame, off)?;
                p.n_vlans += 1;
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
        LinkLayer::Infiniband => return decode_ib::<CHECK_ICRC>(p, frame, 0),
        LinkLayer::Erf => {
            let (erf, off) = erf_frame_offset(frame, 0)?;
            if erf.record_type() != ERF_TYPE_INFINIBAND {
                return Err(DecodeError::invalid(
                    Layer::Erf,
                    erf_field::TYPE.start,
                    "record type (InfiniBand, 21, is decoded)",
                    erf.record_type().into(),
                ));
            }
            return decode_ib::<CHECK_ICRC>(p, frame, off);
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
    p.net_offset = offset16(off);
    p.ethertype = Some(ethertype);

    // Network layer: find the UDP header (v2) or the GRH (v1).
    let ip_payload_len = match ethertype {
        ETHERTYPE_IPV4 => {
            let ip = Ipv4Slice::from_slice(frame, off)?;
            p.ip = IpKind::V4;
            p.ip_len = ip.header_len() as u8;
            if ip.protocol() != 17 || ip.more_fragments() || ip.fragment_offset() != 0 {
                return Ok(());
            }
            off += ip.header_len();
            usize::from(ip.total_len()) - ip.header_len()
        }
        ETHERTYPE_IPV6 => {
            let ip = Ipv6Slice::from_slice(frame, off)?;
            p.ip = IpKind::V6;
            if ip.next_header() != 17 {
                return Ok(());
            }
            off += Ipv6Slice::LEN;
            usize::from(ip.payload_len())
        }
        ETHERTYPE_ROCEV1 => {
            let grh = grh_before_bth(frame, off)?;
            let bth_offset = off + Ipv6Slice::LEN;
            let end = bth_offset + usize::from(grh.payload_len());
            return decode_transport::<CHECK_ICRC>(p, frame, RoceVersion::V1, off, bth_offset, end);
        }
        _ => return Ok(()),
    };

    let udp = UdpSlice::from_slice(frame, off)?;
    p.udp_offset = offset16(off);
    if !cfg.is_roce_port(udp.dst_port()) {
        return Ok(());
    }
    let udp_len = usize::from(udp.length());
    if udp_len < UdpSlice::LEN || udp_len > ip_payload_len {
        return Err(DecodeError::invalid(
            Layer::Udp,
            off,
            "length",
            udp_len as u64,
        ));
    }
    let end = off + udp_len;
    decode_transport::<CHECK_ICRC>(p, frame, RoceVersion::V2, off, off + UdpSlice::LEN, end)
}

/// The GRH at `at` of RoCEv1 and of global InfiniBand packets, whose next
/// header must be the BTH.
#[inline(always)]
fn grh_before_bth(frame: &[u8], at: usize) -> Result<Ipv6Slice<'_>, DecodeError> {
    let grh = Ipv6Slice::from_slice_as(frame, at, Layer::Grh)?;
    if grh.next_header() != GRH_NEXT_HEADER_BTH {
        return Err(DecodeError::invalid(
            Layer::Grh,
            at,
            "next header",
            grh.next_header().into(),
        ));
    }
    Ok(grh)
}

/// Native InfiniBand from the LRH at `off`: GRH when the LNH says global,
/// then the transport; the VCRC after the ICRC. Packets whose LNH is raw or
/// non-IBA stop after the LRH (nothing rocescope analyses follows).
#[inline(always)]
fn decode_ib<const CHECK_ICRC: bool>(
    p: &mut Packet<'_>,
    frame: &[u8],
    off: usize,
) -> Result<(), DecodeError> {
    const VCRC_LEN: usize = 2;
    let lrh = LrhSlice::from_slice(frame, off)?;
    p.has_lrh = true;
    p.net_offset = offset16(off);
    let bth_offset = match lrh.lnh() {
        Lnh::IbaLocal => off + LrhSlice::LEN,
        Lnh::IbaGlobal => {
            let at = off + LrhSlice::LEN;
            grh_before_bth(frame, at)?;
            p.ib_global = true;
            at + Ipv6Slice::LEN
        }
        Lnh::Raw | Lnh::IpNonIba => return Ok(()),
    };
    // PktLen counts 4-byte words from the LRH through the ICRC.
    let end = off + 4 * usize::from(lrh.pkt_len_words());
    p.vcrc = IcrcStatus::Truncated;
    decode_transport::<CHECK_ICRC>(p, frame, RoceVersion::Ib, off, bth_offset, end)?;
    let Some(stored) = frame
        .get(end..end + VCRC_LEN)
        .map(|b| u16::from_le_bytes([b[0], b[1]]))
    else {
        return Ok(());
    };
    if !CHECK_ICRC {
        p.vcrc = IcrcStatus::Unchecked;
        return Ok(());
    }
    let computed = vcrc(frame.get(off..end).unwrap_or(&[]));
    p.vcrc = if stored == computed {
        IcrcStatus::Ok
    } else {
        IcrcStatus::Bad {
            stored: stored.into(),
            computed: computed.into(),
        }
    };
    Ok(())
}

/// Decode BTH, extended headers, payload and ICRC. `len_at` is the offset of
/// the header whose length field announced `end`, the offset just after the ICRC.
#[inline(always)]
fn decode_transport<const CHECK_ICRC: bool>(
    p: &mut Packet<'_>,
    frame: &[u8],
    version: RoceVersion,
    len_at: usize,
    bth_offset: usize,
    end: usize,
) -> Result<(), DecodeError> {
    const ICRC_LEN: usize = 4;
    if end < bth_offset + BthSlice::LEN + ICRC_LEN {
        let layer = match version {
            RoceVersion::V1 => Layer::Grh,
            RoceVersion::V2 => Layer::Udp,
            RoceVersion::Ib => Layer::Lrh,
        };
        let len = end.saturating_sub(bth_offset) as u64;
        return Err(DecodeError::invalid(
            layer,
            len_at,
            "length for a BTH and ICRC",
            len,
        ));
    }
    let icrc_offset = end - ICRC_LEN;
    let bth = BthSlice::from_slice(frame, bth_offset)?;
    p.roce = Some(version);
    p.bth_offset = offset16(bth_offset);
    p.icrc_offset = icrc_offset as u32;
    p.icrc = IcrcStatus::Truncated;
    let after_headers = decode_ext(
        frame,
        bth.opcode().headers(),
        bth_offset,
        icrc_offset,
        &mut p.ext,
    )?;
    p.payload_offset = offset16(after_headers);

    let pad = usize::from(bth.pad_count());
    let Some(payload_len) = icrc_offset.checked_sub(after_headers + pad) else {
        return Err(DecodeError::invalid(
            Layer::Bth,
            bth_offset,
            "pad count for packet length",
            pad as u64,
        ));
    };
    p.payload_len = payload_len as u32;

    if frame.len() < end {
        let (layer, at, need) = if frame.len() < icrc_offset {
            (Layer::Payload, after_headers, payload_len + pad + ICRC_LEN)
        } else {
            (Layer::Icrc, icrc_offset, ICRC_LEN)
        };
        return Err(DecodeError::truncated(
            layer,
            at,
            need,
            frame.len().saturating_sub(at),
        ));
    }

    if !CHECK_ICRC {
        p.icrc = IcrcStatus::Unchecked;
        return Ok(());
    }
    let transport = frame.get(bth_offset..icrc_offset).unwrap_or(&[]);
    let net = frame.get(p.net_offset()..).unwrap_or(&[]);
    let computed = match version {
        RoceVersion::V1 => icrc_v1(net.get(..Ipv6Slice::LEN).unwrap_or(&[]), transport),
        RoceVersion::V2 => {
            let ip_len = p.udp_offset().saturating_sub(p.net_offset());
            let udp = frame
                .get(p.udp_offset()..p.udp_offset() + UdpSlice::LEN)
                .unwrap_or(&[]);
            icrc_v2(net.get(..ip_len).unwrap_or(&[]), udp, transport)
        }
        RoceVersion::Ib => {
            let grh = p.ib_global.then(|| {
                net.get(LrhSlice::LEN..LrhSlice::LEN + Ipv6Slice::LEN)
                    .unwrap_or(&[])
            });
            icrc_ib(net.get(..LrhSlice::LEN).unwrap_or(&[]), grh, transport)
        }
    };
    let stored = frame
        .get(icrc_offset..end)
        .map_or(0, |b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
    p.icrc = if stored == computed {
        IcrcStatus::Ok
    } else {
        IcrcStatus::Bad { stored, computed }
    };
    Ok(())
}

/// Walk the opcode's extended headers in wire order; returns the payload offset.
#[inline(always)]
fn decode_ext(
    frame: &[u8],
    hdrs: Headers,
    bth_offset: usize,
    icrc_offset: usize,
    ext: &mut ExtHeaders<'_>,
) -> Result<usize, DecodeError> {
    let mut off = bth_offset + BthSlice::LEN;
    if hdrs == Headers::NONE {
        return Ok(off);
    }
    // Each header must fit before the ICRC (length fields) and be captured.
    macro_rules! next {
        ($flag:expr, $len:expr, $layer:expr, $kind:ident) => {
            if hdrs.contains($flag) {
                if off + $len > icrc_offset {
                    return Err(DecodeError::invalid(
                        $layer,
                        off,
                        "packet length for this opcode's headers",
                        (icrc_offset + 4 - bth_offset) as u64,
                    ));
                }
                take(frame, off, $len, $layer)?;
                ext.set(ExtKind::$kind, off);
                off += $len;
            }
        };
    }
    next!(Headers::RDETH, RdethSlice::LEN, Layer::Rdeth, Rdeth);
    next!(Headers::DETH, DethSlice::LEN, Layer::Deth, Deth);
    next!(Headers::XRCETH, XrcEthSlice::LEN, Layer::Xrceth, Xrceth);
    next!(Headers::FETH, FethSlice::LEN, Layer::Feth, Feth);
    next!(Headers::RETH, RethSlice::LEN, Layer::Reth, Reth);
    next!(
        Headers::ATOMICETH,
        AtomicEthSlice::LEN,
        Layer::AtomicEth,
        AtomicEth
    );
    next!(Headers::AETH, AethSlice::LEN, Layer::Aeth, Aeth);
    next!(
        Headers::ATOMICACKETH,
        AtomicAckEthSlice::LEN,
        Layer::AtomicAckEth,
        AtomicAckEth
    );
    next!(Headers::IMMDT, ImmDtSlice::LEN, Layer::ImmDt, ImmDt);
    next!(Headers::IETH, IethSlice::LEN, Layer::Ieth, Ieth);
    next!(Headers::CNP, CnpSlice::LEN, Layer::Cnp, Cnp);
    Ok(off)
}
