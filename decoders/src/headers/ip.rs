//! IPv4 (with its checksum) and IPv6, which is also RoCEv1's GRH.

use super::*;

/// IPv4 field offsets (options follow at [`Ipv4Slice::MIN_LEN`]); the
/// accessors, the builder and the field walk use these.
pub(crate) mod ipv4_field {
    use core::ops::Range;
    /// Version (4 bits) and IHL (4 bits).
    pub const VER_IHL: Range<usize> = 0..1;
    /// DSCP (6 bits) and ECN (2 bits).
    pub const DSCP_ECN: Range<usize> = 1..2;
    pub const TOTAL_LEN: Range<usize> = 2..4;
    pub const IDENT: Range<usize> = 4..6;
    /// The byte holding the DF and MF flags.
    pub const FLAGS: Range<usize> = 6..7;
    /// Flags (3 bits) and fragment offset (13 bits).
    pub const FLAGS_FRAG: Range<usize> = 6..8;
    pub const TTL: Range<usize> = 8..9;
    pub const PROTOCOL: Range<usize> = 9..10;
    pub const CHECKSUM: Range<usize> = 10..12;
    pub const SRC: Range<usize> = 12..16;
    pub const DST: Range<usize> = 16..20;
}

/// IPv6 (and GRH) field offsets.
pub(crate) mod ipv6_field {
    use core::ops::Range;
    /// The byte holding the version (4 bits).
    pub const VERSION: Range<usize> = 0..1;
    /// Version (4 bits), traffic class (8 bits), flow label (20 bits).
    pub const VER_TC_FLOW: Range<usize> = 0..4;
    /// The bytes holding the traffic class.
    pub const TCLASS: Range<usize> = 0..2;
    /// The bytes holding the flow label.
    pub const FLOW: Range<usize> = 1..4;
    pub const PAYLOAD_LEN: Range<usize> = 4..6;
    pub const NEXT_HEADER: Range<usize> = 6..7;
    pub const HOP_LIMIT: Range<usize> = 7..8;
    pub const SRC: Range<usize> = 8..24;
    pub const DST: Range<usize> = 24..40;
}

/// IPv4 header including its options.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ipv4Slice<'a>(&'a [u8]);

impl<'a> Ipv4Slice<'a> {
    pub const MIN_LEN: usize = 20;

    #[inline]
    pub fn from_slice(frame: &'a [u8], offset: usize) -> Result<Self, DecodeError> {
        let fixed = take(frame, offset, Self::MIN_LEN, Layer::Ipv4)?;
        let version = u8_at(fixed, ipv4_field::VER_IHL.start) >> 4;
        if version != 4 {
            return Err(DecodeError::invalid(
                Layer::Ipv4,
                offset,
                "version",
                version.into(),
            ));
        }
        let ihl_bytes = usize::from(u8_at(fixed, ipv4_field::VER_IHL.start) & 0x0F) * 4;
        if ihl_bytes < Self::MIN_LEN {
            return Err(DecodeError::invalid(
                Layer::Ipv4,
                offset,
                "header length (bytes)",
                ihl_bytes as u64,
            ));
        }
        let hdr = take(frame, offset, ihl_bytes, Layer::Ipv4)?;
        let total = usize::from(u16_at(hdr, ipv4_field::TOTAL_LEN.start));
        if total < ihl_bytes {
            return Err(DecodeError::invalid(
                Layer::Ipv4,
                offset,
                "total length",
                total as u64,
            ));
        }
        Ok(Ipv4Slice(hdr))
    }

    /// Wrap a header whose checks already passed (the decoder keeps only
    /// its offset and length).
    #[inline]
    pub(crate) fn from_validated(hdr: &'a [u8]) -> Self {
        Ipv4Slice(hdr)
    }
    #[inline]
    pub fn as_bytes(&self) -> &'a [u8] {
        self.0
    }
    #[inline]
    pub fn header_len(&self) -> usize {
        self.0.len()
    }
    #[inline]
    pub fn dscp(&self) -> u8 {
        u8_at(self.0, ipv4_field::DSCP_ECN.start) >> 2
    }
    #[inline]
    pub fn ecn(&self) -> u8 {
        u8_at(self.0, ipv4_field::DSCP_ECN.start) & 3
    }
    #[inline]
    pub fn total_len(&self) -> u16 {
        u16_at(self.0, ipv4_field::TOTAL_LEN.start)
    }
    #[inline]
    pub fn identification(&self) -> u16 {
        u16_at(self.0, ipv4_field::IDENT.start)
    }
    #[inline]
    pub fn dont_fragment(&self) -> bool {
        u8_at(self.0, ipv4_field::FLAGS.start) & 0x40 != 0
    }
    #[inline]
    pub fn more_fragments(&self) -> bool {
        u8_at(self.0, ipv4_field::FLAGS.start) & 0x20 != 0
    }
    #[inline]
    pub fn fragment_offset(&self) -> u16 {
        u16_at(self.0, ipv4_field::FLAGS_FRAG.start) & 0x1FFF
    }
    #[inline]
    pub fn ttl(&self) -> u8 {
        u8_at(self.0, ipv4_field::TTL.start)
    }
    #[inline]
    pub fn protocol(&self) -> u8 {
        u8_at(self.0, ipv4_field::PROTOCOL.start)
    }
    #[inline]
    pub fn checksum(&self) -> u16 {
        u16_at(self.0, ipv4_field::CHECKSUM.start)
    }
    #[inline]
    pub fn src(&self) -> [u8; 4] {
        array_at(self.0, ipv4_field::SRC.start)
    }
    #[inline]
    pub fn dst(&self) -> [u8; 4] {
        array_at(self.0, ipv4_field::DST.start)
    }
    /// Bytes of IPv4 options (empty without options).
    #[inline]
    pub fn options(&self) -> &'a [u8] {
        self.0.get(Self::MIN_LEN..).unwrap_or(&[])
    }
    /// Recompute the header checksum and compare.
    #[inline]
    pub fn checksum_ok(&self) -> bool {
        ipv4_checksum(self.0) == 0
    }
}

/// One's-complement sum over an IPv4 header; 0 when the stored checksum is right.
pub(crate) fn ipv4_checksum(hdr: &[u8]) -> u16 {
    let mut sum: u32 = 0;
    for pair in hdr.chunks(2) {
        let word = match pair {
            [a, b] => u16::from_be_bytes([*a, *b]),
            [a] => u16::from_be_bytes([*a, 0]),
            _ => 0,
        };
        sum += u32::from(word);
    }
    while sum > 0xFFFF {
        sum = (sum & 0xFFFF) + (sum >> 16);
    }
    !(sum as u16)
}

// ---------------------------------------------------------------- IPv6 / GRH

/// A 40-byte IPv6 header; RoCEv1's GRH has the same layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ipv6Slice<'a>(&'a [u8]);

impl<'a> Ipv6Slice<'a> {
    pub const LEN: usize = 40;

    /// View an IPv6 header (or a GRH when `layer` is [`Layer::Grh`]).
    #[inline]
    pub fn from_slice_as(
        frame: &'a [u8],
        offset: usize,
        layer: Layer,
    ) -> Result<Self, DecodeError> {
        let hdr = take(frame, offset, Self::LEN, layer)?;
        let version = u8_at(hdr, ipv6_field::VER_TC_FLOW.start) >> 4;
        if version != 6 {
            return Err(DecodeError::invalid(
                layer,
                offset,
                "version",
                version.into(),
            ));
        }
        Ok(Ipv6Slice(hdr))
    }

    #[inline]
    pub fn from_slice(frame: &'a [u8], offset: usize) -> Result<Self, DecodeError> {
        Self::from_slice_as(frame, offset, Layer::Ipv6)
    }

    #[inline]
    pub fn as_bytes(&self) -> &'a [u8] {
        self.0
    }
    #[inline]
    pub fn traffic_class(&self) -> u8 {
        ((u16_at(self.0, ipv6_field::TCLASS.start) >> 4) & 0xFF) as u8
    }
    #[inline]
    pub fn dscp(&self) -> u8 {
        self.traffic_class() >> 2
    }
    #[inline]
    pub fn ecn(&self) -> u8 {
        self.traffic_class() & 3
    }
    #[inline]
    pub fn flow_label(&self) -> u32 {
        u32_at(self.0, ipv6_field::VER_TC_FLOW.start) & 0x000F_FFFF
    }
    #[inline]
    pub fn payload_len(&self) -> u16 {
        u16_at(self.0, ipv6_field::PAYLOAD_LEN.start)
    }
    #[inline]
    pub fn next_header(&self) -> u8 {
        u8_at(self.0, ipv6_field::NEXT_HEADER.start)
    }
    #[inline]
    pub fn hop_limit(&self) -> u8 {
        u8_at(self.0, ipv6_field::HOP_LIMIT.start)
    }
    #[inline]
    pub fn src(&self) -> [u8; 16] {
        array_at(self.0, ipv6_field::SRC.start)
    }
    #[inline]
    pub fn dst(&self) -> [u8; 16] {
        array_at(self.0, ipv6_field::DST.start)
    }
}
